/* Algebraic simplification: removes ops that do nothing (Identity, inference
 * Dropout, Cast to the same type, x+0, x*1, Expand/Reshape to the same shape,
 * Squeeze∘Unsqueeze on the same axes) and merges chains (Transpose∘Transpose,
 * Reshape∘Reshape). Every rewrite keeps dtype and shape of the result. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"
#include "xcomp/passes.h"

static bool is_op(const xc_node_t* n, const char* op) {
  return n && !n->dead && n->domain[0] == 0 && strcmp(n->op_type, op) == 0;
}

static bool same_type(const xc_value_t* a, const xc_value_t* b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!xc_dim_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

/* True when every element of the constant input k equals v. */
static bool const_all(const xc_node_t* n, int k, double v) {
  const xc_value_t* c = k < n->num_inputs ? n->inputs[k] : NULL;
  if (!c || !c->constant) return false;
  for (int64_t i = 0; i < c->constant->numel; i++)
    if (xc_tensor_get_f64(c->constant, i) != v) return false;
  return true;
}

/* Replaces node n (single output) by value x. */
static xc_status_t forward(xc_graph_t* g, xc_node_t* n, xc_value_t* x, bool* changed) {
  xc_value_t* y = n->outputs[0];
  if (!y || !same_type(x, y)) return NULL;
  for (int k = 1; k < n->num_outputs; k++)
    if (n->outputs[k] && xc_graph_count_uses(g, n->outputs[k]) > 0) return NULL;
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, x));
  n->dead = true;
  *changed = true;
  return NULL;
}

/* Sorted, normalized constant axes of input k; false if not constant. */
static bool const_axes(const xc_node_t* n, int k, int rank, int64_t* out, int64_t* count) {
  const xc_value_t* a = k < n->num_inputs ? n->inputs[k] : NULL;
  if (!a || !a->constant || a->constant->numel > XC_MAX_RANK) return false;
  *count = a->constant->numel;
  for (int64_t i = 0; i < *count; i++) {
    int64_t v = xc_tensor_get_i64(a->constant, i);
    if (v < 0) v += rank;
    out[i] = v;
  }
  for (int64_t i = 1; i < *count; i++)
    for (int64_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
      int64_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return true;
}

static xc_status_t simplify_node(xc_graph_t* g, xc_node_t* n, bool* changed) {
  if (n->num_outputs < 1 || !n->outputs[0] || n->num_inputs < 1 || !n->inputs[0]) return NULL;
  xc_value_t* x = n->inputs[0];
  xc_node_t* p = x->producer;
  if (is_op(n, "Identity") || is_op(n, "Cast") || is_op(n, "Expand"))
    return forward(g, n, x, changed); /* forward() checks the type is unchanged */
  if (is_op(n, "Dropout")) {
    bool training = n->num_inputs > 2 && n->inputs[2] && !const_all(n, 2, 0);
    if (!training) return forward(g, n, x, changed);
    return NULL;
  }
  if (is_op(n, "Add") || is_op(n, "Sub")) {
    if (const_all(n, 1, 0)) return forward(g, n, x, changed);
    if (is_op(n, "Add") && n->inputs[1] && const_all(n, 0, 0)) return forward(g, n, n->inputs[1], changed);
    return NULL;
  }
  if (is_op(n, "Mul") || is_op(n, "Div")) {
    if (const_all(n, 1, 1)) return forward(g, n, x, changed);
    if (is_op(n, "Mul") && n->inputs[1] && const_all(n, 0, 1)) return forward(g, n, n->inputs[1], changed);
    return NULL;
  }
  if (is_op(n, "Reshape")) {
    if (same_type(x, n->outputs[0])) return forward(g, n, x, changed);
    /* Reshape(Reshape(x, s1), s2) -> Reshape(x, s2) unless s2 copies dims (0). */
    if (is_op(p, "Reshape") && n->inputs[1] && n->inputs[1]->constant &&
        !xc_node_attr_int(n, "allowzero")) {
      const xc_tensor_t* s2 = n->inputs[1]->constant;
      for (int64_t i = 0; i < s2->numel; i++)
        if (xc_tensor_get_i64(s2, i) == 0) return NULL;
      n->inputs[0] = p->inputs[0];
      XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, p));
      *changed = true;
    }
    return NULL;
  }
  if (is_op(n, "Transpose") && is_op(p, "Transpose")) {
    int r = x->rank;
    int64_t c1, c2, p1[XC_MAX_RANK], p2[XC_MAX_RANK], composed[XC_MAX_RANK];
    const int64_t* a1 = xc_node_attr_ints(p, "perm", &c1);
    const int64_t* a2 = xc_node_attr_ints(n, "perm", &c2);
    for (int i = 0; i < r; i++) {
      p1[i] = c1 ? a1[i] : r - 1 - i;
      p2[i] = c2 ? a2[i] : r - 1 - i;
    }
    bool identity = true;
    for (int i = 0; i < r; i++) {
      composed[i] = p1[p2[i]];
      identity = identity && composed[i] == i;
    }
    if (identity) return forward(g, n, p->inputs[0], changed);
    n->inputs[0] = p->inputs[0];
    XC_RETURN_IF_ERROR(xc_node_set_ints(g, n, "perm", r, composed));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, p));
    *changed = true;
    return NULL;
  }
  if ((is_op(n, "Squeeze") && is_op(p, "Unsqueeze")) ||
      (is_op(n, "Unsqueeze") && is_op(p, "Squeeze"))) {
    /* Both axes lists refer to the rank of x's producer input or output,
     * whichever is larger: the unsqueezed tensor. */
    int big = is_op(n, "Squeeze") ? x->rank : n->outputs[0]->rank;
    int64_t a1[XC_MAX_RANK], a2[XC_MAX_RANK], c1, c2;
    if (!const_axes(p, 1, big, a1, &c1) || !const_axes(n, 1, big, a2, &c2) || c1 != c2) return NULL;
    for (int64_t i = 0; i < c1; i++)
      if (a1[i] != a2[i]) return NULL;
    return forward(g, n, p->inputs[0], changed);
  }
  return NULL;
}

xc_status_t xc_pass_simplify(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  /* Iterate to a fixpoint: one rewrite can expose another. */
  for (int round = 0; round < 8; round++) {
    bool any = false;
    for (int i = 0; i < g->num_nodes; i++) {
      xc_node_t* n = g->nodes[i];
      if (n->dead) continue;
      XC_RETURN_IF_ERROR(simplify_node(g, n, &any));
    }
    if (!any) break;
    *changed = true;
  }
  return NULL;
}
