/* Broadcasting and dtype helpers shared by the elementwise, activation and
 * quant op families (see elementwise_util.h). */
#include "elementwise_util.h"

#include <math.h>
#include <string.h>

xc_status_t xc_ew_infer_broadcast(xc_graph_t* g, const xc_node_t* n, int first,
                                  int count, int* out_rank, xc_dim_t* out_dims) {
  int rank = 0;
  xc_dim_t acc[XC_MAX_RANK];
  for (int k = first; k < first + count && k < n->num_inputs; k++) {
    const xc_value_t* v = n->inputs[k];
    if (!v) continue;
    if (v->rank > XC_MAX_RANK)
      return xc_node_error(n, XC_UNSUPPORTED, "input %d has rank %d", k, v->rank);
    xc_dim_t next[XC_MAX_RANK];
    int next_rank;
    XC_RETURN_IF_ERROR(xc_infer_broadcast(g, n, rank, acc, v->rank, v->dims, &next_rank, next));
    rank = next_rank;
    memcpy(acc, next, sizeof(xc_dim_t) * (size_t)rank);
  }
  *out_rank = rank;
  memcpy(out_dims, acc, sizeof(xc_dim_t) * (size_t)rank);
  return NULL;
}

xc_status_t xc_ew_check_same_dtype(const xc_node_t* n, int i, int j) {
  const xc_value_t* a = i < n->num_inputs ? n->inputs[i] : NULL;
  const xc_value_t* b = j < n->num_inputs ? n->inputs[j] : NULL;
  if (!a || !b) return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d is missing", a ? j : i);
  if (a->dtype != b->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "inputs %d and %d must have the same dtype, got %s and %s", i, j,
                         xc_dtype_name(a->dtype), xc_dtype_name(b->dtype));
  return NULL;
}

xc_status_t xc_ew_broadcast_shape(const xc_node_t* n, int count,
                                  const xc_tensor_t* const* ts, int* out_rank,
                                  int64_t* out_dims) {
  int rank = 0;
  int64_t acc[XC_MAX_RANK];
  for (int k = 0; k < count; k++) {
    if (!ts[k]) continue;
    int64_t next[XC_MAX_RANK];
    int next_rank;
    xc_status_t s = xc_broadcast_shape(rank, acc, ts[k]->rank, ts[k]->dims, &next_rank, next);
    if (s) {
      xc_status_t e = xc_node_error(n, xc_status_code(s), "%s", xc_status_message(s));
      xc_status_free(s);
      return e;
    }
    rank = next_rank;
    memcpy(acc, next, sizeof(int64_t) * (size_t)rank);
  }
  *out_rank = rank;
  memcpy(out_dims, acc, sizeof(int64_t) * (size_t)rank);
  return NULL;
}

xc_status_t xc_ew_require_inputs(const xc_eval_ctx_t* ctx, int count) {
  for (int k = 0; k < count; k++)
    if (k >= ctx->num_inputs || !ctx->inputs[k])
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input %d is missing", k);
  return NULL;
}

void xc_ew_iter_init(xc_ew_iter_t* it, int rank, const int64_t* dims, int num_operands,
                     const xc_tensor_t* const* operands) {
  memset(it, 0, sizeof *it);
  it->rank = rank;
  memcpy(it->dims, dims, sizeof(int64_t) * (size_t)rank);
  it->num_operands = num_operands;
  for (int k = 0; k < num_operands; k++)
    if (operands[k]) xc_broadcast_strides(operands[k], rank, dims, it->strides[k]);
}

void xc_ew_iter_next(xc_ew_iter_t* it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    if (++it->idx[d] < it->dims[d]) {
      for (int k = 0; k < it->num_operands; k++) it->off[k] += it->strides[k][d];
      return;
    }
    /* Wrap this axis: undo its contribution and carry into the next one. */
    for (int k = 0; k < it->num_operands; k++)
      it->off[k] -= it->strides[k][d] * (it->dims[d] - 1);
    it->idx[d] = 0;
  }
}

double xc_ew_round_half_even(double x) {
  if (!isfinite(x)) return x;
  double f = floor(x);
  double diff = x - f;
  double r = diff < 0.5 ? f : diff > 0.5 ? f + 1 : (fmod(f, 2.0) == 0 ? f : f + 1);
  return copysign(r, x); /* -0.4 and -0.5 round to -0, as numpy does */
}

void xc_ew_store_f8(xc_tensor_t* y, int64_t i, double v, bool saturate) {
  uint8_t* p = (uint8_t*)y->data + i;
  uint8_t sign = signbit(v) ? 0x80 : 0;
  double a = fabs(v);
  if (y->dtype == XC_F8E4M3FN) {
    /* 464 is halfway between 448 (max) and the first unrepresentable step;
     * ties go to 448 (even mantissa). */
    *p = (!saturate && !isnan(v) && a > 464.0) ? (uint8_t)(sign | 0x7f) : xc_f64_to_f8e4m3fn(v);
  } else if (isinf(v)) {
    *p = (uint8_t)(sign | (saturate ? 0x7b : 0x7c));
  } else {
    /* 61440 is halfway between 57344 (max) and 65536; the tie rounds up
     * (even mantissa) and overflows. */
    *p = (!saturate && a >= 61440.0) ? (uint8_t)(sign | 0x7c) : xc_f64_to_f8e5m2(v);
  }
}
