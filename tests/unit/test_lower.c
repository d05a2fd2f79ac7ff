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
#include "xcomp/tensor_io.h"
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

/* Gives the kernel the knob values v (its first min(num_knobs, 64)) when
 * they pass its constraints under limits; false (unchanged) otherwise. */
static bool apply_knobs(xc_lowered_kernel_t* lk, const int64_t* v, const xc_tiled_limits_t* limits) {
  xc_status_t s = xc_tiled_knobs_check(lk->kernel, v, limits);
  if (s) {
    xc_status_free(s);
    return false;
  }
  int nk = lk->kernel->num_knobs < 64 ? lk->kernel->num_knobs : 64;
  for (int j = 0; j < nk; j++) lk->knobs[j] = v[j];
  return true;
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
    changed += apply_knobs(lk, v, NULL);
  }
  return changed;
}

/* Parses, infers, plans and lowers text for `limits` (NULL: the lowering's
 * defaults); *g and *plan are set for the caller to free with the module
 * (lowered_free). NULL when a step failed (the failure is checked). */
static xc_lowered_module_t* lower_text(const char* what, const char* text, const xc_tiled_limits_t* limits,
                                       xc_graph_t** g, xc_fusion_plan_t** plan) {
  xc_lowered_module_t* m = NULL;
  *g = NULL;
  *plan = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), what, NULL, g));
  if (*g) CHECK_OK(xc_graph_infer(*g));
  if (*g) CHECK_OK(xc_fusion_plan_build(*g, NULL, plan));
  if (*plan) CHECK_OK(xc_lower(*g, *plan, limits, &m));
  return m;
}

static void lowered_free(xc_graph_t* g, xc_fusion_plan_t* plan, xc_lowered_module_t* m) {
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

/* Runs text with inputs of the given shapes (random data; ints in [0, 5)),
 * lowered for `limits` (NULL: the lowering's defaults). */
static void check_graph_for(const char* what, const char* text, int nin, const int64_t shapes[][4],
                            const int* ranks, const xc_tiled_limits_t* limits);

static void check_graph(const char* what, const char* text, int nin, const int64_t shapes[][4],
                        const int* ranks) {
  check_graph_for(what, text, nin, shapes, ranks, NULL);
}

static void check_graph_for(const char* what, const char* text, int nin, const int64_t shapes[][4],
                            const int* ranks, const xc_tiled_limits_t* limits) {
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
  if (plan) CHECK_OK(xc_lower(g, plan, limits, &m));
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
  /* symbolic batch through conv, pooling, attention, gather and layernorm */
  const char* t3 = HDR
      "  input x: f32[batch, 3, 7, 6]\n  input w: f32[4, 3, 3, 3]\n  input q: f32[batch, 2, 5, 4]\n"
      "  input e: f32[11, 6]\n  input ids: i64[batch, 5]\n  input g: f32[6]\n"
      "  c = Conv(x, w) {pads: [1, 1, 1, 1]}\n  r = Relu(c)\n  p = MaxPool(r) {kernel_shape: [2, 2], strides: [2, 2]}\n"
      "  a = Attention(q, q, q) {is_causal: 1}\n  h = Gather(e, ids) {axis: 0}\n"
      "  l = LayerNormalization(h, g) {axis: -1}\n  output p\n  output a\n  output l\n}\n";
  for (int64_t bt = 1; bt <= 3; bt += 2) {
    const int64_t sh[6][4] = {{bt, 3, 7, 6}, {4, 3, 3, 3}, {bt, 2, 5, 4}, {11, 6}, {bt, 5}, {6}};
    const int rk[6] = {4, 4, 4, 2, 2, 1};
    check_graph("symbolic-mixed", t3, 6, sh, rk);
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
  /* CPU limits: 1 and 3 rows take a BLOCK_M of their own (the default),
   * every knob choice against the interpreter */
  const char* t4 = HDR
      "  input a: f32[1, 40]\n  input b: f32[40, 20]\n  input c: f32[3, 40]\n"
      "  y = MatMul(a, b)\n  z = MatMul(c, b)\n  output y\n  output z\n}\n";
  const int64_t sh4[3][4] = {{1, 40}, {40, 20}, {3, 40}};
  const int rk4[3] = {2, 2, 2};
  xc_tiled_limits_t cpu;
  xc_tiled_limits_init_cpu(&cpu);
  check_graph_for("matmul-few-rows-cpu", t4, 3, sh4, rk4, &cpu);
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
  /* On a CPU a sum or mean over a block of dims followed by kept dims is a
   * column reduction ([O, R, I]: tiles of rows of I, summed down the rows):
   * inner extents that some BLOCK_C divides (24) and that none does (20,
   * masked), keepdims on and off, an epilogue after it; every knob choice. */
  const char* t3 = HDR
      "  input x: f32[2, 5, 3, 24]\n  input z: f32[3, 37, 20]\n"
      "  const a12: i64[2] = [1, 2]\n  const a1: i64[1] = [1]\n"
      "  m = ReduceMean(x, a12) {keepdims: 1}\n  r = Relu(m)\n"
      "  s = ReduceSum(z, a1) {keepdims: 0}\n  output r\n  output s\n}\n";
  const int64_t sh3[2][4] = {{2, 5, 3, 24}, {3, 37, 20}};
  const int rk3[2] = {4, 3};
  xc_tiled_limits_t cpu;
  xc_tiled_limits_init_cpu(&cpu);
  check_graph_for("reduce-columns-cpu", t3, 2, sh3, rk3, &cpu);
}

typedef struct {
  int accesses, unbounded;
} bounds_seen_t;

static void count_unbounded(void* ctx, const xc_tiled_access_t* a) {
  bounds_seen_t* s = ctx;
  s->accesses++;
  s->unbounded += !a->never && !a->bounded;
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
  /* Conv is an implicit GEMM (pixels x channels of a group, a dot per
   * reduction chunk) unless the device has matrix instructions for the
   * dtype; then the direct form. Both forms against the interpreter. */
  xc_tiled_limits_t mma;
  xc_tiled_limits_init_gpu(&mma);
  mma.value[XC_TILED_LIMIT_MMA] |= (int64_t)1 << XC_F32;
  check_graph_for("conv-direct", t, 3, sh, rk, &mma);
  const char* one = HDR
      "  input x: f32[3, 5, 7, 6]\n  input w: f32[20, 5, 3, 3]\n"
      "  y = Conv(x, w) {pads: [1, 1, 1, 1]}\n  output y\n}\n";
  const int64_t sh1[2][4] = {{3, 5, 7, 6}, {20, 5, 3, 3}};
  const int rk1[2] = {4, 4};
  check_graph("conv-gemm-tail", one, 2, sh1, rk1);
  /* The channels-last composites: ConvNHWC with [M, k..., C/group] (OHWI)
   * and [k..., C/group, M] (HWIO) weights, grouped and depthwise, and the
   * pools' tap loops, without limits and with a CPU's (whose conv tiles
   * take the reduction, 24, and the channel count, 48, whole). */
  const char* nhwc = HDR
      "  input x: f32[2, 9, 11, 4]\n  input w: f32[6, 3, 2, 2]\n  input v: f32[3, 2, 2, 6]\n  input b: f32[6]\n"
      "  input dw: f32[4, 3, 3, 1]\n  input dv: f32[3, 3, 1, 4]\n  input p: f32[48, 1, 1, 4]\n"
      "  c = xcomp::ConvNHWC(x, w, b) {group: 2, pads: [1, 0, 2, 1], strides: [2, 1], dilations: [1, 2]}\n"
      "  d = xcomp::ConvNHWC(x, v, b) {group: 2, pads: [1, 0, 2, 1], strides: [2, 1], dilations: [1, 2], "
      "weight_layout: \"HWIO\"}\n"
      "  e = xcomp::ConvNHWC(x, dw) {group: 4, pads: [1, 1, 1, 1]}\n"
      "  f = xcomp::ConvNHWC(x, dv) {group: 4, pads: [1, 1, 1, 1], strides: [2, 2], weight_layout: \"HWIO\"}\n"
      "  h = xcomp::ConvNHWC(x, p)\n"
      "  m = xcomp::MaxPoolNHWC(x) {kernel_shape: [2, 3], strides: [2, 2], pads: [0, 1, 1, 1]}\n"
      "  a = xcomp::AveragePoolNHWC(x) {kernel_shape: [3, 3], pads: [1, 1, 1, 1], count_include_pad: 1}\n"
      "  q = xcomp::AveragePoolNHWC(x) {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}\n"
      "  output c\n  output d\n  output e\n  output f\n  output h\n  output m\n  output a\n  output q\n}\n";
  const int64_t shn[7][4] = {{2, 9, 11, 4}, {6, 3, 2, 2}, {3, 2, 2, 6}, {6}, {4, 3, 3, 1}, {3, 3, 1, 4},
                             {48, 1, 1, 4}};
  const int rkn[7] = {4, 4, 4, 1, 4, 4, 4};
  check_graph("conv-nhwc", nhwc, 7, shn, rkn);
  xc_tiled_limits_t cpu;
  xc_tiled_limits_init_cpu(&cpu);
  check_graph_for("conv-nhwc-cpu", nhwc, 7, shn, rkn, &cpu);
  const char* wide = HDR
      "  input x: f32[1, 6, 5, 24]\n  input w: f32[48, 1, 1, 24]\n"
      "  y = xcomp::ConvNHWC(x, w)\n  output y\n}\n";
  const int64_t shw[2][4] = {{1, 6, 5, 24}, {48, 1, 1, 24}};
  const int rkw[2] = {4, 4};
  check_graph_for("conv-nhwc-cpu-whole", wide, 2, shw, rkw, &cpu);
  /* One group, HWIO, on the cpu: the reduction walks the window row by row
   * (a loop over the leading window dims around the K loop over the last
   * dim's taps and channels, KW * C = 10, a contiguous run of the input);
   * dilated leading dim, asymmetric pads, strides, and a 1-D conv. Every
   * knob choice against the interpreter, the input tile's offset bounded by
   * its mask, and BLOCK_K offering the row's 10. */
  const char* rows = HDR
      "  input x: f32[2, 9, 11, 5]\n  input u: f32[3, 2, 5, 6]\n  input b: f32[6]\n"
      "  input z: f32[2, 13, 3]\n  input v: f32[4, 3, 7]\n"
      "  c = xcomp::ConvNHWC(x, u, b) {pads: [1, 0, 2, 1], strides: [2, 3], dilations: [2, 1], "
      "weight_layout: \"HWIO\"}\n"
      "  d = xcomp::ConvNHWC(z, v) {pads: [2, 1], strides: [2], weight_layout: \"HWIO\"}\n"
      "  output c\n  output d\n}\n";
  const int64_t shr[5][4] = {{2, 9, 11, 5}, {3, 2, 5, 6}, {6}, {2, 13, 3}, {4, 3, 7}};
  const int rkr[5] = {4, 4, 1, 3, 3};
  check_graph_for("conv-nhwc-cpu-rows", rows, 5, shr, rkr, &cpu);
  /* One input channel: the row offset iw * C + c is W's index (an offset
   * skips the channel dim of extent 1, which dropped it: every tap read the
   * row's first pixel) */
  const char* rows1 = HDR
      "  input x: f32[2, 8, 8, 1]\n  input u: f32[3, 3, 1, 4]\n"
      "  c = xcomp::ConvNHWC(x, u) {pads: [2, 0, 1, 1], strides: [2, 1], dilations: [2, 1], "
      "weight_layout: \"HWIO\"}\n"
      "  output c\n}\n";
  const int64_t shr1[2][4] = {{2, 8, 8, 1}, {3, 3, 1, 4}};
  const int rkr1[2] = {4, 4};
  check_graph_for("conv-nhwc-cpu-rows-one-channel", rows1, 2, shr1, rkr1, &cpu);
  {
    xc_graph_t* g;
    xc_fusion_plan_t* plan;
    xc_lowered_module_t* m = lower_text("conv-rows", rows, &cpu, &g, &plan);
    for (int i = 0; m && i < m->num_kernels; i++) {
      const xc_tiled_kernel_t* kk = m->kernels[i].kernel;
      bool row_k = false;
      for (int j = 0; j < kk->num_knobs; j++)
        if (!strncmp(kk->knobs[j].name, "BLOCK_K", 7))
          for (int q = 0; q < kk->knobs[j].num_candidates; q++) row_k |= kk->knobs[j].candidates[q] == 10;
      if (i == 0) CHECK(row_k); /* the 2-D conv's row: KW * C = 2 * 5 */
      int64_t grid[3] = {1, 1, 1};
      for (int a = 0; a < kk->grid_rank; a++) CHECK_OK(xc_texpr_eval(kk->grid[a], m->kernels[i].knobs, NULL, &cpu, &grid[a]));
      bounds_seen_t seen = {0, 0};
      CHECK_OK(xc_tiled_accesses(kk, m->kernels[i].knobs, NULL, grid, count_unbounded, &seen));
      CHECK(seen.accesses >= 3);
      CHECK_EQ_INT(seen.unbounded, 0);
    }
    lowered_free(g, plan, m);
  }
  /* Small convs on the cpu offer the tiles the cpu scheduler splits a
   * one-program kernel with (half the 36 pixels, half the 112 channels,
   * and the row form's pixels): each candidate of each knob, the others at
   * their defaults, against the interpreter. */
  const char* small = HDR
      "  input x: f32[1, 6, 6, 40]\n  input w: f32[1, 1, 40, 32]\n  input b: f32[32]\n"
      "  input z: f32[1, 3, 3, 64]\n  input v: f32[1, 1, 64, 112]\n  input u: f32[3, 3, 40, 24]\n"
      "  c = xcomp::ConvNHWC(x, w, b) {weight_layout: \"HWIO\"}\n  r = Relu(c)\n"
      "  d = xcomp::ConvNHWC(z, v) {weight_layout: \"HWIO\"}\n"
      "  e = xcomp::ConvNHWC(x, u) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n"
      "  output r\n  output d\n  output e\n}\n";
  {
    const int64_t shs[6][4] = {{1, 6, 6, 40}, {1, 1, 40, 32}, {32}, {1, 3, 3, 64}, {1, 1, 64, 112}, {3, 3, 40, 24}};
    const int rks[6] = {4, 4, 1, 4, 4, 4};
    xc_graph_t* g;
    xc_fusion_plan_t* plan;
    xc_lowered_module_t* m = lower_text("conv-small-cpu", small, &cpu, &g, &plan);
    xc_tensor_t* ins[6] = {0};
    xc_tensor_t* ref[3] = {0};
    for (int i = 0; m && i < 6; i++) {
      CHECK_OK(xc_tensor_create(XC_F32, rks[i], shs[i], &ins[i]));
      for (int64_t e = 0; ins[i] && e < ins[i]->numel; e++) xc_tensor_set_f64(ins[i], e, rnd());
    }
    if (m) CHECK_OK(xc_interp_run(g, NULL, 6, (const xc_tensor_t* const*)ins, ref));
    bool half_pixels = false, half_channels = false;
    int runs = 0;
    for (int i = 0; m && i < m->num_kernels; i++) {
      xc_lowered_kernel_t* lk = &m->kernels[i];
      const xc_tiled_kernel_t* kk = lk->kernel;
      int64_t defaults[64];
      for (int j = 0; j < kk->num_knobs && j < 64; j++) defaults[j] = lk->knobs[j];
      for (int j = 0; j < kk->num_knobs && j < 64; j++) {
        const xc_tiled_knob_t* kn = &kk->knobs[j];
        for (int q = 0; q < kn->num_candidates; q++) {
          if (!strncmp(kn->name, "BLOCK_M", 7)) half_pixels |= kn->candidates[q] == 18;
          if (!strncmp(kn->name, "BLOCK_N", 7)) half_channels |= kn->candidates[q] == 56;
          int64_t v[64];
          memcpy(v, defaults, sizeof v);
          v[j] = kn->candidates[q];
          if (!apply_knobs(lk, v, &cpu)) continue;
          xc_tensor_t* got[3] = {0};
          CHECK_OK(xc_lowered_run_interp(m, 6, (const xc_tensor_t* const*)ins, got));
          for (int o = 0; o < 3; o++) {
            double err = compare(got[o], ref[o]);
            if (!(err <= 1e-5)) fprintf(stderr, "conv-small-cpu: %s=%lld: output %d error %g\n", kn->name,
                                        (long long)v[j], o, err);
            CHECK(err <= 1e-5);
            xc_tensor_destroy(got[o]);
          }
          runs++;
        }
        apply_knobs(lk, defaults, &cpu);
      }
    }
    CHECK(half_pixels);
    CHECK(half_channels);
    CHECK(runs >= 20);
    for (int i = 0; i < 6; i++) xc_tensor_destroy(ins[i]);
    for (int o = 0; o < 3; o++) xc_tensor_destroy(ref[o]);
    lowered_free(g, plan, m);
  }
  /* A depthwise conv on the cpu unrolls its window (3x3, 5x5: no loop over
   * the taps), so the C emitter fuses the taps into one element loop; a 2-D
   * window of more than 25 taps keeps the loop. Both against the
   * interpreter with every knob choice (stride, asymmetric pads, a ragged
   * last pixel tile, channels no tile divides), and each load's offset
   * bounded without its mask (the clamped coordinates). */
  const char* dwise = HDR
      "  input x: f32[2, 7, 9, 12]\n  input w: f32[3, 3, 1, 12]\n  input b: f32[12]\n  input u: f32[6, 6, 1, 12]\n"
      "  input z: f32[1, 5, 6, 5]\n  input v: f32[5, 3, 3, 1]\n"
      "  c = xcomp::ConvNHWC(x, w, b) {group: 12, pads: [0, 1, 1, 1], strides: [2, 1], weight_layout: \"HWIO\"}\n"
      "  d = xcomp::ConvNHWC(x, u) {group: 12, pads: [2, 3, 3, 2], weight_layout: \"HWIO\"}\n"
      "  e = xcomp::ConvNHWC(z, v) {group: 5, pads: [1, 1, 1, 1]}\n"
      "  output c\n  output d\n  output e\n}\n";
  const int64_t shd[6][4] = {{2, 7, 9, 12}, {3, 3, 1, 12}, {12}, {6, 6, 1, 12}, {1, 5, 6, 5}, {5, 3, 3, 1}};
  const int rkd[6] = {4, 4, 1, 4, 4, 4};
  check_graph_for("conv-depthwise-cpu", dwise, 6, shd, rkd, &cpu);
  {
    xc_graph_t* g;
    xc_fusion_plan_t* plan;
    xc_lowered_module_t* m = lower_text("conv-depthwise", dwise, &cpu, &g, &plan);
    CHECK(m && m->num_kernels == 3);
    for (int i = 0; m && i < m->num_kernels; i++) {
      const xc_tiled_kernel_t* kk = m->kernels[i].kernel;
      int loops = 0, loads = 0;
      for (int j = 0; j < kk->body->num_ops; j++) {
        loops += kk->body->ops[j]->opcode == XC_TOP_FOR;
        loads += kk->body->ops[j]->opcode == XC_TOP_LOAD;
      }
      /* 9 taps of x and w + bias; the 6x6 window (36 taps) keeps its loop */
      CHECK_EQ_INT(loops, i == 1 ? 1 : 0);
      if (i == 0) CHECK(loads >= 19);
      int64_t grid[3] = {1, 1, 1};
      for (int a = 0; a < kk->grid_rank; a++) CHECK_OK(xc_texpr_eval(kk->grid[a], m->kernels[i].knobs, NULL, &cpu, &grid[a]));
      bounds_seen_t seen = {0, 0};
      CHECK_OK(xc_tiled_accesses(kk, m->kernels[i].knobs, NULL, grid, count_unbounded, &seen));
      CHECK_EQ_INT(seen.unbounded, 0);
    }
    lowered_free(g, plan, m);
  }
  for (int form = 0; form < 2; form++) {
    xc_graph_t* g;
    xc_fusion_plan_t* plan;
    xc_lowered_module_t* m = lower_text("conv-form", one, form ? &mma : NULL, &g, &plan);
    if (m) {
      CHECK_EQ_INT(m->num_kernels, 1);
      const xc_tiled_kernel_t* kk = m->kernels[0].kernel;
      bool has_bn = false, has_br = false;
      for (int j = 0; j < kk->num_knobs; j++) {
        has_bn = has_bn || !strcmp(kk->knobs[j].name, "BLOCK_N_p0");
        has_br = has_br || !strcmp(kk->knobs[j].name, "BLOCK_R_p0");
      }
      CHECK(has_bn == (form == 0));
      CHECK(has_br == (form == 1));
    }
    lowered_free(g, plan, m);
  }
}

static void test_movement(void) {
  const char* t = HDR
      "  input x: f32[3, 5, 7]\n  input y: f32[3, 2, 7]\n  input i: i64[4]\n"
      "  t = Transpose(x) {perm: [2, 0, 1]}\n  c = Concat(x, y) {axis: 1}\n"
      "  g = Gather(c, i) {axis: 1}\n  output t\n  output g\n}\n";
  const int64_t sh[3][4] = {{3, 5, 7}, {3, 2, 7}, {4}};
  const int rk[3] = {3, 3, 1};
  check_graph("movement", t, 3, sh, rk);
  /* On the cpu a Transpose whose output's last dim is not the input's last
   * runs over [BLOCK_A, BLOCK_B] tiles: loaded along the input's last dim,
   * stored through a 2-D trans along the output's. NCHW -> NHWC with 3
   * channels (BLOCK_B takes the 3 whole), a ragged 19-wide row, a 3-D
   * permutation that moves the last dim first, and one that keeps it last
   * (the flat form). Every knob choice against the interpreter; the tiled
   * kernels have the trans and bounded accesses. */
  const char* tt = HDR
      "  input x: f32[2, 3, 17, 19]\n  input y: f32[5, 9, 11]\n"
      "  a = Transpose(x) {perm: [0, 2, 3, 1]}\n  b = Transpose(y) {perm: [2, 0, 1]}\n"
      "  c = Transpose(y) {perm: [1, 0, 2]}\n"
      "  output a\n  output b\n  output c\n}\n";
  const int64_t sht[2][4] = {{2, 3, 17, 19}, {5, 9, 11}};
  const int rkt[2] = {4, 3};
  xc_tiled_limits_t cpu;
  xc_tiled_limits_init_cpu(&cpu);
  check_graph_for("transpose-cpu", tt, 2, sht, rkt, &cpu);
  xc_graph_t* g;
  xc_fusion_plan_t* plan;
  xc_lowered_module_t* m = lower_text("transpose-tiles", tt, &cpu, &g, &plan);
  CHECK(m && m->num_kernels == 3);
  for (int i = 0; m && i < m->num_kernels; i++) {
    const xc_tiled_kernel_t* kk = m->kernels[i].kernel;
    int trans = 0;
    for (int j = 0; j < kk->body->num_ops; j++) trans += kk->body->ops[j]->opcode == XC_TOP_TRANS;
    CHECK_EQ_INT(trans, i < 2 ? 1 : 0);
    bool exact_b = false;
    for (int j = 0; j < kk->num_knobs; j++)
      if (!strncmp(kk->knobs[j].name, "BLOCK_B", 7)) exact_b = m->kernels[i].knobs[j] == (i == 0 ? 3 : 9);
    if (i < 2) CHECK(exact_b);
    int64_t grid[3] = {1, 1, 1};
    for (int a = 0; a < kk->grid_rank; a++) CHECK_OK(xc_texpr_eval(kk->grid[a], m->kernels[i].knobs, NULL, &cpu, &grid[a]));
    bounds_seen_t seen = {0, 0};
    CHECK_OK(xc_tiled_accesses(kk, m->kernels[i].knobs, NULL, grid, count_unbounded, &seen));
    CHECK_EQ_INT(seen.unbounded, 0);
  }
  lowered_free(g, plan, m);
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
  /* TopK with ties (integers in [0, 5)): lower index first */
  const char* tk = HDR
      "  input x: i64[4, 9]\n  input y: f32[6, 5]\n  const k: i64[1] = [4]\n  const k2: i64[1] = [3]\n"
      "  v, i = TopK(x, k) {axis: 1}\n  w, j = TopK(y, k2) {axis: 0, largest: 0}\n"
      "  output v\n  output i\n  output w\n  output j\n}\n";
  const int64_t shk[2][4] = {{4, 9}, {6, 5}};
  const int rkk[2] = {2, 2};
  check_graph("topk", tk, 2, shk, rkk);
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
  /* KV cache: past + new keys, present outputs, causal aligned to the end,
   * and the softmax probabilities output */
  const char* t3 = HDR
      "  input q: f32[1, 4, 3, 8]\n  input k: f32[1, 2, 3, 8]\n  input v: f32[1, 2, 3, 8]\n"
      "  input pk: f32[1, 2, 5, 8]\n  input pv: f32[1, 2, 5, 8]\n"
      "  y, prk, prv, qk = Attention(q, k, v, _, pk, pv) {is_causal: 1, qk_matmul_output_mode: 3}\n"
      "  output y\n  output prk\n  output prv\n  output qk\n}\n";
  const int64_t sh3[5][4] = {{1, 4, 3, 8}, {1, 2, 3, 8}, {1, 2, 3, 8}, {1, 2, 5, 8}, {1, 2, 5, 8}};
  const int rk3[5] = {4, 4, 4, 4, 4};
  check_graph("attention-kv-cache", t3, 5, sh3, rk3);
  /* head split/reshape/transpose around the attention, folded into its
   * loads and stores */
  const char* t5 = HDR
      "  input x: f32[2, 5, 36]\n  const sp: i64[3] = [12, 12, 12]\n  const hs: i64[4] = [2, 5, 3, 4]\n"
      "  const os: i64[3] = [2, 5, 12]\n"
      "  q0, k0, v0 = Split(x, sp) {axis: 2}\n"
      "  q1 = Reshape(q0, hs)\n  k1 = Reshape(k0, hs)\n  v1 = Reshape(v0, hs)\n"
      "  q = Transpose(q1) {perm: [0, 2, 1, 3]}\n  k = Transpose(k1) {perm: [0, 2, 1, 3]}\n"
      "  v = Transpose(v1) {perm: [0, 2, 1, 3]}\n  a = Attention(q, k, v) {is_causal: 1}\n"
      "  t = Transpose(a) {perm: [0, 2, 1, 3]}\n  y = Reshape(t, os)\n  output y\n}\n";
  const int64_t sh5[1][4] = {{2, 5, 36}};
  const int rk5[1] = {3};
  check_graph("attention-heads", t5, 1, sh5, rk5);
  /* rotary embeddings: 4-D full, 3-D interleaved with position ids and a
   * partial rotary dim */
  const char* t4 = HDR
      "  input x: f32[2, 3, 5, 8]\n  input cs: f32[2, 5, 4]\n  input sn: f32[2, 5, 4]\n"
      "  input x3: f32[2, 5, 12]\n  input cc: f32[7, 2]\n  input sc: f32[7, 2]\n  input pos: i64[2, 5]\n"
      "  y = RotaryEmbedding(x, cs, sn)\n"
      "  z = RotaryEmbedding(x3, cc, sc, pos) {num_heads: 2, interleaved: 1, rotary_embedding_dim: 4}\n"
      "  output y\n  output z\n}\n";
  const int64_t sh4[7][4] = {{2, 3, 5, 8}, {2, 5, 4}, {2, 5, 4}, {2, 5, 12}, {7, 2}, {7, 2}, {2, 5}};
  const int rk4[7] = {4, 3, 3, 3, 2, 2, 2};
  check_graph("rotary", t4, 7, sh4, rk4);
}

static void test_more_ops(void) {
  /* ConvTranspose (groups, strides, pads, dilation), LpPool, MaxPool
   * Indices in both storage orders, InstanceNormalization */
  const char* t = HDR
      "  input x: f32[2, 4, 5, 7]\n  input w: f32[4, 3, 3, 2]\n  input b: f32[6]\n"
      "  input s: f32[4]\n  input c: f32[4]\n"
      "  y = ConvTranspose(x, w, b) {group: 2, strides: [2, 3], pads: [1, 0, 0, 1], dilations: [1, 2]}\n"
      "  l = LpPool(x) {kernel_shape: [2, 3], p: 3, pads: [1, 1, 0, 1]}\n"
      "  m, i = MaxPool(x) {kernel_shape: [3, 2], strides: [2, 2]}\n"
      "  m2, i2 = MaxPool(x) {kernel_shape: [2, 2], storage_order: 1}\n"
      "  n = InstanceNormalization(x, s, c) {epsilon: 1e-3}\n"
      "  output y\n  output l\n  output m\n  output i\n  output i2\n  output n\n}\n";
  const int64_t sh[5][4] = {{2, 4, 5, 7}, {4, 3, 3, 2}, {6}, {4}, {4}};
  const int rk[5] = {4, 4, 1, 1, 1};
  check_graph("more-conv", t, 5, sh, rk);
  /* index ops (indices are random in [0, 5), valid for every axis used) */
  const char* t2 = HDR
      "  input d: f32[5, 6, 7]\n  input ie: i64[3, 2, 7]\n  input u: f32[3, 2, 7]\n"
      "  input ind: i64[4, 2]\n  input un: f32[4, 7]\n"
      "  se = ScatterElements(d, ie, u) {axis: 0, reduction: \"add\"}\n"
      "  sn = ScatterND(d, ind, un)\n  gn = GatherND(d, ind)\n"
      "  ge = GatherElements(d, ie) {axis: 0}\n"
      "  const pads: i64[6] = [1, 2, 0, 2, 0, 3]\n  pr = Pad(d, pads) {mode: \"reflect\"}\n"
      "  pw = Pad(d, pads) {mode: \"wrap\"}\n  pe = Pad(d, pads) {mode: \"edge\"}\n"
      "  output se\n  output sn\n  output gn\n  output ge\n  output pr\n  output pw\n  output pe\n}\n";
  const int64_t sh2[5][4] = {{5, 6, 7}, {3, 2, 7}, {3, 2, 7}, {4, 2}, {4, 7}};
  const int rk2[5] = {3, 3, 3, 2, 2};
  check_graph("index-ops", t2, 5, sh2, rk2);
  /* depth/space and losses */
  const char* t3 = HDR
      "  input x: f32[2, 8, 3, 5]\n  input tg: i64[2, 3, 5]\n  input wt: f32[8]\n"
      "  d = DepthToSpace(x) {blocksize: 2, mode: \"CRD\"}\n  s = SpaceToDepth(d) {blocksize: 2}\n"
      "  nl = NegativeLogLikelihoodLoss(x, tg, wt) {reduction: \"mean\", ignore_index: 1}\n"
      "  ce, lp = SoftmaxCrossEntropyLoss(x, tg) {reduction: \"none\"}\n"
      "  output d\n  output s\n  output nl\n  output ce\n  output lp\n}\n";
  const int64_t sh3[3][4] = {{2, 8, 3, 5}, {2, 3, 5}, {8}};
  const int rk3[3] = {4, 3, 1};
  check_graph("depth-loss", t3, 3, sh3, rk3);
}

/* Inverse trigonometry (through atan), BitShift both ways, Range with a
 * static length, Reduce* with empty axes and noop_with_empty_axes, and
 * ReduceMax/ReduceMin on bool (any / all). */
static void test_added_ops(void) {
  const char* t = HDR
      "  input x: f32[3, 37]\n  input a: u8[3, 37]\n  input s: u8[3, 37]\n  input b: bool[3, 37]\n"
      "  const half: f32[] = 0.5\n  h = Mul(x, half)\n"
      "  y1 = Asin(h)\n  y2 = Acos(h)\n  y3 = Atan(x)\n"
      "  l = BitShift(a, s) {direction: \"LEFT\"}\n  r = BitShift(a, s) {direction: \"RIGHT\"}\n"
      "  const none: i64[0] = []\n  n0 = ReduceSum(x, none) {noop_with_empty_axes: 1}\n"
      "  n1 = ReduceSum(x, none) {keepdims: 0}\n"
      "  const ax: i64[1] = [1]\n  bmax = ReduceMax(b, ax) {keepdims: 0}\n  bmin = ReduceMin(b, ax)\n"
      "  sz = Size(x)\n  const st: i64[] = 5\n  const dl: i64[] = -2\n  const fst: f32[] = 0.25\n"
      "  const fdl: f32[] = 0.1\n  const fl: f32[] = 1.0\n"
      "  ri = Range(st, sz, dl)\n  ri2 = Range(st, sz, st)\n  rf = Range(fst, fl, fdl)\n"
      "  output y1\n  output y2\n  output y3\n  output l\n  output r\n  output n0\n  output n1\n"
      "  output bmax\n}\n";
  const int64_t sh[4][4] = {{3, 37}, {3, 37}, {3, 37}, {3, 37}};
  const int rk[4] = {2, 2, 2, 2};
  check_graph("added-ops", t, 4, sh, rk);
  /* at most 8 outputs per graph: the rest of the same graph */
  char t2[2048];
  snprintf(t2, sizeof t2, "%.*s  output bmin\n  output ri\n  output ri2\n  output rf\n}\n",
           (int)(strstr(t, "  output y1") - t), t);
  check_graph("added-ops-2", t2, 4, sh, rk);
  /* Einsum (contraction, diagonal with ellipsis, implicit output, full
   * reduction), GroupNormalization, MeanVarianceNormalization, LRN */
  const char* t3 = HDR
      "  input a: f32[2, 3, 5]\n  input b: f32[2, 5, 4]\n  input q: f32[2, 6, 3, 5]\n  input s: f32[6]\n"
      "  input dg: f32[3, 4, 4]\n"
      "  e1 = Einsum(a, b) {equation: \"bij, bjk -> bik\"}\n"
      "  e2 = Einsum(dg) {equation: \"...ii->...i\"}\n"
      "  e3 = Einsum(a, a) {equation: \"bij,bkj\"}\n"
      "  e4 = Einsum(a) {equation: \"ijk->\"}\n"
      "  gn = GroupNormalization(q, s, s) {num_groups: 3, epsilon: 1e-3}\n"
      "  mv = MeanVarianceNormalization(q) {axes: [0, 2]}\n"
      "  lr = LRN(q) {size: 4, alpha: 0.01, beta: 0.75, bias: 2.0}\n"
      "  output e1\n  output e2\n  output e3\n  output e4\n  output gn\n  output mv\n  output lr\n}\n";
  const int64_t sh3[5][4] = {{2, 3, 5}, {2, 5, 4}, {2, 6, 3, 5}, {6}, {3, 4, 4}};
  const int rk3[5] = {3, 3, 4, 1, 3};
  check_graph("added-ops-3", t3, 5, sh3, rk3);
  /* DynamicQuantizeLinear: all three outputs, more elements than a block */
  const char* t4 = HDR "  input x: f32[7, 131]\n  y, s, z = DynamicQuantizeLinear(x)\n"
                       "  output y\n  output s\n  output z\n}\n";
  const int64_t sh4[1][4] = {{7, 131}};
  const int rk4[1] = {2};
  check_graph("dynamic-quant", t4, 1, sh4, rk4);
  /* Det: batched 5x5 (padded to 8), 2x2, and a singular constant matrix
   * whose first column needs a row swap */
  const char* t5 = HDR "  input m: f32[2, 3, 5, 5]\n  input s: f32[2, 2]\n"
                       "  const sg: f32[3, 3] = [0, 2, 3, 0, 4, 6, 1, 0, 1]\n"
                       "  d1 = Det(m)\n  d2 = Det(s)\n  d3 = Det(sg)\n"
                       "  output d1\n  output d2\n  output d3\n}\n";
  const int64_t sh5[2][4] = {{2, 3, 5, 5}, {2, 2}};
  const int rk5[2] = {4, 2};
  check_graph("det", t5, 2, sh5, rk5);
  /* DeformConv: groups, two offset groups, strides, pads, dilation, mask and
   * bias; random offsets in [-2, 2) reach outside the input */
  const char* t6 = HDR "  input x: f32[2, 4, 6, 7]\n  input w: f32[6, 2, 2, 3]\n  input off: f32[2, 24, 3, 2]\n"
                       "  input b: f32[6]\n  input mk: f32[2, 12, 3, 2]\n"
                       "  y = DeformConv(x, w, off, b, mk) {group: 2, offset_group: 2, strides: [2, 2], pads: [1, 0, 0, 1], dilations: [1, 2]}\n"
                       "  y2 = DeformConv(x, w, off) {group: 2, offset_group: 2, strides: [2, 2], pads: [1, 0, 0, 1], dilations: [1, 2]}\n"
                       "  output y\n  output y2\n}\n";
  const int64_t sh6[5][4] = {{2, 4, 6, 7}, {6, 2, 2, 3}, {2, 24, 3, 2}, {6}, {2, 12, 3, 2}};
  const int rk6[5] = {4, 4, 4, 1, 4};
  check_graph("deform-conv", t6, 5, sh6, rk6);
  /* RoiAlign: random regions (some inverted or outside), both modes and
   * coordinate transformations */
  const char* t7 = HDR "  input x: f32[5, 2, 6, 7]\n  input ro: f32[4, 4]\n  input bi: i64[4]\n"
                       "  const s: f32[] = 2.0\n  rs = Mul(ro, s)\n"
                       "  a = RoiAlign(x, rs, bi) {output_height: 3, output_width: 2, sampling_ratio: 2, spatial_scale: 0.5}\n"
                       "  m = RoiAlign(x, rs, bi) {mode: \"max\", coordinate_transformation_mode: \"output_half_pixel\", output_height: 2, output_width: 4, sampling_ratio: 3}\n"
                       "  output a\n  output m\n}\n";
  const int64_t sh7[3][4] = {{5, 2, 6, 7}, {4, 4}, {4}};
  const int rk7[3] = {4, 2, 1};
  check_graph("roi-align", t7, 3, sh7, rk7);
  /* Col2Im with strides, pads and dilations; MaxUnpool of a MaxPool's
   * indices into an enlarged output_shape */
  const char* t8 = HDR "  input x: f32[2, 12, 12]\n  input p: f32[1, 2, 6, 6]\n"
                       "  const img: i64[2] = [7, 8]\n  const blk: i64[2] = [2, 3]\n"
                       "  y = Col2Im(x, img, blk) {strides: [2, 2], pads: [1, 0, 0, 1], dilations: [2, 1]}\n"
                       "  m, i = MaxPool(p) {kernel_shape: [2, 2], strides: [2, 2]}\n"
                       "  const osh: i64[4] = [1, 2, 7, 9]\n"
                       "  u = MaxUnpool(m, i, osh) {kernel_shape: [2, 2], strides: [2, 2]}\n"
                       "  u2 = MaxUnpool(m, i) {kernel_shape: [2, 2], strides: [2, 2]}\n"
                       "  output y\n  output u\n  output u2\n}\n";
  const int64_t sh8[2][4] = {{2, 12, 12}, {1, 2, 6, 6}};
  const int rk8[2] = {3, 4};
  check_graph("col2im-unpool", t8, 2, sh8, rk8);
}

/* RNN bidirectional, GRU reverse with linear_before_reset, LSTM with
 * sequence lengths, initial states and peepholes (the node tests cover only
 * forward directions without lengths). */
static void test_rnn(void) {
  const char* t = HDR
      "  input x: f32[5, 3, 4]\n  input w1: f32[2, 6, 4]\n  input r1: f32[2, 6, 6]\n"
      "  input w2: f32[1, 15, 4]\n  input r2: f32[1, 15, 5]\n  input b2: f32[1, 30]\n"
      "  y1, h1 = RNN(x, w1, r1) {hidden_size: 6, direction: \"bidirectional\"}\n"
      "  y2, h2 = GRU(x, w2, r2, b2) {hidden_size: 5, direction: \"reverse\", linear_before_reset: 1}\n"
      "  y3, h3 = GRU(x, w2, r2, b2) {hidden_size: 5, layout: 0}\n"
      "  output y1\n  output h1\n  output y2\n  output h2\n  output y3\n  output h3\n}\n";
  const int64_t sh[6][4] = {{5, 3, 4}, {2, 6, 4}, {2, 6, 6}, {1, 15, 4}, {1, 15, 5}, {1, 30}};
  const int rk[6] = {3, 3, 3, 3, 3, 2};
  check_graph("rnn-gru", t, 6, sh, rk);
  const char* t2 = HDR
      "  input x: f32[3, 5, 4]\n  input w: f32[1, 12, 4]\n  input r: f32[1, 12, 3]\n  input b: f32[1, 24]\n"
      "  input lens: i32[3]\n  input h0: f32[3, 1, 3]\n  input c0: f32[3, 1, 3]\n  input p: f32[1, 9]\n"
      "  y, yh, yc = LSTM(x, w, r, b, lens, h0, c0, p) {hidden_size: 3, layout: 1}\n"
      "  output y\n  output yh\n  output yc\n}\n";
  const int64_t sh2[8][4] = {{3, 5, 4}, {1, 12, 4}, {1, 12, 3}, {1, 24}, {3}, {3, 1, 3}, {3, 1, 3}, {1, 9}};
  const int rk2[8] = {3, 3, 3, 2, 1, 3, 3, 2};
  check_graph("lstm", t2, 8, sh2, rk2);
}

/* Resize with constant scales/sizes (the ONNX node tests pass them as
 * inputs, which makes the output shape data-dependent). */
static void test_resize(void) {
  const char* t = HDR
      "  input x: f32[1, 2, 5, 7]\n  const sc: f32[4] = [1.0, 1.0, 1.7, 0.6]\n"
      "  const sz: i64[2] = [9, 4]\n  const roi: f32[4] = [0.2, 0.1, 0.9, 0.8]\n"
      "  a = Resize(x, _, sc) {mode: \"nearest\", coordinate_transformation_mode: \"asymmetric\", nearest_mode: \"floor\"}\n"
      "  b = Resize(x, _, sc) {mode: \"linear\"}\n"
      "  c = Resize(x, _, _, sz) {mode: \"cubic\", axes: [2, 3], coordinate_transformation_mode: \"align_corners\", exclude_outside: 1}\n"
      "  d = Resize(x, roi, _, sz) {mode: \"linear\", axes: [2, 3], coordinate_transformation_mode: \"tf_crop_and_resize\", extrapolation_value: 3.0}\n"
      "  e = Resize(x, _, sc) {mode: \"nearest\", coordinate_transformation_mode: \"half_pixel_symmetric\", nearest_mode: \"round_prefer_ceil\"}\n"
      "  f = Resize(x, _, sc) {mode: \"cubic\", coordinate_transformation_mode: \"pytorch_half_pixel\"}\n"
      "  output a\n  output b\n  output c\n  output d\n  output e\n  output f\n}\n";
  const int64_t sh[1][4] = {{1, 2, 5, 7}};
  const int rk[1] = {4};
  check_graph("resize", t, 1, sh, rk);
  /* GridSample: random grid coordinates in [-2, 2) exercise every padding */
  const char* t2 = HDR
      "  input x: f32[2, 3, 5, 7]\n  input g: f32[2, 4, 6, 2]\n"
      "  a = GridSample(x, g) {mode: \"linear\", padding_mode: \"zeros\"}\n"
      "  b = GridSample(x, g) {mode: \"nearest\", padding_mode: \"border\", align_corners: 1}\n"
      "  c = GridSample(x, g) {mode: \"cubic\", padding_mode: \"reflection\"}\n"
      "  d = GridSample(x, g) {mode: \"linear\", padding_mode: \"reflection\", align_corners: 1}\n"
      "  output a\n  output b\n  output c\n  output d\n}\n";
  const int64_t sh2[2][4] = {{2, 3, 5, 7}, {2, 4, 6, 2}};
  const int rk2[2] = {4, 4};
  check_graph("grid-sample", t2, 2, sh2, rk2);
}

static void test_quant(void) {
  const char* t = HDR
      "  input x: f32[3, 8]\n  const s: f32[8] = [0.1, 0.2, 0.3, 0.05, 0.5, 1.0, 0.25, 0.125]\n"
      "  const z: u8[8] = [0, 3, 128, 7, 9, 200, 1, 2]\n  const sb: f32[3, 2] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]\n"
      "  const zb: i8[3, 2] = [0, -3, 5, 1, 2, -7]\n"
      "  q = QuantizeLinear(x, s, z) {axis: 1}\n  d = DequantizeLinear(q, s, z) {axis: 1}\n"
      "  qb = QuantizeLinear(x, sb, zb) {axis: 1, block_size: 4}\n"
      "  db = DequantizeLinear(qb, sb, zb) {axis: 1, block_size: 4}\n"
      "  output q\n  output d\n  output qb\n  output db\n}\n";
  const int64_t sh[1][4] = {{3, 8}};
  const int rk[1] = {2};
  check_graph("quant", t, 1, sh, rk);
  const char* t2 = HDR
      "  input a: u8[5, 9]\n  input b: u8[3, 9, 7]\n  const as: f32[5] = [0.01, 0.02, 0.03, 0.04, 0.05]\n"
      "  const az: u8[] = 3\n  const bs: f32[] = 0.02\n  const bz: u8[7] = [1, 2, 3, 4, 0, 2, 1]\n"
      "  const ys: f32[] = 0.001\n  const yz: u8[] = 100\n"
      "  y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)\n  output y\n}\n";
  const int64_t sh2[2][4] = {{5, 9}, {3, 9, 7}};
  const int rk2[2] = {2, 3};
  check_graph("qlinear-matmul", t2, 2, sh2, rk2);
}

/* Number of kernels of text's lowering; *serial set when one of them runs
 * a single program. */
static int kernel_count(const char* text, bool* serial) {
  xc_graph_t* g;
  xc_fusion_plan_t* plan;
  xc_lowered_module_t* m = lower_text("count", text, NULL, &g, &plan);
  int count = -1;
  *serial = false;
  if (m) {
    count = m->num_kernels;
    for (int k = 0; k < m->num_kernels; k++) {
      bool one = true;
      for (int a = 0; a < m->kernels[k].kernel->grid_rank; a++)
        one = one && m->kernels[k].kernel->grid[a]->kind == XC_TEXPR_CONST;
      *serial = *serial || one;
    }
  }
  lowered_free(g, plan, m);
  return count;
}

/* Fusion shapes: a residual Add (also a graph output) computed inside the
 * LayerNorm kernel, a broadcast chain whose first op has a smaller shape, a
 * Gelu on a reshaped GEMM output. */
static void test_fusion_shapes(void) {
  const char* t = HDR
      "  input x: f32[7, 13]\n  input r: f32[7, 13]\n  input g: f32[13]\n  input b: f32[13]\n"
      "  h = Add(x, r)\n  ln = LayerNormalization(h, g, b) {axis: -1}\n  y = Relu(ln)\n"
      "  output y\n  output h\n}\n";
  const int64_t sh[4][4] = {{7, 13}, {7, 13}, {13}, {13}};
  const int rk[4] = {2, 2, 1, 1};
  check_graph("residual-layernorm", t, 4, sh, rk);
  const char* t2 = HDR
      "  input a: f32[3, 1, 1]\n  input s: f32[1]\n  input c: f32[1, 5, 7]\n"
      "  m = Mul(a, s)\n  y = Add(m, c)\n  output y\n}\n";
  const int64_t sh2[3][4] = {{3, 1, 1}, {1}, {1, 5, 7}};
  const int rk2[3] = {3, 1, 3};
  check_graph("broadcast-prologue", t2, 3, sh2, rk2);
  const char* t3 = HDR
      "  input a: f32[15, 9]\n  input w: f32[9, 11]\n  const shp: i64[3] = [3, 5, 11]\n"
      "  m = MatMul(a, w)\n  r = Reshape(m, shp)\n  y = Gelu(r)\n  output y\n}\n";
  const int64_t sh3[2][4] = {{15, 9}, {9, 11}};
  const int rk3[2] = {2, 2};
  check_graph("gemm-reshape-gelu", t3, 2, sh3, rk3);
  const char* texts[3] = {t, t2, t3};
  for (int i = 0; i < 3; i++) {
    bool serial = true;
    CHECK_EQ_INT(kernel_count(texts[i], &serial), 1);
    CHECK(!serial);
  }
}

/* The group kind of the plan's group holding the first node of op_type. */
static int group_kind_of(const char* text, const char* op_type) {
  xc_graph_t* g = NULL;
  xc_fusion_plan_t* plan = NULL;
  int kind = -1;
  CHECK_OK(xc_xir_parse(text, strlen(text), "kind", NULL, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  if (g) CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  for (int i = 0; plan && i < plan->num_groups; i++)
    for (int j = 0; j < plan->groups[i].num_nodes; j++)
      if (!strcmp(plan->groups[i].nodes[j]->op_type, op_type))
        kind = (int)plan->groups[i].kind;
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
  return kind;
}

/* xcomp.SwiGLU, the composite pattern_silu.c makes of Silu(a) * b (Llama-
 * family MLPs): standalone, as the epilogue of the gate projection's GEMM
 * reading the up projection's result, and after an RMSNormalization; each
 * against the interpreter for several knob choices. */
static void test_swiglu(void) {
  const char* t = HDR
      "  input a: f32[5, 37]\n  input b: f32[5, 37]\n  y = xcomp::SwiGLU(a, b)\n  output y\n}\n";
  const int64_t sh[2][4] = {{5, 37}, {5, 37}};
  const int rk[2] = {2, 2};
  check_graph("swiglu", t, 2, sh, rk);
  const char* t2 = HDR
      "  input x: f32[2, 9, 24]\n  input wg: f32[24, 40]\n  input wu: f32[24, 40]\n"
      "  g = MatMul(x, wg)\n  u = MatMul(x, wu)\n  y = xcomp::SwiGLU(g, u)\n  output y\n}\n";
  const int64_t sh2[3][4] = {{2, 9, 24}, {24, 40}, {24, 40}};
  const int rk2[3] = {3, 2, 2};
  check_graph("swiglu-gemm-epilogue", t2, 3, sh2, rk2);
  CHECK_EQ_INT(group_kind_of(t2, "SwiGLU"), XC_GROUP_GEMM);
  const char* t3 = HDR
      "  input x: f32[6, 32]\n  input s: f32[32]\n  input b: f32[6, 32]\n"
      "  n = RMSNormalization(x, s) {axis: -1}\n  y = xcomp::SwiGLU(n, b)\n  output y\n}\n";
  const int64_t sh3[3][4] = {{6, 32}, {32}, {6, 32}};
  const int rk3[3] = {2, 1, 2};
  check_graph("swiglu-after-rmsnorm", t3, 3, sh3, rk3);
  CHECK_EQ_INT(group_kind_of(t3, "SwiGLU"), XC_GROUP_REDUCTION);
  const char* t4 = HDR
      "  input a: f16[3, 50]\n  input b: f16[3, 50]\n  y = xcomp::SwiGLU(a, b)\n  output y\n}\n";
  const int64_t sh4[2][4] = {{3, 50}, {3, 50}};
  check_graph("swiglu-f16", t4, 2, sh4, rk);
}

/* Empty tensors: zero programs, or zero-trip loops that leave the
 * reduction identity. */
static void test_empty(void) {
  const char* t = HDR
      "  input x: f32[0, 5]\n  input w: f32[5, 3]\n  const ax: i64[1] = [0]\n"
      "  r = Relu(x)\n  s = ReduceSum(r, ax) {keepdims: 0}\n  m = MatMul(x, w)\n"
      "  output r\n  output s\n  output m\n}\n";
  const int64_t sh[2][4] = {{0, 5}, {5, 3}};
  const int rk[2] = {2, 2};
  check_graph("empty", t, 2, sh, rk);
  const char* t2 = HDR
      "  input x: f32[4, 0]\n  input w: f32[0, 3]\n  m = MatMul(x, w)\n  output m\n}\n";
  const int64_t sh2[2][4] = {{4, 0}, {0, 3}};
  check_graph("empty-k", t2, 2, sh2, rk);
}

/* f16 inputs: f32 accumulation, one rounding on store. */
static void test_f16(void) {
  const char* t = HDR
      "  input a: f16[9, 13]\n  input b: f16[13, 6]\n  input g: f16[6]\n  input c: f16[6]\n"
      "  m = MatMul(a, b)\n  l = LayerNormalization(m, g, c) {axis: -1}\n  y = Softmax(l) {axis: 0}\n"
      "  output y\n}\n";
  const int64_t sh[4][4] = {{9, 13}, {13, 6}, {6}, {6}};
  const int rk[4] = {2, 2, 1, 1};
  check_graph("f16", t, 4, sh, rk);
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

/* Index checks (docs/lowering.md): two Gathers in two kernels, both with
 * out-of-range ids, lowered for CPU limits (the record written after
 * reductions) and GPU limits (per-lane stores); the run fails naming the
 * first Gather with its index; valid negative ids run; without the checks
 * the kernels take no record. */
static void test_index_checks(void) {
  const char* t = HDR
      "  input ids: i64[3]\n  input t1: f32[10, 2]\n  input t2: f32[7, 2]\n"
      "  a = Gather(t1, ids) {axis: 0} @first\n  s = Softmax(a) {axis: 0}\n"
      "  b = Gather(t2, ids) {axis: 0} @second\n  y = Add(s, b)\n  output y\n}\n";
  for (int l = 0; l < 2; l++) {
    xc_tiled_limits_t lim;
    if (l == 0) xc_tiled_limits_init_cpu(&lim);
    else xc_tiled_limits_init_gpu(&lim);
    xc_graph_t* g = NULL;
    xc_fusion_plan_t* plan = NULL;
    xc_lowered_module_t* m = lower_text("idx", t, &lim, &g, &plan);
    if (!m) {
      lowered_free(g, plan, m);
      continue;
    }
    int checking = 0;
    for (int i = 0; i < m->num_kernels; i++) checking += m->kernels[i].num_index_checks > 0;
    CHECK(checking >= 2);
    CHECK_EQ_INT(m->num_index_error_slots, checking);
    int64_t d3 = 3, d10[2] = {10, 2}, d7[2] = {7, 2};
    xc_tensor_t *ids = NULL, *t1 = NULL, *t2 = NULL, *y = NULL;
    CHECK_OK(xc_tensor_create(XC_I64, 1, &d3, &ids));
    CHECK_OK(xc_tensor_create(XC_F32, 2, d10, &t1));
    CHECK_OK(xc_tensor_create(XC_F32, 2, d7, &t2));
    if (ids && t1 && t2) {
      xc_tensor_t* ins[3] = {ids, t1, t2};
      const int64_t ok[3] = {-7, 6, 0}, bad_both[3] = {0, 12, -11}, bad_second[3] = {0, 8, 1};
      memcpy(ids->data, ok, sizeof ok);
      CHECK_OK(xc_lowered_run_interp(m, 3, (const xc_tensor_t* const*)ins, &y));
      xc_tensor_destroy(y);
      y = NULL;
      memcpy(ids->data, bad_both, sizeof bad_both);
      CHECK_ERR(xc_lowered_run_interp(m, 3, (const xc_tensor_t* const*)ins, &y), "node 'first' (Gather)");
      CHECK(y == NULL);
      memcpy(ids->data, bad_both, sizeof bad_both);
      xc_status_t st = xc_lowered_run_interp(m, 3, (const xc_tensor_t* const*)ins, &y);
      CHECK(st && (strstr(xc_status_message(st), "index 12 out of range for dim 10") ||
                   strstr(xc_status_message(st), "index -11 out of range for dim 10")));
      CHECK(st && xc_status_code(st) == XC_OUT_OF_RANGE);
      xc_status_free(st);
      memcpy(ids->data, bad_second, sizeof bad_second);
      CHECK_ERR(xc_lowered_run_interp(m, 3, (const xc_tensor_t* const*)ins, &y),
                "node 'second' (Gather) at idx:8:3: index 8 out of range for dim 7");
    }
    xc_tensor_destroy(ids);
    xc_tensor_destroy(t1);
    xc_tensor_destroy(t2);
    xc_lowered_module_t* unchecked = NULL;
    xc_lower_options_t off = {.no_index_checks = true};
    if (plan) CHECK_OK(xc_lower_with(g, plan, &lim, &off, &unchecked));
    if (unchecked) {
      CHECK_EQ_INT(unchecked->num_index_error_slots, 0);
      for (int i = 0; i < unchecked->num_kernels; i++) CHECK_EQ_INT(unchecked->kernels[i].num_index_checks, 0);
    }
    xc_lowered_module_destroy(unchecked);
    lowered_free(g, plan, m);
  }
}

static void test_unsupported(void) {
  const char* t = HDR "  input x: f32[3, 3]\n  y = NonZero(x)\n  output y\n}\n";
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(t, strlen(t), "u", NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_fusion_plan_t* plan = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  xc_lowered_module_t* m = NULL;
  xc_status_t s = xc_lower(g, plan, NULL, &m);
  CHECK(s != NULL && xc_status_code(s) == XC_UNSUPPORTED);
  CHECK(s && strstr(xc_status_message(s), "NonZero") != NULL);
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
  int attention_kernels = 0;
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
      for (int k = 0; k < m->num_kernels; k++) {
        CHECK_OK(xc_tiled_knobs_check(m->kernels[k].kernel, m->kernels[k].knobs, &lim));
        /* every group of the models is one parallel kernel (no serial
         * single-program kernel): residual Adds are LayerNorm prologues */
        const xc_tiled_kernel_t* kk = m->kernels[k].kernel;
        bool serial = true;
        for (int a = 0; a < kk->grid_rank; a++) serial = serial && kk->grid[a]->kind == XC_TEXPR_CONST;
        if (serial) fprintf(stderr, "%s: kernel %s runs one program\n", models[i], kk->name);
        CHECK(!serial);
        /* attention groups fold their head reshapes/transposes into the
         * kernel: one parallel launch over (query tiles, batch*heads) */
        if (plan->groups[m->kernels[k].group].kind == XC_GROUP_ATTENTION) {
          CHECK_EQ_INT(m->kernels[k].kernel->grid_rank, 2);
          attention_kernels++;
        }
      }
      xc_lowered_module_destroy(m);
    }
    xc_fusion_plan_destroy(plan);
    xc_graph_destroy(g);
  }
  CHECK_EQ_INT(attention_kernels, 8); /* 2 layers x 2 models x GPU/CPU limits */
}

/* The CNN optimized for the CPU target's channels-last layout (ConvNHWC,
 * MaxPoolNHWC) lowers and matches its stored output. */
static void test_cnn_nhwc(void) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_load_model("tests/models/cnn/model.onnx", &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_pass_options_t po;
  xc_pass_options_init(&po);
  po.target.preferred_layout = XC_LAYOUT_NHWC; /* what the CPU target asks for */
  CHECK_OK(xc_passes_run(g, &po));
  int nhwc = 0;
  for (int i = 0; i < g->num_nodes; i++) nhwc += strstr(g->nodes[i]->op_type, "NHWC") != NULL;
  CHECK(nhwc >= 3);
  xc_fusion_plan_t* plan = NULL;
  xc_lowered_module_t* m = NULL;
  CHECK_OK(xc_fusion_plan_build(g, &po.target, &plan));
  if (plan) CHECK_OK(xc_lower(g, plan, NULL, &m));
  xc_tensor_t *x = NULL, *want = NULL, *got = NULL;
  CHECK_OK(xc_tensor_read_file("tests/models/cnn/test_data_set_0/input_0.pb", &x, NULL));
  CHECK_OK(xc_tensor_read_file("tests/models/cnn/test_data_set_0/output_0.pb", &want, NULL));
  for (int choice = -1; m && x && want && choice < 3; choice++) {
    if (choice >= 0) set_knobs(m, choice);
    CHECK_OK(xc_lowered_run_interp(m, 1, (const xc_tensor_t* const*)&x, &got));
    double err = compare(got, want);
    if (!(err <= 1e-5)) fprintf(stderr, "cnn nhwc knob choice %d: rel-L2 %g\n", choice, err);
    CHECK(err <= 1e-5);
    xc_tensor_destroy(got);
    got = NULL;
  }
  xc_tensor_destroy(x);
  xc_tensor_destroy(want);
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

/* The form of each normalization kernel: the single BLOCK_C candidate of
 * the one-pass form (the whole row in one tile), or 0 for the chunked form
 * (-1: the kernel has no BLOCK_C). */
static int64_t norm_form(const xc_tiled_kernel_t* k) {
  for (int j = 0; j < k->num_knobs; j++)
    if (!strncmp(k->knobs[j].name, "BLOCK_C", 7)) return k->knobs[j].num_candidates == 1 ? k->knobs[j].candidates[0] : 0;
  return -1;
}

/* Lowers text with the given limits, checks that every kernel with a
 * BLOCK_C has the expected form (width: one-pass BLOCK_C, 0 chunked), then
 * runs the kernels with every valid BLOCK_R (the other knobs chosen) and
 * compares every output with the graph interpreter. Returns the number of
 * kernels with a BLOCK_C. */
static int check_norm_rows(const char* what, const char* text, int nin, xc_tensor_t* const* ins,
                           const xc_tiled_limits_t* limits, int64_t width) {
  xc_graph_t* g;
  xc_fusion_plan_t* plan;
  xc_lowered_module_t* m = lower_text(what, text, limits, &g, &plan);
  int forms = 0;
  if (!g) return 0;
  xc_tensor_t* ref[8] = {0};
  CHECK_OK(xc_interp_run(g, NULL, nin, (const xc_tensor_t* const*)ins, ref));
  for (int i = 0; m && i < m->num_kernels; i++) {
    int64_t form = norm_form(m->kernels[i].kernel);
    if (form < 0) continue;
    forms++;
    if (form != width) fprintf(stderr, "%s: kernel %d BLOCK_C form %lld, expected %lld\n", what, i, (long long)form, (long long)width);
    CHECK_EQ_INT(form, width);
  }
  int64_t chosen[8][64];
  for (int i = 0; m && i < m->num_kernels && i < 8; i++)
    for (int j = 0; j < m->kernels[i].kernel->num_knobs && j < 64; j++) chosen[i][j] = m->kernels[i].knobs[j];
  static const int64_t brs[] = {1, 2, 4, 8, 16};
  for (int c = 0; m && c < 5; c++) {
    int runs = 0;
    for (int i = 0; i < m->num_kernels && i < 8; i++) {
      xc_lowered_kernel_t* lk = &m->kernels[i];
      int64_t v[64];
      int nk = lk->kernel->num_knobs < 64 ? lk->kernel->num_knobs : 64;
      for (int j = 0; j < nk; j++) {
        v[j] = chosen[i][j];
        if (!strncmp(lk->kernel->knobs[j].name, "BLOCK_R", 7)) v[j] = brs[c];
      }
      runs += apply_knobs(lk, v, limits);
    }
    if (!runs) continue;
    xc_tensor_t* got[8] = {0};
    CHECK_OK(xc_lowered_run_interp(m, nin, (const xc_tensor_t* const*)ins, got));
    for (int o = 0; o < g->num_outputs && o < 8; o++) {
      double err = compare(got[o], ref[o]);
      if (!(err <= 1e-5)) fprintf(stderr, "%s: output %d BLOCK_R %lld: error %g\n", what, o, (long long)brs[c], err);
      CHECK(err <= 1e-5);
      xc_tensor_destroy(got[o]);
    }
  }
  for (int o = 0; o < 8; o++) xc_tensor_destroy(ref[o]);
  lowered_free(g, plan, m);
  return forms;
}

/* Rows of 7 (a partial last group for every BLOCK_R > 1) of x = offset +
 * noise: the residual Add is the prologue of a LayerNorm with Gelu after it
 * and its Mean/InvStdDev and the residual stream as outputs, plus RMSNorm,
 * Softmax and LogSoftmax. An offset of 1e8 in f64 leaves the two-step
 * variance exact to rounding, where E[x^2] - E[x]^2 loses every digit
 * (x^2 ~ 1e16: its rounding is larger than the variance), and Softmax
 * without the max overflows. f32 has an offset of 10 only: the interpreter
 * computes the fused residual Add in double, the reference rounds it to
 * f32, and at larger offsets that rounding alone exceeds the tolerance. Rows of 1000 and 37 have masked
 * tail lanes (BLOCK_C 1024 and 64), 1024 none; 9000 and a symbolic length
 * take the chunked form; with GPU limits (48 KiB of shared memory, half of
 * it for two row tiles) 4096 is one pass and 8192 chunked. */
static void test_norm_one_pass(void) {
  static const struct {
    const char* dt;
    int64_t cols;
    double offset;
    int limits; /* 0 unlimited, 1 cpu, 2 gpu */
    int64_t width;
  } cases[] = {
      {"f32", 1000, 10, 0, 1024}, {"f32", 1024, 10, 1, 1024}, {"f32", 37, 10, 0, 64},
      {"f64", 1000, 1e8, 0, 1024}, {"f64", 37, 1e8, 1, 64},    {"f32", 9000, 10, 0, 0},
      {"f32", 1000, 10, 2, 1024},  {"f32", 4096, 10, 2, 4096}, {"f32", 8192, 10, 2, 0},
  };
  for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
    const char* dt = cases[t].dt;
    long long n = (long long)cases[t].cols;
    char text[2048];
    snprintf(text, sizeof text,
             HDR "  input x: %s[7, %lld]\n  input r: %s[7, %lld]\n  input g: %s[%lld]\n  input b: %s[%lld]\n"
                 "  h = Add(x, r)\n  y, mean, rstd = LayerNormalization(h, g, b) {axis: -1, epsilon: 1e-5}\n"
                 "  z = Gelu(y)\n  q = RMSNormalization(x, g) {axis: -1}\n  s = Softmax(x) {axis: -1}\n"
                 "  l = LogSoftmax(h) {axis: 1}\n"
                 "  output z\n  output mean\n  output rstd\n  output h\n  output q\n  output s\n  output l\n}\n",
             dt, n, dt, n, dt, n, dt, n);
    xc_dtype_t dtype = !strcmp(dt, "f64") ? XC_F64 : XC_F32;
    int64_t rows_shape[2] = {7, cases[t].cols}, row_shape[1] = {cases[t].cols};
    xc_tensor_t* ins[4] = {0};
    CHECK_OK(xc_tensor_create(dtype, 2, rows_shape, &ins[0]));
    CHECK_OK(xc_tensor_create(dtype, 2, rows_shape, &ins[1]));
    CHECK_OK(xc_tensor_create(dtype, 1, row_shape, &ins[2]));
    CHECK_OK(xc_tensor_create(dtype, 1, row_shape, &ins[3]));
    if (!ins[0] || !ins[1] || !ins[2] || !ins[3]) return;
    for (int64_t e = 0; e < ins[0]->numel; e++) {
      xc_tensor_set_f64(ins[0], e, cases[t].offset + rnd());
      xc_tensor_set_f64(ins[1], e, 0.5 * rnd());
    }
    for (int64_t e = 0; e < cases[t].cols; e++) {
      xc_tensor_set_f64(ins[2], e, 1 + 0.1 * rnd());
      xc_tensor_set_f64(ins[3], e, rnd());
    }
    xc_tiled_limits_t lim;
    if (cases[t].limits == 1) xc_tiled_limits_init_cpu(&lim);
    if (cases[t].limits == 2) xc_tiled_limits_init_gpu(&lim);
    char what[64];
    snprintf(what, sizeof what, "norm-rows %s x %lld (limits %d)", dt, n, cases[t].limits);
    int forms = check_norm_rows(what, text, 4, ins, cases[t].limits ? &lim : NULL, cases[t].width);
    CHECK(forms >= 3);
    for (int i = 0; i < 4; i++) xc_tensor_destroy(ins[i]);
  }
  /* one row (every dim reduced, or kept dims of 1) and rows of one element:
   * offsets without a row or column index, so the tile shape comes from the
   * row mask */
  const char* deg = HDR
      "  input x: f32[3, 4]\n  input g: f32[3, 4]\n  input v: f32[1]\n  input w: f32[1]\n"
      "  input u: f32[1, 1, 5, 13]\n  input s: f32[1]\n  input t: f32[1]\n  input e: f32[6, 1]\n"
      "  y = LayerNormalization(x, g) {axis: 0}\n  r = RMSNormalization(v, w) {axis: 0}\n"
      "  q = GroupNormalization(u, s, t) {num_groups: 1}\n  m = Softmax(e) {axis: 1}\n"
      "  output y\n  output r\n  output q\n  output m\n}\n";
  const int64_t dsh[8][4] = {{3, 4}, {3, 4}, {1}, {1}, {1, 1, 5, 13}, {1}, {1}, {6, 1}};
  const int drk[8] = {2, 2, 1, 1, 4, 1, 1, 2};
  check_graph("norm-rows degenerate", deg, 8, dsh, drk);
  /* a symbolic row length: the chunked form */
  const char* sym = HDR "  input x: f32[3, n]\n  y = Softmax(x) {axis: -1}\n  output y\n}\n";
  int64_t sh[2] = {3, 37};
  xc_tensor_t* x = NULL;
  CHECK_OK(xc_tensor_create(XC_F32, 2, sh, &x));
  for (int64_t e = 0; x && e < x->numel; e++) xc_tensor_set_f64(x, e, 100 + 3 * rnd());
  if (x) CHECK_EQ_INT(check_norm_rows("norm-rows symbolic", sym, 1, &x, NULL, 0), 1);
  xc_tensor_destroy(x);
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
  test_norm_one_pass();
  test_more_movement();
  test_attention_masks();
  test_structure();
  test_swiglu();
  test_empty();
  test_fusion_shapes();
  test_more_ops();
  test_added_ops();
  test_rnn();
  test_resize();
  test_quant();
  test_f16();
  test_unsupported();
  test_index_checks();
  test_models();
  test_models_limits();
  test_cnn_nhwc();
  return xc_test_summary("test_lower");
}
