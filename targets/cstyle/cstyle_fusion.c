/* Storage plans of the C dialect: fusion of element loops (consecutive
 * element loops over one shape whose ops read each other only at the loop's
 * own coordinates become one loop, op_group / op_member; elements used only
 * inside it are loop variables, ST_LOCAL, not arrays), carried tiles updated
 * in place, and accumulators whose zero init the dot makes itself. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* ---- fusion of element loops (C) ------------------------------------------------ */

/* Whether reading v at the coordinates of a loop over `shape` reads the
 * values written by members of group g only at the loop's own coordinates
 * (identity: so far the path from the reader kept those coordinates). */
static bool reads_aligned(em_t* e, const xc_tiled_value_t* v, const vinfo_t* shape, int g, bool identity) {
  if (!v) return true;
  vinfo_t* x = V(e, v);
  const xc_tiled_op_t* d = v->def;
  if (d && e->op_group[d->id] == g && e->op_member[d->id]) return identity && same_shape(x, shape);
  if (x->st != ST_VIRTUAL || !d) return true;
  bool elementwise = is_elementwise(d->opcode);
  for (int i = 0; i < d->num_operands; i++) {
    const xc_tiled_value_t* o = d->operands[i];
    bool keep = elementwise && identity && o && same_shape(V(e, o), shape);
    if (!reads_aligned(e, o, shape, g, keep)) return false;
  }
  return true;
}

/* Whether v is computed from a member of group g (directly or through
 * virtual values, which are expressions of their operands). */
static bool reads_group(em_t* e, const xc_tiled_value_t* v, int g) {
  if (!v || !v->def) return false;
  const xc_tiled_op_t* d = v->def;
  if (e->op_group[d->id] == g && e->op_member[d->id]) return true;
  if (V(e, v)->st != ST_VIRTUAL) return false;
  for (int i = 0; i < d->num_operands; i++)
    if (reads_group(e, d->operands[i], g)) return true;
  return false;
}

/* Role of op in a fused loop over `shape` (group g): 2 member (writes an
 * element of that shape: an elementwise op or a load with array storage),
 * 1 passive (a scalar definition emitted before the loop — a scalar
 * load of a read-only buffer too —, a virtual value
 * that emits nothing, or a load or elementwise op with an array of another
 * shape that reads no member — a row of LayerNorm's gamma inside a loop
 * over [rows, cols] — emitted before the loop as its own loop), 0 ends the
 * group. */
static int fusion_role(em_t* e, const xc_tiled_op_t* op, const vinfo_t* shape, int g) {
  if (op->opcode == XC_TOP_REDUCE) /* a float sum along the innermost axis: see xc_cse_plan_fusion */
    return shape && op->reduce == XC_REDUCE_SUM && fcompute(op->results[0]->type.dtype) &&
                   op->axis == shape->rank - 1 && same_shape(V(e, op->operands[0]), shape) &&
                   (V(e, op->results[0])->st == ST_ARRAY || V(e, op->results[0])->st == ST_SCALAR)
               ? 2
               : 0;
  if (op->opcode == XC_TOP_STORE) /* the element's store: see xc_cse_plan_fusion */
    return shape && !e->phased && op->operands[0]->type.scope == XC_SCOPE_GLOBAL &&
                   V(e, op->operands[1])->rank > 0 && same_shape(V(e, op->operands[1]), shape)
               ? 2
               : 0;
  const vinfo_t* r = op->num_results ? V(e, op->results[0]) : NULL;
  if (shape && r && r->st == ST_ARRAY && !same_shape(r, shape) &&
      (op->opcode == XC_TOP_LOAD || is_elementwise(op->opcode))) {
    for (int i = 0; i < op->num_operands; i++)
      if (reads_group(e, op->operands[i], g)) return 0;
    return 1;
  }
  switch (op->opcode) {
    case XC_TOP_LOAD:
      /* a scalar read of a read-only buffer (a Clip's bounds after a conv's
       * bias add) is a scalar definition: no store of the launch changes it */
      if (shape && r->st == ST_SCALAR && op->operands[0]->type.role == XC_ROLE_IN) return 1;
      return r->st == ST_ARRAY && (!shape || same_shape(r, shape)) ? 2 : 0;
    case XC_TOP_CONST:
    case XC_TOP_ARANGE:
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS:
    case XC_TOP_KNOB: return shape ? 1 : 0;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: return shape && r->st == ST_VIRTUAL ? 1 : 0;
    default: break;
  }
  if (!is_elementwise(op->opcode) || !r) return 0;
  if (r->st == ST_ARRAY) return !shape || same_shape(r, shape) ? 2 : 0;
  return shape && (r->st == ST_VIRTUAL || r->st == ST_SCALAR) ? 1 : 0;
}

/* Groups runs of consecutive ops of a block into one element loop: members
 * that write elements of one shape, reading each other only at the loop's
 * coordinates (so one pass over the elements computes the same values as
 * one loop per op). Loads read global memory, so the order of loads and
 * arithmetic across elements does not matter. Global stores of that shape
 * join too when the kernel is not phased (no global load follows a global
 * store, so no load of the kernel reads what it stores, whatever aliases):
 * the loop then has no simd pragma (offsets may repeat; the compiler
 * vectorizes what it can prove), and the stored value needs no array. A
 * float sum along the innermost axis of a member ends the group as its last
 * member: the loop accumulates it per row (a simd reduction, as xc_cse_emit_reduce
 * does). A member result that only later members of its group read becomes
 * ST_LOCAL. */
void xc_cse_plan_fusion(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      xc_cse_plan_fusion(e, op->body);
      continue;
    }
    if (fusion_role(e, op, NULL, 0) != 2) continue;
    const vinfo_t* shape = V(e, op->results[0]);
    int g = ++e->num_groups, members = 0, j = i;
    for (; j < b->num_ops; j++) {
      const xc_tiled_op_t* o = b->ops[j];
      int role = fusion_role(e, o, shape, g);
      if (role == 2)
        for (int k = 0; k < o->num_operands && role; k++)
          if (o->operands[k] && !reads_aligned(e, o->operands[k], shape, g, same_shape(V(e, o->operands[k]), shape)))
            role = 0;
      if (!role) break;
      e->op_group[o->id] = g;
      e->op_member[o->id] = role == 2;
      members += role == 2;
      if (role == 2 && o->opcode == XC_TOP_REDUCE) {
        j++;
        break;
      }
    }
    if (members < 2) {
      for (int m = i; m < j; m++) e->op_group[b->ops[m]->id] = 0, e->op_member[b->ops[m]->id] = false;
      continue;
    }
    /* trailing passive ops are emitted normally */
    while (!e->op_member[b->ops[j - 1]->id]) e->op_group[b->ops[--j]->id] = 0;
    /* results read only by members of this group need no array */
    for (int m = i; m < j; m++) {
      const xc_tiled_op_t* o = b->ops[m];
      if (!e->op_member[o->id] || !o->num_results || o->opcode == XC_TOP_REDUCE) continue;
      const xc_tiled_value_t* v = o->results[0];
      int in_group = 0;
      for (int u = i; u < j; u++) {
        const xc_tiled_op_t* w = b->ops[u];
        if (!e->op_member[w->id]) continue;
        for (int k = 0; k < w->num_operands; k++) in_group += w->operands[k] == v;
      }
      if (in_group == e->nuses[v->id] && !V(e, v)->yielded) V(e, v)->st = ST_LOCAL;
    }
    i = j - 1;
  }
}

/* In-place carried updates (C): a loop's next carried value computed by an
 * elementwise op of the body that is the only reader of the carried value,
 * at its own coordinates (the depthwise conv's `acc + x * w` per tap), or
 * by a dot into that accumulator (a GEMM's K step), is
 * written straight over the carried array: element f of the op reads
 * acc[f] and then writes acc[f], and nothing reads acc afterwards in the
 * iteration. Without this every iteration wrote a second array and copied
 * it back at the end. */
/* A loop nested in a loop's body that carries the outer loop's value
 * through (its init is the outer body argument, read by nothing else, and
 * its result is what the outer body yields in that slot: a convolution's K
 * loop inside its loop over window rows) works on the outer array itself:
 * without this, every outer iteration copied the tile into the inner
 * loop's array and back. Runs before the inner loop's own in-place plan,
 * which then names the inner result after the shared array. */
static void share_nested(em_t* e, const xc_tiled_block_t* body, const xc_tiled_op_t* y) {
  for (int i = 0; i < body->num_ops; i++) {
    const xc_tiled_op_t* in = body->ops[i];
    if (in->opcode != XC_TOP_FOR) continue;
    for (int c = 0; 3 + c < in->num_operands && c + 1 < in->body->num_args && c < in->num_results; c++) {
      const xc_tiled_value_t* init = in->operands[3 + c], *iarg = in->body->args[c + 1], *ires = in->results[c];
      int slot = -1, yields = 0;
      for (int j = 0; j < y->num_operands; j++)
        if (y->operands[j] == ires) slot = j, yields++;
      if (yields != 1 || slot + 1 >= body->num_args || init != body->args[slot + 1]) continue;
      vinfo_t* xo = V(e, init), *xa = V(e, iarg), *xr = V(e, ires);
      if (e->nuses[init->id] != 1 || e->nuses[ires->id] != 1 || xo->st != ST_ARRAY || xa->st != ST_ARRAY ||
          !same_shape(xo, xa) || init->type.dtype != iarg->type.dtype || xa->in_place)
        continue;
      memcpy(xa->name, xo->name, sizeof xa->name);
      memcpy(xr->name, xo->name, sizeof xr->name);
      xa->in_place = xr->in_place = true;
    }
  }
}

void xc_cse_plan_in_place(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode != XC_TOP_FOR) continue;
    const xc_tiled_block_t* body = op->body;
    const xc_tiled_op_t* y = body->num_ops ? body->ops[body->num_ops - 1] : NULL;
    if (y && y->opcode == XC_TOP_YIELD) share_nested(e, body, y);
    xc_cse_plan_in_place(e, body);
    if (!y || y->opcode != XC_TOP_YIELD) continue;
    for (int c = 0; c < y->num_operands && c + 1 < body->num_args; c++) {
      const xc_tiled_value_t* arg = body->args[c + 1], *v = y->operands[c];
      const xc_tiled_op_t* d = v ? v->def : NULL;
      /* elementwise, or a dot accumulating into the carried value (its
       * register blocks read their part of the accumulator, then write it) */
      bool dot = d && d->opcode == XC_TOP_DOT && d->num_operands == 3 && d->operands[2] == arg &&
                 d->operands[0] != arg && d->operands[1] != arg;
      if (!d || v == arg || d->parent != body || (!is_elementwise(d->opcode) && !dot) || d->num_results != 1)
        continue;
      vinfo_t* xa = V(e, arg), *xv = V(e, v);
      if (xa->st != ST_ARRAY || xv->st != ST_ARRAY || !same_shape(xa, xv) || xv->in_place ||
          arg->type.dtype != v->type.dtype)
        continue;
      int reads = 0, slots = 0;
      for (int j = 0; j < d->num_operands; j++) reads += d->operands[j] == arg;
      for (int j = 0; j < y->num_operands; j++) slots += y->operands[j] == v;
      /* d is every reader of the carried value, and v is yielded once */
      if (!reads || reads != e->nuses[arg->id] || slots != 1) continue;
      memcpy(xv->name, xa->name, sizeof xv->name);
      xv->in_place = true;
    }
  }
}

/* A loop bound that is a constant, or -1. */
static int64_t const_bound(const xc_tiled_value_t* v) {
  const xc_tiled_op_t* d = v ? v->def : NULL;
  return d && d->opcode == XC_TOP_CONST && v->type.rank == 0 ? d->i : -1;
}

/* Whether loop runs at least once and starts at a constant. */
static bool runs(const xc_tiled_op_t* loop) {
  int64_t lb = const_bound(loop->operands[0]), ub = const_bound(loop->operands[1]);
  return lb >= 0 && ub > lb;
}

/* The blocked dot in block b that is the single reader of carried value
 * arg and accumulates into it in place, else NULL. */
static const xc_tiled_op_t* in_place_dot(em_t* e, const xc_tiled_block_t* b, const xc_tiled_value_t* arg) {
  if (e->nuses[arg->id] != 1) return NULL;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* d = b->ops[i];
    if (d->opcode != XC_TOP_DOT || d->operands[2] != arg) continue;
    vinfo_t* r = V(e, d->results[0]);
    bool ok = r->in_place && !strcmp(r->name, V(e, arg)->name) && xc_cse_dot_blocked_fits(e, d);
    return ok ? d : NULL;
  }
  return NULL;
}

/* Zero-initialized accumulators (C): a loop whose carried tile starts as
 * constant 0 and is read only by a blocked dot accumulating into it in
 * place (a GEMM's or convolution's K loop; or through a nested loop that
 * shares the tile, share_nested) need not fill it: the dot starts its
 * register blocks at 0 on the first iteration instead of loading them, and
 * writes every element. Only loops that run at least once (constant bounds). */
void xc_cse_plan_zero_entry(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode != XC_TOP_FOR) continue;
    xc_cse_plan_zero_entry(e, op->body);
    if (!runs(op)) continue;
    for (int c = 0; 3 + c < op->num_operands && c + 1 < op->body->num_args; c++) {
      const xc_tiled_value_t* init = op->operands[3 + c], *arg = op->body->args[c + 1];
      const xc_tiled_op_t* z = init->def;
      if (!z || z->opcode != XC_TOP_CONST || z->f != 0 || signbit(z->f) || V(e, arg)->st != ST_ARRAY) continue;
      const xc_tiled_op_t* dot = in_place_dot(e, op->body, arg);
      const xc_tiled_op_t* inner = NULL;
      for (int j = 0; !dot && j < op->body->num_ops; j++) {
        const xc_tiled_op_t* in = op->body->ops[j];
        if (in->opcode != XC_TOP_FOR || !runs(in) || e->nuses[arg->id] != 1) continue;
        for (int c2 = 0; 3 + c2 < in->num_operands && c2 + 1 < in->body->num_args; c2++) {
          const xc_tiled_value_t* iarg = in->body->args[c2 + 1];
          if (in->operands[3 + c2] != arg || !V(e, iarg)->in_place || strcmp(V(e, iarg)->name, V(e, arg)->name))
            continue;
          dot = in_place_dot(e, in->body, iarg);
          inner = dot ? in : NULL;
        }
      }
      if (!dot) continue;
      vinfo_t* r = V(e, dot->results[0]);
      r->zero_when[0] = op;
      r->zero_when[1] = inner;
      V(e, arg)->zero_entry = true;
    }
  }
}
