/* xcomp targets: the execution targets this build can run on. */
#include <string.h>

#include "cli.h"
#include "targets.h"

static const xc_cli_target_t targets[] = {
    {"ref", "reference interpreter: plain loops, double accumulation, exact ONNX semantics "
            "(the oracle other targets are checked against)"},
};
enum { NUM_TARGETS = (int)(sizeof targets / sizeof targets[0]) };

int xc_cli_target_count(void) { return NUM_TARGETS; }
const xc_cli_target_t* xc_cli_target_at(int i) {
  return i >= 0 && i < NUM_TARGETS ? &targets[i] : NULL;
}

xc_status_t xc_cli_check_target(const char* name) {
  for (int i = 0; i < NUM_TARGETS; i++)
    if (strcmp(targets[i].name, name) == 0) return NULL;
  char list[256] = "";
  size_t k = 0;
  for (int i = 0; i < NUM_TARGETS && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", targets[i].name);
  return xc_error(XC_UNAVAILABLE, "target '%s' is not available (available: %s)", name, list);
}

static int targets_main(int argc, char** argv) {
  if (argc > 1) return xc_cli_usage_error(&xc_cli_targets_command, "unexpected argument '%s'", argv[1]);
  for (int i = 0; i < NUM_TARGETS; i++) printf("%-8s %s\n", targets[i].name, targets[i].description);
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_targets_command = {
    "targets", targets_main, "xcomp targets",
    "List the targets models can run on (--target of run and conform).", ""};
