/* xcomp concrete tensors: a dtype, a static shape and a dense row-major buffer.
 *
 * Used for initializers, constant attributes, interpreter values and file I/O.
 * Element accessors convert through double (floats) or int64 (integers) so
 * reference kernels can be written once for every dtype. */
#ifndef XCOMP_TENSOR_H
#define XCOMP_TENSOR_H

#include "xcomp/dtype.h"
#include "xcomp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XC_MAX_RANK 16
/* Refuse single tensors larger than this many bytes (absurd-size guard). */
#define XC_MAX_TENSOR_BYTES ((int64_t)1 << 40)

typedef struct xc_tensor {
  xc_dtype_t dtype;
  int rank;
  int64_t dims[XC_MAX_RANK];
  int64_t numel;  /* product of dims; 1 for rank 0 */
  void* data;     /* numel * xc_dtype_size(dtype) bytes; may be NULL if numel == 0 */
  bool owns_data; /* free(data) on destroy */
} xc_tensor_t;

/* Checked product of dims. Fails on negative dims, rank > XC_MAX_RANK, or
 * overflow of the element count or the byte size. */
xc_status_t xc_shape_numel(int rank, const int64_t* dims, xc_dtype_t dtype,
                           int64_t* out_numel);

/* Allocates a zero-filled tensor. Caller owns *out (xc_tensor_destroy). */
xc_status_t xc_tensor_create(xc_dtype_t dtype, int rank, const int64_t* dims,
                             xc_tensor_t** out);
/* Wraps caller memory without copying; the tensor does not own data. */
xc_status_t xc_tensor_wrap(xc_dtype_t dtype, int rank, const int64_t* dims,
                           void* data, xc_tensor_t** out);
xc_status_t xc_tensor_clone(const xc_tensor_t* src, xc_tensor_t** out);
void xc_tensor_destroy(xc_tensor_t* t);
size_t xc_tensor_nbytes(const xc_tensor_t* t);

/* Element i (flat, row-major) as double / int64. Bool is 0 or 1. */
double xc_tensor_get_f64(const xc_tensor_t* t, int64_t i);
int64_t xc_tensor_get_i64(const xc_tensor_t* t, int64_t i);
/* Stores v converted to the tensor dtype: floats round to nearest even;
 * integers take C conversion of the value clamped to the type's range (NaN
 * becomes 0); bool stores v != 0. */
void xc_tensor_set_f64(xc_tensor_t* t, int64_t i, double v);
void xc_tensor_set_i64(xc_tensor_t* t, int64_t i, int64_t v);

/* Row-major strides (in elements) of a shape. */
void xc_strides(int rank, const int64_t* dims, int64_t* out_strides);

/* numpy broadcasting of two static shapes. */
xc_status_t xc_broadcast_shape(int rank_a, const int64_t* a, int rank_b,
                               const int64_t* b, int* out_rank,
                               int64_t* out_dims);
/* Strides (in elements) to read tensor `t` broadcast to out shape; 0 along
 * broadcast dims. out_rank must be >= t->rank. */
void xc_broadcast_strides(const xc_tensor_t* t, int out_rank,
                          const int64_t* out_dims, int64_t* out_strides);

/* Odometer over a multi-index: advances idx within dims, returns false after
 * the last index. */
bool xc_index_next(int rank, const int64_t* dims, int64_t* idx);

/* "f32[2,3]" into buf. */
const char* xc_tensor_describe(const xc_tensor_t* t, char* buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
