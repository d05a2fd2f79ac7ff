/* The register-blocked generic dot (docs/targets/spirv.md, "Dots"): a dot
 * whose result is an M x N tile in the default slot layout is computed for
 * all of a work-item's J slots in one K loop, with one accumulator variable
 * per slot, instead of a K loop per element (dot_at in spirv_emit.c). Per K
 * step each B value of the work-item's columns and each A value of its rows
 * is read from work-group memory once and serves a row or a column of
 * accumulators, so a multiply-add costs well under one load.
 *
 * The default layout puts slot j of work-item lid at element
 * f = lid + j * T (spv_eloop_begin). Two forms of it are blocked:
 *   columns  N % T == 0, c = N / T: slot j is row j / c, column
 *            (j % c) * T + lid; the work-item owns all M rows and c columns;
 *   rows     T % N == 0, g = T / N: slot j is row lid / N + j * g,
 *            column lid % N; it owns M / g rows of one column.
 * Each slot sums acc, then a*b for q = 0, 1, ..., as the per-element loop
 * does (mul, then add), so the results are the same bits. */
#include <stdio.h>
#include <string.h>

#include "spirv_emit_internal.h"

#define SPV_DOT_MAX_SLOTS 128 /* accumulators a work-item holds; more: the per-element loop */
#define SPV_DOT_UNROLL 4      /* K steps per iteration, when they divide K */

typedef struct dot_shape {
  int64_t m, n, k, slots;
  int64_t cols; /* columns a work-item owns (rows form: 1) */
  int64_t rows; /* slots / cols */
  int64_t g;    /* rows form: rows between a work-item's rows; columns form: 0 */
} dot_shape_t;

static bool dot_shape(spv_emitter_t* e, const xc_tiled_op_t* dot, dot_shape_t* s) {
  if (dot->num_operands < 3 || dot->num_results != 1) return false;
  int64_t rd[XC_TILED_MAX_RANK] = {1, 1, 1}, ad[XC_TILED_MAX_RANK] = {1, 1, 1}, bd[XC_TILED_MAX_RANK] = {1, 1, 1};
  if (spv_value_dims(e, dot->results[0], rd) != 2 || spv_value_dims(e, dot->operands[0], ad) != 2 ||
      spv_value_dims(e, dot->operands[1], bd) != 2)
    return false;
  int64_t t = e->threads;
  memset(s, 0, sizeof *s);
  s->m = rd[0];
  s->n = rd[1];
  s->k = ad[1];
  if (s->m < 1 || s->n < 1 || s->k < 1 || ad[0] != s->m || bd[0] != s->k || bd[1] != s->n) return false;
  xc_tiled_slot_grid_t grid; /* a partly filled slot or another layout: the per-element loop */
  if (!xc_tiled_slot_grid_of(s->m, s->n, t, 1, &grid) || grid.slots > SPV_DOT_MAX_SLOTS) return false;
  s->slots = grid.slots, s->cols = grid.cols, s->rows = grid.rows, s->g = grid.tpr == t ? 0 : grid.row_step;
  return true;
}

/* The storage of A can be read as 4-element vectors: materialized in f32
 * work-group memory (not the f16 copy of a cooperative-matrix operand, not
 * a tile cooperative matrices are stored into). The first pass that finds
 * it asks for vector storage and emits again. */
static bool a_as_vectors(spv_emitter_t* e, const xc_tiled_value_t* a) {
  spv_vinfo_t* ai = spv_info(e, a);
  if ((ai->kind != SPV_V_PRIVATE && ai->kind != SPV_V_SHARED) || ai->half ||
      spv_ctype(e, a->type.dtype) != e->t_f32)
    return false;
  for (int i = 0; i < e->num_coop; i++)
    if (spv_info(e, e->coop[i].res) == ai) return false;
  if (!ai->want_vec4) {
    ai->want_vec4 = true;
    e->redo = true;
  }
  return ai->vec4 && ai->kind == SPV_V_SHARED;
}

bool spv_dot_blocked(spv_emitter_t* e, const xc_tiled_op_t* dot) {
  dot_shape_t s;
  if (!dot_shape(e, dot, &s)) return false;
  spv_builder_t* b = &e->b;
  const xc_tiled_value_t *a = dot->operands[0], *bv = dot->operands[1], *acc = dot->operands[2];
  const xc_tiled_value_t* r = dot->results[0];
  xc_dtype_t ta = a->type.dtype, tb = bv->type.dtype, tr = r->type.dtype;
  xc_dtype_t tc = tr == XC_F16 || tr == XC_BF16 ? XC_F32 : tr; /* what dot_at casts the operands to */
  uint32_t ct = spv_ctype(e, tr), i32 = e->t_i32;
  spv_make_storage(e, r);
  bool shared = spv_info(e, r)->kind == SPV_V_SHARED;
  if (shared) spv_barrier(e); /* work-items may still read the previous contents */

  /* the work-item's rows and columns */
  uint32_t row[SPV_DOT_MAX_SLOTS], col[SPV_DOT_MAX_SLOTS];
  uint32_t row0 = s.g ? spv_val(b, SpvOpSDiv, i32, 2, e->lid, spv_ci32(e, s.n)) : 0;
  for (int64_t i = 0; i < s.rows; i++)
    row[i] = !s.g ? spv_ci32(e, i) : i ? spv_val(b, SpvOpIAdd, i32, 2, row0, spv_ci32(e, i * s.g)) : row0;
  for (int64_t j = 0; j < s.cols; j++)
    col[j] = s.g ? spv_val(b, SpvOpSRem, i32, 2, e->lid, spv_ci32(e, s.n))
                 : j ? spv_val(b, SpvOpIAdd, i32, 2, e->lid, spv_ci32(e, j * e->threads)) : e->lid;

  /* one accumulator per slot, from the dot's accumulator operand */
  uint32_t sums[SPV_DOT_MAX_SLOTS];
  spv_ctx_t slot[SPV_DOT_MAX_SLOTS];
  for (int64_t j = 0; j < s.slots; j++) {
    spv_ctx_t* c = &slot[j];
    memset(c, 0, sizeof *c);
    c->rank = 2;
    c->dims[0] = s.m;
    c->dims[1] = s.n;
    c->idx[0] = row[j / s.cols];
    c->idx[1] = col[j % s.cols];
    c->aligned = true;
    c->lin = j ? spv_val(b, SpvOpIAdd, i32, 2, e->lid, spv_ci32(e, j * e->threads)) : e->lid;
    c->slot = spv_ci32(e, j);
    sums[j] = spv_fvar(e, ct);
    char name[48];
    snprintf(name, sizeof name, "dot_v%d_s%lld", r->id, (long long)j);
    spv_name(b, sums[j], name);
    spv_store(e, sums[j], spv_read_operand(e, acc, c));
  }

  /* the K loop, SPV_DOT_UNROLL steps at a time where they divide K */
  int64_t u = s.k % SPV_DOT_UNROLL == 0 ? SPV_DOT_UNROLL : 1;
  bool vec = u == SPV_DOT_UNROLL && a_as_vectors(e, a);
  spv_loop_t l;
  uint32_t step = spv_loop_begin(e, i32, spv_ci32(e, 0), spv_ci32(e, s.k / u), SpvLoopControlMaskNone, &l);
  uint32_t q[SPV_DOT_UNROLL];
  q[0] = u > 1 ? spv_val(b, SpvOpIMul, i32, 2, step, spv_ci32(e, u)) : step;
  for (int64_t h = 1; h < u; h++) q[h] = spv_val(b, SpvOpIAdd, i32, 2, q[0], spv_ci32(e, h));
  spv_ctx_t ac, bc;
  memset(&ac, 0, sizeof ac);
  memset(&bc, 0, sizeof bc);
  ac.rank = bc.rank = 2;
  ac.dims[0] = s.m;
  ac.dims[1] = s.k;
  bc.dims[0] = s.k;
  bc.dims[1] = s.n;
  /* B[q + h, column j] of the work-item's columns */
  uint32_t bvals[SPV_DOT_UNROLL * SPV_DOT_MAX_SLOTS];
  for (int64_t h = 0; h < u; h++)
    for (int64_t j = 0; j < s.cols; j++) {
      bc.idx[0] = q[h];
      bc.idx[1] = col[j];
      bvals[h * s.cols + j] = spv_cast(e, tb, tc, spv_read_value(e, bv, &bc));
    }
  uint32_t v4 = vec ? spv_type(b, SpvOpTypeVector, 2, e->t_f32, 4u) : 0;
  for (int64_t i = 0; i < s.rows; i++) {
    /* A[row i, q .. q + u - 1]: one vector load where the storage allows */
    uint32_t avals[SPV_DOT_UNROLL];
    if (vec) {
      uint32_t at = spv_val(b, SpvOpIAdd, i32, 2, spv_val(b, SpvOpIMul, i32, 2, row[i], spv_ci32(e, s.k / u)), step);
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
      for (int64_t j = 0; j < s.cols; j++) {
        uint32_t sum = sums[i * s.cols + j];
        uint32_t p = spv_binary(e, XC_TOP_MUL, tr, av, bvals[h * s.cols + j]);
        spv_store(e, sum, spv_binary(e, XC_TOP_ADD, tr, spv_load(e, ct, sum), p));
      }
    }
  }
  spv_loop_end(e, &l, spv_ci32(e, 1));

  for (int64_t j = 0; j < s.slots; j++) spv_write_elem(e, r, &slot[j], spv_load(e, ct, sums[j]));
  if (shared) spv_barrier(e);
  return true;
}
