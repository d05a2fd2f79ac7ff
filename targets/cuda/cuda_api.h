/* The parts of the NVRTC and CUDA Driver APIs the cuda target uses, declared
 * here (types, constants, X-macro tables of functions) so that xcomp builds
 * without CUDA headers and never links CUDA: the tables are resolved with
 * dlsym from libnvrtc.so and libcuda.so.1 at run time. Values are those of
 * nvrtc.h and cuda.h. Each entry is X(return type, C name, symbol, params). */
#ifndef XCOMP_TARGETS_CUDA_API_H
#define XCOMP_TARGETS_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVRTC ---- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;
#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_COMPILATION 6

#define XC_NVRTC_FUNCTIONS(X)                                                                          \
  X(const char*, nvrtcGetErrorString, "nvrtcGetErrorString", (nvrtcResult))                            \
  X(nvrtcResult, nvrtcVersion, "nvrtcVersion", (int*, int*))                                           \
  X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram",                                             \
    (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*))            \
  X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram*))                          \
  X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram", (nvrtcProgram, int, const char* const*))  \
  X(nvrtcResult, nvrtcGetPTXSize, "nvrtcGetPTXSize", (nvrtcProgram, size_t*))                          \
  X(nvrtcResult, nvrtcGetPTX, "nvrtcGetPTX", (nvrtcProgram, char*))                                    \
  X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram, size_t*))                      \
  X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram, char*))                                \
  X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram, size_t*))            \
  X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram, char*))

typedef struct xc_nvrtc_api {
#define XC_NVRTC_MEMBER(ret, name, sym, params) ret(*name) params;
  XC_NVRTC_FUNCTIONS(XC_NVRTC_MEMBER)
#undef XC_NVRTC_MEMBER
} xc_nvrtc_api_t;

/* ---- Driver API ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;

#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CUDA_ERROR_NOT_FOUND 500

#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X 5
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y 6
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z 7
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_DEVICE_ATTRIBUTE_WARP_SIZE 10
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY 19
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

#define XC_CUDA_FUNCTIONS(X)                                                                           \
  X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult, const char**))                              \
  X(CUresult, cuGetErrorString, "cuGetErrorString", (CUresult, const char**))                          \
  X(CUresult, cuInit, "cuInit", (unsigned int))                                                        \
  X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int*))                                        \
  X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int*))                                            \
  X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice*, int))                                            \
  X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char*, int, CUdevice))                              \
  X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int*, int, CUdevice))                     \
  X(CUresult, cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t*, CUdevice))                            \
  X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext*, CUdevice))            \
  X(CUresult, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))                   \
  X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                         \
  X(CUresult, cuStreamCreate, "cuStreamCreate", (CUstream*, unsigned int))                             \
  X(CUresult, cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                                       \
  X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                                  \
  X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr*, size_t))                                     \
  X(CUresult, cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                                \
  X(CUresult, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void*, size_t, CUstream)) \
  X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void*, CUdeviceptr, size_t, CUstream))       \
  X(CUresult, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", (CUdeviceptr, CUdeviceptr, size_t, CUstream))  \
  X(CUresult, cuModuleLoadData, "cuModuleLoadData", (CUmodule*, const void*))                          \
  X(CUresult, cuModuleUnload, "cuModuleUnload", (CUmodule))                                            \
  X(CUresult, cuModuleGetFunction, "cuModuleGetFunction", (CUfunction*, CUmodule, const char*))        \
  X(CUresult, cuFuncGetAttribute, "cuFuncGetAttribute", (int*, int, CUfunction))                       \
  X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction, int, int))                        \
  X(CUresult, cuModuleGetGlobal, "cuModuleGetGlobal_v2", (CUdeviceptr*, size_t*, CUmodule, const char*)) \
  X(CUresult, cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void*, CUdeviceptr, size_t))                           \
  X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                                        \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,       \
     void**, void**))                                                                                  \
  X(CUresult, cuEventCreate, "cuEventCreate", (CUevent*, unsigned int))                                \
  X(CUresult, cuEventRecord, "cuEventRecord", (CUevent, CUstream))                                     \
  X(CUresult, cuEventSynchronize, "cuEventSynchronize", (CUevent))                                     \
  X(CUresult, cuEventDestroy, "cuEventDestroy_v2", (CUevent))

typedef struct xc_cuda_api {
#define XC_CUDA_MEMBER(ret, name, sym, params) ret(*name) params;
  XC_CUDA_FUNCTIONS(XC_CUDA_MEMBER)
#undef XC_CUDA_MEMBER
  /* Resolved separately: cuEventElapsedTime_v2 (CUDA 12.8+) or the original. */
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  /* Optional (CUDA 12.4+): parameter layout, used to check argument counts. */
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*);
  /* Optional (CUDA 11.4+), all or none: CUDA Graphs (stream capture). */
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  /* Optional, all or none: pinned host memory mapped into the device (the
   * index-error record the host reads in place). */
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned int);
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned int);
  CUresult (*cuMemFreeHost)(void*);
  /* Optional (CUDA 12.0+): Hopper tensor maps, for programs that copy by
   * TMA (the map is 128 bytes, 64-byte aligned; enums passed as ints). */
  CUresult (*cuTensorMapEncodeTiled)(void* map, int dtype, unsigned rank, void* address, const unsigned long long* dims,
                                     const unsigned long long* strides, const unsigned* box,
                                     const unsigned* element_strides, int interleave, int swizzle, int l2_promotion,
                                     int oob_fill);
} xc_cuda_api_t;

#endif
