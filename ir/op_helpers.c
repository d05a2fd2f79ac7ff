/* Shared helpers for op inference functions and reference kernels. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "xcomp/op.h"
#include "xcomp/tiled.h"

xc_status_t xc_node_error(const xc_node_t* n, xc_code_t code, const char* fmt, ...) {
  char msg[1024], where[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xc_error(code, "%s: %s", xc_node_describe(n, where, sizeof where), msg);
}

xc_status_t xc_infer_broadcast(xc_graph_t* g, const xc_node_t* n, int rank_a,
                               const xc_dim_t* a, int rank_b, const xc_dim_t* b,
                               int* out_rank, xc_dim_t* out_dims) {
  int r = rank_a > rank_b ? rank_a : rank_b;
  if (r > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "rank %d too large", r);
  for (int i = 0; i < r; i++) {
    int ia = i - (r - rank_a), ib = i - (r - rank_b);
    xc_dim_t da = ia >= 0 ? a[ia] : xc_dim_const(1);
    xc_dim_t db = ib >= 0 ? b[ib] : xc_dim_const(1);
    if (xc_dim_equal(da, db) || (!db.sym && db.value == 1)) {
      out_dims[i] = da;
    } else if (!da.sym && da.value == 1) {
      out_dims[i] = db;
    } else if (!da.sym && !db.sym) {
      char b1[64], b2[64];
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "shapes cannot be broadcast: %s vs %s at axis %d",
                           xc_dim_print(da, b1, sizeof b1), xc_dim_print(db, b2, sizeof b2), i);
    } else if (!da.sym) {
      out_dims[i] = da; /* the symbolic side must be 1 or equal */
    } else if (!db.sym) {
      out_dims[i] = db;
    } else {
      /* Both symbolic and different: valid only if equal or one is 1; the
       * larger one is the result in either case. */
      out_dims[i] = xc_dim_max(g, da, db);
    }
  }
  *out_rank = r;
  return NULL;
}

xc_status_t xc_normalize_axis(const xc_node_t* n, int64_t axis, int rank, int* out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %lld out of range for rank %d",
                         (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

xc_status_t xc_infer_same_as_input(xc_graph_t* g, xc_node_t* n, int out_i, int in_j) {
  xc_value_t* in = in_j < n->num_inputs ? n->inputs[in_j] : NULL;
  if (!in) return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d is missing", in_j);
  xc_value_t* out = out_i < n->num_outputs ? n->outputs[out_i] : NULL;
  if (!out) return NULL;
  return xc_value_set_type(g, out, in->dtype, in->rank, in->dims);
}

xc_status_t xc_infer_check_input(const xc_node_t* n, int i, uint32_t mask) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!v) return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d is missing", i);
  if (!(mask & XC_DT(v->dtype)))
    return xc_node_error(n, XC_UNSUPPORTED, "input %d ('%s') has unsupported dtype %s",
                         i, v->name, xc_dtype_name(v->dtype));
  return NULL;
}

xc_status_t xc_tensor_to_i64_list(const xc_tensor_t* t, int64_t* count, int64_t** out) {
  *out = NULL;
  *count = 0;
  if (t->rank > 1)
    return xc_error(XC_INVALID_ARGUMENT, "expected a 1-D tensor, got rank %d", t->rank);
  if (!xc_dtype_is_int(t->dtype))
    return xc_error(XC_INVALID_ARGUMENT, "expected an integer tensor, got %s",
                    xc_dtype_name(t->dtype));
  int64_t* v = malloc(sizeof(int64_t) * (size_t)(t->numel ? t->numel : 1));
  if (!v) return xc_error_oom();
  for (int64_t i = 0; i < t->numel; i++) v[i] = xc_tensor_get_i64(t, i);
  *count = t->numel;
  *out = v;
  return NULL;
}

xc_status_t xc_index_error_status(const xc_graph_t* g, bool locate, const int64_t* record, int64_t num_words) {
  const int64_t* words = NULL;
  for (int64_t i = 0; i + XC_INDEX_ERROR_WORDS <= num_words && !words; i += XC_INDEX_ERROR_WORDS)
    if (record[i] != 0) words = record + i;
  if (!words) return NULL;
  long long v = (long long)words[1], d = (long long)words[2];
  int kind = (int)(words[3] & 0xff), axis = (int)(words[3] >> 8);
  char msg[256];
  switch (kind) {
    case XC_INDEX_CHECK_AXIS:
      snprintf(msg, sizeof msg, "index %lld out of range for axis %d of extent %lld", v, axis, d);
      break;
    case XC_INDEX_CHECK_POSITION:
      snprintf(msg, sizeof msg, "position id %lld is outside the cache (%lld)", v, d);
      break;
    case XC_INDEX_CHECK_BATCH:
      snprintf(msg, sizeof msg, "batch index %lld is outside [0, %lld)", v, d);
      break;
    case XC_INDEX_CHECK_TARGET:
      snprintf(msg, sizeof msg, "target %lld is outside [0, %lld)", v, d);
      break;
    case XC_INDEX_CHECK_OUTPUT:
      snprintf(msg, sizeof msg, "index %lld is outside the output (%lld elements)", v, d);
      break;
    default:
      snprintf(msg, sizeof msg, "index %lld out of range for dim %lld", v, d);
      break;
  }
  int64_t pos = words[0] - 1;
  if (g && pos >= 0 && pos < g->num_nodes && g->nodes[pos]) {
    const xc_node_t* n = g->nodes[pos];
    if (locate) return xc_node_error(n, XC_OUT_OF_RANGE, "%s", msg);
    return xc_error(XC_OUT_OF_RANGE, "node '%s' (%s): %s", n->name, n->op_type, msg);
  }
  return xc_error(XC_OUT_OF_RANGE, "node %lld of the graph: %s", (long long)pos, msg);
}
