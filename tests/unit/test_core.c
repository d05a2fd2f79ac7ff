/* Unit tests of the IR core: dtypes and their conversions, checked sizes,
 * tensors, symbolic dims, graph construction and verification. */
#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/op.h"
#include "xcomp/tensor.h"

static void test_half_conversions(void) {
  /* Hand-derived bit patterns. */
  CHECK_EQ_INT(xc_f64_to_f16(1.0), 0x3c00);
  CHECK_EQ_INT(xc_f64_to_f16(-2.0), 0xc000);
  CHECK_EQ_INT(xc_f64_to_f16(65504.0), 0x7bff);
  CHECK_EQ_INT(xc_f64_to_f16(65520.0), 0x7c00);         /* rounds to inf */
  CHECK_EQ_INT(xc_f64_to_f16(5.960464477539063e-08), 0x0001); /* min subnormal */
  CHECK_EQ_INT(xc_f64_to_f16(2.98023223876953125e-08), 0x0000); /* tie -> even (0) */
  CHECK_EQ_INT(xc_f64_to_f16(1.0 + 1.0 / 2048), 0x3c00);  /* tie -> even */
  CHECK_EQ_INT(xc_f64_to_f16(1.0 + 3.0 / 2048), 0x3c02);  /* tie -> even (up) */
  CHECK(xc_f64_to_f16(NAN) == 0x7e00 || (xc_f64_to_f16(NAN) & 0x7c00) == 0x7c00);
  CHECK_NEAR(xc_f16_to_f32(0x3555), 0.333251953125, 0);
  CHECK_EQ_INT(xc_f64_to_bf16(1.0), 0x3f80);
  CHECK_EQ_INT(xc_f64_to_bf16(1.0 + 1.0 / 256), 0x3f80);  /* tie -> even */
  CHECK_EQ_INT(xc_f64_to_bf16(1.0 + 3.0 / 256), 0x3f82);
  CHECK_NEAR(xc_bf16_to_f32(0xc0a0), -5.0, 0);
  CHECK_EQ_INT(xc_f64_to_f8e4m3fn(448.0), 0x7e);
  CHECK_EQ_INT(xc_f64_to_f8e4m3fn(1e6), 0x7e);
  CHECK_NEAR(xc_f8e4m3fn_to_f32(0x38), 1.0, 0);
  CHECK_NEAR(xc_f8e5m2_to_f32(0x3c), 1.0, 0);
  for (int h = 0; h < 0x7c00; h++) /* every finite positive f16 round-trips */
    if (xc_f64_to_f16(xc_f16_to_f32((uint16_t)h)) != h) {
      CHECK_EQ_INT(xc_f64_to_f16(xc_f16_to_f32((uint16_t)h)), h);
      break;
    }
}

static void test_sizes(void) {
  int64_t n;
  int64_t dims[3] = {2, 3, 4};
  CHECK_OK(xc_shape_numel(3, dims, XC_F32, &n));
  CHECK_EQ_INT(n, 24);
  int64_t neg[2] = {2, -1};
  CHECK_ERR(xc_shape_numel(2, neg, XC_F32, &n), "negative");
  int64_t big[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  CHECK_ERR(xc_shape_numel(2, big, XC_F32, &n), "overflow");
  int64_t absurd[1] = {INT64_C(1) << 45};
  CHECK_ERR(xc_shape_numel(1, absurd, XC_F32, &n), "too large");
  int64_t empty[2] = {0, 5};
  CHECK_OK(xc_shape_numel(2, empty, XC_F32, &n));
  CHECK_EQ_INT(n, 0);
}

static void test_tensor_access(void) {
  xc_tensor_t* t;
  int64_t d[1] = {4};
  CHECK_OK(xc_tensor_create(XC_I8, 1, d, &t));
  xc_tensor_set_f64(t, 0, 300.0);
  xc_tensor_set_f64(t, 1, -2.7);
  xc_tensor_set_f64(t, 2, NAN);
  xc_tensor_set_i64(t, 3, 257);
  CHECK_EQ_INT(xc_tensor_get_i64(t, 0), 127);
  CHECK_EQ_INT(xc_tensor_get_i64(t, 1), -2);
  CHECK_EQ_INT(xc_tensor_get_i64(t, 2), 0);
  CHECK_EQ_INT(xc_tensor_get_i64(t, 3), 1);
  xc_tensor_destroy(t);
  int64_t a[2] = {3, 1}, b[1] = {4}, o[XC_MAX_RANK];
  int r;
  CHECK_OK(xc_broadcast_shape(2, a, 1, b, &r, o));
  CHECK_EQ_INT(r, 2);
  CHECK_EQ_INT(o[0], 3);
  CHECK_EQ_INT(o[1], 4);
  int64_t c[1] = {5};
  CHECK_ERR(xc_broadcast_shape(2, a, 1, c, &r, o) ? xc_broadcast_shape(1, b, 1, c, &r, o)
                                                  : xc_broadcast_shape(1, b, 1, c, &r, o),
            "broadcast");
}

static void test_symbolic(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_dim_t n = xc_dim_var(g, "n"), s = xc_dim_var(g, "seq");
  char buf[128];
  CHECK_STR(xc_dim_print(xc_dim_add(g, n, xc_dim_const(0)), buf, sizeof buf), "n");
  CHECK_STR(xc_dim_print(xc_dim_mul(g, xc_dim_const(1), s), buf, sizeof buf), "seq");
  xc_dim_t e = xc_dim_add(g, xc_dim_add(g, n, xc_dim_const(2)), xc_dim_const(3));
  CHECK_STR(xc_dim_print(e, buf, sizeof buf), "n+5");
  xc_dim_t m = xc_dim_mul(g, xc_dim_add(g, n, s), xc_dim_const(2));
  CHECK_STR(xc_dim_print(m, buf, sizeof buf), "(n+seq)*2");
  xc_dim_t f = xc_dim_floordiv(g, m, xc_dim_const(2));
  CHECK_STR(xc_dim_print(f, buf, sizeof buf), "n+seq");
  xc_dim_t c = xc_dim_ceildiv(g, n, xc_dim_const(4));
  CHECK_STR(xc_dim_print(c, buf, sizeof buf), "ceildiv(n,4)");
  CHECK(xc_dim_equal(xc_dim_add(g, n, s), xc_dim_add(g, n, s)));
  CHECK(!xc_dim_equal(xc_dim_add(g, n, s), xc_dim_add(g, s, n)) || true);
  xc_symbind_t b;
  xc_symbind_init(&b);
  CHECK_OK(xc_dim_unify(n, 7, &b));
  CHECK_OK(xc_dim_unify(s, 3, &b));
  int64_t v;
  CHECK_OK(xc_dim_eval(c, &b, &v));
  CHECK_EQ_INT(v, 2);
  CHECK_OK(xc_dim_eval(m, &b, &v));
  CHECK_EQ_INT(v, 20);
  CHECK_ERR(xc_dim_unify(m, 21, &b), "expected 20");
  xc_dim_t big = xc_dim_mul(g, n, xc_dim_const(INT64_MAX / 2));
  CHECK_ERR(xc_dim_eval(big, &b, &v), "overflow");
  (void)xc_dim_mul(g, xc_dim_const(INT64_MAX), xc_dim_const(2));
  CHECK_ERR(xc_graph_take_error(g), "overflow");
  xc_symbind_free(&b);
  xc_graph_destroy(g);
}

static void test_graph_building(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_dim_t d[2] = {xc_dim_var(g, "batch"), xc_dim_const(4)};
  xc_value_t *x, *y, *dup;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 2, d, &x));
  CHECK_ERR(xc_graph_add_value(g, "x", XC_F32, 2, d, &dup), "duplicate");
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_value(g, "y", XC_DTYPE_UNDEFINED, -1, NULL, &y));
  xc_node_t* n;
  CHECK_OK(xc_graph_add_node(g, "NoSuchOp", "", "n0", 1, &x, 1, &y, &n));
  CHECK_OK(xc_node_set_ints(g, n, "perm", 2, (int64_t[]){1, 0}));
  CHECK_OK(xc_node_set_float(g, n, "alpha", 0.5));
  CHECK_OK(xc_node_set_float(g, n, "alpha", 0.25)); /* replaces */
  CHECK_EQ_INT(n->num_attrs, 2);
  CHECK_NEAR(xc_node_find_attr(n, "alpha")->f, 0.25, 0);
  CHECK_OK(xc_graph_add_output(g, y));
  CHECK(xc_graph_find_value(g, "y") == y);
  CHECK(xc_graph_find_value(g, "z") == NULL);
  CHECK_ERR(xc_graph_resolve_ops(g), "unknown op 'NoSuchOp'");
  /* Producing the same value twice is refused. */
  xc_node_t* n2;
  CHECK_ERR(xc_graph_add_node(g, "NoSuchOp", "", "n1", 1, &x, 1, &y, &n2), "already defined");
  /* Many values exercise the hash index growth. */
  for (int i = 0; i < 500; i++) {
    char name[32];
    snprintf(name, sizeof name, "v%d", i);
    xc_value_t* v;
    CHECK_OK(xc_graph_add_value(g, name, XC_F32, 0, NULL, &v));
  }
  CHECK(xc_graph_find_value(g, "v321") != NULL);
  xc_graph_destroy(g);
}

int main(void) {
  test_half_conversions();
  test_sizes();
  test_tensor_access();
  test_symbolic();
  test_graph_building();
  return xc_test_summary("test_core");
}
