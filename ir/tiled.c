/* Tiled IR: kernel objects, the builder API and the typing rule of every op
 * (xc_tiled_infer, shared with the verifier so both agree by construction). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

/* ---- names ---------------------------------------------------------------- */

static const char* const kOpNames[XC_TOP_COUNT] = {
    [XC_TOP_CONST] = "const",       [XC_TOP_PROGRAM_ID] = "program_id",
    [XC_TOP_NUM_PROGRAMS] = "num_programs", [XC_TOP_KNOB] = "knob",
    [XC_TOP_ARANGE] = "arange",     [XC_TOP_EXPAND_DIMS] = "expand_dims",
    [XC_TOP_BROADCAST] = "broadcast", [XC_TOP_TRANS] = "trans",
    [XC_TOP_LOAD] = "load",         [XC_TOP_STORE] = "store",
    [XC_TOP_ALLOC] = "alloc",       [XC_TOP_BARRIER] = "barrier",
    [XC_TOP_NEG] = "neg",           [XC_TOP_ABS] = "abs",
    [XC_TOP_EXP] = "exp",           [XC_TOP_LOG] = "log",
    [XC_TOP_SQRT] = "sqrt",         [XC_TOP_RSQRT] = "rsqrt",
    [XC_TOP_ERF] = "erf",           [XC_TOP_TANH] = "tanh",
    [XC_TOP_SIGMOID] = "sigmoid",   [XC_TOP_FLOOR] = "floor",
    [XC_TOP_CEIL] = "ceil",         [XC_TOP_SIN] = "sin",
    [XC_TOP_COS] = "cos",           [XC_TOP_RECIP] = "recip",
    [XC_TOP_ATAN] = "atan",         [XC_TOP_SHL] = "shl",
    [XC_TOP_SHR] = "shr",
    [XC_TOP_NOT] = "not",           [XC_TOP_ADD] = "add",
    [XC_TOP_SUB] = "sub",           [XC_TOP_MUL] = "mul",
    [XC_TOP_DIV] = "div",           [XC_TOP_REM] = "rem",
    [XC_TOP_MAX] = "max",           [XC_TOP_MIN] = "min",
    [XC_TOP_POW] = "pow",           [XC_TOP_AND] = "and",
    [XC_TOP_OR] = "or",             [XC_TOP_XOR] = "xor",
    [XC_TOP_CMP] = "cmp",           [XC_TOP_SELECT] = "select",
    [XC_TOP_CAST] = "cast",         [XC_TOP_REDUCE] = "reduce",
    [XC_TOP_DOT] = "dot",           [XC_TOP_FOR] = "for",
    [XC_TOP_YIELD] = "yield",
};

const char* xc_tiled_opcode_name(xc_tiled_opcode_t op) {
  return (unsigned)op < XC_TOP_COUNT && kOpNames[op] ? kOpNames[op] : "?";
}
const char* xc_tiled_scope_name(xc_tiled_scope_t s) {
  switch (s) {
    case XC_SCOPE_GLOBAL: return "global";
    case XC_SCOPE_SHARED: return "shared";
    case XC_SCOPE_PRIVATE: return "private";
  }
  return "?";
}
const char* xc_tiled_role_name(xc_tiled_role_t r) {
  switch (r) {
    case XC_ROLE_IN: return "in";
    case XC_ROLE_OUT: return "out";
    case XC_ROLE_INOUT: return "inout";
  }
  return "?";
}
const char* xc_tiled_cmp_name(int c) {
  static const char* const n[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return c >= 0 && c < 6 ? n[c] : "?";
}
const char* xc_tiled_reduce_name(int r) {
  static const char* const n[] = {"sum", "max", "min", "prod"};
  return r >= 0 && r < 4 ? n[r] : "?";
}
bool xc_tiled_is_unary(xc_tiled_opcode_t op) { return op >= XC_TOP_NEG && op <= XC_TOP_NOT; }
bool xc_tiled_is_binary(xc_tiled_opcode_t op) { return op >= XC_TOP_ADD && op <= XC_TOP_SHR; }

/* ---- limits --------------------------------------------------------------- */

void xc_tiled_limits_init_unlimited(xc_tiled_limits_t* l) {
  for (int i = 0; i < XC_TILED_LIMIT_COUNT; i++) l->value[i] = INT64_MAX;
  l->value[XC_TILED_LIMIT_SIMD_WIDTH] = 1;
  l->value[XC_TILED_LIMIT_MMA] = 0;
  l->value[XC_TILED_LIMIT_STAGED_BYTES] = l->value[XC_TILED_LIMIT_SHARED_BYTES];
}
void xc_tiled_limits_init_gpu(xc_tiled_limits_t* l) {
  l->value[XC_TILED_LIMIT_MAX_THREADS] = 1024;
  l->value[XC_TILED_LIMIT_SHARED_BYTES] = 48 * 1024;
  l->value[XC_TILED_LIMIT_SIMD_WIDTH] = 32;
  l->value[XC_TILED_LIMIT_MAX_VECTOR] = 4;
  l->value[XC_TILED_LIMIT_MAX_TILE_ELEMS] = 16384;
  l->value[XC_TILED_LIMIT_MMA] = 0;
  l->value[XC_TILED_LIMIT_STAGED_BYTES] = l->value[XC_TILED_LIMIT_SHARED_BYTES];
}
/* A CPU program runs on one core: "threads" become iterations of the loops
 * over a tile (any count is fine), shared memory is a stack array that
 * should stay in L2, and tiles live in L1-resident arrays. */
void xc_tiled_limits_init_cpu(xc_tiled_limits_t* l) {
  l->value[XC_TILED_LIMIT_MAX_THREADS] = 1024;
  l->value[XC_TILED_LIMIT_SHARED_BYTES] = 256 * 1024;
  l->value[XC_TILED_LIMIT_SIMD_WIDTH] = 8;
  l->value[XC_TILED_LIMIT_MAX_VECTOR] = 8;
  l->value[XC_TILED_LIMIT_MAX_TILE_ELEMS] = 8192;
  l->value[XC_TILED_LIMIT_MMA] = 0;
  l->value[XC_TILED_LIMIT_STAGED_BYTES] = l->value[XC_TILED_LIMIT_SHARED_BYTES];
}
const char* xc_tiled_limit_name(xc_tiled_limit_t l) {
  static const char* const n[] = {"max_threads", "shared_bytes", "simd_width", "max_vector",
                                  "max_tile_elems", "mma", "staged_bytes"};
  return (unsigned)l < XC_TILED_LIMIT_COUNT ? n[l] : "?";
}

/* ---- kernel --------------------------------------------------------------- */

static void record_error(xc_tiled_kernel_t* k, xc_status_t st) {
  if (!st) return;
  if (k->pending_error) xc_status_free(st);
  else k->pending_error = st;
}

static void fail(xc_tiled_kernel_t* k, xc_code_t code, const char* fmt, ...) XC_PRINTF(3, 4);
static void fail(xc_tiled_kernel_t* k, xc_code_t code, const char* fmt, ...) {
  if (k->pending_error) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  k->pending_error = xc_error(code, "tiled kernel '%s': %s", k->name ? k->name : "", buf);
}

static void* kalloc(xc_tiled_kernel_t* k, size_t n) {
  void* p = xc_arena_alloc(k->arena, n);
  if (!p) record_error(k, xc_error_oom());
  return p;
}

static xc_tiled_block_t* new_block(xc_tiled_kernel_t* k, xc_tiled_op_t* parent) {
  xc_tiled_block_t* b = kalloc(k, sizeof *b);
  if (b) b->parent = parent;
  return b;
}

xc_status_t xc_tiled_kernel_create(const char* name, xc_tiled_kernel_t** out) {
  *out = NULL;
  xc_tiled_kernel_t* k = calloc(1, sizeof *k);
  if (!k) return xc_error_oom();
  k->arena = xc_arena_create();
  if (!k->arena) {
    free(k);
    return xc_error_oom();
  }
  k->name = xc_arena_strdup(k->arena, name ? name : "kernel");
  k->body = new_block(k, NULL);
  if (!k->name || !k->body) {
    xc_tiled_kernel_destroy(k);
    return xc_error_oom();
  }
  k->insert_stack[0] = k->body;
  k->insert_depth = 1;
  *out = k;
  return NULL;
}

void xc_tiled_set_origin(xc_tiled_kernel_t* k, const char* origin) {
  k->origin = origin ? xc_arena_strdup(k->arena, origin) : NULL;
}

void xc_tiled_set_pattern(xc_tiled_kernel_t* k, const char* pattern) {
  k->pattern = pattern ? xc_arena_strdup(k->arena, pattern) : NULL;
}

void xc_tiled_kernel_destroy(xc_tiled_kernel_t* k) {
  if (!k) return;
  xc_status_free(k->pending_error);
  xc_arena_destroy(k->arena);
  free(k);
}

xc_status_t xc_tiled_kernel_take_error(xc_tiled_kernel_t* k) {
  xc_status_t st = k->pending_error;
  k->pending_error = NULL;
  return st;
}

/* Grows an arena array (old storage is abandoned to the arena). */
static bool grow(xc_tiled_kernel_t* k, void** items, int* cap, int count, size_t elem) {
  if (count < *cap) return true;
  int ncap = *cap ? *cap * 2 : 8;
  void* n = kalloc(k, (size_t)ncap * elem);
  if (!n) return false;
  if (count) memcpy(n, *items, (size_t)count * elem);
  *items = n;
  *cap = ncap;
  return true;
}

static xc_tiled_value_t* new_value(xc_tiled_kernel_t* k, const xc_tiled_type_t* t) {
  xc_tiled_value_t* v = kalloc(k, sizeof *v);
  if (!v) return NULL;
  v->id = k->num_values++;
  v->type = *t;
  v->param = -1;
  return v;
}

static bool name_taken(const xc_tiled_kernel_t* k, const char* name) {
  for (int i = 0; i < k->num_params; i++)
    if (strcmp(k->params[i]->name, name) == 0) return true;
  for (int i = 0; i < k->num_knobs; i++)
    if (strcmp(k->knobs[i].name, name) == 0) return true;
  return false;
}

static xc_tiled_value_t* add_param(xc_tiled_kernel_t* k, const char* name,
                                   const xc_tiled_type_t* t) {
  if (k->pending_error) return NULL;
  if (!name || !*name) {
    fail(k, XC_INVALID_ARGUMENT, "parameter without a name");
    return NULL;
  }
  if (name_taken(k, name)) {
    fail(k, XC_INVALID_ARGUMENT, "duplicate parameter or knob name '%s'", name);
    return NULL;
  }
  if (!grow(k, (void**)&k->params, &k->cap_params, k->num_params, sizeof(void*))) return NULL;
  xc_tiled_value_t* v = new_value(k, t);
  if (!v) return NULL;
  v->name = xc_arena_strdup(k->arena, name);
  v->param = k->num_params;
  k->params[k->num_params++] = v;
  return v;
}

xc_tiled_value_t* xc_tiled_param_buffer(xc_tiled_kernel_t* k, const char* name,
                                        xc_dtype_t dtype, xc_tiled_role_t role) {
  if (xc_dtype_size(dtype) == 0) {
    fail(k, XC_INVALID_ARGUMENT, "buffer '%s' has no element type", name ? name : "");
    return NULL;
  }
  if (role < XC_ROLE_IN || role > XC_ROLE_INOUT) {
    fail(k, XC_INVALID_ARGUMENT, "buffer '%s' has an unknown role", name ? name : "");
    return NULL;
  }
  xc_tiled_type_t t = {.kind = XC_TILED_MEMREF, .dtype = dtype, .scope = XC_SCOPE_GLOBAL,
                       .role = role};
  return add_param(k, name, &t);
}

xc_tiled_value_t* xc_tiled_param_scalar(xc_tiled_kernel_t* k, const char* name) {
  xc_tiled_type_t t = {.kind = XC_TILED_TENSOR, .dtype = XC_I64};
  return add_param(k, name, &t);
}

/* ---- knobs and expressions ------------------------------------------------ */

int xc_tiled_add_knob(xc_tiled_kernel_t* k, const char* name, xc_tiled_knob_kind_t kind,
                      int num_candidates, const int64_t* candidates, int64_t default_value) {
  if (k->pending_error) return -1;
  if (!name || !*name || name_taken(k, name)) {
    fail(k, XC_INVALID_ARGUMENT, "knob name '%s' is empty or already used", name ? name : "");
    return -1;
  }
  if (num_candidates < 1 || num_candidates > XC_TILED_MAX_KNOB_CANDIDATES) {
    fail(k, XC_INVALID_ARGUMENT, "knob '%s' needs 1..%d candidates, got %d", name,
         XC_TILED_MAX_KNOB_CANDIDATES, num_candidates);
    return -1;
  }
  bool has_default = false;
  for (int i = 0; i < num_candidates; i++) {
    if (candidates[i] <= 0) {
      fail(k, XC_INVALID_ARGUMENT, "knob '%s' candidate %lld is not positive", name,
           (long long)candidates[i]);
      return -1;
    }
    if (candidates[i] == default_value) has_default = true;
  }
  if (!has_default) {
    fail(k, XC_INVALID_ARGUMENT, "knob '%s' default %lld is not one of its candidates", name,
         (long long)default_value);
    return -1;
  }
  if (!grow(k, (void**)&k->knobs, &k->cap_knobs, k->num_knobs, sizeof(xc_tiled_knob_t)))
    return -1;
  xc_tiled_knob_t* kn = &k->knobs[k->num_knobs];
  memset(kn, 0, sizeof *kn);
  kn->name = xc_arena_strdup(k->arena, name);
  kn->kind = kind;
  kn->num_candidates = num_candidates;
  memcpy(kn->candidates, candidates, (size_t)num_candidates * sizeof(int64_t));
  kn->default_value = default_value;
  return k->num_knobs++;
}

int xc_tiled_find_knob(const xc_tiled_kernel_t* k, const char* name) {
  for (int i = 0; i < k->num_knobs; i++)
    if (strcmp(k->knobs[i].name, name) == 0) return i;
  return -1;
}

int64_t xc_tiled_threads(const xc_tiled_kernel_t* k, const int64_t* knob_values) {
  int t = xc_tiled_knob_of_kind(k, XC_KNOB_THREADS);
  return t >= 0 ? knob_values[t] : XC_TILED_DEFAULT_THREADS;
}

int xc_tiled_knob_of_kind(const xc_tiled_kernel_t* k, xc_tiled_knob_kind_t kind) {
  for (int i = 0; i < k->num_knobs; i++)
    if (k->knobs[i].kind == kind) return i;
  return -1;
}

void xc_tiled_add_constraint(xc_tiled_kernel_t* k, const xc_tiled_expr_t* e) {
  if (k->pending_error) return;
  if (!e) {
    fail(k, XC_INVALID_ARGUMENT, "NULL constraint");
    return;
  }
  if (!grow(k, (void**)&k->constraints, &k->cap_constraints, k->num_constraints,
            sizeof(void*)))
    return;
  k->constraints[k->num_constraints++] = e;
}

static const xc_tiled_expr_t* new_expr(xc_tiled_kernel_t* k, xc_tiled_expr_kind_t kind,
                                       int64_t v, const xc_tiled_expr_t* a,
                                       const xc_tiled_expr_t* b) {
  xc_tiled_expr_t* e = kalloc(k, sizeof *e);
  if (!e) return NULL;
  e->kind = kind;
  e->value = v;
  e->a = a;
  e->b = b;
  return e;
}

const xc_tiled_expr_t* xc_texpr_const(xc_tiled_kernel_t* k, int64_t v) {
  return new_expr(k, XC_TEXPR_CONST, v, NULL, NULL);
}
const xc_tiled_expr_t* xc_texpr_param(xc_tiled_kernel_t* k, const xc_tiled_value_t* p) {
  if (!p) return NULL;
  if (p->param < 0 || p->type.kind != XC_TILED_TENSOR) {
    fail(k, XC_INVALID_ARGUMENT, "expression refers to a value that is not a scalar parameter");
    return NULL;
  }
  return new_expr(k, XC_TEXPR_PARAM, p->param, NULL, NULL);
}
const xc_tiled_expr_t* xc_texpr_knob(xc_tiled_kernel_t* k, int knob) {
  if (knob < 0 || knob >= k->num_knobs) {
    fail(k, XC_INVALID_ARGUMENT, "expression refers to unknown knob %d", knob);
    return NULL;
  }
  return new_expr(k, XC_TEXPR_KNOB, knob, NULL, NULL);
}
const xc_tiled_expr_t* xc_texpr_limit(xc_tiled_kernel_t* k, xc_tiled_limit_t l) {
  if ((unsigned)l >= XC_TILED_LIMIT_COUNT) {
    fail(k, XC_INVALID_ARGUMENT, "expression refers to unknown limit %d", (int)l);
    return NULL;
  }
  return new_expr(k, XC_TEXPR_LIMIT, l, NULL, NULL);
}
const xc_tiled_expr_t* xc_texpr_binary(xc_tiled_kernel_t* k, xc_tiled_expr_kind_t kind,
                                       const xc_tiled_expr_t* a, const xc_tiled_expr_t* b) {
  if (!a || !b) return NULL;
  if (kind < XC_TEXPR_ADD || kind > XC_TEXPR_AND) {
    fail(k, XC_INVALID_ARGUMENT, "expression kind %d is not binary", (int)kind);
    return NULL;
  }
  return new_expr(k, kind, 0, a, b);
}

void xc_tiled_set_grid(xc_tiled_kernel_t* k, int rank, const xc_tiled_expr_t* const* dims) {
  if (k->pending_error) return;
  if (rank < 1 || rank > XC_TILED_MAX_GRID) {
    fail(k, XC_INVALID_ARGUMENT, "grid rank %d is not in 1..3", rank);
    return;
  }
  for (int i = 0; i < rank; i++)
    if (!dims[i]) {
      fail(k, XC_INVALID_ARGUMENT, "grid axis %d has no expression", i);
      return;
    }
  k->grid_rank = rank;
  for (int i = 0; i < rank; i++) k->grid[i] = dims[i];
}

/* ---- type helpers ----------------------------------------------------------- */

bool xc_tiled_dim_equal(xc_tiled_dim_t a, xc_tiled_dim_t b) {
  if (a.knob >= 0 || b.knob >= 0) return a.knob == b.knob;
  return a.value == b.value;
}

bool xc_tiled_type_equal(const xc_tiled_type_t* a, const xc_tiled_type_t* b) {
  if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!xc_tiled_dim_equal(a->dims[i], b->dims[i])) return false;
  if (a->kind == XC_TILED_MEMREF && (a->scope != b->scope || a->role != b->role)) return false;
  return true;
}

static void append(char* buf, size_t n, size_t* pos, const char* fmt, ...) XC_PRINTF(4, 5);
static void append(char* buf, size_t n, size_t* pos, const char* fmt, ...) {
  if (*pos >= n) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *pos, n - *pos, fmt, ap);
  va_end(ap);
  if (w > 0) *pos += (size_t)w;
}

static void append_dim(const xc_tiled_kernel_t* k, xc_tiled_dim_t d, char* buf, size_t n,
                       size_t* pos) {
  if (d.knob >= 0 && d.knob < k->num_knobs) append(buf, n, pos, "%s", k->knobs[d.knob].name);
  else if (d.knob >= 0) append(buf, n, pos, "knob#%d", d.knob);
  else append(buf, n, pos, "%lld", (long long)d.value);
}

const char* xc_tiled_type_str(const xc_tiled_kernel_t* k, const xc_tiled_type_t* t, char* buf,
                              size_t n) {
  size_t pos = 0;
  buf[0] = 0;
  if (t->kind == XC_TILED_MEMREF) {
    append(buf, n, &pos, "memref<%s %s", xc_tiled_scope_name(t->scope), xc_dtype_name(t->dtype));
    if (t->scope != XC_SCOPE_GLOBAL) {
      append(buf, n, &pos, "[");
      for (int i = 0; i < t->rank; i++) {
        if (i) append(buf, n, &pos, ",");
        append_dim(k, t->dims[i], buf, n, &pos);
      }
      append(buf, n, &pos, "]>");
    } else {
      append(buf, n, &pos, " %s>", xc_tiled_role_name(t->role));
    }
    return buf;
  }
  append(buf, n, &pos, "%s", xc_dtype_name(t->dtype));
  if (t->rank > 0) {
    append(buf, n, &pos, "[");
    for (int i = 0; i < t->rank; i++) {
      if (i) append(buf, n, &pos, ",");
      append_dim(k, t->dims[i], buf, n, &pos);
    }
    append(buf, n, &pos, "]");
  }
  return buf;
}

const char* xc_tiled_op_str(const xc_tiled_op_t* op, char* buf, size_t n) {
  snprintf(buf, n, "op %d (%s)", op->id, xc_tiled_opcode_name(op->opcode));
  return buf;
}

/* ---- typing rules ------------------------------------------------------------ */

static xc_status_t check_dims(const xc_tiled_kernel_t* k, int rank, const xc_tiled_dim_t* dims) {
  if (rank < 0 || rank > XC_TILED_MAX_RANK)
    return xc_error(XC_INVALID_ARGUMENT, "rank %d exceeds the tile rank limit %d", rank,
                    XC_TILED_MAX_RANK);
  for (int i = 0; i < rank; i++) {
    if (dims[i].knob >= k->num_knobs)
      return xc_error(XC_INVALID_ARGUMENT, "dim %d refers to unknown knob %d", i, dims[i].knob);
    if (dims[i].knob < 0 && (dims[i].value < 1 || dims[i].value > XC_TILED_MAX_TILE_ELEMS))
      return xc_error(XC_INVALID_ARGUMENT, "dim %d is %lld (must be 1..%lld)", i,
                      (long long)dims[i].value, (long long)XC_TILED_MAX_TILE_ELEMS);
  }
  return NULL;
}

static bool dim_is_one(xc_tiled_dim_t d) { return d.knob < 0 && d.value == 1; }

/* numpy-style broadcasting of tile shapes: dims match when structurally
 * equal (same knob or same constant) or when one is the constant 1. */
static xc_status_t broadcast_types(const xc_tiled_kernel_t* k, const xc_tiled_type_t* a,
                                   const xc_tiled_type_t* b, xc_tiled_type_t* out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  out->rank = r;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    xc_tiled_dim_t da = ia >= 0 ? a->dims[ia] : xc_tiled_dim_const(1);
    xc_tiled_dim_t db = ib >= 0 ? b->dims[ib] : xc_tiled_dim_const(1);
    if (xc_tiled_dim_equal(da, db) || dim_is_one(db)) out->dims[i] = da;
    else if (dim_is_one(da)) out->dims[i] = db;
    else {
      char s1[96], s2[96];
      return xc_error(XC_INVALID_ARGUMENT, "shapes %s and %s do not broadcast",
                      xc_tiled_type_str(k, a, s1, sizeof s1), xc_tiled_type_str(k, b, s2, sizeof s2));
    }
  }
  return NULL;
}

static xc_status_t need_tensor(const xc_tiled_value_t* v, const char* what) {
  if (!v) return xc_error(XC_INVALID_ARGUMENT, "missing %s operand", what);
  if (v->type.kind != XC_TILED_TENSOR)
    return xc_error(XC_INVALID_ARGUMENT, "%s operand is a memref, not a scalar or tile", what);
  return NULL;
}

static bool dtype_ok(xc_dtype_t t) { return t > XC_DTYPE_UNDEFINED && t < XC_DTYPE_COUNT; }

static xc_status_t infer_unary(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                               xc_tiled_type_t* out) {
  const xc_tiled_value_t* x = op->operands[0];
  XC_RETURN_IF_ERROR(need_tensor(x, "x"));
  xc_dtype_t t = x->type.dtype;
  bool ok;
  switch (op->opcode) {
    case XC_TOP_NEG:
    case XC_TOP_ABS: ok = xc_dtype_is_float(t) || xc_dtype_is_int(t); break;
    case XC_TOP_NOT: ok = t == XC_BOOL || xc_dtype_is_int(t); break;
    default: ok = xc_dtype_is_float(t); break;
  }
  if (!ok)
    return xc_error(XC_INVALID_ARGUMENT, "%s does not accept %s", xc_tiled_opcode_name(op->opcode),
                    xc_dtype_name(t));
  *out = x->type;
  return NULL;
}

static xc_status_t infer_binary(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                                xc_tiled_type_t* out) {
  const xc_tiled_value_t *a = op->operands[0], *b = op->operands[1];
  XC_RETURN_IF_ERROR(need_tensor(a, "lhs"));
  XC_RETURN_IF_ERROR(need_tensor(b, "rhs"));
  xc_dtype_t t = a->type.dtype;
  if (t != b->type.dtype)
    return xc_error(XC_INVALID_ARGUMENT, "operand dtypes differ: %s vs %s (insert a cast)",
                    xc_dtype_name(t), xc_dtype_name(b->type.dtype));
  bool ok;
  switch (op->opcode) {
    case XC_TOP_AND:
    case XC_TOP_OR:
    case XC_TOP_XOR: ok = t == XC_BOOL || xc_dtype_is_int(t); break;
    case XC_TOP_SHL:
    case XC_TOP_SHR: ok = xc_dtype_is_int(t); break;
    case XC_TOP_POW: ok = xc_dtype_is_float(t); break;
    case XC_TOP_CMP: ok = true; break;
    default: ok = xc_dtype_is_float(t) || xc_dtype_is_int(t); break;
  }
  if (!ok)
    return xc_error(XC_INVALID_ARGUMENT, "%s does not accept %s", xc_tiled_opcode_name(op->opcode),
                    xc_dtype_name(t));
  *out = a->type;
  XC_RETURN_IF_ERROR(broadcast_types(k, &a->type, &b->type, out));
  if (op->opcode == XC_TOP_CMP) {
    if (op->cmp < XC_CMP_EQ || op->cmp > XC_CMP_GE)
      return xc_error(XC_INVALID_ARGUMENT, "unknown comparison %d", op->cmp);
    out->dtype = XC_BOOL;
  }
  return NULL;
}

static bool is_index_dtype(xc_dtype_t t) {
  return t == XC_I32 || t == XC_I64 || t == XC_U32 || t == XC_I16 || t == XC_I8;
}

static xc_status_t infer_memory(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                                xc_tiled_type_t* out) {
  bool is_load = op->opcode == XC_TOP_LOAD;
  int need = is_load ? 2 : 3;
  if (op->num_operands != 4)
    return xc_error(XC_INVALID_ARGUMENT, "%s needs 4 operand slots, has %d",
                    xc_tiled_opcode_name(op->opcode), op->num_operands);
  for (int i = 0; i < need; i++)
    if (!op->operands[i]) return xc_error(XC_INVALID_ARGUMENT, "operand %d is missing", i);
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* offs = op->operands[1];
  const xc_tiled_value_t* mask = is_load ? op->operands[2] : op->operands[3];
  const xc_tiled_value_t* data = is_load ? op->operands[3] : op->operands[2];
  if (mem->type.kind != XC_TILED_MEMREF)
    return xc_error(XC_INVALID_ARGUMENT, "operand 0 is not a memref");
  if (is_load && mem->type.role == XC_ROLE_OUT)
    return xc_error(XC_INVALID_ARGUMENT, "load from '%s', an output-only buffer (declare it inout)",
                    mem->name ? mem->name : "?");
  if (!is_load && mem->type.role == XC_ROLE_IN)
    return xc_error(XC_INVALID_ARGUMENT, "store to '%s', an input buffer",
                    mem->name ? mem->name : "?");
  XC_RETURN_IF_ERROR(need_tensor(offs, "offsets"));
  if (!is_index_dtype(offs->type.dtype))
    return xc_error(XC_INVALID_ARGUMENT, "offsets must be an integer tile, got %s",
                    xc_dtype_name(offs->type.dtype));
  xc_tiled_type_t shape = offs->type;
  if (mask) {
    XC_RETURN_IF_ERROR(need_tensor(mask, "mask"));
    if (mask->type.dtype != XC_BOOL)
      return xc_error(XC_INVALID_ARGUMENT, "mask must be bool, got %s",
                      xc_dtype_name(mask->type.dtype));
    xc_tiled_type_t b = shape;
    XC_RETURN_IF_ERROR(broadcast_types(k, &shape, &mask->type, &b));
    shape = b;
  }
  if (data) {
    XC_RETURN_IF_ERROR(need_tensor(data, is_load ? "other" : "value"));
    if (data->type.dtype != mem->type.dtype)
      return xc_error(XC_INVALID_ARGUMENT, "%s is %s but the buffer holds %s",
                      is_load ? "other" : "value", xc_dtype_name(data->type.dtype),
                      xc_dtype_name(mem->type.dtype));
    xc_tiled_type_t b = shape;
    XC_RETURN_IF_ERROR(broadcast_types(k, &shape, &data->type, &b));
    if (!is_load && b.rank != shape.rank)
      return xc_error(XC_INVALID_ARGUMENT, "stored value has a higher rank than its offsets");
    if (!is_load) {
      for (int i = 0; i < b.rank; i++)
        if (!xc_tiled_dim_equal(b.dims[i], shape.dims[i]))
          return xc_error(XC_INVALID_ARGUMENT, "stored value does not fit the offsets' shape");
    }
    if (is_load) shape = b;
  }
  memset(out, 0, sizeof *out);
  out->kind = XC_TILED_TENSOR;
  out->dtype = is_load ? mem->type.dtype : XC_DTYPE_UNDEFINED;
  out->rank = shape.rank;
  memcpy(out->dims, shape.dims, sizeof out->dims);
  return NULL;
}

static xc_status_t infer_dot(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                             xc_tiled_type_t* out) {
  const xc_tiled_value_t *a = op->operands[0], *b = op->operands[1], *c = op->operands[2];
  XC_RETURN_IF_ERROR(need_tensor(a, "a"));
  XC_RETURN_IF_ERROR(need_tensor(b, "b"));
  XC_RETURN_IF_ERROR(need_tensor(c, "acc"));
  char s1[96], s2[96], s3[96];
  if (a->type.rank != 2 || b->type.rank != 2 || c->type.rank != 2 ||
      !xc_tiled_dim_equal(a->type.dims[1], b->type.dims[0]) ||
      !xc_tiled_dim_equal(a->type.dims[0], c->type.dims[0]) ||
      !xc_tiled_dim_equal(b->type.dims[1], c->type.dims[1]))
    return xc_error(XC_INVALID_ARGUMENT, "dot shapes do not match: %s x %s into %s",
                    xc_tiled_type_str(k, &a->type, s1, sizeof s1),
                    xc_tiled_type_str(k, &b->type, s2, sizeof s2),
                    xc_tiled_type_str(k, &c->type, s3, sizeof s3));
  xc_dtype_t ta = a->type.dtype, tc = c->type.dtype;
  if (ta != b->type.dtype)
    return xc_error(XC_INVALID_ARGUMENT, "dot operands differ in dtype: %s vs %s",
                    xc_dtype_name(ta), xc_dtype_name(b->type.dtype));
  bool ok = false;
  if (ta == XC_F32 || ta == XC_F16 || ta == XC_BF16 || ta == XC_F8E4M3FN || ta == XC_F8E5M2)
    ok = tc == XC_F32;
  else if (ta == XC_F64) ok = tc == XC_F64;
  else if (ta == XC_I8 || ta == XC_U8) ok = tc == XC_I32;
  if (!ok)
    return xc_error(XC_INVALID_ARGUMENT, "dot of %s needs an %s accumulator, got %s",
                    xc_dtype_name(ta),
                    ta == XC_F64 ? "f64" : (ta == XC_I8 || ta == XC_U8) ? "i32" : "f32",
                    xc_dtype_name(tc));
  *out = c->type;
  return NULL;
}

xc_status_t xc_tiled_infer(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                           const xc_tiled_type_t* declared, xc_tiled_type_t* out) {
  memset(out, 0, sizeof *out);
  out->kind = XC_TILED_TENSOR;
  xc_tiled_opcode_t oc = op->opcode;
  int expect = -1;
  if (xc_tiled_is_unary(oc) || oc == XC_TOP_CAST || oc == XC_TOP_EXPAND_DIMS ||
      oc == XC_TOP_BROADCAST || oc == XC_TOP_TRANS || oc == XC_TOP_REDUCE)
    expect = 1;
  else if (xc_tiled_is_binary(oc) || oc == XC_TOP_CMP) expect = 2;
  else if (oc == XC_TOP_SELECT || oc == XC_TOP_DOT) expect = 3;
  else if (oc == XC_TOP_LOAD || oc == XC_TOP_STORE) expect = 4;
  else if (oc == XC_TOP_CONST || oc == XC_TOP_PROGRAM_ID || oc == XC_TOP_NUM_PROGRAMS ||
           oc == XC_TOP_KNOB || oc == XC_TOP_ARANGE || oc == XC_TOP_ALLOC ||
           oc == XC_TOP_BARRIER)
    expect = 0;
  if (expect < 0) return xc_error(XC_INTERNAL, "no single-op typing rule for %s",
                                  xc_tiled_opcode_name(oc));
  if (op->num_operands != expect)
    return xc_error(XC_INVALID_ARGUMENT, "expects %d operands, has %d", expect, op->num_operands);
  if (xc_tiled_is_unary(oc)) return infer_unary(k, op, out);
  if (xc_tiled_is_binary(oc) || oc == XC_TOP_CMP) return infer_binary(k, op, out);
  switch (oc) {
    case XC_TOP_CONST:
      if (!declared || !dtype_ok(declared->dtype) || declared->kind != XC_TILED_TENSOR)
        return xc_error(XC_INVALID_ARGUMENT, "constant without a dtype");
      XC_RETURN_IF_ERROR(check_dims(k, declared->rank, declared->dims));
      *out = *declared;
      return NULL;
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS:
      if (op->axis < 0 || op->axis >= XC_TILED_MAX_GRID)
        return xc_error(XC_INVALID_ARGUMENT, "grid axis %lld is not in 0..2", (long long)op->axis);
      out->dtype = XC_I64;
      return NULL;
    case XC_TOP_KNOB:
      if (op->axis < 0 || op->axis >= k->num_knobs)
        return xc_error(XC_INVALID_ARGUMENT, "unknown knob %lld", (long long)op->axis);
      out->dtype = XC_I64;
      return NULL;
    case XC_TOP_ARANGE:
      if (!declared || declared->rank != 1)
        return xc_error(XC_INVALID_ARGUMENT, "arange needs one dim");
      XC_RETURN_IF_ERROR(check_dims(k, 1, declared->dims));
      out->dtype = XC_I64;
      out->rank = 1;
      out->dims[0] = declared->dims[0];
      return NULL;
    case XC_TOP_EXPAND_DIMS: {
      const xc_tiled_value_t* x = op->operands[0];
      XC_RETURN_IF_ERROR(need_tensor(x, "x"));
      if (x->type.rank >= XC_TILED_MAX_RANK)
        return xc_error(XC_INVALID_ARGUMENT, "expand_dims of a rank-%d tile exceeds rank %d",
                        x->type.rank, XC_TILED_MAX_RANK);
      if (op->axis < 0 || op->axis > x->type.rank)
        return xc_error(XC_INVALID_ARGUMENT, "expand_dims axis %lld is not in 0..%d",
                        (long long)op->axis, x->type.rank);
      *out = x->type;
      out->rank = x->type.rank + 1;
      for (int i = 0, j = 0; i < out->rank; i++)
        out->dims[i] = i == op->axis ? xc_tiled_dim_const(1) : x->type.dims[j++];
      return NULL;
    }
    case XC_TOP_BROADCAST: {
      const xc_tiled_value_t* x = op->operands[0];
      XC_RETURN_IF_ERROR(need_tensor(x, "x"));
      if (!declared) return xc_error(XC_INVALID_ARGUMENT, "broadcast without a target shape");
      XC_RETURN_IF_ERROR(check_dims(k, declared->rank, declared->dims));
      if (declared->rank < x->type.rank)
        return xc_error(XC_INVALID_ARGUMENT, "broadcast to a lower rank");
      xc_tiled_type_t target = x->type, res;
      target.rank = declared->rank;
      memcpy(target.dims, declared->dims, sizeof target.dims);
      XC_RETURN_IF_ERROR(broadcast_types(k, &target, &x->type, &res));
      for (int i = 0; i < target.rank; i++)
        if (!xc_tiled_dim_equal(res.dims[i], target.dims[i]))
          return xc_error(XC_INVALID_ARGUMENT, "cannot broadcast to the target shape");
      *out = target;
      return NULL;
    }
    case XC_TOP_TRANS: {
      const xc_tiled_value_t* x = op->operands[0];
      XC_RETURN_IF_ERROR(need_tensor(x, "x"));
      if (x->type.rank != 2)
        return xc_error(XC_INVALID_ARGUMENT, "trans needs a 2-D tile, got rank %d", x->type.rank);
      *out = x->type;
      out->dims[0] = x->type.dims[1];
      out->dims[1] = x->type.dims[0];
      return NULL;
    }
    case XC_TOP_LOAD:
    case XC_TOP_STORE:
      return infer_memory(k, op, out);
    case XC_TOP_ALLOC:
      if (!declared || declared->kind != XC_TILED_MEMREF || !dtype_ok(declared->dtype))
        return xc_error(XC_INVALID_ARGUMENT, "allocation without a type");
      if (declared->scope != XC_SCOPE_SHARED && declared->scope != XC_SCOPE_PRIVATE)
        return xc_error(XC_INVALID_ARGUMENT, "allocations are shared or private");
      if (declared->rank < 1)
        return xc_error(XC_INVALID_ARGUMENT, "allocation needs a shape");
      XC_RETURN_IF_ERROR(check_dims(k, declared->rank, declared->dims));
      *out = *declared;
      out->role = XC_ROLE_INOUT;
      return NULL;
    case XC_TOP_BARRIER:
      out->dtype = XC_DTYPE_UNDEFINED;
      return NULL;
    case XC_TOP_SELECT: {
      const xc_tiled_value_t *c = op->operands[0], *a = op->operands[1], *b = op->operands[2];
      XC_RETURN_IF_ERROR(need_tensor(c, "cond"));
      XC_RETURN_IF_ERROR(need_tensor(a, "a"));
      XC_RETURN_IF_ERROR(need_tensor(b, "b"));
      if (c->type.dtype != XC_BOOL)
        return xc_error(XC_INVALID_ARGUMENT, "select condition must be bool, got %s",
                        xc_dtype_name(c->type.dtype));
      if (a->type.dtype != b->type.dtype)
        return xc_error(XC_INVALID_ARGUMENT, "select branches differ in dtype: %s vs %s",
                        xc_dtype_name(a->type.dtype), xc_dtype_name(b->type.dtype));
      xc_tiled_type_t t1;
      XC_RETURN_IF_ERROR(broadcast_types(k, &a->type, &b->type, &t1));
      t1.kind = XC_TILED_TENSOR;
      t1.dtype = a->type.dtype;
      XC_RETURN_IF_ERROR(broadcast_types(k, &t1, &c->type, out));
      out->kind = XC_TILED_TENSOR;
      out->dtype = a->type.dtype;
      return NULL;
    }
    case XC_TOP_CAST: {
      const xc_tiled_value_t* x = op->operands[0];
      XC_RETURN_IF_ERROR(need_tensor(x, "x"));
      if (!declared || !dtype_ok(declared->dtype))
        return xc_error(XC_INVALID_ARGUMENT, "cast without a target dtype");
      *out = x->type;
      out->dtype = declared->dtype;
      return NULL;
    }
    case XC_TOP_REDUCE: {
      const xc_tiled_value_t* x = op->operands[0];
      XC_RETURN_IF_ERROR(need_tensor(x, "x"));
      if (x->type.rank < 1)
        return xc_error(XC_INVALID_ARGUMENT, "reduce of a scalar");
      if (op->axis < 0 || op->axis >= x->type.rank)
        return xc_error(XC_INVALID_ARGUMENT, "reduce axis %lld is not in 0..%d",
                        (long long)op->axis, x->type.rank - 1);
      if (op->reduce < XC_REDUCE_SUM || op->reduce > XC_REDUCE_PROD)
        return xc_error(XC_INVALID_ARGUMENT, "unknown reduction %d", op->reduce);
      if (!xc_dtype_is_float(x->type.dtype) && !xc_dtype_is_int(x->type.dtype))
        return xc_error(XC_INVALID_ARGUMENT, "reduce does not accept %s",
                        xc_dtype_name(x->type.dtype));
      *out = x->type;
      out->rank = x->type.rank - 1;
      for (int i = 0, j = 0; i < x->type.rank; i++)
        if (i != op->axis) out->dims[j++] = x->type.dims[i];
      for (int i = out->rank; i < XC_TILED_MAX_RANK; i++) out->dims[i] = xc_tiled_dim_const(0);
      return NULL;
    }
    case XC_TOP_DOT:
      return infer_dot(k, op, out);
    default:
      return xc_error(XC_INTERNAL, "no typing rule for %s", xc_tiled_opcode_name(oc));
  }
}

/* ---- builder -------------------------------------------------------------------- */

static xc_tiled_block_t* current_block(xc_tiled_kernel_t* k) {
  return k->insert_stack[k->insert_depth - 1];
}

static xc_tiled_op_t* new_op(xc_tiled_kernel_t* k, xc_tiled_opcode_t oc, int num_operands,
                             xc_tiled_value_t* const* operands) {
  xc_tiled_op_t* op = kalloc(k, sizeof *op);
  if (!op) return NULL;
  op->id = k->num_ops++;
  op->opcode = oc;
  op->num_operands = num_operands;
  if (num_operands) {
    op->operands = kalloc(k, (size_t)num_operands * sizeof(void*));
    if (!op->operands) return NULL;
    memcpy(op->operands, operands, (size_t)num_operands * sizeof(void*));
  }
  return op;
}

static bool append_op(xc_tiled_kernel_t* k, xc_tiled_block_t* b, xc_tiled_op_t* op) {
  if (!grow(k, (void**)&b->ops, &b->cap_ops, b->num_ops, sizeof(void*))) return false;
  b->ops[b->num_ops++] = op;
  op->parent = b;
  return true;
}

static bool set_results(xc_tiled_kernel_t* k, xc_tiled_op_t* op, int n,
                        const xc_tiled_type_t* types) {
  op->num_results = n;
  if (!n) return true;
  op->results = kalloc(k, (size_t)n * sizeof(void*));
  if (!op->results) return false;
  for (int i = 0; i < n; i++) {
    op->results[i] = new_value(k, &types[i]);
    if (!op->results[i]) return false;
    op->results[i]->def = op;
  }
  return true;
}

/* Creates, type-checks and appends a single-result (or no-result) op. */
static xc_tiled_op_t* emit(xc_tiled_kernel_t* k, xc_tiled_opcode_t oc, int n,
                           xc_tiled_value_t* const* operands, const xc_tiled_type_t* declared,
                           void (*set_attrs)(xc_tiled_op_t*, const void*), const void* attrs,
                           bool required_mask) {
  if (k->pending_error) return NULL;
  for (int i = 0; i < n; i++)
    if (!operands[i] && (required_mask || i < 2)) {
      /* NULL operands after an earlier failure; without a failure this is a
       * caller bug reported as an error. */
      fail(k, XC_INVALID_ARGUMENT, "%s: operand %d is NULL", xc_tiled_opcode_name(oc), i);
      return NULL;
    }
  xc_tiled_op_t* op = new_op(k, oc, n, operands);
  if (!op) return NULL;
  if (set_attrs) set_attrs(op, attrs);
  xc_tiled_type_t t;
  xc_status_t st = xc_tiled_infer(k, op, declared, &t);
  if (st) {
    char where[64];
    record_error(k, xc_status_annotate(st, "tiled kernel '%s': %s", k->name,
                                       xc_tiled_op_str(op, where, sizeof where)));
    return NULL;
  }
  bool has_result = !(oc == XC_TOP_STORE || oc == XC_TOP_BARRIER);
  if (!set_results(k, op, has_result ? 1 : 0, &t)) return NULL;
  if (!append_op(k, current_block(k), op)) return NULL;
  return op;
}

static xc_tiled_value_t* result0(xc_tiled_op_t* op) { return op ? op->results[0] : NULL; }

static void set_axis(xc_tiled_op_t* op, const void* p) { op->axis = *(const int64_t*)p; }

static xc_tiled_type_t tensor_type(xc_dtype_t dt, int rank, const xc_tiled_dim_t* dims) {
  xc_tiled_type_t t;
  memset(&t, 0, sizeof t);
  t.kind = XC_TILED_TENSOR;
  t.dtype = dt;
  t.rank = rank;
  for (int i = 0; i < rank && i < XC_TILED_MAX_RANK; i++) t.dims[i] = dims[i];
  return t;
}

typedef struct const_attrs {
  double f;
  int64_t i;
} const_attrs_t;
static void set_const(xc_tiled_op_t* op, const void* p) {
  const const_attrs_t* c = p;
  op->f = c->f;
  op->i = c->i;
}

xc_tiled_value_t* xc_tiled_const_f(xc_tiled_kernel_t* k, xc_dtype_t dtype, double v, int rank,
                                   const xc_tiled_dim_t* dims) {
  if (rank < 0 || rank > XC_TILED_MAX_RANK) {
    fail(k, XC_INVALID_ARGUMENT, "const: rank %d is not in 0..3", rank);
    return NULL;
  }
  xc_tiled_type_t t = tensor_type(dtype, rank, dims);
  const_attrs_t c = {xc_dtype_is_int(dtype) ? 0 : v, xc_dtype_is_int(dtype) ? (int64_t)v : 0};
  return result0(emit(k, XC_TOP_CONST, 0, NULL, &t, set_const, &c, true));
}

xc_tiled_value_t* xc_tiled_const_i(xc_tiled_kernel_t* k, xc_dtype_t dtype, int64_t v, int rank,
                                   const xc_tiled_dim_t* dims) {
  if (rank < 0 || rank > XC_TILED_MAX_RANK) {
    fail(k, XC_INVALID_ARGUMENT, "const: rank %d is not in 0..3", rank);
    return NULL;
  }
  xc_tiled_type_t t = tensor_type(dtype, rank, dims);
  const_attrs_t c = {xc_dtype_is_int(dtype) ? 0 : (double)v, xc_dtype_is_int(dtype) ? v : 0};
  return result0(emit(k, XC_TOP_CONST, 0, NULL, &t, set_const, &c, true));
}

xc_tiled_value_t* xc_tiled_program_id(xc_tiled_kernel_t* k, int axis) {
  int64_t a = axis;
  return result0(emit(k, XC_TOP_PROGRAM_ID, 0, NULL, NULL, set_axis, &a, true));
}
xc_tiled_value_t* xc_tiled_num_programs(xc_tiled_kernel_t* k, int axis) {
  int64_t a = axis;
  return result0(emit(k, XC_TOP_NUM_PROGRAMS, 0, NULL, NULL, set_axis, &a, true));
}
xc_tiled_value_t* xc_tiled_knob_value(xc_tiled_kernel_t* k, int knob) {
  int64_t a = knob;
  return result0(emit(k, XC_TOP_KNOB, 0, NULL, NULL, set_axis, &a, true));
}
xc_tiled_value_t* xc_tiled_arange(xc_tiled_kernel_t* k, xc_tiled_dim_t n) {
  xc_tiled_type_t t = tensor_type(XC_I64, 1, &n);
  return result0(emit(k, XC_TOP_ARANGE, 0, NULL, &t, NULL, NULL, true));
}
xc_tiled_value_t* xc_tiled_expand_dims(xc_tiled_kernel_t* k, xc_tiled_value_t* x, int axis) {
  int64_t a = axis;
  return result0(emit(k, XC_TOP_EXPAND_DIMS, 1, &x, NULL, set_axis, &a, true));
}
xc_tiled_value_t* xc_tiled_broadcast(xc_tiled_kernel_t* k, xc_tiled_value_t* x, int rank,
                                     const xc_tiled_dim_t* dims) {
  if (rank < 0 || rank > XC_TILED_MAX_RANK) {
    fail(k, XC_INVALID_ARGUMENT, "broadcast: rank %d is not in 0..3", rank);
    return NULL;
  }
  xc_tiled_type_t t = tensor_type(XC_DTYPE_UNDEFINED, rank, dims);
  return result0(emit(k, XC_TOP_BROADCAST, 1, &x, &t, NULL, NULL, true));
}
xc_tiled_value_t* xc_tiled_trans(xc_tiled_kernel_t* k, xc_tiled_value_t* x) {
  return result0(emit(k, XC_TOP_TRANS, 1, &x, NULL, NULL, NULL, true));
}

xc_tiled_value_t* xc_tiled_load(xc_tiled_kernel_t* k, xc_tiled_value_t* mem,
                                xc_tiled_value_t* offsets, xc_tiled_value_t* mask,
                                xc_tiled_value_t* other) {
  xc_tiled_value_t* ops[4] = {mem, offsets, mask, other};
  return result0(emit(k, XC_TOP_LOAD, 4, ops, NULL, NULL, NULL, false));
}

xc_tiled_op_t* xc_tiled_store(xc_tiled_kernel_t* k, xc_tiled_value_t* mem,
                              xc_tiled_value_t* offsets, xc_tiled_value_t* value,
                              xc_tiled_value_t* mask) {
  if (!value && !k->pending_error) {
    fail(k, XC_INVALID_ARGUMENT, "store: value is NULL");
    return NULL;
  }
  xc_tiled_value_t* ops[4] = {mem, offsets, value, mask};
  return emit(k, XC_TOP_STORE, 4, ops, NULL, NULL, NULL, false);
}

xc_tiled_value_t* xc_tiled_alloc(xc_tiled_kernel_t* k, xc_tiled_scope_t scope, xc_dtype_t dtype,
                                 int rank, const xc_tiled_dim_t* dims) {
  if (rank < 1 || rank > XC_TILED_MAX_RANK) {
    fail(k, XC_INVALID_ARGUMENT, "alloc: rank %d is not in 1..3", rank);
    return NULL;
  }
  xc_tiled_type_t t = tensor_type(dtype, rank, dims);
  t.kind = XC_TILED_MEMREF;
  t.scope = scope;
  t.role = XC_ROLE_INOUT;
  return result0(emit(k, XC_TOP_ALLOC, 0, NULL, &t, NULL, NULL, true));
}

xc_tiled_op_t* xc_tiled_barrier(xc_tiled_kernel_t* k) {
  return emit(k, XC_TOP_BARRIER, 0, NULL, NULL, NULL, NULL, true);
}

xc_tiled_value_t* xc_tiled_unary(xc_tiled_kernel_t* k, xc_tiled_opcode_t oc, xc_tiled_value_t* x) {
  if (!xc_tiled_is_unary(oc)) {
    fail(k, XC_INVALID_ARGUMENT, "%s is not a unary op", xc_tiled_opcode_name(oc));
    return NULL;
  }
  return result0(emit(k, oc, 1, &x, NULL, NULL, NULL, true));
}

xc_tiled_value_t* xc_tiled_binary(xc_tiled_kernel_t* k, xc_tiled_opcode_t oc, xc_tiled_value_t* a,
                                  xc_tiled_value_t* b) {
  if (!xc_tiled_is_binary(oc)) {
    fail(k, XC_INVALID_ARGUMENT, "%s is not a binary op", xc_tiled_opcode_name(oc));
    return NULL;
  }
  xc_tiled_value_t* ops[2] = {a, b};
  return result0(emit(k, oc, 2, ops, NULL, NULL, NULL, true));
}

static void set_cmp(xc_tiled_op_t* op, const void* p) { op->cmp = *(const int*)p; }
xc_tiled_value_t* xc_tiled_cmp(xc_tiled_kernel_t* k, xc_tiled_cmp_t cmp, xc_tiled_value_t* a,
                               xc_tiled_value_t* b) {
  xc_tiled_value_t* ops[2] = {a, b};
  int c = cmp;
  return result0(emit(k, XC_TOP_CMP, 2, ops, NULL, set_cmp, &c, true));
}

xc_tiled_value_t* xc_tiled_select(xc_tiled_kernel_t* k, xc_tiled_value_t* cond,
                                  xc_tiled_value_t* a, xc_tiled_value_t* b) {
  xc_tiled_value_t* ops[3] = {cond, a, b};
  return result0(emit(k, XC_TOP_SELECT, 3, ops, NULL, NULL, NULL, true));
}

xc_tiled_value_t* xc_tiled_cast(xc_tiled_kernel_t* k, xc_tiled_value_t* x, xc_dtype_t dtype) {
  xc_tiled_type_t t = tensor_type(dtype, 0, NULL);
  return result0(emit(k, XC_TOP_CAST, 1, &x, &t, NULL, NULL, true));
}

typedef struct reduce_attrs {
  int64_t axis;
  int kind;
} reduce_attrs_t;
static void set_reduce(xc_tiled_op_t* op, const void* p) {
  const reduce_attrs_t* r = p;
  op->axis = r->axis;
  op->reduce = r->kind;
}
xc_tiled_value_t* xc_tiled_reduce(xc_tiled_kernel_t* k, xc_tiled_reduce_kind_t kind,
                                  xc_tiled_value_t* x, int axis) {
  reduce_attrs_t r = {axis, kind};
  return result0(emit(k, XC_TOP_REDUCE, 1, &x, NULL, set_reduce, &r, true));
}

xc_tiled_value_t* xc_tiled_dot(xc_tiled_kernel_t* k, xc_tiled_value_t* a, xc_tiled_value_t* b,
                               xc_tiled_value_t* acc) {
  xc_tiled_value_t* ops[3] = {a, b, acc};
  return result0(emit(k, XC_TOP_DOT, 3, ops, NULL, NULL, NULL, true));
}

/* ---- for loops ------------------------------------------------------------------- */

static xc_status_t check_bound(const xc_tiled_value_t* v, const char* what) {
  if (!v) return xc_error(XC_INVALID_ARGUMENT, "loop %s is missing", what);
  if (v->type.kind != XC_TILED_TENSOR || v->type.rank != 0 || v->type.dtype != XC_I64)
    return xc_error(XC_INVALID_ARGUMENT, "loop %s must be an i64 scalar", what);
  return NULL;
}

xc_tiled_op_t* xc_tiled_for_begin(xc_tiled_kernel_t* k, xc_tiled_value_t* lb,
                                  xc_tiled_value_t* ub, xc_tiled_value_t* step, int num_carried,
                                  xc_tiled_value_t* const* inits) {
  if (k->pending_error) return NULL;
  if (num_carried < 0 || (num_carried > 0 && !inits)) {
    fail(k, XC_INVALID_ARGUMENT, "for: bad carried-value list");
    return NULL;
  }
  xc_status_t st = check_bound(lb, "lower bound");
  if (!st) st = check_bound(ub, "upper bound");
  if (!st) st = check_bound(step, "step");
  for (int i = 0; !st && i < num_carried; i++) {
    if (!inits[i]) st = xc_error(XC_INVALID_ARGUMENT, "for: carried value %d is NULL", i);
    else if (inits[i]->type.kind != XC_TILED_TENSOR)
      st = xc_error(XC_INVALID_ARGUMENT, "for: carried value %d is a memref", i);
  }
  if (st) {
    record_error(k, xc_status_annotate(st, "tiled kernel '%s'", k->name));
    return NULL;
  }
  if (k->insert_depth >= (int)(sizeof k->insert_stack / sizeof k->insert_stack[0])) {
    fail(k, XC_UNSUPPORTED, "for loops nested too deeply");
    return NULL;
  }
  int n = 3 + num_carried;
  xc_tiled_value_t** ops = kalloc(k, (size_t)n * sizeof(void*));
  if (!ops) return NULL;
  ops[0] = lb;
  ops[1] = ub;
  ops[2] = step;
  for (int i = 0; i < num_carried; i++) ops[3 + i] = inits[i];
  xc_tiled_op_t* op = new_op(k, XC_TOP_FOR, n, ops);
  if (!op) return NULL;
  op->body = new_block(k, op);
  if (!op->body) return NULL;
  xc_tiled_block_t* b = op->body;
  b->num_args = 1 + num_carried;
  b->args = kalloc(k, (size_t)b->num_args * sizeof(void*));
  if (!b->args) return NULL;
  xc_tiled_type_t ivt = tensor_type(XC_I64, 0, NULL);
  for (int i = 0; i < b->num_args; i++) {
    b->args[i] = new_value(k, i == 0 ? &ivt : &inits[i - 1]->type);
    if (!b->args[i]) return NULL;
    b->args[i]->owner = b;
  }
  xc_tiled_type_t* types = kalloc(k, (size_t)(num_carried ? num_carried : 1) * sizeof *types);
  if (!types) return NULL;
  for (int i = 0; i < num_carried; i++) types[i] = inits[i]->type;
  if (!set_results(k, op, num_carried, types)) return NULL;
  if (!append_op(k, current_block(k), op)) return NULL;
  k->insert_stack[k->insert_depth++] = b;
  return op;
}

xc_tiled_value_t* xc_tiled_for_iv(xc_tiled_op_t* loop) {
  return loop ? loop->body->args[0] : NULL;
}
xc_tiled_value_t* xc_tiled_for_arg(xc_tiled_op_t* loop, int i) {
  return loop && i >= 0 && i + 1 < loop->body->num_args ? loop->body->args[1 + i] : NULL;
}
xc_tiled_value_t* xc_tiled_for_result(xc_tiled_op_t* loop, int i) {
  return loop && i >= 0 && i < loop->num_results ? loop->results[i] : NULL;
}

void xc_tiled_for_end(xc_tiled_kernel_t* k, xc_tiled_op_t* loop, int num_yield,
                      xc_tiled_value_t* const* yields) {
  if (k->pending_error || !loop) return;
  if (current_block(k) != loop->body) {
    fail(k, XC_INVALID_ARGUMENT, "for_end does not close the innermost open loop");
    return;
  }
  if (num_yield != loop->num_results) {
    fail(k, XC_INVALID_ARGUMENT, "loop carries %d values but yields %d", loop->num_results,
         num_yield);
    return;
  }
  for (int i = 0; i < num_yield; i++) {
    if (!yields[i]) {
      fail(k, XC_INVALID_ARGUMENT, "yield %d is NULL", i);
      return;
    }
    if (!xc_tiled_type_equal(&yields[i]->type, &loop->results[i]->type)) {
      char s1[96], s2[96];
      fail(k, XC_INVALID_ARGUMENT, "loop-carried value %d is %s but the body yields %s", i,
           xc_tiled_type_str(k, &loop->results[i]->type, s1, sizeof s1),
           xc_tiled_type_str(k, &yields[i]->type, s2, sizeof s2));
      return;
    }
  }
  xc_tiled_op_t* y = new_op(k, XC_TOP_YIELD, num_yield, yields);
  if (!y) return;
  if (!append_op(k, loop->body, y)) return;
  k->insert_depth--;
}

xc_tiled_value_t* xc_tiled_name(xc_tiled_kernel_t* k, xc_tiled_value_t* v, const char* name) {
  if (v && name) v->name = xc_arena_strdup(k->arena, name);
  return v;
}
