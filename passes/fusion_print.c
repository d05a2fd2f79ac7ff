/* Printing a fusion plan as text or as a Graphviz digraph. */
#include <string.h>

#include "xcomp/fusion.h"

static void print_value_list(FILE* f, int n, xc_value_t* const* vals) {
  char buf[256];
  for (int i = 0; i < n; i++) {
    const xc_value_t* v = vals[i];
    fprintf(f, "%s%s %s%s", i ? ", " : "", v->name ? v->name : "?", xc_value_describe(v, buf, sizeof buf),
            v->constant ? " const" : "");
  }
  if (n == 0) fputs("-", f);
}

static void print_text(const xc_fusion_plan_t* plan, const xc_graph_t* g, FILE* f) {
  fprintf(f, "fusion plan '%s': %d groups, %d kernels, %d nodes\n", g->name ? g->name : "",
          plan->num_groups, xc_fusion_plan_kernel_count(plan), g->num_nodes);
  for (int i = 0; i < plan->num_groups; i++) {
    const xc_fusion_group_t* gr = &plan->groups[i];
    fprintf(f, "group %d %s (%d op%s%s):", gr->id, xc_group_kind_name(gr->kind), gr->num_ops,
            gr->num_ops == 1 ? "" : "s", gr->kind == XC_GROUP_VIEW ? ", no kernel" : "");
    for (int m = 0; m < gr->num_nodes; m++)
      fprintf(f, "%s %s:%s%s%s", m ? "," : "", gr->nodes[m]->name ? gr->nodes[m]->name : "?",
              gr->nodes[m]->domain[0] ? gr->nodes[m]->domain : "", gr->nodes[m]->domain[0] ? "." : "",
              gr->nodes[m]->op_type);
    fputs("\n  in:  ", f);
    print_value_list(f, gr->num_inputs, gr->inputs);
    fputs("\n  out: ", f);
    print_value_list(f, gr->num_outputs, gr->outputs);
    fputs("\n  origins:", f);
    for (int o = 0; o < gr->num_origins; o++) fprintf(f, " %s", gr->origins[o]);
    fputc('\n', f);
  }
}

/* Writes s as the inside of a double-quoted dot string. */
static void dot_escape(FILE* f, const char* s) {
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
}

static const char* kind_color(xc_group_kind_t k) {
  switch (k) {
    case XC_GROUP_ELEMENTWISE: return "lightyellow";
    case XC_GROUP_REDUCTION: return "lightblue";
    case XC_GROUP_GEMM: return "lightpink";
    case XC_GROUP_CONV: return "lightsalmon";
    case XC_GROUP_ATTENTION: return "plum";
    case XC_GROUP_DATA_MOVEMENT: return "lightgrey";
    case XC_GROUP_VIEW: return "white";
  }
  return "white";
}

static void print_dot(const xc_fusion_plan_t* plan, const xc_graph_t* g, FILE* f) {
  fputs("digraph \"", f);
  dot_escape(f, g->name ? g->name : "plan");
  fputs("\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n", f);
  for (int i = 0; i < g->num_inputs; i++) {
    fprintf(f, "  v%d [shape=ellipse, label=\"", g->inputs[i]->id);
    dot_escape(f, g->inputs[i]->name);
    fputs("\"];\n", f);
  }
  for (int i = 0; i < plan->num_groups; i++) {
    const xc_fusion_group_t* gr = &plan->groups[i];
    fprintf(f, "  subgraph cluster_g%d {\n    label=\"g%d %s\";\n    style=%s;\n", gr->id, gr->id,
            xc_group_kind_name(gr->kind), gr->kind == XC_GROUP_VIEW ? "dashed" : "filled");
    fprintf(f, "    fillcolor=%s;\n", kind_color(gr->kind));
    for (int m = 0; m < gr->num_nodes; m++) {
      fprintf(f, "    n%d [label=\"", gr->nodes[m]->id);
      dot_escape(f, gr->nodes[m]->name);
      fputs("\\n", f);
      dot_escape(f, gr->nodes[m]->op_type);
      fputs("\"];\n", f);
    }
    fputs("  }\n", f);
  }
  /* Edges: inside a group plain, across groups bold and labelled. */
  for (int i = 0; i < plan->num_groups; i++) {
    const xc_fusion_group_t* gr = &plan->groups[i];
    for (int m = 0; m < gr->num_nodes; m++) {
      const xc_node_t* nd = gr->nodes[m];
      for (int k = 0; k < nd->num_inputs; k++) {
        const xc_value_t* v = nd->inputs[k];
        if (!v) continue;
        const xc_fusion_group_t* from = v->producer ? xc_fusion_plan_group_of(plan, v->producer) : NULL;
        if (v->producer && from == gr) {
          fprintf(f, "  n%d -> n%d;\n", v->producer->id, nd->id);
        } else if (v->producer && from) {
          fprintf(f, "  n%d -> n%d [style=bold, label=\"", v->producer->id, nd->id);
          dot_escape(f, v->name);
          fputs("\"];\n", f);
        } else if (v->flags & XC_VALUE_INPUT) {
          fprintf(f, "  v%d -> n%d;\n", v->id, nd->id);
        }
      }
    }
  }
  for (int i = 0; i < g->num_outputs; i++) {
    const xc_value_t* v = g->outputs[i];
    fprintf(f, "  o%d [shape=ellipse, label=\"", i);
    dot_escape(f, v->name);
    fputs("\"];\n", f);
    if (v->producer) fprintf(f, "  n%d -> o%d;\n", v->producer->id, i);
  }
  fputs("}\n", f);
}

xc_status_t xc_fusion_plan_print(const xc_fusion_plan_t* plan, const xc_graph_t* g, FILE* f,
                                 xc_plan_format_t format) {
  if (!plan || !g || !f) return xc_error(XC_INVALID_ARGUMENT, "fusion plan print: NULL argument");
  if (format == XC_PLAN_DOT)
    print_dot(plan, g, f);
  else
    print_text(plan, g, f);
  if (ferror(f)) return xc_error(XC_IO, "fusion plan print: write failed");
  return NULL;
}
