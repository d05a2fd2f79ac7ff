/* Text output of the C-family emitter (a growing string written with
 * printf formats), the names of kernel parameters in emitted code, and the
 * resolution of a kernel's knob values. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* ---- text output ---------------------------------------------------------- */

static void wv(xc_cstyle_writer_t* w, const char* fmt, va_list ap) {
  if (w->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    w->oom = true;
    return;
  }
  if (w->len + (size_t)n + 1 > w->cap) {
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < w->len + (size_t)n + 1) cap *= 2;
    char* d = realloc(w->data, cap);
    if (!d) {
      w->oom = true;
      return;
    }
    w->data = d;
    w->cap = cap;
  }
  vsnprintf(w->data + w->len, (size_t)n + 1, fmt, ap);
  w->len += (size_t)n;
}

void xc_cstyle_printf(xc_cstyle_writer_t* w, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wv(w, fmt, ap);
  va_end(ap);
}

/* ---- names ---------------------------------------------------------------- */

void xc_cse_sanitize(const char* in, char* out, size_t size, size_t max_len) {
  size_t n = 0;
  if (!in || !*in) in = "k";
  if (!((in[0] >= 'a' && in[0] <= 'z') || (in[0] >= 'A' && in[0] <= 'Z'))) out[n++] = 'v';
  for (const char* c = in; *c && n + 1 < size && n < max_len; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    out[n++] = ok ? *c : '_';
  }
  out[n] = 0;
}

const char* xc_cstyle_param_name(const xc_tiled_value_t* param, char* buf, size_t size) {
  char s[44];
  xc_cse_sanitize(param->name, s, sizeof s, 40);
  snprintf(buf, size, "p_%s", s);
  return buf;
}

/* ---- knobs ---------------------------------------------------------------- */

xc_status_t xc_cstyle_resolve_knobs(const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs,
                                    int64_t* out) {
  for (int i = 0; i < k->num_knobs; i++) out[i] = k->knobs[i].default_value;
  for (int i = 0; i < num_knobs; i++) {
    int idx = knobs[i].name ? xc_tiled_find_knob(k, knobs[i].name) : -1;
    if (idx < 0)
      return xc_error(XC_INVALID_ARGUMENT, "kernel '%s' has no knob '%s'", k->name,
                      knobs[i].name ? knobs[i].name : "(null)");
    out[idx] = knobs[i].value;
  }
  return xc_tiled_knobs_check(k, out, NULL);
}
