/* Recurrent ops RNN, GRU and LSTM (opset 22), listed in the 'linalg' family
 * table (ops_linalg.c): each step is a pair of small matrix products.
 *
 * Layouts: layout 0 has X [seq, batch, input], Y [seq, dirs, batch, hidden],
 * Y_h / Y_c [dirs, batch, hidden]; layout 1 has X [batch, seq, input],
 * Y [batch, seq, dirs, hidden], Y_h / Y_c [batch, dirs, hidden]. Gate
 * order in W, R, B: RNN (i), GRU (z, r, h), LSTM (i, o, f, c); peepholes
 * P are (i, o, f). sequence_lens stops each batch entry early (outputs
 * past its length are 0; the reverse direction starts at its last step).
 * Everything is computed in double and rounded once on store. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_rnn.h"

const xc_attr_def_t xc_rnn_attrs[] = {
    XC_ATTR_OPT("activation_alpha", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activation_beta", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activations", XC_ATTR_STRINGS),
    XC_ATTR_OPT("clip", XC_ATTR_FLOAT),
    XC_ATTR_S("direction", "forward"),
    XC_ATTR_OPT("hidden_size", XC_ATTR_INT),
    XC_ATTR_I("layout", 0),
    XC_ATTR_END,
};

const xc_attr_def_t xc_gru_attrs[] = {
    XC_ATTR_OPT("activation_alpha", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activation_beta", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activations", XC_ATTR_STRINGS),
    XC_ATTR_OPT("clip", XC_ATTR_FLOAT),
    XC_ATTR_S("direction", "forward"),
    XC_ATTR_OPT("hidden_size", XC_ATTR_INT),
    XC_ATTR_I("layout", 0),
    XC_ATTR_I("linear_before_reset", 0),
    XC_ATTR_END,
};

const xc_attr_def_t xc_lstm_attrs[] = {
    XC_ATTR_OPT("activation_alpha", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activation_beta", XC_ATTR_FLOATS),
    XC_ATTR_OPT("activations", XC_ATTR_STRINGS),
    XC_ATTR_OPT("clip", XC_ATTR_FLOAT),
    XC_ATTR_S("direction", "forward"),
    XC_ATTR_OPT("hidden_size", XC_ATTR_INT),
    XC_ATTR_I("input_forget", 0),
    XC_ATTR_I("layout", 0),
    XC_ATTR_END,
};

enum { KIND_RNN, KIND_GRU, KIND_LSTM };

static int rnn_kind(const xc_node_t* n) {
  if (!strcmp(n->op_type, "GRU")) return KIND_GRU;
  if (!strcmp(n->op_type, "LSTM")) return KIND_LSTM;
  return KIND_RNN;
}

static int gate_count(int kind) { return kind == KIND_RNN ? 1 : kind == KIND_GRU ? 3 : 4; }
static int activation_count(int kind) { return kind == KIND_RNN ? 1 : kind == KIND_GRU ? 2 : 3; }

/* ---- activations -------------------------------------------------------- */

typedef enum {
  ACT_TANH,
  ACT_SIGMOID,
  ACT_RELU,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS
} act_kind_t;

typedef struct {
  act_kind_t kind;
  double alpha, beta;
} act_t;

static const struct {
  const char* name;
  act_kind_t kind;
  double alpha, beta;
} act_table[] = {
    {"Tanh", ACT_TANH, 0, 0},
    {"Sigmoid", ACT_SIGMOID, 0, 0},
    {"Relu", ACT_RELU, 0, 0},
    {"Affine", ACT_AFFINE, 1.0, 0.0},
    {"LeakyRelu", ACT_LEAKY_RELU, 0.01, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, 1.0, 0},
    {"ScaledTanh", ACT_SCALED_TANH, 1.0, 1.0},
    {"HardSigmoid", ACT_HARD_SIGMOID, 0.2, 0.5},
    {"Elu", ACT_ELU, 1.0, 0},
    {"Softsign", ACT_SOFTSIGN, 0, 0},
    {"Softplus", ACT_SOFTPLUS, 0, 0},
};

static double act_apply(const act_t* a, double x) {
  switch (a->kind) {
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARD_SIGMOID: {
      double v = a->alpha * x + a->beta;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ACT_SOFTPLUS: return log1p(exp(-fabs(x))) + (x > 0 ? x : 0);
  }
  return x;
}

/* Activations per direction: defaults, or the `activations` attribute with
 * alpha/beta taken index by index. */
static xc_status_t read_activations(const xc_node_t* n, int kind, int dirs, act_t* out) {
  int per = activation_count(kind);
  static const act_kind_t dflt[3][3] = {
      {ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  int64_t count, na, nb;
  const char* const* names = xc_node_attr_strings(n, "activations", &count);
  const double* alpha = xc_node_attr_floats(n, "activation_alpha", &na);
  const double* beta = xc_node_attr_floats(n, "activation_beta", &nb);
  if (!names) {
    for (int d = 0; d < dirs; d++)
      for (int i = 0; i < per; i++) out[d * per + i] = (act_t){dflt[kind][i], 0, 0};
    return NULL;
  }
  if (count != (int64_t)per * dirs)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'activations' has %lld names, expected %d",
                         (long long)count, per * dirs);
  for (int64_t i = 0; i < count; i++) {
    size_t t = 0;
    while (t < sizeof act_table / sizeof act_table[0] && strcmp(act_table[t].name, names[i])) t++;
    if (t == sizeof act_table / sizeof act_table[0])
      return xc_node_error(n, XC_UNSUPPORTED, "unsupported activation '%s'", names[i]);
    out[i].kind = act_table[t].kind;
    out[i].alpha = alpha && i < na ? alpha[i] : act_table[t].alpha;
    out[i].beta = beta && i < nb ? beta[i] : act_table[t].beta;
  }
  return NULL;
}

static xc_status_t read_direction(const xc_node_t* n, int* dirs, bool* reverse_only) {
  const char* d = xc_node_attr_string(n, "direction");
  *reverse_only = false;
  if (!strcmp(d, "forward"))
    *dirs = 1;
  else if (!strcmp(d, "reverse"))
    *dirs = 1, *reverse_only = true;
  else if (!strcmp(d, "bidirectional"))
    *dirs = 2;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown direction '%s'", d);
  return NULL;
}

/* ---- inference ---------------------------------------------------------- */

static xc_status_t static_eq(const xc_node_t* n, xc_dim_t a, xc_dim_t b, const char* what) {
  if (!a.sym && !b.sym && a.value != b.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s (%lld vs %lld)", what, (long long)a.value,
                         (long long)b.value);
  return NULL;
}

xc_status_t xc_rnn_infer(xc_graph_t* g, xc_node_t* n) {
  int kind = rnn_kind(n), gates = gate_count(kind);
  for (int i = 0; i < 3; i++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, XC_DT_FLOAT));
    if (n->inputs[i]->dtype != n->inputs[0]->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "X, W and R must share a dtype");
  }
  const xc_value_t *x = n->inputs[0], *w = n->inputs[1], *r = n->inputs[2];
  int dirs;
  bool rev;
  XC_RETURN_IF_ERROR(read_direction(n, &dirs, &rev));
  act_t acts[6];
  XC_RETURN_IF_ERROR(read_activations(n, kind, dirs, acts));
  int64_t layout = xc_node_attr_int(n, "layout");
  if (layout != 0 && layout != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "layout must be 0 or 1");
  if (x->rank != 3 || w->rank != 3 || r->rank != 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "X, W and R must be 3-D");
  xc_dim_t seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1];
  xc_dim_t hidden = r->dims[2];
  if (xc_node_has_attr(n, "hidden_size")) {
    int64_t hs = xc_node_attr_int(n, "hidden_size");
    if (hs < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "hidden_size must be positive");
    XC_RETURN_IF_ERROR(
        static_eq(n, hidden, xc_dim_const(hs), "R's last dim differs from hidden_size"));
    hidden = xc_dim_const(hs);
  }
  XC_RETURN_IF_ERROR(
      static_eq(n, w->dims[0], xc_dim_const(dirs), "W's first dim differs from the directions"));
  XC_RETURN_IF_ERROR(
      static_eq(n, r->dims[0], xc_dim_const(dirs), "R's first dim differs from the directions"));
  xc_dim_t gh = xc_dim_mul(g, hidden, xc_dim_const(gates));
  XC_RETURN_IF_ERROR(static_eq(n, w->dims[1], gh, "W's gate dim"));
  XC_RETURN_IF_ERROR(static_eq(n, r->dims[1], gh, "R's gate dim"));
  XC_RETURN_IF_ERROR(static_eq(n, w->dims[2], x->dims[2], "W's input size differs from X"));
  for (int i = 3; i < n->num_inputs; i++)
    if (n->inputs[i] && i != 4 && n->inputs[i]->dtype != x->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d has dtype %s, expected %s", i,
                           xc_dtype_name(n->inputs[i]->dtype), xc_dtype_name(x->dtype));
  if (n->num_inputs > 4 && n->inputs[4])
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 4, XC_DT(XC_I32) | XC_DT(XC_I64)));
  xc_dim_t d = xc_dim_const(dirs);
  xc_dim_t y[4], yh[3];
  if (layout == 0) {
    y[0] = seq, y[1] = d, y[2] = batch, y[3] = hidden;
    yh[0] = d, yh[1] = batch, yh[2] = hidden;
  } else {
    y[0] = batch, y[1] = seq, y[2] = d, y[3] = hidden;
    yh[0] = batch, yh[1] = d, yh[2] = hidden;
  }
  if (n->num_outputs > 0 && n->outputs[0])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], x->dtype, 4, y));
  for (int k = 1; k < n->num_outputs; k++)
    if (n->outputs[k]) XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[k], x->dtype, 3, yh));
  return NULL;
}

/* ---- kernel ------------------------------------------------------------- */

typedef struct {
  int kind, dirs;
  bool reverse_only, layout1, linear_before_reset, input_forget, has_clip;
  double clip;
  int64_t seq, batch, input, hidden, gates;
  act_t acts[6];
} rnn_t;

static double clipped(const rnn_t* r, double v) {
  if (!r->has_clip) return v;
  return v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
}

static int64_t x_at(const rnn_t* r, int64_t t, int64_t b, int64_t i) {
  return r->layout1 ? (b * r->seq + t) * r->input + i : (t * r->batch + b) * r->input + i;
}
static int64_t y_at(const rnn_t* r, int64_t t, int64_t d, int64_t b, int64_t h) {
  return r->layout1 ? ((b * r->seq + t) * r->dirs + d) * r->hidden + h
                    : ((t * r->dirs + d) * r->batch + b) * r->hidden + h;
}
static int64_t state_at(const rnn_t* r, int64_t d, int64_t b, int64_t h) {
  return r->layout1 ? (b * r->dirs + d) * r->hidden + h : (d * r->batch + b) * r->hidden + h;
}

xc_status_t xc_rnn_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* in[8] = {0};
  for (int i = 0; i < ctx->num_inputs && i < 8; i++) in[i] = ctx->inputs[i];
  const xc_tensor_t *x = in[0], *w = in[1], *rw = in[2], *bias = in[3], *lens = in[4];
  const xc_tensor_t *h0 = in[5], *c0 = in[6], *peep = in[7];
  rnn_t r;
  memset(&r, 0, sizeof r);
  r.kind = rnn_kind(n);
  r.gates = gate_count(r.kind);
  XC_RETURN_IF_ERROR(read_direction(n, &r.dirs, &r.reverse_only));
  XC_RETURN_IF_ERROR(read_activations(n, r.kind, r.dirs, r.acts));
  r.layout1 = xc_node_attr_int(n, "layout") == 1;
  r.has_clip = xc_node_has_attr(n, "clip");
  r.clip = r.has_clip ? xc_node_attr_float(n, "clip") : 0;
  if (r.kind == KIND_GRU) r.linear_before_reset = xc_node_attr_int(n, "linear_before_reset") != 0;
  if (r.kind == KIND_LSTM) r.input_forget = xc_node_attr_int(n, "input_forget") != 0;
  if (r.kind != KIND_LSTM) c0 = peep = NULL;
  if (x->rank != 3 || w->rank != 3 || rw->rank != 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "X, W and R must be 3-D");
  r.seq = x->dims[r.layout1 ? 1 : 0];
  r.batch = x->dims[r.layout1 ? 0 : 1];
  r.input = x->dims[2];
  r.hidden = rw->dims[2];
  int64_t gh = r.gates * r.hidden, per = activation_count(r.kind);
  if (w->dims[0] != r.dirs || rw->dims[0] != r.dirs || w->dims[1] != gh || rw->dims[1] != gh ||
      w->dims[2] != r.input)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "W/R shapes do not match X and hidden size %lld",
                         (long long)r.hidden);
  if (bias && (bias->rank != 2 || bias->dims[0] != r.dirs || bias->dims[1] != 2 * gh))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "B must have shape [%d, %lld]", r.dirs,
                         (long long)(2 * gh));
  if (lens && (lens->rank != 1 || lens->dims[0] != r.batch))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "sequence_lens must have shape [%lld]",
                         (long long)r.batch);
  const xc_tensor_t* states[2] = {h0, c0};
  for (int k = 0; k < 2; k++) {
    const xc_tensor_t* s = states[k];
    if (!s) continue;
    int64_t want[3] = {r.layout1 ? r.batch : r.dirs, r.layout1 ? r.dirs : r.batch, r.hidden};
    if (s->rank != 3 || s->dims[0] != want[0] || s->dims[1] != want[1] || s->dims[2] != want[2])
      return xc_node_error(n, XC_INVALID_ARGUMENT, "initial state has the wrong shape");
  }
  if (peep && (peep->rank != 2 || peep->dims[0] != r.dirs || peep->dims[1] != 3 * r.hidden))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "P must have shape [%d, %lld]", r.dirs,
                         (long long)(3 * r.hidden));
  int64_t ydims[4], sdims[3];
  if (r.layout1) {
    ydims[0] = r.batch, ydims[1] = r.seq, ydims[2] = r.dirs, ydims[3] = r.hidden;
    sdims[0] = r.batch, sdims[1] = r.dirs, sdims[2] = r.hidden;
  } else {
    ydims[0] = r.seq, ydims[1] = r.dirs, ydims[2] = r.batch, ydims[3] = r.hidden;
    sdims[0] = r.dirs, sdims[1] = r.batch, sdims[2] = r.hidden;
  }
  xc_tensor_t* y = NULL;
  xc_tensor_t* outs_state[2] = {NULL, NULL};
  if (ctx->num_outputs > 0 && n->outputs[0]) {
    XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, 4, ydims, &ctx->outputs[0]));
    y = ctx->outputs[0];
  }
  for (int k = 1; k < ctx->num_outputs && k < 3; k++)
    if (n->outputs[k]) {
      XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, 3, sdims, &ctx->outputs[k]));
      outs_state[k - 1] = ctx->outputs[k];
    }
  /* Work buffers: hidden and cell state, gate pre-activations. */
  size_t hs = (size_t)(r.hidden ? r.hidden : 1), gs = (size_t)(gh ? gh : 1);
  double* h = malloc(sizeof(double) * hs);
  double* cs = malloc(sizeof(double) * hs);
  double* pre = malloc(sizeof(double) * gs);
  double* rec = malloc(sizeof(double) * gs);
  double* hn = malloc(sizeof(double) * hs);
  double* rh = malloc(sizeof(double) * hs); /* GRU: r * h, elementwise */
  if (!h || !cs || !pre || !rec || !hn || !rh) {
    free(h), free(cs), free(pre), free(rec), free(hn), free(rh);
    return xc_error_oom();
  }
  for (int d = 0; d < r.dirs; d++) {
    bool backward = r.reverse_only || d == 1;
    const act_t* act = &r.acts[d * per];
    for (int64_t b = 0; b < r.batch; b++) {
      int64_t len = lens ? xc_tensor_get_i64(lens, b) : r.seq;
      if (len < 0 || len > r.seq) len = len < 0 ? 0 : r.seq;
      for (int64_t j = 0; j < r.hidden; j++) {
        h[j] = h0 ? xc_tensor_get_f64(h0, state_at(&r, d, b, j)) : 0;
        cs[j] = c0 ? xc_tensor_get_f64(c0, state_at(&r, d, b, j)) : 0;
      }
      for (int64_t step = 0; step < len; step++) {
        int64_t t = backward ? len - 1 - step : step;
        /* pre = W x_t + Wb ; rec = R h + Rb */
        for (int64_t gidx = 0; gidx < gh; gidx++) {
          double a = bias ? xc_tensor_get_f64(bias, d * 2 * gh + gidx) : 0;
          for (int64_t i = 0; i < r.input; i++)
            a += xc_tensor_get_f64(w, (d * gh + gidx) * r.input + i) *
                 xc_tensor_get_f64(x, x_at(&r, t, b, i));
          pre[gidx] = a;
          double q = bias ? xc_tensor_get_f64(bias, d * 2 * gh + gh + gidx) : 0;
          /* GRU's hidden gate applies R to (r * h) unless linear_before_reset. */
          if (!(r.kind == KIND_GRU && gidx >= 2 * r.hidden && !r.linear_before_reset))
            for (int64_t k = 0; k < r.hidden; k++)
              q += xc_tensor_get_f64(rw, (d * gh + gidx) * r.hidden + k) * h[k];
          rec[gidx] = q;
        }
        int64_t hd = r.hidden;
        if (r.kind == KIND_RNN) {
          for (int64_t j = 0; j < hd; j++) hn[j] = act_apply(&act[0], clipped(&r, pre[j] + rec[j]));
        } else if (r.kind == KIND_GRU) {
          for (int64_t k = 0; k < hd; k++)
            rh[k] = act_apply(&act[0], clipped(&r, pre[hd + k] + rec[hd + k])) * h[k];
          for (int64_t j = 0; j < hd; j++) {
            double z = act_apply(&act[0], clipped(&r, pre[j] + rec[j]));
            double rg = act_apply(&act[0], clipped(&r, pre[hd + j] + rec[hd + j]));
            double hh;
            if (r.linear_before_reset) {
              hh = pre[2 * hd + j] + rg * rec[2 * hd + j];
            } else {
              double q = bias ? xc_tensor_get_f64(bias, d * 2 * gh + gh + 2 * hd + j) : 0;
              for (int64_t k = 0; k < hd; k++)
                q += xc_tensor_get_f64(rw, (d * gh + 2 * hd + j) * hd + k) * rh[k];
              hh = pre[2 * hd + j] + q;
            }
            hh = act_apply(&act[1], clipped(&r, hh));
            hn[j] = (1 - z) * hh + z * h[j];
          }
        } else {
          for (int64_t j = 0; j < hd; j++) {
            double pi = peep ? xc_tensor_get_f64(peep, d * 3 * hd + j) : 0;
            double po = peep ? xc_tensor_get_f64(peep, d * 3 * hd + hd + j) : 0;
            double pf = peep ? xc_tensor_get_f64(peep, d * 3 * hd + 2 * hd + j) : 0;
            double ig = act_apply(&act[0], clipped(&r, pre[j] + rec[j] + pi * cs[j]));
            double fg =
                act_apply(&act[0], clipped(&r, pre[2 * hd + j] + rec[2 * hd + j] + pf * cs[j]));
            if (r.input_forget) fg = 1 - ig;
            double cg = act_apply(&act[1], clipped(&r, pre[3 * hd + j] + rec[3 * hd + j]));
            double c = fg * cs[j] + ig * cg;
            double og = act_apply(&act[0], clipped(&r, pre[hd + j] + rec[hd + j] + po * c));
            cs[j] = c;
            hn[j] = og * act_apply(&act[2], c);
          }
        }
        memcpy(h, hn, sizeof(double) * (size_t)hd);
        if (y)
          for (int64_t j = 0; j < hd; j++) xc_tensor_set_f64(y, y_at(&r, t, d, b, j), h[j]);
      }
      for (int64_t j = 0; j < r.hidden; j++) {
        if (outs_state[0]) xc_tensor_set_f64(outs_state[0], state_at(&r, d, b, j), h[j]);
        if (outs_state[1]) xc_tensor_set_f64(outs_state[1], state_at(&r, d, b, j), cs[j]);
      }
    }
  }
  free(h), free(cs), free(pre), free(rec), free(hn), free(rh);
  return NULL;
}
