/* The C-family kernel emitter: one emitter for every target whose kernel
 * language is C-like (C for the cpu target, OpenCL C, CUDA C++, HIP C++),
 * parameterized by a dialect table. docs/emitter.md describes the mapping of
 * tiles to hardware and the table. */
#ifndef XCOMP_TARGETS_CSTYLE_H
#define XCOMP_TARGETS_CSTYLE_H

#include <stdbool.h>
#include <stddef.h>

#include "xcomp/target.h"
#include "xcomp/tiled.h"

/* Dialects without work-groups keep a program's tiles in stack arrays; emit
 * refuses knob choices that need more than this per program (OpenMP worker
 * threads get the default thread stack, typically 8 MiB). */
#define XC_CSTYLE_MAX_STACK_BYTES ((int64_t)4 << 20)

typedef struct xc_cstyle_writer xc_cstyle_writer_t;
struct xc_cstyle_dot;

/* What the dialect hooks see of the kernel being emitted. */
typedef struct xc_cstyle_entry {
  const xc_tiled_kernel_t* kernel;
  const char* entry;        /* entry point symbol */
  int64_t threads;          /* work-items per program (1 without work-groups) */
  const char* decls;        /* declarations of the program's tiles and allocations */
  const char* body;         /* the program body */
  const struct xc_cstyle_dot* dot; /* the dot on matrix instructions, or NULL */
  int64_t dyn_local_bytes;  /* bytes of the dynamic work-group array (dyn_local_array), 0: none */
  /* Packed dot operands (options.pack_operands; docs/emitter.md): the body
   * of the pack entry for pack program `p` (NULL: none), how many pack
   * programs it has and the bytes of the buffer they fill, which the
   * programs read as `xc_pack` (the buffer after the kernel's own). */
  const char* pack_body;
  int64_t pack_programs, pack_bytes;
} xc_cstyle_entry_t;

/* A `dot` the dialect may map to matrix instructions (docs/emitter.md,
 * "Matrix instructions"). The emitter fills the first block, the dialect's
 * `dot_plan` the second, the emitter the names before `emit_dot`. */
typedef struct xc_cstyle_dot {
  /* problem: result[m,n] = acc[m,n] + sum_q a[m,q] * b[q,n] */
  int64_t m, n, k;
  xc_dtype_t a_dtype, b_dtype;  /* operand element dtypes */
  xc_dtype_t acc_dtype;         /* accumulator and result dtype */
  int64_t threads;              /* work-items per program */
  int warp;                     /* caps->simd_width: warp / wavefront size (0: unknown) */
  const xc_device_caps_t* caps; /* may be NULL (generic code for the dialect) */
  bool allow_tf32;              /* f32 operands may be rounded to a reduced-precision format */
  /* plan: operands are work-group shared arrays of *storage* elements (raw
   * 16-bit patterns for f16/bf16), a[i*lda + q] and b[q*ldb + j], lda >= k
   * and ldb >= n (padding against bank conflicts), both arrays aligned to
   * 16 bytes. The accumulator lives in registers across the whole K loop:
   * work-item `lid` holds `slots` elements in a private array, slot s being
   * flat element (row*n + col) given by dot_slot_index. */
  int64_t lda, ldb;
  /* Optional XOR swizzle of 16-byte chunks (instead of padding): chunk c of
   * row i of `a` is stored at chunk c ^ ((i >> a_swz_shift) & a_swz_mask)
   * of that row (mask 0: none; mask < chunks per row, rows whole chunks).
   * Same for `b` with b_swz_*. */
  int64_t a_swz_shift, a_swz_mask, b_swz_shift, b_swz_mask;
  int64_t slots;
  int64_t params[8];            /* the dialect's own choices (e.g. the warp tiling) */
  /* the instruction the plan issues (m x n x k per instruction; 0: not
   * reported, the caps' first shape for the dtypes is recorded instead):
   * what the schedule record names */
  int inst_m, inst_n, inst_k;
  /* names for emit_dot */
  const char* a;                /* shared operand arrays */
  const char* b;
  const char* acc;              /* private accumulator array, `slots` elements of value_type[acc_dtype] */
} xc_cstyle_dot_t;

typedef struct xc_cstyle_dialect {
  const char* name;          /* "c", "opencl-c": also the source language */
  bool work_groups;          /* a program is `threads` work-items sharing local memory */
  /* Type names of values (compute types: f16/bf16 compute in float) and of
   * buffer elements (storage types: f16/bf16 are 16-bit unsigned integers). */
  const char* value_type[XC_F8E5M2 + 1];
  const char* storage_type[XC_F8E5M2 + 1];
  const char* global_qual;   /* before the element type of a buffer pointer */
  const char* local_qual;    /* work-group shared arrays */
  const char* private_qual;  /* per-thread arrays */
  const char* restrict_kw;   /* "" : buffers of one launch may alias (views), so no restrict */
  const char* program_id[3]; /* expressions of the program ids (i64) */
  const char* num_programs[3];
  const char* thread_id;     /* work-item index in the program (work-group dialects) */
  const char* barrier;       /* statement: orders local-memory accesses of a program */
  const char* global_barrier; /* statement: also orders global-memory accesses of a program
                                 (NULL: `barrier` does, as __syncthreads() does in CUDA) */
  const char* f32_suffix;    /* math function suffix for f32: "f" in C, "" in OpenCL */
  const char* f64_suffix;
  bool has_rsqrt;            /* rsqrt() is a builtin */
  const char* simd_pragma;   /* before vectorizable element loops; NULL = none */
  const char* unroll_pragma; /* before per-thread element loops; NULL = none */
  /* f32 exp/erf/tanh (and sigmoid) call the prelude's branch-free xc_vexpf,
   * xc_verff, xc_vtanhf, which vectorize (libm calls do not) */
  bool vector_math;
  /* The prelude's 8x8 f32 block transpose, `void name(const float* src,
   * int64 src_row_stride, float* dst, int64 dst_row_stride)` (dst row i is
   * src column i), for a store of a transposed array tile whose sides are
   * multiples of 8; NULL: the store reads the tile transposed per element. */
  const char* transpose8;
  /* Prelude: includes, the u32/bit-cast helpers the shared prelude needs
   * (xc_u16, xc_u32, xc_fbits, xc_bitsf), and `extra` when f64 is used. */
  const char* prelude;
  const char* f64_prelude;
  /* Writes the entry function around decls and body (signature, argument
   * unpacking, the loop over programs or the work-group setup). */
  void (*write_entry)(xc_cstyle_writer_t* w, const struct xc_cstyle_dialect* d,
                      const xc_cstyle_entry_t* e);
  /* Matrix instructions (all optional; NULL: `dot` is the generic loop).
   * dot_plan: true when the dialect takes this dot; then it sets lda, ldb,
   * slots and its params. False: the generic per-element loop is used.
   * dot_slot_index: writes an int expression of the flat index (row*n + col)
   * of accumulator slot `slot` (a constant after unrolling) of work-item
   * `lid`; every element is held by exactly one (work-item, slot).
   * emit_dot: writes statements, executed by all work-items of the program,
   * that add a@b to the accumulator slots; a and b are complete in shared
   * memory (the emitter has placed a barrier before). `indent` prefixes
   * every line. */
  bool (*dot_plan)(const struct xc_cstyle_dialect* d, xc_cstyle_dot_t* dot);
  /* The hooks also take dots that are not a K loop's accumulation (a single
   * dot whose operands are loads or computed tiles, e.g. attention's two):
   * the emitter copies the operands into work-group arrays of the plan's
   * layout and the accumulator into slots, and writes the slots back
   * (docs/emitter.md, "Dots with staged operands"). False: only the K-loop
   * shape is offered. */
  bool dot_staged;
  void (*dot_slot_index)(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* dot, const char* slot);
  void (*emit_dot)(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* dot, const char* indent);
  /* Asynchronous 16-byte copies from global to shared memory (optional;
   * NULL: the emitter copies with plain 16-byte loads and stores).
   * copy16_async: statement copying 16 bytes from global pointer `src` to
   * shared pointer `dst`, or writing 16 zero bytes when `full` is false
   * (then src is not read). copy_commit closes a group of copies;
   * copy_wait waits until at most `pending` groups are in flight (the
   * emitter adds the barrier that makes the data visible to all). */
  void (*copy16_async)(xc_cstyle_writer_t* w, const char* dst, const char* src, const char* full);
  const char* align16;         /* before the element type of a 16-byte aligned shared array */
  /* Qualifier of a pointer into a work-group array in a cast ("__local " in
   * OpenCL, "" in CUDA): with align16, the register-blocked dot reads four
   * f32 of a row of its a operand as one float4 (NULL: element reads). */
  const char* local_ptr_qual;
  /* OpenCL C's float vectors (floatN for N = 4, 8, 16; vloadN / vstoreN;
   * fma of vectors, a scalar widened by a cast): a register-blocked dot
   * whose b rows are read as float4 keeps each row of a work-item's
   * accumulators in vectors of its chunk's width, so that a CPU device's
   * compiler issues one vector fma per row and chunk instead of shuffling
   * scalars into vectors (false: scalar accumulators). */
  bool float_vectors;
  const char* copy_commit;
  const char* copy_wait_fmt;   /* printf format with one %d: pending groups */
  /* Lane exchange within aligned groups of 32 work-items (optional; NULL:
   * row reductions combine through local memory only): a format whose %s
   * is a value (float, double, int, long long or their unsigned forms) and
   * %d a lane mask below 32; the expression is the value of the lane
   * lid ^ mask. All work-items of the group execute it together. */
  const char* shfl_xor_fmt;
  /* erf of an f16/bf16 value computed in float (optional; NULL: the f32
   * erf): a prelude function whose error is far below a 16-bit ulp but
   * that is cheaper than the f32 library's. */
  const char* erf_half;
  /* The same for an erf whose only use is 1 + erf (optional; NULL:
   * erf_half): only its absolute error counts there. */
  const char* erf_half_plus_one;
  /* tanh and the logistic sigmoid 1 / (1 + exp(-x)) of an f32 value (or an
   * f16/bf16 one computed in float) as calls of these prelude functions
   * (optional; NULL: the math library's tanh and the expression inline).
   * The functions compute the same expression; the point is that they are
   * not inlined: an epilogue over a 128 x 128 accumulator tile holds 128
   * of them per thread, which a GPU compiler unrolls and compiles 128
   * times (cuda: NVRTC 3.0 s instead of 1.6 s for GPT-2's MLP
   * up-projection with its tanh GELU, and fewer spills; RESULTS.md
   * section 24). */
  const char* tanh_call;
  const char* sigmoid_call;
  /* Dynamic work-group memory (optional; NULL: static arrays only): the
   * declaration of an unsized array of bytes named xc_dsm, aligned to 128
   * bytes, whose size the launch supplies. When a mma K loop's pipeline
   * stages do not fit caps->local_memory_bytes but fit
   * caps->local_memory_optin_bytes, its operand buffers are carved from it
   * and write_entry is told the size (entry.dyn_local_bytes) so that the
   * target can pass it at launch. */
  const char* dyn_local_array;
  /* Vector chunks (docs/emitter.md): rows whose length is a multiple of
   * threads * chunk take a layout in which each work-item holds chunks of
   * consecutive elements, loaded and stored from global memory as one
   * aligned struct of 16 bytes where the chunk is contiguous and aligned
   * (tested per chunk at run time), element by element otherwise. */
  bool vec_chunks;
} xc_cstyle_dialect_t;

extern const xc_cstyle_dialect_t xc_cstyle_dialect_c;
extern const xc_cstyle_dialect_t xc_cstyle_dialect_opencl;

/* Text output used by the hooks. */
void xc_cstyle_printf(xc_cstyle_writer_t* w, const char* fmt, ...) XC_PRINTF(2, 3);
/* C identifier of a kernel parameter ("p_<name>"). */
const char* xc_cstyle_param_name(const xc_tiled_value_t* param, char* buf, size_t size);

typedef struct xc_cstyle_options {
  const char* const* provenance; /* lines for the header comment; may be NULL */
  int num_provenance;
  bool allow_tf32;               /* f32 dots may use reduced-precision matrix instructions */
  /* The schedule to follow (NULL: the kernel's own, k->schedule; neither:
   * the emitter's defaults). Its knob values must be the ones passed. */
  const xc_tiled_schedule_t* schedule;
  /* The target runs a kernel's pack entry before its programs (the cpu
   * target: docs/targets.md, "C ABI of CPU kernels"): dot operands that
   * programs share may be packed once per launch (C dialect only). */
  bool pack_operands;
  /* A further entry point for a source already emitted (the cpu target's
   * one-thread form of a split kernel, docs/targets.md): named
   * xk_<kernel><entry_suffix>, without the prelude that source already
   * has (vector types are declared under guards in every source, so each
   * is declared once when the texts are joined). NULL: a whole source. */
  const char* entry_suffix;
} xc_cstyle_options_t;

/* Knob values (one per kernel knob) from name/value pairs: unnamed knobs take
 * their default; an unknown name or an invalid combination is an error. */
xc_status_t xc_cstyle_resolve_knobs(const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs,
                                    int64_t* out_values);

/* False (with a reason) for kernels the emitter cannot translate for `caps`. */
bool xc_cstyle_supports(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps,
                        const xc_tiled_kernel_t* k, char* why, size_t why_size);

/* What emitting k with these knob values would decide and take: the
 * schedule the emitter follows, given `follow` (NULL: its defaults), with
 * the work-group memory it needs — without refusing what exceeds the
 * device (schedulers judge that with xc_tiled_schedule_check). An error
 * when `follow` asks for what the dialect cannot do. */
xc_status_t xc_cstyle_plan(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           const int64_t* knob_values, const xc_tiled_schedule_t* follow,
                           const xc_cstyle_options_t* options, xc_tiled_schedule_t* out);

/* The scheduler of C-family targets (cstyle_schedule.c): completes *inout
 * (knob values chosen by the caller) into the schedule this dialect follows
 * on caps, legal under limits — the emitter's default decisions, else fewer
 * pipeline stages, dynamic work-group memory, generic dots, then (unless
 * XC_SCHEDULE_KEEP_KNOBS) smaller tiles. XC_UNSUPPORTED when nothing fits. */
xc_status_t xc_cstyle_schedule(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                               const xc_tiled_limits_t* limits, unsigned flags, const xc_cstyle_options_t* options,
                               xc_tiled_schedule_t* inout);

/* Source for kernel k with the given knobs, following the schedule of the
 * options or of the kernel (docs/tiled-ir.md, "Schedules"), else the
 * emitter's defaults. caps and options may be NULL. */
xc_status_t xc_cstyle_emit(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps,
                           const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs,
                           const xc_cstyle_options_t* options, xc_kernel_source_t* out);

#endif
