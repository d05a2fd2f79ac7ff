/* Fusion planning: groups the nodes of an optimized graph into kernel
 * groups, each of which becomes one kernel later, and graph statistics.
 *
 * The plan does not change the graph; it refers to its nodes and values, so
 * it is valid while the graph is not edited. Every node belongs to exactly
 * one group, except Constant nodes (their outputs are constants, like
 * initializers). Groups are listed in a topological order of the group graph.
 * docs/passes.md ("Layout and fusion planning") describes the rules. */
#ifndef XCOMP_FUSION_H
#define XCOMP_FUSION_H

#include <stdio.h>

#include "xcomp/graph.h"
#include "xcomp/passes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xc_group_kind {
  XC_GROUP_ELEMENTWISE,   /* elementwise / broadcast chain */
  XC_GROUP_REDUCTION,     /* a reduction with its elementwise producers and consumers */
  XC_GROUP_GEMM,          /* MatMul/Gemm with its epilogue */
  XC_GROUP_CONV,          /* convolution with its epilogue */
  XC_GROUP_ATTENTION,     /* attention with its head reshapes/transposes */
  XC_GROUP_DATA_MOVEMENT, /* gather, concat, transpose, ... (one op) */
  XC_GROUP_VIEW,          /* pure reshapes: aliases, no kernel */
} xc_group_kind_t;

const char* xc_group_kind_name(xc_group_kind_t k);

typedef struct xc_fusion_group {
  int id;
  xc_group_kind_t kind;
  int num_nodes;
  xc_node_t** nodes;      /* members in graph order */
  int num_inputs;
  xc_value_t** inputs;    /* values read but not produced in the group (incl. constants) */
  int num_outputs;
  xc_value_t** outputs;   /* values produced here and used outside (or graph outputs) */
  int num_origins;
  const char** origins;   /* union of the members' provenance origins */
  int num_ops;            /* members that compute (views do not count) */
} xc_fusion_group_t;

typedef struct xc_fusion_plan {
  int num_groups;
  xc_fusion_group_t* groups;
  int num_nodes;          /* length of group_of: largest node id + 1 */
  int* group_of;          /* node id -> group id, -1 for Constant nodes */
} xc_fusion_plan_t;

/* Builds the plan of g (verified and inferred). traits may be NULL (the
 * defaults of xc_target_traits_init). *out is destroyed with
 * xc_fusion_plan_destroy. */
xc_status_t xc_fusion_plan_build(const xc_graph_t* g, const xc_target_traits_t* traits,
                                 xc_fusion_plan_t** out);
void xc_fusion_plan_destroy(xc_fusion_plan_t* plan);

/* Number of groups that become kernels (all but view groups). */
int xc_fusion_plan_kernel_count(const xc_fusion_plan_t* plan);
/* The group holding node n, or NULL (Constant nodes). */
const xc_fusion_group_t* xc_fusion_plan_group_of(const xc_fusion_plan_t* plan, const xc_node_t* n);

typedef enum xc_plan_format { XC_PLAN_TEXT, XC_PLAN_DOT } xc_plan_format_t;

/* Prints the plan as text (one block per group) or as a Graphviz digraph
 * (one cluster per group, edges between groups labelled with the value). */
xc_status_t xc_fusion_plan_print(const xc_fusion_plan_t* plan, const xc_graph_t* g, FILE* f,
                                 xc_plan_format_t format);

/* ---- statistics ---------------------------------------------------------- */

typedef struct xc_op_count {
  const char* domain;
  const char* op_type;
  int count;
} xc_op_count_t;

typedef struct xc_graph_stats {
  int num_nodes;
  int num_op_kinds;
  xc_op_count_t* op_counts;     /* sorted by count, then name */
  int num_groups;               /* -1 without a plan */
  int num_kernel_groups;        /* -1 without a plan */
  /* Bytes of the values that cross a group boundary (written by one kernel,
   * read by another or a graph output), each value counted once; views are
   * aliases and move nothing. -1 without a plan. */
  int64_t bytes_moved;
  /* True when some boundary value has a symbolic dim; such dims were
   * evaluated with every symbol bound to 1. */
  bool symbolic_as_one;
} xc_graph_stats_t;

/* plan may be NULL (node counts only). */
xc_status_t xc_graph_stats_compute(const xc_graph_t* g, const xc_fusion_plan_t* plan,
                                   xc_graph_stats_t* out);
void xc_graph_stats_free(xc_graph_stats_t* s);
/* Computes and prints the statistics; plan may be NULL. */
xc_status_t xc_graph_stats_print(const xc_graph_t* g, const xc_fusion_plan_t* plan, FILE* f);

/* A dim with every symbol bound to sym_value; *symbolic set when a symbol
 * was met (may be NULL). -1 on overflow or division by <= 0. */
int64_t xc_dim_estimate(xc_dim_t d, int64_t sym_value, bool* symbolic);
/* Byte size of a value with every symbol bound to 1; *symbolic set when a
 * symbol was met (may be NULL). -1 when the type is unknown. */
int64_t xc_value_nbytes_estimate(const xc_value_t* v, bool* symbolic);

#ifdef __cplusplus
}
#endif
#endif
