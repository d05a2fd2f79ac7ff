/* Tests of the conv op family: Conv, ConvInteger, DeformConv, ConvTranspose,
 * pooling, MaxUnpool, Col2Im, GridSample, AffineGrid, RoiAlign. Values are
 * hand-derived, or checked against an im2col formulation written here, or
 * by the adjoint identity <ConvTranspose(x), y> = <x, Conv(y)>. */
#include "nn_test_util.h"

#define T(dt, rank, dims, ...) \
  nt_tensor((dt), (rank), (const int64_t[])dims, (const double[]){__VA_ARGS__})
#define D(...) \
  { __VA_ARGS__ }
#define INTS(...)                                                                          \
  (int64_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]) { \
    __VA_ARGS__                                                                            \
  }

static uint32_t rng_state = 12345;
static double rnd(void) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (double)((rng_state >> 8) % 2001) / 1000.0 - 1.0;
}
static xc_tensor_t* random_tensor(xc_dtype_t dt, int rank, const int64_t* dims) {
  xc_tensor_t* t = nt_tensor(dt, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_f64(t, i, rnd());
  return t;
}

static xc_status_t run_op(nt_case_t* c, const char* op, int n, xc_tensor_t* a, xc_tensor_t* b,
                          xc_tensor_t* d) {
  xc_tensor_t* ins[3] = {a, b, d};
  nt_init(c, op, n, ins, 1, 0);
  return NULL;
}

/* ---- Conv --------------------------------------------------------------- */

static void test_conv_known_values(void) {
  nt_case_t c;
  int64_t xd[4] = {1, 1, 5, 5}, wd[4] = {1, 1, 3, 3};
  /* The classic 5x5 ramp with a 3x3 box filter. */
  run_op(&c, "Conv", 2, nt_iota(XC_F32, 4, xd, 0, 1), nt_iota(XC_F32, 4, wd, 1, 0), NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 3, 3);
  NT_CHECK_VALUES(c.out[0], 0, 54, 63, 72, 99, 108, 117, 144, 153, 162);
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_iota(XC_F32, 4, xd, 0, 1), nt_iota(XC_F32, 4, wd, 1, 0), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1, 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 3, 3);
  NT_CHECK_VALUES(c.out[0], 0, 12, 27, 24, 63, 108, 81, 72, 117, 84);
  nt_free(&c);
  /* Asymmetric padding: 7x5 ramp, pads top/bottom 1, strides 2. */
  int64_t xd2[4] = {1, 1, 7, 5};
  run_op(&c, "Conv", 2, nt_iota(XC_F32, 4, xd2, 0, 1), nt_iota(XC_F32, 4, wd, 1, 0), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 0, 1, 0));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 4, 2);
  NT_CHECK_VALUES(c.out[0], 0, 21, 33, 99, 117, 189, 207, 171, 183);
  nt_free(&c);
  /* 1-D: auto_pad variants, stride, dilation, bias. */
  run_op(&c, "Conv", 2, T(XC_F32, 3, D(1, 1, 4), 1, 2, 3, 4), T(XC_F32, 3, D(1, 1, 2), 1, 1), NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_UPPER");
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 3, 5, 7, 4);
  nt_free(&c);
  run_op(&c, "Conv", 2, T(XC_F32, 3, D(1, 1, 4), 1, 2, 3, 4), T(XC_F32, 3, D(1, 1, 2), 1, 1), NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_LOWER");
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 3, 5, 7);
  nt_free(&c);
  run_op(&c, "Conv", 2, T(XC_F32, 3, D(1, 1, 5), 1, 2, 3, 4, 5), T(XC_F32, 3, D(1, 1, 3), 1, 1, 1),
         NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_UPPER");
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 3, 9, 9);
  nt_free(&c);
  run_op(&c, "Conv", 2, T(XC_F32, 3, D(1, 1, 5), 1, 2, 3, 4, 5), T(XC_F32, 3, D(1, 1, 2), 1, 1),
         NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "VALID");
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_ints(c.g, c.node, "pads", INTS(3, 3)); /* ignored with VALID */
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 3, 7);
  nt_free(&c);
  run_op(&c, "Conv", 3, T(XC_F64, 3, D(1, 1, 5), 1, 2, 3, 4, 5), T(XC_F64, 3, D(1, 1, 2), 1, 10),
         T(XC_F64, 1, D(1), 0.5));
  xc_node_set_ints(c.g, c.node, "dilations", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 31.5, 42.5, 53.5);
  nt_free(&c);
  /* Groups: per-channel 1x1 scaling. */
  run_op(&c, "Conv", 2, T(XC_F32, 3, D(1, 2, 2), 1, 2, 3, 4), T(XC_F32, 3, D(2, 1, 1), 2, 3), NULL);
  xc_node_set_int(c.g, c.node, "group", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 2, 4, 9, 12);
  nt_free(&c);
  /* Empty batch. */
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){0, 1, 3, 3}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){2, 1, 2, 2}, NULL), NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 0, 2, 2, 2);
  nt_free(&c);
}

/* Convolution by im2col: gathers each receptive field into a column of
 * (C/group * kernel) values, then takes dot products with the weights. */
typedef struct {
  int nsp;
  int64_t n, c, m, group;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
} conv_cfg_t;

static void im2col_conv(const conv_cfg_t* q, const double* x, const double* w, const double* b,
                        double* y) {
  int64_t cg = q->c / q->group, mg = q->m / q->group;
  int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1};
  int64_t p3[3] = {0, 0, 0}, o3[3] = {1, 1, 1};
  for (int i = 0; i < q->nsp; i++) {
    int j = 3 - q->nsp + i;
    in3[j] = q->in[i];
    k3[j] = q->k[i];
    s3[j] = q->s[i];
    d3[j] = q->d[i];
    p3[j] = q->pb[i];
    o3[j] = q->out[i];
  }
  int64_t ksz = k3[0] * k3[1] * k3[2], isz = in3[0] * in3[1] * in3[2], osz = o3[0] * o3[1] * o3[2];
  double* col = malloc(sizeof(double) * (size_t)(cg * ksz));
  for (int64_t bi = 0; bi < q->n; bi++)
    for (int64_t g = 0; g < q->group; g++)
      for (int64_t z = 0; z < o3[0]; z++)
        for (int64_t yy = 0; yy < o3[1]; yy++)
          for (int64_t xx = 0; xx < o3[2]; xx++) {
            int64_t r = 0;
            for (int64_t ci = 0; ci < cg; ci++)
              for (int64_t a = 0; a < k3[0]; a++)
                for (int64_t e = 0; e < k3[1]; e++)
                  for (int64_t f = 0; f < k3[2]; f++) {
                    int64_t iz = z * s3[0] - p3[0] + a * d3[0];
                    int64_t iy = yy * s3[1] - p3[1] + e * d3[1];
                    int64_t ix = xx * s3[2] - p3[2] + f * d3[2];
                    bool in =
                        iz >= 0 && iz < in3[0] && iy >= 0 && iy < in3[1] && ix >= 0 && ix < in3[2];
                    col[r++] =
                        in ? x[(bi * q->c + g * cg + ci) * isz + (iz * in3[1] + iy) * in3[2] + ix]
                           : 0.0;
                  }
            for (int64_t mo = 0; mo < mg; mo++) {
              int64_t oc = g * mg + mo;
              double acc = b ? b[oc] : 0;
              for (int64_t t = 0; t < cg * ksz; t++) acc += col[t] * w[oc * cg * ksz + t];
              y[(bi * q->m + oc) * osz + (z * o3[1] + yy) * o3[2] + xx] = acc;
            }
          }
  free(col);
}

static void check_conv_against_im2col(conv_cfg_t q, bool bias) {
  int rank = q.nsp + 2;
  int64_t xd[5] = {q.n, q.c}, wd[5] = {q.m, q.c / q.group};
  for (int i = 0; i < q.nsp; i++) {
    xd[2 + i] = q.in[i];
    wd[2 + i] = q.k[i];
    int64_t ek = (q.k[i] - 1) * q.d[i] + 1;
    q.out[i] = (q.in[i] + q.pb[i] + q.pe[i] - ek) / q.s[i] + 1;
  }
  xc_tensor_t* x = random_tensor(XC_F64, rank, xd);
  xc_tensor_t* w = random_tensor(XC_F64, rank, wd);
  xc_tensor_t* b = bias ? random_tensor(XC_F64, 1, &q.m) : NULL;
  int64_t on = q.n * q.m;
  for (int i = 0; i < q.nsp; i++) on *= q.out[i];
  double* want = malloc(sizeof(double) * (size_t)on);
  im2col_conv(&q, x->data, w->data, b ? b->data : NULL, want);
  nt_case_t c;
  run_op(&c, "Conv", bias ? 3 : 2, x, w, b);
  int64_t pads[6], st[3], dl[3];
  for (int i = 0; i < q.nsp; i++) {
    pads[i] = q.pb[i];
    pads[q.nsp + i] = q.pe[i];
    st[i] = q.s[i];
    dl[i] = q.d[i];
  }
  xc_node_set_ints(c.g, c.node, "pads", 2 * q.nsp, pads);
  xc_node_set_ints(c.g, c.node, "strides", q.nsp, st);
  xc_node_set_ints(c.g, c.node, "dilations", q.nsp, dl);
  xc_node_set_int(c.g, c.node, "group", q.group);
  CHECK_OK(nt_run(&c));
  nt_check_values(__FILE__, __LINE__, c.out[0], want, on, 1e-9);
  free(want);
  nt_free(&c);
}

static void test_conv_im2col(void) {
  /* 2-D, padded, strided, dilated, two groups, bias. */
  check_conv_against_im2col(
      (conv_cfg_t){2, 2, 4, 6, 2, {7, 6}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {2, 1}, {0}}, true);
  /* Depthwise 2-D. */
  check_conv_against_im2col(
      (conv_cfg_t){2, 1, 3, 3, 3, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0}}, false);
  /* 1-D with stride 3 and asymmetric pads. */
  check_conv_against_im2col((conv_cfg_t){1, 2, 3, 2, 1, {11}, {4}, {3}, {1}, {2}, {0}, {0}}, true);
  /* 3-D. */
  check_conv_against_im2col(
      (conv_cfg_t){
          3, 1, 2, 4, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {0, 1, 1}, {1, 1, 0}, {0}},
      true);
}

static void test_conv_errors(void) {
  nt_case_t c;
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 3, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){2, 2, 3, 3}, NULL), NULL);
  CHECK_ERR(nt_run(&c), "channel mismatch");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 3, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){2, 1, 3, 3}, NULL), NULL);
  xc_node_set_int(c.g, c.node, "group", 2);
  CHECK_ERR(nt_run(&c), "does not divide");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 2, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, NULL), NULL);
  CHECK_ERR(nt_run(&c), "larger than the padded input");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 2, 2}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1, 0, 0));
  CHECK_OK(nt_run(&c)); /* 2 + 1 = 3 fits exactly */
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 1);
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1));
  CHECK_ERR(nt_run(&c), "'pads' has 2 values");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, NULL), NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME");
  CHECK_ERR(nt_run(&c), "auto_pad");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "strides", INTS(0, 1));
  CHECK_ERR(nt_run(&c), "out of range");
  nt_free(&c);
  run_op(&c, "ConvTranspose", 2, nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 5}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(INT64_C(1) << 40, 0));
  CHECK_ERR(nt_run(&c), "out of range");
  nt_free(&c);
  run_op(&c, "Conv", 3, nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 5, 5}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){2, 1, 3, 3}, NULL),
         nt_tensor(XC_F32, 1, (const int64_t[]){3}, NULL));
  CHECK_ERR(nt_run(&c), "bias");
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_I32, 3, (const int64_t[]){1, 1, 5}, NULL),
         nt_tensor(XC_I32, 3, (const int64_t[]){1, 1, 3}, NULL), NULL);
  CHECK_ERR(nt_run(&c), "dtype");
  nt_free(&c);
}

static void test_conv_symbolic(void) {
  nt_case_t c;
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 4, (const int64_t[]){2, 3, 9, 8}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){8, 3, 3, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1, 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  nt_symbolic_input(&c, 0, 4, (const char* const[]){"n", "3", "h", "w"});
  CHECK_OK(nt_infer(&c));
  char buf[64];
  xc_value_t* y = c.node->outputs[0];
  CHECK_STR(xc_dim_print(y->dims[0], buf, sizeof buf), "n");
  CHECK_STR(xc_dim_print(y->dims[1], buf, sizeof buf), "8");
  CHECK_STR(xc_dim_print(y->dims[2], buf, sizeof buf), "floordiv(h+-1,2)+1");
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)7), 4);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)8), 4);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 3, 1, "w", (int64_t)9), 5);
  /* The interpreter binds n, h, w and checks the kernel against these. */
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 8, 5, 4);
  nt_free(&c);
  run_op(&c, "Conv", 2, nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 7}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 3}, NULL), NULL);
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_LOWER");
  xc_node_set_ints(c.g, c.node, "strides", INTS(3));
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"n", "1", "len"});
  CHECK_OK(nt_infer(&c));
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "len", (int64_t)7), 3);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "len", (int64_t)9), 3);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 3, 1, 1, 3);
  nt_free(&c);
}

static void test_conv_integer(void) {
  nt_case_t c;
  xc_tensor_t* ins[4] = {T(XC_U8, 3, D(1, 1, 3), 2, 3, 4), T(XC_U8, 3, D(1, 1, 2), 1, 2),
                         T(XC_U8, 0, D(0), 1), NULL};
  nt_init(&c, "ConvInteger", 3, ins, 1, 0);
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1));
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->dtype == XC_I32);
  /* x - 1 = [1, 2, 3]; padding contributes nothing. */
  NT_CHECK_VALUES(c.out[0], 0, 2, 5, 8, 3);
  nt_free(&c);
  /* Per-output-channel weight zero points, int8. */
  xc_tensor_t* ins2[4] = {T(XC_I8, 3, D(1, 1, 2), -1, 2), T(XC_I8, 3, D(2, 1, 1), 3, -4),
                          T(XC_I8, 0, D(0), 0), T(XC_I8, 1, D(2), 1, -5)};
  nt_init(&c, "ConvInteger", 4, ins2, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, -2, 4, -1, 2);
  nt_free(&c);
}

static void test_deform_conv(void) {
  nt_case_t c;
  /* Offsets of +0.5 along w sample halfway between neighbours; the last
   * sample's right neighbour is outside and counts as zero. */
  xc_tensor_t* ins[5] = {T(XC_F32, 4, D(1, 1, 1, 3), 1, 2, 3), T(XC_F32, 4, D(1, 1, 1, 1), 1),
                         T(XC_F32, 4, D(1, 2, 1, 3), 0, 0, 0, 0.5, 0.5, 0.5), NULL,
                         T(XC_F32, 4, D(1, 1, 1, 3), 1, 2, 0)};
  nt_init(&c, "DeformConv", 3, ins, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1.5, 2.5, 1.5);
  c.in[4] = NULL;
  nt_free(&c);
  xc_tensor_t* ins2[5] = {T(XC_F32, 4, D(1, 1, 1, 3), 1, 2, 3), T(XC_F32, 4, D(1, 1, 1, 1), 1),
                          T(XC_F32, 4, D(1, 2, 1, 3), 0, 0, 0, 0.5, 0.5, 0.5), NULL,
                          T(XC_F32, 4, D(1, 1, 1, 3), 1, 2, 0)};
  nt_init(&c, "DeformConv", 5, ins2, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1.5, 5, 0);
  nt_free(&c);
  xc_tensor_destroy(ins[4]);
  /* Zero offsets: exactly a Conv with the same geometry and groups. */
  int64_t xd[4] = {2, 4, 5, 6}, wd[4] = {6, 2, 3, 2}, od[4] = {2, 2 * 2 * 6, 2, 5};
  xc_tensor_t* x = random_tensor(XC_F64, 4, xd);
  xc_tensor_t* w = random_tensor(XC_F64, 4, wd);
  xc_tensor_t *x2, *w2;
  CHECK_OK(xc_tensor_clone(x, &x2));
  CHECK_OK(xc_tensor_clone(w, &w2));
  xc_tensor_t* ins3[3] = {x, w, nt_tensor(XC_F64, 4, od, NULL)};
  nt_case_t dc, cv;
  nt_init(&dc, "DeformConv", 3, ins3, 1, 0);
  run_op(&cv, "Conv", 2, x2, w2, NULL);
  nt_case_t* both[2] = {&dc, &cv};
  for (int k = 0; k < 2; k++) {
    xc_node_set_ints(both[k]->g, both[k]->node, "pads", INTS(1, 0, 0, 1));
    xc_node_set_ints(both[k]->g, both[k]->node, "strides", INTS(2, 1));
    xc_node_set_ints(both[k]->g, both[k]->node, "dilations", INTS(1, 2));
    xc_node_set_int(both[k]->g, both[k]->node, "group", 2);
  }
  xc_node_set_int(dc.g, dc.node, "offset_group", 2);
  CHECK_OK(nt_run(&dc));
  CHECK_OK(nt_run(&cv));
  if (dc.out[0] && cv.out[0]) {
    NT_CHECK_SHAPE(dc.out[0], 4, 2, 6, 2, 5);
    double* want = malloc(sizeof(double) * (size_t)cv.out[0]->numel);
    for (int64_t i = 0; i < cv.out[0]->numel; i++) want[i] = xc_tensor_get_f64(cv.out[0], i);
    nt_check_values(__FILE__, __LINE__, dc.out[0], want, cv.out[0]->numel, 1e-12);
    free(want);
  }
  nt_free(&dc);
  nt_free(&cv);
  /* 3-D is refused clearly. */
  xc_tensor_t* ins4[3] = {nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 3}, NULL),
                          nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 1}, NULL),
                          nt_tensor(XC_F32, 3, (const int64_t[]){1, 2, 3}, NULL)};
  nt_init(&c, "DeformConv", 3, ins4, 1, 0);
  CHECK_ERR(nt_run(&c), "only 2-D");
  nt_free(&c);
}

/* ---- ConvTranspose ------------------------------------------------------ */

static void test_convtranspose_values(void) {
  nt_case_t c;
#define CT1(w, ...) run_op(&c, "ConvTranspose", 2, T(XC_F32, 3, D(1, 1, 3), 1, 2, 3), w, NULL)
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 1));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 3, 5, 3);
  nt_free(&c);
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 1, 2, 2, 3, 3);
  nt_free(&c);
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 2, 2, 3);
  nt_free(&c);
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_ints(c.g, c.node, "output_padding", INTS(1));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 1, 2, 2, 3, 3, 0);
  nt_free(&c);
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_ints(c.g, c.node, "output_shape", INTS(5));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 1, 2, 2, 3);
  nt_free(&c);
  /* Full result of kernel 3, stride 2 is [1,1,3,2,5,3,3]; SAME keeps 6. */
  CT1(T(XC_F32, 3, D(1, 1, 3), 1, 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_UPPER");
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 1, 3, 2, 5, 3);
  nt_free(&c);
  CT1(T(XC_F32, 3, D(1, 1, 3), 1, 1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_LOWER");
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 3, 2, 5, 3, 3);
  nt_free(&c);
  /* Dilation 2, kernel [1,10]: taps at offsets 0 and 2. */
  CT1(T(XC_F32, 3, D(1, 1, 2), 1, 10));
  xc_node_set_ints(c.g, c.node, "dilations", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 2, 13, 20, 30);
  nt_free(&c);
#undef CT1
  /* Groups and bias: 2 groups, each channel scaled. */
  run_op(&c, "ConvTranspose", 3, T(XC_F32, 3, D(1, 2, 2), 1, 2, 3, 4),
         T(XC_F32, 3, D(2, 1, 1), 2, 3), T(XC_F32, 1, D(2), 0.5, -1));
  xc_node_set_int(c.g, c.node, "group", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 2.5, 4.5, 8, 11);
  nt_free(&c);
  /* Channel mismatch. */
  run_op(&c, "ConvTranspose", 2, nt_tensor(XC_F32, 3, (const int64_t[]){1, 2, 3}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){3, 1, 2}, NULL), NULL);
  CHECK_ERR(nt_run(&c), "channel mismatch");
  nt_free(&c);
}

static double dot(const xc_tensor_t* a, const xc_tensor_t* b) {
  double s = 0;
  for (int64_t i = 0; i < a->numel; i++) s += xc_tensor_get_f64(a, i) * xc_tensor_get_f64(b, i);
  return s;
}

/* ConvTranspose is the adjoint of Conv with the same weight and geometry. */
static void check_adjoint(int nsp, int64_t n, int64_t c, int64_t m, int64_t group,
                          const int64_t* in, const int64_t* k, const int64_t* s, const int64_t* d,
                          const int64_t* pads, const int64_t* out_pad) {
  int rank = nsp + 2;
  int64_t xd[5] = {n, c}, wd[5] = {c, m / group};
  for (int i = 0; i < nsp; i++) {
    xd[2 + i] = in[i];
    wd[2 + i] = k[i];
  }
  xc_tensor_t* x = random_tensor(XC_F64, rank, xd);
  xc_tensor_t* w = random_tensor(XC_F64, rank, wd);
  xc_tensor_t* w2;
  CHECK_OK(xc_tensor_clone(w, &w2));
  nt_case_t ct, cv;
  run_op(&ct, "ConvTranspose", 2, x, w, NULL);
  xc_node_set_ints(ct.g, ct.node, "strides", nsp, s);
  xc_node_set_ints(ct.g, ct.node, "dilations", nsp, d);
  xc_node_set_ints(ct.g, ct.node, "pads", 2 * nsp, pads);
  xc_node_set_ints(ct.g, ct.node, "output_padding", nsp, out_pad);
  xc_node_set_int(ct.g, ct.node, "group", group);
  CHECK_OK(nt_run(&ct));
  if (!ct.out[0]) {
    nt_free(&ct);
    xc_tensor_destroy(w2);
    return;
  }
  for (int i = 0; i < nsp; i++) {
    int64_t want =
        s[i] * (in[i] - 1) + out_pad[i] + (k[i] - 1) * d[i] + 1 - pads[i] - pads[nsp + i];
    CHECK_EQ_INT(ct.out[0]->dims[2 + i], want);
  }
  xc_tensor_t* y = random_tensor(XC_F64, rank, ct.out[0]->dims);
  xc_tensor_t* y2;
  CHECK_OK(xc_tensor_clone(y, &y2));
  run_op(&cv, "Conv", 2, y, w2, NULL);
  xc_node_set_ints(cv.g, cv.node, "strides", nsp, s);
  xc_node_set_ints(cv.g, cv.node, "dilations", nsp, d);
  xc_node_set_ints(cv.g, cv.node, "pads", 2 * nsp, pads);
  xc_node_set_int(cv.g, cv.node, "group", group);
  CHECK_OK(nt_run(&cv));
  if (cv.out[0]) {
    CHECK(cv.out[0]->numel == x->numel);
    if (cv.out[0]->numel == x->numel) CHECK_NEAR(dot(ct.out[0], y2), dot(x, cv.out[0]), 1e-9);
  }
  xc_tensor_destroy(y2);
  nt_free(&ct);
  nt_free(&cv);
}

static void test_convtranspose_adjoint(void) {
  check_adjoint(2, 2, 4, 6, 2, (const int64_t[]){3, 4}, (const int64_t[]){3, 2},
                (const int64_t[]){2, 3}, (const int64_t[]){1, 2}, (const int64_t[]){1, 0, 1, 1},
                (const int64_t[]){1, 0});
  check_adjoint(1, 1, 3, 2, 1, (const int64_t[]){5}, (const int64_t[]){4}, (const int64_t[]){1},
                (const int64_t[]){1}, (const int64_t[]){0, 0}, (const int64_t[]){0});
  check_adjoint(3, 1, 2, 2, 1, (const int64_t[]){2, 3, 2}, (const int64_t[]){2, 2, 3},
                (const int64_t[]){2, 1, 2}, (const int64_t[]){1, 2, 1},
                (const int64_t[]){0, 1, 1, 1, 0, 1}, (const int64_t[]){0, 0, 1});
}

static void test_convtranspose_symbolic(void) {
  nt_case_t c;
  run_op(&c, "ConvTranspose", 2, nt_tensor(XC_F32, 4, (const int64_t[]){1, 2, 4, 4}, NULL),
         nt_tensor(XC_F32, 4, (const int64_t[]){2, 3, 3, 3}, NULL), NULL);
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1, 1, 1));
  nt_symbolic_input(&c, 0, 4, (const char* const[]){"n", "2", "h", "w"});
  CHECK_OK(nt_infer(&c));
  /* 2*(h-1) + 3 - 2 = 2h - 1 */
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)4), 7);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 1, 0), 3);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 3, 7, 7);
  nt_free(&c);
}

/* ---- pooling ------------------------------------------------------------ */

static void test_maxpool(void) {
  nt_case_t c;
  int64_t d44[4] = {1, 1, 4, 4};
  xc_tensor_t* in[1] = {nt_iota(XC_F32, 4, d44, 1, 1)};
  nt_init(&c, "MaxPool", 1, in, 2, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 6, 8, 14, 16);
  CHECK(c.out[1] && c.out[1]->dtype == XC_I64);
  NT_CHECK_VALUES(c.out[1], 0, 5, 7, 13, 15);
  nt_free(&c);
  in[0] = nt_iota(XC_F32, 4, d44, 1, 1);
  nt_init(&c, "MaxPool", 1, in, 2, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  xc_node_set_int(c.g, c.node, "storage_order", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[1], 0, 5, 13, 7, 15);
  nt_free(&c);
  /* Indices count the batch and channel planes too. */
  int64_t d2[4] = {2, 1, 2, 2};
  in[0] = T(XC_F32, 4, D(2, 1, 2, 2), 1, 9, 2, 3, 7, 1, 8, 0);
  (void)d2;
  nt_init(&c, "MaxPool", 1, in, 2, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 9, 8);
  NT_CHECK_VALUES(c.out[1], 0, 1, 6);
  nt_free(&c);
  /* Padding: neighbourhood maxima of a 3x3 ramp. */
  in[0] = nt_iota(XC_F32, 4, (const int64_t[]){1, 1, 3, 3}, 1, 1);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(3, 3));
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1, 1, 1));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 5, 6, 6, 8, 9, 9, 8, 9, 9);
  nt_free(&c);
  /* ceil_mode. */
  in[0] = nt_iota(XC_F32, 4, d44, 1, 1);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(3, 3));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  xc_node_set_int(c.g, c.node, "ceil_mode", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 2, 2);
  NT_CHECK_VALUES(c.out[0], 0, 11, 12, 15, 16);
  nt_free(&c);
  in[0] = nt_iota(XC_F32, 4, d44, 1, 1);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(3, 3));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 1);
  NT_CHECK_VALUES(c.out[0], 0, 11);
  nt_free(&c);
  /* A window that would start in the end padding is dropped. */
  in[0] = T(XC_F32, 4, D(1, 1, 2, 2), 1, 2, 3, 4);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(1, 1));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  xc_node_set_int(c.g, c.node, "ceil_mode", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 1);
  NT_CHECK_VALUES(c.out[0], 0, 1);
  nt_free(&c);
  /* Dilations. */
  in[0] = nt_iota(XC_F32, 4, d44, 1, 1);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "dilations", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 11, 12, 15, 16);
  nt_free(&c);
  /* uint8 and SAME_UPPER in 1-D. */
  in[0] = T(XC_U8, 3, D(1, 1, 5), 3, 200, 7, 1, 9);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_string(c.g, c.node, "auto_pad", "SAME_UPPER");
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->dtype == XC_U8);
  NT_CHECK_VALUES(c.out[0], 0, 200, 7, 9);
  nt_free(&c);
  /* Errors. */
  in[0] = nt_tensor(XC_F32, 4, d44, NULL);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  CHECK_ERR(nt_run(&c), "kernel_shape");
  nt_free(&c);
  in[0] = nt_tensor(XC_F32, 4, d44, NULL);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(5, 5));
  CHECK_ERR(nt_run(&c), "larger than the padded input");
  nt_free(&c);
  in[0] = nt_tensor(XC_F32, 4, d44, NULL);
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2, 2));
  CHECK_ERR(nt_run(&c), "'kernel_shape' has 3 values");
  nt_free(&c);
}

static void test_maxpool_symbolic(void) {
  nt_case_t c;
  xc_tensor_t* in[1] = {nt_tensor(XC_F32, 4, (const int64_t[]){1, 1, 5, 6}, NULL)};
  nt_init(&c, "MaxPool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  xc_node_set_int(c.g, c.node, "ceil_mode", 1);
  nt_symbolic_input(&c, 0, 4, (const char* const[]){"n", "1", "h", "w"});
  CHECK_OK(nt_infer(&c));
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)5), 3);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)6), 3);
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 2, 1, "h", (int64_t)7), 4);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 3, 3);
  nt_free(&c);
}

static void test_avg_lp_global(void) {
  nt_case_t c;
  xc_tensor_t* in[1];
#define POOL1(op, ...) (in[0] = T(XC_F64, 3, D(1, 1, 4), __VA_ARGS__), nt_init(&c, op, 1, in, 1, 0))
  POOL1("AveragePool", 1, 2, 3, 4);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(3));
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 1.5, 2, 3, 3.5);
  nt_free(&c);
  POOL1("AveragePool", 1, 2, 3, 4);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(3));
  xc_node_set_ints(c.g, c.node, "pads", INTS(1, 1));
  xc_node_set_int(c.g, c.node, "count_include_pad", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 1, 2, 3, 7.0 / 3);
  nt_free(&c);
  /* ceil_mode: the last window covers only x[4]. */
  in[0] = T(XC_F32, 3, D(1, 1, 5), 1, 2, 3, 4, 5);
  nt_init(&c, "AveragePool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_int(c.g, c.node, "ceil_mode", 1);
  xc_node_set_int(c.g, c.node, "count_include_pad", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1.5, 3.5, 5);
  nt_free(&c);
  in[0] = T(XC_F32, 3, D(1, 1, 5), 1, 2, 3, 4, 5);
  nt_init(&c, "AveragePool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2));
  xc_node_set_ints(c.g, c.node, "dilations", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 2, 3, 4);
  nt_free(&c);
  /* 3-D average of a 2x2x2 ramp. */
  in[0] = nt_iota(XC_F16, 5, (const int64_t[]){1, 1, 2, 2, 2}, 1, 1);
  nt_init(&c, "AveragePool", 1, in, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 4.5);
  nt_free(&c);
  POOL1("LpPool", 3, -4, 0, 5);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 5, 5);
  nt_free(&c);
  POOL1("LpPool", 3, -4, 0, 5);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2));
  xc_node_set_int(c.g, c.node, "p", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-12, 7, 5);
  nt_free(&c);
#undef POOL1
  int64_t d[4] = {1, 2, 2, 2};
  in[0] = nt_iota(XC_F32, 4, d, 1, 1);
  nt_init(&c, "GlobalAveragePool", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 2, 1, 1);
  NT_CHECK_VALUES(c.out[0], 0, 2.5, 6.5);
  nt_free(&c);
  in[0] = nt_iota(XC_F32, 4, d, 1, 1);
  nt_init(&c, "GlobalMaxPool", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 4, 8);
  nt_free(&c);
  in[0] = T(XC_F32, 3, D(1, 1, 2), 3, 4);
  nt_init(&c, "GlobalLpPool", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 5);
  nt_free(&c);
  in[0] = nt_tensor(XC_F32, 2, (const int64_t[]){2, 2}, NULL);
  nt_init(&c, "GlobalAveragePool", 1, in, 1, 0);
  CHECK_ERR(nt_run(&c), "rank >= 3");
  nt_free(&c);
}

static xc_tensor_t* i64s(int rank, const int64_t* dims, const int64_t* vals) {
  xc_tensor_t* t = nt_tensor(XC_I64, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) xc_tensor_set_i64(t, i, vals[i]);
  return t;
}

static void test_unpool_col2im(void) {
  nt_case_t c;
  const int64_t d22[4] = {1, 1, 2, 2};
  xc_tensor_t* ins[3] = {T(XC_F32, 4, D(1, 1, 2, 2), 5, 6, 7, 8),
                         i64s(4, d22, (const int64_t[]){5, 7, 13, 15}), NULL};
  nt_init(&c, "MaxUnpool", 2, ins, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 4, 4);
  NT_CHECK_VALUES(c.out[0], 0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8);
  nt_free(&c);
  /* A larger output_shape keeps the indices' (row, col) positions. */
  xc_tensor_t* ins2[3] = {T(XC_F32, 4, D(1, 1, 2, 2), 5, 6, 7, 8),
                          i64s(4, d22, (const int64_t[]){5, 7, 13, 15}),
                          i64s(1, (const int64_t[]){4}, (const int64_t[]){1, 1, 5, 5})};
  nt_init(&c, "MaxUnpool", 3, ins2, 1, 0);
  xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
  xc_node_set_ints(c.g, c.node, "strides", INTS(2, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 5, 5);
  if (c.out[0] && c.out[0]->numel == 25) {
    CHECK_NEAR(xc_tensor_get_f64(c.out[0], 6), 5, 0);
    CHECK_NEAR(xc_tensor_get_f64(c.out[0], 8), 6, 0);
    CHECK_NEAR(xc_tensor_get_f64(c.out[0], 16), 7, 0);
    CHECK_NEAR(xc_tensor_get_f64(c.out[0], 18), 8, 0);
  }
  nt_free(&c);
  /* Col2Im, 1-D: block 2 over an image of 3 gives [a0, a1 + b0, b1]. */
  xc_tensor_t* ins3[3] = {T(XC_F32, 3, D(1, 2, 2), 1, 2, 10, 20),
                          i64s(1, (const int64_t[]){1}, (const int64_t[]){3}),
                          i64s(1, (const int64_t[]){1}, (const int64_t[]){2})};
  nt_init(&c, "Col2Im", 3, ins3, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 3, 1, 1, 3);
  NT_CHECK_VALUES(c.out[0], 0, 1, 12, 20);
  nt_free(&c);
  xc_tensor_t* ins4[3] = {T(XC_F32, 3, D(1, 2, 3), 1, 2, 3, 4, 5, 6),
                          i64s(1, (const int64_t[]){1}, (const int64_t[]){3}),
                          i64s(1, (const int64_t[]){1}, (const int64_t[]){2})};
  nt_init(&c, "Col2Im", 3, ins4, 1, 0);
  CHECK_ERR(nt_run(&c), "does not match");
  nt_free(&c);
}

static xc_status_t grid_sample(nt_case_t* c, const char* mode, const char* padding, int align,
                               xc_tensor_t* grid) {
  xc_tensor_t* ins[2] = {T(XC_F32, 4, D(1, 1, 2, 2), 1, 2, 3, 4), grid};
  nt_init(c, "GridSample", 2, ins, 1, 0);
  xc_node_set_string(c->g, c->node, "mode", mode);
  xc_node_set_string(c->g, c->node, "padding_mode", padding);
  xc_node_set_int(c->g, c->node, "align_corners", align);
  return nt_run(c);
}

static void test_grid_sample(void) {
  nt_case_t c;
  /* align_corners: the grid's corners are the corner pixel centers. */
  CHECK_OK(grid_sample(&c, "linear", "zeros", 1, T(XC_F32, 4, D(1, 1, 3, 2), 0, 0, -1, -1, 1, -1)));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 3);
  NT_CHECK_VALUES(c.out[0], 1e-6, 2.5, 1, 2);
  nt_free(&c);
  /* Without align_corners (-1,-1) is the outer corner: half a pixel out. */
  CHECK_OK(grid_sample(&c, "linear", "zeros", 0, T(XC_F32, 4, D(1, 1, 1, 2), -1, -1)));
  NT_CHECK_VALUES(c.out[0], 1e-6, 0.25);
  nt_free(&c);
  CHECK_OK(grid_sample(&c, "linear", "border", 0, T(XC_F32, 4, D(1, 1, 1, 2), -1, -1)));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1);
  nt_free(&c);
  CHECK_OK(grid_sample(&c, "linear", "reflection", 0, T(XC_F32, 4, D(1, 1, 1, 2), -1, -1)));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1);
  nt_free(&c);
  /* nearest: 0.6 rounds to pixel 1 in both dims. */
  CHECK_OK(grid_sample(&c, "nearest", "zeros", 1, T(XC_F32, 4, D(1, 1, 1, 2), 0.2, 0.2)));
  NT_CHECK_VALUES(c.out[0], 0, 4);
  nt_free(&c);
  /* x is the grid's first coordinate: (1, -1) is the top-right pixel. */
  CHECK_OK(grid_sample(&c, "cubic", "border", 1, T(XC_F32, 4, D(1, 1, 1, 2), 1, -1)));
  NT_CHECK_VALUES(c.out[0], 1e-6, 2);
  nt_free(&c);
  CHECK_ERR(grid_sample(&c, "area", "zeros", 0, T(XC_F32, 4, D(1, 1, 1, 2), 0, 0)), "mode");
  nt_free(&c);
  CHECK_ERR(grid_sample(&c, "linear", "zeros", 0, T(XC_F32, 4, D(1, 1, 1, 3), 0, 0, 0)),
            "last dim");
  nt_free(&c);
  /* AffineGrid: identity and a translation by 0.5 along x. */
  xc_tensor_t* size = nt_tensor(XC_I64, 1, (const int64_t[]){4}, NULL);
  int64_t sv[4] = {1, 1, 2, 2};
  for (int i = 0; i < 4; i++) xc_tensor_set_i64(size, i, sv[i]);
  xc_tensor_t* ins[2] = {T(XC_F32, 3, D(1, 2, 3), 1, 0, 0.5, 0, 1, 0), size};
  nt_init(&c, "AffineGrid", 2, ins, 1, 0);
  xc_node_set_int(c.g, c.node, "align_corners", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 2, 2, 2);
  NT_CHECK_VALUES(c.out[0], 1e-6, -0.5, -1, 1.5, -1, -0.5, 1, 1.5, 1);
  nt_free(&c);
  size = nt_tensor(XC_I64, 1, (const int64_t[]){4}, NULL);
  for (int i = 0; i < 4; i++) xc_tensor_set_i64(size, i, sv[i]);
  xc_tensor_t* ins2[2] = {T(XC_F32, 3, D(1, 2, 3), 1, 0, 0, 0, 1, 0), size};
  nt_init(&c, "AffineGrid", 2, ins2, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, -0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5);
  nt_free(&c);
}

static xc_status_t roi_align(nt_case_t* c, const char* ct, const char* mode, double x2,
                             int64_t batch) {
  xc_tensor_t* bi = nt_tensor(XC_I64, 1, (const int64_t[]){1}, NULL);
  xc_tensor_set_i64(bi, 0, batch);
  xc_tensor_t* ins[3] = {T(XC_F32, 4, D(1, 1, 2, 2), 1, 2, 3, 4),
                         T(XC_F32, 2, D(1, 4), 0, 0, x2, x2), bi};
  nt_init(c, "RoiAlign", 3, ins, 1, 0);
  xc_node_set_string(c->g, c->node, "coordinate_transformation_mode", ct);
  xc_node_set_string(c->g, c->node, "mode", mode);
  xc_node_set_int(c->g, c->node, "sampling_ratio", 1);
  return nt_run(c);
}

static void test_roi_align(void) {
  nt_case_t c;
  /* One sample at the image center averages the four pixels. */
  CHECK_OK(roi_align(&c, "output_half_pixel", "avg", 1, 0));
  NT_CHECK_SHAPE(c.out[0], 4, 1, 1, 1, 1);
  NT_CHECK_VALUES(c.out[0], 1e-6, 2.5);
  nt_free(&c);
  CHECK_OK(roi_align(&c, "half_pixel", "avg", 2, 0));
  NT_CHECK_VALUES(c.out[0], 1e-6, 2.5);
  nt_free(&c);
  /* max mode keeps the largest weighted corner: 0.25 * 4. */
  CHECK_OK(roi_align(&c, "half_pixel", "max", 2, 0));
  NT_CHECK_VALUES(c.out[0], 1e-6, 1);
  nt_free(&c);
  CHECK_ERR(roi_align(&c, "half_pixel", "avg", 2, 1), "batch index");
  nt_free(&c);
  CHECK_ERR(roi_align(&c, "corners", "avg", 2, 0), "coordinate_transformation_mode");
  nt_free(&c);
}

/* Empty batches flow through every op of the family. */
static void test_empty_batches(void) {
  static const char* pools[] = {"MaxPool",           "AveragePool",   "LpPool",
                                "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"};
  for (int i = 0; i < 6; i++) {
    nt_case_t c;
    xc_tensor_t* in[1] = {nt_tensor(XC_F32, 4, (const int64_t[]){0, 2, 3, 3}, NULL)};
    nt_init(&c, pools[i], 1, in, 1, 0);
    if (strncmp(pools[i], "Global", 6) != 0)
      xc_node_set_ints(c.g, c.node, "kernel_shape", INTS(2, 2));
    CHECK_OK(nt_run(&c));
    CHECK(c.out[0] && c.out[0]->numel == 0 && c.out[0]->dims[1] == 2);
    nt_free(&c);
  }
  nt_case_t c;
  run_op(&c, "ConvTranspose", 2, nt_tensor(XC_F32, 3, (const int64_t[]){0, 2, 3}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){2, 1, 2}, NULL), NULL);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 3, 0, 1, 4);
  nt_free(&c);
  /* Zero input channels: the output is the bias. */
  run_op(&c, "Conv", 3, nt_tensor(XC_F32, 3, (const int64_t[]){1, 0, 3}, NULL),
         nt_tensor(XC_F32, 3, (const int64_t[]){2, 0, 2}, NULL), T(XC_F32, 1, D(2), 1, 2));
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 1, 1, 2, 2);
  nt_free(&c);
}

int main(void) {
  test_conv_known_values();
  test_conv_im2col();
  test_conv_errors();
  test_conv_symbolic();
  test_conv_integer();
  test_deform_conv();
  test_convtranspose_values();
  test_convtranspose_adjoint();
  test_convtranspose_symbolic();
  test_maxpool();
  test_maxpool_symbolic();
  test_avg_lp_global();
  test_unpool_col2im();
  test_empty_batches();
  test_grid_sample();
  test_roi_align();
  return xc_test_summary("test_ops_conv");
}
