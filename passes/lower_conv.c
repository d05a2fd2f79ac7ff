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
  /* dims whose input coordinate o*s is in bounds for every output o (set by
   * the caller that knows the output extent: a 1-tap window, no padding) */
  bool in_bounds[LW_MAX_RANK];
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
  /* DeformConv has no auto_pad (absent means NOTSET elsewhere too) */
  const char* ap = xc_node_has_attr(n, "auto_pad") ? xc_node_attr_string(n, "auto_pad") : NULL;
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
    lw_val_t* p = lw_mul(c, o, lw_i64(c, w->s[i]));
    if (w->pb[i]) p = lw_sub(c, p, lw_i64(c, w->pb[i]));
    /* a window of one tap (1x1 convolutions) has no offset to add */
    if (w->k[i] != 1) p = lw_add(c, p, lw_mul(c, kidx[i], lw_i64(c, w->d[i])));
    in_idx[i] = p;
    if (w->in_bounds[i]) continue; /* the lanes need no test */
    ok = lw_and(c, ok, lw_and(c, xc_tiled_cmp(c->k, XC_CMP_GE, p, lw_i64(c, 0)),
                              lw_lt(c, p, lw_dim(c, X->dims[w->sp0 + i]).v)));
  }
  return ok;
}

/* What both forms of Conv need; rd: the reduction dims in the weight's
 * order ([Cg, k...] NCHW, [k..., Cg] channels last), kpos/cpos where the
 * window and the channel sit in it. */
typedef struct conv_gemm {
  const xc_value_t *X, *W, *B, *Y;
  const win_t* w;
  int cdim;
  int64_t group, cg, ocg, R;
  int kpos, cpos;
  bool hwio; /* ConvNHWC weight [k..., Cg, M]: (r, oc) at r * M + oc; else oc * R + r */
  xc_dtype_t at;
  xc_dim_t rd[LW_MAX_RANK];
} conv_gemm_t;

/* X's coordinates at a window tap: batch n, channel ch, the input
 * positions in_sp (NULL: left for the caller). */
static void tap_space(const conv_gemm_t* g, lw_val_t* n, lw_val_t* ch, lw_val_t* const* in_sp, lw_space_t* sx) {
  memset(sx, 0, sizeof *sx);
  sx->rank = g->X->rank;
  sx->idx[0] = n;
  sx->idx[g->cdim] = ch;
  for (int i = 0; in_sp && i < g->w->nsp; i++) sx->idx[g->w->sp0 + i] = in_sp[i];
}

static const int64_t gm_c[] = {16, 32, 64, 128}, gn_c[] = {16, 32, 64, 128}, gk_c[] = {8, 16, 32, 64, 128};

/* The offset of weight (reduction index r, output channel oc) in the
 * weight's layout: oc * R + r ([M, Cg, k...] and [M, k..., Cg]), or r * M +
 * oc for an HWIO weight [k..., Cg, M], whose tiles of consecutive output
 * channels are consecutive in memory. */
static lw_val_t* weight_offset(lw_ctx_t* c, bool hwio, int64_t R, int64_t M, lw_val_t* r, lw_val_t* oc) {
  if (hwio) return lw_add(c, lw_mul(c, r, lw_i64(c, M)), oc);
  return lw_add(c, lw_mul(c, oc, lw_i64(c, R)), r);
}

/* The power of two >= v, within [lo, hi]. */
static int64_t pow2_clamp(int64_t v, int64_t lo, int64_t hi) {
  int64_t p = lw_pow2_at_least(v);
  return p < lo ? lo : p > hi ? hi : p;
}

/* BLOCK_M candidates over `pixels` output pixels: base (n of them), and on
 * a CPU a static count of at most 64 that no candidate equals (36 pixels of
 * a 6x6 map, 9 of a 3x3) as one more, made the default: one tile without
 * masked rows, where a 64-row tile computed 28 rows of nothing. Its half,
 * when even and at least a register block's 6 rows (18 of 36), is one more
 * candidate, not the default: the cpu scheduler takes it to split a
 * one-program kernel over two cores in two equal halves (cpu_target.c,
 * cpu_spread_programs). */
static int pixel_tile_knob(lw_ctx_t* c, const int64_t* base, int n, xc_dim_t P, int64_t def) {
  int64_t cands[8];
  memcpy(cands, base, (size_t)n * sizeof *cands);
  /* On a CPU the blocked dot computes every row of a tile, the ragged last
   * tile's too: of the candidates up to the default, the one that pads the
   * pixel count least (ties: the larger). 100 pixels took two tiles of 64,
   * 28% of the rows computed for nothing; 16 pads 12 (whisper-tiny-encoder's
   * k=3 convs, the tuner's pick: 1.27x and 1.36x) */
  if (lw_cpu_limits(c) && xc_dim_is_static(P) && P.value > 64) {
    int64_t best = def, padded = (P.value + def - 1) / def * def;
    for (int i = 0; i < n; i++) {
      int64_t b = base[i], t = (P.value + b - 1) / b * b;
      if (b <= def && (t < padded || (t == padded && b > best))) best = b, padded = t;
    }
    def = best;
  }
  if (lw_cpu_limits(c) && xc_dim_is_static(P) && P.value > 1 && P.value <= 64) {
    if (!lw_listed(cands, n, P.value) && n < 8) {
      cands[n++] = P.value;
      def = P.value;
    }
    int64_t half = P.value / 2;
    if (P.value % 2 == 0 && half >= 6 && !lw_listed(cands, n, half) && n < 8) cands[n++] = half;
  }
  return lw_knob(c, "BLOCK_M", n, cands, def);
}

/* A reduction over 128 that the default K step does not divide, on a CPU:
 * its largest divisor of at most 128 that is a multiple of 8 and keeps the
 * tiles within the tile bound (144 -> 72; 336 -> 56 beside 112 channels; a
 * window row of 3 taps over 80 channels, 240 -> 120) as one more candidate
 * (kcand, *nk) and the default *dbk: K steps without a masked tail, so the
 * input rows are read in place, not gathered through a remainder. */
static void exact_k_step(lw_ctx_t* c, int64_t R, int64_t dbn, int64_t dbm, int64_t* kcand, int* nk, int64_t* dbk) {
  int64_t cap = c->limits->value[XC_TILED_LIMIT_MAX_TILE_ELEMS];
  for (int64_t d = 128; d >= 16; d -= 8)
    if (R % d == 0 && d * dbn <= cap && d * dbm <= cap) {
      if (!lw_listed(kcand, *nk, d)) kcand[(*nk)++] = d;
      *dbk = d;
      return;
    }
}

/* BLOCK_N candidates over `ocg` output channels on a CPU: gn_c, a count of
 * at most 128 not listed that is a multiple of the SIMD width (48, 96) or of
 * 8 in at most four vectors of 8 (8, 24) as one more (one channel tile, no
 * masked lanes: the blocked dot takes vectors of 8 where the SIMD width does
 * not divide the count; 40 or 56 would be rows of one 8-lane vector, and
 * keep the padded power of two), and half the
 * count when that is a multiple of the SIMD width and not listed (56 of
 * 112), for the cpu scheduler to split a one-program kernel over its
 * output channels. *def becomes the whole count where it is listed. */
static int channel_tile_knob(lw_ctx_t* c, int64_t ocg, int64_t* def) {
  int64_t cands[8];
  int n = 4;
  memcpy(cands, gn_c, sizeof gn_c);
  int64_t simd = c->limits ? c->limits->value[XC_TILED_LIMIT_SIMD_WIDTH] : 0;
  if (lw_cpu_limits(c) && simd > 0) {
    int64_t w8 = simd < 8 ? simd : 8;
    if (ocg <= 128 && ocg % w8 == 0 && (ocg % simd == 0 || ocg / w8 <= 4) && !lw_listed(cands, n, ocg)) {
      cands[n++] = ocg;
      *def = ocg;
    }
    int64_t half = ocg / 2;
    if (ocg % 2 == 0 && half % simd == 0 && half <= 128 && !lw_listed(cands, n, half)) cands[n++] = half;
  }
  return lw_knob(c, "BLOCK_N", n, cands, *def);
}

/* The two index spaces of a conv tile over pixels (pidx: the pixels'
 * batch and spatial coordinates, [BM]) and channels `chan` ([1,BN]): the
 * pixels' own coordinates, which place the window (spix), and Y at (pixel
 * [BM,1], channel [1,BN]) (sy; the caller sets its mask). */
static void pixel_spaces(lw_ctx_t* c, const conv_gemm_t* g, lw_val_t* const* pidx, lw_val_t* chan, lw_space_t* spix,
                         lw_space_t* sy) {
  const win_t* w = g->w;
  memset(spix, 0, sizeof *spix);
  for (int i = 0; i < w->nsp; i++) spix->idx[w->sp0 + i] = pidx[1 + i];
  memset(sy, 0, sizeof *sy);
  sy->rank = g->Y->rank;
  sy->dims = g->Y->dims;
  sy->idx[0] = lw_col(c, pidx[0]);
  sy->idx[g->cdim] = chan;
  for (int i = 0; i < w->nsp; i++) sy->idx[w->sp0 + i] = lw_col(c, pidx[1 + i]);
}

/* Conv as an implicit GEMM: rows are the output pixels (batch x spatial),
 * columns the output channels of one group, the reduction is (input channel
 * of the group x window) in the weight's order. Programs over (pixel tiles,
 * channel tiles, groups); a K loop gathers the input tile [BLOCK_M, BLOCK_K]
 * (coordinates o*stride - pad + k*dilation, masked outside the input) and
 * loads the weight tile [BLOCK_K, BLOCK_N], accumulating their dot, so each
 * gathered input element serves BLOCK_N output channels. Bias and the
 * group's epilogue apply to the accumulator tile. */
static xc_status_t emit_conv_gemm(lw_ctx_t* c, const conv_gemm_t* g) {
  xc_tiled_kernel_t* k = c->k;
  const win_t* w = g->w;
  const xc_value_t *X = g->X, *Y = g->Y;
  /* pixel dims of Y: batch then spatial */
  xc_dim_t pd[LW_MAX_RANK];
  int np = 0;
  pd[np++] = Y->dims[0];
  for (int i = 0; i < w->nsp; i++) pd[np++] = Y->dims[w->sp0 + i];
  xc_dim_t P = lw_numel(c, np, pd);
  int64_t pixels = xc_dim_is_static(P) ? P.value : 4096;
  /* defaults: every channel of the group in one tile where it fits (the
   * gathered input is reused across the tile's channels), the reduction in
   * one or few steps, rows so that the tile stays about 64 KiB */
  int64_t dbn = pow2_clamp(g->ocg, 16, 128), dbk = pow2_clamp(g->R, 8, 64);
  int64_t dbm = 64;
  while (dbm > 16 && dbm / 2 >= pixels) dbm /= 2;
  /* On a CPU, a reduction of at most 128 that no power of two covers
   * exactly (a 1x1 conv over 24, 40, 112 channels) is one more BLOCK_K
   * candidate and the default: one K step, no masked tail, so the weight
   * tile is a plain copy and the accumulator makes one trip through the dot. */
  int64_t kcand[6];
  int nk = 5;
  memcpy(kcand, gk_c, sizeof gk_c);
  if (lw_cpu_limits(c) && g->R <= 128 && g->R > 8 && lw_pow2_at_least(g->R) != g->R) {
    kcand[nk++] = g->R;
    dbk = g->R;
  }
  /* Likewise a channel count of at most 128 that the blocked dot's vectors
   * divide (channel_tile_knob): one channel tile, no masked lanes. */
  int kBM = pixel_tile_knob(c, gm_c, 4, P, dbm);
  int kBN = channel_tile_knob(c, g->ocg, &dbn);
  if (lw_cpu_limits(c) && g->R > 128 && g->R % dbk) exact_k_step(c, g->R, dbn, dbm, kcand, &nk, &dbk);
  int kBK = lw_knob(c, "BLOCK_K", nk, kcand, dbk);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dk = xc_tiled_dim_knob(kBK);
  lw_val_t* m0 = lw_iter_begin(c, 0, lw_dim(c, P), kBM, 0);
  lw_val_t* n0 = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(g->ocg)), kBN, 0);
  lw_val_t* g0 = lw_iter_begin(c, 2, lw_dim(c, xc_dim_const(g->group)), -1, 1);
  lw_val_t* rm1 = lw_add(c, m0, xc_tiled_arange(k, dm)); /* [BM] pixels */
  lw_val_t* rm = lw_col(c, rm1);
  lw_val_t* rn = lw_row(c, lw_add(c, n0, xc_tiled_arange(k, dn))); /* [1,BN] channels of the group */
  lw_val_t* mm = lw_lt(c, rm, lw_dim(c, P).v), *mn = lw_lt(c, rn, lw_i64(c, g->ocg));
  lw_val_t* pidx[LW_MAX_RANK];
  lw_decompose(c, rm1, np, pd, pidx);
  lw_val_t* oc = lw_add(c, lw_mul(c, g0, lw_i64(c, g->ocg)), rn); /* [1,BN] */
  lw_space_t spix, sy;
  pixel_spaces(c, g, pidx, oc, &spix, &sy);
  sy.mask = lw_and(c, mm, mn);
  xc_tiled_dim_t acc_shape[2] = {dm, dn};
  lw_val_t* acc0 = xc_tiled_const_f(k, g->at, 0.0, 2, acc_shape);
  lw_val_t* ak = xc_tiled_arange(k, dk);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, g->R), xc_tiled_knob_value(k, kBK), 1, &acc0);
  {
    lw_val_t* k0 = xc_tiled_for_iv(loop);
    lw_val_t* kr = lw_row(c, lw_add(c, k0, ak)), *kc = lw_col(c, lw_add(c, k0, ak));
    lw_val_t* ridx[LW_MAX_RANK];
    lw_decompose(c, kr, 1 + w->nsp, g->rd, ridx);
    lw_val_t* in_sp[LW_MAX_RANK];
    lw_val_t* ok = window_coords(c, w, &spix, X, ridx + g->kpos, in_sp);
    lw_val_t* am = lw_and(c, lw_and(c, mm, lw_lt(c, kr, lw_i64(c, g->R))), ok);
    lw_space_t sx;
    tap_space(g, sy.idx[0], lw_add(c, lw_mul(c, g0, lw_i64(c, g->cg)), ridx[g->cpos]), in_sp, &sx);
    lw_val_t* a = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), am, NULL);
    a = lw_cast_to(c, a, g->at);
    /* weight tile [BK,BN] */
    lw_val_t* bm = lw_and(c, lw_lt(c, kc, lw_i64(c, g->R)), mn);
    lw_val_t* woff = weight_offset(c, g->hwio, g->R, g->group * g->ocg, kc, oc);
    lw_val_t* b = xc_tiled_load(k, lw_buf(c, g->W), woff, bm, NULL);
    b = lw_cast_to(c, b, g->at);
    lw_val_t* next = xc_tiled_dot(k, a, b, xc_tiled_for_arg(loop, 0));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (g->B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->B), oc, mn, NULL), g->at));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, g0);
  lw_iter_end(c, n0);
  lw_iter_end(c, m0);
  return NULL;
}

/* Whether emit_conv_rows takes this conv: the cpu, channels last with an
 * HWIO weight, one group, the window's last dim undilated, the input's last
 * spatial extent and channel count static, and more than one tap. */
static bool rows_form(lw_ctx_t* c, const conv_gemm_t* g) {
  const win_t* w = g->w;
  const xc_value_t* X = g->X;
  if (!lw_cpu_limits(c) || !g->hwio || g->group != 1 || g->cdim != X->rank - 1 || g->kpos != 0) return false;
  int L = w->nsp - 1;
  if (w->d[L] != 1 || !xc_dim_is_static(X->dims[w->sp0 + L]) || !xc_dim_is_static(X->dims[g->cdim])) return false;
  int64_t wc;
  return g->R > g->cg && xc_mul_i64(X->dims[w->sp0 + L].value, X->dims[g->cdim].value, &wc);
}

/* The geometry of a padded patch (conv_patch): input rows are numbered
 * G = n * HP + iy + pad over the batch, HP rows an image (the padded rows
 * any output row of it reads); output row (n, oy) at window row t reads
 * G = n * HP + oy * s + t * d. */
typedef struct patch_geo {
  int64_t C, W, IW, OW, H, OH, KH, s, d, ph, pl, HP, PWC, N;
} patch_geo_t;

/* The patch rows a tile of bm pixels from m0 reads: G of its last pixel's
 * last window row - G of its first pixel's first + 1. */
static int64_t patch_rows(const patch_geo_t* pg, int64_t m0, int64_t m1) {
  int64_t g0 = m0 / pg->OW, g1 = (m1 - 1) / pg->OW;
  return (g1 / pg->OH * pg->HP + g1 % pg->OH * pg->s + (pg->KH - 1) * pg->d) -
         (g0 / pg->OH * pg->HP + g0 % pg->OH * pg->s) + 1;
}

/* The padded patch of a conv in the row form (emit_conv_rows), on a CPU:
 * the input rows a program's pixels read, copied once per program into a
 * work-group buffer whose rows carry the padding as zeros, so that every
 * window row of the K loop is read in place from it, without the bounds
 * tests of the edges. Patch row q is input row G = first + q (patch_geo_t),
 * PW * C long (PW = (OW - 1) * s + KW input columns from -pad on): its left
 * and right pads zeros, its input columns copied (or zeros where the row is
 * padding). The stem conv's edge rows (two in every 32-pixel row, whole
 * rows at the image's top and bottom) had been copied per window row through
 * the per-element mask: 12% of its time (docs/lowering.md, "Padded
 * patches"). Applies to 1-D and 2-D windows with padding and static shapes
 * in a group of one phase whose patch, for every pixel tile candidate, fits
 * 16K elements; returns NULL otherwise. *geo: the geometry, *first: the tile's first G. */
static lw_val_t* conv_patch(lw_ctx_t* c, const conv_gemm_t* g, int kBM, lw_val_t* m0, xc_dim_t P, patch_geo_t* geo,
                            lw_val_t** first) {
  xc_tiled_kernel_t* k = c->k;
  const win_t* w = g->w;
  const xc_value_t *X = g->X, *Y = g->Y;
  int L = w->nsp - 1;
  /* a group of several phases runs its programs as loops, where a
   * work-group allocation may not sit */
  if (c->multi_phase || L > 1 || !xc_dim_is_static(P) || !xc_dim_is_static(X->dims[0])) return NULL;
  bool padded = false;
  for (int i = 0; i < w->nsp; i++) {
    padded |= w->pb[i] != 0 || w->pe[i] != 0;
    if (!xc_dim_is_static(X->dims[w->sp0 + i]) || !xc_dim_is_static(Y->dims[w->sp0 + i])) return NULL;
  }
  if (!padded) return NULL;
  patch_geo_t pg = {.C = X->dims[g->cdim].value, .W = X->dims[w->sp0 + L].value, .OW = Y->dims[w->sp0 + L].value,
                    .H = L ? X->dims[w->sp0].value : 1, .OH = L ? Y->dims[w->sp0].value : 1,
                    .KH = L ? w->k[0] : 1, .s = L ? w->s[0] : 1, .d = L ? w->d[0] : 1, .ph = L ? w->pb[0] : 0,
                    .pl = w->pb[L], .N = X->dims[0].value};
  if (pg.OW <= 0 || pg.OH <= 0 || P.value <= 0) return NULL;
  int64_t PW = (pg.OW - 1) * w->s[L] + w->k[L];
  pg.PWC = PW * pg.C;
  pg.IW = PW - pg.pl < pg.W ? PW - pg.pl : pg.W; /* input columns the patch holds */
  pg.HP = (pg.OH - 1) * pg.s + (pg.KH - 1) * pg.d + 1;
  if (pg.IW <= 0 || pg.PWC > 4096) return NULL;
  /* the most rows any program of any pixel tile candidate reads */
  int64_t rows = 0;
  const xc_tiled_knob_t* kb = &k->knobs[kBM];
  for (int i = 0; i < kb->num_candidates; i++) {
    int64_t bm = kb->candidates[i];
    if (bm <= 0 || P.value / bm > 65536) return NULL;
    for (int64_t m = 0; m < P.value; m += bm) {
      int64_t r = patch_rows(&pg, m, m + bm < P.value ? m + bm : P.value);
      if (r > rows) rows = r;
    }
  }
  /* worth it where the rows copied at the edges (each ~a dozen cycles of
   * mask tests and a masked copy, per window row) outweigh the patch's
   * copy (~an eighth of a cycle an element) at the default pixel tile: a
   * stride-2 stem padded on one side has few edge rows (mobilenetv2-tiny's:
   * 26.4 -> 29.5 us with a patch) */
  int64_t xe = 0, ye = 0, copied = 0, bm = kb->default_value;
  for (int64_t ox = 0; ox < pg.OW; ox++) {
    int64_t x0 = ox * w->s[L] - pg.pl;
    xe += x0 < 0 || x0 + w->k[L] > pg.W;
  }
  for (int64_t oy = 0; oy < pg.OH; oy++)
    for (int64_t t = 0; t < pg.KH; t++) {
      int64_t iy = oy * pg.s - pg.ph + t * pg.d;
      ye += iy < 0 || iy >= pg.H;
    }
  for (int64_t m = 0; bm > 0 && m < P.value; m += bm)
    copied += patch_rows(&pg, m, m + bm < P.value ? m + bm : P.value) * pg.PWC;
  if (bm <= 0 || copied > 96 * pg.N * (pg.OH * pg.KH * xe + ye * pg.OW)) return NULL;
  int64_t elems = rows * pg.PWC;
  if (elems > 16384 || elems * (int64_t)xc_dtype_size(X->dtype) * 2 > c->limits->value[XC_TILED_LIMIT_SHARED_BYTES])
    return NULL;
  xc_tiled_dim_t pdim = xc_tiled_dim_const(elems);
  lw_val_t* buf = xc_tiled_alloc(k, XC_SCOPE_SHARED, X->dtype, 1, &pdim);
  lw_val_t *ow = lw_i64(c, pg.OW), *oh = lw_i64(c, pg.OH), *hp = lw_i64(c, pg.HP);
  /* G of the first pixel's first window row and of the last's last */
  lw_val_t* g0 = lw_div(c, m0, ow);
  lw_val_t* G0 = lw_add(c, lw_mul(c, lw_div(c, g0, oh), hp), lw_mul(c, lw_rem(c, g0, oh), lw_i64(c, pg.s)));
  lw_val_t* last = xc_tiled_binary(k, XC_TOP_MIN, lw_add(c, m0, xc_tiled_knob_value(k, kBM)), lw_i64(c, P.value));
  lw_val_t* g1 = lw_div(c, lw_sub(c, last, lw_i64(c, 1)), ow);
  lw_val_t* G1 = lw_add(c, lw_add(c, lw_mul(c, lw_div(c, g1, oh), hp), lw_mul(c, lw_rem(c, g1, oh), lw_i64(c, pg.s))),
                        lw_i64(c, (pg.KH - 1) * pg.d + 1));
  xc_tiled_op_t* fill = xc_tiled_for_begin(k, lw_i64(c, 0), lw_sub(c, G1, G0), lw_i64(c, 1), 0, NULL);
  {
    lw_val_t* q = xc_tiled_for_iv(fill);
    lw_val_t* G = lw_add(c, G0, q);
    lw_val_t* n = lw_div(c, G, hp);
    lw_val_t* iy = lw_sub(c, lw_rem(c, G, hp), lw_i64(c, pg.ph));
    lw_val_t* ok = lw_lt(c, n, lw_i64(c, pg.N)); /* always: bounds the batch index */
    if (L) ok = lw_and(c, ok, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, iy, lw_i64(c, 0)), lw_lt(c, iy, lw_i64(c, pg.H))));
    lw_val_t* row = lw_mul(c, q, lw_i64(c, pg.PWC));
    int64_t left = pg.pl * pg.C, mid = pg.IW * pg.C, right = pg.PWC - left - mid;
    if (left > 0) {
      xc_tiled_dim_t d = xc_tiled_dim_const(left);
      xc_tiled_store(k, buf, lw_add(c, row, xc_tiled_arange(k, d)), xc_tiled_const_f(k, X->dtype, 0.0, 1, &d), NULL);
    }
    xc_tiled_dim_t dm = xc_tiled_dim_const(mid);
    lw_val_t* col = xc_tiled_arange(k, dm);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = n;
    if (L) sx.idx[w->sp0] = iy;
    sx.idx[pg.C == 1 ? w->sp0 + L : g->cdim] = col; /* the row's offset (W's stride is C) */
    lw_val_t* v = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), ok, NULL);
    xc_tiled_store(k, buf, lw_add(c, lw_add(c, row, lw_i64(c, left)), col), v, NULL);
    if (right > 0) {
      xc_tiled_dim_t d = xc_tiled_dim_const(right);
      xc_tiled_store(k, buf, lw_add(c, lw_add(c, row, lw_i64(c, left + mid)), xc_tiled_arange(k, d)),
                     xc_tiled_const_f(k, X->dtype, 0.0, 1, &d), NULL);
    }
    xc_tiled_for_end(k, fill, 0, NULL);
  }
  xc_tiled_barrier(k);
  *geo = pg;
  *first = G0;
  return buf;
}

/* Conv as an implicit GEMM whose reduction walks the window row by row
 * (channels last, HWIO weight, one group): for a fixed position in the
 * window's leading dims (kh of a 2-D window), the taps of the last dim and
 * their channels, j = kw * C + c, lie at consecutive input offsets
 * (iw * C + c = (ow * s - pad) * C + j). An outer loop runs over the leading
 * window positions t, an inner K loop over j in steps of BLOCK_K; the input
 * tile's offset is a row base plus j, so each row of it is a contiguous
 * (masked) load instead of a gather with the window's division and
 * remainder per element. The last dim's bounds test is on x = iw * C + c
 * itself (0 <= x < W * C holds exactly when 0 <= iw < W), which keeps the
 * offset boundable from the mask. The weight tile is rows t * KW * C + j of
 * the HWIO weight, consecutive in memory. */
static xc_status_t emit_conv_rows(lw_ctx_t* c, const conv_gemm_t* g) {
  xc_tiled_kernel_t* k = c->k;
  const win_t* w = g->w;
  const xc_value_t *X = g->X, *Y = g->Y;
  int L = w->nsp - 1;
  int64_t C = X->dims[g->cdim].value, WC = X->dims[w->sp0 + L].value * C, KWC = w->k[L] * C, T = g->R / KWC;
  xc_dim_t pd[LW_MAX_RANK];
  int np = 0;
  pd[np++] = Y->dims[0];
  for (int i = 0; i < w->nsp; i++) pd[np++] = Y->dims[w->sp0 + i];
  xc_dim_t P = lw_numel(c, np, pd);
  int64_t pixels = xc_dim_is_static(P) ? P.value : 4096;
  /* defaults as emit_conv_gemm's; the K step covers a window row's taps
   * (KW * C) in one step where it is at most 128, else the largest
   * candidate that divides it */
  int64_t dbn = pow2_clamp(g->ocg, 16, 128), dbk = 64, dbm = 64;
  while (dbm > 16 && dbm / 2 >= pixels) dbm /= 2;
  int64_t kcand[6];
  int nk = 5;
  memcpy(kcand, gk_c, sizeof gk_c);
  bool listed = false;
  for (int i = 0; i < nk; i++) listed |= kcand[i] == KWC;
  if (KWC <= 128) {
    if (!listed) kcand[nk++] = KWC;
    dbk = KWC;
  } else {
    for (int i = nk - 1; i >= 2; i--)
      if (KWC % kcand[i] == 0) {
        dbk = kcand[i];
        break;
      }
  }
  int kBM = pixel_tile_knob(c, gm_c, 4, P, dbm);
  int kBN = channel_tile_knob(c, g->ocg, &dbn);
  /* a window row that no power-of-two step divides (whisper's 3 taps over
   * 80 channels, 240: steps of 64 left a masked tail whose rows were
   * gathered), as the implicit-GEMM form does */
  if (KWC > 128 && KWC % dbk) exact_k_step(c, KWC, dbn, c->k->knobs[kBM].default_value, kcand, &nk, &dbk);
  int kBK = lw_knob(c, "BLOCK_K", nk, kcand, dbk);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dk = xc_tiled_dim_knob(kBK);
  lw_val_t* m0 = lw_iter_begin(c, 0, lw_dim(c, P), kBM, 0);
  lw_val_t* n0 = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(g->ocg)), kBN, 0);
  lw_val_t* g0 = lw_iter_begin(c, 2, lw_dim(c, xc_dim_const(1)), -1, 1);
  lw_val_t* rm1 = lw_add(c, m0, xc_tiled_arange(k, dm)); /* [BM] pixels */
  lw_val_t* rm = lw_col(c, rm1);
  lw_val_t* oc = lw_row(c, lw_add(c, n0, xc_tiled_arange(k, dn))); /* [1,BN] output channels */
  lw_val_t* mm = lw_lt(c, rm, lw_dim(c, P).v), *mn = lw_lt(c, oc, lw_i64(c, g->ocg));
  lw_val_t* pidx[LW_MAX_RANK];
  lw_decompose(c, rm1, np, pd, pidx);
  lw_space_t spix, sy;
  pixel_spaces(c, g, pidx, oc, &spix, &sy);
  sy.mask = lw_and(c, mm, mn);
  patch_geo_t pg = {0};
  lw_val_t* first = NULL;
  lw_val_t* patch = lw_cpu_limits(c) ? conv_patch(c, g, kBM, m0, P, &pg, &first) : NULL;
  int64_t PWC = patch ? pg.PWC : 0;
  /* the last dim's row base (ow * s - pad) * C, [BM,1] */
  lw_val_t* xb = NULL;
  if (!patch) {
    xb = lw_mul(c, lw_col(c, pidx[1 + L]), lw_i64(c, w->s[L]));
    if (w->pb[L]) xb = lw_sub(c, xb, lw_i64(c, w->pb[L]));
    xb = lw_mul(c, xb, lw_i64(c, C));
  }
  /* the pixels' rows in the patch at t = 0: (n * HP + oy * s - first) * PWC + ow * s * C, [BM,1] */
  lw_val_t* pb0 = NULL;
  if (patch) {
    lw_val_t* G = lw_mul(c, pidx[0], lw_i64(c, pg.HP));
    if (L) G = lw_add(c, G, lw_mul(c, pidx[1], lw_i64(c, pg.s)));
    pb0 = lw_add(c, lw_mul(c, lw_col(c, lw_sub(c, G, first)), lw_i64(c, PWC)),
                 lw_mul(c, lw_col(c, pidx[1 + L]), lw_i64(c, w->s[L] * C)));
  }
  xc_tiled_dim_t acc_shape[2] = {dm, dn};
  lw_val_t* acc0 = xc_tiled_const_f(k, g->at, 0.0, 2, acc_shape);
  lw_val_t* ak = xc_tiled_arange(k, dk);
  xc_tiled_op_t* outer = T > 1 ? xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, T), lw_i64(c, 1), 1, &acc0) : NULL;
  {
    lw_val_t* t = outer ? xc_tiled_for_iv(outer) : lw_i64(c, 0);
    lw_val_t* acc_in = outer ? xc_tiled_for_arg(outer, 0) : acc0;
    /* the window position in the leading dims, and their input coordinates */
    xc_dim_t lead[LW_MAX_RANK];
    for (int i = 0; i < L; i++) lead[i] = xc_dim_const(w->k[i]);
    lw_val_t* kidx[LW_MAX_RANK] = {0};
    if (L > 0) lw_decompose(c, t, L, lead, kidx);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = sy.idx[0];
    lw_val_t* rows_ok = mm;
    for (int i = 0; i < L && !patch; i++) {
      lw_val_t* p = lw_mul(c, lw_col(c, pidx[1 + i]), lw_i64(c, w->s[i]));
      if (w->pb[i]) p = lw_sub(c, p, lw_i64(c, w->pb[i]));
      if (w->k[i] != 1) p = lw_add(c, p, lw_mul(c, kidx[i], lw_i64(c, w->d[i])));
      sx.idx[w->sp0 + i] = p;
      if (!w->in_bounds[i])
        rows_ok = lw_and(c, rows_ok, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, p, lw_i64(c, 0)),
                                            lw_lt(c, p, lw_dim(c, X->dims[w->sp0 + i]).v)));
    }
    lw_val_t* wrow = lw_mul(c, t, lw_i64(c, KWC));
    lw_val_t* prow = patch ? lw_add(c, pb0, lw_mul(c, t, lw_i64(c, pg.d * PWC))) : NULL;
    xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, KWC), xc_tiled_knob_value(k, kBK), 1, &acc_in);
    {
      lw_val_t* k0 = xc_tiled_for_iv(loop);
      lw_val_t* jr = lw_row(c, lw_add(c, k0, ak)), *jc = lw_col(c, lw_add(c, k0, ak));
      lw_val_t* a;
      if (patch) { /* in bounds by construction; the pixels past P and a ragged K step stay masked */
        a = xc_tiled_load(k, patch, lw_add(c, prow, jr), lw_and(c, mm, lw_lt(c, jr, lw_i64(c, KWC))), NULL);
      } else {
        lw_val_t* x = lw_add(c, xb, jr); /* [BM,BK]: iw * C + c */
        lw_val_t* xok = lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, x, lw_i64(c, 0)), lw_lt(c, x, lw_i64(c, WC)));
        lw_val_t* am = lw_and(c, lw_and(c, rows_ok, lw_lt(c, jr, lw_i64(c, KWC))), xok);
        /* x is the offset within the row (W's stride is C, C's is 1): on the
         * channel dim, or on W's where one channel would drop it (an offset
         * skips dims of extent 1) */
        sx.idx[C == 1 ? w->sp0 + L : g->cdim] = x;
        a = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), am, NULL);
      }
      a = lw_cast_to(c, a, g->at);
      lw_val_t* bm = lw_and(c, lw_lt(c, jc, lw_i64(c, KWC)), mn);
      lw_val_t* woff = weight_offset(c, true, g->R, g->ocg, lw_add(c, wrow, jc), oc);
      lw_val_t* b = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->W), woff, bm, NULL), g->at);
      lw_val_t* next = xc_tiled_dot(k, a, b, xc_tiled_for_arg(loop, 0));
      xc_tiled_for_end(k, loop, 1, &next);
    }
    if (outer) {
      lw_val_t* next = xc_tiled_for_result(loop, 0);
      xc_tiled_for_end(k, outer, 1, &next);
    } else {
      outer = loop;
    }
  }
  lw_val_t* y = xc_tiled_for_result(outer, 0);
  if (g->B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->B), oc, mn, NULL), g->at));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, g0);
  lw_iter_end(c, n0);
  lw_iter_end(c, m0);
  return NULL;
}

static const int64_t dw_m_c[] = {4, 8, 16, 32, 64}, dw_c_c[] = {8, 16, 32, 64, 128};

/* The most taps a CPU depthwise conv unrolls (5x5). */
#define DW_UNROLL_TAPS 25

/* Depthwise Conv, channels last (one input channel per group, one output
 * channel per group): programs over (pixel tiles, channel tiles); for each
 * of the window's taps the input tile [BLOCK_M pixels, BLOCK_C channels] (a
 * run of contiguous channels per pixel, masked outside the input) times the
 * tap's weights [1, BLOCK_C], summed over the taps in order. As an implicit
 * GEMM it would be a dot with one column per group and a reduction of the
 * window alone, mostly padding.
 *
 * On a CPU a window of at most DW_UNROLL_TAPS taps is unrolled: every tap's
 * load and multiply-add is an elementwise op of one [BLOCK_M, BLOCK_C]
 * shape, so the C emitter fuses the taps, the bias, the epilogue and the
 * store into one element loop whose sum stays in a register (the weights,
 * [1, BLOCK_C] each, load before it). A loop over the taps instead carried
 * the accumulator tile through memory: a load and a store of it per tap. */
static xc_status_t emit_conv_depthwise(lw_ctx_t* c, const conv_gemm_t* g) {
  xc_tiled_kernel_t* k = c->k;
  const win_t* w = g->w;
  const xc_value_t *X = g->X, *Y = g->Y;
  xc_dim_t pd[LW_MAX_RANK];
  int np = 0;
  pd[np++] = Y->dims[0];
  for (int i = 0; i < w->nsp; i++) pd[np++] = Y->dims[w->sp0 + i];
  xc_dim_t P = lw_numel(c, np, pd);
  int64_t pixels = xc_dim_is_static(P) ? P.value : 4096;
  /* Channel tiles that divide the channel count (when some do) need no
   * channel mask: the loads and stores are then masked by pixel row alone,
   * which compilers turn into a branch around a plain vector loop. */
  int64_t cands[5];
  int ncands = 0;
  for (int i = 0; i < 5; i++)
    if (g->group % dw_c_c[i] == 0) cands[ncands++] = dw_c_c[i];
  bool exact = ncands > 0;
  if (!exact) {
    memcpy(cands, dw_c_c, sizeof cands);
    ncands = 5;
  }
  /* defaults: every channel in one tile up to 64, about 1024 outputs a tile */
  int64_t dbc = pow2_clamp(g->group, 8, 64);
  if (exact) {
    dbc = cands[0];
    for (int i = 0; i < ncands; i++)
      if (cands[i] <= 64) dbc = cands[i];
  }
  int64_t dbm = 1024 / dbc > 64 ? 64 : 1024 / dbc; /* the largest BLOCK_M candidate: 64 */
  while (dbm > 4 && dbm / 2 >= pixels) dbm /= 2;
  int kBM = pixel_tile_knob(c, dw_m_c, 5, P, dbm);
  int kBC = lw_knob(c, "BLOCK_C", ncands, cands, dbc);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dc = xc_tiled_dim_knob(kBC);
  lw_val_t* m0 = lw_iter_begin(c, 0, lw_dim(c, P), kBM, 0);
  lw_val_t* c0 = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(g->group)), kBC, 0);
  lw_val_t* rm1 = lw_add(c, m0, xc_tiled_arange(k, dm)); /* [BM] pixels */
  lw_val_t* rm = lw_col(c, rm1);
  lw_val_t* ch = lw_row(c, lw_add(c, c0, xc_tiled_arange(k, dc))); /* [1,BC] channels */
  lw_val_t* mm = lw_lt(c, rm, lw_dim(c, P).v), *mc = exact ? NULL : lw_lt(c, ch, lw_i64(c, g->group));
  lw_val_t* pidx[LW_MAX_RANK];
  lw_decompose(c, rm1, np, pd, pidx);
  lw_space_t spix, sy;
  pixel_spaces(c, g, pidx, ch, &spix, &sy);
  sy.mask = lw_and(c, mm, mc);
  xc_tiled_dim_t acc_shape[2] = {dm, dc};
  lw_val_t* acc0 = xc_tiled_const_f(k, g->at, 0.0, 2, acc_shape);
  xc_dim_t kd[LW_MAX_RANK];
  for (int i = 0; i < w->nsp; i++) kd[i] = xc_dim_const(w->k[i]);
  if (lw_cpu_limits(c) && g->R <= DW_UNROLL_TAPS) {
    /* The loads read clamped coordinates (the last tile's rows past the
     * pixels read the last pixel, taps outside the input its edge), so
     * they need no mask: the channels run contiguous and unconditional in
     * every row, and a select zeroes what the window does not cover. A
     * conditional load per tap (its condition varies by row) kept GCC 12
     * from vectorizing the fused loop at all. */
    lw_val_t* rmc = xc_tiled_binary(k, XC_TOP_MIN, rm1, lw_sub(c, lw_dim(c, P).v, lw_i64(c, 1)));
    lw_val_t* pclamp[LW_MAX_RANK];
    lw_decompose(c, rmc, np, pd, pclamp);
    lw_space_t spc, syc;
    pixel_spaces(c, g, pclamp, ch, &spc, &syc);
    lw_val_t* acc = acc0;
    for (int64_t t = 0; t < g->R; t++) {
      lw_val_t* kidx[LW_MAX_RANK];
      for (int i = w->nsp - 1, rest = (int)t; i >= 0; i--) {
        kidx[i] = lw_i64(c, rest % w->k[i]);
        rest /= (int)w->k[i];
      }
      lw_val_t* in_sp[LW_MAX_RANK];
      lw_val_t* ok = window_coords(c, w, &spc, X, kidx, in_sp);
      lw_space_t sx;
      tap_space(g, syc.idx[0], ch, NULL, &sx);
      for (int i = 0; i < w->nsp; i++) {
        lw_val_t* hi = lw_sub(c, lw_dim(c, X->dims[w->sp0 + i]).v, lw_i64(c, 1));
        sx.idx[w->sp0 + i] = w->in_bounds[i] ? in_sp[i]
                                              : xc_tiled_binary(k, XC_TOP_MAX, lw_i64(c, 0),
                                                                xc_tiled_binary(k, XC_TOP_MIN, in_sp[i], hi));
      }
      lw_val_t* a = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), mc, NULL), g->at);
      if (ok) a = xc_tiled_select(k, ok, a, lw_fconst(c, g->at, 0));
      lw_val_t* woff = weight_offset(c, g->hwio, g->R, g->group, lw_i64(c, t), ch);
      lw_val_t* b = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->W), woff, mc, NULL), g->at);
      acc = lw_add(c, acc, lw_mul(c, a, b)); /* the taps in the loop's order */
    }
    lw_val_t* y = acc;
    if (g->B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->B), ch, mc, NULL), g->at));
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
    lw_iter_end(c, c0);
    lw_iter_end(c, m0);
    return NULL;
  }
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, g->R), lw_i64(c, 1), 1, &acc0);
  {
    lw_val_t* tap = xc_tiled_for_iv(loop);
    lw_val_t* kidx[LW_MAX_RANK];
    lw_decompose(c, tap, w->nsp, kd, kidx);
    lw_val_t* in_sp[LW_MAX_RANK];
    lw_val_t* ok = window_coords(c, w, &spix, X, kidx, in_sp);
    lw_space_t sx;
    tap_space(g, sy.idx[0], ch, in_sp, &sx);
    lw_val_t* am = lw_and(c, lw_and(c, mm, ok), mc);
    lw_val_t* a = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), am, NULL), g->at);
    /* weights [C, k..., 1] or [k..., 1, C]: channel ch, tap t */
    lw_val_t* b = xc_tiled_load(k, lw_buf(c, g->W), weight_offset(c, g->hwio, g->R, g->group, tap, ch), mc, NULL);
    b = lw_cast_to(c, b, g->at);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), lw_mul(c, a, b));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (g->B) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, g->B), ch, mc, NULL), g->at));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, c0);
  lw_iter_end(c, m0);
  return NULL;
}

xc_status_t lw_emit_conv(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *W = n->inputs[1], *Y = n->outputs[0];
  const xc_value_t* B = n->num_inputs > 2 ? n->inputs[2] : NULL;
  /* ConvNHWC: X [N, sp..., C], W [M, k..., C/group] or (HWIO) [k..., C/group, M] */
  bool nhwc = !strcmp(n->op_type, "ConvNHWC");
  const char* wl = nhwc ? xc_node_attr_string(n, "weight_layout") : NULL;
  bool hwio = wl && !strcmp(wl, "HWIO");
  if (wl && !hwio && strcmp(wl, "OHWI")) return lw_unsupported(c, n, "weight_layout %s", wl);
  if (!xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "dtype %s", xc_dtype_name(X->dtype));
  if (W->rank != X->rank || W->rank < 3 || W->rank - 2 >= LW_MAX_RANK) return lw_unsupported(c, n, "weight rank");
  for (int i = 0; i < W->rank; i++)
    if (!xc_dim_is_static(W->dims[i])) return lw_unsupported(c, n, "symbolic weight shape");
  int64_t ks[LW_MAX_RANK] = {0};
  int ksp0 = hwio ? 0 : nhwc ? 1 : 2;
  for (int i = 0; i < W->rank - 2; i++) ks[i] = W->dims[ksp0 + i].value;
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, ks, nhwc, &w));
  /* One tap and no padding: Conv's output extent is (in - 1) / s + 1, so
   * o*s lies in the input for every output o (checked where dims are known). */
  for (int i = 0; i < w.nsp; i++) {
    xc_dim_t in = X->dims[w.sp0 + i], out = Y->dims[w.sp0 + i];
    bool known = xc_dim_is_static(in) && xc_dim_is_static(out);
    w.in_bounds[i] = w.k[i] == 1 && w.pb[i] == 0 && w.pe[i] == 0 &&
                     (!known || (out.value - 1) * w.s[i] < in.value);
  }
  int64_t group = xc_node_attr_int(n, "group");
  if (group < 1) group = 1;
  int cdim = nhwc ? X->rank - 1 : 1;
  int64_t cg = W->dims[hwio ? W->rank - 2 : nhwc ? W->rank - 1 : 1].value;
  int64_t M = W->dims[hwio ? W->rank - 1 : 0].value, ocg = M / group;
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
  /* Devices with matrix instructions for the dtype keep the direct form
   * (their dot path has not been checked on gathered operands). */
  if (!lw_has_mma(c, X->dtype)) {
    conv_gemm_t g;
    memset(&g, 0, sizeof g);
    g.X = X, g.W = W, g.B = B, g.Y = Y, g.w = &w, g.cdim = cdim, g.at = at;
    g.group = group, g.cg = cg, g.ocg = ocg, g.R = R, g.kpos = kpos, g.cpos = cpos, g.hwio = hwio;
    memcpy(g.rd, rd, sizeof rd);
    if (nhwc && cg == 1 && ocg == 1) return emit_conv_depthwise(c, &g);
    if (rows_form(c, &g)) return emit_conv_rows(c, &g);
    return emit_conv_gemm(c, &g);
  }
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
    lw_val_t* woff = weight_offset(c, hwio, R, M, r, lw_col(c, oc));
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

/* The window tap `kidx` (per spatial dim) of the outputs at spatial
 * positions pos[i]: the input positions in_sp[i], *ok where all are inside
 * the input (ok NULL: not tested), and (include_pad) *inside_pad where all
 * are inside the padded input (what an AveragePool with count_include_pad
 * counts). */
static void pool_tap(lw_ctx_t* c, const xc_value_t* X, const win_t* w, lw_val_t* const* pos, lw_val_t* const* kidx,
                     bool include_pad, lw_val_t** in_sp, lw_val_t** ok, lw_val_t** inside_pad) {
  xc_tiled_kernel_t* k = c->k;
  if (ok) *ok = NULL;
  if (inside_pad) *inside_pad = NULL;
  for (int i = 0; i < w->nsp; i++) {
    lw_val_t* p = lw_mul(c, pos[i], lw_i64(c, w->s[i]));
    if (w->pb[i]) p = lw_sub(c, p, lw_i64(c, w->pb[i]));
    if (w->k[i] != 1) p = lw_add(c, p, lw_mul(c, kidx[i], lw_i64(c, w->d[i])));
    in_sp[i] = p;
    lw_dimv_t extent = lw_dim(c, X->dims[w->sp0 + i]);
    if (ok) *ok = lw_and(c, *ok, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, p, lw_i64(c, 0)), lw_lt(c, p, extent.v)));
    if (include_pad) /* positions inside the padded input count */
      *inside_pad = lw_and(c, *inside_pad,
                           lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, p, lw_i64(c, -w->pb[i])),
                                  lw_lt(c, p, lw_add(c, extent.v, lw_i64(c, w->pe[i])))));
  }
}

/* One tap into the pool loop's carried values: the max of x where m holds,
 * or the sum of x where m holds and the count where `counted` holds. */
static void pool_accumulate(lw_ctx_t* c, xc_tiled_op_t* loop, bool is_max, xc_dtype_t at, lw_val_t* m,
                            lw_val_t* counted, lw_val_t* x, lw_val_t** next) {
  xc_tiled_kernel_t* k = c->k;
  if (is_max) {
    next[0] = xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 0),
                              xc_tiled_select(k, m, x, lw_fconst(c, at, -INFINITY)));
    return;
  }
  lw_val_t* one = lw_fconst(c, at, 1), *zero = lw_fconst(c, at, 0);
  next[0] = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_select(k, m, x, zero));
  next[1] = lw_add(c, xc_tiled_for_arg(loop, 1), xc_tiled_select(k, counted, one, zero));
}

/* A channels-last MaxPool or AveragePool as a loop over the window's taps:
 * programs over a flat tile of BLOCK outputs (consecutive channels of a
 * pixel are consecutive lanes); each tap loads the input at the tap's
 * position for every lane (masked outside the input) and takes the max or
 * adds into the accumulator (and the count, for the average), lane by
 * lane. The generic form puts the window across a [BLOCK, BLOCK_R] tile
 * and reduces along it: a 2x2 or 3x3 window used 4 or 9 of the 16 lanes
 * of BLOCK_R, and the reduction ran across lanes. */
static xc_status_t emit_pool_taps(lw_ctx_t* c, const xc_value_t* X, const xc_value_t* Y, const win_t* w, bool is_max,
                                  bool include_pad, xc_dtype_t at, int64_t R) {
  xc_tiled_kernel_t* k = c->k;
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* init[2] = {xc_tiled_const_f(k, at, is_max ? -INFINITY : 0.0, 1, d1), xc_tiled_const_f(k, at, 0.0, 1, d1)};
  int carried = is_max ? 1 : 2;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), lw_i64(c, 1), carried, init);
  {
    xc_dim_t kd[LW_MAX_RANK];
    for (int i = 0; i < w->nsp; i++) kd[i] = xc_dim_const(w->k[i]);
    lw_val_t* kidx[LW_MAX_RANK];
    lw_decompose(c, xc_tiled_for_iv(loop), w->nsp, kd, kidx);
    lw_val_t *ok, *in_sp[LW_MAX_RANK], *inside_pad;
    pool_tap(c, X, w, sp.idx + w->sp0, kidx, include_pad, in_sp, &ok, &inside_pad);
    lw_val_t* m = lw_and(c, sp.mask, ok);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = sp.idx[0];
    sx.idx[X->rank - 1] = sp.idx[X->rank - 1];
    for (int i = 0; i < w->nsp; i++) sx.idx[w->sp0 + i] = in_sp[i];
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* next[2];
    pool_accumulate(c, loop, is_max, at, m, !is_max && include_pad ? lw_and(c, sp.mask, inside_pad) : m, x, next);
    xc_tiled_for_end(k, loop, carried, next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (!is_max) y = lw_div(c, y, xc_tiled_for_result(loop, 1));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}

/* emit_pool_taps on a CPU with a static channel count: the same tap loop
 * over a [BLOCK_M pixels, BLOCK_C channels] tile (the depthwise conv's
 * tiles), so each tap reads a run of consecutive channels per pixel, a
 * (masked) vector load at the pixel's offset, where the flat tile decomposed
 * every lane's index into batch, position and channel and gathered. */
static xc_status_t emit_pool_tiles(lw_ctx_t* c, const xc_value_t* X, const xc_value_t* Y, const win_t* w,
                                   bool is_max, bool include_pad, xc_dtype_t at, int64_t R) {
  xc_tiled_kernel_t* k = c->k;
  int cdim = Y->rank - 1;
  int64_t C = Y->dims[cdim].value;
  xc_dim_t pd[LW_MAX_RANK];
  int np = 0;
  pd[np++] = Y->dims[0];
  for (int i = 0; i < w->nsp; i++) pd[np++] = Y->dims[w->sp0 + i];
  xc_dim_t P = lw_numel(c, np, pd);
  int64_t pixels = xc_dim_is_static(P) ? P.value : 4096;
  int64_t cands[5];
  int ncands = 0;
  for (int i = 0; i < 5; i++)
    if (C % dw_c_c[i] == 0) cands[ncands++] = dw_c_c[i];
  bool exact = ncands > 0;
  if (!exact) {
    memcpy(cands, dw_c_c, sizeof cands);
    ncands = 5;
  }
  int64_t dbc = pow2_clamp(C, 8, 64);
  if (exact) {
    dbc = cands[0];
    for (int i = 0; i < ncands; i++)
      if (cands[i] <= 64) dbc = cands[i];
  }
  int64_t dbm = 1024 / dbc > 64 ? 64 : 1024 / dbc;
  while (dbm > 4 && dbm / 2 >= pixels) dbm /= 2;
  int kBM = pixel_tile_knob(c, dw_m_c, 5, P, dbm);
  int kBC = lw_knob(c, "BLOCK_C", ncands, cands, dbc);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dc = xc_tiled_dim_knob(kBC);
  lw_val_t* m0 = lw_iter_begin(c, 0, lw_dim(c, P), kBM, 0);
  lw_val_t* c0 = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(C)), kBC, 0);
  lw_val_t* rm1 = lw_add(c, m0, xc_tiled_arange(k, dm)); /* [BM] pixels */
  lw_val_t* ch = lw_row(c, lw_add(c, c0, xc_tiled_arange(k, dc))); /* [1,BC] channels */
  lw_val_t* mm = lw_lt(c, lw_col(c, rm1), lw_dim(c, P).v), *mc = exact ? NULL : lw_lt(c, ch, lw_i64(c, C));
  lw_val_t* pidx[LW_MAX_RANK];
  lw_decompose(c, rm1, np, pd, pidx);
  conv_gemm_t g;
  memset(&g, 0, sizeof g);
  g.X = X, g.Y = Y, g.w = w, g.cdim = cdim;
  lw_space_t spix, sy;
  pixel_spaces(c, &g, pidx, ch, &spix, &sy);
  sy.mask = lw_and(c, mm, mc);
  xc_tiled_dim_t d2[2] = {dm, dc};
  /* every window inside the input (no padding, the last window fits) */
  bool inside = true;
  for (int i = 0; i < w->nsp; i++) {
    xc_dim_t in = X->dims[w->sp0 + i], out = Y->dims[w->sp0 + i];
    inside &= w->pb[i] == 0 && xc_dim_is_static(in) && xc_dim_is_static(out) &&
              (out.value - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] < in.value;
  }
  if (is_max && inside && R <= DW_UNROLL_TAPS) {
    /* A max over at most DW_UNROLL_TAPS taps whose windows all lie inside
     * the input, unrolled as the depthwise conv's: each tap an unmasked
     * load, contiguous along the channels (the rows past the pixels read the
     * last pixel), the maxima chained in one fused element loop whose running
     * max stays in a register, where the tap loop carried the tile through
     * memory, a load and a store of it per tap (cnn's 2x2 pool 3.7 -> 2.6 us,
     * section 43). Padded windows keep the tap loop: their clamps and
     * selects per tap made resnet-tiny's 3x3 pool 3.4 -> 8.0 us. The taps in
     * the loop's order. */
    lw_val_t* rmc = xc_tiled_binary(k, XC_TOP_MIN, rm1, lw_sub(c, lw_dim(c, P).v, lw_i64(c, 1)));
    lw_val_t* pclamp[LW_MAX_RANK], *pos[LW_MAX_RANK];
    lw_decompose(c, rmc, np, pd, pclamp);
    for (int i = 0; i < w->nsp; i++) pos[i] = lw_col(c, pclamp[1 + i]);
    lw_val_t* acc = xc_tiled_const_f(k, at, -INFINITY, 2, d2);
    for (int64_t t = 0; t < R; t++) {
      lw_val_t* kidx[LW_MAX_RANK];
      for (int i = w->nsp - 1, rest = (int)t; i >= 0; i--) {
        kidx[i] = lw_i64(c, rest % w->k[i]);
        rest /= (int)w->k[i];
      }
      lw_val_t* in_sp[LW_MAX_RANK];
      pool_tap(c, X, w, pos, kidx, false, in_sp, NULL, NULL); /* every tap inside: no bounds tests */
      lw_space_t sx;
      memset(&sx, 0, sizeof sx);
      sx.rank = X->rank;
      sx.idx[0] = lw_col(c, pclamp[0]);
      sx.idx[cdim] = ch;
      for (int i = 0; i < w->nsp; i++) sx.idx[w->sp0 + i] = in_sp[i];
      lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), mc, NULL), at);
      acc = xc_tiled_binary(k, XC_TOP_MAX, acc, x);
    }
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, acc));
    lw_iter_end(c, c0);
    lw_iter_end(c, m0);
    return NULL;
  }
  lw_val_t* init[2] = {xc_tiled_const_f(k, at, is_max ? -INFINITY : 0.0, 2, d2), xc_tiled_const_f(k, at, 0.0, 2, d2)};
  int carried = is_max ? 1 : 2;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), lw_i64(c, 1), carried, init);
  {
    xc_dim_t kd[LW_MAX_RANK];
    for (int i = 0; i < w->nsp; i++) kd[i] = xc_dim_const(w->k[i]);
    lw_val_t* kidx[LW_MAX_RANK];
    lw_decompose(c, xc_tiled_for_iv(loop), w->nsp, kd, kidx);
    lw_val_t *ok, *in_sp[LW_MAX_RANK], *inside_pad, *pos[LW_MAX_RANK];
    for (int i = 0; i < w->nsp; i++) pos[i] = lw_col(c, pidx[1 + i]);
    pool_tap(c, X, w, pos, kidx, include_pad, in_sp, &ok, &inside_pad);
    lw_val_t* m = lw_and(c, lw_and(c, mm, ok), mc);
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = X->rank;
    sx.idx[0] = sy.idx[0];
    sx.idx[cdim] = ch;
    for (int i = 0; i < w->nsp; i++) sx.idx[w->sp0 + i] = in_sp[i];
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* next[2];
    pool_accumulate(c, loop, is_max, at, m,
                    !is_max && include_pad ? lw_and(c, lw_and(c, mm, inside_pad), mc) : m, x, next);
    xc_tiled_for_end(k, loop, carried, next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (!is_max) y = lw_div(c, y, xc_tiled_for_result(loop, 1));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, c0);
  lw_iter_end(c, m0);
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
  bool include_pad = !is_max && !is_lp && xc_node_attr_int(n, "count_include_pad"); /* LpPool has none */
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  xc_dim_t rd[LW_MAX_RANK];
  int64_t R = 1;
  for (int i = 0; i < w.nsp; i++) {
    rd[i] = xc_dim_const(w.k[i]);
    if (w.k[i] < 1 || !xc_mul_i64(R, w.k[i], &R)) return lw_unsupported(c, n, "kernel size");
  }
  if (nhwc && !is_lp && lw_cpu_limits(c) && xc_dim_is_static(Y->dims[cdim]))
    return emit_pool_tiles(c, X, Y, &w, is_max, include_pad, at, R);
  if (nhwc && !is_lp) return emit_pool_taps(c, X, Y, &w, is_max, include_pad, at, R);
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
  int64_t ks[LW_MAX_RANK] = {0};
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

/* DeformConv (2-D): a flat space over the output and a loop over the
 * reduction (input channels of the group x kernel taps, one per step); each
 * tap samples its input plane bilinearly at the offset position (corners
 * outside the plane read 0), times the mask, times the weight. f64 math
 * like the reference. */
xc_status_t lw_emit_deform_conv(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Wt = n->inputs[1], *O = n->inputs[2], *Y = n->outputs[0];
  const xc_value_t* Bv = n->num_inputs > 3 ? n->inputs[3] : NULL;
  const xc_value_t* Mk = n->num_inputs > 4 ? n->inputs[4] : NULL;
  if (X->rank != 4 || Wt->rank != 4 || O->rank != 4 || Y->rank != 4) return lw_unsupported(c, n, "rank");
  for (int d = 0; d < 4; d++)
    if (X->dims[d].sym || Wt->dims[d].sym || Y->dims[d].sym) return lw_unsupported(c, n, "symbolic dims");
  int64_t group = xc_node_attr_int(n, "group"), og = xc_node_attr_int(n, "offset_group");
  int64_t C = X->dims[1].value, H = X->dims[2].value, Wd = X->dims[3].value;
  int64_t M = Wt->dims[0].value, cg = Wt->dims[1].value, kh = Wt->dims[2].value, kw = Wt->dims[3].value;
  int64_t oh = Y->dims[2].value, ow = Y->dims[3].value, taps = kh * kw;
  if (group < 1 || og < 1 || cg * group != C || M % group || C % og) return lw_unsupported(c, n, "groups");
  int64_t ks[2] = {kh, kw};
  win_t w;
  XC_RETURN_IF_ERROR(window(c, n, X, ks, false, &w));
  xc_dtype_t F = XC_F64;
  int64_t mg = M / group, cpo = C / og;
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, 4, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, 4, Y->dims, start, kb, &sp, NULL);
  lw_val_t *b = sp.idx[0], *oc = sp.idx[1], *i = sp.idx[2], *j = sp.idx[3];
  lw_val_t* gi = lw_div(c, oc, lw_i64(c, mg));
  xc_tiled_dim_t d1[1] = {xc_tiled_dim_knob(kb)};
  lw_val_t* init = xc_tiled_const_f(k, F, 0, 1, d1);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, cg * taps), lw_i64(c, 1), 1, &init);
  {
    lw_val_t* r = xc_tiled_for_iv(loop);
    lw_val_t* ic = lw_div(c, r, lw_i64(c, taps)), *tap = lw_rem(c, r, lw_i64(c, taps));
    lw_val_t* p = lw_div(c, tap, lw_i64(c, kw)), *q = lw_rem(c, tap, lw_i64(c, kw));
    lw_val_t* ch = lw_add(c, lw_mul(c, gi, lw_i64(c, cg)), ic);
    lw_val_t* o = lw_div(c, ch, lw_i64(c, cpo));
    lw_val_t* grp = lw_add(c, lw_mul(c, lw_add(c, lw_mul(c, b, lw_i64(c, og)), o), lw_i64(c, taps)), tap);
    lw_val_t* pix = lw_add(c, lw_mul(c, i, lw_i64(c, ow)), j);
    lw_val_t* plane = lw_i64(c, oh * ow);
    lw_val_t* ob = lw_mul(c, grp, lw_i64(c, 2));
    lw_val_t* dh = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, O), lw_add(c, lw_mul(c, ob, plane), pix), sp.mask, NULL), F);
    lw_val_t* dw = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, O), lw_add(c, lw_mul(c, lw_add(c, ob, lw_i64(c, 1)), plane), pix), sp.mask, NULL), F);
    lw_val_t* hh = lw_add(c, lw_cast_to(c, lw_add(c, lw_sub(c, lw_mul(c, i, lw_i64(c, w.s[0])), lw_i64(c, w.pb[0])), lw_mul(c, p, lw_i64(c, w.d[0]))), F), dh);
    lw_val_t* ww = lw_add(c, lw_cast_to(c, lw_add(c, lw_sub(c, lw_mul(c, j, lw_i64(c, w.s[1])), lw_i64(c, w.pb[1])), lw_mul(c, q, lw_i64(c, w.d[1]))), F), dw);
    hh = xc_tiled_select(k, sp.mask, hh, lw_fconst(c, F, -4)); /* masked lanes stay finite */
    ww = xc_tiled_select(k, sp.mask, ww, lw_fconst(c, F, -4));
    lw_val_t* h0 = xc_tiled_unary(k, XC_TOP_FLOOR, hh), *w0 = xc_tiled_unary(k, XC_TOP_FLOOR, ww);
    lw_val_t* fh = lw_sub(c, hh, h0), *fw = lw_sub(c, ww, w0);
    lw_val_t* hi0 = lw_cast_to(c, h0, XC_I64), *wi0 = lw_cast_to(c, w0, XC_I64);
    lw_val_t* base = lw_mul(c, lw_add(c, lw_mul(c, b, lw_i64(c, C)), ch), lw_i64(c, H * Wd));
    lw_val_t* v = lw_fconst(c, F, 0);
    for (int dy = 0; dy < 2; dy++)
      for (int dx = 0; dx < 2; dx++) {
        lw_val_t* yy = lw_add(c, hi0, lw_i64(c, dy)), *xx = lw_add(c, wi0, lw_i64(c, dx));
        lw_val_t* in = lw_and(c, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, yy, lw_i64(c, 0)), lw_lt(c, yy, lw_i64(c, H))),
                              lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, xx, lw_i64(c, 0)), lw_lt(c, xx, lw_i64(c, Wd))));
        in = lw_and(c, in, sp.mask);
        lw_val_t* off = lw_add(c, base, lw_add(c, lw_mul(c, yy, lw_i64(c, Wd)), xx));
        off = xc_tiled_select(k, in, off, lw_i64(c, 0));
        lw_val_t* xv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), off, in, NULL), F);
        lw_val_t* wt = lw_mul(c, dy ? fh : lw_sub(c, lw_fconst(c, F, 1), fh), dx ? fw : lw_sub(c, lw_fconst(c, F, 1), fw));
        v = lw_add(c, v, xc_tiled_select(k, in, lw_mul(c, wt, xv), lw_fconst(c, F, 0)));
      }
    if (Mk) v = lw_mul(c, v, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Mk), lw_add(c, lw_mul(c, grp, plane), pix), sp.mask, NULL), F));
    lw_val_t* woff = lw_add(c, lw_mul(c, lw_add(c, lw_mul(c, lw_add(c, lw_mul(c, oc, lw_i64(c, cg)), ic), lw_i64(c, kh)), p), lw_i64(c, kw)), q);
    lw_val_t* wv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Wt), woff, sp.mask, NULL), F);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), lw_mul(c, v, wv));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (Bv) y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Bv), oc, sp.mask, NULL), F));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}
