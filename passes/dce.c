/* Dead-code elimination: nodes none of whose outputs reach a graph output. */
#include <stdlib.h>

#include "xcomp/passes.h"

xc_status_t xc_pass_dce(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  unsigned char* needed = calloc((size_t)g->num_values + 1, 1);
  if (!needed) return xc_error_oom();
  for (int i = 0; i < g->num_outputs; i++) needed[g->outputs[i]->id] = 1;
  /* Nodes are in topological order: walk backwards. */
  for (int i = g->num_nodes - 1; i >= 0; i--) {
    xc_node_t* n = g->nodes[i];
    if (n->dead) continue;
    bool live = false;
    for (int k = 0; k < n->num_outputs; k++)
      if (n->outputs[k] && needed[n->outputs[k]->id]) live = true;
    if (!live) {
      n->dead = true;
      *changed = true;
      continue;
    }
    for (int k = 0; k < n->num_inputs; k++)
      if (n->inputs[k]) needed[n->inputs[k]->id] = 1;
  }
  free(needed);
  return NULL;
}
