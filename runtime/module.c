/* Compiled modules in memory: building one from a lowered module (each kernel
 * emitted and compiled by the target), linking the sections together after a
 * build or a file read, hashing, and teardown. The file layout is in
 * module_format.c. */
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

/* ---- temp folders ------------------------------------------------------------- */

static xc_status_t make_temp_dir(char* out, size_t cap) {
  const char* base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(out, cap, "%s/xcomp-xcm-XXXXXX", base);
  if (!mkdtemp(out)) return xc_error(XC_IO, "cannot create a temp folder in %s: %s", base, strerror(errno));
  return NULL;
}

xc_status_t xc_cm_graph_to_text(const xc_graph_t* g, char** out_text, size_t* out_text_size,
                                uint8_t** out_weights, size_t* out_weights_size) {
  *out_text = NULL;
  *out_weights = NULL;
  *out_text_size = *out_weights_size = 0;
  char dir[4096], side[4200];
  XC_RETURN_IF_ERROR(make_temp_dir(dir, sizeof dir));
  snprintf(side, sizeof side, "%s/weights.bin", dir);
  xc_xir_print_options_t o;
  xc_xir_print_options_init(&o);
  o.inline_limit = 0;
  o.side_file = side;
  o.show_provenance = true;
  xc_status_t s = xc_xir_print_string(g, &o, out_text);
  if (!s) {
    *out_text_size = strlen(*out_text);
    struct stat st;
    if (stat(side, &st) == 0) {
      s = xc_read_file_bytes(side, out_weights, out_weights_size);
    } else {
      *out_weights = malloc(1);
      if (!*out_weights) s = xc_error_oom();
    }
  }
  unlink(side);
  rmdir(dir);
  if (s) {
    free(*out_text);
    free(*out_weights);
    *out_text = NULL;
    *out_weights = NULL;
  }
  return s;
}

static xc_status_t graph_from_text(const char* text, size_t size, const uint8_t* weights, size_t wsize,
                                   const char* what, xc_graph_t** out) {
  char dir[4096], side[4200], name[4200];
  XC_RETURN_IF_ERROR(make_temp_dir(dir, sizeof dir));
  snprintf(side, sizeof side, "%s/weights.bin", dir);
  snprintf(name, sizeof name, "%s (graph section)", what);
  xc_status_t s = xc_write_file_atomic(side, weights, wsize);
  if (!s) s = xc_xir_parse(text, size, name, dir, out);
  unlink(side);
  rmdir(dir);
  return s;
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
  int flagged_inputs = 0;
  for (int i = 0; i < m->num_values; i++) {
    unsigned f = m->values[i].flags;
    if ((f & XC_CM_VALUE_INPUT) && (f & XC_CM_VALUE_WEIGHT))
      return link_fail(what, "a value is both an input and a weight: ", m->values[i].name, NULL);
    flagged_inputs += (f & XC_CM_VALUE_INPUT) != 0;
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
  return NULL;
}

/* ---- building ----------------------------------------------------------------------- */

void xc_cm_build_options_init(xc_cm_build_options_t* o) { memset(o, 0, sizeof *o); }

static const xc_symexpr_t* copy_expr(xc_arena_t* a, const xc_symexpr_t* e) {
  if (!e) return NULL;
  xc_symexpr_t* c = xc_arena_alloc(a, sizeof *c);
  if (!c) return NULL;
  c->kind = e->kind;
  c->value = e->value;
  if (e->name && !(c->name = xc_arena_strdup(a, e->name))) return NULL;
  if (e->a && !(c->a = copy_expr(a, e->a))) return NULL;
  if (e->b && !(c->b = copy_expr(a, e->b))) return NULL;
  return c;
}

static bool copy_dim(xc_arena_t* a, xc_dim_t d, xc_dim_t* out) {
  out->value = d.value;
  out->sym = NULL;
  if (d.sym && !(out->sym = copy_expr(a, d.sym))) return false;
  return true;
}

typedef struct {
  xc_compiled_module_t* m;
  int cap;
  const xc_value_t** graph_values; /* parallel to m->values */
  int* by_id;                      /* graph value id -> index, -1 (ids < num_ids) */
  int num_ids;
} value_table_t;

static xc_status_t value_index(value_table_t* t, const xc_value_t* v, int* out) {
  xc_compiled_module_t* m = t->m;
  if (!v) return xc_error(XC_INTERNAL, "a lowered step refers to no value");
  bool by_id = t->by_id && v->id >= 0 && v->id < t->num_ids;
  if (by_id && t->by_id[v->id] >= 0 && t->graph_values[t->by_id[v->id]] == v) {
    *out = t->by_id[v->id];
    return NULL;
  }
  /* An empty id slot means "not added yet"; anything else is checked the slow way. */
  bool fresh = by_id && t->by_id[v->id] < 0;
  for (int i = 0; !fresh && i < m->num_values; i++)
    if (t->graph_values[i] == v) {
      *out = i;
      return NULL;
    }
  if (v->rank < 0 || v->dtype == XC_DTYPE_UNDEFINED)
    return xc_error(XC_INVALID_ARGUMENT, "value '%s' has no inferred type", v->name);
  if (m->num_values == t->cap) {
    int cap = t->cap ? 2 * t->cap : 32;
    xc_cm_value_t* nv = realloc(m->values, sizeof *nv * (size_t)cap);
    if (!nv) return xc_error_oom();
    m->values = nv;
    const xc_value_t** ng = realloc(t->graph_values, sizeof *ng * (size_t)cap);
    if (!ng) return xc_error_oom();
    t->graph_values = ng;
    t->cap = cap;
  }
  xc_cm_value_t* c = &m->values[m->num_values];
  memset(c, 0, sizeof *c);
  c->name = xc_arena_strdup(m->arena, v->name);
  c->dtype = v->dtype;
  c->rank = v->rank;
  c->dims = xc_arena_alloc(m->arena, sizeof *c->dims * (size_t)(v->rank + 1));
  if (!c->name || !c->dims) return xc_error_oom();
  for (int d = 0; d < v->rank; d++)
    if (!copy_dim(m->arena, v->dims[d], &c->dims[d])) return xc_error_oom();
  if (v->constant) c->flags |= XC_CM_VALUE_WEIGHT;
  else if (v->producer && strcmp(v->producer->op_type, "Constant") == 0)
    return xc_error(XC_UNSUPPORTED, "value '%s' comes from a Constant node (run constant folding first)", v->name);
  t->graph_values[m->num_values] = v;
  if (fresh) t->by_id[v->id] = m->num_values;
  *out = m->num_values++;
  return NULL;
}

static const char* source_extension(const char* language) {
  if (!language) return "txt";
  if (strcmp(language, "c") == 0) return "c";
  if (strcmp(language, "opencl-c") == 0) return "cl";
  return language;
}

static xc_status_t dump_text(const char* dir, const char* name, const char* ext, const char* text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  return xc_write_file_atomic(path, text, strlen(text));
}

static xc_status_t build_kernel(const xc_lowered_kernel_t* lk, int index, int count, xc_target_t* target,
                                const xc_device_caps_t* caps, const xc_cm_build_options_t* o,
                                xc_compiled_module_t* m, int* compiled) {
  const xc_tiled_kernel_t* tk = lk->kernel;
  xc_cm_kernel_t* k = &m->kernels[index];
  k->name = xc_arena_strdup(m->arena, tk->name ? tk->name : "kernel");
  char* text = xc_tiled_print_to_string(tk);
  if (!k->name || !text) {
    free(text);
    return xc_error_oom();
  }
  k->tiled_text = xc_arena_strdup(m->arena, text);
  free(text);
  if (!k->tiled_text) return xc_error_oom();

  xc_knob_t knobs[64];
  int nk = tk->num_knobs < 64 ? tk->num_knobs : 64;
  for (int i = 0; i < nk; i++) {
    knobs[i].name = tk->knobs[i].name;
    knobs[i].value = lk->knobs[i];
  }
  xc_kernel_source_t src;
  memset(&src, 0, sizeof src);
  xc_status_t s;
  if (o->emit) {
    s = o->emit(o->emit_ctx, tk, lk->knobs, &src);
  } else {
    char why[512] = "";
    if (!xc_target_supports(target, caps, tk, why, sizeof why))
      return xc_error(XC_UNSUPPORTED, "target %s declines kernel '%s': %s", xc_target_name(target), k->name, why);
    s = xc_target_emit(target, caps, tk, knobs, nk, &src);
  }
  if (s) return xc_status_annotate(s, "kernel '%s' (graph nodes: %s)", k->name, tk->origin ? tk->origin : "?");
  if (o->dump_dir) {
    s = dump_text(o->dump_dir, k->name, source_extension(src.language), src.text);
    if (!s) s = dump_text(o->dump_dir, k->name, "tiled", k->tiled_text);
    if (s) {
      xc_kernel_source_release(&src);
      return s;
    }
  }
  if (o->progress)
    fprintf(o->progress, "xcomp: compiling kernel %d/%d %s (%s)\n", index + 1, count, k->name,
            xc_target_name(target));
  xc_compile_options_t co = o->compile;
  char dump_path[4096];
  if (o->dump_dir) {
    snprintf(dump_path, sizeof dump_path, "%s/%s", o->dump_dir, k->name);
    co.dump_path = dump_path;
  }
  s = xc_target_compile(target, caps, &src, &co, &k->blob);
  if (compiled) (*compiled)++;
  snprintf(k->entry, sizeof k->entry, "%s", src.entry);
  xc_kernel_source_release(&src);
  if (s) return xc_status_annotate(s, "kernel '%s' (graph nodes: %s)", k->name, tk->origin ? tk->origin : "?");
  if (!k->entry[0]) return xc_error(XC_INTERNAL, "kernel '%s': the emitter named no entry point", k->name);
  return xc_tiled_parse(k->tiled_text, strlen(k->tiled_text), k->name, &k->tiled);
}

xc_status_t xc_compiled_module_build(const xc_lowered_module_t* lowered, xc_target_t* target,
                                     const xc_device_caps_t* caps, const xc_cm_build_options_t* o,
                                     int* kernels_compiled, xc_compiled_module_t** out) {
  *out = NULL;
  xc_cm_build_options_t defaults;
  if (!o) {
    xc_cm_build_options_init(&defaults);
    o = &defaults;
  }
  const xc_graph_t* g = lowered->graph;
  xc_compiled_module_t* m = calloc(1, sizeof *m);
  if (!m || !(m->arena = xc_arena_create())) {
    free(m);
    return xc_error_oom();
  }
  snprintf(m->xcomp_version, sizeof m->xcomp_version, "%s", XCOMP_VERSION);
  snprintf(m->target, sizeof m->target, "%s", xc_target_name(target));
  snprintf(m->device_name, sizeof m->device_name, "%s", caps->name);
  m->caps_fingerprint = xc_device_caps_fingerprint(caps);
  value_table_t vt = {m, 0, NULL, calloc((size_t)g->num_values + 1, sizeof(int)), g->num_values};
  for (int i = 0; vt.by_id && i < g->num_values; i++) vt.by_id[i] = -1;
  xc_status_t s = NULL;
  m->inputs = xc_arena_alloc(m->arena, sizeof(int) * (size_t)(g->num_inputs + 1));
  m->outputs = xc_arena_alloc(m->arena, sizeof(int) * (size_t)(g->num_outputs + 1));
  m->kernels = calloc((size_t)lowered->num_kernels + 1, sizeof *m->kernels);
  m->steps = xc_arena_alloc(m->arena, sizeof *m->steps * (size_t)(lowered->num_steps + 1));
  if (!m->inputs || !m->outputs || !m->kernels || !m->steps) s = xc_error_oom();
  if (!s && o->dump_dir) s = xc_rt_make_dirs(o->dump_dir);
  m->num_kernels = m->kernels ? lowered->num_kernels : 0;
  for (int i = 0; !s && i < g->num_inputs; i++) {
    s = value_index(&vt, g->inputs[i], &m->inputs[i]);
    if (!s) m->values[m->inputs[i]].flags |= XC_CM_VALUE_INPUT;
    m->num_inputs = i + 1;
  }
  for (int i = 0; !s && i < g->num_outputs; i++) {
    s = value_index(&vt, g->outputs[i], &m->outputs[i]);
    if (!s) m->values[m->outputs[i]].flags |= XC_CM_VALUE_OUTPUT;
    m->num_outputs = i + 1;
  }
  for (int i = 0; !s && i < lowered->num_steps; i++) {
    const xc_lowered_step_t* ls = &lowered->steps[i];
    xc_cm_step_t* cs = &m->steps[i];
    m->num_steps = i + 1;
    if (ls->kind == XC_STEP_ALIAS) {
      cs->kind = XC_CM_STEP_ALIAS;
      s = value_index(&vt, ls->dst, &cs->alias_dst);
      if (!s) s = value_index(&vt, ls->src, &cs->alias_src);
      continue;
    }
    if (ls->index < 0 || ls->index >= lowered->num_kernels) {
      s = xc_error(XC_INTERNAL, "lowered step %d names kernel %d of %d", i, ls->index, lowered->num_kernels);
      break;
    }
    const xc_lowered_kernel_t* lk = &lowered->kernels[ls->index];
    cs->kind = XC_CM_STEP_KERNEL;
    cs->kernel = ls->index;
    cs->num_params = lk->num_params;
    cs->params = xc_arena_alloc(m->arena, sizeof *cs->params * (size_t)(lk->num_params + 1));
    cs->num_knobs = lk->kernel->num_knobs;
    cs->knobs = xc_arena_alloc(m->arena, sizeof(int64_t) * (size_t)(cs->num_knobs + 1));
    if (!cs->params || !cs->knobs) {
      s = xc_error_oom();
      break;
    }
    if (cs->num_knobs) memcpy(cs->knobs, lk->knobs, sizeof(int64_t) * (size_t)cs->num_knobs);
    for (int p = 0; !s && p < lk->num_params; p++) {
      if (lk->param_values[p]) {
        s = value_index(&vt, lk->param_values[p], &cs->params[p].value);
        if (!s && p < lk->kernel->num_params) cs->params[p].role = (int)lk->kernel->params[p]->type.role;
      } else {
        cs->params[p].value = -1;
        if (!copy_dim(m->arena, lk->param_dims[p], &cs->params[p].dim)) s = xc_error_oom();
      }
    }
  }
  for (int i = 0; !s && i < lowered->num_kernels; i++)
    s = build_kernel(&lowered->kernels[i], i, lowered->num_kernels, target, caps, o, m, kernels_compiled);
  free(vt.graph_values);
  free(vt.by_id);
  if (!s)
    s = xc_cm_graph_to_text(g, &m->graph_text, &m->graph_text_size, &m->weights, &m->weights_size);
  if (!s) s = xc_cm_link(m, "compiled module");
  if (s) {
    xc_compiled_module_destroy(m);
    return s;
  }
  *out = m;
  return NULL;
}

void xc_compiled_module_destroy(xc_compiled_module_t* m) {
  if (!m) return;
  for (int i = 0; i < m->num_kernels; i++) {
    xc_blob_release(&m->kernels[i].blob);
    xc_tiled_kernel_destroy(m->kernels[i].tiled);
  }
  free(m->kernels);
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
}
