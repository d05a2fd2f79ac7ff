/* The static memory plan of a compiled module for one binding of its
 * symbols: value sizes from their evaluated dims, alias groups, lifetimes in
 * step order, and greedy best-fit reuse of device buffers ("slots"). */
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

static xc_status_t value_bytes(const xc_cm_value_t* v, const xc_symbind_t* binds, int64_t* out) {
  int64_t n = (int64_t)xc_dtype_size(v->dtype);
  for (int d = 0; d < v->rank; d++) {
    int64_t x;
    xc_status_t s = xc_dim_eval(v->dims[d], binds, &x);
    if (s) return xc_status_annotate(s, "size of value '%s'", v->name);
    if (x < 0) return xc_error(XC_OUT_OF_RANGE, "value '%s': dim %d evaluates to %lld", v->name, d, (long long)x);
    if (!xc_mul_i64(n, x, &n) || n > XC_MAX_TENSOR_BYTES)
      return xc_error(XC_RESOURCE_EXHAUSTED, "value '%s' would exceed %lld bytes", v->name,
                      (long long)XC_MAX_TENSOR_BYTES);
  }
  *out = n;
  return NULL;
}

void xc_memplan_free(xc_memplan_t* p) {
  if (!p) return;
  free(p->value_bytes);
  free(p->value_slot);
  free(p->value_root);
  free(p->slot_bytes);
  memset(p, 0, sizeof *p);
}

/* Picks a slot for `need` bytes among the free ones: the smallest that fits,
 * else the largest (grown), else a new slot. */
static int take_slot(xc_memplan_t* p, bool* slot_free, int64_t need) {
  int best = -1, largest = -1;
  for (int i = 0; i < p->num_slots; i++) {
    if (!slot_free[i]) continue;
    if (p->slot_bytes[i] >= need && (best < 0 || p->slot_bytes[i] < p->slot_bytes[best])) best = i;
    if (largest < 0 || p->slot_bytes[i] > p->slot_bytes[largest]) largest = i;
  }
  if (best < 0 && largest >= 0) {
    best = largest;
    p->slot_bytes[best] = need;
  }
  if (best < 0) {
    best = p->num_slots++;
    p->slot_bytes[best] = need;
  }
  slot_free[best] = false;
  return best;
}

xc_status_t xc_memplan_build(const xc_compiled_module_t* m, const xc_symbind_t* binds, xc_memplan_t* out) {
  memset(out, 0, sizeof *out);
  int nv = m->num_values, ns = m->num_steps;
  out->num_values = nv;
  out->value_bytes = calloc((size_t)nv + 1, sizeof *out->value_bytes);
  out->value_slot = calloc((size_t)nv + 1, sizeof *out->value_slot);
  out->value_root = calloc((size_t)nv + 1, sizeof *out->value_root);
  out->slot_bytes = calloc((size_t)nv + 1, sizeof *out->slot_bytes);
  int* first = calloc((size_t)nv + 1, sizeof *first);
  int* last = calloc((size_t)nv + 1, sizeof *last);
  bool* slot_free = calloc((size_t)nv + 1, sizeof *slot_free);
  xc_status_t s = NULL;
  if (!out->value_bytes || !out->value_slot || !out->value_root || !out->slot_bytes || !first || !last ||
      !slot_free)
    s = xc_error_oom();
  for (int v = 0; !s && v < nv; v++) {
    s = value_bytes(&m->values[v], binds, &out->value_bytes[v]);
    out->value_root[v] = v;
    out->value_slot[v] = -1;
    first[v] = ns; /* not defined yet */
    last[v] = -1;
  }
  /* Alias groups: a destination uses its source's root. */
  for (int i = 0; !s && i < ns; i++) {
    const xc_cm_step_t* st = &m->steps[i];
    if (st->kind != XC_CM_STEP_ALIAS) continue;
    if (out->value_bytes[st->alias_dst] > out->value_bytes[out->value_root[st->alias_src]] &&
        out->value_bytes[st->alias_dst] > out->value_bytes[st->alias_src])
      s = xc_error(XC_INVALID_ARGUMENT, "alias '%s' of '%s' is larger than its source",
                   m->values[st->alias_dst].name, m->values[st->alias_src].name);
    out->value_root[st->alias_dst] = out->value_root[st->alias_src];
  }
  /* Lifetimes of roots: first write to last use over the whole group. */
  for (int i = 0; !s && i < ns; i++) {
    const xc_cm_step_t* st = &m->steps[i];
    if (st->kind == XC_CM_STEP_ALIAS) {
      int r = out->value_root[st->alias_src];
      if (last[r] < i) last[r] = i;
      continue;
    }
    for (int p = 0; p < st->num_params; p++) {
      int v = st->params[p].value;
      if (v < 0) continue;
      int r = out->value_root[v];
      if ((st->params[p].role & XC_ROLE_OUT) && first[r] > i) first[r] = i;
      if (last[r] < i) last[r] = i;
    }
  }
  for (int v = 0; !s && v < nv; v++) {
    int r = out->value_root[v];
    if (out->value_bytes[r] < out->value_bytes[v]) out->value_bytes[r] = out->value_bytes[v];
    if (m->values[v].flags & XC_CM_VALUE_OUTPUT) last[r] = ns;
  }
  for (int v = 0; !s && v < nv; v++) {
    if (out->value_root[v] != v) continue;
    if (m->values[v].flags & (XC_CM_VALUE_INPUT | XC_CM_VALUE_WEIGHT | XC_CM_VALUE_INDEX_ERROR)) continue;
    if (first[v] == ns) first[v] = 0; /* read before any write (or never used): lives throughout */
    if (last[v] < first[v]) last[v] = first[v];
    out->unplanned_bytes += out->value_bytes[v];
  }
  /* Walk the steps: allocate roots at their first step, free after their
   * last. Roots are bucketed by first and by last step (counting sort), so
   * the walk is linear in steps + values. */
  int* alloc_order = calloc((size_t)nv + 1, sizeof(int));
  int* free_order = calloc((size_t)nv + 1, sizeof(int));
  int* alloc_start = calloc((size_t)ns + 2, sizeof(int));
  int* free_start = calloc((size_t)ns + 2, sizeof(int));
  if (!s && (!alloc_order || !free_order || !alloc_start || !free_start)) s = xc_error_oom();
  for (int v = 0; !s && v < nv; v++) {
    if (out->value_root[v] != v || (m->values[v].flags & (XC_CM_VALUE_INPUT | XC_CM_VALUE_WEIGHT | XC_CM_VALUE_INDEX_ERROR))) continue;
    alloc_start[first[v] + 1]++;
    free_start[last[v] + 1]++;
  }
  for (int i = 0; !s && i <= ns; i++) {
    alloc_start[i + 1] += alloc_start[i];
    free_start[i + 1] += free_start[i];
  }
  for (int v = 0; !s && v < nv; v++) {
    if (out->value_root[v] != v || (m->values[v].flags & (XC_CM_VALUE_INPUT | XC_CM_VALUE_WEIGHT | XC_CM_VALUE_INDEX_ERROR))) continue;
    alloc_order[alloc_start[first[v]]++] = v;
    free_order[free_start[last[v]]++] = v;
  }
  /* alloc_start[i] now ends bucket i: bucket i is [end of i-1, end of i). */
  for (int i = 0, a = 0, f = 0; !s && i <= ns; i++) {
    for (; a < alloc_start[i]; a++) {
      int v = alloc_order[a];
      out->value_slot[v] = take_slot(out, slot_free, out->value_bytes[v]);
    }
    for (; f < free_start[i]; f++) slot_free[out->value_slot[free_order[f]]] = true;
  }
  free(alloc_order);
  free(free_order);
  free(alloc_start);
  free(free_start);
  for (int v = 0; !s && v < nv; v++) out->value_slot[v] = out->value_slot[out->value_root[v]];
  for (int i = 0; !s && i < out->num_slots; i++) out->planned_bytes += out->slot_bytes[i];
  free(first);
  free(last);
  free(slot_free);
  if (s) xc_memplan_free(out);
  return s;
}

xc_status_t xc_memplan_unshare(xc_memplan_t* p) {
  int nv = p->num_values;
  int64_t* bytes = calloc((size_t)nv + 1, sizeof *bytes);
  int* root_slot = malloc(((size_t)nv + 1) * sizeof *root_slot);
  if (!bytes || !root_slot) {
    free(bytes);
    free(root_slot);
    return xc_error_oom();
  }
  int slots = 0;
  for (int v = 0; v < nv; v++) {
    root_slot[v] = -1;
    if (p->value_root[v] != v || p->value_slot[v] < 0) continue;
    root_slot[v] = slots;
    bytes[slots++] = p->value_bytes[v];
  }
  for (int v = 0; v < nv; v++)
    p->value_slot[v] = p->value_slot[v] < 0 ? -1 : root_slot[p->value_root[v]];
  free(root_slot);
  free(p->slot_bytes);
  p->slot_bytes = bytes;
  p->num_slots = slots;
  p->planned_bytes = 0;
  for (int i = 0; i < slots; i++) p->planned_bytes += bytes[i];
  return NULL;
}
