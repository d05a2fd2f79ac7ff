/* Compiling a model: graph passes for the target, fusion plan, lowering to
 * tiled kernels, emitting and compiling every kernel into a compiled module,
 * through the compile cache (cache.c) keyed by everything that decides the
 * result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "runtime_internal.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"

void xc_compile_request_init(xc_compile_request_t* r) {
  memset(r, 0, sizeof *r);
  r->target = "cpu";
  r->opt_level = 2;
  r->use_cache = true;
  xc_cm_build_options_init(&r->build);
}

/* First line of `<compiler> --version`, computed once per compiler command. */
static void compiler_identity(const char* compiler, char* out, size_t size) {
  static char cached_cmd[512], cached_id[256];
  static bool have = false;
  if (have && strcmp(cached_cmd, compiler) == 0) {
    snprintf(out, size, "%s", cached_id);
    return;
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "%s --version 2>/dev/null", compiler);
  char line[256] = "unknown compiler";
  FILE* p = popen(cmd, "r");
  if (p) {
    if (!fgets(line, sizeof line, p)) snprintf(line, sizeof line, "unknown compiler");
    pclose(p);
  }
  line[strcspn(line, "\n")] = '\0';
  snprintf(cached_cmd, sizeof cached_cmd, "%s", compiler);
  snprintf(cached_id, sizeof cached_id, "%s", line);
  have = true;
  snprintf(out, size, "%s", line);
}

/* The running program's own bytes: a rebuilt xcomp (another emitter, another
 * pass) must not reuse entries of the old one even though its version string
 * is the same. Read once per process; zero when unreadable (then the version
 * string alone decides). */
static xc_hash128_t self_identity(void) {
  static xc_hash128_t id;
  static bool have = false;
  if (have) return id;
  uint8_t* bytes = NULL;
  size_t size = 0;
  xc_status_t s = xc_read_file_bytes("/proc/self/exe", &bytes, &size);
  if (!s) id = xc_hash128(bytes, size);
  xc_status_free(s);
  free(bytes);
  have = true;
  return id;
}

static void hash_str(XXH3_state_t* st, const char* tag, const char* s) {
  if (!s) s = "";
  uint64_t n = strlen(s);
  XXH3_128bits_update(st, tag, strlen(tag));
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, s, (size_t)n);
}

xc_hash128_t xc_compile_cache_key(const void* model_bytes, size_t model_size, const char* target_name,
                                  const xc_device_caps_t* caps, const xc_compile_request_t* r) {
  XXH3_state_t* st = XXH3_createState();
  xc_hash128_t out = {0, 0};
  if (!st) return out;
  XXH3_128bits_reset(st);
  uint64_t n = model_size;
  XXH3_128bits_update(st, "model", 5);
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, model_bytes, model_size);
  hash_str(st, "target", target_name);
  xc_hash128_t fp = xc_device_caps_fingerprint(caps);
  XXH3_128bits_update(st, &fp, sizeof fp);
  char opts[1200];
  const xc_compile_options_t* c = &r->build.compile;
  snprintf(opts, sizeof opts,
           "O%d|precision=%s|flags=%s|extra=%s|cross=%d|tf32=%d|env=%s|clenv=%s|knobs=%s|format=%u|vendor=%d|arch=%d",
           r->opt_level,
           r->precision == XC_DTYPE_UNDEFINED ? "-" : xc_dtype_name(r->precision), c->flags ? c->flags : "-",
           c->extra_flags ? c->extra_flags : "-", c->cross ? 1 : 0, c->allow_tf32 ? 1 : 0,
           getenv("XCOMP_CPU_CFLAGS") ? getenv("XCOMP_CPU_CFLAGS") : "-",
           getenv("XCOMP_OPENCL_FLAGS") ? getenv("XCOMP_OPENCL_FLAGS") : "-",
           getenv("XCOMP_KNOBS") ? getenv("XCOMP_KNOBS") : "-", XC_CM_FORMAT_VERSION,
           r->no_vendor_blas ? 0 : 1, r->resolved_target && r->resolved_caps && r->resolved_for_arch ? 1 : 0);
  hash_str(st, "options", opts);
  hash_str(st, "xcomp", XCOMP_VERSION);
  xc_hash128_t self = self_identity();
  XXH3_128bits_update(st, &self, sizeof self);
  if (strcmp(target_name, "cpu") == 0) {
    const char* compiler = c->compiler ? c->compiler : getenv("CC");
    if (!compiler || !*compiler) compiler = "cc";
    char id[256];
    compiler_identity(compiler, id, sizeof id);
    hash_str(st, "compiler", compiler);
    hash_str(st, "compiler-id", id);
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  out.lo = h.low64;
  out.hi = h.high64;
  return out;
}

static void limits_of(const xc_device_caps_t* caps, bool allow_tf32, xc_tiled_limits_t* l) {
  if (caps->kind == XC_DEVICE_CPU) xc_tiled_limits_init_cpu(l);
  else xc_tiled_limits_init_gpu(l);
  if (caps->max_threads_per_group > 1) l->value[XC_TILED_LIMIT_MAX_THREADS] = caps->max_threads_per_group;
  if (caps->kind != XC_DEVICE_CPU && caps->local_memory_bytes > 0)
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

/* XCOMP_KNOBS="NAME=V[,NAME=V...]": every kernel with a knob NAME takes the
 * value V instead of the default chooser's (a hand-tuning and measuring
 * aid, docs/tiled-ir.md "Knobs and validity"). V must be one of the knob's
 * candidates; whether the combination is valid is the emitter's check. */
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

static xc_status_t lower_graph(const xc_graph_t* g, const xc_fusion_plan_t* plan, const xc_tiled_limits_t* limits,
                               xc_lowered_module_t** out) {
#ifdef XCOMP_HAVE_LOWERING
  return xc_lower(g, plan, limits, out);
#else
  (void)g;
  (void)plan;
  (void)limits;
  *out = NULL;
  return xc_error(XC_UNSUPPORTED, "lowering to tiled kernels is not available in this build");
#endif
}

static void lowered_free(xc_lowered_module_t* lm) {
#ifdef XCOMP_HAVE_LOWERING
  xc_lowered_module_destroy(lm);
#else
  (void)lm;
#endif
}

/* Names of the symbols in a dim expression, appended to names (dedup). */
static void collect_symbols(const xc_symexpr_t* e, const char** names, int* count, int cap) {
  if (!e) return;
  if (e->kind == XC_SYM_VAR) {
    for (int i = 0; i < *count; i++)
      if (strcmp(names[i], e->name) == 0) return;
    if (*count < cap) names[(*count)++] = e->name;
    return;
  }
  collect_symbols(e->a, names, count, cap);
  collect_symbols(e->b, names, count, cap);
}

/* The executor binds symbols from the input shapes only. A dim computed from
 * tensor values at run time (NonZero counts, Expand/Reshape to a shape that
 * is data, not folded) cannot be sized before the kernels run: refuse it at
 * compile time, naming the value, instead of failing at run time. */
static xc_status_t check_static_symbols(const xc_graph_t* g) {
  enum { CAP = 256 };
  const char* bound[CAP];
  int nb = 0;
  for (int i = 0; i < g->num_inputs; i++)
    for (int d = 0; d < g->inputs[i]->rank; d++)
      collect_symbols(g->inputs[i]->dims[d].sym, bound, &nb, CAP);
  for (int v = 0; v < g->num_values; v++) {
    const xc_value_t* val = g->values[v];
    for (int d = 0; d < val->rank; d++) {
      const char* used[16];
      int nu = 0;
      collect_symbols(val->dims[d].sym, used, &nu, 16);
      for (int u = 0; u < nu; u++) {
        bool ok = false;
        for (int b = 0; b < nb && !ok; b++) ok = strcmp(bound[b], used[u]) == 0;
        if (!ok)
          return xc_error(XC_UNSUPPORTED,
                          "value '%s' has a data-dependent dim '%s' (compiled targets need every "
                          "shape computable from the input shapes)",
                          val->name, used[u]);
      }
    }
  }
  return NULL;
}

xc_status_t xc_runtime_compile_graph(xc_graph_t* g, xc_target_t* target, const xc_device_caps_t* caps,
                                     const xc_compile_request_t* r, int* kernels_compiled,
                                     xc_compiled_module_t** out) {
  *out = NULL;
  xc_pass_options_t po;
  xc_pass_options_init(&po);
  po.opt_level = r->opt_level;
  po.precision = r->precision;
  po.target.name = xc_target_name(target);
  po.target.preferred_layout = caps->preferred_layout;
  if (caps->local_memory_bytes > 0) po.target.shared_mem_bytes = caps->local_memory_bytes;
  po.target.has_tensor_cores = caps->num_mma_shapes > 0;
  XC_RETURN_IF_ERROR(xc_passes_run(g, &po));
  XC_RETURN_IF_ERROR(check_static_symbols(g));
  xc_tiled_limits_t limits;
  limits_of(caps, r->build.compile.allow_tf32, &limits);
  xc_lowered_module_t* lm = NULL;
  xc_fusion_plan_t* plan = NULL;
  xc_status_t s = NULL;
  if (r->lower) {
    s = r->lower(r->lower_ctx, g, &limits, &lm);
  } else {
    s = xc_fusion_plan_build(g, &po.target, &plan);
    if (!s) s = lower_graph(g, plan, &limits, &lm);
  }
  if (!s) s = apply_knob_overrides(lm, getenv("XCOMP_KNOBS"));
  if (!s) s = xc_compiled_module_build(lm, target, caps, &r->build, kernels_compiled, out);
  if (!s && plan && !r->no_vendor_blas && caps->has_vendor_blas) {
    bool* has = calloc((size_t)lm->num_kernels + 1, sizeof *has);
    xc_vendor_gemm_t* cands = calloc((size_t)lm->num_kernels + 1, sizeof *cands);
    if (!has || !cands) {
      s = xc_error_oom();
    } else {
      xc_rt_vendor_candidates(plan, lm, false, has, cands);
      xc_status_t v = xc_rt_vendor_choose(*out, target, caps, has, cands, r->build.progress);
      if (v) { /* the generated kernels stand; the measurement only costs time */
        if (r->build.progress)
          fprintf(r->build.progress, "xcomp: warning: vendor GEMMs not measured: %s\n", xc_status_message(v));
        xc_status_free(v);
      }
    }
    free(has);
    free(cands);
  }
  if (lm) {
    if (r->lower) {
      if (r->lower_free) r->lower_free(r->lower_ctx, lm);
    } else {
      lowered_free(lm);
    }
  }
  xc_fusion_plan_destroy(plan);
  return s;
}

xc_status_t xc_runtime_compile(const void* model_bytes, size_t model_size, xc_model_loader_fn load,
                               void* load_ctx, const xc_compile_request_t* r, xc_cache_stats_t* stats,
                               xc_compiled_module_t** out) {
  *out = NULL;
  XC_RETURN_IF_ERROR(xc_targets_init());
  xc_target_t* target = NULL;
  int index = 0;
  xc_device_caps_t caps;
  if (r->resolved_target && r->resolved_caps) {
    target = r->resolved_target;
    caps = *r->resolved_caps;
  } else {
    XC_RETURN_IF_ERROR(xc_target_find(r->target, &target, &index));
    XC_RETURN_IF_ERROR(xc_target_device_caps(target, index, &caps));
  }
  char dir[4096] = "";
  xc_hash128_t key = {0, 0};
  bool cached = r->use_cache;
  if (cached) {
    if (r->cache_dir) snprintf(dir, sizeof dir, "%s", r->cache_dir);
    else XC_RETURN_IF_ERROR(xc_cache_dir(dir, sizeof dir));
    key = xc_compile_cache_key(model_bytes, model_size, xc_target_name(target), &caps, r);
    XC_RETURN_IF_ERROR(xc_cache_lookup(dir, key, stats, out));
    if (*out) {
      if (strcmp((*out)->target, xc_target_name(target)) == 0) return NULL;
      xc_compiled_module_destroy(*out); /* a key collision across targets: recompile */
      *out = NULL;
    }
  }
  xc_graph_t* g = NULL;
  XC_RETURN_IF_ERROR(load(load_ctx, &g));
  int compiled = 0;
  xc_status_t s = xc_runtime_compile_graph(g, target, &caps, r, &compiled, out);
  if (!s && r->resolved_target && r->resolved_caps && r->resolved_for_arch) (*out)->flags |= XC_CM_ARCH_ONLY;
  xc_graph_destroy(g);
  if (stats) stats->kernels_compiled += compiled;
  if (s) return s;
  if (cached) {
    xc_status_t w = xc_cache_store(dir, key, *out, stats);
    if (w) {
      /* The compile itself succeeded; a read-only cache only costs time. */
      if (r->build.progress) fprintf(r->build.progress, "xcomp: warning: not cached: %s\n", xc_status_message(w));
      xc_status_free(w);
    }
  }
  return NULL;
}
