/* Tests of the elementwise op family: broadcasting, integer wraparound and
 * division semantics, NaN handling, rounding into f16/bf16/fp8, Cast rules,
 * bad inputs, and propagation of known element values through shape
 * arithmetic. Expected values are derived by hand in the comments. */
#include "elementwise_test_util.h"

static void test_add_broadcast(void) {
  /* [2,1,3] + [4,1] -> [2,4,3]; a[i,0,k] = 10i + k, b[j,0] = 100j. */
  double av[6], bv[4], want[24];
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 3; k++) av[i * 3 + k] = 10 * i + k;
  for (int j = 0; j < 4; j++) bv[j] = 100 * j;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 3; k++) want[(i * 4 + j) * 3 + k] = 10 * i + k + 100 * j;
  xc_tensor_t* a = TF(XC_F32, 3, DIMS(2, 1, 3), av);
  xc_tensor_t* b = TF(XC_F32, 2, DIMS(4, 1), bv);
  check_tensor_f("add bcast", RUN("Add", NULL, 0, a, b), XC_F32, 3, DIMS(2, 4, 3), want, 0);
  /* Broadcasting is symmetric: b + a gives the same. */
  check_tensor_f("add bcast swapped", RUN("Add", NULL, 0, b, a), XC_F32, 3, DIMS(2, 4, 3), want,
                 0);
  /* Scalar operand. */
  xc_tensor_t* s = TF(XC_F64, 0, NULL, VALS(-1.5));
  xc_tensor_t* v = TF(XC_F64, 1, DIMS(3), VALS(1, 2, 3));
  check_tensor_f("sub scalar", RUN("Sub", NULL, 0, s, v), XC_F64, 1, DIMS(3),
                 VALS(-2.5, -3.5, -4.5), 0);
  check_tensor_f("mul", RUN("Mul", NULL, 0, v, v), XC_F64, 1, DIMS(3), VALS(1, 4, 9), 0);
  check_tensor_f("div", RUN("Div", NULL, 0, v, TF(XC_F64, 1, DIMS(3), VALS(2, 0, -4))), XC_F64, 1,
                 DIMS(3), VALS(0.5, INFINITY, -0.75), 0);
  /* Empty: [0,3] + [3] -> [0,3]. */
  xc_tensor_t* e = TF(XC_F32, 2, DIMS(0, 3), VALS(0));
  check_tensor_f("add empty", RUN("Add", NULL, 0, e, TF(XC_F32, 1, DIMS(3), VALS(1, 2, 3))),
                 XC_F32, 2, DIMS(0, 3), VALS(0), 0);
  release_all();
}

static void test_half_rounding(void) {
  /* f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> even (1.0);
   * 1 + 3*2^-11 is a tie between 1+2^-10 and 1+2^-9 -> even (1+2^-9). */
  xc_tensor_t* one = TF(XC_F16, 1, DIMS(2), VALS(1, 1));
  xc_tensor_t* d = TF(XC_F16, 1, DIMS(2), VALS(0x1p-11, 0x3p-11));
  xc_tensor_t* r = RUN("Add", NULL, 0, one, d);
  CHECK(r && ((uint16_t*)r->data)[0] == 0x3c00);
  CHECK(r && ((uint16_t*)r->data)[1] == 0x3c02);
  /* bf16: 1 + 2^-8 ties to 1.0; 1 + 3*2^-8 ties up to 1 + 2^-6. */
  xc_tensor_t* bone = TF(XC_BF16, 1, DIMS(2), VALS(1, 1));
  xc_tensor_t* bd = TF(XC_BF16, 1, DIMS(2), VALS(0x1p-8, 0x3p-8));
  xc_tensor_t* br = RUN("Add", NULL, 0, bone, bd);
  CHECK(br && ((uint16_t*)br->data)[0] == 0x3f80);
  CHECK(br && ((uint16_t*)br->data)[1] == 0x3f82);
  /* f16 overflow: 60000 + 60000 -> inf. */
  xc_tensor_t* big = TF(XC_F16, 0, NULL, VALS(60000));
  check_tensor_f("f16 overflow", RUN("Add", NULL, 0, big, big), XC_F16, 0, NULL,
                 VALS(INFINITY), 0);
  release_all();
}

static void test_integer_arithmetic(void) {
  /* Two's-complement wraparound. */
  xc_tensor_t* mx = TI(XC_I64, 1, DIMS(2), IVALS(INT64_MAX, INT64_MIN));
  xc_tensor_t* one = TI(XC_I64, 0, NULL, IVALS(1));
  check_tensor_i("i64 add wrap", RUN("Add", NULL, 0, mx, one), XC_I64, 1, DIMS(2),
                 IVALS(INT64_MIN, INT64_MIN + 1));
  check_tensor_i("i64 sub wrap", RUN("Sub", NULL, 0, mx, one), XC_I64, 1, DIMS(2),
                 IVALS(INT64_MAX - 1, INT64_MAX));
  xc_tensor_t* two = TI(XC_I64, 0, NULL, IVALS(2));
  check_tensor_i("i64 mul wrap", RUN("Mul", NULL, 0, mx, two), XC_I64, 1, DIMS(2),
                 IVALS(-2, 0));
  xc_tensor_t* i8 = TI(XC_I8, 1, DIMS(2), IVALS(127, -128));
  xc_tensor_t* i8one = TI(XC_I8, 1, DIMS(2), IVALS(1, -1));
  check_tensor_i("i8 add wrap", RUN("Add", NULL, 0, i8, i8one), XC_I8, 1, DIMS(2),
                 IVALS(-128, 127));
  xc_tensor_t* i32 = TI(XC_I32, 0, NULL, IVALS(65536));
  check_tensor_i("i32 mul wrap", RUN("Mul", NULL, 0, i32, i32), XC_I32, 0, NULL, IVALS(0));
  xc_tensor_t* u64 = TI(XC_U64, 0, NULL, IVALS(-1)); /* 2^64 - 1 */
  xc_tensor_t* u64one = TI(XC_U64, 0, NULL, IVALS(1));
  check_tensor_i("u64 add wrap", RUN("Add", NULL, 0, u64, u64one), XC_U64, 0, NULL, IVALS(0));
  /* Division truncates toward zero. */
  xc_tensor_t* num = TI(XC_I32, 1, DIMS(4), IVALS(7, -7, 7, -7));
  xc_tensor_t* den = TI(XC_I32, 1, DIMS(4), IVALS(2, 2, -2, -2));
  check_tensor_i("i32 div", RUN("Div", NULL, 0, num, den), XC_I32, 1, DIMS(4),
                 IVALS(3, -3, -3, 3));
  xc_tensor_t* minv = TI(XC_I64, 0, NULL, IVALS(INT64_MIN));
  xc_tensor_t* neg1 = TI(XC_I64, 0, NULL, IVALS(-1));
  check_tensor_i("i64 min / -1", RUN("Div", NULL, 0, minv, neg1), XC_I64, 0, NULL,
                 IVALS(INT64_MIN));
  /* u64: (2^64-1) / 2 = 2^63 - 1 (signed division would give 0). */
  xc_tensor_t* u2 = TI(XC_U64, 0, NULL, IVALS(2));
  check_tensor_i("u64 div", RUN("Div", NULL, 0, u64, u2), XC_U64, 0, NULL, IVALS(INT64_MAX));
  xc_tensor_t* zero = TI(XC_I32, 1, DIMS(4), IVALS(1, 1, 0, 1));
  RUN_ERR("division by zero", "Div", NULL, 0, num, zero);
  /* Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's. */
  xc_tensor_t* mnum = TI(XC_I64, 1, DIMS(4), IVALS(5, -5, 5, -5));
  xc_tensor_t* mden = TI(XC_I64, 1, DIMS(4), IVALS(3, 3, -3, -3));
  check_tensor_i("mod", RUN("Mod", NULL, 0, mnum, mden), XC_I64, 1, DIMS(4),
                 IVALS(2, 1, -1, -2));
  test_attr_t fmod1[] = {TA_I("fmod", 1)};
  check_tensor_i("fmod", RUN("Mod", fmod1, 1, mnum, mden), XC_I64, 1, DIMS(4),
                 IVALS(2, -2, 2, -2));
  check_tensor_i("mod min/-1", RUN("Mod", NULL, 0, minv, neg1), XC_I64, 0, NULL, IVALS(0));
  RUN_ERR("division by zero", "Mod", NULL, 0, mnum, TI(XC_I64, 0, NULL, IVALS(0)));
  /* Float Mod: fmod(-5.5, 2) = -1.5; Python-style -5.5 % 2 = 0.5. */
  xc_tensor_t* fnum = TF(XC_F32, 1, DIMS(2), VALS(5.5, -5.5));
  xc_tensor_t* fden = TF(XC_F32, 0, NULL, VALS(2));
  check_tensor_f("float fmod", RUN("Mod", fmod1, 1, fnum, fden), XC_F32, 1, DIMS(2),
                 VALS(1.5, -1.5), 0);
  check_tensor_f("float mod", RUN("Mod", NULL, 0, fnum, fden), XC_F32, 1, DIMS(2),
                 VALS(1.5, 0.5), 0);
  release_all();
}

static void test_pow(void) {
  check_tensor_f("pow f32",
                 RUN("Pow", NULL, 0, TF(XC_F32, 1, DIMS(3), VALS(2, 3, 4)),
                     TF(XC_F32, 1, DIMS(3), VALS(3, 2, 0.5))),
                 XC_F32, 1, DIMS(3), VALS(8, 9, 2), 0);
  /* Integer base, integer exponent: exact, wrapping; 2^63 wraps to INT64_MIN. */
  check_tensor_i("pow i64",
                 RUN("Pow", NULL, 0, TI(XC_I64, 1, DIMS(4), IVALS(3, 2, -1, 2)),
                     TI(XC_I64, 1, DIMS(4), IVALS(4, 63, -3, -1))),
                 XC_I64, 1, DIMS(4), IVALS(81, INT64_MIN, -1, 0));
  /* 3^39 exceeds 2^53: exact integer result (double would round). */
  check_tensor_i("pow exact", RUN("Pow", NULL, 0, TI(XC_I64, 0, NULL, IVALS(3)),
                                  TI(XC_I64, 0, NULL, IVALS(39))),
                 XC_I64, 0, NULL, IVALS(INT64_C(4052555153018976267)));
  /* Integer base, float exponent: result truncated to the base type. */
  check_tensor_i("pow i32^f32", RUN("Pow", NULL, 0, TI(XC_I32, 1, DIMS(2), IVALS(4, 2)),
                                    TF(XC_F32, 1, DIMS(2), VALS(0.5, 1.5))),
                 XC_I32, 1, DIMS(2), IVALS(2, 2));
  /* Float base, integer exponent keeps the base dtype. */
  check_tensor_f("pow f32^i64", RUN("Pow", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(2, 0.5)),
                                    TI(XC_I64, 0, NULL, IVALS(-2))),
                 XC_F32, 1, DIMS(2), VALS(0.25, 4), 0);
  RUN_ERR("negative power", "Pow", NULL, 0, TI(XC_I32, 0, NULL, IVALS(0)),
          TI(XC_I32, 0, NULL, IVALS(-1)));
  RUN_ERR("unsupported dtype", "Pow", NULL, 0, TI(XC_U8, 0, NULL, IVALS(2)),
          TI(XC_U8, 0, NULL, IVALS(2)));
  release_all();
}

static void test_unary(void) {
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(3), VALS(0, 1, 4));
  check_tensor_f("sqrt", RUN("Sqrt", NULL, 0, x), XC_F32, 1, DIMS(3), VALS(0, 1, 2), 0);
  check_tensor_f("recip", RUN("Reciprocal", NULL, 0, x), XC_F32, 1, DIMS(3),
                 VALS(INFINITY, 1, 0.25), 0);
  check_tensor_f("exp", RUN("Exp", NULL, 0, x), XC_F32, 1, DIMS(3),
                 VALS(1, 2.718281828459045, 54.598150033144236), 1e-5);
  check_tensor_f("log", RUN("Log", NULL, 0, x), XC_F32, 1, DIMS(3),
                 VALS(-INFINITY, 0, 1.3862943611198906), 1e-6);
  check_tensor_f("sigmoid", RUN("Sigmoid", NULL, 0, TF(XC_F32, 1, DIMS(3), VALS(0, -1000, 1000))),
                 XC_F32, 1, DIMS(3), VALS(0.5, 0, 1), 0);
  check_tensor_f("tanh", RUN("Tanh", NULL, 0, x), XC_F32, 1, DIMS(3),
                 VALS(0, 0.7615941559557649, 0.999329299739067), 1e-6);
  check_tensor_f("erf", RUN("Erf", NULL, 0, x), XC_F32, 1, DIMS(3),
                 VALS(0, 0.8427007929497149, 0.9999999845827421), 1e-6);
  xc_tensor_t* h = TF(XC_F64, 1, DIMS(2), VALS(0.5, -0.5));
  /* asin(0.5) = pi/6, acos(0.5) = pi/3, atan(1) = pi/4. */
  check_tensor_f("asin", RUN("Asin", NULL, 0, h), XC_F64, 1, DIMS(2),
                 VALS(M_PI / 6, -M_PI / 6), 1e-15);
  check_tensor_f("acos", RUN("Acos", NULL, 0, h), XC_F64, 1, DIMS(2),
                 VALS(M_PI / 3, 2 * M_PI / 3), 1e-15);
  check_tensor_f("atan", RUN("Atan", NULL, 0, TF(XC_F64, 0, NULL, VALS(1))), XC_F64, 0, NULL,
                 VALS(M_PI / 4), 1e-15);
  xc_tensor_t* pi6 = TF(XC_F64, 0, NULL, VALS(M_PI / 6));
  check_tensor_f("sin", RUN("Sin", NULL, 0, pi6), XC_F64, 0, NULL, VALS(0.5), 1e-15);
  check_tensor_f("cos", RUN("Cos", NULL, 0, pi6), XC_F64, 0, NULL, VALS(sqrt(3) / 2), 1e-15);
  check_tensor_f("tan", RUN("Tan", NULL, 0, pi6), XC_F64, 0, NULL, VALS(1 / sqrt(3)), 1e-15);
  /* sinh(ln 2) = 3/4, cosh(ln 2) = 5/4; the inverses give ln 2 back. */
  xc_tensor_t* ln2 = TF(XC_F64, 0, NULL, VALS(M_LN2));
  check_tensor_f("sinh", RUN("Sinh", NULL, 0, ln2), XC_F64, 0, NULL, VALS(0.75), 1e-15);
  check_tensor_f("cosh", RUN("Cosh", NULL, 0, ln2), XC_F64, 0, NULL, VALS(1.25), 1e-15);
  check_tensor_f("asinh", RUN("Asinh", NULL, 0, TF(XC_F64, 0, NULL, VALS(0.75))), XC_F64, 0,
                 NULL, VALS(M_LN2), 1e-15);
  check_tensor_f("acosh", RUN("Acosh", NULL, 0, TF(XC_F64, 0, NULL, VALS(1.25))), XC_F64, 0,
                 NULL, VALS(M_LN2), 1e-15);
  /* atanh(0.6) = 0.5 ln(1.6/0.4) = ln 2. */
  check_tensor_f("atanh", RUN("Atanh", NULL, 0, TF(XC_F64, 0, NULL, VALS(0.6))), XC_F64, 0,
                 NULL, VALS(M_LN2), 1e-15);
  xc_tensor_t* r = TF(XC_F32, 1, DIMS(8), VALS(0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.6));
  check_tensor_f("round", RUN("Round", NULL, 0, r), XC_F32, 1, DIMS(8),
                 VALS(0, 2, 2, -0.0, -2, 2, 3, -3), 0);
  check_tensor_f("floor", RUN("Floor", NULL, 0, r), XC_F32, 1, DIMS(8),
                 VALS(0, 1, 2, -1, -2, 2, 2, -3), 0);
  check_tensor_f("ceil", RUN("Ceil", NULL, 0, r), XC_F32, 1, DIMS(8),
                 VALS(1, 2, 3, -0.0, -1, 3, 3, -2), 0);
  check_tensor_f("sign f", RUN("Sign", NULL, 0, TF(XC_F32, 1, DIMS(3), VALS(-2, 0, 3))), XC_F32,
                 1, DIMS(3), VALS(-1, 0, 1), 0);
  check_tensor_f("abs f", RUN("Abs", NULL, 0, TF(XC_BF16, 1, DIMS(2), VALS(-2.5, 3))), XC_BF16,
                 1, DIMS(2), VALS(2.5, 3), 0);
  check_tensor_f("neg f", RUN("Neg", NULL, 0, TF(XC_F16, 1, DIMS(2), VALS(-2.5, 3))), XC_F16, 1,
                 DIMS(2), VALS(2.5, -3), 0);
  /* Integer unary ops wrap: -(-128) and |-128| stay -128 in i8. */
  xc_tensor_t* i8 = TI(XC_I8, 1, DIMS(3), IVALS(-128, -5, 7));
  check_tensor_i("neg i8", RUN("Neg", NULL, 0, i8), XC_I8, 1, DIMS(3), IVALS(-128, 5, -7));
  check_tensor_i("abs i8", RUN("Abs", NULL, 0, i8), XC_I8, 1, DIMS(3), IVALS(-128, 5, 7));
  check_tensor_i("sign i8", RUN("Sign", NULL, 0, i8), XC_I8, 1, DIMS(3), IVALS(-1, -1, 1));
  check_tensor_i("sign u64", RUN("Sign", NULL, 0, TI(XC_U64, 1, DIMS(2), IVALS(-1, 0))), XC_U64,
                 1, DIMS(2), IVALS(1, 0));
  check_tensor_i("abs u8", RUN("Abs", NULL, 0, TI(XC_U8, 0, NULL, IVALS(200))), XC_U8, 0, NULL,
                 IVALS(200));
  RUN_ERR("unsupported dtype", "Neg", NULL, 0, TI(XC_U8, 0, NULL, IVALS(1)));
  RUN_ERR("unsupported dtype", "Sqrt", NULL, 0, TI(XC_I32, 0, NULL, IVALS(4)));
  release_all();
}

static void test_predicates(void) {
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(5), VALS(1, NAN, INFINITY, -INFINITY, 0));
  check_tensor_i("isnan", RUN("IsNaN", NULL, 0, x), XC_BOOL, 1, DIMS(5), IVALS(0, 1, 0, 0, 0));
  check_tensor_i("isinf", RUN("IsInf", NULL, 0, x), XC_BOOL, 1, DIMS(5), IVALS(0, 0, 1, 1, 0));
  test_attr_t pos_only[] = {TA_I("detect_negative", 0)};
  check_tensor_i("isinf pos", RUN("IsInf", pos_only, 1, x), XC_BOOL, 1, DIMS(5),
                 IVALS(0, 0, 1, 0, 0));
  test_attr_t neg_only[] = {TA_I("detect_positive", 0)};
  check_tensor_i("isinf neg", RUN("IsInf", neg_only, 1, x), XC_BOOL, 1, DIMS(5),
                 IVALS(0, 0, 0, 1, 0));
  /* fp8 e5m2 has infinities: 0x7c = +inf. */
  xc_tensor_t* f8 = TI(XC_U8, 1, DIMS(2), IVALS(0x7c, 0x3c));
  f8->dtype = XC_F8E5M2;
  check_tensor_i("isinf f8", RUN("IsInf", NULL, 0, f8), XC_BOOL, 1, DIMS(2), IVALS(1, 0));
  release_all();
}

static void test_compare_logic(void) {
  xc_tensor_t* a = TF(XC_F32, 1, DIMS(4), VALS(1, 2, NAN, 4));
  xc_tensor_t* b = TF(XC_F32, 0, NULL, VALS(2));
  check_tensor_i("equal", RUN("Equal", NULL, 0, a, b), XC_BOOL, 1, DIMS(4), IVALS(0, 1, 0, 0));
  check_tensor_i("greater", RUN("Greater", NULL, 0, a, b), XC_BOOL, 1, DIMS(4),
                 IVALS(0, 0, 0, 1));
  check_tensor_i("ge", RUN("GreaterOrEqual", NULL, 0, a, b), XC_BOOL, 1, DIMS(4),
                 IVALS(0, 1, 0, 1));
  check_tensor_i("less", RUN("Less", NULL, 0, a, b), XC_BOOL, 1, DIMS(4), IVALS(1, 0, 0, 0));
  check_tensor_i("le", RUN("LessOrEqual", NULL, 0, a, b), XC_BOOL, 1, DIMS(4),
                 IVALS(1, 1, 0, 0));
  /* NaN != NaN. */
  check_tensor_i("nan eq", RUN("Equal", NULL, 0, a, a), XC_BOOL, 1, DIMS(4), IVALS(1, 1, 0, 1));
  /* Unsigned 64-bit compare: 2^64-1 > 1 (a signed compare says -1 < 1). */
  xc_tensor_t* u = TI(XC_U64, 1, DIMS(2), IVALS(-1, 0));
  check_tensor_i("u64 greater", RUN("Greater", NULL, 0, u, TI(XC_U64, 0, NULL, IVALS(1))),
                 XC_BOOL, 1, DIMS(2), IVALS(1, 0));
  /* i64 values beyond 2^53 that a double would merge. */
  xc_tensor_t* big = TI(XC_I64, 0, NULL, IVALS((INT64_C(1) << 53) + 1));
  check_tensor_i("i64 exact eq", RUN("Equal", NULL, 0, big, TI(XC_I64, 0, NULL,
                                                                   IVALS(INT64_C(1) << 53))),
                 XC_BOOL, 0, NULL, IVALS(0));
  /* Equal on bool, broadcast [2,1] vs [2]. */
  xc_tensor_t* p = TI(XC_BOOL, 2, DIMS(2, 1), IVALS(1, 0));
  xc_tensor_t* q = TI(XC_BOOL, 1, DIMS(2), IVALS(1, 0));
  check_tensor_i("equal bool", RUN("Equal", NULL, 0, p, q), XC_BOOL, 2, DIMS(2, 2),
                 IVALS(1, 0, 0, 1));
  check_tensor_i("and", RUN("And", NULL, 0, p, q), XC_BOOL, 2, DIMS(2, 2), IVALS(1, 0, 0, 0));
  check_tensor_i("or", RUN("Or", NULL, 0, p, q), XC_BOOL, 2, DIMS(2, 2), IVALS(1, 1, 1, 0));
  check_tensor_i("xor", RUN("Xor", NULL, 0, p, q), XC_BOOL, 2, DIMS(2, 2), IVALS(0, 1, 1, 0));
  check_tensor_i("not", RUN("Not", NULL, 0, q), XC_BOOL, 1, DIMS(2), IVALS(0, 1));
  RUN_ERR("unsupported dtype", "And", NULL, 0, a, a);
  RUN_ERR("same dtype", "Equal", NULL, 0, a, TI(XC_I32, 0, NULL, IVALS(1)));
  release_all();
}

static void test_bitwise(void) {
  xc_tensor_t* x = TI(XC_U8, 1, DIMS(4), IVALS(255, 16, 1, 3));
  xc_tensor_t* s = TI(XC_U8, 1, DIMS(4), IVALS(1, 2, 9, 0));
  test_attr_t left[] = {TA_S("direction", "LEFT")};
  test_attr_t right[] = {TA_S("direction", "RIGHT")};
  test_attr_t bad[] = {TA_S("direction", "UP")};
  check_tensor_i("shl u8", RUN("BitShift", left, 1, x, s), XC_U8, 1, DIMS(4),
                 IVALS(254, 64, 0, 3));
  check_tensor_i("shr u8", RUN("BitShift", right, 1, x, s), XC_U8, 1, DIMS(4),
                 IVALS(127, 4, 0, 3));
  /* u64: the top bit shifts right as unsigned. */
  xc_tensor_t* top = TI(XC_U64, 0, NULL, IVALS(INT64_MIN));
  check_tensor_i("shr u64", RUN("BitShift", right, 1, top, TI(XC_U64, 0, NULL, IVALS(63))),
                 XC_U64, 0, NULL, IVALS(1));
  check_tensor_i("shl u64 past width",
                 RUN("BitShift", left, 1, top, TI(XC_U64, 0, NULL, IVALS(64))), XC_U64, 0, NULL,
                 IVALS(0));
  RUN_ERR("direction", "BitShift", bad, 1, x, s);
  xc_tensor_t* a = TI(XC_I32, 1, DIMS(2), IVALS(12, -1));
  xc_tensor_t* b = TI(XC_I32, 1, DIMS(2), IVALS(10, 5));
  check_tensor_i("bitand", RUN("BitwiseAnd", NULL, 0, a, b), XC_I32, 1, DIMS(2), IVALS(8, 5));
  check_tensor_i("bitor", RUN("BitwiseOr", NULL, 0, a, b), XC_I32, 1, DIMS(2), IVALS(14, -1));
  check_tensor_i("bitxor", RUN("BitwiseXor", NULL, 0, a, b), XC_I32, 1, DIMS(2), IVALS(6, -6));
  check_tensor_i("bitnot", RUN("BitwiseNot", NULL, 0, a), XC_I32, 1, DIMS(2), IVALS(-13, 0));
  check_tensor_i("bitnot u8", RUN("BitwiseNot", NULL, 0, x), XC_U8, 1, DIMS(4),
                 IVALS(0, 239, 254, 252));
  release_all();
}

static void test_where(void) {
  /* cond [2,1], X [1,3], Y scalar -> [2,3]. */
  xc_tensor_t* c = TI(XC_BOOL, 2, DIMS(2, 1), IVALS(1, 0));
  xc_tensor_t* x = TF(XC_F32, 2, DIMS(1, 3), VALS(1, 2, 3));
  xc_tensor_t* y = TF(XC_F32, 0, NULL, VALS(-1));
  check_tensor_f("where", RUN("Where", NULL, 0, c, x, y), XC_F32, 2, DIMS(2, 3),
                 VALS(1, 2, 3, -1, -1, -1), 0);
  /* Exact copy of i64 beyond 2^53. */
  xc_tensor_t* xi = TI(XC_I64, 0, NULL, IVALS(INT64_MAX));
  xc_tensor_t* yi = TI(XC_I64, 1, DIMS(2), IVALS(7, 8));
  check_tensor_i("where i64", RUN("Where", NULL, 0, c, xi, yi), XC_I64, 2, DIMS(2, 2),
                 IVALS(INT64_MAX, INT64_MAX, 7, 8));
  RUN_ERR("unsupported dtype", "Where", NULL, 0, x, x, y);
  RUN_ERR("same dtype", "Where", NULL, 0, c, x, yi);
  release_all();
}

static void test_variadic(void) {
  xc_tensor_t* a = TF(XC_F32, 1, DIMS(3), VALS(1, NAN, 5));
  xc_tensor_t* b = TF(XC_F32, 2, DIMS(2, 1), VALS(2, 4));
  xc_tensor_t* c = TF(XC_F32, 0, NULL, VALS(3));
  check_tensor_f("max", RUN("Max", NULL, 0, a, b, c), XC_F32, 2, DIMS(2, 3),
                 VALS(3, NAN, 5, 4, NAN, 5), 0);
  check_tensor_f("min", RUN("Min", NULL, 0, a, b, c), XC_F32, 2, DIMS(2, 3),
                 VALS(1, NAN, 2, 1, NAN, 3), 0);
  check_tensor_f("sum", RUN("Sum", NULL, 0, a, b, c), XC_F32, 2, DIMS(2, 3),
                 VALS(6, NAN, 10, 8, NAN, 12), 0);
  check_tensor_f("mean", RUN("Mean", NULL, 0, a, b, c), XC_F32, 2, DIMS(2, 3),
                 VALS(2, NAN, 10.0 / 3, 8.0 / 3, NAN, 4), 1e-6);
  check_tensor_f("max one", RUN("Max", NULL, 0, c), XC_F32, 0, NULL, VALS(3), 0);
  /* Unsigned max: 2^64-1 is the largest. */
  xc_tensor_t* u = TI(XC_U64, 1, DIMS(2), IVALS(-1, 5));
  xc_tensor_t* v = TI(XC_U64, 1, DIMS(2), IVALS(1, 6));
  check_tensor_i("max u64", RUN("Max", NULL, 0, u, v), XC_U64, 1, DIMS(2), IVALS(-1, 6));
  check_tensor_i("min u64", RUN("Min", NULL, 0, u, v), XC_U64, 1, DIMS(2), IVALS(1, 5));
  check_tensor_i("min i8", RUN("Min", NULL, 0, TI(XC_I8, 1, DIMS(2), IVALS(-3, 4)),
                               TI(XC_I8, 1, DIMS(2), IVALS(2, -128))),
                 XC_I8, 1, DIMS(2), IVALS(-3, -128));
  RUN_ERR("broadcast", "Sum", NULL, 0, a, TF(XC_F32, 1, DIMS(2), VALS(1, 2)));
  RUN_ERR("unsupported dtype", "Sum", NULL, 0, u, v);
  release_all();
}

static void test_clip(void) {
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(5), VALS(-3, -1, 0, 2, NAN));
  xc_tensor_t* lo = TF(XC_F32, 0, NULL, VALS(-1));
  xc_tensor_t* hi = TF(XC_F32, 0, NULL, VALS(1));
  check_tensor_f("clip", RUN("Clip", NULL, 0, x, lo, hi), XC_F32, 1, DIMS(5),
                 VALS(-1, -1, 0, 1, NAN), 0);
  check_tensor_f("clip min only", RUN("Clip", NULL, 0, x, lo), XC_F32, 1, DIMS(5),
                 VALS(-1, -1, 0, 2, NAN), 0);
  check_tensor_f("clip max only", RUN("Clip", NULL, 0, x, NULL, hi), XC_F32, 1, DIMS(5),
                 VALS(-3, -1, 0, 1, NAN), 0);
  check_tensor_f("clip none", RUN("Clip", NULL, 0, x), XC_F32, 1, DIMS(5),
                 VALS(-3, -1, 0, 2, NAN), 0);
  /* min > max: every value becomes max. */
  check_tensor_f("clip inverted", RUN("Clip", NULL, 0, x, hi, lo), XC_F32, 1, DIMS(5),
                 VALS(-1, -1, -1, -1, NAN), 0);
  xc_tensor_t* xi = TI(XC_I8, 1, DIMS(3), IVALS(-128, 0, 127));
  check_tensor_i("clip i8", RUN("Clip", NULL, 0, xi, TI(XC_I8, 0, NULL, IVALS(-5)),
                                TI(XC_I8, 0, NULL, IVALS(100))),
                 XC_I8, 1, DIMS(3), IVALS(-5, 0, 100));
  RUN_ERR("scalar", "Clip", NULL, 0, x, TF(XC_F32, 1, DIMS(2), VALS(0, 1)));
  RUN_ERR("same dtype", "Clip", NULL, 0, x, TF(XC_F64, 0, NULL, VALS(0)));
  release_all();
}

static void test_cast(void) {
  test_attr_t to_i32[] = {TA_I("to", 6)};
  xc_tensor_t* f = TF(XC_F32, 1, DIMS(5), VALS(-2.7, 2.7, NAN, 1e10, -1e10));
  check_tensor_i("f32->i32", RUN("Cast", to_i32, 1, f), XC_I32, 1, DIMS(5),
                 IVALS(-2, 2, 0, INT32_MAX, INT32_MIN));
  /* int -> narrower int wraps: 300 -> 44, -129 -> 127. */
  test_attr_t to_i8[] = {TA_I("to", 3)};
  check_tensor_i("i64->i8", RUN("Cast", to_i8, 1, TI(XC_I64, 1, DIMS(2), IVALS(300, -129))),
                 XC_I8, 1, DIMS(2), IVALS(44, 127));
  /* f32 -> f16 ties to even; 65520 rounds to inf. */
  test_attr_t to_f16[] = {TA_I("to", 10)};
  xc_tensor_t* h = RUN("Cast", to_f16, 1,
                       TF(XC_F32, 1, DIMS(3), VALS(1 + 0x1p-11, 1 + 0x3p-11, 65520)));
  CHECK(h && h->dtype == XC_F16 && ((uint16_t*)h->data)[0] == 0x3c00 &&
        ((uint16_t*)h->data)[1] == 0x3c02 && ((uint16_t*)h->data)[2] == 0x7c00);
  test_attr_t to_bf16[] = {TA_I("to", 16)};
  xc_tensor_t* bh = RUN("Cast", to_bf16, 1, TF(XC_F32, 1, DIMS(2), VALS(1 + 0x1p-8, 1 + 0x3p-8)));
  CHECK(bh && ((uint16_t*)bh->data)[0] == 0x3f80 && ((uint16_t*)bh->data)[1] == 0x3f82);
  /* Bool both ways; NaN is true. */
  test_attr_t to_bool[] = {TA_I("to", 9)};
  check_tensor_i("f32->bool", RUN("Cast", to_bool, 1, TF(XC_F32, 1, DIMS(3), VALS(0, -0.5, NAN))),
                 XC_BOOL, 1, DIMS(3), IVALS(0, 1, 1));
  test_attr_t to_f32[] = {TA_I("to", 1)};
  check_tensor_f("bool->f32", RUN("Cast", to_f32, 1, TI(XC_BOOL, 1, DIMS(2), IVALS(1, 0))),
                 XC_F32, 1, DIMS(2), VALS(1, 0), 0);
  /* i64 2^53 + 1 -> f32 rounds once to 2^53; u64 max -> 2^64. */
  check_tensor_f("i64->f32", RUN("Cast", to_f32, 1,
                                 TI(XC_I64, 1, DIMS(2), IVALS((INT64_C(1) << 53) + 1, -3))),
                 XC_F32, 1, DIMS(2), VALS(0x1p53, -3), 0);
  check_tensor_f("u64->f32", RUN("Cast", to_f32, 1, TI(XC_U64, 0, NULL, IVALS(-1))), XC_F32, 0,
                 NULL, VALS(0x1p64), 0);
  test_attr_t to_i64[] = {TA_I("to", 7)};
  check_tensor_i("f64->i64", RUN("Cast", to_i64, 1, TF(XC_F64, 0, NULL, VALS(0x1p62 + 0x1p10))),
                 XC_I64, 0, NULL, IVALS((INT64_C(1) << 62) + 1024));
  /* fp8 e4m3fn: 1000 saturates to 448 (0x7e); without saturation it is NaN
   * (0x7f); 460 rounds to 448 either way. e5m2: 1e6 -> 57344 (0x7b) or inf. */
  test_attr_t to_e4[] = {TA_I("to", 17)};
  test_attr_t to_e4_nosat[] = {TA_I("to", 17), TA_I("saturate", 0)};
  xc_tensor_t* src = TF(XC_F32, 1, DIMS(4), VALS(1000, -1000, 460, 1));
  xc_tensor_t* e4 = RUN("Cast", to_e4, 1, src);
  xc_tensor_t* e4n = RUN("Cast", to_e4_nosat, 2, src);
  CHECK(e4 && e4->dtype == XC_F8E4M3FN);
  CHECK(e4 && ((uint8_t*)e4->data)[0] == 0x7e && ((uint8_t*)e4->data)[1] == 0xfe &&
        ((uint8_t*)e4->data)[2] == 0x7e && ((uint8_t*)e4->data)[3] == 0x38);
  CHECK(e4n && ((uint8_t*)e4n->data)[0] == 0x7f && ((uint8_t*)e4n->data)[1] == 0xff &&
        ((uint8_t*)e4n->data)[2] == 0x7e);
  test_attr_t to_e5[] = {TA_I("to", 19)};
  test_attr_t to_e5_nosat[] = {TA_I("to", 19), TA_I("saturate", 0)};
  xc_tensor_t* s5 = TF(XC_F32, 1, DIMS(2), VALS(1e6, INFINITY));
  xc_tensor_t* e5 = RUN("Cast", to_e5, 1, s5);
  xc_tensor_t* e5n = RUN("Cast", to_e5_nosat, 2, s5);
  CHECK(e5 && ((uint8_t*)e5->data)[0] == 0x7b && ((uint8_t*)e5->data)[1] == 0x7b);
  CHECK(e5n && ((uint8_t*)e5n->data)[0] == 0x7c && ((uint8_t*)e5n->data)[1] == 0x7c);
  /* fp8 back to f32. */
  if (e4) check_tensor_f("e4->f32", RUN("Cast", to_f32, 1, e4), XC_F32, 1, DIMS(4),
                         VALS(448, -448, 448, 1), 0);
  /* CastLike takes the dtype of its second input. */
  check_tensor_i("castlike", RUN("CastLike", NULL, 0, f, TI(XC_I32, 0, NULL, IVALS(0))), XC_I32,
                 1, DIMS(5), IVALS(-2, 2, 0, INT32_MAX, INT32_MIN));
  test_attr_t to_string[] = {TA_I("to", 8)};
  RUN_ERR("unsupported target", "Cast", to_string, 1, f);
  release_all();
}

static void test_bad_inputs(void) {
  xc_tensor_t* a = TF(XC_F32, 2, DIMS(2, 3), VALS(0, 0, 0, 0, 0, 0));
  RUN_ERR("broadcast", "Add", NULL, 0, a, TF(XC_F32, 1, DIMS(4), VALS(0, 0, 0, 0)));
  RUN_ERR("same dtype", "Add", NULL, 0, a, TI(XC_I32, 0, NULL, IVALS(1)));
  RUN_ERR("same dtype", "Mul", NULL, 0, TF(XC_F16, 0, NULL, VALS(1)), TF(XC_F32, 0, NULL, VALS(1)));
  RUN_ERR("unsupported dtype", "Add", NULL, 0, TI(XC_BOOL, 0, NULL, IVALS(1)),
          TI(XC_BOOL, 0, NULL, IVALS(1)));
  RUN_ERR("unsupported dtype", "Not", NULL, 0, a);
  RUN_ERR("unsupported dtype", "BitwiseAnd", NULL, 0, a, a);
  RUN_ERR("unsupported dtype", "BitShift", (test_attr_t[]){TA_S("direction", "LEFT")}, 1,
          TI(XC_I32, 0, NULL, IVALS(1)), TI(XC_I32, 0, NULL, IVALS(1)));
  /* Kernels run without inference (as constant folding may) reject a
   * missing input instead of crashing. */
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_value_t *x, *y;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 0, NULL, &x));
  CHECK_OK(xc_graph_add_value(g, "y", XC_DTYPE_UNDEFINED, -1, NULL, &y));
  xc_node_t* n;
  CHECK_OK(xc_graph_add_node(g, "Add", "", "add", 2, (xc_value_t*[]){x, NULL}, 1, &y, &n));
  CHECK_OK(xc_graph_resolve_ops(g));
  xc_tensor_t* out[1];
  xc_tensor_t* one = TF(XC_F32, 0, NULL, VALS(1));
  CHECK_ERR(xc_interp_eval_node(n, 2, (const xc_tensor_t* const[]){one, NULL}, out), "missing");
  CHECK_ERR(xc_graph_infer(g), "missing");
  xc_graph_destroy(g);
  release_all();
}

/* Builds in[i64 2] with elems {batch, 4} (as Shape would give), runs
 * op(in, c) with c = constant {2} or {2,2}, checks the printed elems of
 * the result and runs the interpreter, which checks them against the data. */
static void check_elems(const char* op, const char* want0, const char* want1) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_dim_t two = xc_dim_const(2);
  xc_value_t *in, *c, *out;
  CHECK_OK(xc_graph_add_value(g, "in", XC_I64, 1, &two, &in));
  CHECK_OK(xc_graph_add_input(g, in));
  xc_dim_t e[2] = {xc_dim_var(g, "batch"), xc_dim_const(4)};
  CHECK_OK(xc_value_set_elems(g, in, 2, e));
  CHECK_OK(xc_graph_add_initializer(g, "c", tensor_i(XC_I64, 0, NULL, IVALS(2)), &c));
  CHECK_OK(xc_graph_add_value(g, "out", XC_DTYPE_UNDEFINED, -1, NULL, &out));
  CHECK_OK(xc_graph_add_output(g, out));
  xc_value_t* ins[2] = {in, c};
  xc_node_t* n;
  CHECK_OK(xc_graph_add_node(g, op, "", "n", 2, ins, 1, &out, &n));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[64];
  CHECK(out->elems != NULL && out->num_elems == 2);
  if (out->elems && out->num_elems == 2) {
    CHECK_STR(xc_dim_print(out->elems[0], buf, sizeof buf), want0);
    CHECK_STR(xc_dim_print(out->elems[1], buf, sizeof buf), want1);
  }
  xc_tensor_t* data = tensor_i(XC_I64, 1, DIMS(2), IVALS(6, 4));
  xc_tensor_t* result = NULL;
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const[]){data}, &result));
  xc_tensor_destroy(result);
  xc_tensor_destroy(data);
  xc_graph_destroy(g);
}

static void test_known_elems(void) {
  check_elems("Mul", "batch*2", "8");
  check_elems("Add", "batch+2", "6");
  check_elems("Sub", "batch-2", "2");
  check_elems("Div", "floordiv(batch,2)", "2");
  check_elems("Max", "max(batch,2)", "4");

  /* Equal / Where / Cast / Neg over constants and a symbolic vector. */
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_dim_t two = xc_dim_const(2);
  xc_value_t *in, *minus1, *eq, *w, *cast, *neg;
  CHECK_OK(xc_graph_add_value(g, "in", XC_I64, 1, &two, &in));
  CHECK_OK(xc_graph_add_input(g, in));
  xc_dim_t e[2] = {xc_dim_var(g, "n"), xc_dim_const(-1)};
  CHECK_OK(xc_value_set_elems(g, in, 2, e));
  CHECK_OK(xc_graph_add_initializer(g, "m1", tensor_i(XC_I64, 0, NULL, IVALS(-1)), &minus1));
  CHECK_OK(xc_graph_add_value(g, "eq", XC_DTYPE_UNDEFINED, -1, NULL, &eq));
  CHECK_OK(xc_graph_add_value(g, "w", XC_DTYPE_UNDEFINED, -1, NULL, &w));
  CHECK_OK(xc_graph_add_value(g, "cast", XC_DTYPE_UNDEFINED, -1, NULL, &cast));
  CHECK_OK(xc_graph_add_value(g, "neg", XC_DTYPE_UNDEFINED, -1, NULL, &neg));
  xc_value_t *two_c, *quot;
  CHECK_OK(xc_graph_add_initializer(g, "two", tensor_i(XC_I64, 0, NULL, IVALS(2)), &two_c));
  CHECK_OK(xc_graph_add_value(g, "quot", XC_DTYPE_UNDEFINED, -1, NULL, &quot));
  xc_node_t* n;
  /* A size (n) never equals -1, the static -1 does: eq = {0, 1}. */
  CHECK_OK(xc_graph_add_node(g, "Equal", "", "eq", 2, (xc_value_t*[]){in, minus1}, 1, &eq, &n));
  CHECK_OK(xc_graph_add_node(g, "Neg", "", "neg", 1, &in, 1, &neg, &n));
  CHECK_OK(xc_graph_add_node(g, "Cast", "", "cast", 1, &in, 1, &cast, &n));
  CHECK_OK(xc_node_set_int(g, n, "to", 6));
  CHECK_OK(xc_graph_add_node(g, "Div", "", "div", 2, (xc_value_t*[]){neg, two_c}, 1, &quot, &n));
  CHECK_OK(xc_graph_add_output(g, eq));
  CHECK_OK(xc_graph_add_output(g, neg));
  CHECK_OK(xc_graph_add_output(g, cast));
  CHECK_OK(xc_graph_add_output(g, quot));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[64];
  CHECK(eq->elems && xc_dim_print(eq->elems[0], buf, sizeof buf) && strcmp(buf, "0") == 0);
  CHECK(eq->elems && xc_dim_print(eq->elems[1], buf, sizeof buf) && strcmp(buf, "1") == 0);
  /* -n may be negative: dividing it (truncation) is not floor division, so
   * the quotient stays unknown. */
  CHECK(quot->elems == NULL);
  CHECK(neg->elems && xc_dim_print(neg->elems[1], buf, sizeof buf) &&
        strcmp(buf, "1") == 0);
  CHECK(cast->dtype == XC_I32 && cast->elems && xc_dim_print(cast->elems[0], buf, sizeof buf) &&
        strcmp(buf, "n") == 0);
  xc_tensor_t* data = tensor_i(XC_I64, 1, DIMS(2), IVALS(5, -1));
  xc_tensor_t* res[4] = {0};
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const[]){data}, res));
  /* -5 / 2 truncates to -2; 1 / 2 to 0. */
  check_tensor_i("neg div", res[3], XC_I64, 1, DIMS(2), IVALS(-2, 0));
  free_tensors(4, res);
  xc_tensor_destroy(data);
  xc_graph_destroy(g);

  /* A symbolic size is not assumed to fit 8 bits: Cast to u8 forgets it. */
  CHECK_OK(xc_graph_create("t", &g));
  xc_value_t *sz, *small;
  CHECK_OK(xc_graph_add_value(g, "sz", XC_I64, 1, &two, &sz));
  CHECK_OK(xc_graph_add_input(g, sz));
  xc_dim_t es[2] = {xc_dim_var(g, "n"), xc_dim_const(4)};
  CHECK_OK(xc_value_set_elems(g, sz, 2, es));
  CHECK_OK(xc_graph_add_value(g, "small", XC_DTYPE_UNDEFINED, -1, NULL, &small));
  CHECK_OK(xc_graph_add_node(g, "Cast", "", "c", 1, &sz, 1, &small, &n));
  CHECK_OK(xc_node_set_int(g, n, "to", 2));
  CHECK_OK(xc_graph_add_output(g, small));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  CHECK(small->dtype == XC_U8 && small->elems == NULL);
  xc_graph_destroy(g);

  /* Where over constant condition picks known elements. */
  CHECK_OK(xc_graph_create("t", &g));
  xc_value_t *cond, *x, *y;
  CHECK_OK(xc_graph_add_value(g, "x", XC_I64, 1, &two, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  xc_dim_t ex[2] = {xc_dim_var(g, "a"), xc_dim_var(g, "b")};
  CHECK_OK(xc_value_set_elems(g, x, 2, ex));
  CHECK_OK(xc_graph_add_initializer(g, "cond", tensor_i(XC_BOOL, 1, DIMS(2), IVALS(0, 1)), &cond));
  CHECK_OK(xc_graph_add_initializer(g, "y", tensor_i(XC_I64, 1, DIMS(2), IVALS(7, 9)), &y));
  CHECK_OK(xc_graph_add_value(g, "w", XC_DTYPE_UNDEFINED, -1, NULL, &w));
  CHECK_OK(xc_graph_add_node(g, "Where", "", "w", 3, (xc_value_t*[]){cond, x, y}, 1, &w, &n));
  CHECK_OK(xc_graph_add_output(g, w));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  CHECK(w->elems && xc_dim_print(w->elems[0], buf, sizeof buf) && strcmp(buf, "7") == 0);
  CHECK(w->elems && xc_dim_print(w->elems[1], buf, sizeof buf) && strcmp(buf, "b") == 0);
  data = tensor_i(XC_I64, 1, DIMS(2), IVALS(3, 4));
  xc_tensor_t* wr = NULL;
  CHECK_OK(xc_interp_run(g, NULL, 1, (const xc_tensor_t* const[]){data}, &wr));
  check_tensor_i("where elems", wr, XC_I64, 1, DIMS(2), IVALS(7, 4));
  xc_tensor_destroy(wr);
  xc_tensor_destroy(data);
  xc_graph_destroy(g);
}

/* Symbolic shapes: x[batch,1] + y[3] -> [batch,3], then a comparison; the
 * interpreter binds batch and checks the kernels against inference. */
static void test_symbolic_broadcast(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("t", &g));
  xc_dim_t dx[2] = {xc_dim_var(g, "batch"), xc_dim_const(1)};
  xc_dim_t dy[1] = {xc_dim_const(3)};
  xc_value_t *x, *y, *sum, *cmp;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 2, dx, &x));
  CHECK_OK(xc_graph_add_value(g, "y", XC_F32, 1, dy, &y));
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_input(g, y));
  CHECK_OK(xc_graph_add_value(g, "sum", XC_DTYPE_UNDEFINED, -1, NULL, &sum));
  CHECK_OK(xc_graph_add_value(g, "cmp", XC_DTYPE_UNDEFINED, -1, NULL, &cmp));
  xc_node_t* n;
  CHECK_OK(xc_graph_add_node(g, "Add", "", "add", 2, (xc_value_t*[]){x, y}, 1, &sum, &n));
  CHECK_OK(xc_graph_add_node(g, "Less", "", "less", 2, (xc_value_t*[]){sum, x}, 1, &cmp, &n));
  CHECK_OK(xc_graph_add_output(g, cmp));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  char buf[64];
  CHECK_STR(xc_value_describe(sum, buf, sizeof buf), "f32[batch,3]");
  CHECK_STR(xc_value_describe(cmp, buf, sizeof buf), "bool[batch,3]");
  xc_tensor_t* xt = tensor_f(XC_F32, 2, DIMS(2, 1), VALS(1, 2));
  xc_tensor_t* yt = tensor_f(XC_F32, 1, DIMS(3), VALS(-1, 0, 1));
  xc_tensor_t* out = NULL;
  CHECK_OK(xc_interp_run(g, NULL, 2, (const xc_tensor_t* const[]){xt, yt}, &out));
  /* x + y < x exactly where y < 0. */
  check_tensor_i("symbolic", out, XC_BOOL, 2, DIMS(2, 3), IVALS(1, 0, 0, 1, 0, 0));
  xc_tensor_destroy(out);
  xc_tensor_destroy(xt);
  xc_tensor_destroy(yt);
  xc_graph_destroy(g);
}

/* Every op of the three families on every dtype and a few arities and
 * shapes: each run either succeeds (and then the interpreter has checked the
 * kernel's result against inference) or fails with a message; none crashes
 * (the sanitizer build checks memory). */
static void test_dtype_sweep(void) {
  static const char* const ops[] = {
      "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Greater", "GreaterOrEqual", "Less",
      "LessOrEqual", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift",
      "Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Sin", "Cos",
      "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Floor", "Ceil",
      "Round", "Sign", "IsNaN", "IsInf", "Not", "BitwiseNot", "Min", "Max", "Sum", "Mean",
      "Where", "Clip", "Cast", "CastLike", "Relu", "LeakyRelu", "Elu", "Selu", "Celu",
      "ThresholdedRelu", "HardSigmoid", "HardSwish", "Gelu", "Softplus", "Softsign", "Mish",
      "Shrink", "PRelu", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"};
  const double vals[6] = {-2.5, 0, 1, 3, -1, 7};
  int successes = 0;
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
    const xc_op_def_t* def = xc_op_lookup("", ops[o]);
    CHECK(def != NULL);
    if (!def) continue;
    test_attr_t attrs[1];
    int nattrs = 0;
    if (strcmp(ops[o], "Cast") == 0) attrs[nattrs++] = (test_attr_t)TA_I("to", 1);
    if (strcmp(ops[o], "BitShift") == 0) attrs[nattrs++] = (test_attr_t)TA_S("direction", "LEFT");
    int max_in = def->max_inputs < 0 ? 3 : def->max_inputs;
    for (int dt = 1; dt < XC_DTYPE_COUNT; dt++) {
      for (int nin = def->min_inputs; nin <= max_in; nin++) {
        for (int shape = 0; shape < 2; shape++) {
          const xc_tensor_t* ins[3];
          for (int k = 0; k < nin; k++) {
            /* shape 0: [2,3] then [3] then []; shape 1: all scalars. */
            int rank = shape == 1 ? 0 : k == 0 ? 2 : k == 1 ? 1 : 0;
            ins[k] = TF((xc_dtype_t)dt, rank, k == 0 ? DIMS(2, 3) : DIMS(3), vals);
          }
          xc_tensor_t* outs[3] = {0};
          int nout = def->max_outputs;
          xc_status_t st = run_node(ops[o], attrs, nattrs, nin, ins, nout, outs);
          if (!st) successes++;
          /* Failures are refusals of the input, never broken invariants. */
          if (st && (xc_status_code(st) == XC_INTERNAL ||
                     strstr(xc_status_message(st), "disagrees"))) {
            fprintf(stderr, "%s on %s: %s\n", ops[o], xc_dtype_name((xc_dtype_t)dt),
                    xc_status_message(st));
            xc_test_failures++;
          }
          CHECK(st == NULL || xc_status_message(st)[0] != 0);
          xc_status_free(st);
          free_tensors(nout, outs);
        }
      }
    }
    release_all();
  }
  /* Sanity: most (op, dtype) pairs of the numeric ops are supported. */
  fprintf(stderr, "dtype sweep: %d runs succeeded\n", successes);
  CHECK(successes > 500);
}

int main(void) {
  test_dtype_sweep();
  test_symbolic_broadcast();
  test_add_broadcast();
  test_half_rounding();
  test_integer_arithmetic();
  test_pow();
  test_unary();
  test_predicates();
  test_compare_logic();
  test_bitwise();
  test_where();
  test_variadic();
  test_clip();
  test_cast();
  test_bad_inputs();
  test_known_elems();
  return xc_test_summary("test_ops_elementwise");
}
