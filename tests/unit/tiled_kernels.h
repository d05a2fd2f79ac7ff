/* Tiled kernels built with the builder API, shared by tests: a tiled GEMM
 * with fused epilogues, a one-pass LayerNorm with residual and ReLU,
 * FlashAttention (causal or not), an elementwise kernel with masks and
 * broadcasting, and a row reduction with a loop-carried tile. Each build_*
 * returns a verified kernel or NULL (the error is printed). */
#ifndef XCOMP_TESTS_TILED_KERNELS_H
#define XCOMP_TESTS_TILED_KERNELS_H

#include <math.h>
#include <stdio.h>

#include "xcomp/tiled.h"

typedef xc_tiled_value_t val_t;
typedef xc_tiled_kernel_t kern_t;

static inline val_t* kv(kern_t* k, const char* knob) { return xc_tiled_knob_value(k, xc_tiled_find_knob(k, knob)); }
static inline val_t* add(kern_t* k, val_t* a, val_t* b) { return xc_tiled_binary(k, XC_TOP_ADD, a, b); }
static inline val_t* sub(kern_t* k, val_t* a, val_t* b) { return xc_tiled_binary(k, XC_TOP_SUB, a, b); }
static inline val_t* mul(kern_t* k, val_t* a, val_t* b) { return xc_tiled_binary(k, XC_TOP_MUL, a, b); }
static inline val_t* lt(kern_t* k, val_t* a, val_t* b) { return xc_tiled_cmp(k, XC_CMP_LT, a, b); }
static inline val_t* land(kern_t* k, val_t* a, val_t* b) { return xc_tiled_binary(k, XC_TOP_AND, a, b); }
static inline val_t* f32c(kern_t* k, double v) { return xc_tiled_const_f(k, XC_F32, v, 0, NULL); }
static inline val_t* i64c(kern_t* k, int64_t v) { return xc_tiled_const_i(k, XC_I64, v, 0, NULL); }
static inline val_t* col(kern_t* k, val_t* x) { return xc_tiled_expand_dims(k, x, 1); }
static inline val_t* row(kern_t* k, val_t* x) { return xc_tiled_expand_dims(k, x, 0); }

static inline const xc_tiled_expr_t* ceildiv(kern_t* k, val_t* param, const char* knob) {
  return xc_texpr_binary(k, XC_TEXPR_CEILDIV, xc_texpr_param(k, param),
                         xc_texpr_knob(k, xc_tiled_find_knob(k, knob)));
}

/* Verifies k; on failure prints the error, destroys k and returns NULL. */
static inline kern_t* tk_finish(kern_t* k) {
  xc_status_t s = xc_tiled_verify(k);
  if (s) {
    fprintf(stderr, "kernel %s: %s\n", k->name, xc_status_message(s));
    xc_status_free(s);
    xc_tiled_kernel_destroy(k);
    return NULL;
  }
  return k;
}

/* ---- GEMM with a fused epilogue ---------------------------------------------- */

enum { EPI_BIAS_GELU, EPI_BIAS_RELU_RESIDUAL };

/* C[M,N] = epilogue(A[M,K] @ B[K,N] + bias[N]) with A and B tiles staged
 * through shared memory. Params: A B bias R C M N K. */
static inline kern_t* build_gemm(int epilogue) {
  kern_t* k;
  if (xc_tiled_kernel_create(epilogue == EPI_BIAS_GELU ? "gemm_bias_gelu" : "gemm_bias_relu_res", &k))
    return NULL;
  const int64_t bm[] = {16, 32, 64}, bn[] = {16, 32, 64}, bk[] = {8, 16, 32};
  const int64_t th[] = {32, 64, 128, 256}, vec[] = {1, 2, 4}, st[] = {1, 2, 3};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 3, bm, 32);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 32);
  int kBK = xc_tiled_add_knob(k, "BLOCK_K", XC_KNOB_TILE, 3, bk, 16);
  int kTH = xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 4, th, 128);
  xc_tiled_add_knob(k, "vector", XC_KNOB_VECTOR, 3, vec, 4);
  xc_tiled_add_knob(k, "stages", XC_KNOB_STAGES, 3, st, 2);
  /* at most 64 accumulators per thread */
  xc_tiled_add_constraint(
      k, xc_texpr_binary(k, XC_TEXPR_LE,
                         xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, kBM), xc_texpr_knob(k, kBN)),
                         xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, kTH), xc_texpr_const(k, 64))));
  val_t* A = xc_tiled_param_buffer(k, "A", XC_F32, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", XC_F32, XC_ROLE_IN);
  val_t* bias = xc_tiled_param_buffer(k, "bias", XC_F32, XC_ROLE_IN);
  val_t* R = xc_tiled_param_buffer(k, "R", XC_F32, XC_ROLE_IN);
  val_t* C = xc_tiled_param_buffer(k, "C", XC_F32, XC_ROLE_OUT);
  val_t* M = xc_tiled_param_scalar(k, "M");
  val_t* N = xc_tiled_param_scalar(k, "N");
  val_t* K = xc_tiled_param_scalar(k, "K");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, M, "BLOCK_M"), ceildiv(k, N, "BLOCK_N")};
  xc_tiled_set_grid(k, 2, grid);

  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dk = xc_tiled_dim_knob(kBK);
  xc_tiled_dim_t sa[2] = {dm, dk}, sb[2] = {dk, dn}, acc_shape[2] = {dm, dn};
  val_t* sA = xc_tiled_alloc(k, XC_SCOPE_SHARED, XC_F32, 2, sa);
  val_t* sB = xc_tiled_alloc(k, XC_SCOPE_SHARED, XC_F32, 2, sb);
  val_t* vbm = kv(k, "BLOCK_M");
  val_t* vbn = kv(k, "BLOCK_N");
  val_t* vbk = kv(k, "BLOCK_K");
  val_t* am = xc_tiled_arange(k, dm);
  val_t* an = xc_tiled_arange(k, dn);
  val_t* ak = xc_tiled_arange(k, dk);
  val_t* rm = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), vbm), am));  /* [BM,1] */
  val_t* rn = row(k, add(k, mul(k, xc_tiled_program_id(k, 1), vbn), an));  /* [1,BN] */
  val_t* rk_row = row(k, ak), *rk_col = col(k, ak);
  val_t* mask_m = lt(k, rm, M), *mask_n = lt(k, rn, N);
  val_t* la = add(k, mul(k, col(k, am), vbk), rk_row);      /* local offsets in sA */
  val_t* lb = add(k, mul(k, rk_col, vbn), row(k, an));      /* local offsets in sB */
  val_t* zero = f32c(k, 0.0);
  val_t* acc0 = xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 2, acc_shape), "acc");
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), K, vbk, 1, &acc0);
  {
    val_t* k0 = xc_tiled_name(k, xc_tiled_for_iv(loop), "k0");
    val_t* acc = xc_tiled_for_arg(loop, 0);
    val_t* ka = add(k, k0, rk_row);
    val_t* a = xc_tiled_load(k, A, add(k, mul(k, rm, K), ka), land(k, mask_m, lt(k, ka, K)), zero);
    xc_tiled_store(k, sA, la, a, NULL);
    val_t* kb = add(k, k0, rk_col);
    val_t* b = xc_tiled_load(k, B, add(k, mul(k, kb, N), rn), land(k, lt(k, kb, K), mask_n), zero);
    xc_tiled_store(k, sB, lb, b, NULL);
    xc_tiled_barrier(k);
    val_t* next = xc_tiled_dot(k, xc_tiled_load(k, sA, la, NULL, NULL),
                               xc_tiled_load(k, sB, lb, NULL, NULL), acc);
    xc_tiled_barrier(k);
    xc_tiled_for_end(k, loop, 1, &next);
  }
  val_t* acc = xc_tiled_for_result(loop, 0);
  val_t* x = add(k, acc, xc_tiled_load(k, bias, rn, mask_n, zero));
  val_t* c_off = add(k, mul(k, rm, N), rn);
  val_t* c_mask = land(k, mask_m, mask_n);
  val_t* y;
  if (epilogue == EPI_BIAS_GELU) {
    val_t* e = xc_tiled_unary(k, XC_TOP_ERF, mul(k, x, f32c(k, 0.70710678118654752)));
    y = mul(k, mul(k, x, f32c(k, 0.5)), add(k, e, f32c(k, 1.0)));
  } else {
    val_t* r = xc_tiled_binary(k, XC_TOP_MAX, x, zero);
    y = add(k, r, xc_tiled_load(k, R, c_off, c_mask, zero));
  }
  xc_tiled_store(k, C, c_off, y, c_mask);
  return tk_finish(k);
}

/* ---- LayerNorm over rows, with residual and ReLU ------------------------------ */

/* Y = Relu(LayerNorm(X + Res) * gamma + beta) over the last dim N, BLOCK_R
 * rows per program, the whole row (BLOCK_N >= N) in one tile. */
static inline kern_t* build_layernorm(int64_t static_n, double eps) {
  kern_t* k;
  if (xc_tiled_kernel_create("layernorm_res_relu", &k)) return NULL;
  const int64_t br[] = {1, 2, 4}, bn[] = {64, 128, 256};
  int kBR = xc_tiled_add_knob(k, "BLOCK_R", XC_KNOB_TILE, 3, br, 2);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 128);
  /* one pass: the row must fit in the tile (N is static for this kernel) */
  xc_tiled_add_constraint(k, xc_texpr_binary(k, XC_TEXPR_LE, xc_texpr_const(k, static_n),
                                             xc_texpr_knob(k, kBN)));
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* Res = xc_tiled_param_buffer(k, "Res", XC_F32, XC_ROLE_IN);
  val_t* gamma = xc_tiled_param_buffer(k, "gamma", XC_F32, XC_ROLE_IN);
  val_t* beta = xc_tiled_param_buffer(k, "beta", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  val_t* R = xc_tiled_param_scalar(k, "R");
  val_t* N = xc_tiled_param_scalar(k, "N");
  const xc_tiled_expr_t* grid[1] = {ceildiv(k, R, "BLOCK_R")};
  xc_tiled_set_grid(k, 1, grid);
  val_t* rows = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_R")),
                           xc_tiled_arange(k, xc_tiled_dim_knob(kBR))));
  val_t* cols = row(k, xc_tiled_arange(k, xc_tiled_dim_knob(kBN)));
  val_t* cmask = lt(k, cols, N);
  val_t* mask = land(k, lt(k, rows, R), cmask);
  val_t* off = add(k, mul(k, rows, N), cols);
  val_t* zero = f32c(k, 0.0);
  val_t* h = add(k, xc_tiled_load(k, X, off, mask, zero), xc_tiled_load(k, Res, off, mask, zero));
  val_t* nf = xc_tiled_cast(k, N, XC_F32);
  val_t* mean = xc_tiled_binary(k, XC_TOP_DIV, xc_tiled_reduce(k, XC_REDUCE_SUM, h, 1), nf);
  val_t* d = xc_tiled_select(k, mask, sub(k, h, col(k, mean)), zero);
  val_t* var = xc_tiled_binary(k, XC_TOP_DIV, xc_tiled_reduce(k, XC_REDUCE_SUM, mul(k, d, d), 1), nf);
  val_t* rstd = xc_tiled_unary(k, XC_TOP_RSQRT, add(k, var, f32c(k, eps)));
  val_t* y = mul(k, d, col(k, rstd));
  y = add(k, mul(k, y, xc_tiled_load(k, gamma, cols, cmask, zero)),
          xc_tiled_load(k, beta, cols, cmask, zero));
  y = xc_tiled_binary(k, XC_TOP_MAX, y, zero);
  xc_tiled_store(k, Y, off, y, mask);
  return tk_finish(k);
}

/* ---- FlashAttention ------------------------------------------------------------ */

/* O[bh] = softmax(Q[bh] K[bh]^T * scale [+ causal mask]) V[bh], online softmax
 * over BLOCK_N-wide K/V tiles. Q, K, V, O: [BH, S, D] with D = 16. */
static inline kern_t* build_attention(bool causal, double scale) {
  kern_t* k;
  if (xc_tiled_kernel_create(causal ? "flash_attention_causal" : "flash_attention", &k)) return NULL;
  const int64_t bm[] = {8, 16, 32}, bn[] = {8, 16, 32}, th[] = {32, 64, 128};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 3, bm, 16);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 16);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 3, th, 64);
  val_t* Q = xc_tiled_param_buffer(k, "Q", XC_F32, XC_ROLE_IN);
  val_t* K = xc_tiled_param_buffer(k, "K", XC_F32, XC_ROLE_IN);
  val_t* V = xc_tiled_param_buffer(k, "V", XC_F32, XC_ROLE_IN);
  val_t* O = xc_tiled_param_buffer(k, "O", XC_F32, XC_ROLE_OUT);
  val_t* S = xc_tiled_param_scalar(k, "S");
  val_t* BH = xc_tiled_param_scalar(k, "BH");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, S, "BLOCK_M"), xc_texpr_param(k, BH)};
  xc_tiled_set_grid(k, 2, grid);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dd = xc_tiled_dim_const(16);
  val_t* D = i64c(k, 16);
  val_t* pid_m = xc_tiled_program_id(k, 0);
  val_t* base = xc_tiled_name(k, mul(k, mul(k, xc_tiled_program_id(k, 1), S), D), "base");
  val_t* vbm = kv(k, "BLOCK_M");
  val_t* rm = col(k, add(k, mul(k, pid_m, vbm), xc_tiled_arange(k, dm)));  /* [BM,1] */
  val_t* rd = xc_tiled_arange(k, dd);
  val_t* rd_row = row(k, rd), *rd_col = col(k, rd);
  val_t* zero = f32c(k, 0.0);
  val_t* qmask = lt(k, rm, S);
  val_t* q = xc_tiled_load(k, Q, add(k, base, add(k, mul(k, rm, D), rd_row)), qmask, zero);
  q = mul(k, q, f32c(k, scale));
  xc_tiled_dim_t vm[1] = {dm}, md[2] = {dm, dd}, mn[2] = {dm, dn};
  val_t* init[3] = {xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, -INFINITY, 1, vm), "m"),
                    xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 1, vm), "l"),
                    xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 2, md), "acc")};
  val_t* s_zero = xc_tiled_const_f(k, XC_F32, 0.0, 2, mn);
  val_t* ninf = f32c(k, -INFINITY);
  val_t* ub = S;
  if (causal) ub = xc_tiled_binary(k, XC_TOP_MIN, S, mul(k, add(k, pid_m, i64c(k, 1)), vbm));
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), ub, kv(k, "BLOCK_N"), 3, init);
  {
    val_t* n0 = xc_tiled_name(k, xc_tiled_for_iv(loop), "n0");
    val_t* m_i = xc_tiled_for_arg(loop, 0), *l_i = xc_tiled_for_arg(loop, 1);
    val_t* acc = xc_tiled_for_arg(loop, 2);
    val_t* rn = add(k, n0, xc_tiled_arange(k, dn));
    val_t* rn_row = row(k, rn), *rn_col = col(k, rn);
    val_t* kT = xc_tiled_load(k, K, add(k, base, add(k, mul(k, rn_row, D), rd_col)),
                              lt(k, rn_row, S), zero);                        /* [D,BN] */
    val_t* s = xc_tiled_dot(k, q, kT, s_zero);                                /* [BM,BN] */
    val_t* valid = lt(k, rn_row, S);
    if (causal) valid = land(k, valid, xc_tiled_cmp(k, XC_CMP_LE, rn_row, rm));
    s = xc_tiled_select(k, valid, s, ninf);
    val_t* m_new = xc_tiled_binary(k, XC_TOP_MAX, m_i, xc_tiled_reduce(k, XC_REDUCE_MAX, s, 1));
    val_t* p = xc_tiled_unary(k, XC_TOP_EXP, sub(k, s, col(k, m_new)));
    val_t* alpha = xc_tiled_unary(k, XC_TOP_EXP, sub(k, m_i, m_new));
    val_t* l_new = add(k, mul(k, l_i, alpha), xc_tiled_reduce(k, XC_REDUCE_SUM, p, 1));
    val_t* v = xc_tiled_load(k, V, add(k, base, add(k, mul(k, rn_col, D), rd_row)),
                             lt(k, rn_col, S), zero);                         /* [BN,D] */
    val_t* acc_new = xc_tiled_dot(k, p, v, mul(k, acc, col(k, alpha)));
    val_t* next[3] = {m_new, l_new, acc_new};
    xc_tiled_for_end(k, loop, 3, next);
  }
  val_t* o = xc_tiled_binary(k, XC_TOP_DIV, xc_tiled_for_result(loop, 2),
                             col(k, xc_tiled_for_result(loop, 1)));
  xc_tiled_store(k, O, add(k, base, add(k, mul(k, rm, D), rd_row)), o, qmask);
  return tk_finish(k);
}

/* FlashAttention with 16-bit dot operands, as the lowering builds it for
 * devices with 16-bit matrix instructions: Q, K, V of dtype t ([BH, S, D]),
 * s = dot(q, kT) * scale in f32, p rounded to t for the second dot, O in
 * f32. Knobs BLOCK_M, BLOCK_N in {16, 32, 64}, num_threads in {64, 128}. */
static inline kern_t* build_attention_half(xc_dtype_t t, bool causal, int64_t d, double scale) {
  kern_t* k;
  if (xc_tiled_kernel_create(causal ? "attention_half_causal" : "attention_half", &k)) return NULL;
  const int64_t bm[] = {16, 32, 64}, bn[] = {16, 32, 64}, th[] = {64, 128};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 3, bm, 32);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 32);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 128);
  val_t* Q = xc_tiled_param_buffer(k, "Q", t, XC_ROLE_IN);
  val_t* K = xc_tiled_param_buffer(k, "K", t, XC_ROLE_IN);
  val_t* V = xc_tiled_param_buffer(k, "V", t, XC_ROLE_IN);
  val_t* O = xc_tiled_param_buffer(k, "O", XC_F32, XC_ROLE_OUT);
  val_t* S = xc_tiled_param_scalar(k, "S");
  val_t* BH = xc_tiled_param_scalar(k, "BH");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, S, "BLOCK_M"), xc_texpr_param(k, BH)};
  xc_tiled_set_grid(k, 2, grid);
  xc_tiled_dim_t dm = xc_tiled_dim_knob(kBM), dn = xc_tiled_dim_knob(kBN), dd = xc_tiled_dim_const(d);
  val_t* D = i64c(k, d);
  val_t* pid_m = xc_tiled_program_id(k, 0);
  val_t* base = xc_tiled_name(k, mul(k, mul(k, xc_tiled_program_id(k, 1), S), D), "base");
  val_t* vbm = kv(k, "BLOCK_M");
  val_t* rm = col(k, add(k, mul(k, pid_m, vbm), xc_tiled_arange(k, dm)));
  val_t* rd = xc_tiled_arange(k, dd);
  val_t* rd_row = row(k, rd), *rd_col = col(k, rd);
  val_t* qmask = lt(k, rm, S);
  val_t* q = xc_tiled_load(k, Q, add(k, base, add(k, mul(k, rm, D), rd_row)), qmask, NULL);
  xc_tiled_dim_t vm[1] = {dm}, md[2] = {dm, dd}, mn[2] = {dm, dn};
  val_t* init[3] = {xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, -INFINITY, 1, vm), "m"),
                    xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 1, vm), "l"),
                    xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 2, md), "acc")};
  val_t* s_zero = xc_tiled_const_f(k, XC_F32, 0.0, 2, mn);
  val_t* ninf = f32c(k, -INFINITY);
  val_t* ub = S;
  if (causal) ub = xc_tiled_binary(k, XC_TOP_MIN, S, mul(k, add(k, pid_m, i64c(k, 1)), vbm));
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), ub, kv(k, "BLOCK_N"), 3, init);
  {
    val_t* n0 = xc_tiled_name(k, xc_tiled_for_iv(loop), "n0");
    val_t* m_i = xc_tiled_for_arg(loop, 0), *l_i = xc_tiled_for_arg(loop, 1);
    val_t* acc = xc_tiled_for_arg(loop, 2);
    val_t* rn = add(k, n0, xc_tiled_arange(k, dn));
    val_t* rn_row = row(k, rn), *rn_col = col(k, rn);
    val_t* kT = xc_tiled_load(k, K, add(k, base, add(k, mul(k, rn_row, D), rd_col)), lt(k, rn_row, S), NULL);
    val_t* s = mul(k, xc_tiled_dot(k, q, kT, s_zero), f32c(k, scale)); /* [BM,BN] */
    val_t* valid = lt(k, rn_row, S);
    if (causal) valid = land(k, valid, xc_tiled_cmp(k, XC_CMP_LE, rn_row, rm));
    s = xc_tiled_select(k, valid, s, ninf);
    val_t* m_new = xc_tiled_binary(k, XC_TOP_MAX, m_i, xc_tiled_reduce(k, XC_REDUCE_MAX, s, 1));
    val_t* p = xc_tiled_unary(k, XC_TOP_EXP, sub(k, s, col(k, m_new)));
    val_t* alpha = xc_tiled_unary(k, XC_TOP_EXP, sub(k, m_i, m_new));
    val_t* l_new = add(k, mul(k, l_i, alpha), xc_tiled_reduce(k, XC_REDUCE_SUM, p, 1));
    val_t* v = xc_tiled_load(k, V, add(k, base, add(k, mul(k, rn_col, D), rd_row)), lt(k, rn_col, S), NULL);
    val_t* acc_new = xc_tiled_dot(k, xc_tiled_cast(k, p, t), v, mul(k, acc, col(k, alpha)));
    val_t* next[3] = {m_new, l_new, acc_new};
    xc_tiled_for_end(k, loop, 3, next);
  }
  val_t* o = xc_tiled_binary(k, XC_TOP_DIV, xc_tiled_for_result(loop, 2), col(k, xc_tiled_for_result(loop, 1)));
  xc_tiled_store(k, O, add(k, base, add(k, mul(k, rm, D), rd_row)), o, qmask);
  return tk_finish(k);
}

/* ---- elementwise with masks and broadcasting ------------------------------------ */

/* Y[M,N] = max(select(X > 0, X * r[n], tanh(X)) + c[m] - |X| / 2, -0.75), and
 * Z[M,N] = i32(floor(4 X)) (an integer output through cast), over
 * BLOCK_M x BLOCK_N tiles. Params: X r c Y Z M N. */
static inline kern_t* build_elementwise(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("elementwise_bcast", &k)) return NULL;
  const int64_t bm[] = {1, 4, 8}, bn[] = {16, 32, 64}, th[] = {32, 64, 128};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 3, bm, 4);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 32);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 3, th, 64);
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* r = xc_tiled_param_buffer(k, "r", XC_F32, XC_ROLE_IN);
  val_t* c = xc_tiled_param_buffer(k, "c", XC_F32, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  val_t* Z = xc_tiled_param_buffer(k, "Z", XC_I32, XC_ROLE_OUT);
  val_t* M = xc_tiled_param_scalar(k, "M");
  val_t* N = xc_tiled_param_scalar(k, "N");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, M, "BLOCK_M"), ceildiv(k, N, "BLOCK_N")};
  xc_tiled_set_grid(k, 2, grid);
  val_t* rm = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_M")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBM))));
  val_t* rn = row(k, add(k, mul(k, xc_tiled_program_id(k, 1), kv(k, "BLOCK_N")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBN))));
  val_t* mm = lt(k, rm, M), *mn = lt(k, rn, N), *mask = land(k, mm, mn);
  val_t* off = add(k, mul(k, rm, N), rn);
  val_t* zero = f32c(k, 0.0);
  val_t* x = xc_tiled_load(k, X, off, mask, zero);
  val_t* rv = xc_tiled_load(k, r, rn, mn, zero);   /* [1,BN] broadcast over rows */
  val_t* cv = xc_tiled_load(k, c, rm, mm, zero);   /* [BM,1] broadcast over columns */
  val_t* pos = xc_tiled_cmp(k, XC_CMP_GT, x, zero);
  val_t* y = xc_tiled_select(k, pos, mul(k, x, rv), xc_tiled_unary(k, XC_TOP_TANH, x));
  y = sub(k, add(k, y, cv), mul(k, xc_tiled_unary(k, XC_TOP_ABS, x), f32c(k, 0.5)));
  y = xc_tiled_binary(k, XC_TOP_MAX, y, f32c(k, -0.75));
  xc_tiled_store(k, Y, off, y, mask);
  val_t* z = xc_tiled_cast(k, xc_tiled_unary(k, XC_TOP_FLOOR, mul(k, x, f32c(k, 4.0))), XC_I32);
  xc_tiled_store(k, Z, off, z, mask);
  return tk_finish(k);
}

/* ---- row reduction with a loop-carried tile ---------------------------------------- */

/* S[r] = sum_n X[r,n], Mx[r] = max_n X[r,n] for X[R,N], BLOCK_R rows per
 * program, columns in BLOCK_N chunks carried through a loop. Params: X S Mx R N. */
static inline kern_t* build_row_reduce(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("row_sum_max", &k)) return NULL;
  const int64_t br[] = {1, 2, 8}, bn[] = {8, 32, 128}, th[] = {16, 64, 256};
  int kBR = xc_tiled_add_knob(k, "BLOCK_R", XC_KNOB_TILE, 3, br, 2);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 3, bn, 32);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 3, th, 64);
  val_t* X = xc_tiled_param_buffer(k, "X", XC_F32, XC_ROLE_IN);
  val_t* S = xc_tiled_param_buffer(k, "S", XC_F32, XC_ROLE_OUT);
  val_t* Mx = xc_tiled_param_buffer(k, "Mx", XC_F32, XC_ROLE_OUT);
  val_t* R = xc_tiled_param_scalar(k, "R");
  val_t* N = xc_tiled_param_scalar(k, "N");
  const xc_tiled_expr_t* grid[1] = {ceildiv(k, R, "BLOCK_R")};
  xc_tiled_set_grid(k, 1, grid);
  val_t* rows1 = add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_R")),
                     xc_tiled_arange(k, xc_tiled_dim_knob(kBR)));
  val_t* rows = col(k, rows1);
  val_t* rmask = lt(k, rows, R);
  xc_tiled_dim_t vr[1] = {xc_tiled_dim_knob(kBR)};
  val_t* init[2] = {xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, 0.0, 1, vr), "sum"),
                    xc_tiled_name(k, xc_tiled_const_f(k, XC_F32, -INFINITY, 1, vr), "mx")};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), N, kv(k, "BLOCK_N"), 2, init);
  {
    val_t* n0 = xc_tiled_for_iv(loop);
    val_t* cols = row(k, add(k, n0, xc_tiled_arange(k, xc_tiled_dim_knob(kBN))));
    val_t* mask = land(k, rmask, lt(k, cols, N));
    val_t* off = add(k, mul(k, rows, N), cols);
    val_t* xs = xc_tiled_load(k, X, off, mask, f32c(k, 0.0));
    val_t* xm = xc_tiled_load(k, X, off, mask, f32c(k, -INFINITY));
    val_t* next[2] = {add(k, xc_tiled_for_arg(loop, 0), xc_tiled_reduce(k, XC_REDUCE_SUM, xs, 1)),
                      xc_tiled_binary(k, XC_TOP_MAX, xc_tiled_for_arg(loop, 1),
                                      xc_tiled_reduce(k, XC_REDUCE_MAX, xm, 1))};
    xc_tiled_for_end(k, loop, 2, next);
  }
  val_t* om = lt(k, rows1, R);
  xc_tiled_store(k, S, rows1, xc_tiled_for_result(loop, 0), om);
  xc_tiled_store(k, Mx, rows1, xc_tiled_for_result(loop, 1), om);
  return tk_finish(k);
}

/* ---- a tiny kernel (the example of docs/tiled-ir.md) ------------------------------ */

/* y[i] = x[i] * 2 for i < n, BLOCK elements per program. Params: x y n. */
static inline kern_t* build_scale(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("scale", &k)) return NULL;
  const int64_t cand[] = {4, 8};
  int kb = xc_tiled_add_knob(k, "BLOCK", XC_KNOB_TILE, 2, cand, 4);
  val_t* x = xc_tiled_param_buffer(k, "x", XC_F32, XC_ROLE_IN);
  val_t* y = xc_tiled_param_buffer(k, "y", XC_F32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  const xc_tiled_expr_t* grid[1] = {
      xc_texpr_binary(k, XC_TEXPR_CEILDIV, xc_texpr_param(k, n), xc_texpr_knob(k, kb))};
  xc_tiled_set_grid(k, 1, grid);
  val_t* start = mul(k, xc_tiled_program_id(k, 0), xc_tiled_knob_value(k, kb));
  val_t* offs = add(k, start, xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
  val_t* mask = lt(k, offs, n);
  val_t* v = xc_tiled_load(k, x, offs, mask, NULL);
  xc_tiled_store(k, y, offs, mul(k, v, f32c(k, 2.0)), mask);
  return tk_finish(k);
}

/* ---- 16-bit floats -------------------------------------------------------------- */

/* A kernel named `name` over a flat range: knobs BLOCK (small or large,
 * default large; *kb its index) and num_threads (32 or 64, default 64).
 * NULL when it cannot be made. */
static inline kern_t* tk_flat_kernel(const char* name, int64_t small, int64_t large, int* kb) {
  kern_t* k;
  if (xc_tiled_kernel_create(name, &k)) return NULL;
  const int64_t bl[] = {small, large}, th[] = {32, 64};
  *kb = xc_tiled_add_knob(k, "BLOCK", XC_KNOB_TILE, 2, bl, large);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 64);
  return k;
}

/* The 1-D frame of a flat kernel over n elements (the scalar parameter):
 * grid ceildiv(n, BLOCK), this program's BLOCK offsets and their in-range
 * mask (kb: the BLOCK knob). */
static inline val_t* tk_flat_offsets(kern_t* k, int kb, val_t* n, val_t** mask) {
  const xc_tiled_expr_t* grid[1] = {ceildiv(k, n, "BLOCK")};
  xc_tiled_set_grid(k, 1, grid);
  val_t* offs = add(k, mul(k, xc_tiled_program_id(k, 0), xc_tiled_knob_value(k, kb)),
                    xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
  *mask = lt(k, offs, n);
  return offs;
}

/* H[i] = half(A[i]) and F[i] = f32(B[i]) for i < n, with half = f16 or bf16.
 * Params: A H B F n. */
static inline kern_t* build_convert(xc_dtype_t half) {
  int kb;
  kern_t* k = tk_flat_kernel(half == XC_F16 ? "convert_f16" : "convert_bf16", 64, 256, &kb);
  if (!k) return NULL;
  val_t* A = xc_tiled_param_buffer(k, "A", XC_F32, XC_ROLE_IN);
  val_t* H = xc_tiled_param_buffer(k, "H", half, XC_ROLE_OUT);
  val_t* B = xc_tiled_param_buffer(k, "B", half, XC_ROLE_IN);
  val_t* F = xc_tiled_param_buffer(k, "F", XC_F32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  val_t* mask = NULL;
  val_t* offs = tk_flat_offsets(k, kb, n, &mask);
  xc_tiled_store(k, H, offs, xc_tiled_cast(k, xc_tiled_load(k, A, offs, mask, NULL), half), mask);
  xc_tiled_store(k, F, offs, xc_tiled_cast(k, xc_tiled_load(k, B, offs, mask, NULL), XC_F32), mask);
  return tk_finish(k);
}

/* C = half(A @ B) with half A, B, C and f32 accumulation. Params: A B C M N K. */
static inline kern_t* build_gemm_half(xc_dtype_t half) {
  kern_t* k;
  if (xc_tiled_kernel_create(half == XC_F16 ? "gemm_f16" : "gemm_bf16", &k)) return NULL;
  const int64_t b16[] = {16, 32}, th[] = {64, 128};
  int kBM = xc_tiled_add_knob(k, "BLOCK_M", XC_KNOB_TILE, 2, b16, 16);
  int kBN = xc_tiled_add_knob(k, "BLOCK_N", XC_KNOB_TILE, 2, b16, 16);
  int kBK = xc_tiled_add_knob(k, "BLOCK_K", XC_KNOB_TILE, 2, b16, 16);
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 64);
  val_t* A = xc_tiled_param_buffer(k, "A", half, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "B", half, XC_ROLE_IN);
  val_t* C = xc_tiled_param_buffer(k, "C", half, XC_ROLE_OUT);
  val_t* M = xc_tiled_param_scalar(k, "M");
  val_t* N = xc_tiled_param_scalar(k, "N");
  val_t* K = xc_tiled_param_scalar(k, "K");
  const xc_tiled_expr_t* grid[2] = {ceildiv(k, M, "BLOCK_M"), ceildiv(k, N, "BLOCK_N")};
  xc_tiled_set_grid(k, 2, grid);
  xc_tiled_dim_t acc_shape[2] = {xc_tiled_dim_knob(kBM), xc_tiled_dim_knob(kBN)};
  val_t* rm = col(k, add(k, mul(k, xc_tiled_program_id(k, 0), kv(k, "BLOCK_M")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBM))));
  val_t* rn = row(k, add(k, mul(k, xc_tiled_program_id(k, 1), kv(k, "BLOCK_N")),
                         xc_tiled_arange(k, xc_tiled_dim_knob(kBN))));
  val_t* rk = xc_tiled_arange(k, xc_tiled_dim_knob(kBK));
  val_t* h0 = xc_tiled_const_f(k, half, 0.0, 0, NULL);
  val_t* acc0 = xc_tiled_const_f(k, XC_F32, 0.0, 2, acc_shape);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, i64c(k, 0), K, kv(k, "BLOCK_K"), 1, &acc0);
  val_t* k0 = xc_tiled_for_iv(loop);
  val_t* ka = row(k, add(k, k0, rk)), *kb = col(k, add(k, k0, rk));
  val_t* a = xc_tiled_load(k, A, add(k, mul(k, rm, K), ka), land(k, lt(k, rm, M), lt(k, ka, K)), h0);
  val_t* b = xc_tiled_load(k, B, add(k, mul(k, kb, N), rn), land(k, lt(k, kb, K), lt(k, rn, N)), h0);
  val_t* next = xc_tiled_dot(k, a, b, xc_tiled_for_arg(loop, 0));
  xc_tiled_for_end(k, loop, 1, &next);
  xc_tiled_store(k, C, add(k, mul(k, rm, N), rn), xc_tiled_cast(k, xc_tiled_for_result(loop, 0), half),
                 land(k, lt(k, rm, M), lt(k, rn, N)));
  return tk_finish(k);
}

/* ---- every elementwise op ------------------------------------------------------------ */

#define TK_ZOO_FLOAT_OUTS 17
#define TK_ZOO_INT_OUTS 9

/* One output row per op over x = X[i] (float dtype ft, |x| <= 1) for i < n:
 * Y[j*n + i] = float op j, Z[j*n + i] = integer op j (on i32 values derived
 * from x). Params: X Y Z n. */
static inline kern_t* build_ops_zoo(xc_dtype_t ft) {
  int kb;
  kern_t* k = tk_flat_kernel(ft == XC_F64 ? "ops_zoo_f64" : "ops_zoo", 16, 128, &kb);
  if (!k) return NULL;
  val_t* X = xc_tiled_param_buffer(k, "X", ft, XC_ROLE_IN);
  val_t* Y = xc_tiled_param_buffer(k, "Y", ft, XC_ROLE_OUT);
  val_t* Z = xc_tiled_param_buffer(k, "Z", XC_I32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  val_t* mask = NULL;
  val_t* offs = tk_flat_offsets(k, kb, n, &mask);
  val_t* x = xc_tiled_load(k, X, offs, mask, NULL);
  val_t* ax = xc_tiled_unary(k, XC_TOP_ABS, x);
  val_t* half = xc_tiled_const_f(k, ft, 0.5, 0, NULL);
  val_t* two = xc_tiled_const_f(k, ft, 2.0, 0, NULL);
  val_t* fy[TK_ZOO_FLOAT_OUTS] = {
      xc_tiled_unary(k, XC_TOP_NEG, x),
      xc_tiled_unary(k, XC_TOP_EXP, x),
      xc_tiled_unary(k, XC_TOP_LOG, add(k, ax, half)),
      xc_tiled_unary(k, XC_TOP_SQRT, ax),
      xc_tiled_unary(k, XC_TOP_RSQRT, add(k, ax, half)),
      xc_tiled_unary(k, XC_TOP_ERF, x),
      xc_tiled_unary(k, XC_TOP_SIGMOID, mul(k, x, xc_tiled_const_f(k, ft, 30.0, 0, NULL))),
      xc_tiled_unary(k, XC_TOP_CEIL, mul(k, x, two)),
      xc_tiled_unary(k, XC_TOP_SIN, mul(k, x, two)),
      xc_tiled_unary(k, XC_TOP_COS, mul(k, x, two)),
      xc_tiled_unary(k, XC_TOP_RECIP, add(k, ax, half)),
      xc_tiled_binary(k, XC_TOP_DIV, x, add(k, ax, two)),
      xc_tiled_binary(k, XC_TOP_REM, mul(k, x, xc_tiled_const_f(k, ft, 7.0, 0, NULL)), two),
      xc_tiled_binary(k, XC_TOP_MIN, x, mul(k, x, x)),
      xc_tiled_binary(k, XC_TOP_POW, add(k, ax, half), x),
      xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_GE, x, half), x, xc_tiled_cast(k, xc_tiled_cast(k, x, XC_F16), ft)),
      xc_tiled_cast(k, xc_tiled_cast(k, mul(k, x, xc_tiled_const_f(k, ft, 300.0, 0, NULL)), XC_I8), ft),
  };
  for (int j = 0; j < TK_ZOO_FLOAT_OUTS; j++)
    xc_tiled_store(k, Y, add(k, offs, mul(k, n, i64c(k, j))), fy[j], mask);
  /* integers: a = i32(x * 1000), b = odd i32 in [-99, 99] */
  val_t* a = xc_tiled_cast(k, mul(k, x, xc_tiled_const_f(k, ft, 1000.0, 0, NULL)), XC_I32);
  val_t* b = xc_tiled_binary(k, XC_TOP_OR, xc_tiled_cast(k, mul(k, x, xc_tiled_const_f(k, ft, 99.0, 0, NULL)), XC_I32),
                             xc_tiled_const_i(k, XC_I32, 1, 0, NULL));
  val_t* three = xc_tiled_const_i(k, XC_I32, 3, 0, NULL);
  val_t* zi[TK_ZOO_INT_OUTS] = {
      xc_tiled_binary(k, XC_TOP_DIV, a, b),
      xc_tiled_binary(k, XC_TOP_REM, a, b),
      xc_tiled_binary(k, XC_TOP_XOR, a, three),
      xc_tiled_binary(k, XC_TOP_AND, a, xc_tiled_const_i(k, XC_I32, 0xff, 0, NULL)),
      xc_tiled_unary(k, XC_TOP_NOT, a),
      xc_tiled_unary(k, XC_TOP_ABS, a),
      xc_tiled_binary(k, XC_TOP_MAX, a, b),
      xc_tiled_cast(k, xc_tiled_binary(k, XC_TOP_OR, xc_tiled_cmp(k, XC_CMP_NE, a, b),
                                       xc_tiled_unary(k, XC_TOP_NOT, xc_tiled_cmp(k, XC_CMP_LE, a, b))), XC_I32),
      xc_tiled_cast(k, xc_tiled_cast(k, a, XC_U8), XC_I32), /* wraps */
  };
  for (int j = 0; j < TK_ZOO_INT_OUTS; j++)
    xc_tiled_store(k, Z, add(k, offs, mul(k, n, i64c(k, j))), zi[j], mask);
  return tk_finish(k);
}

/* One program on constant tiles of W[6,5] (f32): T = trans(W) as [5,6],
 * P[5] = prod over rows, Q[5] = min over rows, and the i8 dot
 * D[6,6] = A8[6,5] @ B8[5,6] into i32 plus a broadcast 1-D bias [6].
 * Params: W T P Q A8 B8 D. */
static inline kern_t* build_zoo_2d(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("zoo_2d", &k)) return NULL;
  const int64_t th[] = {8, 64};
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 2, th, 64);
  val_t* W = xc_tiled_param_buffer(k, "W", XC_F32, XC_ROLE_IN);
  val_t* T = xc_tiled_param_buffer(k, "T", XC_F32, XC_ROLE_OUT);
  val_t* P = xc_tiled_param_buffer(k, "P", XC_F32, XC_ROLE_OUT);
  val_t* Q = xc_tiled_param_buffer(k, "Q", XC_F32, XC_ROLE_OUT);
  val_t* A8 = xc_tiled_param_buffer(k, "A8", XC_I8, XC_ROLE_IN);
  val_t* B8 = xc_tiled_param_buffer(k, "B8", XC_I8, XC_ROLE_IN);
  val_t* D = xc_tiled_param_buffer(k, "D", XC_I32, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  val_t* r6 = xc_tiled_arange(k, xc_tiled_dim_const(6)), *r5 = xc_tiled_arange(k, xc_tiled_dim_const(5));
  val_t* w_off = add(k, mul(k, col(k, r6), i64c(k, 5)), row(k, r5));    /* [6,5] */
  val_t* w = xc_tiled_load(k, W, w_off, NULL, NULL);
  val_t* t_off = add(k, mul(k, col(k, r5), i64c(k, 6)), row(k, r6));    /* [5,6] */
  xc_tiled_store(k, T, t_off, xc_tiled_trans(k, w), NULL);
  xc_tiled_store(k, P, r5, xc_tiled_reduce(k, XC_REDUCE_PROD, w, 0), NULL);
  xc_tiled_store(k, Q, r5, xc_tiled_reduce(k, XC_REDUCE_MIN, w, 0), NULL);
  val_t* a8 = xc_tiled_load(k, A8, w_off, NULL, NULL);
  val_t* b8 = xc_tiled_load(k, B8, t_off, NULL, NULL);
  xc_tiled_dim_t d66[2] = {xc_tiled_dim_const(6), xc_tiled_dim_const(6)};
  val_t* bias = xc_tiled_cast(k, r6, XC_I32);
  val_t* acc = xc_tiled_broadcast(k, bias, 2, d66);
  val_t* d = xc_tiled_dot(k, a8, b8, acc);
  xc_tiled_store(k, D, add(k, mul(k, col(k, r6), i64c(k, 6)), row(k, r6)), d, NULL);
  return tk_finish(k);
}

#endif
