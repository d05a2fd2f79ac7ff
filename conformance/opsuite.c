/* The op-level suite's driver: enumerates generators (the specific ones and
 * a generic unary / binary one for every other registry op the generic
 * shapes fit), lists the cases the options select, and runs each: the
 * target's result against the reference interpreter's at the tolerance of
 * the output dtype, with poisoned and guarded buffers on compiled targets. */
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opsuite_internal.h"
#include "xcomp/driver.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/lower.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"

void xc_opsuite_options_init(xc_opsuite_options_t* o) {
  memset(o, 0, sizeof *o);
  o->target = "ref";
  o->seed = 1;
  o->cases_per_op = 3;
  o->dtypes = XC_DT(XC_F32);
  o->timeout_s = 60;
  o->jobs = 1;
}

static const xc_dtype_t default_dtypes[] = {XC_F32, XC_F16, XC_BF16, XC_I32, XC_I64, XC_I8, XC_U8, XC_BOOL};

xc_status_t xc_opsuite_parse_dtypes(const char* list, uint32_t* out) {
  *out = 0;
  const char* p = list;
  while (p && *p) {
    size_t n = strcspn(p, ",");
    char word[32];
    if (n == 0 || n >= sizeof word) return xc_error(XC_INVALID_ARGUMENT, "--dtypes: bad list '%s'", list);
    memcpy(word, p, n);
    word[n] = '\0';
    xc_dtype_t t;
    if (!strcmp(word, "all")) {
      *out |= XC_DT_ALL;
    } else if (!strcmp(word, "default")) {
      for (size_t i = 0; i < sizeof default_dtypes / sizeof default_dtypes[0]; i++) *out |= XC_DT(default_dtypes[i]);
    } else if (xc_dtype_from_name(word, &t)) {
      *out |= XC_DT(t);
    } else {
      return xc_error(XC_INVALID_ARGUMENT, "--dtypes: unknown dtype '%s' (f32, f16, bf16, f64, i8..i64, u8..u64, bool, all, default)",
                      word);
    }
    p += n;
    if (*p == ',') p++;
  }
  if (!*out) return xc_error(XC_INVALID_ARGUMENT, "--dtypes: empty list");
  return NULL;
}

/* ---- generators -------------------------------------------------------------- */

typedef struct {
  os_gen_t gen;
  const char* domain;
  uint32_t dtypes; /* allowed main-input dtypes */
  bool same_shape; /* generic binary op without broadcasting */
} gen_entry_t;

typedef struct {
  gen_entry_t* v;
  int n;
} gen_list_t;

static bool has_required_attr(const xc_op_def_t* d) {
  for (const xc_attr_def_t* a = d->attrs; a && a->name; a++)
    if (a->required) return true;
  return false;
}

/* Registry ops the generic generators must not take: their input is a
 * shape or they need inputs the generic shapes cannot give. */
static const char* const no_generic[] = {"ConstantOfShape", "Range", "EyeLike", NULL};

/* True when a specific generator is labelled op (with in_chain: or a fused
 * chain's label has op as one of its '+'-separated parts). */
static bool named(const char* op, bool in_chain) {
  size_t n = strlen(op);
  for (const os_gen_t* g = os_generators; g->label; g++) {
    if (!strcmp(g->label, op)) return true;
    for (const char* p = g->label; in_chain && p;) {
      const char* e = strchr(p, '+');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      if (len == n && !strncmp(p, op, n)) return true;
      p = e ? e + 1 : NULL;
    }
  }
  return false;
}

static int entry_cmp(const void* a, const void* b) {
  return strcmp(((const gen_entry_t*)a)->gen.label, ((const gen_entry_t*)b)->gen.label);
}

static uint64_t fnv(const char* s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
  return h;
}

static uint64_t case_seed(uint64_t seed, const char* label, xc_dtype_t dt, int k) {
  uint64_t h = fnv(label, 0xCBF29CE484222325ull ^ (seed * 0x9E3779B97F4A7C15ull));
  h ^= (uint64_t)dt * 0xD6E8FEB86659FD93ull;
  h ^= (uint64_t)(k + 1) * 0xA0761D6478BD642Full;
  return h;
}

/* Builds case (entry, dt, k); *b holds the graph and inputs on success. */
static xc_status_t build_case(const xc_opsuite_options_t* o, const gen_entry_t* e, xc_dtype_t dt, int k, gb_t* b) {
  XC_RETURN_IF_ERROR(gb_begin(b, case_seed(o->seed, e->gen.label, dt, k), dt, e->gen.label));
  b->domain = e->domain;
  b->same_shape = e->same_shape;
  b->dtypes = o->dtypes;
  e->gen.fn(b, k);
  b->name[b->len] = '\0';
  xc_status_t s = gb_finish(b);
  if (s) s = xc_status_annotate(s, "generating %s", b->name[0] ? b->name : e->gen.label);
  return s;
}

static char* xstrdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void append(char** list, const char* word) {
  size_t a = *list ? strlen(*list) : 0, n = strlen(word);
  char* p = realloc(*list, a + n + 3);
  if (!p) return;
  if (a) {
    memcpy(p + a, ", ", 2);
    a += 2;
  }
  memcpy(p + a, word, n + 1);
  *list = p;
}

/* Specific generators, then the generic ones for every registry op the
 * generic shapes fit (probed by building one case). */
static xc_status_t make_generators(const xc_opsuite_options_t* o, gen_list_t* out, char** uncovered) {
  int total = 0;
  for (const os_gen_t* g = os_generators; g->label; g++) total++;
  total += xc_op_count();
  out->v = calloc((size_t)total + 1, sizeof *out->v);
  out->n = 0;
  if (!out->v) return xc_error_oom();
  for (const os_gen_t* g = os_generators; g->label; g++) {
    const xc_op_def_t* d = g->op ? xc_op_lookup("", g->op) : NULL;
    if (g->op && !d) continue; /* not in this registry */
    uint32_t m = d ? d->dtypes : g->dtypes;
    if (d && g->dtypes) m &= g->dtypes;
    gen_entry_t* e = &out->v[out->n++];
    e->gen = *g;
    e->domain = "";
    e->dtypes = m;
  }
  for (int i = 0; i < xc_op_count(); i++) {
    const xc_op_def_t* d = xc_op_at(i);
    if (named(d->name, false)) continue;
    bool excluded = false;
    for (const char* const* p = no_generic; *p; p++) excluded |= !strcmp(*p, d->name);
    bool unary = d->min_inputs <= 1 && (d->max_inputs < 0 || d->max_inputs >= 1);
    bool binary = d->min_inputs == 2 && (d->max_inputs < 0 || d->max_inputs >= 2);
    gen_entry_t e;
    memset(&e, 0, sizeof e);
    e.gen.label = d->name;
    e.gen.op = d->name;
    e.gen.fn = unary ? os_gen_unary : os_gen_binary;
    e.domain = d->domain ? d->domain : "";
    e.dtypes = d->dtypes;
    bool ok = !excluded && (unary || binary) && !has_required_attr(d) && d->min_outputs <= 1 && d->dtypes;
    if (ok) {
      /* Probe: one case of the op's first dtype must build and infer. */
      xc_dtype_t dt = (d->dtypes & XC_DT(XC_F32)) ? XC_F32 : XC_DTYPE_UNDEFINED;
      for (int t = 1; dt == XC_DTYPE_UNDEFINED && t < XC_DTYPE_COUNT; t++)
        if (d->dtypes & XC_DT(t)) dt = (xc_dtype_t)t;
      /* Probed with a fixed seed, so that what is covered does not depend
       * on --seed: eight unary cases (ranks 1 to 4) must all build; a binary
       * op must build its same-shape cases (k = 0, 5) and is used without
       * broadcasting when a broadcast case (k = 1..4) does not build. */
      xc_opsuite_options_t po = *o;
      po.seed = 0x5EEDull;
      for (int k = 0; ok && k < 8; k++) {
        if (binary && k % 5 != 0) continue;
        gb_t b;
        xc_status_t s = build_case(&po, &e, dt, k, &b);
        ok = s == NULL;
        xc_status_free(s);
        gb_free(&b);
      }
      for (int k = 1; ok && binary && k < 5 && !e.same_shape; k++) {
        gb_t b;
        xc_status_t s = build_case(&po, &e, dt, k, &b);
        e.same_shape = s != NULL;
        xc_status_free(s);
        gb_free(&b);
      }
    }
    if (ok)
      out->v[out->n++] = e;
    else if (uncovered && !named(d->name, true))
      append(uncovered, d->name);
  }
  qsort(out->v, (size_t)out->n, sizeof *out->v, entry_cmp);
  return NULL;
}

/* ---- the case list ------------------------------------------------------------ */

typedef struct {
  int gen;
  xc_dtype_t dt;
  int k;
} spec_t;

typedef struct {
  const xc_opsuite_options_t* o;
  gen_list_t gens;
  spec_t* specs;
} suite_t;

static xc_status_t list_cases(const xc_opsuite_options_t* o, suite_t* su, xc_conform_report_t* out,
                              char** uncovered) {
  memset(out, 0, sizeof *out);
  if (uncovered) *uncovered = NULL;
  regex_t re;
  bool have_re = false;
  if (o->filter) {
    int rc = regcomp(&re, o->filter, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &re, msg, sizeof msg);
      return xc_error(XC_INVALID_ARGUMENT, "--filter '%s': %s", o->filter, msg);
    }
    have_re = true;
  }
  su->o = o;
  xc_status_t s = make_generators(o, &su->gens, uncovered);
  int cap = 0;
  int per = o->cases_per_op > 0 ? o->cases_per_op : 1;
  uint32_t want = o->dtypes ? o->dtypes : XC_DT(XC_F32);
  for (int gi = 0; !s && gi < su->gens.n; gi++) {
    const gen_entry_t* e = &su->gens.v[gi];
    for (int t = 1; !s && t < XC_DTYPE_COUNT; t++) {
      if (!(e->dtypes & want & XC_DT(t))) continue;
      for (int k = 0; !s && k < per; k++) {
        gb_t b;
        xc_status_t bs = build_case(o, e, (xc_dtype_t)t, k, &b);
        char name[600];
        if (bs) /* a generator bug: listed, and reported as a failure */
          snprintf(name, sizeof name, "%s.%s.#%d", e->gen.label, xc_dtype_name((xc_dtype_t)t), k);
        else
          snprintf(name, sizeof name, "%s", b.name);
        xc_status_free(bs);
        gb_free(&b);
        if (have_re && regexec(&re, name, 0, NULL, 0) != 0) continue;
        if (out->num_cases == cap) {
          cap = cap ? 2 * cap : 256;
          xc_conform_case_t* nc = realloc(out->cases, sizeof *nc * (size_t)cap);
          spec_t* ns = realloc(su->specs, sizeof *ns * (size_t)cap);
          if (nc) out->cases = nc;
          if (ns) su->specs = ns;
          if (!nc || !ns) {
            s = xc_error_oom();
            break;
          }
        }
        xc_conform_case_t* c = &out->cases[out->num_cases];
        memset(c, 0, sizeof *c);
        c->name = xstrdup(name);
        c->op = xstrdup(e->gen.label);
        c->dtype = (xc_dtype_t)t;
        su->specs[out->num_cases].gen = gi;
        su->specs[out->num_cases].dt = (xc_dtype_t)t;
        su->specs[out->num_cases].k = k;
        out->num_cases++;
      }
    }
  }
  if (have_re) regfree(&re);
  return s;
}

static void suite_free(suite_t* su) {
  free(su->gens.v);
  free(su->specs);
  memset(su, 0, sizeof *su);
}

/* ---- running one case ----------------------------------------------------------- */

static char* dup_printf(const char* fmt, ...) XC_PRINTF(1, 2);
static char* dup_printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char* s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  for (char* p = s; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  return s;
}

/* The tiled pseudo-target: a session without a device (reference traits,
 * unlimited tiled limits) optimizes, plans and lowers; the tiled-IR
 * interpreter runs the result. */
static xc_status_t run_tiled(xc_graph_t* g, int ni, xc_tensor_t** ins, xc_tensor_t** got) {
  xc_session_options_t so;
  xc_session_options_init(&so);
  so.target = "ref";
  xc_session_t* session = NULL;
  xc_lowered_module_t* m = NULL;
  xc_status_t s = xc_session_create(&so, &session);
  if (!s) s = xc_session_optimize(session, g);
  if (!s) s = xc_session_lower(session, g, &m);
  if (!s) s = xc_lowered_run_interp(m, ni, (const xc_tensor_t* const*)ins, got);
  if (session) xc_session_lowered_free(session, m);
  xc_session_destroy(session);
  return s;
}

/* A session for o->target with the suite's lowering hook, no cache. */
static xc_status_t open_session(const xc_opsuite_options_t* o, xc_session_t** out) {
  xc_session_options_t so;
  xc_session_options_init(&so);
  so.target = o->target;
  so.use_cache = false;
  so.lower = o->lower;
  so.lower_free = o->lower_free;
  so.lower_ctx = o->lower_ctx;
  return xc_session_create(&so, out);
}

/* The dtypes the device lacks make a case unsupported. */
static xc_status_t check_dtypes(const xc_device_caps_t* caps, const xc_graph_t* g) {
  for (int v = 0; v < g->num_values; v++) {
    xc_dtype_t dt = g->values[v]->dtype;
    if (dt != XC_DTYPE_UNDEFINED && caps->dtypes && !(caps->dtypes & XC_DT(dt)))
      return xc_error(XC_UNSUPPORTED, "%s has no %s", caps->name, xc_dtype_name(dt));
  }
  return NULL;
}

/* Compiles g for the selector and runs it with poisoned, guarded buffers. */
static xc_status_t run_compiled(const xc_opsuite_options_t* o, xc_graph_t* g, int ni, xc_tensor_t** ins,
                                xc_tensor_t** got) {
  xc_session_t* session = NULL;
  xc_compiled_module_t* cm = NULL;
  xc_executor_t* ex = NULL;
  xc_status_t s = open_session(o, &session);
  if (!s) s = check_dtypes(xc_session_caps(session), g);
  if (!s) s = xc_session_compile_graph(session, g, &cm);
  if (!s) {
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.poison = true;
    eo.guard = true;
    s = xc_executor_create(cm, o->target, &eo, &ex);
  }
  if (!s) s = xc_executor_run(ex, ni, (const xc_tensor_t* const*)ins, got, NULL);
  xc_executor_destroy(ex);
  xc_compiled_module_destroy(cm);
  xc_session_destroy(session);
  return s;
}

static bool is_ref(const char* t) { return !t || !*t || !strcmp(t, "ref"); }

/* --compile-only: lowers and compiles g for the architecture o->target
 * names. */
static xc_status_t compile_case(const xc_opsuite_options_t* o, xc_graph_t* g, int* kernels) {
  xc_session_t* session = NULL;
  xc_compiled_module_t* cm = NULL;
  xc_status_t s = open_session(o, &session);
  if (!s) s = check_dtypes(xc_session_caps(session), g);
  if (!s) s = xc_session_compile_graph(session, g, &cm);
  if (session && kernels) *kernels += xc_session_cache_stats(session)->kernels_compiled;
  xc_compiled_module_destroy(cm);
  xc_session_destroy(session);
  return s;
}

static xc_conform_verdict_t run_spec(const suite_t* su, const spec_t* sp, const char* want_name, char** detail) {
  const xc_opsuite_options_t* o = su->o;
  const gen_entry_t* e = &su->gens.v[sp->gen];
  gb_t ref, tgt;
  memset(&tgt, 0, sizeof tgt);
  xc_tensor_t* want[16] = {0};
  xc_tensor_t* got[16] = {0};
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  int no = 0;
  if (o->compile_only) {
    int kernels = 0;
    xc_status_t s = build_case(o, e, sp->dt, sp->k, &tgt);
    if (!s && want_name && strcmp(tgt.name, want_name) != 0)
      s = xc_error(XC_INTERNAL, "the case rebuilt as '%s' (generation is not deterministic)", tgt.name);
    if (!s) s = compile_case(o, tgt.g, &kernels);
    if (s) {
      v = xc_status_code(s) == XC_UNSUPPORTED ? XC_CONFORM_UNSUPPORTED : XC_CONFORM_FAIL;
      *detail = dup_printf("%s", xc_status_message(s));
      xc_status_free(s);
    } else {
      *detail = dup_printf("compiled, %d kernel%s (not run)", kernels, kernels == 1 ? "" : "s");
    }
    gb_free(&tgt);
    return v;
  }
  xc_status_t s = build_case(o, e, sp->dt, sp->k, &ref);
  if (!s && want_name && strcmp(ref.name, want_name) != 0)
    s = xc_error(XC_INTERNAL, "the case rebuilt as '%s' (generation is not deterministic)", ref.name);
  if (!s) {
    no = ref.g->num_outputs;
    if (no > 16) s = xc_error(XC_INTERNAL, "too many outputs");
  }
  if (!s) {
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    s = xc_interp_run(ref.g, &io, ref.num_inputs, (const xc_tensor_t* const*)ref.inputs, want);
    if (s) s = xc_status_annotate(s, "reference interpreter");
  }
  /* The target gets its own copy of the graph (compiling optimizes it). */
  if (!s) s = build_case(o, e, sp->dt, sp->k, &tgt);
  if (!s) {
    if (is_ref(o->target)) {
      xc_interp_options_t io;
      xc_interp_options_init(&io);
      s = xc_interp_run(tgt.g, &io, tgt.num_inputs, (const xc_tensor_t* const*)tgt.inputs, got);
    } else if (!strcmp(o->target, "tiled")) {
      s = run_tiled(tgt.g, tgt.num_inputs, tgt.inputs, got);
    } else {
      s = run_compiled(o, tgt.g, tgt.num_inputs, tgt.inputs, got);
    }
  }
  double worst_l2 = 0;
  for (int i = 0; !s && i < no && v == XC_CONFORM_PASS; i++) {
    if (o->perturb != 0 && got[i] && xc_dtype_is_float(got[i]->dtype))
      for (int64_t j = 0; j < got[i]->numel; j++)
        xc_tensor_set_f64(got[i], j, xc_tensor_get_f64(got[i], j) * (1 + o->perturb));
    xc_tolerance_t tol;
    xc_tolerance_for_dtype(want[i]->dtype, &tol);
    xc_compare_result_t r;
    s = xc_compare_tensors(got[i], want[i], &tol, &r);
    if (!s && !r.ok) {
      v = XC_CONFORM_FAIL;
      *detail = dup_printf("output %d vs the interpreter: max-abs %.3g, max-ULP %.0f, rel-L2 %.3g; %s", i, r.max_abs,
                           r.max_ulp, r.rel_l2, r.reason);
    }
    if (!s && r.rel_l2 > worst_l2) worst_l2 = r.rel_l2;
  }
  if (s) {
    v = xc_status_code(s) == XC_UNSUPPORTED ? XC_CONFORM_UNSUPPORTED : XC_CONFORM_FAIL;
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
  } else if (v == XC_CONFORM_PASS && !is_ref(o->target)) {
    *detail = dup_printf("rel-L2 %.2g", worst_l2);
  }
  for (int i = 0; i < 16; i++) {
    xc_tensor_destroy(want[i]);
    xc_tensor_destroy(got[i]);
  }
  gb_free(&ref);
  gb_free(&tgt);
  return v;
}

static xc_conform_verdict_t run_one_cb(void* ctx, const xc_conform_case_t* c, int index, char** detail) {
  const suite_t* su = ctx;
  return run_spec(su, &su->specs[index], c->name, detail);
}

/* ---- public entry points ------------------------------------------------------- */

xc_status_t xc_opsuite_list(const xc_opsuite_options_t* o, xc_conform_report_t* out, char** uncovered) {
  suite_t su;
  memset(&su, 0, sizeof su);
  xc_status_t s = list_cases(o, &su, out, uncovered);
  suite_free(&su);
  if (s) xc_conform_report_free(out);
  return s;
}

xc_status_t xc_opsuite_run(const xc_opsuite_options_t* o, xc_conform_report_t* out, char** uncovered) {
  suite_t su;
  memset(&su, 0, sizeof su);
  xc_status_t s = list_cases(o, &su, out, uncovered);
  if (!s && o->in_process) {
    for (int i = 0; i < out->num_cases; i++) {
      xc_conform_case_t* c = &out->cases[i];
      c->verdict = run_spec(&su, &su.specs[i], c->name, &c->detail);
      if (!c->detail) c->detail = xstrdup("");
      if (o->progress) fprintf(o->progress, "%-11s %s  (%s)\n", xc_conform_verdict_name(c->verdict), c->name, c->detail);
    }
    out->passed = out->failed = out->skipped = out->xfailed = out->xpassed = 0;
    for (int i = 0; i < out->num_cases; i++) {
      switch (out->cases[i].verdict) {
        case XC_CONFORM_PASS: out->passed++; break;
        case XC_CONFORM_FAIL: out->failed++; break;
        case XC_CONFORM_UNSUPPORTED: out->skipped++; break;
        case XC_CONFORM_XFAIL: out->xfailed++; break;
        case XC_CONFORM_XPASS: out->xpassed++; break;
      }
    }
  } else if (!s) {
    xc_conform_options_t co;
    xc_conform_options_init(&co);
    co.target = o->target;
    co.timeout_s = o->timeout_s;
    co.jobs = o->jobs;
    co.progress = o->progress;
    s = xc_conform_run_cases(out, &co, run_one_cb, &su);
  }
  suite_free(&su);
  if (s) xc_conform_report_free(out);
  return s;
}

xc_status_t xc_opsuite_build(const xc_opsuite_options_t* o, const char* name, xc_graph_t** out_graph,
                             int* out_num_inputs, xc_tensor_t*** out_inputs) {
  *out_graph = NULL;
  *out_num_inputs = 0;
  *out_inputs = NULL;
  xc_opsuite_options_t lo = *o;
  lo.filter = NULL;
  suite_t su;
  memset(&su, 0, sizeof su);
  xc_conform_report_t r;
  xc_status_t s = list_cases(&lo, &su, &r, NULL);
  int found = -1;
  for (int i = 0; !s && i < r.num_cases && found < 0; i++)
    if (!strcmp(r.cases[i].name, name)) found = i;
  if (!s && found < 0) s = xc_error(XC_NOT_FOUND, "no case named '%s' with these options", name);
  if (!s) {
    gb_t b;
    const spec_t* sp = &su.specs[found];
    s = build_case(&lo, &su.gens.v[sp->gen], sp->dt, sp->k, &b);
    if (!s) {
      xc_tensor_t** ins = calloc((size_t)b.num_inputs + 1, sizeof *ins);
      if (!ins) {
        s = xc_error_oom();
      } else {
        memcpy(ins, b.inputs, sizeof *ins * (size_t)b.num_inputs);
        *out_inputs = ins;
        *out_num_inputs = b.num_inputs;
        *out_graph = b.g;
        b.num_inputs = 0;
        b.g = NULL;
      }
    }
    gb_free(&b);
  }
  xc_conform_report_free(&r);
  suite_free(&su);
  return s;
}
