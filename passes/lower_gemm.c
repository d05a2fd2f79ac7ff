/* GEMM lowering: MatMul (batched, broadcast batch dims, 1-D promotion) and
 * Gemm (transA/transB, alpha, beta, C) as a tiled dot kernel: programs over
 * (M tiles, N tiles, batch), a K loop accumulating dot(A[BM,BK], B[BK,BN])
 * in f32 (f64 for f64), then the group's elementwise epilogue on the
 * accumulator tile. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const int64_t bm_c[] = {16, 32, 64, 128, 256}, bn_c[] = {16, 32, 64, 128, 256},
                     bk_c[] = {8, 16, 32, 64, 128};

/* A QLinearMatMul scale or zero point as f64: one value, or one per row
 * (idx = rm) or column (idx = rn). */
static lw_val_t* qparam(lw_ctx_t* c, const xc_value_t* v, lw_val_t* idx, lw_val_t* mask) {
  bool one = true;
  for (int d = 0; d < v->rank; d++) one = one && xc_dim_is_static(v->dims[d]) && v->dims[d].value == 1;
  lw_val_t* off = one || !idx ? lw_i64(c, 0) : idx;
  return lw_cast_to(c, xc_tiled_load(c->k, lw_buf(c, v), off, one || !idx ? NULL : mask, NULL), XC_F64);
}

/* Default tiles on a CPU core (limits of xc_tiled_limits_init_cpu: a program
 * is one thread, tiles live on its stack, SIMD lanes <= 16): large tiles,
 * so that the register-blocked dot of the C emitter does BM * BN * BK
 * multiply-adds per (BM + BN) * BK packed operand elements, shrunk to the
 * problem (no 128-row tile for 3 rows) and until there are at least 8
 * programs to spread over the cores. Other targets keep 32 x 32 x 16. */
static void cpu_tile_defaults(const lw_ctx_t* c, xc_dim_t M, xc_dim_t N, xc_dim_t K, const xc_dim_t* ydims, int nb,
                              int64_t* bm, int64_t* bn, int64_t* bk) {
  const xc_tiled_limits_t* l = c->limits;
  if (!lw_cpu_limits(c)) return;
  int64_t m = xc_dim_is_static(M) ? M.value : 4096, n = xc_dim_is_static(N) ? N.value : 4096;
  int64_t k = xc_dim_is_static(K) ? K.value : 4096, batch = 1;
  for (int i = 0; i < nb; i++) batch *= xc_dim_is_static(ydims[i]) ? ydims[i].value : 1;
  *bm = 128, *bn = 128, *bk = 64;
  while (*bm * *bn > l->value[XC_TILED_LIMIT_MAX_TILE_ELEMS] && *bm > 16) *bm /= 2;
  while (*bm > 16 && *bm / 2 >= m) *bm /= 2;
  while (*bn > 16 && *bn / 2 >= n) *bn /= 2;
  while (*bk > 8 && *bk / 2 >= k) *bk /= 2;
  for (;;) {
    int64_t programs = ((m + *bm - 1) / *bm) * ((n + *bn - 1) / *bn) * batch;
    if (programs >= 8 || (*bm <= 32 && *bn <= 32)) break;
    if (*bm >= *bn) *bm /= 2;
    else *bn /= 2;
  }
}

/* ---- the gemm pattern (docs/tiled-ir.md, "Patterns") ----
 * Element [batch, i, j] of an operand stored as is (no absorbed view) in
 * kernel parameter `param`: " name=param,base,sbatch,si,sj". The batch
 * stride is 0 for a 2-D operand broadcast over the batch, the dims' product
 * for one of the output's batch dims; other broadcasts: no pattern. */
static bool gemm_operand(lw_ctx_t* c, char* out, size_t size, const char* name, const xc_value_t* v, int nb,
                         const xc_value_t* Y, bool trans) {
  if (lw_absorbed_producer(c, v) || v->rank < 2) return false;
  int r = v->rank;
  for (int d = 0; d < r; d++)
    if (!xc_dim_is_static(v->dims[d])) return false;
  int64_t rows = v->dims[r - 2].value, cols = v->dims[r - 1].value, sb = 0;
  if (r > 2) {
    if (r - 2 != nb) return false;
    for (int d = 0; d < nb; d++)
      if (!xc_dim_is_static(Y->dims[d]) || v->dims[d].value != Y->dims[d].value) return false;
    sb = rows * cols;
  }
  lw_val_t* p = lw_buf(c, v);
  int pi = -1;
  for (int i = 0; p && i < c->k->num_params; i++)
    if (c->k->params[i] == p) pi = i;
  if (pi < 0) return false;
  size_t len = strlen(out);
  snprintf(out + len, size - len, " %s=%d,0,%lld,%lld,%lld", name, pi, (long long)sb,
           (long long)(trans ? 1 : cols), (long long)(trans ? cols : 1));
  return true;
}

/* The group's epilogue when it is one xcomp.SwiGLU of the product Y and a
 * tensor U of Y's shape and type, Y used nowhere else: "swiglu_a" when Y is
 * the gated input (SwiGLU(Y, U) = silu(Y) U), "swiglu_b" when U is; *u, *z
 * are U and the SwiGLU's output. NULL: another epilogue. */
static const char* swiglu_epilogue(lw_ctx_t* c, const xc_value_t* Y, const xc_value_t** u, const xc_value_t** z) {
  const xc_node_t* e = c->phase->nodes[1];
  if (strcmp(e->op_type, "SwiGLU") || !e->domain || strcmp(e->domain, "xcomp") || e->num_inputs != 2 ||
      e->num_outputs != 1 || c->must_store[Y->id])
    return NULL;
  int yi = e->inputs[0] == Y ? 0 : e->inputs[1] == Y ? 1 : -1;
  const xc_value_t *U = yi >= 0 ? e->inputs[1 - yi] : NULL, *Z = e->outputs[0];
  if (!U || U == Y || U->dtype != Y->dtype || Z->dtype != Y->dtype || U->rank != Y->rank || Z->rank != Y->rank)
    return NULL;
  for (int d = 0; d < Y->rank; d++)
    if (!xc_dim_equal(U->dims[d], Y->dims[d]) || !xc_dim_equal(Z->dims[d], Y->dims[d])) return NULL;
  *u = U, *z = Z;
  return yi == 0 ? "swiglu_a" : "swiglu_b";
}

/* Sets the kernel's "gemm" pattern when the group is the product alone or
 * the product and a SwiGLU epilogue with another tensor of its shape (the
 * gate and up projections of a transformer's MLP): 16-bit operands on a
 * device with matrix instructions for them, f32 accumulation, static
 * shapes, no other epilogue (Gemm: alpha 1, no C), operands read from their
 * buffers directly and the output stored as is. */
static void set_gemm_pattern(lw_ctx_t* c, const xc_node_t* n, bool ta, bool tb, int nb) {
  const xc_value_t *A = n->inputs[0], *B = n->inputs[1], *Y = n->outputs[0];
  if (c->multi_phase || c->phase->num_nodes > 2 || c->phase->num_pro || c->index_error || c->remap_out) return;
  const xc_value_t *U = NULL, *Z = Y;
  const char* epi = c->phase->num_nodes == 2 ? swiglu_epilogue(c, Y, &U, &Z) : "";
  if (!epi) return;
  if (!(A->dtype == XC_F16 || A->dtype == XC_BF16) || Y->dtype != A->dtype || !lw_has_mma(c, A->dtype)) return;
  if (!strcmp(n->op_type, "Gemm") &&
      (xc_node_attr_float(n, "alpha") != 1.0 || (n->num_inputs > 2 && n->inputs[2] && xc_node_attr_float(n, "beta") != 0.0)))
    return;
  if (Y->rank != nb + 2 || !c->must_store[Z->id]) return;
  for (int d = 0; d < Y->rank; d++)
    if (!xc_dim_is_static(Y->dims[d])) return;
  int64_t batch = 1;
  for (int d = 0; d < nb; d++) batch *= Y->dims[d].value;
  int64_t M = Y->dims[nb].value, N = Y->dims[nb + 1].value;
  int64_t K = ta ? A->dims[A->rank - 2].value : A->dims[A->rank - 1].value;
  char pat[256];
  snprintf(pat, sizeof pat, "gemm dtype=%s batch=%lld m=%lld n=%lld k=%lld", xc_dtype_name(A->dtype),
           (long long)batch, (long long)M, (long long)N, (long long)K);
  bool ok = gemm_operand(c, pat, sizeof pat, "a", A, nb, Y, ta) && gemm_operand(c, pat, sizeof pat, "b", B, nb, Y, tb) &&
            gemm_operand(c, pat, sizeof pat, "y", Z, nb, Y, false);
  if (ok && U) {
    size_t len = strlen(pat);
    snprintf(pat + len, sizeof pat - len, " epi=%s", epi);
    ok = gemm_operand(c, pat, sizeof pat, "u", U, nb, Y, false);
  }
  if (ok) {
    xc_tiled_set_pattern(c->k, pat);
    c->threads_extra[0] = 384; /* three warpgroups: the cuda target's sm_90 program */
  }
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
   * K loop (emitters use fewer stages where the buffers do not fit); BLOCK_K
   * 32 (16-bit) or 16 (f32) columns, so three stages of both 16-bit operand
   * tiles fit 48 KiB of static shared memory. CPUs get tiles sized to their caches
   * (cpu_tile_defaults). */
  bool mma = !qlin && !c->multi_phase && lw_has_mma(c, dt);
  int64_t dbm = 32, dbn = 32, dbk = 16, dst = 3;
  if (mma) dbm = 128, dbn = 128, dbk = dt != XC_F32 ? 32 : 16;
  else cpu_tile_defaults(c, M, N, K, Y->dims, nb, &dbm, &dbn, &dbk);
  /* Where the operand buffers may outgrow static shared memory (limits
   * "staged_bytes": CUDA's dynamic opt-in), 16-bit GEMMs of K >= 128 take K
   * tiles of 64 in two stages (64 KiB): on the H200 (bf16 4096^3) 300
   * TFLOP/s against 263-272 for three stages of 32 (bench/RESULTS.md,
   * section 8). */
  if (mma && dt != XC_F32 && c->limits->value[XC_TILED_LIMIT_STAGED_BYTES] >= 96 * 1024 && xc_dim_is_static(K) &&
      K.value >= 128)
    dbk = 64, dst = 2;
  /* 256-wide tiles only on matrix instructions (eight warps of 64x64 on CUDA) */
  /* On a CPU, fewer rows than the smallest tile (a batch-1 classifier's one
   * row) are a candidate of their own and the default: a 16-row tile
   * multiplied 15 rows of nothing. */
  int64_t mcands[6];
  int nm = mma ? 5 : 4;
  memcpy(mcands, bm_c, (size_t)nm * sizeof *mcands);
  if (!mma && lw_cpu_limits(c) && xc_dim_is_static(M) && M.value >= 1 && M.value < bm_c[0]) {
    mcands[nm++] = M.value;
    dbm = M.value;
  } else if (!mma && lw_cpu_limits(c) && xc_dim_is_static(M) && M.value % dbm) {
    /* Likewise rows that the default tile leaves ragged take tiles as even
     * as the blocked dot's 8-row blocks allow, in as many tiles: 24 rows
     * (a batch-1 decoder's 24 tokens) in one tile of 24, not 32; 100 in two
     * of 56, not 64 (every row of a tile is computed) */
    int64_t t = (M.value + dbm - 1) / dbm, em = ((M.value + t - 1) / t + 7) / 8 * 8;
    if (em < dbm && !lw_listed(mcands, nm, em)) {
      mcands[nm++] = em;
      dbm = em;
    }
  }
  int kBM = lw_knob(c, "BLOCK_M", nm, mcands, dbm);
  int kBN = lw_knob(c, "BLOCK_N", mma ? 5 : 4, bn_c, dbn);
  int kBK = lw_knob(c, "BLOCK_K", 5, bk_c, dbk);
  if (mma) {
    static const int64_t st_c[] = {1, 2, 3, 4, 5, 6}, tf_c[] = {1};
    char name[32];
    snprintf(name, sizeof name, "STAGES_p%d", c->phase_index);
    xc_tiled_add_knob(k, name, XC_KNOB_STAGES, 6, st_c, dst);
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
  if (mma && !qlin && !a1 && !b1) set_gemm_pattern(c, n, ta, tb, nb);
  return NULL;
}

/* ---- Einsum ----------------------------------------------------------------
 * A flat space over the output; a loop over the flattened contraction labels
 * (those not in the output) carries a [BLOCK] accumulator; each operand is
 * loaded at its labels' indices (output tile indices or loop scalars, so a
 * repeated label reads a diagonal) and the product accumulated. Ellipsis
 * labels stand for the leading dims of each operand, aligned from the right.
 */
enum { EIN_ELL = 52, EIN_MAX_LABELS = EIN_ELL + LW_MAX_RANK }; /* a-z, A-Z, then ellipsis dims */

static int ein_label(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
  return -1;
}

/* Parses one term (no spaces) of rank `rank` (-1: the output, ellipsis of
 * `ell` dims) into labels; false when malformed. */
static bool ein_term(const char* s, size_t len, int rank, int ell, int* labels, int* count) {
  int n = 0, explicit_n = 0;
  bool has_ell = false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || has_ell) return false;
      has_ell = true;
      i += 2;
    } else if (ein_label(s[i]) >= 0) {
      explicit_n++;
    } else {
      return false;
    }
  }
  int e = has_ell ? (rank >= 0 ? rank - explicit_n : ell) : 0;
  if (e < 0 || (rank >= 0 && !has_ell && explicit_n != rank)) return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      for (int j = 0; j < e; j++) labels[n++] = EIN_ELL + (ell - e) + j; /* right-aligned */
      i += 2;
    } else {
      labels[n++] = ein_label(s[i]);
    }
  }
  *count = n;
  return true;
}

xc_status_t lw_emit_einsum(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t* Y = n->outputs[0];
  const char* eq = xc_node_attr_string(n, "equation");
  if (!eq || n->num_inputs > 8) return lw_unsupported(c, n, "equation");
  char buf[256];
  size_t bl = 0;
  for (const char* p = eq; *p && bl + 1 < sizeof buf; p++)
    if (*p != ' ') buf[bl++] = *p;
  buf[bl] = '\0';
  const char* arrow = strstr(buf, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - buf) : bl;
  int labels[8][LW_MAX_RANK], counts[8] = {0};
  int ell = 0; /* the most ellipsis dims of any operand */
  int64_t size[EIN_MAX_LABELS];
  int uses[EIN_MAX_LABELS] = {0};
  for (int l = 0; l < EIN_MAX_LABELS; l++) size[l] = -1;
  const char* t = buf;
  for (int i = 0; i < n->num_inputs; i++) {
    const xc_value_t* X = n->inputs[i];
    const char* end = memchr(t, ',', lhs_len - (size_t)(t - buf));
    size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - buf);
    if ((i + 1 < n->num_inputs) != (end != NULL) || !X || X->rank > LW_MAX_RANK)
      return lw_unsupported(c, n, "equation '%s'", eq);
    int explicit_n = 0;
    for (size_t j = 0; j < len; j++) explicit_n += ein_label(t[j]) >= 0;
    if (memchr(t, '.', len) && X->rank - explicit_n > ell) ell = X->rank - explicit_n;
    t += len + 1;
  }
  t = buf;
  for (int i = 0; i < n->num_inputs; i++) {
    const xc_value_t* X = n->inputs[i];
    const char* end = memchr(t, ',', lhs_len - (size_t)(t - buf));
    size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - buf);
    if (!ein_term(t, len, X->rank, ell, labels[i], &counts[i]) || counts[i] != X->rank)
      return lw_unsupported(c, n, "equation '%s'", eq);
    for (int d = 0; d < X->rank; d++) {
      int l = labels[i][d];
      if (X->dims[d].sym) return lw_unsupported(c, n, "symbolic dims");
      int64_t v = X->dims[d].value;
      if (size[l] < 0 || size[l] == 1) size[l] = v;
      else if (v != 1 && v != size[l]) return lw_unsupported(c, n, "label sizes differ");
      uses[l]++;
    }
    t += len + 1;
  }
  int out[LW_MAX_RANK], no = 0;
  if (arrow) {
    if (!ein_term(arrow + 2, strlen(arrow + 2), -1, ell, out, &no)) return lw_unsupported(c, n, "equation '%s'", eq);
  } else { /* implicit: ellipsis dims, then the labels used once, in order */
    for (int l = EIN_ELL; l < EIN_ELL + ell; l++) out[no++] = l;
    for (int l = 0; l < EIN_ELL; l++)
      if (uses[l] == 1) out[no++] = l;
  }
  if (no != Y->rank) return lw_unsupported(c, n, "output rank");
  bool in_out[EIN_MAX_LABELS] = {0};
  for (int d = 0; d < no; d++) {
    if (size[out[d]] < 0 || in_out[out[d]]) return lw_unsupported(c, n, "output label");
    in_out[out[d]] = true;
  }
  int red[EIN_MAX_LABELS], nr = 0;
  xc_dim_t rdims[LW_MAX_RANK];
  for (int l = 0; l < EIN_MAX_LABELS; l++)
    if (size[l] >= 0 && !in_out[l]) {
      if (nr == LW_MAX_RANK) return lw_unsupported(c, n, "too many contracted labels");
      rdims[nr] = xc_dim_const(size[l]);
      red[nr++] = l;
    }
  xc_dtype_t at = Y->dtype == XC_F64 ? XC_F64 : xc_dtype_is_float(Y->dtype) ? XC_F32 : Y->dtype;
  static const int64_t blk[] = {32, 64, 128, 256};
  int kb = lw_knob(c, "BLOCK", 4, blk, 64);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* lidx[EIN_MAX_LABELS] = {0};
  for (int d = 0; d < no; d++) lidx[out[d]] = sp.idx[d];
  xc_tiled_dim_t bd = xc_tiled_dim_knob(kb);
  lw_val_t* init = xc_dtype_is_float(at) ? xc_tiled_const_f(k, at, 0, 1, &bd) : xc_tiled_const_i(k, at, 0, 1, &bd);
  int64_t R = 1;
  for (int i = 0; i < nr; i++) R *= rdims[i].value;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), lw_i64(c, 1), 1, &init);
  lw_val_t* ridx[LW_MAX_RANK];
  lw_decompose(c, xc_tiled_for_iv(loop), nr, rdims, ridx);
  for (int i = 0; i < nr; i++) lidx[red[i]] = ridx[i];
  lw_val_t* prod = NULL;
  for (int i = 0; i < n->num_inputs; i++) {
    const xc_value_t* X = n->inputs[i];
    lw_space_t s2 = sp;
    s2.rank = X->rank;
    s2.dims = X->dims;
    for (int d = 0; d < X->rank; d++) /* a size-1 dim of a broadcast label reads index 0 */
      s2.idx[d] = X->dims[d].value == 1 ? lw_i64(c, 0) : lidx[labels[i][d]];
    lw_val_t* v = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &s2, X), sp.mask, NULL), at);
    prod = prod ? lw_mul(c, prod, v) : v;
  }
  if (!prod) prod = lw_fconst(c, at, 1);
  lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), prod);
  xc_tiled_for_end(k, loop, 1, &next);
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, lw_cast_to(c, xc_tiled_for_result(loop, 0), Y->dtype)));
  lw_iter_end(c, start);
  return NULL;
}

/* ---- Det -------------------------------------------------------------------
 * One program per matrix: Gaussian elimination with partial pivoting on the
 * matrix held as an [NN, NN] f64 tile (NN a power of two, padding filled
 * with the identity), carried by a loop over the pivot columns with the
 * running determinant. Each step picks the first row of largest magnitude in
 * the column, swaps it up (negating the determinant), multiplies the
 * determinant by the pivot and eliminates below it; a zero pivot gives 0. */
xc_status_t lw_emit_det(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  int r = X->rank;
  if (c->phase->num_nodes > 1) return lw_unsupported(c, n, "fused consumers");
  if (r < 2 || X->dims[r - 1].sym || X->dims[r - 2].sym || !xc_dtype_is_float(X->dtype))
    return lw_unsupported(c, n, "shape or dtype");
  int64_t m = X->dims[r - 1].value, NN = 1;
  while (NN < m) NN *= 2;
  if (NN > 64) return lw_unsupported(c, n, "matrix larger than 64");
  xc_dtype_t F = XC_F64;
  lw_val_t* bidx = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), -1, 1);
  lw_val_t* rows = lw_col(c, xc_tiled_arange(k, xc_tiled_dim_const(NN)));
  lw_val_t* cols = lw_row(c, xc_tiled_arange(k, xc_tiled_dim_const(NN)));
  lw_val_t* vm = lw_i64(c, m);
  lw_val_t* inside = lw_and(c, lw_lt(c, rows, vm), lw_lt(c, cols, vm));
  lw_val_t* off = lw_add(c, lw_mul(c, bidx, lw_i64(c, m * m)), lw_add(c, lw_mul(c, rows, vm), cols));
  lw_val_t* a = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), off, inside, NULL), F);
  lw_val_t* diag = xc_tiled_cmp(k, XC_CMP_EQ, rows, cols);
  a = xc_tiled_select(k, lw_and(c, diag, xc_tiled_cmp(k, XC_CMP_GE, rows, vm)), lw_fconst(c, F, 1), a);
  lw_val_t* zero = lw_fconst(c, F, 0);
  lw_val_t* init[2] = {a, lw_fconst(c, F, 1)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), vm, lw_i64(c, 1), 2, init);
  {
    lw_val_t* p = xc_tiled_for_iv(loop);
    lw_val_t* A = xc_tiled_for_arg(loop, 0);
    lw_val_t* det = xc_tiled_for_arg(loop, 1);
    lw_val_t* colp = lw_col(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, cols, p), A, zero), 1));
    lw_val_t* cand = xc_tiled_cmp(k, XC_CMP_GE, rows, p); /* [NN,1] */
    lw_val_t* mag = xc_tiled_select(k, cand, xc_tiled_unary(k, XC_TOP_ABS, colp), lw_fconst(c, F, -1));
    lw_val_t* best = xc_tiled_reduce(k, XC_REDUCE_MAX, xc_tiled_reduce(k, XC_REDUCE_MAX, mag, 1), 0);
    lw_val_t* hit = lw_and(c, cand, xc_tiled_cmp(k, XC_CMP_EQ, mag, best));
    lw_val_t* piv = xc_tiled_reduce(k, XC_REDUCE_MIN, xc_tiled_reduce(k, XC_REDUCE_MIN, xc_tiled_select(k, hit, rows, lw_i64(c, INT64_MAX)), 1), 0);
    lw_val_t* at_p = xc_tiled_cmp(k, XC_CMP_EQ, rows, p), *at_piv = xc_tiled_cmp(k, XC_CMP_EQ, rows, piv);
    lw_val_t* row_p = lw_row(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, at_p, A, zero), 0));
    lw_val_t* row_v = lw_row(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, at_piv, A, zero), 0));
    lw_val_t* S = xc_tiled_select(k, at_p, row_v, xc_tiled_select(k, at_piv, row_p, A)); /* rows swapped */
    lw_val_t* pv = xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_reduce(k, XC_REDUCE_SUM,
                       xc_tiled_select(k, lw_and(c, at_p, xc_tiled_cmp(k, XC_CMP_EQ, cols, p)), S, zero), 1), 0);
    lw_val_t* swapped = xc_tiled_cmp(k, XC_CMP_NE, piv, p);
    lw_val_t* nz = xc_tiled_cmp(k, XC_CMP_NE, pv, zero);
    lw_val_t* d2 = lw_mul(c, xc_tiled_select(k, swapped, lw_sub(c, zero, det), det), pv);
    /* below the pivot: row -= (S[row, p] / pv) * S[p, :] */
    lw_val_t* scol = lw_col(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, cols, p), S, zero), 1));
    lw_val_t* f = xc_tiled_select(k, lw_and(c, xc_tiled_cmp(k, XC_CMP_GT, rows, p), nz),
                                  lw_div(c, scol, xc_tiled_select(k, nz, pv, lw_fconst(c, F, 1))), zero);
    lw_val_t* srow = lw_row(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, at_p, S, zero), 0));
    lw_val_t* next[2] = {lw_sub(c, S, lw_mul(c, f, srow)), d2};
    xc_tiled_for_end(k, loop, 2, next);
  }
  lw_val_t* det = xc_tiled_for_result(loop, 1);
  xc_tiled_store(k, lw_buf(c, Y), bidx, lw_cast_to(c, det, Y->dtype), NULL);
  lw_iter_end(c, bidx);
  return NULL;
}
