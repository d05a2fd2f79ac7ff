/* Tests of the activation op family. Expected values come from the closed
 * formulas of the ONNX spec evaluated by hand (constants in comments). */
#include "elementwise_test_util.h"

static void test_relu_family(void) {
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(4), VALS(-1, 0, 2, NAN));
  check_tensor_f("relu", RUN("Relu", NULL, 0, x), XC_F32, 1, DIMS(4), VALS(0, 0, 2, NAN), 0);
  check_tensor_i("relu i8", RUN("Relu", NULL, 0, TI(XC_I8, 1, DIMS(2), IVALS(-128, 5))), XC_I8, 1,
                 DIMS(2), IVALS(0, 5));
  test_attr_t a01[] = {TA_F("alpha", 0.1)};
  check_tensor_f("leaky", RUN("LeakyRelu", a01, 1, TF(XC_F32, 1, DIMS(2), VALS(-2, 3))), XC_F32, 1,
                 DIMS(2), VALS(-0.2, 3), 1e-7);
  check_tensor_f("leaky default", RUN("LeakyRelu", NULL, 0, TF(XC_F32, 0, NULL, VALS(-100))),
                 XC_F32, 0, NULL, VALS(-1), 1e-6);
  /* ThresholdedRelu alpha=1: x > 1 passes. */
  check_tensor_f("thresholded",
                 RUN("ThresholdedRelu", NULL, 0, TF(XC_F32, 1, DIMS(3), VALS(0.5, 1, 2))), XC_F32,
                 1, DIMS(3), VALS(0, 0, 2), 0);
  RUN_ERR("unsupported dtype", "LeakyRelu", NULL, 0, TI(XC_I32, 0, NULL, IVALS(1)));
  RUN_ERR("unsupported dtype", "Relu", NULL, 0, TI(XC_U8, 0, NULL, IVALS(1)));
  release_all();
}

static void test_prelu(void) {
  xc_tensor_t* x = TF(XC_F32, 2, DIMS(2, 3), VALS(-1, -2, -3, 1, 2, 3));
  /* Slope [3] along the last axis. */
  check_tensor_f("prelu [3]", RUN("PRelu", NULL, 0, x, TF(XC_F32, 1, DIMS(3), VALS(0.1, 0.2, 0.3))),
                 XC_F32, 2, DIMS(2, 3), VALS(-0.1, -0.4, -0.9, 1, 2, 3), 1e-7);
  /* Slope [2,1] per row. */
  check_tensor_f("prelu [2,1]", RUN("PRelu", NULL, 0, x, TF(XC_F32, 2, DIMS(2, 1), VALS(0.5, 2))),
                 XC_F32, 2, DIMS(2, 3), VALS(-0.5, -1, -1.5, 1, 2, 3), 0);
  check_tensor_f("prelu scalar", RUN("PRelu", NULL, 0, x, TF(XC_F32, 0, NULL, VALS(-1))), XC_F32, 2,
                 DIMS(2, 3), VALS(1, 2, 3, 1, 2, 3), 0);
  check_tensor_i(
      "prelu i32",
      RUN("PRelu", NULL, 0, TI(XC_I32, 1, DIMS(2), IVALS(-3, 4)), TI(XC_I32, 1, DIMS(1), IVALS(2))),
      XC_I32, 1, DIMS(2), IVALS(-6, 4));
  /* Slope [2] cannot broadcast to [2,3]; slope [2,2,3] would grow X. */
  RUN_ERR("broadcast", "PRelu", NULL, 0, x, TF(XC_F32, 1, DIMS(2), VALS(1, 1)));
  double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  RUN_ERR("slope", "PRelu", NULL, 0, x, TF(XC_F32, 3, DIMS(2, 2, 3), ones));
  RUN_ERR("same dtype", "PRelu", NULL, 0, x, TF(XC_F64, 0, NULL, VALS(1)));
  release_all();
}

static void test_exponential_family(void) {
  xc_tensor_t* x = TF(XC_F64, 1, DIMS(2), VALS(-1, 2));
  /* e^-1 - 1 = -0.6321205588285577 */
  check_tensor_f("elu", RUN("Elu", NULL, 0, x), XC_F64, 1, DIMS(2), VALS(-0.6321205588285577, 2),
                 1e-15);
  /* gamma * alpha * (e^-1 - 1) with the spec's float32 constants. */
  check_tensor_f("selu", RUN("Selu", NULL, 0, x), XC_F64, 1, DIMS(2),
                 VALS(-1.1113307412864784, 2.1014020442962646), 1e-15);
  /* Celu alpha=2 at -2: 2 * (e^-1 - 1). */
  test_attr_t a2[] = {TA_F("alpha", 2)};
  check_tensor_f("celu", RUN("Celu", a2, 1, TF(XC_F64, 1, DIMS(2), VALS(-2, 3))), XC_F64, 1,
                 DIMS(2), VALS(-1.2642411176571153, 3), 1e-15);
  RUN_ERR("alpha", "Celu", (test_attr_t[]){TA_F("alpha", 0)}, 1, x);
  /* Softplus: ln 2 at 0; no overflow at 100; tiny at -100. */
  check_tensor_f("softplus", RUN("Softplus", NULL, 0, TF(XC_F64, 1, DIMS(3), VALS(0, 100, -100))),
                 XC_F64, 1, DIMS(3), VALS(M_LN2, 100, 3.720075976020836e-44), 1e-50);
  check_tensor_f("softsign", RUN("Softsign", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(1, -3))), XC_F32,
                 1, DIMS(2), VALS(0.5, -0.75), 0);
  /* Mish(1) = tanh(ln(1 + e)) = 0.8650983882673103. */
  check_tensor_f("mish", RUN("Mish", NULL, 0, TF(XC_F64, 1, DIMS(2), VALS(1, 0))), XC_F64, 1,
                 DIMS(2), VALS(0.8650983882673103, 0), 1e-15);
  /* f16 result rounds once: Elu(-1) = -0.63212 -> nearest f16 is
   * -0.63232421875 (0xb90f: 1.2646484375 * 2^-1). */
  xc_tensor_t* h = RUN("Elu", NULL, 0, TF(XC_F16, 0, NULL, VALS(-1)));
  CHECK(h && h->dtype == XC_F16 && ((uint16_t*)h->data)[0] == 0xb90f);
  release_all();
}

static void test_piecewise(void) {
  check_tensor_f("hard sigmoid",
                 RUN("HardSigmoid", NULL, 0, TF(XC_F64, 1, DIMS(4), VALS(-3, 0, 1, 3))), XC_F64, 1,
                 DIMS(4), VALS(0, 0.5, 0.7, 1), 1e-15);
  test_attr_t hs[] = {TA_F("alpha", 0.5), TA_F("beta", 0.25)};
  check_tensor_f("hard sigmoid attrs",
                 RUN("HardSigmoid", hs, 2, TF(XC_F64, 1, DIMS(2), VALS(1, -1))), XC_F64, 1, DIMS(2),
                 VALS(0.75, 0), 1e-15);
  check_tensor_f("hard swish",
                 RUN("HardSwish", NULL, 0, TF(XC_F64, 1, DIMS(5), VALS(-4, -1, 0, 1, 4))), XC_F64,
                 1, DIMS(5), VALS(0, -1.0 / 3, 0, 2.0 / 3, 4), 1e-15);
  test_attr_t sh[] = {TA_F("lambd", 1.5), TA_F("bias", 0.5)};
  check_tensor_f("shrink", RUN("Shrink", sh, 2, TF(XC_F32, 1, DIMS(5), VALS(-2, -1, 0, 1, 2))),
                 XC_F32, 1, DIMS(5), VALS(-1.5, 0, 0, 0, 1.5), 0);
  check_tensor_f("shrink default", RUN("Shrink", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(-1, 0.3))),
                 XC_F32, 1, DIMS(2), VALS(-1, 0), 0);
  test_attr_t shi[] = {TA_F("lambd", 1.5), TA_F("bias", 1)};
  check_tensor_i("shrink i8", RUN("Shrink", shi, 2, TI(XC_I8, 1, DIMS(3), IVALS(-5, 0, 5))), XC_I8,
                 1, DIMS(3), IVALS(-4, 0, 4));
  release_all();
}

static void test_gelu(void) {
  xc_tensor_t* x = TF(XC_F64, 1, DIMS(3), VALS(1, -1, 0));
  /* 0.5 x (1 + erf(x / sqrt 2)) */
  check_tensor_f("gelu", RUN("Gelu", NULL, 0, x), XC_F64, 1, DIMS(3),
                 VALS(0.8413447460685429, -0.15865525393145707, 0), 1e-15);
  /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  test_attr_t t[] = {TA_S("approximate", "tanh")};
  check_tensor_f("gelu tanh", RUN("Gelu", t, 1, x), XC_F64, 1, DIMS(3),
                 VALS(0.8411919906082768, -0.15880800939172324, 0), 1e-15);
  test_attr_t bad[] = {TA_S("approximate", "fast")};
  RUN_ERR("approximate", "Gelu", bad, 1, x);
  /* Empty input. */
  check_tensor_f("gelu empty", RUN("Gelu", NULL, 0, TF(XC_F32, 2, DIMS(3, 0), VALS(0))), XC_F32, 2,
                 DIMS(3, 0), VALS(0), 0);
  release_all();
}

int main(void) {
  test_relu_family();
  test_prelu();
  test_exponential_family();
  test_piecewise();
  test_gelu();
  return xc_test_summary("test_ops_activation");
}
