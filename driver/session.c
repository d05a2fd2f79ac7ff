/* Compile sessions: the target resolved once, traits and tiled limits from
 * its capabilities once, then the pipeline — graph passes, fusion plan,
 * lowering, schedule, emission and target compiles, the vendor-library race
 * — for any number of graphs and model files, through the compile cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_internal.h"
#include "xcomp/frontend.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/tune.h"

void xc_session_options_init(xc_session_options_t* o) {
  memset(o, 0, sizeof *o);
  o->target = "cpu";
  o->opt_level = 2;
  o->use_cache = true;
  xc_cm_build_options_init(&o->build);
}

void xc_driver_tiled_limits(const xc_device_caps_t* caps, bool allow_tf32, xc_tiled_limits_t* l) {
  xc_target_tiled_limits(caps, allow_tf32, l);
}

void xc_driver_target_traits(const char* name, const xc_device_caps_t* caps, xc_target_traits_t* t) {
  xc_target_traits_init(t);
  t->name = name;
  t->preferred_layout = caps->preferred_layout;
  if (caps->local_memory_bytes > 0) t->shared_mem_bytes = caps->local_memory_bytes;
  t->has_tensor_cores = caps->num_mma_shapes > 0;
}

/* The tuning database of a session with a device: the one named, else the
 * default file when it exists; its digest for this target and device. */
static xc_status_t open_tuning(xc_session_t* s) {
  if (s->o.no_tuning_db) return NULL;
  char path[4096];
  if (s->o.tuning_db) snprintf(path, sizeof path, "%s", s->o.tuning_db);
  else XC_RETURN_IF_ERROR(xc_tune_db_default_path(path, sizeof path));
  xc_status_t st = xc_tune_db_open(path, false, &s->tuning);
  if (st && xc_status_code(st) == XC_NOT_FOUND && !s->o.tuning_db) {
    xc_status_free(st); /* no default database yet: nothing tuned */
    return NULL;
  }
  if (st) return xc_status_annotate(st, "the tuning database");
  char device[33];
  xc_tune_device_id(xc_target_name(s->res.target), &s->res.caps, device);
  return xc_tune_db_digest(s->tuning, xc_target_name(s->res.target), device, &s->tuning_digest);
}

static bool no_device(const char* target) { return !target || strcmp(target, "ref") == 0; }

xc_status_t xc_session_create(const xc_session_options_t* o, xc_session_t** out) {
  *out = NULL;
  double t0 = xc_drv_now_ms();
  xc_session_t* s = calloc(1, sizeof *s);
  if (!s) return xc_error_oom();
  if (o) s->o = *o;
  else xc_session_options_init(&s->o);
  s->res.device_index = -1;
  xc_target_traits_init(&s->traits);
  xc_tiled_limits_init_unlimited(&s->limits);
  if (!no_device(s->o.target)) {
    xc_status_t st = xc_target_resolve(s->o.target, &s->res);
    if (st) {
      free(s);
      return st;
    }
    s->has_device = true;
    xc_device_caps_t* c = &s->res.caps;
    if (s->o.max_local_memory_bytes > 0) {
      if (c->local_memory_bytes <= 0 || c->local_memory_bytes > s->o.max_local_memory_bytes)
        c->local_memory_bytes = s->o.max_local_memory_bytes;
      if (c->local_memory_optin_bytes > s->o.max_local_memory_bytes) c->local_memory_optin_bytes = 0;
    }
    if (s->o.max_threads_per_group > 0 && c->max_threads_per_group > s->o.max_threads_per_group)
      c->max_threads_per_group = s->o.max_threads_per_group;
    xc_driver_target_traits(xc_target_name(s->res.target), &s->res.caps, &s->traits);
    xc_driver_tiled_limits(&s->res.caps, s->o.build.compile.allow_tf32, &s->limits);
    st = open_tuning(s);
    if (st) {
      xc_session_destroy(s);
      return st;
    }
  }
  s->session_ms = xc_drv_now_ms() - t0;
  *out = s;
  return NULL;
}

void xc_session_compile_phases(const xc_session_t* s, xc_compile_phases_t* out) {
  out->session_ms = s->session_ms;
  out->load_ms = s->load_ms;
  out->passes_ms = s->passes_ms;
  out->lower_ms = s->lower_ms;
  out->kernels_ms = s->kernels_ms;
  out->vendor_ms = s->vendor_ms;
  out->cache_ms = s->cache_ms;
}

void xc_session_destroy(xc_session_t* s) {
  if (!s) return;
  xc_tune_db_close(s->tuning);
  free(s);
}

xc_target_t* xc_session_target(const xc_session_t* s) { return s->has_device ? s->res.target : NULL; }
const xc_device_caps_t* xc_session_caps(const xc_session_t* s) { return s->has_device ? &s->res.caps : NULL; }
int xc_session_device_index(const xc_session_t* s) { return s->has_device ? s->res.device_index : -1; }
bool xc_session_arch_only(const xc_session_t* s) { return s->has_device && s->res.device_index < 0; }
const xc_tiled_limits_t* xc_session_tiled_limits(const xc_session_t* s) { return s->has_device ? &s->limits : NULL; }
const xc_target_traits_t* xc_session_traits(const xc_session_t* s) { return &s->traits; }
const xc_cache_stats_t* xc_session_cache_stats(const xc_session_t* s) { return &s->stats; }

/* ---- stages ---- */

xc_status_t xc_session_optimize(const xc_session_t* s, xc_graph_t* g) {
  xc_pass_options_t po;
  xc_pass_options_init(&po);
  po.opt_level = s->o.opt_level;
  po.precision = s->o.precision;
  po.disabled = s->o.disabled_passes;
  po.num_disabled = s->o.num_disabled_passes;
  po.print_after = s->o.print_after;
  po.print_after_all = s->o.print_after_all;
  po.timing = s->o.pass_timing;
  po.target = s->traits;
  return xc_passes_run(g, &po);
}

xc_status_t xc_session_plan(const xc_session_t* s, const xc_graph_t* g, xc_fusion_plan_t** out) {
  return xc_fusion_plan_build(g, &s->traits, out);
}

/* Fusion, lowering (or the session's hook; *plan stays NULL then) and the
 * schedule. */
static xc_status_t plan_and_lower(const xc_session_t* s, const xc_graph_t* g, xc_fusion_plan_t** plan,
                                  xc_lowered_module_t** lm) {
  *plan = NULL;
  *lm = NULL;
  const xc_tiled_limits_t* limits = xc_session_tiled_limits(s);
  xc_status_t st;
  if (s->o.lower) {
    st = s->o.lower(s->o.lower_ctx, g, limits, lm);
  } else {
    st = xc_session_plan(s, g, plan);
    xc_lower_options_t lo = {.no_index_checks = s->o.no_index_checks};
    if (!st) st = xc_lower_with(g, *plan, limits, &lo, lm);
  }
  if (!st) st = xc_driver_schedule_kernels(s, *plan, *lm);
  return st;
}

xc_status_t xc_session_lower(const xc_session_t* s, const xc_graph_t* g, xc_lowered_module_t** out) {
  xc_fusion_plan_t* plan = NULL;
  xc_lowered_module_t* lm = NULL;
  xc_status_t st = plan_and_lower(s, g, &plan, &lm);
  xc_fusion_plan_destroy(plan);
  if (st) {
    xc_session_lowered_free(s, lm);
    lm = NULL;
  }
  *out = lm;
  return st;
}

void xc_session_lowered_free(const xc_session_t* s, xc_lowered_module_t* lm) {
  if (!lm) return;
  if (s->o.lower) {
    if (s->o.lower_free) s->o.lower_free(s->o.lower_ctx, lm);
  } else {
    xc_lowered_module_destroy(lm);
  }
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

/* The vendor-library race: GEMM groups measured against their generated
 * kernels on the device; a failed measurement only costs time. The
 * candidates are found before the kernels compile, so that the device
 * (and the vendor library) is made ready meanwhile (race_begin). */
typedef struct race {
  bool* has;
  xc_vendor_gemm_t* cands;
  xc_drv_race_prep_t prep;
} race_t;

static xc_status_t race_begin(xc_session_t* s, const xc_fusion_plan_t* plan, const xc_lowered_module_t* lm,
                              race_t* r) {
  memset(r, 0, sizeof *r);
  if (!plan || s->o.no_vendor_blas || !s->res.caps.has_vendor_blas) return NULL;
  r->has = calloc((size_t)lm->num_kernels + 1, sizeof *r->has);
  r->cands = calloc((size_t)lm->num_kernels + 1, sizeof *r->cands);
  if (!r->has || !r->cands) return xc_error_oom();
  xc_drv_vendor_candidates(plan, lm, false, r->has, r->cands);
  xc_drv_race_prep_begin(&r->prep, s->res.target, &s->res.caps, r->has, r->cands, lm->num_kernels);
  return NULL;
}

/* Runs the race on m (NULL: the compile failed, only the preparation is
 * ended) and frees r. */
static void race_end(xc_session_t* s, race_t* r, xc_compiled_module_t* m) {
  double waited = 0;
  bool prepared = r->prep.started;
  xc_device_t* dev = xc_drv_race_prep_end(&r->prep, &waited);
  if (m && r->has) {
    FILE* progress = s->o.build.progress;
    if (progress && prepared && dev)
      fprintf(progress, "xcomp: vendor race: device ready in %.0f ms, %.0f ms of it after the kernels' compile\n",
              r->prep.ms, waited);
    xc_status_t v = xc_drv_vendor_choose(m, s->res.target, &s->res.caps, r->has, r->cands, dev, progress);
    dev = NULL;
    if (v) {
      if (progress) fprintf(progress, "xcomp: warning: vendor GEMMs not measured: %s\n", xc_status_message(v));
      xc_status_free(v);
    }
  }
  xc_device_close(dev);
  free(r->has);
  free(r->cands);
}

double xc_drv_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

xc_status_t xc_session_compile_graph(xc_session_t* s, xc_graph_t* g, xc_compiled_module_t** out) {
  *out = NULL;
  if (!s->has_device)
    return xc_error(XC_INVALID_ARGUMENT, "target ref is the reference interpreter: there is nothing to compile for it");
  double t0 = xc_drv_now_ms();
  XC_RETURN_IF_ERROR(xc_session_optimize(s, g));
  XC_RETURN_IF_ERROR(check_static_symbols(g));
  double t1 = xc_drv_now_ms();
  s->passes_ms += t1 - t0;
  xc_fusion_plan_t* plan = NULL;
  xc_lowered_module_t* lm = NULL;
  xc_status_t st = plan_and_lower(s, g, &plan, &lm);
  double t2 = xc_drv_now_ms();
  s->lower_ms += t2 - t1;
  race_t race;
  memset(&race, 0, sizeof race);
  if (!st) st = race_begin(s, plan, lm, &race);
  if (!st) st = xc_compiled_module_build(lm, s->res.target, &s->res.caps, &s->o.build, &s->stats.kernels_compiled, out);
  double t3 = xc_drv_now_ms();
  s->kernels_ms += t3 - t2;
  race_end(s, &race, st ? NULL : *out);
  s->vendor_ms += xc_drv_now_ms() - t3;
  if (!st && xc_session_arch_only(s)) (*out)->flags |= XC_CM_ARCH_ONLY;
  if (st && *out) {
    xc_compiled_module_destroy(*out);
    *out = NULL;
  }
  xc_session_lowered_free(s, lm);
  xc_fusion_plan_destroy(plan);
  return st;
}

xc_status_t xc_session_compile_bytes(xc_session_t* s, const void* bytes, size_t size, xc_model_loader_fn load,
                                     void* load_ctx, xc_compiled_module_t** out) {
  *out = NULL;
  if (!s->has_device)
    return xc_error(XC_INVALID_ARGUMENT, "target ref is the reference interpreter: there is nothing to compile for it");
  const char* target_name = xc_target_name(s->res.target);
  char dir[4096] = "";
  xc_hash128_t key = {0, 0};
  bool cached = s->o.use_cache;
  if (cached) {
    if (s->o.cache_dir) snprintf(dir, sizeof dir, "%s", s->o.cache_dir);
    else XC_RETURN_IF_ERROR(xc_cache_dir(dir, sizeof dir));
    key = xc_compile_cache_key(bytes, size, target_name, &s->res.caps, xc_session_arch_only(s), &s->o);
    if (s->tuning_digest.lo || s->tuning_digest.hi) {
      /* what the tuning database supplies changes the kernels */
      xc_hash128_t parts[2] = {key, s->tuning_digest};
      key = xc_hash128(parts, sizeof parts);
    }
    XC_RETURN_IF_ERROR(xc_cache_lookup(dir, key, &s->stats, out));
    if (*out) {
      (*out)->has_cache_key = false; /* the key binds the file in the cache, not the module */
      if (strcmp((*out)->target, target_name) == 0) return NULL;
      xc_compiled_module_destroy(*out); /* a key collision across targets: recompile */
      *out = NULL;
    }
  }
  xc_graph_t* g = NULL;
  double t0 = xc_drv_now_ms();
  double before[5] = {s->passes_ms, s->lower_ms, s->kernels_ms, s->vendor_ms, s->cache_ms};
  XC_RETURN_IF_ERROR(load(load_ctx, &g));
  double load_ms = xc_drv_now_ms() - t0;
  s->load_ms += load_ms;
  xc_status_t st = xc_graph_set_input_shapes(g, s->o.input_shapes);
  if (!st && s->o.dynamic && *s->o.dynamic) st = xc_drv_compile_buckets(s, load, load_ctx, g, out);
  else if (!st) st = xc_session_compile_graph(s, g, out);
  xc_graph_destroy(g);
  if (st) return st;
  if (cached) {
    double c0 = xc_drv_now_ms();
    xc_status_t w = xc_cache_store(dir, key, *out, &s->stats);
    s->cache_ms += xc_drv_now_ms() - c0;
    if (w) {
      /* The compile itself succeeded; a read-only cache only costs time. */
      if (s->o.build.progress)
        fprintf(s->o.build.progress, "xcomp: warning: not cached: %s\n", xc_status_message(w));
      xc_status_free(w);
    }
  }
  if (s->o.build.progress)
    fprintf(s->o.build.progress,
            "xcomp: compiled in %.2f s: load %.2f s, passes %.2f s, lowering %.2f s, kernels %.2f s, "
            "vendor race %.2f s, cache store %.2f s\n",
            (xc_drv_now_ms() - t0) / 1e3, load_ms / 1e3, (s->passes_ms - before[0]) / 1e3,
            (s->lower_ms - before[1]) / 1e3, (s->kernels_ms - before[2]) / 1e3, (s->vendor_ms - before[3]) / 1e3,
            (s->cache_ms - before[4]) / 1e3);
  return NULL;
}

static xc_status_t load_model_file(void* ctx, xc_graph_t** out) {
  xc_status_t s = xc_load_model((const char*)ctx, out);
  if (!s) s = xc_graph_infer(*out);
  if (s) {
    xc_graph_destroy(*out);
    *out = NULL;
  }
  return s;
}

xc_status_t xc_session_compile_model_file(xc_session_t* s, const char* path, xc_compiled_module_t** out) {
  *out = NULL;
  /* The model's bytes are only the cache key's: without the cache they are
   * not read here (the loader maps the file itself); with it, mapped rather
   * than copied (a 500 MB model: a read costs ~0.3 s of page faults and
   * copying). */
  if (!s->o.use_cache) return xc_session_compile_bytes(s, NULL, 0, load_model_file, (void*)path, out);
  void* map = NULL;
  size_t size = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    size = (size_t)st.st_size;
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) map = NULL;
  }
  if (fd >= 0) close(fd);
  if (map) {
    xc_status_t r = xc_session_compile_bytes(s, map, size, load_model_file, (void*)path, out);
    munmap(map, size);
    return r;
  }
  uint8_t* bytes = NULL;
  XC_RETURN_IF_ERROR(xc_read_file_bytes(path, &bytes, &size));
  xc_status_t r = xc_session_compile_bytes(s, bytes, size, load_model_file, (void*)path, out);
  free(bytes);
  return r;
}
