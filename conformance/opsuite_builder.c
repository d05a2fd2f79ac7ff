/* The graph builder of the op-level suite's generators: the seeded random
 * numbers, random shapes, case names, inputs and initializers with values
 * in a range, nodes and their attributes (opsuite_internal.h). */
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
int gb_rnd(gb_t* b, int n) { return n <= 1 ? 0 : (int)(next_u64(b) % (uint64_t)n); }
double gb_unif(gb_t* b, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next_u64(b) >> 11) / 9007199254740992.0);
}
bool gb_coin(gb_t* b) { return gb_rnd(b, 2) == 1; }

/* Sizes the suite draws: odd and prime sizes that break tile multiples,
 * and a few powers of two. */
const int64_t gb_sizes_small[9] = {1, 2, 3, 4, 5, 7, 8, 13, 16};
const int64_t gb_sizes_all[11] = {1, 3, 7, 13, 31, 127, 257, 2, 4, 16, 64};

/* A random shape of rank r whose element count stays <= cap. */
void gb_rand_shape(gb_t* b, int r, int64_t cap, int64_t* dims) {
  int64_t n = 1;
  for (int d = 0; d < r; d++) {
    int64_t v = PICK(b, gb_sizes_all);
    int64_t rest = cap / n;
    for (int tries = 0; v > rest && tries < 8; tries++) v = PICK(b, gb_sizes_all);
    if (v > rest) v = 1;
    dims[d] = v;
    n *= v;
  }
}

/* ---- naming --------------------------------------------------------------- */

void gb_name_add(gb_t* b, const char* fmt, ...) {
  if (b->len >= sizeof b->name - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->name + b->len, sizeof b->name - b->len, fmt, ap);
  va_end(ap);
  if (n > 0) b->len += (size_t)n;
  if (b->len > sizeof b->name - 1) b->len = sizeof b->name - 1;
}

void gb_name_shape(gb_t* b, int r, const int64_t* d) {
  gb_name_add(b, "[");
  for (int i = 0; i < r; i++) gb_name_add(b, "%s%lld", i ? "," : "", (long long)d[i]);
  gb_name_add(b, "]");
}

void gb_name_ints(gb_t* b, const char* key, int n, const int64_t* v) {
  gb_name_add(b, ".%s=", key);
  for (int i = 0; i < n; i++) gb_name_add(b, "%s%lld", i ? "_" : "", (long long)v[i]);
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

void gb_keep_err(gb_t* b, xc_status_t s) {
  if (s && !b->err)
    b->err = s;
  else
    xc_status_free(s);
}

/* Fills t with values in [lo, hi]: integers rounded (unsigned from 0), bool
 * a coin flip; `grid` > 0 snaps floats to multiples of 1/grid (ties for
 * comparisons); avoid_zero keeps |x| >= lo for a signed range (divisors). */

static void fill(gb_t* b, xc_tensor_t* t, range_t r) {
  for (int64_t i = 0; i < t->numel; i++) {
    double v;
    if (t->dtype == XC_BOOL) {
      v = gb_coin(b);
    } else {
      v = gb_unif(b, r.lo, r.hi);
      if (r.avoid_zero && gb_coin(b)) v = -v;
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

char* gb_fresh_name(gb_t* b, const char* base) {
  return xc_arena_printf(b->g->arena, "%s%d", base, b->num_values++);
}

/* A graph input holding fresh random values. */
xc_value_t* gb_in_r(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, range_t range) {
  if (b->err) return NULL;
  if (b->num_inputs >= GB_MAX_INPUTS) {
    gb_keep_err(b, xc_error(XC_INTERNAL, "opsuite: too many inputs"));
    return NULL;
  }
  xc_dim_t d[XC_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = xc_dim_const(dims[i]);
  xc_value_t* v = NULL;
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_graph_add_value(b->g, gb_fresh_name(b, "x"), dt, r, d, &v);
  if (!s) s = xc_graph_add_input(b->g, v);
  if (!s) s = xc_tensor_create(dt, r, dims, &t);
  if (s) {
    gb_keep_err(b, s);
    xc_tensor_destroy(t);
    return NULL;
  }
  fill(b, t, range);
  b->inputs[b->num_inputs++] = t;
  return v;
}

xc_value_t* gb_in(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi) {
  return gb_in_r(b, dt, r, dims, R(lo, hi));
}

/* An initializer with random values (weights). */
xc_value_t* gb_weight(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(dt, r, dims, &t);
  if (s) {
    gb_keep_err(b, s);
    return NULL;
  }
  fill(b, t, R(lo, hi));
  gb_keep_err(b, xc_graph_add_initializer(b->g, gb_fresh_name(b, "w"), t, &v));
  return v;
}

/* A 1-D int64 initializer (axes, shapes, pads, ...); rank 0 when scalar. */
xc_value_t* gb_ints_r(gb_t* b, int n, const int64_t* vals, bool scalar) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  int64_t d = n;
  xc_status_t s = xc_tensor_create(XC_I64, scalar ? 0 : 1, &d, &t);
  if (s) {
    gb_keep_err(b, s);
    return NULL;
  }
  for (int i = 0; i < n; i++) xc_tensor_set_i64(t, i, vals[i]);
  gb_keep_err(b, xc_graph_add_initializer(b->g, gb_fresh_name(b, "c"), t, &v));
  return v;
}
xc_value_t* gb_ints(gb_t* b, int n, const int64_t* vals) { return gb_ints_r(b, n, vals, false); }

/* A scalar initializer of dtype dt. */
xc_value_t* gb_scalar(gb_t* b, xc_dtype_t dt, double val) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(dt, 0, NULL, &t);
  if (s) {
    gb_keep_err(b, s);
    return NULL;
  }
  xc_tensor_set_f64(t, 0, val);
  gb_keep_err(b, xc_graph_add_initializer(b->g, gb_fresh_name(b, "s"), t, &v));
  return v;
}

/* Adds a node with `nout` outputs (types inferred later); returns it. */
xc_node_t* gb_node_n(gb_t* b, const char* op, const char* domain, int nin, xc_value_t* const* ins, int nout,
                     xc_value_t** outs) {
  if (b->err) return NULL;
  for (int i = 0; i < nout; i++) {
    outs[i] = NULL;
    gb_keep_err(b, xc_graph_add_value(b->g, gb_fresh_name(b, "y"), XC_DTYPE_UNDEFINED, -1, NULL, &outs[i]));
  }
  xc_node_t* n = NULL;
  if (!b->err) gb_keep_err(b, xc_graph_add_node(b->g, op, domain, gb_fresh_name(b, "n"), nin, ins, nout, outs, &n));
  return b->err ? NULL : n;
}

xc_node_t* gb_node(gb_t* b, const char* op, int nin, xc_value_t* const* ins, xc_value_t** out) {
  return gb_node_n(b, op, "", nin, ins, 1, out);
}

void gb_set_i(gb_t* b, xc_node_t* n, const char* k, int64_t v) {
  if (n && !b->err) gb_keep_err(b, xc_node_set_int(b->g, n, k, v));
}
void gb_set_f(gb_t* b, xc_node_t* n, const char* k, double v) {
  if (n && !b->err) gb_keep_err(b, xc_node_set_float(b->g, n, k, v));
}
void gb_set_s(gb_t* b, xc_node_t* n, const char* k, const char* v) {
  if (n && !b->err) gb_keep_err(b, xc_node_set_string(b->g, n, k, v));
}
void gb_set_is(gb_t* b, xc_node_t* n, const char* k, int c, const int64_t* v) {
  if (n && !b->err) gb_keep_err(b, xc_node_set_ints(b->g, n, k, c, v));
}

void gb_out(gb_t* b, xc_value_t* v) {
  if (v && !b->err) gb_keep_err(b, xc_graph_add_output(b->g, v));
}

xc_status_t gb_finish(gb_t* b) {
  if (!b->err && b->g->num_outputs == 0) gb_keep_err(b, xc_error(XC_INTERNAL, "opsuite: case without outputs"));
  if (!b->err) gb_keep_err(b, xc_graph_take_error(b->g));
  if (!b->err) gb_keep_err(b, xc_graph_infer(b->g));
  xc_status_t s = b->err;
  b->err = NULL;
  return s;
}

void gb_name_head(gb_t* b, const char* label) { gb_name_add(b, "%s.%s.", label, xc_dtype_name(b->dt)); }
