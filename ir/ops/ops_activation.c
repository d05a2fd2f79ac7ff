/* Op family 'activation': pointwise activation functions (ONNX opset 23).
 * Every kernel evaluates in double and rounds once into the output dtype.
 * PRelu broadcasts its slope unidirectionally onto X. */
#include <math.h>
#include <string.h>

#include "elementwise_util.h"
#include "xcomp/op.h"

typedef enum act_op {
  ACT_RELU, ACT_LEAKY_RELU, ACT_ELU, ACT_SELU, ACT_CELU, ACT_THRESHOLDED_RELU,
  ACT_HARD_SIGMOID, ACT_HARD_SWISH, ACT_GELU, ACT_SOFTPLUS, ACT_SOFTSIGN, ACT_MISH,
  ACT_SHRINK,
} act_op_t;

/* Attribute values of one node, read once per kernel call. */
typedef struct act_params {
  double alpha, beta, gamma, bias, lambd;
  bool gelu_tanh;
} act_params_t;

static double softplus(double x) {
  /* log(1 + e^x) without overflow for large x. */
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double act_apply(act_op_t op, const act_params_t* p, double x) {
  switch (op) {
    case ACT_RELU: return x < 0 ? 0.0 : x;
    case ACT_LEAKY_RELU: return x >= 0 ? x : p->alpha * x;
    case ACT_ELU: return x >= 0 ? x : p->alpha * expm1(x);
    case ACT_SELU: return p->gamma * (x > 0 ? x : p->alpha * expm1(x));
    case ACT_CELU: return (x > 0 ? x : 0.0) + fmin(0.0, p->alpha * expm1(x / p->alpha));
    case ACT_THRESHOLDED_RELU: return x > p->alpha ? x : 0.0;
    case ACT_HARD_SIGMOID: return fmax(0.0, fmin(1.0, p->alpha * x + p->beta));
    case ACT_HARD_SWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case ACT_GELU:
      if (p->gelu_tanh) {
        double k = sqrt(2.0 / M_PI);
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
      }
      return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case ACT_SOFTPLUS: return softplus(x);
    case ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case ACT_MISH: return x * tanh(softplus(x));
    case ACT_SHRINK:
      if (x < -p->lambd) return x + p->bias;
      if (x > p->lambd) return x - p->bias;
      return 0.0;
  }
  return NAN;
}

static xc_status_t load_params(const xc_node_t* n, act_op_t op, act_params_t* p) {
  memset(p, 0, sizeof *p);
  switch (op) {
    case ACT_LEAKY_RELU: case ACT_ELU: case ACT_CELU: case ACT_THRESHOLDED_RELU:
      p->alpha = xc_node_attr_float(n, "alpha");
      if (op == ACT_CELU && p->alpha == 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "alpha must not be 0");
      break;
    case ACT_SELU:
      p->alpha = xc_node_attr_float(n, "alpha");
      p->gamma = xc_node_attr_float(n, "gamma");
      break;
    case ACT_HARD_SIGMOID:
      p->alpha = xc_node_attr_float(n, "alpha");
      p->beta = xc_node_attr_float(n, "beta");
      break;
    case ACT_GELU: {
      const char* a = xc_node_attr_string(n, "approximate");
      if (a && strcmp(a, "tanh") == 0) p->gelu_tanh = true;
      else if (a && strcmp(a, "none") != 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "approximate must be 'none' or 'tanh', got '%s'", a);
      break;
    }
    case ACT_SHRINK:
      p->bias = xc_node_attr_float(n, "bias");
      p->lambd = xc_node_attr_float(n, "lambd");
      break;
    default: break;
  }
  return NULL;
}

static xc_status_t infer_act(xc_graph_t* g, xc_node_t* n, act_op_t op) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, n->op->dtypes));
  act_params_t p;
  XC_RETURN_IF_ERROR(load_params(n, op, &p));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t eval_act(xc_eval_ctx_t* ctx, act_op_t op) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 1));
  const xc_tensor_t* x = ctx->inputs[0];
  act_params_t p;
  XC_RETURN_IF_ERROR(load_params(ctx->node, op, &p));
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (xc_dtype_is_int(x->dtype)) {
    /* Integer Relu and Shrink stay exact in int64 (Shrink's attributes are
     * floats, so its arithmetic goes through double and saturates). */
    for (int64_t i = 0; i < x->numel; i++) {
      int64_t v = xc_tensor_get_i64(x, i);
      if (op == ACT_RELU) {
        bool neg = xc_dtype_is_signed(x->dtype) && v < 0;
        xc_tensor_set_i64(y, i, neg ? 0 : v);
      } else {
        xc_tensor_set_f64(y, i, act_apply(op, &p, (double)v));
      }
    }
    return NULL;
  }
  for (int64_t i = 0; i < x->numel; i++)
    xc_tensor_set_f64(y, i, act_apply(op, &p, xc_tensor_get_f64(x, i)));
  return NULL;
}

/* PRelu: slope must broadcast to X's shape without changing it. */
static xc_status_t infer_prelu(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, n->op->dtypes));
  XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, 1));
  const xc_value_t* x = n->inputs[0];
  const xc_value_t* s = n->inputs[1];
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_infer_broadcast(g, n, x->rank, x->dims, s->rank, s->dims, &rank, dims));
  bool same = rank == x->rank;
  for (int d = 0; same && d < rank; d++) {
    xc_dim_t sd = d - (rank - s->rank) >= 0 ? s->dims[d - (rank - s->rank)] : xc_dim_const(1);
    /* Static slope dims must be 1 or equal to X's (symbolic ones are
     * checked by the kernel). */
    if (!sd.sym && sd.value != 1 && !x->dims[d].sym && x->dims[d].value != sd.value) same = false;
  }
  if (!same)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "slope must broadcast to the shape of X (unidirectional)");
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t eval_prelu(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* s = ctx->inputs[1];
  if (x->dtype != s->dtype)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "X and slope dtypes differ");
  int rank;
  int64_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_ew_broadcast_shape(ctx->node, 2, ctx->inputs, &rank, dims));
  bool same = rank == x->rank;
  for (int d = 0; same && d < rank; d++) same = dims[d] == x->dims[d];
  if (!same)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT,
                         "slope does not broadcast to the shape of X");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  xc_ew_iter_t it;
  xc_ew_iter_init(&it, rank, dims, 2, ctx->inputs);
  bool is_int = xc_dtype_is_int(x->dtype);
  for (int64_t i = 0; i < y->numel; i++, xc_ew_iter_next(&it)) {
    if (is_int) {
      int64_t v = xc_tensor_get_i64(x, it.off[0]);
      bool neg = xc_dtype_is_signed(x->dtype) && v < 0;
      int64_t r = neg ? (int64_t)((uint64_t)v * (uint64_t)xc_tensor_get_i64(s, it.off[1])) : v;
      xc_tensor_set_i64(y, i, r);
    } else {
      double v = xc_tensor_get_f64(x, it.off[0]);
      xc_tensor_set_f64(y, i, v < 0 ? v * xc_tensor_get_f64(s, it.off[1]) : v);
    }
  }
  return NULL;
}

#define DEFINE_ACT(suffix, op) \
  static xc_status_t infer_##suffix(xc_graph_t* g, xc_node_t* n) { return infer_act(g, n, op); } \
  static xc_status_t eval_##suffix(xc_eval_ctx_t* ctx) { return eval_act(ctx, op); }

DEFINE_ACT(relu, ACT_RELU)
DEFINE_ACT(leaky_relu, ACT_LEAKY_RELU)
DEFINE_ACT(elu, ACT_ELU)
DEFINE_ACT(selu, ACT_SELU)
DEFINE_ACT(celu, ACT_CELU)
DEFINE_ACT(thresholded_relu, ACT_THRESHOLDED_RELU)
DEFINE_ACT(hard_sigmoid, ACT_HARD_SIGMOID)
DEFINE_ACT(hard_swish, ACT_HARD_SWISH)
DEFINE_ACT(gelu, ACT_GELU)
DEFINE_ACT(softplus, ACT_SOFTPLUS)
DEFINE_ACT(softsign, ACT_SOFTSIGN)
DEFINE_ACT(mish, ACT_MISH)
DEFINE_ACT(shrink, ACT_SHRINK)

static const xc_attr_def_t leaky_relu_attrs[] = {XC_ATTR_F("alpha", 0.01), XC_ATTR_END};
static const xc_attr_def_t alpha_one_attrs[] = {XC_ATTR_F("alpha", 1.0), XC_ATTR_END};
static const xc_attr_def_t selu_attrs[] = {
    XC_ATTR_F("alpha", 1.67326319217681884765625), XC_ATTR_F("gamma", 1.05070102214813232421875),
    XC_ATTR_END};
static const xc_attr_def_t hard_sigmoid_attrs[] = {
    XC_ATTR_F("alpha", 0.2), XC_ATTR_F("beta", 0.5), XC_ATTR_END};
static const xc_attr_def_t gelu_attrs[] = {XC_ATTR_S("approximate", "none"), XC_ATTR_END};
static const xc_attr_def_t shrink_attrs[] = {
    XC_ATTR_F("bias", 0.0), XC_ATTR_F("lambd", 0.5), XC_ATTR_END};

#define ACT(name, attrs, mask, suffix, summary) \
  {name, "", 1, 1, 1, 1, attrs, mask, infer_##suffix, eval_##suffix, summary}

const xc_op_def_t xc_ops_activation[] = {
    ACT("Relu", NULL, XC_DT_FLOAT | XC_DT_SINT, relu, "max(X, 0)"),
    ACT("LeakyRelu", leaky_relu_attrs, XC_DT_FLOAT, leaky_relu, "X < 0 ? alpha * X : X"),
    ACT("Elu", alpha_one_attrs, XC_DT_FLOAT, elu, "X < 0 ? alpha * (e ** X - 1) : X"),
    ACT("Selu", selu_attrs, XC_DT_FLOAT, selu,
        "gamma * (X > 0 ? X : alpha * (e ** X - 1))"),
    ACT("Celu", alpha_one_attrs, XC_DT_FLOAT, celu,
        "max(0, X) + min(0, alpha * (e ** (X / alpha) - 1))"),
    ACT("ThresholdedRelu", alpha_one_attrs, XC_DT_FLOAT, thresholded_relu,
        "X > alpha ? X : 0"),
    ACT("HardSigmoid", hard_sigmoid_attrs, XC_DT_FLOAT, hard_sigmoid,
        "max(0, min(1, alpha * X + beta))"),
    ACT("HardSwish", NULL, XC_DT_FLOAT, hard_swish, "X * max(0, min(1, X / 6 + 1 / 2))"),
    ACT("Gelu", gelu_attrs, XC_DT_FLOAT, gelu, "Gaussian error linear unit (exact or tanh)"),
    ACT("Softplus", NULL, XC_DT_FLOAT, softplus, "log(1 + e ** X)"),
    ACT("Softsign", NULL, XC_DT_FLOAT, softsign, "X / (1 + |X|)"),
    ACT("Mish", NULL, XC_DT_FLOAT, mish, "X * tanh(softplus(X))"),
    ACT("Shrink", shrink_attrs, XC_DT_NUMERIC, shrink,
        "X < -lambd ? X + bias : X > lambd ? X - bias : 0"),
    {"PRelu", "", 2, 2, 1, 1, NULL,
     XC_DT_FLOAT | XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U32) | XC_DT(XC_U64), infer_prelu,
     eval_prelu, "X < 0 ? slope * X : X, slope broadcast onto X"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
