/* The C-family emitter end to end: tiled kernels (elementwise with masks and
 * broadcasting, a row reduction with a loop-carried tile, a GEMM with fused
 * epilogues at ragged sizes, LayerNorm, FlashAttention causal and not) are
 * emitted for several knob choices, compiled and launched through the
 * target API on `cpu` and on `opencl` (skipped without a platform), and
 * compared with the tiled interpreter (f32 rel-L2 <= 1e-5, integers exact);
 * also on `cuda` when a CUDA device is present.
 * Output buffers are poisoned with NaN before each launch and followed by
 * sentinel bytes that must survive. Also: declined kernels, bad knobs,
 * local-memory limits. */
#include "kernel_harness.h"
#include "xcomp/fusion.h"
#include "xcomp/interp.h"
#include "xcomp/lower.h"
#include "xcomp/xir.h"

#include "../../targets/cstyle/cstyle.h"
#include "../../targets/cuda/cuda_target.h"
#include "../../targets/rocm/rocm_target.h"

typedef struct device_slot {
  const char* selector;
  xc_device_t* dev;
  bool tried;
} device_slot_t;

#define NUM_DEVICES 3
static device_slot_t devices[NUM_DEVICES] = {{"cpu", NULL, false}, {"opencl", NULL, false}, {"cuda", NULL, false}};
static int runs[NUM_DEVICES];

static xc_device_t* get_device(int which) {
  device_slot_t* s = &devices[which];
  if (!s->tried) {
    s->tried = true;
    /* XCOMP_EMIT_TEST_OPENCL selects another OpenCL device ("opencl:nvidia") */
    const char* sel = which == 1 && getenv("XCOMP_EMIT_TEST_OPENCL") ? getenv("XCOMP_EMIT_TEST_OPENCL") : s->selector;
    xc_status_t st = xc_device_open(sel, &s->dev);
    if (st) {
      if (which == 0) CHECK_OK(st);
      else {
        printf("SKIP %s: %s\n", s->selector, xc_status_message(st));
        xc_status_free(st);
      }
      s->dev = NULL;
    }
  }
  return s->dev;
}

/* Runs kernel k with `knobs` (NULL = defaults) on device `which` and compares
 * every output buffer with `ref` (the interpreter's results). args: the
 * interpreter arguments holding the inputs. */
static void run_on(int which, const kern_t* k, const int64_t* knob_values, const xc_tiled_arg_t* args,
                   xc_tensor_t* const* ref, const char* label) {
  xc_device_t* dev = get_device(which);
  if (!dev) return;
  xc_target_t* t = xc_device_target(dev);
  const xc_device_caps_t* caps = xc_device_caps(dev);
  char why[512];
  if (!xc_target_supports(t, caps, (const struct xc_tiled_kernel*)k, why, sizeof why)) {
    fprintf(stderr, "%s on %s: declined: %s\n", label, devices[which].selector, why);
    CHECK(false);
    return;
  }
  xc_knob_t knobs[16];
  for (int i = 0; i < k->num_knobs; i++) knobs[i] = (xc_knob_t){k->knobs[i].name, knob_values[i]};
  xc_blob_t blob;
  /* XCOMP_EMIT_TEST_CFLAGS: extra flags for the cpu kernels (e.g. -fsanitize=address in an ASan build) */
  xc_compile_options_t opts;
  memset(&opts, 0, sizeof opts);
  if (which == 0) opts.extra_flags = getenv("XCOMP_EMIT_TEST_CFLAGS");
  else if (which == 1) opts.extra_flags = getenv("XCOMP_EMIT_TEST_CLFLAGS") ? getenv("XCOMP_EMIT_TEST_CLFLAGS") : "-cl-std=CL1.2"; /* plain OpenCL C 1.2, as every driver accepts */
  xc_status_t st = xc_target_compile_kernel(t, caps, (const struct xc_tiled_kernel*)k, knobs, k->num_knobs, &opts,
                                            &blob);
  if (st) {
    fprintf(stderr, "%s on %s: %s\n", label, devices[which].selector, xc_status_message(st));
    xc_status_free(st);
    CHECK(false);
    return;
  }
  char full[256];
  snprintf(full, sizeof full, "%s on %s", label, devices[which].selector);
  kernel_launch_check(dev, &blob, k, knob_values, args, ref, full, false);
  runs[which]++;
}

/* Interprets k on args (outputs start at zero), then runs it on every target. */
static void check_kernel(const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args, const char* label) {
  int64_t values[16];
  xc_tensor_t* ref[16];
  kernel_reference(k, knobs, args, values, ref);
  for (int w = 0; w < NUM_DEVICES; w++) run_on(w, k, values, args, ref, label);
}

/* ---- kernels ----------------------------------------------------------------------- */

static void test_elementwise(void) {
  kern_t* k = build_elementwise();
  CHECK(k != NULL);
  if (!k) return;
  const int64_t choices[][3] = {{4, 32, 64}, {1, 16, 32}, {8, 64, 128}};
  const int64_t sizes[][2] = {{13, 37}, {8, 64}, {1, 1}};
  for (int c = 0; c < 3; c++)
    for (int s = 0; s < 3; s++) {
      int64_t m = sizes[s][0], n = sizes[s][1];
      xc_tiled_arg_t args[7] = {{tensor(XC_F32, m * n, true), 0}, {tensor(XC_F32, n, true), 0},
                                {tensor(XC_F32, m, true), 0},     {tensor(XC_F32, m * n, false), 0},
                                {tensor(XC_I32, m * n, false), 0}, {NULL, m}, {NULL, n}};
      char label[128];
      snprintf(label, sizeof label, "elementwise %lldx%lld knobs %d", (long long)m, (long long)n, c);
      check_kernel(k, choices[c], args, label);
      free_args(args, 7);
    }
  xc_tiled_kernel_destroy(k);
}

static void test_row_reduce(void) {
  kern_t* k = build_row_reduce();
  CHECK(k != NULL);
  if (!k) return;
  /* BLOCK_R BLOCK_N num_threads. On work-group targets all but the second
   * reduce in registers (docs/emitter.md, "Row reductions in registers"):
   * a row per 32 lanes (C < T), a row per 128 lanes with four slots each
   * (C < T, rows in slots), and two rows of two slots per thread (C = 2 T),
   * a row of eight slots per thread (C = 8 T) */
  const int64_t choices[][3] = {{2, 32, 64}, {1, 8, 16}, {8, 128, 256}, {2, 128, 64}, {1, 128, 16}};
  const int64_t sizes[][2] = {{7, 100}, {16, 32}, {3, 5}};
  for (int c = 0; c < 5; c++)
    for (int s = 0; s < 3; s++) {
      int64_t r = sizes[s][0], n = sizes[s][1];
      xc_tiled_arg_t args[5] = {{tensor(XC_F32, r * n, true), 0}, {tensor(XC_F32, r, false), 0},
                                {tensor(XC_F32, r, false), 0}, {NULL, r}, {NULL, n}};
      char label[128];
      snprintf(label, sizeof label, "row reduce %lldx%lld knobs %d", (long long)r, (long long)n, c);
      check_kernel(k, choices[c], args, label);
      free_args(args, 5);
    }
  xc_tiled_kernel_destroy(k);
}

static void test_gemm(void) {
  /* knob order: BLOCK_M BLOCK_N BLOCK_K num_threads vector stages */
  const int64_t choices[][6] = {{32, 32, 16, 128, 4, 2}, {16, 16, 8, 32, 1, 1}, {64, 32, 32, 256, 2, 3},
                                {16, 64, 16, 64, 4, 2}};
  const int64_t sizes[][3] = {{67, 45, 33}, {64, 64, 32}, {1, 3, 1}};
  for (int epi = 0; epi < 2; epi++) {
    kern_t* k = build_gemm(epi);
    CHECK(k != NULL);
    if (!k) continue;
    for (int c = 0; c < 4; c++)
      for (int s = 0; s < 3; s++) {
        if (s > 0 && c > 1) continue;
        int64_t m = sizes[s][0], n = sizes[s][1], kk = sizes[s][2];
        xc_tiled_arg_t args[8] = {{tensor(XC_F32, m * kk, true), 0}, {tensor(XC_F32, kk * n, true), 0},
                                  {tensor(XC_F32, n, true), 0},      {tensor(XC_F32, m * n, true), 0},
                                  {tensor(XC_F32, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
        char label[128];
        snprintf(label, sizeof label, "gemm epi %d %lldx%lldx%lld knobs %d", epi, (long long)m, (long long)n,
                 (long long)kk, c);
        check_kernel(k, choices[c], args, label);
        free_args(args, 8);
      }
    xc_tiled_kernel_destroy(k);
  }
}

static void test_layernorm(void) {
  const int64_t choices[][2] = {{2, 128}, {1, 128}, {4, 256}};
  for (int c = 0; c < 3; c++) {
    int64_t rows = c == 2 ? 9 : 7, n = 100;
    kern_t* k = build_layernorm(n, 1e-5);
    CHECK(k != NULL);
    if (!k) return;
    xc_tiled_arg_t args[7] = {{tensor(XC_F32, rows * n, true), 0}, {tensor(XC_F32, rows * n, true), 0},
                              {tensor(XC_F32, n, true), 0},        {tensor(XC_F32, n, true), 0},
                              {tensor(XC_F32, rows * n, false), 0}, {NULL, rows}, {NULL, n}};
    char label[128];
    snprintf(label, sizeof label, "layernorm %lldx%lld knobs %d", (long long)rows, (long long)n, c);
    check_kernel(k, choices[c], args, label);
    free_args(args, 7);
    xc_tiled_kernel_destroy(k);
  }
}

static void test_attention(void) {
  const int64_t choices[][3] = {{16, 16, 64}, {8, 16, 32}, {32, 8, 128}};
  const int64_t sizes[][2] = {{2, 37}, {1, 64}, {1, 5}};
  for (int causal = 0; causal < 2; causal++) {
    kern_t* k = build_attention(causal, 0.25);
    CHECK(k != NULL);
    if (!k) continue;
    for (int c = 0; c < 3; c++)
      for (int s = 0; s < 3; s++) {
        int64_t sl = sizes[s][1];
        xc_tiled_arg_t args[6];
        attention_args(sizes[s][0], sl, args);
        char label[128];
        snprintf(label, sizeof label, "attention causal %d S=%lld knobs %d", causal, (long long)sl, c);
        check_kernel(k, choices[c], args, label);
        free_args(args, 6);
      }
    xc_tiled_kernel_destroy(k);
  }
}

/* ---- 16-bit floats ------------------------------------------------------------------ */

/* Conversions bit for bit: every 16-bit pattern to f32, and f32 values around
 * the rounding boundaries (ties, subnormals, overflow, inf, NaN) to 16 bits. */
static void test_convert(void) {
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    kern_t* k = build_convert(half);
    CHECK(k != NULL);
    if (!k) continue;
    const int64_t n = 65536;
    xc_tiled_arg_t args[5] = {{tensor(XC_F32, n, false), 0}, {tensor(half, n, false), 0},
                              {tensor(half, n, false), 0},   {tensor(XC_F32, n, false), 0}, {NULL, n}};
    float* a = (float*)args[0].buffer->data;
    uint16_t* b = (uint16_t*)args[2].buffer->data;
    const float special[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e6f, INFINITY, -INFINITY, NAN,
                             5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.9406967e-8f, 6.1035156e-5f,
                             6.1035152e-5f, 3.3895314e38f, 1.0009766f, 1.0004883f, 1.0014648f};
    for (int64_t i = 0; i < n; i++) {
      b[i] = (uint16_t)i;
      if (i < (int64_t)(sizeof special / sizeof special[0])) a[i] = special[i];
      else {
        /* random f32 bit patterns over the whole exponent range, and
         * patterns that sit exactly on a 16-bit rounding tie */
        uint32_t u = (uint32_t)(rnd() * 2147483647.0) ^ (uint32_t)(i * 2654435761u);
        if (i % 3 == 0) u = (u & 0xffff0000u) | (h ? 0x8000u : 0x1000u);
        memcpy(&a[i], &u, 4);
      }
    }
    const int64_t choices[][2] = {{256, 64}, {64, 32}};
    for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, h ? "convert bf16" : "convert f16");
    free_args(args, 5);
    xc_tiled_kernel_destroy(k);
  }
}

/* Half GEMMs: 16-bit tiles, f32 accumulation, one rounding into the output.
 * The emitted code accumulates in f32 where the interpreter uses double, so
 * the rounded outputs agree to a 16-bit ulp (checked by rel-L2 <= 2e-3). */
static void test_gemm_half(void) {
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    kern_t* k = build_gemm_half(half);
    CHECK(k != NULL);
    if (!k) continue;
    int64_t m = 37, n = 21, kk = 50;
    xc_tiled_arg_t args[6] = {{tensor(half, m * kk, true), 0}, {tensor(half, kk * n, true), 0},
                              {tensor(half, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
    const int64_t choices[][4] = {{16, 16, 16, 64}, {32, 16, 32, 128}};
    for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, h ? "gemm bf16" : "gemm f16");
    free_args(args, 6);
    xc_tiled_kernel_destroy(k);
  }
}

/* ---- every op ------------------------------------------------------------------------ */

static void test_ops_zoo(void) {
  for (int f = 0; f < 2; f++) {
    xc_dtype_t ft = f ? XC_F64 : XC_F32;
    kern_t* k = build_ops_zoo(ft);
    CHECK(k != NULL);
    if (!k) continue;
    int64_t n = 300;
    xc_tiled_arg_t args[4] = {{tensor(ft, n, true), 0}, {tensor(ft, TK_ZOO_FLOAT_OUTS * n, false), 0},
                              {tensor(XC_I32, TK_ZOO_INT_OUTS * n, false), 0}, {NULL, n}};
    /* exact ties and edges: 0, +-0.5 (f16 round trip, ceil), 1 */
    xc_tensor_set_f64(args[0].buffer, 0, 0.0);
    xc_tensor_set_f64(args[0].buffer, 1, 0.5);
    xc_tensor_set_f64(args[0].buffer, 2, -0.5);
    xc_tensor_set_f64(args[0].buffer, 3, 1.0);
    const int64_t choices[][2] = {{128, 64}, {16, 32}};
    for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, f ? "ops zoo f64" : "ops zoo f32");
    free_args(args, 4);
    xc_tiled_kernel_destroy(k);
  }
  kern_t* k = build_zoo_2d();
  CHECK(k != NULL);
  if (!k) return;
  xc_tiled_arg_t args[7] = {{tensor(XC_F32, 30, true), 0},  {tensor(XC_F32, 30, false), 0},
                            {tensor(XC_F32, 5, false), 0},  {tensor(XC_F32, 5, false), 0},
                            {tensor(XC_I8, 30, false), 0},  {tensor(XC_I8, 30, false), 0},
                            {tensor(XC_I32, 36, false), 0}};
  for (int i = 0; i < 30; i++) {
    xc_tensor_set_f64(args[4].buffer, i, (double)((i * 37) % 255 - 127));
    xc_tensor_set_f64(args[5].buffer, i, (double)((i * 91) % 255 - 127));
  }
  const int64_t choices[][1] = {{64}, {8}};
  for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, "zoo 2d");
  free_args(args, 7);
  xc_tiled_kernel_destroy(k);
}

/* Max and min of a pair that holds NaNs on either side and ties of signed
 * zeros, both ways round: a NaN of either operand comes out, as in the
 * interpreter (the dialects order the selects of XC_MAX / XC_MIN their own
 * way: the C dialect tests the ordered comparison first). */
static void test_max_min_nan(void) {
  int kb;
  kern_t* k = tk_flat_kernel("max_min_nan", 16, 64, &kb);
  if (!k) return;
  val_t* A = xc_tiled_param_buffer(k, "A", XC_F32, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  val_t* mask = NULL;
  val_t* offs = tk_flat_offsets(k, kb, n, &mask);
  val_t* a = xc_tiled_load(k, A, offs, mask, NULL);
  val_t* b = xc_tiled_load(k, B, offs, mask, NULL);
  val_t* ys[4] = {xc_tiled_binary(k, XC_TOP_MAX, a, b), xc_tiled_binary(k, XC_TOP_MAX, b, a),
                  xc_tiled_binary(k, XC_TOP_MIN, a, b), xc_tiled_binary(k, XC_TOP_MIN, b, a)};
  for (int j = 0; j < 4; j++) xc_tiled_store(k, Y, add(k, offs, mul(k, n, i64c(k, j))), ys[j], mask);
  CHECK_OK(xc_tiled_verify(k));
  enum { N = 40 };
  xc_tiled_arg_t args[4] = {{tensor(XC_F32, N, true), 0}, {tensor(XC_F32, N, true), 0},
                            {tensor(XC_F32, 4 * N, false), 0}, {NULL, N}};
  for (int i = 0; i < N; i += 5) { /* NaN in a, NaN in b, both, -0 vs +0, equal values */
    xc_tensor_set_f64(args[0].buffer, i, NAN);
    xc_tensor_set_f64(args[1].buffer, i + 1, NAN);
    xc_tensor_set_f64(args[0].buffer, i + 2, NAN);
    xc_tensor_set_f64(args[1].buffer, i + 2, NAN);
    xc_tensor_set_f64(args[0].buffer, i + 3, -0.0);
    xc_tensor_set_f64(args[1].buffer, i + 3, 0.0);
    xc_tensor_set_f64(args[1].buffer, i + 4, xc_tensor_get_f64(args[0].buffer, i + 4));
  }
  const int64_t choices[][2] = {{64, 64}, {16, 32}};
  for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, "max/min with NaNs");
  free_args(args, 4);
  xc_tiled_kernel_destroy(k);
}

/* A loop whose yields read other carried values (the new value of slot 1 is
 * a view of the old value of slot 0): the copies must not see half-updated
 * state. Outputs s (scalar), u [8] and w [1,8] after n iterations. */
static void test_carry_order(void) {
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("carry_order", &k));
  const int64_t th[] = {4, 64};
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 4);
  val_t* O = xc_tiled_param_buffer(k, "O", XC_F32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  const xc_tiled_expr_t* g[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, g);
  xc_tiled_dim_t d8[1] = {xc_tiled_dim_const(8)}, d18[2] = {xc_tiled_dim_const(1), xc_tiled_dim_const(8)};
  val_t* r8 = xc_tiled_arange(k, d8[0]);
  val_t* init[4] = {f32c(k, 1.0), xc_tiled_cast(k, r8, XC_F32), xc_tiled_const_f(k, XC_F32, 0.0, 2, d18),
                    xc_tiled_const_f(k, XC_F32, -1.0, 1, d8)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), n, i64c(k, 1), 4, init);
  {
    val_t* s = xc_tiled_for_arg(loop, 0), *u = xc_tiled_for_arg(loop, 1), *w = xc_tiled_for_arg(loop, 2);
    val_t* next[4] = {mul(k, s, f32c(k, 2.0)),
                      add(k, u, xc_tiled_broadcast(k, s, 1, d8)),
                      xc_tiled_expand_dims(k, u, 0),
                      xc_tiled_broadcast(k, add(k, s, xc_tiled_reduce(k, XC_REDUCE_SUM, w, 1)), 1, d8)};
    xc_tiled_for_end(k, loop, 4, next);
  }
  xc_tiled_store(k, O, i64c(k, 0), xc_tiled_for_result(loop, 0), NULL);
  xc_tiled_store(k, O, add(k, r8, i64c(k, 1)), xc_tiled_for_result(loop, 1), NULL);
  xc_tiled_store(k, O, add(k, row(k, r8), i64c(k, 9)), xc_tiled_for_result(loop, 2), NULL);
  xc_tiled_store(k, O, add(k, r8, i64c(k, 17)), xc_tiled_for_result(loop, 3), NULL);
  CHECK_OK(xc_tiled_verify(k));
  xc_tiled_arg_t args[2] = {{tensor(XC_F32, 25, false), 0}, {NULL, 5}};
  const int64_t choices[][1] = {{4}, {64}};
  for (int c = 0; c < 2; c++) check_kernel(k, choices[c], args, "carry order");
  /* closed form after 5 iterations: s = 32, u[i] = i + 31, w = u before the last step */
  CHECK_NEAR(xc_tensor_get_f64(args[0].buffer, 0), 32.0, 0);
  CHECK_NEAR(xc_tensor_get_f64(args[0].buffer, 1 + 3), 34.0, 0);
  CHECK_NEAR(xc_tensor_get_f64(args[0].buffer, 9 + 3), 18.0, 0);
  free_args(args, 2);
  xc_tiled_kernel_destroy(k);
}

/* The C dialect's register-blocked dot at shapes its blocking must handle:
 * M = 12 (blocks of 6 rows), N = 48 (one or two vectors of 16 lanes), an
 * odd K, a b operand that is a transposed view (packed first), a virtual
 * accumulator (bias broadcast) and then an array accumulator with b read
 * in place; f32 and f64. Y1 = bias + A @ Bt^T, Y2 = Y1 + A @ B. */
static kern_t* build_dot_blocked(xc_dtype_t dt, int64_t M, int64_t N, int64_t K) {
  kern_t* k;
  char name[32];
  snprintf(name, sizeof name, "dot_blocked_%s", xc_dtype_name(dt));
  if (xc_tiled_kernel_create(name, &k)) return NULL;
  const int64_t th[] = {8, 16, 64};
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 3, th, 64);
  val_t* A = xc_tiled_param_buffer(k, "A", dt, XC_ROLE_IN);
  val_t* Bt = xc_tiled_param_buffer(k, "Bt", dt, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", dt, XC_ROLE_IN);
  val_t* Y1 = xc_tiled_param_buffer(k, "Y1", dt, XC_ROLE_OUT);
  val_t* Y2 = xc_tiled_param_buffer(k, "Y2", dt, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  val_t* rm = xc_tiled_arange(k, xc_tiled_dim_const(M)), *rn = xc_tiled_arange(k, xc_tiled_dim_const(N));
  val_t* rk = xc_tiled_arange(k, xc_tiled_dim_const(K));
  val_t* a = xc_tiled_load(k, A, add(k, mul(k, col(k, rm), i64c(k, K)), row(k, rk)), NULL, NULL);    /* [M,K] */
  val_t* bt = xc_tiled_load(k, Bt, add(k, mul(k, col(k, rn), i64c(k, K)), row(k, rk)), NULL, NULL);  /* [N,K] */
  val_t* b = xc_tiled_load(k, B, add(k, mul(k, col(k, rk), i64c(k, N)), row(k, rn)), NULL, NULL);    /* [K,N] */
  xc_tiled_dim_t dmn[2] = {xc_tiled_dim_const(M), xc_tiled_dim_const(N)};
  val_t* bias = xc_tiled_broadcast(k, row(k, xc_tiled_cast(k, rn, dt)), 2, dmn);
  val_t* y1 = xc_tiled_dot(k, a, xc_tiled_trans(k, bt), bias);
  val_t* y2 = xc_tiled_dot(k, a, b, y1);
  val_t* off = add(k, mul(k, col(k, rm), i64c(k, N)), row(k, rn));
  xc_tiled_store(k, Y1, off, y1, NULL);
  xc_tiled_store(k, Y2, off, y2, NULL);
  return tk_finish(k);
}

static void test_dot_blocked(void) {
  const int64_t M = 12, N = 48, K = 5;
  for (int f = 0; f < 2; f++) {
    xc_dtype_t dt = f ? XC_F64 : XC_F32;
    kern_t* k = build_dot_blocked(dt, M, N, K);
    CHECK(k != NULL);
    if (!k) continue;
    /* the C emitter takes the blocked path for a 16-lane device, and not for N = 1 */
    xc_device_caps_t caps;
    memset(&caps, 0, sizeof caps);
    caps.kind = XC_DEVICE_CPU;
    caps.simd_width = 16;
    xc_kernel_source_t src;
    CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_c, &caps, k, NULL, 0, NULL, &src));
    CHECK(src.text && strstr(src.text, "vector_size(64)") && strstr(src.text, "c5_0 += am * b0"));
    CHECK(src.text && strstr(src.text, "xc_bp_"));  /* the transposed b is packed */
    xc_kernel_source_release(&src);
    xc_tiled_arg_t args[5] = {{tensor(dt, M * K, true), 0}, {tensor(dt, N * K, true), 0},
                              {tensor(dt, K * N, true), 0}, {tensor(dt, M * N, false), 0},
                              {tensor(dt, M * N, false), 0}};
    const int64_t choices[][1] = {{64}};
    check_kernel(k, choices[0], args, f ? "dot blocked f64" : "dot blocked f32");
    /* closed form for one element: Y1[m,n] = n + sum_q A[m,q] * Bt[n,q] */
    double y = 7;
    for (int q = 0; q < K; q++)
      y += xc_tensor_get_f64(args[0].buffer, 3 * K + q) * xc_tensor_get_f64(args[1].buffer, 7 * K + q);
    CHECK_NEAR(xc_tensor_get_f64(args[3].buffer, 3 * N + 7), y, f ? 1e-12 : 1e-5);
    free_args(args, 5);
    xc_tiled_kernel_destroy(k);
  }
}

/* A GPU's caps for emitting work-group kernels without a device. */
static xc_device_caps_t wg_caps(void) {
  xc_device_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.kind = XC_DEVICE_GPU;
  caps.max_threads_per_group = 256;
  caps.local_memory_bytes = 65536;
  return caps;
}

/* build_dot_blocked's arguments: A [M,K], Bt [N,K], B [K,N] in, Y1 Y2 out. */
static void dot_blocked_args(xc_tiled_arg_t* args, int64_t M, int64_t N, int64_t K) {
  args[0] = (xc_tiled_arg_t){tensor(XC_F32, M * K, true), 0};
  args[1] = (xc_tiled_arg_t){tensor(XC_F32, N * K, true), 0};
  args[2] = (xc_tiled_arg_t){tensor(XC_F32, K * N, true), 0};
  args[3] = (xc_tiled_arg_t){tensor(XC_F32, M * N, false), 0};
  args[4] = (xc_tiled_arg_t){tensor(XC_F32, M * N, false), 0};
}

/* The same kernel on work-group dialects (docs/emitter.md, "Register-
 * blocked dots"): a work-item's slots as rows x columns of one K loop —
 * every row at columns lid, lid + T, ... (N % T == 0, odd K: one k a
 * step), rows lid / N + j * T / N at column lid % N (T % N == 0, K % 4 ==
 * 0: four k a step), neither (the per-element loop), and more slots than
 * the form keeps in registers; then result shapes in the chunked layout
 * (vec 4 on OpenCL): 4 work-items a row holding rows lid / 4 + 4 r at 4
 * columns (a 4 x 4 block; b's chunk read as one float4 where b is an
 * array, element by element through the transposed view), 8 a row with
 * every row (16 x 4, odd K), and rows of T * 4 (the chunked layout of long
 * rows, 4 x 4). The OpenCL source says which form it took; every case runs
 * against the interpreter on each device. */
static void test_dot_wg_blocked(void) {
  struct {
    int64_t M, N, K, threads;
    bool blocked;
    const char* block; /* the form's rows x columns, NULL: not checked */
  } cases[] = {{12, 48, 5, 8, true, NULL},   {12, 16, 8, 64, true, NULL}, {12, 48, 5, 64, false, NULL},
               {64, 32, 4, 8, false, NULL}, {12, 48, 8, 8, true, NULL},  {16, 16, 8, 16, true, "4 rows x 4 columns"},
               {16, 32, 5, 8, true, "16 rows x 4 columns"}, {4, 64, 8, 16, true, "4 rows x 4 columns"}};
  for (int c = 0; c < 8; c++) {
    int64_t M = cases[c].M, N = cases[c].N, K = cases[c].K;
    kern_t* k = build_dot_blocked(XC_F32, M, N, K);
    CHECK(k != NULL);
    if (!k) continue;
    xc_device_caps_t caps = wg_caps();
    xc_knob_t th = {"num_threads", cases[c].threads};
    xc_kernel_source_t src;
    CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_opencl, &caps, k, &th, 1, NULL, &src));
    bool blocked = src.text && strstr(src.text, "register-blocked dot");
    if (blocked != cases[c].blocked) fprintf(stderr, "dot wg blocked case %d: form %d, want %d\n", c, blocked, cases[c].blocked);
    CHECK(blocked == cases[c].blocked);
    if (c == 1 || c == 4) /* four k a step, a's rows as aligned float4 (both forms) */
      CHECK(src.text && strstr(src.text, "q += 4") && strstr(src.text, "const float4 a4") &&
            strstr(src.text, "__local __attribute__((aligned(16))) float"));
    if (cases[c].block) {
      /* the second dot's b, an array: rows of accumulators in float4 (OpenCL's
       * vectors), b's chunk one vload4; a dialect without float vectors reads
       * b's chunk as one float4 into scalar accumulators */
      CHECK(src.text && strstr(src.text, cases[c].block));
      CHECK(src.text && strstr(src.text, "float4 xv[") && strstr(src.text, "= b4[0];"));
      xc_cstyle_dialect_t scalars = xc_cstyle_dialect_opencl;
      scalars.float_vectors = false;
      xc_kernel_source_t s2;
      CHECK_OK(xc_cstyle_emit(&scalars, &caps, k, &th, 1, NULL, &s2));
      CHECK(s2.text && strstr(s2.text, cases[c].block) && strstr(s2.text, "const float4 b4") && !strstr(s2.text, "xv["));
      xc_kernel_source_release(&s2);
    }
    xc_kernel_source_release(&src);
    xc_tiled_arg_t args[5];
    dot_blocked_args(args, M, N, K);
    char label[96];
    snprintf(label, sizeof label, "dot wg blocked %lldx%lldx%lld threads %lld", (long long)M, (long long)N,
             (long long)K, (long long)cases[c].threads);
    check_kernel(k, &cases[c].threads, args, label);
    free_args(args, 5);
    xc_tiled_kernel_destroy(k);
  }
}

/* Chunks of 32 and 64 bytes (schedule vector 8 and 16 for f32): the
 * blocked dots' register tiles become 8 rows x 8 columns and 4 rows x 16
 * columns, a row of accumulators one float8 or float16 (OpenCL's vectors)
 * and b's chunk one vload8 or vload16 a k, the operands copied into
 * work-group memory and the results stored in chunks of those sizes. Each
 * work-group device present takes the record through its own scheduler
 * (as a tuned schedule is) and runs it against the interpreter; the cpu,
 * which has no chunks, refuses it. */
static void test_dot_wg_wide_chunks(void) {
  struct {
    int64_t M, N, K, threads, vector;
    const char* block;
    const char* chunk;
  } cases[] = {{16, 64, 8, 16, 8, "8 rows x 8 columns", "xc_v32_f32"},
               {16, 64, 5, 16, 16, "4 rows x 16 columns", "xc_v64_f32"},
               {8, 128, 4, 8, 8, "8 rows x 16 columns", "xc_v32_f32"}};
  for (int c = 0; c < 3; c++) {
    int64_t M = cases[c].M, N = cases[c].N, K = cases[c].K;
    kern_t* k = build_dot_blocked(XC_F32, M, N, K);
    CHECK(k != NULL);
    if (!k) continue;
    xc_tiled_schedule_t s;
    xc_tiled_schedule_init(k, &s);
    s.knobs[0] = cases[c].threads;
    s.threads = cases[c].threads;
    s.vector = cases[c].vector;
    xc_device_caps_t caps = wg_caps();
    xc_tiled_schedule_t planned = s;
    CHECK_OK(xc_cstyle_schedule(&xc_cstyle_dialect_opencl, &caps, k, NULL,
                                XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW, NULL, &planned));
    CHECK_EQ_INT(planned.vector, cases[c].vector);
    CHECK_OK(xc_tiled_set_schedule(k, &planned));
    xc_kernel_source_t src;
    xc_knob_t th = {"num_threads", cases[c].threads};
    CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_opencl, &caps, k, &th, 1, NULL, &src));
    char xv[32];
    snprintf(xv, sizeof xv, "float%lld xv[", (long long)cases[c].vector);
    CHECK(src.text && strstr(src.text, cases[c].block) && strstr(src.text, xv) && strstr(src.text, cases[c].chunk));
    /* the operands' work-group arrays filled in chunks of the same size */
    char copy[48];
    snprintf(copy, sizeof copy, "/* chunks of %lld elements */", (long long)cases[c].vector);
    CHECK(src.text && strstr(src.text, copy) && strstr(src.text, "__local __attribute__((aligned(16))) float"));
    xc_kernel_source_release(&src);
    /* the C dialect has no chunks: a record asking for them is refused */
    xc_tiled_schedule_t cpu_rec = s;
    cpu_rec.threads = 1;
    xc_status_t bad = xc_cstyle_schedule(&xc_cstyle_dialect_c, NULL, k, NULL,
                                         XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW, NULL, &cpu_rec);
    CHECK(bad != NULL && strstr(xc_status_message(bad), "no chunks"));
    xc_status_free(bad);
    xc_tiled_arg_t args[5];
    dot_blocked_args(args, M, N, K);
    int64_t values[16];
    xc_tensor_t* ref[16];
    kernel_reference(k, &cases[c].threads, args, values, ref);
    for (int w = 1; w < NUM_DEVICES; w++) {
      xc_device_t* dev = get_device(w);
      if (!dev) continue;
      xc_tiled_schedule_t rec = s;
      CHECK_OK(xc_target_schedule(xc_device_target(dev), xc_device_caps(dev), k, NULL,
                                  XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW, &rec));
      CHECK_EQ_INT(rec.vector, cases[c].vector);
      CHECK_OK(xc_tiled_set_schedule(k, &rec));
      char label[96];
      snprintf(label, sizeof label, "dot wg %lldx%lldx%lld vector %lld", (long long)M, (long long)N, (long long)K,
               (long long)cases[c].vector);
      run_on(w, k, values, args, ref, label);
    }
    free_args(args, 5);
    xc_tiled_kernel_destroy(k);
  }
}

/* Masked loads into tiles of the chunked layout (docs/emitter.md,
 * "Vector chunks"): X [M,N] under a mask that holds on an interval of each
 * row whose ends fall inside chunks (lo = (5m + 1) % 7, hi = N - 3m % 5),
 * into private slots; A [M,K] under another such mask into the work-group
 * array a dot reads. Whole chunks inside the mask load as one struct, the
 * chunks at its ends element by element. Params: X A B Y Z. */
static kern_t* build_masked_chunks(int64_t M, int64_t N, int64_t K) {
  kern_t* k;
  if (xc_tiled_kernel_create("masked_chunks", &k)) return NULL;
  const int64_t th[] = {16, 32};
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 16);
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* A = xc_tiled_param_buffer(k, "A", XC_F32, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  val_t* Z = xc_tiled_param_buffer(k, "Z", XC_F32, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  val_t* rm = col(k, xc_tiled_arange(k, xc_tiled_dim_const(M)));
  val_t* rn = row(k, xc_tiled_arange(k, xc_tiled_dim_const(N))), *rk = row(k, xc_tiled_arange(k, xc_tiled_dim_const(K)));
  val_t* lo = xc_tiled_binary(k, XC_TOP_REM, add(k, mul(k, rm, i64c(k, 5)), i64c(k, 1)), i64c(k, 7));
  val_t* hi = sub(k, i64c(k, N), xc_tiled_binary(k, XC_TOP_REM, mul(k, rm, i64c(k, 3)), i64c(k, 5)));
  val_t* mx = land(k, xc_tiled_cmp(k, XC_CMP_GE, rn, lo), lt(k, rn, hi));
  val_t* x = xc_tiled_load(k, X, add(k, mul(k, rm, i64c(k, N)), rn), mx, NULL);
  val_t* off = add(k, mul(k, rm, i64c(k, N)), rn);
  xc_tiled_store(k, Y, off, add(k, mul(k, x, f32c(k, 2)), f32c(k, 1)), NULL);
  val_t* ma = land(k, xc_tiled_cmp(k, XC_CMP_GE, rk, xc_tiled_binary(k, XC_TOP_REM, rm, i64c(k, 3))),
                   lt(k, rk, sub(k, i64c(k, K), xc_tiled_binary(k, XC_TOP_REM, rm, i64c(k, 6)))));
  val_t* a = xc_tiled_load(k, A, add(k, mul(k, rm, i64c(k, K)), rk), ma, NULL);
  val_t* b = xc_tiled_load(k, B, add(k, mul(k, xc_tiled_expand_dims(k, xc_tiled_arange(k, xc_tiled_dim_const(K)), 1),
                                            i64c(k, N)), rn), NULL, NULL);
  xc_tiled_dim_t dmn[2] = {xc_tiled_dim_const(M), xc_tiled_dim_const(N)};
  val_t* z = xc_tiled_dot(k, a, b, xc_tiled_const_f(k, XC_F32, 0.0, 2, dmn));
  xc_tiled_store(k, Z, off, z, NULL);
  return tk_finish(k);
}

static void test_masked_chunks(void) {
  const int64_t M = 16, N = 64, K = 64, T = 16;
  kern_t* k = build_masked_chunks(M, N, K);
  CHECK(k != NULL);
  if (!k) return;
  xc_device_caps_t caps = wg_caps();
  xc_knob_t th = {"num_threads", T};
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_opencl, &caps, k, &th, 1, NULL, &src));
  int tests = 0;
  for (const char* p = src.text; p && (p = strstr(p, "int xm = 1;")); p++) tests++;
  CHECK_EQ_INT(tests, 2); /* X's load and A's, B's unmasked one copied in chunks */
  CHECK(src.text && strstr(src.text, "const xc_v16_f32 xq"));
  xc_kernel_source_release(&src);
  xc_tiled_arg_t args[5] = {{tensor(XC_F32, M * N, true), 0}, {tensor(XC_F32, M * K, true), 0},
                            {tensor(XC_F32, K * N, true), 0}, {tensor(XC_F32, M * N, false), 0},
                            {tensor(XC_F32, M * N, false), 0}};
  check_kernel(k, &T, args, "masked chunks");
  free_args(args, 5);
  xc_tiled_kernel_destroy(k);
}

/* Row conditions [M,1] read broadcast in an [M,N] element loop: one only
 * by a select (a depthwise conv tap's window test), one also as a load's
 * mask. The C emitter computes the first once into an int32_t array (GCC
 * 12 vectorized no float select on the inline condition of 64-bit
 * compares) and keeps the mask inline. Params: X X2 Y. */
static kern_t* build_row_select(int64_t M, int64_t N) {
  kern_t* k;
  if (xc_tiled_kernel_create("row_select", &k)) return NULL;
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* X2 = xc_tiled_param_buffer(k, "X2", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  val_t* rm = col(k, xc_tiled_arange(k, xc_tiled_dim_const(M))), *rn = row(k, xc_tiled_arange(k, xc_tiled_dim_const(N)));
  val_t* h = xc_tiled_binary(k, XC_TOP_REM, add(k, mul(k, rm, i64c(k, 5)), i64c(k, 3)), i64c(k, 7)); /* [M,1] */
  val_t* sel = land(k, lt(k, h, i64c(k, 4)), xc_tiled_cmp(k, XC_CMP_GE, rm, i64c(k, 2)));
  val_t* msk = land(k, lt(k, i64c(k, 1), h), lt(k, rm, i64c(k, M - 1)));
  val_t* off = add(k, mul(k, rm, i64c(k, N)), rn);
  val_t* x = xc_tiled_load(k, X, off, NULL, NULL);
  val_t* x2 = xc_tiled_load(k, X2, off, msk, NULL);
  val_t* y = add(k, xc_tiled_select(k, sel, x, f32c(k, 0)), xc_tiled_select(k, msk, x2, f32c(k, 1)));
  xc_tiled_store(k, Y, off, y, NULL);
  return tk_finish(k);
}

static void test_row_select(void) {
  const int64_t M = 12, N = 24;
  kern_t* k = build_row_select(M, N);
  CHECK(k != NULL);
  if (!k) return;
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_c, NULL, k, NULL, 0, NULL, &src));
  int arrays = 0;
  for (const char* p = src.text; p && (p = strstr(p, "int32_t v")); p++)
    if (strstr(p, "[12];") && strchr(p, ';') == strstr(p, "[12];") + 4) arrays++;
  CHECK_EQ_INT(arrays, 1); /* the select's condition, not the mask */
  xc_kernel_source_release(&src);
  xc_tiled_arg_t args[3] = {{tensor(XC_F32, M * N, true), 0}, {tensor(XC_F32, M * N, true), 0},
                            {tensor(XC_F32, M * N, false), 0}};
  const int64_t none[1] = {0};
  check_kernel(k, none, args, "row select");
  free_args(args, 3);
  xc_tiled_kernel_destroy(k);
}

/* ---- the HIP dialect's matrix hooks on OpenCL ---------------------------------------- */

/* Y = dot(X * 2, W, bias) for a computed f16 operand (X * 2, staged with a
 * conversion to 16-bit storage), a raw f16 load (W) and a broadcast
 * accumulator; the result goes to Y and to a row sum R, so it is a
 * work-group array the slots are written back into. K = 16 is static: a
 * single dot, no loop. Params: X W bias Y R M N. */
static kern_t* build_staged_half(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("staged_half", &k)) return NULL;
  const int64_t b16[] = {16, 32}, th[] = {64, 128};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 2, b16, 16);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 2, b16, 16);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 64);
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F16, XC_ROLE_IN);
  val_t* W = xc_tiled_param_buffer(k, "W", XC_F16, XC_ROLE_IN);
  val_t* bias = xc_tiled_param_buffer(k, "bias", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  val_t* R = xc_tiled_param_buffer(k, "R", XC_F32, XC_ROLE_OUT);
  val_t* M = xc_tiled_param_scalar(k, "M");
  val_t* N = xc_tiled_param_scalar(k, "N");
  const xc_tiled_expr_t* grid[1] = {ceildiv(k, M, "BLOCK_M")};
  xc_tiled_set_grid(k, 1, grid);
  val_t* K = i64c(k, 16);
  val_t* rm = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_M")), xc_tiled_arange(k, xc_tiled_dim_knob(kBM))));
  val_t* rk = xc_tiled_arange(k, xc_tiled_dim_const(16));
  val_t* rn = row(k, xc_tiled_arange(k, xc_tiled_dim_knob(kBN)));
  val_t* x = xc_tiled_load(k, X, add(k, mul(k, rm, K), row(k, rk)), lt(k, rm, M), NULL);    /* [BM,16] */
  val_t* a = mul(k, x, xc_tiled_const_f(k, XC_F16, 2.0, 0, NULL));
  val_t* w = xc_tiled_load(k, W, add(k, mul(k, col(k, rk), N), rn), lt(k, rn, N), NULL);    /* [16,BN] */
  xc_tiled_dim_t dmn[2] = {xc_tiled_dim_knob(kBM), xc_tiled_dim_knob(kBN)};
  val_t* b = xc_tiled_broadcast(k, xc_tiled_load(k, bias, rn, lt(k, rn, N), NULL), 2, dmn);
  val_t* y = xc_tiled_dot(k, a, w, b);
  val_t* mask = land(k, lt(k, rm, M), lt(k, rn, N));
  xc_tiled_store(k, Y, add(k, mul(k, rm, N), rn), y, mask);
  val_t* r = xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, mask, y, f32c(k, 0.0)), 1);
  val_t* rm1 = add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_M")), xc_tiled_arange(k, xc_tiled_dim_knob(kBM)));
  xc_tiled_store(k, R, rm1, r, lt(k, rm1, M));
  return tk_finish(k);
}

/* The HIP dialect plans, slot layout and portable matrix loop (its code for
 * compilers other than CDNA's, what rocm_nv runs) in the OpenCL dialect, with
 * the capabilities of `arch` (gfx90a: MFMA plans; gfx1100: WMMA plans, whose
 * slot layout is the instruction's wave-32 result layout): the emitter's
 * staging of operands, slot loops and write-back run on the OpenCL device
 * (PoCL here) exactly as they are emitted for that architecture, only the
 * matrix instructions themselves are replaced. */
static void run_hip_hooked_for(const char* arch, const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args,
                               const char* label, int staged) {
  xc_device_caps_t gfx;
  CHECK_OK(xc_rocm_arch_caps(arch, &gfx));
  xc_cstyle_dialect_t d = xc_cstyle_dialect_opencl;
  d.dot_plan = xc_cstyle_dialect_hip.dot_plan;
  d.dot_slot_index = xc_cstyle_dialect_hip.dot_slot_index;
  d.emit_dot = xc_cstyle_dialect_hip.emit_dot;
  d.dot_staged = xc_cstyle_dialect_hip.dot_staged;
  xc_knob_t kn[16];
  for (int i = 0; i < k->num_knobs; i++) kn[i] = (xc_knob_t){k->knobs[i].name, knobs[i]};
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(&d, &gfx, k, kn, k->num_knobs, NULL, &src));
  int found = 0;
  for (const char* p = src.text; p && (p = strstr(p, "operands staged in work-group memory")); p++) found++;
  if (found != staged) fprintf(stderr, "%s: %d staged dots, expected %d\n", label, found, staged);
  CHECK_EQ_INT(found, staged);
  CHECK(src.text && strstr(src.text, "matrix instructions:"));
  bool wmma = strcmp(arch, "gfx1100") == 0;
  CHECK(src.text && (strstr(src.text, "wmma_f32_16x16x16") != NULL) == wmma);
  int64_t values[16];
  xc_tensor_t* ref[16];
  kernel_reference(k, knobs, args, values, ref);
  xc_device_t* dev = get_device(1);
  if (dev) {
    xc_compile_options_t opts;
    memset(&opts, 0, sizeof opts);
    opts.extra_flags = "-cl-std=CL1.2";
    xc_blob_t blob;
    xc_status_t st = xc_target_compile(xc_device_target(dev), xc_device_caps(dev), &src, &opts, &blob);
    if (st) fprintf(stderr, "%s: %s\n", label, xc_status_message(st));
    CHECK(st == NULL);
    if (!st) {
      char full[256];
      snprintf(full, sizeof full, "%s (HIP matrix hooks, %s) on opencl", label, arch);
      kernel_launch_check(dev, &blob, k, values, args, ref, full, false);
      runs[1]++;
    }
    xc_status_free(st);
  }
  xc_kernel_source_release(&src);
}

static void run_hip_hooked(const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args, const char* label,
                           int staged) {
  run_hip_hooked_for("gfx90a", k, knobs, args, label, staged);
}

/* The CUDA dialect's tensor-core hooks (plans, slot layout, swizzled
 * operand arrays) inside the OpenCL dialect with sm_90's caps: the kernel
 * is planned, staged and written back exactly as for sm_90, and the
 * dialect's portable slot loop (what a compiler other than CUDA's device
 * compiler gets) stands in for ldmatrix/mma.sync. The same source compiled
 * by NVRTC must hold mma.sync; test_target_cuda checks that. */
static void run_cuda_hooked(const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args, const char* label,
                            int staged) {
  xc_device_caps_t sm;
  CHECK_OK(xc_cuda_arch_caps("sm_90", &sm));
  xc_cstyle_dialect_t d = xc_cstyle_dialect_opencl;
  d.dot_plan = xc_cstyle_dialect_cuda.dot_plan;
  d.dot_slot_index = xc_cstyle_dialect_cuda.dot_slot_index;
  d.emit_dot = xc_cstyle_dialect_cuda.emit_dot;
  d.dot_staged = xc_cstyle_dialect_cuda.dot_staged;
  xc_knob_t kn[16];
  for (int i = 0; i < k->num_knobs; i++) kn[i] = (xc_knob_t){k->knobs[i].name, knobs[i]};
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(&d, &sm, k, kn, k->num_knobs, NULL, &src));
  int found = 0;
  for (const char* p = src.text; p && (p = strstr(p, "operands staged in work-group memory")); p++) found++;
  if (found != staged) fprintf(stderr, "%s: %d staged dots, expected %d\n", label, found, staged);
  CHECK_EQ_INT(found, staged);
  CHECK(src.text && strstr(src.text, "mma.sync.aligned.m16n8k16") && strstr(src.text, "ldmatrix"));
  int64_t values[16];
  xc_tensor_t* ref[16];
  kernel_reference(k, knobs, args, values, ref);
  xc_device_t* dev = get_device(1);
  if (dev) {
    xc_compile_options_t opts;
    memset(&opts, 0, sizeof opts);
    opts.extra_flags = "-cl-std=CL1.2";
    xc_blob_t blob;
    xc_status_t st = xc_target_compile(xc_device_target(dev), xc_device_caps(dev), &src, &opts, &blob);
    if (st) fprintf(stderr, "%s: %s\n", label, xc_status_message(st));
    CHECK(st == NULL);
    if (!st) {
      char full[256];
      snprintf(full, sizeof full, "%s (CUDA tensor-core hooks, sm_90) on opencl", label);
      kernel_launch_check(dev, &blob, k, values, args, ref, full, false);
      runs[1]++;
    }
    xc_status_free(st);
  }
  xc_kernel_source_release(&src);
}

static void test_cuda_hooks(void) {
  /* attention with 16-bit operands: knobs BLOCK_M BLOCK_N num_threads, head
   * sizes 64 and 128 (the lowering's padded 80/96 are 128), f16 and bf16,
   * causal and not; both dots on the instructions (their accumulators have
   * two shapes, each with its own slot layout) */
  const int64_t choices[][3] = {{32, 32, 128}, {16, 32, 64}, {32, 32, 64}, {64, 16, 128}};
  const int64_t heads[] = {64, 128};
  for (int h = 0; h < 2; h++)
    for (int causal = 0; causal < 2; causal++) {
      xc_dtype_t t = h ? XC_BF16 : XC_F16;
      int64_t d = heads[(h + causal) % 2];
      kern_t* k = build_attention_half(t, causal, d, 1.0 / 8.0);
      CHECK(k != NULL);
      if (!k) continue;
      for (int c = 0; c < 4; c++) {
        int64_t bh = 2, sl = c == 2 ? 45 : 96, n = bh * sl * d;
        xc_tiled_arg_t args[6] = {{tensor(t, n, true), 0},        {tensor(t, n, true), 0}, {tensor(t, n, true), 0},
                                  {tensor(XC_F32, n, false), 0}, {NULL, sl},              {NULL, bh}};
        char label[128];
        snprintf(label, sizeof label, "attention %s causal %d D=%lld S=%lld knobs %d", xc_dtype_name(t), causal,
                 (long long)d, (long long)sl, c);
        run_cuda_hooked(k, choices[c], args, label, 2);
        free_args(args, 6);
      }
      xc_tiled_kernel_destroy(k);
    }
  /* the K-loop shape (raw global operands, registers across the loop) */
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    kern_t* k = build_gemm_half(half);
    CHECK(k != NULL);
    if (!k) continue;
    int64_t m = 37, n = 21, kk = 50;
    xc_tiled_arg_t args[6] = {{tensor(half, m * kk, true), 0}, {tensor(half, kk * n, true), 0},
                              {tensor(half, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
    const int64_t g[][4] = {{32, 32, 32, 128}, {32, 32, 16, 64}};
    for (int c = 0; c < 2; c++) run_cuda_hooked(k, g[c], args, h ? "gemm bf16" : "gemm f16", 0);
    free_args(args, 6);
    xc_tiled_kernel_destroy(k);
  }
}

/* Attention as the lowering builds it for a device with 16-bit matrix
 * instructions (sm_90's limits: 16-bit dots, the scale on the scores, the
 * probabilities rounded to V's dtype), checked two ways: the lowered module
 * on the tiled interpreter against the graph interpreter at the dtype's
 * bound (the lowering's numerics), and its kernel through the CUDA hooks on
 * PoCL against the tiled interpreter (both dots staged). */
/* Lowers the graph `text` with sm_90's limits (16-bit matrix instructions),
 * which must give one kernel; checks the lowered module on the tiled
 * interpreter against the graph interpreter (rel-L2 <= bound) and runs its
 * kernel through the CUDA hooks on PoCL (BLOCK_* knobs = `block`, 128
 * threads; `staged` dots on the instructions) against the tiled
 * interpreter. Inputs are random in [-1, 1) times `amp`. */
static void check_lowered_cuda(const char* text, const char* label, double bound, int64_t block, int staged,
                               double amp) {
  xc_device_caps_t sm;
  CHECK_OK(xc_cuda_arch_caps("sm_90", &sm));
  xc_tiled_limits_t lim;
  xc_tiled_limits_init_gpu(&lim);
  lim.value[XC_TILED_LIMIT_MAX_THREADS] = sm.max_threads_per_group;
  lim.value[XC_TILED_LIMIT_SHARED_BYTES] = sm.local_memory_bytes;
  lim.value[XC_TILED_LIMIT_STAGED_BYTES] = sm.local_memory_bytes;
  lim.value[XC_TILED_LIMIT_SIMD_WIDTH] = 32;
  lim.value[XC_TILED_LIMIT_MMA] = ((int64_t)1 << XC_F16) | ((int64_t)1 << XC_BF16);
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), "attention.xir", NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_fusion_plan_t* plan = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  xc_lowered_module_t* m = NULL;
  if (plan) CHECK_OK(xc_lower(g, plan, &lim, &m));
  enum { MAX_IN = 8 };
  int nin = g->num_inputs < MAX_IN ? g->num_inputs : MAX_IN;
  xc_tensor_t* ins[MAX_IN] = {0}, *want[1] = {0}, *got[1] = {0};
  for (int i = 0; i < nin; i++) {
    const xc_value_t* v = g->inputs[i];
    int64_t dims[8];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
    CHECK_OK(xc_tensor_create(v->dtype, v->rank, dims, &ins[i]));
    for (int64_t e = 0; ins[i] && e < ins[i]->numel; e++) xc_tensor_set_f64(ins[i], e, amp * rnd());
  }
  if (m) {
    CHECK_EQ_INT(m->num_kernels, 1);
    CHECK_OK(xc_interp_run(g, NULL, nin, (const xc_tensor_t* const*)ins, want));
    CHECK_OK(xc_lowered_run_interp(m, nin, (const xc_tensor_t* const*)ins, got));
    if (want[0] && got[0]) {
      double err = rel_l2(got[0], want[0]);
      printf("%s: lowered vs graph interpreter rel-L2 %.3g\n", label, err);
      CHECK(err <= bound);
    }
    /* the kernel through the CUDA hooks: inputs as the graph's, output zeroed */
    xc_lowered_kernel_t* lk = &m->kernels[0];
    xc_tiled_kernel_t* k = lk->kernel;
    xc_tiled_arg_t args[8];
    memset(args, 0, sizeof args);
    bool ok = k->num_params <= 8;
    for (int p = 0; ok && p < k->num_params; p++) {
      const xc_value_t* v = lk->param_values[p];
      if (!v) {
        args[p].scalar = lk->param_dims[p].value;
        continue;
      }
      int i = -1;
      for (int j = 0; j < nin; j++)
        if (v == g->inputs[j]) i = j;
      if (i >= 0) CHECK_OK(xc_tensor_clone(ins[i], &args[p].buffer));
      else args[p].buffer = tensor(v->dtype, got[0] ? got[0]->numel : 0, false);
    }
    int64_t knobs[8];
    for (int i = 0; i < k->num_knobs && i < 8; i++) {
      const char* n = k->knobs[i].name;
      knobs[i] = !strncmp(n, "BLOCK_", 6) ? block : !strcmp(n, "num_threads") ? 128 : lk->knobs[i];
    }
    k->name = "attention_half_lowered";
    if (ok) run_cuda_hooked(k, knobs, args, label, staged);
    for (int p = 0; p < k->num_params; p++) xc_tensor_destroy(args[p].buffer);
  }
  for (int i = 0; i < nin; i++) xc_tensor_destroy(ins[i]);
  xc_tensor_destroy(want[0]), xc_tensor_destroy(got[0]);
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

/* Attention as the lowering builds it for a device with 16-bit matrix
 * instructions (sm_90's limits: 16-bit dots, the scale on the scores, the
 * probabilities rounded to V's dtype), checked two ways: the lowered module
 * on the tiled interpreter against the graph interpreter at the dtype's
 * bound (the lowering's numerics), and its kernel through the CUDA hooks on
 * PoCL against the tiled interpreter (both dots staged). */
static void test_cuda_lowered_attention(void) {
  const char* dts[] = {"bf16", "f16", "bf16", "f16"};
  const int64_t heads[] = {64, 96, 128, 80}, seqs[] = {45, 37, 70, 33};
  for (int c = 0; c < 4; c++) {
    int causal = c % 2;
    char text[512], label[128];
    snprintf(text, sizeof text,
             "xir 1\ngraph attention opset 23 {\n  input q: %s[1, 2, %lld, %lld]\n  input k: %s[1, 2, %lld, %lld]\n"
             "  input v: %s[1, 2, %lld, %lld]\n  o = Attention(q, k, v) {is_causal: %d}\n  output o\n}\n",
             dts[c], (long long)seqs[c], (long long)heads[c], dts[c], (long long)seqs[c], (long long)heads[c], dts[c],
             (long long)seqs[c], (long long)heads[c], causal);
    snprintf(label, sizeof label, "lowered attention %s D=%lld S=%lld causal %d", dts[c], (long long)heads[c],
             (long long)seqs[c], causal);
    check_lowered_cuda(text, label, c % 2 ? 2e-3 : 1.6e-2, 32, 2, 2.0);
  }
}

/* GPT-2's attention (bench/e2e_torch.py): q, k and v are Linear outputs
 * [B, S, H*D] viewed as heads (Reshape, Transpose), causal, the output
 * transposed back. The views are folded into the kernel's loads and stores
 * as division and remainder, index arithmetic too long to inline: the
 * offsets of q's [BLOCK_M, D] and v's [BLOCK_N, D] tiles are private tiles,
 * and at D = 64 with 32x32 tiles they have the accumulator's shape, so
 * they follow the mma.sync fragment layout. q and v are copied straight
 * into the plans' arrays; the copy must read each offset in that layout
 * (it read them in the default one: rel-L2 1.4 on the H200 and here). D = 16
 * keeps the second dot off the instructions. */
static void test_cuda_lowered_attention_views(void) {
  static const struct {
    const char* dtype;
    long long heads, d, seq;
    int staged;
  } cases[] = {{"bf16", 2, 64, 64, 2}, {"f16", 4, 64, 128, 2}, {"bf16", 2, 128, 96, 2}, {"bf16", 4, 16, 128, 1}};
  for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
    const char* t = cases[c].dtype;
    long long H = cases[c].heads, D = cases[c].d, S = cases[c].seq;
    char text[1024], label[128];
    snprintf(text, sizeof text,
             "xir 1\ngraph attention opset 23 {\n"
             "  input ql: %s[1, %lld, %lld]\n  input kl: %s[1, %lld, %lld]\n  input vl: %s[1, %lld, %lld]\n"
             "  const hs: i64[4] = [1, %lld, %lld, %lld]\n  const os: i64[3] = [1, %lld, %lld]\n"
             "  q1 = Reshape(ql, hs)\n  k1 = Reshape(kl, hs)\n  v1 = Reshape(vl, hs)\n"
             "  q = Transpose(q1) {perm: [0, 2, 1, 3]}\n  k = Transpose(k1) {perm: [0, 2, 1, 3]}\n"
             "  v = Transpose(v1) {perm: [0, 2, 1, 3]}\n  a = Attention(q, k, v) {is_causal: 1, scale: %g}\n"
             "  t = Transpose(a) {perm: [0, 2, 1, 3]}\n  y = Reshape(t, os)\n  output y\n}\n",
             t, S, H * D, t, S, H * D, t, S, H * D, S, H, D, S, H * D, 1.0 / sqrt((double)D));
    snprintf(label, sizeof label, "lowered attention with head views %s H=%lld D=%lld S=%lld", t, H, D, S);
    check_lowered_cuda(text, label, strcmp(t, "f16") ? 1.6e-2 : 2e-3, 32, cases[c].staged, 2.0);
  }
}

static void test_hip_hooks(void) {
  /* attention: knobs BLOCK_M BLOCK_N num_threads, and how many dots are
   * staged (32x32 scores and a 32x16 accumulator: two shapes, each with its
   * own slot layout; BLOCK_N 8 is no instruction shape) */
  const int64_t choices[][4] = {{16, 16, 64, 2}, {32, 16, 128, 2}, {32, 32, 128, 2}, {32, 8, 128, 1}};
  const int64_t sizes[][2] = {{2, 37}, {1, 64}, {1, 5}};
  for (int causal = 0; causal < 2; causal++) {
    kern_t* k = build_attention(causal, 0.25);
    CHECK(k != NULL);
    if (!k) continue;
    for (int c = 0; c < 4; c++)
      for (int s = 0; s < 3; s++) {
        int64_t sl = sizes[s][1];
        xc_tiled_arg_t args[6];
        attention_args(sizes[s][0], sl, args);
        char label[128];
        snprintf(label, sizeof label, "attention causal %d S=%lld knobs %d", causal, (long long)sl, c);
        run_hip_hooked(k, choices[c], args, label, (int)choices[c][3]);
        free_args(args, 6);
      }
    xc_tiled_kernel_destroy(k);
  }
  /* two chained dots, one with a transposed (virtual) operand, the second
   * accumulating onto the first's private result */
  kern_t* k = build_dot_blocked(XC_F32, 32, 32, 8);
  CHECK(k != NULL);
  if (k) {
    xc_tiled_arg_t args[5] = {{tensor(XC_F32, 32 * 8, true), 0}, {tensor(XC_F32, 32 * 8, true), 0},
                              {tensor(XC_F32, 8 * 32, true), 0}, {tensor(XC_F32, 32 * 32, false), 0},
                              {tensor(XC_F32, 32 * 32, false), 0}};
    const int64_t th[1] = {64};
    run_hip_hooked(k, th, args, "two dots 32x32x8", 2);
    free_args(args, 5);
    xc_tiled_kernel_destroy(k);
  }
  k = build_staged_half();
  CHECK(k != NULL);
  if (k) {
    const int64_t choices2[][3] = {{16, 16, 64}, {32, 32, 128}, {32, 16, 128}};
    for (int c = 0; c < 3; c++) {
      int64_t m = 45, n = choices2[c][1] - 3;
      xc_tiled_arg_t args[7] = {{tensor(XC_F16, m * 16, true), 0}, {tensor(XC_F16, 16 * n, true), 0},
                                {tensor(XC_F32, n, true), 0},      {tensor(XC_F32, m * n, false), 0},
                                {tensor(XC_F32, m, false), 0},     {NULL, m}, {NULL, n}};
      char label[64];
      snprintf(label, sizeof label, "staged f16 dot knobs %d", c);
      run_hip_hooked(k, choices2[c], args, label, 1);
      free_args(args, 7);
    }
    xc_tiled_kernel_destroy(k);
  }
  /* a GEMM whose operands the kernel itself stages in shared memory (not
   * global loads, so not the K-loop shape): a staged dot in a loop */
  k = build_gemm(0);
  CHECK(k != NULL);
  if (k) {
    const int64_t g[6] = {32, 32, 16, 128, 4, 1};
    xc_tiled_arg_t args[8] = {{tensor(XC_F32, 67 * 33, true), 0}, {tensor(XC_F32, 33 * 45, true), 0},
                              {tensor(XC_F32, 45, true), 0},      {tensor(XC_F32, 67 * 45, true), 0},
                              {tensor(XC_F32, 67 * 45, false), 0}, {NULL, 67}, {NULL, 45}, {NULL, 33}};
    run_hip_hooked(k, g, args, "gemm 67x45x33", 1);
    free_args(args, 8);
    xc_tiled_kernel_destroy(k);
  }
  /* the K-loop shape (raw global operands, registers across the loop) */
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    k = build_gemm_half(half);
    CHECK(k != NULL);
    if (!k) continue;
    int64_t m = 37, n = 21, kk = 50;
    xc_tiled_arg_t args[6] = {{tensor(half, m * kk, true), 0}, {tensor(half, kk * n, true), 0},
                              {tensor(half, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
    const int64_t g[][4] = {{16, 16, 16, 64}, {32, 32, 32, 128}};
    for (int c = 0; c < 2; c++) run_hip_hooked(k, g[c], args, h ? "gemm bf16" : "gemm f16", 0);
    /* gfx1100: 2x2 waves of 16x16 (one WMMA block each), K steps of 32 and 16 */
    const int64_t g11[][4] = {{32, 32, 32, 128}, {32, 32, 16, 128}};
    for (int c = 0; c < 2; c++) run_hip_hooked_for("gfx1100", k, g11[c], args, h ? "gemm bf16" : "gemm f16", 0);
    free_args(args, 6);
    xc_tiled_kernel_destroy(k);
  }
}

/* The C dialect's inline f32 exp / erf / tanh / sigmoid, element by element
 * against libm in double: at most 1e-6 relative error (the prelude documents
 * about 2.5e-7) or 1e-44 absolute (subnormal results), and exactly libm's
 * value for NaN, +-inf, -0 and saturated results. */
static void test_vector_math(void) {
  enum { NS = 24, N = 4096 + NS };
  static const xc_tiled_opcode_t fns[4] = {XC_TOP_EXP, XC_TOP_ERF, XC_TOP_TANH, XC_TOP_SIGMOID};
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("vmath", &k));
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* Y[4];
  for (int f = 0; f < 4; f++) {
    char name[8];
    snprintf(name, sizeof name, "Y%d", f);
    Y[f] = xc_tiled_param_buffer(k, name, XC_F32, XC_ROLE_OUT);
  }
  const xc_tiled_expr_t* g[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, g);
  val_t* r = xc_tiled_arange(k, xc_tiled_dim_const(N));
  val_t* x = xc_tiled_load(k, X, r, NULL, NULL);
  for (int f = 0; f < 4; f++) xc_tiled_store(k, Y[f], r, xc_tiled_unary(k, fns[f], x), NULL);
  CHECK_OK(xc_tiled_verify(k));
  float in[N];
  /* specials, and both sides of the branch points of erf (0.75, 3.95) and tanh (0.25) */
  static const float special[NS] = {NAN,    INFINITY, -INFINITY, -0.0f,   0.0f,    1e-30f, -1e-30f, 0.5f,
                                    -0.5f,  0.25f,    88.7f,     89.5f,   -103.0f, -104.5f, 12.0f,  -20.0f,
                                    0.7499f, 0.75f,   -0.7501f,  3.9499f, 3.95f,   -3.9501f, 0.2499f, -0.2501f};
  for (int i = 0; i < NS; i++) in[i] = special[i];
  for (int i = NS; i < N; i++) in[i] = (float)(-110.0 + 200.0 * (i - NS) / (N - NS - 1)); /* [-110, 90] */
  xc_device_t* dev = get_device(0);
  const xc_device_caps_t* caps = dev ? xc_device_caps(dev) : NULL;
  xc_blob_t blob;
  xc_module_t* module = NULL;
  xc_kernel_t* kernel = NULL;
  xc_buffer_t* bufs[5] = {0};
  if (dev) CHECK_OK(xc_target_compile_kernel(xc_device_target(dev), caps, (const struct xc_tiled_kernel*)k, NULL, 0,
                                             NULL, &blob));
  if (dev) CHECK_OK(xc_module_load(dev, &blob, &module));
  if (dev) xc_blob_release(&blob);
  if (module) CHECK_OK(xc_module_kernel(module, "xk_vmath", &kernel));
  for (int b = 0; b < 5 && dev; b++) CHECK_OK(xc_buffer_alloc(dev, sizeof in, &bufs[b]));
  if (kernel && bufs[0]) {
    CHECK_OK(xc_buffer_write(bufs[0], 0, in, sizeof in));
    xc_launch_t launch;
    memset(&launch, 0, sizeof launch);
    launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
    launch.threads[0] = 1;
    launch.buffers = bufs;
    launch.num_buffers = 5;
    CHECK_OK(xc_kernel_launch(kernel, &launch));
    CHECK_OK(xc_device_synchronize(dev));
    for (int f = 0; f < 4; f++) {
      float out[N];
      CHECK_OK(xc_buffer_read(bufs[1 + f], 0, out, sizeof out));
      int bad = 0;
      for (int i = 0; i < N; i++) {
        /* sigmoid: the emitted formula 1 / (1 + e^-x) with libm's f32 exp (0 once it overflows) */
        double v = in[i], want = f == 0 ? exp(v) : f == 1 ? erf(v) : f == 2 ? tanh(v) : 1.0 / (1.0 + (double)expf(-in[i]));
        float w32 = (float)want;
        bool ok;
        if (isnan(want) || isinf(w32) || w32 == 0 || fabs(want) == 1.0)
          ok = (isnan(want) && isnan(out[i])) || out[i] == w32 || (w32 == 0 && fabs(out[i]) < 1e-44);
        else
          ok = fabs(out[i] - want) <= 1e-6 * fabs(want) || fabs(out[i] - want) < 1e-44;
        if (w32 == 0 && !isnan(want)) ok = ok && signbit(out[i]) == signbit(w32);
        if (!ok && bad++ < 3)
          fprintf(stderr, "vmath fn %d: x = %.9g: got %.9g, libm %.9g\n", f, (double)in[i], (double)out[i], want);
      }
      CHECK_EQ_INT(bad, 0);
    }
  }
  for (int b = 0; b < 5; b++)
    if (bufs[b]) xc_buffer_free(bufs[b]);
  if (module) xc_module_unload(module);
  /* and the source calls the inline functions, not libm */
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_c, caps, k, NULL, 0, NULL, &src));
  CHECK(src.text && strstr(src.text, "xc_verff(") && strstr(src.text, "xc_vtanhf(") && !strstr(src.text, " erff(") &&
        !strstr(src.text, "(erff("));
  xc_kernel_source_release(&src);
  /* cuda: tanh and sigmoid are calls of the prelude's out-of-line functions
   * (compiled once, not once per unrolled element); the body calls neither
   * tanhf nor expf itself for them */
  xc_device_caps_t sm;
  CHECK_OK(xc_cuda_arch_caps("sm_90", &sm));
  CHECK_OK(xc_cstyle_emit(&xc_cstyle_dialect_cuda, &sm, k, NULL, 0, NULL, &src));
  const char* body = src.text ? strstr(src.text, "xk_vmath(") : NULL;
  CHECK(src.text && strstr(src.text, "static __noinline__ float xc_tanh_call(float x) { return tanhf(x); }") &&
        strstr(src.text, "static __noinline__ float xc_sigmoid_call(float x) { return 1.0f / (1.0f + expf(-x)); }"));
  CHECK(body && strstr(body, "xc_tanh_call(") && strstr(body, "xc_sigmoid_call(") && !strstr(body, "tanhf(") &&
        strstr(body, "expf(") && !strstr(body, "1.0f / (1.0f + expf("));
  xc_kernel_source_release(&src);
  xc_tiled_kernel_destroy(k);
}

/* ---- declines and errors ------------------------------------------------------------ */

static void test_errors(void) {
  char why[256];
  /* fp8 values are declined with a reason, not emitted */
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("fp8_copy", &k));
  val_t* x = xc_tiled_param_buffer(k, "x", XC_F8E4M3FN, XC_ROLE_IN);
  val_t* y = xc_tiled_param_buffer(k, "y", XC_F8E4M3FN, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  val_t* off = xc_tiled_arange(k, xc_tiled_dim_const(8));
  xc_tiled_store(k, y, off, xc_tiled_load(k, x, off, NULL, NULL), NULL);
  CHECK_OK(xc_tiled_verify(k));
  CHECK(!xc_cstyle_supports(&xc_cstyle_dialect_c, NULL, k, why, sizeof why));
  CHECK(strstr(why, "f8e4m3fn") != NULL || strstr(why, "dtype") != NULL);
  xc_kernel_source_t src;
  CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_opencl, NULL, k, NULL, 0, NULL, &src), "not supported");
  xc_device_t* dev = get_device(0);
  if (dev) {
    xc_blob_t blob;
    CHECK_ERR(xc_target_compile_kernel(xc_device_target(dev), xc_device_caps(dev), (const struct xc_tiled_kernel*)k,
                                       NULL, 0, NULL, &blob),
              "does not support");
  }
  xc_tiled_kernel_destroy(k);

  /* an unverifiable kernel (no grid) is declined, not crashed on */
  CHECK_OK(xc_tiled_kernel_create("no_grid", &k));
  CHECK(!xc_cstyle_supports(&xc_cstyle_dialect_c, NULL, k, why, sizeof why));
  xc_tiled_kernel_destroy(k);

  /* bad knobs */
  k = build_scale();
  CHECK(k != NULL);
  if (!k) return;
  xc_knob_t unknown = {"BLOCK_Q", 4}, invalid = {"BLOCK", 5};
  CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_c, NULL, k, &unknown, 1, NULL, &src), "no knob 'BLOCK_Q'");
  CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_c, NULL, k, &invalid, 1, NULL, &src), "BLOCK");
  xc_tiled_kernel_destroy(k);

  /* a device with too little local memory for the GEMM's staging tiles */
  k = build_gemm(0);
  if (k) {
    xc_device_caps_t tiny;
    memset(&tiny, 0, sizeof tiny);
    snprintf(tiny.name, sizeof tiny.name, "tiny");
    tiny.max_threads_per_group = 1024;
    tiny.local_memory_bytes = 4096;
    tiny.dtypes = ~0u;
    CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_opencl, &tiny, k, NULL, 0, NULL, &src), "bytes of local memory");
    tiny.max_threads_per_group = 64;
    xc_knob_t th = {"num_threads", 128};
    CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_opencl, &tiny, k, &th, 1, NULL, &src), "threads per program");
    xc_tiled_kernel_destroy(k);
  }

  /* the C dialect refuses tiles that would not fit a thread's stack */
  CHECK_OK(xc_tiled_kernel_create("huge_tiles", &k));
  {
    const int64_t big[] = {2048};
    int kb = xc_tiled_add_knob(k, "BLOCK", XC_KNOB_TILE, 1, big, 2048);
    val_t* a = xc_tiled_param_buffer(k, "a", XC_F32, XC_ROLE_IN);
    val_t* b = xc_tiled_param_buffer(k, "b", XC_F32, XC_ROLE_OUT);
    const xc_tiled_expr_t* g[1] = {xc_texpr_const(k, 1)};
    xc_tiled_set_grid(k, 1, g);
    val_t* r = col(k, xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
    val_t* c = row(k, xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
    val_t* hoff = add(k, mul(k, r, kv(k, "BLOCK")), c); /* the loaded 2048 x 2048 f32 tile: 16 MiB */
    /* stored transposed, so the loaded tile is an array (not a variable of one fused loop) */
    xc_tiled_store(k, b, hoff, xc_tiled_trans(k, xc_tiled_load(k, a, hoff, NULL, NULL)), NULL);
    CHECK_OK(xc_tiled_verify(k));
    CHECK_ERR(xc_cstyle_emit(&xc_cstyle_dialect_c, NULL, k, NULL, 0, NULL, &src), "choose smaller tiles");
    xc_tiled_kernel_destroy(k);
  }
}

int main(void) {
  CHECK_OK(xc_targets_init());
  test_elementwise();
  test_row_reduce();
  test_gemm();
  test_layernorm();
  test_attention();
  test_convert();
  test_ops_zoo();
  test_max_min_nan();
  test_carry_order();
  test_dot_blocked();
  test_dot_wg_blocked();
  test_dot_wg_wide_chunks();
  test_masked_chunks();
  test_row_select();
  test_vector_math();
  test_gemm_half();
  test_hip_hooks();
  test_cuda_hooks();
  test_cuda_lowered_attention();
  test_cuda_lowered_attention_views();
  test_errors();
  printf("runs: cpu %d, opencl %d, cuda %d\n", runs[0], runs[1], runs[2]);
  CHECK(runs[0] > 0);
  for (int i = 0; i < NUM_DEVICES; i++)
    if (devices[i].dev) xc_device_close(devices[i].dev);
  return xc_test_summary("test_emit");
}
