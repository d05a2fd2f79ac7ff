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

static const int64_t bm_c[] = {8, 16, 32, 64, 128}, bn_c[] = {8, 16, 32, 64, 128};

/* Loads (batch b, head h, position s, channel d) of a 4-D [B, H, seq, hd]
 * operand or a 3-D [B, seq, H*hd] one, through the group's absorbed head
 * reshapes/transposes/splits. */
static lw_val_t* head_load(lw_ctx_t* c, const xc_value_t* X, bool is3d, int64_t H, lw_val_t* b, lw_val_t* h,
                           lw_val_t* s, lw_val_t* d, lw_val_t* mask) {
  lw_val_t* idx[4];
  if (!is3d) {
    idx[0] = b, idx[1] = h, idx[2] = s, idx[3] = d;
  } else {
    idx[0] = b, idx[1] = s, idx[2] = lw_add(c, lw_mul(c, h, lw_i64(c, X->dims[2].value / H)), d);
  }
  const xc_value_t* buf = NULL;
  lw_val_t* off = lw_virtual_offset(c, X, idx, &buf);
  return xc_tiled_load(c->k, lw_buf(c, buf), off, mask, NULL);
}

/* K or V at cache positions pos (past first, then the new keys), channel d. */
static lw_val_t* kv_load(lw_ctx_t* c, const xc_value_t* X, const xc_value_t* past, bool is3d, int64_t H,
                         lw_val_t* b, lw_val_t* h, lw_val_t* pos, lw_val_t* d, lw_val_t* P, lw_val_t* mask) {
  xc_tiled_kernel_t* k = c->k;
  if (!past) return head_load(c, X, is3d, H, b, h, pos, d, mask);
  lw_val_t* in_past = lw_lt(c, pos, P);
  lw_space_t sp;
  memset(&sp, 0, sizeof sp);
  sp.rank = 4;
  sp.idx[0] = b, sp.idx[1] = h, sp.idx[2] = pos, sp.idx[3] = d;
  lw_val_t* a = xc_tiled_load(k, lw_buf(c, past), lw_offset(c, &sp, past), lw_and(c, mask, in_past), NULL);
  lw_val_t* bnew = head_load(c, X, is3d, H, b, h, lw_sub(c, pos, P), d,
                             lw_and(c, mask, xc_tiled_cmp(k, XC_CMP_GE, pos, P)));
  return xc_tiled_select(k, in_past, a, bnew);
}

/* Everything the score tile of a key block needs. */
typedef struct att {
  lw_ctx_t* c;
  const xc_value_t *K, *PK, *mask, *QK;
  bool is3d, causal;
  int64_t Hk, D;
  int mode;
  double softcap;
  xc_dtype_t at;
  bool half; /* 16-bit dot operands (matrix instructions), the scale applied to the scores */
  double scale;
  lw_val_t *b, *h, *hk, *rm, *d_col, *P, *L, *q, *s_zero, *mmask;
} att_t;

/* Scores of keys rn ([1,BN]) for the query tile: scale*qk, plus the float
 * mask, -inf where masked (bool mask, causal, padding), softcapped; *valid
 * is the unmasked set. Stores the requested qk_matmul output mode 0-2. */
static lw_val_t* scores(att_t* A, lw_val_t* rn_row, lw_val_t** valid_out) {
  lw_ctx_t* c = A->c;
  xc_tiled_kernel_t* k = c->k;
  lw_val_t* ninf = lw_fconst(c, A->at, -INFINITY);
  lw_val_t* inside = lw_and(c, lw_lt(c, rn_row, A->L), A->mmask);
  lw_space_t sq;
  memset(&sq, 0, sizeof sq);
  sq.rank = 4;
  sq.idx[0] = A->b, sq.idx[1] = A->h, sq.idx[2] = A->rm, sq.idx[3] = rn_row;
  sq.mask = inside;
  /* K^T tile [BD,BN] */
  lw_val_t* kT = kv_load(c, A->K, A->PK, A->is3d, A->Hk, A->b, A->hk, rn_row, A->d_col, A->P,
                         lw_and(c, lw_lt(c, rn_row, A->L), lw_lt(c, A->d_col, lw_i64(c, A->D))));
  if (!A->half) kT = lw_cast_to(c, kT, A->at);
  lw_val_t* s = xc_tiled_dot(k, A->q, kT, A->s_zero);
  if (A->half) s = lw_mul(c, s, lw_fconst(c, A->at, A->scale));
  if (A->QK && A->mode == 0) lw_store_at(c, &sq, A->QK, s);
  lw_val_t* valid = inside;
  if (A->causal) valid = lw_and(c, valid, xc_tiled_cmp(k, XC_CMP_LE, rn_row, lw_add(c, A->rm, A->P)));
  if (A->mask) {
    lw_val_t* mv = xc_tiled_load(k, lw_buf(c, A->mask), lw_offset(c, &sq, A->mask), inside, NULL);
    if (A->mask->dtype == XC_BOOL) valid = lw_and(c, valid, mv);
    else s = lw_add(c, s, lw_cast_to(c, mv, A->at));
  }
  s = xc_tiled_select(k, valid, s, ninf);
  if (A->QK && A->mode == 1) lw_store_at(c, &sq, A->QK, s);
  if (A->softcap > 0) /* like the reference, masked scores become -softcap */
    s = xc_tiled_select(k, inside, lw_mul(c, lw_fconst(c, A->at, A->softcap),
                                          xc_tiled_unary(k, XC_TOP_TANH, lw_div(c, s, lw_fconst(c, A->at, A->softcap)))),
                        ninf);
  if (A->QK && A->mode == 2) lw_store_at(c, &sq, A->QK, s);
  *valid_out = valid;
  return s;
}


/* ---- the attention pattern (docs/tiled-ir.md, "Patterns") ----
 * An operand's element offset as an affine function of the attention
 * coordinates x = (batch, head, position, channel): sum coef[a]*x[a] + cst,
 * proved through the absorbed head views without sampling. */
typedef struct aff {
  int64_t coef[4], cst;
} aff_t;

/* flat index over dims of the affine indices idx (static dims) */
static aff_t aff_flat(int rank, const xc_dim_t* dims, const aff_t* idx) {
  aff_t f;
  memset(&f, 0, sizeof f);
  int64_t pitch = 1;
  for (int d = rank - 1; d >= 0; d--) {
    for (int a = 0; a < 4; a++) f.coef[a] += idx[d].coef[a] * pitch;
    f.cst += idx[d].cst * pitch;
    pitch *= dims[d].value;
  }
  return f;
}

/* Splits flat (coordinates a over 0..n[a]-1) into indices over dims when
 * every term lands in one index without a carry: coefficient c_a = m * P_j
 * with P_j <= c_a < P_j * U_j (P_j the pitch of index j, U_j its extent),
 * and per index the constant's digit plus the largest sum of its terms
 * stays below U_j. Then index j is that digit plus sum m_a x_a, exactly. */
static bool aff_split(aff_t flat, const int64_t* n, int rank, const xc_dim_t* dims, aff_t* out) {
  int64_t pitch[LW_MAX_RANK], hi[LW_MAX_RANK];
  int64_t p = 1;
  for (int j = rank - 1; j >= 0; j--) pitch[j] = p, p *= dims[j].value;
  if (flat.cst < 0 || flat.cst >= p) return false;
  memset(out, 0, (size_t)rank * sizeof *out);
  for (int j = 0; j < rank; j++) {
    out[j].cst = (flat.cst / pitch[j]) % dims[j].value;
    hi[j] = out[j].cst;
  }
  for (int a = 0; a < 4; a++) {
    int64_t ca = flat.coef[a];
    if (n[a] <= 1 || ca == 0) continue;
    if (ca < 0) return false;
    int j = 0;
    while (j < rank && !(ca >= pitch[j] && ca < pitch[j] * dims[j].value)) j++;
    if (j == rank || ca % pitch[j]) return false;
    out[j].coef[a] = ca / pitch[j];
    hi[j] += out[j].coef[a] * (n[a] - 1);
    if (hi[j] >= dims[j].value) return false;
  }
  return true;
}

static bool static_dims(const xc_value_t* v) {
  for (int d = 0; d < v->rank; d++)
    if (!xc_dim_is_static(v->dims[d])) return false;
  return v->rank <= LW_MAX_RANK;
}

/* The buffer and the affine offset of X[b, h, s, d] (4-D) or X[b, s, h*hd
 * + d] (3-D), through the group's absorbed views, transposes and splits (as
 * lw_virtual_offset walks them). False: not provably affine. */
static bool aff_operand(lw_ctx_t* c, const xc_value_t* v, bool is3d, int64_t hd, const int64_t* n,
                        const xc_value_t** buf, aff_t* off) {
  aff_t idx[LW_MAX_RANK];
  memset(idx, 0, sizeof idx);
  if (!static_dims(v) || v->rank != (is3d ? 3 : 4)) return false;
  if (is3d) {
    idx[0].coef[0] = 1, idx[1].coef[2] = 1, idx[2].coef[1] = hd, idx[2].coef[3] = 1;
  } else {
    for (int d = 0; d < 4; d++) idx[d].coef[d] = 1;
  }
  for (const xc_node_t* nd; (nd = lw_absorbed_producer(c, v));) {
    const xc_value_t* u = nd->inputs[0];
    aff_t nidx[LW_MAX_RANK];
    memset(nidx, 0, sizeof nidx);
    if (!static_dims(u)) return false;
    if (lw_is_view(nd)) {
      if (!aff_split(aff_flat(v->rank, v->dims, idx), n, u->rank, u->dims, nidx)) return false;
    } else if (!strcmp(nd->op_type, "Transpose")) {
      int64_t cnt = 0;
      const int64_t* perm = xc_node_attr_ints(nd, "perm", &cnt);
      for (int d = 0; d < v->rank; d++) nidx[perm && cnt == v->rank ? perm[d] : v->rank - 1 - d] = idx[d];
    } else { /* Split */
      int64_t axis = xc_node_attr_int(nd, "axis");
      if (axis < 0) axis += u->rank;
      if (axis < 0 || axis >= u->rank || u->rank != v->rank) return false;
      int64_t o = 0;
      for (int j = 0; j < nd->num_outputs && nd->outputs[j] != v; j++) {
        if (!xc_dim_is_static(nd->outputs[j]->dims[axis])) return false;
        o += nd->outputs[j]->dims[axis].value;
      }
      for (int d = 0; d < v->rank; d++) nidx[d] = idx[d];
      nidx[axis].cst += o;
    }
    memcpy(idx, nidx, sizeof idx);
    v = u;
  }
  *buf = v;
  *off = aff_flat(v->rank, v->dims, idx);
  return true;
}

static int param_index(lw_ctx_t* c, const xc_value_t* buf) {
  lw_val_t* p = lw_buf(c, buf);
  for (int i = 0; p && i < c->k->num_params; i++)
    if (c->k->params[i] == p) return i;
  return -1;
}

/* One operand of the pattern: " name=param,base,sb,sh,ss" (channel stride 1). */
static bool pattern_operand(lw_ctx_t* c, char* out, size_t size, const char* name, const xc_value_t* buf,
                            aff_t off) {
  int pi = param_index(c, buf);
  if (pi < 0 || off.coef[3] != 1) return false;
  size_t len = strlen(out);
  snprintf(out + len, size - len, " %s=%d,%lld,%lld,%lld,%lld", name, pi, (long long)off.cst,
           (long long)off.coef[0], (long long)off.coef[1], (long long)off.coef[2]);
  return true;
}

/* Sets the kernel's "attention" pattern when the group is that computation
 * alone: 16-bit Q, K, V of one head size (a multiple of 16, at most 256),
 * static shapes, no mask tensor, past, softcap or extra outputs, read
 * through views whose offsets are affine with contiguous channels, and the
 * output stored as is or through a Transpose that keeps channels last. */
static void set_pattern(lw_ctx_t* c, const xc_node_t* n, bool is3d, int64_t Hq, int64_t Hk, int64_t D, int64_t Dv,
                        bool causal, double scale) {
  const xc_value_t *Q = n->inputs[0], *K = n->inputs[1], *V = n->inputs[2], *Y = n->outputs[0];
  int seq = is3d ? 1 : 2;
  if (c->multi_phase || c->phase->num_nodes != 1 || c->phase->num_pro || c->index_error) return;
  if (D != Dv || D % 16 || D > 256 || !static_dims(Q) || !static_dims(K)) return;
  int64_t B = Q->dims[0].value, S = Q->dims[seq].value, L = K->dims[seq].value;
  if (B < 1 || S < 1 || L < 1) return;
  const int64_t nq[4] = {B, Hq, S, D}, nk[4] = {B, Hk, L, D};
  const xc_value_t *bq, *bk, *bv;
  aff_t oq, ok, ov, oo;
  if (!aff_operand(c, Q, is3d, D, nq, &bq, &oq) || !aff_operand(c, K, is3d, D, nk, &bk, &ok) ||
      !aff_operand(c, V, is3d, D, nk, &bv, &ov))
    return;
  /* the output: Y[b,h,s,d] or Y[b,s,h*D+d], or T = Transpose(Y) */
  const xc_value_t* out = Y;
  aff_t yidx[4];
  memset(yidx, 0, sizeof yidx);
  if (is3d) {
    yidx[0].coef[0] = 1, yidx[1].coef[2] = 1, yidx[2].coef[1] = D, yidx[2].coef[3] = 1;
  } else {
    for (int d = 0; d < 4; d++) yidx[d].coef[d] = 1;
  }
  if (c->remap_out) {
    const xc_node_t* t = c->remap_out;
    out = t->outputs[0];
    if (c->phase->num_nodes != 1) return;
    int64_t cnt = 0;
    const int64_t* perm = xc_node_attr_ints(t, "perm", &cnt);
    if (out->rank != Y->rank) return;
    aff_t tidx[4];
    for (int d = 0; d < out->rank; d++) tidx[d] = yidx[perm && cnt == out->rank ? perm[d] : out->rank - 1 - d];
    memcpy(yidx, tidx, sizeof yidx);
  }
  if (!static_dims(out) || (!c->remap_out && !c->must_store[out->id])) return;
  oo = aff_flat(out->rank, out->dims, yidx);
  char pat[512];
  snprintf(pat, sizeof pat, "attention dtype=%s b=%lld hq=%lld hk=%lld s=%lld l=%lld d=%lld causal=%d scale=%.17g",
           xc_dtype_name(Q->dtype), (long long)B, (long long)Hq, (long long)Hk, (long long)S, (long long)L,
           (long long)D, causal ? 1 : 0, scale);
  if (pattern_operand(c, pat, sizeof pat, "q", bq, oq) && pattern_operand(c, pat, sizeof pat, "k", bk, ok) &&
      pattern_operand(c, pat, sizeof pat, "v", bv, ov) && pattern_operand(c, pat, sizeof pat, "o", out, oo)) {
    xc_tiled_set_pattern(c->k, pat);
    /* a producer and two consumer warpgroups: the cuda target's sm_90 program */
    c->threads_extra[0] = 384;
  }
}

xc_status_t lw_emit_attention(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *Q = n->inputs[0], *K = n->inputs[1], *V = n->inputs[2], *Y = n->outputs[0];
  const xc_value_t* mask = n->num_inputs > 3 ? n->inputs[3] : NULL;
  const xc_value_t* PK = n->num_inputs > 4 ? n->inputs[4] : NULL;
  const xc_value_t* PV = n->num_inputs > 5 ? n->inputs[5] : NULL;
  if (n->num_inputs > 6 && n->inputs[6]) return lw_unsupported(c, n, "nonpad_kv_seqlen");
  if (!PK != !PV || (PK && (PK->rank != 4 || PV->rank != 4))) return lw_unsupported(c, n, "past key/value shapes");
  const xc_value_t* QK = n->num_outputs > 3 && n->outputs[3] && c->must_store[n->outputs[3]->id] ? n->outputs[3] : NULL;
  int qk_mode = (int)xc_node_attr_int(n, "qk_matmul_output_mode");
  if (QK && (qk_mode < 0 || qk_mode > 3)) return lw_unsupported(c, n, "qk_matmul_output_mode %d", qk_mode);
  const xc_value_t* PRK = n->num_outputs > 1 && n->outputs[1] && c->must_store[n->outputs[1]->id] ? n->outputs[1] : NULL;
  const xc_value_t* PRV = n->num_outputs > 2 && n->outputs[2] && c->must_store[n->outputs[2]->id] ? n->outputs[2] : NULL;
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
  xc_dim_t past_d = PK ? PK->dims[2] : xc_dim_const(0);
  xc_dim_t total_d = xc_dim_add(c->g, past_d, K->dims[seq]);
  if (mask && mask->rank >= 1 && !xc_dim_equal(mask->dims[mask->rank - 1], total_d))
    return lw_unsupported(c, n, "attn_mask shorter than the keys");
  double scale = xc_node_has_attr(n, "scale") ? xc_node_attr_float(n, "scale") : 1.0 / sqrt((double)D);
  bool causal = xc_node_attr_int(n, "is_causal") != 0;
  xc_dtype_t at = Q->dtype == XC_F64 ? XC_F64 : XC_F32;
  /* Where the device has matrix instructions for 16-bit Q, K and V (limits
   * "mma"), both dots take 16-bit operands as FlashAttention does: q and K
   * as loaded, the scale applied to the f32 scores, and the probabilities
   * rounded to V's dtype for the second dot (the running sum adds them
   * unrounded). Elsewhere the operands are f32 and the scale is folded
   * into q once. */
  bool half = (Q->dtype == XC_F16 || Q->dtype == XC_BF16) && K->dtype == Q->dtype && V->dtype == Q->dtype &&
              (!PK || (PK->dtype == Q->dtype && PV->dtype == Q->dtype)) && lw_has_mma(c, Q->dtype);
  int64_t BD = lw_pow2_at_least(D), BDv = lw_pow2_at_least(Dv);
  /* Wave-64 targets (CDNA): the default 128 work-items are two waves, which
   * split a 32-row query tile into two 16-row halves, the shape both dots
   * need for 16x16 matrix instructions (docs/targets/rocm.md). */
  bool wave64 = c->limits && c->limits->value[XC_TILED_LIMIT_SIMD_WIDTH] >= 64;
  /* With 16-bit matrix instructions on wave-32 targets, 64x64 tiles are
   * asked for; the scheduler shrinks them until the kernel's work-group
   * arrays fit the device (32x32 within 48 KiB at head size 128: four
   * warps of 16x16 scores and 16x64 parts of the accumulator on CUDA's
   * mma.m16n8k16). */
  bool big = half && !wave64;
  /* (128 only for 16-bit matrix instructions: targets may implement the
   * kernel's pattern with 128-row and 128-key tiles) */
  /* A CPU takes 64x64 tiles for heads of at most 16 over at least 64
   * queries and keys: per key tile the online softmax rescales the
   * accumulator and reduces each score row across its lanes, which a small
   * head's two dots do not outweigh; 16-key tiles repeated it four times as
   * often (whisper-tiny-encoder's attention, 100 positions, heads of 16:
   * 0.139 -> 0.107 ms). Shorter sequences keep 16x16 (64-row tiles over
   * bert-tiny's 16 tokens were mostly masked: 2.5x slower). */
  xc_dim_t qlen = Q->dims[seq];
  bool cpu = lw_cpu_limits(c) && D <= 16 && Dv <= 16 && xc_dim_is_static(qlen) && qlen.value >= 64 &&
             xc_dim_is_static(total_d) && total_d.value >= 64;
  /* There, the queries and keys split into tiles as even as the blocked
   * dot allows (rows in multiples of 8, keys in whole vectors) where 64 would
   * leave a ragged tile: every row and key of a tile is computed, masked or
   * not, and 64x64 tiles over 100 positions computed 128x128 (1.64x the
   * scores): 100 queries in two tiles of 56, 100 keys in one of 112
   * (whisper-tiny-encoder's attention 0.104 -> 0.075 ms a layer), listed as
   * candidates and made the defaults, within max_tile_elems. */
  int64_t bmc[8], bnc[8], dbm = big || cpu ? 64 : wave64 ? 32 : 16, dbn = big || cpu ? 64 : 16;
  int nbm = big ? 5 : 4, nbn = big ? 5 : 4;
  memcpy(bmc, bm_c, sizeof bm_c);
  memcpy(bnc, bn_c, sizeof bn_c);
  if (cpu) {
    int64_t simd = c->limits->value[XC_TILED_LIMIT_SIMD_WIDTH], cap = c->limits->value[XC_TILED_LIMIT_MAX_TILE_ELEMS];
    int64_t tm = (qlen.value + 63) / 64, tn = (total_d.value + 127) / 128;
    int64_t em = ((qlen.value + tm - 1) / tm + 7) / 8 * 8, en = ((total_d.value + tn - 1) / tn + simd - 1) / simd * simd;
    if (em * en <= cap && en <= 128) {
      if (!lw_listed(bmc, nbm, em)) bmc[nbm++] = em;
      if (!lw_listed(bnc, nbn, en)) bnc[nbn++] = en;
      dbm = em, dbn = en;
    }
  }
  int kBM = lw_knob(c, "BLOCK_M", nbm, bmc, dbm);
  int kBN = lw_knob(c, "BLOCK_N", nbn, bnc, dbn);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN);
  xc_tiled_dim_t dd = xc_tiled_dim_const(BD), ddv = xc_tiled_dim_const(BDv);
  /* L: the keys seen (past + new); P: the past length */
  lw_dimv_t S = lw_dim(c, Q->dims[seq]), L = lw_dim(c, total_d), P = lw_dim(c, past_d);
  lw_val_t* m0 = lw_iter_begin(c, 0, S, kBM, 0);
  lw_val_t* bh = lw_iter_begin(c, 1, lw_dim(c, xc_dim_mul(c->g, Q->dims[0], xc_dim_const(Hq))), -1, 1);
  lw_val_t* b = lw_div(c, bh, lw_i64(c, Hq));
  lw_val_t* h = lw_rem(c, bh, lw_i64(c, Hq));
  lw_val_t* hk = lw_div(c, h, lw_i64(c, Hq / Hk));
  lw_val_t* rm = lw_col(c, lw_add(c, m0, xc_tiled_arange(k, dm)));
  lw_val_t* mmask = lw_lt(c, rm, S.v);
  lw_val_t* ad = xc_tiled_arange(k, dd), *adv = xc_tiled_arange(k, ddv);
  lw_val_t* d_row = lw_row(c, ad), *d_col = lw_col(c, ad), *dv_row = lw_row(c, adv);
  lw_val_t* q = head_load(c, Q, is3d, Hq, b, h, rm, d_row, lw_and(c, mmask, lw_lt(c, d_row, lw_i64(c, D))));
  if (!half) q = lw_mul(c, lw_cast_to(c, q, at), lw_fconst(c, at, scale));
  xc_tiled_dim_t vm[1] = {dm}, mdv[2] = {dm, ddv}, mn[2] = {dm, dn};
  /* m, l, acc, and the count of keys not masked (rows with none give 0) */
  lw_val_t* init[4] = {xc_tiled_const_f(k, at, -INFINITY, 1, vm), xc_tiled_const_f(k, at, 0.0, 1, vm),
                       xc_tiled_const_f(k, at, 0.0, 2, mdv), xc_tiled_const_f(k, at, 0.0, 1, vm)};
  lw_val_t* s_zero = xc_tiled_const_f(k, at, 0.0, 2, mn);
  lw_val_t* ninf = lw_fconst(c, at, -INFINITY), *zero = lw_fconst(c, at, 0);
  att_t A = {c, K, PK, mask, QK, is3d, causal, Hk, D, qk_mode, softcap, at, half, scale,
             b, h, hk, rm, d_col, P.v, L.v, q, s_zero, mmask};
  /* Causal without a qk output or softcap: key tiles past the query tile's
   * last row (m0 + BLOCK_M - 1 + P) are masked everywhere and add nothing,
   * so the loop ends there. (A softcap turns masked scores into -softcap,
   * which the reference still weighs; a qk output is stored for every key.) */
  lw_val_t* kv_end = L.v;
  if (causal && !QK && !(softcap > 0))
    kv_end = xc_tiled_binary(k, XC_TOP_MIN, L.v, lw_add(c, lw_add(c, m0, xc_tiled_knob_value(k, kBM)), P.v));
  /* The count of keys not masked tells a row with none (its output 0) from
   * one whose sum is positive: only a softcap, which turns masked scores
   * into -softcap, gives such a row a positive sum; elsewhere a row with no
   * key has the sum 0, so without a mask, causality or softcap (every row
   * of the keys sees them all) the count is not kept, a sum per score row
   * and key tile less (whisper-tiny-encoder's attention, 3%). */
  bool counted = mask || causal || softcap > 0;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), kv_end, xc_tiled_knob_value(k, kBN), 4, init);
  {
    lw_val_t* n0 = xc_tiled_for_iv(loop);
    lw_val_t *m_i = xc_tiled_for_arg(loop, 0), *l_i = xc_tiled_for_arg(loop, 1), *acc = xc_tiled_for_arg(loop, 2);
    lw_val_t* rn = lw_add(c, n0, xc_tiled_arange(k, dn));
    lw_val_t* rn_row = lw_row(c, rn), *rn_col = lw_col(c, rn);
    lw_val_t *valid, *s = scores(&A, rn_row, &valid);
    lw_val_t* cnt = xc_tiled_for_arg(loop, 3);
    if (counted)
      cnt = lw_add(c, cnt, xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_select(k, valid, lw_fconst(c, at, 1), zero), 1));
    lw_val_t* m_new = xc_tiled_binary(k, XC_TOP_MAX, m_i, xc_tiled_reduce(k, XC_REDUCE_MAX, s, 1));
    lw_val_t* m_safe = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, m_new, ninf), zero, m_new);
    lw_val_t* p = xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, s, lw_col(c, m_safe)));
    lw_val_t* alpha = xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, m_i, m_safe));
    lw_val_t* l_new = lw_add(c, lw_mul(c, l_i, alpha), xc_tiled_reduce(k, XC_REDUCE_SUM, p, 1));
    /* V tile [BN,BDv] */
    lw_val_t* vt = kv_load(c, V, PV, is3d, Hk, b, hk, rn_col, dv_row, P.v,
                           lw_and(c, lw_lt(c, rn_col, L.v), lw_lt(c, dv_row, lw_i64(c, Dv))));
    lw_val_t* pd = half ? lw_cast_to(c, p, V->dtype) : p;
    if (!half) vt = lw_cast_to(c, vt, at);
    lw_val_t* acc_new = xc_tiled_dot(k, pd, vt, lw_mul(c, acc, lw_col(c, alpha)));
    lw_val_t* next[4] = {m_new, l_new, acc_new, cnt};
    xc_tiled_for_end(k, loop, 4, next);
  }
  lw_val_t* l = lw_col(c, xc_tiled_for_result(loop, 1));
  lw_val_t* pos = xc_tiled_cmp(k, XC_CMP_GT, l, zero);
  if (counted) pos = lw_and(c, pos, xc_tiled_cmp(k, XC_CMP_GT, lw_col(c, xc_tiled_for_result(loop, 3)), zero));
  if (QK && qk_mode == 3) { /* softmax probabilities: a second pass with the final max and sum */
    lw_val_t* mf = xc_tiled_for_result(loop, 0);
    lw_val_t* mfs = lw_col(c, xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, mf, ninf), zero, mf));
    lw_val_t* lsafe = xc_tiled_select(k, pos, l, lw_fconst(c, at, 1));
    A.QK = NULL;
    xc_tiled_op_t* pl = xc_tiled_for_begin(k, lw_i64(c, 0), L.v, xc_tiled_knob_value(k, kBN), 0, NULL);
    lw_val_t* rn_row = lw_row(c, lw_add(c, xc_tiled_for_iv(pl), xc_tiled_arange(k, dn)));
    lw_val_t* valid;
    lw_val_t* s = scores(&A, rn_row, &valid);
    lw_val_t* p = xc_tiled_select(k, pos, lw_div(c, xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, s, mfs)), lsafe), zero);
    lw_space_t sq;
    memset(&sq, 0, sizeof sq);
    sq.rank = 4;
    sq.idx[0] = b, sq.idx[1] = h, sq.idx[2] = rm, sq.idx[3] = rn_row;
    sq.mask = lw_and(c, lw_lt(c, rn_row, L.v), mmask);
    lw_store_at(c, &sq, QK, p);
    xc_tiled_for_end(k, pl, 0, NULL);
  }
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
  if (c->remap_out) { /* store through the output Transpose */
    const xc_node_t* t = c->remap_out;
    const xc_value_t* T = t->outputs[0];
    int64_t cnt = 0;
    const int64_t* perm = xc_node_attr_ints(t, "perm", &cnt);
    lw_space_t st;
    memset(&st, 0, sizeof st);
    st.rank = T->rank;
    st.dims = T->dims;
    st.mask = sy.mask;
    for (int d = 0; d < T->rank; d++) st.idx[d] = sy.idx[perm && cnt == T->rank ? perm[d] : T->rank - 1 - d];
    if (c->phase->num_nodes != 1) return lw_unsupported(c, n, "epilogue with a transposed output");
    lw_store_at(c, &st, T, o);
  } else {
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, o));
  }
  /* present_key/present_value: written once per kv head, by the first
   * query tile of the first query head of its group */
  if (PRK || PRV) {
    lw_val_t* writer = lw_and(c, xc_tiled_cmp(k, XC_CMP_EQ, m0, lw_i64(c, 0)),
                              xc_tiled_cmp(k, XC_CMP_EQ, lw_rem(c, h, lw_i64(c, Hq / Hk)), lw_i64(c, 0)));
    xc_tiled_op_t* pl = xc_tiled_for_begin(k, lw_i64(c, 0), L.v, xc_tiled_knob_value(k, kBN), 0, NULL);
    lw_val_t* rn_col = lw_col(c, lw_add(c, xc_tiled_for_iv(pl), xc_tiled_arange(k, dn)));
    for (int which = 0; which < 2; which++) {
      const xc_value_t* out = which ? PRV : PRK;
      if (!out) continue;
      int64_t size = which ? Dv : D;
      lw_val_t* dr = which ? dv_row : d_row;
      lw_val_t* m = lw_and(c, lw_and(c, lw_lt(c, rn_col, L.v), lw_lt(c, dr, lw_i64(c, size))), writer);
      lw_val_t* v = kv_load(c, which ? V : K, which ? PV : PK, is3d, Hk, b, hk, rn_col, dr, P.v, m);
      lw_space_t so;
      memset(&so, 0, sizeof so);
      so.rank = 4;
      so.idx[0] = b, so.idx[1] = hk, so.idx[2] = rn_col, so.idx[3] = dr;
      so.mask = m;
      lw_store_at(c, &so, out, v);
    }
    xc_tiled_for_end(k, pl, 0, NULL);
  }
  lw_iter_end(c, bh);
  lw_iter_end(c, m0);
  if (half && !mask && !PK && !QK && !PRK && !PRV && !(softcap > 0)) set_pattern(c, n, is3d, Hq, Hk, D, Dv, causal, scale);
  return NULL;
}
