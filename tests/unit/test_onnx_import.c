/* ONNX import: the real models in the shared folder, a few backend tests
 * through the test-case loader, older-opset rewrites, symbolic dims,
 * initializers of every dtype, external data and its confinement.
 *
 * The shared folder comes from $XCOMP_SHARED (default ../shared next to the
 * repository); parts needing it print SKIP when it is absent. While the op
 * registry lacks ops a model uses, models are imported with
 * allow_unknown_ops (structure is still checked) and a NOTE is printed. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/graph.h"
#include "xcomp/interp.h"
#include "xcomp/onnx.h"
#include "xcomp/onnx_testcase.h"
#include "xcomp/op.h"

#define FIX "tests/data/onnx/"

static const char* shared_dir(void) {
  const char* s = getenv("XCOMP_SHARED");
  return s && *s ? s : "../shared";
}

static bool exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static xc_graph_t* import_lenient(const char* path) {
  xc_onnx_import_options_t o = {true, 0};
  xc_graph_t* g = NULL;
  CHECK_OK(xc_onnx_import_file_ex(path, &o, &g));
  return g;
}

/* Imports strictly when the registry has every op, else leniently. */
static xc_graph_t* import_best(const char* path) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_onnx_import_file(path, &g);
  if (!s) return g;
  if (xc_status_code(s) == XC_UNSUPPORTED && strstr(xc_status_message(s), "unsupported op")) {
    fprintf(stderr, "NOTE: %s\n", xc_status_message(s));
    xc_status_free(s);
    return import_lenient(path);
  }
  CHECK_OK(s);
  return NULL;
}

static xc_node_t* find_node(xc_graph_t* g, const char* name) {
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->name, name) == 0) return g->nodes[i];
  return NULL;
}

static int node_index(xc_graph_t* g, const char* name) {
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->name, name) == 0) return i;
  return -1;
}

static bool has_op(xc_graph_t* g, const char* op) {
  for (int i = 0; i < g->num_nodes; i++)
    if (strcmp(g->nodes[i]->op_type, op) == 0) return true;
  return false;
}

/* The graph's distinct op types equal the space-separated list. */
static void check_op_set(xc_graph_t* g, const char* list) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list);
  int listed = 0;
  for (char* tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    listed++;
    if (!has_op(g, tok)) fprintf(stderr, "missing op %s\n", tok);
    CHECK(has_op(g, tok));
  }
  int distinct = 0;
  for (int i = 0; i < g->num_nodes; i++) {
    bool seen = false;
    for (int j = 0; j < i; j++) seen |= strcmp(g->nodes[j]->op_type, g->nodes[i]->op_type) == 0;
    distinct += !seen;
  }
  CHECK_EQ_INT(distinct, listed);
}

static void test_shared_models(void) {
  static const struct {
    const char* name;
    int nodes, inputs, opset;
    const char* ops;
  } models[] = {
      {"mlp", 10, 1, 17, "Add Constant Div Erf Gemm Mul"},
      {"cnn", 8, 1, 17, "Conv Flatten Gemm GlobalAveragePool MaxPool Relu"},
      {"gpt2-tiny", 93, 1, 18,
       "Add Gather Gemm IsNaN LayerNormalization MatMul Mul Pow Reshape Softmax Split Tanh "
       "Transpose Where"},
      {"bert-tiny", 176, 2, 17,
       "Add And Cast Concat Constant ConstantOfShape Div Equal Erf Expand Flatten Gather "
       "GatherElements GreaterOrEqual Identity IsNaN LayerNormalization MatMul Mul Reshape "
       "Shape Softmax Transpose Where"},
  };
  char path[1024];
  snprintf(path, sizeof path, "tests/models");
  if (!exists(path)) {
    printf("SKIP: shared models not found at %s\n", path);
    return;
  }
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
    snprintf(path, sizeof path, "tests/models/%s/model.onnx", models[m].name);
    xc_graph_t* g = import_best(path);
    if (!g) continue;
    CHECK_EQ_INT(g->num_nodes, models[m].nodes);
    CHECK_EQ_INT(g->num_inputs, models[m].inputs);
    CHECK_EQ_INT(g->num_outputs, 1);
    CHECK_EQ_INT(g->opset, models[m].opset);
    check_op_set(g, models[m].ops);
    for (int i = 0; i < g->num_nodes; i++) {
      CHECK(g->nodes[i]->prov.file && strcmp(g->nodes[i]->prov.file, path) == 0);
      CHECK(g->nodes[i]->prov.source && *g->nodes[i]->prov.source);
    }
    xc_graph_destroy(g);
  }
  /* input_ids of gpt2-tiny: i64 [1,16]. */
  snprintf(path, sizeof path, "tests/models/gpt2-tiny/model.onnx");
  xc_graph_t* g = import_best(path);
  if (g) {
    CHECK_STR(g->inputs[0]->name, "input_ids");
    CHECK(g->inputs[0]->dtype == XC_I64 && g->inputs[0]->rank == 2);
    CHECK(xc_dim_is_static(g->inputs[0]->dims[1]) && g->inputs[0]->dims[1].value == 16);
    CHECK_EQ_INT(g->num_initializers, 30);
    xc_graph_destroy(g);
  }
  /* The test-case loader on a real model: bert-tiny has two i64 inputs. */
  snprintf(path, sizeof path, "tests/models/bert-tiny");
  xc_onnx_import_options_t lenient = {true, 0};
  xc_onnx_testcase_t* tc = NULL;
  CHECK_OK(xc_onnx_testcase_load_ex(path, &lenient, &tc));
  if (tc) {
    CHECK_STR(tc->name, "bert-tiny");
    CHECK_EQ_INT(tc->num_sets, 1);
    if (tc->num_sets == 1) {
      CHECK_EQ_INT(tc->sets[0].num_inputs, 2);
      CHECK(tc->sets[0].inputs[1]->dtype == XC_I64 && tc->sets[0].inputs[1]->dims[1] == 16);
      CHECK_EQ_INT(tc->sets[0].num_outputs, 1);
      CHECK(tc->sets[0].expected[0]->dtype == XC_F32);
    }
  }
  xc_onnx_testcase_destroy(tc);
}

static void test_backend_cases(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/onnx-backend-tests/node/test_add", shared_dir());
  if (!exists(path)) {
    printf("SKIP: backend tests not found under %s\n", shared_dir());
    return;
  }
  xc_onnx_import_options_t lenient = {true, 0};
  xc_onnx_testcase_t* tc = NULL;
  CHECK_OK(xc_onnx_testcase_load_ex(path, &lenient, &tc));
  if (tc) {
    CHECK_EQ_INT(tc->graph->num_nodes, 1);
    CHECK_STR(tc->graph->nodes[0]->op_type, "Add");
    CHECK_EQ_INT(tc->num_sets, 1);
    if (tc->num_sets) {
      xc_onnx_test_data_t* s = &tc->sets[0];
      CHECK_EQ_INT(s->num_inputs, 2);
      CHECK(s->inputs[0]->rank == 3 && s->inputs[0]->dims[2] == 5);
      CHECK(s->expected[0]->numel == 60);
      /* output = x + y, elementwise */
      double err = 0;
      for (int64_t i = 0; i < 60; i++)
        err += fabs(xc_tensor_get_f64(s->inputs[0], i) + xc_tensor_get_f64(s->inputs[1], i) -
                    xc_tensor_get_f64(s->expected[0], i));
      CHECK(err < 1e-4);
    }
  }
  xc_onnx_testcase_destroy(tc);
  /* test_softmax_axis_0 is opset 13: no rewrite; axis kept. */
  snprintf(path, sizeof path, "%s/onnx-backend-tests/node/test_softmax_axis_0/model.onnx",
           shared_dir());
  xc_graph_t* g = import_lenient(path);
  if (g) {
    CHECK_EQ_INT(g->num_nodes, 1);
    CHECK_EQ_INT(xc_node_find_attr(g->nodes[0], "axis")->i, 0);
    xc_graph_destroy(g);
  }
  /* Opset 9 model: refused naming both the model's and the supported opsets. */
  snprintf(path, sizeof path, "%s/onnx-backend-tests/node/test_upsample_nearest/model.onnx",
           shared_dir());
  CHECK_ERR(xc_onnx_import_file(path, &g), "model opset 9 is not supported (xcomp supports opsets 11 to 26)");
  /* An opset-25 model imports by default and is refused when the caller
   * lowers the ceiling to 23. */
  snprintf(path, sizeof path, "%s/onnx-backend-tests/node/test_squeeze/model.onnx", shared_dir());
  g = NULL;
  CHECK_OK(xc_onnx_import_file(path, &g));
  xc_graph_destroy(g);
  xc_onnx_import_options_t older = {false, 23};
  g = NULL;
  CHECK_ERR(xc_onnx_import_file_ex(path, &older, &g), "model opset 25 is not supported (xcomp supports opsets 11 to 23)");
}

static const int64_t* const_i64(const xc_value_t* v, int64_t* n) {
  if (!v || !v->constant || v->constant->dtype != XC_I64) return NULL;
  *n = v->constant->numel;
  return v->constant->data;
}

static void test_legacy_rewrites(void) {
  xc_graph_t* g = import_lenient(FIX "legacy_squeeze11.onnx");
  if (g) {
    xc_node_t* sq = find_node(g, "sq");
    CHECK(sq && sq->num_inputs == 2 && !xc_node_find_attr(sq, "axes"));
    int64_t n = 0;
    const int64_t* ax = sq ? const_i64(sq->inputs[1], &n) : NULL;
    CHECK(ax && n == 2 && ax[0] == 0 && ax[1] == 2);
    CHECK(sq && sq->inputs[1]->constant->rank == 1);
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "legacy_reduce11.onnx");
  if (g) {
    int64_t n = 0;
    xc_node_t* rm = find_node(g, "rm");
    const int64_t* ax = rm ? const_i64(rm->inputs[1], &n) : NULL;
    CHECK(ax && n == 1 && ax[0] == -1);
    CHECK(rm && xc_node_find_attr(rm, "keepdims") && xc_node_find_attr(rm, "keepdims")->i == 0);
    xc_node_t* rs = find_node(g, "rs");
    ax = rs ? const_i64(rs->inputs[1], &n) : NULL;
    CHECK(ax && n == 1 && ax[0] == 1);
    /* The two constants got distinct names. */
    CHECK(rm && rs && strcmp(rm->inputs[1]->name, rs->inputs[1]->name) != 0);
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "legacy_split11.onnx");
  if (g) {
    int64_t n = 0;
    xc_node_t* sp = find_node(g, "sp");
    const int64_t* s = sp ? const_i64(sp->inputs[1], &n) : NULL;
    CHECK(s && n == 2 && s[0] == 1 && s[1] == 3);
    CHECK(sp && !xc_node_find_attr(sp, "num_outputs"));
    xc_node_t* sp2 = find_node(g, "sp2");
    CHECK(sp2 && sp2->num_inputs == 1);
    CHECK(sp2 && xc_node_find_attr(sp2, "num_outputs") &&
          xc_node_find_attr(sp2, "num_outputs")->i == 2);
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "legacy_softmax11.onnx");
  if (g) {
    /* sm: default axis 1 of a rank-3 input -> Shape, Flatten(axis 1),
     * Softmax(axis 1), Reshape to the original shape; lsm: axis 2 is the
     * last axis, kept as one node with axis -1. */
    CHECK_EQ_INT(g->num_nodes, 5);
    xc_node_t* sm = find_node(g, "sm");
    xc_node_t* fl = find_node(g, "sm/flatten");
    xc_node_t* rs = find_node(g, "sm/reshape");
    xc_node_t* sh = find_node(g, "sm/shape");
    CHECK(sm && fl && rs && sh);
    if (sm && fl && rs && sh) {
      CHECK_EQ_INT(xc_node_find_attr(sm, "axis")->i, 1);
      CHECK_EQ_INT(xc_node_find_attr(fl, "axis")->i, 1);
      CHECK(sm->inputs[0] == fl->outputs[0]);
      CHECK(rs->inputs[0] == sm->outputs[0] && rs->inputs[1] == sh->outputs[0]);
      CHECK_STR(rs->outputs[0]->name, "y");
      CHECK(rs->outputs[0]->producer == rs);
      CHECK_STR(fl->prov.source, "sm");
      CHECK(node_index(g, "sm/flatten") < node_index(g, "sm") &&
            node_index(g, "sm") < node_index(g, "sm/reshape"));
    }
    xc_node_t* lsm = find_node(g, "lsm");
    CHECK(lsm && xc_node_find_attr(lsm, "axis")->i == -1 && lsm->inputs[0]->name[0] == 'x');
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "legacy_attrs11.onnx");
  if (g) {
    xc_node_t* clip = find_node(g, "clip");
    CHECK(clip && clip->num_inputs == 3 && clip->num_attrs == 0);
    if (clip && clip->num_inputs == 3) {
      /* min/max take the input's dtype (f64 from the graph input). */
      CHECK(clip->inputs[1]->constant->dtype == XC_F64 && clip->inputs[1]->constant->rank == 0);
      CHECK_NEAR(xc_tensor_get_f64(clip->inputs[1]->constant, 0), -1.0, 0);
      CHECK_NEAR(xc_tensor_get_f64(clip->inputs[2]->constant, 0), 2.5, 0);
    }
    xc_node_t* topk = find_node(g, "topk");
    int64_t n = 0;
    const int64_t* k = topk ? const_i64(topk->inputs[1], &n) : NULL;
    CHECK(k && n == 1 && k[0] == 2 && topk->inputs[1]->constant->rank == 1);
    xc_node_t* drop = find_node(g, "drop");
    CHECK(drop && drop->num_attrs == 0 && drop->num_inputs == 1);
    xc_node_t* pad = find_node(g, "pad");
    const int64_t* pads = pad ? const_i64(pad->inputs[1], &n) : NULL;
    CHECK(pads && n == 4 && pads[1] == 1 && pads[3] == 1);
    if (pad && pad->num_inputs == 3) CHECK_NEAR(xc_tensor_get_f64(pad->inputs[2]->constant, 0), 0.5, 0);
    xc_node_t* sl = find_node(g, "slice");
    CHECK(sl && sl->num_inputs == 4 && sl->num_attrs == 0);
    const int64_t* axes = sl ? const_i64(sl->inputs[3], &n) : NULL;
    CHECK(axes && n == 1 && axes[0] == 1);
    xc_node_t* sc = find_node(g, "scatter");
    CHECK(sc && strcmp(sc->op_type, "ScatterElements") == 0);
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "legacy_resize11.onnx");
  if (g) {
    xc_node_t* rs = find_node(g, "rs");
    /* Empty roi and scales become omitted inputs; sizes stays. */
    CHECK(rs && rs->num_inputs == 4 && !rs->inputs[1] && !rs->inputs[2] && rs->inputs[3]);
    xc_graph_destroy(g);
  }
}

static void test_features(void) {
  xc_graph_t* g = import_lenient(FIX "features.onnx");
  if (!g) return;
  /* w is both an input and an initializer in the file: initializer only. */
  CHECK_EQ_INT(g->num_inputs, 1);
  CHECK_EQ_INT(g->num_initializers, 1);
  xc_value_t* x = g->inputs[0];
  CHECK_STR(x->name, "x");
  CHECK(x->rank == 3);
  if (x->rank == 3) {
    CHECK(x->dims[0].sym && x->dims[0].sym->kind == XC_SYM_VAR &&
          strcmp(x->dims[0].sym->name, "batch") == 0);
    CHECK(x->dims[1].sym && x->dims[1].sym->kind == XC_SYM_VAR &&
          strcmp(x->dims[1].sym->name, "batch") != 0);
    CHECK(xc_dim_is_static(x->dims[2]) && x->dims[2].value == 4);
  }
  xc_value_t* w = xc_graph_find_value(g, "w");
  CHECK(w && (w->flags & XC_VALUE_INITIALIZER) && !(w->flags & XC_VALUE_INPUT));
  /* Nodes were out of order in the file; toposorted now. */
  CHECK_EQ_INT(g->num_nodes, 3);
  int add = node_index(g, "Add_1"), mul = node_index(g, "mul"), c = node_index(g, "const");
  CHECK(add >= 0 && mul >= 0 && c >= 0 && add < mul && c < mul);
  xc_node_t* cn = find_node(g, "const");
  CHECK(cn && strcmp(cn->op_type, "Constant") == 0);
  const xc_attr_t* v = cn ? xc_node_find_attr(cn, "value") : NULL;
  CHECK(v && v->kind == XC_ATTR_TENSOR && v->t->rank == 0);
  if (v && v->t) CHECK_NEAR(xc_tensor_get_f64(v->t, 0), 2.5, 0);
  xc_node_t* an = find_node(g, "Add_1");
  CHECK(an && strcmp(an->prov.file, FIX "features.onnx") == 0);
  CHECK_STR(g->outputs[0]->name, "y");
  xc_graph_destroy(g);
}

static void test_dtypes(void) {
  xc_graph_t* g = import_lenient(FIX "dtypes.onnx");
  if (!g) return;
  static const struct {
    const char* name;
    xc_dtype_t dt;
    double v[3];
  } want[] = {
      {"float", XC_F32, {1.5, -2.0, 3.25}},     {"double", XC_F64, {1e300, -0.5, 2.0}},
      {"float16", XC_F16, {1.0, -2.0, 0.5}},    {"bfloat16", XC_BF16, {1.0, -2.0, 0.5}},
      {"int8", XC_I8, {-128, 0, 127}},          {"int16", XC_I16, {-32768, 1, 32767}},
      {"int32", XC_I32, {-2147483648.0, 5, 2147483647}},
      {"uint8", XC_U8, {0, 1, 255}},            {"uint16", XC_U16, {0, 1, 65535}},
      {"uint32", XC_U32, {0, 1, 4294967295.0}}, {"bool", XC_BOOL, {1, 0, 1}},
      {"float8e4m3fn", XC_F8E4M3FN, {1.0, -2.0, 448.0}},
      {"float8e5m2", XC_F8E5M2, {1.0, -2.0, 0.5}},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    for (int raw = 0; raw < 2; raw++) {
      char nm[64];
      snprintf(nm, sizeof nm, "%s_%s", want[i].name, raw ? "raw" : "typed");
      xc_value_t* v = xc_graph_find_value(g, nm);
      CHECK(v && v->constant && v->constant->dtype == want[i].dt);
      if (!v || !v->constant) {
        fprintf(stderr, "initializer %s\n", nm);
        continue;
      }
      for (int k = 0; k < 3; k++) CHECK_NEAR(xc_tensor_get_f64(v->constant, k), want[i].v[k], 0);
    }
  for (int raw = 0; raw < 2; raw++) {
    xc_value_t* v = xc_graph_find_value(g, raw ? "int64_raw" : "int64_typed");
    CHECK(v && v->constant && xc_tensor_get_i64(v->constant, 0) == INT64_MIN &&
          xc_tensor_get_i64(v->constant, 2) == INT64_MAX);
    v = xc_graph_find_value(g, raw ? "uint64_raw" : "uint64_typed");
    CHECK(v && v->constant && ((uint64_t*)v->constant->data)[2] == UINT64_MAX);
  }
  xc_graph_destroy(g);
}

static void test_external_data(void) {
  xc_graph_t* g = import_lenient(FIX "extdata/model.onnx");
  if (g) {
    xc_value_t* w = xc_graph_find_value(g, "w");
    CHECK(w && w->constant && w->constant->numel == 1024);
    if (w && w->constant) {
      CHECK(!w->constant->owns_data); /* mapped in place, not copied */
      CHECK_NEAR(xc_tensor_get_f64(w->constant, 0), 0, 0);
      CHECK_NEAR(xc_tensor_get_f64(w->constant, 1023), 1023, 0);
      /* Writable copy-on-write mapping: the file is untouched. */
      ((float*)w->constant->data)[0] = 5.0f;
    }
    xc_value_t* b = xc_graph_find_value(g, "b");
    CHECK(b && b->constant && xc_tensor_get_i64(b->constant, 2) == 30);
    xc_graph_destroy(g);
  }
  g = import_lenient(FIX "extdata/model.onnx");
  if (g) {
    xc_value_t* w = xc_graph_find_value(g, "w");
    if (w && w->constant) CHECK_NEAR(xc_tensor_get_f64(w->constant, 0), 0, 0);
    xc_graph_destroy(g);
  }
  static const struct {
    const char* file;
    const char* msg;
  } bad[] = {
      {"abs_path", "initializer 'w': external data location '/etc/passwd' is an absolute path"},
      {"dotdot", "contains '..'"},
      {"escape_link", "resolves outside the model's folder"},
      {"past_end", "offset 4200 is past the end of 'weights.bin'"},
      {"too_long", "exceeds 'weights.bin'"},
      {"wrong_length", "external data holds 12 bytes, its shape needs 8"},
      {"missing_file", "nothere.bin"},
      {"bad_offset", "bad external data offset '-4'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char p[256];
    snprintf(p, sizeof p, FIX "extdata/%s.onnx", bad[i].file);
    xc_onnx_import_options_t o = {true, 0};
    CHECK_ERR(xc_onnx_import_file_ex(p, &o, &g), bad[i].msg);
  }
  /* A FIFO in the model's folder is refused without blocking. */
  char tmp[] = "/tmp/xc_onnx_fifo_XXXXXX";
  if (mkdtemp(tmp)) {
    char model[128], fifo[128], cmd[512];
    snprintf(model, sizeof model, "%s/model.onnx", tmp);
    snprintf(fifo, sizeof fifo, "%s/fifo.bin", tmp);
    snprintf(cmd, sizeof cmd, "cp " FIX "extdata/fifo_model.onnx %s", model);
    if (system(cmd) == 0 && mkfifo(fifo, 0600) == 0) {
      xc_onnx_import_options_t o = {true, 0};
      CHECK_ERR(xc_onnx_import_file_ex(model, &o, &g), "'fifo.bin' is not a regular file");
    } else {
      printf("SKIP: could not set up the FIFO test\n");
    }
    remove(fifo);
    remove(model);
    rmdir(tmp);
  }
  /* From memory without a folder, external data is refused. */
  uint8_t buf[512];
  FILE* f = fopen(FIX "extdata/model.onnx", "rb");
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  xc_onnx_import_options_t o = {true, 0};
  CHECK_ERR(xc_onnx_import_buffer_ex(buf, n, "mem", NULL, &o, &g), "folder is unknown");
}

/* The rewritten older-opset models compute what the old ops computed: the
 * expected outputs in tests/data/onnx/cases were made with numpy from the
 * old semantics (e.g. Softmax-11 coercing to 2-D at axis 1). */
static void test_legacy_numerics(void) {
  static const char* cases[] = {"legacy_softmax11", "legacy_squeeze11", "legacy_reduce11",
                                "legacy_split11",   "legacy_attrs11",   "legacy_resize11"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char dir[256];
    snprintf(dir, sizeof dir, FIX "cases/%s", cases[c]);
    xc_onnx_testcase_t* tc = NULL;
    xc_status_t s = xc_onnx_testcase_load(dir, &tc);
    if (s && xc_status_code(s) == XC_UNSUPPORTED) {
      printf("SKIP: %s: %s\n", cases[c], xc_status_message(s));
      xc_status_free(s);
      continue;
    }
    CHECK_OK(s);
    if (!tc) continue;
    CHECK_EQ_INT(tc->num_sets, 1);
    s = xc_graph_infer(tc->graph);
    CHECK_OK(s);
    if (!s && tc->num_sets == 1) {
      xc_onnx_test_data_t* d = &tc->sets[0];
      xc_tensor_t* outs[16] = {0};
      CHECK(d->num_outputs <= 16);
      CHECK_OK(xc_interp_run(tc->graph, NULL, d->num_inputs,
                             (const xc_tensor_t* const*)d->inputs, outs));
      for (int k = 0; k < d->num_outputs && k < 16; k++) {
        const xc_tensor_t* want = d->expected[k];
        CHECK(outs[k] && outs[k]->dtype == want->dtype && outs[k]->numel == want->numel &&
              outs[k]->rank == want->rank);
        if (!outs[k] || outs[k]->numel != want->numel) continue;
        double worst = 0;
        for (int64_t i = 0; i < want->numel; i++) {
          double e = fabs(xc_tensor_get_f64(outs[k], i) - xc_tensor_get_f64(want, i));
          if (e > worst) worst = e;
        }
        if (worst > 1e-5) fprintf(stderr, "%s output %d: max error %g\n", cases[c], k, worst);
        CHECK(worst <= 1e-5);
        xc_tensor_destroy(outs[k]);
      }
    }
    xc_onnx_testcase_destroy(tc);
  }
}

int main(void) {
  test_shared_models();
  test_backend_cases();
  test_legacy_rewrites();
  test_features();
  test_dtypes();
  test_external_data();
  test_legacy_numerics();
  return xc_test_summary("test_onnx_import");
}
