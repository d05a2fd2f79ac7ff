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
  .local_ptr_qual = "",                                                                                        \
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
 * f32 accumulator (xc_mma_shape_matches: wgmma's n up to the listed one). */
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
/* A pattern program's step: whether it takes k on caps (filling *prog) and
 * its record with the other knobs from start (NULL: the defaults). */
typedef bool (*xc_cuda_program_fn)(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* start,
                                   void* prog, xc_tiled_schedule_t* s);
/* The scheduler's step for a pattern program: true with *inout its record
 * when taken (with KEEP_KNOBS only where the given knob values are its
 * tiles; with FOLLOW only where the request is its record); false: the
 * C-family scheduler decides. */
bool xc_cuda_program_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                              unsigned flags, xc_tiled_schedule_t* inout, xc_cuda_program_fn fn, void* prog);
/* Whether emission takes the program: it is taken, the knob values (the
 * defaults, overridden by knobs[]) are its tiles, and the kernel's
 * schedule, where it has one, is its record. */
bool xc_cuda_program_selected(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                              int num_knobs, xc_cuda_program_fn fn, void* prog);
/* The start of a program's source: its entry name into entry, the header
 * comment's first line (its description follows, then
 * xc_cuda_program_pattern closes the comment). */
void xc_cuda_program_begin(xc_cstyle_writer_t* b, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           char* entry, size_t entry_size);
void xc_cuda_program_pattern(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k);
/* "#define <macro> extern "C" __global__ void __launch_bounds__(...) entry(
 * buffers..., scalars..., tensor maps tm0...)" in the launch's parameter
 * order (the maps those of the entry's launch plan, XC_CUDA_LAUNCH_PREFIX
 * in cuda_target.h; xc_tmap is a helper: write the helpers first), and the
 * dynamic shared-memory size symbol of the entry. */
void xc_cuda_program_entry(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k, const char* macro, const char* bounds,
                           const char* entry, long long dynamic_bytes, int num_tmaps);
/* Writes the programs' device helpers: xc_smem (a shared-memory address),
 * xc_cp16 (16-byte cp.async, zero fill), xc_pack (two f32 to dtype),
 * xc_bar_init/arrive/wait (mbarriers, by phase parity), xc_bar_expect (an
 * arrival expecting TMA bytes), xc_tmap and xc_tma2/xc_tma3 (tensor-map
 * copies completing on a barrier), xc_desc (wgmma's descriptor, 128-byte
 * swizzle). */
void xc_cuda_program_helpers(xc_cstyle_writer_t* b, xc_dtype_t dtype);
/* Writes `static __device__ void <name>(float* d, A, unsigned long long db,
 * int scale_d)`: one sm_90 wgmma.mma_async m64n<n>k16 of dtype with f32
 * accumulators d[n / 2] (d = A B + (scale_d ? d : 0)); A is a shared-memory
 * descriptor (`unsigned long long da`) or, with a_regs, the thread's four
 * registers of the A fragment (`const unsigned* a`); B is a descriptor,
 * read transposed (MN-major) with trans_b. */
void xc_cuda_write_wgmma(xc_cstyle_writer_t* b, const char* name, int n, xc_dtype_t dtype, bool a_regs, bool trans_b);
/* Hands the written source to out (language cuda). */
xc_status_t xc_cuda_program_end(xc_cstyle_writer_t* b, const char* entry, xc_kernel_source_t* out);

#endif
