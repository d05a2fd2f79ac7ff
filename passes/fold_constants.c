/* Constant folding: a node whose inputs are all constant is evaluated with
 * the reference interpreter and its outputs become initializers — unless the
 * result would grow the model (size limit), so folding never bloats it.
 * Layout changes of constants (a weight transposed or cast for the kernel
 * that reads it) fold up to a much larger limit: they would otherwise run
 * at every run. A transposed weight that other nodes also read as it is
 * (GPT-2's tied embedding: Gather reads rows of [vocab, d], the LM head
 * MatMul its transpose) is not copied: each MatMul reading the transpose
 * becomes a Gemm with transB on the weight itself (tied_weight_gemms). */
#include <stdlib.h>
#include <string.h>

#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "pattern_util.h"

/* Results may exceed their inputs by this much (small shape tensors, ranges). */
#define FOLD_SLACK_BYTES 4096

/* Whether inference knows every element of v as a static number (Shape or
 * Size of a static shape, and what shape arithmetic derives from them). */
static bool elems_static(const xc_value_t* v) {
  if (!v->elems || v->rank < 0 || v->rank > 1 || !xc_dtype_is_int(v->dtype)) return false;
  if (v->rank == 1 && (v->dims[0].sym || v->dims[0].value != v->num_elems)) return false;
  if (v->rank == 0 && v->num_elems != 1) return false;
  for (int64_t i = 0; i < v->num_elems; i++)
    if (!xc_dim_is_static(v->elems[i])) return false;
  return true;
}

/* A node whose every output has statically known elements becomes those
 * constants, whatever its inputs (Shape of an activation with static dims). */
static xc_status_t fold_known_elems(xc_graph_t* g, xc_node_t* n, bool* folded) {
  *folded = false;
  if (n->num_outputs < 1) return NULL;
  for (int k = 0; k < n->num_outputs; k++)
    if (n->outputs[k] && !elems_static(n->outputs[k])) return NULL;
  for (int k = 0; k < n->num_outputs; k++) {
    xc_value_t* v = n->outputs[k];
    if (!v) continue;
    int64_t len = v->num_elems;
    xc_tensor_t* t = NULL;
    XC_RETURN_IF_ERROR(xc_tensor_create(v->dtype, v->rank, &len, &t));
    for (int64_t i = 0; i < len; i++) xc_tensor_set_i64(t, i, v->elems[i].value);
    XC_RETURN_IF_ERROR(xc_value_make_constant(g, v, t));
  }
  n->dead = true;
  *folded = true;
  return NULL;
}

static bool is_layout_change(const xc_node_t* n) {
  static const char* const ops[] = {"Transpose", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  if (n->domain[0] != 0) return false;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (strcmp(n->op_type, ops[i]) == 0) return true;
  return false;
}

/* A new value of unknown type named after base + suffix (xc_pat_fresh_name). */
static xc_status_t new_value(xc_graph_t* g, const char* base, const char* suffix, xc_value_t** out) {
  const char* prefix = xc_arena_printf(g->arena, "%s%s", base, suffix);
  const char* name = prefix ? xc_pat_fresh_name(g, prefix) : NULL;
  if (!name) return xc_error_oom();
  return xc_graph_add_value(g, name, XC_DTYPE_UNDEFINED, -1, NULL, out);
}

/* Reshape of x to the static dims d (a new i64 shape initializer) into y. */
static xc_status_t add_reshape(xc_graph_t* g, const xc_node_t* from, xc_value_t* x, int rank, const int64_t* d,
                               xc_value_t* y) {
  int64_t len = rank;
  xc_tensor_t* t;
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, &len, &t));
  for (int i = 0; i < rank; i++) xc_tensor_set_i64(t, i, d[i]);
  const char* prefix = xc_arena_printf(g->arena, "%s_shape", y->name);
  const char* name = prefix ? xc_pat_fresh_name(g, prefix) : NULL;
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  xc_value_t* shape;
  XC_RETURN_IF_ERROR(xc_graph_add_initializer(g, name, t, &shape));
  xc_value_t* in[2] = {x, shape};
  xc_node_t* r;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Reshape", "", NULL, 2, in, 1, &y, &r));
  return xc_node_inherit_provenance(g, r, from);
}

/* Whether every use of v is as the B operand of a MatMul whose A and output
 * have static dims and rank >= 2 (and v is not a graph output). */
static bool only_matmul_b(const xc_graph_t* g, const xc_value_t* v) {
  int uses = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (n->dead) continue;
    for (int k = 0; k < n->num_inputs; k++) {
      if (n->inputs[k] != v) continue;
      const xc_value_t *a = n->inputs[0], *y = n->outputs[0];
      if (k != 1 || strcmp(n->op_type, "MatMul") != 0 || n->domain[0] || n->num_inputs != 2 || !a || !y ||
          a->rank < 2 || y->rank != a->rank)
        return false;
      for (int d = 0; d < a->rank; d++)
        if (!xc_dim_is_static(a->dims[d]) || !xc_dim_is_static(y->dims[d])) return false;
      uses++;
    }
  }
  return uses > 0 && uses == xc_graph_count_uses(g, v);
}

/* MatMul(A, Transpose(W)) where W is a 2-D constant that other nodes read
 * too: folding the Transpose would store a second, transposed copy of W
 * (77 MB for GPT-2's embedding, with rows of an odd length that GEMM
 * kernels cannot load in 16-byte pieces). Instead each such MatMul becomes
 * Reshape(A, [rows, k]) -> Gemm(transB = 1) on W -> Reshape back to the
 * MatMul's shape (views), and the Transpose is left to dead-code removal. */
static xc_status_t tied_weight_gemms(xc_graph_t* g, bool* changed) {
  int count = g->num_nodes;
  bool any = false;
  for (int i = 0; i < count; i++) {
    xc_node_t* t = g->nodes[i];
    if (t->dead || strcmp(t->op_type, "Transpose") != 0 || t->domain[0] || t->num_inputs != 1 ||
        t->num_outputs != 1 || !t->outputs[0])
      continue;
    xc_value_t *w = t->inputs[0], *wt = t->outputs[0];
    if (!w || !w->constant || w->rank != 2 || xc_graph_count_uses(g, w) < 2) continue;
    int64_t np = 0;
    const int64_t* perm = xc_node_attr_ints(t, "perm", &np);
    if (np == 2 && !(perm[0] == 1 && perm[1] == 0)) continue;
    if (!only_matmul_b(g, wt)) continue;
    for (int j = 0; j < count; j++) {
      xc_node_t* m = g->nodes[j];
      if (m->dead || strcmp(m->op_type, "MatMul") != 0 || m->num_inputs != 2 || m->inputs[1] != wt) continue;
      xc_value_t *a = m->inputs[0], *y = m->outputs[0];
      int r = a->rank;
      int64_t rows = 1, k = a->dims[r - 1].value, ad[2], yd[XC_MAX_RANK];
      for (int d = 0; d + 1 < r; d++) rows *= a->dims[d].value;
      for (int d = 0; d < r; d++) yd[d] = y->dims[d].value;
      ad[0] = rows, ad[1] = k;
      xc_value_t *a2 = a, *y2 = NULL, *ynew = NULL;
      if (r > 2) {
        XC_RETURN_IF_ERROR(new_value(g, a->name, "_rows", &a2));
        XC_RETURN_IF_ERROR(add_reshape(g, m, a, 2, ad, a2));
      }
      XC_RETURN_IF_ERROR(new_value(g, y->name, r > 2 ? "_rows" : "_gemm", &y2));
      xc_value_t* in[2] = {a2, w};
      xc_node_t* gm;
      XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Gemm", "", NULL, 2, in, 1, &y2, &gm));
      XC_RETURN_IF_ERROR(xc_node_set_int(g, gm, "transB", 1));
      XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, gm, m));
      if (r > 2) {
        XC_RETURN_IF_ERROR(new_value(g, y->name, "_view", &ynew));
        XC_RETURN_IF_ERROR(add_reshape(g, m, y2, r, yd, ynew));
      } else {
        ynew = y2;
      }
      XC_RETURN_IF_ERROR(xc_value_set_type(g, ynew, y->dtype, y->rank, y->dims));
      XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, ynew));
      m->dead = true;
      *changed = any = true;
    }
    t->dead = true; /* nothing reads the transpose any more: never fold it */
  }
  if (!any) return NULL;
  XC_RETURN_IF_ERROR(xc_graph_toposort(g));
  return xc_graph_resolve_ops(g);
}

/* Gemm(transB = 1) on a 2-D constant B that only it reads, on a target
 * without matrix instructions: B is transposed once here (a Transpose the
 * folding below turns into the [K, N] initializer) and transB cleared.
 * Kernels without matrix instructions read B by rows of N (the cpu dot's
 * b vectors, a work-group dot's b values per column); with transB they
 * gathered it with a stride of K per column at every run (the batch-1
 * classifier's [10, 1280] weight: 16 strided loads a k-step) or copied it
 * transposed per launch. A weight other nodes read too keeps its layout
 * (tied_weight_gemms made that Gemm to avoid a second copy). */
static xc_status_t gemm_weights_k_major(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  if (o->target.has_tensor_cores) return NULL;
  int count = g->num_nodes;
  bool any = false;
  for (int i = 0; i < count; i++) {
    xc_node_t* m = g->nodes[i];
    if (m->dead || strcmp(m->op_type, "Gemm") != 0 || m->domain[0] || m->num_inputs < 2 ||
        !xc_node_attr_int(m, "transB"))
      continue;
    xc_value_t* w = m->inputs[1];
    if (!w || !w->constant || w->rank != 2 || xc_graph_count_uses(g, w) != 1 ||
        (int64_t)xc_tensor_nbytes(w->constant) > o->fold_layout_limit_bytes)
      continue;
    xc_value_t* wt = NULL;
    XC_RETURN_IF_ERROR(new_value(g, w->name, "_kn", &wt));
    xc_node_t* t;
    XC_RETURN_IF_ERROR(xc_graph_add_node(g, "Transpose", "", NULL, 1, &w, 1, &wt, &t));
    const int64_t perm[2] = {1, 0};
    XC_RETURN_IF_ERROR(xc_node_set_ints(g, t, "perm", 2, perm));
    XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, t, m));
    xc_dim_t d[2] = {w->dims[1], w->dims[0]};
    XC_RETURN_IF_ERROR(xc_value_set_type(g, wt, w->dtype, 2, d));
    m->inputs[1] = wt;
    XC_RETURN_IF_ERROR(xc_node_set_int(g, m, "transB", 0));
    *changed = any = true;
  }
  if (!any) return NULL;
  XC_RETURN_IF_ERROR(xc_graph_toposort(g));
  return xc_graph_resolve_ops(g);
}

xc_status_t xc_pass_fold_constants(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  XC_RETURN_IF_ERROR(tied_weight_gemms(g, changed));
  XC_RETURN_IF_ERROR(gemm_weights_k_major(g, o, changed));
  const xc_tensor_t* ins[64];
  xc_tensor_t* outs[16];
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* n = g->nodes[i];
    if (n->dead || n->num_inputs > 64 || n->num_outputs > 16 || !n->op || !n->op->eval) continue;
    bool all_const = true;
    int64_t in_bytes = 0;
    for (int k = 0; k < n->num_inputs; k++) {
      const xc_value_t* v = n->inputs[k];
      ins[k] = v ? v->constant : NULL;
      if (v && !v->constant) all_const = false;
      if (v && v->constant) in_bytes += (int64_t)xc_tensor_nbytes(v->constant);
    }
    if (!all_const) {
      bool folded = false;
      XC_RETURN_IF_ERROR(fold_known_elems(g, n, &folded));
      if (folded) *changed = true;
      continue;
    }
    /* Predict output size from the (static) inferred shapes before running. */
    int64_t out_bytes = 0;
    bool known = true;
    for (int k = 0; k < n->num_outputs; k++) {
      const xc_value_t* v = n->outputs[k];
      if (!v) continue;
      int64_t numel = 1;
      for (int d = 0; d < v->rank; d++) {
        if (v->dims[d].sym || !xc_mul_i64(numel, v->dims[d].value, &numel)) known = false;
      }
      int64_t b;
      if (!known || !xc_mul_i64(numel, (int64_t)xc_dtype_size(v->dtype), &b)) {
        known = false;
        break;
      }
      out_bytes += b;
    }
    if (!known || out_bytes > (is_layout_change(n) ? o->fold_layout_limit_bytes : o->fold_limit_bytes)) continue;
    /* Constant nodes merely move their attribute into an initializer. */
    bool is_constant_op = n->num_inputs == 0;
    if (!is_constant_op && out_bytes > in_bytes + FOLD_SLACK_BYTES) continue;
    xc_status_t s = xc_interp_eval_node(n, n->num_inputs, ins, outs);
    if (s) {
      /* A node that fails on its constant inputs fails at run time too;
       * leave it for the runtime to report with full context. */
      xc_status_free(s);
      continue;
    }
    n->dead = true;
    *changed = true;
    for (int k = 0; k < n->num_outputs; k++) {
      if (!n->outputs[k]) {
        xc_tensor_destroy(outs[k]);
        continue;
      }
      s = xc_value_make_constant(g, n->outputs[k], outs[k]);
      outs[k] = NULL;
      if (s) {
        for (int j = k + 1; j < n->num_outputs; j++) xc_tensor_destroy(outs[j]);
        return s;
      }
    }
  }
  return NULL;
}
