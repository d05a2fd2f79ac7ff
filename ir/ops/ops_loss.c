/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 13), listed
 * in the 'norm' family table next to the softmax ops they build on.
 *
 * input [N, C, d1..dk], target [N, d1..dk] (class indices), optional
 * weight [C]. Per element: loss = -weight[t] * input[n, t, d], or 0 when t
 * equals ignore_index. reduction "none" keeps the target shape; "sum" adds;
 * "mean" divides the sum by the total weight of the elements not ignored
 * (their count without a weight). SoftmaxCrossEntropyLoss applies
 * log-softmax over C first and can return it as a second output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_loss.h"

const xc_attr_def_t xc_loss_attrs[] = {
    XC_ATTR_OPT("ignore_index", XC_ATTR_INT),
    XC_ATTR_S("reduction", "mean"),
    XC_ATTR_END,
};

enum { RED_NONE, RED_SUM, RED_MEAN };

static xc_status_t reduction_of(const xc_node_t* n, int* out) {
  const char* r = xc_node_attr_string(n, "reduction");
  if (!strcmp(r, "none"))
    *out = RED_NONE;
  else if (!strcmp(r, "sum"))
    *out = RED_SUM;
  else if (!strcmp(r, "mean"))
    *out = RED_MEAN;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown reduction '%s'", r);
  return NULL;
}

static bool is_sce(const xc_node_t* n) {
  return strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0;
}

xc_status_t xc_loss_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I32) | XC_DT(XC_I64)));
  const xc_value_t *x = n->inputs[0], *t = n->inputs[1];
  const xc_value_t* w = n->num_inputs > 2 ? n->inputs[2] : NULL;
  int red;
  XC_RETURN_IF_ERROR(reduction_of(n, &red));
  if (x->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 2 (N, C, ...), got %d",
                         x->rank);
  if (t->rank != x->rank - 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "target rank %d, expected %d", t->rank,
                         x->rank - 1);
  for (int i = 0; i < t->rank; i++) {
    xc_dim_t a = t->dims[i], b = x->dims[i == 0 ? 0 : i + 1];
    if (!a.sym && !b.sym && a.value != b.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "target dim %d (%lld) differs from the input (%lld)", i,
                           (long long)a.value, (long long)b.value);
  }
  if (w) {
    if (w->dtype != x->dtype || w->rank != 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "weight must be a 1-D tensor of the input dtype");
    if (!w->dims[0].sym && !x->dims[1].sym && w->dims[0].value != x->dims[1].value)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "weight has %lld entries for %lld classes",
                           (long long)w->dims[0].value, (long long)x->dims[1].value);
  }
  if (red == RED_NONE)
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, t->rank, t->dims));
  else
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, 0, NULL));
  if (is_sce(n) && n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_infer_same_as_input(g, n, 1, 0));
  return NULL;
}

xc_status_t xc_loss_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *t = ctx->inputs[1];
  const xc_tensor_t* w = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  int red;
  XC_RETURN_IF_ERROR(reduction_of(n, &red));
  if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input/target shapes do not match");
  for (int i = 1; i < t->rank; i++)
    if (t->dims[i] != x->dims[i + 1])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "input/target shapes do not match");
  int64_t nb = x->dims[0], c = x->dims[1], inner = t->numel / (nb ? nb : 1);
  if (nb == 0) inner = 0;
  if (w && (w->rank != 1 || w->dims[0] != c))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "weight must have shape [%lld]", (long long)c);
  bool has_ignore = xc_node_has_attr(n, "ignore_index");
  int64_t ignore = has_ignore ? xc_node_attr_int(n, "ignore_index") : 0;
  /* Log-probabilities (SoftmaxCrossEntropyLoss) or the input itself. */
  double* lp = NULL;
  if (is_sce(n)) {
    lp = malloc(sizeof(double) * (size_t)(x->numel ? x->numel : 1));
    if (!lp) return xc_error_oom();
    for (int64_t b = 0; b < nb; b++)
      for (int64_t i = 0; i < inner; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t k = 0; k < c; k++) {
          double v = xc_tensor_get_f64(x, (b * c + k) * inner + i);
          if (v > mx) mx = v;
        }
        for (int64_t k = 0; k < c; k++)
          sum += exp(xc_tensor_get_f64(x, (b * c + k) * inner + i) - mx);
        double lse = mx + log(sum);
        for (int64_t k = 0; k < c; k++) {
          int64_t at = (b * c + k) * inner + i;
          lp[at] = xc_tensor_get_f64(x, at) - lse;
        }
      }
  }
  xc_status_t s = NULL;
  if (red == RED_NONE)
    s = xc_tensor_create(x->dtype, t->rank, t->dims, &ctx->outputs[0]);
  else
    s = xc_tensor_create(x->dtype, 0, NULL, &ctx->outputs[0]);
  double total = 0, weight_sum = 0;
  for (int64_t b = 0; b < nb && !s; b++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t ti = b * inner + i, cls = xc_tensor_get_i64(t, ti);
      double loss = 0, wt = 0;
      if (!(has_ignore && cls == ignore)) {
        if (cls < 0 || cls >= c) {
          s = xc_node_error(n, XC_OUT_OF_RANGE, "target %lld is outside [0, %lld)", (long long)cls,
                            (long long)c);
          break;
        }
        int64_t at = (b * c + cls) * inner + i;
        wt = w ? xc_tensor_get_f64(w, cls) : 1.0;
        loss = -wt * (lp ? lp[at] : xc_tensor_get_f64(x, at));
      }
      if (red == RED_NONE) xc_tensor_set_f64(ctx->outputs[0], ti, loss);
      total += loss;
      weight_sum += wt;
    }
  if (!s && red != RED_NONE)
    xc_tensor_set_f64(ctx->outputs[0], 0, red == RED_SUM ? total : total / weight_sum);
  if (!s && lp && ctx->num_outputs > 1 && n->outputs[1]) {
    s = xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[1]);
    for (int64_t i = 0; !s && i < x->numel; i++) xc_tensor_set_f64(ctx->outputs[1], i, lp[i]);
  }
  free(lp);
  return s;
}
