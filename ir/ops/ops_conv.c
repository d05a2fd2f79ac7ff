/* Op family 'conv': Conv, ConvTranspose and the pooling ops (MaxPool,
 * AveragePool, LpPool and their Global forms), N-D over the spatial dims.
 *
 * Window geometry (kernel, strides, dilations, pads, auto_pad, ceil_mode) is
 * read once into window_t, then used twice: with symbolic arithmetic for
 * shape inference and with concrete sizes by the kernels. Both follow the
 * ONNX formulas, so the interpreter's check of kernel results against
 * inference compares two independent evaluations of one definition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

/* Attribute values above this are rejected, which keeps every size
 * computation below far away from int64 overflow. */
#define WINDOW_ATTR_MAX (INT64_C(1) << 32)

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

typedef struct {
  int nsp;                          /* number of spatial dims */
  bool have_kernel;                 /* kernel_shape given */
  int64_t kernel[XC_MAX_RANK];
  int64_t stride[XC_MAX_RANK];
  int64_t dil[XC_MAX_RANK];
  int64_t pads[2 * XC_MAX_RANK];    /* begins, then ends */
  int auto_pad;
  bool ceil_mode;
} window_t;

static xc_status_t read_ints(const xc_node_t* n, const char* name, int count, int64_t dflt,
                             int64_t lo, int64_t* out) {
  int64_t k;
  const int64_t* v = xc_node_attr_ints(n, name, &k);
  if (!v) {
    for (int i = 0; i < count; i++) out[i] = dflt;
    return NULL;
  }
  if (k != count)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s' has %lld values, expected %d", name,
                         (long long)k, count);
  for (int i = 0; i < count; i++) {
    if (v[i] < lo || v[i] > WINDOW_ATTR_MAX)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s'[%d] = %lld is out of range", name, i,
                           (long long)v[i]);
    out[i] = v[i];
  }
  return NULL;
}

static bool node_has_attr_def(const xc_node_t* n, const char* name) {
  return n->op && xc_op_find_attr_def(n->op, name) != NULL;
}

/* Reads the window attributes for nsp spatial dims. */
static xc_status_t read_window(const xc_node_t* n, int nsp, window_t* w) {
  memset(w, 0, sizeof *w);
  if (nsp < 1 || nsp > XC_MAX_RANK - 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 3 (N, C, spatial dims)");
  w->nsp = nsp;
  int64_t k;
  w->have_kernel = xc_node_attr_ints(n, "kernel_shape", &k) != NULL;
  if (w->have_kernel) XC_RETURN_IF_ERROR(read_ints(n, "kernel_shape", nsp, 1, 1, w->kernel));
  if (node_has_attr_def(n, "strides")) XC_RETURN_IF_ERROR(read_ints(n, "strides", nsp, 1, 1, w->stride));
  else for (int i = 0; i < nsp; i++) w->stride[i] = 1;
  if (node_has_attr_def(n, "dilations"))
    XC_RETURN_IF_ERROR(read_ints(n, "dilations", nsp, 1, 1, w->dil));
  else for (int i = 0; i < nsp; i++) w->dil[i] = 1;
  if (node_has_attr_def(n, "pads")) XC_RETURN_IF_ERROR(read_ints(n, "pads", 2 * nsp, 0, 0, w->pads));
  if (node_has_attr_def(n, "auto_pad")) {
    const char* ap = xc_node_attr_string(n, "auto_pad");
    if (!strcmp(ap, "NOTSET") || !*ap) w->auto_pad = PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) w->auto_pad = PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) w->auto_pad = PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) w->auto_pad = PAD_VALID;
    else return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown auto_pad '%s'", ap);
    if (w->auto_pad != PAD_NOTSET)
      for (int i = 0; i < 2 * nsp; i++) w->pads[i] = 0;
  }
  if (node_has_attr_def(n, "ceil_mode")) w->ceil_mode = xc_node_attr_int(n, "ceil_mode") != 0;
  return NULL;
}

/* Output size of a sliding window along spatial dim i (symbolic). */
static xc_status_t window_out_dim(xc_graph_t* g, const xc_node_t* n, const window_t* w, int i,
                                  xc_dim_t in, xc_dim_t kernel, xc_dim_t* out) {
  xc_dim_t one = xc_dim_const(1), s = xc_dim_const(w->stride[i]);
  /* effective kernel extent (k - 1) * d + 1 */
  xc_dim_t ek = xc_dim_add(g, xc_dim_mul(g, xc_dim_sub(g, kernel, one), xc_dim_const(w->dil[i])), one);
  xc_dim_t r;
  if (w->auto_pad == PAD_SAME_UPPER || w->auto_pad == PAD_SAME_LOWER) {
    r = xc_dim_ceildiv(g, in, s);
  } else {
    int64_t pb = w->pads[i], pe = w->pads[w->nsp + i];
    /* in + (pb + pe - ek), with the constant part folded first */
    xc_dim_t span = xc_dim_add(g, in, xc_dim_sub(g, xc_dim_const(pb + pe), ek));
    if (w->ceil_mode && w->auto_pad == PAD_NOTSET) {
      /* Windows that would start inside the end padding are dropped. */
      r = xc_dim_min(g, xc_dim_add(g, xc_dim_ceildiv(g, span, s), one),
                     xc_dim_ceildiv(g, xc_dim_add(g, in, xc_dim_const(pb)), s));
    } else {
      r = xc_dim_add(g, xc_dim_floordiv(g, span, s), one);
    }
    if (!span.sym && !in.sym && (span.value < 0 || in.value == 0)) {
      char b[64];
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "kernel (extent %s) is larger than the padded input (%lld) along "
                           "spatial dim %d",
                           xc_dim_print(ek, b, sizeof b), (long long)(in.value + pb + pe), i);
    }
  }
  *out = r;
  return NULL;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* Concrete output size and begin padding along spatial dim i. */
static xc_status_t window_out_size(const xc_node_t* n, const window_t* w, int i, int64_t in,
                                   int64_t kernel, int64_t* out, int64_t* pad_begin) {
  int64_t s = w->stride[i], ek = (kernel - 1) * w->dil[i] + 1;
  if (w->auto_pad == PAD_SAME_UPPER || w->auto_pad == PAD_SAME_LOWER) {
    *out = ceil_div(in, s);
    int64_t total = (*out - 1) * s + ek - in;
    if (total < 0) total = 0;
    *pad_begin = w->auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
    return NULL;
  }
  int64_t pb = w->pads[i], pe = w->pads[w->nsp + i];
  int64_t span = in + pb + pe - ek;
  if (span < 0 || in == 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "kernel (extent %lld) is larger than the padded input (%lld) along "
                         "spatial dim %d",
                         (long long)ek, (long long)(in + pb + pe), i);
  if (w->ceil_mode && w->auto_pad == PAD_NOTSET) {
    int64_t o = ceil_div(span, s) + 1, limit = ceil_div(in + pb, s);
    *out = o < limit ? o : limit;
  } else {
    *out = floor_div(span, s) + 1;
  }
  *pad_begin = pb;
  return NULL;
}

/* Concrete geometry of one windowed op invocation. */
typedef struct {
  int nsp;
  int64_t in[XC_MAX_RANK], out[XC_MAX_RANK], kernel[XC_MAX_RANK];
  int64_t pad_begin[XC_MAX_RANK], pad_end[XC_MAX_RANK];
  int64_t in_plane, out_plane, kernel_size;
} geom_t;

static xc_status_t window_geometry(const xc_node_t* n, const window_t* w, const int64_t* in,
                                   const int64_t* kernel, geom_t* gm) {
  memset(gm, 0, sizeof *gm);
  gm->nsp = w->nsp;
  gm->in_plane = gm->out_plane = gm->kernel_size = 1;
  for (int i = 0; i < w->nsp; i++) {
    gm->in[i] = in[i];
    gm->kernel[i] = kernel[i];
    XC_RETURN_IF_ERROR(window_out_size(n, w, i, in[i], kernel[i], &gm->out[i], &gm->pad_begin[i]));
    gm->pad_end[i] = w->auto_pad == PAD_NOTSET ? w->pads[w->nsp + i] : 0;
    gm->in_plane *= in[i];
    gm->out_plane *= gm->out[i];
    gm->kernel_size *= kernel[i];
  }
  return NULL;
}

/* ---- Conv --------------------------------------------------------------- */

static xc_status_t check_static_eq(const xc_node_t* n, xc_dim_t a, xc_dim_t b, const char* what) {
  if (!a.sym && !b.sym && a.value != b.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s (%lld vs %lld)", what, (long long)a.value,
                         (long long)b.value);
  return NULL;
}

static xc_status_t check_same_dtype(const xc_node_t* n, int i) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (v && v->dtype != n->inputs[0]->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d has dtype %s, expected %s", i,
                         xc_dtype_name(v->dtype), xc_dtype_name(n->inputs[0]->dtype));
  return NULL;
}

static xc_status_t conv_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 1));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 2));
  const xc_value_t *x = n->inputs[0], *wv = n->inputs[1];
  const xc_value_t* b = n->num_inputs > 2 ? n->inputs[2] : NULL;
  window_t w;
  XC_RETURN_IF_ERROR(read_window(n, x->rank - 2, &w));
  if (wv->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "weight rank %d differs from input rank %d",
                         wv->rank, x->rank);
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "group must be >= 1");
  xc_dim_t c = x->dims[1], m = wv->dims[0];
  if (!c.sym && c.value % group != 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "group %lld does not divide %lld input channels",
                         (long long)group, (long long)c.value);
  if (!m.sym && m.value % group != 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "group %lld does not divide %lld output channels", (long long)group,
                         (long long)m.value);
  if (!c.sym && !wv->dims[1].sym && c.value != wv->dims[1].value * group)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "channel mismatch: input has %lld channels, weight expects %lld "
                         "(%lld per group x %lld groups)",
                         (long long)c.value, (long long)(wv->dims[1].value * group),
                         (long long)wv->dims[1].value, (long long)group);
  if (b) {
    if (b->rank != 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "bias must be 1-D");
    XC_RETURN_IF_ERROR(check_static_eq(n, b->dims[0], m, "bias size differs from output channels"));
  }
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  out[1] = m;
  for (int i = 0; i < w.nsp; i++) {
    xc_dim_t k = wv->dims[2 + i];
    if (w.have_kernel) {
      XC_RETURN_IF_ERROR(check_static_eq(n, k, xc_dim_const(w.kernel[i]),
                                         "kernel_shape differs from the weight"));
      k = xc_dim_const(w.kernel[i]);
    }
    XC_RETURN_IF_ERROR(window_out_dim(g, n, &w, i, x->dims[2 + i], k, &out[2 + i]));
  }
  return xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out);
}

static xc_status_t conv_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *wt = ctx->inputs[1];
  const xc_tensor_t* bias = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  window_t w;
  XC_RETURN_IF_ERROR(read_window(node, x->rank - 2, &w));
  if (wt->rank != x->rank)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "weight rank differs from input rank");
  int64_t group = xc_node_attr_int(node, "group");
  int64_t nb = x->dims[0], c = x->dims[1], m = wt->dims[0], cg = wt->dims[1];
  if (group < 1 || c % group || m % group || cg * group != c)
    return xc_node_error(node, XC_INVALID_ARGUMENT,
                         "channel mismatch: input %lld channels, weight [%lld,%lld,...], "
                         "group %lld",
                         (long long)c, (long long)m, (long long)cg, (long long)group);
  if (bias && (bias->rank != 1 || bias->dims[0] != m))
    return xc_node_error(node, XC_INVALID_ARGUMENT, "bias must have shape [%lld]", (long long)m);
  for (int i = 0; i < w.nsp; i++)
    if (w.have_kernel && w.kernel[i] != wt->dims[2 + i])
      return xc_node_error(node, XC_INVALID_ARGUMENT, "kernel_shape differs from the weight");
  geom_t gm;
  XC_RETURN_IF_ERROR(window_geometry(node, &w, x->dims + 2, wt->dims + 2, &gm));
  int64_t odims[XC_MAX_RANK];
  odims[0] = nb;
  odims[1] = m;
  memcpy(odims + 2, gm.out, sizeof(int64_t) * (size_t)w.nsp);
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, odims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t mg = m / group, nsp = w.nsp;
  int64_t opos[XC_MAX_RANK], kpos[XC_MAX_RANK];
  int64_t in_strides[XC_MAX_RANK];
  xc_strides(w.nsp, gm.in, in_strides);
  int64_t yi = 0;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t oc = 0; oc < m; oc++) {
      int64_t gi = oc / mg;
      memset(opos, 0, sizeof opos);
      for (int64_t o = 0; o < gm.out_plane; o++, yi++) {
        double acc = bias ? xc_tensor_get_f64(bias, oc) : 0.0;
        memset(kpos, 0, sizeof kpos);
        for (int64_t kk = 0; kk < gm.kernel_size; kk++) {
          /* Input offset of this tap within one channel plane, or -1. */
          int64_t off = 0;
          for (int64_t d = 0; d < nsp && off >= 0; d++) {
            int64_t p = opos[d] * w.stride[d] - gm.pad_begin[d] + kpos[d] * w.dil[d];
            if (p < 0 || p >= gm.in[d]) off = -1;
            else off += p * in_strides[d];
          }
          if (off >= 0)
            for (int64_t ic = 0; ic < cg; ic++) {
              int64_t xc = gi * cg + ic;
              double xv = xc_tensor_get_f64(x, (b * c + xc) * gm.in_plane + off);
              double wv = xc_tensor_get_f64(wt, (oc * cg + ic) * gm.kernel_size + kk);
              acc += xv * wv;
            }
          xc_index_next(w.nsp, gm.kernel, kpos);
        }
        xc_tensor_set_f64(y, yi, acc);
        xc_index_next(w.nsp, gm.out, opos);
      }
    }
  return NULL;
}

/* ---- ConvTranspose ------------------------------------------------------ */

/* The output_shape attribute lists either the spatial dims or all dims. */
static xc_status_t convtranspose_output_shape(const xc_node_t* n, int nsp, bool* have,
                                              int64_t* out) {
  int64_t k;
  const int64_t* v = xc_node_attr_ints(n, "output_shape", &k);
  *have = v != NULL;
  if (!v) return NULL;
  if (k != nsp && k != nsp + 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "output_shape has %lld values, expected %d",
                         (long long)k, nsp);
  for (int i = 0; i < nsp; i++) {
    out[i] = v[k - nsp + i];
    if (out[i] < 0 || out[i] > WINDOW_ATTR_MAX)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "output_shape[%d] out of range", i);
  }
  return NULL;
}

static xc_status_t convtranspose_common(const xc_node_t* n, int rank, window_t* w,
                                        int64_t* out_pad, bool* have_shape, int64_t* shape) {
  XC_RETURN_IF_ERROR(read_window(n, rank - 2, w));
  XC_RETURN_IF_ERROR(read_ints(n, "output_padding", w->nsp, 0, 0, out_pad));
  for (int i = 0; i < w->nsp; i++)
    if (out_pad[i] >= w->stride[i] && out_pad[i] >= w->dil[i])
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "output_padding[%d] = %lld must be smaller than the stride or "
                           "dilation",
                           i, (long long)out_pad[i]);
  return convtranspose_output_shape(n, w->nsp, have_shape, shape);
}

static xc_status_t convtranspose_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 1));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 2));
  const xc_value_t *x = n->inputs[0], *wv = n->inputs[1];
  const xc_value_t* b = n->num_inputs > 2 ? n->inputs[2] : NULL;
  window_t w;
  int64_t out_pad[XC_MAX_RANK], shape[XC_MAX_RANK];
  bool have_shape;
  XC_RETURN_IF_ERROR(convtranspose_common(n, x->rank, &w, out_pad, &have_shape, shape));
  if (wv->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "weight rank %d differs from input rank %d",
                         wv->rank, x->rank);
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "group must be >= 1");
  XC_RETURN_IF_ERROR(check_static_eq(n, x->dims[1], wv->dims[0],
                                     "channel mismatch between input and weight"));
  if (!x->dims[1].sym && x->dims[1].value % group)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "group %lld does not divide %lld input channels",
                         (long long)group, (long long)x->dims[1].value);
  xc_dim_t m = xc_dim_mul(g, wv->dims[1], xc_dim_const(group));
  if (b) {
    if (b->rank != 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "bias must be 1-D");
    XC_RETURN_IF_ERROR(check_static_eq(n, b->dims[0], m, "bias size differs from output channels"));
  }
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  out[1] = m;
  xc_dim_t one = xc_dim_const(1);
  for (int i = 0; i < w.nsp; i++) {
    xc_dim_t k = w.have_kernel ? xc_dim_const(w.kernel[i]) : wv->dims[2 + i];
    xc_dim_t in = x->dims[2 + i];
    if (have_shape) {
      out[2 + i] = xc_dim_const(shape[i]);
    } else if (w.auto_pad == PAD_SAME_UPPER || w.auto_pad == PAD_SAME_LOWER) {
      out[2 + i] = xc_dim_mul(g, in, xc_dim_const(w.stride[i]));
    } else {
      /* s * (in - 1) + output_padding + (k - 1) * d + 1 - pads */
      xc_dim_t ek = xc_dim_add(g, xc_dim_mul(g, xc_dim_sub(g, k, one), xc_dim_const(w.dil[i])), one);
      xc_dim_t extra = xc_dim_add(
          g, ek, xc_dim_const(out_pad[i] - w.pads[i] - w.pads[w.nsp + i] - w.stride[i]));
      out[2 + i] = xc_dim_add(g, xc_dim_mul(g, in, xc_dim_const(w.stride[i])), extra);
      if (!out[2 + i].sym && out[2 + i].value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "pads exceed the output along spatial dim %d", i);
    }
  }
  return xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out);
}

static xc_status_t convtranspose_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *wt = ctx->inputs[1];
  const xc_tensor_t* bias = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  window_t w;
  int64_t out_pad[XC_MAX_RANK], shape[XC_MAX_RANK];
  bool have_shape;
  XC_RETURN_IF_ERROR(convtranspose_common(node, x->rank, &w, out_pad, &have_shape, shape));
  if (wt->rank != x->rank)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "weight rank differs from input rank");
  int64_t group = xc_node_attr_int(node, "group");
  int64_t nb = x->dims[0], c = x->dims[1], mg = wt->dims[1], m = mg * group;
  if (group < 1 || wt->dims[0] != c || c % group)
    return xc_node_error(node, XC_INVALID_ARGUMENT,
                         "channel mismatch: input %lld channels, weight [%lld,%lld,...], "
                         "group %lld",
                         (long long)c, (long long)wt->dims[0], (long long)mg, (long long)group);
  if (bias && (bias->rank != 1 || bias->dims[0] != m))
    return xc_node_error(node, XC_INVALID_ARGUMENT, "bias must have shape [%lld]", (long long)m);
  int nsp = w.nsp;
  int64_t in[XC_MAX_RANK], kernel[XC_MAX_RANK], out[XC_MAX_RANK], pb[XC_MAX_RANK];
  int64_t in_plane = 1, out_plane = 1, ksize = 1;
  for (int i = 0; i < nsp; i++) {
    in[i] = x->dims[2 + i];
    kernel[i] = wt->dims[2 + i];
    if (w.have_kernel && w.kernel[i] != kernel[i])
      return xc_node_error(node, XC_INVALID_ARGUMENT, "kernel_shape differs from the weight");
    int64_t ek = (kernel[i] - 1) * w.dil[i] + 1;
    int64_t full = w.stride[i] * (in[i] - 1) + out_pad[i] + ek;
    if (w.auto_pad == PAD_SAME_UPPER || w.auto_pad == PAD_SAME_LOWER) {
      out[i] = have_shape ? shape[i] : in[i] * w.stride[i];
      int64_t total = full - out[i];
      pb[i] = w.auto_pad == PAD_SAME_UPPER ? floor_div(total, 2) : total - floor_div(total, 2);
    } else {
      pb[i] = w.pads[i];
      out[i] = have_shape ? shape[i] : full - w.pads[i] - w.pads[nsp + i];
      if (out[i] < 0)
        return xc_node_error(node, XC_INVALID_ARGUMENT,
                             "pads exceed the output along spatial dim %d", i);
    }
    in_plane *= in[i];
    out_plane *= out[i];
    ksize *= kernel[i];
  }
  int64_t odims[XC_MAX_RANK];
  odims[0] = nb;
  odims[1] = m;
  memcpy(odims + 2, out, sizeof(int64_t) * (size_t)nsp);
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, odims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  double* acc = calloc((size_t)(out_plane ? out_plane : 1), sizeof(double));
  if (!acc) return xc_error_oom();
  int64_t out_strides[XC_MAX_RANK], ipos[XC_MAX_RANK], kpos[XC_MAX_RANK];
  xc_strides(nsp, out, out_strides);
  int64_t cg = c / group;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t oc = 0; oc < m; oc++) {
      int64_t gi = oc / mg, oc_in_group = oc % mg;
      double bv = bias ? xc_tensor_get_f64(bias, oc) : 0.0;
      for (int64_t i = 0; i < out_plane; i++) acc[i] = bv;
      for (int64_t ic = 0; ic < cg; ic++) {
        int64_t xc = gi * cg + ic;
        memset(ipos, 0, sizeof ipos);
        for (int64_t p = 0; p < in_plane; p++) {
          double xv = xc_tensor_get_f64(x, (b * c + xc) * in_plane + p);
          memset(kpos, 0, sizeof kpos);
          for (int64_t kk = 0; kk < ksize; kk++) {
            int64_t off = 0;
            for (int d = 0; d < nsp && off >= 0; d++) {
              int64_t o = ipos[d] * w.stride[d] - pb[d] + kpos[d] * w.dil[d];
              if (o < 0 || o >= out[d]) off = -1;
              else off += o * out_strides[d];
            }
            if (off >= 0)
              acc[off] += xv * xc_tensor_get_f64(wt, (xc * mg + oc_in_group) * ksize + kk);
            xc_index_next(nsp, kernel, kpos);
          }
          xc_index_next(nsp, in, ipos);
        }
      }
      for (int64_t i = 0; i < out_plane; i++)
        xc_tensor_set_f64(y, (b * m + oc) * out_plane + i, acc[i]);
    }
  free(acc);
  return NULL;
}

/* ---- pooling ------------------------------------------------------------ */

enum { POOL_MAX, POOL_AVG, POOL_LP };

static int pool_kind(const xc_node_t* n) {
  const char* t = n->op_type;
  if (strstr(t, "MaxPool")) return POOL_MAX;
  if (strstr(t, "AveragePool")) return POOL_AVG;
  return POOL_LP;
}

static bool is_global(const xc_node_t* n) { return strncmp(n->op_type, "Global", 6) == 0; }

static xc_status_t pool_infer(xc_graph_t* g, xc_node_t* n) {
  int kind = pool_kind(n);
  uint32_t mask = XC_DT_FLOAT;
  if (kind == POOL_MAX && !is_global(n)) mask |= XC_DT(XC_I8) | XC_DT(XC_U8);
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, mask));
  const xc_value_t* x = n->inputs[0];
  if (x->rank < 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 3 (N, C, spatial dims), got %d",
                         x->rank);
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  out[1] = x->dims[1];
  if (is_global(n)) {
    for (int i = 2; i < x->rank; i++) out[i] = xc_dim_const(1);
  } else {
    window_t w;
    XC_RETURN_IF_ERROR(read_window(n, x->rank - 2, &w));
    for (int i = 0; i < w.nsp; i++)
      XC_RETURN_IF_ERROR(window_out_dim(g, n, &w, i, x->dims[2 + i], xc_dim_const(w.kernel[i]),
                                        &out[2 + i]));
  }
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out));
  if (n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[1], XC_I64, x->rank, out));
  return NULL;
}

static xc_status_t pool_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  int kind = pool_kind(node);
  if (x->rank < 3)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "input needs rank >= 3 (N, C, spatial dims)");
  window_t w;
  int nsp = x->rank - 2;
  if (is_global(node)) {
    memset(&w, 0, sizeof w);
    w.nsp = nsp;
    for (int i = 0; i < nsp; i++) {
      w.kernel[i] = x->dims[2 + i];
      w.stride[i] = w.dil[i] = 1;
    }
  } else {
    XC_RETURN_IF_ERROR(read_window(node, nsp, &w));
  }
  geom_t gm;
  XC_RETURN_IF_ERROR(window_geometry(node, &w, x->dims + 2, w.kernel, &gm));
  int64_t odims[XC_MAX_RANK];
  odims[0] = x->dims[0];
  odims[1] = x->dims[1];
  memcpy(odims + 2, gm.out, sizeof(int64_t) * (size_t)nsp);
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, odims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  xc_tensor_t* indices = NULL;
  if (kind == POOL_MAX && ctx->num_outputs > 1 && node->outputs[1]) {
    XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, x->rank, odims, &ctx->outputs[1]));
    indices = ctx->outputs[1];
  }
  bool count_pad = kind == POOL_AVG && !is_global(node) && xc_node_attr_int(node, "count_include_pad") != 0;
  bool col_major = kind == POOL_MAX && !is_global(node) &&
                   xc_node_attr_int(node, "storage_order") != 0;
  double p = 2;
  if (kind == POOL_LP) {
    p = (double)xc_node_attr_int(node, "p");
    if (p <= 0) return xc_node_error(node, XC_INVALID_ARGUMENT, "p must be positive");
  }
  int64_t in_strides[XC_MAX_RANK], col_strides[XC_MAX_RANK];
  xc_strides(nsp, gm.in, in_strides);
  /* Column-major strides over the spatial dims for storage_order = 1. */
  int64_t col_step = 1;
  for (int d = 0; d < nsp; d++) {
    col_strides[d] = col_step;
    col_step *= gm.in[d];
  }
  int64_t planes = x->dims[0] * x->dims[1];
  int64_t opos[XC_MAX_RANK], kpos[XC_MAX_RANK];
  for (int64_t pl = 0; pl < planes; pl++) {
    memset(opos, 0, sizeof opos);
    for (int64_t o = 0; o < gm.out_plane; o++) {
      double acc = kind == POOL_MAX ? -INFINITY : 0.0;
      int64_t best = -1, count = 0;
      memset(kpos, 0, sizeof kpos);
      for (int64_t kk = 0; kk < gm.kernel_size; kk++) {
        int64_t off = 0, col = 0;
        bool inside = true, in_padded = true;
        for (int d = 0; d < nsp; d++) {
          int64_t q = opos[d] * w.stride[d] - gm.pad_begin[d] + kpos[d] * w.dil[d];
          if (q < 0 || q >= gm.in[d]) inside = false;
          if (q >= gm.in[d] + gm.pad_end[d]) in_padded = false;
          off += q * in_strides[d];
          col += q * col_strides[d];
        }
        if (inside) {
          double v = xc_tensor_get_f64(x, pl * gm.in_plane + off);
          if (kind == POOL_MAX) {
            if (best < 0 || v > acc || (isnan(v) && !isnan(acc))) {
              acc = v;
              best = col_major ? col : off;
            }
          } else if (kind == POOL_AVG) {
            acc += v;
          } else {
            acc += pow(fabs(v), p);
          }
          count++;
        } else if (count_pad && in_padded) {
          count++;
        }
        xc_index_next(nsp, gm.kernel, kpos);
      }
      if (kind == POOL_AVG) acc = acc / (double)count;
      if (kind == POOL_LP) acc = pow(acc, 1.0 / p);
      xc_tensor_set_f64(y, pl * gm.out_plane + o, acc);
      if (indices) xc_tensor_set_i64(indices, pl * gm.out_plane + o, pl * gm.in_plane + best);
      xc_index_next(nsp, gm.out, opos);
    }
  }
  return NULL;
}

/* ---- table -------------------------------------------------------------- */

static const xc_attr_def_t conv_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"), XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_I("group", 1),           XC_ATTR_OPT("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS), XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t convtranspose_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_I("group", 1),
    XC_ATTR_OPT("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("output_padding", XC_ATTR_INTS),
    XC_ATTR_OPT("output_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t maxpool_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_I("storage_order", 0),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t avgpool_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_I("count_include_pad", 0),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t lppool_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_I("p", 2),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t global_lppool_attrs[] = {
    XC_ATTR_I("p", 2),
    XC_ATTR_END,
};

const xc_op_def_t xc_ops_conv[] = {
    {"Conv", "", 2, 3, 1, 1, conv_attrs, XC_DT_FLOAT, conv_infer, conv_eval,
     "N-D convolution with groups, strides, dilations, pads/auto_pad and bias"},
    {"ConvTranspose", "", 2, 3, 1, 1, convtranspose_attrs, XC_DT_FLOAT, convtranspose_infer,
     convtranspose_eval, "N-D transposed convolution (output_padding, output_shape, groups)"},
    {"MaxPool", "", 1, 1, 1, 2, maxpool_attrs, XC_DT_FLOAT | XC_DT(XC_I8) | XC_DT(XC_U8),
     pool_infer, pool_eval, "N-D max pooling, optional flat argmax Indices output"},
    {"AveragePool", "", 1, 1, 1, 1, avgpool_attrs, XC_DT_FLOAT, pool_infer, pool_eval,
     "N-D average pooling (count_include_pad, ceil_mode, dilations)"},
    {"LpPool", "", 1, 1, 1, 1, lppool_attrs, XC_DT_FLOAT, pool_infer, pool_eval,
     "N-D Lp-norm pooling"},
    {"GlobalAveragePool", "", 1, 1, 1, 1, NULL, XC_DT_FLOAT, pool_infer, pool_eval,
     "Average over all spatial dims"},
    {"GlobalMaxPool", "", 1, 1, 1, 1, NULL, XC_DT_FLOAT, pool_infer, pool_eval,
     "Maximum over all spatial dims"},
    {"GlobalLpPool", "", 1, 1, 1, 1, global_lppool_attrs, XC_DT_FLOAT, pool_infer, pool_eval,
     "Lp norm over all spatial dims"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
