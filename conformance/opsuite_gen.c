/* Generators of the op-level suite: each builds one small graph (graph IR
 * API) with random shapes (odd and prime sizes among them), broadcasting,
 * legal random attributes and well-conditioned inputs, and names it after
 * the op, dtype, shapes and attributes. Case number k picks the variant
 * (broadcast kind, attribute set) so that few cases still cover each. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsuite_internal.h"
#include "xcomp/op.h"

/* ---- random numbers ---------------------------------------------------- */

static uint64_t next_u64(gb_t* b) {
  uint64_t z = (b->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int rnd(gb_t* b, int n) { return n <= 1 ? 0 : (int)(next_u64(b) % (uint64_t)n); }
static double unif(gb_t* b, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next_u64(b) >> 11) / 9007199254740992.0);
}
static bool coin(gb_t* b) { return rnd(b, 2) == 1; }

/* Sizes the suite draws: odd and prime sizes that break tile multiples,
 * and a few powers of two. */
static const int64_t sizes_small[] = {1, 2, 3, 4, 5, 7, 8, 13, 16};
static const int64_t sizes_all[] = {1, 3, 7, 13, 31, 127, 257, 2, 4, 16, 64};
#define PICK(b, arr) ((arr)[rnd((b), (int)(sizeof(arr) / sizeof((arr)[0])))])

/* A random shape of rank r whose element count stays <= cap. */
static void rand_shape(gb_t* b, int r, int64_t cap, int64_t* dims) {
  int64_t n = 1;
  for (int d = 0; d < r; d++) {
    int64_t v = PICK(b, sizes_all);
    int64_t rest = cap / n;
    for (int tries = 0; v > rest && tries < 8; tries++) v = PICK(b, sizes_all);
    if (v > rest) v = 1;
    dims[d] = v;
    n *= v;
  }
}

/* ---- naming --------------------------------------------------------------- */

static void name_add(gb_t* b, const char* fmt, ...) XC_PRINTF(2, 3);
static void name_add(gb_t* b, const char* fmt, ...) {
  if (b->len >= sizeof b->name - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->name + b->len, sizeof b->name - b->len, fmt, ap);
  va_end(ap);
  if (n > 0) b->len += (size_t)n;
  if (b->len > sizeof b->name - 1) b->len = sizeof b->name - 1;
}

static void name_shape(gb_t* b, int r, const int64_t* d) {
  name_add(b, "[");
  for (int i = 0; i < r; i++) name_add(b, "%s%lld", i ? "," : "", (long long)d[i]);
  name_add(b, "]");
}

static void name_ints(gb_t* b, const char* key, int n, const int64_t* v) {
  name_add(b, ".%s=", key);
  for (int i = 0; i < n; i++) name_add(b, "%s%lld", i ? "_" : "", (long long)v[i]);
}

/* ---- graph building ------------------------------------------------------- */

xc_status_t gb_begin(gb_t* b, uint64_t seed, xc_dtype_t dt, const char* op) {
  memset(b, 0, sizeof *b);
  b->rng = seed;
  b->dt = dt;
  b->op = op;
  return xc_graph_create("opsuite", &b->g);
}

void gb_free(gb_t* b) {
  for (int i = 0; i < b->num_inputs; i++) xc_tensor_destroy(b->inputs[i]);
  b->num_inputs = 0;
  xc_graph_destroy(b->g);
  b->g = NULL;
  xc_status_free(b->err);
  b->err = NULL;
}

static void keep_err(gb_t* b, xc_status_t s) {
  if (s && !b->err)
    b->err = s;
  else
    xc_status_free(s);
}

static bool is_int(xc_dtype_t t) { return (XC_DT(t) & XC_DT_INT) != 0; }
static bool is_unsigned(xc_dtype_t t) { return (XC_DT(t) & XC_DT_UINT) != 0; }

/* Fills t with values in [lo, hi]: integers rounded (unsigned from 0), bool
 * a coin flip; `grid` > 0 snaps floats to multiples of 1/grid (ties for
 * comparisons); avoid_zero keeps |x| >= lo for a signed range (divisors). */
typedef struct {
  double lo, hi;
  double grid;
  bool avoid_zero; /* values in [lo, hi] with a random sign */
} range_t;

static void fill(gb_t* b, xc_tensor_t* t, range_t r) {
  for (int64_t i = 0; i < t->numel; i++) {
    double v;
    if (t->dtype == XC_BOOL) {
      v = coin(b);
    } else {
      v = unif(b, r.lo, r.hi);
      if (r.avoid_zero && coin(b)) v = -v;
      if (r.grid > 0) v = round(v * r.grid) / r.grid;
      if (is_int(t->dtype)) {
        v = round(v);
        if (is_unsigned(t->dtype) && v < 0) v = -v;
        if (r.avoid_zero && v == 0) v = 1;
      }
    }
    xc_tensor_set_f64(t, i, v);
  }
}

static char* fresh_name(gb_t* b, const char* base) {
  return xc_arena_printf(b->g->arena, "%s%d", base, b->num_values++);
}

/* A graph input holding fresh random values. */
static xc_value_t* in_r(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, range_t range) {
  if (b->err) return NULL;
  if (b->num_inputs >= GB_MAX_INPUTS) {
    keep_err(b, xc_error(XC_INTERNAL, "opsuite: too many inputs"));
    return NULL;
  }
  xc_dim_t d[XC_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = xc_dim_const(dims[i]);
  xc_value_t* v = NULL;
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_graph_add_value(b->g, fresh_name(b, "x"), dt, r, d, &v);
  if (!s) s = xc_graph_add_input(b->g, v);
  if (!s) s = xc_tensor_create(dt, r, dims, &t);
  if (s) {
    keep_err(b, s);
    xc_tensor_destroy(t);
    return NULL;
  }
  fill(b, t, range);
  b->inputs[b->num_inputs++] = t;
  return v;
}

static range_t R(double lo, double hi) {
  range_t r = {lo, hi, 0, false};
  return r;
}

static xc_value_t* in(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi) {
  return in_r(b, dt, r, dims, R(lo, hi));
}

/* An initializer with random values (weights). */
static xc_value_t* weight(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(dt, r, dims, &t);
  if (s) {
    keep_err(b, s);
    return NULL;
  }
  fill(b, t, R(lo, hi));
  keep_err(b, xc_graph_add_initializer(b->g, fresh_name(b, "w"), t, &v));
  return v;
}

/* A 1-D int64 initializer (axes, shapes, pads, ...); rank 0 when scalar. */
static xc_value_t* ints_r(gb_t* b, int n, const int64_t* vals, bool scalar) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  int64_t d = n;
  xc_status_t s = xc_tensor_create(XC_I64, scalar ? 0 : 1, &d, &t);
  if (s) {
    keep_err(b, s);
    return NULL;
  }
  for (int i = 0; i < n; i++) xc_tensor_set_i64(t, i, vals[i]);
  keep_err(b, xc_graph_add_initializer(b->g, fresh_name(b, "c"), t, &v));
  return v;
}
static xc_value_t* ints(gb_t* b, int n, const int64_t* vals) { return ints_r(b, n, vals, false); }

/* A scalar initializer of dtype dt. */
static xc_value_t* scalar(gb_t* b, xc_dtype_t dt, double val) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(dt, 0, NULL, &t);
  if (s) {
    keep_err(b, s);
    return NULL;
  }
  xc_tensor_set_f64(t, 0, val);
  keep_err(b, xc_graph_add_initializer(b->g, fresh_name(b, "s"), t, &v));
  return v;
}

/* Adds a node with `nout` outputs (types inferred later); returns it. */
static xc_node_t* node_n(gb_t* b, const char* op, const char* domain, int nin, xc_value_t* const* ins, int nout,
                         xc_value_t** outs) {
  if (b->err) return NULL;
  for (int i = 0; i < nout; i++) {
    outs[i] = NULL;
    keep_err(b, xc_graph_add_value(b->g, fresh_name(b, "y"), XC_DTYPE_UNDEFINED, -1, NULL, &outs[i]));
  }
  xc_node_t* n = NULL;
  if (!b->err) keep_err(b, xc_graph_add_node(b->g, op, domain, fresh_name(b, "n"), nin, ins, nout, outs, &n));
  return b->err ? NULL : n;
}

static xc_node_t* node(gb_t* b, const char* op, int nin, xc_value_t* const* ins, xc_value_t** out) {
  return node_n(b, op, "", nin, ins, 1, out);
}

static void set_i(gb_t* b, xc_node_t* n, const char* k, int64_t v) {
  if (n && !b->err) keep_err(b, xc_node_set_int(b->g, n, k, v));
}
static void set_f(gb_t* b, xc_node_t* n, const char* k, double v) {
  if (n && !b->err) keep_err(b, xc_node_set_float(b->g, n, k, v));
}
static void set_s(gb_t* b, xc_node_t* n, const char* k, const char* v) {
  if (n && !b->err) keep_err(b, xc_node_set_string(b->g, n, k, v));
}
static void set_is(gb_t* b, xc_node_t* n, const char* k, int c, const int64_t* v) {
  if (n && !b->err) keep_err(b, xc_node_set_ints(b->g, n, k, c, v));
}

static void out(gb_t* b, xc_value_t* v) {
  if (v && !b->err) keep_err(b, xc_graph_add_output(b->g, v));
}

xc_status_t gb_finish(gb_t* b) {
  if (!b->err && b->g->num_outputs == 0) keep_err(b, xc_error(XC_INTERNAL, "opsuite: case without outputs"));
  if (!b->err) keep_err(b, xc_graph_take_error(b->g));
  if (!b->err) keep_err(b, xc_graph_infer(b->g));
  xc_status_t s = b->err;
  b->err = NULL;
  return s;
}

static void name_head(gb_t* b, const char* label) { name_add(b, "%s.%s.", label, xc_dtype_name(b->dt)); }

/* ---- input ranges per op ------------------------------------------------ */

/* Where each op's inputs are drawn so that its result is well-conditioned:
 * no log or sqrt of negatives, no division by ~0, no overflow of exp. */
static range_t range_for(const char* op, xc_dtype_t dt) {
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
    double a = round(unif(b, 0.01, 0.3) * 100) / 100;
    set_f(b, n, "alpha", a);
    name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "Elu") || !strcmp(op, "Celu")) {
    double a = round(unif(b, 0.5, 2) * 10) / 10;
    set_f(b, n, "alpha", a);
    name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "HardSigmoid")) {
    double a = round(unif(b, 0.1, 0.5) * 100) / 100, be = round(unif(b, 0.2, 0.8) * 10) / 10;
    set_f(b, n, "alpha", a);
    set_f(b, n, "beta", be);
    name_add(b, ".alpha=%g.beta=%g", a, be);
  } else if (!strcmp(op, "ThresholdedRelu")) {
    double a = round(unif(b, 0, 1.5) * 4) / 4 + 0.25;
    set_f(b, n, "alpha", a);
    name_add(b, ".alpha=%g", a);
  } else if (!strcmp(op, "Shrink")) {
    /* Thresholds on a 1/4 grid: exact in every float dtype, so the step
     * falls at the same input in the interpreter and the target. */
    double l = round(unif(b, 0.2, 1.5) * 4) / 4 + 0.25, bi = round(unif(b, 0, 1) * 4) / 4;
    set_f(b, n, "lambd", l);
    set_f(b, n, "bias", bi);
    name_add(b, ".lambd=%g.bias=%g", l, bi);
  } else if (!strcmp(op, "Gelu")) {
    bool tanh_form = coin(b);
    set_s(b, n, "approximate", tanh_form ? "tanh" : "none");
    name_add(b, ".approximate=%s", tanh_form ? "tanh" : "none");
  } else if (!strcmp(op, "IsInf")) {
    int64_t neg = coin(b), pos = coin(b) || !neg;
    set_i(b, n, "detect_negative", neg);
    set_i(b, n, "detect_positive", pos);
    name_add(b, ".neg=%lld.pos=%lld", (long long)neg, (long long)pos);
  } else if (!strcmp(op, "Mod")) {
    int64_t fm = xc_dtype_is_float(b->dt) ? 1 : rnd(b, 2);
    set_i(b, n, "fmod", fm);
    name_add(b, ".fmod=%lld", (long long)fm);
  }
}

void os_gen_unary(gb_t* b, int k) {
  const char* op = b->op;
  int r = 1 + (k + rnd(b, 4)) % 4;
  int64_t d[4];
  rand_shape(b, r, 1 << 14, d);
  name_head(b, op);
  name_shape(b, r, d);
  xc_value_t* x = in_r(b, b->dt, r, d, range_for(op, b->dt));
  /* IsNaN / IsInf see some NaN and infinities. */
  if (x && (!strcmp(op, "IsNaN") || !strcmp(op, "IsInf"))) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    for (int64_t i = 0; i < t->numel; i += 3) xc_tensor_set_f64(t, i, i % 9 == 0 ? NAN : (i % 2 ? INFINITY : -INFINITY));
  }
  xc_value_t* y;
  xc_node_t* n = node_n(b, op, b->domain ? b->domain : "", 1, &x, 1, &y);
  unary_attrs(b, n, op);
  out(b, y);
}

/* The second operand's shape for broadcast kind `kind` against out dims d:
 * 0 same, 1 scalar, 2 row (rank-mismatched: the last dim), 3 column
 * ([..., n, 1]), 4 both broadcast ([1, n] vs [m, 1]). */
static int bshape(int kind, int r, const int64_t* d, int64_t* a, int* ra, int64_t* o, int* ro) {
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
  int r = 1 + rnd(b, 4);
  int64_t d[4], da[4], db[4];
  rand_shape(b, r, 1 << 14, d);
  int ra, rb;
  int kind = b->same_shape ? 0 : k % 5;
  bool prelu = !strcmp(op, "PRelu");
  if (prelu && kind == 4) kind = 2; /* the slope broadcasts to X one way */
  bshape(kind, r, d, da, &ra, db, &rb);
  bool swap = !prelu && coin(b);
  name_head(b, op);
  if (swap) {
    name_shape(b, rb, db);
    name_add(b, "x");
    name_shape(b, ra, da);
  } else {
    name_shape(b, ra, da);
    name_add(b, "x");
    name_shape(b, rb, db);
  }
  name_add(b, ".%s", bnames[kind]);
  range_t r0 = range_for(op, b->dt), r1 = r0;
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
    xs[0] = in_r(b, b->dt, rb, db, r0);
    xs[1] = in_r(b, b->dt, ra, da, r1);
  } else {
    xs[0] = in_r(b, b->dt, ra, da, r0);
    xs[1] = in_r(b, b->dt, rb, db, r1);
  }
  xc_value_t* y;
  xc_node_t* n = node_n(b, op, b->domain ? b->domain : "", 2, xs, 1, &y);
  unary_attrs(b, n, op);
  if (!strcmp(op, "BitShift")) {
    bool left = coin(b);
    set_s(b, n, "direction", left ? "LEFT" : "RIGHT");
    name_add(b, ".%s", left ? "LEFT" : "RIGHT");
  }
  out(b, y);
}

/* Sum / Mean / Max / Min over 1..3 broadcast inputs. */
static void gen_variadic(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4], da[4], db[4];
  rand_shape(b, r, 1 << 13, d);
  int nin = 1 + (k + 1) % 3, ra, rb;
  bshape(k % 5, r, d, da, &ra, db, &rb);
  name_head(b, b->op);
  xc_value_t* xs[3];
  range_t rg = range_for(b->op, b->dt);
  rg.grid = 2;
  for (int i = 0; i < nin; i++) {
    const int64_t* s = i == 1 ? db : da;
    int rr = i == 1 ? rb : ra;
    name_add(b, "%s", i ? "x" : "");
    name_shape(b, rr, s);
    xs[i] = in_r(b, b->dt, rr, s, rg);
  }
  xc_value_t* y;
  node(b, b->op, nin, xs, &y);
  out(b, y);
}

static void gen_where(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4], da[4], db[4];
  rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  bshape(k % 5, r, d, da, &ra, db, &rb);
  name_head(b, "Where");
  name_shape(b, ra, da);
  name_add(b, "x");
  name_shape(b, rb, db);
  xc_value_t* xs[3];
  xs[0] = in(b, XC_BOOL, rb, db, 0, 1);
  xs[1] = in(b, b->dt, ra, da, -3, 3);
  xs[2] = in(b, b->dt, coin(b) ? 0 : ra, da, -3, 3);
  xc_value_t* y;
  node(b, "Where", 3, xs, &y);
  out(b, y);
}

static void gen_clip(gb_t* b, int k) {
  int r = 1 + rnd(b, 4);
  int64_t d[4];
  rand_shape(b, r, 1 << 14, d);
  name_head(b, "Clip");
  name_shape(b, r, d);
  xc_value_t* xs[3] = {in(b, b->dt, r, d, -4, 4), NULL, NULL};
  int which = k % 4; /* 0 both, 1 min only, 2 max only, 3 neither */
  double lo = is_int(b->dt) ? -2 : -1.5, hi = is_int(b->dt) ? 3 : 1.25;
  if (is_unsigned(b->dt)) lo = 1;
  if (which == 0 || which == 1) xs[1] = scalar(b, b->dt, lo);
  if (which == 0 || which == 2) xs[2] = scalar(b, b->dt, hi);
  name_add(b, ".%s", which == 0 ? "min_max" : which == 1 ? "min" : which == 2 ? "max" : "none");
  xc_value_t* y;
  node(b, "Clip", which == 3 ? 1 : 3, xs, &y);
  out(b, y);
}

static void gen_cast(gb_t* b, int k) {
  static const xc_dtype_t to[] = {XC_F32, XC_F16, XC_BF16, XC_I32, XC_I64, XC_I8, XC_U8, XC_BOOL, XC_F64};
  int n = (int)(sizeof to / sizeof to[0]);
  xc_dtype_t t = to[(k + rnd(b, n)) % n];
  if (!(b->dtypes & XC_DT(t))) t = XC_F32;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  name_head(b, "Cast");
  name_shape(b, r, d);
  name_add(b, ".to=%s", xc_dtype_name(t));
  /* Values every target dtype holds (small integers and halves). */
  range_t rg = {is_unsigned(t) || is_unsigned(b->dt) ? 0 : -60, 60, is_int(t) ? 1 : 2, false};
  xc_value_t* x = in_r(b, b->dt, r, d, rg);
  xc_value_t* y;
  xc_node_t* nd = node(b, "Cast", 1, &x, &y);
  set_i(b, nd, "to", (int64_t)xc_dtype_to_onnx(t));
  out(b, y);
}

/* ---- reductions and friends ----------------------------------------------- */

/* A random non-empty subset of axes of rank r (some negative). */
static int rand_axes(gb_t* b, int r, int64_t* axes) {
  int n = 0;
  for (int a = 0; a < r; a++)
    if (coin(b)) axes[n++] = coin(b) ? a - r : a;
  if (n == 0) axes[n++] = rnd(b, r);
  return n;
}

static void gen_reduce(gb_t* b, int k) {
  int r = 1 + rnd(b, 4);
  int64_t d[4], axes[4];
  /* Narrow integers: few elements of magnitude <= 1, so no sum overflows. */
  size_t isz = is_int(b->dt) ? xc_dtype_size(b->dt) : 8;
  rand_shape(b, r, isz == 1 ? 100 : isz == 2 ? 1 << 12 : 1 << 15, d);
  name_head(b, b->op);
  name_shape(b, r, d);
  bool all = k % 4 == 3;
  int na = all ? 0 : rand_axes(b, r, axes);
  int64_t keep = coin(b);
  range_t rg = range_for(b->op, b->dt);
  if (is_int(b->dt) && strcmp(b->op, "ReduceProd") != 0) rg = (range_t){-5, 5, 0, false};
  if (is_int(b->dt) && isz <= 2 && strcmp(b->op, "ReduceProd") != 0) rg = (range_t){-1, 1, 0, false};
  if (is_unsigned(b->dt)) rg.lo = 0;
  xc_value_t* xs[2] = {in_r(b, b->dt, r, d, rg), NULL};
  if (na) xs[1] = ints(b, na, axes);
  if (na) name_ints(b, "axes", na, axes);
  else name_add(b, ".axes=all");
  name_add(b, ".keepdims=%lld", (long long)keep);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, na ? 2 : 1, xs, &y);
  set_i(b, n, "keepdims", keep);
  out(b, y);
}

static void gen_argreduce(gb_t* b, int k) {
  int r = 1 + rnd(b, 4);
  int64_t d[4];
  rand_shape(b, r, 1 << 15, d);
  int64_t axis = rnd(b, r) - (coin(b) ? r : 0);
  int64_t keep = coin(b), last = k % 2;
  name_head(b, b->op);
  name_shape(b, r, d);
  name_add(b, ".axis=%lld.keepdims=%lld.last=%lld", (long long)axis, (long long)keep, (long long)last);
  range_t rg = is_int(b->dt) ? (range_t){-20, 20, 0, false} : (range_t){-3, 3, 0, false};
  if (is_unsigned(b->dt)) rg.lo = 0;
  xc_value_t* x = in_r(b, b->dt, r, d, rg);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, 1, &x, &y);
  set_i(b, n, "axis", axis);
  set_i(b, n, "keepdims", keep);
  set_i(b, n, "select_last_index", last);
  out(b, y);
}

static void gen_softmax(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 4);
  int64_t d[4];
  rand_shape(b, r, 1 << 15, d);
  int64_t axis = coin(b) ? -1 : rnd(b, r);
  name_head(b, b->op);
  name_shape(b, r, d);
  name_add(b, ".axis=%lld", (long long)axis);
  xc_value_t* x = in(b, b->dt, r, d, -4, 4);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, 1, &x, &y);
  set_i(b, n, "axis", axis);
  out(b, y);
}

static void gen_cumsum(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  int64_t axis = rnd(b, r) - (coin(b) ? r : 0);
  int64_t excl = k % 2, rev = (k / 2) % 2;
  name_head(b, "CumSum");
  name_shape(b, r, d);
  name_add(b, ".axis=%lld.exclusive=%lld.reverse=%lld", (long long)axis, (long long)excl, (long long)rev);
  double lim = !is_int(b->dt) ? 1 : xc_dtype_size(b->dt) == 1 ? 0 : 5; /* narrow: zeros and ones below */
  xc_value_t* xs[2] = {in(b, b->dt, r, d, is_int(b->dt) ? -lim : -1, lim), ints_r(b, 1, &axis, true)};
  if (xs[0] && is_int(b->dt) && xc_dtype_size(b->dt) == 1) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1]; /* sparse ones: running sums stay small */
    for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, rnd(b, 16) == 0);
  }
  xc_value_t* y;
  xc_node_t* n = node(b, "CumSum", 2, xs, &y);
  set_i(b, n, "exclusive", excl);
  set_i(b, n, "reverse", rev);
  out(b, y);
}

static void gen_topk(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  int axis = rnd(b, r);
  int64_t kk = 1 + rnd(b, (int)(d[axis] < 8 ? d[axis] : 8));
  int64_t largest = k % 2 == 0;
  name_head(b, "TopK");
  name_shape(b, r, d);
  name_add(b, ".k=%lld.axis=%d.largest=%lld", (long long)kk, axis, (long long)largest);
  /* Distinct values: no ties whose order could differ. */
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), ints(b, 1, &kk)};
  if (xs[0]) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    int64_t n = t->numel;
    for (int64_t i = 0; i < n; i++) {
      int64_t j = (int64_t)((uint64_t)(i * 7919 + 13) % (uint64_t)n);
      xc_tensor_set_f64(t, i, is_int(b->dt) ? (double)(j % 100) : ((double)j - (double)n / 2) / 8);
    }
  }
  xc_value_t* ys[2];
  xc_node_t* n = node_n(b, "TopK", "", 2, xs, 2, ys);
  set_i(b, n, "axis", axis);
  set_i(b, n, "largest", largest);
  out(b, ys[0]);
  out(b, ys[1]);
}

/* ---- matrix products --------------------------------------------------- */

static void gen_matmul(gb_t* b, int k) {
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127, 257};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk), bt = 1 + rnd(b, 4);
  if (m * kk > 1 << 14) m = 13;
  if (kk * n > 1 << 14) n = 31;
  int64_t da[4], db[4];
  int ra, rb;
  switch (k % 6) {
    case 0: ra = rb = 2; da[0] = m; da[1] = kk; db[0] = kk; db[1] = n; break;
    case 1: ra = 3; rb = 2; da[0] = bt; da[1] = m; da[2] = kk; db[0] = kk; db[1] = n; break;
    case 2: ra = rb = 3; da[0] = db[0] = bt; da[1] = m; da[2] = kk; db[1] = kk; db[2] = n; break;
    case 3: ra = 4; rb = 3; da[0] = 2; da[1] = 1; da[2] = m; da[3] = kk; db[0] = bt; db[1] = kk; db[2] = n; break;
    case 4: ra = 1; rb = 2; da[0] = kk; db[0] = kk; db[1] = n; break;
    default: ra = 3; rb = 1; da[0] = bt; da[1] = m; da[2] = kk; db[0] = kk; break;
  }
  name_head(b, "MatMul");
  name_shape(b, ra, da);
  name_add(b, "x");
  name_shape(b, rb, db);
  bool wconst = coin(b);
  double lo = is_int(b->dt) ? -3 : -1, hi = is_int(b->dt) ? 3 : 1;
  xc_value_t* xs[2] = {in(b, b->dt, ra, da, lo, hi), wconst ? weight(b, b->dt, rb, db, lo, hi) : in(b, b->dt, rb, db, lo, hi)};
  if (wconst) name_add(b, ".const_b");
  xc_value_t* y;
  node(b, "MatMul", 2, xs, &y);
  out(b, y);
}

static void gen_gemm(gb_t* b, int k) {
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127, 257};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk);
  if (m * kk > 1 << 14) m = 13;
  if (kk * n > 1 << 14) n = 31;
  int64_t ta = coin(b), tb = coin(b);
  double alpha = coin(b) ? 1.0 : 0.5, beta = coin(b) ? 1.0 : 2.0;
  int ck = k % 5; /* C: none, scalar, [N], [M,1], [M,N] */
  int64_t da[2] = {ta ? kk : m, ta ? m : kk}, db[2] = {tb ? n : kk, tb ? kk : n}, dc[2] = {m, n};
  int rc = 2;
  if (ck == 1) rc = 0;
  if (ck == 2) {
    rc = 1;
    dc[0] = n;
  }
  if (ck == 3) dc[1] = 1;
  name_head(b, "Gemm");
  name_shape(b, 2, da);
  name_add(b, "x");
  name_shape(b, 2, db);
  if (ck) {
    name_add(b, "+");
    name_shape(b, rc, dc);
  }
  name_add(b, ".transA=%lld.transB=%lld.alpha=%g.beta=%g", (long long)ta, (long long)tb, alpha, beta);
  xc_value_t* xs[3] = {in(b, b->dt, 2, da, -1, 1), weight(b, b->dt, 2, db, -1, 1), NULL};
  if (ck) xs[2] = weight(b, b->dt, rc, dc, -1, 1);
  xc_value_t* y;
  xc_node_t* nd = node(b, "Gemm", ck ? 3 : 2, xs, &y);
  set_i(b, nd, "transA", ta);
  set_i(b, nd, "transB", tb);
  set_f(b, nd, "alpha", alpha);
  set_f(b, nd, "beta", beta);
  out(b, y);
}

/* ---- convolution and pooling ------------------------------------------- */

typedef struct {
  int sp;              /* spatial rank (1 or 2) */
  int64_t n, c, hw[2];
  int64_t kern[2], stride[2], dil[2], pads[4];
} convg_t;

static void rand_conv_geom(gb_t* b, convg_t* g, bool dilate) {
  static const int64_t hw[] = {1, 3, 5, 7, 8, 13, 16};
  static const int64_t ch[] = {1, 2, 3, 4, 8, 13};
  for (int i = 0; i < 2; i++) {
    g->hw[i] = 1;
    g->kern[i] = g->stride[i] = g->dil[i] = 1;
    g->pads[i] = g->pads[i + 2] = 0;
  }
  g->sp = coin(b) && coin(b) ? 1 : 2;
  g->n = 1 + rnd(b, 2);
  g->c = PICK(b, ch);
  for (int i = 0; i < g->sp; i++) {
    g->hw[i] = PICK(b, hw);
    static const int64_t ks[] = {1, 2, 3, 5};
    g->kern[i] = PICK(b, ks);
    g->dil[i] = dilate && coin(b) ? 2 : 1;
    int64_t span = (g->kern[i] - 1) * g->dil[i] + 1;
    g->stride[i] = 1 + rnd(b, 2);
    g->pads[i] = rnd(b, (int)g->kern[i]);
    g->pads[i + g->sp] = rnd(b, (int)g->kern[i]);
    if (g->hw[i] + g->pads[i] + g->pads[i + g->sp] < span) g->pads[i + g->sp] += span;
  }
}

static void name_conv(gb_t* b, const convg_t* g) {
  name_ints(b, "k", g->sp, g->kern);
  name_ints(b, "s", g->sp, g->stride);
  name_ints(b, "d", g->sp, g->dil);
  name_ints(b, "p", 2 * g->sp, g->pads);
}

static void set_conv(gb_t* b, xc_node_t* n, const convg_t* g, bool dil) {
  set_is(b, n, "kernel_shape", g->sp, g->kern);
  set_is(b, n, "strides", g->sp, g->stride);
  if (dil) set_is(b, n, "dilations", g->sp, g->dil);
  set_is(b, n, "pads", 2 * g->sp, g->pads);
}

static xc_value_t* conv_node(gb_t* b, int k, bool relu) {
  convg_t g;
  rand_conv_geom(b, &g, true);
  static const int64_t outs[] = {1, 2, 4, 8, 13, 16};
  int64_t group = 1, m = PICK(b, outs);
  if (k % 3 == 1) { /* depthwise */
    group = g.c;
    m = g.c * (1 + rnd(b, 2));
  } else if (k % 3 == 2 && g.c % 2 == 0) {
    group = 2;
    m = 2 * (1 + rnd(b, 4));
  }
  int64_t x[4] = {g.n, g.c, g.hw[0], g.hw[1]}, w[4] = {m, g.c / group, g.kern[0], g.kern[1]};
  bool bias = coin(b);
  name_head(b, relu ? "Conv+Relu" : "Conv");
  name_shape(b, 2 + g.sp, x);
  name_add(b, "x");
  name_shape(b, 2 + g.sp, w);
  name_conv(b, &g);
  name_add(b, ".group=%lld%s", (long long)group, bias ? ".bias" : "");
  xc_value_t* xs[3] = {in(b, b->dt, 2 + g.sp, x, -1, 1), weight(b, b->dt, 2 + g.sp, w, -0.5, 0.5), NULL};
  if (bias) xs[2] = weight(b, b->dt, 1, &m, -0.5, 0.5);
  xc_value_t* y;
  xc_node_t* n = node(b, "Conv", bias ? 3 : 2, xs, &y);
  set_conv(b, n, &g, true);
  set_i(b, n, "group", group);
  return y;
}

static void gen_conv(gb_t* b, int k) { out(b, conv_node(b, k, false)); }

static void gen_conv_relu(gb_t* b, int k) {
  xc_value_t* c = conv_node(b, k, true);
  xc_value_t* y;
  node(b, "Relu", 1, &c, &y);
  out(b, y);
}

static void gen_convtranspose(gb_t* b, int k) {
  (void)k;
  convg_t g;
  rand_conv_geom(b, &g, false);
  static const int64_t outs[] = {1, 2, 3, 4, 8};
  int64_t m = PICK(b, outs);
  for (int i = 0; i < 2 * g.sp; i++)
    if (g.pads[i] >= g.kern[i % g.sp]) g.pads[i] = g.kern[i % g.sp] - 1;
  /* the output, stride*(in-1) + (k-1)*dilation + 1 - pads, keeps one element */
  for (int i = 0; i < g.sp; i++) {
    int64_t full = g.stride[i] * (g.hw[i] - 1) + (g.kern[i] - 1) * g.dil[i] + 1;
    while (g.pads[i] + g.pads[g.sp + i] >= full) {
      if (g.pads[g.sp + i] >= g.pads[i]) g.pads[g.sp + i]--;
      else g.pads[i]--;
    }
  }
  int64_t x[4] = {g.n, g.c, g.hw[0], g.hw[1]}, w[4] = {g.c, m, g.kern[0], g.kern[1]};
  name_head(b, "ConvTranspose");
  name_shape(b, 2 + g.sp, x);
  name_add(b, "x");
  name_shape(b, 2 + g.sp, w);
  name_conv(b, &g);
  xc_value_t* xs[2] = {in(b, b->dt, 2 + g.sp, x, -1, 1), weight(b, b->dt, 2 + g.sp, w, -0.5, 0.5)};
  xc_value_t* y;
  xc_node_t* n = node(b, "ConvTranspose", 2, xs, &y);
  set_conv(b, n, &g, false);
  out(b, y);
}

static void gen_pool(gb_t* b, int k) {
  convg_t g;
  rand_conv_geom(b, &g, false);
  for (int i = 0; i < g.sp; i++) {
    if (g.kern[i] < 2) g.kern[i] = 2;
    for (int j = 0; j < 2; j++)
      if (g.pads[i + j * g.sp] >= g.kern[i]) g.pads[i + j * g.sp] = g.kern[i] - 1;
    if (g.hw[i] + g.pads[i] + g.pads[i + g.sp] < g.kern[i]) g.hw[i] = g.kern[i];
  }
  int64_t x[4] = {g.n, g.c, g.hw[0], g.hw[1]};
  bool avg = !strcmp(b->op, "AveragePool");
  int64_t cip = avg ? k % 2 : 0, ceil_mode = (k / 2) % 2;
  name_head(b, b->op);
  name_shape(b, 2 + g.sp, x);
  name_conv(b, &g);
  name_add(b, ".ceil=%lld", (long long)ceil_mode);
  if (avg) name_add(b, ".count_include_pad=%lld", (long long)cip);
  xc_value_t* xv = in(b, b->dt, 2 + g.sp, x, -2, 2);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, 1, &xv, &y);
  set_conv(b, n, &g, false);
  set_i(b, n, "ceil_mode", ceil_mode);
  if (avg) set_i(b, n, "count_include_pad", cip);
  out(b, y);
}

static void gen_global_pool(gb_t* b, int k) {
  (void)k;
  int64_t x[4] = {1 + rnd(b, 2), PICK(b, sizes_small), PICK(b, sizes_small), PICK(b, sizes_all)};
  if (x[3] > 64) x[3] = 31;
  name_head(b, b->op);
  name_shape(b, 4, x);
  xc_value_t* xv = in(b, b->dt, 4, x, -2, 2);
  xc_value_t* y;
  node(b, b->op, 1, &xv, &y);
  out(b, y);
}

/* ---- normalization -------------------------------------------------------- */

static void gen_layernorm(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 14, d);
  int64_t axis = coin(b) ? -1 : rnd(b, r);
  int a = (int)(axis < 0 ? axis + r : axis);
  bool rms = !strcmp(b->op, "RMSNormalization");
  bool bias = !rms && coin(b);
  name_head(b, b->op);
  name_shape(b, r, d);
  name_add(b, ".axis=%lld%s", (long long)axis, bias ? ".bias" : "");
  xc_value_t* xs[3] = {in(b, b->dt, r, d, -3, 3), weight(b, b->dt, r - a, d + a, 0.5, 1.5), NULL};
  if (bias) xs[2] = weight(b, b->dt, r - a, d + a, -0.5, 0.5);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, bias ? 3 : 2, xs, &y);
  set_i(b, n, "axis", axis);
  set_f(b, n, "epsilon", 1e-5);
  out(b, y);
}

static void gen_chan_norm(gb_t* b, int k) {
  (void)k;
  static const int64_t ch[] = {1, 2, 3, 4, 6, 8, 12};
  int64_t x[4] = {1 + rnd(b, 2), PICK(b, ch), PICK(b, sizes_small), PICK(b, sizes_all)};
  if (x[3] > 64) x[3] = 13;
  int r = 3 + coin(b);
  if (r == 3) x[2] = x[2] * x[3];
  name_head(b, b->op);
  name_shape(b, r, x);
  xc_value_t* xs[5] = {in(b, b->dt, r, x, -2, 2), NULL, NULL, NULL, NULL};
  int nin = 3;
  int64_t c = x[1];
  int64_t groups = 1;
  if (!strcmp(b->op, "GroupNormalization")) {
    int64_t cand[4], nc = 0;
    for (int64_t gg = 1; gg <= c && nc < 4; gg++)
      if (c % gg == 0) cand[nc++] = gg;
    groups = cand[rnd(b, (int)nc)];
    name_add(b, ".groups=%lld", (long long)groups);
  }
  xs[1] = weight(b, b->dt, 1, &c, 0.5, 1.5);
  xs[2] = weight(b, b->dt, 1, &c, -0.5, 0.5);
  if (!strcmp(b->op, "BatchNormalization")) {
    xs[3] = weight(b, b->dt, 1, &c, -0.5, 0.5);
    xs[4] = weight(b, b->dt, 1, &c, 0.5, 2);
    nin = 5;
  }
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, nin, xs, &y);
  if (groups > 1 || !strcmp(b->op, "GroupNormalization")) set_i(b, n, "num_groups", groups);
  out(b, y);
}

static void gen_lpnorm(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 14, d);
  int64_t axis = rnd(b, r), p = 1 + k % 2;
  name_head(b, "LpNormalization");
  name_shape(b, r, d);
  name_add(b, ".axis=%lld.p=%lld", (long long)axis, (long long)p);
  xc_value_t* x = in_r(b, b->dt, r, d, (range_t){0.2, 2, 0, true});
  xc_value_t* y;
  xc_node_t* n = node(b, "LpNormalization", 1, &x, &y);
  set_i(b, n, "axis", axis);
  set_i(b, n, "p", p);
  out(b, y);
}

/* ---- data movement -------------------------------------------------------- */

static void gen_transpose(gb_t* b, int k) {
  (void)k;
  int r = 2 + rnd(b, 3);
  int64_t d[4], perm[4];
  rand_shape(b, r, 1 << 15, d);
  for (int i = 0; i < r; i++) perm[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int j = rnd(b, i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  name_head(b, "Transpose");
  name_shape(b, r, d);
  name_ints(b, "perm", r, perm);
  xc_value_t* x = in(b, b->dt, r, d, -3, 3);
  xc_value_t* y;
  xc_node_t* n = node(b, "Transpose", 1, &x, &y);
  set_is(b, n, "perm", r, perm);
  out(b, y);
}

static void gen_concat(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 12, d);
  int axis = rnd(b, r), nin = 2 + k % 2;
  name_head(b, "Concat");
  xc_value_t* xs[3];
  for (int i = 0; i < nin; i++) {
    d[axis] = PICK(b, sizes_small);
    name_add(b, "%s", i ? "x" : "");
    name_shape(b, r, d);
    xs[i] = in(b, b->dt, r, d, -3, 3);
  }
  name_add(b, ".axis=%d", axis);
  xc_value_t* y;
  xc_node_t* n = node(b, "Concat", nin, xs, &y);
  set_i(b, n, "axis", axis - (coin(b) ? r : 0));
  out(b, y);
}

static void gen_split(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  int axis = rnd(b, r);
  if (d[axis] < 2) d[axis] = 7;
  int64_t parts[2] = {1 + rnd(b, (int)d[axis] - 1), 0};
  parts[1] = d[axis] - parts[0];
  name_head(b, "Split");
  name_shape(b, r, d);
  name_add(b, ".axis=%d", axis);
  name_ints(b, "split", 2, parts);
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), ints(b, 2, parts)};
  xc_value_t* ys[2];
  xc_node_t* n = node_n(b, "Split", "", 2, xs, 2, ys);
  set_i(b, n, "axis", axis);
  out(b, ys[0]);
  out(b, ys[1]);
}

static void gen_slice(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4], st[4], en[4], ax[4], sp[4];
  rand_shape(b, r, 1 << 14, d);
  int n = 0;
  for (int a = 0; a < r; a++) {
    if (!coin(b) && !(a == r - 1 && n == 0)) continue;
    int64_t step = coin(b) ? 1 : (coin(b) ? 2 : -1);
    if (coin(b) && step > 0) step = 3;
    int64_t lo = rnd(b, (int)d[a]), hi = lo + 1 + rnd(b, (int)(d[a] - lo));
    if (step > 0) {
      st[n] = coin(b) ? lo - d[a] : lo; /* negative starts too */
      en[n] = coin(b) && hi == d[a] ? INT64_MAX : hi;
    } else {
      st[n] = hi - 1;
      en[n] = lo == 0 ? -d[a] - 1 : lo - 1;
    }
    ax[n] = coin(b) ? a - r : a;
    sp[n] = step;
    n++;
  }
  name_head(b, "Slice");
  name_shape(b, r, d);
  name_ints(b, "starts", n, st);
  name_ints(b, "ends", n, en);
  name_ints(b, "axes", n, ax);
  name_ints(b, "steps", n, sp);
  xc_value_t* xs[5] = {in(b, b->dt, r, d, -3, 3), ints(b, n, st), ints(b, n, en), ints(b, n, ax), ints(b, n, sp)};
  xc_value_t* y;
  node(b, "Slice", 5, xs, &y);
  out(b, y);
}

static void gen_gather(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  int axis = rnd(b, r);
  int ri = k % 3; /* indices rank 0, 1, 2 */
  int64_t di[2] = {1 + rnd(b, 7), 1 + rnd(b, 3)}, idx[21];
  int64_t ni = ri == 0 ? 1 : ri == 1 ? di[0] : di[0] * di[1];
  for (int64_t i = 0; i < ni; i++) idx[i] = rnd(b, (int)d[axis]) - (coin(b) ? d[axis] : 0);
  name_head(b, "Gather");
  name_shape(b, r, d);
  name_add(b, ".axis=%d.indices", axis);
  name_shape(b, ri, di);
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), NULL};
  if (!b->err) {
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(XC_I64, ri, di, &t);
    if (!s) {
      for (int64_t i = 0; i < ni; i++) xc_tensor_set_i64(t, i, idx[i]);
      s = xc_graph_add_initializer(b->g, fresh_name(b, "c"), t, &xs[1]);
    }
    keep_err(b, s);
  }
  xc_value_t* y;
  xc_node_t* n = node(b, "Gather", 2, xs, &y);
  set_i(b, n, "axis", axis);
  out(b, y);
}

static void gen_expand(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4], da[4], db[4];
  rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  bshape(1 + k % 4, r, d, da, &ra, db, &rb);
  name_head(b, "Expand");
  name_shape(b, rb, db);
  name_add(b, "to");
  name_shape(b, ra, da);
  xc_value_t* xs[2] = {in(b, b->dt, rb, db, -3, 3), ints(b, ra, da)};
  xc_value_t* y;
  node(b, "Expand", 2, xs, &y);
  out(b, y);
}

static void gen_pad(gb_t* b, int k) {
  static const char* modes[] = {"constant", "reflect", "edge"};
  int r = 1 + rnd(b, 3);
  int64_t d[4], pads[8];
  rand_shape(b, r, 1 << 13, d);
  const char* mode = modes[k % 3];
  for (int i = 0; i < 2 * r; i++) {
    int64_t lim = !strcmp(mode, "reflect") ? d[i % r] - 1 : 3;
    pads[i] = lim > 0 ? rnd(b, (int)(lim < 3 ? lim : 3) + 1) : 0;
  }
  name_head(b, "Pad");
  name_shape(b, r, d);
  name_ints(b, "pads", 2 * r, pads);
  name_add(b, ".mode=%s", mode);
  xc_value_t* xs[3] = {in(b, b->dt, r, d, -3, 3), ints(b, 2 * r, pads), NULL};
  if (!strcmp(mode, "constant")) xs[2] = scalar(b, b->dt, 1.5);
  xc_value_t* y;
  xc_node_t* n = node(b, "Pad", xs[2] ? 3 : 2, xs, &y);
  set_s(b, n, "mode", mode);
  out(b, y);
}

static void gen_reshape_chain(gb_t* b, int k) {
  (void)k;
  /* Reshape between two elementwise ops so it is not the whole graph. */
  int64_t d[3];
  rand_shape(b, 3, 1 << 13, d);
  int64_t shape[2] = {d[0] * d[1], -1};
  name_head(b, "Reshape");
  name_shape(b, 3, d);
  name_ints(b, "shape", 2, shape);
  xc_value_t* x = in(b, b->dt, 3, d, -3, 3);
  xc_value_t *a, *rs, *y;
  node(b, "Neg", 1, &x, &a);
  xc_value_t* xs[2] = {a, ints(b, 2, shape)};
  node(b, "Reshape", 2, xs, &rs);
  node(b, "Abs", 1, &rs, &y);
  out(b, y);
}

static void gen_tile(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4], rep[4];
  rand_shape(b, r, 1 << 10, d);
  for (int i = 0; i < r; i++) rep[i] = 1 + rnd(b, 3);
  name_head(b, "Tile");
  name_shape(b, r, d);
  name_ints(b, "repeats", r, rep);
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), ints(b, r, rep)};
  xc_value_t* y;
  node(b, "Tile", 2, xs, &y);
  out(b, y);
}

static void gen_trilu(gb_t* b, int k) {
  int64_t d[3] = {1 + rnd(b, 3), PICK(b, sizes_small), PICK(b, sizes_all)};
  if (d[2] > 64) d[2] = 13;
  int64_t kk = rnd(b, 5) - 2, upper = k % 2;
  name_head(b, "Trilu");
  name_shape(b, 3, d);
  name_add(b, ".k=%lld.upper=%lld", (long long)kk, (long long)upper);
  xc_value_t* xs[2] = {in(b, b->dt, 3, d, -3, 3), ints_r(b, 1, &kk, true)};
  xc_value_t* y;
  xc_node_t* n = node(b, "Trilu", 2, xs, &y);
  set_i(b, n, "upper", upper);
  out(b, y);
}

/* An int64 initializer of any shape with values from fn(b, i). */
static xc_value_t* index_tensor(gb_t* b, int r, const int64_t* dims, int64_t (*fn)(gb_t*, int64_t, void*),
                                void* ctx) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(XC_I64, r, dims, &t);
  if (!s) {
    for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, fn(b, i, ctx));
    s = xc_graph_add_initializer(b->g, fresh_name(b, "c"), t, &v);
  }
  keep_err(b, s);
  return v;
}

static int64_t idx_below(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  int64_t n = *(const int64_t*)ctx;
  return rnd(b, (int)n) - (coin(b) ? n : 0); /* negative indices too */
}

static void gen_space_depth(gb_t* b, int k) {
  bool d2s = !strcmp(b->op, "DepthToSpace");
  int64_t bs = 2 + rnd(b, 2);
  static const int64_t hw[] = {1, 2, 3, 5, 7};
  int64_t x[4] = {1 + rnd(b, 2), (1 + rnd(b, 3)) * (d2s ? bs * bs : 1), PICK(b, hw), PICK(b, hw)};
  if (!d2s) {
    x[2] *= bs;
    x[3] *= bs;
  }
  const char* mode = d2s && k % 2 ? "CRD" : "DCR";
  name_head(b, b->op);
  name_shape(b, 4, x);
  name_add(b, ".blocksize=%lld%s%s", (long long)bs, d2s ? ".mode=" : "", d2s ? mode : "");
  xc_value_t* xv = in(b, b->dt, 4, x, -3, 3);
  xc_value_t* y;
  xc_node_t* n = node(b, b->op, 1, &xv, &y);
  set_i(b, n, "blocksize", bs);
  if (d2s) set_s(b, n, "mode", mode);
  out(b, y);
}

static void gen_gather_elements(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4], di[4];
  rand_shape(b, r, 1 << 12, d);
  int axis = rnd(b, r);
  for (int i = 0; i < r; i++) di[i] = i == axis ? 1 + rnd(b, 7) : 1 + rnd(b, (int)d[i]);
  name_head(b, "GatherElements");
  name_shape(b, r, d);
  name_add(b, ".axis=%d.indices", axis);
  name_shape(b, r, di);
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), index_tensor(b, r, di, idx_below, &d[axis])};
  xc_value_t* y;
  xc_node_t* n = node(b, "GatherElements", 2, xs, &y);
  set_i(b, n, "axis", axis);
  out(b, y);
}

typedef struct {
  const int64_t* dims;
  int depth;
} nd_ctx_t;

static int64_t idx_nd(gb_t* b, int64_t i, void* ctx) {
  const nd_ctx_t* c = ctx;
  return rnd(b, (int)c->dims[i % c->depth]);
}

static void gen_gather_nd(gb_t* b, int k) {
  (void)k;
  int r = 2 + rnd(b, 2);
  int64_t d[4];
  rand_shape(b, r, 1 << 12, d);
  int depth = 1 + rnd(b, r);
  int64_t di[2] = {1 + rnd(b, 5), depth};
  nd_ctx_t c = {d, depth};
  name_head(b, "GatherND");
  name_shape(b, r, d);
  name_add(b, ".indices");
  name_shape(b, 2, di);
  xc_value_t* xs[2] = {in(b, b->dt, r, d, -3, 3), index_tensor(b, 2, di, idx_nd, &c)};
  xc_value_t* y;
  node(b, "GatherND", 2, xs, &y);
  out(b, y);
}

/* ScatterElements along an axis: per line, distinct positions (a
 * permutation prefix), so "none" has one writer per element. */
typedef struct {
  int64_t n;       /* axis length of data */
  int64_t m;       /* axis length of indices */
  int64_t inner;   /* product of dims after the axis (indices) */
  int64_t* perm;
} sc_ctx_t;

static int64_t idx_scatter(gb_t* b, int64_t i, void* ctx) {
  (void)b;
  const sc_ctx_t* c = ctx;
  int64_t j = (i / c->inner) % c->m;
  return c->perm[j];
}

static void gen_scatter_elements(gb_t* b, int k) {
  static const char* reds[] = {"none", "add", "mul", "max", "min"};
  int r = 1 + rnd(b, 3);
  int64_t d[4], di[4];
  rand_shape(b, r, 1 << 12, d);
  int axis = rnd(b, r);
  if (d[axis] < 2) d[axis] = 7;
  int64_t perm[257];
  for (int64_t i = 0; i < d[axis] && i < 257; i++) perm[i] = i;
  for (int64_t i = d[axis] - 1; i > 0; i--) {
    int64_t j = rnd(b, (int)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t inner = 1;
  for (int i = 0; i < r; i++) {
    di[i] = i == axis ? 1 + rnd(b, (int)d[axis]) : 1 + rnd(b, (int)d[i]);
    if (i > axis) inner *= di[i];
  }
  sc_ctx_t c = {d[axis], di[axis], inner, perm};
  const char* red = reds[k % 5];
  if (is_int(b->dt) && !strcmp(red, "mul")) red = "add";
  if (b->dt == XC_BOOL) red = "none"; /* bool takes no reduction */
  name_head(b, "ScatterElements");
  name_shape(b, r, d);
  name_add(b, ".axis=%d.updates", axis);
  name_shape(b, r, di);
  name_add(b, ".reduction=%s", red);
  xc_value_t* xs[3] = {in(b, b->dt, r, d, -3, 3), index_tensor(b, r, di, idx_scatter, &c),
                       in(b, b->dt, r, di, -3, 3)};
  xc_value_t* y;
  xc_node_t* n = node(b, "ScatterElements", 3, xs, &y);
  set_i(b, n, "axis", axis);
  set_s(b, n, "reduction", red);
  out(b, y);
}

static int64_t idx_scatter_nd(gb_t* b, int64_t i, void* ctx) {
  (void)b;
  const int64_t* v = ctx;
  return v[i];
}

static void gen_scatter_nd(gb_t* b, int k) {
  static const char* reds[] = {"none", "add", "max"};
  int r = 2 + rnd(b, 2);
  int64_t d[4];
  rand_shape(b, r, 1 << 12, d);
  /* Rows of the first axis, distinct: indices [m, 1], updates [m, d1...]. */
  int64_t m = 1 + rnd(b, (int)d[0]), rows[257], perm[257];
  for (int64_t i = 0; i < d[0] && i < 257; i++) perm[i] = i;
  for (int64_t i = d[0] - 1; i > 0; i--) {
    int64_t j = rnd(b, (int)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int64_t i = 0; i < m; i++) rows[i] = perm[i];
  int64_t di[2] = {m, 1}, du[4];
  du[0] = m;
  for (int i = 1; i < r; i++) du[i] = d[i];
  const char* red = reds[k % 3];
  if (b->dt == XC_BOOL) red = "none"; /* bool takes no reduction */
  name_head(b, "ScatterND");
  name_shape(b, r, d);
  name_add(b, ".indices");
  name_shape(b, 2, di);
  name_add(b, ".reduction=%s", red);
  xc_value_t* xs[3] = {in(b, b->dt, r, d, -3, 3), index_tensor(b, 2, di, idx_scatter_nd, rows),
                       in(b, b->dt, r, du, -3, 3)};
  xc_value_t* y;
  xc_node_t* n = node(b, "ScatterND", 3, xs, &y);
  set_s(b, n, "reduction", red);
  out(b, y);
}

/* Unsqueeze then Squeeze around an elementwise op (views in a chain). */
static void gen_unsqueeze_squeeze(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  int64_t ax = rnd(b, r + 1);
  name_head(b, "Unsqueeze+Neg+Squeeze");
  name_shape(b, r, d);
  name_add(b, ".axis=%lld", (long long)ax);
  xc_value_t* x = in(b, b->dt, r, d, -3, 3);
  xc_value_t *u, *ng, *y;
  xc_value_t* a1[2] = {x, ints(b, 1, &ax)};
  node(b, "Unsqueeze", 2, a1, &u);
  node(b, "Neg", 1, &u, &ng);
  xc_value_t* a2[2] = {ng, ints(b, 1, &ax)};
  node(b, "Squeeze", 2, a2, &y);
  out(b, y);
}

static int64_t idx_onehot(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  int64_t depth = *(const int64_t*)ctx;
  return rnd(b, (int)depth) - (coin(b) ? depth : 0);
}

static void gen_onehot(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 2);
  int64_t d[3];
  rand_shape(b, r, 1 << 10, d);
  int64_t depth = PICK(b, sizes_small) + 1;
  int64_t axis = rnd(b, r + 1) - (coin(b) ? r + 1 : 0);
  name_head(b, "OneHot");
  name_shape(b, r, d);
  name_add(b, ".depth=%lld.axis=%lld", (long long)depth, (long long)axis);
  xc_value_t* xs[3] = {index_tensor(b, r, d, idx_onehot, &depth), ints_r(b, 1, &depth, true), NULL};
  if (!b->err) {
    int64_t two = 2;
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(b->dt, 1, &two, &t);
    if (!s) {
      xc_tensor_set_f64(t, 0, 0);
      xc_tensor_set_f64(t, 1, 3);
      s = xc_graph_add_initializer(b->g, fresh_name(b, "s"), t, &xs[2]);
    }
    keep_err(b, s);
  }
  /* The indices are the graph's only data: keep them an input. */
  xc_value_t* y;
  xc_node_t* n = node(b, "OneHot", 3, xs, &y);
  set_i(b, n, "axis", axis);
  out(b, y);
}

static void gen_eyelike(gb_t* b, int k) {
  (void)k;
  int64_t d[2] = {PICK(b, sizes_all), PICK(b, sizes_all)};
  if (d[0] * d[1] > 1 << 14) d[0] = 13;
  int64_t kk = rnd(b, 7) - 3;
  name_head(b, "EyeLike");
  name_shape(b, 2, d);
  name_add(b, ".k=%lld", (long long)kk);
  xc_value_t* x = in(b, b->dt, 2, d, -3, 3);
  xc_value_t *e, *y;
  xc_node_t* n = node(b, "EyeLike", 1, &x, &e);
  set_i(b, n, "k", kk);
  /* Added to the input so the result is not a constant. */
  xc_value_t* a[2] = {e, x};
  node(b, "Add", 2, a, &y);
  out(b, y);
}

static void gen_quantize(gb_t* b, int k) {
  xc_dtype_t q = k % 2 ? XC_I8 : XC_U8;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  double scale = 0.03125 * (1 + rnd(b, 4)); /* powers-of-two multiples: exact */
  int zp = q == XC_U8 ? 100 + rnd(b, 50) : rnd(b, 20) - 10;
  name_head(b, "QuantizeLinear");
  name_shape(b, r, d);
  name_add(b, ".scale=%g.zero_point=%d.to=%s", scale, zp, xc_dtype_name(q));
  /* x / scale stays clear of .5 ties: integer + [-0.4, 0.4], scaled. */
  xc_value_t* x = in(b, b->dt, r, d, -3, 3);
  if (x) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    for (int64_t i = 0; i < t->numel; i++)
      xc_tensor_set_f64(t, i, (double)(rnd(b, 160) - 80 + round(unif(b, -0.4, 0.4) * 8) / 16) * scale);
  }
  xc_value_t* xs[3] = {x, scalar(b, b->dt, scale), scalar(b, q, zp)};
  xc_value_t* y;
  node(b, "QuantizeLinear", 3, xs, &y);
  out(b, y);
}

static void gen_dequantize(gb_t* b, int k) {
  (void)k;
  int r = 1 + rnd(b, 3);
  int64_t d[4];
  rand_shape(b, r, 1 << 13, d);
  double scale = 0.015625 * (1 + rnd(b, 8));
  int zp = b->dt == XC_U8 ? 100 + rnd(b, 50) : rnd(b, 20) - 10;
  name_head(b, "DequantizeLinear");
  name_shape(b, r, d);
  name_add(b, ".scale=%g.zero_point=%d", scale, zp);
  range_t rg = is_unsigned(b->dt) ? (range_t){0, 255, 0, false} : (range_t){-128, 127, 0, false};
  xc_value_t* xs[3] = {in_r(b, b->dt, r, d, rg), scalar(b, XC_F32, scale), scalar(b, b->dt, zp)};
  xc_value_t* y;
  node(b, "DequantizeLinear", 3, xs, &y);
  out(b, y);
}

static void gen_resize(gb_t* b, int k) {
  static const char* modes[] = {"nearest", "linear"};
  static const char* ctm[] = {"half_pixel", "asymmetric", "align_corners"};
  static const double ups[] = {2, 3, 0.5};
  int64_t x[4] = {1 + rnd(b, 2), PICK(b, sizes_small), PICK(b, sizes_small) + 1, PICK(b, sizes_small) + 1};
  const char* mode = modes[k % 2];
  const char* tm = ctm[rnd(b, 3)];
  if (!strcmp(mode, "nearest")) tm = "asymmetric"; /* integer source coordinates */
  double sh = ups[rnd(b, 2)], sw = ups[rnd(b, 3)];
  if (!strcmp(mode, "nearest") && sw < 1) sw = 2;
  if (sw < 1 && x[3] % 2) x[3]++;
  name_head(b, "Resize");
  name_shape(b, 4, x);
  name_add(b, ".mode=%s.ctm=%s.scales=%g_%g", mode, tm, sh, sw);
  xc_value_t* xs[3] = {in(b, b->dt, 4, x, -3, 3), NULL, NULL};
  if (!b->err) {
    int64_t four = 4;
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(XC_F32, 1, &four, &t);
    if (!s) {
      xc_tensor_set_f64(t, 0, 1);
      xc_tensor_set_f64(t, 1, 1);
      xc_tensor_set_f64(t, 2, sh);
      xc_tensor_set_f64(t, 3, sw);
      s = xc_graph_add_initializer(b->g, fresh_name(b, "c"), t, &xs[2]);
    }
    keep_err(b, s);
  }
  xc_value_t* y;
  xc_node_t* n = node(b, "Resize", 3, xs, &y);
  set_s(b, n, "mode", mode);
  set_s(b, n, "coordinate_transformation_mode", tm);
  out(b, y);
}

static int64_t idx_class(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  return rnd(b, (int)*(const int64_t*)ctx);
}

static void gen_loss(gb_t* b, int k) {
  static const char* reds[] = {"mean", "sum", "none"};
  bool sce = !strcmp(b->op, "SoftmaxCrossEntropyLoss");
  int64_t n = PICK(b, sizes_small), c = PICK(b, sizes_small) + 1;
  const char* red = reds[k % 3];
  int64_t dx[2] = {n, c};
  name_head(b, b->op);
  name_shape(b, 2, dx);
  name_add(b, ".reduction=%s", red);
  xc_value_t* xs[2] = {in(b, b->dt, 2, dx, sce ? -3 : -4, sce ? 3 : -0.1), index_tensor(b, 1, &n, idx_class, &c)};
  xc_value_t* y;
  xc_node_t* nd = node(b, b->op, 2, xs, &y);
  set_s(b, nd, "reduction", red);
  out(b, y);
}

static void gen_lppool(gb_t* b, int k) {
  convg_t g;
  rand_conv_geom(b, &g, false);
  if (g.sp == 1) g.hw[1] = 5;
  g.sp = 2;
  for (int i = 0; i < 2; i++) {
    if (g.kern[i] < 2) g.kern[i] = 2;
    g.pads[i] = g.pads[i + 2] = 0;
    if (g.hw[i] < g.kern[i]) g.hw[i] = g.kern[i];
  }
  int64_t x[4] = {g.n, g.c, g.hw[0], g.hw[1]}, p = 1 + k % 2;
  name_head(b, "LpPool");
  name_shape(b, 4, x);
  name_conv(b, &g);
  name_add(b, ".p=%lld", (long long)p);
  xc_value_t* xv = in(b, b->dt, 4, x, -2, 2);
  xc_value_t* y;
  xc_node_t* n = node(b, "LpPool", 1, &xv, &y);
  set_is(b, n, "kernel_shape", 2, g.kern);
  set_is(b, n, "strides", 2, g.stride);
  set_i(b, n, "p", p);
  out(b, y);
}

static void gen_bitshift(gb_t* b, int k) {
  int r = 1 + rnd(b, 3);
  int64_t d[4], da[4], db[4];
  rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  bshape(k % 5, r, d, da, &ra, db, &rb);
  bool left = coin(b);
  name_head(b, "BitShift");
  name_shape(b, ra, da);
  name_add(b, "x");
  name_shape(b, rb, db);
  name_add(b, ".%s", left ? "LEFT" : "RIGHT");
  xc_value_t* xs[2] = {in(b, b->dt, ra, da, 0, 15), in(b, b->dt, rb, db, 0, 3)};
  xc_value_t* y;
  xc_node_t* n = node(b, "BitShift", 2, xs, &y);
  set_s(b, n, "direction", left ? "LEFT" : "RIGHT");
  out(b, y);
}

/* ---- fused chains (what the fusion planner merges) ------------------------ */

static void gen_matmul_bias_gelu(gb_t* b, int k) {
  (void)k;
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk), bt = 1 + rnd(b, 2);
  int64_t da[3] = {bt, m, kk}, dw[2] = {kk, n};
  name_head(b, "MatMul+Add+Gelu");
  name_shape(b, 3, da);
  name_add(b, "x");
  name_shape(b, 2, dw);
  xc_value_t* xs[2] = {in(b, b->dt, 3, da, -1, 1), weight(b, b->dt, 2, dw, -0.5, 0.5)};
  xc_value_t *mm, *ad, *y;
  node(b, "MatMul", 2, xs, &mm);
  xc_value_t* bs[2] = {mm, weight(b, b->dt, 1, &n, -0.5, 0.5)};
  node(b, "Add", 2, bs, &ad);
  xc_node_t* g = node(b, "Gelu", 1, &ad, &y);
  (void)g;
  out(b, y);
}

static void gen_add_layernorm(gb_t* b, int k) {
  (void)k;
  int64_t d[3] = {1 + rnd(b, 2), PICK(b, sizes_small), PICK(b, sizes_all)};
  name_head(b, "Add+LayerNormalization");
  name_shape(b, 3, d);
  xc_value_t* xs[2] = {in(b, b->dt, 3, d, -2, 2), in(b, b->dt, 3, d, -2, 2)};
  xc_value_t *s, *y;
  node(b, "Add", 2, xs, &s);
  xc_value_t* ls[3] = {s, weight(b, b->dt, 1, &d[2], 0.5, 1.5), weight(b, b->dt, 1, &d[2], -0.5, 0.5)};
  xc_node_t* n = node(b, "LayerNormalization", 3, ls, &y);
  set_i(b, n, "axis", -1);
  out(b, y);
}

/* softmax(Q K^T * scale [+ mask]) V, the pattern the attention pass finds. */
static void gen_attention_chain(gb_t* b, int k) {
  static const int64_t sq[] = {1, 3, 7, 13, 16, 31, 64};
  static const int64_t hd[] = {8, 16, 32, 64};
  int64_t bh = 1 + rnd(b, 3), s = PICK(b, sq), t = PICK(b, sq), dd = PICK(b, hd);
  bool mask = k % 2 == 1;
  int64_t dq[3] = {bh, s, dd}, dk[3] = {bh, t, dd}, dm[2] = {s, t};
  name_head(b, "MatMul+Softmax+MatMul");
  name_shape(b, 3, dq);
  name_add(b, "x");
  name_shape(b, 3, dk);
  if (mask) name_add(b, ".mask");
  xc_value_t* q = in(b, b->dt, 3, dq, -1, 1);
  xc_value_t* kv = in(b, b->dt, 3, dk, -1, 1);
  xc_value_t* v = in(b, b->dt, 3, dk, -1, 1);
  xc_value_t* mv = mask ? in(b, b->dt, 2, dm, -2, 0) : NULL;
  xc_value_t *kt, *qk, *sc, *msk, *sm, *y;
  xc_node_t* tn = node(b, "Transpose", 1, &kv, &kt);
  int64_t perm[3] = {0, 2, 1};
  set_is(b, tn, "perm", 3, perm);
  xc_value_t* a1[2] = {q, kt};
  node(b, "MatMul", 2, a1, &qk);
  xc_value_t* a2[2] = {qk, scalar(b, b->dt, 1.0 / sqrt((double)dd))};
  node(b, "Mul", 2, a2, &sc);
  if (mask) {
    xc_value_t* a3[2] = {sc, mv};
    node(b, "Add", 2, a3, &msk);
    sc = msk;
  }
  xc_node_t* smn = node(b, "Softmax", 1, &sc, &sm);
  set_i(b, smn, "axis", -1);
  xc_value_t* a4[2] = {sm, v};
  node(b, "MatMul", 2, a4, &y);
  out(b, y);
}

static void gen_attention_op(gb_t* b, int k) {
  static const int64_t sq[] = {1, 3, 7, 13, 16, 31};
  static const int64_t hd[] = {8, 16, 32};
  int64_t bt = 1 + rnd(b, 2), h = 1 + rnd(b, 3), s = PICK(b, sq), t = PICK(b, sq), dd = PICK(b, hd);
  int64_t causal = k % 2;
  int64_t dq[4] = {bt, h, s, dd}, dk[4] = {bt, h, t, dd};
  name_head(b, "Attention");
  name_shape(b, 4, dq);
  name_add(b, "x");
  name_shape(b, 4, dk);
  name_add(b, ".causal=%lld", (long long)causal);
  xc_value_t* xs[3] = {in(b, b->dt, 4, dq, -1, 1), in(b, b->dt, 4, dk, -1, 1), in(b, b->dt, 4, dk, -1, 1)};
  xc_value_t* y;
  xc_node_t* n = node(b, "Attention", 3, xs, &y);
  set_i(b, n, "is_causal", causal);
  out(b, y);
}

/* An elementwise chain with broadcasting: tanh(x * a + c) * s - x. */
static void gen_ew_chain(gb_t* b, int k) {
  int r = 2 + rnd(b, 2);
  int64_t d[4], da[4], dr[4], dc[4];
  rand_shape(b, r, 1 << 14, d);
  int ra, rr, rc;
  bshape(2, r, d, da, &ra, dr, &rr);
  bshape(3 + k % 2, r, d, da, &ra, dc, &rc);
  name_head(b, "Mul+Add+Tanh+Mul+Sub");
  name_shape(b, ra, da);
  name_add(b, "x");
  name_shape(b, rr, dr);
  name_add(b, "x");
  name_shape(b, rc, dc);
  xc_value_t* x = in(b, b->dt, ra, da, -2, 2);
  xc_value_t* a = in(b, b->dt, rr, dr, -1, 1);
  xc_value_t* c = in(b, b->dt, rc, dc, -1, 1);
  xc_value_t *m1, *a1, *t1, *m2, *y;
  xc_value_t* p1[2] = {x, a};
  node(b, "Mul", 2, p1, &m1);
  xc_value_t* p2[2] = {m1, c};
  node(b, "Add", 2, p2, &a1);
  node(b, "Tanh", 1, &a1, &t1);
  xc_value_t* p3[2] = {t1, scalar(b, b->dt, 0.75)};
  node(b, "Mul", 2, p3, &m2);
  xc_value_t* p4[2] = {m2, x};
  node(b, "Sub", 2, p4, &y);
  out(b, y);
}

/* ---- the table -------------------------------------------------------------- */

#define F XC_DT_FLOAT
const os_gen_t os_generators[] = {
    {"Sum", "Sum", 0, gen_variadic},
    {"Mean", "Mean", 0, gen_variadic},
    {"Max", "Max", 0, gen_variadic},
    {"Min", "Min", 0, gen_variadic},
    {"Where", NULL, XC_DT_ALL & ~XC_DT(XC_BOOL), gen_where},
    {"Clip", "Clip", 0, gen_clip},
    {"Cast", "Cast", 0, gen_cast},
    {"ReduceSum", "ReduceSum", 0, gen_reduce},
    {"ReduceMean", "ReduceMean", 0, gen_reduce},
    {"ReduceMax", "ReduceMax", 0, gen_reduce},
    {"ReduceMin", "ReduceMin", 0, gen_reduce},
    {"ReduceProd", "ReduceProd", 0, gen_reduce},
    {"ReduceL1", "ReduceL1", 0, gen_reduce},
    {"ReduceL2", "ReduceL2", 0, gen_reduce},
    {"ReduceLogSum", "ReduceLogSum", F, gen_reduce},
    {"ReduceLogSumExp", "ReduceLogSumExp", F, gen_reduce},
    {"ReduceSumSquare", "ReduceSumSquare", 0, gen_reduce},
    {"ArgMax", "ArgMax", 0, gen_argreduce},
    {"ArgMin", "ArgMin", 0, gen_argreduce},
    {"Softmax", "Softmax", 0, gen_softmax},
    {"LogSoftmax", "LogSoftmax", 0, gen_softmax},
    {"Hardmax", "Hardmax", 0, gen_softmax},
    {"CumSum", "CumSum", 0, gen_cumsum},
    {"TopK", "TopK", 0, gen_topk},
    {"MatMul", "MatMul", 0, gen_matmul},
    {"Gemm", "Gemm", 0, gen_gemm},
    {"Conv", "Conv", 0, gen_conv},
    {"ConvTranspose", "ConvTranspose", 0, gen_convtranspose},
    {"MaxPool", "MaxPool", F, gen_pool},
    {"AveragePool", "AveragePool", 0, gen_pool},
    {"GlobalAveragePool", "GlobalAveragePool", 0, gen_global_pool},
    {"GlobalMaxPool", "GlobalMaxPool", 0, gen_global_pool},
    {"GlobalLpPool", "GlobalLpPool", 0, gen_global_pool},
    {"LayerNormalization", "LayerNormalization", 0, gen_layernorm},
    {"RMSNormalization", "RMSNormalization", 0, gen_layernorm},
    {"BatchNormalization", "BatchNormalization", 0, gen_chan_norm},
    {"InstanceNormalization", "InstanceNormalization", 0, gen_chan_norm},
    {"GroupNormalization", "GroupNormalization", 0, gen_chan_norm},
    {"LpNormalization", "LpNormalization", 0, gen_lpnorm},
    {"Transpose", "Transpose", 0, gen_transpose},
    {"Concat", "Concat", 0, gen_concat},
    {"Split", "Split", 0, gen_split},
    {"Slice", "Slice", 0, gen_slice},
    {"Gather", "Gather", 0, gen_gather},
    {"Expand", "Expand", 0, gen_expand},
    {"Pad", "Pad", 0, gen_pad},
    {"Reshape", "Reshape", XC_DT_FLOAT | XC_DT_SINT, gen_reshape_chain},
    {"Tile", "Tile", 0, gen_tile},
    {"Trilu", "Trilu", 0, gen_trilu},
    {"Attention", "Attention", 0, gen_attention_op},
    {"DepthToSpace", "DepthToSpace", 0, gen_space_depth},
    {"SpaceToDepth", "SpaceToDepth", 0, gen_space_depth},
    {"GatherElements", "GatherElements", 0, gen_gather_elements},
    {"GatherND", "GatherND", 0, gen_gather_nd},
    {"ScatterElements", "ScatterElements", 0, gen_scatter_elements},
    {"ScatterND", "ScatterND", 0, gen_scatter_nd},
    {"Unsqueeze+Neg+Squeeze", "Neg", 0, gen_unsqueeze_squeeze},
    {"OneHot", "OneHot", 0, gen_onehot},
    {"EyeLike", "EyeLike", XC_DT_FLOAT | XC_DT_SINT, gen_eyelike},
    {"QuantizeLinear", "QuantizeLinear", F, gen_quantize},
    {"DequantizeLinear", "DequantizeLinear", XC_DT(XC_I8) | XC_DT(XC_U8), gen_dequantize},
    {"Resize", "Resize", F, gen_resize},
    {"NegativeLogLikelihoodLoss", "NegativeLogLikelihoodLoss", 0, gen_loss},
    {"SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss", 0, gen_loss},
    {"LpPool", "LpPool", 0, gen_lppool},
    {"BitShift", "BitShift", 0, gen_bitshift},
    {"Conv+Relu", "Conv", 0, gen_conv_relu},
    {"MatMul+Add+Gelu", "Gelu", 0, gen_matmul_bias_gelu},
    {"Add+LayerNormalization", "LayerNormalization", 0, gen_add_layernorm},
    {"MatMul+Softmax+MatMul", "Softmax", 0, gen_attention_chain},
    {"Mul+Add+Tanh+Mul+Sub", "Tanh", 0, gen_ew_chain},
    {NULL, NULL, 0, NULL},
};
