/* xcomp op registry: every op is declared once, with its arity, attributes
 * and defaults, dtype constraint, shape/type inference and reference kernel.
 *
 * Ops live in family files (ir/ops/ops_<family>.c), each exporting a table
 * terminated by an entry whose name is NULL. ir/op_registry.c lists the
 * families. Semantics follow the latest ONNX opset (23); importers rewrite
 * older forms (e.g. axes attributes) into the latest one. */
#ifndef XCOMP_OP_H
#define XCOMP_OP_H

#include "xcomp/graph.h"
#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_attr_def {
  const char* name;
  xc_attr_kind_t kind;
  bool required;
  /* Defaults for scalar kinds; list kinds default to empty, tensors to NULL. */
  int64_t default_int;
  double default_float;
  const char* default_string;
} xc_attr_def_t;

/* Convenience initializers for attribute tables. */
#define XC_ATTR_I(n, d) {(n), XC_ATTR_INT, false, (d), 0.0, NULL}
#define XC_ATTR_F(n, d) {(n), XC_ATTR_FLOAT, false, 0, (d), NULL}
#define XC_ATTR_S(n, d) {(n), XC_ATTR_STRING, false, 0, 0.0, (d)}
#define XC_ATTR_REQ(n, k) {(n), (k), true, 0, 0.0, NULL}
#define XC_ATTR_OPT(n, k) {(n), (k), false, 0, 0.0, NULL}
#define XC_ATTR_END {NULL, XC_ATTR_UNDEFINED, false, 0, 0.0, NULL}

/* What a reference kernel sees. The kernel creates each output tensor
 * (xc_tensor_create) and stores it in outputs[i]; on error it may leave
 * created outputs there, the interpreter frees them. Outputs the node
 * omitted (node->outputs[i] == NULL) may be left NULL. */
typedef struct xc_eval_ctx {
  const xc_node_t* node;
  int num_inputs;
  const xc_tensor_t* const* inputs; /* NULL entries for omitted inputs */
  int num_outputs;
  xc_tensor_t** outputs;
} xc_eval_ctx_t;

typedef xc_status_t (*xc_infer_fn)(xc_graph_t* g, xc_node_t* node);
typedef xc_status_t (*xc_eval_fn)(xc_eval_ctx_t* ctx);

typedef struct xc_op_def {
  const char* name;      /* ONNX op_type, e.g. "Conv" */
  const char* domain;    /* "" = ai.onnx; "xcomp" = composites of the compiler */
  int min_inputs, max_inputs;   /* max_inputs -1 = variadic */
  int min_outputs, max_outputs;
  const xc_attr_def_t* attrs;   /* terminated by XC_ATTR_END; may be NULL */
  uint32_t dtypes;              /* accepted dtypes of the main input (XC_DT_*) */
  xc_infer_fn infer;
  xc_eval_fn eval;
  const char* summary;          /* one line, for docs/ops.md */
} xc_op_def_t;

const xc_op_def_t* xc_op_lookup(const char* domain, const char* name);
int xc_op_count(void);
const xc_op_def_t* xc_op_at(int i);
const xc_attr_def_t* xc_op_find_attr_def(const xc_op_def_t* op, const char* name);

/* ---- helpers for inference functions ------------------------------------ */

/* Error naming the node (and its provenance): "node 'n' (Op): <msg>". */
xc_status_t xc_node_error(const xc_node_t* n, xc_code_t code, const char* fmt, ...)
    XC_PRINTF(3, 4);
/* numpy broadcasting of symbolic shapes (error when static dims clash). */
xc_status_t xc_infer_broadcast(xc_graph_t* g, const xc_node_t* n, int rank_a,
                               const xc_dim_t* a, int rank_b, const xc_dim_t* b,
                               int* out_rank, xc_dim_t* out_dims);
/* Normalizes axis in [-rank, rank) to [0, rank); error otherwise. */
xc_status_t xc_normalize_axis(const xc_node_t* n, int64_t axis, int rank,
                              int* out);
/* Output i takes input j's dtype and shape. */
xc_status_t xc_infer_same_as_input(xc_graph_t* g, xc_node_t* n, int out_i, int in_j);
/* Requires input i present and typed with a dtype in `mask`. */
xc_status_t xc_infer_check_input(const xc_node_t* n, int i, uint32_t mask);

/* ---- helpers for reference kernels -------------------------------------- */

/* Integer elements of a 1-D (or scalar) tensor into a malloc'd array. */
xc_status_t xc_tensor_to_i64_list(const xc_tensor_t* t, int64_t* count, int64_t** out);

#ifdef __cplusplus
}
#endif
#endif
