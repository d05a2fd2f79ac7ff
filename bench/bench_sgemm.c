/* SGEMM (f32 MatMul, C = A * B, square n x n) compiled by xcomp for the cpu
 * target versus OpenBLAS cblas_sgemm on the same data, in the same process,
 * both on 2 threads. Results are checked to agree (rel-L2 <= 1e-5) before
 * timing; then the two are run interleaved (A B A B ...) after a warm-up and
 * the table shows the median GFLOP/s of each and the median of the per-pair
 * ratios xcomp / OpenBLAS. xcomp is timed by its kernel time (the executor's
 * stats) and also by the whole run (input upload and output download).
 *
 * Usage: bench_sgemm [sizes...]   (default 512 1024 2048 4096)
 *        bench_sgemm --knobs N BM BN BK [BM BN BK ...]   (forced GEMM tile knobs) */
#include <cblas.h>

#include "bench_common.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/passes.h"
#include "xcomp/tiled.h"

/* OpenBLAS extensions (declared by its cblas.h too, repeated for clarity). */
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);

#define THREADS 2

/* GEMM tile knobs forced through the session's lower hook: the
 * default lowering runs, then the BLOCK_M / BLOCK_N / BLOCK_K values it chose
 * are replaced (the emitter and the lowering are untouched). */
typedef struct knobs {
  int64_t bm, bn, bk;
} knobs_t;

static xc_status_t lower_with_knobs(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                                    xc_lowered_module_t** out) {
  const knobs_t* kn = ctx;
  /* The traits a cpu session gives the default lowering. */
  xc_target_t* t = NULL;
  int index = 0;
  xc_device_caps_t caps;
  XC_RETURN_IF_ERROR(xc_target_find("cpu", &t, &index));
  XC_RETURN_IF_ERROR(xc_target_device_caps(t, index, &caps));
  xc_target_traits_t traits;
  xc_driver_target_traits(xc_target_name(t), &caps, &traits);
  xc_fusion_plan_t* plan = NULL;
  XC_RETURN_IF_ERROR(xc_fusion_plan_build(g, &traits, &plan));
  xc_status_t s = xc_lower(g, plan, limits, out);
  xc_fusion_plan_destroy(plan);
  if (s) return s;
  for (int k = 0; k < (*out)->num_kernels; k++) {
    const xc_tiled_kernel_t* tk = (*out)->kernels[k].kernel;
    for (int i = 0; i < tk->num_knobs; i++) {
      /* the lowering names a phase's knobs BLOCK_M_p0, BLOCK_M_p1, ... */
      const char* name = tk->knobs[i].name;
      int64_t* v = &(*out)->kernels[k].knobs[i];
      if (strncmp(name, "BLOCK_M_p", 9) == 0 || strcmp(name, "BLOCK_M") == 0) *v = kn->bm;
      else if (strncmp(name, "BLOCK_N_p", 9) == 0 || strcmp(name, "BLOCK_N") == 0) *v = kn->bn;
      else if (strncmp(name, "BLOCK_K_p", 9) == 0 || strcmp(name, "BLOCK_K") == 0) *v = kn->bk;
    }
  }
  return NULL;
}

static void lower_free(void* ctx, xc_lowered_module_t* lm) {
  (void)ctx;
  xc_lowered_module_destroy(lm);
}

static int runs_for(int n) { return n <= 512 ? 30 : n <= 1024 ? 15 : n <= 2048 ? 7 : 3; }

static void bench_size(int n, const knobs_t* kn) {
  char text[512];
  snprintf(text, sizeof text,
           "xir 1\ngraph sgemm opset 23 {\n  input a: f32[%d, %d]\n  input b: f32[%d, %d]\n"
           "  c: f32[%d, %d] = MatMul(a, b)\n  output c\n}\n",
           n, n, n, n, n, n);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  double t0 = bench_now_s();
  xc_status_t cs;
  if (kn) {
    xc_session_options_t req;
    bench_session_options(&req, "cpu");
    req.lower = lower_with_knobs;
    req.lower_free = lower_free;
    req.lower_ctx = (void*)kn;
    cs = bench_try_compile_request(bench_parse_xir(text, "sgemm.xir"), &req, &m, &e);
  } else {
    cs = bench_try_compile_cpu(bench_parse_xir(text, "sgemm.xir"), &m, &e);
  }
  double compile_s = bench_now_s() - t0;
  char label[64];
  if (kn)
    snprintf(label, sizeof label, "%d (BLOCK_M %lld, N %lld, K %lld)", n, (long long)kn->bm, (long long)kn->bn,
             (long long)kn->bk);
  else
    snprintf(label, sizeof label, "%d", n);
  if (cs) {
    printf("| %s | - | not compiled: %s |\n", label, xc_status_message(cs));
    xc_status_free(cs);
    fflush(stdout);
    return;
  }

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

  /* Warm-up, then interleaved pairs. xcomp's warm-up covers the cpu
   * target's choice between its pool and the calling thread alone: a
   * recorded launch alternates the two for its first 8 replays (then keeps
   * the faster, docs/targets.md), so with fewer warm-up runs some timed
   * runs were single-threaded by design. */
  for (int w = 0; w < 9; w++) bench_run(e, 2, in, 1, out, 0, NULL);
  for (int w = 0; w < (n >= 4096 ? 1 : 2); w++)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, ref, n);
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
  printf("| %s | %d | %.1f | %.1f | %.1f | %.1f%% | %.1f%% | %.1e | %.1f |\n", label, runs,
         flop / mxk * 1e-9, flop / mxw * 1e-9, flop / mob * 1e-9, 100.0 * bench_median(rk, runs),
         100.0 * bench_median(rw, runs), err, compile_s);
  fflush(stdout);
  free(ref);
  xc_tensor_destroy(in[0]);
  xc_tensor_destroy(in[1]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

/* True when OpenBLAS's dynamic dispatch picked kernels older than the
 * host's vector instructions: on some virtual machines it does not
 * recognize the CPU (an AVX-512 Xeon reported as Prescott, SSE3 kernels at a
 * fifth of the speed of its SkylakeX ones), which would flatter xcomp. */
static bool openblas_core_too_old(const char* core) {
  static const char* const old[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                                    "Katmai", "Coppermine", "Northwood", "Banias", "Sandybridge", NULL};
  if (!__builtin_cpu_supports("avx2")) return false;
  for (const char* const* o = old; *o; o++)
    if (strcmp(core, *o) == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  openblas_set_num_threads(THREADS);
  const char* core = openblas_get_corename();
  printf("SGEMM f32 n x n x n, %d threads; OpenBLAS core: %s; OMP_NUM_THREADS=%s\n", THREADS, core,
         getenv("OMP_NUM_THREADS"));
  if (openblas_core_too_old(core))
    printf("warning: OpenBLAS runs its %s kernels on a CPU with %s: its figures understate it; "
           "set OPENBLAS_CORETYPE (%s) to compare with its own kernels for this CPU\n",
           core, __builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2",
           __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell");
  printf("| n | runs | xcomp kernel GFLOP/s | xcomp run GFLOP/s | OpenBLAS GFLOP/s | xcomp/OpenBLAS (kernel) "
         "| xcomp/OpenBLAS (run) | rel-L2 | compile s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  if (argc > 1 && strcmp(argv[1], "--knobs") == 0) {
    /* --knobs N BM BN BK [BM BN BK ...]: one size, forced GEMM tile knobs. */
    int n = argc > 2 ? atoi(argv[2]) : 2048;
    bench_size(n, NULL);
    for (int i = 3; i + 2 < argc; i += 3) {
      knobs_t kn = {atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2])};
      bench_size(n, &kn);
    }
  } else if (argc > 1) {
    for (int i = 1; i < argc; i++) bench_size(atoi(argv[i]), NULL);
  } else {
    int sizes[] = {512, 1024, 2048, 4096};
    for (int i = 0; i < 4; i++) bench_size(sizes[i], NULL);
  }
  return 0;
}
