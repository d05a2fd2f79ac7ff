/* xcomp reference interpreter: runs a graph with the reference kernels of the
 * op registry. It is the executable definition of what a graph computes and
 * the oracle every target is compared against.
 *
 * While running, it checks every output of every node against the shape the
 * inference predicted (binding symbols from the graph inputs), so inference
 * and kernels keep each other honest. */
#ifndef XCOMP_INTERP_H
#define XCOMP_INTERP_H

#include "xcomp/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_interp_options {
  bool check_shapes; /* compare outputs with inferred shapes (default true) */
  bool trace;        /* print each node as it runs to stderr */
  /* Called with every node output as it is computed (borrowed: clone what
   * you keep), so callers can see intermediate values; NULL: none. */
  void (*on_value)(void* ctx, const xc_value_t* v, const xc_tensor_t* t);
  void* on_value_ctx;
} xc_interp_options_t;

void xc_interp_options_init(xc_interp_options_t* o);

/* Runs g, which must be verified and inferred (xc_graph_infer). inputs[i]
 * binds g->inputs[i] (dtype and rank must match; symbolic dims are bound).
 * On success outputs[i] (caller-provided array of g->num_outputs) receives a
 * new tensor owned by the caller. On failure no output is left allocated. */
xc_status_t xc_interp_run(const xc_graph_t* g, const xc_interp_options_t* opt,
                          int num_inputs, const xc_tensor_t* const* inputs,
                          xc_tensor_t** outputs);

/* Runs a single node on concrete inputs (used by constant folding and
 * tests). outputs has node->num_outputs slots. */
xc_status_t xc_interp_eval_node(const xc_node_t* node, int num_inputs,
                                const xc_tensor_t* const* inputs,
                                xc_tensor_t** outputs);

#ifdef __cplusplus
}
#endif
#endif
