/* Op family 'norm': normalizations (BatchNormalization in inference mode,
 * LayerNormalization, InstanceNormalization, GroupNormalization,
 * RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN), the
 * softmax family (Softmax, LogSoftmax, Hardmax, opset-13 single-axis form)
 * and, from ops_attention.c, Attention and RotaryEmbedding, and from
 * ops_loss.c, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Statistics are computed in double with a two-pass mean/variance, and each
 * result is rounded once into the output dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_attention.h"
#include "ops_loss.h"
#include "xcomp/op.h"

static xc_status_t check_float_input(const xc_node_t* n, int i) {
  return xc_infer_check_input(n, i, XC_DT_FLOAT);
}

static int64_t prod_dims(const int64_t* d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* Checks that `p` (rank r) broadcasts unidirectionally onto dims[0..rank). */
static xc_status_t check_unidirectional(const xc_node_t* n, const xc_value_t* p, int rank,
                                        const xc_dim_t* dims, const char* what) {
  if (p->rank > rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s has rank %d, more than the input's %d", what,
                         p->rank, rank);
  for (int i = 0; i < p->rank; i++) {
    xc_dim_t d = p->dims[i], t = dims[rank - p->rank + i];
    if (!d.sym && !t.sym && d.value != 1 && d.value != t.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "%s (dim %d = %lld) cannot be broadcast to the input (%lld)", what, i,
                           (long long)d.value, (long long)t.value);
  }
  return NULL;
}

/* Element strides to read `t` broadcast onto the shape (rank, dims), or an
 * error when it does not broadcast unidirectionally. */
static xc_status_t unidirectional_strides(const xc_node_t* n, const xc_tensor_t* t, int rank,
                                          const int64_t* dims, const char* what, int64_t* out) {
  if (t->rank > rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s has rank %d, more than %d", what, t->rank,
                         rank);
  for (int i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i], g = dims[rank - t->rank + i];
    if (d != 1 && d != g)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "%s (dim %d = %lld) cannot be broadcast to %lld",
                           what, i, (long long)d, (long long)g);
  }
  xc_broadcast_strides(t, rank, dims, out);
  return NULL;
}

/* Offset into a broadcast tensor of the flat index i of shape dims. */
static int64_t bcast_offset(int rank, const int64_t* dims, const int64_t* strides, int64_t i) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; d--) {
    if (dims[d]) {
      off += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
  }
  return off;
}

/* Checks a per-channel 1-D parameter of size channels. */
static xc_status_t check_channel_param(const xc_node_t* n, int i, xc_dim_t channels,
                                       const char* what) {
  const xc_value_t* v = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!v) return NULL;
  XC_RETURN_IF_ERROR(check_float_input(n, i));
  if (v->rank != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s must be 1-D, got rank %d", what, v->rank);
  if (!v->dims[0].sym && !channels.sym && v->dims[0].value != channels.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s has %lld elements, expected %lld channels",
                         what, (long long)v->dims[0].value, (long long)channels.value);
  return NULL;
}

static xc_status_t check_channel_tensor(const xc_node_t* n, const xc_tensor_t* t, int64_t c,
                                        const char* what) {
  if (t && (t->rank != 1 || t->dims[0] != c))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s must have shape [%lld]", what, (long long)c);
  return NULL;
}

/* ---- BatchNormalization ------------------------------------------------- */

static xc_status_t batchnorm_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  if (xc_node_attr_int(n, "training_mode") != 0)
    return xc_node_error(n, XC_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
  for (int i = 1; i < n->num_outputs; i++)
    if (n->outputs[i])
      return xc_node_error(n, XC_UNSUPPORTED,
                           "running_mean/running_var outputs exist only in training mode");
  const xc_value_t* x = n->inputs[0];
  if (x->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 2 (N, C, ...), got %d",
                         x->rank);
  static const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i <= 4; i++) XC_RETURN_IF_ERROR(check_channel_param(n, i, x->dims[1], names[i]));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t batchnorm_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  if (xc_node_attr_int(node, "training_mode") != 0)
    return xc_node_error(node, XC_UNSUPPORTED, "training_mode=1 is not supported");
  if (x->rank < 2) return xc_node_error(node, XC_INVALID_ARGUMENT, "input needs rank >= 2");
  int64_t c = x->dims[1];
  static const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i <= 4; i++)
    XC_RETURN_IF_ERROR(check_channel_tensor(node, ctx->inputs[i], c, names[i]));
  double eps = xc_node_attr_float(node, "epsilon");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t inner = prod_dims(x->dims, 2, x->rank), nb = x->dims[0];
  for (int64_t ch = 0; ch < c; ch++) {
    double sc = xc_tensor_get_f64(ctx->inputs[1], ch), b = xc_tensor_get_f64(ctx->inputs[2], ch);
    double mean = xc_tensor_get_f64(ctx->inputs[3], ch);
    double var = xc_tensor_get_f64(ctx->inputs[4], ch);
    double k = sc / sqrt(var + eps);
    for (int64_t bi = 0; bi < nb; bi++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t off = (bi * c + ch) * inner + i;
        xc_tensor_set_f64(y, off, (xc_tensor_get_f64(x, off) - mean) * k + b);
      }
  }
  return NULL;
}

/* ---- Layer / RMS normalization ------------------------------------------ */

static bool is_rms(const xc_node_t* n) { return strcmp(n->op_type, "RMSNormalization") == 0; }

static xc_status_t stash_dtype(const xc_node_t* n, xc_dtype_t* out) {
  int64_t st = xc_node_attr_int(n, "stash_type");
  xc_dtype_t t = st >= 0 && st <= INT32_MAX ? xc_dtype_from_onnx((int32_t)st) : XC_DTYPE_UNDEFINED;
  if (t != XC_F32 && t != XC_F64 && t != XC_F16 && t != XC_BF16)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "stash_type %lld is not a float type",
                         (long long)st);
  *out = t;
  return NULL;
}

static xc_status_t layernorm_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  XC_RETURN_IF_ERROR(check_float_input(n, 1));
  const xc_value_t* x = n->inputs[0];
  if (x->rank < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "input must have rank >= 1");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  xc_dtype_t st;
  XC_RETURN_IF_ERROR(stash_dtype(n, &st));
  XC_RETURN_IF_ERROR(check_unidirectional(n, n->inputs[1], x->rank, x->dims, "scale"));
  if (!is_rms(n) && n->num_inputs > 2 && n->inputs[2]) {
    XC_RETURN_IF_ERROR(check_float_input(n, 2));
    XC_RETURN_IF_ERROR(check_unidirectional(n, n->inputs[2], x->rank, x->dims, "bias"));
  }
  XC_RETURN_IF_ERROR(xc_infer_same_as_input(g, n, 0, 0));
  xc_dim_t sd[XC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) sd[i] = i < axis ? x->dims[i] : xc_dim_const(1);
  for (int k = 1; k < n->num_outputs; k++)
    if (n->outputs[k]) XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[k], st, x->rank, sd));
  return NULL;
}

static xc_status_t layernorm_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *scale = ctx->inputs[1];
  const xc_tensor_t* bias = !is_rms(node) && ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  bool rms = is_rms(node);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(node, xc_node_attr_int(node, "axis"), x->rank, &axis));
  xc_dtype_t st;
  XC_RETURN_IF_ERROR(stash_dtype(node, &st));
  int64_t s_strides[XC_MAX_RANK], b_strides[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(unidirectional_strides(node, scale, x->rank, x->dims, "scale", s_strides));
  if (bias)
    XC_RETURN_IF_ERROR(unidirectional_strides(node, bias, x->rank, x->dims, "bias", b_strides));
  double eps = xc_node_attr_float(node, "epsilon");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t sd[XC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) sd[i] = i < axis ? x->dims[i] : 1;
  xc_tensor_t* stats[3] = {NULL, NULL, NULL};
  for (int k = 1; k < ctx->num_outputs && k < 3; k++)
    if (ctx->node->outputs[k]) {
      XC_RETURN_IF_ERROR(xc_tensor_create(st, x->rank, sd, &ctx->outputs[k]));
      stats[k] = ctx->outputs[k];
    }
  int64_t outer = prod_dims(x->dims, 0, axis), inner = prod_dims(x->dims, axis, x->rank);
  for (int64_t o = 0; o < outer; o++) {
    int64_t base = o * inner;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < inner; i++) mean += xc_tensor_get_f64(x, base + i);
      mean = inner ? mean / (double)inner : 0;
    }
    for (int64_t i = 0; i < inner; i++) {
      double d = xc_tensor_get_f64(x, base + i) - mean;
      var += d * d;
    }
    var = inner ? var / (double)inner : 0;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t i = 0; i < inner; i++) {
      int64_t at = base + i;
      double v = (xc_tensor_get_f64(x, at) - mean) * inv;
      v *= xc_tensor_get_f64(scale, bcast_offset(x->rank, x->dims, s_strides, at));
      if (bias) v += xc_tensor_get_f64(bias, bcast_offset(x->rank, x->dims, b_strides, at));
      xc_tensor_set_f64(y, at, v);
    }
    if (stats[1]) xc_tensor_set_f64(stats[1], o, rms ? 0 : mean);
    if (stats[2]) xc_tensor_set_f64(stats[2], o, inv);
  }
  return NULL;
}

/* ---- Instance / Group normalization ------------------------------------- */

static bool is_group_norm(const xc_node_t* n) {
  return strcmp(n->op_type, "GroupNormalization") == 0;
}

static xc_status_t channelnorm_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  const xc_value_t* x = n->inputs[0];
  if (x->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 2 (N, C, ...), got %d",
                         x->rank);
  XC_RETURN_IF_ERROR(check_channel_param(n, 1, x->dims[1], "scale"));
  XC_RETURN_IF_ERROR(check_channel_param(n, 2, x->dims[1], "bias"));
  if (is_group_norm(n)) {
    int64_t groups = xc_node_attr_int(n, "num_groups");
    xc_dtype_t st;
    XC_RETURN_IF_ERROR(stash_dtype(n, &st));
    if (groups < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "num_groups must be >= 1");
    if (!x->dims[1].sym && x->dims[1].value % groups)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "num_groups %lld does not divide %lld channels",
                           (long long)groups, (long long)x->dims[1].value);
  }
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t channelnorm_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *scale = ctx->inputs[1], *bias = ctx->inputs[2];
  if (x->rank < 2) return xc_node_error(node, XC_INVALID_ARGUMENT, "input needs rank >= 2");
  int64_t nb = x->dims[0], c = x->dims[1], inner = prod_dims(x->dims, 2, x->rank);
  XC_RETURN_IF_ERROR(check_channel_tensor(node, scale, c, "scale"));
  XC_RETURN_IF_ERROR(check_channel_tensor(node, bias, c, "bias"));
  int64_t groups = c;
  if (is_group_norm(node)) {
    groups = xc_node_attr_int(node, "num_groups");
    if (groups < 1 || c % groups)
      return xc_node_error(node, XC_INVALID_ARGUMENT,
                           "num_groups %lld does not divide %lld channels", (long long)groups,
                           (long long)c);
  }
  double eps = xc_node_attr_float(node, "epsilon");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t cpg = groups ? c / groups : 0, span = cpg * inner;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t gi = 0; gi < groups; gi++) {
      int64_t base = (b * c + gi * cpg) * inner;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < span; i++) mean += xc_tensor_get_f64(x, base + i);
      mean = span ? mean / (double)span : 0;
      for (int64_t i = 0; i < span; i++) {
        double d = xc_tensor_get_f64(x, base + i) - mean;
        var += d * d;
      }
      var = span ? var / (double)span : 0;
      double inv = 1.0 / sqrt(var + eps);
      for (int64_t i = 0; i < span; i++) {
        int64_t ch = gi * cpg + i / (inner ? inner : 1);
        double v = (xc_tensor_get_f64(x, base + i) - mean) * inv;
        xc_tensor_set_f64(y, base + i,
                          v * xc_tensor_get_f64(scale, ch) + xc_tensor_get_f64(bias, ch));
      }
    }
  return NULL;
}

/* ---- LpNormalization, MeanVarianceNormalization, LRN -------------------- */

static xc_status_t lpnorm_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  int axis;
  int rank = n->inputs[0]->rank;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), rank ? rank : 1, &axis));
  int64_t p = xc_node_attr_int(n, "p");
  if (p != 1 && p != 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "p must be 1 or 2, got %lld", (long long)p);
  return xc_infer_same_as_input(g, n, 0, 0);
}

/* Views a tensor as [outer, n, inner] around `axis`. */
static void split_axis(const xc_tensor_t* x, int axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = prod_dims(x->dims, 0, axis);
  *n = x->rank ? x->dims[axis] : 1;
  *inner = prod_dims(x->dims, axis + 1, x->rank);
}

static xc_status_t lpnorm_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(ctx->node, xc_node_attr_int(ctx->node, "axis"),
                                       x->rank ? x->rank : 1, &axis));
  int64_t p = xc_node_attr_int(ctx->node, "p");
  if (p != 1 && p != 2) return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "p must be 1 or 2");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  int64_t outer, n, inner;
  split_axis(x, axis, &outer, &n, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double norm = 0;
      for (int64_t k = 0; k < n; k++) {
        double v = xc_tensor_get_f64(x, (o * n + k) * inner + in);
        norm += p == 1 ? fabs(v) : v * v;
      }
      if (p == 2) norm = sqrt(norm);
      for (int64_t k = 0; k < n; k++) {
        int64_t at = (o * n + k) * inner + in;
        /* A zero vector stays zero (ONNX test data), not 0/0. */
        xc_tensor_set_f64(ctx->outputs[0], at, norm == 0 ? 0.0 : xc_tensor_get_f64(x, at) / norm);
      }
    }
  return NULL;
}

/* Axes of MeanVarianceNormalization (default {0, 2, 3}) as a mask. */
static xc_status_t mvn_axes(const xc_node_t* n, int rank, bool* mask) {
  int64_t count;
  const int64_t* axes = xc_node_attr_ints(n, "axes", &count);
  static const int64_t dflt[3] = {0, 2, 3};
  if (!axes) {
    axes = dflt;
    count = 3;
  }
  for (int i = 0; i < rank; i++) mask[i] = false;
  for (int64_t i = 0; i < count; i++) {
    int a;
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, axes[i], rank, &a));
    mask[a] = true;
  }
  return NULL;
}

static xc_status_t mvn_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  bool mask[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(mvn_axes(n, n->inputs[0]->rank, mask));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t mvn_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  bool mask[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(mvn_axes(ctx->node, x->rank, mask));
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  /* Group elements by their index on the kept axes. */
  int64_t kept_dims[XC_MAX_RANK], groups = 1, per = 1;
  for (int i = 0; i < x->rank; i++) {
    kept_dims[i] = mask[i] ? 1 : x->dims[i];
    groups *= kept_dims[i];
    if (mask[i]) per *= x->dims[i];
  }
  int64_t kept_strides[XC_MAX_RANK];
  xc_strides(x->rank, kept_dims, kept_strides);
  double* sum = calloc((size_t)(groups ? groups : 1), sizeof(double));
  double* sq = calloc((size_t)(groups ? groups : 1), sizeof(double));
  int64_t* gidx = malloc(sizeof(int64_t) * (size_t)(x->numel ? x->numel : 1));
  if (!sum || !sq || !gidx) {
    free(sum);
    free(sq);
    free(gidx);
    return xc_error_oom();
  }
  int64_t idx[XC_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t gi = 0;
    for (int d = 0; d < x->rank; d++)
      if (!mask[d]) gi += idx[d] * kept_strides[d];
    gidx[i] = gi;
    sum[gi] += xc_tensor_get_f64(x, i);
    xc_index_next(x->rank, x->dims, idx);
  }
  for (int64_t i = 0; i < x->numel; i++) {
    double d = xc_tensor_get_f64(x, i) - sum[gidx[i]] / (double)per;
    sq[gidx[i]] += d * d;
  }
  for (int64_t i = 0; i < x->numel; i++) {
    double mean = sum[gidx[i]] / (double)per, sd = sqrt(sq[gidx[i]] / (double)per);
    xc_tensor_set_f64(ctx->outputs[0], i, (xc_tensor_get_f64(x, i) - mean) / (sd + 1e-9));
  }
  free(sum);
  free(sq);
  free(gidx);
  return NULL;
}

static xc_status_t lrn_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  if (n->inputs[0]->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input needs rank >= 2 (N, C, ...)");
  if (xc_node_attr_int(n, "size") < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "size must be >= 1");
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t lrn_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t size = xc_node_attr_int(node, "size");
  if (x->rank < 2 || size < 1)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "input needs rank >= 2 and size >= 1");
  double alpha = xc_node_attr_float(node, "alpha"), beta = xc_node_attr_float(node, "beta");
  double bias = xc_node_attr_float(node, "bias");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  int64_t nb = x->dims[0], c = x->dims[1], inner = prod_dims(x->dims, 2, x->rank);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo; /* floor and ceil of (size-1)/2 */
  for (int64_t b = 0; b < nb; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < inner; i++) {
        double ss = 0;
        for (int64_t k = ch - lo; k <= ch + hi; k++)
          if (k >= 0 && k < c) {
            double v = xc_tensor_get_f64(x, (b * c + k) * inner + i);
            ss += v * v;
          }
        int64_t at = (b * c + ch) * inner + i;
        double den = pow(bias + alpha / (double)size * ss, beta);
        xc_tensor_set_f64(ctx->outputs[0], at, xc_tensor_get_f64(x, at) / den);
      }
  return NULL;
}

/* ---- Softmax, LogSoftmax, Hardmax --------------------------------------- */

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

static int softmax_kind(const xc_node_t* n) {
  if (!strcmp(n->op_type, "LogSoftmax")) return SM_LOG;
  if (!strcmp(n->op_type, "Hardmax")) return SM_HARD;
  return SM_SOFTMAX;
}

static xc_status_t softmax_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(check_float_input(n, 0));
  int rank = n->inputs[0]->rank, axis;
  if (rank < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "input must have rank >= 1");
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), rank, &axis));
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t softmax_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int kind = softmax_kind(ctx->node), axis;
  if (x->rank < 1)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input must have rank >= 1");
  XC_RETURN_IF_ERROR(
      xc_normalize_axis(ctx->node, xc_node_attr_int(ctx->node, "axis"), x->rank, &axis));
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t outer, n, inner;
  split_axis(x, axis, &outer, &n, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * n * inner + in;
      double mx = n ? xc_tensor_get_f64(x, base) : 0;
      int64_t arg = 0;
      for (int64_t k = 1; k < n; k++) {
        double v = xc_tensor_get_f64(x, base + k * inner);
        if (v > mx) {
          mx = v;
          arg = k;
        }
      }
      if (kind == SM_HARD) {
        for (int64_t k = 0; k < n; k++) xc_tensor_set_f64(y, base + k * inner, k == arg ? 1 : 0);
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < n; k++) sum += exp(xc_tensor_get_f64(x, base + k * inner) - mx);
      double lse = log(sum);
      for (int64_t k = 0; k < n; k++) {
        double d = xc_tensor_get_f64(x, base + k * inner) - mx;
        xc_tensor_set_f64(y, base + k * inner, kind == SM_LOG ? d - lse : exp(d) / sum);
      }
    }
  return NULL;
}

/* ---- table -------------------------------------------------------------- */

static const xc_attr_def_t batchnorm_attrs[] = {
    XC_ATTR_F("epsilon", 1e-5),
    XC_ATTR_F("momentum", 0.9),
    XC_ATTR_I("training_mode", 0),
    XC_ATTR_END,
};
static const xc_attr_def_t layernorm_attrs[] = {
    XC_ATTR_I("axis", -1),
    XC_ATTR_F("epsilon", 1e-5),
    XC_ATTR_I("stash_type", 1),
    XC_ATTR_END,
};
static const xc_attr_def_t instnorm_attrs[] = {
    XC_ATTR_F("epsilon", 1e-5),
    XC_ATTR_END,
};
static const xc_attr_def_t groupnorm_attrs[] = {
    XC_ATTR_F("epsilon", 1e-5),
    XC_ATTR_REQ("num_groups", XC_ATTR_INT),
    XC_ATTR_I("stash_type", 1),
    XC_ATTR_END,
};
static const xc_attr_def_t lpnorm_attrs[] = {
    XC_ATTR_I("axis", -1),
    XC_ATTR_I("p", 2),
    XC_ATTR_END,
};
static const xc_attr_def_t mvn_attrs[] = {
    XC_ATTR_OPT("axes", XC_ATTR_INTS),
    XC_ATTR_END,
};
static const xc_attr_def_t lrn_attrs[] = {
    XC_ATTR_F("alpha", 1e-4),
    XC_ATTR_F("beta", 0.75),
    XC_ATTR_F("bias", 1.0),
    XC_ATTR_REQ("size", XC_ATTR_INT),
    XC_ATTR_END,
};
static const xc_attr_def_t softmax_attrs[] = {
    XC_ATTR_I("axis", -1),
    XC_ATTR_END,
};

const xc_op_def_t xc_ops_norm[] = {
    {"BatchNormalization", "", 5, 5, 1, 3, batchnorm_attrs, XC_DT_FLOAT, batchnorm_infer,
     batchnorm_eval, "Per-channel normalization with running statistics (inference mode)"},
    {"LayerNormalization", "", 2, 3, 1, 3, layernorm_attrs, XC_DT_FLOAT, layernorm_infer,
     layernorm_eval, "Normalization over the trailing dims from axis, with Mean/InvStdDev"},
    {"RMSNormalization", "", 2, 2, 1, 1, layernorm_attrs, XC_DT_FLOAT, layernorm_infer,
     layernorm_eval, "Root-mean-square normalization over the trailing dims from axis"},
    {"InstanceNormalization", "", 3, 3, 1, 1, instnorm_attrs, XC_DT_FLOAT, channelnorm_infer,
     channelnorm_eval, "Per-instance, per-channel normalization over the spatial dims"},
    {"GroupNormalization", "", 3, 3, 1, 1, groupnorm_attrs, XC_DT_FLOAT, channelnorm_infer,
     channelnorm_eval, "Normalization over channel groups, per-channel scale and bias"},
    {"LpNormalization", "", 1, 1, 1, 1, lpnorm_attrs, XC_DT_FLOAT, lpnorm_infer, lpnorm_eval,
     "Divides by the L1 or L2 norm along an axis"},
    {"MeanVarianceNormalization", "", 1, 1, 1, 1, mvn_attrs, XC_DT_FLOAT, mvn_infer, mvn_eval,
     "(X - mean) / std over the given axes"},
    {"LRN", "", 1, 1, 1, 1, lrn_attrs, XC_DT_FLOAT, lrn_infer, lrn_eval,
     "Local response normalization across channels"},
    {"Softmax", "", 1, 1, 1, 1, softmax_attrs, XC_DT_FLOAT, softmax_infer, softmax_eval,
     "Softmax along one axis"},
    {"LogSoftmax", "", 1, 1, 1, 1, softmax_attrs, XC_DT_FLOAT, softmax_infer, softmax_eval,
     "Log of the softmax along one axis"},
    {"Hardmax", "", 1, 1, 1, 1, softmax_attrs, XC_DT_FLOAT, softmax_infer, softmax_eval,
     "One-hot of the first maximum along one axis"},
    {"Attention", "", 3, 7, 1, 4, xc_attention_attrs, XC_DT_FLOAT, xc_attention_infer,
     xc_attention_eval, "Scaled dot-product attention (GQA, masks, causal, KV cache, softcap)"},
    {"RotaryEmbedding", "", 3, 4, 1, 1, xc_rotary_attrs, XC_DT_FLOAT, xc_rotary_infer,
     xc_rotary_eval, "Rotary position embedding (interleaved or half split)"},
    {"NegativeLogLikelihoodLoss", "", 2, 3, 1, 1, xc_loss_attrs, XC_DT_FLOAT, xc_loss_infer,
     xc_loss_eval, "Weighted negative log-likelihood of the target classes"},
    {"SoftmaxCrossEntropyLoss", "", 2, 3, 1, 2, xc_loss_attrs, XC_DT_FLOAT, xc_loss_infer,
     xc_loss_eval, "Cross entropy of softmax(scores) against class labels, optional log_prob"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
