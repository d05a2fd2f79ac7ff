/* Tests of the pattern-recognition passes (GELU, LayerNorm, RMSNorm,
 * Softmax/LogSoftmax, SiLU/SwiGLU, BatchNorm folding): for each pattern a
 * graph where the rewrite happens (op counts after the -O2 pipeline) and
 * graphs where it must not (extra uses, wrong constants, wrong axes), with
 * values before and after agreeing (f32 relative L2 <= 1e-5), and for the
 * fused ops also agreeing with the closed formula computed here. Then the
 * pipeline on the real exported models in tests/models. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph_test_util.h"
#include "test.h"
#include "xcomp/interp.h"
#include "xcomp/onnx_testcase.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "xcomp/xir.h"

#define MAX_IO 4



static const xc_node_t* find_op(const xc_graph_t* g, const char* op) {
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, op) == 0) return g->nodes[i];
  return NULL;
}

/* Deterministic inputs: f32 values in [-3, 3) from a small LCG, one stream
 * per input. */
static bool make_inputs(const xc_graph_t* g, xc_tensor_t** ins) {
  uint32_t state = 12345;
  for (int i = 0; i < g->num_inputs; i++) {
    const xc_value_t* v = g->inputs[i];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
    if (xc_tensor_create(v->dtype, v->rank, dims, &ins[i])) return false;
    for (int64_t k = 0; k < ins[i]->numel; k++) {
      state = state * 1664525u + 1013904223u;
      xc_tensor_set_f64(ins[i], k, (double)(state >> 8) / (double)(1u << 24) * 6.0 - 3.0);
    }
  }
  return true;
}

/* Runs g on the inputs; returns output 0 (caller frees) or NULL. */
static xc_tensor_t* run(const xc_graph_t* g, xc_tensor_t* const* ins) {
  xc_tensor_t* outs[MAX_IO] = {0};
  xc_status_t s = xc_interp_run(g, NULL, g->num_inputs, (const xc_tensor_t* const*)ins, outs);
  if (s) {
    fprintf(stderr, "run: %s\n", xc_status_message(s));
    xc_status_free(s);
    return NULL;
  }
  for (int i = 1; i < g->num_outputs; i++) xc_tensor_destroy(outs[i]);
  return outs[0];
}

static double rel_l2(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double d = xc_tensor_get_f64(a, i) - xc_tensor_get_f64(b, i);
    num += d * d;
    den += xc_tensor_get_f64(b, i) * xc_tensor_get_f64(b, i);
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef double (*formula_fn)(const xc_tensor_t* const* ins, int64_t i);

/* Parses, runs, applies the default pipeline, runs again. Checks that the
 * values agree, and with `formula` (if given) that the result is right.
 * Returns the optimized graph (caller destroys) or NULL. */
static xc_graph_t* optimize(const char* text, formula_fn formula) {
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return NULL;
  CHECK(g->num_inputs <= MAX_IO && g->num_outputs <= MAX_IO);
  xc_tensor_t* ins[MAX_IO] = {0};
  CHECK(make_inputs(g, ins));
  xc_tensor_t* before = run(g, ins);
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_OK(xc_passes_run(g, &o));
  xc_tensor_t* after = run(g, ins);
  CHECK(before != NULL && after != NULL);
  /* f32 rule of the architecture guide; f16 rounds every step of the
   * unfused chain, so it gets the f16 bound. */
  double bound = after && after->dtype == XC_F16 ? 2e-3 : 1e-5;
  double err = rel_l2(after, before);
  if (!(err <= bound)) fprintf(stderr, "  rel L2 before/after %g in:\n%s", err, text);
  CHECK(err <= bound);
  if (formula && after) {
    xc_tensor_t* want;
    CHECK_OK(xc_tensor_create(XC_F64, after->rank, after->dims, &want));
    for (int64_t i = 0; i < want->numel; i++)
      xc_tensor_set_f64(want, i, formula((const xc_tensor_t* const*)ins, i));
    double e2 = rel_l2(after, want);
    if (!(e2 <= bound)) fprintf(stderr, "  rel L2 vs formula %g\n", e2);
    CHECK(e2 <= bound);
    xc_tensor_destroy(want);
  }
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  for (int i = 0; i < MAX_IO; i++) xc_tensor_destroy(ins[i]);
  return g;
}

static double in0(const xc_tensor_t* const* ins, int64_t i) { return xc_tensor_get_f64(ins[0], i); }

/* ---- GELU ---------------------------------------------------------------- */

static double gelu_erf(const xc_tensor_t* const* ins, int64_t i) {
  double x = in0(ins, i);
  return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double gelu_tanh(const xc_tensor_t* const* ins, int64_t i) {
  double x = in0(ins, i);
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static const char* gelu_erf_text(const char* half, const char* one, const char* root2) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "xir 1\ngraph g opset 17 {\n"
           "  input x: f32[3, 8]\n"
           "  const s2: f32[] = [%s]\n"
           "  const one: f32[] = [%s]\n"
           "  const half: f32[] = [%s]\n"
           "  d = Div(x, s2) @n_div\n"
           "  e = Erf(d) @n_erf\n"
           "  a = Add(e, one) @n_add\n"
           "  m = Mul(x, a) @n_mul\n"
           "  y = Mul(m, half) @n_mul1\n"
           "  output y\n"
           "}\n",
           root2, one, half);
  return buf;
}

static void test_gelu_erf_exporter_form(void) {
  xc_graph_t* g = optimize(gelu_erf_text("0.5", "1.0", "1.4142135"), gelu_erf);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  const xc_node_t* n = find_op(g, "Gelu");
  CHECK(n != NULL);
  if (n) {
    CHECK_STR(xc_node_attr_string(n, "approximate"), "none");
    CHECK(n->inputs[0] == g->inputs[0]);
    CHECK_EQ_INT(n->prov.num_origins, 5); /* the five matched nodes */
  }
  CHECK_STR(g->outputs[0]->name, "y");
  xc_graph_destroy(g);
}

static void test_gelu_erf_other_orders(void) {
  /* 0.5 applied to x first, x * 0.70710678, 1 on the left, Div by 2 at the
   * end of a second chain. */
  const char* text =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[2, 5]\n"
      "  const r2: f32[1] = [0.70710678]\n"
      "  const one: f32[] = [1.0]\n"
      "  const half: f32[] = [0.5]\n"
      "  const two: f32[] = [2.0]\n"
      "  h = Mul(half, x)\n"
      "  d = Mul(x, r2)\n"
      "  e = Erf(d)\n"
      "  a = Add(one, e)\n"
      "  y = Mul(a, h)\n"
      "  d2 = Mul(r2, y)\n"
      "  e2 = Erf(d2)\n"
      "  a2 = Add(e2, one)\n"
      "  m2 = Mul(a2, y)\n"
      "  z = Div(m2, two)\n"
      "  output z\n"
      "}\n";
  xc_graph_t* g = optimize(text, NULL);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Gelu"), 2);
  CHECK_EQ_INT(g->num_nodes, 2);
  xc_graph_destroy(g);
}

static void test_gelu_tanh_forms(void) {
  /* gpt2 export: Pow(x, 3), 0.5 * x first. */
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 6]\n"
      "  const half: f32[] = [0.5]\n"
      "  const three: f32[] = [3.0]\n"
      "  const c: f32[] = [0.044715]\n"
      "  const k: f32[] = [0.7978846]\n"
      "  const one: f32[] = [1.0]\n"
      "  m = Mul(x, half)\n"
      "  p = Pow(x, three)\n"
      "  m1 = Mul(p, c)\n"
      "  s = Add(x, m1)\n"
      "  m2 = Mul(s, k)\n"
      "  t = Tanh(m2)\n"
      "  a = Add(t, one)\n"
      "  y = Mul(m, a)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g2 = optimize(text2, gelu_tanh);
  if (g2) {
    CHECK_EQ_INT(g2->num_nodes, 1);
    const xc_node_t* n = find_op(g2, "Gelu");
    CHECK(n != NULL);
    if (n) CHECK_STR(xc_node_attr_string(n, "approximate"), "tanh");
    xc_graph_destroy(g2);
  }
  const char* text3 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[4, 3]\n"
      "  const half: f32[] = [0.5]\n"
      "  const c: f32[] = [0.044715]\n"
      "  const k: f32[] = [0.7978846]\n"
      "  const one: f32[] = [1.0]\n"
      "  q1 = Mul(x, x)\n"
      "  q2 = Mul(q1, x)\n"
      "  q3 = Mul(c, q2)\n"
      "  s2 = Add(q3, x)\n"
      "  u = Mul(k, s2)\n"
      "  t2 = Tanh(u)\n"
      "  a2 = Add(one, t2)\n"
      "  h2 = Mul(half, a2)\n"
      "  z = Mul(x, h2)\n"
      "  output z\n"
      "}\n";
  /* x*x*x, other operand orders and grouping. */
  xc_graph_t* g3 = optimize(text3, gelu_tanh);
  if (g3) {
    CHECK_EQ_INT(g3->num_nodes, 1);
    CHECK_EQ_INT(count_op(g3, "Gelu"), 1);
    xc_graph_destroy(g3);
  }
}

static void test_gelu_f16_and_constant_nodes(void) {
  /* f16 constants: 0.044715 rounds to 0.044708 (1.5e-4 away) but is the
   * nearest f16, so it matches. Constants come from Constant nodes and the
   * fold pass is off: the matcher reads their value attribute. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f16[2, 6]\n"
      "  half = Constant() {value: f16[] 0.5}\n"
      "  three = Constant() {value: f16[] 3.0}\n"
      "  c = Constant() {value: f16[] 0.044715}\n"
      "  k = Constant() {value: f16[] 0.7978846}\n"
      "  one = Constant() {value: f16[] 1.0}\n"
      "  m = Mul(x, half)\n"
      "  p = Pow(x, three)\n"
      "  m1 = Mul(p, c)\n"
      "  s = Add(x, m1)\n"
      "  m2 = Mul(s, k)\n"
      "  t = Tanh(m2)\n"
      "  a = Add(t, one)\n"
      "  y = Mul(m, a)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  const char* off[1] = {"fold-constants"};
  o.disabled = off;
  o.num_disabled = 1;
  CHECK_OK(xc_passes_run(g, &o));
  CHECK_EQ_INT(g->num_nodes, 1);
  const xc_node_t* n = find_op(g, "Gelu");
  CHECK(n != NULL);
  if (n) CHECK_STR(xc_node_attr_string(n, "approximate"), "tanh");
  xc_graph_destroy(g);
  /* Values, with folding on. */
  g = optimize(text, gelu_tanh);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 1);
    xc_graph_destroy(g);
  }
}

static void test_gelu_not_rewritten(void) {
  /* 0.6 instead of 0.5. */
  xc_graph_t* g = optimize(gelu_erf_text("0.6", "1.0", "1.4142135"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 0);
    CHECK_EQ_INT(count_op(g, "Erf"), 1);
    xc_graph_destroy(g);
  }
  /* 1.1 instead of 1. */
  g = optimize(gelu_erf_text("0.5", "1.1", "1.4142135"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 0);
    xc_graph_destroy(g);
  }
  /* sqrt(2) written with 5 digits is within the 1e-4 relative tolerance. */
  g = optimize(gelu_erf_text("0.5", "1.0", "1.4142"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 1);
    xc_graph_destroy(g);
  }
  /* The Erf result is also used elsewhere: rewriting would compute it twice. */
  const char* text =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[3, 8]\n"
      "  const s2: f32[] = [1.4142135]\n"
      "  const one: f32[] = [1.0]\n"
      "  const half: f32[] = [0.5]\n"
      "  d = Div(x, s2)\n"
      "  e = Erf(d)\n"
      "  a = Add(e, one)\n"
      "  m = Mul(x, a)\n"
      "  y = Mul(m, half)\n"
      "  z = Add(y, e)\n"
      "  output z\n"
      "}\n";
  g = optimize(text, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 0);
    CHECK_EQ_INT(count_op(g, "Erf"), 1);
    xc_graph_destroy(g);
  }
  /* Wrong divisor (1.5). */
  const char* text2 =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[3, 8]\n"
      "  const s2: f32[] = [1.5]\n"
      "  const one: f32[] = [1.0]\n"
      "  const half: f32[] = [0.5]\n"
      "  d = Div(x, s2)\n"
      "  e = Erf(d)\n"
      "  a = Add(e, one)\n"
      "  m = Mul(x, a)\n"
      "  y = Mul(m, half)\n"
      "  output y\n"
      "}\n";
  g = optimize(text2, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gelu"), 0);
    xc_graph_destroy(g);
  }
}

/* ---- LayerNorm / RMSNorm -------------------------------------------------- */

/* Normalizes groups of `inner` consecutive elements of input 0. */
static double layer_norm_at(const xc_tensor_t* x, int64_t i, int64_t inner, bool rms, double eps) {
  int64_t base = i / inner * inner;
  double mean = 0, var = 0;
  if (!rms) {
    for (int64_t k = 0; k < inner; k++) mean += xc_tensor_get_f64(x, base + k);
    mean /= (double)inner;
  }
  for (int64_t k = 0; k < inner; k++) {
    double d = xc_tensor_get_f64(x, base + k) - mean;
    var += d * d;
  }
  var /= (double)inner;
  return (xc_tensor_get_f64(x, i) - mean) / sqrt(var + eps);
}

static double ln_gamma_beta(const xc_tensor_t* const* ins, int64_t i) {
  /* gamma[k] = 0.5 + 0.25 k, beta[k] = k - 1 over the last axis of 4. */
  int64_t k = i % 4;
  return layer_norm_at(ins[0], i, 4, false, 1e-5) * (0.5 + 0.25 * (double)k) + (double)k - 1.0;
}

static double ln_last_two(const xc_tensor_t* const* ins, int64_t i) {
  return layer_norm_at(ins[0], i, 12, false, 1e-3);
}

static double rms_gamma(const xc_tensor_t* const* ins, int64_t i) {
  return layer_norm_at(ins[0], i, 4, true, 1e-6) * (2.0 - 0.5 * (double)(i % 4));
}

static void test_layer_norm(void) {
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const ax: i64[1] = [-1]\n"
      "  const two: f32[] = [2.0]\n"
      "  const eps: f32[] = [1e-05]\n"
      "  const gamma: f32[4] = [0.5, 0.75, 1.0, 1.25]\n"
      "  const beta: f32[4] = [-1.0, 0.0, 1.0, 2.0]\n"
      "  mu = ReduceMean(x, ax) @n1\n"
      "  d = Sub(x, mu) @n2\n"
      "  sq = Pow(d, two) @n3\n"
      "  var = ReduceMean(sq, ax) @n4\n"
      "  ve = Add(var, eps) @n5\n"
      "  sd = Sqrt(ve) @n6\n"
      "  nrm = Div(d, sd) @n7\n"
      "  sc = Mul(gamma, nrm) @n8\n"
      "  y = Add(sc, beta) @n9\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, ln_gamma_beta);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  const xc_node_t* n = find_op(g, "LayerNormalization");
  CHECK(n != NULL);
  if (n) {
    CHECK_EQ_INT(n->num_inputs, 3);
    CHECK_EQ_INT(xc_node_attr_int(n, "axis"), 2);
    CHECK_NEAR(xc_node_attr_float(n, "epsilon"), 1e-5, 1e-10);
    CHECK_EQ_INT(n->prov.num_origins, 9);
  }
  xc_graph_destroy(g);
}

static void test_layer_norm_two_axes_reciprocal(void) {
  /* Mul(d, d), Reciprocal * Mul, over the last two axes, no gamma/beta:
   * a ones scale [3, 4] is made. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const ax: i64[2] = [2, 1]\n"
      "  const eps: f32[1] = [0.001]\n"
      "  mu = ReduceMean(x, ax)\n"
      "  d = Sub(x, mu)\n"
      "  sq = Mul(d, d)\n"
      "  var = ReduceMean(sq, ax)\n"
      "  ve = Add(eps, var)\n"
      "  sd = Sqrt(ve)\n"
      "  r = Reciprocal(sd)\n"
      "  y = Mul(r, d)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, ln_last_two);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  const xc_node_t* n = find_op(g, "LayerNormalization");
  CHECK(n != NULL);
  if (n) {
    CHECK_EQ_INT(xc_node_attr_int(n, "axis"), 1);
    const xc_value_t* s = n->inputs[1];
    CHECK(s->constant != NULL && s->rank == 2 && s->constant->numel == 12);
    if (s->constant) CHECK_NEAR(xc_tensor_get_f64(s->constant, 7), 1.0, 0);
  }
  xc_graph_destroy(g);
}

static double ln_beta_only(const xc_tensor_t* const* ins, int64_t i) {
  return layer_norm_at(ins[0], i, 4, false, 1e-5) + 0.5;
}

static void test_layer_norm_beta_only(void) {
  /* Only a shift: scale becomes a ones constant [4], beta is kept. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const ax: i64[1] = [-1]\n"
      "  const two: f32[] = [2.0]\n"
      "  const eps: f32[] = [1e-05]\n"
      "  const beta: f32[1, 4] = [0.5, 0.5, 0.5, 0.5]\n"
      "  mu = ReduceMean(x, ax)\n"
      "  d = Sub(x, mu)\n"
      "  sq = Pow(d, two)\n"
      "  var = ReduceMean(sq, ax)\n"
      "  ve = Add(var, eps)\n"
      "  sd = Sqrt(ve)\n"
      "  nrm = Div(d, sd)\n"
      "  y = Add(beta, nrm)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, ln_beta_only);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  const xc_node_t* n = find_op(g, "LayerNormalization");
  CHECK(n != NULL);
  if (n) {
    CHECK_EQ_INT(n->num_inputs, 3);
    CHECK(n->inputs[1]->constant != NULL && n->inputs[1]->rank == 1);
    CHECK_STR(n->inputs[2]->name, "beta");
  }
  xc_graph_destroy(g);
}

static const char* ln_variant(const char* axes, const char* extra) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "xir 1\ngraph g opset 18 {\n"
           "  input x: f32[2, 3, 4]\n"
           "  const ax: i64[1] = [%s]\n"
           "  const two: f32[] = [2.0]\n"
           "  const eps: f32[] = [1e-05]\n"
           "  mu = ReduceMean(x, ax)\n"
           "  d = Sub(x, mu)\n"
           "  sq = Pow(d, two)\n"
           "  var = ReduceMean(sq, ax)\n"
           "  ve = Add(var, eps)\n"
           "  sd = Sqrt(ve)\n"
           "  y = Div(d, sd)\n"
           "%s"
           "  output y\n"
           "}\n",
           axes, extra);
  return buf;
}

static void test_layer_norm_not_rewritten(void) {
  /* Reduction over a middle axis. */
  xc_graph_t* g = optimize(ln_variant("1", ""), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "LayerNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "RMSNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "ReduceMean"), 2);
    xc_graph_destroy(g);
  }
  /* The centered value is also an output: no LayerNormalization; d is
   * computed anyway, so the rest may become an RMS normalization of d. */
  g = optimize(ln_variant("-1", "  output d\n"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "LayerNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "Sub"), 1);
    CHECK_EQ_INT(count_op(g, "ReduceMean"), 1);
    xc_graph_destroy(g);
  }
  /* The variance is also an output. */
  g = optimize(ln_variant("-1", "  output var\n"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "LayerNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "RMSNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "Sqrt"), 1);
    xc_graph_destroy(g);
  }
  /* gamma varying along the batch axis is not a LayerNorm scale: the core
   * is rewritten, the Mul stays. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const ax: i64[1] = [-1]\n"
      "  const two: f32[] = [2.0]\n"
      "  const eps: f32[] = [1e-05]\n"
      "  const gamma: f32[2, 1, 4] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]\n"
      "  mu = ReduceMean(x, ax)\n"
      "  d = Sub(x, mu)\n"
      "  sq = Pow(d, two)\n"
      "  var = ReduceMean(sq, ax)\n"
      "  ve = Add(var, eps)\n"
      "  sd = Sqrt(ve)\n"
      "  nrm = Div(d, sd)\n"
      "  y = Mul(nrm, gamma)\n"
      "  output y\n"
      "}\n";
  g = optimize(text, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "LayerNormalization"), 1);
    CHECK_EQ_INT(count_op(g, "Mul"), 1);
    xc_graph_destroy(g);
  }
}

static void test_rms_norm(void) {
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 4]\n"
      "  const ax: i64[1] = [1]\n"
      "  const two: f32[] = [2.0]\n"
      "  const eps: f32[] = [1e-06]\n"
      "  const gamma: f32[4] = [2.0, 1.5, 1.0, 0.5]\n"
      "  sq = Pow(x, two)\n"
      "  ms = ReduceMean(sq, ax)\n"
      "  ve = Add(ms, eps)\n"
      "  r = Sqrt(ve)\n"
      "  nrm = Div(x, r)\n"
      "  y = Mul(nrm, gamma)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, rms_gamma);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    const xc_node_t* n = find_op(g, "RMSNormalization");
    CHECK(n != NULL);
    if (n) {
      CHECK_EQ_INT(xc_node_attr_int(n, "axis"), 1);
      CHECK_STR(n->inputs[1]->name, "gamma");
    }
    xc_graph_destroy(g);
  }
  /* Rsqrt-style: x * Reciprocal(Sqrt(..)), gamma on the left, x*x. */
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 4]\n"
      "  const ax: i64[1] = [-1]\n"
      "  const eps: f32[] = [1e-06]\n"
      "  const gamma: f32[4] = [2.0, 1.5, 1.0, 0.5]\n"
      "  sq = Mul(x, x)\n"
      "  ms = ReduceMean(sq, ax)\n"
      "  ve = Add(ms, eps)\n"
      "  r = Sqrt(ve)\n"
      "  inv = Reciprocal(r)\n"
      "  nrm = Mul(x, inv)\n"
      "  y = Mul(gamma, nrm)\n"
      "  output y\n"
      "}\n";
  g = optimize(text2, rms_gamma);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "RMSNormalization"), 1);
    xc_graph_destroy(g);
  }
  /* The mean square is used twice: nothing is rewritten. */
  const char* text3 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 4]\n"
      "  const ax: i64[1] = [-1]\n"
      "  const eps: f32[] = [1e-06]\n"
      "  sq = Mul(x, x)\n"
      "  ms = ReduceMean(sq, ax)\n"
      "  ve = Add(ms, eps)\n"
      "  r = Sqrt(ve)\n"
      "  nrm = Div(x, r)\n"
      "  y = Add(nrm, ms)\n"
      "  output y\n"
      "}\n";
  g = optimize(text3, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "RMSNormalization"), 0);
    CHECK_EQ_INT(count_op(g, "Sqrt"), 1);
    xc_graph_destroy(g);
  }
}

/* ---- Softmax ---------------------------------------------------------------- */

/* Softmax of input 0 ([rows, cols] row-major) along `axis`. */
static double softmax_at(const xc_tensor_t* x, int64_t i, int axis, bool log_of) {
  int64_t rows = x->dims[0], cols = x->dims[1];
  int64_t r = i / cols, c = i % cols;
  int64_t n = axis == 1 ? cols : rows;
  double mx = -INFINITY, sum = 0;
  for (int64_t k = 0; k < n; k++) {
    double v = xc_tensor_get_f64(x, axis == 1 ? r * cols + k : k * cols + c);
    mx = fmax(mx, v);
  }
  for (int64_t k = 0; k < n; k++)
    sum += exp(xc_tensor_get_f64(x, axis == 1 ? r * cols + k : k * cols + c) - mx);
  (void)rows;
  double v = xc_tensor_get_f64(x, i) - mx;
  return log_of ? v - log(sum) : exp(v) / sum;
}

static double softmax_last(const xc_tensor_t* const* ins, int64_t i) {
  return softmax_at(ins[0], i, 1, false);
}
static double softmax_first(const xc_tensor_t* const* ins, int64_t i) {
  return softmax_at(ins[0], i, 0, false);
}
static double log_softmax_last(const xc_tensor_t* const* ins, int64_t i) {
  return softmax_at(ins[0], i, 1, true);
}

static void test_softmax(void) {
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [-1]\n"
      "  m = ReduceMax(x, ax)\n"
      "  d = Sub(x, m)\n"
      "  e = Exp(d)\n"
      "  s = ReduceSum(e, ax)\n"
      "  y = Div(e, s)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, softmax_last);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    const xc_node_t* n = find_op(g, "Softmax");
    CHECK(n != NULL);
    if (n) {
      CHECK_EQ_INT(xc_node_attr_int(n, "axis"), 1);
      CHECK(n->inputs[0] == g->inputs[0]);
    }
    xc_graph_destroy(g);
  }
  /* Exp(x) / ReduceSum(Exp(x)) over axis 0. */
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [0]\n"
      "  e = Exp(x)\n"
      "  s = ReduceSum(e, ax)\n"
      "  y = Div(e, s)\n"
      "  output y\n"
      "}\n";
  g = optimize(text2, softmax_first);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    const xc_node_t* n = find_op(g, "Softmax");
    CHECK(n != NULL);
    if (n) CHECK_EQ_INT(xc_node_attr_int(n, "axis"), 0);
    xc_graph_destroy(g);
  }
  /* Reciprocal form. */
  const char* text4 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [1]\n"
      "  e = Exp(x)\n"
      "  s = ReduceSum(e, ax)\n"
      "  r = Reciprocal(s)\n"
      "  y = Mul(r, e)\n"
      "  output y\n"
      "}\n";
  g = optimize(text4, softmax_last);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "Softmax"), 1);
    xc_graph_destroy(g);
  }
  /* Log of it: LogSoftmax. */
  const char* text3 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [1]\n"
      "  m = ReduceMax(x, ax)\n"
      "  d = Sub(x, m)\n"
      "  e = Exp(d)\n"
      "  s = ReduceSum(e, ax)\n"
      "  p = Div(e, s)\n"
      "  y = Log(p)\n"
      "  output y\n"
      "}\n";
  g = optimize(text3, log_softmax_last);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "LogSoftmax"), 1);
    xc_graph_destroy(g);
  }
}

static void test_softmax_not_rewritten(void) {
  /* Exp result used a third time. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [-1]\n"
      "  e = Exp(x)\n"
      "  s = ReduceSum(e, ax)\n"
      "  p = Div(e, s)\n"
      "  y = Add(p, e)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Softmax"), 0);
    CHECK_EQ_INT(count_op(g, "Exp"), 1);
    xc_graph_destroy(g);
  }
  /* Sum over two axes is not a softmax. */
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[2] = [0, 1]\n"
      "  e = Exp(x)\n"
      "  s = ReduceSum(e, ax)\n"
      "  y = Div(e, s)\n"
      "  output y\n"
      "}\n";
  g = optimize(text2, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Softmax"), 0);
    xc_graph_destroy(g);
  }
  /* Softmax result also used outside the Log: no LogSoftmax. */
  const char* text3 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[3, 5]\n"
      "  const ax: i64[1] = [1]\n"
      "  e = Exp(x)\n"
      "  s = ReduceSum(e, ax)\n"
      "  p = Div(e, s)\n"
      "  l = Log(p)\n"
      "  y = Add(l, p)\n"
      "  output y\n"
      "}\n";
  g = optimize(text3, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Softmax"), 1);
    CHECK_EQ_INT(count_op(g, "LogSoftmax"), 0);
    xc_graph_destroy(g);
  }
}

/* ---- SiLU / SwiGLU -------------------------------------------------------- */

static double silu_f(double x) { return x / (1.0 + exp(-x)); }
static double silu_formula(const xc_tensor_t* const* ins, int64_t i) { return silu_f(in0(ins, i)); }
static double swiglu_halves(const xc_tensor_t* const* ins, int64_t i) {
  /* x is [2, 8] split along axis 1 into a = x[:, :4], b = x[:, 4:]. */
  int64_t r = i / 4, c = i % 4;
  return silu_f(xc_tensor_get_f64(ins[0], r * 8 + c)) * xc_tensor_get_f64(ins[0], r * 8 + 4 + c);
}

static void test_silu_swiglu(void) {
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 7]\n"
      "  s = Sigmoid(x)\n"
      "  y = Mul(s, x)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, silu_formula);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    const xc_node_t* n = find_op(g, "Silu");
    CHECK(n != NULL);
    if (n) CHECK_STR(n->domain, "xcomp");
    xc_graph_destroy(g);
  }
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 8]\n"
      "  a, b = Split(x) {axis: 1, num_outputs: 2}\n"
      "  s = Sigmoid(a)\n"
      "  h = Mul(a, s)\n"
      "  y = Mul(b, h)\n"
      "  output y\n"
      "}\n";
  g = optimize(text2, swiglu_halves);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 2);
    const xc_node_t* n = find_op(g, "SwiGLU");
    CHECK(n != NULL);
    if (n) {
      CHECK_STR(n->inputs[0]->name, "a");
      CHECK_STR(n->inputs[1]->name, "b");
      CHECK_EQ_INT(n->prov.num_origins, 3);
    }
    xc_graph_destroy(g);
  }
}

static void test_silu_not_rewritten(void) {
  /* Sigmoid used twice. */
  const char* text =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 7]\n"
      "  s = Sigmoid(x)\n"
      "  m = Mul(x, s)\n"
      "  y = Add(m, s)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Silu"), 0);
    CHECK_EQ_INT(count_op(g, "Sigmoid"), 1);
    xc_graph_destroy(g);
  }
  /* Sigmoid of another value; and Silu used twice keeps its SwiGLU apart. */
  const char* text2 =
      "xir 1\ngraph g opset 18 {\n"
      "  input x: f32[2, 8]\n"
      "  a, b = Split(x) {axis: 1, num_outputs: 2}\n"
      "  s = Sigmoid(a)\n"
      "  y = Mul(b, s)\n"
      "  s2 = Sigmoid(b)\n"
      "  h = Mul(b, s2)\n"
      "  z = Mul(h, a)\n"
      "  w = Add(z, h)\n"
      "  output y\n"
      "  output w\n"
      "}\n";
  g = optimize(text2, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Silu"), 1);
    CHECK_EQ_INT(count_op(g, "SwiGLU"), 0);
    CHECK_EQ_INT(count_op(g, "Sigmoid"), 1);
    xc_graph_destroy(g);
  }
}

/* ---- BatchNormalization folding --------------------------------------------- */

static const char* conv_bn_text(bool bias, const char* extra_out) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "xir 1\ngraph g opset 17 {\n"
           "  input x: f32[1, 2, 4, 4]\n"
           "  const w: f32[3, 2, 1, 1] = [0.5, -1.0, 2.0, 0.25, -0.75, 1.5]\n"
           "  const cb: f32[3] = [0.1, -0.2, 0.3]\n"
           "  const sc: f32[3] = [1.5, 0.5, -2.0]\n"
           "  const sh: f32[3] = [0.0, 1.0, -1.0]\n"
           "  const mean: f32[3] = [0.2, -0.4, 0.6]\n"
           "  const var: f32[3] = [1.0, 0.25, 4.0]\n"
           "  c = Conv(x, w%s) @conv\n"
           "  y = BatchNormalization(c, sc, sh, mean, var) {epsilon: 0.001} @bn\n"
           "  output y\n%s"
           "}\n",
           bias ? ", cb" : "", extra_out);
  return buf;
}

/* Conv 1x1 of conv_bn_text then BN, per output element. */
static double conv_bn_at(const xc_tensor_t* x, int64_t i, bool bias) {
  static const double w[3][2] = {{0.5, -1.0}, {2.0, 0.25}, {-0.75, 1.5}};
  static const double cb[3] = {0.1, -0.2, 0.3}, sc[3] = {1.5, 0.5, -2.0},
                      sh[3] = {0.0, 1.0, -1.0}, mean[3] = {0.2, -0.4, 0.6},
                      var[3] = {1.0, 0.25, 4.0};
  int64_t c = i / 16, p = i % 16;
  double v = w[c][0] * xc_tensor_get_f64(x, p) + w[c][1] * xc_tensor_get_f64(x, 16 + p);
  if (bias) v += cb[c];
  return (v - mean[c]) / sqrt(var[c] + 1e-3) * sc[c] + sh[c];
}
static double conv_bn_bias(const xc_tensor_t* const* ins, int64_t i) {
  return conv_bn_at(ins[0], i, true);
}
static double conv_bn_nobias(const xc_tensor_t* const* ins, int64_t i) {
  return conv_bn_at(ins[0], i, false);
}

static void test_bn_fold_conv(void) {
  xc_graph_t* g = optimize(conv_bn_text(true, ""), conv_bn_bias);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "BatchNormalization"), 0);
    const xc_node_t* n = find_op(g, "Conv");
    CHECK(n != NULL);
    if (n) {
      CHECK_EQ_INT(n->num_inputs, 3);
      CHECK_EQ_INT(n->prov.num_origins, 2);
      /* W'[1,0] = 2 * 0.5 / sqrt(0.25 + 0.001). */
      CHECK_NEAR(xc_tensor_get_f64(n->inputs[1]->constant, 2), 1.0 / sqrt(0.251), 1e-6);
    }
    CHECK_STR(g->outputs[0]->name, "y");
    xc_graph_destroy(g);
  }
  g = optimize(conv_bn_text(false, ""), conv_bn_nobias);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    const xc_node_t* n = find_op(g, "Conv");
    if (n) CHECK_EQ_INT(n->num_inputs, 3);
    xc_graph_destroy(g);
  }
  /* The conv result is also an output: no folding. */
  g = optimize(conv_bn_text(true, "  output c\n"), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "BatchNormalization"), 1);
    xc_graph_destroy(g);
  }
}

static void test_bn_fold_gemm(void) {
  /* transB = 1: B is [M=2, K=3]; C is [2]. */
  const char* text =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[4, 3]\n"
      "  const b: f32[2, 3] = [1.0, 0.5, -0.5, 2.0, -1.0, 0.25]\n"
      "  const c: f32[2] = [0.5, -0.5]\n"
      "  const sc: f32[2] = [2.0, 0.5]\n"
      "  const sh: f32[2] = [0.1, 0.2]\n"
      "  const mean: f32[2] = [1.0, -1.0]\n"
      "  const var: f32[2] = [0.5, 2.0]\n"
      "  h = Gemm(x, b, c) {transB: 1, beta: 2.0}\n"
      "  y = BatchNormalization(h, sc, sh, mean, var)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize(text, NULL);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "Gemm"), 1);
    xc_graph_destroy(g);
  }
  /* The Gemm result is also used by a Relu: kept. */
  const char* text2 =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[4, 3]\n"
      "  const b: f32[3, 2] = [1.0, 0.5, -0.5, 2.0, -1.0, 0.25]\n"
      "  const sc: f32[2] = [2.0, 0.5]\n"
      "  const sh: f32[2] = [0.1, 0.2]\n"
      "  const mean: f32[2] = [1.0, -1.0]\n"
      "  const var: f32[2] = [0.5, 2.0]\n"
      "  h = Gemm(x, b)\n"
      "  y = BatchNormalization(h, sc, sh, mean, var)\n"
      "  r = Relu(h)\n"
      "  w = Add(y, r)\n"
      "  output w\n"
      "}\n";
  g = optimize(text2, NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "BatchNormalization"), 1);
    xc_graph_destroy(g);
  }
  /* transB = 0 without C, alpha != 1. */
  const char* text3 =
      "xir 1\ngraph g opset 17 {\n"
      "  input x: f32[4, 3]\n"
      "  const b: f32[3, 2] = [1.0, 0.5, -0.5, 2.0, -1.0, 0.25]\n"
      "  const sc: f32[2] = [2.0, 0.5]\n"
      "  const sh: f32[2] = [0.1, 0.2]\n"
      "  const mean: f32[2] = [1.0, -1.0]\n"
      "  const var: f32[2] = [0.5, 2.0]\n"
      "  h = Gemm(x, b) {alpha: 0.5}\n"
      "  y = BatchNormalization(h, sc, sh, mean, var)\n"
      "  output y\n"
      "}\n";
  g = optimize(text3, NULL);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(count_op(g, "BatchNormalization"), 0);
    xc_graph_destroy(g);
  }
}

/* ---- real models ------------------------------------------------------------ */

/* Runs the model's data set 0 before and after the pipeline; checks both
 * against the stored reference outputs and each other. */
static void check_model(const char* name, const char* fused_op, const char* approximate,
                        const char* gone_op) {
  char dir[1024];
  snprintf(dir, sizeof dir, "tests/models/%s", name);
  struct stat st;
  if (stat(dir, &st) != 0) {
    printf("SKIP %s: %s not found\n", name, dir);
    return;
  }
  xc_onnx_testcase_t* tc = NULL;
  CHECK_OK(xc_onnx_testcase_load(dir, &tc));
  if (!tc) return;
  xc_graph_t* g = tc->graph;
  CHECK_OK(xc_graph_infer(g));
  CHECK(tc->num_sets >= 1 && g->num_outputs <= MAX_IO);
  if (tc->num_sets < 1 || g->num_outputs > MAX_IO) {
    xc_onnx_testcase_destroy(tc);
    return;
  }
  const xc_onnx_test_data_t* set = &tc->sets[0];
  xc_tensor_t* before[MAX_IO] = {0};
  xc_tensor_t* after[MAX_IO] = {0};
  CHECK_OK(xc_interp_run(g, NULL, set->num_inputs, (const xc_tensor_t* const*)set->inputs, before));
  int nodes_before = g->num_nodes;
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_OK(xc_passes_run(g, &o));
  CHECK_OK(xc_interp_run(g, NULL, set->num_inputs, (const xc_tensor_t* const*)set->inputs, after));
  int fused = count_op(g, fused_op);
  printf("%s: %d -> %d nodes, %d %s\n", name, nodes_before, g->num_nodes, fused, fused_op);
  CHECK(fused >= 1);
  if (gone_op) CHECK_EQ_INT(count_op(g, gone_op), 0);
  for (int i = 0; approximate && i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, fused_op) == 0)
      CHECK_STR(xc_node_attr_string(g->nodes[i], "approximate"), approximate);
  for (int k = 0; k < g->num_outputs; k++) {
    double e_ref = rel_l2(after[k], set->expected[k]);
    double e_self = rel_l2(after[k], before[k]);
    printf("  output %d: rel L2 vs reference %.3g, vs unoptimized %.3g\n", k, e_ref, e_self);
    CHECK(e_ref <= 1e-5);
    CHECK(e_self <= 1e-5);
    xc_tensor_destroy(before[k]);
    xc_tensor_destroy(after[k]);
  }
  xc_onnx_testcase_destroy(tc);
}

/* ---- tied weights: MatMul(A, Transpose(W)) with W read elsewhere too ---- */

static int count_constants_of(const xc_graph_t* g, int64_t numel) {
  int c = 0;
  for (int i = 0; i < g->num_values; i++)
    if (g->values[i]->constant && g->values[i]->constant->numel == numel) c++;
  return c;
}

static const char* tied_text(const char* xdims, bool tied) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "xir 1\ngraph g opset 17 {\n"
           "  input x: f32[%s]\n"
           "  input ids: i64[2, 3]\n"
           "  const w: f32[5, 4] = [0.5, -1.0, 0.25, 2.0, 1.5, 0.0, -0.5, 1.0, -2.0, 0.75, 1.25, -0.25,"
           " 0.125, 3.0, -1.5, 0.5, 1.0, 1.0, -1.0, 2.5]\n"
           "  wt = Transpose(w) {perm: [1, 0]}\n"
           "  y = MatMul(x, wt)\n"
           "  %s"
           "  output y\n%s"
           "}\n",
           xdims, tied ? "e = Gather(w, ids)\n" : "", tied ? "  output e\n" : "");
  return buf;
}

static void test_tied_weight_gemm(void) {
  /* GPT-2's tied LM head: activations [2, 3, 4] times the embedding [5, 4]
   * transposed, the embedding also gathered: a Gemm with transB on the one
   * copy of w between row views, no transposed copy. */
  xc_graph_t* g = optimize(tied_text("2, 3, 4", true), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Transpose"), 0);
    CHECK_EQ_INT(count_op(g, "MatMul"), 0);
    CHECK_EQ_INT(count_op(g, "Gemm"), 1);
    CHECK_EQ_INT(count_op(g, "Reshape"), 2);
    CHECK_EQ_INT(count_constants_of(g, 20), 1);
    const xc_node_t* gm = find_op(g, "Gemm");
    CHECK(gm && xc_node_attr_int(gm, "transB") == 1 && gm->inputs[1]->constant);
    CHECK(g->num_outputs == 2 && strcmp(g->outputs[0]->name, "y") == 0 && g->outputs[0]->rank == 3);
    xc_graph_destroy(g);
  }
  /* 2-D activations: the Gemm alone. */
  g = optimize(tied_text("6, 4", true), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Gemm"), 1);
    CHECK_EQ_INT(count_op(g, "Reshape"), 0);
    CHECK_EQ_INT(count_constants_of(g, 20), 1);
    xc_graph_destroy(g);
  }
  /* w read only through the transpose: folded as before (one transposed
   * constant, the MatMul kept). */
  g = optimize(tied_text("2, 3, 4", false), NULL);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Transpose"), 0);
    CHECK_EQ_INT(count_op(g, "MatMul"), 1);
    CHECK_EQ_INT(count_op(g, "Gemm"), 0);
    CHECK_EQ_INT(count_constants_of(g, 20), 1);
    xc_graph_destroy(g);
  }
}

static void test_models(void) {
  check_model("mlp", "Gelu", "none", "Erf");
  check_model("gpt2-tiny", "Gelu", "tanh", "Tanh");
  check_model("bert-tiny", "Gelu", "none", "Erf");
}

int main(void) {
  test_gelu_erf_exporter_form();
  test_gelu_erf_other_orders();
  test_gelu_tanh_forms();
  test_gelu_f16_and_constant_nodes();
  test_gelu_not_rewritten();
  test_layer_norm();
  test_layer_norm_two_axes_reciprocal();
  test_layer_norm_beta_only();
  test_layer_norm_not_rewritten();
  test_rms_norm();
  test_softmax();
  test_softmax_not_rewritten();
  test_silu_swiglu();
  test_silu_not_rewritten();
  test_bn_fold_conv();
  test_bn_fold_gemm();
  test_tied_weight_gemm();
  test_models();
  return xc_test_summary("test_patterns_basic");
}
