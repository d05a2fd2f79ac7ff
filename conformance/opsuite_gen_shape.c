/* Generators of the op-level suite for data movement: transposes, concats
 * and splits, slices, gathers and scatters, pads, reshapes, tiles, one-hot,
 * quantization and Resize. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsuite_internal.h"
#include "xcomp/op.h"

/* ---- data movement -------------------------------------------------------- */

void os_gen_transpose(gb_t* b, int k) {
  (void)k;
  int r = 2 + gb_rnd(b, 3);
  int64_t d[4], perm[4];
  gb_rand_shape(b, r, 1 << 15, d);
  for (int i = 0; i < r; i++) perm[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int j = gb_rnd(b, i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  gb_name_head(b, "Transpose");
  gb_name_shape(b, r, d);
  gb_name_ints(b, "perm", r, perm);
  xc_value_t* x = gb_in(b, b->dt, r, d, -3, 3);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Transpose", 1, &x, &y);
  gb_set_is(b, n, "perm", r, perm);
  gb_out(b, y);
}

void os_gen_concat(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 12, d);
  int axis = gb_rnd(b, r), nin = 2 + k % 2;
  gb_name_head(b, "Concat");
  xc_value_t* xs[3];
  for (int i = 0; i < nin; i++) {
    d[axis] = PICK(b, gb_sizes_small);
    gb_name_add(b, "%s", i ? "x" : "");
    gb_name_shape(b, r, d);
    xs[i] = gb_in(b, b->dt, r, d, -3, 3);
  }
  gb_name_add(b, ".axis=%d", axis);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Concat", nin, xs, &y);
  gb_set_i(b, n, "axis", axis - (gb_coin(b) ? r : 0));
  gb_out(b, y);
}

void os_gen_split(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int axis = gb_rnd(b, r);
  if (d[axis] < 2) d[axis] = 7;
  int64_t parts[2] = {1 + gb_rnd(b, (int)d[axis] - 1), 0};
  parts[1] = d[axis] - parts[0];
  gb_name_head(b, "Split");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%d", axis);
  gb_name_ints(b, "split", 2, parts);
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), gb_ints(b, 2, parts)};
  xc_value_t* ys[2];
  xc_node_t* n = gb_node_n(b, "Split", "", 2, xs, 2, ys);
  gb_set_i(b, n, "axis", axis);
  gb_out(b, ys[0]);
  gb_out(b, ys[1]);
}

void os_gen_slice(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], st[4], en[4], ax[4], sp[4];
  gb_rand_shape(b, r, 1 << 14, d);
  int n = 0;
  for (int a = 0; a < r; a++) {
    if (!gb_coin(b) && !(a == r - 1 && n == 0)) continue;
    int64_t step = gb_coin(b) ? 1 : (gb_coin(b) ? 2 : -1);
    if (gb_coin(b) && step > 0) step = 3;
    int64_t lo = gb_rnd(b, (int)d[a]), hi = lo + 1 + gb_rnd(b, (int)(d[a] - lo));
    if (step > 0) {
      st[n] = gb_coin(b) ? lo - d[a] : lo; /* negative starts too */
      en[n] = gb_coin(b) && hi == d[a] ? INT64_MAX : hi;
    } else {
      st[n] = hi - 1;
      en[n] = lo == 0 ? -d[a] - 1 : lo - 1;
    }
    ax[n] = gb_coin(b) ? a - r : a;
    sp[n] = step;
    n++;
  }
  gb_name_head(b, "Slice");
  gb_name_shape(b, r, d);
  gb_name_ints(b, "starts", n, st);
  gb_name_ints(b, "ends", n, en);
  gb_name_ints(b, "axes", n, ax);
  gb_name_ints(b, "steps", n, sp);
  xc_value_t* xs[5] = {gb_in(b, b->dt, r, d, -3, 3), gb_ints(b, n, st), gb_ints(b, n, en), gb_ints(b, n, ax), gb_ints(b, n, sp)};
  xc_value_t* y;
  gb_node(b, "Slice", 5, xs, &y);
  gb_out(b, y);
}

void os_gen_gather(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int axis = gb_rnd(b, r);
  int ri = k % 3; /* indices rank 0, 1, 2 */
  int64_t di[2] = {1 + gb_rnd(b, 7), 1 + gb_rnd(b, 3)}, idx[21];
  int64_t ni = ri == 0 ? 1 : ri == 1 ? di[0] : di[0] * di[1];
  for (int64_t i = 0; i < ni; i++) idx[i] = gb_rnd(b, (int)d[axis]) - (gb_coin(b) ? d[axis] : 0);
  gb_name_head(b, "Gather");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%d.indices", axis);
  gb_name_shape(b, ri, di);
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), NULL};
  if (!b->err) {
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(XC_I64, ri, di, &t);
    if (!s) {
      for (int64_t i = 0; i < ni; i++) xc_tensor_set_i64(t, i, idx[i]);
      s = xc_graph_add_initializer(b->g, gb_fresh_name(b, "c"), t, &xs[1]);
    }
    gb_keep_err(b, s);
  }
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Gather", 2, xs, &y);
  gb_set_i(b, n, "axis", axis);
  gb_out(b, y);
}

void os_gen_expand(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], da[4], db[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int ra, rb;
  gb_bshape(1 + k % 4, r, d, da, &ra, db, &rb);
  gb_name_head(b, "Expand");
  gb_name_shape(b, rb, db);
  gb_name_add(b, "to");
  gb_name_shape(b, ra, da);
  xc_value_t* xs[2] = {gb_in(b, b->dt, rb, db, -3, 3), gb_ints(b, ra, da)};
  xc_value_t* y;
  gb_node(b, "Expand", 2, xs, &y);
  gb_out(b, y);
}

void os_gen_pad(gb_t* b, int k) {
  static const char* modes[] = {"constant", "reflect", "edge"};
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], pads[8];
  gb_rand_shape(b, r, 1 << 13, d);
  const char* mode = modes[k % 3];
  for (int i = 0; i < 2 * r; i++) {
    int64_t lim = !strcmp(mode, "reflect") ? d[i % r] - 1 : 3;
    pads[i] = lim > 0 ? gb_rnd(b, (int)(lim < 3 ? lim : 3) + 1) : 0;
  }
  gb_name_head(b, "Pad");
  gb_name_shape(b, r, d);
  gb_name_ints(b, "pads", 2 * r, pads);
  gb_name_add(b, ".mode=%s", mode);
  xc_value_t* xs[3] = {gb_in(b, b->dt, r, d, -3, 3), gb_ints(b, 2 * r, pads), NULL};
  if (!strcmp(mode, "constant")) xs[2] = gb_scalar(b, b->dt, 1.5);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Pad", xs[2] ? 3 : 2, xs, &y);
  gb_set_s(b, n, "mode", mode);
  gb_out(b, y);
}

void os_gen_reshape_chain(gb_t* b, int k) {
  (void)k;
  /* Reshape between two elementwise ops so it is not the whole graph. */
  int64_t d[3];
  gb_rand_shape(b, 3, 1 << 13, d);
  int64_t shape[2] = {d[0] * d[1], -1};
  gb_name_head(b, "Reshape");
  gb_name_shape(b, 3, d);
  gb_name_ints(b, "shape", 2, shape);
  xc_value_t* x = gb_in(b, b->dt, 3, d, -3, 3);
  xc_value_t *a, *rs, *y;
  gb_node(b, "Neg", 1, &x, &a);
  xc_value_t* xs[2] = {a, gb_ints(b, 2, shape)};
  gb_node(b, "Reshape", 2, xs, &rs);
  gb_node(b, "Abs", 1, &rs, &y);
  gb_out(b, y);
}

void os_gen_tile(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], rep[4];
  gb_rand_shape(b, r, 1 << 10, d);
  for (int i = 0; i < r; i++) rep[i] = 1 + gb_rnd(b, 3);
  gb_name_head(b, "Tile");
  gb_name_shape(b, r, d);
  gb_name_ints(b, "repeats", r, rep);
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), gb_ints(b, r, rep)};
  xc_value_t* y;
  gb_node(b, "Tile", 2, xs, &y);
  gb_out(b, y);
}

void os_gen_trilu(gb_t* b, int k) {
  int64_t d[3] = {1 + gb_rnd(b, 3), PICK(b, gb_sizes_small), PICK(b, gb_sizes_all)};
  if (d[2] > 64) d[2] = 13;
  int64_t kk = gb_rnd(b, 5) - 2, upper = k % 2;
  gb_name_head(b, "Trilu");
  gb_name_shape(b, 3, d);
  gb_name_add(b, ".k=%lld.upper=%lld", (long long)kk, (long long)upper);
  xc_value_t* xs[2] = {gb_in(b, b->dt, 3, d, -3, 3), gb_ints_r(b, 1, &kk, true)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Trilu", 2, xs, &y);
  gb_set_i(b, n, "upper", upper);
  gb_out(b, y);
}

/* An int64 initializer of any shape with values from fn(b, i). */
xc_value_t* gb_index_tensor(gb_t* b, int r, const int64_t* dims, int64_t (*fn)(gb_t*, int64_t, void*),
                            void* ctx) {
  if (b->err) return NULL;
  xc_tensor_t* t = NULL;
  xc_value_t* v = NULL;
  xc_status_t s = xc_tensor_create(XC_I64, r, dims, &t);
  if (!s) {
    for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, fn(b, i, ctx));
    s = xc_graph_add_initializer(b->g, gb_fresh_name(b, "c"), t, &v);
  }
  gb_keep_err(b, s);
  return v;
}

static int64_t idx_below(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  int64_t n = *(const int64_t*)ctx;
  return gb_rnd(b, (int)n) - (gb_coin(b) ? n : 0); /* negative indices too */
}

void os_gen_space_depth(gb_t* b, int k) {
  bool d2s = !strcmp(b->op, "DepthToSpace");
  int64_t bs = 2 + gb_rnd(b, 2);
  static const int64_t hw[] = {1, 2, 3, 5, 7};
  int64_t x[4] = {1 + gb_rnd(b, 2), (1 + gb_rnd(b, 3)) * (d2s ? bs * bs : 1), PICK(b, hw), PICK(b, hw)};
  if (!d2s) {
    x[2] *= bs;
    x[3] *= bs;
  }
  const char* mode = d2s && k % 2 ? "CRD" : "DCR";
  gb_name_head(b, b->op);
  gb_name_shape(b, 4, x);
  gb_name_add(b, ".blocksize=%lld%s%s", (long long)bs, d2s ? ".mode=" : "", d2s ? mode : "");
  xc_value_t* xv = gb_in(b, b->dt, 4, x, -3, 3);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, 1, &xv, &y);
  gb_set_i(b, n, "blocksize", bs);
  if (d2s) gb_set_s(b, n, "mode", mode);
  gb_out(b, y);
}

void os_gen_gather_elements(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], di[4];
  gb_rand_shape(b, r, 1 << 12, d);
  int axis = gb_rnd(b, r);
  for (int i = 0; i < r; i++) di[i] = i == axis ? 1 + gb_rnd(b, 7) : 1 + gb_rnd(b, (int)d[i]);
  gb_name_head(b, "GatherElements");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%d.indices", axis);
  gb_name_shape(b, r, di);
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), gb_index_tensor(b, r, di, idx_below, &d[axis])};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "GatherElements", 2, xs, &y);
  gb_set_i(b, n, "axis", axis);
  gb_out(b, y);
}

typedef struct {
  const int64_t* dims;
  int depth;
} nd_ctx_t;

static int64_t idx_nd(gb_t* b, int64_t i, void* ctx) {
  const nd_ctx_t* c = ctx;
  return gb_rnd(b, (int)c->dims[i % c->depth]);
}

void os_gen_gather_nd(gb_t* b, int k) {
  (void)k;
  int r = 2 + gb_rnd(b, 2);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 12, d);
  int depth = 1 + gb_rnd(b, r);
  int64_t di[2] = {1 + gb_rnd(b, 5), depth};
  nd_ctx_t c = {d, depth};
  gb_name_head(b, "GatherND");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".indices");
  gb_name_shape(b, 2, di);
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), gb_index_tensor(b, 2, di, idx_nd, &c)};
  xc_value_t* y;
  gb_node(b, "GatherND", 2, xs, &y);
  gb_out(b, y);
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

void os_gen_scatter_elements(gb_t* b, int k) {
  static const char* reds[] = {"none", "add", "mul", "max", "min"};
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4], di[4];
  gb_rand_shape(b, r, 1 << 12, d);
  int axis = gb_rnd(b, r);
  if (d[axis] < 2) d[axis] = 7;
  int64_t perm[257];
  for (int64_t i = 0; i < d[axis] && i < 257; i++) perm[i] = i;
  for (int64_t i = d[axis] - 1; i > 0; i--) {
    int64_t j = gb_rnd(b, (int)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t inner = 1;
  for (int i = 0; i < r; i++) {
    di[i] = i == axis ? 1 + gb_rnd(b, (int)d[axis]) : 1 + gb_rnd(b, (int)d[i]);
    if (i > axis) inner *= di[i];
  }
  sc_ctx_t c = {d[axis], di[axis], inner, perm};
  const char* red = reds[k % 5];
  if (is_int(b->dt) && !strcmp(red, "mul")) red = "add";
  if (b->dt == XC_BOOL) red = "none"; /* bool takes no reduction */
  gb_name_head(b, "ScatterElements");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%d.updates", axis);
  gb_name_shape(b, r, di);
  gb_name_add(b, ".reduction=%s", red);
  xc_value_t* xs[3] = {gb_in(b, b->dt, r, d, -3, 3), gb_index_tensor(b, r, di, idx_scatter, &c),
                       gb_in(b, b->dt, r, di, -3, 3)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "ScatterElements", 3, xs, &y);
  gb_set_i(b, n, "axis", axis);
  gb_set_s(b, n, "reduction", red);
  gb_out(b, y);
}

static int64_t idx_scatter_nd(gb_t* b, int64_t i, void* ctx) {
  (void)b;
  const int64_t* v = ctx;
  return v[i];
}

void os_gen_scatter_nd(gb_t* b, int k) {
  static const char* reds[] = {"none", "add", "max"};
  int r = 2 + gb_rnd(b, 2);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 12, d);
  /* Rows of the first axis, distinct: indices [m, 1], updates [m, d1...]. */
  int64_t m = 1 + gb_rnd(b, (int)d[0]), rows[257], perm[257];
  for (int64_t i = 0; i < d[0] && i < 257; i++) perm[i] = i;
  for (int64_t i = d[0] - 1; i > 0; i--) {
    int64_t j = gb_rnd(b, (int)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int64_t i = 0; i < m; i++) rows[i] = perm[i];
  int64_t di[2] = {m, 1}, du[4];
  du[0] = m;
  for (int i = 1; i < r; i++) du[i] = d[i];
  const char* red = reds[k % 3];
  if (b->dt == XC_BOOL) red = "none"; /* bool takes no reduction */
  gb_name_head(b, "ScatterND");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".indices");
  gb_name_shape(b, 2, di);
  gb_name_add(b, ".reduction=%s", red);
  xc_value_t* xs[3] = {gb_in(b, b->dt, r, d, -3, 3), gb_index_tensor(b, 2, di, idx_scatter_nd, rows),
                       gb_in(b, b->dt, r, du, -3, 3)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "ScatterND", 3, xs, &y);
  gb_set_s(b, n, "reduction", red);
  gb_out(b, y);
}

/* Unsqueeze then Squeeze around an elementwise op (views in a chain). */
void os_gen_unsqueeze_squeeze(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int64_t ax = gb_rnd(b, r + 1);
  gb_name_head(b, "Unsqueeze+Neg+Squeeze");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld", (long long)ax);
  xc_value_t* x = gb_in(b, b->dt, r, d, -3, 3);
  xc_value_t *u, *ng, *y;
  xc_value_t* a1[2] = {x, gb_ints(b, 1, &ax)};
  gb_node(b, "Unsqueeze", 2, a1, &u);
  gb_node(b, "Neg", 1, &u, &ng);
  xc_value_t* a2[2] = {ng, gb_ints(b, 1, &ax)};
  gb_node(b, "Squeeze", 2, a2, &y);
  gb_out(b, y);
}

static int64_t idx_onehot(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  int64_t depth = *(const int64_t*)ctx;
  return gb_rnd(b, (int)depth) - (gb_coin(b) ? depth : 0);
}

void os_gen_onehot(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 2);
  int64_t d[3];
  gb_rand_shape(b, r, 1 << 10, d);
  int64_t depth = PICK(b, gb_sizes_small) + 1;
  int64_t axis = gb_rnd(b, r + 1) - (gb_coin(b) ? r + 1 : 0);
  gb_name_head(b, "OneHot");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".depth=%lld.axis=%lld", (long long)depth, (long long)axis);
  xc_value_t* xs[3] = {gb_index_tensor(b, r, d, idx_onehot, &depth), gb_ints_r(b, 1, &depth, true), NULL};
  if (!b->err) {
    int64_t two = 2;
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(b->dt, 1, &two, &t);
    if (!s) {
      xc_tensor_set_f64(t, 0, 0);
      xc_tensor_set_f64(t, 1, 3);
      s = xc_graph_add_initializer(b->g, gb_fresh_name(b, "s"), t, &xs[2]);
    }
    gb_keep_err(b, s);
  }
  /* The indices are the graph's only data: keep them an input. */
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "OneHot", 3, xs, &y);
  gb_set_i(b, n, "axis", axis);
  gb_out(b, y);
}

void os_gen_eyelike(gb_t* b, int k) {
  (void)k;
  int64_t d[2] = {PICK(b, gb_sizes_all), PICK(b, gb_sizes_all)};
  if (d[0] * d[1] > 1 << 14) d[0] = 13;
  int64_t kk = gb_rnd(b, 7) - 3;
  gb_name_head(b, "EyeLike");
  gb_name_shape(b, 2, d);
  gb_name_add(b, ".k=%lld", (long long)kk);
  xc_value_t* x = gb_in(b, b->dt, 2, d, -3, 3);
  xc_value_t *e, *y;
  xc_node_t* n = gb_node(b, "EyeLike", 1, &x, &e);
  gb_set_i(b, n, "k", kk);
  /* Added to the input so the result is not a constant. */
  xc_value_t* a[2] = {e, x};
  gb_node(b, "Add", 2, a, &y);
  gb_out(b, y);
}

void os_gen_quantize(gb_t* b, int k) {
  xc_dtype_t q = k % 2 ? XC_I8 : XC_U8;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  double scale = 0.03125 * (1 + gb_rnd(b, 4)); /* powers-of-two multiples: exact */
  int zp = q == XC_U8 ? 100 + gb_rnd(b, 50) : gb_rnd(b, 20) - 10;
  gb_name_head(b, "QuantizeLinear");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".scale=%g.zero_point=%d.to=%s", scale, zp, xc_dtype_name(q));
  /* x / scale stays clear of .5 ties: integer + [-0.4, 0.4], scaled. */
  xc_value_t* x = gb_in(b, b->dt, r, d, -3, 3);
  if (x) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    for (int64_t i = 0; i < t->numel; i++)
      xc_tensor_set_f64(t, i, (double)(gb_rnd(b, 160) - 80 + round(gb_unif(b, -0.4, 0.4) * 8) / 16) * scale);
  }
  xc_value_t* xs[3] = {x, gb_scalar(b, b->dt, scale), gb_scalar(b, q, zp)};
  xc_value_t* y;
  gb_node(b, "QuantizeLinear", 3, xs, &y);
  gb_out(b, y);
}

void os_gen_dequantize(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  double scale = 0.015625 * (1 + gb_rnd(b, 8));
  int zp = b->dt == XC_U8 ? 100 + gb_rnd(b, 50) : gb_rnd(b, 20) - 10;
  gb_name_head(b, "DequantizeLinear");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".scale=%g.zero_point=%d", scale, zp);
  range_t rg = is_unsigned(b->dt) ? (range_t){0, 255, 0, false} : (range_t){-128, 127, 0, false};
  xc_value_t* xs[3] = {gb_in_r(b, b->dt, r, d, rg), gb_scalar(b, XC_F32, scale), gb_scalar(b, b->dt, zp)};
  xc_value_t* y;
  gb_node(b, "DequantizeLinear", 3, xs, &y);
  gb_out(b, y);
}

void os_gen_resize(gb_t* b, int k) {
  static const char* modes[] = {"nearest", "linear"};
  static const char* ctm[] = {"half_pixel", "asymmetric", "align_corners"};
  static const double ups[] = {2, 3, 0.5};
  int64_t x[4] = {1 + gb_rnd(b, 2), PICK(b, gb_sizes_small), PICK(b, gb_sizes_small) + 1, PICK(b, gb_sizes_small) + 1};
  const char* mode = modes[k % 2];
  const char* tm = ctm[gb_rnd(b, 3)];
  if (!strcmp(mode, "nearest")) tm = "asymmetric"; /* integer source coordinates */
  double sh = ups[gb_rnd(b, 2)], sw = ups[gb_rnd(b, 3)];
  if (!strcmp(mode, "nearest") && sw < 1) sw = 2;
  if (sw < 1 && x[3] % 2) x[3]++;
  gb_name_head(b, "Resize");
  gb_name_shape(b, 4, x);
  gb_name_add(b, ".mode=%s.ctm=%s.scales=%g_%g", mode, tm, sh, sw);
  xc_value_t* xs[3] = {gb_in(b, b->dt, 4, x, -3, 3), NULL, NULL};
  if (!b->err) {
    int64_t four = 4;
    xc_tensor_t* t = NULL;
    xc_status_t s = xc_tensor_create(XC_F32, 1, &four, &t);
    if (!s) {
      xc_tensor_set_f64(t, 0, 1);
      xc_tensor_set_f64(t, 1, 1);
      xc_tensor_set_f64(t, 2, sh);
      xc_tensor_set_f64(t, 3, sw);
      s = xc_graph_add_initializer(b->g, gb_fresh_name(b, "c"), t, &xs[2]);
    }
    gb_keep_err(b, s);
  }
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Resize", 3, xs, &y);
  gb_set_s(b, n, "mode", mode);
  gb_set_s(b, n, "coordinate_transformation_mode", tm);
  gb_out(b, y);
}
