/* Unit tests of the tolerance checks (conformance/compare.c): NaN and
 * infinity rules, allclose boundaries, ULP distances in f16/bf16/f32/f64,
 * exact integers, relative L2, shape and dtype mismatches. Expected values
 * are hand-derived from the IEEE encodings. */
#include <math.h>

#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/tensor.h"

static xc_tensor_t* make(xc_dtype_t dt, int rank, const int64_t* dims, const double* v) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_tensor_create(dt, rank, dims, &t);
  if (s) {
    fprintf(stderr, "xc_tensor_create: %s\n", xc_status_message(s));
    exit(2);
  }
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, v[i]);
  return t;
}

/* Compares two 1-D tensors of n values; returns the result. */
static xc_compare_result_t cmp1(xc_dtype_t dt, int n, const double* a, const double* e,
                                const xc_tolerance_t* tol) {
  int64_t dims[1] = {n};
  xc_tensor_t* ta = make(dt, 1, dims, a);
  xc_tensor_t* te = make(dt, 1, dims, e);
  xc_compare_result_t r;
  CHECK_OK(xc_compare_tensors(ta, te, tol, &r));
  xc_tensor_destroy(ta);
  xc_tensor_destroy(te);
  return r;
}

static void test_nan_and_inf(void) {
  xc_tolerance_t tol;
  xc_tolerance_onnx(&tol);
  double ref[3] = {1.0, 2.0, 3.0};
  double same[3] = {1.0, 2.0, 3.0};
  xc_compare_result_t r = cmp1(XC_F32, 3, same, ref, &tol);
  CHECK(r.ok);
  CHECK_NEAR(r.max_abs, 0, 0);
  CHECK_NEAR(r.max_ulp, 0, 0);

  /* NaN where the reference has a number fails, whatever the tolerance. */
  double nan_mid[3] = {1.0, NAN, 3.0};
  xc_tolerance_t loose = tol;
  loose.rtol = 1e9;
  loose.atol = 1e9;
  r = cmp1(XC_F32, 3, nan_mid, ref, &loose);
  CHECK(!r.ok);
  CHECK_EQ_INT(r.first_mismatch, 1);
  CHECK_EQ_INT(r.num_mismatches, 1);
  CHECK(strstr(r.reason, "NaN") != NULL);
  CHECK(strstr(r.reason, "[1]") != NULL);
  /* ... also under the per-dtype rule that has no allclose (f16). */
  xc_tolerance_t f16tol;
  xc_tolerance_for_dtype(XC_F16, &f16tol);
  CHECK(!f16tol.check_allclose);
  r = cmp1(XC_F16, 3, nan_mid, ref, &f16tol);
  CHECK(!r.ok);
  /* NaN in both at the same place passes; a number where the reference has
   * NaN fails. */
  double ref_nan[3] = {1.0, NAN, 3.0};
  r = cmp1(XC_F32, 3, nan_mid, ref_nan, &tol);
  CHECK(r.ok);
  r = cmp1(XC_F32, 3, same, ref_nan, &loose);
  CHECK(!r.ok);
  CHECK_EQ_INT(r.first_mismatch, 1);

  /* Infinities: same sign passes, wrong sign fails, inf vs finite fails. */
  double pinf[2] = {INFINITY, -INFINITY};
  double ninf[2] = {-INFINITY, -INFINITY};
  double fin[2] = {3.0e38, -INFINITY};
  r = cmp1(XC_F32, 2, pinf, pinf, &tol);
  CHECK(r.ok);
  r = cmp1(XC_F32, 2, ninf, pinf, &loose);
  CHECK(!r.ok);
  CHECK_EQ_INT(r.first_mismatch, 0);
  CHECK(strstr(r.reason, "wrong sign") != NULL);
  CHECK(isinf(r.max_abs));
  r = cmp1(XC_F32, 2, fin, pinf, &loose);
  CHECK(!r.ok);
  r = cmp1(XC_F32, 2, pinf, fin, &loose);
  CHECK(!r.ok);
}

static void test_allclose_boundaries(void) {
  /* |a - e| <= atol + rtol * |e|, e = reference. With rtol = 2^-10 and
   * e = 1024 the bound is exactly 1: 1025 passes, the next float above fails. */
  xc_tolerance_t tol = {0};
  tol.check_allclose = true;
  tol.rtol = 1.0 / 1024;
  tol.atol = 0;
  double e[1] = {1024.0};
  double a_in[1] = {1025.0};
  double a_out[1] = {1025.0 + 1.0 / 8192}; /* 1 ULP of f32 above 1025 */
  CHECK(cmp1(XC_F32, 1, a_in, e, &tol).ok);
  xc_compare_result_t r = cmp1(XC_F32, 1, a_out, e, &tol);
  CHECK(!r.ok);
  CHECK_NEAR(r.max_abs, 1.0 + 1.0 / 8192, 0);
  /* Relative to the reference, not the actual value: a = 1024, e = 1025 has
   * bound 1025/1024 > 1, so passes; swapped roles above failed. */
  double e2[1] = {1025.0 + 1.0 / 8192};
  double a2[1] = {1024.0};
  CHECK(cmp1(XC_F32, 1, a2, e2, &tol).ok);
  /* atol: e = 0, bound = atol exactly. */
  tol.rtol = 0;
  tol.atol = 0.5;
  double z[1] = {0.0}, half[1] = {0.5}, over[1] = {0.5000000001};
  CHECK(cmp1(XC_F64, 1, half, z, &tol).ok);
  CHECK(!cmp1(XC_F64, 1, over, z, &tol).ok);
  /* ONNX tolerance: rtol 1e-3, atol 1e-7. */
  xc_tolerance_onnx(&tol);
  CHECK_NEAR(tol.rtol, 1e-3, 0);
  CHECK_NEAR(tol.atol, 1e-7, 0);
  double one[1] = {1.0}, near1[1] = {1.0009}, far1[1] = {1.0011};
  CHECK(cmp1(XC_F64, 1, near1, one, &tol).ok);
  CHECK(!cmp1(XC_F64, 1, far1, one, &tol).ok);
}

static void test_ulp(void) {
  /* f32: 1.0 = 0x3f800000; 1 + 2^-23 is the next float. */
  CHECK_EQ_INT(xc_ulp_distance(XC_F32, 1.0, 1.0 + ldexp(1, -23)), 1);
  CHECK_EQ_INT(xc_ulp_distance(XC_F32, 1.0, 1.0 + 3 * ldexp(1, -23)), 3);
  CHECK_EQ_INT(xc_ulp_distance(XC_F32, 1.0, 1.0 - ldexp(1, -24)), 1); /* below 1: 2^-24 apart */
  CHECK_EQ_INT(xc_ulp_distance(XC_F32, 0.0, -0.0), 0);
  CHECK_EQ_INT(xc_ulp_distance(XC_F32, ldexp(1, -149), -ldexp(1, -149)), 2);
  CHECK_EQ_INT(xc_ulp_distance_bits(XC_F32, 0x3f800000u, 0xbf800000u), 2u * 0x3f800000u);
  CHECK(xc_ulp_distance(XC_F32, NAN, 1.0) == UINT64_MAX);
  /* f16: 1.0 = 0x3c00, ulp 2^-10 above 1. */
  CHECK_EQ_INT(xc_ulp_distance(XC_F16, 1.0, 1.0 + ldexp(1, -10)), 1);
  CHECK_EQ_INT(xc_ulp_distance(XC_F16, 1.0, 2.0), 0x4000 - 0x3c00);
  CHECK_EQ_INT(xc_ulp_distance_bits(XC_F16, 0x7bff, 0x7c00), 1); /* max finite -> inf */
  CHECK_EQ_INT(xc_ulp_distance_bits(XC_F16, 0x0001, 0x8001), 2);
  /* bf16: 1.0 = 0x3f80, ulp 2^-7 above 1. */
  CHECK_EQ_INT(xc_ulp_distance(XC_BF16, 1.0, 1.0 + ldexp(1, -7)), 1);
  CHECK_EQ_INT(xc_ulp_distance(XC_BF16, -1.0, 1.0), 2 * 0x3f80);
  /* f64 */
  CHECK_EQ_INT(xc_ulp_distance(XC_F64, 1.0, 1.0 + ldexp(1, -52)), 1);
  /* The tensor comparison reports ULPs in the tensor's dtype: 1.0 vs
   * 1.0 + 2^-9 is 2 ULP in f16 (ulp 2^-10), 2^14 ULP in f32 (ulp 2^-23),
   * and 0 in bf16 (1 + 2^-9 rounds to 1.0 there). */
  xc_tolerance_t tol = {0};
  double a[1] = {1.0 + ldexp(1, -9)}, e[1] = {1.0};
  CHECK_NEAR(cmp1(XC_F16, 1, a, e, &tol).max_ulp, 2, 0);
  CHECK_NEAR(cmp1(XC_BF16, 1, a, e, &tol).max_ulp, 0, 0);
  CHECK_NEAR(cmp1(XC_F32, 1, a, e, &tol).max_ulp, 1 << 14, 0);
}

static void test_integers_and_shapes(void) {
  xc_tolerance_t tol;
  xc_tolerance_onnx(&tol);
  /* 2^62 and 2^62 + 1 are the same double; the comparison must still see them differ. */
  int64_t dims[1] = {2};
  xc_tensor_t* a = NULL;
  xc_tensor_t* e = NULL;
  CHECK_OK(xc_tensor_create(XC_I64, 1, dims, &a));
  CHECK_OK(xc_tensor_create(XC_I64, 1, dims, &e));
  xc_tensor_set_i64(a, 0, 7);
  xc_tensor_set_i64(e, 0, 7);
  xc_tensor_set_i64(a, 1, ((int64_t)1 << 62) + 1);
  xc_tensor_set_i64(e, 1, (int64_t)1 << 62);
  xc_compare_result_t r;
  CHECK_OK(xc_compare_tensors(a, e, &tol, &r));
  CHECK(!r.ok);
  CHECK_EQ_INT(r.first_mismatch, 1);
  CHECK_NEAR(r.max_abs, 1, 0);
  xc_tensor_set_i64(a, 1, (int64_t)1 << 62);
  CHECK_OK(xc_compare_tensors(a, e, &tol, &r));
  CHECK(r.ok);
  /* Integers are exact even with a huge tolerance. */
  xc_tolerance_t loose = tol;
  loose.atol = 100;
  xc_tensor_set_i64(a, 0, 8);
  CHECK_OK(xc_compare_tensors(a, e, &loose, &r));
  CHECK(!r.ok);
  xc_tensor_destroy(a);
  xc_tensor_destroy(e);

  /* Bool exact. */
  double t1[2] = {1, 0}, t2[2] = {1, 1};
  CHECK(!cmp1(XC_BOOL, 2, t1, t2, &loose).ok);
  CHECK(cmp1(XC_BOOL, 2, t1, t1, &loose).ok);

  /* Shape and dtype must match exactly (same element count is not enough). */
  int64_t d23[2] = {2, 3}, d32[2] = {3, 2};
  double v[6] = {1, 2, 3, 4, 5, 6};
  xc_tensor_t* x = make(XC_F32, 2, d23, v);
  xc_tensor_t* y = make(XC_F32, 2, d32, v);
  xc_tensor_t* z = make(XC_F64, 2, d23, v);
  CHECK_OK(xc_compare_tensors(x, y, &tol, &r));
  CHECK(!r.ok);
  CHECK(strstr(r.reason, "shape") != NULL);
  CHECK_OK(xc_compare_tensors(x, z, &tol, &r));
  CHECK(!r.ok);
  CHECK(strstr(r.reason, "dtype") != NULL);
  /* First mismatch index is reported as a multi-index. */
  xc_tensor_t* w = make(XC_F32, 2, d23, v);
  xc_tensor_set_f64(w, 4, 50);
  CHECK_OK(xc_compare_tensors(w, x, &tol, &r));
  CHECK(!r.ok);
  CHECK_EQ_INT(r.first_mismatch, 4);
  CHECK(strstr(r.reason, "[1,1]") != NULL);
  CHECK_NEAR(r.max_abs, 45, 0);
  char buf[64];
  CHECK_STR(xc_format_index(2, d23, 5, buf, sizeof buf), "[1,2]");
  xc_tensor_destroy(x);
  xc_tensor_destroy(y);
  xc_tensor_destroy(z);
  xc_tensor_destroy(w);
  /* Empty tensors agree. */
  int64_t d0[2] = {0, 3};
  xc_tensor_t* e0 = NULL;
  xc_tensor_t* e1 = NULL;
  CHECK_OK(xc_tensor_create(XC_F32, 2, d0, &e0));
  CHECK_OK(xc_tensor_create(XC_F32, 2, d0, &e1));
  CHECK_OK(xc_compare_tensors(e0, e1, &tol, &r));
  CHECK(r.ok);
  xc_tensor_destroy(e0);
  xc_tensor_destroy(e1);
  CHECK_ERR(xc_compare_tensors(NULL, NULL, &tol, &r), "NULL");
}

static void test_rel_l2(void) {
  /* ref [3, 4] has norm 5; actual [3, 4.05] differs by 0.05: rel-L2 0.01. */
  xc_tolerance_t tol = {0};
  tol.check_rel_l2 = true;
  double e[2] = {3, 4}, a[2] = {3, 4.05};
  tol.max_rel_l2 = 0.0101;
  xc_compare_result_t r = cmp1(XC_F64, 2, a, e, &tol);
  CHECK(r.ok);
  CHECK_NEAR(r.rel_l2, 0.01, 1e-12);
  tol.max_rel_l2 = 0.0099;
  r = cmp1(XC_F64, 2, a, e, &tol);
  CHECK(!r.ok);
  CHECK(strstr(r.reason, "relative L2") != NULL);
  /* Per-dtype rule for f32: rel-L2 1e-5 on top of allclose(1e-3, 1e-5). A
   * uniform relative error of 1e-4 passes allclose but fails rel-L2. */
  xc_tolerance_for_dtype(XC_F32, &tol);
  CHECK(tol.check_allclose && tol.check_rel_l2);
  CHECK_NEAR(tol.max_rel_l2, 1e-5, 0);
  double e3[3] = {1, 2, 4}, a3[3] = {1.0001, 2.0002, 4.0004};
  r = cmp1(XC_F32, 3, a3, e3, &tol);
  CHECK(!r.ok);
  CHECK_EQ_INT(r.num_mismatches, 0);
  xc_tolerance_for_dtype(XC_BF16, &tol);
  CHECK_NEAR(tol.max_rel_l2, 1.6e-2, 0);
  xc_tolerance_for_dtype(XC_I32, &tol);
  CHECK(!tol.check_rel_l2);
  /* All-zero reference: zero error passes, any error is infinite rel-L2. */
  xc_tolerance_for_dtype(XC_F16, &tol);
  double z[2] = {0, 0}, nz[2] = {0, 0.001};
  CHECK(cmp1(XC_F16, 2, z, z, &tol).ok);
  CHECK(!cmp1(XC_F16, 2, nz, z, &tol).ok);
}

/* A real model's stored output against the interpreter
 * (xc_tolerance_stored_model): phi-tiny's case, logits of norm ~1 with one
 * near-zero logit 2.31e-5 that the stored side rounds to 2.285e-5 (2.3e-7
 * off, outside ONNX's atol 1e-7 + rtol 1e-3), passes on its rel-L2 of
 * ~1e-7; a 1% error on one large logit (rel-L2 ~5e-3) fails; NaN, integers
 * stay strict. */
static void test_stored_model(void) {
  double e[4] = {0.75, -0.5, 2.30823553e-05, 0.25};
  double a[4] = {0.75, -0.5, 2.28508252e-05, 0.25};
  xc_tolerance_t onnx, tol;
  xc_tolerance_onnx(&onnx);
  CHECK(!cmp1(XC_F32, 4, a, e, &onnx).ok);
  xc_tolerance_stored_model(XC_F32, &tol);
  CHECK(!tol.check_allclose && tol.check_rel_l2);
  CHECK_NEAR(tol.max_rel_l2, 1e-5, 0);
  xc_compare_result_t r = cmp1(XC_F32, 4, a, e, &tol);
  CHECK(r.ok);
  CHECK(r.rel_l2 < 1e-6);
  double wrong[4] = {0.7575, -0.5, 2.30823553e-05, 0.25};
  r = cmp1(XC_F32, 4, wrong, e, &tol);
  CHECK(!r.ok);
  CHECK(strstr(r.reason, "relative L2") != NULL);
  double nan4[4] = {0.75, -0.5, NAN, 0.25};
  CHECK(!cmp1(XC_F32, 4, nan4, e, &tol).ok);
  xc_tolerance_stored_model(XC_F16, &tol);
  CHECK_NEAR(tol.max_rel_l2, 2e-3, 0);
  xc_tolerance_stored_model(XC_I64, &tol);
  double ie[2] = {3, 7}, ia[2] = {3, 8};
  CHECK(!cmp1(XC_I64, 2, ia, ie, &tol).ok);
  CHECK(cmp1(XC_I64, 2, ie, ie, &tol).ok);
}

int main(void) {
  test_nan_and_inf();
  test_allclose_boundaries();
  test_ulp();
  test_integers_and_shapes();
  test_rel_l2();
  test_stored_model();
  return xc_test_summary("test_compare");
}
