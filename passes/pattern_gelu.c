/* Pattern pass: GELU written out by exporters, in its exact form
 *   0.5 * x * (1 + erf(x / sqrt(2)))             (or x * 0.7071...)
 * and its tanh approximation
 *   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (Pow(x,3) or x*x*x)
 * becomes one ONNX Gelu node (approximate "none" or "tanh"). The products may
 * be written in any operand order and grouping; constants match within a
 * relative 1e-4. Every intermediate result must have no use outside the
 * pattern, and the result must have x's dtype and shape. */
#include <math.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

/* v == 1 + t (either order) with v used once; returns t's producer if it is
 * `op` (used once), else NULL. */
static xc_node_t* one_plus(const xc_graph_t* g, xc_value_t* v, const char* op, xc_pat_match_t* m) {
  xc_node_t* add = xc_pat_producer(v, "Add");
  if (!add || !xc_pat_has_uses(g, v, 1) || add->num_inputs != 2) return NULL;
  for (int k = 0; k < 2; k++) {
    xc_value_t* t = add->inputs[1 - k];
    xc_node_t* f = xc_pat_producer(t, op);
    if (xc_pat_scalar_near(add->inputs[k], 1.0) && f && xc_pat_has_uses(g, t, 1) &&
        xc_pat_match_add(m, add) && xc_pat_match_add(m, f))
      return f;
  }
  return NULL;
}

/* v == scale * x, as a single-use product. */
static bool scaled_x(const xc_graph_t* g, xc_value_t* v, xc_value_t* x, double scale,
                     xc_pat_match_t* m) {
  xc_node_t* p = v->producer;
  xc_pat_product_t prod;
  return xc_pat_has_uses(g, v, 1) && xc_pat_flatten_product(g, p, &prod) &&
         prod.num_leaves == 1 && prod.leaves[0] == x &&
         xc_pat_near_tol(prod.scale, scale, prod.tol) &&
         xc_pat_match_add_product(m, &prod);
}

/* v == 0.044715 * x^3 with x^3 as Pow(x, 3) or x*x*x. */
static bool cubic_term(const xc_graph_t* g, xc_value_t* v, xc_value_t* x, xc_pat_match_t* m) {
  xc_pat_product_t prod;
  if (!xc_pat_has_uses(g, v, 1) || !xc_pat_flatten_product(g, v->producer, &prod) ||
      !xc_pat_near_tol(prod.scale, 0.044715, prod.tol) || !xc_pat_match_add_product(m, &prod))
    return false;
  if (prod.num_leaves == 3)
    return prod.leaves[0] == x && prod.leaves[1] == x && prod.leaves[2] == x;
  if (prod.num_leaves != 1) return false;
  xc_node_t* pw = xc_pat_producer(prod.leaves[0], "Pow");
  return pw && pw->inputs[0] == x && xc_pat_scalar_near(pw->inputs[1], 3.0) &&
         xc_pat_has_uses(g, prod.leaves[0], 1) && xc_pat_match_add(m, pw);
}

/* t (the Tanh input) == sqrt(2/pi) * (x + 0.044715 * x^3). */
static bool tanh_argument(const xc_graph_t* g, xc_value_t* t, xc_value_t* x, xc_pat_match_t* m) {
  xc_pat_product_t prod;
  if (!xc_pat_has_uses(g, t, 1) || !xc_pat_flatten_product(g, t->producer, &prod) ||
      prod.num_leaves != 1 || !xc_pat_near_tol(prod.scale, sqrt(2.0 / M_PI), prod.tol) ||
      !xc_pat_match_add_product(m, &prod))
    return false;
  xc_value_t* s = prod.leaves[0];
  xc_node_t* add = xc_pat_producer(s, "Add");
  if (!add || !xc_pat_has_uses(g, s, 1) || !xc_pat_match_add(m, add)) return false;
  for (int k = 0; k < 2; k++)
    if (add->inputs[k] == x && cubic_term(g, add->inputs[1 - k], x, m)) return true;
  return false;
}

/* Tries x (leaf ix) and A = 1 + erf|tanh(...) (the other leaf). */
static bool match_gelu(const xc_graph_t* g, xc_value_t* x, xc_value_t* a, bool* tanh_form,
                       xc_pat_match_t* m) {
  xc_pat_match_t saved = *m;
  xc_node_t* erf = one_plus(g, a, "Erf", m);
  if (erf && scaled_x(g, erf->inputs[0], x, 1.0 / sqrt(2.0), m)) {
    *tanh_form = false;
    return true;
  }
  *m = saved;
  xc_node_t* th = one_plus(g, a, "Tanh", m);
  if (th && tanh_argument(g, th->inputs[0], x, m)) {
    *tanh_form = true;
    return true;
  }
  *m = saved;
  return false;
}

static xc_status_t try_root(xc_graph_t* g, xc_node_t* root, bool* changed) {
  xc_value_t* y = root->outputs[0];
  if (root->num_outputs != 1 || !xc_pat_is_float(y)) return NULL;
  xc_pat_product_t prod;
  if (!xc_pat_flatten_product(g, root, &prod) || prod.num_leaves != 2 ||
      !xc_pat_near_tol(prod.scale, 0.5, prod.tol))
    return NULL;
  for (int k = 0; k < 2; k++) {
    xc_value_t* x = prod.leaves[k];
    if (!xc_pat_same_type(x, y)) continue;
    xc_pat_match_t m = {0};
    bool tanh_form = false;
    if (!xc_pat_match_add_product(&m, &prod) ||
        !match_gelu(g, x, prod.leaves[1 - k], &tanh_form, &m))
      continue;
    xc_node_t* n;
    XC_RETURN_IF_ERROR(xc_pat_replace(g, root, &m, "Gelu", "", 1, &x, &n));
    if (tanh_form) XC_RETURN_IF_ERROR(xc_node_set_string(g, n, "approximate", "tanh"));
    *changed = true;
    return NULL;
  }
  return NULL;
}

xc_status_t xc_pass_pattern_gelu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  bool any = false;
  /* Outermost products first: later nodes are the roots of their chains. */
  for (int i = g->num_nodes - 1; i >= 0; i--) {
    xc_node_t* n = g->nodes[i];
    if (xc_pat_is_op(n, "Mul") || xc_pat_is_op(n, "Div")) XC_RETURN_IF_ERROR(try_root(g, n, &any));
  }
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}
