/* cuBLASLt for vendor GEMM blobs (cuda_blaslt.h). Row-major GEMMs map onto
 * cuBLASLt's column-major convention by computing Y^T = op(B)^T op(A)^T: a
 * row-major [r, c] matrix is a column-major [c, r] one with the same bytes,
 * so cuBLASLt's "A" is our B and its "B" is our A, and the bias (length n)
 * runs along the rows of the column-major result, as cuBLASLt's BIAS
 * epilogue expects. */
#include "cuda_blaslt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque* cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque* cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque* cublasLtMatmulPreference_t;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

/* Values from cublasLt.h / cublas_api.h / library_types.h. */
enum {
  LT_COMPUTE_32F = 68,
  LT_COMPUTE_32F_FAST_TF32 = 77,
  LT_R_32F = 0,
  LT_R_16F = 2,
  LT_R_16BF = 14,
  LT_DESC_TRANSA = 3,
  LT_DESC_TRANSB = 4,
  LT_DESC_EPILOGUE = 7,
  LT_DESC_BIAS_POINTER = 8,
  LT_EPILOGUE_DEFAULT = 1,
  LT_EPILOGUE_RELU = 2,
  LT_EPILOGUE_BIAS = 4,
  LT_EPILOGUE_RELU_BIAS = 6,
  LT_EPILOGUE_GELU = 32,
  LT_EPILOGUE_GELU_BIAS = 36,
  LT_PREF_MAX_WORKSPACE_BYTES = 1,
  LT_OP_N = 0,
  LT_OP_T = 1,
};

#define XC_BLASLT_FUNCTIONS(X)                                                                              \
  X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t*))                                                      \
  X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t))                                                      \
  X(const char*, cublasLtGetStatusString, (cublasStatus_t))                                                   \
  X(cublasStatus_t, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t*, int, int))                              \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t))                                        \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute, (cublasLtMatmulDesc_t, int, const void*, size_t))         \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t))  \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t))                                    \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t*))                            \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t))                            \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute, (cublasLtMatmulPreference_t, int, const void*, size_t)) \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                                           \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,                  \
     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,                         \
     cublasLtMatmulHeuristicResult_t*, int*))                                                                 \
  X(cublasStatus_t, cublasLtMatmul,                                                                           \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t, const void*,   \
     cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t, \
     const cublasLtMatmulAlgo_t*, void*, size_t, CUstream))

static struct {
#define XC_BLASLT_MEMBER(ret, name, params) ret(*name) params;
  XC_BLASLT_FUNCTIONS(XC_BLASLT_MEMBER)
#undef XC_BLASLT_MEMBER
} lt;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_loaded;
static char g_why[256];

static void load_library(void) {
  const char* names[] = {getenv("XCOMP_CUBLASLT_LIBRARY"), "libcublasLt.so.13", "libcublasLt.so.12",
                         "libcublasLt.so", "/usr/local/cuda/lib64/libcublasLt.so.13",
                         "/usr/local/cuda/lib64/libcublasLt.so.12"};
  void* lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
    if (names[i] && *names[i]) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g_why, sizeof g_why, "libcublasLt.so not found (install the CUDA toolkit's cuBLAS or set XCOMP_CUBLASLT_LIBRARY)");
    return;
  }
#define XC_BLASLT_RESOLVE(ret, name, params)                                       \
  if (!(*(void**)&lt.name = dlsym(lib, #name))) {                                  \
    snprintf(g_why, sizeof g_why, "libcublasLt lacks %s", #name);                  \
    return;                                                                         \
  }
  XC_BLASLT_FUNCTIONS(XC_BLASLT_RESOLVE)
#undef XC_BLASLT_RESOLVE
  g_loaded = true; /* the library stays loaded for the life of the process */
}

bool xc_cublaslt_available(char* why, size_t why_size) {
  pthread_once(&g_once, load_library);
  if (!g_loaded && why && why_size) snprintf(why, why_size, "%s", g_why);
  return g_loaded;
}

static xc_status_t lt_fail(cublasStatus_t s, const char* what) {
  return xc_error(XC_INTERNAL, "cuda: cuBLASLt %s failed: %s (%d)", what,
                  lt.cublasLtGetStatusString ? lt.cublasLtGetStatusString(s) : "?", (int)s);
}

#define LT_CHECK(expr, what)                     \
  do {                                           \
    cublasStatus_t lt_s_ = (expr);               \
    if (lt_s_ != 0) return lt_fail(lt_s_, what); \
  } while (0)

/* ---- per device ---- */

enum { WORKSPACE_BYTES = 32 << 20 };

struct cu_blaslt_device {
  cublasLtHandle_t handle;
  CUdeviceptr workspace;
};

xc_status_t cu_blaslt_device_get(cu_blaslt_device_t** slot, const xc_cuda_api_t* api) {
  if (*slot) return NULL;
  char why[256];
  if (!xc_cublaslt_available(why, sizeof why)) return xc_error(XC_UNAVAILABLE, "cuda: %s", why);
  cu_blaslt_device_t* d = calloc(1, sizeof *d);
  if (!d) return xc_error_oom();
  cublasStatus_t s = lt.cublasLtCreate(&d->handle);
  if (s != 0) {
    free(d);
    return lt_fail(s, "cublasLtCreate");
  }
  if (api->cuMemAlloc(&d->workspace, WORKSPACE_BYTES) != CUDA_SUCCESS) {
    lt.cublasLtDestroy(d->handle);
    free(d);
    return xc_error(XC_RESOURCE_EXHAUSTED, "cuda: cannot allocate the %d MiB cuBLASLt workspace", WORKSPACE_BYTES >> 20);
  }
  *slot = d;
  return NULL;
}

void cu_blaslt_device_free(cu_blaslt_device_t* d, const xc_cuda_api_t* api) {
  if (!d) return;
  api->cuMemFree(d->workspace);
  lt.cublasLtDestroy(d->handle);
  free(d);
}

/* ---- one GEMM ---- */

struct cu_blaslt_gemm {
  cu_blaslt_device_t* device;
  xc_vendor_gemm_t desc;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ly; /* cuBLASLt's A (our B), B (our A), C = D (our Y) */
  cublasLtMatmulAlgo_t algo;
  size_t workspace;
};

void cu_blaslt_gemm_destroy(cu_blaslt_gemm_t* g) {
  if (!g) return;
  if (g->ly) lt.cublasLtMatrixLayoutDestroy(g->ly);
  if (g->lb) lt.cublasLtMatrixLayoutDestroy(g->lb);
  if (g->la) lt.cublasLtMatrixLayoutDestroy(g->la);
  if (g->op) lt.cublasLtMatmulDescDestroy(g->op);
  free(g);
}

static xc_status_t prepare(cu_blaslt_gemm_t* g) {
  const xc_vendor_gemm_t* v = &g->desc;
  int type = v->dtype == XC_F16 ? LT_R_16F : v->dtype == XC_BF16 ? LT_R_16BF : LT_R_32F;
  int compute = v->dtype == XC_F32 && v->allow_tf32 ? LT_COMPUTE_32F_FAST_TF32 : LT_COMPUTE_32F;
  LT_CHECK(lt.cublasLtMatmulDescCreate(&g->op, compute, LT_R_32F), "cublasLtMatmulDescCreate");
  int32_t ta = v->trans_b ? LT_OP_T : LT_OP_N, tb = v->trans_a ? LT_OP_T : LT_OP_N;
  LT_CHECK(lt.cublasLtMatmulDescSetAttribute(g->op, LT_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
  LT_CHECK(lt.cublasLtMatmulDescSetAttribute(g->op, LT_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
  uint32_t ep = LT_EPILOGUE_DEFAULT;
  if (v->epilogue == XC_VENDOR_EPILOGUE_BIAS) ep = LT_EPILOGUE_BIAS;
  else if (v->epilogue == XC_VENDOR_EPILOGUE_RELU) ep = LT_EPILOGUE_RELU;
  else if (v->epilogue == XC_VENDOR_EPILOGUE_BIAS_RELU) ep = LT_EPILOGUE_RELU_BIAS;
  else if (v->epilogue == XC_VENDOR_EPILOGUE_GELU) ep = LT_EPILOGUE_GELU;
  else if (v->epilogue == XC_VENDOR_EPILOGUE_BIAS_GELU) ep = LT_EPILOGUE_GELU_BIAS;
  LT_CHECK(lt.cublasLtMatmulDescSetAttribute(g->op, LT_DESC_EPILOGUE, &ep, sizeof ep), "set EPILOGUE");
  uint64_t m = (uint64_t)v->m, n = (uint64_t)v->n, k = (uint64_t)v->k;
  /* cuBLASLt A = our B as stored: [k,n] row-major is column-major n x k. */
  if (v->trans_b) LT_CHECK(lt.cublasLtMatrixLayoutCreate(&g->la, type, k, n, (int64_t)k), "layout A");
  else LT_CHECK(lt.cublasLtMatrixLayoutCreate(&g->la, type, n, k, (int64_t)n), "layout A");
  if (v->trans_a) LT_CHECK(lt.cublasLtMatrixLayoutCreate(&g->lb, type, m, k, (int64_t)m), "layout B");
  else LT_CHECK(lt.cublasLtMatrixLayoutCreate(&g->lb, type, k, m, (int64_t)k), "layout B");
  LT_CHECK(lt.cublasLtMatrixLayoutCreate(&g->ly, type, n, m, (int64_t)n), "layout D");
  cublasLtMatmulPreference_t pref = NULL;
  LT_CHECK(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  uint64_t ws = WORKSPACE_BYTES;
  cublasStatus_t s = lt.cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t res;
  memset(&res, 0, sizeof res);
  int found = 0;
  if (s == 0)
    s = lt.cublasLtMatmulAlgoGetHeuristic(g->device->handle, g->op, g->la, g->lb, g->ly, g->ly, pref, 1, &res,
                                          &found);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  if (s != 0) return lt_fail(s, "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1 || res.state != 0)
    return xc_error(XC_UNSUPPORTED, "cuda: cuBLASLt has no algorithm for this GEMM (%lld x %lld x %lld %s)",
                    (long long)v->m, (long long)v->n, (long long)v->k, xc_dtype_name(v->dtype));
  g->algo = res.algo;
  g->workspace = res.workspaceSize;
  return NULL;
}

xc_status_t cu_blaslt_gemm_create(cu_blaslt_device_t* d, const xc_vendor_gemm_t* v, cu_blaslt_gemm_t** out) {
  *out = NULL;
  cu_blaslt_gemm_t* g = calloc(1, sizeof *g);
  if (!g) return xc_error_oom();
  g->device = d;
  g->desc = *v;
  xc_status_t s = prepare(g);
  if (s) {
    cu_blaslt_gemm_destroy(g);
    return s;
  }
  *out = g;
  return NULL;
}

const xc_vendor_gemm_t* cu_blaslt_gemm_desc(const cu_blaslt_gemm_t* g) { return &g->desc; }

xc_status_t cu_blaslt_gemm_run(cu_blaslt_gemm_t* g, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr y,
                               CUstream stream) {
  if (g->desc.bias >= 0) {
    void* p = (void*)(uintptr_t)bias;
    LT_CHECK(lt.cublasLtMatmulDescSetAttribute(g->op, LT_DESC_BIAS_POINTER, &p, sizeof p), "set BIAS_POINTER");
  }
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(lt.cublasLtMatmul(g->device->handle, g->op, &one, (const void*)(uintptr_t)b, g->la,
                             (const void*)(uintptr_t)a, g->lb, &zero, (const void*)(uintptr_t)y, g->ly,
                             (void*)(uintptr_t)y, g->ly, &g->algo, (void*)(uintptr_t)g->device->workspace,
                             g->workspace, stream),
           "cublasLtMatmul");
  return NULL;
}
