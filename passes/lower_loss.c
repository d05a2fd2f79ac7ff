/* Loss lowering: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 * Input [N, C, d...], target [N, d...]: each target element t at (n, i)
 * reads input[n, t, i] (SoftmaxCrossEntropyLoss first subtracts the
 * log-sum-exp over C, computed by two chunked loops over the classes), times
 * -weight[t], 0 when t is ignore_index. reduction "none" stores per element
 * over a grid of BLOCK tiles; "sum"/"mean" run one program that loops over
 * the targets carrying the loss and weight totals. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

bool lw_is_loss(const xc_node_t* n) {
  return (!n->domain || !n->domain[0]) &&
         (!strcmp(n->op_type, "NegativeLogLikelihoodLoss") || !strcmp(n->op_type, "SoftmaxCrossEntropyLoss"));
}

static const int64_t blk_c[] = {16, 32, 64, 128}, bc_c[] = {8, 16, 32, 64};

typedef struct loss_ctx {
  const xc_node_t* n;
  const xc_value_t *X, *T, *W;
  bool sce, has_ignore;
  int64_t ignore;
  xc_dtype_t at;
  lw_dimv_t C, inner, total;
  int kc;
} loss_ctx_t;

/* Offset of input[b, k, i] (b, i: [BLOCK,1] or [BLOCK]; k any). */
static lw_val_t* x_off(lw_ctx_t* c, loss_ctx_t* L, lw_val_t* b, lw_val_t* k, lw_val_t* i) {
  return lw_add(c, lw_mul(c, lw_add(c, lw_mul(c, b, L->C.v), k), L->inner.v), i);
}

/* Log-sum-exp over the classes for targets at (b, i) ([BLOCK] tiles). */
static lw_val_t* lse(lw_ctx_t* c, loss_ctx_t* L, lw_val_t* b, lw_val_t* i, lw_val_t* mask, int kb) {
  xc_tiled_kernel_t* k = c->k;
  xc_tiled_dim_t d1 = xc_tiled_dim_knob(kb);
  lw_val_t* bc = lw_col(c, b), *ic = lw_col(c, i), *mc = lw_col(c, mask);
  lw_val_t* init = xc_tiled_const_f(k, L->at, -INFINITY, 1, &d1);
  lw_val_t* stat[2];
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) init = xc_tiled_const_f(k, L->at, 0, 1, &d1);
    xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), L->C.v, xc_tiled_knob_value(k, L->kc), 1, &init);
    lw_val_t* kk = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(L->kc))));
    lw_val_t* m = lw_and(c, mc, lw_lt(c, kk, L->C.v));
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L->X), x_off(c, L, bc, kk, ic), m, NULL), L->at);
    lw_val_t* next;
    if (pass == 0) {
      x = xc_tiled_select(k, m, x, lw_fconst(c, L->at, -INFINITY));
      next = xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_MAX, x, 1));
    } else {
      lw_val_t* e = xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, x, lw_col(c, stat[0])));
      e = xc_tiled_select(k, m, e, lw_fconst(c, L->at, 0));
      next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, e, 1));
    }
    xc_tiled_for_end(k, loop, 1, &next);
    stat[pass] = xc_tiled_for_result(loop, 0);
    if (pass == 0) /* masked rows: keep exp finite */
      stat[0] = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, stat[0], lw_fconst(c, L->at, -INFINITY)),
                                lw_fconst(c, L->at, 0), stat[0]);
  }
  return lw_add(c, stat[0], xc_tiled_unary(k, XC_TOP_LOG, stat[1]));
}

/* Loss and weight of the targets at flat indices f ([BLOCK]). */
static void element_loss(lw_ctx_t* c, loss_ctx_t* L, lw_val_t* f, lw_val_t* mask, int kb, lw_val_t** loss,
                         lw_val_t** wt, lw_val_t** b_out, lw_val_t** i_out, lw_val_t** lse_out) {
  xc_tiled_kernel_t* k = c->k;
  lw_val_t* b = lw_div(c, f, L->inner.v), *i = lw_rem(c, f, L->inner.v);
  lw_val_t* t = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L->T), f, mask, NULL), XC_I64);
  lw_val_t* use = mask;
  if (L->has_ignore) use = lw_and(c, use, xc_tiled_cmp(k, XC_CMP_NE, t, lw_i64(c, L->ignore)));
  /* a class index outside [0, C) reads and weighs nothing and fails the run */
  t = lw_check_index(c, L->n, XC_INDEX_CHECK_TARGET, 1, false, t, L->C.v, &use);
  lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L->X), x_off(c, L, b, t, i), use, NULL), L->at);
  lw_val_t* l = NULL;
  if (L->sce) {
    l = lse(c, L, b, i, mask, kb);
    x = lw_sub(c, x, l);
  }
  lw_val_t* w = L->W ? lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L->W), t, use, NULL), L->at) : lw_fconst(c, L->at, 1);
  lw_val_t* zero = lw_fconst(c, L->at, 0);
  *wt = xc_tiled_select(k, use, w, zero);
  *loss = xc_tiled_select(k, use, xc_tiled_unary(k, XC_TOP_NEG, lw_mul(c, *wt, x)), zero);
  *b_out = b, *i_out = i, *lse_out = l;
}

/* log_prob output: x - lse over every class of the targets at (b, i). */
static void store_log_prob(lw_ctx_t* c, loss_ctx_t* L, const xc_value_t* LP, lw_val_t* b, lw_val_t* i,
                           lw_val_t* l, lw_val_t* mask) {
  xc_tiled_kernel_t* k = c->k;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), L->C.v, xc_tiled_knob_value(k, L->kc), 0, NULL);
  lw_val_t* kk = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(L->kc))));
  lw_val_t* m = lw_and(c, lw_col(c, mask), lw_lt(c, kk, L->C.v));
  lw_val_t* off = x_off(c, L, lw_col(c, b), kk, lw_col(c, i));
  lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L->X), off, m, NULL), L->at);
  xc_tiled_store(k, lw_buf(c, LP), xc_tiled_select(k, m, off, off),
                 lw_cast_to(c, lw_sub(c, x, lw_col(c, l)), LP->dtype), m);
  xc_tiled_for_end(k, loop, 0, NULL);
}

xc_status_t lw_emit_loss(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  loss_ctx_t L;
  memset(&L, 0, sizeof L);
  L.n = n;
  L.X = n->inputs[0], L.T = n->inputs[1], L.W = n->num_inputs > 2 ? n->inputs[2] : NULL;
  L.sce = n->op_type[0] == 'S';
  L.has_ignore = xc_node_has_attr(n, "ignore_index");
  L.ignore = L.has_ignore ? xc_node_attr_int(n, "ignore_index") : 0;
  if (!xc_dtype_is_float(L.X->dtype) || L.X->rank < 2 || L.T->rank != L.X->rank - 1)
    return lw_unsupported(c, n, "input shapes");
  L.at = L.X->dtype == XC_F64 ? XC_F64 : XC_F32;
  const char* red = xc_node_attr_string(n, "reduction");
  bool none = red && !strcmp(red, "none"), mean = !red || !strcmp(red, "mean");
  const xc_value_t* Y = n->outputs[0];
  const xc_value_t* LP = L.sce && n->num_outputs > 1 ? n->outputs[1] : NULL;
  if (LP && !c->must_store[LP->id]) LP = NULL;
  L.C = lw_dim(c, L.X->dims[1]);
  L.inner = lw_dim(c, lw_prod(c, 2, L.X->rank, L.X->dims));
  L.total = lw_dim(c, lw_numel(c, L.T->rank, L.T->dims));
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 64);
  L.kc = lw_knob(c, "BLOCK_C", 4, bc_c, 16);
  lw_val_t *loss, *wt, *b, *i, *l;
  if (none) {
    lw_val_t* start = lw_iter_begin(c, 0, L.total, kb, 0);
    lw_space_t sp;
    lw_val_t* f = NULL;
    lw_flat_space(c, L.T->rank, L.T->dims, start, kb, &sp, &f);
    element_loss(c, &L, f, sp.mask, kb, &loss, &wt, &b, &i, &l);
    if (LP) store_log_prob(c, &L, LP, b, i, l, sp.mask);
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, loss));
    lw_iter_end(c, start);
    return NULL;
  }
  /* one program over all targets */
  xc_tiled_dim_t d1 = xc_tiled_dim_knob(kb);
  lw_val_t* init[2] = {xc_tiled_const_f(k, L.at, 0, 1, &d1), xc_tiled_const_f(k, L.at, 0, 1, &d1)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), L.total.v, xc_tiled_knob_value(k, kb), 2, init);
  {
    lw_val_t* f = lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, d1));
    lw_val_t* fm = lw_lt(c, f, L.total.v);
    element_loss(c, &L, f, fm, kb, &loss, &wt, &b, &i, &l);
    if (LP) store_log_prob(c, &L, LP, b, i, l, fm);
    lw_val_t* next[2] = {lw_add(c, xc_tiled_for_arg(loop, 0), loss), lw_add(c, xc_tiled_for_arg(loop, 1), wt)};
    xc_tiled_for_end(k, loop, 2, next);
  }
  lw_val_t* y = xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_for_result(loop, 0), 0);
  if (mean) y = lw_div(c, y, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_for_result(loop, 1), 0));
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = Y->rank;
  sy.dims = Y->dims;
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  return NULL;
}
