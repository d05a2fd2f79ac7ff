/* The padding check of shape buckets (passes/padding.c): exported
 * transformers with a dynamic sequence (causal masks built from Trilu,
 * GQA's Expand/Reshape, RoPE's Range, an additive attention mask from an
 * input) pass, as loaded and after the pass pipeline; graphs where padded
 * positions reach kept ones are refused naming the node. */
#include "graph_test_util.h"
#include "test.h"
#include "xcomp/frontend.h"
#include "xcomp/passes.h"

static xc_graph_t* load(const char* path, int optimize) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_load_model(path, &g);
  if (!s) s = xc_graph_infer(g);
  if (!s && optimize) {
    xc_pass_options_t o;
    xc_pass_options_init(&o);
    if (optimize == 2) o.precision = XC_BF16;
    s = xc_passes_run(g, &o);
  }
  if (s) {
    fprintf(stderr, "%s: %s\n", path, xc_status_message(s));
    xc_status_free(s);
    xc_graph_destroy(g);
    return NULL;
  }
  return g;
}

static void test_exported_models(void) {
  const char* models[] = {"tests/dynamic/gpt2-dyn/model.onnx", "tests/dynamic/llama-dyn/model.onnx",
                          "tests/dynamic/encoder-dyn/model.onnx"};
  for (int i = 0; i < 3; i++)
    for (int opt = 0; opt < 3; opt++) {
      /* as loaded, optimized, and optimized in bf16 (BERT's -10000 mask
       * is -9984 there) */
      xc_graph_t* g = load(models[i], opt);
      CHECK(g != NULL);
      if (!g) continue;
      char why[320];
      bool ok = xc_padding_check(g, "seq", why, sizeof why);
      if (!ok) fprintf(stderr, "%s (optimized %d): %s\n", models[i], opt, why);
      CHECK(ok);
      /* a symbol no input has: nothing is padded, nothing to refuse */
      CHECK(xc_padding_check(g, "nosuch", why, sizeof why));
      xc_graph_destroy(g);
    }
}

/* Expects a refusal whose message names `node`. */
static void expect_refused(const char* text, const char* node) {
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  char why[320];
  bool ok = xc_padding_check(g, "seq", why, sizeof why);
  CHECK(!ok);
  if (!ok && !strstr(why, node)) {
    fprintf(stderr, "refusal does not name '%s': %s\n", node, why);
    CHECK(false);
  }
  xc_graph_destroy(g);
}

static void expect_allowed(const char* text) {
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  char why[320];
  bool ok = xc_padding_check(g, "seq", why, sizeof why);
  if (!ok) fprintf(stderr, "refused: %s\n", why);
  CHECK(ok);
  xc_graph_destroy(g);
}

static void test_refusals(void) {
  /* Attention over all keys, no mask: zero-padded keys get softmax weight. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n"
                 "  kt = Transpose(x) {perm: [0, 2, 1]}\n  s = MatMul(x, kt)\n"
                 "  p = Softmax(s) {axis: -1} @soft\n  y = MatMul(p, x)\n  output y\n}\n",
                 "soft");
  /* A mean over the sequence divides by the bucket size. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  const ax: i64[1] = [1]\n"
                 "  m = ReduceMean(x, ax) {keepdims: 1} @mean\n  output m\n}\n",
                 "mean");
  /* The size itself as a number in the data. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  sh = Shape(x)\n"
                 "  const i1: i64[] = 1\n  n = Gather(sh, i1) {axis: 0}\n  nf = Cast(n) {to: 1}\n"
                 "  y = Div(x, nf) @bylen\n  output y\n}\n",
                 "bylen");
  /* A reversed sequence moves padding to the front. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  const st: i64[1] = [-1]\n"
                 "  const en: i64[1] = [-9223372036854775807]\n  const ax: i64[1] = [1]\n  const sp: i64[1] = [-1]\n"
                 "  y = Slice(x, st, en, ax, sp) @flip\n  output y\n}\n",
                 "flip");
  /* A convolution along the sequence mixes neighbours. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, 4, seq]\n  input w: f32[4, 4, 3]\n"
                 "  y = Conv(x, w) {pads: [1, 1]} @conv\n  output y\n}\n",
                 "conv");
  /* A mean over the valid positions: sum(mask * x) / sum(mask) is exact;
   * but x / mask is infinite at padded positions, and even times a zero
   * weight it would be NaN in the sum. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  input m: f32[1, seq]\n"
                 "  const ax: i64[1] = [2]\n  mm = Unsqueeze(m, ax)\n  w = Div(x, mm)\n"
                 "  mt = Transpose(mm) {perm: [0, 2, 1]}\n  p = MatMul(mt, w) @wild\n  output p\n}\n",
                 "wild");
  /* The sequence length as an output. */
  expect_refused("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  sh = Shape(x)\n  output sh\n}\n",
                 "sh");
}

static void test_allowed(void) {
  /* Masked pooling: (mask^T x) contracts over the padded dim with zeros. */
  expect_allowed("xir 1\ngraph g opset 23 {\n  input x: f32[1, seq, 8]\n  input m: f32[1, seq]\n"
                 "  const ax: i64[1] = [1]\n  mm = Unsqueeze(m, ax)\n  p = MatMul(mm, x)\n  output p\n}\n");
  /* Row-wise ops and a causal Attention op. */
  expect_allowed("xir 1\ngraph g opset 23 {\n  input x: f32[1, 2, seq, 8]\n"
                 "  input g1: f32[8]\n  y = Attention(x, x, x) {is_causal: 1}\n"
                 "  n = LayerNormalization(y, g1) {axis: -1}\n  r = Relu(n)\n  output r\n}\n");
  /* A boolean mask input that is false at padded keys (padded with zeros). */
  expect_allowed("xir 1\ngraph g opset 23 {\n  input x: f32[1, 2, seq, 8]\n  input m: bool[1, 1, 1, seq]\n"
                 "  y = Attention(x, x, x, m)\n  output y\n}\n");
}

int main(void) {
  test_exported_models();
  test_refusals();
  test_allowed();
  return xc_test_summary("test_padding");
}
