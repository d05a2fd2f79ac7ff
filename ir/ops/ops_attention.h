/* Attention and RotaryEmbedding (ops_attention.c), listed in the 'norm'
 * family table (ops_norm.c). Internal to ir/ops. */
#ifndef XCOMP_IR_OPS_ATTENTION_H
#define XCOMP_IR_OPS_ATTENTION_H

#include "xcomp/op.h"

extern const xc_attr_def_t xc_attention_attrs[];
xc_status_t xc_attention_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_attention_eval(xc_eval_ctx_t* ctx);

extern const xc_attr_def_t xc_rotary_attrs[];
xc_status_t xc_rotary_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_rotary_eval(xc_eval_ctx_t* ctx);

#endif
