/* Attention (opset 23) and RotaryEmbedding (opset 23) reference ops.
 *
 * Attention: Q, K, V in 3-D [batch, seq, heads*head_size] or 4-D
 * [batch, heads, seq, head_size] layout; grouped-query attention when
 * q_num_heads is a multiple of kv_num_heads; boolean or additive attn_mask
 * (broadcast to [batch, q_heads, q_seq, total_seq]; a shorter last dim is
 * padded with "masked"); causal masking aligned to the end of the KV cache
 * (query i sees key j iff j <= i + past_len); past_key/past_value
 * concatenated into present_key/present_value; softcap; the four
 * qk_matmul_output modes; nonpad_kv_seqlen (opset 24: keys past each
 * batch's valid length are masked and causal masking aligns to them). Rows
 * whose keys are all masked produce zeros.
 * softmax_precision is accepted and ignored: everything is computed in
 * double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_attention.h"

const xc_attr_def_t xc_attention_attrs[] = {
    XC_ATTR_I("is_causal", 0),
    XC_ATTR_OPT("kv_num_heads", XC_ATTR_INT),
    XC_ATTR_OPT("q_num_heads", XC_ATTR_INT),
    XC_ATTR_I("qk_matmul_output_mode", 0),
    XC_ATTR_OPT("scale", XC_ATTR_FLOAT),
    XC_ATTR_F("softcap", 0.0),
    XC_ATTR_OPT("softmax_precision", XC_ATTR_INT),
    XC_ATTR_END,
};

const xc_attr_def_t xc_rotary_attrs[] = {
    XC_ATTR_I("interleaved", 0),
    XC_ATTR_I("num_heads", 0),
    XC_ATTR_I("rotary_embedding_dim", 0),
    XC_ATTR_END,
};

static const xc_value_t* opt_input(const xc_node_t* n, int i) {
  return i < n->num_inputs ? n->inputs[i] : NULL;
}

static xc_status_t static_eq(const xc_node_t* n, xc_dim_t a, xc_dim_t b, const char* what) {
  if (!a.sym && !b.sym && a.value != b.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s (%lld vs %lld)", what, (long long)a.value,
                         (long long)b.value);
  return NULL;
}

/* Splits a hidden dim into heads (symbolic when needed). */
static xc_status_t head_size_of(xc_graph_t* g, const xc_node_t* n, xc_dim_t hidden, int64_t heads,
                                const char* what, xc_dim_t* out) {
  if (!hidden.sym && hidden.value % heads)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "%s hidden size %lld is not divisible by %lld heads", what,
                         (long long)hidden.value, (long long)heads);
  *out = xc_dim_floordiv(g, hidden, xc_dim_const(heads));
  return NULL;
}

static xc_status_t num_heads_attr(const xc_node_t* n, const char* name, int64_t* out) {
  if (!xc_node_has_attr(n, name))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "3-D inputs need the '%s' attribute", name);
  *out = xc_node_attr_int(n, name);
  if (*out < 1 || *out > INT32_MAX)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'%s' must be positive", name);
  return NULL;
}

xc_status_t xc_attention_infer(xc_graph_t* g, xc_node_t* n) {
  for (int i = 0; i < 3; i++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, XC_DT_FLOAT));
    if (n->inputs[i]->dtype != n->inputs[0]->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "Q, K and V must have the same dtype");
  }
  const xc_value_t *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2];
  const xc_value_t *mask = opt_input(n, 3), *pk = opt_input(n, 4), *pv = opt_input(n, 5);
  if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "Q, K, V must all be 3-D or all 4-D");
  int64_t mode = xc_node_attr_int(n, "qk_matmul_output_mode");
  if (mode < 0 || mode > 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "qk_matmul_output_mode %lld is not 0..3",
                         (long long)mode);
  xc_dim_t b = q->dims[0], sq, skv, d, dk, dv, hq, hkv;
  XC_RETURN_IF_ERROR(static_eq(n, b, k->dims[0], "batch of Q and K differs"));
  XC_RETURN_IF_ERROR(static_eq(n, b, v->dims[0], "batch of Q and V differs"));
  if (q->rank == 3) {
    int64_t nq = 0, nkv = 0;
    XC_RETURN_IF_ERROR(num_heads_attr(n, "q_num_heads", &nq));
    XC_RETURN_IF_ERROR(num_heads_attr(n, "kv_num_heads", &nkv));
    hq = xc_dim_const(nq);
    hkv = xc_dim_const(nkv);
    sq = q->dims[1];
    skv = k->dims[1];
    XC_RETURN_IF_ERROR(head_size_of(g, n, q->dims[2], nq, "Q", &d));
    XC_RETURN_IF_ERROR(head_size_of(g, n, k->dims[2], nkv, "K", &dk));
    XC_RETURN_IF_ERROR(head_size_of(g, n, v->dims[2], nkv, "V", &dv));
  } else {
    hq = q->dims[1];
    hkv = k->dims[1];
    XC_RETURN_IF_ERROR(static_eq(n, hkv, v->dims[1], "K and V head counts differ"));
    sq = q->dims[2];
    skv = k->dims[2];
    d = q->dims[3];
    dk = k->dims[3];
    dv = v->dims[3];
  }
  XC_RETURN_IF_ERROR(static_eq(n, d, dk, "head size of Q and K differs"));
  XC_RETURN_IF_ERROR(static_eq(n, skv, q->rank == 3 ? v->dims[1] : v->dims[2],
                               "sequence length of K and V differs"));
  if (!hq.sym && !hkv.sym && (hkv.value < 1 || hq.value % hkv.value))
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "q_num_heads %lld is not a multiple of kv_num_heads %lld",
                         (long long)hq.value, (long long)hkv.value);
  const xc_value_t* nonpad = opt_input(n, 6);
  if (nonpad) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 6, XC_DT(XC_I64) | XC_DT(XC_I32)));
    if (pk)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "nonpad_kv_seqlen cannot be combined with past_key");
    if (nonpad->rank != 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "nonpad_kv_seqlen must be 1-D [batch]");
    XC_RETURN_IF_ERROR(
        static_eq(n, nonpad->dims[0], b, "nonpad_kv_seqlen length differs from batch"));
  }
  xc_dim_t total = skv;
  if ((pk != NULL) != (pv != NULL))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "past_key and past_value must come together");
  if (pk) {
    if (pk->rank != 4 || pv->rank != 4)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "past_key/past_value must be 4-D");
    if (pk->dtype != q->dtype || pv->dtype != q->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "past_key/past_value dtype differs from Q");
    XC_RETURN_IF_ERROR(static_eq(n, pk->dims[1], hkv, "past_key heads"));
    XC_RETURN_IF_ERROR(static_eq(n, pk->dims[3], d, "past_key head size"));
    XC_RETURN_IF_ERROR(static_eq(n, pv->dims[3], dv, "past_value head size"));
    XC_RETURN_IF_ERROR(static_eq(n, pk->dims[2], pv->dims[2], "past_key/past_value lengths"));
    total = xc_dim_add(g, pk->dims[2], skv);
  }
  if (mask) {
    if (mask->dtype != XC_BOOL && !xc_dtype_is_float(mask->dtype))
      return xc_node_error(n, XC_INVALID_ARGUMENT, "attn_mask must be bool or float, got %s",
                           xc_dtype_name(mask->dtype));
    if (mask->rank < 1 || mask->rank > 4)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "attn_mask must have rank 1 to 4");
    xc_dim_t target[4] = {b, hq, sq, total};
    for (int i = 0; i < mask->rank - 1; i++) {
      xc_dim_t md = mask->dims[i], t = target[4 - mask->rank + i];
      if (!md.sym && md.value != 1) XC_RETURN_IF_ERROR(static_eq(n, md, t, "attn_mask shape"));
    }
    xc_dim_t last = mask->dims[mask->rank - 1];
    if (!last.sym && !total.sym && last.value > total.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "attn_mask last dim %lld exceeds the total sequence length %lld",
                           (long long)last.value, (long long)total.value);
  }
  xc_dim_t y[4];
  if (q->rank == 3) {
    y[0] = b;
    y[1] = sq;
    y[2] = xc_dim_mul(g, hq, dv);
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], q->dtype, 3, y));
  } else {
    y[0] = b;
    y[1] = hq;
    y[2] = sq;
    y[3] = dv;
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[0], q->dtype, 4, y));
  }
  xc_dim_t pkd[4] = {b, hkv, total, d}, pvd[4] = {b, hkv, total, dv}, qkd[4] = {b, hq, sq, total};
  if (n->num_outputs > 1 && n->outputs[1])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[1], q->dtype, 4, pkd));
  if (n->num_outputs > 2 && n->outputs[2])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[2], q->dtype, 4, pvd));
  if (n->num_outputs > 3 && n->outputs[3])
    XC_RETURN_IF_ERROR(xc_value_set_type(g, n->outputs[3], q->dtype, 4, qkd));
  return NULL;
}

typedef struct {
  bool is3d;
  int64_t b, hq, hkv, sq, skv, past, total, d, dv;
} attn_geom_t;

/* Flat offset of (batch, head, pos, i) in a Q/K/V tensor of the node's
 * layout, with `heads` heads of `size` elements and `seq` positions. */
static int64_t qkv_offset(bool is3d, int64_t heads, int64_t seq, int64_t size, int64_t bi,
                          int64_t h, int64_t s, int64_t i) {
  if (is3d) return (bi * seq + s) * heads * size + h * size + i;
  return ((bi * heads + h) * seq + s) * size + i;
}

static xc_status_t attention_geometry(const xc_eval_ctx_t* ctx, attn_geom_t* gm) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *q = ctx->inputs[0], *k = ctx->inputs[1], *v = ctx->inputs[2];
  const xc_tensor_t* pk = ctx->num_inputs > 4 ? ctx->inputs[4] : NULL;
  const xc_tensor_t* pv = ctx->num_inputs > 5 ? ctx->inputs[5] : NULL;
  memset(gm, 0, sizeof *gm);
  if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "Q, K, V must all be 3-D or all 4-D");
  gm->is3d = q->rank == 3;
  gm->b = q->dims[0];
  if (gm->is3d) {
    XC_RETURN_IF_ERROR(num_heads_attr(n, "q_num_heads", &gm->hq));
    XC_RETURN_IF_ERROR(num_heads_attr(n, "kv_num_heads", &gm->hkv));
    if (q->dims[2] % gm->hq || k->dims[2] % gm->hkv || v->dims[2] % gm->hkv)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "hidden sizes are not divisible by the heads");
    gm->sq = q->dims[1];
    gm->skv = k->dims[1];
    gm->d = q->dims[2] / gm->hq;
    if (k->dims[2] / gm->hkv != gm->d || v->dims[1] != gm->skv)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "K does not match Q's head size or V's length");
    gm->dv = v->dims[2] / gm->hkv;
  } else {
    gm->hq = q->dims[1];
    gm->hkv = k->dims[1];
    gm->sq = q->dims[2];
    gm->skv = k->dims[2];
    gm->d = q->dims[3];
    gm->dv = v->dims[3];
    if (k->dims[3] != gm->d || v->dims[1] != gm->hkv || v->dims[2] != gm->skv)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "K/V shapes do not match Q");
  }
  if (k->dims[0] != gm->b || v->dims[0] != gm->b)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "batch sizes of Q, K, V differ");
  if (gm->hkv < 1 || gm->hq % gm->hkv)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "q heads %lld not a multiple of kv heads %lld",
                         (long long)gm->hq, (long long)gm->hkv);
  if ((pk != NULL) != (pv != NULL))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "past_key and past_value must come together");
  if (pk) {
    if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != gm->b || pk->dims[1] != gm->hkv ||
        pk->dims[3] != gm->d || pv->dims[0] != gm->b || pv->dims[1] != gm->hkv ||
        pv->dims[2] != pk->dims[2] || pv->dims[3] != gm->dv)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "past_key/past_value shapes do not match");
    gm->past = pk->dims[2];
  }
  gm->total = gm->past + gm->skv;
  return NULL;
}

/* K or V element at cache position t (past first, then the new keys). */
static double kv_at(const attn_geom_t* gm, const xc_tensor_t* past, const xc_tensor_t* cur,
                    int64_t size, int64_t bi, int64_t h, int64_t t, int64_t i) {
  if (t < gm->past) return xc_tensor_get_f64(past, ((bi * gm->hkv + h) * gm->past + t) * size + i);
  return xc_tensor_get_f64(cur,
                           qkv_offset(gm->is3d, gm->hkv, gm->skv, size, bi, h, t - gm->past, i));
}

/* Additive bias of the mask at (b, h, i, j): 0, -inf, or the float value. */
static double mask_bias(const xc_tensor_t* m, const int64_t* strides, int64_t bi, int64_t h,
                        int64_t i, int64_t j) {
  int64_t last = m->dims[m->rank - 1];
  if (j >= last) return -INFINITY;
  int64_t idx[4] = {bi, h, i, j};
  int64_t off = 0;
  for (int a = 0; a < 4; a++) off += idx[a] * strides[a];
  double v = xc_tensor_get_f64(m, off);
  if (m->dtype == XC_BOOL) return v != 0 ? 0.0 : -INFINITY;
  return v;
}

xc_status_t xc_attention_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *q = ctx->inputs[0], *k = ctx->inputs[1], *v = ctx->inputs[2];
  const xc_tensor_t* mask = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  const xc_tensor_t* pk = ctx->num_inputs > 4 ? ctx->inputs[4] : NULL;
  const xc_tensor_t* pv = ctx->num_inputs > 5 ? ctx->inputs[5] : NULL;
  const xc_tensor_t* nonpad = ctx->num_inputs > 6 ? ctx->inputs[6] : NULL;
  attn_geom_t gm;
  XC_RETURN_IF_ERROR(attention_geometry(ctx, &gm));
  if (nonpad && (pk || nonpad->rank != 1 || nonpad->dims[0] != gm.b))
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "nonpad_kv_seqlen must be [batch] and cannot be combined with past_key");
  int64_t mode = xc_node_attr_int(n, "qk_matmul_output_mode");
  if (mode < 0 || mode > 3)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "qk_matmul_output_mode must be 0..3");
  bool causal = xc_node_attr_int(n, "is_causal") != 0;
  double softcap = xc_node_attr_float(n, "softcap");
  double scale =
      xc_node_has_attr(n, "scale") ? xc_node_attr_float(n, "scale") : 1.0 / sqrt((double)gm.d);
  /* Mask strides against [b, hq, sq, total] (last dim read as-is). */
  int64_t ms[4] = {0, 0, 0, 0};
  if (mask) {
    if (mask->rank < 1 || mask->rank > 4)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "attn_mask must have rank 1 to 4");
    int64_t target[4] = {gm.b, gm.hq, gm.sq, gm.total}, st[4];
    xc_strides(mask->rank, mask->dims, st);
    for (int i = 0; i < mask->rank; i++) {
      int a = 4 - mask->rank + i;
      int64_t md = mask->dims[i];
      if (a == 3) {
        if (md > gm.total)
          return xc_node_error(n, XC_INVALID_ARGUMENT, "attn_mask is longer than the keys");
        ms[a] = 1;
      } else if (md != 1 && md != target[a]) {
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "attn_mask dim %d (%lld) does not broadcast to %lld", i, (long long)md,
                             (long long)target[a]);
      } else {
        ms[a] = md == 1 ? 0 : st[i];
      }
    }
  }
  /* Outputs. */
  int64_t yd[4];
  int yr;
  if (gm.is3d) {
    yd[0] = gm.b, yd[1] = gm.sq, yd[2] = gm.hq * gm.dv, yr = 3;
  } else {
    yd[0] = gm.b, yd[1] = gm.hq, yd[2] = gm.sq, yd[3] = gm.dv, yr = 4;
  }
  XC_RETURN_IF_ERROR(xc_tensor_create(q->dtype, yr, yd, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  xc_tensor_t *present_k = NULL, *present_v = NULL, *qk_out = NULL;
  if (ctx->num_outputs > 1 && n->outputs[1]) {
    int64_t dd[4] = {gm.b, gm.hkv, gm.total, gm.d};
    XC_RETURN_IF_ERROR(xc_tensor_create(q->dtype, 4, dd, &ctx->outputs[1]));
    present_k = ctx->outputs[1];
  }
  if (ctx->num_outputs > 2 && n->outputs[2]) {
    int64_t dd[4] = {gm.b, gm.hkv, gm.total, gm.dv};
    XC_RETURN_IF_ERROR(xc_tensor_create(q->dtype, 4, dd, &ctx->outputs[2]));
    present_v = ctx->outputs[2];
  }
  if (ctx->num_outputs > 3 && n->outputs[3]) {
    int64_t dd[4] = {gm.b, gm.hq, gm.sq, gm.total};
    XC_RETURN_IF_ERROR(xc_tensor_create(q->dtype, 4, dd, &ctx->outputs[3]));
    qk_out = ctx->outputs[3];
  }
  for (int64_t bi = 0; bi < gm.b; bi++)
    for (int64_t h = 0; h < gm.hkv; h++)
      for (int64_t t = 0; t < gm.total; t++) {
        int64_t row = (bi * gm.hkv + h) * gm.total + t;
        if (present_k)
          for (int64_t i = 0; i < gm.d; i++)
            xc_tensor_set_f64(present_k, row * gm.d + i, kv_at(&gm, pk, k, gm.d, bi, h, t, i));
        if (present_v)
          for (int64_t i = 0; i < gm.dv; i++)
            xc_tensor_set_f64(present_v, row * gm.dv + i, kv_at(&gm, pv, v, gm.dv, bi, h, t, i));
      }
  double* p = malloc(sizeof(double) * (size_t)(gm.total ? gm.total : 1));
  if (!p) return xc_error_oom();
  int64_t group = gm.hq / gm.hkv;
  for (int64_t bi = 0; bi < gm.b; bi++)
    for (int64_t h = 0; h < gm.hq; h++) {
      int64_t hk = h / group;
      /* Keys at or past valid_len are padding; causal alignment is to the
       * end of the valid keys. */
      int64_t valid_len = nonpad ? xc_tensor_get_i64(nonpad, bi) : gm.total;
      int64_t offset = nonpad ? valid_len - gm.sq : gm.past;
      for (int64_t i = 0; i < gm.sq; i++) {
        bool any = false;
        for (int64_t j = 0; j < gm.total; j++) {
          double bj = 0;
          if (mask) bj += mask_bias(mask, ms, bi, h, i, j);
          if (causal && j > i + offset) bj = -INFINITY;
          if (j >= valid_len) bj = -INFINITY;
          if (bj != -INFINITY) any = true;
          double s = 0;
          for (int64_t c = 0; c < gm.d; c++)
            s += xc_tensor_get_f64(q, qkv_offset(gm.is3d, gm.hq, gm.sq, gm.d, bi, h, i, c)) *
                 kv_at(&gm, pk, k, gm.d, bi, hk, j, c);
          s *= scale;
          int64_t qk_at = ((bi * gm.hq + h) * gm.sq + i) * gm.total + j;
          if (qk_out && mode == 0) xc_tensor_set_f64(qk_out, qk_at, s);
          s += bj;
          if (qk_out && mode == 1) xc_tensor_set_f64(qk_out, qk_at, s);
          if (softcap > 0) s = softcap * tanh(s / softcap);
          if (qk_out && mode == 2) xc_tensor_set_f64(qk_out, qk_at, s);
          p[j] = s;
        }
        /* Softmax over the keys; a row with every key masked is all zeros. */
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < gm.total; j++)
          if (p[j] > mx) mx = p[j];
        for (int64_t j = 0; j < gm.total; j++) {
          p[j] = (!any || mx == -INFINITY) ? 0.0 : exp(p[j] - mx);
          sum += p[j];
        }
        for (int64_t j = 0; j < gm.total; j++) {
          if (sum > 0) p[j] /= sum;
          if (qk_out && mode == 3)
            xc_tensor_set_f64(qk_out, ((bi * gm.hq + h) * gm.sq + i) * gm.total + j, p[j]);
        }
        for (int64_t c = 0; c < gm.dv; c++) {
          double acc = 0;
          for (int64_t j = 0; j < gm.total; j++)
            if (p[j] != 0) acc += p[j] * kv_at(&gm, pv, v, gm.dv, bi, hk, j, c);
          xc_tensor_set_f64(y, qkv_offset(gm.is3d, gm.hq, gm.sq, gm.dv, bi, h, i, c), acc);
        }
      }
    }
  free(p);
  return NULL;
}

/* ---- RotaryEmbedding ----------------------------------------------------- */

xc_status_t xc_rotary_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_FLOAT));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT_FLOAT));
  const xc_value_t *x = n->inputs[0], *cs = n->inputs[1], *sn = n->inputs[2];
  const xc_value_t* pos = opt_input(n, 3);
  if (cs->dtype != x->dtype || sn->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cos/sin caches must have the input's dtype");
  if (x->rank != 3 && x->rank != 4)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be 3-D or 4-D, got rank %d", x->rank);
  int64_t heads = xc_node_attr_int(n, "num_heads");
  if (x->rank == 3 && heads < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "3-D input needs num_heads");
  xc_dim_t head_size =
      x->rank == 4 ? x->dims[3] : xc_dim_floordiv(g, x->dims[2], xc_dim_const(heads));
  if (x->rank == 3 && !x->dims[2].sym && x->dims[2].value % heads)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "hidden size is not divisible by num_heads");
  int64_t rd = xc_node_attr_int(n, "rotary_embedding_dim");
  if (rd < 0 || rd % 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "rotary_embedding_dim must be even and >= 0");
  if (!head_size.sym) {
    if (rd > head_size.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "rotary_embedding_dim exceeds the head size");
    if (rd == 0 && head_size.value % 2)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "head size must be even");
  }
  xc_dim_t half = rd ? xc_dim_const(rd / 2) : xc_dim_floordiv(g, head_size, xc_dim_const(2));
  int want_rank = pos ? 2 : 3;
  if (cs->rank != want_rank || sn->rank != want_rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cos/sin caches must be %d-D %s position_ids",
                         want_rank, pos ? "with" : "without");
  for (int i = 0; i < want_rank; i++)
    XC_RETURN_IF_ERROR(static_eq(n, cs->dims[i], sn->dims[i], "cos and sin cache shapes differ"));
  XC_RETURN_IF_ERROR(static_eq(n, cs->dims[want_rank - 1], half,
                               "cache last dim differs from rotary_embedding_dim/2"));
  xc_dim_t seq = x->rank == 4 ? x->dims[2] : x->dims[1];
  if (pos) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 3, XC_DT(XC_I64) | XC_DT(XC_I32)));
    if (pos->rank != 2)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "position_ids must be 2-D [batch, seq]");
    XC_RETURN_IF_ERROR(static_eq(n, pos->dims[0], x->dims[0], "position_ids batch"));
    XC_RETURN_IF_ERROR(static_eq(n, pos->dims[1], seq, "position_ids sequence length"));
  } else {
    XC_RETURN_IF_ERROR(static_eq(n, cs->dims[0], x->dims[0], "cache batch"));
    XC_RETURN_IF_ERROR(static_eq(n, cs->dims[1], seq, "cache sequence length"));
  }
  return xc_infer_same_as_input(g, n, 0, 0);
}

xc_status_t xc_rotary_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *cs = ctx->inputs[1], *sn = ctx->inputs[2];
  const xc_tensor_t* pos = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  if (x->rank != 3 && x->rank != 4)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be 3-D or 4-D");
  bool interleaved = xc_node_attr_int(n, "interleaved") != 0;
  int64_t b = x->dims[0], heads, seq, d;
  if (x->rank == 4) {
    heads = x->dims[1];
    seq = x->dims[2];
    d = x->dims[3];
  } else {
    heads = xc_node_attr_int(n, "num_heads");
    if (heads < 1 || x->dims[2] % heads)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "num_heads does not divide the hidden size");
    seq = x->dims[1];
    d = x->dims[2] / heads;
  }
  int64_t rd = xc_node_attr_int(n, "rotary_embedding_dim");
  if (rd == 0) rd = d;
  if (rd < 0 || rd % 2 || rd > d)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "bad rotary_embedding_dim %lld for head size %lld",
                         (long long)rd, (long long)d);
  int64_t half = rd / 2;
  int want_rank = pos ? 2 : 3;
  if (cs->rank != want_rank || sn->rank != want_rank || cs->dims[want_rank - 1] != half ||
      sn->dims[want_rank - 1] != half || cs->dims[0] != sn->dims[0])
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cos/sin cache shapes do not match");
  if (pos && (pos->rank != 2 || pos->dims[0] != b || pos->dims[1] != seq))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "position_ids must have shape [batch, seq]");
  if (!pos && (cs->dims[0] != b || cs->dims[1] != seq || sn->dims[1] != seq))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "caches must have shape [batch, seq, dim/2]");
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank, x->dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  bool is3d = x->rank == 3;
  for (int64_t bi = 0; bi < b; bi++)
    for (int64_t s = 0; s < seq; s++) {
      int64_t row;
      if (pos) {
        int64_t pidx = xc_tensor_get_i64(pos, bi * seq + s);
        if (pidx < 0 || pidx >= cs->dims[0])
          return xc_node_error(n, XC_OUT_OF_RANGE, "position id %lld is outside the cache (%lld)",
                               (long long)pidx, (long long)cs->dims[0]);
        row = pidx * half;
      } else {
        row = (bi * seq + s) * half;
      }
      for (int64_t h = 0; h < heads; h++) {
        int64_t base = qkv_offset(is3d, heads, seq, d, bi, h, s, 0);
        for (int64_t i = 0; i < half; i++) {
          double c = xc_tensor_get_f64(cs, row + i), sv = xc_tensor_get_f64(sn, row + i);
          int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          double x1 = xc_tensor_get_f64(x, base + i1), x2 = xc_tensor_get_f64(x, base + i2);
          xc_tensor_set_f64(y, base + i1, c * x1 - sv * x2);
          xc_tensor_set_f64(y, base + i2, sv * x1 + c * x2);
        }
        for (int64_t i = rd; i < d; i++)
          xc_tensor_set_f64(y, base + i, xc_tensor_get_f64(x, base + i));
      }
    }
  return NULL;
}
