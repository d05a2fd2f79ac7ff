/* The public functions of xcomp/target.h over the interface tables: argument
 * checks, the defaults for optional entries, and the handle objects
 * (device, buffer, module, kernel, event) that wrap the targets' contexts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "targets_internal.h"

struct xc_device {
  xc_target_t* target;
  void* context;
  xc_device_caps_t caps;
  int index;       /* the target's device index */
  bool capturing;  /* between xc_device_capture_begin and _end */
};

struct xc_launch_graph {
  xc_device_t* device;
  void* context;
};

/* Operations other than launches are refused while a device captures. */
static xc_status_t not_capturing(const xc_device_t* d, const char* what) {
  if (d && d->capturing)
    return xc_error(XC_INVALID_ARGUMENT, "%s while the device is capturing a launch graph", what);
  return NULL;
}

struct xc_buffer {
  xc_device_t* device;
  void* context;
  size_t size;
  void* mapped;  /* host address from buffer_alloc_mapped; NULL otherwise */
};

typedef struct module_kernel {
  xc_kernel_t* kernel;
  struct module_kernel* next;
} module_kernel_t;

struct xc_module {
  xc_device_t* device;
  void* context;
  module_kernel_t* kernels;
};

struct xc_kernel {
  xc_module_t* module;
  void* context;
  char* name;
};

struct xc_event {
  xc_device_t* device;
  void* context;   /* target's event; NULL when timed on the host */
  double host_ms;
};

#define IFACE(dev) ((dev)->target->iface)

/* ---- vendor GEMM descriptors ---- */

static void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_i64(uint8_t* p, int64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}
static uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static int64_t get_i64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return (int64_t)v;
}

/* magic "XCVGEMM1", dtype, flags (trans_a, trans_b, allow_tf32), epilogue,
 * a, b, bias+1, y (u32 each), m, n, k (i64) */
void xc_vendor_gemm_pack(const xc_vendor_gemm_t* g, uint8_t out[XC_VENDOR_GEMM_BYTES]) {
  memset(out, 0, XC_VENDOR_GEMM_BYTES);
  memcpy(out, "XCVGEMM1", 8);
  put_u32(out + 8, (uint32_t)g->dtype);
  put_u32(out + 12, (g->trans_a ? 1u : 0u) | (g->trans_b ? 2u : 0u) | (g->allow_tf32 ? 4u : 0u));
  put_u32(out + 16, (uint32_t)g->epilogue);
  put_u32(out + 20, (uint32_t)g->a);
  put_u32(out + 24, (uint32_t)g->b);
  put_u32(out + 28, (uint32_t)(g->bias + 1));
  put_u32(out + 32, (uint32_t)g->y);
  bool swiglu = g->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A || g->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_B;
  put_u32(out + 36, swiglu ? (uint32_t)(g->u + 1) : 0u);
  put_i64(out + 40, g->m);
  put_i64(out + 48, g->n);
  put_i64(out + 56, g->k);
}

xc_status_t xc_vendor_gemm_unpack(const uint8_t* b, size_t size, xc_vendor_gemm_t* g) {
  memset(g, 0, sizeof *g);
  if (!b || size != XC_VENDOR_GEMM_BYTES || memcmp(b, "XCVGEMM1", 8) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "malformed %s blob (%zu bytes)", XC_VENDOR_GEMM_FORMAT, size);
  uint32_t dt = get_u32(b + 8), flags = get_u32(b + 12), ep = get_u32(b + 16);
  g->dtype = (xc_dtype_t)dt;
  g->trans_a = flags & 1u;
  g->trans_b = (flags & 2u) != 0;
  g->allow_tf32 = (flags & 4u) != 0;
  g->epilogue = (xc_vendor_epilogue_t)ep;
  g->a = (int)get_u32(b + 20);
  g->b = (int)get_u32(b + 24);
  g->bias = (int)get_u32(b + 28) - 1;
  g->y = (int)get_u32(b + 32);
  uint32_t u1 = get_u32(b + 36);
  g->u = (int)u1 - 1;
  g->m = get_i64(b + 40);
  g->n = get_i64(b + 48);
  g->k = get_i64(b + 56);
  bool has_bias = ep == XC_VENDOR_EPILOGUE_BIAS || ep == XC_VENDOR_EPILOGUE_BIAS_RELU || ep == XC_VENDOR_EPILOGUE_BIAS_GELU;
  bool swiglu = ep == XC_VENDOR_EPILOGUE_SWIGLU_A || ep == XC_VENDOR_EPILOGUE_SWIGLU_B;
  if (!(dt == XC_F32 || dt == XC_F16 || dt == XC_BF16) || flags > 7u || ep > XC_VENDOR_EPILOGUE_SWIGLU_B ||
      (swiglu ? (u1 < 1 || u1 > XC_TARGET_MAX_ARGS) : u1 != 0) ||
      g->m < 1 || g->n < 1 || g->k < 1 || g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX ||
      (swiglu && g->u == g->y) || g->a < 0 || g->a >= XC_TARGET_MAX_ARGS || g->b < 0 ||
      g->b >= XC_TARGET_MAX_ARGS || g->y < 0 || g->y >= XC_TARGET_MAX_ARGS || g->bias >= XC_TARGET_MAX_ARGS ||
      (g->bias >= 0) != has_bias)
    return xc_error(XC_INVALID_ARGUMENT, "%s blob: fields out of range", XC_VENDOR_GEMM_FORMAT);
  return NULL;
}

void xc_kernel_source_release(xc_kernel_source_t* source) {
  if (!source) return;
  free((void*)source->text);
  source->text = NULL;
}

void xc_blob_release(xc_blob_t* blob) {
  if (!blob) return;
  free(blob->bytes);
  free(blob->options);
  memset(blob, 0, sizeof *blob);
}

/* ---- helpers shared by the targets ---- */

xc_status_t xc_targets_read_file(const char* path, uint8_t** out_bytes, size_t* out_size) {
  *out_bytes = NULL;
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return xc_error(XC_IO, "cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  uint8_t* buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    uint8_t* grown = realloc(buf, cap * 2 + 1);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  bool failed = buf && ferror(f);
  fclose(f);
  if (!buf) return xc_error_oom();
  if (failed) {
    free(buf);
    return xc_error(XC_IO, "error reading %s", path);
  }
  buf[n] = 0;
  *out_bytes = buf;
  *out_size = n;
  return NULL;
}

xc_status_t xc_targets_write_file(const char* path, const void* bytes, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f) return xc_error(XC_IO, "cannot create %s: %s", path, strerror(errno));
  bool ok = fwrite(bytes, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  return ok ? NULL : xc_error(XC_IO, "error writing %s", path);
}

bool xc_targets_contains_ci(const char* haystack, const char* needle) {
  size_t n = strlen(needle);
  if (n == 0) return true;
  for (; *haystack; haystack++)
    if (strncasecmp(haystack, needle, n) == 0) return true;
  return false;
}

double xc_targets_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- compile side ---- */

bool xc_target_supports(xc_target_t* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                        char* why, size_t why_size) {
  if (why && why_size) why[0] = 0;
  if (!t || !caps || !kernel) {
    if (why && why_size) snprintf(why, why_size, "xc_target_supports: NULL argument");
    return false;
  }
  if (!t->iface->supports) return true;
  return t->iface->supports(t->context, caps, kernel, why, why_size);
}

xc_status_t xc_target_emit(xc_target_t* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                           const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  if (out_source) memset(out_source, 0, sizeof *out_source);
  if (!t || !caps || !kernel || !out_source || num_knobs < 0 || (num_knobs && !knobs))
    return xc_error(XC_INVALID_ARGUMENT, "xc_target_emit: bad argument");
  if (!t->iface->emit)
    return xc_error(XC_UNSUPPORTED, "target %s has no kernel emitter in this build", t->iface->name);
  xc_status_t st = t->iface->emit(t->context, caps, kernel, knobs, num_knobs, out_source);
  if (!st && !out_source->text) st = xc_error(XC_INTERNAL, "target %s: emit produced no source", t->iface->name);
  if (st) xc_kernel_source_release(out_source);
  return st;
}

xc_status_t xc_target_compile(xc_target_t* t, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                              const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (out_blob) memset(out_blob, 0, sizeof *out_blob);
  if (!t || !caps || !source || !source->text || !out_blob)
    return xc_error(XC_INVALID_ARGUMENT, "xc_target_compile: NULL argument");
  xc_compile_options_t defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!options) options = &defaults;
  if (!t->iface->compile) {
    /* Default: the blob is the source itself. */
    size_t n = strlen(source->text);
    out_blob->bytes = malloc(n + 1);
    if (!out_blob->bytes) return xc_error_oom();
    memcpy(out_blob->bytes, source->text, n + 1);
    out_blob->size = n;
    snprintf(out_blob->format, sizeof out_blob->format, "%s", source->language ? source->language : "source");
    if (options->extra_flags) {
      size_t m = strlen(options->extra_flags) + 1;
      out_blob->options = malloc(m);
      if (!out_blob->options) {
        xc_blob_release(out_blob);
        return xc_error_oom();
      }
      memcpy(out_blob->options, options->extra_flags, m);
    }
    return NULL;
  }
  xc_status_t st = t->iface->compile(t->context, caps, source, options, out_blob);
  if (st) xc_blob_release(out_blob);
  return st;
}

xc_status_t xc_target_compile_kernel(xc_target_t* t, const xc_device_caps_t* caps,
                                     const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                                     const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (out_blob) memset(out_blob, 0, sizeof *out_blob);
  if (!t || !out_blob) return xc_error(XC_INVALID_ARGUMENT, "xc_target_compile_kernel: NULL argument");
  char why[512];
  if (!xc_target_supports(t, caps, kernel, why, sizeof why))
    return xc_error(XC_UNSUPPORTED, "target %s does not support this kernel: %s", t->iface->name,
                    why[0] ? why : "declined");
  xc_kernel_source_t source;
  XC_RETURN_IF_ERROR(xc_target_emit(t, caps, kernel, knobs, num_knobs, &source));
  xc_status_t st = xc_target_compile(t, caps, &source, options, out_blob);
  xc_kernel_source_release(&source);
  return st;
}

/* ---- devices ---- */

xc_status_t xc_target_open_device(xc_target_t* t, int index, xc_device_t** out_device) {
  if (out_device) *out_device = NULL;
  if (!t || !out_device) return xc_error(XC_INVALID_ARGUMENT, "xc_target_open_device: NULL argument");
  xc_device_t* d = calloc(1, sizeof *d);
  if (!d) return xc_error_oom();
  d->target = t;
  d->index = index;
  xc_status_t st = xc_target_device_caps(t, index, &d->caps);
  if (!st) st = t->iface->device_open(t->context, index, &d->context);
  if (st) {
    free(d);
    return xc_status_annotate(st, "opening %s:%d", t->iface->name, index);
  }
  *out_device = d;
  return NULL;
}

xc_status_t xc_device_open(const char* selector, xc_device_t** out_device) {
  if (out_device) *out_device = NULL;
  xc_target_t* t = NULL;
  int index = 0;
  XC_RETURN_IF_ERROR(xc_target_find(selector, &t, &index));
  return xc_target_open_device(t, index, out_device);
}

void xc_device_close(xc_device_t* d) {
  if (!d) return;
  IFACE(d)->device_close(d->context);
  free(d);
}

const xc_device_caps_t* xc_device_caps(const xc_device_t* d) { return d ? &d->caps : NULL; }
xc_target_t* xc_device_target(const xc_device_t* d) { return d ? d->target : NULL; }
int xc_device_index(const xc_device_t* d) { return d ? d->index : -1; }

xc_status_t xc_device_synchronize(xc_device_t* d) {
  if (!d) return xc_error(XC_INVALID_ARGUMENT, "xc_device_synchronize: NULL device");
  XC_RETURN_IF_ERROR(not_capturing(d, "synchronize"));
  return IFACE(d)->synchronize ? IFACE(d)->synchronize(d->context) : NULL;
}

/* ---- buffers ---- */

xc_status_t xc_buffer_alloc(xc_device_t* d, size_t size, xc_buffer_t** out_buffer) {
  if (out_buffer) *out_buffer = NULL;
  if (!d || !out_buffer) return xc_error(XC_INVALID_ARGUMENT, "xc_buffer_alloc: NULL argument");
  if (d->caps.max_buffer_bytes > 0 && (uint64_t)size > (uint64_t)d->caps.max_buffer_bytes)
    return xc_error(XC_RESOURCE_EXHAUSTED, "%s: buffer of %zu bytes exceeds the device's limit of %lld bytes",
                    d->caps.name, size, (long long)d->caps.max_buffer_bytes);
  xc_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  xc_status_t st = IFACE(d)->buffer_alloc(d->context, size, &b->context);
  if (st) {
    free(b);
    return st;
  }
  b->device = d;
  b->size = size;
  *out_buffer = b;
  return NULL;
}

xc_status_t xc_buffer_alloc_mapped(xc_device_t* d, size_t size, xc_buffer_t** out_buffer) {
  if (out_buffer) *out_buffer = NULL;
  if (!d || !out_buffer) return xc_error(XC_INVALID_ARGUMENT, "xc_buffer_alloc_mapped: NULL argument");
  const xc_target_iface_t* f = IFACE(d);
  if (!f->buffer_alloc_mapped) {
    /* Without the entry, only buffers that are host memory already do. */
    if (!f->buffer_host_pointer)
      return xc_error(XC_UNSUPPORTED, "%s: target %s has no host-mapped buffers", d->caps.name, f->name);
    XC_RETURN_IF_ERROR(xc_buffer_alloc(d, size, out_buffer));
    if (xc_buffer_host_pointer(*out_buffer)) return NULL;
    xc_buffer_free(*out_buffer);
    *out_buffer = NULL;
    return xc_error(XC_UNSUPPORTED, "%s: buffers of target %s are not host-visible", d->caps.name, f->name);
  }
  if (d->caps.max_buffer_bytes > 0 && (uint64_t)size > (uint64_t)d->caps.max_buffer_bytes)
    return xc_error(XC_RESOURCE_EXHAUSTED, "%s: buffer of %zu bytes exceeds the device's limit of %lld bytes",
                    d->caps.name, size, (long long)d->caps.max_buffer_bytes);
  xc_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  void* host = NULL;
  xc_status_t st = f->buffer_alloc_mapped(d->context, size, &b->context, &host);
  if (!st && !host) {
    f->buffer_free(d->context, b->context);
    st = xc_error(XC_INTERNAL, "%s: buffer_alloc_mapped of target %s returned no host address", d->caps.name,
                  f->name);
  }
  if (st) {
    free(b);
    return st;
  }
  b->device = d;
  b->size = size;
  b->mapped = host;
  *out_buffer = b;
  return NULL;
}

void xc_buffer_free(xc_buffer_t* b) {
  if (!b) return;
  IFACE(b->device)->buffer_free(b->device->context, b->context);
  free(b);
}

size_t xc_buffer_size(const xc_buffer_t* b) { return b ? b->size : 0; }

bool xc_device_has_addresses(const xc_device_t* d) { return d && IFACE(d)->buffer_device_address; }

uint64_t xc_buffer_device_address(xc_buffer_t* b) {
  if (!b || !IFACE(b->device)->buffer_device_address) return 0;
  return IFACE(b->device)->buffer_device_address(b->device->context, b->context);
}

xc_status_t xc_device_copy(xc_device_t* d, uint64_t dst, uint64_t src, size_t size) {
  if (!d) return xc_error(XC_INVALID_ARGUMENT, "xc_device_copy: NULL device");
  if (!IFACE(d)->copy_device)
    return xc_error(XC_UNSUPPORTED, "%s: target %s has no device addresses (device-resident tensors need one that has: cuda, rocm, cpu)",
                    d->caps.name, IFACE(d)->name);
  XC_RETURN_IF_ERROR(not_capturing(d, "device copy"));
  if (size == 0) return NULL;
  if (!dst || !src) return xc_error(XC_INVALID_ARGUMENT, "xc_device_copy: address 0");
  return IFACE(d)->copy_device(d->context, dst, src, size);
}

void* xc_buffer_host_pointer(xc_buffer_t* b) {
  if (b && b->mapped) return b->mapped;
  if (!b || !IFACE(b->device)->buffer_host_pointer) return NULL;
  return IFACE(b->device)->buffer_host_pointer(b->device->context, b->context);
}

static xc_status_t check_range(const xc_buffer_t* b, size_t offset, size_t size, const void* host) {
  if (!b || (!host && size)) return xc_error(XC_INVALID_ARGUMENT, "buffer copy: NULL argument");
  if (offset > b->size || size > b->size - offset)
    return xc_error(XC_OUT_OF_RANGE, "buffer copy of %zu bytes at offset %zu is outside the %zu-byte buffer",
                    size, offset, b->size);
  return NULL;
}

xc_status_t xc_buffer_write(xc_buffer_t* b, size_t offset, const void* src, size_t size) {
  XC_RETURN_IF_ERROR(check_range(b, offset, size, src));
  XC_RETURN_IF_ERROR(not_capturing(b->device, "buffer write"));
  if (size == 0) return NULL;
  return IFACE(b->device)->buffer_write(b->device->context, b->context, offset, src, size);
}

xc_status_t xc_buffer_read(xc_buffer_t* b, size_t offset, void* dst, size_t size) {
  XC_RETURN_IF_ERROR(check_range(b, offset, size, dst));
  XC_RETURN_IF_ERROR(not_capturing(b->device, "buffer read"));
  if (size == 0) return NULL;
  return IFACE(b->device)->buffer_read(b->device->context, b->context, offset, dst, size);
}

/* ---- modules and kernels ---- */

xc_status_t xc_module_load(xc_device_t* d, const xc_blob_t* blob, xc_module_t** out_module) {
  if (out_module) *out_module = NULL;
  if (!d || !blob || !out_module || (!blob->bytes && blob->size))
    return xc_error(XC_INVALID_ARGUMENT, "xc_module_load: NULL argument");
  xc_module_t* m = calloc(1, sizeof *m);
  if (!m) return xc_error_oom();
  xc_status_t st = IFACE(d)->module_load(d->context, blob, &m->context);
  if (st) {
    free(m);
    return xc_status_annotate(st, "%s: loading module", d->target->iface->name);
  }
  m->device = d;
  *out_module = m;
  return NULL;
}

void xc_module_unload(xc_module_t* m) {
  if (!m) return;
  for (module_kernel_t* k = m->kernels; k;) {
    module_kernel_t* next = k->next;
    free(k->kernel->name);
    free(k->kernel);
    free(k);
    k = next;
  }
  IFACE(m->device)->module_unload(m->device->context, m->context);
  free(m);
}

xc_status_t xc_module_kernel(xc_module_t* m, const char* name, xc_kernel_t** out_kernel) {
  if (out_kernel) *out_kernel = NULL;
  if (!m || !name || !out_kernel) return xc_error(XC_INVALID_ARGUMENT, "xc_module_kernel: NULL argument");
  for (module_kernel_t* k = m->kernels; k; k = k->next) {
    if (strcmp(k->kernel->name, name) == 0) {
      *out_kernel = k->kernel;
      return NULL;
    }
  }
  module_kernel_t* node = calloc(1, sizeof *node);
  xc_kernel_t* kernel = calloc(1, sizeof *kernel);
  size_t n = strlen(name) + 1;
  char* name_copy = malloc(n);
  if (!node || !kernel || !name_copy) {
    free(node);
    free(kernel);
    free(name_copy);
    return xc_error_oom();
  }
  memcpy(name_copy, name, n);
  xc_status_t st = IFACE(m->device)->kernel_get(m->device->context, m->context, name, &kernel->context);
  if (st) {
    free(node);
    free(kernel);
    free(name_copy);
    return st;
  }
  kernel->module = m;
  kernel->name = name_copy;
  node->kernel = kernel;
  node->next = m->kernels;
  m->kernels = node;
  *out_kernel = kernel;
  return NULL;
}

xc_status_t xc_kernel_launch(xc_kernel_t* k, const xc_launch_t* launch) {
  if (!k || !launch) return xc_error(XC_INVALID_ARGUMENT, "xc_kernel_launch: NULL argument");
  xc_device_t* d = k->module->device;
  if (launch->num_buffers < 0 || launch->num_buffers > XC_TARGET_MAX_ARGS || launch->num_scalars < 0 ||
      launch->num_scalars > XC_TARGET_MAX_ARGS || (launch->num_buffers && !launch->buffers) ||
      (launch->num_scalars && !launch->scalars))
    return xc_error(XC_INVALID_ARGUMENT, "launch of %s: bad argument counts (%d buffers, %d scalars; at most %d each)",
                    k->name, launch->num_buffers, launch->num_scalars, XC_TARGET_MAX_ARGS);
  xc_launch_args_t args;
  memset(&args, 0, sizeof args);
  int64_t programs = 1, threads = 1;
  for (int i = 0; i < 3; i++) {
    if (launch->grid[i] < 0 || launch->threads[i] < 0)
      return xc_error(XC_INVALID_ARGUMENT, "launch of %s: negative grid or thread count", k->name);
    args.grid[i] = launch->grid[i] ? launch->grid[i] : 1;
    args.threads[i] = launch->threads[i] ? launch->threads[i] : 1;
    if (!xc_mul_i64(programs, args.grid[i], &programs) || !xc_mul_i64(threads, args.threads[i], &threads))
      return xc_error(XC_OUT_OF_RANGE, "launch of %s: grid size overflows", k->name);
  }
  if (d->caps.max_threads_per_group > 0 && threads > d->caps.max_threads_per_group)
    return xc_error(XC_OUT_OF_RANGE, "launch of %s: %lld threads per program exceed the device limit of %d",
                    k->name, (long long)threads, d->caps.max_threads_per_group);
  void* handles[XC_TARGET_MAX_ARGS];
  for (int i = 0; i < launch->num_buffers; i++) {
    const xc_buffer_t* b = launch->buffers[i];
    if (!b) return xc_error(XC_INVALID_ARGUMENT, "launch of %s: buffer argument %d is NULL", k->name, i);
    if (b->device != d)
      return xc_error(XC_INVALID_ARGUMENT, "launch of %s: buffer argument %d belongs to another device", k->name, i);
    handles[i] = b->context;
  }
  args.buffers = handles;
  args.num_buffers = launch->num_buffers;
  args.scalars = launch->scalars;
  args.num_scalars = launch->num_scalars;
  return xc_status_annotate(IFACE(d)->launch(d->context, k->context, &args), "launch of %s", k->name);
}

/* ---- launch graphs ---- */

bool xc_device_can_capture(const xc_device_t* d) { return d && IFACE(d)->capture_begin != NULL; }

xc_status_t xc_device_capture_begin(xc_device_t* d) {
  if (!d) return xc_error(XC_INVALID_ARGUMENT, "xc_device_capture_begin: NULL device");
  if (!xc_device_can_capture(d))
    return xc_error(XC_UNSUPPORTED, "target %s cannot capture launch graphs", IFACE(d)->name);
  XC_RETURN_IF_ERROR(not_capturing(d, "capture begin"));
  XC_RETURN_IF_ERROR(IFACE(d)->capture_begin(d->context));
  d->capturing = true;
  return NULL;
}

xc_status_t xc_device_capture_end(xc_device_t* d, xc_launch_graph_t** out_graph) {
  if (out_graph) *out_graph = NULL;
  if (!d || !out_graph) return xc_error(XC_INVALID_ARGUMENT, "xc_device_capture_end: NULL argument");
  if (!d->capturing) return xc_error(XC_INVALID_ARGUMENT, "capture end without capture begin");
  xc_launch_graph_t* g = calloc(1, sizeof *g);
  void* ctx = NULL;
  xc_status_t st = IFACE(d)->capture_end(d->context, &ctx);
  d->capturing = false; /* the target is back in normal mode, whatever happened */
  if (!st && !g) {
    IFACE(d)->graph_free(d->context, ctx);
    st = xc_error_oom();
  }
  if (st) {
    free(g);
    return st;
  }
  g->device = d;
  g->context = ctx;
  *out_graph = g;
  return NULL;
}

xc_status_t xc_launch_graph_run(xc_launch_graph_t* g) {
  if (!g) return xc_error(XC_INVALID_ARGUMENT, "xc_launch_graph_run: NULL graph");
  XC_RETURN_IF_ERROR(not_capturing(g->device, "graph launch"));
  return IFACE(g->device)->graph_launch(g->device->context, g->context);
}

void xc_launch_graph_free(xc_launch_graph_t* g) {
  if (!g) return;
  IFACE(g->device)->graph_free(g->device->context, g->context);
  free(g);
}

/* ---- events ---- */

xc_status_t xc_event_record(xc_device_t* d, xc_event_t** out_event) {
  if (out_event) *out_event = NULL;
  if (!d || !out_event) return xc_error(XC_INVALID_ARGUMENT, "xc_event_record: NULL argument");
  XC_RETURN_IF_ERROR(not_capturing(d, "event record"));
  xc_event_t* e = calloc(1, sizeof *e);
  if (!e) return xc_error_oom();
  e->device = d;
  xc_status_t st;
  if (IFACE(d)->event_record) {
    st = IFACE(d)->event_record(d->context, &e->context);
  } else {
    st = xc_device_synchronize(d);
    e->host_ms = xc_targets_now_ms();
  }
  if (st) {
    free(e);
    return st;
  }
  *out_event = e;
  return NULL;
}

xc_status_t xc_event_elapsed_ms(xc_event_t* start, xc_event_t* end, double* out_ms) {
  if (out_ms) *out_ms = 0;
  if (!start || !end || !out_ms) return xc_error(XC_INVALID_ARGUMENT, "xc_event_elapsed_ms: NULL argument");
  if (start->device != end->device)
    return xc_error(XC_INVALID_ARGUMENT, "xc_event_elapsed_ms: events of different devices");
  xc_device_t* d = start->device;
  if (IFACE(d)->event_elapsed_ms) return IFACE(d)->event_elapsed_ms(d->context, start->context, end->context, out_ms);
  *out_ms = end->host_ms - start->host_ms;
  return NULL;
}

void xc_event_free(xc_event_t* e) {
  if (!e) return;
  if (e->context && IFACE(e->device)->event_free) IFACE(e->device)->event_free(e->device->context, e->context);
  free(e);
}

/* ---- names ---- */

const char* xc_device_kind_name(xc_device_kind_t kind) {
  switch (kind) {
    case XC_DEVICE_CPU: return "cpu";
    case XC_DEVICE_GPU: return "gpu";
    case XC_DEVICE_NPU: return "npu";
  }
  return "?";
}

const char* xc_layout_name(xc_layout_t layout) {
  return layout == XC_LAYOUT_NHWC ? "nhwc" : layout == XC_LAYOUT_NCHW ? "nchw" : "?";
}

static void format_bytes(int64_t bytes, char* out, size_t size) {
  if (bytes >= ((int64_t)1 << 30)) snprintf(out, size, "%.1f GiB", (double)bytes / (double)((int64_t)1 << 30));
  else if (bytes >= (1 << 20)) snprintf(out, size, "%.1f MiB", (double)bytes / (double)(1 << 20));
  else snprintf(out, size, "%lld KiB", (long long)(bytes >> 10));
}

void xc_device_caps_summary(const xc_device_caps_t* c, char* out, size_t out_size) {
  if (!out || !out_size) return;
  out[0] = 0;
  if (!c) return;
  char local[32], global[32];
  format_bytes(c->local_memory_bytes, local, sizeof local);
  format_bytes(c->global_memory_bytes, global, sizeof global);
  int n = snprintf(out, out_size, "%s, %d compute units, simd %d, %d threads/group, local %s, global %s, %s",
                   xc_device_kind_name(c->kind), c->compute_units, c->simd_width, c->max_threads_per_group,
                   local, global, xc_layout_name(c->preferred_layout));
  if (n > 0 && (size_t)n < out_size && c->dtypes) {
    size_t k = (size_t)n;
    k += (size_t)snprintf(out + k, out_size - k, ", dtypes");
    for (int t = 1; t < XC_DTYPE_COUNT && k < out_size; t++)
      if (c->dtypes & XC_DT(t)) k += (size_t)snprintf(out + k, out_size - k, " %s", xc_dtype_name((xc_dtype_t)t));
    if (k < out_size && c->num_mma_shapes)
      k += (size_t)snprintf(out + k, out_size - k, ", %d mma shapes", c->num_mma_shapes);
    if (k < out_size && c->has_vendor_blas) snprintf(out + k, out_size - k, ", vendor BLAS");
  }
}
