/* Data-movement lowering: index-mapping kernels. A flat space over the
 * output gives per-dim output indices; each op maps them to input indices
 * (Transpose permutes, Slice scales and shifts, Gather loads an index, Concat
 * selects the input whose range holds the axis index, Expand/Tile broadcast
 * or wrap, Pad masks with the constant) and loads. Split runs over its input
 * and stores each element into the output that owns it. Shape stores the
 * (possibly symbolic) dims. */
#include <string.h>

#include "lower_internal.h"

static const char* const movement_ops[] = {"Transpose", "Gather", "GatherElements", "Split", "Shape",
                                           "Concat", "Slice", "Expand", "Tile", "Pad",
                                           "ConstantOfShape", "Size", "Trilu", "EyeLike",
                                           "BatchNormalization", "Dropout", "DepthToSpace",
                                           "SpaceToDepth", "GatherND", "OneHot", "RotaryEmbedding", "Range", "LRN"};

bool lw_is_movement(const xc_node_t* n) {
  if (n->domain && n->domain[0]) return false;
  for (size_t i = 0; i < sizeof movement_ops / sizeof *movement_ops; i++)
    if (!strcmp(n->op_type, movement_ops[i])) return true;
  return false;
}

static const int64_t blk_c[] = {64, 128, 256, 512, 1024};

static lw_val_t* load_idx(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v, int rank,
                          lw_val_t* const* idx) {
  lw_space_t s2 = *sp;
  s2.rank = rank;
  for (int i = 0; i < rank; i++) s2.idx[i] = idx[i];
  return xc_tiled_load(c->k, lw_buf(c, v), lw_offset(c, &s2, v), sp->mask, NULL);
}

static const int64_t tr_a_c[] = {8, 16, 32, 64}, tr_b_c[] = {4, 8, 16, 32, 64};

/* A knob over extent e with candidates base (n of them) plus e itself when
 * it is at most the largest and no candidate equals it (3 channels: a tile
 * without masked lanes), the default. */
static int exact_knob(lw_ctx_t* c, const char* name, const int64_t* base, int n, int64_t e, int64_t def) {
  int64_t cands[8];
  memcpy(cands, base, (size_t)n * sizeof *cands);
  bool listed = lw_listed(base, n, e);
  if (!listed && e < base[n - 1]) cands[n++] = e, def = e;
  else if (listed) def = e;
  return lw_knob(c, name, n, cands, def);
}

/* Transpose on a CPU when the output's last dim is not the input's last
 * (NCHW -> NHWC): programs over tiles [BLOCK_A, BLOCK_B] of the two dims
 * that are contiguous on either side, A (the input's last dim) and B (the
 * output's last), and one index of the other output dims. The tile loads
 * as [BLOCK_B, BLOCK_A] (runs along A, contiguous in the input) and stores
 * through a 2-D `trans` as [BLOCK_A, BLOCK_B] (runs along B, contiguous in
 * the output), where the flat form gathered every element with its own
 * division and remainder per dim (mobilenetv2-tiny's 3x96x96 input: 34 us
 * alone, bench/RESULTS.md section 23). Returns false when it does not
 * apply (the flat form then runs). */
static bool emit_transpose_tiles(lw_ctx_t* c, const xc_node_t* n, const xc_value_t* X, const xc_value_t* Y,
                                 xc_status_t* out) {
  xc_tiled_kernel_t* k = c->k;
  *out = NULL;
  int r = Y->rank;
  if (!lw_cpu_limits(c) || !X || X->rank != r || r < 2 || r > LW_MAX_RANK) return false;
  int64_t cnt = 0;
  const int64_t* perm = xc_node_attr_ints(n, "perm", &cnt);
  int pm[LW_MAX_RANK];
  for (int d = 0; d < r; d++) {
    pm[d] = perm && cnt == r ? (int)perm[d] : r - 1 - d;
    if (pm[d] < 0 || pm[d] >= r || !xc_dim_is_static(Y->dims[d])) return false;
  }
  int dB = r - 1, dA = -1;
  for (int d = 0; d < r; d++)
    if (pm[d] == r - 1) dA = d;
  if (dA < 0 || dA == dB) return false;
  int64_t EA = Y->dims[dA].value, EB = Y->dims[dB].value;
  if (EA < 8) return false; /* short input rows: the flat form */
  xc_dim_t od[LW_MAX_RANK];
  int no = 0, oi[LW_MAX_RANK];
  for (int d = 0; d < r; d++)
    if (d != dA && d != dB) oi[no] = d, od[no++] = Y->dims[d];
  int kA = exact_knob(c, "BLOCK_A", tr_a_c, 4, EA, 32);
  int kB = exact_knob(c, "BLOCK_B", tr_b_c, 5, EB, 16);
  xc_tiled_dim_t da = xc_tiled_dim_knob(kA), db = xc_tiled_dim_knob(kB);
  lw_val_t* a0 = lw_iter_begin(c, 0, lw_dim(c, Y->dims[dA]), kA, 0);
  lw_val_t* b0 = lw_iter_begin(c, 1, lw_dim(c, Y->dims[dB]), kB, 0);
  lw_val_t* o0 = lw_iter_begin(c, 2, lw_dim(c, lw_numel(c, no, od)), -1, 1);
  lw_val_t* oidx[LW_MAX_RANK];
  if (no) lw_decompose(c, o0, no, od, oidx);
  lw_val_t* a = lw_add(c, a0, xc_tiled_arange(k, da)), *b = lw_add(c, b0, xc_tiled_arange(k, db));
  lw_val_t* ma = lw_lt(c, a, lw_i64(c, EA)), *mb = lw_lt(c, b, lw_i64(c, EB));
  /* the load: [BLOCK_B, BLOCK_A] in the input's order */
  lw_space_t sx, sy;
  memset(&sx, 0, sizeof sx);
  memset(&sy, 0, sizeof sy);
  sx.rank = sy.rank = r;
  sx.dims = X->dims, sy.dims = Y->dims;
  for (int i = 0; i < no; i++) sx.idx[pm[oi[i]]] = sy.idx[oi[i]] = oidx[i];
  sx.idx[pm[dA]] = lw_row(c, a);
  sx.idx[pm[dB]] = lw_col(c, b);
  lw_val_t* tile = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), lw_and(c, lw_col(c, mb), lw_row(c, ma)), NULL);
  sy.idx[dA] = lw_col(c, a);
  sy.idx[dB] = lw_row(c, b);
  sy.mask = lw_and(c, lw_col(c, ma), lw_row(c, mb));
  *out = lw_epilogue(c, &sy, xc_tiled_trans(k, tile));
  lw_iter_end(c, o0);
  lw_iter_end(c, b0);
  lw_iter_end(c, a0);
  return true;
}

/* Concat on a CPU where every input's elements are one contiguous run of
 * the output (nothing before the axis but dims of 1: a batch-1 NCHW channel
 * concat): programs over (blocks of BLOCK elements, input i), program (b, i)
 * copying input i's elements b * BLOCK ... to the output from its run's
 * start on. Which input a program copies is a condition on program_id(1),
 * the same for all its lanes, where the flat form tested every element
 * against every input's range in 64-bit lanes (segformer-tiny's Concat of
 * four [1, 64, 16, 16] maps: 66 us, its mask arithmetic spilled through the
 * stack). Returns false when it does not apply (the flat form then runs). */
static bool emit_concat_runs(lw_ctx_t* c, const xc_node_t* n, const xc_value_t* Y, xc_status_t* out) {
  xc_tiled_kernel_t* k = c->k;
  *out = NULL;
  int r = Y->rank, nin = n->num_inputs;
  if (!lw_cpu_limits(c) || nin < 2 || nin > 64 || r < 1) return false;
  int64_t axis = xc_node_attr_int(n, "axis");
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return false;
  for (int d = 0; d < r; d++)
    if (!xc_dim_is_static(Y->dims[d]) || (d < axis && Y->dims[d].value != 1)) return false;
  int64_t S = 1, most = 0;
  for (int d = (int)axis + 1; d < r; d++) S *= Y->dims[d].value;
  for (int i = 0; i < nin; i++) {
    const xc_value_t* Xi = n->inputs[i];
    if (!Xi || Xi->rank != r || !xc_dim_is_static(Xi->dims[axis]) || Xi->dtype != Y->dtype) return false;
    if (Xi->dims[axis].value * S > most) most = Xi->dims[axis].value * S;
  }
  if (most <= 0) return false;
  int64_t def = 64;
  while (def < 1024 && def < most) def *= 2;
  int kb = lw_knob(c, "BLOCK", 5, blk_c, def);
  lw_val_t* j0 = lw_iter_begin(c, 0, lw_dim(c, xc_dim_const(most)), kb, 0);
  lw_val_t* which = lw_iter_begin(c, 1, lw_dim(c, xc_dim_const(nin)), -1, 1);
  lw_val_t* j = lw_add(c, j0, xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
  lw_val_t *y = NULL, *lo = NULL, *len = NULL;
  int64_t at = 0;
  for (int i = 0; i < nin; i++) {
    int64_t ni = n->inputs[i]->dims[axis].value * S;
    lw_val_t* is = xc_tiled_cmp(k, XC_CMP_EQ, which, lw_i64(c, i));
    lw_val_t* v = xc_tiled_load(k, lw_buf(c, n->inputs[i]), j, lw_and(c, is, lw_lt(c, j, lw_i64(c, ni))), NULL);
    y = y ? xc_tiled_select(k, is, v, y) : v;
    lo = lo ? xc_tiled_select(k, is, lw_i64(c, at), lo) : lw_i64(c, at);
    len = len ? xc_tiled_select(k, is, lw_i64(c, ni), len) : lw_i64(c, ni);
    at += ni;
  }
  lw_space_t sp;
  lw_flat_space(c, r, Y->dims, lw_add(c, lo, j0), kb, &sp, NULL);
  sp.mask = lw_and(c, sp.mask, lw_lt(c, j, len));
  *out = lw_epilogue(c, &sp, y);
  lw_iter_end(c, which);
  lw_iter_end(c, j0);
  return true;
}

xc_status_t lw_emit_movement(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const char* op = n->op_type;
  const xc_value_t* X = n->num_inputs > 0 ? n->inputs[0] : NULL;
  if (!strcmp(op, "Split")) {
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += X->rank;
    if (X->rank > LW_MAX_RANK || axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
    int kb = lw_knob(c, "BLOCK", 5, blk_c, 256);
    lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, X->rank, X->dims)), kb, 0);
    lw_space_t sp;
    lw_flat_space(c, X->rank, X->dims, start, kb, &sp, NULL);
    lw_val_t* x = lw_load_at(c, &sp, X);
    xc_dim_t off = xc_dim_const(0);
    for (int o = 0; o < n->num_outputs; o++) {
      const xc_value_t* Y = n->outputs[o];
      if (!Y) return lw_unsupported(c, n, "omitted output");
      lw_space_t so = sp;
      lw_val_t* lo = lw_dim(c, off).v;
      xc_dim_t end = xc_dim_add(c->g, off, Y->dims[axis]);
      lw_val_t* ia = sp.idx[axis];
      so.mask = lw_and(c, sp.mask, lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, ia, lo), lw_lt(c, ia, lw_dim(c, end).v)));
      so.idx[axis] = lw_sub(c, ia, lo);
      so.dims = Y->dims;
      lw_store_at(c, &so, Y, x);
      off = end;
    }
    lw_iter_end(c, start);
    return NULL;
  }
  const xc_value_t* Y = n->outputs[0];
  if (!Y || Y->rank > LW_MAX_RANK || (X && X->rank > LW_MAX_RANK)) return lw_unsupported(c, n, "rank");
  if (!strcmp(op, "Dropout")) { /* inference: identity, mask all true */
    if (n->num_inputs > 2 && n->inputs[2]) {
      const xc_tensor_t* t = n->inputs[2]->constant;
      if (!t || xc_tensor_get_i64(t, 0) != 0) return lw_unsupported(c, n, "training mode");
    }
    int kb = lw_knob(c, "BLOCK", 5, blk_c, 256);
    lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
    lw_space_t sp;
    lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
    lw_store_at(c, &sp, Y, lw_load_at(c, &sp, X));
    if (n->num_outputs > 1 && n->outputs[1])
      lw_store_at(c, &sp, n->outputs[1], xc_tiled_select(k, sp.mask, lw_fconst(c, XC_BOOL, 1), lw_fconst(c, XC_BOOL, 1)));
    lw_iter_end(c, start);
    return NULL;
  }
  for (int o = 1; o < n->num_outputs; o++)
    if (n->outputs[o]) return lw_unsupported(c, n, "several outputs");
  xc_status_t tiled;
  if (!strcmp(op, "Transpose") && emit_transpose_tiles(c, n, X, Y, &tiled)) return tiled;
  if (!strcmp(op, "Concat") && emit_concat_runs(c, n, Y, &tiled)) return tiled;
  int kb = lw_knob(c, "BLOCK", 5, blk_c, 256);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_val_t* flat = NULL;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, &flat);
  lw_val_t* in[LW_MAX_RANK] = {0};
  lw_val_t* y = NULL;
  if (!strcmp(op, "Transpose")) {
    int64_t cnt = 0;
    const int64_t* perm = xc_node_attr_ints(n, "perm", &cnt);
    for (int d = 0; d < Y->rank; d++) {
      int p = perm && cnt == Y->rank ? (int)perm[d] : Y->rank - 1 - d;
      in[p] = sp.idx[d];
    }
    y = load_idx(c, &sp, X, X->rank, in);
  } else if (!strcmp(op, "Expand")) {
    y = lw_load_at(c, &sp, X);
  } else if (!strcmp(op, "LRN")) {
    /* x / (bias + alpha/size * sum of x^2 over channels c-lo..c+hi)^beta,
     * the window unrolled (masked outside the channels) */
    int64_t size = xc_node_attr_int(n, "size");
    if (X->rank < 2 || size < 1 || size > 64 || !xc_dtype_is_float(X->dtype))
      return lw_unsupported(c, n, "size %lld, rank %d", (long long)size, X->rank);
    xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
    int64_t lo = (size - 1) / 2;
    lw_val_t* ss = lw_fconst(c, at, 0);
    lw_val_t* ch = sp.idx[1];
    lw_val_t* nch = lw_dim(c, X->dims[1]).v;
    for (int d = 0; d < X->rank; d++) in[d] = sp.idx[d];
    for (int64_t j = 0; j < size; j++) {
      lw_val_t* cj = lw_add(c, ch, lw_i64(c, j - lo));
      lw_val_t* ok = lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, cj, lw_i64(c, 0)), lw_lt(c, cj, nch));
      in[1] = xc_tiled_select(k, ok, cj, lw_i64(c, 0));
      lw_space_t s2 = sp;
      s2.mask = lw_and(c, sp.mask, ok);
      lw_val_t* v = lw_cast_to(c, load_idx(c, &s2, X, X->rank, in), at);
      ss = lw_add(c, ss, xc_tiled_select(k, ok, lw_mul(c, v, v), lw_fconst(c, at, 0)));
    }
    double alpha = xc_node_attr_float(n, "alpha"), beta = xc_node_attr_float(n, "beta");
    double bias = xc_node_attr_float(n, "bias");
    lw_val_t* den = xc_tiled_binary(k, XC_TOP_POW, lw_add(c, lw_fconst(c, at, bias), lw_mul(c, lw_fconst(c, at, alpha / (double)size), ss)),
                                    lw_fconst(c, at, beta));
    y = lw_cast_to(c, lw_div(c, lw_cast_to(c, lw_load_at(c, &sp, X), at), den), Y->dtype);
  } else if (!strcmp(op, "Range")) {
    /* start + i * delta in f64 (floats) or i64, like the reference; start
     * and delta are read from their buffers, the length is the static dim */
    if (Y->rank != 1) return lw_unsupported(c, n, "rank %d", Y->rank);
    xc_dtype_t at = xc_dtype_is_float(Y->dtype) ? XC_F64 : XC_I64;
    lw_val_t* s0 = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[0]), lw_i64(c, 0), NULL, NULL), at);
    lw_val_t* dl = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[2]), lw_i64(c, 0), NULL, NULL), at);
    y = lw_cast_to(c, lw_add(c, s0, lw_mul(c, lw_cast_to(c, sp.idx[0], at), dl)), Y->dtype);
  } else if (!strcmp(op, "Tile")) {
    for (int d = 0; d < X->rank; d++) in[d] = lw_rem(c, sp.idx[d], lw_dim(c, X->dims[d]).v);
    y = load_idx(c, &sp, X, X->rank, in);
  } else if (!strcmp(op, "Gather") || !strcmp(op, "GatherElements")) {
    const xc_value_t* I = n->inputs[1];
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += X->rank;
    if (axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
    bool elems = op[6] == 'E';
    lw_val_t* iidx[LW_MAX_RANK];
    int ir = I->rank;
    for (int i = 0; i < ir; i++) iidx[i] = elems ? sp.idx[i] : sp.idx[axis + i];
    lw_val_t* ix = load_idx(c, &sp, I, ir, iidx);
    lw_val_t* dim = lw_dim(c, X->dims[axis]).v;
    lw_space_t sx = sp; /* lanes whose index is out of range read nothing */
    ix = lw_check_index(c, n, elems ? XC_INDEX_CHECK_AXIS : XC_INDEX_CHECK_DIM, (int)axis, true, ix, dim, &sx.mask);
    for (int d = 0; d < X->rank; d++) {
      if (elems || d < axis) in[d] = sp.idx[d];
      else if (d > axis) in[d] = sp.idx[d + ir - 1];
    }
    in[axis] = ix;
    y = load_idx(c, &sx, X, X->rank, in);
  } else if (!strcmp(op, "Shape") || !strcmp(op, "Size")) {
    int64_t start_a = 0, end_a = X->rank;
    if (op[1] == 'h') {
      if (xc_node_has_attr(n, "start")) start_a = xc_node_attr_int(n, "start");
      if (xc_node_has_attr(n, "end")) end_a = xc_node_attr_int(n, "end");
      if (start_a < 0) start_a += X->rank;
      if (end_a < 0) end_a += X->rank;
      if (start_a < 0) start_a = 0;
      if (end_a > X->rank) end_a = X->rank;
      y = lw_i64(c, 0);
      for (int64_t d = start_a; d < end_a; d++)
        y = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, flat, lw_i64(c, d - start_a)),
                            lw_dim(c, X->dims[d]).v, y);
    } else {
      y = lw_dim(c, lw_numel(c, X->rank, X->dims)).v;
    }
    y = xc_tiled_select(k, sp.mask, y, y);
  } else if (!strcmp(op, "ConstantOfShape")) {
    const xc_tensor_t* t = xc_node_attr_tensor(n, "value");
    double v = t ? xc_tensor_get_f64(t, 0) : 0.0;
    if (t && xc_dtype_is_int(t->dtype)) v = (double)xc_tensor_get_i64(t, 0);
    y = xc_tiled_select(k, sp.mask, lw_fconst(c, Y->dtype, v), lw_fconst(c, Y->dtype, v));
  } else if (!strcmp(op, "Concat")) {
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += Y->rank;
    xc_dim_t off = xc_dim_const(0);
    /* input i's element at output flat index x = o * (C * S) + r, r = a * S
     * + s (o before the axis, a on it, s after; S the inner size, C the
     * output's axis extent) is the input's o * (C_i * S) + (r - lo_i * S),
     * and a lies in [lo_i, hi_i) exactly when r lies in [lo_i * S, hi_i * S):
     * offsets contiguous along a tile, where the offset of the split
     * coordinates went through a division and remainder per dim (a gather
     * on the cpu: segformer's Concat of four [1, 64, 16, 16] maps at 3 GB/s),
     * and masks on the same terms, which bound them */
    xc_dim_t S = lw_prod(c, (int)axis + 1, Y->rank, Y->dims), CS = lw_prod(c, (int)axis, Y->rank, Y->dims);
    xc_dim_t outer = lw_prod(c, 0, (int)axis, Y->dims);
    lw_val_t* o = xc_dim_is_static(outer) && outer.value == 1 ? NULL : lw_div(c, flat, lw_dim(c, CS).v);
    lw_val_t* r = o ? lw_rem(c, flat, lw_dim(c, CS).v) : flat;
    for (int i = 0; i < n->num_inputs; i++) {
      const xc_value_t* Xi = n->inputs[i];
      xc_dim_t end = xc_dim_add(c->g, off, Xi->dims[axis]);
      lw_val_t* lo = lw_mul(c, lw_dim(c, off).v, lw_dim(c, S).v), *hi = lw_mul(c, lw_dim(c, end).v, lw_dim(c, S).v);
      lw_val_t* sel = lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, r, lo), lw_lt(c, r, hi));
      lw_space_t si = sp;
      si.mask = lw_and(c, sp.mask, sel);
      lw_val_t* xo = lw_sub(c, r, lo);
      if (o) xo = lw_add(c, lw_mul(c, o, lw_mul(c, lw_dim(c, Xi->dims[axis]).v, lw_dim(c, S).v)), xo);
      lw_val_t* v = xc_tiled_load(k, lw_buf(c, Xi), xo, si.mask, NULL);
      y = y ? xc_tiled_select(k, sel, v, y) : v;
      off = end;
    }
  } else if (!strcmp(op, "Slice")) {
    int64_t st[LW_MAX_RANK], en[LW_MAX_RANK], ax[LW_MAX_RANK], sp_[LW_MAX_RANK];
    int ns = 0, ne = 0, na = 0, nsp = 0;
    if (!lw_const_ints(c, n->inputs[1], st, LW_MAX_RANK, &ns) || !lw_const_ints(c, n->inputs[2], en, LW_MAX_RANK, &ne))
      return lw_unsupported(c, n, "starts/ends are not constant");
    bool has_ax = n->num_inputs > 3 && n->inputs[3], has_st = n->num_inputs > 4 && n->inputs[4];
    if (has_ax && !lw_const_ints(c, n->inputs[3], ax, LW_MAX_RANK, &na)) return lw_unsupported(c, n, "axes");
    if (has_st && !lw_const_ints(c, n->inputs[4], sp_, LW_MAX_RANK, &nsp)) return lw_unsupported(c, n, "steps");
    for (int d = 0; d < X->rank; d++) in[d] = sp.idx[d];
    for (int i = 0; i < ns; i++) {
      int64_t a = has_ax ? ax[i] : i;
      if (a < 0) a += X->rank;
      int64_t step = has_st ? sp_[i] : 1;
      if (a < 0 || a >= X->rank || step == 0) return lw_unsupported(c, n, "bad axis/step");
      if (!xc_dim_is_static(X->dims[a])) return lw_unsupported(c, n, "symbolic sliced dim");
      int64_t dim = X->dims[a].value, s0 = st[i];
      if (s0 < 0) s0 += dim;
      if (step > 0) s0 = s0 < 0 ? 0 : (s0 > dim ? dim : s0);
      else s0 = s0 < 0 ? -1 : (s0 > dim - 1 ? dim - 1 : s0);
      in[a] = lw_add(c, lw_mul(c, sp.idx[a], lw_i64(c, step)), lw_i64(c, s0));
    }
    y = load_idx(c, &sp, X, X->rank, in);
  } else if (!strcmp(op, "Pad")) {
    const char* mode = xc_node_attr_string(n, "mode");
    int pm = 0; /* constant, edge, wrap, reflect */
    if (mode && !strcmp(mode, "edge")) pm = 1;
    else if (mode && !strcmp(mode, "wrap")) pm = 2;
    else if (mode && !strcmp(mode, "reflect")) pm = 3;
    else if (mode && strcmp(mode, "constant") != 0) return lw_unsupported(c, n, "mode %s", mode);
    int64_t pads[2 * LW_MAX_RANK], ax[LW_MAX_RANK];
    int np = 0, na = 0;
    if (!lw_const_ints(c, n->inputs[1], pads, 2 * LW_MAX_RANK, &np)) return lw_unsupported(c, n, "pads");
    bool has_ax = n->num_inputs > 3 && n->inputs[3];
    if (has_ax && !lw_const_ints(c, n->inputs[3], ax, LW_MAX_RANK, &na)) return lw_unsupported(c, n, "axes");
    int cnt = has_ax ? na : X->rank;
    if (np != 2 * cnt) return lw_unsupported(c, n, "pads length");
    lw_val_t* inside = sp.mask;
    for (int d = 0; d < X->rank; d++) in[d] = sp.idx[d];
    for (int i = 0; i < cnt; i++) {
      int64_t a = has_ax ? ax[i] : i;
      if (a < 0) a += X->rank;
      if (a < 0 || a >= X->rank) return lw_unsupported(c, n, "bad axis");
      in[a] = lw_sub(c, sp.idx[a], lw_i64(c, pads[i]));
      lw_val_t* d = lw_dim(c, X->dims[a]).v;
      lw_val_t* zero = lw_i64(c, 0), *one = lw_i64(c, 1);
      if (pm == 1) {
        in[a] = xc_tiled_binary(k, XC_TOP_MAX, zero, xc_tiled_binary(k, XC_TOP_MIN, in[a], lw_sub(c, d, one)));
      } else if (pm == 2) {
        lw_val_t* ds = xc_tiled_binary(k, XC_TOP_MAX, d, one);
        in[a] = lw_rem(c, lw_add(c, lw_rem(c, in[a], ds), ds), ds);
      } else if (pm == 3) {
        lw_val_t* period = xc_tiled_binary(k, XC_TOP_MAX, lw_mul(c, lw_i64(c, 2), lw_sub(c, d, one)), one);
        lw_val_t* m = lw_rem(c, lw_add(c, lw_rem(c, in[a], period), period), period);
        m = xc_tiled_select(k, lw_lt(c, m, d), m, lw_sub(c, period, m));
        /* m is in [0, d) already; the clamp lets range analysis see it (the
         * select's two arms are each in range only under its condition). */
        m = xc_tiled_binary(k, XC_TOP_MAX, zero, xc_tiled_binary(k, XC_TOP_MIN, m, lw_sub(c, d, one)));
        in[a] = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, d, one), zero, m);
      } else {
        inside = lw_and(c, inside, xc_tiled_cmp(k, XC_CMP_GE, in[a], zero));
        inside = lw_and(c, inside, lw_lt(c, in[a], d));
      }
    }
    lw_space_t si = sp;
    si.mask = inside;
    for (int d = 0; d < X->rank; d++) si.idx[d] = in[d];
    lw_val_t* v = xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &si, X), inside, NULL);
    lw_val_t* cv = lw_fconst(c, Y->dtype, 0);
    if (n->num_inputs > 2 && n->inputs[2]) {
      cv = xc_tiled_load(k, lw_buf(c, n->inputs[2]), lw_i64(c, 0), NULL, NULL);
    }
    y = xc_tiled_select(k, inside, v, cv);
  } else if (!strcmp(op, "Trilu") || !strcmp(op, "EyeLike")) {
    int64_t kk = 0;
    int nk = 0;
    bool eye = op[0] == 'E';
    lw_val_t* kv = NULL;
    if (eye) kk = xc_node_attr_int(n, "k");
    else if (n->num_inputs > 1 && n->inputs[1] && !lw_const_ints(c, n->inputs[1], &kk, 1, &nk))
      kv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[1]), lw_i64(c, 0), NULL, NULL), XC_I64);
    if (!kv) kv = lw_i64(c, kk);
    if (Y->rank < 2) return lw_unsupported(c, n, "rank %d", Y->rank);
    lw_val_t* diff = lw_sub(c, sp.idx[Y->rank - 1], sp.idx[Y->rank - 2]); /* j - i */
    if (eye) {
      lw_val_t* on = xc_tiled_cmp(k, XC_CMP_EQ, diff, lw_i64(c, kk));
      y = xc_tiled_select(k, on, lw_fconst(c, Y->dtype, 1), lw_fconst(c, Y->dtype, 0));
      y = xc_tiled_select(k, sp.mask, y, y);
    } else {
      bool upper = xc_node_attr_int(n, "upper") != 0;
      lw_val_t* keep = xc_tiled_cmp(k, upper ? XC_CMP_GE : XC_CMP_LE, diff, kv);
      y = xc_tiled_select(k, keep, lw_load_at(c, &sp, X), lw_fconst(c, Y->dtype, 0));
    }
  } else if (!strcmp(op, "DepthToSpace") || !strcmp(op, "SpaceToDepth")) {
    int64_t bs = xc_node_attr_int(n, "blocksize");
    if (X->rank != 4 || bs < 1) return lw_unsupported(c, n, "rank %d", X->rank);
    lw_val_t* b = lw_i64(c, bs);
    in[0] = sp.idx[0];
    if (op[0] == 'D') {
      const char* mode = xc_node_attr_string(n, "mode");
      bool crd = mode && !strcmp(mode, "CRD");
      lw_val_t* i = lw_rem(c, sp.idx[2], b), *j = lw_rem(c, sp.idx[3], b);
      lw_val_t* ij = lw_add(c, lw_mul(c, i, b), j);
      in[1] = crd ? lw_add(c, lw_mul(c, sp.idx[1], lw_i64(c, bs * bs)), ij)
                  : lw_add(c, lw_mul(c, ij, lw_dim(c, Y->dims[1]).v), sp.idx[1]);
      in[2] = lw_div(c, sp.idx[2], b);
      in[3] = lw_div(c, sp.idx[3], b);
    } else {
      lw_val_t* cx = lw_dim(c, X->dims[1]).v;
      lw_val_t* ij = lw_div(c, sp.idx[1], cx);
      in[1] = lw_rem(c, sp.idx[1], cx);
      in[2] = lw_add(c, lw_mul(c, sp.idx[2], b), lw_div(c, ij, b));
      in[3] = lw_add(c, lw_mul(c, sp.idx[3], b), lw_rem(c, ij, b));
    }
    y = load_idx(c, &sp, X, 4, in);
  } else if (!strcmp(op, "GatherND")) {
    const xc_value_t* I = n->inputs[1];
    int64_t bd = xc_node_attr_int(n, "batch_dims");
    if (I->rank < 1 || !xc_dim_is_static(I->dims[I->rank - 1])) return lw_unsupported(c, n, "index depth");
    int64_t kd = I->dims[I->rank - 1].value;
    int ri = I->rank;
    if (bd < 0 || bd + kd > X->rank) return lw_unsupported(c, n, "batch_dims");
    lw_val_t* iidx[LW_MAX_RANK];
    for (int d = 0; d < ri - 1; d++) iidx[d] = sp.idx[d];
    for (int d = 0; d < bd; d++) in[d] = sp.idx[d];
    lw_space_t sx = sp; /* lanes with an index out of range read nothing */
    for (int64_t j = 0; j < kd; j++) {
      iidx[ri - 1] = lw_i64(c, j);
      lw_val_t* ix = load_idx(c, &sp, I, ri, iidx);
      lw_val_t* dim = lw_dim(c, X->dims[bd + j]).v;
      in[bd + j] = lw_check_index(c, n, XC_INDEX_CHECK_AXIS, (int)(bd + j), true, ix, dim, &sx.mask);
    }
    for (int d = (int)(bd + kd); d < X->rank; d++) in[d] = sp.idx[ri - 1 + d - (bd + kd)];
    y = load_idx(c, &sx, X, X->rank, in);
  } else if (!strcmp(op, "OneHot")) {
    const xc_value_t *I = X, *V = n->inputs[2];
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += Y->rank;
    if (axis < 0 || axis >= Y->rank) return lw_unsupported(c, n, "bad axis");
    lw_val_t* iidx[LW_MAX_RANK];
    for (int d = 0, e = 0; d < Y->rank; d++)
      if (d != axis) iidx[e++] = sp.idx[d];
    lw_val_t* ix = load_idx(c, &sp, I, I->rank, iidx);
    if (xc_dtype_is_float(I->dtype)) ix = xc_tiled_unary(k, XC_TOP_FLOOR, ix);
    ix = lw_cast_to(c, ix, XC_I64);
    lw_val_t* depth = lw_dim(c, Y->dims[axis]).v;
    ix = xc_tiled_select(k, lw_lt(c, ix, lw_i64(c, 0)), lw_add(c, ix, depth), ix);
    lw_val_t* off = xc_tiled_load(k, lw_buf(c, V), lw_i64(c, 0), NULL, NULL);
    lw_val_t* on = xc_tiled_load(k, lw_buf(c, V), lw_i64(c, 1), NULL, NULL);
    y = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, ix, sp.idx[axis]), on, off);
    y = xc_tiled_select(k, sp.mask, y, y);
  } else if (!strcmp(op, "RotaryEmbedding")) {
    const xc_value_t *CS = n->inputs[1], *SN = n->inputs[2];
    const xc_value_t* POS = n->num_inputs > 3 ? n->inputs[3] : NULL;
    bool inter = xc_node_attr_int(n, "interleaved") != 0;
    int64_t heads, d;
    if (X->rank == 4 && xc_dim_is_static(X->dims[3])) {
      d = X->dims[3].value, heads = 0;
    } else if (X->rank == 3 && xc_dim_is_static(X->dims[2]) && (heads = xc_node_attr_int(n, "num_heads")) > 0) {
      d = X->dims[2].value / heads;
    } else {
      return lw_unsupported(c, n, "input shape");
    }
    int64_t rd = xc_node_attr_int(n, "rotary_embedding_dim");
    if (rd == 0) rd = d;
    int64_t half = rd / 2;
    lw_val_t *b = sp.idx[0], *sq, *dd;
    if (X->rank == 4) sq = sp.idx[2], dd = sp.idx[3];
    else sq = sp.idx[1], dd = lw_rem(c, sp.idx[2], lw_i64(c, d));
    lw_val_t* row;
    lw_val_t* pos_ok = NULL;
    if (POS) {
      lw_space_t s2 = sp;
      s2.rank = 2;
      s2.idx[0] = b, s2.idx[1] = sq;
      row = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, POS), lw_offset(c, &s2, POS), sp.mask, NULL), XC_I64);
      /* A position outside the cache reads nothing: clamped and masked off
       * here, where every element of a row repeats it; the first block
       * checks the position_ids once (and fails the run). */
      lw_val_t* rows = lw_dim(c, CS->dims[0]).v;
      pos_ok = lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, row, lw_i64(c, 0)), lw_lt(c, row, rows));
      row = xc_tiled_select(k, pos_ok, row, lw_i64(c, 0));
      lw_dimv_t npos = lw_dim(c, lw_numel(c, POS->rank, POS->dims));
      lw_val_t* ub = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, start, lw_i64(c, 0)), npos.v, lw_i64(c, 0));
      const int64_t chunk = 256;
      xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), ub, lw_i64(c, chunk), 0, NULL);
      lw_val_t* po = lw_add(c, xc_tiled_for_iv(loop), xc_tiled_arange(k, xc_tiled_dim_const(chunk)));
      lw_val_t* pm = lw_lt(c, po, npos.v);
      lw_val_t* pv = xc_tiled_load(k, lw_buf(c, POS), po, pm, NULL);
      (void)lw_check_index(c, n, XC_INDEX_CHECK_POSITION, 0, false, pv, rows, &pm);
      xc_tiled_for_end(k, loop, 0, NULL);
    } else {
      row = lw_add(c, lw_mul(c, b, lw_dim(c, X->dims[X->rank == 4 ? 2 : 1]).v), sq);
    }
    lw_val_t* i = inter ? lw_div(c, dd, lw_i64(c, 2)) : lw_rem(c, dd, lw_i64(c, half > 0 ? half : 1));
    lw_val_t* first = inter ? xc_tiled_cmp(k, XC_CMP_EQ, lw_rem(c, dd, lw_i64(c, 2)), lw_i64(c, 0))
                            : lw_lt(c, dd, lw_i64(c, half));
    lw_val_t* rot = lw_and(c, lw_and(c, sp.mask, pos_ok), lw_lt(c, dd, lw_i64(c, rd)));
    lw_val_t* delta = xc_tiled_select(k, first, lw_i64(c, inter ? 1 : half), lw_i64(c, inter ? -1 : -half));
    lw_val_t* coff = lw_add(c, lw_mul(c, row, lw_i64(c, half)), i);
    xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
    lw_val_t* cv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, CS), coff, rot, NULL), at);
    lw_val_t* sv = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, SN), coff, rot, NULL), at);
    lw_val_t* x = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), flat, sp.mask, NULL), at);
    /* The partner element, clamped into X: where rot holds it is inside
     * anyway, and the clamp lets range analysis bound the access (it cannot
     * see that delta's sign follows the position in the row). */
    lw_val_t* partner = xc_tiled_binary(k, XC_TOP_MAX, lw_add(c, flat, delta), lw_i64(c, 0));
    partner = xc_tiled_binary(k, XC_TOP_MIN, partner,
                              lw_sub(c, lw_dim(c, lw_numel(c, X->rank, X->dims)).v, lw_i64(c, 1)));
    lw_val_t* xp = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), partner, rot, NULL), at);
    lw_val_t* y1 = lw_sub(c, lw_mul(c, cv, x), lw_mul(c, sv, xp));
    lw_val_t* y2 = lw_add(c, lw_mul(c, sv, xp), lw_mul(c, cv, x));
    y = xc_tiled_select(k, rot, xc_tiled_select(k, first, y1, y2), x);
  } else if (!strcmp(op, "BatchNormalization")) {
    if (xc_node_attr_int(n, "training_mode")) return lw_unsupported(c, n, "training mode");
    if (X->rank < 2 || !xc_dtype_is_float(X->dtype)) return lw_unsupported(c, n, "input");
    xc_dtype_t at = X->dtype == XC_F64 ? XC_F64 : XC_F32;
    lw_val_t* ch = sp.idx[1];
    lw_val_t* p[4];
    for (int i = 0; i < 4; i++)
      p[i] = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, n->inputs[1 + i]), ch, sp.mask, NULL), at);
    lw_val_t* x = lw_cast_to(c, lw_load_at(c, &sp, X), at);
    lw_val_t* rstd = xc_tiled_unary(k, XC_TOP_RSQRT, lw_add(c, p[3], lw_fconst(c, at, xc_node_attr_float(n, "epsilon"))));
    y = lw_add(c, lw_mul(c, lw_mul(c, lw_sub(c, x, p[2]), rstd), p[0]), p[1]);
  } else {
    return lw_unsupported(c, n, "no lowering for this op");
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}

/* Col2Im (constant image_shape and block_shape, N-D): a flat space over the
 * image; every block position (unrolled) whose window covers the pixel,
 * o = p + pad - k*dilation divisible by the stride and o/stride inside the
 * block grid, adds its column entry. */
xc_status_t lw_emit_col2im(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  int64_t img[LW_MAX_RANK], blk[LW_MAX_RANK];
  int ni = 0, nb = 0;
  if (!lw_const_ints(c, n->inputs[1], img, LW_MAX_RANK, &ni) || !lw_const_ints(c, n->inputs[2], blk, LW_MAX_RANK, &nb) ||
      ni != nb || ni < 1 || Y->rank != ni + 2 || X->rank != 3)
    return lw_unsupported(c, n, "image_shape/block_shape are not constant");
  int nsp = ni;
  int64_t cnt;
  const int64_t* dl = xc_node_attr_ints(n, "dilations", &cnt);
  if (dl && cnt != nsp) dl = NULL;
  const int64_t* st = xc_node_attr_ints(n, "strides", &cnt);
  if (st && cnt != nsp) st = NULL;
  const int64_t* pd = xc_node_attr_ints(n, "pads", &cnt);
  if (pd && cnt != 2 * nsp) pd = NULL;
  int64_t nblk[LW_MAX_RANK], ksize = 1;
  for (int i = 0; i < nsp; i++) {
    int64_t ek = (blk[i] - 1) * (dl ? dl[i] : 1) + 1;
    int64_t span = img[i] + (pd ? pd[i] + pd[nsp + i] : 0) - ek;
    if (span < 0 || blk[i] < 1) return lw_unsupported(c, n, "block larger than the padded image");
    nblk[i] = span / (st ? st[i] : 1) + 1;
    ksize *= blk[i];
  }
  if (ksize > 256) return lw_unsupported(c, n, "block of %lld positions", (long long)ksize);
  xc_dtype_t at = xc_dtype_is_float(Y->dtype) ? (Y->dtype == XC_F64 ? XC_F64 : XC_F32) : Y->dtype;
  static const int64_t blk_sz[] = {64, 128, 256, 512};
  int kb = lw_knob(c, "BLOCK", 4, blk_sz, 128);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
  lw_val_t* acc = lw_fconst(c, at, 0);
  for (int64_t kp = 0; kp < ksize; kp++) {
    int64_t kidx[LW_MAX_RANK], rem = kp;
    for (int i = nsp - 1; i >= 0; i--) kidx[i] = rem % blk[i], rem /= blk[i];
    lw_val_t* ok = sp.mask;
    lw_val_t* l = lw_i64(c, 0);
    for (int i = 0; i < nsp; i++) {
      int64_t s = st ? st[i] : 1;
      lw_val_t* o = lw_add(c, sp.idx[2 + i], lw_i64(c, (pd ? pd[i] : 0) - kidx[i] * (dl ? dl[i] : 1)));
      lw_val_t* q = lw_div(c, xc_tiled_select(k, lw_lt(c, o, lw_i64(c, 0)), lw_i64(c, 0), o), lw_i64(c, s));
      ok = lw_and(c, ok, xc_tiled_cmp(k, XC_CMP_GE, o, lw_i64(c, 0)));
      ok = lw_and(c, ok, xc_tiled_cmp(k, XC_CMP_EQ, lw_rem(c, xc_tiled_select(k, lw_lt(c, o, lw_i64(c, 0)), lw_i64(c, 0), o), lw_i64(c, s)), lw_i64(c, 0)));
      ok = lw_and(c, ok, lw_lt(c, q, lw_i64(c, nblk[i])));
      l = lw_add(c, lw_mul(c, l, lw_i64(c, nblk[i])), q);
    }
    lw_val_t* row = lw_add(c, lw_mul(c, sp.idx[1], lw_i64(c, ksize)), lw_i64(c, kp));
    lw_space_t sx;
    memset(&sx, 0, sizeof sx);
    sx.rank = 3;
    sx.idx[0] = sp.idx[0];
    sx.idx[1] = row;
    sx.idx[2] = xc_tiled_select(k, ok, l, lw_i64(c, 0));
    lw_val_t* v = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, X), lw_offset(c, &sx, X), ok, NULL), at);
    acc = lw_add(c, acc, xc_tiled_select(k, ok, v, lw_fconst(c, at, 0)));
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, acc));
  lw_iter_end(c, start);
  return NULL;
}
