/* The public face of the C-family emitter (xcomp/emit.h): a plugin's dialect
 * (a base plus overrides) becomes an xc_cstyle_dialect_t for the duration of
 * one call, built from the base's table; the plugin's entry writer is called
 * through a hook of that table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/emit.h"

#include "cstyle.h"

/* The table handed to the emitter; its hooks find the rest from `cs`. */
typedef struct sdk_dialect {
  xc_cstyle_dialect_t cs; /* first: hooks receive &cs */
  const xc_emit_dialect_t* pub;
  const xc_cstyle_dialect_t* base;
  char* prelude; /* base prelude + prelude_extra (malloc'd), or NULL */
} sdk_dialect_t;

/* What the plugin's entry writer receives, with what delegating needs. */
typedef struct sdk_entry {
  xc_emit_entry_t pub; /* first: hooks receive &pub */
  const sdk_dialect_t* d;
  const xc_cstyle_entry_t* in;
} sdk_entry_t;

static void sdk_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* cd, const xc_cstyle_entry_t* e) {
  const sdk_dialect_t* d = (const sdk_dialect_t*)cd;
  if (d->pub->kernel_prefix && *d->pub->kernel_prefix) xc_cstyle_printf(w, "%s\n", d->pub->kernel_prefix);
  if (!d->pub->write_entry) {
    d->base->write_entry(w, &d->cs, e);
    return;
  }
  const xc_tiled_kernel_t* k = e->kernel;
  const char* small[16];
  const char** types = k->num_params <= 16 ? small : malloc(sizeof *types * (size_t)k->num_params);
  if (!types) return; /* out of memory: the source is incomplete and fails to build */
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    types[i] = p->type.kind == XC_TILED_MEMREF ? d->cs.storage_type[p->type.dtype] : d->cs.value_type[XC_I64];
  }
  sdk_entry_t se = {.pub = {.kernel = e->kernel,
                            .entry = e->entry,
                            .threads = e->threads,
                            .decls = e->decls,
                            .body = e->body,
                            .dyn_local_bytes = e->dyn_local_bytes,
                            .param_types = types},
                    .d = d,
                    .in = e};
  d->pub->write_entry((xc_emit_writer_t*)w, &se.pub, d->pub->entry_user);
  if (types != small) free(types);
}

void xc_emit_write_base_entry(xc_emit_writer_t* w, const xc_emit_entry_t* e) {
  const sdk_entry_t* se = (const sdk_entry_t*)e;
  se->d->base->write_entry((xc_cstyle_writer_t*)w, &se->d->cs, se->in);
}

void xc_emit_printf(xc_emit_writer_t* w, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* xc_cstyle_printf takes varargs only: format here, then pass the text */
  char small[1024];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof small) {
    xc_cstyle_printf((xc_cstyle_writer_t*)w, "%s", small);
  } else if (n >= 0) {
    char* big = malloc((size_t)n + 1);
    if (big) {
      vsnprintf(big, (size_t)n + 1, fmt, ap2);
      xc_cstyle_printf((xc_cstyle_writer_t*)w, "%s", big);
      free(big);
    }
  }
  va_end(ap2);
  va_end(ap);
}

const char* xc_emit_param_name(const struct xc_tiled_value* param, char* buf, size_t size) {
  return xc_cstyle_param_name(param, buf, size);
}

xc_status_t xc_emit_resolve_knobs(const struct xc_tiled_kernel* k, const xc_knob_t* knobs, int num_knobs,
                                  int64_t* out_values) {
  if (!k || !out_values || (num_knobs > 0 && !knobs))
    return xc_error(XC_INVALID_ARGUMENT, "xc_emit_resolve_knobs: NULL argument");
  return xc_cstyle_resolve_knobs(k, knobs, num_knobs, out_values);
}

static bool reserved_clear(const xc_emit_dialect_t* p) {
  for (size_t i = 0; i < sizeof p->reserved / sizeof p->reserved[0]; i++)
    if (p->reserved[i]) return false;
  return true;
}

/* Builds the emitter's table for p; d->prelude must be freed after. */
static xc_status_t sdk_dialect_make(const xc_emit_dialect_t* p, sdk_dialect_t* d) {
  memset(d, 0, sizeof *d);
  if (!p) return xc_error(XC_INVALID_ARGUMENT, "emit: no dialect");
  switch (p->base) {
    case XC_EMIT_BASE_C: d->base = &xc_cstyle_dialect_c; break;
    case XC_EMIT_BASE_OPENCL_C: d->base = &xc_cstyle_dialect_opencl; break;
    default: return xc_error(XC_INVALID_ARGUMENT, "emit: unknown base dialect %d", (int)p->base);
  }
  if (!reserved_clear(p))
    return xc_error(XC_INVALID_ARGUMENT, "emit: dialect '%s' sets reserved fields (a newer xcomp's scheduler hooks?)",
                    p->name ? p->name : d->base->name);
  d->pub = p;
  d->cs = *d->base;
  if (p->name && *p->name) d->cs.name = p->name;
  if (p->simd_pragma) d->cs.simd_pragma = *p->simd_pragma ? p->simd_pragma : NULL;
  if (p->prelude_extra && *p->prelude_extra) {
    const char* bp = d->base->prelude ? d->base->prelude : "";
    size_t a = strlen(bp), b = strlen(p->prelude_extra);
    d->prelude = malloc(a + b + 2);
    if (!d->prelude) return xc_error_oom();
    memcpy(d->prelude, bp, a);
    memcpy(d->prelude + a, p->prelude_extra, b);
    size_t n = a + b;
    if (b && p->prelude_extra[b - 1] != '\n') d->prelude[n++] = '\n';
    d->prelude[n] = 0;
    d->cs.prelude = d->prelude;
  }
  d->cs.write_entry = sdk_write_entry;
  return NULL;
}

xc_status_t xc_emit_kernel(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                           const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                           const xc_emit_options_t* options, xc_kernel_source_t* out) {
  if (!kernel || !out || (num_knobs > 0 && !knobs))
    return xc_error(XC_INVALID_ARGUMENT, "xc_emit_kernel: NULL argument");
  memset(out, 0, sizeof *out);
  sdk_dialect_t d;
  XC_RETURN_IF_ERROR(sdk_dialect_make(dialect, &d));
  xc_cstyle_options_t o = {0};
  if (options) {
    o.provenance = options->provenance;
    o.num_provenance = options->num_provenance;
    o.allow_tf32 = options->allow_tf32;
  }
  xc_status_t st = xc_cstyle_emit(&d.cs, caps, kernel, knobs, num_knobs, &o, out);
  free(d.prelude);
  return st;
}

xc_status_t xc_emit_schedule(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                             const struct xc_tiled_kernel* kernel, const struct xc_tiled_limits* limits,
                             unsigned flags, struct xc_tiled_schedule* inout) {
  if (!kernel || !inout) return xc_error(XC_INVALID_ARGUMENT, "xc_emit_schedule: NULL argument");
  sdk_dialect_t d;
  XC_RETURN_IF_ERROR(sdk_dialect_make(dialect, &d));
  xc_status_t st = xc_cstyle_schedule(&d.cs, caps, kernel, limits, flags, NULL, inout);
  free(d.prelude);
  return st;
}

bool xc_emit_supports(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                      const struct xc_tiled_kernel* kernel, char* why, size_t why_size) {
  if (why && why_size) why[0] = 0;
  sdk_dialect_t d;
  xc_status_t st = kernel ? sdk_dialect_make(dialect, &d) : xc_error(XC_INVALID_ARGUMENT, "no kernel");
  if (st) {
    if (why && why_size) snprintf(why, why_size, "%s", xc_status_message(st));
    xc_status_free(st);
    return false;
  }
  bool ok = xc_cstyle_supports(&d.cs, caps, kernel, why, why_size);
  free(d.prelude);
  return ok;
}
