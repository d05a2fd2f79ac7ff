/* Graph statistics: node counts by op, kernel groups of a fusion plan and the
 * bytes moved between kernels. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/fusion.h"

/* -1 on overflow or division by <= 0. */
static bool eval_expr(const xc_symexpr_t* e, int64_t sym, bool* symbolic, int64_t* out) {
  if (!e) return false;
  if (e->kind == XC_SYM_CONST) {
    *out = e->value;
    return true;
  }
  if (e->kind == XC_SYM_VAR) {
    *symbolic = true;
    *out = sym;
    return true;
  }
  int64_t a, b;
  if (!eval_expr(e->a, sym, symbolic, &a) || !eval_expr(e->b, sym, symbolic, &b)) return false;
  switch (e->kind) {
    case XC_SYM_ADD: return xc_add_i64(a, b, out);
    case XC_SYM_SUB: return xc_sub_i64(a, b, out);
    case XC_SYM_MUL: return xc_mul_i64(a, b, out);
    case XC_SYM_FLOORDIV:
    case XC_SYM_CEILDIV: {
      if (b <= 0) return false;
      int64_t q = a / b, r = a % b;
      if (e->kind == XC_SYM_FLOORDIV && r != 0 && a < 0) q--;
      if (e->kind == XC_SYM_CEILDIV && r != 0 && a > 0) q++;
      *out = q;
      return true;
    }
    case XC_SYM_MIN: *out = a < b ? a : b; return true;
    case XC_SYM_MAX: *out = a > b ? a : b; return true;
    default: return false;
  }
}

int64_t xc_dim_estimate(xc_dim_t d, int64_t sym_value, bool* symbolic) {
  bool sym = false;
  int64_t v;
  if (xc_dim_is_static(d)) return d.value;
  if (!eval_expr(d.sym, sym_value, &sym, &v)) return -1;
  if (symbolic && sym) *symbolic = true;
  return v;
}

int64_t xc_value_nbytes_estimate(const xc_value_t* v, bool* symbolic) {
  bool sym = false;
  if (!v || v->rank < 0 || v->dtype == XC_DTYPE_UNDEFINED) return -1;
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) {
    int64_t d = xc_dim_estimate(v->dims[i], 1, &sym);
    if (d < 0) return -1;
    if (d > 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  int64_t es = (int64_t)xc_dtype_size(v->dtype);
  if (es > 0 && n > INT64_MAX / es) return -1;
  if (symbolic && sym) *symbolic = true;
  return n * es;
}

static int cmp_counts(const void* a, const void* b) {
  const xc_op_count_t *x = a, *y = b;
  if (x->count != y->count) return y->count - x->count;
  int c = strcmp(x->domain, y->domain);
  return c ? c : strcmp(x->op_type, y->op_type);
}

xc_status_t xc_graph_stats_compute(const xc_graph_t* g, const xc_fusion_plan_t* plan,
                                   xc_graph_stats_t* out) {
  memset(out, 0, sizeof *out);
  out->num_nodes = g->num_nodes;
  out->num_groups = out->num_kernel_groups = -1;
  out->bytes_moved = -1;
  out->op_counts = calloc((size_t)g->num_nodes + 1, sizeof *out->op_counts);
  if (!out->op_counts) return xc_error_oom();
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    int j = 0;
    for (; j < out->num_op_kinds; j++)
      if (strcmp(out->op_counts[j].op_type, n->op_type) == 0 &&
          strcmp(out->op_counts[j].domain, n->domain) == 0)
        break;
    if (j == out->num_op_kinds) {
      out->op_counts[j].op_type = n->op_type;
      out->op_counts[j].domain = n->domain;
      out->num_op_kinds++;
    }
    out->op_counts[j].count++;
  }
  qsort(out->op_counts, (size_t)out->num_op_kinds, sizeof *out->op_counts, cmp_counts);
  if (!plan) return NULL;
  out->num_groups = plan->num_groups;
  out->num_kernel_groups = xc_fusion_plan_kernel_count(plan);
  out->bytes_moved = 0;
  /* A boundary value is an output of a kernel group. View groups only
   * alias their input, so their outputs move nothing. */
  for (int i = 0; i < plan->num_groups; i++) {
    const xc_fusion_group_t* gr = &plan->groups[i];
    if (gr->kind == XC_GROUP_VIEW) continue;
    for (int k = 0; k < gr->num_outputs; k++) {
      int64_t b = xc_value_nbytes_estimate(gr->outputs[k], &out->symbolic_as_one);
      if (b > 0) out->bytes_moved += b;
    }
  }
  return NULL;
}

void xc_graph_stats_free(xc_graph_stats_t* s) {
  if (!s) return;
  free(s->op_counts);
  s->op_counts = NULL;
  s->num_op_kinds = 0;
}

xc_status_t xc_graph_stats_print(const xc_graph_t* g, const xc_fusion_plan_t* plan, FILE* f) {
  xc_graph_stats_t s;
  XC_RETURN_IF_ERROR(xc_graph_stats_compute(g, plan, &s));
  fprintf(f, "nodes: %d\n", s.num_nodes);
  for (int i = 0; i < s.num_op_kinds; i++)
    if (s.op_counts[i].domain[0])
      fprintf(f, "  %s.%-20s %d\n", s.op_counts[i].domain, s.op_counts[i].op_type, s.op_counts[i].count);
    else
      fprintf(f, "  %-26s %d\n", s.op_counts[i].op_type, s.op_counts[i].count);
  if (plan) {
    fprintf(f, "groups: %d (%d kernels)\n", s.num_groups, s.num_kernel_groups);
    fprintf(f, "bytes moved between kernels: %lld%s\n", (long long)s.bytes_moved,
            s.symbolic_as_one ? " (symbolic dims evaluated as 1)" : "");
  }
  xc_graph_stats_free(&s);
  if (ferror(f)) return xc_error(XC_IO, "stats: write failed");
  return NULL;
}
