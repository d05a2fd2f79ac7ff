/* Elementwise lowering: ONNX unary/binary/ternary/variadic ops as tiled
 * elementwise math, used for elementwise groups (a flat space over the
 * output, numpy broadcasting through per-input strides) and for the fused
 * epilogues of every other group kind. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

typedef struct ew_def {
  const char* name;
  int kind; /* 0 unary opcode, 1 binary opcode, 2 compare, 3 special */
  xc_tiled_opcode_t op;
  xc_tiled_cmp_t cmp;
} ew_def_t;

static const ew_def_t ew_defs[] = {
    {"Neg", 0, XC_TOP_NEG, 0},        {"Abs", 0, XC_TOP_ABS, 0},
    {"Exp", 0, XC_TOP_EXP, 0},        {"Log", 0, XC_TOP_LOG, 0},
    {"Sqrt", 0, XC_TOP_SQRT, 0},      {"Erf", 0, XC_TOP_ERF, 0},
    {"Tanh", 0, XC_TOP_TANH, 0},      {"Sigmoid", 0, XC_TOP_SIGMOID, 0},
    {"Floor", 0, XC_TOP_FLOOR, 0},    {"Ceil", 0, XC_TOP_CEIL, 0},
    {"Sin", 0, XC_TOP_SIN, 0},        {"Cos", 0, XC_TOP_COS, 0},
    {"Reciprocal", 0, XC_TOP_RECIP, 0}, {"Not", 0, XC_TOP_NOT, 0},
    {"Atan", 0, XC_TOP_ATAN, 0},      {"Asin", 3, 0, 0},
    {"Acos", 3, 0, 0},                {"BitShift", 3, 0, 0},
    {"Add", 1, XC_TOP_ADD, 0},        {"Sub", 1, XC_TOP_SUB, 0},
    {"Mul", 1, XC_TOP_MUL, 0},        {"Div", 1, XC_TOP_DIV, 0},
    {"And", 1, XC_TOP_AND, 0},        {"Or", 1, XC_TOP_OR, 0},
    {"Xor", 1, XC_TOP_XOR, 0},        {"BitwiseAnd", 1, XC_TOP_AND, 0},
    {"BitwiseOr", 1, XC_TOP_OR, 0},   {"BitwiseXor", 1, XC_TOP_XOR, 0},
    {"BitwiseNot", 0, XC_TOP_NOT, 0},
    {"Equal", 2, 0, XC_CMP_EQ},       {"Greater", 2, 0, XC_CMP_GT},
    {"Less", 2, 0, XC_CMP_LT},        {"GreaterOrEqual", 2, 0, XC_CMP_GE},
    {"LessOrEqual", 2, 0, XC_CMP_LE},
    {"Pow", 3, 0, 0},   {"Relu", 3, 0, 0},      {"LeakyRelu", 3, 0, 0}, {"Gelu", 3, 0, 0},
    {"Silu", 3, 0, 0},  {"HardSigmoid", 3, 0, 0}, {"HardSwish", 3, 0, 0}, {"Softplus", 3, 0, 0},
    {"Softsign", 3, 0, 0}, {"Elu", 3, 0, 0},    {"Selu", 3, 0, 0},    {"Celu", 3, 0, 0},
    {"ThresholdedRelu", 3, 0, 0}, {"Mish", 3, 0, 0}, {"Tan", 3, 0, 0}, {"Sign", 3, 0, 0},
    {"IsNaN", 3, 0, 0}, {"IsInf", 3, 0, 0},     {"Where", 3, 0, 0},   {"Min", 3, 0, 0},
    {"Max", 3, 0, 0},   {"Sum", 3, 0, 0},       {"Mean", 3, 0, 0},    {"Clip", 3, 0, 0},
    {"Cast", 3, 0, 0},  {"PRelu", 3, 0, 0},     {"Mod", 3, 0, 0},     {"Shrink", 3, 0, 0},
    {"CastLike", 3, 0, 0}, {"Sinh", 3, 0, 0},    {"Cosh", 3, 0, 0},    {"Asinh", 3, 0, 0},
    {"Acosh", 3, 0, 0}, {"Atanh", 3, 0, 0},     {"Round", 3, 0, 0},   {"Dropout", 3, 0, 0},
    {"SwiGLU", 3, 0, 0},
};

/* The composites of domain xcomp that the pattern passes make (pattern_silu.c);
 * every other entry is ONNX. */
static bool is_xcomp_composite(const char* op) { return !strcmp(op, "Silu") || !strcmp(op, "SwiGLU"); }

static const ew_def_t* find_def(const xc_node_t* n) {
  bool xdom = n->domain && n->domain[0];
  if (xdom && strcmp(n->domain, "xcomp") != 0) return NULL;
  for (size_t i = 0; i < sizeof ew_defs / sizeof *ew_defs; i++)
    if (!strcmp(ew_defs[i].name, n->op_type)) {
      if (xdom != is_xcomp_composite(n->op_type)) return NULL;
      return &ew_defs[i];
    }
  return NULL;
}

bool lw_is_elementwise(const xc_node_t* n) {
  if (!find_def(n) || n->num_outputs < 1 || !n->outputs[0]) return false;
  for (int i = 1; i < n->num_outputs; i++)
    if (n->outputs[i]) return false;
  return true;
}

static double attr_f(const xc_node_t* n, const char* name, double def) {
  return xc_node_has_attr(n, name) ? xc_node_attr_float(n, name) : def;
}

xc_status_t lw_ew_compute(lw_ctx_t* c, const xc_node_t* n, lw_val_t* const* ins, lw_val_t** out) {
  xc_tiled_kernel_t* k = c->k;
  const ew_def_t* d = find_def(n);
  if (!d) return lw_unsupported(c, n, "not an elementwise op");
  lw_val_t* x = ins[0];
  xc_dtype_t dt = n->inputs[0] ? n->inputs[0]->dtype : XC_F32;
  xc_dtype_t odt = n->outputs[0]->dtype;
  const char* op = n->op_type;
  bool is_float = xc_dtype_is_float(dt);
#define K(v) lw_fconst(c, dt, (v))
  if (d->kind == 0) {
    if ((d->op != XC_TOP_NEG && d->op != XC_TOP_ABS && d->op != XC_TOP_NOT) && !is_float)
      return lw_unsupported(c, n, "integer input");
    *out = xc_tiled_unary(k, d->op, x);
  } else if (d->kind == 1) {
    lw_val_t* b = lw_cast_to(c, ins[1], dt);
    if (d->op == XC_TOP_DIV && !is_float) /* masked-off lanes read 0 */
      b = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, b, K(0)), K(1), b);
    *out = xc_tiled_binary(k, d->op, x, b);
  } else if (d->kind == 2) {
    *out = xc_tiled_cmp(k, d->cmp, x, lw_cast_to(c, ins[1], dt));
  } else if (!strcmp(op, "Pow")) {
    if (!is_float) {
      /* In double, then a quarter away from zero before the truncating cast
       * back: integer results a double holds come out exact even where pow
       * is a few ulp off (CUDA's is within 2 ulp: 3^1 can be 2.9999...),
       * and |result| <= 1/2 (a negative power of |x| >= 2) truncates to 0. */
      lw_val_t* p = xc_tiled_binary(k, XC_TOP_POW, lw_cast_to(c, x, XC_F64), lw_cast_to(c, ins[1], XC_F64));
      lw_val_t* neg = xc_tiled_cmp(k, XC_CMP_LT, p, lw_fconst(c, XC_F64, 0.0));
      *out = lw_add(c, p, xc_tiled_select(k, neg, lw_fconst(c, XC_F64, -0.25), lw_fconst(c, XC_F64, 0.25)));
    } else
      *out = xc_tiled_binary(k, XC_TOP_POW, x, lw_cast_to(c, ins[1], dt));
  } else if (!is_float && (!strcmp(op, "Sinh") || !strcmp(op, "Cosh") || !strcmp(op, "Asinh") ||
                           !strcmp(op, "Acosh") || !strcmp(op, "Atanh") || !strcmp(op, "Round"))) {
    return lw_unsupported(c, n, "integer input");
  } else if (!strcmp(op, "Sinh") || !strcmp(op, "Cosh")) {
    lw_val_t* e = xc_tiled_unary(k, XC_TOP_EXP, x);
    lw_val_t* em = xc_tiled_unary(k, XC_TOP_EXP, xc_tiled_unary(k, XC_TOP_NEG, x));
    *out = lw_mul(c, K(0.5), op[3] == 'h' && op[2] == 'n' ? lw_sub(c, e, em) : lw_add(c, e, em));
  } else if (!strcmp(op, "Asinh") || !strcmp(op, "Acosh")) {
    lw_val_t* r = xc_tiled_unary(k, XC_TOP_SQRT, lw_add(c, lw_mul(c, x, x), K(op[1] == 's' ? 1 : -1)));
    *out = xc_tiled_unary(k, XC_TOP_LOG, lw_add(c, x, r));
  } else if (!strcmp(op, "Atanh")) {
    *out = lw_mul(c, K(0.5), xc_tiled_unary(k, XC_TOP_LOG, lw_div(c, lw_add(c, K(1), x), lw_sub(c, K(1), x))));
  } else if (!strcmp(op, "Round")) {
    /* half to even: floor(x + 0.5), minus one on an exact tie with an odd result */
    lw_val_t* r = xc_tiled_unary(k, XC_TOP_FLOOR, lw_add(c, x, K(0.5)));
    lw_val_t* tie = xc_tiled_cmp(k, XC_CMP_EQ, lw_sub(c, r, x), K(0.5));
    lw_val_t* odd = xc_tiled_cmp(k, XC_CMP_NE, xc_tiled_binary(k, XC_TOP_REM, r, K(2)), K(0));
    *out = xc_tiled_select(k, xc_tiled_binary(k, XC_TOP_AND, tie, odd), lw_sub(c, r, K(1)), r);
  } else if (!strcmp(op, "Dropout")) {
    if (n->num_inputs > 2 && n->inputs[2]) {
      const xc_tensor_t* t = n->inputs[2]->constant;
      if (!t || xc_tensor_get_i64(t, 0) != 0) return lw_unsupported(c, n, "training mode");
    }
    *out = x;
  } else if (!strcmp(op, "Relu")) {
    *out = xc_tiled_binary(k, XC_TOP_MAX, x, K(0));
  } else if (!strcmp(op, "LeakyRelu")) {
    lw_val_t* neg = lw_lt(c, x, K(0));
    *out = xc_tiled_select(k, neg, lw_mul(c, x, K(attr_f(n, "alpha", 0.01))), x);
  } else if (!strcmp(op, "PRelu")) {
    lw_val_t* neg = lw_lt(c, x, K(0));
    *out = xc_tiled_select(k, neg, lw_mul(c, x, lw_cast_to(c, ins[1], dt)), x);
  } else if (!strcmp(op, "Gelu")) {
    const char* ap = xc_node_attr_string(n, "approximate");
    if (ap && !strcmp(ap, "tanh")) {
      lw_val_t* x3 = lw_mul(c, lw_mul(c, x, x), x);
      lw_val_t* in = lw_mul(c, K(0.7978845608028654), lw_add(c, x, lw_mul(c, K(0.044715), x3)));
      *out = lw_mul(c, lw_mul(c, K(0.5), x), lw_add(c, K(1), xc_tiled_unary(k, XC_TOP_TANH, in)));
    } else {
      lw_val_t* e = xc_tiled_unary(k, XC_TOP_ERF, lw_mul(c, x, K(0.70710678118654752)));
      *out = lw_mul(c, lw_mul(c, x, K(0.5)), lw_add(c, e, K(1)));
    }
  } else if (!strcmp(op, "Silu")) {
    *out = lw_mul(c, x, xc_tiled_unary(k, XC_TOP_SIGMOID, x));
  } else if (!strcmp(op, "SwiGLU")) {
    if (!is_float) return lw_unsupported(c, n, "integer input");
    lw_val_t* gate = lw_mul(c, x, xc_tiled_unary(k, XC_TOP_SIGMOID, x));
    *out = lw_mul(c, gate, lw_cast_to(c, ins[1], dt));
  } else if (!strcmp(op, "HardSigmoid") || !strcmp(op, "HardSwish")) {
    double a = 1.0 / 6, b = 0.5;
    if (op[4] == 'S' && op[5] == 'i') a = attr_f(n, "alpha", 0.2), b = attr_f(n, "beta", 0.5);
    lw_val_t* h = lw_add(c, lw_mul(c, x, K(a)), K(b));
    h = xc_tiled_binary(k, XC_TOP_MAX, K(0), xc_tiled_binary(k, XC_TOP_MIN, K(1), h));
    *out = !strcmp(op, "HardSwish") ? lw_mul(c, x, h) : h;
  } else if (!strcmp(op, "Softplus") || !strcmp(op, "Mish")) {
    /* log(1 + e^x) = max(x, 0) + log(1 + e^-|x|) */
    lw_val_t* sp = lw_add(c, xc_tiled_binary(k, XC_TOP_MAX, x, K(0)),
                          xc_tiled_unary(k, XC_TOP_LOG,
                                         lw_add(c, K(1), xc_tiled_unary(k, XC_TOP_EXP,
                                                                       xc_tiled_unary(k, XC_TOP_NEG,
                                                                                      xc_tiled_unary(k, XC_TOP_ABS, x))))));
    *out = op[0] == 'M' ? lw_mul(c, x, xc_tiled_unary(k, XC_TOP_TANH, sp)) : sp;
  } else if (!strcmp(op, "Softsign")) {
    *out = lw_div(c, x, lw_add(c, K(1), xc_tiled_unary(k, XC_TOP_ABS, x)));
  } else if (!strcmp(op, "Elu") || !strcmp(op, "Celu") || !strcmp(op, "Selu")) {
    double alpha = attr_f(n, "alpha", op[0] == 'S' ? 1.67326319217681884765625 : 1.0);
    double gamma = op[0] == 'S' ? attr_f(n, "gamma", 1.05070102214813232421875) : 1.0;
    lw_val_t* xe = op[0] == 'C' ? lw_div(c, x, K(alpha)) : x;
    lw_val_t* em1 = lw_mul(c, K(alpha), lw_sub(c, xc_tiled_unary(k, XC_TOP_EXP, xe), K(1)));
    if (op[0] == 'C')
      *out = lw_add(c, xc_tiled_binary(k, XC_TOP_MAX, x, K(0)),
                    xc_tiled_binary(k, XC_TOP_MIN, K(0), em1));
    else
      *out = lw_mul(c, K(gamma), xc_tiled_select(k, lw_lt(c, x, K(0)), em1, x));
    if (op[0] == 'S')
      *out = lw_mul(c, K(gamma), xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_LE, x, K(0)), em1, x));
  } else if (!strcmp(op, "ThresholdedRelu")) {
    *out = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_GT, x, K(attr_f(n, "alpha", 1.0))), x, K(0));
  } else if (!strcmp(op, "Shrink")) {
    double lambd = attr_f(n, "lambd", 0.5), bias = attr_f(n, "bias", 0.0);
    if (!is_float) return lw_unsupported(c, n, "integer Shrink");
    lw_val_t* r = xc_tiled_select(k, lw_lt(c, x, K(-lambd)), lw_add(c, x, K(bias)), K(0));
    *out = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_GT, x, K(lambd)), lw_sub(c, x, K(bias)), r);
  } else if (!strcmp(op, "BitShift")) {
    if (is_float) return lw_unsupported(c, n, "float input");
    const char* dir = xc_node_has_attr(n, "direction") ? xc_node_attr_string(n, "direction") : "";
    bool left = dir && !strcmp(dir, "LEFT");
    if (!left && (!dir || strcmp(dir, "RIGHT") != 0)) return lw_unsupported(c, n, "direction '%s'", dir ? dir : "");
    *out = xc_tiled_binary(k, left ? XC_TOP_SHL : XC_TOP_SHR, x, lw_cast_to(c, ins[1], dt));
  } else if (!is_float && (!strcmp(op, "Asin") || !strcmp(op, "Acos"))) {
    return lw_unsupported(c, n, "integer input");
  } else if (!strcmp(op, "Asin")) {
    /* atan(x / sqrt(1 - x^2)); +-1 divide to +-inf, |x| > 1 gives NaN */
    lw_val_t* r = xc_tiled_unary(k, XC_TOP_SQRT, lw_mul(c, lw_sub(c, K(1), x), lw_add(c, K(1), x)));
    *out = xc_tiled_unary(k, XC_TOP_ATAN, lw_div(c, x, r));
  } else if (!strcmp(op, "Acos")) {
    /* 2 atan(sqrt((1 - x) / (1 + x))): accurate near both ends, pi at -1 */
    lw_val_t* q = xc_tiled_unary(k, XC_TOP_SQRT, lw_div(c, lw_sub(c, K(1), x), lw_add(c, K(1), x)));
    *out = lw_mul(c, K(2), xc_tiled_unary(k, XC_TOP_ATAN, q));
  } else if (!strcmp(op, "Tan")) {
    *out = lw_div(c, xc_tiled_unary(k, XC_TOP_SIN, x), xc_tiled_unary(k, XC_TOP_COS, x));
  } else if (!strcmp(op, "Sign")) {
    lw_val_t* pos = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_GT, x, K(0)), K(1), K(0));
    *out = xc_tiled_select(k, lw_lt(c, x, K(0)), K(-1), pos);
    if (!xc_dtype_is_signed(dt)) *out = pos;
  } else if (!strcmp(op, "IsNaN")) {
    *out = xc_tiled_cmp(k, XC_CMP_NE, x, x);
  } else if (!strcmp(op, "IsInf")) {
    int64_t pos = xc_node_attr_int(n, "detect_positive"), neg = xc_node_attr_int(n, "detect_negative");
    lw_val_t* p = xc_tiled_cmp(k, XC_CMP_EQ, x, K(INFINITY));
    lw_val_t* m = xc_tiled_cmp(k, XC_CMP_EQ, x, K(-INFINITY));
    lw_val_t* f = xc_tiled_cmp(k, XC_CMP_NE, x, x); /* false */
    f = xc_tiled_binary(k, XC_TOP_AND, f, xc_tiled_cmp(k, XC_CMP_EQ, x, x));
    *out = xc_tiled_binary(k, XC_TOP_OR, pos ? p : f, neg ? m : f);
  } else if (!strcmp(op, "Where")) {
    xc_dtype_t vt = n->inputs[1]->dtype;
    *out = xc_tiled_select(k, ins[0], ins[1], lw_cast_to(c, ins[2], vt));
  } else if (!strcmp(op, "Min") || !strcmp(op, "Max") || !strcmp(op, "Sum") || !strcmp(op, "Mean")) {
    xc_tiled_opcode_t bop = op[1] == 'i' ? XC_TOP_MIN : op[1] == 'a' ? XC_TOP_MAX : XC_TOP_ADD;
    lw_val_t* acc = x;
    for (int i = 1; i < n->num_inputs; i++) {
      lw_val_t* y = lw_cast_to(c, ins[i], dt);
      if (bop != XC_TOP_ADD && is_float) {
        /* NaN propagates like the reference (fmax would drop it) */
        lw_val_t* nan = xc_tiled_binary(k, XC_TOP_OR, xc_tiled_cmp(k, XC_CMP_NE, acc, acc),
                                        xc_tiled_cmp(k, XC_CMP_NE, y, y));
        acc = xc_tiled_select(k, nan, lw_add(c, acc, y), xc_tiled_binary(k, bop, acc, y));
      } else {
        acc = xc_tiled_binary(k, bop, acc, y);
      }
    }
    if (!strcmp(op, "Mean")) acc = lw_div(c, acc, K((double)n->num_inputs));
    *out = acc;
  } else if (!strcmp(op, "Clip")) {
    lw_val_t* y = x;
    if (n->num_inputs > 1 && ins[1]) y = xc_tiled_binary(k, XC_TOP_MAX, y, lw_cast_to(c, ins[1], dt));
    if (n->num_inputs > 2 && ins[2]) y = xc_tiled_binary(k, XC_TOP_MIN, y, lw_cast_to(c, ins[2], dt));
    *out = y;
  } else if (!strcmp(op, "Cast") || !strcmp(op, "CastLike")) {
    if ((int)odt > (int)XC_F8E5M2) return lw_unsupported(c, n, "cast to %s", xc_dtype_name(odt));
    bool sat = !xc_node_has_attr(n, "saturate") || xc_node_attr_int(n, "saturate") != 0;
    if ((odt == XC_F8E4M3FN || odt == XC_F8E5M2) && !is_float && dt != XC_BOOL) {
      x = lw_cast_to(c, x, XC_F64);
      dt = XC_F64;
      is_float = true;
    }
    if (odt == XC_F8E4M3FN && !sat) {
      /* past the rounding range of 448: NaN instead of saturating */
      lw_val_t* big = xc_tiled_cmp(k, XC_CMP_GT, xc_tiled_unary(k, XC_TOP_ABS, x), K(464.0));
      x = xc_tiled_select(k, big, K(NAN), x);
    } else if (odt == XC_F8E5M2 && sat) {
      x = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, x, K(INFINITY)), K(57344.0), x);
      x = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, x, K(-INFINITY)), K(-57344.0), x);
    } else if (odt == XC_F8E5M2) {
      /* from 61440 the tie rounds up and overflows to infinity */
      lw_val_t* big = xc_tiled_cmp(k, XC_CMP_GE, xc_tiled_unary(k, XC_TOP_ABS, x), K(61440.0));
      x = xc_tiled_select(k, big, lw_mul(c, x, K(INFINITY)), x);
    }
    if (odt == XC_BOOL && dt != XC_BOOL)
      *out = xc_tiled_cmp(k, XC_CMP_NE, x, K(0));
    else
      *out = lw_cast_to(c, x, odt);
  } else if (!strcmp(op, "Mod")) {
    lw_val_t* b = lw_cast_to(c, ins[1], dt);
    if (!is_float) b = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, b, K(0)), K(1), b);
    lw_val_t* r = xc_tiled_binary(k, XC_TOP_REM, x, b);
    if (xc_node_attr_int(n, "fmod") == 0) {
      if (is_float) return lw_unsupported(c, n, "float Mod needs fmod=1");
      /* sign of the divisor */
      lw_val_t* nz = xc_tiled_cmp(k, XC_CMP_NE, r, K(0));
      lw_val_t* diff = xc_tiled_cmp(k, XC_CMP_NE, lw_lt(c, r, K(0)), lw_lt(c, b, K(0)));
      r = xc_tiled_select(k, xc_tiled_binary(k, XC_TOP_AND, nz, diff), lw_add(c, r, b), r);
    }
    *out = r;
  } else {
    return lw_unsupported(c, n, "no elementwise lowering");
  }
#undef K
  if (*out && (*out)->type.dtype != odt) *out = lw_cast_to(c, *out, odt);
  xc_status_t s = xc_tiled_kernel_take_error(k);
  if (s) return xc_status_annotate(s, "lowering group %d node '%s' (%s)", c->grp->id, n->name, op);
  if (!*out) return lw_unsupported(c, n, "could not build the elementwise expression");
  return NULL;
}

static const int64_t flat_cands[] = {64, 128, 256, 512, 1024};

xc_status_t lw_emit_elementwise(lw_ctx_t* c, const xc_node_t* n) {
  const xc_value_t* y = n->outputs[0];
  int kb = lw_knob(c, "BLOCK", 5, flat_cands, 256);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, y->rank, y->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, y->rank, y->dims, start, kb, &sp, NULL);
  lw_val_t* ins[16] = {0};
  if (n->num_inputs > 16) return lw_unsupported(c, n, "too many inputs");
  for (int j = 0; j < n->num_inputs; j++)
    if (!(j == 1 && !strcmp(n->op_type, "CastLike"))) ins[j] = lw_load_at(c, &sp, n->inputs[j]);
  lw_val_t* out = NULL;
  XC_RETURN_IF_ERROR(lw_ew_compute(c, n, ins, &out));
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, out));
  lw_iter_end(c, start);
  return NULL;
}
