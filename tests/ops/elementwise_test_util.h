/* Test support for op tests: build tensors from literal values and run one
 * node through the whole pipeline (graph building, resolve, verify, shape
 * inference, reference interpreter with its inference cross-check). */
#ifndef XCOMP_TESTS_OPS_ELEMENTWISE_TEST_UTIL_H
#define XCOMP_TESTS_OPS_ELEMENTWISE_TEST_UTIL_H

#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/tensor.h"

/* An attribute for run_node: kind 'i' (int), 'f' (float), 's' (string). */
typedef struct test_attr {
  const char* name;
  char kind;
  int64_t i;
  double f;
  const char* s;
} test_attr_t;

#define TA_I(n, v) {(n), 'i', (v), 0.0, NULL}
#define TA_F(n, v) {(n), 'f', 0, (v), NULL}
#define TA_S(n, v) {(n), 's', 0, 0.0, (v)}

/* Tensor from double values (rounded into dtype). Aborts the test on OOM. */
static inline xc_tensor_t* tensor_f(xc_dtype_t dt, int rank, const int64_t* dims,
                                    const double* vals) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dt, rank, dims, &t);
  if (s) {
    fprintf(stderr, "tensor_f: %s\n", xc_status_message(s));
    exit(2);
  }
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, vals[i]);
  return t;
}

/* Tensor from int64 values (wrapped into dtype). */
static inline xc_tensor_t* tensor_i(xc_dtype_t dt, int rank, const int64_t* dims,
                                    const int64_t* vals) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dt, rank, dims, &t);
  if (s) {
    fprintf(stderr, "tensor_i: %s\n", xc_status_message(s));
    exit(2);
  }
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, vals[i]);
  return t;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define IVALS(...) ((const int64_t[]){__VA_ARGS__})

/* Runs op on the given inputs (NULL = omitted optional input) and returns
 * the first failure of any stage. outputs[k] receive new tensors (caller
 * destroys them) for k < num_outputs. The input tensors are not consumed. */
static inline xc_status_t run_node(const char* op, const test_attr_t* attrs, int num_attrs,
                                   int num_inputs, const xc_tensor_t* const* inputs,
                                   int num_outputs, xc_tensor_t** outputs) {
  for (int k = 0; k < num_outputs; k++) outputs[k] = NULL;
  xc_graph_t* g = NULL;
  XC_RETURN_IF_ERROR(xc_graph_create("t", &g));
  xc_status_t s = NULL;
  xc_value_t* in_vals[8] = {0};
  xc_value_t* out_vals[4] = {0};
  const xc_tensor_t* feed[8];
  int num_feed = 0;
  for (int k = 0; k < num_inputs && !s; k++) {
    if (!inputs[k]) continue;
    char name[16];
    snprintf(name, sizeof name, "in%d", k);
    xc_dim_t dims[XC_MAX_RANK];
    for (int d = 0; d < inputs[k]->rank; d++) dims[d] = xc_dim_const(inputs[k]->dims[d]);
    s = xc_graph_add_value(g, name, inputs[k]->dtype, inputs[k]->rank, dims, &in_vals[k]);
    if (!s) s = xc_graph_add_input(g, in_vals[k]);
    feed[num_feed++] = inputs[k];
  }
  for (int k = 0; k < num_outputs && !s; k++) {
    char name[16];
    snprintf(name, sizeof name, "out%d", k);
    s = xc_graph_add_value(g, name, XC_DTYPE_UNDEFINED, -1, NULL, &out_vals[k]);
    if (!s) s = xc_graph_add_output(g, out_vals[k]);
  }
  xc_node_t* n = NULL;
  if (!s) s = xc_graph_add_node(g, op, "", "n", num_inputs, in_vals, num_outputs, out_vals, &n);
  for (int a = 0; a < num_attrs && !s; a++) {
    const test_attr_t* at = &attrs[a];
    if (at->kind == 'i') s = xc_node_set_int(g, n, at->name, at->i);
    else if (at->kind == 'f') s = xc_node_set_float(g, n, at->name, at->f);
    else s = xc_node_set_string(g, n, at->name, at->s);
  }
  if (!s) s = xc_graph_resolve_ops(g);
  if (!s) s = xc_graph_verify(g);
  if (!s) s = xc_graph_infer(g);
  if (!s) s = xc_interp_run(g, NULL, num_feed, feed, outputs);
  xc_graph_destroy(g);
  return s;
}

/* run_node for one output; returns NULL (and reports) on failure. */
static inline xc_tensor_t* run1(const char* op, const test_attr_t* attrs, int num_attrs,
                                int num_inputs, const xc_tensor_t* const* inputs) {
  xc_tensor_t* out = NULL;
  xc_status_t s = run_node(op, attrs, num_attrs, num_inputs, inputs, 1, &out);
  if (s) {
    fprintf(stderr, "run1(%s) failed: %s\n", op, xc_status_message(s));
    xc_test_failures++;
    xc_status_free(s);
    return NULL;
  }
  return out;
}

/* Expects shape, dtype and values (|got - want| <= tol, NaN matches NaN). */
static inline void check_tensor_f(const char* what, const xc_tensor_t* t, xc_dtype_t dt, int rank,
                                  const int64_t* dims, const double* want, double tol) {
  xc_test_checks++;
  if (!t) {
    fprintf(stderr, "%s: no tensor\n", what);
    xc_test_failures++;
    return;
  }
  if (t->dtype != dt || t->rank != rank) {
    fprintf(stderr, "%s: got %s rank %d, want %s rank %d\n", what, xc_dtype_name(t->dtype),
            t->rank, xc_dtype_name(dt), rank);
    xc_test_failures++;
    return;
  }
  for (int d = 0; d < rank; d++)
    if (t->dims[d] != dims[d]) {
      fprintf(stderr, "%s: dim %d is %lld, want %lld\n", what, d, (long long)t->dims[d],
              (long long)dims[d]);
      xc_test_failures++;
      return;
    }
  for (int64_t i = 0; i < t->numel; i++) {
    double g = xc_tensor_get_f64(t, i);
    bool ok = (isnan(g) && isnan(want[i])) || fabs(g - want[i]) <= tol || g == want[i];
    if (ok && g == 0 && want[i] == 0 && signbit(g) != signbit(want[i]) && tol == 0) ok = false;
    if (!ok) {
      fprintf(stderr, "%s: element %lld is %.17g, want %.17g\n", what, (long long)i, g, want[i]);
      xc_test_failures++;
      return;
    }
  }
}

static inline void check_tensor_i(const char* what, const xc_tensor_t* t, xc_dtype_t dt, int rank,
                                  const int64_t* dims, const int64_t* want) {
  xc_test_checks++;
  if (!t) {
    fprintf(stderr, "%s: no tensor\n", what);
    xc_test_failures++;
    return;
  }
  if (t->dtype != dt || t->rank != rank) {
    fprintf(stderr, "%s: got %s rank %d, want %s rank %d\n", what, xc_dtype_name(t->dtype),
            t->rank, xc_dtype_name(dt), rank);
    xc_test_failures++;
    return;
  }
  for (int d = 0; d < rank; d++)
    if (t->dims[d] != dims[d]) {
      fprintf(stderr, "%s: dim %d is %lld, want %lld\n", what, d, (long long)t->dims[d],
              (long long)dims[d]);
      xc_test_failures++;
      return;
    }
  for (int64_t i = 0; i < t->numel; i++)
    if (xc_tensor_get_i64(t, i) != want[i]) {
      fprintf(stderr, "%s: element %lld is %lld, want %lld\n", what, (long long)i,
              (long long)xc_tensor_get_i64(t, i), (long long)want[i]);
      xc_test_failures++;
      return;
    }
}

/* Frees a NULL-terminated-by-count list of tensors. */
static inline void free_tensors(int n, xc_tensor_t** ts) {
  for (int i = 0; i < n; i++) xc_tensor_destroy(ts[i]);
}

/* Tensors made by a test, freed together by release_all(). */
static xc_tensor_t* kept_tensors[512];
static int num_kept_tensors;

static inline xc_tensor_t* keep(xc_tensor_t* t) {
  if (!t) return NULL;
  if (num_kept_tensors == 512) {
    fprintf(stderr, "too many kept tensors\n");
    exit(2);
  }
  kept_tensors[num_kept_tensors++] = t;
  return t;
}

static inline void release_all(void) {
  for (int i = 0; i < num_kept_tensors; i++) xc_tensor_destroy(kept_tensors[i]);
  num_kept_tensors = 0;
}

#define TF(dt, rank, dims, vals) keep(tensor_f((dt), (rank), (dims), (vals)))
#define TI(dt, rank, dims, vals) keep(tensor_i((dt), (rank), (dims), (vals)))
#define INPUTS(...) ((const xc_tensor_t* const[]){__VA_ARGS__})
#define NUM_INPUTS(...) ((int)(sizeof(INPUTS(__VA_ARGS__)) / sizeof(const xc_tensor_t*)))
/* RUN(op, attrs-array-or-NULL, num_attrs, inputs...) -> output 0 (kept). */
#define RUN(op, attrs, nattrs, ...) \
  keep(run1((op), (attrs), (nattrs), NUM_INPUTS(__VA_ARGS__), INPUTS(__VA_ARGS__)))
/* Expects failure whose message contains needle. */
#define RUN_ERR(needle, op, attrs, nattrs, ...)                                        \
  do {                                                                                 \
    xc_tensor_t* outs_[1];                                                             \
    CHECK_ERR(run_node((op), (attrs), (nattrs), NUM_INPUTS(__VA_ARGS__),               \
                       INPUTS(__VA_ARGS__), 1, outs_),                                 \
              (needle));                                                               \
    xc_tensor_destroy(outs_[0]);                                                       \
  } while (0)

#endif
