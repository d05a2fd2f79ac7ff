/* Reduction lowering. The input is viewed as [rows = kept dims, cols =
 * reduced dims] through index math (any set of axes, no data movement):
 * each program takes BLOCK_R rows and loops over the reduced elements in
 * BLOCK_C chunks, carrying a [BLOCK_R] accumulator. Reduce* and global
 * pools finish with one value per row; Softmax/LogSoftmax/LayerNorm/
 * RMSNorm make their statistics passes and then a final pass that writes
 * [BLOCK_R, BLOCK_C] tiles through the fused epilogue. Normalizations of
 * short static rows are one pass instead: the whole row is one tile,
 * loaded once, and the statistics and the output all come from it. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

typedef struct rows {
  const xc_value_t* X;
  int nk, nr;
  int kept[LW_MAX_RANK], red[LW_MAX_RANK];
  xc_dim_t kdims[LW_MAX_RANK], rdims[LW_MAX_RANK];
  lw_val_t* kidx[LW_MAX_RANK];
  lw_val_t* rowmask; /* [BR,1]; in the one-pass form (rows clamped) only where no kept dim reaches the offsets */
  lw_dimv_t R;
  int kBR, kBC;
  bool one_pass; /* BLOCK_C covers the whole row: its one candidate is width >= R */
  int64_t width;
  lw_val_t* start;
  lw_val_t* rc; /* [1,BC] flat reduced index of the current chunk */
  int64_t cpg;  /* GroupNormalization: channels per group (rows = [N, G]), else 0 */
} rows_t;

static const int64_t br_c[] = {1, 2, 4, 8, 16}, bc_c[] = {16, 32, 64, 128, 256, 512, 1024};

/* Default tile of a row reduction. CPUs: 4 rows of 64-element chunks. GPUs
 * (SIMD width >= 32, at most 96 KiB of shared memory): one chunk as long as
 * the row up to 1024 elements, and as many rows as fill about 1024
 * elements — a work-group then reads a row in few chunks, each with
 * cooperative reductions, instead of looping over many small chunks with a
 * barrier each. */
static void reduce_tile_defaults(const lw_ctx_t* c, const xc_dim_t* rdims, int nr, int64_t* br, int64_t* bc) {
  *br = 4, *bc = 64;
  const xc_tiled_limits_t* l = c->limits;
  if (!l || l->value[XC_TILED_LIMIT_SIMD_WIDTH] < 32 || l->value[XC_TILED_LIMIT_SHARED_BYTES] > 96 * 1024) return;
  int64_t len = 1;
  for (int i = 0; i < nr; i++) len = xc_dim_is_static(rdims[i]) && len <= (1 << 20) ? len * rdims[i].value : 1 << 20;
  *bc = 16;
  while (*bc < len && *bc < 1024) *bc *= 2;
  *br = 1;
  while (*br < 16 && *br * 2 * *bc <= 1024) *br *= 2;
}

/* Longest row tile of the one-pass normalization, whatever the limits. */
#define ONE_PASS_MAX_ROW 8192

/* The BLOCK_C of a one-pass normalization: the next power of two of the
 * reduced length R when R is static and one row of that many elements fits
 * the limits — a tile (max_tile_elems) and a share of the shared memory —
 * else 0, and the rows are reduced in BLOCK_C chunks over several passes.
 * The share: on GPUs (SIMD width >= 32) the row tiles live in registers
 * and their reductions combine across lanes (docs/emitter.md, "Row
 * reductions in registers"), so only what a kernel keeps in shared memory
 * beside them needs room: half, for two row tiles. Elsewhere an eighth:
 * work-group dialects on CPUs (PoCL) may still stage row tiles. */
static bool gpu_limits(const xc_tiled_limits_t* l) { return l && l->value[XC_TILED_LIMIT_SIMD_WIDTH] >= 32; }
static int64_t one_pass_share(const xc_tiled_limits_t* l) { return gpu_limits(l) ? 2 : 8; }

static int64_t one_pass_width(const lw_ctx_t* c, const xc_dim_t* rdims, int nr, xc_dtype_t at) {
  int64_t len = 1;
  for (int i = 0; i < nr; i++) {
    if (!xc_dim_is_static(rdims[i]) || rdims[i].value > ONE_PASS_MAX_ROW) return 0;
    len *= rdims[i].value;
    if (len > ONE_PASS_MAX_ROW) return 0;
  }
  int64_t width = lw_pow2_at_least(len);
  int64_t cap = ONE_PASS_MAX_ROW;
  const xc_tiled_limits_t* l = c->limits;
  int64_t elem = at == XC_F64 ? 8 : 4;
  if (l && l->value[XC_TILED_LIMIT_MAX_TILE_ELEMS] < cap) cap = l->value[XC_TILED_LIMIT_MAX_TILE_ELEMS];
  int64_t share = one_pass_share(l);
  if (l && l->value[XC_TILED_LIMIT_SHARED_BYTES] / (share * elem) < cap)
    cap = l->value[XC_TILED_LIMIT_SHARED_BYTES] / (share * elem);
  return width <= cap ? width : 0;
}

/* Rows of a one-pass normalization: BLOCK_C has the single candidate
 * `width` (>= R), BLOCK_R stays tunable under the constraint that a
 * [BLOCK_R, BLOCK_C] tile takes at most its share of the shared memory.
 * Default BLOCK_R: about 4096 elements per program on CPUs (four rows of
 * 1024: the row tile stays in L1/L2 and a row of gamma or beta is read once
 * for four rows), about 1024 on GPUs (SIMD width >= 32), as in the chunked
 * form. */
static void one_pass_knobs(lw_ctx_t* c, int64_t width, xc_dtype_t at, rows_t* w) {
  const xc_tiled_limits_t* l = c->limits;
  int64_t target = gpu_limits(l) ? 1024 : 4096;
  int64_t br = 1;
  while (br < 16 && br * 2 * width <= target) br *= 2;
  w->kBR = lw_knob(c, "BLOCK_R", 5, br_c, br);
  w->kBC = lw_knob(c, "BLOCK_C", 1, &width, width);
  /* GPUs: rows of 4096 and more run best with 256 threads, 16 or more slots
   * each (bf16 16384x4096 LayerNorm+Gelu on an H200: 140 us against 153 us
   * with 128 threads, bench/RESULTS.md) */
  if (gpu_limits(l) && br * width >= 4096 && c->threads_default < 256) c->threads_default = 256;
  w->one_pass = true;
  w->width = width;
  xc_tiled_kernel_t* k = c->k;
  const xc_tiled_expr_t* tile = xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, w->kBR), xc_texpr_knob(k, w->kBC));
  tile = xc_texpr_binary(k, XC_TEXPR_MUL, tile, xc_texpr_const(k, one_pass_share(l) * (at == XC_F64 ? 8 : 4)));
  xc_tiled_add_constraint(k, xc_texpr_binary(k, XC_TEXPR_LE, tile, xc_texpr_limit(k, XC_TILED_LIMIT_SHARED_BYTES)));
}

static void rows_begin_at(lw_ctx_t* c, const xc_value_t* X, const bool* is_red, int64_t cpg, bool one_pass,
                          rows_t* w);

static void rows_begin(lw_ctx_t* c, const xc_value_t* X, const bool* is_red, rows_t* w) {
  rows_begin_at(c, X, is_red, 0, false, w);
}

/* cpg > 0: GroupNormalization's rows [N, C/cpg] over [cpg, spatial...] (the
 * channel index is group * cpg + the first reduced index); is_red unused.
 * one_pass: whole rows in one tile when one_pass_width allows it. */
static void rows_begin_at(lw_ctx_t* c, const xc_value_t* X, const bool* is_red, int64_t cpg, bool one_pass,
                          rows_t* w) {
  memset(w, 0, sizeof *w);
  w->X = X;
  w->cpg = cpg;
  for (int d = 0; d < X->rank && cpg > 0; d++) {
    if (d == 0) {
      w->kept[w->nk] = 0;
      w->kdims[w->nk++] = X->dims[0];
    } else if (d == 1) {
      w->kept[w->nk] = 1;
      w->kdims[w->nk++] = xc_dim_const(X->dims[1].value / cpg);
      w->red[w->nr] = 1;
      w->rdims[w->nr++] = xc_dim_const(cpg);
    } else {
      w->red[w->nr] = d;
      w->rdims[w->nr++] = X->dims[d];
    }
  }
  for (int d = 0; d < X->rank && cpg == 0; d++) {
    if (is_red[d]) {
      w->red[w->nr] = d;
      w->rdims[w->nr++] = X->dims[d];
    } else {
      w->kept[w->nk] = d;
      w->kdims[w->nk++] = X->dims[d];
    }
  }
  xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
  int64_t width = one_pass ? one_pass_width(c, w->rdims, w->nr, at) : 0;
  if (width > 0) {
    one_pass_knobs(c, width, at, w);
  } else {
    int64_t dbr, dbc;
    reduce_tile_defaults(c, w->rdims, w->nr, &dbr, &dbc);
    w->kBR = lw_knob(c, "BLOCK_R", 5, br_c, dbr);
    w->kBC = lw_knob(c, "BLOCK_C", 7, bc_c, dbc);
  }
  w->start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, w->nk, w->kdims)), w->kBR, 0);
  lw_val_t* row = lw_add(c, w->start, xc_tiled_arange(c->k, xc_tiled_dim_knob(w->kBR)));
  lw_val_t* nrows = lw_dim(c, lw_numel(c, w->nk, w->kdims)).v;
  /* Whether the row index reaches the offsets (a kept dim other than the
   * constant 1, whose stride is 0): then tiles get their [BLOCK_R, ...]
   * shape from the offsets, else only from the row mask. */
  bool rows_vary = false;
  for (int i = 0; i < w->nk; i++) rows_vary |= !xc_dim_is_static(w->kdims[i]) || w->kdims[i].value != 1;
  if (w->one_pass) {
    /* Rows past the end repeat the last row (same values to the same
     * places), so no lane is masked by its row: loads and stores of whole
     * rows have no mask when BLOCK_C = R. */
    row = xc_tiled_binary(c->k, XC_TOP_MIN, row, lw_sub(c, nrows, lw_i64(c, 1)));
  }
  if (!w->one_pass || !rows_vary) w->rowmask = lw_col(c, lw_lt(c, row, nrows));
  lw_decompose(c, lw_col(c, row), w->nk, w->kdims, w->kidx);
  w->R = lw_dim(c, lw_numel(c, w->nr, w->rdims));
}

/* The space of the chunk starting at r0: idx of X's dims, mask [BR,BC]. */
static void rows_chunk(lw_ctx_t* c, rows_t* w, lw_val_t* r0, lw_space_t* sp) {
  memset(sp, 0, sizeof *sp);
  sp->rank = w->X->rank;
  sp->dims = w->X->dims;
  lw_val_t* rc = lw_row(c, lw_add(c, r0, xc_tiled_arange(c->k, xc_tiled_dim_knob(w->kBC))));
  lw_val_t* ridx[LW_MAX_RANK];
  w->rc = rc;
  lw_decompose(c, rc, w->nr, w->rdims, ridx);
  for (int i = 0; i < w->nk; i++) sp->idx[w->kept[i]] = w->kidx[i];
  for (int i = 0; i < w->nr; i++) sp->idx[w->red[i]] = ridx[i];
  if (w->cpg > 0) sp->idx[1] = lw_add(c, lw_mul(c, w->kidx[1], lw_i64(c, w->cpg)), ridx[0]);
  bool full = w->one_pass && w->R.is_const && w->R.c == w->width; /* every column valid */
  sp->mask = lw_and(c, w->rowmask, full ? NULL : lw_lt(c, rc, w->R.v));
}

static xc_dtype_t acc_type(xc_dtype_t dt) {
  if (dt == XC_F64) return XC_F64;
  if (dt == XC_BOOL) return XC_I32; /* Max = any, Min = all on 0/1 */
  if (xc_dtype_is_float(dt)) return XC_F32;
  return dt;
}

/* x chunk loaded as acc dtype, masked-off lanes = fill. */
static lw_val_t* load_chunk(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* X, xc_dtype_t at,
                            double fill) {
  lw_val_t* x = lw_cast_to(c, lw_load_at(c, sp, X), at); /* a buffer, or the phase's prologue */
  return xc_tiled_select(c->k, sp->mask, x, lw_fconst(c, at, fill));
}

/* The smallest (max = false) or largest value of an integer or bool dtype, as
 * the start of a max/min reduction (i64 and u64: the nearest doubles). */
static double int_extreme(xc_dtype_t t, bool max) {
  switch (t) {
    case XC_BOOL: return max ? 1 : 0;
    case XC_I8: return max ? 127 : -128;
    case XC_U8: return max ? 255 : 0;
    case XC_I16: return max ? 32767 : -32768;
    case XC_U16: return max ? 65535 : 0;
    case XC_I32: return max ? 2147483647.0 : -2147483648.0;
    case XC_U32: return max ? 4294967295.0 : 0;
    case XC_U64: return max ? 1.8e19 : 0;
    default: return max ? 9.2e18 : -9.2e18;
  }
}

enum { RK_SUM, RK_MEAN, RK_MAX, RK_MIN, RK_PROD, RK_L1, RK_L2, RK_SUMSQ, RK_LOGSUM, RK_LOGSUMEXP };

static const struct {
  const char* name;
  int kind;
} reduce_ops[] = {
    {"ReduceSum", RK_SUM},   {"ReduceMean", RK_MEAN},     {"ReduceMax", RK_MAX},
    {"ReduceMin", RK_MIN},   {"ReduceProd", RK_PROD},     {"ReduceL1", RK_L1},
    {"ReduceL2", RK_L2},     {"ReduceSumSquare", RK_SUMSQ}, {"ReduceLogSum", RK_LOGSUM},
    {"ReduceLogSumExp", RK_LOGSUMEXP}, {"GlobalAveragePool", RK_MEAN}, {"GlobalMaxPool", RK_MAX},
};

static int reduce_kind(const xc_node_t* n) {
  if (n->domain && n->domain[0]) return -1;
  for (size_t i = 0; i < sizeof reduce_ops / sizeof *reduce_ops; i++)
    if (!strcmp(n->op_type, reduce_ops[i].name)) return reduce_ops[i].kind;
  return -1;
}

bool lw_is_reduce(const xc_node_t* n) { return reduce_kind(n) >= 0; }

bool lw_is_normalize(const xc_node_t* n) {
  if (n->domain && n->domain[0]) return false;
  return !strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "LogSoftmax") ||
         !strcmp(n->op_type, "LayerNormalization") || !strcmp(n->op_type, "RMSNormalization") ||
         !strcmp(n->op_type, "LpNormalization") || !strcmp(n->op_type, "InstanceNormalization") ||
         !strcmp(n->op_type, "GroupNormalization") || !strcmp(n->op_type, "MeanVarianceNormalization");
}

/* for r0 over the reduced elements, one carried [BR] accumulator. */
static xc_tiled_op_t* chunk_loop(lw_ctx_t* c, rows_t* w, lw_val_t* init, lw_space_t* sp) {
  xc_tiled_op_t* loop = xc_tiled_for_begin(c->k, lw_i64(c, 0), w->R.v,
                                           xc_tiled_knob_value(c->k, w->kBC), 1, &init);
  rows_chunk(c, w, xc_tiled_for_iv(loop), sp);
  return loop;
}

static lw_val_t* row_init(lw_ctx_t* c, rows_t* w, xc_dtype_t at, double v) {
  xc_tiled_dim_t d = xc_tiled_dim_knob(w->kBR);
  if (xc_dtype_is_float(at)) return xc_tiled_const_f(c->k, at, v, 1, &d);
  return xc_tiled_const_i(c->k, at, (int64_t)v, 1, &d);
}

static const int64_t col_r_c[] = {4, 8, 16, 32}, col_c_c[] = {8, 16, 32, 64, 128};

/* A float sum or mean on a CPU whose reduced dims are one block followed by
 * kept dims (a channels-last GlobalAveragePool: [N, H, W, C] over H and W),
 * as X viewed [O, R, I] (static dims, I >= 8): programs over (BLOCK_C
 * consecutive inner elements, outer index), a loop over R in BLOCK_R rows
 * adding [BLOCK_R, BLOCK_C] tiles whose rows are contiguous runs into a
 * carried tile, one reduction along its rows at the end. The row form
 * (rows_begin) reads such a reduction as rows of R elements I apart: a
 * gather per element. Sums each column in an order of its own (R / BLOCK_R
 * partial sums per lane, then across them), like any chunked sum. */
static bool column_form(const lw_ctx_t* c, const xc_value_t* X, const bool* is_red, int kind, int64_t* O,
                        int64_t* R, int64_t* I) {
  if (!lw_cpu_limits(c) || (kind != RK_SUM && kind != RK_MEAN) || !xc_dtype_is_float(X->dtype)) return false;
  int a = -1, b = -1;
  for (int d = 0; d < X->rank; d++) {
    if (!xc_dim_is_static(X->dims[d])) return false;
    if (is_red[d]) {
      if (a < 0) a = d;
      else if (b != d - 1) return false; /* not one block */
      b = d;
    }
  }
  if (a < 0 || b == X->rank - 1) return false;
  *O = *R = *I = 1;
  for (int d = 0; d < X->rank; d++) {
    int64_t* p = d < a ? O : d <= b ? R : I;
    if (!xc_mul_i64(*p, X->dims[d].value, p)) return false;
  }
  return *I >= 8 && *R >= 2;
}

static xc_status_t emit_reduce_columns(lw_ctx_t* c, const xc_node_t* n, const bool* is_red, int kind, int64_t O,
                                       int64_t R, int64_t I) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  xc_dtype_t at = acc_type(X->dtype);
  /* BLOCK_C: the tiles that divide I (no column mask), else all, the
   * default covering I up to 64 */
  int64_t cands[5];
  int ncands = 0;
  for (int i = 0; i < 5; i++)
    if (I % col_c_c[i] == 0) cands[ncands++] = col_c_c[i];
  int64_t dbc = cands[0];
  for (int i = 0; i < ncands; i++)
    if (cands[i] <= 64) dbc = cands[i];
  if (!ncands) {
    memcpy(cands, col_c_c, sizeof cands);
    ncands = 5;
    dbc = lw_pow2_at_least(I) > 64 ? 64 : lw_pow2_at_least(I);
  }
  /* BLOCK_R: 16 rows, fewer where the carried [BLOCK_R, BLOCK_C] tile
   * would take more than 8 vector registers (it then lived on the stack: a
   * 32-channel pool over 16x16 pixels ran 2.3x slower at 16 rows than at 4) */
  int64_t simd = c->limits ? c->limits->value[XC_TILED_LIMIT_SIMD_WIDTH] : 0, dbr = R >= 16 ? 16 : 4;
  int64_t regs = simd * 8 * 4 / (int64_t)xc_dtype_size(at); /* 8 vectors of the accumulator type */
  while (simd > 0 && dbr > 4 && dbr * dbc > regs) dbr /= 2;
  int kBR = lw_knob(c, "BLOCK_R", 4, col_r_c, dbr);
  int kBC = lw_knob(c, "BLOCK_C", ncands, cands, dbc);
  xc_tiled_dim_t dr = xc_tiled_dim_knob(kBR), dc = xc_tiled_dim_knob(kBC);
  lw_val_t* c0 = lw_iter_begin(c, 0, lw_dim(c, xc_dim_const(I)), kBC, 0);
  lw_val_t* o = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(O)), -1, 1);
  lw_val_t* ch1 = lw_add(c, c0, xc_tiled_arange(k, dc)); /* [BC] inner index */
  lw_val_t* ch = lw_row(c, ch1);
  lw_val_t* mc = lw_lt(c, ch, lw_i64(c, I));
  xc_tiled_dim_t d2[2] = {dr, dc};
  lw_val_t* acc0 = xc_tiled_const_f(k, at, 0.0, 2, d2);
  lw_val_t* base = lw_mul(c, o, lw_i64(c, R * I));
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, R), xc_tiled_knob_value(k, kBR), 1, &acc0);
  {
    lw_val_t* rr = lw_col(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, dr))); /* [BR,1] */
    lw_val_t* m = lw_and(c, lw_lt(c, rr, lw_i64(c, R)), mc);
    lw_val_t* off = lw_add(c, lw_add(c, base, lw_mul(c, rr, lw_i64(c, I))), ch);
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), off, m, NULL), at);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), x);
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_reduce(k, XC_REDUCE_SUM, xc_tiled_for_result(loop, 0), 0); /* [BC] */
  if (kind == RK_MEAN) y = lw_div(c, y, lw_fconst(c, at, (double)R));
  y = lw_row(c, y); /* [1,BC] */
  /* Y's coordinates: the outer kept dims from o, the inner ones from the
   * [1,BC] index, reduced dims (kept as 1) none */
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = Y->rank;
  sy.dims = Y->dims;
  sy.mask = mc;
  xc_dim_t od[LW_MAX_RANK], id[LW_MAX_RANK];
  int no = 0, ni = 0, first_red = -1;
  for (int d = 0; d < X->rank; d++) {
    if (is_red[d] && first_red < 0) first_red = d;
    if (!is_red[d]) {
      if (first_red < 0) od[no++] = X->dims[d];
      else id[ni++] = X->dims[d];
    }
  }
  lw_val_t* oidx[LW_MAX_RANK] = {0}, *iidx[LW_MAX_RANK] = {0};
  if (no) lw_decompose(c, o, no, od, oidx);
  lw_decompose(c, ch, ni, id, iidx);
  bool keep = Y->rank == X->rank;
  if (!keep && Y->rank != no + ni) return lw_unsupported(c, n, "unexpected output rank");
  for (int d = 0, yo = 0, ko = 0, ki = 0; d < X->rank; d++) {
    if (is_red[d]) {
      if (keep) yo++;
      continue;
    }
    sy.idx[yo++] = ko < no ? oidx[ko++] : iidx[ki++];
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, o);
  lw_iter_end(c, c0);
  return NULL;
}

xc_status_t lw_emit_reduce(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  int kind = reduce_kind(n);
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  if (X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", X->rank);
  bool is_red[LW_MAX_RANK] = {0};
  bool global = !strncmp(n->op_type, "Global", 6);
  if (global) {
    for (int d = 2; d < X->rank; d++) is_red[d] = true;
  } else {
    int64_t axes[LW_MAX_RANK];
    int na = 0;
    const xc_value_t* av = n->num_inputs > 1 ? n->inputs[1] : NULL;
    if (av && !lw_const_ints(c, av, axes, LW_MAX_RANK, &na))
      return lw_unsupported(c, n, "axes are not constant");
    if (na == 0) {
      /* noop_with_empty_axes: the output is the input; a sum over no axes
       * (one element per row) copies it whatever the op. */
      if (xc_node_attr_int(n, "noop_with_empty_axes")) kind = RK_SUM;
      else
        for (int d = 0; d < X->rank; d++) is_red[d] = true;
    }
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + X->rank : axes[i];
      if (a < 0 || a >= X->rank) return lw_unsupported(c, n, "bad axis");
      is_red[a] = true;
    }
  }
  xc_dtype_t at = acc_type(X->dtype);
  if (!xc_dtype_is_float(at) && (kind == RK_MEAN || kind == RK_L2 || kind == RK_LOGSUM || kind == RK_LOGSUMEXP))
    return lw_unsupported(c, n, "integer %s", n->op_type);
  int64_t O, R, I;
  if (column_form(c, X, is_red, kind, &O, &R, &I)) return emit_reduce_columns(c, n, is_red, kind, O, R, I);
  rows_t w;
  rows_begin(c, X, is_red, &w);
  double init = 0;
  xc_tiled_reduce_kind_t rk = XC_REDUCE_SUM;
  if (kind == RK_MAX) init = -INFINITY, rk = XC_REDUCE_MAX;
  if (kind == RK_MIN) init = INFINITY, rk = XC_REDUCE_MIN;
  if (kind == RK_PROD) init = 1, rk = XC_REDUCE_PROD;
  if (!xc_dtype_is_float(at) && (kind == RK_MAX || kind == RK_MIN)) init = int_extreme(at, kind == RK_MIN);
  if (X->dtype == XC_BOOL) {
    if (kind != RK_MAX && kind != RK_MIN) return lw_unsupported(c, n, "bool %s", n->op_type);
    init = kind == RK_MAX ? 0 : 1;
  }
  double fill = init;
  lw_val_t* a0 = row_init(c, &w, at, kind == RK_MAX || kind == RK_MIN ? init : (kind == RK_PROD ? 1 : 0));
  lw_space_t sp;
  xc_tiled_op_t* loop = chunk_loop(c, &w, a0, &sp);
  {
    lw_val_t* x = load_chunk(c, &sp, X, at, fill);
    if (kind == RK_L1) x = xc_tiled_unary(k, XC_TOP_ABS, x);
    if (kind == RK_L2 || kind == RK_SUMSQ) x = lw_mul(c, x, x);
    if (kind == RK_LOGSUMEXP) x = xc_tiled_select(k, sp.mask, xc_tiled_unary(k, XC_TOP_EXP, x), lw_fconst(c, at, 0));
    lw_val_t* part = xc_tiled_reduce(k, rk, x, 1);
    lw_val_t* acc = xc_tiled_for_arg(loop, 0);
    lw_val_t* next;
    if (rk == XC_REDUCE_MAX || rk == XC_REDUCE_MIN) {
      next = xc_tiled_binary(k, rk == XC_REDUCE_MAX ? XC_TOP_MAX : XC_TOP_MIN, acc, part);
      if (xc_dtype_is_float(at)) /* NaN propagates */
        next = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_NE, part, part), part, next);
    } else if (rk == XC_REDUCE_PROD) {
      next = lw_mul(c, acc, part);
    } else {
      next = lw_add(c, acc, part);
    }
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* y = xc_tiled_for_result(loop, 0);
  if (kind == RK_MEAN) y = lw_div(c, y, lw_cast_to(c, w.R.v, at));
  if (kind == RK_L2) y = xc_tiled_unary(k, XC_TOP_SQRT, y);
  if (kind == RK_LOGSUM || kind == RK_LOGSUMEXP) y = xc_tiled_unary(k, XC_TOP_LOG, y);
  y = lw_col(c, y); /* [BR,1] */
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = Y->rank;
  sy.dims = Y->dims;
  sy.mask = w.rowmask;
  if (Y->rank == X->rank) {
    for (int i = 0; i < w.nk; i++) sy.idx[w.kept[i]] = w.kidx[i];
  } else if (Y->rank == w.nk) {
    for (int i = 0; i < w.nk; i++) sy.idx[i] = w.kidx[i];
  } else {
    return lw_unsupported(c, n, "unexpected output rank");
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, w.start);
  return NULL;
}

/* y = x / ||x||_p along one axis (a zero vector stays zero). */
static xc_status_t emit_lpnorm(lw_ctx_t* c, const xc_node_t* n, int64_t axis) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t* X = n->inputs[0];
  int64_t p = xc_node_attr_int(n, "p");
  if (p != 1 && p != 2) return lw_unsupported(c, n, "p=%lld", (long long)p);
  xc_dtype_t at = acc_type(X->dtype);
  bool is_red[LW_MAX_RANK] = {0};
  is_red[axis] = true;
  rows_t w;
  rows_begin(c, X, is_red, &w);
  lw_space_t sp;
  xc_tiled_op_t* loop = chunk_loop(c, &w, row_init(c, &w, at, 0), &sp);
  {
    lw_val_t* x = load_chunk(c, &sp, X, at, 0);
    x = p == 1 ? xc_tiled_unary(k, XC_TOP_ABS, x) : lw_mul(c, x, x);
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, x, 1));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* norm = xc_tiled_for_result(loop, 0);
  if (p == 2) norm = xc_tiled_unary(k, XC_TOP_SQRT, norm);
  norm = lw_col(c, norm);
  lw_val_t* zero = lw_fconst(c, at, 0);
  lw_val_t* nz = xc_tiled_cmp(k, XC_CMP_NE, norm, zero);
  lw_val_t* safe = xc_tiled_select(k, nz, norm, lw_fconst(c, at, 1));
  xc_tiled_op_t* out_loop = xc_tiled_for_begin(k, lw_i64(c, 0), w.R.v, xc_tiled_knob_value(k, w.kBC), 0, NULL);
  rows_chunk(c, &w, xc_tiled_for_iv(out_loop), &sp);
  lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sp, X), sp.mask, NULL), at);
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, xc_tiled_select(k, nz, lw_div(c, x, safe), zero)));
  xc_tiled_for_end(k, out_loop, 0, NULL);
  lw_iter_end(c, w.start);
  return NULL;
}

bool lw_is_argreduce(const xc_node_t* n) {
  return (!n->domain || !n->domain[0]) &&
         (!strcmp(n->op_type, "ArgMax") || !strcmp(n->op_type, "ArgMin") || !strcmp(n->op_type, "Hardmax"));
}

/* ArgMax/ArgMin: carried (best value, its index) per row; ties keep the
 * first index (or the last with select_last_index). */
xc_status_t lw_emit_argreduce(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  if (X->rank < 1 || X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", X->rank);
  bool hard = n->op_type[0] == 'H';
  bool is_max = hard || (n->op_type[3] == 'M' && n->op_type[4] == 'a');
  bool last = !hard && xc_node_attr_int(n, "select_last_index") != 0; /* Hardmax has no such attribute */
  int64_t axis = xc_node_attr_int(n, "axis");
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
  xc_dtype_t at = acc_type(X->dtype);
  bool fl = xc_dtype_is_float(at);
  double worst = fl ? (is_max ? -INFINITY : INFINITY) : int_extreme(at, !is_max);
  bool is_red[LW_MAX_RANK] = {0};
  is_red[axis] = true;
  rows_t w;
  rows_begin(c, X, is_red, &w);
  xc_tiled_dim_t d1 = xc_tiled_dim_knob(w.kBR);
  lw_val_t* init[2] = {row_init(c, &w, at, worst), xc_tiled_const_i(k, XC_I64, last ? -1 : 0, 1, &d1)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), w.R.v, xc_tiled_knob_value(k, w.kBC), 2, init);
  lw_space_t sp;
  rows_chunk(c, &w, xc_tiled_for_iv(loop), &sp);
  {
    lw_val_t* x = load_chunk(c, &sp, X, at, worst);
    lw_val_t* best = xc_tiled_for_arg(loop, 0), *bidx = xc_tiled_for_arg(loop, 1);
    lw_val_t* part = xc_tiled_reduce(k, is_max ? XC_REDUCE_MAX : XC_REDUCE_MIN, x, 1);
    lw_val_t* hit = lw_and(c, sp.mask, xc_tiled_cmp(k, XC_CMP_EQ, x, lw_col(c, part)));
    lw_val_t* pidx = xc_tiled_reduce(k, last ? XC_REDUCE_MAX : XC_REDUCE_MIN,
                                     xc_tiled_select(k, hit, w.rc, lw_i64(c, last ? -1 : INT64_MAX)), 1);
    lw_val_t* any = xc_tiled_cmp(k, XC_CMP_GE, pidx, lw_i64(c, 0));
    any = lw_and(c, any, lw_lt(c, pidx, lw_i64(c, INT64_MAX)));
    xc_tiled_cmp_t better = is_max ? (last ? XC_CMP_GE : XC_CMP_GT) : (last ? XC_CMP_LE : XC_CMP_LT);
    lw_val_t* take = lw_and(c, any, xc_tiled_cmp(k, better, part, best));
    /* the first chunk always sets an index (rows of only the worst value) */
    take = xc_tiled_binary(k, XC_TOP_OR, take, lw_and(c, any, xc_tiled_cmp(k, XC_CMP_EQ, xc_tiled_for_iv(loop), lw_i64(c, 0))));
    lw_val_t* next[2] = {xc_tiled_select(k, take, part, best), xc_tiled_select(k, take, pidx, bidx)};
    xc_tiled_for_end(k, loop, 2, next);
  }
  lw_val_t* y = lw_col(c, xc_tiled_for_result(loop, 1));
  if (hard) { /* one-hot of the first maximum */
    xc_tiled_op_t* out_loop = xc_tiled_for_begin(k, lw_i64(c, 0), w.R.v, xc_tiled_knob_value(k, w.kBC), 0, NULL);
    rows_chunk(c, &w, xc_tiled_for_iv(out_loop), &sp);
    lw_val_t* on = xc_tiled_cmp(k, XC_CMP_EQ, w.rc, y);
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, xc_tiled_select(k, on, lw_fconst(c, Y->dtype, 1), lw_fconst(c, Y->dtype, 0))));
    xc_tiled_for_end(k, out_loop, 0, NULL);
    lw_iter_end(c, w.start);
    return NULL;
  }
  lw_space_t sy;
  memset(&sy, 0, sizeof sy);
  sy.rank = Y->rank;
  sy.dims = Y->dims;
  sy.mask = w.rowmask;
  if (Y->rank == X->rank) {
    for (int i = 0; i < w.nk; i++) sy.idx[w.kept[i]] = w.kidx[i];
  } else {
    for (int i = 0; i < w.nk; i++) sy.idx[i] = w.kidx[i];
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sy, y));
  lw_iter_end(c, w.start);
  return NULL;
}

/* CumSum: each output sums the inputs before it along the axis (a masked
 * reduction over BLOCK_C chunks of the axis). */
xc_status_t lw_emit_cumsum(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  int64_t ax[1];
  int na = 0;
  if (X->rank < 1 || X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", X->rank);
  /* a run-time axis is selected among the dims with compares */
  bool dyn = !lw_const_ints(c, n->inputs[1], ax, 1, &na) || na != 1;
  int64_t axis = dyn ? 0 : (ax[0] < 0 ? ax[0] + X->rank : ax[0]);
  if (axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
  bool excl = xc_node_attr_int(n, "exclusive") != 0, rev = xc_node_attr_int(n, "reverse") != 0;
  xc_dtype_t at = acc_type(X->dtype);
  static const int64_t blk[] = {32, 64, 128, 256}, bc[] = {8, 16, 32, 64};
  int kb = lw_knob(c, "BLOCK", 4, blk, 64);
  int kc = lw_knob(c, "BLOCK_C", 4, bc, 16);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  xc_tiled_dim_t d1 = xc_tiled_dim_knob(kb);
  lw_val_t* acc0 = xc_dtype_is_float(at) ? xc_tiled_const_f(k, at, 0, 1, &d1) : xc_tiled_const_i(k, at, 0, 1, &d1);
  lw_val_t* A = lw_dim(c, X->dims[axis]).v;
  lw_val_t* axv = NULL;
  lw_val_t* i = lw_col(c, sp.idx[axis]);
  if (dyn) {
    axv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[1]), lw_i64(c, 0), NULL, NULL), XC_I64);
    axv = xc_tiled_select(k, lw_lt(c, axv, lw_i64(c, 0)), lw_add(c, axv, lw_i64(c, X->rank)), axv);
    for (int d = 1; d < X->rank; d++) {
      lw_val_t* is_d = xc_tiled_cmp(k, XC_CMP_EQ, axv, lw_i64(c, d));
      A = xc_tiled_select(k, is_d, lw_dim(c, X->dims[d]).v, A);
      i = xc_tiled_select(k, is_d, lw_col(c, sp.idx[d]), i);
    }
  }
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), A, xc_tiled_knob_value(k, kc), 1, &acc0);
  {
    lw_val_t* j = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kc))));
    xc_tiled_cmp_t cmp = rev ? (excl ? XC_CMP_GT : XC_CMP_GE) : (excl ? XC_CMP_LT : XC_CMP_LE);
    lw_val_t* m = lw_and(c, lw_and(c, lw_col(c, sp.mask), lw_lt(c, j, A)), xc_tiled_cmp(k, cmp, j, i));
    lw_space_t sx = sp;
    for (int d = 0; d < X->rank; d++) {
      sx.idx[d] = lw_col(c, sp.idx[d]);
      if (dyn) {
        sx.idx[d] = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, axv, lw_i64(c, d)), j, sx.idx[d]);
        /* inside the dim wherever m holds; clamped so that range analysis
         * can bound the load (it cannot follow the select on the axis) */
        sx.idx[d] = xc_tiled_binary(k, XC_TOP_MAX, lw_i64(c, 0),
                                    xc_tiled_binary(k, XC_TOP_MIN, sx.idx[d],
                                                    lw_sub(c, lw_dim(c, X->dims[d]).v, lw_i64(c, 1))));
      }
    }
    if (!dyn) sx.idx[axis] = j;
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    x = xc_tiled_select(k, m, x, lw_fconst(c, at, 0));
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, x, 1));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, xc_tiled_for_result(loop, 0)));
  lw_iter_end(c, start);
  return NULL;
}

/* A normalization op and what its lowering needs to know about it. */
typedef struct norm {
  const xc_node_t* n;
  const char* op;
  xc_dtype_t at; /* accumulation and compute dtype */
  bool soft;     /* Softmax, LogSoftmax: max, then the sum of exp */
  bool rms;      /* RMSNormalization: the mean square only */
  bool mvn;      /* MeanVarianceNormalization: no scale, (x - mean) / (std + 1e-9) */
  bool channel;  /* Instance/GroupNormalization: scale and bias per channel */
  double eps;
} norm_t;

/* x at the valid lanes of mask, fill elsewhere (x itself without a mask). */
static lw_val_t* masked(lw_ctx_t* c, lw_val_t* mask, lw_val_t* x, double fill) {
  return mask ? xc_tiled_select(c->k, mask, x, lw_fconst(c, x->type.dtype, fill)) : x;
}

/* exp(x - max) at the valid lanes, 0 elsewhere; a row whose max is -inf
 * (every lane -inf) uses 0 as its max instead of giving exp(nan). */
static lw_val_t* softmax_exp(lw_ctx_t* c, const lw_space_t* sp, lw_val_t* x, lw_val_t* maxc) {
  xc_tiled_kernel_t* k = c->k;
  xc_dtype_t at = x->type.dtype;
  lw_val_t* m = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, maxc, lw_fconst(c, at, -INFINITY)),
                                lw_fconst(c, at, 0), maxc);
  return masked(c, sp->mask, xc_tiled_unary(k, XC_TOP_EXP, lw_sub(c, x, m)), 0);
}

/* x - mean at the valid lanes, 0 elsewhere. */
static lw_val_t* centered(lw_ctx_t* c, const lw_space_t* sp, lw_val_t* x, lw_val_t* meanc) {
  return masked(c, sp->mask, lw_sub(c, x, meanc), 0);
}

/* The per-row factor of the output from the statistics: the sum of exp
 * (softmax), 1 / (std + 1e-9) (MVN) or 1 / sqrt(variance + eps), where
 * stat2 is the sum of squared deviations, or for RMSNormalization stat1 the
 * mean square. */
static lw_val_t* norm_scale(lw_ctx_t* c, const norm_t* nm, const rows_t* w, lw_val_t* stat1, lw_val_t* stat2) {
  xc_tiled_kernel_t* k = c->k;
  xc_dtype_t at = nm->at;
  if (nm->soft) return stat2;
  if (nm->rms) return xc_tiled_unary(k, XC_TOP_RSQRT, lw_add(c, stat1, lw_fconst(c, at, nm->eps)));
  lw_val_t* var = lw_div(c, stat2, lw_cast_to(c, w->R.v, at));
  if (nm->mvn)
    return lw_div(c, lw_fconst(c, at, 1), lw_add(c, xc_tiled_unary(k, XC_TOP_SQRT, var), lw_fconst(c, at, 1e-9)));
  return xc_tiled_unary(k, XC_TOP_RSQRT, lw_add(c, var, lw_fconst(c, at, nm->eps)));
}

/* LayerNormalization's Mean and InvStdDev outputs: one value per row. */
static xc_status_t store_stats(lw_ctx_t* c, const norm_t* nm, const rows_t* w, lw_val_t* s1c, lw_val_t* s2c) {
  for (int o = 1; o < nm->n->num_outputs && o < 3 && !nm->soft && !nm->rms; o++) {
    const xc_value_t* v = nm->n->outputs[o];
    if (!v || !c->must_store[v->id]) continue;
    lw_space_t so;
    memset(&so, 0, sizeof so);
    so.rank = v->rank;
    so.dims = v->dims;
    so.mask = w->rowmask;
    if (v->rank != w->X->rank) return lw_unsupported(c, nm->n, "statistics output rank");
    for (int i = 0; i < w->nk; i++) so.idx[w->kept[i]] = w->kidx[i];
    lw_store_at(c, &so, v, o == 1 ? s1c : s2c);
  }
  return NULL;
}

/* The output tile at space sp from x (compute dtype) and the row
 * statistics, through the epilogue. t: exp(x - max) for Softmax, x - mean
 * for the mean-centering ops (as softmax_exp / centered give them), else
 * unused. */
static xc_status_t norm_output(lw_ctx_t* c, const norm_t* nm, const lw_space_t* sp, lw_val_t* x, lw_val_t* t,
                               lw_val_t* s1c, lw_val_t* s2c) {
  xc_tiled_kernel_t* k = c->k;
  const xc_node_t* n = nm->n;
  xc_dtype_t at = nm->at;
  lw_val_t* y;
  if (nm->soft) {
    if (!strcmp(nm->op, "Softmax")) {
      y = lw_div(c, t, s2c);
    } else {
      lw_val_t* m = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, s1c, lw_fconst(c, at, -INFINITY)),
                                    lw_fconst(c, at, 0), s1c);
      y = lw_sub(c, lw_sub(c, x, m), xc_tiled_unary(k, XC_TOP_LOG, s2c));
    }
  } else {
    y = lw_mul(c, nm->rms ? x : t, s2c);
    if (nm->mvn) {
    } else if (nm->channel) {
      y = lw_mul(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[1]), sp->idx[1], sp->mask, NULL), at));
      y = lw_add(c, y, lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[2]), sp->idx[1], sp->mask, NULL), at));
    } else {
      y = lw_mul(c, y, lw_cast_to(c, lw_load_at(c, sp, n->inputs[1]), at));
      if (!nm->rms && n->num_inputs > 2 && n->inputs[2])
        y = lw_add(c, y, lw_cast_to(c, lw_load_at(c, sp, n->inputs[2]), at));
    }
  }
  return lw_epilogue(c, sp, y);
}

/* The one-pass form: each program loads its [BLOCK_R, BLOCK_C >= R] tile
 * of whole rows once (the fused prologue computed once, the values that
 * leave the group stored from it), takes the statistics from that tile —
 * max then the sum of exp(x - max), or the mean then the sum of squared
 * deviations from it (two steps, not E[x^2] - E[x]^2) — and writes the
 * output from the same tile through the epilogue. */
static xc_status_t normalize_one_pass(lw_ctx_t* c, const norm_t* nm, rows_t* w) {
  xc_tiled_kernel_t* k = c->k;
  xc_dtype_t at = nm->at;
  lw_space_t sp;
  rows_chunk(c, w, lw_i64(c, 0), &sp);
  lw_val_t* raw = lw_load_at(c, &sp, w->X);
  lw_set_reg(c, w->X, raw); /* later reads of x at this space: the tile */
  lw_store_prologue(c, &sp);
  lw_val_t* x = lw_cast_to(c, raw, at);
  lw_val_t *stat1, *stat2 = NULL, *t = NULL;
  if (nm->soft) {
    lw_val_t* xf = masked(c, sp.mask, x, -INFINITY);
    stat1 = xc_tiled_reduce(k, XC_REDUCE_MAX, xf, 1);
    t = softmax_exp(c, &sp, x, lw_col(c, stat1));
    stat2 = xc_tiled_reduce(k, XC_REDUCE_SUM, t, 1);
  } else {
    lw_val_t* xf = masked(c, sp.mask, x, 0);
    if (nm->rms) xf = lw_mul(c, xf, xf);
    stat1 = lw_div(c, xc_tiled_reduce(k, XC_REDUCE_SUM, xf, 1), lw_cast_to(c, w->R.v, at));
    if (!nm->rms) {
      t = centered(c, &sp, x, lw_col(c, stat1));
      stat2 = xc_tiled_reduce(k, XC_REDUCE_SUM, lw_mul(c, t, t), 1);
    }
  }
  lw_val_t* s1c = lw_col(c, stat1);
  lw_val_t* s2c = lw_col(c, norm_scale(c, nm, w, stat1, stat2));
  XC_RETURN_IF_ERROR(store_stats(c, nm, w, s1c, s2c));
  /* CPUs: x - mean again rather than kept, a subtraction per element being
   * cheaper than a second row tile (the C emitter then needs no array for
   * it). GPUs keep it: the tile is in registers, and the subtraction after
   * the reduction's barrier is one more instruction per element. exp(x -
   * max) is kept. */
  if (t && !nm->soft && !gpu_limits(c->limits)) t = centered(c, &sp, x, s1c);
  XC_RETURN_IF_ERROR(norm_output(c, nm, &sp, x, t, s1c, s2c));
  lw_iter_end(c, w->start);
  return NULL;
}

xc_status_t lw_emit_normalize(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const char* op = n->op_type;
  const xc_value_t* X = n->inputs[0];
  if (X->rank < 1 || X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", X->rank);
  for (int o = 1; o < n->num_outputs; o++)
    if (n->outputs[o] && c->must_store[n->outputs[o]->id] && strcmp(op, "LayerNormalization") != 0)
      return lw_unsupported(c, n, "output %d is used", o);
  bool group = !strcmp(op, "GroupNormalization"), mvn = !strcmp(op, "MeanVarianceNormalization");
  int64_t axis = strcmp(op, "InstanceNormalization") && !group && !mvn ? xc_node_attr_int(n, "axis") : 2;
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
  bool is_red[LW_MAX_RANK] = {0};
  if (!strcmp(op, "LpNormalization")) return emit_lpnorm(c, n, axis);
  bool soft = !strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax");
  bool rms = !strcmp(op, "RMSNormalization");
  bool inst = !strcmp(op, "InstanceNormalization"); /* per (n, c) over the spatial dims */
  if (inst && X->rank < 3) return lw_unsupported(c, n, "rank %d", X->rank);
  for (int d = 0; d < X->rank; d++) is_red[d] = soft ? d == axis : d >= axis;
  int64_t cpg = 0; /* GroupNormalization: per (n, group) over its channels and the spatial dims */
  if (group) {
    int64_t groups = xc_node_attr_int(n, "num_groups");
    if (X->rank < 2 || X->dims[1].sym || groups < 1 || X->dims[1].value % groups)
      return lw_unsupported(c, n, "channels not static or not divisible by num_groups");
    cpg = X->dims[1].value / groups;
    if (cpg == 0) return lw_unsupported(c, n, "no channels");
  }
  if (mvn) { /* axes (default 0, 2, 3), (x - mean) / (std + 1e-9) */
    int64_t na = 0;
    const int64_t* axes = xc_node_attr_ints(n, "axes", &na);
    static const int64_t dflt[3] = {0, 2, 3};
    if (!axes) axes = dflt, na = 3;
    for (int d = 0; d < X->rank; d++) is_red[d] = false;
    for (int64_t i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + X->rank : axes[i];
      if (a < 0 || a >= X->rank) return lw_unsupported(c, n, "bad axis");
      is_red[a] = true;
    }
  }
  xc_dtype_t at = acc_type(X->dtype);
  if (!xc_dtype_is_float(at)) return lw_unsupported(c, n, "integer input");
  double eps = soft || mvn ? 0 : xc_node_attr_float(n, "epsilon");
  norm_t nm = {n, op, at, soft, rms, mvn, inst || group, eps};
  rows_t w;
  rows_begin_at(c, X, is_red, cpg, true, &w);
  if (w.one_pass) return normalize_one_pass(c, &nm, &w);
  lw_space_t sp;
  lw_val_t* stat1 = NULL; /* max, mean or mean square */
  lw_val_t* stat2 = NULL; /* sum of exp, or the sum of squared deviations */
  /* pass 1 */
  xc_tiled_op_t* loop = chunk_loop(c, &w, row_init(c, &w, at, soft ? -INFINITY : 0), &sp);
  {
    lw_val_t* x = load_chunk(c, &sp, X, at, soft ? -INFINITY : 0);
    lw_val_t* next;
    if (soft) {
      next = xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_MAX, x, 1));
    } else {
      if (rms) x = lw_mul(c, x, x);
      next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, x, 1));
    }
    xc_tiled_for_end(k, loop, 1, &next);
  }
  stat1 = xc_tiled_for_result(loop, 0);
  if (!soft) stat1 = lw_div(c, stat1, lw_cast_to(c, w.R.v, at));
  lw_val_t* s1c = lw_col(c, stat1);
  if (!rms) {
    loop = chunk_loop(c, &w, row_init(c, &w, at, 0), &sp);
    {
      lw_val_t* x = load_chunk(c, &sp, X, at, 0);
      lw_val_t* t = soft ? softmax_exp(c, &sp, x, s1c) : centered(c, &sp, x, s1c);
      if (!soft) t = lw_mul(c, t, t);
      lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, t, 1));
      xc_tiled_for_end(k, loop, 1, &next);
    }
    stat2 = xc_tiled_for_result(loop, 0);
  }
  lw_val_t* s2c = lw_col(c, norm_scale(c, &nm, &w, stat1, stat2));
  XC_RETURN_IF_ERROR(store_stats(c, &nm, &w, s1c, s2c));
  /* final pass: write through the epilogue */
  xc_tiled_op_t* out_loop = xc_tiled_for_begin(k, lw_i64(c, 0), w.R.v, xc_tiled_knob_value(k, w.kBC), 0, NULL);
  rows_chunk(c, &w, xc_tiled_for_iv(out_loop), &sp);
  {
    lw_val_t* x = lw_cast_to(c, lw_load_at(c, &sp, X), at);
    lw_store_prologue(c, &sp);
    lw_val_t* t = NULL;
    if (soft && !strcmp(op, "Softmax")) t = softmax_exp(c, &sp, x, s1c);
    else if (!soft && !rms) t = centered(c, &sp, x, s1c);
    XC_RETURN_IF_ERROR(norm_output(c, &nm, &sp, x, t, s1c, s2c));
  }
  xc_tiled_for_end(k, out_loop, 0, NULL);
  lw_iter_end(c, w.start);
  return NULL;
}

/* TopK: each element's rank along the axis (how many elements come before
 * it: better values, or equal values at lower indices) is counted over
 * BLOCK_C chunks of the axis; elements ranked below k store themselves and
 * their index at position rank. Ranks are a permutation, so every output
 * is written once and programs stay independent. */
xc_status_t lw_emit_topk(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *V = n->outputs[0], *I = n->outputs[1];
  int64_t kv[1];
  int nk = 0;
  if (!lw_const_ints(c, n->inputs[1], kv, 1, &nk) || nk != 1) return lw_unsupported(c, n, "k is not constant");
  int64_t axis = xc_node_attr_int(n, "axis");
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank || X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "bad axis");
  bool largest = xc_node_attr_int(n, "largest") != 0;
  xc_dtype_t at = acc_type(X->dtype);
  static const int64_t blk[] = {32, 64, 128, 256}, bc[] = {8, 16, 32, 64};
  int kb = lw_knob(c, "BLOCK", 4, blk, 64);
  int kc = lw_knob(c, "BLOCK_C", 4, bc, 16);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, X->rank, X->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, X->rank, X->dims, start, kb, &sp, NULL);
  lw_val_t* x = lw_cast_to(c, lw_load_at(c, &sp, X), at);
  lw_val_t* xc = lw_col(c, x), *ic = lw_col(c, sp.idx[axis]);
  xc_tiled_dim_t d1 = xc_tiled_dim_knob(kb);
  lw_val_t* r0 = xc_tiled_const_i(k, XC_I64, 0, 1, &d1);
  lw_dimv_t A = lw_dim(c, X->dims[axis]);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), A.v, xc_tiled_knob_value(k, kc), 1, &r0);
  {
    lw_val_t* j = lw_row(c, lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_knob(kc))));
    lw_val_t* m = lw_and(c, lw_col(c, sp.mask), lw_lt(c, j, A.v));
    lw_space_t sx = sp;
    for (int d = 0; d < X->rank; d++) sx.idx[d] = lw_col(c, sp.idx[d]);
    sx.idx[axis] = j;
    lw_val_t* y = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), m, NULL), at);
    lw_val_t* before = xc_tiled_cmp(k, largest ? XC_CMP_GT : XC_CMP_LT, y, xc);
    before = xc_tiled_binary(k, XC_TOP_OR, before,
                             lw_and(c, xc_tiled_cmp(k, XC_CMP_EQ, y, xc), lw_lt(c, j, ic)));
    lw_val_t* cnt = xc_tiled_select(k, lw_and(c, m, before), lw_i64(c, 1), lw_i64(c, 0));
    lw_val_t* next = lw_add(c, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, cnt, 1));
    xc_tiled_for_end(k, loop, 1, &next);
  }
  lw_val_t* rank = xc_tiled_for_result(loop, 0);
  lw_space_t so = sp;
  so.dims = V->dims;
  so.idx[axis] = rank;
  so.mask = lw_and(c, sp.mask, lw_lt(c, rank, lw_i64(c, kv[0])));
  lw_store_at(c, &so, V, x);
  if (I) lw_store_at(c, &so, I, sp.idx[axis]);
  lw_iter_end(c, start);
  return NULL;
}
