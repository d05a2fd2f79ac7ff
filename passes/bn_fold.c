/* BatchNormalization folding: an inference-mode BN whose input is the only
 * use of a Conv or Gemm output is folded into that node's weights and bias.
 *
 *   k[c]  = scale[c] / sqrt(var[c] + eps)
 *   Conv: W'[c, ...] = W[c, ...] * k[c]       b'[c] = (b[c] - mean[c]) * k[c] + bias[c]
 *   Gemm: column c of B (row c when transB) scaled by k[c];
 *         C'[c] = (beta * C[c] - mean[c]) * k[c] + bias[c], beta' = 1
 *
 * Requires constant weights, bias (if any) and BN parameters, 1-D BN
 * parameters of the output channel count, and, for Gemm, a C that does not
 * vary along rows (absent, scalar, [M] or [1, M]). New constants are made;
 * the old ones stay for any other user (compaction drops them otherwise). */
#include <math.h>
#include <string.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

static bool const_vector(const xc_value_t* v, int64_t len) {
  return v && v->constant && v->constant->rank == 1 && v->constant->dims[0] == len &&
         xc_dtype_is_float(v->constant->dtype);
}

static xc_status_t new_const(xc_graph_t* g, const xc_node_t* n, const char* what, xc_tensor_t* t,
                             xc_value_t** out) {
  const char* prefix = xc_arena_printf(g->arena, "%s_bnfold_%s", n->name, what);
  const char* name = prefix ? xc_pat_fresh_name(g, prefix) : NULL;
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  return xc_graph_add_initializer(g, name, t, out);
}

/* Replaces input k of n (growing the input list when k is past its end). */
static xc_status_t set_input(xc_graph_t* g, xc_node_t* n, int k, xc_value_t* v) {
  if (k >= n->num_inputs) {
    xc_value_t** ins = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(k + 2));
    if (!ins) return xc_error_oom();
    for (int i = 0; i < n->num_inputs; i++) ins[i] = n->inputs[i];
    n->inputs = ins;
    n->num_inputs = k + 1;
  }
  n->inputs[k] = v;
  return NULL;
}

static xc_status_t fold(xc_graph_t* g, xc_node_t* bn, bool* changed) {
  if (bn->num_inputs != 5 || xc_node_attr_int(bn, "training_mode") != 0) return NULL;
  for (int k = 1; k < bn->num_outputs; k++)
    if (bn->outputs[k] && xc_pat_uses(g, bn->outputs[k]) > 0) return NULL;
  xc_value_t* x = bn->inputs[0];
  xc_node_t* p = x ? x->producer : NULL;
  bool conv = xc_pat_is_op(p, "Conv"), gemm = xc_pat_is_op(p, "Gemm");
  if ((!conv && !gemm) || p->num_outputs != 1 || !xc_pat_has_uses(g, x, 1) ||
      !xc_pat_is_float(x) || x->rank < 2 || !xc_dim_is_static(x->dims[1]))
    return NULL;
  int64_t ch = x->dims[1].value;
  for (int k = 1; k < 5; k++)
    if (!const_vector(bn->inputs[k], ch)) return NULL;
  const xc_value_t* wv = p->num_inputs > 1 ? p->inputs[1] : NULL;
  const xc_value_t* bv = p->num_inputs > 2 ? p->inputs[2] : NULL;
  if (!wv || !wv->constant || wv->constant->dtype != x->dtype) return NULL;
  if (bv && (!bv->constant || bv->constant->dtype != x->dtype)) return NULL;
  const xc_tensor_t* w = wv->constant;
  bool trans_b = gemm && xc_node_attr_int(p, "transB") != 0;
  double beta = gemm ? xc_node_attr_float(p, "beta") : 1.0;
  if (conv && (w->rank < 1 || w->dims[0] != ch)) return NULL;
  if (gemm && (w->rank != 2 || w->dims[trans_b ? 0 : 1] != ch)) return NULL;
  /* Bias value per channel: Conv B is [M]; Gemm C must not vary along rows. */
  const xc_tensor_t* b = bv ? bv->constant : NULL;
  if (b && conv && !(b->rank == 1 && b->dims[0] == ch)) return NULL;
  if (b && gemm) {
    bool ok = b->numel == 1 || (b->rank == 1 && b->dims[0] == ch) ||
              (b->rank == 2 && b->dims[0] == 1 && b->dims[1] == ch);
    if (!ok) return NULL;
  }
  double eps = xc_node_attr_float(bn, "epsilon");
  const xc_tensor_t *scale = bn->inputs[1]->constant, *shift = bn->inputs[2]->constant,
                    *mean = bn->inputs[3]->constant, *var = bn->inputs[4]->constant;
  for (int64_t c = 0; c < ch; c++)
    if (!(xc_tensor_get_f64(var, c) + eps > 0)) return NULL;

  xc_tensor_t *nw = NULL, *nb = NULL;
  XC_RETURN_IF_ERROR(xc_tensor_create(w->dtype, w->rank, w->dims, &nw));
  xc_status_t s = xc_tensor_create(w->dtype, 1, &ch, &nb);
  if (s) {
    xc_tensor_destroy(nw);
    return s;
  }
  int64_t inner = ch ? w->numel / ch : 0;
  for (int64_t i = 0; i < w->numel; i++) {
    int64_t c = conv ? i / inner : (trans_b ? i / w->dims[1] : i % w->dims[1]);
    double k = xc_tensor_get_f64(scale, c) / sqrt(xc_tensor_get_f64(var, c) + eps);
    xc_tensor_set_f64(nw, i, xc_tensor_get_f64(w, i) * k);
  }
  for (int64_t c = 0; c < ch; c++) {
    double k = xc_tensor_get_f64(scale, c) / sqrt(xc_tensor_get_f64(var, c) + eps);
    double bc = 0;
    if (b) bc = beta * xc_tensor_get_f64(b, b->numel == 1 ? 0 : c);
    xc_tensor_set_f64(nb, c, (bc - xc_tensor_get_f64(mean, c)) * k + xc_tensor_get_f64(shift, c));
  }
  xc_value_t *w2, *b2;
  s = new_const(g, p, "w", nw, &w2);
  if (s) {
    xc_tensor_destroy(nb);
    return s;
  }
  XC_RETURN_IF_ERROR(new_const(g, p, "b", nb, &b2));
  XC_RETURN_IF_ERROR(set_input(g, p, 1, w2));
  XC_RETURN_IF_ERROR(set_input(g, p, 2, b2));
  if (gemm) XC_RETURN_IF_ERROR(xc_node_set_float(g, p, "beta", 1.0));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, p, bn));
  bn->dead = true;
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, bn->outputs[0], x));
  *changed = true;
  return NULL;
}

xc_status_t xc_pass_bn_fold(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++)
    if (xc_pat_is_op(g->nodes[i], "BatchNormalization"))
      XC_RETURN_IF_ERROR(fold(g, g->nodes[i], &any));
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}
