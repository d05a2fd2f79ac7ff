/* Op family 'shape2': constants and data-movement ops that build or
 * rearrange tensors (Constant, ConstantOfShape, Range, Tile, Pad,
 * DepthToSpace, SpaceToDepth, Trilu, OneHot, NonZero, EyeLike, Compress,
 * ReverseSequence, CenterCropPad). The first half of the family lives in
 * ops_shape.c. */
#include <math.h>

#include "shape_common.h"

/* ---- Constant ------------------------------------------------------------- */

static const char* const constant_kinds[] = {"value",        "sparse_value", "value_float",
                                             "value_floats", "value_int",    "value_ints",
                                             "value_string", "value_strings"};

/* The one attribute a Constant node sets. */
static xc_status_t constant_attr(const xc_node_t* n, const char** out) {
  *out = NULL;
  for (size_t i = 0; i < sizeof constant_kinds / sizeof constant_kinds[0]; i++)
    if (xc_node_has_attr(n, constant_kinds[i])) {
      if (*out)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "sets both '%s' and '%s'", *out,
                             constant_kinds[i]);
      *out = constant_kinds[i];
    }
  if (!*out) return xc_node_error(n, XC_INVALID_ARGUMENT, "sets no value attribute");
  if (strcmp(*out, "sparse_value") == 0 || strcmp(*out, "value_string") == 0 ||
      strcmp(*out, "value_strings") == 0)
    return xc_node_error(n, XC_UNSUPPORTED, "'%s' is not supported (no string or sparse tensors)",
                         *out);
  return NULL;
}

static xc_status_t infer_constant(xc_graph_t* g, xc_node_t* n) {
  const char* which;
  XC_RETURN_IF_ERROR(constant_attr(n, &which));
  const xc_attr_t* a = xc_node_find_attr(n, which);
  xc_dim_t dims[XC_MAX_RANK];
  xc_dim_t elems[SC_MAX_INTS];
  int64_t ne = -1;
  xc_value_t* out = n->outputs[0];
  if (strcmp(which, "value") == 0) {
    const xc_tensor_t* t = a->t;
    if (!t) return xc_node_error(n, XC_INVALID_ARGUMENT, "'value' holds no tensor");
    for (int i = 0; i < t->rank; i++) dims[i] = xc_dim_const(t->dims[i]);
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, t->dtype, t->rank, dims));
    if (t->rank <= 1 && t->numel <= SC_MAX_INTS && xc_dtype_is_int(t->dtype)) {
      ne = t->numel;
      for (int64_t i = 0; i < ne; i++) elems[i] = xc_dim_const(xc_tensor_get_i64(t, i));
    }
  } else if (strcmp(which, "value_float") == 0) {
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_F32, 0, NULL));
  } else if (strcmp(which, "value_floats") == 0) {
    dims[0] = xc_dim_const(a->n);
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_F32, 1, dims));
  } else if (strcmp(which, "value_int") == 0) {
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_I64, 0, NULL));
    ne = 1;
    elems[0] = xc_dim_const(a->i);
  } else {
    dims[0] = xc_dim_const(a->n);
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_I64, 1, dims));
    if (a->n <= SC_MAX_INTS) {
      ne = a->n;
      for (int64_t i = 0; i < ne; i++) elems[i] = xc_dim_const(a->ints[i]);
    }
  }
  if (out && ne >= 0) XC_RETURN_IF_ERROR(xc_value_set_elems(g, out, ne, elems));
  return NULL;
}

static xc_status_t eval_constant(xc_eval_ctx_t* ctx) {
  const char* which;
  XC_RETURN_IF_ERROR(constant_attr(ctx->node, &which));
  const xc_attr_t* a = xc_node_find_attr(ctx->node, which);
  xc_tensor_t* out;
  if (strcmp(which, "value") == 0) {
    if (!a->t) return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "'value' holds no tensor");
    return xc_tensor_clone(a->t, &ctx->outputs[0]);
  }
  bool is_float = strcmp(which, "value_float") == 0 || strcmp(which, "value_floats") == 0;
  bool is_list = strcmp(which, "value_floats") == 0 || strcmp(which, "value_ints") == 0;
  int64_t len = is_list ? a->n : 1;
  XC_RETURN_IF_ERROR(
      sc_new_output(ctx, 0, is_float ? XC_F32 : XC_I64, is_list ? 1 : 0, &len, &out));
  for (int64_t i = 0; i < len; i++) {
    if (is_float)
      xc_tensor_set_f64(out, i, is_list ? a->floats[i] : a->f);
    else
      xc_tensor_set_i64(out, i, is_list ? a->ints[i] : a->i);
  }
  return NULL;
}

/* ---- ConstantOfShape ------------------------------------------------------ */

static xc_status_t cos_value(const xc_node_t* n, const xc_tensor_t** out) {
  *out = xc_node_attr_tensor(n, "value");
  if (*out && (*out)->numel != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'value' must hold one element, has %lld",
                         (long long)(*out)->numel);
  return NULL;
}

static xc_status_t infer_constant_of_shape(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT(XC_I64)));
  const xc_tensor_t* v;
  XC_RETURN_IF_ERROR(cos_value(n, &v));
  int64_t len, ne;
  XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[0], "input", false, &len));
  if (len > XC_MAX_RANK)
    return xc_node_error(n, XC_UNSUPPORTED, "rank %lld too large", (long long)len);
  const xc_dim_t* e;
  xc_dim_t dims[XC_MAX_RANK];
  bool known = xc_value_known_elems(g, n->inputs[0], &ne, &e) && ne == len;
  for (int i = 0; i < len; i++) {
    if (known && xc_dim_is_static(e[i]) && e[i].value < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "negative dim %lld", (long long)e[i].value);
    dims[i] = known ? e[i] : xc_dim_fresh(g, "const");
  }
  xc_dtype_t dt = v ? v->dtype : XC_F32;
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, dt, (int)len, dims));
  /* A small integer fill is a known vector (e.g. a shape of ones). */
  if (n->outputs[0] && v && xc_dtype_is_int(dt) && len == 1 && xc_dim_is_static(dims[0]) &&
      dims[0].value <= SC_MAX_INTS) {
    xc_dim_t elems[SC_MAX_INTS];
    for (int64_t i = 0; i < dims[0].value; i++) elems[i] = xc_dim_const(xc_tensor_get_i64(v, 0));
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], dims[0].value, elems));
  }
  return NULL;
}

static xc_status_t eval_constant_of_shape(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* v;
  XC_RETURN_IF_ERROR(cos_value(ctx->node, &v));
  int64_t dims[SC_MAX_INTS], len;
  XC_RETURN_IF_ERROR(sc_tensor_ints(ctx->node, ctx->inputs[0], "input", XC_MAX_RANK, &len, dims));
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, v ? v->dtype : XC_F32, (int)len, dims, &out));
  if (v)
    for (int64_t i = 0; i < out->numel; i++) sc_copy(out, i, v, 0, 1);
  return NULL;
}

/* ---- Range ---------------------------------------------------------------- */

#define RANGE_DTYPES (XC_DT(XC_F32) | XC_DT(XC_F64) | XC_DT(XC_I16) | XC_DT(XC_I32) | XC_DT(XC_I64))

static xc_status_t range_count_f(const xc_node_t* n, double start, double limit, double delta,
                                 int64_t* out) {
  if (delta == 0 || isnan(delta) || isnan(start) || isnan(limit))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "bad range (delta %g)", delta);
  double c = ceil((limit - start) / delta);
  if (!(c < 9.0e15)) return xc_node_error(n, XC_OUT_OF_RANGE, "range too long");
  *out = c > 0 ? (int64_t)c : 0;
  return NULL;
}

static xc_status_t range_count_i(const xc_node_t* n, int64_t start, int64_t limit, int64_t delta,
                                 int64_t* out) {
  if (delta == 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "range delta is 0");
  /* limit - start can overflow in int64 only for absurd ranges; use doubles
   * to reject those and exact integers otherwise. */
  int64_t span;
  if (!xc_sub_i64(limit, start, &span)) return xc_node_error(n, XC_OUT_OF_RANGE, "range too long");
  int64_t c;
  if (delta > 0)
    c = span > 0 ? (span - 1) / delta + 1 : 0;
  else
    c = span < 0 ? (span + 1) / delta + 1 : 0;
  *out = c;
  return NULL;
}

static xc_status_t infer_range(xc_graph_t* g, xc_node_t* n) {
  for (int i = 0; i < 3; i++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, RANGE_DTYPES));
    if (n->inputs[i]->dtype != n->inputs[0]->dtype)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "start, limit and delta differ in dtype");
    if (n->inputs[i]->rank != 0 &&
        !(n->inputs[i]->rank == 1 && xc_dim_is_static(n->inputs[i]->dims[0]) &&
          n->inputs[i]->dims[0].value == 1))
      return xc_node_error(n, XC_INVALID_ARGUMENT, "input %d must be a scalar", i);
  }
  xc_dtype_t dt = n->inputs[0]->dtype;
  xc_dim_t len;
  if (xc_dtype_is_float(dt)) {
    const xc_tensor_t *s = n->inputs[0]->constant, *l = n->inputs[1]->constant,
                      *d = n->inputs[2]->constant;
    int64_t c;
    if (s && l && d) {
      XC_RETURN_IF_ERROR(range_count_f(n, xc_tensor_get_f64(s, 0), xc_tensor_get_f64(l, 0),
                                       xc_tensor_get_f64(d, 0), &c));
      len = xc_dim_const(c);
    } else {
      len = xc_dim_fresh(g, "range");
    }
    return sc_set_out(g, n, 0, dt, 1, &len);
  }
  int64_t ns, nl, nd;
  const xc_dim_t *s, *l, *d;
  bool ks = xc_value_known_elems(g, n->inputs[0], &ns, &s) && ns == 1;
  bool kl = xc_value_known_elems(g, n->inputs[1], &nl, &l) && nl == 1;
  bool kd = xc_value_known_elems(g, n->inputs[2], &nd, &d) && nd == 1;
  if (ks && kl && kd && xc_dim_is_static(s[0]) && xc_dim_is_static(l[0]) &&
      xc_dim_is_static(d[0])) {
    int64_t c;
    XC_RETURN_IF_ERROR(range_count_i(n, s[0].value, l[0].value, d[0].value, &c));
    len = xc_dim_const(c);
    XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, dt, 1, &len));
    if (n->outputs[0] && c <= SC_MAX_INTS) {
      xc_dim_t elems[SC_MAX_INTS];
      for (int64_t i = 0; i < c; i++) elems[i] = xc_dim_const(s[0].value + i * d[0].value);
      XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], c, elems));
    }
    return NULL;
  }
  if (ks && kl && kd && xc_dim_is_static(d[0]) && d[0].value > 0) {
    /* Symbolic bounds, e.g. Range(0, seq, 1) has seq elements. */
    xc_dim_t span = xc_dim_sub(g, l[0], s[0]);
    if (!(xc_dim_is_static(s[0]) && s[0].value == 0)) span = xc_dim_max(g, span, xc_dim_const(0));
    len = xc_dim_ceildiv(g, span, d[0]);
  } else {
    len = xc_dim_fresh(g, "range");
  }
  return sc_set_out(g, n, 0, dt, 1, &len);
}

static xc_status_t eval_range(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *s = ctx->inputs[0], *l = ctx->inputs[1], *d = ctx->inputs[2];
  if (s->numel != 1 || l->numel != 1 || d->numel != 1)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "start, limit and delta must be scalars");
  int64_t c;
  xc_tensor_t* out;
  if (xc_dtype_is_float(s->dtype)) {
    double fs = xc_tensor_get_f64(s, 0), fd = xc_tensor_get_f64(d, 0);
    XC_RETURN_IF_ERROR(range_count_f(ctx->node, fs, xc_tensor_get_f64(l, 0), fd, &c));
    XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, s->dtype, 1, &c, &out));
    for (int64_t i = 0; i < c; i++) xc_tensor_set_f64(out, i, fs + (double)i * fd);
  } else {
    int64_t is = xc_tensor_get_i64(s, 0), id = xc_tensor_get_i64(d, 0);
    XC_RETURN_IF_ERROR(range_count_i(ctx->node, is, xc_tensor_get_i64(l, 0), id, &c));
    XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, s->dtype, 1, &c, &out));
    for (int64_t i = 0; i < c; i++) xc_tensor_set_i64(out, i, is + i * id);
  }
  return NULL;
}

/* ---- Tile ----------------------------------------------------------------- */

static xc_status_t infer_tile(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  int64_t len, ne;
  XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "repeats", false, &len));
  if (len != x->rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'repeats' has %lld entries for rank %d",
                         (long long)len, x->rank);
  const xc_dim_t* e;
  bool known = xc_value_known_elems(g, n->inputs[1], &ne, &e) && ne == len;
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    if (known && xc_dim_is_static(e[i]) && e[i].value < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "negative repeat %lld", (long long)e[i].value);
    dims[i] = known ? xc_dim_mul(g, x->dims[i], e[i]) : xc_dim_fresh(g, "tile");
  }
  return sc_set_out(g, n, 0, x->dtype, x->rank, dims);
}

static xc_status_t eval_tile(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t rep[SC_MAX_INTS], len, dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(sc_tensor_ints(ctx->node, ctx->inputs[1], "repeats", XC_MAX_RANK, &len, rep));
  if (len != x->rank)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "'repeats' has %lld entries for rank %d",
                         (long long)len, x->rank);
  for (int i = 0; i < x->rank; i++) {
    if (rep[i] < 0 || !xc_mul_i64(x->dims[i], rep[i], &dims[i]))
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "bad repeat %lld", (long long)rep[i]);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, x->rank, dims, &out));
  if (out->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_strides(x->rank, x->dims, strides);
  do {
    int64_t src = 0;
    for (int i = 0; i < x->rank; i++) src += (idx[i] % x->dims[i]) * strides[i];
    sc_copy(out, o++, x, src, 1);
  } while (xc_index_next(x->rank, dims, idx));
  return NULL;
}

/* ---- Pad ------------------------------------------------------------------ */

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode_t;

static xc_status_t pad_mode(const xc_node_t* n, pad_mode_t* out) {
  const char* m = xc_node_attr_string(n, "mode");
  if (strcmp(m, "constant") == 0)
    *out = PAD_CONSTANT;
  else if (strcmp(m, "reflect") == 0)
    *out = PAD_REFLECT;
  else if (strcmp(m, "edge") == 0)
    *out = PAD_EDGE;
  else if (strcmp(m, "wrap") == 0)
    *out = PAD_WRAP;
  else
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown pad mode '%s'", m);
  return NULL;
}

/* Expands (pads, axes) into per-axis begin/end amounts. */
static xc_status_t pad_amounts(const xc_node_t* n, int rank, int64_t npads, const int64_t* pads,
                               bool has_axes, int64_t naxes, const int64_t* axes, int64_t* begin,
                               int64_t* end) {
  int64_t count = has_axes ? naxes : rank;
  if (npads != 2 * count)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'pads' has %lld entries, expected %lld",
                         (long long)npads, (long long)(2 * count));
  for (int i = 0; i < rank; i++) begin[i] = end[i] = 0;
  bool seen[XC_MAX_RANK] = {false};
  for (int64_t k = 0; k < count; k++) {
    int ax = (int)k;
    if (has_axes) XC_RETURN_IF_ERROR(xc_normalize_axis(n, axes[k], rank, &ax));
    if (seen[ax]) return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %d padded twice", ax);
    seen[ax] = true;
    begin[ax] = pads[k];
    end[ax] = pads[k + count];
  }
  return NULL;
}

static xc_status_t infer_pad(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  pad_mode_t mode;
  XC_RETURN_IF_ERROR(pad_mode(n, &mode));
  xc_value_t* cv = sc_in(n, 2);
  if (cv && (cv->dtype != x->dtype || cv->rank > 1))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'constant_value' must be a %s scalar",
                         xc_dtype_name(x->dtype));
  xc_value_t* va = sc_in(n, 3);
  if (va) XC_RETURN_IF_ERROR(xc_infer_check_input(n, 3, XC_DT(XC_I32) | XC_DT(XC_I64)));
  int64_t pads[SC_MAX_INTS], axes[SC_MAX_INTS], np, na = 0;
  int64_t begin[XC_MAX_RANK], end[XC_MAX_RANK];
  xc_dim_t dims[XC_MAX_RANK];
  bool known = sc_static_ints(g, n->inputs[1], SC_MAX_INTS, &np, pads) &&
               (!va || sc_static_ints(g, va, SC_MAX_INTS, &na, axes));
  if (known) {
    XC_RETURN_IF_ERROR(pad_amounts(n, x->rank, np, pads, va != NULL, na, axes, begin, end));
    for (int i = 0; i < x->rank; i++) {
      int64_t total;
      if (!xc_add_i64(begin[i], end[i], &total))
        return xc_node_error(n, XC_OUT_OF_RANGE, "pads of axis %d overflow", i);
      dims[i] = xc_dim_add(g, x->dims[i], xc_dim_const(total));
      if (xc_dim_is_static(dims[i]) && dims[i].value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "padding makes axis %d negative (%lld)", i,
                             (long long)dims[i].value);
      if (mode != PAD_CONSTANT && (begin[i] > 0 || end[i] > 0) && xc_dim_is_static(x->dims[i]) &&
          x->dims[i].value == 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot %s-pad empty axis %d",
                             xc_node_attr_string(n, "mode"), i);
    }
  } else {
    for (int i = 0; i < x->rank; i++) dims[i] = xc_dim_fresh(g, "pad");
  }
  return sc_set_out(g, n, 0, x->dtype, x->rank, dims);
}

/* Source coordinate for output coordinate c - begin along an axis of size
 * d, or -1 for the constant fill. */
static int64_t pad_source(pad_mode_t mode, int64_t c, int64_t d) {
  if (c >= 0 && c < d) return c;
  switch (mode) {
    case PAD_CONSTANT:
      return -1;
    case PAD_EDGE:
      return c < 0 ? 0 : d - 1;
    case PAD_WRAP:
      return ((c % d) + d) % d;
    case PAD_REFLECT: {
      if (d == 1) return 0;
      int64_t period = 2 * (d - 1);
      int64_t m = ((c % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

static xc_status_t eval_pad(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* cv = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  const xc_tensor_t* ta = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  pad_mode_t mode;
  XC_RETURN_IF_ERROR(pad_mode(n, &mode));
  int64_t pads[SC_MAX_INTS], axes[SC_MAX_INTS], np, na = 0;
  int64_t begin[XC_MAX_RANK], end[XC_MAX_RANK], dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(sc_tensor_ints(n, ctx->inputs[1], "pads", SC_MAX_INTS, &np, pads));
  if (ta) XC_RETURN_IF_ERROR(sc_tensor_ints(n, ta, "axes", SC_MAX_INTS, &na, axes));
  XC_RETURN_IF_ERROR(pad_amounts(n, x->rank, np, pads, ta != NULL, na, axes, begin, end));
  if (cv && (cv->dtype != x->dtype || cv->numel != 1))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'constant_value' must be a %s scalar",
                         xc_dtype_name(x->dtype));
  for (int i = 0; i < x->rank; i++) {
    int64_t p;
    if (!xc_add_i64(begin[i], end[i], &p) || !xc_add_i64(x->dims[i], p, &dims[i]) || dims[i] < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "padding makes axis %d negative", i);
    if (mode != PAD_CONSTANT && x->dims[i] == 0 && dims[i] > 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot %s-pad empty axis %d",
                           xc_node_attr_string(n, "mode"), i);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, x->rank, dims, &out));
  if (out->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_strides(x->rank, x->dims, strides);
  do {
    int64_t src = 0;
    for (int i = 0; i < x->rank && src >= 0; i++) {
      int64_t c = pad_source(mode, idx[i] - begin[i], x->dims[i]);
      src = c < 0 ? -1 : src + c * strides[i];
    }
    if (src >= 0)
      sc_copy(out, o, x, src, 1);
    else if (cv)
      sc_copy(out, o, cv, 0, 1);
    o++; /* zero fill is already there */
  } while (xc_index_next(x->rank, dims, idx));
  return NULL;
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------- */

static xc_status_t block_check(const xc_node_t* n, int rank, int64_t* b) {
  *b = xc_node_attr_int(n, "blocksize");
  if (rank != 4)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be 4-D, got rank %d", rank);
  if (*b <= 0 || *b > (1 << 20))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "bad blocksize %lld", (long long)*b);
  return NULL;
}

static xc_status_t d2s_mode(const xc_node_t* n, bool* crd) {
  const char* m = xc_node_attr_string(n, "mode");
  if (strcmp(m, "DCR") && strcmp(m, "CRD"))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "unknown mode '%s'", m);
  *crd = strcmp(m, "CRD") == 0;
  return NULL;
}

static xc_status_t infer_depth_to_space(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int64_t b;
  bool crd;
  XC_RETURN_IF_ERROR(block_check(n, x->rank, &b));
  XC_RETURN_IF_ERROR(d2s_mode(n, &crd));
  xc_dim_t c = x->dims[1], bb = xc_dim_const(b * b);
  if (xc_dim_is_static(c) && c.value % (b * b))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "channels %lld not divisible by blocksize^2 %lld",
                         (long long)c.value, (long long)(b * b));
  xc_dim_t dims[4] = {x->dims[0], xc_dim_floordiv(g, c, bb),
                      xc_dim_mul(g, x->dims[2], xc_dim_const(b)),
                      xc_dim_mul(g, x->dims[3], xc_dim_const(b))};
  return sc_set_out(g, n, 0, x->dtype, 4, dims);
}

static xc_status_t eval_depth_to_space(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t b;
  bool crd;
  XC_RETURN_IF_ERROR(block_check(ctx->node, x->rank, &b));
  XC_RETURN_IF_ERROR(d2s_mode(ctx->node, &crd));
  int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (C % (b * b))
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "channels %lld not divisible by %lld",
                         (long long)C, (long long)(b * b));
  int64_t oc = C / (b * b);
  int64_t dims[4] = {x->dims[0], oc, H * b, W * b};
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, 4, dims, &out));
  int64_t o = 0;
  for (int64_t i = 0; i < dims[0]; i++)
    for (int64_t c = 0; c < oc; c++)
      for (int64_t h = 0; h < dims[2]; h++)
        for (int64_t w = 0; w < dims[3]; w++) {
          int64_t bh = h % b, bw = w % b;
          int64_t ic = crd ? c * b * b + bh * b + bw : (bh * b + bw) * oc + c;
          sc_copy(out, o++, x, ((i * C + ic) * H + h / b) * W + w / b, 1);
        }
  return NULL;
}

static xc_status_t infer_space_to_depth(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int64_t b;
  XC_RETURN_IF_ERROR(block_check(n, x->rank, &b));
  for (int i = 2; i < 4; i++)
    if (xc_dim_is_static(x->dims[i]) && x->dims[i].value % b)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "dim %lld of axis %d not divisible by %lld",
                           (long long)x->dims[i].value, i, (long long)b);
  xc_dim_t dims[4] = {x->dims[0], xc_dim_mul(g, x->dims[1], xc_dim_const(b * b)),
                      xc_dim_floordiv(g, x->dims[2], xc_dim_const(b)),
                      xc_dim_floordiv(g, x->dims[3], xc_dim_const(b))};
  return sc_set_out(g, n, 0, x->dtype, 4, dims);
}

static xc_status_t eval_space_to_depth(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t b;
  XC_RETURN_IF_ERROR(block_check(ctx->node, x->rank, &b));
  int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (H % b || W % b)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "spatial dims not divisible by %lld",
                         (long long)b);
  int64_t dims[4] = {x->dims[0], 0, H / b, W / b};
  if (!xc_mul_i64(C, b * b, &dims[1]))
    return xc_node_error(ctx->node, XC_OUT_OF_RANGE, "channels overflow");
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, 4, dims, &out));
  int64_t o = 0;
  for (int64_t i = 0; i < dims[0]; i++)
    for (int64_t c = 0; c < dims[1]; c++)
      for (int64_t h = 0; h < dims[2]; h++)
        for (int64_t w = 0; w < dims[3]; w++) {
          int64_t ic = c % C, blk = c / C, bh = blk / b, bw = blk % b;
          sc_copy(out, o++, x, ((i * C + ic) * H + h * b + bh) * W + w * b + bw, 1);
        }
  return NULL;
}

/* ---- Trilu ---------------------------------------------------------------- */

static xc_status_t infer_trilu(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  if (n->inputs[0]->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must have rank >= 2");
  if (sc_in(n, 1)) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
    if (n->inputs[1]->rank != 0 && n->inputs[1]->rank != 1)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "'k' must be a scalar");
  }
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t eval_trilu(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  if (x->rank < 2)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input must have rank >= 2");
  int64_t k = 0;
  if (ctx->num_inputs > 1 && ctx->inputs[1]) {
    if (ctx->inputs[1]->numel != 1)
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "'k' must be a scalar");
    k = xc_tensor_get_i64(ctx->inputs[1], 0);
  }
  bool upper = xc_node_attr_int(ctx->node, "upper") != 0;
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, x->rank, x->dims, &out));
  int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  int64_t mats = rows > 0 && cols > 0 ? x->numel / (rows * cols) : 0;
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        /* |j - i| <= 2^40, so comparing with any k cannot overflow. */
        bool keep = upper ? j - i >= k : j - i <= k;
        int64_t e = (m * rows + i) * cols + j;
        if (keep) sc_copy(out, e, x, e, 1);
      }
  return NULL;
}

/* ---- OneHot --------------------------------------------------------------- */

static xc_status_t infer_one_hot(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT_NUMERIC));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 2, XC_DT_ALL));
  xc_value_t *ind = n->inputs[0], *depth = n->inputs[1], *vals = n->inputs[2];
  if (vals->rank != 1 || !xc_dim_is_static(vals->dims[0]) || vals->dims[0].value != 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'values' must be a 2-element vector");
  if (depth->rank > 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "'depth' must be a scalar");
  int r = ind->rank + 1, axis;
  if (r > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "rank %d too large", r);
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), r, &axis));
  xc_dim_t d;
  int64_t ne;
  const xc_dim_t* e;
  if (xc_dtype_is_int(depth->dtype) && xc_value_known_elems(g, depth, &ne, &e) && ne == 1) {
    d = e[0];
  } else if (depth->constant && depth->constant->numel == 1 &&
             fabs(xc_tensor_get_f64(depth->constant, 0)) < 9.0e15) {
    d = xc_dim_const((int64_t)xc_tensor_get_f64(depth->constant, 0));
  } else {
    d = xc_dim_fresh(g, "depth");
  }
  if (xc_dim_is_static(d) && d.value < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "depth %lld must be positive", (long long)d.value);
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) dims[i] = i == axis ? d : ind->dims[k++];
  return sc_set_out(g, n, 0, vals->dtype, r, dims);
}

static xc_status_t eval_one_hot(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *ind = ctx->inputs[0], *dt = ctx->inputs[1], *vals = ctx->inputs[2];
  if (dt->numel != 1 || vals->numel != 2)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT,
                         "depth must be a scalar, values 2 elements");
  double fd = xc_tensor_get_f64(dt, 0);
  int64_t depth = xc_dtype_is_int(dt->dtype) ? xc_tensor_get_i64(dt, 0) : (int64_t)fd;
  if (depth < 1 || (!xc_dtype_is_int(dt->dtype) && !(fd < 9.0e15)))
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "depth %g must be positive", fd);
  int r = ind->rank + 1, axis;
  if (r > XC_MAX_RANK) return xc_node_error(ctx->node, XC_UNSUPPORTED, "rank %d too large", r);
  XC_RETURN_IF_ERROR(xc_normalize_axis(ctx->node, xc_node_attr_int(ctx->node, "axis"), r, &axis));
  int64_t dims[XC_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) dims[i] = i == axis ? depth : ind->dims[k++];
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, vals->dtype, r, dims, &out));
  for (int64_t i = 0; i < out->numel; i++) sc_copy(out, i, vals, 0, 1);
  int64_t outer = sc_prod(0, axis, dims), inner = sc_prod(axis + 1, r, dims);
  for (int64_t b = 0; b < outer; b++)
    for (int64_t j = 0; j < inner; j++) {
      int64_t src = b * inner + j, v;
      if (xc_dtype_is_int(ind->dtype)) {
        v = xc_tensor_get_i64(ind, src);
      } else {
        double f = xc_tensor_get_f64(ind, src);
        if (!(fabs(f) < 9.0e15)) continue;
        v = (int64_t)f;
      }
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue; /* out-of-range indices give all "off" */
      sc_copy(out, (b * depth + v) * inner + j, vals, 1, 1);
    }
  return NULL;
}

/* ---- NonZero, Compress ---------------------------------------------------- */

static bool is_nonzero(const xc_tensor_t* t, int64_t i) {
  if (xc_dtype_is_float(t->dtype)) return xc_tensor_get_f64(t, i) != 0.0;
  return xc_tensor_get_i64(t, i) != 0;
}

static xc_status_t infer_non_zero(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_dim_t dims[2] = {xc_dim_const(n->inputs[0]->rank), xc_dim_fresh(g, "nonzero")};
  return sc_set_out(g, n, 0, XC_I64, 2, dims);
}

static xc_status_t eval_non_zero(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t count = 0;
  for (int64_t i = 0; i < x->numel; i++) count += is_nonzero(x, i);
  int64_t dims[2] = {x->rank, count};
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, XC_I64, 2, dims, &out));
  if (x->numel == 0) return NULL;
  int64_t idx[XC_MAX_RANK] = {0}, k = 0, i = 0;
  int64_t* o = out->data;
  do {
    if (is_nonzero(x, i)) {
      for (int d = 0; d < x->rank; d++) o[d * count + k] = idx[d];
      k++;
    }
    i++;
  } while (xc_index_next(x->rank, x->dims, idx));
  return NULL;
}

static xc_status_t infer_compress(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_BOOL)));
  xc_value_t* x = n->inputs[0];
  if (n->inputs[1]->rank != 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'condition' must be 1-D");
  int64_t cond[SC_MAX_INTS], nc;
  xc_dim_t kept;
  if (sc_static_ints(g, n->inputs[1], SC_MAX_INTS, &nc, cond)) {
    int64_t c = 0;
    for (int64_t i = 0; i < nc; i++) c += cond[i] != 0;
    kept = xc_dim_const(c);
  } else {
    kept = xc_dim_fresh(g, "compress");
  }
  if (!xc_node_has_attr(n, "axis")) return sc_set_out(g, n, 0, x->dtype, 1, &kept);
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  xc_dim_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof(xc_dim_t) * (size_t)x->rank);
  dims[axis] = kept;
  return sc_set_out(g, n, 0, x->dtype, x->rank, dims);
}

static xc_status_t eval_compress(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *x = ctx->inputs[0], *cond = ctx->inputs[1];
  bool flat = !xc_node_has_attr(ctx->node, "axis");
  int axis = 0;
  int64_t outer = 1, d = x->numel, inner = 1;
  if (!flat) {
    XC_RETURN_IF_ERROR(
        xc_normalize_axis(ctx->node, xc_node_attr_int(ctx->node, "axis"), x->rank, &axis));
    outer = sc_prod(0, axis, x->dims);
    d = x->dims[axis];
    inner = sc_prod(axis + 1, x->rank, x->dims);
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < cond->numel; i++) {
    bool on = is_nonzero(cond, i);
    if (on && i >= d)
      return xc_node_error(ctx->node, XC_OUT_OF_RANGE,
                           "condition selects index %lld beyond the axis size %lld", (long long)i,
                           (long long)d);
    kept += on;
  }
  int64_t dims[XC_MAX_RANK];
  int r = flat ? 1 : x->rank;
  if (flat)
    dims[0] = kept;
  else {
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    dims[axis] = kept;
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  int64_t o = 0;
  for (int64_t b = 0; b < outer; b++)
    for (int64_t i = 0; i < cond->numel && i < d; i++)
      if (is_nonzero(cond, i)) {
        sc_copy(out, o, x, (b * d + i) * inner, inner);
        o += inner;
      }
  return NULL;
}

/* ---- EyeLike -------------------------------------------------------------- */

static xc_status_t eye_dtype(const xc_node_t* n, xc_dtype_t in, xc_dtype_t* out) {
  *out = in;
  if (!xc_node_has_attr(n, "dtype")) return NULL;
  int64_t v = xc_node_attr_int(n, "dtype");
  *out = v >= INT32_MIN && v <= INT32_MAX ? xc_dtype_from_onnx((int32_t)v) : XC_DTYPE_UNDEFINED;
  if (*out == XC_DTYPE_UNDEFINED)
    return xc_node_error(n, XC_UNSUPPORTED, "unsupported dtype %lld", (long long)v);
  return NULL;
}

static xc_status_t infer_eye_like(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  if (x->rank != 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "input must be 2-D, got rank %d", x->rank);
  xc_dtype_t dt;
  XC_RETURN_IF_ERROR(eye_dtype(n, x->dtype, &dt));
  return sc_set_out(g, n, 0, dt, 2, x->dims);
}

static xc_status_t eval_eye_like(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  if (x->rank != 2) return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input must be 2-D");
  xc_dtype_t dt;
  XC_RETURN_IF_ERROR(eye_dtype(ctx->node, x->dtype, &dt));
  int64_t k = xc_node_attr_int(ctx->node, "k");
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, dt, 2, x->dims, &out));
  for (int64_t i = 0; i < x->dims[0]; i++) {
    if ((k > 0 && i > INT64_MAX - k) || (k < 0 && i < INT64_MIN - k)) continue;
    int64_t j = i + k;
    if (j >= 0 && j < x->dims[1]) xc_tensor_set_f64(out, i * x->dims[1] + j, 1.0);
  }
  return NULL;
}

/* ---- ReverseSequence ------------------------------------------------------ */

static xc_status_t rs_axes(const xc_node_t* n, int rank, int* batch, int* time) {
  int64_t b = xc_node_attr_int(n, "batch_axis"), t = xc_node_attr_int(n, "time_axis");
  if (rank < 2) return xc_node_error(n, XC_INVALID_ARGUMENT, "input must have rank >= 2");
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "batch_axis %lld / time_axis %lld must be 0 and 1",
                         (long long)b, (long long)t);
  *batch = (int)b;
  *time = (int)t;
  return NULL;
}

static xc_status_t infer_reverse_sequence(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t *x = n->inputs[0], *lens = n->inputs[1];
  int b, t;
  XC_RETURN_IF_ERROR(rs_axes(n, x->rank, &b, &t));
  if (lens->rank != 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "'sequence_lens' must be 1-D");
  if (xc_dim_is_static(lens->dims[0]) && xc_dim_is_static(x->dims[b]) &&
      lens->dims[0].value != x->dims[b].value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'sequence_lens' has %lld entries, batch is %lld",
                         (long long)lens->dims[0].value, (long long)x->dims[b].value);
  return xc_infer_same_as_input(g, n, 0, 0);
}

static xc_status_t eval_reverse_sequence(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *x = ctx->inputs[0], *lens = ctx->inputs[1];
  int b, t;
  XC_RETURN_IF_ERROR(rs_axes(ctx->node, x->rank, &b, &t));
  if (lens->rank != 1 || lens->numel != x->dims[b])
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "'sequence_lens' must have %lld entries",
                         (long long)x->dims[b]);
  for (int64_t i = 0; i < lens->numel; i++) {
    int64_t l = xc_tensor_get_i64(lens, i);
    if (l < 0 || l > x->dims[t])
      return xc_node_error(ctx->node, XC_OUT_OF_RANGE,
                           "sequence length %lld out of range [0, %lld]", (long long)l,
                           (long long)x->dims[t]);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, x->rank, x->dims, &out));
  if (x->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_strides(x->rank, x->dims, strides);
  do {
    int64_t l = xc_tensor_get_i64(lens, idx[b]);
    int64_t src = o;
    if (idx[t] < l) src += (l - 1 - 2 * idx[t]) * strides[t];
    sc_copy(out, o++, x, src, 1);
  } while (xc_index_next(x->rank, x->dims, idx));
  return NULL;
}

/* ---- CenterCropPad -------------------------------------------------------- */

/* Which axes the target shape names (all when the attribute is absent). */
static xc_status_t ccp_axes(const xc_node_t* n, int rank, int64_t len, int* axes) {
  int64_t count;
  const int64_t* a = xc_node_attr_ints(n, "axes", &count);
  if (!a) {
    if (len != rank)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "'shape' has %lld entries for rank %d",
                           (long long)len, rank);
    for (int i = 0; i < rank; i++) axes[i] = i;
    return NULL;
  }
  if (count != len)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'shape' has %lld entries for %lld axes",
                         (long long)len, (long long)count);
  bool seen[XC_MAX_RANK] = {false};
  for (int64_t k = 0; k < count; k++) {
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, a[k], rank, &axes[k]));
    if (seen[axes[k]]) return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %d repeated", axes[k]);
    seen[axes[k]] = true;
  }
  return NULL;
}

static xc_status_t infer_center_crop_pad(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I32) | XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  int64_t len, ne;
  XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "shape", false, &len));
  if (len > XC_MAX_RANK) return xc_node_error(n, XC_INVALID_ARGUMENT, "'shape' too long");
  int axes[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(ccp_axes(n, x->rank, len, axes));
  const xc_dim_t* e;
  bool known = xc_value_known_elems(g, n->inputs[1], &ne, &e) && ne == len;
  xc_dim_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof(xc_dim_t) * (size_t)x->rank);
  for (int k = 0; k < len; k++) {
    if (known && xc_dim_is_static(e[k]) && e[k].value < 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "negative target dim");
    dims[axes[k]] = known ? e[k] : xc_dim_fresh(g, "crop");
  }
  return sc_set_out(g, n, 0, x->dtype, x->rank, dims);
}

static xc_status_t eval_center_crop_pad(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t shape[SC_MAX_INTS], len, dims[XC_MAX_RANK], off[XC_MAX_RANK] = {0};
  XC_RETURN_IF_ERROR(sc_tensor_ints(ctx->node, ctx->inputs[1], "shape", XC_MAX_RANK, &len, shape));
  int axes[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(ccp_axes(ctx->node, x->rank, len, axes));
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int k = 0; k < len; k++) {
    int a = axes[k];
    if (shape[k] < 0) return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "negative target dim");
    dims[a] = shape[k];
    /* Cropping starts (d - t) / 2 in; padding puts the data (t - d) / 2 in. */
    off[a] = x->dims[a] >= shape[k] ? (x->dims[a] - shape[k]) / 2 : -((shape[k] - x->dims[a]) / 2);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, x->rank, dims, &out));
  if (out->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_strides(x->rank, x->dims, strides);
  do {
    int64_t src = 0;
    for (int i = 0; i < x->rank && src >= 0; i++) {
      int64_t c = idx[i] + off[i];
      src = c < 0 || c >= x->dims[i] ? -1 : src + c * strides[i];
    }
    if (src >= 0) sc_copy(out, o, x, src, 1);
    o++;
  } while (xc_index_next(x->rank, dims, idx));
  return NULL;
}

/* ---- the table ------------------------------------------------------------ */

static const xc_attr_def_t constant_attrs[] = {XC_ATTR_OPT("value", XC_ATTR_TENSOR),
                                               XC_ATTR_OPT("sparse_value", XC_ATTR_TENSOR),
                                               XC_ATTR_OPT("value_float", XC_ATTR_FLOAT),
                                               XC_ATTR_OPT("value_floats", XC_ATTR_FLOATS),
                                               XC_ATTR_OPT("value_int", XC_ATTR_INT),
                                               XC_ATTR_OPT("value_ints", XC_ATTR_INTS),
                                               XC_ATTR_OPT("value_string", XC_ATTR_STRING),
                                               XC_ATTR_OPT("value_strings", XC_ATTR_STRINGS),
                                               XC_ATTR_END};
static const xc_attr_def_t cos_attrs[] = {XC_ATTR_OPT("value", XC_ATTR_TENSOR), XC_ATTR_END};
static const xc_attr_def_t pad_attrs[] = {XC_ATTR_S("mode", "constant"), XC_ATTR_END};
static const xc_attr_def_t d2s_attrs[] = {XC_ATTR_REQ("blocksize", XC_ATTR_INT),
                                          XC_ATTR_S("mode", "DCR"), XC_ATTR_END};
static const xc_attr_def_t s2d_attrs[] = {XC_ATTR_REQ("blocksize", XC_ATTR_INT), XC_ATTR_END};
static const xc_attr_def_t trilu_attrs[] = {XC_ATTR_I("upper", 1), XC_ATTR_END};
static const xc_attr_def_t one_hot_attrs[] = {XC_ATTR_I("axis", -1), XC_ATTR_END};
static const xc_attr_def_t compress_attrs[] = {XC_ATTR_OPT("axis", XC_ATTR_INT), XC_ATTR_END};
static const xc_attr_def_t eye_attrs[] = {XC_ATTR_OPT("dtype", XC_ATTR_INT), XC_ATTR_I("k", 0),
                                          XC_ATTR_END};
static const xc_attr_def_t rs_attrs[] = {XC_ATTR_I("batch_axis", 1), XC_ATTR_I("time_axis", 0),
                                         XC_ATTR_END};
static const xc_attr_def_t ccp_attrs[] = {XC_ATTR_OPT("axes", XC_ATTR_INTS), XC_ATTR_END};

const xc_op_def_t xc_ops_shape2[] = {
    {"Constant", "", 0, 0, 1, 1, constant_attrs, XC_DT_ALL, infer_constant, eval_constant,
     "A tensor given by one attribute."},
    {"ConstantOfShape", "", 1, 1, 1, 1, cos_attrs, XC_DT(XC_I64), infer_constant_of_shape,
     eval_constant_of_shape, "A tensor of the given shape filled with one value."},
    {"Range", "", 3, 3, 1, 1, NULL, RANGE_DTYPES, infer_range, eval_range,
     "start, start+delta, ... up to (not including) limit."},
    {"Tile", "", 2, 2, 1, 1, NULL, XC_DT_ALL, infer_tile, eval_tile,
     "Repeats the input along each axis."},
    {"Pad", "", 2, 4, 1, 1, pad_attrs, XC_DT_ALL, infer_pad, eval_pad,
     "Pads (or crops, with negative pads) in constant, reflect, edge or wrap mode."},
    {"DepthToSpace", "", 1, 1, 1, 1, d2s_attrs, XC_DT_ALL, infer_depth_to_space,
     eval_depth_to_space, "Moves channel blocks into spatial blocks (DCR or CRD order)."},
    {"SpaceToDepth", "", 1, 1, 1, 1, s2d_attrs, XC_DT_ALL, infer_space_to_depth,
     eval_space_to_depth, "Moves spatial blocks into channels."},
    {"Trilu", "", 1, 2, 1, 1, trilu_attrs, XC_DT_ALL, infer_trilu, eval_trilu,
     "Keeps the upper or lower triangle of the last two axes."},
    {"OneHot", "", 3, 3, 1, 1, one_hot_attrs, XC_DT_NUMERIC, infer_one_hot, eval_one_hot,
     "One-hot encoding of indices along a new axis."},
    {"NonZero", "", 1, 1, 1, 1, NULL, XC_DT_ALL, infer_non_zero, eval_non_zero,
     "Indices of non-zero elements, one row per axis."},
    {"Compress", "", 2, 2, 1, 1, compress_attrs, XC_DT_ALL, infer_compress, eval_compress,
     "Selects slices along an axis (or of the flattened input) where condition is true."},
    {"EyeLike", "", 1, 1, 1, 1, eye_attrs, XC_DT_ALL, infer_eye_like, eval_eye_like,
     "Identity-like matrix with ones on diagonal k."},
    {"ReverseSequence", "", 2, 2, 1, 1, rs_attrs, XC_DT_ALL, infer_reverse_sequence,
     eval_reverse_sequence, "Reverses the first sequence_lens[b] steps of each batch entry."},
    {"CenterCropPad", "", 2, 2, 1, 1, ccp_attrs, XC_DT_ALL, infer_center_crop_pad,
     eval_center_crop_pad, "Center crops or zero-pads to a target shape."},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
