/* SGEMM (f32 MatMul, C = A * B, square n x n) compiled by xcomp for the cpu
 * target versus OpenBLAS cblas_sgemm on the same data, in the same process,
 * both on 2 threads. Results are checked to agree (rel-L2 <= 1e-5) before
 * timing; then the two are run interleaved (A B A B ...) after a warm-up and
 * the table shows the median GFLOP/s of each and the median of the per-pair
 * ratios xcomp / OpenBLAS. xcomp is timed by its kernel time (the executor's
 * stats) and also by the whole run (input upload and output download).
 *
 * Usage: bench_sgemm [sizes...]   (default 512 1024 2048 4096) */
#include <cblas.h>

#include "bench_common.h"

/* OpenBLAS extensions (declared by its cblas.h too, repeated for clarity). */
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);

#define THREADS 2

static int runs_for(int n) { return n <= 512 ? 30 : n <= 1024 ? 15 : n <= 2048 ? 7 : 3; }

static void bench_size(int n) {
  char text[512];
  snprintf(text, sizeof text,
           "xir 1\ngraph sgemm opset 23 {\n  input a: f32[%d, %d]\n  input b: f32[%d, %d]\n"
           "  c: f32[%d, %d] = MatMul(a, b)\n  output c\n}\n",
           n, n, n, n, n, n);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  double t0 = bench_now_s();
  bench_compile_cpu(bench_parse_xir(text, "sgemm.xir"), &m, &e);
  double compile_s = bench_now_s() - t0;

  int64_t dims[2] = {n, n};
  xc_tensor_t* in[2] = {NULL, NULL};
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[0]), "alloc");
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[1]), "alloc");
  int64_t nn = (int64_t)n * n;
  bench_fill(in[0]->data, nn, 12345u + (uint32_t)n);
  bench_fill(in[1]->data, nn, 777u + (uint32_t)n);
  float* ref = malloc((size_t)nn * sizeof *ref);
  if (!ref) bench_check(xc_error_oom(), "alloc");
  const float* A = in[0]->data;
  const float* B = in[1]->data;

  /* Correct before fast. */
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, ref, n);
  xc_tensor_t* out[1] = {NULL};
  bench_run(e, 2, in, 1, out, 1, NULL);
  double err = bench_rel_l2(out[0]->data, ref, nn);
  xc_tensor_destroy(out[0]);
  out[0] = NULL;
  if (!(err <= 1e-5)) {
    fprintf(stderr, "bench_sgemm: n=%d: xcomp and OpenBLAS disagree: rel-L2 %.3g > 1e-5\n", n, err);
    exit(1);
  }

  /* Warm-up, then interleaved pairs. */
  for (int w = 0; w < 2; w++) {
    bench_run(e, 2, in, 1, out, 0, NULL);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, ref, n);
  }
  int runs = runs_for(n);
  double xk[64], xw[64], ob[64], rk[64], rw[64];
  for (int r = 0; r < runs; r++) {
    xk[r] = bench_run(e, 2, in, 1, out, 0, &xw[r]);
    double s = bench_now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, ref, n);
    ob[r] = bench_now_s() - s;
    rk[r] = ob[r] / xk[r]; /* time ratio inverted = GFLOP/s ratio xcomp / OpenBLAS */
    rw[r] = ob[r] / xw[r];
  }
  double flop = 2.0 * (double)n * (double)n * (double)n;
  double mxk = bench_median(xk, runs), mxw = bench_median(xw, runs), mob = bench_median(ob, runs);
  printf("%5d | %4d | %8.1f | %8.1f | %8.1f | %6.1f%% | %6.1f%% | %.1e | %5.1f\n", n, runs,
         flop / mxk * 1e-9, flop / mxw * 1e-9, flop / mob * 1e-9, 100.0 * bench_median(rk, runs),
         100.0 * bench_median(rw, runs), err, compile_s);
  fflush(stdout);
  free(ref);
  xc_tensor_destroy(in[0]);
  xc_tensor_destroy(in[1]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  openblas_set_num_threads(THREADS);
  printf("SGEMM f32 n x n x n, %d threads; OpenBLAS core: %s; OMP_NUM_THREADS=%s\n", THREADS,
         openblas_get_corename(), getenv("OMP_NUM_THREADS"));
  printf("    n | runs | xcomp kernel GF/s | xcomp run GF/s | OpenBLAS GF/s | ratio (kernel) | ratio (run) "
         "| rel-L2 | compile s\n");
  if (argc > 1)
    for (int i = 1; i < argc; i++) bench_size(atoi(argv[i]));
  else {
    int sizes[] = {512, 1024, 2048, 4096};
    for (int i = 0; i < 4; i++) bench_size(sizes[i]);
  }
  return 0;
}
