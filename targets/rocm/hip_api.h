/* The parts of hiprtc and the HIP runtime the rocm target uses, declared
 * here (types, constants, X-macro tables of functions) so that xcomp builds
 * without ROCm headers and never links ROCm: the tables are resolved with
 * dlsym at run time (hiprtc from libhiprtc.so, or from libamdhip64.so where
 * ROCm 5.x ships it; the runtime from libamdhip64.so). Values are those of
 * hip_runtime_api.h and hiprtc.h (ROCm 5.x and 6.x agree on the ones used).
 * Each entry is X(return type, C name, symbol, params). */
#ifndef XCOMP_TARGETS_ROCM_HIP_API_H
#define XCOMP_TARGETS_ROCM_HIP_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- hiprtc ---- */
typedef int hiprtcResult;
typedef struct _hiprtcProgram* hiprtcProgram;
#define HIPRTC_SUCCESS 0
#define HIPRTC_ERROR_COMPILATION 6

#define XC_HIPRTC_FUNCTIONS(X)                                                                           \
  X(const char*, hiprtcGetErrorString, "hiprtcGetErrorString", (hiprtcResult))                           \
  X(hiprtcResult, hiprtcVersion, "hiprtcVersion", (int*, int*))                                          \
  X(hiprtcResult, hiprtcCreateProgram, "hiprtcCreateProgram",                                            \
    (hiprtcProgram*, const char*, const char*, int, const char* const*, const char* const*))             \
  X(hiprtcResult, hiprtcDestroyProgram, "hiprtcDestroyProgram", (hiprtcProgram*))                        \
  X(hiprtcResult, hiprtcCompileProgram, "hiprtcCompileProgram", (hiprtcProgram, int, const char* const*)) \
  X(hiprtcResult, hiprtcGetCodeSize, "hiprtcGetCodeSize", (hiprtcProgram, size_t*))                      \
  X(hiprtcResult, hiprtcGetCode, "hiprtcGetCode", (hiprtcProgram, char*))                                \
  X(hiprtcResult, hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize", (hiprtcProgram, size_t*))          \
  X(hiprtcResult, hiprtcGetProgramLog, "hiprtcGetProgramLog", (hiprtcProgram, char*))

typedef struct xc_hiprtc_api {
#define XC_HIPRTC_MEMBER(ret, name, sym, params) ret(*name) params;
  XC_HIPRTC_FUNCTIONS(XC_HIPRTC_MEMBER)
#undef XC_HIPRTC_MEMBER
} xc_hiprtc_api_t;

/* ---- HIP runtime ---- */
typedef int hipError_t;
typedef int hipDevice_t;
typedef void* hipDeviceptr_t;
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipModule_t* hipModule_t;
typedef struct ihipModuleSymbol_t* hipFunction_t;
typedef struct ihipEvent_t* hipEvent_t;

#define hipSuccess 0
#define hipErrorInvalidValue 1
#define hipErrorOutOfMemory 2
#define hipErrorNoDevice 100
#define hipErrorInvalidDevice 101
#define hipErrorInvalidImage 200
#define hipErrorNoBinaryForGpu 209
#define hipErrorInvalidHandle 400
#define hipErrorNotFound 500
#define hipErrorLaunchOutOfResources 701

/* hipDeviceAttribute_t values (ROCm 5.0+) */
#define hipDeviceAttributeMaxGridDimX 29
#define hipDeviceAttributeMaxThreadsPerBlock 56
#define hipDeviceAttributeMultiprocessorCount 63
#define hipDeviceAttributeMaxSharedMemoryPerBlock 74
#define hipDeviceAttributeWarpSize 87
#define HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0

/* hipDeviceProp_t is only read for its architecture name (gcnArchName,
 * "gfx90a:sramecc+:xnack-"), found by scanning a buffer larger than any
 * version's struct: the layout differs between ROCm releases. */
#define XC_HIP_PROPS_BUFFER 16384

#define XC_HIP_FUNCTIONS(X)                                                                                \
  X(const char*, hipGetErrorName, "hipGetErrorName", (hipError_t))                                         \
  X(const char*, hipGetErrorString, "hipGetErrorString", (hipError_t))                                     \
  X(hipError_t, hipInit, "hipInit", (unsigned int))                                                        \
  X(hipError_t, hipRuntimeGetVersion, "hipRuntimeGetVersion", (int*))                                      \
  X(hipError_t, hipGetDeviceCount, "hipGetDeviceCount", (int*))                                            \
  X(hipError_t, hipDeviceGet, "hipDeviceGet", (hipDevice_t*, int))                                         \
  X(hipError_t, hipDeviceGetName, "hipDeviceGetName", (char*, int, hipDevice_t))                           \
  X(hipError_t, hipDeviceGetAttribute, "hipDeviceGetAttribute", (int*, int, int))                          \
  X(hipError_t, hipDeviceTotalMem, "hipDeviceTotalMem", (size_t*, hipDevice_t))                            \
  X(hipError_t, hipGetDeviceProperties, "hipGetDeviceProperties", (void*, int))                            \
  X(hipError_t, hipSetDevice, "hipSetDevice", (int))                                                       \
  X(hipError_t, hipStreamCreate, "hipStreamCreate", (hipStream_t*))                                        \
  X(hipError_t, hipStreamDestroy, "hipStreamDestroy", (hipStream_t))                                       \
  X(hipError_t, hipStreamSynchronize, "hipStreamSynchronize", (hipStream_t))                               \
  X(hipError_t, hipMalloc, "hipMalloc", (void**, size_t))                                                  \
  X(hipError_t, hipFree, "hipFree", (void*))                                                               \
  X(hipError_t, hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync", (hipDeviceptr_t, void*, size_t, hipStream_t))    \
  X(hipError_t, hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync", (void*, hipDeviceptr_t, size_t, hipStream_t))    \
  X(hipError_t, hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync", (hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t)) \
  X(hipError_t, hipModuleLoadData, "hipModuleLoadData", (hipModule_t*, const void*))                       \
  X(hipError_t, hipModuleUnload, "hipModuleUnload", (hipModule_t))                                         \
  X(hipError_t, hipModuleGetFunction, "hipModuleGetFunction", (hipFunction_t*, hipModule_t, const char*))  \
  X(hipError_t, hipFuncGetAttribute, "hipFuncGetAttribute", (int*, int, hipFunction_t))                    \
  X(hipError_t, hipModuleLaunchKernel, "hipModuleLaunchKernel",                                            \
    (hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, hipStream_t,     \
     void**, void**))                                                                                      \
  X(hipError_t, hipEventCreate, "hipEventCreate", (hipEvent_t*))                                           \
  X(hipError_t, hipEventRecord, "hipEventRecord", (hipEvent_t, hipStream_t))                               \
  X(hipError_t, hipEventSynchronize, "hipEventSynchronize", (hipEvent_t))                                  \
  X(hipError_t, hipEventElapsedTime, "hipEventElapsedTime", (float*, hipEvent_t, hipEvent_t))              \
  X(hipError_t, hipEventDestroy, "hipEventDestroy", (hipEvent_t))

/* Graph capture (HIP 4.3+): optional, resolved when present; the target
 * offers launch graphs only when every one of them is. Stream capture modes
 * as in hipStreamCaptureMode. */
typedef struct ihipGraph* hipGraph_t;
typedef struct hipGraphExec* hipGraphExec_t;
typedef struct hipGraphNode* hipGraphNode_t;
#define hipStreamCaptureModeThreadLocal 1
#define XC_HIP_GRAPH_FUNCTIONS(X)                                                                      \
  X(hipError_t, hipStreamBeginCapture, "hipStreamBeginCapture", (hipStream_t, int))                    \
  X(hipError_t, hipStreamEndCapture, "hipStreamEndCapture", (hipStream_t, hipGraph_t*))                \
  X(hipError_t, hipGraphInstantiate, "hipGraphInstantiate",                                            \
    (hipGraphExec_t*, hipGraph_t, hipGraphNode_t*, char*, size_t))                                     \
  X(hipError_t, hipGraphLaunch, "hipGraphLaunch", (hipGraphExec_t, hipStream_t))                       \
  X(hipError_t, hipGraphExecDestroy, "hipGraphExecDestroy", (hipGraphExec_t))                          \
  X(hipError_t, hipGraphDestroy, "hipGraphDestroy", (hipGraph_t))

/* Pinned host memory mapped into the device (optional, resolved when
 * present; the index-error record the host reads in place). Flags as in
 * hipHostMallocPortable/Mapped/Coherent; hipDeviceAttributeCanMapHostMemory. */
#define hipHostMallocPortable 0x1
#define hipHostMallocMapped 0x2
#define hipHostMallocCoherent 0x40000000
#define hipDeviceAttributeCanMapHostMemory 3
#define XC_HIP_MAPPED_FUNCTIONS(X)                                                                     \
  X(hipError_t, hipHostMalloc, "hipHostMalloc", (void**, size_t, unsigned int))                       \
  X(hipError_t, hipHostGetDevicePointer, "hipHostGetDevicePointer", (void**, void*, unsigned int))    \
  X(hipError_t, hipHostFree, "hipHostFree", (void*))

typedef struct xc_hip_api {
#define XC_HIP_MEMBER(ret, name, sym, params) ret(*name) params;
  XC_HIP_FUNCTIONS(XC_HIP_MEMBER)
  XC_HIP_GRAPH_FUNCTIONS(XC_HIP_MEMBER)
  XC_HIP_MAPPED_FUNCTIONS(XC_HIP_MEMBER)
#undef XC_HIP_MEMBER
} xc_hip_api_t;

#endif
