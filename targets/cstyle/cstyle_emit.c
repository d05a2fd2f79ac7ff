/* The C-family emitter: tiled kernel + knob values -> source text in the
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
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle.h"

/* ---- text output ---------------------------------------------------------- */

struct xc_cstyle_writer {
  char* data;
  size_t len, cap;
  bool oom;
};

static void wv(xc_cstyle_writer_t* w, const char* fmt, va_list ap) {
  if (w->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    w->oom = true;
    return;
  }
  if (w->len + (size_t)n + 1 > w->cap) {
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < w->len + (size_t)n + 1) cap *= 2;
    char* d = realloc(w->data, cap);
    if (!d) {
      w->oom = true;
      return;
    }
    w->data = d;
    w->cap = cap;
  }
  vsnprintf(w->data + w->len, (size_t)n + 1, fmt, ap);
  w->len += (size_t)n;
}

void xc_cstyle_printf(xc_cstyle_writer_t* w, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wv(w, fmt, ap);
  va_end(ap);
}
#define P xc_cstyle_printf

static const char* wstr(xc_cstyle_writer_t* w) { return w->data ? w->data : ""; }

/* ---- names ---------------------------------------------------------------- */

static void sanitize(const char* in, char* out, size_t size, size_t max_len) {
  size_t n = 0;
  if (!in || !*in) in = "k";
  if (!((in[0] >= 'a' && in[0] <= 'z') || (in[0] >= 'A' && in[0] <= 'Z'))) out[n++] = 'v';
  for (const char* c = in; *c && n + 1 < size && n < max_len; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    out[n++] = ok ? *c : '_';
  }
  out[n] = 0;
}

const char* xc_cstyle_param_name(const xc_tiled_value_t* param, char* buf, size_t size) {
  char s[44];
  sanitize(param->name, s, sizeof s, 40);
  snprintf(buf, size, "p_%s", s);
  return buf;
}

/* ---- knobs ---------------------------------------------------------------- */

xc_status_t xc_cstyle_resolve_knobs(const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs,
                                    int64_t* out) {
  for (int i = 0; i < k->num_knobs; i++) out[i] = k->knobs[i].default_value;
  for (int i = 0; i < num_knobs; i++) {
    int idx = knobs[i].name ? xc_tiled_find_knob(k, knobs[i].name) : -1;
    if (idx < 0)
      return xc_error(XC_INVALID_ARGUMENT, "kernel '%s' has no knob '%s'", k->name,
                      knobs[i].name ? knobs[i].name : "(null)");
    out[idx] = knobs[i].value;
  }
  return xc_tiled_knobs_check(k, out, NULL);
}


/* ---- emitter state ---------------------------------------------------------- */

/* ST_LOCAL (C): an element of a fused loop (see plan_fusion) read only by
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
  int cost;             /* VIRTUAL: nodes of the inlined expression */
  bool yielded;         /* a loop yields it: never virtual (it may read carried storage) */
  int uses;             /* operand uses in the kernel */
  bool raw;             /* matrix-instruction operand: shared array of storage elements,
                           row pitch `pitch`, `bufs` buffers (pipeline stages) */
  bool chunked;         /* its load may copy 16-byte chunks (affine offset, convex mask) */
  int64_t pitch, bufs;
  int64_t swz_shift, swz_mask; /* chunk swizzle of a raw operand (xc_cstyle_dot_t) */
  bool dyn;             /* raw operand carved from the dynamic work-group array */
} vinfo_t;

/* Elementwise ops whose operands are all virtual or scalar are inlined into
 * their readers (index arithmetic, masks) up to this expression size. C
 * allows larger expressions: a store offset held in an int64 array (the
 * masked `select(mask, off, off)` of a lowered store is about 30 nodes)
 * keeps the store loop from vectorizing. */
#define MAX_INLINE_COST 24
#define MAX_INLINE_COST_C 64

static bool is_elementwise(xc_tiled_opcode_t op) {
  return (op >= XC_TOP_NEG && op <= XC_TOP_CMP) || op == XC_TOP_SELECT || op == XC_TOP_CAST;
}

/* A dot on matrix instructions that is not the mma K loop's accumulation
 * (docs/emitter.md, "Dots with staged operands"): each operand is a raw load
 * (copied straight into a pitched array) or copied into the staging array
 * xs<a|b><dot id> after its definition; the accumulator slots are the
 * result's private array (`regs`: the result and a private accumulator
 * follow the plan's layout, e->frag) or the private array xm<dot id>, whose
 * slots are written back into the result's work-group array. */
#define MAX_STAGED_DOTS 8
typedef struct mx {
  const xc_tiled_op_t* op;
  xc_cstyle_dot_t dot;
  bool stage[2];
  bool regs;
} mx_t;

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
  xc_cstyle_dot_t dot;
  int stages;                     /* > 1: the mma loop is software-pipelined */
  bool dyn;                       /* its operand buffers live in dynamic work-group memory */
  int64_t dyn_bytes;              /* bytes of that memory carved so far */
  /* dots outside that shape taken with staged operands (dialect.dot_staged) */
  mx_t mx[MAX_STAGED_DOTS];
  int num_mx;
  /* the plan whose slot layout every private tile of its [m, n] shape
   * follows (the mma dot's, or a staged dot's kept in registers), or NULL */
  const xc_cstyle_dot_t* frag;
  int seq;                        /* unique names */
  /* vector chunks (dialect.vec_chunks): elements per chunk of the row
   * layout (1: none) and, per storage dtype, the chunk sizes in bytes whose
   * struct types the kernel uses (bits 4, 8, 16) */
  int64_t vec;
  unsigned vec_types[XC_DTYPE_COUNT];
} em_t;

static void fail(em_t* e, xc_status_t s) {
  if (!e->err) e->err = s;
  else xc_status_free(s);
}

static vinfo_t* V(em_t* e, const xc_tiled_value_t* v) { return &e->vi[v->id]; }

/* A bool value's decided state over every element of every program under
 * the chosen knobs (xc_tiled_ranges): 1 always true, 0 always false, -1 open. */
static int decided(em_t* e, const xc_tiled_value_t* v) {
  const xc_tiled_range_t* r = v && e->ranges ? &e->ranges[v->id] : NULL;
  return r && r->known && r->lo == r->hi ? (r->lo != 0) : -1;
}

/* The operand (0 or 1) an integer min or max returns for every element of
 * every program, from the operands' ranges (a row index clamped to the last
 * row when the grid never passes it); -1 when undecided. */
static int min_max_side(em_t* e, const xc_tiled_op_t* op) {
  if (!e->ranges || op->num_operands != 2 || !xc_dtype_is_int(op->results[0]->type.dtype)) return -1;
  const xc_tiled_range_t* a = &e->ranges[op->operands[0]->id], *b = &e->ranges[op->operands[1]->id];
  if (!a->known || !b->known) return -1;
  bool a_small = a->hi <= b->lo, b_small = b->hi <= a->lo;
  if (op->opcode == XC_TOP_MIN) return a_small ? 0 : b_small ? 1 : -1;
  return b_small ? 0 : a_small ? 1 : -1;
}

/* A load or store mask that is true for every element of every program
 * (index math against static bounds that the tiles divide): dropped. */
static const xc_tiled_value_t* live_mask(em_t* e, const xc_tiled_value_t* mask) {
  return decided(e, mask) == 1 ? NULL : mask;
}

static void indent(em_t* e) {
  for (int i = 0; i < e->depth; i++) P(&e->body, "  ");
}
#define L(...) (indent(e), P(&e->body, __VA_ARGS__))

static const char* vtype(em_t* e, xc_dtype_t t) { return e->d->value_type[t]; }
static const char* stype(em_t* e, xc_dtype_t t) { return e->d->storage_type[t]; }
static const char* itype(em_t* e) { return e->d->value_type[XC_I64]; }
static bool is_half(xc_dtype_t t) { return t == XC_F16 || t == XC_BF16; }
static bool fcompute(xc_dtype_t t) { return t == XC_F32 || t == XC_F64 || is_half(t); }

static bool same_shape(const vinfo_t* a, const vinfo_t* b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Math function name for a compute dtype ("expf" / "exp"). */
static void mathfn(em_t* e, char* out, size_t size, const char* stem, xc_dtype_t t) {
  snprintf(out, size, "%s%s", stem, t == XC_F64 ? e->d->f64_suffix : e->d->f32_suffix);
}

/* A literal of compute dtype t. */
static void literal(em_t* e, char* out, size_t size, xc_dtype_t t, double f, int64_t i) {
  if (t == XC_BOOL) {
    snprintf(out, size, "%d", f != 0 ? 1 : 0);
  } else if (fcompute(t)) {
    double v = xc_round_to_dtype(t, f);
    const char* suf = t == XC_F64 ? "" : "f";
    if (isnan(v)) snprintf(out, size, "NAN");
    else if (isinf(v)) snprintf(out, size, v < 0 ? "(-INFINITY)" : "INFINITY");
    else {
      char b[48];
      snprintf(b, sizeof b, t == XC_F64 ? "%.17g" : "%.9g", v);
      if (!strpbrk(b, ".e")) strcat(b, ".0");
      snprintf(out, size, "%s%s", b, suf);
    }
  } else if (t == XC_I64 && i == INT64_MIN) {
    snprintf(out, size, "((%s)(-9223372036854775807 - 1))", vtype(e, t));
  } else if (t == XC_U64 || t == XC_I64) {
    snprintf(out, size, "((%s)%" PRId64 "%s)", vtype(e, t), i, t == XC_U64 ? "u" : "");
  } else {
    snprintf(out, size, "((%s)%" PRId64 ")", vtype(e, t), i);
  }
}

/* ---- reads ------------------------------------------------------------------ */

static void elementwise_expr(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a);
static void def_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c);

/* Appends to out the expression of v's element at coordinates c (v's rank).
 * same: c are the loop's own coordinates at v's exact shape (PRIVATE reads). */
static void read_at(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c,
                    bool same) {
  vinfo_t* x = V(e, v);
  if (x->st == ST_SCALAR || x->st == ST_LOCAL) {
    P(out, "%s", x->name);
    return;
  }
  if (x->st == ST_PRIVATE) {
    if (!same) fail(e, xc_error(XC_INTERNAL, "cstyle: private tile %s read at another shape", x->name));
    P(out, "%s[j]", x->name);
    return;
  }
  if (x->st == ST_ARRAY) {
    P(out, "%s[", x->name);
    int64_t stride = 1;
    bool first = true;
    for (int i = x->rank - 1; i >= 0; i--) {
      if (x->dims[i] != 1) {
        if (!first) P(out, " + ");
        if (stride == 1) P(out, "%s", c[i]);
        else P(out, "(%s) * %" PRId64, c[i], stride);
        first = false;
      }
      stride *= x->dims[i];
    }
    if (first) P(out, "0");
    P(out, "]");
    return;
  }
  if (x->st != ST_VIRTUAL || !v->def) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: value %d has no readable storage", v->id));
    return;
  }
  def_expr(e, out, v, c);
}

/* Appends the expression of v's defining op (a view or an elementwise op) at
 * v's coordinates c, reading the operands. */
static void def_expr(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const char* const* c) {
  vinfo_t* x = V(e, v);
  const xc_tiled_op_t* op = v->def;
  const xc_tiled_value_t* src = op->num_operands > 0 ? op->operands[0] : NULL;
  const char* sc[XC_TILED_MAX_RANK];
  char lit[96];
  switch (op->opcode) {
    case XC_TOP_CONST:
      literal(e, lit, sizeof lit, v->type.dtype, op->f, op->i);
      P(out, "%s", lit);
      return;
    case XC_TOP_ARANGE: P(out, "(%s)", c[0]); return;
    case XC_TOP_EXPAND_DIMS:
      for (int i = 0, j = 0; i < x->rank; i++)
        if (i != op->axis) sc[j++] = c[i];
      read_at(e, out, src, sc, false);
      return;
    case XC_TOP_BROADCAST: {
      vinfo_t* s = V(e, src);
      for (int i = 0; i < s->rank; i++) sc[i] = s->dims[i] == 1 ? "0" : c[i + x->rank - s->rank];
      read_at(e, out, src, sc, false);
      return;
    }
    case XC_TOP_TRANS:
      sc[0] = c[1], sc[1] = c[0];
      read_at(e, out, src, sc, false);
      return;
    default: break;
  }
  if (is_elementwise(op->opcode) && op->num_operands <= 3) {
    xc_cstyle_writer_t ow[3];
    const char* a[3];
    memset(ow, 0, sizeof ow);
    for (int i = 0; i < op->num_operands; i++) {
      vinfo_t* o = V(e, op->operands[i]);
      for (int d = 0; d < o->rank; d++) sc[d] = o->dims[d] == 1 ? "0" : c[d + x->rank - o->rank];
      read_at(e, &ow[i], op->operands[i], sc, false);
      if (ow[i].oom) fail(e, xc_error_oom());
      a[i] = wstr(&ow[i]);
    }
    elementwise_expr(e, out, op, a);
    for (int i = 0; i < op->num_operands; i++) free(ow[i].data);
    return;
  }
  switch (op->opcode) {
    default: fail(e, xc_error(XC_INTERNAL, "cstyle: op %d is not virtual", op->id));
  }
}

static const char* const loop_coords[XC_TILED_MAX_RANK] = {"i0", "i1", "i2"};

/* Reads operand v inside an element loop over a result of shape r. */
static void read_operand(em_t* e, xc_cstyle_writer_t* out, const xc_tiled_value_t* v, const vinfo_t* r) {
  vinfo_t* x = V(e, v);
  const char* c[XC_TILED_MAX_RANK];
  for (int i = 0; i < x->rank; i++) c[i] = x->dims[i] == 1 ? "0" : loop_coords[i + r->rank - x->rank];
  read_at(e, out, v, c, same_shape(x, r));
}

/* Operand expression as a malloc'd-free temporary string in a writer. */
typedef struct { xc_cstyle_writer_t w; } expr_t;
static const char* opnd(em_t* e, expr_t* x, const xc_tiled_value_t* v, const vinfo_t* r) {
  memset(x, 0, sizeof *x);
  read_operand(e, &x->w, v, r);
  if (x->w.oom) fail(e, xc_error_oom());
  return wstr(&x->w);
}
static void expr_free(expr_t* x) { free(x->w.data); }

/* ---- element loops ------------------------------------------------------------ */

/* Whether shape r is the planned dot's accumulator shape: its element loops
 * follow the accumulator's register layout. */
static bool frag_shape(em_t* e, const vinfo_t* r) {
  return e->frag && r->rank == 2 && r->dims[0] == e->frag->m && r->dims[1] == e->frag->n;
}

/* Opens the loop over the slots j of a matrix plan; inside, f is the flat
 * index of slot j and i0, i1 its coordinates. Returns the braces to close. */
static int slot_loop_open(em_t* e, const xc_cstyle_dot_t* dot) {
  const char* it = itype(e);
  if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
  L("for (int j = 0; j < %" PRId64 "; j++) {\n", dot->slots);
  e->depth++;
  xc_cstyle_writer_t ix = {0};
  e->d->dot_slot_index(&ix, dot, "j");
  if (ix.oom) fail(e, xc_error_oom());
  L("const %s f = (%s)(%s);\n", it, it, wstr(&ix));
  free(ix.data);
  L("{\n");
  e->depth++;
  L("const %s i0 = f / %" PRId64 ", i1 = f %% %" PRId64 ";\n", it, dot->n, dot->n);
  return 2;
}

/* Work-group dialects with vector chunks: the elements per chunk of shape
 * r's slot layout, 1 for the default layout (element f = lid + j * T in
 * slot j). Rows (rank 1 or 2, not a matrix plan's shape) whose last extent
 * is a multiple of T * vec take the chunked layout: slot j of work-item lid
 * holds element ((j / vec) * T + lid) * vec + j % vec, so a work-item's
 * vec consecutive slots are consecutive elements of one row, loaded and
 * stored as one aligned chunk (docs/emitter.md, "Vector chunks"). A row's
 * slots of one work-item stay consecutive (C / T of them) and every
 * work-item holds the same number of each row, as in the default layout. */
static int64_t vec_of(em_t* e, const vinfo_t* r) {
  if (e->vec <= 1 || !e->d->work_groups || frag_shape(e, r) || r->rank < 1 || r->rank > 2) return 1;
  return r->dims[r->rank - 1] % (e->T * e->vec) == 0 ? e->vec : 1;
}

/* The flat index of slot `slot` of the current work-item in shape r's layout. */
static void slot_flat(em_t* e, xc_cstyle_writer_t* w, const vinfo_t* r, const char* slot) {
  const char* it = itype(e);
  int64_t v = vec_of(e, r);
  if (v > 1)
    P(w, "((%s)(%s / %" PRId64 ") * %" PRId64 " + lid) * %" PRId64 " + %s %% %" PRId64, it, slot, v, e->T, v, slot, v);
  else
    P(w, "lid + (%s)%s * %" PRId64, it, slot, e->T);
}

/* Declares i0.. of shape r from its flat index f. */
static void emit_coords(em_t* e, const vinfo_t* r) {
  const char* it = itype(e);
  if (r->rank == 1) L("const %s i0 = f;\n", it);
  if (r->rank == 2) L("const %s i0 = f / %" PRId64 ", i1 = f %% %" PRId64 ";\n", it, r->dims[1], r->dims[1]);
  if (r->rank == 3)
    L("const %s i0 = f / %" PRId64 ", i1 = (f / %" PRId64 ") %% %" PRId64 ", i2 = f %% %" PRId64 ";\n", it,
      r->dims[1] * r->dims[2], r->dims[2], r->dims[1], r->dims[2]);
}

/* Opens a loop over the elements of shape r; inside, i0.. are the coordinates
 * and f the flat index (j the per-thread slot on work-group dialects). simd:
 * the innermost C loop is vectorizable. Returns the number of braces to close. */
static int loop_open(em_t* e, const vinfo_t* r, bool simd) {
  const char* it = itype(e);
  if (e->d->work_groups && frag_shape(e, r))
    return slot_loop_open(e, e->frag); /* the accumulator's register layout (docs/emitter.md) */
  if (e->d->work_groups) {
    int64_t slots = (r->n + e->T - 1) / e->T;
    if (e->d->unroll_pragma && slots <= 32) L("%s\n", e->d->unroll_pragma);
    L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
    e->depth++;
    xc_cstyle_writer_t fw = {0};
    slot_flat(e, &fw, r, "j");
    L("const %s f = %s;\n", it, wstr(&fw));
    if (fw.oom) fail(e, xc_error_oom());
    free(fw.data);
    /* every slot full: no guard (a compiler cannot prove it, lid's bound being T) */
    if (slots * e->T == r->n) L("{\n");
    else L("if (f < %" PRId64 ") {\n", r->n);
    e->depth++;
    emit_coords(e, r);
    return 2;
  }
  /* extent-1 dims are constants; the innermost real loop gets the pragma */
  int inner = -1, opened = 0;
  for (int i = 0; i < r->rank; i++)
    if (r->dims[i] != 1) inner = i;
  for (int i = 0; i < r->rank; i++) {
    if (r->dims[i] == 1) {
      L("{ const %s i%d = 0;\n", it, i);
    } else {
      if (i == inner && simd && e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s i%d = 0; i%d < %" PRId64 "; i%d++) {\n", it, i, i, r->dims[i], i);
    }
    e->depth++;
    opened++;
  }
  (void)opened;
  if (r->rank == 1) L("const %s f = i0;\n", it);
  if (r->rank == 2) L("const %s f = i0 * %" PRId64 " + i1;\n", it, r->dims[1]);
  if (r->rank == 3) L("const %s f = (i0 * %" PRId64 " + i1) * %" PRId64 " + i2;\n", it, r->dims[1], r->dims[2]);
  return r->rank;
}

static void loop_close(em_t* e, int n) {
  for (int i = 0; i < n; i++) {
    e->depth--;
    L("}\n");
  }
}

static void barrier(em_t* e) {
  if (e->d->work_groups) L("%s\n", e->d->barrier);
}

/* Destination of the current element of r: "name[j]" or "name[f]". */
static const char* dst(em_t* e, const vinfo_t* r, char* buf, size_t size) {
  snprintf(buf, size, "%s[%s]", r->name, r->st == ST_PRIVATE ? "j" : "f");
  (void)e;
  return buf;
}

/* ---- element expressions -------------------------------------------------- */

static void cast_expr(em_t* e, xc_cstyle_writer_t* w, xc_dtype_t from, xc_dtype_t to, const char* a) {
  const char* tt = vtype(e, to);
  if (to == XC_BOOL) {
    P(w, "(%s)((%s) != 0)", tt, a);
  } else if (fcompute(from) && !fcompute(to)) {
    const char* lo = "0", *hi = "0";
    switch (to) {
      case XC_I8: lo = "-128", hi = "127"; break;
      case XC_I16: lo = "-32768", hi = "32767"; break;
      case XC_I32: lo = "-2147483648.0", hi = "2147483647.0"; break;
      case XC_U8: lo = "0", hi = "255"; break;
      case XC_U16: lo = "0", hi = "65535"; break;
      case XC_U32: lo = "0", hi = "4294967295.0"; break;
      case XC_U64: lo = "0", hi = "9223372036854774784.0"; break;
      default: lo = "-9223372036854775808.0", hi = "9223372036854774784.0"; break;
    }
    const char* suf = from == XC_F64 ? "" : "f";
    char los[48], his[48];
    snprintf(los, sizeof los, "%s%s%s", lo, strchr(lo, '.') ? "" : ".0", suf);
    snprintf(his, sizeof his, "%s%s%s", hi, strchr(hi, '.') ? "" : ".0", suf);
    P(w, "((%s) != (%s) ? (%s)0 : (%s) <= %s ? (%s)(%s) : (%s) >= %s ? (%s)(%s) : (%s)(%s))", a, a, tt, a, los,
      tt, los, a, his, tt, his, tt, a);
  } else if (to == XC_F16) {
    P(w, "xc_h2f(xc_f2h((float)(%s)))", a);
  } else if (to == XC_BF16) {
    P(w, "xc_bf2f(xc_f2bf((float)(%s)))", a);
  } else {
    P(w, "(%s)(%s)", tt, a);
  }
}

/* The CONST op v is (possibly broadcast or expanded), or NULL. */
static const xc_tiled_op_t* const_def(const xc_tiled_value_t* v) {
  const xc_tiled_op_t* d = v ? v->def : NULL;
  while (d && (d->opcode == XC_TOP_BROADCAST || d->opcode == XC_TOP_EXPAND_DIMS)) d = d->operands[0]->def;
  return d && d->opcode == XC_TOP_CONST ? d : NULL;
}

/* Operand slots of block b (and nested blocks) that read v; *user: the
 * last op that does. */
static int reads_of(const xc_tiled_block_t* b, const xc_tiled_value_t* v, const xc_tiled_op_t** user) {
  int n = 0;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_operands; j++)
      if (op->operands[j] == v) n++, *user = op;
    if (op->opcode == XC_TOP_FOR) n += reads_of(op->body, v, user);
  }
  return n;
}

/* Whether v's only use is 1 + v (the constant possibly broadcast). */
static bool only_plus_one(em_t* e, const xc_tiled_value_t* v) {
  const xc_tiled_op_t* user = NULL;
  if (reads_of(e->k->body, v, &user) != 1 || !user || user->opcode != XC_TOP_ADD) return false;
  const xc_tiled_op_t* d = const_def(user->operands[0] == v ? user->operands[1] : user->operands[0]);
  return d && d->f == 1.0;
}

/* Expression of an elementwise op (unary, binary, cmp, select, cast) given
 * its operands' expressions. */
static void elementwise_expr(em_t* e, xc_cstyle_writer_t* w, const xc_tiled_op_t* op, const char* const* a) {
  xc_dtype_t t = op->operands[0]->type.dtype;
  bool fl = fcompute(t);
  bool vmath = e->d->vector_math && fl && t != XC_F64; /* f32, and f16/bf16 computed in float */
  const char* one = t == XC_F64 ? "1.0" : "1.0f";
  char fn[32];
  const char* bin = NULL;
  switch (op->opcode) {
    case XC_TOP_NEG: P(w, "(-(%s))", a[0]); return;
    case XC_TOP_ABS:
      if (fl) mathfn(e, fn, sizeof fn, "fabs", t), P(w, "%s(%s)", fn, a[0]);
      else P(w, "((%s) < 0 ? -(%s) : (%s))", a[0], a[0], a[0]);
      return;
    case XC_TOP_EXP: vmath ? snprintf(fn, sizeof fn, "xc_vexpf") : (mathfn(e, fn, sizeof fn, "exp", t), 0); break;
    case XC_TOP_LOG: mathfn(e, fn, sizeof fn, "log", t); break;
    case XC_TOP_SQRT: mathfn(e, fn, sizeof fn, "sqrt", t); break;
    case XC_TOP_ERF:
      if (is_half(t) && e->d->erf_half_plus_one && only_plus_one(e, op->results[0]))
        snprintf(fn, sizeof fn, "%s", e->d->erf_half_plus_one);
      else if (is_half(t) && e->d->erf_half) snprintf(fn, sizeof fn, "%s", e->d->erf_half);
      else if (vmath) snprintf(fn, sizeof fn, "xc_verff");
      else mathfn(e, fn, sizeof fn, "erf", t);
      break;
    case XC_TOP_TANH: vmath ? snprintf(fn, sizeof fn, "xc_vtanhf") : (mathfn(e, fn, sizeof fn, "tanh", t), 0); break;
    case XC_TOP_FLOOR: mathfn(e, fn, sizeof fn, "floor", t); break;
    case XC_TOP_CEIL: mathfn(e, fn, sizeof fn, "ceil", t); break;
    case XC_TOP_SIN: mathfn(e, fn, sizeof fn, "sin", t); break;
    case XC_TOP_COS: mathfn(e, fn, sizeof fn, "cos", t); break;
    case XC_TOP_ATAN: mathfn(e, fn, sizeof fn, "atan", t); break;
    case XC_TOP_RSQRT:
      if (e->d->has_rsqrt) {
        P(w, "rsqrt(%s)", a[0]);
      } else {
        mathfn(e, fn, sizeof fn, "sqrt", t);
        P(w, "(%s / %s(%s))", one, fn, a[0]);
      }
      return;
    case XC_TOP_SIGMOID:
      if (vmath) snprintf(fn, sizeof fn, "xc_vexpf");
      else mathfn(e, fn, sizeof fn, "exp", t);
      P(w, "(%s / (%s + %s(-(%s))))", one, one, fn, a[0]);
      return;
    case XC_TOP_RECIP: P(w, "(%s / (%s))", one, a[0]); return;
    case XC_TOP_NOT:
      if (t == XC_BOOL) P(w, "(%s)!(%s)", vtype(e, t), a[0]);
      else P(w, "(%s)~(%s)", vtype(e, t), a[0]);
      return;
    case XC_TOP_ADD: bin = "+"; break;
    case XC_TOP_SUB: bin = "-"; break;
    case XC_TOP_MUL: bin = "*"; break;
    case XC_TOP_DIV: bin = "/"; break;
    case XC_TOP_AND: bin = "&"; break;
    case XC_TOP_OR: bin = "|"; break;
    case XC_TOP_XOR: bin = "^"; break;
    case XC_TOP_SHL: bin = "<<"; break;
    case XC_TOP_SHR: bin = ">>"; break;
    case XC_TOP_REM:
      if (fl) {
        mathfn(e, fn, sizeof fn, "fmod", t);
        P(w, "%s(%s, %s)", fn, a[0], a[1]);
      } else {
        bin = "%";
        break;
      }
      return;
    case XC_TOP_MAX:
    case XC_TOP_MIN: {
      int c = min_max_side(e, op);
      if (c >= 0) P(w, "(%s)", a[c]); /* the ranges decide which side wins */
      else P(w, "%s(%s, %s)", op->opcode == XC_TOP_MAX ? "XC_MAX" : "XC_MIN", a[0], a[1]);
      return;
    }
    case XC_TOP_POW: mathfn(e, fn, sizeof fn, "pow", t), P(w, "%s(%s, %s)", fn, a[0], a[1]); return;
    case XC_TOP_CMP: {
      static const char* const cmps[] = {"==", "!=", "<", "<=", ">", ">="};
      P(w, "(%s)((%s) %s (%s))", vtype(e, XC_BOOL), a[0], cmps[op->cmp], a[1]);
      return;
    }
    case XC_TOP_SELECT: {
      int c = decided(e, op->operands[0]);
      if (c >= 0) P(w, "(%s)", a[c ? 1 : 2]); /* the condition is decided */
      else P(w, "((%s) ? (%s) : (%s))", a[0], a[1], a[2]);
      return;
    }
    case XC_TOP_CAST: cast_expr(e, w, t, op->results[0]->type.dtype, a[0]); return;
    default: fail(e, xc_error(XC_INTERNAL, "cstyle: %s is not elementwise", xc_tiled_opcode_name(op->opcode)));
      return;
  }
  if (bin) P(w, "(%s)((%s) %s (%s))", vtype(e, op->results[0]->type.dtype), a[0], bin, a[1]);
  else P(w, "%s(%s)", fn, a[0]);
}

/* Converts a loaded storage element to its compute value and back. */
static void load_conv(xc_cstyle_writer_t* w, xc_dtype_t t, const char* x) {
  if (t == XC_F16) P(w, "xc_h2f(%s)", x);
  else if (t == XC_BF16) P(w, "xc_bf2f(%s)", x);
  else P(w, "%s", x);
}
static void store_conv(em_t* e, xc_cstyle_writer_t* w, xc_dtype_t t, const char* x) {
  if (t == XC_F16) P(w, "xc_f2h(%s)", x);
  else if (t == XC_BF16) P(w, "xc_f2bf(%s)", x);
  else P(w, "(%s)(%s)", stype(e, t), x);
}

/* ---- ops -------------------------------------------------------------------------- */

static const char* mem_name(em_t* e, const xc_tiled_value_t* m) { return V(e, m)->name; }

/* Generic "result element = expression(operands)" op. in_loop: only the
 * element statement, inside the loop of a fused group (C). */
static void emit_elementwise(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  expr_t ops[3];
  const char* a[3] = {"", "", ""};
  int n = op->num_operands < 3 ? op->num_operands : 3;
  xc_cstyle_writer_t ex = {0};
  if (r->st == ST_SCALAR) {
    for (int i = 0; i < n; i++) a[i] = opnd(e, &ops[i], op->operands[i], r);
    elementwise_expr(e, &ex, op, a);
    L("const %s %s = %s;\n", vtype(e, res->type.dtype), r->name, wstr(&ex));
  } else {
    int close = in_loop ? 0 : loop_open(e, r, true);
    for (int i = 0; i < n; i++) a[i] = opnd(e, &ops[i], op->operands[i], r);
    elementwise_expr(e, &ex, op, a);
    char d[96];
    if (r->st == ST_LOCAL) L("const %s %s = %s;\n", vtype(e, res->type.dtype), r->name, wstr(&ex));
    else L("%s = %s;\n", dst(e, r, d, sizeof d), wstr(&ex));
    loop_close(e, close);
    if (r->st == ST_ARRAY && !in_loop) barrier(e);
  }
  if (ex.oom) fail(e, xc_error_oom());
  free(ex.data);
  for (int i = 0; i < n; i++) expr_free(&ops[i]);
}

/* The element statement of load op: its result's current element (in the
 * scope of an element loop, or scalar). */
static void load_stmt(em_t* e, const xc_tiled_op_t* op, bool scalar) {
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  const xc_tiled_value_t* other = op->num_operands > 3 ? op->operands[3] : NULL;
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  expr_t eo, em, eth;
  const char* off = opnd(e, &eo, op->operands[1], r);
  xc_cstyle_writer_t x = {0}, ld = {0}, acc = {0};
  char lit[96];
  /* Index expressions grow with rank and broadcasting: no fixed buffer. */
  P(&acc, "%s[%s]", mem_name(e, mem), off);
  load_conv(&ld, t, wstr(&acc));
  if (mask) {
    const char* m = opnd(e, &em, mask, r);
    const char* o = lit;
    if (other) o = opnd(e, &eth, other, r);
    else literal(e, lit, sizeof lit, t, 0, 0);
    P(&x, "(%s) ? %s : (%s)", m, wstr(&ld), o);
    expr_free(&em);
    if (other) expr_free(&eth);
  } else {
    P(&x, "%s", wstr(&ld));
  }
  char d[96];
  if (scalar || r->st == ST_LOCAL) L("const %s %s = %s;\n", vtype(e, t), r->name, wstr(&x));
  else L("%s = %s;\n", dst(e, r, d, sizeof d), wstr(&x));
  if (x.oom || ld.oom || acc.oom) fail(e, xc_error_oom());
  free(x.data), free(ld.data), free(acc.data);
  expr_free(&eo);
}

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

/* A known divisor of every element of integer value v (0: v is 0). */
static int64_t divisor(em_t* e, const xc_tiled_value_t* v) {
  const xc_tiled_op_t* op = v ? v->def : NULL;
  if (!op || !xc_dtype_is_int(v->type.dtype)) return 1;
  switch (op->opcode) {
    case XC_TOP_CONST: return op->i < 0 ? -op->i : op->i;
    case XC_TOP_KNOB: return op->axis >= 0 && op->axis < e->k->num_knobs ? e->knobs[op->axis] : 1;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return divisor(e, op->operands[0]);
    case XC_TOP_ADD:
    case XC_TOP_SUB: return gcd64(divisor(e, op->operands[0]), divisor(e, op->operands[1]));
    case XC_TOP_MUL: return divisor(e, op->operands[0]) * divisor(e, op->operands[1]);
    default: return 1;
  }
}

/* Integer v as coef * x + rest along the last axis x of its shape (other
 * coordinates fixed, as within a chunk): true with the coefficient and a
 * known divisor of rest (0: rest is 0), false when v is not affine in x or
 * the coefficient is unknown. Values whose last extent is 1 are uniform
 * along it whatever computes them (a clamped row index). */
static bool lin_last(em_t* e, const xc_tiled_value_t* v, int64_t* coef, int64_t* rest) {
  if (!v || !xc_dtype_is_int(v->type.dtype)) return false;
  const vinfo_t* x = V(e, v);
  *coef = 0;
  if (x->rank == 0 || x->dims[x->rank - 1] == 1) {
    *rest = divisor(e, v);
    return true;
  }
  const xc_tiled_op_t* op = v->def;
  if (!op) return false;
  int64_t ca, ra, cb, rb;
  switch (op->opcode) {
    case XC_TOP_CONST: *rest = divisor(e, v); return true;
    case XC_TOP_ARANGE: *coef = 1, *rest = 0; return true; /* rank 1: its axis is the last */
    case XC_TOP_EXPAND_DIMS: /* not at the last axis (its extent would be 1) */
    case XC_TOP_BROADCAST: return lin_last(e, op->operands[0], coef, rest);
    case XC_TOP_ADD:
    case XC_TOP_SUB:
      if (!lin_last(e, op->operands[0], &ca, &ra) || !lin_last(e, op->operands[1], &cb, &rb)) return false;
      *coef = op->opcode == XC_TOP_ADD ? ca + cb : ca - cb, *rest = gcd64(ra, rb);
      return true;
    case XC_TOP_MUL: {
      if (!lin_last(e, op->operands[0], &ca, &ra) || !lin_last(e, op->operands[1], &cb, &rb)) return false;
      if (ca && cb) return false;
      *rest = ra * rb; /* (ca x + ra) * b: ra times a divisor of the uniform b */
      if (!ca && !cb) return true;
      /* a coefficient stays known only times a constant factor */
      const xc_tiled_op_t* kd = const_def(ca ? op->operands[1] : op->operands[0]);
      if (!kd) return false;
      *coef = (ca ? ca : cb) * kd->i;
      return true;
    }
    default: return false;
  }
}

/* Bytes of one chunk when a load or store over shape r (offsets offv, no
 * mask, elements of dtype t in global memory mem) moves whole chunks, else
 * 0: r in the chunked layout, the offset coef * x + rest along the last
 * axis x with coefficient 1 and rest a multiple of the chunk (a chunk lies
 * in one row and starts at a multiple of vec there, so its elements are
 * contiguous and its first is aligned to the chunk size, buffers being
 * aligned to 16 bytes: docs/emitter.md), 4, 8 or 16 bytes. */
static int64_t chunk_bytes(em_t* e, const vinfo_t* r, const xc_tiled_value_t* mem, const xc_tiled_value_t* offv,
                           const xc_tiled_value_t* mask, xc_dtype_t t) {
  int64_t v = vec_of(e, r), b = v * (int64_t)xc_dtype_size(t), coef, rest;
  if (v <= 1 || mask || mem->type.scope != XC_SCOPE_GLOBAL || t == XC_BOOL) return 0;
  if (b != 4 && b != 8 && b != 16) return 0;
  if (!lin_last(e, offv, &coef, &rest) || coef != 1 || (rest != 0 && rest % v != 0)) return 0;
  return b;
}

/* Name of the struct type of a b-byte chunk of dtype t (declared by the
 * kernel's prelude: vec_types). */
static const char* chunk_type(em_t* e, char* buf, size_t size, xc_dtype_t t, int64_t b) {
  snprintf(buf, size, "xc_v%d_%s", (int)b, xc_dtype_name(t));
  e->vec_types[t] |= (unsigned)b;
  return buf;
}

/* Opens the loop over the chunks c of shape r and sets xo0, the offset of
 * the chunk's first element (flat index f0); names in ty the struct type of
 * a b-byte chunk of dtype t and returns the elements per chunk. The caller
 * writes the chunk's move and closes 1 brace. */
static int64_t chunk_open(em_t* e, const vinfo_t* r, const xc_tiled_value_t* offv, xc_dtype_t t, int64_t b,
                          char* ty, size_t ty_size) {
  const char* it = itype(e);
  int64_t v = vec_of(e, r), nc = r->n / e->T / v;
  chunk_type(e, ty, ty_size, t, b);
  if (e->d->unroll_pragma && nc <= 32) L("%s\n", e->d->unroll_pragma);
  L("for (int c = 0; c < %" PRId64 "; c++) {\n", nc);
  e->depth++;
  L("const %s f0 = ((%s)c * %" PRId64 " + lid) * %" PRId64 ";\n", it, it, e->T, v);
  L("%s xo0;\n", it);
  L("{\n");
  e->depth++;
  L("const int j = c * %" PRId64 ";\n", v);
  L("const %s f = f0;\n", it);
  emit_coords(e, r);
  expr_t eo;
  L("xo0 = %s;\n", opnd(e, &eo, offv, r));
  expr_free(&eo);
  e->depth--;
  L("}\n");
  return v;
}

static void emit_load(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 2 ? op->operands[2] : NULL);
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  bool scalar = r->st == ST_SCALAR;
  int64_t b = scalar || in_loop || r->st != ST_PRIVATE ? 0 : chunk_bytes(e, r, mem, op->operands[1], mask, t);
  if (b) {
    /* chunks of the chunked layout: one aligned struct load each */
    char ty[48];
    int64_t v = chunk_open(e, r, op->operands[1], t, b, ty, sizeof ty);
    L("const %s xq = *(const %s%s*)(%s + xo0);\n", ty, e->d->global_qual, ty, mem_name(e, mem));
    for (int64_t i = 0; i < v; i++) {
      char q[32];
      snprintf(q, sizeof q, "xq.v[%" PRId64 "]", i);
      xc_cstyle_writer_t cv = {0};
      load_conv(&cv, t, q);
      L("%s[c * %" PRId64 " + %" PRId64 "] = %s;\n", r->name, v, i, wstr(&cv));
      if (cv.oom) fail(e, xc_error_oom());
      free(cv.data);
    }
    loop_close(e, 1);
    return;
  }
  int close = scalar || in_loop ? 0 : loop_open(e, r, true);
  load_stmt(e, op, scalar);
  loop_close(e, close);
  if (!scalar && r->st == ST_ARRAY && !in_loop) barrier(e);
}

/* The element statement of store op at the current element of its
 * offsets' shape r. */
static void store_stmt(em_t* e, const xc_tiled_op_t* op, const vinfo_t* r) {
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 3 ? op->operands[3] : NULL);
  expr_t eo, ev, em;
  const char* off = opnd(e, &eo, op->operands[1], r);
  const char* v = opnd(e, &ev, op->operands[2], r);
  xc_cstyle_writer_t sv = {0};
  store_conv(e, &sv, mem->type.dtype, v);
  if (mask) {
    L("if (%s) %s[%s] = %s;\n", opnd(e, &em, mask, r), mem_name(e, mem), off, wstr(&sv));
    expr_free(&em);
  } else {
    L("%s[%s] = %s;\n", mem_name(e, mem), off, wstr(&sv));
  }
  if (sv.oom) fail(e, xc_error_oom());
  free(sv.data);
  expr_free(&eo), expr_free(&ev);
}

/* in_loop: only the element statement, inside the loop of a fused group (C). */
static void emit_store(em_t* e, const xc_tiled_op_t* op, bool in_loop) {
  const xc_tiled_value_t* mem = op->operands[0];
  const xc_tiled_value_t* offv = op->operands[1];
  const xc_tiled_value_t* mask = live_mask(e, op->num_operands > 3 ? op->operands[3] : NULL);
  vinfo_t* r = V(e, offv);
  xc_dtype_t t = mem->type.dtype;
  bool scalar = r->rank == 0;
  int64_t b = scalar || in_loop ? 0 : chunk_bytes(e, r, mem, offv, mask, t);
  int close = 0;
  if (b) {
    /* chunks of the chunked layout: one aligned struct store each */
    char ty[48];
    int64_t v = chunk_open(e, r, offv, t, b, ty, sizeof ty);
    L("%s xq;\n", ty);
    const char* it = itype(e);
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int xr = 0; xr < %" PRId64 "; xr++) {\n", v);
    e->depth++;
    L("const int j = c * %" PRId64 " + xr;\n", v);
    L("const %s f = f0 + xr;\n", it);
    emit_coords(e, r);
    expr_t ev;
    xc_cstyle_writer_t sv = {0};
    store_conv(e, &sv, t, opnd(e, &ev, op->operands[2], r));
    L("xq.v[xr] = %s;\n", wstr(&sv));
    if (sv.oom) fail(e, xc_error_oom());
    free(sv.data);
    expr_free(&ev);
    loop_close(e, 1);
    L("*(%s%s*)(%s + xo0) = xq;\n", e->d->global_qual, ty, mem_name(e, mem));
    loop_close(e, 1);
  } else {
    if (scalar && e->d->work_groups) {
      L("if (lid == 0) {\n");
      e->depth++;
      close = 1;
    } else if (!scalar && !in_loop) {
      close = loop_open(e, r, false); /* no simd: offsets may repeat */
    }
    store_stmt(e, op, r);
    loop_close(e, close);
  }
  if (mem->type.scope != XC_SCOPE_GLOBAL) barrier(e);
  else if (e->phased && e->d->work_groups)
    L("%s\n", e->d->global_barrier ? e->d->global_barrier : e->d->barrier); /* CUDA: __syncthreads() */
}

/* The widest element of a global buffer that block b loads or stores. */
static int64_t widest_global(const xc_tiled_block_t* b) {
  int64_t w = 0;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      int64_t x = widest_global(op->body);
      if (x > w) w = x;
    } else if ((op->opcode == XC_TOP_LOAD || op->opcode == XC_TOP_STORE) && op->num_operands > 0 &&
               op->operands[0]->type.scope == XC_SCOPE_GLOBAL) {
      int64_t x = (int64_t)xc_dtype_size(op->operands[0]->type.dtype);
      if (x > w) w = x;
    }
  }
  return w;
}

/* Bytes of a value of dtype dt in the dialect's value type (16-bit floats compute in float). */
static size_t value_bytes(xc_dtype_t dt) {
  return dt == XC_F64 ? 8 : fcompute(dt) ? 4 : dt == XC_BOOL ? 1 : xc_dtype_size(dt);
}

static void combine(em_t* e, xc_cstyle_writer_t* w, int kind, const char* acc, const char* v) {
  (void)e;
  switch (kind) {
    case XC_REDUCE_SUM: P(w, "%s = %s + (%s);", acc, acc, v); break;
    case XC_REDUCE_PROD: P(w, "%s = %s * (%s);", acc, acc, v); break;
    case XC_REDUCE_MAX: P(w, "%s = XC_MAX(%s, %s);", acc, acc, v); break;
    default: P(w, "%s = XC_MIN(%s, %s);", acc, acc, v); break;
  }
}

/* Work-group dialects: a reduction with fewer results than work-items runs
 * cooperatively. G work-items (a power of two, G * results <= T, G <= the
 * axis length) share each result: each folds a strided part of the axis,
 * then a tree in local memory (log2 G steps, a barrier each) combines the G
 * partials, and the result is handed to the work-item that owns it. Without
 * this, a row reduction would keep one work-item per row busy reading the
 * whole row while the rest of the program waits. Returns false when the
 * plain per-result loop is used instead. */
static bool emit_reduce_coop(em_t* e, const xc_tiled_op_t* op) {
  if (!e->d->work_groups) return false;
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  int axis = (int)op->axis;
  int64_t len = xi->dims[axis];
  bool scalar = r->st == ST_SCALAR;
  int64_t R = scalar ? 1 : r->n;
  /* a private result is handed over in the default layout (element lid in slot 0) */
  if (!(scalar || r->st == ST_ARRAY || (r->st == ST_PRIVATE && R <= e->T && !frag_shape(e, r))) || xi->rank > 3)
    return false;
  int64_t G = 1;
  int lg = 0;
  while (G * 2 * R <= e->T && G * 2 <= len) G *= 2, lg++;
  if (G < 2) return false;
  xc_dtype_t dt = res->type.dtype;
  const char* t = vtype(e, dt);
  const char* it = itype(e);
  size_t esize = value_bytes(dt);
  P(&e->decls, "%s%s xr%d[%" PRId64 "];\n", e->d->local_qual, t, res->id, e->T);
  e->local_bytes += e->T * (int64_t)esize;
  /* the result's coordinates, from its flat index rf */
  const char* rc[3] = {"rc0", "rc1", "rc2"};
  const char* c[XC_TILED_MAX_RANK], *c0[XC_TILED_MAX_RANK];
  for (int i = 0, j = 0; i < xi->rank; i++) {
    c[i] = i == axis ? "q" : rc[j];
    c0[i] = i == axis ? "rs" : rc[j];
    if (i != axis) j++;
  }
  xc_cstyle_writer_t first = {0}, item = {0}, comb = {0}, tree = {0};
  read_at(e, &first, x, c0, false);
  read_at(e, &item, x, c, false);
  combine(e, &comb, op->reduce, "racc", wstr(&item));
  char a[48], b[48];
  snprintf(a, sizeof a, "xr%d[lid]", res->id);
  snprintf(b, sizeof b, "xr%d[lid + s]", res->id);
  combine(e, &tree, op->reduce, a, b);
  if (scalar) L("%s %s;\n", t, r->name);
  L("{\n");
  e->depth++;
  L("const %s rf = (%s)lid >> %d, rs = (%s)lid & %" PRId64 ";\n", it, it, lg, it, G - 1);
  L("if (rf < %" PRId64 ") {\n", R);
  e->depth++;
  int rr = xi->rank - 1;
  const int64_t* rd = r->dims;
  if (!scalar && rr == 1) L("const %s rc0 = rf;\n", it);
  if (!scalar && rr == 2) L("const %s rc0 = rf / %" PRId64 ", rc1 = rf %% %" PRId64 ";\n", it, rd[1], rd[1]);
  if (!scalar && rr == 3)
    L("const %s rc0 = rf / %" PRId64 ", rc1 = (rf / %" PRId64 ") %% %" PRId64 ", rc2 = rf %% %" PRId64 ";\n", it,
      rd[1] * rd[2], rd[2], rd[1], rd[2]);
  if (scalar && rr > 0) /* a rank-0 result of a rank>1 tile: the other axes have extent 1 */
    for (int i = 0; i < rr; i++) L("const %s rc%d = 0;\n", it, i);
  L("%s racc = %s;\n", t, wstr(&first));
  L("for (%s q = rs + %" PRId64 "; q < %" PRId64 "; q += %" PRId64 ") %s\n", it, G, len, G, wstr(&comb));
  L("xr%d[lid] = racc;\n", res->id);
  e->depth--;
  L("}\n");
  barrier(e);
  L("for (int s = %" PRId64 "; s > 0; s >>= 1) {\n", G / 2);
  e->depth++;
  L("if (rs < s && rf < %" PRId64 ") %s\n", R, wstr(&tree));
  barrier(e);
  e->depth--;
  L("}\n");
  if (scalar) L("%s = xr%d[0];\n", r->name, res->id);
  else if (r->st == ST_ARRAY) L("if (lid < %" PRId64 ") %s[lid] = xr%d[lid << %d];\n", R, r->name, res->id, lg);
  else L("if (lid < %" PRId64 ") %s[0] = xr%d[lid << %d];\n", R, r->name, res->id, lg);
  barrier(e); /* the scratch is free again; an array result is visible to all */
  e->depth--;
  L("}\n");
  if (first.oom || item.oom || comb.oom || tree.oom) fail(e, xc_error_oom());
  free(first.data), free(item.data), free(comb.data), free(tree.data);
  return true;
}

/* Whether some dot of block b (or of a loop inside it) has x's shape. */
static bool dot_shaped(em_t* e, const xc_tiled_block_t* b, const vinfo_t* x) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_DOT && same_shape(V(e, op->results[0]), x)) return true;
    if (op->opcode == XC_TOP_FOR && dot_shaped(e, op->body, x)) return true;
  }
  return false;
}

/* Work-group dialects: whether a reduction can run on the operand where its
 * threads hold it (the default layout, element f = lid + j * T in slot j):
 * along the last axis of a tile of rank <= 2 whose row length C is a power
 * of two that T divides or that divides T, and whose every slot is full
 * (n a multiple of T), and no dot has its shape (a matrix plan may hold
 * such a tile in the accumulator's layout, which the analysis cannot know
 * yet). Then a private operand stays in registers; the analysis uses this
 * to keep it private (mark_use). */
static bool lanes_shape(em_t* e, const xc_tiled_op_t* op) {
  if (!e->d->work_groups || op->num_operands < 1) return false;
  vinfo_t* xi = V(e, op->operands[0]);
  if (xi->rank < 1 || xi->rank > 2 || op->axis != xi->rank - 1) return false;
  int64_t C = xi->dims[xi->rank - 1], T = e->T;
  if (C < 1 || (C & (C - 1)) || T < 1 || (T & (T - 1))) return false;
  if (!(xi->n >= T && xi->n % T == 0 && (C % T == 0 || T % C == 0))) return false;
  /* a tile of a dot's shape may follow the accumulator's register layout */
  return !dot_shaped(e, e->k->body, xi);
}

/* Value types a dialect's lane exchange moves (f16/bf16 compute in float). */
static bool shfl_type(xc_dtype_t t) {
  switch (t) {
    case XC_F32: case XC_F64: case XC_F16: case XC_BF16:
    case XC_I32: case XC_I64: case XC_U32: case XC_U64: return true;
    default: return false;
  }
}

/* The lanes_shape reduction (docs/emitter.md, "Row reductions in
 * registers"). A thread's slots of one row are m = max(1, C / T)
 * consecutive slots, so it folds them into J / m register partials
 * (J slots); the G = min(T, C) threads of a row are aligned groups of
 * consecutive lanes. Where the dialect exchanges lanes, partials combine
 * by an xor butterfly over B = min(G, 32) lanes (every lane ends with the
 * same value); then the W = G / B partials of a row go to local memory,
 * one barrier, and each thread owning a result slot folds them in order. */
static void emit_reduce_lanes(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  if (r->st != ST_SCALAR && r->st != ST_ARRAY && r->st != ST_PRIVATE) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: row reduction %d has no register result", op->id));
    return;
  }
  xc_dtype_t dt = res->type.dtype;
  const char* t = vtype(e, dt);
  const char* it = itype(e);
  int64_t T = e->T, C = xi->dims[xi->rank - 1], J = xi->n / T;
  int64_t m = C >= T ? C / T : 1, np = J / m, G = C < T ? C : T, R = xi->n / C;
  int64_t B = e->d->shfl_xor_fmt && shfl_type(dt) ? (G < 32 ? G : 32) : 1, W = G / B, W_fold = W;
  size_t esize = value_bytes(dt);
  P(&e->decls, "%s%s xr%d[%" PRId64 "];\n", e->d->local_qual, t, res->id, R * W);
  e->local_bytes += R * W * (int64_t)esize;
  char pk[48];
  snprintf(pk, sizeof pk, "xp%d[j / %" PRId64 "]", res->id, m);
  if (r->st == ST_SCALAR) L("%s %s;\n", t, r->name);
  L("{\n");
  e->depth++;
  L("%s xp%d[%" PRId64 "];\n", t, res->id, np);
  /* the thread's slots, folded per row */
  int close = loop_open(e, xi, false);
  expr_t ex;
  const char* v = opnd(e, &ex, x, xi);
  xc_cstyle_writer_t comb = {0};
  combine(e, &comb, op->reduce, pk, v);
  if (m == 1) L("%s = %s;\n", pk, v);
  else L("if (j %% %" PRId64 " == 0) %s = %s; else %s\n", m, pk, v, wstr(&comb));
  loop_close(e, close);
  expr_free(&ex);
  free(comb.data);
  if (B > 1) {
    /* xor butterfly: the format's %s is the partial, its %d the lane mask s */
    char cur[48];
    snprintf(cur, sizeof cur, "xp%d[k]", res->id);
    xc_cstyle_writer_t fm = {0}, c2 = {0};
    for (const char* q = e->d->shfl_xor_fmt; *q; q++) {
      if (q[0] == '%' && q[1] == 's') P(&fm, "%s", cur), q++;
      else if (q[0] == '%' && q[1] == 'd') P(&fm, "s"), q++;
      else P(&fm, "%c", *q);
    }
    combine(e, &c2, op->reduce, cur, "o");
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int k = 0; k < %" PRId64 "; k++) {\n", np);
    e->depth++;
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("for (int s = 1; s < %" PRId64 "; s <<= 1) { const %s o = %s; %s }\n", B, t, wstr(&fm), wstr(&c2));
    e->depth--;
    L("}\n");
    if (c2.oom || fm.oom) fail(e, xc_error_oom());
    free(c2.data), free(fm.data);
  }
  /* lane 0 of each B-group writes its row's partial w = (lid % G) / B */
  if (B > 1) L("if ((lid & %" PRId64 ") == 0) {\n", B - 1);
  else L("{\n");
  e->depth++;
  if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
  /* where partial k of this thread goes: its row's W partials, entry (lid % G) / B */
  char xi_k[160];
  snprintf(xi_k, sizeof xi_k, "((lid + (%s)k * %" PRId64 ") / %" PRId64 ") * %" PRId64 " + (lid & %" PRId64 ") / %" PRId64,
           it, m * T, C, W, G - 1, B);
  L("for (int k = 0; k < %" PRId64 "; k++) xr%d[%s] = xp%d[k];\n", np, res->id, xi_k, res->id);
  e->depth--;
  L("}\n");
  barrier(e);
  if (B == 1 && W > 8) {
    /* no lane exchange: a tree over a row's W partials, a barrier a step */
    xc_cstyle_writer_t tr = {0};
    char at[96], up[96];
    snprintf(at, sizeof at, "xr%d[xr_i]", res->id);
    snprintf(up, sizeof up, "xr%d[xr_i + s]", res->id);
    combine(e, &tr, op->reduce, at, up);
    L("for (int s = %" PRId64 "; s > 0; s >>= 1) {\n", W / 2);
    e->depth++;
    L("if ((lid & %" PRId64 ") < s) {\n", G - 1);
    if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
    L("  for (int k = 0; k < %" PRId64 "; k++) { const %s xr_i = %s; %s }\n", np, it, xi_k, wstr(&tr));
    L("}\n");
    barrier(e);
    e->depth--;
    L("}\n");
    if (tr.oom) fail(e, xc_error_oom());
    free(tr.data);
    W_fold = 1;
  }
  xc_cstyle_writer_t fold = {0};
  combine(e, &fold, op->reduce, "racc", W_fold > 1 ? "xr_w" : "racc");
  char rd[96];
  if (r->st == ST_SCALAR) {
    L("%s racc = xr%d[0];\n", t, res->id);
    if (W_fold > 1)
      L("for (int w = 1; w < %" PRId64 "; w++) { const %s xr_w = xr%d[w]; %s }\n", W_fold, t, res->id, wstr(&fold));
    L("%s = racc;\n", r->name);
  } else {
    if (r->st == ST_ARRAY) {
      L("for (%s f = lid; f < %" PRId64 "; f += %" PRId64 ") {\n", it, R, T);
      snprintf(rd, sizeof rd, "%s[f]", r->name);
    } else {
      int64_t slots = (R + T - 1) / T;
      if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
      L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
      e->depth++;
      xc_cstyle_writer_t fw = {0};
      slot_flat(e, &fw, r, "j"); /* the result's own slot layout */
      L("const %s f = %s;\n", it, wstr(&fw));
      if (fw.oom) fail(e, xc_error_oom());
      free(fw.data);
      L("if (f < %" PRId64 ") {\n", R);
      snprintf(rd, sizeof rd, "%s[j]", r->name);
    }
    e->depth++;
    L("%s racc = xr%d[f * %" PRId64 "];\n", t, res->id, W);
    if (W_fold > 1)
      L("for (int w = 1; w < %" PRId64 "; w++) { const %s xr_w = xr%d[f * %" PRId64 " + w]; %s }\n", W_fold, t,
        res->id, W, wstr(&fold));
    L("%s = racc;\n", rd);
    e->depth--;
    L("}\n");
    if (r->st == ST_PRIVATE) {
      e->depth--;
      L("}\n");
    }
  }
  barrier(e); /* the scratch is free again; an array result is visible to all */
  e->depth--;
  L("}\n");
  if (fold.oom) fail(e, xc_error_oom());
  free(fold.data);
}

static void emit_reduce(em_t* e, const xc_tiled_op_t* op) {
  if (lanes_shape(e, op)) {
    emit_reduce_lanes(e, op);
    return;
  }
  if (emit_reduce_coop(e, op)) return;
  const xc_tiled_value_t* res = op->results[0];
  const xc_tiled_value_t* x = op->operands[0];
  vinfo_t* r = V(e, res), *xi = V(e, x);
  int axis = (int)op->axis;
  int64_t len = xi->dims[axis];
  const char* t = vtype(e, res->type.dtype);
  const char* c[XC_TILED_MAX_RANK];
  for (int i = 0, j = 0; i < xi->rank; i++) c[i] = i == axis ? "q" : loop_coords[j++];
  const char* c0[XC_TILED_MAX_RANK];
  for (int i = 0; i < xi->rank; i++) c0[i] = i == axis ? "0" : c[i];
  xc_cstyle_writer_t first = {0}, item = {0}, comb = {0};
  read_at(e, &first, x, c0, false);
  read_at(e, &item, x, c, false);
  combine(e, &comb, op->reduce, "racc", wstr(&item));
  bool scalar = r->st == ST_SCALAR;
  int close = 0;
  if (scalar) {
    L("%s %s;\n", t, r->name);
    L("{\n");
    e->depth++;
  } else {
    close = loop_open(e, r, false);
  }
  L("%s racc = %s;\n", t, wstr(&first));
  if (e->d->simd_pragma && fcompute(res->type.dtype) && (op->reduce == XC_REDUCE_SUM || op->reduce == XC_REDUCE_PROD))
    L("%s reduction(%s:racc)\n", e->d->simd_pragma, op->reduce == XC_REDUCE_SUM ? "+" : "*");
  L("for (%s q = 1; q < %" PRId64 "; q++) %s\n", itype(e), len, wstr(&comb));
  if (scalar) {
    L("%s = racc;\n", r->name);
    e->depth--;
    L("}\n");
  } else {
    char d[96];
    L("%s = racc;\n", dst(e, r, d, sizeof d));
    loop_close(e, close);
    if (r->st == ST_ARRAY) barrier(e);
  }
  if (first.oom || item.oom || comb.oom) fail(e, xc_error_oom());
  free(first.data), free(item.data), free(comb.data);
}

/* One register block of the blocked dot: rows i0 .. i0 + mr - 1 and
 * columns i1 .. i1 + nv * lanes - 1 of the result, its accumulators in
 * mr * nv vector registers over the whole K loop, `b` read from bname. */
static void emit_dot_block(em_t* e, const xc_tiled_op_t* op, int mr, int nv, int64_t lanes, const char* bname) {
  const xc_tiled_value_t* a = op->operands[0], *acc = op->operands[2];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res), *ci = V(e, acc);
  xc_dtype_t ct = res->type.dtype;
  int64_t N = r->dims[1], K = V(e, a)->dims[1], nr = nv * lanes;
  const char* t = vtype(e, ct);
  const char* it = itype(e);
  for (int m = 0; m < mr; m++) {
    indent(e);
    P(&e->body, "xc_vec");
    for (int v = 0; v < nv; v++) P(&e->body, "%s c%d_%d", v ? "," : "", m, v);
    P(&e->body, ";\n");
  }
  /* accumulator in */
  bool acc_direct = ci->st == ST_ARRAY && same_shape(ci, r) && !strcmp(vtype(e, acc->type.dtype), t);
  if (!acc_direct) L("%s xc_ct[%" PRId64 "];\n", t, nr);
  for (int m = 0; m < mr; m++) {
    if (acc_direct) {
      for (int v = 0; v < nv; v++)
        L("memcpy(&c%d_%d, &%s[(i0 + %d) * %" PRId64 " + i1 + %" PRId64 "], sizeof(xc_vec));\n", m, v, ci->name, m,
          N, v * lanes);
      continue;
    }
    char c0[32];
    snprintf(c0, sizeof c0, "(i0 + %d)", m);
    const char* cc[2] = {c0, "(i1 + j)"};
    xc_cstyle_writer_t rc = {0};
    read_at(e, &rc, acc, cc, false);
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s j = 0; j < %" PRId64 "; j++) xc_ct[j] = (%s)(%s);\n", it, nr, t, wstr(&rc));
    for (int v = 0; v < nv; v++) L("memcpy(&c%d_%d, xc_ct + %" PRId64 ", sizeof(xc_vec));\n", m, v, v * lanes);
    if (rc.oom) fail(e, xc_error_oom());
    free(rc.data);
  }
  /* the K loop */
  L("for (%s q = 0; q < %" PRId64 "; q++) {\n", it, K);
  e->depth++;
  indent(e);
  P(&e->body, "xc_vec");
  for (int v = 0; v < nv; v++) P(&e->body, "%s b%d", v ? "," : "", v);
  P(&e->body, ";\n");
  for (int v = 0; v < nv; v++)
    L("memcpy(&b%d, &%s[q * %" PRId64 " + i1 + %" PRId64 "], sizeof(xc_vec));\n", v, bname, N, v * lanes);
  for (int m = 0; m < mr; m++) {
    char c0[32];
    snprintf(c0, sizeof c0, "(i0 + %d)", m);
    const char* ca[2] = {c0, "q"};
    xc_cstyle_writer_t ra = {0};
    read_at(e, &ra, a, ca, false);
    indent(e);
    P(&e->body, "{ const %s am = (%s)(%s);", t, t, wstr(&ra));
    for (int v = 0; v < nv; v++) P(&e->body, " c%d_%d += am * b%d;", m, v, v);
    P(&e->body, " }\n");
    if (ra.oom) fail(e, xc_error_oom());
    free(ra.data);
  }
  loop_close(e, 1);
  /* result out */
  for (int m = 0; m < mr; m++)
    for (int v = 0; v < nv; v++)
      L("memcpy(&%s[(i0 + %d) * %" PRId64 " + i1 + %" PRId64 "], &c%d_%d, sizeof(xc_vec));\n", r->name, m, N,
        v * lanes, m, v);
}

/* C dialect, f32/f64 accumulators: a register-blocked micro-kernel. The
 * result is computed in MR x NR blocks (NR = NV vectors of the device's
 * SIMD width) held in GNU C vector variables across the whole K loop: per
 * q, NV contiguous loads of a row of b, MR broadcasts of a[m, q] and
 * MR * NV multiply-adds. Each element still sums acc + a[m,0]*b[0,n] +
 * a[m,1]*b[1,n] + ... in that order, like the generic loop. b is read in
 * place when it is a stack array of the compute type, else packed first.
 * False (nothing written) when the shapes do not fit: the generic loop runs. */
static bool emit_dot_blocked(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* a = op->operands[0], *b = op->operands[1];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res), *bi = V(e, b);
  xc_dtype_t ct = res->type.dtype;
  if ((ct != XC_F32 && ct != XC_F64) || r->st != ST_ARRAY || r->rank != 2 || e->simd < 4) return false;
  int64_t M = r->dims[0], N = r->dims[1], K = V(e, a)->dims[1];
  int64_t esize = ct == XC_F64 ? 8 : 4, vbytes = (int64_t)e->simd * 4, lanes = vbytes / esize;
  if (lanes < 2 || K < 1) return false;
  int nv = N % (2 * lanes) == 0 ? 2 : N % lanes == 0 ? 1 : 0;
  if (!nv) return false;
  /* accumulators + b vectors + one broadcast must fit the vector registers */
  int regs = e->simd >= 16 ? 32 : 16, mr_max = (regs - nv - 1) / nv;
  if (mr_max > 8) mr_max = 8;
  int mr = M < mr_max ? (int)M : mr_max;
  const char* t = vtype(e, ct);
  const char* it = itype(e);
  int64_t nr = nv * lanes;
  L("{\n");
  e->depth++;
  L("typedef %s xc_vec __attribute__((vector_size(%" PRId64 ")));\n", t, vbytes);
  /* b: in place, or packed into a contiguous [K, N] array */
  char bname[80];
  if (bi->st == ST_ARRAY && !strcmp(vtype(e, b->type.dtype), t)) {
    snprintf(bname, sizeof bname, "%s", bi->name);
  } else {
    snprintf(bname, sizeof bname, "xc_bp_%d", op->id);
    L("%s %s[%" PRId64 "];\n", t, bname, K * N);
    e->local_bytes += K * N * esize;
    xc_cstyle_writer_t rb = {0};
    const char* cb[2] = {"q", "i1"};
    read_at(e, &rb, b, cb, false);
    L("for (%s q = 0; q < %" PRId64 "; q++) {\n", it, K);
    e->depth++;
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s i1 = 0; i1 < %" PRId64 "; i1++) %s[q * %" PRId64 " + i1] = (%s)(%s);\n", it, N, bname, N, t,
      wstr(&rb));
    loop_close(e, 1);
    if (rb.oom) fail(e, xc_error_oom());
    free(rb.data);
  }
  /* Columns outside, rows inside: one nr-wide strip of b stays in L1 while
   * every row block of a passes over it. Row blocks of mr_max rows, then one
   * block of the M % mr_max rows left (M is static). */
  int64_t rem = M % mr;
  L("for (%s i1 = 0; i1 < %" PRId64 "; i1 += %" PRId64 ") {\n", it, N, nr);
  e->depth++;
  if (M >= mr) {
    L("for (%s i0 = 0; i0 < %" PRId64 "; i0 += %d) {\n", it, M - rem, mr);
    e->depth++;
    emit_dot_block(e, op, mr, nv, lanes, bname);
    loop_close(e, 1);
  }
  if (rem) {
    L("{\n");
    e->depth++;
    L("const %s i0 = %" PRId64 ";\n", it, M - rem);
    emit_dot_block(e, op, (int)rem, nv, lanes, bname);
    loop_close(e, 1);
  }
  loop_close(e, 2);
  return true;
}

static void emit_dot(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* a = op->operands[0], *b = op->operands[1], *acc = op->operands[2];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t ct = res->type.dtype;
  const char* t = vtype(e, ct);
  int64_t K = V(e, a)->dims[1];
  xc_cstyle_writer_t ra = {0}, rb = {0};
  char d[96];
  expr_t eacc;
  if (!e->d->work_groups) {
    if (!emit_dot_blocked(e, op)) {
      /* r = acc; then for m, k: r[m, :] += a[m,k] * b[k, :] (vectorized over n) */
      int close = loop_open(e, r, true);
      L("%s = %s;\n", dst(e, r, d, sizeof d), opnd(e, &eacc, acc, r));
      loop_close(e, close);
      expr_free(&eacc);
      const char* ca[2] = {"i0", "q"}, *cb[2] = {"q", "i1"};
      read_at(e, &ra, a, ca, false);
      read_at(e, &rb, b, cb, false);
      L("for (%s i0 = 0; i0 < %" PRId64 "; i0++) {\n", itype(e), r->dims[0]);
      e->depth++;
      L("for (%s q = 0; q < %" PRId64 "; q++) {\n", itype(e), K);
      e->depth++;
      L("const %s av = (%s)(%s);\n", t, t, wstr(&ra));
      if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s i1 = 0; i1 < %" PRId64 "; i1++) %s[i0 * %" PRId64 " + i1] += av * (%s)(%s);\n", itype(e),
        r->dims[1], r->name, r->dims[1], t, wstr(&rb));
      loop_close(e, 2);
    }
  } else {
    int close = loop_open(e, r, false);
    const char* ca[2] = {"i0", "q"}, *cb[2] = {"q", "i1"};
    read_at(e, &ra, a, ca, false);
    read_at(e, &rb, b, cb, false);
    L("%s s = %s;\n", t, opnd(e, &eacc, acc, r));
    expr_free(&eacc);
    L("for (%s q = 0; q < %" PRId64 "; q++) s += (%s)(%s) * (%s)(%s);\n", itype(e), K, t, wstr(&ra), t,
      wstr(&rb));
    L("%s = s;\n", dst(e, r, d, sizeof d));
    loop_close(e, close);
    if (r->st == ST_ARRAY) barrier(e);
  }
  if (ra.oom || rb.oom) fail(e, xc_error_oom());
  free(ra.data), free(rb.data);
}

/* Copies value src into the storage of carried value dstv (same shape). */
static void emit_copy(em_t* e, const xc_tiled_value_t* dstv, const xc_tiled_value_t* src, bool declare) {
  vinfo_t* r = V(e, dstv);
  expr_t ex;
  if (r->st == ST_SCALAR) {
    const char* s = opnd(e, &ex, src, r);
    if (declare) L("%s %s = %s;\n", vtype(e, dstv->type.dtype), r->name, s);
    else L("%s = %s;\n", r->name, s);
    expr_free(&ex);
    return;
  }
  char d[96];
  int close = loop_open(e, r, true);
  L("%s = %s;\n", dst(e, r, d, sizeof d), opnd(e, &ex, src, r));
  expr_free(&ex);
  loop_close(e, close);
}

/* A view (expand_dims, broadcast, trans) that needs its own storage. */
static void emit_view(em_t* e, const xc_tiled_op_t* op) {
  vinfo_t* r = V(e, op->results[0]);
  xc_cstyle_writer_t ex = {0};
  char d[96];
  int close = loop_open(e, r, true);
  def_expr(e, &ex, op->results[0], loop_coords);
  L("%s = %s;\n", dst(e, r, d, sizeof d), wstr(&ex));
  loop_close(e, close);
  if (r->st == ST_ARRAY) barrier(e);
  if (ex.oom) fail(e, xc_error_oom());
  free(ex.data);
}

/* ---- matrix instructions (docs/emitter.md) ------------------------------------ */

static void emit_op(em_t* e, const xc_tiled_op_t* op);

/* One loop over the units (elements, or 16-byte chunks along rows) of a raw
 * load. mode 0: elements with the mask; 1: chunks, each checked at its two
 * ends (fast copy, else elements); 2: chunks of a tile known to be in bounds,
 * contiguous along rows and aligned, at xt0 + r*xrs + c. */
static void raw_load_loop(em_t* e, const xc_tiled_op_t* op, const char* buf_off, int mode, const char* off,
                          const char* m) {
  const xc_tiled_value_t* res = op->results[0], *mem = op->operands[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t ch = 16 / (int64_t)xc_dtype_size(t);
  int64_t per = mode ? ch : 1, units = r->dims[0] * r->dims[1] / per, upr = r->dims[1] / per;
  int64_t slots = (units + e->T - 1) / e->T;
  const char* it = itype(e);
  char dstb[160], srcb[160];
  snprintf(dstb, sizeof dstb, "&%s[xd]", r->name);
  if (e->d->unroll_pragma && slots <= 8) L("%s\n", e->d->unroll_pragma);
  L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
  e->depth++;
  L("const %s u = lid + (%s)j * %" PRId64 ";\n", it, it, e->T);
  L(units % e->T ? "if (u < %" PRId64 ") {\n" : "{ /* %" PRId64 " units */\n", units);
  e->depth++;
  L("const %s r0 = u / %" PRId64 ", c0 = (u %% %" PRId64 ") * %" PRId64 ";\n", it, upr, upr, per);
  if (r->swz_mask)
    L("const %s xd = %s + r0 * %" PRId64 " + (((c0 / %" PRId64 ") ^ ((r0 >> %" PRId64 ") & %" PRId64 ")) * %" PRId64
      ") + c0 %% %" PRId64 ";\n",
      it, buf_off, r->pitch, ch, r->swz_shift, r->swz_mask, ch, ch);
  else
    L("const %s xd = %s + r0 * %" PRId64 " + c0;\n", it, buf_off, r->pitch);
  if (mode == 2) {
    snprintf(srcb, sizeof srcb, "(%s + xt0 + r0 * xrs + c0)", mem_name(e, mem));
    indent(e);
    e->d->copy16_async(&e->body, dstb, srcb, "1");
    P(&e->body, "\n");
    loop_close(e, 2);
    return;
  }
  if (mode == 1) {
    L("%s xo0, xo1;\n", it);
    L("int xm0, xm1;\n");
    L("{ const %s i0 = r0, i1 = c0; xo0 = %s; xm0 = (int)(%s); }\n", it, off, m);
    L("{ const %s i0 = r0, i1 = c0 + %" PRId64 "; xo1 = %s; xm1 = (int)(%s); }\n", it, ch - 1, off, m);
    L("if (xm0 && xm1 && xo1 - xo0 == %" PRId64 " && ((unsigned long long)(%s + xo0) & 15u) == 0) {\n", ch - 1,
      mem_name(e, mem));
    snprintf(srcb, sizeof srcb, "(%s + xo0)", mem_name(e, mem));
    e->depth++;
    indent(e);
    e->d->copy16_async(&e->body, dstb, srcb, "1");
    P(&e->body, "\n");
    e->depth--;
    L("} else {\n");
    e->depth++;
  }
  L("for (int q = 0; q < %" PRId64 "; q++) {\n", per);
  e->depth++;
  L("const %s i0 = r0, i1 = c0 + q;\n", it);
  L("%s[xd + q] = (%s) ? %s[%s] : (%s)0;\n", r->name, m, mem_name(e, mem), off, stype(e, t));
  e->depth--;
  L("}\n");
  if (mode == 1) {
    e->depth--;
    L("}\n");
  }
  loop_close(e, 2);
}

/* Copies the tile a raw load produces into its shared array of storage
 * elements at element offset buf_off (a pipeline buffer). With 16-byte
 * chunks (affine offset, convex mask): when the mask holds at the tile's
 * four corners, the offsets are consecutive along rows, the row stride is a
 * multiple of 16 bytes and the first element is aligned, every chunk is
 * copied without further checks; otherwise each chunk is checked at its
 * two ends and falls back to elements with the mask (masked-off elements
 * are 0). Returns whether asynchronous copies may have been issued. */
static bool emit_raw_load(em_t* e, const xc_tiled_op_t* op, const char* buf_off) {
  const xc_tiled_value_t* res = op->results[0], *mem = op->operands[0], *offv = op->operands[1];
  const xc_tiled_value_t* mask = op->num_operands > 2 ? op->operands[2] : NULL;
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t es = (int64_t)xc_dtype_size(t), ch = 16 / es;
  int64_t rows = r->dims[0], cols = r->dims[1];
  bool chunk = r->chunked && e->d->copy16_async && cols % ch == 0 && (r->pitch * es) % 16 == 0;
  const char* it = itype(e);
  expr_t eo, em;
  const char* off = opnd(e, &eo, offv, r);
  const char* m = mask ? opnd(e, &em, mask, r) : "1";
  if (!chunk) {
    raw_load_loop(e, op, buf_off, 0, off, m);
  } else {
    L("{\n");
    e->depth++;
    L("%s xt0, xt1, xt2;\n", it);
    L("int xtm;\n");
    L("{ const %s i0 = 0, i1 = 0; xt0 = %s; xtm = (int)(%s); }\n", it, off, m);
    L("{ const %s i0 = 0, i1 = 1; xt1 = %s; }\n", it, off);
    L("{ const %s i0 = %d, i1 = 0; xt2 = %s; }\n", it, rows > 1 ? 1 : 0, off);
    L("{ const %s i0 = 0, i1 = %" PRId64 "; xtm = xtm && (int)(%s); }\n", it, cols - 1, m);
    L("{ const %s i0 = %" PRId64 ", i1 = 0; xtm = xtm && (int)(%s); }\n", it, rows - 1, m);
    L("{ const %s i0 = %" PRId64 ", i1 = %" PRId64 "; xtm = xtm && (int)(%s); }\n", it, rows - 1, cols - 1, m);
    L("const %s xrs = xt2 - xt0;\n", it);
    L("if (xtm && xt1 - xt0 == 1 && (xrs * %" PRId64 ") %% 16 == 0 && ((unsigned long long)(%s + xt0) & 15u) == 0) {\n",
      es, mem_name(e, mem));
    e->depth++;
    raw_load_loop(e, op, buf_off, 2, off, m);
    e->depth--;
    L("} else {\n");
    e->depth++;
    raw_load_loop(e, op, buf_off, 1, off, m);
    e->depth--;
    L("}\n");
    e->depth--;
    L("}\n");
  }
  expr_free(&eo);
  if (mask) expr_free(&em);
  return chunk;
}

/* A raw load outside a pipeline: copies, waits for them, barrier. */
static void emit_raw_load_sync(em_t* e, const xc_tiled_op_t* op) {
  if (emit_raw_load(e, op, "0")) {
    L("%s\n", e->d->copy_commit);
    indent(e);
    P(&e->body, e->d->copy_wait_fmt, 0);
    P(&e->body, "\n");
  }
  barrier(e);
}

/* The dialect's matrix-instruction statements for a planned dot (names
 * set), indented at the current depth. */
static void call_emit_dot(em_t* e, const xc_cstyle_dot_t* dot) {
  char ind[64];
  int n = e->depth * 2 < (int)sizeof ind - 1 ? e->depth * 2 : (int)sizeof ind - 1;
  memset(ind, ' ', (size_t)n);
  ind[n] = 0;
  e->d->emit_dot(&e->body, dot, ind);
}

/* The planned dot: result = acc (same registers when they share storage),
 * then the dialect's matrix instructions on operand arrays a and b. */
static void emit_mma(em_t* e, const xc_tiled_op_t* op, const char* a, const char* b) {
  const xc_tiled_value_t* acc = op->operands[2], *res = op->results[0];
  vinfo_t* r = V(e, res);
  if (strcmp(r->name, V(e, acc)->name)) emit_copy(e, res, acc, false);
  e->dot.a = a;
  e->dot.b = b;
  e->dot.acc = r->name;
  call_emit_dot(e, &e->dot);
}

static int64_t raw_size(em_t* e, const xc_tiled_value_t* v) { return V(e, v)->dims[0] * V(e, v)->pitch; }

/* ---- dots with staged operands (docs/emitter.md) ------------------------------ */

static mx_t* find_mx(em_t* e, const xc_tiled_op_t* op) {
  for (int i = 0; i < e->num_mx; i++)
    if (e->mx[i].op == op) return &e->mx[i];
  return NULL;
}

/* Whether operand o of m is copied right after its definition (an op that
 * writes storage; otherwise at the dot). */
static bool staged_at_def(em_t* e, const mx_t* m, int o) {
  const xc_tiled_value_t* v = m->op->operands[o];
  return m->stage[o] && v->def && v->def->opcode != XC_TOP_FOR && V(e, v)->st == ST_ARRAY;
}

/* Copies operand o of m into its staging array: storage elements, row
 * pitch lda / ldb, the plan's chunk swizzle; then a barrier. */
static void emit_stage(em_t* e, const mx_t* m, int o) {
  const xc_tiled_value_t* v = m->op->operands[o];
  vinfo_t* x = V(e, v);
  const xc_cstyle_dot_t* d = &m->dot;
  int64_t pitch = o == 0 ? d->lda : d->ldb, shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
  int64_t mask = o == 0 ? d->a_swz_mask : d->b_swz_mask, ch = 16 / (int64_t)xc_dtype_size(v->type.dtype);
  xc_cstyle_writer_t rd = {0}, sv = {0};
  read_at(e, &rd, v, loop_coords, false);
  store_conv(e, &sv, v->type.dtype, wstr(&rd));
  int close = loop_open(e, x, false);
  if (mask)
    L("xs%c%d[i0 * %" PRId64 " + (((i1 / %" PRId64 ") ^ ((i0 >> %" PRId64 ") & %" PRId64 ")) * %" PRId64 ") + i1 %% %" PRId64
      "] = %s;\n",
      o ? 'b' : 'a', m->op->id, pitch, ch, shift, mask, ch, ch, wstr(&sv));
  else
    L("xs%c%d[i0 * %" PRId64 " + i1] = %s;\n", o ? 'b' : 'a', m->op->id, pitch, wstr(&sv));
  loop_close(e, close);
  barrier(e);
  if (rd.oom || sv.oom) fail(e, xc_error_oom());
  free(rd.data), free(sv.data);
}

/* The staging copies of operands defined by op. */
static void emit_stagings_of(em_t* e, const xc_tiled_op_t* op) {
  for (int i = 0; i < e->num_mx; i++)
    for (int o = 0; o < 2; o++)
      if (e->mx[i].op->operands[o]->def == op && staged_at_def(e, &e->mx[i], o)) emit_stage(e, &e->mx[i], o);
}

/* A staged dot: the accumulator into slots, the dialect's instructions on
 * the operand arrays, the slots into the result. */
static void emit_mx(em_t* e, mx_t* m) {
  const xc_tiled_op_t* op = m->op;
  const xc_tiled_value_t* acc = op->operands[2], *res = op->results[0];
  vinfo_t* r = V(e, res);
  char ab[2][80], t[80];
  for (int o = 0; o < 2; o++) {
    if (m->stage[o] && !staged_at_def(e, m, o)) emit_stage(e, m, o);
    if (m->stage[o]) snprintf(ab[o], sizeof ab[o], "xs%c%d", o ? 'b' : 'a', op->id);
    else snprintf(ab[o], sizeof ab[o], "%s", V(e, op->operands[o])->name);
  }
  if (m->regs) {
    emit_copy(e, res, acc, false); /* the result's slots are the accumulator */
    snprintf(t, sizeof t, "%s", r->name);
  } else {
    snprintf(t, sizeof t, "xm%d", op->id);
    xc_cstyle_writer_t rc = {0};
    read_at(e, &rc, acc, loop_coords, V(e, acc)->st == ST_PRIVATE);
    int close = slot_loop_open(e, &m->dot);
    L("%s[j] = %s;\n", t, wstr(&rc));
    loop_close(e, close);
    if (rc.oom) fail(e, xc_error_oom());
    free(rc.data);
  }
  m->dot.a = ab[0];
  m->dot.b = ab[1];
  m->dot.acc = t;
  call_emit_dot(e, &m->dot);
  m->dot.a = m->dot.b = m->dot.acc = NULL;
  if (!m->regs) {
    int close = slot_loop_open(e, &m->dot);
    L("%s[f] = %s[j];\n", r->name, t);
    loop_close(e, close);
    barrier(e);
  }
}

/* The planned dot's loop, software-pipelined over e->stages buffers
 * (docs/emitter.md): the body is the two raw loads, the dot, the yield and
 * inlined index arithmetic, so the loads of a later iteration are the same
 * code under another value of the induction variable. */
static void emit_for_pipelined(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_block_t* body = op->body;
  const xc_tiled_op_t* dot = e->mma;
  const xc_tiled_op_t* la = dot->operands[0]->def, *lb = dot->operands[1]->def;
  int S = e->stages, id = e->seq++;
  const char* it = itype(e);
  emit_copy(e, body->args[1], op->operands[3], true);
  for (int i = 0; i < body->num_ops; i++) {
    const xc_tiled_op_t* b = body->ops[i];
    if ((b->opcode == XC_TOP_CONST || b->opcode == XC_TOP_KNOB) && b->results[0]->type.rank == 0) emit_op(e, b);
  }
  const char* iv = V(e, body->args[0])->name;
  expr_t lb_, ub_, st_;
  vinfo_t scalar = {0};
  L("{\n");
  e->depth++;
  L("const %s xlb%d = %s, xub%d = %s, xst%d = %s;\n", it, id, opnd(e, &lb_, op->operands[0], &scalar), id,
    opnd(e, &ub_, op->operands[1], &scalar), id, opnd(e, &st_, op->operands[2], &scalar));
  expr_free(&lb_), expr_free(&ub_), expr_free(&st_);
  char off[96];
  for (int s = 0; s < S - 1; s++) {
    L("{ /* stage %d */\n", s);
    e->depth++;
    L("const %s %s = xlb%d + %d * xst%d;\n", it, iv, id, s, id);
    L("if (%s < xub%d) {\n", iv, id);
    e->depth++;
    snprintf(off, sizeof off, "%" PRId64, s * raw_size(e, la->results[0]));
    emit_raw_load(e, la, off);
    snprintf(off, sizeof off, "%" PRId64, s * raw_size(e, lb->results[0]));
    emit_raw_load(e, lb, off);
    e->depth--;
    L("}\n");
    e->depth--;
    L("}\n");
    L("%s\n", e->d->copy_commit);
  }
  L("%s xit%d = 0;\n", it, id);
  L("for (%s %s = xlb%d; %s < xub%d; %s += xst%d, xit%d++) {\n", it, iv, id, iv, id, iv, id, id);
  e->depth++;
  indent(e);
  P(&e->body, e->d->copy_wait_fmt, S - 2);
  P(&e->body, "\n");
  barrier(e); /* this stage is complete; every work-item is done with the previous one */
  L("{\n");
  e->depth++;
  L("const %s xnx = %s + %d * xst%d;\n", it, iv, S - 1, id);
  L("const %s xns = (xit%d + %d) %% %d;\n", it, id, S - 1, S);
  L("if (xnx < xub%d) {\n", id);
  e->depth++;
  L("const %s %s = xnx;\n", it, iv);
  snprintf(off, sizeof off, "xns * %" PRId64, raw_size(e, la->results[0]));
  emit_raw_load(e, la, off);
  snprintf(off, sizeof off, "xns * %" PRId64, raw_size(e, lb->results[0]));
  emit_raw_load(e, lb, off);
  e->depth--;
  L("}\n");
  e->depth--;
  L("}\n");
  L("%s\n", e->d->copy_commit);
  char a[128], b[128];
  snprintf(a, sizeof a, "(%s + (xit%d %% %d) * %" PRId64 ")", V(e, la->results[0])->name, id, S,
           raw_size(e, la->results[0]));
  snprintf(b, sizeof b, "(%s + (xit%d %% %d) * %" PRId64 ")", V(e, lb->results[0])->name, id, S,
           raw_size(e, lb->results[0]));
  emit_mma(e, dot, a, b);
  e->depth--;
  L("}\n");
  indent(e);
  P(&e->body, e->d->copy_wait_fmt, 0);
  P(&e->body, "\n");
  barrier(e);
  e->depth--;
  L("}\n");
}

static void emit_block(em_t* e, const xc_tiled_block_t* b);

static void emit_for(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_block_t* body = op->body;
  int nc = op->num_operands - 3;
  bool any_array = false;
  for (int i = 0; i < nc; i++) {
    emit_copy(e, body->args[i + 1], op->operands[3 + i], true);
    any_array |= V(e, body->args[i + 1])->st == ST_ARRAY;
  }
  if (any_array) barrier(e);
  const char* iv = V(e, body->args[0])->name;
  expr_t lb, ub, st;
  vinfo_t scalar = {0};
  L("for (%s %s = %s; %s < %s; %s += %s) {\n", itype(e), iv, opnd(e, &lb, op->operands[0], &scalar), iv,
    opnd(e, &ub, op->operands[1], &scalar), iv, opnd(e, &st, op->operands[2], &scalar));
  expr_free(&lb), expr_free(&ub), expr_free(&st);
  e->depth++;
  emit_block(e, body);
  const xc_tiled_op_t* y = body->num_ops ? body->ops[body->num_ops - 1] : NULL;
  if (!y || y->opcode != XC_TOP_YIELD) {
    fail(e, xc_error(XC_INTERNAL, "cstyle: for body without yield"));
    return;
  }
  barrier(e); /* every work-item is done reading this iteration's storage */
  for (int i = 0; i < nc; i++)
    if (y->operands[i] != body->args[i + 1] && strcmp(V(e, y->operands[i])->name, V(e, body->args[i + 1])->name))
      emit_copy(e, body->args[i + 1], y->operands[i], false);
  if (any_array) barrier(e);
  e->depth--;
  L("}\n");
}

static void emit_op(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->num_results ? op->results[0] : NULL;
  switch (op->opcode) {
    case XC_TOP_CONST:
      if (res->type.rank == 0) {
        char lit[96];
        literal(e, lit, sizeof lit, res->type.dtype, op->f, op->i);
        L("const %s %s = %s;\n", vtype(e, res->type.dtype), V(e, res)->name, lit);
      }
      return;
    case XC_TOP_PROGRAM_ID:
      L("const %s %s = %s;\n", itype(e), V(e, res)->name, e->d->program_id[op->axis]);
      return;
    case XC_TOP_NUM_PROGRAMS:
      L("const %s %s = %s;\n", itype(e), V(e, res)->name, e->d->num_programs[op->axis]);
      return;
    case XC_TOP_KNOB:
      L("const %s %s = %" PRId64 "; /* %s */\n", itype(e), V(e, res)->name, e->knobs[op->axis],
        e->k->knobs[op->axis].name);
      return;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS:
      if (V(e, res)->st != ST_VIRTUAL) emit_view(e, op);
      return;
    case XC_TOP_ARANGE:
    case XC_TOP_ALLOC:
    case XC_TOP_YIELD: return;
    case XC_TOP_BARRIER: barrier(e); return;
    case XC_TOP_LOAD:
      if (V(e, res)->raw) emit_raw_load_sync(e, op);
      else emit_load(e, op, false);
      return;
    case XC_TOP_STORE: emit_store(e, op, false); return;
    case XC_TOP_REDUCE: emit_reduce(e, op); return;
    case XC_TOP_DOT:
      if (op == e->mma) emit_mma(e, op, V(e, op->operands[0])->name, V(e, op->operands[1])->name);
      else if (find_mx(e, op)) emit_mx(e, find_mx(e, op));
      else emit_dot(e, op);
      return;
    case XC_TOP_FOR:
      if (op == e->mma_loop && e->stages > 1) emit_for_pipelined(e, op);
      else emit_for(e, op);
      return;
    default:
      if (res && V(e, res)->st == ST_VIRTUAL) return; /* inlined into its readers */
      emit_elementwise(e, op, false);
      return;
  }
}

/* The loop of a fused group ending in a sum along the innermost axis (C):
 * the outer loops, the accumulator (-0.0, the identity of +), then the
 * innermost loop. fused_reduce_close adds the last element, closes the
 * innermost loop, writes the row's sum and closes the rest. */
static int fused_reduce_open(em_t* e, const vinfo_t* r, const xc_tiled_op_t* red, bool simd) {
  const char* it = itype(e);
  const xc_tiled_value_t* res = red->results[0];
  if (V(e, res)->st == ST_SCALAR) L("%s %s;\n", vtype(e, res->type.dtype), V(e, res)->name);
  for (int i = 0; i < r->rank; i++) {
    if (i == r->rank - 1) {
      L("%s racc = -0.0%s;\n", vtype(e, res->type.dtype), res->type.dtype == XC_F64 ? "" : "f");
      if (simd && e->d->simd_pragma && r->dims[i] != 1) L("%s reduction(+:racc)\n", e->d->simd_pragma);
    }
    if (r->dims[i] == 1) L("{ const %s i%d = 0;\n", it, i);
    else L("for (%s i%d = 0; i%d < %" PRId64 "; i%d++) {\n", it, i, i, r->dims[i], i);
    e->depth++;
  }
  if (r->rank == 1) L("const %s f = i0;\n", it);
  if (r->rank == 2) L("const %s f = i0 * %" PRId64 " + i1;\n", it, r->dims[1]);
  if (r->rank == 3) L("const %s f = (i0 * %" PRId64 " + i1) * %" PRId64 " + i2;\n", it, r->dims[1], r->dims[2]);
  return r->rank;
}

static void fused_reduce_close(em_t* e, const vinfo_t* r, const xc_tiled_op_t* red) {
  expr_t ex;
  L("racc = racc + (%s);\n", opnd(e, &ex, red->operands[0], r));
  expr_free(&ex);
  e->depth--;
  L("}\n");
  xc_cstyle_writer_t d = {0};
  read_at(e, &d, red->results[0], loop_coords, true); /* name[i0 ...] or name */
  L("%s = racc;\n", wstr(&d));
  if (d.oom) fail(e, xc_error_oom());
  free(d.data);
  loop_close(e, r->rank - 1);
}

static void emit_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops && !e->err; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    int g = e->op_group ? e->op_group[op->id] : 0;
    if (!g) {
      emit_op(e, op);
      emit_stagings_of(e, op);
      continue;
    }
    /* a fused group: its scalar definitions (and the arrays of other
     * shapes it reads) first, then one loop over the shared shape writing
     * every member's element */
    int j = i;
    const vinfo_t* shape = NULL;
    bool stores = false;
    for (; j < b->num_ops && e->op_group[b->ops[j]->id] == g; j++) {
      if (e->op_member[b->ops[j]->id]) {
        if (!shape) shape = V(e, b->ops[j]->results[0]);
        stores |= b->ops[j]->opcode == XC_TOP_STORE;
      } else {
        emit_op(e, b->ops[j]);
      }
    }
    const xc_tiled_op_t* red = b->ops[j - 1]->opcode == XC_TOP_REDUCE ? b->ops[j - 1] : NULL;
    int close = red ? fused_reduce_open(e, shape, red, !stores) : loop_open(e, shape, !stores);
    for (int m = i; m < j && !e->err; m++) {
      const xc_tiled_op_t* o = b->ops[m];
      if (!e->op_member[o->id]) continue;
      if (o->opcode == XC_TOP_LOAD) emit_load(e, o, true);
      else if (o->opcode == XC_TOP_STORE) emit_store(e, o, true);
      else if (o->opcode == XC_TOP_REDUCE) fused_reduce_close(e, shape, o);
      else emit_elementwise(e, o, true);
    }
    if (!red) loop_close(e, close);
    i = j - 1;
  }
}

/* ---- analysis: storage classes ------------------------------------------------- */

/* Whether a global load follows a global store (in program order, or in the
 * same loop body): then work-items must see each other's global stores
 * (buffers may alias: views of a kernel's outputs are read by its later phases). */
static void scan_phases(em_t* e, const xc_tiled_block_t* b, bool* stored) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    bool global = op->num_operands > 0 && op->operands[0] && op->operands[0]->type.kind == XC_TILED_MEMREF &&
                  op->operands[0]->type.scope == XC_SCOPE_GLOBAL;
    if (op->opcode == XC_TOP_STORE && global) *stored = true;
    if (op->opcode == XC_TOP_LOAD && global && *stored) e->phased = true;
    if (op->opcode == XC_TOP_FOR) {
      bool inner = false;
      scan_phases(e, op->body, &inner);
      if (inner) {
        /* a store in the body precedes the loads of the next iteration */
        bool again = true;
        scan_phases(e, op->body, &again);
        *stored = true;
      }
    }
  }
}

static void mark_use(em_t* e, const xc_tiled_value_t* v, const vinfo_t* loop_shape) {
  if (!v) return;
  vinfo_t* x = V(e, v);
  if (!loop_shape || !same_shape(x, loop_shape)) x->not_private = true;
}

static void analyze_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    const vinfo_t* r = op->num_results ? V(e, op->results[0]) : NULL;
    switch (op->opcode) {
      case XC_TOP_LOAD:
        for (int j = 1; j < op->num_operands; j++) mark_use(e, op->operands[j], r);
        break;
      case XC_TOP_STORE:
        for (int j = 1; j < op->num_operands; j++) mark_use(e, op->operands[j], V(e, op->operands[1]));
        break;
      case XC_TOP_DOT:
        mark_use(e, op->operands[0], NULL);
        mark_use(e, op->operands[1], NULL);
        mark_use(e, op->operands[2], r);
        break;
      case XC_TOP_FOR:
        for (int j = 3; j < op->num_operands; j++) mark_use(e, op->operands[j], V(e, op->operands[j]));
        analyze_block(e, op->body);
        break;
      case XC_TOP_YIELD:
        for (int j = 0; j < op->num_operands; j++) {
          mark_use(e, op->operands[j], V(e, op->operands[j]));
          V(e, op->operands[j])->yielded = true;
        }
        break;
      case XC_TOP_REDUCE:
        /* a row reduction reads its operand where the threads hold it */
        mark_use(e, op->operands[0], lanes_shape(e, op) ? V(e, op->operands[0]) : NULL);
        break;
      case XC_TOP_EXPAND_DIMS:
      case XC_TOP_BROADCAST:
      case XC_TOP_TRANS:
        mark_use(e, op->operands[0], NULL);
        break;
      default:
        for (int j = 0; j < op->num_operands; j++) mark_use(e, op->operands[j], r);
        break;
    }
  }
}

static void set_shape(em_t* e, vinfo_t* x, const xc_tiled_type_t* t) {
  x->rank = t->rank;
  x->n = 1;
  for (int i = 0; i < t->rank; i++) {
    x->dims[i] = xc_tiled_dim_resolve(t->dims[i], e->knobs);
    x->n *= x->dims[i];
  }
}

static void name_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  if (v->param >= 0) {
    xc_cstyle_param_name(v, x->name, sizeof x->name);
  } else if (v->name) {
    char s[40];
    sanitize(v->name, s, sizeof s, 24);
    snprintf(x->name, sizeof x->name, "%s_%d", s, v->id);
  } else {
    snprintf(x->name, sizeof x->name, "v%d", v->id);
  }
}

static void classify_block(em_t* e, const xc_tiled_block_t* b);

static void classify_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  set_shape(e, x, &v->type);
  if (!x->name[0]) name_value(e, v);
  if (v->type.dtype == XC_F64) e->uses_f64 = true;
  if (v->type.kind == XC_TILED_MEMREF) {
    x->st = ST_MEM;
    return;
  }
  if (x->rank == 0) {
    x->st = ST_SCALAR;
    return;
  }
  if (v->def) {
    const xc_tiled_op_t* op = v->def;
    switch (op->opcode) {
      case XC_TOP_CONST:
      case XC_TOP_ARANGE: x->st = ST_VIRTUAL, x->cost = 1; return;
      case XC_TOP_EXPAND_DIMS:
      case XC_TOP_BROADCAST:
      case XC_TOP_TRANS:
        if (x->yielded) break;
        x->st = ST_VIRTUAL, x->cost = V(e, op->operands[0])->cost;
        return;
      default: break;
    }
    if (is_elementwise(op->opcode) && op->num_operands <= 3 && !x->yielded) {
      int cost = 1;
      bool ok = true;
      for (int i = 0; i < op->num_operands && ok; i++) {
        vinfo_t* o = V(e, op->operands[i]);
        ok = o->st == ST_SCALAR || o->st == ST_VIRTUAL;
        cost += o->st == ST_SCALAR ? 1 : o->cost;
      }
      if (ok && cost <= (e->d->work_groups ? MAX_INLINE_COST : MAX_INLINE_COST_C)) {
        x->st = ST_VIRTUAL, x->cost = cost;
        return;
      }
    }
  }
  x->st = e->d->work_groups && !x->not_private ? ST_PRIVATE : ST_ARRAY;
}

static void classify_block(em_t* e, const xc_tiled_block_t* b) {
  const xc_tiled_op_t* loop = b->parent;
  for (int i = 0; i < b->num_args; i++) {
    const xc_tiled_value_t* init = loop && i > 0 && 2 + i < loop->num_operands ? loop->operands[2 + i] : NULL;
    vinfo_t* x = V(e, b->args[i]);
    if (!x->name[0] && !b->args[i]->name && init && init->name) {
      char h[40];
      sanitize(init->name, h, sizeof h, 24);
      snprintf(x->name, sizeof x->name, "%s_%d", h, b->args[i]->id);
    }
    classify_value(e, b->args[i]);
  }
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      /* Carried values, their body arguments and the loop results share one
       * storage, named after the body argument. */
      for (int c = 0; c + 1 < op->body->num_args && c < op->num_results; c++) {
        vinfo_t* arg = V(e, op->body->args[c + 1]), *res = V(e, op->results[c]);
        arg->not_private = res->not_private = arg->not_private || res->not_private;
      }
      classify_block(e, op->body);
      for (int c = 0; c + 1 < op->body->num_args && c < op->num_results; c++) {
        vinfo_t* res = V(e, op->results[c]);
        *res = *V(e, op->body->args[c + 1]);
      }
      continue;
    }
    for (int r = 0; r < op->num_results; r++) classify_value(e, op->results[r]);
  }
}

/* ---- analysis: the dot for matrix instructions ------------------------------- */

static void count_uses(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int j = 0; j < op->num_operands; j++) {
      if (op->operands[j]) V(e, op->operands[j])->uses++;
      if (op->operands[j] && e->nuses) e->nuses[op->operands[j]->id]++;
    }
    if (op->opcode == XC_TOP_FOR) count_uses(e, op->body);
  }
}

/* 0: uniform over the tile, 1: affine in its coordinates, -1: neither (or unknown). */
static int affine_deg(const xc_tiled_value_t* v) {
  if (!v || !xc_dtype_is_int(v->type.dtype)) return -1;
  if (v->type.rank == 0) return 0;
  const xc_tiled_op_t* op = v->def;
  if (!op) return -1;
  switch (op->opcode) {
    case XC_TOP_CONST: return 0;
    case XC_TOP_ARANGE: return 1;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return affine_deg(op->operands[0]);
    case XC_TOP_ADD:
    case XC_TOP_SUB: {
      int a = affine_deg(op->operands[0]), b = affine_deg(op->operands[1]);
      return a < 0 || b < 0 ? -1 : (a > b ? a : b);
    }
    case XC_TOP_MUL: {
      int a = affine_deg(op->operands[0]), b = affine_deg(op->operands[1]);
      if (a < 0 || b < 0 || (a > 0 && b > 0)) return -1;
      return a > b ? a : b;
    }
    default: return -1;
  }
}

/* A conjunction of comparisons of affine values: the set of coordinates it
 * holds at is convex, so it holds along a segment when it holds at both ends. */
static bool convex_mask(const xc_tiled_value_t* v) {
  if (!v || v->type.rank == 0) return true;
  const xc_tiled_op_t* op = v->def;
  if (!op) return false;
  switch (op->opcode) {
    case XC_TOP_CONST: return true;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return convex_mask(op->operands[0]);
    case XC_TOP_AND: return v->type.dtype == XC_BOOL && convex_mask(op->operands[0]) && convex_mask(op->operands[1]);
    case XC_TOP_CMP: return op->cmp != XC_CMP_NE && affine_deg(op->operands[0]) >= 0 && affine_deg(op->operands[1]) >= 0;
    default: return false;
  }
}

/* A load the dialect can take as a matrix operand: from global memory, used
 * only by the dot, masked-off elements 0. */
static bool raw_operand(em_t* e, const xc_tiled_value_t* v, const xc_tiled_block_t* body) {
  const xc_tiled_op_t* ld = v->def;
  if (!ld || ld->opcode != XC_TOP_LOAD || ld->parent != body || V(e, v)->uses != 1 || v->type.rank != 2) return false;
  const xc_tiled_value_t* mem = ld->operands[0];
  if (mem->type.kind != XC_TILED_MEMREF || mem->type.scope != XC_SCOPE_GLOBAL) return false;
  const xc_tiled_value_t* other = ld->num_operands > 3 ? ld->operands[3] : NULL;
  if (other && !(other->def && other->def->opcode == XC_TOP_CONST && other->def->f == 0 && !signbit(other->def->f)))
    return false;
  return true;
}

/* Whether the body is the loads, the dot, the yield, inlined (virtual)
 * values and scalar constants (hoisted before the pipeline). */
static bool pipelinable(em_t* e, const xc_tiled_block_t* body, const xc_tiled_op_t* dot) {
  for (int i = 0; i < body->num_ops; i++) {
    const xc_tiled_op_t* op = body->ops[i];
    if (op == dot || op == dot->operands[0]->def || op == dot->operands[1]->def || op->opcode == XC_TOP_YIELD) continue;
    if ((op->opcode == XC_TOP_CONST || op->opcode == XC_TOP_KNOB) && op->results[0]->type.rank == 0) continue;
    for (int r = 0; r < op->num_results; r++)
      if (V(e, op->results[r])->st != ST_VIRTUAL) return false;
    if (op->opcode == XC_TOP_FOR || op->opcode == XC_TOP_STORE || op->opcode == XC_TOP_BARRIER) return false;
  }
  return true;
}

/* Bytes of the work-group arrays of block b other than matrix operands
 * (what declare_block will add besides them). */
static int64_t other_local_bytes(em_t* e, const xc_tiled_block_t* b, const xc_tiled_op_t* dot) {
  int64_t n = 0;
  for (int i = 0; i < b->num_args; i++)
    if (V(e, b->args[i])->st == ST_ARRAY)
      n += V(e, b->args[i])->n * (int64_t)xc_dtype_size(b->args[i]->type.dtype == XC_BOOL ? XC_U8 : b->args[i]->type.dtype);
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      n += other_local_bytes(e, op->body, dot);
      continue;
    }
    if (op->opcode == XC_TOP_REDUCE) n += e->T * 8; /* a cooperative reduction's scratch, at most */
    for (int r = 0; r < op->num_results; r++) {
      const xc_tiled_value_t* v = op->results[r];
      if (dot && (v == dot->operands[0] || v == dot->operands[1])) continue;
      xc_dtype_t t = v->type.dtype == XC_BOOL ? XC_U8 : v->type.dtype;
      if (op->opcode == XC_TOP_ALLOC || V(e, v)->st == ST_ARRAY) n += V(e, v)->n * (int64_t)xc_dtype_size(t);
    }
  }
  return n;
}

/* Asks the dialect to plan an [m, k] x [k, n] dot of dtype t with f32
 * accumulation on matrix instructions (d zeroed by the caller): 1 planned,
 * 0 declined, -1 an inconsistent plan (the emitter has failed). */
static int ask_dot_plan(em_t* e, xc_cstyle_dot_t* d, int64_t m, int64_t n, int64_t k, xc_dtype_t t, int id) {
  d->m = m, d->n = n, d->k = k;
  d->a_dtype = t, d->b_dtype = t, d->acc_dtype = XC_F32;
  d->threads = e->T;
  d->warp = e->caps ? e->caps->simd_width : 0;
  d->caps = e->caps;
  d->allow_tf32 = e->allow_tf32;
  if (!e->d->dot_plan(e->d, d)) return 0;
  int64_t ch = 16 / (int64_t)xc_dtype_size(t);
  bool swz_ok = (!d->a_swz_mask || (d->k % ch == 0 && d->a_swz_mask < d->k / ch)) &&
                (!d->b_swz_mask || (d->n % ch == 0 && d->b_swz_mask < d->n / ch));
  if (d->lda < d->k || d->ldb < d->n || d->slots <= 0 || d->slots * e->T != d->m * d->n || !swz_ok) {
    fail(e, xc_error(XC_INTERNAL, "%s dialect: inconsistent plan for dot %d", e->d->name, id));
    return -1;
  }
  return 1;
}

static void plan_mma(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops && !e->mma; i++) {
    const xc_tiled_op_t* loop = b->ops[i];
    if (loop->opcode != XC_TOP_FOR) continue;
    const xc_tiled_block_t* body = loop->body;
    plan_mma(e, body);
    if (e->mma || loop->num_operands != 4 || body->num_args != 2 || !body->num_ops) continue;
    const xc_tiled_op_t* y = body->ops[body->num_ops - 1];
    if (y->opcode != XC_TOP_YIELD || y->num_operands != 1 || !y->operands[0]->def) continue;
    const xc_tiled_op_t* dot = y->operands[0]->def;
    if (dot->opcode != XC_TOP_DOT || dot->parent != body || dot->operands[2] != body->args[1]) continue;
    const xc_tiled_value_t* a = dot->operands[0], *bb = dot->operands[1], *res = dot->results[0];
    xc_dtype_t t = a->type.dtype;
    if (!(t == XC_F16 || t == XC_BF16 || t == XC_F32) || bb->type.dtype != t || res->type.dtype != XC_F32) continue;
    if (!raw_operand(e, a, body) || !raw_operand(e, bb, body)) continue;
    if (V(e, res)->st != ST_PRIVATE || V(e, body->args[1])->st != ST_PRIVATE ||
        V(e, loop->results[0])->st != ST_PRIVATE || V(e, res)->uses != 1)
      continue;
    xc_cstyle_dot_t* d = &e->dot;
    memset(d, 0, sizeof *d);
    int planned = ask_dot_plan(e, d, V(e, res)->dims[0], V(e, res)->dims[1], V(e, a)->dims[1], t, dot->id);
    if (planned < 0) return;
    if (!planned) continue;
    e->mma = dot;
    e->mma_loop = loop;
    e->frag = &e->dot;
    /* the dot's result lives in the accumulator's registers */
    if (V(e, res) != V(e, body->args[1])) memcpy(V(e, res)->name, V(e, body->args[1])->name, sizeof V(e, res)->name);
    int s = xc_tiled_knob_of_kind(e->k, XC_KNOB_STAGES);
    int64_t stages = s >= 0 ? e->knobs[s] : 1;
    if (stages > 1 && e->d->copy16_async && pipelinable(e, body, dot)) e->stages = (int)stages;
    /* fewer stages when the buffers would not fit the device's work-group
     * memory (the knob is a request, like the other hints) */
    int64_t per_stage = (d->m * d->lda + d->k * d->ldb) * (int64_t)xc_dtype_size(t);
    if (e->caps && e->caps->local_memory_bytes > 0) {
      int64_t other = other_local_bytes(e, e->k->body, dot);
      int want = e->stages > 1 ? e->stages : 1, fit = want;
      while (fit > 1 && per_stage * fit > e->caps->local_memory_bytes - other) fit--;
      /* the requested stages (or the single buffer) in dynamic work-group
       * memory when static arrays cannot hold them: each buffer rounded to
       * 128 bytes, the static arrays beside them within the opt-in limit */
      int64_t optin = e->d->dyn_local_array ? e->caps->local_memory_optin_bytes : 0;
      int64_t dyn_per_stage = ((d->m * d->lda * (int64_t)xc_dtype_size(t) + 127) / 128 +
                               (d->k * d->ldb * (int64_t)xc_dtype_size(t) + 127) / 128) * 128;
      bool over = per_stage * fit > e->caps->local_memory_bytes - other;
      if ((fit < want || over) && optin > e->caps->local_memory_bytes) {
        int dfit = want;
        while (dfit > 1 && dyn_per_stage * dfit > optin - other) dfit--;
        if (dyn_per_stage * dfit <= optin - other && (dfit > fit || over)) fit = dfit, e->dyn = true;
      }
      if (e->stages > 1) e->stages = fit >= 2 ? fit : 0;
    }
    const xc_tiled_value_t* ops[2] = {a, bb};
    for (int o = 0; o < 2; o++) {
      vinfo_t* x = V(e, ops[o]);
      const xc_tiled_op_t* ld = ops[o]->def;
      x->raw = true;
      x->st = ST_ARRAY;
      x->pitch = o == 0 ? d->lda : d->ldb;
      x->swz_shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
      x->swz_mask = o == 0 ? d->a_swz_mask : d->b_swz_mask;
      x->bufs = e->stages > 1 ? e->stages : 1;
      x->dyn = e->dyn;
      x->chunked = affine_deg(ld->operands[1]) >= 0 && convex_mask(ld->num_operands > 2 ? ld->operands[2] : NULL);
    }
  }
}

/* Whether two plans put the elements of one [m, n] shape in the same slots. */
static bool same_layout(em_t* e, const xc_cstyle_dot_t* a, const xc_cstyle_dot_t* b) {
  if (a->m != b->m || a->n != b->n || a->slots != b->slots) return false;
  xc_cstyle_writer_t wa = {0}, wb = {0};
  e->d->dot_slot_index(&wa, a, "j");
  e->d->dot_slot_index(&wb, b, "j");
  bool same = !wa.oom && !wb.oom && !strcmp(wstr(&wa), wstr(&wb));
  free(wa.data), free(wb.data);
  return same;
}

/* Bytes of work-group memory a staged dot's operands add. */
static int64_t staged_bytes(const xc_cstyle_dot_t* d) {
  return (d->m * d->lda + d->k * d->ldb) * (int64_t)xc_dtype_size(d->a_dtype);
}

/* Offers every dot of block b (and nested blocks) other than the mma dot to
 * the dialect with staged operands (dialect.dot_staged). A dot is taken when
 * the dialect plans it, its private accumulator or result (if any) can follow
 * its plan's layout (the first such dot sets e->frag; a later one must have
 * the same layout at the same shape, or none at another), and the arrays fit
 * the work-group memory next to the kernel's others (*room). */
static void plan_staged(em_t* e, const xc_tiled_block_t* b, int64_t* room) {
  for (int i = 0; i < b->num_ops && e->num_mx < MAX_STAGED_DOTS; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      plan_staged(e, op->body, room);
      continue;
    }
    if (op->opcode != XC_TOP_DOT || op == e->mma) continue;
    const xc_tiled_value_t* a = op->operands[0], *bb = op->operands[1], *acc = op->operands[2], *res = op->results[0];
    xc_dtype_t t = a->type.dtype;
    if (!(t == XC_F16 || t == XC_BF16 || t == XC_F32) || bb->type.dtype != t || res->type.dtype != XC_F32) continue;
    vinfo_t* r = V(e, res), *ai = V(e, acc);
    if (r->st != ST_ARRAY && r->st != ST_PRIVATE) continue;
    if (ai->st != ST_ARRAY && ai->st != ST_PRIVATE && ai->st != ST_VIRTUAL && ai->st != ST_SCALAR) continue;
    mx_t* m = &e->mx[e->num_mx];
    memset(m, 0, sizeof *m);
    xc_cstyle_dot_t* d = &m->dot;
    int planned = ask_dot_plan(e, d, r->dims[0], r->dims[1], V(e, a)->dims[1], t, op->id);
    if (planned < 0) return;
    if (!planned) continue;
    bool needs_layout = r->st == ST_PRIVATE || ai->st == ST_PRIVATE;
    if (needs_layout && e->frag && !same_layout(e, e->frag, d)) continue;
    if (staged_bytes(d) > *room) continue;
    *room -= staged_bytes(d);
    if (needs_layout && !e->frag) e->frag = d;
    m->op = op;
    m->regs = r->st == ST_PRIVATE;
    const xc_tiled_value_t* ops[2] = {a, bb};
    for (int o = 0; o < 2; o++) {
      vinfo_t* x = V(e, ops[o]);
      const xc_tiled_op_t* ld = ops[o]->def;
      if (!raw_operand(e, ops[o], op->parent) || x->raw) {
        m->stage[o] = true;
        continue;
      }
      /* a load used by nothing else is copied straight into the plan's layout */
      x->raw = true;
      x->st = ST_ARRAY;
      x->pitch = o == 0 ? d->lda : d->ldb;
      x->swz_shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
      x->swz_mask = o == 0 ? d->a_swz_mask : d->b_swz_mask;
      x->bufs = 1;
      x->chunked = affine_deg(ld->operands[1]) >= 0 && convex_mask(ld->num_operands > 2 ? ld->operands[2] : NULL);
    }
    e->num_mx++;
  }
}

/* ---- fusion of element loops (C) ------------------------------------------------ */

/* Whether reading v at the coordinates of a loop over `shape` reads the
 * values written by members of group g only at the loop's own coordinates
 * (identity: so far the path from the reader kept those coordinates). */
static bool reads_aligned(em_t* e, const xc_tiled_value_t* v, const vinfo_t* shape, int g, bool identity) {
  if (!v) return true;
  vinfo_t* x = V(e, v);
  const xc_tiled_op_t* d = v->def;
  if (d && e->op_group[d->id] == g && e->op_member[d->id]) return identity && same_shape(x, shape);
  if (x->st != ST_VIRTUAL || !d) return true;
  bool elementwise = is_elementwise(d->opcode);
  for (int i = 0; i < d->num_operands; i++) {
    const xc_tiled_value_t* o = d->operands[i];
    bool keep = elementwise && identity && o && same_shape(V(e, o), shape);
    if (!reads_aligned(e, o, shape, g, keep)) return false;
  }
  return true;
}

/* Whether v is computed from a member of group g (directly or through
 * virtual values, which are expressions of their operands). */
static bool reads_group(em_t* e, const xc_tiled_value_t* v, int g) {
  if (!v || !v->def) return false;
  const xc_tiled_op_t* d = v->def;
  if (e->op_group[d->id] == g && e->op_member[d->id]) return true;
  if (V(e, v)->st != ST_VIRTUAL) return false;
  for (int i = 0; i < d->num_operands; i++)
    if (reads_group(e, d->operands[i], g)) return true;
  return false;
}

/* Role of op in a fused loop over `shape` (group g): 2 member (writes an
 * element of that shape: an elementwise op or a load with array storage),
 * 1 passive (a scalar definition emitted before the loop, a virtual value
 * that emits nothing, or a load or elementwise op with an array of another
 * shape that reads no member — a row of LayerNorm's gamma inside a loop
 * over [rows, cols] — emitted before the loop as its own loop), 0 ends the
 * group. */
static int fusion_role(em_t* e, const xc_tiled_op_t* op, const vinfo_t* shape, int g) {
  if (op->opcode == XC_TOP_REDUCE) /* a float sum along the innermost axis: see plan_fusion */
    return shape && op->reduce == XC_REDUCE_SUM && fcompute(op->results[0]->type.dtype) &&
                   op->axis == shape->rank - 1 && same_shape(V(e, op->operands[0]), shape) &&
                   (V(e, op->results[0])->st == ST_ARRAY || V(e, op->results[0])->st == ST_SCALAR)
               ? 2
               : 0;
  if (op->opcode == XC_TOP_STORE) /* the element's store: see plan_fusion */
    return shape && !e->phased && op->operands[0]->type.scope == XC_SCOPE_GLOBAL &&
                   V(e, op->operands[1])->rank > 0 && same_shape(V(e, op->operands[1]), shape)
               ? 2
               : 0;
  const vinfo_t* r = op->num_results ? V(e, op->results[0]) : NULL;
  if (shape && r && r->st == ST_ARRAY && !same_shape(r, shape) &&
      (op->opcode == XC_TOP_LOAD || is_elementwise(op->opcode))) {
    for (int i = 0; i < op->num_operands; i++)
      if (reads_group(e, op->operands[i], g)) return 0;
    return 1;
  }
  switch (op->opcode) {
    case XC_TOP_LOAD:
      return r->st == ST_ARRAY && (!shape || same_shape(r, shape)) ? 2 : 0;
    case XC_TOP_CONST:
    case XC_TOP_ARANGE:
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS:
    case XC_TOP_KNOB: return shape ? 1 : 0;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: return shape && r->st == ST_VIRTUAL ? 1 : 0;
    default: break;
  }
  if (!is_elementwise(op->opcode) || !r) return 0;
  if (r->st == ST_ARRAY) return !shape || same_shape(r, shape) ? 2 : 0;
  return shape && (r->st == ST_VIRTUAL || r->st == ST_SCALAR) ? 1 : 0;
}

/* Groups runs of consecutive ops of a block into one element loop: members
 * that write elements of one shape, reading each other only at the loop's
 * coordinates (so one pass over the elements computes the same values as
 * one loop per op). Loads read global memory, so the order of loads and
 * arithmetic across elements does not matter. Global stores of that shape
 * join too when the kernel is not phased (no global load follows a global
 * store, so no load of the kernel reads what it stores, whatever aliases):
 * the loop then has no simd pragma (offsets may repeat; the compiler
 * vectorizes what it can prove), and the stored value needs no array. A
 * float sum along the innermost axis of a member ends the group as its last
 * member: the loop accumulates it per row (a simd reduction, as emit_reduce
 * does). A member result that only later members of its group read becomes
 * ST_LOCAL. */
static void plan_fusion(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      plan_fusion(e, op->body);
      continue;
    }
    if (fusion_role(e, op, NULL, 0) != 2) continue;
    const vinfo_t* shape = V(e, op->results[0]);
    int g = ++e->num_groups, members = 0, j = i;
    for (; j < b->num_ops; j++) {
      const xc_tiled_op_t* o = b->ops[j];
      int role = fusion_role(e, o, shape, g);
      if (role == 2)
        for (int k = 0; k < o->num_operands && role; k++)
          if (o->operands[k] && !reads_aligned(e, o->operands[k], shape, g, same_shape(V(e, o->operands[k]), shape)))
            role = 0;
      if (!role) break;
      e->op_group[o->id] = g;
      e->op_member[o->id] = role == 2;
      members += role == 2;
      if (role == 2 && o->opcode == XC_TOP_REDUCE) {
        j++;
        break;
      }
    }
    if (members < 2) {
      for (int m = i; m < j; m++) e->op_group[b->ops[m]->id] = 0, e->op_member[b->ops[m]->id] = false;
      continue;
    }
    /* trailing passive ops are emitted normally */
    while (!e->op_member[b->ops[j - 1]->id]) e->op_group[b->ops[--j]->id] = 0;
    /* results read only by members of this group need no array */
    for (int m = i; m < j; m++) {
      const xc_tiled_op_t* o = b->ops[m];
      if (!e->op_member[o->id] || !o->num_results || o->opcode == XC_TOP_REDUCE) continue;
      const xc_tiled_value_t* v = o->results[0];
      int in_group = 0;
      for (int u = i; u < j; u++) {
        const xc_tiled_op_t* w = b->ops[u];
        if (!e->op_member[w->id]) continue;
        for (int k = 0; k < w->num_operands; k++) in_group += w->operands[k] == v;
      }
      if (in_group == e->nuses[v->id] && !V(e, v)->yielded) V(e, v)->st = ST_LOCAL;
    }
    i = j - 1;
  }
}

/* Declares the ARRAY / PRIVATE storage of v (nothing for other classes). */
static void declare_value(em_t* e, const xc_tiled_value_t* v) {
  vinfo_t* x = V(e, v);
  if (x->raw && x->dyn) {
    int64_t n = x->dims[0] * x->pitch * x->bufs;
    if (!e->dyn_bytes) P(&e->decls, "%s\n", e->d->dyn_local_array);
    P(&e->decls, "%s* const %s = (%s*)(xc_dsm + %" PRId64 ");\n", stype(e, v->type.dtype), x->name,
      stype(e, v->type.dtype), e->dyn_bytes);
    e->dyn_bytes += (n * (int64_t)xc_dtype_size(v->type.dtype) + 127) / 128 * 128;
    return;
  }
  if (x->raw) {
    int64_t n = x->dims[0] * x->pitch * x->bufs;
    P(&e->decls, "%s%s%s %s[%" PRId64 "];\n", e->d->local_qual, e->d->align16 ? e->d->align16 : "",
      stype(e, v->type.dtype), x->name, n);
    e->local_bytes += n * (int64_t)xc_dtype_size(v->type.dtype);
    return;
  }
  if (e->mma && v == e->mma->results[0]) return; /* shares the accumulator's array */
  if (x->st != ST_ARRAY && x->st != ST_PRIVATE) return;
  bool priv = x->st == ST_PRIVATE;
  int64_t n = priv ? (x->n + e->T - 1) / e->T : x->n;
  P(&e->decls, "%s%s %s[%" PRId64 "];\n", priv ? e->d->private_qual : e->d->local_qual, vtype(e, v->type.dtype),
    x->name, n);
  if (!priv) e->local_bytes += n * (int64_t)xc_dtype_size(v->type.dtype == XC_BOOL ? XC_U8 : v->type.dtype);
}

/* Declarations of ARRAY / PRIVATE storage and allocations, hoisted to the
 * top of the program (OpenCL wants __local arrays at kernel scope). */
static void declare_block(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_args; i++) declare_value(e, b->args[i]);
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      declare_block(e, op->body); /* results share the body arguments' storage */
      continue;
    }
    for (int r = 0; r < op->num_results; r++) {
      const xc_tiled_value_t* v = op->results[r];
      vinfo_t* x = V(e, v);
      if (op->opcode == XC_TOP_ALLOC) {
        P(&e->decls, "%s%s %s[%" PRId64 "];\n", e->d->local_qual, stype(e, v->type.dtype), x->name, x->n);
        e->local_bytes += x->n * (int64_t)xc_dtype_size(v->type.dtype);
      } else {
        declare_value(e, v);
      }
    }
  }
}

/* The staging arrays and accumulator slots of the staged dots. */
static void declare_staged(em_t* e) {
  for (int i = 0; i < e->num_mx; i++) {
    const mx_t* m = &e->mx[i];
    const xc_cstyle_dot_t* d = &m->dot;
    for (int o = 0; o < 2; o++) {
      if (!m->stage[o]) continue;
      int64_t n = o == 0 ? d->m * d->lda : d->k * d->ldb;
      P(&e->decls, "%s%s%s xs%c%d[%" PRId64 "];\n", e->d->local_qual, e->d->align16 ? e->d->align16 : "",
        stype(e, d->a_dtype), o ? 'b' : 'a', m->op->id, n);
      e->local_bytes += n * (int64_t)xc_dtype_size(d->a_dtype);
    }
    if (!m->regs)
      P(&e->decls, "%s%s xm%d[%" PRId64 "];\n", e->d->private_qual, vtype(e, d->acc_dtype), m->op->id, d->slots);
  }
}

/* ---- support check -------------------------------------------------------------- */

static bool check_block(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_block_t* b,
                        char* why, size_t why_size);

static bool check_value(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_value_t* v,
                        char* why, size_t why_size) {
  xc_dtype_t t = v->type.dtype;
  if (t == XC_F8E4M3FN || t == XC_F8E5M2 || t == XC_DTYPE_UNDEFINED || t > XC_F8E5M2) {
    snprintf(why, why_size, "dtype %s is not supported by the %s emitter", xc_dtype_name(t), d->name);
    return false;
  }
  if (t == XC_F64 && caps && d->work_groups && !(caps->dtypes & XC_DT(XC_F64))) {
    snprintf(why, why_size, "f64 values need a device with double precision (%s)", caps->name);
    return false;
  }
  return true;
}

static bool check_block(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_block_t* b,
                        char* why, size_t why_size) {
  for (int i = 0; i < b->num_args; i++)
    if (!check_value(d, caps, b->args[i], why, why_size)) return false;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    for (int r = 0; r < op->num_results; r++)
      if (!check_value(d, caps, op->results[r], why, why_size)) return false;
    if (op->opcode == XC_TOP_FOR) {
      const xc_tiled_block_t* body = op->body;
      const xc_tiled_op_t* y = body->num_ops ? body->ops[body->num_ops - 1] : NULL;
      for (int c = 0; y && c < y->num_operands; c++)
        for (int a = 1; a < body->num_args; a++)
          if (y->operands[c] == body->args[a] && a != c + 1) {
            snprintf(why, why_size, "op %d (for) yields carried value %d in slot %d: permuting carried "
                     "values is not supported by the %s emitter", op->id, a - 1, c, d->name);
            return false;
          }
      if (!check_block(d, caps, body, why, why_size)) return false;
    }
  }
  return true;
}

bool xc_cstyle_supports(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                        char* why, size_t why_size) {
  char dummy[8];
  if (!why || !why_size) why = dummy, why_size = sizeof dummy;
  why[0] = 0;
  xc_status_t st = xc_tiled_verify(k);
  if (st) {
    snprintf(why, why_size, "%s", xc_status_message(st));
    xc_status_free(st);
    return false;
  }
  for (int i = 0; i < k->num_params; i++)
    if (!check_value(d, caps, k->params[i], why, why_size)) return false;
  return check_block(d, caps, k->body, why, why_size);
}

/* ---- prelude shared by all dialects ---------------------------------------------- */

static const char* const shared_prelude =
    "#define XC_MAX(a, b) ((a) > (b) || (a) != (a) ? (a) : (b))\n"
    "#define XC_MIN(a, b) ((a) < (b) || (a) != (a) ? (a) : (b))\n"
    "/* f16 / bf16 are stored as 16-bit integers and computed in float. */\n"
    "static inline float xc_h2f(xc_u16 h) {\n"
    "  xc_u32 sign = ((xc_u32)h & 0x8000u) << 16, e = ((xc_u32)h >> 10) & 0x1fu, m = (xc_u32)h & 0x3ffu;\n"
    "  if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }\n"
    "  if (e == 31) return xc_bitsf(sign | 0x7f800000u | (m << 13));\n"
    "  return xc_bitsf(sign | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "#ifndef XC_NATIVE_F2H /* a dialect prelude may define xc_f2h with an instruction */\n"
    "static inline xc_u16 xc_f2h(float f) {\n"
    "  xc_u32 x = xc_fbits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
    "  if (ax >= 0x7f800000u) return (xc_u16)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));\n"
    "  if (ax >= 0x477ff000u) return (xc_u16)(sign | 0x7c00u);\n"
    "  if (ax < 0x38800000u) {\n"
    "    xc_u32 e = ax >> 23;\n"
    "    if (e < 102u) return (xc_u16)sign;\n"
    "    xc_u32 m = (ax & 0x7fffffu) | 0x800000u, sh = 126u - e, r = m >> sh, rem = m & ((1u << sh) - 1u);\n"
    "    xc_u32 hb = 1u << (sh - 1u);\n"
    "    if (rem > hb || (rem == hb && (r & 1u))) r++;\n"
    "    return (xc_u16)(sign | r);\n"
    "  }\n"
    "  xc_u32 h = (ax - 0x38000000u) >> 13, rem = ax & 0x1fffu;\n"
    "  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;\n"
    "  return (xc_u16)(sign | h);\n"
    "}\n"
    "#endif\n"
    "static inline float xc_bf2f(xc_u16 b) { return xc_bitsf((xc_u32)b << 16); }\n"
    "#ifndef XC_NATIVE_F2BF /* a dialect prelude may define xc_f2bf with an instruction */\n"
    "static inline xc_u16 xc_f2bf(float f) {\n"
    "  xc_u32 x = xc_fbits(f);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) return (xc_u16)((x >> 16) | 0x40u);\n"
    "  return (xc_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "}\n"
    "#endif\n";

/* ---- entry ------------------------------------------------------------------------ */

/* One " * <tag><text>" line of the header comment, kept closed whatever the
 * text holds. */
static void provenance_line(xc_cstyle_writer_t* w, const char* tag, const char* text) {
  P(w, " * %s", tag);
  for (const char* c = text; *c; c++) P(w, "%c", (c[0] == '*' && c[1] == '/') ? '+' : (*c == '\n' ? ' ' : *c));
  P(w, "\n");
}

xc_status_t xc_cstyle_emit(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           const xc_knob_t* knobs, int num_knobs, const xc_cstyle_options_t* options,
                           xc_kernel_source_t* out) {
  memset(out, 0, sizeof *out);
  char why[512];
  if (!xc_cstyle_supports(d, caps, k, why, sizeof why))
    return xc_error(XC_UNSUPPORTED, "%s emitter: kernel '%s': %s", d->name, k->name, why);
  int64_t* values = calloc((size_t)(k->num_knobs ? k->num_knobs : 1), sizeof *values);
  em_t e;
  memset(&e, 0, sizeof e);
  e.vi = calloc((size_t)(k->num_values > 0 ? k->num_values : 1), sizeof *e.vi);
  if (!values || !e.vi) {
    free(values), free(e.vi);
    return xc_error_oom();
  }
  e.d = d;
  e.k = k;
  e.knobs = values;
  e.caps = caps;
  e.allow_tf32 = options && options->allow_tf32;
  int tf32_knob = xc_tiled_find_knob(k, "tf32");
  e.err = xc_cstyle_resolve_knobs(k, knobs, num_knobs, values);
  e.T = d->work_groups ? xc_tiled_threads(k, values) : 1;
  /* chunks of 16 bytes of the widest global element the kernel moves */
  e.vec = 1;
  if (!e.err && d->work_groups && d->vec_chunks) {
    int64_t w = widest_global(k->body);
    if (w > 0 && w <= 8) e.vec = 16 / w;
  }
  if (!e.err && tf32_knob >= 0 && k->knobs[tf32_knob].kind == XC_KNOB_OTHER && values[tf32_knob] == 1)
    e.allow_tf32 = true; /* the lowering chose tf32 for a compile that allows it */
  e.simd = caps && caps->simd_width > 0 && !d->work_groups ? caps->simd_width : 8;
  if (!e.err && d->work_groups && caps && caps->max_threads_per_group > 0 && e.T > caps->max_threads_per_group)
    e.err = xc_error(XC_UNSUPPORTED, "%s emitter: %" PRId64 " threads per program exceed the device limit %d",
                     d->name, e.T, caps->max_threads_per_group);
  if (!e.err && !(e.ranges = xc_tiled_ranges(k, values))) e.err = xc_error_oom();
  if (!e.err) {
    for (int i = 0; i < k->num_params; i++) classify_value(&e, k->params[i]);
    bool stored = false;
    scan_phases(&e, k->body, &stored);
    /* first pass: shapes and names, so that uses can be compared */
    classify_block(&e, k->body);
    analyze_block(&e, k->body);
    classify_block(&e, k->body);
    if (d->work_groups && d->dot_plan && d->dot_slot_index && d->emit_dot) {
      count_uses(&e, k->body);
      plan_mma(&e, k->body);
      if (d->dot_staged && !e.err) {
        int64_t room = INT64_MAX;
        if (caps && caps->local_memory_bytes > 0) {
          room = caps->local_memory_bytes - other_local_bytes(&e, k->body, e.mma);
          if (e.mma && !e.dyn) room -= staged_bytes(&e.dot) * (e.stages > 1 ? e.stages : 1);
        }
        plan_staged(&e, k->body, &room);
      }
    }
    if (!d->work_groups) {
      e.op_group = calloc((size_t)k->num_ops + 1, sizeof *e.op_group);
      e.op_member = calloc((size_t)k->num_ops + 1, sizeof *e.op_member);
      e.nuses = calloc((size_t)k->num_values + 1, sizeof *e.nuses);
      if (!e.op_group || !e.op_member || !e.nuses) {
        free(e.op_group), free(e.op_member), free(e.nuses);
        e.op_group = NULL, e.op_member = NULL, e.nuses = NULL;
      } else {
        count_uses(&e, k->body);
        plan_fusion(&e, k->body);
      }
    }
    declare_block(&e, k->body);
    declare_staged(&e);
    e.depth = 1;
    emit_block(&e, k->body);
  }
  if (!e.err && !d->work_groups && e.local_bytes > XC_CSTYLE_MAX_STACK_BYTES)
    e.err = xc_error(XC_UNSUPPORTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " bytes of tile arrays per program with these "
                     "knobs, more than the %lld allowed on a thread's stack: choose smaller tiles",
                     d->name, k->name, e.local_bytes, (long long)XC_CSTYLE_MAX_STACK_BYTES);
  if (!e.err && d->work_groups && caps && caps->local_memory_bytes > 0 && e.local_bytes > caps->local_memory_bytes)
    e.err = xc_error(XC_UNSUPPORTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " bytes of local memory with these knobs, "
                     "the device has %" PRId64,
                     d->name, k->name, e.local_bytes, caps->local_memory_bytes);
  if (!e.err && e.dyn_bytes && e.local_bytes + e.dyn_bytes > caps->local_memory_optin_bytes)
    e.err = xc_error(XC_UNSUPPORTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " + %" PRId64 " bytes of static and dynamic "
                     "local memory with these knobs, the device allows %" PRId64,
                     d->name, k->name, e.local_bytes, e.dyn_bytes, caps->local_memory_optin_bytes);
  char entry[128], kname[100];
  sanitize(k->name, kname, sizeof kname, 90);
  snprintf(entry, sizeof entry, "xk_%s", kname);
  xc_cstyle_writer_t src = {0};
  if (!e.err) {
    P(&src, "/* xcomp kernel %s: %s, emitted for %s", k->name, entry, d->name);
    if (caps && caps->name[0]) P(&src, " (%s)", caps->name);
    P(&src, "\n");
    if (k->num_knobs) {
      P(&src, " * knobs:");
      for (int i = 0; i < k->num_knobs; i++) P(&src, " %s=%" PRId64, k->knobs[i].name, values[i]);
      P(&src, "\n");
    }
    if (d->work_groups) P(&src, " * work-items per program: %" PRId64 "\n", e.T);
    if (k->origin) provenance_line(&src, "graph nodes: ", k->origin);
    if (e.mma)
      P(&src, " * dot %d on matrix instructions, K loop in %d pipeline stages%s\n", e.mma->id,
        e.stages > 1 ? e.stages : 1, e.dyn ? " (operands in dynamic work-group memory)" : "");
    for (int i = 0; i < e.num_mx; i++)
      P(&src, " * dot %d on matrix instructions, operands staged in work-group memory\n", e.mx[i].op->id);
    for (int i = 0; options && i < options->num_provenance; i++)
      if (options->provenance[i]) provenance_line(&src, "from: ", options->provenance[i]);
    P(&src, " */\n%s", d->prelude);
    if (e.uses_f64 && d->f64_prelude) P(&src, "%s", d->f64_prelude);
    P(&src, "%s\n", shared_prelude);
    for (int t = 0; t < XC_DTYPE_COUNT; t++)
      for (int b = 4; b <= 16; b *= 2)
        if (e.vec_types[t] & (unsigned)b)
          P(&src, "typedef struct __attribute__((aligned(%d))) { %s v[%d]; } xc_v%d_%s;\n", b,
            d->storage_type[t], b / (int)xc_dtype_size((xc_dtype_t)t), b, xc_dtype_name((xc_dtype_t)t));
    xc_cstyle_entry_t en = {k, entry, e.T, wstr(&e.decls), wstr(&e.body), e.mma ? &e.dot : NULL, e.dyn_bytes};
    d->write_entry(&src, d, &en);
    if (src.oom || e.decls.oom || e.body.oom) e.err = xc_error_oom();
  }
  free(e.decls.data), free(e.body.data), free(e.vi), free(e.ranges), free(values);
  free(e.op_group), free(e.op_member), free(e.nuses);
  if (e.err) {
    free(src.data);
    return e.err;
  }
  out->language = d->name;
  out->text = src.data;
  snprintf(out->entry, sizeof out->entry, "%s", entry);
  return NULL;
}
