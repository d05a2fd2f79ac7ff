/* Private to the C-family emitter (the cstyle_*.c files of targets/cstyle), not to be included
 * elsewhere: its state and the functions its files share.
 *
 * The C-family emitter: tiled kernel + knob values -> source text in the
 * language of a dialect table (docs/emitter.md).
 *
 * Every tile value gets a storage class:
 *   SCALAR   rank 0: a variable (uniform over the work-items of a program)
 *   VIRTUAL  splat constants, arange, expand_dims, broadcast, trans: no
 *            storage; a read is an expression of the reader's coordinates
 *   ARRAY    the whole tile in one array of the program (work-group local
 *            memory on work-group dialects, a stack array on C)
 *   PRIVATE  work-group dialects only: thread t holds flat elements
 *            t, t+T, t+2T... in a private array indexed by j. Only values
 *            whose every use reads them elementwise at the same shape.
 * Each tile op is one loop over the elements of its result: nested loops
 * with a simd pragma on C, a strided loop over the flat index on work-group
 * dialects, followed by a barrier when it wrote ARRAY storage. */
#ifndef XC_CSTYLE_INTERNAL_H
#define XC_CSTYLE_INTERNAL_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle.h"

/* ---- text output ------------------------------------------------------------ */

struct xc_cstyle_writer {
  char* data;
  size_t len, cap;
  bool oom;
};

#define P xc_cstyle_printf

static inline const char* wstr(xc_cstyle_writer_t* w) { return w->data ? w->data : ""; }

/* ---- emitter state ---------------------------------------------------------- */

/* ST_LOCAL (C): an element of a fused loop (see xc_cse_plan_fusion) read only by
 * later ops of that loop at the same coordinates: a variable in the loop
 * body, no array. */
typedef enum { ST_NONE, ST_SCALAR, ST_VIRTUAL, ST_ARRAY, ST_PRIVATE, ST_MEM, ST_LOCAL } storage_t;

typedef struct vinfo {
  storage_t st;
  char name[64];
  int rank;
  int64_t dims[XC_TILED_MAX_RANK];
  int64_t n;            /* elements */
  bool not_private;     /* some use reads it at another shape */
  bool broadcast_use;   /* some use reads it broadcast along a dim of a larger tile */
  bool invariant_use;   /* read inside a loop it is defined outside of */
  bool select_use;      /* some use is the condition of a select */
  bool mask_use;        /* some use is the mask of a load or store */
  int cost;             /* VIRTUAL: nodes of the inlined expression */
  bool affine;          /* VIRTUAL: affine in the tile coordinates (aranges, uniform terms) */
  bool in_place;        /* C: a loop's next carried value written over the carried array
                           (xc_cse_plan_in_place): named after it, no storage of its own */
  bool yielded;         /* a loop yields it: never virtual (it may read carried storage) */
  bool zero_entry;      /* C: a carried tile whose zero init the dot's first step makes
                           (xc_cse_plan_zero_entry): the loop does not fill it */
  const struct xc_tiled_op* zero_when[2]; /* C, a dot's result: its accumulator is the
                           zero init while these loops are at their first iteration */
  int uses;             /* operand uses in the kernel */
  bool raw;             /* matrix-instruction operand: shared array of storage elements,
                           row pitch `pitch`, `bufs` buffers (pipeline stages) */
  bool chunked;         /* its load may copy 16-byte chunks (affine offset, convex mask) */
  int64_t pitch, bufs;
  int64_t swz_shift, swz_mask; /* chunk swizzle of a raw operand (xc_cstyle_dot_t) */
  bool dyn;             /* raw operand carved from the dynamic work-group array */
  bool vec_rows;        /* a blocked dot would read its rows as float4 (xc_cse_plan_vec_rows) */
  int64_t copy_vec;     /* a load fills this work-group array in chunks of copy_vec elements
                           (xc_cse_copy_chunks); declared 16-byte aligned for them */
  bool aligned16;       /* its own work-group array is declared 16-byte aligned for that
                           (declare_value; a value sharing another's array never is) */
  bool packed;          /* C: a dot operand read from the packed copy (xc_cse_plan_pack):
                           a pointer into it, no array */
  bool row_ptrs;        /* C: a masked load read only as a blocked dot's a operand, rows
                           contiguous in memory (xc_cse_plan_row_ptrs): the rows inside
                           the mask are read in place through xa<name>[row] */
  bool row_ptrs_set;    /* its load has set those pointers (rows_split), so the dot reads
                           through them */
  int64_t hoist_n;      /* C: an operand of a dot hoisted out of its K loops
                           (xc_cse_plan_hoist): its array (and row pointers) hold one
                           slice per step of those loops */
} vinfo_t;

/* Elementwise ops whose operands are all virtual or scalar are inlined into
 * their readers (index arithmetic, masks) up to this expression size. C
 * allows larger expressions: a store offset held in an int64 array (the
 * masked `select(mask, off, off)` of a lowered store is about 30 nodes)
 * keeps the store loop from vectorizing. */
#define MAX_INLINE_COST 24
#define MAX_INLINE_COST_C 64
/* In C, an expression read broadcast into a larger tile (a row offset
 * [BM,1] of a [BM,BC] load) is computed once into its own array above this
 * size, not again for every element of the larger loop: the inner loop then
 * reads `row[i0] + i1`, an affine address the compiler vectorizes, where the
 * inlined divisions and remainders of the row's coordinates kept GCC from
 * vectorizing it ("evolution of base is not affine"). Not masks: GCC 12
 * does not vectorize a masked load whose mask is read from a uint8 array
 * indexed by the inner coordinate ("no vectype for .MASK_LOAD"). */
#define MAX_INLINE_COST_C_BROADCAST 4
/* Likewise an expression defined before a loop and read in its body (the
 * pixel coordinates of a convolution, read by every tap): computed once,
 * not on every iteration. */

static inline bool is_elementwise(xc_tiled_opcode_t op) {
  return (op >= XC_TOP_NEG && op <= XC_TOP_CMP) || op == XC_TOP_SELECT || op == XC_TOP_CAST;
}

/* A blocked dot hoisted out of its K loops (xc_cse_plan_hoist, docs/emitter.md,
 * "Hoisted dots"): `loop` the outer K loop, `body` the block that holds the dot
 * and its operands' loads (the inner loop's, or the outer's), `steps` the
 * iterations of both loops: slice xh<dot id> of each operand's array. */
#define MAX_HOISTS 4
typedef struct {
  const xc_tiled_op_t* dot, *loop;
  const xc_tiled_block_t* body;
  int64_t steps;
} hoist_t;

/* A dot on matrix instructions that is not the mma K loop's accumulation
 * (docs/emitter.md, "Dots with staged operands"): each operand is a raw load
 * (copied straight into a pitched array) or copied into the staging array
 * xs<a|b><dot id> after its definition; the accumulator slots are the
 * result's private array (`regs`: the result and a private accumulator
 * follow the plan's layout, e->frags) or the private array xm<dot id>, whose
 * slots are written back into the result's work-group array. */
#define MAX_STAGED_DOTS 8

typedef struct mx {
  const xc_tiled_op_t* op;
  xc_cstyle_dot_t dot;
  bool stage[2];
  bool regs;
} mx_t;

/* C: a dot operand whose tiles are packed once per launch by the kernel's
 * pack entry and shared by every program that reads them
 * (xc_cse_plan_pack): the load, its K loop, the grid axes its tiles depend
 * on, and where they lie in the packed buffer. */
#define MAX_PACKED 4
typedef struct packed {
  const xc_tiled_op_t* load, *loop;
  unsigned axes;                  /* bit a: the tiles depend on program id a */
  int64_t programs;               /* pack programs: product of the grid along `axes` */
  int64_t first;                  /* its first pack program */
  int64_t lb, step, steps;        /* the K loop: counter lb, lb + step, ... (steps of them) */
  int64_t tile_bytes;             /* one tile, rounded up to 64 bytes */
  int64_t offset;                 /* byte offset of its tiles in the packed buffer */
  /* the layout of a tile, for the blocked dot reading it (else row-major):
   * b in strips of nr columns, each [K, nr] row-major (strip); a in panels
   * of mr rows (the last one of M % mr), each [K, rows] row-major (panel) */
  bool strip, panel;
  int64_t nr;
  int mr;
} packed_t;

typedef struct em {
  const xc_cstyle_dialect_t* d;
  const xc_tiled_kernel_t* k;
  const int64_t* knobs;
  xc_tiled_range_t* ranges; /* by value id (xc_tiled_ranges); NULL: none known */
  vinfo_t* vi;
  int64_t T;            /* work-items per program */
  int simd;             /* f32 SIMD lanes of the device (C dialect's dot micro-kernel) */
  int* op_group;        /* C: fused loop of each op (by op id; 0 = none) */
  bool* op_member;      /* C: the op writes an element in its fused loop */
  int* nuses;           /* C: operand slots referring to each value (by value id) */
  int num_groups;
  xc_cstyle_writer_t decls, body;
  int64_t local_bytes;
  bool uses_f64;
  bool phased;          /* a global load may read what an earlier global store wrote */
  xc_status_t err;
  int depth;
  const xc_device_caps_t* caps;
  bool allow_tf32;
  /* the dot taken by the dialect's matrix instructions (dialect.dot_plan) */
  const xc_tiled_op_t* mma;       /* NULL: none */
  const xc_tiled_op_t* mma_loop;  /* the for whose only carried value it accumulates */
  /* C: the element loop after a K loop that the loop's blocked dot applies
   * to its registers on its last step (xc_cse_plan_epilogue): the loop, its
   * dot, the fused group's ops [epi_begin, epi_end) of block epi_block, the
   * K loops and their last iteration's counters */
  const xc_tiled_op_t* epi_loop, *epi_dot, *epi_loops[2];
  const xc_tiled_block_t* epi_block;
  int epi_begin, epi_end;
  int64_t epi_last[2];
  bool epi_simd;
  bool stores_unmasked;           /* C: a row inside every store's mask (xc_cse_emit_epilogue_row) */
  xc_cstyle_dot_t dot;
  int stages;                     /* > 1: the mma loop is software-pipelined */
  bool dyn;                       /* its operand buffers live in dynamic work-group memory */
  int64_t dyn_bytes;              /* bytes of that memory carved so far */
  /* dots outside that shape taken with staged operands (dialect.dot_staged) */
  mx_t mx[MAX_STAGED_DOTS];
  int num_mx;
  /* the plans whose slot layout every private tile of their [m, n] shape
   * follows (the mma dot's, or staged dots' kept in registers): one per
   * shape */
  const xc_cstyle_dot_t* frags[MAX_STAGED_DOTS + 1];
  int num_frags;
  int seq;                        /* unique names */
  /* vector chunks (dialect.vec_chunks): elements per chunk of the row
   * layout (1: none) and, per storage dtype, the chunk sizes in bytes whose
   * struct types the kernel uses (bits 4 to 64) */
  int64_t vec;
  unsigned vec_types[XC_DTYPE_COUNT];
  /* 2-D shapes whose rows are shorter than T * vec that take the chunked
   * layout all the same: register-blocked dot results, so that a
   * work-item's slots are a block of rows x vec columns
   * (xc_cse_plan_vec_rows) */
  int64_t chunk_tiles[3 * MAX_STAGED_DOTS][2]; /* a blocked dot's result and operand shapes */
  int num_chunk_tiles;
  /* the schedule being followed (NULL: the emitter's own defaults, what a
   * scheduler proposes first) and its unroll limit of per-thread loops */
  const xc_tiled_schedule_t* sched;
  int64_t unroll;
  /* C, when the target runs a pack entry (options.pack_operands) */
  bool pack_allowed;
  packed_t packs[MAX_PACKED];
  int num_packs;
  int64_t pack_programs, pack_bytes;
  bool packing;                   /* emitting the pack entry's body */
  /* C: blocked dots hoisted out of their K loops (xc_cse_plan_hoist): the
   * loops fill each step's operand slices, the dot runs once after them */
  hoist_t hoists[MAX_HOISTS];
  int num_hoists;
  int64_t hoist_bytes;            /* the stack bytes the hoists add */
} em_t;

static inline void fail(em_t* e, xc_status_t s) {
  if (!e->err) e->err = s;
  else xc_status_free(s);
}

static inline vinfo_t* V(em_t* e, const xc_tiled_value_t* v) { return &e->vi[v->id]; }

/* A bool value's decided state over every element of every program under
 * the chosen knobs (xc_tiled_ranges): 1 always true, 0 always false, -1 open. */
static inline int decided(em_t* e, const xc_tiled_value_t* v) {
  const xc_tiled_range_t* r = v && e->ranges ? &e->ranges[v->id] : NULL;
  return r && r->known && r->lo == r->hi ? (r->lo != 0) : -1;
}

/* The operand (0 or 1) an integer min or max returns for every element of
 * every program, from the operands' ranges (a row index clamped to the last
 * row when the grid never passes it); -1 when undecided. */
static inline int min_max_side(em_t* e, const xc_tiled_op_t* op) {
  if (!e->ranges || op->num_operands != 2 || !xc_dtype_is_int(op->results[0]->type.dtype)) return -1;
  const xc_tiled_range_t* a = &e->ranges[op->operands[0]->id], *b = &e->ranges[op->operands[1]->id];
  if (!a->known || !b->known) return -1;
  bool a_small = a->hi <= b->lo, b_small = b->hi <= a->lo;
  if (op->opcode == XC_TOP_MIN) return a_small ? 0 : b_small ? 1 : -1;
  return b_small ? 0 : a_small ? 1 : -1;
}

/* C: an integer division or remainder that the ranges decide, x / y with
 * 0 <= x < y for every element of every program (a coordinate split off a
 * reduction index that one tile covers: the 1x1 conv's `k % C`): 1 when the
 * remainder is x itself, 2 when the quotient is 0, else 0. */
static inline int trivial_divide(em_t* e, const xc_tiled_op_t* op) {
  if (e->d->work_groups || !e->ranges || (op->opcode != XC_TOP_DIV && op->opcode != XC_TOP_REM) ||
      op->num_operands != 2 || !xc_dtype_is_int(op->results[0]->type.dtype))
    return 0;
  const xc_tiled_range_t* x = &e->ranges[op->operands[0]->id], *y = &e->ranges[op->operands[1]->id];
  if (!x->known || !y->known || x->lo < 0 || x->hi >= y->lo) return 0;
  return op->opcode == XC_TOP_REM ? 1 : 2;
}

/* A load or store mask that is true for every element of every program
 * (index math against static bounds that the tiles divide): dropped. */
static inline const xc_tiled_value_t* live_mask(em_t* e, const xc_tiled_value_t* mask) {
  return decided(e, mask) == 1 ? NULL : mask;
}

static inline void indent(em_t* e) {
  for (int i = 0; i < e->depth; i++) P(&e->body, "  ");
}
#define L(...) (indent(e), P(&e->body, __VA_ARGS__))

static inline const char* vtype(em_t* e, xc_dtype_t t) { return e->d->value_type[t]; }
static inline const char* stype(em_t* e, xc_dtype_t t) { return e->d->storage_type[t]; }
static inline const char* itype(em_t* e) { return e->d->value_type[XC_I64]; }
static inline bool is_half(xc_dtype_t t) { return t == XC_F16 || t == XC_BF16; }
static inline bool fcompute(xc_dtype_t t) { return t == XC_F32 || t == XC_F64 || is_half(t); }
/* Bytes of one element of a tile array of dtype t: arrays hold the value
 * type (16-bit floats as float where the dialect computes them so; bool as
 * a byte on work-group dialects, int in C). */
static inline int64_t array_elem_bytes(em_t* e, xc_dtype_t t) {
  if (t == XC_BOOL) return e->d->work_groups ? 1 : 4;
  if (is_half(t) && !strcmp(vtype(e, t), "float")) return 4;
  return (int64_t)xc_dtype_size(t);
}

static inline bool same_shape(const vinfo_t* a, const vinfo_t* b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Math function name for a compute dtype ("expf" / "exp"). */
static inline void mathfn(em_t* e, char* out, size_t size, const char* stem, xc_dtype_t t) {
  snprintf(out, size, "%s%s", stem, t == XC_F64 ? e->d->f64_suffix : e->d->f32_suffix);
}

/* The coordinates of the element loops (xc_cse_loop_open). */
static const char* const loop_coords[XC_TILED_MAX_RANK] = {"i0", "i1", "i2"};

/* Operand expression as a malloc'd-free temporary string in a writer. */
typedef struct { xc_cstyle_writer_t w; } expr_t;

/* ---- names (cstyle_writer.c) ------------------------------------------------- */

void xc_cse_sanitize(const char* in, char* out, size_t size, size_t max_len);

/* ---- reads, element loops, element expressions (cstyle_expr.c) --------------- */

void xc_cse_literal(em_t* e, char* out, size_t size, xc_dtype_t t, double f, int64_t i);
void xc_cse_read_at(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c,
                    bool same);
void xc_cse_def_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c);
const char* xc_cse_opnd(em_t* e, expr_t* x, const xc_tiled_value_t* v, const vinfo_t* r);
void xc_cse_expr_free(expr_t* x);
bool xc_cse_frag_shape(em_t* e, const vinfo_t* r);
const xc_cstyle_dot_t* xc_cse_frag_of(em_t* e, const vinfo_t* r);
int xc_cse_slot_loop_open(em_t* e, const xc_cstyle_dot_t* dot);
int64_t xc_cse_vec_of(em_t* e, const vinfo_t* r);
/* Whether a rank-2 tile x divides into whole chunks of the schedule's
 * vector (rows of whole chunks, every work-item the same number): a
 * blocked dot's operand of that shape takes the chunked layout. */
bool xc_cse_whole_chunks(const em_t* e, const vinfo_t* x);
void xc_cse_slot_f(em_t* e, const vinfo_t* r);
void xc_cse_emit_coords(em_t* e, const vinfo_t* r);
int xc_cse_loop_open(em_t* e, const vinfo_t* r, bool simd);
void xc_cse_loop_close(em_t* e, int n);
void xc_cse_barrier(em_t* e);
void xc_cse_plan_vec_rows(em_t* e, const xc_tiled_block_t* b);
int64_t xc_cse_copy_chunks(em_t* e, const xc_tiled_op_t* op);
/* cstyle_reduce.c: the lanes a C reduction of len elements of t folds in
 * vector registers (0: none), and the tree that folds lanes xl[0..w-1]. */
int64_t xc_cse_reduce_lanes(em_t* e, xc_dtype_t t, int64_t len);
void xc_cse_lanes_tree(em_t* e, int kind, int64_t w);
void xc_cse_plan_copy_chunks(em_t* e, const xc_tiled_block_t* b);
void xc_cse_plan_row_ptrs(em_t* e, const xc_tiled_block_t* b);
bool xc_cse_rows_in_place_ok(em_t* e, const xc_tiled_op_t* ld);
const char* xc_cse_dst(em_t* e, const vinfo_t* r, char* buf, size_t size);
const xc_tiled_op_t* xc_cse_const_def(const xc_tiled_value_t* v);
void xc_cse_elementwise_expr(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a);
void xc_cse_load_conv(xc_cstyle_writer_t* w, xc_dtype_t t, const char* x);
void xc_cse_store_conv(em_t* e, xc_cstyle_writer_t* w, xc_dtype_t t, const char* x);

/* ---- ops (cstyle_ops.c) ------------------------------------------------------ */

const char* xc_cse_mem_name(em_t* e, const xc_tiled_value_t* m);
void xc_cse_load_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_op_t* op, const vinfo_t* r);
int64_t xc_cse_widest_global(const xc_tiled_block_t* b);
bool xc_cse_lanes_shape(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_reduce(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_copy(em_t* e, const xc_tiled_value_t* dstv, const xc_tiled_value_t* src, bool declare);
void xc_cse_emit_op(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_block(em_t* e, const xc_tiled_block_t* b);

/* ---- dots (cstyle_dot.c) ----------------------------------------------------- */

void xc_cse_emit_dot(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_raw_load_sync(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_mma(em_t* e, const xc_tiled_op_t* op, const char* a, const char* b);
mx_t* xc_cse_find_mx(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_stagings_of(em_t* e, const xc_tiled_op_t* op);
void xc_cse_emit_mx(em_t* e, mx_t* m);
void xc_cse_emit_for_pipelined(em_t* e, const xc_tiled_op_t* op);
int64_t xc_cse_other_local_bytes(em_t* e, const xc_tiled_block_t* b, const xc_tiled_op_t* dot);
void xc_cse_plan_mma(em_t* e, const xc_tiled_block_t* b);
int64_t xc_cse_staged_bytes(const xc_cstyle_dot_t* d);
void xc_cse_plan_staged(em_t* e, const xc_tiled_block_t* b, int64_t* room);

/* ---- analysis (cstyle_analysis.c) -------------------------------------------- */

void xc_cse_scan_phases(em_t* e, const xc_tiled_block_t* b, bool* stored);
void xc_cse_mark_use(em_t* e, const xc_tiled_value_t* v, const vinfo_t* loop_shape);
void xc_cse_analyze_block(em_t* e, const xc_tiled_block_t* b);
void xc_cse_classify_value(em_t* e, const xc_tiled_value_t* v);
void xc_cse_classify_block(em_t* e, const xc_tiled_block_t* b);
void xc_cse_count_uses(em_t* e, const xc_tiled_block_t* b);
void xc_cse_declare_block(em_t* e, const xc_tiled_block_t* b);
void xc_cse_declare_staged(em_t* e);

/* ---- loop fusion, C (cstyle_fusion.c) ---------------------------------------- */

void xc_cse_plan_fusion(em_t* e, const xc_tiled_block_t* b);
void xc_cse_plan_in_place(em_t* e, const xc_tiled_block_t* b);
void xc_cse_plan_zero_entry(em_t* e, const xc_tiled_block_t* b);
void xc_cse_plan_epilogue(em_t* e, const xc_tiled_block_t* b);
void xc_cse_plan_hoist(em_t* e, const xc_tiled_block_t* b);
const hoist_t* xc_cse_hoist_of(em_t* e, const xc_tiled_op_t* dot, const xc_tiled_op_t* loop,
                               const xc_tiled_block_t* body);
void xc_cse_emit_hoist_slices(em_t* e, const hoist_t* h);
void xc_cse_emit_dot_hoisted(em_t* e, const hoist_t* h);
bool xc_cse_known_int(em_t* e, const xc_tiled_value_t* v, int64_t* out);
int64_t xc_cse_loop_trips(em_t* e, const xc_tiled_op_t* loop, int64_t* lb, int64_t* st);
bool xc_cse_stores_in(const xc_tiled_block_t* b);
void xc_cse_emit_epilogue_open(em_t* e);
void xc_cse_emit_epilogue_row(em_t* e, const xc_tiled_value_t* acc, int m, int nv, int64_t lanes, int64_t N);
bool xc_cse_dot_blocked_fits(em_t* e, const xc_tiled_op_t* op);
void xc_cse_dot_blocking(em_t* e, const xc_tiled_op_t* op, int* out_mr, int* out_nv, int64_t* out_lanes);

/* ---- packed dot operands, C (cstyle_pack.c) ---------------------------------- */

void xc_cse_plan_pack(em_t* e, const xc_tiled_block_t* b);
bool xc_cse_emit_packed_ref(em_t* e, const xc_tiled_op_t* load);
const packed_t* xc_cse_find_pack(em_t* e, const xc_tiled_op_t* load);
void xc_cse_emit_pack_body(em_t* e, xc_cstyle_writer_t* out);

#endif
