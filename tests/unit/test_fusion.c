/* Tests of fusion planning and graph statistics: each group kind forms on a
 * hand-written graph, the must-not rules hold (no node in two groups, no two
 * reductions/GEMMs in one group, a value used by another group is an output
 * of its group, a reduction consumer that would re-read a row larger than
 * shared memory is refused, the op limit splits a chain, no group cycle),
 * printing works, and the shared models' plans are small. */
#include "test.h"
#include "xcomp/frontend.h"
#include "xcomp/fusion.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"
#include "xcomp/xir.h"

static xc_graph_t* parse(const char* text) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_xir_parse(text, strlen(text), "test.xir", NULL, &g);
  if (!s) s = xc_graph_infer(g);
  if (s) {
    fprintf(stderr, "parse: %s\n", xc_status_message(s));
    xc_status_free(s);
    xc_graph_destroy(g);
    return NULL;
  }
  return g;
}

static const xc_node_t* node_named(const xc_graph_t* g, const char* value_name) {
  const xc_value_t* v = xc_graph_find_value(g, value_name);
  return v ? v->producer : NULL;
}

/* Group of the node producing value `name`. */
static const xc_fusion_group_t* group_of(const xc_fusion_plan_t* p, const xc_graph_t* g, const char* name) {
  const xc_node_t* n = node_named(g, name);
  return n ? xc_fusion_plan_group_of(p, n) : NULL;
}

static bool same_group(const xc_fusion_plan_t* p, const xc_graph_t* g, const char* a, const char* b) {
  const xc_fusion_group_t *x = group_of(p, g, a), *y = group_of(p, g, b);
  return x && x == y;
}

static bool has_output(const xc_fusion_group_t* gr, const char* name) {
  for (int i = 0; gr && i < gr->num_outputs; i++)
    if (strcmp(gr->outputs[i]->name, name) == 0) return true;
  return false;
}

static bool has_input(const xc_fusion_group_t* gr, const char* name) {
  for (int i = 0; gr && i < gr->num_inputs; i++)
    if (strcmp(gr->inputs[i]->name, name) == 0) return true;
  return false;
}

/* Invariants every plan must satisfy: each non-Constant node in exactly one
 * group; groups in topological order; outputs exactly the values used
 * outside; at most one anchor (reduction/GEMM/conv/attention op) per group
 * except attention groups (two MatMuls + Softmax). */
static void check_invariants(const xc_fusion_plan_t* p, const xc_graph_t* g, int max_ops) {
  int* seen = calloc((size_t)g->num_nodes + 1, sizeof *seen);
  int members = 0;
  for (int i = 0; i < p->num_groups; i++) {
    const xc_fusion_group_t* gr = &p->groups[i];
    CHECK_EQ_INT(gr->id, i);
    CHECK(gr->num_nodes > 0);
    if (max_ops > 0 && gr->kind != XC_GROUP_ATTENTION) CHECK(gr->num_ops <= max_ops);
    int anchors = 0;
    for (int m = 0; m < gr->num_nodes; m++) {
      const xc_node_t* n = gr->nodes[m];
      members++;
      for (int j = 0; j < g->num_nodes; j++)
        if (g->nodes[j] == n) seen[j]++;
      const char* t = n->op_type;
      anchors += strcmp(t, "MatMul") == 0 || strcmp(t, "Gemm") == 0 || strcmp(t, "Conv") == 0 ||
                 strcmp(t, "Softmax") == 0 || strcmp(t, "LayerNormalization") == 0 ||
                 strncmp(t, "Reduce", 6) == 0;
      /* producers of inputs from other groups come earlier */
      for (int k = 0; k < n->num_inputs; k++) {
        const xc_value_t* v = n->inputs[k];
        const xc_fusion_group_t* from = v && v->producer ? xc_fusion_plan_group_of(p, v->producer) : NULL;
        if (from && from != gr) {
          CHECK(from->id < gr->id);
          CHECK(has_output(from, v->name));
          CHECK(has_input(gr, v->name));
        }
      }
    }
    if (gr->kind == XC_GROUP_ATTENTION)
      CHECK(anchors <= 3);
    else
      CHECK(anchors <= 1);
  }
  int non_const = 0;
  for (int j = 0; j < g->num_nodes; j++) {
    if (strcmp(g->nodes[j]->op_type, "Constant") == 0) {
      CHECK_EQ_INT(seen[j], 0);
      continue;
    }
    non_const++;
    CHECK_EQ_INT(seen[j], 1);
  }
  CHECK_EQ_INT(members, non_const);
  free(seen);
}

static xc_fusion_plan_t* plan_of(const xc_graph_t* g, int max_ops, int64_t shared) {
  xc_target_traits_t t;
  xc_target_traits_init(&t);
  if (max_ops >= 0) t.max_fused_ops = max_ops;
  if (shared >= 0) t.shared_mem_bytes = shared;
  xc_fusion_plan_t* p = NULL;
  CHECK_OK(xc_fusion_plan_build(g, &t, &p));
  if (p) check_invariants(p, g, t.max_fused_ops);
  return p;
}

static void test_elementwise_chain(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n  input y: f32[3]\n"
      "  const c: f32[] = 2.0\n"
      "  a = Relu(x)\n  b = Mul(a, c)\n  d = Add(b, y)\n  e = Sigmoid(d)\n"
      "  output e\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(p->groups[0].kind == XC_GROUP_ELEMENTWISE);
    CHECK_EQ_INT(p->groups[0].num_ops, 4);
    CHECK_EQ_INT(p->groups[0].num_outputs, 1);
    CHECK(has_output(&p->groups[0], "e"));
    CHECK_EQ_INT(p->groups[0].num_inputs, 3); /* x, c, y */
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_max_ops_splits_chain(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[4]\n"
      "  a = Relu(x)\n  b = Neg(a)\n  c = Exp(b)\n  d = Abs(c)\n  e = Sqrt(d)\n"
      "  output e\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, 2, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 3);
    CHECK(same_group(p, g, "a", "b"));
    CHECK(same_group(p, g, "c", "d"));
    CHECK(!same_group(p, g, "b", "c"));
    CHECK(!same_group(p, g, "d", "e"));
    CHECK(has_output(group_of(p, g, "b"), "b"));
  }
  xc_fusion_plan_destroy(p);
  p = plan_of(g, 0, -1); /* no limit */
  if (p) CHECK_EQ_INT(p->num_groups, 1);
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_gemm_epilogue_and_residual(void) {
  const char* t2 =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[4, 2]\n  input w: f32[2, 2]\n"
      "  const bias: f32[2] = [0.5, -0.5]\n  const s: f32[] = 3.0\n"
      "  m = MatMul(x, w)\n  b = Add(m, bias)\n  r = Relu(b)\n  sc = Mul(r, s)\n"
      "  ca = Cast(sc) {to: 10}\n  cb = Cast(ca) {to: 1}\n"
      "  res = Add(cb, x)\n"
      "  output res\n}\n";
  xc_graph_t* g = parse(t2);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(p->groups[0].kind == XC_GROUP_GEMM);
    CHECK_EQ_INT(p->groups[0].num_ops, 7);
    CHECK_EQ_INT(p->groups[0].num_outputs, 1);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_epilogue_does_not_broadcast(void) {
  /* [4,1] + [1,8] -> [4,8]: not a per-element epilogue of the MatMul. */
  const char* t2 =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[n, 2]\n  input w: f32[2, 1]\n"
      "  const c: f32[1, 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]\n"
      "  m = MatMul(x, w)\n  r = Relu(m)\n  b = Add(r, c)\n  e = Exp(b)\n"
      "  output e\n}\n";
  xc_graph_t* g = parse(t2);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 2);
    CHECK(same_group(p, g, "m", "r"));
    CHECK(!same_group(p, g, "r", "b"));
    CHECK(same_group(p, g, "b", "e"));
    CHECK(group_of(p, g, "b")->kind == XC_GROUP_ELEMENTWISE);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_conv_relu_and_views(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 1, 4, 4]\n"
      "  const w: f32[2, 1, 1, 1] = [1.0, -1.0]\n"
      "  const shape: i64[2] = [1, 32]\n"
      "  c = Conv(x, w)\n  r = Relu(c)\n  f = Reshape(r, shape)\n  t = Transpose(f)\n"
      "  output t\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 2);
    CHECK(same_group(p, g, "c", "r"));
    CHECK(same_group(p, g, "r", "f")); /* the view is an alias of the conv result */
    CHECK(group_of(p, g, "c")->kind == XC_GROUP_CONV);
    CHECK(group_of(p, g, "t")->kind == XC_GROUP_DATA_MOVEMENT);
    CHECK_EQ_INT(group_of(p, g, "c")->num_ops, 2);
    CHECK_EQ_INT(xc_fusion_plan_kernel_count(p), 2);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_nhwc_conv_epilogue(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[1, 4, 4, 1]\n"
      "  const w: f32[2, 1, 1, 1] = [1.0, -1.0]\n"
      "  const b: f32[2] = [0.5, 0.25]\n"
      "  c = xcomp::ConvNHWC(x, w)\n  a = Add(c, b)\n  r = Relu(a)\n"
      "  p = xcomp::MaxPoolNHWC(r) {kernel_shape: [2, 2], strides: [2, 2]}\n"
      "  output p\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 2);
    CHECK(same_group(p, g, "c", "r"));
    CHECK(group_of(p, g, "c")->kind == XC_GROUP_CONV);
    CHECK(group_of(p, g, "p")->kind == XC_GROUP_REDUCTION);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_view_group(void) {
  /* A reshape between two data-movement ops, used by both: a view group. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const shape: i64[1] = [6]\n"
      "  t = Transpose(x)\n  v = Reshape(t, shape)\n"
      "  output v\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    /* the view joins the transpose's group: one kernel, one group */
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(same_group(p, g, "t", "v"));
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
  const char* text2 =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 3]\n"
      "  const shape: i64[1] = [6]\n"
      "  v = Reshape(x, shape)\n"
      "  output v\n}\n";
  g = parse(text2);
  CHECK(g != NULL);
  if (!g) return;
  p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(p->groups[0].kind == XC_GROUP_VIEW);
    CHECK_EQ_INT(xc_fusion_plan_kernel_count(p), 0);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_layernorm_with_residual(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 4]\n  input h: f32[2, 4]\n"
      "  const gam: f32[4] = [1.0, 1.0, 1.0, 1.0]\n  const bet: f32[4] = [0.0, 0.0, 0.0, 0.0]\n"
      "  const s: f32[] = 0.5\n"
      "  a = Add(x, h)\n  n = LayerNormalization(a, gam, bet)\n  m = Mul(n, s)\n"
      "  output m\n  output a\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(p->groups[0].kind == XC_GROUP_REDUCTION);
    CHECK_EQ_INT(p->groups[0].num_ops, 3);
    /* the residual sum is a graph output too: materialized once */
    CHECK(has_output(&p->groups[0], "a"));
    CHECK(has_output(&p->groups[0], "m"));
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_shared_value_not_duplicated(void) {
  /* e feeds two reductions: it is computed in one group and read by the
   * other; the two reductions stay apart. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 8]\n"
      "  const ax: i64[1] = [1]\n"
      "  e = Exp(x)\n  s1 = ReduceSum(e, ax)\n  s2 = ReduceMax(e, ax)\n  y = Add(s1, s2)\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK(!same_group(p, g, "s1", "s2"));
    const xc_fusion_group_t* ge = group_of(p, g, "e");
    CHECK(ge != NULL);
    CHECK(has_output(ge, "e"));
    const xc_fusion_group_t* other = same_group(p, g, "e", "s1") ? group_of(p, g, "s2") : group_of(p, g, "s1");
    CHECK(other != ge);
    CHECK(has_input(other, "e"));
    CHECK_EQ_INT(p->num_groups, 2);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_reduction_row_must_fit(void) {
  /* y = e / sum(e): the Div re-reads e, computed before the reduction. With
   * a 256-byte row (64 f32) it fuses when shared memory holds the row, and
   * is refused (e materialized, Div in its own group) when it does not. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[3, 64]\n"
      "  const ax: i64[1] = [1]\n"
      "  e = Exp(x)\n  s = ReduceSum(e, ax) {keepdims: 1}\n  y = Div(e, s)\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, 256);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK_EQ_INT(p->groups[0].num_ops, 3);
  }
  xc_fusion_plan_destroy(p);
  p = plan_of(g, -1, 255);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 2);
    CHECK(same_group(p, g, "e", "s"));
    CHECK(!same_group(p, g, "s", "y"));
    CHECK(has_output(group_of(p, g, "s"), "e"));
    CHECK(group_of(p, g, "y")->kind == XC_GROUP_ELEMENTWISE);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_two_reductions_apart(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 4]\n"
      "  const gam: f32[4] = [1.0, 1.0, 1.0, 1.0]\n"
      "  sm = Softmax(x)\n  a = Add(sm, x)\n  n = LayerNormalization(a, gam)\n"
      "  output n\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK(!same_group(p, g, "sm", "n"));
    CHECK_EQ_INT(p->num_groups, 2);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_no_cycle(void) {
  /* z = m + MatMul(relu(m), w2): adding z to the first GEMM group would make
   * it both feed and read the second GEMM. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 2]\n  input w1: f32[2, 2]\n  input w2: f32[2, 2]\n"
      "  m = MatMul(x, w1)\n  r = Relu(m)\n  n = MatMul(r, w2)\n  z = Add(m, n)\n"
      "  output z\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    CHECK(same_group(p, g, "m", "r"));
    CHECK(!same_group(p, g, "m", "z"));
    CHECK(same_group(p, g, "n", "z"));
    CHECK(has_output(group_of(p, g, "m"), "m"));
    CHECK_EQ_INT(p->num_groups, 2);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_no_cycle_through_group(void) {
  /* H = {e, r, h2} (reduction with its producer and consumer) reads m;
   * z = m + e may not join m's group: m -> h2 and, H being one kernel,
   * e -> z would close a cycle through H although no node path does. The
   * row rule (32-byte rows, 16 bytes of shared memory) keeps z out of H. */
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[2, 4]\n  input w: f32[4, 8]\n  input y: f32[2, 8]\n"
      "  const ax: i64[1] = [1]\n"
      "  m = MatMul(x, w)\n  e = Exp(y)\n  r = ReduceSum(e, ax) {keepdims: 1}\n"
      "  h2 = Add(r, m)\n  z = Add(m, e)\n"
      "  output h2\n  output z\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, 16);
  if (p) {
    CHECK(same_group(p, g, "e", "r"));
    CHECK(same_group(p, g, "r", "h2"));
    CHECK(!same_group(p, g, "m", "z"));
    CHECK(!same_group(p, g, "e", "z"));
    CHECK_EQ_INT(p->num_groups, 3);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_attention_chain(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input q: f32[1, 2, 4, 8]\n  input k: f32[1, 2, 4, 8]\n  input v: f32[1, 2, 4, 8]\n"
      "  input w: f32[16, 16]\n"
      "  const sc: f32[] = 0.35\n  const shape: i64[3] = [1, 4, 16]\n"
      "  kt = Transpose(k) {perm: [0, 1, 3, 2]}\n"
      "  s = MatMul(q, kt)\n  ss = Mul(s, sc)\n  pr = Softmax(ss)\n  o = MatMul(pr, v)\n"
      "  ot = Transpose(o) {perm: [0, 2, 1, 3]}\n  r = Reshape(ot, shape)\n"
      "  y = MatMul(r, w)\n"
      "  output y\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (p) {
    const xc_fusion_group_t* a = group_of(p, g, "pr");
    CHECK(a && a->kind == XC_GROUP_ATTENTION);
    CHECK_EQ_INT(a ? a->num_nodes : 0, 7); /* kt s ss pr o ot r */
    CHECK(same_group(p, g, "kt", "o"));
    CHECK(same_group(p, g, "s", "r"));
    CHECK(!same_group(p, g, "r", "y"));
    CHECK(group_of(p, g, "y")->kind == XC_GROUP_GEMM);
    CHECK_EQ_INT(p->num_groups, 2);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
  /* The ONNX Attention op takes its head transposes. */
  const char* text2 =
      "xir 1\ngraph g opset 23 {\n"
      "  input q: f32[1, 4, 2, 8]\n  input k: f32[1, 4, 2, 8]\n  input v: f32[1, 4, 2, 8]\n"
      "  qt = Transpose(q) {perm: [0, 2, 1, 3]}\n"
      "  kt = Transpose(k) {perm: [0, 2, 1, 3]}\n"
      "  vt = Transpose(v) {perm: [0, 2, 1, 3]}\n"
      "  o = Attention(qt, kt, vt)\n"
      "  ot = Transpose(o) {perm: [0, 2, 1, 3]}\n"
      "  output ot\n}\n";
  g = parse(text2);
  CHECK(g != NULL);
  if (!g) return;
  p = plan_of(g, -1, -1);
  if (p) {
    CHECK_EQ_INT(p->num_groups, 1);
    CHECK(p->groups[0].kind == XC_GROUP_ATTENTION);
    CHECK_EQ_INT(p->groups[0].num_nodes, 5);
  }
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static char* print_to_string(const xc_fusion_plan_t* p, const xc_graph_t* g, xc_plan_format_t fmt) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return NULL;
  CHECK_OK(xc_fusion_plan_print(p, g, f, fmt));
  fclose(f);
  return buf;
}

static void test_print_and_stats(void) {
  const char* text =
      "xir 1\ngraph g opset 23 {\n"
      "  input x: f32[n, 8]\n  input w: f32[8, 16]\n"
      "  a = MatMul(x, w)\n  b = Relu(a)\n  t = Transpose(b)\n"
      "  output t\n}\n";
  xc_graph_t* g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (!p) {
    xc_graph_destroy(g);
    return;
  }
  CHECK_EQ_INT(p->num_groups, 2);
  char* txt = print_to_string(p, g, XC_PLAN_TEXT);
  CHECK(txt && strstr(txt, "2 groups, 2 kernels, 3 nodes"));
  CHECK(txt && strstr(txt, "group 0 gemm (2 ops): MatMul_0:MatMul, Relu_1:Relu"));
  CHECK(txt && strstr(txt, "group 1 data-movement (1 op): Transpose_2:Transpose"));
  CHECK(txt && strstr(txt, "out: b f32[n,16]"));
  free(txt);
  char* dot = print_to_string(p, g, XC_PLAN_DOT);
  CHECK(dot && strncmp(dot, "digraph \"g\" {", 13) == 0);
  CHECK(dot && strstr(dot, "subgraph cluster_g0"));
  CHECK(dot && strstr(dot, "label=\"g1 data-movement\""));
  CHECK(dot && strstr(dot, "[style=bold, label=\"b\"]"));
  free(dot);
  xc_graph_stats_t st;
  CHECK_OK(xc_graph_stats_compute(g, p, &st));
  CHECK_EQ_INT(st.num_nodes, 3);
  CHECK_EQ_INT(st.num_op_kinds, 3);
  CHECK_EQ_INT(st.num_groups, 2);
  CHECK_EQ_INT(st.num_kernel_groups, 2);
  /* b [n,16] and t [16,n] with n = 1: 2 * 16 * 4 bytes */
  CHECK_EQ_INT(st.bytes_moved, 128);
  CHECK(st.symbolic_as_one);
  xc_graph_stats_free(&st);
  CHECK_OK(xc_graph_stats_compute(g, NULL, &st));
  CHECK_EQ_INT(st.num_groups, -1);
  CHECK_EQ_INT(st.bytes_moved, -1);
  xc_graph_stats_free(&st);
  char* sbuf = NULL;
  size_t slen = 0;
  FILE* f = open_memstream(&sbuf, &slen);
  CHECK_OK(xc_graph_stats_print(g, p, f));
  fclose(f);
  CHECK(sbuf && strstr(sbuf, "groups: 2 (2 kernels)"));
  CHECK(sbuf && strstr(sbuf, "bytes moved between kernels: 128 (symbolic dims evaluated as 1)"));
  free(sbuf);
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_dim_estimate(void) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_graph_create("d", &g));
  if (!g) return;
  xc_dim_t n = xc_dim_var(g, "n");
  /* floordiv(n - 1, 2) + 1 and ceildiv(n - 8, 3) */
  xc_dim_t a = xc_dim_add(g, xc_dim_floordiv(g, xc_dim_sub(g, n, xc_dim_const(1)), xc_dim_const(2)),
                          xc_dim_const(1));
  xc_dim_t b = xc_dim_ceildiv(g, xc_dim_sub(g, n, xc_dim_const(8)), xc_dim_const(3));
  bool sym = false;
  CHECK_EQ_INT(xc_dim_estimate(a, 1, &sym), 1);
  CHECK(sym);
  CHECK_EQ_INT(xc_dim_estimate(a, 8, NULL), 4);
  CHECK_EQ_INT(xc_dim_estimate(b, 1, NULL), -2); /* ceil(-7/3) */
  CHECK_EQ_INT(xc_dim_estimate(b, 15, NULL), 3);
  sym = false;
  CHECK_EQ_INT(xc_dim_estimate(xc_dim_const(6), 1, &sym), 6);
  CHECK(!sym);
  CHECK_EQ_INT(xc_dim_estimate(xc_dim_mul(g, n, xc_dim_const(INT64_C(1) << 40)), INT64_C(1) << 40, NULL), -1);
  xc_status_free(xc_graph_take_error(g));
  xc_graph_destroy(g);
}

/* ---- shared models -------------------------------------------------------- */

static xc_graph_t* load_optimized(const char* path, int* imported_nodes) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_load_model(path, &g);
  if (!s) s = xc_graph_infer(g);
  if (!s) *imported_nodes = g->num_nodes;
  xc_pass_options_t o;
  xc_pass_options_init(&o);
  if (!s) s = xc_passes_run(g, &o);
  if (s) {
    fprintf(stderr, "skipping %s: %s\n", path, xc_status_message(s));
    xc_status_free(s);
    xc_graph_destroy(g);
    return NULL;
  }
  return g;
}

static int count_in(const xc_fusion_group_t* gr, const char* op) {
  int c = 0;
  for (int m = 0; m < gr->num_nodes; m++) c += strcmp(gr->nodes[m]->op_type, op) == 0;
  return c;
}

static void check_transformer(const char* path, int layers) {
  int imported = 0;
  xc_graph_t* g = load_optimized(path, &imported);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  if (!p) {
    xc_graph_destroy(g);
    return;
  }
  CHECK(p->num_groups * 3 <= imported);
  int attention = 0, softmax_total = 0;
  for (int i = 0; i < p->num_groups; i++) {
    const xc_fusion_group_t* gr = &p->groups[i];
    int sm = count_in(gr, "Softmax") + count_in(gr, "Attention");
    softmax_total += sm;
    if (gr->kind == XC_GROUP_ATTENTION) {
      attention++;
      CHECK_EQ_INT(sm, 1);
    }
  }
  /* each attention block (one Softmax or Attention each) is one group */
  CHECK_EQ_INT(attention, layers);
  CHECK_EQ_INT(softmax_total, layers);
  /* every LayerNormalization shares its group with the Add producing its input */
  int ln = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (strcmp(n->op_type, "LayerNormalization") != 0) continue;
    ln++;
    const xc_node_t* a = n->inputs[0]->producer;
    CHECK(a && strcmp(a->op_type, "Add") == 0);
    CHECK(a && xc_fusion_plan_group_of(p, a) == xc_fusion_plan_group_of(p, n));
  }
  CHECK(ln >= 2 * layers);
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

static void test_shared_models(void) {
  check_transformer("tests/models/gpt2-tiny/model.onnx", 2);
  check_transformer("tests/models/bert-tiny/model.onnx", 2);
  int imported = 0;
  xc_graph_t* g = load_optimized("tests/models/cnn/model.onnx", &imported);
  if (!g) return;
  xc_fusion_plan_t* p = plan_of(g, -1, -1);
  int convs = 0;
  for (int i = 0; p && i < g->num_nodes; i++) {
    const xc_node_t* n = g->nodes[i];
    if (strcmp(n->op_type, "Conv") != 0) continue;
    convs++;
    const xc_value_t* y = n->outputs[0];
    /* its only consumer is a Relu in the same group */
    const xc_node_t* relu = NULL;
    for (int j = 0; j < g->num_nodes; j++)
      for (int k = 0; k < g->nodes[j]->num_inputs; k++)
        if (g->nodes[j]->inputs[k] == y) relu = g->nodes[j];
    CHECK(relu && strcmp(relu->op_type, "Relu") == 0);
    CHECK(relu && xc_fusion_plan_group_of(p, relu) == xc_fusion_plan_group_of(p, n));
    CHECK(xc_fusion_plan_group_of(p, n)->kind == XC_GROUP_CONV);
  }
  CHECK_EQ_INT(convs, 2);
  xc_fusion_plan_destroy(p);
  xc_graph_destroy(g);
}

int main(void) {
  test_elementwise_chain();
  test_max_ops_splits_chain();
  test_gemm_epilogue_and_residual();
  test_epilogue_does_not_broadcast();
  test_conv_relu_and_views();
  test_nhwc_conv_epilogue();
  test_view_group();
  test_layernorm_with_residual();
  test_shared_value_not_duplicated();
  test_reduction_row_must_fit();
  test_two_reductions_apart();
  test_no_cycle();
  test_no_cycle_through_group();
  test_attention_chain();
  test_print_and_stats();
  test_dim_estimate();
  test_shared_models();
  return xc_test_summary("test_fusion");
}
