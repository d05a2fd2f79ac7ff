/* Op family 'resize': Resize (opset 19+ form: inputs X, roi, scales, sizes).
 *
 * Interpolation is separable: for every resized axis and every output
 * coordinate we compute a small list of taps (input index, weight), and an
 * output element is the weighted sum over the tensor product of its axes'
 * taps. Nearest mode has one tap of weight 1 and copies bytes, so it works
 * for every dtype. Coordinates, kernels, antialiasing, exclude_outside and
 * tf_crop_and_resize extrapolation follow the ONNX specification. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"

typedef enum resize_mode { RM_NEAREST, RM_LINEAR, RM_CUBIC } resize_mode_t;

typedef enum coord_mode {
  CT_HALF_PIXEL,
  CT_HALF_PIXEL_SYMMETRIC,
  CT_PYTORCH_HALF_PIXEL,
  CT_ALIGN_CORNERS,
  CT_ASYMMETRIC,
  CT_TF_CROP_AND_RESIZE,
} coord_mode_t;

typedef enum nearest_mode {
  NM_ROUND_PREFER_FLOOR,
  NM_ROUND_PREFER_CEIL,
  NM_FLOOR,
  NM_CEIL
} nearest_mode_t;

typedef enum aspect_policy { AP_STRETCH, AP_NOT_LARGER, AP_NOT_SMALLER } aspect_policy_t;

typedef struct resize_params {
  resize_mode_t mode;
  coord_mode_t coord;
  nearest_mode_t nearest;
  aspect_policy_t aspect;
  double cubic_a;
  bool exclude_outside;
  bool antialias;
  double extrapolation;
  int num_axes;
  int axes[XC_MAX_RANK];
} resize_params_t;

static xc_status_t pick(const xc_node_t* n, const char* attr, const char* const* names, int count,
                        int* out) {
  const char* v = xc_node_attr_string(n, attr);
  for (int i = 0; i < count; i++)
    if (strcmp(v, names[i]) == 0) {
      *out = i;
      return NULL;
    }
  return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown %s '%s'", attr, v);
}

static xc_status_t resize_params(const xc_node_t* n, int rank, resize_params_t* p) {
  static const char* const modes[] = {"nearest", "linear", "cubic"};
  static const char* const coords[] = {"half_pixel",         "half_pixel_symmetric",
                                       "pytorch_half_pixel", "align_corners",
                                       "asymmetric",         "tf_crop_and_resize"};
  static const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  static const char* const aspects[] = {"stretch", "not_larger", "not_smaller"};
  int v = 0;
  XC_RETURN_IF_ERROR(pick(n, "mode", modes, 3, &v));
  p->mode = (resize_mode_t)v;
  XC_RETURN_IF_ERROR(pick(n, "coordinate_transformation_mode", coords, 6, &v));
  p->coord = (coord_mode_t)v;
  XC_RETURN_IF_ERROR(pick(n, "nearest_mode", nearests, 4, &v));
  p->nearest = (nearest_mode_t)v;
  XC_RETURN_IF_ERROR(pick(n, "keep_aspect_ratio_policy", aspects, 3, &v));
  p->aspect = (aspect_policy_t)v;
  p->cubic_a = xc_node_attr_float(n, "cubic_coeff_a");
  p->exclude_outside = xc_node_attr_int(n, "exclude_outside") != 0;
  p->antialias = xc_node_attr_int(n, "antialias") != 0;
  p->extrapolation = xc_node_attr_float(n, "extrapolation_value");
  int64_t count;
  const int64_t* axes = xc_node_attr_ints(n, "axes", &count);
  bool seen[XC_MAX_RANK] = {false};
  if (!axes) {
    p->num_axes = rank;
    for (int d = 0; d < rank; d++) p->axes[d] = d;
    return NULL;
  }
  if (count > rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%lld axes for rank %d", (long long)count, rank);
  p->num_axes = (int)count;
  for (int64_t i = 0; i < count; i++) {
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, axes[i], rank, &p->axes[i]));
    if (seen[p->axes[i]])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %lld repeated", (long long)axes[i]);
    seen[p->axes[i]] = true;
  }
  return NULL;
}

/* Resolved per-axis sizes: scale[d] and out[d] for every axis of X. */
static xc_status_t resize_sizes(const xc_node_t* n, const resize_params_t* p, int rank,
                                const int64_t* in, const double* scales, const int64_t* sizes,
                                double* scale, int64_t* out) {
  for (int d = 0; d < rank; d++) {
    scale[d] = 1.0;
    out[d] = in[d];
  }
  if (scales) {
    for (int i = 0; i < p->num_axes; i++) {
      int d = p->axes[i];
      double s = scales[i];
      if (!(s > 0) || !isfinite(s))
        return xc_node_error(n, XC_INVALID_ARGUMENT, "scale %g for axis %d must be positive", s, d);
      double o = floor(s * (double)in[d]);
      if (o > 9.0e15)
        return xc_node_error(n, XC_OUT_OF_RANGE, "output extent too large on axis %d", d);
      scale[d] = s;
      out[d] = (int64_t)o;
    }
    return NULL;
  }
  for (int i = 0; i < p->num_axes; i++) {
    int d = p->axes[i];
    if (sizes[i] < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "size %lld for axis %d is negative",
                           (long long)sizes[i], d);
    if (in[d] == 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot resize axis %d of extent 0", d);
    scale[d] = (double)sizes[i] / (double)in[d];
    out[d] = sizes[i];
  }
  if (p->aspect != AP_STRETCH && p->num_axes > 0) {
    double s = scale[p->axes[0]];
    for (int i = 1; i < p->num_axes; i++) {
      double t = scale[p->axes[i]];
      s = p->aspect == AP_NOT_LARGER ? fmin(s, t) : fmax(s, t);
    }
    for (int i = 0; i < p->num_axes; i++) {
      int d = p->axes[i];
      scale[d] = s;
      out[d] = (int64_t)(s * (double)in[d] + 0.5); /* round half up */
    }
  }
  return NULL;
}

/* ---- inference ------------------------------------------------------------ */

/* Whether an optional 1-D input is absent (omitted or statically empty),
 * present (static non-zero length) or only known at run time. */
typedef enum presence { ABSENT, PRESENT, MAYBE } presence_t;

static presence_t input_presence(const xc_node_t* n, int i) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!v) return ABSENT;
  if (v->rank != 1 || !xc_dim_is_static(v->dims[0])) return MAYBE;
  return v->dims[0].value == 0 ? ABSENT : PRESENT;
}

static xc_status_t resize_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  const xc_value_t* x = n->inputs[0];
  int rank = x->rank;
  resize_params_t p;
  XC_RETURN_IF_ERROR(resize_params(n, rank, &p));
  if (p.mode != RM_NEAREST && !(XC_DT_NUMERIC & XC_DT(x->dtype)))
    return xc_node_error(n, XC_UNSUPPORTED, "%s interpolation of %s data",
                         xc_node_attr_string(n, "mode"), xc_dtype_name(x->dtype));
  if (p.antialias && p.mode == RM_NEAREST)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "antialias is not defined for nearest mode");
  presence_t scales_in = input_presence(n, 2), sizes_in = input_presence(n, 3);
  if ((scales_in == PRESENT && sizes_in == PRESENT) || (scales_in == ABSENT && sizes_in == ABSENT))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "exactly one of scales and sizes must be given");
  if (input_presence(n, 1) != ABSENT)
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  if (scales_in != ABSENT) XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT_FLOAT));
  if (sizes_in != ABSENT) XC_RETURN_IF_ERROR(xc_infer_check_input(n, 3, XC_DT(XC_I64)));
  /* With one side known present, the other is empty at run time. */
  bool has_sizes = sizes_in == PRESENT || (sizes_in == MAYBE && scales_in == ABSENT);
  bool has_scales = scales_in == PRESENT || (scales_in == MAYBE && sizes_in == ABSENT);
  xc_dim_t out[XC_MAX_RANK];
  for (int d = 0; d < rank; d++) out[d] = x->dims[d];
  bool all_static = true;
  for (int d = 0; d < rank; d++) all_static = all_static && xc_dim_is_static(x->dims[d]);
  int64_t count;
  const xc_dim_t* elems;
  if (has_sizes && xc_value_known_elems(g, n->inputs[3], &count, &elems)) {
    if (count != p.num_axes)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "sizes has %lld elements, expected %d",
                           (long long)count, p.num_axes);
    bool sizes_static = true;
    for (int i = 0; i < p.num_axes; i++) sizes_static = sizes_static && !elems[i].sym;
    if (p.aspect == AP_STRETCH) {
      for (int i = 0; i < p.num_axes; i++) {
        if (!elems[i].sym && elems[i].value < 0)
          return xc_node_error(n, XC_INVALID_ARGUMENT, "negative size");
        out[p.axes[i]] = elems[i];
      }
    } else if (sizes_static && all_static) {
      int64_t in[XC_MAX_RANK] = {0}, sz[XC_MAX_RANK] = {0}, o[XC_MAX_RANK];
      double sc[XC_MAX_RANK];
      for (int d = 0; d < rank; d++) in[d] = x->dims[d].value;
      for (int i = 0; i < p.num_axes; i++) sz[i] = elems[i].value;
      XC_RETURN_IF_ERROR(resize_sizes(n, &p, rank, in, NULL, sz, sc, o));
      for (int d = 0; d < rank; d++) out[d] = xc_dim_const(o[d]);
    } else {
      for (int i = 0; i < p.num_axes; i++) out[p.axes[i]] = xc_dim_fresh(g, "resize");
    }
  } else if (has_scales && n->inputs[2]->constant) {
    const xc_tensor_t* st = n->inputs[2]->constant;
    if (st->numel != p.num_axes)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "scales has %lld elements, expected %d",
                           (long long)st->numel, p.num_axes);
    for (int i = 0; i < p.num_axes; i++) {
      int d = p.axes[i];
      double s = xc_tensor_get_f64(st, i);
      if (!(s > 0) || !isfinite(s))
        return xc_node_error(n, XC_INVALID_ARGUMENT, "scale %g must be positive", s);
      if (xc_dim_is_static(x->dims[d])) {
        double o = floor(s * (double)x->dims[d].value);
        if (o > 9.0e15) return xc_node_error(n, XC_OUT_OF_RANGE, "output extent too large");
        out[d] = xc_dim_const((int64_t)o);
      } else if (s == floor(s) && s < 1e9) {
        out[d] = xc_dim_mul(g, x->dims[d], xc_dim_const((int64_t)s));
      } else {
        out[d] = xc_dim_fresh(g, "resize");
      }
    }
  } else {
    for (int i = 0; i < p.num_axes; i++) out[p.axes[i]] = xc_dim_fresh(g, "resize");
  }
  return xc_value_set_type(g, n->outputs[0], x->dtype, rank, out);
}

/* ---- taps ----------------------------------------------------------------- */

typedef struct axis_taps {
  int n;             /* taps per output coordinate */
  int64_t* index;    /* [out * n], clamped into [0, in) */
  double* weight;    /* [out * n] */
  bool* extrapolate; /* [out], tf_crop_and_resize outside the input */
} axis_taps_t;

static double cubic_kernel(double x, double a) {
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

/* Kernel value at distance x (in input pixels, already scaled when
 * antialiasing stretches the kernel). */
static double tap_weight(const resize_params_t* p, double x) {
  if (p->mode == RM_CUBIC) return cubic_kernel(x, p->cubic_a);
  return fmax(0.0, 1 - fabs(x));
}

/* Source coordinate of output coordinate y along one axis; *outside set for
 * tf_crop_and_resize points outside the input. */
static double source_coord(const resize_params_t* p, double y, double scale, int64_t in,
                           int64_t out, double roi_start, double roi_end, bool* outside) {
  double out_f = scale * (double)in; /* the unrounded output length */
  double x = 0;
  *outside = false;
  switch (p->coord) {
    case CT_ALIGN_CORNERS: x = out_f == 1 ? 0.0 : y * (double)(in - 1) / (out_f - 1); break;
    case CT_ASYMMETRIC: x = y / scale; break;
    case CT_TF_CROP_AND_RESIZE:
      if (out_f == 1)
        x = (roi_end - roi_start) * (double)(in - 1) / 2;
      else
        x = y * (roi_end - roi_start) * (double)(in - 1) / (out_f - 1);
      x += roi_start * (double)(in - 1);
      *outside = x < 0 || x > (double)(in - 1);
      break;
    case CT_PYTORCH_HALF_PIXEL: x = out_f == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
    case CT_HALF_PIXEL: x = (y + 0.5) / scale - 0.5; break;
    case CT_HALF_PIXEL_SYMMETRIC: {
      double adjustment = (double)out / out_f;
      double center = (double)in / 2;
      x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
      break;
    }
  }
  return x;
}

static void axis_taps_free(axis_taps_t* t) {
  free(t->index);
  free(t->weight);
  free(t->extrapolate);
}

static xc_status_t axis_taps_build(const resize_params_t* p, bool identity, int64_t in, int64_t out,
                                   double scale, double roi_start, double roi_end, axis_taps_t* t) {
  memset(t, 0, sizeof *t);
  int start = 0, n = 1;
  if (!identity && p->mode != RM_NEAREST) {
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    double reach = p->mode == RM_LINEAR ? 1.0 : 2.0;
    double st = floor(-reach / s) + 1;
    if (st < -4096) return xc_error(XC_UNSUPPORTED, "resize: antialias footprint too large");
    start = (int)st;
    n = 2 - 2 * start;
  }
  t->n = n;
  size_t cnt = (size_t)(out ? out : 1) * (size_t)n;
  t->index = malloc(cnt * sizeof *t->index);
  t->weight = malloc(cnt * sizeof *t->weight);
  t->extrapolate = calloc((size_t)(out ? out : 1), sizeof *t->extrapolate);
  if (!t->index || !t->weight || !t->extrapolate) {
    axis_taps_free(t);
    return xc_error_oom();
  }
  for (int64_t y = 0; y < out; y++) {
    int64_t* idx = t->index + y * n;
    double* w = t->weight + y * n;
    if (identity) {
      idx[0] = y;
      w[0] = 1.0;
      continue;
    }
    double x = source_coord(p, (double)y, scale, in, out, roi_start, roi_end, &t->extrapolate[y]);
    double fl = floor(x);
    /* base is the left neighbour and ratio in (0, 1]: an exact integer
     * coordinate counts as ratio 1 from the pixel before it. */
    double base_f = fl == x ? x - 1 : fl;
    double ratio = x - base_f;
    if (!isfinite(base_f) || fabs(base_f) > 1e15) base_f = 0, ratio = 1; /* degenerate */
    int64_t base = (int64_t)base_f;
    if (p->mode == RM_NEAREST) {
      bool up;
      if (ratio == 1.0)
        up = true;
      else if (p->nearest == NM_ROUND_PREFER_FLOOR)
        up = ratio > 0.5;
      else if (p->nearest == NM_ROUND_PREFER_CEIL)
        up = ratio >= 0.5;
      else
        up = p->nearest == NM_CEIL;
      int64_t i = up ? base + 1 : base;
      idx[0] = i < 0 ? 0 : (i >= in ? in - 1 : i);
      w[0] = 1.0;
      continue;
    }
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    double sum = 0;
    for (int k = 0; k < n; k++) {
      double dist = (double)(start + k) - ratio;
      /* Non-antialiased linear taps are exactly 1 - ratio and ratio. */
      double c = p->mode == RM_LINEAR && !p->antialias ? (k == 0 ? 1 - ratio : ratio)
                                                       : tap_weight(p, dist * s);
      int64_t i = base + start + k;
      if (p->exclude_outside && (i < 0 || i >= in)) c = 0;
      w[k] = c;
      sum += c;
      idx[k] = i < 0 ? 0 : (i >= in ? in - 1 : i);
    }
    if ((p->antialias || p->exclude_outside) && sum != 0)
      for (int k = 0; k < n; k++) w[k] /= sum;
  }
  return NULL;
}

/* ---- kernel ---------------------------------------------------------------- */

static xc_status_t float_list(const xc_tensor_t* t, int64_t want, const char* what,
                              const xc_node_t* n, double* out) {
  if (t->rank != 1 || t->numel != want)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s must be 1-D with %lld elements", what,
                         (long long)want);
  for (int64_t i = 0; i < want; i++) out[i] = xc_tensor_get_f64(t, i);
  return NULL;
}

static xc_status_t resize_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* roi_t = ctx->num_inputs > 1 ? ctx->inputs[1] : NULL;
  const xc_tensor_t* scales_t = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  const xc_tensor_t* sizes_t = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  if (roi_t && roi_t->numel == 0) roi_t = NULL;
  if (scales_t && scales_t->numel == 0) scales_t = NULL;
  if (sizes_t && sizes_t->numel == 0) sizes_t = NULL;
  int rank = x->rank;
  resize_params_t p;
  XC_RETURN_IF_ERROR(resize_params(n, rank, &p));
  if (!scales_t == !sizes_t)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "exactly one of scales and sizes must be given");
  if (p.mode != RM_NEAREST && !(XC_DT_NUMERIC & XC_DT(x->dtype)))
    return xc_node_error(n, XC_UNSUPPORTED, "interpolation of %s data", xc_dtype_name(x->dtype));
  double scales[XC_MAX_RANK], scale[XC_MAX_RANK];
  int64_t sizes[XC_MAX_RANK], out[XC_MAX_RANK];
  if (scales_t) XC_RETURN_IF_ERROR(float_list(scales_t, p.num_axes, "scales", n, scales));
  if (sizes_t) {
    if (sizes_t->rank != 1 || sizes_t->numel != p.num_axes || !xc_dtype_is_int(sizes_t->dtype))
      return xc_node_error(n, XC_INVALID_ARGUMENT, "sizes must be 1-D i64 with %d elements",
                           p.num_axes);
    for (int i = 0; i < p.num_axes; i++) sizes[i] = xc_tensor_get_i64(sizes_t, i);
  }
  XC_RETURN_IF_ERROR(resize_sizes(n, &p, rank, x->dims, scales_t ? scales : NULL,
                                  sizes_t ? sizes : NULL, scale, out));
  double roi[2 * XC_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    roi[d] = 0.0;
    roi[rank + d] = 1.0;
  }
  if (roi_t && p.coord == CT_TF_CROP_AND_RESIZE) {
    double r[2 * XC_MAX_RANK];
    XC_RETURN_IF_ERROR(float_list(roi_t, 2 * (int64_t)p.num_axes, "roi", n, r));
    for (int i = 0; i < p.num_axes; i++) {
      roi[p.axes[i]] = r[i];
      roi[rank + p.axes[i]] = r[p.num_axes + i];
    }
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, rank, out, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (y->numel == 0) return NULL;
  if (x->numel == 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "cannot resize an empty tensor to a non-empty one");

  axis_taps_t taps[XC_MAX_RANK];
  memset(taps, 0, sizeof taps);
  xc_status_t s = NULL;
  for (int d = 0; d < rank && !s; d++) {
    bool identity = out[d] == x->dims[d] && fabs(scale[d] - 1.0) <= 1e-9 &&
                    (p.coord != CT_TF_CROP_AND_RESIZE ||
                     (fabs(roi[d]) <= 1e-9 && fabs(roi[rank + d] - 1.0) <= 1e-9));
    s = axis_taps_build(&p, identity, x->dims[d], out[d], scale[d], roi[d], roi[rank + d],
                        &taps[d]);
  }
  if (!s) {
    int64_t xs[XC_MAX_RANK], oidx[XC_MAX_RANK] = {0}, tk[XC_MAX_RANK], tdims[XC_MAX_RANK];
    xc_strides(rank, x->dims, xs);
    for (int d = 0; d < rank; d++) tdims[d] = taps[d].n;
    size_t es = xc_dtype_size(x->dtype);
    for (int64_t o = 0; o < y->numel; o++, xc_index_next(rank, out, oidx)) {
      bool extrap = false;
      for (int d = 0; d < rank; d++) extrap = extrap || taps[d].extrapolate[oidx[d]];
      if (extrap) {
        xc_tensor_set_f64(y, o, p.extrapolation);
        continue;
      }
      if (p.mode == RM_NEAREST) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++) off += taps[d].index[oidx[d]] * xs[d];
        memcpy((char*)y->data + (size_t)o * es, (const char*)x->data + (size_t)off * es, es);
        continue;
      }
      double acc = 0;
      memset(tk, 0, sizeof tk);
      do {
        int64_t off = 0;
        double w = 1.0;
        for (int d = 0; d < rank; d++) {
          int64_t t = oidx[d] * taps[d].n + tk[d];
          off += taps[d].index[t] * xs[d];
          w *= taps[d].weight[t];
        }
        if (w != 0) acc += w * xc_tensor_get_f64(x, off);
      } while (xc_index_next(rank, tdims, tk));
      xc_tensor_set_f64(y, o, acc);
    }
  }
  for (int d = 0; d < rank; d++) axis_taps_free(&taps[d]);
  return s;
}

static const xc_attr_def_t resize_attrs[] = {
    XC_ATTR_I("antialias", 0),
    XC_ATTR_OPT("axes", XC_ATTR_INTS),
    XC_ATTR_S("coordinate_transformation_mode", "half_pixel"),
    XC_ATTR_F("cubic_coeff_a", -0.75),
    XC_ATTR_I("exclude_outside", 0),
    XC_ATTR_F("extrapolation_value", 0.0),
    XC_ATTR_S("keep_aspect_ratio_policy", "stretch"),
    XC_ATTR_S("mode", "nearest"),
    XC_ATTR_S("nearest_mode", "round_prefer_floor"),
    XC_ATTR_END,
};

const xc_op_def_t xc_ops_resize[] = {
    {"Resize", "", 1, 4, 1, 1, resize_attrs, XC_DT_ALL, resize_infer, resize_eval,
     "Resizes X by scales or to sizes: nearest, (bi/tri)linear or cubic interpolation."},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
