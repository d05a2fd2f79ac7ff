/* Integer ranges of a tiled kernel's values under concrete knob values: one
 * forward walk over the body (values are SSA, defined before use), interval
 * arithmetic on what the kernel's index math is made of. Emitters ask it
 * whether a mask is true for every element of every program, and then load
 * and store without it. Every rule is conservative: a value the walk cannot
 * bound stays unknown, and an unknown operand makes the result unknown. */
#include <stdlib.h>

#include "xcomp/tiled.h"

typedef xc_tiled_range_t range_t;

static const range_t UNKNOWN = {0, 0, false};

static range_t span(int64_t lo, int64_t hi) {
  range_t r = {lo, hi, true};
  return r;
}

static bool integral(const xc_tiled_value_t* v) {
  return v->type.kind == XC_TILED_TENSOR && !xc_dtype_is_float(v->type.dtype);
}

/* The smallest and largest of four products, or unknown on overflow. */
static range_t mul(range_t a, range_t b) {
  int64_t p[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &p[0]) || __builtin_mul_overflow(a.lo, b.hi, &p[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &p[2]) || __builtin_mul_overflow(a.hi, b.hi, &p[3]))
    return UNKNOWN;
  range_t r = span(p[0], p[0]);
  for (int i = 1; i < 4; i++) {
    if (p[i] < r.lo) r.lo = p[i];
    if (p[i] > r.hi) r.hi = p[i];
  }
  return r;
}

/* A comparison true for every pair of values in a and b: 1; false for
 * every pair: 0; else -1. */
static int decide(int cmp, range_t a, range_t b) {
  switch (cmp) {
    case XC_CMP_LT: return a.hi < b.lo ? 1 : a.lo >= b.hi ? 0 : -1;
    case XC_CMP_LE: return a.hi <= b.lo ? 1 : a.lo > b.hi ? 0 : -1;
    case XC_CMP_GT: return a.lo > b.hi ? 1 : a.hi <= b.lo ? 0 : -1;
    case XC_CMP_GE: return a.lo >= b.hi ? 1 : a.hi < b.lo ? 0 : -1;
    case XC_CMP_EQ: return a.lo == a.hi && b.lo == b.hi && a.lo == b.lo ? 1 : a.hi < b.lo || b.hi < a.lo ? 0 : -1;
    case XC_CMP_NE: return a.hi < b.lo || b.hi < a.lo ? 1 : a.lo == a.hi && b.lo == b.hi && a.lo == b.lo ? 0 : -1;
  }
  return -1;
}

/* Whether every value of r fits dtype t (bool: 0/1). */
static bool fits(range_t r, xc_dtype_t t) {
  int64_t lo, hi;
  switch (t) {
    case XC_BOOL: lo = 0, hi = 1; break;
    case XC_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case XC_U8: lo = 0, hi = UINT8_MAX; break;
    case XC_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case XC_U16: lo = 0, hi = UINT16_MAX; break;
    case XC_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case XC_U32: lo = 0, hi = UINT32_MAX; break;
    case XC_I64: lo = INT64_MIN, hi = INT64_MAX; break;
    case XC_U64: lo = 0, hi = INT64_MAX; break;
    default: return false;
  }
  return r.lo >= lo && r.hi <= hi;
}

typedef struct walk {
  const xc_tiled_kernel_t* k;
  const int64_t* knobs;
  int64_t grid[XC_TILED_MAX_GRID]; /* programs per axis; 0: unknown */
  range_t* r;
} walk_t;

static range_t R(const walk_t* w, const xc_tiled_value_t* v) {
  return v && v->id >= 0 && v->id < w->k->num_values ? w->r[v->id] : UNKNOWN;
}

static range_t op_range(const walk_t* w, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->results[0];
  if (!integral(res)) return UNKNOWN;
  xc_dtype_t t = res->type.dtype;
  range_t a = op->num_operands > 0 ? R(w, op->operands[0]) : UNKNOWN;
  range_t b = op->num_operands > 1 ? R(w, op->operands[1]) : UNKNOWN;
  range_t out = UNKNOWN;
  switch (op->opcode) {
    case XC_TOP_CONST:
      if (t == XC_BOOL) return span(op->f != 0, op->f != 0);
      return span(op->i, op->i);
    case XC_TOP_KNOB: return span(w->knobs[op->axis], w->knobs[op->axis]);
    case XC_TOP_PROGRAM_ID:
      return op->axis >= 0 && op->axis < XC_TILED_MAX_GRID && w->grid[op->axis] > 0 ? span(0, w->grid[op->axis] - 1)
                                                                                    : UNKNOWN;
    case XC_TOP_NUM_PROGRAMS:
      return op->axis >= 0 && op->axis < XC_TILED_MAX_GRID && w->grid[op->axis] > 0
                 ? span(w->grid[op->axis], w->grid[op->axis])
                 : UNKNOWN;
    case XC_TOP_ARANGE: {
      int64_t n = res->type.rank == 1 ? xc_tiled_dim_resolve(res->type.dims[0], w->knobs) : 0;
      return n > 0 ? span(0, n - 1) : UNKNOWN;
    }
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: return a;
    case XC_TOP_CAST:
      /* integers and bools keep their values when the new type holds them */
      return a.known && integral(op->operands[0]) && fits(a, t) ? a : UNKNOWN;
    case XC_TOP_ADD:
      if (a.known && b.known && !__builtin_add_overflow(a.lo, b.lo, &out.lo) &&
          !__builtin_add_overflow(a.hi, b.hi, &out.hi))
        out.known = true;
      break;
    case XC_TOP_SUB:
      if (a.known && b.known && !__builtin_sub_overflow(a.lo, b.hi, &out.lo) &&
          !__builtin_sub_overflow(a.hi, b.lo, &out.hi))
        out.known = true;
      break;
    case XC_TOP_MUL:
      if (a.known && b.known) out = mul(a, b);
      break;
    case XC_TOP_DIV: /* non-negative by positive: truncation is floor, monotone in both */
      if (a.known && b.known && a.lo >= 0 && b.lo > 0) out = span(a.lo / b.hi, a.hi / b.lo);
      break;
    case XC_TOP_REM:
      if (a.known && b.known && a.lo >= 0 && b.lo > 0) out = span(0, a.hi < b.hi - 1 ? a.hi : b.hi - 1);
      break;
    case XC_TOP_MIN:
      if (a.known && b.known) out = span(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
      break;
    case XC_TOP_MAX:
      if (a.known && b.known) out = span(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
      break;
    case XC_TOP_CMP: {
      if (!a.known || !b.known || !integral(op->operands[0]) || !integral(op->operands[1])) return span(0, 1);
      int d = decide(op->cmp, a, b);
      return d < 0 ? span(0, 1) : span(d, d);
    }
    case XC_TOP_AND:
    case XC_TOP_OR:
      if (t != XC_BOOL) return UNKNOWN;
      if (!a.known) a = span(0, 1);
      if (!b.known) b = span(0, 1);
      if (op->opcode == XC_TOP_AND) return span(a.lo & b.lo, a.hi & b.hi);
      return span(a.lo | b.lo, a.hi | b.hi);
    case XC_TOP_NOT:
      if (t != XC_BOOL) return UNKNOWN;
      return a.known ? span(1 - a.hi, 1 - a.lo) : span(0, 1);
    case XC_TOP_SELECT: {
      range_t x = op->num_operands > 2 ? R(w, op->operands[2]) : UNKNOWN;
      if (a.known && a.lo == 1) return b;
      if (a.known && a.hi == 0) return x;
      if (b.known && x.known) return span(b.lo < x.lo ? b.lo : x.lo, b.hi > x.hi ? b.hi : x.hi);
      break;
    }
    default: break;
  }
  if (out.known && !fits(out, t)) return UNKNOWN; /* it may wrap in the type */
  if (!out.known && t == XC_BOOL) return span(0, 1);
  return out;
}

static void walk_block(walk_t* w, const xc_tiled_block_t* b);

/* A loop counter: lb, lb + step, ... below ub, for constant lb, ub, step > 0. */
static void walk_for(walk_t* w, const xc_tiled_op_t* op) {
  range_t lb = R(w, op->operands[0]), ub = R(w, op->operands[1]), st = R(w, op->operands[2]);
  const xc_tiled_block_t* body = op->body;
  if (body && body->num_args > 0) {
    range_t iv = UNKNOWN;
    if (lb.known && ub.known && st.known && lb.lo == lb.hi && ub.lo == ub.hi && st.lo == st.hi && st.lo > 0) {
      if (ub.lo > lb.lo) iv = span(lb.lo, lb.lo + (ub.lo - 1 - lb.lo) / st.lo * st.lo);
    } else if (lb.known && ub.known && st.known && st.lo > 0 && ub.hi > INT64_MIN) {
      iv = span(lb.lo, ub.hi - 1 > lb.lo ? ub.hi - 1 : lb.lo); /* lb <= iv < ub */
    }
    w->r[body->args[0]->id] = iv;
    walk_block(w, body);
  }
}

static void walk_block(walk_t* w, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      walk_for(w, op);
      continue;
    }
    if (op->num_results > 0 && op->results[0] && op->results[0]->id < w->k->num_values)
      w->r[op->results[0]->id] = op_range(w, op);
  }
}

xc_tiled_range_t* xc_tiled_ranges(const xc_tiled_kernel_t* k, const int64_t* knob_values) {
  range_t* r = calloc((size_t)(k->num_values > 0 ? k->num_values : 1), sizeof *r);
  if (!r) return NULL;
  walk_t w = {k, knob_values, {0}, r};
  for (int a = 0; a < k->grid_rank && a < XC_TILED_MAX_GRID; a++) {
    int64_t n = 0;
    xc_status_t st = k->grid[a] ? xc_texpr_eval(k->grid[a], knob_values, NULL, NULL, &n) : NULL;
    if (st) {
      xc_status_free(st); /* a grid with scalar parameters: program ids stay unknown */
      n = 0;
    }
    w.grid[a] = n > 0 ? n : 0;
  }
  for (int a = k->grid_rank; a < XC_TILED_MAX_GRID; a++) w.grid[a] = 1;
  if (k->body) walk_block(&w, k->body);
  return r;
}
