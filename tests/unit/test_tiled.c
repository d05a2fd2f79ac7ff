/* Tiled IR end to end: kernels built with the builder API and run by the
 * tiled interpreter, compared with the graph reference interpreter on the
 * equivalent graph (rel-L2 <= 1e-5): a tiled GEMM with fused epilogues over
 * several knob choices and ragged sizes, a one-pass LayerNorm with residual
 * and ReLU, and FlashAttention-style attention (online softmax), causal and
 * not, with a ragged sequence length. */
#include <string.h>

#include "test.h"
#include "tiled_kernels.h"
#include "xcomp/interp.h"
#include "xcomp/tiled.h"
#include "xcomp/tune.h"
#include "xcomp/xir.h"


/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static xc_tensor_t* random_tensor(int rank, const int64_t* dims) {
  xc_tensor_t* t = NULL;
  if (xc_tensor_create(XC_F32, rank, dims, &t)) return NULL;
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, rnd());
  return t;
}

static xc_tensor_t* zeros(int rank, const int64_t* dims) {
  xc_tensor_t* t = NULL;
  if (xc_tensor_create(XC_F32, rank, dims, &t)) return NULL;
  return t;
}

static double rel_l2(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = xc_tensor_get_f64(a, i), y = xc_tensor_get_f64(b, i);
    if (isnan(x) || isnan(y)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return sqrt(num / (den > 0 ? den : 1));
}

/* Parses and runs a graph on the given inputs; returns output 0. */
static xc_tensor_t* run_graph(const char* text, int n, const xc_tensor_t* const* inputs) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_xir_parse(text, strlen(text), "ref.xir", NULL, &g);
  if (!s) s = xc_graph_infer(g);
  xc_tensor_t* out[1] = {NULL};
  if (!s) s = xc_interp_run(g, NULL, n, inputs, out);
  if (s) {
    fprintf(stderr, "reference graph: %s\n", xc_status_message(s));
    xc_status_free(s);
  }
  xc_graph_destroy(g);
  return out[0];
}



/* Verifies k and checks that its text form parses back to the same text. */
/* Every kernel of these tests also survives print -> parse -> print. */
static kern_t* roundtrip(kern_t* k) {
  if (!k) return NULL;
  char* text = xc_tiled_print_to_string(k);
  kern_t* back = NULL;
  CHECK(text != NULL);
  if (text) CHECK_OK(xc_tiled_parse(text, strlen(text), k->name, &back));
  if (back) {
    char* again = xc_tiled_print_to_string(back);
    CHECK_STR(again, text);
    free(again);
    xc_tiled_kernel_destroy(back);
  }
  free(text);
  return k;
}

/* ---- GEMM with a fused epilogue (build_gemm in tiled_kernels.h) ------------------ */

static void check_gemm(int epilogue, int64_t m, int64_t n, int64_t kk, const int64_t* knobs) {
  kern_t* k = roundtrip(build_gemm(epilogue));
  CHECK(k != NULL);
  if (!k) return;
  int64_t da[2] = {m, kk}, db[2] = {kk, n}, dbias[1] = {n}, dc[2] = {m, n};
  xc_tensor_t *A = random_tensor(2, da), *B = random_tensor(2, db), *bias = random_tensor(1, dbias);
  xc_tensor_t *R = random_tensor(2, dc), *C = zeros(2, dc);
  xc_tiled_arg_t args[8] = {{A, 0}, {B, 0}, {bias, 0}, {R, 0}, {C, 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
  CHECK_OK(xc_tiled_run(k, knobs, 8, args));
  char text[1024];
  if (epilogue == EPI_BIAS_GELU)
    snprintf(text, sizeof text,
             "xir 1\ngraph g opset 23 {\n  input a: f32[%lld, %lld]\n  input b: f32[%lld, %lld]\n"
             "  input bias: f32[%lld]\n  mm = MatMul(a, b)\n  x = Add(mm, bias)\n"
             "  y = Gelu(x)\n  output y\n}\n",
             (long long)m, (long long)kk, (long long)kk, (long long)n, (long long)n);
  else
    snprintf(text, sizeof text,
             "xir 1\ngraph g opset 23 {\n  input a: f32[%lld, %lld]\n  input b: f32[%lld, %lld]\n"
             "  input bias: f32[%lld]\n  input r: f32[%lld, %lld]\n  mm = MatMul(a, b)\n"
             "  x = Add(mm, bias)\n  h = Relu(x)\n  y = Add(h, r)\n  output y\n}\n",
             (long long)m, (long long)kk, (long long)kk, (long long)n, (long long)n, (long long)m,
             (long long)n);
  const xc_tensor_t* ins[4] = {A, B, bias, R};
  xc_tensor_t* ref = run_graph(text, epilogue == EPI_BIAS_GELU ? 3 : 4, ins);
  double err = rel_l2(C, ref);
  if (!(err <= 1e-5))
    fprintf(stderr, "gemm epi=%d %lldx%lldx%lld knobs %lld/%lld/%lld: rel-L2 %g\n", epilogue,
            (long long)m, (long long)n, (long long)kk, knobs ? (long long)knobs[0] : -1,
            knobs ? (long long)knobs[1] : -1, knobs ? (long long)knobs[2] : -1, err);
  CHECK(err <= 1e-5);
  xc_tensor_destroy(ref);
  xc_tensor_destroy(A), xc_tensor_destroy(B), xc_tensor_destroy(bias);
  xc_tensor_destroy(R), xc_tensor_destroy(C);
  xc_tiled_kernel_destroy(k);
}

static void test_gemm(void) {
  /* knob order: BLOCK_M BLOCK_N BLOCK_K num_threads vector stages */
  const int64_t choices[][6] = {
      {32, 32, 16, 128, 4, 2}, {16, 16, 8, 32, 1, 1}, {64, 32, 32, 256, 2, 3},
      {16, 64, 16, 64, 4, 2},  {64, 64, 8, 256, 4, 1},
  };
  for (int i = 0; i < 5; i++) {
    check_gemm(EPI_BIAS_GELU, 67, 45, 33, choices[i]);
    check_gemm(EPI_BIAS_RELU_RESIDUAL, 67, 45, 33, choices[i]);
  }
  /* every tile-size combination a tuner could pick on a GPU */
  xc_tiled_limits_t gpu;
  xc_tiled_limits_init_gpu(&gpu);
  kern_t* k = roundtrip(build_gemm(EPI_BIAS_RELU_RESIDUAL));
  int tried = 0;
  for (int i = 0; k && i < 27; i++) {
    int64_t v[6] = {16 << (i % 3), 16 << (i / 3 % 3), 8 << (i / 9), 256, 4, 2};
    xc_status_t st = xc_tiled_knobs_check(k, v, &gpu);
    if (st) {
      xc_status_free(st);
      continue;
    }
    tried++;
    check_gemm(EPI_BIAS_RELU_RESIDUAL, 45, 67, 41, v);
  }
  CHECK_EQ_INT(tried, 27);
  xc_tiled_kernel_destroy(k);
  check_gemm(EPI_BIAS_GELU, 64, 64, 32, NULL);     /* exact multiples, defaults */
  check_gemm(EPI_BIAS_RELU_RESIDUAL, 1, 3, 1, NULL); /* tiny: mostly masked lanes */
}

static void test_gemm_knob_choice(void) {
  kern_t* k = roundtrip(build_gemm(EPI_BIAS_GELU));
  CHECK(k != NULL);
  if (!k) return;
  xc_tiled_limits_t gpu;
  xc_tiled_limits_init_gpu(&gpu);
  int64_t v[6];
  CHECK_EQ_INT(xc_tiled_knob_of_kind(k, XC_KNOB_THREADS), 3);
  CHECK_EQ_INT(xc_tiled_knob_of_kind(k, XC_KNOB_STAGES), 5);
  CHECK_EQ_INT(xc_tiled_knob_of_kind(k, XC_KNOB_UNROLL), -1);
  CHECK_OK(xc_tiled_knobs_choose(k, &gpu, v));
  CHECK_EQ_INT(v[0], 32); /* defaults are valid on a GPU */
  CHECK_EQ_INT(v[3], 128);
  /* A small device: 64 threads at most, 4 KiB shared memory. */
  xc_tiled_limits_t small = gpu;
  small.value[XC_TILED_LIMIT_MAX_THREADS] = 64;
  small.value[XC_TILED_LIMIT_SHARED_BYTES] = 4096;
  CHECK_OK(xc_tiled_knobs_choose(k, &small, v));
  CHECK_OK(xc_tiled_knobs_check(k, v, &small));
  CHECK(v[3] <= 64);
  CHECK(v[0] * v[1] <= v[3] * 64);
  CHECK(4 * (v[0] * v[2] + v[2] * v[1]) <= 4096);
  /* The chosen knobs compute the same GEMM. */
  check_gemm(EPI_BIAS_GELU, 67, 45, 33, v);
  /* On a CPU the GEMM defaults are valid too. */
  xc_tiled_limits_t cpu;
  xc_tiled_limits_init_cpu(&cpu);
  CHECK_OK(xc_tiled_knobs_choose(k, &cpu, v));
  CHECK_EQ_INT(v[0] * v[1] * v[2], 32 * 32 * 16);
  /* Nothing fits without shared memory. */
  xc_tiled_limits_t none = gpu;
  none.value[XC_TILED_LIMIT_SHARED_BYTES] = 0;
  CHECK_ERR(xc_tiled_knobs_choose(k, &none, v), "no knob combination is valid");
  xc_tiled_kernel_destroy(k);
}

/* f16 GEMM: f16 tiles, f32 accumulation, one rounding into the f16 output.
 * The graph interpreter also accumulates in double and rounds once, so the
 * results agree bit for bit. */
static void test_gemm_f16(void) {
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("gemm_f16", &k));
  const int64_t b16[] = {16, 32};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 2, b16, 16);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 2, b16, 16);
  int kBK = xc_tiled_add_knob(k, "BLOCK_K", XC_KNOB_TILE, 2, b16, 16);
  val_t* A = xc_tiled_param_buffer(k, "A", XC_F16, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", XC_F16, XC_ROLE_IN);
  val_t* C = xc_tiled_param_buffer(k, "C", XC_F16, XC_ROLE_OUT);
  val_t* M = xc_tiled_param_scalar(k, "M");
  val_t* N = xc_tiled_param_scalar(k, "N");
  val_t* K = xc_tiled_param_scalar(k, "K");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, M, "BLOCK_M"), ceildiv(k, N, "BLOCK_N")};
  xc_tiled_set_grid(k, 2, grid);
  xc_tiled_dim_t acc_shape[2] = {xc_tiled_dim_knob(kBM), xc_tiled_dim_knob(kBN)};
  val_t* rm = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_M")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBM))));
  val_t* rn = row(k, add(k, mul(k, xc_tiled_program_id(k, 1), kv(k, "BLOCK_N")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBN))));
  val_t* rk = xc_tiled_arange(k, xc_tiled_dim_knob(kBK));
  val_t* h0 = xc_tiled_const_f(k, XC_F16, 0.0, 0, NULL);
  val_t* acc0 = xc_tiled_const_f(k, XC_F32, 0.0, 2, acc_shape);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), K, kv(k, "BLOCK_K"), 1, &acc0);
  val_t* k0 = xc_tiled_for_iv(loop);
  val_t* ka = row(k, add(k, k0, rk)), *kb = col(k, add(k, k0, rk));
  val_t* a = xc_tiled_load(k, A, add(k, mul(k, rm, K), ka), land(k, lt(k, rm, M), lt(k, ka, K)), h0);
  val_t* b = xc_tiled_load(k, B, add(k, mul(k, kb, N), rn), land(k, lt(k, kb, K), lt(k, rn, N)), h0);
  val_t* next = xc_tiled_dot(k, a, b, xc_tiled_for_arg(loop, 0));
  xc_tiled_for_end(k, loop, 1, &next);
  xc_tiled_store(k, C, add(k, mul(k, rm, N), rn), xc_tiled_cast(k, xc_tiled_for_result(loop, 0), XC_F16),
                 land(k, lt(k, rm, M), lt(k, rn, N)));
  k = roundtrip(tk_finish(k));
  CHECK(k != NULL);
  if (!k) return;
  int64_t m = 37, n = 21, kk = 50, da[2] = {m, kk}, db[2] = {kk, n}, dc[2] = {m, n};
  xc_tensor_t *A16, *B16, *C16;
  CHECK_OK(xc_tensor_create(XC_F16, 2, da, &A16));
  CHECK_OK(xc_tensor_create(XC_F16, 2, db, &B16));
  CHECK_OK(xc_tensor_create(XC_F16, 2, dc, &C16));
  for (int64_t i = 0; i < A16->numel; i++) xc_tensor_set_f64(A16, i, rnd());
  for (int64_t i = 0; i < B16->numel; i++) xc_tensor_set_f64(B16, i, rnd());
  xc_tiled_arg_t args[6] = {{A16, 0}, {B16, 0}, {C16, 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
  const int64_t knobs[3] = {32, 16, 32};
  CHECK_OK(xc_tiled_run(k, knobs, 6, args));
  const char* text =
      "xir 1\ngraph g opset 23 {\n  input a: f16[37, 50]\n  input b: f16[50, 21]\n"
      "  y = MatMul(a, b)\n  output y\n}\n";
  const xc_tensor_t* ins[2] = {A16, B16};
  xc_tensor_t* ref = run_graph(text, 2, ins);
  CHECK(ref != NULL);
  int mismatches = 0;
  for (int64_t i = 0; ref && i < C16->numel; i++)
    mismatches += ((uint16_t*)C16->data)[i] != ((uint16_t*)ref->data)[i];
  CHECK_EQ_INT(mismatches, 0);
  xc_tensor_destroy(ref);
  xc_tensor_destroy(A16), xc_tensor_destroy(B16), xc_tensor_destroy(C16);
  xc_tiled_kernel_destroy(k);
}

/* ---- LayerNorm over rows, with residual and ReLU --------------------------------- */

/* Y = Relu(LayerNorm(X + Res) * gamma + beta) over the last dim N, BLOCK_R
 * rows per program, the whole row (BLOCK_N >= N) in one tile. */

static void check_layernorm(int64_t rows, int64_t n, const int64_t* knobs) {
  kern_t* k = roundtrip(build_layernorm(n, 1e-5));
  CHECK(k != NULL);
  if (!k) return;
  int64_t dx[2] = {rows, n}, dg[1] = {n};
  xc_tensor_t *X = random_tensor(2, dx), *Res = random_tensor(2, dx);
  xc_tensor_t *gamma = random_tensor(1, dg), *beta = random_tensor(1, dg), *Y = zeros(2, dx);
  xc_tiled_arg_t args[7] = {{X, 0}, {Res, 0}, {gamma, 0}, {beta, 0}, {Y, 0}, {NULL, rows}, {NULL, n}};
  CHECK_OK(xc_tiled_run(k, knobs, 7, args));
  char text[1024];
  snprintf(text, sizeof text,
           "xir 1\ngraph g opset 23 {\n  input x: f32[%lld, %lld]\n  input r: f32[%lld, %lld]\n"
           "  input g: f32[%lld]\n  input b: f32[%lld]\n  h = Add(x, r)\n"
           "  ln = LayerNormalization(h, g, b) {axis: -1, epsilon: 1e-5}\n  y = Relu(ln)\n"
           "  output y\n}\n",
           (long long)rows, (long long)n, (long long)rows, (long long)n, (long long)n, (long long)n);
  const xc_tensor_t* ins[4] = {X, Res, gamma, beta};
  xc_tensor_t* ref = run_graph(text, 4, ins);
  double err = rel_l2(Y, ref);
  if (!(err <= 1e-5)) fprintf(stderr, "layernorm %lldx%lld: rel-L2 %g\n", (long long)rows, (long long)n, err);
  CHECK(err <= 1e-5);
  xc_tensor_destroy(ref);
  xc_tensor_destroy(X), xc_tensor_destroy(Res), xc_tensor_destroy(gamma);
  xc_tensor_destroy(beta), xc_tensor_destroy(Y);
  xc_tiled_kernel_destroy(k);
}

static void test_layernorm(void) {
  const int64_t k1[2] = {1, 128}, k2[2] = {4, 256}, k3[2] = {2, 128};
  check_layernorm(7, 100, NULL);
  check_layernorm(7, 100, k1);
  check_layernorm(9, 100, k2);
  check_layernorm(3, 128, k3);
  /* BLOCK_N = 64 cannot hold a row of 100: the constraint rejects it. */
  kern_t* k = roundtrip(build_layernorm(100, 1e-5));
  if (k) {
    const int64_t bad[2] = {2, 64};
    CHECK_ERR(xc_tiled_knobs_check(k, bad, NULL), "100 <= BLOCK_N");
    int64_t v[2];
    CHECK_OK(xc_tiled_knobs_choose(k, NULL, v));
    CHECK_EQ_INT(v[1], 128);
    xc_tiled_kernel_destroy(k);
  }
}

/* ---- FlashAttention ---------------------------------------------------------------- */

/* O[bh] = softmax(Q[bh] K[bh]^T * scale [+ causal mask]) V[bh], online softmax
 * over BLOCK_N-wide K/V tiles. Q, K, V, O: [BH, S, D] with D = 16. */

static void check_attention(bool causal, int64_t bh, int64_t s, const int64_t* knobs) {
  double scale = 0.25; /* 1/sqrt(16) */
  kern_t* k = roundtrip(build_attention(causal, scale));
  CHECK(k != NULL);
  if (!k) return;
  int64_t d[3] = {bh, s, 16}, dmask[2] = {s, s};
  xc_tensor_t *Q = random_tensor(3, d), *K = random_tensor(3, d), *V = random_tensor(3, d);
  xc_tensor_t *O = zeros(3, d), *mask = zeros(2, dmask);
  for (int64_t i = 0; i < s; i++)
    for (int64_t j = 0; j < s; j++) xc_tensor_set_f64(mask, i * s + j, causal && j > i ? -INFINITY : 0);
  xc_tiled_arg_t args[6] = {{Q, 0}, {K, 0}, {V, 0}, {O, 0}, {NULL, s}, {NULL, bh}};
  CHECK_OK(xc_tiled_run(k, knobs, 6, args));
  char text[1024];
  snprintf(text, sizeof text,
           "xir 1\ngraph g opset 23 {\n  input q: f32[%lld, %lld, 16]\n  input k: f32[%lld, %lld, 16]\n"
           "  input v: f32[%lld, %lld, 16]\n  input mask: f32[%lld, %lld]\n"
           "  const scale: f32[] = 0.25\n  kt = Transpose(k) {perm: [0, 2, 1]}\n"
           "  s = MatMul(q, kt)\n  ss = Mul(s, scale)\n  sm = Add(ss, mask)\n"
           "  p = Softmax(sm) {axis: -1}\n  o = MatMul(p, v)\n  output o\n}\n",
           (long long)bh, (long long)s, (long long)bh, (long long)s, (long long)bh, (long long)s,
           (long long)s, (long long)s);
  const xc_tensor_t* ins[4] = {Q, K, V, mask};
  xc_tensor_t* ref = run_graph(text, 4, ins);
  double err = rel_l2(O, ref);
  if (!(err <= 1e-5))
    fprintf(stderr, "attention causal=%d S=%lld: rel-L2 %g\n", (int)causal, (long long)s, err);
  CHECK(err <= 1e-5);
  xc_tensor_destroy(ref);
  xc_tensor_destroy(Q), xc_tensor_destroy(K), xc_tensor_destroy(V);
  xc_tensor_destroy(O), xc_tensor_destroy(mask);
  xc_tiled_kernel_destroy(k);
}

static void test_attention(void) {
  const int64_t k1[3] = {8, 16, 32}, k2[3] = {32, 8, 128}, k3[3] = {16, 32, 64};
  for (int causal = 0; causal < 2; causal++) {
    check_attention(causal, 2, 37, NULL);
    check_attention(causal, 2, 37, k1);
    check_attention(causal, 3, 37, k2);
    check_attention(causal, 1, 64, k3);
    check_attention(causal, 1, 5, k1);
  }
}


/* The mask of the nth load (in program order, loop bodies included). */
static const xc_tiled_value_t* nth_load_mask(const xc_tiled_block_t* b, int* nth) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_LOAD && (*nth)-- == 0) return op->num_operands > 2 ? op->operands[2] : NULL;
    if (op->body) {
      const xc_tiled_value_t* m = nth_load_mask(op->body, nth);
      if (m) return m;
    }
  }
  return NULL;
}

/* A mask's range: 1 when always true, 0 when always false, -1 otherwise. */
static int mask_state(const char* text, const int64_t* knobs, int nth) {
  xc_tiled_kernel_t* k = NULL;
  xc_status_t st = xc_tiled_parse(text, strlen(text), "ranges.tiled", &k);
  CHECK_OK(st);
  if (st || !k) return -2;
  int64_t defaults[4] = {0};
  for (int i = 0; i < k->num_knobs && i < 4; i++) defaults[i] = k->knobs[i].default_value;
  xc_tiled_range_t* r = xc_tiled_ranges(k, knobs ? knobs : defaults);
  CHECK(r != NULL);
  int n = nth;
  const xc_tiled_value_t* m = nth_load_mask(k->body, &n);
  CHECK(m != NULL);
  int state = -2;
  if (r && m) state = !r[m->id].known || r[m->id].lo != r[m->id].hi ? -1 : (int)r[m->id].lo;
  free(r);
  xc_tiled_kernel_destroy(k);
  return state;
}

/* xc_tiled_ranges: masks of tiles that divide static bounds are decided
 * true; ragged edges, scalar-parameter grids and carried values stay open. */
static void test_ranges(void) {
  char text[2048];
  const char* fmt =
      "kernel @rng {\n"
      "  knob BLOCK: tile in {64, 128, 256} = 256\n"
      "  knob BK: tile in {16, 32, 48} = 32\n"
      "  param %%v0: memref<global f32 in>\n"
      "  param %%v1: memref<global f32 inout>\n"
      "  grid [ceildiv(%d, BLOCK)]\n"
      "  %%0 = knob BLOCK : i64\n"
      "  %%1 = program_id 0 : i64\n"
      "  %%2 = mul %%1, %%0 : i64\n"
      "  %%3 = arange : i64[BLOCK]\n"
      "  %%4 = add %%2, %%3 : i64[BLOCK]\n"
      "  %%5 = const %d : i64\n"
      "  %%6 = cmp lt %%4, %%5 : bool[BLOCK]\n"
      "  %%7 = load %%v0[%%4] mask %%6 : f32[BLOCK]\n"
      "  %%8 = const 0 : i64\n"
      "  %%9 = const %d : i64\n"
      "  %%10 = knob BK : i64\n"
      "  %%11 = arange : i64[BK]\n"
      "  %%12 = const 0 : f32[BK]\n"
      "  %%15 = for %%13 = %%8 to %%9 step %%10 iter(%%14 = %%12: f32[BK]) {\n"
      "    %%16 = add %%13, %%11 : i64[BK]\n"
      "    %%17 = cmp lt %%16, %%9 : bool[BK]\n"
      "    %%18 = cmp ge %%16, %%8 : bool[BK]\n"
      "    %%19 = and %%17, %%18 : bool[BK]\n"
      "    %%20 = load %%v0[%%16] mask %%19 : f32[BK]\n"
      "    %%21 = add %%14, %%20 : f32[BK]\n"
      "    yield %%21\n"
      "  }\n"
      "  store %%v1[%%4], %%7 mask %%6\n"
      "}\n";
  /* 1024 elements in tiles of 256 (4 programs), a loop over 96 in steps of 32 */
  snprintf(text, sizeof text, fmt, 1024, 1024, 96);
  CHECK_EQ_INT(mask_state(text, NULL, 0), 1);
  CHECK_EQ_INT(mask_state(text, NULL, 1), 1);
  /* ragged: 1000 elements leave the last program's tile partly outside */
  snprintf(text, sizeof text, fmt, 1000, 1000, 100);
  CHECK_EQ_INT(mask_state(text, NULL, 0), -1);
  CHECK_EQ_INT(mask_state(text, NULL, 1), -1);
  /* the same text under other knobs: 1024 / 128, 96 / 48 divide; 96 / 64 does not */
  snprintf(text, sizeof text, fmt, 1024, 1024, 96);
  const int64_t k128_48[2] = {128, 48}, k64_16[2] = {64, 16};
  CHECK_EQ_INT(mask_state(text, k128_48, 0), 1);
  CHECK_EQ_INT(mask_state(text, k128_48, 1), 1);
  CHECK_EQ_INT(mask_state(text, k64_16, 1), 1);
  snprintf(text, sizeof text, fmt, 1024, 1024, 100);
  CHECK_EQ_INT(mask_state(text, k64_16, 1), -1); /* 100 = 6 * 16 + 4 */
  /* the bound below the grid's reach: never fully true; a bound of 0: never true */
  snprintf(text, sizeof text, fmt, 1024, 1000, 96);
  CHECK_EQ_INT(mask_state(text, NULL, 0), -1);
  snprintf(text, sizeof text, fmt, 1024, 0, 96);
  CHECK_EQ_INT(mask_state(text, NULL, 0), 0);
}

/* The origin survives print -> parse as a comment line, and the tuning
 * task hash ignores it (a kernel's tuning key is its structure). */
static void test_origin_roundtrip(void) {
  kern_t* k = build_gemm(EPI_BIAS_GELU);
  CHECK(k != NULL);
  if (!k) return;
  char before[33], after[33];
  CHECK_OK(xc_tune_task_hash(k, before));
  xc_tiled_set_origin(k, "mm0:MatMul, add0:Add,\ngelu0:Gelu");
  CHECK_OK(xc_tune_task_hash(k, after));
  CHECK_STR(after, before);
  char* text = xc_tiled_print_to_string(k);
  CHECK(text && strstr(text, "\n  # origin: mm0:MatMul, add0:Add, gelu0:Gelu\n") != NULL);
  kern_t* back = NULL;
  if (text) CHECK_OK(xc_tiled_parse(text, strlen(text), "origin", &back));
  if (back) {
    CHECK_STR(back->origin ? back->origin : "(none)", "mm0:MatMul, add0:Add, gelu0:Gelu");
    char again[33];
    CHECK_OK(xc_tune_task_hash(back, again));
    CHECK_STR(again, before);
    xc_tiled_kernel_destroy(back);
  }
  free(text);
  xc_tiled_kernel_destroy(k);
}

int main(void) {
  test_origin_roundtrip();
  test_ranges();
  test_gemm();
  test_gemm_knob_choice();
  test_gemm_f16();
  test_layernorm();
  test_attention();
  return xc_test_summary("test_tiled");
}
