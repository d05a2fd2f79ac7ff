/* Attention lowering: ONNX Attention with 4-D Q [B,Hq,S,D], K [B,Hk,L,D],
 * V [B,Hk,L,Dv] as a FlashAttention kernel: programs over (S tiles, B*Hq);
 * a loop over BLOCK_N key tiles keeps the running max m, the running sum l
 * and the [BLOCK_M, Dv] accumulator (online softmax), applying the scale,
 * the boolean or additive mask, causal masking and grouped-query heads.
 * Rows whose keys are all masked produce zeros, like the reference. The
 * head reshapes/transposes of the group are separate movement phases. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

static const int64_t bm_c[] = {8, 16, 32, 64}, bn_c[] = {8, 16, 32, 64};

static int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/* Offset of (batch b, head h, position s, channel d) in a 4-D
 * [B, H, seq, hd] operand or a 3-D [B, seq, H*hd] one. */
static lw_val_t* head_off(lw_ctx_t* c, const xc_value_t* X, bool is3d, int64_t H, lw_val_t* b,
                          lw_val_t* h, lw_val_t* s, lw_val_t* d) {
  lw_space_t sp;
  memset(&sp, 0, sizeof sp);
  sp.rank = 4;
  if (!is3d) {
    sp.idx[0] = b, sp.idx[1] = h, sp.idx[2] = s, sp.idx[3] = d;
    return lw_offset(c, &sp, X);
  }
  xc_dim_t dims[4] = {X->dims[0], X->dims[1], xc_dim_const(H), xc_dim_const(X->dims[2].value / H)};
  sp.idx[0] = b, sp.idx[1] = s, sp.idx[2] = h, sp.idx[3] = d;
  return lw_offset_dims(c, &sp, 4, dims);
}

xc_status_t lw_emit_attention(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *Q = n->inputs[0], *K = n->inputs[1], *V = n->inputs[2], *Y = n->outputs[0];
  const xc_value_t* mask = n->num_inputs > 3 ? n->inputs[3] : NULL;
  for (int i = 4; i < n->num_inputs; i++)
    if (n->inputs[i]) return lw_unsupported(c, n, "past key/value or nonpad_kv_seqlen");
  for (int o = 1; o < n->num_outputs; o++)
    if (n->outputs[o] && c->must_store[n->outputs[o]->id]) return lw_unsupported(c, n, "output %d is used", o);
  bool is3d = Q->rank == 3;
  if (!((Q->rank == 4 && K->rank == 4 && V->rank == 4) || (is3d && K->rank == 3 && V->rank == 3)))
    return lw_unsupported(c, n, "input ranks %d/%d/%d", Q->rank, K->rank, V->rank);
  double softcap = xc_node_attr_float(n, "softcap");
  if (!xc_dtype_is_float(Q->dtype)) return lw_unsupported(c, n, "dtype");
  int64_t D, Dv, Hq, Hk;
  if (is3d) {
    Hq = xc_node_has_attr(n, "q_num_heads") ? xc_node_attr_int(n, "q_num_heads") : 0;
    Hk = xc_node_has_attr(n, "kv_num_heads") ? xc_node_attr_int(n, "kv_num_heads") : 0;
    if (Hq < 1 || Hk < 1 || !xc_dim_is_static(Q->dims[2]) || !xc_dim_is_static(V->dims[2]))
      return lw_unsupported(c, n, "3-D inputs need static hidden sizes and head counts");
    D = Q->dims[2].value / Hq;
    Dv = V->dims[2].value / Hk;
  } else {
    if (!xc_dim_is_static(Q->dims[3]) || !xc_dim_is_static(V->dims[3]) || !xc_dim_is_static(Q->dims[1]) ||
        !xc_dim_is_static(K->dims[1]))
      return lw_unsupported(c, n, "symbolic head count or head size");
    D = Q->dims[3].value, Dv = V->dims[3].value, Hq = Q->dims[1].value, Hk = K->dims[1].value;
  }
  int seq = is3d ? 1 : 2;
  if (Hk < 1 || Hq % Hk) return lw_unsupported(c, n, "q heads not a multiple of kv heads");
  if (D > 1024 || Dv > 1024 || D < 1 || Dv < 1) return lw_unsupported(c, n, "head size %lld", (long long)D);
  if (mask && mask->rank >= 1 && !xc_dim_equal(mask->dims[mask->rank - 1], K->dims[seq]))
    return lw_unsupported(c, n, "attn_mask shorter than the keys");
  double scale = xc_node_has_attr(n, "scale") ? xc_node_attr_float(n, "scale") : 1.0 / sqrt((double)D);
  bool causal = xc_node_attr_int(n, "is_causal") != 0;
  xc_dtype_t at = Q->dtype == XC_F64 ? XC_F64 : XC_F32;
  int64_t BD = pow2_at_least(D), BDv = pow2_at_least(Dv);
  int kBM = lw_knob(c, "BLOCK_M", 4, bm_c, 16);
  int kBN = lw_knob(c, "BLOCK_N", 4, bn_c, 16);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN);
  xc_tiled_dim_t dd = xc_tiled_dim_const(BD), ddv = xc_tiled_dim_const(BDv);
  lw_dimv_t S = lw_dim(c, Q->dims[seq]), L = lw_dim(c, K->dims[seq]);
  lw_val_t* m0 = lw_iter_begin(c, 0, S, kBM, 0);
  lw_val_t* bh = lw_iter_begin(c, 1, lw_dim(c, xc_dim_mul(c->g, Q->dims[0], xc_dim_const(Hq))), -1, 1);
  lw_val_t* b = lw_div(c, bh, lw_i64(c, Hq));
  lw_val_t* h = lw_rem(c, bh, lw_i64(c, Hq));
  lw_val_t* hk = lw_div(c, h, lw_i64(c, Hq / Hk));
  lw_val_t* rm = lw_col(c, lw_add(c, m0, xc_tiled_arange(k, dm)));
  lw_val_t* mmask = lw_lt(c, rm, S.v);
  lw_val_t* ad = xc_tiled_arange(k, dd), *adv = xc_tiled_arange(k, ddv);
  lw_val_t* d_row = lw_row(c, ad), *d_col = lw_col(c, ad), *dv_row = lw_row(c, adv);
  lw_val_t* q = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Q), head_off(c, Q, is3d, Hq, b, h, rm, d_row),
                                            lw_and(c, mmask, lw_lt(c, d_row, lw_i64(c, D))), NULL), at);
  q = lw_mul(c, q, lw_fconst(c, at, scale));
  xc_tiled_dim_t vm[1] = {dm}, mdv[2] = {dm, ddv}, mn[2] = {dm, dn};
  /* m, l, acc, and the count of keys not masked (rows with none give 0) */
  lw_val_t* init[4] = {xc_tiled_const_f(k, at, -INFINITY, 1, vm), xc_tiled_const_f(k, at, 0.0, 1, vm),
                       xc_tiled_const_f(k, at, 0.0, 2, mdv), xc_tiled_const_f(k, at, 0.0, 1, vm)};
  lw_val_t* s_zero = xc_tiled_const_f(k, at, 0.0, 2, mn);
  lw_val_t* ninf = lw_fconst(c, at, -INFINITY), *zero = lw_fconst(c, at, 0);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), L.v, xc_tiled_knob_value(k, kBN), 4, init);
  {
    lw_val_t* n0 = xc_tiled_for_iv(loop);
    lw_val_t *m_i = xc_tiled_for_arg(loop, 0), *l_i = xc_tiled_for_arg(loop, 1), *acc = xc_tiled_for_arg(loop, 2);
    lw_val_t* rn = lw_add(c, n0, xc_tiled_arange(k, dn));
    lw_val_t* rn_row = lw_row(c, rn), *rn_col = lw_col(c, rn);
    /* K^T tile [BD,BN] */
    lw_val_t* kT = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, K), head_off(c, K, is3d, Hk, b, hk, rn_row, d_col),
                                               lw_and(c, lw_lt(c, rn_row, L.v), lw_lt(c, d_col, lw_i64(c, D))), NULL), at);
    lw_val_t* s = xc_tiled_dot(k, q, kT, s_zero);
    lw_val_t* valid = lw_and(c, lw_lt(c, rn_row, L.v), mmask);
    if (causal) valid = lw_and(c, valid, xc_tiled_cmp(k, XC_CMP_LE, rn_row, lw_add(c, rm, lw_sub(c, L.v, L.v))));
    if (mask) {
      lw_space_t smk;
      memset(&smk, 0, sizeof smk);
      smk.rank = 4;
      smk.idx[0] = b, smk.idx[1] = h, smk.idx[2] = rm, smk.idx[3] = rn_row;
      smk.mask = lw_and(c, mmask, lw_lt(c, rn_row, L.v));
      lw_val_t* mv = xc_tiled_load(k, lw_buf(c, mask), lw_offset(c, &smk, mask), smk.mask, NULL);
      if (mask->dtype == XC_BOOL) valid = lw_and(c, valid, mv);
      else s = lw_add(c, s, lw_cast_to(c, mv, at));
    }
    lw_val_t* inside = lw_and(c, lw_lt(c, rn_row, L.v), mmask);
    s = xc_tiled_select(k, valid, s, ninf);
    lw_val_t* cnt = lw_add(c, xc_tiled_for_arg(loop, 3),
                           xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, valid, lw_fconst(c, at, 1), zero), 1));
    if (softcap > 0) /* like the reference, masked scores become -softcap */
      s = xc_tiled_select(k, inside, lw_mul(c, lw_fconst(c, at, softcap),
                                            xc_tiled_unary(k, XC_TOP_TANH, lw_div(c, s, lw_fconst(c, at, softcap)))),
                          ninf);
    lw_val_t* m_new = xc_tiled_binary(k, XC_TOP_MAX, m_i, xc_tiled_reduce(k, XC_REDUCE_MAX, s, 1));
    lw_val_t* m_safe = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, m_new, ninf), zero, m_new);
    lw_val_t* p = xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, s, lw_col(c, m_safe)));
    lw_val_t* alpha = xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, m_i, m_safe));
    lw_val_t* l_new = lw_add(c, lw_mul(c, l_i, alpha), xc_tiled_reduce(k, XC_REDUCE_SUM, p, 1));
    /* V tile [BN,BDv] */
    lw_val_t* vt = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, V), head_off(c, V, is3d, Hk, b, hk, rn_col, dv_row),
                                               lw_and(c, lw_lt(c, rn_col, L.v), lw_lt(c, dv_row, lw_i64(c, Dv))), NULL), at);
    lw_val_t* acc_new = xc_tiled_dot(k, p, vt, lw_mul(c, acc, lw_col(c, alpha)));
    lw_val_t* next[4] = {m_new, l_new, acc_new, cnt};
    xc_tiled_for_end(k, loop, 4, next);
  }
  lw_val_t* l = lw_col(c, xc_tiled_for_result(loop, 1));
  lw_val_t* pos = lw_and(c, xc_tiled_cmp(k, XC_CMP_GT, l, zero),
                         xc_tiled_cmp(k, XC_CMP_GT, lw_col(c, xc_tiled_for_result(loop, 3)), zero));
  lw_val_t* o = xc_tiled_select(k, pos, lw_div(c, xc_tiled_for_result(loop, 2),
                                               xc_tiled_select(k, pos, l, lw_fconst(c, at, 1))), zero);
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = Y->rank;
  sy.dims = Y->dims;
  if (is3d) {
    sy.idx[0] = b, sy.idx[1] = rm, sy.idx[2] = lw_add(c, lw_mul(c, h, lw_i64(c, Dv)), dv_row);
  } else {
    sy.idx[0] = b, sy.idx[1] = h, sy.idx[2] = rm, sy.idx[3] = dv_row;
  }
  sy.mask = lw_and(c, mmask, lw_lt(c, dv_row, lw_i64(c, Dv)));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, o));
  lw_iter_end(c, bh);
  lw_iter_end(c, m0);
  return NULL;
}
