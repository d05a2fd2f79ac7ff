/* The part of the OpenCL 1.2 host API the opencl target uses, declared here
 * (types, constants, and an X-macro table of the functions) so that xcomp
 * builds without OpenCL headers and never links libOpenCL: the table is
 * resolved from libOpenCL.so.1 with dlsym at run time. Values are those of
 * the Khronos headers (CL/cl.h, CL/cl_ext.h). */
#ifndef XCOMP_TARGETS_OPENCL_API_H
#define XCOMP_TARGETS_OPENCL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef int64_t cl_long;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_uint cl_bool;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_profiling_info;
typedef cl_uint cl_kernel_info;
typedef intptr_t cl_context_properties;

typedef struct _cl_platform_id* cl_platform_id;
typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_context* cl_context;
typedef struct _cl_command_queue* cl_command_queue;
typedef struct _cl_mem* cl_mem;
typedef struct _cl_program* cl_program;
typedef struct _cl_kernel* cl_kernel;
typedef struct _cl_event* cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_NOT_FOUND (-1)
#define CL_BUILD_PROGRAM_FAILURE (-11)
#define CL_PLATFORM_NOT_FOUND_KHR (-1001)
#define CL_FALSE 0
#define CL_TRUE 1

#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902
#define CL_PLATFORM_VENDOR 0x0903

#define CL_DEVICE_TYPE_CPU (1 << 1)
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ACCELERATOR (1 << 3)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF

#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT 0x100A
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DEVICE_VENDOR 0x102C
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#define CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043

#define CL_CONTEXT_PLATFORM 0x1084
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_KERNEL_NUM_ARGS 0x1191
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283

/* X(return type, name, parameter list) for every function the target uses. */
#define XC_OPENCL_FUNCTIONS(X)                                                                        \
  X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id*, cl_uint*))                                   \
  X(cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void*, size_t*))            \
  X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*))       \
  X(cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void*, size_t*))                  \
  X(cl_context, clCreateContext,                                                                      \
    (const cl_context_properties*, cl_uint, const cl_device_id*,                                      \
     void (*)(const char*, const void*, size_t, void*), void*, cl_int*))                              \
  X(cl_int, clReleaseContext, (cl_context))                                                           \
  X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int*)) \
  X(cl_int, clReleaseCommandQueue, (cl_command_queue))                                                \
  X(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void*, cl_int*))                       \
  X(cl_int, clReleaseMemObject, (cl_mem))                                                             \
  X(cl_int, clEnqueueWriteBuffer,                                                                     \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint, const cl_event*, cl_event*)) \
  X(cl_int, clEnqueueReadBuffer,                                                                      \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*, cl_event*))  \
  X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char**, const size_t*, cl_int*)) \
  X(cl_int, clBuildProgram,                                                                           \
    (cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*))      \
  X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info, size_t, void*, size_t*)) \
  X(cl_int, clReleaseProgram, (cl_program))                                                           \
  X(cl_kernel, clCreateKernel, (cl_program, const char*, cl_int*))                                    \
  X(cl_int, clReleaseKernel, (cl_kernel))                                                             \
  X(cl_int, clGetKernelInfo, (cl_kernel, cl_kernel_info, size_t, void*, size_t*))                     \
  X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void*))                                \
  X(cl_int, clEnqueueNDRangeKernel,                                                                   \
    (cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint,      \
     const cl_event*, cl_event*))                                                                     \
  X(cl_int, clFinish, (cl_command_queue))                                                             \
  X(cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue, cl_uint, const cl_event*, cl_event*))     \
  X(cl_int, clWaitForEvents, (cl_uint, const cl_event*))                                              \
  X(cl_int, clGetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void*, size_t*))           \
  X(cl_int, clReleaseEvent, (cl_event))

typedef struct xc_opencl_api {
#define XC_OPENCL_MEMBER(ret, name, params) ret(*name) params;
  XC_OPENCL_FUNCTIONS(XC_OPENCL_MEMBER)
#undef XC_OPENCL_MEMBER
} xc_opencl_api_t;

#endif
