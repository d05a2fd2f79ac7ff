/* The rocm_nv target: the rocm target's HIP source, emitted by the same
 * dialect table, built for NVIDIA GPUs and run there, so that the numerics
 * of the HIP code path can be checked without an AMD GPU
 * (docs/targets/rocm.md, "HIP on NVIDIA").
 *
 * Compilation is NVRTC with __HIP_PLATFORM_NVIDIA__ defined; the emitted
 * source includes no header under NVRTC (HIP's kernel language on NVIDIA is
 * CUDA's, and the part the emitter uses is spelled alike), and AMD-only code
 * sits under #if on the AMD architecture macros, which NVRTC does not
 * define. Everything else — driver loading, devices, buffers, modules,
 * launches, events, graphs — is the cuda target's runtime half (its
 * interface table and context), not a copy; only the caps drop the vendor
 * BLAS. */
#include <string.h>

#include "../cuda/cuda_target.h"
#include "../targets_internal.h"
#include "rocm_target.h"

static bool nv_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                        char* why, size_t why_size) {
  (void)target;
  return xc_cstyle_supports(&xc_cstyle_dialect_hip, caps, kernel, why, why_size);
}

static xc_status_t nv_schedule(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                               const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout) {
  (void)target;
  return xc_cstyle_schedule(&xc_cstyle_dialect_hip, caps, kernel, limits, flags, NULL, inout);
}

static xc_status_t nv_emit(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                           const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  (void)target;
  return xc_cstyle_emit(&xc_cstyle_dialect_hip, caps, kernel, knobs, num_knobs, NULL, out_source);
}

static xc_status_t nv_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                              const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (source->language && strcmp(source->language, "hip") != 0)
    return xc_error(XC_UNSUPPORTED, "rocm_nv target builds HIP C++ (hip), not %s", source->language);
  static const char* const pre[] = {"-D__HIP_PLATFORM_NVIDIA__"};
  return xc_cuda_compile_nvrtc(target, caps, source, options, pre, 1, out_blob);
}

static xc_target_iface_t g_nv_iface;

/* The cuda target's caps without its vendor BLAS: rocm_nv exists to run the
 * generated HIP kernels, so GEMMs are never swapped for cuBLASLt. */
static xc_status_t nv_device_caps(void* target, int index, xc_device_caps_t* out_caps) {
  xc_status_t st = xc_cuda_iface()->device_caps(target, index, out_caps);
  if (!st) out_caps->has_vendor_blas = false;
  /* the HIP dialect declares static LDS arrays only (AMD has no opt-in) */
  if (!st) out_caps->local_memory_optin_bytes = 0;
  return st;
}

xc_status_t xc_target_rocm_nv_init(int api_version, const xc_target_host_t* host) {
  (void)api_version;
  g_nv_iface = *xc_cuda_iface();
  g_nv_iface.name = "rocm_nv";
  g_nv_iface.description =
      "the rocm target's HIP source on NVIDIA GPUs (NVRTC, __HIP_PLATFORM_NVIDIA__; CUDA Driver API runtime)";
  g_nv_iface.device_caps = nv_device_caps;
  g_nv_iface.supports = nv_supports;
  g_nv_iface.emit = nv_emit;
  g_nv_iface.schedule = nv_schedule;
  g_nv_iface.compile = nv_compile;
  void* t = xc_cuda_context_create();
  if (!t) return xc_error_oom();
  return host->register_target(host, &g_nv_iface, t);
}
