/* Older ONNX op versions rewritten into the latest form (opset 23), which is
 * the only form the op registry defines.
 *
 *  - attributes that later versions take as inputs become constant
 *    initializers wired to that input: axes of Squeeze/Unsqueeze/ReduceSum
 *    (< 13) and the other Reduce* (< 18), Split's split (< 13), TopK's k,
 *    Slice's starts/ends/axes, Pad's pads/value, Clip's min/max (< 11), DFT's
 *    axis (< 20), Reshape's shape (Reshape-1);
 *  - Split without a split input gets num_outputs = its output count (18);
 *  - Softmax/LogSoftmax/Hardmax < 13 coerce the input to 2-D at `axis`
 *    (default 1): unless that axis is provably the last one, the node becomes
 *    Shape + Flatten + op(axis=1) + Reshape;
 *  - Dropout loses ratio/is_test, BatchNormalization loses spatial,
 *    consumed_inputs and is_test (inference needs none of them);
 *  - Resize: empty constant roi/scales inputs become omitted inputs (Resize-11
 *    required them); its tf_half_pixel_for_nn mode (dropped in 13) is refused;
 *  - Scatter (deprecated alias) becomes ScatterElements;
 *  - GroupNormalization < 21 (per-group scale) is refused: its scale and bias
 *    cannot be widened to per-channel without knowing the channel count. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"
#include "xcomp/op.h"

typedef enum attr_as {
  AS_INTS,        /* i64 1-D */
  AS_INT_1,       /* i64 [1] */
  AS_INT_SCALAR,  /* i64 scalar */
  AS_FLOAT_LIKE_X /* scalar of input 0's dtype */
} attr_as_t;

typedef struct attr_rule {
  const char* op;
  const char* attr;
  int input;
  attr_as_t as;
} attr_rule_t;

static const attr_rule_t attr_rules[] = {
    {"Squeeze", "axes", 1, AS_INTS},
    {"Unsqueeze", "axes", 1, AS_INTS},
    {"ReduceSum", "axes", 1, AS_INTS},
    {"ReduceMean", "axes", 1, AS_INTS},
    {"ReduceMax", "axes", 1, AS_INTS},
    {"ReduceMin", "axes", 1, AS_INTS},
    {"ReduceProd", "axes", 1, AS_INTS},
    {"ReduceL1", "axes", 1, AS_INTS},
    {"ReduceL2", "axes", 1, AS_INTS},
    {"ReduceLogSum", "axes", 1, AS_INTS},
    {"ReduceLogSumExp", "axes", 1, AS_INTS},
    {"ReduceSumSquare", "axes", 1, AS_INTS},
    {"Split", "split", 1, AS_INTS},
    {"Slice", "starts", 1, AS_INTS},
    {"Slice", "ends", 2, AS_INTS},
    {"Slice", "axes", 3, AS_INTS},
    {"Pad", "pads", 1, AS_INTS},
    {"Pad", "value", 2, AS_FLOAT_LIKE_X},
    {"Clip", "min", 1, AS_FLOAT_LIKE_X},
    {"Clip", "max", 2, AS_FLOAT_LIKE_X},
    {"TopK", "k", 1, AS_INT_1},
    {"DFT", "axis", 2, AS_INT_SCALAR},
    {"Reshape", "shape", 1, AS_INTS},
};

static xc_status_t attr_to_input(xc_onnx_importer_t* im, xc_node_t* n, const attr_rule_t* r) {
  const xc_attr_t* a = xc_node_find_attr(n, r->attr);
  if (!a) return NULL;
  char where[512];
  xc_node_describe(n, where, sizeof where);
  xc_tensor_t* t = NULL;
  switch (r->as) {
    case AS_INTS: {
      if (a->kind != XC_ATTR_INTS)
        return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' must be ints", where, r->attr);
      int64_t d[1] = {a->n};
      XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, d, &t));
      for (int64_t i = 0; i < a->n; i++) ((int64_t*)t->data)[i] = a->ints[i];
      break;
    }
    case AS_INT_1:
    case AS_INT_SCALAR: {
      if (a->kind != XC_ATTR_INT)
        return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' must be an int", where, r->attr);
      int64_t d[1] = {1};
      XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, r->as == AS_INT_1 ? 1 : 0, d, &t));
      ((int64_t*)t->data)[0] = a->i;
      break;
    }
    case AS_FLOAT_LIKE_X: {
      if (a->kind != XC_ATTR_FLOAT && a->kind != XC_ATTR_INT)
        return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' must be a float", where, r->attr);
      xc_dtype_t dt = n->num_inputs ? xc_onnx_hint_dtype(im, n->inputs[0]) : XC_DTYPE_UNDEFINED;
      if (dt == XC_DTYPE_UNDEFINED) dt = XC_F32;
      XC_RETURN_IF_ERROR(xc_tensor_create(dt, 0, NULL, &t));
      xc_tensor_set_f64(t, 0, a->kind == XC_ATTR_FLOAT ? a->f : (double)a->i);
      break;
    }
  }
  xc_value_t* v;
  XC_RETURN_IF_ERROR(xc_onnx_add_constant(im, n->name, r->attr, t, &v));
  XC_RETURN_IF_ERROR(xc_onnx_node_set_input(im->g, n, r->input, v));
  xc_onnx_node_remove_attr(n, r->attr);
  return NULL;
}

/* Adds a helper node made by a rewrite; provenance stays the source node's. */
static xc_status_t add_helper(xc_onnx_importer_t* im, const xc_node_t* src, const char* op,
                              const char* suffix, int nin, xc_value_t* const* ins,
                              xc_value_t* out, xc_node_t** made) {
  const char* name = xc_arena_printf(im->g->arena, "%s/%s", src->name, suffix);
  if (!name) return xc_error_oom();
  XC_RETURN_IF_ERROR(xc_graph_add_node(im->g, op, "", name, nin, ins, 1, &out, made));
  xc_onnx_node_set_prov(im, *made, src->prov.source);
  return NULL;
}

/* opset < 13: y = reshape(op(flatten(x, axis), axis=1), shape(x)). */
static xc_status_t upgrade_coerced_softmax(xc_onnx_importer_t* im, xc_node_t* n) {
  char where[512];
  xc_node_describe(n, where, sizeof where);
  const xc_attr_t* a = xc_node_find_attr(n, "axis");
  if (a && a->kind != XC_ATTR_INT)
    return xc_error(XC_INVALID_ARGUMENT, "%s: attribute 'axis' must be an int", where);
  int64_t axis = a ? a->i : 1;
  if (n->num_inputs < 1 || !n->inputs[0] || n->num_outputs < 1 || !n->outputs[0])
    return NULL; /* the verifier reports the arity */
  xc_value_t* x = n->inputs[0];
  int rank = xc_onnx_hint_rank(im, x);
  if (axis == -1 || (rank >= 1 && axis == rank - 1)) {
    /* Coercion to 2-D at the last axis changes nothing. */
    return xc_node_set_int(im->g, n, "axis", -1);
  }
  if (rank >= 0 && (axis < -rank || axis > rank))
    return xc_error(XC_INVALID_ARGUMENT, "%s: axis %lld out of range for rank %d", where,
                    (long long)axis, rank);
  xc_graph_t* g = im->g;
  xc_value_t* y = n->outputs[0];
  const char* base = y->name;
  xc_value_t *shape, *flat, *y2;
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, xc_onnx_unique_name(im, base, "__shape"),
                                        XC_DTYPE_UNDEFINED, -1, NULL, &shape));
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, xc_onnx_unique_name(im, base, "__2d"),
                                        XC_DTYPE_UNDEFINED, -1, NULL, &flat));
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, xc_onnx_unique_name(im, base, "__2d_out"),
                                        XC_DTYPE_UNDEFINED, -1, NULL, &y2));
  xc_node_t* h;
  XC_RETURN_IF_ERROR(add_helper(im, n, "Shape", "shape", 1, &x, shape, &h));
  XC_RETURN_IF_ERROR(add_helper(im, n, "Flatten", "flatten", 1, &x, flat, &h));
  XC_RETURN_IF_ERROR(xc_node_set_int(g, h, "axis", axis));
  n->inputs[0] = flat;
  y->producer = NULL;
  n->outputs[0] = y2;
  y2->producer = n;
  y2->producer_output = 0;
  XC_RETURN_IF_ERROR(xc_node_set_int(g, n, "axis", 1));
  xc_value_t* rin[2] = {y2, shape};
  return add_helper(im, n, "Reshape", "reshape", 2, rin, y, &h);
}

static bool is_empty_constant(const xc_value_t* v) {
  const xc_tensor_t* t = xc_onnx_known_tensor(v);
  return t && t->numel == 0;
}

xc_status_t xc_onnx_upgrade_node(xc_onnx_importer_t* im, xc_node_t* n) {
  const char* op = n->op_type;
  char where[512];
  for (size_t i = 0; i < sizeof attr_rules / sizeof attr_rules[0]; i++)
    if (strcmp(attr_rules[i].op, op) == 0)
      XC_RETURN_IF_ERROR(attr_to_input(im, n, &attr_rules[i]));

  if (strcmp(op, "Split") == 0) {
    bool has_split = n->num_inputs > 1 && n->inputs[1];
    if (!has_split && !xc_node_find_attr(n, "num_outputs"))
      XC_RETURN_IF_ERROR(xc_node_set_int(im->g, n, "num_outputs", n->num_outputs));
  } else if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0 ||
             strcmp(op, "Hardmax") == 0) {
    if (im->opset < 13) XC_RETURN_IF_ERROR(upgrade_coerced_softmax(im, n));
  } else if (strcmp(op, "Dropout") == 0) {
    xc_onnx_node_remove_attr(n, "ratio");
    xc_onnx_node_remove_attr(n, "is_test");
  } else if (strcmp(op, "BatchNormalization") == 0) {
    xc_onnx_node_remove_attr(n, "spatial");
    xc_onnx_node_remove_attr(n, "consumed_inputs");
    xc_onnx_node_remove_attr(n, "is_test");
  } else if (strcmp(op, "Resize") == 0) {
    const xc_attr_t* ctm = xc_node_find_attr(n, "coordinate_transformation_mode");
    if (ctm && ctm->kind == XC_ATTR_STRING && strcmp(ctm->s, "tf_half_pixel_for_nn") == 0)
      return xc_error(XC_UNSUPPORTED,
                      "%s: coordinate_transformation_mode 'tf_half_pixel_for_nn' (Resize-11) "
                      "has no equivalent in later opsets and is not supported",
                      xc_node_describe(n, where, sizeof where));
    if (n->num_inputs > 1 && is_empty_constant(n->inputs[1])) n->inputs[1] = NULL;
    if (n->num_inputs > 2 && is_empty_constant(n->inputs[2])) n->inputs[2] = NULL;
    if (n->num_inputs > 3 && is_empty_constant(n->inputs[3])) n->inputs[3] = NULL;
    while (n->num_inputs > 1 && !n->inputs[n->num_inputs - 1]) n->num_inputs--;
  } else if (strcmp(op, "Scatter") == 0) {
    n->op_type = "ScatterElements";
  } else if (strcmp(op, "GroupNormalization") == 0 && im->opset < 21) {
    return xc_error(XC_UNSUPPORTED,
                    "%s: GroupNormalization before opset 21 (per-group scale and bias) is "
                    "not supported; export with opset 21 or later",
                    xc_node_describe(n, where, sizeof where));
  }
  return NULL;
}
