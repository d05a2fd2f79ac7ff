/* Resize lowering (nearest, linear, cubic; no antialias): a flat space over
 * the output (on a CPU, 2-D tiles: rows of the leading dims x the last dim,
 * each axis's coordinates once per row or column); for every resized axis the source coordinate of the output
 * index is computed in f64 by the coordinate transformation, giving a base
 * index and a ratio; nearest rounds by nearest_mode, linear/cubic take 2/4
 * taps with their weights (exclude_outside renormalizes). The output is the
 * weighted sum over the tensor product of the axes' taps, unrolled at
 * lowering time. Scales/sizes (and roi) must be constant and X static. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

enum { RM_NEAREST, RM_LINEAR, RM_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYMMETRIC, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC,
       CT_TF_CROP_AND_RESIZE };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL };

static int pick(const char* v, const char* const* names, int count) {
  for (int i = 0; v && i < count; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

static const int64_t blk_c[] = {64, 128, 256, 512}, bm_c[] = {1, 2, 4, 8, 16}, bn_c[] = {16, 32, 64, 128};

typedef struct taps {
  int n;
  lw_val_t* idx[4];
  lw_val_t* w[4];
} taps_t;

xc_status_t lw_emit_resize(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  static const char* const modes[] = {"nearest", "linear", "cubic"};
  static const char* const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                       "align_corners", "asymmetric", "tf_crop_and_resize"};
  static const char* const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  int mode = pick(xc_node_attr_string(n, "mode"), modes, 3);
  int coord = pick(xc_node_attr_string(n, "coordinate_transformation_mode"), coords, 6);
  int nearest = pick(xc_node_attr_string(n, "nearest_mode"), nearests, 4);
  const char* aspect = xc_node_attr_string(n, "keep_aspect_ratio_policy");
  if (mode < 0 || coord < 0 || nearest < 0) return lw_unsupported(c, n, "unknown mode");
  if (xc_node_attr_int(n, "antialias")) return lw_unsupported(c, n, "antialias");
  if (aspect && strcmp(aspect, "stretch") != 0) return lw_unsupported(c, n, "keep_aspect_ratio_policy");
  int rank = X->rank;
  if (rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", rank);
  for (int d = 0; d < rank; d++)
    if (!xc_dim_is_static(X->dims[d]) || !xc_dim_is_static(Y->dims[d])) return lw_unsupported(c, n, "symbolic dims");
  int axes[LW_MAX_RANK], na = rank;
  int64_t cnt = 0;
  const int64_t* av = xc_node_attr_ints(n, "axes", &cnt);
  if (av) {
    na = (int)cnt;
    for (int i = 0; i < na; i++) axes[i] = (int)(av[i] < 0 ? av[i] + rank : av[i]);
  } else {
    for (int i = 0; i < rank; i++) axes[i] = i;
  }
  const xc_value_t* roi_v = n->num_inputs > 1 ? n->inputs[1] : NULL;
  const xc_value_t* sc_v = n->num_inputs > 2 ? n->inputs[2] : NULL;
  const xc_value_t* sz_v = n->num_inputs > 3 ? n->inputs[3] : NULL;
  if (sc_v && sc_v->constant && sc_v->constant->numel == 0) sc_v = NULL;
  if (sz_v && sz_v->rank == 1 && xc_dim_is_static(sz_v->dims[0]) && sz_v->dims[0].value == 0) sz_v = NULL;
  double scale[LW_MAX_RANK], roi[2 * LW_MAX_RANK];
  for (int d = 0; d < rank; d++) scale[d] = 1.0, roi[d] = 0.0, roi[rank + d] = 1.0;
  if (sc_v) {
    if (!sc_v->constant || sc_v->constant->numel != na) return lw_unsupported(c, n, "scales are not constant");
    for (int i = 0; i < na; i++) scale[axes[i]] = xc_tensor_get_f64(sc_v->constant, i);
  } else {
    for (int i = 0; i < na; i++) {
      int d = axes[i];
      if (X->dims[d].value == 0) return lw_unsupported(c, n, "empty input");
      scale[d] = (double)Y->dims[d].value / (double)X->dims[d].value;
    }
  }
  if (coord == CT_TF_CROP_AND_RESIZE && roi_v) {
    if (!roi_v->constant || roi_v->constant->numel != 2 * na) return lw_unsupported(c, n, "roi is not constant");
    for (int i = 0; i < na; i++) {
      roi[axes[i]] = xc_tensor_get_f64(roi_v->constant, i);
      roi[rank + axes[i]] = xc_tensor_get_f64(roi_v->constant, na + i);
    }
  }
  bool excl = xc_node_attr_int(n, "exclude_outside") != 0;
  double ca = xc_node_attr_float(n, "cubic_coeff_a");
  bool interp = mode != RM_NEAREST;
  if (interp && !(xc_dtype_is_float(X->dtype) || xc_dtype_is_int(X->dtype))) return lw_unsupported(c, n, "dtype");
  xc_dtype_t F = XC_F64;
#define FC(v) lw_fconst(c, F, (v))
  /* On a CPU, tiles [BLOCK_M, BLOCK_N] of (the leading dims flattened) x
   * (the last dim): an axis's source coordinate, taps and weights are then
   * [BLOCK_M, 1] or [1, BLOCK_N], computed once per row or column of the
   * tile rather than per element (the flat form computed both axes' f64
   * coordinates, divisions included, for every output element: segformer's
   * decode-head upsamplings at 1 GB/s). Elsewhere the flat space. */
  lw_space_t sp;
  lw_val_t* amask[LW_MAX_RANK]; /* per axis: the mask its coordinate is computed under */
  lw_val_t* it0 = NULL, *it1 = NULL;
  int64_t W = Y->dims[rank - 1].value;
  if (lw_cpu_limits(c) && rank >= 2 && W >= 8) {
    int64_t P = 1;
    for (int d = 0; d < rank - 1; d++) P *= Y->dims[d].value;
    int64_t dbn = 16;
    while (dbn < W && dbn < 128) dbn *= 2;
    int kM = lw_knob(c, "BLOCK_M", 5, bm_c, 256 / dbn < 16 ? 256 / dbn : 16);
    int kN = lw_knob(c, "BLOCK_N", 4, bn_c, dbn);
    it0 = lw_iter_begin(c, 0, lw_dim(c, xc_dim_const(P)), kM, 0);
    it1 = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(W)), kN, 0);
    lw_val_t* rm = lw_add(c, it0, xc_tiled_arange(k, xc_tiled_dim_knob(kM)));
    lw_val_t* cn = lw_add(c, it1, xc_tiled_arange(k, xc_tiled_dim_knob(kN)));
    lw_val_t* mr = lw_col(c, lw_lt(c, rm, lw_i64(c, P))), *mc = lw_row(c, lw_lt(c, cn, lw_i64(c, W)));
    memset(&sp, 0, sizeof sp);
    sp.rank = rank;
    sp.dims = Y->dims;
    lw_val_t* lead[LW_MAX_RANK];
    lw_decompose(c, rm, rank - 1, Y->dims, lead);
    for (int d = 0; d < rank - 1; d++) sp.idx[d] = lw_col(c, lead[d]), amask[d] = mr;
    sp.idx[rank - 1] = lw_row(c, cn), amask[rank - 1] = mc;
    sp.mask = lw_and(c, mr, mc);
  } else {
    int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
    it0 = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
    lw_flat_space(c, Y->rank, Y->dims, it0, kb, &sp, NULL);
    for (int d = 0; d < rank; d++) amask[d] = sp.mask;
  }
  taps_t tp[LW_MAX_RANK];
  lw_val_t* extrap = NULL;
  for (int d = 0; d < rank; d++) {
    int64_t in = X->dims[d].value, out = Y->dims[d].value;
    bool identity = out == in && fabs(scale[d] - 1.0) <= 1e-9 &&
                    (coord != CT_TF_CROP_AND_RESIZE || (fabs(roi[d]) <= 1e-9 && fabs(roi[rank + d] - 1.0) <= 1e-9));
    if (identity) {
      tp[d].n = 1, tp[d].idx[0] = sp.idx[d], tp[d].w[0] = NULL;
      continue;
    }
    double s = scale[d], out_f = s * (double)in;
    lw_val_t* y = lw_cast_to(c, sp.idx[d], F);
    lw_val_t* x = NULL;
    switch (coord) {
      case CT_ALIGN_CORNERS:
        x = out_f == 1 ? FC(0) : lw_mul(c, y, FC((double)(in - 1) / (out_f - 1)));
        break;
      case CT_ASYMMETRIC: x = lw_div(c, y, FC(s)); break;
      case CT_TF_CROP_AND_RESIZE: {
        double r0 = roi[d], r1 = roi[rank + d];
        if (out_f == 1) x = FC((r1 - r0) * (double)(in - 1) / 2);
        else x = lw_mul(c, y, FC((r1 - r0) * (double)(in - 1) / (out_f - 1)));
        x = lw_add(c, x, FC(r0 * (double)(in - 1)));
        lw_val_t* o = xc_tiled_binary(k, XC_TOP_OR, lw_lt(c, x, FC(0)), xc_tiled_cmp(k, XC_CMP_GT, x, FC((double)(in - 1))));
        extrap = extrap ? xc_tiled_binary(k, XC_TOP_OR, extrap, o) : o;
        break;
      }
      case CT_PYTORCH_HALF_PIXEL:
        x = out_f == 1 ? FC(-0.5) : lw_sub(c, lw_div(c, lw_add(c, y, FC(0.5)), FC(s)), FC(0.5));
        break;
      case CT_HALF_PIXEL: x = lw_sub(c, lw_div(c, lw_add(c, y, FC(0.5)), FC(s)), FC(0.5)); break;
      default: {
        double adj = (double)out / out_f, center = (double)in / 2;
        x = lw_add(c, FC(center * (1 - adj)), lw_sub(c, lw_div(c, lw_add(c, y, FC(0.5)), FC(s)), FC(0.5)));
      }
    }
    x = xc_tiled_select(k, amask[d], x, FC(0)); /* masked lanes stay finite */
    lw_val_t* fl = xc_tiled_unary(k, XC_TOP_FLOOR, x);
    /* An integral x takes base x - 1 and ratio exactly 1 (a C compiler may
     * contract the recomputed x - base into an fma, which would not give 1). */
    lw_val_t* exact = xc_tiled_cmp(k, XC_CMP_EQ, fl, x);
    lw_val_t* base_f = xc_tiled_select(k, exact, lw_sub(c, fl, FC(1)), fl);
    lw_val_t* ratio = xc_tiled_select(k, exact, FC(1), lw_sub(c, x, fl));
    lw_val_t* base = lw_cast_to(c, base_f, XC_I64);
    lw_val_t* lo = lw_i64(c, 0), *hi = lw_i64(c, in - 1);
    if (mode == RM_NEAREST) {
      lw_val_t* up;
      lw_val_t* one = xc_tiled_cmp(k, XC_CMP_EQ, ratio, FC(1));
      if (nearest == NM_ROUND_PREFER_FLOOR) up = xc_tiled_cmp(k, XC_CMP_GT, ratio, FC(0.5));
      else if (nearest == NM_ROUND_PREFER_CEIL) up = xc_tiled_cmp(k, XC_CMP_GE, ratio, FC(0.5));
      else up = xc_tiled_cmp(k, nearest == NM_CEIL ? XC_CMP_EQ : XC_CMP_NE, ratio, ratio);
      up = xc_tiled_binary(k, XC_TOP_OR, up, one);
      lw_val_t* i = xc_tiled_select(k, up, lw_add(c, base, lw_i64(c, 1)), base);
      tp[d].n = 1;
      tp[d].idx[0] = xc_tiled_binary(k, XC_TOP_MAX, lo, xc_tiled_binary(k, XC_TOP_MIN, i, hi));
      tp[d].w[0] = NULL;
      continue;
    }
    int st = mode == RM_LINEAR ? 0 : -1, nt = 2 - 2 * st;
    tp[d].n = nt;
    lw_val_t* sum = NULL;
    for (int t = 0; t < nt; t++) {
      lw_val_t* w;
      if (mode == RM_LINEAR) {
        w = t == 0 ? lw_sub(c, FC(1), ratio) : ratio;
      } else { /* cubic kernel at |dist| */
        lw_val_t* dx = xc_tiled_unary(k, XC_TOP_ABS, lw_sub(c, FC((double)(st + t)), ratio));
        lw_val_t* near = lw_add(c, lw_mul(c, lw_sub(c, lw_mul(c, FC(ca + 2), dx), FC(ca + 3)), lw_mul(c, dx, dx)), FC(1));
        lw_val_t* far = lw_sub(c, lw_mul(c, lw_add(c, lw_mul(c, lw_sub(c, lw_mul(c, FC(ca), dx), FC(5 * ca)), dx), FC(8 * ca)), dx),
                               FC(4 * ca));
        w = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_LE, dx, FC(1)), near,
                            xc_tiled_select(k, lw_lt(c, dx, FC(2)), far, FC(0)));
      }
      lw_val_t* i = lw_add(c, base, lw_i64(c, st + t));
      if (excl)
        w = xc_tiled_select(k, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, i, lo), xc_tiled_cmp(k, XC_CMP_LE, i, hi)), w, FC(0));
      sum = sum ? lw_add(c, sum, w) : w;
      tp[d].w[t] = w;
      tp[d].idx[t] = xc_tiled_binary(k, XC_TOP_MAX, lo, xc_tiled_binary(k, XC_TOP_MIN, i, hi));
    }
    if (excl) {
      lw_val_t* nz = xc_tiled_cmp(k, XC_CMP_NE, sum, FC(0));
      for (int t = 0; t < nt; t++)
        tp[d].w[t] = xc_tiled_select(k, nz, lw_div(c, tp[d].w[t], xc_tiled_select(k, nz, sum, FC(1))), tp[d].w[t]);
    }
  }
  /* tensor product of the taps */
  int combos = 1;
  for (int d = 0; d < rank; d++) combos *= tp[d].n;
  if (combos > 256) return lw_unsupported(c, n, "too many taps");
  lw_val_t* acc = NULL;
  for (int cmb = 0; cmb < combos; cmb++) {
    lw_space_t sx = sp;
    lw_val_t* w = NULL;
    int rem = cmb;
    for (int d = rank - 1; d >= 0; d--) {
      int t = rem % tp[d].n;
      rem /= tp[d].n;
      sx.idx[d] = tp[d].idx[t];
      if (tp[d].w[t]) w = w ? lw_mul(c, w, tp[d].w[t]) : tp[d].w[t];
    }
    lw_val_t* v = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), sp.mask, NULL);
    if (!interp) {
      acc = v;
      break;
    }
    v = lw_cast_to(c, v, F);
    if (w) v = lw_mul(c, v, w);
    acc = acc ? lw_add(c, acc, v) : v;
  }
  if (extrap)
    acc = xc_tiled_select(k, extrap, lw_cast_to(c, FC(xc_node_attr_float(n, "extrapolation_value")), acc->type.dtype), acc);
#undef FC
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, acc));
  if (it1) lw_iter_end(c, it1);
  lw_iter_end(c, it0);
  return NULL;
}
