/* Lowering driver: fusion-plan groups -> tiled kernels and alias steps
 * (docs/lowering.md), the shared index-space helpers, and the tiled-IR
 * interpreter runner of a lowered module. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"
#include "xcomp/tensor.h"

static const xc_value_t* view_source(const xc_value_t* v);
static bool same_numel(xc_graph_t* g, const xc_value_t* a, const xc_value_t* b);

/* ---- errors and classification ------------------------------------------- */

xc_status_t lw_unsupported(const lw_ctx_t* c, const xc_node_t* n, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xc_error(XC_UNSUPPORTED, "lowering group %d (%s): op %s (node '%s'): %s",
                  c->grp ? c->grp->id : -1, c->grp ? xc_group_kind_name(c->grp->kind) : "?",
                  n ? n->op_type : "?", n && n->name ? n->name : "", msg);
}

bool lw_is_view(const xc_node_t* n) {
  static const char* views[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  if (n->domain && n->domain[0]) return false;
  for (size_t i = 0; i < sizeof views / sizeof *views; i++)
    if (strcmp(n->op_type, views[i]) == 0) return n->num_outputs >= 1 && n->outputs[0];
  return false;
}

static bool node_in_group(const xc_fusion_group_t* grp, const xc_node_t* n) {
  for (int i = 0; i < grp->num_nodes; i++)
    if (grp->nodes[i] == n) return true;
  return false;
}

bool lw_in_group(const lw_ctx_t* c, const xc_value_t* v) {
  return v->producer && node_in_group(c->grp, v->producer);
}

/* ---- parameters, dims, knobs --------------------------------------------- */

static int add_param(lw_ctx_t* c, const xc_value_t* v, xc_dim_t d, lw_val_t* pv) {
  if (c->num_params == c->cap_params) {
    int cap = c->cap_params ? c->cap_params * 2 : 16;
    const xc_value_t** a = realloc(c->pvals, sizeof *a * (size_t)cap);
    if (a) c->pvals = a;
    xc_dim_t* b = realloc(c->pdims, sizeof *b * (size_t)cap);
    if (b) c->pdims = b;
    lw_val_t** p = realloc(c->pv, sizeof *p * (size_t)cap);
    if (p) c->pv = p;
    if (!a || !b || !p) {
      if (!c->err) c->err = xc_error_oom();
      return -1;
    }
    c->cap_params = cap;
  }
  c->pvals[c->num_params] = v;
  c->pdims[c->num_params] = d;
  c->pv[c->num_params] = pv;
  return c->num_params++;
}

lw_val_t* lw_buf(lw_ctx_t* c, const xc_value_t* v) {
  for (int i = 0; i < c->num_params; i++)
    if (c->pvals[i] == v) return c->pv[i];
  xc_tiled_role_t role = XC_ROLE_IN;
  /* produced here: a view of it may be read back by the same kernel */
  if (lw_in_group(c, v)) role = XC_ROLE_INOUT;
  char name[64];
  snprintf(name, sizeof name, "v%d", v->id);
  lw_val_t* p = xc_tiled_param_buffer(c->k, name, v->dtype, role);
  if (p) add_param(c, v, xc_dim_const(0), p);
  return p;
}

static int node_position(const xc_graph_t* g, const xc_node_t* n) {
  for (int i = 0; i < g->num_nodes; i++)
    if (g->nodes[i] == n) return i;
  return -1;
}

/* A scalar parameter of the kernel bound to the constant `value` at launch
 * (NULL after recording an error). */
static lw_val_t* constant_param(lw_ctx_t* c, const char* name, int64_t value) {
  lw_val_t* p = xc_tiled_param_scalar(c->k, name);
  if (p && add_param(c, NULL, xc_dim_const(value), p) < 0) return NULL;
  return p;
}

/* The checked node's position in the graph + 1, the record's first word: a
 * scalar parameter per node (the same layer repeated then checks in the same
 * code), a constant past the first few nodes of one kernel. */
static lw_val_t* checked_node_word(lw_ctx_t* c, const xc_node_t* n) {
  int64_t word = node_position(c->g, n) + 1;
  int max = (int)(sizeof c->checked_node / sizeof *c->checked_node);
  for (int i = 0; i < c->num_checked_nodes; i++)
    if (c->checked_node[i] == n) return c->checked_node_param[i];
  if (c->num_checked_nodes == max) return lw_i64(c, word);
  char name[48];
  snprintf(name, sizeof name, "%s_node%d", XC_INDEX_ERROR_PARAM, c->num_checked_nodes);
  lw_val_t* p = constant_param(c, name, word);
  if (!p) return lw_i64(c, word); /* the builder holds the error */
  c->checked_node[c->num_checked_nodes] = n;
  c->checked_node_param[c->num_checked_nodes++] = p;
  return p;
}

lw_val_t* lw_check_index(lw_ctx_t* c, const xc_node_t* n, xc_index_check_kind_t kind, int axis, bool negative,
                         lw_val_t* ix, lw_val_t* dim, lw_val_t** mask) {
  xc_tiled_kernel_t* k = c->k;
  lw_val_t* zero = lw_i64(c, 0);
  ix = lw_cast_to(c, ix, XC_I64);
  lw_val_t* j = negative ? xc_tiled_select(k, lw_lt(c, ix, zero), lw_add(c, ix, dim), ix) : ix;
  if (c->no_index_checks) return j;
  lw_val_t* ok = lw_and(c, xc_tiled_cmp(k, XC_CMP_GE, j, zero), lw_lt(c, j, dim));
  lw_val_t* bad = xc_tiled_unary(k, XC_TOP_NOT, ok);
  if (*mask) bad = lw_and(c, bad, *mask);
  *mask = lw_and(c, *mask, ok);
  if (!c->index_error) {
    c->index_error = xc_tiled_param_buffer(k, XC_INDEX_ERROR_PARAM, XC_I64, XC_ROLE_OUT);
    if (c->index_error) c->index_error_param = add_param(c, NULL, xc_dim_const(0), c->index_error);
  }
  c->num_index_checks++;
  /* The kernel's own slot of the record: no load, so no program waits on
   * another, and the executor reports the first slot (in step order) set.
   * Its first word and the node's position are launch arguments (a kernel
   * parameter each, bound to constants in the plan), not constants of the
   * code: the same layer repeated compiles once (driver/build.c). */
  if (!c->index_error_base)
    c->index_error_base = constant_param(c, XC_INDEX_ERROR_PARAM "_base",
                                         (int64_t)c->index_error_slot * XC_INDEX_ERROR_WORDS);
  lw_val_t* base = c->index_error_base;
  if (!base) return xc_tiled_select(k, ok, j, zero); /* the builder holds the error */
  lw_val_t* words[XC_INDEX_ERROR_WORDS] = {checked_node_word(c, n), ix, dim,
                                            lw_i64(c, (int64_t)kind | (int64_t)axis << 8)};
  /* Four stores of the lanes' own shape, each lane storing for itself
   * (predicated; no barrier, no work-group memory; in C they join the
   * kernel's fused element loop). */
  for (int i = 0; i < XC_INDEX_ERROR_WORDS; i++) {
    lw_val_t* at = i ? lw_add(c, base, lw_i64(c, i)) : base;
    lw_val_t* off = xc_tiled_select(k, bad, at, at); /* bad's shape */
    xc_tiled_store(k, c->index_error, off, words[i], bad);
  }
  return xc_tiled_select(k, ok, j, zero);
}

lw_dimv_t lw_dim_const(lw_ctx_t* c, int64_t v) {
  lw_dimv_t r = {lw_i64(c, v), xc_texpr_const(c->k, v), true, v};
  return r;
}

lw_dimv_t lw_dim(lw_ctx_t* c, xc_dim_t d) {
  if (xc_dim_is_static(d)) return lw_dim_const(c, d.value);
  lw_val_t* p = NULL;
  for (int i = 0; i < c->num_params && !p; i++)
    if (!c->pvals[i] && xc_dim_equal(c->pdims[i], d)) p = c->pv[i];
  if (!p) {
    char name[32];
    snprintf(name, sizeof name, "s%d", c->num_params);
    p = xc_tiled_param_scalar(c->k, name);
    if (p) add_param(c, NULL, d, p);
  }
  lw_dimv_t r = {p, xc_texpr_param(c->k, p), false, 0};
  return r;
}

xc_dim_t lw_prod(lw_ctx_t* c, int from, int to, const xc_dim_t* dims) {
  xc_dim_t r = xc_dim_const(1);
  for (int i = from; i < to; i++) r = xc_dim_mul(c->g, r, dims[i]);
  return r;
}

xc_dim_t lw_numel(lw_ctx_t* c, int rank, const xc_dim_t* dims) { return lw_prod(c, 0, rank, dims); }

int lw_knob(lw_ctx_t* c, const char* base, int n, const int64_t* cands, int64_t def) {
  char name[64];
  snprintf(name, sizeof name, "%s_p%d", base, c->phase_index);
  return xc_tiled_add_knob(c->k, name, XC_KNOB_TILE, n, cands, def);
}

int64_t lw_pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

bool lw_listed(const int64_t* cands, int n, int64_t v) {
  for (int i = 0; i < n; i++)
    if (cands[i] == v) return true;
  return false;
}

bool lw_cpu_limits(const lw_ctx_t* c) {
  const xc_tiled_limits_t* l = c->limits;
  return l && l->value[XC_TILED_LIMIT_SIMD_WIDTH] <= 16 && l->value[XC_TILED_LIMIT_SHARED_BYTES] >= 128 * 1024 &&
         l->value[XC_TILED_LIMIT_SHARED_BYTES] != INT64_MAX;
}

bool lw_has_mma(const lw_ctx_t* c, xc_dtype_t dt) {
  return c->limits && (c->limits->value[XC_TILED_LIMIT_MMA] & ((int64_t)1 << dt));
}

lw_val_t* lw_i64(lw_ctx_t* c, int64_t v) { return xc_tiled_const_i(c->k, XC_I64, v, 0, NULL); }
lw_val_t* lw_fconst(lw_ctx_t* c, xc_dtype_t dt, double v) {
  if (xc_dtype_is_float(dt) || dt == XC_BOOL) return xc_tiled_const_f(c->k, dt, v, 0, NULL);
  return xc_tiled_const_i(c->k, dt, (int64_t)v, 0, NULL);
}
lw_val_t* lw_add(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_binary(c->k, XC_TOP_ADD, a, b); }
lw_val_t* lw_sub(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_binary(c->k, XC_TOP_SUB, a, b); }
lw_val_t* lw_mul(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_binary(c->k, XC_TOP_MUL, a, b); }
lw_val_t* lw_div(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_binary(c->k, XC_TOP_DIV, a, b); }
lw_val_t* lw_rem(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_binary(c->k, XC_TOP_REM, a, b); }
lw_val_t* lw_lt(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) { return xc_tiled_cmp(c->k, XC_CMP_LT, a, b); }
lw_val_t* lw_and(lw_ctx_t* c, lw_val_t* a, lw_val_t* b) {
  if (!a) return b;
  if (!b) return a;
  return xc_tiled_binary(c->k, XC_TOP_AND, a, b);
}
lw_val_t* lw_col(lw_ctx_t* c, lw_val_t* x) { return xc_tiled_expand_dims(c->k, x, 1); }
lw_val_t* lw_row(lw_ctx_t* c, lw_val_t* x) { return xc_tiled_expand_dims(c->k, x, 0); }

lw_val_t* lw_cast_to(lw_ctx_t* c, lw_val_t* x, xc_dtype_t dt) {
  if (!x || x->type.dtype == dt) return x;
  return xc_tiled_cast(c->k, x, dt);
}

/* ---- iteration ------------------------------------------------------------ */

lw_val_t* lw_iter_begin(lw_ctx_t* c, int axis, lw_dimv_t count, int knob, int64_t step) {
  lw_val_t* stepv = knob >= 0 ? xc_tiled_knob_value(c->k, knob) : lw_i64(c, step);
  if (!c->multi_phase) {
    const xc_tiled_expr_t* se = knob >= 0 ? xc_texpr_knob(c->k, knob) : xc_texpr_const(c->k, step);
    c->grid[axis] = xc_texpr_binary(c->k, XC_TEXPR_CEILDIV, count.e, se);
    if (axis + 1 > c->grid_rank) c->grid_rank = axis + 1;
    return lw_mul(c, xc_tiled_program_id(c->k, axis), stepv);
  }
  xc_tiled_op_t* loop = xc_tiled_for_begin(c->k, lw_i64(c, 0), count.v, stepv, 0, NULL);
  if (!loop || c->loop_depth >= 16) {
    if (!c->err) c->err = xc_error(XC_INTERNAL, "lowering: loop nest too deep or invalid");
    return NULL;
  }
  c->loops[c->loop_depth++] = loop;
  return xc_tiled_for_iv(loop);
}

void lw_iter_end(lw_ctx_t* c, lw_val_t* start) {
  (void)start;
  if (!c->multi_phase || c->loop_depth == 0) return;
  xc_tiled_op_t* loop = c->loops[--c->loop_depth];
  xc_tiled_for_end(c->k, loop, 0, NULL);
}

/* ---- spaces ---------------------------------------------------------------- */

void lw_flat_space(lw_ctx_t* c, int rank, const xc_dim_t* dims, lw_val_t* start, int knob,
                   lw_space_t* sp, lw_val_t** flat) {
  memset(sp, 0, sizeof *sp);
  sp->rank = rank;
  sp->dims = dims;
  lw_val_t* offs = lw_add(c, start, xc_tiled_arange(c->k, xc_tiled_dim_knob(knob)));
  lw_dimv_t n = lw_dim(c, lw_numel(c, rank, dims));
  sp->mask = lw_lt(c, offs, n.v);
  lw_decompose(c, offs, rank, dims, sp->idx);
  sp->flat = offs;
  sp->flat_rank = rank;
  sp->flat_dims = dims;
  memcpy(sp->flat_idx, sp->idx, sizeof sp->idx);
  if (flat) *flat = offs;
}

void lw_decompose(lw_ctx_t* c, lw_val_t* offs, int rank, const xc_dim_t* dims, lw_val_t** idx) {
  for (int d = 0; d < rank; d++) {
    xc_dim_t pitch = lw_prod(c, d + 1, rank, dims);
    lw_val_t* q = offs;
    if (!(xc_dim_is_static(pitch) && pitch.value == 1)) q = lw_div(c, q, lw_dim(c, pitch).v);
    if (d > 0) q = lw_rem(c, q, lw_dim(c, dims[d]).v);
    idx[d] = q;
  }
}

static bool dim_is_one(xc_dim_t d) { return xc_dim_is_static(d) && d.value == 1; }

lw_val_t* lw_offset(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v) {
  return lw_offset_dims(c, sp, v->rank, v->dims);
}

/* Whether sp is a flat space over exactly dims, read at the coordinates it
 * was split into: the offset is then its flat index (a Transpose's store,
 * an elementwise op's operands of the output's shape), with no division. */
static bool flat_offset(const lw_space_t* sp, int r, const xc_dim_t* dims) {
  if (!sp->flat || r != sp->flat_rank || r != sp->rank || !sp->flat_dims) return false;
  for (int d = 0; d < r; d++)
    if (sp->idx[d] != sp->flat_idx[d] || !xc_dim_equal(dims[d], sp->flat_dims[d])) return false;
  return true;
}

lw_val_t* lw_offset_dims(lw_ctx_t* c, const lw_space_t* sp, int r, const xc_dim_t* dims) {
  if (flat_offset(sp, r, dims)) return sp->flat;
  lw_val_t* off = NULL;
  for (int i = 0; i < r; i++) {
    int d = sp->rank - r + i;
    if (d < 0 || dim_is_one(dims[i]) || !sp->idx[d]) continue;
    xc_dim_t stride = lw_prod(c, i + 1, r, dims);
    lw_val_t* t = sp->idx[d];
    if (!dim_is_one(stride)) t = lw_mul(c, t, lw_dim(c, stride).v);
    off = off ? lw_add(c, off, t) : t;
  }
  if (!off) off = lw_i64(c, 0);
  return off;
}

const xc_node_t* lw_absorbed_producer(const lw_ctx_t* c, const xc_value_t* v) {
  const xc_node_t* n = v->producer;
  if (!n || !c->absorbed || n->id >= c->plan->num_nodes || !c->absorbed[n->id] || n == c->remap_out) return NULL;
  return n;
}

lw_val_t* lw_virtual_offset(lw_ctx_t* c, const xc_value_t* v, lw_val_t* const* idx_in, const xc_value_t** buf) {
  lw_val_t* idx[LW_MAX_RANK] = {0};
  for (int d = 0; d < v->rank && d < LW_MAX_RANK; d++) idx[d] = idx_in[d];
  for (const xc_node_t* n; (n = lw_absorbed_producer(c, v));) {
    const xc_value_t* u = n->inputs[0];
    lw_val_t* nidx[LW_MAX_RANK] = {0};
    if (u->rank > LW_MAX_RANK) break;
    if (lw_is_view(n)) { /* same bytes: through the flat index */
      lw_space_t sp;
      memset(&sp, 0, sizeof sp);
      sp.rank = v->rank;
      for (int d = 0; d < v->rank; d++) sp.idx[d] = idx[d];
      lw_decompose(c, lw_offset_dims(c, &sp, v->rank, v->dims), u->rank, u->dims, nidx);
    } else if (!strcmp(n->op_type, "Transpose")) {
      int64_t cnt = 0;
      const int64_t* perm = xc_node_attr_ints(n, "perm", &cnt);
      for (int d = 0; d < v->rank; d++) nidx[perm && cnt == v->rank ? perm[d] : v->rank - 1 - d] = idx[d];
    } else { /* Split */
      int64_t axis = xc_node_attr_int(n, "axis");
      if (axis < 0) axis += u->rank;
      xc_dim_t off = xc_dim_const(0);
      for (int j = 0; j < n->num_outputs && n->outputs[j] != v; j++)
        off = xc_dim_add(c->g, off, n->outputs[j]->dims[axis]);
      for (int d = 0; d < v->rank; d++) nidx[d] = idx[d];
      nidx[axis] = lw_add(c, idx[axis], lw_dim(c, off).v);
    }
    for (int d = 0; d < LW_MAX_RANK; d++) idx[d] = nidx[d];
    v = u;
  }
  *buf = v;
  lw_space_t sp;
  memset(&sp, 0, sizeof sp);
  sp.rank = v->rank;
  for (int d = 0; d < v->rank && d < LW_MAX_RANK; d++) sp.idx[d] = idx[d];
  return lw_offset(c, &sp, v);
}

void lw_set_reg(lw_ctx_t* c, const xc_value_t* v, lw_val_t* t) {
  for (int i = 0; i < c->num_regs; i++)
    if (c->reg_val[i] == v) {
      c->reg_tile[i] = t;
      return;
    }
  if (c->num_regs < LW_MAX_PHASE_NODES * 2) {
    c->reg_val[c->num_regs] = v;
    c->reg_tile[c->num_regs++] = t;
  }
}

lw_val_t* lw_load_at(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v) {
  if (!v) return NULL;
  for (int i = 0; i < c->num_regs; i++)
    if (c->reg_val[i] == v) return c->reg_tile[i];
  if (v->producer && lw_is_view(v->producer)) { /* a reshaped register value: same element order */
    const xc_value_t* src = view_source(v);
    for (int i = 0; i < c->num_regs; i++)
      if (c->reg_val[i] == src && same_numel(c->g, src, v)) return c->reg_tile[i];
  }
  for (int i = 0; c->phase && i < c->phase->num_pro; i++) {
    const xc_node_t* n = c->phase->pro[i];
    if (n->outputs[0] != v) continue;
    /* a prologue value: computed here from its own inputs */
    lw_val_t* ins[16] = {0};
    for (int j = 0; j < n->num_inputs && j < 16; j++)
      if (!(j == 1 && !strcmp(n->op_type, "CastLike"))) ins[j] = lw_load_at(c, sp, n->inputs[j]);
    lw_val_t* out = NULL;
    xc_status_t s = lw_ew_compute(c, n, ins, &out);
    if (s) {
      if (!c->err) c->err = s;
      else xc_status_free(s);
      return NULL;
    }
    return lw_cast_to(c, out, v->dtype);
  }
  /* One element (a Clip's bound, a scalar operand): a scalar load of it,
   * unmasked (offset 0 is always valid), that broadcasts; the kernel reads
   * it once instead of once per lane under the tile's mask. A floating-point
   * constant's one element is a constant of the kernel instead: a target
   * then sees ReLU6's bounds as numbers (one instruction per bound where a
   * loaded bound, which may be NaN, takes the NaN-propagating form). */
  bool one = true, wide = false; /* v holds one element; the space more than one */
  for (int i = 0; i < v->rank && one; i++) one = xc_dim_is_static(v->dims[i]) && v->dims[i].value == 1;
  for (int i = 0; i < sp->rank && !wide; i++) wide = !xc_dim_is_static(sp->dims[i]) || sp->dims[i].value != 1;
  if (one && v->constant && v->constant->numel == 1 && v->constant->dtype == v->dtype &&
      (v->dtype == XC_F32 || v->dtype == XC_F64 || v->dtype == XC_F16 || v->dtype == XC_BF16))
    return lw_fconst(c, v->dtype, xc_tensor_get_f64(v->constant, 0));
  lw_val_t* b = lw_buf(c, v);
  if (one && wide) return xc_tiled_load(c->k, b, lw_i64(c, 0), NULL, NULL);
  return xc_tiled_load(c->k, b, lw_offset(c, sp, v), sp->mask, NULL);
}

void lw_store_at(lw_ctx_t* c, const lw_space_t* sp, const xc_value_t* v, lw_val_t* tile) {
  lw_val_t* off;
  bool same = v->rank == sp->rank;
  for (int d = 0; same && sp->dims && d < v->rank; d++) same = xc_dim_equal(v->dims[d], sp->dims[d]);
  if (same || !sp->dims) {
    if (v->rank != sp->rank) {
      if (!c->err) c->err = xc_error(XC_INTERNAL, "lowering: store of '%s' with rank %d into a rank-%d space",
                                     v->name, v->rank, sp->rank);
      return;
    }
    off = lw_offset(c, sp, v);
  } else { /* a flat-joined value: the element order of the space's shape */
    xc_dim_t a = xc_dim_const(1), b = xc_dim_const(1);
    for (int d = 0; d < v->rank; d++) a = xc_dim_mul(c->g, a, v->dims[d]);
    for (int d = 0; d < sp->rank; d++) b = xc_dim_mul(c->g, b, sp->dims[d]);
    if (!xc_dim_equal(a, b)) {
      if (!c->err) c->err = xc_error(XC_INTERNAL, "lowering: store of '%s' into a space of another size", v->name);
      return;
    }
    off = lw_offset_dims(c, sp, sp->rank, sp->dims);
  }
  if (sp->mask) off = xc_tiled_select(c->k, sp->mask, off, off);
  tile = lw_cast_to(c, tile, v->dtype);
  xc_tiled_store(c->k, lw_buf(c, v), off, tile, sp->mask);
}

xc_status_t lw_epilogue(lw_ctx_t* c, const lw_space_t* sp, lw_val_t* anchor_out) {
  const lw_phase_t* ph = c->phase;
  const xc_node_t* a = ph->nodes[0];
  lw_set_reg(c, a->outputs[0], lw_cast_to(c, anchor_out, a->outputs[0]->dtype));
  for (int i = 1; i < ph->num_nodes; i++) {
    const xc_node_t* n = ph->nodes[i];
    lw_val_t* ins[16] = {0};
    if (n->num_inputs > 16) return lw_unsupported(c, n, "too many inputs");
    for (int j = 0; j < n->num_inputs; j++)
      if (!(j == 1 && !strcmp(n->op_type, "CastLike"))) ins[j] = lw_load_at(c, sp, n->inputs[j]);
    lw_val_t* out = NULL;
    XC_RETURN_IF_ERROR(lw_ew_compute(c, n, ins, &out));
    lw_set_reg(c, n->outputs[0], lw_cast_to(c, out, n->outputs[0]->dtype));
  }
  for (int i = 0; i < ph->num_nodes; i++) {
    const xc_value_t* v = ph->nodes[i]->outputs[0];
    if (c->must_store[v->id]) lw_store_at(c, sp, v, lw_load_at(c, sp, v));
  }
  return NULL;
}

void lw_store_prologue(lw_ctx_t* c, const lw_space_t* sp) {
  for (int i = 0; c->phase && i < c->phase->num_pro; i++) {
    const xc_value_t* v = c->phase->pro[i]->outputs[0];
    if (c->must_store[v->id]) lw_store_at(c, sp, v, lw_load_at(c, sp, v));
  }
}

bool lw_const_ints(lw_ctx_t* c, const xc_value_t* v, int64_t* out, int max, int* n) {
  if (!v) return false;
  if (v->constant && xc_dtype_is_int(v->constant->dtype) && v->constant->numel <= max) {
    for (int64_t i = 0; i < v->constant->numel; i++) out[i] = xc_tensor_get_i64(v->constant, i);
    *n = (int)v->constant->numel;
    return true;
  }
  int64_t cnt = 0;
  const xc_dim_t* el = NULL;
  if (xc_value_known_elems(c->g, v, &cnt, &el) && el && cnt <= max) {
    for (int64_t i = 0; i < cnt; i++) {
      if (!xc_dim_is_static(el[i])) return false;
      out[i] = el[i].value;
    }
    *n = (int)cnt;
    return true;
  }
  return false;
}

/* ---- planning ---------------------------------------------------------------- */

static bool same_shape(const xc_value_t* a, const xc_value_t* b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!xc_dim_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

static bool phase_has_node(const lw_phase_t* p, const xc_node_t* n) {
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i] == n) return true;
  for (int i = 0; i < p->num_pro; i++)
    if (p->pro[i] == n) return true;
  return false;
}

/* Whether phase p (only elementwise nodes of the normalized input's shape)
 * can be the prologue of phase q, a Softmax/LayerNorm/RMSNorm-like anchor
 * that reads its last value as input 0: each value of p is read only by p,
 * by q's anchor as input 0, or outside the group (stored by the anchor's
 * final pass, which visits every element once). */
static bool can_prologue(const xc_graph_t* g, const xc_fusion_group_t* grp, const lw_phase_t* p,
                         const lw_phase_t* q) {
  const xc_node_t* a = q->nodes[0];
  if (p->num_pro || p->num_nodes + q->num_pro > LW_MAX_PHASE_NODES) return false;
  /* (a) the input of a normalization, whose final pass stores what leaves */
  bool norm = lw_is_normalize(a) && strcmp(a->op_type, "LpNormalization") != 0 &&
              a->inputs[0] == p->nodes[p->num_nodes - 1]->outputs[0];
  for (int i = 0; i < p->num_nodes; i++) {
    const xc_node_t* n = p->nodes[i];
    if (!lw_is_elementwise(n)) return false;
    const xc_value_t* v = n->outputs[0];
    if (norm && v->rank != a->inputs[0]->rank) return false;
    for (int j = 0; j < g->num_outputs; j++)
      if (g->outputs[j] == v && (!norm || !same_shape(v, a->inputs[0]))) return false;
    for (int j = 0; j < g->num_nodes; j++) {
      const xc_node_t* u = g->nodes[j];
      for (int k = 0; k < u->num_inputs; k++) {
        if (u->inputs[k] != v || phase_has_node(p, u)) continue;
        if (!node_in_group(grp, u)) {
          /* (b) must not need a store; (a) stores at the input's shape */
          if (!norm || !same_shape(v, a->inputs[0])) return false;
          continue;
        }
        if (norm && !(u == a && k == 0)) return false;
        /* (b) values read only by elementwise nodes of q, which load through
         * the prologue at their own index space */
        if (!norm && !(phase_has_node(q, u) && lw_is_elementwise(u))) return false;
      }
    }
  }
  return true;
}

/* The source value of a chain of views. */
static const xc_value_t* view_source(const xc_value_t* v) {
  while (v && v->producer && lw_is_view(v->producer)) v = v->producer->inputs[0];
  return v;
}

static bool same_numel(xc_graph_t* g, const xc_value_t* a, const xc_value_t* b) {
  xc_dim_t x = xc_dim_const(1), y = xc_dim_const(1);
  for (int i = 0; i < a->rank; i++) x = xc_dim_mul(g, x, a->dims[i]);
  for (int i = 0; i < b->rank; i++) y = xc_dim_mul(g, y, b->dims[i]);
  return xc_dim_equal(x, y);
}

static bool scalar_like(const xc_value_t* v) {
  for (int i = 0; i < v->rank; i++)
    if (!(xc_dim_is_static(v->dims[i]) && v->dims[i].value == 1)) return false;
  return true;
}

/* An elementwise node on a reshaped view of the phase's values (GEMM ->
 * Reshape -> Gelu): same element order, so it runs in the phase's space
 * when each input is such a view (or scalar-like) with the phase's numel. */
static bool can_join_flat(xc_graph_t* g, const lw_phase_t* p, const xc_node_t* n) {
  const xc_value_t* y = p->nodes[0]->outputs[0];
  if (!same_numel(g, y, n->outputs[0])) return false;
  bool any = false;
  for (int j = 0; j < n->num_inputs; j++) {
    const xc_value_t* v = n->inputs[j];
    if (!v || scalar_like(v)) continue;
    const xc_value_t* src = view_source(v);
    if (!src || !src->producer || !phase_has_node(p, src->producer) || !same_numel(g, v, y)) return false;
    any = true;
  }
  return any;
}

static bool can_join(xc_graph_t* g, const lw_phase_t* p, const xc_node_t* n) {
  if (!p || p->num_nodes >= LW_MAX_PHASE_NODES || !lw_is_elementwise(n)) return false;
  const xc_node_t* a = p->nodes[0];
  if (a->num_outputs != 1 || !a->outputs[0] || n->num_outputs != 1) return false;
  if (!same_shape(a->outputs[0], n->outputs[0])) return can_join_flat(g, p, n);
  for (int j = 0; j < n->num_inputs; j++) {
    const xc_value_t* v = n->inputs[j];
    if (!v || !v->producer) continue;
    if (lw_is_view(v->producer)) {
      const xc_value_t* s = view_source(v);
      if (s && s->producer && phase_has_node(p, s->producer)) return false;
    }
  }
  return true;
}

static xc_status_t emit_anchor(lw_ctx_t* c, const xc_node_t* n) {
  if (lw_is_elementwise(n)) return lw_emit_elementwise(c, n);
  if (lw_is_reduce(n)) return lw_emit_reduce(c, n);
  if (lw_is_normalize(n)) return lw_emit_normalize(c, n);
  if (lw_is_argreduce(n)) return lw_emit_argreduce(c, n);
  if (lw_is_loss(n)) return lw_emit_loss(c, n);
  if (lw_is_scatter(n)) return lw_emit_scatter(c, n);
  if (lw_is_quant(n)) return lw_emit_quant(c, n);
  if (lw_is_movement(n)) return lw_emit_movement(c, n);
  const char* op = n->op_type;
  if (n->domain && !strcmp(n->domain, "xcomp")) { /* channels-last composites of the layout pass */
    if (!strcmp(op, "ConvNHWC")) return lw_emit_conv(c, n);
    if (!strcmp(op, "MaxPoolNHWC") || !strcmp(op, "AveragePoolNHWC")) return lw_emit_pool(c, n);
  }
  if (n->domain && n->domain[0]) return lw_unsupported(c, n, "domain '%s' has no lowering", n->domain);
  if (!strcmp(op, "MatMul") || !strcmp(op, "Gemm") || !strcmp(op, "QLinearMatMul")) return lw_emit_gemm(c, n);
  if (!strcmp(op, "Einsum")) return lw_emit_einsum(c, n);
  if (!strcmp(op, "DynamicQuantizeLinear")) return lw_emit_dynamic_quant(c, n);
  if (lw_is_rnn(n)) return lw_emit_rnn(c, n);
  if (!strcmp(op, "Det")) return lw_emit_det(c, n);
  if (!strcmp(op, "DeformConv")) return lw_emit_deform_conv(c, n);
  if (!strcmp(op, "RoiAlign")) return lw_emit_roi_align(c, n);
  if (!strcmp(op, "MaxUnpool")) return lw_emit_max_unpool(c, n);
  if (!strcmp(op, "Col2Im")) return lw_emit_col2im(c, n);
  if (!strcmp(op, "Conv")) return lw_emit_conv(c, n);
  if (!strcmp(op, "ConvTranspose")) return lw_emit_convtranspose(c, n);
  if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") || !strcmp(op, "LpPool")) return lw_emit_pool(c, n);
  if (!strcmp(op, "Attention")) return lw_emit_attention(c, n);
  if (!strcmp(op, "CumSum")) return lw_emit_cumsum(c, n);
  if (!strcmp(op, "TopK")) return lw_emit_topk(c, n);
  if (!strcmp(op, "Resize")) return lw_emit_resize(c, n);
  if (!strcmp(op, "GridSample")) return lw_emit_grid_sample(c, n);
  return lw_unsupported(c, n, "no lowering for this op");
}

static bool is_consumer(const xc_node_t* u, const xc_value_t* v, int* index) {
  for (int q = 0; q < u->num_inputs; q++)
    if (u->inputs[q] == v) {
      if (index) *index = q;
      return true;
    }
  return false;
}

/* Attention groups: the head Split/Transpose/view chains that only feed
 * Q/K/V of the attention become index math of its loads, and a Transpose
 * that is the only reader of its output becomes the layout of its stores,
 * so the group is one parallel kernel. */
static void plan_absorbed(const xc_graph_t* g, const xc_fusion_group_t* grp, int max_id, bool* absorbed,
                          const xc_node_t** remap_out) {
  *remap_out = NULL;
  const xc_node_t* att = NULL;
  int count = 0;
  for (int i = 0; i < grp->num_nodes; i++)
    if (!strcmp(grp->nodes[i]->op_type, "Attention") && (!grp->nodes[i]->domain || !grp->nodes[i]->domain[0]))
      att = grp->nodes[i], count++;
  if (count != 1) return;
  for (int i = 0; i < grp->num_nodes; i++) {
    const xc_node_t* n = grp->nodes[i];
    if (n->id < max_id && (lw_is_view(n) || !strcmp(n->op_type, "Transpose") || !strcmp(n->op_type, "Split")))
      absorbed[n->id] = true;
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (int i = 0; i < grp->num_nodes; i++) {
      const xc_node_t* n = grp->nodes[i];
      if (n->id >= max_id || !absorbed[n->id]) continue;
      bool ok = n->inputs[0] && n->inputs[0]->rank <= LW_MAX_RANK;
      for (int o = 0; o < n->num_outputs && ok; o++) {
        const xc_value_t* v = n->outputs[o];
        if (!v) continue;
        for (int j = 0; j < g->num_outputs && ok; j++) ok = g->outputs[j] != v;
        for (int j = 0; j < g->num_nodes && ok; j++) {
          const xc_node_t* u = g->nodes[j];
          int q = -1;
          if (!is_consumer(u, v, &q)) continue;
          bool virt = u->id < max_id && absorbed[u->id] && node_in_group(grp, u);
          ok = virt || (u == att && q <= 2);
        }
      }
      if (!ok) {
        absorbed[n->id] = false;
        changed = true;
      }
    }
  }
  /* the output side */
  const xc_value_t* y = att->outputs[0];
  const xc_node_t* only = NULL;
  int readers = 0;
  for (int j = 0; j < g->num_nodes; j++)
    if (is_consumer(g->nodes[j], y, NULL)) only = g->nodes[j], readers++;
  for (int j = 0; j < g->num_outputs; j++)
    if (g->outputs[j] == y) readers += 2;
  if (readers == 1 && !strcmp(only->op_type, "Transpose") && node_in_group(grp, only) && only->id < max_id &&
      only->outputs[0] && only->outputs[0]->rank == y->rank) {
    absorbed[only->id] = true;
    *remap_out = only;
  }
}

/* "name:Op, name:Op (origins)" of a group, at most ~480 characters; NULL
 * when out of memory (messages then go without it). */
static char* group_node_list(const xc_fusion_group_t* grp) {
  enum { CAP = 512 };
  char* out = malloc(CAP);
  if (!out) return NULL;
  size_t n = 0;
  out[0] = 0;
  for (int i = 0; i < grp->num_nodes && n < CAP - 40; i++) {
    const xc_node_t* nd = grp->nodes[i];
    int w = snprintf(out + n, CAP - n, "%s%s:%s", i ? ", " : "", nd->name ? nd->name : "?", nd->op_type);
    n = w > 0 && (size_t)w < CAP - n ? n + (size_t)w : CAP - 1;
  }
  if (n >= CAP - 40 && n < CAP - 5) snprintf(out + n, CAP - n, ", ...");
  return out;
}

static xc_status_t lower_group(xc_lowered_module_t* m, xc_graph_t* g, const xc_fusion_plan_t* plan,
                               const xc_fusion_group_t* grp, const xc_tiled_limits_t* limits,
                               bool no_index_checks, bool* must_store, bool* absorbed, xc_lowered_kernel_t* out_kernel,
                               bool* has_kernel) {
  *has_kernel = false;
  const xc_node_t* remap_out = NULL;
  if (grp->kind == XC_GROUP_ATTENTION) plan_absorbed(g, grp, plan->num_nodes, absorbed, &remap_out);
  lw_phase_t* phases = calloc((size_t)(grp->num_nodes + 1), sizeof *phases);
  if (!phases) return xc_error_oom();
  int np = 0;
  for (int i = 0; i < grp->num_nodes; i++) {
    xc_node_t* n = grp->nodes[i];
    if (lw_is_view(n) || (n->id < plan->num_nodes && absorbed[n->id])) continue;
    if (np > 0 && can_join(g, &phases[np - 1], n)) {
      phases[np - 1].nodes[phases[np - 1].num_nodes++] = n;
    } else {
      phases[np].nodes[0] = n;
      phases[np++].num_nodes = 1;
    }
  }
  if (np == 0) {
    free(phases);
    return NULL;
  }
  /* elementwise phases feeding a normalization become its prologue */
  for (int p = np - 2; p >= 0; p--) {
    if (!can_prologue(g, grp, &phases[p], &phases[p + 1])) continue;
    lw_phase_t* q = &phases[p + 1];
    for (int i = 0; i < phases[p].num_nodes; i++) q->pro[q->num_pro++] = phases[p].nodes[i];
    memmove(&phases[p], &phases[p + 1], sizeof *phases * (size_t)(np - p - 1));
    np--;
  }
  /* values that leave their phase */
  for (int p = 0; p < np; p++)
    for (int i = 0; i < phases[p].num_nodes + phases[p].num_pro; i++) {
      const xc_node_t* n = i < phases[p].num_nodes ? phases[p].nodes[i] : phases[p].pro[i - phases[p].num_nodes];
      for (int o = 0; o < n->num_outputs; o++) {
        const xc_value_t* v = n->outputs[o];
        if (!v) continue;
        bool st = false;
        for (int j = 0; j < g->num_outputs && !st; j++) st = g->outputs[j] == v;
        for (int j = 0; j < g->num_nodes && !st; j++) {
          const xc_node_t* u = g->nodes[j];
          if (phase_has_node(&phases[p], u)) continue;
          for (int q = 0; q < u->num_inputs && !st; q++) st = u->inputs[q] == v;
        }
        must_store[v->id] = st;
      }
    }
  lw_ctx_t c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.plan = plan;
  c.grp = grp;
  c.must_store = must_store;
  c.absorbed = absorbed;
  c.remap_out = remap_out;
  c.limits = limits;
  c.multi_phase = np > 1;
  c.no_index_checks = no_index_checks;
  c.index_error_slot = m->num_index_error_slots;
  char name[64];
  snprintf(name, sizeof name, "g%d_%s", grp->id, xc_group_kind_name(grp->kind));
  for (char* s = name; *s; s++)
    if (*s == '-') *s = '_';
  xc_status_t s = xc_tiled_kernel_create(name, &c.k);
  for (int p = 0; p < np && !s; p++) {
    c.phase = &phases[p];
    c.phase_index = p;
    c.num_regs = 0;
    s = emit_anchor(&c, phases[p].nodes[0]);
    if (!s && c.err) s = c.err, c.err = NULL;
    if (!s && c.loop_depth) s = xc_error(XC_INTERNAL, "lowering: unclosed loop in group %d", grp->id);
  }
  if (!s) {
    /* a work-group size hint for emitters (every tile shape is valid with it) */
    int64_t threads[6] = {32, 64, 128, 256};
    int nt = 4;
    for (int i = 0; i < 2; i++) { /* a pattern program's sizes, in order */
      int64_t v = c.threads_extra[i];
      if (v <= 0 || v % 32) continue;
      int at = nt;
      while (at > 0 && threads[at - 1] >= v) at--;
      if (at < nt && threads[at] == v) continue;
      memmove(threads + at + 1, threads + at, sizeof threads[0] * (size_t)(nt - at));
      threads[at] = v, nt++;
    }
    xc_tiled_add_knob(c.k, "num_threads", XC_KNOB_THREADS, nt, threads, c.threads_default ? c.threads_default : 128);
    if (c.grid_rank == 0) {
      c.grid[0] = xc_texpr_const(c.k, 1);
      c.grid_rank = 1;
    }
    for (int i = 0; i < c.grid_rank; i++)
      if (!c.grid[i]) c.grid[i] = xc_texpr_const(c.k, 1);
    xc_tiled_set_grid(c.k, c.grid_rank, c.grid);
    s = xc_tiled_verify(c.k);
    if (s) s = xc_status_annotate(s, "lowering group %d", grp->id);
  }
  int64_t* knobs = NULL;
  if (!s) {
    knobs = calloc((size_t)(c.k->num_knobs + 1), sizeof *knobs);
    if (!knobs) s = xc_error_oom();
  }
  if (!s) s = xc_tiled_knobs_choose(c.k, limits, knobs);
  if (s) {
    free(knobs);
    xc_tiled_kernel_destroy(c.k);
    free(c.pvals), free(c.pdims), free(c.pv);
    free(phases);
    if (c.err) xc_status_free(c.err);
    return s;
  }
  out_kernel->group = grp->id;
  char* origin = group_node_list(grp);
  xc_tiled_set_origin(c.k, origin);
  free(origin);
  out_kernel->kernel = c.k;
  out_kernel->num_params = c.num_params;
  out_kernel->param_values = c.pvals;
  out_kernel->param_dims = c.pdims;
  out_kernel->knobs = knobs;
  out_kernel->num_index_checks = c.num_index_checks;
  out_kernel->index_error_param = c.num_index_checks ? c.index_error_param : -1;
  if (c.num_index_checks) m->num_index_error_slots++;
  free(c.pv);
  free(phases);
  *has_kernel = true;
  return NULL;
}

static xc_status_t add_step(xc_lowered_module_t* m, int* cap, xc_lowered_step_t st) {
  if (m->num_steps == *cap) {
    int nc = *cap ? *cap * 2 : 32;
    xc_lowered_step_t* a = realloc(m->steps, sizeof *a * (size_t)nc);
    if (!a) return xc_error_oom();
    m->steps = a;
    *cap = nc;
  }
  m->steps[m->num_steps++] = st;
  return NULL;
}

xc_status_t xc_lower(const xc_graph_t* g, const xc_fusion_plan_t* plan,
                     const xc_tiled_limits_t* limits, xc_lowered_module_t** out) {
  return xc_lower_with(g, plan, limits, NULL, out);
}

xc_status_t xc_lower_with(const xc_graph_t* cg, const xc_fusion_plan_t* plan, const xc_tiled_limits_t* limits,
                          const xc_lower_options_t* options, xc_lowered_module_t** out) {
  *out = NULL;
  bool no_checks = options && options->no_index_checks;
  xc_graph_t* g = (xc_graph_t*)cg; /* symbolic dim arithmetic allocates in the arena */
  xc_lowered_module_t* m = calloc(1, sizeof *m);
  bool* must_store = calloc((size_t)g->num_values + 1, sizeof *must_store);
  bool* absorbed = calloc((size_t)plan->num_nodes + 1, sizeof *absorbed);
  if (m) m->kernels = calloc((size_t)plan->num_groups + 1, sizeof *m->kernels);
  if (!m || !must_store || !absorbed || !m->kernels) {
    free(must_store);
    free(absorbed);
    xc_lowered_module_destroy(m);
    return xc_error_oom();
  }
  m->graph = g;
  int cap = 0;
  xc_status_t s = NULL;
  for (int gi = 0; gi < plan->num_groups && !s; gi++) {
    const xc_fusion_group_t* grp = &plan->groups[gi];
    bool has_kernel = false;
    s = lower_group(m, g, plan, grp, limits, no_checks, must_store, absorbed, &m->kernels[m->num_kernels],
                    &has_kernel);
    if (s) break;
    /* views whose source comes from outside the group alias before the kernel */
    for (int i = 0; i < grp->num_nodes && !s; i++) {
      xc_node_t* n = grp->nodes[i];
      if (!lw_is_view(n) || (n->id < plan->num_nodes && absorbed[n->id])) continue;
      const xc_value_t* src = view_source(n->inputs[0]);
      if (src && src->producer && node_in_group(grp, src->producer) && has_kernel) continue;
      xc_lowered_step_t st = {XC_STEP_ALIAS, 0, n->outputs[0], n->inputs[0]};
      s = add_step(m, &cap, st);
    }
    if (!s && has_kernel) {
      xc_lowered_step_t st = {XC_STEP_KERNEL, m->num_kernels++, NULL, NULL};
      s = add_step(m, &cap, st);
    }
    for (int i = 0; i < grp->num_nodes && !s && has_kernel; i++) {
      xc_node_t* n = grp->nodes[i];
      if (!lw_is_view(n) || (n->id < plan->num_nodes && absorbed[n->id])) continue;
      const xc_value_t* src = view_source(n->inputs[0]);
      if (!(src && src->producer && node_in_group(grp, src->producer))) continue;
      xc_lowered_step_t st = {XC_STEP_ALIAS, 0, n->outputs[0], n->inputs[0]};
      s = add_step(m, &cap, st);
    }
  }
  if (!s) s = xc_graph_take_error(g);
  free(must_store);
  free(absorbed);
  if (s) {
    xc_lowered_module_destroy(m);
    return s;
  }
  *out = m;
  return NULL;
}

void xc_lowered_module_destroy(xc_lowered_module_t* m) {
  if (!m) return;
  for (int i = 0; i < m->num_kernels; i++) {
    xc_tiled_kernel_destroy(m->kernels[i].kernel);
    free(m->kernels[i].param_values);
    free(m->kernels[i].param_dims);
    free(m->kernels[i].knobs);
  }
  free(m->kernels);
  free(m->steps);
  free(m);
}

/* ---- running with the tiled interpreter ------------------------------------ */

typedef struct run_state {
  const xc_graph_t* g;
  xc_tensor_t** of;     /* by value id; aliases share */
  bool* owned;          /* by value id: of[id] is owned here */
  xc_symbind_t bind;
} run_state_t;

static xc_status_t eval_shape(run_state_t* r, const xc_value_t* v, int64_t* dims) {
  for (int i = 0; i < v->rank; i++) {
    xc_status_t s = xc_dim_eval(v->dims[i], &r->bind, &dims[i]);
    if (s) {
      /* a dim that no graph input binds is data-dependent */
      xc_status_t u = xc_error(XC_UNSUPPORTED, "data-dependent shape of '%s': %s", v->name,
                               xc_status_message(s));
      xc_status_free(s);
      return u;
    }
  }
  return NULL;
}

static const xc_tensor_t* constant_of(const xc_value_t* v) {
  if (v->constant) return v->constant;
  if (v->producer && !strcmp(v->producer->op_type, "Constant"))
    return xc_node_attr_tensor(v->producer, "value");
  return NULL;
}

static bool is_alias_dst(const xc_lowered_module_t* m, const xc_value_t* v) {
  for (int i = 0; i < m->num_steps; i++)
    if (m->steps[i].kind == XC_STEP_ALIAS && m->steps[i].dst == v) return true;
  return false;
}

xc_status_t xc_lowered_run_interp(const xc_lowered_module_t* m, int num_inputs,
                                  const xc_tensor_t* const* inputs, xc_tensor_t** outputs) {
  const xc_graph_t* g = m->graph;
  if (num_inputs != g->num_inputs)
    return xc_error(XC_INVALID_ARGUMENT, "lowered module expects %d inputs, got %d", g->num_inputs,
                    num_inputs);
  for (int i = 0; i < g->num_outputs; i++) outputs[i] = NULL;
  run_state_t r;
  memset(&r, 0, sizeof r);
  r.g = g;
  xc_tensor_t* index_error = NULL; /* the index-error record, when a kernel checks indices */
  int nv = g->num_values + 1;
  int maxid = 0;
  for (int i = 0; i < g->num_values; i++)
    if (g->values[i] && g->values[i]->id > maxid) maxid = g->values[i]->id;
  if (maxid + 1 > nv) nv = maxid + 1;
  r.of = calloc((size_t)nv, sizeof *r.of);
  r.owned = calloc((size_t)nv, sizeof *r.owned);
  xc_symbind_init(&r.bind);
  xc_status_t s = (!r.of || !r.owned) ? xc_error_oom() : NULL;
  /* inputs: check and bind shapes */
  for (int i = 0; i < g->num_inputs && !s; i++) {
    const xc_value_t* v = g->inputs[i];
    const xc_tensor_t* t = inputs[i];
    if (!t || t->dtype != v->dtype || t->rank != v->rank) {
      s = xc_error(XC_INVALID_ARGUMENT, "input '%s': expected %s rank %d", v->name,
                   xc_dtype_name(v->dtype), v->rank);
      break;
    }
    for (int d = 0; d < v->rank && !s; d++) {
      s = xc_dim_unify(v->dims[d], t->dims[d], &r.bind);
      if (s) s = xc_status_annotate(s, "input '%s' dim %d", v->name, d);
    }
    r.of[v->id] = (xc_tensor_t*)t;
  }
  /* constants and computed values */
  for (int i = 0; i < g->num_values && !s; i++) {
    const xc_value_t* v = g->values[i];
    if (!v || r.of[v->id]) continue;
    const xc_tensor_t* ct = constant_of(v);
    if (ct) {
      r.of[v->id] = (xc_tensor_t*)ct;
      continue;
    }
    if (!v->producer || is_alias_dst(m, v) || v->rank < 0) continue;
    int64_t dims[XC_MAX_RANK];
    s = eval_shape(&r, v, dims);
    if (!s) s = xc_tensor_create(v->dtype, v->rank, dims, &r.of[v->id]);
    if (!s) r.owned[v->id] = true;
  }
  /* Aliases share their source's buffer: resolve them all up front (a view
   * of a kernel's output is read by later phases of the same kernel). */
  bool progress = true;
  while (progress && !s) {
    progress = false;
    for (int i = 0; i < m->num_steps; i++) {
      const xc_lowered_step_t* st = &m->steps[i];
      if (st->kind == XC_STEP_ALIAS && !r.of[st->dst->id] && r.of[st->src->id]) {
        r.of[st->dst->id] = r.of[st->src->id];
        progress = true;
      }
    }
  }
  for (int i = 0; i < m->num_steps && !s; i++) {
    const xc_lowered_step_t* st = &m->steps[i];
    if (st->kind == XC_STEP_ALIAS) {
      xc_tensor_t* src = r.of[st->src->id];
      if (!src || r.of[st->dst->id] != src) {
        s = xc_error(XC_INTERNAL, "alias source '%s' has no buffer", st->src->name);
        break;
      }
      int64_t dims[XC_MAX_RANK], numel = 1;
      s = eval_shape(&r, st->dst, dims);
      for (int d = 0; d < st->dst->rank && !s; d++) numel *= dims[d];
      if (!s && (numel != src->numel || st->dst->dtype != src->dtype))
        s = xc_error(XC_INTERNAL, "alias '%s' -> '%s': %lld elements of %s vs %lld of %s",
                     st->src->name, st->dst->name, (long long)src->numel, xc_dtype_name(src->dtype),
                     (long long)numel, xc_dtype_name(st->dst->dtype));
      if (!s) r.of[st->dst->id] = src;
      continue;
    }
    const xc_lowered_kernel_t* lk = &m->kernels[st->index];
    xc_tiled_arg_t* args = calloc((size_t)lk->num_params + 1, sizeof *args);
    if (!args) {
      s = xc_error_oom();
      break;
    }
    for (int p = 0; p < lk->num_params && !s; p++) {
      if (lk->num_index_checks && p == lk->index_error_param) {
        if (!index_error) {
          int64_t words = (int64_t)m->num_index_error_slots * XC_INDEX_ERROR_WORDS;
          s = xc_tensor_create(XC_I64, 1, &words, &index_error); /* zeroed */
        }
        args[p].buffer = index_error;
      } else if (lk->param_values[p]) {
        args[p].buffer = r.of[lk->param_values[p]->id];
        if (!args[p].buffer)
          s = xc_error(XC_INTERNAL, "kernel %s: value '%s' has no buffer", lk->kernel->name,
                       lk->param_values[p]->name);
      } else {
        s = xc_dim_eval(lk->param_dims[p], &r.bind, &args[p].scalar);
      }
    }
    if (!s) s = xc_tiled_run(lk->kernel, lk->knobs, lk->num_params, args);
    if (!s && lk->num_index_checks) s = xc_index_error_status(g, true, (const int64_t*)index_error->data, index_error->numel);
    free(args);
  }
  for (int i = 0; i < g->num_outputs && !s; i++) {
    const xc_value_t* v = g->outputs[i];
    xc_tensor_t* t = r.of[v->id];
    int64_t dims[XC_MAX_RANK];
    s = t ? eval_shape(&r, v, dims) : xc_error(XC_INTERNAL, "output '%s' was not computed", v->name);
    if (!s) s = xc_tensor_create(v->dtype, v->rank, dims, &outputs[i]);
    if (!s && outputs[i]->numel != t->numel)
      s = xc_error(XC_INTERNAL, "output '%s' has %lld elements, expected %lld", v->name,
                   (long long)t->numel, (long long)outputs[i]->numel);
    if (!s && t->numel) memcpy(outputs[i]->data, t->data, (size_t)t->numel * xc_dtype_size(t->dtype));
  }
  if (s)
    for (int i = 0; i < g->num_outputs; i++) {
      xc_tensor_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  for (int i = 0; i < nv && r.of; i++)
    if (r.owned[i]) xc_tensor_destroy(r.of[i]);
  free(r.of);
  free(r.owned);
  xc_symbind_free(&r.bind);
  xc_tensor_destroy(index_error);
  return s;
}
