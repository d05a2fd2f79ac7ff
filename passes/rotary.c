/* Rotary position embedding: finds
 *
 *   y = x * cos + rotate(x) * sin          x: [B, H, S, D]
 *
 * with rotate(x) = Concat(-x[..., D/2:], x[..., :D/2]) (rotate-half; halves
 * from Slice or Split) or the interleaved form Reshape(Concat(Unsqueeze(
 * -x[..., 1::2], -1), Unsqueeze(x[..., ::2], -1)), [..., D]), and replaces
 * it by one opset-23 RotaryEmbedding node.
 *
 * cos and sin are full-width tables whose two halves (rotate-half) or
 * neighbouring pairs (interleaved) are equal, as exporters build them:
 *  - Unsqueeze(Gather(cache, position_ids), 1) with a constant cache
 *    [max_pos, D]: RotaryEmbedding gets the half-width cache and the same
 *    position_ids (position ids are taken as non-negative: Gather would wrap
 *    a negative id, RotaryEmbedding rejects it);
 *  - a constant [S, D] (or [1, S, D], [1, 1, S, D]): the half-width table
 *    with constant position_ids 0..S-1 for every batch row;
 *  - Unsqueeze([Mul(scale)] Cos|Sin(Concat(f, f, axis -1)), 1) computed at
 *    run time, f [B, S, D/2]: new Cos|Sin(f) [* scale] nodes give [B, S, D/2]
 *    caches and no position ids (rotate-half only).
 * The duplication is checked element by element, so a table that is not a
 * rotary table is never rewritten. */
#include <math.h>
#include <string.h>

#include "attention_util.h"
#include "xcomp/passes.h"

/* v = x[..., start::step] with `count` elements on the last axis, from a
 * Slice or one output of a Split on the last axis. */
static bool last_axis_part(const xc_value_t* v, xc_value_t** x, int64_t* start, int64_t* step) {
  const xc_node_t* p = v->producer;
  if (!p || p->dead || p->domain[0] || v->rank < 1) return false;
  int r = v->rank;
  if (xc_attn_is_op(p, "Slice")) {
    xc_value_t* data = p->inputs[0];
    int64_t dlen = xc_attn_static_dim(data->dims[r - 1]);
    const xc_value_t *st = p->inputs[1], *en = p->inputs[2];
    const xc_value_t* ax = p->num_inputs > 3 ? p->inputs[3] : NULL;
    const xc_value_t* sp = p->num_inputs > 4 ? p->inputs[4] : NULL;
    if (dlen < 0 || !st->constant || !en->constant || st->constant->numel != 1 ||
        en->constant->numel != 1)
      return false;
    int64_t axis = 0, stp = 1;
    if (ax) {
      if (!ax->constant || ax->constant->numel != 1) return false;
      axis = xc_tensor_get_i64(ax->constant, 0);
    }
    if (axis < 0) axis += r;
    if (sp) {
      if (!sp->constant || sp->constant->numel != 1) return false;
      stp = xc_tensor_get_i64(sp->constant, 0);
    }
    if (axis != r - 1 || stp < 1) return false;
    int64_t s = xc_tensor_get_i64(st->constant, 0);
    if (s < 0) s += dlen;
    if (s < 0) s = 0;
    if (s > dlen) s = dlen;
    *x = data;
    *start = s;
    *step = stp;
    return true;
  }
  if (xc_attn_is_op(p, "Split")) {
    int64_t axis = xc_node_attr_int(p, "axis");
    if (axis < 0) axis += r;
    if (axis != r - 1) return false;
    int64_t s = 0;
    for (int k = 0; k < p->num_outputs && p->outputs[k] != v; k++) {
      if (!p->outputs[k]) return false;
      int64_t len = xc_attn_static_dim(p->outputs[k]->dims[r - 1]);
      if (len < 0) return false;
      s += len;
    }
    *x = p->inputs[0];
    *start = s;
    *step = 1;
    return true;
  }
  return false;
}

/* v = x[..., start::step] of exactly `count` elements. */
static bool is_part(const xc_value_t* v, xc_value_t* x, int64_t start, int64_t step,
                    int64_t count) {
  xc_value_t* src;
  int64_t s, st;
  if (!last_axis_part(v, &src, &s, &st) || src != x || s != start || st != step) return false;
  return xc_attn_static_dim(v->dims[v->rank - 1]) == count;
}

/* v = Unsqueeze(u, -1) (or a Reshape appending a 1). */
static xc_value_t* peel_trailing_unsqueeze(xc_value_t* v) {
  xc_node_t* p = xc_attn_producer(v, "Unsqueeze");
  if (!p) p = xc_attn_producer(v, "Reshape");
  if (!p) return NULL;
  xc_value_t* u = p->inputs[0];
  if (u->rank + 1 != v->rank || xc_attn_static_dim(v->dims[v->rank - 1]) != 1) return NULL;
  for (int i = 0; i < u->rank; i++)
    if (!xc_dim_equal(u->dims[i], v->dims[i])) return NULL;
  return u;
}

/* Neg(u) or Mul(u, -1) (either order, no broadcasting): u. */
static xc_value_t* peel_neg(xc_value_t* v, bool* negated) {
  xc_node_t* p = xc_attn_producer(v, "Neg");
  if (p) {
    *negated = !*negated;
    return p->inputs[0];
  }
  p = xc_attn_producer(v, "Mul");
  double c;
  for (int k = 0; p && k < 2; k++)
    if (xc_attn_const_scalar(p->inputs[1 - k], &c) && c == -1 &&
        xc_attn_same_type(p->inputs[k], v)) {
      *negated = !*negated;
      return p->inputs[k];
    }
  return v;
}

/* rot = rotate(x): which form. */
static bool match_rotation(xc_value_t* rot, xc_value_t* x, bool* interleaved) {
  int r = x->rank;
  int64_t d = xc_attn_static_dim(x->dims[r - 1]);
  if (d < 2 || d % 2) return false;
  int64_t h = d / 2;
  xc_node_t* c = xc_attn_producer(rot, "Concat");
  if (c && c->num_inputs == 2 && rot->rank == r) {
    int64_t axis = xc_node_attr_int(c, "axis");
    if (axis < 0) axis += r;
    bool neg0 = false, neg1 = false;
    xc_value_t* a = peel_neg(c->inputs[0], &neg0);
    xc_value_t* b = peel_neg(c->inputs[1], &neg1);
    *interleaved = false;
    return axis == r - 1 && neg0 && !neg1 && is_part(a, x, h, 1, h) && is_part(b, x, 0, 1, h);
  }
  xc_node_t* rs = xc_attn_producer(rot, "Reshape");
  c = rs ? xc_attn_producer(rs->inputs[0], "Concat") : NULL;
  if (!c || c->num_inputs != 2 || !xc_attn_same_type(rot, x) || c->outputs[0]->rank != r + 1)
    return false;
  int64_t axis = xc_node_attr_int(c, "axis");
  if (axis < 0) axis += r + 1;
  if (axis != r) return false;
  xc_value_t* parts[2];
  bool neg[2] = {false, false};
  for (int k = 0; k < 2; k++) {
    xc_value_t* v = peel_neg(c->inputs[k], &neg[k]);
    v = v ? peel_trailing_unsqueeze(v) : NULL;
    parts[k] = v ? peel_neg(v, &neg[k]) : NULL;
    if (!parts[k]) return false;
  }
  *interleaved = true;
  return neg[0] && !neg[1] && is_part(parts[0], x, 1, 2, h) && is_part(parts[1], x, 0, 2, h);
}

/* Where a cos/sin table comes from. */
typedef struct table_src {
  xc_value_t* positions; /* position ids, or NULL for a constant table */
  xc_tensor_t* table;    /* [N, D] values */
  bool owned;
  int64_t rows, cols;
  /* Computed table: [scale *] op(Concat(half, half, axis -1)). */
  xc_value_t* half;      /* [B, S, D/2] */
  const char* op;        /* "Cos" or "Sin" */
  xc_value_t* scale;     /* constant scalar, or NULL */
  xc_node_t* from;       /* the op node, for provenance */
  const xc_value_t* key; /* what identifies the table: the cache, constant or c3 */
} table_src_t;

static void table_free(table_src_t* t) {
  if (t->owned) xc_tensor_destroy(t->table);
  t->table = NULL;
}

/* c3 = [Mul(scale)] Cos|Sin(Concat(f, f, axis -1)) computed at run time
 * (HF Llama computes its tables from inv_freq and position_ids), with
 * c = Unsqueeze(c3, 1) [B, 1, S, D]: the half-width table is Cos|Sin(f). */
static bool computed_table(xc_value_t* c3, const xc_value_t* c, const xc_value_t* x,
                           table_src_t* out) {
  if (!c3 || c3->rank != 3 || !xc_dim_equal(c3->dims[0], c->dims[0]) ||
      !xc_dim_equal(c3->dims[1], c->dims[2]) || !xc_dim_equal(c3->dims[2], c->dims[3]) ||
      !xc_dim_equal(c->dims[0], x->dims[0]))
    return false;
  xc_value_t* v = c3;
  xc_node_t* m = xc_attn_producer(v, "Mul");
  double k;
  if (m) {
    int i = xc_attn_const_scalar(m->inputs[1], &k)   ? 0
            : xc_attn_const_scalar(m->inputs[0], &k) ? 1
                                                     : -1;
    if (i < 0 || !xc_attn_same_type(m->inputs[i], v)) return false;
    out->scale = m->inputs[1 - i];
    v = m->inputs[i];
  }
  xc_node_t* f = xc_attn_producer(v, "Cos");
  if (!f) f = xc_attn_producer(v, "Sin");
  xc_node_t* cat = f ? xc_attn_producer(f->inputs[0], "Concat") : NULL;
  if (!cat || cat->num_inputs != 2 || cat->inputs[0] != cat->inputs[1]) return false;
  int64_t axis = xc_node_attr_int(cat, "axis");
  xc_value_t* half = cat->inputs[0];
  if (axis < 0) axis += 3;
  int64_t d = xc_attn_static_dim(x->dims[3]);
  if (axis != 2 || half->rank != 3 || half->dtype != x->dtype || d < 2 ||
      xc_attn_static_dim(half->dims[2]) * 2 != d || !xc_dim_equal(half->dims[0], x->dims[0]) ||
      !xc_dim_equal(half->dims[1], x->dims[2]))
    return false;
  out->half = half;
  out->key = c3;
  out->op = f->op_type;
  out->from = f;
  return true;
}

/* The half-width computed table: [Mul(scale)] op(half) as new nodes. */
static xc_status_t computed_half(xc_graph_t* g, const table_src_t* t, const char* base,
                                 xc_value_t** out) {
  xc_node_t* n;
  xc_value_t* h = t->half;
  XC_RETURN_IF_ERROR(xc_attn_add_node(g, t->op, base, 1, &h, h->dtype, 3, h->dims, &n));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, t->from));
  *out = n->outputs[0];
  if (t->scale) {
    xc_value_t* ins[2] = {*out, t->scale};
    XC_RETURN_IF_ERROR(xc_attn_add_node(g, "Mul", (*out)->name, 2, ins, h->dtype, 3, h->dims, &n));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, t->from));
    *out = n->outputs[0];
  }
  return NULL;
}

/* c multiplies x [B, H, S, D] as a table broadcast over heads. */
static bool table_source(xc_value_t* c, const xc_value_t* x, table_src_t* out) {
  memset(out, 0, sizeof *out);
  if (c->dtype != x->dtype || c->rank < 2 || c->rank > 4) return false;
  int r = c->rank;
  if (!xc_dim_equal(c->dims[r - 1], x->dims[3]) || !xc_dim_equal(c->dims[r - 2], x->dims[2]))
    return false;
  if (r >= 3 && xc_attn_static_dim(c->dims[r - 3]) != 1) return false;
  /* Unsqueeze(Gather(cache, positions), 1). */
  xc_node_t* u = r == 4 ? xc_attn_producer(c, "Unsqueeze") : NULL;
  if (r == 4 && !u) u = xc_attn_producer(c, "Reshape");
  xc_value_t* gv = u ? u->inputs[0] : NULL;
  xc_node_t* ga = gv ? xc_attn_producer(gv, "Gather") : NULL;
  if (ga) {
    xc_value_t* pos = ga->inputs[1];
    if (gv->rank != 3 || xc_node_attr_int(ga, "axis") != 0 ||
        !xc_dim_equal(c->dims[0], x->dims[0]) || !xc_dim_equal(gv->dims[0], c->dims[0]) ||
        !xc_dim_equal(gv->dims[1], c->dims[2]) || !xc_dim_equal(gv->dims[2], c->dims[3]))
      return false;
    if (pos->rank != 2 || (pos->dtype != XC_I64 && pos->dtype != XC_I32)) return false;
    if (!xc_attn_eval_const(ga->inputs[0], 8, &out->table, &out->owned)) return false;
    if (out->table->rank != 2) {
      table_free(out);
      return false;
    }
    out->positions = pos;
    out->key = ga->inputs[0];
    out->rows = out->table->dims[0];
    out->cols = out->table->dims[1];
    return true;
  }
  if (r == 4 && !xc_attn_eval_const(c, 8, &out->table, &out->owned))
    return computed_table(u ? u->inputs[0] : NULL, c, x, out);
  if (out->table) {
    if (xc_attn_static_dim(c->dims[0]) != 1) {
      table_free(out);
      return false;
    }
  } else if (!xc_attn_eval_const(c, 8, &out->table, &out->owned)) {
    return false;
  }
  out->key = c;
  out->cols = out->table->rank ? out->table->dims[out->table->rank - 1] : 0;
  out->rows = out->cols ? out->table->numel / out->cols : 0;
  return true;
}

/* The half-width table [rows, D/2] when the full one repeats its values
 * (halves, or pairs when interleaved); NULL otherwise. */
static xc_tensor_t* half_table(const table_src_t* t, bool interleaved, xc_dtype_t dtype) {
  int64_t h = t->cols / 2;
  if (t->cols % 2 || h < 1) return NULL;
  for (int64_t i = 0; i < t->rows; i++)
    for (int64_t j = 0; j < h; j++) {
      int64_t a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + h;
      double x = xc_tensor_get_f64(t->table, i * t->cols + a);
      if (x != xc_tensor_get_f64(t->table, i * t->cols + b) || isnan(x)) return NULL;
    }
  int64_t dims[2] = {t->rows, h};
  xc_tensor_t* out;
  xc_status_t s = xc_tensor_create(dtype, 2, dims, &out);
  if (s) {
    xc_status_free(s); /* out of memory: simply no rewrite */
    return NULL;
  }
  for (int64_t i = 0; i < t->rows; i++)
    for (int64_t j = 0; j < h; j++)
      xc_tensor_set_f64(out, i * h + j,
                        xc_tensor_get_f64(t->table, i * t->cols + (interleaved ? 2 * j : j)));
  return out;
}

static xc_status_t add_constant(xc_graph_t* g, const char* base, xc_tensor_t* t, xc_value_t** out) {
  const char* name = xc_arena_printf(g->arena, "%s", base);
  for (int i = 1; name && xc_graph_find_value(g, name); i++)
    name = xc_arena_printf(g->arena, "%s_%d", base, i);
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  return xc_graph_add_initializer(g, name, t, out);
}

/* Mul(a, b) with one operand `x`-shaped: *other is the other operand. */
static bool mul_with(xc_value_t* v, xc_value_t** lhs, xc_value_t** rhs, xc_node_t** node) {
  xc_node_t* m = xc_attn_producer(v, "Mul");
  if (!m) return false;
  *lhs = m->inputs[0];
  *rhs = m->inputs[1];
  *node = m;
  return true;
}

/* Adds RotaryEmbedding(ins) in place of add's result. */
static xc_status_t finish(xc_graph_t* g, xc_node_t* add, const xc_node_t* ma, const xc_node_t* mb,
                          const xc_value_t* rot, xc_value_t* const* ins, int num_inputs,
                          bool interleaved, bool* changed) {
  xc_value_t* y = add->outputs[0];
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_attn_add_node(g, "RotaryEmbedding", y->name, num_inputs, ins, y->dtype,
                                      4, y->dims, &n));
  if (interleaved) XC_RETURN_IF_ERROR(xc_node_set_int(g, n, "interleaved", 1));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, add));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, ma));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, mb));
  if (rot->producer) XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, n, rot->producer));
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, n->outputs[0]));
  add->dead = true;
  *changed = true;
  return NULL;
}

/* Tables made by earlier rewrites of this pass, so that Q and K (and every
 * layer) share one cache per source table. */
enum { MEMO_HALVES, MEMO_PAIRS, MEMO_POSITIONS, MEMO_COMPUTED };
#define MEMO_SIZE 64

typedef struct memo {
  int count;
  const xc_value_t* key[MEMO_SIZE];
  int kind[MEMO_SIZE];
  xc_value_t* value[MEMO_SIZE];
} memo_t;

static xc_value_t* memo_find(const memo_t* m, const xc_value_t* key, int kind) {
  for (int i = 0; i < m->count; i++)
    if (m->key[i] == key && m->kind[i] == kind) return m->value[i];
  return NULL;
}

static void memo_put(memo_t* m, const xc_value_t* key, int kind, xc_value_t* v) {
  if (m->count == MEMO_SIZE) return; /* only sharing is lost */
  m->key[m->count] = key;
  m->kind[m->count] = kind;
  m->value[m->count++] = v;
}

static xc_status_t rewrite(xc_graph_t* g, xc_node_t* add, memo_t* memo, bool* changed) {
  xc_value_t* y = add->outputs[0];
  if (!y || y->rank != 4 || !xc_dtype_is_float(y->dtype)) return NULL;
  for (int order = 0; order < 2; order++) {
    xc_value_t *a = add->inputs[order], *b = add->inputs[1 - order];
    xc_value_t *a0, *a1, *b0, *b1;
    xc_node_t *ma, *mb;
    if (!mul_with(a, &a0, &a1, &ma) || !mul_with(b, &b0, &b1, &mb)) continue;
    if (!xc_attn_single_use(g, a) || !xc_attn_single_use(g, b) || !xc_attn_same_type(a, y) ||
        !xc_attn_same_type(b, y))
      continue;
    for (int ia = 0; ia < 2; ia++)
      for (int ib = 0; ib < 2; ib++) {
        xc_value_t* x = ia ? a1 : a0;
        xc_value_t* cosv = ia ? a0 : a1;
        xc_value_t* rot = ib ? b1 : b0;
        xc_value_t* sinv = ib ? b0 : b1;
        bool interleaved;
        if (!xc_attn_same_type(x, y) || !xc_attn_same_type(rot, y) ||
            !xc_attn_single_use(g, rot) || !match_rotation(rot, x, &interleaved))
          continue;
        table_src_t tc, ts;
        if (!table_source(cosv, x, &tc)) continue;
        if (!table_source(sinv, x, &ts)) {
          table_free(&tc);
          continue;
        }
        if (tc.half || ts.half) {
          table_free(&tc);
          table_free(&ts);
          if (!tc.half || !ts.half || interleaved) continue;
          xc_value_t* half_cos = memo_find(memo, tc.key, MEMO_COMPUTED);
          xc_value_t* half_sin = memo_find(memo, ts.key, MEMO_COMPUTED);
          if (!half_cos) {
            XC_RETURN_IF_ERROR(computed_half(g, &tc, tc.key->name, &half_cos));
            memo_put(memo, tc.key, MEMO_COMPUTED, half_cos);
          }
          if (!half_sin) {
            XC_RETURN_IF_ERROR(computed_half(g, &ts, ts.key->name, &half_sin));
            memo_put(memo, ts.key, MEMO_COMPUTED, half_sin);
          }
          xc_value_t* ins[3] = {x, half_cos, half_sin};
          XC_RETURN_IF_ERROR(finish(g, add, ma, mb, rot, ins, 3, interleaved, changed));
          return NULL;
        }
        int kind = interleaved ? MEMO_PAIRS : MEMO_HALVES;
        xc_value_t* cache_cos = memo_find(memo, tc.key, kind);
        xc_value_t* cache_sin = memo_find(memo, ts.key, kind);
        xc_tensor_t* hc = NULL;
        xc_tensor_t* hs = NULL;
        bool ok = tc.positions == ts.positions && tc.rows == ts.rows && tc.cols == ts.cols;
        int64_t batch = xc_attn_static_dim(x->dims[0]), seq = xc_attn_static_dim(x->dims[2]);
        if (ok && !tc.positions) ok = batch >= 0 && seq >= 0 && tc.rows == seq;
        if (ok && !cache_cos) ok = (hc = half_table(&tc, interleaved, x->dtype)) != NULL;
        if (ok && !cache_sin) ok = (hs = half_table(&ts, interleaved, x->dtype)) != NULL;
        table_free(&tc);
        table_free(&ts);
        if (!ok) {
          xc_tensor_destroy(hc);
          xc_tensor_destroy(hs);
          continue;
        }
        if (hc) {
          xc_status_t st = add_constant(g, "rotary_cos_cache", hc, &cache_cos);
          if (st) {
            xc_tensor_destroy(hs);
            return st;
          }
          memo_put(memo, tc.key, kind, cache_cos);
        }
        if (hs) {
          XC_RETURN_IF_ERROR(add_constant(g, "rotary_sin_cache", hs, &cache_sin));
          memo_put(memo, ts.key, kind, cache_sin);
        }
        xc_value_t* pos = tc.positions;
        if (!pos) {
          /* 0..S-1 for every batch row, shared by rewrites of one shape. */
          int64_t dims[2] = {batch, seq};
          xc_value_t* prev = memo_find(memo, tc.key, MEMO_POSITIONS);
          if (prev && xc_attn_static_dim(prev->dims[0]) == batch) {
            pos = prev;
          } else {
            xc_tensor_t* p;
            XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 2, dims, &p));
            for (int64_t i = 0; i < p->numel; i++) xc_tensor_set_i64(p, i, i % seq);
            XC_RETURN_IF_ERROR(add_constant(g, "rotary_positions", p, &pos));
            memo_put(memo, tc.key, MEMO_POSITIONS, pos);
          }
        }
        xc_value_t* ins[4] = {x, cache_cos, cache_sin, pos};
        XC_RETURN_IF_ERROR(finish(g, add, ma, mb, rot, ins, 4, interleaved, changed));
        return NULL;
      }
  }
  return NULL;
}

xc_status_t xc_pass_pattern_rotary(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  bool any = false;
  int count = g->num_nodes;
  memo_t memo;
  memo.count = 0;
  for (int i = 0; i < count; i++) {
    xc_node_t* n = g->nodes[i];
    if (xc_attn_is_op(n, "Add") && n->num_inputs == 2)
      XC_RETURN_IF_ERROR(rewrite(g, n, &memo, &any));
  }
  if (!any) return NULL;
  *changed = true;
  XC_RETURN_IF_ERROR(xc_graph_toposort(g));
  XC_RETURN_IF_ERROR(xc_pass_dce(g, o, changed));
  return xc_graph_compact(g);
}
