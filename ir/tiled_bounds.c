/* Which elements of its global buffers a tiled kernel may touch, under
 * concrete knob values, scalar parameter values and grid: for every load
 * and store, the range of element offsets over every active lane of every
 * program. The compiled-module loader holds these against the sizes of the
 * buffers a plan binds (runtime/module_check.c), so a module whose plan
 * shrinks a buffer below what its kernels index is refused before it runs.
 *
 * Interval arithmetic over the index math (like tiled_range.c, with scalar
 * parameters known, integer division, remainder and shifts, and half-bounded
 * intervals so that clamps such as min(max(i, 0), n - 1) are bounded), then
 * per access a refinement by its mask: each comparison in the mask's and-tree
 * narrows the values it compares, and the offset is recomputed from its
 * definition with the narrowed values. An offset the walk cannot bound (one
 * read from memory: a gather's indices) is reported unbounded: the generated
 * code's own index checks are what keep those inside. A mask made of
 * anything other than comparisons joined by `and` is not used to narrow, and
 * an access under such a mask is reported unbounded rather than refused. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/tiled.h"

typedef struct {
  int64_t lo, hi; /* INT64_MIN / INT64_MAX: unbounded on that side */
} ival_t;

static const ival_t ALL = {INT64_MIN, INT64_MAX};

static ival_t iv(int64_t lo, int64_t hi) {
  ival_t r = {lo, hi};
  return r;
}
static bool bounded(ival_t a) { return a.lo != INT64_MIN && a.hi != INT64_MAX; }
static int64_t sat_add(int64_t a, int64_t b) {
  if (a == INT64_MIN || b == INT64_MIN) return INT64_MIN;
  if (a == INT64_MAX || b == INT64_MAX) return INT64_MAX;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static bool integral(const xc_tiled_value_t* v) {
  return v && v->type.kind == XC_TILED_TENSOR && !xc_dtype_is_float(v->type.dtype);
}

static bool dtype_bounds(xc_dtype_t t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case XC_BOOL: *lo = 0, *hi = 1; return true;
    case XC_I8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
    case XC_U8: *lo = 0, *hi = UINT8_MAX; return true;
    case XC_I16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
    case XC_U16: *lo = 0, *hi = UINT16_MAX; return true;
    case XC_I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    case XC_U32: *lo = 0, *hi = UINT32_MAX; return true;
    case XC_I64: *lo = INT64_MIN, *hi = INT64_MAX; return true;
    case XC_U64: *lo = 0, *hi = INT64_MAX; return true;
    default: return false;
  }
}

/* A value the walk cannot bound: unbounded, whatever its type's range (a
 * loaded i32 index is as unknown as an i64 one: the type's range would be a
 * bound the access always fails, not a fact about the kernel); bool is 0/1. */
static ival_t of_type(xc_dtype_t t) { return t == XC_BOOL ? iv(0, 1) : ALL; }

static ival_t mul(ival_t a, ival_t b) {
  if ((a.lo == 0 && a.hi == 0) || (b.lo == 0 && b.hi == 0)) return iv(0, 0);
  if (!bounded(a) || !bounded(b)) return ALL;
  int64_t p[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &p[0]) || __builtin_mul_overflow(a.lo, b.hi, &p[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &p[2]) || __builtin_mul_overflow(a.hi, b.hi, &p[3]))
    return ALL;
  ival_t r = iv(p[0], p[0]);
  for (int i = 1; i < 4; i++) {
    if (p[i] < r.lo) r.lo = p[i];
    if (p[i] > r.hi) r.hi = p[i];
  }
  return r;
}

/* A divisor range of one sign, zero excluded (an empty range, lo > hi, as
 * a loop that runs no iteration can leave, is none). */
static bool one_sign(ival_t b) { return bounded(b) && b.lo <= b.hi && (b.lo > 0 || b.hi < 0); }

/* C division (truncating) by a divisor range of one sign. */
static ival_t divide(ival_t a, ival_t b) {
  if (!one_sign(b)) return ALL;
  if (!bounded(a)) {
    if (b.lo > 0 && a.lo >= 0) return iv(0, a.hi == INT64_MAX ? INT64_MAX : a.hi / b.lo);
    return ALL;
  }
  if (a.lo == INT64_MIN) return ALL;
  int64_t q[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  ival_t r = iv(q[0], q[0]);
  for (int i = 1; i < 4; i++) {
    if (q[i] < r.lo) r.lo = q[i];
    if (q[i] > r.hi) r.hi = q[i];
  }
  return r;
}

/* C remainder: the dividend's sign, magnitude below the divisor's. */
static ival_t remainder_of(ival_t a, ival_t b) {
  if (!one_sign(b)) return ALL;
  int64_t m = b.lo > 0 ? b.hi - 1 : -(b.lo + 1);
  if (a.lo >= 0) return iv(0, a.hi < m ? a.hi : m);
  if (a.hi <= 0) return iv(a.lo > -m ? a.lo : -m, 0);
  return iv(-m, m);
}

typedef struct bounds {
  const xc_tiled_kernel_t* k;
  const int64_t* knobs;
  const int64_t* params; /* per parameter index (scalars) */
  const int64_t* grid;
  ival_t* base;          /* per value id: the forward walk */
  ival_t* narrowed;      /* per value id: under the current mask */
  unsigned* stamp;       /* narrowed[v] holds for the access with this stamp */
  unsigned now;
  ival_t* memo;          /* per value id: recomputed under the current mask */
  unsigned* memo_stamp;
} bounds_t;

static ival_t value_base(const bounds_t* b, const xc_tiled_value_t* v) {
  if (!v || v->id < 0 || v->id >= b->k->num_values) return ALL;
  return b->base[v->id];
}

/* The result of op from its operands' ranges in[]. */
static ival_t apply(const bounds_t* b, const xc_tiled_op_t* op, const ival_t* in) {
  const xc_tiled_value_t* res = op->results[0];
  if (!integral(res)) return ALL;
  xc_dtype_t t = res->type.dtype;
  ival_t a = op->num_operands > 0 ? in[0] : ALL, c = op->num_operands > 1 ? in[1] : ALL, out = ALL;
  switch (op->opcode) {
    case XC_TOP_CONST:
      if (t == XC_BOOL) return iv(op->f != 0, op->f != 0);
      return iv(op->i, op->i);
    case XC_TOP_KNOB:
      return op->axis >= 0 && op->axis < b->k->num_knobs ? iv(b->knobs[op->axis], b->knobs[op->axis]) : ALL;
    case XC_TOP_PROGRAM_ID:
      return op->axis >= 0 && op->axis < XC_TILED_MAX_GRID && b->grid[op->axis] > 0 ? iv(0, b->grid[op->axis] - 1)
                                                                                    : ALL;
    case XC_TOP_NUM_PROGRAMS:
      return op->axis >= 0 && op->axis < XC_TILED_MAX_GRID ? iv(b->grid[op->axis], b->grid[op->axis]) : ALL;
    case XC_TOP_ARANGE: {
      int64_t n = res->type.rank == 1 ? xc_tiled_dim_resolve(res->type.dims[0], b->knobs) : 0;
      return n > 0 ? iv(0, n - 1) : ALL;
    }
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: return a;
    case XC_TOP_CAST: {
      int64_t lo, hi;
      if (!integral(op->operands[0]) || !dtype_bounds(t, &lo, &hi)) return of_type(t);
      return a.lo >= lo && a.hi <= hi ? a : of_type(t);
    }
    case XC_TOP_ADD: out = iv(sat_add(a.lo, c.lo), sat_add(a.hi, c.hi)); break;
    case XC_TOP_SUB:
      out = iv(sat_add(a.lo, c.hi == INT64_MAX ? INT64_MIN : c.hi == INT64_MIN ? INT64_MAX : -c.hi),
               sat_add(a.hi, c.lo == INT64_MIN ? INT64_MAX : c.lo == INT64_MAX ? INT64_MIN : -c.lo));
      break;
    case XC_TOP_MUL: out = mul(a, c); break;
    case XC_TOP_DIV: out = divide(a, c); break;
    case XC_TOP_REM: out = remainder_of(a, c); break;
    case XC_TOP_MIN: out = iv(a.lo < c.lo ? a.lo : c.lo, a.hi < c.hi ? a.hi : c.hi); break;
    case XC_TOP_MAX: out = iv(a.lo > c.lo ? a.lo : c.lo, a.hi > c.hi ? a.hi : c.hi); break;
    case XC_TOP_SHR:
      if (a.lo >= 0 && bounded(c) && c.lo >= 0 && c.hi < 63)
        out = iv(a.lo >> c.hi, a.hi == INT64_MAX ? INT64_MAX : a.hi >> c.lo);
      break;
    case XC_TOP_AND:
      if (t == XC_BOOL) return iv(0, 1);
      if (a.lo >= 0 && c.lo >= 0) out = iv(0, a.hi < c.hi ? a.hi : c.hi);
      else if (c.lo >= 0 && bounded(c)) out = iv(0, c.hi);
      else if (a.lo >= 0 && bounded(a)) out = iv(0, a.hi);
      break;
    case XC_TOP_SELECT: {
      ival_t x = op->num_operands > 2 ? in[2] : ALL;
      out = iv(c.lo < x.lo ? c.lo : x.lo, c.hi > x.hi ? c.hi : x.hi);
      break;
    }
    case XC_TOP_ABS:
      if (a.lo >= 0) out = a;
      else if (bounded(a) && a.lo > INT64_MIN) out = iv(0, -a.lo > a.hi ? -a.lo : a.hi);
      break;
    case XC_TOP_NEG:
      if (bounded(a) && a.lo > INT64_MIN) out = iv(-a.hi, -a.lo);
      break;
    default:
      if (t == XC_BOOL) return iv(0, 1);
      return of_type(t);
  }
  /* A result that may leave its type wraps: then it is any value of it. */
  int64_t lo, hi;
  if (dtype_bounds(t, &lo, &hi) && (out.lo < lo || out.hi > hi)) return of_type(t);
  return out;
}

static void walk_block(bounds_t* b, const xc_tiled_block_t* blk);

static void walk_for(bounds_t* b, const xc_tiled_op_t* op) {
  ival_t lb = value_base(b, op->operands[0]), ub = value_base(b, op->operands[1]),
         st = value_base(b, op->operands[2]);
  const xc_tiled_block_t* body = op->body;
  if (!body) return;
  /* Carried values change from one iteration to the next: unknown. */
  for (int i = 1; i < body->num_args; i++) b->base[body->args[i]->id] = ALL;
  for (int i = 0; i < op->num_results; i++)
    if (op->results[i]) b->base[op->results[i]->id] = ALL;
  if (body->num_args > 0) {
    ival_t counter = ALL;
    if (st.lo > 0 && lb.lo != INT64_MIN && ub.hi != INT64_MAX) counter = iv(lb.lo, ub.hi - 1 > lb.lo ? ub.hi - 1 : lb.lo);
    b->base[body->args[0]->id] = counter;
  }
  walk_block(b, body);
}

static void walk_block(bounds_t* b, const xc_tiled_block_t* blk) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      walk_for(b, op);
      continue;
    }
    if (op->num_results < 1 || !op->results[0] || op->results[0]->id >= b->k->num_values) continue;
    ival_t in[3] = {ALL, ALL, ALL};
    for (int j = 0; j < op->num_operands && j < 3; j++) in[j] = value_base(b, op->operands[j]);
    b->base[op->results[0]->id] = apply(b, op, in);
  }
}

/* ---- refinement by a mask ---------------------------------------------------- */

static ival_t current(const bounds_t* b, const xc_tiled_value_t* v) {
  if (!v || v->id < 0 || v->id >= b->k->num_values) return ALL;
  return b->stamp[v->id] == b->now ? b->narrowed[v->id] : b->base[v->id];
}

/* Narrows v to [lo, hi], and the value it was copied from. */
static void narrow(bounds_t* b, const xc_tiled_value_t* v, int64_t lo, int64_t hi, int depth) {
  if (!v || v->id < 0 || v->id >= b->k->num_values || depth > 16) return;
  ival_t r = current(b, v);
  if (lo > r.lo) r.lo = lo;
  if (hi < r.hi) r.hi = hi;
  b->narrowed[v->id] = r;
  b->stamp[v->id] = b->now;
  const xc_tiled_op_t* d = v->def;
  if (!d || d->num_operands < 1) return;
  bool copy = d->opcode == XC_TOP_EXPAND_DIMS || d->opcode == XC_TOP_BROADCAST || d->opcode == XC_TOP_TRANS;
  if (d->opcode == XC_TOP_CAST && integral(d->operands[0])) {
    /* Only a cast that keeps every value of its operand says the same of it. */
    int64_t tlo, thi;
    ival_t src = current(b, d->operands[0]);
    copy = dtype_bounds(v->type.dtype, &tlo, &thi) && src.lo >= tlo && src.hi <= thi;
  }
  if (copy) narrow(b, d->operands[0], lo, hi, depth + 1);
}

/* Narrows by what a true mask element says. False when the mask is not an
 * and-tree of integer comparisons (then nothing it says is used). */
static bool assume(bounds_t* b, const xc_tiled_value_t* mask, int depth) {
  const xc_tiled_op_t* d = mask ? mask->def : NULL;
  if (!d || depth > 32) return false;
  switch (d->opcode) {
    case XC_TOP_CONST: return d->f != 0;
    case XC_TOP_AND: return assume(b, d->operands[0], depth + 1) && assume(b, d->operands[1], depth + 1);
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: return assume(b, d->operands[0], depth + 1);
    case XC_TOP_CMP: {
      const xc_tiled_value_t *x = d->operands[0], *y = d->operands[1];
      if (!integral(x) || !integral(y)) return false;
      ival_t rx = current(b, x), ry = current(b, y);
      switch (d->cmp) {
        case XC_CMP_LT:
          narrow(b, x, INT64_MIN, ry.hi == INT64_MAX ? INT64_MAX : ry.hi - 1, 0);
          narrow(b, y, rx.lo == INT64_MIN ? INT64_MIN : rx.lo + 1, INT64_MAX, 0);
          return true;
        case XC_CMP_LE:
          narrow(b, x, INT64_MIN, ry.hi, 0);
          narrow(b, y, rx.lo, INT64_MAX, 0);
          return true;
        case XC_CMP_GT:
          narrow(b, x, ry.lo == INT64_MIN ? INT64_MIN : ry.lo + 1, INT64_MAX, 0);
          narrow(b, y, INT64_MIN, rx.hi == INT64_MAX ? INT64_MAX : rx.hi - 1, 0);
          return true;
        case XC_CMP_GE:
          narrow(b, x, ry.lo, INT64_MAX, 0);
          narrow(b, y, INT64_MIN, rx.hi, 0);
          return true;
        case XC_CMP_EQ:
          narrow(b, x, ry.lo, ry.hi, 0);
          narrow(b, y, rx.lo, rx.hi, 0);
          return true;
        default: return true; /* NE narrows nothing, but is understood */
      }
    }
    default: return false;
  }
}

/* v's range under the current mask: narrowed where the mask said so,
 * recomputed from its definition where an operand was narrowed. */
static ival_t eval(bounds_t* b, const xc_tiled_value_t* v, int depth) {
  if (!v || v->id < 0 || v->id >= b->k->num_values) return ALL;
  if (b->memo_stamp[v->id] == b->now) return b->memo[v->id];
  ival_t r = current(b, v);
  const xc_tiled_op_t* d = v->def;
  if (d && depth < 48 && d->opcode != XC_TOP_FOR && d->opcode != XC_TOP_LOAD && d->num_operands <= 3 &&
      d->num_results == 1) {
    ival_t in[3] = {ALL, ALL, ALL};
    for (int j = 0; j < d->num_operands; j++) in[j] = eval(b, d->operands[j], depth + 1);
    ival_t again = apply(b, d, in);
    if (again.lo > r.lo) r.lo = again.lo;
    if (again.hi < r.hi) r.hi = again.hi;
  }
  b->memo[v->id] = r;
  b->memo_stamp[v->id] = b->now;
  return r;
}

/* dead: blk is the body of a loop that runs no iteration (its accesses never happen). */
static void visit(bounds_t* b, const xc_tiled_block_t* blk, bool dead, xc_tiled_access_fn fn, void* ctx) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    if (op->body) {
      bool none = false;
      if (op->opcode == XC_TOP_FOR && op->num_operands >= 2) {
        ival_t lb = value_base(b, op->operands[0]), ub = value_base(b, op->operands[1]);
        none = lb.lo != INT64_MIN && ub.hi != INT64_MAX && ub.hi <= lb.lo;
      }
      visit(b, op->body, dead || none, fn, ctx);
    }
    if (op->opcode != XC_TOP_LOAD && op->opcode != XC_TOP_STORE) continue;
    const xc_tiled_value_t* mem = op->operands[0];
    if (!mem || mem->param < 0 || mem->type.kind != XC_TILED_MEMREF || mem->type.scope != XC_SCOPE_GLOBAL) continue;
    const xc_tiled_value_t* mask = op->opcode == XC_TOP_LOAD ? (op->num_operands > 2 ? op->operands[2] : NULL)
                                                             : (op->num_operands > 3 ? op->operands[3] : NULL);
    b->now++;
    xc_tiled_access_t a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.param = mem->param;
    a.store = op->opcode == XC_TOP_STORE;
    bool understood = !mask || assume(b, mask, 0);
    ival_t r = eval(b, op->operands[1], 0);
    if (dead) {
      a.never = true;
    } else if (understood && r.lo > r.hi) {
      a.never = true; /* the mask is false for every lane */
    } else if (understood && bounded(r)) {
      a.bounded = true;
      a.lo = r.lo;
      a.hi = r.hi;
    }
    fn(ctx, &a);
  }
}

xc_status_t xc_tiled_accesses(const xc_tiled_kernel_t* k, const int64_t* knob_values, const int64_t* param_values,
                              const int64_t grid[XC_TILED_MAX_GRID], xc_tiled_access_fn fn, void* ctx) {
  size_t n = (size_t)(k->num_values > 0 ? k->num_values : 1);
  bounds_t b;
  memset(&b, 0, sizeof b);
  b.k = k;
  b.knobs = knob_values;
  b.params = param_values;
  b.grid = grid;
  b.base = malloc(n * sizeof *b.base);
  b.narrowed = malloc(n * sizeof *b.narrowed);
  b.memo = malloc(n * sizeof *b.memo);
  b.stamp = calloc(n, sizeof *b.stamp);
  b.memo_stamp = calloc(n, sizeof *b.memo_stamp);
  xc_status_t s = NULL;
  if (!b.base || !b.narrowed || !b.memo || !b.stamp || !b.memo_stamp) s = xc_error_oom();
  if (!s) {
    for (size_t i = 0; i < n; i++) b.base[i] = ALL;
    for (int p = 0; p < k->num_params; p++) {
      const xc_tiled_value_t* v = k->params[p];
      if (v && v->type.kind == XC_TILED_TENSOR && v->id >= 0 && v->id < k->num_values)
        b.base[v->id] = iv(param_values[p], param_values[p]);
    }
    if (k->body) {
      walk_block(&b, k->body);
      visit(&b, k->body, false, fn, ctx);
    }
  }
  free(b.base);
  free(b.narrowed);
  free(b.memo);
  free(b.stamp);
  free(b.memo_stamp);
  return s;
}
