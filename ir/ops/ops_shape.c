/* Op family 'shape': ops that move or view data without arithmetic on it
 * (Reshape, Transpose, Concat, Split, Slice, Gather, ...). Their inference
 * keeps dims symbolic and propagates known element values of small integer
 * vectors, so Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains give
 * exact (possibly symbolic) shapes. Kernels copy bytes, so every dtype works. */
#include "shape_common.h"

/* Known elements of an input when it holds at most cap of them. */
static bool known_elems(xc_graph_t* g, const xc_value_t* v, int64_t* n, const xc_dim_t** e) {
  return v && xc_value_known_elems(g, v, n, e);
}

/* ---- Identity, Dropout ---------------------------------------------------- */

static xc_status_t infer_identity(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_same_as_input(g, n, 0, 0));
  int64_t ne;
  const xc_dim_t* e;
  if (n->outputs[0] && known_elems(g, n->inputs[0], &ne, &e))
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], ne, e));
  return NULL;
}

static xc_status_t eval_identity(xc_eval_ctx_t* ctx) {
  return xc_tensor_clone(ctx->inputs[0], &ctx->outputs[0]);
}

static xc_status_t infer_dropout(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  xc_value_t* ratio = sc_in(n, 1);
  xc_value_t* training = sc_in(n, 2);
  if (ratio && (ratio->rank != 0 || !xc_dtype_is_float(ratio->dtype)))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'ratio' must be a float scalar");
  if (training && (training->rank != 0 || training->dtype != XC_BOOL))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "'training_mode' must be a bool scalar");
  xc_value_t* x = n->inputs[0];
  XC_RETURN_IF_ERROR(xc_infer_same_as_input(g, n, 0, 0));
  return sc_set_out(g, n, 1, XC_BOOL, x->rank, x->dims);
}

/* Inference semantics: the output is the input. Training mode with a
 * non-zero ratio is random and has no reference result. */
static xc_status_t eval_dropout(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  bool training = ctx->num_inputs > 2 && ctx->inputs[2] && xc_tensor_get_i64(ctx->inputs[2], 0);
  double ratio = ctx->num_inputs > 1 && ctx->inputs[1] ? xc_tensor_get_f64(ctx->inputs[1], 0) : 0.5;
  if (training && ratio != 0.0)
    return xc_node_error(ctx->node, XC_UNSUPPORTED,
                         "training-mode Dropout with ratio %g is random; only inference is defined",
                         ratio);
  XC_RETURN_IF_ERROR(xc_tensor_clone(x, &ctx->outputs[0]));
  if (ctx->num_outputs > 1 && ctx->node->outputs[1]) {
    xc_tensor_t* mask;
    XC_RETURN_IF_ERROR(sc_new_output(ctx, 1, XC_BOOL, x->rank, x->dims, &mask));
    for (int64_t i = 0; i < mask->numel; i++) ((uint8_t*)mask->data)[i] = 1;
  }
  return NULL;
}

/* ---- Shape, Size ---------------------------------------------------------- */

static void shape_range(const xc_node_t* n, int rank, int64_t* start, int64_t* end) {
  int64_t s = xc_node_attr_int(n, "start");
  int64_t e = xc_node_has_attr(n, "end") ? xc_node_attr_int(n, "end") : rank;
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = s < 0 ? 0 : s > rank ? rank : s;
  e = e < 0 ? 0 : e > rank ? rank : e;
  if (e < s) e = s;
  *start = s;
  *end = e;
}

static xc_status_t infer_shape(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int64_t s, e;
  shape_range(n, x->rank, &s, &e);
  xc_dim_t len = xc_dim_const(e - s);
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_I64, 1, &len));
  if (!n->outputs[0]) return NULL;
  return xc_value_set_elems(g, n->outputs[0], e - s, e > s ? x->dims + s : NULL);
}

static xc_status_t eval_shape(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t s, e;
  shape_range(ctx->node, x->rank, &s, &e);
  int64_t len = e - s;
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, XC_I64, 1, &len, &out));
  for (int64_t i = 0; i < len; i++) ((int64_t*)out->data)[i] = x->dims[s + i];
  return NULL;
}

static xc_status_t infer_size(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, XC_I64, 0, NULL));
  xc_dim_t p = sc_dim_prod(g, 0, x->rank, x->dims);
  return n->outputs[0] ? xc_value_set_elems(g, n->outputs[0], 1, &p) : NULL;
}

static xc_status_t eval_size(xc_eval_ctx_t* ctx) {
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, XC_I64, 0, NULL, &out));
  ((int64_t*)out->data)[0] = ctx->inputs[0]->numel;
  return NULL;
}

/* ---- Reshape -------------------------------------------------------------- */

/* A product split into symbolic factors and a constant, used to cancel
 * common factors when Reshape infers its -1 dim (batch*seq*64 / (batch*16)
 * becomes seq*4 instead of an opaque floordiv). */
typedef struct {
  int count;
  xc_dim_t f[64];
  int64_t c;
  bool ok;
} factors_t;

static void factors_add(factors_t* fs, xc_dim_t d) {
  if (!fs->ok) return;
  if (xc_dim_is_static(d)) {
    if (!xc_mul_i64(fs->c, d.value, &fs->c)) fs->ok = false;
    return;
  }
  if (d.sym->kind == XC_SYM_MUL) {
    for (int k = 0; k < 2; k++) {
      const xc_symexpr_t* e = k ? d.sym->b : d.sym->a;
      xc_dim_t sub = {0, e};
      if (e->kind == XC_SYM_CONST) sub = xc_dim_const(e->value);
      factors_add(fs, sub);
    }
    return;
  }
  if (fs->count == 64) {
    fs->ok = false;
    return;
  }
  fs->f[fs->count++] = d;
}

/* The dim that makes prod(others) * result == prod(in). */
static xc_status_t reshape_minus_one(xc_graph_t* g, const xc_node_t* n, int in_rank,
                                     const xc_dim_t* in, int out_rank, const xc_dim_t* out,
                                     int skip, xc_dim_t* result) {
  factors_t num = {0, {{0, NULL}}, 1, true}, den = {0, {{0, NULL}}, 1, true};
  for (int i = 0; i < in_rank; i++) factors_add(&num, in[i]);
  for (int i = 0; i < out_rank; i++)
    if (i != skip) factors_add(&den, out[i]);
  if (num.ok && den.ok) {
    if (den.c == 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "cannot infer the -1 dim: the other dims multiply to 0");
    bool used[64] = {false};
    bool cancelled = true;
    for (int j = 0; j < den.count && cancelled; j++) {
      cancelled = false;
      for (int i = 0; i < num.count; i++)
        if (!used[i] && xc_dim_equal(num.f[i], den.f[j])) {
          used[i] = cancelled = true;
          break;
        }
    }
    if (cancelled && num.c % den.c == 0) {
      xc_dim_t r = xc_dim_const(1);
      for (int i = 0; i < num.count; i++)
        if (!used[i]) r = xc_dim_mul(g, r, num.f[i]);
      *result = xc_dim_mul(g, r, xc_dim_const(num.c / den.c));
      return NULL;
    }
    if (cancelled && num.count == 0 && den.count == 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "cannot reshape %lld elements: not a multiple of %lld", (long long)num.c,
                           (long long)den.c);
  }
  /* out[skip] holds a placeholder 1, so the plain product is the divisor. */
  *result = xc_dim_floordiv(g, sc_dim_prod(g, 0, in_rank, in), sc_dim_prod(g, 0, out_rank, out));
  return NULL;
}

static xc_status_t infer_reshape(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  int64_t len;
  XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "shape", false, &len));
  if (len > XC_MAX_RANK)
    return xc_node_error(n, XC_UNSUPPORTED, "target rank %lld too large", (long long)len);
  bool allowzero = xc_node_attr_int(n, "allowzero") != 0;
  xc_dim_t dims[XC_MAX_RANK];
  int64_t ne;
  const xc_dim_t* e;
  if (!known_elems(g, n->inputs[1], &ne, &e) || ne != len) {
    for (int i = 0; i < len; i++) dims[i] = xc_dim_fresh(g, "reshape");
  } else {
    int neg = -1;
    bool has_zero = false;
    for (int i = 0; i < len; i++) {
      dims[i] = e[i];
      if (!xc_dim_is_static(e[i])) continue;
      if (e[i].value == -1) {
        if (neg >= 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "shape has more than one -1");
        neg = i;
        dims[i] = xc_dim_const(1);
      } else if (e[i].value < -1) {
        return xc_node_error(n, XC_INVALID_ARGUMENT, "invalid target dim %lld",
                             (long long)e[i].value);
      } else if (e[i].value == 0) {
        has_zero = true;
        if (!allowzero) {
          if (i >= x->rank)
            return xc_node_error(n, XC_INVALID_ARGUMENT,
                                 "shape[%d] = 0 copies a dim the input (rank %d) lacks", i,
                                 x->rank);
          dims[i] = x->dims[i];
        }
      }
    }
    if (allowzero && has_zero && neg >= 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "shape holds both 0 and -1 while allowzero=1");
    if (neg >= 0) {
      XC_RETURN_IF_ERROR(
          reshape_minus_one(g, n, x->rank, x->dims, (int)len, dims, neg, &dims[neg]));
    } else {
      xc_dim_t pin = sc_dim_prod(g, 0, x->rank, x->dims);
      xc_dim_t pout = sc_dim_prod(g, 0, (int)len, dims);
      if (xc_dim_is_static(pin) && xc_dim_is_static(pout) && pin.value != pout.value)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot reshape %lld elements into %lld",
                             (long long)pin.value, (long long)pout.value);
    }
  }
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, (int)len, dims));
  if (n->outputs[0] && len <= 1 && known_elems(g, x, &ne, &e))
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], ne, e));
  return NULL;
}

static xc_status_t eval_reshape(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t dims[SC_MAX_INTS], len;
  XC_RETURN_IF_ERROR(sc_tensor_ints(n, ctx->inputs[1], "shape", XC_MAX_RANK, &len, dims));
  bool allowzero = xc_node_attr_int(n, "allowzero") != 0;
  int neg = -1;
  int64_t known = 1;
  for (int i = 0; i < len; i++) {
    if (dims[i] == -1) {
      if (neg >= 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "shape has more than one -1");
      neg = i;
      continue;
    }
    if (dims[i] < -1)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "invalid target dim %lld", (long long)dims[i]);
    if (dims[i] == 0 && !allowzero) {
      if (i >= x->rank)
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "shape[%d] = 0 copies a dim the input (rank %d) lacks", i, x->rank);
      dims[i] = x->dims[i];
    }
    if (!xc_mul_i64(known, dims[i], &known))
      return xc_node_error(n, XC_OUT_OF_RANGE, "target shape overflows");
  }
  if (neg >= 0) {
    if (known == 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "cannot infer the -1 dim: the other dims multiply to 0");
    if (x->numel % known)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "cannot reshape %lld elements: not a multiple of %lld",
                           (long long)x->numel, (long long)known);
    dims[neg] = x->numel / known;
  } else if (known != x->numel) {
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot reshape %lld elements into %lld",
                         (long long)x->numel, (long long)known);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, (int)len, dims, &out));
  sc_copy(out, 0, x, 0, x->numel);
  return NULL;
}

/* ---- Flatten -------------------------------------------------------------- */

static xc_status_t flatten_axis(const xc_node_t* n, int rank, int* out) {
  int64_t axis = xc_node_attr_int(n, "axis");
  if (axis < -(int64_t)rank || axis > rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %lld out of range for rank %d",
                         (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

static xc_status_t infer_flatten(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(flatten_axis(n, x->rank, &axis));
  xc_dim_t dims[2] = {sc_dim_prod(g, 0, axis, x->dims), sc_dim_prod(g, axis, x->rank, x->dims)};
  return sc_set_out(g, n, 0, x->dtype, 2, dims);
}

static xc_status_t eval_flatten(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int axis;
  XC_RETURN_IF_ERROR(flatten_axis(ctx->node, x->rank, &axis));
  int64_t dims[2] = {sc_prod(0, axis, x->dims), sc_prod(axis, x->rank, x->dims)};
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, 2, dims, &out));
  sc_copy(out, 0, x, 0, x->numel);
  return NULL;
}

/* ---- Transpose ------------------------------------------------------------ */

static xc_status_t transpose_perm(const xc_node_t* n, int rank, int* perm) {
  int64_t count;
  const int64_t* p = xc_node_attr_ints(n, "perm", &count);
  if (!p) {
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    return NULL;
  }
  if (count != rank)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "perm has %lld entries for rank %d",
                         (long long)count, rank);
  bool seen[XC_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    int a;
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, p[i], rank, &a));
    if (seen[a]) return xc_node_error(n, XC_INVALID_ARGUMENT, "perm repeats axis %d", a);
    seen[a] = true;
    perm[i] = a;
  }
  return NULL;
}

static xc_status_t infer_transpose(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int perm[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(transpose_perm(n, x->rank, perm));
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) dims[i] = x->dims[perm[i]];
  return sc_set_out(g, n, 0, x->dtype, x->rank, dims);
}

/* Rows [r0, r1) x columns [c0, c1) of a rows x cols matrix of es-byte
 * elements, written transposed into dst (cols x rows). */
static inline void move_tile(char* dst, const char* in, int64_t rows, int64_t cols, int64_t r0, int64_t r1, int64_t c0,
                             int64_t c1, size_t es) {
  for (int64_t i = r0; i < r1; i++)
    for (int64_t j = c0; j < c1; j++) memcpy(dst + (size_t)(j * rows + i) * es, in + (size_t)(i * cols + j) * es, es);
}

static xc_status_t eval_transpose(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int perm[XC_MAX_RANK], r = x->rank;
  XC_RETURN_IF_ERROR(transpose_perm(ctx->node, r, perm));
  int64_t dims[XC_MAX_RANK], in_strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) dims[i] = x->dims[perm[i]];
  xc_strides(r, x->dims, in_strides);
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  if (out->numel == 0) return NULL;
  const size_t es = xc_dtype_size(x->dtype);
  bool swap_last_two = r >= 2 && perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
  for (int i = 0; i < r - 2 && swap_last_two; i++) swap_last_two = perm[i] == i;
  if (swap_last_two) {
    /* A matrix (or a batch of them) transposed: in 32 x 32 tiles, so that
     * both the rows read and the rows written stay in cache (a 768 x 50257
     * weight walked column by column misses on every element). */
    const int64_t rows = x->dims[r - 2], cols = x->dims[r - 1], batch = x->numel / (rows * cols);
    enum { TILE = 32 };
    for (int64_t b = 0; b < batch; b++) {
      const char* in = (const char*)x->data + (size_t)(b * rows * cols) * es;
      char* dst = (char*)out->data + (size_t)(b * rows * cols) * es;
      for (int64_t r0 = 0; r0 < rows; r0 += TILE)
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
          const int64_t r1 = r0 + TILE < rows ? r0 + TILE : rows, c1 = c0 + TILE < cols ? c0 + TILE : cols;
          /* called with constant sizes: the element copies become moves */
          switch (es) {
            case 1: move_tile(dst, in, rows, cols, r0, r1, c0, c1, 1); break;
            case 2: move_tile(dst, in, rows, cols, r0, r1, c0, c1, 2); break;
            case 4: move_tile(dst, in, rows, cols, r0, r1, c0, c1, 4); break;
            case 8: move_tile(dst, in, rows, cols, r0, r1, c0, c1, 8); break;
            default: move_tile(dst, in, rows, cols, r0, r1, c0, c1, es);
          }
        }
    }
    return NULL;
  }
  /* The output in order; the source offset follows an odometer over the
   * output's axes, each stepping the source by its input stride (constant
   * folding moves whole weights through here: GPT-2's 50257 x 768 LM head). */
  int64_t step[XC_MAX_RANK];
  for (int i = 0; i < r; i++) step[i] = in_strides[perm[i]];
  const char* in = x->data;
  char* dst = out->data;
  int64_t src = 0;
  for (int64_t o = 0; o < out->numel; o++) {
    switch (es) {
      case 1: dst[o] = in[src]; break;
      case 2: memcpy(dst + 2 * o, in + 2 * src, 2); break;
      case 4: memcpy(dst + 4 * o, in + 4 * src, 4); break;
      case 8: memcpy(dst + 8 * o, in + 8 * src, 8); break;
      default: sc_copy(out, o, x, src, 1);
    }
    for (int i = r - 1; i >= 0; i--) {
      src += step[i];
      if (++idx[i] < dims[i]) break;
      src -= step[i] * dims[i];
      idx[i] = 0;
    }
  }
  return NULL;
}

/* ---- Concat --------------------------------------------------------------- */

static xc_status_t infer_concat(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x0 = n->inputs[0];
  int r = x0->rank;
  if (r == 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot concatenate scalars");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), r, &axis));
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0; i < r; i++) dims[i] = x0->dims[i];
  for (int k = 1; k < n->num_inputs; k++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, k, XC_DT_ALL));
    xc_value_t* x = n->inputs[k];
    if (x->dtype != x0->dtype || x->rank != r)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "input %d is %s of rank %d, input 0 is %s of rank %d", k,
                           xc_dtype_name(x->dtype), x->rank, xc_dtype_name(x0->dtype), r);
    for (int i = 0; i < r; i++) {
      if (i == axis) {
        dims[i] = xc_dim_add(g, dims[i], x->dims[i]);
      } else if (xc_dim_is_static(dims[i]) && xc_dim_is_static(x->dims[i]) &&
                 dims[i].value != x->dims[i].value) {
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "input %d has dim %lld at axis %d, input 0 has %lld", k,
                             (long long)x->dims[i].value, i, (long long)dims[i].value);
      } else if (!xc_dim_is_static(dims[i]) && xc_dim_is_static(x->dims[i])) {
        dims[i] = x->dims[i]; /* the static one is the more precise */
      }
    }
  }
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x0->dtype, r, dims));
  /* Known elements of 1-D integer pieces concatenate (shape arithmetic). */
  if (r == 1 && n->outputs[0]) {
    xc_dim_t all[SC_MAX_INTS];
    int64_t total = 0;
    for (int k = 0; k < n->num_inputs; k++) {
      int64_t ne;
      const xc_dim_t* e;
      if (!known_elems(g, n->inputs[k], &ne, &e) || total + ne > SC_MAX_INTS) return NULL;
      for (int64_t i = 0; i < ne; i++) all[total++] = e[i];
    }
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], total, all));
  }
  return NULL;
}

static xc_status_t eval_concat(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x0 = ctx->inputs[0];
  int r = x0->rank, axis;
  if (r == 0) return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "cannot concatenate scalars");
  XC_RETURN_IF_ERROR(xc_normalize_axis(ctx->node, xc_node_attr_int(ctx->node, "axis"), r, &axis));
  int64_t dims[XC_MAX_RANK];
  memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)r);
  dims[axis] = 0;
  for (int k = 0; k < ctx->num_inputs; k++) {
    const xc_tensor_t* x = ctx->inputs[k];
    if (!x || x->rank != r || x->dtype != x0->dtype)
      return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "input %d does not match input 0", k);
    for (int i = 0; i < r; i++)
      if (i != axis && x->dims[i] != x0->dims[i])
        return xc_node_error(ctx->node, XC_INVALID_ARGUMENT,
                             "input %d has dim %lld at axis %d, input 0 has %lld", k,
                             (long long)x->dims[i], i, (long long)x0->dims[i]);
    dims[axis] += x->dims[axis];
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x0->dtype, r, dims, &out));
  int64_t outer = sc_prod(0, axis, dims), inner = sc_prod(axis + 1, r, dims);
  int64_t o = 0;
  for (int64_t b = 0; b < outer; b++)
    for (int k = 0; k < ctx->num_inputs; k++) {
      const xc_tensor_t* x = ctx->inputs[k];
      int64_t chunk = x->dims[axis] * inner;
      sc_copy(out, o, x, b * chunk, chunk);
      o += chunk;
    }
  return NULL;
}

/* ---- Split ---------------------------------------------------------------- */

static xc_status_t split_count(const xc_node_t* n, int* out) {
  *out = n->num_outputs;
  if (xc_node_has_attr(n, "num_outputs")) {
    int64_t k = xc_node_attr_int(n, "num_outputs");
    if (k != n->num_outputs)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "num_outputs = %lld but the node has %d outputs",
                           (long long)k, n->num_outputs);
    if (sc_in(n, 1))
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "num_outputs and the 'split' input are exclusive");
  }
  if (*out < 1) return xc_node_error(n, XC_INVALID_ARGUMENT, "Split needs outputs");
  return NULL;
}

/* Splitting a known vector (e.g. a Shape output) splits its known elements. */
static xc_status_t split_elems(xc_graph_t* g, xc_node_t* n) {
  int64_t ne, offset = 0;
  const xc_dim_t* e;
  if (n->inputs[0]->rank != 1 || !known_elems(g, n->inputs[0], &ne, &e)) return NULL;
  for (int k = 0; k < n->num_outputs; k++) {
    xc_value_t* v = n->outputs[k];
    if (!v || !xc_dim_is_static(v->dims[0])) return NULL;
    int64_t len = v->dims[0].value;
    if (offset + len > ne) return NULL;
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, v, len, e + offset));
    offset += len;
  }
  return NULL;
}

static xc_status_t infer_split(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  int axis, count;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  XC_RETURN_IF_ERROR(split_count(n, &count));
  xc_dim_t d = x->dims[axis];
  xc_dim_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof(xc_dim_t) * (size_t)x->rank);
  xc_value_t* sv = sc_in(n, 1);
  if (sv) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
    int64_t len, ne;
    XC_RETURN_IF_ERROR(sc_vector_len(n, sv, "split", false, &len));
    if (len != count)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "'split' has %lld entries for %d outputs",
                           (long long)len, count);
    const xc_dim_t* e;
    bool known = known_elems(g, sv, &ne, &e) && ne == len;
    xc_dim_t sum = xc_dim_const(0);
    for (int k = 0; k < count; k++) {
      if (known && xc_dim_is_static(e[k]) && e[k].value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "negative split size %lld",
                             (long long)e[k].value);
      dims[axis] = known ? e[k] : xc_dim_fresh(g, "split");
      if (known) sum = xc_dim_add(g, sum, e[k]);
      XC_RETURN_IF_ERROR(sc_set_out(g, n, k, x->dtype, x->rank, dims));
    }
    if (known && xc_dim_is_static(sum) && xc_dim_is_static(d) && sum.value != d.value)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "split sizes sum to %lld, dim is %lld",
                           (long long)sum.value, (long long)d.value);
    return split_elems(g, n);
  }
  /* Even split; the last chunk is smaller when the dim does not divide. */
  xc_dim_t chunk = xc_dim_ceildiv(g, d, xc_dim_const(count));
  xc_dim_t last = xc_dim_sub(g, d, xc_dim_mul(g, chunk, xc_dim_const(count - 1)));
  if (xc_dim_is_static(last) && last.value < 0)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot split dim %lld into %d parts",
                         (long long)d.value, count);
  for (int k = 0; k < count; k++) {
    dims[axis] = k == count - 1 ? last : chunk;
    XC_RETURN_IF_ERROR(sc_set_out(g, n, k, x->dtype, x->rank, dims));
  }
  return split_elems(g, n);
}

static xc_status_t eval_split(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  int axis, count;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  XC_RETURN_IF_ERROR(split_count(n, &count));
  int64_t d = x->dims[axis];
  int64_t* sizes = malloc(sizeof(int64_t) * (size_t)count);
  if (!sizes) return xc_error_oom();
  xc_status_t s = NULL;
  if (ctx->num_inputs > 1 && ctx->inputs[1]) {
    int64_t len;
    int64_t* v;
    s = xc_tensor_to_i64_list(ctx->inputs[1], &len, &v);
    if (!s && len != count)
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "'split' has %lld entries for %d outputs",
                        (long long)len, count);
    int64_t sum = 0;
    for (int k = 0; !s && k < count; k++) {
      if (v[k] < 0 || !xc_add_i64(sum, v[k], &sum))
        s = xc_node_error(n, XC_INVALID_ARGUMENT, "bad split size %lld", (long long)v[k]);
      sizes[k] = v[k];
    }
    if (!s && sum != d)
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "split sizes sum to %lld, dim is %lld",
                        (long long)sum, (long long)d);
    free(v);
  } else {
    int64_t chunk = (d + count - 1) / count;
    for (int k = 0; k < count; k++) sizes[k] = k == count - 1 ? d - chunk * (count - 1) : chunk;
    if (sizes[count - 1] < 0)
      s = xc_node_error(n, XC_INVALID_ARGUMENT, "cannot split dim %lld into %d parts", (long long)d,
                        count);
  }
  int64_t outer = sc_prod(0, axis, x->dims), inner = sc_prod(axis + 1, x->rank, x->dims);
  int64_t offset = 0;
  for (int k = 0; !s && k < count; k++) {
    int64_t dims[XC_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[axis] = sizes[k];
    xc_tensor_t* out;
    s = sc_new_output(ctx, k, x->dtype, x->rank, dims, &out);
    if (s) break;
    int64_t chunk = sizes[k] * inner;
    for (int64_t b = 0; b < outer; b++) sc_copy(out, b * chunk, x, b * d * inner + offset, chunk);
    offset += chunk;
  }
  free(sizes);
  return s;
}

/* ---- Squeeze, Unsqueeze --------------------------------------------------- */

/* Marks the axes listed in an axes vector (normalized against rank). */
static xc_status_t mark_axes(const xc_node_t* n, int64_t count, const int64_t* axes, int rank,
                             bool* marked) {
  for (int i = 0; i < rank; i++) marked[i] = false;
  for (int64_t k = 0; k < count; k++) {
    int a;
    XC_RETURN_IF_ERROR(xc_normalize_axis(n, axes[k], rank, &a));
    if (marked[a]) return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %d repeated", a);
    marked[a] = true;
  }
  return NULL;
}

static xc_status_t infer_squeeze(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  xc_value_t* x = n->inputs[0];
  bool marked[XC_MAX_RANK];
  if (sc_in(n, 1)) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
    int64_t axes[SC_MAX_INTS], count;
    if (!sc_static_ints(g, n->inputs[1], SC_MAX_INTS, &count, axes)) {
      /* Axes known only at run time: the rank follows from their count,
       * the surviving dims are unknown. */
      int64_t len;
      XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "axes", false, &len));
      if (len > x->rank)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "%lld axes for rank %d", (long long)len,
                             x->rank);
      xc_dim_t dims[XC_MAX_RANK];
      for (int i = 0; i < x->rank - len; i++) dims[i] = xc_dim_fresh(g, "squeeze");
      return sc_set_out(g, n, 0, x->dtype, (int)(x->rank - len), dims);
    }
    XC_RETURN_IF_ERROR(mark_axes(n, count, axes, x->rank, marked));
    for (int i = 0; i < x->rank; i++)
      if (marked[i] && xc_dim_is_static(x->dims[i]) && x->dims[i].value != 1)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot squeeze axis %d of size %lld", i,
                             (long long)x->dims[i].value);
  } else {
    /* Without axes only dims known to be 1 are removed. */
    for (int i = 0; i < x->rank; i++)
      marked[i] = xc_dim_is_static(x->dims[i]) && x->dims[i].value == 1;
  }
  xc_dim_t dims[XC_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!marked[i]) dims[r++] = x->dims[i];
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, r, dims));
  int64_t ne;
  const xc_dim_t* e;
  if (n->outputs[0] && r <= 1 && known_elems(g, x, &ne, &e))
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], ne, e));
  return NULL;
}

static xc_status_t eval_squeeze(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  bool marked[XC_MAX_RANK];
  if (ctx->num_inputs > 1 && ctx->inputs[1]) {
    int64_t axes[SC_MAX_INTS], count;
    XC_RETURN_IF_ERROR(
        sc_tensor_ints(ctx->node, ctx->inputs[1], "axes", SC_MAX_INTS, &count, axes));
    XC_RETURN_IF_ERROR(mark_axes(ctx->node, count, axes, x->rank, marked));
    for (int i = 0; i < x->rank; i++)
      if (marked[i] && x->dims[i] != 1)
        return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "cannot squeeze axis %d of size %lld",
                             i, (long long)x->dims[i]);
  } else {
    for (int i = 0; i < x->rank; i++) marked[i] = x->dims[i] == 1;
  }
  int64_t dims[XC_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!marked[i]) dims[r++] = x->dims[i];
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  sc_copy(out, 0, x, 0, x->numel);
  return NULL;
}

static xc_status_t infer_unsqueeze(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  int64_t axes[SC_MAX_INTS], count;
  if (!sc_static_ints(g, n->inputs[1], SC_MAX_INTS, &count, axes)) {
    /* Axes known only at run time: the rank follows from their count. */
    int64_t len;
    XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "axes", false, &len));
    if (x->rank + len > XC_MAX_RANK)
      return xc_node_error(n, XC_UNSUPPORTED, "output rank %lld too large",
                           (long long)(x->rank + len));
    xc_dim_t dims[XC_MAX_RANK];
    for (int i = 0; i < x->rank + len; i++) dims[i] = xc_dim_fresh(g, "unsqueeze");
    return sc_set_out(g, n, 0, x->dtype, (int)(x->rank + len), dims);
  }
  int64_t r = x->rank + count;
  if (r > XC_MAX_RANK)
    return xc_node_error(n, XC_UNSUPPORTED, "output rank %lld too large", (long long)r);
  bool marked[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(mark_axes(n, count, axes, (int)r, marked));
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) dims[i] = marked[i] ? xc_dim_const(1) : x->dims[k++];
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, (int)r, dims));
  int64_t ne;
  const xc_dim_t* e;
  if (n->outputs[0] && r <= 1 && known_elems(g, x, &ne, &e))
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], ne, e));
  return NULL;
}

static xc_status_t eval_unsqueeze(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t axes[SC_MAX_INTS], count;
  XC_RETURN_IF_ERROR(sc_tensor_ints(ctx->node, ctx->inputs[1], "axes", SC_MAX_INTS, &count, axes));
  int64_t r = x->rank + count;
  if (r > XC_MAX_RANK)
    return xc_node_error(ctx->node, XC_UNSUPPORTED, "output rank %lld too large", (long long)r);
  bool marked[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(mark_axes(ctx->node, count, axes, (int)r, marked));
  int64_t dims[XC_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) dims[i] = marked[i] ? 1 : x->dims[k++];
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, (int)r, dims, &out));
  sc_copy(out, 0, x, 0, x->numel);
  return NULL;
}

/* ---- Expand --------------------------------------------------------------- */

static xc_status_t infer_expand(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  int64_t len, ne;
  XC_RETURN_IF_ERROR(sc_vector_len(n, n->inputs[1], "shape", false, &len));
  if (len > XC_MAX_RANK)
    return xc_node_error(n, XC_UNSUPPORTED, "target rank %lld too large", (long long)len);
  const xc_dim_t* e;
  xc_dim_t target[XC_MAX_RANK], dims[XC_MAX_RANK];
  int r;
  if (known_elems(g, n->inputs[1], &ne, &e) && ne == len) {
    for (int i = 0; i < len; i++) {
      if (xc_dim_is_static(e[i]) && e[i].value < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "negative target dim %lld",
                             (long long)e[i].value);
      target[i] = e[i];
    }
    XC_RETURN_IF_ERROR(xc_infer_broadcast(g, n, x->rank, x->dims, (int)len, target, &r, dims));
  } else {
    r = x->rank > len ? x->rank : (int)len;
    for (int i = 0; i < r; i++) dims[i] = xc_dim_fresh(g, "expand");
  }
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, r, dims));
  /* A broadcast small integer vector keeps known elements. */
  const xc_dim_t* xe;
  if (n->outputs[0] && r == 1 && xc_dim_is_static(dims[0]) && dims[0].value <= SC_MAX_INTS &&
      known_elems(g, x, &ne, &xe) && (ne == dims[0].value || ne == 1)) {
    xc_dim_t all[SC_MAX_INTS];
    for (int64_t i = 0; i < dims[0].value; i++) all[i] = xe[ne == 1 ? 0 : i];
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], dims[0].value, all));
  }
  return NULL;
}

static xc_status_t eval_expand(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  int64_t shape[SC_MAX_INTS], len, dims[XC_MAX_RANK];
  XC_RETURN_IF_ERROR(sc_tensor_ints(ctx->node, ctx->inputs[1], "shape", XC_MAX_RANK, &len, shape));
  int r;
  xc_status_t s = xc_broadcast_shape(x->rank, x->dims, (int)len, shape, &r, dims);
  if (s) return xc_status_annotate(s, "%s", ctx->node->name);
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  if (out->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_broadcast_strides(x, r, dims, strides);
  do {
    int64_t src = 0;
    for (int i = 0; i < r; i++) src += idx[i] * strides[i];
    sc_copy(out, o++, x, src, 1);
  } while (xc_index_next(r, dims, idx));
  return NULL;
}

/* ---- Slice ---------------------------------------------------------------- */

/* Very large or very small bounds mean "to the end" (INT64_MAX, INT_MAX...). */
#define SLICE_BIG ((int64_t)1 << 31)

/* Slice length along one axis of symbolic size d, with the ONNX clamping
 * rules. Static dims fold to constants. */
static xc_dim_t slice_len(xc_graph_t* g, xc_dim_t d, int64_t start, int64_t end, int64_t step) {
  xc_dim_t zero = xc_dim_const(0);
  /* Any step longer than a dim takes one element; bounding it keeps -step
   * and the dim arithmetic from overflowing. */
  if (step > ((int64_t)1 << 62)) step = (int64_t)1 << 62;
  if (step < -((int64_t)1 << 62)) step = -((int64_t)1 << 62);
  if (step > 0) {
    xc_dim_t s = start < 0    ? xc_dim_max(g, xc_dim_add(g, d, xc_dim_const(start)), zero)
                 : start == 0 ? zero
                              : xc_dim_min(g, xc_dim_const(start), d);
    xc_dim_t e = end < 0 ? xc_dim_max(g, xc_dim_add(g, d, xc_dim_const(end)), zero)
                 : end >= SLICE_BIG && !xc_dim_is_static(d) ? d
                                                            : xc_dim_min(g, xc_dim_const(end), d);
    xc_dim_t len = xc_dim_sub(g, e, s);
    if (!(xc_dim_is_static(s) && s.value == 0) && !xc_dim_equal(e, d))
      len = xc_dim_max(g, len, zero);
    return xc_dim_ceildiv(g, len, xc_dim_const(step));
  }
  /* Negative step: start clamps to [0, d-1], end to [-1, d-1]. */
  xc_dim_t dm1 = xc_dim_sub(g, d, xc_dim_const(1));
  xc_dim_t s = start < 0 ? xc_dim_add(g, d, xc_dim_const(start)) : xc_dim_const(start);
  if (start >= SLICE_BIG && !xc_dim_is_static(d))
    s = dm1;
  else
    s = xc_dim_min(g, xc_dim_max(g, s, zero), dm1);
  xc_dim_t e;
  if (end <= -SLICE_BIG && !xc_dim_is_static(d))
    e = xc_dim_const(-1);
  else
    e = xc_dim_min(g,
                   xc_dim_max(g, end < 0 ? xc_dim_add(g, d, xc_dim_const(end)) : xc_dim_const(end),
                              xc_dim_const(-1)),
                   dm1);
  xc_dim_t len = xc_dim_max(g, xc_dim_sub(g, s, e), zero);
  return xc_dim_ceildiv(g, len, xc_dim_const(-step));
}

/* Concrete start index and length along one axis. */
static void slice_bounds(int64_t d, int64_t start, int64_t end, int64_t step, int64_t* first,
                         int64_t* len) {
  if (start < 0) start = start < -d ? -d - 1 : start + d; /* avoid overflow */
  if (end < 0) end = end < -d ? -1 : end + d;
  if (start < 0 && step > 0) start = 0;
  if (step > 0) {
    if (start > d) start = d;
    if (end < 0) end = 0;
    if (end > d) end = d;
    *first = start;
    *len = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    if (start < 0) start = 0;
    if (start > d - 1) start = d - 1;
    if (end < -1) end = -1;
    if (end > d - 1) end = d - 1;
    *first = start;
    /* (start - end) / -step, rounded up, without negating INT64_MIN steps */
    uint64_t span = start > end ? (uint64_t)(start - end) : 0;
    uint64_t ustep = (uint64_t)0 - (uint64_t)step;
    *len = span ? (int64_t)((span + ustep - 1) / ustep) : 0;
    if (d == 0) *len = 0;
  }
}

typedef struct {
  int64_t count;
  int64_t starts[SC_MAX_INTS], ends[SC_MAX_INTS], axes[SC_MAX_INTS], steps[SC_MAX_INTS];
} slice_args_t;

/* Validates the argument vectors (lengths, steps, axes) and normalizes axes. */
static xc_status_t slice_check(const xc_node_t* n, int rank, int64_t ns, int64_t ne, bool has_axes,
                               int64_t na, bool has_steps, int64_t nst, slice_args_t* a) {
  if (ns != ne) return xc_node_error(n, XC_INVALID_ARGUMENT, "starts and ends differ in length");
  if (has_axes && na != ns)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "axes and starts differ in length");
  if (has_steps && nst != ns)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "steps and starts differ in length");
  a->count = ns;
  bool seen[XC_MAX_RANK] = {false};
  for (int64_t k = 0; k < ns; k++) {
    int ax;
    if (!has_axes) {
      if (k >= rank)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "%lld slice bounds for rank %d", (long long)ns,
                             rank);
      ax = (int)k;
    } else {
      XC_RETURN_IF_ERROR(xc_normalize_axis(n, a->axes[k], rank, &ax));
    }
    if (seen[ax]) return xc_node_error(n, XC_INVALID_ARGUMENT, "axis %d sliced twice", ax);
    seen[ax] = true;
    a->axes[k] = ax;
    if (!has_steps) a->steps[k] = 1;
    if (a->steps[k] == 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "slice step is 0");
  }
  return NULL;
}

static xc_status_t infer_slice(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  for (int i = 1; i < 5; i++)
    if (sc_in(n, i)) XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, XC_DT(XC_I32) | XC_DT(XC_I64)));
  xc_value_t* x = n->inputs[0];
  xc_value_t *vs = n->inputs[1], *ve = n->inputs[2], *va = sc_in(n, 3), *vst = sc_in(n, 4);
  slice_args_t a;
  int64_t ns, ne, na = 0, nst = 0;
  xc_dim_t dims[XC_MAX_RANK];
  memcpy(dims, x->dims, sizeof(xc_dim_t) * (size_t)x->rank);
  bool known = sc_static_ints(g, vs, SC_MAX_INTS, &ns, a.starts) &&
               sc_static_ints(g, ve, SC_MAX_INTS, &ne, a.ends) &&
               (!va || sc_static_ints(g, va, SC_MAX_INTS, &na, a.axes)) &&
               (!vst || sc_static_ints(g, vst, SC_MAX_INTS, &nst, a.steps));
  if (known) {
    XC_RETURN_IF_ERROR(slice_check(n, x->rank, ns, ne, va != NULL, na, vst != NULL, nst, &a));
    for (int64_t k = 0; k < a.count; k++) {
      int ax = (int)a.axes[k];
      dims[ax] = slice_len(g, x->dims[ax], a.starts[k], a.ends[k], a.steps[k]);
    }
  } else if (!va) {
    /* Unknown bounds: the sliced axes are the leading ones when their count
     * is static, otherwise any axis may change. */
    int64_t len = x->rank;
    if (vs->rank == 1 && xc_dim_is_static(vs->dims[0])) len = vs->dims[0].value;
    for (int i = 0; i < len && i < x->rank; i++) dims[i] = xc_dim_fresh(g, "slice");
  } else {
    int64_t axes[SC_MAX_INTS], count;
    bool axes_known = sc_static_ints(g, va, SC_MAX_INTS, &count, axes);
    for (int i = 0; i < x->rank; i++) {
      bool sliced = !axes_known;
      for (int64_t k = 0; axes_known && k < count; k++)
        if (axes[k] == i || axes[k] + x->rank == i) sliced = true;
      if (sliced) dims[i] = xc_dim_fresh(g, "slice");
    }
  }
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, x->rank, dims));
  /* Slicing a known 1-D integer vector (e.g. Shape output) keeps its elements. */
  const xc_dim_t* e;
  int64_t nelem;
  if (known && n->outputs[0] && x->rank == 1 && xc_dim_is_static(dims[0]) &&
      known_elems(g, x, &nelem, &e) && nelem == x->dims[0].value) {
    int64_t first = 0, len = nelem, step = 1;
    if (a.count == 1) {
      step = a.steps[0];
      slice_bounds(nelem, a.starts[0], a.ends[0], step, &first, &len);
    }
    xc_dim_t out[SC_MAX_INTS];
    for (int64_t i = 0; i < len; i++) out[i] = e[first + i * step];
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], len, out));
  }
  return NULL;
}

static xc_status_t eval_slice(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t* x = ctx->inputs[0];
  const xc_tensor_t* ta = ctx->num_inputs > 3 ? ctx->inputs[3] : NULL;
  const xc_tensor_t* tst = ctx->num_inputs > 4 ? ctx->inputs[4] : NULL;
  slice_args_t a;
  int64_t ns, ne, na = 0, nst = 0;
  XC_RETURN_IF_ERROR(sc_tensor_ints(n, ctx->inputs[1], "starts", SC_MAX_INTS, &ns, a.starts));
  XC_RETURN_IF_ERROR(sc_tensor_ints(n, ctx->inputs[2], "ends", SC_MAX_INTS, &ne, a.ends));
  if (ta) XC_RETURN_IF_ERROR(sc_tensor_ints(n, ta, "axes", SC_MAX_INTS, &na, a.axes));
  if (tst) XC_RETURN_IF_ERROR(sc_tensor_ints(n, tst, "steps", SC_MAX_INTS, &nst, a.steps));
  XC_RETURN_IF_ERROR(slice_check(n, x->rank, ns, ne, ta != NULL, na, tst != NULL, nst, &a));
  int r = x->rank;
  int64_t first[XC_MAX_RANK], step[XC_MAX_RANK], dims[XC_MAX_RANK];
  for (int i = 0; i < r; i++) {
    first[i] = 0;
    step[i] = 1;
    dims[i] = x->dims[i];
  }
  for (int64_t k = 0; k < a.count; k++) {
    int ax = (int)a.axes[k];
    step[ax] = a.steps[k];
    slice_bounds(x->dims[ax], a.starts[k], a.ends[k], a.steps[k], &first[ax], &dims[ax]);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  if (out->numel == 0) return NULL;
  int64_t strides[XC_MAX_RANK], idx[XC_MAX_RANK] = {0}, o = 0;
  xc_strides(r, x->dims, strides);
  do {
    int64_t src = 0;
    for (int i = 0; i < r; i++) src += (first[i] + idx[i] * step[i]) * strides[i];
    sc_copy(out, o++, x, src, 1);
  } while (xc_index_next(r, dims, idx));
  return NULL;
}

/* ---- Gather --------------------------------------------------------------- */

static xc_status_t infer_gather(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_ALL));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, XC_DT(XC_I32) | XC_DT(XC_I64)));
  xc_value_t *x = n->inputs[0], *ind = n->inputs[1];
  if (x->rank == 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot gather from a scalar");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  int r = x->rank - 1 + ind->rank;
  if (r > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "output rank %d too large", r);
  xc_dim_t dims[XC_MAX_RANK];
  int k = 0;
  for (int i = 0; i < axis; i++) dims[k++] = x->dims[i];
  for (int i = 0; i < ind->rank; i++) dims[k++] = ind->dims[i];
  for (int i = axis + 1; i < x->rank; i++) dims[k++] = x->dims[i];
  /* Static indices are checked now. */
  int64_t idx[SC_MAX_INTS], count;
  bool idx_known = sc_static_ints(g, ind, SC_MAX_INTS, &count, idx);
  xc_dim_t d = x->dims[axis];
  for (int64_t i = 0; idx_known && xc_dim_is_static(d) && i < count; i++)
    if (idx[i] < -d.value || idx[i] >= d.value)
      return xc_node_error(n, XC_OUT_OF_RANGE, "index %lld out of range for dim %lld",
                           (long long)idx[i], (long long)d.value);
  XC_RETURN_IF_ERROR(sc_set_out(g, n, 0, x->dtype, r, dims));
  /* Gathering from a known vector (Shape output) picks known elements. */
  int64_t ne;
  const xc_dim_t* e;
  if (idx_known && n->outputs[0] && x->rank == 1 && known_elems(g, x, &ne, &e)) {
    xc_dim_t out[SC_MAX_INTS];
    for (int64_t i = 0; i < count; i++) {
      int64_t j = idx[i] < 0 ? idx[i] + ne : idx[i];
      if (j < 0 || j >= ne)
        return xc_node_error(n, XC_OUT_OF_RANGE, "index %lld out of range for dim %lld",
                             (long long)idx[i], (long long)ne);
      out[i] = e[j];
    }
    XC_RETURN_IF_ERROR(xc_value_set_elems(g, n->outputs[0], count, out));
  }
  return NULL;
}

static xc_status_t eval_gather(xc_eval_ctx_t* ctx) {
  const xc_node_t* n = ctx->node;
  const xc_tensor_t *x = ctx->inputs[0], *ind = ctx->inputs[1];
  if (x->rank == 0) return xc_node_error(n, XC_INVALID_ARGUMENT, "cannot gather from a scalar");
  if (!xc_dtype_is_int(ind->dtype))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "indices must be integers");
  int axis;
  XC_RETURN_IF_ERROR(xc_normalize_axis(n, xc_node_attr_int(n, "axis"), x->rank, &axis));
  int r = x->rank - 1 + ind->rank;
  int64_t dims[XC_MAX_RANK];
  if (r > XC_MAX_RANK) return xc_node_error(n, XC_UNSUPPORTED, "output rank %d too large", r);
  int k = 0;
  for (int i = 0; i < axis; i++) dims[k++] = x->dims[i];
  for (int i = 0; i < ind->rank; i++) dims[k++] = ind->dims[i];
  for (int i = axis + 1; i < x->rank; i++) dims[k++] = x->dims[i];
  int64_t d = x->dims[axis];
  for (int64_t j = 0; j < ind->numel; j++) {
    int64_t v = xc_tensor_get_i64(ind, j);
    if (v < -d || v >= d)
      return xc_node_error(n, XC_OUT_OF_RANGE, "index %lld out of range for dim %lld", (long long)v,
                           (long long)d);
  }
  xc_tensor_t* out;
  XC_RETURN_IF_ERROR(sc_new_output(ctx, 0, x->dtype, r, dims, &out));
  int64_t outer = sc_prod(0, axis, x->dims), inner = sc_prod(axis + 1, x->rank, x->dims);
  int64_t o = 0;
  for (int64_t b = 0; b < outer; b++)
    for (int64_t j = 0; j < ind->numel; j++) {
      int64_t v = xc_tensor_get_i64(ind, j);
      if (v < 0) v += d;
      sc_copy(out, o, x, (b * d + v) * inner, inner);
      o += inner;
    }
  return NULL;
}

/* ---- the table ------------------------------------------------------------ */

static const xc_attr_def_t dropout_attrs[] = {XC_ATTR_OPT("seed", XC_ATTR_INT), XC_ATTR_END};
static const xc_attr_def_t shape_attrs[] = {XC_ATTR_I("start", 0), XC_ATTR_OPT("end", XC_ATTR_INT),
                                            XC_ATTR_END};
static const xc_attr_def_t reshape_attrs[] = {XC_ATTR_I("allowzero", 0), XC_ATTR_END};
static const xc_attr_def_t flatten_attrs[] = {XC_ATTR_I("axis", 1), XC_ATTR_END};
static const xc_attr_def_t transpose_attrs[] = {XC_ATTR_OPT("perm", XC_ATTR_INTS), XC_ATTR_END};
static const xc_attr_def_t concat_attrs[] = {XC_ATTR_REQ("axis", XC_ATTR_INT), XC_ATTR_END};
static const xc_attr_def_t split_attrs[] = {XC_ATTR_I("axis", 0),
                                            XC_ATTR_OPT("num_outputs", XC_ATTR_INT), XC_ATTR_END};
static const xc_attr_def_t gather_attrs[] = {XC_ATTR_I("axis", 0), XC_ATTR_END};

const xc_op_def_t xc_ops_shape[] = {
    {"Identity", "", 1, 1, 1, 1, NULL, XC_DT_ALL, infer_identity, eval_identity,
     "Copies its input."},
    {"Dropout", "", 1, 3, 1, 2, dropout_attrs, XC_DT_FLOAT, infer_dropout, eval_dropout,
     "Inference-mode dropout: the identity, with an all-true mask."},
    {"Shape", "", 1, 1, 1, 1, shape_attrs, XC_DT_ALL, infer_shape, eval_shape,
     "The input's dims [start, end) as an i64 vector."},
    {"Size", "", 1, 1, 1, 1, NULL, XC_DT_ALL, infer_size, eval_size,
     "The input's element count as an i64 scalar."},
    {"Reshape", "", 2, 2, 1, 1, reshape_attrs, XC_DT_ALL, infer_reshape, eval_reshape,
     "Same elements, new shape (0 copies a dim unless allowzero, -1 is inferred)."},
    {"Flatten", "", 1, 1, 1, 1, flatten_attrs, XC_DT_ALL, infer_flatten, eval_flatten,
     "Reshapes to 2-D around axis."},
    {"Transpose", "", 1, 1, 1, 1, transpose_attrs, XC_DT_ALL, infer_transpose, eval_transpose,
     "Permutes axes (default: reversed)."},
    {"Concat", "", 1, -1, 1, 1, concat_attrs, XC_DT_ALL, infer_concat, eval_concat,
     "Joins inputs along axis."},
    {"Split", "", 1, 2, 1, 1 << 16, split_attrs, XC_DT_ALL, infer_split, eval_split,
     "Splits along axis by sizes or into num_outputs near-equal parts."},
    {"Squeeze", "", 1, 2, 1, 1, NULL, XC_DT_ALL, infer_squeeze, eval_squeeze,
     "Removes size-1 axes."},
    {"Unsqueeze", "", 2, 2, 1, 1, NULL, XC_DT_ALL, infer_unsqueeze, eval_unsqueeze,
     "Inserts size-1 axes."},
    {"Expand", "", 2, 2, 1, 1, NULL, XC_DT_ALL, infer_expand, eval_expand,
     "Broadcasts the input to a shape."},
    {"Slice", "", 3, 5, 1, 1, NULL, XC_DT_ALL, infer_slice, eval_slice,
     "Strided slice with starts/ends/axes/steps inputs."},
    {"Gather", "", 2, 2, 1, 1, gather_attrs, XC_DT_ALL, infer_gather, eval_gather,
     "Takes entries along axis at the given indices."},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
