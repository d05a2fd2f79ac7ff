/* Tests of the shape/data-movement ops: inference (static and symbolic,
 * including known-element propagation through Shape -> Gather -> Unsqueeze
 * -> Concat -> Reshape) and reference kernels, with hand-derived results. */
#include <stdarg.h>

#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/tensor.h"

/* ---- tensor helpers -------------------------------------------------------- */

static xc_tensor_t* mk(xc_dtype_t dt, int rank, const int64_t* dims, const double* vals) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dt, rank, dims, &t);
  if (s) {
    fprintf(stderr, "tensor create: %s\n", xc_status_message(s));
    exit(2);
  }
  for (int64_t i = 0; vals && i < t->numel; i++) xc_tensor_set_f64(t, i, vals[i]);
  return t;
}

/* 1-D i64 tensor. */
static xc_tensor_t* ints(int n, const int64_t* v) {
  int64_t d = n;
  xc_tensor_t* t = mk(XC_I64, 1, &d, NULL);
  for (int i = 0; i < n; i++) xc_tensor_set_i64(t, i, v[i]);
  return t;
}

static xc_tensor_t* scalar_i64(int64_t v) {
  xc_tensor_t* t = mk(XC_I64, 0, NULL, NULL);
  xc_tensor_set_i64(t, 0, v);
  return t;
}

/* f32 tensor with values 0, 1, 2, ... */
static xc_tensor_t* iota(xc_dtype_t dt, int rank, const int64_t* dims) {
  xc_tensor_t* t = mk(dt, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, (double)i);
  return t;
}

#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define F64S(...) ((const double[]){__VA_ARGS__})
#define INTS(...) ints((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), I64S(__VA_ARGS__))

static void check_tensor(int line, const xc_tensor_t* t, xc_dtype_t dt, int rank,
                         const int64_t* dims, const double* vals) {
  xc_test_checks++;
  if (!t) {
    xc_test_failures++;
    fprintf(stderr, "line %d: no tensor\n", line);
    return;
  }
  char buf[128];
  bool ok = t->dtype == dt && t->rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = t->dims[i] == dims[i];
  if (!ok) {
    xc_test_failures++;
    fprintf(stderr, "line %d: got %s, wrong dtype/shape\n", line,
            xc_tensor_describe(t, buf, sizeof buf));
    return;
  }
  for (int64_t i = 0; vals && i < t->numel; i++)
    if (xc_tensor_get_f64(t, i) != vals[i]) {
      xc_test_failures++;
      fprintf(stderr, "line %d: element %lld = %g, expected %g\n", line, (long long)i,
              xc_tensor_get_f64(t, i), vals[i]);
      return;
    }
}
#define CHECK_T(t, dt, rank, dims, vals) check_tensor(__LINE__, (t), (dt), (rank), (dims), (vals))

/* ---- one-node graphs ------------------------------------------------------- */

/* A graph with one node. Inputs marked constant become initializers (so
 * inference sees their values); the others are graph inputs fed at run time. */
typedef struct {
  xc_graph_t* g;
  xc_node_t* n;
  int num_feeds;
  xc_tensor_t* feeds[8];
  int num_out;
  xc_tensor_t* outs[8];
} op_t;

/* inputs[i] NULL = omitted; consts is a string of 'c' (constant) / 'r'
 * (run-time input) per input. Takes ownership of the tensors. */
static op_t op_new(const char* type, int nin, xc_tensor_t* const* inputs, const char* consts,
                   int nout) {
  op_t t;
  memset(&t, 0, sizeof t);
  t.num_out = nout;
  CHECK_OK(xc_graph_create("t", &t.g));
  xc_value_t* in[8] = {NULL};
  xc_value_t* out[8] = {NULL};
  for (int i = 0; i < nin; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    if (!inputs[i]) continue;
    if (consts && consts[i] == 'c') {
      CHECK_OK(xc_graph_add_initializer(t.g, name, inputs[i], &in[i]));
    } else {
      xc_dim_t dims[XC_MAX_RANK];
      for (int d = 0; d < inputs[i]->rank; d++) dims[d] = xc_dim_const(inputs[i]->dims[d]);
      CHECK_OK(xc_graph_add_value(t.g, name, inputs[i]->dtype, inputs[i]->rank, dims, &in[i]));
      CHECK_OK(xc_graph_add_input(t.g, in[i]));
      t.feeds[t.num_feeds++] = inputs[i];
    }
  }
  for (int i = 0; i < nout; i++) {
    char name[16];
    snprintf(name, sizeof name, "out%d", i);
    CHECK_OK(xc_graph_add_value(t.g, name, XC_DTYPE_UNDEFINED, -1, NULL, &out[i]));
    CHECK_OK(xc_graph_add_output(t.g, out[i]));
  }
  CHECK_OK(xc_graph_add_node(t.g, type, "", "n0", nin, in, nout, out, &t.n));
  return t;
}

static xc_status_t op_infer(op_t* t) {
  XC_RETURN_IF_ERROR(xc_graph_resolve_ops(t->g));
  XC_RETURN_IF_ERROR(xc_graph_verify(t->g));
  return xc_graph_infer(t->g);
}

/* Infers and runs; outputs land in t->outs. */
static xc_status_t op_run(op_t* t) {
  XC_RETURN_IF_ERROR(op_infer(t));
  return xc_interp_run(t->g, NULL, t->num_feeds, (const xc_tensor_t* const*)t->feeds, t->outs);
}

static void op_free(op_t* t) {
  for (int i = 0; i < t->num_feeds; i++) xc_tensor_destroy(t->feeds[i]);
  for (int i = 0; i < t->num_out; i++) xc_tensor_destroy(t->outs[i]);
  xc_graph_destroy(t->g);
}

static const char* dims_str(const xc_value_t* v, char* buf, size_t n) {
  return xc_value_describe(v, buf, n);
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------ */

static void test_reshape(void) {
  int64_t d234[3] = {2, 3, 4};
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 3, d234), INTS(0, -1)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 12), v);
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_I8, 3, d234), INTS(-1, 2, 2)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I8, 3, I64S(6, 2, 2), NULL);
    CHECK_NEAR(xc_tensor_get_f64(t.outs[0], 23), 23, 0);
    op_free(&t);
  }
  { /* allowzero: a 0 is a real 0 */
    xc_tensor_t* in[2] = {mk(XC_F32, 2, I64S(0, 3), NULL), INTS(3, 0)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "allowzero", 1));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(3, 0), NULL);
    op_free(&t);
  }
  { /* without allowzero the 0 copies the input dim */
    xc_tensor_t* in[2] = {mk(XC_F32, 2, I64S(0, 3), NULL), INTS(0, 3)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(0, 3), NULL);
    op_free(&t);
  }
  { /* size mismatch caught at inference */
    xc_tensor_t* in[2] = {iota(XC_F32, 3, d234), INTS(5, 5)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "cannot reshape 24 elements into 25");
    op_free(&t);
  }
  { /* ... and at run time when the shape is a run-time input */
    xc_tensor_t* in[2] = {iota(XC_F32, 3, d234), INTS(7, -1)};
    op_t t = op_new("Reshape", 2, in, "rr", 1);
    CHECK_ERR(op_run(&t), "not a multiple of 7");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 3, d234), INTS(-1, -1)};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "more than one -1");
    op_free(&t);
  }
  { /* unknown shape values: rank from the shape's length, fresh dims */
    xc_tensor_t* in[2] = {iota(XC_F32, 3, d234), INTS(4, 6)};
    op_t t = op_new("Reshape", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_EQ_INT(t.n->outputs[0]->rank, 2);
    CHECK(!xc_dim_is_static(t.n->outputs[0]->dims[0]));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(4, 6), NULL);
    op_free(&t);
  }
}

static void test_flatten_squeeze(void) {
  int64_t d[4] = {2, 1, 3, 1};
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Flatten", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", -2));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 3), F64S(0, 1, 2, 3, 4, 5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Flatten", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 0));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(1, 6), NULL);
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 4, d), INTS(-1)};
    op_t t = op_new("Squeeze", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 3, I64S(2, 1, 3), NULL);
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Squeeze", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 3), F64S(0, 1, 2, 3, 4, 5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 4, d), INTS(0)};
    op_t t = op_new("Squeeze", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "cannot squeeze axis 0 of size 2");
    op_free(&t);
  }
  { /* axes are normalized against the output rank */
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 3)), INTS(-1, 1)};
    op_t t = op_new("Unsqueeze", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 4, I64S(2, 1, 3, 1), F64S(0, 1, 2, 3, 4, 5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 3)), INTS(1, -3)};
    op_t t = op_new("Unsqueeze", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "repeated");
    op_free(&t);
  }
}

/* ---- Transpose, Concat, Split ------------------------------------------------ */

static void test_transpose(void) {
  int64_t d[4] = {2, 3, 4, 5};
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 4, I64S(0, 2, 3, 1)));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 4, I64S(2, 4, 5, 3), NULL);
    /* out[a,b,c,e] = in[a,e,b,c] = a*60 + e*20 + b*5 + c */
    int bad = 0;
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 4; b++)
        for (int c = 0; c < 5; c++)
          for (int e = 0; e < 3; e++) {
            int64_t o = ((a * 4 + b) * 5 + c) * 3 + e;
            if (t.outs[0] && xc_tensor_get_f64(t.outs[0], o) != a * 60 + e * 20 + b * 5 + c) bad++;
          }
    CHECK_EQ_INT(bad, 0);
    op_free(&t);
  }
  { /* the last two axes swapped (tiles of 32): a batch of 2 matrices 45 x 70, ragged tiles */
    static const xc_dtype_t types[3] = {XC_U8, XC_F16, XC_F32};
    for (int k = 0; k < 3; k++) {
      xc_tensor_t* in[1] = {iota(types[k], 3, I64S(2, 45, 70))};
      xc_tensor_t* x = NULL;
      CHECK_OK(xc_tensor_clone(in[0], &x));
      op_t t = op_new("Transpose", 1, in, "r", 1);
      CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 3, I64S(0, 2, 1)));
      CHECK_OK(op_run(&t));
      CHECK_T(t.outs[0], types[k], 3, I64S(2, 70, 45), NULL);
      int bad = 0;
      for (int b = 0; b < 2 && x && t.outs[0]; b++)
        for (int c = 0; c < 70; c++)
          for (int r = 0; r < 45; r++)
            if (xc_tensor_get_f64(t.outs[0], (b * 70 + c) * 45 + r) != xc_tensor_get_f64(x, (b * 45 + r) * 70 + c))
              bad++;
      CHECK_EQ_INT(bad, 0);
      xc_tensor_destroy(x);
      op_free(&t);
    }
  }
  { /* element sizes 1, 8 and 8 through the same walk: out[c,a,b] = in[a,b,c] */
    static const xc_dtype_t types[3] = {XC_I8, XC_I64, XC_F64};
    for (int k = 0; k < 3; k++) {
      xc_tensor_t* in[1] = {iota(types[k], 3, I64S(2, 3, 4))};
      op_t t = op_new("Transpose", 1, in, "r", 1);
      CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 3, I64S(2, 0, 1)));
      CHECK_OK(op_run(&t));
      CHECK_T(t.outs[0], types[k], 3, I64S(4, 2, 3), NULL);
      int bad = 0;
      for (int c = 0; c < 4; c++)
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 3; b++)
            if (t.outs[0] && xc_tensor_get_f64(t.outs[0], (c * 2 + a) * 3 + b) != a * 12 + b * 4 + c) bad++;
      CHECK_EQ_INT(bad, 0);
      op_free(&t);
    }
  }
  { /* default perm reverses; f16 bytes are moved untouched */
    xc_tensor_t* x = mk(XC_F16, 2, I64S(2, 3), F64S(1, 2, 3, 4, 5, 6.5));
    xc_tensor_t* in[1] = {x};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F16, 2, I64S(3, 2), F64S(1, 4, 2, 5, 3, 6.5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 4, I64S(0, 1, 1, 2)));
    CHECK_ERR(op_infer(&t), "perm repeats axis 1");
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 3, I64S(0, 1, 2)));
    CHECK_ERR(op_infer(&t), "perm has 3 entries");
    op_free(&t);
  }
}

static void test_concat_split(void) {
  {
    xc_tensor_t* in[3] = {iota(XC_I64, 2, I64S(2, 1)),
                          mk(XC_I64, 2, I64S(2, 2), F64S(10, 11, 12, 13)),
                          mk(XC_I64, 2, I64S(2, 0), NULL)};
    op_t t = op_new("Concat", 3, in, "rrr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", -1));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 2, I64S(2, 3), F64S(0, 10, 11, 1, 12, 13));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 1)), iota(XC_F32, 2, I64S(3, 1))};
    op_t t = op_new("Concat", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 1));
    CHECK_ERR(op_infer(&t), "input 1 has dim 3 at axis 0");
    op_free(&t);
  }
  { /* uneven split: ceil(5/2) = 3, then 2 */
    xc_tensor_t* in[1] = {iota(XC_F32, 1, I64S(5))};
    op_t t = op_new("Split", 1, in, "r", 2);
    CHECK_OK(xc_node_set_int(t.g, t.n, "num_outputs", 2));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(3), F64S(0, 1, 2));
    CHECK_T(t.outs[1], XC_F32, 1, I64S(2), F64S(3, 4));
    op_free(&t);
  }
  { /* explicit sizes along axis -1 of a 2x5 matrix, bool dtype */
    xc_tensor_t* x = mk(XC_BOOL, 2, I64S(2, 5), F64S(1, 0, 0, 1, 1, 0, 1, 1, 0, 0));
    xc_tensor_t* in[2] = {x, INTS(1, 4)};
    op_t t = op_new("Split", 2, in, "rc", 2);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", -1));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_BOOL, 2, I64S(2, 1), F64S(1, 0));
    CHECK_T(t.outs[1], XC_BOOL, 2, I64S(2, 4), F64S(0, 0, 1, 1, 1, 1, 0, 0));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(5)), INTS(1, 3)};
    op_t t = op_new("Split", 2, in, "rc", 2);
    CHECK_ERR(op_infer(&t), "sum to 4, dim is 5");
    op_free(&t);
  }
}

/* ---- Slice, Gather, Expand, Tile --------------------------------------------- */

static void test_slice(void) {
  {
    xc_tensor_t* in[4] = {iota(XC_F32, 1, I64S(10)), INTS(8), INTS(1), NULL};
    xc_tensor_t* all[5] = {in[0], in[1], in[2], NULL, INTS(-3)};
    op_t t = op_new("Slice", 5, all, "rcc-c", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(3), F64S(8, 5, 2));
    op_free(&t);
  }
  { /* full reverse with clamped bounds */
    xc_tensor_t* all[5] = {iota(XC_I32, 1, I64S(4)), INTS(-1), INTS(INT64_MIN), INTS(0), INTS(-1)};
    op_t t = op_new("Slice", 5, all, "rcccc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I32, 1, I64S(4), F64S(3, 2, 1, 0));
    op_free(&t);
  }
  { /* 2-D, negative axis, ends clamped to the dim, step 2 */
    xc_tensor_t* all[5] = {iota(XC_F32, 2, I64S(2, 5)), INTS(1), INTS(1000), INTS(-1), INTS(2)};
    op_t t = op_new("Slice", 5, all, "rrrrr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 2), F64S(1, 3, 6, 8));
    op_free(&t);
  }
  { /* same with constant bounds: static inference agrees */
    xc_tensor_t* all[5] = {iota(XC_F32, 2, I64S(2, 5)), INTS(1), INTS(1000), INTS(-1), INTS(2)};
    op_t t = op_new("Slice", 5, all, "rcccc", 1);
    CHECK_OK(op_run(&t));
    CHECK(xc_dim_is_static(t.n->outputs[0]->dims[1]) && t.n->outputs[0]->dims[1].value == 2);
    op_free(&t);
  }
  { /* empty result */
    xc_tensor_t* all[3] = {iota(XC_F32, 1, I64S(4)), INTS(3), INTS(1)};
    op_t t = op_new("Slice", 3, all, "rcc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(0), NULL);
    op_free(&t);
  }
  {
    xc_tensor_t* all[5] = {iota(XC_F32, 1, I64S(4)), INTS(0), INTS(3), NULL, INTS(0)};
    op_t t = op_new("Slice", 5, all, "rcc-c", 1);
    CHECK_ERR(op_infer(&t), "step is 0");
    op_free(&t);
  }
}

static void test_gather_expand_tile(void) {
  { /* axis 1 with a negative index */
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 3)), INTS(-1, 0)};
    op_t t = op_new("Gather", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 1));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 2), F64S(2, 0, 5, 3));
    op_free(&t);
  }
  { /* scalar index removes the axis */
    xc_tensor_t* in[2] = {iota(XC_U16, 2, I64S(3, 2)), scalar_i64(2)};
    op_t t = op_new("Gather", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_U16, 1, I64S(2), F64S(4, 5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 3)), INTS(3)};
    op_t t = op_new("Gather", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 1));
    CHECK_ERR(op_run(&t), "index 3 out of range");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 3)), INTS(-3)};
    op_t t = op_new("Gather", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "index -3 out of range");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {mk(XC_F32, 2, I64S(3, 1), F64S(1, 2, 3)), INTS(2, 1, 2)};
    op_t t = op_new("Expand", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 3, I64S(2, 3, 2), F64S(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {mk(XC_F32, 1, I64S(3), NULL), INTS(2, 4)};
    op_t t = op_new("Expand", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "broadcast");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_I32, 2, I64S(2, 2)), INTS(1, 2)};
    op_t t = op_new("Tile", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I32, 2, I64S(2, 4), F64S(0, 1, 0, 1, 2, 3, 2, 3));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_I32, 2, I64S(2, 2)), INTS(0, 2)};
    op_t t = op_new("Tile", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I32, 2, I64S(0, 4), NULL);
    op_free(&t);
  }
}

/* ---- Pad ------------------------------------------------------------------- */

static void pad_case(int line, const char* mode, xc_tensor_t* pads, bool with_value,
                     int64_t out_len, const double* expect) {
  xc_tensor_t* all[3] = {mk(XC_F32, 1, I64S(3), F64S(1, 2, 3)), pads,
                         with_value ? mk(XC_F32, 0, NULL, F64S(9)) : NULL};
  op_t t = op_new("Pad", 3, all, "rcr", 1);
  CHECK_OK(xc_node_set_string(t.g, t.n, "mode", mode));
  CHECK_OK(op_run(&t));
  check_tensor(line, t.outs[0], XC_F32, 1, &out_len, expect);
  op_free(&t);
}

static void test_pad(void) {
  pad_case(__LINE__, "constant", INTS(2, 2), true, 7, F64S(9, 9, 1, 2, 3, 9, 9));
  pad_case(__LINE__, "constant", INTS(1, 0), false, 4, F64S(0, 1, 2, 3));
  pad_case(__LINE__, "reflect", INTS(2, 2), false, 7, F64S(3, 2, 1, 2, 3, 2, 1));
  pad_case(__LINE__, "edge", INTS(2, 2), false, 7, F64S(1, 1, 1, 2, 3, 3, 3));
  pad_case(__LINE__, "wrap", INTS(2, 2), false, 7, F64S(2, 3, 1, 2, 3, 1, 2));
  pad_case(__LINE__, "wrap", INTS(4, 0), false, 7, F64S(3, 1, 2, 3, 1, 2, 3));
  pad_case(__LINE__, "constant", INTS(-1, 1), false, 3, F64S(2, 3, 0)); /* negative crops */
  { /* axes input: pad only the last axis of a 2x2 */
    xc_tensor_t* all[4] = {iota(XC_I64, 2, I64S(2, 2)), INTS(1, 0), NULL, INTS(-1)};
    op_t t = op_new("Pad", 4, all, "rc-c", 1);
    CHECK_OK(xc_node_set_string(t.g, t.n, "mode", "edge"));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 2, I64S(2, 3), F64S(0, 0, 1, 2, 2, 3));
    op_free(&t);
  }
  {
    xc_tensor_t* all[2] = {iota(XC_F32, 2, I64S(2, 2)), INTS(1, 0)};
    op_t t = op_new("Pad", 2, all, "rc", 1);
    CHECK_ERR(op_infer(&t), "'pads' has 2 entries, expected 4");
    op_free(&t);
  }
  {
    xc_tensor_t* all[2] = {iota(XC_F32, 1, I64S(2)), INTS(1, 0)};
    op_t t = op_new("Pad", 2, all, "rc", 1);
    CHECK_OK(xc_node_set_string(t.g, t.n, "mode", "mirror"));
    CHECK_ERR(op_infer(&t), "unknown pad mode 'mirror'");
    op_free(&t);
  }
}

/* ---- Constant, ConstantOfShape, Range, Shape, Size, Identity, Dropout -------- */

static void test_constants(void) {
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_OK(xc_node_set_ints(t.g, t.n, "value_ints", 3, I64S(4, -1, 7)));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 1, I64S(3), F64S(4, -1, 7));
    CHECK_EQ_INT(t.n->outputs[0]->num_elems, 3); /* known to shape inference */
    op_free(&t);
  }
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_OK(xc_node_set_float(t.g, t.n, "value_float", 0.5));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 0, NULL, F64S(0.5));
    op_free(&t);
  }
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_OK(xc_node_set_tensor(t.g, t.n, "value", mk(XC_BF16, 1, I64S(2), F64S(1.5, -2))));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_BF16, 1, I64S(2), F64S(1.5, -2));
    op_free(&t);
  }
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_OK(xc_node_set_string(t.g, t.n, "value_string", "hi"));
    CHECK_ERR(op_infer(&t), "'value_string' is not supported");
    op_free(&t);
  }
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_ERR(op_infer(&t), "sets no value");
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {INTS(2, 3)};
    op_t t = op_new("ConstantOfShape", 1, in, "c", 1);
    CHECK_OK(xc_node_set_tensor(t.g, t.n, "value", mk(XC_I32, 1, I64S(1), F64S(7))));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I32, 2, I64S(2, 3), F64S(7, 7, 7, 7, 7, 7));
    op_free(&t);
  }
  { /* default value: f32 zeros; empty shape gives a scalar */
    xc_tensor_t* in[1] = {ints(0, NULL)};
    op_t t = op_new("ConstantOfShape", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 0, NULL, F64S(0));
    op_free(&t);
  }
  {
    xc_tensor_t* in[3] = {scalar_i64(10), scalar_i64(1), scalar_i64(-3)};
    op_t t = op_new("Range", 3, in, "ccc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 1, I64S(3), F64S(10, 7, 4));
    op_free(&t);
  }
  {
    xc_tensor_t* in[3] = {mk(XC_F32, 0, NULL, F64S(1)), mk(XC_F32, 0, NULL, F64S(2)),
                          mk(XC_F32, 0, NULL, F64S(0.25))};
    op_t t = op_new("Range", 3, in, "rrr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(4), F64S(1, 1.25, 1.5, 1.75));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_F32, 3, I64S(2, 0, 5), NULL)};
    op_t t = op_new("Shape", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "start", -2));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 1, I64S(2), F64S(0, 5));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_F32, 3, I64S(2, 7, 5), NULL)};
    op_t t = op_new("Shape", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "start", 1));
    CHECK_OK(xc_node_set_int(t.g, t.n, "end", -1));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 1, I64S(1), F64S(7));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_U8, 2, I64S(3, 4), NULL)};
    op_t t = op_new("Size", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 0, NULL, F64S(12));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_F64, 1, I64S(2), F64S(-1.5, 3))};
    op_t t = op_new("Identity", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F64, 1, I64S(2), F64S(-1.5, 3));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {mk(XC_F32, 1, I64S(3), F64S(1, 2, 3)), mk(XC_F32, 0, NULL, F64S(0.7))};
    op_t t = op_new("Dropout", 2, in, "rr", 2);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(3), F64S(1, 2, 3));
    CHECK_T(t.outs[1], XC_BOOL, 1, I64S(3), F64S(1, 1, 1));
    op_free(&t);
  }
}

/* ---- DepthToSpace, SpaceToDepth, Trilu, OneHot, NonZero, EyeLike, ... ------- */

static void test_rearrange(void) {
  int64_t d[4] = {1, 8, 1, 1};
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("DepthToSpace", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "blocksize", 2));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 4, I64S(1, 2, 2, 2), F64S(0, 2, 4, 6, 1, 3, 5, 7));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, d)};
    op_t t = op_new("DepthToSpace", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "blocksize", 2));
    CHECK_OK(xc_node_set_string(t.g, t.n, "mode", "CRD"));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 4, I64S(1, 2, 2, 2), F64S(0, 1, 2, 3, 4, 5, 6, 7));
    op_free(&t);
  }
  { /* SpaceToDepth undoes DCR DepthToSpace */
    xc_tensor_t* in[1] = {mk(XC_F32, 4, I64S(1, 2, 2, 2), F64S(0, 2, 4, 6, 1, 3, 5, 7))};
    op_t t = op_new("SpaceToDepth", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "blocksize", 2));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 4, d, F64S(0, 1, 2, 3, 4, 5, 6, 7));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, I64S(1, 6, 1, 1))};
    op_t t = op_new("DepthToSpace", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "blocksize", 2));
    CHECK_ERR(op_infer(&t), "not divisible");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {mk(XC_F32, 2, I64S(3, 3), F64S(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                          scalar_i64(1)};
    op_t t = op_new("Trilu", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(3, 3), F64S(0, 2, 3, 0, 0, 6, 0, 0, 0));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {mk(XC_I64, 2, I64S(3, 3), F64S(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                          scalar_i64(-1)};
    op_t t = op_new("Trilu", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "upper", 0));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 2, I64S(3, 3), F64S(0, 0, 0, 4, 0, 0, 7, 8, 0));
    op_free(&t);
  }
  {
    xc_tensor_t* in[3] = {INTS(0, 2, -1, 5), scalar_i64(3), mk(XC_F32, 1, I64S(2), F64S(0, 1))};
    op_t t = op_new("OneHot", 3, in, "rcr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(4, 3), F64S(1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0));
    op_free(&t);
  }
  { /* axis 0, run-time depth, i32 values */
    xc_tensor_t* in[3] = {INTS(1, 0), mk(XC_F32, 0, NULL, F64S(2)),
                          mk(XC_I32, 1, I64S(2), F64S(-1, 5))};
    op_t t = op_new("OneHot", 3, in, "rrr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 0));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I32, 2, I64S(2, 2), F64S(-1, 5, 5, -1));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_F32, 2, I64S(2, 2), F64S(1, 0, 0, 3))};
    op_t t = op_new("NonZero", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I64, 2, I64S(2, 2), F64S(0, 1, 0, 1));
    CHECK(!xc_dim_is_static(t.n->outputs[0]->dims[1]));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_I8, 2, I64S(2, 3), NULL)};
    op_t t = op_new("EyeLike", 1, in, "r", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "k", 1));
    CHECK_OK(xc_node_set_int(t.g, t.n, "dtype", 1)); /* ONNX FLOAT */
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(2, 3), F64S(0, 1, 0, 0, 0, 1));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(3, 2)), mk(XC_BOOL, 1, I64S(2), F64S(0, 1))};
    op_t t = op_new("Compress", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "axis", 0));
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(1, 2), F64S(2, 3));
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 2)), mk(XC_BOOL, 1, I64S(4), F64S(1, 0, 0, 1))};
    op_t t = op_new("Compress", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(2), F64S(0, 3));
    op_free(&t);
  }
  { /* time axis 0, batch axis 1: x[t][b] = 10*t + b */
    xc_tensor_t* x = mk(XC_F32, 2, I64S(3, 2), F64S(0, 1, 10, 11, 20, 21));
    xc_tensor_t* in[2] = {x, INTS(3, 2)};
    op_t t = op_new("ReverseSequence", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(3, 2), F64S(20, 11, 10, 1, 0, 21));
    op_free(&t);
  }
  { /* crop 5 -> 3 starting at 1; pad 2 -> 4 with data at 1 */
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(5, 2)), INTS(3, 4)};
    op_t t = op_new("CenterCropPad", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(3, 4), F64S(0, 2, 3, 0, 0, 4, 5, 0, 0, 6, 7, 0));
    op_free(&t);
  }
}

/* Absurd sizes and malformed inputs fail cleanly; empty tensors work. */
static void test_bad_and_empty(void) {
  {
    xc_tensor_t* in[3] = {scalar_i64(0), scalar_i64(INT64_C(1) << 60), scalar_i64(1)};
    op_t t = op_new("Range", 3, in, "rrr", 1);
    CHECK_ERR(op_run(&t), "too large");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(2)), INTS(INT64_MAX)};
    op_t t = op_new("Tile", 2, in, "rr", 1);
    CHECK_ERR(op_run(&t), "bad repeat");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(2)), INTS(INT64_C(1) << 40, INT64_C(1) << 40, 2)};
    op_t t = op_new("Expand", 2, in, "rr", 1);
    CHECK_ERR(op_run(&t), "overflow");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(2)), INTS(INT64_MAX, INT64_MAX)};
    op_t t = op_new("Pad", 2, in, "rr", 1);
    CHECK_ERR(op_run(&t), "padding makes axis 0 negative");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(0)), INTS(1, 1)};
    op_t t = op_new("Pad", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_string(t.g, t.n, "mode", "reflect"));
    CHECK_ERR(op_run(&t), "cannot reflect-pad empty axis 0");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(0)), INTS(1, 2)};
    op_t t = op_new("Pad", 2, in, "rc", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 1, I64S(3), F64S(0, 0, 0));
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {mk(XC_I16, 3, I64S(2, 0, 3), NULL)};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_I16, 3, I64S(3, 0, 2), NULL);
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(3, 2)), ints(0, NULL)};
    op_t t = op_new("Gather", 2, in, "rr", 1);
    CHECK_OK(op_run(&t));
    CHECK_T(t.outs[0], XC_F32, 2, I64S(0, 2), NULL);
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 1, I64S(3)), mk(XC_F32, 1, I64S(2), F64S(1, 2))};
    op_t t = op_new("Gather", 2, in, "rr", 1);
    CHECK_ERR(op_infer(&t), "unsupported dtype f32");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 2)), ints(3, I64S(1, 2, 3))};
    op_t t = op_new("Reshape", 2, in, "rr", 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "allowzero", 0));
    CHECK_ERR(op_run(&t), "cannot reshape 4 elements into 6");
    op_free(&t);
  }
  {
    xc_tensor_t* in[2] = {iota(XC_F32, 2, I64S(2, 2)), mk(XC_I64, 2, I64S(1, 2), F64S(4, 1))};
    op_t t = op_new("Reshape", 2, in, "rc", 1);
    CHECK_ERR(op_infer(&t), "'shape' must be 1-D");
    op_free(&t);
  }
  {
    xc_tensor_t* in[3] = {iota(XC_F32, 1, I64S(4)), INTS(0, 1), INTS(2)};
    op_t t = op_new("Slice", 3, in, "rcc", 1);
    CHECK_ERR(op_infer(&t), "starts and ends differ in length");
    op_free(&t);
  }
  {
    op_t t = op_new("Constant", 0, NULL, NULL, 1);
    CHECK_OK(xc_node_set_int(t.g, t.n, "value_int", 3));
    CHECK_OK(xc_node_set_float(t.g, t.n, "value_float", 3));
    CHECK_ERR(op_infer(&t), "sets both");
    op_free(&t);
  }
  {
    xc_tensor_t* in[1] = {iota(XC_F32, 4, I64S(1, 2, 3, 4))};
    op_t t = op_new("Transpose", 1, in, "r", 1);
    CHECK_OK(xc_node_set_ints(t.g, t.n, "perm", 4, I64S(0, 1, 2, 4)));
    CHECK_ERR(op_infer(&t), "axis 4 out of range");
    op_free(&t);
  }
}

/* ---- symbolic shapes ---------------------------------------------------- */

static xc_value_t* add_const(xc_graph_t* g, const char* name, xc_tensor_t* t) {
  xc_value_t* v = NULL;
  CHECK_OK(xc_graph_add_initializer(g, name, t, &v));
  return v;
}

static xc_value_t* add_node(xc_graph_t* g, const char* op, int nin, xc_value_t* const* in,
                            const char* out_name, xc_node_t** out_node) {
  xc_value_t* out = NULL;
  xc_node_t* n = NULL;
  CHECK_OK(xc_graph_add_value(g, out_name, XC_DTYPE_UNDEFINED, -1, NULL, &out));
  CHECK_OK(xc_graph_add_node(g, op, "", out_name, nin, in, 1, &out, &n));
  if (out_node) *out_node = n;
  return out;
}

static int64_t eval_dim(xc_dim_t d, int64_t batch, int64_t seq) {
  xc_symbind_t b;
  xc_symbind_init(&b);
  CHECK_OK(xc_symbind_set(&b, "batch", batch));
  CHECK_OK(xc_symbind_set(&b, "seq", seq));
  int64_t v = -1;
  CHECK_OK(xc_dim_eval(d, &b, &v));
  xc_symbind_free(&b);
  return v;
}

/* x: f32[batch, seq, 64] -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1, 16])
 * -> Reshape(x, .) gives [batch, seq*4, 16]. */
static void test_symbolic_reshape_chain(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("chain", &g));
  xc_dim_t xd[3] = {xc_dim_var(g, "batch"), xc_dim_var(g, "seq"), xc_dim_const(64)};
  xc_value_t* x;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 3, xd, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  xc_value_t* shape = add_node(g, "Shape", 1, &x, "shape", NULL);
  xc_value_t* gin[2] = {shape, add_const(g, "zero", scalar_i64(0))};
  xc_value_t* b = add_node(g, "Gather", 2, gin, "b", NULL);
  xc_value_t* uin[2] = {b, add_const(g, "axes0", INTS(0))};
  xc_value_t* b1 = add_node(g, "Unsqueeze", 2, uin, "b1", NULL);
  xc_value_t* cin[2] = {b1, add_const(g, "tail", INTS(-1, 16))};
  xc_node_t* concat;
  xc_value_t* target = add_node(g, "Concat", 2, cin, "target", &concat);
  CHECK_OK(xc_node_set_int(g, concat, "axis", 0));
  xc_value_t* rin[2] = {x, target};
  xc_value_t* y = add_node(g, "Reshape", 2, rin, "y", NULL);
  CHECK_OK(xc_graph_add_output(g, y));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));

  char buf[256];
  CHECK_EQ_INT(target->num_elems, 3);
  CHECK_STR(dims_str(y, buf, sizeof buf), "f32[batch,seq*4,16]");
  CHECK_EQ_INT(y->rank, 3);
  if (y->rank == 3) {
    CHECK_EQ_INT(eval_dim(y->dims[0], 2, 3), 2);
    CHECK_EQ_INT(eval_dim(y->dims[1], 2, 3), 12);
    CHECK_EQ_INT(eval_dim(y->dims[2], 2, 3), 16);
  }

  xc_tensor_t* in = iota(XC_F32, 3, I64S(2, 3, 64));
  xc_tensor_t* out = NULL;
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const*)&in, &out));
  CHECK_T(out, XC_F32, 3, I64S(2, 12, 16), NULL);
  if (out) CHECK_NEAR(xc_tensor_get_f64(out, 383), 383, 0);
  xc_tensor_destroy(out);
  xc_tensor_destroy(in);
  xc_graph_destroy(g);
}

/* Reshape's -1 cancels common factors, and falls back to floordiv when the
 * constants do not divide. */
static void test_symbolic_reshape_minus_one(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("m1", &g));
  xc_dim_t xd[3] = {xc_dim_var(g, "batch"), xc_dim_var(g, "seq"), xc_dim_const(64)};
  xc_dim_t yd[2] = {xc_dim_var(g, "batch"), xc_dim_const(6)};
  xc_value_t *x, *y;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 3, xd, &x));
  CHECK_OK(xc_graph_add_value(g, "y", XC_F32, 2, yd, &y));
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_input(g, y));
  xc_value_t* shape = add_node(g, "Shape", 1, &x, "shape", NULL);
  xc_value_t* sin[3] = {shape, add_const(g, "s0", INTS(0)), add_const(g, "e2", INTS(2))};
  xc_value_t* lead = add_node(g, "Slice", 3, sin, "lead", NULL);
  xc_value_t* cin[2] = {lead, add_const(g, "m1", INTS(-1))};
  xc_node_t* cn;
  xc_value_t* t1 = add_node(g, "Concat", 2, cin, "t1", &cn);
  CHECK_OK(xc_node_set_int(g, cn, "axis", 0));
  xc_value_t* r1in[2] = {x, t1};
  xc_value_t* r1 = add_node(g, "Reshape", 2, r1in, "r1", NULL);
  xc_value_t* r2in[2] = {x, add_const(g, "t2", INTS(4, -1))};
  xc_value_t* r2 = add_node(g, "Reshape", 2, r2in, "r2", NULL);
  xc_value_t* r3in[2] = {y, add_const(g, "t3", INTS(4, -1))};
  xc_value_t* r3 = add_node(g, "Reshape", 2, r3in, "r3", NULL);
  xc_value_t* outs[3] = {r1, r2, r3};
  for (int i = 0; i < 3; i++) CHECK_OK(xc_graph_add_output(g, outs[i]));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[256];
  CHECK_STR(dims_str(r1, buf, sizeof buf), "f32[batch,seq,64]");
  CHECK_STR(dims_str(r2, buf, sizeof buf), "f32[4,batch*seq*16]");
  CHECK_EQ_INT(eval_dim(r3->dims[1], 2, 1), 3);
  CHECK_EQ_INT(eval_dim(r2->dims[1], 2, 3), 96);
  xc_tensor_t* in[2] = {iota(XC_F32, 3, I64S(2, 3, 64)), iota(XC_F32, 2, I64S(2, 6))};
  xc_tensor_t* res[3] = {NULL};
  CHECK_OK(xc_interp_run(g, NULL, 2, (const xc_tensor_t* const*)in, res));
  CHECK_T(res[0], XC_F32, 3, I64S(2, 3, 64), NULL);
  CHECK_T(res[1], XC_F32, 2, I64S(4, 96), NULL);
  CHECK_T(res[2], XC_F32, 2, I64S(4, 3), NULL);
  for (int i = 0; i < 3; i++) xc_tensor_destroy(res[i]);
  for (int i = 0; i < 2; i++) xc_tensor_destroy(in[i]);
  xc_graph_destroy(g);
}

/* Symbolic Slice / Range / Size / Split / Expand / Concat / Pad dims, checked by
 * running with two different bindings. */
static void test_symbolic_misc(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("misc", &g));
  xc_dim_t xd[2] = {xc_dim_var(g, "batch"), xc_dim_var(g, "seq")};
  xc_value_t* x;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 2, xd, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  /* x[:, 1:] and x[:, ::-2] */
  xc_value_t* s1in[4] = {x, add_const(g, "s1", INTS(1)), add_const(g, "e1", INTS(INT64_MAX)),
                         add_const(g, "a1", INTS(1))};
  xc_value_t* tail = add_node(g, "Slice", 4, s1in, "tail", NULL);
  xc_value_t* s2in[5] = {x, add_const(g, "s2", INTS(-1)), add_const(g, "e2", INTS(INT64_MIN)),
                         add_const(g, "a2", INTS(-1)), add_const(g, "st2", INTS(-2))};
  xc_value_t* rev = add_node(g, "Slice", 5, s2in, "rev", NULL);
  /* Range(0, seq, 1) via Shape -> Slice(1:2) -> Squeeze */
  xc_value_t* shape = add_node(g, "Shape", 1, &x, "shape", NULL);
  xc_value_t* sqin[4] = {shape, add_const(g, "s3", INTS(1)), add_const(g, "e3", INTS(2)), NULL};
  xc_value_t* seq1 = add_node(g, "Slice", 3, sqin, "seq1", NULL);
  xc_value_t* sq2[1] = {seq1};
  xc_value_t* seq = add_node(g, "Squeeze", 1, sq2, "seq", NULL);
  xc_value_t* rin[3] = {add_const(g, "r0", scalar_i64(0)), seq, add_const(g, "r1", scalar_i64(1))};
  xc_value_t* range = add_node(g, "Range", 3, rin, "range", NULL);
  xc_value_t* size = add_node(g, "Size", 1, &x, "size", NULL);
  /* Pad seq by (1, 2), Concat x with tail on axis 1, Expand x to [3, batch, seq] */
  xc_value_t* pin[2] = {x, add_const(g, "pads", INTS(0, 1, 0, 2))};
  xc_value_t* padded = add_node(g, "Pad", 2, pin, "padded", NULL);
  xc_value_t* cin[2] = {x, tail};
  xc_node_t* cn;
  xc_value_t* cat = add_node(g, "Concat", 2, cin, "cat", &cn);
  CHECK_OK(xc_node_set_int(g, cn, "axis", 1));
  xc_value_t* three = add_const(g, "three", INTS(3));
  xc_value_t* ecat_in[2] = {three, shape};
  xc_node_t* en;
  xc_value_t* eshape = add_node(g, "Concat", 2, ecat_in, "eshape", &en);
  CHECK_OK(xc_node_set_int(g, en, "axis", 0));
  xc_value_t* ein[2] = {x, eshape};
  xc_value_t* expanded = add_node(g, "Expand", 2, ein, "expanded", NULL);
  xc_node_t* fn;
  xc_value_t* flat = add_node(g, "Flatten", 1, &x, "flat", &fn);
  CHECK_OK(xc_node_set_int(g, fn, "axis", 0));
  xc_value_t* tr = add_node(g, "Transpose", 1, &x, "tr", NULL);
  xc_value_t* tin[2] = {x, add_const(g, "reps", INTS(2, 1))};
  xc_value_t* tiled = add_node(g, "Tile", 2, tin, "tiled", NULL);
  xc_value_t* outs[] = {tail, rev, range, size, padded, cat, expanded, flat, tr, tiled};
  for (int i = 0; i < 10; i++) CHECK_OK(xc_graph_add_output(g, outs[i]));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[256];
  CHECK_STR(dims_str(range, buf, sizeof buf), "i64[seq]");
  CHECK_STR(dims_str(expanded, buf, sizeof buf), "f32[3,batch,seq]");
  CHECK_STR(dims_str(padded, buf, sizeof buf), "f32[batch,seq+3]");
  CHECK_STR(dims_str(flat, buf, sizeof buf), "f32[1,batch*seq]");
  CHECK_STR(dims_str(tr, buf, sizeof buf), "f32[seq,batch]");
  CHECK_STR(dims_str(tiled, buf, sizeof buf), "f32[batch*2,seq]");
  CHECK_EQ_INT(size->num_elems, 1);
  for (int k = 0; k < 2; k++) {
    int64_t B = k ? 1 : 2, S = k ? 6 : 5;
    int64_t tail_len = S - 1, rev_len = (S + 1) / 2;
    CHECK_EQ_INT(eval_dim(tail->dims[1], B, S), tail_len);
    CHECK_EQ_INT(eval_dim(rev->dims[1], B, S), rev_len);
    CHECK_EQ_INT(eval_dim(cat->dims[1], B, S), S + tail_len);
    CHECK_EQ_INT(eval_dim(size->elems[0], B, S), B * S);
    int64_t dims[2] = {B, S};
    xc_tensor_t* in = iota(XC_F32, 2, dims);
    xc_tensor_t* res[10] = {NULL};
    CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const*)&in, res));
    CHECK_T(res[0], XC_F32, 2, I64S(B, tail_len), NULL);
    CHECK_T(res[1], XC_F32, 2, I64S(B, rev_len), NULL);
    if (res[1]) CHECK_NEAR(xc_tensor_get_f64(res[1], 1), S - 3, 0);
    CHECK_T(res[2], XC_I64, 1, I64S(S), NULL);
    CHECK_T(res[3], XC_I64, 0, NULL, F64S((double)(B * S)));
    CHECK_T(res[4], XC_F32, 2, I64S(B, S + 3), NULL);
    CHECK_T(res[6], XC_F32, 3, I64S(3, B, S), NULL);
    CHECK_T(res[9], XC_F32, 2, I64S(2 * B, S), NULL);
    for (int i = 0; i < 10; i++) xc_tensor_destroy(res[i]);
    xc_tensor_destroy(in);
  }
  xc_graph_destroy(g);
}

/* Unknown data-dependent sizes get fresh symbols; an even Split of a
 * symbolic dim uses ceildiv. */
static void test_symbolic_fresh(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("fresh", &g));
  xc_dim_t xd[1] = {xc_dim_var(g, "n")};
  xc_value_t* x;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 1, xd, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  xc_value_t* nz = add_node(g, "NonZero", 1, &x, "nz", NULL);
  xc_value_t *p0, *p1;
  CHECK_OK(xc_graph_add_value(g, "p0", XC_DTYPE_UNDEFINED, -1, NULL, &p0));
  CHECK_OK(xc_graph_add_value(g, "p1", XC_DTYPE_UNDEFINED, -1, NULL, &p1));
  xc_value_t* parts[2] = {p0, p1};
  xc_node_t* sn;
  CHECK_OK(xc_graph_add_node(g, "Split", "", "split", 1, &x, 2, parts, &sn));
  CHECK_OK(xc_node_set_int(g, sn, "num_outputs", 2));
  CHECK_OK(xc_graph_add_output(g, nz));
  CHECK_OK(xc_graph_add_output(g, p0));
  CHECK_OK(xc_graph_add_output(g, p1));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[256];
  CHECK_STR(dims_str(p0, buf, sizeof buf), "f32[ceildiv(n,2)]");
  CHECK(!xc_dim_is_static(nz->dims[1]));
  xc_tensor_t* in = mk(XC_F32, 1, I64S(5), F64S(0, 1, 0, 2, 3));
  xc_tensor_t* res[3] = {NULL};
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const*)&in, res));
  CHECK_T(res[0], XC_I64, 2, I64S(1, 3), F64S(1, 3, 4));
  CHECK_T(res[1], XC_F32, 1, I64S(3), F64S(0, 1, 0));
  CHECK_T(res[2], XC_F32, 1, I64S(2), F64S(2, 3));
  for (int i = 0; i < 3; i++) xc_tensor_destroy(res[i]);
  xc_tensor_destroy(in);
  xc_graph_destroy(g);
}

int main(void) {
  test_reshape();
  test_flatten_squeeze();
  test_transpose();
  test_concat_split();
  test_slice();
  test_gather_expand_tile();
  test_pad();
  test_constants();
  test_rearrange();
  test_bad_and_empty();
  test_symbolic_reshape_chain();
  test_symbolic_misc();
  test_symbolic_reshape_minus_one();
  test_symbolic_fresh();
  return xc_test_summary("test_ops_shape");
}
