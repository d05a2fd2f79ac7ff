/* GridSample lowering: a flat space over the output [N, C, out...]; per
 * spatial dim the grid coordinate is unnormalized (align_corners), padded
 * (border clamps, reflection folds at the borders) and turned into 1, 2 or 4
 * taps (nearest rounds half to even, linear, cubic with a = -0.75); the
 * output is the weighted sum over the tensor product of the taps, taps
 * outside the input reading zero with zeros padding. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs {
  lw_ctx_t* c;
  xc_dtype_t F;
} gs_t;

static lw_val_t* fc(gs_t* s, double v) { return lw_fconst(s->c, s->F, v); }
static lw_val_t* sel(gs_t* s, lw_val_t* cond, lw_val_t* a, lw_val_t* b) { return xc_tiled_select(s->c->k, cond, a, b); }
static lw_val_t* cmp(gs_t* s, xc_tiled_cmp_t op, lw_val_t* a, lw_val_t* b) { return xc_tiled_cmp(s->c->k, op, a, b); }

static lw_val_t* floor_(gs_t* s, lw_val_t* x) { return xc_tiled_unary(s->c->k, XC_TOP_FLOOR, x); }

/* x folded into [lo, hi] (lo, hi f64 tiles or scalars). */
static lw_val_t* reflect(gs_t* s, lw_val_t* x, lw_val_t* lo, lw_val_t* hi) {
  lw_ctx_t* c = s->c;
  lw_val_t* rng = lw_sub(c, hi, lo);
  lw_val_t* rs = sel(s, cmp(s, XC_CMP_GT, rng, fc(s, 0)), rng, fc(s, 1));
  lw_val_t* dxl = lw_sub(c, lo, x), *dxh = lw_sub(c, x, hi);
  lw_val_t* kl = floor_(s, lw_div(c, dxl, rs)), *kh = floor_(s, lw_div(c, dxh, rs));
  lw_val_t* rl = lw_sub(c, dxl, lw_mul(c, kl, rs)), *rh = lw_sub(c, dxh, lw_mul(c, kh, rs));
  lw_val_t* evl = cmp(s, XC_CMP_EQ, xc_tiled_binary(c->k, XC_TOP_REM, kl, fc(s, 2)), fc(s, 0));
  lw_val_t* evh = cmp(s, XC_CMP_EQ, xc_tiled_binary(c->k, XC_TOP_REM, kh, fc(s, 2)), fc(s, 0));
  lw_val_t* below = sel(s, evl, lw_add(c, lo, rl), lw_sub(c, hi, rl));
  lw_val_t* above = sel(s, evh, lw_sub(c, hi, rh), lw_add(c, lo, rh));
  lw_val_t* r = sel(s, lw_lt(c, x, lo), below, sel(s, cmp(s, XC_CMP_GT, x, hi), above, x));
  return sel(s, cmp(s, XC_CMP_LE, rng, fc(s, 0)), lo, r);
}

/* Resolved tap index (i64) and whether it reads (zeros padding outside). */
static lw_val_t* resolve(gs_t* s, int padding, lw_val_t* i, lw_val_t* size, lw_val_t* lo, lw_val_t* hi,
                         lw_val_t** ok) {
  lw_ctx_t* c = s->c;
  lw_val_t* zero = lw_i64(c, 0), *last = lw_sub(c, size, lw_i64(c, 1));
  *ok = NULL;
  if (padding == GS_ZEROS) {
    *ok = lw_and(c, cmp(s, XC_CMP_GE, i, zero), lw_lt(c, i, size));
    return i;
  }
  if (padding == GS_REFLECTION) i = lw_cast_to(c, reflect(s, lw_cast_to(c, i, s->F), lo, hi), XC_I64);
  return xc_tiled_binary(c->k, XC_TOP_MAX, zero, xc_tiled_binary(c->k, XC_TOP_MIN, i, last));
}

xc_status_t lw_emit_grid_sample(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *G = n->inputs[1], *Y = n->outputs[0];
  const char* m = xc_node_attr_string(n, "mode");
  const char* p = xc_node_attr_string(n, "padding_mode");
  int mode = !strcmp(m, "nearest") ? GS_NEAREST
             : (!strcmp(m, "linear") || !strcmp(m, "bilinear")) ? GS_LINEAR
             : (!strcmp(m, "cubic") || !strcmp(m, "bicubic")) ? GS_CUBIC : -1;
  int padding = !strcmp(p, "zeros") ? GS_ZEROS : !strcmp(p, "border") ? GS_BORDER
                : !strcmp(p, "reflection") ? GS_REFLECTION : -1;
  if (mode < 0 || padding < 0) return lw_unsupported(c, n, "mode");
  bool align = xc_node_attr_int(n, "align_corners") != 0;
  int nsp = X->rank - 2;
  if (nsp < 1 || X->rank > LW_MAX_RANK || G->rank != X->rank) return lw_unsupported(c, n, "shapes");
  int taps = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4;
  int combos = 1;
  for (int d = 0; d < nsp; d++) combos *= taps;
  if (combos > 256) return lw_unsupported(c, n, "too many taps");
  gs_t S = {c, XC_F64};
  gs_t* s = &S;
  static const int64_t blk_c[] = {64, 128, 256, 512};
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* tidx[LW_MAX_RANK][4];
  lw_val_t* tok[LW_MAX_RANK][4];
  lw_val_t* tw[LW_MAX_RANK][4];
  for (int d = 0; d < nsp; d++) {
    lw_space_t sg;
    memset(&sg, 0, sizeof sg);
    sg.rank = G->rank;
    sg.idx[0] = sp.idx[0];
    for (int i = 0; i < nsp; i++) sg.idx[1 + i] = sp.idx[2 + i];
    sg.idx[G->rank - 1] = lw_i64(c, nsp - 1 - d); /* innermost dim first */
    lw_val_t* v = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, G), lw_offset(c, &sg, G), sp.mask, NULL), s->F);
    lw_val_t* size = lw_dim(c, X->dims[2 + d]).v;
    lw_val_t* sz = lw_cast_to(c, size, s->F);
    lw_val_t* pc = align ? lw_mul(c, lw_div(c, lw_add(c, v, fc(s, 1)), fc(s, 2)), lw_sub(c, sz, fc(s, 1)))
                         : lw_div(c, lw_sub(c, lw_mul(c, lw_add(c, v, fc(s, 1)), sz), fc(s, 1)), fc(s, 2));
    lw_val_t* lo = align ? fc(s, 0) : fc(s, -0.5);
    lw_val_t* hi = align ? lw_sub(c, sz, fc(s, 1)) : lw_sub(c, sz, fc(s, 0.5));
    if (mode == GS_NEAREST) { /* round half to even */
      lw_val_t* r = floor_(s, lw_add(c, pc, fc(s, 0.5)));
      lw_val_t* tie = cmp(s, XC_CMP_EQ, lw_sub(c, r, pc), fc(s, 0.5));
      lw_val_t* odd = cmp(s, XC_CMP_NE, xc_tiled_binary(k, XC_TOP_REM, r, fc(s, 2)), fc(s, 0));
      pc = sel(s, lw_and(c, tie, odd), lw_sub(c, r, fc(s, 1)), r);
    }
    pc = sel(s, sp.mask, pc, fc(s, 0)); /* masked lanes stay finite */
    lw_val_t* outside = xc_tiled_binary(k, XC_TOP_OR, lw_lt(c, pc, lo), cmp(s, XC_CMP_GT, pc, hi));
    if (padding == GS_BORDER)
      pc = sel(s, outside, xc_tiled_binary(k, XC_TOP_MAX, fc(s, 0), xc_tiled_binary(k, XC_TOP_MIN, pc, lw_sub(c, sz, fc(s, 1)))), pc);
    else if (padding == GS_REFLECTION)
      pc = sel(s, outside, reflect(s, pc, lo, hi), pc);
    if (mode == GS_NEAREST) {
      tidx[d][0] = resolve(s, padding, lw_cast_to(c, pc, XC_I64), size, lo, hi, &tok[d][0]);
      tw[d][0] = NULL;
      continue;
    }
    lw_val_t* f = floor_(s, pc), *t = lw_sub(c, pc, f);
    lw_val_t* base = lw_sub(c, lw_cast_to(c, f, XC_I64), lw_i64(c, mode == GS_CUBIC ? 1 : 0));
    if (mode == GS_LINEAR) {
      tw[d][0] = lw_sub(c, fc(s, 1), t);
      tw[d][1] = t;
    } else {
      const double a = -0.75;
      lw_val_t* x = xc_tiled_unary(k, XC_TOP_ABS, t);
      lw_val_t* x1 = lw_add(c, x, fc(s, 1)), *x2 = lw_sub(c, fc(s, 1), x), *x3 = lw_sub(c, fc(s, 2), x);
      tw[d][0] = lw_sub(c, lw_mul(c, lw_add(c, lw_mul(c, lw_sub(c, lw_mul(c, fc(s, a), x1), fc(s, 5 * a)), x1), fc(s, 8 * a)), x1),
                        fc(s, 4 * a));
      tw[d][1] = lw_add(c, lw_mul(c, lw_mul(c, lw_sub(c, lw_mul(c, fc(s, a + 2), x), fc(s, a + 3)), x), x), fc(s, 1));
      tw[d][2] = lw_add(c, lw_mul(c, lw_mul(c, lw_sub(c, lw_mul(c, fc(s, a + 2), x2), fc(s, a + 3)), x2), x2), fc(s, 1));
      tw[d][3] = lw_sub(c, lw_mul(c, lw_add(c, lw_mul(c, lw_sub(c, lw_mul(c, fc(s, a), x3), fc(s, 5 * a)), x3), fc(s, 8 * a)), x3),
                        fc(s, 4 * a));
    }
    for (int t2 = 0; t2 < taps; t2++)
      tidx[d][t2] = resolve(s, padding, lw_add(c, base, lw_i64(c, t2)), size, lo, hi, &tok[d][t2]);
  }
  lw_val_t* acc = NULL;
  for (int cmb = 0; cmb < combos; cmb++) {
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = sp.idx[0];
    sx.idx[1] = sp.idx[1];
    lw_val_t* w = NULL, *ok = sp.mask;
    int rest = cmb;
    for (int d = nsp - 1; d >= 0; d--) {
      int t2 = rest % taps;
      rest /= taps;
      sx.idx[2 + d] = tidx[d][t2];
      ok = lw_and(c, ok, tok[d][t2]);
      if (tw[d][t2]) w = w ? lw_mul(c, w, tw[d][t2]) : tw[d][t2];
    }
    lw_val_t* v = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), ok, NULL), s->F);
    if (w) v = lw_mul(c, v, w);
    acc = acc ? lw_add(c, acc, v) : v;
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, acc));
  lw_iter_end(c, start);
  return NULL;
}

/* RoiAlign (sampling_ratio > 0): a flat space over [rois, C, oh, ow]; each
 * lane reads its region and batch index and takes the bin's ratio x ratio
 * bilinear samples (unrolled; samples more than a pixel outside read 0,
 * coordinates clamped like the reference), averaged, or in max mode the
 * largest weighted corner. f64 math. */
xc_status_t lw_emit_roi_align(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Ro = n->inputs[1], *Bi = n->inputs[2], *Y = n->outputs[0];
  if (X->rank != 4 || Y->rank != 4) return lw_unsupported(c, n, "rank");
  for (int d = 1; d < 4; d++)
    if (X->dims[d].sym) return lw_unsupported(c, n, "symbolic dims");
  int64_t ratio = xc_node_attr_int(n, "sampling_ratio");
  if (ratio < 1 || ratio > 8) return lw_unsupported(c, n, "sampling_ratio %lld (needs 1..8)", (long long)ratio);
  const char* ct = xc_node_attr_string(n, "coordinate_transformation_mode");
  const char* mode = xc_node_attr_string(n, "mode");
  bool half = ct && !strcmp(ct, "half_pixel"), mx = mode && !strcmp(mode, "max");
  int64_t oh = xc_node_attr_int(n, "output_height"), ow = xc_node_attr_int(n, "output_width");
  int64_t H = X->dims[2].value, W = X->dims[3].value, C = X->dims[1].value;
  double scale = xc_node_attr_float(n, "spatial_scale");
  xc_dtype_t F = XC_F64;
#define FC(v) lw_fconst(c, F, (v))
  static const int64_t blk[] = {64, 128, 256, 512};
  int kb = lw_knob(c, "BLOCK", 4, blk, 128);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, 4, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, 4, Y->dims, start, kb, &sp, NULL);
  lw_val_t *r = sp.idx[0], *ch = sp.idx[1];
  lw_val_t* ph = lw_cast_to(c, sp.idx[2], F), *pw = lw_cast_to(c, sp.idx[3], F);
  lw_val_t* roi[4];
  for (int q = 0; q < 4; q++) {
    lw_val_t* v = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Ro), lw_add(c, lw_mul(c, r, lw_i64(c, 4)), lw_i64(c, q)), sp.mask, NULL), F);
    roi[q] = lw_sub(c, lw_mul(c, v, FC(scale)), FC(half ? 0.5 : 0.0));
  }
  lw_val_t* b = xc_tiled_load(k, lw_buf(c, Bi), r, sp.mask, NULL);
  lw_val_t* b_ok = sp.mask; /* a batch index outside [0, N) reads image 0 and fails the run */
  b = lw_check_index(c, n, XC_INDEX_CHECK_BATCH, 0, false, b, lw_dim(c, X->dims[0]).v, &b_ok);
  lw_val_t* rw = lw_sub(c, roi[2], roi[0]), *rh = lw_sub(c, roi[3], roi[1]);
  if (!half) {
    rw = xc_tiled_binary(k, XC_TOP_MAX, rw, FC(1));
    rh = xc_tiled_binary(k, XC_TOP_MAX, rh, FC(1));
  }
  lw_val_t* bh = lw_div(c, rh, FC((double)oh)), *bw = lw_div(c, rw, FC((double)ow));
  lw_val_t* plane = lw_mul(c, lw_add(c, lw_mul(c, b, lw_i64(c, C)), ch), lw_i64(c, H * W));
  lw_val_t* acc = NULL;
  for (int64_t iy = 0; iy < ratio; iy++)
    for (int64_t ix = 0; ix < ratio; ix++) {
      lw_val_t* yy = lw_add(c, lw_add(c, roi[1], lw_mul(c, ph, bh)), lw_mul(c, FC(((double)iy + 0.5) / (double)ratio), bh));
      lw_val_t* xx = lw_add(c, lw_add(c, roi[0], lw_mul(c, pw, bw)), lw_mul(c, FC(((double)ix + 0.5) / (double)ratio), bw));
      lw_val_t* out = xc_tiled_binary(k, XC_TOP_OR, xc_tiled_binary(k, XC_TOP_OR, lw_lt(c, yy, FC(-1)), xc_tiled_cmp(k, XC_CMP_GT, yy, FC((double)H))),
                                      xc_tiled_binary(k, XC_TOP_OR, lw_lt(c, xx, FC(-1)), xc_tiled_cmp(k, XC_CMP_GT, xx, FC((double)W))));
      lw_val_t* in = lw_and(c, sp.mask, xc_tiled_unary(k, XC_TOP_NOT, out));
      yy = xc_tiled_select(k, in, xc_tiled_binary(k, XC_TOP_MAX, yy, FC(0)), FC(0));
      xx = xc_tiled_select(k, in, xc_tiled_binary(k, XC_TOP_MAX, xx, FC(0)), FC(0));
      lw_val_t* ylo = lw_cast_to(c, xc_tiled_unary(k, XC_TOP_FLOOR, yy), XC_I64);
      lw_val_t* xlo = lw_cast_to(c, xc_tiled_unary(k, XC_TOP_FLOOR, xx), XC_I64);
      lw_val_t* yedge = xc_tiled_cmp(k, XC_CMP_GE, ylo, lw_i64(c, H - 1));
      lw_val_t* xedge = xc_tiled_cmp(k, XC_CMP_GE, xlo, lw_i64(c, W - 1));
      ylo = xc_tiled_select(k, yedge, lw_i64(c, H - 1), ylo);
      xlo = xc_tiled_select(k, xedge, lw_i64(c, W - 1), xlo);
      lw_val_t* yhi = xc_tiled_select(k, yedge, ylo, lw_add(c, ylo, lw_i64(c, 1)));
      lw_val_t* xhi = xc_tiled_select(k, xedge, xlo, lw_add(c, xlo, lw_i64(c, 1)));
      yy = xc_tiled_select(k, yedge, lw_cast_to(c, ylo, F), yy);
      xx = xc_tiled_select(k, xedge, lw_cast_to(c, xlo, F), xx);
      lw_val_t* ly = lw_sub(c, yy, lw_cast_to(c, ylo, F)), *lx = lw_sub(c, xx, lw_cast_to(c, xlo, F));
      lw_val_t* hy = lw_sub(c, FC(1), ly), *hx = lw_sub(c, FC(1), lx);
      lw_val_t* ys[2] = {ylo, yhi}, *xs[2] = {xlo, xhi}, *wy[2] = {hy, ly}, *wx[2] = {hx, lx};
      lw_val_t* s = NULL;
      for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
          lw_val_t* off = lw_add(c, plane, lw_add(c, lw_mul(c, ys[dy], lw_i64(c, W)), xs[dx]));
          lw_val_t* xv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), off, in, NULL), F);
          lw_val_t* v = xc_tiled_select(k, in, lw_mul(c, lw_mul(c, wy[dy], wx[dx]), xv), FC(0));
          s = !s ? v : mx ? xc_tiled_binary(k, XC_TOP_MAX, s, v) : lw_add(c, s, v);
        }
      acc = !acc ? s : mx ? xc_tiled_binary(k, XC_TOP_MAX, acc, s) : lw_add(c, acc, s);
    }
  if (!mx) acc = lw_div(c, acc, FC((double)(ratio * ratio)));
#undef FC
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, acc));
  lw_iter_end(c, start);
  return NULL;
}
