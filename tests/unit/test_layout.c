/* Tests of the layout pass and the channels-last composites (xcomp.ConvNHWC,
 * MaxPoolNHWC, AveragePoolNHWC): hand-computed convolutions, CNNs moved to
 * NHWC keep their values and end with at most one Transpose per boundary,
 * and an NCHW target leaves the graph alone. */
#include "graph_test_util.h"
#include "test.h"
#include "xcomp/frontend.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "xcomp/tensor_io.h"
#include "xcomp/xir.h"



/* Transposes reading a graph input, and transposes whose result reaches a
 * graph output through views only. */
static void boundary_transposes(const xc_graph_t* g, int* at_input, int* at_output) {
  *at_input = *at_output = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (strcmp(n->op_type, "Transpose") != 0) continue;
    if (n->inputs[0]->flags & XC_VALUE_INPUT) (*at_input)++;
    else (*at_output)++;
  }
}

static xc_tensor_t* run1(const xc_graph_t* g, const xc_tensor_t* in) {
  xc_tensor_t* outs[1] = {NULL};
  const xc_tensor_t* ins[1] = {in};
  xc_status_t s = xc_interp_run(g, NULL, 1, ins, outs);
  if (s) {
    fprintf(stderr, "run: %s\n", xc_status_message(s));
    xc_status_free(s);
    return NULL;
  }
  return outs[0];
}

static double max_abs_diff(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel) return 1e30;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 1e30;
  double m = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double d = fabs(xc_tensor_get_f64(a, i) - xc_tensor_get_f64(b, i));
    if (d > m) m = d;
  }
  return m;
}

static xc_status_t run_nhwc(xc_graph_t* g) {
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  o.target.preferred_layout = XC_LAYOUT_NHWC;
  return xc_passes_run(g, &o);
}

static void test_conv_nhwc_by_hand(void) {
  /* X [1,1,1,2] = (1, 2); W [3,1,1,2] rows (1,0), (0,1), (1,1); bias (0, 10, 100). */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 1, 1, 2]\n"
      "  const w: f32[3, 1, 1, 2] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]\n"
      "  const b: f32[3] = [0.0, 10.0, 100.0]\n"
      "  y = xcomp::ConvNHWC(x, w, b) {kernel_shape: [1, 1]}\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  CHECK_EQ_INT(g->outputs[0]->rank, 4);
  CHECK_EQ_INT(g->outputs[0]->dims[3].value, 3);
  int64_t d[4] = {1, 1, 1, 2};
  xc_tensor_t* x;
  CHECK_OK(xc_tensor_create(XC_F32, 4, d, &x));
  xc_tensor_set_f64(x, 0, 1);
  xc_tensor_set_f64(x, 1, 2);
  xc_tensor_t* y = run1(g, x);
  CHECK(y != NULL);
  if (y) {
    CHECK_NEAR(xc_tensor_get_f64(y, 0), 1.0, 0);
    CHECK_NEAR(xc_tensor_get_f64(y, 1), 12.0, 0);
    CHECK_NEAR(xc_tensor_get_f64(y, 2), 103.0, 0);
  }
  xc_tensor_destroy(x);
  xc_tensor_destroy(y);
  xc_graph_destroy(g);
}

static void test_conv_nhwc_hwio(void) {
  /* The weights of test_conv_nhwc_by_hand as HWIO [1,1,2,3]: input channel 0
   * gives (1, 0, 1), input channel 1 (0, 1, 1). Same output. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 1, 1, 2]\n"
      "  const w: f32[1, 1, 2, 3] = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]\n"
      "  const b: f32[3] = [0.0, 10.0, 100.0]\n"
      "  y = xcomp::ConvNHWC(x, w, b) {kernel_shape: [1, 1], weight_layout: \"HWIO\"}\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  CHECK_EQ_INT(g->outputs[0]->dims[3].value, 3);
  int64_t d[4] = {1, 1, 1, 2};
  xc_tensor_t* x;
  CHECK_OK(xc_tensor_create(XC_F32, 4, d, &x));
  xc_tensor_set_f64(x, 0, 1);
  xc_tensor_set_f64(x, 1, 2);
  xc_tensor_t* y = run1(g, x);
  CHECK(y != NULL);
  if (y) {
    CHECK_NEAR(xc_tensor_get_f64(y, 0), 1.0, 0);
    CHECK_NEAR(xc_tensor_get_f64(y, 1), 12.0, 0);
    CHECK_NEAR(xc_tensor_get_f64(y, 2), 103.0, 0);
  }
  xc_tensor_destroy(x);
  xc_tensor_destroy(y);
  xc_graph_destroy(g);
  /* an unknown layout is refused by shape inference */
  const char* bad =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 1, 1, 2]\n"
      "  const w: f32[1, 1, 2, 3] = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]\n"
      "  y = xcomp::ConvNHWC(x, w) {kernel_shape: [1, 1], weight_layout: \"IOHW\"}\n"
      "  output y\n}\n";
  g = parse(bad);
  CHECK(g == NULL);
  xc_graph_destroy(g);
}

static void test_conv_nhwc_spatial(void) {
  /* 3x3 image 1..9 (one channel), 2x2 kernel of ones, stride 1, pad 0:
   * sums of 2x2 windows = 12, 16, 24, 28. Two output channels: ones and
   * a kernel picking the top-left tap (1, 2, 4, 5). Output [1,2,2,2]. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 3, 3, 1]\n"
      "  const w: f32[2, 2, 2, 1] = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]\n"
      "  y = xcomp::ConvNHWC(x, w)\n"
      "  p = xcomp::MaxPoolNHWC(x) {kernel_shape: [2, 2], strides: [1, 1]}\n"
      "  q = xcomp::AveragePoolNHWC(x) {kernel_shape: [3, 3]}\n"
      "  output y\n  output p\n  output q\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  int64_t d[4] = {1, 3, 3, 1};
  xc_tensor_t* x;
  CHECK_OK(xc_tensor_create(XC_F32, 4, d, &x));
  for (int i = 0; i < 9; i++) xc_tensor_set_f64(x, i, i + 1);
  xc_tensor_t* outs[3] = {NULL, NULL, NULL};
  const xc_tensor_t* ins[1] = {x};
  CHECK_OK(xc_interp_run(g, NULL, 1, ins, outs));
  if (outs[0] && outs[1] && outs[2]) {
    const double want[8] = {12, 1, 16, 2, 24, 4, 28, 5};
    for (int i = 0; i < 8; i++) CHECK_NEAR(xc_tensor_get_f64(outs[0], i), want[i], 0);
    const double pmax[4] = {5, 6, 8, 9};
    for (int i = 0; i < 4; i++) CHECK_NEAR(xc_tensor_get_f64(outs[1], i), pmax[i], 0);
    CHECK_EQ_INT(outs[2]->numel, 1);
    CHECK_NEAR(xc_tensor_get_f64(outs[2], 0), 5.0, 1e-6);
  }
  for (int i = 0; i < 3; i++) xc_tensor_destroy(outs[i]);
  xc_tensor_destroy(x);
  xc_graph_destroy(g);
}

/* Deterministic weights in [-0.5, 0.5). */
static void fill_pattern(xc_tensor_t* t, int seed) {
  for (int64_t i = 0; i < t->numel; i++)
    xc_tensor_set_f64(t, i, (double)(((i + seed) * 37 + seed * 11) % 23) / 23.0 - 0.5);
}

static const char* small_cnn_fmt =
    "xir 1\ngraph cnn opset 23 {\n"
    "  input x: f32[2, 3, 8, 8]\n"
    "  const w1: f32[4, 3, 3, 3] = %s\n"
    "  const b1: f32[4] = [0.1, -0.2, 0.3, 0.0]\n"
    "  const s: f32[4] = [1.0, 0.5, 2.0, 1.5]\n"
    "  const bb: f32[4] = [0.0, 0.1, -0.1, 0.2]\n"
    "  const mu: f32[4] = [0.05, -0.05, 0.1, 0.0]\n"
    "  const va: f32[4] = [1.0, 2.0, 0.5, 1.0]\n"
    "  const w2: f32[4, 2, 3, 3] = %s\n"
    "  const cb: f32[4, 1, 1] = [1.0, 2.0, 3.0, 4.0]\n"
    "  c1 = Conv(x, w1, b1) {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}\n"
    "  r1 = Relu(c1)\n"
    "  p0 = MaxPool(r1) {kernel_shape: [2, 2], strides: [2, 2]}\n"
    "  p1 = BatchNormalization(p0, s, bb, mu, va)\n"
    "  c2 = Conv(p1, w2) {group: 2, dilations: [2, 2], pads: [2, 2, 2, 2]}\n"
    "  a2 = Add(c2, p1)\n"
    "  m2 = Mul(a2, cb)\n"
    "  r2 = Relu(m2)\n"
    "  p2 = AveragePool(r2) {kernel_shape: [2, 2], strides: [2, 2]}\n"
    "  gp = GlobalAveragePool(p2)\n"
    "  y = Flatten(gp)\n"
    "  output y\n}\n";

/* "[v0, v1, ...]" with n pattern values. */
static void pattern_list(char* buf, size_t size, int n, int seed) {
  size_t at = 0;
  at += (size_t)snprintf(buf + at, size - at, "[");
  for (int i = 0; i < n && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%.6f", i ? ", " : "",
                           (double)(((i + seed) * 37 + seed * 11) % 23) / 23.0 - 0.5);
  if (at < size) snprintf(buf + at, size - at, "]");
}

static xc_graph_t* parse_small_cnn(void) {
  static char w1[4096], w2[4096], text[16384];
  pattern_list(w1, sizeof w1, 4 * 3 * 3 * 3, 1);
  pattern_list(w2, sizeof w2, 4 * 2 * 3 * 3, 2);
  snprintf(text, sizeof text, small_cnn_fmt, w1, w2);
  return parse(text);
}

static void test_small_cnn_to_nhwc(void) {
  xc_graph_t* g = parse_small_cnn();
  CHECK(g != NULL);
  if (!g) return;
  int64_t d[4] = {2, 3, 8, 8};
  xc_tensor_t* x;
  CHECK_OK(xc_tensor_create(XC_F32, 4, d, &x));
  fill_pattern(x, 5);
  xc_tensor_t* before = run1(g, x);
  CHECK_OK(run_nhwc(g));
  xc_tensor_t* after = run1(g, x);
  CHECK(before && after);
  CHECK(max_abs_diff(before, after) < 1e-5);
  CHECK_EQ_INT(count_op(g, "Conv"), 0);
  CHECK_EQ_INT(count_op(g, "ConvNHWC"), 2);
  CHECK_EQ_INT(count_op(g, "MaxPoolNHWC"), 1);
  CHECK_EQ_INT(count_op(g, "AveragePoolNHWC"), 1);
  CHECK_EQ_INT(count_op(g, "BatchNormalization"), 0);
  CHECK_EQ_INT(count_op(g, "Mul"), 2); /* BatchNormalization's scale and m2 */
  int tin, tout;
  boundary_transposes(g, &tin, &tout);
  CHECK(tin <= 1);
  CHECK(tout <= 1);
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  xc_tensor_destroy(x);
  xc_graph_destroy(g);
}

static void test_symbolic_batch(void) {
  /* The same network with a symbolic batch: inference of the composites
   * keeps the symbol; values agree on a batch of 3. */
  static char w1[4096], w2[4096], text[16384], fmt[4096];
  const char* at = strstr(small_cnn_fmt, "f32[2, 3, 8, 8]");
  CHECK(at != NULL);
  if (!at) return;
  size_t pre = (size_t)(at - small_cnn_fmt);
  snprintf(fmt, sizeof fmt, "%.*sf32[n, 3, 8, 8]%s", (int)pre, small_cnn_fmt, at + strlen("f32[2, 3, 8, 8]"));
  pattern_list(w1, sizeof w1, 4 * 3 * 3 * 3, 1);
  pattern_list(w2, sizeof w2, 4 * 2 * 3 * 3, 2);
  snprintf(text, sizeof text, fmt, w1, w2);
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  int64_t d[4] = {3, 3, 8, 8};
  xc_tensor_t* x;
  CHECK_OK(xc_tensor_create(XC_F32, 4, d, &x));
  fill_pattern(x, 9);
  xc_tensor_t* before = run1(g, x);
  CHECK_OK(run_nhwc(g));
  CHECK_EQ_INT(count_op(g, "ConvNHWC"), 2);
  CHECK(!xc_dim_is_static(g->outputs[0]->dims[0]));
  xc_tensor_t* after = run1(g, x);
  CHECK(before && after);
  CHECK(max_abs_diff(before, after) < 1e-5);
  int tin, tout;
  boundary_transposes(g, &tin, &tout);
  CHECK_EQ_INT(tin, 1);
  CHECK(tout <= 1);
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  xc_tensor_destroy(x);
  xc_graph_destroy(g);
}

static void test_runtime_weights(void) {
  /* Weights and bias fed at run time (a grouped, padded conv): the weights
   * reach the channels-last conv through a Transpose to HWIO, and the values
   * stay. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 4, 6, 5]\n"
      "  input w: f32[6, 2, 3, 2]\n"
      "  input b: f32[6]\n"
      "  c = Conv(x, w, b) {group: 2, pads: [1, 0, 1, 1], strides: [1, 2]}\n"
      "  y = Relu(c)\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  int64_t dx[4] = {2, 4, 6, 5}, dw[4] = {6, 2, 3, 2}, db[1] = {6};
  xc_tensor_t *x, *w, *b;
  CHECK_OK(xc_tensor_create(XC_F32, 4, dx, &x));
  CHECK_OK(xc_tensor_create(XC_F32, 4, dw, &w));
  CHECK_OK(xc_tensor_create(XC_F32, 1, db, &b));
  fill_pattern(x, 3);
  fill_pattern(w, 4);
  fill_pattern(b, 5);
  const xc_tensor_t* ins[3] = {x, w, b};
  xc_tensor_t *before = NULL, *after = NULL;
  CHECK_OK(xc_interp_run(g, NULL, 3, ins, &before));
  CHECK_OK(run_nhwc(g));
  CHECK_EQ_INT(count_op(g, "Conv"), 0);
  CHECK_EQ_INT(count_op(g, "ConvNHWC"), 1);
  int wt = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (strcmp(n->op_type, "Transpose") != 0 || n->inputs[0] != g->inputs[1]) continue;
    int64_t c = 0;
    const int64_t* p = xc_node_attr_ints(n, "perm", &c);
    CHECK(c == 4 && p[0] == 2 && p[1] == 3 && p[2] == 1 && p[3] == 0);
    wt++;
  }
  CHECK_EQ_INT(wt, 1);
  CHECK_OK(xc_interp_run(g, NULL, 3, ins, &after));
  CHECK(before && after);
  CHECK(max_abs_diff(before, after) < 1e-5);
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  xc_tensor_destroy(x);
  xc_tensor_destroy(w);
  xc_tensor_destroy(b);
  xc_graph_destroy(g);
}

static void test_nchw_target_unchanged(void) {
  xc_graph_t* g = parse_small_cnn();
  CHECK(g != NULL);
  if (!g) return;
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_STR(o.target.name, "ref");
  CHECK(o.target.preferred_layout == XC_LAYOUT_NCHW);
  bool changed = false;
  CHECK_OK(xc_pass_layout(g, &o, &changed));
  CHECK(!changed);
  CHECK_EQ_INT(count_op(g, "Conv"), 2);
  CHECK_EQ_INT(count_op(g, "Transpose"), 0);
  xc_graph_destroy(g);
}

static void test_shared_cnn(void) {
  const char* dir = "tests/models/cnn";
  xc_graph_t* g = NULL;
  xc_status_t s = xc_load_model("tests/models/cnn/model.onnx", &g);
  if (s) {
    fprintf(stderr, "skipping %s: %s\n", dir, xc_status_message(s));
    xc_status_free(s);
    return;
  }
  CHECK_OK(xc_graph_infer(g));
  xc_tensor_t *x = NULL, *want = NULL;
  CHECK_OK(xc_tensor_read_file("tests/models/cnn/test_data_set_0/input_0.pb", &x, NULL));
  CHECK_OK(xc_tensor_read_file("tests/models/cnn/test_data_set_0/output_0.pb", &want, NULL));
  CHECK_OK(run_nhwc(g));
  CHECK_EQ_INT(count_op(g, "ConvNHWC"), 2);
  CHECK_EQ_INT(count_op(g, "Conv"), 0);
  int tin, tout;
  boundary_transposes(g, &tin, &tout);
  CHECK_EQ_INT(tin, 1);
  CHECK(tout <= 1);
  xc_tensor_t* got = x ? run1(g, x) : NULL;
  CHECK(got != NULL);
  CHECK(max_abs_diff(got, want) < 1e-4);
  xc_tensor_destroy(got);
  xc_tensor_destroy(x);
  xc_tensor_destroy(want);
  xc_graph_destroy(g);
}

int main(void) {
  test_conv_nhwc_by_hand();
  test_conv_nhwc_hwio();
  test_conv_nhwc_spatial();
  test_small_cnn_to_nhwc();
  test_symbolic_batch();
  test_runtime_weights();
  test_nchw_target_unchanged();
  test_shared_cnn();
  return xc_test_summary("test_layout");
}
