/* The cuda target's sm_90 GEMM program for the tiled IR's gemm pattern
 * (cuda_gemm.c). Private to the cuda target. */
#ifndef XC_CUDA_GEMM_H
#define XC_CUDA_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "xcomp/target.h"
#include "xcomp/tiled.h"

/* One operand: element (batch, i, j) of kernel parameter `param` is at
 * base + batch*sb + i*si + j*sj (A: i row, j k; B: i k, j column; Y: i row,
 * j column). */
typedef struct xc_cuda_gemm_operand {
  int param;
  long long base, sb, si, sj;
} xc_cuda_gemm_operand_t;

typedef struct xc_cuda_gemm {
  xc_dtype_t dtype;
  long long batch, M, N, K;
  xc_cuda_gemm_operand_t a, b, y;
  /* the epilogue: 0 none; 1 "swiglu_a", y = silu(AB) u; 2 "swiglu_b",
   * y = silu(u) AB (u of y's shape, another buffer) */
  int epi;
  xc_cuda_gemm_operand_t u;
  /* the program (xc_cuda_gemm_take) */
  bool b_kmajor; /* B stored with k contiguous ([n, k]) */
  bool y_pairs;  /* Y's strides even: 4-byte stores of column pairs */
  bool u_pairs;  /* likewise, 4-byte loads of U */
  int bm, bn, bk, stages, threads;
  long long smem;
  /* tiles moved by TMA (tensor maps of A and B; else 16-byte cp.async by
   * the producer warpgroup's 128 threads) */
  bool tma;
  /* the epilogue writes each consumer's rows through shared memory and
   * stores them row by row, consecutive threads on consecutive columns
   * (rows of Y not 4-byte aligned: a vocabulary of 50257 columns) */
  bool staged;
  /* persistent: at most this many programs, each looping over tiles (0:
   * one program per tile) */
  long long programs;
} xc_cuda_gemm_t;

/* The kernel's gemm pattern (false: none, or malformed). */
bool xc_cuda_gemm_parse(const xc_tiled_kernel_t* k, xc_cuda_gemm_t* g);
/* Whether the program takes the kernel on caps; false: why says what is
 * missing. */
bool xc_cuda_gemm_take(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, xc_cuda_gemm_t* g, char* why,
                       size_t why_size);
/* The scheduler's and the emitter's steps, as xc_cuda_fa_schedule and
 * xc_cuda_fa_emit (cuda_attention.h) for attention. */
bool xc_cuda_gemm_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                           unsigned flags, xc_tiled_schedule_t* inout);
xc_status_t xc_cuda_gemm_emit(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                              int num_knobs, bool* taken, xc_kernel_source_t* out);

#endif
