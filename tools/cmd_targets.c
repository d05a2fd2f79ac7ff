/* xcomp targets: the execution targets this build can run on. */
#include <string.h>

#include "cli.h"
#include "targets.h"
#include "xcomp/target.h"

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
  /* The list names the in-process targets and every registered one. */
  char list[512] = "";
  size_t k = 0;
  for (int i = 0; i < NUM_TARGETS && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", targets[i].name);
  xc_status_t st = xc_targets_init();
  if (st) {
    xc_status_free(st);
  } else {
    for (int i = 0; i < xc_target_count() && k < sizeof list; i++)
      k += (size_t)snprintf(list + k, sizeof list - k, ", %s", xc_target_name(xc_target_at(i)));
  }
  return xc_error(XC_UNAVAILABLE, "target '%s' is not available (targets: %s)", name, list);
}

/* The compiled targets of the target registry (xcomp/target.h): built-in
 * ones and plugins from XCOMP_PLUGIN_PATH, each with its devices or the
 * reason it is unavailable. */
static void print_registry_targets(void) {
  xc_status_t st = xc_targets_init();
  if (st) {
    printf("(target registry: %s)\n", xc_status_message(st));
    xc_status_free(st);
    return;
  }
  for (int i = 0; i < xc_target_count(); i++) {
    xc_target_t* t = xc_target_at(i);
    printf("%-8s %s", xc_target_name(t), xc_target_description(t));
    if (strcmp(xc_target_origin(t), "built-in") != 0) printf(" [plugin %s]", xc_target_origin(t));
    printf("\n");
    int count = 0;
    st = xc_target_device_count(t, &count);
    if (st) {
      /* Messages read "target X unavailable: why"; the line says the first half. */
      const char* why = xc_status_message(st);
      const char* cut = strstr(why, " unavailable: ");
      printf("  unavailable: %s\n", cut ? cut + 14 : why);
      xc_status_free(st);
      continue;
    }
    if (count == 0) printf("  unavailable: no devices\n");
    for (int d = 0; d < count; d++) {
      xc_device_caps_t caps;
      st = xc_target_device_caps(t, d, &caps);
      if (st) {
        printf("  %s:%d  unavailable: %s\n", xc_target_name(t), d, xc_status_message(st));
        xc_status_free(st);
        continue;
      }
      char summary[512];
      xc_device_caps_summary(&caps, summary, sizeof summary);
      printf("  %s:%d  %s (%s)\n", xc_target_name(t), d, caps.name, summary);
    }
  }
  for (int i = 0; i < xc_target_plugin_error_count(); i++)
    printf("not loaded: %s\n", xc_target_plugin_error_at(i));
}

static int targets_main(int argc, char** argv) {
  if (argc > 1) return xc_cli_usage_error(&xc_cli_targets_command, "unexpected argument '%s'", argv[1]);
  for (int i = 0; i < NUM_TARGETS; i++) printf("%-8s %s\n", targets[i].name, targets[i].description);
  print_registry_targets();
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_targets_command = {
    "targets", targets_main, "xcomp targets",
    "List the targets models can run on (--target of run and conform).", ""};
