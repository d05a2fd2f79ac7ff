/* Op family 'conv': Conv, ConvInteger, DeformConv (2-D), ConvTranspose, the pooling ops
 * (MaxPool, AveragePool, LpPool and their Global forms), MaxUnpool and
 * Col2Im, N-D over the spatial dims; GridSample, AffineGrid and RoiAlign live in
 * ops_sample.c.
 *
 * Window geometry (kernel, strides, dilations, pads, auto_pad, ceil_mode) is
 * read once into window_t, then used twice: with symbolic arithmetic for
 * shape inference and with concrete sizes by the kernels. Both follow the
 * ONNX formulas, so the interpreter's check of kernel results against
 * inference compares two independent evaluations of one definition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_sample.h"
#include "xcomp/op.h"

/* Attribute values above this are rejected, which keeps every size
 * computation below far away from int64 overflow. */
#define WINDOW_ATTR_MAX (INT64_C(1) << 24)

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

typedef struct {
  int nsp;          /* number of spatial dims */
  bool have_kernel; /* kernel_shape given */
  int64_t kernel[XC_MAX_RANK];
  int64_t stride[XC_MAX_RANK];
  int64_t dil[XC_MAX_RANK];
  int64_t pads[2 * XC_MAX_RANK]; /* begins, then ends */
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

/* All elements of t as doubles (NULL on OOM), so that inner loops do not
 * convert element by element. */
static double* to_f64(const xc_tensor_t* t) {
  double* d = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
  if (!d) return NULL;
  if (t->dtype == XC_F32)
    for (int64_t i = 0; i < t->numel; i++) d[i] = ((const float*)t->data)[i];
  else
    for (int64_t i = 0; i < t->numel; i++) d[i] = xc_tensor_get_f64(t, i);
  return d;
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
  if (node_has_attr_def(n, "strides"))
    XC_RETURN_IF_ERROR(read_ints(n, "strides", nsp, 1, 1, w->stride));
  else
    for (int i = 0; i < nsp; i++) w->stride[i] = 1;
  if (node_has_attr_def(n, "dilations"))
    XC_RETURN_IF_ERROR(read_ints(n, "dilations", nsp, 1, 1, w->dil));
  else
    for (int i = 0; i < nsp; i++) w->dil[i] = 1;
  if (node_has_attr_def(n, "pads"))
    XC_RETURN_IF_ERROR(read_ints(n, "pads", 2 * nsp, 0, 0, w->pads));
  if (node_has_attr_def(n, "auto_pad")) {
    const char* ap = xc_node_attr_string(n, "auto_pad");
    if (!strcmp(ap, "NOTSET") || !*ap)
      w->auto_pad = PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
      w->auto_pad = PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
      w->auto_pad = PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
      w->auto_pad = PAD_VALID;
    else
      return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown auto_pad '%s'", ap);
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
  xc_dim_t ek =
      xc_dim_add(g, xc_dim_mul(g, xc_dim_sub(g, kernel, one), xc_dim_const(w->dil[i])), one);
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
    if (!xc_mul_i64(gm->in_plane, in[i], &gm->in_plane) ||
        !xc_mul_i64(gm->out_plane, gm->out[i], &gm->out_plane) ||
        !xc_mul_i64(gm->kernel_size, kernel[i], &gm->kernel_size))
      return xc_node_error(n, XC_OUT_OF_RANGE, "window sizes overflow");
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

/* ConvInteger shares Conv's geometry; its inputs 2 and 3 are zero points. */
static bool is_conv_integer(const xc_node_t* n) { return strcmp(n->op_type, "ConvInteger") == 0; }

#define INT8_DTYPES (XC_DT(XC_I8) | XC_DT(XC_U8))

static xc_status_t conv_infer(xc_graph_t* g, xc_node_t* n) {
  bool integer = is_conv_integer(n);
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, integer ? INT8_DTYPES : XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, integer ? INT8_DTYPES : XC_DT_FLOAT));
  if (integer) {
    for (int i = 2; i < n->num_inputs; i++)
      if (n->inputs[i] && n->inputs[i]->dtype != n->inputs[i - 2]->dtype)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "zero point %d dtype differs from its input",
                             i);
  } else {
    XC_RETURN_IF_ERROR(check_same_dtype(n, 1));
    XC_RETURN_IF_ERROR(check_same_dtype(n, 2));
  }
  const xc_value_t *x = n->inputs[0], *wv = n->inputs[1];
  const xc_value_t* b = !integer && n->num_inputs > 2 ? n->inputs[2] : NULL;
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
    return xc_node_error(n, XC_INVALID_ARGUMENT, "group %lld does not divide %lld output channels",
                         (long long)group, (long long)m.value);
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
      XC_RETURN_IF_ERROR(
          check_static_eq(n, k, xc_dim_const(w.kernel[i]), "kernel_shape differs from the weight"));
      k = xc_dim_const(w.kernel[i]);
    }
    XC_RETURN_IF_ERROR(window_out_dim(g, n, &w, i, x->dims[2 + i], k, &out[2 + i]));
  }
  return xc_value_set_type(g, n->outputs[0], integer ? XC_I32 : x->dtype, x->rank, out);
}

static xc_status_t conv_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *wt = ctx->inputs[1];
  bool integer = is_conv_integer(node);
  const xc_tensor_t* bias = !integer && ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  const xc_tensor_t* x_zp = integer && ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  const xc_tensor_t* w_zp = integer && ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  if (x_zp && x_zp->numel != 1)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "x_zero_point must be a scalar");
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
  if (w_zp && w_zp->numel != 1 && w_zp->numel != m)
    return xc_node_error(node, XC_INVALID_ARGUMENT,
                         "w_zero_point must be a scalar or have one value per output channel");
  XC_RETURN_IF_ERROR(
      xc_tensor_create(integer ? XC_I32 : x->dtype, x->rank, odims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t mg = m / group, nsp = w.nsp;
  int64_t xz = x_zp ? xc_tensor_get_i64(x_zp, 0) : 0;
  /* Per (batch, group): accumulators for the group's output channels over
   * the output plane; each tap's input offset is computed once per output
   * position and reused for every channel pair. Every output still sums
   * its terms tap by tap, input channel by input channel. */
  if (y->numel == 0) return NULL; /* also keeps mg * out_plane below bounded */
  size_t acc_n = (size_t)(mg * gm.out_plane > 0 ? mg * gm.out_plane : 1);
  double *xd = NULL, *wd = NULL, *acc = NULL;
  int64_t* iacc = NULL;
  if (integer) {
    iacc = calloc(acc_n, sizeof(int64_t));
  } else {
    xd = to_f64(x);
    wd = to_f64(wt);
    acc = calloc(acc_n, sizeof(double));
  }
  if (integer ? !iacc : (!xd || !wd || !acc)) {
    free(xd), free(wd), free(acc), free(iacc);
    return xc_error_oom();
  }
  int64_t opos[XC_MAX_RANK], kpos[XC_MAX_RANK], in_strides[XC_MAX_RANK];
  xc_strides(w.nsp, gm.in, in_strides);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t gi = 0; gi < group; gi++) {
      for (int64_t ocl = 0; ocl < mg; ocl++)
        for (int64_t o = 0; o < gm.out_plane; o++) {
          if (integer)
            iacc[ocl * gm.out_plane + o] = 0;
          else
            acc[ocl * gm.out_plane + o] = bias ? xc_tensor_get_f64(bias, gi * mg + ocl) : 0.0;
        }
      memset(kpos, 0, sizeof kpos);
      for (int64_t kk = 0; kk < gm.kernel_size; kk++) {
        memset(opos, 0, sizeof opos);
        for (int64_t o = 0; o < gm.out_plane; o++) {
          /* Input offset of this tap within one channel plane, or -1. */
          int64_t off = 0;
          for (int64_t d = 0; d < nsp && off >= 0; d++) {
            int64_t p = opos[d] * w.stride[d] - gm.pad_begin[d] + kpos[d] * w.dil[d];
            off = (p < 0 || p >= gm.in[d]) ? -1 : off + p * in_strides[d];
          }
          xc_index_next(w.nsp, gm.out, opos);
          if (off < 0) continue;
          int64_t xbase = (b * c + gi * cg) * gm.in_plane + off;
          for (int64_t ocl = 0; ocl < mg; ocl++) {
            int64_t oc = gi * mg + ocl, wbase = oc * cg * gm.kernel_size + kk;
            if (integer) {
              int64_t wz = w_zp ? xc_tensor_get_i64(w_zp, w_zp->numel == 1 ? 0 : oc) : 0;
              int64_t sum = iacc[ocl * gm.out_plane + o];
              for (int64_t ic = 0; ic < cg; ic++)
                sum += (xc_tensor_get_i64(x, xbase + ic * gm.in_plane) - xz) *
                       (xc_tensor_get_i64(wt, wbase + ic * gm.kernel_size) - wz);
              iacc[ocl * gm.out_plane + o] = sum;
            } else {
              double sum = acc[ocl * gm.out_plane + o];
              for (int64_t ic = 0; ic < cg; ic++)
                sum += xd[xbase + ic * gm.in_plane] * wd[wbase + ic * gm.kernel_size];
              acc[ocl * gm.out_plane + o] = sum;
            }
          }
        }
        xc_index_next(w.nsp, gm.kernel, kpos);
      }
      for (int64_t ocl = 0; ocl < mg; ocl++) {
        int64_t ybase = (b * m + gi * mg + ocl) * gm.out_plane;
        for (int64_t o = 0; o < gm.out_plane; o++) {
          if (integer)
            xc_tensor_set_i64(y, ybase + o, iacc[ocl * gm.out_plane + o]);
          else
            xc_tensor_set_f64(y, ybase + o, acc[ocl * gm.out_plane + o]);
        }
      }
    }
  free(xd), free(wd), free(acc), free(iacc);
  return NULL;
}

/* ---- DeformConv (2-D) --------------------------------------------------- */

static xc_status_t deform_conv_infer(xc_graph_t* g, xc_node_t* n) {
  for (int i = 0; i < n->num_inputs; i++)
    if (n->inputs[i]) {
      XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, XC_DT_FLOAT));
      XC_RETURN_IF_ERROR(check_same_dtype(n, i));
    }
  const xc_value_t *x = n->inputs[0], *wv = n->inputs[1], *off = n->inputs[2];
  const xc_value_t* b = n->num_inputs > 3 ? n->inputs[3] : NULL;
  const xc_value_t* mask = n->num_inputs > 4 ? n->inputs[4] : NULL;
  if (x->rank != 4 || wv->rank != 4 || off->rank != 4 || (mask && mask->rank != 4))
    return xc_node_error(n, XC_UNSUPPORTED,
                         "only 2-D DeformConv (4-D X, W, offset, mask) is supported");
  window_t w;
  XC_RETURN_IF_ERROR(read_window(n, 2, &w));
  int64_t group = xc_node_attr_int(n, "group"), og = xc_node_attr_int(n, "offset_group");
  if (group < 1 || og < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "group and offset_group must be >= 1");
  xc_dim_t c = x->dims[1], m = wv->dims[0];
  if (!c.sym && !wv->dims[1].sym && c.value != wv->dims[1].value * group)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "channel mismatch: input has %lld channels, weight expects %lld",
                         (long long)c.value, (long long)(wv->dims[1].value * group));
  if (!c.sym && c.value % og)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "offset_group %lld does not divide %lld channels",
                         (long long)og, (long long)c.value);
  if (!m.sym && m.value % group)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "group %lld does not divide %lld output channels",
                         (long long)group, (long long)m.value);
  if (b) {
    if (b->rank != 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "bias must be 1-D");
    XC_RETURN_IF_ERROR(check_static_eq(n, b->dims[0], m, "bias size differs from output channels"));
  }
  xc_dim_t out[4] = {x->dims[0], m};
  xc_dim_t kh = w.have_kernel ? xc_dim_const(w.kernel[0]) : wv->dims[2];
  xc_dim_t kw = w.have_kernel ? xc_dim_const(w.kernel[1]) : wv->dims[3];
  XC_RETURN_IF_ERROR(window_out_dim(g, n, &w, 0, x->dims[2], kh, &out[2]));
  XC_RETURN_IF_ERROR(window_out_dim(g, n, &w, 1, x->dims[3], kw, &out[3]));
  xc_dim_t taps = xc_dim_mul(g, xc_dim_mul(g, kh, kw), xc_dim_const(og));
  XC_RETURN_IF_ERROR(check_static_eq(n, off->dims[1], xc_dim_mul(g, taps, xc_dim_const(2)),
                                     "offset channels differ from offset_group*2*kH*kW"));
  XC_RETURN_IF_ERROR(
      check_static_eq(n, off->dims[2], out[2], "offset height differs from the output"));
  XC_RETURN_IF_ERROR(
      check_static_eq(n, off->dims[3], out[3], "offset width differs from the output"));
  if (mask)
    XC_RETURN_IF_ERROR(
        check_static_eq(n, mask->dims[1], taps, "mask channels differ from offset_group*kH*kW"));
  return xc_value_set_type(g, n->outputs[0], x->dtype, 4, out);
}

/* Bilinear sample of one H x W plane at (h, w); taps outside are zero. */
static double bilinear(const xc_tensor_t* x, int64_t base, int64_t hgt, int64_t wid, double h,
                       double w) {
  double h0 = floor(h), w0 = floor(w);
  double fh = h - h0, fw = w - w0, r = 0;
  for (int dy = 0; dy < 2; dy++)
    for (int dx = 0; dx < 2; dx++) {
      double yy = h0 + dy, xx = w0 + dx;
      if (yy < 0 || yy >= (double)hgt || xx < 0 || xx >= (double)wid) continue;
      double wt = (dy ? fh : 1 - fh) * (dx ? fw : 1 - fw);
      if (wt != 0) r += wt * xc_tensor_get_f64(x, base + (int64_t)yy * wid + (int64_t)xx);
    }
  return r;
}

static xc_status_t deform_conv_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *wt = ctx->inputs[1], *off = ctx->inputs[2];
  const xc_tensor_t* bias = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  const xc_tensor_t* mask = ctx->num_inputs > 4 ? ctx->inputs[4] : NULL;
  if (x->rank != 4 || wt->rank != 4 || off->rank != 4 || (mask && mask->rank != 4))
    return xc_node_error(node, XC_UNSUPPORTED, "only 2-D DeformConv is supported");
  window_t w;
  XC_RETURN_IF_ERROR(read_window(node, 2, &w));
  int64_t group = xc_node_attr_int(node, "group"), og = xc_node_attr_int(node, "offset_group");
  int64_t nb = x->dims[0], c = x->dims[1], m = wt->dims[0], cg = wt->dims[1];
  int64_t kh = wt->dims[2], kw = wt->dims[3], hgt = x->dims[2], wid = x->dims[3];
  if (group < 1 || og < 1 || cg * group != c || m % group || c % og)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "channel/group mismatch");
  if (bias && (bias->rank != 1 || bias->dims[0] != m))
    return xc_node_error(node, XC_INVALID_ARGUMENT, "bias must have shape [%lld]", (long long)m);
  if (w.have_kernel && (w.kernel[0] != kh || w.kernel[1] != kw))
    return xc_node_error(node, XC_INVALID_ARGUMENT, "kernel_shape differs from the weight");
  geom_t gm;
  XC_RETURN_IF_ERROR(window_geometry(node, &w, x->dims + 2, wt->dims + 2, &gm));
  int64_t oh = gm.out[0], ow = gm.out[1], taps = kh * kw;
  if (off->dims[0] != nb || off->dims[1] != og * taps * 2 || off->dims[2] != oh ||
      off->dims[3] != ow)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "offset must have shape [%lld,%lld,%lld,%lld]",
                         (long long)nb, (long long)(og * taps * 2), (long long)oh, (long long)ow);
  if (mask && (mask->dims[0] != nb || mask->dims[1] != og * taps || mask->dims[2] != oh ||
               mask->dims[3] != ow))
    return xc_node_error(node, XC_INVALID_ARGUMENT, "mask must have shape [%lld,%lld,%lld,%lld]",
                         (long long)nb, (long long)(og * taps), (long long)oh, (long long)ow);
  int64_t dims[4] = {nb, m, oh, ow};
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, 4, dims, &ctx->outputs[0]));
  int64_t mg = m / group, cpo = c / og, plane = oh * ow;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t oc = 0; oc < m; oc++) {
      int64_t gi = oc / mg;
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double acc = bias ? xc_tensor_get_f64(bias, oc) : 0;
          for (int64_t ic = 0; ic < cg; ic++) {
            int64_t ch = gi * cg + ic, o = ch / cpo;
            for (int64_t p = 0; p < kh; p++)
              for (int64_t q = 0; q < kw; q++) {
                int64_t tap = p * kw + q;
                int64_t ob = ((b * og + o) * taps + tap) * 2;
                double dh = xc_tensor_get_f64(off, (ob * oh + i) * ow + j);
                double dw = xc_tensor_get_f64(off, ((ob + 1) * oh + i) * ow + j);
                double hh = (double)(i * w.stride[0] - gm.pad_begin[0] + p * w.dil[0]) + dh;
                double ww = (double)(j * w.stride[1] - gm.pad_begin[1] + q * w.dil[1]) + dw;
                double v = bilinear(x, (b * c + ch) * hgt * wid, hgt, wid, hh, ww);
                if (mask)
                  v *= xc_tensor_get_f64(mask, ((b * og + o) * taps + tap) * plane + i * ow + j);
                acc += v * xc_tensor_get_f64(wt, ((oc * cg + ic) * kh + p) * kw + q);
              }
          }
          xc_tensor_set_f64(ctx->outputs[0], ((b * m + oc) * oh + i) * ow + j, acc);
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

static xc_status_t convtranspose_common(const xc_node_t* n, int rank, window_t* w, int64_t* out_pad,
                                        bool* have_shape, int64_t* shape) {
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
  XC_RETURN_IF_ERROR(
      check_static_eq(n, x->dims[1], wv->dims[0], "channel mismatch between input and weight"));
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
      xc_dim_t ek =
          xc_dim_add(g, xc_dim_mul(g, xc_dim_sub(g, k, one), xc_dim_const(w.dil[i])), one);
      xc_dim_t extra =
          xc_dim_add(g, ek, xc_dim_const(out_pad[i] - w.pads[i] - w.pads[w.nsp + i] - w.stride[i]));
      out[2 + i] = xc_dim_add(g, xc_dim_mul(g, in, xc_dim_const(w.stride[i])), extra);
      if (!out[2 + i].sym && out[2 + i].value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "pads exceed the output along spatial dim %d",
                             i);
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
    int64_t full;
    if (!xc_mul_i64(w.stride[i], in[i] - 1, &full) || !xc_add_i64(full, out_pad[i] + ek, &full))
      return xc_node_error(node, XC_OUT_OF_RANGE, "output size overflows");
    if (w.auto_pad == PAD_SAME_UPPER || w.auto_pad == PAD_SAME_LOWER) {
      out[i] = have_shape ? shape[i] : full - out_pad[i] - ek + w.stride[i]; /* in * stride */
      int64_t total = full - out[i];
      pb[i] = w.auto_pad == PAD_SAME_UPPER ? floor_div(total, 2) : total - floor_div(total, 2);
    } else {
      pb[i] = w.pads[i];
      out[i] = have_shape ? shape[i] : full - w.pads[i] - w.pads[nsp + i];
      if (out[i] < 0)
        return xc_node_error(node, XC_INVALID_ARGUMENT,
                             "pads exceed the output along spatial dim %d", i);
    }
    if (!xc_mul_i64(in_plane, in[i], &in_plane) || !xc_mul_i64(out_plane, out[i], &out_plane) ||
        !xc_mul_i64(ksize, kernel[i], &ksize))
      return xc_node_error(node, XC_OUT_OF_RANGE, "output sizes overflow");
  }
  int64_t odims[XC_MAX_RANK];
  odims[0] = nb;
  odims[1] = m;
  memcpy(odims + 2, out, sizeof(int64_t) * (size_t)nsp);
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, odims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  double* acc = calloc((size_t)(out_plane ? out_plane : 1), sizeof(double));
  double *xd = to_f64(x), *wd = to_f64(wt);
  if (!acc || !xd || !wd) {
    free(acc), free(xd), free(wd);
    return xc_error_oom();
  }
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
          double xv = xd[(b * c + xc) * in_plane + p];
          memset(kpos, 0, sizeof kpos);
          for (int64_t kk = 0; kk < ksize; kk++) {
            int64_t off = 0;
            for (int d = 0; d < nsp && off >= 0; d++) {
              int64_t o = ipos[d] * w.stride[d] - pb[d] + kpos[d] * w.dil[d];
              if (o < 0 || o >= out[d])
                off = -1;
              else
                off += o * out_strides[d];
            }
            if (off >= 0) acc[off] += xv * wd[(xc * mg + oc_in_group) * ksize + kk];
            xc_index_next(nsp, kernel, kpos);
          }
          xc_index_next(nsp, in, ipos);
        }
      }
      for (int64_t i = 0; i < out_plane; i++)
        xc_tensor_set_f64(y, (b * m + oc) * out_plane + i, acc[i]);
    }
  free(acc), free(xd), free(wd);
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
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "input needs rank >= 3 (N, C, spatial dims), got %d", x->rank);
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  out[1] = x->dims[1];
  if (is_global(n)) {
    for (int i = 2; i < x->rank; i++) out[i] = xc_dim_const(1);
  } else {
    window_t w;
    XC_RETURN_IF_ERROR(read_window(n, x->rank - 2, &w));
    for (int i = 0; i < w.nsp; i++)
      XC_RETURN_IF_ERROR(
          window_out_dim(g, n, &w, i, x->dims[2 + i], xc_dim_const(w.kernel[i]), &out[2 + i]));
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
  bool count_pad =
      kind == POOL_AVG && !is_global(node) && xc_node_attr_int(node, "count_include_pad") != 0;
  bool col_major =
      kind == POOL_MAX && !is_global(node) && xc_node_attr_int(node, "storage_order") != 0;
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

/* ---- MaxUnpool ---------------------------------------------------------- */

static xc_status_t maxunpool_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  const xc_value_t *x = n->inputs[0], *idx = n->inputs[1];
  const xc_value_t* shape = n->num_inputs > 2 ? n->inputs[2] : NULL;
  window_t w;
  XC_RETURN_IF_ERROR(read_window(n, x->rank - 2, &w));
  if (idx->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices must have the input's shape");
  xc_dim_t out[XC_MAX_RANK];
  int64_t count;
  const xc_dim_t* known;
  if (shape) {
    if (shape->rank != 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "output_shape must be 1-D");
    if (xc_value_known_elems(g, shape, &count, &known)) {
      if (count != x->rank)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "output_shape has %lld values for rank %d",
                             (long long)count, x->rank);
      for (int i = 0; i < x->rank; i++) out[i] = known[i];
    } else {
      for (int i = 0; i < x->rank; i++) out[i] = xc_dim_fresh(g, "unpool");
    }
  } else {
    out[0] = x->dims[0];
    out[1] = x->dims[1];
    for (int i = 0; i < w.nsp; i++) {
      /* (in - 1) * stride - pads + kernel */
      xc_dim_t d =
          xc_dim_mul(g, xc_dim_sub(g, x->dims[2 + i], xc_dim_const(1)), xc_dim_const(w.stride[i]));
      out[2 + i] = xc_dim_add(g, d, xc_dim_const(w.kernel[i] - w.pads[i] - w.pads[w.nsp + i]));
    }
  }
  return xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out);
}

static xc_status_t maxunpool_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *idx = ctx->inputs[1];
  const xc_tensor_t* shape = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  window_t w;
  XC_RETURN_IF_ERROR(read_window(n, x->rank - 2, &w));
  if (idx->numel != x->numel)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices must have the input's shape");
  /* The indices address the default (inferred) output; an explicit
   * output_shape may only enlarge it, the extra elements being zeros. */
  int64_t inferred[XC_MAX_RANK], dims[XC_MAX_RANK];
  inferred[0] = x->dims[0];
  inferred[1] = x->dims[1];
  for (int i = 0; i < w.nsp; i++) {
    if (!xc_mul_i64(x->dims[2 + i] - 1, w.stride[i], &inferred[2 + i]))
      return xc_node_error(n, XC_OUT_OF_RANGE, "output size overflows");
    inferred[2 + i] += w.kernel[i] - w.pads[i] - w.pads[w.nsp + i];
    if (inferred[2 + i] < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "pads exceed the output along spatial dim %d",
                           i);
  }
  memcpy(dims, inferred, sizeof dims);
  if (shape) {
    int64_t count, *v;
    XC_RETURN_IF_ERROR(xc_tensor_to_i64_list(shape, &count, &v));
    bool ok = count == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = v[i] >= inferred[i];
    if (ok) memcpy(dims, v, sizeof(int64_t) * (size_t)x->rank);
    free(v);
    if (!ok)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "output_shape must have rank %d and be at least the default shape",
                           x->rank);
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, dims, &ctx->outputs[0]));
  int64_t total = 1, in_strides[XC_MAX_RANK], out_strides[XC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) total *= inferred[i];
  xc_strides(x->rank, inferred, in_strides);
  xc_strides(x->rank, dims, out_strides);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t at = xc_tensor_get_i64(idx, i);
    if (at < 0 || at >= total)
      return xc_node_error(n, XC_OUT_OF_RANGE, "index %lld is outside the output (%lld elements)",
                           (long long)at, (long long)total);
    int64_t off = 0;
    for (int d = 0; d < x->rank; d++) {
      off += (at / in_strides[d]) * out_strides[d];
      at %= in_strides[d];
    }
    xc_tensor_set_f64(ctx->outputs[0], off, xc_tensor_get_f64(x, i));
  }
  return NULL;
}

/* ---- Col2Im ------------------------------------------------------------- */

static xc_status_t col2im_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT(XC_I64)));
  const xc_value_t *x = n->inputs[0], *img = n->inputs[1], *blk = n->inputs[2];
  if (x->rank != 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be [N, C*prod(block), L]");
  if (img->rank != 1 || img->dims[0].sym || blk->rank != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "image_shape and block_shape must be 1-D");
  int nsp = (int)img->dims[0].value;
  if (nsp < 1 || nsp > XC_MAX_RANK - 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "image_shape must have 1 to %d values",
                         XC_MAX_RANK - 2);
  window_t w;
  XC_RETURN_IF_ERROR(read_window(n, nsp, &w));
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  int64_t count;
  const xc_dim_t* known;
  out[1] = xc_dim_fresh(g, "col2im_c");
  if (xc_value_known_elems(g, blk, &count, &known) && count == nsp) {
    xc_dim_t k = xc_dim_const(1);
    for (int i = 0; i < nsp; i++) k = xc_dim_mul(g, k, known[i]);
    if (!k.sym && k.value < 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "block_shape values must be positive");
    if (!k.sym && !x->dims[1].sym && x->dims[1].value % k.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "input dim 1 (%lld) is not divisible by the block size %lld",
                           (long long)x->dims[1].value, (long long)k.value);
    out[1] = xc_dim_floordiv(g, x->dims[1], k);
  }
  if (xc_value_known_elems(g, img, &count, &known) && count == nsp) {
    for (int i = 0; i < nsp; i++) out[2 + i] = known[i];
  } else {
    for (int i = 0; i < nsp; i++) out[2 + i] = xc_dim_fresh(g, "col2im");
  }
  return xc_value_set_type(g, n->outputs[0], x->dtype, nsp + 2, out);
}

static xc_status_t col2im_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  if (x->rank != 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be [N, C*prod(block), L]");
  int64_t ni, nb, *img = NULL, *blk = NULL;
  XC_RETURN_IF_ERROR(xc_tensor_to_i64_list(ctx->inputs[1], &ni, &img));
  xc_status_t s = xc_tensor_to_i64_list(ctx->inputs[2], &nb, &blk);
  window_t w;
  int nsp = (int)ni;
  if (!s && (ni != nb || ni < 1 || ni > XC_MAX_RANK - 2))
    s = xc_node_error(n, XC_INVALID_ARGUMENT, "image_shape and block_shape lengths differ");
  if (!s) s = read_window(n, nsp, &w);
  int64_t ksize = 1, blocks = 1, nblk[XC_MAX_RANK] = {0}, pos[XC_MAX_RANK], kpos[XC_MAX_RANK];
  for (int i = 0; !s && i < nsp; i++) {
    if (img[i] < 0 || img[i] > WINDOW_ATTR_MAX || blk[i] < 1 || blk[i] > WINDOW_ATTR_MAX) {
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "image_shape/block_shape value out of range");
      break;
    }
    int64_t ek = (blk[i] - 1) * w.dil[i] + 1;
    nblk[i] = floor_div(img[i] + w.pads[i] + w.pads[nsp + i] - ek, w.stride[i]) + 1;
    if (nblk[i] < 1)
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "block larger than the padded image");
    if (!s && (!xc_mul_i64(ksize, blk[i], &ksize) || !xc_mul_i64(blocks, nblk[i], &blocks)))
      s = xc_node_error(n, XC_OUT_OF_RANGE, "block sizes overflow");
  }
  if (!s && (x->dims[1] % ksize || x->dims[2] != blocks))
    s = xc_node_error(n, XC_INVALID_ARGUMENT,
                      "input [%lld,%lld,%lld] does not match %lld blocks of size %lld",
                      (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2],
                      (long long)blocks, (long long)ksize);
  int64_t dims[XC_MAX_RANK], plane = 1;
  if (!s) {
    dims[0] = x->dims[0];
    dims[1] = x->dims[1] / ksize;
    for (int i = 0; i < nsp; i++) {
      dims[2 + i] = img[i];
      if (!xc_mul_i64(plane, img[i], &plane))
        s = xc_node_error(n, XC_OUT_OF_RANGE, "image too large");
    }
    if (!s) s = xc_tensor_create(x->dtype, nsp + 2, dims, &ctx->outputs[0]);
  }
  double* acc = s ? NULL : calloc((size_t)(plane ? plane : 1), sizeof(double));
  if (!s && !acc) s = xc_error_oom();
  int64_t img_strides[XC_MAX_RANK];
  if (!s) xc_strides(nsp, img, img_strides);
  for (int64_t b = 0; !s && b < dims[0]; b++)
    for (int64_t c = 0; c < dims[1]; c++) {
      memset(acc, 0, sizeof(double) * (size_t)(plane ? plane : 1));
      memset(kpos, 0, sizeof kpos);
      for (int64_t k = 0; k < ksize; k++) {
        memset(pos, 0, sizeof pos);
        for (int64_t l = 0; l < blocks; l++) {
          int64_t off = 0;
          for (int d = 0; d < nsp && off >= 0; d++) {
            int64_t q = pos[d] * w.stride[d] - w.pads[d] + kpos[d] * w.dil[d];
            off = (q < 0 || q >= img[d]) ? -1 : off + q * img_strides[d];
          }
          if (off >= 0)
            acc[off] += xc_tensor_get_f64(x, ((b * x->dims[1]) + c * ksize + k) * blocks + l);
          xc_index_next(nsp, nblk, pos);
        }
        xc_index_next(nsp, blk, kpos);
      }
      for (int64_t i = 0; i < plane; i++)
        xc_tensor_set_f64(ctx->outputs[0], (b * dims[1] + c) * plane + i, acc[i]);
    }
  free(acc);
  free(img);
  free(blk);
  return s;
}

/* ---- table -------------------------------------------------------------- */

static const xc_attr_def_t conv_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_I("group", 1),
    XC_ATTR_OPT("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t deform_conv_attrs[] = {
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_I("group", 1),
    XC_ATTR_OPT("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_I("offset_group", 1),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
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
    XC_ATTR_S("auto_pad", "NOTSET"),        XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_OPT("dilations", XC_ATTR_INTS), XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),      XC_ATTR_I("storage_order", 0),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),   XC_ATTR_END,
};

static const xc_attr_def_t avgpool_attrs[] = {
    XC_ATTR_S("auto_pad", "NOTSET"),           XC_ATTR_I("ceil_mode", 0),
    XC_ATTR_I("count_include_pad", 0),         XC_ATTR_OPT("dilations", XC_ATTR_INTS),
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS), XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),      XC_ATTR_END,
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

static const xc_attr_def_t maxunpool_attrs[] = {
    XC_ATTR_REQ("kernel_shape", XC_ATTR_INTS),
    XC_ATTR_OPT("pads", XC_ATTR_INTS),
    XC_ATTR_OPT("strides", XC_ATTR_INTS),
    XC_ATTR_END,
};

static const xc_attr_def_t col2im_attrs[] = {
    XC_ATTR_OPT("dilations", XC_ATTR_INTS),
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
    {"ConvInteger", "", 2, 4, 1, 1, conv_attrs, INT8_DTYPES, conv_infer, conv_eval,
     "Integer convolution with zero points, int32 result"},
    {"DeformConv", "", 3, 5, 1, 1, deform_conv_attrs, XC_DT_FLOAT, deform_conv_infer,
     deform_conv_eval, "2-D deformable convolution (learned offsets, optional mask)"},
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
    {"MaxUnpool", "", 2, 3, 1, 1, maxunpool_attrs, XC_DT_NUMERIC, maxunpool_infer, maxunpool_eval,
     "Scatters pooled values back to their MaxPool argmax positions"},
    {"Col2Im", "", 3, 3, 1, 1, col2im_attrs, XC_DT_NUMERIC, col2im_infer, col2im_eval,
     "Sums sliding-window columns back into an image (inverse of im2col)"},
    {"GridSample", "", 2, 2, 1, 1, xc_grid_sample_attrs, XC_DT_NUMERIC, xc_grid_sample_infer,
     xc_grid_sample_eval, "Samples X at normalized grid points (ops_sample.c)"},
    {"AffineGrid", "", 2, 2, 1, 1, xc_affine_grid_attrs, XC_DT_FLOAT, xc_affine_grid_infer,
     xc_affine_grid_eval, "Sampling grid of an affine transform (ops_sample.c)"},
    {"RoiAlign", "", 3, 3, 1, 1, xc_roi_align_attrs, XC_DT_FLOAT, xc_roi_align_infer,
     xc_roi_align_eval, "Average or max of bilinear samples over regions of interest"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
