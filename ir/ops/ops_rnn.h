/* RNN, GRU and LSTM (ops_rnn.c), listed in the 'linalg' family table
 * (ops_linalg.c). Internal to ir/ops. */
#ifndef XCOMP_IR_OPS_RNN_H
#define XCOMP_IR_OPS_RNN_H

#include "xcomp/op.h"

extern const xc_attr_def_t xc_rnn_attrs[];
extern const xc_attr_def_t xc_gru_attrs[];
extern const xc_attr_def_t xc_lstm_attrs[];
xc_status_t xc_rnn_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_rnn_eval(xc_eval_ctx_t* ctx);

#endif
