/* Cooperative matrices in the SPIR-V emitter (SPV_NV_cooperative_matrix):
 * which `for`-carried dot accumulators the schedule puts on subgroup
 * fragments (the plan), and the code for them: fragment variables and their
 * initial value, the K steps of loads and multiply-adds, the store of the
 * fragments into the loop result's work-group storage. docs/targets/spirv.md,
 * "Dots on cooperative matrices". */
#include <string.h>

#include "spirv_emit_internal.h"

/* ---- the plan -------------------------------------------------------------- */

static int dot_index_in(const xc_tiled_block_t* blk, const xc_tiled_op_t* dot, int* seen) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    if (op == dot) return *seen;
    if (op->opcode == XC_TOP_DOT) ++*seen;
    if (op->body) {
      int r = dot_index_in(op->body, dot, seen);
      if (r >= 0) return r;
    }
  }
  return -1;
}

/* The matrix instruction the kernel's schedule gives `dot` (NULL: generic). */
const xc_tiled_mma_t* spv_scheduled_mma(spv_emitter_t* e, const xc_tiled_op_t* dot) {
  const xc_tiled_schedule_t* s = e->k->schedule;
  if (!s) return NULL;
  int seen = 0;
  int i = dot_index_in(e->k->body, dot, &seen);
  return i >= 0 && i < s->num_dots && s->dots[i].mma.m > 0 ? &s->dots[i].mma : NULL;
}

/* The value whose work-group copy a fragment load reads for dot operand v:
 * v itself (row-major) or, for a transpose, its operand (column-major).
 * NULL when it cannot be staged: it must be computed afresh in `body`. */
static const xc_tiled_value_t* coop_source(const xc_tiled_value_t* v, const xc_tiled_block_t* body, bool* col) {
  *col = false;
  if (v->def && v->def->opcode == XC_TOP_TRANS) {
    v = v->def->operands[0];
    *col = true;
  }
  const xc_tiled_op_t* d = v->def;
  if (!d || d->parent != body || v->type.kind == XC_TILED_MEMREF || v->type.rank != 2 || v->type.dtype != XC_F16)
    return NULL;
  if (d->opcode == XC_TOP_FOR || d->opcode == XC_TOP_DOT || d->opcode == XC_TOP_REDUCE) return NULL;
  return v;
}

/* Whether carried tile c of `loop` can be a cooperative-matrix accumulator
 * under the scheduled shape mma: NULL, or the reason it cannot. */
static const char* coop_check(spv_emitter_t* e, const xc_tiled_op_t* loop, int c, const xc_tiled_op_t* dot,
                              const xc_tiled_mma_t* mma, const spv_use_t* uses, spv_coop_t* cp) {
  const xc_tiled_block_t* body = loop->body;
  const xc_tiled_op_t* y = body->num_ops > 0 ? body->ops[body->num_ops - 1] : NULL;
  const xc_tiled_value_t* dres = dot->results[0];
  if (!y || y->opcode != XC_TOP_YIELD || c >= y->num_operands || y->operands[c] != dres ||
      uses[dres->id].count != 1)
    return "its result is not only yielded back as the accumulator";
  if (!(e->t->features & SPV_FEATURE_COOPMAT)) return "the device has no cooperative matrices";
  if (mma->input_dtype != XC_F16 || mma->accumulator_dtype != XC_F32)
    return "only f16 inputs with f32 accumulation are implemented";
  bool listed = false;
  for (int i = 0; i < e->t->caps->num_mma_shapes; i++) {
    const xc_mma_shape_t* sh = &e->t->caps->mma_shapes[i];
    if (sh->m == mma->m && sh->n == mma->n && sh->k == mma->k && sh->input_dtype == XC_F16 &&
        sh->accumulator_dtype == XC_F32)
      listed = true;
  }
  if (!listed) return "the device does not list that shape";
  const xc_tiled_value_t *a = dot->operands[0], *b = dot->operands[1];
  if (a->type.dtype != XC_F16 || b->type.dtype != XC_F16) return "its operands are not f16";
  memset(cp, 0, sizeof *cp);
  cp->asrc = coop_source(a, body, &cp->acol);
  cp->bsrc = coop_source(b, body, &cp->bcol);
  if (!cp->asrc || !cp->bsrc) return "an operand is not computed in the loop body";
  int64_t rd[XC_TILED_MAX_RANK] = {1, 1, 1}, ad[XC_TILED_MAX_RANK] = {1, 1, 1};
  spv_value_dims(e, dres, rd);
  spv_value_dims(e, a, ad);
  cp->M = rd[0];
  cp->N = rd[1];
  cp->K = ad[1];
  cp->m = mma->m;
  cp->n = mma->n;
  cp->k = mma->k;
  if (cp->M % cp->m || cp->N % cp->n || cp->K % cp->k) return "the tiles are not multiples of the shape";
  int64_t simd = e->t->caps->simd_width > 0 ? e->t->caps->simd_width : 1;
  if (e->threads % simd) return "the work-group is not whole subgroups";
  int64_t sg = e->threads / simd, mf = cp->M / cp->m, nf = cp->N / cp->n;
  int64_t best = 0;
  for (int64_t sm = 1; sm <= sg; sm++) {
    if (sg % sm || mf % sm || nf % (sg / sm)) continue;
    int64_t fm = mf / sm, fn = nf / (sg / sm);
    if (fm * fn > SPV_COOP_MAX_FRAGS) continue;
    if (!best || fm + fn < cp->fm + cp->fn) {
      best = sm;
      cp->fm = (int)fm;
      cp->fn = (int)fn;
      cp->sn = (int)(sg / sm);
    }
  }
  if (!best) return "the fragments do not divide evenly among the subgroups";
  if (cp->K / cp->k > 16) return "the K tile holds more than 16 fragments";
  cp->loop = loop;
  cp->dot = dot;
  cp->arg = body->args[1 + c];
  cp->res = loop->results[c];
  cp->init = loop->operands[3 + c];
  return NULL;
}

/* Finds the carried accumulators of `loop` the schedule puts on cooperative
 * matrices and sets their values' kinds: the accumulator and the dot's result
 * COOP, the operands' sources materialized in f16 work-group memory, the
 * loop's result SHARED (the fragments are stored there after the loop). */
void spv_coop_plan(spv_emitter_t* e, const xc_tiled_op_t* loop, const spv_use_t* uses) {
  const xc_tiled_block_t* body = loop->body;
  for (int c = 0; c < loop->num_results; c++) {
    const xc_tiled_value_t* arg = body->args[1 + c];
    if (arg->type.rank != 2 || arg->type.dtype != XC_F32) continue;
    const spv_use_t* u = &uses[arg->id];
    if (u->count != 1 || u->block != body || u->user->opcode != XC_TOP_DOT) continue;
    const xc_tiled_op_t* dot = u->user;
    if (dot->operands[2] != arg || dot->operands[0] == arg || dot->operands[1] == arg) continue;
    const xc_tiled_mma_t* mma = spv_scheduled_mma(e, dot);
    if (!mma) continue;
    spv_coop_t cp;
    const char* why = coop_check(e, loop, c, dot, mma, uses, &cp);
    if (!why && e->num_coop >= SPV_COOP_MAX) why = "too many such loops in one kernel";
    if (why) {
      spv_fail(e, XC_UNSUPPORTED, "dot op %d: the schedule gives it %dx%dx%d cooperative matrices, but %s", dot->id,
               mma->m, mma->n, mma->k, why);
      return;
    }
    e->coop[e->num_coop++] = cp;
    e->vi[arg->id].kind = SPV_V_COOP;
    e->vi[dot->results[0]->id].kind = SPV_V_COOP;
    e->vi[dot->results[0]->id].group = arg->id;
    spv_vinfo_t* ri = &e->vi[cp.res->id];
    ri->group = -1;
    ri->kind = SPV_V_NONE;
    ri->want_shared = true;
    const xc_tiled_value_t* src[2] = {cp.asrc, cp.bsrc};
    for (int j = 0; j < 2; j++) {
      spv_vinfo_t* si = &e->vi[src[j]->id];
      si->half = true;
      if (si->kind == SPV_V_INLINE) si->kind = SPV_V_NONE;
    }
  }
}

spv_coop_t* spv_coop_of_arg(spv_emitter_t* e, const xc_tiled_value_t* arg) {
  for (int i = 0; i < e->num_coop; i++)
    if (e->coop[i].arg == arg) return &e->coop[i];
  return NULL;
}

spv_coop_t* spv_coop_of_dot(spv_emitter_t* e, const xc_tiled_op_t* dot) {
  for (int i = 0; i < e->num_coop; i++)
    if (e->coop[i].dot == dot) return &e->coop[i];
  return NULL;
}

/* ---- the code -------------------------------------------------------------- */

static void coop_enable(spv_emitter_t* e) {
  e->features |= SPV_FEATURE_COOPMAT;
  spv_capability(&e->b, SpvCapabilityCooperativeMatrixNV);
  spv_extension(&e->b, "SPV_NV_cooperative_matrix");
}

static uint32_t coop_type(spv_emitter_t* e, uint32_t component, int rows, int cols) {
  coop_enable(e);
  return spv_type(&e->b, SpvOpTypeCooperativeMatrixNV, 4, component, spv_cu32(e, SpvScopeSubgroup),
                  spv_cu32(e, (uint32_t)rows), spv_cu32(e, (uint32_t)cols));
}

/* This work-item's subgroup (i32), the same for the whole subgroup. */
static uint32_t subgroup_id(spv_emitter_t* e) {
  if (!e->v_sgid) {
    spv_capability(&e->b, SpvCapabilityGroupNonUniform);
    e->v_sgid = spv_id(&e->b);
    spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassInput, e->t_u32), e->v_sgid,
           (uint32_t)SpvStorageClassInput);
    spv_decorate(&e->b, e->v_sgid, SpvDecorationBuiltIn, 1, (uint32_t)SpvBuiltInSubgroupId);
    spv_name(&e->b, e->v_sgid, "subgroup_id");
  }
  return spv_val(&e->b, SpvOpBitcast, e->t_i32, 1, spv_load(e, e->t_u32, e->v_sgid));
}

/* This subgroup's fragment origins (i32): rows[fi] and cols[fj]. */
static void coop_origins(spv_emitter_t* e, const spv_coop_t* cp, uint32_t* rows, uint32_t* cols) {
  spv_builder_t* b = &e->b;
  uint32_t sg = subgroup_id(e);
  uint32_t base_m = spv_val(b, SpvOpIMul, e->t_i32, 2, spv_val(b, SpvOpSDiv, e->t_i32, 2, sg, spv_ci32(e, cp->sn)),
                            spv_ci32(e, cp->fm));
  uint32_t base_n = spv_val(b, SpvOpIMul, e->t_i32, 2, spv_val(b, SpvOpSRem, e->t_i32, 2, sg, spv_ci32(e, cp->sn)),
                            spv_ci32(e, cp->fn));
  for (int fi = 0; fi < cp->fm; fi++)
    rows[fi] = spv_val(b, SpvOpIMul, e->t_i32, 2, spv_val(b, SpvOpIAdd, e->t_i32, 2, base_m, spv_ci32(e, fi)),
                       spv_ci32(e, cp->m));
  for (int fj = 0; fj < cp->fn; fj++)
    cols[fj] = spv_val(b, SpvOpIMul, e->t_i32, 2, spv_val(b, SpvOpIAdd, e->t_i32, 2, base_n, spv_ci32(e, fj)),
                       spv_ci32(e, cp->n));
}

/* Element (r, c) of a row-major work-group matrix with `stride` columns. */
static uint32_t wg_elem(spv_emitter_t* e, uint32_t var, uint32_t elem_type, uint32_t r, uint32_t c, int64_t stride) {
  spv_builder_t* b = &e->b;
  uint32_t off = spv_val(b, SpvOpIAdd, e->t_i32, 2, spv_val(b, SpvOpIMul, e->t_i32, 2, r, spv_ci32(e, stride)), c);
  return spv_val(b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, elem_type), 2, var, off);
}

static uint32_t coop_load(spv_emitter_t* e, uint32_t type, uint32_t ptr, int64_t stride, bool col) {
  return spv_val(&e->b, SpvOpCooperativeMatrixLoadNV, type, 3, ptr, spv_ci32(e, stride), spv_const_bool(&e->b, col));
}

static void coop_store(spv_emitter_t* e, uint32_t ptr, uint32_t value, int64_t stride) {
  spv_op(&e->b, SPV_SEC_CODE, SpvOpCooperativeMatrixStoreNV, 4, ptr, value, spv_ci32(e, stride),
         spv_const_bool(&e->b, false));
}

/* Every accumulator fragment loaded from (store false) or stored to an
 * f32 M x N row-major work-group matrix `var`. */
static void coop_move_all(spv_emitter_t* e, spv_coop_t* cp, uint32_t var, bool store) {
  uint32_t tc = coop_type(e, e->t_f32, cp->m, cp->n);
  uint32_t rows[SPV_COOP_MAX_FRAGS], cols[SPV_COOP_MAX_FRAGS];
  coop_origins(e, cp, rows, cols);
  for (int fi = 0; fi < cp->fm; fi++)
    for (int fj = 0; fj < cp->fn; fj++) {
      uint32_t at = wg_elem(e, var, e->t_f32, rows[fi], cols[fj], cp->N), frag = cp->vars[fi * cp->fn + fj];
      if (store)
        coop_store(e, at, spv_load(e, tc, frag), cp->N);
      else
        spv_store(e, frag, coop_load(e, tc, at, cp->N, false));
    }
}

/* The accumulator's fragments get their variables and the loop's initial
 * value: a constant fills them directly, anything else goes through a
 * work-group copy. */
void spv_coop_init(spv_emitter_t* e, spv_coop_t* cp) {
  uint32_t tc = coop_type(e, e->t_f32, cp->m, cp->n);
  int nf = cp->fm * cp->fn;
  for (int f = 0; f < nf; f++) cp->vars[f] = spv_fvar(e, tc);
  const xc_tiled_value_t* init = cp->init;
  if (init->def && init->def->opcode == XC_TOP_CONST) {
    uint32_t fill = spv_id(&e->b);
    spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpConstantComposite, 3, tc, fill,
           spv_const_of(e, XC_F32, init->def->f, init->def->i));
    for (int f = 0; f < nf; f++) spv_store(e, cp->vars[f], fill);
    return;
  }
  int64_t dims[2] = {cp->M, cp->N};
  uint32_t arr = spv_type(&e->b, SpvOpTypeArray, 2, e->t_f32, spv_cu32(e, (uint32_t)(cp->M * cp->N)));
  uint32_t tmp = spv_id(&e->b);
  spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassWorkgroup, arr), tmp,
         (uint32_t)SpvStorageClassWorkgroup);
  spv_name(&e->b, tmp, "coop_init");
  e->shared_bytes += cp->M * cp->N * 4;
  spv_barrier(e);
  spv_eloop_t el;
  spv_ctx_t c;
  spv_eloop_begin(e, 2, dims, &el, &c);
  spv_store(e, spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, e->t_f32), 2, tmp, c.lin),
        spv_read_operand(e, init, &c));
  spv_eloop_end(e, &el);
  spv_barrier(e);
  coop_move_all(e, cp, tmp, false);
}

/* acc += a @ b, fragment by fragment, K in steps of k; the operands are in
 * work-group memory (materialized before the dot, barrier included). */
void spv_coop_dot(spv_emitter_t* e, spv_coop_t* cp) {
  uint32_t h = spv_f16_type(e);
  uint32_t ta = coop_type(e, h, cp->m, cp->k), tb = coop_type(e, h, cp->k, cp->n);
  uint32_t tc = coop_type(e, e->t_f32, cp->m, cp->n);
  uint32_t va = spv_info(e, cp->asrc)->id, vb = spv_info(e, cp->bsrc)->id;
  int64_t pa = spv_info(e, cp->asrc)->pitch, pb = spv_info(e, cp->bsrc)->pitch;
  if (!va || !vb) {
    spv_fail(e, XC_INTERNAL, "dot op %d: its operands are not in work-group memory", cp->dot->id);
    return;
  }
  uint32_t rows[SPV_COOP_MAX_FRAGS], cols[SPV_COOP_MAX_FRAGS];
  coop_origins(e, cp, rows, cols);
  for (int64_t kk = 0; kk < cp->K; kk += cp->k) {
    uint32_t a[SPV_COOP_MAX_FRAGS], bf[SPV_COOP_MAX_FRAGS];
    uint32_t k0 = spv_ci32(e, kk);
    for (int fi = 0; fi < cp->fm; fi++) /* a[M,K] row-major, or its source [K,M] */
      a[fi] = cp->acol ? coop_load(e, ta, wg_elem(e, va, h, k0, rows[fi], pa), pa, true)
                       : coop_load(e, ta, wg_elem(e, va, h, rows[fi], k0, pa), pa, false);
    for (int fj = 0; fj < cp->fn; fj++) /* b[K,N] row-major, or its source [N,K] */
      bf[fj] = cp->bcol ? coop_load(e, tb, wg_elem(e, vb, h, cols[fj], k0, pb), pb, true)
                        : coop_load(e, tb, wg_elem(e, vb, h, k0, cols[fj], pb), pb, false);
    for (int fi = 0; fi < cp->fm; fi++)
      for (int fj = 0; fj < cp->fn; fj++) {
        uint32_t v = cp->vars[fi * cp->fn + fj];
        spv_store(e, v, spv_val(&e->b, SpvOpCooperativeMatrixMulAddNV, tc, 3, a[fi], bf[fj], spv_load(e, tc, v)));
      }
  }
}

/* After the loop: the fragments go to the result's work-group storage. */
void spv_coop_spill(spv_emitter_t* e, spv_coop_t* cp) {
  spv_make_storage(e, cp->res);
  spv_vinfo_t* ri = spv_info(e, cp->res);
  if (ri->kind != SPV_V_SHARED) {
    spv_fail(e, XC_INTERNAL, "for op %d: its result is not in work-group memory", cp->loop->id);
    return;
  }
  spv_barrier(e);
  coop_move_all(e, cp, ri->id, true);
  spv_barrier(e);
}
