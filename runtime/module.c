/* Compiled modules in memory: linking the sections together after a build
 * (driver/build.c) or a file read, hashing, and teardown. The file layout is
 * in module_format.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "runtime_internal.h"
#include "xcomp/xir.h"

/* ---- hashing ------------------------------------------------------------------ */

xc_hash128_t xc_hash128(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  xc_hash128_t out = {h.low64, h.high64};
  return out;
}

void xc_hash128_hex(xc_hash128_t h, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
}

xc_hash128_t xc_device_caps_fingerprint(const xc_device_caps_t* caps) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%s|%s|%s|%d|%d|%d|%lld|%lld|%lld|%d|%u|%d|%d", caps->name, caps->vendor,
                   caps->version, (int)caps->kind, caps->simd_width, caps->max_threads_per_group,
                   (long long)caps->local_memory_bytes, (long long)caps->local_memory_optin_bytes,
                   (long long)caps->max_buffer_bytes, (int)caps->preferred_layout, (unsigned)caps->dtypes,
                   caps->num_mma_shapes, caps->has_vendor_blas ? 1 : 0);
  for (int i = 0; i < caps->num_mma_shapes && i < XC_TARGET_MAX_MMA_SHAPES && n > 0 && (size_t)n < sizeof buf; i++) {
    const xc_mma_shape_t* s = &caps->mma_shapes[i];
    n += snprintf(buf + n, sizeof buf - (size_t)n, "|%dx%dx%d:%d:%d", s->m, s->n, s->k, (int)s->input_dtype,
                  (int)s->accumulator_dtype);
  }
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
  return xc_hash128(buf, (size_t)n);
}

/* The name the graph section gives the weights section in its file("...")
 * references: the weights are held in memory, never in a file of that name. */
#define WEIGHTS_NAME "weights.bin"

xc_status_t xc_cm_graph_to_text(const xc_graph_t* g, char** out_text, size_t* out_text_size,
                                uint8_t** out_weights, size_t* out_weights_size) {
  *out_text = NULL;
  *out_text_size = 0;
  xc_xir_print_options_t o;
  xc_xir_print_options_init(&o);
  o.inline_limit = 0;
  o.show_provenance = true;
  /* The weights' bytes are copied once, into the section's buffer. */
  XC_RETURN_IF_ERROR(xc_xir_print_with_side(g, &o, WEIGHTS_NAME, out_text, out_weights, out_weights_size));
  *out_text_size = strlen(*out_text);
  return NULL;
}

/* The graph's constants are views of the weights section (m->weights), which
 * lives as long as the graph (xc_compiled_module_destroy frees it after). */
static xc_status_t graph_from_text(const char* text, size_t size, const uint8_t* weights, size_t wsize,
                                   const char* what, xc_graph_t** out) {
  char name[4200];
  snprintf(name, sizeof name, "%s (graph section)", what);
  return xc_xir_parse_with_side(text, size, name, WEIGHTS_NAME, weights, wsize, true, out);
}

/* ---- linking --------------------------------------------------------------------- */

static xc_status_t link_fail(const char* what, const char* fmt, const char* a, const char* b) {
  return xc_error(XC_DATA_LOSS, "%s: inconsistent compiled module: %s%s%s%s", what, fmt, a ? a : "",
                  b ? " " : "", b ? b : "");
}

xc_status_t xc_cm_link(xc_compiled_module_t* m, const char* what) {
  if (!m->graph) {
    xc_status_t s =
        graph_from_text(m->graph_text, m->graph_text_size, m->weights, m->weights_size, what, &m->graph);
    if (s) return xc_status_annotate(s, "%s: graph section", what);
  }
  int flagged_inputs = 0, index_error = -1;
  for (int i = 0; i < m->num_values; i++) {
    unsigned f = m->values[i].flags;
    if ((f & XC_CM_VALUE_INPUT) && (f & XC_CM_VALUE_WEIGHT))
      return link_fail(what, "a value is both an input and a weight: ", m->values[i].name, NULL);
    flagged_inputs += (f & XC_CM_VALUE_INPUT) != 0;
    if (f & XC_CM_VALUE_INDEX_ERROR) {
      const xc_cm_value_t* v = &m->values[i];
      if (f != XC_CM_VALUE_INDEX_ERROR || v->dtype != XC_I64 || v->rank != 1 || v->dims[0].sym ||
          v->dims[0].value < XC_INDEX_ERROR_WORDS || v->dims[0].value % XC_INDEX_ERROR_WORDS ||
          v->dims[0].value > (int64_t)XC_INDEX_ERROR_WORDS * 65536)
        return link_fail(what, "the index-error record must be an i64[4 x slots] value of its own: ", v->name, NULL);
      if (index_error >= 0) return link_fail(what, "two index-error records: ", v->name, m->values[index_error].name);
      index_error = i;
    }
  }
  if (flagged_inputs != m->num_inputs) return link_fail(what, "input list and input flags disagree", NULL, NULL);
  for (int i = 0; i < m->num_inputs; i++) {
    if (!(m->values[m->inputs[i]].flags & XC_CM_VALUE_INPUT))
      return link_fail(what, "input list and input flags disagree", NULL, NULL);
    for (int j = 0; j < i; j++)
      if (m->inputs[j] == m->inputs[i]) return link_fail(what, "an input is listed twice", NULL, NULL);
  }
  for (int i = 0; i < m->num_outputs; i++)
    if (!(m->values[m->outputs[i]].flags & XC_CM_VALUE_OUTPUT))
      return link_fail(what, "output list and output flags disagree", NULL, NULL);
  for (int i = 0; i < m->num_values; i++) {
    xc_cm_value_t* v = &m->values[i];
    if (!(v->flags & XC_CM_VALUE_WEIGHT)) continue;
    const xc_value_t* gv = xc_graph_find_value(m->graph, v->name);
    if (!gv || !gv->constant) return link_fail(what, "no constant data for weight ", v->name, NULL);
    const xc_tensor_t* t = gv->constant;
    bool same = t->dtype == v->dtype && t->rank == v->rank;
    for (int d = 0; same && d < v->rank; d++) same = !v->dims[d].sym && v->dims[d].value == t->dims[d];
    if (!same) return link_fail(what, "weight shape differs from the graph's constant: ", v->name, NULL);
    v->constant = t;
  }
  for (int i = 0; i < m->num_kernels; i++) {
    xc_cm_kernel_t* k = &m->kernels[i];
    if (k->tiled) continue;
    if (!k->tiled_text) return link_fail(what, "kernel without tiled IR: ", k->name, NULL);
    xc_status_t s = xc_tiled_parse(k->tiled_text, strlen(k->tiled_text), k->name ? k->name : "kernel", &k->tiled);
    if (s) return xc_status_annotate(s, "%s: kernel %d tiled IR", what, i);
  }
  for (int i = 0; i < m->num_steps; i++) {
    const xc_cm_step_t* s = &m->steps[i];
    if (s->kind == XC_CM_STEP_ALIAS) {
      if (s->alias_dst < 0 || s->alias_src < 0 || s->alias_dst == s->alias_src)
        return link_fail(what, "bad alias step", NULL, NULL);
      const xc_cm_value_t *d = &m->values[s->alias_dst], *r = &m->values[s->alias_src];
      if ((d->flags | r->flags) & XC_CM_VALUE_INDEX_ERROR)
        return link_fail(what, "alias step of the index-error record: ", d->name, NULL);
      if (d->flags & (XC_CM_VALUE_INPUT | XC_CM_VALUE_WEIGHT))
        return link_fail(what, "alias step writes an input or weight: ", d->name, NULL);
      if (xc_dtype_size(d->dtype) != xc_dtype_size(r->dtype))
        return link_fail(what, "alias step between element sizes that differ:", d->name, r->name);
      continue;
    }
    if (s->kernel < 0 || s->kernel >= m->num_kernels) return link_fail(what, "step kernel index out of range", NULL, NULL);
    const xc_tiled_kernel_t* tk = m->kernels[s->kernel].tiled;
    if (s->num_params != tk->num_params)
      return link_fail(what, "step parameter count differs from kernel ", tk->name, NULL);
    if (s->num_knobs != tk->num_knobs) return link_fail(what, "step knob count differs from kernel ", tk->name, NULL);
    int nbuf = 0, nscalar = 0;
    for (int p = 0; p < s->num_params; p++) {
      const xc_tiled_value_t* pv = tk->params[p];
      bool is_buffer = pv->type.kind == XC_TILED_MEMREF;
      if (is_buffer != (s->params[p].value >= 0))
        return link_fail(what, "a step binds a buffer to a scalar parameter (or back) of kernel ", tk->name, NULL);
      if (is_buffer) {
        nbuf++;
        const xc_cm_value_t* v = &m->values[s->params[p].value];
        if (v->dtype != pv->type.dtype)
          return link_fail(what, "buffer dtype differs from kernel parameter:", v->name, tk->name);
        if ((s->params[p].role & XC_ROLE_OUT) && (v->flags & (XC_CM_VALUE_INPUT | XC_CM_VALUE_WEIGHT)))
          return link_fail(what, "a kernel writes an input or weight:", v->name, tk->name);
      } else {
        nscalar++;
      }
    }
    if (nbuf > XC_TARGET_MAX_ARGS || nscalar > XC_TARGET_MAX_ARGS)
      return link_fail(what, "too many kernel arguments in ", tk->name, NULL);
    xc_status_t st = xc_tiled_knobs_check(tk, s->knobs, NULL);
    if (st) return xc_status_annotate(st, "%s: step %d knob values", what, i);
  }
  XC_RETURN_IF_ERROR(xc_cm_check_values(m, what));
  if (xc_cm_is_static(m)) {
    /* One binding only: every kernel access is checked now, before the
     * module can run. Modules with symbols: per binding, by the executor. */
    xc_symbind_t none;
    xc_symbind_init(&none);
    xc_status_t st = xc_cm_check_accesses(m, &none, what);
    xc_symbind_free(&none);
    XC_RETURN_IF_ERROR(st);
  }
  return NULL;
}

void xc_compiled_module_destroy(xc_compiled_module_t* m) {
  if (!m) return;
  for (int i = 0; i < m->num_kernels; i++) {
    xc_blob_release(&m->kernels[i].blob);
    xc_tiled_kernel_destroy(m->kernels[i].tiled);
  }
  free(m->kernels);
  xc_cm_buckets_destroy(m->buckets);
  free(m->values);  /* built modules allocate the value table with realloc */
  xc_graph_destroy(m->graph);
  free(m->graph_text);
  free(m->weights);
  xc_arena_destroy(m->arena);
  free(m);
}

void xc_compiled_module_describe(const xc_compiled_module_t* m, FILE* f) {
  size_t blob_bytes = 0;
  for (int i = 0; i < m->num_kernels; i++) blob_bytes += m->kernels[i].blob.size;
  char fp[33];
  xc_hash128_hex(m->caps_fingerprint, fp);
  fprintf(f, "compiled module: target %s, %s '%s' (caps %s), xcomp %s\n", m->target,
          (m->flags & XC_CM_ARCH_ONLY) ? "architecture" : "device", m->device_name, fp, m->xcomp_version);
  fprintf(f, "  %d kernels (%zu blob bytes), %d steps, %d values, weights %zu bytes\n", m->num_kernels,
          blob_bytes, m->num_steps, m->num_values, m->weights_size);
  if (m->buckets) {
    const xc_cm_buckets_t* b = m->buckets;
    fprintf(f, "  shape buckets of '%s' in %lld..%lld:", b->symbol, (long long)b->min, (long long)b->max);
    for (int i = 0; i < b->num; i++)
      fprintf(f, "%s %lld (%d kernels)", i ? "," : "", (long long)b->items[i].size, b->items[i].module->num_kernels);
    fprintf(f, "; other sizes %s\n", b->pad_ok ? "padded to the next bucket" : "run the generic module");
    if (!b->pad_ok && b->pad_note[0]) fprintf(f, "  not padded: %s\n", b->pad_note);
  }
}

void xc_cm_buckets_destroy(xc_cm_buckets_t* b) {
  if (!b) return;
  for (int i = 0; i < b->num; i++) xc_compiled_module_destroy(b->items[i].module);
  free(b->items);
  free(b);
}
