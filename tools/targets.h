/* The execution targets the CLI can run models on. Only the reference
 * interpreter runs models so far; `xcomp targets` also lists the compiled
 * targets of the target registry (xcomp/target.h) with their devices. */
#ifndef XCOMP_TOOLS_TARGETS_H
#define XCOMP_TOOLS_TARGETS_H

#include "xcomp/status.h"

typedef struct xc_cli_target {
  const char* name;
  const char* description;
} xc_cli_target_t;

int xc_cli_target_count(void);
const xc_cli_target_t* xc_cli_target_at(int i);
/* NULL when `name` is available, else an XC_UNAVAILABLE error
 * "target 'X' is not available (targets: ref, cpu, ...)". */
xc_status_t xc_cli_check_target(const char* name);

#endif
