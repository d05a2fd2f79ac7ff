/* Tests of the reduce family: hand-derived results over several and
 * negative axes, keepdims, empty axes (with and without noop), empty
 * tensors and their identities, exact integer accumulation, f16 rounding,
 * symbolic inference and errors. */
#include "node_harness.h"

/* x = 1..12 in shape [2,3,2]. */
static xc_tensor_t* x_2x3x2(void) {
  double v[12];
  for (int i = 0; i < 12; i++) v[i] = i + 1;
  int64_t d[3] = {2, 3, 2};
  return nh_tensor(XC_F32, 3, d, v);
}

static xc_tensor_t* axes(int64_t n, const int64_t* v) {
  int64_t d[1] = {n};
  return nh_i64(1, d, v);
}

/* Runs op on x with constant axes (NULL = omitted) and keepdims. */
static xc_status_t reduce(node_harness_t* h, const char* op, xc_tensor_t* x, xc_tensor_t* ax,
                          int keepdims, int noop) {
  xc_tensor_t* in[2] = {x, ax};
  bool c[2] = {false, true};
  XC_RETURN_IF_ERROR(nh_begin(h, op, ax ? 2 : 1, in, c, 1));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "keepdims", keepdims));
  if (noop) XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "noop_with_empty_axes", 1));
  return nh_run(h);
}

static void test_sum_mean(void) {
  node_harness_t h;
  CHECK_OK(reduce(&h, "ReduceSum", x_2x3x2(), axes(2, (int64_t[]){0, 2}), 1, 0));
  NH_CHECK(h.out[0], 3, ((int64_t[]){1, 3, 1}), ((double[]){18, 26, 34}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceSum", x_2x3x2(), axes(1, (int64_t[]){-1}), 0, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){3, 7, 11, 15, 19, 23}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceMean", x_2x3x2(), axes(1, (int64_t[]){1}), 0, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){3, 4, 9, 10}), 0);
  nh_end(&h);
  /* axes omitted: everything; keepdims 0 gives a scalar. */
  CHECK_OK(reduce(&h, "ReduceSum", x_2x3x2(), NULL, 0, 0));
  NH_CHECK(h.out[0], 0, NULL, ((double[]){78}), 0);
  nh_end(&h);
  /* empty axes without noop: everything, kept as [1,1,1]. */
  CHECK_OK(reduce(&h, "ReduceMean", x_2x3x2(), axes(0, NULL), 1, 0));
  NH_CHECK(h.out[0], 3, ((int64_t[]){1, 1, 1}), ((double[]){6.5}), 0);
  nh_end(&h);
  /* empty axes with noop: identity. */
  CHECK_OK(reduce(&h, "ReduceSum", x_2x3x2(), axes(0, NULL), 0, 1));
  NH_CHECK(h.out[0], 3, ((int64_t[]){2, 3, 2}), ((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
           0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceSum", x_2x3x2(), NULL, 1, 1));
  NH_CHECK(h.out[0], 3, ((int64_t[]){2, 3, 2}), ((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
           0);
  nh_end(&h);
}

static void test_max_min_prod(void) {
  node_harness_t h;
  CHECK_OK(reduce(&h, "ReduceMax", x_2x3x2(), NULL, 0, 0));
  NH_CHECK(h.out[0], 0, NULL, ((double[]){12}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceMin", x_2x3x2(), axes(2, (int64_t[]){-3, 1}), 1, 0));
  NH_CHECK(h.out[0], 3, ((int64_t[]){1, 1, 2}), ((double[]){1, 2}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceMax", x_2x3x2(), axes(1, (int64_t[]){1}), 0, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){5, 6, 11, 12}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceProd", x_2x3x2(), axes(1, (int64_t[]){2}), 0, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){2, 12, 30, 56, 90, 132}), 0);
  nh_end(&h);
  /* NaN propagates through Max. */
  int64_t d3[1] = {3};
  CHECK_OK(reduce(&h, "ReduceMax", nh_tensor(XC_F32, 1, d3, (double[]){1, NAN, 3}), NULL, 0, 0));
  CHECK(h.out[0] && isnan(xc_tensor_get_f64(h.out[0], 0)));
  nh_end(&h);
}

static void test_norms_and_logs(void) {
  node_harness_t h;
  int64_t d[2] = {2, 2};
  double v[4] = {-1, 2, -3, 4};
  CHECK_OK(reduce(&h, "ReduceL1", nh_tensor(XC_F32, 2, d, v), axes(1, (int64_t[]){1}), 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){3, 7}), 0);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceL2", nh_tensor(XC_F64, 2, d, v), axes(1, (int64_t[]){1}), 1, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 1}), ((double[]){sqrt(5.0), 5}), 1e-15);
  nh_end(&h);
  CHECK_OK(
      reduce(&h, "ReduceSumSquare", nh_tensor(XC_F32, 2, d, v), axes(1, (int64_t[]){0}), 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){10, 20}), 0);
  nh_end(&h);
  double p[4] = {1, 2, 3, 4};
  CHECK_OK(reduce(&h, "ReduceLogSum", nh_tensor(XC_F64, 2, d, p), axes(1, (int64_t[]){1}), 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){log(3.0), log(7.0)}), 1e-15);
  nh_end(&h);
  /* Stable: exp(1000) overflows, the result must not. */
  double q[4] = {1000, 1000, 0, log(3.0)};
  CHECK_OK(
      reduce(&h, "ReduceLogSumExp", nh_tensor(XC_F64, 2, d, q), axes(1, (int64_t[]){-1}), 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){1000 + log(2.0), log(4.0)}), 1e-12);
  nh_end(&h);
}

static void test_empty(void) {
  node_harness_t h;
  int64_t d[2] = {2, 0};
  const char* ops[] = {"ReduceSum",       "ReduceProd",   "ReduceMax",       "ReduceMin",
                       "ReduceLogSumExp", "ReduceLogSum", "ReduceSumSquare", "ReduceMean"};
  double want[] = {0, 1, -INFINITY, INFINITY, -INFINITY, -INFINITY, 0, NAN};
  for (int i = 0; i < 8; i++) {
    CHECK_OK(reduce(&h, ops[i], nh_tensor(XC_F32, 2, d, NULL), axes(1, (int64_t[]){1}), 0, 0));
    NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){want[i], want[i]}), 0);
    nh_end(&h);
  }
  /* Reducing the non-empty axis leaves an empty result. */
  CHECK_OK(reduce(&h, "ReduceSum", nh_tensor(XC_F32, 2, d, NULL), axes(1, (int64_t[]){0}), 1, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){1, 0}), NULL, 0);
  nh_end(&h);
  /* Huge dims around a zero: sub-products must not overflow. */
  int64_t big[3] = {INT64_C(1) << 40, 0, INT64_C(1) << 40};
  CHECK_OK(reduce(&h, "ReduceSum", nh_tensor(XC_F32, 3, big, NULL), axes(2, (int64_t[]){0, 2}), 1, 0));
  NH_CHECK(h.out[0], 3, ((int64_t[]){1, 0, 1}), NULL, 0);
  nh_end(&h);
  CHECK_ERR(reduce(&h, "ReduceSum", nh_tensor(XC_F32, 3, big, NULL), axes(1, (int64_t[]){1}), 0, 0),
            "overflow");
  nh_end(&h);
  /* Integer Max over nothing: the lowest value of the type. */
  CHECK_OK(reduce(&h, "ReduceMax", nh_tensor(XC_I32, 2, d, NULL), axes(1, (int64_t[]){1}), 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){INT32_MIN, INT32_MIN}), 0);
  nh_end(&h);
}

static void test_integers_and_halves(void) {
  node_harness_t h;
  /* 2^53 + 1 + 1 is exact in int64 but not through double. */
  int64_t d2[1] = {2};
  CHECK_OK(
      reduce(&h, "ReduceSum", nh_i64(1, d2, (int64_t[]){(INT64_C(1) << 53) + 1, 1}), NULL, 0, 0));
  CHECK(h.out[0] && xc_tensor_get_i64(h.out[0], 0) == (INT64_C(1) << 53) + 2);
  nh_end(&h);
  int64_t d3[1] = {3};
  CHECK_OK(reduce(&h, "ReduceProd", nh_tensor(XC_I32, 1, d3, (double[]){3, -4, 5}), NULL, 0, 0));
  CHECK(h.out[0] && h.out[0]->dtype == XC_I32 && xc_tensor_get_i64(h.out[0], 0) == -60);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceMin", nh_tensor(XC_U8, 1, d3, (double[]){200, 7, 255}), NULL, 0, 0));
  CHECK(h.out[0] && xc_tensor_get_i64(h.out[0], 0) == 7);
  nh_end(&h);
  /* Integer mean truncates: (1+2)/2 = 1. */
  CHECK_OK(reduce(&h, "ReduceMean", nh_tensor(XC_I64, 1, d2, (double[]){1, 2}), NULL, 0, 0));
  CHECK(h.out[0] && xc_tensor_get_i64(h.out[0], 0) == 1);
  nh_end(&h);
  /* Ten f16 0.1s (each 0.0999755859375) sum to 0.999755859375, exactly half
   * way between 0x3bff and 1.0; rounding once gives 1.0 (even). Summing in
   * f16 step by step would not. */
  int64_t d10[1] = {10};
  double tenth[10];
  for (int i = 0; i < 10; i++) tenth[i] = 0.1;
  CHECK_OK(reduce(&h, "ReduceSum", nh_tensor(XC_F16, 1, d10, tenth), NULL, 0, 0));
  CHECK(h.out[0] && h.out[0]->dtype == XC_F16 && *(uint16_t*)h.out[0]->data == 0x3c00);
  nh_end(&h);
  CHECK_OK(reduce(&h, "ReduceMean", nh_tensor(XC_BF16, 1, d2, (double[]){1, 2}), NULL, 0, 0));
  NH_CHECK(h.out[0], 0, NULL, ((double[]){1.5}), 0);
  nh_end(&h);
}

static void test_errors(void) {
  node_harness_t h;
  CHECK_ERR(reduce(&h, "ReduceSum", x_2x3x2(), axes(1, (int64_t[]){3}), 1, 0), "out of range");
  nh_end(&h);
  CHECK_ERR(reduce(&h, "ReduceSum", x_2x3x2(), axes(2, (int64_t[]){1, -2}), 1, 0), "repeated");
  nh_end(&h);
  int64_t d[1] = {2};
  CHECK_ERR(reduce(&h, "ReduceSum", nh_tensor(XC_BOOL, 1, d, NULL), NULL, 1, 0), "dtype");
  nh_end(&h);
  /* Axes fed at run time: the kernel rejects a bad axis cleanly. */
  xc_tensor_t* in[2] = {x_2x3x2(), axes(1, (int64_t[]){-4})};
  CHECK_OK(nh_begin(&h, "ReduceSum", 2, in, NULL, 1));
  CHECK_ERR(nh_run(&h), "out of range");
  nh_end(&h);
}

static void test_symbolic(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("s", &g));
  xc_dim_t dims[3] = {xc_dim_var(g, "N"), xc_dim_const(3), xc_dim_var(g, "S")};
  xc_value_t *x, *ax, *y1, *y2, *y3;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 3, dims, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_initializer(g, "axes", axes(1, (int64_t[]){1}), &ax));
  CHECK_OK(xc_graph_add_value(g, "y1", XC_DTYPE_UNDEFINED, -1, NULL, &y1));
  CHECK_OK(xc_graph_add_value(g, "y2", XC_DTYPE_UNDEFINED, -1, NULL, &y2));
  CHECK_OK(xc_graph_add_value(g, "y3", XC_DTYPE_UNDEFINED, -1, NULL, &y3));
  xc_node_t *n1, *n2, *n3;
  CHECK_OK(xc_graph_add_node(g, "ReduceSum", "", "a", 2, (xc_value_t*[]){x, ax}, 1, &y1, &n1));
  CHECK_OK(xc_node_set_int(g, n1, "keepdims", 0));
  CHECK_OK(xc_graph_add_node(g, "ReduceMax", "", "b", 2, (xc_value_t*[]){x, ax}, 1, &y2, &n2));
  /* Runtime axes of static length 2 without keepdims: rank 1, fresh dim. */
  xc_value_t* rax;
  CHECK_OK(xc_graph_add_value(g, "rax", XC_I64, 1, (xc_dim_t[]){xc_dim_const(2)}, &rax));
  CHECK_OK(xc_graph_add_input(g, rax));
  CHECK_OK(xc_graph_add_node(g, "ReduceMean", "", "c", 2, (xc_value_t*[]){x, rax}, 1, &y3, &n3));
  CHECK_OK(xc_node_set_int(g, n3, "keepdims", 0));
  CHECK_OK(xc_graph_add_output(g, y1));
  CHECK_OK(xc_graph_add_output(g, y2));
  CHECK_OK(xc_graph_add_output(g, y3));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[128];
  CHECK_STR(xc_value_describe(y1, buf, sizeof buf), "f32[N,S]");
  CHECK_STR(xc_value_describe(y2, buf, sizeof buf), "f32[N,1,S]");
  CHECK_EQ_INT(y3->rank, 1);
  CHECK(y3->rank == 1 && y3->dims[0].sym != NULL);
  xc_graph_destroy(g);
}

/* ReduceProd of a known shape vector [N, 3] is the known value N*3, and the
 * interpreter checks the claim against the computed value. */
static void test_known_elems(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("e", &g));
  xc_dim_t nd = xc_dim_var(g, "N");
  xc_value_t *x, *shape, *prod, *mx;
  CHECK_OK(xc_graph_add_value(g, "x", XC_I64, 1, (xc_dim_t[]){xc_dim_const(2)}, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_value(g, "prod", XC_DTYPE_UNDEFINED, -1, NULL, &prod));
  CHECK_OK(xc_graph_add_value(g, "mx", XC_DTYPE_UNDEFINED, -1, NULL, &mx));
  CHECK_OK(xc_graph_add_output(g, prod));
  CHECK_OK(xc_graph_add_output(g, mx));
  xc_node_t *n1, *n2;
  CHECK_OK(xc_graph_add_node(g, "ReduceProd", "", "p", 1, &x, 1, &prod, &n1));
  CHECK_OK(xc_node_set_int(g, n1, "keepdims", 0));
  CHECK_OK(xc_graph_add_node(g, "ReduceMax", "", "m", 1, &x, 1, &mx, &n2));
  /* Claim x holds [N, 3] (as a Shape output would). */
  shape = x;
  CHECK_OK(xc_value_set_elems(g, shape, 2, (xc_dim_t[]){nd, xc_dim_const(3)}));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  CHECK(prod->elems && prod->num_elems == 1 &&
        xc_dim_equal(prod->elems[0], xc_dim_mul(g, nd, xc_dim_const(3))));
  CHECK(mx->elems && mx->num_elems == 1 && mx->rank == 1);
  xc_tensor_t* in = nh_i64(1, (int64_t[]){2}, (int64_t[]){4, 3});
  xc_tensor_t* out[2] = {NULL, NULL};
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const*)&in, out));
  CHECK(out[0] && xc_tensor_get_i64(out[0], 0) == 12);
  CHECK(out[1] && xc_tensor_get_i64(out[1], 0) == 4);
  xc_tensor_destroy(out[0]);
  xc_tensor_destroy(out[1]);
  xc_tensor_destroy(in);
  xc_graph_destroy(g);
}

int main(void) {
  test_known_elems();
  test_sum_mean();
  test_max_min_prod();
  test_norms_and_logs();
  test_empty();
  test_integers_and_halves();
  test_errors();
  test_symbolic();
  return xc_test_summary("test_ops_reduce");
}
