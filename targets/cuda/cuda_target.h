/* The cuda target's declarations shared with tests and tools in this tree:
 * the CUDA dialect of the C-family emitter and compile-side helpers that
 * need no GPU (capabilities of an architecture named "sm_90", selectors).
 * docs/targets/cuda.md describes the target. */
#ifndef XCOMP_TARGETS_CUDA_TARGET_H
#define XCOMP_TARGETS_CUDA_TARGET_H

#include "../cstyle/cstyle.h"
#include "xcomp/target.h"

/* CUDA C++ for NVRTC: one thread block per program, __shared__ tiles. */
extern const xc_cstyle_dialect_t xc_cstyle_dialect_cuda;

/* Blob format made by the cuda target's compile: a small header, the cubin
 * for the architecture, and the PTX (loaded when the cubin does not fit the
 * device). See docs/targets/cuda.md for the layout. */
#define XC_CUDA_BLOB_FORMAT "cuda-cubin+ptx"

/* A kernel that uses dynamic shared memory defines the device variable
 * XC_CUDA_DSM_PREFIX<entry> (unsigned int, its size in bytes); the runtime
 * reads it when it loads the kernel, raises the function's limit to it and
 * passes it at every launch. */
#define XC_CUDA_DSM_PREFIX "xc_dsm_bytes_"

/* A program that needs more from its launch than a grid, buffers and
 * scalars defines XC_CUDA_LAUNCH_PREFIX<entry>, an array of long long:
 *   [0] the most blocks to launch, 0 for the kernel's grid; else the grid's
 *       programs are launched as min(their number, that) blocks along x and
 *       each block loops over programs (a persistent program);
 *   [1] the number of tensor maps (at most XC_CUDA_MAX_TMAPS), then
 *       XC_TMAP_FIELDS values per map.
 * The runtime encodes each map with cuTensorMapEncodeTiled at every launch
 * from its buffer's device address (elements: 16-bit; 128-byte swizzle,
 * zero fill out of bounds) and passes the maps after the buffers and
 * scalars, as `const __grid_constant__` 128-byte parameters. */
#define XC_CUDA_LAUNCH_PREFIX "xc_launch_"
#define XC_CUDA_MAX_TMAPS 4
enum {
  XC_TMAP_BUFFER,  /* which of the launch's buffers */
  XC_TMAP_DTYPE,   /* CUtensorMapDataType: 6 f16, 9 bf16 */
  XC_TMAP_RANK,    /* 2 or 3 */
  XC_TMAP_BASE,    /* first element's offset in the buffer, in elements */
  XC_TMAP_DIM0,    /* extents, innermost (contiguous) first */
  XC_TMAP_DIM1,
  XC_TMAP_DIM2,
  XC_TMAP_STRIDE1, /* byte strides of dimensions 1 and 2 */
  XC_TMAP_STRIDE2,
  XC_TMAP_BOX0,    /* the box a copy moves, innermost first */
  XC_TMAP_BOX1,
  XC_TMAP_BOX2,
  XC_TMAP_FIELDS
};

/* Nominal capabilities of an architecture ("sm_90", "sm_80", "90"), for
 * compiling without a device: the limits every device of that architecture
 * has (48 KiB static shared memory and the architecture's opt-in maximum of
 * dynamic shared memory, 1024 threads, warp 32). */
xc_status_t xc_cuda_arch_caps(const char* arch, xc_device_caps_t* out_caps);

/* Resolves a cuda selector for compilation: "cuda", "cuda:N", "cuda:<name>"
 * use a present device (its caps); "cuda:sm_XX" uses the first device of
 * that architecture when one is present, else the nominal caps of sm_XX
 * (*out_device_index = -1: compile only). out_device_index may be NULL. */
xc_status_t xc_cuda_select(const char* selector, xc_target_t** out_target, xc_device_caps_t* out_caps,
                           int* out_device_index);

/* The architecture number a caps record is for (90 for "sm_90"), 0 if none. */
int xc_cuda_caps_arch(const xc_device_caps_t* caps);

/* Parts of a cuda blob (pointers into the blob). False when malformed. */
bool xc_cuda_blob_parts(const xc_blob_t* blob, int* out_arch, const uint8_t** out_cubin, size_t* out_cubin_size,
                        const char** out_ptx, size_t* out_ptx_size);

/* The number of parameters of entry `name` in PTX text (".entry NAME(" and
 * one ".param" per parameter up to the closing parenthesis), or -1 where the
 * text has no such entry. The runtime checks each launch's argument count
 * against it. */
int xc_cuda_ptx_param_count(const char* ptx, const char* name);

/* Modules loaded from PTX because their cubin did not fit the device
 * (process-wide count, for tests and diagnostics). */
int xc_cuda_ptx_fallback_count(void);

/* For targets that run other kernel languages through the cuda target's
 * runtime half (rocm_nv: HIP source on NVIDIA GPUs): the interface table,
 * a fresh context for it (freed by the table's target_free), and NVRTC
 * compilation of `source` with pre_options placed before the flags (the
 * blob is a cuda blob). */
const xc_target_iface_t* xc_cuda_iface(void);
void* xc_cuda_context_create(void);
xc_status_t xc_cuda_compile_nvrtc(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                                  const xc_compile_options_t* options, const char* const* pre_options,
                                  int num_pre_options, xc_blob_t* out_blob);

#endif
