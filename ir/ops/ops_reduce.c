/* Op family 'reduce': ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 * ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
 * ReduceLogSumExp in their opset-18 form (axes as an optional second input,
 * keepdims, noop_with_empty_axes).
 *
 * Floating inputs accumulate in double and round once into the output dtype.
 * Integer inputs accumulate exactly in 64 bits (wrapping like the fixed-width
 * arithmetic of the output type) for Sum, Prod, SumSquare, L1, Max and Min;
 * the other reductions go through double. Reducing an empty set yields the
 * identity of the reduction (0, 1, -inf/lowest for Max, +inf/highest for Min,
 * -inf for the log forms, NaN for Mean). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

typedef enum reduce_kind {
  RK_SUM,
  RK_MEAN,
  RK_MAX,
  RK_MIN,
  RK_PROD,
  RK_L1,
  RK_L2,
  RK_SUM_SQUARE,
  RK_LOG_SUM,
  RK_LOG_SUM_EXP,
} reduce_kind_t;

static const struct {
  const char* name;
  reduce_kind_t kind;
} reduce_names[] = {
    {"ReduceSum", RK_SUM},        {"ReduceMean", RK_MEAN},
    {"ReduceMax", RK_MAX},        {"ReduceMin", RK_MIN},
    {"ReduceProd", RK_PROD},      {"ReduceL1", RK_L1},
    {"ReduceL2", RK_L2},          {"ReduceSumSquare", RK_SUM_SQUARE},
    {"ReduceLogSum", RK_LOG_SUM}, {"ReduceLogSumExp", RK_LOG_SUM_EXP},
};

static reduce_kind_t reduce_kind_of(const xc_node_t* n) {
  for (size_t i = 0; i < sizeof reduce_names / sizeof reduce_names[0]; i++)
    if (strcmp(n->op_type, reduce_names[i].name) == 0) return reduce_names[i].kind;
  return RK_SUM;
}

/* Which axes a node reduces, from a list of (possibly negative) axes.
 * *noop is set when the empty list with noop_with_empty_axes means identity. */
static xc_status_t reduce_mask(const xc_node_t* n, int rank, int64_t count, const int64_t* axes,
                               bool* mask, bool* noop) {
  *noop = false;
  for (int d = 0; d < rank; d++) mask[d] = false;
  if (count == 0) {
    if (xc_node_attr_int(n, "noop_with_empty_axes")) {
      *noop = true;
    } else {
      for (int d = 0; d < rank; d++) mask[d] = true;
    }
    return NULL;
  }
  for (int64_t i = 0; i < count; i++) {
    int a;
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, axes[i], rank, &a));
    if (mask[a])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %lld repeated in axes",
                           (long long)axes[i]);
    mask[a] = true;
  }
  return NULL;
}

/* Sum/Prod/Max/Min of a known integer vector (e.g. the output of Shape) is
 * a known, possibly symbolic, value: Shape -> ReduceProd -> Reshape keeps
 * its static (or symbolic) shape. */
static xc_status_t reduce_known_elems(xc_graph_t* g, xc_node_t* n, bool whole_vector) {
  const xc_value_t* x = n->inputs[0];
  int64_t count;
  const xc_dim_t* e;
  if (!whole_vector || x->dtype != XC_I64 || !xc_value_known_elems(g, x, &count, &e) || count == 0)
    return NULL;
  reduce_kind_t kind = reduce_kind_of(n);
  if (kind != RK_SUM && kind != RK_PROD && kind != RK_MAX && kind != RK_MIN) return NULL;
  for (int64_t i = 0; i < count; i++)
    if (!e[i].sym && e[i].value < 0) return NULL; /* dims algebra is for sizes */
  xc_dim_t r = e[0];
  for (int64_t i = 1; i < count; i++) {
    switch (kind) {
      case RK_SUM: r = xc_dim_add(g, r, e[i]); break;
      case RK_PROD: r = xc_dim_mul(g, r, e[i]); break;
      case RK_MAX: r = xc_dim_max(g, r, e[i]); break;
      default: r = xc_dim_min(g, r, e[i]); break;
    }
  }
  xc_status_t s = xc_graph_take_error(g);
  if (s) { /* e.g. overflow of constant folding: leave the value unknown */
    xc_status_free(s);
    return NULL;
  }
  return xc_value_set_elems(g, n->outputs[0], 1, &r);
}

static xc_status_t reduce_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, n->op->dtypes));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* axes_v = n->num_inputs > 1 ? n->inputs[1] : NULL;
  int rank = x->rank;
  bool keep = xc_node_attr_int(n, "keepdims") != 0;
  bool mask[XC_MAX_RANK];
  xc_dim_t out[XC_MAX_RANK];
  int out_rank = 0;
  if (axes_v) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64) | XC_DT(XC_I32)));
    if (axes_v->rank > 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "axes must be 1-D, got rank %d", axes_v->rank);
  }
  int64_t count = 0;
  const xc_dim_t* elems = NULL;
  if (axes_v && !xc_value_known_elems(g, axes_v, &count, &elems)) {
    /* Axes known only at run time: the rank is known when keepdims is set or
     * the number of axes is static; the extents are not. */
    int64_t num_axes = -1;
    if (axes_v->rank == 1 && xc_dim_is_static(axes_v->dims[0])) num_axes = axes_v->dims[0].value;
    if (keep && num_axes != 0) {
      /* An axis of extent 1 stays 1 whether reduced or not. */
      for (int d = 0; d < rank; d++)
        out[d] = xc_dim_is_static(x->dims[d]) && x->dims[d].value == 1 ? x->dims[d]
                                                                        : xc_dim_fresh(g, "reduce");
      return xc_value_set_type(g, n->outputs[0], x->dtype, rank, out);
    }
    if (num_axes > 0 && num_axes <= rank) {
      for (int d = 0; d < rank - num_axes; d++) out[d] = xc_dim_fresh(g, "reduce");
      return xc_value_set_type(g, n->outputs[0], x->dtype, (int)(rank - num_axes), out);
    }
    if (num_axes != 0)
      return xc_node_error(
          n, XC_UNSUPPORTED,
          "axes must be a constant (or of static length) to infer the output rank");
  }
  int64_t axes[XC_MAX_RANK];
  if (count > rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%lld axes for rank %d", (long long)count, rank);
  for (int64_t i = 0; i < count; i++) {
    if (elems[i].sym)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "axes must be integer constants");
    axes[i] = elems[i].value;
  }
  bool noop;
  XC_RETURN_IF_ERROR(reduce_mask(n, rank, count, axes, mask, &noop));
  if (noop) return xc_infer_same_as_input(g, n, 0, 0);
  for (int d = 0; d < rank; d++) {
    if (!mask[d])
      out[out_rank++] = x->dims[d];
    else if (keep)
      out[out_rank++] = xc_dim_const(1);
  }
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, out_rank, out));
  return reduce_known_elems(g, n, rank == 1 && mask[0]);
}

/* The value of an empty reduction for integer outputs of Max/Min: the
 * type's lowest / highest value. */
static int64_t int_lowest(xc_dtype_t t) {
  switch (t) {
    case XC_I8: return INT8_MIN;
    case XC_I16: return INT16_MIN;
    case XC_I32: return INT32_MIN;
    case XC_I64: return INT64_MIN;
    default: return 0;
  }
}

static int64_t int_highest(xc_dtype_t t) {
  switch (t) {
    case XC_I8: return INT8_MAX;
    case XC_I16: return INT16_MAX;
    case XC_I32: return INT32_MAX;
    case XC_I64: return INT64_MAX;
    case XC_U8: return UINT8_MAX;
    case XC_U16: return UINT16_MAX;
    case XC_U32: return UINT32_MAX;
    case XC_U64: return -1; /* all bits set */
    case XC_BOOL: return 1;
    default: return 0;
  }
}

/* Exact integer path: Sum, Prod, SumSquare, L1 (mod 2^64), Max, Min. */
static bool reduce_is_exact_int(reduce_kind_t k, xc_dtype_t t) {
  if (!xc_dtype_is_int(t) && t != XC_BOOL) return false;
  return k == RK_SUM || k == RK_PROD || k == RK_SUM_SQUARE || k == RK_L1 || k == RK_MAX ||
         k == RK_MIN;
}

static xc_status_t reduce_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* axes_t = ctx->num_inputs > 1 ? ctx->inputs[1] : NULL;
  reduce_kind_t kind = reduce_kind_of(n);
  bool keep = xc_node_attr_int(n, "keepdims") != 0;
  int rank = x->rank;
  int64_t count = 0, *axes = NULL;
  if (axes_t) {
    xc_status_t s = xc_tensor_to_i64_list(axes_t, &count, &axes);
    if (s) return xc_status_annotate(s, "axes");
  }
  bool mask[XC_MAX_RANK], noop;
  xc_status_t s = reduce_mask(n, rank, count, axes, mask, &noop);
  free(axes);
  if (s) return s;
  if (noop) return xc_tensor_clone(x, &ctx->outputs[0]);

  int64_t out_dims[XC_MAX_RANK], full_dims[XC_MAX_RANK];
  int out_rank = 0;
  for (int d = 0; d < rank; d++) {
    full_dims[d] = mask[d] ? 1 : x->dims[d];
    if (!mask[d] || keep) out_dims[out_rank++] = full_dims[d];
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, out_rank, out_dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t m = y->numel;
  /* in_to_out[d]: stride in the output of input axis d (0 when reduced). */
  int64_t full_strides[XC_MAX_RANK], in_to_out[XC_MAX_RANK];
  xc_strides(rank, full_dims, full_strides);
  for (int d = 0; d < rank; d++) in_to_out[d] = mask[d] ? 0 : full_strides[d];
  int64_t group = 1; /* elements per output; bounded by numel when nonzero */
  for (int d = 0; d < rank && x->numel != 0; d++)
    if (mask[d]) group *= x->dims[d];
  if (x->numel == 0) group = 0;
  if (m == 0) return NULL;

  bool exact = reduce_is_exact_int(kind, x->dtype);
  bool is_unsigned = x->dtype == XC_U8 || x->dtype == XC_U16 || x->dtype == XC_U32 ||
                     x->dtype == XC_U64 || x->dtype == XC_BOOL;
  double* acc = calloc((size_t)m, sizeof *acc);
  double* acc2 = kind == RK_LOG_SUM_EXP ? calloc((size_t)m, sizeof *acc2) : NULL;
  uint64_t* iacc = exact ? calloc((size_t)m, sizeof *iacc) : NULL;
  bool* seen = calloc((size_t)m, sizeof *seen);
  if (!acc || !seen || (kind == RK_LOG_SUM_EXP && !acc2) || (exact && !iacc)) {
    free(acc);
    free(acc2);
    free(iacc);
    free(seen);
    return xc_error_oom();
  }
  for (int64_t o = 0; o < m; o++) {
    if (kind == RK_PROD) {
      acc[o] = 1.0;
      if (exact) iacc[o] = 1;
    }
    if (kind == RK_LOG_SUM_EXP) acc[o] = -INFINITY; /* running max */
  }
  int64_t idx[XC_MAX_RANK] = {0};
  int64_t o = 0;
  for (int64_t i = 0; i < x->numel; i++) {
    if (exact) {
      uint64_t v = (uint64_t)xc_tensor_get_i64(x, i);
      uint64_t* a = &iacc[o];
      switch (kind) {
        case RK_SUM: *a += v; break;
        case RK_PROD: *a *= v; break;
        case RK_SUM_SQUARE: *a += v * v; break;
        case RK_L1: *a += (!is_unsigned && (int64_t)v < 0) ? (uint64_t)0 - v : v; break;
        case RK_MAX:
          if (!seen[o] || (is_unsigned ? v > *a : (int64_t)v > (int64_t)*a)) *a = v;
          break;
        case RK_MIN:
          if (!seen[o] || (is_unsigned ? v < *a : (int64_t)v < (int64_t)*a)) *a = v;
          break;
        default: break;
      }
    } else {
      double v = xc_tensor_get_f64(x, i);
      double* a = &acc[o];
      switch (kind) {
        case RK_SUM:
        case RK_MEAN: *a += v; break;
        case RK_LOG_SUM: *a += v; break;
        case RK_PROD: *a *= v; break;
        case RK_SUM_SQUARE:
        case RK_L2: *a += v * v; break;
        case RK_L1: *a += fabs(v); break;
        case RK_MAX:
          if (!seen[o] || v > *a || isnan(v)) {
            if (!(seen[o] && isnan(*a))) *a = v;
          }
          break;
        case RK_MIN:
          if (!seen[o] || v < *a || isnan(v)) {
            if (!(seen[o] && isnan(*a))) *a = v;
          }
          break;
        case RK_LOG_SUM_EXP:
          /* Running max in acc, sum of exp(x - max) in acc2. */
          if (isnan(v) || isnan(*a)) {
            *a = NAN;
          } else if (v > *a) {
            acc2[o] = (isinf(*a) ? 0.0 : acc2[o] * exp(*a - v)) + 1.0;
            *a = v;
          } else if (!isinf(v)) {
            acc2[o] += exp(v - *a);
          } else if (v == *a) { /* both +inf or both -inf */
            acc2[o] += 1.0;
          }
          break;
      }
    }
    seen[o] = true;
    /* Advance the multi-index and the output offset together. */
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d]) {
        o += in_to_out[d];
        break;
      }
      o -= in_to_out[d] * (idx[d] - 1);
      idx[d] = 0;
    }
  }
  for (int64_t j = 0; j < m; j++) {
    if (exact) {
      uint64_t v = iacc[j];
      if (!seen[j] && kind == RK_MAX) v = is_unsigned ? 0 : (uint64_t)int_lowest(y->dtype);
      if (!seen[j] && kind == RK_MIN) v = (uint64_t)int_highest(y->dtype);
      xc_tensor_set_i64(y, j, (int64_t)v);
      continue;
    }
    double r = acc[j];
    switch (kind) {
      case RK_MEAN: r = group ? r / (double)group : NAN; break;
      case RK_L2: r = sqrt(r); break;
      case RK_LOG_SUM: r = log(r); break;
      case RK_LOG_SUM_EXP: r = (!seen[j] || isnan(r) || isinf(r)) ? r : r + log(acc2[j]); break;
      case RK_MAX:
        if (!seen[j]) r = -INFINITY;
        break;
      case RK_MIN:
        if (!seen[j]) r = INFINITY;
        break;
      default: break;
    }
    xc_tensor_set_f64(y, j, r);
  }
  free(acc);
  free(acc2);
  free(iacc);
  free(seen);
  return NULL;
}

static const xc_attr_def_t reduce_attrs[] = {
    XC_ATTR_I("keepdims", 1),
    XC_ATTR_I("noop_with_empty_axes", 0),
    XC_ATTR_END,
};

#define REDUCE_OP(name, mask, summary) \
  { name, "", 1, 2, 1, 1, reduce_attrs, mask, reduce_infer, reduce_eval, summary }

#define XC_DT_REDUCE_ORDERED (XC_DT_NUMERIC | XC_DT(XC_BOOL))

const xc_op_def_t xc_ops_reduce[] = {
    REDUCE_OP("ReduceSum", XC_DT_NUMERIC, "Sum over the given axes (all when axes is empty)."),
    REDUCE_OP("ReduceMean", XC_DT_NUMERIC, "Arithmetic mean over the given axes."),
    REDUCE_OP("ReduceMax", XC_DT_REDUCE_ORDERED,
              "Maximum over the given axes (NaN propagates; empty set gives -inf)."),
    REDUCE_OP("ReduceMin", XC_DT_REDUCE_ORDERED,
              "Minimum over the given axes (NaN propagates; empty set gives +inf)."),
    REDUCE_OP("ReduceProd", XC_DT_NUMERIC, "Product over the given axes."),
    REDUCE_OP("ReduceL1", XC_DT_NUMERIC, "Sum of absolute values over the given axes."),
    REDUCE_OP("ReduceL2", XC_DT_NUMERIC, "Euclidean norm over the given axes."),
    REDUCE_OP("ReduceSumSquare", XC_DT_NUMERIC, "Sum of squares over the given axes."),
    REDUCE_OP("ReduceLogSum", XC_DT_NUMERIC, "log of the sum over the given axes."),
    REDUCE_OP("ReduceLogSumExp", XC_DT_NUMERIC,
              "log(sum(exp(x))) over the given axes, computed stably."),
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
