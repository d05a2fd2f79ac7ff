/* Tests of the linalg op family: MatMul, Gemm, Einsum, MatMulInteger, Det,
 * RNN, GRU, LSTM.
 * Expectations are hand-derived or computed by naive loops written here
 * independently of the kernels. */
#include "nn_test_util.h"

#define T(dt, rank, dims, ...) \
  nt_tensor((dt), (rank), (const int64_t[])dims, (const double[]){__VA_ARGS__})
#define D(...) \
  { __VA_ARGS__ }

/* Runs a 2-input op and returns the case (caller frees). */
static xc_status_t run2(nt_case_t* c, const char* op, xc_tensor_t* a, xc_tensor_t* b) {
  xc_tensor_t* ins[2] = {a, b};
  nt_init(c, op, 2, ins, 1, 0);
  return nt_run(c);
}

static void test_matmul_basic(void) {
  nt_case_t c;
  CHECK_OK(run2(&c, "MatMul", T(XC_F32, 2, D(2, 3), 1, 2, 3, 4, 5, 6),
                T(XC_F32, 2, D(3, 2), 7, 8, 9, 10, 11, 12)));
  NT_CHECK_SHAPE(c.out[0], 2, 2, 2);
  NT_CHECK_VALUES(c.out[0], 0, 58, 64, 139, 154);
  nt_free(&c);
  /* 1-D first operand: promoted to [1,K], then the 1 is removed. */
  CHECK_OK(
      run2(&c, "MatMul", T(XC_F64, 1, D(3), 1, 2, 3), T(XC_F64, 2, D(3, 2), 7, 8, 9, 10, 11, 12)));
  NT_CHECK_SHAPE(c.out[0], 1, 2);
  NT_CHECK_VALUES(c.out[0], 0, 58, 64);
  nt_free(&c);
  /* 1-D second operand. */
  CHECK_OK(
      run2(&c, "MatMul", T(XC_F32, 2, D(2, 3), 1, 2, 3, 4, 5, 6), T(XC_F32, 1, D(3), 1, 1, 1)));
  NT_CHECK_SHAPE(c.out[0], 1, 2);
  NT_CHECK_VALUES(c.out[0], 0, 6, 15);
  nt_free(&c);
  /* 1-D by 1-D: a scalar. */
  CHECK_OK(run2(&c, "MatMul", T(XC_F32, 1, D(3), 1, 2, 3), T(XC_F32, 1, D(3), 4, 5, 6)));
  CHECK(c.out[0] && c.out[0]->rank == 0);
  NT_CHECK_VALUES(c.out[0], 0, 32);
  nt_free(&c);
  /* 1-D with a batched matrix: [3] @ [2,3,2] -> [2,2]. */
  CHECK_OK(run2(&c, "MatMul", T(XC_F32, 1, D(3), 1, 0, -1),
                nt_iota(XC_F32, 3, (const int64_t[]){2, 3, 2}, 0, 1)));
  NT_CHECK_SHAPE(c.out[0], 2, 2, 2);
  /* batch 0: rows [0,1],[2,3],[4,5] -> [0-4, 1-5]; batch 1: +6 each -> same. */
  NT_CHECK_VALUES(c.out[0], 0, -4, -4, -4, -4);
  nt_free(&c);
}

static void test_matmul_batched_broadcast(void) {
  /* A [2,1,2,3], B [3,3,2] -> [2,3,2,2]; compared with a naive formula. */
  int64_t ad[4] = {2, 1, 2, 3}, bd[3] = {3, 3, 2};
  xc_tensor_t* a = nt_iota(XC_F32, 4, ad, -3, 0.5);
  xc_tensor_t* b = nt_iota(XC_F32, 3, bd, 1, 0.25);
  double av[12], bv[18];
  for (int i = 0; i < 12; i++) av[i] = -3 + 0.5 * i;
  for (int i = 0; i < 18; i++) bv[i] = 1 + 0.25 * i;
  nt_case_t c;
  CHECK_OK(run2(&c, "MatMul", a, b));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 3, 2, 2);
  double want[24];
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          double s = 0;
          for (int k = 0; k < 3; k++) s += av[p * 6 + i * 3 + k] * bv[q * 6 + k * 2 + j];
          want[((p * 3 + q) * 2 + i) * 2 + j] = s;
        }
  nt_check_values(__FILE__, __LINE__, c.out[0], want, 24, 1e-5);
  nt_free(&c);
  /* Incompatible batch dims. */
  CHECK_ERR(run2(&c, "MatMul", nt_tensor(XC_F32, 3, (const int64_t[]){2, 2, 3}, NULL),
                 nt_tensor(XC_F32, 3, (const int64_t[]){3, 3, 2}, NULL)),
            "broadcast");
  nt_free(&c);
  CHECK_ERR(run2(&c, "MatMul", nt_tensor(XC_F32, 2, (const int64_t[]){2, 3}, NULL),
                 nt_tensor(XC_F32, 2, (const int64_t[]){4, 2}, NULL)),
            "inner dimension");
  nt_free(&c);
  CHECK_ERR(run2(&c, "MatMul", nt_tensor(XC_F32, 2, (const int64_t[]){2, 3}, NULL),
                 nt_tensor(XC_F64, 2, (const int64_t[]){3, 2}, NULL)),
            "dtype");
  nt_free(&c);
  /* Empty: K = 0 gives zeros, M = 0 gives an empty result. */
  CHECK_OK(run2(&c, "MatMul", nt_tensor(XC_F32, 2, (const int64_t[]){2, 0}, NULL),
                nt_tensor(XC_F32, 2, (const int64_t[]){0, 3}, NULL)));
  NT_CHECK_SHAPE(c.out[0], 2, 2, 3);
  NT_CHECK_VALUES(c.out[0], 0, 0, 0, 0, 0, 0, 0);
  nt_free(&c);
  CHECK_OK(run2(&c, "MatMul", nt_tensor(XC_F32, 2, (const int64_t[]){0, 4}, NULL),
                nt_tensor(XC_F32, 2, (const int64_t[]){4, 3}, NULL)));
  NT_CHECK_SHAPE(c.out[0], 2, 0, 3);
  nt_free(&c);
}

static void test_matmul_dtypes(void) {
  nt_case_t c;
  /* f16: the exact sum 1 + 2^-10 is representable; rounding every partial
   * sum to f16 would lose both 2^-11 terms (ties to even). */
  CHECK_OK(run2(&c, "MatMul", T(XC_F16, 2, D(1, 3), 1, 0.00048828125, 0.00048828125),
                T(XC_F16, 2, D(3, 1), 1, 1, 1)));
  NT_CHECK_VALUES(c.out[0], 0, 1.0009765625);
  nt_free(&c);
  CHECK_OK(run2(&c, "MatMul", T(XC_BF16, 2, D(1, 2), 1.5, 2), T(XC_BF16, 2, D(2, 1), 2, -0.25)));
  CHECK(c.out[0] && c.out[0]->dtype == XC_BF16);
  NT_CHECK_VALUES(c.out[0], 0, 2.5);
  nt_free(&c);
  /* i32 wraps like numpy: 65536 * 65536 = 2^32 -> 0; plus 3*5. */
  CHECK_OK(run2(&c, "MatMul", T(XC_I32, 2, D(1, 2), 65536, 3), T(XC_I32, 2, D(2, 1), 65536, 5)));
  CHECK(c.out[0] && xc_tensor_get_i64(c.out[0], 0) == 15);
  nt_free(&c);
  /* i64 stays exact beyond 2^53. */
  xc_tensor_t* a = nt_tensor(XC_I64, 2, (const int64_t[]){1, 2}, NULL);
  xc_tensor_t* b = nt_tensor(XC_I64, 2, (const int64_t[]){2, 1}, NULL);
  xc_tensor_set_i64(a, 0, (INT64_C(1) << 60) + 1);
  xc_tensor_set_i64(a, 1, 3);
  xc_tensor_set_i64(b, 0, 1);
  xc_tensor_set_i64(b, 1, 1);
  CHECK_OK(run2(&c, "MatMul", a, b));
  CHECK(c.out[0] && xc_tensor_get_i64(c.out[0], 0) == (INT64_C(1) << 60) + 4);
  nt_free(&c);
  CHECK_ERR(run2(&c, "MatMul", T(XC_BOOL, 1, D(1), 1), T(XC_BOOL, 1, D(1), 1)), "dtype");
  nt_free(&c);
}

static void test_matmul_symbolic(void) {
  nt_case_t c;
  xc_tensor_t* ins[2] = {nt_tensor(XC_F32, 3, (const int64_t[]){1, 1, 4}, NULL),
                         nt_tensor(XC_F32, 2, (const int64_t[]){4, 5}, NULL)};
  nt_init(&c, "MatMul", 2, ins, 1, 0);
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"b", "s", "4"});
  CHECK_OK(nt_infer(&c));
  char buf[64];
  xc_value_t* y = c.node->outputs[0];
  CHECK_EQ_INT(y->rank, 3);
  CHECK_STR(xc_dim_print(y->dims[0], buf, sizeof buf), "b");
  CHECK_STR(xc_dim_print(y->dims[1], buf, sizeof buf), "s");
  CHECK_STR(xc_dim_print(y->dims[2], buf, sizeof buf), "5");
  nt_free(&c);
  /* Symbolic batch dims on both sides broadcast to max(a,b). */
  xc_tensor_t* ins2[2] = {nt_tensor(XC_F32, 3, (const int64_t[]){1, 2, 4}, NULL),
                          nt_tensor(XC_F32, 3, (const int64_t[]){1, 4, 5}, NULL)};
  nt_init(&c, "MatMul", 2, ins2, 1, 0);
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"p", "2", "4"});
  nt_symbolic_input(&c, 1, 3, (const char* const[]){"q", "4", "5"});
  CHECK_OK(nt_infer(&c));
  CHECK_EQ_INT(nt_eval_dim(&c, 0, 0, 2, "p", (int64_t)1, "q", (int64_t)6), 6);
  nt_free(&c);
}

static void test_gemm(void) {
  nt_case_t c;
  /* A [3,2] transposed -> [2,3]; B [2,3] transposed -> [3,2]; C [2] per column. */
  xc_tensor_t* ins[3] = {T(XC_F32, 2, D(3, 2), 1, 2, 3, 4, 5, 6),
                         T(XC_F32, 2, D(2, 3), 1, 0, 1, 0, 1, 1), T(XC_F32, 1, D(2), 10, 20)};
  nt_init(&c, "Gemm", 3, ins, 1, 0);
  xc_node_set_int(c.g, c.node, "transA", 1);
  xc_node_set_int(c.g, c.node, "transB", 1);
  xc_node_set_float(c.g, c.node, "alpha", 2.0);
  xc_node_set_float(c.g, c.node, "beta", 0.5);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 2, 2, 2);
  NT_CHECK_VALUES(c.out[0], 1e-6, 17, 26, 21, 30);
  nt_free(&c);
  /* No transposes, C [2,1] broadcast along columns, default alpha/beta. */
  xc_tensor_t* ins2[3] = {T(XC_F64, 2, D(2, 2), 1, 2, 3, 4), T(XC_F64, 2, D(2, 2), 5, 6, 7, 8),
                          T(XC_F64, 2, D(2, 1), 100, 200)};
  nt_init(&c, "Gemm", 3, ins2, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 119, 122, 243, 250);
  nt_free(&c);
  /* Without C; only transB. */
  xc_tensor_t* ins3[2] = {T(XC_F32, 2, D(1, 2), 1, 2), T(XC_F32, 2, D(3, 2), 1, 1, 2, 2, 3, -3)};
  nt_init(&c, "Gemm", 2, ins3, 1, 0);
  xc_node_set_int(c.g, c.node, "transB", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 2, 1, 3);
  NT_CHECK_VALUES(c.out[0], 0, 3, 6, -3);
  nt_free(&c);
  /* Bad: C cannot be broadcast; inner mismatch; rank. */
  xc_tensor_t* bad[3] = {nt_tensor(XC_F32, 2, (const int64_t[]){2, 2}, NULL),
                         nt_tensor(XC_F32, 2, (const int64_t[]){2, 2}, NULL),
                         nt_tensor(XC_F32, 1, (const int64_t[]){3}, NULL)};
  nt_init(&c, "Gemm", 3, bad, 1, 0);
  CHECK_ERR(nt_run(&c), "C broadcast");
  nt_free(&c);
  CHECK_ERR(run2(&c, "Gemm", nt_tensor(XC_F32, 2, (const int64_t[]){2, 3}, NULL),
                 nt_tensor(XC_F32, 2, (const int64_t[]){2, 2}, NULL)),
            "inner dimension");
  nt_free(&c);
  CHECK_ERR(run2(&c, "Gemm", nt_tensor(XC_F32, 3, (const int64_t[]){1, 2, 2}, NULL),
                 nt_tensor(XC_F32, 2, (const int64_t[]){2, 2}, NULL)),
            "2-D");
  nt_free(&c);
}

static xc_status_t einsum(nt_case_t* c, const char* eq, int n, xc_tensor_t* a, xc_tensor_t* b) {
  xc_tensor_t* ins[2] = {a, b};
  nt_init(c, "Einsum", n, ins, 1, 0);
  xc_node_set_string(c->g, c->node, "equation", eq);
  return nt_run(c);
}

static void test_einsum(void) {
  nt_case_t c;
  xc_tensor_t* m23;
#define M23() (m23 = T(XC_F32, 2, D(2, 3), 1, 2, 3, 4, 5, 6))
  CHECK_OK(einsum(&c, "ij,jk->ik", 2, M23(), T(XC_F32, 2, D(3, 2), 7, 8, 9, 10, 11, 12)));
  NT_CHECK_VALUES(c.out[0], 0, 58, 64, 139, 154);
  nt_free(&c);
  /* Diagonal and trace. */
  CHECK_OK(einsum(&c, "ii->i", 1, T(XC_F32, 2, D(2, 2), 1, 2, 3, 4), NULL));
  NT_CHECK_SHAPE(c.out[0], 1, 2);
  NT_CHECK_VALUES(c.out[0], 0, 1, 4);
  nt_free(&c);
  CHECK_OK(einsum(&c, "ii", 1, T(XC_F32, 2, D(2, 2), 1, 2, 3, 4), NULL));
  CHECK(c.out[0] && c.out[0]->rank == 0);
  NT_CHECK_VALUES(c.out[0], 0, 5);
  nt_free(&c);
  /* Implicit output sorts the labels: "ji" is a transpose. */
  CHECK_OK(einsum(&c, "ji", 1, M23(), NULL));
  NT_CHECK_SHAPE(c.out[0], 2, 3, 2);
  NT_CHECK_VALUES(c.out[0], 0, 1, 4, 2, 5, 3, 6);
  nt_free(&c);
  /* Uppercase sorts before lowercase. */
  CHECK_OK(einsum(&c, "aA", 1, M23(), NULL));
  NT_CHECK_SHAPE(c.out[0], 2, 3, 2);
  nt_free(&c);
  /* Reductions. */
  CHECK_OK(einsum(&c, "ij->", 1, M23(), NULL));
  NT_CHECK_VALUES(c.out[0], 0, 21);
  nt_free(&c);
  CHECK_OK(einsum(&c, "ij->i", 1, M23(), NULL));
  NT_CHECK_VALUES(c.out[0], 0, 6, 15);
  nt_free(&c);
  /* Dot and outer products. */
  CHECK_OK(einsum(&c, "i,i", 2, T(XC_F64, 1, D(3), 1, 2, 3), T(XC_F64, 1, D(3), 4, 5, 6)));
  NT_CHECK_VALUES(c.out[0], 0, 32);
  nt_free(&c);
  CHECK_OK(einsum(&c, " i , j -> j i ", 2, T(XC_F32, 1, D(2), 1, 2), T(XC_F32, 1, D(3), 3, 4, 5)));
  NT_CHECK_SHAPE(c.out[0], 2, 3, 2);
  NT_CHECK_VALUES(c.out[0], 0, 3, 6, 4, 8, 5, 10);
  nt_free(&c);
  /* Ellipsis with broadcasting of the batch dims: [2,1 | 1,2] x [3 | 2,1]. */
  CHECK_OK(einsum(&c, "...ij,...jk->...ik", 2, T(XC_F32, 4, D(2, 1, 1, 2), 1, 2, 3, 4),
                  T(XC_F32, 3, D(3, 2, 1), 1, 1, 2, 0, 0, 3)));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 3, 1, 1);
  /* batch a: [1,2] / [3,4]; batch b: [1,1]^T, [2,0]^T, [0,3]^T. */
  NT_CHECK_VALUES(c.out[0], 0, 3, 2, 6, 7, 6, 12);
  nt_free(&c);
  /* Ellipsis in the middle, implicit output puts it first. */
  CHECK_OK(einsum(&c, "i...j", 1, nt_iota(XC_F32, 3, (const int64_t[]){2, 3, 2}, 0, 1), NULL));
  NT_CHECK_SHAPE(c.out[0], 3, 3, 2, 2);
  NT_CHECK_VALUES(c.out[0], 0, 0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11);
  nt_free(&c);
  /* Integers stay exact. */
  CHECK_OK(einsum(&c, "ij->j", 1, T(XC_I64, 2, D(2, 2), 1, 2, 3, 4), NULL));
  NT_CHECK_VALUES(c.out[0], 0, 4, 6);
  nt_free(&c);
  /* Empty operands: an empty summed label gives zeros. */
  CHECK_OK(einsum(&c, "ij,jk->ik", 2, nt_tensor(XC_F32, 2, (const int64_t[]){2, 0}, NULL),
                  nt_tensor(XC_F32, 2, (const int64_t[]){0, 2}, NULL)));
  NT_CHECK_VALUES(c.out[0], 0, 0, 0, 0, 0);
  nt_free(&c);
  CHECK_OK(run2(&c, "Gemm", nt_tensor(XC_F32, 2, (const int64_t[]){0, 3}, NULL),
                nt_tensor(XC_F32, 2, (const int64_t[]){3, 2}, NULL)));
  NT_CHECK_SHAPE(c.out[0], 2, 0, 2);
  nt_free(&c);
  /* Bad equations. */
  CHECK_ERR(einsum(&c, "ij,jk", 1, M23(), NULL), "2 operand terms but 1 inputs");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "i.j", 1, M23(), NULL), "'...'");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "ij->k", 1, M23(), NULL), "does not appear");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "ij->ii", 1, M23(), NULL), "more than once");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "ijk", 1, M23(), NULL), "has rank 2");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "i$", 1, M23(), NULL), "invalid character");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "...i->i", 1, M23(), NULL), "no '...'");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "i->i->i", 1, T(XC_F32, 1, D(1), 1), NULL), "more than one");
  nt_free(&c);
  CHECK_ERR(einsum(&c, "i,i", 2, T(XC_F32, 1, D(2), 1, 2), T(XC_F32, 1, D(3), 1, 2, 3)), "sizes");
  nt_free(&c);
  /* Symbolic batch. */
  xc_tensor_t* ins[2] = {nt_tensor(XC_F32, 3, (const int64_t[]){1, 2, 3}, NULL),
                         nt_tensor(XC_F32, 3, (const int64_t[]){1, 3, 4}, NULL)};
  nt_init(&c, "Einsum", 2, ins, 1, 0);
  xc_node_set_string(c.g, c.node, "equation", "bij,bjk->bik");
  nt_symbolic_input(&c, 0, 3, (const char* const[]){"batch", "2", "3"});
  nt_symbolic_input(&c, 1, 3, (const char* const[]){"batch", "3", "4"});
  CHECK_OK(nt_infer(&c));
  char buf[32];
  CHECK_STR(xc_dim_print(c.node->outputs[0]->dims[0], buf, sizeof buf), "batch");
  CHECK_STR(xc_dim_print(c.node->outputs[0]->dims[2], buf, sizeof buf), "4");
  nt_free(&c);
  /* A label seen as symbolic first and static later takes the static size. */
  xc_tensor_t* ins3[2] = {nt_tensor(XC_F32, 1, (const int64_t[]){3}, NULL),
                          nt_tensor(XC_F32, 1, (const int64_t[]){3}, NULL)};
  nt_init(&c, "Einsum", 2, ins3, 1, 0);
  xc_node_set_string(c.g, c.node, "equation", "i,i->i");
  nt_symbolic_input(&c, 0, 1, (const char* const[]){"n"});
  CHECK_OK(nt_infer(&c));
  CHECK_STR(xc_dim_print(c.node->outputs[0]->dims[0], buf, sizeof buf), "3");
  CHECK_OK(nt_run(&c));
  nt_free(&c);
#undef M23
}

static void test_matmul_integer(void) {
  nt_case_t c;
  xc_tensor_t* ins[4] = {T(XC_U8, 2, D(2, 2), 2, 3, 4, 5), T(XC_U8, 2, D(2, 2), 1, 2, 3, 4),
                         T(XC_U8, 0, D(0), 1), T(XC_U8, 1, D(2), 1, 0)};
  nt_init(&c, "MatMulInteger", 4, ins, 1, 0);
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->dtype == XC_I32);
  NT_CHECK_VALUES(c.out[0], 0, 4, 10, 8, 22);
  nt_free(&c);
  CHECK_OK(
      run2(&c, "MatMulInteger", T(XC_I8, 2, D(1, 2), -128, 127), T(XC_I8, 2, D(2, 1), -128, 127)));
  NT_CHECK_VALUES(c.out[0], 0, 32513);
  nt_free(&c);
  xc_tensor_t* bad[3] = {T(XC_U8, 2, D(2, 2), 0, 0, 0, 0), T(XC_U8, 2, D(2, 2), 0, 0, 0, 0),
                         T(XC_U8, 1, D(3), 0, 0, 0)};
  nt_init(&c, "MatMulInteger", 3, bad, 1, 0);
  CHECK_ERR(nt_run(&c), "zero point");
  nt_free(&c);
}

static void test_det(void) {
  nt_case_t c;
  xc_tensor_t* in[1] = {
      T(XC_F64, 3, D(2, 3, 3), 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 1, 0, 1, 0, 0, 0, 0, 5)};
  nt_init(&c, "Det", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 1, 2);
  /* diag(2,3,4) -> 24; a row swap with a 5 -> -5 */
  NT_CHECK_VALUES(c.out[0], 1e-12, 24, -5);
  nt_free(&c);
  in[0] = T(XC_F32, 2, D(2, 2), 1, 2, 3, 4);
  nt_init(&c, "Det", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  CHECK(c.out[0] && c.out[0]->rank == 0);
  NT_CHECK_VALUES(c.out[0], 1e-6, -2);
  nt_free(&c);
  in[0] = T(XC_F32, 2, D(2, 2), 1, 2, 2, 4);
  nt_init(&c, "Det", 1, in, 1, 0);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 0, 0);
  nt_free(&c);
  in[0] = nt_tensor(XC_F32, 2, (const int64_t[]){2, 3}, NULL);
  nt_init(&c, "Det", 1, in, 1, 0);
  CHECK_ERR(nt_run(&c), "square");
  nt_free(&c);
}

static void rnn_case(nt_case_t* c, const char* op, int nin, int nout, xc_tensor_t* const* ins) {
  nt_init(c, op, nin, ins, nout, 0);
}

static void test_recurrent(void) {
  nt_case_t c;
  /* RNN, two steps: h1 = tanh(1), h2 = tanh(2 + 0.5 h1). */
  xc_tensor_t* a[3] = {T(XC_F32, 3, D(2, 1, 1), 1, 2), T(XC_F32, 3, D(1, 1, 1), 1),
                       T(XC_F32, 3, D(1, 1, 1), 0.5)};
  rnn_case(&c, "RNN", 3, 2, a);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 1, 1, 1);
  NT_CHECK_VALUES(c.out[0], 1e-6, 0.7615941559557649, 0.9830411011980433);
  NT_CHECK_VALUES(c.out[1], 1e-6, 0.9830411011980433);
  nt_free(&c);
  /* Bidirectional: the reverse pass starts at the last step. */
  xc_tensor_t* b[3] = {T(XC_F64, 3, D(2, 1, 1), 1, 2), T(XC_F64, 3, D(2, 1, 1), 1, 1),
                       T(XC_F64, 3, D(2, 1, 1), 0.5, 0.5)};
  rnn_case(&c, "RNN", 3, 2, b);
  xc_node_set_string(c.g, c.node, "direction", "bidirectional");
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 2, 1, 1);
  NT_CHECK_VALUES(c.out[0], 1e-12, 0.7615941559557649, 0.901844598209524, 0.9830411011980433,
                  0.9640275800758169);
  NT_CHECK_VALUES(c.out[1], 1e-12, 0.9830411011980433, 0.901844598209524);
  nt_free(&c);
  /* sequence_lens: batch 1 stops after one step; layout 1 puts batch first. */
  xc_tensor_t* lens = nt_tensor(XC_I32, 1, (const int64_t[]){2}, NULL);
  xc_tensor_set_i64(lens, 0, 2);
  xc_tensor_set_i64(lens, 1, 1);
  xc_tensor_t* l[5] = {T(XC_F64, 3, D(2, 2, 1), 1, 2, 1, 2), T(XC_F64, 3, D(1, 1, 1), 1),
                       T(XC_F64, 3, D(1, 1, 1), 0.5), NULL, lens};
  rnn_case(&c, "RNN", 5, 2, l);
  xc_node_set_int(c.g, c.node, "layout", 1);
  CHECK_OK(nt_run(&c));
  NT_CHECK_SHAPE(c.out[0], 4, 2, 2, 1, 1);
  NT_CHECK_VALUES(c.out[0], 1e-12, 0.7615941559557649, 0.9830411011980433, 0.7615941559557649, 0);
  NT_CHECK_VALUES(c.out[1], 1e-12, 0.9830411011980433, 0.7615941559557649);
  nt_free(&c);
  /* GRU: z = r = 1/2, candidate tanh(1), initial h 0.5. */
  xc_tensor_t* gi[6] = {T(XC_F32, 3, D(1, 1, 1), 1),
                        T(XC_F32, 3, D(1, 3, 1), 0, 0, 1),
                        T(XC_F32, 3, D(1, 3, 1), 0, 0, 0),
                        NULL,
                        NULL,
                        T(XC_F32, 3, D(1, 1, 1), 0.5)};
  rnn_case(&c, "GRU", 6, 2, gi);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[1], 1e-6, 0.6307970779778824);
  nt_free(&c);
  /* GRU, two units: the candidate applies R_h to r * h elementwise (r =
   * (1/2, sigmoid(10)), h0 = (1, 1), R_h = [[0, 1], [0, 0]]), so unit 0 sees
   * r_1 * h_1: h = (tanh(sigmoid(10)) + 1) / 2 and 1/2, not (tanh(1/2) + 1) / 2. */
  xc_tensor_t* g2[6] = {T(XC_F64, 3, D(1, 1, 1), 0),
                        T(XC_F64, 3, D(1, 6, 1), 0, 0, 0, 0, 0, 0),
                        T(XC_F64, 3, D(1, 6, 2), 0, 0, 0, 0, 0, 0, 0, 10, 0, 1, 0, 0),
                        NULL,
                        NULL,
                        T(XC_F64, 3, D(1, 1, 2), 1, 1)};
  rnn_case(&c, "GRU", 6, 2, g2);
  xc_node_set_int(c.g, c.node, "hidden_size", 2);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[1], 1e-12, 0.880787544678268, 0.5);
  nt_free(&c);
  /* LSTM: i = o = f = 1/2, candidate tanh(1), initial c 1. */
  xc_tensor_t* li[7] = {T(XC_F32, 3, D(1, 1, 1), 1),
                        T(XC_F32, 3, D(1, 4, 1), 0, 0, 0, 1),
                        T(XC_F32, 3, D(1, 4, 1), 0, 0, 0, 0),
                        NULL,
                        NULL,
                        NULL,
                        T(XC_F32, 3, D(1, 1, 1), 1)};
  rnn_case(&c, "LSTM", 7, 3, li);
  CHECK_OK(nt_run(&c));
  NT_CHECK_VALUES(c.out[0], 1e-6, 0.3534092045709028);
  NT_CHECK_VALUES(c.out[2], 1e-6, 0.8807970779778824);
  nt_free(&c);
  /* Errors. */
  xc_tensor_t* e1[3] = {T(XC_F32, 3, D(1, 1, 1), 1), T(XC_F32, 3, D(1, 1, 1), 1),
                        T(XC_F32, 3, D(1, 1, 1), 1)};
  rnn_case(&c, "RNN", 3, 1, e1);
  xc_node_set_string(c.g, c.node, "direction", "sideways");
  CHECK_ERR(nt_run(&c), "direction");
  nt_free(&c);
  xc_tensor_t* e2[3] = {T(XC_F32, 3, D(1, 1, 1), 1), T(XC_F32, 3, D(1, 1, 1), 1),
                        T(XC_F32, 3, D(1, 1, 1), 1)};
  rnn_case(&c, "RNN", 3, 1, e2);
  xc_node_set_strings(c.g, c.node, "activations", 1, (const char* const[]){"Swish"});
  CHECK_ERR(nt_run(&c), "unsupported activation");
  nt_free(&c);
  xc_tensor_t* e3[3] = {T(XC_F32, 3, D(1, 1, 1), 1), T(XC_F32, 3, D(1, 2, 1), 1, 1),
                        T(XC_F32, 3, D(1, 2, 1), 1, 1)};
  rnn_case(&c, "LSTM", 3, 1, e3);
  CHECK_ERR(nt_run(&c), "gate dim");
  nt_free(&c);
}

int main(void) {
  test_matmul_basic();
  test_matmul_batched_broadcast();
  test_matmul_dtypes();
  test_matmul_symbolic();
  test_gemm();
  test_einsum();
  test_matmul_integer();
  test_det();
  test_recurrent();
  return xc_test_summary("test_ops_linalg");
}
