/* Tiled IR -> SPIR-V: one GLCompute entry point per kernel, written as words
 * through the builder (no text, no other compiler). spirv_emit_internal.h
 * explains how programs, scalars and tiles map onto work-groups; this file
 * holds the module skeleton (interface, buffers, push constants), the value
 * plan, structured control flow and the ops. */
#include <stdlib.h>
#include <string.h>

#include "spirv_emit_internal.h"

static const char* const kOpNames[XC_TOP_COUNT] = {
    [XC_TOP_CONST] = "const", [XC_TOP_PROGRAM_ID] = "program_id", [XC_TOP_NUM_PROGRAMS] = "num_programs",
    [XC_TOP_KNOB] = "knob", [XC_TOP_ARANGE] = "arange", [XC_TOP_EXPAND_DIMS] = "expand_dims",
    [XC_TOP_BROADCAST] = "broadcast", [XC_TOP_TRANS] = "trans", [XC_TOP_LOAD] = "load", [XC_TOP_STORE] = "store",
    [XC_TOP_ALLOC] = "alloc", [XC_TOP_BARRIER] = "barrier", [XC_TOP_NEG] = "neg", [XC_TOP_ABS] = "abs",
    [XC_TOP_EXP] = "exp", [XC_TOP_LOG] = "log", [XC_TOP_SQRT] = "sqrt", [XC_TOP_RSQRT] = "rsqrt",
    [XC_TOP_ERF] = "erf", [XC_TOP_TANH] = "tanh", [XC_TOP_SIGMOID] = "sigmoid", [XC_TOP_FLOOR] = "floor",
    [XC_TOP_CEIL] = "ceil", [XC_TOP_SIN] = "sin", [XC_TOP_COS] = "cos", [XC_TOP_RECIP] = "recip",
    [XC_TOP_ATAN] = "atan", [XC_TOP_NOT] = "not", [XC_TOP_ADD] = "add", [XC_TOP_SUB] = "sub",
    [XC_TOP_MUL] = "mul", [XC_TOP_DIV] = "div", [XC_TOP_REM] = "rem", [XC_TOP_MAX] = "max", [XC_TOP_MIN] = "min",
    [XC_TOP_POW] = "pow", [XC_TOP_AND] = "and", [XC_TOP_OR] = "or", [XC_TOP_XOR] = "xor", [XC_TOP_SHL] = "shl",
    [XC_TOP_SHR] = "shr", [XC_TOP_CMP] = "cmp", [XC_TOP_SELECT] = "select", [XC_TOP_CAST] = "cast",
    [XC_TOP_REDUCE] = "reduce", [XC_TOP_DOT] = "dot", [XC_TOP_FOR] = "for", [XC_TOP_YIELD] = "yield",
};

const char* spv_op_name(xc_tiled_opcode_t op) {
  return (unsigned)op < XC_TOP_COUNT && kOpNames[op] ? kOpNames[op] : "?";
}

#define SPV_SEM_BARRIER 0x148u /* AcquireRelease | UniformMemory | WorkgroupMemory */

static bool is_unary(xc_tiled_opcode_t op) { return op >= XC_TOP_NEG && op <= XC_TOP_NOT; }
static bool is_binary(xc_tiled_opcode_t op) { return op >= XC_TOP_ADD && op <= XC_TOP_SHR; }
static bool is_elementwise(xc_tiled_opcode_t op) {
  return is_unary(op) || is_binary(op) || op == XC_TOP_CMP || op == XC_TOP_SELECT || op == XC_TOP_CAST;
}

static int64_t dim_of(spv_emitter_t* e, const xc_tiled_dim_t* d) { return spv_host->dim_resolve(d, e->knobs); }

int spv_value_dims(spv_emitter_t* e, const xc_tiled_value_t* v, int64_t* dims) {
  for (int i = 0; i < v->type.rank; i++) dims[i] = dim_of(e, &v->type.dims[i]);
  return v->type.rank;
}

int64_t spv_numel(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  return n;
}

spv_vinfo_t* spv_info(spv_emitter_t* e, const xc_tiled_value_t* v) {
  spv_vinfo_t* i = &e->vi[v->id];
  return i->group >= 0 ? &e->vi[i->group] : i;
}

/* ---- control flow --------------------------------------------------------- */

static void label(spv_emitter_t* e, uint32_t id) { spv_op(&e->b, SPV_SEC_CODE, SpvOpLabel, 1, id); }
static void branch(spv_emitter_t* e, uint32_t to) { spv_op(&e->b, SPV_SEC_CODE, SpvOpBranch, 1, to); }

uint32_t spv_fvar(spv_emitter_t* e, uint32_t type) {
  uint32_t id = spv_id(&e->b);
  spv_op(&e->b, SPV_SEC_FVARS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassFunction, type), id,
         (uint32_t)SpvStorageClassFunction);
  return id;
}

uint32_t spv_load(spv_emitter_t* e, uint32_t type, uint32_t ptr) { return spv_val(&e->b, SpvOpLoad, type, 1, ptr); }
void spv_store(spv_emitter_t* e, uint32_t ptr, uint32_t v) { spv_op(&e->b, SPV_SEC_CODE, SpvOpStore, 2, ptr, v); }

static uint32_t if_begin(spv_emitter_t* e, uint32_t cond) {
  uint32_t merge = spv_id(&e->b), then = spv_id(&e->b);
  spv_op(&e->b, SPV_SEC_CODE, SpvOpSelectionMerge, 2, merge, (uint32_t)SpvSelectionControlMaskNone);
  spv_op(&e->b, SPV_SEC_CODE, SpvOpBranchConditional, 3, cond, then, merge);
  label(e, then);
  return merge;
}

static void if_end(spv_emitter_t* e, uint32_t merge) {
  branch(e, merge);
  label(e, merge);
}

/* for (iv = lb; iv < ub; iv += step): returns iv; signed comparison. */
uint32_t spv_loop_begin(spv_emitter_t* e, uint32_t type, uint32_t lb, uint32_t ub, uint32_t control, spv_loop_t* l) {
  spv_builder_t* b = &e->b;
  l->type = type;
  l->var = spv_fvar(e, type);
  spv_store(e, l->var, lb);
  l->header = spv_id(b);
  l->cont = spv_id(b);
  l->merge = spv_id(b);
  uint32_t check = spv_id(b), body = spv_id(b);
  branch(e, l->header);
  label(e, l->header);
  spv_op(b, SPV_SEC_CODE, SpvOpLoopMerge, 3, l->merge, l->cont, control);
  branch(e, check);
  label(e, check);
  l->iv = spv_load(e, type, l->var);
  uint32_t c = type == e->t_i64 ? spv_lt_i64(e, l->iv, ub) : spv_val(b, SpvOpSLessThan, e->t_bool, 2, l->iv, ub);
  spv_op(b, SPV_SEC_CODE, SpvOpBranchConditional, 3, c, body, l->merge);
  label(e, body);
  return l->iv;
}

void spv_loop_end(spv_emitter_t* e, spv_loop_t* l, uint32_t step) {
  branch(e, l->cont);
  label(e, l->cont);
  spv_store(e, l->var, spv_val(&e->b, SpvOpIAdd, l->type, 2, l->iv, step));
  branch(e, l->header);
  label(e, l->merge);
}

/* A work-group barrier, unless the code since the last one is only OpLine
 * (two in a row order nothing more than one). */
void spv_barrier(spv_emitter_t* e) {
  const spv_words_t* code = &e->b.sec[SPV_SEC_CODE];
  if (e->barrier_end && e->barrier_end <= code->n) {
    size_t at = e->barrier_end;
    while (at < code->n && (code->w[at] & 0xffffu) == SpvOpLine) at += code->w[at] >> 16;
    if (at == code->n) return;
  }
  uint32_t wg = spv_cu32(e, SpvScopeWorkgroup);
  spv_op(&e->b, SPV_SEC_CODE, SpvOpControlBarrier, 3, wg, wg, spv_cu32(e, SPV_SEM_BARRIER));
  e->barrier_end = code->n;
}

/* c's multi-index, from the flat index `elem` of a tile of `dims`. */
static void ctx_of_elem(spv_emitter_t* e, int rank, const int64_t* dims, uint32_t elem, spv_ctx_t* c) {
  spv_builder_t* b = &e->b;
  c->rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    c->dims[d] = dims[d];
    if (dims[d] == 1) {
      c->idx[d] = spv_ci32(e, 0);
    } else {
      uint32_t q = stride == 1 ? elem : spv_val(b, SpvOpSDiv, e->t_i32, 2, elem, spv_ci32(e, stride));
      c->idx[d] = d == 0 ? q : spv_val(b, SpvOpSRem, e->t_i32, 2, q, spv_ci32(e, dims[d]));
    }
    stride *= dims[d];
  }
}

/* The element loop over chunks of `width` consecutive elements (width
 * divides n): chunk q = lid + s * T starts at element q * width, the
 * element c names (aligned only when width is 1). */
static void eloop_begin_chunks(spv_emitter_t* e, int rank, const int64_t* dims, int64_t width, spv_eloop_t* el,
                               spv_ctx_t* c) {
  spv_builder_t* b = &e->b;
  int64_t n = spv_numel(rank, dims) / width, t = e->threads;
  int64_t slots = (n + t - 1) / t;
  memset(el, 0, sizeof *el);
  memset(c, 0, sizeof *c);
  uint32_t s = spv_ci32(e, 0);
  el->looped = slots > 1;
  if (el->looped)
    s = spv_loop_begin(e, e->t_i32, s, spv_ci32(e, slots),
                       slots <= 16 ? (uint32_t)SpvLoopControlUnrollMask : (uint32_t)SpvLoopControlMaskNone, &el->l);
  uint32_t elem = el->looped ? spv_val(b, SpvOpIAdd, e->t_i32, 2, e->lid,
                                       spv_val(b, SpvOpIMul, e->t_i32, 2, s, spv_ci32(e, t)))
                             : e->lid;
  if (n % t != 0) el->guard = if_begin(e, spv_val(b, SpvOpSLessThan, e->t_bool, 2, elem, spv_ci32(e, n)));
  if (width > 1) elem = spv_val(b, SpvOpIMul, e->t_i32, 2, elem, spv_ci32(e, width));
  ctx_of_elem(e, rank, dims, elem, c);
  c->aligned = width == 1;
  c->lin = elem;
  c->slot = s;
}

int64_t spv_layout_vec(spv_emitter_t* e, int64_t numel) {
  for (int i = 0; i < e->num_chunked; i++)
    if (e->chunked[i] == numel) return SPV_VEC;
  return 1;
}

/* The element loop of a tile in the chunked layout (spv_layout_vec: the
 * element count is a multiple of 4 * T): slot s is element
 * ((s / 4) * T + lid) * 4 + s % 4. */
static void eloop_begin_chunked(spv_emitter_t* e, int rank, const int64_t* dims, spv_eloop_t* el, spv_ctx_t* c) {
  spv_builder_t* b = &e->b;
  int64_t slots = spv_numel(rank, dims) / e->threads;
  memset(el, 0, sizeof *el);
  memset(c, 0, sizeof *c);
  el->looped = true;
  uint32_t s = spv_loop_begin(e, e->t_i32, spv_ci32(e, 0), spv_ci32(e, slots),
                              slots <= 16 ? (uint32_t)SpvLoopControlUnrollMask : (uint32_t)SpvLoopControlMaskNone,
                              &el->l);
  uint32_t i32 = e->t_i32;
  uint32_t chunk = spv_val(b, SpvOpIAdd, i32, 2, e->lid,
                           spv_val(b, SpvOpIMul, i32, 2, spv_val(b, SpvOpShiftRightArithmetic, i32, 2, s, spv_ci32(e, 2)),
                                   spv_ci32(e, e->threads)));
  uint32_t elem = spv_val(b, SpvOpIAdd, i32, 2, spv_val(b, SpvOpShiftLeftLogical, i32, 2, chunk, spv_ci32(e, 2)),
                          spv_val(b, SpvOpBitwiseAnd, i32, 2, s, spv_ci32(e, SPV_VEC - 1)));
  ctx_of_elem(e, rank, dims, elem, c);
  c->aligned = true;
  c->lin = elem;
  c->slot = s;
}

void spv_eloop_begin(spv_emitter_t* e, int rank, const int64_t* dims, spv_eloop_t* el, spv_ctx_t* c) {
  if (spv_layout_vec(e, spv_numel(rank, dims)) > 1) eloop_begin_chunked(e, rank, dims, el, c);
  else eloop_begin_chunks(e, rank, dims, 1, el, c);
}

void spv_eloop_end(spv_emitter_t* e, spv_eloop_t* el) {
  if (el->guard) if_end(e, el->guard);
  if (el->looped) spv_loop_end(e, &el->l, spv_ci32(e, 1));
}

/* ---- storage -------------------------------------------------------------- */

static int64_t ctype_bytes(xc_dtype_t t) { return t == XC_F64 || t == XC_I64 || t == XC_U64 ? 8 : 4; }

/* The f16 type, for work-group copies of cooperative-matrix operands. */
uint32_t spv_f16_type(spv_emitter_t* e) {
  if (!(e->t->features & SPV_FEATURE_FLOAT16)) spv_fail(e, XC_UNSUPPORTED, "the device lacks 16-bit floats");
  e->features |= SPV_FEATURE_FLOAT16;
  spv_capability(&e->b, SpvCapabilityFloat16);
  return spv_type(&e->b, SpvOpTypeFloat, 1, 16u);
}

/* Gives a materialized tile value its variable (once per pass). */
void spv_make_storage(spv_emitter_t* e, const xc_tiled_value_t* v) {
  spv_vinfo_t* i = spv_info(e, v);
  if (i->id) return;
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int64_t n = spv_numel(spv_value_dims(e, v, dims), dims);
  uint32_t ct = spv_ctype(e, v->type.dtype);
  i->kind = i->want_shared || i->half ? SPV_V_SHARED : SPV_V_PRIVATE;
  i->vec4 = i->kind == SPV_V_SHARED && i->want_vec4 && !i->half && ct == e->t_f32 && n % 4 == 0;
  if (i->half) {
    /* Rows padded by 16 bytes, so that the rows a fragment load reads start
     * in different banks. */
    i->pitch = dims[1] + 8;
    n = dims[0] * i->pitch;
    uint32_t arr = spv_type(&e->b, SpvOpTypeArray, 2, spv_f16_type(e), spv_cu32(e, (uint32_t)n));
    i->id = spv_id(&e->b);
    spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassWorkgroup, arr), i->id,
           (uint32_t)SpvStorageClassWorkgroup);
    e->shared_bytes += n * 2;
  } else if (i->kind == SPV_V_PRIVATE) {
    int64_t slots = (n + e->threads - 1) / e->threads;
    i->id = spv_fvar(e, spv_type(&e->b, SpvOpTypeArray, 2, ct, spv_cu32(e, (uint32_t)slots)));
  } else {
    /* As 4-element vectors where a blocked dot reads rows of it four at a
     * time (spirv_emit_dot.c); elements are then components. */
    uint32_t elem = i->vec4 ? spv_type(&e->b, SpvOpTypeVector, 2, ct, 4u) : ct;
    uint32_t arr = spv_type(&e->b, SpvOpTypeArray, 2, elem, spv_cu32(e, (uint32_t)(i->vec4 ? n / 4 : n)));
    i->id = spv_id(&e->b);
    spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassWorkgroup, arr), i->id,
           (uint32_t)SpvStorageClassWorkgroup);
    e->shared_bytes += n * ctype_bytes(v->type.dtype);
  }
  char name[48];
  snprintf(name, sizeof name, "%s_v%d", i->kind == SPV_V_SHARED ? "wg" : "tile", v->id);
  spv_name(&e->b, i->id, name);
}

static uint32_t lin_of(spv_emitter_t* e, const spv_ctx_t* c) {
  if (c->aligned) return c->lin;
  uint32_t acc = c->idx[0];
  for (int d = 1; d < c->rank; d++) {
    if (c->dims[d] == 1) {
      acc = spv_val(&e->b, SpvOpIMul, e->t_i32, 2, acc, spv_ci32(e, 1));
      continue;
    }
    acc = spv_val(&e->b, SpvOpIAdd, e->t_i32, 2, spv_val(&e->b, SpvOpIMul, e->t_i32, 2, acc, spv_ci32(e, c->dims[d])),
                  c->idx[d]);
  }
  return acc;
}

static uint32_t storage_ptr(spv_emitter_t* e, const xc_tiled_value_t* v, const spv_ctx_t* c) {
  spv_vinfo_t* i = spv_info(e, v);
  uint32_t ct = i->half ? spv_f16_type(e) : spv_ctype(e, v->type.dtype);
  if (i->kind == SPV_V_PRIVATE)
    return spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassFunction, ct), 2, i->id, c->slot);
  uint32_t at = i->half ? spv_val(&e->b, SpvOpIAdd, e->t_i32, 2,
                                  spv_val(&e->b, SpvOpIMul, e->t_i32, 2, c->idx[0], spv_ci32(e, i->pitch)), c->idx[1])
                        : lin_of(e, c);
  if (i->vec4)
    return spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, ct), 3, i->id,
                   spv_val(&e->b, SpvOpShiftRightArithmetic, e->t_i32, 2, at, spv_ci32(e, 2)),
                   spv_val(&e->b, SpvOpBitwiseAnd, e->t_i32, 2, at, spv_ci32(e, 3)));
  return spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, ct), 2, i->id, at);
}

void spv_write_elem(spv_emitter_t* e, const xc_tiled_value_t* v, const spv_ctx_t* c, uint32_t val) {
  spv_make_storage(e, v);
  if (spv_info(e, v)->half) val = spv_val(&e->b, SpvOpFConvert, spv_f16_type(e), 1, val);
  spv_store(e, storage_ptr(e, v, c), val);
}

/* ---- reading values at an element ------------------------------------------ */

static uint32_t eval_at(spv_emitter_t* e, const xc_tiled_op_t* op, const spv_ctx_t* c);

uint32_t spv_read_value(spv_emitter_t* e, const xc_tiled_value_t* v, const spv_ctx_t* c) {
  if (v->type.rank == 0) {
    uint32_t id = e->vi[v->id].id;
    if (!id) spv_fail(e, XC_INTERNAL, "scalar value %d read before it was computed", v->id);
    return id ? id : spv_const_of(e, v->type.dtype, 0, 0);
  }
  spv_vinfo_t* i = spv_info(e, v);
  if (i->kind == SPV_V_INLINE) return eval_at(e, v->def, c);
  if (i->kind != SPV_V_PRIVATE && i->kind != SPV_V_SHARED) {
    spv_fail(e, XC_INTERNAL, "tile value %d read before it was computed", v->id);
    return spv_const_of(e, v->type.dtype, 0, 0);
  }
  if (i->kind == SPV_V_PRIVATE && !c->aligned) {
    /* another work-item's element: this value must live in work-group memory */
    if (!i->want_shared) e->redo = true;
    i->want_shared = true;
    return spv_const_of(e, v->type.dtype, 0, 0);
  }
  uint32_t ct = spv_ctype(e, v->type.dtype);
  if (i->half) return spv_val(&e->b, SpvOpFConvert, ct, 1, spv_load(e, spv_f16_type(e), storage_ptr(e, v, c)));
  return spv_load(e, ct, storage_ptr(e, v, c));
}

/* The element of operand x (broadcast into c's shape, numpy style) that the
 * element c reads. */
static void operand_ctx(spv_emitter_t* e, const spv_ctx_t* c, const xc_tiled_value_t* x, spv_ctx_t* out) {
  int64_t dx[XC_TILED_MAX_RANK] = {1, 1, 1};
  int xr = spv_value_dims(e, x, dx);
  if (xr == c->rank && memcmp(dx, c->dims, sizeof(int64_t) * (size_t)xr) == 0) {
    *out = *c;
    return;
  }
  memset(out, 0, sizeof *out);
  out->rank = xr;
  int shift = c->rank - xr;
  for (int j = 0; j < xr; j++) {
    out->dims[j] = dx[j];
    out->idx[j] = dx[j] == 1 ? spv_ci32(e, 0) : c->idx[shift + j];
  }
  out->aligned = c->aligned && spv_numel(xr, dx) == spv_numel(c->rank, c->dims);
  out->lin = c->lin;
  out->slot = c->slot;
}

uint32_t spv_read_operand(spv_emitter_t* e, const xc_tiled_value_t* x, const spv_ctx_t* c) {
  spv_ctx_t xc;
  operand_ctx(e, c, x, &xc);
  return spv_read_value(e, x, &xc);
}

static bool mask_always_true(spv_emitter_t* e, const xc_tiled_value_t* m) {
  return e->ranges && e->ranges[m->id].known && e->ranges[m->id].lo == 1 && e->ranges[m->id].hi == 1;
}

/* A pointer to element `offset` of a memref (a kernel buffer or a
 * work-group allocation) and the type it points to. */
static uint32_t mem_ptr(spv_emitter_t* e, const xc_tiled_value_t* mem, uint32_t offset, uint32_t* out_type) {
  spv_vinfo_t* i = spv_info(e, mem);
  xc_dtype_t t = mem->type.dtype;
  if (i->global) {
    *out_type = spv_stype(e, t);
    return spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassStorageBuffer, *out_type), 3, i->id,
                   spv_ci32(e, 0), offset);
  }
  *out_type = spv_ctype(e, t);
  return spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassWorkgroup, *out_type), 2, i->id, offset);
}

static uint32_t mem_load(spv_emitter_t* e, const xc_tiled_value_t* mem, uint32_t offset) {
  uint32_t ty;
  uint32_t p = mem_ptr(e, mem, offset, &ty);
  uint32_t v = spv_load(e, ty, p);
  return spv_info(e, mem)->global ? spv_from_storage(e, mem->type.dtype, v) : v;
}

static void mem_store(spv_emitter_t* e, const xc_tiled_value_t* mem, uint32_t offset, uint32_t v) {
  uint32_t ty;
  if (spv_info(e, mem)->global) v = spv_to_storage(e, mem->type.dtype, v);
  uint32_t p = mem_ptr(e, mem, offset, &ty);
  spv_store(e, p, v);
}

static uint32_t load_at(spv_emitter_t* e, const xc_tiled_op_t* op, const spv_ctx_t* c) {
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* mask = op->num_operands > 2 ? op->operands[2] : NULL;
  const xc_tiled_value_t* other = op->num_operands > 3 ? op->operands[3] : NULL;
  xc_dtype_t t = op->results[0]->type.dtype;
  uint32_t off = spv_read_operand(e, op->operands[1], c);
  if (!mask || mask_always_true(e, mask)) return mem_load(e, mem, off);
  uint32_t ct = spv_ctype(e, t);
  uint32_t var = spv_fvar(e, ct);
  spv_store(e, var, other ? spv_read_operand(e, other, c) : spv_const_of(e, t, 0, 0));
  uint32_t merge = if_begin(e, spv_read_operand(e, mask, c));
  spv_store(e, var, mem_load(e, mem, off));
  if_end(e, merge);
  return spv_load(e, ct, var);
}

static uint32_t reduce_at(spv_emitter_t* e, const xc_tiled_op_t* op, const spv_ctx_t* c) {
  const xc_tiled_value_t* x = op->operands[0];
  int axis = (int)op->axis;
  spv_ctx_t xc;
  memset(&xc, 0, sizeof xc);
  xc.rank = spv_value_dims(e, x, xc.dims);
  for (int i = 0, j = 0; i < xc.rank; i++)
    if (i != axis) xc.idx[i] = c->idx[j++];
  int64_t len = xc.dims[axis];
  xc.aligned = len == 1 && c->aligned;
  xc.lin = c->lin;
  xc.slot = c->slot;
  xc.idx[axis] = spv_ci32(e, 0);
  xc_dtype_t t = x->type.dtype;
  uint32_t first = spv_read_value(e, x, &xc);
  if (len == 1) return first;
  uint32_t ct = spv_ctype(e, t);
  uint32_t acc = spv_fvar(e, ct);
  spv_store(e, acc, first);
  spv_loop_t l;
  xc.idx[axis] = spv_loop_begin(e, e->t_i32, spv_ci32(e, 1), spv_ci32(e, len), SpvLoopControlMaskNone, &l);
  xc.aligned = false;
  uint32_t v = spv_read_value(e, x, &xc);
  spv_store(e, acc, spv_reduce_combine(e, (xc_tiled_reduce_kind_t)op->reduce, t, spv_load(e, ct, acc), v));
  spv_loop_end(e, &l, spv_ci32(e, 1));
  return spv_load(e, ct, acc);
}

static uint32_t dot_at(spv_emitter_t* e, const xc_tiled_op_t* op, const spv_ctx_t* c) {
  const xc_tiled_value_t *a = op->operands[0], *bv = op->operands[1], *acc = op->operands[2];
  xc_dtype_t ta = a->type.dtype, tb = bv->type.dtype, tr = op->results[0]->type.dtype;
  uint32_t ct = spv_ctype(e, tr);
  spv_ctx_t ac, bc;
  memset(&ac, 0, sizeof ac);
  memset(&bc, 0, sizeof bc);
  spv_value_dims(e, a, ac.dims);
  spv_value_dims(e, bv, bc.dims);
  ac.rank = bc.rank = 2;
  int64_t kk = ac.dims[1];
  uint32_t sum = spv_fvar(e, ct);
  spv_store(e, sum, spv_read_operand(e, acc, c));
  spv_loop_t l;
  uint32_t k = spv_loop_begin(e, e->t_i32, spv_ci32(e, 0), spv_ci32(e, kk), SpvLoopControlMaskNone, &l);
  ac.idx[0] = c->idx[0];
  ac.idx[1] = k;
  bc.idx[0] = k;
  bc.idx[1] = c->idx[1];
  uint32_t av = spv_cast(e, ta, tr == XC_F16 || tr == XC_BF16 ? XC_F32 : tr, spv_read_value(e, a, &ac));
  uint32_t bw = spv_cast(e, tb, tr == XC_F16 || tr == XC_BF16 ? XC_F32 : tr, spv_read_value(e, bv, &bc));
  uint32_t p = spv_binary(e, XC_TOP_MUL, tr, av, bw);
  spv_store(e, sum, spv_binary(e, XC_TOP_ADD, tr, spv_load(e, ct, sum), p));
  spv_loop_end(e, &l, spv_ci32(e, 1));
  return spv_load(e, ct, sum);
}

/* Every element of v lies in [INT32_MIN + 1, INT32_MAX] (value ranges of the IR). */
static bool fits_i32(spv_emitter_t* e, const xc_tiled_value_t* v) {
  if (!e->ranges) return false;
  const xc_tiled_range_t* r = &e->ranges[v->id];
  return r->known && r->lo > INT32_MIN && r->hi <= INT32_MAX;
}

/* One element of the result of op (c in the result's shape). */
static uint32_t eval_at(spv_emitter_t* e, const xc_tiled_op_t* op, const spv_ctx_t* c) {
  const xc_tiled_value_t* r = op->results[0];
  xc_dtype_t t = r->type.dtype;
  switch (op->opcode) {
    case XC_TOP_CONST: return spv_const_of(e, t, op->f, op->i);
    case XC_TOP_ARANGE: return spv_val(&e->b, SpvOpSConvert, e->t_i64, 1, c->idx[0]);
    case XC_TOP_EXPAND_DIMS: {
      const xc_tiled_value_t* x = op->operands[0];
      spv_ctx_t xc = *c;
      xc.rank = spv_value_dims(e, x, xc.dims);
      for (int i = 0, j = 0; i < c->rank; i++)
        if (i != op->axis) xc.idx[j++] = c->idx[i];
      return spv_read_value(e, x, &xc);
    }
    case XC_TOP_BROADCAST: return spv_read_operand(e, op->operands[0], c);
    case XC_TOP_TRANS: {
      spv_ctx_t xc = *c;
      xc.dims[0] = c->dims[1];
      xc.dims[1] = c->dims[0];
      xc.idx[0] = c->idx[1];
      xc.idx[1] = c->idx[0];
      xc.aligned = c->aligned && (c->dims[0] == 1 || c->dims[1] == 1);
      return spv_read_value(e, op->operands[0], &xc);
    }
    case XC_TOP_CMP: {
      xc_dtype_t ot = op->operands[0]->type.dtype;
      return spv_compare(e, (xc_tiled_cmp_t)op->cmp, ot, spv_read_operand(e, op->operands[0], c),
                         spv_read_operand(e, op->operands[1], c));
    }
    case XC_TOP_SELECT: {
      uint32_t cond = spv_read_operand(e, op->operands[0], c);
      uint32_t a = spv_read_operand(e, op->operands[1], c), b = spv_read_operand(e, op->operands[2], c);
      return spv_val(&e->b, SpvOpSelect, spv_ctype(e, t), 3, cond, a, b);
    }
    case XC_TOP_CAST:
      return spv_cast(e, op->operands[0]->type.dtype, t, spv_read_operand(e, op->operands[0], c));
    case XC_TOP_LOAD: return load_at(e, op, c);
    case XC_TOP_REDUCE: return reduce_at(e, op, c);
    case XC_TOP_DOT: return dot_at(e, op, c);
    default: break;
  }
  if (is_unary(op->opcode)) return spv_unary(e, op->opcode, t, spv_read_operand(e, op->operands[0], c));
  if (is_binary(op->opcode)) {
    xc_dtype_t ot = op->operands[0]->type.dtype;
    uint32_t a = spv_read_operand(e, op->operands[0], c), b = spv_read_operand(e, op->operands[1], c);
    if ((op->opcode == XC_TOP_DIV || op->opcode == XC_TOP_REM) && ot == XC_I64 && fits_i32(e, op->operands[0]) &&
        fits_i32(e, op->operands[1])) {
      /* Index arithmetic: 32-bit division where both operands fit (a
       * 64-bit division is many instructions on GPUs). */
      uint32_t a32 = spv_val(&e->b, SpvOpSConvert, e->t_i32, 1, a), b32 = spv_val(&e->b, SpvOpSConvert, e->t_i32, 1, b);
      return spv_val(&e->b, SpvOpSConvert, e->t_i64, 1, spv_binary(e, op->opcode, XC_I32, a32, b32));
    }
    return spv_binary(e, op->opcode, ot, a, b);
  }
  spv_fail(e, XC_UNSUPPORTED, "op %d (%s) as an element value", op->id, spv_op_name(op->opcode));
  return spv_const_of(e, t, 0, 0);
}

/* ---- the value plan -------------------------------------------------------- */

/* Whether work-items must be ordered after each global store: a buffer is
 * loaded after being stored to (another work-item's element may be read:
 * scatters, in-place updates), stored by two ops, or stored in a loop
 * (a later store may hit an element another work-item wrote: duplicate
 * scatter indices, where the last write wins). counts: stores then loads
 * per parameter. */
static bool find_phased(const xc_tiled_block_t* blk, int* stores, int* loads, int np, bool in_loop) {
  bool phased = false;
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    const xc_tiled_value_t* mem = op->opcode == XC_TOP_STORE || op->opcode == XC_TOP_LOAD ? op->operands[0] : NULL;
    int p = mem ? mem->param : -1;
    /* The index-error record is never read by the kernel and any failing
     * lane's words will do: its stores need no ordering. */
    if (mem && mem->name && strcmp(mem->name, XC_INDEX_ERROR_PARAM) == 0) p = -1;
    if (p >= 0 && p < np) {
      if (op->opcode == XC_TOP_STORE) {
        stores[p]++;
        if (in_loop || stores[p] > 1) phased = true;
      } else {
        loads[p]++;
      }
    }
    if (op->body && find_phased(op->body, stores, loads, np, true)) phased = true;
  }
  return phased;
}

static void count_uses(const xc_tiled_block_t* blk, spv_use_t* uses) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    for (int j = 0; j < op->num_operands; j++) {
      const xc_tiled_value_t* v = op->operands[j];
      if (!v) continue;
      uses[v->id].count++;
      uses[v->id].block = blk;
      uses[v->id].user = op;
    }
    if (op->body) count_uses(op->body, uses);
  }
}

static bool pure_tile(spv_emitter_t* e, const xc_tiled_value_t* v) {
  return v->type.rank == 0 || (e->vi[v->id].kind == SPV_V_INLINE && e->vi[v->id].pure);
}

/* Kinds of the values of blk (operands before users). */
static void plan_block(spv_emitter_t* e, const xc_tiled_block_t* blk, const spv_use_t* uses) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    for (int r = 0; r < op->num_results; r++) {
      const xc_tiled_value_t* v = op->results[r];
      spv_vinfo_t* vi = &e->vi[v->id];
      vi->group = -1;
      if (v->type.kind == XC_TILED_MEMREF) {
        vi->kind = SPV_V_MEMREF;
      } else if (v->type.rank == 0) {
        vi->kind = SPV_V_SCALAR;
      } else if (op->opcode == XC_TOP_CONST || op->opcode == XC_TOP_ARANGE) {
        vi->kind = SPV_V_INLINE;
        vi->pure = true;
      } else if (op->opcode == XC_TOP_EXPAND_DIMS || op->opcode == XC_TOP_BROADCAST || op->opcode == XC_TOP_TRANS ||
                 is_elementwise(op->opcode)) {
        bool pure = true;
        for (int j = 0; j < op->num_operands; j++)
          if (op->operands[j] && !pure_tile(e, op->operands[j])) pure = false;
        bool view = !is_elementwise(op->opcode);
        const spv_use_t* u = &uses[v->id];
        bool single = u->count == 0 || (u->count == 1 && u->block == blk && u->user->opcode != XC_TOP_FOR);
        vi->kind = pure || view || single ? SPV_V_INLINE : SPV_V_NONE;
        vi->pure = pure;
      } else {
        vi->kind = SPV_V_NONE; /* materialized: PRIVATE or SHARED when emitted */
      }
    }
    if (op->opcode == XC_TOP_FOR) {
      const xc_tiled_block_t* body = op->body;
      e->vi[body->args[0]->id].kind = SPV_V_SCALAR;
      e->vi[body->args[0]->id].group = -1;
      for (int c = 0; c < op->num_results; c++) {
        const xc_tiled_value_t *arg = body->args[1 + c], *res = op->results[c];
        e->vi[arg->id].group = -1;
        e->vi[arg->id].kind = arg->type.rank == 0 ? SPV_V_SCALAR : SPV_V_NONE;
        if (res->type.rank > 0) {
          e->vi[res->id].kind = SPV_V_NONE;
          e->vi[res->id].group = arg->id;
          /* a flag raised on the result belongs to the shared storage */
          if (e->vi[res->id].want_shared) e->vi[arg->id].want_shared = true;
        }
      }
      plan_block(e, body, uses);
      spv_coop_plan(e, op, uses);
    }
  }
}

/* ---- ops ------------------------------------------------------------------- */

static void emit_block(spv_emitter_t* e, const xc_tiled_block_t* blk);

/* ---- vector loads ---------------------------------------------------------- */

static bool is_int(xc_dtype_t t) {
  return t == XC_I8 || t == XC_I16 || t == XC_I32 || t == XC_I64 || t == XC_U8 || t == XC_U16 || t == XC_U32 ||
         t == XC_U64;
}

static int64_t storage_bytes(xc_dtype_t t) {
  switch (t) {
    case XC_F64: case XC_I64: case XC_U64: return 8;
    case XC_F32: case XC_I32: case XC_U32: return 4;
    case XC_F16: case XC_BF16: case XC_I16: case XC_U16: return 2;
    default: return 1;
  }
}

static bool decorate_once(spv_emitter_t* e, uint32_t id);

/* The axis of x (broadcast numpy-style into a value of `rank` dims) that
 * `axis` reads; -1 when x is broadcast along it. */
static int map_axis(spv_emitter_t* e, const xc_tiled_value_t* x, int rank, int axis) {
  int64_t d[XC_TILED_MAX_RANK] = {1, 1, 1};
  int xr = spv_value_dims(e, x, d);
  int a = axis - (rank - xr);
  return a < 0 || d[a] == 1 ? -1 : a;
}

/* v(..., i + 1, ...) - v(..., i, ...) along `axis` as a constant: true and
 * *stride when the value is affine along the axis with a known step (0:
 * uniform along it, for any type), false when not known. */
static bool affine_along(spv_emitter_t* e, const xc_tiled_value_t* v, int axis, int64_t* stride, int depth) {
  *stride = 0;
  if (v->type.rank == 0 || axis < 0) return true;
  int64_t d[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rank = spv_value_dims(e, v, d);
  if (d[axis] == 1) return true;
  const xc_tiled_op_t* op = v->def;
  if (!op || depth > 24) return false;
  switch (op->opcode) {
    case XC_TOP_CONST: return true;
    case XC_TOP_ARANGE: *stride = 1; return true;
    case XC_TOP_EXPAND_DIMS:
      if (axis == op->axis) return true;
      return affine_along(e, op->operands[0], axis < op->axis ? axis : axis - 1, stride, depth + 1);
    case XC_TOP_BROADCAST:
      return affine_along(e, op->operands[0], map_axis(e, op->operands[0], rank, axis), stride, depth + 1);
    case XC_TOP_CAST:
      if (!is_int(op->operands[0]->type.dtype) || !is_int(v->type.dtype)) break;
      return affine_along(e, op->operands[0], axis, stride, depth + 1);
    default: break;
  }
  if (op->num_operands > 3 || !(is_elementwise(op->opcode))) return false;
  int64_t st[3] = {0, 0, 0};
  for (int j = 0; j < op->num_operands; j++) {
    const xc_tiled_value_t* x = op->operands[j];
    if (!affine_along(e, x, map_axis(e, x, rank, axis), &st[j], depth + 1)) return false;
  }
  if (st[0] == 0 && st[1] == 0 && st[2] == 0) return true; /* any elementwise op of uniform operands */
  if (!is_int(v->type.dtype)) return false;
  if (op->opcode == XC_TOP_ADD || op->opcode == XC_TOP_SUB) {
    *stride = op->opcode == XC_TOP_ADD ? st[0] + st[1] : st[0] - st[1];
    return true;
  }
  if (op->opcode == XC_TOP_MUL)
    for (int j = 0; j < 2; j++) {
      const xc_tiled_value_t* c = op->operands[j];
      if (st[j] == 0 && c->def && c->def->opcode == XC_TOP_CONST) {
        *stride = st[1 - j] * c->def->i;
        return true;
      }
    }
  return false;
}

/* The buffer of param `mem` as an array of 4-element vectors (one more
 * variable on the same binding). */
static uint32_t vec_view(spv_emitter_t* e, const xc_tiled_value_t* mem, uint32_t* out_vec_type) {
  spv_vinfo_t* i = spv_info(e, mem);
  uint32_t st = spv_stype(e, mem->type.dtype);
  uint32_t vt = spv_type(&e->b, SpvOpTypeVector, 2, st, (uint32_t)SPV_VEC);
  *out_vec_type = vt;
  if (i->vec_view) return i->vec_view;
  uint32_t rta = spv_type(&e->b, SpvOpTypeRuntimeArray, 1, vt);
  uint32_t sb = spv_type(&e->b, SpvOpTypeStruct, 1, rta);
  if (decorate_once(e, rta)) {
    spv_decorate(&e->b, rta, SpvDecorationArrayStride, 1, (uint32_t)(SPV_VEC * storage_bytes(mem->type.dtype)));
    spv_decorate(&e->b, sb, SpvDecorationBlock, 0);
    spv_member_decorate(&e->b, sb, 0, SpvDecorationOffset, 1, 0u);
  }
  i->vec_view = spv_id(&e->b);
  spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassStorageBuffer, sb), i->vec_view,
         (uint32_t)SpvStorageClassStorageBuffer);
  spv_decorate(&e->b, i->vec_view, SpvDecorationDescriptorSet, 1, 0u);
  spv_decorate(&e->b, i->vec_view, SpvDecorationBinding, 1, i->binding);
  spv_decorate(&e->b, i->vec_view, SpvDecorationNonWritable, 0);
  char name[96];
  snprintf(name, sizeof name, "%s_vec", mem->name ? mem->name : "buffer");
  spv_name(&e->b, i->vec_view, name);
  return i->vec_view;
}

/* A load into work-group memory four elements at a time, where the offsets
 * step by 1 along the last axis (proved from the IR), the mask does not
 * change along it and the last dim is a multiple of 4: each work-item takes
 * chunks of 4 and reads one vector where the chunk's first offset is a
 * multiple of 4 (checked as it runs), four elements otherwise. */
static bool load_vectorized(spv_emitter_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t *v = op->results[0], *mem = op->operands[0], *offs = op->operands[1];
  const xc_tiled_value_t* mask = op->num_operands > 2 ? op->operands[2] : NULL;
  const xc_tiled_value_t* other = op->num_operands > 3 ? op->operands[3] : NULL;
  if (mask && mask_always_true(e, mask)) mask = NULL;
  spv_vinfo_t* vi = spv_info(e, v);
  xc_dtype_t t = v->type.dtype;
  if (!e->k->schedule || e->k->schedule->vector < SPV_VEC) return false; /* the schedule decides */
  int64_t size = storage_bytes(t);
  if (vi->kind != SPV_V_SHARED || !spv_info(e, mem)->global || (size != 2 && size != 4) || mem->param < 0) return false;
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rank = spv_value_dims(e, v, dims);
  if (rank < 1 || dims[rank - 1] % SPV_VEC != 0) return false;
  int64_t step = 0;
  if (!affine_along(e, offs, map_axis(e, offs, rank, rank - 1), &step, 0) || step != 1) return false;
  if (mask && (!affine_along(e, mask, map_axis(e, mask, rank, rank - 1), &step, 0) || step != 0)) return false;
  if (other && (!affine_along(e, other, map_axis(e, other, rank, rank - 1), &step, 0) || step != 0)) return false;
  spv_builder_t* b = &e->b;
  spv_eloop_t el;
  spv_ctx_t c;
  eloop_begin_chunks(e, rank, dims, SPV_VEC, &el, &c);
  uint32_t elem = c.lin;
  uint32_t ct = spv_ctype(e, t);
  uint32_t vals[SPV_VEC];
  for (int j = 0; j < SPV_VEC; j++) vals[j] = spv_fvar(e, ct);
  uint32_t off = spv_read_operand(e, offs, &c);
  uint32_t m = 0;
  if (mask) {
    uint32_t fill = other ? spv_read_operand(e, other, &c) : spv_const_of(e, t, 0, 0);
    for (int j = 0; j < SPV_VEC; j++) spv_store(e, vals[j], fill);
    m = if_begin(e, spv_read_operand(e, mask, &c));
  }
  uint32_t vt;
  uint32_t view = vec_view(e, mem, &vt);
  uint32_t low = spv_val(b, SpvOpUConvert, e->t_u32, 1, off);
  uint32_t whole = spv_val(b, SpvOpIEqual, e->t_bool, 2, spv_val(b, SpvOpBitwiseAnd, e->t_u32, 2, low, spv_cu32(e, 3)),
                           spv_cu32(e, 0));
  uint32_t merge = spv_id(b), yes = spv_id(b), no = spv_id(b);
  spv_op(b, SPV_SEC_CODE, SpvOpSelectionMerge, 2, merge, (uint32_t)SpvSelectionControlMaskNone);
  spv_op(b, SPV_SEC_CODE, SpvOpBranchConditional, 3, whole, yes, no);
  label(e, yes);
  uint32_t at = spv_val(b, SpvOpShiftRightArithmetic, e->t_i64, 2, off, spv_ci64(e, 2));
  uint32_t vec = spv_load(e, vt, spv_val(b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassStorageBuffer, vt), 3, view,
                                     spv_ci32(e, 0), at));
  uint32_t st = spv_stype(e, t);
  for (int j = 0; j < SPV_VEC; j++)
    spv_store(e, vals[j], spv_from_storage(e, t, spv_val(b, SpvOpCompositeExtract, st, 2, vec, (uint32_t)j)));
  branch(e, merge);
  label(e, no);
  for (int j = 0; j < SPV_VEC; j++)
    spv_store(e, vals[j], mem_load(e, mem, spv_val(b, SpvOpIAdd, e->t_i64, 2, off, spv_ci64(e, j))));
  branch(e, merge);
  label(e, merge);
  if (m) if_end(e, m);
  for (int j = 0; j < SPV_VEC; j++) {
    spv_ctx_t cj = c;
    cj.idx[rank - 1] = spv_val(b, SpvOpIAdd, e->t_i32, 2, c.idx[rank - 1], spv_ci32(e, j));
    cj.lin = spv_val(b, SpvOpIAdd, e->t_i32, 2, elem, spv_ci32(e, j));
    spv_write_elem(e, v, &cj, spv_load(e, ct, vals[j]));
  }
  spv_eloop_end(e, &el);
  return true;
}

/* Computes a materialized tile value element by element into its storage. */
static void materialize(spv_emitter_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* v = op->results[0];
  spv_make_storage(e, v);
  bool shared = spv_info(e, v)->kind == SPV_V_SHARED;
  if (shared) spv_barrier(e); /* work-items may still read the previous contents */
  if (op->opcode == XC_TOP_LOAD && load_vectorized(e, op)) {
    spv_barrier(e);
    return;
  }
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rank = spv_value_dims(e, v, dims);
  spv_eloop_t el;
  spv_ctx_t c;
  spv_eloop_begin(e, rank, dims, &el, &c);
  spv_write_elem(e, v, &c, eval_at(e, op, &c));
  spv_eloop_end(e, &el);
  if (shared) spv_barrier(e);
}

/* Work-items per output of a reduction spread over the work-group: G lanes
 * (a power of two) per output when outputs are fewer than work-items and
 * the reduced axis is long enough; 1: each work-item reduces its outputs
 * alone (reduce_at). */
static int64_t reduce_group(spv_emitter_t* e, const xc_tiled_op_t* op) {
  int64_t dx[XC_TILED_MAX_RANK] = {1, 1, 1};
  int xr = spv_value_dims(e, op->operands[0], dx);
  int64_t len = dx[op->axis], outs = spv_numel(xr, dx) / (len > 0 ? len : 1);
  int64_t g = 1;
  while (g * 2 * outs <= e->threads && g * 2 <= len) g *= 2;
  return g >= 4 ? g : 1;
}

/* The subgroup reduction of v over clusters of `cluster` lanes (0: the
 * whole subgroup), when the device has it for this kind and dtype; 0 when
 * not (the tree in work-group memory does it). Float max/min stay on the
 * tree: subgroup FMax/FMin leave NaN to the implementation. */
static uint32_t subgroup_reduce(spv_emitter_t* e, xc_tiled_reduce_kind_t kind, xc_dtype_t t, uint32_t v,
                                int64_t cluster) {
  if (!(e->t->features & SPV_FEATURE_SUBGROUP_ARITH)) return 0;
  if (cluster && !(e->t->features & SPV_FEATURE_SUBGROUP_CLUSTERED)) return 0;
  SpvOp op;
  bool is_float = t == XC_F32, is_signed = t == XC_I32;
  if (t != XC_F32 && t != XC_I32 && t != XC_U32) return 0;
  switch (kind) {
    case XC_REDUCE_SUM: op = is_float ? SpvOpGroupNonUniformFAdd : SpvOpGroupNonUniformIAdd; break;
    case XC_REDUCE_PROD: op = is_float ? SpvOpGroupNonUniformFMul : SpvOpGroupNonUniformIMul; break;
    case XC_REDUCE_MAX:
      if (is_float) return 0;
      op = is_signed ? SpvOpGroupNonUniformSMax : SpvOpGroupNonUniformUMax;
      break;
    case XC_REDUCE_MIN:
      if (is_float) return 0;
      op = is_signed ? SpvOpGroupNonUniformSMin : SpvOpGroupNonUniformUMin;
      break;
    default: return 0;
  }
  e->features |= SPV_FEATURE_SUBGROUP_ARITH;
  spv_capability(&e->b, SpvCapabilityGroupNonUniform);
  spv_capability(&e->b, SpvCapabilityGroupNonUniformArithmetic);
  uint32_t ty = spv_ctype(e, t), scope = spv_cu32(e, SpvScopeSubgroup);
  if (!cluster) return spv_val(&e->b, op, ty, 3, scope, (uint32_t)SpvGroupOperationReduce, v);
  e->features |= SPV_FEATURE_SUBGROUP_CLUSTERED;
  spv_capability(&e->b, SpvCapabilityGroupNonUniformClustered);
  return spv_val(&e->b, op, ty, 4, scope, (uint32_t)SpvGroupOperationClusteredReduce, v,
                 spv_cu32(e, (uint32_t)cluster));
}

/* A reduction with G work-items per output: lane w = o * G + j folds
 * elements j, j + G, ... of output o, then the G partials are combined: in
 * the subgroup where the device has subgroup arithmetic (G lanes of one
 * subgroup, or whole subgroups), and by a tree in work-group memory (a
 * barrier per step) over what remains. With one output and G = T the
 * elements a lane folds are its own slots, so the input is read where it
 * lives. The result goes to its storage (or, rank 0, to every work-item as
 * a uniform scalar). */
static uint32_t reduce_parallel(spv_emitter_t* e, const xc_tiled_op_t* op, int64_t g) {
  spv_builder_t* b = &e->b;
  const xc_tiled_value_t *x = op->operands[0], *r = op->results[0];
  xc_dtype_t t = x->type.dtype;
  uint32_t ct = spv_ctype(e, t);
  int axis = (int)op->axis;
  spv_ctx_t xc;
  memset(&xc, 0, sizeof xc);
  xc.rank = spv_value_dims(e, x, xc.dims);
  int64_t len = xc.dims[axis];
  int64_t rdims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rr = spv_value_dims(e, r, rdims);
  int64_t outs = spv_numel(rr, rdims);
  uint32_t arr = spv_type(b, SpvOpTypeArray, 2, ct, spv_cu32(e, (uint32_t)(outs * g)));
  uint32_t scratch = spv_id(b);
  spv_op(b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassWorkgroup, arr), scratch,
         (uint32_t)SpvStorageClassWorkgroup);
  spv_name(b, scratch, "reduce_scratch");
  e->shared_bytes += outs * g * ctype_bytes(t);
  uint32_t pw = spv_ptr(e, SpvStorageClassWorkgroup, ct);
  spv_barrier(e); /* the scratch and the result's storage may still be read */
  uint32_t active = spv_val(b, SpvOpSLessThan, e->t_bool, 2, e->lid, spv_ci32(e, outs * g));
  uint32_t m = if_begin(e, active);
  uint32_t o = spv_val(b, SpvOpSDiv, e->t_i32, 2, e->lid, spv_ci32(e, g));
  uint32_t j = spv_val(b, SpvOpSRem, e->t_i32, 2, e->lid, spv_ci32(e, g));
  /* the output's multi-index, with the reduced axis left out */
  uint32_t oidx[XC_TILED_MAX_RANK];
  int64_t stride = 1;
  for (int d = rr - 1; d >= 0; d--) {
    uint32_t q = stride == 1 ? o : spv_val(b, SpvOpSDiv, e->t_i32, 2, o, spv_ci32(e, stride));
    oidx[d] = d == 0 ? q : spv_val(b, SpvOpSRem, e->t_i32, 2, q, spv_ci32(e, rdims[d]));
    stride *= rdims[d];
  }
  for (int i = 0, k = 0; i < xc.rank; i++)
    if (i != axis) xc.idx[i] = oidx[k++];
  /* own slots: element j + g * s is slot s of lane j (the default layout) */
  bool own = outs == 1 && g == e->threads && spv_layout_vec(e, len) == 1;
  xc.aligned = own;
  xc.idx[axis] = j;
  xc.lin = j;
  xc.slot = spv_ci32(e, 0);
  uint32_t acc = spv_fvar(e, ct);
  spv_store(e, acc, spv_read_value(e, x, &xc)); /* j < G <= len: element j exists */
  spv_loop_t l;
  uint32_t guard = 0;
  if (own) {
    /* over slots, constant bounds: unrolled, the private array stays in
     * registers (a varying index would put it in memory) */
    int64_t slots = (len + g - 1) / g;
    xc.slot = spv_loop_begin(e, e->t_i32, spv_ci32(e, 1), spv_ci32(e, slots),
                             slots <= 32 ? (uint32_t)SpvLoopControlUnrollMask : (uint32_t)SpvLoopControlMaskNone, &l);
    xc.idx[axis] = spv_val(b, SpvOpIAdd, e->t_i32, 2, j, spv_val(b, SpvOpIMul, e->t_i32, 2, xc.slot, spv_ci32(e, g)));
    if (len % g) guard = if_begin(e, spv_val(b, SpvOpSLessThan, e->t_bool, 2, xc.idx[axis], spv_ci32(e, len)));
  } else {
    xc.idx[axis] = spv_loop_begin(e, e->t_i32, spv_val(b, SpvOpIAdd, e->t_i32, 2, j, spv_ci32(e, g)), spv_ci32(e, len),
                                  SpvLoopControlMaskNone, &l);
  }
  xc.lin = xc.idx[axis];
  uint32_t v = spv_read_value(e, x, &xc);
  spv_store(e, acc, spv_reduce_combine(e, (xc_tiled_reduce_kind_t)op->reduce, t, spv_load(e, ct, acc), v));
  if (guard) if_end(e, guard);
  spv_loop_end(e, &l, own ? spv_ci32(e, 1) : spv_ci32(e, g));
  uint32_t part = spv_load(e, ct, acc);
  /* In the subgroup: G lanes of one subgroup (clustered), or each whole
   * subgroup of a group of several; the tree then starts at that span. */
  int64_t simd = e->t->caps->simd_width, span = 1;
  uint32_t red = 0;
  if (simd > 1 && (simd & (simd - 1)) == 0 && e->threads % simd == 0) {
    if (g <= simd) {
      red = subgroup_reduce(e, (xc_tiled_reduce_kind_t)op->reduce, t, part, g);
      if (red) span = g;
    } else {
      red = subgroup_reduce(e, (xc_tiled_reduce_kind_t)op->reduce, t, part, 0);
      if (red) span = simd;
    }
  }
  spv_store(e, spv_val(b, SpvOpAccessChain, pw, 2, scratch, e->lid), red ? red : part);
  if_end(e, m);
  for (int64_t step = g / 2; step >= span; step /= 2) {
    spv_barrier(e);
    uint32_t lo = spv_val(b, SpvOpLogicalAnd, e->t_bool, 2, active,
                          spv_val(b, SpvOpSLessThan, e->t_bool, 2,
                                  spv_val(b, SpvOpSRem, e->t_i32, 2, e->lid, spv_ci32(e, g)), spv_ci32(e, step)));
    uint32_t mm = if_begin(e, lo);
    uint32_t p0 = spv_val(b, SpvOpAccessChain, pw, 2, scratch, e->lid);
    uint32_t p1 = spv_val(b, SpvOpAccessChain, pw, 2, scratch, spv_val(b, SpvOpIAdd, e->t_i32, 2, e->lid,
                                                                    spv_ci32(e, step)));
    spv_store(e, p0, spv_reduce_combine(e, (xc_tiled_reduce_kind_t)op->reduce, t, spv_load(e, ct, p0), spv_load(e, ct, p1)));
    if_end(e, mm);
  }
  spv_barrier(e);
  if (rr == 0) return spv_load(e, ct, spv_val(b, SpvOpAccessChain, pw, 2, scratch, spv_ci32(e, 0)));
  spv_make_storage(e, r);
  bool shared = spv_info(e, r)->kind == SPV_V_SHARED;
  spv_eloop_t el;
  spv_ctx_t c;
  spv_eloop_begin(e, rr, rdims, &el, &c);
  uint32_t at = spv_val(b, SpvOpIMul, e->t_i32, 2, c.lin, spv_ci32(e, g));
  spv_write_elem(e, r, &c, spv_load(e, ct, spv_val(b, SpvOpAccessChain, pw, 2, scratch, at)));
  spv_eloop_end(e, &el);
  if (shared) spv_barrier(e);
  return 0;
}

static void emit_store(spv_emitter_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t *mem = op->operands[0], *offs = op->operands[1], *val = op->operands[2];
  const xc_tiled_value_t* mask = op->num_operands > 3 ? op->operands[3] : NULL;
  if (mask && mask_always_true(e, mask)) mask = NULL;
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rank = spv_value_dims(e, offs, dims);
  spv_eloop_t el;
  spv_ctx_t c;
  if (rank == 0) {
    /* A scalar store: every work-item has the value and writes it, so that
     * each one's later loads of the element see it in program order (the
     * IR orders scalar memory accesses without barriers). */
    memset(&c, 0, sizeof c);
    c.aligned = true;
  } else {
    spv_eloop_begin(e, rank, dims, &el, &c);
  }
  uint32_t off = spv_read_value(e, offs, &c);
  uint32_t m = mask ? if_begin(e, spv_read_operand(e, mask, &c)) : 0;
  mem_store(e, mem, off, spv_read_operand(e, val, &c));
  if (m) if_end(e, m);
  if (rank > 0) spv_eloop_end(e, &el);
  /* A later load may read what another work-item stored: make it visible. */
  if (spv_info(e, mem)->global && e->phased) spv_barrier(e);
}

static void emit_alloc(spv_emitter_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* v = op->results[0];
  spv_vinfo_t* i = spv_info(e, v);
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int64_t n = spv_numel(spv_value_dims(e, v, dims), dims);
  uint32_t arr = spv_type(&e->b, SpvOpTypeArray, 2, spv_ctype(e, v->type.dtype), spv_cu32(e, (uint32_t)n));
  i->id = spv_id(&e->b);
  i->global = false;
  spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassWorkgroup, arr), i->id,
         (uint32_t)SpvStorageClassWorkgroup);
  e->shared_bytes += n * ctype_bytes(v->type.dtype);
  char name[48];
  snprintf(name, sizeof name, "alloc_v%d", v->id);
  spv_name(&e->b, i->id, name);
}

/* Copies tile src (read at c, aligned) into dst's storage. */
static void copy_tile(spv_emitter_t* e, const xc_tiled_value_t* dst, const xc_tiled_value_t* src, uint32_t src_var) {
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
  int rank = spv_value_dims(e, dst, dims);
  spv_eloop_t el;
  spv_ctx_t c;
  spv_eloop_begin(e, rank, dims, &el, &c);
  uint32_t v;
  if (src_var) {
    uint32_t ct = spv_ctype(e, dst->type.dtype);
    v = spv_load(e, ct, spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassFunction, ct), 2, src_var, c.slot));
  } else {
    v = spv_read_operand(e, src, &c);
  }
  spv_write_elem(e, dst, &c, v);
  spv_eloop_end(e, &el);
}

static void emit_for(spv_emitter_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_block_t* body = op->body;
  int n = op->num_results;
  uint32_t lb = spv_read_value(e, op->operands[0], NULL), ub = spv_read_value(e, op->operands[1], NULL);
  uint32_t step = spv_read_value(e, op->operands[2], NULL);
  bool any_shared = false;
  for (int i = 0; i < n; i++) {
    const xc_tiled_value_t *arg = body->args[1 + i], *init = op->operands[3 + i];
    spv_vinfo_t* ai = &e->vi[arg->id];
    if (arg->type.rank == 0) {
      ai->var = spv_fvar(e, spv_ctype(e, arg->type.dtype));
      spv_store(e, ai->var, spv_read_value(e, init, NULL));
    } else if (ai->kind == SPV_V_COOP) {
      spv_coop_t* cp = spv_coop_of_arg(e, arg);
      if (cp) spv_coop_init(e, cp);
    } else {
      spv_make_storage(e, arg);
      if (ai->kind == SPV_V_SHARED) any_shared = true;
    }
  }
  if (any_shared) spv_barrier(e);
  for (int i = 0; i < n; i++)
    if (body->args[1 + i]->type.rank > 0 && e->vi[body->args[1 + i]->id].kind != SPV_V_COOP)
      copy_tile(e, body->args[1 + i], op->operands[3 + i], 0);
  if (any_shared) spv_barrier(e);

  spv_loop_t l;
  uint32_t iv = spv_loop_begin(e, e->t_i64, lb, ub, SpvLoopControlMaskNone, &l);
  e->vi[body->args[0]->id].id = iv;
  for (int i = 0; i < n; i++) {
    const xc_tiled_value_t* arg = body->args[1 + i];
    if (arg->type.rank == 0) e->vi[arg->id].id = spv_load(e, spv_ctype(e, arg->type.dtype), e->vi[arg->id].var);
  }
  bool saved = e->in_loop;
  e->in_loop = true;
  emit_block(e, body);
  const xc_tiled_op_t* y = body->num_ops > 0 ? body->ops[body->num_ops - 1] : NULL;
  if (!y || y->opcode != XC_TOP_YIELD || y->num_operands != n) {
    spv_fail(e, XC_INTERNAL, "for op %d: its body does not end with a yield of %d values", op->id, n);
    return;
  }
  /* Phase 1: yielded values that are not fresh storage of this iteration
   * (views, carried arguments, values from outside) go to temporaries, so
   * that phase 2 overwriting one carried tile cannot change another's. */
  uint32_t temps[64] = {0}, scalars[64] = {0};
  if (n > 64) {
    spv_fail(e, XC_UNSUPPORTED, "for op %d carries %d values", op->id, n);
    return;
  }
  for (int i = 0; i < n; i++) {
    const xc_tiled_value_t *arg = body->args[1 + i], *yv = y->operands[i];
    if (arg->type.rank == 0) {
      scalars[i] = spv_read_value(e, yv, NULL);
      continue;
    }
    if (yv == arg || e->vi[arg->id].kind == SPV_V_COOP) continue; /* updated in place */
    spv_vinfo_t* yi = spv_info(e, yv);
    bool fresh = (yi->kind == SPV_V_PRIVATE || yi->kind == SPV_V_SHARED) && yv->def && yv->def->parent == body &&
                 yv->def->opcode != XC_TOP_FOR;
    if (fresh) continue;
    int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1};
    int64_t cnt = spv_numel(spv_value_dims(e, arg, dims), dims);
    uint32_t ct = spv_ctype(e, arg->type.dtype);
    temps[i] = spv_fvar(e, spv_type(&e->b, SpvOpTypeArray, 2, ct,
                                spv_cu32(e, (uint32_t)((cnt + e->threads - 1) / e->threads))));
    int rank = spv_value_dims(e, arg, dims);
    spv_eloop_t el;
    spv_ctx_t c;
    spv_eloop_begin(e, rank, dims, &el, &c);
    uint32_t v = spv_read_operand(e, yv, &c);
    spv_store(e, spv_val(&e->b, SpvOpAccessChain, spv_ptr(e, SpvStorageClassFunction, ct), 2, temps[i], c.slot), v);
    spv_eloop_end(e, &el);
  }
  if (any_shared) spv_barrier(e);
  for (int i = 0; i < n; i++) {
    const xc_tiled_value_t *arg = body->args[1 + i], *yv = y->operands[i];
    if (arg->type.rank == 0) spv_store(e, e->vi[arg->id].var, scalars[i]);
    else if (yv != arg && e->vi[arg->id].kind != SPV_V_COOP) copy_tile(e, arg, yv, temps[i]);
  }
  if (any_shared) spv_barrier(e);
  e->in_loop = saved;
  spv_loop_end(e, &l, step);
  for (int i = 0; i < n; i++) {
    const xc_tiled_value_t *arg = body->args[1 + i], *res = op->results[i];
    if (res->type.rank == 0) e->vi[res->id].id = spv_load(e, spv_ctype(e, res->type.dtype), e->vi[arg->id].var);
    spv_coop_t* cp = e->vi[arg->id].kind == SPV_V_COOP ? spv_coop_of_arg(e, arg) : NULL;
    if (cp) spv_coop_spill(e, cp);
  }
}

static void emit_op(spv_emitter_t* e, const xc_tiled_op_t* op) {
  spv_op(&e->b, SPV_SEC_CODE, SpvOpLine, 3, e->file, (uint32_t)op->id, 0u);
  switch (op->opcode) {
    case XC_TOP_YIELD: return; /* emit_for handles it */
    case XC_TOP_FOR: emit_for(e, op); return;
    case XC_TOP_STORE: emit_store(e, op); return;
    case XC_TOP_ALLOC: emit_alloc(e, op); return;
    case XC_TOP_BARRIER: spv_barrier(e); return;
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS:
      if (op->axis < 0 || op->axis >= XC_TILED_MAX_GRID) {
        spv_fail(e, XC_INVALID_ARGUMENT, "op %d: grid axis %lld", op->id, (long long)op->axis);
        return;
      }
      e->vi[op->results[0]->id].id = op->opcode == XC_TOP_PROGRAM_ID ? e->pid[op->axis] : e->nprog[op->axis];
      return;
    case XC_TOP_KNOB:
      e->vi[op->results[0]->id].id = spv_ci64(e, e->knobs[op->axis]);
      return;
    default: break;
  }
  const xc_tiled_value_t* r = op->num_results == 1 ? op->results[0] : NULL;
  if (!r) {
    spv_fail(e, XC_UNSUPPORTED, "op %d (%s)", op->id, spv_op_name(op->opcode));
    return;
  }
  if (r->type.rank == 0) {
    int64_t g = op->opcode == XC_TOP_REDUCE ? reduce_group(e, op) : 1;
    if (g > 1) {
      e->vi[r->id].id = reduce_parallel(e, op, g);
      return;
    }
    spv_ctx_t c;
    memset(&c, 0, sizeof c);
    c.aligned = true;
    e->vi[r->id].id = eval_at(e, op, &c);
    return;
  }
  if (e->vi[r->id].kind == SPV_V_INLINE) return; /* computed where it is read */
  if (op->opcode == XC_TOP_DOT) {
    spv_coop_t* cp = spv_coop_of_dot(e, op);
    if (cp) {
      spv_coop_dot(e, cp);
      return;
    }
    const xc_tiled_mma_t* mma = spv_scheduled_mma(e, op);
    if (mma) {
      spv_fail(e, XC_UNSUPPORTED,
               "dot op %d: the schedule gives it %dx%dx%d cooperative matrices, but it does not accumulate into a "
               "for-carried tile",
               op->id, mma->m, mma->n, mma->k);
      return;
    }
  }
  if (op->opcode == XC_TOP_DOT && spv_dot_blocked(e, op)) return;
  if (op->opcode == XC_TOP_REDUCE) {
    int64_t g = reduce_group(e, op);
    if (g > 1) {
      reduce_parallel(e, op, g);
      return;
    }
  }
  materialize(e, op);
}

static void emit_block(spv_emitter_t* e, const xc_tiled_block_t* blk) {
  for (int i = 0; i < blk->num_ops && !e->err; i++) emit_op(e, blk->ops[i]);
}

/* ---- the module ------------------------------------------------------------ */

static void entry_name(const xc_tiled_kernel_t* k, char* out, size_t size) {
  const char* n = k->name ? k->name : "kernel";
  size_t j = (size_t)snprintf(out, size, "xk_");
  for (size_t i = 0; n[i] && j + 1 < size && j < 100; i++) {
    char ch = n[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    out[j++] = ok ? ch : '_';
  }
  out[j] = '\0';
}

static bool decorate_once(spv_emitter_t* e, uint32_t id) {
  for (int i = 0; i < e->num_decorated; i++)
    if (e->decorated[i] == id) return false;
  if (e->num_decorated < 64) e->decorated[e->num_decorated++] = id;
  return true;
}

static uint32_t input_builtin(spv_emitter_t* e, SpvBuiltIn which, const char* name) {
  uint32_t v3 = spv_type(&e->b, SpvOpTypeVector, 2, e->t_u32, 3u);
  uint32_t id = spv_id(&e->b);
  spv_op(&e->b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassInput, v3), id,
         (uint32_t)SpvStorageClassInput);
  spv_decorate(&e->b, id, SpvDecorationBuiltIn, 1, (uint32_t)which);
  spv_name(&e->b, id, name);
  return id;
}

static uint32_t u32_to_i64(spv_emitter_t* e, uint32_t x) {
  return spv_val(&e->b, SpvOpBitcast, e->t_i64, 1, spv_val(&e->b, SpvOpUConvert, spv_ctype(e, XC_U64), 1, x));
}

/* One pass over the kernel into e->b; e->vi keeps want_shared flags. */
static void emit_pass(spv_emitter_t* e, spv_kernel_info_t* out_info) {
  spv_builder_t* b = &e->b;
  const xc_tiled_kernel_t* k = e->k;
  spv_builder_init(b);
  e->redo = false;
  e->features = 0;
  e->shared_bytes = 0;
  e->num_decorated = 0;
  e->in_loop = false;
  e->v_sgid = 0;
  e->barrier_end = 0;
  for (int i = 0; i < k->num_values; i++) {
    e->vi[i].id = 0;
    e->vi[i].var = 0;
    e->vi[i].vec_view = 0;
    e->vi[i].vec4 = false;
  }
  spv_capability(b, SpvCapabilityShader);
  e->glsl = spv_id(b);
  spv_inst_str(b, SPV_SEC_IMPORTS, SpvOpExtInstImport, 1, &e->glsl, "GLSL.std.450", 0, NULL);
  spv_op(b, SPV_SEC_MODEL, SpvOpMemoryModel, 2, (uint32_t)SpvAddressingModelLogical, (uint32_t)SpvMemoryModelGLSL450);
  e->t_void = spv_type(b, SpvOpTypeVoid, 0);
  e->t_bool = spv_type(b, SpvOpTypeBool, 0);
  e->t_i32 = spv_type(b, SpvOpTypeInt, 2, 32u, 1u);
  e->t_u32 = spv_type(b, SpvOpTypeInt, 2, 32u, 0u);
  e->t_f32 = spv_type(b, SpvOpTypeFloat, 1, 32u);
  /* indices, program ids and scalars are i64 */
  if (!(e->t->features & SPV_FEATURE_INT64))
    spv_fail(e, XC_UNSUPPORTED, "the device lacks 64-bit integers (shaderInt64), which indices use");
  spv_capability(b, SpvCapabilityInt64);
  e->features |= SPV_FEATURE_INT64;
  e->t_i64 = spv_type(b, SpvOpTypeInt, 2, 64u, 1u);
  e->file = spv_id(b);
  spv_inst_str(b, SPV_SEC_DEBUG, SpvOpString, 1, &e->file, k->origin ? k->origin : (k->name ? k->name : "kernel"),
               0, NULL);
  spv_op(b, SPV_SEC_DEBUG, SpvOpSource, 2, (uint32_t)SpvSourceLanguageUnknown, 0u);

  /* interface */
  uint32_t v_lid = input_builtin(e, SpvBuiltInLocalInvocationId, "local_id");
  uint32_t v_wg = input_builtin(e, SpvBuiltInWorkgroupId, "workgroup_id");
  uint32_t v_nwg = input_builtin(e, SpvBuiltInNumWorkgroups, "num_workgroups");
  int nbuf = 0, nsc = 0;
  for (int i = 0; i < k->num_params; i++) {
    if (k->params[i]->type.kind == XC_TILED_MEMREF) nbuf++;
    else nsc++;
  }
  uint32_t members[4 + SPV_MAX_SCALARS];
  for (int i = 0; i < 4; i++) members[i] = e->t_u32;
  for (int i = 0; i < nsc && i < SPV_MAX_SCALARS; i++) members[4 + i] = e->t_i64;
  uint32_t pc_struct = spv_id(b);
  {
    uint32_t ops[1 + 4 + SPV_MAX_SCALARS];
    ops[0] = pc_struct;
    int nm = 4 + (nsc < SPV_MAX_SCALARS ? nsc : SPV_MAX_SCALARS);
    memcpy(ops + 1, members, sizeof(uint32_t) * (size_t)nm);
    spv_inst(b, SPV_SEC_GLOBALS, SpvOpTypeStruct, nm + 1, ops);
    spv_decorate(b, pc_struct, SpvDecorationBlock, 0);
    for (int m = 0; m < nm; m++)
      spv_member_decorate(b, pc_struct, (uint32_t)m, SpvDecorationOffset, 1,
                          (uint32_t)(m < 4 ? 4 * m : SPV_PUSH_SCALARS_OFFSET + 8 * (m - 4)));
    spv_name(b, pc_struct, "launch");
  }
  uint32_t v_pc = spv_id(b);
  spv_op(b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassPushConstant, pc_struct), v_pc,
         (uint32_t)SpvStorageClassPushConstant);
  int binding = 0;
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    spv_vinfo_t* pi = &e->vi[p->id];
    pi->group = -1;
    if (p->type.kind != XC_TILED_MEMREF) {
      pi->kind = SPV_V_SCALAR;
      continue;
    }
    pi->kind = SPV_V_MEMREF;
    pi->global = true;
    uint32_t st = spv_stype(e, p->type.dtype);
    uint32_t rta = spv_type(b, SpvOpTypeRuntimeArray, 1, st);
    uint32_t sb = spv_type(b, SpvOpTypeStruct, 1, rta);
    if (decorate_once(e, rta)) {
      int64_t size = storage_bytes(p->type.dtype);
      spv_decorate(b, rta, SpvDecorationArrayStride, 1, (uint32_t)size);
      spv_decorate(b, sb, SpvDecorationBlock, 0);
      spv_member_decorate(b, sb, 0, SpvDecorationOffset, 1, 0u);
    }
    pi->id = spv_id(b);
    spv_op(b, SPV_SEC_GLOBALS, SpvOpVariable, 3, spv_ptr(e, SpvStorageClassStorageBuffer, sb), pi->id,
           (uint32_t)SpvStorageClassStorageBuffer);
    spv_decorate(b, pi->id, SpvDecorationDescriptorSet, 1, 0u);
    pi->binding = (uint32_t)binding;
    spv_decorate(b, pi->id, SpvDecorationBinding, 1, (uint32_t)binding++);
    char name[80];
    snprintf(name, sizeof name, "%s", p->name ? p->name : "buffer");
    spv_name(b, pi->id, name);
  }

  /* prologue: which program this work-group runs */
  uint32_t u = e->t_u32;
  uint32_t v3 = spv_type(b, SpvOpTypeVector, 2, u, 3u);
  uint32_t lid3 = spv_load(e, v3, v_lid), wg3 = spv_load(e, v3, v_wg), nwg3 = spv_load(e, v3, v_nwg);
  e->lid = spv_val(b, SpvOpBitcast, e->t_i32, 1, spv_val(b, SpvOpCompositeExtract, u, 2, lid3, 0u));
  uint32_t pcu = spv_ptr(e, SpvStorageClassPushConstant, u);
  uint32_t g[4];
  for (int i = 0; i < 4; i++) g[i] = spv_load(e, u, spv_val(b, SpvOpAccessChain, pcu, 2, v_pc, spv_ci32(e, i)));
  uint32_t wx = spv_val(b, SpvOpCompositeExtract, u, 2, wg3, 0u), wy = spv_val(b, SpvOpCompositeExtract, u, 2, wg3, 1u);
  uint32_t nx = spv_val(b, SpvOpCompositeExtract, u, 2, nwg3, 0u);
  uint32_t p = spv_val(b, SpvOpIAdd, u, 2, g[3], spv_val(b, SpvOpIAdd, u, 2, spv_val(b, SpvOpIMul, u, 2, wy, nx), wx));
  uint32_t g01 = spv_val(b, SpvOpIMul, u, 2, g[0], g[1]);
  uint32_t total = spv_val(b, SpvOpIMul, u, 2, g01, g[2]);
  uint32_t past = spv_val(b, SpvOpUGreaterThanEqual, e->t_bool, 2, p, total);
  uint32_t ret = spv_id(b), go = spv_id(b);
  spv_op(b, SPV_SEC_CODE, SpvOpSelectionMerge, 2, go, (uint32_t)SpvSelectionControlMaskNone);
  spv_op(b, SPV_SEC_CODE, SpvOpBranchConditional, 3, past, ret, go);
  label(e, ret);
  spv_op(b, SPV_SEC_CODE, SpvOpReturn, 0);
  label(e, go);
  e->pid[0] = u32_to_i64(e, spv_val(b, SpvOpUMod, u, 2, p, g[0]));
  e->pid[1] = u32_to_i64(e, spv_val(b, SpvOpUMod, u, 2, spv_val(b, SpvOpUDiv, u, 2, p, g[0]), g[1]));
  e->pid[2] = u32_to_i64(e, spv_val(b, SpvOpUDiv, u, 2, p, g01));
  for (int i = 0; i < 3; i++) e->nprog[i] = u32_to_i64(e, g[i]);
  uint32_t pci = spv_ptr(e, SpvStorageClassPushConstant, e->t_i64);
  int sidx = 0;
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* pv = k->params[i];
    if (pv->type.kind == XC_TILED_MEMREF) continue;
    e->vi[pv->id].id = spv_load(e, e->t_i64, spv_val(b, SpvOpAccessChain, pci, 2, v_pc, spv_ci32(e, 4 + sidx)));
    sidx++;
  }

  emit_block(e, k->body);
  spv_op(b, SPV_SEC_CODE, SpvOpReturn, 0);
  spv_op(b, SPV_SEC_CODE, SpvOpFunctionEnd, 0);

  /* entry point, execution mode, and the function header before its variables */
  uint32_t fn = spv_id(b);
  uint32_t fty = spv_type(b, SpvOpTypeFunction, 1, e->t_void);
  char entry[128];
  entry_name(k, entry, sizeof entry);
  uint32_t ep_before[2] = {(uint32_t)SpvExecutionModelGLCompute, fn};
  uint32_t ep_after[4] = {v_lid, v_wg, v_nwg, e->v_sgid};
  spv_inst_str(b, SPV_SEC_MODEL, SpvOpEntryPoint, 2, ep_before, entry, e->v_sgid ? 4 : 3, ep_after);
  spv_op(b, SPV_SEC_MODEL, SpvOpExecutionMode, 5, fn, (uint32_t)SpvExecutionModeLocalSize, (uint32_t)e->threads, 1u,
         1u);
  spv_name(b, fn, entry);
  spv_op(b, SPV_SEC_GLOBALS, SpvOpFunction, 4, e->t_void, fn, (uint32_t)SpvFunctionControlMaskNone, fty);
  spv_op(b, SPV_SEC_GLOBALS, SpvOpLabel, 1, spv_id(b));

  memset(out_info, 0, sizeof *out_info);
  out_info->local_size = (uint32_t)e->threads;
  out_info->num_buffers = (uint32_t)nbuf;
  out_info->num_scalars = (uint32_t)nsc;
  out_info->features = e->features;
  out_info->shared_bytes = e->shared_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)e->shared_bytes;
  snprintf(out_info->entry, sizeof out_info->entry, "%s", entry);
  out_info->coop_dots = e->num_coop;
}

xc_status_t spv_emit_kernel(const spv_emit_target_t* t, const xc_tiled_kernel_t* kernel, const int64_t* knobs,
                            int64_t threads, bool measure_only, uint32_t** out_code, size_t* out_num_words,
                            spv_kernel_info_t* out_info) {
  if (out_code) *out_code = NULL;
  if (out_num_words) *out_num_words = 0;
  memset(out_info, 0, sizeof *out_info);
  int64_t max_threads = t->caps->max_threads_per_group > 0 ? t->caps->max_threads_per_group : 1;
  if (threads < 1 || threads > max_threads)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s': %lld work-items per work-group (the device allows %lld)",
                     kernel->name, (long long)threads, (long long)max_threads);
  int scalars = 0;
  for (int i = 0; i < kernel->num_params; i++)
    if (kernel->params[i]->type.kind != XC_TILED_MEMREF) scalars++;
  if (scalars > SPV_MAX_SCALARS)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' has %d scalar parameters (at most %d)", kernel->name,
                     scalars, SPV_MAX_SCALARS);
  spv_emitter_t e;
  memset(&e, 0, sizeof e);
  e.t = t;
  e.k = kernel;
  e.knobs = knobs;
  e.threads = threads;
  e.vi = calloc((size_t)kernel->num_values + 1, sizeof *e.vi);
  if (!e.vi) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  e.ranges = spv_host->tiled_ranges(kernel, knobs);
  spv_use_t* uses = calloc((size_t)kernel->num_values + 1, sizeof *uses);
  if (!uses) {
    free(e.vi);
    spv_host->free(e.ranges);
    return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  }
  count_uses(kernel->body, uses);
  int np = kernel->num_params;
  int* counts = calloc((size_t)np * 2 + 2, sizeof *counts);
  e.phased = !counts; /* without the analysis: order every store */
  if (counts) {
    e.phased = find_phased(kernel->body, counts, counts + np + 1, np, false);
    for (int i = 0; i < np; i++)
      if (counts[i] && counts[np + 1 + i]) e.phased = true;
    free(counts);
  }
  for (int i = 0; i < kernel->num_values; i++) e.vi[i].group = -1;
  spv_dot_plan_layouts(&e);
  for (int pass = 0; pass < 8; pass++) {
    e.num_coop = 0;
    for (int i = 0; i < kernel->num_values; i++) e.vi[i].half = false;
    plan_block(&e, kernel->body, uses);
    emit_pass(&e, out_info);
    if (e.err || !e.redo) break;
    spv_builder_free(&e.b);
  }
  free(uses);
  spv_host->free(e.ranges);
  free(e.vi);
  xc_status_t s = e.err;
  if (!s && e.redo) s = SPV_ERROR(XC_INTERNAL, "spirv: kernel '%s': the storage plan did not settle", kernel->name);
  if (!s && e.b.oom) s = SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory building kernel '%s'", kernel->name);
  if (!s && !measure_only) {
    size_t n = 0;
    uint32_t* words = spv_builder_finish(&e.b, &n);
    if (!words) s = SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
    *out_code = words;
    *out_num_words = n;
  }
  spv_builder_free(&e.b);
  return s;
}
