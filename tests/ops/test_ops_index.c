/* Tests of the index family and Resize, with hand-derived expectations:
 * gathers and scatters (negative indices, duplicates with reductions,
 * batch_dims), ArgMax/ArgMin ties, TopK ties and order, CumSum variants,
 * Resize nearest/linear/align_corners/tf_crop_and_resize, symbolic
 * inference and clean errors for out-of-range indices. */
#include "node_harness.h"

#define T(dt, r, dims, vals) nh_tensor((dt), (r), (int64_t[])dims, (double[])vals)
#define I64(r, dims, vals) nh_i64((r), (int64_t[])dims, (int64_t[])vals)
#define D(...) \
  { __VA_ARGS__ }

static void test_gather_elements(void) {
  node_harness_t h;
  xc_tensor_t* in[2] = {T(XC_F32, 2, D(2, 2), D(1, 2, 3, 4)), I64(2, D(2, 2), D(0, 0, 1, 0))};
  CHECK_OK(nh_begin(&h, "GatherElements", 2, in, NULL, 1));
  CHECK_OK(xc_node_set_int(h.g, h.node, "axis", 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){1, 1, 4, 3}), 0);
  nh_end(&h);
  /* axis 0, indices smaller than data, i32 indices and i8 data. */
  xc_tensor_t* in2[2] = {T(XC_I8, 2, D(3, 3), D(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                         T(XC_I32, 2, D(2, 3), D(1, 2, 0, 2, 0, 0))};
  CHECK_OK(nh_begin(&h, "GatherElements", 2, in2, NULL, 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){4, 8, 3, 7, 2, 3}), 0);
  nh_end(&h);
  /* negative index counts from the end. */
  xc_tensor_t* in3[2] = {T(XC_F32, 2, D(2, 2), D(1, 2, 3, 4)), I64(2, D(1, 2), D(-1, 0))};
  CHECK_OK(nh_begin(&h, "GatherElements", 2, in3, NULL, 1));
  CHECK_OK(xc_node_set_int(h.g, h.node, "axis", -1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 2, ((int64_t[]){1, 2}), ((double[]){2, 1}), 0);
  nh_end(&h);
  /* indices wider than data on a non-axis dimension. */
  xc_tensor_t* wide[2] = {T(XC_F32, 2, D(2, 2), D(1, 2, 3, 4)), I64(2, D(1, 3), D(0, 0, 0))};
  CHECK_OK(nh_begin(&h, "GatherElements", 2, wide, NULL, 1));
  CHECK_ERR(nh_run(&h), "exceeds data extent");
  nh_end(&h);
  xc_tensor_t* bad[2] = {T(XC_F32, 2, D(2, 2), D(1, 2, 3, 4)), I64(2, D(1, 2), D(0, 2))};
  CHECK_OK(nh_begin(&h, "GatherElements", 2, bad, NULL, 1));
  CHECK_OK(xc_node_set_int(h.g, h.node, "axis", 1));
  CHECK_ERR(nh_run(&h), "out of range");
  nh_end(&h);
}

static void test_gather_nd(void) {
  node_harness_t h;
  xc_tensor_t* in[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(2, 2), D(0, 0, 1, 1))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, in, NULL, 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){0, 3}), 0);
  nh_end(&h);
  xc_tensor_t* in2[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(2, 1), D(1, 0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, in2, NULL, 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){2, 3, 0, 1}), 0);
  nh_end(&h);
  /* batch_dims = 1: batch 0 takes row 1, batch 1 takes row 0. */
  xc_tensor_t* in3[2] = {T(XC_F32, 3, D(2, 2, 2), D(0, 1, 2, 3, 4, 5, 6, 7)),
                         I64(2, D(2, 1), D(1, 0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, in3, NULL, 1));
  CHECK_OK(xc_node_set_int(h.g, h.node, "batch_dims", 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){2, 3, 4, 5}), 0);
  nh_end(&h);
  xc_tensor_t* bad[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(1, 2), D(0, -3))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, bad, NULL, 1));
  CHECK_ERR(nh_run(&h), "out of range");
  nh_end(&h);
  xc_tensor_t* batch[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(3, 1), D(0, 0, 0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, batch, NULL, 1));
  CHECK_OK(xc_node_set_int(h.g, h.node, "batch_dims", 1));
  CHECK_ERR(nh_infer(&h), "batch dimension 0 differs");
  nh_end(&h);
  xc_tensor_t* bad2[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(1, 3), D(0, 0, 0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, bad2, NULL, 1));
  CHECK_ERR(nh_infer(&h), "last dimension");
  nh_end(&h);
}

static xc_status_t scatter(node_harness_t* h, const char* op, xc_tensor_t* x, xc_tensor_t* idx,
                           xc_tensor_t* upd, int axis, const char* reduction) {
  xc_tensor_t* in[3] = {x, idx, upd};
  XC_RETURN_IF_ERROR(nh_begin(h, op, 3, in, NULL, 1));
  if (axis) XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "axis", axis));
  if (reduction) XC_RETURN_IF_ERROR(xc_node_set_string(h->g, h->node, "reduction", reduction));
  return nh_run(h);
}

static void test_scatter_elements(void) {
  node_harness_t h;
  CHECK_OK(scatter(&h, "ScatterElements", T(XC_F32, 2, D(3, 3), D(0, 0, 0, 0, 0, 0, 0, 0, 0)),
                   I64(2, D(2, 3), D(1, 0, 2, 0, 2, 1)),
                   T(XC_F32, 2, D(2, 3), D(1, 1.5, 1.25, 2, 2.5, 2.25)), 0, NULL));
  NH_CHECK(h.out[0], 2, ((int64_t[]){3, 3}), ((double[]){2, 1.5, 0, 1, 0, 2.25, 0, 2.5, 1.25}), 0);
  nh_end(&h);
  /* Duplicate index 1 with each reduction: data [1,2,3,4,5], updates 1.5, 2.5. */
  const char* reds[4] = {"add", "mul", "max", "min"};
  double want[4] = {2 + 1.5 + 2.5, 2 * 1.5 * 2.5, 2.5, 1.5};
  for (int r = 0; r < 4; r++) {
    CHECK_OK(scatter(&h, "ScatterElements", T(XC_F64, 2, D(1, 5), D(1, 2, 3, 4, 5)),
                     I64(2, D(1, 2), D(1, -4)), T(XC_F64, 2, D(1, 2), D(1.5, 2.5)), 1, reds[r]));
    NH_CHECK(h.out[0], 2, ((int64_t[]){1, 5}), ((double[]){1, want[r], 3, 4, 5}), 0);
    nh_end(&h);
  }
  /* Exact integer add beyond 2^53. */
  CHECK_OK(scatter(&h, "ScatterElements", I64(1, D(2), D(INT64_C(1) << 53, 7)),
                   I64(1, D(2), D(0, 0)), I64(1, D(2), D(1, 1)), 0, "add"));
  CHECK(h.out[0] && xc_tensor_get_i64(h.out[0], 0) == (INT64_C(1) << 53) + 2);
  nh_end(&h);
  CHECK_ERR(scatter(&h, "ScatterElements", T(XC_F32, 1, D(3), D(0, 0, 0)), I64(1, D(1), D(3)),
                    T(XC_F32, 1, D(1), D(1)), 0, NULL),
            "out of range");
  nh_end(&h);
  CHECK_ERR(scatter(&h, "ScatterElements", T(XC_F32, 1, D(3), D(0, 0, 0)), I64(1, D(1), D(0)),
                    T(XC_F32, 1, D(1), D(1)), 0, "avg"),
            "unknown reduction");
  nh_end(&h);
}

static void test_scatter_nd(void) {
  node_harness_t h;
  CHECK_OK(scatter(&h, "ScatterND", T(XC_F32, 1, D(8), D(1, 2, 3, 4, 5, 6, 7, 8)),
                   I64(2, D(4, 1), D(4, 3, 1, 7)), T(XC_F32, 1, D(4), D(9, 10, 11, 12)), 0, NULL));
  NH_CHECK(h.out[0], 1, ((int64_t[]){8}), ((double[]){1, 11, 3, 10, 9, 6, 7, 12}), 0);
  nh_end(&h);
  /* Slices: replace row 1 of a 2x2, twice with add. */
  CHECK_OK(scatter(&h, "ScatterND", I64(2, D(2, 2), D(1, 2, 3, 4)), I64(2, D(2, 1), D(1, -1)),
                   I64(2, D(2, 2), D(10, 20, 100, 200)), 0, "add"));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){1, 2, 113, 224}), 0);
  nh_end(&h);
  CHECK_ERR(scatter(&h, "ScatterND", T(XC_F32, 1, D(2), D(1, 2)), I64(2, D(1, 1), D(2)),
                    T(XC_F32, 1, D(1), D(9)), 0, NULL),
            "out of range");
  nh_end(&h);
}

static xc_status_t argop(node_harness_t* h, const char* op, xc_tensor_t* x, int axis, int keep,
                         int last) {
  XC_RETURN_IF_ERROR(nh_begin(h, op, 1, &x, NULL, 1));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "axis", axis));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "keepdims", keep));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "select_last_index", last));
  return nh_run(h);
}

static void test_arg(void) {
  node_harness_t h;
  CHECK_OK(argop(&h, "ArgMax", T(XC_F32, 2, D(2, 3), D(2, 2, 1, 3, 4, 4)), 1, 1, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 1}), ((double[]){0, 1}), 0);
  CHECK(h.out[0] && h.out[0]->dtype == XC_I64);
  nh_end(&h);
  CHECK_OK(argop(&h, "ArgMax", T(XC_F32, 2, D(2, 3), D(2, 2, 1, 3, 4, 4)), -1, 1, 1));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 1}), ((double[]){1, 2}), 0);
  nh_end(&h);
  CHECK_OK(argop(&h, "ArgMin", T(XC_I32, 2, D(2, 3), D(2, 2, 1, 3, 4, 4)), 0, 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){3}), ((double[]){0, 0, 0}), 0);
  nh_end(&h);
  CHECK_OK(argop(&h, "ArgMin", T(XC_F32, 2, D(2, 2), D(1, 5, 1, 5)), 0, 0, 1));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){1, 1}), 0);
  nh_end(&h);
  CHECK_ERR(argop(&h, "ArgMax", T(XC_F32, 1, D(2), D(1, 2)), 1, 1, 0), "out of range");
  nh_end(&h);
}

static xc_status_t topk(node_harness_t* h, xc_tensor_t* x, int64_t k, int axis, int largest) {
  xc_tensor_t* in[2] = {x, I64(1, D(1), D(k))};
  bool c[2] = {false, true};
  XC_RETURN_IF_ERROR(nh_begin(h, "TopK", 2, in, c, 2));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "axis", axis));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "largest", largest));
  return nh_run(h);
}

static void test_topk(void) {
  node_harness_t h;
  CHECK_OK(topk(&h, T(XC_F32, 1, D(4), D(3, 1, 3, 2)), 2, -1, 1));
  NH_CHECK(h.out[0], 1, ((int64_t[]){2}), ((double[]){3, 3}), 0);
  NH_CHECK(h.out[1], 1, ((int64_t[]){2}), ((double[]){0, 2}), 0);
  nh_end(&h);
  CHECK_OK(topk(&h, T(XC_F32, 1, D(4), D(3, 1, 3, 2)), 3, 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){3}), ((double[]){1, 2, 3}), 0);
  NH_CHECK(h.out[1], 1, ((int64_t[]){3}), ((double[]){1, 3, 0}), 0);
  nh_end(&h);
  CHECK_OK(topk(&h, T(XC_I64, 2, D(3, 2), D(1, 4, 3, 2, 3, 4)), 2, 0, 1));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){3, 4, 3, 4}), 0);
  NH_CHECK(h.out[1], 2, ((int64_t[]){2, 2}), ((double[]){1, 0, 2, 2}), 0);
  nh_end(&h);
  CHECK_OK(topk(&h, T(XC_F32, 1, D(4), D(3, 1, 3, 2)), 0, 0, 1));
  NH_CHECK(h.out[0], 1, ((int64_t[]){0}), NULL, 0);
  nh_end(&h);
  CHECK_ERR(topk(&h, T(XC_F32, 1, D(4), D(3, 1, 3, 2)), 5, 0, 1), "exceeds");
  nh_end(&h);
}

static xc_status_t cumsum(node_harness_t* h, xc_tensor_t* x, int64_t axis, int excl, int rev) {
  xc_tensor_t* in[2] = {x, I64(0, D(0), D(axis))};
  XC_RETURN_IF_ERROR(nh_begin(h, "CumSum", 2, in, NULL, 1));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "exclusive", excl));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "reverse", rev));
  return nh_run(h);
}

static void test_cumsum(void) {
  node_harness_t h;
  double want[4][5] = {{1, 3, 6, 10, 15}, {0, 1, 3, 6, 10}, {15, 14, 12, 9, 5}, {14, 12, 9, 5, 0}};
  for (int m = 0; m < 4; m++) {
    CHECK_OK(cumsum(&h, T(XC_F64, 1, D(5), D(1, 2, 3, 4, 5)), 0, m & 1, m >> 1));
    NH_CHECK(h.out[0], 1, ((int64_t[]){5}), want[m], 0);
    nh_end(&h);
  }
  CHECK_OK(cumsum(&h, T(XC_I32, 2, D(2, 3), D(1, 2, 3, 4, 5, 6)), -1, 0, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){1, 3, 6, 4, 9, 15}), 0);
  nh_end(&h);
  CHECK_OK(cumsum(&h, T(XC_F32, 2, D(2, 3), D(1, 2, 3, 4, 5, 6)), 0, 1, 0));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){0, 0, 0, 1, 2, 3}), 0);
  nh_end(&h);
  CHECK_ERR(cumsum(&h, T(XC_F32, 1, D(2), D(1, 2)), 1, 0, 0), "out of range");
  nh_end(&h);
}

/* Resize with scales (or sizes when scales is NULL), as constants. */
static xc_status_t resize(node_harness_t* h, xc_tensor_t* x, xc_tensor_t* roi, xc_tensor_t* scales,
                          xc_tensor_t* sizes, const char* mode, const char* coord) {
  xc_tensor_t* in[4] = {x, roi, scales, sizes};
  bool c[4] = {false, true, true, true};
  XC_RETURN_IF_ERROR(nh_begin(h, "Resize", 4, in, c, 1));
  XC_RETURN_IF_ERROR(xc_node_set_string(h->g, h->node, "mode", mode));
  if (coord)
    XC_RETURN_IF_ERROR(xc_node_set_string(h->g, h->node, "coordinate_transformation_mode", coord));
  return nh_run(h);
}

static void test_resize(void) {
  node_harness_t h;
  /* Nearest 2x (half_pixel, round_prefer_floor): rows/cols 0,0,1,1. */
  CHECK_OK(resize(&h, T(XC_F32, 4, D(1, 1, 2, 2), D(1, 2, 3, 4)), NULL,
                  T(XC_F32, 1, D(4), D(1, 1, 2, 2)), NULL, "nearest", NULL));
  NH_CHECK(h.out[0], 4, ((int64_t[]){1, 1, 4, 4}),
           ((double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}), 0);
  nh_end(&h);
  /* Linear half_pixel 2x: along an axis [p,q] -> [p, .75p+.25q, .25p+.75q, q]. */
  CHECK_OK(resize(&h, T(XC_F32, 4, D(1, 1, 2, 2), D(1, 2, 3, 4)), NULL,
                  T(XC_F32, 1, D(4), D(1, 1, 2, 2)), NULL, "linear", NULL));
  NH_CHECK(
      h.out[0], 4, ((int64_t[]){1, 1, 4, 4}),
      ((double[]){1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}),
      1e-6);
  nh_end(&h);
  /* align_corners to sizes 3x3: midpoints are averages. */
  CHECK_OK(resize(&h, T(XC_F32, 4, D(1, 1, 2, 2), D(1, 2, 3, 4)), NULL, NULL,
                  I64(1, D(4), D(1, 1, 3, 3)), "linear", "align_corners"));
  NH_CHECK(h.out[0], 4, ((int64_t[]){1, 1, 3, 3}), ((double[]){1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}),
           1e-6);
  nh_end(&h);
  /* Nearest on i8 with the axes attribute (only the last axis, 3x):
   * asymmetric + floor: source = floor(y/3). */
  {
    xc_tensor_t* in[4] = {T(XC_I8, 2, D(2, 2), D(-1, 5, 7, -8)), NULL, T(XC_F32, 1, D(1), D(1.5)),
                          NULL};
    bool c[4] = {false, true, true, true};
    CHECK_OK(nh_begin(&h, "Resize", 4, in, c, 1));
    CHECK_OK(xc_node_set_ints(h.g, h.node, "axes", 1, (int64_t[]){-1}));
    CHECK_OK(xc_node_set_string(h.g, h.node, "coordinate_transformation_mode", "asymmetric"));
    CHECK_OK(xc_node_set_string(h.g, h.node, "nearest_mode", "floor"));
    CHECK_OK(nh_run(&h));
    /* out width floor(2*1.5) = 3; x = y/1.5 = 0, .67, 1.33 -> 0, 0, 1. */
    NH_CHECK(h.out[0], 2, ((int64_t[]){2, 3}), ((double[]){-1, -1, 5, 7, 7, -8}), 0);
    nh_end(&h);
  }
  /* tf_crop_and_resize on a 1-D input, roi [0.5, 1.5], size 3:
   * x = 1.5*y + 1.5 -> 1.5 (2.5), 3 (4), 4.5 (outside: extrapolation 10). */
  {
    xc_tensor_t* in[4] = {T(XC_F32, 1, D(4), D(1, 2, 3, 4)), T(XC_F32, 1, D(2), D(0.5, 1.5)), NULL,
                          I64(1, D(1), D(3))};
    bool c[4] = {false, true, true, true};
    CHECK_OK(nh_begin(&h, "Resize", 4, in, c, 1));
    CHECK_OK(xc_node_set_string(h.g, h.node, "mode", "linear"));
    CHECK_OK(
        xc_node_set_string(h.g, h.node, "coordinate_transformation_mode", "tf_crop_and_resize"));
    CHECK_OK(xc_node_set_float(h.g, h.node, "extrapolation_value", 10));
    CHECK_OK(nh_run(&h));
    NH_CHECK(h.out[0], 1, ((int64_t[]){3}), ((double[]){2.5, 4, 10}), 1e-6);
    nh_end(&h);
  }
  /* Cubic 1-D upsampling x2 (asymmetric, A=-0.75) of [0,1,2,3]: a cubic
   * kernel reproduces linear data away from the edges (y=3 -> 1.5); y=1 ->
   * x=0.5 uses taps -1->0,0,1,2: .59375 - 2*.09375 = 0.40625; at the
   * right edge y=7 -> x=3.5 with edge padding: taps at 2,3,4->3,5->3
   * with weights w(1.5),w(.5),w(.5),w(1.5) = -0.09375,.59375,.59375,-0.09375:
   * 2*(-0.09375) + 3*(0.59375+0.59375-0.09375) = 3.09375. */
  CHECK_OK(resize(&h, T(XC_F64, 1, D(4), D(0, 1, 2, 3)), NULL, T(XC_F32, 1, D(1), D(2)), NULL,
                  "cubic", "asymmetric"));
  NH_CHECK(h.out[0], 1, ((int64_t[]){8}), ((double[]){0, 0.40625, 1, 1.5, 2, 2.59375, 3, 3.09375}),
           1e-12);
  nh_end(&h);
  /* Errors: both scales and sizes; a bad mode. */
  CHECK_ERR(resize(&h, T(XC_F32, 1, D(2), D(1, 2)), NULL, T(XC_F32, 1, D(1), D(2)),
                   I64(1, D(1), D(4)), "nearest", NULL),
            "exactly one");
  nh_end(&h);
  CHECK_ERR(resize(&h, T(XC_F32, 1, D(2), D(1, 2)), NULL, T(XC_F32, 1, D(1), D(2)), NULL,
                   "bilinear", NULL),
            "unknown mode");
  nh_end(&h);
}

static xc_status_t unique(node_harness_t* h, xc_tensor_t* x, int has_axis, int axis, int sorted) {
  XC_RETURN_IF_ERROR(nh_begin(h, "Unique", 1, &x, NULL, 4));
  if (has_axis) XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "axis", axis));
  XC_RETURN_IF_ERROR(xc_node_set_int(h->g, h->node, "sorted", sorted));
  return nh_run(h);
}

static void test_unique(void) {
  node_harness_t h;
  CHECK_OK(unique(&h, T(XC_F32, 1, D(6), D(2, 1, 1, 3, 4, 3)), 0, 0, 1));
  NH_CHECK(h.out[0], 1, ((int64_t[]){4}), ((double[]){1, 2, 3, 4}), 0);
  NH_CHECK(h.out[1], 1, ((int64_t[]){4}), ((double[]){1, 0, 3, 4}), 0);
  NH_CHECK(h.out[2], 1, ((int64_t[]){6}), ((double[]){1, 0, 0, 2, 3, 2}), 0);
  NH_CHECK(h.out[3], 1, ((int64_t[]){4}), ((double[]){2, 1, 2, 1}), 0);
  nh_end(&h);
  CHECK_OK(unique(&h, T(XC_I32, 2, D(2, 3), D(2, 1, 1, 3, 4, 3)), 0, 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){4}), ((double[]){2, 1, 3, 4}), 0);
  NH_CHECK(h.out[1], 1, ((int64_t[]){4}), ((double[]){0, 1, 3, 4}), 0);
  NH_CHECK(h.out[2], 1, ((int64_t[]){6}), ((double[]){0, 1, 1, 2, 3, 2}), 0);
  NH_CHECK(h.out[3], 1, ((int64_t[]){4}), ((double[]){1, 2, 2, 1}), 0);
  nh_end(&h);
  /* Columns (1,2), (0,5), (1,2): sorted lexicographically (0,5) < (1,2). */
  CHECK_OK(unique(&h, T(XC_F32, 2, D(2, 3), D(1, 0, 1, 2, 5, 2)), 1, -1, 1));
  NH_CHECK(h.out[0], 2, ((int64_t[]){2, 2}), ((double[]){0, 1, 5, 2}), 0);
  NH_CHECK(h.out[1], 1, ((int64_t[]){2}), ((double[]){1, 0}), 0);
  NH_CHECK(h.out[2], 1, ((int64_t[]){3}), ((double[]){1, 0, 1}), 0);
  NH_CHECK(h.out[3], 1, ((int64_t[]){2}), ((double[]){1, 2}), 0);
  nh_end(&h);
  CHECK_OK(unique(&h, T(XC_F32, 1, D(0), D(0)), 0, 0, 1));
  NH_CHECK(h.out[0], 1, ((int64_t[]){0}), NULL, 0);
  NH_CHECK(h.out[2], 1, ((int64_t[]){0}), NULL, 0);
  nh_end(&h);
  CHECK_ERR(unique(&h, T(XC_F32, 1, D(2), D(1, 2)), 1, 1, 1), "out of range");
  nh_end(&h);
}

/* Zero-sized dims flow through every op without reading anything. */
static void test_empty_tensors(void) {
  node_harness_t h;
  xc_tensor_t* g[2] = {T(XC_F32, 2, D(2, 2), D(0, 1, 2, 3)), I64(2, D(0, 2), D(0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, g, NULL, 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 1, ((int64_t[]){0}), NULL, 0);
  nh_end(&h);
  CHECK_OK(scatter(&h, "ScatterND", T(XC_F32, 1, D(3), D(1, 2, 3)), I64(2, D(0, 1), D(0)),
                   T(XC_F32, 1, D(0), D(0)), 0, "add"));
  NH_CHECK(h.out[0], 1, ((int64_t[]){3}), ((double[]){1, 2, 3}), 0);
  nh_end(&h);
  CHECK_OK(scatter(&h, "ScatterElements", T(XC_F32, 2, D(0, 2), D(0)), I64(2, D(0, 2), D(0)),
                   T(XC_F32, 2, D(0, 2), D(0)), 1, NULL));
  NH_CHECK(h.out[0], 2, ((int64_t[]){0, 2}), NULL, 0);
  nh_end(&h);
  CHECK_OK(cumsum(&h, T(XC_F32, 2, D(0, 3), D(0)), 1, 1, 1));
  NH_CHECK(h.out[0], 2, ((int64_t[]){0, 3}), NULL, 0);
  nh_end(&h);
  CHECK_OK(argop(&h, "ArgMax", T(XC_F32, 2, D(0, 3), D(0)), 1, 0, 0));
  NH_CHECK(h.out[0], 1, ((int64_t[]){0}), NULL, 0);
  nh_end(&h);
  CHECK_OK(resize(&h, T(XC_F32, 3, D(1, 0, 2), D(0)), NULL, T(XC_F32, 1, D(3), D(1, 1, 2)), NULL,
                  "linear", NULL));
  NH_CHECK(h.out[0], 3, ((int64_t[]){1, 0, 4}), NULL, 0);
  nh_end(&h);
}

/* Empty tensors with huge other dims: products of dims must not overflow. */
static void test_huge_empty(void) {
  node_harness_t h;
  int64_t big[3] = {INT64_C(1) << 40, 0, INT64_C(1) << 40};
  CHECK_OK(cumsum(&h, nh_tensor(XC_F32, 3, big, NULL), 2, 0, 0));
  NH_CHECK(h.out[0], 3, big, NULL, 0);
  nh_end(&h);
  xc_tensor_t* g[2] = {nh_tensor(XC_F32, 3, big, NULL), I64(2, D(0, 1), D(0))};
  CHECK_OK(nh_begin(&h, "GatherND", 2, g, NULL, 1));
  CHECK_OK(nh_run(&h));
  NH_CHECK(h.out[0], 3, ((int64_t[]){0, 0, INT64_C(1) << 40}), NULL, 0);
  nh_end(&h);
  CHECK_ERR(argop(&h, "ArgMax", nh_tensor(XC_F32, 3, big, NULL), 1, 1, 0), "overflow");
  nh_end(&h);
  CHECK_OK(topk(&h, nh_tensor(XC_F32, 3, big, NULL), 0, 1, 1));
  NH_CHECK(h.out[0], 3, big, NULL, 0);
  nh_end(&h);
}

static void test_symbolic(void) {
  xc_graph_t* g;
  CHECK_OK(xc_graph_create("s", &g));
  xc_dim_t n = xc_dim_var(g, "N"), hh = xc_dim_var(g, "H");
  xc_value_t *x, *sc, *k, *rk, *y, *tv, *ti, *uv, *ui, *am;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 4,
                              (xc_dim_t[]){n, xc_dim_const(3), hh, xc_dim_const(5)}, &x));
  CHECK_OK(xc_graph_add_input(g, x));
  CHECK_OK(xc_graph_add_initializer(g, "sc", T(XC_F32, 1, D(4), D(1, 1, 2, 0.5)), &sc));
  CHECK_OK(xc_graph_add_initializer(g, "k", I64(1, D(1), D(2)), &k));
  CHECK_OK(xc_graph_add_value(g, "rk", XC_I64, 1, (xc_dim_t[]){xc_dim_const(1)}, &rk));
  CHECK_OK(xc_graph_add_input(g, rk));
  const char* names[] = {"y", "tv", "ti", "uv", "ui", "am"};
  xc_value_t** outs[] = {&y, &tv, &ti, &uv, &ui, &am};
  for (int i = 0; i < 6; i++) {
    CHECK_OK(xc_graph_add_value(g, names[i], XC_DTYPE_UNDEFINED, -1, NULL, outs[i]));
    CHECK_OK(xc_graph_add_output(g, *outs[i]));
  }
  xc_node_t* nd;
  CHECK_OK(xc_graph_add_node(g, "Resize", "", "r", 3, (xc_value_t*[]){x, NULL, sc}, 1, &y, &nd));
  CHECK_OK(xc_graph_add_node(g, "TopK", "", "t", 2, (xc_value_t*[]){x, k}, 2,
                             (xc_value_t*[]){tv, ti}, &nd));
  CHECK_OK(xc_graph_add_node(g, "TopK", "", "u", 2, (xc_value_t*[]){x, rk}, 2,
                             (xc_value_t*[]){uv, ui}, &nd));
  CHECK_OK(xc_node_set_int(g, nd, "axis", 2));
  CHECK_OK(xc_graph_add_node(g, "ArgMax", "", "a", 1, &x, 1, &am, &nd));
  CHECK_OK(xc_node_set_int(g, nd, "axis", 2));
  CHECK_OK(xc_node_set_int(g, nd, "keepdims", 0));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_verify(g));
  CHECK_OK(xc_graph_infer(g));
  CHECK(y->rank == 4 && xc_dim_equal(y->dims[0], n) && y->dims[1].value == 3 &&
        xc_dim_equal(y->dims[2], xc_dim_mul(g, hh, xc_dim_const(2))) && y->dims[3].value == 2);
  char buf[128];
  CHECK_STR(xc_value_describe(tv, buf, sizeof buf), "f32[N,3,H,2]");
  CHECK_STR(xc_value_describe(ti, buf, sizeof buf), "i64[N,3,H,2]");
  CHECK(uv->rank == 4 && uv->dims[2].sym != NULL && !xc_dim_equal(uv->dims[2], hh));
  CHECK_STR(xc_value_describe(am, buf, sizeof buf), "i64[N,3,5]");
  xc_graph_destroy(g);

  /* scales of unknown length next to constant sizes: sizes decide. */
  CHECK_OK(xc_graph_create("s2", &g));
  xc_value_t *x2, *sc2, *sz2, *y2;
  CHECK_OK(xc_graph_add_value(g, "x", XC_F32, 2, (xc_dim_t[]){xc_dim_const(2), xc_dim_const(2)},
                              &x2));
  CHECK_OK(xc_graph_add_input(g, x2));
  CHECK_OK(xc_graph_add_value(g, "sc", XC_F32, 1, (xc_dim_t[]){xc_dim_var(g, "L")}, &sc2));
  CHECK_OK(xc_graph_add_input(g, sc2));
  CHECK_OK(xc_graph_add_initializer(g, "sz", I64(1, D(2), D(3, 5)), &sz2));
  CHECK_OK(xc_graph_add_value(g, "y", XC_DTYPE_UNDEFINED, -1, NULL, &y2));
  CHECK_OK(xc_graph_add_output(g, y2));
  CHECK_OK(
      xc_graph_add_node(g, "Resize", "", "r", 4, (xc_value_t*[]){x2, NULL, sc2, sz2}, 1, &y2, &nd));
  CHECK_OK(xc_graph_resolve_ops(g));
  CHECK_OK(xc_graph_infer(g));
  CHECK_STR(xc_value_describe(y2, buf, sizeof buf), "f32[3,5]");
  xc_graph_destroy(g);
}

int main(void) {
  test_gather_elements();
  test_gather_nd();
  test_scatter_elements();
  test_scatter_nd();
  test_arg();
  test_topk();
  test_cumsum();
  test_resize();
  test_unique();
  test_empty_tensors();
  test_huge_empty();
  test_symbolic();
  return xc_test_summary("test_ops_index");
}
