/* Tests of the attention and rotary-embedding rewrites (passes/attention.c,
 * passes/rotary.c): the rewrite happens on the forms exporters write (node
 * counts, attributes and inputs of the new node), does not happen where it
 * would change the result, and the graph computes the same values before
 * and after (interpreter on fixed inputs). The shared gpt2-tiny and
 * bert-tiny models get one Attention node per layer and still match their
 * stored reference outputs. */
#include <math.h>

#include "graph_test_util.h"
#include "test.h"
#include "xcomp/interp.h"
#include "xcomp/onnx_testcase.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "xcomp/xir.h"



static xc_node_t* find_op(const xc_graph_t* g, const char* op) {
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, op) == 0) return g->nodes[i];
  return NULL;
}

/* Deterministic inputs: floats in [-2, 2]; bools false on every 4th row of
 * the last two dims starting at row 1 (so some rows are fully masked) and
 * on every third element; integers i % 4. */
static void fill_input(xc_tensor_t* t, int which) {
  int64_t last = t->rank ? t->dims[t->rank - 1] : 1;
  for (int64_t i = 0; i < t->numel; i++) {
    if (t->dtype == XC_BOOL) {
      int64_t row = last ? i / last : 0;
      xc_tensor_set_f64(t, i, (row % 4 != 1 && i % 3 != 0) ? 1 : 0);
    } else if (xc_dtype_is_int(t->dtype)) {
      xc_tensor_set_i64(t, i, i % 4);
    } else {
      xc_tensor_set_f64(t, i, 2.0 * sin(0.37 * (double)i + 1.3 * which + 0.1));
    }
  }
}

/* Runs g on the fixed inputs; returns output 0 (caller frees). */
static xc_tensor_t* run_fixed(const xc_graph_t* g) {
  xc_tensor_t* ins[8] = {0};
  int n = g->num_inputs;
  if (n > 8) return NULL;
  for (int k = 0; k < n; k++) {
    const xc_value_t* v = g->inputs[k];
    int64_t dims[8];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].sym ? 3 : v->dims[d].value;
    if (xc_tensor_create(v->dtype, v->rank, dims, &ins[k])) return NULL;
    fill_input(ins[k], k);
  }
  xc_tensor_t* outs[4] = {0};
  xc_status_t s = xc_interp_run(g, NULL, n, (const xc_tensor_t* const*)ins, outs);
  for (int k = 0; k < n; k++) xc_tensor_destroy(ins[k]);
  if (s) {
    fprintf(stderr, "run: %s\n", xc_status_message(s));
    xc_status_free(s);
    return NULL;
  }
  for (int i = 1; i < g->num_outputs; i++) xc_tensor_destroy(outs[i]);
  return outs[0];
}

/* Relative L2 distance; NaNs must sit at the same places. */
static double rel_l2(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->numel != b->numel) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = xc_tensor_get_f64(a, i), y = xc_tensor_get_f64(b, i);
    if (isnan(x) || isnan(y)) {
      if (!(isnan(x) && isnan(y))) return INFINITY;
      continue;
    }
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Parses, runs, applies the -O2 pipeline, runs again, compares. */
static xc_graph_t* optimize_and_check(const char* text) {
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return NULL;
  xc_tensor_t* before = run_fixed(g);
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_OK(xc_passes_run(g, &o));
  xc_tensor_t* after = run_fixed(g);
  CHECK(before != NULL && after != NULL);
  double err = rel_l2(after, before);
  /* The fused ops round once; the chains round after every op. */
  double tol = before && before->dtype == XC_F16 ? 5e-3 : 1e-6;
  if (!(err <= tol)) fprintf(stderr, "relative L2 error %g\n", err);
  CHECK(err <= tol);
  xc_tensor_destroy(before);
  xc_tensor_destroy(after);
  return g;
}

#define HEADER "xir 1\ngraph g opset 23 {\n"

/* Checks the single Attention node: scale, is_causal, and which graph
 * values feed Q, K, V (by name; NULL = not checked) and whether a mask is
 * passed. */
static void check_attention(const xc_graph_t* g, double scale, int causal, const char* q,
                            const char* k, const char* v, bool has_mask) {
  CHECK_EQ_INT(count_op(g, "Attention"), 1);
  CHECK_EQ_INT(count_op(g, "Softmax"), 0);
  CHECK_EQ_INT(count_op(g, "MatMul"), 0);
  xc_node_t* n = find_op(g, "Attention");
  if (!n) return;
  CHECK_NEAR(xc_node_attr_float(n, "scale"), scale, 1e-7 * scale);
  CHECK_EQ_INT(xc_node_attr_int(n, "is_causal"), causal);
  if (q) CHECK_STR(n->inputs[0]->name, q);
  if (k) CHECK_STR(n->inputs[1]->name, k);
  if (v) CHECK_STR(n->inputs[2]->name, v);
  CHECK_EQ_INT(n->num_inputs > 3 && n->inputs[3] != NULL, has_mask);
  CHECK(n->prov.num_origins >= 4);
}

static void test_plain(void) {
  const char* text = HEADER
      "  input q: f32[2, 2, 5, 8]\n"
      "  input k: f32[2, 2, 6, 8]\n"
      "  input v: f32[2, 2, 6, 3]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  p = Softmax(s) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0, 0, "q", "k", "v", false);
  CHECK_EQ_INT(g->num_nodes, 1);
  CHECK_STR(g->outputs[0]->name, "y");
  xc_graph_destroy(g);
}

static void test_scale_div(void) {
  /* Scores divided by sqrt(8); the default-axis Softmax (opset 13+). */
  const char* text = HEADER
      "  input q: f32[1, 4, 6, 8]\n"
      "  input k: f32[1, 4, 6, 8]\n"
      "  input v: f32[1, 4, 6, 8]\n"
      "  const c: f32[] = 2.828427\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Div(s, c)\n"
      "  p = Softmax(t)\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0 / 2.828427, 0, "q", "k", "v", false);
  xc_graph_destroy(g);
}

static void test_scale_on_q_and_k_gpt2_layout(void) {
  /* gpt2 (torch.export): Q and K each scaled by sqrt(1/sqrt(16)) = 0.5, K^T
   * as Reshape -> Transpose(0, 2, 1) -> Reshape, and the NaN guard. */
  const char* text = HEADER
      "  input q: f32[1, 4, 5, 16]\n"
      "  input k: f32[1, 4, 5, 16]\n"
      "  input v: f32[1, 4, 5, 16]\n"
      "  const half: f32[] = 0.5\n"
      "  const zero: f32[] = 0.0\n"
      "  const s1: i64[3] = [-1, 5, 16]\n"
      "  const s2: i64[4] = [1, 4, 16, 5]\n"
      "  r1 = Reshape(k, s1)\n"
      "  t1 = Transpose(r1) {perm: [0, 2, 1]}\n"
      "  kt = Reshape(t1, s2)\n"
      "  qs = Mul(q, half)\n"
      "  ks = Mul(kt, half)\n"
      "  s = MatMul(qs, ks)\n"
      "  p = Softmax(s) {axis: -1}\n"
      "  nan = IsNaN(p)\n"
      "  pg = Where(nan, zero, p)\n"
      "  y = MatMul(pg, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.25, 0, "q", "k", "v", false);
  CHECK_EQ_INT(count_op(g, "IsNaN"), 0);
  CHECK_EQ_INT(count_op(g, "Reshape"), 0);
  xc_graph_destroy(g);
}

static void test_bert_layout_transpose_of_key(void) {
  /* K^T = Transpose([B, S, H, D], perm [0, 2, 3, 1]): Attention gets a new
   * Transpose(perm [0, 2, 1, 3]) of that tensor. */
  const char* text = HEADER
      "  input q: f32[2, 3, 6, 4]\n"
      "  input kr: f32[2, 6, 3, 4]\n"
      "  input v: f32[2, 3, 6, 4]\n"
      "  const c: f32[] = 0.7071068\n"
      "  kt = Transpose(kr) {perm: [0, 2, 3, 1]}\n"
      "  ks = Mul(c, kt)\n"
      "  s = MatMul(q, ks)\n"
      "  p = Softmax(s) {axis: 3}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.7071068, 0, "q", NULL, "v", false);
  xc_node_t* n = find_op(g, "Attention");
  xc_node_t* t = n ? n->inputs[1]->producer : NULL;
  CHECK(t && strcmp(t->op_type, "Transpose") == 0);
  if (t) {
    int64_t c;
    const int64_t* perm = xc_node_attr_ints(t, "perm", &c);
    CHECK(c == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1 && perm[3] == 3);
    CHECK_STR(t->inputs[0]->name, "kr");
  }
  xc_graph_destroy(g);
}

static void test_additive_constant_mask(void) {
  /* A finite bias (ALiBi-like) is passed as attn_mask; not causal. */
  const char* text = HEADER
      "  input q: f32[1, 2, 3, 4]\n"
      "  input k: f32[1, 2, 3, 4]\n"
      "  input v: f32[1, 2, 3, 4]\n"
      "  const bias: f32[1, 1, 3, 3] = [0.0, -1.0, -2.0, -1.0, 0.0, -1.0, -2.0, -1.0, 0.0]\n"
      "  const c: f32[] = 0.5\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  u = Add(bias, t)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 0, "q", "k", "v", true);
  xc_node_t* n = find_op(g, "Attention");
  if (n && n->num_inputs > 3) CHECK_STR(n->inputs[3]->name, "bias");
  xc_graph_destroy(g);
}

static void test_runtime_bool_mask_with_guard(void) {
  /* bert's form: Where(mask, 0, -inf) added to the scores, NaN guard after
   * Softmax. The inputs fully mask rows 1 and 5 of each head: the guarded
   * subgraph gives zeros there, and so does Attention. */
  const char* text = HEADER
      "  input q: f32[2, 2, 8, 4]\n"
      "  input k: f32[2, 2, 8, 4]\n"
      "  input v: f32[2, 2, 8, 4]\n"
      "  input m: bool[2, 1, 8, 8]\n"
      "  const zero: f32[1] = [0.0]\n"
      "  const ninf: f32[1] = [-inf]\n"
      "  const c: f32[] = 0.5\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  bias = Where(m, zero, ninf)\n"
      "  u = Add(t, bias)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  nan = IsNaN(p)\n"
      "  pg = Where(nan, zero, p)\n"
      "  y = MatMul(pg, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 0, "q", "k", "v", true);
  xc_node_t* n = find_op(g, "Attention");
  if (n && n->num_inputs > 3) CHECK_STR(n->inputs[3]->name, "m"); /* the bool mask itself */
  xc_graph_destroy(g);
}

static void test_runtime_mask_without_guard_is_kept(void) {
  /* Without the guard a fully masked row is NaN; Attention would give 0. */
  const char* text = HEADER
      "  input q: f32[1, 1, 4, 4]\n"
      "  input k: f32[1, 1, 4, 4]\n"
      "  input v: f32[1, 1, 4, 4]\n"
      "  input m: bool[1, 1, 4, 4]\n"
      "  const ninf: f32[] = -inf\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Where(m, s, ninf)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Attention"), 0);
  CHECK_EQ_INT(count_op(g, "Softmax"), 1);
  xc_graph_destroy(g);
}

static void test_causal_trilu(void) {
  /* mask = tril(ones); scores.masked_fill(mask == 0, -inf). */
  const char* text = HEADER
      "  input q: f32[1, 2, 5, 4]\n"
      "  input k: f32[1, 2, 5, 4]\n"
      "  input v: f32[1, 2, 5, 4]\n"
      "  const ones: f32[5, 5] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,"
      " 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]\n"
      "  const zero: f32[] = 0.0\n"
      "  const ninf: f32[] = -inf\n"
      "  const c: f32[] = 0.5\n"
      "  tri = Trilu(ones) {upper: 0}\n"
      "  off = Equal(tri, zero)\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  u = Where(off, ninf, t)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 1, "q", "k", "v", false);
  CHECK_EQ_INT(count_op(g, "Trilu"), 0);
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_graph_destroy(g);
}

static void test_causal_additive_finite_min(void) {
  /* gpt2's constant mask: 0 on and below the diagonal, finfo(f32).min
   * above; no NaN guard needed since no row is fully masked. */
  const char* text = HEADER
      "  input q: f32[1, 1, 3, 4]\n"
      "  input k: f32[1, 1, 3, 4]\n"
      "  input v: f32[1, 1, 3, 4]\n"
      "  const mask: f32[1, 1, 3, 3] = [0.0, -3.4028235e+38, -3.4028235e+38, 0.0, 0.0,"
      " -3.4028235e+38, 0.0, 0.0, 0.0]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Add(s, mask)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0, 1, "q", "k", "v", false);
  xc_graph_destroy(g);
}

static void test_non_causal_mask_is_not_causal(void) {
  /* Sliding window of 2 (j in {i-1, i}): constant bool mask, not causal. */
  const char* text = HEADER
      "  input q: f32[1, 1, 4, 4]\n"
      "  input k: f32[1, 1, 4, 4]\n"
      "  input v: f32[1, 1, 4, 4]\n"
      "  const win: bool[4, 4] = [true, false, false, false, true, true, false, false,"
      " false, true, true, false, false, false, true, true]\n"
      "  const ninf: f32[] = -inf\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Where(win, s, ninf)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0, 0, "q", "k", "v", true);
  xc_node_t* n = find_op(g, "Attention");
  if (n && n->num_inputs > 3) CHECK_STR(n->inputs[3]->name, "win");
  xc_graph_destroy(g);
}

static void test_f16_causal_finite_min(void) {
  /* f16 export with finfo(f16).min above the diagonal: causal. */
  const char* text = HEADER
      "  input q: f16[1, 2, 3, 4]\n"
      "  input k: f16[1, 2, 3, 4]\n"
      "  input v: f16[1, 2, 3, 4]\n"
      "  const mask: f16[1, 1, 3, 3] = [0.0, -65504.0, -65504.0, 0.0, 0.0, -65504.0, 0.0, 0.0,"
      " 0.0]\n"
      "  const c: f16[] = 0.5\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  u = Add(t, mask)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 1, "q", "k", "v", false);
  xc_graph_destroy(g);
}

static void test_fully_masked_finite_row_is_kept(void) {
  /* Row 1 holds only finfo.min: the subgraph gives a uniform row there,
   * Attention would give zeros. */
  const char* text = HEADER
      "  input q: f32[1, 1, 2, 4]\n"
      "  input k: f32[1, 1, 2, 4]\n"
      "  input v: f32[1, 1, 2, 4]\n"
      "  const mask: f32[2, 2] = [0.0, 0.0, -3.4028235e+38, -3.4028235e+38]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Add(s, mask)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Attention"), 0);
  xc_graph_destroy(g);
}

static void test_gqa_expand(void) {
  /* HF repeat_kv: [B, 2, S, D] -> Unsqueeze(2) -> Expand [B, 2, 2, S, D]
   * -> Reshape [B, 4, S, D]; Attention takes the 2-head K and V. */
  const char* text = HEADER
      "  input q: f32[1, 4, 3, 4]\n"
      "  input k: f32[1, 2, 3, 4]\n"
      "  input v: f32[1, 2, 3, 4]\n"
      "  const ax: i64[1] = [2]\n"
      "  const big: i64[5] = [1, 2, 2, 3, 4]\n"
      "  const flat: i64[4] = [1, 4, 3, 4]\n"
      "  const c: f32[] = 0.5\n"
      "  ku = Unsqueeze(k, ax)\n"
      "  ke = Expand(ku, big)\n"
      "  kr = Reshape(ke, flat)\n"
      "  vu = Unsqueeze(v, ax)\n"
      "  ve = Expand(vu, big)\n"
      "  vr = Reshape(ve, flat)\n"
      "  kt = Transpose(kr) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  p = Softmax(t) {axis: -1}\n"
      "  y = MatMul(p, vr)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 0, "q", "k", "v", false);
  CHECK_EQ_INT(count_op(g, "Expand"), 0);
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_graph_destroy(g);
}

static void test_gqa_merged_key_transpose(void) {
  /* The decomposed SDPA with grouped heads that torch.onnx writes for
   * Qwen2/Llama: K's repeated heads [B, 2, 2, S, D] merged straight into
   * [B*4, S, D], transposed, split back to [B, 4, D, S]; sqrt(scale) on Q
   * and on K^T; V repeated through a 4-D Reshape. Attention takes the
   * 2-head K and V. */
  const char* text = HEADER
      "  input q: f32[1, 4, 3, 4]\n"
      "  input k: f32[1, 2, 3, 4]\n"
      "  input v: f32[1, 2, 3, 4]\n"
      "  const ax: i64[1] = [2]\n"
      "  const big: i64[5] = [1, 2, 2, 3, 4]\n"
      "  const flat: i64[4] = [1, 4, 3, 4]\n"
      "  const m3: i64[3] = [4, 3, 4]\n"
      "  const kts: i64[4] = [1, 4, 4, 3]\n"
      "  const c: f32[] = 0.7071067811865476\n"
      "  ku = Unsqueeze(k, ax)\n"
      "  ke = Expand(ku, big)\n"
      "  k3 = Reshape(ke, m3)\n"
      "  k3t = Transpose(k3) {perm: [0, 2, 1]}\n"
      "  kt = Reshape(k3t, kts)\n"
      "  vu = Unsqueeze(v, ax)\n"
      "  ve = Expand(vu, big)\n"
      "  vr = Reshape(ve, flat)\n"
      "  qs = Mul(q, c)\n"
      "  kts2 = Mul(kt, c)\n"
      "  s = MatMul(qs, kts2)\n"
      "  p = Softmax(s) {axis: -1}\n"
      "  y = MatMul(p, vr)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 0, "q", "k", "v", false);
  CHECK_EQ_INT(count_op(g, "Expand"), 0);
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_graph_destroy(g);
}

static void test_mqa_broadcast(void) {
  /* One K/V head shared by all query heads through MatMul broadcasting. */
  const char* text = HEADER
      "  input q: f32[2, 3, 4, 4]\n"
      "  input k: f32[2, 1, 5, 4]\n"
      "  input v: f32[2, 1, 5, 2]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  p = Softmax(s) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0, 0, "q", "k", "v", false);
  xc_graph_destroy(g);
}

static void test_symbolic_dims(void) {
  /* Dynamic batch and sequence (bound to 3 when run). */
  const char* text = HEADER
      "  input q: f32[batch, 2, seq, 4]\n"
      "  input k: f32[batch, 2, seq, 4]\n"
      "  input v: f32[batch, 2, seq, 4]\n"
      "  const c: f32[] = 0.5\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  p = Softmax(t) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 0.5, 0, "q", "k", "v", false);
  xc_graph_destroy(g);
}

static void test_bounded_runtime_mask_without_guard(void) {
  /* Old HF/bert form: (1 - float(mask)) * -10000 added, no NaN guard. The
   * bound analysis proves the mask finite (|x| <= 10000): no row can give
   * NaN, so the rewrite is exact. */
  const char* text = HEADER
      "  input q: f32[2, 2, 4, 4]\n"
      "  input k: f32[2, 2, 4, 4]\n"
      "  input v: f32[2, 2, 4, 4]\n"
      "  input m: i64[2, 1, 1, 4]\n"
      "  const one: f32[] = 1.0\n"
      "  const big: f32[] = -10000.0\n"
      "  mf = Cast(m) {to: 1}\n"
      "  inv = Sub(one, mf)\n"
      "  bias = Mul(inv, big)\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Add(s, bias)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  check_attention(g, 1.0, 0, "q", "k", "v", true);
  xc_node_t* n = find_op(g, "Attention");
  if (n && n->num_inputs > 3) CHECK_STR(n->inputs[3]->name, "bias");
  xc_graph_destroy(g);
}

static void test_unbounded_runtime_mask_is_kept(void) {
  /* A float mask straight from the inputs may hold -inf rows or finfo.min:
   * nothing proves Attention would agree. */
  const char* text = HEADER
      "  input q: f32[1, 2, 4, 4]\n"
      "  input k: f32[1, 2, 4, 4]\n"
      "  input v: f32[1, 2, 4, 4]\n"
      "  input bias: f32[1, 1, 4, 4]\n"
      "  const zero: f32[] = 0.0\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Add(s, bias)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  nan = IsNaN(p)\n"
      "  pg = Where(nan, zero, p)\n"
      "  y = MatMul(pg, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Attention"), 0);
  xc_graph_destroy(g);
}

static void test_three_d_batched(void) {
  /* bmm attention on [N = batch*heads, S, D] (nn.MultiheadAttention):
   * Attention runs on [N, 1, S, D] views (Unsqueeze/Squeeze of axis 1). */
  const char* text = HEADER
      "  input q: f32[6, 5, 4]\n"
      "  input k: f32[6, 5, 4]\n"
      "  input v: f32[6, 5, 3]\n"
      "  const c: f32[] = 0.5\n"
      "  const mask: f32[5, 5] = [0.0, -inf, -inf, -inf, -inf, 0.0, 0.0, -inf, -inf, -inf,"
      " 0.0, 0.0, 0.0, -inf, -inf, 0.0, 0.0, 0.0, 0.0, -inf, 0.0, 0.0, 0.0, 0.0, 0.0]\n"
      "  qs = Mul(q, c)\n"
      "  kt = Transpose(k) {perm: [0, 2, 1]}\n"
      "  s = MatMul(qs, kt)\n"
      "  u = Add(s, mask)\n"
      "  p = Softmax(u) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Attention"), 1);
    CHECK_EQ_INT(count_op(g, "Softmax"), 0);
    CHECK_EQ_INT(count_op(g, "Unsqueeze"), 3);
    CHECK_EQ_INT(count_op(g, "Squeeze"), 1);
    xc_node_t* n = find_op(g, "Attention");
    if (n) {
      CHECK_EQ_INT(xc_node_attr_int(n, "is_causal"), 1);
      CHECK_NEAR(xc_node_attr_float(n, "scale"), 0.5, 1e-9);
      CHECK_EQ_INT(n->num_inputs, 3);
    }
    CHECK_STR(g->outputs[0]->name, "y");
    CHECK_EQ_INT(g->outputs[0]->rank, 3);
    xc_graph_destroy(g);
  }
  /* K as [S, N, D] (transposed twice), a run-time [N, S, S] bool mask with
   * the NaN guard: the mask gets its own Unsqueeze. */
  const char* text2 = HEADER
      "  input q: f32[6, 4, 4]\n"
      "  input k: f32[4, 6, 4]\n"
      "  input v: f32[6, 4, 2]\n"
      "  input m: bool[6, 4, 4]\n"
      "  const ninf: f32[] = -inf\n"
      "  const zero: f32[] = 0.0\n"
      "  kt = Transpose(k) {perm: [1, 2, 0]}\n"
      "  s = MatMul(q, kt)\n"
      "  u = Where(m, s, ninf)\n"
      "  p = Softmax(u) {axis: 2}\n"
      "  nan = IsNaN(p)\n"
      "  pg = Where(nan, zero, p)\n"
      "  y = MatMul(pg, v)\n"
      "  output y\n"
      "}\n";
  g = optimize_and_check(text2);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Attention"), 1);
    CHECK_EQ_INT(count_op(g, "Unsqueeze"), 4);
    xc_node_t* n = find_op(g, "Attention");
    if (n) {
      CHECK_EQ_INT(xc_node_attr_int(n, "is_causal"), 0);
      CHECK_EQ_INT(n->num_inputs, 4);
      CHECK_EQ_INT(n->inputs[3] ? n->inputs[3]->dtype : XC_F32, XC_BOOL);
    }
    xc_graph_destroy(g);
  }
}

static void test_softmax_other_axis_is_kept(void) {
  const char* text = HEADER
      "  input q: f32[1, 2, 4, 4]\n"
      "  input k: f32[1, 2, 4, 4]\n"
      "  input v: f32[1, 2, 4, 4]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  p = Softmax(s) {axis: 2}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Attention"), 0);
  CHECK_EQ_INT(count_op(g, "Softmax"), 1);
  xc_graph_destroy(g);
}

static void test_scale_not_constant_is_kept(void) {
  const char* text = HEADER
      "  input q: f32[1, 2, 4, 4]\n"
      "  input k: f32[1, 2, 4, 4]\n"
      "  input v: f32[1, 2, 4, 4]\n"
      "  input c: f32[1]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  p = Softmax(t) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "Attention"), 0);
  xc_graph_destroy(g);
}

static void test_scores_used_elsewhere_is_kept(void) {
  /* The scaled scores are also a graph output: fusing would compute them
   * twice. Likewise the probabilities feeding a second consumer. */
  const char* text = HEADER
      "  input q: f32[1, 2, 4, 4]\n"
      "  input k: f32[1, 2, 4, 4]\n"
      "  input v: f32[1, 2, 4, 4]\n"
      "  const c: f32[] = 0.5\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  t = Mul(s, c)\n"
      "  p = Softmax(t) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  output y\n"
      "  output t\n"
      "}\n";
  xc_graph_t* g = optimize_and_check(text);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Attention"), 0);
    xc_graph_destroy(g);
  }
  const char* text2 = HEADER
      "  input q: f32[1, 2, 4, 4]\n"
      "  input k: f32[1, 2, 4, 4]\n"
      "  input v: f32[1, 2, 4, 4]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n"
      "  p = Softmax(s) {axis: -1}\n"
      "  y = MatMul(p, v)\n"
      "  z = Add(y, s)\n"
      "  output z\n"
      "}\n";
  g = optimize_and_check(text2);
  if (g) {
    CHECK_EQ_INT(count_op(g, "Attention"), 0);
    xc_graph_destroy(g);
  }
}


/* ---- rotary embedding ---------------------------------------------------- */

/* "  const NAME: f32[SHAPE] = [...]\n" holding a cos or sin table of `rows`
 * positions and width d: angle(p, j) = p * 10000^(-2f/d) where f is j's
 * frequency index: j mod d/2 (rotate-half), j/2 (interleaved), or j itself
 * (not a rotary table). Caller frees. */
enum { TABLE_HALVES, TABLE_PAIRS, TABLE_DISTINCT };

static char* table_text(const char* name, const char* shape, int rows, int d, bool sine,
                        int layout) {
  size_t cap = 64 + (size_t)rows * (size_t)d * 24;
  char* buf = malloc(cap);
  if (!buf) return NULL;
  size_t len = (size_t)snprintf(buf, cap, "  const %s: f32[%s] = [", name, shape);
  for (int p = 0; p < rows; p++)
    for (int j = 0; j < d; j++) {
      int f = layout == TABLE_HALVES ? j % (d / 2) : layout == TABLE_PAIRS ? j / 2 : j;
      double angle = p * pow(10000.0, -2.0 * f / d);
      len += (size_t)snprintf(buf + len, cap - len, "%s%.9g", p || j ? ", " : "",
                              sine ? sin(angle) : cos(angle));
    }
  snprintf(buf + len, cap - len, "]\n");
  return buf;
}

static xc_graph_t* rotary_graph(const char* head, const char* tables_fmt_a, const char* tables_b,
                                const char* body) {
  size_t n = strlen(head) + strlen(tables_fmt_a) + strlen(tables_b) + strlen(body) + 64;
  char* text = malloc(n);
  if (!text) return NULL;
  snprintf(text, n, "%s%s%s%s}\n", head, tables_fmt_a, tables_b, body);
  xc_graph_t* g = optimize_and_check(text);
  free(text);
  return g;
}

static void test_rotary_rotate_half_gather(void) {
  /* HF Llama: cos = cache[position_ids].unsqueeze(1); rotate_half by Slice. */
  char* cc = table_text("cc", "6, 8", 6, 8, false, TABLE_HALVES);
  char* cs = table_text("cs", "6, 8", 6, 8, true, TABLE_HALVES);
  if (!cc || !cs) return;
  xc_graph_t* g = rotary_graph(HEADER
                               "  input x: f32[2, 2, 4, 8]\n"
                               "  input pos: i64[2, 4]\n",
                               cc, cs,
                               "  const one: i64[1] = [1]\n"
                               "  const z: i64[1] = [0]\n"
                               "  const h: i64[1] = [4]\n"
                               "  const e: i64[1] = [9223372036854775807]\n"
                               "  const last: i64[1] = [-1]\n"
                               "  gc = Gather(cc, pos) {axis: 0}\n"
                               "  c = Unsqueeze(gc, one)\n"
                               "  gs = Gather(cs, pos) {axis: 0}\n"
                               "  s = Unsqueeze(gs, one)\n"
                               "  x1 = Slice(x, z, h, last)\n"
                               "  x2 = Slice(x, h, e, last)\n"
                               "  n2 = Neg(x2)\n"
                               "  rot = Concat(n2, x1) {axis: -1}\n"
                               "  a = Mul(x, c)\n"
                               "  b = Mul(rot, s)\n"
                               "  y = Add(a, b)\n"
                               "  output y\n");
  free(cc);
  free(cs);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 1);
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_node_t* n = find_op(g, "RotaryEmbedding");
  if (n) {
    CHECK_EQ_INT(xc_node_attr_int(n, "interleaved"), 0);
    CHECK_STR(n->inputs[0]->name, "x");
    CHECK_STR(n->inputs[3]->name, "pos");
    /* Half-width caches: [6, 4], row 2 = cos(2 * 10000^(-2j/8)). */
    const xc_tensor_t* t = n->inputs[1]->constant;
    CHECK(t && t->rank == 2 && t->dims[0] == 6 && t->dims[1] == 4);
    if (t) CHECK_NEAR(xc_tensor_get_f64(t, 2 * 4 + 1), cos(2 * pow(10000.0, -0.25)), 1e-6);
  }
  xc_graph_destroy(g);
}

static void test_rotary_split_constant_tables(void) {
  /* Constant [S, D] tables, halves from Split, operands in other orders. */
  char* cc = table_text("c", "4, 8", 4, 8, false, TABLE_HALVES);
  char* cs = table_text("s", "1, 1, 4, 8", 4, 8, true, TABLE_HALVES);
  if (!cc || !cs) return;
  xc_graph_t* g = rotary_graph(HEADER "  input x: f32[3, 2, 4, 8]\n", cc, cs,
                               "  x1, x2 = Split(x) {axis: 3, num_outputs: 2}\n"
                               "  n2 = Neg(x2)\n"
                               "  rot = Concat(n2, x1) {axis: 3}\n"
                               "  a = Mul(c, x)\n"
                               "  b = Mul(s, rot)\n"
                               "  y = Add(b, a)\n"
                               "  output y\n");
  free(cc);
  free(cs);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 1);
  CHECK_EQ_INT(count_op(g, "Split"), 0);
  xc_node_t* n = find_op(g, "RotaryEmbedding");
  if (n) {
    const xc_tensor_t* p = n->inputs[3]->constant;
    CHECK(p && p->numel == 12 && xc_tensor_get_i64(p, 7) == 3 && xc_tensor_get_i64(p, 8) == 0);
  }
  xc_graph_destroy(g);
}

static void test_rotary_interleaved(void) {
  char* cc = table_text("c", "1, 1, 4, 8", 4, 8, false, TABLE_PAIRS);
  char* cs = table_text("s", "1, 1, 4, 8", 4, 8, true, TABLE_PAIRS);
  if (!cc || !cs) return;
  xc_graph_t* g = rotary_graph(HEADER "  input x: f32[1, 2, 4, 8]\n", cc, cs,
                               "  const z: i64[1] = [0]\n"
                               "  const o: i64[1] = [1]\n"
                               "  const e: i64[1] = [8]\n"
                               "  const last: i64[1] = [-1]\n"
                               "  const two: i64[1] = [2]\n"
                               "  const shape: i64[4] = [1, 2, 4, 8]\n"
                               "  const minus: f32[] = -1.0\n"
                               "  xe = Slice(x, z, e, last, two)\n"
                               "  xo = Slice(x, o, e, last, two)\n"
                               "  no = Mul(xo, minus)\n"
                               "  u1 = Unsqueeze(no, last)\n"
                               "  u2 = Unsqueeze(xe, last)\n"
                               "  cat = Concat(u1, u2) {axis: -1}\n"
                               "  rot = Reshape(cat, shape)\n"
                               "  a = Mul(x, c)\n"
                               "  b = Mul(rot, s)\n"
                               "  y = Add(a, b)\n"
                               "  output y\n");
  free(cc);
  free(cs);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 1);
  CHECK_EQ_INT(g->num_nodes, 1);
  xc_node_t* n = find_op(g, "RotaryEmbedding");
  if (n) CHECK_EQ_INT(xc_node_attr_int(n, "interleaved"), 1);
  xc_graph_destroy(g);
}

static void test_rotary_computed_tables(void) {
  /* HF Llama computes the tables at run time: freqs = inv_freq x positions,
   * emb = Concat(freqs, freqs), cos = Cos(emb) * attention_scaling. The
   * rewrite takes Cos/Sin of freqs as [B, S, D/2] caches (no position ids). */
  const char* text = HEADER
      "  input x: f32[2, 2, 4, 8]\n"
      "  input pos: i64[2, 4]\n"
      "  const inv: f32[1, 4, 1] = [1.0, 0.1, 0.01, 0.001]\n"
      "  const one: i64[1] = [1]\n"
      "  const sc: f32[] = 1.5\n"
      "  const z: i64[1] = [0]\n"
      "  const h: i64[1] = [4]\n"
      "  const e: i64[1] = [8]\n"
      "  const last: i64[1] = [-1]\n"
      "  posf = Cast(pos) {to: 1}\n"
      "  pe = Unsqueeze(posf, one)\n"
      "  fr = MatMul(inv, pe)\n"
      "  frt = Transpose(fr) {perm: [0, 2, 1]}\n"
      "  emb = Concat(frt, frt) {axis: -1}\n"
      "  ce = Cos(emb)\n"
      "  se = Sin(emb)\n"
      "  cm = Mul(ce, sc)\n"
      "  sm = Mul(sc, se)\n"
      "  c = Unsqueeze(cm, one)\n"
      "  s = Unsqueeze(sm, one)\n"
      "  x1 = Slice(x, z, h, last)\n"
      "  x2 = Slice(x, h, e, last)\n"
      "  n2 = Neg(x2)\n"
      "  rot = Concat(n2, x1) {axis: -1}\n"
      "  a = Mul(x, c)\n"
      "  b = Mul(rot, s)\n"
      "  y = Add(a, b)\n"
      "  w1, w2 = Split(x) {axis: -1, num_outputs: 2}\n"
      "  wn = Neg(w2)\n"
      "  wrot = Concat(wn, w1) {axis: -1}\n"
      "  wc = Mul(c, x)\n"
      "  ws = Mul(s, wrot)\n"
      "  w = Add(ws, wc)\n"
      "  out = Add(y, w)\n"
      "  output out\n"
      "}\n";
  /* The second rotation (Split instead of Slice) reuses the new Cos/Sin. */
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 2);
  CHECK_EQ_INT(count_op(g, "Concat"), 0);
  CHECK_EQ_INT(count_op(g, "Cos"), 1);
  CHECK_EQ_INT(count_op(g, "Sin"), 1);
  xc_node_t* n = find_op(g, "RotaryEmbedding");
  if (n) {
    CHECK_EQ_INT(n->num_inputs, 3);
    CHECK_EQ_INT(n->inputs[1]->rank, 3);
    CHECK_EQ_INT(n->inputs[1]->dims[2].value, 4);
  }
  xc_graph_destroy(g);
}

static void test_rotary_not_matching(void) {
  /* Tables without repeated halves, and the rotation with the wrong sign,
   * are other computations: nothing is rewritten. */
  const char* body =
      "  x1, x2 = Split(x) {axis: -1, num_outputs: 2}\n"
      "  n2 = Neg(x2)\n"
      "  rot = Concat(n2, x1) {axis: -1}\n"
      "  a = Mul(x, c)\n"
      "  b = Mul(rot, s)\n"
      "  y = Add(a, b)\n"
      "  output y\n";
  char* cc = table_text("c", "4, 8", 4, 8, false, TABLE_DISTINCT);
  char* cs = table_text("s", "4, 8", 4, 8, true, TABLE_DISTINCT);
  char* hc = table_text("c", "4, 8", 4, 8, false, TABLE_HALVES);
  char* hs = table_text("s", "4, 8", 4, 8, true, TABLE_HALVES);
  if (!cc || !cs || !hc || !hs) return;
  xc_graph_t* g = rotary_graph(HEADER "  input x: f32[1, 2, 4, 8]\n", cc, cs, body);
  if (g) {
    CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 0);
    xc_graph_destroy(g);
  }
  g = rotary_graph(HEADER "  input x: f32[1, 2, 4, 8]\n", hc, hs,
                   "  x1, x2 = Split(x) {axis: -1, num_outputs: 2}\n"
                   "  n1 = Neg(x1)\n"
                   "  rot = Concat(x2, n1) {axis: -1}\n"
                   "  a = Mul(x, c)\n"
                   "  b = Mul(rot, s)\n"
                   "  y = Add(a, b)\n"
                   "  output y\n");
  if (g) {
    CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 0);
    xc_graph_destroy(g);
  }
  free(cc);
  free(cs);
  free(hc);
  free(hs);
}

static void test_llama_block(void) {
  /* Rotary on Q and K (shared constant tables), GQA repeat of K/V, causal
   * Trilu mask: both passes compose into RotaryEmbedding x2 + Attention. */
  char* cc = table_text("c", "4, 8", 4, 8, false, TABLE_HALVES);
  char* cs = table_text("s", "4, 8", 4, 8, true, TABLE_HALVES);
  if (!cc || !cs) return;
  char text[8192];
  snprintf(text, sizeof text,
           HEADER
           "  input q: f32[1, 4, 4, 8]\n"
           "  input k: f32[1, 2, 4, 8]\n"
           "  input v: f32[1, 2, 4, 8]\n"
           "%s%s"
           "  const ax: i64[1] = [2]\n"
           "  const big: i64[5] = [1, 2, 2, 4, 8]\n"
           "  const flat: i64[4] = [1, 4, 4, 8]\n"
           "  const ones: f32[4, 4] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,"
           " 1.0, 1.0, 1.0, 1.0, 1.0]\n"
           "  const ninf: f32[] = -inf\n"
           "  const scale: f32[] = 0.35355338\n"
           "  q1, q2 = Split(q) {axis: -1, num_outputs: 2}\n"
           "  qn = Neg(q2)\n"
           "  qrot = Concat(qn, q1) {axis: -1}\n"
           "  qa = Mul(q, c)\n"
           "  qb = Mul(qrot, s)\n"
           "  qr = Add(qa, qb)\n"
           "  k1, k2 = Split(k) {axis: -1, num_outputs: 2}\n"
           "  kn = Neg(k2)\n"
           "  krot = Concat(kn, k1) {axis: -1}\n"
           "  ka = Mul(k, c)\n"
           "  kb = Mul(krot, s)\n"
           "  kr = Add(ka, kb)\n"
           "  ku = Unsqueeze(kr, ax)\n"
           "  ke = Expand(ku, big)\n"
           "  krep = Reshape(ke, flat)\n"
           "  vu = Unsqueeze(v, ax)\n"
           "  ve = Expand(vu, big)\n"
           "  vrep = Reshape(ve, flat)\n"
           "  kt = Transpose(krep) {perm: [0, 1, 3, 2]}\n"
           "  sc = MatMul(qr, kt)\n"
           "  sd = Mul(sc, scale)\n"
           "  tri = Trilu(ones) {upper: 0}\n"
           "  keep = Cast(tri) {to: 9}\n"
           "  u = Where(keep, sd, ninf)\n"
           "  p = Softmax(u) {axis: -1}\n"
           "  y = MatMul(p, vrep)\n"
           "  output y\n"
           "}\n",
           cc, cs);
  free(cc);
  free(cs);
  xc_graph_t* g = optimize_and_check(text);
  if (!g) return;
  CHECK_EQ_INT(count_op(g, "RotaryEmbedding"), 2);
  CHECK_EQ_INT(count_op(g, "Attention"), 1);
  CHECK_EQ_INT(g->num_nodes, 3);
  xc_node_t* n = find_op(g, "Attention");
  if (n) {
    CHECK_EQ_INT(xc_node_attr_int(n, "is_causal"), 1);
    CHECK_EQ_INT(n->inputs[1]->rank == 4 ? n->inputs[1]->dims[1].value : -1, 2);
    for (int k = 0; k < 2; k++) {
      const xc_node_t* pr = n->inputs[k]->producer;
      CHECK(pr && strcmp(pr->op_type, "RotaryEmbedding") == 0);
    }
  }
  /* Q and K share one cos cache, one sin cache and one position table. */
  xc_node_t* r[2] = {NULL, NULL};
  for (int i = 0, j = 0; i < g->num_nodes && j < 2; i++)
    if (strcmp(g->nodes[i]->op_type, "RotaryEmbedding") == 0) r[j++] = g->nodes[i];
  if (r[0] && r[1])
    for (int k = 1; k < 4; k++) CHECK(r[0]->inputs[k] == r[1]->inputs[k]);
  xc_graph_destroy(g);
}

/* ---- shared exported models ---------------------------------------------- */

static void check_model(const char* name) {
  char dir[1024];
  snprintf(dir, sizeof dir, "tests/models/%s", name);
  char path[1100];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "skipping %s: %s not found\n", name, path);
    return;
  }
  fclose(f);
  xc_onnx_testcase_t* tc = NULL;
  CHECK_OK(xc_onnx_testcase_load(dir, &tc));
  if (!tc) return;
  CHECK_OK(xc_graph_infer(tc->graph));
  CHECK(tc->num_sets >= 1);
  CHECK_EQ_INT(count_op(tc->graph, "Attention"), 0);
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  CHECK_OK(xc_passes_run(tc->graph, &o));
  CHECK_EQ_INT(count_op(tc->graph, "Attention"), 2);
  CHECK_EQ_INT(count_op(tc->graph, "Softmax"), 0);
  for (int s = 0; s < tc->num_sets; s++) {
    xc_onnx_test_data_t* d = &tc->sets[s];
    xc_tensor_t* outs[8] = {0};
    if (d->num_outputs > 8) continue;
    xc_status_t st = xc_interp_run(tc->graph, NULL, d->num_inputs,
                                   (const xc_tensor_t* const*)d->inputs, outs);
    CHECK_OK(st);
    if (st) continue;
    for (int k = 0; k < d->num_outputs; k++) {
      double err = rel_l2(outs[k], d->expected[k]);
      if (!(err <= 1e-5)) fprintf(stderr, "%s output %d: relative L2 error %g\n", name, k, err);
      CHECK(err <= 1e-5);
      xc_tensor_destroy(outs[k]);
    }
  }
  xc_onnx_testcase_destroy(tc);
}

int main(void) {
  test_plain();
  test_scale_div();
  test_scale_on_q_and_k_gpt2_layout();
  test_bert_layout_transpose_of_key();
  test_additive_constant_mask();
  test_runtime_bool_mask_with_guard();
  test_runtime_mask_without_guard_is_kept();
  test_causal_trilu();
  test_causal_additive_finite_min();
  test_non_causal_mask_is_not_causal();
  test_fully_masked_finite_row_is_kept();
  test_f16_causal_finite_min();
  test_gqa_expand();
  test_gqa_merged_key_transpose();
  test_mqa_broadcast();
  test_symbolic_dims();
  test_three_d_batched();
  test_bounded_runtime_mask_without_guard();
  test_unbounded_runtime_mask_is_kept();
  test_softmax_other_axis_is_kept();
  test_scale_not_constant_is_kept();
  test_scores_used_elsewhere_is_kept();
  test_rotary_rotate_half_gather();
  test_rotary_split_constant_tables();
  test_rotary_interleaved();
  test_rotary_computed_tables();
  test_rotary_not_matching();
  test_llama_block();
  check_model("gpt2-tiny");
  check_model("bert-tiny");
  return xc_test_summary("test_patterns_attention");
}
