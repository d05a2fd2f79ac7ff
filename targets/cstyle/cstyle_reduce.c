/* Reductions of the C-family emitter: in a loop, cooperative across the
 * work-items of a program (a tree in work-group memory), and across the
 * lanes of a row in registers (shuffles), plus the lane trees of the C
 * dialect's vectorized reductions (docs/emitter.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* Bytes of a value of dtype dt in the dialect's value type (16-bit floats compute in float). */
static size_t value_bytes(xc_dtype_t dt) {
  return dt == XC_F64 ? 8 : fcompute(dt) ? 4 : dt == XC_BOOL ? 1 : xc_dtype_size(dt);
}

static void combine(em_t* e, xc_cstyle_writer_t* w, int kind, const char* acc, const char* v) {
  (void)e;
  switch (kind) {
    case XC_REDUCE_SUM: P(w, "%s = %s + (%s);", acc, acc, v); break;
    case XC_REDUCE_PROD: P(w, "%s = %s * (%s);", acc, acc, v); break;
    case XC_REDUCE_MAX: P(w, "%s = XC_MAX(%s, %s);", acc, acc, v); break;
    default: P(w, "%s = XC_MIN(%s, %s);", acc, acc, v); break;
  }
}

/* C: the lanes a reduction along an axis of len elements folds into (0: one
 * accumulator). A row of a few vectors' length (an attention block's 16
 * keys) is unrolled by the compiler before it vectorizes, and its sum then
 * becomes a chain of scalar adds in order, 16 dependent adds a row; folding
 * lane j of every vector into accumulator j (lane-wise: vector ops) and then
 * the lanes in a tree (log2 W vector steps) keeps it in vector registers.
 * Sums and products take this only where the loop already allowed any
 * order (the simd reduction); max and min have one value in any order
 * (NaN propagates through XC_MAX/XC_MIN whatever the order). f32 and f64. */
int64_t xc_cse_reduce_lanes(em_t* e, xc_dtype_t t, int64_t len) {
  if (e->d->work_groups || !e->d->simd_pragma || (t != XC_F32 && t != XC_F64)) return 0;
  int64_t w = (int64_t)e->simd * 4 / (t == XC_F64 ? 8 : 4);
  if (w > 16) w = 16;
  return w >= 4 && (w & (w - 1)) == 0 && len >= w && len <= 8 * w && len % w == 0 ? w : 0;
}

/* Lanes xl[0 .. w-1] folded in a tree into xl[0]. */
void xc_cse_lanes_tree(em_t* e, int kind, int64_t w) {
  const char* op = kind == XC_REDUCE_SUM ? "+" : kind == XC_REDUCE_PROD ? "*" : NULL;
  for (int64_t h = w / 2; h >= 1; h /= 2) {
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    if (op)
      L("for (%s xj = 0; xj < %" PRId64 "; xj++) xl[xj] = xl[xj] %s xl[xj + %" PRId64 "];\n", itype(e), h, op, h);
    else
      L("for (%s xj = 0; xj < %" PRId64 "; xj++) xl[xj] = %s(xl[xj], xl[xj + %" PRId64 "]);\n", itype(e), h,
        kind == XC_REDUCE_MAX ? "XC_MAX" : "XC_MIN", h);
  }
}

/* Work-group dialects: a reduction with fewer results than work-items runs
 * cooperatively. G work-items (a power of two, G * results <= T, G <= the
 * axis length) share each result: each folds a strided part of the axis,
 * then a tree in local memory (log2 G steps, a barrier each) combines the G
 * partials, and the result is handed to the work-item that owns it. Without
 * this, a row reduction would keep one work-item per row busy reading the
 * whole row while the rest of the program waits. Returns false when the
 * plain per-result loop is used instead. */
static bool emit_reduce_coop(em_t* e, const xc_tiled_op_t* op) {
  if (!e->d->work_groups) return false;
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  int axis = (int)op->axis;
  int64_t len = xi->dims[axis];
  bool scalar = r->st == ST_SCALAR;
  int64_t R = scalar ? 1 : r->n;
  /* a private result is handed over in the default layout (element lid in slot 0) */
  if (!(scalar || r->st == ST_ARRAY || (r->st == ST_PRIVATE && R <= e->T && !xc_cse_frag_shape(e, r))) || xi->rank > 3)
    return false;
  int64_t G = 1;
  int lg = 0;
  while (G * 2 * R <= e->T && G * 2 <= len) G *= 2, lg++;
  if (G < 2) return false;
  xc_dtype_t dt = res->type.dtype;
  const char* t = vtype(e, dt);
  const char* it = itype(e);
  size_t esize = value_bytes(dt);
  P(&e->decls, "%s%s xr%d[%" PRId64 "];\n", e->d->local_qual, t, res->id, e->T);
  e->local_bytes += e->T * (int64_t)esize;
  /* the result's coordinates, from its flat index rf */
  const char* rc[3] = {"rc0", "rc1", "rc2"};
  const char* c[XC_TILED_MAX_RANK], *c0[XC_TILED_MAX_RANK];
  for (int i = 0, j = 0; i < xi->rank; i++) {
    c[i] = i == axis ? "q" : rc[j];
    c0[i] = i == axis ? "rs" : rc[j];
    if (i != axis) j++;
  }
  xc_cstyle_writer_t first = {0}, item = {0}, comb = {0}, tree = {0};
  xc_cse_read_at(e, &first, x, c0, false);
  xc_cse_read_at(e, &item, x, c, false);
  combine(e, &comb, op->reduce, "racc", wstr(&item));
  char a[48], b[48];
  snprintf(a, sizeof a, "xr%d[lid]", res->id);
  snprintf(b, sizeof b, "xr%d[lid + s]", res->id);
  combine(e, &tree, op->reduce, a, b);
  if (scalar) L("%s %s;\n", t, r->name);
  L("{\n");
  e->depth++;
  L("const %s rf = (%s)lid >> %d, rs = (%s)lid & %" PRId64 ";\n", it, it, lg, it, G - 1);
  L("if (rf < %" PRId64 ") {\n", R);
  e->depth++;
  int rr = xi->rank - 1;
  const int64_t* rd = r->dims;
  if (!scalar && rr == 1) L("const %s rc0 = rf;\n", it);
  if (!scalar && rr == 2) L("const %s rc0 = rf / %" PRId64 ", rc1 = rf %% %" PRId64 ";\n", it, rd[1], rd[1]);
  if (!scalar && rr == 3)
    L("const %s rc0 = rf / %" PRId64 ", rc1 = (rf / %" PRId64 ") %% %" PRId64 ", rc2 = rf %% %" PRId64 ";\n", it,
      rd[1] * rd[2], rd[2], rd[1], rd[2]);
  if (scalar && rr > 0) /* a rank-0 result of a rank>1 tile: the other axes have extent 1 */
    for (int i = 0; i < rr; i++) L("const %s rc%d = 0;\n", it, i);
  L("%s racc = %s;\n", t, wstr(&first));
  L("for (%s q = rs + %" PRId64 "; q < %" PRId64 "; q += %" PRId64 ") %s\n", it, G, len, G, wstr(&comb));
  L("xr%d[lid] = racc;\n", res->id);
  e->depth--;
  L("}\n");
  xc_cse_barrier(e);
  L("for (int s = %" PRId64 "; s > 0; s >>= 1) {\n", G / 2);
  e->depth++;
  L("if (rs < s && rf < %" PRId64 ") %s\n", R, wstr(&tree));
  xc_cse_barrier(e);
  e->depth--;
  L("}\n");
  if (scalar) L("%s = xr%d[0];\n", r->name, res->id);
  else if (r->st == ST_ARRAY) L("if (lid < %" PRId64 ") %s[lid] = xr%d[lid << %d];\n", R, r->name, res->id, lg);
  else L("if (lid < %" PRId64 ") %s[0] = xr%d[lid << %d];\n", R, r->name, res->id, lg);
  xc_cse_barrier(e); /* the scratch is free again; an array result is visible to all */
  e->depth--;
  L("}\n");
  if (first.oom || item.oom || comb.oom || tree.oom) fail(e, xc_error_oom());
  free(first.data), free(item.data), free(comb.data), free(tree.data);
  return true;
}

/* Whether some dot of block b (or of a loop inside it) has x's shape. */
static bool dot_shaped(em_t* e, const xc_tiled_block_t* b, const vinfo_t* x) {
  /* an operand's shape of whole chunks may take the chunked layout too
   * (plan_chunk_tiles) */
  bool chunks = xc_cse_whole_chunks(e, x);
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_DOT && same_shape(V(e, op->results[0]), x)) return true;
    if (op->opcode == XC_TOP_DOT && chunks &&
        (same_shape(V(e, op->operands[0]), x) || same_shape(V(e, op->operands[1]), x)))
      return true;
    if (op->opcode == XC_TOP_FOR && dot_shaped(e, op->body, x)) return true;
  }
  return false;
}

/* Work-group dialects: whether a reduction can run on the operand where its
 * threads hold it (the default layout, element f = lid + j * T in slot j):
 * along the last axis of a tile of rank <= 2 whose row length C is a power
 * of two that T divides or that divides T, and whose every slot is full
 * (n a multiple of T), and no dot has its shape (a matrix plan may hold
 * such a tile in the accumulator's layout, which the analysis cannot know
 * yet). Then a private operand stays in registers; the analysis uses this
 * to keep it private (xc_cse_mark_use). */
bool xc_cse_lanes_shape(em_t* e, const xc_tiled_op_t* op) {
  if (!e->d->work_groups || op->num_operands < 1) return false;
  vinfo_t* xi = V(e, op->operands[0]);
  if (xi->rank < 1 || xi->rank > 2 || op->axis != xi->rank - 1) return false;
  int64_t C = xi->dims[xi->rank - 1], T = e->T;
  if (C < 1 || (C & (C - 1)) || T < 1 || (T & (T - 1))) return false;
  if (!(xi->n >= T && xi->n % T == 0 && (C % T == 0 || T % C == 0))) return false;
  /* a tile of a dot's shape may follow the accumulator's register layout */
  return !dot_shaped(e, e->k->body, xi);
}

/* Value types a dialect's lane exchange moves (f16/bf16 compute in float). */
static bool shfl_type(xc_dtype_t t) {
  switch (t) {
    case XC_F32: case XC_F64: case XC_F16: case XC_BF16:
    case XC_I32: case XC_I64: case XC_U32: case XC_U64: return true;
    default: return false;
  }
}

/* The xc_cse_lanes_shape reduction (docs/emitter.md, "Row reductions in
 * registers"). A thread's slots of one row are m = max(1, C / T)
 * consecutive slots, so it folds them into J / m register partials
 * (J slots); the G = min(T, C) threads of a row are aligned groups of
 * consecutive lanes. Where the dialect exchanges lanes, partials combine
 * by an xor butterfly over B = min(G, 32) lanes (every lane ends with the
 * same value); then the W = G / B partials of a row go to local memory,
 * one barrier, and each thread owning a result slot folds them in order. */
static void emit_reduce_lanes(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  if (r->st != ST_SCALAR && r->st != ST_ARRAY && r->st != ST_PRIVATE) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: row reduction %d has no register result", op->id));
    return;
  }
  xc_dtype_t dt = res->type.dtype;
  const char* t = vtype(e, dt);
  const char* it = itype(e);
  int64_t T = e->T, C = xi->dims[xi->rank - 1], J = xi->n / T;
  int64_t m = C >= T ? C / T : 1, np = J / m, G = C < T ? C : T, R = xi->n / C;
  int64_t B = e->d->shfl_xor_fmt && shfl_type(dt) ? (G < 32 ? G : 32) : 1, W = G / B, W_fold = W;
  size_t esize = value_bytes(dt);
  P(&e->decls, "%s%s xr%d[%" PRId64 "];\n", e->d->local_qual, t, res->id, R * W);
  e->local_bytes += R * W * (int64_t)esize;
  char pk[48];
  snprintf(pk, sizeof pk, "xp%d[j / %" PRId64 "]", res->id, m);
  if (r->st == ST_SCALAR) L("%s %s;\n", t, r->name);
  L("{\n");
  e->depth++;
  L("%s xp%d[%" PRId64 "];\n", t, res->id, np);
  /* the thread's slots, folded per row */
  int close = xc_cse_loop_open(e, xi, false);
  expr_t ex;
  const char* v = xc_cse_opnd(e, &ex, x, xi);
  xc_cstyle_writer_t comb = {0};
  combine(e, &comb, op->reduce, pk, v);
  if (m == 1) L("%s = %s;\n", pk, v);
  else L("if (j %% %" PRId64 " == 0) %s = %s; else %s\n", m, pk, v, wstr(&comb));
  xc_cse_loop_close(e, close);
  xc_cse_expr_free(&ex);
  free(comb.data);
  if (B > 1) {
    /* xor butterfly: the format's %s is the partial, its %d the lane mask s */
    char cur[48];
    snprintf(cur, sizeof cur, "xp%d[k]", res->id);
    xc_cstyle_writer_t fm = {0}, c2 = {0};
    for (const char* q = e->d->shfl_xor_fmt; *q; q++) {
      if (q[0] == '%' && q[1] == 's') P(&fm, "%s", cur), q++;
      else if (q[0] == '%' && q[1] == 'd') P(&fm, "s"), q++;
      else P(&fm, "%c", *q);
    }
    combine(e, &c2, op->reduce, cur, "o");
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int k = 0; k < %" PRId64 "; k++) {\n", np);
    e->depth++;
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int s = 1; s < %" PRId64 "; s <<= 1) { const %s o = %s; %s }\n", B, t, wstr(&fm), wstr(&c2));
    e->depth--;
    L("}\n");
    if (c2.oom || fm.oom) fail(e, xc_error_oom());
    free(c2.data), free(fm.data);
  }
  /* lane 0 of each B-group writes its row's partial w = (lid % G) / B */
  if (B > 1) L("if ((lid & %" PRId64 ") == 0) {\n", B - 1);
  else L("{\n");
  e->depth++;
  if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
  /* where partial k of this thread goes: its row's W partials, entry (lid % G) / B */
  char xi_k[160];
  snprintf(xi_k, sizeof xi_k, "((lid + (%s)k * %" PRId64 ") / %" PRId64 ") * %" PRId64 " + (lid & %" PRId64 ") / %" PRId64,
           it, m * T, C, W, G - 1, B);
  L("for (int k = 0; k < %" PRId64 "; k++) xr%d[%s] = xp%d[k];\n", np, res->id, xi_k, res->id);
  e->depth--;
  L("}\n");
  xc_cse_barrier(e);
  if (B == 1 && W > 8) {
    /* no lane exchange: a tree over a row's W partials, a barrier a step */
    xc_cstyle_writer_t tr = {0};
    char at[96], up[96];
    snprintf(at, sizeof at, "xr%d[xr_i]", res->id);
    snprintf(up, sizeof up, "xr%d[xr_i + s]", res->id);
    combine(e, &tr, op->reduce, at, up);
    L("for (int s = %" PRId64 "; s > 0; s >>= 1) {\n", W / 2);
    e->depth++;
    L("if ((lid & %" PRId64 ") < s) {\n", G - 1);
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("  for (int k = 0; k < %" PRId64 "; k++) { const %s xr_i = %s; %s }\n", np, it, xi_k, wstr(&tr));
    L("}\n");
    xc_cse_barrier(e);
    e->depth--;
    L("}\n");
    if (tr.oom) fail(e, xc_error_oom());
    free(tr.data);
    W_fold = 1;
  }
  xc_cstyle_writer_t fold = {0};
  combine(e, &fold, op->reduce, "racc", W_fold > 1 ? "xr_w" : "racc");
  char rd[96];
  if (r->st == ST_SCALAR) {
    L("%s racc = xr%d[0];\n", t, res->id);
    if (W_fold > 1)
      L("for (int w = 1; w < %" PRId64 "; w++) { const %s xr_w = xr%d[w]; %s }\n", W_fold, t, res->id, wstr(&fold));
    L("%s = racc;\n", r->name);
  } else {
    if (r->st == ST_ARRAY) {
      L("for (%s f = lid; f < %" PRId64 "; f += %" PRId64 ") {\n", it, R, T);
      snprintf(rd, sizeof rd, "%s[f]", r->name);
    } else {
      int64_t slots = (R + T - 1) / T;
      if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
      L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
      e->depth++;
      xc_cse_slot_f(e, r); /* the result's own slot layout */
      L("if (f < %" PRId64 ") {\n", R);
      snprintf(rd, sizeof rd, "%s[j]", r->name);
    }
    e->depth++;
    L("%s racc = xr%d[f * %" PRId64 "];\n", t, res->id, W);
    if (W_fold > 1)
      L("for (int w = 1; w < %" PRId64 "; w++) { const %s xr_w = xr%d[f * %" PRId64 " + w]; %s }\n", W_fold, t,
        res->id, W, wstr(&fold));
    L("%s = racc;\n", rd);
    e->depth--;
    L("}\n");
    if (r->st == ST_PRIVATE) {
      e->depth--;
      L("}\n");
    }
  }
  xc_cse_barrier(e); /* the scratch is free again; an array result is visible to all */
  e->depth--;
  L("}\n");
  if (fold.oom) fail(e, xc_error_oom());
  free(fold.data);
}

void xc_cse_emit_reduce(em_t* e, const xc_tiled_op_t* op) {
  if (xc_cse_lanes_shape(e, op)) {
    emit_reduce_lanes(e, op);
    return;
  }
  if (emit_reduce_coop(e, op)) return;
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  int axis = (int)op->axis;
  int64_t len = xi->dims[axis];
  const char* t = vtype(e, res->type.dtype);
  const char* c[XC_TILED_MAX_RANK];
  for (int i = 0, j = 0; i < xi->rank; i++) c[i] = i == axis ? "q" : loop_coords[j++];
  const char* c0[XC_TILED_MAX_RANK];
  for (int i = 0; i < xi->rank; i++) c0[i] = i == axis ? "0" : c[i];
  xc_cstyle_writer_t first = {0}, item = {0}, comb = {0};
  xc_cse_read_at(e, &first, x, c0, false);
  xc_cse_read_at(e, &item, x, c, false);
  combine(e, &comb, op->reduce, "racc", wstr(&item));
  bool scalar = r->st == ST_SCALAR;
  int close = 0;
  if (scalar) {
    L("%s %s;\n", t, r->name);
    L("{\n");
    e->depth++;
  } else {
    close = xc_cse_loop_open(e, r, false);
  }
  int64_t w = xc_cse_reduce_lanes(e, res->type.dtype, len);
  if (w && !fcompute(x->type.dtype)) w = 0;
  if (w) { /* lanes (reduce_lanes): lane j folds elements j, j + w, ...; then a tree */
    const char* it = itype(e);
    xc_cstyle_writer_t lc = {0};
    combine(e, &lc, op->reduce, "xl[xj]", wstr(&item));
    L("%s xl[%" PRId64 "];\n", t, w);
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s xj = 0; xj < %" PRId64 "; xj++) { const %s q = xj; xl[xj] = %s; }\n", it, w, it, wstr(&item));
    L("for (%s xb = %" PRId64 "; xb < %" PRId64 "; xb += %" PRId64 ") {\n", it, w, len, w);
    e->depth++;
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s xj = 0; xj < %" PRId64 "; xj++) { const %s q = xb + xj; %s }\n", it, w, it, wstr(&lc));
    xc_cse_loop_close(e, 1);
    xc_cse_lanes_tree(e, op->reduce, w);
    L("%s racc = xl[0];\n", t);
    if (lc.oom) fail(e, xc_error_oom());
    free(lc.data);
  } else {
    L("%s racc = %s;\n", t, wstr(&first));
    if (e->d->simd_pragma && fcompute(res->type.dtype) && (op->reduce == XC_REDUCE_SUM || op->reduce == XC_REDUCE_PROD))
      L("%s reduction(%s:racc)\n", e->d->simd_pragma, op->reduce == XC_REDUCE_SUM ? "+" : "*");
    L("for (%s q = 1; q < %" PRId64 "; q++) %s\n", itype(e), len, wstr(&comb));
  }
  if (scalar) {
    L("%s = racc;\n", r->name);
    e->depth--;
    L("}\n");
  } else {
    char d[96];
    L("%s = racc;\n", xc_cse_dst(e, r, d, sizeof d));
    xc_cse_loop_close(e, close);
    if (r->st == ST_ARRAY) xc_cse_barrier(e);
  }
  if (first.oom || item.oom || comb.oom) fail(e, xc_error_oom());
  free(first.data), free(item.data), free(comb.data);
}
