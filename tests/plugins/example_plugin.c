/* An example out-of-tree xcomp target plugin (docs/plugins.md walks through
 * it). It stands for a vendor accelerator whose runtime ships a fixed set of
 * kernels: a "program" (the blob) is a list of kernel names, one per line,
 * and loading it checks that the device has each of them. Memory is host
 * memory here; a real plugin would call its driver instead.
 *
 * Build: cc -shared -fPIC -I<xcomp>/include example_plugin.c -o example_plugin.so
 * It needs nothing from xcomp at link time: statuses are made with
 * host->error. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/target.h"

/* The version this plugin claims; the test build also makes a copy that
 * claims another version, which xcomp must refuse, and one built as a
 * version-3 plugin (XC_EXAMPLE_PLUGIN_V3: target "example_v3", a table that
 * ends where version 3 ended), which xcomp must still load. */
#ifdef XC_EXAMPLE_PLUGIN_V3
#define XC_EXAMPLE_PLUGIN_CLAIMED_VERSION 3
#define XC_EXAMPLE_TABLE_VERSION 3
#define XC_EXAMPLE_NAME "example_v3"
#else
#define XC_EXAMPLE_TABLE_VERSION XC_TARGET_API_VERSION
#define XC_EXAMPLE_NAME "example"
#endif
#ifndef XC_EXAMPLE_PLUGIN_CLAIMED_VERSION
#define XC_EXAMPLE_PLUGIN_CLAIMED_VERSION XC_TARGET_API_VERSION
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT int xc_target_plugin_api_version(void);
EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* host);

/* The host table is kept to make statuses. */
static const xc_target_host_t* g_host;

typedef struct example_buffer {
  size_t size;
  unsigned char* data;
} example_buffer_t;

/* Kernels the "device" has. Arguments: buffers then int64 scalars. */
typedef void (*example_kernel_fn)(void* const* buffers, const int64_t* scalars, int64_t programs);

static void kernel_add_f32(void* const* buffers, const int64_t* scalars, int64_t programs) {
  const float* a = (const float*)((example_buffer_t*)buffers[0])->data;
  const float* b = (const float*)((example_buffer_t*)buffers[1])->data;
  float* c = (float*)((example_buffer_t*)buffers[2])->data;
  for (int64_t i = 0; i < scalars[0]; i++) c[i] = a[i] + b[i];
}

/* x[i] *= scalars[1] for i < scalars[0]. */
static void kernel_scale_f32(void* const* buffers, const int64_t* scalars, int64_t programs) {
  float* x = (float*)((example_buffer_t*)buffers[0])->data;
  for (int64_t i = 0; i < scalars[0]; i++) x[i] *= (float)scalars[1];
}

static const struct {
  const char* name;
  example_kernel_fn fn;
  int buffers, scalars;
} kernels[] = {
    {"add_f32", kernel_add_f32, 3, 1},
    {"scale_f32", kernel_scale_f32, 1, 2},
};
enum { NUM_KERNELS = (int)(sizeof kernels / sizeof kernels[0]) };

static xc_status_t example_device_count(void* target, int* out_count) {
  *out_count = 1;
  return NULL;
}

static xc_status_t example_device_caps(void* target, int index, xc_device_caps_t* caps) {
  memset(caps, 0, sizeof *caps);
  strcpy(caps->name, "Example accelerator (host memory)");
  strcpy(caps->vendor, "Example Inc.");
  strcpy(caps->version, "1.0");
  caps->kind = XC_DEVICE_NPU;
  caps->compute_units = 4;
  caps->simd_width = 16;
  caps->max_threads_per_group = 64;
  caps->local_memory_bytes = 256 * 1024;
  caps->global_memory_bytes = (int64_t)1 << 30;
  caps->preferred_layout = XC_LAYOUT_NHWC;
  caps->dtypes = XC_DT(XC_F32) | XC_DT(XC_I8);
  caps->num_mma_shapes = 1;
  caps->mma_shapes[0] = (xc_mma_shape_t){16, 16, 32, XC_I8, XC_I32};
  caps->has_vendor_blas = false;
  return NULL;
}

/* It has no code generator: every tiled kernel is declined. */
static bool example_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                             char* why, size_t why_size) {
  if (why && why_size) {
    strncpy(why, "the example accelerator runs only its built-in kernels", why_size - 1);
    why[why_size - 1] = 0;
  }
  return false;
}

static xc_status_t example_device_open(void* target, int index, void** out_device) {
  static int device_tag;
  *out_device = &device_tag;
  return NULL;
}

static void example_device_close(void* device) {}

static xc_status_t example_buffer_alloc(void* device, size_t size, void** out_buffer) {
  example_buffer_t* b = calloc(1, sizeof *b);
  if (b) b->data = calloc(1, size ? size : 1);
  if (!b || !b->data) {
    free(b);
    return g_host->error(XC_RESOURCE_EXHAUSTED, "example: cannot allocate %zu bytes", size);
  }
  b->size = size;
  *out_buffer = b;
  return NULL;
}

#ifndef XC_EXAMPLE_PLUGIN_V3
/* Version 4: a buffer the host reads in place. The memory is host memory
 * anyway; a real plugin would map device-visible host memory here. */
static xc_status_t example_buffer_alloc_mapped(void* device, size_t size, void** out_buffer, void** out_host) {
  xc_status_t s = example_buffer_alloc(device, size, out_buffer);
  if (!s) *out_host = ((example_buffer_t*)*out_buffer)->data;
  return s;
}
#endif

static void example_buffer_free(void* device, void* buffer) {
  example_buffer_t* b = buffer;
  free(b->data);
  free(b);
}

static xc_status_t example_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  memcpy(((example_buffer_t*)buffer)->data + offset, src, size);
  return NULL;
}

static xc_status_t example_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  memcpy(dst, ((example_buffer_t*)buffer)->data + offset, size);
  return NULL;
}

static int find_kernel(const char* name, size_t length) {
  for (int i = 0; i < NUM_KERNELS; i++)
    if (strlen(kernels[i].name) == length && strncmp(kernels[i].name, name, length) == 0) return i;
  return -1;
}

/* The blob lists kernel names, one per line; the module is the set of them. */
static xc_status_t example_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  if (strcmp(blob->format, "example-ops") != 0)
    return g_host->error(XC_INVALID_ARGUMENT, "example: expected an example-ops blob, got '%s'", blob->format);
  unsigned* present = calloc(1, sizeof *present);
  if (!present) return g_host->error(XC_RESOURCE_EXHAUSTED, "example: out of memory");
  const char* p = (const char*)blob->bytes;
  const char* end = p + blob->size;
  while (p < end) {
    const char* line_end = memchr(p, '\n', (size_t)(end - p));
    if (!line_end) line_end = end;
    if (line_end > p) {
      int k = find_kernel(p, (size_t)(line_end - p));
      if (k < 0) {
        free(present);
        return g_host->error(XC_UNSUPPORTED, "example: the device has no kernel '%.*s'", (int)(line_end - p), p);
      }
      *present |= 1u << k;
    }
    p = line_end + 1;
  }
  *out_module = present;
  return NULL;
}

static void example_module_unload(void* device, void* module) { free(module); }

static xc_status_t example_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  int k = find_kernel(name, strlen(name));
  if (k < 0 || !(*(unsigned*)module & (1u << k)))
    return g_host->error(XC_NOT_FOUND, "example: the module has no kernel '%s'", name);
  *out_kernel = (void*)&kernels[k];
  return NULL;
}

static xc_status_t example_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  int k = (int)(((const char*)kernel - (const char*)&kernels[0]) / (ptrdiff_t)sizeof kernels[0]);
  if (args->num_buffers != kernels[k].buffers || args->num_scalars != kernels[k].scalars)
    return g_host->error(XC_INVALID_ARGUMENT, "example: %s takes %d buffers and %d scalars, got %d and %d",
                         kernels[k].name, kernels[k].buffers, kernels[k].scalars, args->num_buffers,
                         args->num_scalars);
  int64_t n = args->scalars[0];
  for (int i = 0; i < args->num_buffers; i++)
    if (n < 0 || (uint64_t)n > ((example_buffer_t*)args->buffers[i])->size / sizeof(float))
      return g_host->error(XC_OUT_OF_RANGE, "example: %s of %lld elements overruns buffer %d", kernels[k].name,
                           (long long)n, i);
  kernels[k].fn(args->buffers, args->scalars, args->grid[0] * args->grid[1] * args->grid[2]);
  return NULL;
}

/* The test build also makes a broken copy that leaves out a required entry:
 * registration fails, so init fails, and xcomp must report it and go on. */
#ifdef XC_EXAMPLE_PLUGIN_BROKEN
#define EXAMPLE_LAUNCH NULL
static xc_status_t (*const example_unused_launch)(void*, void*, const xc_launch_args_t*)
    __attribute__((unused)) = example_launch;
#else
#define EXAMPLE_LAUNCH example_launch
#endif

static const xc_target_iface_t example_iface = {
    .api_version = XC_EXAMPLE_TABLE_VERSION,
    .name = XC_EXAMPLE_NAME,
    .description = "example out-of-tree plugin: a host-memory accelerator with built-in kernels",
    .device_count = example_device_count,
    .device_caps = example_device_caps,
    .supports = example_supports,
    /* No emit: xc_target_emit reports XC_UNSUPPORTED. No compile: the blob
     * is the source text. No synchronize: launches are synchronous. No
     * events: xcomp times on the host clock. */
    .device_open = example_device_open,
    .device_close = example_device_close,
    .buffer_alloc = example_buffer_alloc,
    .buffer_free = example_buffer_free,
    .buffer_write = example_buffer_write,
    .buffer_read = example_buffer_read,
    .module_load = example_module_load,
    .module_unload = example_module_unload,
    .kernel_get = example_kernel_get,
    .launch = EXAMPLE_LAUNCH,
#ifndef XC_EXAMPLE_PLUGIN_V3
    .buffer_alloc_mapped = example_buffer_alloc_mapped,
#endif
};

EXPORT int xc_target_plugin_api_version(void) { return XC_EXAMPLE_PLUGIN_CLAIMED_VERSION; }

EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* host) {
  if (api_version != XC_EXAMPLE_TABLE_VERSION)
    return host->error(XC_UNSUPPORTED, "example plugin: built for API %d, host has %d", XC_EXAMPLE_TABLE_VERSION,
                       api_version);
  g_host = host;
#ifdef XC_EXAMPLE_PLUGIN_V3
  /* What a plugin compiled against the version-3 header registers: a table
   * that ends before the version-4 entries (reading past it is an overrun
   * the sanitizer build would see). Kept for the life of the process. */
  static void* table;
  if (!table) table = malloc(offsetof(xc_target_iface_t, buffer_alloc_mapped));
  if (!table) return host->error(XC_RESOURCE_EXHAUSTED, "example plugin: out of memory");
  memcpy(table, &example_iface, offsetof(xc_target_iface_t, buffer_alloc_mapped));
  return host->register_target(host, (const xc_target_iface_t*)table, NULL);
#else
  return host->register_target(host, &example_iface, NULL);
#endif
}
