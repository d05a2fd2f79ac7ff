/* Pattern passes: layer normalization and RMS normalization written out as
 * elementwise ops and reductions.
 *
 *   LayerNormalization:  d = x - ReduceMean(x);  v = ReduceMean(d^2)
 *                        y = d / Sqrt(v + eps)   (or d * Reciprocal(Sqrt(..)))
 *                        [* gamma] [+ beta]
 *   RMSNormalization:    y = x / Sqrt(ReduceMean(x^2) + eps)  (or the
 *                        Reciprocal form) [* gamma]
 *
 * d^2 may be Pow(d, 2) or Mul(d, d). Both reductions (keepdims=1) must cover
 * the same trailing axes, which give the new op's axis. gamma/beta may only
 * vary along those axes (dims 1 elsewhere). Without gamma (also when only
 * beta is added) a ones constant is created (only possible for static
 * normalized dims); beta is left out when absent (it is optional in ONNX). */
#include <string.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

/* What the normalization core matched. */
typedef struct norm_core {
  xc_value_t* x;       /* normalized input */
  xc_value_t* centered; /* d (LayerNorm) or x (RMS) */
  int axis;            /* first normalized axis */
  double eps;
} norm_core_t;

/* Axes are exactly the trailing ones [rank-count, rank); sets *axis. */
static bool trailing_axes(const int64_t* axes, int count, int rank, int* axis) {
  for (int i = 0; i < count; i++)
    if (axes[i] != rank - count + i) return false;
  *axis = rank - count;
  return true;
}

/* v == d*d or Pow(d, 2) (single use); returns d and how often the square
 * node uses it (1 or 2). */
static xc_value_t* square_of(const xc_graph_t* g, xc_value_t* v, int* d_uses, xc_pat_match_t* m) {
  if (!xc_pat_has_uses(g, v, 1)) return NULL;
  xc_node_t* p = xc_pat_producer(v, "Pow");
  if (p && xc_pat_scalar_near(p->inputs[1], 2.0) && xc_pat_match_add(m, p)) {
    *d_uses = 1;
    return p->inputs[0];
  }
  p = xc_pat_producer(v, "Mul");
  if (p && p->inputs[0] == p->inputs[1] && p->inputs[0] && xc_pat_match_add(m, p)) {
    *d_uses = 2;
    return p->inputs[0];
  }
  return NULL;
}

/* r == Sqrt(ReduceMean(sq) + eps), single use at every step. Fills the core
 * from the squared value. `core_uses` is how often the normalizing node uses
 * the centered value. */
static bool match_stddev(const xc_graph_t* g, xc_value_t* r, int core_uses, norm_core_t* c,
                         xc_pat_match_t* m) {
  xc_node_t* sq = xc_pat_producer(r, "Sqrt");
  if (!sq || !xc_pat_has_uses(g, r, 1) || !xc_pat_match_add(m, sq)) return false;
  xc_value_t* ve = sq->inputs[0];
  xc_node_t* add = xc_pat_producer(ve, "Add");
  if (!add || !xc_pat_has_uses(g, ve, 1) || !xc_pat_match_add(m, add)) return false;
  xc_value_t* var = NULL;
  for (int k = 0; k < 2 && !var; k++)
    if (xc_pat_scalar_const(add->inputs[k], &c->eps) && c->eps >= 0) var = add->inputs[1 - k];
  xc_node_t* mean2 = xc_pat_producer(var, "ReduceMean");
  if (!mean2 || !xc_pat_has_uses(g, var, 1) || !xc_pat_match_add(m, mean2)) return false;
  int sq_uses = 0;
  xc_value_t* d = square_of(g, mean2->inputs[0], &sq_uses, m);
  if (!d || !xc_pat_is_float(d)) return false;
  int64_t axes[XC_MAX_RANK];
  int count;
  if (!xc_pat_reduce_axes(g, mean2, d->rank, axes, &count) ||
      !trailing_axes(axes, count, d->rank, &c->axis))
    return false;
  c->centered = d;
  c->x = d;
  /* LayerNorm when d = x - ReduceMean(x) over the same axes and d is used
   * only by the square and the normalizing node. */
  xc_node_t* sub = xc_pat_producer(d, "Sub");
  xc_node_t* mean1 = sub ? xc_pat_producer(sub->inputs[1], "ReduceMean") : NULL;
  if (mean1 && mean1->inputs[0] == sub->inputs[0] && xc_pat_has_uses(g, sub->inputs[1], 1) &&
      xc_pat_has_uses(g, d, sq_uses + core_uses)) {
    int64_t axes1[XC_MAX_RANK];
    int count1, axis1;
    if (xc_pat_reduce_axes(g, mean1, d->rank, axes1, &count1) &&
        trailing_axes(axes1, count1, d->rank, &axis1) && axis1 == c->axis &&
        xc_pat_match_add(m, sub) && xc_pat_match_add(m, mean1))
      c->x = sub->inputs[0];
  }
  return true;
}

/* n normalizes: Div(d, r), Mul(d, Reciprocal(r)), Mul(d, Div(1, r)). */
static bool match_core(const xc_graph_t* g, xc_node_t* n, norm_core_t* c, xc_pat_match_t* m) {
  if (n->num_inputs != 2 || n->num_outputs != 1) return false;
  if (xc_pat_is_op(n, "Div")) {
    return xc_pat_match_add(m, n) && match_stddev(g, n->inputs[1], 1, c, m) &&
           c->centered == n->inputs[0];
  }
  if (!xc_pat_is_op(n, "Mul")) return false;
  for (int k = 0; k < 2; k++) {
    xc_pat_match_t saved = *m;
    xc_value_t* inv = n->inputs[1 - k];
    xc_node_t* rcp = xc_pat_producer(inv, "Reciprocal");
    xc_value_t* r = rcp ? rcp->inputs[0] : NULL;
    xc_node_t* dv = xc_pat_producer(inv, "Div");
    if (!r && dv && xc_pat_scalar_near(dv->inputs[0], 1.0)) {
      rcp = dv;
      r = dv->inputs[1];
    }
    if (r && xc_pat_has_uses(g, inv, 1) && xc_pat_match_add(m, n) && xc_pat_match_add(m, rcp) &&
        match_stddev(g, r, 1, c, m) && c->centered == n->inputs[k])
      return true;
    *m = saved;
  }
  return false;
}

/* p may scale/shift x (rank r, normalized from axis): its dims aligned to
 * axes before `axis` must be 1. */
static bool param_ok(const xc_value_t* p, const xc_value_t* x, int axis) {
  if (!p || !xc_pat_is_float(p) || p->dtype != x->dtype || p->rank > x->rank) return false;
  for (int i = 0; i < p->rank; i++) {
    int xa = x->rank - p->rank + i;
    if (xa < axis && !(xc_dim_is_static(p->dims[i]) && p->dims[i].value == 1)) return false;
  }
  return true;
}

/* If `last`'s only consumer is `op`(last, p) in either order with p a valid
 * parameter, extends the match to it and returns p. */
static xc_value_t* follow_param(const xc_graph_t* g, xc_node_t** last, const char* op,
                                const xc_value_t* x, int axis, xc_pat_match_t* m) {
  xc_node_t* q = xc_pat_single_consumer(g, (*last)->outputs[0]);
  if (!xc_pat_is_op(q, op) || q->num_inputs != 2 || q->num_outputs != 1) return NULL;
  for (int k = 0; k < 2; k++) {
    if (q->inputs[k] != (*last)->outputs[0]) continue;
    xc_value_t* p = q->inputs[1 - k];
    if (!param_ok(p, x, axis) || !xc_pat_same_type(q->outputs[0], x) || !xc_pat_match_add(m, q))
      return NULL;
    *last = q;
    return p;
  }
  return NULL;
}

/* A ones constant over x's normalized dims (static only), or NULL. */
static xc_status_t ones_scale(xc_graph_t* g, const xc_value_t* x, int axis, xc_value_t** out) {
  *out = NULL;
  int64_t dims[XC_MAX_RANK];
  for (int i = axis; i < x->rank; i++) {
    if (!xc_dim_is_static(x->dims[i])) return NULL;
    dims[i - axis] = x->dims[i].value;
  }
  xc_tensor_t* t;
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank - axis, dims, &t));
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, 1.0);
  const char* name = xc_pat_fresh_name(g, "norm_ones");
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  return xc_graph_add_initializer(g, name, t, out);
}

static xc_status_t try_norm(xc_graph_t* g, xc_node_t* n, bool rms, bool* changed) {
  norm_core_t c = {0};
  xc_pat_match_t m = {0};
  if (!match_core(g, n, &c, &m)) return NULL;
  bool is_layer = c.x != c.centered;
  if (is_layer == rms) return NULL;
  xc_value_t* x = c.x;
  if (!xc_pat_is_float(x) || !xc_pat_same_type(n->outputs[0], x)) return NULL;
  xc_node_t* last = n;
  xc_value_t* gamma = follow_param(g, &last, "Mul", x, c.axis, &m);
  xc_value_t* beta = !rms ? follow_param(g, &last, "Add", x, c.axis, &m) : NULL;
  if (!gamma) XC_RETURN_IF_ERROR(ones_scale(g, x, c.axis, &gamma));
  if (!gamma) return NULL;
  xc_value_t* ins[3] = {x, gamma, beta};
  xc_node_t* out;
  XC_RETURN_IF_ERROR(xc_pat_replace(g, last, &m, rms ? "RMSNormalization" : "LayerNormalization",
                                    "", beta ? 3 : 2, ins, &out));
  XC_RETURN_IF_ERROR(xc_node_set_int(g, out, "axis", c.axis));
  XC_RETURN_IF_ERROR(xc_node_set_float(g, out, "epsilon", c.eps));
  *changed = true;
  return NULL;
}

static xc_status_t run_norm(xc_graph_t* g, bool rms, bool* changed) {
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++) {
    xc_node_t* n = g->nodes[i];
    if (xc_pat_is_op(n, "Div") || xc_pat_is_op(n, "Mul"))
      XC_RETURN_IF_ERROR(try_norm(g, n, rms, &any));
  }
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}

xc_status_t xc_pass_pattern_layer_norm(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  return run_norm(g, false, changed);
}

xc_status_t xc_pass_pattern_rms_norm(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  return run_norm(g, true, changed);
}
