/* Common-subexpression elimination: a node equal to an earlier one (same op,
 * same inputs, same attributes) is replaced by it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"
#include "xcomp/passes.h"

static bool tensors_equal(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b) return a == b;
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  size_t n = xc_tensor_nbytes(a);
  return n == 0 || memcmp(a->data, b->data, n) == 0;
}

static bool attrs_equal(const xc_attr_t* a, const xc_attr_t* b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case XC_ATTR_INT: return a->i == b->i;
    /* Bitwise so that NaN attributes compare equal to themselves. */
    case XC_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case XC_ATTR_STRING: return strcmp(a->s, b->s) == 0;
    case XC_ATTR_TENSOR: return tensors_equal(a->t, b->t);
    case XC_ATTR_INTS:
      return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0);
    case XC_ATTR_FLOATS:
      return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, sizeof(double) * (size_t)a->n) == 0);
    case XC_ATTR_STRINGS:
      if (a->n != b->n) return false;
      for (int64_t i = 0; i < a->n; i++)
        if (strcmp(a->strings[i], b->strings[i]) != 0) return false;
      return true;
    case XC_ATTR_TENSORS:
      if (a->n != b->n) return false;
      for (int64_t i = 0; i < a->n; i++)
        if (!tensors_equal(a->tensors[i], b->tensors[i])) return false;
      return true;
    default: return false;
  }
}

static bool nodes_equal(const xc_node_t* a, const xc_node_t* b) {
  if (strcmp(a->op_type, b->op_type) != 0 || strcmp(a->domain, b->domain) != 0) return false;
  if (a->num_inputs != b->num_inputs || a->num_outputs != b->num_outputs) return false;
  if (a->num_attrs != b->num_attrs) return false;
  for (int i = 0; i < a->num_inputs; i++)
    if (a->inputs[i] != b->inputs[i]) return false;
  for (int i = 0; i < a->num_outputs; i++)
    if ((a->outputs[i] == NULL) != (b->outputs[i] == NULL)) return false;
  for (int i = 0; i < a->num_attrs; i++) {
    const xc_attr_t* other = xc_node_find_attr(b, a->attrs[i].name);
    if (!other || !attrs_equal(&a->attrs[i], other)) return false;
  }
  return true;
}

static uint64_t node_hash(const xc_node_t* n) {
  uint64_t h = 1469598103934665603ull;
  for (const char* p = n->op_type; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (int i = 0; i < n->num_inputs; i++)
    h = (h ^ (uint64_t)(n->inputs[i] ? n->inputs[i]->id + 1 : 0)) * 1099511628211ull;
  return h;
}

xc_status_t xc_pass_cse(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  size_t cap = 16;
  while (cap < (size_t)g->num_nodes * 2) cap *= 2;
  xc_node_t** table = calloc(cap, sizeof *table);
  if (!table) return xc_error_oom();
  xc_status_t s = NULL;
  for (int i = 0; i < g->num_nodes && !s; i++) {
    xc_node_t* n = g->nodes[i];
    if (n->dead || n->num_outputs == 0) continue;
    size_t j = node_hash(n) & (cap - 1);
    xc_node_t* same = NULL;
    for (; table[j]; j = (j + 1) & (cap - 1))
      if (nodes_equal(table[j], n)) {
        same = table[j];
        break;
      }
    if (!same) {
      table[j] = n;
      continue;
    }
    for (int k = 0; k < n->num_outputs && !s; k++)
      if (n->outputs[k]) s = xc_graph_replace_uses(g, n->outputs[k], same->outputs[k]);
    if (!s) s = xc_node_inherit_provenance(g, same, n);
    n->dead = true;
    *changed = true;
  }
  free(table);
  return s;
}
