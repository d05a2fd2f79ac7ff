/* Shared matching helpers for the pattern-recognition passes
 * (passes/pattern_*.c, passes/bn_fold.c): op tests, use counts, scalar
 * constants compared with a tolerance, product flattening, and the common
 * "replace this chain by one new node" step. Internal to passes/. */
#ifndef XCOMP_PASSES_PATTERN_UTIL_H
#define XCOMP_PASSES_PATTERN_UTIL_H

#include "xcomp/graph.h"

/* Relative tolerance for constants written by exporters (0.7071, 1.4142...). */
#define XC_PAT_REL_TOL 1e-4

#define XC_PAT_MAX_LEAVES 8
#define XC_PAT_MAX_MATCHED 32

/* Live node of the default domain (or of `domain` in the _in variant). */
bool xc_pat_is_op(const xc_node_t* n, const char* op);
bool xc_pat_is_op_in(const xc_node_t* n, const char* domain, const char* op);
/* The live producer of v when it is `op` (default domain), else NULL. */
xc_node_t* xc_pat_producer(const xc_value_t* v, const char* op);

/* Uses of v by live nodes, +1 per graph-output slot. */
int xc_pat_uses(const xc_graph_t* g, const xc_value_t* v);
/* Exactly n uses, all by nodes (v is not a graph output). */
bool xc_pat_has_uses(const xc_graph_t* g, const xc_value_t* v, int n);
/* The only live consumer of v (v has one use and is not a graph output). */
xc_node_t* xc_pat_single_consumer(const xc_graph_t* g, const xc_value_t* v);

/* |a - b| <= (1e-4 + extra_tol) * |b|. */
bool xc_pat_near(double a, double b);
bool xc_pat_near_tol(double a, double b, double extra_tol);
/* Relative rounding error of a constant stored in dtype t (half an ulp). */
double xc_pat_dtype_tol(xc_dtype_t t);
/* A constant float value with exactly one element (an initializer or a
 * Constant node's result); its value in *out, its dtype's rounding error in
 * *tol (may be NULL). */
bool xc_pat_scalar_const_tol(const xc_value_t* v, double* out, double* tol);
bool xc_pat_scalar_const(const xc_value_t* v, double* out);
/* A scalar constant equal to `expected` within the tolerance. */
bool xc_pat_scalar_near(const xc_value_t* v, double expected);
/* Typed value of a float dtype (f32 f64 f16 bf16). */
bool xc_pat_is_float(const xc_value_t* v);
/* Same dtype, rank and (structurally equal) dims. */
bool xc_pat_same_type(const xc_value_t* a, const xc_value_t* b);

/* Sorted, normalized axes of a Reduce* node (constant input 1; absent axes
 * mean all axes). False if unknown, empty, or keepdims is 0. */
bool xc_pat_reduce_axes(const xc_graph_t* g, const xc_node_t* n, int rank, int64_t* axes,
                        int* count);

/* A product c * l0 * l1 * ... read off a tree of Mul nodes (and Div by a
 * scalar constant) whose inner results have a single use. Scalar constants
 * multiply into `scale`; other operands are leaves. */
typedef struct xc_pat_product {
  double scale;
  double tol; /* summed rounding error of the constants (xc_pat_dtype_tol) */
  int num_leaves;
  xc_value_t* leaves[XC_PAT_MAX_LEAVES];
  int num_nodes;
  xc_node_t* nodes[XC_PAT_MAX_LEAVES * 2];
} xc_pat_product_t;

/* Flattens the product rooted at node `root` (a Mul or Div). False when the
 * tree is not a product of that form or is too large. */
bool xc_pat_flatten_product(const xc_graph_t* g, xc_node_t* root, xc_pat_product_t* out);

/* A set of matched nodes, collected while matching. */
typedef struct xc_pat_match {
  int count;
  xc_node_t* nodes[XC_PAT_MAX_MATCHED];
} xc_pat_match_t;

bool xc_pat_match_add(xc_pat_match_t* m, xc_node_t* n);
bool xc_pat_match_add_product(xc_pat_match_t* m, const xc_pat_product_t* p);

/* Adds node `op_type` (domain "" or "xcomp") on `inputs`, whose single output
 * has the type of root's output 0, inherits the provenance of every matched
 * node, takes over all uses of root's output; marks matched nodes dead. */
xc_status_t xc_pat_replace(xc_graph_t* g, xc_node_t* root, const xc_pat_match_t* m,
                           const char* op_type, const char* domain, int num_inputs,
                           xc_value_t* const* inputs, xc_node_t** out_node);

/* A fresh value name "<prefix>_<n>" not used in g, in the graph's arena. */
const char* xc_pat_fresh_name(xc_graph_t* g, const char* prefix);

/* Drops dead nodes and restores topological order after a pass changed g. */
xc_status_t xc_pat_finish(xc_graph_t* g, bool changed);

#endif
