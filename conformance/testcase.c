/* Runs one test folder in the ONNX backend-test layout:
 *
 *   <dir>/model.onnx
 *   <dir>/test_data_set_N/input_K.pb   binds graph input K (or the input named
 *                                      like the tensor, when it has a name)
 *   <dir>/test_data_set_N/output_K.pb  the reference for graph output K
 *
 * Import, infer, run with the reference interpreter, compare. The verdict is
 * UNSUPPORTED when any step fails with XC_UNSUPPORTED (xcomp does not handle
 * an op, a dtype, an attribute or a file kind), FAIL for every other error or
 * a numeric mismatch, PASS otherwise. This runs inside the forked child of
 * the runner (runner.c); it may also be called directly. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/conformance.h"
#include "xcomp/driver.h"
#include "xcomp/lower.h"
#include "xcomp/interp.h"
#include "xcomp/onnx_testcase.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"


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
  /* Details are one line. */
  for (char* p = s; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  return s;
}

/* Details name the test already; drop a leading "<dir>/model.onnx: ". */
static void strip_prefix(char* detail, const char* prefix) {
  size_t n = strlen(prefix);
  if (detail && strncmp(detail, prefix, n) == 0) memmove(detail, detail + n, strlen(detail + n) + 1);
}


static xc_conform_verdict_t verdict_of(xc_status_t s) {
  return xc_status_code(s) == XC_UNSUPPORTED ? XC_CONFORM_UNSUPPORTED : XC_CONFORM_FAIL;
}

/* A compile session without cache: "ref" for the tiled pseudo-target
 * (reference traits, unlimited tiled limits), else the selected target. */
/* The device limits of the case being run (xc_conform_options_t): set
 * once per case before any session opens (cases run in their own process). */
static int64_t g_max_local_memory_bytes;
static int g_max_threads_per_group;

static xc_status_t open_session(const char* target, bool allow_tf32, xc_session_t** out) {
  xc_session_options_t so;
  xc_session_options_init(&so);
  so.target = target;
  so.max_local_memory_bytes = g_max_local_memory_bytes;
  so.max_threads_per_group = g_max_threads_per_group;
  so.use_cache = false;
  so.build.compile.allow_tf32 = allow_tf32;
  return xc_session_create(&so, out);
}

/* Optimizes g at -O2 as the tiled pseudo-target sees it. */
static xc_status_t optimize_for_tiled(xc_graph_t* g) {
  xc_session_t* session = NULL;
  xc_status_t s = open_session("ref", false, &session);
  if (!s) s = xc_session_optimize(session, g);
  xc_session_destroy(session);
  return s;
}

/* The `tiled` pseudo-target: the graph (already optimized by
 * xc_conform_run_case) is planned, lowered to tiled kernels and run with the
 * tiled-IR interpreter. A group that cannot be lowered is XC_UNSUPPORTED,
 * which the verdict reports as skipped. */
static xc_status_t run_tiled(const xc_graph_t* g, const xc_onnx_test_data_t* set, xc_tensor_t** got) {
  xc_session_t* session = NULL;
  xc_lowered_module_t* m = NULL;
  xc_status_t s = open_session("ref", false, &session);
  if (!s) s = xc_session_lower(session, g, &m);
  if (!s) s = xc_lowered_run_interp(m, set->num_inputs, (const xc_tensor_t* const*)set->inputs, got);
  if (session) xc_session_lowered_free(session, m);
  xc_session_destroy(session);
  return s;
}

/* A compiled target (cpu, opencl:N, plugins): the test's graph is compiled
 * through the runtime (passes, fusion, lowering, emission, the target's
 * compiler) and run by the executor with poisoned buffers; every output is
 * compared with the reference interpreter's at the tolerance of its dtype
 * (the conformance table of ARCHITECTURE.md), and the interpreter's output
 * with the stored reference (ONNX's tolerance; real models: the rel-L2 bound
 * of the dtype, xc_tolerance_stored_model), so a test whose reference the
 * interpreter misses does not count as a target pass. */
/* A float32 tensor in dt (other dtypes: a copy). */
static xc_status_t to_dtype(const xc_tensor_t* t, xc_dtype_t dt, xc_tensor_t** out) {
  if (t->dtype != XC_F32 && !(dt == XC_F32 && xc_dtype_is_float(t->dtype))) return xc_tensor_clone(t, out);
  XC_RETURN_IF_ERROR(xc_tensor_create(dt, t->rank, t->dims, out));
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(*out, i, xc_tensor_get_f64(t, i));
  return NULL;
}

/* Runs the graph (converted to dtype, when given) on the selected target:
 * ref (interpreter), tiled (lowered, tiled-IR interpreter) or a compiled
 * target with poisoned, guarded buffers. */
static xc_status_t run_target(xc_graph_t* g, const char* selector, int ni, xc_tensor_t* const* ins,
                              xc_tensor_t** got) {
  if (!selector || !strcmp(selector, "ref")) {
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    return xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)ins, got);
  }
  if (!strcmp(selector, "tiled")) {
    XC_RETURN_IF_ERROR(optimize_for_tiled(g));
    xc_onnx_test_data_t set;
    memset(&set, 0, sizeof set);
    set.num_inputs = ni;
    set.inputs = (xc_tensor_t**)ins;
    return run_tiled(g, &set, got);
  }
  xc_session_t* session = NULL;
  xc_compiled_module_t* cm = NULL;
  xc_executor_t* ex = NULL;
  xc_status_t s = open_session(selector, false, &session);
  if (!s) s = xc_session_compile_graph(session, g, &cm);
  xc_session_destroy(session);
  if (!s) {
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.poison = true;
    eo.guard = true;
    /* compiled for tighter limits than the device's own (a smaller device) */
    eo.ignore_fingerprint = g_max_local_memory_bytes > 0 || g_max_threads_per_group > 0;
    s = xc_executor_create(cm, selector, &eo, &ex);
  }
  if (!s) s = xc_executor_run(ex, ni, (const xc_tensor_t* const*)ins, got, NULL);
  xc_executor_destroy(ex);
  xc_compiled_module_destroy(cm);
  return s;
}

/* Whether the f32 reference output `want` can be represented in dt: the
 * reference rounded to dt must itself pass dt's rule against the reference.
 * When it does not (its values lie below dt's range: f16 flushes a model's
 * 1e-25 logits to zero; or above it), no computation in dt can meet the
 * bound, so the f32 comparison says nothing about the target. Integer and
 * bool outputs are always representable (they are compared exactly). */
static xc_status_t representable(const xc_tensor_t* want, xc_dtype_t dt, bool* out, double* out_rel_l2) {
  *out = true;
  *out_rel_l2 = 0;
  if (!xc_dtype_is_float(want->dtype)) return NULL;
  xc_tensor_t* rounded = NULL;
  xc_tensor_t* back = NULL;
  xc_status_t s = to_dtype(want, dt, &rounded);
  if (!s) s = to_dtype(rounded, want->dtype, &back);
  xc_tolerance_t tol;
  xc_tolerance_for_dtype(dt, &tol);
  xc_compare_result_t r;
  if (!s) s = xc_compare_tensors(back, want, &tol, &r);
  if (!s) {
    *out = r.ok;
    *out_rel_l2 = r.rel_l2;
  }
  xc_tensor_destroy(rounded);
  xc_tensor_destroy(back);
  return s;
}

/* Reduced precision (--dtype f16|bf16): the f32 interpreter's outputs are
 * the reference; the model converted to dtype runs on the target, and each
 * float output is compared (back in f32) at dtype's rel-L2 bound. An output
 * whose f32 reference is not representable in dtype (representable()) is
 * compared instead with the interpreter's run of the converted model (the
 * same inputs, rounded to dtype) at dtype's rule, and the detail says so. */
static xc_conform_verdict_t run_precision_case(xc_onnx_testcase_t* tc, const char* selector, xc_dtype_t dt,
                                               char** detail) {
  xc_graph_t* g = tc->graph;
  int no = g->num_outputs;
  xc_tensor_t** want = calloc((size_t)no + 1, sizeof *want);
  xc_tensor_t** want_dt = calloc((size_t)no + 1, sizeof *want_dt); /* the converted model's, where needed */
  xc_tensor_t** got = calloc((size_t)no + 1, sizeof *got);
  bool* in_range = calloc((size_t)no + 1, sizeof *in_range);
  double* rounding_l2 = calloc((size_t)no + 1, sizeof *rounding_l2);
  xc_tensor_t** ins = NULL;
  int ni = 0;
  int num_out_of_range = 0;
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  xc_status_t s = want && want_dt && got && in_range && rounding_l2 ? NULL : xc_error_oom();
  const xc_onnx_test_data_t* set = &tc->sets[0];
  if (!s) {
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    s = xc_interp_run(g, &io, set->num_inputs, (const xc_tensor_t* const*)set->inputs, want);
    if (s) s = xc_status_annotate(s, "reference interpreter");
  }
  for (int i = 0; !s && i < no; i++) {
    s = representable(want[i], dt, &in_range[i], &rounding_l2[i]);
    num_out_of_range += !in_range[i];
  }
  if (!s) s = xc_convert_precision(g, dt, NULL);
  if (!s) {
    ni = set->num_inputs;
    ins = calloc((size_t)ni + 1, sizeof *ins);
    if (!ins) s = xc_error_oom();
    for (int i = 0; !s && i < ni; i++) s = to_dtype(set->inputs[i], g->inputs[i]->dtype, &ins[i]);
  }
  if (!s && num_out_of_range > 0) {
    /* before run_target: compiling optimizes g in place */
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    s = xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)ins, want_dt);
    if (s) s = xc_status_annotate(s, "reference interpreter on the %s model", xc_dtype_name(dt));
  }
  if (!s) s = run_target(g, selector, ni, ins, got);
  double worst = 0;
  char note[256] = "";
  for (int i = 0; !s && i < no && v == XC_CONFORM_PASS; i++) {
    xc_tensor_t* back = NULL;
    xc_tolerance_t tol;
    xc_compare_result_t r;
    if (in_range[i]) {
      s = to_dtype(got[i], want[i]->dtype, &back);
      xc_tolerance_for_dtype(xc_dtype_is_float(want[i]->dtype) ? dt : want[i]->dtype, &tol);
      if (!s) s = xc_compare_tensors(back, want[i], &tol, &r);
    } else {
      xc_tolerance_for_dtype(want_dt[i]->dtype, &tol);
      s = xc_compare_tensors(got[i], want_dt[i], &tol, &r);
      size_t k = strlen(note);
      snprintf(note + k, sizeof note - k,
               "%soutput %d '%s' vs the interpreter on the %s model (its f32 reference rounds to rel-L2 %.2g in %s)",
               k ? ", " : "; ", i, g->outputs[i]->name, xc_dtype_name(dt), rounding_l2[i], xc_dtype_name(dt));
    }
    xc_tensor_destroy(back);
    if (!s && !r.ok) {
      v = XC_CONFORM_FAIL;
      *detail = dup_printf("%s output %d '%s' vs the %s interpreter: max-abs %.3g, rel-L2 %.3g; %s", xc_dtype_name(dt),
                           i, g->outputs[i]->name, in_range[i] ? "f32" : xc_dtype_name(dt), r.max_abs, r.rel_l2,
                           r.reason);
    }
    if (!s && r.rel_l2 > worst) worst = r.rel_l2;
  }
  if (s) {
    v = verdict_of(s);
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
  } else if (v == XC_CONFORM_PASS) {
    *detail = dup_printf("%s: rel-L2 %.2g%s", xc_dtype_name(dt), worst, note);
  }
  for (int i = 0; i < no; i++) {
    if (want) xc_tensor_destroy(want[i]);
    if (want_dt) xc_tensor_destroy(want_dt[i]);
    if (got) xc_tensor_destroy(got[i]);
  }
  for (int i = 0; ins && i < ni; i++) xc_tensor_destroy(ins[i]);
  free(ins);
  free(want);
  free(want_dt);
  free(got);
  free(in_range);
  free(rounding_l2);
  return v;
}

/* `models`: the stored outputs are a real model's (xc_tolerance_stored_model
 * for the interpreter against them); otherwise ONNX's tolerance. Selector
 * "tiled" runs the lowered graph with the tiled-IR interpreter instead of
 * compiling it. */
static xc_conform_verdict_t run_compiled_case(xc_onnx_testcase_t* tc, const char* selector, bool allow_tf32,
                                              bool models, char** detail) {
  xc_graph_t* g = tc->graph;
  int no = g->num_outputs;
  xc_tensor_t** want = calloc((size_t)tc->num_sets * (size_t)no + 1, sizeof *want);
  xc_tensor_t** got = calloc((size_t)no + 1, sizeof *got);
  xc_compiled_module_t* cm = NULL;
  xc_executor_t* ex = NULL;
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  xc_status_t s = NULL;
  if (!want || !got) s = xc_error_oom();
  /* The oracle first, on the graph as imported (compiling optimizes it). */
  for (int n = 0; !s && n < tc->num_sets; n++) {
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    s = xc_interp_run(g, &io, tc->sets[n].num_inputs,
                      (const xc_tensor_t* const*)tc->sets[n].inputs, &want[n * no]);
    if (s) s = xc_status_annotate(s, "reference interpreter");
    for (int i = 0; !s && i < no; i++) {
      xc_tolerance_t tol;
      if (models)
        xc_tolerance_stored_model(tc->sets[n].expected[i]->dtype, &tol);
      else
        xc_tolerance_onnx(&tol);
      xc_compare_result_t r;
      s = xc_compare_tensors(want[n * no + i], tc->sets[n].expected[i], &tol, &r);
      if (!s && !r.ok)
        s = xc_error(XC_UNSUPPORTED,
                     "the reference interpreter does not match the stored output %d: max-abs %.3g, "
                     "rel-L2 %.3g; %s",
                     i, r.max_abs, r.rel_l2, r.reason);
    }
  }
  bool tiled = !strcmp(selector, "tiled");
  if (!s && tiled) s = optimize_for_tiled(g);
  xc_session_t* session = NULL;
  if (!s && !tiled) s = open_session(selector, allow_tf32, &session);
  if (!s && !tiled) s = xc_session_compile_graph(session, g, &cm);
  xc_session_destroy(session);
  if (!s && !tiled) {
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.poison = true;
    eo.guard = true;
    /* compiled for tighter limits than the device's own (a smaller device) */
    eo.ignore_fingerprint = g_max_local_memory_bytes > 0 || g_max_threads_per_group > 0;
    s = xc_executor_create(cm, selector, &eo, &ex);
  }
  for (int n = 0; !s && n < tc->num_sets && v == XC_CONFORM_PASS; n++) {
    if (tiled)
      s = run_tiled(g, &tc->sets[n], got);
    else
      s = xc_executor_run(ex, tc->sets[n].num_inputs, (const xc_tensor_t* const*)tc->sets[n].inputs,
                          got, NULL);
    for (int i = 0; !s && i < no && v == XC_CONFORM_PASS; i++) {
      const xc_tensor_t* ref = want[n * no + i];
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(ref->dtype, &tol);
      if (allow_tf32 && ref->dtype == XC_F32) {
        /* tf32 math (ARCHITECTURE.md): inputs keep 10 mantissa bits */
        tol.max_rel_l2 = 5e-4;
        tol.check_allclose = false;
      }
      xc_compare_result_t r;
      s = xc_compare_tensors(got[i], ref, &tol, &r);
      if (!s && !r.ok) {
        v = XC_CONFORM_FAIL;
        *detail = dup_printf("%soutput %d '%s' vs the interpreter: max-abs %.3g, max-ULP %.0f, "
                             "rel-L2 %.3g; %s",
                             n ? "test_data_set_1+ " : "", i, g->outputs[i]->name, r.max_abs,
                             r.max_ulp, r.rel_l2, r.reason);
      }
    }
    for (int i = 0; i < no; i++) {
      xc_tensor_destroy(got[i]);
      got[i] = NULL;
    }
  }
  if (s) {
    v = verdict_of(s);
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
  }
  xc_executor_destroy(ex);
  xc_compiled_module_destroy(cm);
  if (want)
    for (int i = 0; i < tc->num_sets * no; i++) xc_tensor_destroy(want[i]);
  free(want);
  free(got);
  return v;
}

/* --compile-only: the model (converted to dtype, when given) lowered and
 * compiled for the architecture the selector names (cuda:sm_90,
 * rocm:gfx90a), without a device; nothing runs, so no output is compared.
 * PASS says how many kernels the target's compiler built. */
static xc_conform_verdict_t compile_only_case(xc_onnx_testcase_t* tc, const char* selector, xc_dtype_t dt,
                                              bool allow_tf32, char** detail) {
  xc_session_t* session = NULL;
  xc_compiled_module_t* cm = NULL;
  bool reduced = dt != XC_DTYPE_UNDEFINED && dt != XC_F32;
  xc_status_t s = reduced ? xc_convert_precision(tc->graph, dt, NULL) : NULL;
  if (!s) s = open_session(selector, allow_tf32, &session);
  if (!s) s = xc_session_compile_graph(session, tc->graph, &cm);
  int kernels = session ? xc_session_cache_stats(session)->kernels_compiled : 0;
  xc_compiled_module_destroy(cm);
  xc_session_destroy(session);
  if (s) {
    xc_conform_verdict_t v = verdict_of(s);
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
    return v;
  }
  if (kernels <= 0) {
    *detail = dup_printf("compiled, but the target's compiler built no kernel");
    return XC_CONFORM_FAIL;
  }
  *detail = dup_printf("%s%scompiled, %d kernel%s (not run)", reduced ? xc_dtype_name(dt) : "", reduced ? ": " : "",
                       kernels, kernels == 1 ? "" : "s");
  return XC_CONFORM_PASS;
}

/* Runs one data set (inputs already bound to graph inputs by the loader) and
 * compares every output with its reference. */
static xc_conform_verdict_t run_set(const xc_graph_t* g, const xc_onnx_test_data_t* set,
                                    int set_index, const xc_conform_options_t* opt,
                                    char** detail) {
  xc_tensor_t** got = calloc((size_t)g->num_outputs + 1, sizeof *got);
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  xc_status_t s = NULL;
  if (!got) {
    s = xc_error_oom();
    goto done;
  }
  if (opt->target && strcmp(opt->target, "tiled") == 0) {
    s = run_tiled(g, set, got);
  } else {
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    s = xc_interp_run(g, &io, set->num_inputs, (const xc_tensor_t* const*)set->inputs, got);
  }
  if (s) goto done;
  for (int i = 0; i < g->num_outputs; i++) {
    const xc_tensor_t* ref = set->expected[i];
    /* ONNX's tolerance for node tests; a real model's stored output (another
     * implementation's f32 rounding) by the rel-L2 bound of its dtype. */
    xc_tolerance_t tol;
    if (opt->models)
      xc_tolerance_stored_model(ref->dtype, &tol);
    else
      xc_tolerance_onnx(&tol);
    xc_compare_result_t r;
    s = xc_compare_tensors(got[i], ref, &tol, &r);
    if (s) goto done;
    if (!r.ok) {
      v = XC_CONFORM_FAIL;
      char where[64] = "";
      if (set_index) snprintf(where, sizeof where, "test_data_set_%d ", set_index);
      *detail = dup_printf("%soutput %d '%s': max-abs %.3g, max-ULP %.0f, rel-L2 %.3g; %s",
                           where, i, g->outputs[i]->name ? g->outputs[i]->name : "?",
                           r.max_abs, r.max_ulp, r.rel_l2, r.reason);
      break;
    }
  }
done:
  if (s) {
    v = verdict_of(s);
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
  }
  if (got)
    for (int i = 0; i < g->num_outputs; i++) xc_tensor_destroy(got[i]);
  free(got);
  return v;
}

/* Shape inputs. ONNX node tests feed operands such as Reduce* axes, the
 * Reshape/Expand shape, Slice starts/ends or the TopK k as graph inputs,
 * where real models hold constants. The compiled targets size every buffer
 * and choose every kernel's index math at compile time, so for them (tiled,
 * cpu, opencl, ...) such a graph input is frozen: it becomes a constant with
 * the test's value and leaves the graph's inputs (and every data set's). Only
 * inputs that every data set gives the same value and that are read only at
 * the operand positions below (never a graph output) are frozen; what they compute
 * from data (Range's start/delta, Pad's constant, ...) never is. The frozen
 * names are listed in the test's detail line, so reports show which passes
 * depend on it. */
typedef struct {
  const char* op;
  unsigned operands; /* bit k: input k is a shape operand */
} shape_operands_t;

static const shape_operands_t kShapeOperands[] = {
    {"ReduceSum", 1u << 1},       {"ReduceMean", 1u << 1},    {"ReduceMax", 1u << 1},
    {"ReduceMin", 1u << 1},       {"ReduceProd", 1u << 1},    {"ReduceL1", 1u << 1},
    {"ReduceL2", 1u << 1},        {"ReduceLogSum", 1u << 1},  {"ReduceLogSumExp", 1u << 1},
    {"ReduceSumSquare", 1u << 1}, {"Reshape", 1u << 1},       {"Expand", 1u << 1},
    {"Tile", 1u << 1},            {"Squeeze", 1u << 1},       {"Unsqueeze", 1u << 1},
    {"Split", 1u << 1},           {"TopK", 1u << 1},          {"OneHot", 1u << 1},
    {"Slice", 0x1eu},             {"Pad", (1u << 1) | (1u << 3)},
    {"Resize", 0xeu},             {"Upsample", 1u << 1},      {"ConstantOfShape", 1u << 0},
    {"CenterCropPad", 1u << 1},   {"MaxUnpool", 1u << 2},     {"Col2Im", (1u << 1) | (1u << 2)},
    {"AffineGrid", 1u << 1},
};

static bool is_shape_operand(const xc_node_t* n, int k) {
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) return false;
  for (size_t i = 0; i < sizeof kShapeOperands / sizeof kShapeOperands[0]; i++)
    if (strcmp(n->op_type, kShapeOperands[i].op) == 0) return k < 32 && (kShapeOperands[i].operands >> k) & 1u;
  return false;
}

static bool freezable(const xc_onnx_testcase_t* tc, int index) {
  const xc_graph_t* g = tc->graph;
  const xc_value_t* v = g->inputs[index];
  bool used = false;
  for (int i = 0; i < g->num_outputs; i++)
    if (g->outputs[i] == v) return false;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    for (int k = 0; k < n->num_inputs; k++) {
      if (n->inputs[k] != v) continue;
      if (!is_shape_operand(n, k)) return false;
      used = true;
    }
  }
  if (!used) return false;
  const xc_tensor_t* first = tc->sets[0].inputs[index];
  if (!first) return false;
  size_t bytes = xc_tensor_nbytes(first);
  for (int s = 1; s < tc->num_sets; s++) {
    const xc_tensor_t* t = tc->sets[s].inputs[index];
    if (!t || t->dtype != first->dtype || t->rank != first->rank || xc_tensor_nbytes(t) != bytes ||
        memcmp(t->dims, first->dims, sizeof(int64_t) * (size_t)first->rank) != 0 ||
        (bytes && memcmp(t->data, first->data, bytes) != 0))
      return false;
  }
  return true;
}

/* Freezes the shape inputs of an uninferred graph; appends their names to
 * names (", "-separated). */
static xc_status_t freeze_shape_inputs(xc_onnx_testcase_t* tc, char* names, size_t names_size) {
  xc_graph_t* g = tc->graph;
  names[0] = '\0';
  if (tc->num_sets == 0) return NULL;
  for (int i = 0; i < g->num_inputs;) {
    if (!freezable(tc, i)) {
      i++;
      continue;
    }
    xc_value_t* v = g->inputs[i];
    xc_tensor_t* copy = NULL;
    XC_RETURN_IF_ERROR(xc_tensor_clone(tc->sets[0].inputs[i], &copy));
    xc_status_t s = xc_value_make_constant(g, v, copy); /* the graph owns copy */
    if (s) return s;
    size_t used = strlen(names);
    snprintf(names + used, names_size - used, "%s%s", used ? ", " : "", v->name);
    memmove(&g->inputs[i], &g->inputs[i + 1], sizeof(g->inputs[0]) * (size_t)(g->num_inputs - i - 1));
    g->num_inputs--;
    for (int n = 0; n < tc->num_sets; n++) {
      xc_onnx_test_data_t* set = &tc->sets[n];
      xc_tensor_destroy(set->inputs[i]);
      memmove(&set->inputs[i], &set->inputs[i + 1], sizeof(set->inputs[0]) * (size_t)(set->num_inputs - i - 1));
      set->num_inputs--;
    }
  }
  return NULL;
}

xc_conform_verdict_t xc_conform_run_case(const char* dir, const xc_conform_options_t* opt,
                                         char** out_detail) {
  *out_detail = NULL;
  xc_conform_options_t defaults;
  if (!opt) {
    xc_conform_options_init(&defaults);
    opt = &defaults;
  }
  g_max_local_memory_bytes = opt->max_local_memory_bytes;
  g_max_threads_per_group = opt->max_threads_per_group;
  bool reduced = opt->dtype != XC_DTYPE_UNDEFINED && opt->dtype != XC_F32;
  bool tiled = !reduced && opt->target && strcmp(opt->target, "tiled") == 0;
  /* Real models on tiled are checked like the compiled targets: the
   * interpreter against the stored output, tiled against the interpreter. */
  bool compiled = opt->target && strcmp(opt->target, "ref") != 0 && (!tiled || opt->models);
  if (compiled) tiled = false;
  char path[4096], path_prefix[4200];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  snprintf(path_prefix, sizeof path_prefix, "%s: ", path);
  /* The loader binds input_K.pb / output_K.pb to graph inputs and outputs
   * (by position, or by tensor name where a model lists initializers as
   * inputs); its errors keep their code, so XC_UNSUPPORTED means skipped. */
  xc_onnx_testcase_t* tc = NULL;
  xc_status_t s = xc_onnx_testcase_load(dir, &tc);
  char frozen[512] = "";
  if (!s && (tiled || compiled)) s = freeze_shape_inputs(tc, frozen, sizeof frozen);
  if (!s) s = xc_graph_infer(tc->graph);
  if (!s && tiled) s = optimize_for_tiled(tc->graph);
  if (s) {
    xc_conform_verdict_t v = verdict_of(s);
    *out_detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
    xc_onnx_testcase_destroy(tc);
    strip_prefix(*out_detail, path_prefix);
    return v;
  }
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  if (opt->compile_only) {
    char* d = NULL;
    v = compile_only_case(tc, opt->target, opt->dtype, opt->allow_tf32, &d);
    *out_detail = d;
    compiled = true; /* nothing ran: no stored output to compare */
  } else if (reduced && tc->num_sets > 0) {
    char* d = NULL;
    v = run_precision_case(tc, opt->target, opt->dtype, &d);
    *out_detail = d;
    compiled = true; /* done: skip the stored-output comparison below */
  } else if (compiled && tc->num_sets > 0) {
    char* d = NULL;
    v = run_compiled_case(tc, opt->target, opt->allow_tf32, opt->models, &d);
    *out_detail = d;
  }
  for (int n = 0; !compiled && n < tc->num_sets && v == XC_CONFORM_PASS; n++) {
    char* d = NULL;
    v = run_set(tc->graph, &tc->sets[n], n, opt, &d);
    if (v != XC_CONFORM_PASS)
      *out_detail = d;
    else
      free(d);
  }
  if (v == XC_CONFORM_PASS && tc->num_sets == 0 && !opt->compile_only) {
    v = XC_CONFORM_FAIL;
    *out_detail = dup_printf("no test_data_set_0 folder");
  }
  xc_onnx_testcase_destroy(tc);
  if (!*out_detail) *out_detail = dup_printf("%s", "");
  strip_prefix(*out_detail, path_prefix);
  if (*frozen && *out_detail) {
    char* d = dup_printf("%s%sshape inputs frozen: %s", *out_detail, **out_detail ? "; " : "", frozen);
    free(*out_detail);
    *out_detail = d;
  }
  return v;
}
