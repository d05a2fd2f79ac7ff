/* Building a compiled module from a lowered one: the plan's values, steps
 * and knob values, and every kernel emitted and compiled by the target
 * (runtime/module.c links the result; module_format.c writes it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_internal.h"
#include "xcomp/lower.h"

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

/* A kernel between emission and compilation. */
typedef struct pending_kernel {
  xc_kernel_source_t src;
  xc_compile_options_t co;
  char dump_path[4096];
  xc_status_t status;
  char* key;   /* the source with its entry name replaced: equal keys, equal code */
  int dup_of;  /* an earlier kernel with the same key (compiled once, shared), else -1 */
  double compile_ms; /* wall time of its target compile */
  size_t length;     /* of its source: what its compile time is estimated by */
} pending_kernel_t;

/* What decides a kernel's code, as text: src's language and text with the
 * comments left out (they name the kernel and its graph nodes), its entry
 * name written ENTRY_MARK wherever it occurs inside an identifier (the entry
 * itself and the symbols named after it: cpu's xk_NAME_runtime_threads,
 * cuda's xc_dsm_bytes_xk_NAME) and its parameters (the emitter's "p_" names,
 * from graph values; the code reaches buffers by position) numbered by first
 * use. Kernels with equal keys compile to the same code up to those names,
 * and a kernel sharing another's code takes its entry name too, so every
 * symbol the runtime looks up by entry name is in the shared binary. */
#define ENTRY_MARK '\x01' /* a byte no emitted source contains, unlike '@' (PTX predicates) */
/* The first occurrence of needle (nlen > 0 bytes) in s[0, n), else NULL. */
static const char* find_in(const char* s, size_t n, const char* needle, size_t nlen) {
  for (size_t i = 0; i + nlen <= n; i++)
    if (memcmp(s + i, needle, nlen) == 0) return s + i;
  return NULL;
}

static char* code_key(const xc_kernel_source_t* src) {
  const char* t = src->text ? src->text : "";
  const char* lang = src->language ? src->language : "";
  size_t n = strlen(t), cap = 2 * n + strlen(lang) + 16; /* "p_x" -> "p#123" grows */
  char* out = malloc(cap);
  if (!out) return NULL;
  size_t k = (size_t)snprintf(out, cap, "%s\n", lang);
  enum { MAX_PARAMS = 256 };
  const char* names[MAX_PARAMS];
  size_t lens[MAX_PARAMS];
  int num = 0;
  for (size_t i = 0; i < n;) {
    if (t[i] == '/' && t[i + 1] == '*') {
      const char* close = strstr(t + i + 2, "*/");
      i = close ? (size_t)(close - t) + 2 : n;
    } else if (t[i] == '/' && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') i++;
    } else if (t[i] == '_' || (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z')) {
      size_t j = i;
      while (j < n && (t[j] == '_' || (t[j] >= 'a' && t[j] <= 'z') || (t[j] >= 'A' && t[j] <= 'Z') ||
                       (t[j] >= '0' && t[j] <= '9')))
        j++;
      size_t len = j - i;
      int id = -1;
      size_t elen = strlen(src->entry);
      const char* at = elen && len >= elen ? find_in(t + i, len, src->entry, elen) : NULL;
      if (at) {
        /* the entry, or a symbol named after it: each occurrence marked */
        for (size_t q = i; q < j;) {
          if (at && t + q == at) {
            out[k++] = ENTRY_MARK;
            q += elen;
            at = q < j ? find_in(t + q, j - q, src->entry, elen) : NULL;
          } else {
            out[k++] = t[q++];
          }
        }
      } else if (len > 2 && t[i] == 'p' && t[i + 1] == '_') {
        for (int q = 0; q < num && id < 0; q++)
          if (lens[q] == len && strncmp(names[q], t + i, len) == 0) id = q;
        if (id < 0 && num < MAX_PARAMS) {
          names[num] = t + i;
          lens[num] = len;
          id = num++;
        }
        if (id >= 0) {
          k += (size_t)snprintf(out + k, cap - k, "p#%d", id);
        } else {
          memcpy(out + k, t + i, len);
          k += len;
        }
      } else {
        memcpy(out + k, t + i, len);
        k += len;
      }
      i = j;
    } else {
      out[k++] = t[i++];
    }
  }
  out[k] = 0;
  return out;
}

/* Emits kernel `index` (sequential: emitters and the module's arena are
 * not shared between threads). */
static xc_status_t emit_kernel(const xc_lowered_kernel_t* lk, int index, xc_target_t* target,
                               const xc_device_caps_t* caps, const xc_cm_build_options_t* o, xc_compiled_module_t* m,
                               pending_kernel_t* p) {
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
  xc_status_t s;
  if (o->emit) {
    s = o->emit(o->emit_ctx, tk, lk->knobs, &p->src);
  } else {
    char why[512] = "";
    if (!xc_target_supports(target, caps, tk, why, sizeof why))
      return xc_error(XC_UNSUPPORTED, "target %s declines kernel '%s': %s", xc_target_name(target), k->name, why);
    s = xc_target_emit(target, caps, tk, knobs, nk, &p->src);
  }
  if (s) return xc_status_annotate(s, "kernel '%s' (graph nodes: %s)", k->name, tk->origin ? tk->origin : "?");
  if (o->dump_dir) {
    s = dump_text(o->dump_dir, k->name, source_extension(p->src.language), p->src.text);
    if (!s) s = dump_text(o->dump_dir, k->name, "tiled", k->tiled_text);
    if (s) return s;
  }
  p->co = o->compile;
  if (o->dump_dir) {
    snprintf(p->dump_path, sizeof p->dump_path, "%s/%s", o->dump_dir, k->name);
    p->co.dump_path = p->dump_path;
  }
  return NULL;
}

/* Compiling every emitted kernel: by worker threads (one per core, at most
 * the kernels; $XCOMP_JOBS sets the count) for the targets whose compilers
 * take concurrent compiles once the first has loaded them — cuda and
 * rocm_nv (NVRTC), cpu (a C compiler process each), opencl (clBuildProgram
 * is thread-safe) — and one kernel at a time for the others: rocm (Debian's
 * hiprtc/comgr crashes under concurrent compiles) and plugins (nothing says
 * theirs may be called from threads). */
typedef struct compile_pool {
  pthread_mutex_t lock;
  int next, count, started;
  const int* order; /* the kernels to compile (the first of each key) */
  pending_kernel_t* pending;
  xc_compiled_module_t* m;
  xc_target_t* target;
  const xc_device_caps_t* caps;
  const xc_cm_build_options_t* o;
} compile_pool_t;

static void compile_one(compile_pool_t* pool, int nth_kernel) {
  int i = pool->order[nth_kernel];
  pending_kernel_t* p = &pool->pending[i];
  xc_cm_kernel_t* k = &pool->m->kernels[i];
  if (pool->o->progress) {
    pthread_mutex_lock(&pool->lock);
    int nth = ++pool->started;
    fprintf(pool->o->progress, "xcomp: compiling kernel %d/%d %s (%s)\n", nth, pool->count, k->name,
            xc_target_name(pool->target));
    pthread_mutex_unlock(&pool->lock);
  }
  double t0 = xc_drv_now_ms();
  p->status = xc_target_compile(pool->target, pool->caps, &p->src, &p->co, &k->blob);
  p->compile_ms = xc_drv_now_ms() - t0;
  if (p->status) {
    pthread_mutex_lock(&pool->lock);
    pool->next = pool->count; /* a failed compile fails the module: start no more */
    pthread_mutex_unlock(&pool->lock);
  }
}

static void* compile_worker(void* arg) {
  compile_pool_t* pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    int i = pool->next < pool->count ? pool->next++ : -1;
    pthread_mutex_unlock(&pool->lock);
    if (i < 0) return NULL;
    compile_one(pool, i);
  }
}

static int compile_jobs(xc_target_t* target, int kernels) {
  static const char* const concurrent[] = {"cuda", "rocm_nv", "cpu", "opencl"};
  bool ok = false;
  for (size_t i = 0; i < sizeof concurrent / sizeof *concurrent; i++)
    ok = ok || strcmp(xc_target_name(target), concurrent[i]) == 0;
  if (!ok || strcmp(xc_target_origin(target), "built-in") != 0) return 1;
  const char* env = getenv("XCOMP_JOBS");
  long jobs = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > 64) jobs = 64;
  return jobs < kernels ? (int)jobs : kernels;
}

/* The order the kernels compile in. The first compiles alone (it loads the
 * compiler), so it is the cheapest; the others start longest first, so that
 * the longest compile does not start last on a free thread while the others
 * wait for it (with fewer threads than kernels, a long compile started last
 * adds its whole time to the phase). A compile's time is estimated by its
 * source's length: GPT-2 124M's GEMMs, the longest sources, take 1.1-2.4 s
 * of NVRTC each, its LayerNorms 0.1 s (RESULTS.md section 24). Equal lengths
 * keep the kernels' order. */
static void order_compiles(pending_kernel_t* pending, int* order, int n) {
  for (int i = 0; i < n; i++) {
    pending_kernel_t* p = &pending[order[i]];
    p->length = p->src.text ? strlen(p->src.text) : 0;
  }
  if (n < 2) return;
  int cheapest = 0;
  for (int i = 1; i < n; i++)
    if (pending[order[i]].length < pending[order[cheapest]].length) cheapest = i;
  int first = order[cheapest];
  memmove(order + 1, order, sizeof *order * (size_t)cheapest);
  order[0] = first;
  /* insertion sort of the rest, longest first, stable */
  for (int i = 2; i < n; i++) {
    int k = order[i];
    size_t len = pending[k].length;
    int j = i;
    while (j > 1 && pending[order[j - 1]].length < len) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = k;
  }
}

/* Returns the number of threads that compiled. */
static int compile_all(compile_pool_t* pool) {
  int jobs = compile_jobs(pool->target, pool->count);
  if (pool->count == 0) return 0;
  /* The first alone: it loads the target's compiler (lazily, not guarded
   * for threads). */
  pool->next = 1;
  compile_one(pool, 0);
  if (pool->pending[pool->order[0]].status) return 1;
  pthread_t threads[64];
  int started = 0;
  for (int t = 1; t < jobs && pool->next < pool->count; t++)
    if (pthread_create(&threads[started], NULL, compile_worker, pool) == 0) started++;
  compile_worker(pool); /* this thread works too */
  for (int t = 0; t < started; t++) pthread_join(threads[t], NULL);
  return started + 1;
}

/* The graph section and its weights (xc_cm_graph_to_text), made on a thread
 * of its own while the kernels compile: it needs nothing of theirs. */
typedef struct graph_job {
  const xc_graph_t* g;
  xc_compiled_module_t* m;
  xc_status_t status;
  double ms;
} graph_job_t;

static void* graph_to_text_worker(void* arg) {
  graph_job_t* job = arg;
  double t0 = xc_drv_now_ms();
  job->status = xc_cm_graph_to_text(job->g, &job->m->graph_text, &job->m->graph_text_size, &job->m->weights,
                                    &job->m->weights_size);
  job->ms = xc_drv_now_ms() - t0;
  return NULL;
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
  /* the run's index-error record (xcomp/tiled.h), one value shared by every
   * kernel that checks indices (a slot each); it is no graph value */
  xc_dim_t index_error_dims[1] = {xc_dim_const((int64_t)XC_INDEX_ERROR_WORDS * lowered->num_index_error_slots)};
  xc_value_t index_error;
  memset(&index_error, 0, sizeof index_error);
  index_error.id = -1;
  index_error.name = "xcomp.index_error";
  index_error.dtype = XC_I64;
  index_error.rank = 1;
  index_error.dims = index_error_dims;
  for (int i = 0; vt.by_id && i < g->num_values; i++) vt.by_id[i] = -1;
  xc_status_t s = NULL;
  m->inputs = xc_arena_alloc(m->arena, sizeof(int) * (size_t)(g->num_inputs + 1));
  m->outputs = xc_arena_alloc(m->arena, sizeof(int) * (size_t)(g->num_outputs + 1));
  m->kernels = calloc((size_t)lowered->num_kernels + 1, sizeof *m->kernels);
  m->steps = xc_arena_alloc(m->arena, sizeof *m->steps * (size_t)(lowered->num_steps + 1));
  if (!m->inputs || !m->outputs || !m->kernels || !m->steps) s = xc_error_oom();
  if (!s && o->dump_dir) s = xc_make_dirs(o->dump_dir);
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
      if (lk->num_index_checks && p == lk->index_error_param) {
        s = value_index(&vt, &index_error, &cs->params[p].value);
        if (!s) m->values[cs->params[p].value].flags |= XC_CM_VALUE_INDEX_ERROR;
        if (!s && lowered->num_index_error_slots < 1)
          s = xc_error(XC_INTERNAL, "kernel '%s' checks indices but the module has no index-error slots",
                       lk->kernel->name);
        if (!s && p < lk->kernel->num_params) cs->params[p].role = (int)lk->kernel->params[p]->type.role;
      } else if (lk->param_values[p]) {
        s = value_index(&vt, lk->param_values[p], &cs->params[p].value);
        if (!s && p < lk->kernel->num_params) cs->params[p].role = (int)lk->kernel->params[p]->type.role;
      } else {
        cs->params[p].value = -1;
        if (!copy_dim(m->arena, lk->param_dims[p], &cs->params[p].dim)) s = xc_error_oom();
      }
    }
  }
  int nk = lowered->num_kernels;
  pending_kernel_t* pending = s ? NULL : calloc((size_t)nk + 1, sizeof *pending);
  int* order = s ? NULL : calloc((size_t)nk + 1, sizeof *order);
  if (!s && (!pending || !order)) s = xc_error_oom();
  for (int i = 0; !s && i < nk; i++) s = emit_kernel(&lowered->kernels[i], i, target, caps, o, m, &pending[i]);
  /* Kernels whose code differs only in its name (the same layer repeated)
   * compile once and share the result (not with --dump-kernels: every
   * kernel's compiler output is written then). */
  int unique = 0;
  for (int i = 0; !s && i < nk; i++) {
    pending[i].dup_of = -1;
    if (!(pending[i].key = code_key(&pending[i].src))) s = xc_error_oom();
    for (int j = 0; !s && !o->dump_dir && j < i && pending[i].dup_of < 0; j++)
      if (pending[j].dup_of < 0 && strcmp(pending[j].key, pending[i].key) == 0) pending[i].dup_of = j;
    if (!s && pending[i].dup_of < 0) order[unique++] = i;
  }
  if (!s) order_compiles(pending, order, unique);
  graph_job_t graph_job = {g, m, NULL, 0};
  pthread_t graph_thread;
  bool graph_started = !s && pthread_create(&graph_thread, NULL, graph_to_text_worker, &graph_job) == 0;
  if (!s) {
    compile_pool_t pool = {.next = 0, .count = unique, .order = order, .pending = pending, .m = m,
                           .target = target, .caps = caps, .o = o};
    pthread_mutex_init(&pool.lock, NULL);
    double t0 = xc_drv_now_ms();
    int threads = compile_all(&pool);
    double wall = xc_drv_now_ms() - t0;
    pthread_mutex_destroy(&pool.lock);
    if (kernels_compiled) *kernels_compiled += unique;
    if (o->progress && unique < nk)
      fprintf(o->progress, "xcomp: %d of %d kernels share the code of an earlier one (compiled once)\n",
              nk - unique, nk);
    if (o->progress && unique > 0) {
      int longest = order[0];
      for (int i = 1; i < unique; i++)
        if (pending[order[i]].compile_ms > pending[longest].compile_ms) longest = order[i];
      fprintf(o->progress, "xcomp: %d kernels compiled in %.2f s on %d thread%s (longest: %s, %.2f s)\n", unique,
              wall / 1e3, threads, threads == 1 ? "" : "s", m->kernels[longest].name, pending[longest].compile_ms / 1e3);
    }
  }
  if (graph_started) {
    pthread_join(graph_thread, NULL);
    if (!s) s = graph_job.status;
    else xc_status_free(graph_job.status);
  } else if (!s) {
    graph_to_text_worker(&graph_job); /* no thread: here, after the kernels */
    s = graph_job.status;
  }
  /* The shared ones take a copy of the first's blob and its entry name. */
  for (int i = 0; !s && i < nk; i++) {
    int j = pending[i].dup_of;
    if (j < 0) continue;
    pending[i].status = pending[j].status ? xc_error(xc_status_code(pending[j].status), "%s",
                                                     xc_status_message(pending[j].status))
                                          : NULL;
    if (pending[i].status) continue;
    xc_blob_t* from = &m->kernels[j].blob;
    xc_blob_t* to = &m->kernels[i].blob;
    memcpy(to->format, from->format, sizeof to->format);
    to->size = from->size;
    to->bytes = malloc(from->size ? from->size : 1);
    to->options = from->options ? strdup(from->options) : NULL;
    if (!to->bytes || (from->options && !to->options)) {
      s = xc_error_oom();
      break;
    }
    if (from->size) memcpy(to->bytes, from->bytes, from->size);
    /* j < i (dup_of names an earlier kernel); memcpy, since GCC 12's
     * -Wrestrict cannot tell that pending[i] and pending[j] differ */
    memcpy(pending[i].src.entry, pending[j].src.entry, sizeof pending[i].src.entry);
  }
  for (int i = 0; pending && i < nk; i++) {
    xc_cm_kernel_t* k = &m->kernels[i];
    const xc_tiled_kernel_t* tk = lowered->kernels[i].kernel;
    xc_status_t ks = pending[i].status;
    pending[i].status = NULL;
    if (!s && ks) s = xc_status_annotate(ks, "kernel '%s' (graph nodes: %s)", k->name, tk->origin ? tk->origin : "?");
    else xc_status_free(ks);
    if (!s && pending[i].src.text) {
      snprintf(k->entry, sizeof k->entry, "%s", pending[i].src.entry);
      if (!k->entry[0]) s = xc_error(XC_INTERNAL, "kernel '%s': the emitter named no entry point", k->name);
      if (!s) s = xc_tiled_parse(k->tiled_text, strlen(k->tiled_text), k->name, &k->tiled);
    }
    xc_kernel_source_release(&pending[i].src);
    free(pending[i].key);
  }
  free(pending);
  free(order);
  free(vt.graph_values);
  free(vt.by_id);
  double link0 = xc_drv_now_ms();
  if (!s) s = xc_cm_link(m, "compiled module");
  if (!s && o->progress)
    fprintf(o->progress, "xcomp: module: graph and %.1f MB of weights %.2f s (%s), link %.2f s\n",
            (double)m->weights_size / 1e6, graph_job.ms / 1e3,
            graph_started ? "beside the compiles" : "after the compiles", (xc_drv_now_ms() - link0) / 1e3);
  if (s) {
    xc_compiled_module_destroy(m);
    return s;
  }
  *out = m;
  return NULL;
}

