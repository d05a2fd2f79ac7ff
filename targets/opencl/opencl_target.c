/* The opencl target runtime: libOpenCL.so.1 loaded with dlopen (no link-time
 * dependency), devices of every platform numbered in order, one context and
 * an in-order profiling queue per opened device, programs built from OpenCL C
 * 1.2 source (the blob is the source; its options are the build options).
 *
 * A launch of grid G and threads T is an NDRange of global size G*T and
 * local size T: one program = one work-group. Kernel arguments are the
 * buffers (cl_mem) then the scalars (cl_long), in order. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cstyle/cstyle.h"
#include "../targets_internal.h"
#include "opencl_api.h"

typedef struct cl_target {
  bool loaded;
  xc_status_t load_error;  /* why the library or a platform is missing */
  void* library;
  xc_opencl_api_t api;
  int num_devices;
  cl_device_id* devices;
  cl_platform_id* device_platforms;
} cl_target_t;

typedef struct cl_device_ctx {
  cl_target_t* target;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  bool marker_profiling;  /* markers carry timestamps (else host timing) */
} cl_device_ctx_t;

typedef struct cl_kernel_ctx {
  cl_kernel kernel;
  cl_uint num_args;
  struct cl_kernel_ctx* next;
} cl_kernel_ctx_t;

typedef struct cl_module_ctx {
  cl_program program;
  cl_kernel_ctx_t* kernels;
} cl_module_ctx_t;

typedef struct cl_event_ctx {
  cl_event event;   /* NULL when timed on the host */
  double host_ms;
} cl_event_ctx_t;

#define INSTALL_HINT "install ocl-icd-libopencl1 and a driver such as pocl-opencl-icd"

static const char* cl_error_name(cl_int e) {
  switch (e) {
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -7: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -53: return "CL_INVALID_WORK_DIMENSION";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -56: return "CL_INVALID_GLOBAL_OFFSET";
    case -58: return "CL_INVALID_EVENT";
    case -59: return "CL_INVALID_OPERATION";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  return "unknown OpenCL error";
}

static xc_status_t cl_fail(cl_int e, const char* what) {
  xc_code_t code = (e == -4 || e == -5 || e == -6) ? XC_RESOURCE_EXHAUSTED : XC_INTERNAL;
  if (e == -46 || e == -49 || e == -50 || e == -51 || e == -52 || e == -53 || e == -54 || e == -55 || e == -63)
    code = XC_INVALID_ARGUMENT;
  return xc_error(code, "opencl: %s failed: %s (%d)", what, cl_error_name(e), (int)e);
}

#define CL_CHECK(expr, what)                  \
  do {                                        \
    cl_int cl_err_ = (expr);                  \
    if (cl_err_ != CL_SUCCESS) return cl_fail(cl_err_, what); \
  } while (0)

/* ---- loading the library and enumerating devices (once) ---- */

static xc_status_t cl_load_library(cl_target_t* t) {
  const char* override = getenv("XCOMP_OPENCL_LIBRARY");
  /* XCOMP_OPENCL_LIBRARY names the one library to use (tests, unusual installs). */
  if (override && *override) {
    t->library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
  } else {
    t->library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!t->library) t->library = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!t->library)
    return xc_error(XC_UNAVAILABLE, "target opencl unavailable: %s not found — " INSTALL_HINT,
                    override && *override ? override : "libOpenCL.so.1");
#define XC_OPENCL_RESOLVE(ret, name, params)                                                          \
  *(void**)&t->api.name = dlsym(t->library, #name);                                                   \
  if (!t->api.name)                                                                                   \
    return xc_error(XC_UNAVAILABLE,                                                                   \
                    "target opencl unavailable: the OpenCL library lacks " #name                      \
                    " (OpenCL 1.2 is needed) — " INSTALL_HINT);
  XC_OPENCL_FUNCTIONS(XC_OPENCL_RESOLVE)
#undef XC_OPENCL_RESOLVE
  return NULL;
}

static xc_status_t cl_enumerate(cl_target_t* t) {
  cl_uint num_platforms = 0;
  cl_int e = t->api.clGetPlatformIDs(0, NULL, &num_platforms);
  if (e == CL_PLATFORM_NOT_FOUND_KHR || (e == CL_SUCCESS && num_platforms == 0))
    return xc_error(XC_UNAVAILABLE,
                    "target opencl unavailable: no OpenCL platform (libOpenCL.so.1 is present but no "
                    "driver is registered in /etc/OpenCL/vendors) — install a driver such as pocl-opencl-icd");
  CL_CHECK(e, "clGetPlatformIDs");
  cl_platform_id* platforms = calloc(num_platforms, sizeof *platforms);
  if (!platforms) return xc_error_oom();
  e = t->api.clGetPlatformIDs(num_platforms, platforms, NULL);
  if (e != CL_SUCCESS) {
    free(platforms);
    return cl_fail(e, "clGetPlatformIDs");
  }
  for (cl_uint p = 0; p < num_platforms; p++) {
    cl_uint n = 0;
    e = t->api.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
    if (e != CL_SUCCESS || n == 0) continue; /* a platform without devices is skipped */
    cl_device_id* grown = realloc(t->devices, (size_t)(t->num_devices + (int)n) * sizeof *grown);
    if (grown) t->devices = grown;
    cl_platform_id* grown_p =
        realloc(t->device_platforms, (size_t)(t->num_devices + (int)n) * sizeof *grown_p);
    if (grown_p) t->device_platforms = grown_p;
    if (!grown || !grown_p) {
      free(platforms);
      return xc_error_oom();
    }
    if (t->api.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n, t->devices + t->num_devices, NULL) != CL_SUCCESS)
      continue;
    for (cl_uint i = 0; i < n; i++) t->device_platforms[t->num_devices + (int)i] = platforms[p];
    t->num_devices += (int)n;
  }
  free(platforms);
  if (t->num_devices == 0)
    return xc_error(XC_UNAVAILABLE, "target opencl unavailable: the OpenCL platforms have no devices");
  return NULL;
}

static xc_status_t cl_probe(void* target) {
  cl_target_t* t = target;
  if (!t->loaded) {
    t->loaded = true;
    t->load_error = cl_load_library(t);
    if (!t->load_error) t->load_error = cl_enumerate(t);
  }
  if (!t->load_error) return NULL;
  return xc_error(xc_status_code(t->load_error), "%s", xc_status_message(t->load_error));
}

static xc_status_t cl_device_count(void* target, int* out_count) {
  cl_target_t* t = target;
  XC_RETURN_IF_ERROR(cl_probe(t));
  *out_count = t->num_devices;
  return NULL;
}

/* ---- capabilities ---- */

static void cl_info_string(cl_target_t* t, cl_device_id d, cl_device_info what, char* out, size_t size) {
  out[0] = 0;
  if (t->api.clGetDeviceInfo(d, what, size, out, NULL) != CL_SUCCESS) out[0] = 0;
  out[size - 1] = 0;
}

static cl_ulong cl_info_ulong(cl_target_t* t, cl_device_id d, cl_device_info what, size_t width) {
  cl_ulong v = 0;
  if (width == sizeof(cl_uint)) {
    cl_uint u = 0;
    if (t->api.clGetDeviceInfo(d, what, sizeof u, &u, NULL) == CL_SUCCESS) v = u;
  } else if (width == sizeof(size_t)) {
    size_t s = 0;
    if (t->api.clGetDeviceInfo(d, what, sizeof s, &s, NULL) == CL_SUCCESS) v = s;
  } else {
    if (t->api.clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) v = 0;
  }
  return v;
}

static xc_status_t cl_device_caps(void* target, int index, xc_device_caps_t* caps) {
  cl_target_t* t = target;
  cl_device_id d = t->devices[index];
  memset(caps, 0, sizeof *caps);
  cl_info_string(t, d, CL_DEVICE_NAME, caps->name, sizeof caps->name);
  cl_info_string(t, d, CL_DEVICE_VENDOR, caps->vendor, sizeof caps->vendor);
  cl_info_string(t, d, CL_DRIVER_VERSION, caps->version, sizeof caps->version);
  cl_ulong type = cl_info_ulong(t, d, CL_DEVICE_TYPE, sizeof(cl_ulong));
  caps->kind = (type & CL_DEVICE_TYPE_GPU) ? XC_DEVICE_GPU : (type & CL_DEVICE_TYPE_CPU) ? XC_DEVICE_CPU : XC_DEVICE_NPU;
  caps->compute_units = (int)cl_info_ulong(t, d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cl_uint));
  size_t wg = (size_t)cl_info_ulong(t, d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(size_t));
  caps->max_threads_per_group = wg > (1u << 30) ? (1 << 30) : (int)wg;
  caps->local_memory_bytes = (int64_t)cl_info_ulong(t, d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(cl_ulong));
  caps->global_memory_bytes = (int64_t)cl_info_ulong(t, d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(cl_ulong));
  caps->max_buffer_bytes = (int64_t)cl_info_ulong(t, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(cl_ulong));

  char* ext = malloc(16384);
  if (ext) cl_info_string(t, d, CL_DEVICE_EXTENSIONS, ext, 16384);
  int simd = 0;
  if (ext && strstr(ext, "cl_nv_device_attribute_query"))
    simd = (int)cl_info_ulong(t, d, CL_DEVICE_WARP_SIZE_NV, sizeof(cl_uint));
  else if (ext && strstr(ext, "cl_amd_device_attribute_query"))
    simd = (int)cl_info_ulong(t, d, CL_DEVICE_WAVEFRONT_WIDTH_AMD, sizeof(cl_uint));
  if (simd <= 0) {
    if (xc_targets_contains_ci(caps->vendor, "nvidia")) simd = 32;
    else if (caps->kind == XC_DEVICE_GPU && (xc_targets_contains_ci(caps->vendor, "amd") || xc_targets_contains_ci(caps->vendor, "advanced micro")))
      simd = 64;
    else simd = (int)cl_info_ulong(t, d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof(cl_uint));
  }
  caps->simd_width = simd > 0 ? simd : 1;
  caps->preferred_layout = caps->kind == XC_DEVICE_CPU ? XC_LAYOUT_NHWC : XC_LAYOUT_NCHW;
  /* OpenCL C always has these; the rest depend on extensions. */
  caps->dtypes = XC_DT(XC_F32) | XC_DT(XC_I8) | XC_DT(XC_I16) | XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U8) |
                 XC_DT(XC_U16) | XC_DT(XC_U32) | XC_DT(XC_U64) | XC_DT(XC_BOOL);
  if (cl_info_ulong(t, d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(cl_ulong)) != 0 || (ext && strstr(ext, "cl_khr_fp64")))
    caps->dtypes |= XC_DT(XC_F64);
  if (ext && strstr(ext, "cl_khr_fp16")) caps->dtypes |= XC_DT(XC_F16);
  free(ext);
  caps->num_mma_shapes = 0; /* OpenCL C 1.2 exposes no matrix instructions */
  caps->has_vendor_blas = false;
  return NULL;
}

/* ---- compile: the blob is the source plus its build options ---- */

static xc_status_t cl_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                              const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (source->language && strcmp(source->language, "opencl-c") != 0)
    return xc_error(XC_UNSUPPORTED, "opencl target builds OpenCL C (opencl-c), not %s", source->language);
  /* XCOMP_OPENCL_FLAGS: build options when the request names none (as
   * XCOMP_CPU_CFLAGS for the cpu target; part of the compile-cache key). */
  const char* flags = options->flags ? options->flags : getenv("XCOMP_OPENCL_FLAGS");
  if (!flags) flags = "";
  const char* extra = options->extra_flags ? options->extra_flags : "";
  size_t n = strlen(source->text);
  size_t m = strlen(flags) + strlen(extra) + 2;
  out_blob->bytes = malloc(n + 1);
  out_blob->options = malloc(m);
  if (!out_blob->bytes || !out_blob->options) return xc_error_oom(); /* the caller releases the blob */
  memcpy(out_blob->bytes, source->text, n + 1);
  out_blob->size = n;
  snprintf(out_blob->options, m, "%s%s%s", flags, *flags && *extra ? " " : "", extra);
  snprintf(out_blob->format, sizeof out_blob->format, "opencl-c");
  return NULL;
}

/* ---- devices ---- */

static xc_status_t cl_device_open(void* target, int index, void** out_device) {
  cl_target_t* t = target;
  cl_device_ctx_t* dev = calloc(1, sizeof *dev);
  if (!dev) return xc_error_oom();
  dev->target = t;
  dev->device = t->devices[index];
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)t->device_platforms[index], 0};
  cl_int e = CL_SUCCESS;
  dev->context = t->api.clCreateContext(props, 1, &dev->device, NULL, NULL, &e);
  if (!dev->context || e != CL_SUCCESS) {
    free(dev);
    return cl_fail(e, "clCreateContext");
  }
  dev->queue = t->api.clCreateCommandQueue(dev->context, dev->device, CL_QUEUE_PROFILING_ENABLE, &e);
  if (!dev->queue || e != CL_SUCCESS) {
    t->api.clReleaseContext(dev->context);
    free(dev);
    return cl_fail(e, "clCreateCommandQueue");
  }
  /* Do markers carry profiling timestamps here? (Not every driver does.) */
  cl_event marker = NULL;
  if (t->api.clEnqueueMarkerWithWaitList(dev->queue, 0, NULL, &marker) == CL_SUCCESS && marker) {
    cl_ulong end = 0;
    t->api.clWaitForEvents(1, &marker);
    dev->marker_profiling =
        t->api.clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == CL_SUCCESS &&
        end != 0;
    t->api.clReleaseEvent(marker);
  }
  *out_device = dev;
  return NULL;
}

static void cl_device_close(void* device) {
  cl_device_ctx_t* dev = device;
  xc_opencl_api_t* api = &dev->target->api;
  api->clFinish(dev->queue);
  api->clReleaseCommandQueue(dev->queue);
  api->clReleaseContext(dev->context);
  free(dev);
}

static xc_status_t cl_synchronize(void* device) {
  cl_device_ctx_t* dev = device;
  CL_CHECK(dev->target->api.clFinish(dev->queue), "clFinish");
  return NULL;
}

/* ---- buffers ---- */

static xc_status_t cl_buffer_alloc(void* device, size_t size, void** out_buffer) {
  cl_device_ctx_t* dev = device;
  cl_int e = CL_SUCCESS;
  /* OpenCL refuses empty buffers; an empty tensor still gets a handle. */
  cl_mem m = dev->target->api.clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size ? size : 1, NULL, &e);
  if (!m || e != CL_SUCCESS) {
    xc_status_t st = cl_fail(e, "clCreateBuffer");
    return xc_status_annotate(st, "allocating %zu bytes", size);
  }
  *out_buffer = m;
  return NULL;
}

static void cl_buffer_free(void* device, void* buffer) {
  cl_device_ctx_t* dev = device;
  dev->target->api.clReleaseMemObject((cl_mem)buffer);
}

static xc_status_t cl_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  cl_device_ctx_t* dev = device;
  CL_CHECK(dev->target->api.clEnqueueWriteBuffer(dev->queue, (cl_mem)buffer, CL_TRUE, offset, size, src, 0, NULL, NULL),
           "clEnqueueWriteBuffer");
  return NULL;
}

static xc_status_t cl_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  cl_device_ctx_t* dev = device;
  CL_CHECK(dev->target->api.clEnqueueReadBuffer(dev->queue, (cl_mem)buffer, CL_TRUE, offset, size, dst, 0, NULL, NULL),
           "clEnqueueReadBuffer");
  return NULL;
}

/* ---- modules and kernels ---- */

static xc_status_t cl_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  cl_device_ctx_t* dev = device;
  xc_opencl_api_t* api = &dev->target->api;
  if (strcmp(blob->format, "opencl-c") != 0)
    return xc_error(XC_INVALID_ARGUMENT, "opencl: a module must be an opencl-c blob, not '%s'", blob->format);
  /* The source need not be NUL-terminated: pass its length. */
  const char* text = (const char*)blob->bytes;
  size_t length = blob->size;
  cl_int e = CL_SUCCESS;
  cl_program program = api->clCreateProgramWithSource(dev->context, 1, &text, &length, &e);
  if (!program || e != CL_SUCCESS) return cl_fail(e, "clCreateProgramWithSource");
  const char* options = blob->options ? blob->options : "";
  e = api->clBuildProgram(program, 1, &dev->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    size_t log_size = 0;
    api->clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    if (log_size > 16000) log_size = 16000;
    char* log = calloc(1, log_size + 1);
    if (log && log_size)
      api->clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
    xc_status_t st = xc_error(e == CL_BUILD_PROGRAM_FAILURE ? XC_INVALID_ARGUMENT : XC_INTERNAL,
                              "opencl: building the program failed: %s (%d); options \"%s\"; build log:\n%s",
                              cl_error_name(e), (int)e, options, log ? log : "");
    free(log);
    api->clReleaseProgram(program);
    return st;
  }
  cl_module_ctx_t* m = calloc(1, sizeof *m);
  if (!m) {
    api->clReleaseProgram(program);
    return xc_error_oom();
  }
  m->program = program;
  *out_module = m;
  return NULL;
}

static void cl_module_unload(void* device, void* module) {
  cl_device_ctx_t* dev = device;
  cl_module_ctx_t* m = module;
  for (cl_kernel_ctx_t* k = m->kernels; k;) {
    cl_kernel_ctx_t* next = k->next;
    dev->target->api.clReleaseKernel(k->kernel);
    free(k);
    k = next;
  }
  dev->target->api.clReleaseProgram(m->program);
  free(m);
}

static xc_status_t cl_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  cl_device_ctx_t* dev = device;
  cl_module_ctx_t* m = module;
  cl_int e = CL_SUCCESS;
  cl_kernel kernel = dev->target->api.clCreateKernel(m->program, name, &e);
  if (!kernel || e != CL_SUCCESS) {
    if (e == -46) return xc_error(XC_NOT_FOUND, "opencl: the program has no kernel '%s'", name);
    return cl_fail(e, "clCreateKernel");
  }
  cl_kernel_ctx_t* k = calloc(1, sizeof *k);
  if (!k) {
    dev->target->api.clReleaseKernel(kernel);
    return xc_error_oom();
  }
  k->kernel = kernel;
  cl_int e2 = dev->target->api.clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof k->num_args, &k->num_args, NULL);
  if (e2 != CL_SUCCESS) {
    dev->target->api.clReleaseKernel(kernel);
    free(k);
    return cl_fail(e2, "clGetKernelInfo");
  }
  k->next = m->kernels;
  m->kernels = k;
  *out_kernel = k;
  return NULL;
}

static xc_status_t cl_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  cl_device_ctx_t* dev = device;
  xc_opencl_api_t* api = &dev->target->api;
  cl_kernel k = ((cl_kernel_ctx_t*)kernel)->kernel;
  cl_uint expected = ((cl_kernel_ctx_t*)kernel)->num_args;
  /* Arguments persist between launches in OpenCL: a short list would
   * silently reuse stale values, so the count must match exactly. */
  if ((cl_uint)(args->num_buffers + args->num_scalars) != expected)
    return xc_error(XC_INVALID_ARGUMENT, "opencl: the kernel takes %u arguments, the launch passes %d buffers and %d scalars",
                    expected, args->num_buffers, args->num_scalars);
  cl_uint index = 0;
  for (int i = 0; i < args->num_buffers; i++, index++) {
    cl_mem m = (cl_mem)args->buffers[i];
    cl_int e = api->clSetKernelArg(k, index, sizeof m, &m);
    if (e != CL_SUCCESS) return xc_status_annotate(cl_fail(e, "clSetKernelArg"), "buffer argument %d", i);
  }
  for (int i = 0; i < args->num_scalars; i++, index++) {
    cl_long v = args->scalars[i];
    cl_int e = api->clSetKernelArg(k, index, sizeof v, &v);
    if (e != CL_SUCCESS) return xc_status_annotate(cl_fail(e, "clSetKernelArg"), "scalar argument %d", i);
  }
  cl_uint dims = 1;
  for (int i = 1; i < 3; i++)
    if (args->grid[i] > 1 || args->threads[i] > 1) dims = (cl_uint)i + 1;
  size_t global[3], local[3];
  for (int i = 0; i < 3; i++) {
    int64_t g;
    if (!xc_mul_i64(args->grid[i], args->threads[i], &g) || (uint64_t)g > (uint64_t)SIZE_MAX)
      return xc_error(XC_OUT_OF_RANGE, "opencl: global size overflows");
    global[i] = (size_t)g;
    local[i] = (size_t)args->threads[i];
  }
  CL_CHECK(api->clEnqueueNDRangeKernel(dev->queue, k, dims, NULL, global, local, 0, NULL, NULL),
           "clEnqueueNDRangeKernel");
  return NULL;
}

/* ---- events ---- */

static xc_status_t cl_event_record(void* device, void** out_event) {
  cl_device_ctx_t* dev = device;
  cl_event_ctx_t* ev = calloc(1, sizeof *ev);
  if (!ev) return xc_error_oom();
  if (dev->marker_profiling) {
    cl_int e = dev->target->api.clEnqueueMarkerWithWaitList(dev->queue, 0, NULL, &ev->event);
    if (e != CL_SUCCESS) {
      free(ev);
      return cl_fail(e, "clEnqueueMarkerWithWaitList");
    }
  } else {
    cl_int e = dev->target->api.clFinish(dev->queue);
    if (e != CL_SUCCESS) {
      free(ev);
      return cl_fail(e, "clFinish");
    }
    ev->host_ms = xc_targets_now_ms();
  }
  *out_event = ev;
  return NULL;
}

static xc_status_t cl_event_time(cl_device_ctx_t* dev, cl_event_ctx_t* ev, double* out_ms) {
  if (!ev->event) {
    *out_ms = ev->host_ms;
    return NULL;
  }
  CL_CHECK(dev->target->api.clWaitForEvents(1, &ev->event), "clWaitForEvents");
  cl_ulong ns = 0;
  CL_CHECK(dev->target->api.clGetEventProfilingInfo(ev->event, CL_PROFILING_COMMAND_END, sizeof ns, &ns, NULL),
           "clGetEventProfilingInfo");
  *out_ms = (double)ns * 1e-6;
  return NULL;
}

static xc_status_t cl_event_elapsed_ms(void* device, void* start, void* end, double* out_ms) {
  cl_device_ctx_t* dev = device;
  double a = 0, b = 0;
  XC_RETURN_IF_ERROR(cl_event_time(dev, end, &b));
  XC_RETURN_IF_ERROR(cl_event_time(dev, start, &a));
  *out_ms = b - a;
  return NULL;
}

static void cl_event_free(void* device, void* event) {
  cl_device_ctx_t* dev = device;
  cl_event_ctx_t* ev = event;
  if (ev->event) dev->target->api.clReleaseEvent(ev->event);
  free(ev);
}

static void cl_target_free(void* target) {
  cl_target_t* t = target;
  xc_status_free(t->load_error);
  free(t->devices);
  free(t->device_platforms);
  /* The library stays loaded: drivers often do not survive being unloaded. */
  free(t);
}

/* Kernel emission: the C-family emitter with the OpenCL C dialect (targets/cstyle/). */
static bool cl_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                        char* why, size_t why_size) {
  (void)target;
  return xc_cstyle_supports(&xc_cstyle_dialect_opencl, caps, kernel, why, why_size);
}

static xc_status_t cl_schedule(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout) {
  (void)target;
  return xc_cstyle_schedule(&xc_cstyle_dialect_opencl, caps, kernel, limits, flags, NULL, inout);
}

static xc_status_t cl_emit(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                           const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  (void)target;
  return xc_cstyle_emit(&xc_cstyle_dialect_opencl, caps, kernel, knobs, num_knobs, NULL, out_source);
}

static const xc_target_iface_t cl_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .name = "opencl",
    .description = "OpenCL 1.2 devices through libOpenCL.so.1 (any vendor's driver: PoCL, NVIDIA, AMD, Intel)",
    .probe = cl_probe,
    .device_count = cl_device_count,
    .device_caps = cl_device_caps,
    .supports = cl_supports,
    .emit = cl_emit,
    .schedule = cl_schedule,
    .compile = cl_compile,
    .device_open = cl_device_open,
    .device_close = cl_device_close,
    .buffer_alloc = cl_buffer_alloc,
    .buffer_free = cl_buffer_free,
    .buffer_host_pointer = NULL,
    .buffer_write = cl_buffer_write,
    .buffer_read = cl_buffer_read,
    .module_load = cl_module_load,
    .module_unload = cl_module_unload,
    .kernel_get = cl_kernel_get,
    .launch = cl_launch,
    .synchronize = cl_synchronize,
    .event_record = cl_event_record,
    .event_elapsed_ms = cl_event_elapsed_ms,
    .event_free = cl_event_free,
    .target_free = cl_target_free,
};

xc_status_t xc_target_opencl_init(int api_version, const xc_target_host_t* host) {
  cl_target_t* t = calloc(1, sizeof *t);
  if (!t) return xc_error_oom();
  return host->register_target(host, &cl_iface, t);
}
