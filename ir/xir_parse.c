/* .xir parser: recursive descent over the tokens of xir_lexer.c, building a
 * graph as it goes. Ops are resolved while parsing, so unknown ops, unknown
 * attributes, wrong attribute kinds and wrong arities are reported at the
 * exact place in the text. Every error is XC_INVALID_ARGUMENT with a message
 * "file:line:col: ...". The grammar is documented in docs/ir.md. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xcomp/op.h"
#include "xcomp/xir.h"
#include "xir_internal.h"

typedef struct parser {
  xir_lexer_t lx;
  xir_token_t tok; /* current token */
  const char* file;
  const char* prov_file; /* `file` in the graph's arena, for provenance */
  const char* base_dir;
  /* xc_xir_parse_with_side: the one side file, in memory */
  const char* side_name;
  const uint8_t* side;
  size_t side_size;
  bool side_borrow;
  xc_graph_t* g;
  xc_arena_t* tmp; /* scratch strings, freed with the parser */
  int depth;
  /* Where each value was defined (by value id), for duplicate messages. */
  int* def_line;
  int* def_col;
  int def_cap;
} parser_t;

/* A parsed type: dtype and rank (-1 = unknown, written `[?]`). */
typedef struct vtype {
  xc_dtype_t dtype;
  int rank;
  xc_dim_t dims[XC_MAX_RANK];
} vtype_t;

/* ---- errors and token helpers ------------------------------------------ */

static xc_status_t err_at(const parser_t* p, int line, int col, const char* fmt, ...)
    XC_PRINTF(4, 5);
static xc_status_t err_at(const parser_t* p, int line, int col, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xc_error(XC_INVALID_ARGUMENT, "%s:%d:%d: %s", p->file, line, col, msg);
}

static xc_status_t expected(const parser_t* p, const char* what) {
  char got[200];
  if (p->tok.kind == XIR_TOK_ERROR)
    return err_at(p, p->tok.line, p->tok.col, "%s", p->lx.error);
  return err_at(p, p->tok.line, p->tok.col, "expected %s, got %s", what,
                xc_xir_describe_token(&p->lx, &p->tok, got, sizeof got));
}

static void next(parser_t* p) { xc_xir_lex(&p->lx, &p->tok); }

static xir_token_t peek_next(const parser_t* p) {
  xir_lexer_t copy = p->lx;
  xir_token_t t;
  xc_xir_lex(&copy, &t);
  return t;
}

static bool is_punct(const parser_t* p, char c) {
  return p->tok.kind == XIR_TOK_PUNCT && p->tok.punct == c;
}

static bool accept(parser_t* p, char c) {
  if (!is_punct(p, c)) return false;
  next(p);
  return true;
}

static xc_status_t expect(parser_t* p, char c, const char* what) {
  if (!accept(p, c)) return expected(p, what);
  return NULL;
}

static bool tok_is_word(const parser_t* p, const xir_token_t* t, const char* w) {
  size_t n = strlen(w);
  return t->kind == XIR_TOK_IDENT && t->len == n &&
         memcmp(p->lx.text + t->start, w, n) == 0;
}

static bool is_word(const parser_t* p, const char* w) { return tok_is_word(p, &p->tok, w); }

static xc_status_t oom(void) { return xc_error_oom(); }

/* Text of the current IDENT or decoded STRING, in the scratch arena. */
static xc_status_t token_text(parser_t* p, const xir_token_t* t, char** out) {
  char* s = xc_arena_alloc(p->tmp, t->len + 1);
  if (!s) return oom();
  if (t->kind == XIR_TOK_STRING)
    xc_xir_decode_string(p->lx.text, t, s);
  else
    memcpy(s, p->lx.text + t->start, t->len);
  *out = s;
  return NULL;
}

/* name := IDENT | STRING */
static xc_status_t parse_name(parser_t* p, const char* what, char** out) {
  if (p->tok.kind != XIR_TOK_IDENT && p->tok.kind != XIR_TOK_STRING)
    return expected(p, what);
  if (is_word(p, "_"))
    return err_at(p, p->tok.line, p->tok.col,
                  "'_' marks an omitted value and cannot be a name (quote it: \"_\")");
  XC_RETURN_IF_ERROR(token_text(p, &p->tok, out));
  if (!**out) return err_at(p, p->tok.line, p->tok.col, "%s must not be empty", what);
  next(p);
  return NULL;
}

static xc_status_t enter(parser_t* p) {
  if (++p->depth > XC_XIR_MAX_DEPTH)
    return err_at(p, p->tok.line, p->tok.col, "nesting deeper than %d levels",
                  XC_XIR_MAX_DEPTH);
  return NULL;
}

/* Signed 64-bit integer literal with optional leading '-'. */
static xc_status_t parse_i64(parser_t* p, const char* what, int64_t* out) {
  int line = p->tok.line, col = p->tok.col;
  bool neg = accept(p, '-');
  if (p->tok.kind != XIR_TOK_INT) return expected(p, what);
  uint64_t m = p->tok.int_value;
  uint64_t limit = neg ? (UINT64_C(1) << 63) : (uint64_t)INT64_MAX;
  if (p->tok.int_overflow || m > limit)
    return err_at(p, line, col, "integer literal out of range of i64");
  *out = neg ? (int64_t)(0 - m) : (int64_t)m;
  next(p);
  return NULL;
}

/* ---- definitions bookkeeping ----------------------------------------- */

static xc_status_t check_new_name(parser_t* p, const char* name, int line, int col) {
  xc_value_t* v = xc_graph_find_value(p->g, name);
  if (!v) return NULL;
  if (v->id < p->def_cap && p->def_line[v->id])
    return err_at(p, line, col, "duplicate name '%s' (first defined at %d:%d)", name,
                  p->def_line[v->id], p->def_col[v->id]);
  return err_at(p, line, col, "duplicate name '%s'", name);
}

static xc_status_t record_def(parser_t* p, const xc_value_t* v, int line, int col) {
  if (v->id >= p->def_cap) {
    int cap = p->def_cap ? p->def_cap * 2 : 64;
    while (cap <= v->id) cap *= 2;
    int* nl = realloc(p->def_line, sizeof(int) * (size_t)cap);
    if (!nl) return oom();
    p->def_line = nl;
    int* nc = realloc(p->def_col, sizeof(int) * (size_t)cap);
    if (!nc) return oom();
    p->def_col = nc;
    for (int i = p->def_cap; i < cap; i++) nl[i] = nc[i] = 0;
    p->def_cap = cap;
  }
  p->def_line[v->id] = line;
  p->def_col[v->id] = col;
  return NULL;
}

/* ---- dims -------------------------------------------------------------- */

static xc_status_t parse_dim_sum(parser_t* p, xc_dim_t* out);

static xc_status_t dim_result(parser_t* p, int line, int col) {
  xc_status_t s = xc_graph_take_error(p->g);
  if (!s) return NULL;
  xc_status_t e = err_at(p, line, col, "%s", xc_status_message(s));
  xc_status_free(s);
  return e;
}

static bool dim_function(const parser_t* p, xc_sym_kind_t* kind) {
  static const struct {
    const char* name;
    xc_sym_kind_t kind;
  } fns[] = {{"floordiv", XC_SYM_FLOORDIV},
             {"ceildiv", XC_SYM_CEILDIV},
             {"min", XC_SYM_MIN},
             {"max", XC_SYM_MAX}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (is_word(p, fns[i].name)) {
      xir_token_t n = peek_next(p);
      if (n.kind == XIR_TOK_PUNCT && n.punct == '(') {
        *kind = fns[i].kind;
        return true;
      }
    }
  return false;
}

static xc_status_t parse_dim_primary(parser_t* p, xc_dim_t* out) {
  int line = p->tok.line, col = p->tok.col;
  xc_sym_kind_t kind;
  if (is_punct(p, '-') || p->tok.kind == XIR_TOK_INT) {
    int64_t v;
    XC_RETURN_IF_ERROR(parse_i64(p, "a dimension", &v));
    *out = xc_dim_const(v);
    return NULL;
  }
  if (is_punct(p, '(')) {
    XC_RETURN_IF_ERROR(enter(p));
    next(p);
    XC_RETURN_IF_ERROR(parse_dim_sum(p, out));
    p->depth--;
    return expect(p, ')', "')'");
  }
  if (dim_function(p, &kind)) {
    XC_RETURN_IF_ERROR(enter(p));
    next(p);
    next(p); /* '(' */
    xc_dim_t a, b;
    XC_RETURN_IF_ERROR(parse_dim_sum(p, &a));
    XC_RETURN_IF_ERROR(expect(p, ',', "','"));
    int bline = p->tok.line, bcol = p->tok.col;
    XC_RETURN_IF_ERROR(parse_dim_sum(p, &b));
    XC_RETURN_IF_ERROR(expect(p, ')', "')'"));
    p->depth--;
    if ((kind == XC_SYM_FLOORDIV || kind == XC_SYM_CEILDIV) && !b.sym && b.value <= 0)
      return err_at(p, bline, bcol, "divisor must be positive, got %lld",
                    (long long)b.value);
    switch (kind) {
      case XC_SYM_FLOORDIV: *out = xc_dim_floordiv(p->g, a, b); break;
      case XC_SYM_CEILDIV: *out = xc_dim_ceildiv(p->g, a, b); break;
      case XC_SYM_MIN: *out = xc_dim_min(p->g, a, b); break;
      default: *out = xc_dim_max(p->g, a, b); break;
    }
    return dim_result(p, line, col);
  }
  if (p->tok.kind == XIR_TOK_IDENT || p->tok.kind == XIR_TOK_STRING) {
    char* name;
    XC_RETURN_IF_ERROR(parse_name(p, "a symbol", &name));
    *out = xc_dim_var(p->g, name);
    return dim_result(p, line, col);
  }
  return expected(p, "a dimension (integer, symbol or expression)");
}

static xc_status_t parse_dim_term(parser_t* p, xc_dim_t* out) {
  XC_RETURN_IF_ERROR(parse_dim_primary(p, out));
  while (is_punct(p, '*')) {
    int line = p->tok.line, col = p->tok.col;
    next(p);
    xc_dim_t b;
    XC_RETURN_IF_ERROR(parse_dim_primary(p, &b));
    *out = xc_dim_mul(p->g, *out, b);
    XC_RETURN_IF_ERROR(dim_result(p, line, col));
  }
  return NULL;
}

static xc_status_t parse_dim_sum(parser_t* p, xc_dim_t* out) {
  XC_RETURN_IF_ERROR(parse_dim_term(p, out));
  while (is_punct(p, '+') || is_punct(p, '-')) {
    int line = p->tok.line, col = p->tok.col;
    bool add = p->tok.punct == '+';
    next(p);
    xc_dim_t b;
    XC_RETURN_IF_ERROR(parse_dim_term(p, &b));
    *out = add ? xc_dim_add(p->g, *out, b) : xc_dim_sub(p->g, *out, b);
    XC_RETURN_IF_ERROR(dim_result(p, line, col));
  }
  return NULL;
}

/* type := DTYPE '[' ( '?' | [dim (',' dim)*] ) ']' */
static xc_status_t parse_type(parser_t* p, vtype_t* t) {
  memset(t, 0, sizeof *t);
  if (p->tok.kind != XIR_TOK_IDENT) return expected(p, "a dtype (f32, i64, ...)");
  char* name = NULL;
  XC_RETURN_IF_ERROR(token_text(p, &p->tok, &name));
  if (!xc_dtype_from_name(name, &t->dtype))
    return err_at(p, p->tok.line, p->tok.col, "unknown dtype '%s'", name);
  next(p);
  XC_RETURN_IF_ERROR(expect(p, '[', "'['"));
  if (accept(p, '?')) {
    t->rank = -1;
    return expect(p, ']', "']'");
  }
  if (accept(p, ']')) return NULL;
  for (;;) {
    if (t->rank == XC_MAX_RANK)
      return err_at(p, p->tok.line, p->tok.col, "rank exceeds the maximum of %d",
                    XC_MAX_RANK);
    int line = p->tok.line, col = p->tok.col;
    xc_dim_t d;
    XC_RETURN_IF_ERROR(parse_dim_sum(p, &d));
    if (!d.sym && d.value < 0)
      return err_at(p, line, col, "negative dimension %lld", (long long)d.value);
    t->dims[t->rank++] = d;
    if (accept(p, ']')) return NULL;
    XC_RETURN_IF_ERROR(expect(p, ',', "',' or ']'"));
  }
}

/* Static dims of a type that must be concrete (constants, tensor
 * attributes); checks the element count and byte size. */
static xc_status_t static_shape(parser_t* p, const vtype_t* t, int line, int col,
                                int64_t* dims, int64_t* numel) {
  if (t->rank < 0) return err_at(p, line, col, "a constant needs a known shape");
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i].sym) return err_at(p, line, col, "a constant needs static dimensions");
    dims[i] = t->dims[i].value;
  }
  xc_status_t s = xc_shape_numel(t->rank, dims, t->dtype, numel);
  if (s) {
    xc_status_t e = err_at(p, line, col, "%s", xc_status_message(s));
    xc_status_free(s);
    return e;
  }
  return NULL;
}

/* ---- tensor literals -------------------------------------------------- */

typedef struct bytes {
  unsigned char* data;
  size_t len, cap;
} bytes_t;

static xc_status_t bytes_reserve(bytes_t* b, size_t n) {
  if (b->len + n <= b->cap) return NULL;
  size_t cap = b->cap ? b->cap * 2 : 256;
  while (cap < b->len + n) cap *= 2;
  unsigned char* d = realloc(b->data, cap);
  if (!d) return oom();
  b->data = d;
  b->cap = cap;
  return NULL;
}

static void store_float(xc_dtype_t t, void* dst, double v) {
  xc_tensor_t one;
  memset(&one, 0, sizeof one);
  one.dtype = t;
  one.rank = 0;
  one.numel = 1;
  one.data = dst;
  xc_tensor_set_f64(&one, 0, v);
}

static void store_bits(void* dst, size_t size, uint64_t bits) {
  memcpy(dst, &bits, size); /* little-endian host: low bytes first */
}

/* A number token (INT or FLOAT) as a double; errors when the literal
 * overflows f64. */
static xc_status_t number_value(parser_t* p, bool neg, double* out) {
  char buf[128];
  if (p->tok.len >= sizeof buf - 2)
    return err_at(p, p->tok.line, p->tok.col, "number literal too long");
  buf[0] = neg ? '-' : '+';
  memcpy(buf + 1, p->lx.text + p->tok.start, p->tok.len);
  buf[p->tok.len + 1] = 0;
  errno = 0;
  double v = strtod(buf, NULL);
  if (errno == ERANGE && (v > 1.0 || v < -1.0))
    return err_at(p, p->tok.line, p->tok.col, "number literal out of range of f64");
  *out = v;
  next(p);
  return NULL;
}

/* float_lit := ['-'] (INT | FLOAT | 'inf' | 'nan' ['(' INT ')'])
 * Writes one element of float dtype t into dst (attributes use XC_F64). */
static xc_status_t parse_float_elem(parser_t* p, xc_dtype_t t, void* dst) {
  int line = p->tok.line, col = p->tok.col;
  bool neg = accept(p, '-');
  size_t size = xc_dtype_size(t);
  if (p->tok.kind == XIR_TOK_INT || p->tok.kind == XIR_TOK_FLOAT) {
    double v = 0;
    XC_RETURN_IF_ERROR(number_value(p, neg, &v));
    store_float(t, dst, v);
    return NULL;
  }
  if (is_word(p, "inf")) {
    next(p);
    store_float(t, dst, neg ? -INFINITY : INFINITY);
    return NULL;
  }
  if (is_word(p, "nan")) {
    next(p);
    if (!is_punct(p, '(')) {
      store_bits(dst, size, xc_xir_nan_bits(t, neg));
      return NULL;
    }
    next(p);
    if (p->tok.kind != XIR_TOK_INT) return expected(p, "the NaN's bits (0x...)");
    uint64_t bits = p->tok.int_value;
    bool fits = !p->tok.int_overflow && (size == 8 || bits >> (8 * size) == 0);
    if (neg || !fits)
      return err_at(p, line, col, "nan(0x...) needs the full %d-bit pattern without a sign",
                    (int)(8 * size));
    next(p);
    XC_RETURN_IF_ERROR(expect(p, ')', "')'"));
    xc_tensor_t one;
    memset(&one, 0, sizeof one);
    one.dtype = t;
    one.numel = 1;
    one.data = dst;
    store_bits(dst, size, bits);
    if (!isnan(xc_tensor_get_f64(&one, 0)))
      return err_at(p, line, col, "nan(0x%llx) is not a NaN of %s",
                    (unsigned long long)bits, xc_dtype_name(t));
    return NULL;
  }
  return expected(p, "a number");
}

static xc_status_t parse_int_elem(parser_t* p, xc_dtype_t t, void* dst) {
  int line = p->tok.line, col = p->tok.col;
  if (t == XC_BOOL) {
    unsigned char b;
    if (is_word(p, "true")) {
      b = 1;
    } else if (is_word(p, "false")) {
      b = 0;
    } else if (p->tok.kind == XIR_TOK_INT && !p->tok.int_overflow && p->tok.int_value <= 1) {
      b = (unsigned char)p->tok.int_value;
    } else {
      return expected(p, "true or false");
    }
    next(p);
    *(unsigned char*)dst = b;
    return NULL;
  }
  bool neg = accept(p, '-');
  if (p->tok.kind != XIR_TOK_INT) return expected(p, "an integer");
  size_t size = xc_dtype_size(t);
  int bits = (int)(8 * size);
  uint64_t m = p->tok.int_value;
  bool ok;
  if (xc_dtype_is_signed(t)) {
    uint64_t pos_max = (UINT64_C(1) << (bits - 1)) - 1;
    ok = !p->tok.int_overflow && (neg ? m <= pos_max + 1 : m <= pos_max);
  } else {
    uint64_t max = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    ok = !p->tok.int_overflow && (neg ? m == 0 : m <= max);
  }
  if (!ok) return err_at(p, line, col, "integer literal out of range of %s", xc_dtype_name(t));
  uint64_t v = neg ? 0 - m : m;
  store_bits(dst, size, v);
  next(p);
  return NULL;
}

static xc_status_t parse_elem(parser_t* p, xc_dtype_t t, void* dst) {
  if (xc_dtype_is_float(t)) return parse_float_elem(p, t, dst);
  return parse_int_elem(p, t, dst);
}

/* Checks a side-file path: relative, no '..' component, not empty. */
static xc_status_t check_side_path(parser_t* p, const char* path, int line, int col) {
  if (!*path) return err_at(p, line, col, "empty side-file path");
  if (path[0] == '/')
    return err_at(p, line, col, "side-file path '%s' must be relative to the .xir file",
                  path);
  for (const char* c = path; *c;) {
    const char* e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if (n == 2 && c[0] == '.' && c[1] == '.')
      return err_at(p, line, col, "side-file path '%s' must not contain '..'", path);
    c += n;
    if (*c == '/') c++;
  }
  return NULL;
}

/* A side-file tensor of xc_xir_parse_with_side: a view of (or a copy from)
 * the side bytes in memory, checked to lie inside them. */
static xc_status_t side_from_memory(parser_t* p, const char* path, int64_t offset, xc_dtype_t dtype, int rank,
                                    const int64_t* dims, int64_t numel, int line, int col, xc_tensor_t** out) {
  if (strcmp(path, p->side_name) != 0)
    return err_at(p, line, col, "side file '%s': only '%s' is available here", path, p->side_name);
  int64_t need = 0, end;
  if (!xc_mul_i64(numel, (int64_t)xc_dtype_size(dtype), &need)) need = INT64_MAX;
  if (!xc_add_i64(offset, need, &end)) return err_at(p, line, col, "side file offset %lld overflows", (long long)offset);
  if (end > (int64_t)p->side_size)
    return err_at(p, line, col, "side file '%s' is too short: %lld bytes needed at offset %lld, it has %zu", path,
                  (long long)need, (long long)offset, p->side_size);
  xc_tensor_t* t = NULL;
  xc_status_t s;
  if (p->side_borrow && dtype != XC_BOOL && need > 0) {
    s = xc_tensor_wrap(dtype, rank, dims, (void*)(uintptr_t)(p->side + offset), &t);
  } else {
    s = xc_tensor_create(dtype, rank, dims, &t);
    if (!s && need > 0) memcpy(t->data, p->side + offset, (size_t)need);
    if (!s && t->dtype == XC_BOOL)
      for (int64_t i = 0; i < t->numel; i++) ((unsigned char*)t->data)[i] = ((unsigned char*)t->data)[i] != 0;
  }
  if (s) return s;
  *out = t;
  return NULL;
}

/* file '(' STRING [',' 'offset' '=' INT] ')' : raw little-endian elements.
 * The tensor (dtype, rank, dims) is made only once the file is known to
 * hold its bytes, so a huge declared shape costs nothing. */
static xc_status_t parse_side_file(parser_t* p, xc_dtype_t dtype, int rank, const int64_t* dims, int64_t numel,
                                   xc_tensor_t** out) {
  int line = p->tok.line, col = p->tok.col;
  next(p); /* file */
  XC_RETURN_IF_ERROR(expect(p, '(', "'('"));
  if (p->tok.kind != XIR_TOK_STRING) return expected(p, "a file name string");
  int pline = p->tok.line, pcol = p->tok.col;
  char* path = NULL;
  XC_RETURN_IF_ERROR(token_text(p, &p->tok, &path));
  next(p);
  XC_RETURN_IF_ERROR(check_side_path(p, path, pline, pcol));
  int64_t offset = 0;
  if (accept(p, ',')) {
    if (!is_word(p, "offset")) return expected(p, "'offset'");
    next(p);
    XC_RETURN_IF_ERROR(expect(p, '=', "'='"));
    int oline = p->tok.line, ocol = p->tok.col;
    XC_RETURN_IF_ERROR(parse_i64(p, "an offset", &offset));
    if (offset < 0) return err_at(p, oline, ocol, "negative offset");
  }
  XC_RETURN_IF_ERROR(expect(p, ')', "')'"));
  if (p->side_name) return side_from_memory(p, path, offset, dtype, rank, dims, numel, line, col, out);
  char* full = p->base_dir && *p->base_dir
                   ? xc_arena_printf(p->tmp, "%s/%s", p->base_dir, path)
                   : path;
  if (!full) return oom();
  FILE* f = fopen(full, "rb");
  if (!f)
    return err_at(p, line, col, "cannot open side file '%s': %s", full, strerror(errno));
  struct stat st;
  int64_t need = 0, end;
  xc_status_t s = NULL;
  if (!xc_mul_i64(numel, (int64_t)xc_dtype_size(dtype), &need)) need = INT64_MAX;
  xc_tensor_t* t = NULL;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    s = err_at(p, line, col, "side file '%s' is not a regular file", full);
  } else if (!xc_add_i64(offset, need, &end)) {
    s = err_at(p, line, col, "side file offset %lld overflows", (long long)offset);
  } else if (end > (int64_t)st.st_size) {
    s = err_at(p, line, col,
               "side file '%s' is too short: %lld bytes needed at offset %lld, file has %lld",
               full, (long long)need, (long long)offset, (long long)st.st_size);
  } else if (!(s = xc_tensor_create(dtype, rank, dims, &t)) && need > 0 &&
             (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(t->data, 1, (size_t)need, f) != (size_t)need)) {
    s = err_at(p, line, col, "cannot read side file '%s'", full);
  }
  fclose(f);
  if (s) {
    xc_tensor_destroy(t);
    return s;
  }
  *out = t;
  if (t->dtype == XC_BOOL)
    for (int64_t i = 0; i < t->numel; i++)
      ((unsigned char*)t->data)[i] = ((unsigned char*)t->data)[i] != 0;
  return s;
}

/* One bracketed level of a nested literal such as [[1, 2], [3, 4]]: on the
 * last axis the items are elements, above it nested lists; every level holds
 * exactly dims[level] items. */
static xc_status_t parse_nested(parser_t* p, xc_dtype_t dt, int rank, const int64_t* dims,
                                int level, bytes_t* b) {
  int line = p->tok.line, col = p->tok.col;
  XC_RETURN_IF_ERROR(enter(p));
  XC_RETURN_IF_ERROR(expect(p, '[', "'['"));
  size_t size = xc_dtype_size(dt);
  int64_t items = 0;
  while (!is_punct(p, ']')) {
    if (level + 1 < rank) {
      XC_RETURN_IF_ERROR(parse_nested(p, dt, rank, dims, level + 1, b));
    } else {
      XC_RETURN_IF_ERROR(bytes_reserve(b, size));
      XC_RETURN_IF_ERROR(parse_elem(p, dt, b->data + b->len));
      b->len += size;
    }
    items++;
    if (!accept(p, ',') && !is_punct(p, ']')) return expected(p, "',' or ']'");
  }
  next(p);
  p->depth--;
  if (items != dims[level])
    return err_at(p, line, col, "axis %d has %lld entries here, the shape needs %lld", level,
                  (long long)items, (long long)dims[level]);
  return NULL;
}

/* data := file(...) | '[' [elem (',' elem)* [',']] ']' | nested | elem
 * Builds a tensor of type `type` (whose position is line:col). */
static xc_status_t parse_tensor_data(parser_t* p, const vtype_t* type, int line, int col,
                                     xc_tensor_t** out) {
  *out = NULL;
  int64_t dims[XC_MAX_RANK], numel;
  XC_RETURN_IF_ERROR(static_shape(p, type, line, col, dims, &numel));
  if (is_word(p, "file")) {
    xir_token_t n = peek_next(p);
    if (n.kind == XIR_TOK_PUNCT && n.punct == '(') {
      return parse_side_file(p, type->dtype, type->rank, dims, numel, out);
    }
  }
  size_t size = xc_dtype_size(type->dtype);
  bytes_t b = {NULL, 0, 0};
  int dline = p->tok.line, dcol = p->tok.col;
  int64_t count = 0;
  xc_status_t s = NULL;
  xir_token_t after = peek_next(p);
  if (is_punct(p, '[') && type->rank >= 2 && after.kind == XIR_TOK_PUNCT &&
      after.punct == '[') {
    s = parse_nested(p, type->dtype, type->rank, dims, 0, &b);
    count = (int64_t)(b.len / size);
  } else if (accept(p, '[')) {
    while (!s && !is_punct(p, ']')) {
      s = bytes_reserve(&b, size);
      if (!s) s = parse_elem(p, type->dtype, b.data + b.len);
      if (s) break;
      b.len += size;
      count++;
      if (!accept(p, ',') && !is_punct(p, ']')) s = expected(p, "',' or ']'");
    }
    if (!s) next(p); /* ']' */
  } else {
    s = bytes_reserve(&b, size);
    if (!s) s = parse_elem(p, type->dtype, b.data);
    count = 1;
  }
  if (!s && count != numel)
    s = err_at(p, dline, dcol, "%lld elements given, the shape needs %lld",
               (long long)count, (long long)numel);
  if (!s) s = xc_tensor_create(type->dtype, type->rank, dims, out);
  if (!s && numel) memcpy((*out)->data, b.data, (size_t)numel * size);
  free(b.data);
  return s;
}

/* ---- attributes -------------------------------------------------------- */

typedef struct attr_val {
  xc_attr_kind_t kind;
  int64_t i;
  double f;
  char* s;
  xc_tensor_t* t;
  int64_t n;
  int64_t* ints;
  double* floats;
  char** strings;
  xc_tensor_t** tensors;
} attr_val_t;

static void attr_val_free(attr_val_t* a) {
  xc_tensor_destroy(a->t);
  for (int64_t i = 0; a->tensors && i < a->n; i++) xc_tensor_destroy(a->tensors[i]);
  free(a->ints);
  free(a->floats);
  free(a->strings);
  free(a->tensors);
  memset(a, 0, sizeof *a);
}

/* tensor := DTYPE '[' dims ']' data */
static xc_status_t parse_tensor_literal(parser_t* p, xc_tensor_t** out) {
  int line = p->tok.line, col = p->tok.col;
  vtype_t type;
  XC_RETURN_IF_ERROR(parse_type(p, &type));
  return parse_tensor_data(p, &type, line, col, out);
}

static bool at_dtype(const parser_t* p) {
  if (p->tok.kind != XIR_TOK_IDENT || p->tok.len > 16) return false;
  char name[17];
  memcpy(name, p->lx.text + p->tok.start, p->tok.len);
  name[p->tok.len] = 0;
  xc_dtype_t t;
  return xc_dtype_from_name(name, &t);
}

static bool at_float_word(const parser_t* p) {
  return is_word(p, "inf") || is_word(p, "nan");
}

/* Scalar number: INT stays int, anything else is float. */
static xc_status_t parse_number_attr(parser_t* p, attr_val_t* a) {
  xir_token_t n = is_punct(p, '-') ? peek_next(p) : p->tok;
  if (n.kind == XIR_TOK_INT) {
    a->kind = XC_ATTR_INT;
    return parse_i64(p, "an integer", &a->i);
  }
  a->kind = XC_ATTR_FLOAT;
  return parse_float_elem(p, XC_F64, &a->f);
}

static xc_status_t grow_list(void** arr, int64_t n, size_t elem) {
  /* Capacity is 4, then doubles: grow at n = 0, 4, 8, 16, ... */
  if (n != 0 && (n < 4 || (n & (n - 1)))) return NULL;
  size_t cap = n ? (size_t)n * 2 : 4;
  void* na = realloc(*arr, cap * elem);
  if (!na) return oom();
  *arr = na;
  return NULL;
}

/* list := [KIND] '[' [elem (',' elem)* [',']] ']'  where KIND is ints,
 * floats, strings or tensors; without KIND the elements decide. */
static xc_status_t parse_list_attr(parser_t* p, xc_attr_kind_t forced,
                                   xc_attr_kind_t declared, attr_val_t* a) {
  int line = p->tok.line, col = p->tok.col;
  XC_RETURN_IF_ERROR(enter(p));
  XC_RETURN_IF_ERROR(expect(p, '[', "'['"));
  xc_attr_kind_t kind = forced;
  if (kind == XC_ATTR_UNDEFINED && !is_punct(p, ']')) {
    if (p->tok.kind == XIR_TOK_STRING)
      kind = XC_ATTR_STRINGS;
    else if (at_dtype(p))
      kind = XC_ATTR_TENSORS;
    else
      kind = XC_ATTR_INTS; /* promoted to floats on the first float */
  }
  a->kind = kind;
  while (!is_punct(p, ']')) {
    int64_t n = a->n;
    if (a->kind == XC_ATTR_STRINGS) {
      XC_RETURN_IF_ERROR(grow_list((void**)&a->strings, n, sizeof(char*)));
      if (p->tok.kind != XIR_TOK_STRING) return expected(p, "a string");
      XC_RETURN_IF_ERROR(token_text(p, &p->tok, &a->strings[n]));
      next(p);
    } else if (a->kind == XC_ATTR_TENSORS) {
      XC_RETURN_IF_ERROR(grow_list((void**)&a->tensors, n, sizeof(xc_tensor_t*)));
      xc_tensor_t* t;
      XC_RETURN_IF_ERROR(parse_tensor_literal(p, &t));
      a->tensors[n] = t;
    } else {
      XC_RETURN_IF_ERROR(grow_list((void**)&a->ints, n, sizeof(int64_t)));
      XC_RETURN_IF_ERROR(grow_list((void**)&a->floats, n, sizeof(double)));
      attr_val_t e;
      memset(&e, 0, sizeof e);
      if (!is_punct(p, '-') && p->tok.kind != XIR_TOK_INT &&
          p->tok.kind != XIR_TOK_FLOAT && !at_float_word(p))
        return expected(p, "a number");
      XC_RETURN_IF_ERROR(parse_number_attr(p, &e));
      if (e.kind == XC_ATTR_FLOAT && a->kind == XC_ATTR_INTS) {
        if (forced == XC_ATTR_INTS) return err_at(p, line, col, "ints[...] holds a float");
        a->kind = XC_ATTR_FLOATS;
      }
      a->ints[n] = e.i;
      a->floats[n] = e.kind == XC_ATTR_INT ? (double)e.i : e.f;
    }
    a->n = n + 1;
    if (!accept(p, ',') && !is_punct(p, ']')) return expected(p, "',' or ']'");
  }
  next(p);
  p->depth--;
  if (a->kind == XC_ATTR_UNDEFINED) {
    if (declared == XC_ATTR_INTS || declared == XC_ATTR_FLOATS ||
        declared == XC_ATTR_STRINGS || declared == XC_ATTR_TENSORS)
      a->kind = declared;
    else
      return err_at(p, line, col,
                    "an empty list needs its kind: ints[], floats[], strings[] or tensors[]");
  }
  return NULL;
}

static xc_status_t parse_attr_value(parser_t* p, xc_attr_kind_t declared, attr_val_t* a) {
  static const struct {
    const char* word;
    xc_attr_kind_t kind;
  } markers[] = {{"ints", XC_ATTR_INTS},
                 {"floats", XC_ATTR_FLOATS},
                 {"strings", XC_ATTR_STRINGS},
                 {"tensors", XC_ATTR_TENSORS}};
  if (p->tok.kind == XIR_TOK_STRING) {
    a->kind = XC_ATTR_STRING;
    XC_RETURN_IF_ERROR(token_text(p, &p->tok, &a->s));
    next(p);
    return NULL;
  }
  if (is_punct(p, '[')) return parse_list_attr(p, XC_ATTR_UNDEFINED, declared, a);
  for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++)
    if (is_word(p, markers[i].word)) {
      xir_token_t n = peek_next(p);
      if (n.kind == XIR_TOK_PUNCT && n.punct == '[') {
        next(p);
        return parse_list_attr(p, markers[i].kind, declared, a);
      }
    }
  if (at_dtype(p)) {
    a->kind = XC_ATTR_TENSOR;
    return parse_tensor_literal(p, &a->t);
  }
  if (is_punct(p, '-') || p->tok.kind == XIR_TOK_INT || p->tok.kind == XIR_TOK_FLOAT ||
      at_float_word(p))
    return parse_number_attr(p, a);
  return expected(p, "an attribute value");
}

/* Converts int -> float and ints -> floats where the op declares a float. */
static void coerce(attr_val_t* a, xc_attr_kind_t declared) {
  if (declared == XC_ATTR_FLOAT && a->kind == XC_ATTR_INT) {
    a->kind = XC_ATTR_FLOAT;
    a->f = (double)a->i;
  } else if (declared == XC_ATTR_FLOATS && a->kind == XC_ATTR_INTS) {
    a->kind = XC_ATTR_FLOATS;
  }
}

static xc_status_t set_attr(xc_graph_t* g, xc_node_t* n, const char* name, attr_val_t* a) {
  xc_status_t s = NULL;
  switch (a->kind) {
    case XC_ATTR_INT: s = xc_node_set_int(g, n, name, a->i); break;
    case XC_ATTR_FLOAT: s = xc_node_set_float(g, n, name, a->f); break;
    case XC_ATTR_STRING: s = xc_node_set_string(g, n, name, a->s); break;
    case XC_ATTR_TENSOR:
      s = xc_node_set_tensor(g, n, name, a->t);
      a->t = NULL;
      break;
    case XC_ATTR_INTS: s = xc_node_set_ints(g, n, name, a->n, a->ints); break;
    case XC_ATTR_FLOATS: s = xc_node_set_floats(g, n, name, a->n, a->floats); break;
    case XC_ATTR_STRINGS:
      s = xc_node_set_strings(g, n, name, a->n, (const char* const*)a->strings);
      break;
    case XC_ATTR_TENSORS:
      s = xc_node_set_tensors(g, n, name, a->n, a->tensors);
      free(a->tensors);
      a->tensors = NULL;
      break;
    default: s = xc_error(XC_INTERNAL, "attribute without a kind"); break;
  }
  attr_val_free(a);
  return s;
}

/* attrs := '{' [IDENT ':' value (',' IDENT ':' value)* [',']] '}' */
static xc_status_t parse_attrs(parser_t* p, xc_node_t* n) {
  next(p); /* '{' */
  while (!is_punct(p, '}')) {
    if (p->tok.kind != XIR_TOK_IDENT && p->tok.kind != XIR_TOK_STRING)
      return expected(p, "an attribute name or '}'");
    int line = p->tok.line, col = p->tok.col;
    char* name;
    XC_RETURN_IF_ERROR(parse_name(p, "an attribute name", &name));
    const xc_attr_def_t* def = xc_op_find_attr_def(n->op, name);
    if (!def)
      return err_at(p, line, col, "op %s has no attribute '%s'", n->op_type, name);
    if (xc_node_find_attr(n, name))
      return err_at(p, line, col, "attribute '%s' is given twice", name);
    XC_RETURN_IF_ERROR(expect(p, ':', "':'"));
    int vline = p->tok.line, vcol = p->tok.col;
    attr_val_t a;
    memset(&a, 0, sizeof a);
    xc_status_t s = parse_attr_value(p, def->kind, &a);
    if (!s) {
      coerce(&a, def->kind);
      if (a.kind != def->kind)
        s = err_at(p, vline, vcol, "attribute '%s' of %s must be %s, got %s", name,
                   n->op_type, xc_attr_kind_name(def->kind), xc_attr_kind_name(a.kind));
    }
    if (s) {
      attr_val_free(&a);
      return s;
    }
    XC_RETURN_IF_ERROR(set_attr(p->g, n, name, &a));
    if (!accept(p, ',') && !is_punct(p, '}')) return expected(p, "',' or '}'");
  }
  next(p);
  return NULL;
}

/* ---- statements -------------------------------------------------------- */

/* input := 'input' name ':' type (',' name ':' type)* */
static xc_status_t parse_input(parser_t* p) {
  next(p);
  for (;;) {
    int line = p->tok.line, col = p->tok.col;
    char* name;
    XC_RETURN_IF_ERROR(parse_name(p, "an input name", &name));
    XC_RETURN_IF_ERROR(check_new_name(p, name, line, col));
    XC_RETURN_IF_ERROR(expect(p, ':', "':' and the input's type"));
    int tline = p->tok.line, tcol = p->tok.col;
    vtype_t t;
    XC_RETURN_IF_ERROR(parse_type(p, &t));
    if (t.rank < 0)
      return err_at(p, tline, tcol, "input '%s' needs a shape (write [] for a scalar)", name);
    xc_value_t* v;
    XC_RETURN_IF_ERROR(xc_graph_add_value(p->g, name, t.dtype, t.rank, t.dims, &v));
    XC_RETURN_IF_ERROR(record_def(p, v, line, col));
    XC_RETURN_IF_ERROR(xc_graph_add_input(p->g, v));
    if (!accept(p, ',')) return NULL;
  }
}

/* const := 'const' name ':' type '=' data */
static xc_status_t parse_const(parser_t* p) {
  next(p);
  int line = p->tok.line, col = p->tok.col;
  char* name;
  XC_RETURN_IF_ERROR(parse_name(p, "a constant name", &name));
  XC_RETURN_IF_ERROR(check_new_name(p, name, line, col));
  XC_RETURN_IF_ERROR(expect(p, ':', "':' and the constant's type"));
  int tline = p->tok.line, tcol = p->tok.col;
  vtype_t t;
  XC_RETURN_IF_ERROR(parse_type(p, &t));
  XC_RETURN_IF_ERROR(expect(p, '=', "'='"));
  xc_tensor_t* data;
  XC_RETURN_IF_ERROR(parse_tensor_data(p, &t, tline, tcol, &data));
  xc_value_t* v;
  XC_RETURN_IF_ERROR(xc_graph_add_initializer(p->g, name, data, &v));
  return record_def(p, v, line, col);
}

/* output := 'output' name (',' name)* */
static xc_status_t parse_output(parser_t* p) {
  next(p);
  for (;;) {
    int line = p->tok.line, col = p->tok.col;
    char* name;
    XC_RETURN_IF_ERROR(parse_name(p, "an output name", &name));
    xc_value_t* v = xc_graph_find_value(p->g, name);
    if (!v) return err_at(p, line, col, "undefined value '%s'", name);
    XC_RETURN_IF_ERROR(xc_graph_add_output(p->g, v));
    if (!accept(p, ',')) return NULL;
  }
}

typedef struct lhs_item {
  char* name; /* NULL for '_' */
  bool typed;
  vtype_t type;
  int line, col;
} lhs_item_t;

static bool is_placeholder(const parser_t* p) { return is_word(p, "_"); }

static xc_status_t push_ptr(void*** arr, int* n, int* cap, void* item) {
  if (*n == *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    void** na = realloc(*arr, sizeof(void*) * (size_t)ncap);
    if (!na) return oom();
    *arr = na;
    *cap = ncap;
  }
  (*arr)[(*n)++] = item;
  return NULL;
}

/* Checks arity and required inputs against the op, at the node's position. */
static xc_status_t check_arity(parser_t* p, const xc_op_def_t* op, int ni,
                               xc_value_t* const* ins, int no, int line, int col) {
  if (ni < op->min_inputs || (op->max_inputs >= 0 && ni > op->max_inputs)) {
    if (op->max_inputs < 0)
      return err_at(p, line, col, "%s takes at least %d inputs, got %d", op->name,
                    op->min_inputs, ni);
    return err_at(p, line, col, "%s takes %d to %d inputs, got %d", op->name,
                  op->min_inputs, op->max_inputs, ni);
  }
  if (no < op->min_outputs || (op->max_outputs >= 0 && no > op->max_outputs)) {
    if (op->max_outputs < 0)
      return err_at(p, line, col, "%s has at least %d outputs, got %d", op->name,
                    op->min_outputs, no);
    return err_at(p, line, col, "%s has %d to %d outputs, got %d", op->name,
                  op->min_outputs, op->max_outputs, no);
  }
  if (op->max_inputs >= 0)
    for (int i = 0; i < op->min_inputs; i++)
      if (!ins[i])
        return err_at(p, line, col, "%s: required input %d cannot be omitted", op->name, i);
  return NULL;
}

/* node := lhs (',' lhs)* '=' [domain '::'] OP '(' [arg (',' arg)*] ')'
 *         [attrs] ['@' name]
 * lhs := '_' | name [':' type];  arg := '_' | name */
static xc_status_t parse_node_stmt(parser_t* p, lhs_item_t** lhs, int* lhs_cap,
                                   xc_value_t*** ins, int* ins_cap) {
  int line = p->tok.line, col = p->tok.col;
  int nout = 0;
  for (;;) {
    if (nout == *lhs_cap) {
      int cap = *lhs_cap ? *lhs_cap * 2 : 8;
      lhs_item_t* nl = realloc(*lhs, sizeof(lhs_item_t) * (size_t)cap);
      if (!nl) return oom();
      *lhs = nl;
      *lhs_cap = cap;
    }
    lhs_item_t* it = &(*lhs)[nout];
    memset(it, 0, sizeof *it);
    it->line = p->tok.line;
    it->col = p->tok.col;
    if (is_placeholder(p)) {
      next(p);
    } else {
      XC_RETURN_IF_ERROR(parse_name(p, "a statement (input, const, output or a node)",
                                    &it->name));
      XC_RETURN_IF_ERROR(check_new_name(p, it->name, it->line, it->col));
      for (int k = 0; k < nout; k++)
        if ((*lhs)[k].name && strcmp((*lhs)[k].name, it->name) == 0)
          return err_at(p, it->line, it->col, "duplicate name '%s' (first defined at %d:%d)",
                        it->name, (*lhs)[k].line, (*lhs)[k].col);
      if (accept(p, ':')) {
        it->typed = true;
        XC_RETURN_IF_ERROR(parse_type(p, &it->type));
      }
    }
    nout++;
    if (accept(p, '=')) break;
    XC_RETURN_IF_ERROR(expect(p, ',', "',' or '='"));
  }
  /* Op reference. */
  if (p->tok.kind != XIR_TOK_IDENT) return expected(p, "an op name");
  int oline = p->tok.line, ocol = p->tok.col;
  char *domain = "", *op_type = NULL;
  XC_RETURN_IF_ERROR(token_text(p, &p->tok, &op_type));
  next(p);
  if (accept(p, 'D')) {
    domain = op_type;
    if (p->tok.kind != XIR_TOK_IDENT) return expected(p, "an op name after '::'");
    XC_RETURN_IF_ERROR(token_text(p, &p->tok, &op_type));
    next(p);
  }
  const xc_op_def_t* op = xc_op_lookup(domain, op_type);
  if (!op)
    return err_at(p, oline, ocol, "unknown op '%s%s%s'", domain, *domain ? "::" : "",
                  op_type);
  /* Arguments. */
  XC_RETURN_IF_ERROR(expect(p, '(', "'('"));
  int nin = 0;
  if (!accept(p, ')')) {
    for (;;) {
      xc_value_t* v = NULL;
      if (is_placeholder(p)) {
        next(p);
      } else {
        int aline = p->tok.line, acol = p->tok.col;
        char* name;
        XC_RETURN_IF_ERROR(parse_name(p, "an input name or '_'", &name));
        v = xc_graph_find_value(p->g, name);
        if (!v) return err_at(p, aline, acol, "undefined value '%s'", name);
      }
      XC_RETURN_IF_ERROR(push_ptr((void***)ins, &nin, ins_cap, v));
      if (accept(p, ')')) break;
      XC_RETURN_IF_ERROR(expect(p, ',', "',' or ')'"));
    }
  }
  XC_RETURN_IF_ERROR(check_arity(p, op, nin, *ins, nout, line, col));
  /* Outputs, then the node. */
  xc_value_t** outs = xc_arena_alloc(p->tmp, sizeof(xc_value_t*) * (size_t)nout);
  if (!outs) return oom();
  for (int k = 0; k < nout; k++) {
    lhs_item_t* it = &(*lhs)[k];
    if (!it->name) continue;
    XC_RETURN_IF_ERROR(xc_graph_add_value(p->g, it->name,
                                          it->typed ? it->type.dtype : XC_DTYPE_UNDEFINED,
                                          it->typed ? it->type.rank : -1, it->type.dims,
                                          &outs[k]));
    XC_RETURN_IF_ERROR(record_def(p, outs[k], it->line, it->col));
  }
  xc_node_t* n;
  XC_RETURN_IF_ERROR(
      xc_graph_add_node(p->g, op_type, domain, NULL, nin, *ins, nout, outs, &n));
  n->op = op;
  if (!p->prov_file) {
    p->prov_file = xc_arena_strdup(p->g->arena, p->file);
    if (!p->prov_file) return oom();
  }
  n->prov.file = p->prov_file;
  n->prov.line = line;
  n->prov.col = col;
  if (is_punct(p, '{')) XC_RETURN_IF_ERROR(parse_attrs(p, n));
  if (accept(p, '@')) {
    char* label;
    XC_RETURN_IF_ERROR(parse_name(p, "a node label", &label));
    n->name = xc_arena_strdup(p->g->arena, label);
    if (!n->name) return oom();
    n->prov.source = n->name;
  }
  if (op->attrs)
    for (const xc_attr_def_t* d = op->attrs; d->name; d++)
      if (d->required && !xc_node_find_attr(n, d->name))
        return err_at(p, line, col, "%s needs attribute '%s'", op->name, d->name);
  return NULL;
}

static bool at_keyword(const parser_t* p, const char* kw) {
  if (!is_word(p, kw)) return false;
  xir_token_t n = peek_next(p);
  return n.kind == XIR_TOK_IDENT || n.kind == XIR_TOK_STRING;
}

static xc_status_t parse_graph(parser_t* p) {
  /* header := 'xir' INT */
  if (!is_word(p, "xir")) return expected(p, "'xir 1' (the format header)");
  next(p);
  int vline = p->tok.line, vcol = p->tok.col;
  int64_t version;
  XC_RETURN_IF_ERROR(parse_i64(p, "a format version", &version));
  if (version != 1)
    return err_at(p, vline, vcol, "unsupported xir version %lld (this reader knows 1)",
                  (long long)version);
  /* graph := 'graph' name ['opset' INT] '{' stmt* '}' */
  if (!is_word(p, "graph")) return expected(p, "'graph'");
  next(p);
  char* name;
  XC_RETURN_IF_ERROR(parse_name(p, "a graph name", &name));
  int64_t opset = 23;
  if (is_word(p, "opset")) {
    next(p);
    int oline = p->tok.line, ocol = p->tok.col;
    XC_RETURN_IF_ERROR(parse_i64(p, "an opset version", &opset));
    if (opset < 1 || opset > 1000)
      return err_at(p, oline, ocol, "opset %lld out of range", (long long)opset);
  }
  XC_RETURN_IF_ERROR(expect(p, '{', "'{'"));
  XC_RETURN_IF_ERROR(xc_graph_create(name, &p->g));
  p->g->opset = opset;
  lhs_item_t* lhs = NULL;
  xc_value_t** ins = NULL;
  int lhs_cap = 0, ins_cap = 0;
  xc_status_t s = NULL;
  while (!s && !is_punct(p, '}')) {
    if (p->tok.kind == XIR_TOK_EOF)
      s = expected(p, "'}' closing the graph");
    else if (at_keyword(p, "input"))
      s = parse_input(p);
    else if (at_keyword(p, "const"))
      s = parse_const(p);
    else if (at_keyword(p, "output"))
      s = parse_output(p);
    else
      s = parse_node_stmt(p, &lhs, &lhs_cap, &ins, &ins_cap);
  }
  free(lhs);
  free(ins);
  if (s) return s;
  next(p);
  if (p->tok.kind != XIR_TOK_EOF) return expected(p, "end of input after the graph");
  return NULL;
}

static xc_status_t parse_text(const char* text, size_t len, const char* filename, const char* base_dir,
                              const char* side_name, const uint8_t* side, size_t side_size, bool borrow,
                              xc_graph_t** out) {
  *out = NULL;
  const char* file = filename && *filename ? filename : "<input>";
  if (!text && len) return xc_error(XC_INVALID_ARGUMENT, "%s: no text", file);
  if (len > XC_XIR_MAX_TEXT)
    return xc_error(XC_INVALID_ARGUMENT, "%s: input of %zu bytes is too large", file, len);
  parser_t p;
  memset(&p, 0, sizeof p);
  p.file = file;
  p.base_dir = base_dir;
  p.side_name = side_name;
  p.side = side;
  p.side_size = side_size;
  p.side_borrow = borrow;
  p.tmp = xc_arena_create();
  if (!p.tmp) return oom();
  xc_xir_lexer_init(&p.lx, text ? text : "", len);
  next(&p);
  xc_status_t s = parse_graph(&p);
  if (!s) s = xc_graph_verify(p.g);
  free(p.def_line);
  free(p.def_col);
  xc_arena_destroy(p.tmp);
  if (s) {
    xc_graph_destroy(p.g);
    return s;
  }
  *out = p.g;
  return NULL;
}

xc_status_t xc_xir_parse(const char* text, size_t len, const char* filename, const char* base_dir,
                         xc_graph_t** out) {
  return parse_text(text, len, filename, base_dir, NULL, NULL, 0, false, out);
}

xc_status_t xc_xir_parse_with_side(const char* text, size_t len, const char* filename, const char* side_name,
                                   const uint8_t* side, size_t side_size, bool borrow, xc_graph_t** out) {
  *out = NULL;
  if (!side_name || !*side_name || (!side && side_size))
    return xc_error(XC_INVALID_ARGUMENT, "%s: no side file name or bytes", filename ? filename : "<input>");
  return parse_text(text, len, filename, NULL, side_name, side, side_size, borrow, out);
}

xc_status_t xc_xir_parse_file(const char* path, xc_graph_t** out) {
  *out = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return xc_error(XC_NOT_FOUND, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is not a regular file", path);
  }
  if ((uint64_t)st.st_size > XC_XIR_MAX_TEXT) {
    fclose(f);
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is too large for a .xir file", path);
  }
  size_t n = (size_t)st.st_size;
  char* text = malloc(n ? n : 1);
  if (!text) {
    fclose(f);
    return oom();
  }
  size_t got = fread(text, 1, n, f);
  fclose(f);
  if (got != n) {
    free(text);
    return xc_error(XC_IO, "cannot read '%s'", path);
  }
  /* Side files are relative to the directory of the .xir file. */
  const char* slash = strrchr(path, '/');
  char* dir = NULL;
  if (slash) {
    size_t dl = slash == path ? 1 : (size_t)(slash - path);
    dir = malloc(dl + 1);
    if (!dir) {
      free(text);
      return oom();
    }
    memcpy(dir, path, dl);
    dir[dl] = 0;
  }
  xc_status_t s = xc_xir_parse(text, n, path, dir, out);
  free(dir);
  free(text);
  return s;
}
