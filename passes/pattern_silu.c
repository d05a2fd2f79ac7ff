/* Pattern passes: SiLU and SwiGLU.
 *   x * Sigmoid(x)       (either order)  -> xcomp.Silu(x)
 *   Silu(a) * b          (either order)  -> xcomp.SwiGLU(a, b)
 * The Sigmoid (resp. Silu) result must have no other use, and a, b and the
 * product must share dtype and shape (no broadcasting). SwiGLU runs after
 * SiLU so it sees the Silu nodes made there. */
#include <string.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

static xc_status_t try_silu(xc_graph_t* g, xc_node_t* mul, bool* changed) {
  if (mul->num_inputs != 2 || mul->num_outputs != 1) return NULL;
  for (int k = 0; k < 2; k++) {
    xc_value_t *x = mul->inputs[k], *s = mul->inputs[1 - k];
    xc_node_t* sig = xc_pat_producer(s, "Sigmoid");
    if (!sig || sig->inputs[0] != x || !xc_pat_has_uses(g, s, 1) || !xc_pat_is_float(x) ||
        !xc_pat_same_type(mul->outputs[0], x))
      continue;
    xc_pat_match_t m = {0};
    xc_pat_match_add(&m, sig);
    xc_node_t* n;
    XC_RETURN_IF_ERROR(xc_pat_replace(g, mul, &m, "Silu", "xcomp", 1, &x, &n));
    *changed = true;
    return NULL;
  }
  return NULL;
}

static xc_status_t try_swiglu(xc_graph_t* g, xc_node_t* mul, bool* changed) {
  if (mul->num_inputs != 2 || mul->num_outputs != 1) return NULL;
  for (int k = 0; k < 2; k++) {
    xc_value_t *s = mul->inputs[k], *b = mul->inputs[1 - k];
    xc_node_t* silu = s && xc_pat_is_op_in(s->producer, "xcomp", "Silu") ? s->producer : NULL;
    if (!silu || !xc_pat_has_uses(g, s, 1)) continue;
    xc_value_t* a = silu->inputs[0];
    if (!xc_pat_is_float(a) || !xc_pat_same_type(a, b) || !xc_pat_same_type(mul->outputs[0], a))
      continue;
    xc_pat_match_t m = {0};
    xc_pat_match_add(&m, silu);
    xc_value_t* ins[2] = {a, b};
    xc_node_t* n;
    XC_RETURN_IF_ERROR(xc_pat_replace(g, mul, &m, "SwiGLU", "xcomp", 2, ins, &n));
    *changed = true;
    return NULL;
  }
  return NULL;
}

static xc_status_t run_muls(xc_graph_t* g, xc_status_t (*fn)(xc_graph_t*, xc_node_t*, bool*),
                            bool* changed) {
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++)
    if (xc_pat_is_op(g->nodes[i], "Mul")) XC_RETURN_IF_ERROR(fn(g, g->nodes[i], &any));
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}

xc_status_t xc_pass_pattern_silu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  return run_muls(g, try_silu, changed);
}

xc_status_t xc_pass_pattern_swiglu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  return run_muls(g, try_swiglu, changed);
}
