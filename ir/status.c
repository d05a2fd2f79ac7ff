/* Status objects: heap-allocated error code + message; NULL means OK. */
#include "xcomp/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xc_status {
  xc_code_t code;
  bool is_static;
  char* message;
};

static struct xc_status oom_status = {XC_RESOURCE_EXHAUSTED, true,
                                      (char*)"out of memory"};

xc_status_t xc_error_oom(void) { return &oom_status; }

static char* vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char* s = malloc((size_t)n + 1);
  if (!s) return NULL;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

xc_status_t xc_error(xc_code_t code, const char* fmt, ...) {
  struct xc_status* s = malloc(sizeof *s);
  if (!s) return &oom_status;
  va_list ap;
  va_start(ap, fmt);
  s->message = vformat(fmt, ap);
  va_end(ap);
  if (!s->message) {
    free(s);
    return &oom_status;
  }
  s->code = code == XC_OK ? XC_INTERNAL : code;
  s->is_static = false;
  return s;
}

xc_status_t xc_status_annotate(xc_status_t status, const char* fmt, ...) {
  if (!status || status->is_static) return status;
  va_list ap;
  va_start(ap, fmt);
  char* prefix = vformat(fmt, ap);
  va_end(ap);
  if (!prefix) return status;
  size_t a = strlen(prefix), b = strlen(status->message);
  char* m = malloc(a + 2 + b + 1);
  if (m) {
    memcpy(m, prefix, a);
    memcpy(m + a, ": ", 2);
    memcpy(m + a + 2, status->message, b + 1);
    free(status->message);
    status->message = m;
  }
  free(prefix);
  return status;
}

xc_code_t xc_status_code(xc_status_t s) { return s ? s->code : XC_OK; }
const char* xc_status_message(xc_status_t s) { return s ? s->message : ""; }

const char* xc_code_name(xc_code_t c) {
  switch (c) {
    case XC_OK: return "ok";
    case XC_INVALID_ARGUMENT: return "invalid argument";
    case XC_OUT_OF_RANGE: return "out of range";
    case XC_UNSUPPORTED: return "unsupported";
    case XC_NOT_FOUND: return "not found";
    case XC_IO: return "i/o error";
    case XC_RESOURCE_EXHAUSTED: return "resource exhausted";
    case XC_UNAVAILABLE: return "unavailable";
    case XC_INTERNAL: return "internal error";
    case XC_DATA_LOSS: return "data loss";
  }
  return "unknown";
}

void xc_status_free(xc_status_t s) {
  if (!s || s->is_static) return;
  free(s->message);
  free(s);
}
