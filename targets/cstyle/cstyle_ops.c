/* The tile ops of the C-family emitter other than dots and reductions
 * (cstyle_reduce.c): elementwise ops, global loads and stores (with vector
 * chunks), copies and views, for loops, and the walk over a block that
 * emits each op. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* ---- ops -------------------------------------------------------------------------- */

const char* xc_cse_mem_name(em_t* e, const xc_tiled_value_t* m) { return V(e, m)->name; }

/* Generic "result element = expression(operands)" op. in_loop: only the
 * element statement, inside the loop of a fused group (C). */
static void emit_elementwise(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  expr_t ops[3];
  const char* a[3] = {"", "", ""};
  int n = op->num_operands < 3 ? op->num_operands : 3;
  xc_cstyle_writer_t ex = {0};
  if (r->st == ST_SCALAR) {
    for (int i = 0; i < n; i++) a[i] = xc_cse_opnd(e, &ops[i], op->operands[i], r);
    xc_cse_elementwise_expr(e, &ex, op, a);
    L("const %s %s = %s;\n", vtype(e, res->type.dtype), r->name, wstr(&ex));
  } else {
    int close = in_loop ? 0 : xc_cse_loop_open(e, r, true);
    for (int i = 0; i < n; i++) a[i] = xc_cse_opnd(e, &ops[i], op->operands[i], r);
    xc_cse_elementwise_expr(e, &ex, op, a);
    char d[96];
    if (r->st == ST_LOCAL) L("const %s %s = %s;\n", vtype(e, res->type.dtype), r->name, wstr(&ex));
    else L("%s = %s;\n", xc_cse_dst(e, r, d, sizeof d), wstr(&ex));
    xc_cse_loop_close(e, close);
    if (r->st == ST_ARRAY && !in_loop) xc_cse_barrier(e);
  }
  if (ex.oom) fail(e, xc_error_oom());
  free(ex.data);
  for (int i = 0; i < n; i++) xc_cse_expr_free(&ops[i]);
}

/* The value expression of load op for the element of r's loop in scope:
 * `mask ? buf[off] : other` (16-bit floats converted; no mask when it is
 * decided true). Appended to out; the program and the pack entry both read
 * their loads through it. */
void xc_cse_load_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  const xc_tiled_value_t* other = op->num_operands > 3 ? op->operands[3] : NULL;
  xc_dtype_t t = op->results[0]->type.dtype;
  expr_t eo, em, eth;
  xc_cstyle_writer_t ld = {0}, acc = {0};
  /* Index expressions grow with rank and broadcasting: no fixed buffer. */
  P(&acc, "%s[%s]", xc_cse_mem_name(e, op->operands[0]), xc_cse_opnd(e, &eo, op->operands[1], r));
  xc_cse_load_conv(&ld, t, wstr(&acc));
  if (mask) {
    char lit[96];
    const char* m = xc_cse_opnd(e, &em, mask, r);
    const char* o = lit;
    if (other) o = xc_cse_opnd(e, &eth, other, r);
    else xc_cse_literal(e, lit, sizeof lit, t, 0, 0);
    P(out, "(%s) ? %s : (%s)", m, wstr(&ld), o);
    xc_cse_expr_free(&em);
    if (other) xc_cse_expr_free(&eth);
  } else {
    P(out, "%s", wstr(&ld));
  }
  if (ld.oom || acc.oom) fail(e, xc_error_oom());
  free(ld.data), free(acc.data);
  xc_cse_expr_free(&eo);
}

/* The element statement of load op: its result's current element (in the
 * scope of an element loop, or scalar). */
static void load_stmt(em_t* e, const xc_tiled_op_t* op, bool scalar) {
  vinfo_t* r = V(e, op->results[0]);
  xc_dtype_t t = op->results[0]->type.dtype;
  xc_cstyle_writer_t x = {0};
  xc_cse_load_expr(e, &x, op, r);
  char d[96];
  if (scalar || r->st == ST_LOCAL) L("const %s %s = %s;\n", vtype(e, t), r->name, wstr(&x));
  else L("%s = %s;\n", xc_cse_dst(e, r, d, sizeof d), wstr(&x));
  if (x.oom) fail(e, xc_error_oom());
  free(x.data);
}

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

/* A known divisor of every element of integer value v (0: v is 0). */
static int64_t divisor(em_t* e, const xc_tiled_value_t* v) {
  /* a for loop's induction variable: lb + i * step */
  if (v && !v->def && v->owner && v->owner->parent && v->owner->parent->opcode == XC_TOP_FOR &&
      v->owner->num_args > 0 && v->owner->args[0] == v && v->owner->parent->num_operands >= 3 &&
      xc_dtype_is_int(v->type.dtype))
    return gcd64(divisor(e, v->owner->parent->operands[0]), divisor(e, v->owner->parent->operands[2]));
  const xc_tiled_op_t* op = v ? v->def : NULL;
  if (!op || !xc_dtype_is_int(v->type.dtype)) return 1;
  switch (op->opcode) {
    case XC_TOP_CONST: return op->i < 0 ? -op->i : op->i;
    case XC_TOP_KNOB: return op->axis >= 0 && op->axis < e->k->num_knobs ? e->knobs[op->axis] : 1;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return divisor(e, op->operands[0]);
    case XC_TOP_ADD:
    case XC_TOP_SUB: return gcd64(divisor(e, op->operands[0]), divisor(e, op->operands[1]));
    case XC_TOP_MUL: return divisor(e, op->operands[0]) * divisor(e, op->operands[1]);
    default: return 1;
  }
}

/* Integer v as coef * x + rest along the last axis x of its shape (other
 * coordinates fixed, as within a chunk): true with the coefficient and a
 * known divisor of rest (0: rest is 0), false when v is not affine in x or
 * the coefficient is unknown. Values whose last extent is 1 are uniform
 * along it whatever computes them (a clamped row index). */
static bool lin_last(em_t* e, const xc_tiled_value_t* v, int64_t* coef, int64_t* rest) {
  if (!v || !xc_dtype_is_int(v->type.dtype)) return false;
  const vinfo_t* x = V(e, v);
  *coef = 0;
  if (x->rank == 0 || x->dims[x->rank - 1] == 1) {
    *rest = divisor(e, v);
    return true;
  }
  const xc_tiled_op_t* op = v->def;
  if (!op) return false;
  int64_t ca, ra, cb, rb;
  switch (op->opcode) {
    case XC_TOP_CONST: *rest = divisor(e, v); return true;
    case XC_TOP_ARANGE: *coef = 1, *rest = 0; return true; /* rank 1: its axis is the last */
    case XC_TOP_EXPAND_DIMS: /* not at the last axis (its extent would be 1) */
    case XC_TOP_BROADCAST: return lin_last(e, op->operands[0], coef, rest);
    case XC_TOP_REM: /* the ranges may make a remainder its dividend, a quotient 0 (trivial_divide) */
    case XC_TOP_DIV: {
      int triv = trivial_divide(e, op);
      if (triv == 1) return lin_last(e, op->operands[0], coef, rest);
      if (triv == 2) {
        *rest = 0;
        return true;
      }
      /* x = c i + U, U a multiple of r, x >= 0, by a constant m: U mod m is
       * a multiple of g = gcd(r, m), at most m - g, so where c (n - 1) < g
       * a row of x never crosses a multiple of m: x % m = (U mod m) + c i,
       * x / m = U / m along it (a flat index split back into the
       * coordinates of a reshaped view: row * 64 + head * 16 + d); C, as
       * trivial_divide */
      const xc_tiled_op_t* md = xc_cse_const_def(op->operands[1]);
      const xc_tiled_range_t* xr = e->ranges ? &e->ranges[op->operands[0]->id] : NULL;
      if (e->d->work_groups || !md || md->i <= 0 || !xr || !xr->known || xr->lo < 0 ||
          !lin_last(e, op->operands[0], &ca, &ra) || ca < 0)
        return false;
      int64_t g = gcd64(ra, md->i);
      if (g <= 0 || ca * (x->dims[x->rank - 1] - 1) >= g) return false;
      *coef = op->opcode == XC_TOP_REM ? ca : 0;
      *rest = op->opcode == XC_TOP_REM ? g : 1;
      return true;
    }
    case XC_TOP_ADD:
    case XC_TOP_SUB:
      if (!lin_last(e, op->operands[0], &ca, &ra) || !lin_last(e, op->operands[1], &cb, &rb)) return false;
      *coef = op->opcode == XC_TOP_ADD ? ca + cb : ca - cb, *rest = gcd64(ra, rb);
      return true;
    case XC_TOP_MUL: {
      if (!lin_last(e, op->operands[0], &ca, &ra) || !lin_last(e, op->operands[1], &cb, &rb)) return false;
      if (ca && cb) return false;
      *rest = ra * rb; /* (ca x + ra) * b: ra times a divisor of the uniform b */
      if (!ca && !cb) return true;
      /* a coefficient stays known only times a constant factor */
      const xc_tiled_op_t* kd = xc_cse_const_def(ca ? op->operands[1] : op->operands[0]);
      if (!kd) return false;
      *coef = (ca ? ca : cb) * kd->i;
      return true;
    }
    default: return false;
  }
}

/* Whether the fused loop of ops[i..j) of b over shape, which stores, may
 * still be a simd loop (C): one store, to global memory, at offsets whose
 * coefficient along the loop's innermost axis is a nonzero constant (so the
 * lanes of one vector write distinct elements), and every global load of
 * the loop from a read-only (`in`) parameter, which no store of the launch
 * writes. Without the pragma GCC 12 leaves a loop with a gathered load
 * scalar (an NCHW -> NHWC input Transpose: 0.037 -> 0.017 ms). */
static bool store_loop_simd(em_t* e, const xc_tiled_block_t* b, int i, int j, const vinfo_t* shape) {
  if (e->d->work_groups || !shape || shape->rank < 1 || shape->dims[shape->rank - 1] == 1) return false;
  int stores = 0;
  for (int m = i; m < j; m++) {
    const xc_tiled_op_t* o = b->ops[m];
    if (!e->op_member[o->id]) continue;
    const xc_tiled_value_t* mem = o->num_operands ? o->operands[0] : NULL;
    bool global = mem && mem->type.kind == XC_TILED_MEMREF && mem->type.scope == XC_SCOPE_GLOBAL;
    if (o->opcode == XC_TOP_LOAD && global && mem->type.role != XC_ROLE_IN) return false;
    if (o->opcode != XC_TOP_STORE) continue;
    int64_t coef, rest, coef2;
    const xc_tiled_value_t* offv = o->operands[1], *at = offv;
    if (++stores > 1 || !global || !same_shape(V(e, offv), shape)) return false;
    /* a select between two offsets (the lowering's clamp of a masked-off
     * lane) keeps the lanes apart when both do, with the same coefficient */
    const xc_tiled_op_t* sel = offv->def && offv->def->opcode == XC_TOP_SELECT ? offv->def : NULL;
    if (sel) at = sel->operands[1];
    if (!lin_last(e, at, &coef, &rest) || !coef) return false;
    if (sel && (!lin_last(e, sel->operands[2], &coef2, &rest) || coef2 != coef)) return false;
  }
  return stores == 1;
}

/* Bytes of a chunk of v elements of dtype t moved by one struct access of
 * global memory mem at offsets offv (no mask), else 0: the offset coef * x
 * + rest along the last axis x with coefficient 1 and rest a multiple of v
 * (a chunk lies in one row and starts at a multiple of v there, so its
 * elements are contiguous and its first is aligned to the chunk size,
 * buffers being aligned to 16 bytes: docs/emitter.md), 4 to 64 bytes. */
static int64_t chunk_ok(em_t* e, int64_t v, const xc_tiled_value_t* mem, const xc_tiled_value_t* offv,
                        const xc_tiled_value_t* mask, xc_dtype_t t) {
  int64_t b = v * (int64_t)xc_dtype_size(t), coef, rest;
  if (v <= 1 || mask || mem->type.scope != XC_SCOPE_GLOBAL || t == XC_BOOL) return 0;
  if (b != 4 && b != 8 && b != 16 && b != 32 && b != 64) return 0;
  if (!lin_last(e, offv, &coef, &rest) || coef != 1 || (rest != 0 && rest % v != 0)) return 0;
  return b;
}

/* Bytes of one chunk when a load or store over shape r (offsets offv, no
 * mask, elements of dtype t in global memory mem) moves whole chunks of r's
 * chunked layout, else 0. */
static int64_t chunk_bytes(em_t* e, const vinfo_t* r, const xc_tiled_value_t* mem, const xc_tiled_value_t* offv,
                           const xc_tiled_value_t* mask, xc_dtype_t t) {
  return chunk_ok(e, xc_cse_vec_of(e, r), mem, offv, mask, t);
}

/* Name of the struct type of a b-byte chunk of dtype t (declared by the
 * kernel's prelude: vec_types). */
static const char* chunk_type(em_t* e, char* buf, size_t size, xc_dtype_t t, int64_t b) {
  snprintf(buf, size, "xc_v%d_%s", (int)b, xc_dtype_name(t));
  e->vec_types[t] |= (unsigned)b;
  return buf;
}

/* Opens the loop over the chunks c of shape r and sets xo0, the offset of
 * the chunk's first element (flat index f0); names in ty the struct type of
 * a b-byte chunk of dtype t and returns the elements per chunk. The caller
 * writes the chunk's move and closes 1 brace. */
static int64_t chunk_open(em_t* e, const vinfo_t* r, const xc_tiled_value_t* offv, xc_dtype_t t, int64_t b,
                          char* ty, size_t ty_size) {
  const char* it = itype(e);
  int64_t v = xc_cse_vec_of(e, r), nc = r->n / e->T / v;
  chunk_type(e, ty, ty_size, t, b);
  if (e->d->unroll_pragma && nc <= e->unroll) L("%s\n", e->d->unroll_pragma);
  L("for (int c = 0; c < %" PRId64 "; c++) {\n", nc);
  e->depth++;
  L("const %s f0 = ((%s)c * %" PRId64 " + lid) * %" PRId64 ";\n", it, it, e->T, v);
  L("%s xo0;\n", it);
  L("{\n");
  e->depth++;
  L("const int j = c * %" PRId64 ";\n", v);
  L("const %s f = f0;\n", it);
  xc_cse_emit_coords(e, r);
  expr_t eo;
  L("xo0 = %s;\n", xc_cse_opnd(e, &eo, offv, r));
  xc_cse_expr_free(&eo);
  e->depth--;
  L("}\n");
  return v;
}

/* Whether bool mask v, over a tile whose last axis is x, holds on an
 * interval of x in every row (the other coordinates fixed): a conjunction
 * of comparisons (not !=) of integers affine in x (lin_last: a row's
 * coefficient known, its rest anything, e.g. a pixel's row base computed by
 * division), and of values uniform along x (last extent 1: a row's own
 * mask). Then it holds along a whole row when it holds at both ends. */
static bool convex_last(em_t* e, const xc_tiled_value_t* v) {
  if (!v) return true;
  const vinfo_t* x = V(e, v);
  if (x->rank == 0 || x->dims[x->rank - 1] == 1) return true;
  const xc_tiled_op_t* op = v->def;
  if (!op) return false;
  int64_t coef, rest;
  switch (op->opcode) {
    case XC_TOP_CONST: return true;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return convex_last(e, op->operands[0]);
    case XC_TOP_AND: return v->type.dtype == XC_BOOL && convex_last(e, op->operands[0]) && convex_last(e, op->operands[1]);
    case XC_TOP_CMP:
      return op->cmp != XC_CMP_NE && lin_last(e, op->operands[0], &coef, &rest) &&
             lin_last(e, op->operands[1], &coef, &rest);
    default: return false;
  }
}

/* The unmasked element statement of load op at the current element of
 * its loop's shape r. */
static void load_stmt_unmasked(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  expr_t eo;
  xc_cstyle_writer_t ld = {0}, acc = {0};
  P(&acc, "%s[%s]", xc_cse_mem_name(e, op->operands[0]), xc_cse_opnd(e, &eo, op->operands[1], r));
  xc_cse_load_conv(&ld, op->results[0]->type.dtype, wstr(&acc));
  char d[96];
  L("%s = %s;\n", xc_cse_dst(e, V(e, op->results[0]), d, sizeof d), wstr(&ld));
  if (ld.oom || acc.oom) fail(e, xc_error_oom());
  free(ld.data), free(acc.data);
  xc_cse_expr_free(&eo);
}

/* Whether masked load op, into an array of 2-D shape r (the loop's), may be
 * copied row by row (rows_split): C, a mask convex along the rows, an
 * offset affine along them. */
static bool rows_split_ok(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  const vinfo_t* x = V(e, op->results[0]);
  int64_t coef, rest;
  if (!e->d->work_groups && !mask && x->row_ptrs && same_shape(x, r)) return true; /* pointers only */
  return !e->d->work_groups && mask && x->st == ST_ARRAY && same_shape(x, r) && r->rank == 2 && r->dims[1] >= 4 &&
         convex_last(e, mask) && lin_last(e, op->operands[1], &coef, &rest) && coef != 0;
}

/* C: whether load ld may leave the rows inside its mask in memory for a
 * dot to read in place (xc_cse_plan_row_ptrs): it is copied row by row
 * (rows_split_ok at its own shape) or has no mask left at all, a row's
 * elements are consecutive in memory (offset coefficient 1 along it), the
 * tile holds the memory's elements unconverted (f32 or f64), and the
 * memory is a read-only parameter. Masked lanes only occur in the rows
 * still copied. */
/* The kernel body's op that holds op (op itself at the top level). */
static const xc_tiled_op_t* top_level_op(const xc_tiled_op_t* op) {
  while (op->parent && op->parent->parent) op = op->parent->parent;
  return op;
}

/* Whether block b (and the loops in it) stores into mem. */
static bool stores_into(const xc_tiled_block_t* b, const xc_tiled_value_t* mem) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* o = b->ops[i];
    if ((o->opcode == XC_TOP_STORE && o->operands[0] == mem) || (o->body && stores_into(o->body, mem)))
      return true;
  }
  return false;
}

/* Whether an allocation mem is written only before the top-level op that
 * holds ld (a padded patch filled once per program, docs/lowering.md): its
 * rows may then be read in place by a dot past ld, as a read-only
 * parameter's. */
static bool written_before(em_t* e, const xc_tiled_value_t* mem, const xc_tiled_op_t* ld) {
  if (!mem->def || mem->def->opcode != XC_TOP_ALLOC) return false;
  const xc_tiled_block_t* body = e->k->body;
  const xc_tiled_op_t* top = top_level_op(ld);
  int at = -1;
  for (int i = 0; i < body->num_ops; i++)
    if (body->ops[i] == top) at = i;
  if (at < 0) return false;
  for (int i = at; i < body->num_ops; i++) {
    const xc_tiled_op_t* o = body->ops[i];
    if ((o->opcode == XC_TOP_STORE && o->operands[0] == mem) || (o->body && stores_into(o->body, mem))) return false;
  }
  return true;
}

bool xc_cse_rows_in_place_ok(em_t* e, const xc_tiled_op_t* ld) {
  if (e->d->work_groups || ld->opcode != XC_TOP_LOAD) return false;
  const xc_tiled_value_t* res = ld->results[0], *mem = ld->operands[0];
  vinfo_t* x = V(e, res);
  int64_t coef = 0, rest = 0;
  xc_dtype_t t = res->type.dtype;
  bool unmasked = !live_mask(e, ld->num_operands > 2 ? ld->operands[2] : NULL) && x->st == ST_ARRAY && x->rank == 2;
  /* only from a read-only (`in`) parameter or an allocation written before
   * the loop that holds the load: reading in place moves the read from the
   * load to the dot, past any store of the kernel in between */
  bool readonly = (mem->type.scope == XC_SCOPE_GLOBAL && mem->type.role == XC_ROLE_IN) || written_before(e, mem, ld);
  return (t == XC_F32 || t == XC_F64) && mem->type.dtype == t && readonly && (unmasked || rows_split_ok(e, ld, x)) &&
         lin_last(e, ld->operands[1], &coef, &rest) && coef == 1;
}

/* C: the loop over 2-D shape r of a masked load ld into an array whose mask
 * is convex along its rows (rows_split_ok), with the other members of its
 * fused group (ops[i..j) of b that are members; b NULL: ld alone), which are
 * elementwise: each row tests the mask at its two ends and, where both hold
 * (a window row inside the input), runs the row with the load unmasked;
 * rows at the edges keep the per-element mask. The 3-channel stem conv's
 * [64, 9] input rows had spent half the kernel on the per-element tests
 * (docs/emitter.md, "Masked rows"). */
/* The element statements of rows_split's group at (i0, i1): f, the other
 * members, and the load — not at all (load 0), unmasked (1) or masked (2). */
static void rows_members(em_t* e, const vinfo_t* r, const xc_tiled_block_t* b, int i, int j,
                         const xc_tiled_op_t* ld, int load) {
  L("const %s f = i0 * %" PRId64 " + i1;\n", itype(e), r->dims[1]);
  L("(void)f;\n");
  for (int m = b ? i : 0; m < (b ? j : 1) && !e->err; m++) {
    const xc_tiled_op_t* o = b ? b->ops[m] : ld;
    if (b && !e->op_member[o->id]) continue;
    if (o != ld) emit_elementwise(e, o, true);
    else if (load == 1) load_stmt_unmasked(e, ld, r);
    else if (load == 2) load_stmt(e, ld, false);
  }
}

static void rows_split(em_t* e, const vinfo_t* r, const xc_tiled_block_t* b, int i, int j, const xc_tiled_op_t* ld) {
  const char* it = itype(e);
  const xc_tiled_value_t* mask = live_mask(e, ld->num_operands > 2 ? ld->operands[2] : NULL);
  int64_t n0 = r->dims[0], n1 = r->dims[1];
  /* a dot's a operand read in place (row_ptrs): a row inside the mask is
   * not copied, its pointer xa<name>[i0] points into memory; a row at an
   * edge is copied and points at its copy */
  vinfo_t* lv = V(e, ld->results[0]);
  bool ptrs = lv->row_ptrs && same_shape(lv, r);
  int id = e->seq++;
  /* first every row's test (and offset) in a loop of its own, which
   * vectorizes: the mask at the row's two ends */
  L("{\n");
  e->depth++;
  if (mask) L("int32_t xrows%d[%" PRId64 "];\n", id, n0);
  if (ptrs) L("%s xoffs%d[%" PRId64 "];\n", it, id, n0);
  e->local_bytes += n0 * ((mask ? 4 : 0) + (ptrs ? 8 : 0));
  if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
  L("for (%s i0 = 0; i0 < %" PRId64 "; i0++) {\n", it, n0);
  e->depth++;
  for (int end = 0; end < (mask ? 2 : 1) && !e->err; end++) {
    L("{\n");
    e->depth++;
    L("const %s i1 = %" PRId64 ";\n", it, end ? n1 - 1 : 0);
    rows_members(e, r, b, i, j, ld, 0);
    if (mask) {
      expr_t em;
      L(end ? "xrows%d[i0] &= (int32_t)(%s);\n" : "xrows%d[i0] = (int32_t)(%s);\n", id,
        xc_cse_opnd(e, &em, mask, r));
      xc_cse_expr_free(&em);
    }
    if (!end && ptrs) {
      expr_t eo;
      L("xoffs%d[i0] = %s;\n", id, xc_cse_opnd(e, &eo, ld->operands[1], r));
      xc_cse_expr_free(&eo);
    }
    xc_cse_loop_close(e, 1);
  }
  xc_cse_loop_close(e, 1);
  /* the rows' pointers in a loop of their own, without a branch: into
   * memory where the test held, at the row's copy at the edges */
  if (ptrs) {
    const char* mem = xc_cse_mem_name(e, ld->operands[0]);
    L("for (%s i0 = 0; i0 < %" PRId64 "; i0++)%s\n", it, n0, mask ? "" : " /* no mask: every row in place */");
    if (mask)
      L("  xa%s[i0] = xrows%d[i0] ? %s + xoffs%d[i0] : &%s[i0 * %" PRId64 "];\n", lv->name, id, mem, id, lv->name,
        n1);
    else
      L("  xa%s[i0] = %s + xoffs%d[i0];\n", lv->name, mem, id);
  }
  /* then the rows: unmasked where the test held, masked at the edges; a
   * row in place has nothing left to do unless the group has other
   * members, and then only the edges are visited (XC_UNLIKELY: a 32-wide
   * image has two edge rows in 32; a branch per row the predictor missed
   * at each cost the stem conv 7% of its time) */
  bool rest = !ptrs;
  for (int m = b ? i : 0; m < (b ? j : 1); m++) {
    const xc_tiled_op_t* o = b ? b->ops[m] : ld;
    storage_t st = V(e, o->results[0])->st;
    if (o != ld && e->op_member[o->id] && st != ST_LOCAL && st != ST_SCALAR) rest = true; /* it stores */
  }
  if (!mask && !rest) {
    xc_cse_loop_close(e, 1);
    lv->row_ptrs_set = true;
    return;
  }
  L("for (%s i0 = 0; i0 < %" PRId64 "; i0++) {\n", it, n0);
  e->depth++;
  for (int pass = rest ? 2 : 3; pass < (mask ? 4 : 3) && !e->err; pass++) {
    if (!rest) L("if (XC_UNLIKELY(!xrows%d[i0])) {\n", id);
    else if (mask) L(pass == 2 ? "if (xrows%d[i0]) {\n" : "} else {\n", id);
    else L("{ /* no mask: every row in place */\n");
    e->depth++;
    bool any = pass == 3 || rest;
    if (any) {
      if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s i1 = 0; i1 < %" PRId64 "; i1++) {\n", it, n1);
      e->depth++;
      rows_members(e, r, b, i, j, ld, pass == 2 ? (ptrs ? 0 : 1) : 2);
      xc_cse_loop_close(e, 1);
    }
    e->depth--;
  }
  L("}\n");
  xc_cse_loop_close(e, 2);
  if (ptrs) lv->row_ptrs_set = true;
}

/* Whether the value tree of v reads no private tile (those are read at the
 * slot j of their own layout, which a copy in its own order does not keep). */
static bool no_private(em_t* e, const xc_tiled_value_t* v) {
  const vinfo_t* x = V(e, v);
  if (x->st == ST_PRIVATE) return false;
  if (x->st != ST_VIRTUAL || !v->def) return true;
  for (int i = 0; i < v->def->num_operands; i++)
    if (!no_private(e, v->def->operands[i])) return false;
  return true;
}

/* Elements per chunk when load op fills its work-group array in whole
 * chunks, else 0. The array is shared, so which work-item copies which
 * element is free: work-item lid copies chunks c * T + lid of
 * e->vec elements (the schedule's vector: 16, 32 or 64 bytes, none with
 * vector 1), one struct load from global memory and one store into the
 * array each. Needs what a chunk load of a private tile needs (no mask,
 * the offset 1 * x + a multiple of the chunk along the last axis x), rows
 * of whole chunks, the array's element type the buffer's (no conversion),
 * and an offset that reads no private tile. */
int64_t xc_cse_copy_chunks(em_t* e, const xc_tiled_op_t* op) {
  if (op->opcode != XC_TOP_LOAD || !e->d->work_groups || e->vec <= 1 || !e->d->align16 || !e->d->local_ptr_qual)
    return 0;
  const xc_tiled_value_t* res = op->results[0];
  const vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t v = e->vec;
  if (r->st != ST_ARRAY || r->raw || r->in_place || r->packed || r->row_ptrs || r->hoist_n > 1 || r->rank < 1 ||
      r->dims[r->rank - 1] % v != 0 || strcmp(vtype(e, t), e->d->storage_type[t]) != 0 ||
      !no_private(e, op->operands[1]))
    return 0;
  int64_t b = chunk_ok(e, v, op->operands[0], op->operands[1],
                       live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL), t);
  return b >= 16 ? v : 0;
}

/* Marks the work-group arrays loads fill in chunks, before the
 * declarations (they are declared 16-byte aligned). */
void xc_cse_plan_copy_chunks(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) xc_cse_plan_copy_chunks(e, op->body);
    int64_t v = xc_cse_copy_chunks(e, op);
    if (v > 1) V(e, op->results[0])->copy_vec = v;
  }
}

/* The copy of xc_cse_copy_chunks: chunks c * T + lid of v elements. */
static void emit_copy_chunks(em_t* e, const xc_tiled_op_t* op, vinfo_t* r, int64_t v) {
  const char* it = itype(e);
  const xc_tiled_value_t* mem = op->operands[0];
  xc_dtype_t t = op->results[0]->type.dtype;
  char ty[48];
  chunk_type(e, ty, sizeof ty, t, v * (int64_t)xc_dtype_size(t));
  int64_t chunks = r->n / v, per = (chunks + e->T - 1) / e->T;
  if (e->d->unroll_pragma && per <= e->unroll) L("%s\n", e->d->unroll_pragma);
  L("for (int c = 0; c < %" PRId64 "; c++) { /* chunks of %" PRId64 " elements */\n", per, v);
  e->depth++;
  L("const %s f = ((%s)c * %" PRId64 " + lid) * %" PRId64 ";\n", it, it, e->T, v);
  if (per * e->T == chunks) L("{\n");
  else L("if (f < %" PRId64 ") {\n", r->n);
  e->depth++;
  xc_cse_emit_coords(e, r);
  expr_t eo;
  const char* off = xc_cse_opnd(e, &eo, op->operands[1], r);
  L("*(%s%s*)(%s + f) = *(const %s%s*)(%s + %s);\n", e->d->local_ptr_qual, ty, r->name,
    e->d->global_qual, ty, xc_cse_mem_name(e, mem), off);
  xc_cse_expr_free(&eo);
  xc_cse_loop_close(e, 2);
  xc_cse_barrier(e);
}

/* Bytes of a chunk when load op, into a tile of the chunked layout on a
 * work-group dialect (its private slots or a work-group array), moves
 * whole chunks, at offsets inline or held in its slots, and, with a mask,
 * where the mask holds at both ends of the chunk: the mask convex along
 * the last axis (convex_last: then it holds in between), the offset
 * contiguous and aligned along it (chunk_ok); else 0. A channels-last
 * convolution's window row: channels of a pixel, whole chunks inside or
 * outside the image. */
static int64_t chunk_load_bytes(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  if (!e->d->work_groups || (r->st != ST_PRIVATE && r->st != ST_ARRAY) || r->raw || r->in_place || r->packed ||
      r->hoist_n > 1)
    return 0;
  int64_t v = xc_cse_vec_of(e, r);
  if (v <= 1 || r->n % (e->T * v) != 0 || (mask && !convex_last(e, mask))) return 0;
  return chunk_ok(e, v, op->operands[0], op->operands[1], NULL, op->results[0]->type.dtype);
}

/* The load of chunk_load_bytes: per chunk one struct load; under a mask,
 * the mask at the chunk's first and last element first, and where either
 * fails the chunk element by element. */
static void emit_chunk_load(em_t* e, const xc_tiled_op_t* op, vinfo_t* r, int64_t b) {
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  const xc_tiled_value_t* mem = op->operands[0];
  xc_dtype_t t = op->results[0]->type.dtype;
  const char* it = itype(e);
  char ty[48];
  int64_t v = chunk_open(e, r, op->operands[1], t, b, ty, sizeof ty);
  if (mask) { /* where it holds at both ends, one struct load */
    L("int xm = 1;\n");
    for (int end = 0; end < 2; end++) {
      L("{\n");
      e->depth++;
      L("const int j = c * %" PRId64 " + %" PRId64 ";\n", v, end ? v - 1 : 0);
      L("const %s f = f0 + %" PRId64 ";\n", it, end ? v - 1 : 0);
      xc_cse_emit_coords(e, r);
      expr_t em;
      L("xm = xm && (%s);\n", xc_cse_opnd(e, &em, mask, r));
      xc_cse_expr_free(&em);
      e->depth--;
      L("}\n");
    }
    L("if (xm) {\n");
    e->depth++;
  }
  L("const %s xq = *(const %s%s*)(%s + xo0);\n", ty, e->d->global_qual, ty, xc_cse_mem_name(e, mem));
  for (int64_t i = 0; i < v; i++) {
    char q[32];
    snprintf(q, sizeof q, "xq.v[%" PRId64 "]", i);
    xc_cstyle_writer_t cv = {0};
    xc_cse_load_conv(&cv, t, q);
    if (r->st == ST_PRIVATE) L("%s[c * %" PRId64 " + %" PRId64 "] = %s;\n", r->name, v, i, wstr(&cv));
    else L("%s[f0 + %" PRId64 "] = %s;\n", r->name, i, wstr(&cv));
    if (cv.oom) fail(e, xc_error_oom());
    free(cv.data);
  }
  if (mask) {
    e->depth--;
    L("} else {\n"); /* a chunk at the mask's edge */
    e->depth++;
    L("for (int xe = 0; xe < %" PRId64 "; xe++) {\n", v);
    e->depth++;
    L("const int j = c * %" PRId64 " + xe;\n", v);
    L("const %s f = f0 + xe;\n", it);
    xc_cse_emit_coords(e, r);
    load_stmt(e, op, false);
    xc_cse_loop_close(e, 2);
  }
  xc_cse_loop_close(e, 1);
  if (r->st == ST_ARRAY) xc_cse_barrier(e);
}

static void emit_load(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  vinfo_t* r = V(e, op->results[0]);
  bool scalar = r->st == ST_SCALAR;
  int64_t b;
  if (!scalar && !in_loop && r->copy_vec > 1) {
    emit_copy_chunks(e, op, r, r->copy_vec);
    return;
  }
  if (!scalar && !in_loop && rows_split_ok(e, op, r)) {
    rows_split(e, r, NULL, 0, 0, op);
    return;
  }
  if (!scalar && !in_loop && (b = chunk_load_bytes(e, op, r)) != 0) {
    emit_chunk_load(e, op, r, b);
    return;
  }
  int close = scalar || in_loop ? 0 : xc_cse_loop_open(e, r, true);
  load_stmt(e, op, scalar);
  xc_cse_loop_close(e, close);
  if (!scalar && r->st == ST_ARRAY && !in_loop) xc_cse_barrier(e);
}

/* The element statement of store op at the current element of its
 * offsets' shape r. */
static void store_stmt(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 3 ? op->operands[3] : NULL);
  expr_t eo, ev, em;
  const char* off = xc_cse_opnd(e, &eo, op->operands[1], r);
  const char* v = xc_cse_opnd(e, &ev, op->operands[2], r);
  xc_cstyle_writer_t sv = {0};
  xc_cse_store_conv(e, &sv, mem->type.dtype, v);
  if (mask && !e->stores_unmasked) {
    L("if (%s) %s[%s] = %s;\n", xc_cse_opnd(e, &em, mask, r), xc_cse_mem_name(e, mem), off, wstr(&sv));
    xc_cse_expr_free(&em);
  } else {
    L("%s[%s] = %s;\n", xc_cse_mem_name(e, mem), off, wstr(&sv));
  }
  if (sv.oom) fail(e, xc_error_oom());
  free(sv.data);
  xc_cse_expr_free(&eo), xc_cse_expr_free(&ev);
}

/* in_loop: only the element statement, inside the loop of a fused group (C). */
/* A store of trans(t), t an f32 array tile [n0, n1] with both sides
 * multiples of 8, where the dialect has an 8x8 block transpose
 * (transpose8): t is transposed block by block into an array of its own,
 * which the store then reads as it lies, instead of reading t transposed
 * element by element (a strided read that stays scalar). Whether it took
 * the store. */
static bool store_transposed(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* val = op->operands[2];
  if (!e->d->transpose8 || e->d->work_groups || !val->def || val->def->opcode != XC_TOP_TRANS) return false;
  const xc_tiled_value_t* src = val->def->operands[0];
  vinfo_t *tv = V(e, val), *sv = V(e, src);
  if (tv->st != ST_VIRTUAL || sv->st != ST_ARRAY || src->type.dtype != XC_F32 || sv->rank != 2 || r->rank != 2 ||
      sv->dims[0] % 8 || sv->dims[1] % 8 || !same_shape(tv, r))
    return false;
  int64_t n0 = sv->dims[0], n1 = sv->dims[1];
  int id = e->seq++;
  const char* it = itype(e);
  L("{\n");
  e->depth++;
  L("float xt%d[%" PRId64 "];\n", id, n0 * n1);
  e->local_bytes += n0 * n1 * 4;
  L("for (%s xb = 0; xb < %" PRId64 "; xb += 8)\n", it, n0);
  L("  for (%s xa = 0; xa < %" PRId64 "; xa += 8)\n", it, n1);
  L("    %s(&%s[xb * %" PRId64 " + xa], %" PRId64 ", &xt%d[xa * %" PRId64 " + xb], %" PRId64 ");\n", e->d->transpose8,
    sv->name, n1, n1, id, n0, n0);
  /* the store reads the transposed array as the tile's own storage */
  vinfo_t saved = *tv;
  tv->st = ST_ARRAY;
  snprintf(tv->name, sizeof tv->name, "xt%d", id);
  int close = xc_cse_loop_open(e, r, false);
  store_stmt(e, op, r);
  xc_cse_loop_close(e, close);
  *tv = saved;
  xc_cse_loop_close(e, 1);
  return true;
}

static void emit_store(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* offv = op->operands[1];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 3 ? op->operands[3] : NULL);
  vinfo_t* r = V(e, offv);
  xc_dtype_t t = mem->type.dtype;
  bool scalar = r->rank == 0;
  int64_t b = scalar || in_loop ? 0 : chunk_bytes(e, r, mem, offv, mask, t);
  int close = 0;
  if (b) {
    /* chunks of the chunked layout: one aligned struct store each */
    char ty[48];
    int64_t v = chunk_open(e, r, offv, t, b, ty, sizeof ty);
    L("%s xq;\n", ty);
    const char* it = itype(e);
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int xr = 0; xr < %" PRId64 "; xr++) {\n", v);
    e->depth++;
    L("const int j = c * %" PRId64 " + xr;\n", v);
    L("const %s f = f0 + xr;\n", it);
    xc_cse_emit_coords(e, r);
    expr_t ev;
    xc_cstyle_writer_t sv = {0};
    xc_cse_store_conv(e, &sv, t, xc_cse_opnd(e, &ev, op->operands[2], r));
    L("xq.v[xr] = %s;\n", wstr(&sv));
    if (sv.oom) fail(e, xc_error_oom());
    free(sv.data);
    xc_cse_expr_free(&ev);
    xc_cse_loop_close(e, 1);
    L("*(%s%s*)(%s + xo0) = xq;\n", e->d->global_qual, ty, xc_cse_mem_name(e, mem));
    xc_cse_loop_close(e, 1);
  } else if (!scalar && !in_loop && store_transposed(e, op, r)) {
    /* done: the tile transposed in 8x8 blocks, then stored */
  } else {
    if (scalar && e->d->work_groups) {
      L("if (lid == 0) {\n");
      e->depth++;
      close = 1;
    } else if (!scalar && !in_loop) {
      close = xc_cse_loop_open(e, r, false); /* no simd: offsets may repeat */
    }
    store_stmt(e, op, r);
    xc_cse_loop_close(e, close);
  }
  if (mem->type.scope != XC_SCOPE_GLOBAL) xc_cse_barrier(e);
  else if (e->phased && e->d->work_groups)
    L("%s\n", e->d->global_barrier ? e->d->global_barrier : e->d->barrier); /* CUDA: __syncthreads() */
}

/* The widest element of a global buffer that block b loads or stores. */
int64_t xc_cse_widest_global(const xc_tiled_block_t* b) {
  int64_t w = 0;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      int64_t x = xc_cse_widest_global(op->body);
      if (x > w) w = x;
    } else if ((op->opcode == XC_TOP_LOAD || op->opcode == XC_TOP_STORE) && op->num_operands > 0 &&
               op->operands[0]->type.scope == XC_SCOPE_GLOBAL) {
      int64_t x = (int64_t)xc_dtype_size(op->operands[0]->type.dtype);
      if (x > w) w = x;
    }
  }
  return w;
}

void xc_cse_emit_copy(em_t* e, const xc_tiled_value_t* dstv, const xc_tiled_value_t* src, bool declare) {
  vinfo_t* r = V(e, dstv);
  expr_t ex;
  if (r->st == ST_SCALAR) {
    const char* s = xc_cse_opnd(e, &ex, src, r);
    if (declare) L("%s %s = %s;\n", vtype(e, dstv->type.dtype), r->name, s);
    else L("%s = %s;\n", r->name, s);
    xc_cse_expr_free(&ex);
    return;
  }
  char d[96];
  int close = xc_cse_loop_open(e, r, true);
  L("%s = %s;\n", xc_cse_dst(e, r, d, sizeof d), xc_cse_opnd(e, &ex, src, r));
  xc_cse_expr_free(&ex);
  xc_cse_loop_close(e, close);
}

/* A view (expand_dims, broadcast, trans) that needs its own storage. */
static void emit_view(em_t* e, const xc_tiled_op_t* op) {
  vinfo_t* r = V(e, op->results[0]);
  xc_cstyle_writer_t ex = {0};
  char d[96];
  int close = xc_cse_loop_open(e, r, true);
  xc_cse_def_expr(e, &ex, op->results[0], loop_coords);
  L("%s = %s;\n", xc_cse_dst(e, r, d, sizeof d), wstr(&ex));
  xc_cse_loop_close(e, close);
  if (r->st == ST_ARRAY) xc_cse_barrier(e);
  if (ex.oom) fail(e, xc_error_oom());
  free(ex.data);
}

static void emit_for(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_block_t* body = op->body;
  int nc = op->num_operands - 3;
  bool any_array = false;
  for (int i = 0; i < nc; i++) {
    /* a carried value that shares its init's array (share_nested) is there
     * already; a zero init the dot makes (xc_cse_plan_zero_entry) is not filled */
    vinfo_t* arg = V(e, body->args[i + 1]);
    if ((arg->in_place && !strcmp(arg->name, V(e, op->operands[3 + i])->name)) || arg->zero_entry) continue;
    xc_cse_emit_copy(e, body->args[i + 1], op->operands[3 + i], true);
    any_array |= V(e, body->args[i + 1])->st == ST_ARRAY;
  }
  if (any_array) xc_cse_barrier(e);
  const hoist_t* h = e->num_hoists ? xc_cse_hoist_of(e, NULL, op, NULL) : NULL;
  if (h) L("%s xh%d = 0;\n", itype(e), h->dot->id); /* the step whose slices the body fills */
  const char* iv = V(e, body->args[0])->name;
  expr_t lb, ub, st;
  vinfo_t scalar = {0};
  L("for (%s %s = %s; %s < %s; %s += %s) {\n", itype(e), iv, xc_cse_opnd(e, &lb, op->operands[0], &scalar), iv,
    xc_cse_opnd(e, &ub, op->operands[1], &scalar), iv, xc_cse_opnd(e, &st, op->operands[2], &scalar));
  xc_cse_expr_free(&lb), xc_cse_expr_free(&ub), xc_cse_expr_free(&st);
  e->depth++;
  const hoist_t* hb = e->num_hoists ? xc_cse_hoist_of(e, NULL, NULL, body) : NULL;
  if (hb) xc_cse_emit_hoist_slices(e, hb);
  xc_cse_emit_block(e, body);
  const xc_tiled_op_t* y = body->num_ops ? body->ops[body->num_ops - 1] : NULL;
  if (!y || y->opcode != XC_TOP_YIELD) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: for body without yield"));
    return;
  }
  xc_cse_barrier(e); /* every work-item is done reading this iteration's storage */
  for (int i = 0; i < nc; i++)
    if (y->operands[i] != body->args[i + 1] && strcmp(V(e, y->operands[i])->name, V(e, body->args[i + 1])->name))
      xc_cse_emit_copy(e, body->args[i + 1], y->operands[i], false);
  if (any_array) xc_cse_barrier(e);
  e->depth--;
  L("}\n");
  if (h) xc_cse_emit_dot_hoisted(e, h);
}

void xc_cse_emit_op(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->num_results ? op->results[0] : NULL;
  switch (op->opcode) {
    case XC_TOP_CONST:
      if (res->type.rank == 0) {
        char lit[96];
        xc_cse_literal(e, lit, sizeof lit, res->type.dtype, op->f, op->i);
        L("const %s %s = %s;\n", vtype(e, res->type.dtype), V(e, res)->name, lit);
      }
      return;
    case XC_TOP_PROGRAM_ID:
      L("const %s %s = %s;\n", itype(e), V(e, res)->name, e->d->program_id[op->axis]);
      return;
    case XC_TOP_NUM_PROGRAMS:
      L("const %s %s = %s;\n", itype(e), V(e, res)->name, e->d->num_programs[op->axis]);
      return;
    case XC_TOP_KNOB:
      L("const %s %s = %" PRId64 "; /* %s */\n", itype(e), V(e, res)->name, e->knobs[op->axis],
        e->k->knobs[op->axis].name);
      return;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS:
      if (V(e, res)->st != ST_VIRTUAL) emit_view(e, op);
      return;
    case XC_TOP_ARANGE:
    case XC_TOP_ALLOC:
    case XC_TOP_YIELD: return;
    case XC_TOP_BARRIER: xc_cse_barrier(e); return;
    case XC_TOP_LOAD:
      if (V(e, res)->packed && xc_cse_emit_packed_ref(e, op)) return;
      if (V(e, res)->raw) xc_cse_emit_raw_load_sync(e, op);
      else emit_load(e, op, false);
      return;
    case XC_TOP_STORE: emit_store(e, op, false); return;
    case XC_TOP_REDUCE: xc_cse_emit_reduce(e, op); return;
    case XC_TOP_DOT:
      if (op == e->mma) xc_cse_emit_mma(e, op, V(e, op->operands[0])->name, V(e, op->operands[1])->name);
      else if (xc_cse_find_mx(e, op)) xc_cse_emit_mx(e, xc_cse_find_mx(e, op));
      else xc_cse_emit_dot(e, op);
      return;
    case XC_TOP_FOR:
      if (op == e->mma_loop && e->stages > 1) xc_cse_emit_for_pipelined(e, op);
      else emit_for(e, op);
      return;
    default:
      if (res && V(e, res)->st == ST_VIRTUAL) return; /* inlined into its readers */
      emit_elementwise(e, op, false);
      return;
  }
}

/* The loop of a fused group ending in a sum along the innermost axis (C):
 * the outer loops, the accumulator (-0.0, the identity of +), then the
 * innermost loop. fused_reduce_close adds the last element, closes the
 * innermost loop, writes the row's sum and closes the rest. */
static int fused_reduce_open(em_t* e, const vinfo_t* r, const xc_tiled_op_t* red, bool simd) {
  const char* it = itype(e);
  const xc_tiled_value_t* res = red->results[0];
  if (V(e, res)->st == ST_SCALAR) L("%s %s;\n", vtype(e, res->type.dtype), V(e, res)->name);
  int64_t w = simd ? xc_cse_reduce_lanes(e, res->type.dtype, r->dims[r->rank - 1]) : 0;
  for (int i = 0; i < r->rank; i++) {
    if (i == r->rank - 1 && w) { /* lanes (reduce_lanes): vectors of w elements */
      const char* t = vtype(e, res->type.dtype);
      L("%s xl[%" PRId64 "];\n", t, w);
      if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s xj = 0; xj < %" PRId64 "; xj++) xl[xj] = -0.0%s;\n", it, w, res->type.dtype == XC_F64 ? "" : "f");
      L("for (%s xb = 0; xb < %" PRId64 "; xb += %" PRId64 ") {\n", it, r->dims[i], w);
      e->depth++;
      if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s xj = 0; xj < %" PRId64 "; xj++) {\n", it, w);
      e->depth++;
      L("const %s i%d = xb + xj;\n", it, i);
      continue;
    }
    if (i == r->rank - 1) {
      L("%s racc = -0.0%s;\n", vtype(e, res->type.dtype), res->type.dtype == XC_F64 ? "" : "f");
      if (simd && e->d->simd_pragma && r->dims[i] != 1) L("%s reduction(+:racc)\n", e->d->simd_pragma);
    }
    if (r->dims[i] == 1) L("{ const %s i%d = 0;\n", it, i);
    else L("for (%s i%d = 0; i%d < %" PRId64 "; i%d++) {\n", it, i, i, r->dims[i], i);
    e->depth++;
  }
  if (r->rank == 1) L("const %s f = i0;\n", it);
  if (r->rank == 2) L("const %s f = i0 * %" PRId64 " + i1;\n", it, r->dims[1]);
  if (r->rank == 3) L("const %s f = (i0 * %" PRId64 " + i1) * %" PRId64 " + i2;\n", it, r->dims[1], r->dims[2]);
  return r->rank;
}

static void fused_reduce_close(em_t* e, const vinfo_t* r, const xc_tiled_op_t* red, bool simd) {
  expr_t ex;
  int64_t w = simd ? xc_cse_reduce_lanes(e, red->results[0]->type.dtype, r->dims[r->rank - 1]) : 0;
  L(w ? "xl[xj] = xl[xj] + (%s);\n" : "racc = racc + (%s);\n", xc_cse_opnd(e, &ex, red->operands[0], r));
  xc_cse_expr_free(&ex);
  if (w) xc_cse_loop_close(e, 1);
  e->depth--;
  L("}\n");
  if (w) xc_cse_lanes_tree(e, XC_REDUCE_SUM, w);
  xc_cstyle_writer_t d = {0};
  xc_cse_read_at(e, &d, red->results[0], loop_coords, true); /* name[i0 ...] or name */
  L(w ? "%s = xl[0];\n" : "%s = racc;\n", wstr(&d));
  if (d.oom) fail(e, xc_error_oom());
  free(d.data);
  xc_cse_loop_close(e, r->rank - 1);
}

/* ---- the epilogue on the dot's registers (C) ------------------------------- */

/* A scalar loop bound or step known at emission (a constant or a knob). */
bool xc_cse_known_int(em_t* e, const xc_tiled_value_t* v, int64_t* out) {
  const xc_tiled_op_t* d = v ? v->def : NULL;
  if (!d || v->type.rank != 0) return false;
  if (d->opcode == XC_TOP_CONST) *out = d->i;
  else if (d->opcode == XC_TOP_KNOB && d->axis >= 0 && d->axis < e->k->num_knobs) *out = e->knobs[d->axis];
  else return false;
  return true;
}

/* Iterations of a loop with known bounds that runs (its start and step in
 * *lb, *st), else 0. */
int64_t xc_cse_loop_trips(em_t* e, const xc_tiled_op_t* loop, int64_t* lb, int64_t* st) {
  int64_t ub;
  if (!xc_cse_known_int(e, loop->operands[0], lb) || !xc_cse_known_int(e, loop->operands[1], &ub) ||
      !xc_cse_known_int(e, loop->operands[2], st) || *st <= 0 || ub <= *lb)
    return 0;
  return (ub - *lb + *st - 1) / *st;
}

/* The counter's value on the last iteration of a loop that runs. */
static bool last_start(em_t* e, const xc_tiled_op_t* loop, int64_t* out) {
  int64_t lb, st, n = xc_cse_loop_trips(e, loop, &lb, &st);
  if (n > 0) *out = lb + (n - 1) * st;
  return n > 0;
}

static int reads_of_value(const xc_tiled_op_t* o, const xc_tiled_value_t* v) {
  int n = 0;
  for (int k = 0; k < o->num_operands; k++) n += o->operands[k] == v;
  return n;
}

bool xc_cse_stores_in(const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* o = b->ops[i];
    if (o->opcode == XC_TOP_STORE || o->opcode == XC_TOP_BARRIER || (o->opcode == XC_TOP_FOR && xc_cse_stores_in(o->body)))
      return true;
  }
  return false;
}

/* The blocked dot of block b written over array `name` (in place), or NULL. */
static const xc_tiled_op_t* dot_over(em_t* e, const xc_tiled_block_t* b, const char* name) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* d = b->ops[i];
    if (d->opcode != XC_TOP_DOT) continue;
    vinfo_t* r = V(e, d->results[0]);
    if (r->in_place && !strcmp(r->name, name) && xc_cse_dot_blocked_fits(e, d)) return d;
  }
  return NULL;
}

/* Epilogue on the dot's registers (C): a K loop of block b whose result R,
 * the accumulator tile a blocked dot writes in place, is read only by one
 * fused element loop after it (bias, activation and the store of a GEMM or
 * conv). On the loop's last step the dot then applies that loop's body to
 * each register block, lane by lane, and stores nothing into R: the tile
 * never goes through memory between the last multiply-add and the output.
 * The ops between the K loop and the element loop (they read nothing of R)
 * and the element loop's definitions of other shapes (a bias row) are
 * emitted before the K loop. Only loops with known bounds and no stores. */
void xc_cse_plan_epilogue(em_t* e, const xc_tiled_block_t* b) {
  if (e->d->work_groups || !e->op_group || !e->op_member || !e->nuses) return;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* L = b->ops[i];
    if (L->opcode != XC_TOP_FOR || L->num_results != 1 || xc_cse_stores_in(L->body)) continue;
    const xc_tiled_value_t* R = L->results[0];
    vinfo_t* xr = V(e, R);
    if (xr->st != ST_ARRAY || xr->rank != 2) continue;
    const xc_tiled_op_t* dot = dot_over(e, L->body, xr->name), *inner = NULL;
    for (int j = 0; !dot && j < L->body->num_ops; j++)
      if (L->body->ops[j]->opcode == XC_TOP_FOR && (dot = dot_over(e, L->body->ops[j]->body, xr->name)))
        inner = L->body->ops[j];
    int64_t last[2] = {0, 0};
    if (!dot || !last_start(e, L, &last[0]) || (inner && !last_start(e, inner, &last[1]))) continue;
    /* the first op after the loop that reads R is a member of a fused loop;
     * the ops before it are plain and read nothing of R */
    int at = -1;
    for (int j = i + 1; j < b->num_ops && at < 0; j++) {
      const xc_tiled_op_t* o = b->ops[j];
      if (reads_of_value(o, R)) at = j;
      else if (e->op_group[o->id] || o->opcode == XC_TOP_FOR || o->opcode == XC_TOP_STORE ||
               o->opcode == XC_TOP_BARRIER)
        break;
    }
    if (at < 0 || !e->op_group[b->ops[at]->id] || !e->op_member[b->ops[at]->id]) continue;
    int g = e->op_group[b->ops[at]->id], s0 = at, s1 = at;
    while (s0 > i + 1 && e->op_group[b->ops[s0 - 1]->id] == g) s0--;
    while (s1 < b->num_ops && e->op_group[b->ops[s1]->id] == g) s1++;
    int readers = 0, stores = 0;
    bool ok = true;
    const vinfo_t* shape = NULL;
    for (int j = s0; j < s1 && ok; j++) {
      const xc_tiled_op_t* o = b->ops[j];
      bool member = e->op_member[o->id];
      int n = reads_of_value(o, R);
      readers += n;
      ok = !(n && !member) && !(member && o->opcode == XC_TOP_REDUCE);
      stores += member && o->opcode == XC_TOP_STORE;
      if (member && !shape && o->num_results) shape = V(e, o->results[0]);
    }
    if (!ok || !stores || !shape || readers != e->nuses[R->id] || !same_shape(shape, xr)) continue;
    e->epi_loop = L, e->epi_dot = dot, e->epi_loops[0] = L, e->epi_loops[1] = inner;
    e->epi_last[0] = last[0], e->epi_last[1] = last[1];
    e->epi_block = b, e->epi_begin = s0, e->epi_end = s1;
    e->epi_simd = store_loop_simd(e, b, s0, s1, shape);
    return;
  }
}

/* In the dot's register block: `if (last step) {` (closed by the caller
 * after the rows, with an else that stores the block). */
void xc_cse_emit_epilogue_open(em_t* e) {
  indent(e);
  P(&e->body, "if (");
  for (int z = 0; z < 2 && e->epi_loops[z]; z++)
    P(&e->body, "%s%s == %" PRId64, z ? " && " : "", V(e, e->epi_loops[z]->body->args[0])->name, e->epi_last[z]);
  P(&e->body, ") { /* the epilogue on the registers */\n");
  e->depth++;
}

/* Whether v's expression reaches no value of a fused loop's body
 * (ST_LOCAL): it can be written outside that loop at given coordinates. */
static bool no_local(em_t* e, const xc_tiled_value_t* v, int depth) {
  if (!v) return true;
  const vinfo_t* x = V(e, v);
  if (depth > 64 || x->st == ST_LOCAL) return false;
  /* a member of the epilogue's loop is written by that loop, whatever its storage */
  for (int j = e->epi_begin; v->def && j < e->epi_end; j++)
    if (e->epi_block->ops[j] == v->def && e->op_member[v->def->id]) return false;
  if (x->st != ST_VIRTUAL || !v->def) return true;
  for (int i = 0; i < v->def->num_operands; i++)
    if (!no_local(e, v->def->operands[i], depth + 1)) return false;
  return true;
}

/* The lane loop of a register row (xe0, xe1 .. xe1 + nr - 1; tile width N):
 * the planned element loop's body per lane, reading the accumulator acc as
 * the lane's value. */
static void epilogue_lanes(em_t* e, const xc_tiled_value_t* acc, bool simd, int64_t nr, int64_t N) {
  const char* it = itype(e);
  const xc_tiled_block_t* b = e->epi_block;
  if (simd && e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
  L("for (%s xj = 0; xj < %" PRId64 "; xj++) {\n", it, nr);
  e->depth++;
  L("const %s i0 = xe0, i1 = xe1 + xj;\n", it);
  L("const %s f = i0 * %" PRId64 " + i1;\n", it, N);
  L("const %s xacc = xt[xj];\n", vtype(e, acc->type.dtype));
  /* the members read the accumulator as that variable */
  vinfo_t* x = V(e, acc), saved = *x;
  x->st = ST_LOCAL;
  snprintf(x->name, sizeof x->name, "xacc");
  for (int j = e->epi_begin; j < e->epi_end && !e->err; j++) {
    const xc_tiled_op_t* o = b->ops[j];
    if (!e->op_member[o->id]) continue;
    if (o->opcode == XC_TOP_LOAD) emit_load(e, o, true);
    else if (o->opcode == XC_TOP_STORE) emit_store(e, o, true);
    else emit_elementwise(e, o, true);
  }
  *x = saved;
  xc_cse_loop_close(e, 1);
}

/* Row m of the register block at (i0, i1) (vectors c<m>_0..nv-1 of `lanes`
 * lanes). A row's stores under masks (a ragged tile's rows and columns)
 * keep GCC 12 from vectorizing any of the lane loop, the heavy members (a
 * GELU's erf) included. Where every store's mask is convex along the row
 * and written without the loop's own values, the masks are tested at the
 * row's two ends first and a row inside them runs the lane loop with
 * unmasked stores (vectorized); other rows keep the masked loop. */
#define EPI_MAX_MASKED 8
void xc_cse_emit_epilogue_row(em_t* e, const xc_tiled_value_t* acc, int m, int nv, int64_t lanes, int64_t N) {
  const char* it = itype(e);
  const xc_tiled_block_t* b = e->epi_block;
  int64_t nr = nv * lanes;
  L("{\n");
  e->depth++;
  L("%s xt[%" PRId64 "];\n", vtype(e, acc->type.dtype), nr);
  for (int v = 0; v < nv; v++) L("memcpy(xt + %" PRId64 ", &c%d_%d, sizeof(xc_vec));\n", v * lanes, m, v);
  L("const %s xe0 = i0 + %d, xe1 = i1;\n", it, m);
  const xc_tiled_op_t* st[EPI_MAX_MASKED];
  const xc_tiled_value_t* mk[EPI_MAX_MASKED];
  int masked = 0;
  bool split = true;
  for (int j = e->epi_begin; j < e->epi_end && split; j++) {
    const xc_tiled_op_t* o = b->ops[j];
    const xc_tiled_value_t* mask =
        e->op_member[o->id] && o->opcode == XC_TOP_STORE ? live_mask(e, o->num_operands > 3 ? o->operands[3] : NULL)
                                                         : NULL;
    if (!mask) continue;
    split = masked < EPI_MAX_MASKED && convex_last(e, mask) && no_local(e, mask, 0);
    if (split) st[masked] = o, mk[masked++] = mask;
  }
  if (masked && split) {
    L("int32_t xfull = 1;\n");
    for (int end = 0; end < 2; end++) {
      L("{\n");
      e->depth++;
      L("const %s i0 = xe0, i1 = xe1 + %" PRId64 ";\n", it, end ? nr - 1 : 0);
      L("const %s f = i0 * %" PRId64 " + i1;\n", it, N);
      L("(void)f;\n");
      for (int s = 0; s < masked; s++) {
        expr_t em;
        L("xfull &= (int32_t)(%s);\n", xc_cse_opnd(e, &em, mk[s], V(e, st[s]->operands[1])));
        xc_cse_expr_free(&em);
      }
      xc_cse_loop_close(e, 1);
    }
    L("if (xfull) {\n");
    e->depth++;
    e->stores_unmasked = true;
    epilogue_lanes(e, acc, e->epi_simd, nr, N);
    e->stores_unmasked = false;
    e->depth--;
    L("} else {\n");
    e->depth++;
    epilogue_lanes(e, acc, e->epi_simd, nr, N);
    xc_cse_loop_close(e, 1);
  } else {
    epilogue_lanes(e, acc, e->epi_simd, nr, N);
  }
  xc_cse_loop_close(e, 1);
}

void xc_cse_emit_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops && !e->err; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op == e->epi_loop && b == e->epi_block) {
      /* the K loop whose dot applies the element loop after it to its
       * registers (xc_cse_plan_epilogue): what that loop reads besides the
       * accumulator first, then the K loop; the element loop is done */
      for (int j = i + 1; j < e->epi_begin; j++) {
        xc_cse_emit_op(e, b->ops[j]);
        xc_cse_emit_stagings_of(e, b->ops[j]);
      }
      for (int j = e->epi_begin; j < e->epi_end; j++)
        if (!e->op_member[b->ops[j]->id]) xc_cse_emit_op(e, b->ops[j]);
      xc_cse_emit_op(e, op);
      xc_cse_emit_stagings_of(e, op);
      i = e->epi_end - 1;
      continue;
    }
    int g = e->op_group ? e->op_group[op->id] : 0;
    if (!g) {
      xc_cse_emit_op(e, op);
      xc_cse_emit_stagings_of(e, op);
      continue;
    }
    /* a fused group: its scalar definitions (and the arrays of other
     * shapes it reads) first, then one loop over the shared shape writing
     * every member's element */
    int j = i;
    const vinfo_t* shape = NULL;
    bool stores = false;
    for (; j < b->num_ops && e->op_group[b->ops[j]->id] == g; j++) {
      if (e->op_member[b->ops[j]->id]) {
        if (!shape) shape = V(e, b->ops[j]->results[0]);
        stores |= b->ops[j]->opcode == XC_TOP_STORE;
      } else {
        xc_cse_emit_op(e, b->ops[j]);
      }
    }
    if (!shape) { /* every member left the loop (packed loads: cstyle_pack.c) */
      i = j - 1;
      continue;
    }
    const xc_tiled_op_t* red = b->ops[j - 1]->opcode == XC_TOP_REDUCE ? b->ops[j - 1] : NULL;
    /* a masked load whose other members are elementwise (its offsets and
     * mask): row by row where the mask allows */
    const xc_tiled_op_t* rows_ld = NULL;
    bool only_elementwise = !stores && !red;
    for (int m = i; m < j && only_elementwise; m++) {
      const xc_tiled_op_t* o = b->ops[m];
      if (!e->op_member[o->id]) continue;
      if (o->opcode == XC_TOP_LOAD && !rows_ld) rows_ld = o;
      else if (!is_elementwise(o->opcode)) only_elementwise = false;
    }
    if (only_elementwise && rows_ld && rows_split_ok(e, rows_ld, shape)) {
      rows_split(e, shape, b, i, j, rows_ld);
      i = j - 1;
      continue;
    }
    bool simd = !stores || store_loop_simd(e, b, i, j, shape);
    int close = red ? fused_reduce_open(e, shape, red, simd) : xc_cse_loop_open(e, shape, simd);
    for (int m = i; m < j && !e->err; m++) {
      const xc_tiled_op_t* o = b->ops[m];
      if (!e->op_member[o->id]) continue;
      if (o->opcode == XC_TOP_LOAD) emit_load(e, o, true);
      else if (o->opcode == XC_TOP_STORE) emit_store(e, o, true);
      else if (o->opcode == XC_TOP_REDUCE) fused_reduce_close(e, shape, o, simd);
      else emit_elementwise(e, o, true);
    }
    if (!red) xc_cse_loop_close(e, close);
    i = j - 1;
  }
}
