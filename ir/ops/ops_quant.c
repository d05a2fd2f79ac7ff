/* Op family 'quant': QuantizeLinear, DequantizeLinear (per-tensor, per-axis
 * and blocked scales), DynamicQuantizeLinear and QLinearMatMul (ONNX opset
 * 23).
 *
 * QuantizeLinear divides at the precision of the scale (or of the
 * `precision` attribute), rounds half to even, adds the zero point and
 * saturates into the output type; fp8 outputs follow Cast's `saturate`. */
#include <math.h>
#include <string.h>

#include "elementwise_util.h"
#include "xcomp/op.h"

#define DT_F8 (XC_DT(XC_F8E4M3FN) | XC_DT(XC_F8E5M2))
#define DT_QUANTIZED \
  (XC_DT(XC_I8) | XC_DT(XC_U8) | XC_DT(XC_I16) | XC_DT(XC_U16) | DT_F8)
#define DT_SCALE (XC_DT(XC_F32) | XC_DT(XC_F16) | XC_DT(XC_BF16))

/* How a scale tensor maps onto x. */
typedef enum scale_layout { LAYOUT_TENSOR, LAYOUT_AXIS, LAYOUT_BLOCKED } scale_layout_t;

static xc_dtype_t dtype_attr(const xc_node_t* n, const char* name) {
  int64_t v = xc_node_attr_int(n, name);
  if (v <= 0 || v > INT32_MAX) return XC_DTYPE_UNDEFINED;
  return xc_dtype_from_onnx((int32_t)v);
}

/* Validates the scale (and zero point) shape against x and returns the
 * layout and normalized axis. Symbolic dims are left to the kernel. */
static xc_status_t infer_layout(const xc_node_t* n, const xc_value_t* x, const xc_value_t* scale,
                                scale_layout_t* layout, int* axis) {
  int64_t block = xc_node_attr_int(n, "block_size");
  *axis = 0;
  if (block < 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "block_size must be >= 0");
  if (block == 0 && (scale->rank == 0 ||
                     (scale->rank == 1 && !scale->dims[0].sym && scale->dims[0].value == 1 &&
                      (x->rank == 0)))) {
    *layout = LAYOUT_TENSOR;
    return NULL;
  }
  if (x->rank == 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "a scalar input needs a scalar scale");
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, axis));
  xc_dim_t xd = x->dims[*axis];
  if (block == 0) {
    if (scale->rank != 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "per-axis scale must be 1-D, got rank %d", scale->rank);
    xc_dim_t sd = scale->dims[0];
    if (!sd.sym && !xd.sym && sd.value != xd.value && sd.value != 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "per-axis scale has %lld elements, axis %d has %lld",
                           (long long)sd.value, *axis, (long long)xd.value);
    *layout = LAYOUT_AXIS;
    return NULL;
  }
  if (scale->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "blocked scale must have the rank of the input (%d), got %d", x->rank,
                         scale->rank);
  for (int d = 0; d < x->rank; d++) {
    xc_dim_t sd = scale->dims[d], dd = x->dims[d];
    if (sd.sym || dd.sym) continue;
    int64_t want = d == *axis ? (dd.value + block - 1) / block : dd.value;
    if (sd.value != want)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "blocked scale dim %d is %lld, expected %lld", d,
                           (long long)sd.value, (long long)want);
  }
  *layout = LAYOUT_BLOCKED;
  return NULL;
}

/* Scalars and one-element vectors are interchangeable for per-tensor
 * parameters (ONNX tests use both). */
static bool is_single_value(const xc_value_t* v) {
  return v->rank == 0 || (v->rank == 1 && !v->dims[0].sym && v->dims[0].value == 1);
}

static xc_status_t check_zero_point_shape(const xc_node_t* n, const xc_value_t* scale,
                                          const xc_value_t* zp) {
  if (!zp) return NULL;
  if (is_single_value(zp) && is_single_value(scale)) return NULL;
  bool same = zp->rank == scale->rank;
  for (int d = 0; same && d < zp->rank; d++)
    if (!zp->dims[d].sym && !scale->dims[d].sym && zp->dims[d].value != scale->dims[d].value)
      same = false;
  if (!same) return xc_node_error(n, XC_INVALID_ARGUMENT, "zero point shape differs from scale");
  return NULL;
}

static xc_status_t quantize_out_dtype(const xc_node_t* n, xc_dtype_t zp_dtype, xc_dtype_t* out) {
  xc_dtype_t attr = dtype_attr(n, "output_dtype");
  if (xc_node_attr_int(n, "output_dtype") != 0 && attr == XC_DTYPE_UNDEFINED)
    return xc_node_error(n, XC_UNSUPPORTED, "unsupported output_dtype %lld",
                         (long long)xc_node_attr_int(n, "output_dtype"));
  xc_dtype_t t = zp_dtype != XC_DTYPE_UNDEFINED ? zp_dtype
                 : attr != XC_DTYPE_UNDEFINED   ? attr
                                                : XC_U8;
  if (zp_dtype != XC_DTYPE_UNDEFINED && attr != XC_DTYPE_UNDEFINED && attr != zp_dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "output_dtype %s disagrees with zero point %s",
                         xc_dtype_name(attr), xc_dtype_name(zp_dtype));
  if (!(XC_DT(t) & DT_QUANTIZED))
    return xc_node_error(n, XC_UNSUPPORTED, "cannot quantize to %s", xc_dtype_name(t));
  *out = t;
  return NULL;
}

static const xc_value_t* opt_input(const xc_node_t* n, int i) {
  return i < n->num_inputs ? n->inputs[i] : NULL;
}

static xc_status_t infer_quantize(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, DT_SCALE | XC_DT(XC_I32)));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, DT_SCALE | XC_DT(XC_I32)));
  const xc_value_t* zp = opt_input(n, 2);
  xc_dtype_t out;
  XC_RETURN_IF_ERROR(quantize_out_dtype(n, zp ? zp->dtype : XC_DTYPE_UNDEFINED, &out));
  scale_layout_t layout;
  int axis;
  XC_RETURN_IF_ERROR(infer_layout(n, n->inputs[0], n->inputs[1], &layout, &axis));
  XC_RETURN_IF_ERROR(check_zero_point_shape(n, n->inputs[1], zp));
  if (xc_node_attr_int(n, "precision") != 0 &&
      !xc_dtype_is_float(dtype_attr(n, "precision")))
    return xc_node_error(n, XC_UNSUPPORTED, "precision must be a float type");
  const xc_value_t* x = n->inputs[0];
  return xc_value_set_type(g, n->outputs[0], out, x->rank, x->dims);
}

static xc_status_t dequantize_out_dtype(const xc_node_t* n, xc_dtype_t scale_dtype,
                                        xc_dtype_t* out) {
  xc_dtype_t t = scale_dtype;
  if (xc_node_attr_int(n, "output_dtype") != 0) {
    t = dtype_attr(n, "output_dtype");
    if (!(XC_DT(t) & DT_SCALE))
      return xc_node_error(n, XC_UNSUPPORTED, "unsupported output_dtype %lld",
                           (long long)xc_node_attr_int(n, "output_dtype"));
  }
  *out = t;
  return NULL;
}

static xc_status_t infer_dequantize(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, DT_QUANTIZED | XC_DT(XC_I32)));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, DT_SCALE));
  const xc_value_t* zp = opt_input(n, 2);
  if (zp) XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, 2));
  xc_dtype_t out;
  XC_RETURN_IF_ERROR(dequantize_out_dtype(n, n->inputs[1]->dtype, &out));
  scale_layout_t layout;
  int axis;
  XC_RETURN_IF_ERROR(infer_layout(n, n->inputs[0], n->inputs[1], &layout, &axis));
  XC_RETURN_IF_ERROR(check_zero_point_shape(n, n->inputs[1], zp));
  const xc_value_t* x = n->inputs[0];
  return xc_value_set_type(g, n->outputs[0], out, x->rank, x->dims);
}

/* ---- kernels ------------------------------------------------------------ */

/* For each element of x, the flat index of its scale / zero point. */
typedef struct scale_map {
  scale_layout_t layout;
  int axis;
  int64_t block;
  int64_t scale_strides[XC_MAX_RANK];
} scale_map_t;

static xc_status_t kernel_layout(const xc_node_t* n, const xc_tensor_t* x,
                                 const xc_tensor_t* scale, const xc_tensor_t* zp,
                                 scale_map_t* m) {
  memset(m, 0, sizeof *m);
  m->block = xc_node_attr_int(n, "block_size");
  if (zp && !(zp->numel == 1 && scale->numel == 1 && zp->rank <= 1 && scale->rank <= 1)) {
    bool same = zp->rank == scale->rank;
    for (int d = 0; same && d < zp->rank; d++) same = zp->dims[d] == scale->dims[d];
    if (!same) return xc_node_error(n, XC_INVALID_ARGUMENT, "zero point shape differs from scale");
  }
  if (m->block < 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "block_size must be >= 0");
  if (m->block == 0 && (scale->rank == 0 || (scale->numel == 1 && x->rank == 0))) {
    m->layout = LAYOUT_TENSOR;
    return NULL;
  }
  if (x->rank == 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "a scalar input needs a scalar scale");
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &m->axis));
  if (m->block == 0) {
    if (scale->rank != 1 || (scale->dims[0] != x->dims[m->axis] && scale->dims[0] != 1))
      return xc_node_error(n, XC_INVALID_ARGUMENT, "per-axis scale does not match axis %d",
                           m->axis);
    m->layout = scale->dims[0] == 1 && x->dims[m->axis] != 1 ? LAYOUT_TENSOR : LAYOUT_AXIS;
    return NULL;
  }
  if (scale->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "blocked scale must have the input's rank");
  for (int d = 0; d < x->rank; d++) {
    int64_t want = d == m->axis ? (x->dims[d] + m->block - 1) / m->block : x->dims[d];
    if (scale->dims[d] != want)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "blocked scale dim %d is %lld, expected %lld",
                           d, (long long)scale->dims[d], (long long)want);
  }
  xc_strides(scale->rank, scale->dims, m->scale_strides);
  m->layout = LAYOUT_BLOCKED;
  return NULL;
}

static int64_t scale_index(const scale_map_t* m, int rank, const int64_t* idx) {
  switch (m->layout) {
    case LAYOUT_TENSOR: return 0;
    case LAYOUT_AXIS: return idx[m->axis];
    case LAYOUT_BLOCKED: {
      int64_t off = 0;
      for (int d = 0; d < rank; d++)
        off += (d == m->axis ? idx[d] / m->block : idx[d]) * m->scale_strides[d];
      return off;
    }
  }
  return 0;
}

static void integer_range(xc_dtype_t t, double* lo, double* hi) {
  switch (t) {
    case XC_I8: *lo = -128; *hi = 127; break;
    case XC_U8: *lo = 0; *hi = 255; break;
    case XC_I16: *lo = -32768; *hi = 32767; break;
    case XC_U16: *lo = 0; *hi = 65535; break;
    default: *lo = -2147483648.0; *hi = 2147483647.0; break;
  }
}

static xc_status_t eval_quantize(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* scale = ctx->inputs[1];
  const xc_tensor_t* zp = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  xc_dtype_t out;
  XC_RETURN_IF_ERROR(quantize_out_dtype(n, zp ? zp->dtype : XC_DTYPE_UNDEFINED, &out));
  scale_map_t m;
  XC_RETURN_IF_ERROR(kernel_layout(n, x, scale, zp, &m));
  xc_dtype_t precision = xc_node_attr_int(n, "precision") != 0 ? dtype_attr(n, "precision")
                                                               : scale->dtype;
  bool saturate = xc_node_attr_int(n, "saturate") != 0;
  XC_RETURN_IF_ERROR(xc_tensor_create(out, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  bool is_f8 = (XC_DT(out) & DT_F8) != 0;
  double lo = 0, hi = 0;
  integer_range(out, &lo, &hi);
  int64_t idx[XC_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->numel; i++, xc_index_next(x->rank, x->dims, idx)) {
    int64_t si = scale_index(&m, x->rank, idx);
    double s = xc_tensor_get_f64(scale, si);
    double q = xc_round_to_dtype(precision, xc_tensor_get_f64(x, i) / s);
    double z = zp ? xc_tensor_get_f64(zp, si) : 0.0;
    if (is_f8) {
      xc_ew_store_f8(y, i, q + z, saturate);
    } else {
      double v = xc_ew_round_half_even(q) + z;
      if (isnan(v)) v = 0;
      xc_tensor_set_f64(y, i, v < lo ? lo : v > hi ? hi : v);
    }
  }
  return NULL;
}

static xc_status_t eval_dequantize(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* scale = ctx->inputs[1];
  const xc_tensor_t* zp = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  if (zp && zp->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "zero point dtype differs from input");
  xc_dtype_t out;
  XC_RETURN_IF_ERROR(dequantize_out_dtype(n, scale->dtype, &out));
  scale_map_t m;
  XC_RETURN_IF_ERROR(kernel_layout(n, x, scale, zp, &m));
  XC_RETURN_IF_ERROR(xc_tensor_create(out, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t idx[XC_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->numel; i++, xc_index_next(x->rank, x->dims, idx)) {
    int64_t si = scale_index(&m, x->rank, idx);
    double z = zp ? xc_tensor_get_f64(zp, si) : 0.0;
    xc_tensor_set_f64(y, i, (xc_tensor_get_f64(x, i) - z) * xc_tensor_get_f64(scale, si));
  }
  return NULL;
}

/* ---- QLinearMatMul -------------------------------------------------------- */

/* numpy matmul shapes: 1-D operands are promoted (a to [1,K], b to [K,1])
 * and the promoted axis is dropped from the result; batch dims broadcast. */
static xc_status_t infer_qlinear_matmul(xc_graph_t* g, xc_node_t* n) {
  uint32_t q8 = XC_DT(XC_I8) | XC_DT(XC_U8) | DT_F8;
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, q8));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, DT_SCALE));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 3, q8));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 4, DT_SCALE));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 6, DT_SCALE));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 7, q8));
  if (n->inputs[2]) XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, 2));
  if (n->inputs[5]) XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 3, 5));
  const xc_value_t* a = n->inputs[0];
  const xc_value_t* b = n->inputs[3];
  if (a->rank < 1 || b->rank < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "matmul operands must have rank >= 1");
  xc_dim_t ka = a->dims[a->rank - 1];
  xc_dim_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  if (!ka.sym && !kb.sym && ka.value != kb.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld",
                         (long long)ka.value, (long long)kb.value);
  int batch_a = a->rank > 2 ? a->rank - 2 : 0, batch_b = b->rank > 2 ? b->rank - 2 : 0;
  int rank;
  xc_dim_t dims[XC_MAX_RANK + 2];
  XC_RETURN_IF_ERROR(xc_infer_broadcast(g, n, batch_a, a->dims, batch_b, b->dims, &rank, dims));
  if (a->rank >= 2) dims[rank++] = a->dims[a->rank - 2];
  if (b->rank >= 2) dims[rank++] = b->dims[b->rank - 1];
  if (rank > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "result rank too large");
  return xc_value_set_type(g, n->outputs[0], n->inputs[7]->dtype, rank, dims);
}

/* Scale or zero point of one row (a) or column (b): a scalar / one-element
 * tensor applies to all, a 1-D tensor of `count` elements is indexed. */
static xc_status_t check_row_param(const xc_node_t* n, const xc_tensor_t* t, int64_t count,
                                   const char* what) {
  if (!t || t->numel == 1) return NULL;
  if (t->rank == 1 && t->dims[0] == count) return NULL;
  return xc_node_error(n, XC_INVALID_ARGUMENT, "%s must have 1 or %lld elements, got %lld", what,
                       (long long)count, (long long)t->numel);
}

static double param_at(const xc_tensor_t* t, int64_t i) {
  if (!t) return 0.0;
  return xc_tensor_get_f64(t, t->numel == 1 ? 0 : i);
}

static xc_status_t eval_qlinear_matmul(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  if (ctx->num_inputs < 8 || !ctx->inputs[3] || !ctx->inputs[4] || !ctx->inputs[6] ||
      !ctx->inputs[7])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "missing input");
  const xc_tensor_t *a = ctx->inputs[0], *a_scale = ctx->inputs[1], *a_zp = ctx->inputs[2];
  const xc_tensor_t *b = ctx->inputs[3], *b_scale = ctx->inputs[4], *b_zp = ctx->inputs[5];
  const xc_tensor_t *y_scale = ctx->inputs[6], *y_zp = ctx->inputs[7];
  if (a->rank < 1 || b->rank < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "matmul operands must have rank >= 1");
  int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
  int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  int64_t cols = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  if (k != kb)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld",
                         (long long)k, (long long)kb);
  XC_RETURN_IF_ERROR(check_row_param(n, a_scale, m, "a_scale"));
  XC_RETURN_IF_ERROR(check_row_param(n, a_zp, m, "a_zero_point"));
  XC_RETURN_IF_ERROR(check_row_param(n, b_scale, cols, "b_scale"));
  XC_RETURN_IF_ERROR(check_row_param(n, b_zp, cols, "b_zero_point"));
  if (y_scale->numel != 1 || y_zp->numel != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "y_scale and y_zero_point must be scalars");
  /* Batch dims as shape-only tensors for the broadcast iterator. */
  xc_tensor_t batch_a = {0}, batch_b = {0};
  batch_a.rank = a->rank > 2 ? a->rank - 2 : 0;
  batch_b.rank = b->rank > 2 ? b->rank - 2 : 0;
  for (int d = 0; d < batch_a.rank; d++) batch_a.dims[d] = a->dims[d];
  for (int d = 0; d < batch_b.rank; d++) batch_b.dims[d] = b->dims[d];
  int rank;
  int64_t dims[XC_MAX_RANK + 2];
  const xc_tensor_t* batches[2] = {&batch_a, &batch_b};
  XC_RETURN_IF_ERROR(xc_ew_broadcast_shape(n, 2, batches, &rank, dims));
  int batch_rank = rank;
  int64_t num_batches = 1;
  for (int d = 0; d < batch_rank; d++) num_batches *= dims[d];
  if (a->rank >= 2) dims[rank++] = m;
  if (b->rank >= 2) dims[rank++] = cols;
  if (rank > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "result rank too large");
  XC_RETURN_IF_ERROR(xc_tensor_create(y_zp->dtype, rank, dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (y->numel == 0) return NULL;
  bool is_f8 = (XC_DT(y->dtype) & DT_F8) != 0;
  double lo = 0, hi = 0;
  integer_range(y->dtype, &lo, &hi);
  double ys = xc_tensor_get_f64(y_scale, 0), yz = xc_tensor_get_f64(y_zp, 0);
  xc_ew_iter_t it;
  xc_ew_iter_init(&it, batch_rank, dims, 2, batches);
  int64_t out = 0;
  for (int64_t bi = 0; bi < num_batches; bi++, xc_ew_iter_next(&it)) {
    int64_t a_base = it.off[0] * m * k, b_base = it.off[1] * k * cols;
    for (int64_t r = 0; r < m; r++) {
      double az = param_at(a_zp, r);
      for (int64_t c = 0; c < cols; c++, out++) {
        double bz = param_at(b_zp, c), acc = 0;
        /* Integer products summed exactly in double (|terms| < 2^16, so
         * any K below 2^37 stays exact). */
        for (int64_t i = 0; i < k; i++)
          acc += (xc_tensor_get_f64(a, a_base + r * k + i) - az) *
                 (xc_tensor_get_f64(b, b_base + i * cols + c) - bz);
        /* The combined multiplier is formed in the scales' precision, as
         * the ONNX reference does. */
        xc_dtype_t sd = a_scale->dtype;
        double mult = xc_round_to_dtype(
            sd, xc_round_to_dtype(sd, param_at(a_scale, r) * param_at(b_scale, c)) / ys);
        double v = acc * mult + yz;
        if (is_f8) {
          xc_ew_store_f8(y, out, v, true);
        } else {
          v = xc_ew_round_half_even(v);
          if (isnan(v)) v = 0;
          xc_tensor_set_f64(y, out, v < lo ? lo : v > hi ? hi : v);
        }
      }
    }
  }
  return NULL;
}

/* ---- DynamicQuantizeLinear ---------------------------------------------- */

static xc_status_t infer_dynamic_quantize(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT(XC_F32)));
  const xc_value_t* x = n->inputs[0];
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], XC_U8, x->rank, x->dims));
  if (n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[1], XC_F32, 0, NULL));
  if (n->num_outputs > 2 && n->outputs[2])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[2], XC_U8, 0, NULL));
  return NULL;
}

/* Follows the ONNX definition step by step in float32 arithmetic, so that
 * scale, zero point and every rounding tie agree with it exactly. */
static xc_status_t eval_dynamic_quantize(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 1));
  const xc_tensor_t* x = ctx->inputs[0];
  if (x->dtype != XC_F32)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input must be f32");
  const float* xs = x->data;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x->numel; i++) {
    if (xs[i] < lo) lo = xs[i];
    if (xs[i] > hi) hi = xs[i];
  }
  float range = hi == lo ? 1.0f : hi - lo;
  float scale = range / 255.0f;
  float zp_f = 0.0f - lo / scale;
  zp_f = zp_f < 0.0f ? 0.0f : zp_f > 255.0f ? 255.0f : zp_f;
  double zp = xc_ew_round_half_even(zp_f);
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_U8, x->rank, x->dims, &ctx->outputs[0]));
  for (int64_t i = 0; i < x->numel; i++) {
    float q = xs[i] / scale;
    double v = xc_ew_round_half_even(q) + zp;
    if (isnan(v)) v = 0;
    xc_tensor_set_f64(ctx->outputs[0], i, v < 0 ? 0 : v > 255 ? 255 : v);
  }
  if (ctx->num_outputs > 1 && ctx->node->outputs[1]) {
    XC_RETURN_IF_ERROR(xc_tensor_create(XC_F32, 0, NULL, &ctx->outputs[1]));
    ((float*)ctx->outputs[1]->data)[0] = scale;
  }
  if (ctx->num_outputs > 2 && ctx->node->outputs[2]) {
    XC_RETURN_IF_ERROR(xc_tensor_create(XC_U8, 0, NULL, &ctx->outputs[2]));
    ((uint8_t*)ctx->outputs[2]->data)[0] = (uint8_t)zp;
  }
  return NULL;
}

static const xc_attr_def_t quantize_attrs[] = {
    XC_ATTR_I("axis", 1), XC_ATTR_I("block_size", 0), XC_ATTR_I("output_dtype", 0),
    XC_ATTR_I("precision", 0), XC_ATTR_I("saturate", 1), XC_ATTR_END};
static const xc_attr_def_t dequantize_attrs[] = {
    XC_ATTR_I("axis", 1), XC_ATTR_I("block_size", 0), XC_ATTR_I("output_dtype", 0),
    XC_ATTR_END};

const xc_op_def_t xc_ops_quant[] = {
    {"QuantizeLinear", "", 2, 3, 1, 1, quantize_attrs, DT_SCALE | XC_DT(XC_I32), infer_quantize,
     eval_quantize,
     "saturate(round_half_even(x / scale) + zero_point), per tensor, axis or block"},
    {"DequantizeLinear", "", 2, 3, 1, 1, dequantize_attrs, DT_QUANTIZED | XC_DT(XC_I32),
     infer_dequantize, eval_dequantize, "(x - zero_point) * scale, per tensor, axis or block"},
    {"DynamicQuantizeLinear", "", 1, 1, 1, 3, NULL, XC_DT(XC_F32), infer_dynamic_quantize,
     eval_dynamic_quantize, "u8 quantization with scale and zero point computed from x"},
    {"QLinearMatMul", "", 8, 8, 1, 1, NULL, XC_DT(XC_I8) | XC_DT(XC_U8) | DT_F8,
     infer_qlinear_matmul, eval_qlinear_matmul,
     "quantized matmul: requantize((a - a_zp)(b - b_zp) * a_scale * b_scale / y_scale)"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
