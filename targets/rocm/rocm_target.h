/* The rocm target's declarations shared with tests and tools in this tree:
 * the HIP dialect of the C-family emitter, the table of AMD architectures
 * (capabilities without a device), selectors, the code-object blob and the
 * helpers of the rocm_nv target (the same HIP source built for NVIDIA).
 * docs/targets/rocm.md describes both targets. */
#ifndef XCOMP_TARGETS_ROCM_TARGET_H
#define XCOMP_TARGETS_ROCM_TARGET_H

#include "../cstyle/cstyle.h"
#include "xcomp/target.h"

/* HIP C++ for hiprtc / hipcc (AMD) and NVRTC (NVIDIA, rocm_nv): one thread
 * block per program, __shared__ tiles (LDS on AMD). */
extern const xc_cstyle_dialect_t xc_cstyle_dialect_hip;

/* Blob format made by the rocm target's compile: a 32-byte header
 * ("XCROCM01", the architecture name, the code object size) followed by the
 * AMDGPU code object (an ELF for one gfx architecture). */
#define XC_ROCM_BLOB_FORMAT "rocm-co"

/* What an AMD architecture offers (nominal values of its largest part). */
typedef struct xc_rocm_arch {
  const char* name;        /* "gfx90a" */
  const char* products;    /* "MI210, MI250, MI250X" */
  int wave_size;           /* 64 (CDNA, GCN) or 32 (RDNA) */
  int compute_units;
  int lds_bytes;           /* LDS per work-group */
  int max_threads;         /* work-group limit */
  char matrix;             /* 'M' MFMA, 'W' WMMA, 0 none */
  /* Oldest ROCm release (major*100+minor) whose hiprtc compiles for it;
   * older ones (which may crash on an architecture they do not know) are
   * skipped and hipcc is tried instead. */
  int min_hiprtc;
} xc_rocm_arch_t;

/* The architecture table entry for "gfx90a" (features after ':' ignored),
 * NULL when the architecture is not in the table. */
const xc_rocm_arch_t* xc_rocm_arch_find(const char* name);
/* Entry i of the table (NULL past the end), for listings and tests. */
const xc_rocm_arch_t* xc_rocm_arch_at(int i);

/* Nominal capabilities of an architecture ("gfx90a"), for compiling without
 * a device: name "ROCm gfx90a (no device)", vendor "AMD gfx90a", wave size
 * as simd_width, LDS as local memory, the MFMA/WMMA shapes. */
xc_status_t xc_rocm_arch_caps(const char* arch, xc_device_caps_t* out_caps);

/* The architecture a caps record is for ("gfx90a" in its vendor, version
 * or name) copied into out; false when none. */
bool xc_rocm_caps_arch(const xc_device_caps_t* caps, char* out, size_t size);

/* The target's resolve_arch entry (xcomp/target.h): "gfxNNN" -> its
 * nominal capabilities; XC_NOT_FOUND for specs not written gfx... */
xc_status_t xc_rocm_resolve_arch(void* target, const char* spec, xc_device_caps_t* out_caps);

/* Resolves a rocm selector for compilation (through xc_target_resolve): "rocm", "rocm:N", "rocm:<name>"
 * use a present device; "rocm:gfxNNN" uses the first device of that
 * architecture when one is present, else the nominal caps of the
 * architecture (*out_device_index = -1: compile only). */
xc_status_t xc_rocm_select(const char* selector, xc_target_t** out_target, xc_device_caps_t* out_caps,
                           int* out_device_index);

/* Parts of a rocm blob (pointers into the blob). False when malformed. */
bool xc_rocm_blob_parts(const xc_blob_t* blob, char* out_arch, size_t arch_size, const uint8_t** out_code,
                        size_t* out_code_size);

/* The code object for `arch` inside a clang offload bundle
 * ("__CLANG_OFFLOAD_BUNDLE__", what hipcc --genco writes). False when bytes
 * are not a bundle or hold no entry for arch. */
bool xc_rocm_bundle_extract(const uint8_t* bytes, size_t size, const char* arch, const uint8_t** out_code,
                            size_t* out_size);

/* Which compiler built the last rocm compile in this process ("hiprtc",
 * "hipcc"), for tests and diagnostics. */
const char* xc_rocm_last_compiler(void);

#endif
