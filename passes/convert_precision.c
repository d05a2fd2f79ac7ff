/* convert-precision: runs a float32 model in f16 or bf16. Every float32
 * tensor becomes the target dtype: graph inputs, initializers (data rounded
 * to nearest even), constant tensors held in attributes (Constant,
 * ConstantOfShape), Cast/EyeLike targets of float32; then inference
 * re-types every computed value (and so the outputs) from them. Inputs that
 * ops require in float32 whatever the data type (Resize's roi and scales)
 * stay float32. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/passes.h"

static bool keep_f32_input(const xc_node_t* n, int k) {
  return !strcmp(n->op_type, "Resize") && (k == 1 || k == 2);
}

/* f32 bits to bf16, rounding to nearest even (NaN through the general
 * conversion, which keeps it a quiet NaN). */
static uint16_t f32_to_bf16(uint32_t u, float f) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return xc_f64_to_bf16((double)f);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* A new tensor holding t's values in dt (graph-owned). Weights are most
 * of a model's bytes (GPT-2 124M: 124M floats), so f32 sources take a
 * direct loop: f32 -> f64 is exact, so rounding the f64 is rounding the f32. */
static xc_status_t convert_tensor(const xc_tensor_t* t, xc_dtype_t dt, xc_tensor_t** out) {
  XC_RETURN_IF_ERROR(xc_tensor_create(dt, t->rank, t->dims, out));
  if (t->dtype == XC_F32 && (dt == XC_BF16 || dt == XC_F16) && t->numel) {
    const float* src = t->data;
    uint16_t* dst = (*out)->data;
    if (dt == XC_BF16) {
      for (int64_t i = 0; i < t->numel; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        dst[i] = f32_to_bf16(u, src[i]);
      }
    } else {
      for (int64_t i = 0; i < t->numel; i++) dst[i] = xc_f64_to_f16((double)src[i]);
    }
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(*out, i, xc_tensor_get_f64(t, i));
  return NULL;
}

xc_status_t xc_convert_precision(xc_graph_t* g, xc_dtype_t dt, bool* changed) {
  bool dummy;
  if (!changed) changed = &dummy;
  *changed = false;
  if (dt == XC_DTYPE_UNDEFINED || dt == XC_F32) return NULL;
  if (dt != XC_F16 && dt != XC_BF16 && dt != XC_F64)
    return xc_error(XC_INVALID_ARGUMENT, "convert-precision: %s is not a float dtype (f16, bf16, f64)",
                    xc_dtype_name(dt));
  /* Initializers that some consumer needs in f32 stay f32. */
  bool* keep = calloc((size_t)g->num_values + 1, sizeof *keep);
  if (!keep) return xc_error_oom();
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    for (int k = 0; k < n->num_inputs; k++)
      if (n->inputs[k] && keep_f32_input(n, k)) keep[n->inputs[k]->id] = true;
  }
  xc_status_t s = NULL;
  for (int i = 0; !s && i < g->num_inputs; i++) {
    xc_value_t* v = g->inputs[i];
    if (v->dtype == XC_F32 && !keep[v->id]) {
      v->dtype = dt;
      *changed = true;
    }
  }
  for (int i = 0; !s && i < g->num_initializers; i++) {
    xc_value_t* v = g->initializers[i];
    if (v->dtype != XC_F32 || !v->constant || keep[v->id]) continue;
    xc_tensor_t* t = NULL;
    s = convert_tensor(v->constant, dt, &t);
    if (!s) s = xc_graph_own_tensor(g, t);
    if (!s) {
      v->constant = t;
      v->dtype = dt;
      *changed = true;
    }
  }
  int32_t onnx_f32 = xc_dtype_to_onnx(XC_F32), onnx_dt = xc_dtype_to_onnx(dt);
  for (int i = 0; !s && i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    for (int a = 0; !s && a < n->num_attrs; a++) {
      xc_attr_t* at = &n->attrs[a];
      if (at->kind == XC_ATTR_TENSOR && at->t && at->t->dtype == XC_F32) {
        xc_tensor_t* t = NULL;
        s = convert_tensor(at->t, dt, &t);
        if (!s) s = xc_node_set_tensor(g, n, at->name, t);
        *changed = true;
      } else if (at->kind == XC_ATTR_INT && at->i == onnx_f32 &&
                 ((!strcmp(n->op_type, "Cast") && !strcmp(at->name, "to")) ||
                  (!strcmp(n->op_type, "EyeLike") && !strcmp(at->name, "dtype")))) {
        at->i = onnx_dt;
        *changed = true;
      }
    }
  }
  free(keep);
  if (s) return s;
  /* Re-type every computed value from the converted inputs. */
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    for (int k = 0; k < n->num_outputs; k++)
      if (n->outputs[k] && n->outputs[k]->dtype == XC_F32) n->outputs[k]->dtype = XC_DTYPE_UNDEFINED;
  }
  if (*changed) XC_RETURN_IF_ERROR(xc_graph_infer(g));
  return NULL;
}

xc_status_t xc_pass_convert_precision(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  return xc_convert_precision(g, o->precision, changed);
}
