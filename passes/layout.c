/* Layout pass: when the target prefers channels-last (NHWC), moves
 * convolution networks to it.
 *
 *   1. Conv/MaxPool/AveragePool become xcomp.ConvNHWC / MaxPoolNHWC /
 *      AveragePoolNHWC between a Transpose to channels-last and one back
 *      (weights to HWIO: [k..., C/group, M], pre-transposed when constant,
 *      by a Transpose node otherwise); GlobalAveragePool and
 *      GlobalMaxPool become ReduceMean/ReduceMax over the spatial axes;
 *      inference BatchNormalization becomes Mul + Add by per-channel
 *      constants on the last axis.
 *   2. Transposes back to channels-first sink below elementwise ops (every
 *      operand is the same Transpose, a scalar, or a constant, which is
 *      re-laid out), so two inverse Transposes meet.
 *   3. Adjacent inverse Transposes cancel; a Transpose that only moves size-1
 *      dims becomes a Reshape.
 * A CNN thus keeps at most one Transpose at its input and one at its output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/op.h"
#include "xcomp/passes.h"

static bool is_onnx(const xc_node_t* n, const char* op) {
  return !n->dead && n->domain[0] == 0 && strcmp(n->op_type, op) == 0;
}

static void perm_to_last(int r, int64_t* p) { /* NCHW -> NHWC */
  p[0] = 0;
  for (int i = 1; i + 1 < r; i++) p[i] = i + 1;
  p[r - 1] = 1;
}

static void perm_to_first(int r, int64_t* p) { /* NHWC -> NCHW */
  p[0] = 0;
  p[1] = r - 1;
  for (int i = 2; i < r; i++) p[i] = i - 1;
}

/* out.dims[i] = in.dims[perm[i]] */
static xc_status_t permute_tensor(const xc_tensor_t* in, const int64_t* perm, xc_tensor_t** out) {
  int r = in->rank;
  int64_t od[XC_MAX_RANK], is[XC_MAX_RANK], idx[XC_MAX_RANK];
  for (int i = 0; i < r; i++) od[i] = in->dims[perm[i]];
  XC_RETURN_IF_ERROR(xc_tensor_create(in->dtype, r, od, out));
  if ((*out)->numel == 0) return NULL;
  xc_strides(r, in->dims, is);
  size_t es = xc_dtype_size(in->dtype);
  memset(idx, 0, sizeof idx);
  int64_t o = 0;
  do {
    int64_t src = 0;
    for (int i = 0; i < r; i++) src += idx[i] * is[perm[i]];
    memcpy((char*)(*out)->data + (size_t)o * es, (const char*)in->data + (size_t)src * es, es);
    o++;
  } while (xc_index_next(r, od, idx));
  return NULL;
}

/* A fresh value named after base + suffix. */
static xc_status_t fresh_value(xc_graph_t* g, const char* base, const char* suffix, xc_value_t** out) {
  for (int k = 0;; k++) {
    char* name = k ? xc_arena_printf(g->arena, "%s%s_%d", base, suffix, k)
                   : xc_arena_printf(g->arena, "%s%s", base, suffix);
    if (!name) return xc_error_oom();
    if (!xc_graph_find_value(g, name)) return xc_graph_add_value(g, name, XC_DTYPE_UNDEFINED, -1, NULL, out);
  }
}

static xc_status_t add_constant(xc_graph_t* g, const char* base, const char* suffix, xc_tensor_t* t,
                                xc_value_t** out) {
  for (int k = 0;; k++) {
    char* name = k ? xc_arena_printf(g->arena, "%s%s_%d", base, suffix, k)
                   : xc_arena_printf(g->arena, "%s%s", base, suffix);
    if (!name) {
      xc_tensor_destroy(t);
      return xc_error_oom();
    }
    if (!xc_graph_find_value(g, name)) return xc_graph_add_initializer(g, name, t, out);
  }
}

/* A Transpose node out = x permuted by perm (rank r), provenance from. */
static xc_status_t add_transpose_node(xc_graph_t* g, const xc_node_t* from, xc_value_t* x, int r,
                                      const int64_t* perm, xc_value_t* out) {
  xc_node_t* t;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Transpose", "", NULL, 1, &x, 1, &out, &t));
  XC_RETURN_IF_ERROR(xc_node_set_ints(g, t, "perm", r, perm));
  return xc_node_inherit_provenance(g, t, from);
}

/* x to channels-last in a fresh value named after x + suffix. */
static xc_status_t add_transpose(xc_graph_t* g, const xc_node_t* from, xc_value_t* x, int rank,
                                 const char* suffix, xc_value_t** out) {
  int64_t perm[XC_MAX_RANK];
  perm_to_last(rank, perm);
  XC_RETURN_IF_ERROR(fresh_value(g, x->name, suffix, out));
  return add_transpose_node(g, from, x, rank, perm, *out);
}

/* The uses of y read back, channels-first, the channels-last yt (a fresh
 * value of y's type named after y + "_nchw"). */
static xc_status_t add_transpose_back(xc_graph_t* g, const xc_node_t* from, xc_value_t* y, xc_value_t* yt) {
  xc_value_t* back;
  XC_RETURN_IF_ERROR(fresh_value(g, y->name, "_nchw", &back));
  XC_RETURN_IF_ERROR(xc_value_set_type(g, back, y->dtype, y->rank, y->dims));
  XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, back));
  int64_t perm[XC_MAX_RANK];
  perm_to_first(y->rank, perm);
  return add_transpose_node(g, from, yt, y->rank, perm, back);
}

static void copy_attrs(xc_node_t* to, const xc_node_t* from) {
  to->num_attrs = from->num_attrs;
  to->attrs = from->attrs; /* arena memory of the same graph; the old node dies */
}

static bool all_constant(const xc_node_t* n, int from) {
  for (int k = from; k < n->num_inputs; k++)
    if (n->inputs[k] && !n->inputs[k]->constant) return false;
  return true;
}

/* Step 1: one node to channels-last. */
static xc_status_t convert_node(xc_graph_t* g, xc_node_t* n, bool* changed) {
  if (n->num_inputs < 1 || !n->inputs[0] || n->num_outputs < 1 || !n->outputs[0]) return NULL;
  xc_value_t* x = n->inputs[0];
  xc_value_t* y = n->outputs[0];
  int r = x->rank;
  if (r < 3 || r > XC_MAX_RANK || y->rank != r) return NULL;
  for (int k = 1; k < n->num_outputs; k++)
    if (n->outputs[k] && xc_graph_count_uses(g, n->outputs[k]) > 0) return NULL;
  bool conv = is_onnx(n, "Conv"), maxp = is_onnx(n, "MaxPool"), avgp = is_onnx(n, "AveragePool");
  bool gap = is_onnx(n, "GlobalAveragePool"), gmp = is_onnx(n, "GlobalMaxPool");
  bool bn = is_onnx(n, "BatchNormalization");
  if (!(conv || maxp || avgp || gap || gmp || bn)) return NULL;
  if (bn && !all_constant(n, 1)) return NULL;
  if (conv && (n->num_inputs < 2 || !n->inputs[1] || n->inputs[1]->rank != r)) return NULL;
  if (bn && (n->num_outputs > 1 && (n->outputs[1] || (n->num_outputs > 2 && n->outputs[2])))) return NULL;
  if (bn && xc_node_attr_int(n, "training_mode")) return NULL;

  xc_value_t *xt, *yt;
  XC_RETURN_IF_ERROR(add_transpose(g, n, x, r, "_nhwc", &xt));
  XC_RETURN_IF_ERROR(fresh_value(g, y->name, "_nhwc", &yt));
  xc_node_t* m = NULL;
  if (conv || maxp || avgp) {
    xc_value_t* ins[3] = {xt, NULL, NULL};
    int nin = 1;
    if (conv) {
      /* OIHW -> HWIO: [k..., C/group, M], output channels last, so that the
       * weights of a tile of consecutive output channels (a GEMM's B row, a
       * depthwise tap) are consecutive in memory: the layout the kernels
       * read, made once here instead of gathered at every launch */
      int64_t perm[XC_MAX_RANK];
      for (int i = 0; i + 2 < r; i++) perm[i] = i + 2;
      perm[r - 2] = 1;
      perm[r - 1] = 0;
      xc_value_t* w = n->inputs[1];
      if (w->constant) {
        xc_tensor_t* wt;
        XC_RETURN_IF_ERROR(permute_tensor(w->constant, perm, &wt));
        XC_RETURN_IF_ERROR(add_constant(g, w->name, "_hwio", wt, &ins[1]));
      } else {
        /* weights computed or fed at run time: transposed by a kernel
         * each run (a conv reads every weight many times, the transpose
         * once) */
        XC_RETURN_IF_ERROR(fresh_value(g, w->name, "_hwio", &ins[1]));
        XC_RETURN_IF_ERROR(add_transpose_node(g, n, w, r, perm, ins[1]));
      }
      nin = 2;
      if (n->num_inputs > 2 && n->inputs[2]) ins[nin++] = n->inputs[2];
    }
    const char* op = conv ? "ConvNHWC" : maxp ? "MaxPoolNHWC" : "AveragePoolNHWC";
    XC_RETURN_IF_ERROR(xc_graph_add_node(g, op, "xcomp", n->name, nin, ins, 1, &yt, &m));
    copy_attrs(m, n);
    if (conv) XC_RETURN_IF_ERROR(xc_node_set_string(g, m, "weight_layout", "HWIO"));
  } else if (gap || gmp) {
    int64_t axes_dims[1] = {r - 2};
    xc_tensor_t* axes;
    XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, axes_dims, &axes));
    for (int i = 0; i < r - 2; i++) xc_tensor_set_i64(axes, i, i + 1);
    xc_value_t* ins[2] = {xt, NULL};
    XC_RETURN_IF_ERROR(add_constant(g, y->name, "_axes", axes, &ins[1]));
    XC_RETURN_IF_ERROR(
        xc_graph_add_node(g, gap ? "ReduceMean" : "ReduceMax", "", n->name, 2, ins, 1, &yt, &m));
    XC_RETURN_IF_ERROR(xc_node_set_int(g, m, "keepdims", 1));
  } else {
    /* y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a */
    const xc_tensor_t *sc = n->inputs[1]->constant, *bi = n->inputs[2]->constant,
                      *mean = n->inputs[3]->constant, *var = n->inputs[4]->constant;
    int64_t c = sc->numel;
    if (bi->numel != c || mean->numel != c || var->numel != c) return NULL;
    double eps = xc_node_attr_float(n, "epsilon");
    xc_tensor_t *a, *b;
    int64_t d[1] = {c};
    XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, 1, d, &a));
    xc_status_t s = xc_tensor_create(x->dtype, 1, d, &b);
    if (s) {
      xc_tensor_destroy(a);
      return s;
    }
    for (int64_t i = 0; i < c; i++) {
      double ai = xc_tensor_get_f64(sc, i) / sqrt(xc_tensor_get_f64(var, i) + eps);
      xc_tensor_set_f64(a, i, ai);
      xc_tensor_set_f64(b, i, xc_tensor_get_f64(bi, i) - xc_tensor_get_f64(mean, i) * ai);
    }
    xc_value_t *av, *bv, *mid;
    s = add_constant(g, y->name, "_scale", a, &av);
    if (s) {
      xc_tensor_destroy(b);
      return s;
    }
    XC_RETURN_IF_ERROR(add_constant(g, y->name, "_shift", b, &bv));
    XC_RETURN_IF_ERROR(fresh_value(g, y->name, "_scaled", &mid));
    xc_value_t* mi[2] = {xt, av};
    xc_node_t* mul;
    XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Mul", "", NULL, 2, mi, 1, &mid, &mul));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, mul, n));
    xc_value_t* ai[2] = {mid, bv};
    XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Add", "", NULL, 2, ai, 1, &yt, &m));
  }
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, m, n));
  XC_RETURN_IF_ERROR(add_transpose_back(g, n, y, yt));
  n->dead = true;
  *changed = true;
  return NULL;
}

static xc_status_t refresh(xc_graph_t* g) {
  XC_RETURN_IF_ERROR(xc_graph_compact(g));
  XC_RETURN_IF_ERROR(xc_graph_toposort(g));
  XC_RETURN_IF_ERROR(xc_graph_resolve_ops(g));
  return xc_graph_infer(g);
}

/* True when node t is a Transpose with perm NHWC -> NCHW of rank r. */
static bool is_to_first(const xc_node_t* t, int r) {
  if (!t || !is_onnx(t, "Transpose") || !t->inputs[0] || t->inputs[0]->rank != r) return false;
  int64_t c;
  const int64_t* p = xc_node_attr_ints(t, "perm", &c);
  int64_t want[XC_MAX_RANK];
  perm_to_first(r, want);
  if (c != r) return false;
  for (int i = 0; i < r; i++)
    if (p[i] != want[i]) return false;
  return true;
}

static const char* const sinkable[] = {
    "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Elu", "Selu", "Exp", "Log", "Abs", "Neg",
    "Sqrt", "Erf", "HardSigmoid", "HardSwish", "Softplus", "Cast", "Mish", "Gelu", "Add", "Sub",
    "Mul", "Div", "Pow", "Max", "Min", "PRelu", NULL};

static bool is_sinkable(const xc_node_t* n) {
  if (n->dead || n->domain[0]) return false;
  for (const char* const* s = sinkable; *s; s++)
    if (strcmp(*s, n->op_type) == 0) return true;
  return false;
}

/* Step 2: Transpose(to-first) -> elementwise  ==>  elementwise -> Transpose. */
static xc_status_t sink_one(xc_graph_t* g, xc_node_t* e, bool* changed) {
  if (e->num_outputs != 1 || !e->outputs[0]) return NULL;
  int r = e->outputs[0]->rank;
  if (r < 3) return NULL;
  bool any = false;
  for (int k = 0; k < e->num_inputs; k++) {
    const xc_value_t* v = e->inputs[k];
    if (!v) continue;
    if (is_to_first(v->producer, r)) {
      any = true;
      continue;
    }
    if (!v->constant || v->rank > r) return NULL;
  }
  if (!any) return NULL;
  xc_value_t* newin[8];
  if (e->num_inputs > 8) return NULL;
  for (int k = 0; k < e->num_inputs; k++) {
    xc_value_t* v = e->inputs[k];
    newin[k] = v;
    if (!v) continue;
    if (is_to_first(v->producer, r)) {
      newin[k] = v->producer->inputs[0];
    } else if (v->constant->numel != 1 || v->rank == r) {
      /* pad to rank r with leading 1s, then NCHW -> NHWC */
      xc_tensor_t padded = *v->constant;
      padded.rank = r;
      int lead = r - v->rank;
      for (int i = r - 1; i >= 0; i--) padded.dims[i] = i >= lead ? v->constant->dims[i - lead] : 1;
      int64_t perm[XC_MAX_RANK];
      perm_to_last(r, perm);
      xc_tensor_t* t;
      XC_RETURN_IF_ERROR(permute_tensor(&padded, perm, &t));
      XC_RETURN_IF_ERROR(add_constant(g, v->name, "_nhwc", t, &newin[k]));
    }
  }
  xc_value_t* y = e->outputs[0];
  xc_value_t* yt;
  XC_RETURN_IF_ERROR(fresh_value(g, y->name, "_nhwc", &yt));
  xc_node_t* m;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, e->op_type, "", e->name, e->num_inputs, newin, 1, &yt, &m));
  copy_attrs(m, e);
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, m, e));
  XC_RETURN_IF_ERROR(add_transpose_back(g, e, y, yt));
  e->dead = true;
  *changed = true;
  return NULL;
}

/* Step 3: Transpose(Transpose(x, p1), p2) with p1 then p2 the identity -> x;
 * a Transpose moving only size-1 dims -> Reshape. */
static xc_status_t cancel_one(xc_graph_t* g, xc_node_t* t, bool* changed) {
  if (!is_onnx(t, "Transpose") || !t->inputs[0] || !t->outputs[0]) return NULL;
  xc_value_t* x = t->inputs[0];
  int r = x->rank;
  if (r < 1) return NULL;
  int64_t c2, p2[XC_MAX_RANK];
  const int64_t* a2 = xc_node_attr_ints(t, "perm", &c2);
  for (int i = 0; i < r; i++) p2[i] = c2 ? a2[i] : r - 1 - i;
  xc_node_t* p = x->producer;
  if (p && is_onnx(p, "Transpose") && p->inputs[0]) {
    int64_t c1;
    const int64_t* a1 = xc_node_attr_ints(p, "perm", &c1);
    bool identity = true;
    for (int i = 0; i < r; i++) identity = identity && (c1 ? a1[p2[i]] : r - 1 - p2[i]) == i;
    if (identity) {
      XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, t->outputs[0], p->inputs[0]));
      t->dead = true;
      *changed = true;
      return NULL;
    }
  }
  /* Only size-1 dims move: the non-1 dims keep their order. */
  int64_t last = -1;
  for (int i = 0; i < r; i++) {
    if (!xc_dim_is_static(x->dims[p2[i]])) return NULL;
    if (x->dims[p2[i]].value == 1) continue;
    if (p2[i] < last) return NULL;
    last = p2[i];
  }
  const xc_value_t* y = t->outputs[0];
  int64_t sd[1] = {y->rank};
  xc_tensor_t* shape;
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, sd, &shape));
  for (int i = 0; i < y->rank; i++) xc_tensor_set_i64(shape, i, y->dims[i].value);
  xc_value_t* ins[2] = {x, NULL};
  XC_RETURN_IF_ERROR(add_constant(g, y->name, "_shape", shape, &ins[1]));
  xc_value_t* out = t->outputs[0];
  t->dead = true;
  out->producer = NULL;
  xc_node_t* rs;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Reshape", "", t->name, 2, ins, 1, &out, &rs));
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, rs, t));
  *changed = true;
  return NULL;
}

xc_status_t xc_pass_layout(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  if (!o || o->target.preferred_layout != XC_LAYOUT_NHWC) return NULL;
  bool any = false;
  int n0 = g->num_nodes;
  for (int i = 0; i < n0; i++) XC_RETURN_IF_ERROR(convert_node(g, g->nodes[i], &any));
  if (!any) return NULL;
  *changed = true;
  XC_RETURN_IF_ERROR(refresh(g));
  for (int round = 0; round < 64; round++) {
    bool step = false;
    int n = g->num_nodes;
    for (int i = 0; i < n; i++) {
      xc_node_t* nd = g->nodes[i];
      if (nd->dead) continue;
      if (is_sinkable(nd)) XC_RETURN_IF_ERROR(sink_one(g, nd, &step));
    }
    for (int i = 0; i < g->num_nodes; i++) {
      xc_node_t* nd = g->nodes[i];
      if (!nd->dead) XC_RETURN_IF_ERROR(cancel_one(g, nd, &step));
    }
    if (!step) break;
    /* Transposes nobody reads any more. */
    for (int i = g->num_nodes - 1; i >= 0; i--) {
      xc_node_t* nd = g->nodes[i];
      if (nd->dead || !is_onnx(nd, "Transpose")) continue;
      if (!(nd->outputs[0]->flags & XC_VALUE_OUTPUT) && xc_graph_count_uses(g, nd->outputs[0]) == 0)
        nd->dead = true;
    }
    XC_RETURN_IF_ERROR(refresh(g));
  }
  return NULL;
}
