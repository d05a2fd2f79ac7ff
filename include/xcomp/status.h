/* xcomp status: how every library function reports failure.
 *
 * A status is a pointer: NULL means success, anything else is a heap object
 * carrying a code and a message. Library code never aborts or exits on bad
 * input; it returns a status naming the thing at fault. Callers either handle
 * it (and free it with xc_status_free) or propagate it, optionally adding
 * context with xc_status_annotate. */
#ifndef XCOMP_STATUS_H
#define XCOMP_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xc_code {
  XC_OK = 0,
  XC_INVALID_ARGUMENT,  /* malformed input: bad file, bad graph, bad attribute */
  XC_OUT_OF_RANGE,      /* sizes overflow, indices out of bounds */
  XC_UNSUPPORTED,       /* valid input that xcomp does not handle (op, dtype, attr) */
  XC_NOT_FOUND,         /* missing file, value, op */
  XC_IO,                /* read/write failure */
  XC_RESOURCE_EXHAUSTED,/* out of memory or absurd size */
  XC_UNAVAILABLE,       /* a target or vendor library is not present */
  XC_INTERNAL,          /* an invariant of xcomp itself broke */
  XC_DATA_LOSS,         /* truncated or corrupted data */
} xc_code_t;

typedef struct xc_status* xc_status_t;

#if defined(__GNUC__)
#define XC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define XC_MUST_USE __attribute__((warn_unused_result))
#else
#define XC_PRINTF(f, a)
#define XC_MUST_USE
#endif

/* Creates an error status. Never returns NULL for code != XC_OK (falls back to
 * a static out-of-memory status if allocation fails). Caller owns the result. */
xc_status_t xc_error(xc_code_t code, const char* fmt, ...) XC_PRINTF(2, 3);

/* Prefixes "<context>: " to the message of a non-NULL status and returns it.
 * Returns NULL unchanged. Takes and returns ownership. */
xc_status_t xc_status_annotate(xc_status_t status, const char* fmt, ...)
    XC_PRINTF(2, 3);

xc_code_t xc_status_code(xc_status_t status);
/* "" for NULL. The string lives as long as the status. */
const char* xc_status_message(xc_status_t status);
const char* xc_code_name(xc_code_t code);
void xc_status_free(xc_status_t status);

/* Canonical out-of-memory status (never allocates). */
xc_status_t xc_error_oom(void);

#define XC_RETURN_IF_ERROR(expr)          \
  do {                                    \
    xc_status_t xc_status_tmp_ = (expr);  \
    if (xc_status_tmp_) return xc_status_tmp_; \
  } while (0)

/* Overflow-checked 64-bit arithmetic. Return false on overflow. */
static inline bool xc_add_i64(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
static inline bool xc_sub_i64(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}
static inline bool xc_mul_i64(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

#ifdef __cplusplus
}
#endif
#endif
