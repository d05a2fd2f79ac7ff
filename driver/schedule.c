/* Schedules: the knob values every lowered kernel runs with, chosen between
 * lowering and emission. Today: lowering's default chooser (within the
 * session's tiled limits), then the session's knob overrides. The one seam
 * for per-target schedulers. */
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "xcomp/lower.h"

/* Knob overrides "NAME=V[,NAME=V...]" (the CLI's $XCOMP_KNOBS): every
 * kernel with a knob NAME takes the value V instead of the default
 * chooser's (a hand-tuning and measuring aid, docs/tiled-ir.md "Knobs and
 * validity"). V must be one of the knob's candidates; whether the
 * combination is valid is the emitter's check. Messages name XCOMP_KNOBS,
 * where users set it. */
static xc_status_t apply_knob_overrides(xc_lowered_module_t* lm, const char* spec) {
  if (!spec || !*spec) return NULL;
  for (const char* p = spec; *p;) {
    const char* end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[128];
    if (len == 0 || len >= sizeof item) return xc_error(XC_INVALID_ARGUMENT, "XCOMP_KNOBS: bad item in '%s'", spec);
    memcpy(item, p, len);
    item[len] = 0;
    char* eq = strchr(item, '=');
    char* rest = NULL;
    long long v = eq ? strtoll(eq + 1, &rest, 10) : 0;
    if (!eq || eq == item || !rest || rest == eq + 1 || *rest)
      return xc_error(XC_INVALID_ARGUMENT, "XCOMP_KNOBS: '%s' is not NAME=INTEGER", item);
    *eq = 0;
    for (int i = 0; i < lm->num_kernels; i++) {
      const xc_tiled_kernel_t* k = lm->kernels[i].kernel;
      int idx = xc_tiled_find_knob(k, item);
      if (idx < 0) continue;
      bool ok = false;
      for (int c = 0; c < k->knobs[idx].num_candidates; c++) ok |= k->knobs[idx].candidates[c] == v;
      if (!ok) return xc_error(XC_INVALID_ARGUMENT, "XCOMP_KNOBS: %lld is not a candidate of knob %s of kernel '%s'",
                               v, item, k->name);
      lm->kernels[i].knobs[idx] = v;
    }
    p += len + (end ? 1 : 0);
  }
  return NULL;
}

xc_status_t xc_driver_schedule_kernels(const xc_session_t* s, const struct xc_fusion_plan* plan,
                                       xc_lowered_module_t* lm) {
  (void)plan; /* per-target schedulers read the groups */
  return apply_knob_overrides(lm, s->o.knobs);
}
