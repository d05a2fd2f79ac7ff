/* The reference interpreter: runs nodes in order with their reference
 * kernels, frees values after their last use, and checks every result
 * against the inferred type and shape. */
#include "xcomp/interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

void xc_interp_options_init(xc_interp_options_t* o) {
  memset(o, 0, sizeof *o);
  o->check_shapes = true;
}

xc_status_t xc_interp_eval_node(const xc_node_t* node, int num_inputs,
                                const xc_tensor_t* const* inputs,
                                xc_tensor_t** outputs) {
  char where[512];
  for (int i = 0; i < node->num_outputs; i++) outputs[i] = NULL;
  if (!node->op || !node->op->eval)
    return xc_error(XC_UNSUPPORTED, "%s: no reference kernel",
                    xc_node_describe(node, where, sizeof where));
  xc_eval_ctx_t ctx = {node, num_inputs, inputs, node->num_outputs, outputs};
  xc_status_t s = node->op->eval(&ctx);
  if (!s) {
    for (int i = 0; i < node->num_outputs; i++)
      if (node->outputs[i] && !outputs[i]) {
        s = xc_error(XC_INTERNAL, "%s: kernel did not produce output %d",
                     xc_node_describe(node, where, sizeof where), i);
        break;
      }
  }
  if (s) {
    for (int i = 0; i < node->num_outputs; i++) {
      xc_tensor_destroy(outputs[i]);
      outputs[i] = NULL;
    }
    if (strncmp(xc_status_message(s), "node '", 6) != 0)
      s = xc_status_annotate(s, "%s", xc_node_describe(node, where, sizeof where));
  }
  return s;
}

static xc_status_t check_against_type(const xc_value_t* v, const xc_tensor_t* t,
                                      xc_symbind_t* binds, const char* what) {
  char b1[256], b2[256];
  if (v->dtype != t->dtype || v->rank != t->rank)
    return xc_error(XC_INVALID_ARGUMENT, "%s '%s': got %s, expected %s", what, v->name,
                    xc_tensor_describe(t, b1, sizeof b1),
                    xc_value_describe(v, b2, sizeof b2));
  for (int d = 0; d < t->rank; d++) {
    xc_status_t s = xc_dim_unify(v->dims[d], t->dims[d], binds);
    if (s)
      return xc_status_annotate(s, "%s '%s' axis %d (got %s, expected %s)", what,
                                v->name, d, xc_tensor_describe(t, b1, sizeof b1),
                                xc_value_describe(v, b2, sizeof b2));
  }
  /* Element values that inference claimed to know must be the real ones. */
  if (v->elems) {
    if (v->num_elems != t->numel)
      return xc_error(XC_INVALID_ARGUMENT, "%s '%s': inference knew %lld elements, got %lld",
                      what, v->name, (long long)v->num_elems, (long long)t->numel);
    for (int64_t i = 0; i < t->numel; i++) {
      xc_status_t s = xc_dim_unify(v->elems[i], xc_tensor_get_i64(t, i), binds);
      if (s) return xc_status_annotate(s, "%s '%s' element %lld", what, v->name, (long long)i);
    }
  }
  return NULL;
}

xc_status_t xc_interp_run(const xc_graph_t* g, const xc_interp_options_t* opt,
                          int num_inputs, const xc_tensor_t* const* inputs,
                          xc_tensor_t** outputs) {
  xc_interp_options_t defaults;
  if (!opt) {
    xc_interp_options_init(&defaults);
    opt = &defaults;
  }
  for (int i = 0; i < g->num_outputs; i++) outputs[i] = NULL;
  if (num_inputs != g->num_inputs)
    return xc_error(XC_INVALID_ARGUMENT, "graph takes %d inputs, got %d",
                    g->num_inputs, num_inputs);
  int nv = g->num_values;
  /* vals[id]: current tensor (owned when owned[id]); uses[id]: remaining uses. */
  const xc_tensor_t** vals = calloc((size_t)nv + 1, sizeof *vals);
  unsigned char* owned = calloc((size_t)nv + 1, 1);
  int* uses = calloc((size_t)nv + 1, sizeof *uses);
  const xc_tensor_t** in_buf = NULL;
  xc_tensor_t** out_buf = NULL;
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  xc_status_t s = NULL;
  if (!vals || !owned || !uses) {
    s = xc_error_oom();
    goto done;
  }
  int max_in = 1, max_out = 1;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (n->num_inputs > max_in) max_in = n->num_inputs;
    if (n->num_outputs > max_out) max_out = n->num_outputs;
    for (int k = 0; k < n->num_inputs; k++)
      if (n->inputs[k]) uses[n->inputs[k]->id]++;
  }
  for (int i = 0; i < g->num_outputs; i++) uses[g->outputs[i]->id]++;
  in_buf = calloc((size_t)max_in, sizeof *in_buf);
  out_buf = calloc((size_t)max_out, sizeof *out_buf);
  if (!in_buf || !out_buf) {
    s = xc_error_oom();
    goto done;
  }
  for (int i = 0; i < g->num_inputs && !s; i++) {
    s = check_against_type(g->inputs[i], inputs[i], &binds, "input");
    vals[g->inputs[i]->id] = inputs[i];
  }
  for (int i = 0; i < g->num_initializers; i++)
    vals[g->initializers[i]->id] = g->initializers[i]->constant;
  for (int i = 0; i < g->num_nodes && !s; i++) {
    const xc_node_t* n = g->nodes[i];
    if (opt->trace) fprintf(stderr, "xcomp: interp: %s (%s)\n", n->name, n->op_type);
    for (int k = 0; k < n->num_inputs; k++) {
      in_buf[k] = n->inputs[k] ? vals[n->inputs[k]->id] : NULL;
      if (n->inputs[k] && !in_buf[k]) {
        s = xc_error(XC_INTERNAL, "node '%s': input '%s' has no value", n->name,
                     n->inputs[k]->name);
        break;
      }
    }
    if (s) break;
    s = xc_interp_eval_node(n, n->num_inputs, in_buf, out_buf);
    if (s) break;
    for (int k = 0; k < n->num_outputs; k++) {
      xc_value_t* v = n->outputs[k];
      if (!v) {
        xc_tensor_destroy(out_buf[k]);
        continue;
      }
      if (!s && opt->check_shapes) {
        s = check_against_type(v, out_buf[k], &binds, "output");
        if (s) {
          char where[512];
          s = xc_status_annotate(s, "%s: kernel result disagrees with shape inference",
                                 xc_node_describe(n, where, sizeof where));
        }
      }
      vals[v->id] = out_buf[k];
      owned[v->id] = 1;
      if (opt->on_value) opt->on_value(opt->on_value_ctx, v, out_buf[k]);
    }
    /* Release inputs whose last use this was. */
    for (int k = 0; k < n->num_inputs; k++) {
      xc_value_t* v = n->inputs[k];
      if (!v) continue;
      if (--uses[v->id] == 0 && owned[v->id]) {
        xc_tensor_destroy((xc_tensor_t*)vals[v->id]);
        vals[v->id] = NULL;
        owned[v->id] = 0;
      }
    }
    /* Values never used are dropped at once. */
    for (int k = 0; k < n->num_outputs; k++) {
      xc_value_t* v = n->outputs[k];
      if (v && uses[v->id] == 0 && owned[v->id]) {
        xc_tensor_destroy((xc_tensor_t*)vals[v->id]);
        vals[v->id] = NULL;
        owned[v->id] = 0;
      }
    }
  }
  for (int i = 0; i < g->num_outputs && !s; i++) {
    const xc_value_t* v = g->outputs[i];
    const xc_tensor_t* t = vals[v->id];
    if (!t) {
      s = xc_error(XC_INTERNAL, "graph output '%s' has no value", v->name);
      break;
    }
    /* Outputs are handed over as fresh tensors (an output may alias an input,
     * an initializer, or appear twice). */
    s = xc_tensor_clone(t, &outputs[i]);
  }
  if (s)
    for (int i = 0; i < g->num_outputs; i++) {
      xc_tensor_destroy(outputs[i]);
      outputs[i] = NULL;
    }
done:
  if (owned)
    for (int i = 0; i < nv; i++)
      if (owned[i]) xc_tensor_destroy((xc_tensor_t*)vals[i]);
  free(vals);
  free(owned);
  free(uses);
  free(in_buf);
  free(out_buf);
  xc_symbind_free(&binds);
  return s;
}
