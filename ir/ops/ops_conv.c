/* Op family 'conv': declarations, shape inference and reference kernels. */
#include "xcomp/op.h"

const xc_op_def_t xc_ops_conv[] = {
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
