/* Scatter lowering: ScatterElements and ScatterND. One program: a loop copies
 * data into the output, then a loop over the updates computes each target
 * offset and writes it (reduction none: BLOCK updates per store, a later
 * lane wins like the reference's order; add/mul/max/min: one update at a
 * time, read-modify-write, so repeated indices accumulate). A fused
 * epilogue runs in a final loop over the finished output. Indices are
 * checked (lw_check_index): an update whose index is out of range is not
 * written, and the run fails naming the node. */
#include <string.h>

#include "lower_internal.h"

bool lw_is_scatter(const xc_node_t* n) {
  return (!n->domain || !n->domain[0]) &&
         (!strcmp(n->op_type, "ScatterElements") || !strcmp(n->op_type, "ScatterND"));
}

static const int64_t blk_c[] = {64, 128, 256, 512};

/* for start in 0..count step BLOCK (a loop even in a single-phase kernel). */
static xc_tiled_op_t* block_loop(lw_ctx_t* c, lw_dimv_t count, int knob, int64_t step, lw_val_t** start) {
  lw_val_t* stepv = knob >= 0 ? xc_tiled_knob_value(c->k, knob) : lw_i64(c, step);
  xc_tiled_op_t* loop = xc_tiled_for_begin(c->k, lw_i64(c, 0), count.v, stepv, 0, NULL);
  *start = xc_tiled_for_iv(loop);
  return loop;
}

xc_status_t lw_emit_scatter(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *D = n->inputs[0], *I = n->inputs[1], *U = n->inputs[2], *Y = n->outputs[0];
  bool nd = !strcmp(n->op_type, "ScatterND");
  const char* red = xc_node_attr_string(n, "reduction");
  int rk = 0; /* 0 none, 1 add, 2 mul, 3 max, 4 min */
  if (red && !strcmp(red, "add")) rk = 1;
  else if (red && !strcmp(red, "mul")) rk = 2;
  else if (red && !strcmp(red, "max")) rk = 3;
  else if (red && !strcmp(red, "min")) rk = 4;
  if (D->rank > LW_MAX_RANK || U->rank > LW_MAX_RANK || I->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank");
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  lw_val_t* start;
  /* 1. copy */
  xc_tiled_op_t* loop = block_loop(c, lw_dim(c, lw_numel(c, D->rank, D->dims)), kb, 0, &start);
  lw_space_t sp;
  lw_flat_space(c, D->rank, D->dims, start, kb, &sp, NULL);
  lw_store_at(c, &sp, Y, lw_load_at(c, &sp, D));
  xc_tiled_for_end(k, loop, 0, NULL);
  /* 2. updates */
  int ub = rk ? -1 : kb;
  loop = block_loop(c, lw_dim(c, lw_numel(c, U->rank, U->dims)), ub, 1, &start);
  memset(&sp, 0, sizeof sp);
  sp.rank = U->rank;
  sp.dims = U->dims;
  lw_val_t* offs = lw_add(c, start, xc_tiled_arange(k, rk ? xc_tiled_dim_const(1) : xc_tiled_dim_knob(kb)));
  sp.mask = lw_lt(c, offs, lw_dim(c, lw_numel(c, U->rank, U->dims)).v);
  lw_decompose(c, offs, U->rank, U->dims, sp.idx);
  lw_space_t so = sp;
  so.rank = D->rank;
  so.dims = D->dims;
  if (!nd) {
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += D->rank;
    if (axis < 0 || axis >= D->rank || I->rank != D->rank) return lw_unsupported(c, n, "bad axis");
    lw_val_t* ix = xc_tiled_load(k, lw_buf(c, I), lw_offset(c, &sp, I), sp.mask, NULL);
    lw_val_t* dim = lw_dim(c, D->dims[axis]).v;
    so.idx[axis] = lw_check_index(c, n, XC_INDEX_CHECK_AXIS, (int)axis, true, ix, dim, &so.mask);
  } else {
    int ri = I->rank;
    if (ri < 1 || !xc_dim_is_static(I->dims[ri - 1])) return lw_unsupported(c, n, "index depth");
    int64_t kd = I->dims[ri - 1].value;
    if (kd > D->rank || U->rank != ri - 1 + D->rank - kd) return lw_unsupported(c, n, "shapes");
    lw_space_t si;
    memset(&si, 0, sizeof si);
    si.rank = ri;
    for (int d = 0; d < ri - 1; d++) si.idx[d] = sp.idx[d];
    for (int64_t j = 0; j < kd; j++) {
      si.idx[ri - 1] = lw_i64(c, j);
      lw_val_t* ix = xc_tiled_load(k, lw_buf(c, I), lw_offset(c, &si, I), sp.mask, NULL);
      lw_val_t* dim = lw_dim(c, D->dims[j]).v;
      so.idx[j] = lw_check_index(c, n, XC_INDEX_CHECK_AXIS, (int)j, true, ix, dim, &so.mask);
    }
    for (int d = (int)kd; d < D->rank; d++) so.idx[d] = sp.idx[ri - 1 + d - kd];
  }
  lw_val_t* u = lw_load_at(c, &sp, U);
  if (rk) {
    lw_val_t* off = lw_offset(c, &so, Y);
    lw_val_t* cur = xc_tiled_load(k, lw_buf(c, Y), off, so.mask, NULL);
    if (rk == 1) u = lw_add(c, cur, u);
    else if (rk == 2) u = lw_mul(c, cur, u);
    else u = xc_tiled_binary(k, rk == 3 ? XC_TOP_MAX : XC_TOP_MIN, cur, u);
  }
  lw_store_at(c, &so, Y, u);
  xc_tiled_for_end(k, loop, 0, NULL);
  /* 3. epilogue over the finished output */
  if (c->phase->num_nodes > 1) {
    loop = block_loop(c, lw_dim(c, lw_numel(c, Y->rank, Y->dims)), kb, 0, &start);
    lw_flat_space(c, Y->rank, Y->dims, start, kb, &sp, NULL);
    lw_val_t* y = xc_tiled_load(k, lw_buf(c, Y), lw_offset(c, &sp, Y), sp.mask, NULL);
    XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
    xc_tiled_for_end(k, loop, 0, NULL);
  }
  return NULL;
}

/* MaxUnpool: one program; a loop zeroes the output, a loop over the input
 * stores each value at its index (a flat index into the default output
 * shape, re-addressed into the output when output_shape enlarges it). */
xc_status_t lw_emit_max_unpool(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *I = n->inputs[1], *Y = n->outputs[0];
  if (c->phase->num_nodes > 1) return lw_unsupported(c, n, "fused consumers");
  int rank = X->rank, nsp = rank - 2;
  if (rank < 3 || rank > LW_MAX_RANK || Y->rank != rank) return lw_unsupported(c, n, "rank");
  int64_t cnt = 0, ns = 0, np = 0;
  const int64_t* ks = xc_node_attr_ints(n, "kernel_shape", &cnt);
  const int64_t* st = xc_node_attr_ints(n, "strides", &ns);
  const int64_t* pd = xc_node_attr_ints(n, "pads", &np);
  if (!ks || cnt != nsp || (st && ns != nsp) || (pd && np != 2 * nsp)) return lw_unsupported(c, n, "attributes");
  xc_dim_t inferred[LW_MAX_RANK];
  for (int d = 0; d < rank; d++)
    if (X->dims[d].sym || Y->dims[d].sym) return lw_unsupported(c, n, "symbolic dims");
  inferred[0] = X->dims[0];
  inferred[1] = X->dims[1];
  for (int i = 0; i < nsp; i++)
    inferred[2 + i] = xc_dim_const((X->dims[2 + i].value - 1) * (st ? st[i] : 1) + ks[i] -
                                   (pd ? pd[i] + pd[nsp + i] : 0));
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 128);
  lw_val_t* start;
  xc_tiled_op_t* loop = block_loop(c, lw_dim(c, lw_numel(c, rank, Y->dims)), kb, 0, &start);
  lw_space_t sp;
  lw_flat_space(c, rank, Y->dims, start, kb, &sp, NULL);
  lw_store_at(c, &sp, Y, xc_tiled_select(k, sp.mask, lw_fconst(c, Y->dtype, 0), lw_fconst(c, Y->dtype, 0)));
  xc_tiled_for_end(k, loop, 0, NULL);
  loop = block_loop(c, lw_dim(c, lw_numel(c, rank, X->dims)), kb, 0, &start);
  lw_flat_space(c, rank, X->dims, start, kb, &sp, NULL);
  lw_val_t* total = lw_dim(c, lw_numel(c, rank, inferred)).v;
  lw_val_t* ok = sp.mask; /* an index outside the output is written nowhere and fails the run */
  lw_val_t* at = lw_check_index(c, n, XC_INDEX_CHECK_OUTPUT, 0, false, lw_load_at(c, &sp, I), total, &ok);
  lw_space_t so;
  memset(&so, 0, sizeof so);
  so.rank = rank;
  so.dims = Y->dims;
  so.mask = ok;
  lw_decompose(c, at, rank, inferred, so.idx);
  lw_store_at(c, &so, Y, lw_load_at(c, &sp, X));
  xc_tiled_for_end(k, loop, 0, NULL);
  return NULL;
}
