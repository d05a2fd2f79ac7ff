/* xcomp graph IR: values (tensors with dtype and symbolic shape), nodes (ops
 * with typed attributes and provenance) and graphs (inputs, outputs,
 * initializers).
 *
 * Ownership: a graph owns everything reachable from it. Values, nodes, names,
 * dims and attributes live in the graph's arena and die with the graph;
 * constant tensors handed to the graph are destroyed with it. */
#ifndef XCOMP_GRAPH_H
#define XCOMP_GRAPH_H

#include <stdio.h>

#include "xcomp/status.h"
#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arena ------------------------------------------------------------ */

typedef struct xc_arena xc_arena_t;
xc_arena_t* xc_arena_create(void);
void xc_arena_destroy(xc_arena_t* a);
/* Zeroed, 16-byte aligned. NULL on OOM. */
void* xc_arena_alloc(xc_arena_t* a, size_t n);
char* xc_arena_strdup(xc_arena_t* a, const char* s);
char* xc_arena_strndup(xc_arena_t* a, const char* s, size_t n);
char* xc_arena_printf(xc_arena_t* a, const char* fmt, ...) XC_PRINTF(2, 3);

/* ---- symbolic dims ----------------------------------------------------- */

typedef enum xc_sym_kind {
  XC_SYM_CONST,
  XC_SYM_VAR,       /* named symbol, bound from inputs at run time */
  XC_SYM_ADD,
  XC_SYM_SUB,
  XC_SYM_MUL,
  XC_SYM_FLOORDIV,
  XC_SYM_CEILDIV,
  XC_SYM_MIN,
  XC_SYM_MAX,
} xc_sym_kind_t;

typedef struct xc_symexpr {
  xc_sym_kind_t kind;
  int64_t value;      /* XC_SYM_CONST */
  const char* name;   /* XC_SYM_VAR */
  const struct xc_symexpr* a;
  const struct xc_symexpr* b;
} xc_symexpr_t;

/* One dimension: static when sym == NULL (value >= 0), else symbolic. */
typedef struct xc_dim {
  int64_t value;
  const xc_symexpr_t* sym;
} xc_dim_t;

typedef struct xc_graph xc_graph_t;

static inline xc_dim_t xc_dim_const(int64_t v) {
  xc_dim_t d = {v, NULL};
  return d;
}
static inline bool xc_dim_is_static(xc_dim_t d) { return d.sym == NULL; }

/* Symbolic arithmetic, simplified as it is built (constants fold; x+0, x*1,
 * x*0, floordiv(x,1) vanish). Expressions live in the graph's arena; on OOM
 * or overflow of constant folding, the graph records an error that
 * xc_graph_take_error returns. */
xc_dim_t xc_dim_var(xc_graph_t* g, const char* name);
xc_dim_t xc_dim_add(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_sub(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_mul(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_floordiv(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_ceildiv(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_min(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
xc_dim_t xc_dim_max(xc_graph_t* g, xc_dim_t a, xc_dim_t b);
/* A new symbol with a unique name "<prefix>_<n>" (data-dependent dims). */
xc_dim_t xc_dim_fresh(xc_graph_t* g, const char* prefix);
/* Structural equality. */
bool xc_dim_equal(xc_dim_t a, xc_dim_t b);
/* Prints "7", "batch", "seq*2", "floordiv(h+-1,2)+1" style; returns buf. */
const char* xc_dim_print(xc_dim_t d, char* buf, size_t n);
/* Writes the printed dim to f. */
void xc_dim_fprint(FILE* f, xc_dim_t d);

/* Run-time symbol bindings. */
typedef struct xc_symbind {
  int count, capacity;
  const char** names;  /* not owned */
  int64_t* values;
} xc_symbind_t;
void xc_symbind_init(xc_symbind_t* b);
void xc_symbind_free(xc_symbind_t* b);
bool xc_symbind_lookup(const xc_symbind_t* b, const char* name, int64_t* out);
xc_status_t xc_symbind_set(xc_symbind_t* b, const char* name, int64_t v);
/* Evaluates a dim; fails on unbound symbols, overflow, division by <= 0. */
xc_status_t xc_dim_eval(xc_dim_t d, const xc_symbind_t* b, int64_t* out);
/* Unifies a dim with an actual size: binds an unbound VAR, otherwise
 * evaluates and compares. Fails with a message on mismatch. */
xc_status_t xc_dim_unify(xc_dim_t d, int64_t actual, xc_symbind_t* b);

/* ---- attributes -------------------------------------------------------- */

typedef enum xc_attr_kind {
  XC_ATTR_UNDEFINED = 0,
  XC_ATTR_INT,
  XC_ATTR_FLOAT,
  XC_ATTR_STRING,
  XC_ATTR_TENSOR,
  XC_ATTR_INTS,
  XC_ATTR_FLOATS,
  XC_ATTR_STRINGS,
  XC_ATTR_TENSORS,
  XC_ATTR_GRAPH, /* reserved for control flow; not produced yet */
} xc_attr_kind_t;

const char* xc_attr_kind_name(xc_attr_kind_t k); /* "int", "floats", ... */

typedef struct xc_attr {
  const char* name;
  xc_attr_kind_t kind;
  int64_t i;
  double f;
  const char* s;
  xc_tensor_t* t;         /* owned by the graph */
  int64_t n;              /* list length for list kinds */
  int64_t* ints;
  double* floats;
  const char** strings;
  xc_tensor_t** tensors;  /* owned by the graph */
} xc_attr_t;

/* ---- values, nodes, graphs ------------------------------------------- */

enum {
  XC_VALUE_INPUT = 1u << 0,
  XC_VALUE_OUTPUT = 1u << 1,
  XC_VALUE_INITIALIZER = 1u << 2,
};

struct xc_node;

typedef struct xc_value {
  int id;
  const char* name;
  xc_dtype_t dtype;       /* XC_DTYPE_UNDEFINED before inference */
  int rank;               /* -1 before inference */
  xc_dim_t* dims;
  struct xc_node* producer; /* NULL for inputs and initializers */
  int producer_output;
  xc_tensor_t* constant;  /* initializer data (owned by graph) or NULL */
  /* Known element values of a small 1-D (or scalar) integer tensor, e.g. the
   * output of Shape, possibly symbolic. NULL when unknown. Shape inference of
   * Reshape/Expand/ConstantOfShape/... reads these. */
  int64_t num_elems;
  xc_dim_t* elems;
  unsigned flags;
} xc_value_t;

typedef struct xc_provenance {
  const char* source; /* ONNX node name, or .xir node label; may be NULL */
  const char* file;   /* .xir/.onnx file; may be NULL */
  int line, col;      /* 0 when unknown */
  int num_origins;    /* source nodes a rewritten/fused node came from */
  const char** origins;
} xc_provenance_t;

struct xc_op_def;

typedef struct xc_node {
  int id;
  const char* name;
  const char* op_type;
  const char* domain;          /* "" for the ONNX default domain */
  const struct xc_op_def* op;  /* resolved registry entry, NULL if unknown */
  int num_inputs;
  xc_value_t** inputs;         /* entries NULL for omitted optional inputs */
  int num_outputs;
  xc_value_t** outputs;        /* entries NULL for omitted optional outputs */
  int num_attrs;
  xc_attr_t* attrs;
  xc_provenance_t prov;
  bool dead; /* marked for removal by a pass; xc_graph_compact drops it */
} xc_node_t;

struct xc_graph {
  xc_arena_t* arena;
  const char* name;
  int64_t opset;               /* default-domain opset the source was written for */
  int num_values, cap_values;
  xc_value_t** values;
  int num_nodes, cap_nodes;
  xc_node_t** nodes;           /* topological order once verified */
  int num_inputs, cap_inputs;
  xc_value_t** inputs;         /* graph inputs (not initializers) */
  int num_outputs, cap_outputs;
  xc_value_t** outputs;
  int num_initializers, cap_initializers;
  xc_value_t** initializers;
  /* private */
  int num_owned, cap_owned;
  xc_tensor_t** owned;
  void* name_index;
  int fresh_counter;
  xc_status_t pending_error;
  int num_cleanups, cap_cleanups;
  struct xc_graph_cleanup* cleanups;
};

xc_status_t xc_graph_create(const char* name, xc_graph_t** out);
void xc_graph_destroy(xc_graph_t* g);

/* Returns the first error recorded by dim arithmetic or allocation helpers
 * that cannot return a status, and clears it. */
xc_status_t xc_graph_take_error(xc_graph_t* g);

/* Adds a value with a unique name (error on duplicate). rank -1 = unknown. */
xc_status_t xc_graph_add_value(xc_graph_t* g, const char* name, xc_dtype_t dtype,
                               int rank, const xc_dim_t* dims,
                               xc_value_t** out);
xc_value_t* xc_graph_find_value(const xc_graph_t* g, const char* name);
/* Marks a value as a graph input / output (in call order). */
xc_status_t xc_graph_add_input(xc_graph_t* g, xc_value_t* v);
xc_status_t xc_graph_add_output(xc_graph_t* g, xc_value_t* v);
/* Adds an initializer value named `name` holding `tensor`; the graph takes
 * ownership of the tensor even on failure. */
xc_status_t xc_graph_add_initializer(xc_graph_t* g, const char* name,
                                     xc_tensor_t* tensor, xc_value_t** out);
/* Hands a tensor to the graph to be destroyed with it. */
xc_status_t xc_graph_own_tensor(xc_graph_t* g, xc_tensor_t* t);
/* Runs fn(arg) when g is destroyed, after its tensors (e.g. unmapping a file
 * that constant tensors point into). On failure fn(arg) runs at once. */
xc_status_t xc_graph_on_destroy(xc_graph_t* g, void (*fn)(void*), void* arg);

/* Appends a node. Inputs may contain NULLs (omitted optional inputs); outputs
 * must be values without producer (NULL allowed for omitted outputs). */
xc_status_t xc_graph_add_node(xc_graph_t* g, const char* op_type,
                              const char* domain, const char* name,
                              int num_inputs, xc_value_t* const* inputs,
                              int num_outputs, xc_value_t* const* outputs,
                              xc_node_t** out);

/* Attribute setters (replace an existing attribute of the same name). */
xc_status_t xc_node_set_int(xc_graph_t* g, xc_node_t* n, const char* name, int64_t v);
xc_status_t xc_node_set_float(xc_graph_t* g, xc_node_t* n, const char* name, double v);
xc_status_t xc_node_set_string(xc_graph_t* g, xc_node_t* n, const char* name, const char* v);
/* Takes ownership of t. */
xc_status_t xc_node_set_tensor(xc_graph_t* g, xc_node_t* n, const char* name, xc_tensor_t* t);
xc_status_t xc_node_set_ints(xc_graph_t* g, xc_node_t* n, const char* name,
                             int64_t count, const int64_t* v);
xc_status_t xc_node_set_floats(xc_graph_t* g, xc_node_t* n, const char* name,
                               int64_t count, const double* v);
xc_status_t xc_node_set_strings(xc_graph_t* g, xc_node_t* n, const char* name,
                                int64_t count, const char* const* v);
/* Takes ownership of every tensor. */
xc_status_t xc_node_set_tensors(xc_graph_t* g, xc_node_t* n, const char* name,
                                int64_t count, xc_tensor_t* const* v);

/* Attribute getters. If the node lacks the attribute, the default declared in
 * the op registry is returned; asking for an attribute the op does not
 * declare is a programming error (assert). */
const xc_attr_t* xc_node_find_attr(const xc_node_t* n, const char* name);
bool xc_node_has_attr(const xc_node_t* n, const char* name);
int64_t xc_node_attr_int(const xc_node_t* n, const char* name);
double xc_node_attr_float(const xc_node_t* n, const char* name);
const char* xc_node_attr_string(const xc_node_t* n, const char* name);
const xc_tensor_t* xc_node_attr_tensor(const xc_node_t* n, const char* name);
/* Lists: *count = 0 and NULL when absent (list defaults are empty). */
const int64_t* xc_node_attr_ints(const xc_node_t* n, const char* name, int64_t* count);
const double* xc_node_attr_floats(const xc_node_t* n, const char* name, int64_t* count);
const char* const* xc_node_attr_strings(const xc_node_t* n, const char* name, int64_t* count);

/* Sets dtype and shape of a value (dims copied into the arena). */
xc_status_t xc_value_set_type(xc_graph_t* g, xc_value_t* v, xc_dtype_t dtype,
                              int rank, const xc_dim_t* dims);
/* Records known element values (copied). */
xc_status_t xc_value_set_elems(xc_graph_t* g, xc_value_t* v, int64_t n,
                               const xc_dim_t* elems);
/* Known element values of an integer value: from `constant` (1-D or scalar,
 * at most 64 elements) or from `elems`. Returns false when unknown. *out
 * points into the arena. */
bool xc_value_known_elems(xc_graph_t* g, const xc_value_t* v, int64_t* n,
                          const xc_dim_t** out);
/* "f32[batch,128]" into buf. */
const char* xc_value_describe(const xc_value_t* v, char* buf, size_t n);

/* "node 'name' (Op) at file:line:col" into buf, for error messages. */
const char* xc_node_describe(const xc_node_t* n, char* buf, size_t size);

/* ---- editing (used by passes) ------------------------------------------- */

/* Makes every use of `old` (node inputs, graph outputs) use `repl` instead.
 * When `old` is a graph output and `repl` is an ordinary intermediate value,
 * `repl` takes over the output's name so graph outputs keep their names. */
xc_status_t xc_graph_replace_uses(xc_graph_t* g, xc_value_t* old, xc_value_t* repl);
/* Number of node inputs that use v (plus 1 per graph-output slot). */
int xc_graph_count_uses(const xc_graph_t* g, const xc_value_t* v);
/* Drops dead nodes and the values nothing refers to any more, renumbers ids
 * and rebuilds the name index. */
xc_status_t xc_graph_compact(xc_graph_t* g);
/* Turns a value into an initializer holding t (ownership taken); its
 * producer, if any, must already be dead. */
xc_status_t xc_value_make_constant(xc_graph_t* g, xc_value_t* v, xc_tensor_t* t);
/* Adds a provenance origin to node n (deduplicated). */
xc_status_t xc_node_add_origin(xc_graph_t* g, xc_node_t* n, const char* origin);
/* Copies the origins (or the source name) of `from` into `to`. */
xc_status_t xc_node_inherit_provenance(xc_graph_t* g, xc_node_t* to, const xc_node_t* from);

/* Checks structure: op known, arity, attribute kinds, required attributes,
 * SSA (each value produced once), every input defined before use (nodes must
 * be in topological order), outputs produced, initializers hold data whose
 * dtype/shape match the value. */
xc_status_t xc_graph_verify(const xc_graph_t* g);
/* Reorders nodes topologically (stable); fails naming a node on a cycle. */
xc_status_t xc_graph_toposort(xc_graph_t* g);
/* Resolves node->op for every node from the registry (error: unknown op). */
xc_status_t xc_graph_resolve_ops(xc_graph_t* g);
/* Runs every op's shape/type inference in order. Graph inputs must be typed. */
xc_status_t xc_graph_infer(xc_graph_t* g);
/* Gives graph inputs new shapes and infers g again: `spec` is
 * "NAME=DIMS[;NAME=DIMS...]", DIMS sizes separated by 'x' or ','
 * ("input_ids=1x64"). An input keeps its rank and dtype; fixed dims may
 * change (a model exported at one size run at another) and symbolic ones
 * become static (a specialization). Every value that is not an input or a
 * constant is inferred anew. When a node cannot take the new shapes (a
 * Reshape to constant sizes of the exported shape, ...) the error names the
 * node; g is then left untyped past it and must not be used. */
xc_status_t xc_graph_set_input_shapes(xc_graph_t* g, const char* spec);
/* True when a dim of some graph input uses the symbol `name`. */
bool xc_graph_has_symbol(const xc_graph_t* g, const char* name);
/* Specializes g for symbol `name` = value: input dims that use it become
 * static, then g is inferred again (as xc_graph_set_input_shapes). An error
 * when no input uses the symbol. */
xc_status_t xc_graph_bind_symbol(xc_graph_t* g, const char* name, int64_t value);

#ifdef __cplusplus
}
#endif
#endif
