/* The register-blocked generic dot (docs/targets/spirv.md, "Dots"): a dot
 * whose result is an M x N tile whose slots are whole rows and columns is
 * computed for all of a work-item's J slots in one K loop, with one
 * accumulator variable per slot, instead of a K loop per element (dot_at in
 * spirv_emit.c). Per K step each B value of the work-item's columns and each
 * A value of its rows is read from work-group memory once and serves a row
 * or a column of accumulators, so a multiply-add costs well under one load.
 *
 * The work-item's rows and columns come from xc_tiled_slot_grid_of in the
 * layout of the result (spv_layout_vec). The default layout (slot j of
 * work-item lid at element lid + j * T) gives two forms:
 *   columns  N % T == 0, c = N / T: slot j is row j / c, column
 *            (j % c) * T + lid; the work-item owns all M rows and c columns;
 *   rows     T % N == 0, g = T / N: slot j is row lid / N + j * g,
 *            column lid % N; it owns M / g rows of one column.
 * The chunked layout (slot j at element ((j / 4) * T + lid) * 4 + j % 4),
 * which spv_dot_plan_layouts chooses for f32 dots when the schedule's
 * vector is 4, gives 2-D register tiles: rows lid / tpr + r * (T / tpr) and
 * runs of 4 consecutive columns, so per K step one 4-element vector of B
 * and one A value per row feed rows x 4 multiply-adds.
 * Each slot sums acc, then a*b for q = 0, 1, ..., as the per-element loop
 * does (mul, then add), so the results are the same bits. */
#include <stdio.h>
#include <string.h>

#include "spirv_emit_internal.h"

#define SPV_DOT_MAX_SLOTS 128 /* accumulators a work-item holds; more: the per-element loop */
#define SPV_DOT_UNROLL 4      /* K steps per iteration, when they divide K */

/* The dot's [M, K] x [K, N] -> [M, N] extents; false when they are not 2-D
 * tiles that agree. */
static bool dot_extents(spv_emitter_t* e, const xc_tiled_op_t* dot, int64_t* m, int64_t* n, int64_t* k) {
  if (dot->num_operands < 3 || dot->num_results != 1) return false;
  int64_t rd[XC_TILED_MAX_RANK] = {1, 1, 1}, ad[XC_TILED_MAX_RANK] = {1, 1, 1}, bd[XC_TILED_MAX_RANK] = {1, 1, 1};
  if (spv_value_dims(e, dot->results[0], rd) != 2 || spv_value_dims(e, dot->operands[0], ad) != 2 ||
      spv_value_dims(e, dot->operands[1], bd) != 2)
    return false;
  *m = rd[0];
  *n = rd[1];
  *k = ad[1];
  return *m >= 1 && *n >= 1 && *k >= 1 && ad[0] == *m && bd[0] == *k && bd[1] == *n;
}

static void plan_block(spv_emitter_t* e, const xc_tiled_block_t* blk) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    if (op->body) plan_block(e, op->body);
    int64_t m, n, k;
    xc_tiled_slot_grid_t g;
    if (op->opcode != XC_TOP_DOT || !dot_extents(e, op, &m, &n, &k) || op->results[0]->type.dtype != XC_F32 ||
        spv_scheduled_mma(e, op) || !xc_tiled_slot_grid_of(m, n, e->threads, SPV_VEC, &g) || g.slots < 2 ||
        g.slots > SPV_DOT_MAX_SLOTS || spv_layout_vec(e, m * n) > 1 || e->num_chunked >= SPV_MAX_CHUNKED)
      continue;
    e->chunked[e->num_chunked++] = m * n;
  }
}

void spv_dot_plan_layouts(spv_emitter_t* e) {
  e->num_chunked = 0;
  /* The schedule decides: vector 4 asks for chunks of four. */
  if (!e->k->schedule || e->k->schedule->vector < SPV_VEC) return;
  plan_block(e, e->k->body);
}

/* The storage of v can be read as 4-element vectors: materialized in f32
 * work-group memory (not the f16 copy of a cooperative-matrix operand, not
 * a tile cooperative matrices are stored into). The first pass that finds
 * it asks for vector storage and emits again. */
static bool as_vectors(spv_emitter_t* e, const xc_tiled_value_t* v) {
  spv_vinfo_t* vi = spv_info(e, v);
  if ((vi->kind != SPV_V_PRIVATE && vi->kind != SPV_V_SHARED) || vi->half ||
      spv_ctype(e, v->type.dtype) != e->t_f32)
    return false;
  for (int i = 0; i < e->num_coop; i++)
    if (spv_info(e, e->coop[i].res) == vi) return false;
  if (!vi->want_vec4) {
    vi->want_vec4 = true;
    e->redo = true;
  }
  return vi->vec4 && vi->kind == SPV_V_SHARED;
}

/* base + the offset of item j in a layout of runs of `vec` consecutive
 * items, `stride` runs apart: (j / vec) * stride * vec + j % vec. */
static uint32_t run_item(spv_emitter_t* e, uint32_t base, int64_t j, int64_t stride, int64_t vec) {
  int64_t off = (j / vec) * stride * vec + j % vec;
  return off ? spv_val(&e->b, SpvOpIAdd, e->t_i32, 2, base, spv_ci32(e, off)) : base;
}

bool spv_dot_blocked(spv_emitter_t* e, const xc_tiled_op_t* dot) {
  int64_t m, n, kk;
  xc_tiled_slot_grid_t g; /* a partly filled slot or another layout: the per-element loop */
  if (!dot_extents(e, dot, &m, &n, &kk) ||
      !xc_tiled_slot_grid_of(m, n, e->threads, spv_layout_vec(e, m * n), &g) || g.slots > SPV_DOT_MAX_SLOTS)
    return false;
  spv_builder_t* b = &e->b;
  const xc_tiled_value_t *a = dot->operands[0], *bv = dot->operands[1], *acc = dot->operands[2];
  const xc_tiled_value_t* r = dot->results[0];
  xc_dtype_t ta = a->type.dtype, tb = bv->type.dtype, tr = r->type.dtype;
  xc_dtype_t tc = tr == XC_F16 || tr == XC_BF16 ? XC_F32 : tr; /* what dot_at casts the operands to */
  uint32_t ct = spv_ctype(e, tr), i32 = e->t_i32;
  spv_make_storage(e, r);
  bool shared = spv_info(e, r)->kind == SPV_V_SHARED;
  if (shared) spv_barrier(e); /* work-items may still read the previous contents */

  /* The work-item's rows lid / tpr + i * row_step and columns
   * ((lid % tpr) + (w / vec) * tpr) * vec + w % vec (xcomp/tiled.h). */
  bool split = g.tpr < e->threads; /* several rows a work-group: the row depends on lid */
  uint32_t row[SPV_DOT_MAX_SLOTS], col[SPV_DOT_MAX_SLOTS];
  uint32_t row0 = split ? spv_val(b, SpvOpSDiv, i32, 2, e->lid, spv_ci32(e, g.tpr)) : 0;
  for (int64_t i = 0; i < g.rows; i++)
    row[i] = !split ? spv_ci32(e, i) : i ? spv_val(b, SpvOpIAdd, i32, 2, row0, spv_ci32(e, i * g.row_step)) : row0;
  uint32_t lane = split ? spv_val(b, SpvOpSRem, i32, 2, e->lid, spv_ci32(e, g.tpr)) : e->lid;
  uint32_t col0 = g.vec > 1 ? spv_val(b, SpvOpIMul, i32, 2, lane, spv_ci32(e, g.vec)) : lane;
  for (int64_t w = 0; w < g.cols; w++) col[w] = run_item(e, col0, w, g.tpr, g.vec);

  /* one accumulator per slot, from the dot's accumulator operand; slot j is
   * row j / cols, column j % cols, and element lin of the layout */
  uint32_t lin0 = g.vec > 1 ? spv_val(b, SpvOpIMul, i32, 2, e->lid, spv_ci32(e, g.vec)) : e->lid;
  uint32_t sums[SPV_DOT_MAX_SLOTS];
  spv_ctx_t slot[SPV_DOT_MAX_SLOTS];
  for (int64_t j = 0; j < g.slots; j++) {
    spv_ctx_t* c = &slot[j];
    memset(c, 0, sizeof *c);
    c->rank = 2;
    c->dims[0] = m;
    c->dims[1] = n;
    c->idx[0] = row[j / g.cols];
    c->idx[1] = col[j % g.cols];
    c->aligned = true;
    c->lin = run_item(e, lin0, j, e->threads, g.vec);
    c->slot = spv_ci32(e, j);
    sums[j] = spv_fvar(e, ct);
    char name[48];
    snprintf(name, sizeof name, "dot_v%d_s%lld", r->id, (long long)j);
    spv_name(b, sums[j], name);
    spv_store(e, sums[j], spv_read_operand(e, acc, c));
  }

  /* the K loop, SPV_DOT_UNROLL steps at a time where they divide K */
  int64_t u = kk % SPV_DOT_UNROLL == 0 ? SPV_DOT_UNROLL : 1;
  bool vec = u == SPV_DOT_UNROLL && as_vectors(e, a);
  /* B's runs of 4 columns as one vector each (its rows are whole vectors:
   * N is a multiple of 4), where its storage allows */
  bool bvec = g.vec == SPV_VEC && as_vectors(e, bv);
  spv_loop_t l;
  uint32_t step = spv_loop_begin(e, i32, spv_ci32(e, 0), spv_ci32(e, kk / u), SpvLoopControlMaskNone, &l);
  uint32_t q[SPV_DOT_UNROLL];
  q[0] = u > 1 ? spv_val(b, SpvOpIMul, i32, 2, step, spv_ci32(e, u)) : step;
  for (int64_t h = 1; h < u; h++) q[h] = spv_val(b, SpvOpIAdd, i32, 2, q[0], spv_ci32(e, h));
  spv_ctx_t ac, bc;
  memset(&ac, 0, sizeof ac);
  memset(&bc, 0, sizeof bc);
  ac.rank = bc.rank = 2;
  ac.dims[0] = m;
  ac.dims[1] = kk;
  bc.dims[0] = kk;
  bc.dims[1] = n;
  uint32_t v4 = bvec ? spv_type(b, SpvOpTypeVector, 2, e->t_f32, 4u) : 0;
  /* B[q + h, column j] of the work-item's columns */
  uint32_t bvals[SPV_DOT_UNROLL * SPV_DOT_MAX_SLOTS];
  for (int64_t h = 0; h < u; h++) {
    if (bvec) {
      /* run w / 4 of the row starts at element (q + h) * N + col[w], vector
       * (q + h) * N / 4 + lane + (w / 4) * tpr */
      uint32_t at0 = spv_val(b, SpvOpIAdd, i32, 2, spv_val(b, SpvOpIMul, i32, 2, q[h], spv_ci32(e, n / SPV_VEC)), lane);
      for (int64_t w = 0; w < g.cols; w += SPV_VEC) {
        uint32_t at = run_item(e, at0, w / SPV_VEC, g.tpr, 1);
        uint32_t p = spv_val(b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, v4), 2, spv_info(e, bv)->id, at);
        uint32_t x = spv_load(e, v4, p);
        for (int64_t h4 = 0; h4 < SPV_VEC; h4++)
          bvals[h * g.cols + w + h4] = spv_cast(e, tb, tc, spv_val(b, SpvOpCompositeExtract, e->t_f32, 2, x, (uint32_t)h4));
      }
      continue;
    }
    for (int64_t j = 0; j < g.cols; j++) {
      bc.idx[0] = q[h];
      bc.idx[1] = col[j];
      bvals[h * g.cols + j] = spv_cast(e, tb, tc, spv_read_value(e, bv, &bc));
    }
  }
  if (vec && !v4) v4 = spv_type(b, SpvOpTypeVector, 2, e->t_f32, 4u);
  for (int64_t i = 0; i < g.rows; i++) {
    /* A[row i, q .. q + u - 1]: one vector load where the storage allows */
    uint32_t avals[SPV_DOT_UNROLL];
    if (vec) {
      uint32_t at = spv_val(b, SpvOpIAdd, i32, 2, spv_val(b, SpvOpIMul, i32, 2, row[i], spv_ci32(e, kk / u)), step);
      uint32_t p = spv_val(b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, v4), 2, spv_info(e, a)->id, at);
      uint32_t x = spv_load(e, v4, p);
      for (int64_t h = 0; h < u; h++) avals[h] = spv_val(b, SpvOpCompositeExtract, e->t_f32, 2, x, (uint32_t)h);
    } else {
      ac.idx[0] = row[i];
      for (int64_t h = 0; h < u; h++) {
        ac.idx[1] = q[h];
        avals[h] = spv_read_value(e, a, &ac);
      }
    }
    for (int64_t h = 0; h < u; h++) {
      uint32_t av = spv_cast(e, ta, tc, avals[h]);
      for (int64_t j = 0; j < g.cols; j++) {
        uint32_t sum = sums[i * g.cols + j];
        uint32_t p = spv_binary(e, XC_TOP_MUL, tr, av, bvals[h * g.cols + j]);
        spv_store(e, sum, spv_binary(e, XC_TOP_ADD, tr, spv_load(e, ct, sum), p));
      }
    }
  }
  spv_loop_end(e, &l, spv_ci32(e, 1));

  for (int64_t j = 0; j < g.slots; j++) spv_write_elem(e, r, &slot[j], spv_load(e, ct, sums[j]));
  if (shared) spv_barrier(e);
  return true;
}
