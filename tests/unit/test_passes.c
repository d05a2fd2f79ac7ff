/* Tests of the pass manager and the cleanup passes: each rewrite happens
 * (node counts and ops after the pass), and the graph computes the same
 * values before and after (interpreter on fixed inputs). */
#include "graph_test_util.h"
#include "test.h"
#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "xcomp/xir.h"



/* Runs g on one f32 input of shape dims filled with a fixed pattern and
 * returns output 0 (caller frees). */
static xc_tensor_t* run_pattern(const xc_graph_t* g, int rank, const int64_t* dims) {
  xc_tensor_t* in;
  if (xc_tensor_create(XC_F32, rank, dims, &in)) return NULL;
  for (int64_t i = 0; i < in->numel; i++) xc_tensor_set_f64(in, i, (double)((i * 7) % 11) - 5.0);
  xc_tensor_t* outs[4] = {0};
  const xc_tensor_t* ins[1] = {in};
  xc_status_t s = xc_interp_run(g, NULL, 1, ins, outs);
  xc_tensor_destroy(in);
  if (s) {
    fprintf(stderr, "run: %s\n", xc_status_message(s));
    xc_status_free(s);
    return NULL;
  }
  for (int i = 1; i < g->num_outputs; i++) xc_tensor_destroy(outs[i]);
  return outs[0];
}

static bool same_values(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel || a->dtype != b->dtype) return false;
  for (int64_t i = 0; i < a->numel; i++)
    if (xc_tensor_get_f64(a, i) != xc_tensor_get_f64(b, i)) return false;
  return true;
}

/* Parses, runs, applies the -O2 pipeline, runs again; checks equality. */
static xc_graph_t* optimize_and_check(const char* text, int rank, const int64_t* dims) {
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return NULL;
  xc_tensor_t* before = run_pattern(g, rank, dims);
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_OK(xc_passes_run(g, &o));
  xc_tensor_t* after = run_pattern(g, rank, dims);
  CHECK(before != NULL && after != NULL);
  CHECK(same_values(before, after));
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  return g;
}

static void test_simplify_noops(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const zero: f32[1] = [0.0]\n"
      "  const one: f32[] = [1.0]\n"
      "  a = Identity(x)\n"
      "  b = Add(a, zero)\n"
      "  c = Mul(one, b)\n"
      "  d = Cast(c) {to: 1}\n"
      "  e, m = Dropout(d)\n"
      "  y = Relu(e)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {2, 3};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  CHECK_STR(g->nodes[0]->op_type, "Relu");
  CHECK(g->nodes[0]->inputs[0] == g->inputs[0]);
  CHECK_STR(g->outputs[0]->name, "y");
  xc_graph_destroy(g);
}

static void test_broadcasting_add_zero_is_kept(void) {
  /* x + zeros[4,2,3] changes the shape: it must not be removed. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const z: f32[2, 2, 3] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]\n"
      "  y = Add(x, z)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {2, 3};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Add"), 1);
  xc_graph_destroy(g);
}

static void test_transpose_and_reshape_chains(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const s1: i64[2] = [6, 4]\n"
      "  const s2: i64[3] = [4, 3, 2]\n"
      "  t1 = Transpose(x) {perm: [1, 0, 2]}\n"
      "  t2 = Transpose(t1) {perm: [2, 1, 0]}\n"
      "  t3 = Transpose(t2) {perm: [2, 1, 0]}\n"
      "  t4 = Transpose(t3) {perm: [1, 0, 2]}\n"
      "  r1 = Reshape(t4, s1)\n"
      "  r2 = Reshape(r1, s2)\n"
      "  output r2\n"
      "}\n";
  int64_t dims[3] = {2, 3, 4};
  xc_graph_t* g = optimize_and_check(text, 3, dims);
  if (!g) return;
  /* The four transposes compose to the identity; the reshapes merge. */
  CHECK_EQ_INT(count_op(g, "Transpose"), 0);
  CHECK_EQ_INT(count_op(g, "Reshape"), 1);
  xc_graph_destroy(g);
}

static void test_squeeze_unsqueeze(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const ax: i64[1] = [1]\n"
      "  u = Unsqueeze(x, ax)\n"
      "  s = Squeeze(u, ax)\n"
      "  y = Neg(s)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {2, 3};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_graph_destroy(g);
}

/* A zero Pad on spatial dims folds into the Conv it feeds (adding to the
 * Conv's own pads); a Pad by nothing goes; a Pad by a non-zero value, on
 * the channel dim, or read by something else than a Conv's X stays. */
static void test_pad_fold(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 2, 5, 5]\n"
      "  const w: f32[2, 1, 3, 3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, -1.0, -2.0, -3.0, 1.5, 2.5, 0.5, 1.0, 0.0, 2.0]\n"
      "  const none: i64[8] = [0, 0, 0, 0, 0, 0, 0, 0]\n"
      "  const sp: i64[8] = [0, 0, 1, 0, 0, 0, 1, 2]\n"
      "  const ch: i64[8] = [0, 1, 0, 0, 0, 0, 0, 0]\n"
      "  const zero: f32[] = [0.0]\n"
      "  const two: f32[] = [2.0]\n"
      "  a = Pad(x, none, zero)\n"
      "  b = Pad(a, sp, zero)\n"
      "  c = Conv(b, w) {group: 2, pads: [1, 1, 0, 0]}\n"
      "  d = Pad(c, sp, two)\n"
      "  e = Conv(d, w) {group: 2}\n"
      "  f = Pad(e, ch)\n"
      "  y = ReduceSum(f)\n"
      "  output y\n"
      "}\n";
  int64_t dims[4] = {1, 2, 5, 5};
  xc_graph_t* g = optimize_and_check(text, 4, dims);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Pad"), 2); /* the one by 2.0, the one on channels */
  const xc_node_t* conv = NULL;
  for (int i = 0; i < g->num_nodes; i++)
    if (!strcmp(g->nodes[i]->op_type, "Conv") && g->nodes[i]->inputs[0] == g->inputs[0]) conv = g->nodes[i];
  CHECK(conv != NULL);
  if (conv) {
    int64_t n = 0;
    const int64_t* p = xc_node_attr_ints(conv, "pads", &n);
    CHECK_EQ_INT((int)n, 4);
    if (p && n == 4) {
      CHECK_EQ_INT((int)p[0], 2);
      CHECK_EQ_INT((int)p[1], 1);
      CHECK_EQ_INT((int)p[2], 1);
      CHECK_EQ_INT((int)p[3], 2);
    }
  }
  xc_graph_destroy(g);
}

static void test_fold_cse_dce(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const a: f32[3] = [1.0, 2.0, 3.0]\n"
      "  const b: f32[3] = [0.5, 0.5, 0.5]\n"
      "  c = Mul(a, b)\n"            /* folds to a constant */
      "  d = Exp(c)\n"               /* folds too */
      "  p = Add(x, d)\n"
      "  q = Add(x, d)\n"            /* same as p: CSE */
      "  unused = Sigmoid(x)\n"      /* dead */
      "  y = Mul(p, q)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {2, 3};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(g->num_nodes, 2);
  CHECK_EQ_INT(count_op(g, "Add"), 1);
  CHECK_EQ_INT(count_op(g, "Sigmoid"), 0);
  CHECK_EQ_INT(count_op(g, "Exp"), 0);
  /* The merged Add remembers both source nodes. */
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, "Add") == 0) CHECK_EQ_INT(g->nodes[i]->prov.num_origins, 2);
  xc_graph_destroy(g);
}

static void test_fold_static_shapes(void) {
  /* Shape of an activation with static dims folds (its elements are known),
   * so the shape arithmetic after it folds and Expand gets static dims
   * (inference alone does not see through Div/Mod/And/Where). */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 4]\n"
      "  const two: i64[2] = [2, 2]\n"
      "  const zero: i64[2] = [0, 0]\n"
      "  s = Shape(x)\n"
      "  d = Div(s, two)\n"
      "  m = Mod(s, two)\n"
      "  z = Equal(m, zero)\n"
      "  nz = Not(z)\n"
      "  c = And(nz, z)\n"
      "  t = Where(c, d, s)\n"
      "  e = Expand(x, t)\n"
      "  y = Neg(e)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {2, 4};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Shape"), 0);
  CHECK_EQ_INT(count_op(g, "Where"), 0);
  const xc_value_t* y = g->outputs[0];
  CHECK_EQ_INT(y->rank, 2);
  CHECK(y->rank == 2 && !y->dims[0].sym && y->dims[0].value == 2 && !y->dims[1].sym && y->dims[1].value == 4);
  xc_graph_destroy(g);
}

static void test_fold_respects_size_limit(void) {
  /* Expanding a scalar to 64K elements would bloat the model: not folded. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[256, 256]\n"
      "  const s: f32[] = [2.0]\n"
      "  const shape: i64[2] = [256, 256]\n"
      "  e = Expand(s, shape)\n"
      "  y = Mul(x, e)\n"
      "  output y\n"
      "}\n";
  int64_t dims[2] = {256, 256};
  xc_graph_t* g = optimize_and_check(text, 2, dims);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Expand"), 1);
  xc_graph_destroy(g);
}

/* A weight's layout change folds even past fold_limit_bytes, so it is not a
 * kernel at every run; with the layout limit set low it stays. A weight read
 * both as it is and transposed (the embedding of a tied LM head) is not
 * copied at all, whatever the limit: the MatMul becomes a Gemm with transB on
 * the one weight. */
static void test_fold_layout_of_weights(void) {
  enum { R = 640, C = 512 }; /* 1.25 MiB of f32: over the 1 MiB general limit */
  size_t cap = (size_t)R * C * 2 + 512;
  char* text = malloc(cap);
  CHECK(text != NULL);
  if (!text) return;
  for (int tied = 0; tied < 2; tied++) {
    size_t n = (size_t)snprintf(text, cap,
                                "xir 1\ngraph g opset 23 {\n  input x: f32[2, %d]\n  input ids: i64[3]\n"
                                "  const w: f32[%d, %d] = [",
                                C, R, C);
    for (int i = 0; i < R * C; i++) {
      text[n++] = (char)('0' + i % 7);
      text[n++] = i + 1 < R * C ? ',' : ']';
    }
    snprintf(text + n, cap - n, "\n  t = Transpose(w) {perm: [1, 0]}\n  y = MatMul(x, t)\n%s  output y\n%s}\n",
             tied ? "  e = Gather(w, ids) {axis: 0}\n" : "", tied ? "  output e\n" : "");
    for (int low = 0; low < 2; low++) {
      xc_graph_t* g = parse(text);
      CHECK(g != NULL);
      if (!g) break;
      xc_pass_options_t o;
      xc_pass_options_init(&o);
      if (low) o.fold_layout_limit_bytes = 1 << 20;
      CHECK_OK(xc_passes_run(g, &o));
      CHECK_EQ_INT(count_op(g, "Transpose"), !tied && low ? 1 : 0);
      CHECK_EQ_INT(count_op(g, "Gemm"), tied ? 1 : 0);
      int weights = 0; /* constants of the weight's size: w or its transposed copy */
      for (int i = 0; i < g->num_values; i++)
        weights += g->values[i]->constant && g->values[i]->constant->numel == (int64_t)R * C;
      CHECK_EQ_INT(weights, 1);
      if (tied) CHECK_EQ_INT(count_op(g, "Gather"), 1);
      xc_graph_destroy(g);
    }
  }
  free(text);
}

/* Gemm(transB = 1) on a weight only it reads: on a target without matrix
 * instructions the weight is stored [K, N] (transposed once, transB
 * cleared) with the same results; with tensor cores, or when another node
 * reads the weight too, the Gemm keeps transB on the weight as it is. */
static void test_gemm_weights_k_major(void) {
  for (int c = 0; c < 3; c++) {
    char text[512];
    snprintf(text, sizeof text,
             "xir 1\ngraph g opset 23 {\n  input x: f32[2, 3]\n"
             "  const w: f32[4, 3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n"
             "  const b: f32[4] = [0.5, -1, 2, 0]\n"
             "  y = Gemm(x, w, b) {transB: 1}\n  output y\n%s}\n",
             c == 2 ? "  z = Neg(w)\n  output z\n" : "");
    xc_graph_t* g = parse(text);
    CHECK(g != NULL);
    if (!g) continue;
    int64_t dims[2] = {2, 3};
    xc_tensor_t* before = run_pattern(g, 2, dims);
    xc_pass_options_t o;
    xc_pass_options_init(&o);
    o.target.has_tensor_cores = c == 1;
    CHECK_OK(xc_passes_run(g, &o));
    xc_tensor_t* after = run_pattern(g, 2, dims);
    CHECK(before && after && same_values(before, after));
    const xc_node_t* gm = NULL;
    for (int i = 0; i < g->num_nodes; i++)
      if (!g->nodes[i]->dead && !strcmp(g->nodes[i]->op_type, "Gemm")) gm = g->nodes[i];
    CHECK(gm != NULL);
    if (gm) {
      bool moved = c == 0;
      CHECK_EQ_INT((int)xc_node_attr_int(gm, "transB"), moved ? 0 : 1);
      const xc_tensor_t* w = gm->inputs[1]->constant;
      CHECK(w != NULL);
      if (w && moved) { /* [K, N]: w[k, n] = old w[n, k] */
        CHECK_EQ_INT((int)w->dims[0], 3);
        CHECK_EQ_INT((int)w->dims[1], 4);
        CHECK(xc_tensor_get_f64(w, 1) == 4 && xc_tensor_get_f64(w, 4) == 2 && xc_tensor_get_f64(w, 11) == 12);
      }
    }
    CHECK_EQ_INT(count_op(g, "Transpose"), 0);
    xc_tensor_destroy(before);
    xc_tensor_destroy(after);
    xc_graph_destroy(g);
  }
}

static void test_must_not_rewrite(void) {
  /* Two Transposes that are not inverses compose into one but are not
   * removed; two LeakyRelus with different alpha are not merged by CSE; an
   * Add of a non-zero constant stays. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3, 4]\n"
      "  const c: f32[1] = [0.5]\n"
      "  t1 = Transpose(x) {perm: [1, 0, 2]}\n"
      "  t2 = Transpose(t1) {perm: [0, 2, 1]}\n"
      "  a = LeakyRelu(t2) {alpha: 0.1}\n"
      "  b = LeakyRelu(t2) {alpha: 0.2}\n"
      "  s = Add(a, b)\n"
      "  y = Add(s, c)\n"
      "  output y\n"
      "}\n";
  int64_t dims[3] = {2, 3, 4};
  xc_graph_t* g = optimize_and_check(text, 3, dims);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Transpose"), 1);
  CHECK_EQ_INT(count_op(g, "LeakyRelu"), 2);
  CHECK_EQ_INT(count_op(g, "Add"), 2);
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, "Transpose") == 0) {
      int64_t n;
      const int64_t* perm = xc_node_attr_ints(g->nodes[i], "perm", &n);
      /* out axis i of t2 = t1 axis p2[i] = x axis p1[p2[i]]: [1, 2, 0] */
      CHECK_EQ_INT(n, 3);
      if (n == 3) {
        CHECK_EQ_INT(perm[0], 1);
        CHECK_EQ_INT(perm[1], 2);
        CHECK_EQ_INT(perm[2], 0);
      }
      CHECK(g->nodes[i]->inputs[0] == g->inputs[0]);
    }
  xc_graph_destroy(g);
}

static void test_options(void) {
  xc_graph_t* g = parse("xir 1\ngraph g opset 23 {\n input x: f32[2]\n a = Identity(x)\n y = Relu(a)\n output y\n}\n");
  if (!g) return;
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  const char* bad[1] = {"no-such-pass"};
  o.disabled = bad;
  o.num_disabled = 1;
  CHECK_ERR(xc_passes_run(g, &o), "unknown pass 'no-such-pass'");
  const char* off[1] = {"simplify"};
  o.disabled = off;
  CHECK_OK(xc_passes_run(g, &o));
  CHECK_EQ_INT(count_op(g, "Identity"), 1);
  o.opt_level = 0; /* only dce */
  o.num_disabled = 0;
  CHECK_OK(xc_passes_run(g, &o));
  CHECK_EQ_INT(count_op(g, "Identity"), 1);
  o.opt_level = 7;
  CHECK_ERR(xc_passes_run(g, &o), "optimization level");
  xc_graph_destroy(g);
}

/* convert-precision's weight conversion rounds every f32 as the general
 * conversion does: halfway cases to even, denormals, infinities, NaN,
 * values that round up into the next binade or to infinity. */
static void test_convert_precision_weights(void) {
  static const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu,
                                  0x3f7fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                  0xffc00001u, 0x7f800001u, 0x00000001u, 0x00400000u, 0x807fffffu, 0x477fe000u,
                                  0x477ff000u, 0x38800000u, 0x33800000u, 0x33000000u, 0xc2f6e979u, 0x3eaaaaabu};
  enum { N = sizeof bits / sizeof *bits };
  float vals[N];
  memcpy(vals, bits, sizeof vals);
  for (int k = 0; k < 2; k++) {
    xc_dtype_t dt = k ? XC_F16 : XC_BF16;
    xc_graph_t* g = parse("xir 1\ngraph g opset 23 {\n  input x: f32[24]\n"
                          "  const w: f32[24] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n"
                          "  y = Add(x, w)\n  output y\n}\n");
    CHECK(g != NULL);
    if (!g) continue;
    xc_value_t* w = xc_graph_find_value(g, "w");
    memcpy(w->constant->data, vals, sizeof vals);
    bool changed = false;
    CHECK_OK(xc_convert_precision(g, dt, &changed));
    CHECK(changed);
    w = xc_graph_find_value(g, "y")->producer->inputs[1];
    CHECK(w->constant && w->constant->dtype == dt);
    for (int i = 0; w->constant && i < N; i++) {
      uint16_t got = ((const uint16_t*)w->constant->data)[i];
      uint16_t want = k ? xc_f64_to_f16((double)vals[i]) : xc_f64_to_bf16((double)vals[i]);
      if (got != want) fprintf(stderr, "%s of 0x%08x: 0x%04x, want 0x%04x\n", k ? "f16" : "bf16", bits[i], got, want);
      CHECK_EQ_INT(got, want);
    }
    xc_graph_destroy(g);
  }
}

int main(void) {
  test_convert_precision_weights();
  test_simplify_noops();
  test_pad_fold();
  test_broadcasting_add_zero_is_kept();
  test_transpose_and_reshape_chains();
  test_squeeze_unsqueeze();
  test_fold_cse_dce();
  test_fold_respects_size_limit();
  test_fold_layout_of_weights();
  test_gemm_weights_k_major();
  test_fold_static_shapes();
  test_must_not_rewrite();
  test_options();
  return xc_test_summary("test_passes");
}
