/* Op family 'elementwise': arithmetic, math functions, comparisons, logic,
 * bitwise ops, Where, variadic Min/Max/Sum/Mean, Clip and Cast, with numpy
 * broadcasting (ONNX opset 23 semantics).
 *
 * Defined behaviour where ONNX leaves it open:
 * - integer Add/Sub/Mul/Neg/Abs/Pow wrap around (two's complement), as numpy;
 * - integer Div truncates toward zero (as the ONNX reference does); integer
 *   Div or Mod by zero is an error, INT_MIN / -1 wraps to INT_MIN;
 * - integer Pow with a negative exponent truncates the real result
 *   (1 for base 1, +-1 for base -1, 0 otherwise; base 0 is an error);
 * - Min/Max propagate NaN;
 * - Cast float -> integer truncates toward zero and saturates (NaN -> 0);
 *   integer -> narrower integer wraps.
 *
 * Integer Add/Sub/Mul/Div/Min/Max/Equal/Where/Cast over small vectors with
 * known (possibly symbolic) element values propagate those values, so shape
 * computations such as Shape -> Gather -> Mul -> Concat -> Reshape stay
 * symbolic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise_util.h"
#include "xcomp/op.h"

#define DT_F8 (XC_DT(XC_F8E4M3FN) | XC_DT(XC_F8E5M2))
#define DT_ANY (XC_DT_ALL | DT_F8)

typedef enum ew_op {
  /* binary arithmetic */
  EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MOD, EW_POW, EW_MIN, EW_MAX,
  /* comparisons and logic (bool results) */
  EW_EQ, EW_GT, EW_GE, EW_LT, EW_LE, EW_AND, EW_OR, EW_XOR,
  /* bitwise */
  EW_BITAND, EW_BITOR, EW_BITXOR, EW_SHIFT,
  /* unary */
  EW_NEG, EW_ABS, EW_SQRT, EW_RECIP, EW_EXP, EW_LOG, EW_ERF, EW_TANH, EW_SIGMOID,
  EW_SIN, EW_COS, EW_TAN, EW_ASIN, EW_ACOS, EW_ATAN, EW_SINH, EW_COSH, EW_ASINH,
  EW_ACOSH, EW_ATANH, EW_FLOOR, EW_CEIL, EW_ROUND, EW_SIGN, EW_ISNAN, EW_ISINF,
  EW_NOT, EW_BITNOT,
  /* variadic */
  EW_SUM, EW_MEAN,
} ew_op_t;

static bool op_is_predicate(ew_op_t op) {
  return (op >= EW_EQ && op <= EW_XOR) || op == EW_ISNAN || op == EW_ISINF;
}

/* ---- known element values (shape subgraphs) ----------------------------- */

static bool static_fold(ew_op_t op, int64_t a, int64_t b, int64_t* out) {
  switch (op) {
    case EW_ADD: return xc_add_i64(a, b, out);
    case EW_SUB: return xc_sub_i64(a, b, out);
    case EW_MUL: return xc_mul_i64(a, b, out);
    case EW_DIV:
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      *out = a / b;
      return true;
    case EW_MIN: *out = a < b ? a : b; return true;
    case EW_MAX: *out = a > b ? a : b; return true;
    case EW_EQ: *out = a == b; return true;
    default: return false;
  }
}

/* Symbols stand for sizes (>= 0): a VAR, and sums, products, quotients,
 * minima and maxima of non-negative terms are non-negative; a difference
 * may not be. */
static bool dim_nonnegative(xc_dim_t d) {
  if (!d.sym) return d.value >= 0;
  const xc_symexpr_t* e = d.sym;
  switch (e->kind) {
    case XC_SYM_CONST: return e->value >= 0;
    case XC_SYM_VAR: return true;
    case XC_SYM_ADD: case XC_SYM_MUL: case XC_SYM_FLOORDIV: case XC_SYM_CEILDIV:
    case XC_SYM_MIN: case XC_SYM_MAX: {
      xc_dim_t a = {0, e->a}, b = {0, e->b};
      return dim_nonnegative(a) && dim_nonnegative(b);
    }
    default: return false;
  }
}

/* Combines two known elements; false when the result is not expressible. */
static bool fold_dim(xc_graph_t* g, ew_op_t op, xc_dim_t a, xc_dim_t b, xc_dim_t* out) {
  if (!a.sym && !b.sym) {
    int64_t v;
    if (!static_fold(op, a.value, b.value, &v)) return false;
    *out = xc_dim_const(v);
    return true;
  }
  switch (op) {
    case EW_ADD: *out = xc_dim_add(g, a, b); return true;
    case EW_SUB: *out = xc_dim_sub(g, a, b); return true;
    case EW_MUL: *out = xc_dim_mul(g, a, b); return true;
    case EW_DIV:
      /* Truncation and floor division agree for a non-negative dividend. */
      if (b.sym || b.value <= 0 || !dim_nonnegative(a)) return false;
      *out = xc_dim_floordiv(g, a, b);
      return true;
    case EW_MIN: *out = xc_dim_min(g, a, b); return true;
    case EW_MAX: *out = xc_dim_max(g, a, b); return true;
    case EW_EQ:
      if (xc_dim_equal(a, b)) {
        *out = xc_dim_const(1);
        return true;
      }
      /* A size never equals a negative constant (the -1 of Reshape). */
      if ((!a.sym && a.value < 0 && dim_nonnegative(b)) ||
          (!b.sym && b.value < 0 && dim_nonnegative(a))) {
        *out = xc_dim_const(0);
        return true;
      }
      return false;
    default: return false;
  }
}

/* Output 0 as a small static 1-D/scalar integer value, or 0 elements if not
 * eligible for known elements. */
static int64_t elems_target_count(const xc_node_t* n) {
  const xc_value_t* out = n->num_outputs > 0 ? n->outputs[0] : NULL;
  if (!out || out->rank > 1) return -1;
  if (!xc_dtype_is_int(out->dtype) && out->dtype != XC_BOOL) return -1;
  if (out->rank == 0) return 1;
  if (out->dims[0].sym || out->dims[0].value > 64) return -1;
  return out->dims[0].value;
}

static bool input_elems(xc_graph_t* g, const xc_node_t* n, int i, int64_t count,
                        int64_t* num, const xc_dim_t** elems) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!v || v->rank > 1 || (!xc_dtype_is_int(v->dtype) && v->dtype != XC_BOOL)) return false;
  if (!xc_value_known_elems(g, v, num, elems)) return false;
  return *num == count || *num == 1;
}

static xc_status_t propagate_binary_elems(xc_graph_t* g, xc_node_t* n, ew_op_t op) {
  int64_t count = elems_target_count(n);
  if (count < 0) return NULL;
  int64_t na, nb;
  const xc_dim_t *ea, *eb;
  if (!input_elems(g, n, 0, count, &na, &ea) || !input_elems(g, n, 1, count, &nb, &eb))
    return NULL;
  xc_dim_t out[64];
  for (int64_t i = 0; i < count; i++)
    if (!fold_dim(g, op, ea[na == 1 ? 0 : i], eb[nb == 1 ? 0 : i], &out[i])) return NULL;
  return xc_value_set_elems(g, n->outputs[0], count, out);
}

/* ---- inference ---------------------------------------------------------- */

static xc_status_t check_input_dtype(const xc_node_t* n, int i, uint32_t mask) {
  return xc_infer_check_input(n, i, mask);
}

static xc_status_t infer_binary_common(xc_graph_t* g, xc_node_t* n, uint32_t mask,
                                       bool bool_out, ew_op_t op) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, mask));
  XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, 1));
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_ew_infer_broadcast(g, n, 0, 2, &rank, dims));
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], bool_out ? XC_BOOL : n->inputs[0]->dtype,
                                       rank, dims));
  return propagate_binary_elems(g, n, op);
}

#define DEFINE_BINARY_INFER(fn, mask, bool_out, op) \
  static xc_status_t fn(xc_graph_t* g, xc_node_t* n) { \
    return infer_binary_common(g, n, mask, bool_out, op); \
  }

DEFINE_BINARY_INFER(infer_add, XC_DT_NUMERIC, false, EW_ADD)
DEFINE_BINARY_INFER(infer_sub, XC_DT_NUMERIC, false, EW_SUB)
DEFINE_BINARY_INFER(infer_mul, XC_DT_NUMERIC, false, EW_MUL)
DEFINE_BINARY_INFER(infer_div, XC_DT_NUMERIC, false, EW_DIV)
DEFINE_BINARY_INFER(infer_mod, XC_DT_NUMERIC, false, EW_MOD)
DEFINE_BINARY_INFER(infer_equal, XC_DT_ALL, true, EW_EQ)
DEFINE_BINARY_INFER(infer_compare, XC_DT_NUMERIC, true, EW_GT)
DEFINE_BINARY_INFER(infer_logical, XC_DT(XC_BOOL), true, EW_AND)
DEFINE_BINARY_INFER(infer_bitwise, XC_DT_INT, false, EW_BITAND)
DEFINE_BINARY_INFER(infer_bitshift, XC_DT_UINT, false, EW_SHIFT)

static xc_status_t infer_pow(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_input_dtype(
      n, 0, XC_DT_FLOAT | XC_DT(XC_I32) | XC_DT(XC_I64)));
  XC_RETURN_IF_ERROR(check_input_dtype(n, 1, XC_DT_NUMERIC));
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_ew_infer_broadcast(g, n, 0, 2, &rank, dims));
  return xc_value_set_type(g, n->outputs[0], n->inputs[0]->dtype, rank, dims);
}

static xc_status_t infer_unary_common(xc_graph_t* g, xc_node_t* n, uint32_t mask,
                                      bool bool_out) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, mask));
  const xc_value_t* x = n->inputs[0];
  return xc_value_set_type(g, n->outputs[0], bool_out ? XC_BOOL : x->dtype, x->rank, x->dims);
}

#define DEFINE_UNARY_INFER(fn, mask, bool_out) \
  static xc_status_t fn(xc_graph_t* g, xc_node_t* n) { \
    return infer_unary_common(g, n, mask, bool_out); \
  }

DEFINE_UNARY_INFER(infer_unary_float, XC_DT_FLOAT, false)
DEFINE_UNARY_INFER(infer_unary_numeric, XC_DT_NUMERIC, false)
DEFINE_UNARY_INFER(infer_float_predicate, XC_DT_FLOAT | DT_F8, true)
DEFINE_UNARY_INFER(infer_not, XC_DT(XC_BOOL), false)
DEFINE_UNARY_INFER(infer_bitnot, XC_DT_INT, false)

static xc_status_t infer_neg(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(infer_unary_common(g, n, XC_DT_FLOAT | XC_DT_SINT, false));
  /* Negated known elements (e.g. -dim in slice bounds). */
  int64_t count = elems_target_count(n), na;
  const xc_dim_t* ea;
  if (count < 0 || !input_elems(g, n, 0, count, &na, &ea) || na != count) return NULL;
  xc_dim_t out[64];
  for (int64_t i = 0; i < count; i++)
    if (!fold_dim(g, EW_SUB, xc_dim_const(0), ea[i], &out[i])) return NULL;
  return xc_value_set_elems(g, n->outputs[0], count, out);
}

static xc_status_t infer_variadic(xc_graph_t* g, xc_node_t* n, uint32_t mask, ew_op_t op) {
  if (n->num_inputs < 1 || !n->inputs[0])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "needs at least one input");
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, mask));
  for (int k = 1; k < n->num_inputs; k++) XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, k));
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_ew_infer_broadcast(g, n, 0, n->num_inputs, &rank, dims));
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], n->inputs[0]->dtype, rank, dims));
  if ((op == EW_MIN || op == EW_MAX) && n->num_inputs == 2)
    return propagate_binary_elems(g, n, op);
  return NULL;
}

static xc_status_t infer_min(xc_graph_t* g, xc_node_t* n) {
  return infer_variadic(g, n, XC_DT_NUMERIC, EW_MIN);
}
static xc_status_t infer_max(xc_graph_t* g, xc_node_t* n) {
  return infer_variadic(g, n, XC_DT_NUMERIC, EW_MAX);
}
static xc_status_t infer_sum_mean(xc_graph_t* g, xc_node_t* n) {
  return infer_variadic(g, n, XC_DT_FLOAT, EW_SUM);
}

static xc_status_t infer_where(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, XC_DT(XC_BOOL)));
  XC_RETURN_IF_ERROR(check_input_dtype(n, 1, DT_ANY));
  XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 1, 2));
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(xc_ew_infer_broadcast(g, n, 0, 3, &rank, dims));
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], n->inputs[1]->dtype, rank, dims));
  int64_t count = elems_target_count(n), nc, nx, ny;
  const xc_dim_t *ec, *ex, *ey;
  if (count < 0 || !input_elems(g, n, 0, count, &nc, &ec) ||
      !input_elems(g, n, 1, count, &nx, &ex) || !input_elems(g, n, 2, count, &ny, &ey))
    return NULL;
  xc_dim_t out[64];
  for (int64_t i = 0; i < count; i++) {
    xc_dim_t c = ec[nc == 1 ? 0 : i];
    if (c.sym) return NULL;
    out[i] = c.value ? ex[nx == 1 ? 0 : i] : ey[ny == 1 ? 0 : i];
  }
  return xc_value_set_elems(g, n->outputs[0], count, out);
}

static xc_status_t check_scalar_bound(const xc_node_t* n, int i) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!v) return NULL;
  XC_RETURN_IF_ERROR(xc_ew_check_same_dtype(n, 0, i));
  if (v->rank > 1 || (v->rank == 1 && !v->dims[0].sym && v->dims[0].value != 1))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s bound (input %d) must be a scalar",
                         i == 1 ? "min" : "max", i);
  return NULL;
}

static xc_status_t infer_clip(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(check_scalar_bound(n, 1));
  XC_RETURN_IF_ERROR(check_scalar_bound(n, 2));
  return xc_infer_same_as_input(g, n, 0, 0);
}

/* Casting keeps known elements when integer values stay representable. */
static bool int_fits(xc_dtype_t t, int64_t v) {
  switch (t) {
    case XC_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case XC_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case XC_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case XC_I64: return true;
    case XC_U8: return v >= 0 && v <= UINT8_MAX;
    case XC_U16: return v >= 0 && v <= UINT16_MAX;
    case XC_U32: return v >= 0 && v <= UINT32_MAX;
    case XC_U64: return v >= 0;
    default: return false;
  }
}

static xc_status_t infer_cast_to(xc_graph_t* g, xc_node_t* n, xc_dtype_t to) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 0, DT_ANY));
  const xc_value_t* x = n->inputs[0];
  XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], to, x->rank, x->dims));
  int64_t count = elems_target_count(n), nx;
  const xc_dim_t* ex;
  if (count < 0 || !xc_dtype_is_int(to) || !xc_dtype_is_int(x->dtype) ||
      !input_elems(g, n, 0, count, &nx, &ex) || nx != count)
    return NULL;
  /* Sizes are assumed to fit 32 bits, not 8 or 16. */
  bool wide = xc_dtype_size(to) >= 4;
  for (int64_t i = 0; i < count; i++)
    if (ex[i].sym ? !wide : !int_fits(to, ex[i].value)) return NULL;
  return xc_value_set_elems(g, n->outputs[0], count, ex);
}

static xc_status_t cast_target(const xc_node_t* n, xc_dtype_t* out) {
  int64_t to = xc_node_attr_int(n, "to");
  xc_dtype_t t = to > 0 && to < INT32_MAX ? xc_dtype_from_onnx((int32_t)to) : XC_DTYPE_UNDEFINED;
  if (t == XC_DTYPE_UNDEFINED)
    return xc_node_error(n, XC_UNSUPPORTED, "unsupported target type to=%lld", (long long)to);
  *out = t;
  return NULL;
}

static xc_status_t infer_cast(xc_graph_t* g, xc_node_t* n) {
  xc_dtype_t to;
  XC_RETURN_IF_ERROR(cast_target(n, &to));
  return infer_cast_to(g, n, to);
}

static xc_status_t infer_castlike(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_input_dtype(n, 1, DT_ANY));
  return infer_cast_to(g, n, n->inputs[1]->dtype);
}

/* ---- scalar semantics --------------------------------------------------- */

static double float_binary(ew_op_t op, double a, double b, bool c_fmod) {
  switch (op) {
    case EW_ADD: return a + b;
    case EW_SUB: return a - b;
    case EW_MUL: return a * b;
    case EW_DIV: return a / b;
    case EW_POW: return pow(a, b);
    case EW_MOD: {
      double r = fmod(a, b);
      /* fmod=0: result takes the sign of the divisor (Python %). */
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case EW_MIN: return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
    case EW_MAX: return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
    default: return NAN;
  }
}

static int64_t int_pow(int64_t base, int64_t exp, bool exp_unsigned) {
  if (!exp_unsigned && exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, b = (uint64_t)base, e = (uint64_t)exp;
  while (e) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)result;
}

/* Integer semantics on int64 bit patterns of dtype t (u64 treated unsigned).
 * Returns false on division by zero. */
static bool int_binary(ew_op_t op, xc_dtype_t t, int64_t a, int64_t b, bool c_fmod,
                       int64_t* out) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  bool u = xc_ew_is_u64(t);
  switch (op) {
    case EW_ADD: *out = (int64_t)(ua + ub); return true;
    case EW_SUB: *out = (int64_t)(ua - ub); return true;
    case EW_MUL: *out = (int64_t)(ua * ub); return true;
    case EW_DIV:
      if (b == 0) return false;
      if (u) *out = (int64_t)(ua / ub);
      else if (b == -1) *out = (int64_t)(0 - ua); /* INT64_MIN / -1 wraps */
      else *out = a / b;
      return true;
    case EW_MOD: {
      if (b == 0) return false;
      if (u) {
        *out = (int64_t)(ua % ub);
        return true;
      }
      int64_t r = b == -1 ? 0 : a % b;
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      *out = r;
      return true;
    }
    case EW_MIN: *out = xc_ew_cmp_int(t, a, b) <= 0 ? a : b; return true;
    case EW_MAX: *out = xc_ew_cmp_int(t, a, b) >= 0 ? a : b; return true;
    case EW_BITAND: *out = a & b; return true;
    case EW_BITOR: *out = a | b; return true;
    case EW_BITXOR: *out = a ^ b; return true;
    default: *out = 0; return true;
  }
}

static bool compare_result(ew_op_t op, int c) {
  switch (op) {
    case EW_EQ: return c == 0;
    case EW_GT: return c > 0;
    case EW_GE: return c >= 0;
    case EW_LT: return c < 0;
    case EW_LE: return c <= 0;
    default: return false;
  }
}

/* ---- kernels ------------------------------------------------------------ */

static xc_status_t create_broadcast_output(xc_eval_ctx_t* ctx, int count, xc_dtype_t dtype,
                                           int* rank, int64_t* dims) {
  XC_RETURN_IF_ERROR(xc_ew_broadcast_shape(ctx->node, count, ctx->inputs, rank, dims));
  return xc_tensor_create(dtype, *rank, dims, &ctx->outputs[0]);
}

static xc_status_t binary_eval(xc_eval_ctx_t* ctx, ew_op_t op) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  const xc_tensor_t* a = ctx->inputs[0];
  const xc_tensor_t* b = ctx->inputs[1];
  const xc_node_t* n = ctx->node;
  if (op != EW_POW && a->dtype != b->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "inputs have different dtypes %s and %s",
                         xc_dtype_name(a->dtype), xc_dtype_name(b->dtype));
  xc_dtype_t out_dtype = op_is_predicate(op) ? XC_BOOL : a->dtype;
  int rank;
  int64_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(create_broadcast_output(ctx, 2, out_dtype, &rank, dims));
  xc_tensor_t* y = ctx->outputs[0];
  bool c_fmod = op == EW_MOD && xc_node_attr_int(n, "fmod") != 0;
  bool shift_left = false;
  if (op == EW_SHIFT) {
    const char* dir = xc_node_attr_string(n, "direction");
    if (dir && strcmp(dir, "LEFT") == 0) shift_left = true;
    else if (!dir || strcmp(dir, "RIGHT") != 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "direction must be LEFT or RIGHT, got '%s'",
                           dir ? dir : "");
  }
  bool a_float = xc_dtype_is_float(a->dtype), b_float = xc_dtype_is_float(b->dtype);
  xc_ew_iter_t it;
  const xc_tensor_t* ops[2] = {a, b};
  xc_ew_iter_init(&it, rank, dims, 2, ops);
  for (int64_t i = 0; i < y->numel; i++, xc_ew_iter_next(&it)) {
    int64_t ia = it.off[0], ib = it.off[1];
    if (op >= EW_EQ && op <= EW_LE) {
      int c;
      if (a_float) {
        double x = xc_tensor_get_f64(a, ia), z = xc_tensor_get_f64(b, ib);
        if (isnan(x) || isnan(z)) {
          xc_tensor_set_i64(y, i, 0);
          continue;
        }
        c = x < z ? -1 : x > z;
      } else {
        c = xc_ew_cmp_int(a->dtype, xc_tensor_get_i64(a, ia), xc_tensor_get_i64(b, ib));
      }
      xc_tensor_set_i64(y, i, compare_result(op, c));
    } else if (op == EW_AND || op == EW_OR || op == EW_XOR) {
      bool x = xc_tensor_get_i64(a, ia) != 0, z = xc_tensor_get_i64(b, ib) != 0;
      bool r = op == EW_AND ? (x && z) : op == EW_OR ? (x || z) : (x != z);
      xc_tensor_set_i64(y, i, r);
    } else if (op == EW_SHIFT) {
      uint64_t x = (uint64_t)xc_tensor_get_i64(a, ia), s = (uint64_t)xc_tensor_get_i64(b, ib);
      uint64_t r = s >= 64 ? 0 : shift_left ? x << s : x >> s;
      xc_tensor_set_i64(y, i, (int64_t)r);
    } else if (a_float) {
      xc_tensor_set_f64(y, i, float_binary(op, xc_tensor_get_f64(a, ia),
                                           xc_tensor_get_f64(b, ib), c_fmod));
    } else if (op == EW_POW && b_float) {
      /* Integer base, float exponent: real power truncated into the base type. */
      xc_tensor_set_f64(y, i, pow(xc_tensor_get_f64(a, ia), xc_tensor_get_f64(b, ib)));
    } else if (op == EW_POW) {
      int64_t x = xc_tensor_get_i64(a, ia), e = xc_tensor_get_i64(b, ib);
      bool e_unsigned = !xc_dtype_is_signed(b->dtype);
      if (x == 0 && !e_unsigned && e < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "integer zero raised to a negative power at element %lld",
                             (long long)i);
      xc_tensor_set_i64(y, i, int_pow(x, e, e_unsigned));
    } else {
      int64_t r;
      if (!int_binary(op, a->dtype, xc_tensor_get_i64(a, ia), xc_tensor_get_i64(b, ib), c_fmod,
                      &r))
        return xc_node_error(n, XC_INVALID_ARGUMENT, "integer division by zero at element %lld",
                             (long long)i);
      xc_tensor_set_i64(y, i, r);
    }
  }
  return NULL;
}

static double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}

static double float_unary(ew_op_t op, double x) {
  switch (op) {
    case EW_NEG: return -x;
    case EW_ABS: return fabs(x);
    case EW_SQRT: return sqrt(x);
    case EW_RECIP: return 1.0 / x;
    case EW_EXP: return exp(x);
    case EW_LOG: return log(x);
    case EW_ERF: return erf(x);
    case EW_TANH: return tanh(x);
    case EW_SIGMOID: return sigmoid(x);
    case EW_SIN: return sin(x);
    case EW_COS: return cos(x);
    case EW_TAN: return tan(x);
    case EW_ASIN: return asin(x);
    case EW_ACOS: return acos(x);
    case EW_ATAN: return atan(x);
    case EW_SINH: return sinh(x);
    case EW_COSH: return cosh(x);
    case EW_ASINH: return asinh(x);
    case EW_ACOSH: return acosh(x);
    case EW_ATANH: return atanh(x);
    case EW_FLOOR: return floor(x);
    case EW_CEIL: return ceil(x);
    case EW_ROUND: return xc_ew_round_half_even(x);
    case EW_SIGN: return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    default: return NAN;
  }
}

static int64_t int_unary(ew_op_t op, xc_dtype_t t, int64_t x) {
  switch (op) {
    case EW_NEG: return (int64_t)(0 - (uint64_t)x);
    case EW_ABS:
      if (!xc_dtype_is_signed(t)) return x;
      return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case EW_SIGN:
      if (!xc_dtype_is_signed(t)) return x != 0;
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case EW_NOT: return !x;
    case EW_BITNOT: return ~x;
    default: return 0;
  }
}

static xc_status_t unary_eval(xc_eval_ctx_t* ctx, ew_op_t op) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 1));
  const xc_tensor_t* x = ctx->inputs[0];
  xc_dtype_t out_dtype = op_is_predicate(op) ? XC_BOOL : x->dtype;
  XC_RETURN_IF_ERROR(xc_tensor_create(out_dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  bool detect_neg = true, detect_pos = true;
  if (op == EW_ISINF) {
    detect_neg = xc_node_attr_int(ctx->node, "detect_negative") != 0;
    detect_pos = xc_node_attr_int(ctx->node, "detect_positive") != 0;
  }
  bool is_float = xc_dtype_is_float(x->dtype);
  for (int64_t i = 0; i < x->numel; i++) {
    if (op == EW_ISNAN) {
      xc_tensor_set_i64(y, i, isnan(xc_tensor_get_f64(x, i)));
    } else if (op == EW_ISINF) {
      double v = xc_tensor_get_f64(x, i);
      xc_tensor_set_i64(y, i, isinf(v) && ((v > 0 && detect_pos) || (v < 0 && detect_neg)));
    } else if (is_float) {
      xc_tensor_set_f64(y, i, float_unary(op, xc_tensor_get_f64(x, i)));
    } else {
      xc_tensor_set_i64(y, i, int_unary(op, x->dtype, xc_tensor_get_i64(x, i)));
    }
  }
  return NULL;
}

static xc_status_t variadic_eval(xc_eval_ctx_t* ctx, ew_op_t op) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, ctx->num_inputs > 0 ? ctx->num_inputs : 1));
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* first = ctx->inputs[0];
  for (int k = 1; k < ctx->num_inputs; k++)
    if (!ctx->inputs[k] || ctx->inputs[k]->dtype != first->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d is missing or has another dtype", k);
  int rank;
  int64_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(create_broadcast_output(ctx, ctx->num_inputs, first->dtype, &rank, dims));
  xc_tensor_t* y = ctx->outputs[0];
  if (y->numel == 0) return NULL;
  bool is_float = xc_dtype_is_float(first->dtype);
  double* accf = NULL;
  int64_t* acci = NULL;
  if (is_float) accf = malloc(sizeof(double) * (size_t)y->numel);
  else acci = malloc(sizeof(int64_t) * (size_t)y->numel);
  if (!accf && !acci) return xc_error_oom();
  for (int k = 0; k < ctx->num_inputs; k++) {
    xc_ew_iter_t it;
    const xc_tensor_t* t = ctx->inputs[k];
    xc_ew_iter_init(&it, rank, dims, 1, &t);
    for (int64_t i = 0; i < y->numel; i++, xc_ew_iter_next(&it)) {
      if (is_float) {
        double v = xc_tensor_get_f64(t, it.off[0]);
        if (k == 0) accf[i] = v;
        else if (op == EW_SUM || op == EW_MEAN) accf[i] += v;
        else accf[i] = float_binary(op, accf[i], v, false);
      } else {
        int64_t v = xc_tensor_get_i64(t, it.off[0]);
        if (k == 0) acci[i] = v;
        else int_binary(op, first->dtype, acci[i], v, false, &acci[i]);
      }
    }
  }
  for (int64_t i = 0; i < y->numel; i++) {
    if (is_float)
      xc_tensor_set_f64(y, i, op == EW_MEAN ? accf[i] / ctx->num_inputs : accf[i]);
    else
      xc_tensor_set_i64(y, i, acci[i]);
  }
  free(accf);
  free(acci);
  return NULL;
}

static xc_status_t eval_where(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 3));
  const xc_tensor_t* c = ctx->inputs[0];
  const xc_tensor_t* x = ctx->inputs[1];
  const xc_tensor_t* z = ctx->inputs[2];
  if (c->dtype != XC_BOOL || x->dtype != z->dtype)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT,
                         "condition must be bool and X, Y of one dtype");
  int rank;
  int64_t dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(create_broadcast_output(ctx, 3, x->dtype, &rank, dims));
  xc_tensor_t* y = ctx->outputs[0];
  size_t es = xc_dtype_size(x->dtype);
  xc_ew_iter_t it;
  xc_ew_iter_init(&it, rank, dims, 3, ctx->inputs);
  for (int64_t i = 0; i < y->numel; i++, xc_ew_iter_next(&it)) {
    bool take_x = ((const uint8_t*)c->data)[it.off[0]] != 0;
    const uint8_t* src = take_x ? (const uint8_t*)x->data + (size_t)it.off[1] * es
                                : (const uint8_t*)z->data + (size_t)it.off[2] * es;
    memcpy((uint8_t*)y->data + (size_t)i * es, src, es);
  }
  return NULL;
}

static xc_status_t eval_clip(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 1));
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* lo = ctx->num_inputs > 1 ? ctx->inputs[1] : NULL;
  const xc_tensor_t* hi = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  for (int k = 1; k < 3; k++) {
    const xc_tensor_t* b = k == 1 ? lo : hi;
    if (b && (b->numel != 1 || b->dtype != x->dtype))
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT,
                           "%s bound must be a single %s value", k == 1 ? "min" : "max",
                           xc_dtype_name(x->dtype));
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  /* Clamping to min first and then to max makes every value max when
   * min > max, as the ONNX spec requires. */
  if (xc_dtype_is_float(x->dtype)) {
    for (int64_t i = 0; i < x->numel; i++) {
      double v = xc_tensor_get_f64(x, i);
      if (lo && v < xc_tensor_get_f64(lo, 0)) v = xc_tensor_get_f64(lo, 0);
      if (hi && v > xc_tensor_get_f64(hi, 0)) v = xc_tensor_get_f64(hi, 0);
      xc_tensor_set_f64(y, i, v);
    }
  } else {
    for (int64_t i = 0; i < x->numel; i++) {
      int64_t v = xc_tensor_get_i64(x, i);
      if (lo && xc_ew_cmp_int(x->dtype, v, xc_tensor_get_i64(lo, 0)) < 0)
        v = xc_tensor_get_i64(lo, 0);
      if (hi && xc_ew_cmp_int(x->dtype, v, xc_tensor_get_i64(hi, 0)) > 0)
        v = xc_tensor_get_i64(hi, 0);
      xc_tensor_set_i64(y, i, v);
    }
  }
  return NULL;
}

static void cast_element(const xc_tensor_t* x, int64_t i, xc_tensor_t* y, bool saturate) {
  xc_dtype_t to = y->dtype;
  if (xc_dtype_is_float(x->dtype)) {
    double v = xc_tensor_get_f64(x, i);
    if (to == XC_F8E4M3FN || to == XC_F8E5M2) xc_ew_store_f8(y, i, v, saturate);
    else xc_tensor_set_f64(y, i, v);
    return;
  }
  int64_t v = xc_tensor_get_i64(x, i);
  if (!xc_dtype_is_float(to)) {
    xc_tensor_set_i64(y, i, v);
    return;
  }
  bool u = xc_ew_is_u64(x->dtype);
  if (to == XC_F32) {
    /* Direct conversion: a single rounding even beyond 2^53. */
    ((float*)y->data)[i] = u ? (float)(uint64_t)v : (float)v;
    return;
  }
  double d = u ? (double)(uint64_t)v : (double)v;
  if (to == XC_F8E4M3FN || to == XC_F8E5M2) xc_ew_store_f8(y, i, d, saturate);
  else xc_tensor_set_f64(y, i, d);
}

static xc_status_t cast_eval(xc_eval_ctx_t* ctx, xc_dtype_t to) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 1));
  const xc_tensor_t* x = ctx->inputs[0];
  bool saturate = xc_node_attr_int(ctx->node, "saturate") != 0;
  XC_RETURN_IF_ERROR(xc_tensor_create(to, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  if (x->dtype == to) {
    if (xc_tensor_nbytes(x)) memcpy(y->data, x->data, xc_tensor_nbytes(x));
    return NULL;
  }
  for (int64_t i = 0; i < x->numel; i++) cast_element(x, i, y, saturate);
  return NULL;
}

static xc_status_t eval_cast(xc_eval_ctx_t* ctx) {
  xc_dtype_t to;
  XC_RETURN_IF_ERROR(cast_target(ctx->node, &to));
  return cast_eval(ctx, to);
}

static xc_status_t eval_castlike(xc_eval_ctx_t* ctx) {
  XC_RETURN_IF_ERROR(xc_ew_require_inputs(ctx, 2));
  return cast_eval(ctx, ctx->inputs[1]->dtype);
}

#define DEFINE_EVAL(fn, kernel, op) \
  static xc_status_t fn(xc_eval_ctx_t* ctx) { return kernel(ctx, op); }

DEFINE_EVAL(eval_add, binary_eval, EW_ADD)
DEFINE_EVAL(eval_sub, binary_eval, EW_SUB)
DEFINE_EVAL(eval_mul, binary_eval, EW_MUL)
DEFINE_EVAL(eval_div, binary_eval, EW_DIV)
DEFINE_EVAL(eval_mod, binary_eval, EW_MOD)
DEFINE_EVAL(eval_pow, binary_eval, EW_POW)
DEFINE_EVAL(eval_equal, binary_eval, EW_EQ)
DEFINE_EVAL(eval_greater, binary_eval, EW_GT)
DEFINE_EVAL(eval_greater_equal, binary_eval, EW_GE)
DEFINE_EVAL(eval_less, binary_eval, EW_LT)
DEFINE_EVAL(eval_less_equal, binary_eval, EW_LE)
DEFINE_EVAL(eval_and, binary_eval, EW_AND)
DEFINE_EVAL(eval_or, binary_eval, EW_OR)
DEFINE_EVAL(eval_xor, binary_eval, EW_XOR)
DEFINE_EVAL(eval_bitwise_and, binary_eval, EW_BITAND)
DEFINE_EVAL(eval_bitwise_or, binary_eval, EW_BITOR)
DEFINE_EVAL(eval_bitwise_xor, binary_eval, EW_BITXOR)
DEFINE_EVAL(eval_bitshift, binary_eval, EW_SHIFT)
DEFINE_EVAL(eval_neg, unary_eval, EW_NEG)
DEFINE_EVAL(eval_abs, unary_eval, EW_ABS)
DEFINE_EVAL(eval_sqrt, unary_eval, EW_SQRT)
DEFINE_EVAL(eval_reciprocal, unary_eval, EW_RECIP)
DEFINE_EVAL(eval_exp, unary_eval, EW_EXP)
DEFINE_EVAL(eval_log, unary_eval, EW_LOG)
DEFINE_EVAL(eval_erf, unary_eval, EW_ERF)
DEFINE_EVAL(eval_tanh, unary_eval, EW_TANH)
DEFINE_EVAL(eval_sigmoid, unary_eval, EW_SIGMOID)
DEFINE_EVAL(eval_sin, unary_eval, EW_SIN)
DEFINE_EVAL(eval_cos, unary_eval, EW_COS)
DEFINE_EVAL(eval_tan, unary_eval, EW_TAN)
DEFINE_EVAL(eval_asin, unary_eval, EW_ASIN)
DEFINE_EVAL(eval_acos, unary_eval, EW_ACOS)
DEFINE_EVAL(eval_atan, unary_eval, EW_ATAN)
DEFINE_EVAL(eval_sinh, unary_eval, EW_SINH)
DEFINE_EVAL(eval_cosh, unary_eval, EW_COSH)
DEFINE_EVAL(eval_asinh, unary_eval, EW_ASINH)
DEFINE_EVAL(eval_acosh, unary_eval, EW_ACOSH)
DEFINE_EVAL(eval_atanh, unary_eval, EW_ATANH)
DEFINE_EVAL(eval_floor, unary_eval, EW_FLOOR)
DEFINE_EVAL(eval_ceil, unary_eval, EW_CEIL)
DEFINE_EVAL(eval_round, unary_eval, EW_ROUND)
DEFINE_EVAL(eval_sign, unary_eval, EW_SIGN)
DEFINE_EVAL(eval_isnan, unary_eval, EW_ISNAN)
DEFINE_EVAL(eval_isinf, unary_eval, EW_ISINF)
DEFINE_EVAL(eval_not, unary_eval, EW_NOT)
DEFINE_EVAL(eval_bitwise_not, unary_eval, EW_BITNOT)
DEFINE_EVAL(eval_min, variadic_eval, EW_MIN)
DEFINE_EVAL(eval_max, variadic_eval, EW_MAX)
DEFINE_EVAL(eval_sum, variadic_eval, EW_SUM)
DEFINE_EVAL(eval_mean, variadic_eval, EW_MEAN)

/* ---- table -------------------------------------------------------------- */

static const xc_attr_def_t mod_attrs[] = {XC_ATTR_I("fmod", 0), XC_ATTR_END};
static const xc_attr_def_t isinf_attrs[] = {
    XC_ATTR_I("detect_negative", 1), XC_ATTR_I("detect_positive", 1), XC_ATTR_END};
static const xc_attr_def_t cast_attrs[] = {
    XC_ATTR_REQ("to", XC_ATTR_INT), XC_ATTR_I("saturate", 1), XC_ATTR_S("round_mode", "up"),
    XC_ATTR_END};
static const xc_attr_def_t castlike_attrs[] = {
    XC_ATTR_I("saturate", 1), XC_ATTR_S("round_mode", "up"), XC_ATTR_END};
static const xc_attr_def_t bitshift_attrs[] = {
    XC_ATTR_REQ("direction", XC_ATTR_STRING), XC_ATTR_END};

#define BINARY(name, attrs, mask, infer, eval, summary) \
  {name, "", 2, 2, 1, 1, attrs, mask, infer, eval, summary}
#define UNARY(name, attrs, mask, infer, eval, summary) \
  {name, "", 1, 1, 1, 1, attrs, mask, infer, eval, summary}
#define VARIADIC(name, mask, infer, eval, summary) \
  {name, "", 1, -1, 1, 1, NULL, mask, infer, eval, summary}

const xc_op_def_t xc_ops_elementwise[] = {
    BINARY("Add", NULL, XC_DT_NUMERIC, infer_add, eval_add, "A + B with broadcasting"),
    BINARY("Sub", NULL, XC_DT_NUMERIC, infer_sub, eval_sub, "A - B with broadcasting"),
    BINARY("Mul", NULL, XC_DT_NUMERIC, infer_mul, eval_mul, "A * B with broadcasting"),
    BINARY("Div", NULL, XC_DT_NUMERIC, infer_div, eval_div,
           "A / B with broadcasting; integers truncate toward zero"),
    BINARY("Mod", mod_attrs, XC_DT_NUMERIC, infer_mod, eval_mod,
           "remainder: sign of divisor (fmod=0) or of dividend (fmod=1)"),
    BINARY("Pow", NULL, XC_DT_FLOAT | XC_DT(XC_I32) | XC_DT(XC_I64), infer_pow, eval_pow,
           "A ** B with broadcasting; result has A's dtype"),
    BINARY("Equal", NULL, XC_DT_ALL, infer_equal, eval_equal, "A == B (bool)"),
    BINARY("Greater", NULL, XC_DT_NUMERIC, infer_compare, eval_greater, "A > B (bool)"),
    BINARY("GreaterOrEqual", NULL, XC_DT_NUMERIC, infer_compare, eval_greater_equal,
           "A >= B (bool)"),
    BINARY("Less", NULL, XC_DT_NUMERIC, infer_compare, eval_less, "A < B (bool)"),
    BINARY("LessOrEqual", NULL, XC_DT_NUMERIC, infer_compare, eval_less_equal, "A <= B (bool)"),
    BINARY("And", NULL, XC_DT(XC_BOOL), infer_logical, eval_and, "logical and"),
    BINARY("Or", NULL, XC_DT(XC_BOOL), infer_logical, eval_or, "logical or"),
    BINARY("Xor", NULL, XC_DT(XC_BOOL), infer_logical, eval_xor, "logical xor"),
    BINARY("BitwiseAnd", NULL, XC_DT_INT, infer_bitwise, eval_bitwise_and, "bitwise and"),
    BINARY("BitwiseOr", NULL, XC_DT_INT, infer_bitwise, eval_bitwise_or, "bitwise or"),
    BINARY("BitwiseXor", NULL, XC_DT_INT, infer_bitwise, eval_bitwise_xor, "bitwise xor"),
    BINARY("BitShift", bitshift_attrs, XC_DT_UINT, infer_bitshift, eval_bitshift,
           "unsigned shift LEFT or RIGHT; shifts past the width give 0"),
    UNARY("Neg", NULL, XC_DT_FLOAT | XC_DT_SINT, infer_neg, eval_neg, "-X"),
    UNARY("Abs", NULL, XC_DT_NUMERIC, infer_unary_numeric, eval_abs, "|X|"),
    UNARY("Sqrt", NULL, XC_DT_FLOAT, infer_unary_float, eval_sqrt, "square root"),
    UNARY("Reciprocal", NULL, XC_DT_FLOAT, infer_unary_float, eval_reciprocal, "1 / X"),
    UNARY("Exp", NULL, XC_DT_FLOAT, infer_unary_float, eval_exp, "e ** X"),
    UNARY("Log", NULL, XC_DT_FLOAT, infer_unary_float, eval_log, "natural logarithm"),
    UNARY("Erf", NULL, XC_DT_FLOAT, infer_unary_float, eval_erf, "error function"),
    UNARY("Tanh", NULL, XC_DT_FLOAT, infer_unary_float, eval_tanh, "hyperbolic tangent"),
    UNARY("Sigmoid", NULL, XC_DT_FLOAT, infer_unary_float, eval_sigmoid, "1 / (1 + e ** -X)"),
    UNARY("Sin", NULL, XC_DT_FLOAT, infer_unary_float, eval_sin, "sine"),
    UNARY("Cos", NULL, XC_DT_FLOAT, infer_unary_float, eval_cos, "cosine"),
    UNARY("Tan", NULL, XC_DT_FLOAT, infer_unary_float, eval_tan, "tangent"),
    UNARY("Asin", NULL, XC_DT_FLOAT, infer_unary_float, eval_asin, "arcsine"),
    UNARY("Acos", NULL, XC_DT_FLOAT, infer_unary_float, eval_acos, "arccosine"),
    UNARY("Atan", NULL, XC_DT_FLOAT, infer_unary_float, eval_atan, "arctangent"),
    UNARY("Sinh", NULL, XC_DT_FLOAT, infer_unary_float, eval_sinh, "hyperbolic sine"),
    UNARY("Cosh", NULL, XC_DT_FLOAT, infer_unary_float, eval_cosh, "hyperbolic cosine"),
    UNARY("Asinh", NULL, XC_DT_FLOAT, infer_unary_float, eval_asinh, "inverse hyperbolic sine"),
    UNARY("Acosh", NULL, XC_DT_FLOAT, infer_unary_float, eval_acosh, "inverse hyperbolic cosine"),
    UNARY("Atanh", NULL, XC_DT_FLOAT, infer_unary_float, eval_atanh, "inverse hyperbolic tangent"),
    UNARY("Floor", NULL, XC_DT_FLOAT, infer_unary_float, eval_floor, "round down"),
    UNARY("Ceil", NULL, XC_DT_FLOAT, infer_unary_float, eval_ceil, "round up"),
    UNARY("Round", NULL, XC_DT_FLOAT, infer_unary_float, eval_round,
          "round to nearest, ties to even"),
    UNARY("Sign", NULL, XC_DT_NUMERIC, infer_unary_numeric, eval_sign, "-1, 0 or 1"),
    UNARY("IsNaN", NULL, XC_DT_FLOAT | DT_F8, infer_float_predicate, eval_isnan,
          "X is NaN (bool)"),
    UNARY("IsInf", isinf_attrs, XC_DT_FLOAT | DT_F8, infer_float_predicate, eval_isinf,
          "X is +Inf/-Inf, as selected (bool)"),
    UNARY("Not", NULL, XC_DT(XC_BOOL), infer_not, eval_not, "logical not"),
    UNARY("BitwiseNot", NULL, XC_DT_INT, infer_bitnot, eval_bitwise_not, "bitwise not"),
    VARIADIC("Min", XC_DT_NUMERIC, infer_min, eval_min, "elementwise minimum (NaN propagates)"),
    VARIADIC("Max", XC_DT_NUMERIC, infer_max, eval_max, "elementwise maximum (NaN propagates)"),
    VARIADIC("Sum", XC_DT_FLOAT, infer_sum_mean, eval_sum, "elementwise sum of inputs"),
    VARIADIC("Mean", XC_DT_FLOAT, infer_sum_mean, eval_mean, "elementwise mean of inputs"),
    {"Where", "", 3, 3, 1, 1, NULL, XC_DT(XC_BOOL), infer_where, eval_where,
     "select X where condition else Y, with broadcasting"},
    {"Clip", "", 1, 3, 1, 1, NULL, XC_DT_NUMERIC, infer_clip, eval_clip,
     "clamp to optional scalar min/max inputs"},
    {"Cast", "", 1, 1, 1, 1, cast_attrs, DT_ANY, infer_cast, eval_cast,
     "convert to dtype 'to' (fp8 saturate option)"},
    {"CastLike", "", 2, 2, 1, 1, castlike_attrs, DT_ANY, infer_castlike, eval_castlike,
     "convert to the dtype of the second input"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
