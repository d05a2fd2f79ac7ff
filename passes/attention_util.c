/* Helpers shared by the attention and rotary-embedding rewrites (see
 * attention_util.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_util.h"
#include "xcomp/interp.h"

/* Constant subgraphs larger than this are not evaluated while matching. */
#define EVAL_MAX_ELEMENTS (1 << 22)

bool xc_attn_is_op(const xc_node_t* n, const char* op) {
  return n && !n->dead && n->domain[0] == 0 && strcmp(n->op_type, op) == 0;
}

xc_node_t* xc_attn_producer(const xc_value_t* v, const char* op) {
  return v && xc_attn_is_op(v->producer, op) ? v->producer : NULL;
}

bool xc_attn_single_use(const xc_graph_t* g, const xc_value_t* v) {
  if (!v || (v->flags & XC_VALUE_OUTPUT)) return false;
  for (int i = 0; i < g->num_outputs; i++)
    if (g->outputs[i] == v) return false;
  return xc_graph_count_uses(g, v) == 1;
}

bool xc_attn_const_scalar(const xc_value_t* v, double* out) {
  if (!v || !v->constant || v->constant->numel != 1 || !xc_dtype_is_float(v->constant->dtype))
    return false;
  *out = xc_tensor_get_f64(v->constant, 0);
  return true;
}

bool xc_attn_const_all(const xc_value_t* v, double x) {
  if (!v || !v->constant) return false;
  for (int64_t i = 0; i < v->constant->numel; i++)
    if (xc_tensor_get_f64(v->constant, i) != x) return false;
  return true;
}

bool xc_attn_same_type(const xc_value_t* a, const xc_value_t* b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->rank < 0) return false;
  for (int i = 0; i < a->rank; i++)
    if (!xc_dim_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

int64_t xc_attn_static_dim(xc_dim_t d) { return d.sym ? -1 : d.value; }

/* Inputs of a contraction (MatMul, Conv, ...) evaluated while matching. */
#define EVAL_MAX_CONTRACTION (1 << 16)

static bool small_static_limit(const xc_value_t* v, int64_t limit) {
  if (!v || v->rank < 0) return false;
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) {
    if (v->dims[i].sym || !xc_mul_i64(n, v->dims[i].value, &n)) return false;
  }
  return n <= limit;
}

static bool small_static(const xc_value_t* v) { return small_static_limit(v, EVAL_MAX_ELEMENTS); }

bool xc_attn_eval_const(const xc_value_t* v, int depth, xc_tensor_t** out, bool* owned) {
  *out = NULL;
  *owned = false;
  if (!v) return false;
  if (v->constant) {
    *out = v->constant;
    return true;
  }
  const xc_node_t* p = v->producer;
  if (!p || p->dead || depth <= 0 || !p->op || !p->op->eval || p->num_inputs > 8 ||
      p->num_outputs > 4)
    return false;
  for (int k = 0; k < p->num_outputs; k++)
    if (p->outputs[k] && !small_static(p->outputs[k])) return false;
  /* Contractions can cost far more than their output size: small inputs only. */
  static const char* const heavy[] = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"};
  for (size_t h = 0; h < sizeof heavy / sizeof heavy[0]; h++)
    if (strcmp(p->op_type, heavy[h]) == 0)
      for (int k = 0; k < p->num_inputs; k++)
        if (p->inputs[k] && !small_static_limit(p->inputs[k], EVAL_MAX_CONTRACTION))
          return false;
  xc_tensor_t* ins[8] = {0};
  bool own[8] = {0};
  bool ok = true;
  for (int k = 0; k < p->num_inputs && ok; k++)
    if (p->inputs[k]) ok = xc_attn_eval_const(p->inputs[k], depth - 1, &ins[k], &own[k]);
  xc_tensor_t* outs[4] = {0};
  if (ok) {
    const xc_tensor_t* cins[8];
    for (int k = 0; k < p->num_inputs; k++) cins[k] = ins[k];
    xc_status_t s = xc_interp_eval_node(p, p->num_inputs, cins, outs);
    if (s) {
      xc_status_free(s);
      ok = false;
    }
  }
  for (int k = 0; k < p->num_inputs; k++)
    if (own[k]) xc_tensor_destroy(ins[k]);
  if (!ok) return false;
  for (int k = 0; k < p->num_outputs; k++) {
    if (k == v->producer_output) {
      *out = outs[k];
      *owned = true;
    } else {
      xc_tensor_destroy(outs[k]);
    }
  }
  return *out != NULL;
}

xc_status_t xc_attn_add_node(xc_graph_t* g, const char* op, const char* base, int num_inputs,
                             xc_value_t* const* inputs, xc_dtype_t dtype, int rank,
                             const xc_dim_t* dims, xc_node_t** out_node) {
  *out_node = NULL;
  const char* name = xc_arena_printf(g->arena, "%s_%s", base, op);
  for (int i = 1; name && xc_graph_find_value(g, name); i++)
    name = xc_arena_printf(g->arena, "%s_%s_%d", base, op, i);
  if (!name) return xc_error_oom();
  xc_value_t* v;
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, name, dtype, rank, dims, &v));
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, op, "", name, num_inputs, inputs, 1, &v, &n));
  n->op = xc_op_lookup("", op);
  if (!n->op) return xc_error(XC_INTERNAL, "op %s is not registered", op);
  *out_node = n;
  return NULL;
}
