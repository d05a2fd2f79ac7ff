/* The cuda target: kernels emitted in CUDA C++ by the C-family emitter
 * (cuda_dialect.c), compiled by NVRTC to a cubin for one architecture plus
 * its PTX, and run through the CUDA Driver API. Both libraries are loaded
 * with dlopen on first use (no link-time dependency): libnvrtc for compile,
 * libcuda.so.1 for the runtime, each with a table of the functions used
 * (cuda_api.h) resolved once. Compilation works without a GPU; the runtime
 * half reports "target cuda unavailable: <reason>" when the driver or a
 * device is missing.
 *
 * A launch of grid G and threads T is cuLaunchKernel with G blocks of T
 * threads on the device's stream; arguments are the buffers (CUdeviceptr)
 * then the scalars (long long), in order. docs/targets/cuda.md. */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets_internal.h"
#include "cuda_api.h"
#include "cuda_blaslt.h"
#include "cuda_gemm.h"
#include "cuda_attention.h"
#include "cuda_target.h"

typedef struct cu_target {
  pthread_mutex_t lock;
  /* driver */
  bool loaded;
  xc_status_t load_error;
  void* library;
  xc_cuda_api_t api;
  int num_devices;
  int driver_version;
  bool has_graphs;  /* the driver exports the CUDA Graph functions */
  bool has_mapped;  /* ... and the mapped pinned host memory functions */
  /* NVRTC */
  bool nvrtc_loaded;
  xc_status_t nvrtc_error;
  void* nvrtc_library;
  xc_nvrtc_api_t nvrtc;
} cu_target_t;

/* Host copies of 1 MiB or more go through two pinned chunks (made on the
 * first such copy): the DMA engine fills one while the host copies the
 * other out, instead of the driver's own staging of pageable memory. */
enum { CU_STAGE_CHUNK = 4 << 20, CU_STAGE_MIN = 1 << 20 };

typedef struct cu_staging {
  void* host[2];
  CUevent done[2];
  bool ready, unavailable;
} cu_staging_t;

typedef struct cu_device {
  cu_target_t* target;
  CUdevice device;
  CUcontext context;
  CUstream stream;
  cu_blaslt_device_t* blaslt; /* cuBLASLt handle and workspace, made on first use */
  CUmodule swiglu_module;     /* the vendor GEMMs' SwiGLU step, compiled on first use */
  CUfunction swiglu[3];       /* f32, f16, bf16 */
  cu_staging_t stage;
} cu_device_t;

typedef struct cu_buffer {
  CUdeviceptr ptr;
  size_t size;
  /* Pinned host memory mapped into the device (cu_buffer_alloc_mapped): ptr
   * is its device address; freed with cuMemFreeHost, copied with memcpy
   * after the stream is idle. NULL: device memory from cuMemAlloc. */
  void* host;
} cu_buffer_t;

typedef struct cu_kernel {
  CUfunction function;
  cu_blaslt_gemm_t* gemm;  /* a vendor GEMM (owned by its module) instead of a function */
  int max_threads;
  int num_params;  /* -1 when the driver cannot tell */
  unsigned dyn_smem; /* dynamic shared memory per launch (XC_CUDA_DSM_PREFIX) */
  /* the launch plan (XC_CUDA_LAUNCH_PREFIX): most blocks (0: the grid), tensor maps */
  long long max_blocks;
  int num_tmaps;
  long long tmaps[XC_CUDA_MAX_TMAPS][XC_TMAP_FIELDS];
  struct cu_kernel* next;
} cu_kernel_t;

typedef struct cu_module {
  CUmodule module;
  cu_blaslt_gemm_t* gemm;  /* XC_VENDOR_GEMM_FORMAT blobs: no CUmodule */
  cu_kernel_t* kernels;
  char* ptx; /* a copy of the module's PTX: kernel parameter counts */
} cu_module_t;

typedef struct cu_event {
  CUevent event;
} cu_event_t;

static atomic_int g_ptx_fallbacks;
int xc_cuda_ptx_fallback_count(void) { return atomic_load(&g_ptx_fallbacks); }

#define DRIVER_HINT "install the NVIDIA driver (libcuda.so.1) and run on a machine with an NVIDIA GPU"
#define NVRTC_HINT "install the CUDA toolkit's NVRTC (libnvrtc.so, e.g. /usr/local/cuda/lib64) or set XCOMP_NVRTC_LIBRARY"

/* ---- errors ---- */

static xc_status_t cu_fail(cu_target_t* t, CUresult e, const char* what) {
  const char* name = NULL, *text = NULL;
  if (t->api.cuGetErrorName) t->api.cuGetErrorName(e, &name);
  if (t->api.cuGetErrorString) t->api.cuGetErrorString(e, &text);
  xc_code_t code = e == CUDA_ERROR_OUT_OF_MEMORY ? XC_RESOURCE_EXHAUSTED
                   : (e == 1 || e == 400 || e == 701) ? XC_INVALID_ARGUMENT  /* invalid value/handle, launch resources */
                   : e == CUDA_ERROR_NOT_FOUND ? XC_NOT_FOUND
                                               : XC_INTERNAL;
  return xc_error(code, "cuda: %s failed: %s (%d)%s%s", what, name ? name : "CUDA error", (int)e, text ? ": " : "",
                  text ? text : "");
}

#define CU_CHECK(t, expr, what)                           \
  do {                                                    \
    CUresult cu_err_ = (expr);                            \
    if (cu_err_ != CUDA_SUCCESS) return cu_fail(t, cu_err_, what); \
  } while (0)

/* ---- architectures ---- */

/* Copies the architecture token ("sm_90", "sm_90a") found in s, if any. */
static bool find_arch_token(const char* s, char* out, size_t size) {
  for (const char* p = s ? strstr(s, "sm_") : NULL; p; p = strstr(p + 1, "sm_")) {
    size_t n = 3;
    while (isdigit((unsigned char)p[n])) n++;
    if (n < 5 || n > 6) continue;
    if (p[n] == 'a' || p[n] == 'f') n++;
    if (isalnum((unsigned char)p[n])) continue;
    if (n + 1 > size) return false;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
  }
  return false;
}

static bool caps_arch_token(const xc_device_caps_t* caps, char* out, size_t size) {
  return caps && (find_arch_token(caps->vendor, out, size) || find_arch_token(caps->version, out, size) ||
                  find_arch_token(caps->name, out, size));
}

int xc_cuda_caps_arch(const xc_device_caps_t* caps) {
  char tok[16];
  if (!caps_arch_token(caps, tok, sizeof tok)) return 0;
  return atoi(tok + 3);
}

/* Native matrix shapes by architecture (what mma.sync / wgmma offer). */
static void set_mma_shapes(xc_device_caps_t* caps, int arch) {
  caps->num_mma_shapes = 0;
#define MMA(M, N, K, IN, ACC)                                                     \
  if (caps->num_mma_shapes < XC_TARGET_MAX_MMA_SHAPES)                            \
    caps->mma_shapes[caps->num_mma_shapes++] = (xc_mma_shape_t){M, N, K, IN, ACC};
  if (arch >= 90 && arch < 100) {
    MMA(64, 256, 16, XC_F16, XC_F32);  /* wgmma (warpgroup) */
    MMA(64, 256, 16, XC_BF16, XC_F32);
  }
  if (arch >= 80) {
    MMA(16, 8, 16, XC_F16, XC_F32);
    MMA(16, 8, 16, XC_BF16, XC_F32);
    MMA(16, 8, 32, XC_I8, XC_I32);
    MMA(16, 8, 8, XC_F32, XC_F32);     /* tf32 inputs (f32 rounded), only with allow_tf32 */
  } else if (arch >= 75) {
    MMA(16, 8, 8, XC_F16, XC_F32);
    MMA(8, 8, 16, XC_I8, XC_I32);
  } else if (arch >= 70) {
    MMA(8, 8, 4, XC_F16, XC_F32);
  }
#undef MMA
}

static void set_common_caps(xc_device_caps_t* caps, int arch, const char* token) {
  snprintf(caps->vendor, sizeof caps->vendor, "NVIDIA %s", token);
  caps->kind = XC_DEVICE_GPU;
  caps->preferred_layout = XC_LAYOUT_NCHW;
  caps->dtypes = XC_DT(XC_F32) | XC_DT(XC_F64) | XC_DT(XC_F16) | XC_DT(XC_BF16) | XC_DT(XC_I8) | XC_DT(XC_I16) |
                 XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U8) | XC_DT(XC_U16) | XC_DT(XC_U32) | XC_DT(XC_U64) |
                 XC_DT(XC_BOOL);
  set_mma_shapes(caps, arch);
  caps->has_vendor_blas = xc_cublaslt_available(NULL, 0); /* vendor GEMM blobs run through cuBLASLt */
}

xc_status_t xc_cuda_arch_caps(const char* arch, xc_device_caps_t* caps) {
  if (!caps) return xc_error(XC_INVALID_ARGUMENT, "xc_cuda_arch_caps: NULL argument");
  memset(caps, 0, sizeof *caps);
  char tok[16], buf[24];
  if (arch && isdigit((unsigned char)arch[0])) {
    snprintf(buf, sizeof buf, "sm_%s", arch);
    arch = buf;
  }
  if (!arch || !find_arch_token(arch, tok, sizeof tok) || strcmp(tok, arch) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: '%s' is not a CUDA architecture (expected sm_XX, e.g. sm_90)",
                    arch ? arch : "(null)");
  int n = atoi(tok + 3);
  if (n < 50 || n > 199)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: unknown architecture %s", tok);
  snprintf(caps->name, sizeof caps->name, "CUDA %s (no device)", tok);
  set_common_caps(caps, n, tok);
  caps->compute_units = n >= 100 ? 148 : n >= 90 ? 132 : n == 80 ? 108 : 1;
  caps->simd_width = 32;
  caps->max_threads_per_group = 1024;
  caps->local_memory_bytes = 48 * 1024; /* static __shared__ limit of every architecture */
  /* the opt-in maximum of dynamic shared memory per block (CUDA C
   * Programming Guide, compute capabilities table) */
  caps->local_memory_optin_bytes = n >= 90 && n < 120 ? 227 * 1024
                                   : n == 80 || n == 87 ? 163 * 1024
                                   : n >= 86 ? 99 * 1024
                                   : n == 75 ? 64 * 1024
                                   : n >= 70 ? 96 * 1024 : 0;
  return NULL;
}

/* ---- loading the driver (once) ---- */

static xc_status_t cu_load_driver(cu_target_t* t) {
  const char* override = getenv("XCOMP_CUDA_LIBRARY");
  static const char* const paths[] = {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                      "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib64/libcuda.so.1",
                                      "/usr/lib/libcuda.so.1"};
  if (override && *override) t->library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; !t->library && !(override && *override) && i < sizeof paths / sizeof paths[0]; i++)
    t->library = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!t->library)
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: %s not found (no NVIDIA driver) — " DRIVER_HINT,
                    override && *override ? override : "libcuda.so.1");
#define XC_CUDA_RESOLVE(ret, name, sym, params)                                                     \
  *(void**)&t->api.name = dlsym(t->library, sym);                                                   \
  if (!t->api.name)                                                                                 \
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: libcuda.so.1 lacks " sym              \
                                    " (the driver is too old) — " DRIVER_HINT);
  XC_CUDA_FUNCTIONS(XC_CUDA_RESOLVE)
#undef XC_CUDA_RESOLVE
  *(void**)&t->api.cuEventElapsedTime = dlsym(t->library, "cuEventElapsedTime_v2");
  if (!t->api.cuEventElapsedTime) *(void**)&t->api.cuEventElapsedTime = dlsym(t->library, "cuEventElapsedTime");
  if (!t->api.cuEventElapsedTime)
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: libcuda.so.1 lacks cuEventElapsedTime");
  *(void**)&t->api.cuFuncGetParamInfo = dlsym(t->library, "cuFuncGetParamInfo");
  *(void**)&t->api.cuStreamBeginCapture = dlsym(t->library, "cuStreamBeginCapture_v2");
  *(void**)&t->api.cuStreamEndCapture = dlsym(t->library, "cuStreamEndCapture");
  *(void**)&t->api.cuGraphInstantiateWithFlags = dlsym(t->library, "cuGraphInstantiateWithFlags");
  *(void**)&t->api.cuGraphLaunch = dlsym(t->library, "cuGraphLaunch");
  *(void**)&t->api.cuGraphExecDestroy = dlsym(t->library, "cuGraphExecDestroy");
  *(void**)&t->api.cuGraphDestroy = dlsym(t->library, "cuGraphDestroy");
  *(void**)&t->api.cuMemHostAlloc = dlsym(t->library, "cuMemHostAlloc");
  *(void**)&t->api.cuMemHostGetDevicePointer = dlsym(t->library, "cuMemHostGetDevicePointer_v2");
  *(void**)&t->api.cuMemFreeHost = dlsym(t->library, "cuMemFreeHost");
  *(void**)&t->api.cuTensorMapEncodeTiled = dlsym(t->library, "cuTensorMapEncodeTiled");
  t->has_mapped = t->api.cuMemHostAlloc && t->api.cuMemHostGetDevicePointer && t->api.cuMemFreeHost;
  t->has_graphs = t->api.cuStreamBeginCapture && t->api.cuStreamEndCapture && t->api.cuGraphInstantiateWithFlags &&
                  t->api.cuGraphLaunch && t->api.cuGraphExecDestroy && t->api.cuGraphDestroy;
  CUresult e = t->api.cuInit(0);
  if (e != CUDA_SUCCESS) {
    xc_status_t st = cu_fail(t, e, "cuInit");
    xc_status_t un = xc_error(XC_UNAVAILABLE, "target cuda unavailable: %s%s", xc_status_message(st),
                              e == CUDA_ERROR_NO_DEVICE ? " (no NVIDIA GPU is visible)" : "");
    xc_status_free(st);
    return un;
  }
  t->api.cuDriverGetVersion(&t->driver_version);
  int count = 0;
  e = t->api.cuDeviceGetCount(&count);
  if (e != CUDA_SUCCESS || count <= 0)
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: the driver reports no CUDA device");
  t->num_devices = count;
  return NULL;
}

static xc_status_t cu_probe(void* target) {
  cu_target_t* t = target;
  pthread_mutex_lock(&t->lock);
  if (!t->loaded) {
    t->loaded = true;
    t->load_error = cu_load_driver(t);
  }
  xc_status_t st = t->load_error ? xc_error(xc_status_code(t->load_error), "%s", xc_status_message(t->load_error))
                                 : NULL;
  pthread_mutex_unlock(&t->lock);
  return st;
}

static xc_status_t cu_device_count(void* target, int* out_count) {
  cu_target_t* t = target;
  XC_RETURN_IF_ERROR(cu_probe(t));
  *out_count = t->num_devices;
  return NULL;
}

static int attr(cu_target_t* t, CUdevice d, int which) {
  int v = 0;
  if (t->api.cuDeviceGetAttribute(&v, which, d) != CUDA_SUCCESS) v = 0;
  return v;
}

static xc_status_t cu_device_caps(void* target, int index, xc_device_caps_t* caps) {
  cu_target_t* t = target;
  memset(caps, 0, sizeof *caps);
  CUdevice d;
  CU_CHECK(t, t->api.cuDeviceGet(&d, index), "cuDeviceGet");
  CU_CHECK(t, t->api.cuDeviceGetName(caps->name, (int)sizeof caps->name - 1, d), "cuDeviceGetName");
  int major = attr(t, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attr(t, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  int arch = major * 10 + minor;
  char tok[16];
  snprintf(tok, sizeof tok, "sm_%d", arch);
  set_common_caps(caps, arch, tok);
  snprintf(caps->version, sizeof caps->version, "CUDA driver %d.%d, %s", t->driver_version / 1000,
           (t->driver_version % 1000) / 10, tok);
  caps->compute_units = attr(t, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  caps->simd_width = attr(t, d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  caps->max_threads_per_group = attr(t, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  /* Static __shared__ arrays are limited to this (48 KiB); the opt-in
   * maximum is reached through dynamic shared memory (the staged GEMM
   * operands of deep pipelines, docs/targets/cuda.md). */
  caps->local_memory_bytes = attr(t, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  int optin = attr(t, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  caps->local_memory_optin_bytes = optin > caps->local_memory_bytes ? optin : 0;
  size_t total = 0;
  if (t->api.cuDeviceTotalMem(&total, d) == CUDA_SUCCESS) caps->global_memory_bytes = (int64_t)total;
  caps->max_buffer_bytes = 0;
  return NULL;
}

/* ---- NVRTC (loaded on the first compile) ---- */

static xc_status_t cu_load_nvrtc(cu_target_t* t) {
  const char* override = getenv("XCOMP_NVRTC_LIBRARY");
  static const char* const paths[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                      "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
                                      "/usr/local/cuda/lib64/libnvrtc.so"};
  if (override && *override) t->nvrtc_library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; !t->nvrtc_library && !(override && *override) && i < sizeof paths / sizeof paths[0]; i++)
    t->nvrtc_library = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!t->nvrtc_library)
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: %s not found, kernels cannot be compiled — " NVRTC_HINT,
                    override && *override ? override : "libnvrtc.so");
#define XC_NVRTC_RESOLVE(ret, name, sym, params)                                                    \
  *(void**)&t->nvrtc.name = dlsym(t->nvrtc_library, sym);                                           \
  if (!t->nvrtc.name)                                                                               \
    return xc_error(XC_UNAVAILABLE, "target cuda unavailable: libnvrtc lacks " sym                  \
                                    " (NVRTC 11.1 or newer is needed) — " NVRTC_HINT);
  XC_NVRTC_FUNCTIONS(XC_NVRTC_RESOLVE)
#undef XC_NVRTC_RESOLVE
  return NULL;
}

static xc_status_t cu_nvrtc(cu_target_t* t) {
  pthread_mutex_lock(&t->lock);
  if (!t->nvrtc_loaded) {
    t->nvrtc_loaded = true;
    t->nvrtc_error = cu_load_nvrtc(t);
  }
  xc_status_t st = t->nvrtc_error ? xc_error(xc_status_code(t->nvrtc_error), "%s", xc_status_message(t->nvrtc_error))
                                  : NULL;
  pthread_mutex_unlock(&t->lock);
  return st;
}

/* ---- compile: NVRTC -> cubin + PTX ---- */

/* Writes bytes to path + ext (--dump-kernels). */
static xc_status_t dump_file(const char* path, const char* ext, const void* bytes, size_t n) {
  char name[4200];
  snprintf(name, sizeof name, "%s%s", path, ext);
  FILE* f = fopen(name, "wb");
  if (!f) return xc_error(XC_IO, "cannot write %s", name);
  bool ok = fwrite(bytes, 1, n, f) == n;
  ok = fclose(f) == 0 && ok;
  return ok ? NULL : xc_error(XC_IO, "cannot write %s", name);
}

/* Blob layout (little-endian): "XCCUDA01", u32 arch, u32 0, u64 cubin size,
 * u64 ptx size (with its NUL), cubin bytes, PTX text. */
#define BLOB_MAGIC "XCCUDA01"
#define BLOB_HEADER 32

bool xc_cuda_blob_parts(const xc_blob_t* blob, int* out_arch, const uint8_t** out_cubin, size_t* out_cubin_size,
                        const char** out_ptx, size_t* out_ptx_size) {
  if (!blob || !blob->bytes || blob->size < BLOB_HEADER || memcmp(blob->bytes, BLOB_MAGIC, 8) != 0) return false;
  uint32_t arch;
  uint64_t nc, np;
  memcpy(&arch, blob->bytes + 8, 4);
  memcpy(&nc, blob->bytes + 16, 8);
  memcpy(&np, blob->bytes + 24, 8);
  if (nc > blob->size - BLOB_HEADER || np > blob->size - BLOB_HEADER - nc) return false;
  if (np == 0 || blob->bytes[BLOB_HEADER + nc + np - 1] != 0) return false;
  if (out_arch) *out_arch = (int)arch;
  if (out_cubin) *out_cubin = blob->bytes + BLOB_HEADER;
  if (out_cubin_size) *out_cubin_size = (size_t)nc;
  if (out_ptx) *out_ptx = (const char*)blob->bytes + BLOB_HEADER + nc;
  if (out_ptx_size) *out_ptx_size = (size_t)np;
  return true;
}

/* Splits flags on blanks into argv (pointers into the copy `buf`). */
static int split_flags(char* buf, const char** argv, int max) {
  int n = 0;
  for (char* p = buf; *p && n < max;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
    if (!*p) break;
    argv[n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
  }
  return n;
}

/* The compile log followed by the generated source lines it points at
 * ("<name>.cu(LINE): error: ..."). */
static char* log_with_source(const char* log, const char* program, const char* text) {
  size_t cap = strlen(log) + 4096, len = 0;
  char* out = malloc(cap);
  if (!out) return NULL;
  len += (size_t)snprintf(out, cap, "%s", log);
  size_t plen = strlen(program);
  int shown[8], nshown = 0;
  for (const char* p = strstr(log, program); p && nshown < 8; p = strstr(p + 1, program)) {
    if (p[plen] != '(') continue;
    int line = atoi(p + plen + 1);
    bool seen = false;
    for (int i = 0; i < nshown; i++) seen |= shown[i] == line;
    if (line <= 0 || seen) continue;
    shown[nshown++] = line;
    const char* s = text;
    for (int l = 1; l < line && s; l++) {
      s = strchr(s, '\n');
      if (s) s++;
    }
    if (!s) continue;
    const char* e = strchr(s, '\n');
    int n = e ? (int)(e - s) : (int)strlen(s);
    if (n > 300) n = 300;
    if (len + 400 < cap)
      len += (size_t)snprintf(out + len, cap - len, "\ngenerated source line %d: %.*s", line, n, s);
  }
  return out;
}

static xc_status_t nvrtc_fail(cu_target_t* t, nvrtcResult r, const char* what) {
  return xc_error(XC_INTERNAL, "cuda: %s failed: %s (%d)", what, t->nvrtc.nvrtcGetErrorString(r), (int)r);
}

xc_status_t xc_cuda_compile_nvrtc(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                                  const xc_compile_options_t* options, const char* const* pre_options,
                                  int num_pre_options, xc_blob_t* out_blob) {
  cu_target_t* t = target;
  char tok[16];
  if (!caps_arch_token(caps, tok, sizeof tok))
    return xc_error(XC_INVALID_ARGUMENT,
                    "cuda: cannot tell the architecture to compile for from device '%s' (select cuda:sm_XX)",
                    caps->name);
  XC_RETURN_IF_ERROR(cu_nvrtc(t));
  char arch_flag[48];
  /* sm_90's own instructions (wgmma: the GEMM program, cuda_gemm.c) need
   * the architecture-specific target sm_90a */
  bool arch_specific = !strcmp(tok, "sm_90") && source->text && strstr(source->text, "wgmma.");
  snprintf(arch_flag, sizeof arch_flag, "--gpu-architecture=%s%s", tok, arch_specific ? "a" : "");
  /* $XCOMP_CUDA_FLAGS replaces the default as options->flags does, e.g.
   * "--Ofast-compile=max" for compile-only checks (CI's model compiles). */
  const char* flags = options->flags ? options->flags : getenv("XCOMP_CUDA_FLAGS");
  if (!flags) flags = "-lineinfo";
  const char* extra = options->extra_flags ? options->extra_flags : "";
  size_t flen = strlen(flags) + strlen(extra) + 2;
  char* fbuf = malloc(flen);
  if (!fbuf) return xc_error_oom();
  snprintf(fbuf, flen, "%s %s", flags, extra);
  const char* argv[72];
  argv[0] = arch_flag;
  argv[1] = "-default-device";
  int argc = 2;
  for (int i = 0; i < num_pre_options && argc < 34; i++) argv[argc++] = pre_options[i];
  argc += split_flags(fbuf, argv + argc, 72 - argc);
  char program_name[160];
  snprintf(program_name, sizeof program_name, "%s.%s", source->entry[0] ? source->entry : "kernel",
           source->language && strcmp(source->language, "cuda") != 0 ? source->language : "cu");

  nvrtcProgram prog = NULL;
  nvrtcResult r = t->nvrtc.nvrtcCreateProgram(&prog, source->text, program_name, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    free(fbuf);
    return nvrtc_fail(t, r, "nvrtcCreateProgram");
  }
  xc_status_t st = NULL;
  r = t->nvrtc.nvrtcCompileProgram(prog, argc, argv);
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    t->nvrtc.nvrtcGetProgramLogSize(prog, &log_size);
    char* log = calloc(1, log_size + 1);
    if (log && log_size) t->nvrtc.nvrtcGetProgramLog(prog, log);
    char* shown = log_with_source(log ? log : "", program_name, source->text);
    char opts[512] = "";
    for (int i = 0, k = 0; i < argc && k < (int)sizeof opts; i++)
      k += snprintf(opts + k, sizeof opts - (size_t)k, "%s%s", i ? " " : "", argv[i]);
    st = xc_error(r == NVRTC_ERROR_COMPILATION ? XC_INVALID_ARGUMENT : XC_INTERNAL,
                  "cuda: NVRTC could not compile %s for %s: %s (%d); options \"%s\"; log:\n%s", program_name, tok,
                  t->nvrtc.nvrtcGetErrorString(r), (int)r, opts, shown ? shown : (log ? log : ""));
    free(shown);
    free(log);
  }
  size_t ncubin = 0, nptx = 0;
  if (!st && (r = t->nvrtc.nvrtcGetCUBINSize(prog, &ncubin)) != NVRTC_SUCCESS)
    st = nvrtc_fail(t, r, "nvrtcGetCUBINSize");
  if (!st && (r = t->nvrtc.nvrtcGetPTXSize(prog, &nptx)) != NVRTC_SUCCESS) st = nvrtc_fail(t, r, "nvrtcGetPTXSize");
  if (!st && (ncubin == 0 || nptx == 0))
    st = xc_error(XC_INTERNAL, "cuda: NVRTC produced no %s for %s", ncubin == 0 ? "cubin" : "PTX", tok);
  if (!st) {
    out_blob->size = BLOB_HEADER + ncubin + nptx + 1;
    out_blob->bytes = calloc(1, out_blob->size);
    if (!out_blob->bytes) st = xc_error_oom();
  }
  if (!st && (r = t->nvrtc.nvrtcGetCUBIN(prog, (char*)out_blob->bytes + BLOB_HEADER)) != NVRTC_SUCCESS)
    st = nvrtc_fail(t, r, "nvrtcGetCUBIN");
  if (!st && (r = t->nvrtc.nvrtcGetPTX(prog, (char*)out_blob->bytes + BLOB_HEADER + ncubin)) != NVRTC_SUCCESS)
    st = nvrtc_fail(t, r, "nvrtcGetPTX");
  t->nvrtc.nvrtcDestroyProgram(&prog);
  if (!st) {
    uint8_t* b = out_blob->bytes;
    memcpy(b, BLOB_MAGIC, 8);
    uint32_t arch = (uint32_t)atoi(tok + 3), zero = 0;
    uint64_t nc = ncubin, np = nptx + 1; /* the extra NUL terminates the PTX whatever NVRTC counted */
    memcpy(b + 8, &arch, 4);
    memcpy(b + 12, &zero, 4);
    memcpy(b + 16, &nc, 8);
    memcpy(b + 24, &np, 8);
    snprintf(out_blob->format, sizeof out_blob->format, "%s", XC_CUDA_BLOB_FORMAT);
    if (options->dump_path) {
      st = dump_file(options->dump_path, ".cubin", b + BLOB_HEADER, ncubin);
      if (!st) st = dump_file(options->dump_path, ".ptx", b + BLOB_HEADER + ncubin, strlen((char*)b + BLOB_HEADER + ncubin));
    }
    size_t olen = 0;
    for (int i = 0; i < argc; i++) olen += strlen(argv[i]) + 1;
    out_blob->options = malloc(olen + 1);
    if (!out_blob->options) st = xc_error_oom();
    else {
      out_blob->options[0] = 0;
      for (int i = 0; i < argc; i++) {
        if (i) strcat(out_blob->options, " ");
        strcat(out_blob->options, argv[i]);
      }
    }
  }
  free(fbuf);
  return st; /* on failure the caller releases the blob */
}

static xc_status_t cu_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                              const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (source->language && strcmp(source->language, "cuda") != 0)
    return xc_error(XC_UNSUPPORTED, "cuda target builds CUDA C++ (cuda), not %s", source->language);
  return xc_cuda_compile_nvrtc(target, caps, source, options, NULL, 0, out_blob);
}

/* ---- selection for compilation ---- */

/* resolve_arch: "sm_90" (what nvcc's -arch takes) -> that architecture's
 * nominal capabilities; anything not written sm_XX is a device selector. */
static xc_status_t cu_resolve_arch(void* target, const char* spec, xc_device_caps_t* caps) {
  (void)target;
  char tok[16];
  if (!find_arch_token(spec, tok, sizeof tok) || strcmp(tok, spec) != 0)
    return xc_error(XC_NOT_FOUND, "cuda: '%s' is not a CUDA architecture (expected sm_XX, e.g. sm_90)", spec);
  return xc_cuda_arch_caps(tok, caps);
}

xc_status_t xc_cuda_select(const char* selector, xc_target_t** out_target, xc_device_caps_t* caps,
                           int* out_device_index) {
  if (out_target) *out_target = NULL;
  if (out_device_index) *out_device_index = -1;
  if (!selector || !out_target || !caps) return xc_error(XC_INVALID_ARGUMENT, "xc_cuda_select: NULL argument");
  memset(caps, 0, sizeof *caps);
  if (strncmp(selector, "cuda", 4) != 0 || (selector[4] != 0 && selector[4] != ':'))
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is not a cuda selector", selector);
  xc_target_resolution_t r;
  XC_RETURN_IF_ERROR(xc_target_resolve(selector, &r));
  *out_target = r.target;
  *caps = r.caps;
  if (out_device_index) *out_device_index = r.device_index;
  return NULL;
}

/* ---- devices ---- */

static xc_status_t use(cu_device_t* dev) {
  CU_CHECK(dev->target, dev->target->api.cuCtxSetCurrent(dev->context), "cuCtxSetCurrent");
  return NULL;
}

static xc_status_t cu_device_open(void* target, int index, void** out_device) {
  cu_target_t* t = target;
  cu_device_t* dev = calloc(1, sizeof *dev);
  if (!dev) return xc_error_oom();
  dev->target = t;
  xc_status_t st = NULL;
  CUresult e = t->api.cuDeviceGet(&dev->device, index);
  if (e != CUDA_SUCCESS) st = cu_fail(t, e, "cuDeviceGet");
  if (!st && (e = t->api.cuDevicePrimaryCtxRetain(&dev->context, dev->device)) != CUDA_SUCCESS)
    st = cu_fail(t, e, "cuDevicePrimaryCtxRetain");
  if (!st && (e = t->api.cuCtxSetCurrent(dev->context)) != CUDA_SUCCESS) {
    st = cu_fail(t, e, "cuCtxSetCurrent");
    t->api.cuDevicePrimaryCtxRelease(dev->device);
  }
  if (!st && (e = t->api.cuStreamCreate(&dev->stream, 0)) != CUDA_SUCCESS) {
    st = cu_fail(t, e, "cuStreamCreate");
    t->api.cuDevicePrimaryCtxRelease(dev->device);
  }
  if (st) {
    free(dev);
    return st;
  }
  *out_device = dev;
  return NULL;
}

static void staging_free(cu_device_t* dev) {
  xc_cuda_api_t* api = &dev->target->api;
  for (int i = 0; i < 2; i++) {
    if (dev->stage.host[i]) api->cuMemFreeHost(dev->stage.host[i]);
    if (dev->stage.done[i]) api->cuEventDestroy(dev->stage.done[i]);
    dev->stage.host[i] = NULL;
    dev->stage.done[i] = NULL;
  }
  dev->stage.ready = false;
}

/* The staging chunks, or false when pinned memory is not to be had (the
 * copies then go straight from and to pageable memory). */
static bool staging_ready(cu_device_t* dev) {
  cu_staging_t* st = &dev->stage;
  if (st->ready || st->unavailable) return st->ready;
  xc_cuda_api_t* api = &dev->target->api;
  bool ok = dev->target->has_mapped;
  for (int i = 0; ok && i < 2; i++)
    ok = api->cuMemHostAlloc(&st->host[i], CU_STAGE_CHUNK, 0) == CUDA_SUCCESS &&
         api->cuEventCreate(&st->done[i], 0x2 /* CU_EVENT_DISABLE_TIMING */) == CUDA_SUCCESS;
  if (!ok) {
    staging_free(dev);
    st->unavailable = true;
    return false;
  }
  st->ready = true;
  return true;
}

static void cu_device_close(void* device) {
  cu_device_t* dev = device;
  xc_cuda_api_t* api = &dev->target->api;
  if (api->cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) {
    api->cuStreamSynchronize(dev->stream);
    staging_free(dev);
    cu_blaslt_device_free(dev->blaslt, api);
    if (dev->swiglu_module) api->cuModuleUnload(dev->swiglu_module);
    api->cuStreamDestroy(dev->stream);
  }
  api->cuDevicePrimaryCtxRelease(dev->device);
  free(dev);
}

static xc_status_t cu_synchronize(void* device) {
  cu_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(dev->target, dev->target->api.cuStreamSynchronize(dev->stream), "cuStreamSynchronize");
  return NULL;
}

/* ---- buffers ---- */

static xc_status_t cu_buffer_alloc(void* device, size_t size, void** out_buffer) {
  cu_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  cu_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  /* cuMemAlloc refuses 0 bytes; an empty tensor still gets an address. */
  CUresult e = dev->target->api.cuMemAlloc(&b->ptr, size ? size : 1);
  if (e != CUDA_SUCCESS) {
    free(b);
    return xc_status_annotate(cu_fail(dev->target, e, "cuMemAlloc"), "allocating %zu bytes", size);
  }
  b->size = size;
  *out_buffer = b;
  return NULL;
}

/* Pinned host memory the device reads and writes through the bus: no copy
 * to see what a kernel wrote once the stream is synchronized. */
static xc_status_t cu_buffer_alloc_mapped(void* device, size_t size, void** out_buffer, void** out_host) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  if (!t->has_mapped)
    return xc_error(XC_UNSUPPORTED, "cuda: the driver lacks cuMemHostAlloc/cuMemHostGetDevicePointer/cuMemFreeHost");
  if (attr(t, dev->device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 1)
    return xc_error(XC_UNSUPPORTED, "cuda: the device cannot map host memory");
  XC_RETURN_IF_ERROR(use(dev));
  cu_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  CUresult e = t->api.cuMemHostAlloc(&b->host, size ? size : 1, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
  if (e != CUDA_SUCCESS) {
    free(b);
    return xc_status_annotate(cu_fail(t, e, "cuMemHostAlloc"), "allocating %zu bytes of mapped host memory", size);
  }
  e = t->api.cuMemHostGetDevicePointer(&b->ptr, b->host, 0);
  if (e != CUDA_SUCCESS) {
    t->api.cuMemFreeHost(b->host);
    free(b);
    return cu_fail(t, e, "cuMemHostGetDevicePointer");
  }
  b->size = size;
  *out_buffer = b;
  *out_host = b->host;
  return NULL;
}

static void cu_buffer_free(void* device, void* buffer) {
  cu_device_t* dev = device;
  cu_buffer_t* b = buffer;
  if (dev->target->api.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) {
    if (b->host) dev->target->api.cuMemFreeHost(b->host);
    else dev->target->api.cuMemFree(b->ptr);
  }
  free(b);
}

static void* cu_buffer_host_pointer(void* device, void* buffer) {
  (void)device;
  return ((cu_buffer_t*)buffer)->host;
}

static xc_status_t cu_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  cu_device_t* dev = device;
  if (size == 0) return NULL;
  XC_RETURN_IF_ERROR(use(dev));
  cu_buffer_t* b = buffer;
  if (b->host) { /* mapped: once queued kernels are done, the host writes it */
    CU_CHECK(dev->target, dev->target->api.cuStreamSynchronize(dev->stream), "cuStreamSynchronize before a copy");
    memcpy((char*)b->host + offset, src, size);
    return NULL;
  }
  xc_cuda_api_t* api = &dev->target->api;
  if (size >= CU_STAGE_MIN && staging_ready(dev)) {
    /* chunk i: wait for the copy out of its staging half two chunks ago,
     * fill it, queue its copy */
    for (size_t off = 0, i = 0; off < size; off += CU_STAGE_CHUNK, i++) {
      size_t len = size - off < CU_STAGE_CHUNK ? size - off : CU_STAGE_CHUNK;
      int k = (int)(i & 1);
      if (i >= 2) CU_CHECK(dev->target, api->cuEventSynchronize(dev->stage.done[k]), "cuEventSynchronize");
      memcpy(dev->stage.host[k], (const char*)src + off, len);
      CU_CHECK(dev->target, api->cuMemcpyHtoDAsync(b->ptr + offset + off, dev->stage.host[k], len, dev->stream),
               "cuMemcpyHtoDAsync");
      CU_CHECK(dev->target, api->cuEventRecord(dev->stage.done[k], dev->stream), "cuEventRecord");
    }
  } else {
    CU_CHECK(dev->target, api->cuMemcpyHtoDAsync(b->ptr + offset, src, size, dev->stream), "cuMemcpyHtoDAsync");
  }
  CU_CHECK(dev->target, api->cuStreamSynchronize(dev->stream), "cuStreamSynchronize after a copy");
  return NULL;
}

/* Device addresses: a buffer's CUdeviceptr (the device address of mapped
 * host memory for mapped buffers); copies are queued on the device's stream,
 * so they follow the launches queued before them. */
static uint64_t cu_buffer_device_address(void* device, void* buffer) {
  (void)device;
  return (uint64_t)((cu_buffer_t*)buffer)->ptr;
}

static xc_status_t cu_copy_device(void* device, uint64_t dst, uint64_t src, size_t size) {
  cu_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(dev->target, dev->target->api.cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, size, dev->stream),
           "cuMemcpyDtoDAsync");
  return NULL;
}

static xc_status_t cu_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  cu_device_t* dev = device;
  if (size == 0) return NULL;
  XC_RETURN_IF_ERROR(use(dev));
  cu_buffer_t* b = buffer;
  if (b->host) {
    CU_CHECK(dev->target, dev->target->api.cuStreamSynchronize(dev->stream), "cuStreamSynchronize before a copy");
    memcpy(dst, (const char*)b->host + offset, size);
    return NULL;
  }
  xc_cuda_api_t* api = &dev->target->api;
  if (size >= CU_STAGE_MIN && staging_ready(dev)) {
    /* chunk i+1 is copied into one staging half while the host copies
     * chunk i out of the other */
    size_t n = (size + CU_STAGE_CHUNK - 1) / CU_STAGE_CHUNK;
    for (size_t i = 0; i <= n; i++) {
      if (i < n) {
        size_t off = i * CU_STAGE_CHUNK, len = size - off < CU_STAGE_CHUNK ? size - off : CU_STAGE_CHUNK;
        int k = (int)(i & 1);
        CU_CHECK(dev->target, api->cuMemcpyDtoHAsync(dev->stage.host[k], b->ptr + offset + off, len, dev->stream),
                 "cuMemcpyDtoHAsync");
        CU_CHECK(dev->target, api->cuEventRecord(dev->stage.done[k], dev->stream), "cuEventRecord");
      }
      if (i > 0) {
        size_t j = i - 1, off = j * CU_STAGE_CHUNK, len = size - off < CU_STAGE_CHUNK ? size - off : CU_STAGE_CHUNK;
        int k = (int)(j & 1);
        CU_CHECK(dev->target, api->cuEventSynchronize(dev->stage.done[k]), "cuEventSynchronize");
        memcpy((char*)dst + off, dev->stage.host[k], len);
      }
    }
    return NULL;
  }
  CU_CHECK(dev->target, api->cuMemcpyDtoHAsync(dst, b->ptr + offset, size, dev->stream), "cuMemcpyDtoHAsync");
  CU_CHECK(dev->target, api->cuStreamSynchronize(dev->stream), "cuStreamSynchronize after a copy");
  return NULL;
}

/* ---- the vendor GEMMs' SwiGLU step ---- */

/* A vendor GEMM with a SwiGLU epilogue (XC_VENDOR_EPILOGUE_SWIGLU_A / _B):
 * cuBLASLt writes the product to Y, then this kernel makes Y = silu(Y) U
 * (gate_y) or Y silu(U) in place: f32 arithmetic (silu(g) = g / (1 +
 * 2^(-g log2 e))), one rounding to the dtype (nearest even; a NaN stays a
 * NaN). Four elements a thread, by one vector access of Y and one of U
 * (16 bytes of f32, 8 of f16/bf16) where both pointers are 16-byte aligned
 * and all four are in range, else one by one. Written in PTX, which the
 * driver compiles for the device when the first such GEMM loads: running
 * a module needs no NVRTC, as for every other kernel of a compiled module. */

/* Element OUT = silu(gate) * other of A (from Y) and B (from U) (%p2: Y is
 * the gate). */
#define SW_MUL(A, B, OUT)              \
  "  selp.f32 %fg, " A ", " B ", %p2;\n" \
  "  selp.f32 %fo, " B ", " A ", %p2;\n" \
  "  mul.f32 %ft, %fg, 0fBFB8AA3B;\n"    \
  "  ex2.approx.ftz.f32 %ft, %ft;\n"     \
  "  add.f32 %ft, %ft, 0f3F800000;\n"    \
  "  div.rn.f32 %ft, %fg, %ft;\n"        \
  "  mul.f32 " OUT ", %ft, %fo;\n"
/* f32 F to bf16 bits in the low half of Q (through %r7..%r11) */
#define SW_BF16(F, Q)                      \
  "  mov.b32 %r7, " F ";\n"                \
  "  and.b32 %r8, %r7, 2147483647;\n"      \
  "  setp.gt.u32 %p3, %r8, 2139095040;\n"  \
  "  shr.u32 %r9, %r7, 16;\n"              \
  "  and.b32 %r10, %r9, 1;\n"              \
  "  add.s32 %r11, %r7, 32767;\n"          \
  "  add.s32 %r11, %r11, %r10;\n"          \
  "  shr.u32 %r11, %r11, 16;\n"            \
  "  or.b32 %r9, %r9, 64;\n"               \
  "  selp.b32 " Q ", %r9, %r11, %p3;\n"
/* The kernel NAME: SHIFT = log2 of the element size; LOAD1 / STORE1 move
 * one element at %rd6 (Y) / %rd7 (U) through %f1, %f2 / %f9; VEC the four
 * elements' path at the same addresses. */
#define SW_ENTRY(NAME, SHIFT, LOAD1, STORE1, VEC)                                                         \
  ".visible .entry " NAME "(.param .u64 py, .param .u64 pu, .param .u64 pn, .param .u32 pg, .param .u32 pv)\n" \
  "{\n"                                                                                                   \
  "  .reg .pred %p<5>;\n"                                                                                 \
  "  .reg .b32 %r<16>;\n"                                                                                 \
  "  .reg .b32 %w<2>;\n"                                                                                  \
  "  .reg .b32 %x<2>;\n"                                                                                  \
  "  .reg .b32 %q<4>;\n"                                                                                  \
  "  .reg .b64 %rd<12>;\n"                                                                                \
  "  .reg .f32 %f<12>;\n"                                                                                 \
  "  .reg .f32 %a<4>;\n"                                                                                  \
  "  .reg .f32 %b<4>;\n"                                                                                  \
  "  .reg .f32 %c<4>;\n"                                                                                  \
  "  .reg .f32 %fg, %fo, %ft;\n"                                                                          \
  "  .reg .b16 %h<8>;\n"                                                                                  \
  "  ld.param.u64 %rd1, [py];\n"                                                                          \
  "  ld.param.u64 %rd2, [pu];\n"                                                                          \
  "  ld.param.u64 %rd3, [pn];\n"                                                                          \
  "  ld.param.u32 %r1, [pg];\n"                                                                           \
  "  ld.param.u32 %r12, [pv];\n"                                                                          \
  "  setp.ne.u32 %p2, %r1, 0;\n"                                                                          \
  "  mov.u32 %r2, %ctaid.x;\n"                                                                            \
  "  mov.u32 %r3, %ntid.x;\n"                                                                             \
  "  mov.u32 %r4, %tid.x;\n"                                                                              \
  "  mul.wide.u32 %rd4, %r2, %r3;\n"                                                                      \
  "  cvt.u64.u32 %rd5, %r4;\n"                                                                            \
  "  add.s64 %rd4, %rd4, %rd5;\n"                                                                         \
  "  shl.b64 %rd4, %rd4, 2;\n" /* the first of this thread's four elements */                            \
  "  setp.ge.u64 %p1, %rd4, %rd3;\n"                                                                      \
  "  @%p1 bra " NAME "_done;\n"                                                                           \
  "  add.s64 %rd8, %rd4, 4;\n"                                                                            \
  "  min.u64 %rd9, %rd8, %rd3;\n" /* the end of them */                                                   \
  "  setp.ne.u32 %p4, %r12, 0;\n"                                                                         \
  "  setp.eq.and.u64 %p4, %rd9, %rd8, %p4;\n"                                                             \
  "  @!%p4 bra " NAME "_loop;\n"                                                                          \
  "  shl.b64 %rd5, %rd4, " SHIFT ";\n"                                                                    \
  "  add.s64 %rd6, %rd1, %rd5;\n"                                                                         \
  "  add.s64 %rd7, %rd2, %rd5;\n" VEC "  bra " NAME "_done;\n" NAME "_loop:\n"                              \
  "  setp.ge.u64 %p1, %rd4, %rd9;\n"                                                                      \
  "  @%p1 bra " NAME "_done;\n"                                                                           \
  "  shl.b64 %rd5, %rd4, " SHIFT ";\n"                                                                    \
  "  add.s64 %rd6, %rd1, %rd5;\n"                                                                         \
  "  add.s64 %rd7, %rd2, %rd5;\n" LOAD1 SW_MUL("%f1", "%f2", "%f9") STORE1                              \
  "  add.s64 %rd4, %rd4, 1;\n"                                                                            \
  "  bra " NAME "_loop;\n" NAME "_done:\n"                                                                \
  "  ret;\n"                                                                                              \
  "}\n"

#define SW_MUL4 SW_MUL("%a0", "%b0", "%c0") SW_MUL("%a1", "%b1", "%c1") SW_MUL("%a2", "%b2", "%c2") SW_MUL("%a3", "%b3", "%c3")

static const char k_swiglu_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    SW_ENTRY("xc_swiglu_f32", "2",
             "  ld.global.f32 %f1, [%rd6];\n"
             "  ld.global.f32 %f2, [%rd7];\n",
             "  st.global.f32 [%rd6], %f9;\n",
             "  ld.global.v4.f32 {%a0, %a1, %a2, %a3}, [%rd6];\n"
             "  ld.global.v4.f32 {%b0, %b1, %b2, %b3}, [%rd7];\n" SW_MUL4
             "  st.global.v4.f32 [%rd6], {%c0, %c1, %c2, %c3};\n")
    SW_ENTRY("xc_swiglu_f16", "1",
             "  ld.global.u16 %h1, [%rd6];\n"
             "  ld.global.u16 %h2, [%rd7];\n"
             "  cvt.f32.f16 %f1, %h1;\n"
             "  cvt.f32.f16 %f2, %h2;\n",
             "  cvt.rn.f16.f32 %h3, %f9;\n"
             "  st.global.u16 [%rd6], %h3;\n",
             "  ld.global.v2.b32 {%w0, %w1}, [%rd6];\n"
             "  ld.global.v2.b32 {%x0, %x1}, [%rd7];\n"
             "  mov.b32 {%h0, %h1}, %w0;\n"
             "  mov.b32 {%h2, %h3}, %w1;\n"
             "  cvt.f32.f16 %a0, %h0;\n"
             "  cvt.f32.f16 %a1, %h1;\n"
             "  cvt.f32.f16 %a2, %h2;\n"
             "  cvt.f32.f16 %a3, %h3;\n"
             "  mov.b32 {%h4, %h5}, %x0;\n"
             "  mov.b32 {%h6, %h7}, %x1;\n"
             "  cvt.f32.f16 %b0, %h4;\n"
             "  cvt.f32.f16 %b1, %h5;\n"
             "  cvt.f32.f16 %b2, %h6;\n"
             "  cvt.f32.f16 %b3, %h7;\n" SW_MUL4
             "  cvt.rn.f16.f32 %h0, %c0;\n"
             "  cvt.rn.f16.f32 %h1, %c1;\n"
             "  cvt.rn.f16.f32 %h2, %c2;\n"
             "  cvt.rn.f16.f32 %h3, %c3;\n"
             "  mov.b32 %w0, {%h0, %h1};\n"
             "  mov.b32 %w1, {%h2, %h3};\n"
             "  st.global.v2.b32 [%rd6], {%w0, %w1};\n")
    /* bf16: the upper half of an f32; rounding by adding 0x7fff and the
     * kept lowest bit, a NaN made quiet instead */
    SW_ENTRY("xc_swiglu_bf16", "1",
             "  ld.global.u16 %h1, [%rd6];\n"
             "  ld.global.u16 %h2, [%rd7];\n"
             "  cvt.u32.u16 %r5, %h1;\n"
             "  shl.b32 %r5, %r5, 16;\n"
             "  mov.b32 %f1, %r5;\n"
             "  cvt.u32.u16 %r6, %h2;\n"
             "  shl.b32 %r6, %r6, 16;\n"
             "  mov.b32 %f2, %r6;\n",
             SW_BF16("%f9", "%r13")
             "  cvt.u16.u32 %h3, %r13;\n"
             "  st.global.u16 [%rd6], %h3;\n",
             "  ld.global.v2.b32 {%w0, %w1}, [%rd6];\n"
             "  ld.global.v2.b32 {%x0, %x1}, [%rd7];\n"
             "  shl.b32 %r5, %w0, 16;\n"
             "  mov.b32 %a0, %r5;\n"
             "  and.b32 %r5, %w0, -65536;\n"
             "  mov.b32 %a1, %r5;\n"
             "  shl.b32 %r5, %w1, 16;\n"
             "  mov.b32 %a2, %r5;\n"
             "  and.b32 %r5, %w1, -65536;\n"
             "  mov.b32 %a3, %r5;\n"
             "  shl.b32 %r5, %x0, 16;\n"
             "  mov.b32 %b0, %r5;\n"
             "  and.b32 %r5, %x0, -65536;\n"
             "  mov.b32 %b1, %r5;\n"
             "  shl.b32 %r5, %x1, 16;\n"
             "  mov.b32 %b2, %r5;\n"
             "  and.b32 %r5, %x1, -65536;\n"
             "  mov.b32 %b3, %r5;\n" SW_MUL4
             SW_BF16("%c0", "%q0") SW_BF16("%c1", "%q1") SW_BF16("%c2", "%q2") SW_BF16("%c3", "%q3")
             "  shl.b32 %q1, %q1, 16;\n"
             "  or.b32 %w0, %q0, %q1;\n"
             "  shl.b32 %q3, %q3, 16;\n"
             "  or.b32 %w1, %q2, %q3;\n"
             "  st.global.v2.b32 [%rd6], {%w0, %w1};\n");
#undef SW_MUL4
#undef SW_ENTRY
#undef SW_BF16
#undef SW_MUL

static xc_status_t swiglu_ready(cu_device_t* dev) {
  if (dev->swiglu_module) return NULL;
  cu_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  CUmodule mod = NULL;
  CUresult e = t->api.cuModuleLoadData(&mod, k_swiglu_ptx);
  xc_status_t st = e != CUDA_SUCCESS ? cu_fail(t, e, "cuModuleLoadData (the SwiGLU step's PTX)") : NULL;
  static const char* const names[3] = {"xc_swiglu_f32", "xc_swiglu_f16", "xc_swiglu_bf16"};
  for (int i = 0; !st && i < 3; i++) {
    e = t->api.cuModuleGetFunction(&dev->swiglu[i], mod, names[i]);
    if (e != CUDA_SUCCESS) st = cu_fail(t, e, "cuModuleGetFunction (the SwiGLU step)");
  }
  if (st) {
    if (mod) t->api.cuModuleUnload(mod);
    return xc_status_annotate(st, "cuda: setting up the vendor GEMM's SwiGLU step");
  }
  dev->swiglu_module = mod;
  return NULL;
}

/* Queues the SwiGLU step of vendor GEMM g on Y (in place) and U. */
static xc_status_t swiglu_launch(cu_device_t* dev, const xc_vendor_gemm_t* g, CUdeviceptr y, CUdeviceptr u) {
  cu_target_t* t = dev->target;
  int which = g->dtype == XC_F32 ? 0 : g->dtype == XC_F16 ? 1 : 2;
  unsigned long long n = (unsigned long long)g->m * (unsigned long long)g->n; /* unpack bounds m, n below 2^31 */
  int gate_y = g->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A;
  int vec = ((y | u) & 15) == 0; /* four elements by one access of each */
  unsigned long long threads = 256, per = 4 * threads, blocks = (n + per - 1) / per;
  if (blocks > 0x7fffffffULL) return xc_error(XC_OUT_OF_RANGE, "cuda: SwiGLU step of %llu elements", n);
  void* params[5] = {&y, &u, &n, &gate_y, &vec};
  CU_CHECK(t,
           t->api.cuLaunchKernel(dev->swiglu[which], (unsigned)blocks, 1, 1, (unsigned)threads, 1, 1, 0, dev->stream,
                                 params, NULL),
           "cuLaunchKernel (the SwiGLU step)");
  return NULL;
}

/* ---- modules and kernels ---- */

static xc_status_t cu_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  if (strcmp(blob->format, XC_VENDOR_GEMM_FORMAT) == 0) {
    xc_vendor_gemm_t g;
    XC_RETURN_IF_ERROR(xc_vendor_gemm_unpack(blob->bytes, blob->size, &g));
    XC_RETURN_IF_ERROR(use(dev));
    XC_RETURN_IF_ERROR(cu_blaslt_device_get(&dev->blaslt, &t->api));
    if (g.epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A || g.epilogue == XC_VENDOR_EPILOGUE_SWIGLU_B)
      XC_RETURN_IF_ERROR(swiglu_ready(dev));
    cu_module_t* m = calloc(1, sizeof *m);
    if (!m) return xc_error_oom();
    xc_status_t st = cu_blaslt_gemm_create(dev->blaslt, &g, &m->gemm);
    if (st) {
      free(m);
      return st;
    }
    *out_module = m;
    return NULL;
  }
  if (strcmp(blob->format, XC_CUDA_BLOB_FORMAT) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: a module must be a %s blob, not '%s'", XC_CUDA_BLOB_FORMAT,
                    blob->format);
  int arch = 0;
  const uint8_t* cubin = NULL;
  const char* ptx = NULL;
  size_t ncubin = 0, nptx = 0;
  if (!xc_cuda_blob_parts(blob, &arch, &cubin, &ncubin, &ptx, &nptx))
    return xc_error(XC_INVALID_ARGUMENT, "cuda: malformed %s blob (%zu bytes)", XC_CUDA_BLOB_FORMAT, blob->size);
  XC_RETURN_IF_ERROR(use(dev));
  CUmodule mod = NULL;
  /* cuModuleLoadData reads an ELF image whose size it finds in its header:
   * copy it to aligned memory first (the blob's bytes may sit anywhere). */
  void* image = malloc(ncubin ? ncubin : 1);
  if (!image) return xc_error_oom();
  memcpy(image, cubin, ncubin);
  CUresult e = ncubin ? t->api.cuModuleLoadData(&mod, image) : CUDA_ERROR_INVALID_IMAGE;
  free(image);
  if (e != CUDA_SUCCESS) {
    /* Not this architecture (or an image the driver cannot read): let the
     * driver compile the PTX for the device. */
    CUresult e2 = t->api.cuModuleLoadData(&mod, ptx);
    if (e2 != CUDA_SUCCESS) {
      xc_status_t a = cu_fail(t, e, "cuModuleLoadData (cubin)");
      xc_status_t b = cu_fail(t, e2, "cuModuleLoadData (PTX)");
      xc_status_t st = xc_error(xc_status_code(b), "cuda: loading a module compiled for sm_%d: %s; %s", arch,
                                xc_status_message(a), xc_status_message(b));
      xc_status_free(a);
      xc_status_free(b);
      return st;
    }
    atomic_fetch_add(&g_ptx_fallbacks, 1);
  }
  cu_module_t* m = calloc(1, sizeof *m);
  if (!m) {
    t->api.cuModuleUnload(mod);
    return xc_error_oom();
  }
  m->module = mod;
  m->ptx = malloc(nptx + 1);
  if (m->ptx) {
    memcpy(m->ptx, ptx, nptx);
    m->ptx[nptx] = '\0';
  }
  *out_module = m;
  return NULL;
}

/* Counting parameters from the PTX rather than probing cuFuncGetParamInfo
 * past the last index keeps the driver free of failing calls, which
 * compute-sanitizer reports as errors (cuFuncGetParamCount is newer than
 * CUDA 13.0's driver). */
int xc_cuda_ptx_param_count(const char* ptx, const char* name) {
  size_t len = strlen(name);
  for (const char* p = ptx ? strstr(ptx, ".entry ") : NULL; p; p = strstr(p + 1, ".entry ")) {
    const char* q = p + 7;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, name, len) != 0) continue;
    q += len;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
    if (*q != '(') continue;
    int n = 0;
    for (q++; *q && *q != ')'; q++)
      if (strncmp(q, ".param", 6) == 0) n++;
    return *q == ')' ? n : -1;
  }
  return -1;
}

static void cu_module_unload(void* device, void* module) {
  cu_device_t* dev = device;
  cu_module_t* m = module;
  for (cu_kernel_t* k = m->kernels; k;) {
    cu_kernel_t* next = k->next;
    free(k);
    k = next;
  }
  if (m->gemm) cu_blaslt_gemm_destroy(m->gemm);
  else if (dev->target->api.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) dev->target->api.cuModuleUnload(m->module);
  free(m->ptx);
  free(m);
}

/* The kernel's launch plan (XC_CUDA_LAUNCH_PREFIX in cuda_target.h), when
 * its PTX defines one. */
static xc_status_t launch_plan(cu_target_t* t, cu_module_t* m, const char* name, cu_kernel_t* k) {
  char sym[200];
  snprintf(sym, sizeof sym, "%s%s", XC_CUDA_LAUNCH_PREFIX, name);
  if (!m->ptx || !strstr(m->ptx, sym)) return NULL;
  CUdeviceptr p = 0;
  size_t size = 0;
  CUresult e = t->api.cuModuleGetGlobal(&p, &size, m->module, sym);
  if (e == CUDA_ERROR_NOT_FOUND) return NULL;
  if (e != CUDA_SUCCESS) return cu_fail(t, e, "cuModuleGetGlobal");
  long long plan[2 + XC_CUDA_MAX_TMAPS * XC_TMAP_FIELDS] = {0};
  if (size < 2 * sizeof(long long) || size > sizeof plan)
    return xc_error(XC_DATA_LOSS, "cuda: kernel '%s': launch plan of %zu bytes", name, size);
  CU_CHECK(t, t->api.cuMemcpyDtoH(plan, p, size), "cuMemcpyDtoH");
  int n = (int)plan[1];
  bool ok = plan[0] >= 0 && n >= 0 && n <= XC_CUDA_MAX_TMAPS &&
            size == (size_t)(2 + n * XC_TMAP_FIELDS) * sizeof(long long);
  for (int i = 0; ok && i < n; i++) {
    const long long* f = plan + 2 + i * XC_TMAP_FIELDS;
    ok = (f[XC_TMAP_DTYPE] == 6 || f[XC_TMAP_DTYPE] == 9) && (f[XC_TMAP_RANK] == 2 || f[XC_TMAP_RANK] == 3) &&
         f[XC_TMAP_BASE] >= 0;
    for (int d = 0; ok && d < f[XC_TMAP_RANK]; d++)
      ok = f[XC_TMAP_DIM0 + d] > 0 && f[XC_TMAP_BOX0 + d] > 0 && f[XC_TMAP_BOX0 + d] <= 256 &&
           (d == 0 || f[XC_TMAP_STRIDE1 + d - 1] > 0);
  }
  if (!ok) return xc_error(XC_DATA_LOSS, "cuda: kernel '%s': malformed launch plan", name);
  if (n > 0 && !t->api.cuTensorMapEncodeTiled)
    return xc_error(XC_UNSUPPORTED, "cuda: kernel '%s' copies by TMA and the driver lacks cuTensorMapEncodeTiled "
                                    "(CUDA 12.0+ needed)", name);
  k->max_blocks = plan[0];
  k->num_tmaps = n;
  memcpy(k->tmaps, plan + 2, (size_t)n * XC_TMAP_FIELDS * sizeof(long long));
  return NULL;
}

static xc_status_t cu_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  cu_module_t* m = module;
  if (m->gemm) { /* one entry point, whatever its name */
    cu_kernel_t* k = calloc(1, sizeof *k);
    if (!k) return xc_error_oom();
    k->gemm = m->gemm;
    k->max_threads = 1024;
    k->num_params = -1;
    k->next = m->kernels;
    m->kernels = k;
    *out_kernel = k;
    return NULL;
  }
  XC_RETURN_IF_ERROR(use(dev));
  CUfunction f = NULL;
  CUresult e = t->api.cuModuleGetFunction(&f, m->module, name);
  if (e == CUDA_ERROR_NOT_FOUND) return xc_error(XC_NOT_FOUND, "cuda: the module has no kernel '%s'", name);
  if (e != CUDA_SUCCESS) return cu_fail(t, e, "cuModuleGetFunction");
  /* dynamic shared memory the kernel was emitted for (above the 48 KiB
   * default: the function's limit is raised to it) */
  char sym[200];
  snprintf(sym, sizeof sym, "%s%s", XC_CUDA_DSM_PREFIX, name);
  CUdeviceptr dsm = 0;
  size_t dsm_size = 0;
  unsigned dyn = 0;
  /* asked only when the PTX (kept with every module that has one) names
   * it, so that kernels without it cause no failing driver call (tools such
   * as compute-sanitizer report those) */
  e = m->ptx && m->ptx[0] && !strstr(m->ptx, sym) ? CUDA_ERROR_NOT_FOUND
                                     : t->api.cuModuleGetGlobal(&dsm, &dsm_size, m->module, sym);
  if (e == CUDA_SUCCESS && dsm_size == sizeof dyn) {
    CU_CHECK(t, t->api.cuMemcpyDtoH(&dyn, dsm, sizeof dyn), "cuMemcpyDtoH");
    CU_CHECK(t, t->api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  } else if (e != CUDA_SUCCESS && e != CUDA_ERROR_NOT_FOUND) {
    return cu_fail(t, e, "cuModuleGetGlobal");
  }
  cu_kernel_t* k = calloc(1, sizeof *k);
  if (!k) return xc_error_oom();
  k->function = f;
  k->dyn_smem = dyn;
  xc_status_t ps = launch_plan(t, m, name, k);
  if (ps) {
    free(k);
    return ps;
  }
  if (t->api.cuFuncGetAttribute(&k->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) != CUDA_SUCCESS)
    k->max_threads = 0;
  k->num_params = xc_cuda_ptx_param_count(m->ptx, name);
  if (k->num_params < 0 && t->api.cuFuncGetParamInfo) {
    size_t off, size;
    int n = 0;
    while (n <= 2 * XC_TARGET_MAX_ARGS && t->api.cuFuncGetParamInfo(f, (size_t)n, &off, &size) == CUDA_SUCCESS) n++;
    if (n <= 2 * XC_TARGET_MAX_ARGS) k->num_params = n;
  }
  k->next = m->kernels;
  m->kernels = k;
  *out_kernel = k;
  return NULL;
}

/* A CUtensorMap: 128 opaque bytes, 64-byte aligned. */
typedef struct cu_tmap {
  _Alignas(64) unsigned long long q[16];
} cu_tmap_t;

/* Encodes a map of the launch plan on the launch's buffer. */
static xc_status_t encode_tmap(cu_target_t* t, const long long* f, const xc_launch_args_t* args, cu_tmap_t* map) {
  if (f[XC_TMAP_BUFFER] < 0 || f[XC_TMAP_BUFFER] >= args->num_buffers)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: tensor map of buffer %lld, the launch passes %d buffers",
                    f[XC_TMAP_BUFFER], args->num_buffers);
  const cu_buffer_t* buf = args->buffers[f[XC_TMAP_BUFFER]];
  unsigned rank = (unsigned)f[XC_TMAP_RANK];
  unsigned long long dims[3] = {1, 1, 1}, strides[2] = {0, 0};
  unsigned box[3], estrides[3] = {1, 1, 1};
  for (unsigned i = 0; i < rank && i < 3; i++) {
    dims[i] = (unsigned long long)f[XC_TMAP_DIM0 + i];
    box[i] = (unsigned)f[XC_TMAP_BOX0 + i];
    if (i > 0) strides[i - 1] = (unsigned long long)f[XC_TMAP_STRIDE1 + i - 1];
  }
  /* the map's last element must lie in the buffer (a module's plan is not trusted) */
  unsigned long long last = (unsigned long long)f[XC_TMAP_BASE] * 2 + (dims[0] - 1) * 2;
  for (unsigned i = 1; i < rank && i < 3; i++) last += (dims[i] - 1) * strides[i - 1];
  if (last + 2 > buf->size)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: tensor map reaching byte %llu of a %zu-byte buffer", last + 2,
                    buf->size);
  CUdeviceptr address = buf->ptr + (CUdeviceptr)f[XC_TMAP_BASE] * 2;
  /* interleave none, 128-byte swizzle, L2 promotion of 256 bytes, zero fill */
  CUresult e = t->api.cuTensorMapEncodeTiled(map, (int)f[XC_TMAP_DTYPE], rank, (void*)(uintptr_t)address, dims,
                                             strides, box, estrides, 0, 3, 3, 0);
  if (e != CUDA_SUCCESS) return cu_fail(t, e, "cuTensorMapEncodeTiled");
  return NULL;
}

static xc_status_t cu_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  cu_kernel_t* k = kernel;
  if (k->gemm) {
    const xc_vendor_gemm_t* g = cu_blaslt_gemm_desc(k->gemm);
    bool swiglu = g->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A || g->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_B;
    if (g->a >= args->num_buffers || g->b >= args->num_buffers || g->y >= args->num_buffers ||
        g->bias >= args->num_buffers || (swiglu && (g->u < 0 || g->u >= args->num_buffers)))
      return xc_error(XC_INVALID_ARGUMENT, "cuda: vendor GEMM launch with %d buffers", args->num_buffers);
    XC_RETURN_IF_ERROR(use(dev));
    CUdeviceptr bias = g->bias >= 0 ? ((cu_buffer_t*)args->buffers[g->bias])->ptr : 0;
    CUdeviceptr y = ((cu_buffer_t*)args->buffers[g->y])->ptr;
    XC_RETURN_IF_ERROR(cu_blaslt_gemm_run(k->gemm, ((cu_buffer_t*)args->buffers[g->a])->ptr,
                                          ((cu_buffer_t*)args->buffers[g->b])->ptr, bias, y, dev->stream));
    return swiglu ? swiglu_launch(dev, g, y, ((cu_buffer_t*)args->buffers[g->u])->ptr) : NULL;
  }
  int nargs = args->num_buffers + args->num_scalars + k->num_tmaps;
  if (k->num_params >= 0 && nargs != k->num_params)
    return xc_error(XC_INVALID_ARGUMENT,
                    "cuda: the kernel takes %d arguments, the launch passes %d buffers, %d scalars and %d tensor maps",
                    k->num_params, args->num_buffers, args->num_scalars, k->num_tmaps);
  int64_t threads = args->threads[0] * args->threads[1] * args->threads[2];
  if (k->max_threads > 0 && threads > k->max_threads)
    return xc_error(XC_INVALID_ARGUMENT, "cuda: %lld threads per block exceed the device limit of %d for this kernel",
                    (long long)threads, k->max_threads);
  const int64_t grid_max[3] = {2147483647, 65535, 65535};
  for (int i = 0; i < 3; i++)
    if (args->grid[i] > grid_max[i] || args->threads[i] > 1024)
      return xc_error(XC_OUT_OF_RANGE, "cuda: grid %lld x %lld x %lld of blocks %lld x %lld x %lld is beyond the limits",
                      (long long)args->grid[0], (long long)args->grid[1], (long long)args->grid[2],
                      (long long)args->threads[0], (long long)args->threads[1], (long long)args->threads[2]);
  CUdeviceptr ptrs[XC_TARGET_MAX_ARGS];
  long long scalars[XC_TARGET_MAX_ARGS];
  cu_tmap_t maps[XC_CUDA_MAX_TMAPS];
  void* params[2 * XC_TARGET_MAX_ARGS + XC_CUDA_MAX_TMAPS];
  int n = 0;
  for (int i = 0; i < args->num_buffers; i++) {
    ptrs[i] = ((cu_buffer_t*)args->buffers[i])->ptr;
    params[n++] = &ptrs[i];
  }
  for (int i = 0; i < args->num_scalars; i++) {
    scalars[i] = (long long)args->scalars[i];
    params[n++] = &scalars[i];
  }
  for (int i = 0; i < k->num_tmaps; i++) {
    XC_RETURN_IF_ERROR(encode_tmap(t, k->tmaps[i], args, &maps[i]));
    params[n++] = &maps[i];
  }
  unsigned grid[3] = {(unsigned)args->grid[0], (unsigned)args->grid[1], (unsigned)args->grid[2]};
  if (k->max_blocks > 0) { /* a persistent program: the grid flattened, capped */
    long long total = args->grid[0] * args->grid[1] * args->grid[2];
    grid[0] = (unsigned)(total < k->max_blocks ? total : k->max_blocks), grid[1] = grid[2] = 1;
  }
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(t,
           t->api.cuLaunchKernel(k->function, grid[0], grid[1], grid[2], (unsigned)args->threads[0],
                                 (unsigned)args->threads[1], (unsigned)args->threads[2], k->dyn_smem, dev->stream,
                                 n ? params : NULL, NULL),
           "cuLaunchKernel");
  return NULL;
}

/* ---- CUDA Graphs: stream capture of a launch sequence ---- */

static xc_status_t cu_capture_begin(void* device) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  if (!t->has_graphs)
    return xc_error(XC_UNSUPPORTED, "cuda: the driver lacks the CUDA Graph functions (CUDA 11.4+ needed)");
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(t, t->api.cuStreamBeginCapture(dev->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  return NULL;
}

static xc_status_t cu_capture_end(void* device, void** out_graph) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  /* the capture ends whatever else fails: the interface promises normal mode after an error */
  xc_status_t us = use(dev);
  CUgraph graph = NULL;
  CUresult e = t->api.cuStreamEndCapture(dev->stream, &graph);
  if (us) {
    if (graph) t->api.cuGraphDestroy(graph);
    return us;
  }
  if (e != CUDA_SUCCESS) {
    if (graph) t->api.cuGraphDestroy(graph);
    return cu_fail(t, e, "cuStreamEndCapture");
  }
  CUgraphExec exec = NULL;
  e = t->api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  t->api.cuGraphDestroy(graph); /* the executable graph is independent of it */
  if (e != CUDA_SUCCESS) return cu_fail(t, e, "cuGraphInstantiateWithFlags");
  *out_graph = exec;
  return NULL;
}

static xc_status_t cu_graph_launch(void* device, void* graph) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(t, t->api.cuGraphLaunch((CUgraphExec)graph, dev->stream), "cuGraphLaunch");
  return NULL;
}

static void cu_graph_free(void* device, void* graph) {
  cu_device_t* dev = device;
  if (graph && dev->target->api.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS)
    dev->target->api.cuGraphExecDestroy((CUgraphExec)graph);
}

/* ---- events ---- */

static xc_status_t cu_event_record(void* device, void** out_event) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  cu_event_t* ev = calloc(1, sizeof *ev);
  if (!ev) return xc_error_oom();
  CUresult e = t->api.cuEventCreate(&ev->event, 0);
  if (e == CUDA_SUCCESS) {
    e = t->api.cuEventRecord(ev->event, dev->stream);
    if (e != CUDA_SUCCESS) t->api.cuEventDestroy(ev->event);
  }
  if (e != CUDA_SUCCESS) {
    free(ev);
    return cu_fail(t, e, "cuEventCreate/cuEventRecord");
  }
  *out_event = ev;
  return NULL;
}

static xc_status_t cu_event_elapsed_ms(void* device, void* start, void* end, double* out_ms) {
  cu_device_t* dev = device;
  cu_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  CU_CHECK(t, t->api.cuEventSynchronize(((cu_event_t*)end)->event), "cuEventSynchronize");
  float ms = 0;
  CU_CHECK(t, t->api.cuEventElapsedTime(&ms, ((cu_event_t*)start)->event, ((cu_event_t*)end)->event),
           "cuEventElapsedTime");
  *out_ms = ms;
  return NULL;
}

static void cu_event_free(void* device, void* event) {
  cu_device_t* dev = device;
  cu_event_t* ev = event;
  if (dev->target->api.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) dev->target->api.cuEventDestroy(ev->event);
  free(ev);
}

static void cu_target_free(void* target) {
  cu_target_t* t = target;
  xc_status_free(t->load_error);
  xc_status_free(t->nvrtc_error);
  pthread_mutex_destroy(&t->lock);
  /* The libraries stay loaded: the driver does not survive being unloaded. */
  free(t);
}

/* ---- emission: the C-family emitter with the CUDA dialect ---- */

static bool cu_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel, char* why,
                        size_t why_size) {
  (void)target;
  return xc_cstyle_supports(&xc_cstyle_dialect_cuda, caps, kernel, why, why_size);
}

static xc_status_t cu_schedule(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout) {
  (void)target;
  if (xc_cuda_fa_schedule(caps, kernel, limits, flags, inout)) return NULL;
  if (xc_cuda_gemm_schedule(caps, kernel, limits, flags, inout)) return NULL;
  return xc_cstyle_schedule(&xc_cstyle_dialect_cuda, caps, kernel, limits, flags, NULL, inout);
}

static xc_status_t cu_emit(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                           const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  (void)target;
  bool taken = false;
  XC_RETURN_IF_ERROR(xc_cuda_fa_emit(caps, kernel, knobs, num_knobs, &taken, out_source));
  if (taken) return NULL;
  XC_RETURN_IF_ERROR(xc_cuda_gemm_emit(caps, kernel, knobs, num_knobs, &taken, out_source));
  if (taken) return NULL;
  return xc_cstyle_emit(&xc_cstyle_dialect_cuda, caps, kernel, knobs, num_knobs, NULL, out_source);
}

static const xc_target_iface_t cu_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .resolve_arch = cu_resolve_arch,
    .name = "cuda",
    .description = "NVIDIA GPUs: CUDA C++ compiled by NVRTC (libnvrtc), run through the Driver API (libcuda.so.1)",
    .probe = cu_probe,
    .device_count = cu_device_count,
    .device_caps = cu_device_caps,
    .supports = cu_supports,
    .emit = cu_emit,
    .schedule = cu_schedule,
    .compile = cu_compile,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .buffer_alloc = cu_buffer_alloc,
    .buffer_free = cu_buffer_free,
    .buffer_host_pointer = cu_buffer_host_pointer,
    .buffer_write = cu_buffer_write,
    .buffer_read = cu_buffer_read,
    .buffer_device_address = cu_buffer_device_address,
    .copy_device = cu_copy_device,
    .module_load = cu_module_load,
    .module_unload = cu_module_unload,
    .kernel_get = cu_kernel_get,
    .launch = cu_launch,
    .synchronize = cu_synchronize,
    .event_record = cu_event_record,
    .event_elapsed_ms = cu_event_elapsed_ms,
    .event_free = cu_event_free,
    .target_free = cu_target_free,
    .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
    .buffer_alloc_mapped = cu_buffer_alloc_mapped,
};

const xc_target_iface_t* xc_cuda_iface(void) { return &cu_iface; }

void* xc_cuda_context_create(void) {
  cu_target_t* t = calloc(1, sizeof *t);
  if (t) pthread_mutex_init(&t->lock, NULL);
  return t;
}

xc_status_t xc_target_cuda_init(int api_version, const xc_target_host_t* host) {
  (void)api_version;
  void* t = xc_cuda_context_create();
  if (!t) return xc_error_oom();
  return host->register_target(host, &cu_iface, t);
}
