/* Attention masks: decides how the mask of a matched attention subgraph maps
 * onto the Attention op (attn_mask input, is_causal, or nothing) and whether
 * that is exactly what the subgraph computes.
 *
 * The subgraph computes softmax(scores + mask) or softmax(Where(c, scores,
 * fill)); Attention adds the mask to the scaled scores and gives zeros for
 * a row whose keys are all masked (bias -inf), where softmax gives NaN. So:
 *  - a row that can be entirely -inf is fine only when the subgraph has the
 *    NaN guard (Where(IsNaN(p), 0, p)), which also turns it into zeros;
 *  - a finite but huge mask value (finfo.min) is absorbing in f32: a row of
 *    only such values gives a uniform softmax in the subgraph, but Attention
 *    (which adds in double) would not. Such values are accepted only in rows
 *    that also hold an unmasked key, where both give exactly 0 weight;
 *  - a mask computed at run time is accepted when a bound analysis proves
 *    every element is -inf or of magnitude below 1e30.
 * For f16/bf16 scores both thresholds are 1024: from there on adding the
 * mask already loses whole units of the score in the model's dtype.
 * A constant mask that is exactly "key j visible from query i iff j <= i"
 * (with 0 bias on the visible keys) becomes is_causal = 1. */
#include <math.h>
#include <string.h>

#include "attention_mask.h"
#include "attention_util.h"

#define BOUND_LIMIT 1e30

/* Masks in 16-bit floats: from this magnitude on, adding the mask loses
 * whole units of the score (f16 ulp >= 1, bf16 ulp >= 8). */
#define HALF_LIMIT 1024.0

static bool is_half_float(xc_dtype_t t) { return t == XC_F16 || t == XC_BF16; }

/* The largest magnitude of v's elements that the analysis accepts. */
static double dtype_limit(const xc_value_t* v) {
  return is_half_float(v->dtype) ? HALF_LIMIT : BOUND_LIMIT;
}

/* Proves that every element of v is -inf or finite with |x| <= *bound. */
static bool mask_bound(const xc_value_t* v, int depth, double* bound, bool* neginf) {
  *bound = 0;
  *neginf = false;
  if (!v || depth <= 0) return false;
  if (v->constant) {
    if (!xc_dtype_is_float(v->constant->dtype) && v->constant->dtype != XC_BOOL &&
        !xc_dtype_is_int(v->constant->dtype))
      return false;
    for (int64_t i = 0; i < v->constant->numel; i++) {
      double x = xc_tensor_get_f64(v->constant, i);
      if (isnan(x) || x == INFINITY) return false;
      if (x == -INFINITY)
        *neginf = true;
      else if (fabs(x) > *bound)
        *bound = fabs(x);
    }
    return true;
  }
  const xc_node_t* p = v->producer;
  if (!p || p->dead || p->domain[0]) return false;
  const char* op = p->op_type;
  double b1, b2;
  bool n1, n2;
  if (strcmp(op, "Cast") == 0) {
    xc_dtype_t from = p->inputs[0]->dtype;
    if (from == XC_BOOL)
      *bound = 1;
    else if (from == XC_I8 || from == XC_U8)
      *bound = 255;
    else if (from == XC_I16 || from == XC_U16)
      *bound = 65535;
    else if (xc_dtype_is_int(from))
      *bound = 1.9e19;
    else if (!mask_bound(p->inputs[0], depth - 1, bound, neginf))
      return false;
    return *bound <= dtype_limit(v); /* larger values would overflow to inf */
  }
  if (strcmp(op, "Identity") == 0 || strcmp(op, "Reshape") == 0 || strcmp(op, "Expand") == 0 ||
      strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0 ||
      strcmp(op, "Transpose") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Tile") == 0)
    return mask_bound(p->inputs[0], depth - 1, bound, neginf);
  if (strcmp(op, "Neg") == 0) {
    if (!mask_bound(p->inputs[0], depth - 1, &b1, &n1) || n1) return false;
    return *bound = b1, true;
  }
  if (strcmp(op, "Where") == 0) {
    if (!mask_bound(p->inputs[1], depth - 1, &b1, &n1) ||
        !mask_bound(p->inputs[2], depth - 1, &b2, &n2))
      return false;
    *bound = fmax(b1, b2);
    *neginf = n1 || n2;
    return true;
  }
  if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0) {
    if (!mask_bound(p->inputs[0], depth - 1, &b1, &n1) ||
        !mask_bound(p->inputs[1], depth - 1, &b2, &n2))
      return false;
    if (op[0] == 'A') {
      *bound = b1 + b2;
      *neginf = n1 || n2;
    } else if (op[0] == 'S') {
      if (n2) return false; /* x - (-inf) = +inf */
      *bound = b1 + b2;
      *neginf = n1;
    } else {
      if (n1 || n2) return false; /* 0 * -inf = NaN */
      *bound = b1 * b2;
    }
    return *bound <= dtype_limit(v);
  }
  return false;
}

/* How one mask element acts on its score. */
enum { OPEN, CLOSED_INF, CLOSED_FINITE, BAD };

static int classify_additive(double x, double masked_below) {
  if (isnan(x) || x == INFINITY) return BAD;
  if (x == -INFINITY) return CLOSED_INF;
  if (x <= masked_below) return CLOSED_FINITE;
  return OPEN;
}

/* Row checks and causal detection over a constant mask tensor. Rows run
 * along the last dim. For select masks, `fill` replaces closed scores. */
static bool check_constant(const xc_tensor_t* t, const xc_attn_mask_t* m, bool* causal) {
  bool select = m->kind == XC_ATTN_MASK_SELECT;
  if (t->rank < 1) return false;
  int64_t row_len = t->dims[t->rank - 1];
  *causal = t->rank >= 2 && m->sq > 0 && m->skv > 0 && t->dims[t->rank - 2] == m->sq &&
            row_len == m->skv;
  double masked_below = is_half_float(m->dtype) ? -HALF_LIMIT : XC_ATTN_MASKED_BELOW;
  int fill_kind = select ? classify_additive(m->fill, masked_below) : OPEN;
  if (select && fill_kind != CLOSED_INF && fill_kind != CLOSED_FINITE) return false;
  if (row_len == 0) return false;
  for (int64_t r = 0; r < t->numel / row_len; r++) {
    bool any_open = false, any_finite_closed = false;
    for (int64_t j = 0; j < row_len; j++) {
      int64_t e = r * row_len + j;
      double x = xc_tensor_get_f64(t, e);
      int kind;
      if (select)
        kind = ((x != 0) == m->keep_when_true) ? OPEN : fill_kind;
      else
        kind = classify_additive(x, masked_below);
      if (kind == BAD) return false;
      if (kind == OPEN) any_open = true;
      if (kind == CLOSED_FINITE) any_finite_closed = true;
      if (*causal) {
        int64_t i = r % m->sq;
        bool want_open = j <= i;
        if ((kind == OPEN) != want_open || (kind == OPEN && !select && x != 0)) *causal = false;
      }
    }
    if (!any_open) {
      /* Every key of the row masked: the subgraph gives NaN (guarded to 0)
       * for -inf, a uniform row for absorbing finite values. */
      if (any_finite_closed || !m->guard) return false;
    }
  }
  return true;
}

bool xc_attn_mask_decide(xc_attn_mask_t* m) {
  m->causal = false;
  m->input = NULL;
  m->negate = false;
  if (m->kind == XC_ATTN_MASK_NONE) return true;
  xc_tensor_t* t;
  bool owned;
  if (xc_attn_eval_const(m->value, 12, &t, &owned)) {
    bool causal = false;
    bool ok = check_constant(t, m, &causal);
    if (owned) xc_tensor_destroy(t);
    if (!ok) return false;
    m->causal = causal;
    if (!causal) {
      m->input = m->value;
      m->negate = m->kind == XC_ATTN_MASK_SELECT && !m->keep_when_true;
    }
    return true;
  }
  if (m->kind == XC_ATTN_MASK_SELECT) {
    /* A run-time condition can mask a whole row; only -inf with the guard
     * gives Attention's zeros. */
    if (m->fill != -INFINITY || !m->guard) return false;
    m->input = m->value;
    m->negate = !m->keep_when_true;
    return true;
  }
  double bound;
  bool neginf;
  if (!mask_bound(m->value, 12, &bound, &neginf) || bound > BOUND_LIMIT) return false;
  if (neginf && !m->guard) return false;
  m->input = m->value;
  return true;
}
