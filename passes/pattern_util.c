/* Matching helpers shared by the pattern-recognition passes. */
#include "pattern_util.h"

#include <math.h>
#include <string.h>

#include "xcomp/op.h"

bool xc_pat_is_op_in(const xc_node_t* n, const char* domain, const char* op) {
  return n && !n->dead && strcmp(n->domain ? n->domain : "", domain) == 0 &&
         strcmp(n->op_type, op) == 0;
}

bool xc_pat_is_op(const xc_node_t* n, const char* op) { return xc_pat_is_op_in(n, "", op); }

xc_node_t* xc_pat_producer(const xc_value_t* v, const char* op) {
  return v && xc_pat_is_op(v->producer, op) ? v->producer : NULL;
}

int xc_pat_uses(const xc_graph_t* g, const xc_value_t* v) { return xc_graph_count_uses(g, v); }

bool xc_pat_has_uses(const xc_graph_t* g, const xc_value_t* v, int n) {
  if (!v || (v->flags & XC_VALUE_OUTPUT)) return false;
  for (int i = 0; i < g->num_outputs; i++)
    if (g->outputs[i] == v) return false;
  return xc_graph_count_uses(g, v) == n;
}

xc_node_t* xc_pat_single_consumer(const xc_graph_t* g, const xc_value_t* v) {
  if (!xc_pat_has_uses(g, v, 1)) return NULL;
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    if (n->dead) continue;
    for (int k = 0; k < n->num_inputs; k++)
      if (n->inputs[k] == v) return n;
  }
  return NULL;
}

bool xc_pat_near_tol(double a, double b, double extra_tol) {
  return isfinite(a) && fabs(a - b) <= (XC_PAT_REL_TOL + extra_tol) * fabs(b);
}

bool xc_pat_near(double a, double b) { return xc_pat_near_tol(a, b, 0.0); }

double xc_pat_dtype_tol(xc_dtype_t t) {
  /* Half a unit in the last place, relative: a constant rounded into a
   * narrow dtype still matches. */
  switch (t) {
    case XC_F16: return ldexp(1.0, -11);
    case XC_BF16: return ldexp(1.0, -8);
    case XC_F32: return ldexp(1.0, -24);
    default: return 0.0;
  }
}

/* The data of a constant value: an initializer, or the result of a live
 * Constant node (when constant folding has not run). */
static const xc_tensor_t* const_tensor(const xc_value_t* v) {
  if (!v) return NULL;
  if (v->constant) return v->constant;
  const xc_node_t* p = v->producer;
  if (!xc_pat_is_op(p, "Constant") || p->num_outputs != 1) return NULL;
  const xc_attr_t* a = xc_node_find_attr(p, "value");
  return a && a->kind == XC_ATTR_TENSOR ? a->t : NULL;
}

bool xc_pat_scalar_const_tol(const xc_value_t* v, double* out, double* tol) {
  const xc_tensor_t* t = const_tensor(v);
  if (!t || t->numel != 1 || !xc_dtype_is_float(t->dtype)) return false;
  *out = xc_tensor_get_f64(t, 0);
  if (tol) *tol = xc_pat_dtype_tol(t->dtype);
  return true;
}

bool xc_pat_scalar_const(const xc_value_t* v, double* out) {
  return xc_pat_scalar_const_tol(v, out, NULL);
}

bool xc_pat_scalar_near(const xc_value_t* v, double expected) {
  double c, tol;
  return xc_pat_scalar_const_tol(v, &c, &tol) && xc_pat_near_tol(c, expected, tol);
}

bool xc_pat_is_float(const xc_value_t* v) {
  return v && v->rank >= 0 &&
         (v->dtype == XC_F32 || v->dtype == XC_F64 || v->dtype == XC_F16 || v->dtype == XC_BF16);
}

bool xc_pat_same_type(const xc_value_t* a, const xc_value_t* b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->rank < 0) return false;
  for (int i = 0; i < a->rank; i++)
    if (!xc_dim_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

bool xc_pat_reduce_axes(const xc_graph_t* g, const xc_node_t* n, int rank, int64_t* axes,
                        int* count) {
  (void)g;
  if (rank < 1 || xc_node_attr_int(n, "keepdims") == 0) return false;
  const xc_value_t* a = n->num_inputs > 1 ? n->inputs[1] : NULL;
  const xc_tensor_t* t = const_tensor(a);
  if (!a) {
    if (xc_node_attr_int(n, "noop_with_empty_axes")) return false;
    for (int i = 0; i < rank; i++) axes[i] = i;
    *count = rank;
    return true;
  }
  if (!t || t->numel < 1 || t->numel > rank || xc_dtype_is_float(t->dtype)) return false;
  int c = (int)t->numel;
  for (int i = 0; i < c; i++) {
    int64_t v = xc_tensor_get_i64(t, i);
    if (v < -rank || v >= rank) return false;
    axes[i] = v < 0 ? v + rank : v;
  }
  for (int i = 1; i < c; i++)
    for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
      int64_t swap = axes[j];
      axes[j] = axes[j - 1];
      axes[j - 1] = swap;
    }
  for (int i = 1; i < c; i++)
    if (axes[i] == axes[i - 1]) return false;
  *count = c;
  return true;
}

/* Adds operand v of the product: scalar constants multiply the scale,
 * single-use Mul/Div results expand, anything else is a leaf. */
static bool flatten_operand(const xc_graph_t* g, xc_value_t* v, xc_pat_product_t* p, int depth);

static bool flatten_node(const xc_graph_t* g, xc_node_t* n, xc_pat_product_t* p, int depth) {
  if (depth > 8 || n->num_inputs != 2 || !n->inputs[0] || !n->inputs[1]) return false;
  if (p->num_nodes >= XC_PAT_MAX_LEAVES * 2) return false;
  p->nodes[p->num_nodes++] = n;
  if (xc_pat_is_op(n, "Mul"))
    return flatten_operand(g, n->inputs[0], p, depth + 1) &&
           flatten_operand(g, n->inputs[1], p, depth + 1);
  if (xc_pat_is_op(n, "Div")) {
    double c;
    double tol;
    if (!xc_pat_scalar_const_tol(n->inputs[1], &c, &tol) || c == 0 || !isfinite(c)) return false;
    p->scale /= c;
    p->tol += tol;
    return flatten_operand(g, n->inputs[0], p, depth + 1);
  }
  return false;
}

static bool flatten_operand(const xc_graph_t* g, xc_value_t* v, xc_pat_product_t* p, int depth) {
  double c, tol;
  if (xc_pat_scalar_const_tol(v, &c, &tol)) {
    p->scale *= c;
    p->tol += tol;
    return true;
  }
  xc_node_t* q = v->producer;
  if ((xc_pat_is_op(q, "Mul") || xc_pat_is_op(q, "Div")) && q->num_outputs == 1 &&
      xc_pat_has_uses(g, v, 1) && xc_pat_is_float(v)) {
    /* Div by a non-constant is not a product term: keep it as a leaf. */
    if (xc_pat_is_op(q, "Mul") || xc_pat_scalar_const(q->inputs[1], &c))
      return flatten_node(g, q, p, depth);
  }
  if (p->num_leaves >= XC_PAT_MAX_LEAVES) return false;
  p->leaves[p->num_leaves++] = v;
  return true;
}

bool xc_pat_flatten_product(const xc_graph_t* g, xc_node_t* root, xc_pat_product_t* out) {
  memset(out, 0, sizeof *out);
  out->scale = 1.0;
  if (!xc_pat_is_op(root, "Mul") && !xc_pat_is_op(root, "Div")) return false;
  return flatten_node(g, root, out, 0);
}

bool xc_pat_match_add(xc_pat_match_t* m, xc_node_t* n) {
  for (int i = 0; i < m->count; i++)
    if (m->nodes[i] == n) return true;
  if (m->count >= XC_PAT_MAX_MATCHED) return false;
  m->nodes[m->count++] = n;
  return true;
}

bool xc_pat_match_add_product(xc_pat_match_t* m, const xc_pat_product_t* p) {
  for (int i = 0; i < p->num_nodes; i++)
    if (!xc_pat_match_add(m, p->nodes[i])) return false;
  return true;
}

const char* xc_pat_fresh_name(xc_graph_t* g, const char* prefix) {
  for (;;) {
    const char* name = xc_arena_printf(g->arena, "%s_%d", prefix, g->fresh_counter++);
    if (!name || !xc_graph_find_value(g, name)) return name;
  }
}

xc_status_t xc_pat_replace(xc_graph_t* g, xc_node_t* root, const xc_pat_match_t* m,
                           const char* op_type, const char* domain, int num_inputs,
                           xc_value_t* const* inputs, xc_node_t** out_node) {
  *out_node = NULL;
  xc_value_t* old = root->outputs[0];
  const char* name = xc_pat_fresh_name(g, old->name);
  if (!name) return xc_error_oom();
  xc_value_t* v;
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, name, old->dtype, old->rank, old->dims, &v));
  xc_node_t* n;
  XC_RETURN_IF_ERROR(
      xc_graph_add_node(g, op_type, domain, root->name, num_inputs, inputs, 1, &v, &n));
  n->op = xc_op_lookup(domain, op_type);
  if (!n->op) return xc_error(XC_INTERNAL, "pattern rewrite to unknown op '%s'", op_type);
  n->prov.source = root->prov.source;
  n->prov.file = root->prov.file;
  n->prov.line = root->prov.line;
  n->prov.col = root->prov.col;
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, root));
  root->dead = true;
  for (int i = 0; i < m->count; i++) {
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, m->nodes[i]));
    m->nodes[i]->dead = true;
  }
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, old, v));
  *out_node = n;
  return NULL;
}

xc_status_t xc_pat_finish(xc_graph_t* g, bool changed) {
  if (!changed) return NULL;
  XC_RETURN_IF_ERROR(xc_graph_compact(g));
  return xc_graph_toposort(g);
}
