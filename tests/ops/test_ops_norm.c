/* Tests of the norm op family: normalizations, softmax family, LRN,
 * Attention, RotaryEmbedding and the losses. Expectations are hand-derived (small
 * sizes) or closed formulas written in the test. */
#include "nn_test_util.h"

#define T(dt, rank, dims, ...) \
  nt_tensor((dt), (rank), (const int64_t[])dims, (const double[]){__VA_ARGS__})
#define D(...) \
  { __VA_ARGS__ }

static void init_n(nt_case_t* c, const char* op, int nin, int nout, unsigned omit, xc_tensor_t* a,
                   xc_tensor_t* b, xc_tensor_t* cc, xc_tensor_t* d, xc_tensor_t* e,
                   xc_tensor_t* f) {
  xc_tensor_t* ins[6] = {a, b, cc, d, e, f};
  nt_init(c, op, nin, ins, nout, omit);
}

static void test_batchnorm(void) {
  nt_case_t c;
  init_n(&c, "BatchNormalization", 5, 1, 0, T(XC_F32, 4, D(1, 2, 1, 2), 1, 2, 3, 4),
         T(XC_F32, 1, D(2), 1, 2), T(XC_F32, 1, D(2), 0, 1), T(XC_F32, 1, D(2), 1.5, 3.5),
         T(XC_F32, 1, D(2), 0.25, 0.25), NULL);
  xc_node_set_float(c.g, c.node, "epsilon", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, -1, 1, -1, 3);
  nt_free(&c);
  /* Default epsilon 1e-5 enters under the square root. */
  init_n(&c, "BatchNormalization", 5, 1, 0, T(XC_F64, 2, D(1, 1), 2), T(XC_F64, 1, D(1), 1),
         T(XC_F64, 1, D(1), 0), T(XC_F64, 1, D(1), 0), T(XC_F64, 1, D(1), 1), NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 2 / sqrt(1 + 1e-5));
  nt_free(&c);
  init_n(&c, "BatchNormalization", 5, 1, 0, T(XC_F32, 3, D(1, 2, 1), 1, 2),
         T(XC_F32, 1, D(3), 1, 1, 1), T(XC_F32, 1, D(2), 0, 0), T(XC_F32, 1, D(2), 0, 0),
         T(XC_F32, 1, D(2), 1, 1), NULL);
  CHECK_ERR(nt_run(&c), "scale has 3 elements");
  nt_free(&c);
  init_n(&c, "BatchNormalization", 5, 1, 0, T(XC_F32, 3, D(1, 1, 1), 1), T(XC_F32, 1, D(1), 1),
         T(XC_F32, 1, D(1), 0), T(XC_F32, 1, D(1), 0), T(XC_F32, 1, D(1), 1), NULL);
  xc_node_set_int(c.g, c.node, "training_mode", 1);
  CHECK_ERR(nt_run(&c), "training_mode");
  nt_free(&c);
  init_n(&c, "BatchNormalization", 5, 3, 0, T(XC_F32, 3, D(1, 1, 1), 1), T(XC_F32, 1, D(1), 1),
         T(XC_F32, 1, D(1), 0), T(XC_F32, 1, D(1), 0), T(XC_F32, 1, D(1), 1), NULL);
  CHECK_ERR(nt_run(&c), "training mode");
  nt_free(&c);
}

static void test_layernorm(void) {
  nt_case_t c;
  init_n(&c, "LayerNormalization", 3, 3, 0, T(XC_F32, 2, D(2, 4), 1, 2, 3, 4, 2, 2, 2, 2),
         T(XC_F32, 1, D(4), 1, 1, 2, 2), T(XC_F32, 1, D(4), 0, 0, 0, 1), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  double inv = 1 / sqrt(1.25 + 1e-5);
  double want[8] = {-1.5 * inv, -0.5 * inv, 0.5 * inv * 2, 1.5 * inv * 2 + 1, 0, 0, 0, 1};
  nt_check_values(__FILE__, __LINE__, c.out[0], want, 8, 1e-6);
  NT_CHECK_SHAPE(c.out[1], 2, 2, 1);
  NT_CHECK_VALUES(c.out[1], 1e-6, 2.5, 2);
  double want_inv[2] = {inv, 1 / sqrt(1e-5)};
  nt_check_values(__FILE__, __LINE__, c.out[2], want_inv, 2, 1e-3);
  CHECK(c.out[2] && c.out[2]->dtype == XC_F32);
  nt_free(&c);
  /* axis 0: normalize everything; scale broadcast from [1]. */
  init_n(&c, "LayerNormalization", 2, 1, 0, T(XC_F64, 2, D(2, 1), 1, 3), T(XC_F64, 1, D(1), 3),
         NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "axis", 0);
  xc_node_set_float(c.g, c.node, "epsilon", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, -3, 3);
  nt_free(&c);
  /* Bad scale shape and axis. */
  init_n(&c, "LayerNormalization", 2, 1, 0, T(XC_F32, 2, D(1, 4), 1, 2, 3, 4),
         T(XC_F32, 1, D(3), 1, 1, 1), NULL, NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "scale");
  nt_free(&c);
  init_n(&c, "LayerNormalization", 2, 1, 0, T(XC_F32, 2, D(1, 4), 1, 2, 3, 4),
         T(XC_F32, 1, D(4), 1, 1, 1, 1), NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "axis", 2);
  CHECK_ERR(nt_run(&c), "axis 2 out of range");
  nt_free(&c);
  /* Symbolic shapes of Mean. */
  init_n(&c, "LayerNormalization", 2, 2, 0, nt_tensor(XC_F32, 3, (const int64_t[]){2, 3, 8}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){8}, NULL), NULL, NULL, NULL, NULL);
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"b", "s", "8"});
  CHECK_OK(nt_infer(&c));
  char buf[32];
  xc_value_t* m = c.node->outputs[1];
  CHECK_STR(xc_dim_print(m->dims[1], buf, sizeof buf), "s");
  CHECK_STR(xc_dim_print(m->dims[2], buf, sizeof buf), "1");
  nt_free(&c);
}

static void test_rms_instance_group(void) {
  nt_case_t c;
  init_n(&c, "RMSNormalization", 2, 1, 0, T(XC_F32, 2, D(1, 3), 1, 2, 2),
         T(XC_F32, 1, D(3), 1, 1, -1), NULL, NULL, NULL, NULL);
  xc_node_set_float(c.g, c.node, "epsilon", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1 / sqrt(3), 2 / sqrt(3), -2 / sqrt(3));
  nt_free(&c);
  init_n(&c, "InstanceNormalization", 3, 1, 0, T(XC_F64, 3, D(1, 2, 2), 1, 3, 2, 2),
         T(XC_F64, 1, D(2), 2, 1), T(XC_F64, 1, D(2), 0, 5), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, -2 / sqrt(1.00001), 2 / sqrt(1.00001), 5, 5);
  nt_free(&c);
  init_n(&c, "GroupNormalization", 3, 1, 0, T(XC_F32, 3, D(1, 4, 1), 1, 3, 10, 14),
         T(XC_F32, 1, D(4), 1, 2, 3, 4), T(XC_F32, 1, D(4), 0, 0, 0, 1), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "num_groups", 2);
  xc_node_set_float(c.g, c.node, "epsilon", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, -1, 2, -3, 5);
  nt_free(&c);
  init_n(&c, "GroupNormalization", 3, 1, 0, T(XC_F32, 3, D(1, 4, 1), 1, 3, 10, 14),
         T(XC_F32, 1, D(4), 1, 2, 3, 4), T(XC_F32, 1, D(4), 0, 0, 0, 1), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "num_groups", 3);
  CHECK_ERR(nt_run(&c), "does not divide");
  nt_free(&c);
}

static void test_lp_mvn_lrn(void) {
  nt_case_t c;
  init_n(&c, "LpNormalization", 1, 1, 0, T(XC_F32, 2, D(2, 2), 3, 4, 0, 5), NULL, NULL, NULL, NULL,
         NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 0.6, 0.8, 0, 1);
  nt_free(&c);
  init_n(&c, "LpNormalization", 1, 1, 0, T(XC_F32, 2, D(2, 2), 3, 4, 0, 5), NULL, NULL, NULL, NULL,
         NULL);
  xc_node_set_int(c.g, c.node, "p", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 3.0 / 7, 4.0 / 7, 0, 1);
  nt_free(&c);
  init_n(&c, "LpNormalization", 1, 1, 0, T(XC_F64, 2, D(2, 2), 3, 4, 0, 5), NULL, NULL, NULL, NULL,
         NULL);
  xc_node_set_int(c.g, c.node, "axis", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 1, 4 / sqrt(41), 0, 5 / sqrt(41));
  nt_free(&c);
  /* A zero vector stays zero. */
  init_n(&c, "LpNormalization", 1, 1, 0, T(XC_F32, 2, D(2, 2), 0, 0, 3, 4), NULL, NULL, NULL, NULL,
         NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 0, 0, 0.6, 0.8);
  nt_free(&c);
  init_n(&c, "MeanVarianceNormalization", 1, 1, 0, T(XC_F32, 4, D(1, 2, 1, 2), 1, 3, 5, 5), NULL,
         NULL, NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, -1, 1, 0, 0);
  nt_free(&c);
  init_n(&c, "LRN", 1, 1, 0, T(XC_F64, 4, D(1, 3, 1, 1), 1, 2, 3), NULL, NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "size", 3);
  xc_node_set_float(c.g, c.node, "alpha", 3);
  xc_node_set_float(c.g, c.node, "beta", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 1.0 / 6, 2.0 / 15, 3.0 / 14);
  nt_free(&c);
  /* Even size: the window extends one channel further up than down. */
  init_n(&c, "LRN", 1, 1, 0, T(XC_F64, 4, D(1, 3, 1, 1), 1, 2, 3), NULL, NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "size", 2);
  xc_node_set_float(c.g, c.node, "alpha", 2);
  xc_node_set_float(c.g, c.node, "beta", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 1.0 / 6, 2.0 / 14, 3.0 / 10);
  nt_free(&c);
}

static void test_softmax(void) {
  nt_case_t c;
  init_n(&c, "Softmax", 1, 1, 0, T(XC_F32, 2, D(2, 3), 1, 2, 3, 1000, 1000, 1000), NULL, NULL, NULL,
         NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-7, 0.09003057, 0.24472847, 0.66524096, 1.0 / 3, 1.0 / 3, 1.0 / 3);
  nt_free(&c);
  init_n(&c, "LogSoftmax", 1, 1, 0, T(XC_F64, 1, D(3), 1, 2, 3), NULL, NULL, NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-8, -2.40760596, -1.40760596, -0.40760596);
  nt_free(&c);
  /* axis 0 of [2,2]: pairs down the columns. */
  init_n(&c, "Softmax", 1, 1, 0, T(XC_F16, 2, D(2, 2), 0, 5, 0, 5), NULL, NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "axis", 0);
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->dtype == XC_F16);
  NT_CHECK_VALUES(c.out[0], 0, 0.5, 0.5, 0.5, 0.5);
  nt_free(&c);
  init_n(&c, "Hardmax", 1, 1, 0, T(XC_F32, 2, D(2, 3), 1, 3, 3, 2, 1, 0), NULL, NULL, NULL, NULL,
         NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 0, 1, 0, 1, 0, 0);
  nt_free(&c);
  init_n(&c, "Hardmax", 1, 1, 0, T(XC_F32, 2, D(2, 3), 1, 3, 3, 2, 1, 0), NULL, NULL, NULL, NULL,
         NULL);
  xc_node_set_int(c.g, c.node, "axis", 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 0, 1, 1, 1, 0, 0);
  nt_free(&c);
  init_n(&c, "Softmax", 1, 1, 0, T(XC_F32, 1, D(2), 1, 2), NULL, NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "axis", -2);
  CHECK_ERR(nt_run(&c), "out of range");
  nt_free(&c);
  init_n(&c, "Softmax", 1, 1, 0, T(XC_I32, 1, D(2), 1, 2), NULL, NULL, NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "dtype");
  nt_free(&c);
  /* Empty along the axis. */
  init_n(&c, "Softmax", 1, 1, 0, nt_tensor(XC_F32, 2, (const int64_t[]){2, 0}, NULL), NULL, NULL,
         NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 2, 2, 0);
  nt_free(&c);
}

/* ---- Attention ---------------------------------------------------------- */

/* softmax([1, 0]) . [10, 20] */
#define ATT_1_0 12.689414213699951
/* softmax([-1, 0]) . [10, 20] */
#define ATT_M1_0 17.310585786300049

static void test_attention_basic(void) {
  nt_case_t c;
  /* 4-D: one head, one query, two keys. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 1), 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 1);
  NT_CHECK_VALUES(c.out[0], 1e-5, ATT_1_0);
  nt_free(&c);
  /* scale = 2: scores [2, 0]. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F64, 4, D(1, 1, 1, 1), 1),
         T(XC_F64, 4, D(1, 1, 2, 1), 1, 0), T(XC_F64, 4, D(1, 1, 2, 1), 10, 20), NULL, NULL, NULL);
  xc_node_set_float(c.g, c.node, "scale", 2.0);
  CHECK_OK(nt_run(&c));
  double e2 = exp(2.0);
  {
    double want = (10 * e2 + 20) / (e2 + 1);
    nt_check_values(__FILE__, __LINE__, c.out[0], &want, 1, 1e-12);
  }
  nt_free(&c);
  /* The default scale is 1/sqrt(head_size): head size 4 halves the score. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F64, 4, D(1, 1, 1, 4), 1, 1, 0, 0),
         T(XC_F64, 4, D(1, 1, 2, 4), 1, 1, 0, 0, 0, 0, 0, 0), T(XC_F64, 4, D(1, 1, 2, 1), 10, 20),
         NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-9, ATT_1_0); /* 2 / sqrt(4) = 1 */
  nt_free(&c);
  /* Causal: query 0 sees key 0 only. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 4, D(1, 1, 2, 1), 1, 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "is_causal", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 10, ATT_1_0);
  nt_free(&c);
  /* Boolean mask [1,2] hides key 1 from every query. */
  init_n(&c, "Attention", 4, 1, 0, T(XC_F32, 4, D(1, 1, 2, 1), 1, 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20),
         T(XC_BOOL, 2, D(1, 2), 1, 0), NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 10, 10);
  nt_free(&c);
  /* Additive mask [0, 1] evens the scores; per-query rows via [2,2]. */
  init_n(&c, "Attention", 4, 1, 0, T(XC_F32, 4, D(1, 1, 2, 1), 1, 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20),
         T(XC_F32, 2, D(2, 2), 0, 1, 0, 0), NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 15, ATT_1_0);
  nt_free(&c);
  /* A mask shorter than the keys pads with "masked"; an all-masked row is 0. */
  init_n(&c, "Attention", 4, 1, 0, T(XC_F32, 4, D(1, 1, 2, 1), 1, 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20),
         T(XC_BOOL, 2, D(2, 1), 1, 0), NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 10, 0);
  nt_free(&c);
}

static void test_attention_gqa_cache(void) {
  nt_case_t c;
  /* 3-D, two query heads sharing one KV head. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 3, D(1, 1, 2), 1, -1), T(XC_F32, 3, D(1, 2, 1), 1, 0),
         T(XC_F32, 3, D(1, 2, 1), 10, 20), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "q_num_heads", 2);
  xc_node_set_int(c.g, c.node, "kv_num_heads", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 3, 1, 1, 2);
  NT_CHECK_VALUES(c.out[0], 1e-5, ATT_1_0, ATT_M1_0);
  nt_free(&c);
  /* 3-D heads split the hidden dim in order: two heads of size 1 for K too. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 3, D(1, 1, 2), 1, -1),
         T(XC_F32, 3, D(1, 2, 2), 1, 0, 0, 0), T(XC_F32, 3, D(1, 2, 2), 10, 1, 20, 2), NULL, NULL,
         NULL);
  xc_node_set_int(c.g, c.node, "q_num_heads", 2);
  xc_node_set_int(c.g, c.node, "kv_num_heads", 2);
  CHECK_OK(nt_run(&c));
  /* head 0: scores [1,0] over V [10,20]; head 1: scores [0,0] over V [1,2]. */
  NT_CHECK_VALUES(c.out[0], 1e-5, ATT_1_0, 1.5);
  nt_free(&c);
  /* KV cache: past key 1 / value 10, new key 0 / value 20, causal. */
  init_n(&c, "Attention", 6, 4, 0, T(XC_F32, 4, D(1, 1, 1, 1), 1), T(XC_F32, 4, D(1, 1, 1, 1), 0),
         T(XC_F32, 4, D(1, 1, 1, 1), 20), NULL, T(XC_F32, 4, D(1, 1, 1, 1), 1),
         T(XC_F32, 4, D(1, 1, 1, 1), 10));
  xc_node_set_int(c.g, c.node, "is_causal", 1);
  xc_node_set_int(c.g, c.node, "qk_matmul_output_mode", 3);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, ATT_1_0);
  NT_CHECK_SHAPE(c.out[1], 4, 1, 1, 2, 1);
  NT_CHECK_VALUES(c.out[1], 0, 1, 0);
  NT_CHECK_VALUES(c.out[2], 0, 10, 20);
  NT_CHECK_VALUES(c.out[3], 1e-6, 0.7310585786, 0.2689414214);
  nt_free(&c);
  /* qk_matmul_output mode 0 gives the scaled scores; softcap 0.5. */
  init_n(&c, "Attention", 3, 4, 0x6, T(XC_F32, 4, D(1, 1, 1, 1), 1),
         T(XC_F32, 4, D(1, 1, 2, 1), 1, 0), T(XC_F32, 4, D(1, 1, 2, 1), 10, 20), NULL, NULL, NULL);
  xc_node_set_float(c.g, c.node, "softcap", 0.5);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 13.817767109287995);
  NT_CHECK_VALUES(c.out[3], 1e-6, 1, 0);
  nt_free(&c);
  /* Symbolic sequence lengths with a cache. */
  init_n(&c, "Attention", 6, 3, 0, nt_tensor(XC_F32, 3, (const int64_t[]){1, 3, 8}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){1, 3, 4}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){1, 3, 4}, NULL), NULL,
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 2, 4}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 2, 4}, NULL));
  xc_node_set_int(c.g, c.node, "q_num_heads", 2);
  xc_node_set_int(c.g, c.node, "kv_num_heads", 1);
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"b", "s", "8"});
  nt_symbolic_input(&c, 1, 3, (const char* const[]){"b", "s", "4"});
  nt_symbolic_input(&c, 2, 3, (const char* const[]){"b", "s", "4"});
  nt_symbolic_input(&c, 4, 4, (const char* const[]){"b", "1", "p", "4"});
  nt_symbolic_input(&c, 5, 4, (const char* const[]){"b", "1", "p", "4"});
  CHECK_OK(nt_infer(&c));
  CHECK_EQ_INT(nt_eval_dim(&c, 1, 2, 2, "p", (int64_t)5, "s", (int64_t)3), 8);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 0), 8);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[1], 4, 1, 1, 5, 4);
  nt_free(&c);
  /* nonpad_kv_seqlen: only the first key of the batch is valid. */
  xc_tensor_t* nonpad = nt_tensor(XC_I64, 1, (const int64_t[]){1}, NULL);
  xc_tensor_set_i64(nonpad, 0, 1);
  xc_tensor_t* ins7[7] = {T(XC_F32, 4, D(1, 1, 1, 1), 1),
                          T(XC_F32, 4, D(1, 1, 2, 1), 1, 0),
                          T(XC_F32, 4, D(1, 1, 2, 1), 10, 20),
                          NULL,
                          NULL,
                          NULL,
                          nonpad};
  nt_init(&c, "Attention", 7, ins7, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-5, 10);
  nt_free(&c);
  /* Errors. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 3, D(1, 1, 2), 1, -1), T(XC_F32, 3, D(1, 2, 1), 1, 0),
         T(XC_F32, 3, D(1, 2, 1), 10, 20), NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "q_num_heads");
  nt_free(&c);
  init_n(&c, "Attention", 3, 1, 0, nt_tensor(XC_F32, 4, (const int64_t[]){1, 3, 1, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 2, 1, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 2, 1, 2}, NULL), NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "multiple");
  nt_free(&c);
  init_n(&c, "Attention", 3, 1, 0, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 3}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL), NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "head size");
  nt_free(&c);
  init_n(&c, "Attention", 5, 1, 0, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL), NULL,
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 1, 2}, NULL), NULL);
  CHECK_ERR(nt_run(&c), "together");
  nt_free(&c);
}

/* ---- RotaryEmbedding ---------------------------------------------------- */

static void test_rotary(void) {
  nt_case_t c;
  /* cos = [0, 1], sin = [1, 0]: the first pair rotates by 90 degrees. */
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 2), 0, 1), T(XC_F32, 3, D(1, 1, 2), 1, 0), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -3, 2, 1, 4);
  nt_free(&c);
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 2), 0, 1), T(XC_F32, 3, D(1, 1, 2), 1, 0), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "interleaved", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -2, 1, 3, 4);
  nt_free(&c);
  /* position_ids pick cache row 2. */
  xc_tensor_t* pos = nt_tensor(XC_I64, 2, (const int64_t[]){1, 1}, NULL);
  xc_tensor_set_i64(pos, 0, 2);
  init_n(&c, "RotaryEmbedding", 4, 1, 0, T(XC_F32, 4, D(1, 1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 2, D(3, 2), 1, 1, 0.5, 0.5, 0, 1), T(XC_F32, 2, D(3, 2), 0, 0, 0.5, 0.5, 1, 0),
         pos, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -3, 2, 1, 4);
  nt_free(&c);
  /* Partial rotation: only the first two of four dims. */
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 1), 0), T(XC_F32, 3, D(1, 1, 1), 1), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "rotary_embedding_dim", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -2, 1, 3, 4);
  nt_free(&c);
  /* 3-D input split into two heads of size 2; two positions, two heads in 4-D. */
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 3, D(1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 1), 0), T(XC_F32, 3, D(1, 1, 1), 1), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "num_heads", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -2, 1, -4, 3);
  nt_free(&c);
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F64, 4, D(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8),
         T(XC_F64, 3, D(1, 2, 1), 1, 0), T(XC_F64, 3, D(1, 2, 1), 0, -1), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  /* position 0 is the identity; position 1 maps (a, b) -> (b, -a). */
  NT_CHECK_VALUES(c.out[0], 0, 1, 2, 4, -3, 5, 6, 8, -7);
  nt_free(&c);
  /* Errors. */
  pos = nt_tensor(XC_I64, 2, (const int64_t[]){1, 1}, NULL);
  xc_tensor_set_i64(pos, 0, 3);
  init_n(&c, "RotaryEmbedding", 4, 1, 0, T(XC_F32, 4, D(1, 1, 1, 2), 1, 2),
         T(XC_F32, 2, D(3, 1), 1, 1, 1), T(XC_F32, 2, D(3, 1), 0, 0, 0), pos, NULL, NULL);
  CHECK_ERR(nt_run(&c), "outside the cache");
  nt_free(&c);
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 1), 0), T(XC_F32, 3, D(1, 1, 1), 1), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "rotary_embedding_dim", 3);
  CHECK_ERR(nt_run(&c), "even");
  nt_free(&c);
  init_n(&c, "RotaryEmbedding", 3, 1, 0, T(XC_F32, 3, D(1, 1, 4), 1, 2, 3, 4),
         T(XC_F32, 3, D(1, 1, 1), 0), T(XC_F32, 3, D(1, 1, 1), 1), NULL, NULL, NULL);
  CHECK_ERR(nt_run(&c), "num_heads");
  nt_free(&c);
}

static xc_tensor_t* i64s(int rank, const int64_t* dims, const int64_t* vals) {
  xc_tensor_t* t = nt_tensor(XC_I64, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, vals[i]);
  return t;
}

static void test_losses(void) {
  nt_case_t c;
  const int64_t two[1] = {2};
#define NLL_IN() T(XC_F32, 2, D(2, 3), -1, -2, -3, -4, -5, -6)
  init_n(&c, "NegativeLogLikelihoodLoss", 2, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 2}),
         NULL, NULL, NULL, NULL);
  xc_node_set_string(c.g, c.node, "reduction", "none");
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 1, 2);
  NT_CHECK_VALUES(c.out[0], 0, 1, 6);
  nt_free(&c);
  init_n(&c, "NegativeLogLikelihoodLoss", 2, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 2}),
         NULL, NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->rank == 0);
  NT_CHECK_VALUES(c.out[0], 0, 3.5);
  nt_free(&c);
  /* Weighted mean divides by the weights of the chosen classes. */
  init_n(&c, "NegativeLogLikelihoodLoss", 3, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 2}),
         T(XC_F32, 1, D(3), 1, 1, 0.5), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 4.0 / 1.5);
  nt_free(&c);
  init_n(&c, "NegativeLogLikelihoodLoss", 2, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 2}),
         NULL, NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "ignore_index", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1);
  nt_free(&c);
  init_n(&c, "NegativeLogLikelihoodLoss", 2, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 3}),
         NULL, NULL, NULL, NULL);
  xc_node_set_string(c.g, c.node, "reduction", "sum");
  CHECK_ERR(nt_run(&c), "outside [0, 3)");
  nt_free(&c);
  init_n(&c, "NegativeLogLikelihoodLoss", 2, 1, 0, NLL_IN(), i64s(1, two, (const int64_t[]){0, 1}),
         NULL, NULL, NULL, NULL);
  xc_node_set_string(c.g, c.node, "reduction", "max");
  CHECK_ERR(nt_run(&c), "reduction");
  nt_free(&c);
#undef NLL_IN
  init_n(&c, "SoftmaxCrossEntropyLoss", 2, 2, 0, T(XC_F64, 2, D(1, 2), 0, 0),
         i64s(1, (const int64_t[]){1}, (const int64_t[]){1}), NULL, NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, log(2.0));
  NT_CHECK_VALUES(c.out[1], 1e-12, -log(2.0), -log(2.0));
  nt_free(&c);
}

/* Empty inputs flow through every op of the family. */
static void test_empty_inputs(void) {
  static const char* same_shape[] = {"Softmax", "LogSoftmax", "Hardmax", "LpNormalization",
                                     "MeanVarianceNormalization"};
  for (int i = 0; i < 5; i++) {
    nt_case_t c;
    init_n(&c, same_shape[i], 1, 1, 0, nt_tensor(XC_F32, 4, (const int64_t[]){0, 3, 2, 2}, NULL),
           NULL, NULL, NULL, NULL, NULL);
    CHECK_OK(nt_run(&c));
    NT_CHECK_SHAPE(c.out[0], 4, 0, 3, 2, 2);
    nt_free(&c);
  }
  nt_case_t c;
  init_n(&c, "LayerNormalization", 2, 3, 0, nt_tensor(XC_F32, 2, (const int64_t[]){0, 4}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){4}, NULL), NULL, NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[1], 2, 0, 1);
  nt_free(&c);
  init_n(&c, "BatchNormalization", 5, 1, 0, nt_tensor(XC_F32, 3, (const int64_t[]){0, 2, 3}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){2}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){2}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){2}, NULL), T(XC_F32, 1, D(2), 1, 1), NULL);
  CHECK_OK(nt_run(&c));
  nt_free(&c);
  init_n(&c, "GroupNormalization", 3, 1, 0, nt_tensor(XC_F32, 3, (const int64_t[]){0, 4, 3}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){4}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){4}, NULL), NULL, NULL, NULL);
  xc_node_set_int(c.g, c.node, "num_groups", 2);
  CHECK_OK(nt_run(&c));
  nt_free(&c);
  /* Attention without keys: every row is fully masked, so zeros. */
  init_n(&c, "Attention", 3, 1, 0, T(XC_F32, 4, D(1, 1, 1, 2), 1, 1),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 0, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 0, 3}, NULL), NULL, NULL, NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 0, 0, 0);
  nt_free(&c);
}

int main(void) {
  test_batchnorm();
  test_layernorm();
  test_rms_instance_group();
  test_lp_mvn_lrn();
  test_softmax();
  test_attention_basic();
  test_attention_gqa_cache();
  test_rotary();
  test_losses();
  test_empty_inputs();
  return xc_test_summary("test_ops_norm");
}
