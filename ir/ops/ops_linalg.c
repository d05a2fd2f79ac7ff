/* Op family 'linalg': MatMul, Gemm, Einsum, MatMulInteger and Det; the
 * recurrent ops RNN, GRU and LSTM live in ops_rnn.c.
 *
 * Reference kernels accumulate floats in double and round once into the
 * output dtype. Integer products accumulate in 64-bit two's complement
 * (wrapping, like numpy) and are narrowed by xc_tensor_set_i64, so values
 * beyond 2^53 stay exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_rnn.h"
#include "xcomp/op.h"

#define MATMUL_DTYPES                                                                           \
  (XC_DT_FLOAT | XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U32) | XC_DT(XC_U64) | XC_DT(XC_I8) | \
   XC_DT(XC_I16) | XC_DT(XC_U8) | XC_DT(XC_U16))

static bool dim_is(xc_dim_t d, int64_t v) { return !d.sym && d.value == v; }

/* Static dims that must agree; symbolic dims are checked at run time. */
static xc_status_t check_same_dim(const xc_node_t* n, xc_dim_t a, xc_dim_t b, const char* what) {
  if (!a.sym && !b.sym && a.value != b.value)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "%s mismatch: %lld vs %lld", what,
                         (long long)a.value, (long long)b.value);
  return NULL;
}

static xc_status_t check_same_dtype(const xc_node_t* n, int i, int j) {
  if (n->inputs[i]->dtype != n->inputs[j]->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "inputs %d and %d differ in dtype (%s vs %s)", i,
                         j, xc_dtype_name(n->inputs[i]->dtype), xc_dtype_name(n->inputs[j]->dtype));
  return NULL;
}

/* Offset (in elements) of the batch block `idx` of the broadcast batch shape
 * (rank r, dims out) inside a tensor whose batch dims are t_dims[0..t_rank). */
static int64_t batch_offset(int r, const int64_t* idx, int t_rank, const int64_t* t_dims,
                            int64_t block) {
  int64_t off = 0, stride = block;
  for (int i = t_rank - 1; i >= 0; i--) {
    int o = i + (r - t_rank);
    if (t_dims[i] != 1) off += idx[o] * stride;
    stride *= t_dims[i];
  }
  return off;
}

/* ---- MatMul ------------------------------------------------------------- */

/* Shape of the product of a and b with numpy's 1-D promotion rules. */
static xc_status_t matmul_infer_shape(xc_graph_t* g, const xc_node_t* n, const xc_value_t* a,
                                      const xc_value_t* b, int* out_rank, xc_dim_t* out) {
  if (a->rank < 1 || b->rank < 1)
    return xc_node_error(n, XC_INVALID_ARGUMENT,
                         "MatMul operands must have rank >= 1 (got %d and %d)", a->rank, b->rank);
  xc_dim_t ka = a->dims[a->rank - 1];
  xc_dim_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  XC_RETURN_IF_ERROR(check_same_dim(n, ka, kb, "inner dimension"));
  int ra = a->rank >= 2 ? a->rank - 2 : 0, rb = b->rank >= 2 ? b->rank - 2 : 0;
  int r;
  XC_RETURN_IF_ERROR(xc_infer_broadcast(g, n, ra, a->dims, rb, b->dims, &r, out));
  if (a->rank >= 2) out[r++] = a->dims[a->rank - 2];
  if (b->rank >= 2) out[r++] = b->dims[b->rank - 1];
  *out_rank = r;
  return NULL;
}

static xc_status_t matmul_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, MATMUL_DTYPES));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, MATMUL_DTYPES));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 0, 1));
  xc_dim_t out[XC_MAX_RANK + 2];
  int r;
  XC_RETURN_IF_ERROR(matmul_infer_shape(g, n, n->inputs[0], n->inputs[1], &r, out));
  return xc_value_set_type(g, n->outputs[0], n->inputs[0]->dtype, r, out);
}

/* Geometry of a (possibly batched, possibly 1-D) matrix product. */
typedef struct {
  int batch_rank;
  int64_t batch[XC_MAX_RANK];
  int a_batch_rank, b_batch_rank;
  int64_t a_batch[XC_MAX_RANK], b_batch[XC_MAX_RANK];
  int64_t m, k, n, batch_count;
  int out_rank;
  int64_t out_dims[XC_MAX_RANK];
} matmul_geom_t;

static xc_status_t matmul_geometry(const xc_node_t* node, const xc_tensor_t* a,
                                   const xc_tensor_t* b, matmul_geom_t* gm) {
  memset(gm, 0, sizeof *gm);
  if (a->rank < 1 || b->rank < 1)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "MatMul operands must have rank >= 1");
  gm->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
  gm->k = a->dims[a->rank - 1];
  int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  gm->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  if (gm->k != kb)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "inner dimension mismatch: %lld vs %lld",
                         (long long)gm->k, (long long)kb);
  gm->a_batch_rank = a->rank >= 2 ? a->rank - 2 : 0;
  gm->b_batch_rank = b->rank >= 2 ? b->rank - 2 : 0;
  memcpy(gm->a_batch, a->dims, sizeof(int64_t) * (size_t)gm->a_batch_rank);
  memcpy(gm->b_batch, b->dims, sizeof(int64_t) * (size_t)gm->b_batch_rank);
  xc_status_t s = xc_broadcast_shape(gm->a_batch_rank, gm->a_batch, gm->b_batch_rank, gm->b_batch,
                                     &gm->batch_rank, gm->batch);
  if (s) return xc_status_annotate(s, "batch dimensions");
  int r = gm->batch_rank;
  memcpy(gm->out_dims, gm->batch, sizeof(int64_t) * (size_t)r);
  if (a->rank >= 2) gm->out_dims[r++] = gm->m;
  if (b->rank >= 2) gm->out_dims[r++] = gm->n;
  if (r > XC_MAX_RANK) return xc_node_error(node, XC_UNSUPPORTED, "rank too large");
  gm->out_rank = r;
  gm->batch_count = 1;
  for (int i = 0; i < gm->batch_rank; i++) gm->batch_count *= gm->batch[i];
  return NULL;
}

/* Per-row / per-column zero points for MatMulInteger (NULL = 0). */
typedef struct {
  const xc_tensor_t* t;
  bool per_index; /* else one value */
} zero_point_t;

static int64_t zp_at(const zero_point_t* z, int64_t i) {
  if (!z->t) return 0;
  return xc_tensor_get_i64(z->t, z->per_index ? i : 0);
}

/* C[m,n] = sum_k A[m,k] * B[k,n] for every batch block. `integer` selects
 * wrapping 64-bit integer accumulation; zero points apply to that mode only. */
/* All elements of t as doubles (NULL on OOM); the float kernels read these
 * instead of converting element by element in their inner loops. */
static double* to_f64(const xc_tensor_t* t) {
  double* d = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
  if (!d) return NULL;
  if (t->dtype == XC_F32)
    for (int64_t i = 0; i < t->numel; i++) d[i] = ((const float*)t->data)[i];
  else
    for (int64_t i = 0; i < t->numel; i++) d[i] = xc_tensor_get_f64(t, i);
  return d;
}

/* C[m,n] = sum_k A[m,k] * B[k,n] for every batch block. `integer` selects
 * wrapping 64-bit integer accumulation; zero points apply to that mode only.
 * Floats accumulate each output in double, in order of k. */
static xc_status_t matmul_compute(const matmul_geom_t* gm, const xc_tensor_t* a,
                                  const xc_tensor_t* b, xc_tensor_t* y, bool integer,
                                  const zero_point_t* za, const zero_point_t* zb) {
  int64_t idx[XC_MAX_RANK] = {0};
  int64_t a_block = gm->m * gm->k, b_block = gm->k * gm->n;
  double *ad = NULL, *bd = NULL, *row = NULL;
  if (!integer) {
    ad = to_f64(a);
    bd = to_f64(b);
    row = malloc(sizeof(double) * (size_t)(gm->n ? gm->n : 1));
    if (!ad || !bd || !row) {
      free(ad), free(bd), free(row);
      return xc_error_oom();
    }
  }
  for (int64_t bi = 0; bi < gm->batch_count; bi++) {
    int64_t ao = batch_offset(gm->batch_rank, idx, gm->a_batch_rank, gm->a_batch, a_block);
    int64_t bo = batch_offset(gm->batch_rank, idx, gm->b_batch_rank, gm->b_batch, b_block);
    int64_t yo = bi * gm->m * gm->n;
    for (int64_t i = 0; i < gm->m; i++) {
      if (integer) {
        for (int64_t j = 0; j < gm->n; j++) {
          uint64_t acc = 0;
          int64_t zai = zp_at(za, i), zbj = zp_at(zb, j);
          for (int64_t k = 0; k < gm->k; k++) {
            uint64_t x = (uint64_t)xc_tensor_get_i64(a, ao + i * gm->k + k) - (uint64_t)zai;
            uint64_t w = (uint64_t)xc_tensor_get_i64(b, bo + k * gm->n + j) - (uint64_t)zbj;
            acc += x * w;
          }
          xc_tensor_set_i64(y, yo + i * gm->n + j, (int64_t)acc);
        }
      } else {
        for (int64_t j = 0; j < gm->n; j++) row[j] = 0;
        for (int64_t k = 0; k < gm->k; k++) {
          double x = ad[ao + i * gm->k + k];
          const double* brow = bd + bo + k * gm->n;
          for (int64_t j = 0; j < gm->n; j++) row[j] += x * brow[j];
        }
        for (int64_t j = 0; j < gm->n; j++) xc_tensor_set_f64(y, yo + i * gm->n + j, row[j]);
      }
    }
    xc_index_next(gm->batch_rank, gm->batch, idx);
  }
  free(ad), free(bd), free(row);
  return NULL;
}

static xc_status_t matmul_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (a->dtype != b->dtype)
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "operand dtypes differ");
  matmul_geom_t gm;
  XC_RETURN_IF_ERROR(matmul_geometry(ctx->node, a, b, &gm));
  XC_RETURN_IF_ERROR(xc_tensor_create(a->dtype, gm.out_rank, gm.out_dims, &ctx->outputs[0]));
  zero_point_t none = {NULL, false};
  return matmul_compute(&gm, a, b, ctx->outputs[0], !xc_dtype_is_float(a->dtype), &none, &none);
}

/* ---- MatMulInteger ------------------------------------------------------ */

#define INT8_DTYPES (XC_DT(XC_I8) | XC_DT(XC_U8))

static xc_status_t check_zero_point_value(const xc_node_t* n, int i, const xc_value_t* x) {
  const xc_value_t* z = i < n->num_inputs ? n->inputs[i] : NULL;
  if (!z) return NULL;
  if (z->dtype != x->dtype)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "zero point %d has dtype %s, expected %s", i,
                         xc_dtype_name(z->dtype), xc_dtype_name(x->dtype));
  return NULL;
}

static xc_status_t matmul_integer_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, INT8_DTYPES));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, INT8_DTYPES));
  XC_RETURN_IF_ERROR(check_zero_point_value(n, 2, n->inputs[0]));
  XC_RETURN_IF_ERROR(check_zero_point_value(n, 3, n->inputs[1]));
  xc_dim_t out[XC_MAX_RANK + 2];
  int r;
  XC_RETURN_IF_ERROR(matmul_infer_shape(g, n, n->inputs[0], n->inputs[1], &r, out));
  return xc_value_set_type(g, n->outputs[0], XC_I32, r, out);
}

static xc_status_t zero_point_of(const xc_node_t* node, const xc_tensor_t* z, int64_t count,
                                 const char* what, zero_point_t* out) {
  out->t = z;
  out->per_index = false;
  if (!z || z->numel == 1) return NULL;
  if (z->numel == count) {
    out->per_index = true;
    return NULL;
  }
  return xc_node_error(node, XC_INVALID_ARGUMENT,
                       "%s zero point has %lld elements; expected 1 or %lld", what,
                       (long long)z->numel, (long long)count);
}

static xc_status_t matmul_integer_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t *a = ctx->inputs[0], *b = ctx->inputs[1];
  matmul_geom_t gm;
  XC_RETURN_IF_ERROR(matmul_geometry(ctx->node, a, b, &gm));
  zero_point_t za, zb;
  XC_RETURN_IF_ERROR(
      zero_point_of(ctx->node, ctx->num_inputs > 2 ? ctx->inputs[2] : NULL, gm.m, "a", &za));
  XC_RETURN_IF_ERROR(
      zero_point_of(ctx->node, ctx->num_inputs > 3 ? ctx->inputs[3] : NULL, gm.n, "b", &zb));
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I32, gm.out_rank, gm.out_dims, &ctx->outputs[0]));
  return matmul_compute(&gm, a, b, ctx->outputs[0], true, &za, &zb);
}

/* ---- Gemm --------------------------------------------------------------- */

#define GEMM_DTYPES (XC_DT_FLOAT | XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U32) | XC_DT(XC_U64))

static xc_status_t gemm_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, GEMM_DTYPES));
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 1, GEMM_DTYPES));
  XC_RETURN_IF_ERROR(check_same_dtype(n, 0, 1));
  const xc_value_t *a = n->inputs[0], *b = n->inputs[1];
  if (a->rank != 2 || b->rank != 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "Gemm needs 2-D A and B (got rank %d and %d)",
                         a->rank, b->rank);
  bool ta = xc_node_attr_int(n, "transA") != 0, tb = xc_node_attr_int(n, "transB") != 0;
  xc_dim_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
  xc_dim_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
  XC_RETURN_IF_ERROR(check_same_dim(n, ka, kb, "inner dimension"));
  const xc_value_t* c = n->num_inputs > 2 ? n->inputs[2] : NULL;
  if (c) {
    XC_RETURN_IF_ERROR(check_same_dtype(n, 0, 2));
    if (c->rank > 2)
      return xc_node_error(n, XC_INVALID_ARGUMENT, "C must have rank <= 2 (got %d)", c->rank);
    xc_dim_t target[2] = {m, nn};
    for (int i = 0; i < c->rank; i++) {
      xc_dim_t d = c->dims[i], t = target[2 - c->rank + i];
      if (!dim_is(d, 1)) XC_RETURN_IF_ERROR(check_same_dim(n, d, t, "C broadcast"));
    }
  }
  xc_dim_t out[2] = {m, nn};
  return xc_value_set_type(g, n->outputs[0], a->dtype, 2, out);
}

static xc_status_t gemm_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  const xc_tensor_t *a = ctx->inputs[0], *b = ctx->inputs[1];
  const xc_tensor_t* c = ctx->num_inputs > 2 ? ctx->inputs[2] : NULL;
  if (a->rank != 2 || b->rank != 2)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "Gemm needs 2-D A and B");
  bool ta = xc_node_attr_int(node, "transA") != 0, tb = xc_node_attr_int(node, "transB") != 0;
  double alpha = xc_node_attr_float(node, "alpha"), beta = xc_node_attr_float(node, "beta");
  int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
  int64_t kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
  if (k != kb)
    return xc_node_error(node, XC_INVALID_ARGUMENT, "inner dimension mismatch: %lld vs %lld",
                         (long long)k, (long long)kb);
  int64_t c_strides[2] = {0, 0};
  if (c) {
    if (c->rank > 2) return xc_node_error(node, XC_INVALID_ARGUMENT, "C must have rank <= 2");
    int64_t target[2] = {m, n};
    for (int i = 0; i < c->rank; i++) {
      int64_t t = target[2 - c->rank + i];
      if (c->dims[i] != 1 && c->dims[i] != t)
        return xc_node_error(node, XC_INVALID_ARGUMENT,
                             "C (dim %lld) cannot be broadcast to [%lld,%lld]",
                             (long long)c->dims[i], (long long)m, (long long)n);
    }
    if (c->rank == 2) {
      c_strides[0] = c->dims[0] == 1 ? 0 : c->dims[1];
      c_strides[1] = c->dims[1] == 1 ? 0 : 1;
    } else if (c->rank == 1) {
      c_strides[1] = c->dims[0] == 1 ? 0 : 1;
    }
  }
  int64_t dims[2] = {m, n};
  XC_RETURN_IF_ERROR(xc_tensor_create(a->dtype, 2, dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  int64_t a_cols = a->dims[1], b_cols = b->dims[1];
  double *ad = to_f64(a), *bd = to_f64(b);
  if (!ad || !bd) {
    free(ad), free(bd);
    return xc_error_oom();
  }
  /* Strides of A' [m, k] and B' [k, n] inside the stored matrices. */
  int64_t as_i = ta ? 1 : a_cols, as_p = ta ? a_cols : 1;
  int64_t bs_p = tb ? 1 : b_cols, bs_j = tb ? b_cols : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t p = 0; p < k; p++) acc += ad[i * as_i + p * as_p] * bd[p * bs_p + j * bs_j];
      double v = alpha * acc;
      if (c && beta != 0) v += beta * xc_tensor_get_f64(c, i * c_strides[0] + j * c_strides[1]);
      xc_tensor_set_f64(y, i * n + j, v);
    }
  free(ad), free(bd);
  return NULL;
}

/* ---- Einsum ------------------------------------------------------------- */

/* Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (ASCII order, which is the
 * order numpy uses for implicit outputs); broadcast (ellipsis) dims get
 * labels ELL_BASE + j, j counted from the left of the widest ellipsis. */
#define NUM_LETTERS 52
#define ELL_BASE NUM_LETTERS
#define MAX_LABELS (NUM_LETTERS + XC_MAX_RANK)
#define EINSUM_MAX_INPUTS 32

typedef struct {
  int num_terms;
  int term_letters[EINSUM_MAX_INPUTS]; /* number of letters in the term */
  int term_ell[EINSUM_MAX_INPUTS];     /* position of "..." among the letters, -1 none */
  int letters[EINSUM_MAX_INPUTS][XC_MAX_RANK];
  bool explicit_out;
  int out_letters, out_ell;
  int out[XC_MAX_RANK];
} einsum_eq_t;

/* Per-axis labels of every input and the output, once ranks are known. */
typedef struct {
  int num_inputs;
  int rank[EINSUM_MAX_INPUTS];
  int axis_label[EINSUM_MAX_INPUTS][XC_MAX_RANK];
  int ell_dims; /* width of the broadcast ellipsis */
  int out_rank;
  int out_label[XC_MAX_RANK];
} einsum_plan_t;

static int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

static char label_letter(int l) { return (char)(l < 26 ? 'A' + l : 'a' + (l - 26)); }

/* Parses one term (the characters [s, e)) into letters and the ellipsis
 * position. */
static xc_status_t parse_term(const xc_node_t* n, const char* s, const char* e, int* letters,
                              int* count, int* ell) {
  *count = 0;
  *ell = -1;
  for (const char* p = s; p < e;) {
    if (*p == ' ') {
      p++;
    } else if (*p == '.') {
      if (e - p < 3 || p[1] != '.' || p[2] != '.')
        return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: '.' must be part of '...'");
      if (*ell >= 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: a term has more than one '...'");
      *ell = *count;
      p += 3;
    } else {
      int l = letter_label(*p);
      if (l < 0)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: invalid character '%c'", *p);
      if (*count >= XC_MAX_RANK)
        return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: term has too many subscripts");
      letters[(*count)++] = l;
      p++;
    }
  }
  return NULL;
}

static xc_status_t parse_equation(const xc_node_t* n, const char* eq, einsum_eq_t* out) {
  memset(out, 0, sizeof *out);
  const char* arrow = strstr(eq, "->");
  if (arrow && strstr(arrow + 2, "->"))
    return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: more than one '->'");
  const char* lhs_end = arrow ? arrow : eq + strlen(eq);
  const char* s = eq;
  for (;;) {
    const char* comma = s;
    while (comma < lhs_end && *comma != ',') comma++;
    if (out->num_terms >= EINSUM_MAX_INPUTS)
      return xc_node_error(n, XC_UNSUPPORTED, "equation: too many operands");
    int t = out->num_terms++;
    XC_RETURN_IF_ERROR(
        parse_term(n, s, comma, out->letters[t], &out->term_letters[t], &out->term_ell[t]));
    if (comma >= lhs_end) break;
    s = comma + 1;
  }
  if (arrow) {
    out->explicit_out = true;
    const char* e = arrow + 2;
    XC_RETURN_IF_ERROR(parse_term(n, e, e + strlen(e), out->out, &out->out_letters, &out->out_ell));
    if (strchr(e, '-') || strchr(e, '>') || strchr(e, ','))
      return xc_node_error(n, XC_INVALID_ARGUMENT, "equation: malformed output");
  }
  return NULL;
}

/* Resolves the equation against the input ranks. */
static xc_status_t einsum_plan(const xc_node_t* n, const einsum_eq_t* eq, int num_inputs,
                               const int* ranks, einsum_plan_t* p) {
  memset(p, 0, sizeof *p);
  if (eq->num_terms != num_inputs)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "equation has %d operand terms but %d inputs",
                         eq->num_terms, num_inputs);
  p->num_inputs = num_inputs;
  int counts[MAX_LABELS] = {0};
  for (int t = 0; t < num_inputs; t++) {
    int nl = eq->term_letters[t], e = 0;
    if (eq->term_ell[t] < 0) {
      if (nl != ranks[t])
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "equation term %d has %d subscripts but input %d has rank %d", t, nl,
                             t, ranks[t]);
    } else {
      if (nl > ranks[t])
        return xc_node_error(n, XC_INVALID_ARGUMENT,
                             "equation term %d has %d subscripts but input %d has rank %d", t, nl,
                             t, ranks[t]);
      e = ranks[t] - nl;
    }
    if (e > p->ell_dims) p->ell_dims = e;
  }
  for (int t = 0; t < num_inputs; t++) {
    int nl = eq->term_letters[t], ell = eq->term_ell[t];
    int e = ell < 0 ? 0 : ranks[t] - nl, ax = 0;
    for (int i = 0; i <= nl; i++) {
      if (i == ell)
        for (int j = 0; j < e; j++) p->axis_label[t][ax++] = ELL_BASE + (p->ell_dims - e + j);
      if (i < nl) {
        p->axis_label[t][ax++] = eq->letters[t][i];
        counts[eq->letters[t][i]]++;
      }
    }
    p->rank[t] = ranks[t];
  }
  if (eq->explicit_out) {
    bool seen[MAX_LABELS] = {false};
    int nl = eq->out_letters;
    if (eq->out_ell < 0 && p->ell_dims > 0)
      return xc_node_error(n, XC_INVALID_ARGUMENT,
                           "equation: inputs have '...' dimensions but the output has no '...'");
    for (int i = 0; i <= nl; i++) {
      if (i == eq->out_ell)
        for (int j = 0; j < p->ell_dims; j++) p->out_label[p->out_rank++] = ELL_BASE + j;
      if (i < nl) {
        int l = eq->out[i];
        if (!counts[l])
          return xc_node_error(n, XC_INVALID_ARGUMENT,
                               "equation: output subscript '%c' does not appear in any input",
                               label_letter(l));
        if (seen[l])
          return xc_node_error(n, XC_INVALID_ARGUMENT,
                               "equation: output subscript '%c' appears more than once",
                               label_letter(l));
        seen[l] = true;
        if (p->out_rank >= XC_MAX_RANK)
          return xc_node_error(n, XC_UNSUPPORTED, "equation: output rank too large");
        p->out_label[p->out_rank++] = l;
      }
    }
  } else {
    for (int j = 0; j < p->ell_dims; j++) p->out_label[p->out_rank++] = ELL_BASE + j;
    for (int l = 0; l < NUM_LETTERS; l++)
      if (counts[l] == 1) {
        if (p->out_rank >= XC_MAX_RANK)
          return xc_node_error(n, XC_UNSUPPORTED, "equation: output rank too large");
        p->out_label[p->out_rank++] = l;
      }
  }
  return NULL;
}

static xc_status_t einsum_parse_node(const xc_node_t* n, const int* ranks, einsum_plan_t* p) {
  einsum_eq_t eq;
  XC_RETURN_IF_ERROR(parse_equation(n, xc_node_attr_string(n, "equation"), &eq));
  return einsum_plan(n, &eq, n->num_inputs, ranks, p);
}

static xc_status_t einsum_infer(xc_graph_t* g, xc_node_t* n) {
  int ranks[EINSUM_MAX_INPUTS];
  if (n->num_inputs > EINSUM_MAX_INPUTS) return xc_node_error(n, XC_UNSUPPORTED, "too many inputs");
  for (int i = 0; i < n->num_inputs; i++) {
    XC_RETURN_IF_ERROR(xc_infer_check_input(n, i, XC_DT_NUMERIC));
    XC_RETURN_IF_ERROR(check_same_dtype(n, 0, i));
    ranks[i] = n->inputs[i]->rank;
  }
  einsum_plan_t p;
  XC_RETURN_IF_ERROR(einsum_parse_node(n, ranks, &p));
  /* Size of each label: the first occurrence that is not a literal 1. */
  xc_dim_t size[MAX_LABELS];
  bool known[MAX_LABELS] = {false};
  for (int t = 0; t < n->num_inputs; t++)
    for (int a = 0; a < p.rank[t]; a++) {
      int l = p.axis_label[t][a];
      xc_dim_t d = n->inputs[t]->dims[a];
      if (!known[l] || dim_is(size[l], 1) || (size[l].sym && !d.sym && !dim_is(d, 1))) {
        /* first size seen, or a better one: not 1, static over symbolic */
        size[l] = d;
        known[l] = true;
      } else if (!dim_is(d, 1) && !size[l].sym && !d.sym && size[l].value != d.value) {
        return xc_node_error(n, XC_INVALID_ARGUMENT, "subscript %c%s has sizes %lld and %lld",
                             l >= ELL_BASE ? '.' : label_letter(l), l >= ELL_BASE ? ".. dim" : "",
                             (long long)size[l].value, (long long)d.value);
      }
    }
  xc_dim_t out[XC_MAX_RANK];
  for (int i = 0; i < p.out_rank; i++) {
    int l = p.out_label[i];
    out[i] = known[l] ? size[l] : xc_dim_const(1);
  }
  return xc_value_set_type(g, n->outputs[0], n->inputs[0]->dtype, p.out_rank, out);
}

static xc_status_t einsum_eval(xc_eval_ctx_t* ctx) {
  const xc_node_t* node = ctx->node;
  int ni = ctx->num_inputs;
  if (ni > EINSUM_MAX_INPUTS) return xc_node_error(node, XC_UNSUPPORTED, "too many inputs");
  int ranks[EINSUM_MAX_INPUTS];
  for (int i = 0; i < ni; i++) ranks[i] = ctx->inputs[i]->rank;
  einsum_plan_t p;
  XC_RETURN_IF_ERROR(einsum_parse_node(node, ranks, &p));
  int64_t size[MAX_LABELS];
  bool used[MAX_LABELS] = {false};
  for (int l = 0; l < MAX_LABELS; l++) size[l] = 1;
  for (int t = 0; t < ni; t++)
    for (int a = 0; a < p.rank[t]; a++) {
      int l = p.axis_label[t][a];
      int64_t d = ctx->inputs[t]->dims[a];
      if (!used[l] || size[l] == 1) {
        size[l] = d;
      } else if (d != 1 && d != size[l]) {
        return xc_node_error(node, XC_INVALID_ARGUMENT, "subscript sizes differ: %lld vs %lld",
                             (long long)size[l], (long long)d);
      }
      used[l] = true;
    }
  /* Loop order: output labels, then the summed labels. */
  bool in_out[MAX_LABELS] = {false};
  int64_t out_dims[XC_MAX_RANK];
  for (int i = 0; i < p.out_rank; i++) {
    int l = p.out_label[i];
    in_out[l] = true;
    out_dims[i] = used[l] ? size[l] : 1;
  }
  int nsum = 0;
  int sum_label[MAX_LABELS];
  for (int l = 0; l < MAX_LABELS; l++)
    if (used[l] && !in_out[l]) sum_label[nsum++] = l;
  XC_RETURN_IF_ERROR(
      xc_tensor_create(ctx->inputs[0]->dtype, p.out_rank, out_dims, &ctx->outputs[0]));
  xc_tensor_t* y = ctx->outputs[0];
  /* stride[t][l]: step of input t's offset per unit of label l (summed over
   * repeated labels, which walks the diagonal; 0 where the dim is 1). */
  int64_t(*stride)[MAX_LABELS] = calloc((size_t)ni, sizeof *stride);
  if (!stride) return xc_error_oom();
  for (int t = 0; t < ni; t++) {
    int64_t st[XC_MAX_RANK];
    xc_strides(ctx->inputs[t]->rank, ctx->inputs[t]->dims, st);
    for (int a = 0; a < p.rank[t]; a++)
      if (ctx->inputs[t]->dims[a] != 1) stride[t][p.axis_label[t][a]] += st[a];
  }
  /* Compact per-input list of the labels that move its offset. */
  int(*term_label)[MAX_LABELS] = calloc((size_t)ni, sizeof *term_label);
  int nterm[EINSUM_MAX_INPUTS] = {0};
  if (!term_label) {
    free(stride);
    return xc_error_oom();
  }
  for (int t = 0; t < ni; t++)
    for (int l = 0; l < MAX_LABELS; l++)
      if (stride[t][l]) term_label[t][nterm[t]++] = l;
  bool integer = !xc_dtype_is_float(y->dtype);
  int64_t sum_dims[MAX_LABELS], sum_count = 1;
  for (int i = 0; i < nsum; i++) {
    sum_dims[i] = size[sum_label[i]];
    sum_count *= sum_dims[i];
  }
  int64_t oidx[XC_MAX_RANK] = {0};
  int64_t val[MAX_LABELS] = {0};
  for (int64_t o = 0; o < y->numel; o++) {
    for (int i = 0; i < p.out_rank; i++) val[p.out_label[i]] = oidx[i];
    int64_t sidx[MAX_LABELS] = {0};
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t s = 0; s < sum_count; s++) {
      for (int i = 0; i < nsum; i++) val[sum_label[i]] = sidx[i];
      double prod = 1;
      uint64_t iprod = 1;
      for (int t = 0; t < ni; t++) {
        int64_t off = 0;
        for (int q = 0; q < nterm[t]; q++)
          off += val[term_label[t][q]] * stride[t][term_label[t][q]];
        if (integer)
          iprod *= (uint64_t)xc_tensor_get_i64(ctx->inputs[t], off);
        else
          prod *= xc_tensor_get_f64(ctx->inputs[t], off);
      }
      acc += prod;
      iacc += iprod;
      for (int i = nsum - 1; i >= 0; i--) {
        if (++sidx[i] < sum_dims[i]) break;
        sidx[i] = 0;
      }
    }
    if (integer)
      xc_tensor_set_i64(y, o, (int64_t)iacc);
    else
      xc_tensor_set_f64(y, o, acc);
    xc_index_next(p.out_rank, out_dims, oidx);
  }
  free(stride);
  free(term_label);
  return NULL;
}

/* ---- Det ---------------------------------------------------------------- */

static xc_status_t det_infer(xc_graph_t* g, xc_node_t* n) {
  XC_RETURN_IF_ERROR(xc_infer_check_input(n, 0, XC_DT_FLOAT));
  const xc_value_t* x = n->inputs[0];
  if (x->rank < 2)
    return xc_node_error(n, XC_INVALID_ARGUMENT, "Det needs rank >= 2, got %d", x->rank);
  XC_RETURN_IF_ERROR(
      check_same_dim(n, x->dims[x->rank - 2], x->dims[x->rank - 1], "matrices must be square:"));
  return xc_value_set_type(g, n->outputs[0], x->dtype, x->rank - 2, x->dims);
}

/* Determinant by Gaussian elimination with partial pivoting, in double. */
static double det_of(double* a, int64_t m) {
  double det = 1;
  for (int64_t col = 0; col < m; col++) {
    int64_t piv = col;
    for (int64_t r = col + 1; r < m; r++)
      if (fabs(a[r * m + col]) > fabs(a[piv * m + col])) piv = r;
    if (a[piv * m + col] == 0) return 0;
    if (piv != col) {
      for (int64_t k = 0; k < m; k++) {
        double t = a[col * m + k];
        a[col * m + k] = a[piv * m + k];
        a[piv * m + k] = t;
      }
      det = -det;
    }
    double p = a[col * m + col];
    det *= p;
    for (int64_t r = col + 1; r < m; r++) {
      double f = a[r * m + col] / p;
      for (int64_t k = col; k < m; k++) a[r * m + k] -= f * a[col * m + k];
    }
  }
  return det;
}

static xc_status_t det_eval(xc_eval_ctx_t* ctx) {
  const xc_tensor_t* x = ctx->inputs[0];
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return xc_node_error(ctx->node, XC_INVALID_ARGUMENT, "Det needs square matrices");
  int64_t m = x->dims[x->rank - 1];
  XC_RETURN_IF_ERROR(xc_tensor_create(x->dtype, x->rank - 2, x->dims, &ctx->outputs[0]));
  double* a = malloc(sizeof(double) * (size_t)(m > 0 ? m * m : 1));
  if (!a) return xc_error_oom();
  for (int64_t b = 0; b < ctx->outputs[0]->numel; b++) {
    for (int64_t i = 0; i < m * m; i++) a[i] = xc_tensor_get_f64(x, b * m * m + i);
    xc_tensor_set_f64(ctx->outputs[0], b, det_of(a, m));
  }
  free(a);
  return NULL;
}

/* ---- table -------------------------------------------------------------- */

static const xc_attr_def_t gemm_attrs[] = {
    XC_ATTR_F("alpha", 1.0),
    XC_ATTR_F("beta", 1.0),
    XC_ATTR_I("transA", 0),
    XC_ATTR_I("transB", 0),
    XC_ATTR_END,
};

static const xc_attr_def_t einsum_attrs[] = {
    XC_ATTR_REQ("equation", XC_ATTR_STRING),
    XC_ATTR_END,
};

const xc_op_def_t xc_ops_linalg[] = {
    {"MatMul", "", 2, 2, 1, 1, NULL, MATMUL_DTYPES, matmul_infer, matmul_eval,
     "Matrix product with numpy semantics (1-D promotion, broadcast batch dims)"},
    {"Gemm", "", 2, 3, 1, 1, gemm_attrs, GEMM_DTYPES, gemm_infer, gemm_eval,
     "Y = alpha * A' * B' + beta * C, with optional transposes and broadcast C"},
    {"Einsum", "", 1, -1, 1, 1, einsum_attrs, XC_DT_NUMERIC, einsum_infer, einsum_eval,
     "Einstein summation over the operands (ellipsis, diagonals, reductions)"},
    {"MatMulInteger", "", 2, 4, 1, 1, NULL, INT8_DTYPES, matmul_integer_infer, matmul_integer_eval,
     "Integer matrix product with zero points, int32 result"},
    {"Det", "", 1, 1, 1, 1, NULL, XC_DT_FLOAT, det_infer, det_eval,
     "Determinant of square matrices (batched over leading dims)"},
    {"RNN", "", 3, 6, 0, 2, xc_rnn_attrs, XC_DT_FLOAT, xc_rnn_infer, xc_rnn_eval,
     "Simple recurrent network (ops_rnn.c)"},
    {"GRU", "", 3, 6, 0, 2, xc_gru_attrs, XC_DT_FLOAT, xc_rnn_infer, xc_rnn_eval,
     "Gated recurrent unit (ops_rnn.c)"},
    {"LSTM", "", 3, 8, 0, 3, xc_lstm_attrs, XC_DT_FLOAT, xc_rnn_infer, xc_rnn_eval,
     "Long short-term memory with optional peepholes (ops_rnn.c)"},
    {NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};
