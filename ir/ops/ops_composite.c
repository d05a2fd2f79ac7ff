/* Op family 'composite' (domain "xcomp"): ops the compiler introduces when it
 * recognizes a chain of ONNX ops that targets can lower as one kernel. They
 * have no ONNX equivalent at opset 23; their reference kernels define them.
 *
 *   xcomp.Silu(X)       = X * Sigmoid(X)
 *   xcomp.SwiGLU(A, B)  = Silu(A) * B      (A and B of one dtype and shape)
 */
#include <math.h>

#include "xcomp/op.h"

static double silu(double x) {
  /* x / (1 + e^-x): e^-x overflows to inf for very negative x, giving -0. */
  return x / (1.0 + exp(-x));
}

static xc_status_t silu_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t silu_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  for (int64_t i = 0; i < x->numel; i++)
    xc_tensor_set_f64(ctx->outputs[0], i, silu(xc_tensor_get_f64(x, i)));
  return NULL;
}

static xc_status_t swiglu_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  const xc_value_t *a = n->inputs[0], *b = n->inputs[1];
  if (a->dtype != b->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "A and B must have one dtype, got %s and %s",
                         xc_dtype_name(a->dtype), xc_dtype_name(b->dtype));
  char da[128], db[128];
  bool same = a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++) same = xc_dim_equal(a->dims[i], b->dims[i]);
  if (!same)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "A and B must have one shape, got %s and %s",
                         xc_value_describe(a, da, sizeof da), xc_value_describe(b, db, sizeof db));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t swiglu_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *a = ctx->inputs[0], *b = ctx->inputs[1];
  bool same = a->rank == b->rank && a->dtype == b->dtype;
  for (int i = 0; same && i < a->rank; i++) same = a->dims[i] == b->dims[i];
  if (!same)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "A and B must have one dtype and shape");
  XC_RETURN_IF_ERROR(xc_tensor_create(a->dtype, a->rank, a->dims, &ctx->outputs[0]));
  for (int64_t i = 0; i < a->numel; i++)
    xc_tensor_set_f64(ctx->outputs[0], i,
                      silu(xc_tensor_get_f64(a, i)) * xc_tensor_get_f64(b, i));
  return NULL;
}

const xc_op_def_t xc_ops_composite[] = {
    {"Silu", "xcomp", 1, 1, 1, 1, NULL, XC_DT_FLOAT, silu_infer, silu_eval,
     "X * Sigmoid(X) (SiLU / swish)"},
    {"SwiGLU", "xcomp", 2, 2, 1, 1, NULL, XC_DT_FLOAT, swiglu_infer, swiglu_eval,
     "Silu(A) * B, A and B of one shape (gated linear unit)"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
