/* The SPIR-V emitter's shared state (spirv_emit.c: module, values, control
 * flow; spirv_emit_math.c: element math, conversions, memory access).
 *
 * How a tiled kernel maps onto a compute shader (docs/targets/spirv.md):
 * a program is one work-group of T work-items (the schedule's threads). A
 * scalar (rank 0) is computed by every work-item alike, so it is uniform. A
 * tile of n elements is spread over the work-items: element e belongs to
 * work-item e % T, slot e / T (the default layout), or, for the element
 * counts spv_layout_vec gives a chunk width v > 1, work-item (e / v) % T,
 * slot (e / (v * T)) * v + e % v (the chunked layout: runs of v
 * consecutive elements, what a register-blocked dot with 2-D tiles owns;
 * xc_tiled_slot_grid_of). Each tile value is one of
 *   INLINE   recomputed where it is read (constants, aranges, views, and
 *            elementwise ops used once in their block),
 *   PRIVATE  a per-work-item array of slots (read only by its owner),
 *   SHARED   a work-group array of n elements (read across work-items:
 *            broadcasts, transposes, reductions, dot operands).
 * Which materialized values must be SHARED is found by emitting: a read of a
 * PRIVATE value at another element marks it, and the module is emitted again
 * until nothing changes. */
#ifndef XCOMP_TARGETS_SPIRV_EMIT_INTERNAL_H
#define XCOMP_TARGETS_SPIRV_EMIT_INTERNAL_H

#include "spirv_builder.h"
#include "spirv_plugin.h"

typedef enum spv_vkind {
  SPV_V_NONE = 0,
  SPV_V_SCALAR,
  SPV_V_INLINE,
  SPV_V_PRIVATE,
  SPV_V_SHARED,
  SPV_V_MEMREF,
  SPV_V_COOP,     /* a dot accumulator held as cooperative-matrix fragments */
} spv_vkind_t;

typedef struct spv_vinfo {
  spv_vkind_t kind;
  uint32_t id;        /* scalar: SSA id; PRIVATE/SHARED/MEMREF: the variable */
  uint32_t var;       /* carried scalar: its Function variable */
  bool global;        /* MEMREF: a kernel buffer (StorageBuffer), else work-group */
  int uses;
  bool want_shared;   /* kept across passes */
  int group;          /* carried tiles: value id whose storage they share (-1 own) */
  bool pure;          /* INLINE from indices, constants and scalars alone */
  bool half;          /* SHARED in f16 (a cooperative-matrix operand), rows padded: */
  int64_t pitch;      /* elements from one row to the next */
  uint32_t binding;   /* MEMREF param: its binding */
  uint32_t vec_view;  /* MEMREF param: the same buffer seen as 4-element vectors (0: not yet) */
  bool want_vec4;     /* SHARED f32 tile a blocked dot reads 4 at a time (kept across passes) */
  bool vec4;          /* this pass's storage is an array of 4-element vectors */
} spv_vinfo_t;

/* A `for` whose carried tile is a dot accumulator computed with cooperative
 * matrices (SPV_NV_cooperative_matrix): each subgroup holds fm x fn
 * fragments of m x n; the operand tiles live in work-group memory in f16,
 * read row-major or, through a transpose, column-major. */
#define SPV_COOP_MAX_FRAGS 16
#define SPV_COOP_MAX 4
typedef struct spv_coop {
  const xc_tiled_op_t *loop, *dot;
  const xc_tiled_value_t *arg, *res, *init, *asrc, *bsrc;
  bool acol, bcol;
  int m, n, k;         /* the fragment shape */
  int64_t M, N, K;     /* the dot's tiles */
  int sn, fm, fn;      /* subgroups along N; fragments per subgroup */
  uint32_t vars[SPV_COOP_MAX_FRAGS];
} spv_coop_t;

#define SPV_VEC 4          /* elements of a vector load, chunk width of the chunked layout */
#define SPV_MAX_CHUNKED 8  /* distinct element counts in the chunked layout per kernel */

/* An element being computed: its multi-index in the shape of the value read. */
typedef struct spv_ctx {
  int rank;
  int64_t dims[XC_TILED_MAX_RANK];
  uint32_t idx[XC_TILED_MAX_RANK]; /* i32 ids */
  bool aligned;   /* the element is this work-item's own slot `slot` (linear index lin) in
                     the layout of its element count (spv_layout_vec) */
  uint32_t lin;   /* i32 id, valid when aligned */
  uint32_t slot;  /* i32 id */
} spv_ctx_t;

typedef struct spv_emitter {
  spv_builder_t b;
  const spv_emit_target_t* t;
  const xc_tiled_kernel_t* k;
  const int64_t* knobs;
  int64_t threads;
  spv_vinfo_t* vi;
  xc_tiled_range_t* ranges;
  bool redo;
  xc_status_t err;
  uint32_t features;
  int64_t shared_bytes;
  bool in_loop;          /* inside a tiled `for` */
  bool phased;           /* some buffer is stored to and loaded from: barriers after stores */
  uint32_t decorated[64];
  int num_decorated;
  /* common types and ids */
  uint32_t t_void, t_bool, t_i32, t_u32, t_i64, t_u64, t_f32;
  uint32_t glsl;
  uint32_t lid;          /* i32 local invocation index */
  uint32_t pid[3], nprog[3];
  uint32_t file;         /* OpString of the kernel's origin */
  spv_coop_t coop[SPV_COOP_MAX];
  int num_coop;
  uint32_t v_sgid;       /* SubgroupId input, when cooperative matrices are used */
  size_t barrier_end;    /* code words up to the end of the last barrier (0: none) */
  /* Element counts of the tiles in the chunked slot layout (spv_dot_plan_layouts). */
  int64_t chunked[SPV_MAX_CHUNKED];
  int num_chunked;
} spv_emitter_t;

/* ---- spirv_emit_math.c ---- */
const char* spv_op_name(xc_tiled_opcode_t op); /* "add", "dot", ... (spirv_emit.c) */
void spv_fail(spv_emitter_t* e, xc_code_t code, const char* fmt, ...) XC_PRINTF(3, 4);
uint32_t spv_ptr(spv_emitter_t* e, SpvStorageClass sc, uint32_t type);
uint32_t spv_ctype(spv_emitter_t* e, xc_dtype_t t);   /* type values of t are computed in */
uint32_t spv_stype(spv_emitter_t* e, xc_dtype_t t);   /* type of t in buffers */
uint32_t spv_ci32(spv_emitter_t* e, int64_t v);
uint32_t spv_cu32(spv_emitter_t* e, uint32_t v);
uint32_t spv_ci64(spv_emitter_t* e, int64_t v);
uint32_t spv_cf32(spv_emitter_t* e, float v);
/* A constant of dtype t's compute type (float value f for floats and bool,
 * i for integers). */
uint32_t spv_const_of(spv_emitter_t* e, xc_dtype_t t, double f, int64_t i);
uint32_t spv_ext(spv_emitter_t* e, int inst, uint32_t type, int n, uint32_t a, uint32_t b, uint32_t c);
/* Element math on computed values of dtype t (the operands' dtype). */
uint32_t spv_unary(spv_emitter_t* e, xc_tiled_opcode_t op, xc_dtype_t t, uint32_t x);
uint32_t spv_binary(spv_emitter_t* e, xc_tiled_opcode_t op, xc_dtype_t t, uint32_t a, uint32_t b);
uint32_t spv_lt_i64(spv_emitter_t* e, uint32_t a, uint32_t b); /* signed a < b, 64-bit */
uint32_t spv_compare(spv_emitter_t* e, xc_tiled_cmp_t cmp, xc_dtype_t t, uint32_t a, uint32_t b);
uint32_t spv_reduce_combine(spv_emitter_t* e, xc_tiled_reduce_kind_t kind, xc_dtype_t t, uint32_t acc, uint32_t v);
/* Cast with the tiled IR's meaning (saturating float -> int, wrapping int ->
 * int, rounding to f16/bf16 precision). */
uint32_t spv_cast(spv_emitter_t* e, xc_dtype_t from, xc_dtype_t to, uint32_t x);
/* Storage <-> compute conversions of buffer elements. */
uint32_t spv_from_storage(spv_emitter_t* e, xc_dtype_t t, uint32_t x);
uint32_t spv_to_storage(spv_emitter_t* e, xc_dtype_t t, uint32_t x);
/* Integer conversions between compute types (64 <-> 32 bit, signedness). */
uint32_t spv_int_to(spv_emitter_t* e, uint32_t x, xc_dtype_t from, uint32_t to_type, bool to64, bool to_signed);

/* ---- spirv_emit.c: what spirv_emit_coop.c and spirv_emit_dot.c share ---- */
typedef struct spv_loop {
  uint32_t header, cont, merge, var, iv, type;
} spv_loop_t;

/* The element loop of a tile: every work-item visits its slots. */
typedef struct spv_eloop {
  spv_loop_t l;
  bool looped;
  uint32_t guard;
} spv_eloop_t;

/* Uses of a value: how many, and the block and op of the last one. */
typedef struct spv_use {
  int count;
  const xc_tiled_block_t* block;
  const xc_tiled_op_t* user;
} spv_use_t;

spv_vinfo_t* spv_info(spv_emitter_t* e, const xc_tiled_value_t* v); /* its storage group's entry */
void spv_store(spv_emitter_t* e, uint32_t ptr, uint32_t v);
uint32_t spv_load(spv_emitter_t* e, uint32_t type, uint32_t ptr);
void spv_barrier(spv_emitter_t* e);
int spv_value_dims(spv_emitter_t* e, const xc_tiled_value_t* v, int64_t* dims);
int64_t spv_numel(int rank, const int64_t* dims);
uint32_t spv_read_operand(spv_emitter_t* e, const xc_tiled_value_t* x, const spv_ctx_t* c);
uint32_t spv_read_value(spv_emitter_t* e, const xc_tiled_value_t* v, const spv_ctx_t* c); /* v at c (v's shape) */
void spv_write_elem(spv_emitter_t* e, const xc_tiled_value_t* v, const spv_ctx_t* c, uint32_t val);
/* for (iv = lb; iv < ub; iv += step), signed: returns iv. */
uint32_t spv_loop_begin(spv_emitter_t* e, uint32_t type, uint32_t lb, uint32_t ub, uint32_t control, spv_loop_t* l);
void spv_loop_end(spv_emitter_t* e, spv_loop_t* l, uint32_t step);
void spv_make_storage(spv_emitter_t* e, const xc_tiled_value_t* v);
uint32_t spv_fvar(spv_emitter_t* e, uint32_t type); /* a Function variable */
uint32_t spv_f16_type(spv_emitter_t* e);
/* The chunk width of the slot layout of a tile of `numel` elements: 1 (the
 * default layout: slot s of work-item lid holds element lid + s * T) or
 * SPV_VEC (chunked: element ((s / 4) * T + lid) * 4 + s % 4). */
int64_t spv_layout_vec(spv_emitter_t* e, int64_t numel);
/* Visits the work-item's slots of a tile of `dims` in its layout; c is the
 * element (aligned, lin its flat index, slot its slot). */
void spv_eloop_begin(spv_emitter_t* e, int rank, const int64_t* dims, spv_eloop_t* el, spv_ctx_t* c);
void spv_eloop_end(spv_emitter_t* e, spv_eloop_t* el);

/* ---- spirv_emit_dot.c ---- */
/* Chooses the chunked layout (e->chunked) for the result shapes of the dots
 * that the blocked form takes with 2-D register tiles: the schedule's
 * vector is 4, the result is f32 and its slots are whole rows x 4 columns
 * (xc_tiled_slot_grid_of with vec 4, 2..SPV_DOT_MAX_SLOTS slots). Once per
 * kernel, before the first pass. */
void spv_dot_plan_layouts(spv_emitter_t* e);
/* A generic dot whose result is a 2-D tile whose slots are whole rows and
 * columns in its slot layout, register-blocked: one K loop for all of a
 * work-item's slots. False (and nothing emitted) when the dot does not
 * qualify: the per-element loop. */
bool spv_dot_blocked(spv_emitter_t* e, const xc_tiled_op_t* dot);

/* ---- spirv_emit_coop.c ---- */
/* The matrix instruction the kernel's schedule gives `dot` (NULL: generic). */
const xc_tiled_mma_t* spv_scheduled_mma(spv_emitter_t* e, const xc_tiled_op_t* dot);
/* Finds the accumulators of `loop` on cooperative matrices and sets the
 * kinds of the values involved (after the loop body is planned). */
void spv_coop_plan(spv_emitter_t* e, const xc_tiled_op_t* loop, const spv_use_t* uses);
spv_coop_t* spv_coop_of_arg(spv_emitter_t* e, const xc_tiled_value_t* arg);
spv_coop_t* spv_coop_of_dot(spv_emitter_t* e, const xc_tiled_op_t* dot);
void spv_coop_init(spv_emitter_t* e, spv_coop_t* cp);  /* before the loop */
void spv_coop_dot(spv_emitter_t* e, spv_coop_t* cp);   /* the dot in the body */
void spv_coop_spill(spv_emitter_t* e, spv_coop_t* cp); /* after the loop */

#endif
