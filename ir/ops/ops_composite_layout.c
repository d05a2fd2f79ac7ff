/* Channels-last composites of the compiler (domain "xcomp"), made by the
 * layout pass: ConvNHWC, MaxPoolNHWC, AveragePoolNHWC.
 *
 * Each takes X as [N, spatial..., C] and produces [N, spatial'..., M]; the
 * convolution weight is [M, k..., C/group] (output channels first, input
 * channels last; weight_layout "OHWI", the default) or [k..., C/group, M]
 * (output channels last: weight_layout "HWIO", what the layout pass makes, so
 * that a kernel reads the weights of consecutive output channels from
 * consecutive addresses). Other attributes and the semantics are those of the
 * ONNX op of the same name without the suffix. Inference and kernels permute
 * to channels first, use the ONNX op's inference/kernel, and permute the
 * result back, so they agree with the ONNX ops by construction. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

static const xc_attr_def_t conv_nhwc_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_I("group", 1),
    XC_ATTR_OPT("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_S("weight_layout", "OHWI"),
    XC_ATTR_END,
};

static const xc_attr_def_t maxpool_nhwc_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),        XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS), XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),      XC_ATTR_I("storage_order", 0),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),   XC_ATTR_END,
};

static const xc_attr_def_t avgpool_nhwc_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),           XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_I("count_include_pad", 0),         XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS), XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),      XC_ATTR_END,
};

/* The ONNX op a composite wraps. */
static const xc_op_def_t* base_op(const xc_node_t* n) {
  size_t len = strlen(n->op_type);
  char name[32];
  if (len <= 4 || len - 4 >= sizeof name) return NULL;
  memcpy(name, n->op_type, len - 4);
  name[len - 4] = 0;
  return xc_op_lookup("", name);
}

/* perm taking channels-last to channels-first: [0, r-1, 1, ..., r-2]. */
static void to_first_perm(int rank, int* perm) {
  perm[0] = 0;
  if (rank > 1) perm[1] = rank - 1;
  for (int i = 2; i < rank; i++) perm[i] = i - 1;
}

/* The perm taking input k of node n to channels-first (out.dims[i] =
 * in.dims[perm[i]]); for an HWIO weight [k..., C, M] -> [M, C, k...].
 * False for an unknown weight_layout. */
static bool input_perm(const xc_node_t* n, int k, int rank, int* perm) {
  const char* wl = k == 1 ? xc_node_attr_string(n, "weight_layout") : NULL;
  if (!wl || !strcmp(wl, "OHWI")) {
    to_first_perm(rank, perm);
    return true;
  }
  if (strcmp(wl, "HWIO") || rank < 3) return false;
  perm[0] = rank - 1;
  perm[1] = rank - 2;
  for (int i = 2; i < rank; i++) perm[i] = i - 2;
  return true;
}

static xc_status_t layout_infer(xc_graph_t* g, xc_node_t* n) {
  const xc_op_def_t* base = base_op(n);
  if (!base) return xc_node_error(n, XC_INTERNAL, "no channels-first op for %s", n->op_type);
  int num_perm = strcmp(n->op_type, "ConvNHWC") == 0 ? 2 : 1;
  int check[XC_MAX_RANK];
  if (num_perm == 2 && !input_perm(n, 1, 3, check))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "weight_layout '%s' is neither OHWI nor HWIO",
                         xc_node_attr_string(n, "weight_layout"));
  xc_value_t tmp_in[2], tmp_out;
  xc_dim_t dims_in[2][XC_MAX_RANK];
  xc_value_t* saved_in[2] = {NULL, NULL};
  /* checked before any input is swapped for its channels-first copy below */
  for (int k = 0; k < num_perm && k < n->num_inputs; k++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, k, XC_DT_ALL));
    if (n->inputs[k]->rank < 3)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d needs rank >= 3 (N, spatial..., C)", k);
  }
  for (int k = 0; k < num_perm && k < n->num_inputs; k++) {
    const xc_value_t* v = n->inputs[k];
    int perm[XC_MAX_RANK];
    input_perm(n, k, v->rank, perm); /* checked above */
    for (int i = 0; i < v->rank; i++) dims_in[k][i] = v->dims[perm[i]];
    tmp_in[k] = *v;
    tmp_in[k].dims = dims_in[k];
    saved_in[k] = n->inputs[k];
    n->inputs[k] = &tmp_in[k];
  }
  xc_value_t* out = n->outputs[0];
  tmp_out = *out;
  n->outputs[0] = &tmp_out;
  xc_status_t s = base->infer(g, n);
  n->outputs[0] = out;
  for (int k = 0; k < num_perm && k < n->num_inputs; k++) n->inputs[k] = saved_in[k];
  if (s) return s;
  /* channels-first result -> channels-last */
  int r = tmp_out.rank;
  xc_dim_t od[XC_MAX_RANK];
  od[0] = tmp_out.dims[0];
  for (int i = 1; i + 1 < r; i++) od[i] = tmp_out.dims[i + 1];
  if (r > 1) od[r - 1] = tmp_out.dims[1];
  return xc_value_set_type(g, out, tmp_out.dtype, r, od);
}

/* out = in permuted: out.dims[i] = in.dims[perm[i]]. */
static xc_status_t permute(const xc_tensor_t* in, const int* perm, xc_tensor_t** out) {
  int r = in->rank;
  int64_t od[XC_MAX_RANK], is[XC_MAX_RANK], idx[XC_MAX_RANK];
  for (int i = 0; i < r; i++) od[i] = in->dims[perm[i]];
  XC_RETURN_IF_ERROR(xc_tensor_create(in->dtype, r, od, out));
  if ((*out)->numel == 0) return NULL;
  xc_strides(r, in->dims, is);
  size_t es = xc_dtype_size(in->dtype);
  memset(idx, 0, sizeof idx);
  int64_t o = 0;
  do {
    int64_t src = 0;
    for (int i = 0; i < r; i++) src += idx[i] * is[perm[i]];
    memcpy((char*)(*out)->data + (size_t)o * es, (const char*)in->data + (size_t)src * es, es);
    o++;
  } while (xc_index_next(r, od, idx));
  return NULL;
}

static xc_status_t layout_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_op_def_t* base = base_op(n);
  if (!base) return xc_node_error(n, XC_INTERNAL, "no channels-first op for %s", n->op_type);
  int num_perm = strcmp(n->op_type, "ConvNHWC") == 0 ? 2 : 1;
  const xc_tensor_t* ins[3] = {NULL, NULL, NULL};
  xc_tensor_t* owned[2] = {NULL, NULL};
  if (ctx->num_inputs > 3) return xc_node_error(n, XC_INVALID_ARGUMENT, "too many inputs");
  xc_status_t s = NULL;
  for (int k = 0; k < ctx->num_inputs; k++) ins[k] = ctx->inputs[k];
  for (int k = 0; k < num_perm && k < ctx->num_inputs && !s; k++) {
    if (!ins[k] || ins[k]->rank < 3) {
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "input %d needs rank >= 3 (N, spatial..., C)", k);
      break;
    }
    int perm[XC_MAX_RANK];
    if (!input_perm(n, k, ins[k]->rank, perm)) {
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "weight_layout '%s' is neither OHWI nor HWIO",
                        xc_node_attr_string(n, "weight_layout"));
      break;
    }
    s = permute(ins[k], perm, &owned[k]);
    ins[k] = owned[k];
  }
  xc_tensor_t* first_out[1] = {NULL};
  if (!s) {
    xc_eval_ctx_t sub = *ctx;
    sub.inputs = ins;
    sub.num_outputs = 1;
    sub.outputs = first_out;
    s = base->eval(&sub);
  }
  if (!s && first_out[0]) {
    int r = first_out[0]->rank, perm[XC_MAX_RANK];
    perm[0] = 0;
    for (int i = 1; i + 1 < r; i++) perm[i] = i + 1;
    if (r > 1) perm[r - 1] = 1;
    s = permute(first_out[0], perm, &ctx->outputs[0]);
  }
  xc_tensor_destroy(first_out[0]);
  xc_tensor_destroy(owned[0]);
  xc_tensor_destroy(owned[1]);
  return s;
}

const xc_op_def_t xc_ops_composite_layout[] = {
    {"ConvNHWC", "xcomp", 2, 3, 1, 1, conv_nhwc_attrs, XC_DT_FLOAT, layout_infer, layout_eval,
     "Conv on channels-last data: X [N, spatial..., C], W [M, k..., C/group] (weight_layout OHWI) or "
     "[k..., C/group, M] (HWIO), Y [N, spatial..., M]"},
    {"MaxPoolNHWC", "xcomp", 1, 1, 1, 1, maxpool_nhwc_attrs, XC_DT_FLOAT | XC_DT(XC_I8) | XC_DT(XC_U8),
     layout_infer, layout_eval, "MaxPool on channels-last data [N, spatial..., C] (no Indices)"},
    {"AveragePoolNHWC", "xcomp", 1, 1, 1, 1, avgpool_nhwc_attrs, XC_DT_FLOAT, layout_infer,
     layout_eval, "AveragePool on channels-last data [N, spatial..., C]"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
