/* Row reductions in lanes and view offsets split by their ranges, on the
 * cpu target (docs/emitter.md, "Row reductions in lanes" and "Offsets
 * through reshaped views"). Each graph goes through the whole pipeline for
 * cpu, and
 *   - the emitted source must fold its short rows' max and sum in lanes
 *     (`xl[xj]`, then a tree), and read the head views of the attention
 *     operands row by row (`if (xrows`: their offsets through the view's
 *     division and remainder proved contiguous along each row),
 *   - the outputs (poisoned before the run) must match the interpreter.
 * A tree that dropped a level, or a lane loop (fused sum or max) that
 * skipped the last vector of a row, fails here. */
#include "cpu_case.h"

typedef struct rcase {
  const char* name;
  const char* text;
  const char* knobs;   /* XCOMP_KNOBS-style overrides, or NULL */
  bool lanes, rows;    /* the source must show the lanes form, the row copies */
} rcase_t;

/* attention over 100 positions, 4 heads of 16, through head views */
#define ATTENTION_S100                                                                                         \
  "xir 1\ngraph attention opset 23 {\n"                                                                       \
  "  input ql: f32[1, 100, 64]\n  input kl: f32[1, 100, 64]\n  input vl: f32[1, 100, 64]\n"                  \
  "  const hs: i64[4] = [1, 100, 4, 16]\n  const os: i64[3] = [1, 100, 64]\n"                                 \
  "  q1 = Reshape(ql, hs)\n  k1 = Reshape(kl, hs)\n  v1 = Reshape(vl, hs)\n"                                 \
  "  q = Transpose(q1) {perm: [0, 2, 1, 3]}\n  k = Transpose(k1) {perm: [0, 2, 1, 3]}\n"                      \
  "  v = Transpose(v1) {perm: [0, 2, 1, 3]}\n  a = Attention(q, k, v) {scale: 0.25}\n"                        \
  "  t = Transpose(a) {perm: [0, 2, 1, 3]}\n  y = Reshape(t, os)\n  output y\n}\n"

static const rcase_t cases[] = {
    {"attention through head views, S = 37 (a ragged key block), 4 heads of 16",
     "xir 1\ngraph attention opset 23 {\n"
     "  input ql: f32[1, 37, 64]\n  input kl: f32[1, 37, 64]\n  input vl: f32[1, 37, 64]\n"
     "  const hs: i64[4] = [1, 37, 4, 16]\n  const os: i64[3] = [1, 37, 64]\n"
     "  q1 = Reshape(ql, hs)\n  k1 = Reshape(kl, hs)\n  v1 = Reshape(vl, hs)\n"
     "  q = Transpose(q1) {perm: [0, 2, 1, 3]}\n  k = Transpose(k1) {perm: [0, 2, 1, 3]}\n"
     "  v = Transpose(v1) {perm: [0, 2, 1, 3]}\n  a = Attention(q, k, v) {scale: 0.25}\n"
     "  t = Transpose(a) {perm: [0, 2, 1, 3]}\n  y = Reshape(t, os)\n  output y\n}\n",
     NULL, true, true},
    {"causal attention through head views, S = 40, 2 heads of 32, key blocks of 32",
     "xir 1\ngraph attention opset 23 {\n"
     "  input ql: f32[1, 40, 64]\n  input kl: f32[1, 40, 64]\n  input vl: f32[1, 40, 64]\n"
     "  const hs: i64[4] = [1, 40, 2, 32]\n  const os: i64[3] = [1, 40, 64]\n"
     "  q1 = Reshape(ql, hs)\n  k1 = Reshape(kl, hs)\n  v1 = Reshape(vl, hs)\n"
     "  q = Transpose(q1) {perm: [0, 2, 1, 3]}\n  k = Transpose(k1) {perm: [0, 2, 1, 3]}\n"
     "  v = Transpose(v1) {perm: [0, 2, 1, 3]}\n  a = Attention(q, k, v) {is_causal: 1, scale: 0.2}\n"
     "  t = Transpose(a) {perm: [0, 2, 1, 3]}\n  y = Reshape(t, os)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32", true, true},
    /* tiles 64x64 (heads of 16 over 100 positions): one full and one
     * ragged block of queries and keys, score rows of four vectors */
    {"attention through head views, S = 100, 4 heads of 16, 64x64 tiles",
     ATTENTION_S100,
     "BLOCK_M_p0=64,BLOCK_N_p0=64", true, true},
    /* the defaults: tiles as even as the blocked dot allows, two blocks of
     * 56 queries (8-row blocks) and one of 112 keys (104 on 8 lanes), a
     * ragged tail of 12 in each */
    {"attention through head views, S = 100, 4 heads of 16, default even tiles",
     ATTENTION_S100,
     NULL, true, true},
    /* channels-last max pools, their taps unrolled (clamped loads, -inf
     * outside the window): padding on every side, ragged pixel tiles, NaN
     * and -inf inputs left to the interpreter's comparison */
    {"MaxPool 3x3 stride 2 pad 1 over [1, 9, 11, 24] channels last (edges, a ragged pixel tile)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 9, 11, 24]\n"
     "  y = xcomp::MaxPoolNHWC(x) {kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]}\n  output y\n}\n",
     NULL, false, false},
    {"MaxPool 2x2 stride 2 over [2, 8, 8, 16] channels last (cnn's pool)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 8, 8, 16]\n"
     "  y = xcomp::MaxPoolNHWC(x) {kernel_shape: [2, 2], strides: [2, 2]}\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_C_p0=8", false, false},
    {"ReduceMax and ReduceSum over rows of 64 (four vectors a row)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[24, 64]\n  const ax: i64[1] = [1]\n"
     "  m = ReduceMax(x, ax) {keepdims: 1}\n  s = ReduceSum(x, ax) {keepdims: 1}\n"
     "  y = Add(m, s)\n  output y\n}\n",
     NULL, true, false},
};

static void check_case(const rcase_t* c) {
  xc_tensor_t* in[CPU_CASE_MAX_IN], *want = NULL;
  int ni = 0;
  const char* src;
  xc_compiled_module_t* m = cpu_case_build(c->text, "reduce.xir", c->knobs, 0.25, &ni, in, &want, &src);
  if (!m) return; /* cpu_case_build freed the case */
  bool lanes = strstr(src, "xl[xj] = xl[xj] + xl[xj + 1]") != NULL || strstr(src, "XC_MAX(xl[xj], xl[xj + 1])") != NULL;
  bool rows = cpu_case_rows_split(src);
  CHECK(lanes == c->lanes);
  CHECK(!c->rows || rows);
  if (strstr(c->name, "default even tiles"))
    CHECK(strstr(src, "= 56; /* BLOCK_M_p0 */") != NULL &&
          (strstr(src, "= 112; /* BLOCK_N_p0 */") != NULL || strstr(src, "= 104; /* BLOCK_N_p0 */") != NULL));
  char label[256];
  snprintf(label, sizeof label, "%s:%s%s", c->name, lanes ? " lanes" : "", rows ? ", rows" : "");
  cpu_case_check_free(m, ni, in, want, label);
}

int main(void) {
  if (cpu_case_have_cpu())
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_reduce");
}
