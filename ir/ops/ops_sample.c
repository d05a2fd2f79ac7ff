/* GridSample (opset 22, N-D), AffineGrid (opset 20) and RoiAlign (opset 16),
 * listed in the 'conv' family table (ops_conv.c): spatial sampling of an
 * image at normalized coordinates, the affine grids that usually feed it,
 * and pooling of bilinear samples over regions.
 *
 * GridSample: grid[n, o..., :] holds coordinates in [-1, 1] ordered from the
 * innermost spatial dim outwards (x = width first). align_corners=1 maps -1
 * and 1 to the centers of the corner pixels, 0 to their outer edges.
 * Interpolation (nearest, linear, cubic with Keys' a = -0.75) is separable:
 * the value is a sum over the tap combinations of the product of the per-dim
 * weights, each tap resolved by padding_mode (zeros, border, reflection). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_sample.h"

const xc_attr_def_t xc_grid_sample_attrs[] = {
    XC_ATTR_I("align_corners", 0),
    XC_ATTR_S("mode", "linear"),
    XC_ATTR_S("padding_mode", "zeros"),
    XC_ATTR_END,
};

const xc_attr_def_t xc_roi_align_attrs[] = {
    XC_ATTR_S("coordinate_transformation_mode", "half_pixel"),
    XC_ATTR_S("mode", "avg"),
    XC_ATTR_I("output_height", 1),
    XC_ATTR_I("output_width", 1),
    XC_ATTR_I("sampling_ratio", 0),
    XC_ATTR_F("spatial_scale", 1.0),
    XC_ATTR_END,
};

const xc_attr_def_t xc_affine_grid_attrs[] = {
    XC_ATTR_I("align_corners", 0),
    XC_ATTR_END,
};

enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC };
enum { PADDING_ZEROS, PADDING_BORDER, PADDING_REFLECTION };

static xc_status_t read_modes(const xc_node_t* n, int* mode, int* padding) {
  const char* m = xc_node_attr_string(n, "mode");
  const char* p = xc_node_attr_string(n, "padding_mode");
  if (!strcmp(m, "nearest"))
    *mode = MODE_NEAREST;
  else if (!strcmp(m, "linear") || !strcmp(m, "bilinear"))
    *mode = MODE_LINEAR;
  else if (!strcmp(m, "cubic") || !strcmp(m, "bicubic"))
    *mode = MODE_CUBIC;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown mode '%s'", m);
  if (!strcmp(p, "zeros"))
    *padding = PADDING_ZEROS;
  else if (!strcmp(p, "border"))
    *padding = PADDING_BORDER;
  else if (!strcmp(p, "reflection"))
    *padding = PADDING_REFLECTION;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown padding_mode '%s'", p);
  return NULL;
}

xc_status_t xc_grid_sample_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  int mode, padding;
  XC_RETURN_IF_ERROR(read_modes(n, &mode, &padding));
  const xc_value_t *x = n->inputs[0], *grid = n->inputs[1];
  if (x->rank < 3 || grid->rank != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "X must be [N, C, spatial...] and grid [N, out spatial..., %d]",
                         x->rank - 2);
  xc_dim_t last = grid->dims[grid->rank - 1];
  if (!last.sym && last.value != x->rank - 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "grid's last dim is %lld, expected %d",
                         (long long)last.value, x->rank - 2);
  if (!x->dims[0].sym && !grid->dims[0].sym && x->dims[0].value != grid->dims[0].value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "batch of X and grid differ");
  xc_dim_t out[XC_MAX_RANK];
  out[0] = x->dims[0];
  out[1] = x->dims[1];
  for (int i = 1; i < grid->rank - 1; i++) out[i + 1] = grid->dims[i];
  return xc_value_set_type(g, n->outputs[0], x->dtype, x->rank, out);
}

/* Reflects x into [lo, hi] by folding at the borders. */
static double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double k = floor(dx / rng), r = dx - k * rng;
    return fmod(k, 2) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double k = floor(dx / rng), r = dx - k * rng;
    return fmod(k, 2) == 0 ? hi - r : lo + r;
  }
  return x;
}

/* Resolves an integer tap index along a dim of size `size`; -1 = zero. */
static int64_t resolve_tap(int64_t i, int64_t size, int padding, double lo, double hi) {
  if (padding == PADDING_ZEROS) return (i >= 0 && i < size) ? i : -1;
  if (padding == PADDING_BORDER) return i < 0 ? 0 : i >= size ? size - 1 : i;
  int64_t r = (int64_t)reflect((double)i, lo, hi);
  return r < 0 ? 0 : r >= size ? size - 1 : r;
}

static void cubic_coeffs(double t, double* c) {
  const double a = -0.75;
  double x = fabs(t);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

xc_status_t xc_grid_sample_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *grid = ctx->inputs[1];
  int mode, padding;
  XC_RETURN_IF_ERROR(read_modes(n, &mode, &padding));
  bool align = xc_node_attr_int(n, "align_corners") != 0;
  int nsp = x->rank - 2;
  if (x->rank < 3 || grid->rank != x->rank || grid->dims[grid->rank - 1] != nsp ||
      grid->dims[0] != x->dims[0])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "X and grid shapes do not match");
  int64_t dims[XC_MAX_RANK], out_sp[XC_MAX_RANK], out_plane = 1, in_plane = 1;
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int i = 0; i < nsp; i++) {
    dims[2 + i] = out_sp[i] = grid->dims[1 + i];
    out_plane *= out_sp[i];
    in_plane *= x->dims[2 + i];
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, dims, &ctx->outputs[0]));
  const int64_t* size = x->dims + 2;
  int64_t in_strides[XC_MAX_RANK];
  xc_strides(nsp, size, in_strides);
  int taps = mode == MODE_NEAREST ? 1 : mode == MODE_LINEAR ? 2 : 4;
  int64_t combos = 1;
  for (int i = 0; i < nsp; i++) combos *= taps;
  /* Per dim: the tap indices (resolved, -1 = zero) and their weights. */
  int64_t idx[XC_MAX_RANK][4];
  double wt[XC_MAX_RANK][4];
  for (int64_t b = 0; b < x->dims[0]; b++)
    for (int64_t o = 0; o < out_plane; o++) {
      for (int d = 0; d < nsp; d++) {
        /* grid's last axis runs from the innermost dim outwards */
        double v = xc_tensor_get_f64(grid, (b * out_plane + o) * nsp + (nsp - 1 - d));
        double sz = (double)size[d];
        double p = align ? (v + 1) / 2 * (sz - 1) : ((v + 1) * sz - 1) / 2;
        double lo = align ? 0 : -0.5, hi = align ? sz - 1 : sz - 0.5;
        if (mode == MODE_NEAREST) p = nearbyint(p);
        if (p < lo || p > hi) {
          if (padding == PADDING_BORDER)
            p = p < 0 ? 0 : p > sz - 1 ? sz - 1 : p;
          else if (padding == PADDING_REFLECTION)
            p = reflect(p, lo, hi);
        }
        if (mode == MODE_NEAREST) {
          idx[d][0] = resolve_tap((int64_t)p, size[d], padding, lo, hi);
          wt[d][0] = 1;
        } else {
          double f = floor(p), t = p - f;
          int64_t base = (int64_t)f - (mode == MODE_CUBIC ? 1 : 0);
          if (mode == MODE_LINEAR) {
            wt[d][0] = 1 - t;
            wt[d][1] = t;
          } else {
            cubic_coeffs(t, wt[d]);
          }
          for (int k = 0; k < taps; k++)
            idx[d][k] = resolve_tap(base + k, size[d], padding, lo, hi);
        }
      }
      for (int64_t ch = 0; ch < x->dims[1]; ch++) {
        int64_t plane = (b * x->dims[1] + ch) * in_plane;
        double acc = 0;
        for (int64_t cmb = 0; cmb < combos; cmb++) {
          int64_t rest = cmb, off = 0;
          double w = 1;
          for (int d = nsp - 1; d >= 0 && off >= 0; d--) {
            int k = (int)(rest % taps);
            rest /= taps;
            if (idx[d][k] < 0)
              off = -1;
            else
              off += idx[d][k] * in_strides[d], w *= wt[d][k];
          }
          if (off >= 0 && w != 0) acc += w * xc_tensor_get_f64(x, plane + off);
        }
        xc_tensor_set_f64(ctx->outputs[0], (b * x->dims[1] + ch) * out_plane + o, acc);
      }
    }
  return NULL;
}

/* ---- AffineGrid --------------------------------------------------------- */

xc_status_t xc_affine_grid_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  const xc_value_t *theta = n->inputs[0], *size = n->inputs[1];
  if (theta->rank != 3 || size->rank != 1 || size->dims[0].sym ||
      (size->dims[0].value != 4 && size->dims[0].value != 5))
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "theta must be [N, 2, 3] or [N, 3, 4] and size have 4 or 5 values");
  int nsp = (int)size->dims[0].value - 2;
  if ((!theta->dims[1].sym && theta->dims[1].value != nsp) ||
      (!theta->dims[2].sym && theta->dims[2].value != nsp + 1))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "theta must be [N, %d, %d] for %d-D sizes", nsp,
                         nsp + 1, nsp);
  xc_dim_t out[5];
  int64_t count;
  const xc_dim_t* known;
  out[0] = theta->dims[0];
  if (xc_value_known_elems(g, size, &count, &known) && count == nsp + 2) {
    for (int i = 0; i < nsp; i++) out[1 + i] = known[2 + i];
  } else {
    for (int i = 0; i < nsp; i++) out[1 + i] = xc_dim_fresh(g, "grid");
  }
  out[1 + nsp] = xc_dim_const(nsp);
  return xc_value_set_type(g, n->outputs[0], theta->dtype, nsp + 2, out);
}

xc_status_t xc_affine_grid_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* theta = ctx->inputs[0];
  int64_t count, *size;
  XC_RETURN_IF_ERROR(xc_tensor_to_i64_list(ctx->inputs[1], &count, &size));
  int nsp = (int)count - 2;
  xc_status_t s = NULL;
  if ((count != 4 && count != 5) || theta->rank != 3 || theta->dims[1] != nsp ||
      theta->dims[2] != nsp + 1 || size[0] != theta->dims[0])
    s = xc_node_error(n, XC_INVALID_ARGUMENT, "theta and size do not match");
  int64_t dims[5], sp[3], plane = 1;
  bool align = xc_node_attr_int(n, "align_corners") != 0;
  if (!s) {
    dims[0] = theta->dims[0];
    for (int i = 0; i < nsp; i++) {
      sp[i] = dims[1 + i] = size[2 + i];
      if (sp[i] < 0)
        s = xc_node_error(n, XC_INVALID_ARGUMENT, "negative size");
      else
        plane *= sp[i];
    }
    dims[1 + nsp] = nsp;
  }
  free(size);
  if (!s) s = xc_tensor_create(theta->dtype, nsp + 2, dims, &ctx->outputs[0]);
  if (s) return s;
  int64_t pos[3] = {0, 0, 0};
  for (int64_t b = 0; b < dims[0]; b++) {
    memset(pos, 0, sizeof pos);
    for (int64_t p = 0; p < plane; p++) {
      /* Homogeneous base point (x, y[, z], 1): x runs over the last dim. */
      double base[4];
      for (int k = 0; k < nsp; k++) {
        int d = nsp - 1 - k;
        double s_d = (double)sp[d], i = (double)pos[d];
        base[k] = align ? (sp[d] > 1 ? -1 + 2 * i / (s_d - 1) : -1) : -1 + (2 * i + 1) / s_d;
      }
      base[nsp] = 1;
      for (int r = 0; r < nsp; r++) {
        double acc = 0;
        for (int k = 0; k <= nsp; k++)
          acc += xc_tensor_get_f64(theta, (b * nsp + r) * (nsp + 1) + k) * base[k];
        xc_tensor_set_f64(ctx->outputs[0], (b * plane + p) * nsp + r, acc);
      }
      xc_index_next(nsp, sp, pos);
    }
  }
  return NULL;
}

/* ---- RoiAlign ----------------------------------------------------------- */

/* RoiAlign: for every region (x1, y1, x2, y2 scaled by spatial_scale, shifted
 * by half a pixel in half_pixel mode) and output bin, bilinear samples on a
 * sampling_ratio grid (or ceil(bin size) per axis) are averaged, or their
 * largest weighted corner kept in max mode, as ONNX Runtime does. Samples
 * more than one pixel outside the image count as zero. */

static xc_status_t roi_align_attrs_of(const xc_node_t* n, bool* half_pixel, bool* max_mode,
                                      int64_t* oh, int64_t* ow) {
  const char* ct = xc_node_attr_string(n, "coordinate_transformation_mode");
  const char* m = xc_node_attr_string(n, "mode");
  if (!strcmp(ct, "half_pixel"))
    *half_pixel = true;
  else if (!strcmp(ct, "output_half_pixel"))
    *half_pixel = false;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown coordinate_transformation_mode '%s'", ct);
  if (!strcmp(m, "avg"))
    *max_mode = false;
  else if (!strcmp(m, "max"))
    *max_mode = true;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown mode '%s'", m);
  *oh = xc_node_attr_int(n, "output_height");
  *ow = xc_node_attr_int(n, "output_width");
  if (*oh < 1 || *ow < 1 || *oh > INT32_MAX || *ow > INT32_MAX)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "output_height/output_width must be positive");
  if (xc_node_attr_int(n, "sampling_ratio") < 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "sampling_ratio must be >= 0");
  return NULL;
}

xc_status_t xc_roi_align_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT(XC_I64) | XC_DT(XC_I32)));
  const xc_value_t *x = n->inputs[0], *rois = n->inputs[1], *bi = n->inputs[2];
  bool half, mx;
  int64_t oh, ow;
  XC_RETURN_IF_ERROR(roi_align_attrs_of(n, &half, &mx, &oh, &ow));
  if (x->rank != 4 || rois->rank != 2 || bi->rank != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "X must be 4-D, rois [num_rois, 4] and batch_indices [num_rois]");
  if (!rois->dims[1].sym && rois->dims[1].value != 4)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "rois must have 4 columns");
  if (!rois->dims[0].sym && !bi->dims[0].sym && rois->dims[0].value != bi->dims[0].value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "rois and batch_indices counts differ");
  xc_dim_t out[4] = {rois->dims[0], x->dims[1], xc_dim_const(oh), xc_dim_const(ow)};
  return xc_value_set_type(g, n->outputs[0], x->dtype, 4, out);
}

xc_status_t xc_roi_align_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *rois = ctx->inputs[1], *bi = ctx->inputs[2];
  bool half, max_mode;
  int64_t oh, ow;
  XC_RETURN_IF_ERROR(roi_align_attrs_of(n, &half, &max_mode, &oh, &ow));
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
      bi->dims[0] != rois->dims[0])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "X, rois and batch_indices shapes do not match");
  int64_t nr = rois->dims[0], c = x->dims[1], hgt = x->dims[2], wid = x->dims[3];
  double scale = xc_node_attr_float(n, "spatial_scale");
  int64_t ratio = xc_node_attr_int(n, "sampling_ratio");
  int64_t dims[4] = {nr, c, oh, ow};
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, 4, dims, &ctx->outputs[0]));
  for (int64_t r = 0; r < nr; r++) {
    int64_t b = xc_tensor_get_i64(bi, r);
    if (b < 0 || b >= x->dims[0])
      return xc_node_error(n, XC_OUT_OF_RANGE, "batch index %lld is outside [0, %lld)",
                           (long long)b, (long long)x->dims[0]);
    double off = half ? 0.5 : 0.0;
    double x1 = xc_tensor_get_f64(rois, r * 4 + 0) * scale - off;
    double y1 = xc_tensor_get_f64(rois, r * 4 + 1) * scale - off;
    double x2 = xc_tensor_get_f64(rois, r * 4 + 2) * scale - off;
    double y2 = xc_tensor_get_f64(rois, r * 4 + 3) * scale - off;
    double rw = x2 - x1, rh = y2 - y1;
    if (!half) {
      if (rw < 1) rw = 1;
      if (rh < 1) rh = 1;
    }
    double bh = rh / (double)oh, bw = rw / (double)ow;
    double gh_d = ratio > 0 ? (double)ratio : ceil(rh / (double)oh);
    double gw_d = ratio > 0 ? (double)ratio : ceil(rw / (double)ow);
    int64_t gh = gh_d > 0 && gh_d < 1e6 ? (int64_t)gh_d : 0;
    int64_t gw = gw_d > 0 && gw_d < 1e6 ? (int64_t)gw_d : 0;
    double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
    for (int64_t ch = 0; ch < c; ch++) {
      int64_t plane = (b * c + ch) * hgt * wid;
      for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++) {
          double acc = 0;
          bool have = false;
          for (int64_t iy = 0; iy < gh; iy++)
            for (int64_t ix = 0; ix < gw; ix++) {
              double yy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
              double xx = x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double v[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > (double)hgt || xx < -1.0 || xx > (double)wid)) {
                if (yy < 0) yy = 0;
                if (xx < 0) xx = 0;
                int64_t ylo = (int64_t)yy, xlo = (int64_t)xx, yhi, xhi;
                if (ylo >= hgt - 1)
                  yhi = ylo = hgt - 1, yy = (double)ylo;
                else
                  yhi = ylo + 1;
                if (xlo >= wid - 1)
                  xhi = xlo = wid - 1, xx = (double)xlo;
                else
                  xhi = xlo + 1;
                double ly = yy - (double)ylo, lx = xx - (double)xlo, hy = 1 - ly, hx = 1 - lx;
                v[0] = hy * hx * xc_tensor_get_f64(x, plane + ylo * wid + xlo);
                v[1] = hy * lx * xc_tensor_get_f64(x, plane + ylo * wid + xhi);
                v[2] = ly * hx * xc_tensor_get_f64(x, plane + yhi * wid + xlo);
                v[3] = ly * lx * xc_tensor_get_f64(x, plane + yhi * wid + xhi);
              }
              if (max_mode) {
                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                acc = have ? fmax(acc, m) : m;
                have = true;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          if (!max_mode) acc /= count;
          xc_tensor_set_f64(ctx->outputs[0], ((r * c + ch) * oh + ph) * ow + pw, acc);
        }
    }
  }
  return NULL;
}
