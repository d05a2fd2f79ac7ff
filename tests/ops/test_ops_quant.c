/* Tests of the quant op family: per-tensor, per-axis and blocked
 * (de)quantization, half-to-even rounding, saturation into every output
 * type, fp8 outputs and DynamicQuantizeLinear. Expectations are derived by
 * hand in the comments. */
#include "elementwise_test_util.h"

static void test_quantize_per_tensor(void) {
  /* x / 2 = [0, 1, 1.5, 2.5, 500, -127, -500] -> round half even
   * [0, 1, 2, 2, 500, -127, -500] + 128 -> saturate to u8. */
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(7), VALS(0, 2, 3, 5, 1000, -254, -1000));
  xc_tensor_t* s = TF(XC_F32, 0, NULL, VALS(2));
  xc_tensor_t* zp = TI(XC_U8, 0, NULL, IVALS(128));
  check_tensor_i("q u8", RUN("QuantizeLinear", NULL, 0, x, s, zp), XC_U8, 1, DIMS(7),
                 IVALS(128, 129, 130, 130, 255, 1, 0));
  /* No zero point: u8 with zero point 0; -0.5 rounds to 0. */
  check_tensor_i("q default",
                 RUN("QuantizeLinear", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(-1, 3)), s), XC_U8, 1,
                 DIMS(2), IVALS(0, 2));
  /* output_dtype = INT8 (3). */
  test_attr_t i8[] = {TA_I("output_dtype", 3)};
  xc_tensor_t* one = TF(XC_F32, 0, NULL, VALS(1));
  check_tensor_i("q i8",
                 RUN("QuantizeLinear", i8, 1, TF(XC_F32, 1, DIMS(3), VALS(-300, 3, 255)), one),
                 XC_I8, 1, DIMS(3), IVALS(-128, 3, 127));
  /* int16 zero point -1: 70000 saturates, -1 - 1 = -2. */
  check_tensor_i("q i16",
                 RUN("QuantizeLinear", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(70000, -1)), one,
                     TI(XC_I16, 0, NULL, IVALS(-1))),
                 XC_I16, 1, DIMS(2), IVALS(32767, -2));
  /* u16. */
  check_tensor_i("q u16",
                 RUN("QuantizeLinear", NULL, 0, TF(XC_F32, 1, DIMS(2), VALS(70000, 2.5)), one,
                     TI(XC_U16, 0, NULL, IVALS(0))),
                 XC_U16, 1, DIMS(2), IVALS(65535, 2));
  /* f16 input and scale. */
  check_tensor_i("q f16",
                 RUN("QuantizeLinear", NULL, 0, TF(XC_F16, 1, DIMS(2), VALS(3, -3)),
                     TF(XC_F16, 0, NULL, VALS(0.5)), TI(XC_I8, 0, NULL, IVALS(1))),
                 XC_I8, 1, DIMS(2), IVALS(7, -5));
  /* Empty input. */
  check_tensor_i("q empty", RUN("QuantizeLinear", NULL, 0, TF(XC_F32, 2, DIMS(0, 4), VALS(0)), s),
                 XC_U8, 2, DIMS(0, 4), IVALS(0));
  release_all();
}

static void test_quantize_axis_and_blocks(void) {
  xc_tensor_t* x = TF(XC_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 10, 20, 35));
  /* axis 0: row 0 scale 1 zp 0; row 1 scale 10 zp 100: [1, 2, 3.5->4] + 100. */
  test_attr_t ax0[] = {TA_I("axis", 0)};
  check_tensor_i("q axis0",
                 RUN("QuantizeLinear", ax0, 1, x, TF(XC_F32, 1, DIMS(2), VALS(1, 10)),
                     TI(XC_U8, 1, DIMS(2), IVALS(0, 100))),
                 XC_U8, 2, DIMS(2, 3), IVALS(1, 2, 3, 101, 102, 104));
  /* axis 1 (default): scales [1, 2, 4]: row 0 [1, 1, 0.75->1], row 1 [10, 10, 8.75->9]. */
  check_tensor_i("q axis1",
                 RUN("QuantizeLinear", NULL, 0, x, TF(XC_F32, 1, DIMS(3), VALS(1, 2, 4))), XC_U8, 2,
                 DIMS(2, 3), IVALS(1, 1, 1, 10, 10, 9));
  /* Blocks of 2 along axis 1: scale [[1,2],[4,8]], zp [[0,0],[-1,1]]. */
  xc_tensor_t* xb = TF(XC_F32, 2, DIMS(2, 4), VALS(1, 2, 3, 4, 8, 16, 24, 32));
  test_attr_t blk2[] = {TA_I("block_size", 2)};
  xc_tensor_t* sb = TF(XC_F32, 2, DIMS(2, 2), VALS(1, 2, 4, 8));
  check_tensor_i(
      "q blocked",
      RUN("QuantizeLinear", blk2, 1, xb, sb, TI(XC_I8, 2, DIMS(2, 2), IVALS(0, 0, -1, 1))), XC_I8,
      2, DIMS(2, 4), IVALS(1, 2, 2, 2, 1, 3, 4, 5));
  /* Block 3 over 4 columns: ceil(4/3) = 2 blocks; column 3 uses the 2nd. */
  test_attr_t blk3[] = {TA_I("block_size", 3)};
  check_tensor_i("q blocked ragged", RUN("QuantizeLinear", blk3, 1, xb, sb), XC_U8, 2, DIMS(2, 4),
                 IVALS(1, 2, 3, 2, 2, 4, 6, 4));
  /* Bad layouts. */
  RUN_ERR("per-axis scale", "QuantizeLinear", NULL, 0, x, TF(XC_F32, 1, DIMS(2), VALS(1, 1)));
  RUN_ERR("blocked scale", "QuantizeLinear", blk2, 1, xb,
          TF(XC_F32, 2, DIMS(2, 4), VALS(1, 1, 1, 1, 1, 1, 1, 1)));
  RUN_ERR("zero point shape", "QuantizeLinear", NULL, 0, x, TF(XC_F32, 1, DIMS(3), VALS(1, 1, 1)),
          TI(XC_U8, 0, NULL, IVALS(0)));
  RUN_ERR("axis", "QuantizeLinear", (test_attr_t[]){TA_I("axis", 2)}, 1, x,
          TF(XC_F32, 1, DIMS(3), VALS(1, 1, 1)));
  release_all();
}

static void test_quantize_f8_and_errors(void) {
  /* e4m3fn: 1000 saturates to 448 (0x7e); 3 = 1.5 * 2 is 0x44. */
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(2), VALS(1000, 3));
  xc_tensor_t* one = TF(XC_F32, 0, NULL, VALS(1));
  xc_tensor_t* zp = TI(XC_U8, 0, NULL, IVALS(0));
  zp->dtype = XC_F8E4M3FN;
  xc_tensor_t* q = RUN("QuantizeLinear", NULL, 0, x, one, zp);
  CHECK(q && q->dtype == XC_F8E4M3FN && ((uint8_t*)q->data)[0] == 0x7e &&
        ((uint8_t*)q->data)[1] == 0x44);
  test_attr_t nosat[] = {TA_I("saturate", 0)};
  xc_tensor_t* qn = RUN("QuantizeLinear", nosat, 1, x, one, zp);
  CHECK(qn && ((uint8_t*)qn->data)[0] == 0x7f);
  /* f8e5m2 through output_dtype (19). */
  test_attr_t e5[] = {TA_I("output_dtype", 19)};
  xc_tensor_t* q5 = RUN("QuantizeLinear", e5, 1, TF(XC_F32, 0, NULL, VALS(-2)), one);
  CHECK(q5 && q5->dtype == XC_F8E5M2 && ((uint8_t*)q5->data)[0] == 0xc0);
  RUN_ERR("unsupported dtype", "QuantizeLinear", NULL, 0, TF(XC_F64, 0, NULL, VALS(1)), one);
  RUN_ERR("disagrees", "QuantizeLinear", (test_attr_t[]){TA_I("output_dtype", 3)}, 1, x, one,
          TI(XC_U8, 0, NULL, IVALS(0)));
  RUN_ERR("cannot quantize", "QuantizeLinear", (test_attr_t[]){TA_I("output_dtype", 1)}, 1, x, one);
  release_all();
}

static void test_dequantize(void) {
  /* (x - 128) * 0.5 */
  check_tensor_f("dq u8",
                 RUN("DequantizeLinear", NULL, 0, TI(XC_U8, 1, DIMS(3), IVALS(0, 128, 255)),
                     TF(XC_F32, 0, NULL, VALS(0.5)), TI(XC_U8, 0, NULL, IVALS(128))),
                 XC_F32, 1, DIMS(3), VALS(-64, 0, 63.5), 0);
  check_tensor_f("dq i32",
                 RUN("DequantizeLinear", NULL, 0, TI(XC_I32, 1, DIMS(2), IVALS(-5, 7)),
                     TF(XC_F32, 0, NULL, VALS(2))),
                 XC_F32, 1, DIMS(2), VALS(-10, 14), 0);
  /* Per-axis 0: row 1 is (x + 2) * 0.5. */
  test_attr_t ax0[] = {TA_I("axis", 0)};
  check_tensor_f("dq axis",
                 RUN("DequantizeLinear", ax0, 1, TI(XC_I8, 2, DIMS(2, 2), IVALS(1, 2, 3, 4)),
                     TF(XC_F32, 1, DIMS(2), VALS(1, 0.5)), TI(XC_I8, 1, DIMS(2), IVALS(0, -2))),
                 XC_F32, 2, DIMS(2, 2), VALS(1, 2, 2.5, 3), 0);
  /* Blocks of 2 along axis 1 with scales [2, 3]. */
  test_attr_t blk[] = {TA_I("block_size", 2)};
  check_tensor_f("dq blocked",
                 RUN("DequantizeLinear", blk, 1, TI(XC_I8, 2, DIMS(1, 4), IVALS(1, 2, 3, 4)),
                     TF(XC_F32, 2, DIMS(1, 2), VALS(2, 3))),
                 XC_F32, 2, DIMS(1, 4), VALS(2, 4, 9, 12), 0);
  /* Output dtype follows the scale (f16) unless output_dtype says otherwise. */
  xc_tensor_t* x16 = TI(XC_I16, 1, DIMS(2), IVALS(-3, 1000));
  xc_tensor_t* s16 = TF(XC_F16, 0, NULL, VALS(0.25));
  check_tensor_f("dq f16", RUN("DequantizeLinear", NULL, 0, x16, s16), XC_F16, 1, DIMS(2),
                 VALS(-0.75, 250), 0);
  test_attr_t to_f32[] = {TA_I("output_dtype", 1)};
  check_tensor_f("dq f16->f32", RUN("DequantizeLinear", to_f32, 1, x16, s16), XC_F32, 1, DIMS(2),
                 VALS(-0.75, 250), 0);
  /* fp8 input: 0x44 is 3. */
  xc_tensor_t* f8 = TI(XC_U8, 1, DIMS(1), IVALS(0x44));
  f8->dtype = XC_F8E4M3FN;
  check_tensor_f("dq f8", RUN("DequantizeLinear", NULL, 0, f8, TF(XC_F32, 0, NULL, VALS(2))),
                 XC_F32, 1, DIMS(1), VALS(6), 0);
  RUN_ERR("same dtype", "DequantizeLinear", NULL, 0, x16, s16, TI(XC_U8, 0, NULL, IVALS(0)));
  RUN_ERR("unsupported dtype", "DequantizeLinear", NULL, 0, TF(XC_F32, 0, NULL, VALS(1)), s16);
  release_all();
}

static void test_dynamic_quantize(void) {
  /* The ONNX example: range [-3, 2] -> scale 5/255 = 0.019607844 (f32),
   * zero point round(3 / scale) = 153; -2.5 / scale = -127.49999 in f32
   * rounds to -127 (26 after the zero point); 0.5 / scale = 25.5 -> 26. */
  xc_tensor_t* x = TF(XC_F32, 1, DIMS(6), VALS(0, 2, -3, -2.5, 1.34, 0.5));
  xc_tensor_t* outs[3];
  CHECK_OK(run_node("DynamicQuantizeLinear", NULL, 0, 1, INPUTS(x), 3, outs));
  check_tensor_i("dq y", outs[0], XC_U8, 1, DIMS(6), IVALS(153, 255, 0, 26, 221, 179));
  check_tensor_f("dq scale", outs[1], XC_F32, 0, NULL, VALS((double)(5.0f / 255.0f)), 0);
  check_tensor_i("dq zp", outs[2], XC_U8, 0, NULL, IVALS(153));
  free_tensors(3, outs);
  /* All zeros: range is taken as 1, zero point 0. */
  xc_tensor_t* z = TF(XC_F32, 1, DIMS(2), VALS(0, 0));
  CHECK_OK(run_node("DynamicQuantizeLinear", NULL, 0, 1, INPUTS(z), 3, outs));
  check_tensor_i("dq zero y", outs[0], XC_U8, 1, DIMS(2), IVALS(0, 0));
  check_tensor_f("dq zero scale", outs[1], XC_F32, 0, NULL, VALS((double)(1.0f / 255.0f)), 0);
  check_tensor_i("dq zero zp", outs[2], XC_U8, 0, NULL, IVALS(0));
  free_tensors(3, outs);
  /* All positive: minimum is clamped to 0, so zero point 0 and max -> 255. */
  xc_tensor_t* p = TF(XC_F32, 1, DIMS(3), VALS(1, 2.55, 0.5));
  CHECK_OK(run_node("DynamicQuantizeLinear", NULL, 0, 1, INPUTS(p), 3, outs));
  check_tensor_i("dq pos y", outs[0], XC_U8, 1, DIMS(3), IVALS(100, 255, 50));
  check_tensor_i("dq pos zp", outs[2], XC_U8, 0, NULL, IVALS(0));
  free_tensors(3, outs);
  RUN_ERR("unsupported dtype", "DynamicQuantizeLinear", NULL, 0, TF(XC_F64, 0, NULL, VALS(1)));
  release_all();
}

static void test_qlinear_matmul(void) {
  /* A = a - 2 = [[0,2],[4,6]], B = b - 1 = [[0,2],[4,6]];
   * A @ B = [[8,12],[24,44]]; 0.5 * 0.5 / 0.25 = 1; + 10. */
  xc_tensor_t* a = TI(XC_U8, 2, DIMS(2, 2), IVALS(2, 4, 6, 8));
  xc_tensor_t* b = TI(XC_U8, 2, DIMS(2, 2), IVALS(1, 3, 5, 7));
  xc_tensor_t* half = TF(XC_F32, 0, NULL, VALS(0.5));
  xc_tensor_t* quarter = TF(XC_F32, 0, NULL, VALS(0.25));
  xc_tensor_t* azp = TI(XC_U8, 0, NULL, IVALS(2));
  xc_tensor_t* bzp = TI(XC_U8, 0, NULL, IVALS(1));
  xc_tensor_t* yzp = TI(XC_U8, 0, NULL, IVALS(10));
  check_tensor_i("qlmm", RUN("QLinearMatMul", NULL, 0, a, half, azp, b, half, bzp, quarter, yzp),
                 XC_U8, 2, DIMS(2, 2), IVALS(18, 22, 34, 54));
  /* Saturation (not wraparound, see onnx/onnx#7835): scale 1 / 0.1 = 10
   * gives [[80,120],[240,440]] -> int8 [[80,120],[127,127]]. */
  xc_tensor_t* one = TF(XC_F32, 0, NULL, VALS(1));
  xc_tensor_t* tenth = TF(XC_F32, 0, NULL, VALS(0.1));
  xc_tensor_t* ai = TI(XC_I8, 2, DIMS(2, 2), IVALS(0, 2, 4, 6));
  xc_tensor_t* bi = TI(XC_I8, 2, DIMS(2, 2), IVALS(0, 2, 4, 6));
  xc_tensor_t* zi = TI(XC_I8, 0, NULL, IVALS(0));
  check_tensor_i("qlmm sat", RUN("QLinearMatMul", NULL, 0, ai, one, zi, bi, one, zi, tenth, zi),
                 XC_I8, 2, DIMS(2, 2), IVALS(80, 120, 127, 127));
  /* Negative side saturates to -128: -A @ B. */
  xc_tensor_t* an = TI(XC_I8, 2, DIMS(2, 2), IVALS(0, -2, -4, -6));
  check_tensor_i("qlmm sat neg", RUN("QLinearMatMul", NULL, 0, an, one, zi, bi, one, zi, tenth, zi),
                 XC_I8, 2, DIMS(2, 2), IVALS(-80, -120, -128, -128));
  /* Per-row a_scale [1, 2]: row 1 doubles: [[8,12],[48,88]] + 10. */
  xc_tensor_t* rows = TF(XC_F32, 1, DIMS(2), VALS(1, 2));
  check_tensor_i("qlmm per-row", RUN("QLinearMatMul", NULL, 0, a, rows, azp, b, one, bzp, one, yzp),
                 XC_U8, 2, DIMS(2, 2), IVALS(18, 22, 58, 98));
  /* Batch broadcast [2,1,2] @ [2,2] -> [2,1,2]; rows [2,4]->A [0,2], [6,8]->A [4,6]. */
  xc_tensor_t* a3 = TI(XC_U8, 3, DIMS(2, 1, 2), IVALS(2, 4, 6, 8));
  check_tensor_i("qlmm batch",
                 RUN("QLinearMatMul", NULL, 0, a3, half, azp, b, half, bzp, quarter, yzp), XC_U8, 3,
                 DIMS(2, 1, 2), IVALS(18, 22, 34, 54));
  /* 1-D a: [6,8] -> A [4,6] @ B -> [24,44] + 10. */
  xc_tensor_t* a1 = TI(XC_U8, 1, DIMS(2), IVALS(6, 8));
  check_tensor_i("qlmm 1-D",
                 RUN("QLinearMatMul", NULL, 0, a1, half, azp, b, half, bzp, quarter, yzp), XC_U8, 1,
                 DIMS(2), IVALS(34, 54));
  xc_tensor_t* b3 = TI(XC_U8, 2, DIMS(3, 2), IVALS(1, 1, 1, 1, 1, 1));
  RUN_ERR("inner dimensions", "QLinearMatMul", NULL, 0, a, half, azp, b3, half, bzp, quarter, yzp);
  RUN_ERR("same dtype", "QLinearMatMul", NULL, 0, a, half, zi, b, half, bzp, quarter, yzp);
  release_all();
}

int main(void) {
  test_qlinear_matmul();
  test_quantize_per_tensor();
  test_quantize_axis_and_blocks();
  test_quantize_f8_and_errors();
  test_dequantize();
  test_dynamic_quantize();
  return xc_test_summary("test_ops_quant");
}
