/* GEMM (MatMul, C = A * B, square n x n x n) compiled by xcomp for the cuda
 * target versus cuBLAS (cublasGemmEx) on the same data, in the same process
 * and on the same GPU: bf16, f16 (f32 accumulation, output in the input
 * type), f32 exact (xcomp: FMA; cuBLAS: CUBLAS_COMPUTE_32F) and f32 with
 * tf32 allowed (xcomp --allow-tf32; cuBLAS: CUBLAS_COMPUTE_32F_FAST_TF32).
 * Results are checked to agree before timing (rel-L2: bf16 1.6e-2, f16
 * 2e-3, f32 1e-5, tf32 1e-3 between the two tf32 products); then the two are
 * run interleaved after a warm-up and the table shows the median TFLOP/s of
 * each and the median of the per-pair ratios xcomp / cuBLAS. xcomp is timed
 * by its kernel time (the executor's stats), cuBLAS by CUDA events around
 * one cublasGemmEx.
 *
 * cuBLAS and the driver are opened with dlopen (no CUDA headers needed):
 * $XCOMP_CUBLAS_LIBRARY, else libcublas.so.13, .so.12, .so, then the same in
 * /usr/local/cuda/lib64.
 *
 * Usage: bench_gemm_cuda [--target T] [--only bf16|f16|f32|tf32] [--knobs NAME=V,...] [--flags "NVRTC FLAGS"]
 *                        [sizes...]   (default 4096 8192)
 * --knobs replaces knob values the lowering chose (NAME matches a knob name or
 * its prefix: BLOCK_K=16 sets BLOCK_K_p0); --flags are extra NVRTC options. */
#include <dlfcn.h>

#include "bench_common.h"
#include "xcomp/conformance.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/passes.h"

typedef int cu_result;
typedef void* cu_context;
typedef unsigned long long cu_ptr;
typedef void* cu_event;
typedef void* cublas_handle;

static struct {
  cu_result (*init)(unsigned);
  cu_result (*device_get)(int*, int);
  cu_result (*ctx_retain)(cu_context*, int);
  cu_result (*ctx_set)(cu_context);
  cu_result (*mem_alloc)(cu_ptr*, size_t);
  cu_result (*mem_free)(cu_ptr);
  cu_result (*htod)(cu_ptr, const void*, size_t);
  cu_result (*dtoh)(void*, cu_ptr, size_t);
  cu_result (*ctx_sync)(void);
  cu_result (*ev_create)(cu_event*, unsigned);
  cu_result (*ev_record)(cu_event, void*);
  cu_result (*ev_sync)(cu_event);
  cu_result (*ev_elapsed)(float*, cu_event, cu_event);
  int (*create)(cublas_handle*);
  int (*gemm_ex)(cublas_handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int);
} api;

static void* open_first(const char* env, const char* const* names) {
  const char* e = getenv(env);
  if (e && *e) return dlopen(e, RTLD_NOW | RTLD_GLOBAL);
  for (int i = 0; names[i]; i++) {
    void* h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
  }
  return NULL;
}

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "bench_gemm_cuda: %s not found\n", name);
    exit(1);
  }
  return p;
}

#define CU(call)                                                            \
  do {                                                                      \
    cu_result r_ = (call);                                                  \
    if (r_) {                                                               \
      fprintf(stderr, "bench_gemm_cuda: %s failed: %d\n", #call, (int)r_); \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static cublas_handle open_cublas(void) {
  static const char* const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
  static const char* const blas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                           "/usr/local/cuda/lib64/libcublas.so.13",
                                           "/usr/local/cuda/lib64/libcublas.so.12",
                                           "/usr/local/cuda/lib64/libcublas.so", NULL};
  void* cu = open_first("XCOMP_CUDA_LIBRARY", cuda_names);
  void* bl = open_first("XCOMP_CUBLAS_LIBRARY", blas_names);
  if (!cu || !bl) {
    fprintf(stderr, "bench_gemm_cuda: %s not found\n", cu ? "libcublas" : "libcuda.so.1");
    exit(1);
  }
  *(void**)&api.init = sym(cu, "cuInit");
  *(void**)&api.device_get = sym(cu, "cuDeviceGet");
  *(void**)&api.ctx_retain = sym(cu, "cuDevicePrimaryCtxRetain");
  *(void**)&api.ctx_set = sym(cu, "cuCtxSetCurrent");
  *(void**)&api.mem_alloc = sym(cu, "cuMemAlloc_v2");
  *(void**)&api.mem_free = sym(cu, "cuMemFree_v2");
  *(void**)&api.htod = sym(cu, "cuMemcpyHtoD_v2");
  *(void**)&api.dtoh = sym(cu, "cuMemcpyDtoH_v2");
  *(void**)&api.ctx_sync = sym(cu, "cuCtxSynchronize");
  *(void**)&api.ev_create = sym(cu, "cuEventCreate");
  *(void**)&api.ev_record = sym(cu, "cuEventRecord");
  *(void**)&api.ev_sync = sym(cu, "cuEventSynchronize");
  *(void**)&api.ev_elapsed = dlsym(cu, "cuEventElapsedTime_v2");
  if (!api.ev_elapsed) *(void**)&api.ev_elapsed = sym(cu, "cuEventElapsedTime");
  *(void**)&api.create = sym(bl, "cublasCreate_v2");
  *(void**)&api.gemm_ex = sym(bl, "cublasGemmEx");
  int dev = 0;
  cu_context ctx = NULL;
  CU(api.init(0));
  CU(api.device_get(&dev, 0));
  CU(api.ctx_retain(&ctx, dev));
  CU(api.ctx_set(ctx));
  cublas_handle h = NULL;
  if (api.create(&h)) {
    fprintf(stderr, "bench_gemm_cuda: cublasCreate failed\n");
    exit(1);
  }
  return h;
}

enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, GEMM_DEFAULT = -1 };

typedef struct variant {
  const char* name;
  xc_dtype_t dt;
  bool tf32;
  int cuda_type, compute;
  double tol;
} variant_t;

static const variant_t variants[] = {
    {"bf16", XC_BF16, false, CUDA_R_16BF, COMPUTE_32F, 1.6e-2},
    {"f16", XC_F16, false, CUDA_R_16F, COMPUTE_32F, 2e-3},
    {"f32", XC_F32, false, CUDA_R_32F, COMPUTE_32F, 1e-5},
    {"tf32", XC_F32, true, CUDA_R_32F, COMPUTE_32F_FAST_TF32, 1e-3},
};

static cublas_handle blas;
static const char* knob_spec; /* --knobs */
static const char* extra_flags; /* --flags */
static const char* g_target = "cuda"; /* --target: another GPU target on the same device (opencl:0) */

static bool forced_knob(const char* name, int64_t* value) {
  const char* p = knob_spec;
  while (p && *p) {
    const char* eq = strchr(p, '=');
    if (!eq) return false;
    size_t n = (size_t)(eq - p);
    if (strncmp(name, p, n) == 0 && (name[n] == 0 || name[n] == '_')) {
      *value = atoll(eq + 1);
      return true;
    }
    p = strchr(eq, ',');
    if (p) p++;
  }
  return false;
}

/* The default lowering, then the --knobs values. */
static xc_status_t lower_forced(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                                xc_lowered_module_t** out) {
  (void)ctx;
  xc_target_traits_t traits;
  xc_target_traits_init(&traits);
  traits.name = g_target;
  traits.has_tensor_cores = strcmp(g_target, "cuda") == 0;
  xc_fusion_plan_t* plan = NULL;
  XC_RETURN_IF_ERROR(xc_fusion_plan_build(g, &traits, &plan));
  xc_status_t s = xc_lower(g, plan, limits, out);
  xc_fusion_plan_destroy(plan);
  for (int k = 0; !s && k < (*out)->num_kernels; k++) {
    const xc_tiled_kernel_t* tk = (*out)->kernels[k].kernel;
    for (int i = 0; i < tk->num_knobs; i++) forced_knob(tk->knobs[i].name, &(*out)->kernels[k].knobs[i]);
  }
  return s;
}

static void lower_free(void* ctx, xc_lowered_module_t* lm) {
  (void)ctx;
  xc_lowered_module_destroy(lm);
}

/* cuBLAS is column-major: the row-major C = A B is C^T = B^T A^T. */
static void cublas_gemm(const variant_t* v, int n, cu_ptr A, cu_ptr B, cu_ptr C) {
  float one = 1.0f, zero = 0.0f;
  int st = api.gemm_ex(blas, 0, 0, n, n, n, &one, (const void*)(uintptr_t)B, v->cuda_type, n,
                       (const void*)(uintptr_t)A, v->cuda_type, n, &zero, (void*)(uintptr_t)C, v->cuda_type, n,
                       v->compute, GEMM_DEFAULT);
  if (st) {
    fprintf(stderr, "bench_gemm_cuda: cublasGemmEx failed: %d\n", st);
    exit(1);
  }
}

static void bench_one(const variant_t* v, int n) {
  char text[512];
  const char* t = xc_dtype_name(v->dt);
  snprintf(text, sizeof text,
           "xir 1\ngraph gemm opset 23 {\n  input a: %s[%d, %d]\n  input b: %s[%d, %d]\n"
           "  c: %s[%d, %d] = MatMul(a, b)\n  output c\n}\n",
           t, n, n, t, n, n, t, n, n);
  xc_session_options_t req;
  xc_session_options_init(&req);
  req.target = g_target;
  req.use_cache = false;
  req.build.compile.allow_tf32 = v->tf32;
  req.build.compile.extra_flags = extra_flags;
  req.no_vendor_blas = true; /* xcomp's generated kernel, not cuBLASLt behind it */
  if (knob_spec) req.lower = lower_forced, req.lower_free = lower_free;
  double t0 = bench_now_s();
  xc_graph_t* g = bench_parse_xir(text, "gemm.xir");
  xc_session_t* session = NULL;
  bench_check(xc_session_create(&req, &session), "target");
  xc_compiled_module_t* m = NULL;
  bench_check(xc_session_compile_graph(session, g, &m), "compile");
  xc_session_destroy(session);
  xc_graph_destroy(g);
  xc_executor_t* e = NULL;
  bench_check(xc_executor_create(m, g_target, NULL, &e), "executor");
  double compile_s = bench_now_s() - t0;

  int64_t dims[2] = {n, n}, nn = (int64_t)n * n;
  xc_tensor_t* in[2] = {NULL, NULL};
  float* tmp = malloc((size_t)nn * sizeof *tmp);
  if (!tmp) bench_check(xc_error_oom(), "alloc");
  for (int i = 0; i < 2; i++) {
    bench_check(xc_tensor_create(v->dt, 2, dims, &in[i]), "alloc");
    bench_fill(tmp, nn, 12345u * (uint32_t)(i + 1) + (uint32_t)n);
    for (int64_t j = 0; j < nn; j++) xc_tensor_set_f64(in[i], j, tmp[j]);
  }
  free(tmp);
  size_t bytes = (size_t)nn * xc_dtype_size(v->dt);
  cu_ptr dA = 0, dB = 0, dC = 0;
  CU(api.mem_alloc(&dA, bytes));
  CU(api.mem_alloc(&dB, bytes));
  CU(api.mem_alloc(&dC, bytes));
  CU(api.htod(dA, in[0]->data, bytes));
  CU(api.htod(dB, in[1]->data, bytes));

  /* Correct before fast: xcomp against cuBLAS. */
  xc_tensor_t* out[1] = {NULL};
  bench_run(e, 2, in, 1, out, 1, NULL);
  cublas_gemm(v, n, dA, dB, dC);
  CU(api.ctx_sync());
  xc_tensor_t* ref = NULL;
  bench_check(xc_tensor_create(v->dt, 2, dims, &ref), "alloc");
  CU(api.dtoh(ref->data, dC, bytes));
  xc_tolerance_t tol;
  xc_tolerance_for_dtype(v->dt, &tol);
  tol.max_rel_l2 = v->tol;
  tol.check_allclose = false;
  xc_compare_result_t cr;
  bench_check(xc_compare_tensors(out[0], ref, &tol, &cr), "compare");
  xc_tensor_destroy(out[0]);
  out[0] = NULL;
  xc_tensor_destroy(ref);
  if (!cr.ok) {
    fprintf(stderr, "bench_gemm_cuda: %s n=%d: xcomp and cuBLAS disagree: rel-L2 %.3g > %.1g (%s)\n", v->name, n,
            cr.rel_l2, v->tol, cr.reason);
    exit(1);
  }

  cu_event ev0 = NULL, ev1 = NULL;
  CU(api.ev_create(&ev0, 0));
  CU(api.ev_create(&ev1, 0));
  for (int w = 0; w < 2; w++) {
    bench_run(e, 2, in, 1, out, 0, NULL);
    cublas_gemm(v, n, dA, dB, dC);
  }
  CU(api.ctx_sync());
  int runs = n <= 4096 ? 9 : 5;
  double xk[16], cb[16], ratio[16];
  for (int r = 0; r < runs; r++) {
    xk[r] = bench_run(e, 2, in, 1, out, 0, NULL);
    CU(api.ev_record(ev0, NULL));
    cublas_gemm(v, n, dA, dB, dC);
    CU(api.ev_record(ev1, NULL));
    CU(api.ev_sync(ev1));
    float ms = 0;
    CU(api.ev_elapsed(&ms, ev0, ev1));
    cb[r] = ms * 1e-3;
    ratio[r] = cb[r] / xk[r];
  }
  double flop = 2.0 * (double)n * (double)n * (double)n;
  double mx = bench_median(xk, runs), mc = bench_median(cb, runs);
  printf("| %s | %d | %d | %.1f | %.1f | %.1f%% | %.1e | %.1f |\n", v->name, n, runs, flop / mx * 1e-12,
         flop / mc * 1e-12, 100.0 * bench_median(ratio, runs), cr.rel_l2, compile_s);
  fflush(stdout);
  api.mem_free(dA), api.mem_free(dB), api.mem_free(dC);
  xc_tensor_destroy(in[0]);
  xc_tensor_destroy(in[1]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

int main(int argc, char** argv) {
  bench_check(xc_targets_init(), "targets");
  blas = open_cublas();
  const char* only = NULL;
  int sizes[16], ns = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--knobs") == 0 && i + 1 < argc) knob_spec = argv[++i];
    else if (strcmp(argv[i], "--flags") == 0 && i + 1 < argc) extra_flags = argv[++i];
    else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) g_target = argv[++i];
    else if (ns < 16) sizes[ns++] = atoi(argv[i]);
  }
  if (!ns) sizes[ns++] = 4096, sizes[ns++] = 8192;
  xc_target_t* target = NULL;
  int index = 0;
  xc_device_caps_t caps;
  bench_check(xc_target_find(g_target, &target, &index), "target");
  bench_check(xc_target_device_caps(target, index, &caps), "caps");
  printf("GEMM n x n x n on %s (%s), xcomp %s target vs cuBLAS cublasGemmEx%s%s%s%s\n", caps.name, caps.vendor,
         g_target,
         knob_spec ? "; knobs " : "", knob_spec ? knob_spec : "", extra_flags ? "; flags " : "",
         extra_flags ? extra_flags : "");
  printf("| dtype | n | runs | xcomp TFLOP/s | cuBLAS TFLOP/s | xcomp/cuBLAS | rel-L2 vs cuBLAS | compile s |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    if (only && strcmp(only, variants[v].name) != 0) continue;
    for (int i = 0; i < ns; i++) bench_one(&variants[v], sizes[i]);
  }
  return 0;
}
