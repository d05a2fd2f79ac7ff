/* Recurrent lowering: RNN, GRU and LSTM with the default activations. One
 * program; per direction a loop over the time steps carries the hidden state
 * (and the LSTM cell) as [BB, HH] tiles (batch and hidden size padded to
 * powers of two, padding masked). Each gate is
 *
 *   dot(X_t[BB, II], W_g^T[II, HH]) + dot(H[BB, HH], R_g^T[HH, HH]) + Wb_g + Rb_g
 *
 * with the weight tiles loaded once before the loop. Each step stores its
 * state into Y; Y_h (Y_c) take the state after the last step. With
 * sequence_lens a batch row stops updating at its length and its later Y
 * rows are 0, like the reference. */
#include <string.h>

#include "lower_internal.h"

enum { RNN_PLAIN, RNN_GRU, RNN_LSTM };

typedef struct {
  lw_ctx_t* c;
  xc_dtype_t F; /* compute dtype: f64 for f64, else f32 */
} rnn_t;

/* [rows, cols] tile of buf at offset base + r*rs + q*cs (r < nr, q < nq valid,
 * 0 elsewhere), cast to the compute dtype. */
static lw_val_t* load2(rnn_t* r, const xc_value_t* v, lw_val_t* base, int64_t rows, int64_t cols, lw_val_t* rs,
                       lw_val_t* cs, lw_val_t* nr, lw_val_t* nq) {
  lw_ctx_t* c = r->c;
  xc_tiled_kernel_t* k = c->k;
  lw_val_t* ri = lw_col(c, xc_tiled_arange(k, xc_tiled_dim_const(rows)));
  lw_val_t* qi = lw_row(c, xc_tiled_arange(k, xc_tiled_dim_const(cols)));
  lw_val_t* off = lw_add(c, base, lw_add(c, lw_mul(c, ri, rs), lw_mul(c, qi, cs)));
  lw_val_t* mask = lw_and(c, lw_lt(c, ri, nr), lw_lt(c, qi, nq));
  return lw_cast_to(c, xc_tiled_load(k, lw_buf(c, v), off, mask, NULL), r->F);
}

/* [1, HH] row of v at base + h (h < H), or zeros when v is absent. */
static lw_val_t* load_row(rnn_t* r, const xc_value_t* v, int64_t base, int64_t HH, int64_t H) {
  lw_ctx_t* c = r->c;
  xc_tiled_dim_t d[2] = {xc_tiled_dim_const(1), xc_tiled_dim_const(HH)};
  if (!v) return xc_tiled_const_f(c->k, r->F, 0, 2, d);
  return load2(r, v, lw_i64(c, base), 1, HH, lw_i64(c, 0), lw_i64(c, 1), lw_i64(c, 1), lw_i64(c, H));
}

static lw_val_t* sigm(lw_ctx_t* c, lw_val_t* x) { return xc_tiled_unary(c->k, XC_TOP_SIGMOID, x); }
static lw_val_t* tnh(lw_ctx_t* c, lw_val_t* x) { return xc_tiled_unary(c->k, XC_TOP_TANH, x); }

static const xc_value_t* opt_in(const xc_node_t* n, int i) { return n->num_inputs > i ? n->inputs[i] : NULL; }
static const xc_value_t* opt_out(const xc_node_t* n, int i) { return n->num_outputs > i ? n->outputs[i] : NULL; }

bool lw_is_rnn(const xc_node_t* n) {
  return (!n->domain || !n->domain[0]) &&
         (!strcmp(n->op_type, "RNN") || !strcmp(n->op_type, "GRU") || !strcmp(n->op_type, "LSTM"));
}

xc_status_t lw_emit_rnn(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  int kind = !strcmp(n->op_type, "GRU") ? RNN_GRU : !strcmp(n->op_type, "LSTM") ? RNN_LSTM : RNN_PLAIN;
  int G = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
  const xc_value_t *X = n->inputs[0], *W = n->inputs[1], *R = n->inputs[2];
  const xc_value_t *B = opt_in(n, 3), *L = opt_in(n, 4), *H0 = opt_in(n, 5);
  const xc_value_t *C0 = kind == RNN_LSTM ? opt_in(n, 6) : NULL, *P = kind == RNN_LSTM ? opt_in(n, 7) : NULL;
  const xc_value_t *Y = opt_out(n, 0), *Yh = opt_out(n, 1), *Yc = kind == RNN_LSTM ? opt_out(n, 2) : NULL;
  if (c->phase->num_nodes > 1) return lw_unsupported(c, n, "fused consumers");
  if (xc_node_has_attr(n, "activations") || xc_node_has_attr(n, "clip"))
    return lw_unsupported(c, n, "custom activations or clip");
  if (kind == RNN_LSTM && xc_node_attr_int(n, "input_forget") != 0) return lw_unsupported(c, n, "input_forget");
  if (X->rank != 3 || W->rank != 3 || R->rank != 3 || !xc_dtype_is_float(X->dtype))
    return lw_unsupported(c, n, "shapes or dtype");
  for (int d = 0; d < 3; d++)
    if (X->dims[d].sym || W->dims[d].sym) return lw_unsupported(c, n, "symbolic dims");
  int64_t layout = xc_node_attr_int(n, "layout");
  int64_t T = X->dims[layout ? 1 : 0].value, Bn = X->dims[layout ? 0 : 1].value, I = X->dims[2].value;
  int64_t D = W->dims[0].value, H = W->dims[1].value / G;
  const char* dir = xc_node_has_attr(n, "direction") ? xc_node_attr_string(n, "direction") : "forward";
  bool bidir = dir && !strcmp(dir, "bidirectional"), rev = dir && !strcmp(dir, "reverse");
  if (!dir || (!bidir && !rev && strcmp(dir, "forward") != 0) || D != (bidir ? 2 : 1) || H * G != W->dims[1].value)
    return lw_unsupported(c, n, "direction or weight shape");
  if (L && (rev || bidir)) return lw_unsupported(c, n, "sequence_lens with a reverse direction");
  int64_t BB = lw_pow2_at_least(Bn), II = lw_pow2_at_least(I), HH = lw_pow2_at_least(H);
  if (BB * HH > 4096 || II * HH > 4096 || HH * HH > 4096) return lw_unsupported(c, n, "sizes too large");
  rnn_t r = {c, X->dtype == XC_F64 ? XC_F64 : XC_F32};
  xc_dtype_t F = r.F;
  lw_val_t *one = lw_i64(c, 1), *vB = lw_i64(c, Bn), *vI = lw_i64(c, I), *vH = lw_i64(c, H);
  xc_tiled_dim_t sd[2] = {xc_tiled_dim_const(BB), xc_tiled_dim_const(HH)};
  lw_val_t* bi = lw_col(c, xc_tiled_arange(k, xc_tiled_dim_const(BB))); /* [BB,1] */
  lw_val_t* hi = lw_row(c, xc_tiled_arange(k, xc_tiled_dim_const(HH))); /* [1,HH] */
  lw_val_t* smask = lw_and(c, lw_lt(c, bi, vB), lw_lt(c, hi, vH));
  lw_val_t* lens = NULL;
  if (L) lens = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, L), bi, lw_lt(c, bi, vB), NULL), XC_I64);
  for (int64_t d = 0; d < D; d++) {
    bool back = rev || (bidir && d == 1);
    /* weights: W_g^T as [II, HH] (row i, column h) = W[d, g*H + h, i] */
    lw_val_t *wt[4], *rt[4], *wb[4], *rb[4], *pp[3] = {0};
    for (int g = 0; g < G; g++) {
      wt[g] = load2(&r, W, lw_i64(c, (d * G * H + g * H) * I), II, HH, one, vI, vI, vH);
      rt[g] = load2(&r, R, lw_i64(c, (d * G * H + g * H) * H), HH, HH, one, vH, vH, vH);
      wb[g] = load_row(&r, B, d * 2 * G * H + g * H, HH, H);
      rb[g] = load_row(&r, B, d * 2 * G * H + (G + g) * H, HH, H);
    }
    for (int q = 0; q < 3 && P; q++) pp[q] = load_row(&r, P, d * 3 * H + q * H, HH, H);
    /* initial state [BB, HH] from [D, B, H] (layout 0) or [B, D, H] */
    lw_val_t* bs = lw_i64(c, layout ? D * H : H);
    lw_val_t* init[2];
    init[0] = H0 ? load2(&r, H0, lw_i64(c, layout ? d * H : d * Bn * H), BB, HH, bs, one, vB, vH)
                 : xc_tiled_const_f(k, F, 0, 2, sd);
    init[1] = C0 ? load2(&r, C0, lw_i64(c, layout ? d * H : d * Bn * H), BB, HH, bs, one, vB, vH)
                 : xc_tiled_const_f(k, F, 0, 2, sd);
    int ncarry = kind == RNN_LSTM ? 2 : 1;
    xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), lw_i64(c, T), one, ncarry, init);
    lw_val_t* t = xc_tiled_for_iv(loop);
    lw_val_t* tt = back ? lw_sub(c, lw_i64(c, T - 1), t) : t;
    lw_val_t* Hp = xc_tiled_for_arg(loop, 0);
    lw_val_t* Cp = kind == RNN_LSTM ? xc_tiled_for_arg(loop, 1) : NULL;
    /* X_t [BB, II]: X[tt, b, i] or X[b, tt, i] */
    lw_val_t* xbase = layout ? lw_mul(c, tt, vI) : lw_mul(c, tt, lw_i64(c, Bn * I));
    lw_val_t* xt = load2(&r, X, xbase, BB, II, lw_i64(c, layout ? T * I : I), one, vB, vI);
    lw_val_t* xw[4];
    lw_val_t* hr[4];
    for (int g = 0; g < G; g++) {
      xw[g] = lw_add(c, xc_tiled_dot(k, xt, wt[g], xc_tiled_const_f(k, F, 0, 2, sd)), wb[g]);
      hr[g] = lw_add(c, xc_tiled_dot(k, Hp, rt[g], xc_tiled_const_f(k, F, 0, 2, sd)), rb[g]);
    }
    lw_val_t *Hn, *Cn = NULL;
    if (kind == RNN_PLAIN) {
      Hn = tnh(c, lw_add(c, xw[0], hr[0]));
    } else if (kind == RNN_GRU) { /* gates z, r, h */
      lw_val_t* z = sigm(c, lw_add(c, xw[0], hr[0]));
      lw_val_t* rg = sigm(c, lw_add(c, xw[1], hr[1]));
      lw_val_t* hc;
      if (xc_node_attr_int(n, "linear_before_reset"))
        hc = tnh(c, lw_add(c, xw[2], lw_mul(c, rg, hr[2])));
      else
        hc = tnh(c, lw_add(c, xw[2], lw_add(c, xc_tiled_dot(k, lw_mul(c, rg, Hp), rt[2], xc_tiled_const_f(k, F, 0, 2, sd)),
                                            rb[2])));
      Hn = lw_add(c, lw_mul(c, lw_sub(c, lw_fconst(c, F, 1), z), hc), lw_mul(c, z, Hp));
    } else { /* gates i, o, f, c; peepholes i, o, f */
      lw_val_t* ig = lw_add(c, xw[0], hr[0]);
      lw_val_t* fg = lw_add(c, xw[2], hr[2]);
      if (P) ig = lw_add(c, ig, lw_mul(c, pp[0], Cp)), fg = lw_add(c, fg, lw_mul(c, pp[2], Cp));
      ig = sigm(c, ig);
      fg = sigm(c, fg);
      lw_val_t* cc = tnh(c, lw_add(c, xw[3], hr[3]));
      Cn = lw_add(c, lw_mul(c, fg, Cp), lw_mul(c, ig, cc));
      lw_val_t* og = lw_add(c, xw[1], hr[1]);
      if (P) og = lw_add(c, og, lw_mul(c, pp[1], Cn));
      Hn = lw_mul(c, sigm(c, og), tnh(c, Cn));
    }
    lw_val_t* valid = NULL;
    if (lens) {
      valid = lw_lt(c, t, lens); /* [BB,1] */
      Hn = xc_tiled_select(k, valid, Hn, Hp);
      if (Cn) Cn = xc_tiled_select(k, valid, Cn, Cp);
    }
    if (Y) { /* Y[tt, d, b, h] or Y[b, tt, d, h] */
      lw_val_t* off = layout ? lw_add(c, lw_mul(c, bi, lw_i64(c, T * D * H)), lw_add(c, lw_mul(c, tt, lw_i64(c, D * H)), lw_add(c, lw_i64(c, d * H), hi)))
                             : lw_add(c, lw_mul(c, tt, lw_i64(c, D * Bn * H)), lw_add(c, lw_i64(c, d * Bn * H), lw_add(c, lw_mul(c, bi, vH), hi)));
      lw_val_t* yv = valid ? xc_tiled_select(k, valid, Hn, lw_fconst(c, F, 0)) : Hn;
      xc_tiled_store(k, lw_buf(c, Y), off, lw_cast_to(c, yv, Y->dtype), smask);
    }
    lw_val_t* next[2] = {Hn, Cn};
    xc_tiled_for_end(k, loop, ncarry, next);
    /* Y_h / Y_c: [D, B, H] or [B, D, H] */
    lw_val_t* soff = layout ? lw_add(c, lw_mul(c, bi, lw_i64(c, D * H)), lw_add(c, lw_i64(c, d * H), hi))
                            : lw_add(c, lw_i64(c, d * Bn * H), lw_add(c, lw_mul(c, bi, vH), hi));
    if (Yh) xc_tiled_store(k, lw_buf(c, Yh), soff, lw_cast_to(c, xc_tiled_for_result(loop, 0), Yh->dtype), smask);
    if (Yc) xc_tiled_store(k, lw_buf(c, Yc), soff, lw_cast_to(c, xc_tiled_for_result(loop, 1), Yc->dtype), smask);
  }
  return NULL;
}
