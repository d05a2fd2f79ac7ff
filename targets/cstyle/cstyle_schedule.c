/* The scheduler of every C-family target (cpu, opencl, cuda, rocm, and
 * plugins that emit through a dialect): proposes the schedule the emitter
 * would follow by default, checks it against the device limits, and falls
 * back — fewer pipeline stages, operands in dynamic work-group memory,
 * dots off matrix instructions, then smaller tiles — until a legal one is
 * found, so that an invalid choice is never emitted (docs/tiled-ir.md,
 * "Schedules"). The emitter (xc_cstyle_plan) is its resource model: what a
 * schedule takes is what the emitted code will declare. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle.h"

/* A plan that fits: the device check passes. Plan errors of resource
 * exhaustion (the C dialect's stack bound) count as not fitting. */
static xc_status_t plan_and_check(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                                  const int64_t* knobs, const xc_tiled_schedule_t* follow,
                                  const xc_cstyle_options_t* options, const xc_tiled_limits_t* limits,
                                  xc_tiled_schedule_t* out, bool* fits) {
  *fits = false;
  xc_status_t st = xc_cstyle_plan(d, caps, k, knobs, follow, options, out);
  if (st && xc_status_code(st) != XC_RESOURCE_EXHAUSTED) return st;
  if (!st) st = xc_tiled_schedule_check(k, out, limits);
  *fits = st == NULL;
  return st;
}

/* One step down from a schedule that does not fit, keeping its tiles: the
 * deepest pipeline loses a stage; else operands in static memory move to
 * dynamic memory where the device has it (once per dot); else the last dot
 * on matrix instructions becomes the generic loop. False: nothing left. */
static bool step_down(xc_tiled_schedule_t* s, const xc_tiled_limits_t* limits, const xc_cstyle_dialect_t* d,
                      bool* tried_dynamic) {
  int deepest = -1;
  for (int i = 0; i < s->num_dots; i++)
    if (s->dots[i].stages > 1 && (deepest < 0 || s->dots[i].stages > s->dots[deepest].stages)) deepest = i;
  if (deepest >= 0) {
    s->dots[deepest].stages--;
    return true;
  }
  bool dynamic = d->dyn_local_array &&
                 limits->value[XC_TILED_LIMIT_STAGED_BYTES] > limits->value[XC_TILED_LIMIT_SHARED_BYTES];
  for (int i = 0; dynamic && i < s->num_dots; i++)
    if (s->dots[i].operands == XC_SPACE_SHARED && !tried_dynamic[i]) {
      tried_dynamic[i] = true;
      s->dots[i].operands = XC_SPACE_DYNAMIC;
      return true;
    }
  for (int i = s->num_dots - 1; i >= 0; i--)
    if (s->dots[i].mma.m) {
      memset(&s->dots[i], 0, sizeof s->dots[i]);
      s->dots[i].stages = 1;
      return true;
    }
  return false;
}

/* Smaller tiles: the largest TILE knob that has a smaller candidate and
 * stays valid takes the next smaller one. False: none can shrink. */
static bool shrink_tiles(const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits, int64_t* knobs) {
  for (;;) {
    int best = -1;
    int64_t best_value = 0, best_next = 0;
    for (int i = 0; i < k->num_knobs; i++) {
      const xc_tiled_knob_t* kn = &k->knobs[i];
      if (kn->kind != XC_KNOB_TILE) continue;
      int64_t next = 0;
      for (int c = 0; c < kn->num_candidates; c++)
        if (kn->candidates[c] < knobs[i] && kn->candidates[c] > next) next = kn->candidates[c];
      if (next > 0 && knobs[i] > best_value) best = i, best_value = knobs[i], best_next = next;
    }
    if (best < 0) return false;
    int64_t keep = knobs[best];
    knobs[best] = best_next;
    xc_status_t st = xc_tiled_knobs_check(k, knobs, limits);
    if (!st) return true;
    xc_status_free(st);
    /* this knob cannot shrink alone (a constraint ties it): try it shrunk
     * further, else give up on it */
    bool smaller = false;
    for (int c = 0; c < k->knobs[best].num_candidates; c++) smaller |= k->knobs[best].candidates[c] < best_next;
    if (!smaller) {
      knobs[best] = keep;
      return false;
    }
  }
}

xc_status_t xc_cstyle_schedule(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                               const xc_tiled_limits_t* limits, unsigned flags, const xc_cstyle_options_t* options,
                               xc_tiled_schedule_t* s) {
  xc_tiled_limits_t unlimited;
  if (!limits) {
    xc_tiled_limits_init_unlimited(&unlimited);
    limits = &unlimited;
  }
  if (s->num_knobs != k->num_knobs || k->num_knobs > XC_TILED_MAX_SCHED_KNOBS)
    return xc_error(XC_INVALID_ARGUMENT, "scheduling kernel '%s': %d knob values for %d knobs", k->name, s->num_knobs,
                    k->num_knobs);
  int64_t knobs[XC_TILED_MAX_SCHED_KNOBS];
  memcpy(knobs, s->knobs, sizeof knobs);
  if (flags & XC_SCHEDULE_FOLLOW) {
    /* a complete request: plan exactly it and judge it */
    xc_tiled_schedule_t planned;
    bool fits;
    xc_status_t st = plan_and_check(d, caps, k, knobs, s, options, limits, &planned, &fits);
    if (!fits) return st ? st : xc_error(XC_OUT_OF_RANGE, "kernel '%s': the schedule does not fit", k->name);
    *s = planned;
    return NULL;
  }
  xc_status_t bad = xc_tiled_knobs_check(k, knobs, limits);
  if (bad) {
    if (flags & XC_SCHEDULE_KEEP_KNOBS)
      return xc_status_annotate(bad, "kernel '%s': the knob values asked for are not valid on this device", k->name);
    xc_status_free(bad);
    XC_RETURN_IF_ERROR(xc_tiled_knobs_choose(k, limits, knobs));
  }
  xc_status_t first = NULL; /* why the first proposal did not fit */
  for (int round = 0; round < 256; round++) {
    xc_tiled_schedule_t cur;
    bool fits;
    xc_status_t st = plan_and_check(d, caps, k, knobs, NULL, options, limits, &cur, &fits);
    if (!fits && st && xc_status_code(st) != XC_OUT_OF_RANGE && xc_status_code(st) != XC_RESOURCE_EXHAUSTED &&
        xc_status_code(st) != XC_INVALID_ARGUMENT) {
      xc_status_free(first);
      return st; /* the kernel itself is the problem, not the schedule */
    }
    bool tried_dynamic[XC_TILED_MAX_SCHED_DOTS] = {false};
    xc_tiled_schedule_t next = cur;
    while (!fits && st && xc_status_code(st) != XC_RESOURCE_EXHAUSTED && step_down(&next, limits, d, tried_dynamic)) {
      xc_tiled_schedule_t planned;
      xc_status_t again = plan_and_check(d, caps, k, knobs, &next, options, limits, &planned, &fits);
      if (fits) {
        cur = planned;
        xc_status_free(st);
        st = NULL;
      } else {
        xc_status_free(again);
      }
    }
    if (fits) {
      xc_status_free(first);
      *s = cur;
      return NULL;
    }
    if (!first) first = st;
    else xc_status_free(st);
    if ((flags & XC_SCHEDULE_KEEP_KNOBS) || !shrink_tiles(k, limits, knobs)) break;
  }
  xc_status_t out = xc_error(XC_UNSUPPORTED,
                             "no legal schedule for kernel '%s' on this device (%s emitter): with its default "
                             "tiles: %s%s",
                             k->name, d->name, first ? xc_status_message(first) : "?",
                             flags & XC_SCHEDULE_KEEP_KNOBS ? " (the knob values were fixed)" : "; no smaller tiles fit either");
  xc_status_free(first);
  return out;
}
