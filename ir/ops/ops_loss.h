/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ops_loss.c),
 * listed in the 'norm' family table (ops_norm.c). Internal to ir/ops. */
#ifndef XCOMP_IR_OPS_LOSS_H
#define XCOMP_IR_OPS_LOSS_H

#include "xcomp/op.h"

extern const xc_attr_def_t xc_loss_attrs[];
xc_status_t xc_loss_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_loss_eval(xc_eval_ctx_t* ctx);

#endif
