/* Analysis before emission in the C-family emitter: the storage class of
 * every value, whether global loads follow global stores (phases), operand
 * use counts, the declarations of tile arrays, and the support check
 * (xc_cstyle_supports). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* ---- analysis: storage classes ------------------------------------------------- */

/* Whether a global load follows a global store (in program order, or in the
 * same loop body): then work-items must see each other's global stores
 * (buffers may alias: views of a kernel's outputs are read by its later phases).
 * A load from a read-only (`in`) parameter never sees this launch's stores:
 * lowering gives every buffer the kernel writes, and every view of one, a
 * writable role, and a runtime never binds an output's memory to an input
 * of the same launch. */
void xc_cse_scan_phases(em_t* e, const xc_tiled_block_t* b, bool* stored) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    bool global = op->num_operands > 0 && op->operands[0] && op->operands[0]->type.kind == XC_TILED_MEMREF &&
                  op->operands[0]->type.scope == XC_SCOPE_GLOBAL;
    if (op->opcode == XC_TOP_STORE && global) *stored = true;
    if (op->opcode == XC_TOP_LOAD && global && *stored && op->operands[0]->type.role != XC_ROLE_IN) e->phased = true;
    if (op->opcode == XC_TOP_FOR) {
      bool inner = false;
      xc_cse_scan_phases(e, op->body, &inner);
      if (inner) {
        /* a store in the body precedes the loads of the next iteration */
        bool again = true;
        xc_cse_scan_phases(e, op->body, &again);
        *stored = true;
      }
    }
  }
}

void xc_cse_mark_use(em_t* e, const xc_tiled_value_t* v, const vinfo_t* loop_shape) {
  if (!v) return;
  vinfo_t* x = V(e, v);
  if (!loop_shape || !same_shape(x, loop_shape)) x->not_private = true;
  /* read broadcast into a larger tile, constant along one of its dims (a
   * row's [BM,1] offset in a [BM,BC] loop, a column's [1,BK] tap
   * coordinates in the [BM,BK] gather of a convolution): worth computing
   * once, not again for every row or column of the larger loop */
  if (loop_shape && x->rank > 0 && x->rank == loop_shape->rank)
    for (int d = 0; d < x->rank; d++)
      if (x->dims[d] == 1 && loop_shape->dims[d] > 1) x->broadcast_use = true;
}

/* Whether block b is `body` or nested in it. */
static bool block_within(const xc_tiled_block_t* b, const xc_tiled_block_t* body) {
  for (; b; b = b->parent ? b->parent->parent : NULL)
    if (b == body) return true;
  return false;
}

/* Marks the values read in `b` (nested in loop body `body`) that are
 * defined outside `body`. */
static void mark_invariant_uses(em_t* e, const xc_tiled_block_t* b, const xc_tiled_block_t* body) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_operands; j++) {
      const xc_tiled_value_t* v = op->operands[j];
      if (v && v->def && !block_within(v->def->parent, body)) V(e, v)->invariant_use = true;
    }
    if (op->opcode == XC_TOP_FOR) mark_invariant_uses(e, op->body, body);
  }
}

void xc_cse_analyze_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    const vinfo_t* r = op->num_results ? V(e, op->results[0]) : NULL;
    switch (op->opcode) {
      case XC_TOP_LOAD:
        for (int j = 1; j < op->num_operands; j++) xc_cse_mark_use(e, op->operands[j], r);
        if (op->num_operands > 2 && op->operands[2]) V(e, op->operands[2])->mask_use = true;
        break;
      case XC_TOP_STORE:
        for (int j = 1; j < op->num_operands; j++) xc_cse_mark_use(e, op->operands[j], V(e, op->operands[1]));
        if (op->num_operands > 3 && op->operands[3]) V(e, op->operands[3])->mask_use = true;
        break;
      case XC_TOP_DOT:
        xc_cse_mark_use(e, op->operands[0], NULL);
        xc_cse_mark_use(e, op->operands[1], NULL);
        xc_cse_mark_use(e, op->operands[2], r);
        break;
      case XC_TOP_FOR:
        for (int j = 3; j < op->num_operands; j++) xc_cse_mark_use(e, op->operands[j], V(e, op->operands[j]));
        mark_invariant_uses(e, op->body, op->body);
        xc_cse_analyze_block(e, op->body);
        break;
      case XC_TOP_YIELD:
        for (int j = 0; j < op->num_operands; j++) {
          xc_cse_mark_use(e, op->operands[j], V(e, op->operands[j]));
          V(e, op->operands[j])->yielded = true;
        }
        break;
      case XC_TOP_REDUCE:
        /* a row reduction reads its operand where the threads hold it */
        xc_cse_mark_use(e, op->operands[0], xc_cse_lanes_shape(e, op) ? V(e, op->operands[0]) : NULL);
        break;
      case XC_TOP_EXPAND_DIMS:
      case XC_TOP_BROADCAST:
      case XC_TOP_TRANS:
        xc_cse_mark_use(e, op->operands[0], NULL);
        break;
      default:
        for (int j = 0; j < op->num_operands; j++) xc_cse_mark_use(e, op->operands[j], r);
        if (op->opcode == XC_TOP_SELECT) V(e, op->operands[0])->select_use = true;
        break;
    }
  }
}

static void set_shape(em_t* e, vinfo_t* x, const xc_tiled_type_t* t) {
  x->rank = t->rank;
  x->n = 1;
  for (int i = 0; i < t->rank; i++) {
    x->dims[i] = xc_tiled_dim_resolve(t->dims[i], e->knobs);
    x->n *= x->dims[i];
  }
}

static void name_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  if (v->param >= 0) {
    xc_cstyle_param_name(v, x->name, sizeof x->name);
  } else if (v->name) {
    char s[40];
    xc_cse_sanitize(v->name, s, sizeof s, 24);
    snprintf(x->name, sizeof x->name, "%s_%d", s, v->id);
  } else {
    snprintf(x->name, sizeof x->name, "v%d", v->id);
  }
}

void xc_cse_classify_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  set_shape(e, x, &v->type);
  if (!x->name[0]) name_value(e, v);
  if (v->type.dtype == XC_F64) e->uses_f64 = true;
  if (v->type.kind == XC_TILED_MEMREF) {
    x->st = ST_MEM;
    return;
  }
  if (x->rank == 0) {
    x->st = ST_SCALAR;
    return;
  }
  if (v->def) {
    const xc_tiled_op_t* op = v->def;
    switch (op->opcode) {
      case XC_TOP_CONST:
      case XC_TOP_ARANGE: x->st = ST_VIRTUAL, x->cost = 1, x->affine = true; return;
      case XC_TOP_EXPAND_DIMS:
      case XC_TOP_BROADCAST:
      case XC_TOP_TRANS:
        if (x->yielded) break;
        x->st = ST_VIRTUAL, x->cost = V(e, op->operands[0])->cost;
        x->affine = V(e, op->operands[0])->st == ST_VIRTUAL && V(e, op->operands[0])->affine;
        return;
      default: break;
    }
    if (is_elementwise(op->opcode) && op->num_operands <= 3 && !x->yielded) {
      int cost = 1;
      bool ok = true;
      for (int i = 0; i < op->num_operands && ok; i++) {
        vinfo_t* o = V(e, op->operands[i]);
        ok = o->st == ST_SCALAR || o->st == ST_VIRTUAL;
        cost += o->st == ST_SCALAR ? 1 : o->cost;
      }
      /* affine in the tile coordinates: sums of aranges and uniform terms,
       * times uniform factors (a tile's `n0 + arange` column index) */
      bool affine = false;
      if (ok && (op->opcode == XC_TOP_ADD || op->opcode == XC_TOP_SUB || op->opcode == XC_TOP_MUL) &&
          op->num_operands == 2) {
        const vinfo_t* o0 = V(e, op->operands[0]), *o1 = V(e, op->operands[1]);
        bool u0 = o0->st == ST_SCALAR, u1 = o1->st == ST_SCALAR;
        bool a0 = u0 || o0->affine, a1 = u1 || o1->affine;
        affine = op->opcode == XC_TOP_MUL ? (u0 && a1) || (u1 && a0) : a0 && a1;
      }
      /* a remainder that is its dividend, a quotient that is 0 (the ranges
       * decide them: trivial_divide) */
      int triv = ok ? trivial_divide(e, op) : 0;
      if (triv == 1) affine = V(e, op->operands[0])->st == ST_SCALAR || V(e, op->operands[0])->affine;
      if (triv == 2) affine = true;
      /* An affine value stays inline whatever its readers: computing it is
       * an add or two, and inline it leaves addresses the compiler sees as
       * contiguous (held in an array, `w[row[i0] + col[i1]]` is a gather).
       * A bool stays inline too, unless a select reads it and no load or
       * store takes it as its mask: GCC 12 does not vectorize a float
       * select on a row's condition built from 64-bit compares, and does
       * one on an int32_t array's element; a mask inline lets it unswitch
       * the loop on the row's condition instead (a pool's taps). */
      bool array_ok = v->type.dtype != XC_BOOL || (x->select_use && !x->mask_use);
      int max_cost = e->d->work_groups ? MAX_INLINE_COST
                     : (x->broadcast_use || x->invariant_use) && array_ok && !affine
                         ? MAX_INLINE_COST_C_BROADCAST
                         : MAX_INLINE_COST_C;
      if (ok && cost <= max_cost) {
        x->st = ST_VIRTUAL, x->cost = cost, x->affine = affine;
        return;
      }
    }
  }
  x->st = e->d->work_groups && !x->not_private ? ST_PRIVATE : ST_ARRAY;
}

void xc_cse_classify_block(em_t* e, const xc_tiled_block_t* b) {
  const xc_tiled_op_t* loop = b->parent;
  for (int i = 0; i < b->num_args; i++) {
    const xc_tiled_value_t* init = loop && i > 0 && 2 + i < loop->num_operands ? loop->operands[2 + i] : NULL;
    vinfo_t* x = V(e, b->args[i]);
    if (!x->name[0] && !b->args[i]->name && init && init->name) {
      char h[40];
      xc_cse_sanitize(init->name, h, sizeof h, 24);
      snprintf(x->name, sizeof x->name, "%s_%d", h, b->args[i]->id);
    }
    xc_cse_classify_value(e, b->args[i]);
  }
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      /* Carried values, their body arguments and the loop results share one
       * storage, named after the body argument. */
      for (int c = 0; c + 1 < op->body->num_args && c < op->num_results; c++) {
        vinfo_t* arg = V(e, op->body->args[c + 1]), *res = V(e, op->results[c]);
        arg->not_private = res->not_private = arg->not_private || res->not_private;
      }
      xc_cse_classify_block(e, op->body);
      for (int c = 0; c + 1 < op->body->num_args && c < op->num_results; c++) {
        vinfo_t* res = V(e, op->results[c]);
        *res = *V(e, op->body->args[c + 1]);
      }
      continue;
    }
    for (int r = 0; r < op->num_results; r++) xc_cse_classify_value(e, op->results[r]);
  }
}

void xc_cse_count_uses(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_operands; j++) {
      if (op->operands[j]) V(e, op->operands[j])->uses++;
      if (op->operands[j] && e->nuses) e->nuses[op->operands[j]->id]++;
    }
    if (op->opcode == XC_TOP_FOR) xc_cse_count_uses(e, op->body);
  }
}

/* 0: uniform over the tile, 1: affine in its coordinates, -1: neither (or unknown). */
/* Declares the ARRAY / PRIVATE storage of v (nothing for other classes). */
static void declare_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  if (x->raw && x->dyn) {
    int64_t n = x->dims[0] * x->pitch * x->bufs;
    if (!e->dyn_bytes) P(&e->decls, "%s\n", e->d->dyn_local_array);
    P(&e->decls, "%s* const %s = (%s*)(xc_dsm + %" PRId64 ");\n", stype(e, v->type.dtype), x->name,
      stype(e, v->type.dtype), e->dyn_bytes);
    e->dyn_bytes += (n * (int64_t)xc_dtype_size(v->type.dtype) + 127) / 128 * 128;
    return;
  }
  if (x->raw) {
    int64_t n = x->dims[0] * x->pitch * x->bufs;
    P(&e->decls, "%s%s%s %s[%" PRId64 "];\n", e->d->local_qual, e->d->align16 ? e->d->align16 : "",
      stype(e, v->type.dtype), x->name, n);
    e->local_bytes += n * (int64_t)xc_dtype_size(v->type.dtype);
    return;
  }
  if (e->mma && v == e->mma->results[0]) return; /* shares the accumulator's array */
  if (x->in_place) return;                         /* writes the carried value's array */
  if (x->packed) return;                           /* a pointer into the packed operands */
  if (x->st != ST_ARRAY && x->st != ST_PRIVATE) return;
  bool priv = x->st == ST_PRIVATE;
  int64_t n = priv ? (x->n + e->T - 1) / e->T : x->n;
  /* read as float4 rows (xc_cse_plan_vec_rows), or filled in chunks (xc_cse_plan_copy_chunks) */
  x->aligned16 = !priv && (x->vec_rows || x->copy_vec > 1) && e->d->align16;
  const char* al = x->aligned16 ? e->d->align16 : "";
  int64_t hn = x->hoist_n > 1 ? x->hoist_n : 1; /* a hoisted dot's operand: a slice per step */
  P(&e->decls, "%s%s%s %s[%" PRId64 "];\n", priv ? e->d->private_qual : e->d->local_qual, al,
    vtype(e, v->type.dtype), x->name, n * hn);
  if (!priv) e->local_bytes += n * hn * array_elem_bytes(e, v->type.dtype);
  if (x->row_ptrs) { /* its rows' pointers (xc_cse_plan_row_ptrs) */
    P(&e->decls, "const %s* xa%s[%" PRId64 "];\n", vtype(e, v->type.dtype), x->name, x->dims[0] * hn);
    e->local_bytes += x->dims[0] * hn * 8;
  }
  if (hn > 1) { /* the arrays under other names: the slices' names shadow these */
    P(&e->decls, "%s* const xhb_%s = %s;\n", vtype(e, v->type.dtype), x->name, x->name);
    if (x->row_ptrs)
      P(&e->decls, "const %s** const xhb_xa%s = xa%s;\n", vtype(e, v->type.dtype), x->name, x->name);
  }
}

/* Declarations of ARRAY / PRIVATE storage and allocations, hoisted to the
 * top of the program (OpenCL wants __local arrays at kernel scope). */
void xc_cse_declare_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_args; i++) declare_value(e, b->args[i]);
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      xc_cse_declare_block(e, op->body); /* results share the body arguments' storage */
      continue;
    }
    for (int r = 0; r < op->num_results; r++) {
      const xc_tiled_value_t* v = op->results[r];
      vinfo_t* x = V(e, v);
      if (op->opcode == XC_TOP_ALLOC) {
        P(&e->decls, "%s%s %s[%" PRId64 "];\n", e->d->local_qual, stype(e, v->type.dtype), x->name, x->n);
        e->local_bytes += x->n * (int64_t)xc_dtype_size(v->type.dtype);
      } else {
        declare_value(e, v);
      }
    }
  }
}

/* The staging arrays and accumulator slots of the staged dots. */
void xc_cse_declare_staged(em_t* e) {
  for (int i = 0; i < e->num_mx; i++) {
    const mx_t* m = &e->mx[i];
    const xc_cstyle_dot_t* d = &m->dot;
    for (int o = 0; o < 2; o++) {
      if (!m->stage[o]) continue;
      int64_t n = o == 0 ? d->m * d->lda : d->k * d->ldb;
      P(&e->decls, "%s%s%s xs%c%d[%" PRId64 "];\n", e->d->local_qual, e->d->align16 ? e->d->align16 : "",
        stype(e, d->a_dtype), o ? 'b' : 'a', m->op->id, n);
      e->local_bytes += n * (int64_t)xc_dtype_size(d->a_dtype);
    }
    if (!m->regs)
      P(&e->decls, "%s%s xm%d[%" PRId64 "];\n", e->d->private_qual, vtype(e, d->acc_dtype), m->op->id, d->slots);
  }
}

/* ---- support check -------------------------------------------------------------- */

static bool check_block(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_block_t* b,
                        char* why, size_t why_size);

static bool check_value(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_value_t* v,
                        char* why, size_t why_size) {
  xc_dtype_t t = v->type.dtype;
  if (t == XC_F8E4M3FN || t == XC_F8E5M2 || t == XC_DTYPE_UNDEFINED || t > XC_F8E5M2) {
    snprintf(why, why_size, "dtype %s is not supported by the %s emitter", xc_dtype_name(t), d->name);
    return false;
  }
  if (t == XC_F64 && caps && d->work_groups && !(caps->dtypes & XC_DT(XC_F64))) {
    snprintf(why, why_size, "f64 values need a device with double precision (%s)", caps->name);
    return false;
  }
  return true;
}

static bool check_block(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_block_t* b,
                        char* why, size_t why_size) {
  for (int i = 0; i < b->num_args; i++)
    if (!check_value(d, caps, b->args[i], why, why_size)) return false;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int r = 0; r < op->num_results; r++)
      if (!check_value(d, caps, op->results[r], why, why_size)) return false;
    if (op->opcode == XC_TOP_FOR) {
      const xc_tiled_block_t* body = op->body;
      const xc_tiled_op_t* y = body->num_ops ? body->ops[body->num_ops - 1] : NULL;
      for (int c = 0; y && c < y->num_operands; c++)
        for (int a = 1; a < body->num_args; a++)
          if (y->operands[c] == body->args[a] && a != c + 1) {
            snprintf(why, why_size, "op %d (for) yields carried value %d in slot %d: permuting carried "
                     "values is not supported by the %s emitter", op->id, a - 1, c, d->name);
            return false;
          }
      if (!check_block(d, caps, body, why, why_size)) return false;
    }
  }
  return true;
}

bool xc_cstyle_supports(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                        char* why, size_t why_size) {
  char dummy[8];
  if (!why || !why_size) why = dummy, why_size = sizeof dummy;
  why[0] = 0;
  xc_status_t st = xc_tiled_verify(k);
  if (st) {
    snprintf(why, why_size, "%s", xc_status_message(st));
    xc_status_free(st);
    return false;
  }
  for (int i = 0; i < k->num_params; i++)
    if (!check_value(d, caps, k->params[i], why, why_size)) return false;
  return check_block(d, caps, k->body, why, why_size);
}
