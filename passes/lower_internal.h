/* Internal interface of the lowering (passes/lower*.c): the per-kernel
 * builder context, index spaces and the emitters of each group kind. */
#ifndef XCOMP_PASSES_LOWER_INTERNAL_H
#define XCOMP_PASSES_LOWER_INTERNAL_H

#include "xcomp/lower.h"
#include "xcomp/op.h"

#define LW_MAX_RANK 8
#define LW_MAX_PHASE_NODES 64

typedef xc_tiled_value_t lw_val_t;

/* A graph dim inside a kernel: its SSA value and its grid expression. */
typedef struct lw_dimv {
  lw_val_t* v;
  const xc_tiled_expr_t* e;
  bool is_const;
  int64_t c;
} lw_dimv_t;

/* An index space: per-dim index tiles (broadcastable to each other; scalars
 * allowed) of a value shape, and the mask of valid lanes. */
typedef struct lw_space {
  int rank;
  const xc_dim_t* dims;
  lw_val_t* idx[LW_MAX_RANK];
  lw_val_t* mask;
  /* a flat space (lw_flat_space): the flat index its idx were split from,
   * and those idx, so that lw_offset of a tensor of the space's own dims,
   * read at the unchanged idx, is the flat index itself */
  lw_val_t* flat;
  int flat_rank;
  const xc_dim_t* flat_dims;
  lw_val_t* flat_idx[LW_MAX_RANK];
} lw_space_t;

/* A phase: an anchor node and the elementwise nodes fused after it. */
typedef struct lw_phase {
  int num_nodes;
  xc_node_t* nodes[LW_MAX_PHASE_NODES];
  /* elementwise producers of a normalization's input, computed where the
   * anchor loads it (a prologue) */
  int num_pro;
  xc_node_t* pro[LW_MAX_PHASE_NODES];
} lw_phase_t;

typedef struct lw_ctx {
  xc_graph_t* g;
  const xc_fusion_plan_t* plan;
  const xc_fusion_group_t* grp;
  xc_tiled_kernel_t* k;
  /* parameters */
  int num_params, cap_params;
  const xc_value_t** pvals;
  xc_dim_t* pdims;
  lw_val_t** pv;
  /* iteration: grid axes in single-phase mode, for loops otherwise */
  bool multi_phase;
  int grid_rank;
  const xc_tiled_expr_t* grid[XC_TILED_MAX_GRID];
  int loop_depth;
  xc_tiled_op_t* loops[16];
  /* the phase being emitted and its register values */
  const lw_phase_t* phase;
  int phase_index;
  int num_regs;
  const xc_value_t* reg_val[LW_MAX_PHASE_NODES * 2];
  lw_val_t* reg_tile[LW_MAX_PHASE_NODES * 2];
  bool* must_store; /* by value id */
  /* Attention groups: head Split/Transpose/view nodes folded into the
   * attention kernel's index math (by node id), and the Transpose of the
   * attention output that the kernel stores through (or NULL). */
  const bool* absorbed;
  const xc_node_t* remap_out;
  const xc_tiled_limits_t* limits; /* the target's (NULL: unlimited); knob defaults may use them */
  int64_t threads_default;         /* num_threads default (0: 128), set by a lowering that knows better */
  int64_t threads_extra[2];        /* more num_threads candidates (0: none): a pattern's program sizes */
  bool no_index_checks; /* xc_lower_options_t: lw_check_index only normalizes */
  /* the index-error record parameter (NULL until a check needs it) */
  lw_val_t* index_error;
  int index_error_param;
  int index_error_slot; /* the kernel's slot of the record (kernels with checks before it) */
  int num_index_checks;
  /* What a check writes that names its place in the graph (the slot's first
   * word, the failing node's position) comes in as scalar parameters, so
   * that the code of a kernel does not depend on where its layer sits
   * (lw_check_index). */
  lw_val_t* index_error_base;
  const xc_node_t* checked_node[8];
  lw_val_t* checked_node_param[8];
  int num_checked_nodes;
  xc_status_t err;
} lw_ctx_t;

/* ---- core helpers (lower.c) ---- */
xc_status_t lw_unsupported(const lw_ctx_t* c, const xc_node_t* n, const char* fmt, ...) XC_PRINTF(3, 4);
bool lw_is_view(const xc_node_t* n);
bool lw_in_group(const lw_ctx_t* c, const xc_value_t* v);
lw_val_t* lw_buf(lw_ctx_t* c, const xc_value_t* v);
lw_dimv_t lw_dim(lw_ctx_t* c, xc_dim_t d);
lw_dimv_t lw_dim_const(lw_ctx_t* c, int64_t v);
xc_dim_t lw_numel(lw_ctx_t* c, int rank, const xc_dim_t* dims);
xc_dim_t lw_prod(lw_ctx_t* c, int from, int to, const xc_dim_t* dims);
int lw_knob(lw_ctx_t* c, const char* base, int n, const int64_t* cands, int64_t def);
/* The smallest power of two >= v (1 for v <= 1). */
int64_t lw_pow2_at_least(int64_t v);
/* Whether the device has matrix instructions for a dot of dtype dt (the
 * limits' mma bits; f32 only when the compile allows tf32). */
bool lw_has_mma(const lw_ctx_t* c, xc_dtype_t dt);
/* Whether the limits are a CPU core's (xc_tiled_limits_init_cpu: a program is
 * one thread, tiles live on its stack, SIMD lanes <= 16). */
bool lw_cpu_limits(const lw_ctx_t* c);
/* Whether v is one of the n candidates. */
bool lw_listed(const int64_t* cands, int n, int64_t v);
lw_val_t* lw_i64(lw_ctx_t* c, int64_t v);
lw_val_t* lw_fconst(lw_ctx_t* c, xc_dtype_t dt, double v);
lw_val_t* lw_add(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_sub(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_mul(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_div(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_rem(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_lt(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_and(lw_ctx_t* c, lw_val_t* a, lw_val_t* b);
lw_val_t* lw_col(lw_ctx_t* c, lw_val_t* x);
lw_val_t* lw_row(lw_ctx_t* c, lw_val_t* x);
/* Begins iterating `count` in steps of `step` (a knob, or a constant when
 * knob < 0) on grid axis `axis` (single phase) or a for loop; returns the
 * start index. Close loops with lw_iter_end. */
lw_val_t* lw_iter_begin(lw_ctx_t* c, int axis, lw_dimv_t count, int knob, int64_t step);
void lw_iter_end(lw_ctx_t* c, lw_val_t* start);
/* A flat space over a value shape: offsets start + arange(BLOCK knob). */
void lw_flat_space(lw_ctx_t* c, int rank, const xc_dim_t* dims, lw_val_t* start, int knob,
                   lw_space_t* sp, lw_val_t** flat);
/* Element offset of value v (broadcast to the space's trailing dims). */
lw_val_t* lw_offset(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v);
/* Offset into a contiguous buffer of shape dims (aligned to the trailing
 * dims of the space; size-1 dims broadcast). */
lw_val_t* lw_offset_dims(lw_ctx_t* c, const lw_space_t* sp, int rank, const xc_dim_t* dims);
/* v's producer when the group absorbed it into its index math (a head
 * view, Transpose or Split of attention; not the output's remap), else NULL:
 * the step lw_virtual_offset and the attention pattern walk. */
const xc_node_t* lw_absorbed_producer(const lw_ctx_t* c, const xc_value_t* v);
/* Offset of element idx (v's own dims) traced through absorbed nodes to the
 * buffer that holds it (*buf). */
lw_val_t* lw_virtual_offset(lw_ctx_t* c, const xc_value_t* v, lw_val_t* const* idx, const xc_value_t** buf);
/* Decomposes a scalar/tile flat index over dims[0..rank) into idx. */
void lw_decompose(lw_ctx_t* c, lw_val_t* flat, int rank, const xc_dim_t* dims, lw_val_t** idx);
/* v at the space: from registers, or loaded (masked) from its buffer. */
lw_val_t* lw_load_at(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v);
void lw_store_at(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v, lw_val_t* tile);
void lw_set_reg(lw_ctx_t* c, const xc_value_t* v, lw_val_t* t);
/* Runs the phase's fused elementwise nodes after the anchor (whose output
 * tile is `anchor_out` at space sp) and stores what must be stored. */
xc_status_t lw_epilogue(lw_ctx_t* c, const lw_space_t* sp, lw_val_t* anchor_out);
/* Stores the prologue values that leave the phase, at space sp (call once
 * per element: in the anchor's single pass over its input). */
void lw_store_prologue(lw_ctx_t* c, const lw_space_t* sp);
/* x converted to dtype dt (x itself when it already has it). */
lw_val_t* lw_cast_to(lw_ctx_t* c, lw_val_t* x, xc_dtype_t dt);

/* Checks an index tile read from a tensor (any integer dtype; cast to i64
 * here) against extent `dim` of node n's `axis` (xcomp/tiled.h, "index
 * checks"): with `negative`, -dim <= i < 0 counts from the end. Returns the
 * normalized index with out-of-range lanes clamped to 0, ANDs the in-range
 * lanes into *mask (a NULL *mask becomes them), and records a failing lane
 * of *mask in the index-error record. */
lw_val_t* lw_check_index(lw_ctx_t* c, const xc_node_t* n, xc_index_check_kind_t kind, int axis, bool negative,
                         lw_val_t* ix, lw_val_t* dim, lw_val_t** mask);

/* ---- elementwise (lower_elementwise.c) ---- */
bool lw_is_elementwise(const xc_node_t* n);
xc_status_t lw_ew_compute(lw_ctx_t* c, const xc_node_t* n, lw_val_t* const* ins, lw_val_t** out);
xc_status_t lw_emit_elementwise(lw_ctx_t* c, const xc_node_t* n);

/* ---- anchors ---- */
xc_status_t lw_emit_reduce(lw_ctx_t* c, const xc_node_t* n);    /* lower_reduce.c */
xc_status_t lw_emit_normalize(lw_ctx_t* c, const xc_node_t* n); /* lower_reduce.c */
xc_status_t lw_emit_pool(lw_ctx_t* c, const xc_node_t* n);      /* lower_conv.c */
xc_status_t lw_emit_conv(lw_ctx_t* c, const xc_node_t* n);      /* lower_conv.c */
xc_status_t lw_emit_convtranspose(lw_ctx_t* c, const xc_node_t* n); /* lower_conv.c */
xc_status_t lw_emit_gemm(lw_ctx_t* c, const xc_node_t* n);      /* lower_gemm.c */
xc_status_t lw_emit_einsum(lw_ctx_t* c, const xc_node_t* n);    /* lower_gemm.c */
xc_status_t lw_emit_dynamic_quant(lw_ctx_t* c, const xc_node_t* n); /* lower_quant.c */
xc_status_t lw_emit_det(lw_ctx_t* c, const xc_node_t* n);       /* lower_gemm.c */
xc_status_t lw_emit_deform_conv(lw_ctx_t* c, const xc_node_t* n); /* lower_conv.c */
xc_status_t lw_emit_roi_align(lw_ctx_t* c, const xc_node_t* n);  /* lower_sample.c */
xc_status_t lw_emit_max_unpool(lw_ctx_t* c, const xc_node_t* n); /* lower_scatter.c */
xc_status_t lw_emit_col2im(lw_ctx_t* c, const xc_node_t* n);     /* lower_movement.c */
bool lw_is_rnn(const xc_node_t* n);                             /* lower_rnn.c */
xc_status_t lw_emit_rnn(lw_ctx_t* c, const xc_node_t* n);
xc_status_t lw_emit_attention(lw_ctx_t* c, const xc_node_t* n); /* lower_attention.c */
xc_status_t lw_emit_movement(lw_ctx_t* c, const xc_node_t* n);  /* lower_movement.c */
bool lw_is_reduce(const xc_node_t* n);
bool lw_is_argreduce(const xc_node_t* n);
bool lw_is_loss(const xc_node_t* n);
bool lw_is_scatter(const xc_node_t* n);
bool lw_is_quant(const xc_node_t* n);
xc_status_t lw_emit_quant(lw_ctx_t* c, const xc_node_t* n); /* lower_quant.c */
xc_status_t lw_emit_resize(lw_ctx_t* c, const xc_node_t* n); /* lower_resize.c */
xc_status_t lw_emit_grid_sample(lw_ctx_t* c, const xc_node_t* n); /* lower_sample.c */
xc_status_t lw_emit_scatter(lw_ctx_t* c, const xc_node_t* n); /* lower_scatter.c */
xc_status_t lw_emit_loss(lw_ctx_t* c, const xc_node_t* n); /* lower_loss.c */
xc_status_t lw_emit_argreduce(lw_ctx_t* c, const xc_node_t* n); /* lower_reduce.c */
xc_status_t lw_emit_cumsum(lw_ctx_t* c, const xc_node_t* n);    /* lower_reduce.c */
xc_status_t lw_emit_topk(lw_ctx_t* c, const xc_node_t* n);      /* lower_reduce.c */
bool lw_is_normalize(const xc_node_t* n);
bool lw_is_movement(const xc_node_t* n);

/* Constant integer vector of an input (initializer or known elems). */
bool lw_const_ints(lw_ctx_t* c, const xc_value_t* v, int64_t* out, int max, int* n);

#endif
