/* Generators of the op-level suite for elementwise ops: the input ranges
 * per op, unary and binary ops (broadcast kinds), variadic ops, Where, Clip,
 * Cast and BitShift. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsuite_internal.h"
#include "xcomp/op.h"

/* ---- input ranges per op ------------------------------------------------ */

/* Where each op's inputs are drawn so that its result is well-conditioned:
 * no log or sqrt of negatives, no division by ~0, no overflow of exp. */
range_t gb_range_for(const char* op, xc_dtype_t dt) {
  static const struct {
    const char* op;
    range_t r;
  } t[] = {
      {"Log", {0.1, 4, 0, false}},        {"Sqrt", {0.05, 4, 0, false}},
      {"Reciprocal", {0.5, 2, 0, true}},  {"Acos", {-0.9, 0.9, 0, false}},
      {"Asin", {-0.9, 0.9, 0, false}},    {"Atanh", {-0.9, 0.9, 0, false}},
      {"Acosh", {1.1, 4, 0, false}},      {"Exp", {-3, 3, 0, false}},
      {"Sinh", {-3, 3, 0, false}},        {"Cosh", {-3, 3, 0, false}},
      {"Tan", {-1.2, 1.2, 0, false}},     {"Softplus", {-4, 4, 0, false}},
      {"Floor", {-4, 4, 0, false}},       {"Ceil", {-4, 4, 0, false}},
      {"Round", {-4, 4, 0, false}},       {"Sign", {-2, 2, 8, false}},
      {"ReduceProd", {0.8, 1.25, 0, false}}, {"ReduceLogSum", {0.2, 2, 0, false}},
  };
  range_t def = {-3, 3, 0, false};
  /* Integers: sums and products of two stay in range (8-bit: |x| <= 10,
   * u8 <= 15; 16-bit: |x| <= 100, u16 <= 200). */
  if (is_int(dt)) def = (range_t){-20, 20, 0, false};
  if (is_int(dt) && xc_dtype_size(dt) == 1) def = (range_t){is_unsigned(dt) ? 0 : -10, is_unsigned(dt) ? 15 : 10, 0, false};
  if (is_int(dt) && xc_dtype_size(dt) == 2) def = (range_t){is_unsigned(dt) ? 0 : -100, is_unsigned(dt) ? 200 : 100, 0, false};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(t[i].op, op)) {
      range_t r = t[i].r;
      if (is_int(dt)) {
        if (!strcmp(op, "ReduceProd")) return (range_t){1, 1, 0, true}; /* +-1: no overflow */
        if (r.lo < -20) r.lo = -20;
        if (r.hi < 1) r.hi = 3;
      }
      return r;
    }
  return def;
}

static bool is_compare(const char* op) {
  return !strcmp(op, "Equal") || !strcmp(op, "Greater") || !strcmp(op, "Less") ||
         !strcmp(op, "GreaterOrEqual") || !strcmp(op, "LessOrEqual");
}

/* ---- elementwise ---------------------------------------------------------- */

static void unary_attrs(gb_t* b, xc_node_t* n, const char* op) {
  if (!strcmp(op, "LeakyRelu")) {
    double a = round(gb_unif(b, 0.01, 0.3) * 100) / 100;
    gb_set_f(b, n, "alpha", a);
    gb_name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "Elu") || !strcmp(op, "Celu")) {
    double a = round(gb_unif(b, 0.5, 2) * 10) / 10;
    gb_set_f(b, n, "alpha", a);
    gb_name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "HardSigmoid")) {
    double a = round(gb_unif(b, 0.1, 0.5) * 100) / 100, be = round(gb_unif(b, 0.2, 0.8) * 10) / 10;
    gb_set_f(b, n, "alpha", a);
    gb_set_f(b, n, "beta", be);
    gb_name_add(b, ".alpha=%g.beta=%g", a, be);
  } else if (!strcmp(op, "ThresholdedRelu")) {
    double a = round(gb_unif(b, 0, 1.5) * 4) / 4 + 0.25;
    gb_set_f(b, n, "alpha", a);
    gb_name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "Shrink")) {
    /* Thresholds on a 1/4 grid: exact in every float dtype, so the step
     * falls at the same input in the interpreter and the target. */
    double l = round(gb_unif(b, 0.2, 1.5) * 4) / 4 + 0.25, bi = round(gb_unif(b, 0, 1) * 4) / 4;
    gb_set_f(b, n, "lambd", l);
    gb_set_f(b, n, "bias", bi);
    gb_name_add(b, ".lambd=%g.bias=%g", l, bi);
  } else if (!strcmp(op, "Gelu")) {
    bool tanh_form = gb_coin(b);
    gb_set_s(b, n, "approximate", tanh_form ? "tanh" : "none");
    gb_name_add(b, ".approximate=%s", tanh_form ? "tanh" : "none");
  } else if (!strcmp(op, "IsInf")) {
    int64_t neg = gb_coin(b), pos = gb_coin(b) || !neg;
    gb_set_i(b, n, "detect_negative", neg);
    gb_set_i(b, n, "detect_positive", pos);
    gb_name_add(b, ".neg=%lld.pos=%lld", (long long)neg, (long long)pos);
  } else if (!strcmp(op, "Mod")) {
    int64_t fm = xc_dtype_is_float(b->dt) ? 1 : gb_rnd(b, 2);
    gb_set_i(b, n, "fmod", fm);
    gb_name_add(b, ".fmod=%lld", (long long)fm);
  }
}

void os_gen_unary(gb_t* b, int k) {
  const char* op = b->op;
  int r = 1 + (k + gb_rnd(b, 4)) % 4;
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 14, d);
  gb_name_head(b, op);
  gb_name_shape(b, r, d);
  xc_value_t* x = gb_in_r(b, b->dt, r, d, gb_range_for(op, b->dt));
  /* IsNaN / IsInf see some NaN and infinities. */
  if (x && (!strcmp(op, "IsNaN") || !strcmp(op, "IsInf"))) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    for (int64_t i = 0; i < t->numel; i += 3) xc_tensor_set_f64(t, i, i % 9 == 0 ? NAN : (i % 2 ? INFINITY : -INFINITY));
  }
  xc_value_t* y;
  xc_node_t* n = gb_node_n(b, op, b->domain ? b->domain : "", 1, &x, 1, &y);
  unary_attrs(b, n, op);
  gb_out(b, y);
}

/* The second operand's shape for broadcast kind `kind` against out dims d:
 * 0 same, 1 scalar, 2 row (rank-mismatched: the last dim), 3 column
 * ([..., n, 1]), 4 both broadcast ([1, n] vs [m, 1]). */
int gb_bshape(int kind, int r, const int64_t* d, int64_t* a, int* ra, int64_t* o, int* ro) {
  memcpy(a, d, sizeof(int64_t) * (size_t)r);
  *ra = r;
  switch (kind) {
    case 0: memcpy(o, d, sizeof(int64_t) * (size_t)r); *ro = r; break;
    case 1: *ro = 0; break;
    case 2: o[0] = d[r - 1]; *ro = 1; break;
    case 3:
      memcpy(o, d, sizeof(int64_t) * (size_t)r);
      o[r - 1] = 1;
      *ro = r;
      break;
    default:
      if (r < 2) {
        o[0] = 1;
        *ro = 1;
        break;
      }
      memcpy(o, d, sizeof(int64_t) * (size_t)r);
      a[r - 2] = 1;
      o[r - 1] = 1;
      *ro = r;
      break;
  }
  return kind;
}

static const char* bnames[] = {"same", "scalar", "row", "column", "outer"};

void os_gen_binary(gb_t* b, int k) {
  const char* op = b->op;
  int r = 1 + gb_rnd(b, 4);
  int64_t d[4], da[4], db[4];
  gb_rand_shape(b, r, 1 << 14, d);
  int ra, rb;
  int kind = b->same_shape ? 0 : k % 5;
  bool prelu = !strcmp(op, "PRelu");
  if (prelu && kind == 4) kind = 2; /* the slope broadcasts to X one way */
  gb_bshape(kind, r, d, da, &ra, db, &rb);
  bool swap = !prelu && gb_coin(b);
  gb_name_head(b, op);
  if (swap) {
    gb_name_shape(b, rb, db);
    gb_name_add(b, "x");
    gb_name_shape(b, ra, da);
  } else {
    gb_name_shape(b, ra, da);
    gb_name_add(b, "x");
    gb_name_shape(b, rb, db);
  }
  gb_name_add(b, ".%s", bnames[kind]);
  range_t r0 = gb_range_for(op, b->dt), r1 = r0;
  if (!strcmp(op, "Div") || !strcmp(op, "Mod")) {
    r1 = xc_dtype_is_float(b->dt) ? (range_t){0.5, 2, 0, true} : (range_t){1, 7, 0, true};
    if (is_unsigned(b->dt)) r1.avoid_zero = false;
  } else if (!strcmp(op, "Pow")) {
    r0 = xc_dtype_is_float(b->dt) ? (range_t){0.5, 2, 0, false} : (range_t){0, 4, 0, false};
    r1 = xc_dtype_is_float(b->dt) ? (range_t){-2, 2, 0, false} : (range_t){0, 3, 0, false};
  } else if (!strcmp(op, "BitShift")) {
    r0 = (range_t){0, 100, 0, false};
    r1 = (range_t){0, 3, 0, false};
  } else if (!strcmp(op, "Sub") && is_unsigned(b->dt)) {
    r1 = (range_t){0, r0.hi / 2, 0, false}; /* a - b >= 0: no wrap-around */
    r0.lo = r0.hi / 2 + 1;
  } else if (is_compare(op) || !strcmp(op, "Max") || !strcmp(op, "Min")) {
    r0.grid = r1.grid = 2; /* ties */
    r0.lo = r1.lo = -2;
    r0.hi = r1.hi = 2;
  }
  /* The divisor / exponent stays the second input when the shapes swap. */
  xc_value_t* xs[2];
  if (swap) {
    xs[0] = gb_in_r(b, b->dt, rb, db, r0);
    xs[1] = gb_in_r(b, b->dt, ra, da, r1);
  } else {
    xs[0] = gb_in_r(b, b->dt, ra, da, r0);
    xs[1] = gb_in_r(b, b->dt, rb, db, r1);
  }
  xc_value_t* y;
  xc_node_t* n = gb_node_n(b, op, b->domain ? b->domain : "", 2, xs, 1, &y);
  unary_attrs(b, n, op);
  if (!strcmp(op, "BitShift")) {
    bool left = gb_coin(b);
    gb_set_s(b, n, "direction", left ? "LEFT" : "RIGHT");
    gb_name_add(b, ".%s", left ? "LEFT" : "RIGHT");
  }
  gb_out(b, y);
}

/* Sum / Mean / Max / Min over 1..3 broadcast inputs. */
void os_gen_variadic(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], da[4], db[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int nin = 1 + (k + 1) % 3, ra, rb;
  gb_bshape(k % 5, r, d, da, &ra, db, &rb);
  gb_name_head(b, b->op);
  xc_value_t* xs[3];
  range_t rg = gb_range_for(b->op, b->dt);
  rg.grid = 2;
  for (int i = 0; i < nin; i++) {
    const int64_t* s = i == 1 ? db : da;
    int rr = i == 1 ? rb : ra;
    gb_name_add(b, "%s", i ? "x" : "");
    gb_name_shape(b, rr, s);
    xs[i] = gb_in_r(b, b->dt, rr, s, rg);
  }
  xc_value_t* y;
  gb_node(b, b->op, nin, xs, &y);
  gb_out(b, y);
}

void os_gen_where(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], da[4], db[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  gb_bshape(k % 5, r, d, da, &ra, db, &rb);
  gb_name_head(b, "Where");
  gb_name_shape(b, ra, da);
  gb_name_add(b, "x");
  gb_name_shape(b, rb, db);
  xc_value_t* xs[3];
  xs[0] = gb_in(b, XC_BOOL, rb, db, 0, 1);
  xs[1] = gb_in(b, b->dt, ra, da, -3, 3);
  xs[2] = gb_in(b, b->dt, gb_coin(b) ? 0 : ra, da, -3, 3);
  xc_value_t* y;
  gb_node(b, "Where", 3, xs, &y);
  gb_out(b, y);
}

void os_gen_clip(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 4);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 14, d);
  gb_name_head(b, "Clip");
  gb_name_shape(b, r, d);
  xc_value_t* xs[3] = {gb_in(b, b->dt, r, d, -4, 4), NULL, NULL};
  int which = k % 4; /* 0 both, 1 min only, 2 max only, 3 neither */
  double lo = is_int(b->dt) ? -2 : -1.5, hi = is_int(b->dt) ? 3 : 1.25;
  if (is_unsigned(b->dt)) lo = 1;
  if (which == 0 || which == 1) xs[1] = gb_scalar(b, b->dt, lo);
  if (which == 0 || which == 2) xs[2] = gb_scalar(b, b->dt, hi);
  gb_name_add(b, ".%s", which == 0 ? "min_max" : which == 1 ? "min" : which == 2 ? "max" : "none");
  xc_value_t* y;
  gb_node(b, "Clip", which == 3 ? 1 : 3, xs, &y);
  gb_out(b, y);
}

void os_gen_cast(gb_t* b, int k) {
  static const xc_dtype_t to[] = {XC_F32, XC_F16, XC_BF16, XC_I32, XC_I64, XC_I8, XC_U8, XC_BOOL, XC_F64};
  int n = (int)(sizeof to / sizeof to[0]);
  xc_dtype_t t = to[(k + gb_rnd(b, n)) % n];
  if (!(b->dtypes & XC_DT(t))) t = XC_F32;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  gb_name_head(b, "Cast");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".to=%s", xc_dtype_name(t));
  /* Values every target dtype holds (small integers and halves). */
  range_t rg = {is_unsigned(t) || is_unsigned(b->dt) ? 0 : -60, 60, is_int(t) ? 1 : 2, false};
  xc_value_t* x = gb_in_r(b, b->dt, r, d, rg);
  xc_value_t* y;
  xc_node_t* nd = gb_node(b, "Cast", 1, &x, &y);
  gb_set_i(b, nd, "to", (int64_t)xc_dtype_to_onnx(t));
  gb_out(b, y);
}

/* ---- reductions and friends ----------------------------------------------- */
void os_gen_bitshift(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], da[4], db[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  gb_bshape(k % 5, r, d, da, &ra, db, &rb);
  bool left = gb_coin(b);
  gb_name_head(b, "BitShift");
  gb_name_shape(b, ra, da);
  gb_name_add(b, "x");
  gb_name_shape(b, rb, db);
  gb_name_add(b, ".%s", left ? "LEFT" : "RIGHT");
  xc_value_t* xs[2] = {gb_in(b, b->dt, ra, da, 0, 15), gb_in(b, b->dt, rb, db, 0, 3)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "BitShift", 2, xs, &y);
  gb_set_s(b, n, "direction", left ? "LEFT" : "RIGHT");
  gb_out(b, y);
}
