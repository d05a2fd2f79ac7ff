/* Tiled IR checks: the structural/type verifier, knob validity, the default
 * knob chooser and evaluation of grid/constraint expressions. */
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

/* ---- expressions ------------------------------------------------------------ */

static xc_status_t eval_rec(const xc_tiled_expr_t* e, const int64_t* knobs, const int64_t* params,
                            const xc_tiled_limits_t* limits, int depth, int64_t* out) {
  if (!e) return xc_error(XC_INVALID_ARGUMENT, "missing expression");
  if (depth > 64) return xc_error(XC_INVALID_ARGUMENT, "expression nested too deeply");
  switch (e->kind) {
    case XC_TEXPR_CONST: *out = e->value; return NULL;
    case XC_TEXPR_PARAM:
      if (!params) return xc_error(XC_INVALID_ARGUMENT, "expression needs a parameter value");
      *out = params[e->value];
      return NULL;
    case XC_TEXPR_KNOB:
      if (!knobs) return xc_error(XC_INVALID_ARGUMENT, "expression needs knob values");
      *out = knobs[e->value];
      return NULL;
    case XC_TEXPR_LIMIT:
      if (!limits) return xc_error(XC_INVALID_ARGUMENT, "expression needs target limits");
      *out = limits->value[e->value];
      return NULL;
    default: break;
  }
  int64_t a, b;
  XC_RETURN_IF_ERROR(eval_rec(e->a, knobs, params, limits, depth + 1, &a));
  XC_RETURN_IF_ERROR(eval_rec(e->b, knobs, params, limits, depth + 1, &b));
  bool ok = true;
  switch (e->kind) {
    case XC_TEXPR_ADD: ok = xc_add_i64(a, b, out); break;
    case XC_TEXPR_SUB: ok = xc_sub_i64(a, b, out); break;
    case XC_TEXPR_MUL: ok = xc_mul_i64(a, b, out); break;
    case XC_TEXPR_FLOORDIV:
    case XC_TEXPR_CEILDIV:
    case XC_TEXPR_MOD: {
      if (b <= 0) return xc_error(XC_INVALID_ARGUMENT, "division by %lld in expression", (long long)b);
      int64_t q = a / b, r = a % b;
      if (r != 0 && a < 0) { q--; r += b; }
      if (e->kind == XC_TEXPR_CEILDIV && r != 0) q++;
      *out = e->kind == XC_TEXPR_MOD ? r : q;
      break;
    }
    case XC_TEXPR_MIN: *out = a < b ? a : b; break;
    case XC_TEXPR_MAX: *out = a > b ? a : b; break;
    case XC_TEXPR_LE: *out = a <= b; break;
    case XC_TEXPR_LT: *out = a < b; break;
    case XC_TEXPR_EQ: *out = a == b; break;
    case XC_TEXPR_AND: *out = a && b; break;
    default: return xc_error(XC_INVALID_ARGUMENT, "unknown expression kind %d", (int)e->kind);
  }
  if (!ok) return xc_error(XC_OUT_OF_RANGE, "integer overflow in expression");
  return NULL;
}

xc_status_t xc_texpr_eval(const xc_tiled_expr_t* e, const int64_t* knob_values,
                          const int64_t* param_values, const xc_tiled_limits_t* limits,
                          int64_t* out) {
  return eval_rec(e, knob_values, param_values, limits, 0, out);
}

int64_t xc_tiled_dim_resolve(xc_tiled_dim_t d, const int64_t* knob_values) {
  return d.knob >= 0 ? knob_values[d.knob] : d.value;
}

/* Leaves allowed: params (grid) or limits (constraints). */
static xc_status_t check_expr(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e, bool grid,
                              int depth) {
  if (!e) return xc_error(XC_INVALID_ARGUMENT, "missing expression");
  if (depth > 64) return xc_error(XC_INVALID_ARGUMENT, "expression nested too deeply");
  switch (e->kind) {
    case XC_TEXPR_CONST: return NULL;
    case XC_TEXPR_PARAM:
      if (!grid) return xc_error(XC_INVALID_ARGUMENT, "constraints may not refer to parameters");
      if (e->value < 0 || e->value >= k->num_params ||
          k->params[e->value]->type.kind != XC_TILED_TENSOR)
        return xc_error(XC_INVALID_ARGUMENT, "expression refers to parameter %lld, not a scalar "
                        "parameter", (long long)e->value);
      return NULL;
    case XC_TEXPR_KNOB:
      if (e->value < 0 || e->value >= k->num_knobs)
        return xc_error(XC_INVALID_ARGUMENT, "expression refers to unknown knob %lld",
                        (long long)e->value);
      return NULL;
    case XC_TEXPR_LIMIT:
      if (grid) return xc_error(XC_INVALID_ARGUMENT, "the grid may not refer to target limits");
      if (e->value < 0 || e->value >= XC_TILED_LIMIT_COUNT)
        return xc_error(XC_INVALID_ARGUMENT, "unknown limit %lld", (long long)e->value);
      return NULL;
    default:
      if (e->kind < XC_TEXPR_ADD || e->kind > XC_TEXPR_AND)
        return xc_error(XC_INVALID_ARGUMENT, "unknown expression kind %d", (int)e->kind);
      XC_RETURN_IF_ERROR(check_expr(k, e->a, grid, depth + 1));
      return check_expr(k, e->b, grid, depth + 1);
  }
}

/* ---- verifier ---------------------------------------------------------------- */

typedef struct verifier {
  const xc_tiled_kernel_t* k;
  const xc_tiled_value_t** defined; /* by value id: the value now in scope */
  int depth;
} verifier_t;

static xc_status_t op_error(const xc_tiled_op_t* op, xc_status_t st) {
  char where[64];
  return xc_status_annotate(st, "%s", xc_tiled_op_str(op, where, sizeof where));
}

static xc_status_t define(verifier_t* v, const xc_tiled_value_t* val) {
  if (!val || val->id < 0 || val->id >= v->k->num_values)
    return xc_error(XC_INVALID_ARGUMENT, "value with an id outside this kernel");
  if (v->defined[val->id])
    return xc_error(XC_INVALID_ARGUMENT, "value %%%d is defined twice", val->id);
  v->defined[val->id] = val;
  return NULL;
}

static void undefine_block(verifier_t* v, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_args; i++)
    if (b->args[i] && b->args[i]->id >= 0 && b->args[i]->id < v->k->num_values)
      v->defined[b->args[i]->id] = NULL;
  for (int i = 0; i < b->num_ops; i++)
    for (int j = 0; j < b->ops[i]->num_results; j++) {
      const xc_tiled_value_t* r = b->ops[i]->results[j];
      if (r && r->id >= 0 && r->id < v->k->num_values) v->defined[r->id] = NULL;
    }
}

static bool is_optional_operand(const xc_tiled_op_t* op, int i) {
  return (op->opcode == XC_TOP_LOAD && i >= 2) || (op->opcode == XC_TOP_STORE && i == 3);
}

static xc_status_t verify_block(verifier_t* v, const xc_tiled_block_t* b);

static xc_status_t verify_for(verifier_t* v, const xc_tiled_op_t* op) {
  const xc_tiled_kernel_t* k = v->k;
  int n = op->num_operands - 3;
  if (n < 0) return xc_error(XC_INVALID_ARGUMENT, "for needs lb, ub and step");
  for (int i = 0; i < 3; i++) {
    const xc_tiled_type_t* t = &op->operands[i]->type;
    if (t->kind != XC_TILED_TENSOR || t->rank != 0 || t->dtype != XC_I64)
      return xc_error(XC_INVALID_ARGUMENT, "loop bound %d must be an i64 scalar", i);
  }
  const xc_tiled_block_t* b = op->body;
  if (!b || b->num_args != 1 + n || op->num_results != n)
    return xc_error(XC_INVALID_ARGUMENT, "for carries %d values but has %d results and %d body "
                    "arguments", n, op->num_results, b ? b->num_args - 1 : -1);
  for (int i = 0; i < b->num_args; i++)
    if (!b->args[i]) return xc_error(XC_INVALID_ARGUMENT, "for body argument %d is missing", i);
  for (int i = 0; i < n; i++) {
    if (!op->results[i]) return xc_error(XC_INVALID_ARGUMENT, "for result %d is missing", i);
    if (op->operands[3 + i]->type.kind != XC_TILED_TENSOR)
      return xc_error(XC_INVALID_ARGUMENT, "loop-carried value %d is a memref", i);
  }
  const xc_tiled_type_t* ivt = &b->args[0]->type;
  if (ivt->kind != XC_TILED_TENSOR || ivt->rank != 0 || ivt->dtype != XC_I64)
    return xc_error(XC_INVALID_ARGUMENT, "induction variable must be an i64 scalar");
  char s1[96], s2[96];
  for (int i = 0; i < n; i++) {
    const xc_tiled_type_t* init = &op->operands[3 + i]->type;
    if (!xc_tiled_type_equal(init, &b->args[1 + i]->type) ||
        !xc_tiled_type_equal(init, &op->results[i]->type))
      return xc_error(XC_INVALID_ARGUMENT, "loop-carried value %d: init is %s but the body "
                      "argument is %s", i, xc_tiled_type_str(k, init, s1, sizeof s1),
                      xc_tiled_type_str(k, &b->args[1 + i]->type, s2, sizeof s2));
  }
  if (b->num_ops == 0 || b->ops[b->num_ops - 1]->opcode != XC_TOP_YIELD)
    return xc_error(XC_INVALID_ARGUMENT, "for body does not end with yield");
  const xc_tiled_op_t* y = b->ops[b->num_ops - 1];
  if (y->num_operands != n)
    return xc_error(XC_INVALID_ARGUMENT, "loop carries %d values but yields %d", n,
                    y->num_operands);
  for (int i = 0; i < n; i++)
    if (!y->operands[i] || !xc_tiled_type_equal(&y->operands[i]->type, &op->results[i]->type))
      return xc_error(XC_INVALID_ARGUMENT, "loop-carried value %d is %s but the body yields %s", i,
                      xc_tiled_type_str(k, &op->results[i]->type, s1, sizeof s1),
                      y->operands[i] ? xc_tiled_type_str(k, &y->operands[i]->type, s2, sizeof s2)
                                     : "nothing");
  v->depth++;
  xc_status_t st = verify_block(v, b);
  v->depth--;
  undefine_block(v, b);
  return st;
}

static xc_status_t verify_op(verifier_t* v, const xc_tiled_block_t* b, int index) {
  const xc_tiled_op_t* op = b->ops[index];
  const xc_tiled_kernel_t* k = v->k;
  if ((unsigned)op->opcode >= XC_TOP_COUNT)
    return xc_error(XC_INVALID_ARGUMENT, "op %d has unknown opcode %d", op->id, (int)op->opcode);
  /* dominance: every operand is in scope */
  for (int i = 0; i < op->num_operands; i++) {
    const xc_tiled_value_t* x = op->operands[i];
    if (!x) {
      if (is_optional_operand(op, i)) continue;
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "operand %d is missing", i));
    }
    if (x->id < 0 || x->id >= k->num_values || v->defined[x->id] != x)
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "operand %d (%%%d) is used before its "
                                   "definition or outside its scope", i, x->id));
  }
  if (op->opcode == XC_TOP_YIELD) {
    if (index != b->num_ops - 1 || !b->parent)
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "yield must end a for body"));
    return NULL;
  }
  if (op->opcode == XC_TOP_FOR) {
    XC_RETURN_IF_ERROR(op_error(op, verify_for(v, op)));
  } else {
    bool has_result = !(op->opcode == XC_TOP_STORE || op->opcode == XC_TOP_BARRIER);
    if (op->num_results != (has_result ? 1 : 0))
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "has %d results, expected %d",
                                   op->num_results, has_result ? 1 : 0));
    if (has_result && !op->results[0])
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "result is missing"));
    xc_tiled_type_t t;
    XC_RETURN_IF_ERROR(op_error(op, xc_tiled_infer(k, op, has_result ? &op->results[0]->type
                                                                     : NULL, &t)));
    if (has_result && !xc_tiled_type_equal(&t, &op->results[0]->type)) {
      char s1[96], s2[96];
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "result is declared %s but the operands "
                                   "give %s",
                                   xc_tiled_type_str(k, &op->results[0]->type, s1, sizeof s1),
                                   xc_tiled_type_str(k, &t, s2, sizeof s2)));
    }
    if (op->opcode == XC_TOP_ALLOC && op->results[0]->type.scope == XC_SCOPE_SHARED &&
        v->depth > 0)
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "shared allocations must be at the top "
                                   "level of the kernel body"));
  }
  for (int i = 0; i < op->num_results; i++) {
    if (!op->results[i] || op->results[i]->def != op)
      return op_error(op, xc_error(XC_INVALID_ARGUMENT, "result %d does not point back to its op",
                                   i));
    XC_RETURN_IF_ERROR(op_error(op, define(v, op->results[i])));
  }
  return NULL;
}

static xc_status_t verify_block(verifier_t* v, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_args; i++) XC_RETURN_IF_ERROR(define(v, b->args[i]));
  for (int i = 0; i < b->num_ops; i++) {
    if (!b->ops[i]) return xc_error(XC_INVALID_ARGUMENT, "NULL op in a block");
    XC_RETURN_IF_ERROR(verify_op(v, b, i));
  }
  return NULL;
}

static xc_status_t verify_kernel(const xc_tiled_kernel_t* k, verifier_t* v) {
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    if (!p || p->param != i)
      return xc_error(XC_INVALID_ARGUMENT, "parameter %d is malformed", i);
    if (p->type.kind == XC_TILED_MEMREF) {
      if (p->type.scope != XC_SCOPE_GLOBAL || xc_dtype_size(p->type.dtype) == 0 ||
          p->type.role < XC_ROLE_IN || p->type.role > XC_ROLE_INOUT)
        return xc_error(XC_INVALID_ARGUMENT, "buffer parameter '%s' is malformed", p->name);
    } else if (p->type.dtype != XC_I64 || p->type.rank != 0) {
      return xc_error(XC_INVALID_ARGUMENT, "scalar parameter '%s' must be i64", p->name);
    }
    XC_RETURN_IF_ERROR(define(v, p));
  }
  for (int i = 0; i < k->num_knobs; i++) {
    const xc_tiled_knob_t* kn = &k->knobs[i];
    bool has_default = false;
    if (kn->num_candidates < 1 || kn->num_candidates > XC_TILED_MAX_KNOB_CANDIDATES)
      return xc_error(XC_INVALID_ARGUMENT, "knob '%s' has no candidates", kn->name);
    for (int j = 0; j < kn->num_candidates; j++) {
      if (kn->candidates[j] <= 0)
        return xc_error(XC_INVALID_ARGUMENT, "knob '%s' has a non-positive candidate", kn->name);
      if (kn->candidates[j] == kn->default_value) has_default = true;
    }
    if (!has_default)
      return xc_error(XC_INVALID_ARGUMENT, "knob '%s' default %lld is not a candidate", kn->name,
                      (long long)kn->default_value);
  }
  if (k->grid_rank < 1 || k->grid_rank > XC_TILED_MAX_GRID)
    return xc_error(XC_INVALID_ARGUMENT, "the grid is not set (rank %d)", k->grid_rank);
  for (int i = 0; i < k->grid_rank; i++)
    XC_RETURN_IF_ERROR(xc_status_annotate(check_expr(k, k->grid[i], true, 0), "grid axis %d", i));
  for (int i = 0; i < k->num_constraints; i++)
    XC_RETURN_IF_ERROR(xc_status_annotate(check_expr(k, k->constraints[i], false, 0),
                                          "constraint %d", i));
  if (!k->body || k->body->parent) return xc_error(XC_INVALID_ARGUMENT, "kernel has no body");
  return verify_block(v, k->body);
}

xc_status_t xc_tiled_verify(const xc_tiled_kernel_t* k) {
  if (k->pending_error)
    return xc_error(xc_status_code(k->pending_error), "%s", xc_status_message(k->pending_error));
  if (k->insert_depth != 1)
    return xc_error(XC_INVALID_ARGUMENT, "tiled kernel '%s': a for loop was not closed", k->name);
  verifier_t v = {k, NULL, 0};
  v.defined = calloc((size_t)(k->num_values ? k->num_values : 1), sizeof *v.defined);
  if (!v.defined) return xc_error_oom();
  xc_status_t st = verify_kernel(k, &v);
  free(v.defined);
  return xc_status_annotate(st, "tiled kernel '%s'", k->name);
}

/* ---- knobs -------------------------------------------------------------------------- */

static int64_t type_elems(const xc_tiled_type_t* t, const int64_t* knobs) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = xc_tiled_dim_resolve(t->dims[i], knobs);
    if (!xc_mul_i64(n, d, &n)) return INT64_MAX;
  }
  return n;
}

typedef struct knob_usage {
  int64_t shared_bytes;
  int64_t max_elems;
  const xc_tiled_value_t* biggest;
} knob_usage_t;

static void walk_usage(const xc_tiled_block_t* b, const int64_t* knobs, knob_usage_t* u) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_results; j++) {
      const xc_tiled_type_t* t = &op->results[j]->type;
      int64_t n = type_elems(t, knobs);
      if (t->kind == XC_TILED_MEMREF && t->scope == XC_SCOPE_SHARED) {
        int64_t bytes;
        if (!xc_mul_i64(n, (int64_t)xc_dtype_size(t->dtype), &bytes) ||
            !xc_add_i64(u->shared_bytes, bytes, &u->shared_bytes))
          u->shared_bytes = INT64_MAX;
      } else if (t->kind == XC_TILED_TENSOR && n > u->max_elems) {
        u->max_elems = n;
        u->biggest = op->results[j];
      }
    }
    if (op->body) walk_usage(op->body, knobs, u);
  }
}

int64_t xc_tiled_shared_bytes(const xc_tiled_kernel_t* k, const int64_t* knob_values) {
  knob_usage_t u = {0, 0, NULL};
  if (k->body) walk_usage(k->body, knob_values, &u);
  return u.shared_bytes;
}

xc_status_t xc_tiled_knobs_check(const xc_tiled_kernel_t* k, const int64_t* values,
                                 const xc_tiled_limits_t* limits) {
  xc_tiled_limits_t unlimited;
  if (!limits) {
    xc_tiled_limits_init_unlimited(&unlimited);
    limits = &unlimited;
  }
  for (int i = 0; i < k->num_knobs; i++) {
    const xc_tiled_knob_t* kn = &k->knobs[i];
    bool found = false;
    for (int j = 0; j < kn->num_candidates; j++) found |= kn->candidates[j] == values[i];
    if (!found)
      return xc_error(XC_INVALID_ARGUMENT, "knob %s = %lld is not one of its candidates",
                      kn->name, (long long)values[i]);
    if (kn->kind == XC_KNOB_THREADS && values[i] > limits->value[XC_TILED_LIMIT_MAX_THREADS])
      return xc_error(XC_INVALID_ARGUMENT, "knob %s = %lld exceeds max_threads %lld", kn->name,
                      (long long)values[i], (long long)limits->value[XC_TILED_LIMIT_MAX_THREADS]);
    if (kn->kind == XC_KNOB_VECTOR && values[i] > limits->value[XC_TILED_LIMIT_MAX_VECTOR])
      return xc_error(XC_INVALID_ARGUMENT, "knob %s = %lld exceeds max_vector %lld", kn->name,
                      (long long)values[i], (long long)limits->value[XC_TILED_LIMIT_MAX_VECTOR]);
  }
  for (int i = 0; i < k->num_constraints; i++) {
    int64_t r;
    XC_RETURN_IF_ERROR(xc_status_annotate(
        xc_texpr_eval(k->constraints[i], values, NULL, limits, &r), "constraint %d", i));
    if (!r) {
      char* text = xc_texpr_to_string(k, k->constraints[i]);
      xc_status_t st = xc_error(XC_INVALID_ARGUMENT, "knob constraint %d (%s) does not hold", i,
                                text ? text : "?");
      free(text);
      return st;
    }
  }
  knob_usage_t u = {0, 0, NULL};
  if (k->body) walk_usage(k->body, values, &u);
  if (u.shared_bytes > limits->value[XC_TILED_LIMIT_SHARED_BYTES])
    return xc_error(XC_INVALID_ARGUMENT, "shared allocations need %lld bytes, more than "
                    "shared_bytes %lld", (long long)u.shared_bytes,
                    (long long)limits->value[XC_TILED_LIMIT_SHARED_BYTES]);
  int64_t cap = limits->value[XC_TILED_LIMIT_MAX_TILE_ELEMS];
  /* on GPUs the budget is registers: a program of more than 256
   * work-items (a warp-specialized pattern program) holds a tile per 128 */
  int th = xc_tiled_knob_of_kind(k, XC_KNOB_THREADS);
  if (th >= 0 && values[th] > 256 && limits->value[XC_TILED_LIMIT_SIMD_WIDTH] >= 32 && cap <= XC_TILED_MAX_TILE_ELEMS)
    cap = cap / 128 * values[th];
  if (cap > XC_TILED_MAX_TILE_ELEMS) cap = XC_TILED_MAX_TILE_ELEMS;
  if (u.max_elems > cap)
    return xc_error(XC_INVALID_ARGUMENT, "tile %%%d has %lld elements, more than max_tile_elems "
                    "%lld", u.biggest ? u.biggest->id : -1, (long long)u.max_elems,
                    (long long)cap);
  return NULL;
}

static int64_t tile_volume(const xc_tiled_kernel_t* k, const int64_t* values) {
  int64_t v = 1;
  for (int i = 0; i < k->num_knobs; i++)
    if (k->knobs[i].kind == XC_KNOB_TILE && !xc_mul_i64(v, values[i], &v)) return INT64_MAX;
  return v;
}

/* A valid choice reached from the defaults without searching every
 * combination (kernels with many knobs): threads and vector knobs first
 * take their largest candidate within the limits, then, while the choice is
 * invalid, the largest tile knob that has a smaller candidate steps down to
 * it. out holds the defaults on entry. */
static xc_status_t knobs_descend(const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits, int64_t* out) {
  int n = k->num_knobs;
  xc_tiled_limits_t unlimited;
  if (!limits) {
    xc_tiled_limits_init_unlimited(&unlimited);
    limits = &unlimited;
  }
  for (int i = 0; i < n; i++) {
    const xc_tiled_knob_t* kn = &k->knobs[i];
    int64_t cap = kn->kind == XC_KNOB_THREADS ? limits->value[XC_TILED_LIMIT_MAX_THREADS]
                  : kn->kind == XC_KNOB_VECTOR ? limits->value[XC_TILED_LIMIT_MAX_VECTOR]
                                               : INT64_MAX;
    if (out[i] <= cap) continue;
    int64_t best = 0;
    for (int c = 0; c < kn->num_candidates; c++)
      if (kn->candidates[c] <= cap && kn->candidates[c] > best) best = kn->candidates[c];
    if (best == 0) return xc_error(XC_OUT_OF_RANGE, "knob %s has no candidate within the limits", kn->name);
    out[i] = best;
  }
  for (int step = 0; step < 64 * (n + 1); step++) {
    xc_status_t st = xc_tiled_knobs_check(k, out, limits);
    if (!st) return NULL;
    int pick = -1;
    int64_t next = 0;
    for (int i = 0; i < n; i++) {
      const xc_tiled_knob_t* kn = &k->knobs[i];
      if (kn->kind != XC_KNOB_TILE) continue;
      int64_t below = 0;
      for (int c = 0; c < kn->num_candidates; c++)
        if (kn->candidates[c] < out[i] && kn->candidates[c] > below) below = kn->candidates[c];
      if (below > 0 && (pick < 0 || out[i] > out[pick])) pick = i, next = below;
    }
    if (pick < 0) return st;
    xc_status_free(st);
    out[pick] = next;
  }
  return xc_error(XC_OUT_OF_RANGE, "no valid knob choice found");
}

xc_status_t xc_tiled_knobs_choose(const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                                  int64_t* out) {
  int n = k->num_knobs;
  for (int i = 0; i < n; i++) out[i] = k->knobs[i].default_value;
  xc_status_t first = xc_tiled_knobs_check(k, out, limits);
  if (!first) return NULL;
  int64_t combos = 1;
  for (int i = 0; i < n; i++)
    if (!xc_mul_i64(combos, k->knobs[i].num_candidates, &combos) || combos > (1 << 20)) {
      /* too many to search all: walk from the defaults instead */
      xc_status_t st = knobs_descend(k, limits, out);
      if (!st) {
        xc_status_free(first);
        return NULL;
      }
      xc_status_free(st);
      return xc_status_annotate(first, "tiled kernel '%s': defaults are invalid, there are too many knob "
                                "combinations to search, and no valid choice lies on the way down from the "
                                "defaults", k->name);
    }
  int* idx = calloc((size_t)(n ? n : 1), sizeof *idx);
  int* def = calloc((size_t)(n ? n : 1), sizeof *def);
  int64_t* cur = calloc((size_t)(n ? n : 1), sizeof *cur);
  if (!idx || !def || !cur) {
    free(idx), free(def), free(cur);
    xc_status_free(first);
    return xc_error_oom();
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k->knobs[i].num_candidates; j++)
      if (k->knobs[i].candidates[j] == k->knobs[i].default_value) def[i] = j;
  int64_t best_dist = INT64_MAX, best_vol = -1;
  bool found = false;
  for (;;) {
    int64_t dist = 0;
    for (int i = 0; i < n; i++) {
      cur[i] = k->knobs[i].candidates[idx[i]];
      dist += abs(idx[i] - def[i]);
    }
    if (dist < best_dist || (dist == best_dist && tile_volume(k, cur) > best_vol)) {
      xc_status_t st = xc_tiled_knobs_check(k, cur, limits);
      if (!st) {
        found = true;
        best_dist = dist;
        best_vol = tile_volume(k, cur);
        memcpy(out, cur, (size_t)n * sizeof *out);
      }
      xc_status_free(st);
    }
    int i = 0;
    for (; i < n; i++) {
      if (++idx[i] < k->knobs[i].num_candidates) break;
      idx[i] = 0;
    }
    if (i == n) break;
  }
  free(idx), free(def), free(cur);
  if (!found)
    return xc_status_annotate(first, "tiled kernel '%s': no knob combination is valid for these "
                              "limits; the defaults fail with", k->name);
  xc_status_free(first);
  return NULL;
}
