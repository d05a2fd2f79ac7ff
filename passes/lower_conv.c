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
  int64_t k[LW_MAX_RANK], s[LW_MAX_RANK], d[LW_MAX_RANK], pb[LW_MAX_RANK], pe[LW_MAX_RANK];
} win_t;

static xc_status_t window(lw_ctx_t* c, const xc_node_t* n, const xc_value_t* X, const int64_t* kshape,
                          win_t* w) {
  memset(w, 0, sizeof *w);
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
      xc_dim_t in = X->dims[2 + i];
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
    lw_val_t* o = lw_col(c, sp->idx[2 + i]);
    lw_val_t* p = lw_add(c, lw_sub(c, lw_mul(c, o, lw_i64(c, w->s[i])), lw_i64(c, w->pb[i])),
                         lw_mul(c, kidx[i], lw_i64(c, w->d[i])));
    in_idx[i] = p;
    ok = lw_and(c, ok, lw_and(c, xc_tiled_cmp(c->k, XC_CMP_GE, p, lw_i64(c, 0)),
                              lw_lt(c, p, lw_dim(c, X->dims[2 + i]).v)));
  }
  return ok;
}

xc_status_t lw_emit_conv(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *W = n->inputs[1], *Y = n->outputs[0];
  const xc_value_t* B = n->num_inputs > 2 ? n->inputs[2] : NULL;
  if (!xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  int64_t ks[LW_MAX_RANK];
  for (int i = 2; i < W->rank; i++) {
    if (!xc_dim_is_static(W->dims[i]) || i - 2 >= LW_MAX_RANK) return lw_unsupported(c, n, "symbolic kernel");
    ks[i - 2] = W->dims[i].value;
  }
  if (!xc_dim_is_static(W->dims[1]) || !xc_dim_is_static(W->dims[0]))
    return lw_unsupported(c, n, "symbolic weight shape");
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, ks, &w));
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) group = 1;
  int64_t cg = W->dims[1].value, ocg = W->dims[0].value / group;
  if (ocg < 1) return lw_unsupported(c, n, "bad group");
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  /* reduction dims: [Cg, k...] */
  xc_dim_t rd[LW_MAX_RANK];
  rd[0] = xc_dim_const(cg);
  for (int i = 0; i < w.nsp; i++) rd[1 + i] = xc_dim_const(ks[i]);
  int64_t R = cg;
  for (int i = 0; i < w.nsp; i++) R *= ks[i];
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  int kr = lw_knob(c, "BLOCK_R", 4, br_c, 32);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* oc = sp.idx[1];
  lw_val_t* gidx = lw_div(c, oc, lw_i64(c, ocg));
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* acc0 = xc_tiled_const_f(k, at, 0.0, 1, d1);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kr), 1, &acc0);
  {
    lw_val_t* r = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kr))));
    lw_val_t* ridx[LW_MAX_RANK];
    lw_decompose(c, r, 1 + w.nsp, rd, ridx);
    lw_val_t* in_sp[LW_MAX_RANK];
    lw_val_t* ok = window_coords(c, &w, &sp, X, ridx + 1, in_sp);
    lw_val_t* m = lw_and(c, lw_and(c, lw_col(c, sp.mask), lw_lt(c, r, lw_i64(c, R))), ok);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = lw_col(c, sp.idx[0]);
    sx.idx[1] = lw_add(c, lw_col(c, lw_mul(c, gidx, lw_i64(c, cg))), ridx[0]);
    for (int i = 0; i < w.nsp; i++) sx.idx[2 + i] = in_sp[i];
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
  if (n->num_outputs > 1 && n->outputs[1]) return lw_unsupported(c, n, "Indices output");
  if (!xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  int64_t cnt = 0;
  const int64_t* kv = xc_node_attr_ints(n, "kernel_shape", &cnt);
  if (!kv || cnt != X->rank - 2) return lw_unsupported(c, n, "kernel_shape");
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, kv, &w));
  bool include_pad = !is_max && xc_node_attr_int(n, "count_include_pad");
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  xc_dim_t rd[LW_MAX_RANK];
  int64_t R = 1;
  for (int i = 0; i < w.nsp; i++) rd[i] = xc_dim_const(w.k[i]), R *= w.k[i];
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  int kr = lw_knob(c, "BLOCK_R", 4, br_c, 16);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* init[2] = {xc_tiled_const_f(k, at, is_max ? -INFINITY : 0.0, 1, d1),
                       xc_tiled_const_f(k, at, 0.0, 1, d1)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kr), 2, init);
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
    sx.idx[1] = lw_col(c, sp.idx[1]);
    for (int i = 0; i < w.nsp; i++) sx.idx[2 + i] = in_sp[i];
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* one = lw_fconst(c, at, 1), *zero = lw_fconst(c, at, 0);
    lw_val_t *next[2];
    if (is_max) {
      x = xc_tiled_select(k, m, x, lw_fconst(c, at, -INFINITY));
      next[0] = xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_MAX, x, 1));
      next[1] = xc_tiled_for_arg(loop, 1);
    } else {
      lw_val_t* counted = m;
      if (include_pad) {
        /* positions inside the padded input count */
        counted = valid;
        for (int i = 0; i < w.nsp; i++) {
          counted = lw_and(c, counted, xc_tiled_cmp(k, XC_CMP_GE, in_sp[i], lw_i64(c, -w.pb[i])));
          counted = lw_and(c, counted, lw_lt(c, in_sp[i], lw_add(c, lw_dim(c, X->dims[2 + i]).v, lw_i64(c, w.pe[i]))));
        }
      }
      next[0] = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, m, x, zero), 1));
      next[1] = lw_add(c, xc_tiled_for_arg(loop, 1),
                       xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, counted, one, zero), 1));
    }
    xc_tiled_for_end(k, loop, 2, next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (!is_max) y = lw_div(c, y, xc_tiled_for_result(loop, 1));
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
  XC_RETURN_IF_ERROR(window(c, n, X, ks, &w));
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
  for (int i = 0; i < w.nsp; i++) rd[1 + i] = xc_dim_const(ks[i]), R *= ks[i], ksize *= ks[i];
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
