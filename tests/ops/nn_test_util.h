/* Helpers for the op tests of the linalg, conv and norm families: build a
 * one-node graph from concrete input tensors, run verification, inference
 * and the interpreter (which checks kernel results against inference). */
#ifndef XCOMP_TESTS_NN_TEST_UTIL_H
#define XCOMP_TESTS_NN_TEST_UTIL_H

#include <stdarg.h>

#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/tensor.h"

#define NT_MAX_IO 8

/* A tensor from a value list (converted into dtype). vals may be NULL. */
static inline xc_tensor_t* nt_tensor(xc_dtype_t dt, int rank, const int64_t* dims,
                                     const double* vals) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dt, rank, dims, &t);
  if (s) {
    fprintf(stderr, "nt_tensor: %s\n", xc_status_message(s));
    xc_status_free(s);
    abort();
  }
  if (vals)
    for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, vals[i]);
  return t;
}

/* Tensor whose element i is f(i) = start + i * step. */
static inline xc_tensor_t* nt_iota(xc_dtype_t dt, int rank, const int64_t* dims, double start,
                                   double step) {
  xc_tensor_t* t = nt_tensor(dt, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, start + (double)i * step);
  return t;
}

typedef struct nt_case {
  xc_graph_t* g;
  xc_node_t* node;
  int num_in, num_out;
  xc_tensor_t* in[NT_MAX_IO];  /* owned; NULL = omitted input */
  xc_tensor_t* out[NT_MAX_IO]; /* results after nt_run */
} nt_case_t;

/* One node `op` whose inputs are typed from `ins` (which the case takes);
 * outputs whose bit is set in omit_mask are omitted. */
static inline void nt_init(nt_case_t* c, const char* op, int num_in, xc_tensor_t* const* ins,
                           int num_out, unsigned omit_mask) {
  memset(c, 0, sizeof *c);
  xc_status_t s = xc_graph_create("t", &c->g);
  if (s) abort();
  c->num_in = num_in;
  c->num_out = num_out;
  xc_value_t* iv[NT_MAX_IO] = {0};
  xc_value_t* ov[NT_MAX_IO] = {0};
  for (int i = 0; i < num_in; i++) {
    c->in[i] = ins[i];
    if (!ins[i]) continue;
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    xc_dim_t d[XC_MAX_RANK];
    for (int k = 0; k < ins[i]->rank; k++) d[k] = xc_dim_const(ins[i]->dims[k]);
    if (xc_graph_add_value(c->g, name, ins[i]->dtype, ins[i]->rank, d, &iv[i]) ||
        xc_graph_add_input(c->g, iv[i]))
      abort();
  }
  for (int i = 0; i < num_out; i++) {
    if (omit_mask & (1u << i)) continue;
    char name[16];
    snprintf(name, sizeof name, "y%d", i);
    if (xc_graph_add_value(c->g, name, XC_DTYPE_UNDEFINED, -1, NULL, &ov[i])) abort();
  }
  if (xc_graph_add_node(c->g, op, "", "n", num_in, iv, num_out, ov, &c->node)) abort();
  for (int i = 0; i < num_out; i++)
    if (ov[i] && xc_graph_add_output(c->g, ov[i])) abort();
}

/* Verifies, infers and runs; on success c->out[i] holds output i. */
static inline xc_status_t nt_run(nt_case_t* c) {
  XC_RETURN_IF_ERROR(xc_graph_resolve_ops(c->g));
  XC_RETURN_IF_ERROR(xc_graph_verify(c->g));
  XC_RETURN_IF_ERROR(xc_graph_infer(c->g));
  const xc_tensor_t* ins[NT_MAX_IO];
  int k = 0;
  for (int i = 0; i < c->num_in; i++)
    if (c->in[i]) ins[k++] = c->in[i];
  xc_tensor_t* outs[NT_MAX_IO] = {0};
  XC_RETURN_IF_ERROR(xc_interp_run(c->g, NULL, k, ins, outs));
  k = 0;
  for (int i = 0; i < c->num_out; i++)
    if (c->node->outputs[i]) c->out[i] = outs[k++];
  return NULL;
}

static inline void nt_free(nt_case_t* c) {
  for (int i = 0; i < NT_MAX_IO; i++) {
    xc_tensor_destroy(c->in[i]);
    xc_tensor_destroy(c->out[i]);
  }
  xc_graph_destroy(c->g);
}

/* Checks a result's shape. */
static inline void nt_check_shape(const char* file, int line, const xc_tensor_t* t, int rank,
                                  const int64_t* dims) {
  xc_test_checks++;
  bool ok = t && t->rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = t->dims[i] == dims[i];
  if (!ok) {
    char b[128];
    xc_test_failures++;
    fprintf(stderr, "%s:%d: shape mismatch: got %s\n", file, line,
            t ? xc_tensor_describe(t, b, sizeof b) : "(null)");
  }
}
#define NT_CHECK_SHAPE(t, rank, ...) \
  nt_check_shape(__FILE__, __LINE__, (t), (rank), (const int64_t[]){__VA_ARGS__})

/* Checks every element against expectations within tol. */
static inline void nt_check_values(const char* file, int line, const xc_tensor_t* t,
                                   const double* want, int64_t n, double tol) {
  xc_test_checks++;
  if (!t || t->numel != n) {
    xc_test_failures++;
    fprintf(stderr, "%s:%d: expected %lld elements, got %lld\n", file, line, (long long)n,
            t ? (long long)t->numel : -1LL);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double v = xc_tensor_get_f64(t, i);
    if (!(fabs(v - want[i]) <= tol) && !(isnan(v) && isnan(want[i])) &&
        !(isinf(v) && v == want[i])) {
      xc_test_failures++;
      fprintf(stderr, "%s:%d: element %lld = %.9g, expected %.9g\n", file, line, (long long)i, v,
              want[i]);
      return;
    }
  }
}
#define NT_CHECK_VALUES(t, tol, ...)                                                           \
  do {                                                                                         \
    const double want_[] = {__VA_ARGS__};                                               \
    nt_check_values(__FILE__, __LINE__, (t), want_, (int64_t)(sizeof want_ / sizeof want_[0]), \
                    (tol));                                                                    \
  } while (0)

/* Inference only, on a graph whose inputs may be symbolic: returns status. */
static inline xc_status_t nt_infer(nt_case_t* c) {
  XC_RETURN_IF_ERROR(xc_graph_resolve_ops(c->g));
  XC_RETURN_IF_ERROR(xc_graph_verify(c->g));
  return xc_graph_infer(c->g);
}

/* Replaces input i's static type by dims given as strings ("n", "3"). */
static inline void nt_symbolic_input(nt_case_t* c, int i, int rank, const char* const* dims) {
  xc_dim_t d[XC_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    char* end;
    long long v = strtoll(dims[k], &end, 10);
    d[k] = *end ? xc_dim_var(c->g, dims[k]) : xc_dim_const(v);
  }
  xc_value_t* v = c->node->inputs[i];
  if (xc_value_set_type(c->g, v, v->dtype, rank, d)) abort();
}

/* Evaluates output i's dim k with the bindings "name=value" pairs. */
static inline int64_t nt_eval_dim(nt_case_t* c, int out_i, int k, int nbind, ...) {
  xc_symbind_t b;
  xc_symbind_init(&b);
  va_list ap;
  va_start(ap, nbind);
  for (int j = 0; j < nbind; j++) {
    const char* name = va_arg(ap, const char*);
    int64_t v = va_arg(ap, int64_t);
    if (xc_symbind_set(&b, name, v)) abort();
  }
  va_end(ap);
  int64_t r = -1;
  xc_value_t* v = c->node->outputs[out_i];
  xc_status_t s =
      (v && k < v->rank) ? xc_dim_eval(v->dims[k], &b, &r) : xc_error(XC_INTERNAL, "no dim");
  if (s) {
    fprintf(stderr, "nt_eval_dim: %s\n", xc_status_message(s));
    xc_status_free(s);
    r = -1;
  }
  xc_symbind_free(&b);
  return r;
}

#endif
