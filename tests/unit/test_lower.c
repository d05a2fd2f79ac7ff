/* Lowering: .xir graphs are planned, lowered to tiled kernels and run with
 * the tiled interpreter; results are compared with the graph interpreter
 * (rel-L2 <= 1e-5 for floats, exact for integers) over odd/prime sizes,
 * broadcasting, symbolic batch dims bound to 1 and 3, and several knob
 * choices per kernel. The four real models must lower completely and match
 * their stored outputs. */
#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/frontend.h"
#include "xcomp/fusion.h"
#include "xcomp/passes.h"
#include "xcomp/interp.h"
#include "xcomp/lower.h"
#include "xcomp/xir.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static double rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double compare(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel || a->dtype != b->dtype) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    if (!xc_dtype_is_float(a->dtype)) {
      if (xc_tensor_get_i64(a, i) != xc_tensor_get_i64(b, i)) return INFINITY;
      continue;
    }
    double x = xc_tensor_get_f64(a, i), y = xc_tensor_get_f64(b, i);
    if (isnan(x) != isnan(y)) return INFINITY;
    if (isnan(x)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return sqrt(num / (den > 0 ? den : 1));
}

/* Sets every knob of every kernel to candidate `choice` (mod its count),
 * falling back to the chosen value when that combination is invalid. */
static int set_knobs(xc_lowered_module_t* m, int choice) {
  int changed = 0;
  for (int i = 0; i < m->num_kernels; i++) {
    xc_lowered_kernel_t* lk = &m->kernels[i];
    int64_t v[64];
    int nk = lk->kernel->num_knobs < 64 ? lk->kernel->num_knobs : 64;
    for (int j = 0; j < nk; j++) {
      const xc_tiled_knob_t* kn = &lk->kernel->knobs[j];
      v[j] = kn->candidates[choice % kn->num_candidates];
    }
    xc_status_t s = xc_tiled_knobs_check(lk->kernel, v, NULL);
    if (s) {
      xc_status_free(s);
      continue;
    }
    for (int j = 0; j < nk; j++) lk->knobs[j] = v[j];
    changed++;
  }
  return changed;
}

/* Runs text with inputs of the given shapes (random data; ints in [0, 5)). */
static void check_graph(const char* what, const char* text, int nin, const int64_t shapes[][4],
                        const int* ranks) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), what, NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_tensor_t* ins[8] = {0};
  for (int i = 0; i < nin; i++) {
    CHECK_OK(xc_tensor_create(g->inputs[i]->dtype, ranks[i], shapes[i], &ins[i]));
    for (int64_t e = 0; ins[i] && e < ins[i]->numel; e++) {
      if (xc_dtype_is_float(ins[i]->dtype))
        xc_tensor_set_f64(ins[i], e, rnd() * 2);
      else if (ins[i]->dtype == XC_BOOL)
        xc_tensor_set_i64(ins[i], e, rnd() > 0);
      else
        xc_tensor_set_i64(ins[i], e, (int64_t)((rnd() + 1) * 2.5));
    }
  }
  xc_tensor_t* ref[8] = {0};
  CHECK_OK(xc_interp_run(g, NULL, nin, (const xc_tensor_t* const*)ins, ref));
  xc_fusion_plan_t* plan = NULL;
  xc_lowered_module_t* m = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  if (plan) CHECK_OK(xc_lower(g, plan, NULL, &m));
  for (int choice = -1; m && choice < 4; choice++) {
    if (choice >= 0) CHECK_EQ_INT(set_knobs(m, choice), m->num_kernels);
    xc_tensor_t* got[8] = {0};
    CHECK_OK(xc_lowered_run_interp(m, nin, (const xc_tensor_t* const*)ins, got));
    for (int o = 0; o < g->num_outputs; o++) {
      double err = compare(got[o], ref[o]);
      if (!(err <= 1e-5)) fprintf(stderr, "%s: output %d knob choice %d: error %g\n", what, o, choice, err);
      CHECK(err <= 1e-5);
      xc_tensor_destroy(got[o]);
    }
  }
  for (int o = 0; o < 8; o++) xc_tensor_destroy(ref[o]);
  for (int i = 0; i < nin; i++) xc_tensor_destroy(ins[i]);
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

#define HDR "xir 1\ngraph g opset 23 {\n"

static void test_elementwise(void) {
  const char* t = HDR
      "  input a: f32[7, 1, 13]\n  input b: f32[5, 13]\n  input c: f32[1]\n"
      "  s = Add(a, b)\n  m = Mul(s, c)\n  e = Exp(m)\n  t = Tanh(e)\n  q = Sigmoid(t)\n"
      "  r = Relu(s)\n  p = Greater(r, c)\n  w = Where(p, q, s)\n  y = Sub(w, b)\n  output y\n}\n";
  const int64_t sh[3][4] = {{7, 1, 13}, {5, 13}, {1}};
  const int rk[3] = {3, 2, 1};
  check_graph("ew-chain", t, 3, sh, rk);
  const char* t2 = HDR
      "  input a: f32[7, 1, 13]\n  input b: f32[5, 13]\n  input c: f32[1]\n"
      "  s = Add(a, b)\n  m = Mul(s, c)\n  e = Erf(m)\n  g = Gelu(s)\n  y = Div(e, g)\n"
      "  z = Max(y, m)\n  output z\n}\n";
  check_graph("ew", t2, 3, sh, rk);
  const char* t3 = HDR
      "  input a: i64[3, 5]\n  input b: i64[5]\n"
      "  s = Add(a, b)\n  m = Mul(s, b)\n  e = Greater(m, a)\n  y = Where(e, m, a)\n  output y\n}\n";
  const int64_t sh3[2][4] = {{3, 5}, {5}};
  const int rk3[2] = {2, 1};
  check_graph("ew-int", t3, 2, sh3, rk3);
}

static void test_symbolic(void) {
  const char* t = HDR
      "  input a: f32[batch, 11]\n  input b: f32[11]\n"
      "  s = Add(a, b)\n  y = Softmax(s) {axis: -1}\n  output y\n}\n";
  for (int64_t bt = 1; bt <= 3; bt += 2) {
    const int64_t sh[2][4] = {{bt, 11}, {11}};
    const int rk[2] = {2, 1};
    check_graph("symbolic-softmax", t, 2, sh, rk);
  }
  const char* t2 = HDR
      "  input a: f32[batch, 5, 7]\n  input w: f32[7, 3]\n"
      "  y = MatMul(a, w)\n  z = Relu(y)\n  output z\n}\n";
  for (int64_t bt = 1; bt <= 3; bt += 2) {
    const int64_t sh[2][4] = {{bt, 5, 7}, {7, 3}};
    const int rk[2] = {3, 2};
    check_graph("symbolic-matmul", t2, 2, sh, rk);
  }
}

static void test_gemm(void) {
  const char* t = HDR
      "  input a: f32[37, 29]\n  input b: f32[41, 29]\n  input c: f32[41]\n"
      "  y = Gemm(a, b, c) {transB: 1, alpha: 0.5, beta: 2.0}\n  z = Gelu(y)\n  output z\n}\n";
  const int64_t sh[3][4] = {{37, 29}, {41, 29}, {41}};
  const int rk[3] = {2, 2, 1};
  check_graph("gemm", t, 3, sh, rk);
  const char* t2 = HDR
      "  input a: f32[2, 1, 5, 7]\n  input b: f32[3, 7, 11]\n  y = MatMul(a, b)\n  output y\n}\n";
  const int64_t sh2[2][4] = {{2, 1, 5, 7}, {3, 7, 11}};
  const int rk2[2] = {4, 3};
  check_graph("matmul-bcast", t2, 2, sh2, rk2);
  const char* t3 = HDR "  input a: f32[7]\n  input b: f32[3, 7, 5]\n  y = MatMul(a, b)\n  output y\n}\n";
  const int64_t sh3[2][4] = {{7}, {3, 7, 5}};
  const int rk3[2] = {1, 3};
  check_graph("matmul-1d", t3, 2, sh3, rk3);
}

static void test_reduce(void) {
  const char* t = HDR
      "  input x: f32[5, 13, 3]\n  input r: f32[5, 13, 3]\n  input g: f32[13, 3]\n  input b: f32[3]\n"
      "  h = Add(x, r)\n  ln = LayerNormalization(h, g, b) {axis: 1, epsilon: 1e-5}\n  y = Relu(ln)\n"
      "  output y\n}\n";
  const int64_t sh[4][4] = {{5, 13, 3}, {5, 13, 3}, {13, 3}, {3}};
  const int rk[4] = {3, 3, 2, 1};
  check_graph("layernorm", t, 4, sh, rk);
  const char* t2 = HDR
      "  input x: f32[3, 7, 5, 2]\n  const ax: i64[2] = [1, 3]\n"
      "  s = ReduceSum(x, ax) {keepdims: 0}\n  m = ReduceMax(x, ax) {keepdims: 1}\n"
      "  l = LogSoftmax(x) {axis: 2}\n  output s\n  output m\n  output l\n}\n";
  const int64_t sh2[1][4] = {{3, 7, 5, 2}};
  const int rk2[1] = {4};
  check_graph("reduce", t2, 1, sh2, rk2);
}

static void test_conv(void) {
  const char* t = HDR
      "  input x: f32[2, 4, 9, 11]\n  input w: f32[6, 2, 3, 2]\n  input b: f32[6]\n"
      "  c = Conv(x, w, b) {group: 2, pads: [1, 0, 2, 1], strides: [2, 1], dilations: [1, 2]}\n"
      "  r = Relu(c)\n  p = MaxPool(r) {kernel_shape: [2, 3], strides: [2, 2], pads: [0, 1, 1, 1]}\n"
      "  a = AveragePool(r) {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}\n  output p\n  output a\n}\n";
  const int64_t sh[3][4] = {{2, 4, 9, 11}, {6, 2, 3, 2}, {6}};
  const int rk[3] = {4, 4, 1};
  check_graph("conv", t, 3, sh, rk);
}

static void test_movement(void) {
  const char* t = HDR
      "  input x: f32[3, 5, 7]\n  input y: f32[3, 2, 7]\n  input i: i64[4]\n"
      "  t = Transpose(x) {perm: [2, 0, 1]}\n  c = Concat(x, y) {axis: 1}\n"
      "  g = Gather(c, i) {axis: 1}\n  output t\n  output g\n}\n";
  const int64_t sh[3][4] = {{3, 5, 7}, {3, 2, 7}, {4}};
  const int rk[3] = {3, 3, 1};
  check_graph("movement", t, 3, sh, rk);
}

static void test_attention(void) {
  const char* t = HDR
      "  input q: f32[2, 4, 13, 8]\n  input k: f32[2, 2, 13, 8]\n  input v: f32[2, 2, 13, 8]\n"
      "  y = Attention(q, k, v) {is_causal: 1}\n  output y\n}\n";
  const int64_t sh[3][4] = {{2, 4, 13, 8}, {2, 2, 13, 8}, {2, 2, 13, 8}};
  const int rk[3] = {4, 4, 4};
  check_graph("attention-gqa-causal", t, 3, sh, rk);
}

static void test_more_reductions(void) {
  const char* t = HDR
      "  input x: f32[4, 7, 3]\n  const ax: i64[] = 1\n"
      "  a = ArgMax(x) {axis: 1, keepdims: 0}\n  b = ArgMin(x) {axis: 2, select_last_index: 1}\n"
      "  h = Hardmax(x) {axis: 1}\n  c = CumSum(x, ax) {exclusive: 1, reverse: 1}\n"
      "  l = LpNormalization(x) {axis: 1, p: 1}\n  g = GlobalAveragePool(x)\n  m = GlobalMaxPool(x)\n"
      "  output a\n  output b\n  output h\n  output c\n  output l\n  output g\n  output m\n}\n";
  const int64_t sh[1][4] = {{4, 7, 3}};
  const int rk[1] = {3};
  check_graph("more-reductions", t, 1, sh, rk);
  const char* t2 = HDR
      "  input x: f32[3, 11]\n  input g: f32[11]\n  input b: f32[11]\n"
      "  y, mean, rstd = LayerNormalization(x, g, b) {axis: -1, epsilon: 1e-3}\n"
      "  r = RMSNormalization(x, g) {axis: -1}\n"
      "  output y\n  output mean\n  output rstd\n  output r\n}\n";
  const int64_t sh2[3][4] = {{3, 11}, {11}, {11}};
  const int rk2[3] = {2, 1, 1};
  check_graph("norm-stats", t2, 3, sh2, rk2);
}

static void test_more_movement(void) {
  const int64_t sh[1][4] = {{5, 6}};
  const int rk[1] = {2};
  const char* t2 = HDR
      "  input x: f32[5, 6]\n  const sp: i64[2] = [2, 4]\n  const st: i64[2] = [4, 1]\n"
      "  const en: i64[2] = [0, 6]\n  const ax: i64[2] = [0, 1]\n  const stp: i64[2] = [-2, 2]\n"
      "  const pads: i64[4] = [1, 0, 0, 2]\n  const pv: f32[] = 1.5\n  const shp: i64[3] = [2, 5, 6]\n"
      "  const reps: i64[2] = [2, 3]\n  const shp2: i64[2] = [30, 6]\n"
      "  a, b = Split(x, sp) {axis: 1}\n  s = Slice(x, st, en, ax, stp)\n  p = Pad(x, pads, pv)\n"
      "  e = Expand(x, shp)\n  t = Tile(x, reps)\n  u = Trilu(x) {upper: 0}\n"
      "  r = Reshape(t, shp2)\n  q = Relu(r)\n"
      "  output a\n  output b\n  output s\n  output p\n  output e\n  output u\n  output q\n}\n";
  check_graph("more-movement", t2, 1, sh, rk);
}

static void test_attention_masks(void) {
  const char* t = HDR
      "  input q: f32[2, 3, 5, 6]\n  input k: f32[2, 3, 7, 6]\n  input v: f32[2, 3, 7, 5]\n"
      "  input m: bool[5, 7]\n  input f: f32[2, 1, 5, 7]\n"
      "  y = Attention(q, k, v, m) {scale: 0.3}\n  z = Attention(q, k, v, f) {softcap: 2.0}\n"
      "  output y\n  output z\n}\n";
  const int64_t sh[5][4] = {{2, 3, 5, 6}, {2, 3, 7, 6}, {2, 3, 7, 5}, {5, 7}, {2, 1, 5, 7}};
  const int rk[5] = {4, 4, 4, 2, 4};
  check_graph("attention-masks", t, 5, sh, rk);
  const char* t2 = HDR
      "  input q: f32[2, 5, 12]\n  input k: f32[2, 7, 6]\n  input v: f32[2, 7, 8]\n"
      "  y = Attention(q, k, v) {q_num_heads: 4, kv_num_heads: 2}\n  output y\n}\n";
  const int64_t sh2[3][4] = {{2, 5, 12}, {2, 7, 6}, {2, 7, 8}};
  const int rk2[3] = {3, 3, 3};
  check_graph("attention-3d", t2, 3, sh2, rk2);
}

/* Structure: views are alias steps, symbolic dims become scalar params. */
static void test_structure(void) {
  const char* t = HDR
      "  input x: f32[n, 6]\n  const shp: i64[2] = [-1, 3]\n"
      "  r = Reshape(x, shp)\n  y = Neg(r)\n  output y\n}\n";
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(t, strlen(t), "s", NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_fusion_plan_t* plan = NULL;
  xc_lowered_module_t* m = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  if (plan) CHECK_OK(xc_lower(g, plan, NULL, &m));
  if (m) {
    CHECK_EQ_INT(m->num_kernels, 1);
    int aliases = 0, symbolic = 0;
    for (int i = 0; i < m->num_steps; i++) aliases += m->steps[i].kind == XC_STEP_ALIAS;
    CHECK_EQ_INT(aliases, 1);
    const xc_lowered_kernel_t* lk = &m->kernels[0];
    for (int i = 0; i < lk->num_params; i++)
      if (!lk->param_values[i]) symbolic += !xc_dim_is_static(lk->param_dims[i]);
    CHECK(symbolic >= 1);
    /* n = 5: a run with 5 rows of 6 */
    int64_t d[2] = {5, 6};
    xc_tensor_t* x = NULL;
    CHECK_OK(xc_tensor_create(XC_F32, 2, d, &x));
    for (int64_t i = 0; x && i < x->numel; i++) xc_tensor_set_f64(x, i, (double)i);
    xc_tensor_t* y = NULL;
    CHECK_OK(xc_lowered_run_interp(m, 1, (const xc_tensor_t* const*)&x, &y));
    if (y) {
      CHECK_EQ_INT(y->rank, 2);
      CHECK_EQ_INT(y->dims[0], 10);
      CHECK_NEAR(xc_tensor_get_f64(y, 29), -29.0, 0);
    }
    xc_tensor_destroy(y);
    xc_tensor_destroy(x);
  }
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

static void test_unsupported(void) {
  const char* t = HDR "  input x: f32[3]\n  y = Acos(x)\n  output y\n}\n";
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(t, strlen(t), "u", NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_fusion_plan_t* plan = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  xc_lowered_module_t* m = NULL;
  xc_status_t s = xc_lower(g, plan, NULL, &m);
  CHECK(s != NULL && xc_status_code(s) == XC_UNSUPPORTED);
  CHECK(s && strstr(xc_status_message(s), "Acos") != NULL);
  CHECK(m == NULL);
  xc_status_free(s);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

static void test_models(void) {
  const char* models[] = {"tests/models/mlp", "tests/models/cnn", "tests/models/gpt2-tiny",
                          "tests/models/bert-tiny"};
  xc_conform_options_t o;
  xc_conform_options_init(&o);
  o.target = "tiled";
  o.models = true;
  for (int i = 0; i < 4; i++) {
    char* detail = NULL;
    xc_conform_verdict_t v = xc_conform_run_case(models[i], &o, &detail);
    if (v != XC_CONFORM_PASS) fprintf(stderr, "%s: %s\n", models[i], detail ? detail : "");
    CHECK_EQ_INT(v, XC_CONFORM_PASS);
    free(detail);
  }
}

/* The models lowered for GPU and CPU limits: every chosen knob set fits. */
static void test_models_limits(void) {
  const char* models[] = {"tests/models/mlp/model.onnx", "tests/models/cnn/model.onnx",
                          "tests/models/gpt2-tiny/model.onnx", "tests/models/bert-tiny/model.onnx"};
  for (int i = 0; i < 4; i++) {
    xc_graph_t* g = NULL;
    CHECK_OK(xc_load_model(models[i], &g));
    if (!g) continue;
    CHECK_OK(xc_graph_infer(g));
    xc_pass_options_t po;
    xc_pass_options_init(&po);
    CHECK_OK(xc_passes_run(g, &po));
    xc_fusion_plan_t* plan = NULL;
    CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
    for (int l = 0; plan && l < 2; l++) {
      xc_tiled_limits_t lim;
      if (l == 0) xc_tiled_limits_init_gpu(&lim);
      else xc_tiled_limits_init_cpu(&lim);
      xc_lowered_module_t* m = NULL;
      CHECK_OK(xc_lower(g, plan, &lim, &m));
      if (!m) continue;
      CHECK_EQ_INT(m->num_kernels, xc_fusion_plan_kernel_count(plan));
      for (int k = 0; k < m->num_kernels; k++) CHECK_OK(xc_tiled_knobs_check(m->kernels[k].kernel, m->kernels[k].knobs, &lim));
      xc_lowered_module_destroy(m);
    }
    xc_fusion_plan_destroy(plan);
    xc_graph_destroy(g);
  }
}

int main(void) {
  test_elementwise();
  test_symbolic();
  test_gemm();
  test_reduce();
  test_conv();
  test_movement();
  test_attention();
  test_more_reductions();
  test_more_movement();
  test_attention_masks();
  test_structure();
  test_unsupported();
  test_models();
  test_models_limits();
  return xc_test_summary("test_lower");
}
