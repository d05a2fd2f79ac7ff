/* GEMM lowering: MatMul (batched, broadcast batch dims, 1-D promotion) and
 * Gemm (transA/transB, alpha, beta, C) as a tiled dot kernel: programs over
 * (M tiles, N tiles, batch), a K loop accumulating dot(A[BM,BK], B[BK,BN])
 * in f32 (f64 for f64), then the group's elementwise epilogue on the
 * accumulator tile. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const int64_t bm_c[] = {16, 32, 64, 128}, bn_c[] = {16, 32, 64, 128}, bk_c[] = {8, 16, 32};

/* A QLinearMatMul scale or zero point as f64: one value, or one per row
 * (idx = rm) or column (idx = rn). */
static lw_val_t* qparam(lw_ctx_t* c, const xc_value_t* v, lw_val_t* idx, lw_val_t* mask) {
  bool one = true;
  for (int d = 0; d < v->rank; d++) one = one && xc_dim_is_static(v->dims[d]) && v->dims[d].value == 1;
  lw_val_t* off = one || !idx ? lw_i64(c, 0) : idx;
  return lw_cast_to(c, xc_tiled_load(c->k, lw_buf(c, v), off, one || !idx ? NULL : mask, NULL), XC_F64);
}

xc_status_t lw_emit_gemm(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  bool gemm = !strcmp(n->op_type, "Gemm");
  /* QLinearMatMul: (a - a_zp) @ (b - b_zp) exactly in f64, requantized */
  bool qlin = !strcmp(n->op_type, "QLinearMatMul");
  const xc_value_t *A = n->inputs[0], *B = n->inputs[qlin ? 3 : 1], *Y = n->outputs[0];
  const xc_value_t* C = gemm && n->num_inputs > 2 ? n->inputs[2] : NULL;
  xc_dtype_t dt = A->dtype;
  if (qlin) {
    if (!((dt == XC_U8 || dt == XC_I8) && (B->dtype == XC_U8 || B->dtype == XC_I8) &&
          (Y->dtype == XC_U8 || Y->dtype == XC_I8)))
      return lw_unsupported(c, n, "dtypes %s x %s -> %s", xc_dtype_name(dt), xc_dtype_name(B->dtype),
                            xc_dtype_name(Y->dtype));
    for (int i = 0; i < 8; i++)
      if (!n->inputs[i]) return lw_unsupported(c, n, "missing input %d", i);
  } else if (!(dt == XC_F32 || dt == XC_F16 || dt == XC_BF16 || dt == XC_F64) || B->dtype != dt) {
    return lw_unsupported(c, n, "dtype %s (float GEMMs only)", xc_dtype_name(dt));
  }
  if (A->rank < 1 || B->rank < 1 || (gemm && (A->rank != 2 || B->rank != 2)))
    return lw_unsupported(c, n, "operand ranks %d and %d", A->rank, B->rank);
  xc_dtype_t acc_dt = dt == XC_F64 || qlin ? XC_F64 : XC_F32;
  bool ta = gemm && xc_node_attr_int(n, "transA");
  bool tb = gemm && xc_node_attr_int(n, "transB");
  bool a1 = A->rank == 1, b1 = B->rank == 1;
  int ra = A->rank, rb = B->rank, ry = Y->rank;
  xc_dim_t M = a1 ? xc_dim_const(1) : (ta ? A->dims[1] : A->dims[ra - 2]);
  xc_dim_t K = a1 ? A->dims[0] : (ta ? A->dims[0] : A->dims[ra - 1]);
  xc_dim_t N = b1 ? xc_dim_const(1) : (tb ? B->dims[0] : B->dims[rb - 1]);
  int nb = ry - (a1 ? 0 : 1) - (b1 ? 0 : 1);
  if (nb < 0 || ry > LW_MAX_RANK) return lw_unsupported(c, n, "unexpected output rank %d", ry);

  /* Devices with matrix instructions for this dtype (limits "mma"; f32 only
   * when the compile allows tf32) get tensor-core-sized tiles: 128x128 on
   * 128 work-items (four warps of 64x64 on CUDA), a 3-stage pipeline of the
   * K loop (emitters use fewer stages where the buffers do not fit). */
  bool mma = !qlin && c->limits && !c->multi_phase && (c->limits->value[XC_TILED_LIMIT_MMA] & ((int64_t)1 << dt));
  int kBM = lw_knob(c, "BLOCK_M", 4, bm_c, mma ? 128 : 32);
  int kBN = lw_knob(c, "BLOCK_N", 4, bn_c, mma ? 128 : 32);
  /* 32 (16-bit) or 16 (f32) columns of K: two stages of both operand tiles
   * fit the 48 KiB of static shared memory */
  int kBK = lw_knob(c, "BLOCK_K", 3, bk_c, mma && dt != XC_F32 ? 32 : 16);
  if (mma) {
    static const int64_t st_c[] = {1, 2, 3, 4}, tf_c[] = {1};
    char name[32];
    snprintf(name, sizeof name, "STAGES_p%d", c->phase_index);
    xc_tiled_add_knob(k, name, XC_KNOB_STAGES, 4, st_c, 3);
    /* present only when the compile allows tf32: the emitter may use it */
    if (dt == XC_F32) xc_tiled_add_knob(k, "tf32", XC_KNOB_OTHER, 1, tf_c, 1);
  }
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dk = xc_tiled_dim_knob(kBK);
  lw_val_t* m0 = lw_iter_begin(c, 0, lw_dim(c, M), kBM, 0);
  lw_val_t* n0 = lw_iter_begin(c, 1, lw_dim(c, N), kBN, 0);
  lw_val_t* b0 = lw_iter_begin(c, 2, lw_dim(c, lw_prod(c, 0, nb, Y->dims)), -1, 1);
  lw_val_t* bidx[LW_MAX_RANK] = {0};
  lw_decompose(c, b0, nb, Y->dims, bidx);
  lw_val_t* rm = lw_col(c, lw_add(c, m0, xc_tiled_arange(k, dm))); /* [BM,1] */
  lw_val_t* rn = lw_row(c, lw_add(c, n0, xc_tiled_arange(k, dn))); /* [1,BN] */
  lw_val_t* mm = lw_lt(c, rm, lw_dim(c, M).v), *mn = lw_lt(c, rn, lw_dim(c, N).v);
  lw_val_t* ak = xc_tiled_arange(k, dk);
  xc_tiled_dim_t acc_shape[2] = {dm, dn};
  lw_val_t* acc0 = xc_tiled_const_f(k, acc_dt, 0.0, 2, acc_shape);
  lw_dimv_t Kd = lw_dim(c, K);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), Kd.v, xc_tiled_knob_value(k, kBK), 1, &acc0);
  {
    lw_val_t* k0 = xc_tiled_for_iv(loop);
    lw_val_t* kr = lw_row(c, lw_add(c, k0, ak)), *kc = lw_col(c, lw_add(c, k0, ak));
    /* A tile [BM,BK] */
    lw_space_t sa;
    memset(&sa, 0, sizeof sa);
    sa.rank = nb + 2;
    for (int i = 0; i < nb; i++) sa.idx[i] = bidx[i];
    if (a1) {
      sa.idx[nb + 1] = kr;
    } else {
      sa.idx[nb] = ta ? kr : rm;
      sa.idx[nb + 1] = ta ? rm : kr;
    }
    lw_val_t* amask = lw_and(c, mm, lw_lt(c, kr, Kd.v));
    lw_val_t* a = xc_tiled_load(k, lw_buf(c, A), lw_offset_dims(c, &sa, ra, A->dims), amask, NULL);
    if (qlin)
      a = xc_tiled_select(k, amask, lw_sub(c, lw_cast_to(c, a, XC_F64), qparam(c, n->inputs[2], rm, amask)),
                          lw_fconst(c, XC_F64, 0));
    /* B tile [BK,BN] */
    lw_space_t sb;
    memset(&sb, 0, sizeof sb);
    sb.rank = nb + 2;
    for (int i = 0; i < nb; i++) sb.idx[i] = bidx[i];
    if (b1) {
      sb.idx[nb + 1] = kc;
    } else {
      sb.idx[nb] = tb ? rn : kc;
      sb.idx[nb + 1] = tb ? kc : rn;
    }
    lw_val_t* bmask = lw_and(c, lw_lt(c, kc, Kd.v), mn);
    lw_val_t* b = xc_tiled_load(k, lw_buf(c, B), lw_offset_dims(c, &sb, rb, B->dims), bmask, NULL);
    if (qlin)
      b = xc_tiled_select(k, bmask, lw_sub(c, lw_cast_to(c, b, XC_F64), qparam(c, n->inputs[5], rn, bmask)),
                          lw_fconst(c, XC_F64, 0));
    lw_val_t* next = xc_tiled_dot(k, a, b, xc_tiled_for_arg(loop, 0));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  /* output space */
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = ry;
  sy.dims = Y->dims;
  for (int i = 0; i < nb; i++) sy.idx[i] = bidx[i];
  int p = nb;
  if (!a1) sy.idx[p++] = rm;
  if (!b1) sy.idx[p++] = rn;
  sy.mask = lw_and(c, mm, mn);
  if (gemm) {
    double alpha = xc_node_attr_float(n, "alpha"), beta = xc_node_attr_float(n, "beta");
    if (alpha != 1.0) y = lw_mul(c, y, lw_fconst(c, acc_dt, alpha));
    if (C && beta != 0.0) {
      lw_val_t* cv = lw_cast_to(c, lw_load_at(c, &sy, C), acc_dt);
      if (beta != 1.0) cv = lw_mul(c, cv, lw_fconst(c, acc_dt, beta));
      y = lw_add(c, y, cv);
    }
  }
  if (qlin) {
    /* the multiplier in the scales' precision, like the reference */
    const xc_value_t *as = n->inputs[1], *bs = n->inputs[4], *ys = n->inputs[6], *yz = n->inputs[7];
    xc_dtype_t sd = as->dtype;
    lw_val_t* sc = lw_cast_to(c, lw_mul(c, lw_cast_to(c, qparam(c, as, rm, mm), sd), lw_cast_to(c, qparam(c, bs, rn, mn), sd)), sd);
    lw_val_t* mult = lw_cast_to(c, lw_div(c, lw_cast_to(c, sc, XC_F64), qparam(c, ys, NULL, NULL)), sd);
    y = lw_add(c, lw_mul(c, y, lw_cast_to(c, mult, XC_F64)), qparam(c, yz, NULL, NULL));
    lw_val_t* r = xc_tiled_unary(k, XC_TOP_FLOOR, lw_add(c, y, lw_fconst(c, XC_F64, 0.5)));
    lw_val_t* tie = xc_tiled_cmp(k, XC_CMP_EQ, lw_sub(c, r, y), lw_fconst(c, XC_F64, 0.5));
    lw_val_t* odd = xc_tiled_cmp(k, XC_CMP_NE, xc_tiled_binary(k, XC_TOP_REM, r, lw_fconst(c, XC_F64, 2)),
                                 lw_fconst(c, XC_F64, 0));
    y = xc_tiled_select(k, lw_and(c, tie, odd), lw_sub(c, r, lw_fconst(c, XC_F64, 1)), r);
    double lo = Y->dtype == XC_U8 ? 0 : -128, hi = Y->dtype == XC_U8 ? 255 : 127;
    y = xc_tiled_binary(k, XC_TOP_MAX, lw_fconst(c, XC_F64, lo), xc_tiled_binary(k, XC_TOP_MIN, y, lw_fconst(c, XC_F64, hi)));
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, b0);
  lw_iter_end(c, n0);
  lw_iter_end(c, m0);
  return NULL;
}
