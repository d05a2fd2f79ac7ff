/* Graph surgery for passes: rewiring uses, compaction, constants, provenance. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"

/* The name index lives in graph.c; rebuilding it goes through a fresh
 * insertion of every value, done here by recreating the graph's index. */
xc_status_t xc_graph_reindex_names_(xc_graph_t* g);

int xc_graph_count_uses(const xc_graph_t* g, const xc_value_t* v) {
  int n = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* nd = g->nodes[i];
    if (nd->dead) continue;
    for (int k = 0; k < nd->num_inputs; k++) n += nd->inputs[k] == v;
  }
  for (int i = 0; i < g->num_outputs; i++) n += g->outputs[i] == v;
  return n;
}

xc_status_t xc_graph_replace_uses(xc_graph_t* g, xc_value_t* old, xc_value_t* repl) {
  if (old == repl) return NULL;
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* nd = g->nodes[i];
    for (int k = 0; k < nd->num_inputs; k++)
      if (nd->inputs[k] == old) nd->inputs[k] = repl;
  }
  bool was_output = false;
  for (int i = 0; i < g->num_outputs; i++)
    if (g->outputs[i] == old) {
      g->outputs[i] = repl;
      was_output = true;
    }
  if (was_output) {
    old->flags &= ~(unsigned)XC_VALUE_OUTPUT;
    repl->flags |= XC_VALUE_OUTPUT;
    /* Keep the user-visible output name when the replacement is anonymous to
     * the user (an intermediate). Inputs and initializers keep their names. */
    if (!(repl->flags & (XC_VALUE_INPUT | XC_VALUE_INITIALIZER))) {
      int outs_using_repl = 0;
      for (int i = 0; i < g->num_outputs; i++) outs_using_repl += g->outputs[i] == repl;
      if (outs_using_repl == 1) {
        const char* t = repl->name;
        repl->name = old->name;
        old->name = t;
        XC_RETURN_IF_ERROR(xc_graph_reindex_names_(g));
      }
    }
  }
  return NULL;
}

xc_status_t xc_graph_compact(xc_graph_t* g) {
  int nv = g->num_values;
  unsigned char* live = calloc((size_t)nv + 1, 1);
  if (!live) return xc_error_oom();
  int kept = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* nd = g->nodes[i];
    if (nd->dead) {
      for (int k = 0; k < nd->num_outputs; k++)
        if (nd->outputs[k] && nd->outputs[k]->producer == nd) nd->outputs[k]->producer = NULL;
      continue;
    }
    nd->id = kept;
    g->nodes[kept++] = nd;
    for (int k = 0; k < nd->num_inputs; k++)
      if (nd->inputs[k]) live[nd->inputs[k]->id] = 1;
    for (int k = 0; k < nd->num_outputs; k++)
      if (nd->outputs[k]) live[nd->outputs[k]->id] = 1;
  }
  g->num_nodes = kept;
  for (int i = 0; i < g->num_inputs; i++) live[g->inputs[i]->id] = 1;
  for (int i = 0; i < g->num_outputs; i++) live[g->outputs[i]->id] = 1;
  /* Initializers nobody uses are dropped (their tensors stay owned by the
   * graph until it dies). */
  int ki = 0;
  for (int i = 0; i < g->num_initializers; i++)
    if (live[g->initializers[i]->id]) g->initializers[ki++] = g->initializers[i];
  g->num_initializers = ki;
  int kv = 0;
  for (int i = 0; i < nv; i++) {
    xc_value_t* v = g->values[i];
    if (!live[i]) continue;
    v->id = kv;
    g->values[kv++] = v;
  }
  g->num_values = kv;
  free(live);
  return xc_graph_reindex_names_(g);
}

xc_status_t xc_value_make_constant(xc_graph_t* g, xc_value_t* v, xc_tensor_t* t) {
  XC_RETURN_IF_ERROR(xc_graph_own_tensor(g, t));
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = xc_dim_const(t->dims[i]);
  XC_RETURN_IF_ERROR(xc_value_set_type(g, v, t->dtype, t->rank, dims));
  v->constant = t;
  v->producer = NULL;
  v->flags |= XC_VALUE_INITIALIZER;
  if (g->num_initializers == g->cap_initializers) {
    int cap = g->cap_initializers ? g->cap_initializers * 2 : 16;
    xc_value_t** n = realloc(g->initializers, sizeof(*n) * (size_t)cap);
    if (!n) return xc_error_oom();
    g->initializers = n;
    g->cap_initializers = cap;
  }
  g->initializers[g->num_initializers++] = v;
  return NULL;
}

xc_status_t xc_node_add_origin(xc_graph_t* g, xc_node_t* n, const char* origin) {
  if (!origin) return NULL;
  for (int i = 0; i < n->prov.num_origins; i++)
    if (strcmp(n->prov.origins[i], origin) == 0) return NULL;
  const char** o = xc_arena_alloc(g->arena, sizeof(char*) * (size_t)(n->prov.num_origins + 1));
  if (!o) return xc_error_oom();
  if (n->prov.num_origins)
    memcpy(o, n->prov.origins, sizeof(char*) * (size_t)n->prov.num_origins);
  o[n->prov.num_origins] = xc_arena_strdup(g->arena, origin);
  if (!o[n->prov.num_origins]) return xc_error_oom();
  n->prov.origins = o;
  n->prov.num_origins++;
  return NULL;
}

xc_status_t xc_node_inherit_provenance(xc_graph_t* g, xc_node_t* to, const xc_node_t* from) {
  /* A node that starts merging keeps its own source as its first origin. */
  if (to->prov.num_origins == 0) XC_RETURN_IF_ERROR(xc_node_add_origin(g, to, to->prov.source));
  if (from->prov.num_origins == 0) return xc_node_add_origin(g, to, from->prov.source);
  for (int i = 0; i < from->prov.num_origins; i++)
    XC_RETURN_IF_ERROR(xc_node_add_origin(g, to, from->prov.origins[i]));
  return NULL;
}
