/* What the HIP dialect (targets/rocm/rocm_dialect.c) takes over from the CUDA
 * dialect (cuda_dialect.c): HIP's kernel language spells types, indices,
 * shared memory and the barrier as CUDA does, so the HIP table starts from
 * these entries and states only its differences (prelude, entry preamble,
 * matrix instructions, lane exchange). Private to the two dialects. */
#ifndef XC_CUDA_DIALECT_H
#define XC_CUDA_DIALECT_H

#include "../cstyle/cstyle.h"

/* The designated initializers of a xc_cstyle_dialect_t that CUDA and HIP
 * share. */
#define XC_CUDA_DIALECT_COMMON                                                                                 \
  .work_groups = true,                                                                                         \
  .value_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "float", [XC_BF16] = "float",             \
                 [XC_I8] = "signed char", [XC_I16] = "short", [XC_I32] = "int", [XC_I64] = "long long",        \
                 [XC_U8] = "unsigned char", [XC_U16] = "unsigned short", [XC_U32] = "unsigned int",            \
                 [XC_U64] = "unsigned long long", [XC_BOOL] = "unsigned char"},                                \
  .storage_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "unsigned short",                      \
                   [XC_BF16] = "unsigned short", [XC_I8] = "signed char", [XC_I16] = "short", [XC_I32] = "int", \
                   [XC_I64] = "long long", [XC_U8] = "unsigned char", [XC_U16] = "unsigned short",            \
                   [XC_U32] = "unsigned int", [XC_U64] = "unsigned long long", [XC_BOOL] = "unsigned char"},   \
  .global_qual = "",                                                                                           \
  .local_qual = "__shared__ ",                                                                                 \
  .private_qual = "",                                                                                          \
  /* No restrict: lowered modules may bind a view and its source to two                                        \
   * parameters, so buffers can alias. */                                                                      \
  .restrict_kw = "",                                                                                           \
  .program_id = {"(long long)blockIdx.x", "(long long)blockIdx.y", "(long long)blockIdx.z"},                   \
  .num_programs = {"(long long)gridDim.x", "(long long)gridDim.y", "(long long)gridDim.z"},                    \
  .thread_id = "threadIdx.x",                                                                                  \
  .barrier = "__syncthreads();",                                                                               \
  .f32_suffix = "f",                                                                                           \
  .f64_suffix = "",                                                                                            \
  /* rsqrtf is approximate (2 ulp on NVIDIA); 1/sqrtf is correctly rounded                                     \
   * with the compilers' defaults */                                                                           \
  .has_rsqrt = false,                                                                                          \
  .simd_pragma = NULL,                                                                                         \
  .unroll_pragma = "#pragma unroll",                                                                           \
  .f64_prelude = NULL,                                                                                         \
  .vec_chunks = true

/* The start of both preludes after their includes: the fixed-width types
 * and bit casts the shared prelude needs (no header is included under
 * NVRTC, so nothing else defines them). */
#define XC_CUDA_PRELUDE_BITS                                                      \
  "typedef unsigned short xc_u16;\ntypedef unsigned int xc_u32;\n"                \
  "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"       \
  "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"                 \
  "static inline xc_u32 xc_fbits(float f) { return __float_as_uint(f); }\n"       \
  "static inline float xc_bitsf(xc_u32 u) { return __uint_as_float(u); }\n"

/* Whether caps list the matrix shape m x n x k of input dtype `in` with an
 * f32 accumulator. */
bool xc_cuda_caps_have_mma(const xc_device_caps_t* caps, int m, int n, int k, xc_dtype_t in);

/* Writes the kernel function around decls and body: the extern "C"
 * __global__ signature with __launch_bounds__(threads), buffers first, then
 * the scalar parameters, and `lid`. lid_bound: lid is taken modulo
 * `threads` (which changes no value but tells the compiler its bound). */
void xc_cuda_write_kernel(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e,
                          bool lid_bound);

/* Pattern programs: whether two schedule records are the same program; the
 * knob values of an emission (defaults, overridden by knobs[]; false: a knob
 * the kernel has not, or more knobs than a record holds). */
bool xc_cuda_same_record(const xc_tiled_schedule_t* a, const xc_tiled_schedule_t* b);
bool xc_cuda_knob_values(const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs, int64_t* values);

#endif
