/* cuBLASLt as the cuda target's vendor GEMM (XC_VENDOR_GEMM_FORMAT blobs):
 * libcublasLt loaded at run time like the driver and NVRTC, one handle and
 * one workspace per device, one prepared matmul (descriptors + algorithm)
 * per loaded blob. docs/targets/cuda.md, "cuBLASLt". */
#ifndef XCOMP_TARGETS_CUDA_BLASLT_H
#define XCOMP_TARGETS_CUDA_BLASLT_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_api.h"
#include "xcomp/target.h"

/* Whether libcublasLt can be loaded (tried once); why not in `why`. */
bool xc_cublaslt_available(char* why, size_t why_size);

typedef struct cu_blaslt_device cu_blaslt_device_t;
typedef struct cu_blaslt_gemm cu_blaslt_gemm_t;

/* Per-device state, made on first use; `alloc`/`free_mem` are the device's
 * memory functions (the driver's, through the target's table). */
xc_status_t cu_blaslt_device_get(cu_blaslt_device_t** slot, const xc_cuda_api_t* api);
void cu_blaslt_device_free(cu_blaslt_device_t* d, const xc_cuda_api_t* api);

/* Prepares a GEMM (descriptors, layouts, the heuristic's first algorithm). */
xc_status_t cu_blaslt_gemm_create(cu_blaslt_device_t* d, const xc_vendor_gemm_t* g, cu_blaslt_gemm_t** out);
void cu_blaslt_gemm_destroy(cu_blaslt_gemm_t* gemm);
/* Queues Y = op(A) op(B) (+ bias) (ReLU) on stream. */
xc_status_t cu_blaslt_gemm_run(cu_blaslt_gemm_t* gemm, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr y,
                               CUstream stream);
const xc_vendor_gemm_t* cu_blaslt_gemm_desc(const cu_blaslt_gemm_t* gemm);

#endif
