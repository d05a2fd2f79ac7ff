/* Scheduling through the target interface: xc_target_schedule calls a
 * target's scheduler (or the generic one) and checks what it returns
 * against the device limits, so that no schedule reaches an emitter
 * unchecked, whoever wrote the scheduler (docs/tiled-ir.md, "Schedules"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/target.h"
#include "xcomp/tiled.h"

xc_status_t xc_schedule_generic(const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                                const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* s) {
  if (s->num_knobs != k->num_knobs)
    return xc_error(XC_INVALID_ARGUMENT, "scheduling kernel '%s': %d knob values for %d knobs", k->name, s->num_knobs,
                    k->num_knobs);
  xc_status_t bad = xc_tiled_knobs_check(k, s->knobs, limits);
  if (bad) {
    if (flags & XC_SCHEDULE_KEEP_KNOBS)
      return xc_status_annotate(bad, "kernel '%s': the knob values asked for are not valid on this device", k->name);
    xc_status_free(bad);
    XC_RETURN_IF_ERROR(xc_tiled_knobs_choose(k, limits, s->knobs));
  }
  for (int i = 0; (flags & XC_SCHEDULE_FOLLOW) && i < s->num_dots; i++)
    if (s->dots[i].mma.m || s->dots[i].stages > 1)
      return xc_error(XC_UNSUPPORTED, "kernel '%s': dot %d: a target without a scheduler of its own runs dots "
                      "as the generic loop", k->name, i);
  bool groups = caps && caps->max_threads_per_group > 1;
  s->threads = groups ? xc_tiled_threads(k, s->knobs) : 1;
  s->vector = 1;
  s->unroll = 0;
  for (int i = 0; i < s->num_dots; i++) {
    memset(&s->dots[i], 0, sizeof s->dots[i]);
    s->dots[i].stages = 1;
  }
  s->local_bytes = groups ? xc_tiled_shared_bytes(k, s->knobs) : 0;
  s->dynamic_bytes = 0;
  return NULL;
}

xc_status_t xc_target_schedule(xc_target_t* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                               const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* s) {
  if (!t || !caps || !k || !s) return xc_error(XC_INVALID_ARGUMENT, "xc_target_schedule: NULL argument");
  XC_RETURN_IF_ERROR(xc_tiled_schedule_verify(k, s));
  xc_status_t st = t->iface->schedule ? t->iface->schedule(t->context, caps, k, limits, flags, s)
                                      : xc_schedule_generic(caps, k, limits, flags, s);
  if (st) return xc_status_annotate(st, "%s scheduler", t->iface->name);
  if (!s->scheduler[0]) snprintf(s->scheduler, sizeof s->scheduler, "%s", t->iface->name);
  /* every matrix instruction is one the device lists */
  for (int i = 0; i < s->num_dots; i++) {
    const xc_tiled_mma_t* m = &s->dots[i].mma;
    bool listed = !m->m;
    for (int j = 0; !listed && j < caps->num_mma_shapes && j < XC_TARGET_MAX_MMA_SHAPES; j++) {
      listed = xc_mma_shape_matches(&caps->mma_shapes[j], m->m, m->n, m->k, m->input_dtype, m->accumulator_dtype);
    }
    if (!listed) {
      char name[64];
      xc_tiled_mma_name(m, name, sizeof name);
      return xc_error(XC_INTERNAL, "%s scheduler chose an invalid schedule: kernel '%s': dot %d on %s, which "
                      "the device's capabilities do not list", t->iface->name, k->name, i, name);
    }
  }
  return xc_status_annotate(xc_tiled_schedule_check(k, s, limits), "%s scheduler chose an invalid schedule",
                            t->iface->name);
}

/* Records derived from a legal one that the target may also follow: fewer
 * stages on one pipelined dot, or one dot off matrix instructions. */
static bool visit_variants(xc_target_t* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                           const struct xc_tiled_limits* limits, const xc_tiled_schedule_t* base,
                           bool (*visit)(void*, const struct xc_tiled_schedule*), void* ctx, int* count) {
  for (int i = 0; i < base->num_dots; i++) {
    for (int v = 0; v < base->dots[i].stages; v++) {
      xc_tiled_schedule_t s = *base;
      if (v + 1 < base->dots[i].stages) {
        s.dots[i].stages = v + 1;
      } else if (base->dots[i].mma.m) {
        memset(&s.dots[i], 0, sizeof s.dots[i]);
        s.dots[i].stages = 1;
      } else {
        continue;
      }
      xc_status_t st = xc_target_schedule(t, caps, k, limits, XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW, &s);
      if (st) {
        xc_status_free(st);
        continue;
      }
      (*count)++;
      if (!visit(ctx, &s)) return false;
    }
  }
  return true;
}

xc_status_t xc_target_schedule_space(xc_target_t* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                                     const struct xc_tiled_limits* limits, int max_combinations,
                                     bool (*visit)(void* ctx, const struct xc_tiled_schedule* s), void* ctx,
                                     int* out_count) {
  if (out_count) *out_count = 0;
  if (!t || !caps || !k || !visit) return xc_error(XC_INVALID_ARGUMENT, "xc_target_schedule_space: NULL argument");
  if (k->num_knobs > XC_TILED_MAX_SCHED_KNOBS)
    return xc_error(XC_UNSUPPORTED, "kernel '%s' has more knobs than a schedule holds", k->name);
  if (max_combinations <= 0) max_combinations = 4096;
  int n = k->num_knobs, count = 0;
  int idx[XC_TILED_MAX_SCHED_KNOBS] = {0};
  bool more = true;
  for (int combo = 0; more && combo < max_combinations; combo++) {
    xc_tiled_schedule_t s;
    xc_tiled_schedule_init(k, &s);
    for (int i = 0; i < n; i++) s.knobs[i] = k->knobs[i].candidates[idx[i]];
    xc_status_t st = xc_tiled_knobs_check(k, s.knobs, limits);
    if (!st) st = xc_target_schedule(t, caps, k, limits, XC_SCHEDULE_KEEP_KNOBS, &s);
    if (st) {
      xc_status_free(st);
    } else {
      count++;
      more = visit(ctx, &s) && visit_variants(t, caps, k, limits, &s, visit, ctx, &count);
    }
    int i = 0;
    for (; i < n; i++) {
      if (++idx[i] < k->knobs[i].num_candidates) break;
      idx[i] = 0;
    }
    if (i == n) break;
  }
  if (out_count) *out_count = count;
  return NULL;
}

void xc_target_tiled_limits(const xc_device_caps_t* caps, bool allow_tf32, struct xc_tiled_limits* l) {
  if (caps->kind == XC_DEVICE_CPU) xc_tiled_limits_init_cpu(l);
  else xc_tiled_limits_init_gpu(l);
  if (caps->max_threads_per_group > 1) l->value[XC_TILED_LIMIT_MAX_THREADS] = caps->max_threads_per_group;
  if (caps->kind != XC_DEVICE_CPU && caps->local_memory_bytes > 0)
    l->value[XC_TILED_LIMIT_SHARED_BYTES] = caps->local_memory_bytes;
  /* work-groups on a CPU device (OpenCL on PoCL): their local memory is a
   * real bound the emitted code must fit, where it is below the stack-array
   * budget of CPU programs */
  if (caps->kind == XC_DEVICE_CPU && caps->max_threads_per_group > 1 && caps->local_memory_bytes > 0 &&
      caps->local_memory_bytes < l->value[XC_TILED_LIMIT_SHARED_BYTES])
    l->value[XC_TILED_LIMIT_SHARED_BYTES] = caps->local_memory_bytes;
  l->value[XC_TILED_LIMIT_STAGED_BYTES] = l->value[XC_TILED_LIMIT_SHARED_BYTES];
  if (caps->kind != XC_DEVICE_CPU && caps->local_memory_optin_bytes > l->value[XC_TILED_LIMIT_SHARED_BYTES])
    l->value[XC_TILED_LIMIT_STAGED_BYTES] = caps->local_memory_optin_bytes;
  if (caps->simd_width > 0) l->value[XC_TILED_LIMIT_SIMD_WIDTH] = caps->simd_width;
  /* float dots with matrix instructions; f32 (tf32) only when allowed */
  for (int i = 0; caps->kind != XC_DEVICE_CPU && i < caps->num_mma_shapes && i < XC_TARGET_MAX_MMA_SHAPES; i++) {
    xc_dtype_t in = caps->mma_shapes[i].input_dtype;
    if (caps->mma_shapes[i].accumulator_dtype == XC_F32 &&
        (in == XC_F16 || in == XC_BF16 || (in == XC_F32 && allow_tf32)))
      l->value[XC_TILED_LIMIT_MMA] |= (int64_t)1 << in;
  }
}
