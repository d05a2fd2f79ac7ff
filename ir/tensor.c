/* Concrete tensors: allocation, checked sizes, dtype-generic element access,
 * broadcasting helpers. */
#include "xcomp/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xc_status_t xc_shape_numel(int rank, const int64_t* dims, xc_dtype_t dtype,
                           int64_t* out_numel) {
  if (rank < 0 || rank > XC_MAX_RANK)
    return xc_error(XC_UNSUPPORTED, "rank %d exceeds the maximum of %d", rank,
                    XC_MAX_RANK);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return xc_error(XC_INVALID_ARGUMENT, "negative dimension %lld at axis %d",
                      (long long)dims[i], i);
    if (!xc_mul_i64(n, dims[i], &n))
      return xc_error(XC_OUT_OF_RANGE, "element count overflows 64 bits");
  }
  int64_t bytes;
  size_t es = xc_dtype_size(dtype);
  if (es == 0) return xc_error(XC_INVALID_ARGUMENT, "tensor without a dtype");
  if (!xc_mul_i64(n, (int64_t)es, &bytes) || bytes > XC_MAX_TENSOR_BYTES)
    return xc_error(XC_RESOURCE_EXHAUSTED,
                    "tensor of %lld elements of %s is too large", (long long)n,
                    xc_dtype_name(dtype));
  *out_numel = n;
  return NULL;
}

static xc_status_t tensor_alloc_header(xc_dtype_t dtype, int rank,
                                       const int64_t* dims, xc_tensor_t** out) {
  *out = NULL;
  int64_t numel;
  XC_RETURN_IF_ERROR(xc_shape_numel(rank, dims, dtype, &numel));
  xc_tensor_t* t = calloc(1, sizeof *t);
  if (!t) return xc_error_oom();
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->numel = numel;
  *out = t;
  return NULL;
}

xc_status_t xc_tensor_create(xc_dtype_t dtype, int rank, const int64_t* dims,
                             xc_tensor_t** out) {
  XC_RETURN_IF_ERROR(tensor_alloc_header(dtype, rank, dims, out));
  xc_tensor_t* t = *out;
  size_t bytes = (size_t)t->numel * xc_dtype_size(dtype);
  if (bytes) {
    t->data = calloc(1, bytes);
    if (!t->data) {
      free(t);
      *out = NULL;
      return xc_error(XC_RESOURCE_EXHAUSTED, "cannot allocate %zu bytes", bytes);
    }
  }
  t->owns_data = true;
  return NULL;
}

xc_status_t xc_tensor_wrap(xc_dtype_t dtype, int rank, const int64_t* dims,
                           void* data, xc_tensor_t** out) {
  XC_RETURN_IF_ERROR(tensor_alloc_header(dtype, rank, dims, out));
  (*out)->data = data;
  (*out)->owns_data = false;
  return NULL;
}

xc_status_t xc_tensor_clone(const xc_tensor_t* src, xc_tensor_t** out) {
  XC_RETURN_IF_ERROR(xc_tensor_create(src->dtype, src->rank, src->dims, out));
  size_t n = xc_tensor_nbytes(src);
  if (n) memcpy((*out)->data, src->data, n);
  return NULL;
}

void xc_tensor_destroy(xc_tensor_t* t) {
  if (!t) return;
  if (t->owns_data) free(t->data);
  free(t);
}

size_t xc_tensor_nbytes(const xc_tensor_t* t) {
  return (size_t)t->numel * xc_dtype_size(t->dtype);
}

double xc_tensor_get_f64(const xc_tensor_t* t, int64_t i) {
  const void* p = t->data;
  switch (t->dtype) {
    case XC_F32: return ((const float*)p)[i];
    case XC_F64: return ((const double*)p)[i];
    case XC_F16: return xc_f16_to_f32(((const uint16_t*)p)[i]);
    case XC_BF16: return xc_bf16_to_f32(((const uint16_t*)p)[i]);
    case XC_F8E4M3FN: return xc_f8e4m3fn_to_f32(((const uint8_t*)p)[i]);
    case XC_F8E5M2: return xc_f8e5m2_to_f32(((const uint8_t*)p)[i]);
    case XC_I8: return ((const int8_t*)p)[i];
    case XC_I16: return ((const int16_t*)p)[i];
    case XC_I32: return ((const int32_t*)p)[i];
    case XC_I64: return (double)((const int64_t*)p)[i];
    case XC_U8: return ((const uint8_t*)p)[i];
    case XC_U16: return ((const uint16_t*)p)[i];
    case XC_U32: return ((const uint32_t*)p)[i];
    case XC_U64: return (double)((const uint64_t*)p)[i];
    case XC_BOOL: return ((const uint8_t*)p)[i] != 0;
    default: return 0;
  }
}

int64_t xc_tensor_get_i64(const xc_tensor_t* t, int64_t i) {
  const void* p = t->data;
  switch (t->dtype) {
    case XC_I8: return ((const int8_t*)p)[i];
    case XC_I16: return ((const int16_t*)p)[i];
    case XC_I32: return ((const int32_t*)p)[i];
    case XC_I64: return ((const int64_t*)p)[i];
    case XC_U8: return ((const uint8_t*)p)[i];
    case XC_U16: return ((const uint16_t*)p)[i];
    case XC_U32: return ((const uint32_t*)p)[i];
    case XC_U64: return (int64_t)((const uint64_t*)p)[i];
    case XC_BOOL: return ((const uint8_t*)p)[i] != 0;
    default: {
      double v = xc_tensor_get_f64(t, i);
      if (isnan(v)) return 0;
      if (v >= 9223372036854775807.0) return INT64_MAX;
      if (v <= -9223372036854775808.0) return INT64_MIN;
      return (int64_t)v;
    }
  }
}

static int64_t clamp_f64_to_int(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v;
}

void xc_tensor_set_f64(xc_tensor_t* t, int64_t i, double v) {
  void* p = t->data;
  switch (t->dtype) {
    case XC_F32: ((float*)p)[i] = (float)v; break;
    case XC_F64: ((double*)p)[i] = v; break;
    case XC_F16: ((uint16_t*)p)[i] = xc_f64_to_f16(v); break;
    case XC_BF16: ((uint16_t*)p)[i] = xc_f64_to_bf16(v); break;
    case XC_F8E4M3FN: ((uint8_t*)p)[i] = xc_f64_to_f8e4m3fn(v); break;
    case XC_F8E5M2: ((uint8_t*)p)[i] = xc_f64_to_f8e5m2(v); break;
    case XC_I8: ((int8_t*)p)[i] = (int8_t)clamp_f64_to_int(v, -128, 127); break;
    case XC_I16: ((int16_t*)p)[i] = (int16_t)clamp_f64_to_int(v, -32768, 32767); break;
    case XC_I32:
      ((int32_t*)p)[i] = (int32_t)clamp_f64_to_int(v, -2147483648.0, 2147483647.0);
      break;
    case XC_I64:
      if (isnan(v)) ((int64_t*)p)[i] = 0;
      else if (v >= 9223372036854775807.0) ((int64_t*)p)[i] = INT64_MAX;
      else if (v <= -9223372036854775808.0) ((int64_t*)p)[i] = INT64_MIN;
      else ((int64_t*)p)[i] = (int64_t)v;
      break;
    case XC_U8: ((uint8_t*)p)[i] = (uint8_t)clamp_f64_to_int(v, 0, 255); break;
    case XC_U16: ((uint16_t*)p)[i] = (uint16_t)clamp_f64_to_int(v, 0, 65535); break;
    case XC_U32: ((uint32_t*)p)[i] = (uint32_t)clamp_f64_to_int(v, 0, 4294967295.0); break;
    case XC_U64:
      if (isnan(v) || v <= 0) ((uint64_t*)p)[i] = 0;
      else if (v >= 18446744073709551615.0) ((uint64_t*)p)[i] = UINT64_MAX;
      else ((uint64_t*)p)[i] = (uint64_t)v;
      break;
    case XC_BOOL: ((uint8_t*)p)[i] = v != 0; break;
    default: break;
  }
}

void xc_tensor_set_i64(xc_tensor_t* t, int64_t i, int64_t v) {
  void* p = t->data;
  switch (t->dtype) {
    /* Integer narrowing wraps (two's complement), as numpy astype does. */
    case XC_I8: ((int8_t*)p)[i] = (int8_t)(uint8_t)v; break;
    case XC_I16: ((int16_t*)p)[i] = (int16_t)(uint16_t)v; break;
    case XC_I32: ((int32_t*)p)[i] = (int32_t)(uint32_t)v; break;
    case XC_I64: ((int64_t*)p)[i] = v; break;
    case XC_U8: ((uint8_t*)p)[i] = (uint8_t)v; break;
    case XC_U16: ((uint16_t*)p)[i] = (uint16_t)v; break;
    case XC_U32: ((uint32_t*)p)[i] = (uint32_t)v; break;
    case XC_U64: ((uint64_t*)p)[i] = (uint64_t)v; break;
    case XC_BOOL: ((uint8_t*)p)[i] = v != 0; break;
    default: xc_tensor_set_f64(t, i, (double)v); break;
  }
}

void xc_strides(int rank, const int64_t* dims, int64_t* out_strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    out_strides[i] = s;
    s *= dims[i];
  }
}

xc_status_t xc_broadcast_shape(int rank_a, const int64_t* a, int rank_b,
                               const int64_t* b, int* out_rank,
                               int64_t* out_dims) {
  int r = rank_a > rank_b ? rank_a : rank_b;
  if (r > XC_MAX_RANK) return xc_error(XC_UNSUPPORTED, "rank %d too large", r);
  for (int i = 0; i < r; i++) {
    int ia = i - (r - rank_a), ib = i - (r - rank_b);
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1)
      out_dims[i] = da;
    else if (da == 1)
      out_dims[i] = db;
    else
      return xc_error(XC_INVALID_ARGUMENT,
                      "shapes cannot be broadcast: %lld vs %lld at axis %d",
                      (long long)da, (long long)db, i);
  }
  *out_rank = r;
  return NULL;
}

void xc_broadcast_strides(const xc_tensor_t* t, int out_rank,
                          const int64_t* out_dims, int64_t* out_strides) {
  int64_t s[XC_MAX_RANK];
  xc_strides(t->rank, t->dims, s);
  int off = out_rank - t->rank;
  for (int i = 0; i < out_rank; i++) {
    int j = i - off;
    out_strides[i] = (j < 0 || (t->dims[j] == 1 && out_dims[i] != 1)) ? 0 : s[j];
    if (j >= 0 && t->dims[j] == 1) out_strides[i] = 0;
  }
}

bool xc_index_next(int rank, const int64_t* dims, int64_t* idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

const char* xc_tensor_describe(const xc_tensor_t* t, char* buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", xc_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
                          (long long)t->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}
