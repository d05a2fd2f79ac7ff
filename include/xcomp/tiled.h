/* xcomp tiled IR: hardware-neutral block programs, the level between the
 * fused graph and the target emitters (docs/tiled-ir.md is the reference).
 *
 * A kernel is a grid of *programs* (up to 3 axes). Every program runs the
 * kernel body once and computes one tile of the outputs with tile-level
 * operations: loads/stores of tiles with element offsets and masks, elementwise
 * math, reductions along a tile axis, `dot` into an accumulator, `for` loops
 * with loop-carried values, and explicit memory scopes (global buffers,
 * work-group shared and private allocations, barriers).
 *
 * Values are SSA: a scalar (rank 0) or a tile (rank 1..3). Tile dims are
 * constants or schedule knobs, so shapes are static once knob values are
 * chosen. Knobs have enumerable candidate sets, a default, and constraints
 * (expressions over knobs and target limits) a tuner must respect.
 *
 * Ownership: a kernel owns everything reachable from it (values, ops, blocks,
 * expressions, names) in its arena; xc_tiled_kernel_destroy frees it all.
 *
 * Building: the builder functions type-check as they go. On the first error
 * they record it in the kernel and return NULL; every builder function
 * accepts NULL operands and then returns NULL, so a builder sequence needs no
 * checks until xc_tiled_kernel_take_error (or xc_tiled_verify, which reports
 * the recorded error first). */
#ifndef XCOMP_TILED_H
#define XCOMP_TILED_H

#include <stdio.h>

#include "xcomp/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XC_TILED_MAX_RANK 3
#define XC_TILED_MAX_GRID 3
#define XC_TILED_MAX_KNOB_CANDIDATES 32
/* A resolved tile may have at most this many elements (absurd-size guard). */
#define XC_TILED_MAX_TILE_ELEMS ((int64_t)1 << 22)

/* ---- dims, expressions, knobs, limits ------------------------------------ */

/* A tile dim: a constant (knob < 0) or the value of knob `knob`. */
typedef struct xc_tiled_dim {
  int64_t value;
  int knob;
} xc_tiled_dim_t;

static inline xc_tiled_dim_t xc_tiled_dim_const(int64_t v) {
  xc_tiled_dim_t d = {v, -1};
  return d;
}
static inline xc_tiled_dim_t xc_tiled_dim_knob(int knob) {
  xc_tiled_dim_t d = {0, knob};
  return d;
}

/* Target limits that knob constraints may refer to. */
typedef enum xc_tiled_limit {
  XC_TILED_LIMIT_MAX_THREADS,    /* threads (work-items) per program */
  XC_TILED_LIMIT_SHARED_BYTES,   /* work-group shared memory per program */
  XC_TILED_LIMIT_SIMD_WIDTH,     /* warp / wavefront / subgroup / SIMD lanes */
  XC_TILED_LIMIT_MAX_VECTOR,     /* widest vector load in elements */
  XC_TILED_LIMIT_MAX_TILE_ELEMS, /* register budget: elements of one tile */
  XC_TILED_LIMIT_MMA,            /* dtypes whose dot has matrix instructions: bits 1 << dtype */
  XC_TILED_LIMIT_STAGED_BYTES,   /* work-group memory a matrix-instruction K loop's operand buffers
                                    may take (CUDA: the opt-in dynamic maximum); >= shared_bytes */
  XC_TILED_LIMIT_COUNT
} xc_tiled_limit_t;

typedef struct xc_tiled_limits {
  int64_t value[XC_TILED_LIMIT_COUNT];
} xc_tiled_limits_t;

/* Unlimited (INT64_MAX everywhere, SIMD width 1). */
void xc_tiled_limits_init_unlimited(xc_tiled_limits_t* l);
/* A typical GPU (1024 threads, 48 KiB shared, 32 lanes, vector 4, 16384 elems). */
void xc_tiled_limits_init_gpu(xc_tiled_limits_t* l);
/* A typical CPU core (threads are loop iterations: 1024; 256 KiB "shared"
 * stack arrays; 8 lanes; 8192 elems). */
void xc_tiled_limits_init_cpu(xc_tiled_limits_t* l);
const char* xc_tiled_limit_name(xc_tiled_limit_t l); /* "max_threads", ... */

/* Integer expressions for the grid and knob constraints. Comparisons yield
 * 0/1. Division by a non-positive value is an evaluation error. */
typedef enum xc_tiled_expr_kind {
  XC_TEXPR_CONST,
  XC_TEXPR_PARAM,   /* scalar kernel parameter (grid only) */
  XC_TEXPR_KNOB,
  XC_TEXPR_LIMIT,   /* target limit (constraints only) */
  XC_TEXPR_ADD,
  XC_TEXPR_SUB,
  XC_TEXPR_MUL,
  XC_TEXPR_FLOORDIV,
  XC_TEXPR_CEILDIV,
  XC_TEXPR_MOD,
  XC_TEXPR_MIN,
  XC_TEXPR_MAX,
  XC_TEXPR_LE,
  XC_TEXPR_LT,
  XC_TEXPR_EQ,
  XC_TEXPR_AND,
} xc_tiled_expr_kind_t;

typedef struct xc_tiled_expr {
  xc_tiled_expr_kind_t kind;
  int64_t value; /* CONST value; PARAM/KNOB/LIMIT index */
  const struct xc_tiled_expr* a;
  const struct xc_tiled_expr* b;
} xc_tiled_expr_t;

/* What a knob means to emitters. TILE knobs size tiles; the others are hints. */
typedef enum xc_tiled_knob_kind {
  XC_KNOB_TILE,
  XC_KNOB_THREADS,  /* threads per program; checked against max_threads */
  XC_KNOB_VECTOR,   /* vector width of loads/stores */
  XC_KNOB_UNROLL,   /* unroll factor of loops */
  XC_KNOB_STAGES,   /* software pipeline stages of the K loop */
  XC_KNOB_OTHER,
} xc_tiled_knob_kind_t;

typedef struct xc_tiled_knob {
  const char* name;
  xc_tiled_knob_kind_t kind;
  int num_candidates;
  int64_t candidates[XC_TILED_MAX_KNOB_CANDIDATES];
  int64_t default_value;
} xc_tiled_knob_t;

/* ---- schedule record ------------------------------------------------------ */

/* The hardware decisions of one kernel, as data (docs/tiled-ir.md,
 * "Schedules"): a target's scheduler writes them, every emitter reads them
 * and decides nothing of its own. Printed and parsed with the kernel's text
 * (so a compiled module stores it), checked against the device limits before
 * any code is emitted. A value type: copy it freely. */
#define XC_TILED_MAX_SCHED_KNOBS 48
#define XC_TILED_MAX_SCHED_DOTS 8

/* Where a dot's operand tiles are staged for matrix instructions. */
typedef enum xc_tiled_space {
  XC_SPACE_NONE = 0,  /* not staged (the generic loop reads them where they are) */
  XC_SPACE_SHARED,    /* static work-group memory */
  XC_SPACE_DYNAMIC,   /* dynamic work-group memory, sized at launch (CUDA's opt-in limit) */
} xc_tiled_space_t;

/* A matrix instruction: D[m,n] += A[m,k] * B[k,n]; m == 0: none. */
typedef struct xc_tiled_mma {
  int m, n, k;
  xc_dtype_t input_dtype;
  xc_dtype_t accumulator_dtype;
} xc_tiled_mma_t;

typedef struct xc_tiled_dot_schedule {
  xc_tiled_mma_t mma;         /* m == 0: the generic per-element loop */
  int stages;                 /* software-pipeline stages of the K loop it accumulates in (>= 1) */
  xc_tiled_space_t operands;  /* NONE exactly when mma.m == 0 */
} xc_tiled_dot_schedule_t;

typedef struct xc_tiled_schedule {
  char scheduler[32];         /* who chose it: a target's name, [a-z_][a-z0-9_]* ("" unknown) */
  int num_knobs;              /* == the kernel's num_knobs */
  int64_t knobs[XC_TILED_MAX_SCHED_KNOBS]; /* knob values, in knob order: the tile extents and the rest */
  int64_t threads;            /* work-items per program (1 where programs are not work-groups) */
  int64_t vector;             /* elements per vector chunk of global loads/stores (1: element by element) */
  int64_t unroll;             /* per-thread element loops of at most this many slots are unrolled (0: none) */
  int num_dots;               /* one entry per `dot` of the kernel, in text order */
  xc_tiled_dot_schedule_t dots[XC_TILED_MAX_SCHED_DOTS];
  int64_t local_bytes;        /* static work-group memory per program the code takes */
  int64_t dynamic_bytes;      /* dynamic work-group memory per program (0: none) */
} xc_tiled_schedule_t;

/* ---- types and values ---------------------------------------------------- */

typedef enum xc_tiled_scope {
  XC_SCOPE_GLOBAL,
  XC_SCOPE_SHARED,  /* work-group shared, one allocation per program */
  XC_SCOPE_PRIVATE, /* per program, lives in registers / stack */
} xc_tiled_scope_t;

typedef enum xc_tiled_role {
  XC_ROLE_IN = 1,
  XC_ROLE_OUT = 2,
  XC_ROLE_INOUT = 3,
} xc_tiled_role_t;

typedef enum xc_tiled_kind {
  XC_TILED_TENSOR, /* scalar (rank 0) or tile */
  XC_TILED_MEMREF, /* a buffer: global parameter or local allocation */
} xc_tiled_kind_t;

typedef struct xc_tiled_type {
  xc_tiled_kind_t kind;
  xc_dtype_t dtype;
  int rank;                              /* tile rank; allocation rank */
  xc_tiled_dim_t dims[XC_TILED_MAX_RANK];
  xc_tiled_scope_t scope;                /* memrefs */
  xc_tiled_role_t role;                  /* memrefs (allocations are INOUT) */
} xc_tiled_type_t;

struct xc_tiled_op;
struct xc_tiled_block;

typedef struct xc_tiled_value {
  int id;
  const char* name;               /* optional hint for printing; may be NULL */
  xc_tiled_type_t type;
  struct xc_tiled_op* def;        /* NULL for parameters and block arguments */
  struct xc_tiled_block* owner;   /* block whose argument this is, or NULL */
  int param;                      /* kernel parameter index, or -1 */
} xc_tiled_value_t;

/* ---- ops ------------------------------------------------------------------ */

typedef enum xc_tiled_opcode {
  /* producers of uniform scalars */
  XC_TOP_CONST,        /* attrs: f / i, result type; splat for tiles */
  XC_TOP_PROGRAM_ID,   /* attr axis -> i64 */
  XC_TOP_NUM_PROGRAMS, /* attr axis -> i64 */
  XC_TOP_KNOB,         /* attr knob -> i64 value of the knob */
  /* tile shape */
  XC_TOP_ARANGE,       /* attr dims[0] -> i64[n] = 0..n-1 */
  XC_TOP_EXPAND_DIMS,  /* (x) attr axis */
  XC_TOP_BROADCAST,    /* (x) to the result shape */
  XC_TOP_TRANS,        /* (x) 2-D transpose */
  /* memory */
  XC_TOP_LOAD,         /* (mem, offsets, [mask], [other]) */
  XC_TOP_STORE,        /* (mem, offsets, value, [mask]) */
  XC_TOP_ALLOC,        /* result memref (shared or private) */
  XC_TOP_BARRIER,      /* work-group barrier (orders shared-memory accesses) */
  /* elementwise unary (x) */
  XC_TOP_NEG, XC_TOP_ABS, XC_TOP_EXP, XC_TOP_LOG, XC_TOP_SQRT, XC_TOP_RSQRT,
  XC_TOP_ERF, XC_TOP_TANH, XC_TOP_SIGMOID, XC_TOP_FLOOR, XC_TOP_CEIL,
  XC_TOP_SIN, XC_TOP_COS, XC_TOP_RECIP, XC_TOP_ATAN, XC_TOP_NOT,
  /* elementwise binary (a, b) */
  XC_TOP_ADD, XC_TOP_SUB, XC_TOP_MUL, XC_TOP_DIV, XC_TOP_REM, XC_TOP_MAX,
  XC_TOP_MIN, XC_TOP_POW, XC_TOP_AND, XC_TOP_OR, XC_TOP_XOR,
  XC_TOP_SHL, XC_TOP_SHR, /* integers; shr is logical on unsigned types, amount < bit width */
  XC_TOP_CMP,          /* (a, b) attr cmp -> bool */
  XC_TOP_SELECT,       /* (cond, a, b) */
  XC_TOP_CAST,         /* (x) -> result dtype */
  /* reductions and contraction */
  XC_TOP_REDUCE,       /* (x) attr axis, reduce kind; removes the axis */
  XC_TOP_DOT,          /* (a[M,K], b[K,N], acc[M,N]) -> acc + a@b */
  /* control flow */
  XC_TOP_FOR,          /* (lb, ub, step, init...) body(iv, carried...) */
  XC_TOP_YIELD,        /* terminator of a for body: next carried values */
  XC_TOP_COUNT
} xc_tiled_opcode_t;

typedef enum xc_tiled_cmp {
  XC_CMP_EQ, XC_CMP_NE, XC_CMP_LT, XC_CMP_LE, XC_CMP_GT, XC_CMP_GE,
} xc_tiled_cmp_t;

typedef enum xc_tiled_reduce_kind {
  XC_REDUCE_SUM, XC_REDUCE_MAX, XC_REDUCE_MIN, XC_REDUCE_PROD,
} xc_tiled_reduce_kind_t;

typedef struct xc_tiled_block {
  int num_args;
  xc_tiled_value_t** args;
  int num_ops, cap_ops;
  struct xc_tiled_op** ops;
  struct xc_tiled_op* parent; /* NULL for the kernel body */
} xc_tiled_block_t;

typedef struct xc_tiled_op {
  int id;
  xc_tiled_opcode_t opcode;
  int num_operands;
  xc_tiled_value_t** operands;  /* NULL entries for omitted mask / other */
  int num_results;
  xc_tiled_value_t** results;
  /* attributes (meaning by opcode) */
  int64_t axis;       /* PROGRAM_ID, NUM_PROGRAMS, EXPAND_DIMS, REDUCE; KNOB index */
  int cmp;            /* xc_tiled_cmp_t */
  int reduce;         /* xc_tiled_reduce_kind_t */
  double f;           /* CONST of a float or bool dtype */
  int64_t i;          /* CONST of an integer dtype */
  xc_tiled_block_t* body; /* FOR */
  xc_tiled_block_t* parent;
} xc_tiled_op_t;

/* ---- kernel ---------------------------------------------------------------- */

typedef struct xc_tiled_kernel {
  xc_arena_t* arena;
  const char* name;
  const char* origin;  /* what it computes ("name:Op, ..." of graph nodes) for
                          source comments and messages; NULL when unknown */
  /* What the whole kernel computes, in a form a target may implement
   * directly instead of emitting the body (docs/tiled-ir.md, "Patterns"):
   * e.g. "attention dtype=bf16 ... q=P,base,sb,sh,ss ...". NULL: none. The
   * body stays the definition; a target that takes the pattern must compute
   * the same values. */
  const char* pattern;
  int num_params, cap_params;
  xc_tiled_value_t** params;  /* buffers (MEMREF, global) and i64 scalars */
  int num_knobs, cap_knobs;
  xc_tiled_knob_t* knobs;
  int num_constraints, cap_constraints;
  const xc_tiled_expr_t** constraints;
  int grid_rank;
  const xc_tiled_expr_t* grid[XC_TILED_MAX_GRID];
  xc_tiled_block_t* body;
  int num_values, num_ops;
  /* The chosen schedule (arena copy; xc_tiled_set_schedule), NULL before a
   * scheduler ran. */
  const xc_tiled_schedule_t* schedule;
  /* private: builder state */
  xc_tiled_block_t* insert_stack[16];
  int insert_depth;
  xc_status_t pending_error;
} xc_tiled_kernel_t;

xc_status_t xc_tiled_kernel_create(const char* name, xc_tiled_kernel_t** out);
/* Sets k->origin (a copy; NULL clears it). Printed as a "# origin: ..."
 * comment line after the header, which xc_tiled_parse reads back. */
void xc_tiled_set_origin(xc_tiled_kernel_t* k, const char* origin);
/* Sets k->pattern (a copy; NULL clears it). Printed as "# pattern: ..." and
 * read back by xc_tiled_parse like the origin. */
void xc_tiled_set_pattern(xc_tiled_kernel_t* k, const char* pattern);
void xc_tiled_kernel_destroy(xc_tiled_kernel_t* k);
/* Returns (and clears) the first error recorded by the builder functions. */
xc_status_t xc_tiled_kernel_take_error(xc_tiled_kernel_t* k);

/* Parameters, in call order. Buffers are flat arrays of `dtype` elements
 * addressed by element offsets; their sizes are bound at launch. */
xc_tiled_value_t* xc_tiled_param_buffer(xc_tiled_kernel_t* k, const char* name,
                                        xc_dtype_t dtype, xc_tiled_role_t role);
xc_tiled_value_t* xc_tiled_param_scalar(xc_tiled_kernel_t* k, const char* name);

/* Knobs. Returns the knob index, or -1 after recording an error (duplicate
 * name, no candidates, default not a candidate, non-positive candidate). */
int xc_tiled_add_knob(xc_tiled_kernel_t* k, const char* name,
                      xc_tiled_knob_kind_t kind, int num_candidates,
                      const int64_t* candidates, int64_t default_value);
int xc_tiled_find_knob(const xc_tiled_kernel_t* k, const char* name);
/* Index of the first knob of `kind` (e.g. the THREADS knob an emitter sizes
 * work-groups with), or -1 when the kernel has none. */
int xc_tiled_knob_of_kind(const xc_tiled_kernel_t* k, xc_tiled_knob_kind_t kind);
/* Work-items per program on devices with work-groups: the THREADS knob's
 * value, else XC_TILED_DEFAULT_THREADS. Emitters build kernels for this
 * count and runtimes launch with it, so both ask here. */
#define XC_TILED_DEFAULT_THREADS 64
int64_t xc_tiled_threads(const xc_tiled_kernel_t* k, const int64_t* knob_values);
/* The slots of an [m, n] tile in a work-group target's slot layout as whole
 * rows and columns of the tile, what a register-blocked dot needs
 * (docs/emitter.md, "Register-blocked dots"). vec 1 is the default layout
 * (slot j of work-item lid holds element lid + j * threads); vec > 1 the
 * chunked one (slot j holds element ((j / vec) * threads + lid) * vec +
 * j % vec: runs of vec consecutive elements of a row). With the rows cut
 * into ch = n / vec chunks, tpr = min(threads, ch) work-items share a row:
 * work-item lid holds rows lid / tpr + r * row_step (row_step = threads /
 * tpr, r < rows) and in each the cols = (ch / tpr) * vec columns
 * ((lid % tpr) + (w / vec) * tpr) * vec + w % vec (w < cols); its slot j is
 * row r = j / cols, column w = j % cols. So vec 1 gives every row at
 * columns lid, lid + threads, ... (n a multiple of threads) or rows
 * lid / n + r * threads / n at column lid % n (threads a multiple of n),
 * and vec 4 with 16 work-items a row a block of rows x 4 columns. False
 * when the tile is not whole slots in one of these forms. */
typedef struct xc_tiled_slot_grid {
  int64_t slots, rows, cols, tpr, row_step, vec;
} xc_tiled_slot_grid_t;
static inline bool xc_tiled_slot_grid_of(int64_t m, int64_t n, int64_t threads, int64_t vec,
                                         xc_tiled_slot_grid_t* g) {
  if (m < 1 || n < 1 || threads < 1 || vec < 1 || n % vec) return false;
  int64_t ch = n / vec;
  g->tpr = ch < threads ? ch : threads;
  if (ch % g->tpr || threads % g->tpr) return false;
  g->row_step = threads / g->tpr;
  if (m % g->row_step) return false;
  g->vec = vec;
  g->rows = m / g->row_step;
  g->cols = ch / g->tpr * vec;
  g->slots = g->rows * g->cols;
  return true;
}
/* Adds a constraint that must evaluate to nonzero for a valid knob choice. */
void xc_tiled_add_constraint(xc_tiled_kernel_t* k, const xc_tiled_expr_t* e);

/* Expressions (arena-allocated; NULL operands propagate). */
const xc_tiled_expr_t* xc_texpr_const(xc_tiled_kernel_t* k, int64_t v);
const xc_tiled_expr_t* xc_texpr_param(xc_tiled_kernel_t* k, const xc_tiled_value_t* scalar_param);
const xc_tiled_expr_t* xc_texpr_knob(xc_tiled_kernel_t* k, int knob);
const xc_tiled_expr_t* xc_texpr_limit(xc_tiled_kernel_t* k, xc_tiled_limit_t l);
const xc_tiled_expr_t* xc_texpr_binary(xc_tiled_kernel_t* k, xc_tiled_expr_kind_t kind,
                                       const xc_tiled_expr_t* a, const xc_tiled_expr_t* b);

/* Sets the grid: number of programs along each axis (rank 1..3). */
void xc_tiled_set_grid(xc_tiled_kernel_t* k, int rank, const xc_tiled_expr_t* const* dims);

/* ---- builder: ops are appended to the current block (the kernel body, or the
 * body of the innermost open `for`). name hints may be NULL. -------------- */

xc_tiled_value_t* xc_tiled_const_f(xc_tiled_kernel_t* k, xc_dtype_t dtype, double v,
                                   int rank, const xc_tiled_dim_t* dims);
xc_tiled_value_t* xc_tiled_const_i(xc_tiled_kernel_t* k, xc_dtype_t dtype, int64_t v,
                                   int rank, const xc_tiled_dim_t* dims);
xc_tiled_value_t* xc_tiled_program_id(xc_tiled_kernel_t* k, int axis);
xc_tiled_value_t* xc_tiled_num_programs(xc_tiled_kernel_t* k, int axis);
xc_tiled_value_t* xc_tiled_knob_value(xc_tiled_kernel_t* k, int knob);
xc_tiled_value_t* xc_tiled_arange(xc_tiled_kernel_t* k, xc_tiled_dim_t n);
xc_tiled_value_t* xc_tiled_expand_dims(xc_tiled_kernel_t* k, xc_tiled_value_t* x, int axis);
xc_tiled_value_t* xc_tiled_broadcast(xc_tiled_kernel_t* k, xc_tiled_value_t* x, int rank,
                                     const xc_tiled_dim_t* dims);
xc_tiled_value_t* xc_tiled_trans(xc_tiled_kernel_t* k, xc_tiled_value_t* x);
/* mask and other may be NULL (other defaults to 0 for masked-off lanes). */
xc_tiled_value_t* xc_tiled_load(xc_tiled_kernel_t* k, xc_tiled_value_t* mem,
                                xc_tiled_value_t* offsets, xc_tiled_value_t* mask,
                                xc_tiled_value_t* other);
/* Returns the store op (NULL on error). */
xc_tiled_op_t* xc_tiled_store(xc_tiled_kernel_t* k, xc_tiled_value_t* mem,
                              xc_tiled_value_t* offsets, xc_tiled_value_t* value,
                              xc_tiled_value_t* mask);
xc_tiled_value_t* xc_tiled_alloc(xc_tiled_kernel_t* k, xc_tiled_scope_t scope,
                                 xc_dtype_t dtype, int rank, const xc_tiled_dim_t* dims);
xc_tiled_op_t* xc_tiled_barrier(xc_tiled_kernel_t* k);
xc_tiled_value_t* xc_tiled_unary(xc_tiled_kernel_t* k, xc_tiled_opcode_t op, xc_tiled_value_t* x);
xc_tiled_value_t* xc_tiled_binary(xc_tiled_kernel_t* k, xc_tiled_opcode_t op,
                                  xc_tiled_value_t* a, xc_tiled_value_t* b);
xc_tiled_value_t* xc_tiled_cmp(xc_tiled_kernel_t* k, xc_tiled_cmp_t cmp,
                               xc_tiled_value_t* a, xc_tiled_value_t* b);
xc_tiled_value_t* xc_tiled_select(xc_tiled_kernel_t* k, xc_tiled_value_t* cond,
                                  xc_tiled_value_t* a, xc_tiled_value_t* b);
xc_tiled_value_t* xc_tiled_cast(xc_tiled_kernel_t* k, xc_tiled_value_t* x, xc_dtype_t dtype);
xc_tiled_value_t* xc_tiled_reduce(xc_tiled_kernel_t* k, xc_tiled_reduce_kind_t kind,
                                  xc_tiled_value_t* x, int axis);
xc_tiled_value_t* xc_tiled_dot(xc_tiled_kernel_t* k, xc_tiled_value_t* a, xc_tiled_value_t* b,
                               xc_tiled_value_t* acc);

/* for iv = lb; iv < ub; iv += step, carrying `num_carried` values initialised
 * from inits. Opens the body as the current block; use xc_tiled_for_iv /
 * xc_tiled_for_arg inside, then xc_tiled_for_end with the next values. */
xc_tiled_op_t* xc_tiled_for_begin(xc_tiled_kernel_t* k, xc_tiled_value_t* lb,
                                  xc_tiled_value_t* ub, xc_tiled_value_t* step,
                                  int num_carried, xc_tiled_value_t* const* inits);
xc_tiled_value_t* xc_tiled_for_iv(xc_tiled_op_t* loop);
xc_tiled_value_t* xc_tiled_for_arg(xc_tiled_op_t* loop, int i);
void xc_tiled_for_end(xc_tiled_kernel_t* k, xc_tiled_op_t* loop, int num_yield,
                      xc_tiled_value_t* const* yields);
xc_tiled_value_t* xc_tiled_for_result(xc_tiled_op_t* loop, int i);

/* Gives a value a printing name (copied). Returns v. */
xc_tiled_value_t* xc_tiled_name(xc_tiled_kernel_t* k, xc_tiled_value_t* v, const char* name);

/* ---- schedules ------------------------------------------------------------- */

/* A record with the kernel's knob defaults, threads from its THREADS knob,
 * vector 1, unroll 0, every dot generic (stages 1), no work-group memory
 * beyond the kernel's own shared allocations. */
void xc_tiled_schedule_init(const xc_tiled_kernel_t* k, xc_tiled_schedule_t* out);
/* Attaches a copy of s to k (NULL detaches). The record must fit the kernel
 * (xc_tiled_schedule_verify); an unfit one is refused and k keeps its old one. */
xc_status_t xc_tiled_set_schedule(xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s);
/* The record fits the kernel: one knob value per knob, each a candidate;
 * one dot entry per dot; positive threads, vector, stages; a dot with a
 * matrix instruction has a staging space and positive shape. */
xc_status_t xc_tiled_schedule_verify(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s);
/* The record is legal on a device with these limits: it fits the kernel,
 * the knobs pass xc_tiled_knobs_check, threads fit max_threads, static
 * work-group memory fits shared_bytes, static + dynamic fit staged_bytes
 * (dynamic memory only where staged_bytes exceeds shared_bytes). Whether a
 * matrix instruction exists on the device is the target's check
 * (xc_target_schedule: the caps list it). The message names the rule and
 * the figures. */
xc_status_t xc_tiled_schedule_check(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s,
                                    const xc_tiled_limits_t* limits);
/* Number of `dot` ops of k and the i-th in text order (NULL out of range). */
int xc_tiled_dot_count(const xc_tiled_kernel_t* k);
const xc_tiled_op_t* xc_tiled_dot_at(const xc_tiled_kernel_t* k, int index);
/* Programs per grid axis under knob values (limits may be NULL; axes past
 * grid_rank are 1). False when an axis depends on a scalar parameter (a
 * symbolic shape, known only at launch) or is not positive. */
bool xc_tiled_static_grid(const xc_tiled_kernel_t* k, const int64_t* knobs, const xc_tiled_limits_t* limits,
                          int64_t grid[XC_TILED_MAX_GRID]);
/* Their product; 0 where xc_tiled_static_grid is false or it overflows. */
int64_t xc_tiled_static_programs(const xc_tiled_kernel_t* k, const int64_t* knobs, const xc_tiled_limits_t* limits);
/* Index of a dot op in text order, -1 when op is not a dot of k. */
int xc_tiled_dot_index(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op);
/* Prints the record as the kernel text holds it ("schedule NAME { ... }",
 * each line prefixed by indent). */
void xc_tiled_schedule_print(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s, const char* indent,
                             FILE* f);
/* Parses one "schedule [NAME] { ... }" block as xc_tiled_schedule_print
 * writes it, knob names resolved against k's knobs (k is not changed);
 * the record is not checked against k or a device (xc_tiled_schedule_verify,
 * xc_target_schedule do that). */
xc_status_t xc_tiled_schedule_parse(const xc_tiled_kernel_t* k, const char* text, xc_tiled_schedule_t* out);
/* "mma m16n8k16 bf16 -> f32" / "generic" into out. */
void xc_tiled_mma_name(const xc_tiled_mma_t* mma, char* out, size_t size);

/* ---- checking, knobs, printing, running ------------------------------------ */

/* Checks the whole kernel: the recorded builder error first, then parameters,
 * knobs, grid and constraint expressions, the type of every op, SSA
 * dominance (an operand is a parameter, an argument of an enclosing block, or
 * the result of an earlier op of the same or an enclosing block), memory roles
 * (no store to IN, no load from OUT), shared allocations only at the top
 * level, and for-loop carried types. Errors name the op ("op 12 (dot)"). */
xc_status_t xc_tiled_verify(const xc_tiled_kernel_t* k);

/* Checks one knob assignment (values[i] for knob i): each value is one of its
 * candidates, every constraint holds, the THREADS knob fits max_threads,
 * shared allocations fit shared_bytes and every tile fits max_tile_elems (on
 * GPUs, per 128 work-items for programs of more than 256).
 * limits may be NULL (unlimited). The message names the violated rule. */
xc_status_t xc_tiled_knobs_check(const xc_tiled_kernel_t* k, const int64_t* values,
                                 const xc_tiled_limits_t* limits);
/* Bytes of the kernel's own shared allocations under these knob values
 * (what xc_tiled_knobs_check holds against shared_bytes). */
int64_t xc_tiled_shared_bytes(const xc_tiled_kernel_t* k, const int64_t* knob_values);
/* Defaults when they are valid, otherwise the valid choice nearest to the
 * defaults (fewest candidate steps away; ties: larger tiles first). Fails if
 * no combination is valid. out has num_knobs entries. */
xc_status_t xc_tiled_knobs_choose(const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                                  int64_t* out);
/* Resolves a dim under knob values. */
int64_t xc_tiled_dim_resolve(xc_tiled_dim_t d, const int64_t* knob_values);
/* Evaluates an expression; params may be NULL when it has no PARAM leaf. */
xc_status_t xc_texpr_eval(const xc_tiled_expr_t* e, const int64_t* knob_values,
                          const int64_t* param_values, const xc_tiled_limits_t* limits,
                          int64_t* out);

/* Bounds of an integer or bool value (bool: 0 false, 1 true) over every
 * element and every program, under concrete knob values. */
typedef struct xc_tiled_range {
  int64_t lo, hi;
  bool known; /* false: no bound was derived */
} xc_tiled_range_t;
/* The ranges of every value of k, indexed by value id (k->num_values
 * entries; the caller frees the array), or NULL when out of memory. They
 * come from constants, knobs, program ids (grid axes without scalar
 * parameters), aranges, loop counters, integer add/sub/mul/min/max (div/rem of a non-negative value by a positive one), casts
 * that keep the value, comparisons, and/or/not of bools and selects; every
 * other value is unknown. A mask whose range is [1, 1] is true for every
 * element of every program: an emitter may drop it. */
xc_tiled_range_t* xc_tiled_ranges(const xc_tiled_kernel_t* k, const int64_t* knob_values);

/* One load or store of a global buffer parameter, as xc_tiled_accesses
 * bounds it (ir/tiled_bounds.c). */
typedef struct xc_tiled_access {
  const xc_tiled_op_t* op;
  int param;      /* the buffer's parameter index */
  bool store;
  bool never;     /* its mask is false for every lane of every program */
  bool bounded;   /* lo..hi bound every element offset an active lane uses */
  int64_t lo, hi;
} xc_tiled_access_t;
typedef void (*xc_tiled_access_fn)(void* ctx, const xc_tiled_access_t* access);
/* Calls fn for every load and store of a global buffer parameter with the
 * range of element offsets it may touch over every active lane of every
 * program, under concrete knob values, scalar parameter values (per
 * parameter index; buffer entries unused) and programs per grid axis. An
 * offset read from memory (a gather's indices) or masked by something other
 * than comparisons joined by `and` is reported unbounded. */
xc_status_t xc_tiled_accesses(const xc_tiled_kernel_t* k, const int64_t* knob_values, const int64_t* param_values,
                              const int64_t grid[XC_TILED_MAX_GRID], xc_tiled_access_fn fn, void* ctx);

const char* xc_tiled_opcode_name(xc_tiled_opcode_t op); /* "dot", "load", ... */
/* Prints the text form (docs/tiled-ir.md). */
void xc_tiled_print(const xc_tiled_kernel_t* k, FILE* f);
/* The text form as a malloc'ed string (caller frees); NULL on OOM. */
char* xc_tiled_print_to_string(const xc_tiled_kernel_t* k);

/* Parses the text form (as printed) into a new verified kernel owned by the
 * caller. Errors carry "file:line:col". */
xc_status_t xc_tiled_parse(const char* text, size_t len, const char* filename,
                           xc_tiled_kernel_t** out);

/* One launch argument per kernel parameter (in parameter order). */
typedef struct xc_tiled_arg {
  xc_tensor_t* buffer; /* buffer params: any shape, dtype must match */
  int64_t scalar;      /* scalar params */
} xc_tiled_arg_t;

/* Interprets k: verifies it, checks the knobs (knob_values NULL = defaults;
 * limits unlimited), evaluates the grid and runs every program in order,
 * computing in double (integers exactly in int64) and rounding into buffer
 * dtypes on store. Masked-off lanes of a load read `other`; an unmasked
 * access outside its buffer, integer overflow or division by zero is an
 * error naming the op and program. Buffers may be partly written when it
 * fails. */
xc_status_t xc_tiled_run(const xc_tiled_kernel_t* k, const int64_t* knob_values,
                         int num_args, const xc_tiled_arg_t* args);

/* ---- index checks ------------------------------------------------------------
 *
 * Indices read from tensors (Gather, GatherElements, GatherND, ScatterElements,
 * ScatterND, MaxUnpool, RotaryEmbedding's position_ids, RoiAlign's
 * batch_indices, the loss ops' targets) become addresses. The lowering checks each such index
 * with plain tiled ops (passes/lower.c, lw_check_index): an index outside its
 * extent (after ONNX's negative-index rule where the op has it) is clamped
 * and its lanes masked off, so no access leaves its buffer, and the failure
 * is recorded in an *index-error record*: an i64 buffer, one per run, zero
 * before it, passed to every kernel that checks indices as one more buffer
 * parameter (role out). Each such kernel owns a slot of XC_INDEX_ERROR_WORDS
 * words (slots in step order), which a failing lane fills with
 *
 *   [0] the failing node's position in the graph's node list + 1 (0: no error)
 *   [1] the index value (one of the failing lanes)
 *   [2] the extent it was checked against
 *   [3] the message kind (xc_index_check_kind_t) | axis << 8
 *
 * Runtimes read the record after a run and turn its first set slot — the
 * first kernel that failed — into the status the reference interpreter
 * gives for the same input (xc_index_error_status). */
#define XC_INDEX_ERROR_WORDS 4
/* The record's parameter name in the kernels that take it. */
#define XC_INDEX_ERROR_PARAM "index_error"

typedef enum xc_index_check_kind {
  XC_INDEX_CHECK_DIM = 0,      /* "index V out of range for dim D" (Gather) */
  XC_INDEX_CHECK_AXIS = 1,     /* "index V out of range for axis A of extent D" (GatherElements, *ND, Scatter*) */
  XC_INDEX_CHECK_POSITION = 2, /* "position id V is outside the cache (D)" (RotaryEmbedding) */
  XC_INDEX_CHECK_BATCH = 3,    /* "batch index V is outside [0, D)" (RoiAlign) */
  XC_INDEX_CHECK_TARGET = 4,   /* "target V is outside [0, D)" (loss ops) */
  XC_INDEX_CHECK_OUTPUT = 5,   /* "index V is outside the output (D elements)" (MaxUnpool) */
} xc_index_check_kind_t;

/* NULL when no slot of the record (num_words words) is set; otherwise an
 * XC_OUT_OF_RANGE status for the first set slot, naming the node of g at
 * position slot[0] - 1 with the reference interpreter's
 * message (a node position outside g gives a message without a node).
 * locate: name the node's source location too (false where g was read back
 * from a compiled module, whose locations are lines of its own graph text). */
xc_status_t xc_index_error_status(const xc_graph_t* g, bool locate, const int64_t* words, int64_t num_words);

#ifdef __cplusplus
}
#endif
#endif
