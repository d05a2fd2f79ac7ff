/* GridSample, AffineGrid and RoiAlign (ops_sample.c), listed in the 'conv' family
 * table (ops_conv.c). Internal to ir/ops. */
#ifndef XCOMP_IR_OPS_SAMPLE_H
#define XCOMP_IR_OPS_SAMPLE_H

#include "xcomp/op.h"

extern const xc_attr_def_t xc_grid_sample_attrs[];
xc_status_t xc_grid_sample_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_grid_sample_eval(xc_eval_ctx_t* ctx);

extern const xc_attr_def_t xc_affine_grid_attrs[];
xc_status_t xc_affine_grid_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_affine_grid_eval(xc_eval_ctx_t* ctx);

extern const xc_attr_def_t xc_roi_align_attrs[];
xc_status_t xc_roi_align_infer(xc_graph_t* g, xc_node_t* n);
xc_status_t xc_roi_align_eval(xc_eval_ctx_t* ctx);

#endif
