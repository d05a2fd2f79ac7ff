/* Reads, element loops and element expressions of the C-family emitter
 * (docs/emitter.md): the expression of a tile value's element at given
 * coordinates under its storage class (virtual values inlined), the loops
 * over a result's elements (nested simd loops on C, strided flat loops on
 * work-group dialects), and the expression of each elementwise op with the
 * conversions to and from storage dtypes. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* A literal of compute dtype t. */
void xc_cse_literal(em_t* e, char* out, size_t size, xc_dtype_t t, double f, int64_t i) {
  if (t == XC_BOOL) {
    snprintf(out, size, "%d", f != 0 ? 1 : 0);
  } else if (fcompute(t)) {
    double v = xc_round_to_dtype(t, f);
    const char* suf = t == XC_F64 ? "" : "f";
    if (isnan(v)) snprintf(out, size, "NAN");
    else if (isinf(v)) snprintf(out, size, v < 0 ? "(-INFINITY)" : "INFINITY");
    else {
      char b[48];
      snprintf(b, sizeof b, t == XC_F64 ? "%.17g" : "%.9g", v);
      if (!strpbrk(b, ".e")) strcat(b, ".0");
      snprintf(out, size, "%s%s", b, suf);
    }
  } else if (t == XC_I64 && i == INT64_MIN) {
    snprintf(out, size, "((%s)(-9223372036854775807 - 1))", vtype(e, t));
  } else if (t == XC_U64 || t == XC_I64) {
    snprintf(out, size, "((%s)%" PRId64 "%s)", vtype(e, t), i, t == XC_U64 ? "u" : "");
  } else {
    snprintf(out, size, "((%s)%" PRId64 ")", vtype(e, t), i);
  }
}

/* ---- reads ------------------------------------------------------------------ */

/* Appends to out the expression of v's element at coordinates c (v's rank).
 * same: c are the loop's own coordinates at v's exact shape (PRIVATE reads). */
void xc_cse_read_at(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c,
                    bool same) {
  vinfo_t* x = V(e, v);
  if (x->st == ST_SCALAR || x->st == ST_LOCAL) {
    P(out, "%s", x->name);
    return;
  }
  if (x->st == ST_PRIVATE) {
    if (!same) fail(e, xc_error(XC_INTERNAL, "cstyle: private tile %s read at another shape", x->name));
    P(out, "%s[j]", x->name);
    return;
  }
  if (x->st == ST_ARRAY) {
    P(out, "%s[", x->name);
    int64_t stride = 1;
    bool first = true;
    for (int i = x->rank - 1; i >= 0; i--) {
      if (x->dims[i] != 1) {
        if (!first) P(out, " + ");
        if (stride == 1) P(out, "%s", c[i]);
        else P(out, "(%s) * %" PRId64, c[i], stride);
        first = false;
      }
      stride *= x->dims[i];
    }
    if (first) P(out, "0");
    P(out, "]");
    return;
  }
  if (x->st != ST_VIRTUAL || !v->def) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: value %d has no readable storage", v->id));
    return;
  }
  xc_cse_def_expr(e, out, v, c);
}

/* Appends the expression of v's defining op (a view or an elementwise op) at
 * v's coordinates c, reading the operands. */
void xc_cse_def_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c) {
  vinfo_t* x = V(e, v);
  const xc_tiled_op_t* op = v->def;
  const xc_tiled_value_t* src = op->num_operands > 0 ? op->operands[0] : NULL;
  const char* sc[XC_TILED_MAX_RANK];
  char lit[96];
  switch (op->opcode) {
    case XC_TOP_CONST:
      xc_cse_literal(e, lit, sizeof lit, v->type.dtype, op->f, op->i);
      P(out, "%s", lit);
      return;
    case XC_TOP_ARANGE: P(out, "(%s)", c[0]); return;
    case XC_TOP_EXPAND_DIMS:
      for (int i = 0, j = 0; i < x->rank; i++)
        if (i != op->axis) sc[j++] = c[i];
      xc_cse_read_at(e, out, src, sc, false);
      return;
    case XC_TOP_BROADCAST: {
      vinfo_t* s = V(e, src);
      for (int i = 0; i < s->rank; i++) sc[i] = s->dims[i] == 1 ? "0" : c[i + x->rank - s->rank];
      xc_cse_read_at(e, out, src, sc, false);
      return;
    }
    case XC_TOP_TRANS:
      sc[0] = c[1], sc[1] = c[0];
      xc_cse_read_at(e, out, src, sc, false);
      return;
    default: break;
  }
  if (is_elementwise(op->opcode) && op->num_operands <= 3) {
    xc_cstyle_writer_t ow[3];
    const char* a[3];
    memset(ow, 0, sizeof ow);
    for (int i = 0; i < op->num_operands; i++) {
      vinfo_t* o = V(e, op->operands[i]);
      for (int d = 0; d < o->rank; d++) sc[d] = o->dims[d] == 1 ? "0" : c[d + x->rank - o->rank];
      xc_cse_read_at(e, &ow[i], op->operands[i], sc, false);
      if (ow[i].oom) fail(e, xc_error_oom());
      a[i] = wstr(&ow[i]);
    }
    xc_cse_elementwise_expr(e, out, op, a);
    for (int i = 0; i < op->num_operands; i++) free(ow[i].data);
    return;
  }
  switch (op->opcode) {
    default: fail(e, xc_error(XC_INTERNAL, "cstyle: op %d is not virtual", op->id));
  }
}

/* Reads operand v inside an element loop over a result of shape r. */
static void read_operand(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const vinfo_t* r) {
  vinfo_t* x = V(e, v);
  const char* c[XC_TILED_MAX_RANK];
  for (int i = 0; i < x->rank; i++) c[i] = x->dims[i] == 1 ? "0" : loop_coords[i + r->rank - x->rank];
  xc_cse_read_at(e, out, v, c, same_shape(x, r));
}
const char* xc_cse_opnd(em_t* e, expr_t* x, const xc_tiled_value_t* v, const vinfo_t* r) {
  memset(x, 0, sizeof *x);
  read_operand(e, &x->w, v, r);
  if (x->w.oom) fail(e, xc_error_oom());
  return wstr(&x->w);
}
void xc_cse_expr_free(expr_t* x) { free(x->w.data); }

/* ---- element loops ------------------------------------------------------------ */

/* The matrix plan whose accumulator has shape r (its element loops follow
 * the accumulator's register layout), or NULL. */
const xc_cstyle_dot_t* xc_cse_frag_of(em_t* e, const vinfo_t* r) {
  for (int i = 0; r->rank == 2 && i < e->num_frags; i++)
    if (r->dims[0] == e->frags[i]->m && r->dims[1] == e->frags[i]->n) return e->frags[i];
  return NULL;
}

bool xc_cse_frag_shape(em_t* e, const vinfo_t* r) { return xc_cse_frag_of(e, r) != NULL; }

/* Opens the loop over the slots j of a matrix plan; inside, f is the flat
 * index of slot j and i0, i1 its coordinates. Returns the braces to close. */
int xc_cse_slot_loop_open(em_t* e, const xc_cstyle_dot_t* dot) {
  const char* it = itype(e);
  if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
  L("for (int j = 0; j < %" PRId64 "; j++) {\n", dot->slots);
  e->depth++;
  xc_cstyle_writer_t ix = {0};
  e->d->dot_slot_index(&ix, dot, "j");
  if (ix.oom) fail(e, xc_error_oom());
  L("const %s f = (%s)(%s);\n", it, it, wstr(&ix));
  free(ix.data);
  L("{\n");
  e->depth++;
  L("const %s i0 = f / %" PRId64 ", i1 = f %% %" PRId64 ";\n", it, dot->n, dot->n);
  return 2;
}

/* Work-group dialects with vector chunks: the elements per chunk of shape
 * r's slot layout, 1 for the default layout (element f = lid + j * T in
 * slot j). Rows (rank 1 or 2, not a matrix plan's shape) whose last extent
 * is a multiple of T * vec take the chunked layout: slot j of work-item lid
 * holds element ((j / vec) * T + lid) * vec + j % vec, so a work-item's
 * vec consecutive slots are consecutive elements of one row, loaded and
 * stored as one aligned chunk (docs/emitter.md, "Vector chunks"). A row's
 * slots of one work-item stay consecutive (C / T of them) and every
 * work-item holds the same number of each row, as in the default layout.
 * So does the shape of a register-blocked dot's result with shorter rows
 * (e->chunk_tiles): there T / (C / vec) work-items share the rows, each
 * holding vec columns of every (T / (C / vec))-th row, a 2-D register tile
 * (xc_tiled_slot_grid_of). No row reduction runs in registers on a dot's
 * shape (xc_cse_lanes_shape). */
int64_t xc_cse_vec_of(em_t* e, const vinfo_t* r) {
  if (e->vec <= 1 || !e->d->work_groups || xc_cse_frag_shape(e, r) || r->rank < 1 || r->rank > 2) return 1;
  if (r->dims[r->rank - 1] % (e->T * e->vec) == 0) return e->vec;
  for (int i = 0; r->rank == 2 && i < e->num_chunk_tiles; i++)
    if (r->dims[0] == e->chunk_tiles[i][0] && r->dims[1] == e->chunk_tiles[i][1]) return e->vec;
  return 1;
}

bool xc_cse_whole_chunks(const em_t* e, const vinfo_t* x) {
  return e->vec > 1 && x->rank == 2 && x->dims[1] % e->vec == 0 && x->n % (e->T * e->vec) == 0;
}

/* Declares f, the flat index of slot j of the current work-item in shape
 * r's layout. */
void xc_cse_slot_f(em_t* e, const vinfo_t* r) {
  const char* it = itype(e);
  int64_t v = xc_cse_vec_of(e, r);
  if (v > 1)
    L("const %s f = ((%s)(j / %" PRId64 ") * %" PRId64 " + lid) * %" PRId64 " + j %% %" PRId64 ";\n", it, it, v,
      e->T, v, v);
  else
    L("const %s f = lid + (%s)j * %" PRId64 ";\n", it, it, e->T);
}

/* Declares i0.. of shape r from its flat index f. */
void xc_cse_emit_coords(em_t* e, const vinfo_t* r) {
  const char* it = itype(e), *u = e->d->value_type[XC_U32];
  /* work-group dialects: f, a slot's element of a tile (0 <= f < n, n far
   * below 2^31), is split in 32-bit unsigned arithmetic, which compilers
   * reduce (by a power of two: a shift and a mask of lid plus a constant
   * once the slot loop is unrolled) where a signed 64-bit split kept its
   * sign corrections and 64-bit multiply-highs */
  char f[48];
  bool narrow = e->d->work_groups && u && r->n <= INT32_MAX;
  snprintf(f, sizeof f, narrow ? "(%s)f" : "f", u);
  const char* s = narrow ? "u" : "";
  if (r->rank == 1) L("const %s i0 = f;\n", it);
  if (r->rank == 2)
    L("const %s i0 = %s / %" PRId64 "%s, i1 = %s %% %" PRId64 "%s;\n", it, f, r->dims[1], s, f, r->dims[1], s);
  if (r->rank == 3)
    L("const %s i0 = %s / %" PRId64 "%s, i1 = (%s / %" PRId64 "%s) %% %" PRId64 "%s, i2 = %s %% %" PRId64 "%s;\n", it, f,
      r->dims[1] * r->dims[2], s, f, r->dims[2], s, r->dims[1], s, f, r->dims[2], s);
}

/* Opens a loop over the elements of shape r; inside, i0.. are the coordinates
 * and f the flat index (j the per-thread slot on work-group dialects). simd:
 * the innermost C loop is vectorizable. Returns the number of braces to close. */
int xc_cse_loop_open(em_t* e, const vinfo_t* r, bool simd) {
  const char* it = itype(e);
  if (e->d->work_groups && xc_cse_frag_shape(e, r))
    return xc_cse_slot_loop_open(e, xc_cse_frag_of(e, r)); /* the accumulator's register layout (docs/emitter.md) */
  if (e->d->work_groups) {
    int64_t slots = (r->n + e->T - 1) / e->T;
    if (e->d->unroll_pragma && slots <= e->unroll) L("%s\n", e->d->unroll_pragma);
    L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
    e->depth++;
    xc_cse_slot_f(e, r);
    /* every slot full: no guard (a compiler cannot prove it, lid's bound being T) */
    if (slots * e->T == r->n) L("{\n");
    else L("if (f < %" PRId64 ") {\n", r->n);
    e->depth++;
    xc_cse_emit_coords(e, r);
    return 2;
  }
  /* extent-1 dims are constants; the innermost real loop gets the pragma */
  int inner = -1, opened = 0;
  for (int i = 0; i < r->rank; i++)
    if (r->dims[i] != 1) inner = i;
  for (int i = 0; i < r->rank; i++) {
    if (r->dims[i] == 1) {
      L("{ const %s i%d = 0;\n", it, i);
    } else {
      if (i == inner && simd && e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s i%d = 0; i%d < %" PRId64 "; i%d++) {\n", it, i, i, r->dims[i], i);
    }
    e->depth++;
    opened++;
  }
  (void)opened;
  if (r->rank == 1) L("const %s f = i0;\n", it);
  if (r->rank == 2) L("const %s f = i0 * %" PRId64 " + i1;\n", it, r->dims[1]);
  if (r->rank == 3) L("const %s f = (i0 * %" PRId64 " + i1) * %" PRId64 " + i2;\n", it, r->dims[1], r->dims[2]);
  return r->rank;
}

void xc_cse_loop_close(em_t* e, int n) {
  for (int i = 0; i < n; i++) {
    e->depth--;
    L("}\n");
  }
}

void xc_cse_barrier(em_t* e) {
  if (e->d->work_groups) L("%s\n", e->d->barrier);
}

/* Destination of the current element of r: "name[j]" or "name[f]". */
const char* xc_cse_dst(em_t* e, const vinfo_t* r, char* buf, size_t size) {
  snprintf(buf, size, "%s[%s]", r->name, r->st == ST_PRIVATE ? "j" : "f");
  (void)e;
  return buf;
}

/* ---- element expressions -------------------------------------------------- */

static void cast_expr(em_t* e, xc_cstyle_writer_t* w, xc_dtype_t from, xc_dtype_t to, const char* a) {
  const char* tt = vtype(e, to);
  if (to == XC_BOOL) {
    P(w, "(%s)((%s) != 0)", tt, a);
  } else if (fcompute(from) && !fcompute(to)) {
    const char* lo = "0", *hi = "0";
    switch (to) {
      case XC_I8: lo = "-128", hi = "127"; break;
      case XC_I16: lo = "-32768", hi = "32767"; break;
      case XC_I32: lo = "-2147483648.0", hi = "2147483647.0"; break;
      case XC_U8: lo = "0", hi = "255"; break;
      case XC_U16: lo = "0", hi = "65535"; break;
      case XC_U32: lo = "0", hi = "4294967295.0"; break;
      case XC_U64: lo = "0", hi = "9223372036854774784.0"; break;
      default: lo = "-9223372036854775808.0", hi = "9223372036854774784.0"; break;
    }
    const char* suf = from == XC_F64 ? "" : "f";
    char los[48], his[48];
    snprintf(los, sizeof los, "%s%s%s", lo, strchr(lo, '.') ? "" : ".0", suf);
    snprintf(his, sizeof his, "%s%s%s", hi, strchr(hi, '.') ? "" : ".0", suf);
    P(w, "((%s) != (%s) ? (%s)0 : (%s) <= %s ? (%s)(%s) : (%s) >= %s ? (%s)(%s) : (%s)(%s))", a, a, tt, a, los,
      tt, los, a, his, tt, his, tt, a);
  } else if (to == XC_F16) {
    P(w, "xc_h2f(xc_f2h((float)(%s)))", a);
  } else if (to == XC_BF16) {
    P(w, "xc_bf2f(xc_f2bf((float)(%s)))", a);
  } else {
    P(w, "(%s)(%s)", tt, a);
  }
}

/* The CONST op v is (possibly broadcast or expanded), or NULL. */
const xc_tiled_op_t* xc_cse_const_def(const xc_tiled_value_t* v) {
  const xc_tiled_op_t* d = v ? v->def : NULL;
  while (d && (d->opcode == XC_TOP_BROADCAST || d->opcode == XC_TOP_EXPAND_DIMS)) d = d->operands[0]->def;
  return d && d->opcode == XC_TOP_CONST ? d : NULL;
}

/* Operand slots of block b (and nested blocks) that read v; *user: the
 * last op that does. */
static int reads_of(const xc_tiled_block_t* b, const xc_tiled_value_t* v, const xc_tiled_op_t** user) {
  int n = 0;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_operands; j++)
      if (op->operands[j] == v) n++, *user = op;
    if (op->opcode == XC_TOP_FOR) n += reads_of(op->body, v, user);
  }
  return n;
}

/* Whether v's only use is 1 + v (the constant possibly broadcast). */
static bool only_plus_one(em_t* e, const xc_tiled_value_t* v) {
  const xc_tiled_op_t* user = NULL;
  if (reads_of(e->k->body, v, &user) != 1 || !user || user->opcode != XC_TOP_ADD) return false;
  const xc_tiled_op_t* d = xc_cse_const_def(user->operands[0] == v ? user->operands[1] : user->operands[0]);
  return d && d->f == 1.0;
}

/* An i64 division or remainder whose operands the ranges place in
 * [0, 2^31) (index math: a flat index split into coordinates) computed in
 * 32-bit unsigned integers. GCC vectorizes 32-bit division by a constant
 * (a multiply-high and shifts) but not the 64-bit one, which stayed a
 * scalar multiply per element and kept the whole loop around it scalar;
 * GPUs have no 64-bit multiply-high (several 32-bit ones each), and PoCL's
 * work-item loops vectorize the 32-bit form. Same values. */
static bool range_in(const em_t* e, const xc_tiled_value_t* v, int64_t lo, int64_t hi) {
  const xc_tiled_range_t* x = &e->ranges[v->id];
  return x->known && x->lo >= lo && x->hi <= hi;
}

static bool narrow_divide(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a,
                          const char* bin) {
  if (!e->ranges || op->results[0]->type.dtype != XC_I64 || !e->d->value_type[XC_U32]) return false;
  if (!range_in(e, op->operands[0], 0, INT32_MAX) || !range_in(e, op->operands[1], 1, INT32_MAX)) return false;
  const char* i64 = e->d->value_type[XC_I64], *u32 = e->d->value_type[XC_U32];
  P(w, "(%s)((%s)(%s) %s (%s)(%s))", i64, u32, a[0], bin, u32, a[1]);
  return true;
}

/* An i64 sum, difference or product whose operands and result the ranges
 * place in 32-bit signed integers, computed in them on the work-group
 * dialects (index math: a pixel's row and column, a channel's offset).
 * 64-bit multiplies cost several instructions on GPUs and several vector
 * instructions a lane where PoCL vectorizes a work-item loop; the chain of
 * such ops stays 32-bit (the compiler drops a narrowing of a widened
 * value). Same values: no intermediate leaves the range. */
static bool narrow_arith(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a,
                         const char* bin) {
  if (!e->ranges || !e->d->work_groups || op->results[0]->type.dtype != XC_I64 || !e->d->value_type[XC_I32])
    return false;
  const xc_tiled_value_t* v[3] = {op->operands[0], op->operands[1], op->results[0]};
  for (int i = 0; i < 3; i++)
    if (!range_in(e, v[i], INT32_MIN, INT32_MAX)) return false;
  const char* i64 = e->d->value_type[XC_I64], *i32 = e->d->value_type[XC_I32];
  P(w, "(%s)((%s)(%s) %s (%s)(%s))", i64, i32, a[0], bin, i32, a[1]);
  return true;
}

/* The operand of floating-point binary op that is a constant number (not
 * NaN), the first such; -1 if none. */
static int const_side(const xc_tiled_op_t* op) {
  for (int j = 0; j < 2; j++) {
    const xc_tiled_op_t* d = xc_cse_const_def(op->operands[j]);
    if (d && !isnan(d->f)) return j;
  }
  return -1;
}

/* Expression of an elementwise op (unary, binary, cmp, select, cast) given
 * its operands' expressions. */
void xc_cse_elementwise_expr(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a) {
  xc_dtype_t t = op->operands[0]->type.dtype;
  bool fl = fcompute(t);
  bool vmath = e->d->vector_math && fl && t != XC_F64; /* f32, and f16/bf16 computed in float */
  const char* one = t == XC_F64 ? "1.0" : "1.0f";
  char fn[32];
  const char* bin = NULL;
  switch (op->opcode) {
    case XC_TOP_NEG: P(w, "(-(%s))", a[0]); return;
    case XC_TOP_ABS:
      if (fl) mathfn(e, fn, sizeof fn, "fabs", t), P(w, "%s(%s)", fn, a[0]);
      else P(w, "((%s) < 0 ? -(%s) : (%s))", a[0], a[0], a[0]);
      return;
    case XC_TOP_EXP: vmath ? snprintf(fn, sizeof fn, "xc_vexpf") : (mathfn(e, fn, sizeof fn, "exp", t), 0); break;
    case XC_TOP_LOG: mathfn(e, fn, sizeof fn, "log", t); break;
    case XC_TOP_SQRT: mathfn(e, fn, sizeof fn, "sqrt", t); break;
    case XC_TOP_ERF:
      if (is_half(t) && e->d->erf_half_plus_one && only_plus_one(e, op->results[0]))
        snprintf(fn, sizeof fn, "%s", e->d->erf_half_plus_one);
      else if (is_half(t) && e->d->erf_half) snprintf(fn, sizeof fn, "%s", e->d->erf_half);
      else if (vmath) snprintf(fn, sizeof fn, "xc_verff");
      else mathfn(e, fn, sizeof fn, "erf", t);
      break;
    case XC_TOP_TANH:
      if (fl && t != XC_F64 && e->d->tanh_call) snprintf(fn, sizeof fn, "%s", e->d->tanh_call);
      else if (vmath) snprintf(fn, sizeof fn, "xc_vtanhf");
      else mathfn(e, fn, sizeof fn, "tanh", t);
      break;
    case XC_TOP_FLOOR: mathfn(e, fn, sizeof fn, "floor", t); break;
    case XC_TOP_CEIL: mathfn(e, fn, sizeof fn, "ceil", t); break;
    case XC_TOP_SIN: mathfn(e, fn, sizeof fn, "sin", t); break;
    case XC_TOP_COS: mathfn(e, fn, sizeof fn, "cos", t); break;
    case XC_TOP_ATAN: mathfn(e, fn, sizeof fn, "atan", t); break;
    case XC_TOP_RSQRT:
      if (e->d->has_rsqrt) {
        P(w, "rsqrt(%s)", a[0]);
      } else {
        mathfn(e, fn, sizeof fn, "sqrt", t);
        P(w, "(%s / %s(%s))", one, fn, a[0]);
      }
      return;
    case XC_TOP_SIGMOID:
      if (fl && t != XC_F64 && e->d->sigmoid_call) {
        P(w, "%s(%s)", e->d->sigmoid_call, a[0]);
        return;
      }
      if (vmath) snprintf(fn, sizeof fn, "xc_vexpf");
      else mathfn(e, fn, sizeof fn, "exp", t);
      P(w, "(%s / (%s + %s(-(%s))))", one, one, fn, a[0]);
      return;
    case XC_TOP_RECIP: P(w, "(%s / (%s))", one, a[0]); return;
    case XC_TOP_NOT:
      if (t == XC_BOOL) P(w, "(%s)!(%s)", vtype(e, t), a[0]);
      else P(w, "(%s)~(%s)", vtype(e, t), a[0]);
      return;
    case XC_TOP_ADD: bin = "+"; break;
    case XC_TOP_SUB: bin = "-"; break;
    case XC_TOP_MUL: bin = "*"; break;
    case XC_TOP_DIV:
      if (trivial_divide(e, op) == 2) {
        P(w, "((%s)0)", vtype(e, op->results[0]->type.dtype));
        return;
      }
      if (narrow_divide(e, w, op, a, "/")) return;
      bin = "/";
      break;
    case XC_TOP_AND: bin = "&"; break;
    case XC_TOP_OR: bin = "|"; break;
    case XC_TOP_XOR: bin = "^"; break;
    case XC_TOP_SHL: bin = "<<"; break;
    case XC_TOP_SHR: bin = ">>"; break;
    case XC_TOP_REM:
      if (fl) {
        mathfn(e, fn, sizeof fn, "fmod", t);
        P(w, "%s(%s, %s)", fn, a[0], a[1]);
      } else {
        if (trivial_divide(e, op) == 1) {
          P(w, "(%s)", a[0]);
          return;
        }
        if (narrow_divide(e, w, op, a, "%")) return;
        bin = "%";
        break;
      }
      return;
    case XC_TOP_MAX:
    case XC_TOP_MIN: {
      int c = min_max_side(e, op);
      bool mx = op->opcode == XC_TOP_MAX;
      int k = fl && !e->d->work_groups ? const_side(op) : -1;
      if (c >= 0) P(w, "(%s)", a[c]); /* the ranges decide which side wins */
      /* C: a side that is a number (not NaN), as ReLU's and Clip's bounds:
       * one comparison gives XC_MAX/XC_MIN's value (ties give b; a NaN of
       * the other side propagates). With the number first it is x86's
       * max/min instruction itself; second, a compare and a blend (the
       * macros take five instructions per vector). Not in the work-group
       * dialects: PoCL's compiler turned min(-0.0, +0.0) written so into
       * -0.0 (a min without the sign of zero's order) */
      else if (k == 0) P(w, "((%s) %s (%s) ? (%s) : (%s))", a[0], mx ? ">" : "<", a[1], a[0], a[1]);
      else if (k == 1) P(w, "((%s) %s (%s) ? (%s) : (%s))", a[1], mx ? ">=" : "<=", a[0], a[1], a[0]);
      else P(w, "%s(%s, %s)", mx ? "XC_MAX" : "XC_MIN", a[0], a[1]);
      return;
    }
    case XC_TOP_POW: mathfn(e, fn, sizeof fn, "pow", t), P(w, "%s(%s, %s)", fn, a[0], a[1]); return;
    case XC_TOP_CMP: {
      static const char* const cmps[] = {"==", "!=", "<", "<=", ">", ">="};
      P(w, "(%s)((%s) %s (%s))", vtype(e, XC_BOOL), a[0], cmps[op->cmp], a[1]);
      return;
    }
    case XC_TOP_SELECT: {
      int c = decided(e, op->operands[0]);
      if (c >= 0) P(w, "(%s)", a[c ? 1 : 2]); /* the condition is decided */
      else P(w, "((%s) ? (%s) : (%s))", a[0], a[1], a[2]);
      return;
    }
    case XC_TOP_CAST: cast_expr(e, w, t, op->results[0]->type.dtype, a[0]); return;
    default: fail(e, xc_error(XC_INTERNAL, "cstyle: %s is not elementwise", xc_tiled_opcode_name(op->opcode)));
      return;
  }
  bool arith = op->opcode == XC_TOP_ADD || op->opcode == XC_TOP_SUB || op->opcode == XC_TOP_MUL;
  if (bin && arith && narrow_arith(e, w, op, a, bin)) return;
  if (bin) P(w, "(%s)((%s) %s (%s))", vtype(e, op->results[0]->type.dtype), a[0], bin, a[1]);
  else P(w, "%s(%s)", fn, a[0]);
}

/* Converts a loaded storage element to its compute value and back. */
void xc_cse_load_conv(xc_cstyle_writer_t* w, xc_dtype_t t, const char* x) {
  if (t == XC_F16) P(w, "xc_h2f(%s)", x);
  else if (t == XC_BF16) P(w, "xc_bf2f(%s)", x);
  else P(w, "%s", x);
}
void xc_cse_store_conv(em_t* e, xc_cstyle_writer_t* w, xc_dtype_t t, const char* x) {
  if (t == XC_F16) P(w, "xc_f2h(%s)", x);
  else if (t == XC_BF16) P(w, "xc_f2bf(%s)", x);
  else P(w, "(%s)(%s)", stype(e, t), x);
}
