/* Target traits the pass pipeline and the fusion planner read. */
#include <string.h>

#include "xcomp/passes.h"

void xc_target_traits_init(xc_target_traits_t* t) {
  memset(t, 0, sizeof *t);
  t->name = "ref";
  t->preferred_layout = XC_LAYOUT_NCHW;
  t->shared_mem_bytes = 48 * 1024;
  t->max_fused_ops = 32;
  t->has_tensor_cores = false;
}

xc_status_t xc_target_traits_for(const char* target, xc_target_traits_t* t) {
  xc_target_traits_init(t);
  if (target && strcmp(target, "ref") == 0) return NULL;
  return xc_error(XC_INVALID_ARGUMENT, "unknown target '%s' (known: ref)", target ? target : "(null)");
}
