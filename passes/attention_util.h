/* Helpers shared by the attention and rotary-embedding rewrites
 * (attention.c, attention_mask.c, rotary.c): node and constant matching,
 * evaluation of small constant subgraphs, and inserting new nodes. Internal
 * to passes/. */
#ifndef XCOMP_PASSES_ATTENTION_UTIL_H
#define XCOMP_PASSES_ATTENTION_UTIL_H

#include "xcomp/graph.h"
#include "xcomp/op.h"

/* Magnitude from which a finite additive mask value is taken as "masked":
 * exp(x + mask - max) underflows to 0 for any score |x| far below it. */
#define XC_ATTN_MASKED_BELOW (-1e30)

/* The live producer of v when it is the default-domain op `op`, else NULL. */
xc_node_t* xc_attn_producer(const xc_value_t* v, const char* op);
/* True when n is the live default-domain op `op`. */
bool xc_attn_is_op(const xc_node_t* n, const char* op);
/* Exactly one node input uses v and it is no graph output. */
bool xc_attn_single_use(const xc_graph_t* g, const xc_value_t* v);
/* v is a constant float tensor of one element; its value in *out. */
bool xc_attn_const_scalar(const xc_value_t* v, double* out);
/* v is constant and every element equals x. */
bool xc_attn_const_all(const xc_value_t* v, double x);
/* Same dtype and (structurally) same dims. */
bool xc_attn_same_type(const xc_value_t* a, const xc_value_t* b);
/* The static size of dim d, or -1 when symbolic. */
int64_t xc_attn_static_dim(xc_dim_t d);

/* Evaluates v when it is a constant or computed from constants only (at
 * most `depth` nodes deep, small tensors) with the reference kernels.
 * On success *out is the tensor and *owned tells whether the caller must
 * destroy it. Returns false when v is not constant. */
bool xc_attn_eval_const(const xc_value_t* v, int depth, xc_tensor_t** out, bool* owned);

/* Adds a node with one new output value named after `base` (made unique),
 * typed dtype/rank/dims, and resolves its op. Nodes are appended; the
 * caller re-sorts the graph. */
xc_status_t xc_attn_add_node(xc_graph_t* g, const char* op, const char* base, int num_inputs,
                             xc_value_t* const* inputs, xc_dtype_t dtype, int rank,
                             const xc_dim_t* dims, xc_node_t** out_node);

#endif
