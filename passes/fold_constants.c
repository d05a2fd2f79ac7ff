/* Constant folding: a node whose inputs are all constant is evaluated with
 * the reference interpreter and its outputs become initializers — unless the
 * result would grow the model (size limit), so folding never bloats it.
 * Layout changes of constants (a weight transposed or cast for the kernel
 * that reads it) fold up to a much larger limit: they would otherwise run
 * at every run. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

/* Results may exceed their inputs by this much (small shape tensors, ranges). */
#define FOLD_SLACK_BYTES 4096

/* Whether inference knows every element of v as a static number (Shape or
 * Size of a static shape, and what shape arithmetic derives from them). */
static bool elems_static(const xc_value_t* v) {
  if (!v->elems || v->rank < 0 || v->rank > 1 || !xc_dtype_is_int(v->dtype)) return false;
  if (v->rank == 1 && (v->dims[0].sym || v->dims[0].value != v->num_elems)) return false;
  if (v->rank == 0 && v->num_elems != 1) return false;
  for (int64_t i = 0; i < v->num_elems; i++)
    if (!xc_dim_is_static(v->elems[i])) return false;
  return true;
}

/* A node whose every output has statically known elements becomes those
 * constants, whatever its inputs (Shape of an activation with static dims). */
static xc_status_t fold_known_elems(xc_graph_t* g, xc_node_t* n, bool* folded) {
  *folded = false;
  if (n->num_outputs < 1) return NULL;
  for (int k = 0; k < n->num_outputs; k++)
    if (n->outputs[k] && !elems_static(n->outputs[k])) return NULL;
  for (int k = 0; k < n->num_outputs; k++) {
    xc_value_t* v = n->outputs[k];
    if (!v) continue;
    int64_t len = v->num_elems;
    xc_tensor_t* t = NULL;
    XC_RETURN_IF_ERROR(xc_tensor_create(v->dtype, v->rank, &len, &t));
    for (int64_t i = 0; i < len; i++) xc_tensor_set_i64(t, i, v->elems[i].value);
    XC_RETURN_IF_ERROR(xc_value_make_constant(g, v, t));
  }
  n->dead = true;
  *folded = true;
  return NULL;
}

static bool is_layout_change(const xc_node_t* n) {
  static const char* const ops[] = {"Transpose", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  if (n->domain[0] != 0) return false;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (strcmp(n->op_type, ops[i]) == 0) return true;
  return false;
}

xc_status_t xc_pass_fold_constants(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  const xc_tensor_t* ins[64];
  xc_tensor_t* outs[16];
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    if (n->dead || n->num_inputs > 64 || n->num_outputs > 16 || !n->op || !n->op->eval) continue;
    bool all_const = true;
    int64_t in_bytes = 0;
    for (int k = 0; k < n->num_inputs; k++) {
      const xc_value_t* v = n->inputs[k];
      ins[k] = v ? v->constant : NULL;
      if (v && !v->constant) all_const = false;
      if (v && v->constant) in_bytes += (int64_t)xc_tensor_nbytes(v->constant);
    }
    if (!all_const) {
      bool folded = false;
      XC_RETURN_IF_ERROR(fold_known_elems(g, n, &folded));
      if (folded) *changed = true;
      continue;
    }
    /* Predict output size from the (static) inferred shapes before running. */
    int64_t out_bytes = 0;
    bool known = true;
    for (int k = 0; k < n->num_outputs; k++) {
      const xc_value_t* v = n->outputs[k];
      if (!v) continue;
      int64_t numel = 1;
      for (int d = 0; d < v->rank; d++) {
        if (v->dims[d].sym || !xc_mul_i64(numel, v->dims[d].value, &numel)) known = false;
      }
      int64_t b;
      if (!known || !xc_mul_i64(numel, (int64_t)xc_dtype_size(v->dtype), &b)) {
        known = false;
        break;
      }
      out_bytes += b;
    }
    if (!known || out_bytes > (is_layout_change(n) ? o->fold_layout_limit_bytes : o->fold_limit_bytes)) continue;
    /* Constant nodes merely move their attribute into an initializer. */
    bool is_constant_op = n->num_inputs == 0;
    if (!is_constant_op && out_bytes > in_bytes + FOLD_SLACK_BYTES) continue;
    xc_status_t s = xc_interp_eval_node(n, n->num_inputs, ins, outs);
    if (s) {
      /* A node that fails on its constant inputs fails at run time too;
       * leave it for the runtime to report with full context. */
      xc_status_free(s);
      continue;
    }
    n->dead = true;
    *changed = true;
    for (int k = 0; k < n->num_outputs; k++) {
      if (!n->outputs[k]) {
        xc_tensor_destroy(outs[k]);
        continue;
      }
      s = xc_value_make_constant(g, n->outputs[k], outs[k]);
      outs[k] = NULL;
      if (s) {
        for (int j = k + 1; j < n->num_outputs; j++) xc_tensor_destroy(outs[j]);
        return s;
      }
    }
  }
  return NULL;
}
