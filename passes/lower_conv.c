/* Convolution and pooling lowering: direct tiled kernels over a flat space
 * of the output. Each program takes BLOCK outputs and loops over the
 * reduction (input channels of the group x kernel window for Conv, the
 * window for pools) in BLOCK_R chunks: a [BLOCK, BLOCK_R] tile of input
 * coordinates o*stride - pad + k*dilation, masked outside the input (the
 * padding), times the weights, summed along the chunk. Bias and the group's
 * epilogue (Relu, ...) are applied to the [BLOCK] result. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

typedef struct win {
  int nsp;
  int sp0; /* first spatial dim of X and Y: 2 (NCHW) or 1 (channels last) */
  int64_t k[LW_MAX_RANK], s[LW_MAX_RANK], d[LW_MAX_RANK], pb[LW_MAX_RANK], pe[LW_MAX_RANK];
} win_t;

static xc_status_t window(lw_ctx_t* c, const xc_node_t* n, const xc_value_t* X, const int64_t* kshape,
                          bool nhwc, win_t* w) {
  memset(w, 0, sizeof *w);
  w->sp0 = nhwc ? 1 : 2;
  w->nsp = X->rank - 2;
  if (w->nsp < 1 || w->nsp > LW_MAX_RANK - 2) return lw_unsupported(c, n, "rank %d", X->rank);
  int64_t cnt = 0;
  const int64_t* v;
  for (int i = 0; i < w->nsp; i++) w->k[i] = kshape[i], w->s[i] = 1, w->d[i] = 1;
  if ((v = xc_node_attr_ints(n, "strides", &cnt)) && cnt == w->nsp)
    for (int i = 0; i < w->nsp; i++) w->s[i] = v[i];
  if ((v = xc_node_attr_ints(n, "dilations", &cnt)) && cnt == w->nsp)
    for (int i = 0; i < w->nsp; i++) w->d[i] = v[i];
  if ((v = xc_node_attr_ints(n, "pads", &cnt)) && cnt == 2 * w->nsp)
    for (int i = 0; i < w->nsp; i++) w->pb[i] = v[i], w->pe[i] = v[w->nsp + i];
  const char* ap = xc_node_attr_string(n, "auto_pad");
  if (ap && (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))) {
    for (int i = 0; i < w->nsp; i++) {
      xc_dim_t in = X->dims[w->sp0 + i];
      if (!xc_dim_is_static(in)) return lw_unsupported(c, n, "auto_pad SAME with a symbolic dim");
      int64_t out = (in.value + w->s[i] - 1) / w->s[i];
      int64_t total = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in.value;
      if (total < 0) total = 0;
      w->pb[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    }
  } else if (ap && !strcmp(ap, "VALID")) {
    for (int i = 0; i < w->nsp; i++) w->pb[i] = w->pe[i] = 0;
  }
  return NULL;
}

static const int64_t blk_c[] = {32, 64, 128, 256}, br_c[] = {8, 16, 32, 64};

/* Input coordinates of window offsets r ([1,BR]) for outputs at sp:
 * in_idx[i] (tiles [BLOCK,BR]) and the in-bounds mask. */
static lw_val_t* window_coords(lw_ctx_t* c, const win_t* w, const lw_space_t* sp, const xc_value_t* X,
                               lw_val_t* const* kidx, lw_val_t** in_idx) {
  lw_val_t* ok = NULL;
  for (int i = 0; i < w->nsp; i++) {
    lw_val_t* o = lw_col(c, sp->idx[w->sp0 + i]);
    lw_val_t* p = lw_add(c, lw_sub(c, lw_mul(c, o, lw_i64(c, w->s[i])), lw_i64(c, w->pb[i])),
                         lw_mul(c, kidx[i], lw_i64(c, w->d[i])));
    in_idx[i] = p;
    ok = lw_and(c, ok, lw_and(c, xc_tiled_cmp(c->k, XC_CMP_GE, p, lw_i64(c, 0)),
                              lw_lt(c, p, lw_dim(c, X->dims[w->sp0 + i]).v)));
  }
  return ok;
}

xc_status_t lw_emit_conv(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *W = n->inputs[1], *Y = n->outputs[0];
  const xc_value_t* B = n->num_inputs > 2 ? n->inputs[2] : NULL;
  /* ConvNHWC: X [N, sp..., C], W [M, k..., C/group] */
  bool nhwc = !strcmp(n->op_type, "ConvNHWC");
  if (!xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  if (W->rank != X->rank || W->rank < 3 || W->rank - 2 >= LW_MAX_RANK) return lw_unsupported(c, n, "weight rank");
  for (int i = 0; i < W->rank; i++)
    if (!xc_dim_is_static(W->dims[i])) return lw_unsupported(c, n, "symbolic weight shape");
  int64_t ks[LW_MAX_RANK];
  int ksp0 = nhwc ? 1 : 2;
  for (int i = 0; i < W->rank - 2; i++) ks[i] = W->dims[ksp0 + i].value;
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, ks, nhwc, &w));
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) group = 1;
  int cdim = nhwc ? X->rank - 1 : 1;
  int64_t cg = W->dims[nhwc ? W->rank - 1 : 1].value, ocg = W->dims[0].value / group;
  if (ocg < 1) return lw_unsupported(c, n, "bad group");
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  /* reduction dims in the weight's order: [Cg, k...] or [k..., Cg] */
  xc_dim_t rd[LW_MAX_RANK];
  int kpos = nhwc ? 0 : 1, cpos = nhwc ? w.nsp : 0;
  rd[cpos] = xc_dim_const(cg);
  for (int i = 0; i < w.nsp; i++) rd[kpos + i] = xc_dim_const(ks[i]);
  int64_t R = cg;
  for (int i = 0; i < w.nsp; i++)
    if (ks[i] < 1 || !xc_mul_i64(R, ks[i], &R)) return lw_unsupported(c, n, "kernel size");
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  int kr = lw_knob(c, "BLOCK_R", 4, br_c, 32);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* oc = sp.idx[cdim];
  lw_val_t* gidx = lw_div(c, oc, lw_i64(c, ocg));
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* acc0 = xc_tiled_const_f(k, at, 0.0, 1, d1);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kr), 1, &acc0);
  {
    lw_val_t* r = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kr))));
    lw_val_t* ridx[LW_MAX_RANK];
    lw_decompose(c, r, 1 + w.nsp, rd, ridx);
    lw_val_t* in_sp[LW_MAX_RANK];
    lw_val_t* ok = window_coords(c, &w, &sp, X, ridx + kpos, in_sp);
    lw_val_t* m = lw_and(c, lw_and(c, lw_col(c, sp.mask), lw_lt(c, r, lw_i64(c, R))), ok);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = lw_col(c, sp.idx[0]);
    sx.idx[cdim] = lw_add(c, lw_col(c, lw_mul(c, gidx, lw_i64(c, cg))), ridx[cpos]);
    for (int i = 0; i < w.nsp; i++) sx.idx[w.sp0 + i] = in_sp[i];
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* woff = lw_add(c, lw_mul(c, lw_col(c, oc), lw_i64(c, R)), r);
    lw_val_t* wm = lw_and(c, lw_col(c, sp.mask), lw_lt(c, r, lw_i64(c, R)));
    lw_val_t* wv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, W), woff, wm, NULL), at);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, lw_mul(c, x, wv), 1));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, B), oc, sp.mask, NULL), at));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}

xc_status_t lw_emit_pool(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  bool is_max = n->op_type[0] == 'M';
  bool is_lp = n->op_type[0] == 'L';
  double p = is_lp ? (double)xc_node_attr_int(n, "p") : 2;
  const xc_value_t* IDX = is_max && n->num_outputs > 1 ? n->outputs[1] : NULL;
  bool col_major = is_max && xc_node_attr_int(n, "storage_order") != 0;
  /* MaxPool on 8/16-bit integers: the maximum in f32 is exact */
  bool small_int = is_max && xc_dtype_is_int(X->dtype) && xc_dtype_size(X->dtype) <= 2;
  if (!xc_dtype_is_float(X->dtype) && !small_int)
    return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  int64_t cnt = 0;
  const int64_t* kv = xc_node_attr_ints(n, "kernel_shape", &cnt);
  if (!kv || cnt != X->rank - 2) return lw_unsupported(c, n, "kernel_shape");
  bool nhwc = strstr(n->op_type, "NHWC") != NULL;
  int cdim = nhwc ? X->rank - 1 : 1;
  if (nhwc && IDX) return lw_unsupported(c, n, "Indices output");
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, kv, nhwc, &w));
  bool include_pad = !is_max && xc_node_attr_int(n, "count_include_pad");
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  xc_dim_t rd[LW_MAX_RANK];
  int64_t R = 1;
  for (int i = 0; i < w.nsp; i++) {
    rd[i] = xc_dim_const(w.k[i]);
    if (w.k[i] < 1 || !xc_mul_i64(R, w.k[i], &R)) return lw_unsupported(c, n, "kernel size");
  }
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  int kr = lw_knob(c, "BLOCK_R", 4, br_c, 16);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  /* max/sum, count (avg) or best index (max with Indices) */
  lw_val_t* init[3] = {xc_tiled_const_f(k, at, is_max ? -INFINITY : 0.0, 1, d1),
                       xc_tiled_const_f(k, at, 0.0, 1, d1), xc_tiled_const_i(k, XC_I64, -1, 1, d1)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kr), 3, init);
  {
    lw_val_t* r = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kr))));
    lw_val_t* ridx[LW_MAX_RANK];
    lw_decompose(c, r, w.nsp, rd, ridx);
    lw_val_t* in_sp[LW_MAX_RANK];
    lw_val_t* ok = window_coords(c, &w, &sp, X, ridx, in_sp);
    lw_val_t* valid = lw_and(c, lw_col(c, sp.mask), lw_lt(c, r, lw_i64(c, R)));
    lw_val_t* m = lw_and(c, valid, ok);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = lw_col(c, sp.idx[0]);
    sx.idx[cdim] = lw_col(c, sp.idx[cdim]);
    for (int i = 0; i < w.nsp; i++) sx.idx[w.sp0 + i] = in_sp[i];
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* one = lw_fconst(c, at, 1), *zero = lw_fconst(c, at, 0);
    lw_val_t *next[3];
    next[2] = xc_tiled_for_arg(loop, 2);
    if (is_max) {
      x = xc_tiled_select(k, m, x, lw_fconst(c, at, -INFINITY));
      lw_val_t* part = xc_tiled_reduce(k, XC_REDUCE_MAX, x, 1);
      next[0] = xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 0), part);
      next[1] = xc_tiled_for_arg(loop, 1);
      if (IDX) { /* first position of the maximum, as a flat input index */
        lw_val_t* off = NULL, *col = NULL, *cs = lw_i64(c, 1);
        for (int i = 0; i < w.nsp; i++) { /* column-major: first spatial dim fastest */
          lw_val_t* t = lw_mul(c, in_sp[i], cs);
          col = col ? lw_add(c, col, t) : t;
          cs = lw_mul(c, cs, lw_dim(c, X->dims[2 + i]).v);
        }
        lw_val_t* rowm = NULL;
        cs = lw_i64(c, 1);
        for (int i = w.nsp - 1; i >= 0; i--) {
          lw_val_t* t = lw_mul(c, in_sp[i], cs);
          rowm = rowm ? lw_add(c, rowm, t) : t;
          cs = lw_mul(c, cs, lw_dim(c, X->dims[2 + i]).v);
        }
        off = col_major ? col : rowm;
        lw_val_t* plane = lw_add(c, lw_mul(c, sp.idx[0], lw_dim(c, X->dims[1]).v), sp.idx[1]);
        off = lw_add(c, off, lw_col(c, lw_mul(c, plane, cs)));
        lw_val_t* hit = lw_and(c, m, xc_tiled_cmp(k, XC_CMP_EQ, x, lw_col(c, part)));
        /* first in window order: the smallest window position r */
        lw_val_t* big = lw_i64(c, INT64_MAX);
        lw_val_t* rmin = xc_tiled_reduce(k, XC_REDUCE_MIN, xc_tiled_select(k, hit, r, big), 1);
        lw_val_t* at_r = lw_and(c, hit, xc_tiled_cmp(k, XC_CMP_EQ, r, lw_col(c, rmin)));
        lw_val_t* pidx = xc_tiled_reduce(k, XC_REDUCE_MAX, xc_tiled_select(k, at_r, off, lw_i64(c, -1)), 1);
        lw_val_t* take = xc_tiled_binary(k, XC_TOP_OR, xc_tiled_cmp(k, XC_CMP_GT, part, xc_tiled_for_arg(loop, 0)),
                                         xc_tiled_cmp(k, XC_CMP_LT, xc_tiled_for_arg(loop, 2), lw_i64(c, 0)));
        take = lw_and(c, take, xc_tiled_cmp(k, XC_CMP_GE, pidx, lw_i64(c, 0)));
        next[2] = xc_tiled_select(k, take, pidx, xc_tiled_for_arg(loop, 2));
      }
    } else if (is_lp) {
      lw_val_t* v = xc_tiled_binary(k, XC_TOP_POW, xc_tiled_unary(k, XC_TOP_ABS, x), lw_fconst(c, at, p));
      next[0] = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, m, v, zero), 1));
      next[1] = xc_tiled_for_arg(loop, 1);
    } else {
      lw_val_t* counted = m;
      if (include_pad) {
        /* positions inside the padded input count */
        counted = valid;
        for (int i = 0; i < w.nsp; i++) {
          counted = lw_and(c, counted, xc_tiled_cmp(k, XC_CMP_GE, in_sp[i], lw_i64(c, -w.pb[i])));
          counted = lw_and(c, counted, lw_lt(c, in_sp[i], lw_add(c, lw_dim(c, X->dims[w.sp0 + i]).v, lw_i64(c, w.pe[i]))));
        }
      }
      next[0] = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, m, x, zero), 1));
      next[1] = lw_add(c, xc_tiled_for_arg(loop, 1),
                       xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, counted, one, zero), 1));
    }
    xc_tiled_for_end(k, loop, 3, next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (is_lp) y = xc_tiled_binary(k, XC_TOP_POW, y, lw_fconst(c, at, 1.0 / p));
  else if (!is_max) y = lw_div(c, y, xc_tiled_for_result(loop, 1));
  if (IDX) lw_store_at(c, &sp, IDX, xc_tiled_for_result(loop, 2));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}

/* ConvTranspose as a gather: output o receives input i through kernel
 * position k when o + pad - k*dilation = i*stride. */
xc_status_t lw_emit_convtranspose(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *W = n->inputs[1], *Y = n->outputs[0];
  const xc_value_t* B = n->num_inputs > 2 ? n->inputs[2] : NULL;
  if (!xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  int64_t ks[LW_MAX_RANK];
  for (int i = 0; i < W->rank; i++)
    if (!xc_dim_is_static(W->dims[i]) || i - 2 >= LW_MAX_RANK) return lw_unsupported(c, n, "symbolic weight shape");
  for (int i = 2; i < W->rank; i++) ks[i - 2] = W->dims[i].value;
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, ks, false, &w));
  const char* ap = xc_node_attr_string(n, "auto_pad");
  if (ap && (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))) {
    int64_t cnt = 0;
    const int64_t* op = xc_node_attr_ints(n, "output_padding", &cnt);
    for (int i = 0; i < w.nsp; i++) {
      if (!xc_dim_is_static(X->dims[2 + i]) || !xc_dim_is_static(Y->dims[2 + i]))
        return lw_unsupported(c, n, "auto_pad SAME with a symbolic dim");
      int64_t full = w.s[i] * (X->dims[2 + i].value - 1) + (op && cnt == w.nsp ? op[i] : 0) +
                     (ks[i] - 1) * w.d[i] + 1;
      int64_t total = full - Y->dims[2 + i].value;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pb[i] = ap[5] == 'U' ? half : total - half;
    }
  }
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) group = 1;
  int64_t cin = W->dims[0].value, mg = W->dims[1].value, cg = cin / group;
  if (cg < 1) return lw_unsupported(c, n, "bad group");
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  xc_dim_t rd[LW_MAX_RANK];
  rd[0] = xc_dim_const(cg);
  int64_t R = cg, ksize = 1;
  for (int i = 0; i < w.nsp; i++) {
    rd[1 + i] = xc_dim_const(ks[i]);
    if (ks[i] < 1 || !xc_mul_i64(R, ks[i], &R) || !xc_mul_i64(ksize, ks[i], &ksize))
      return lw_unsupported(c, n, "kernel size");
  }
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  int kr = lw_knob(c, "BLOCK_R", 4, br_c, 32);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* oc = sp.idx[1];
  lw_val_t* gi = lw_div(c, oc, lw_i64(c, mg)), *ocg = lw_rem(c, oc, lw_i64(c, mg));
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* acc0 = xc_tiled_const_f(k, at, 0.0, 1, d1);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kr), 1, &acc0);
  {
    lw_val_t* r = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kr))));
    lw_val_t* ridx[LW_MAX_RANK];
    lw_decompose(c, r, 1 + w.nsp, rd, ridx);
    lw_val_t* m = lw_and(c, lw_col(c, sp.mask), lw_lt(c, r, lw_i64(c, R)));
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = lw_col(c, sp.idx[0]);
    lw_val_t* xch = lw_add(c, lw_col(c, lw_mul(c, gi, lw_i64(c, cg))), ridx[0]);
    sx.idx[1] = xch;
    lw_val_t* koff = lw_i64(c, 0);
    for (int i = 0; i < w.nsp; i++) {
      lw_val_t* num = lw_sub(c, lw_add(c, lw_col(c, sp.idx[2 + i]), lw_i64(c, w.pb[i])),
                             lw_mul(c, ridx[1 + i], lw_i64(c, w.d[i])));
      lw_val_t* q = lw_div(c, num, lw_i64(c, w.s[i]));
      m = lw_and(c, m, xc_tiled_cmp(k, XC_CMP_GE, num, lw_i64(c, 0)));
      m = lw_and(c, m, xc_tiled_cmp(k, XC_CMP_EQ, lw_rem(c, num, lw_i64(c, w.s[i])), lw_i64(c, 0)));
      m = lw_and(c, m, lw_lt(c, q, lw_dim(c, X->dims[2 + i]).v));
      sx.idx[2 + i] = q;
      int64_t pitch = 1;
      for (int j = i + 1; j < w.nsp; j++) pitch *= ks[j];
      koff = lw_add(c, koff, lw_mul(c, ridx[1 + i], lw_i64(c, pitch)));
    }
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    /* W[xch, ocg, k...] */
    lw_val_t* woff = lw_add(c, lw_mul(c, lw_add(c, lw_mul(c, xch, lw_i64(c, mg)), lw_col(c, ocg)), lw_i64(c, ksize)), koff);
    lw_val_t* wv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, W), woff, m, NULL), at);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0),
                            xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, m, lw_mul(c, x, wv), lw_fconst(c, at, 0)), 1));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, B), oc, sp.mask, NULL), at));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}
