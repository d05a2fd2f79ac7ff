/* Schedules: between lowering and emission, every lowered kernel gets its
 * schedule record from its target's scheduler (docs/tiled-ir.md,
 * "Schedules"), starting from the lowering's knob values or the session's
 * knob overrides. */
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "xcomp/lower.h"
#include "xcomp/tune.h"

/* Knob overrides "NAME=V[,NAME=V...]" (the CLI's $XCOMP_KNOBS): every
 * kernel with a knob NAME takes the value V instead of the default
 * chooser's (a hand-tuning and measuring aid, docs/tiled-ir.md "Knobs and
 * validity"). V must be one of the knob's candidates; whether the
 * combination is valid is the emitter's check. Messages name XCOMP_KNOBS,
 * where users set it. */
static xc_status_t apply_knob_overrides(xc_lowered_module_t* lm, const char* spec, bool* touched) {
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
      touched[i] = true;
    }
    p += len + (end ? 1 : 0);
  }
  return NULL;
}

/* The best schedule the tuning database holds for k's task on this
 * target and device, made legal by the target's scheduler exactly as
 * recorded (XC_SCHEDULE_FOLLOW). False when there is none or the device
 * cannot follow it (a database from another build): the default then. */
static bool tuned_schedule(const xc_session_t* s, const xc_tiled_kernel_t* k, xc_tiled_schedule_t* out) {
  char task[33], device[33];
  xc_tune_record_t best;
  bool found = false;
  xc_status_t st = xc_tune_task_hash(k, task);
  xc_tune_device_id(xc_target_name(s->res.target), &s->res.caps, device);
  if (!st) st = xc_tune_db_best(s->tuning, task, xc_target_name(s->res.target), device, &best, &found);
  if (!st && found) {
    st = xc_tiled_schedule_parse(k, best.schedule, out);
    if (!st) st = xc_tiled_schedule_verify(k, out);
    if (!st)
      st = xc_target_schedule(s->res.target, &s->res.caps, k, &s->limits, XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW,
                              out);
    if (!st && s->o.build.progress)
      fprintf(s->o.build.progress, "xcomp: kernel %s: tuned schedule from the database (%.4g ms, default %.4g ms)\n",
              k->name, best.time_ms, best.default_ms);
    xc_tune_records_free(&best, 1);
  }
  if (st) {
    if (s->o.build.progress)
      fprintf(s->o.build.progress, "xcomp: warning: kernel %s: the tuning database's schedule is not used: %s\n",
              k->name, xc_status_message(st));
    xc_status_free(st);
    return false;
  }
  return found;
}

xc_status_t xc_driver_schedule_kernels(const xc_session_t* s, const struct xc_fusion_plan* plan,
                                       xc_lowered_module_t* lm) {
  (void)plan;
  /* kernels with overridden knobs keep them through scheduling (an invalid
   * override is an error, never silently changed) */
  bool* touched = calloc((size_t)lm->num_kernels + 1, sizeof *touched);
  if (!touched) return xc_error_oom();
  xc_status_t st = apply_knob_overrides(lm, s->o.knobs, touched);
  /* Each kernel's target scheduler completes the record (threads, vector,
   * matrix instructions, stages, work-group memory) and makes it legal on
   * the device before anything is emitted; the kernel carries it from here
   * (its text, the module, the emitter). */
  /* the tiled interpreter (no device) runs the kernels as lowered */
  for (int i = 0; !st && s->has_device && i < lm->num_kernels; i++) {
    xc_lowered_kernel_t* lk = &lm->kernels[i];
    xc_tiled_schedule_t rec;
    bool tuned = !touched[i] && s->tuning && tuned_schedule(s, lk->kernel, &rec);
    if (tuned) {
      for (int j = 0; j < rec.num_knobs; j++) lk->knobs[j] = rec.knobs[j];
      st = xc_tiled_set_schedule(lk->kernel, &rec);
      continue;
    }
    xc_tiled_schedule_init(lk->kernel, &rec);
    for (int j = 0; j < rec.num_knobs; j++) rec.knobs[j] = lk->knobs[j];
    unsigned flags = touched[i] ? XC_SCHEDULE_KEEP_KNOBS : 0;
    st = xc_target_schedule(s->res.target, &s->res.caps, lk->kernel, &s->limits, flags, &rec);
    if (!st) st = xc_tiled_set_schedule(lk->kernel, &rec);
    for (int j = 0; !st && j < rec.num_knobs; j++) lk->knobs[j] = rec.knobs[j];
  }
  free(touched);
  return st;
}
