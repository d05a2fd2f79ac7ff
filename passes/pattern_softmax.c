/* Pattern pass: softmax written out by exporters,
 *   e = Exp(x - ReduceMax(x, axis))  or  e = Exp(x)
 *   y = e / ReduceSum(e, axis)   or  e * Reciprocal(ReduceSum(e, axis))
 * becomes Softmax(x) {axis}; then Log(Softmax(x)) becomes LogSoftmax(x).
 * Reductions must keep dims and cover one axis (the same one for max and
 * sum); e may only feed the Div and the ReduceSum, every other intermediate
 * has a single use. Dropping the max subtraction form is exact: softmax is
 * invariant to it. */
#include <string.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

static bool single_axis(const xc_graph_t* g, const xc_node_t* r, int rank, int* axis) {
  int64_t axes[XC_MAX_RANK];
  int count;
  if (!xc_pat_reduce_axes(g, r, rank, axes, &count) || count != 1) return false;
  *axis = (int)axes[0];
  return true;
}

/* root is Div(e, s), or Mul(e, Reciprocal(s)) in either order; finds e and
 * s (and the Reciprocal node, if any). */
static bool split_quotient(const xc_graph_t* g, xc_node_t* root, xc_value_t** e, xc_value_t** s,
                           xc_node_t** rcp) {
  *rcp = NULL;
  if (root->num_inputs != 2 || root->num_outputs != 1) return false;
  if (xc_pat_is_op(root, "Div")) {
    *e = root->inputs[0];
    *s = root->inputs[1];
    return true;
  }
  for (int k = 0; k < 2; k++) {
    xc_node_t* r = xc_pat_producer(root->inputs[1 - k], "Reciprocal");
    if (r && xc_pat_has_uses(g, root->inputs[1 - k], 1)) {
      *e = root->inputs[k];
      *s = r->inputs[0];
      *rcp = r;
      return true;
    }
  }
  return false;
}

static xc_status_t try_softmax(xc_graph_t* g, xc_node_t* div, bool* changed) {
  xc_value_t *e, *s;
  xc_node_t* rcp;
  if (!split_quotient(g, div, &e, &s, &rcp)) return NULL;
  xc_node_t* exp = xc_pat_producer(e, "Exp");
  xc_node_t* sum = xc_pat_producer(s, "ReduceSum");
  if (!exp || !sum || sum->inputs[0] != e || !xc_pat_has_uses(g, s, 1) ||
      !xc_pat_has_uses(g, e, 2) || !xc_pat_is_float(e))
    return NULL;
  int axis;
  if (!single_axis(g, sum, e->rank, &axis)) return NULL;
  xc_pat_match_t m = {0};
  xc_pat_match_add(&m, sum);
  xc_pat_match_add(&m, exp);
  if (rcp) xc_pat_match_add(&m, rcp);
  xc_value_t* x = exp->inputs[0];
  xc_node_t* sub = xc_pat_producer(x, "Sub");
  xc_node_t* max = sub ? xc_pat_producer(sub->inputs[1], "ReduceMax") : NULL;
  int max_axis;
  if (max && max->inputs[0] == sub->inputs[0] && xc_pat_has_uses(g, x, 1) &&
      xc_pat_has_uses(g, sub->inputs[1], 1) && single_axis(g, max, x->rank, &max_axis) &&
      max_axis == axis) {
    xc_pat_match_add(&m, sub);
    xc_pat_match_add(&m, max);
    x = sub->inputs[0];
  }
  if (!xc_pat_is_float(x) || !xc_pat_same_type(div->outputs[0], x)) return NULL;
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_pat_replace(g, div, &m, "Softmax", "", 1, &x, &n));
  XC_RETURN_IF_ERROR(xc_node_set_int(g, n, "axis", axis));
  *changed = true;
  return NULL;
}

static xc_status_t try_log_softmax(xc_graph_t* g, xc_node_t* log, bool* changed) {
  if (log->num_inputs != 1 || log->num_outputs != 1) return NULL;
  xc_value_t* y = log->inputs[0];
  xc_node_t* sm = xc_pat_producer(y, "Softmax");
  if (!sm || !xc_pat_has_uses(g, y, 1)) return NULL;
  xc_pat_match_t m = {0};
  xc_pat_match_add(&m, sm);
  xc_value_t* x = sm->inputs[0];
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_pat_replace(g, log, &m, "LogSoftmax", "", 1, &x, &n));
  XC_RETURN_IF_ERROR(xc_node_set_int(g, n, "axis", xc_node_attr_int(sm, "axis")));
  *changed = true;
  return NULL;
}

xc_status_t xc_pass_pattern_softmax(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++)
    if (xc_pat_is_op(g->nodes[i], "Div") || xc_pat_is_op(g->nodes[i], "Mul"))
      XC_RETURN_IF_ERROR(try_softmax(g, g->nodes[i], &any));
  /* Softmax nodes made above are appended at the end: scan everything. */
  for (int i = 0; i < g->num_nodes; i++)
    if (xc_pat_is_op(g->nodes[i], "Log")) XC_RETURN_IF_ERROR(try_log_softmax(g, g->nodes[i], &any));
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}
