/* Builds a one-node graph around an op, runs verification, shape inference
 * and the reference interpreter (which checks kernel results against the
 * inferred shapes). Used by the op tests of the index and reduce families. */
#ifndef XCOMP_TESTS_NODE_HARNESS_H
#define XCOMP_TESTS_NODE_HARNESS_H

#include <stdarg.h>

#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/tensor.h"

#define NH_MAX_IO 8

typedef struct node_harness {
  xc_graph_t* g;
  xc_node_t* node;
  int num_inputs, num_outputs;
  xc_tensor_t* runtime[NH_MAX_IO]; /* inputs fed at run time (not owned) */
  int num_runtime;
  xc_tensor_t* out[NH_MAX_IO]; /* results after nh_run */
} node_harness_t;

/* A tensor of `dtype` with the given shape and values (converted from double). */
static inline xc_tensor_t* nh_tensor(xc_dtype_t dtype, int rank, const int64_t* dims,
                                     const double* values) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dtype, rank, dims, &t);
  if (s) {
    fprintf(stderr, "nh_tensor: %s\n", xc_status_message(s));
    xc_status_free(s);
    exit(2);
  }
  for (int64_t i = 0; i < t->numel && values; i++) xc_tensor_set_f64(t, i, values[i]);
  return t;
}

static inline xc_tensor_t* nh_i64(int rank, const int64_t* dims, const int64_t* values) {
  xc_tensor_t* t = nh_tensor(XC_I64, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, values[i]);
  return t;
}

/* Starts a graph with node `op`. inputs[i] NULL = omitted; constant[i] makes
 * input i an initializer (the harness takes ownership of every input). */
static inline xc_status_t nh_begin(node_harness_t* h, const char* op, int nin,
                                   xc_tensor_t* const* inputs, const bool* constant, int nout) {
  memset(h, 0, sizeof *h);
  XC_RETURN_IF_ERROR(xc_graph_create("t", &h->g));
  xc_value_t* ins[NH_MAX_IO] = {NULL};
  xc_value_t* outs[NH_MAX_IO] = {NULL};
  xc_status_t s = NULL;
  for (int i = 0; i < nin; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    if (!inputs[i]) continue;
    if (constant && constant[i]) {
      if (!s)
        s = xc_graph_add_initializer(h->g, name, inputs[i], &ins[i]);
      else
        xc_tensor_destroy(inputs[i]);
      continue;
    }
    xc_dim_t dims[XC_MAX_RANK];
    for (int d = 0; d < inputs[i]->rank; d++) dims[d] = xc_dim_const(inputs[i]->dims[d]);
    if (!s) s = xc_graph_add_value(h->g, name, inputs[i]->dtype, inputs[i]->rank, dims, &ins[i]);
    if (!s) s = xc_graph_add_input(h->g, ins[i]);
    if (!s)
      s = xc_graph_own_tensor(h->g, inputs[i]);
    else
      xc_tensor_destroy(inputs[i]);
    h->runtime[h->num_runtime++] = inputs[i];
  }
  XC_RETURN_IF_ERROR(s);
  for (int i = 0; i < nout; i++) {
    char name[16];
    snprintf(name, sizeof name, "y%d", i);
    XC_RETURN_IF_ERROR(xc_graph_add_value(h->g, name, XC_DTYPE_UNDEFINED, -1, NULL, &outs[i]));
    XC_RETURN_IF_ERROR(xc_graph_add_output(h->g, outs[i]));
  }
  h->num_inputs = nin;
  h->num_outputs = nout;
  return xc_graph_add_node(h->g, op, "", "n", nin, ins, nout, outs, &h->node);
}

/* Resolves, verifies and infers the graph. */
static inline xc_status_t nh_infer(node_harness_t* h) {
  XC_RETURN_IF_ERROR(xc_graph_resolve_ops(h->g));
  XC_RETURN_IF_ERROR(xc_graph_verify(h->g));
  return xc_graph_infer(h->g);
}

/* Infers and runs; results in h->out. */
static inline xc_status_t nh_run(node_harness_t* h) {
  XC_RETURN_IF_ERROR(nh_infer(h));
  return xc_interp_run(h->g, NULL, h->num_runtime, (const xc_tensor_t* const*)h->runtime, h->out);
}

static inline void nh_end(node_harness_t* h) {
  for (int i = 0; i < NH_MAX_IO; i++) xc_tensor_destroy(h->out[i]);
  xc_graph_destroy(h->g);
  memset(h, 0, sizeof *h);
}

/* Checks shape and values (as doubles, within tol) of a result tensor. */
static inline void nh_check_impl(const char* file, int line, const xc_tensor_t* t, int rank,
                                 const int64_t* dims, const double* values, double tol) {
  xc_test_checks++;
  if (!t) {
    xc_test_failures++;
    fprintf(stderr, "%s:%d: no result tensor\n", file, line);
    return;
  }
  bool ok = t->rank == rank;
  for (int d = 0; ok && d < rank; d++) ok = t->dims[d] == dims[d];
  if (!ok) {
    char buf[128];
    xc_test_failures++;
    fprintf(stderr, "%s:%d: result shape %s, expected rank %d\n", file, line,
            xc_tensor_describe(t, buf, sizeof buf), rank);
    return;
  }
  for (int64_t i = 0; i < t->numel; i++) {
    double a = xc_tensor_get_f64(t, i), b = values[i];
    if (!(fabs(a - b) <= tol) && !(isnan(a) && isnan(b)) && !(a == b)) {
      xc_test_failures++;
      fprintf(stderr, "%s:%d: element %lld = %.9g, expected %.9g\n", file, line, (long long)i, a,
              b);
      return;
    }
  }
}
#define NH_CHECK(t, rank, dims, values, tol) \
  nh_check_impl(__FILE__, __LINE__, (t), (rank), (dims), (values), (tol))

#endif
