/* Helpers shared by the data-movement op families (ops_shape.c and
 * ops_shape2.c): input/output access, reading shape-like integer inputs at
 * inference and run time, and byte-wise element copies that work for every
 * dtype without a round trip through double. */
#ifndef XCOMP_IR_OPS_SHAPE_COMMON_H
#define XCOMP_IR_OPS_SHAPE_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

/* Longest shape-like integer vector (pads, repeats, split sizes...) the
 * kernels read into fixed arrays. */
#define SC_MAX_INTS 64

static inline xc_value_t* sc_in(const xc_node_t* n, int i) {
  return i < n->num_inputs ? n->inputs[i] : NULL;
}

static inline xc_status_t sc_set_out(xc_graph_t* g, xc_node_t* n, int i, xc_dtype_t dtype, int rank,
                                     const xc_dim_t* dims) {
  xc_value_t* v = i < n->num_outputs ? n->outputs[i] : NULL;
  if (!v) return NULL;
  if (rank > XC_MAX_RANK)
    return xc_node_error(n, XC_UNSUPPORTED, "output rank %d exceeds %d", rank, XC_MAX_RANK);
  return xc_value_set_type(g, v, dtype, rank, dims);
}

/* Static length of a 1-D shape-like input (a scalar counts as length 1 when
 * allow_scalar). */
static inline xc_status_t sc_vector_len(const xc_node_t* n, const xc_value_t* v, const char* what,
                                        bool allow_scalar, int64_t* out) {
  *out = 0;
  if (v->rank == 0 && allow_scalar) {
    *out = 1;
    return NULL;
  }
  if (v->rank != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s' must be 1-D, got rank %d", what, v->rank);
  if (!xc_dim_is_static(v->dims[0]))
    return xc_node_error(n, XC_UNSUPPORTED, "'%s' must have a static length", what);
  *out = v->dims[0].value;
  return NULL;
}

/* Static integer elements of v (from a constant or fully static known elems).
 * Returns false when unknown, symbolic or longer than cap. */
static inline bool sc_static_ints(xc_graph_t* g, const xc_value_t* v, int64_t cap, int64_t* count,
                                  int64_t* out) {
  int64_t ne;
  const xc_dim_t* e;
  *count = 0;
  if (!v || !xc_value_known_elems(g, v, &ne, &e) || ne > cap) return false;
  for (int64_t i = 0; i < ne; i++) {
    if (!xc_dim_is_static(e[i])) return false;
    out[i] = e[i].value;
  }
  *count = ne;
  return true;
}

/* Integer elements of a run-time 1-D or scalar tensor into out[cap]. */
static inline xc_status_t sc_tensor_ints(const xc_node_t* n, const xc_tensor_t* t, const char* what,
                                         int64_t cap, int64_t* count, int64_t* out) {
  *count = 0;
  if (t->rank > 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s' must be 1-D, got rank %d", what, t->rank);
  if (!xc_dtype_is_int(t->dtype))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s' must be an integer tensor, got %s", what,
                         xc_dtype_name(t->dtype));
  if (t->numel > cap)
    return xc_node_error(n, XC_UNSUPPORTED, "'%s' has %lld elements, at most %lld supported", what,
                         (long long)t->numel, (long long)cap);
  for (int64_t i = 0; i < t->numel; i++) out[i] = xc_tensor_get_i64(t, i);
  *count = t->numel;
  return NULL;
}

/* Creates output i of the kernel. */
static inline xc_status_t sc_new_output(xc_eval_ctx_t* ctx, int i, xc_dtype_t dtype, int rank,
                                        const int64_t* dims, xc_tensor_t** out) {
  *out = NULL;
  if (rank > XC_MAX_RANK)
    return xc_node_error(ctx->node, XC_UNSUPPORTED, "output rank %d exceeds %d", rank, XC_MAX_RANK);
  for (int d = 0; d < rank; d++)
    if (dims[d] < 0)
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "negative output dim %lld",
                           (long long)dims[d]);
  xc_status_t s = xc_tensor_create(dtype, rank, dims, out);
  if (s) return xc_status_annotate(s, "%s", ctx->node->name ? ctx->node->name : "node");
  ctx->outputs[i] = *out;
  return NULL;
}

static inline void sc_copy(xc_tensor_t* dst, int64_t di, const xc_tensor_t* src, int64_t si,
                           int64_t count) {
  size_t es = xc_dtype_size(src->dtype);
  if (count <= 0) return;
  memcpy((char*)dst->data + (size_t)di * es, (const char*)src->data + (size_t)si * es,
         (size_t)count * es);
}

static inline int64_t sc_prod(int from, int to, const int64_t* dims) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= dims[i];
  return p;
}

/* Product of symbolic dims [from, to). */
static inline xc_dim_t sc_dim_prod(xc_graph_t* g, int from, int to, const xc_dim_t* dims) {
  xc_dim_t p = xc_dim_const(1);
  for (int i = from; i < to; i++) p = xc_dim_mul(g, p, dims[i]);
  return p;
}

#endif
