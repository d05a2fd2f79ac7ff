/* Shared machinery of the elementwise-style op families (elementwise,
 * activation, quant): numpy broadcasting over several inputs, both symbolic
 * (inference) and concrete (kernels), and dtype checks.
 *
 * Internal to ir/ops; not part of the public API. */
#ifndef XCOMP_IR_OPS_ELEMENTWISE_UTIL_H
#define XCOMP_IR_OPS_ELEMENTWISE_UTIL_H

#include "xcomp/op.h"

/* Most inputs one broadcast iterator walks at once. */
#define XC_EW_MAX_OPERANDS 4

/* Symbolic numpy broadcast of inputs [first, first+count) of n, skipping
 * omitted (NULL) inputs. Fails when static dims clash. */
xc_status_t xc_ew_infer_broadcast(xc_graph_t* g, const xc_node_t* n, int first,
                                  int count, int* out_rank, xc_dim_t* out_dims);

/* Requires inputs i and j (both present) to have the same dtype. */
xc_status_t xc_ew_check_same_dtype(const xc_node_t* n, int i, int j);

/* Concrete numpy broadcast shape of the non-NULL tensors in ts[0..count). */
xc_status_t xc_ew_broadcast_shape(const xc_node_t* n, int count,
                                  const xc_tensor_t* const* ts, int* out_rank,
                                  int64_t* out_dims);

/* Walks every element of an output shape (row-major) and keeps, for each of
 * up to XC_EW_MAX_OPERANDS broadcast operands, the flat offset of the
 * element that maps onto it. */
typedef struct xc_ew_iter {
  int rank;
  int64_t dims[XC_MAX_RANK];
  int num_operands;
  int64_t strides[XC_EW_MAX_OPERANDS][XC_MAX_RANK];
  int64_t idx[XC_MAX_RANK];
  int64_t off[XC_EW_MAX_OPERANDS];
} xc_ew_iter_t;

/* Operands must broadcast to (rank, dims); NULL operands keep offset 0. */
void xc_ew_iter_init(xc_ew_iter_t* it, int rank, const int64_t* dims, int num_operands,
                     const xc_tensor_t* const* operands);
/* Moves to the next output element. */
void xc_ew_iter_next(xc_ew_iter_t* it);

/* Kernels may be called without prior inference (constant folding): fails
 * unless inputs [0, count) are present. */
xc_status_t xc_ew_require_inputs(const xc_eval_ctx_t* ctx, int count);

/* True when the dtype is u64 (integer kernels must then compare and divide
 * unsigned; every other integer dtype fits int64 exactly). */
static inline bool xc_ew_is_u64(xc_dtype_t t) { return t == XC_U64; }

/* Three-way compare of two integers held as int64 bit patterns of dtype t. */
static inline int xc_ew_cmp_int(xc_dtype_t t, int64_t a, int64_t b) {
  if (xc_ew_is_u64(t)) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    return ua < ub ? -1 : ua > ub;
  }
  return a < b ? -1 : a > b;
}

/* Stores v (already in double) into element i of an fp8 tensor y. With
 * saturate, out-of-range values and infinities clamp to the largest finite
 * value; without, values that round past it become NaN (e4m3fn, which has no
 * infinity) or Inf (e5m2). */
void xc_ew_store_f8(xc_tensor_t* y, int64_t i, double v, bool saturate);

/* Round half to even, independent of the current rounding mode. */
double xc_ew_round_half_even(double x);

#endif
