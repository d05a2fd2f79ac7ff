/* Schedule records of tiled kernels (docs/tiled-ir.md, "Schedules"): the
 * default record, attaching one to a kernel, the check that a record fits
 * its kernel and the check that it is legal under a device's limits, and the
 * text form. Schedulers (targets/) fill records; emitters read them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "xcomp/tiled.h"

static void count_dots(const xc_tiled_block_t* b, int* n, int want, const xc_tiled_op_t** found,
                       const xc_tiled_op_t* op_to_find, int* index_of) {
  for (int i = 0; b && i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_DOT) {
      if (*n == want && found) *found = op;
      if (op == op_to_find && index_of) *index_of = *n;
      (*n)++;
    }
    if (op->body) count_dots(op->body, n, want, found, op_to_find, index_of);
  }
}

int xc_tiled_dot_count(const xc_tiled_kernel_t* k) {
  int n = 0;
  count_dots(k->body, &n, -1, NULL, NULL, NULL);
  return n;
}

bool xc_tiled_static_grid(const xc_tiled_kernel_t* k, const int64_t* knobs, const xc_tiled_limits_t* limits,
                          int64_t grid[XC_TILED_MAX_GRID]) {
  for (int a = 0; a < XC_TILED_MAX_GRID; a++) grid[a] = 1;
  for (int a = 0; a < k->grid_rank && a < XC_TILED_MAX_GRID; a++) {
    xc_status_t st = xc_texpr_eval(k->grid[a], knobs, NULL, limits, &grid[a]);
    if (st || grid[a] < 1) {
      xc_status_free(st);
      return false;
    }
  }
  return true;
}

int64_t xc_tiled_static_programs(const xc_tiled_kernel_t* k, const int64_t* knobs, const xc_tiled_limits_t* limits) {
  int64_t grid[XC_TILED_MAX_GRID];
  if (!xc_tiled_static_grid(k, knobs, limits, grid)) return 0;
  int64_t n = 1;
  for (int a = 0; a < XC_TILED_MAX_GRID; a++) {
    if (n > INT64_MAX / grid[a]) return 0;
    n *= grid[a];
  }
  return n;
}

const xc_tiled_op_t* xc_tiled_dot_at(const xc_tiled_kernel_t* k, int index) {
  int n = 0;
  const xc_tiled_op_t* found = NULL;
  if (index >= 0) count_dots(k->body, &n, index, &found, NULL, NULL);
  return found;
}

int xc_tiled_dot_index(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op) {
  int n = 0, index = -1;
  if (op) count_dots(k->body, &n, -1, NULL, op, &index);
  return index;
}

void xc_tiled_schedule_init(const xc_tiled_kernel_t* k, xc_tiled_schedule_t* out) {
  memset(out, 0, sizeof *out);
  out->num_knobs = k->num_knobs < XC_TILED_MAX_SCHED_KNOBS ? k->num_knobs : XC_TILED_MAX_SCHED_KNOBS;
  for (int i = 0; i < out->num_knobs; i++) out->knobs[i] = k->knobs[i].default_value;
  out->threads = xc_tiled_threads(k, out->knobs);
  out->vector = 1;
  int dots = xc_tiled_dot_count(k);
  out->num_dots = dots < XC_TILED_MAX_SCHED_DOTS ? dots : XC_TILED_MAX_SCHED_DOTS;
  for (int i = 0; i < out->num_dots; i++) out->dots[i].stages = 1;
}

xc_status_t xc_tiled_schedule_verify(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s) {
  if (k->num_knobs > XC_TILED_MAX_SCHED_KNOBS)
    return xc_error(XC_UNSUPPORTED, "kernel '%s' has %d knobs, a schedule holds at most %d", k->name,
                    k->num_knobs, XC_TILED_MAX_SCHED_KNOBS);
  if (s->num_knobs != k->num_knobs)
    return xc_error(XC_INVALID_ARGUMENT, "schedule of kernel '%s' has %d knob values for %d knobs", k->name,
                    s->num_knobs, k->num_knobs);
  for (int i = 0; i < k->num_knobs; i++) {
    bool found = false;
    for (int j = 0; j < k->knobs[i].num_candidates; j++) found |= k->knobs[i].candidates[j] == s->knobs[i];
    if (!found)
      return xc_error(XC_INVALID_ARGUMENT, "schedule of kernel '%s': knob %s = %" PRId64 " is not a candidate",
                      k->name, k->knobs[i].name, s->knobs[i]);
  }
  int dots = xc_tiled_dot_count(k);
  if (dots > XC_TILED_MAX_SCHED_DOTS)
    return xc_error(XC_UNSUPPORTED, "kernel '%s' has %d dots, a schedule holds at most %d", k->name, dots,
                    XC_TILED_MAX_SCHED_DOTS);
  if (s->num_dots != dots)
    return xc_error(XC_INVALID_ARGUMENT, "schedule of kernel '%s' has %d dot entries for %d dots", k->name,
                    s->num_dots, dots);
  if (s->threads < 1 || s->vector < 1 || s->unroll < 0 || s->local_bytes < 0 || s->dynamic_bytes < 0)
    return xc_error(XC_INVALID_ARGUMENT,
                    "schedule of kernel '%s': threads %" PRId64 ", vector %" PRId64 ", unroll %" PRId64
                    ", local %" PRId64 ", dynamic %" PRId64 " (threads and vector >= 1, the rest >= 0)",
                    k->name, s->threads, s->vector, s->unroll, s->local_bytes, s->dynamic_bytes);
  for (int i = 0; i < s->num_dots; i++) {
    const xc_tiled_dot_schedule_t* d = &s->dots[i];
    bool mma = d->mma.m != 0;
    if (d->stages < 1 || (mma && (d->mma.m < 0 || d->mma.n <= 0 || d->mma.k <= 0)) ||
        mma != (d->operands != XC_SPACE_NONE) || (unsigned)d->operands > XC_SPACE_DYNAMIC)
      return xc_error(XC_INVALID_ARGUMENT,
                      "schedule of kernel '%s': dot %d: stages %d, instruction %dx%dx%d, operand space %d "
                      "(a matrix instruction needs a staging space, the generic loop none)",
                      k->name, i, d->stages, d->mma.m, d->mma.n, d->mma.k, (int)d->operands);
  }
  return NULL;
}

xc_status_t xc_tiled_set_schedule(xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s) {
  if (!s) {
    k->schedule = NULL;
    return NULL;
  }
  XC_RETURN_IF_ERROR(xc_tiled_schedule_verify(k, s));
  xc_tiled_schedule_t* copy = xc_arena_alloc(k->arena, sizeof *copy);
  if (!copy) return xc_error_oom();
  *copy = *s;
  k->schedule = copy;
  return NULL;
}

xc_status_t xc_tiled_schedule_check(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s,
                                    const xc_tiled_limits_t* limits) {
  XC_RETURN_IF_ERROR(xc_tiled_schedule_verify(k, s));
  xc_tiled_limits_t unlimited;
  if (!limits) {
    xc_tiled_limits_init_unlimited(&unlimited);
    limits = &unlimited;
  }
  XC_RETURN_IF_ERROR(xc_status_annotate(xc_tiled_knobs_check(k, s->knobs, limits), "kernel '%s'", k->name));
  const int64_t* l = limits->value;
  if (s->threads > l[XC_TILED_LIMIT_MAX_THREADS])
    return xc_error(XC_OUT_OF_RANGE, "kernel '%s': %" PRId64 " threads per program, the device allows %" PRId64,
                    k->name, s->threads, l[XC_TILED_LIMIT_MAX_THREADS]);
  if (s->local_bytes > l[XC_TILED_LIMIT_SHARED_BYTES])
    return xc_error(XC_OUT_OF_RANGE,
                    "kernel '%s': %" PRId64 " bytes of static work-group memory, the device allows %" PRId64,
                    k->name, s->local_bytes, l[XC_TILED_LIMIT_SHARED_BYTES]);
  int64_t staged = l[XC_TILED_LIMIT_STAGED_BYTES] > l[XC_TILED_LIMIT_SHARED_BYTES] ? l[XC_TILED_LIMIT_STAGED_BYTES]
                                                                                   : l[XC_TILED_LIMIT_SHARED_BYTES];
  if (s->dynamic_bytes > 0 && (s->dynamic_bytes > staged - s->local_bytes || staged <= l[XC_TILED_LIMIT_SHARED_BYTES]))
    return xc_error(XC_OUT_OF_RANGE,
                    "kernel '%s': %" PRId64 " + %" PRId64 " bytes of static and dynamic work-group memory, the "
                    "device allows %" PRId64 "%s",
                    k->name, s->local_bytes, s->dynamic_bytes, staged,
                    staged <= l[XC_TILED_LIMIT_SHARED_BYTES] ? " and has no dynamic work-group memory" : "");
  for (int i = 0; i < s->num_dots; i++) {
    if (s->dots[i].operands == XC_SPACE_DYNAMIC && s->dynamic_bytes == 0)
      return xc_error(XC_INVALID_ARGUMENT, "kernel '%s': dot %d stages its operands in dynamic memory of 0 bytes",
                      k->name, i);
  }
  return NULL;
}

void xc_tiled_mma_name(const xc_tiled_mma_t* mma, char* out, size_t size) {
  if (!mma->m) snprintf(out, size, "generic");
  else
    snprintf(out, size, "mma m%dn%dk%d %s -> %s", mma->m, mma->n, mma->k, xc_dtype_name(mma->input_dtype),
             xc_dtype_name(mma->accumulator_dtype));
}

static const char* space_name(xc_tiled_space_t s) {
  switch (s) {
    case XC_SPACE_NONE: return "none";
    case XC_SPACE_SHARED: return "shared";
    case XC_SPACE_DYNAMIC: return "dynamic";
  }
  return "?";
}

void xc_tiled_schedule_print(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s, const char* indent,
                             FILE* f) {
  fprintf(f, "%sschedule%s%s {\n", indent, s->scheduler[0] ? " " : "", s->scheduler);
  if (s->num_knobs) {
    fprintf(f, "%s  knobs", indent);
    for (int i = 0; i < s->num_knobs && i < k->num_knobs; i++)
      fprintf(f, "%s %s = %" PRId64, i ? "," : "", k->knobs[i].name, s->knobs[i]);
    fputc('\n', f);
  }
  fprintf(f, "%s  threads %" PRId64 ", vector %" PRId64 ", unroll %" PRId64 "\n", indent, s->threads, s->vector,
          s->unroll);
  for (int i = 0; i < s->num_dots; i++) {
    const xc_tiled_dot_schedule_t* d = &s->dots[i];
    char name[64];
    xc_tiled_mma_name(&d->mma, name, sizeof name);
    fprintf(f, "%s  dot %d: %s, stages %d, operands %s\n", indent, i, name, d->stages, space_name(d->operands));
  }
  fprintf(f, "%s  local %" PRId64 ", dynamic %" PRId64 "\n", indent, s->local_bytes, s->dynamic_bytes);
  fprintf(f, "%s}\n", indent);
}
