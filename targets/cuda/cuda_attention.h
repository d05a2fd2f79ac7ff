/* The cuda target's FlashAttention program for the tiled IR's attention
 * pattern (cuda_attention.c). Private to the cuda target. */
#ifndef XC_CUDA_ATTENTION_H
#define XC_CUDA_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>

#include "xcomp/target.h"
#include "xcomp/tiled.h"

/* One operand: element (b, h, s, d) of kernel parameter `param` is at
 * base + b*sb + h*sh + s*ss + d. */
typedef struct xc_cuda_fa_operand {
  int param;
  long long base, sb, sh, ss;
} xc_cuda_fa_operand_t;

typedef struct xc_cuda_fa {
  xc_dtype_t dtype;
  long long B, Hq, Hk, S, L, D;
  int causal;
  double scale;
  xc_cuda_fa_operand_t q, k, v, o;
  /* the program (xc_cuda_fa_take) */
  int bm, bn, threads;
  int wg;     /* sm_90: consumer warpgroups of 64 query rows on wgmma (0: the mma.sync program) */
  int stages; /* K/V tiles in shared memory */
  int mt;    /* mma.sync: 16-row m-tiles per warp */
  bool qreg; /* Q's fragments kept in registers */
  long long pitch, smem;
} xc_cuda_fa_t;

/* The kernel's attention pattern (false: none, or malformed). */
bool xc_cuda_fa_parse(const xc_tiled_kernel_t* k, xc_cuda_fa_t* fa);
/* Whether the program takes the kernel on caps; fills the program's
 * tiles and memory. False: why says what is missing. */
bool xc_cuda_fa_take(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, xc_cuda_fa_t* fa, char* why,
                     size_t why_size);
/* The cuda scheduler's step for such kernels: true with *inout the
 * program's record when taken (with KEEP_KNOBS only where the given knob
 * values are the program's tiles; with FOLLOW only where the request is its
 * record); false: the C-family scheduler decides. */
bool xc_cuda_fa_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                         unsigned flags, xc_tiled_schedule_t* inout);
/* Emits the program when the knob values (defaults overridden by knobs[])
 * are its tiles and the kernel's schedule, if any, is its record; *taken
 * false: emit the body as usual. */
xc_status_t xc_cuda_fa_emit(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                            int num_knobs, bool* taken, xc_kernel_source_t* out);

#endif
