/* Op family 'index': ops that select, scatter, order or scan elements along
 * axes — GatherElements, GatherND, ScatterElements, ScatterND, ArgMax,
 * ArgMin, TopK, CumSum, Unique. Resize lives in ops_resize.c.
 *
 * Data movement copies elements by bytes, so every dtype works. Indices are
 * i32 or i64, may be negative (counted from the end) and are range-checked:
 * an index out of range is an error, never a wild read or write. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

#define XC_DT_INDEX (XC_DT(XC_I32) | XC_DT(XC_I64))

/* Normalizes index v for an axis of extent `size` (negative counts from the
 * end); error when out of range. */
static xc_status_t fix_index(const xc_node_t* n, int64_t v, int64_t size, int axis, int64_t* out) {
  int64_t r = v < 0 ? v + size : v;
  if (r < 0 || r >= size)
    return xc_node_error(n, XC_OUT_OF_RANGE, "index %lld out of range for axis %d of extent %lld",
                         (long long)v, axis, (long long)size);
  *out = r;
  return NULL;
}

static bool dtype_is_unsigned(xc_dtype_t t) {
  return t == XC_U8 || t == XC_U16 || t == XC_U32 || t == XC_U64 || t == XC_BOOL;
}

/* Product of dims[from..to), saturating: a sub-product of an empty tensor's
 * dims may exceed int64 (e.g. [0, 2^40, 2^40]); kernels return before using
 * such products, so saturation only has to avoid overflow. */
static int64_t dims_product(const int64_t* dims, int from, int to) {
  for (int d = from; d < to; d++)
    if (dims[d] == 0) return 0;
  int64_t p = 1;
  for (int d = from; d < to; d++)
    if (!xc_mul_i64(p, dims[d], &p)) return INT64_MAX;
  return p;
}

/* ---- GatherElements ------------------------------------------------------ */

static xc_status_t gather_elements_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_INDEX));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* ix = n->inputs[1];
  if (x->rank < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "data must have rank >= 1");
  if (ix->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices rank %d differs from data rank %d",
                         ix->rank, x->rank);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  return xc_value_set_type(g, n->outputs[0], x->dtype, ix->rank, ix->dims);
}

/* Shared walk of ScatterElements/GatherElements: for element i of indices
 * (multi-index idx), the flat data offset with idx[axis] replaced. */
static xc_status_t elements_offset(const xc_node_t* n, const xc_tensor_t* data,
                                   const xc_tensor_t* indices, int axis,
                                   const int64_t* data_strides, const int64_t* idx, int64_t i,
                                   int64_t* out) {
  int64_t off = 0;
  for (int d = 0; d < data->rank; d++) {
    int64_t c = idx[d];
    if (d == axis) {
      XC_RETURN_IF_ERROR(fix_index(n, xc_tensor_get_i64(indices, i), data->dims[d], d, &c));
    } else if (c >= data->dims[d]) {
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "indices extent %lld exceeds data extent %lld on axis %d",
                           (long long)indices->dims[d], (long long)data->dims[d], d);
    }
    off += c * data_strides[d];
  }
  *out = off;
  return NULL;
}

static xc_status_t gather_elements_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ix = ctx->inputs[1];
  if (ix->rank != x->rank || x->rank < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices rank must equal data rank");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, ix->rank, ix->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  size_t es = xc_dtype_size(x->dtype);
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0};
  xc_strides(x->rank, x->dims, strides);
  for (int64_t i = 0; i < ix->numel; i++, xc_index_next(ix->rank, ix->dims, idx)) {
    int64_t off;
    XC_RETURN_IF_ERROR(elements_offset(n, x, ix, axis, strides, idx, i, &off));
    memcpy((char*)y->data + (size_t)i * es, (const char*)x->data + (size_t)off * es, es);
  }
  return NULL;
}

/* ---- reductions shared by the scatters ------------------------------------ */

typedef enum scatter_reduction { SR_NONE, SR_ADD, SR_MUL, SR_MAX, SR_MIN } scatter_reduction_t;

static xc_status_t scatter_reduction_of(const xc_node_t* n, xc_dtype_t t,
                                        scatter_reduction_t* out) {
  const char* r = xc_node_attr_string(n, "reduction");
  if (strcmp(r, "none") == 0)
    *out = SR_NONE;
  else if (strcmp(r, "add") == 0)
    *out = SR_ADD;
  else if (strcmp(r, "mul") == 0)
    *out = SR_MUL;
  else if (strcmp(r, "max") == 0)
    *out = SR_MAX;
  else if (strcmp(r, "min") == 0)
    *out = SR_MIN;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown reduction '%s'", r);
  if (*out != SR_NONE && t == XC_BOOL)
    return xc_node_error(n, XC_UNSUPPORTED, "reduction '%s' on bool data", r);
  return NULL;
}

/* y[yo] = y[yo] (op) u[ui]. */
static void scatter_combine(xc_tensor_t* y, int64_t yo, const xc_tensor_t* u, int64_t ui,
                            scatter_reduction_t r) {
  size_t es = xc_dtype_size(y->dtype);
  if (r == SR_NONE) {
    memcpy((char*)y->data + (size_t)yo * es, (const char*)u->data + (size_t)ui * es, es);
    return;
  }
  if (xc_dtype_is_int(y->dtype)) {
    uint64_t a = (uint64_t)xc_tensor_get_i64(y, yo), b = (uint64_t)xc_tensor_get_i64(u, ui);
    bool uns = dtype_is_unsigned(y->dtype);
    uint64_t v = a;
    switch (r) {
      case SR_ADD: v = a + b; break;
      case SR_MUL: v = a * b; break;
      case SR_MAX: v = (uns ? b > a : (int64_t)b > (int64_t)a) ? b : a; break;
      case SR_MIN: v = (uns ? b < a : (int64_t)b < (int64_t)a) ? b : a; break;
      default: break;
    }
    xc_tensor_set_i64(y, yo, (int64_t)v);
    return;
  }
  double a = xc_tensor_get_f64(y, yo), b = xc_tensor_get_f64(u, ui), v = a;
  switch (r) {
    case SR_ADD: v = a + b; break;
    case SR_MUL: v = a * b; break;
    case SR_MAX: v = (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a); break;
    case SR_MIN: v = (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a); break;
    default: break;
  }
  xc_tensor_set_f64(y, yo, v);
}

/* ---- ScatterElements ------------------------------------------------------ */

static xc_status_t scatter_elements_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_INDEX));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT_ALL));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* ix = n->inputs[1];
  const xc_value_t* u = n->inputs[2];
  if (u->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "updates dtype %s differs from data dtype %s",
                         xc_dtype_name(u->dtype), xc_dtype_name(x->dtype));
  if (x->rank < 1 || ix->rank != x->rank || u->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "data, indices and updates must have the same rank >= 1");
  for (int d = 0; d < ix->rank; d++)
    if (xc_dim_is_static(ix->dims[d]) && xc_dim_is_static(u->dims[d]) &&
        ix->dims[d].value != u->dims[d].value)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "indices and updates shapes differ on axis %d",
                           d);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  scatter_reduction_t r;
  XC_RETURN_IF_ERROR(scatter_reduction_of(n, x->dtype, &r));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t scatter_elements_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ix = ctx->inputs[1];
  const xc_tensor_t* u = ctx->inputs[2];
  if (ix->rank != x->rank || u->rank != x->rank || u->dtype != x->dtype || x->rank < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "data, indices, updates ranks/dtypes differ");
  for (int d = 0; d < ix->rank; d++)
    if (ix->dims[d] != u->dims[d])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "indices and updates shapes differ on axis %d",
                           d);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  scatter_reduction_t r;
  XC_RETURN_IF_ERROR(scatter_reduction_of(n, x->dtype, &r));
  XC_RETURN_IF_ERROR(xc_tensor_clone(x, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0};
  xc_strides(x->rank, x->dims, strides);
  for (int64_t i = 0; i < ix->numel; i++, xc_index_next(ix->rank, ix->dims, idx)) {
    int64_t off;
    XC_RETURN_IF_ERROR(elements_offset(n, x, ix, axis, strides, idx, i, &off));
    scatter_combine(y, off, u, i, r);
  }
  return NULL;
}

/* ---- GatherND ------------------------------------------------------------ */

static xc_status_t gather_nd_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_INDEX));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* ix = n->inputs[1];
  int64_t b = xc_node_attr_int(n, "batch_dims");
  int r = x->rank, q = ix->rank;
  if (r < 1 || q < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "data and indices must have rank >= 1");
  if (b < 0 || b >= r || b >= q)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "batch_dims %lld must be less than both ranks (%d, %d)", (long long)b, r,
                         q);
  xc_dim_t kd = ix->dims[q - 1];
  if (!xc_dim_is_static(kd))
    return xc_node_error(n, XC_UNSUPPORTED, "the last dimension of indices must be static");
  int64_t k = kd.value;
  if (k < 1 || k > r - b)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices last dimension %lld must be in [1, %lld]",
                         (long long)k, (long long)(r - b));
  for (int d = 0; d < b; d++)
    if (xc_dim_is_static(x->dims[d]) && xc_dim_is_static(ix->dims[d]) &&
        x->dims[d].value != ix->dims[d].value)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "batch dimension %d differs", d);
  xc_dim_t out[2 * XC_MAX_RANK];
  int o = 0;
  for (int d = 0; d < q - 1; d++) out[o++] = ix->dims[d];
  for (int d = (int)(b + k); d < r; d++) out[o++] = x->dims[d];
  if (o > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "output rank %d too large", o);
  return xc_value_set_type(g, n->outputs[0], x->dtype, o, out);
}

static xc_status_t gather_nd_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ix = ctx->inputs[1];
  int64_t batch_dims = xc_node_attr_int(n, "batch_dims");
  int r = x->rank, q = ix->rank;
  if (q < 1 || batch_dims < 0 || batch_dims >= r || batch_dims >= q)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "bad ranks or batch_dims");
  int b = (int)batch_dims;
  int64_t k = ix->dims[q - 1];
  if (k < 1 || k > r - b)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices last dimension %lld out of range",
                         (long long)k);
  for (int d = 0; d < b; d++)
    if (x->dims[d] != ix->dims[d])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "batch dimension %d differs", d);
  int64_t out_dims[2 * XC_MAX_RANK];
  int o = 0;
  for (int d = 0; d < q - 1; d++) out_dims[o++] = ix->dims[d];
  for (int d = (int)(b + k); d < r; d++) out_dims[o++] = x->dims[d];
  if (o > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "output rank too large");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, o, out_dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (y->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK];
  xc_strides(r, x->dims, strides);
  int64_t batches = dims_product(ix->dims, 0, b);
  int64_t tuples = dims_product(ix->dims, b, q - 1);
  int64_t slice = dims_product(x->dims, (int)(b + k), r);
  int64_t batch_stride = b > 0 ? strides[b - 1] : 0;
  size_t es = xc_dtype_size(x->dtype);
  for (int64_t bi = 0; bi < batches; bi++)
    for (int64_t t = 0; t < tuples; t++) {
      int64_t row = bi * tuples + t, off = bi * batch_stride;
      for (int64_t j = 0; j < k; j++) {
        int64_t c = 0;
        XC_RETURN_IF_ERROR(
            fix_index(n, xc_tensor_get_i64(ix, row * k + j), x->dims[b + j], (int)(b + j), &c));
        off += c * strides[b + j];
      }
      memcpy((char*)y->data + (size_t)(row * slice) * es, (const char*)x->data + (size_t)off * es,
             (size_t)slice * es);
    }
  return NULL;
}

/* ---- ScatterND ----------------------------------------------------------- */

static xc_status_t scatter_nd_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_INDEX));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT_ALL));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* ix = n->inputs[1];
  const xc_value_t* u = n->inputs[2];
  if (u->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "updates dtype differs from data dtype");
  int r = x->rank, q = ix->rank;
  if (r < 1 || q < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "data and indices must have rank >= 1");
  xc_dim_t kd = ix->dims[q - 1];
  if (xc_dim_is_static(kd)) {
    int64_t k = kd.value;
    if (k < 1 || k > r)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "indices last dimension %lld must be in [1, %d]",
                           (long long)k, r);
    if (u->rank != q - 1 + r - k)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "updates rank %d, expected %lld", u->rank,
                           (long long)(q - 1 + r - k));
  }
  scatter_reduction_t red;
  XC_RETURN_IF_ERROR(scatter_reduction_of(n, x->dtype, &red));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t scatter_nd_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ix = ctx->inputs[1];
  const xc_tensor_t* u = ctx->inputs[2];
  int r = x->rank, q = ix->rank;
  if (q < 1 || r < 1 || u->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "bad ranks or dtypes");
  int64_t k = ix->dims[q - 1];
  if (k < 1 || k > r)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices last dimension %lld out of range",
                         (long long)k);
  bool shape_ok = u->rank == q - 1 + r - k;
  for (int d = 0; shape_ok && d < q - 1; d++) shape_ok = u->dims[d] == ix->dims[d];
  for (int d = (int)k; shape_ok && d < r; d++) shape_ok = u->dims[q - 1 + d - k] == x->dims[d];
  if (!shape_ok)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "updates shape must be indices.shape[:-1] + data.shape[k:]");
  scatter_reduction_t red;
  XC_RETURN_IF_ERROR(scatter_reduction_of(n, x->dtype, &red));
  XC_RETURN_IF_ERROR(xc_tensor_clone(x, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t strides[XC_MAX_RANK];
  xc_strides(r, x->dims, strides);
  int64_t tuples = dims_product(ix->dims, 0, q - 1);
  int64_t slice = dims_product(x->dims, (int)k, r);
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t c = 0;
      XC_RETURN_IF_ERROR(fix_index(n, xc_tensor_get_i64(ix, t * k + j), x->dims[j], (int)j, &c));
      off += c * strides[j];
    }
    for (int64_t e = 0; e < slice; e++) scatter_combine(y, off + e, u, t * slice + e, red);
  }
  return NULL;
}

/* ---- ArgMax / ArgMin ----------------------------------------------------- */

static xc_status_t arg_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, n->op->dtypes));
  const xc_value_t* x = n->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  bool keep = xc_node_attr_int(n, "keepdims") != 0;
  xc_dim_t out[XC_MAX_RANK];
  int o = 0;
  for (int d = 0; d < x->rank; d++) {
    if (d != axis)
      out[o++] = x->dims[d];
    else if (keep)
      out[o++] = xc_dim_const(1);
  }
  return xc_value_set_type(g, n->outputs[0], XC_I64, o, out);
}

/* Three-way comparison of elements i and j of t (NaN sorts above numbers). */
static int compare_elems(const xc_tensor_t* t, int64_t i, int64_t j) {
  if (xc_dtype_is_int(t->dtype) || t->dtype == XC_BOOL) {
    int64_t a = xc_tensor_get_i64(t, i), b = xc_tensor_get_i64(t, j);
    if (dtype_is_unsigned(t->dtype)) return (uint64_t)a < (uint64_t)b ? -1 : (a != b);
    return a < b ? -1 : (a > b);
  }
  double a = xc_tensor_get_f64(t, i), b = xc_tensor_get_f64(t, j);
  if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
  return a < b ? -1 : (a > b);
}

static xc_status_t arg_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  bool is_max = strcmp(n->op_type, "ArgMax") == 0;
  bool last = xc_node_attr_int(n, "select_last_index") != 0;
  bool keep = xc_node_attr_int(n, "keepdims") != 0;
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  int64_t len = x->dims[axis];
  int64_t out_dims[XC_MAX_RANK];
  int o = 0;
  for (int d = 0; d < x->rank; d++) {
    if (d != axis)
      out_dims[o++] = x->dims[d];
    else if (keep)
      out_dims[o++] = 1;
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, o, out_dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (y->numel == 0) return NULL;
  if (len == 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot take %s over an empty axis", n->op_type);
  int64_t outer = dims_product(x->dims, 0, axis), inner = dims_product(x->dims, axis + 1, x->rank);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      int64_t base = a * len * inner + c, best = 0;
      for (int64_t i = 1; i < len; i++) {
        int cmp = compare_elems(x, base + i * inner, base + best * inner);
        if (!is_max) cmp = -cmp;
        /* NaN wins both ways, first occurrence (numpy). */
        if (!xc_dtype_is_int(x->dtype) && x->dtype != XC_BOOL) {
          bool nan_i = isnan(xc_tensor_get_f64(x, base + i * inner));
          bool nan_b = isnan(xc_tensor_get_f64(x, base + best * inner));
          if (nan_b && !(last && nan_i)) continue;
          if (nan_i) cmp = 1;
        }
        if (cmp > 0 || (cmp == 0 && last)) best = i;
      }
      xc_tensor_set_i64(y, a * inner + c, best);
    }
  return NULL;
}

/* ---- CumSum -------------------------------------------------------------- */

static xc_status_t cumsum_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_INDEX));
  const xc_value_t* ax = n->inputs[1];
  if (ax->rank > 1 || (ax->rank == 1 && xc_dim_is_static(ax->dims[0]) && ax->dims[0].value != 1))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "axis must be a scalar");
  int64_t cnt;
  const xc_dim_t* e;
  if (xc_value_known_elems(g, ax, &cnt, &e) && cnt == 1 && !e[0].sym) {
    int a;
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, e[0].value, n->inputs[0]->rank, &a));
  }
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t cumsum_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ax = ctx->inputs[1];
  if (ax->numel != 1 || ax->rank > 1 || !xc_dtype_is_int(ax->dtype))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "axis must be an integer scalar");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_tensor_get_i64(ax, 0), x->rank, &axis));
  bool exclusive = xc_node_attr_int(n, "exclusive") != 0;
  bool reverse = xc_node_attr_int(n, "reverse") != 0;
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (x->numel == 0) return NULL;
  int64_t len = x->dims[axis];
  int64_t outer = dims_product(x->dims, 0, axis), inner = dims_product(x->dims, axis + 1, x->rank);
  bool is_int = xc_dtype_is_int(x->dtype);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      uint64_t isum = 0;
      double fsum = 0.0;
      for (int64_t s = 0; s < len; s++) {
        int64_t i = reverse ? len - 1 - s : s;
        int64_t off = (a * len + i) * inner + c;
        if (exclusive) {
          if (is_int)
            xc_tensor_set_i64(y, off, (int64_t)isum);
          else
            xc_tensor_set_f64(y, off, fsum);
        }
        if (is_int)
          isum += (uint64_t)xc_tensor_get_i64(x, off);
        else
          fsum += xc_tensor_get_f64(x, off);
        if (!exclusive) {
          if (is_int)
            xc_tensor_set_i64(y, off, (int64_t)isum);
          else
            xc_tensor_set_f64(y, off, fsum);
        }
      }
    }
  return NULL;
}

/* ---- TopK ---------------------------------------------------------------- */

static xc_status_t topk_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* kv = n->inputs[1];
  if (kv->rank > 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "K must be a 1-element 1-D tensor");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  int64_t cnt;
  const xc_dim_t* e;
  xc_dim_t kdim;
  if (xc_value_known_elems(g, kv, &cnt, &e) && cnt == 1) {
    kdim = e[0];
    if (!kdim.sym) {
      if (kdim.value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "K = %lld is negative", (long long)kdim.value);
      if (xc_dim_is_static(x->dims[axis]) && kdim.value > x->dims[axis].value)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "K = %lld exceeds axis extent %lld",
                             (long long)kdim.value, (long long)x->dims[axis].value);
    }
  } else {
    kdim = xc_dim_fresh(g, "topk");
  }
  xc_dim_t out[XC_MAX_RANK];
  for (int d = 0; d < x->rank; d++) out[d] = d == axis ? kdim : x->dims[d];
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out));
  if (n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[1], XC_I64, x->rank, out));
  return NULL;
}

typedef struct topk_sort {
  const xc_tensor_t* x;
  int64_t base, stride;
  bool largest;
} topk_sort_t;

/* true when position a (of the slice) goes before b: by value in the
 * requested direction, ties by lower index. */
static bool topk_before(const void* ctx, int64_t a, int64_t b) {
  const topk_sort_t* s = ctx;
  int c = compare_elems(s->x, s->base + a * s->stride, s->base + b * s->stride);
  if (c != 0) return s->largest ? c > 0 : c < 0;
  return a < b;
}

/* Stable merge sort of positions v[0..n) with scratch tmp[0..n). */
static void merge_sort(int64_t* v, int64_t* tmp, int64_t n,
                       bool (*before)(const void*, int64_t, int64_t), const void* ctx) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(v, tmp, h, before, ctx);
  merge_sort(v + h, tmp, n - h, before, ctx);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = before(ctx, v[j], v[i]) ? v[j++] : v[i++];
  while (i < h) tmp[o++] = v[i++];
  while (j < n) tmp[o++] = v[j++];
  memcpy(v, tmp, (size_t)n * sizeof *v);
}

static xc_status_t topk_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* kt = ctx->inputs[1];
  if (kt->numel != 1 || kt->rank > 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "K must hold exactly one element");
  int64_t k = xc_tensor_get_i64(kt, 0);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  int64_t len = x->dims[axis];
  if (k < 0 || k > len)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "K = %lld out of range [0, %lld]", (long long)k,
                         (long long)len);
  int64_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = k;
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, dims, &ctx->outputs[0]));
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, x->rank, dims, &ctx->outputs[1]));
  xc_tensor_t* vals = ctx->outputs[0];
  xc_tensor_t* idxs = ctx->outputs[1];
  if (vals->numel == 0) return NULL;
  int64_t outer = dims_product(x->dims, 0, axis), inner = dims_product(x->dims, axis + 1, x->rank);
  int64_t* pos = malloc(sizeof(int64_t) * (size_t)len * 2);
  if (!pos) return xc_error_oom();
  topk_sort_t s = {x, 0, inner, xc_node_attr_int(n, "largest") != 0};
  size_t es = xc_dtype_size(x->dtype);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      s.base = a * len * inner + c;
      for (int64_t i = 0; i < len; i++) pos[i] = i;
      merge_sort(pos, pos + len, len, topk_before, &s);
      /* sorted=0 leaves the order unspecified; the sorted order is one. */
      for (int64_t i = 0; i < k; i++) {
        int64_t out = (a * k + i) * inner + c;
        memcpy((char*)vals->data + (size_t)out * es,
               (const char*)x->data + (size_t)(s.base + pos[i] * inner) * es, es);
        xc_tensor_set_i64(idxs, out, pos[i]);
      }
    }
  free(pos);
  return NULL;
}

/* ---- Unique -------------------------------------------------------------- */

/* Items are elements (no axis) or slices along axis; item j covers elements
 * (a * len + j) * inner + c for a < outer, c < inner. */
typedef struct unique_items {
  const xc_tensor_t* x;
  int64_t outer, len, inner;
} unique_items_t;

static int unique_compare(const unique_items_t* u, int64_t a, int64_t b) {
  for (int64_t o = 0; o < u->outer; o++)
    for (int64_t c = 0; c < u->inner; c++) {
      int r = compare_elems(u->x, (o * u->len + a) * u->inner + c, (o * u->len + b) * u->inner + c);
      if (r) return r;
    }
  return 0;
}

static bool unique_before(const void* ctx, int64_t a, int64_t b) {
  int c = unique_compare(ctx, a, b);
  return c != 0 ? c < 0 : a < b;
}

static bool position_before(const void* ctx, int64_t a, int64_t b) {
  const int64_t* first = ctx;
  return first[a] < first[b];
}

static xc_status_t unique_axis(const xc_node_t* n, int rank, int* axis) {
  *axis = -1;
  if (!xc_node_has_attr(n, "axis")) return NULL;
  return xc_normalize_axis(n, xc_node_attr_int(n, "axis"), rank, axis);
}

static xc_status_t unique_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  const xc_value_t* x = n->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(unique_axis(n, x->rank, &axis));
  xc_dim_t u = xc_dim_fresh(g, "unique"), dims[XC_MAX_RANK], total = xc_dim_const(1);
  for (int d = 0; d < x->rank; d++) total = xc_dim_mul(g, total, x->dims[d]);
  if (axis < 0) {
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, 1, &u));
  } else {
    for (int d = 0; d < x->rank; d++) dims[d] = d == axis ? u : x->dims[d];
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, dims));
  }
  xc_dim_t inverse = axis < 0 ? total : x->dims[axis];
  if (n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[1], XC_I64, 1, &u));
  if (n->num_outputs > 2 && n->outputs[2])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[2], XC_I64, 1, &inverse));
  if (n->num_outputs > 3 && n->outputs[3])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[3], XC_I64, 1, &u));
  return NULL;
}

static xc_status_t unique_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(unique_axis(n, x->rank, &axis));
  unique_items_t items = {x, 1, x->numel, 1};
  if (axis >= 0) {
    items.outer = dims_product(x->dims, 0, axis);
    items.len = x->dims[axis];
    items.inner = dims_product(x->dims, axis + 1, x->rank);
    if (x->numel == 0) items.outer = items.inner = 0; /* empty slices */
  }
  int64_t len = items.len;
  if (len > (INT64_C(1) << 40))
    return xc_node_error(n, XC_RESOURCE_EXHAUSTED, "%lld items are too many", (long long)len);
  /* order: positions sorted by value; group[i]: unique id of item i;
   * first[k], count[k]: first position and count of unique k. */
  int64_t* buf = malloc(sizeof(int64_t) * (size_t)(len ? len : 1) * 6);
  if (!buf) return xc_error_oom();
  int64_t *order = buf, *tmp = buf + len, *group = buf + 2 * len, *first = buf + 3 * len,
          *count = buf + 4 * len, *rank_of = buf + 5 * len;
  for (int64_t i = 0; i < len; i++) order[i] = i;
  merge_sort(order, tmp, len, unique_before, &items);
  int64_t num = 0;
  for (int64_t i = 0; i < len; i++) {
    if (i == 0 || unique_compare(&items, order[i - 1], order[i]) != 0) {
      first[num] = order[i]; /* lowest index of the group: the sort is stable */
      count[num++] = 0;
    }
    group[order[i]] = num - 1;
    count[num - 1]++;
  }
  /* rank_of[k]: output slot of sorted unique k (by first occurrence when unsorted). */
  for (int64_t k = 0; k < num; k++) tmp[k] = k;
  if (!xc_node_attr_int(n, "sorted")) merge_sort(tmp, order, num, position_before, first);
  for (int64_t k = 0; k < num; k++) rank_of[tmp[k]] = k;

  int64_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  int out_rank = x->rank;
  if (axis < 0) {
    out_rank = 1;
    dims[0] = num;
  } else {
    dims[axis] = num;
  }
  xc_status_t s = xc_tensor_create(x->dtype, out_rank, dims, &ctx->outputs[0]);
  for (int i = 1; i < 4 && !s; i++)
    if (i < ctx->num_outputs && n->outputs[i])
      s = xc_tensor_create(XC_I64, 1, i == 2 ? &len : &num, &ctx->outputs[i]);
  if (!s) {
    size_t es = xc_dtype_size(x->dtype);
    xc_tensor_t* y = ctx->outputs[0];
    for (int64_t k = 0; k < num; k++) {
      int64_t slot = rank_of[k];
      for (int64_t o = 0; o < items.outer; o++)
        memcpy((char*)y->data + (size_t)((o * num + slot) * items.inner) * es,
               (const char*)x->data + (size_t)((o * len + first[k]) * items.inner) * es,
               (size_t)items.inner * es);
      if (ctx->num_outputs > 1 && ctx->outputs[1])
        xc_tensor_set_i64(ctx->outputs[1], slot, first[k]);
      if (ctx->num_outputs > 3 && ctx->outputs[3])
        xc_tensor_set_i64(ctx->outputs[3], slot, count[k]);
    }
    if (ctx->num_outputs > 2 && ctx->outputs[2])
      for (int64_t i = 0; i < len; i++) xc_tensor_set_i64(ctx->outputs[2], i, rank_of[group[i]]);
  }
  free(buf);
  return s;
}

/* ---- table --------------------------------------------------------------- */

static const xc_attr_def_t axis0_attrs[] = {XC_ATTR_I("axis", 0), XC_ATTR_END};
static const xc_attr_def_t gather_nd_attrs[] = {XC_ATTR_I("batch_dims", 0), XC_ATTR_END};
static const xc_attr_def_t scatter_elements_attrs[] = {XC_ATTR_I("axis", 0),
                                                       XC_ATTR_S("reduction", "none"), XC_ATTR_END};
static const xc_attr_def_t scatter_nd_attrs[] = {XC_ATTR_S("reduction", "none"), XC_ATTR_END};
static const xc_attr_def_t arg_attrs[] = {XC_ATTR_I("axis", 0), XC_ATTR_I("keepdims", 1),
                                          XC_ATTR_I("select_last_index", 0), XC_ATTR_END};
static const xc_attr_def_t cumsum_attrs[] = {XC_ATTR_I("exclusive", 0), XC_ATTR_I("reverse", 0),
                                             XC_ATTR_END};
static const xc_attr_def_t topk_attrs[] = {XC_ATTR_I("axis", -1), XC_ATTR_I("largest", 1),
                                           XC_ATTR_I("sorted", 1), XC_ATTR_END};

static const xc_attr_def_t unique_attrs[] = {XC_ATTR_OPT("axis", XC_ATTR_INT),
                                             XC_ATTR_I("sorted", 1), XC_ATTR_END};

const xc_op_def_t xc_ops_index[] = {
    {"GatherElements", "", 2, 2, 1, 1, axis0_attrs, XC_DT_ALL, gather_elements_infer,
     gather_elements_eval, "y[i][j] = data[i][indices[i][j]] along axis (any rank)."},
    {"GatherND", "", 2, 2, 1, 1, gather_nd_attrs, XC_DT_ALL, gather_nd_infer, gather_nd_eval,
     "Gathers slices of data addressed by index tuples (last dim of indices), with batch_dims."},
    {"ScatterElements", "", 3, 3, 1, 1, scatter_elements_attrs, XC_DT_ALL, scatter_elements_infer,
     scatter_elements_eval,
     "Copy of data with updates written at indices along axis (reduction none/add/mul/max/min)."},
    {"ScatterND", "", 3, 3, 1, 1, scatter_nd_attrs, XC_DT_ALL, scatter_nd_infer, scatter_nd_eval,
     "Copy of data with update slices written at index tuples (optional reduction)."},
    {"ArgMax", "", 1, 1, 1, 1, arg_attrs, XC_DT_NUMERIC | XC_DT(XC_BOOL), arg_infer, arg_eval,
     "Index of the maximum along axis (first, or last with select_last_index)."},
    {"ArgMin", "", 1, 1, 1, 1, arg_attrs, XC_DT_NUMERIC | XC_DT(XC_BOOL), arg_infer, arg_eval,
     "Index of the minimum along axis (first, or last with select_last_index)."},
    {"CumSum", "", 2, 2, 1, 1, cumsum_attrs, XC_DT_NUMERIC, cumsum_infer, cumsum_eval,
     "Cumulative sum along axis (input), optionally exclusive and/or reversed."},
    {"TopK", "", 2, 2, 2, 2, topk_attrs, XC_DT_NUMERIC, topk_infer, topk_eval,
     "K largest (or smallest) elements along axis and their indices; ties keep lower index first."},
    {"Unique", "", 1, 1, 1, 4, unique_attrs, XC_DT_ALL, unique_infer, unique_eval,
     "Unique elements (or slices along axis), sorted or in first-occurrence order, with "
     "first indices, inverse indices and counts."},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
