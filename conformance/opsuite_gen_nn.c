/* Generators of the op-level suite for reductions, Softmax, CumSum, TopK,
 * MatMul and Gemm, convolutions and pools, normalizations, losses, and the
 * fused chains (what the fusion planner merges). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsuite_internal.h"
#include "xcomp/op.h"

/* A random non-empty subset of axes of rank r (some negative). */
static int rand_axes(gb_t* b, int r, int64_t* axes) {
  int n = 0;
  for (int a = 0; a < r; a++)
    if (gb_coin(b)) axes[n++] = gb_coin(b) ? a - r : a;
  if (n == 0) axes[n++] = gb_rnd(b, r);
  return n;
}

void os_gen_reduce(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 4);
  int64_t d[4], axes[4];
  /* Narrow integers: few elements of magnitude <= 1, so no sum overflows. */
  size_t isz = is_int(b->dt) ? xc_dtype_size(b->dt) : 8;
  gb_rand_shape(b, r, isz == 1 ? 100 : isz == 2 ? 1 << 12 : 1 << 15, d);
  gb_name_head(b, b->op);
  gb_name_shape(b, r, d);
  bool all = k % 4 == 3;
  int na = all ? 0 : rand_axes(b, r, axes);
  int64_t keep = gb_coin(b);
  range_t rg = gb_range_for(b->op, b->dt);
  if (is_int(b->dt) && strcmp(b->op, "ReduceProd") != 0) rg = (range_t){-5, 5, 0, false};
  if (is_int(b->dt) && isz <= 2 && strcmp(b->op, "ReduceProd") != 0) rg = (range_t){-1, 1, 0, false};
  if (is_unsigned(b->dt)) rg.lo = 0;
  xc_value_t* xs[2] = {gb_in_r(b, b->dt, r, d, rg), NULL};
  if (na) xs[1] = gb_ints(b, na, axes);
  if (na) gb_name_ints(b, "axes", na, axes);
  else gb_name_add(b, ".axes=all");
  gb_name_add(b, ".keepdims=%lld", (long long)keep);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, na ? 2 : 1, xs, &y);
  gb_set_i(b, n, "keepdims", keep);
  gb_out(b, y);
}

void os_gen_argreduce(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 4);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 15, d);
  int64_t axis = gb_rnd(b, r) - (gb_coin(b) ? r : 0);
  int64_t keep = gb_coin(b), last = k % 2;
  gb_name_head(b, b->op);
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld.keepdims=%lld.last=%lld", (long long)axis, (long long)keep, (long long)last);
  range_t rg = is_int(b->dt) ? (range_t){-20, 20, 0, false} : (range_t){-3, 3, 0, false};
  if (is_unsigned(b->dt)) rg.lo = 0;
  xc_value_t* x = gb_in_r(b, b->dt, r, d, rg);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, 1, &x, &y);
  gb_set_i(b, n, "axis", axis);
  gb_set_i(b, n, "keepdims", keep);
  gb_set_i(b, n, "select_last_index", last);
  gb_out(b, y);
}

void os_gen_softmax(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 4);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 15, d);
  int64_t axis = gb_coin(b) ? -1 : gb_rnd(b, r);
  gb_name_head(b, b->op);
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld", (long long)axis);
  xc_value_t* x = gb_in(b, b->dt, r, d, -4, 4);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, 1, &x, &y);
  gb_set_i(b, n, "axis", axis);
  gb_out(b, y);
}

void os_gen_cumsum(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int64_t axis = gb_rnd(b, r) - (gb_coin(b) ? r : 0);
  int64_t excl = k % 2, rev = (k / 2) % 2;
  gb_name_head(b, "CumSum");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld.exclusive=%lld.reverse=%lld", (long long)axis, (long long)excl, (long long)rev);
  double lim = !is_int(b->dt) ? 1 : xc_dtype_size(b->dt) == 1 ? 0 : 5; /* narrow: zeros and ones below */
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, is_int(b->dt) ? -lim : -1, lim), gb_ints_r(b, 1, &axis, true)};
  if (xs[0] && is_int(b->dt) && xc_dtype_size(b->dt) == 1) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1]; /* sparse ones: running sums stay small */
    for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, gb_rnd(b, 16) == 0);
  }
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "CumSum", 2, xs, &y);
  gb_set_i(b, n, "exclusive", excl);
  gb_set_i(b, n, "reverse", rev);
  gb_out(b, y);
}

void os_gen_topk(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 13, d);
  int axis = gb_rnd(b, r);
  int64_t kk = 1 + gb_rnd(b, (int)(d[axis] < 8 ? d[axis] : 8));
  int64_t largest = k % 2 == 0;
  gb_name_head(b, "TopK");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".k=%lld.axis=%d.largest=%lld", (long long)kk, axis, (long long)largest);
  /* Distinct values: no ties whose order could differ. */
  xc_value_t* xs[2] = {gb_in(b, b->dt, r, d, -3, 3), gb_ints(b, 1, &kk)};
  if (xs[0]) {
    xc_tensor_t* t = b->inputs[b->num_inputs - 1];
    int64_t n = t->numel;
    for (int64_t i = 0; i < n; i++) {
      int64_t j = (int64_t)((uint64_t)(i * 7919 + 13) % (uint64_t)n);
      xc_tensor_set_f64(t, i, is_int(b->dt) ? (double)(j % 100) : ((double)j - (double)n / 2) / 8);
    }
  }
  xc_value_t* ys[2];
  xc_node_t* n = gb_node_n(b, "TopK", "", 2, xs, 2, ys);
  gb_set_i(b, n, "axis", axis);
  gb_set_i(b, n, "largest", largest);
  gb_out(b, ys[0]);
  gb_out(b, ys[1]);
}

/* ---- matrix products --------------------------------------------------- */

void os_gen_matmul(gb_t* b, int k) {
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127, 257};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk), bt = 1 + gb_rnd(b, 4);
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
  gb_name_head(b, "MatMul");
  gb_name_shape(b, ra, da);
  gb_name_add(b, "x");
  gb_name_shape(b, rb, db);
  bool wconst = gb_coin(b);
  double lo = is_int(b->dt) ? -3 : -1, hi = is_int(b->dt) ? 3 : 1;
  xc_value_t* xs[2] = {gb_in(b, b->dt, ra, da, lo, hi), wconst ? gb_weight(b, b->dt, rb, db, lo, hi) : gb_in(b, b->dt, rb, db, lo, hi)};
  if (wconst) gb_name_add(b, ".const_b");
  xc_value_t* y;
  gb_node(b, "MatMul", 2, xs, &y);
  gb_out(b, y);
}

void os_gen_gemm(gb_t* b, int k) {
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127, 257};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk);
  if (m * kk > 1 << 14) m = 13;
  if (kk * n > 1 << 14) n = 31;
  int64_t ta = gb_coin(b), tb = gb_coin(b);
  double alpha = gb_coin(b) ? 1.0 : 0.5, beta = gb_coin(b) ? 1.0 : 2.0;
  int ck = k % 5; /* C: none, scalar, [N], [M,1], [M,N] */
  int64_t da[2] = {ta ? kk : m, ta ? m : kk}, db[2] = {tb ? n : kk, tb ? kk : n}, dc[2] = {m, n};
  int rc = 2;
  if (ck == 1) rc = 0;
  if (ck == 2) {
    rc = 1;
    dc[0] = n;
  }
  if (ck == 3) dc[1] = 1;
  gb_name_head(b, "Gemm");
  gb_name_shape(b, 2, da);
  gb_name_add(b, "x");
  gb_name_shape(b, 2, db);
  if (ck) {
    gb_name_add(b, "+");
    gb_name_shape(b, rc, dc);
  }
  gb_name_add(b, ".transA=%lld.transB=%lld.alpha=%g.beta=%g", (long long)ta, (long long)tb, alpha, beta);
  xc_value_t* xs[3] = {gb_in(b, b->dt, 2, da, -1, 1), gb_weight(b, b->dt, 2, db, -1, 1), NULL};
  if (ck) xs[2] = gb_weight(b, b->dt, rc, dc, -1, 1);
  xc_value_t* y;
  xc_node_t* nd = gb_node(b, "Gemm", ck ? 3 : 2, xs, &y);
  gb_set_i(b, nd, "transA", ta);
  gb_set_i(b, nd, "transB", tb);
  gb_set_f(b, nd, "alpha", alpha);
  gb_set_f(b, nd, "beta", beta);
  gb_out(b, y);
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
  g->sp = gb_coin(b) && gb_coin(b) ? 1 : 2;
  g->n = 1 + gb_rnd(b, 2);
  g->c = PICK(b, ch);
  for (int i = 0; i < g->sp; i++) {
    g->hw[i] = PICK(b, hw);
    static const int64_t ks[] = {1, 2, 3, 5};
    g->kern[i] = PICK(b, ks);
    g->dil[i] = dilate && gb_coin(b) ? 2 : 1;
    int64_t span = (g->kern[i] - 1) * g->dil[i] + 1;
    g->stride[i] = 1 + gb_rnd(b, 2);
    g->pads[i] = gb_rnd(b, (int)g->kern[i]);
    g->pads[i + g->sp] = gb_rnd(b, (int)g->kern[i]);
    if (g->hw[i] + g->pads[i] + g->pads[i + g->sp] < span) g->pads[i + g->sp] += span;
  }
}

static void name_conv(gb_t* b, const convg_t* g) {
  gb_name_ints(b, "k", g->sp, g->kern);
  gb_name_ints(b, "s", g->sp, g->stride);
  gb_name_ints(b, "d", g->sp, g->dil);
  gb_name_ints(b, "p", 2 * g->sp, g->pads);
}

static void set_conv(gb_t* b, xc_node_t* n, const convg_t* g, bool dil) {
  gb_set_is(b, n, "kernel_shape", g->sp, g->kern);
  gb_set_is(b, n, "strides", g->sp, g->stride);
  if (dil) gb_set_is(b, n, "dilations", g->sp, g->dil);
  gb_set_is(b, n, "pads", 2 * g->sp, g->pads);
}

static xc_value_t* conv_node(gb_t* b, int k, bool relu) {
  convg_t g;
  rand_conv_geom(b, &g, true);
  static const int64_t outs[] = {1, 2, 4, 8, 13, 16};
  int64_t group = 1, m = PICK(b, outs);
  if (k % 3 == 1) { /* depthwise */
    group = g.c;
    m = g.c * (1 + gb_rnd(b, 2));
  } else if (k % 3 == 2 && g.c % 2 == 0) {
    group = 2;
    m = 2 * (1 + gb_rnd(b, 4));
  }
  int64_t x[4] = {g.n, g.c, g.hw[0], g.hw[1]}, w[4] = {m, g.c / group, g.kern[0], g.kern[1]};
  bool bias = gb_coin(b);
  gb_name_head(b, relu ? "Conv+Relu" : "Conv");
  gb_name_shape(b, 2 + g.sp, x);
  gb_name_add(b, "x");
  gb_name_shape(b, 2 + g.sp, w);
  name_conv(b, &g);
  gb_name_add(b, ".group=%lld%s", (long long)group, bias ? ".bias" : "");
  xc_value_t* xs[3] = {gb_in(b, b->dt, 2 + g.sp, x, -1, 1), gb_weight(b, b->dt, 2 + g.sp, w, -0.5, 0.5), NULL};
  if (bias) xs[2] = gb_weight(b, b->dt, 1, &m, -0.5, 0.5);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Conv", bias ? 3 : 2, xs, &y);
  set_conv(b, n, &g, true);
  gb_set_i(b, n, "group", group);
  return y;
}

void os_gen_conv(gb_t* b, int k) { gb_out(b, conv_node(b, k, false)); }

void os_gen_conv_relu(gb_t* b, int k) {
  xc_value_t* c = conv_node(b, k, true);
  xc_value_t* y;
  gb_node(b, "Relu", 1, &c, &y);
  gb_out(b, y);
}

void os_gen_convtranspose(gb_t* b, int k) {
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
  gb_name_head(b, "ConvTranspose");
  gb_name_shape(b, 2 + g.sp, x);
  gb_name_add(b, "x");
  gb_name_shape(b, 2 + g.sp, w);
  name_conv(b, &g);
  xc_value_t* xs[2] = {gb_in(b, b->dt, 2 + g.sp, x, -1, 1), gb_weight(b, b->dt, 2 + g.sp, w, -0.5, 0.5)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "ConvTranspose", 2, xs, &y);
  set_conv(b, n, &g, false);
  gb_out(b, y);
}

void os_gen_pool(gb_t* b, int k) {
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
  gb_name_head(b, b->op);
  gb_name_shape(b, 2 + g.sp, x);
  name_conv(b, &g);
  gb_name_add(b, ".ceil=%lld", (long long)ceil_mode);
  if (avg) gb_name_add(b, ".count_include_pad=%lld", (long long)cip);
  xc_value_t* xv = gb_in(b, b->dt, 2 + g.sp, x, -2, 2);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, 1, &xv, &y);
  set_conv(b, n, &g, false);
  gb_set_i(b, n, "ceil_mode", ceil_mode);
  if (avg) gb_set_i(b, n, "count_include_pad", cip);
  gb_out(b, y);
}

void os_gen_global_pool(gb_t* b, int k) {
  (void)k;
  int64_t x[4] = {1 + gb_rnd(b, 2), PICK(b, gb_sizes_small), PICK(b, gb_sizes_small), PICK(b, gb_sizes_all)};
  if (x[3] > 64) x[3] = 31;
  gb_name_head(b, b->op);
  gb_name_shape(b, 4, x);
  xc_value_t* xv = gb_in(b, b->dt, 4, x, -2, 2);
  xc_value_t* y;
  gb_node(b, b->op, 1, &xv, &y);
  gb_out(b, y);
}

/* ---- normalization -------------------------------------------------------- */

void os_gen_layernorm(gb_t* b, int k) {
  (void)k;
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 14, d);
  int64_t axis = gb_coin(b) ? -1 : gb_rnd(b, r);
  int a = (int)(axis < 0 ? axis + r : axis);
  bool rms = !strcmp(b->op, "RMSNormalization");
  bool bias = !rms && gb_coin(b);
  gb_name_head(b, b->op);
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld%s", (long long)axis, bias ? ".bias" : "");
  xc_value_t* xs[3] = {gb_in(b, b->dt, r, d, -3, 3), gb_weight(b, b->dt, r - a, d + a, 0.5, 1.5), NULL};
  if (bias) xs[2] = gb_weight(b, b->dt, r - a, d + a, -0.5, 0.5);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, bias ? 3 : 2, xs, &y);
  gb_set_i(b, n, "axis", axis);
  gb_set_f(b, n, "epsilon", 1e-5);
  gb_out(b, y);
}

void os_gen_chan_norm(gb_t* b, int k) {
  (void)k;
  static const int64_t ch[] = {1, 2, 3, 4, 6, 8, 12};
  int64_t x[4] = {1 + gb_rnd(b, 2), PICK(b, ch), PICK(b, gb_sizes_small), PICK(b, gb_sizes_all)};
  if (x[3] > 64) x[3] = 13;
  int r = 3 + gb_coin(b);
  if (r == 3) x[2] = x[2] * x[3];
  gb_name_head(b, b->op);
  gb_name_shape(b, r, x);
  xc_value_t* xs[5] = {gb_in(b, b->dt, r, x, -2, 2), NULL, NULL, NULL, NULL};
  int nin = 3;
  int64_t c = x[1];
  int64_t groups = 1;
  if (!strcmp(b->op, "GroupNormalization")) {
    int64_t cand[4], nc = 0;
    for (int64_t gg = 1; gg <= c && nc < 4; gg++)
      if (c % gg == 0) cand[nc++] = gg;
    groups = cand[gb_rnd(b, (int)nc)];
    gb_name_add(b, ".groups=%lld", (long long)groups);
  }
  xs[1] = gb_weight(b, b->dt, 1, &c, 0.5, 1.5);
  xs[2] = gb_weight(b, b->dt, 1, &c, -0.5, 0.5);
  if (!strcmp(b->op, "BatchNormalization")) {
    xs[3] = gb_weight(b, b->dt, 1, &c, -0.5, 0.5);
    xs[4] = gb_weight(b, b->dt, 1, &c, 0.5, 2);
    nin = 5;
  }
  xc_value_t* y;
  xc_node_t* n = gb_node(b, b->op, nin, xs, &y);
  if (groups > 1 || !strcmp(b->op, "GroupNormalization")) gb_set_i(b, n, "num_groups", groups);
  gb_out(b, y);
}

void os_gen_lpnorm(gb_t* b, int k) {
  int r = 1 + gb_rnd(b, 3);
  int64_t d[4];
  gb_rand_shape(b, r, 1 << 14, d);
  int64_t axis = gb_rnd(b, r), p = 1 + k % 2;
  gb_name_head(b, "LpNormalization");
  gb_name_shape(b, r, d);
  gb_name_add(b, ".axis=%lld.p=%lld", (long long)axis, (long long)p);
  xc_value_t* x = gb_in_r(b, b->dt, r, d, (range_t){0.2, 2, 0, true});
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "LpNormalization", 1, &x, &y);
  gb_set_i(b, n, "axis", axis);
  gb_set_i(b, n, "p", p);
  gb_out(b, y);
}
static int64_t idx_class(gb_t* b, int64_t i, void* ctx) {
  (void)i;
  return gb_rnd(b, (int)*(const int64_t*)ctx);
}

void os_gen_loss(gb_t* b, int k) {
  static const char* reds[] = {"mean", "sum", "none"};
  bool sce = !strcmp(b->op, "SoftmaxCrossEntropyLoss");
  int64_t n = PICK(b, gb_sizes_small), c = PICK(b, gb_sizes_small) + 1;
  const char* red = reds[k % 3];
  int64_t dx[2] = {n, c};
  gb_name_head(b, b->op);
  gb_name_shape(b, 2, dx);
  gb_name_add(b, ".reduction=%s", red);
  xc_value_t* xs[2] = {gb_in(b, b->dt, 2, dx, sce ? -3 : -4, sce ? 3 : -0.1), gb_index_tensor(b, 1, &n, idx_class, &c)};
  xc_value_t* y;
  xc_node_t* nd = gb_node(b, b->op, 2, xs, &y);
  gb_set_s(b, nd, "reduction", red);
  gb_out(b, y);
}

void os_gen_lppool(gb_t* b, int k) {
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
  gb_name_head(b, "LpPool");
  gb_name_shape(b, 4, x);
  name_conv(b, &g);
  gb_name_add(b, ".p=%lld", (long long)p);
  xc_value_t* xv = gb_in(b, b->dt, 4, x, -2, 2);
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "LpPool", 1, &xv, &y);
  gb_set_is(b, n, "kernel_shape", 2, g.kern);
  gb_set_is(b, n, "strides", 2, g.stride);
  gb_set_i(b, n, "p", p);
  gb_out(b, y);
}

/* ---- fused chains (what the fusion planner merges) ------------------------ */

void os_gen_matmul_bias_gelu(gb_t* b, int k) {
  (void)k;
  static const int64_t mk[] = {1, 3, 7, 13, 31, 64, 127};
  int64_t m = PICK(b, mk), kk = PICK(b, mk), n = PICK(b, mk), bt = 1 + gb_rnd(b, 2);
  int64_t da[3] = {bt, m, kk}, dw[2] = {kk, n};
  gb_name_head(b, "MatMul+Add+Gelu");
  gb_name_shape(b, 3, da);
  gb_name_add(b, "x");
  gb_name_shape(b, 2, dw);
  xc_value_t* xs[2] = {gb_in(b, b->dt, 3, da, -1, 1), gb_weight(b, b->dt, 2, dw, -0.5, 0.5)};
  xc_value_t *mm, *ad, *y;
  gb_node(b, "MatMul", 2, xs, &mm);
  xc_value_t* bs[2] = {mm, gb_weight(b, b->dt, 1, &n, -0.5, 0.5)};
  gb_node(b, "Add", 2, bs, &ad);
  xc_node_t* g = gb_node(b, "Gelu", 1, &ad, &y);
  (void)g;
  gb_out(b, y);
}

void os_gen_add_layernorm(gb_t* b, int k) {
  (void)k;
  int64_t d[3] = {1 + gb_rnd(b, 2), PICK(b, gb_sizes_small), PICK(b, gb_sizes_all)};
  gb_name_head(b, "Add+LayerNormalization");
  gb_name_shape(b, 3, d);
  xc_value_t* xs[2] = {gb_in(b, b->dt, 3, d, -2, 2), gb_in(b, b->dt, 3, d, -2, 2)};
  xc_value_t *s, *y;
  gb_node(b, "Add", 2, xs, &s);
  xc_value_t* ls[3] = {s, gb_weight(b, b->dt, 1, &d[2], 0.5, 1.5), gb_weight(b, b->dt, 1, &d[2], -0.5, 0.5)};
  xc_node_t* n = gb_node(b, "LayerNormalization", 3, ls, &y);
  gb_set_i(b, n, "axis", -1);
  gb_out(b, y);
}

/* softmax(Q K^T * scale [+ mask]) V, the pattern the attention pass finds. */
void os_gen_attention_chain(gb_t* b, int k) {
  static const int64_t sq[] = {1, 3, 7, 13, 16, 31, 64};
  static const int64_t hd[] = {8, 16, 32, 64};
  int64_t bh = 1 + gb_rnd(b, 3), s = PICK(b, sq), t = PICK(b, sq), dd = PICK(b, hd);
  bool mask = k % 2 == 1;
  int64_t dq[3] = {bh, s, dd}, dk[3] = {bh, t, dd}, dm[2] = {s, t};
  gb_name_head(b, "MatMul+Softmax+MatMul");
  gb_name_shape(b, 3, dq);
  gb_name_add(b, "x");
  gb_name_shape(b, 3, dk);
  if (mask) gb_name_add(b, ".mask");
  xc_value_t* q = gb_in(b, b->dt, 3, dq, -1, 1);
  xc_value_t* kv = gb_in(b, b->dt, 3, dk, -1, 1);
  xc_value_t* v = gb_in(b, b->dt, 3, dk, -1, 1);
  xc_value_t* mv = mask ? gb_in(b, b->dt, 2, dm, -2, 0) : NULL;
  xc_value_t *kt, *qk, *sc, *msk, *sm, *y;
  xc_node_t* tn = gb_node(b, "Transpose", 1, &kv, &kt);
  int64_t perm[3] = {0, 2, 1};
  gb_set_is(b, tn, "perm", 3, perm);
  xc_value_t* a1[2] = {q, kt};
  gb_node(b, "MatMul", 2, a1, &qk);
  xc_value_t* a2[2] = {qk, gb_scalar(b, b->dt, 1.0 / sqrt((double)dd))};
  gb_node(b, "Mul", 2, a2, &sc);
  if (mask) {
    xc_value_t* a3[2] = {sc, mv};
    gb_node(b, "Add", 2, a3, &msk);
    sc = msk;
  }
  xc_node_t* smn = gb_node(b, "Softmax", 1, &sc, &sm);
  gb_set_i(b, smn, "axis", -1);
  xc_value_t* a4[2] = {sm, v};
  gb_node(b, "MatMul", 2, a4, &y);
  gb_out(b, y);
}

void os_gen_attention_op(gb_t* b, int k) {
  static const int64_t sq[] = {1, 3, 7, 13, 16, 31};
  static const int64_t hd[] = {8, 16, 32};
  int64_t bt = 1 + gb_rnd(b, 2), h = 1 + gb_rnd(b, 3), s = PICK(b, sq), t = PICK(b, sq), dd = PICK(b, hd);
  int64_t causal = k % 2;
  int64_t dq[4] = {bt, h, s, dd}, dk[4] = {bt, h, t, dd};
  gb_name_head(b, "Attention");
  gb_name_shape(b, 4, dq);
  gb_name_add(b, "x");
  gb_name_shape(b, 4, dk);
  gb_name_add(b, ".causal=%lld", (long long)causal);
  xc_value_t* xs[3] = {gb_in(b, b->dt, 4, dq, -1, 1), gb_in(b, b->dt, 4, dk, -1, 1), gb_in(b, b->dt, 4, dk, -1, 1)};
  xc_value_t* y;
  xc_node_t* n = gb_node(b, "Attention", 3, xs, &y);
  gb_set_i(b, n, "is_causal", causal);
  gb_out(b, y);
}

/* An elementwise chain with broadcasting: tanh(x * a + c) * s - x. */
void os_gen_ew_chain(gb_t* b, int k) {
  int r = 2 + gb_rnd(b, 2);
  int64_t d[4], da[4], dr[4], dc[4];
  gb_rand_shape(b, r, 1 << 14, d);
  int ra, rr, rc;
  gb_bshape(2, r, d, da, &ra, dr, &rr);
  gb_bshape(3 + k % 2, r, d, da, &ra, dc, &rc);
  gb_name_head(b, "Mul+Add+Tanh+Mul+Sub");
  gb_name_shape(b, ra, da);
  gb_name_add(b, "x");
  gb_name_shape(b, rr, dr);
  gb_name_add(b, "x");
  gb_name_shape(b, rc, dc);
  xc_value_t* x = gb_in(b, b->dt, ra, da, -2, 2);
  xc_value_t* a = gb_in(b, b->dt, rr, dr, -1, 1);
  xc_value_t* c = gb_in(b, b->dt, rc, dc, -1, 1);
  xc_value_t *m1, *a1, *t1, *m2, *y;
  xc_value_t* p1[2] = {x, a};
  gb_node(b, "Mul", 2, p1, &m1);
  xc_value_t* p2[2] = {m1, c};
  gb_node(b, "Add", 2, p2, &a1);
  gb_node(b, "Tanh", 1, &a1, &t1);
  xc_value_t* p3[2] = {t1, gb_scalar(b, b->dt, 0.75)};
  gb_node(b, "Mul", 2, p3, &m2);
  xc_value_t* p4[2] = {m2, x};
  gb_node(b, "Sub", 2, p4, &y);
  gb_out(b, y);
}
