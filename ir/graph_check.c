/* Whole-graph operations: op resolution, verification, topological sort and
 * the shape/type inference driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"
#include "xcomp/op.h"

xc_status_t xc_graph_resolve_ops(xc_graph_t* g) {
  char where[512];
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    n->op = xc_op_lookup(n->domain, n->op_type);
    if (!n->op)
      return xc_error(XC_UNSUPPORTED, "%s: unknown op '%s%s%s'",
                      xc_node_describe(n, where, sizeof where), n->domain,
                      *n->domain ? "." : "", n->op_type);
  }
  return NULL;
}

static xc_status_t verify_node(const xc_node_t* n) {
  const xc_op_def_t* op = n->op;
  char where[512];
  xc_node_describe(n, where, sizeof where);
  if (!op) return xc_error(XC_UNSUPPORTED, "%s: unknown op", where);
  if (n->num_inputs < op->min_inputs ||
      (op->max_inputs >= 0 && n->num_inputs > op->max_inputs)) {
    if (op->max_inputs < 0)
      return xc_error(XC_INVALID_ARGUMENT, "%s: takes at least %d inputs, got %d",
                      where, op->min_inputs, n->num_inputs);
    return xc_error(XC_INVALID_ARGUMENT, "%s: takes %d to %d inputs, got %d", where,
                    op->min_inputs, op->max_inputs, n->num_inputs);
  }
  if (n->num_outputs < op->min_outputs ||
      (op->max_outputs >= 0 && n->num_outputs > op->max_outputs))
    return xc_error(XC_INVALID_ARGUMENT, "%s: has %d to %d outputs, got %d", where,
                    op->min_outputs, op->max_outputs, n->num_outputs);
  for (int i = 0; i < op->min_inputs && i < n->num_inputs; i++)
    if (!n->inputs[i] && !(op->max_inputs < 0))
      return xc_error(XC_INVALID_ARGUMENT, "%s: required input %d is missing", where, i);
  for (int i = 0; i < n->num_attrs; i++) {
    const xc_attr_t* a = &n->attrs[i];
    const xc_attr_def_t* d = xc_op_find_attr_def(op, a->name);
    if (!d)
      return xc_error(XC_UNSUPPORTED, "%s: unknown attribute '%s'", where, a->name);
    bool ok = d->kind == a->kind ||
              (d->kind == XC_ATTR_FLOAT && a->kind == XC_ATTR_INT);
    if (!ok)
      return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' must be %s, got %s",
                      where, a->name, xc_attr_kind_name(d->kind),
                      xc_attr_kind_name(a->kind));
  }
  if (op->attrs)
    for (const xc_attr_def_t* d = op->attrs; d->name; d++)
      if (d->required && !xc_node_find_attr(n, d->name))
        return xc_error(XC_INVALID_ARGUMENT, "%s: missing required attribute '%s'",
                        where, d->name);
  return NULL;
}

xc_status_t xc_graph_verify(const xc_graph_t* g) {
  char where[512];
  /* defined[value id]: 1 once available (input, initializer, or produced). */
  unsigned char* defined = calloc((size_t)g->num_values + 1, 1);
  if (!defined) return xc_error_oom();
  xc_status_t s = NULL;
  for (int i = 0; i < g->num_values && !s; i++) {
    xc_value_t* v = g->values[i];
    if (v->id != i) s = xc_error(XC_INTERNAL, "value '%s' has a stale id", v->name);
  }
  for (int i = 0; i < g->num_inputs && !s; i++) {
    xc_value_t* v = g->inputs[i];
    if (v->producer || v->constant)
      s = xc_error(XC_INVALID_ARGUMENT, "graph input '%s' is also produced or constant",
                   v->name);
    else if (v->rank < 0 || v->dtype == XC_DTYPE_UNDEFINED)
      s = xc_error(XC_INVALID_ARGUMENT, "graph input '%s' has no type", v->name);
    else if (defined[v->id])
      s = xc_error(XC_INVALID_ARGUMENT, "graph input '%s' is listed twice", v->name);
    else
      defined[v->id] = 1;
  }
  for (int i = 0; i < g->num_initializers && !s; i++) {
    xc_value_t* v = g->initializers[i];
    const xc_tensor_t* t = v->constant;
    if (!t) {
      s = xc_error(XC_INVALID_ARGUMENT, "initializer '%s' has no data", v->name);
      break;
    }
    bool match = t->dtype == v->dtype && t->rank == v->rank;
    for (int d = 0; match && d < t->rank; d++)
      match = !v->dims[d].sym && v->dims[d].value == t->dims[d];
    if (!match)
      s = xc_error(XC_INVALID_ARGUMENT, "initializer '%s': data does not match its type",
                   v->name);
    else if (v->producer)
      s = xc_error(XC_INVALID_ARGUMENT, "initializer '%s' is also produced by a node",
                   v->name);
    defined[v->id] = 1;
  }
  for (int i = 0; i < g->num_nodes && !s; i++) {
    const xc_node_t* n = g->nodes[i];
    s = verify_node(n);
    if (s) break;
    for (int k = 0; k < n->num_inputs; k++) {
      xc_value_t* v = n->inputs[k];
      if (!v) continue;
      if (!defined[v->id]) {
        s = xc_error(XC_INVALID_ARGUMENT,
                     "%s: input '%s' is used before it is defined (or in a cycle)",
                     xc_node_describe(n, where, sizeof where), v->name);
        break;
      }
    }
    for (int k = 0; k < n->num_outputs && !s; k++) {
      xc_value_t* v = n->outputs[k];
      if (!v) continue;
      if (v->producer != n || defined[v->id])
        s = xc_error(XC_INVALID_ARGUMENT, "%s: output '%s' is defined more than once",
                     xc_node_describe(n, where, sizeof where), v->name);
      defined[v->id] = 1;
    }
  }
  for (int i = 0; i < g->num_outputs && !s; i++)
    if (!defined[g->outputs[i]->id])
      s = xc_error(XC_INVALID_ARGUMENT, "graph output '%s' is never defined",
                   g->outputs[i]->name);
  free(defined);
  return s;
}

xc_status_t xc_graph_toposort(xc_graph_t* g) {
  int n = g->num_nodes;
  if (n == 0) return NULL;
  /* Kahn's algorithm over node indices with a min-heap of ready nodes, so the
   * original order is kept wherever dependencies allow (stable). Consumers
   * of each value are found through a CSR table built once: O((V+E) log V). */
  int nv = g->num_values;
  int* pending = calloc((size_t)n, sizeof(int));
  int* first = calloc((size_t)nv + 2, sizeof(int));
  int total = 0;
  for (int i = 0; i < n; i++) {
    g->nodes[i]->id = i;
    total += g->nodes[i]->num_inputs;
  }
  int* consumers = malloc(sizeof(int) * (size_t)(total + 1));
  int* fill = calloc((size_t)nv + 1, sizeof(int));
  int* heap = malloc(sizeof(int) * (size_t)n);
  xc_node_t** order = malloc(sizeof(xc_node_t*) * (size_t)n);
  xc_status_t s = NULL;
  if (!pending || !first || !consumers || !fill || !heap || !order) {
    s = xc_error_oom();
    goto done;
  }
  for (int i = 0; i < n; i++) {
    xc_node_t* nd = g->nodes[i];
    for (int k = 0; k < nd->num_inputs; k++) {
      xc_value_t* v = nd->inputs[k];
      if (v && v->producer) {
        pending[i]++;
        first[v->id + 1]++;
      }
    }
  }
  for (int v = 0; v < nv; v++) first[v + 1] += first[v];
  for (int i = 0; i < n; i++) {
    xc_node_t* nd = g->nodes[i];
    for (int k = 0; k < nd->num_inputs; k++) {
      xc_value_t* v = nd->inputs[k];
      if (v && v->producer) consumers[first[v->id] + fill[v->id]++] = i;
    }
  }
  int hn = 0, emitted = 0;
#define HEAP_PUSH(x)                                                   \
  do {                                                                 \
    int c_ = hn++;                                                     \
    heap[c_] = (x);                                                    \
    while (c_ > 0 && heap[(c_ - 1) / 2] > heap[c_]) {                  \
      int t_ = heap[c_]; heap[c_] = heap[(c_ - 1) / 2]; heap[(c_ - 1) / 2] = t_; \
      c_ = (c_ - 1) / 2;                                               \
    }                                                                  \
  } while (0)
  for (int i = 0; i < n; i++)
    if (!pending[i]) HEAP_PUSH(i);
  while (hn > 0) {
    int top = heap[0];
    heap[0] = heap[--hn];
    for (int c = 0;;) {
      int l = 2 * c + 1, r = l + 1, m = c;
      if (l < hn && heap[l] < heap[m]) m = l;
      if (r < hn && heap[r] < heap[m]) m = r;
      if (m == c) break;
      int t = heap[c]; heap[c] = heap[m]; heap[m] = t;
      c = m;
    }
    xc_node_t* nd = g->nodes[top];
    order[emitted++] = nd;
    for (int o = 0; o < nd->num_outputs; o++) {
      xc_value_t* v = nd->outputs[o];
      if (!v) continue;
      for (int j = first[v->id]; j < first[v->id + 1]; j++)
        if (--pending[consumers[j]] == 0) HEAP_PUSH(consumers[j]);
    }
  }
#undef HEAP_PUSH
  if (emitted < n) {
    char where[512];
    for (int i = 0; i < n; i++)
      if (pending[i]) {
        s = xc_error(XC_INVALID_ARGUMENT, "graph has a cycle through %s",
                     xc_node_describe(g->nodes[i], where, sizeof where));
        break;
      }
  } else {
    for (int i = 0; i < n; i++) {
      g->nodes[i] = order[i];
      order[i]->id = i;
    }
  }
done:
  free(pending); free(first); free(consumers); free(fill); free(heap); free(order);
  return s;
}

xc_status_t xc_graph_infer(xc_graph_t* g) {
  char where[512];
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    if (!n->op) {
      n->op = xc_op_lookup(n->domain, n->op_type);
      if (!n->op)
        return xc_error(XC_UNSUPPORTED, "%s: unknown op",
                        xc_node_describe(n, where, sizeof where));
    }
    for (int k = 0; k < n->num_inputs; k++) {
      xc_value_t* v = n->inputs[k];
      if (v && v->rank < 0)
        return xc_error(XC_INVALID_ARGUMENT, "%s: input '%s' has no known type",
                        xc_node_describe(n, where, sizeof where), v->name);
    }
    if (!n->op->infer)
      return xc_error(XC_UNSUPPORTED, "%s: op has no shape inference",
                      xc_node_describe(n, where, sizeof where));
    xc_status_t s = n->op->infer(g, n);
    if (!s) s = xc_graph_take_error(g);
    if (s) {
      /* Messages from xc_node_error already name the node. */
      if (strncmp(xc_status_message(s), "node '", 6) != 0)
        s = xc_status_annotate(s, "%s", xc_node_describe(n, where, sizeof where));
      return s;
    }
    for (int k = 0; k < n->num_outputs; k++) {
      xc_value_t* v = n->outputs[k];
      if (v && (v->rank < 0 || v->dtype == XC_DTYPE_UNDEFINED))
        return xc_error(XC_INTERNAL, "%s: inference left output %d untyped",
                        xc_node_describe(n, where, sizeof where), k);
    }
  }
  return NULL;
}

/* One "NAME=DIMS" of a shape spec (spec[0..len)). */
static xc_status_t set_one_shape(xc_graph_t* g, const char* spec, size_t len) {
  const char* eq = memchr(spec, '=', len);
  if (!eq || eq == spec || eq + 1 == spec + len)
    return xc_error(XC_INVALID_ARGUMENT, "shape '%.*s': expected NAME=DIMS (e.g. input_ids=1x64)", (int)len, spec);
  size_t name_len = (size_t)(eq - spec);
  xc_value_t* in = NULL;
  for (int i = 0; i < g->num_inputs; i++)
    if (strlen(g->inputs[i]->name) == name_len && memcmp(g->inputs[i]->name, spec, name_len) == 0) in = g->inputs[i];
  if (!in) {
    char names[512] = "";
    for (int i = 0; i < g->num_inputs; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", g->inputs[i]->name);
    return xc_error(XC_INVALID_ARGUMENT, "shape '%.*s': the graph has no input '%.*s' (its inputs: %s)", (int)len,
                    spec, (int)name_len, spec, names);
  }
  xc_dim_t dims[XC_MAX_RANK];
  int rank = 0;
  const char* p = eq + 1;
  const char* end = spec + len;
  while (p < end) {
    char* stop = NULL;
    long long v = strtoll(p, &stop, 10);
    if (stop == p || stop > end || v < 0 || rank == XC_MAX_RANK || (stop < end && *stop != 'x' && *stop != ','))
      return xc_error(XC_INVALID_ARGUMENT, "shape '%.*s': DIMS must be sizes separated by 'x' or ','", (int)len, spec);
    dims[rank].sym = NULL;
    dims[rank++].value = v;
    p = stop < end ? stop + 1 : stop;
  }
  if (rank != in->rank) {
    char b[128];
    return xc_error(XC_INVALID_ARGUMENT, "shape '%.*s': input '%s' has rank %d (%s)", (int)len, spec, in->name,
                    in->rank, xc_value_describe(in, b, sizeof b));
  }
  return xc_value_set_type(g, in, in->dtype, rank, dims);
}

/* Everything computed from the inputs inferred again. */
static xc_status_t reinfer(xc_graph_t* g) {
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    for (int k = 0; k < n->num_outputs; k++) {
      xc_value_t* v = n->outputs[k];
      if (!v || v->constant) continue;
      v->dtype = XC_DTYPE_UNDEFINED;
      v->rank = -1;
      v->dims = NULL;
      v->num_elems = 0;
      v->elems = NULL;
    }
  }
  return xc_graph_infer(g);
}

xc_status_t xc_graph_set_input_shapes(xc_graph_t* g, const char* spec) {
  if (!spec || !*spec) return NULL;
  for (const char* p = spec; *p;) {
    const char* semi = strchr(p, ';');
    size_t len = semi ? (size_t)(semi - p) : strlen(p);
    if (len) XC_RETURN_IF_ERROR(set_one_shape(g, p, len));
    p += len + (semi ? 1 : 0);
  }
  xc_status_t s = reinfer(g);
  if (s) s = xc_status_annotate(s, "with the input shapes %s (a model exported with fixed sizes takes other sizes only "
                                   "where its shape constants allow: re-export it with dynamic axes)", spec);
  return s;
}

static bool uses_symbol(const xc_symexpr_t* e, const char* name) {
  if (!e) return false;
  if (e->kind == XC_SYM_VAR) return strcmp(e->name, name) == 0;
  return uses_symbol(e->a, name) || uses_symbol(e->b, name);
}

bool xc_graph_has_symbol(const xc_graph_t* g, const char* name) {
  for (int i = 0; i < g->num_inputs; i++)
    for (int d = 0; d < g->inputs[i]->rank; d++)
      if (uses_symbol(g->inputs[i]->dims[d].sym, name)) return true;
  return false;
}

xc_status_t xc_graph_bind_symbol(xc_graph_t* g, const char* name, int64_t value) {
  if (!xc_graph_has_symbol(g, name))
    return xc_error(XC_INVALID_ARGUMENT, "no input of the graph has a dim '%s'", name);
  xc_symbind_t b;
  xc_symbind_init(&b);
  xc_status_t s = xc_symbind_set(&b, name, value);
  for (int i = 0; i < g->num_inputs && !s; i++) {
    xc_value_t* in = g->inputs[i];
    xc_dim_t dims[XC_MAX_RANK];
    bool changed = false;
    for (int d = 0; d < in->rank; d++) {
      dims[d] = in->dims[d];
      if (!uses_symbol(in->dims[d].sym, name)) continue;
      int64_t v = 0;
      /* a dim that also uses other symbols stays as it is */
      xc_status_t e = xc_dim_eval(in->dims[d], &b, &v);
      if (e) {
        xc_status_free(e);
        continue;
      }
      dims[d] = xc_dim_const(v);
      changed = true;
    }
    if (changed) s = xc_value_set_type(g, in, in->dtype, in->rank, dims);
  }
  xc_symbind_free(&b);
  if (!s) s = reinfer(g);
  if (s) s = xc_status_annotate(s, "with %s = %lld", name, (long long)value);
  return s;
}
