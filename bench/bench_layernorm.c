/* Fused residual Add + LayerNormalization + Gelu (f32, rows x cols, default
 * 16384 x 1024) compiled by xcomp for the cpu target, versus memcpy of the
 * same byte count in the same process. Effective bandwidth = the bytes the
 * fused kernel must move (read x and the residual, write y; gamma and beta
 * are one row each) over its time; memcpy moves half that many bytes in
 * and the same out, so both columns count reads + writes. Runs are
 * interleaved (xcomp, memcpy, xcomp, ...) after a warm-up; the table shows
 * medians and the median of the per-pair ratios.
 *
 * Usage: bench_layernorm [rows cols] */
#include "bench_common.h"

static double ref_row_check(const float* x, const float* r, const float* gamma, const float* beta,
                            const float* y, int64_t row, int64_t cols) {
  const float* xr = x + row * cols;
  const float* rr = r + row * cols;
  double mean = 0, var = 0;
  for (int64_t j = 0; j < cols; j++) mean += (double)xr[j] + (double)rr[j];
  mean /= (double)cols;
  for (int64_t j = 0; j < cols; j++) {
    double d = (double)xr[j] + (double)rr[j] - mean;
    var += d * d;
  }
  var /= (double)cols;
  double inv = 1.0 / sqrt(var + 1e-5), num = 0, den = 0;
  for (int64_t j = 0; j < cols; j++) {
    double n = ((double)xr[j] + (double)rr[j] - mean) * inv * gamma[j] + beta[j];
    double g = 0.5 * n * (1.0 + erf(n / sqrt(2.0)));
    double d = (double)y[row * cols + j] - g;
    num += d * d;
    den += g * g;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  int64_t rows = 16384, cols = 1024;
  if (argc == 3) {
    rows = atoll(argv[1]);
    cols = atoll(argv[2]);
  }
  char text[1024];
  snprintf(text, sizeof text,
           "xir 1\ngraph add_ln_gelu opset 23 {\n"
           "  input x: f32[%lld, %lld]\n  input res: f32[%lld, %lld]\n"
           "  input gamma: f32[%lld]\n  input beta: f32[%lld]\n"
           "  s = Add(x, res)\n"
           "  n = LayerNormalization(s, gamma, beta) {axis: -1, epsilon: 1e-5}\n"
           "  y: f32[%lld, %lld] = Gelu(n)\n  output y\n}\n",
           (long long)rows, (long long)cols, (long long)rows, (long long)cols, (long long)cols,
           (long long)cols, (long long)rows, (long long)cols);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  bench_compile_cpu(bench_parse_xir(text, "add_ln_gelu.xir"), &m, &e);

  int64_t dims[2] = {rows, cols};
  xc_tensor_t* in[4] = {NULL, NULL, NULL, NULL};
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[0]), "alloc");
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[1]), "alloc");
  bench_check(xc_tensor_create(XC_F32, 1, &cols, &in[2]), "alloc");
  bench_check(xc_tensor_create(XC_F32, 1, &cols, &in[3]), "alloc");
  int64_t n = rows * cols;
  bench_fill(in[0]->data, n, 11u);
  bench_fill(in[1]->data, n, 22u);
  bench_fill(in[2]->data, cols, 33u);
  bench_fill(in[3]->data, cols, 44u);

  /* Correct before fast: a sample of rows against a double-precision formula. */
  xc_tensor_t* out[1] = {NULL};
  xc_run_stats_t st;
  bench_check(xc_executor_run(e, 4, (const xc_tensor_t* const*)in, out, &st), "run");
  double worst = 0;
  for (int64_t row = 0; row < rows; row += rows / 16 > 0 ? rows / 16 : 1) {
    double err = ref_row_check(in[0]->data, in[1]->data, in[2]->data, in[3]->data, out[0]->data, row, cols);
    if (!(err <= worst)) worst = err;
  }
  xc_tensor_destroy(out[0]);
  out[0] = NULL;
  if (!(worst <= 1e-5)) {
    fprintf(stderr, "bench_layernorm: result disagrees with the formula: rel-L2 %.3g\n", worst);
    return 1;
  }

  int64_t bytes = (3 * n + 2 * cols) * (int64_t)sizeof(float); /* read x, res, gamma, beta; write y */
  size_t half = (size_t)bytes / 2;
  char* src = malloc(half);
  char* dst = malloc(half);
  if (!src || !dst) bench_check(xc_error_oom(), "alloc");
  memset(src, 1, half);
  memset(dst, 2, half);

  for (int w = 0; w < 2; w++) {
    bench_run(e, 4, in, 1, out, 0, NULL);
    memcpy(dst, src, half);
  }
  enum { RUNS = 15 };
  double xk[RUNS], xw[RUNS], mc[RUNS], rk[RUNS], rw[RUNS];
  for (int r = 0; r < RUNS; r++) {
    xk[r] = bench_run(e, 4, in, 1, out, 0, &xw[r]);
    src[r] = (char)r; /* keep the copy observable */
    double s = bench_now_s();
    memcpy(dst, src, half);
    mc[r] = bench_now_s() - s;
    rk[r] = mc[r] / xk[r];
    rw[r] = mc[r] / xw[r];
  }
  if (dst[RUNS - 1] != (char)(RUNS - 1)) return 1;
  double gb = (double)bytes * 1e-9;
  double mxk = bench_median(xk, RUNS), mxw = bench_median(xw, RUNS), mmc = bench_median(mc, RUNS);
  printf("Add + LayerNormalization + Gelu, f32 %lld x %lld, %.1f MB moved (reads + writes), %d launch(es), "
         "rel-L2 vs formula %.1e\n",
         (long long)rows, (long long)cols, (double)bytes * 1e-6, st.launches, worst);
  printf("| measure | median ms | GB/s | ratio to memcpy |\n| --- | --- | --- | --- |\n");
  printf("| xcomp kernels | %.2f | %.1f | %.1f%% |\n", mxk * 1e3, gb / mxk, 100.0 * bench_median(rk, RUNS));
  printf("| xcomp whole run | %.2f | %.1f | %.1f%% |\n", mxw * 1e3, gb / mxw, 100.0 * bench_median(rw, RUNS));
  printf("| memcpy (%.1f MB) | %.2f | %.1f | 100%% |\n", (double)half * 1e-6, mmc * 1e3, gb / mmc);
  free(src);
  free(dst);
  for (int i = 0; i < 4; i++) xc_tensor_destroy(in[i]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
  return 0;
}
