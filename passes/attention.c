/* Scaled-dot-product attention: finds the subgraph exporters write,
 *
 *   P = Softmax(Mask(Scale(MatMul(Q', K^T))), axis = -1)   [NaN guard on P]
 *   Y = MatMul(P, V')
 *
 * and replaces it by one opset-23 Attention node on 4-D [B, H, S, D] inputs.
 * Batched 3-D attention on [N, S, D] (N = batch*heads, as bmm-based
 * exporters write it) becomes Attention on [N, 1, S, D] views: Unsqueeze of
 * axis 1 on Q, K, V (and a 3-D mask), Squeeze of the result.
 * Scale is any chain of Mul/Div by constant scalars on the scores, on Q and
 * on K (gpt2 scales Q and K by sqrt(scale) each); their product becomes the
 * `scale` attribute. K^T may be Transpose(K) (any perm that is K's layout
 * with the last two dims swapped, a new Transpose restores [B, H, S, D]) or
 * Reshape(Transpose(Reshape(K)), perm [0, 2, 1]) that merges and splits the
 * leading dims. K and V heads repeated for grouped-query attention
 * (Reshape(Expand|Tile(Unsqueeze(K))) or a broadcast of one head) are
 * replaced by the un-repeated tensors. The mask decision (attn_mask,
 * is_causal, and when the NaN guard may go) is in attention_mask.c.
 *
 * Every intermediate value of the chain must have no other use, so the
 * rewrite never duplicates work; the Q/K/V reshapes and transposes stay as
 * separate nodes. */
#include <math.h>
#include <string.h>

#include "attention_mask.h"
#include "attention_util.h"
#include "xcomp/passes.h"

#define MAX_ORIGINS 32

typedef struct match {
  xc_graph_t* g;
  double scale;
  int num_origins;
  xc_node_t* origins[MAX_ORIGINS];
} match_t;

static void note(match_t* mt, xc_node_t* n) {
  if (mt->num_origins < MAX_ORIGINS) mt->origins[mt->num_origins++] = n;
}

/* Peels Mul/Div by a constant scalar off v, multiplying mt->scale. With
 * `own`, every peeled value must be used only by the next node. */
static xc_value_t* peel_scale(match_t* mt, xc_value_t* v, bool own) {
  for (int step = 0; step < 8 && v; step++) {
    xc_node_t* p = v->producer;
    bool mul = xc_attn_is_op(p, "Mul"), div = xc_attn_is_op(p, "Div");
    if (!mul && !div) break;
    double c;
    xc_value_t* x;
    if (xc_attn_const_scalar(p->inputs[1], &c))
      x = p->inputs[0];
    else if (mul && xc_attn_const_scalar(p->inputs[0], &c))
      x = p->inputs[1];
    else
      break;
    if (div) c = 1.0 / c;
    if (!isfinite(c) || c == 0 || !xc_attn_same_type(x, v)) break;
    if (own && !xc_attn_single_use(mt->g, v)) break;
    mt->scale *= c;
    note(mt, p);
    v = x;
  }
  return v;
}

/* v = Scale(MatMul(a, b)) with operands of v's rank; *out the MatMul. */
static bool find_scores(match_t* mt, xc_value_t* v, xc_node_t** out) {
  match_t trial = *mt;
  xc_value_t* s = peel_scale(&trial, v, true);
  xc_node_t* mm = s ? xc_attn_producer(s, "MatMul") : NULL;
  if (!mm || s->rank != v->rank || mm->inputs[0]->rank != v->rank ||
      mm->inputs[1]->rank != v->rank)
    return false;
  if (!xc_attn_single_use(mt->g, s)) return false;
  *mt = trial;
  note(mt, mm);
  *out = mm;
  return true;
}

static bool dims_equal(const xc_value_t* a, int ia, const xc_value_t* b, int ib) {
  return xc_dim_equal(a->dims[ia], b->dims[ib]);
}

/* e [B, Hkv, rep, S, D] = Expand|Tile(Unsqueeze|Reshape(K)) of a [B, Hkv, S,
 * D] tensor K, the heads repeated for grouped-query attention: returns K
 * (NULL: not that) and notes the two nodes. */
static xc_value_t* peel_repeat5(match_t* mt, xc_value_t* e) {
  xc_node_t* ep = xc_attn_producer(e, "Expand");
  if (!ep) ep = xc_attn_producer(e, "Tile");
  xc_value_t* u = ep ? ep->inputs[0] : NULL;
  if (!u || e->rank != 5 || u->rank != 5 || xc_attn_static_dim(u->dims[2]) != 1) return NULL;
  int64_t rep = xc_attn_static_dim(e->dims[2]);
  if (rep < 1 || !dims_equal(e, 0, u, 0) || !dims_equal(e, 1, u, 1) || !dims_equal(e, 3, u, 3) ||
      !dims_equal(e, 4, u, 4))
    return NULL;
  xc_node_t* up = xc_attn_producer(u, "Unsqueeze");
  if (!up) up = xc_attn_producer(u, "Reshape");
  xc_value_t* k = up ? up->inputs[0] : NULL;
  if (!k || k->rank != 4 || !dims_equal(k, 0, u, 0) || !dims_equal(k, 1, u, 1) || !dims_equal(k, 2, u, 3) ||
      !dims_equal(k, 3, u, 4))
    return NULL;
  note(mt, ep);
  note(mt, up);
  return k;
}

/* x [B, H, S, D] built by repeating the heads of a [B, Hkv, S, D] tensor
 * for grouped-query attention: returns that tensor (or x itself). */
static xc_value_t* peel_repeat(match_t* mt, xc_value_t* x) {
  if (x->rank != 4) return x;
  xc_node_t* r = xc_attn_producer(x, "Reshape");
  if (r && r->inputs[0]->rank == 5) {
    xc_value_t* e = r->inputs[0];
    if (!dims_equal(x, 0, e, 0) || !xc_dim_equal(x->dims[1], xc_dim_mul(mt->g, e->dims[1], e->dims[2])) ||
        !dims_equal(x, 2, e, 3) || !dims_equal(x, 3, e, 4))
      return x;
    match_t trial = *mt;
    xc_value_t* k = peel_repeat5(&trial, e);
    if (!k) return x;
    *mt = trial;
    note(mt, r);
    return k;
  }
  /* One shared head broadcast to all: Expand or Tile of [B, 1, S, D]. */
  xc_node_t* ep = xc_attn_producer(x, "Expand");
  if (!ep) ep = xc_attn_producer(x, "Tile");
  xc_value_t* k = ep ? ep->inputs[0] : NULL;
  if (k && k->rank == 4 && xc_attn_static_dim(k->dims[1]) == 1 && dims_equal(k, 0, x, 0) &&
      dims_equal(k, 2, x, 2) && dims_equal(k, 3, x, 3)) {
    note(mt, ep);
    return k;
  }
  return x;
}

/* The key K ([B, H, S, D], or [N, S, D] for rank 3) whose last-two-dims
 * transpose is kt. When K exists only as another layout, *src and perm say
 * which Transpose makes it. *repeated: the transpose merged K's heads
 * repeated for grouped-query attention, and *src is the un-repeated K. */
static bool match_key(match_t* mt, xc_value_t* kt, xc_value_t** src, int64_t perm[4],
                      bool* need_transpose, bool* repeated) {
  *need_transpose = false;
  *repeated = false;
  int r = kt->rank;
  kt = peel_scale(mt, kt, false);
  xc_node_t* t = xc_attn_producer(kt, "Transpose");
  if (t && t->inputs[0]->rank == r && (r == 3 || r == 4)) {
    int64_t c;
    const int64_t* p = xc_node_attr_ints(t, "perm", &c);
    int64_t q[4];
    for (int i = 0; i < r; i++) q[i] = c == r ? p[i] : r - 1 - i;
    int64_t last = q[r - 1];
    q[r - 1] = q[r - 2];
    q[r - 2] = last;
    note(mt, t);
    *src = peel_scale(mt, t->inputs[0], false);
    for (int i = 0; i < r; i++) {
      perm[i] = q[i];
      if (q[i] != i) *need_transpose = true;
    }
    return true;
  }
  /* Reshape(Transpose(Reshape(K, [N, S, D]), [0, 2, 1]), [B, H, D, S]). */
  xc_node_t* r2 = xc_attn_producer(kt, "Reshape");
  xc_node_t* t3 = r2 ? xc_attn_producer(r2->inputs[0], "Transpose") : NULL;
  xc_node_t* r1 = t3 ? xc_attn_producer(t3->inputs[0], "Reshape") : NULL;
  if (!r1) return false;
  xc_value_t *k = r1->inputs[0], *a = r1->outputs[0], *b = t3->outputs[0];
  int64_t c;
  const int64_t* p = xc_node_attr_ints(t3, "perm", &c);
  if (a->rank != 3 || b->rank != 3 || kt->rank != 4) return false;
  if (c != 3 || p[0] != 0 || p[1] != 2 || p[2] != 1) return false;
  if (k->rank == 5) { /* the merge reads K's repeated heads [B, Hkv, rep, S, D] directly */
    xc_value_t* k4 = peel_repeat5(mt, k);
    if (!k4 || !dims_equal(a, 1, k, 3) || !dims_equal(a, 2, k, 4) || !dims_equal(kt, 0, k, 0) ||
        !xc_dim_equal(kt->dims[1], xc_dim_mul(mt->g, k->dims[1], k->dims[2])) || !dims_equal(kt, 2, k, 4) ||
        !dims_equal(kt, 3, k, 3))
      return false;
    note(mt, r2);
    note(mt, t3);
    note(mt, r1);
    *src = peel_scale(mt, k4, false);
    *repeated = true;
    return true;
  }
  if (k->rank != 4) return false;
  /* The first reshape keeps K's last two dims (merging the leading ones),
   * the second splits the leading dim back into K's leading dims. */
  if (!dims_equal(a, 1, k, 2) || !dims_equal(a, 2, k, 3)) return false;
  if (!dims_equal(kt, 0, k, 0) || !dims_equal(kt, 1, k, 1) || !dims_equal(kt, 2, k, 3) ||
      !dims_equal(kt, 3, k, 2))
    return false;
  note(mt, r2);
  note(mt, t3);
  note(mt, r1);
  *src = peel_scale(mt, k, false);
  return true;
}

/* A mask (or condition) of shape broadcastable to the scores (rank r:
 * [B, H, Sq, Skv] or [N, Sq, Skv]) the way Attention reads it: leading dims
 * 1 or equal, the last dim exactly Skv. */
static bool mask_shape_ok(const xc_value_t* m, const xc_dim_t* target, int r) {
  if (!m || m->rank < 1 || m->rank > r) return false;
  for (int i = 0; i < m->rank; i++) {
    xc_dim_t d = m->dims[i], t = target[r - m->rank + i];
    if (xc_dim_equal(d, t)) continue;
    if (i < m->rank - 1 && xc_attn_static_dim(d) == 1) continue;
    return false;
  }
  return true;
}

/* Where(c, 0, -inf) (or swapped) used as an additive mask is a condition. */
static void additive_to_select(xc_attn_mask_t* m) {
  xc_node_t* w = xc_attn_producer(m->value, "Where");
  if (!w || w->inputs[0]->dtype != XC_BOOL || w->inputs[0]->rank != m->value->rank) return;
  for (int i = 0; i < m->value->rank; i++)
    if (!xc_dim_equal(w->inputs[0]->dims[i], m->value->dims[i])) return;
  bool keep;
  if (xc_attn_const_all(w->inputs[1], 0) && xc_attn_const_all(w->inputs[2], -INFINITY))
    keep = true;
  else if (xc_attn_const_all(w->inputs[1], -INFINITY) && xc_attn_const_all(w->inputs[2], 0))
    keep = false;
  else
    return;
  m->kind = XC_ATTN_MASK_SELECT;
  m->value = w->inputs[0];
  m->keep_when_true = keep;
  m->fill = -INFINITY;
}

/* dims of a rank-r tensor seen as 4-D: rank 3 [N, S, D] is [N, 1, S, D]. */
static void view4(int r, const xc_dim_t* dims, xc_dim_t out[4]) {
  if (r == 4) {
    for (int i = 0; i < 4; i++) out[i] = dims[i];
    return;
  }
  out[0] = dims[0];
  out[1] = xc_dim_const(1);
  out[2] = dims[1];
  out[3] = dims[2];
}

/* Unsqueeze or Squeeze of axis 1 (the head axis) of v. */
static xc_status_t head_axis(xc_graph_t* g, const char* op, xc_value_t* v, const xc_node_t* from,
                             xc_value_t** out) {
  int64_t one = 1;
  xc_tensor_t* t;
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, &one, &t));
  xc_tensor_set_i64(t, 0, 1);
  const char* name = xc_arena_printf(g->arena, "%s_head_axis", v->name);
  for (int i = 1; name && xc_graph_find_value(g, name); i++)
    name = xc_arena_printf(g->arena, "%s_head_axis_%d", v->name, i);
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  xc_value_t* axes;
  XC_RETURN_IF_ERROR(xc_graph_add_initializer(g, name, t, &axes));
  xc_dim_t dims[4];
  int rank;
  if (strcmp(op, "Unsqueeze") == 0) {
    view4(3, v->dims, dims);
    rank = 4;
  } else {
    dims[0] = v->dims[0];
    dims[1] = v->dims[2];
    dims[2] = v->dims[3];
    rank = 3;
  }
  xc_value_t* ins[2] = {v, axes};
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_attn_add_node(g, op, v->name, 2, ins, v->dtype, rank, dims, &n));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, from));
  *out = n->outputs[0];
  return NULL;
}

static xc_status_t rewrite(xc_graph_t* g, xc_node_t* out_mm, bool* changed) {
  match_t mt = {g, 1.0, 0, {0}};
  xc_value_t *p = out_mm->inputs[0], *v_rep = out_mm->inputs[1], *y = out_mm->outputs[0];
  int r = p ? p->rank : 0;
  if (!p || !v_rep || !y || (r != 3 && r != 4) || v_rep->rank != r || y->rank != r ||
      !xc_dtype_is_float(p->dtype))
    return NULL;
  if (!xc_attn_single_use(g, p)) return NULL;
  /* Optional NaN guard: Where(IsNaN(s), 0, s). */
  bool guard = false;
  xc_value_t* s = p;
  xc_node_t* w = xc_attn_producer(p, "Where");
  if (w) {
    xc_node_t* isnan_node = xc_attn_producer(w->inputs[0], "IsNaN");
    if (!isnan_node || isnan_node->inputs[0] != w->inputs[2] || !xc_attn_const_all(w->inputs[1], 0))
      return NULL;
    s = w->inputs[2];
    if (!xc_attn_same_type(s, p) || !xc_attn_single_use(g, w->inputs[0]) ||
        xc_graph_count_uses(g, s) != 2 || (s->flags & XC_VALUE_OUTPUT))
      return NULL;
    guard = true;
    note(&mt, w);
    note(&mt, isnan_node);
  }
  xc_node_t* sm = xc_attn_producer(s, "Softmax");
  if (!sm) return NULL;
  int64_t axis = xc_node_attr_int(sm, "axis");
  if (axis < 0) axis += s->rank;
  if (axis != s->rank - 1) return NULL;
  note(&mt, sm);
  xc_value_t* x = sm->inputs[0];
  if (!xc_attn_single_use(g, x)) return NULL;
  /* Mask, then scores. */
  xc_attn_mask_t m;
  memset(&m, 0, sizeof m);
  m.guard = guard;
  m.dtype = x->dtype;
  xc_node_t* qk = NULL;
  xc_node_t* mask_node = xc_attn_producer(x, "Add");
  if (!mask_node) mask_node = xc_attn_producer(x, "Where");
  if (mask_node && strcmp(mask_node->op_type, "Add") == 0) {
    for (int k = 0; k < 2 && !qk; k++) {
      xc_value_t* sc = mask_node->inputs[k];
      if (xc_attn_same_type(sc, x) && find_scores(&mt, sc, &qk)) {
        m.kind = XC_ATTN_MASK_ADD;
        m.value = mask_node->inputs[1 - k];
      }
    }
  } else if (mask_node && mask_node->inputs[0]->dtype == XC_BOOL) {
    double fill;
    for (int k = 1; k < 3 && !qk; k++) {
      xc_value_t* sc = mask_node->inputs[k];
      if (xc_attn_same_type(sc, x) && xc_attn_const_scalar(mask_node->inputs[3 - k], &fill) &&
          find_scores(&mt, sc, &qk)) {
        m.kind = XC_ATTN_MASK_SELECT;
        m.value = mask_node->inputs[0];
        m.keep_when_true = k == 1;
        m.fill = fill;
      }
    }
  }
  if (qk)
    note(&mt, mask_node);
  else if (!find_scores(&mt, x, &qk))
    return NULL;
  /* Q, K, V in [B, H, S, D] (rank 4) or [N, S, D] (rank 3, one head). */
  xc_value_t* q = peel_scale(&mt, qk->inputs[0], false);
  xc_value_t* k_src;
  int64_t k_perm[4];
  bool k_transpose, k_repeated;
  if (!match_key(&mt, qk->inputs[1], &k_src, k_perm, &k_transpose, &k_repeated)) return NULL;
  if (!q || !k_src || q->rank != r || k_src->rank != r) return NULL;
  xc_value_t* v = peel_repeat(&mt, v_rep);
  xc_value_t* k_unrep = k_transpose ? k_src : peel_repeat(&mt, k_src);
  if (k_repeated) { /* K only exists un-repeated: V must be repeated the same way */
    if (v == v_rep || !xc_dim_equal(k_src->dims[1], v->dims[1])) return NULL;
  } else if (k_unrep != k_src || v != v_rep) {
    /* Both repeated or neither: else keep the repeated tensors. */
    if (k_unrep == k_src || v == v_rep || !xc_dim_equal(k_unrep->dims[1], v->dims[1])) {
      k_unrep = k_src;
      v = v_rep;
    }
  }
  /* K's dims in Attention's layout (rank r), and 4-D views of everything. */
  xc_dim_t kr[4], q4[4], k4[4], v4[4];
  for (int i = 0; i < r; i++) kr[i] = k_transpose ? k_src->dims[k_perm[i]] : k_unrep->dims[i];
  view4(r, q->dims, q4);
  view4(r, kr, k4);
  view4(r, v->dims, v4);
  xc_dim_t b = q4[0], hq = q4[1], sq = q4[2], d = q4[3];
  xc_dim_t hkv = k4[1], skv = k4[2], dv = v4[3];
  if (q->dtype != k_src->dtype || q->dtype != v->dtype || q->dtype != y->dtype) return NULL;
  if (!xc_dim_equal(k4[0], b) || !xc_dim_equal(v4[0], b) || !xc_dim_equal(k4[3], d) ||
      !xc_dim_equal(v4[2], skv) || !xc_dim_equal(v4[1], hkv))
    return NULL;
  int64_t hq_s = xc_attn_static_dim(hq), hkv_s = xc_attn_static_dim(hkv);
  if (!xc_dim_equal(hq, hkv) && !(hq_s > 0 && hkv_s > 0 && hq_s % hkv_s == 0)) return NULL;
  /* The matched MatMuls computed exactly [B, Hq, Sq, Skv] and [B, Hq, Sq, Dv]. */
  xc_dim_t scores4[4] = {b, hq, sq, skv}, y4[4] = {b, hq, sq, dv}, x4[4], yv4[4];
  view4(r, x->dims, x4);
  view4(r, y->dims, yv4);
  for (int i = 0; i < 4; i++)
    if (!xc_dim_equal(x4[i], scores4[i]) || !xc_dim_equal(yv4[i], y4[i])) return NULL;
  if (m.kind != XC_ATTN_MASK_NONE) {
    if (m.kind == XC_ATTN_MASK_ADD) additive_to_select(&m);
    if (!mask_shape_ok(m.value, x->dims, r)) return NULL;
    if (m.kind == XC_ATTN_MASK_ADD && m.value->dtype != x->dtype) return NULL;
  }
  m.sq = xc_attn_static_dim(sq);
  m.skv = xc_attn_static_dim(skv);
  if (!xc_attn_mask_decide(&m)) return NULL;

  /* Build: [Transpose(K)], [Not(mask)], [Unsqueeze to 4-D], Attention,
   * [Squeeze back to 3-D]. */
  xc_value_t* k = k_unrep;
  xc_node_t* n;
  if (k_transpose) {
    XC_RETURN_IF_ERROR(xc_attn_add_node(g, "Transpose", k_src->name, 1, &k_src, k_src->dtype, r,
                                        kr, &n));
    XC_RETURN_IF_ERROR(xc_node_set_ints(g, n, "perm", r, k_perm));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, qk));
    k = n->outputs[0];
  }
  xc_value_t* mask = m.input;
  if (mask && m.negate) {
    XC_RETURN_IF_ERROR(
        xc_attn_add_node(g, "Not", mask->name, 1, &mask, XC_BOOL, mask->rank, mask->dims, &n));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, mask_node));
    mask = n->outputs[0];
  }
  if (r == 3) {
    XC_RETURN_IF_ERROR(head_axis(g, "Unsqueeze", q, out_mm, &q));
    XC_RETURN_IF_ERROR(head_axis(g, "Unsqueeze", k, out_mm, &k));
    XC_RETURN_IF_ERROR(head_axis(g, "Unsqueeze", v, out_mm, &v));
    if (mask && mask->rank == 3) XC_RETURN_IF_ERROR(head_axis(g, "Unsqueeze", mask, out_mm, &mask));
  }
  xc_value_t* ins[4] = {q, k, v, mask};
  XC_RETURN_IF_ERROR(
      xc_attn_add_node(g, "Attention", y->name, mask ? 4 : 3, ins, y->dtype, 4, y4, &n));
  XC_RETURN_IF_ERROR(xc_node_set_float(g, n, "scale", mt.scale));
  if (m.causal) XC_RETURN_IF_ERROR(xc_node_set_int(g, n, "is_causal", 1));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, out_mm));
  for (int i = 0; i < mt.num_origins; i++)
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, mt.origins[i]));
  xc_value_t* result = n->outputs[0];
  if (r == 3) XC_RETURN_IF_ERROR(head_axis(g, "Squeeze", result, out_mm, &result));
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, result));
  out_mm->dead = true;
  *changed = true;
  return NULL;
}

xc_status_t xc_pass_pattern_attention(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++) {
    xc_node_t* n = g->nodes[i];
    if (xc_attn_is_op(n, "MatMul") && n->num_inputs == 2)
      XC_RETURN_IF_ERROR(rewrite(g, n, &any));
  }
  if (!any) return NULL;
  *changed = true;
  /* Put the new nodes in order (DCE relies on it), then drop the replaced
   * chains now rather than leaving them to a later pass. */
  XC_RETURN_IF_ERROR(xc_graph_toposort(g));
  XC_RETURN_IF_ERROR(xc_pass_dce(g, o, changed));
  return xc_graph_compact(g);
}
