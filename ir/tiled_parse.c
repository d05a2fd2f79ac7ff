/* Tiled IR parser: reads the text form that xc_tiled_print writes (grammar in
 * docs/tiled-ir.md) and rebuilds the kernel through the builder API, so a
 * parsed kernel is type-checked exactly like a built one. Every declared
 * result type must equal the type the op's rule derives. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

typedef enum tok_kind { T_EOF, T_IDENT, T_VALUE, T_AT, T_NUM, T_PUNCT } tok_kind_t;

typedef struct tok {
  tok_kind_t kind;
  const char* s;
  size_t n;
  int line, col;
} tok_t;

typedef struct name_entry {
  const char* name;
  size_t n;
  xc_tiled_value_t* v;
} name_entry_t;

typedef struct parser {
  const char* p;
  const char* end;
  const char* file;
  int line, col;
  tok_t tok;
  xc_tiled_kernel_t* k;
  name_entry_t* names;
  int num_names, cap_names;
  xc_status_t err;
  bool have_schedule;         /* a schedule block was read: set after the body */
  xc_tiled_schedule_t schedule;
} parser_t;

static void perr(parser_t* ps, const char* fmt, ...) XC_PRINTF(2, 3);
static void perr(parser_t* ps, const char* fmt, ...) {
  if (ps->err) return;
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ps->err = xc_error(XC_INVALID_ARGUMENT, "%s:%d:%d: %s", ps->file, ps->tok.line, ps->tok.col, buf);
}

static void advance(parser_t* ps) {
  for (;;) {
    while (ps->p < ps->end && isspace((unsigned char)*ps->p)) {
      if (*ps->p == '\n') ps->line++, ps->col = 1;
      else ps->col++;
      ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '#') {
      while (ps->p < ps->end && *ps->p != '\n') ps->p++;
      continue;
    }
    break;
  }
  tok_t t = {T_EOF, ps->p, 0, ps->line, ps->col};
  if (ps->p >= ps->end) {
    ps->tok = t;
    return;
  }
  const char* s = ps->p;
  char c = *s;
  size_t n = 1;
  if (c == '%' || c == '@') {
    while (s + n < ps->end && (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.')) n++;
    t.kind = c == '%' ? T_VALUE : T_AT;
  } else if (isalpha((unsigned char)c) || c == '_') {
    while (s + n < ps->end && (isalnum((unsigned char)s[n]) || s[n] == '_')) n++;
    t.kind = T_IDENT;
  } else if (isdigit((unsigned char)c) || ((c == '-' || c == '+') && s + 1 < ps->end &&
                                           (isdigit((unsigned char)s[1]) || s[1] == 'i' ||
                                            s[1] == 'n'))) {
    /* strtod on a NUL-terminated copy: the text need not end in a NUL
     * (it may end inside the number; found by fuzz_tiled). */
    char num[400];
    size_t avail = (size_t)(ps->end - s) < sizeof num - 1 ? (size_t)(ps->end - s) : sizeof num - 1;
    memcpy(num, s, avail);
    num[avail] = '\0';
    char* e;
    errno = 0;
    (void)strtod(num, &e);
    n = (size_t)(e - num);
    if (n == 0) n = 1;
    t.kind = T_NUM;
  } else {
    if (s + 1 < ps->end && ((c == '<' && s[1] == '=') || (c == '=' && s[1] == '=') ||
                            (c == '&' && s[1] == '&')))
      n = 2;
    t.kind = T_PUNCT;
  }
  t.n = n;
  ps->p += n;
  ps->col += (int)n;
  ps->tok = t;
}

static bool is(parser_t* ps, const char* s) {
  return (ps->tok.kind == T_PUNCT || ps->tok.kind == T_IDENT) && ps->tok.n == strlen(s) &&
         memcmp(ps->tok.s, s, ps->tok.n) == 0;
}

static bool accept(parser_t* ps, const char* s) {
  if (!is(ps, s)) return false;
  advance(ps);
  return true;
}

static bool expect(parser_t* ps, const char* s) {
  if (accept(ps, s)) return true;
  perr(ps, "expected '%s', found '%.*s'", s, (int)ps->tok.n, ps->tok.s);
  return false;
}

static bool parse_int(parser_t* ps, int64_t* out) {
  if (ps->tok.kind != T_NUM) {
    perr(ps, "expected an integer, found '%.*s'", (int)ps->tok.n, ps->tok.s);
    return false;
  }
  char buf[64];
  size_t n = ps->tok.n < sizeof buf - 1 ? ps->tok.n : sizeof buf - 1;
  memcpy(buf, ps->tok.s, n);
  buf[n] = 0;
  char* e;
  errno = 0;
  long long v = strtoll(buf, &e, 10);
  if (*e || errno) {
    perr(ps, "'%s' is not an integer", buf);
    return false;
  }
  *out = v;
  advance(ps);
  return true;
}

static char* tok_str(parser_t* ps) {
  return xc_arena_strndup(ps->k->arena, ps->tok.s, ps->tok.n);
}

/* ---- names ---------------------------------------------------------------- */

static xc_tiled_value_t* lookup(parser_t* ps, const char* s, size_t n) {
  for (int i = ps->num_names - 1; i >= 0; i--)
    if (ps->names[i].n == n && memcmp(ps->names[i].name, s, n) == 0) return ps->names[i].v;
  return NULL;
}

static void bind(parser_t* ps, const tok_t* t, xc_tiled_value_t* v) {
  if (!v) return;
  if (lookup(ps, t->s + 1, t->n - 1)) {
    ps->tok = *t;
    perr(ps, "value '%.*s' is defined twice", (int)t->n, t->s);
    return;
  }
  if (ps->num_names == ps->cap_names) {
    int cap = ps->cap_names ? ps->cap_names * 2 : 64;
    name_entry_t* n = realloc(ps->names, (size_t)cap * sizeof *n);
    if (!n) {
      if (!ps->err) ps->err = xc_error_oom();
      return;
    }
    ps->names = n;
    ps->cap_names = cap;
  }
  ps->names[ps->num_names++] = (name_entry_t){t->s + 1, t->n - 1, v};
  /* "%acc.12" and "%acc" keep the hint "acc"; "%12" has none. */
  if (v->param < 0) {
    const char* s = t->s + 1;
    size_t n = t->n - 1, digits = 0;
    while (digits < n && isdigit((unsigned char)s[n - 1 - digits])) digits++;
    if (digits == n) return;
    if (digits > 0 && s[n - 1 - digits] == '.') n -= digits + 1;
    char* hint = xc_arena_strndup(ps->k->arena, s, n);
    if (hint) v->name = hint;
  }
}

static xc_tiled_value_t* value_ref(parser_t* ps) {
  if (ps->tok.kind != T_VALUE) {
    perr(ps, "expected a value, found '%.*s'", (int)ps->tok.n, ps->tok.s);
    return NULL;
  }
  xc_tiled_value_t* v = lookup(ps, ps->tok.s + 1, ps->tok.n - 1);
  if (!v) perr(ps, "unknown value '%.*s'", (int)ps->tok.n, ps->tok.s);
  else advance(ps);
  return v;
}

/* ---- types and expressions --------------------------------------------------- */

static bool parse_dtype(parser_t* ps, xc_dtype_t* out) {
  char buf[16];
  size_t n = ps->tok.n < sizeof buf - 1 ? ps->tok.n : sizeof buf - 1;
  memcpy(buf, ps->tok.s, n);
  buf[n] = 0;
  if (ps->tok.kind != T_IDENT || !xc_dtype_from_name(buf, out)) {
    perr(ps, "unknown dtype '%s'", buf);
    return false;
  }
  advance(ps);
  return true;
}

static bool parse_dims(parser_t* ps, xc_tiled_type_t* t) {
  t->rank = 0;
  if (!accept(ps, "[")) return true;
  while (!ps->err && !is(ps, "]")) {
    if (t->rank == XC_TILED_MAX_RANK) {
      perr(ps, "more than %d dims", XC_TILED_MAX_RANK);
      return false;
    }
    if (ps->tok.kind == T_NUM) {
      int64_t v;
      if (!parse_int(ps, &v)) return false;
      t->dims[t->rank++] = xc_tiled_dim_const(v);
    } else {
      char* name = tok_str(ps);
      int knob = name ? xc_tiled_find_knob(ps->k, name) : -1;
      if (knob < 0) {
        perr(ps, "unknown knob '%.*s' in a shape", (int)ps->tok.n, ps->tok.s);
        return false;
      }
      advance(ps);
      t->dims[t->rank++] = xc_tiled_dim_knob(knob);
    }
    if (!accept(ps, ",")) break;
  }
  return expect(ps, "]");
}

static bool parse_type(parser_t* ps, xc_tiled_type_t* t) {
  memset(t, 0, sizeof *t);
  if (accept(ps, "memref")) {
    t->kind = XC_TILED_MEMREF;
    if (!expect(ps, "<")) return false;
    if (accept(ps, "global")) t->scope = XC_SCOPE_GLOBAL;
    else if (accept(ps, "shared")) t->scope = XC_SCOPE_SHARED;
    else if (accept(ps, "private")) t->scope = XC_SCOPE_PRIVATE;
    else {
      perr(ps, "expected a memory scope");
      return false;
    }
    if (!parse_dtype(ps, &t->dtype)) return false;
    if (t->scope == XC_SCOPE_GLOBAL) {
      if (accept(ps, "in")) t->role = XC_ROLE_IN;
      else if (accept(ps, "out")) t->role = XC_ROLE_OUT;
      else if (accept(ps, "inout")) t->role = XC_ROLE_INOUT;
      else {
        perr(ps, "expected in, out or inout");
        return false;
      }
    } else {
      t->role = XC_ROLE_INOUT;
      if (!parse_dims(ps, t)) return false;
    }
    return expect(ps, ">");
  }
  t->kind = XC_TILED_TENSOR;
  return parse_dtype(ps, &t->dtype) && parse_dims(ps, t);
}

static const xc_tiled_expr_t* parse_expr(parser_t* ps, int level);

static const xc_tiled_expr_t* parse_primary(parser_t* ps) {
  xc_tiled_kernel_t* k = ps->k;
  if (accept(ps, "(")) {
    const xc_tiled_expr_t* e = parse_expr(ps, 0);
    return expect(ps, ")") ? e : NULL;
  }
  if (ps->tok.kind == T_NUM) {
    int64_t v;
    return parse_int(ps, &v) ? xc_texpr_const(k, v) : NULL;
  }
  if (ps->tok.kind != T_IDENT) {
    perr(ps, "expected an expression, found '%.*s'", (int)ps->tok.n, ps->tok.s);
    return NULL;
  }
  static const struct { const char* name; xc_tiled_expr_kind_t kind; } fns[] = {
      {"floordiv", XC_TEXPR_FLOORDIV}, {"ceildiv", XC_TEXPR_CEILDIV}, {"mod", XC_TEXPR_MOD},
      {"min", XC_TEXPR_MIN},           {"max", XC_TEXPR_MAX}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (is(ps, fns[i].name)) {
      advance(ps);
      if (!expect(ps, "(")) return NULL;
      const xc_tiled_expr_t* a = parse_expr(ps, 0);
      if (!expect(ps, ",")) return NULL;
      const xc_tiled_expr_t* b = parse_expr(ps, 0);
      if (!expect(ps, ")")) return NULL;
      return xc_texpr_binary(k, fns[i].kind, a, b);
    }
  xc_tiled_value_t* p = lookup(ps, ps->tok.s, ps->tok.n);
  if (p && p->param >= 0) {
    advance(ps);
    return xc_texpr_param(k, p);
  }
  char* name = tok_str(ps);
  int knob = name ? xc_tiled_find_knob(k, name) : -1;
  if (knob >= 0) {
    advance(ps);
    return xc_texpr_knob(k, knob);
  }
  for (int l = 0; name && l < XC_TILED_LIMIT_COUNT; l++)
    if (strcmp(name, xc_tiled_limit_name((xc_tiled_limit_t)l)) == 0) {
      advance(ps);
      return xc_texpr_limit(k, (xc_tiled_limit_t)l);
    }
  perr(ps, "unknown name '%.*s' in an expression", (int)ps->tok.n, ps->tok.s);
  return NULL;
}

/* Levels: 0 '&&', 1 comparisons, 2 '+' '-', 3 '*', then primaries. */
static const xc_tiled_expr_t* parse_expr(parser_t* ps, int level) {
  if (level == 4) return parse_primary(ps);
  const xc_tiled_expr_t* a = parse_expr(ps, level + 1);
  for (;;) {
    xc_tiled_expr_kind_t kind;
    if (level == 0 && is(ps, "&&")) kind = XC_TEXPR_AND;
    else if (level == 1 && is(ps, "<=")) kind = XC_TEXPR_LE;
    else if (level == 1 && is(ps, "<")) kind = XC_TEXPR_LT;
    else if (level == 1 && is(ps, "==")) kind = XC_TEXPR_EQ;
    else if (level == 2 && is(ps, "+")) kind = XC_TEXPR_ADD;
    else if (level == 2 && is(ps, "-")) kind = XC_TEXPR_SUB;
    else if (level == 3 && is(ps, "*")) kind = XC_TEXPR_MUL;
    else return a;
    advance(ps);
    const xc_tiled_expr_t* b = parse_expr(ps, level + 1);
    if (ps->err) return NULL;
    a = xc_texpr_binary(ps->k, kind, a, b);
  }
}

/* ---- ops ---------------------------------------------------------------------- */

static xc_tiled_opcode_t opcode_named(const tok_t* t) {
  for (int i = 0; i < XC_TOP_COUNT; i++) {
    const char* n = xc_tiled_opcode_name((xc_tiled_opcode_t)i);
    if (strlen(n) == t->n && memcmp(n, t->s, t->n) == 0) return (xc_tiled_opcode_t)i;
  }
  return XC_TOP_COUNT;
}

static int name_index(const tok_t* t, const char* (*name)(int), int count) {
  for (int i = 0; i < count; i++)
    if (strlen(name(i)) == t->n && memcmp(name(i), t->s, t->n) == 0) return i;
  return -1;
}

static void parse_block(parser_t* ps, xc_tiled_op_t* loop);

static void check_declared(parser_t* ps, const tok_t* at, xc_tiled_value_t* v,
                           const xc_tiled_type_t* declared) {
  if (ps->err || !v) return;
  if (!xc_tiled_type_equal(&v->type, declared)) {
    char s1[128], s2[128];
    ps->tok = *at;
    perr(ps, "declared type %s differs from the derived type %s",
         xc_tiled_type_str(ps->k, declared, s1, sizeof s1),
         xc_tiled_type_str(ps->k, &v->type, s2, sizeof s2));
  }
}

static void parse_for(parser_t* ps, int num_results, const tok_t* results) {
  xc_tiled_kernel_t* k = ps->k;
  tok_t iv = ps->tok;
  if (iv.kind != T_VALUE) {
    perr(ps, "expected the induction variable");
    return;
  }
  advance(ps);
  if (!expect(ps, "=")) return;
  xc_tiled_value_t* lb = value_ref(ps);
  if (!expect(ps, "to")) return;
  xc_tiled_value_t* ub = value_ref(ps);
  if (!expect(ps, "step")) return;
  xc_tiled_value_t* step = value_ref(ps);
  tok_t args[16];
  xc_tiled_value_t* inits[16];
  xc_tiled_type_t types[16];
  int n = 0;
  if (accept(ps, "iter")) {
    if (!expect(ps, "(")) return;
    while (!ps->err && !is(ps, ")")) {
      if (n == 16) {
        perr(ps, "more than 16 loop-carried values");
        return;
      }
      args[n] = ps->tok;
      if (ps->tok.kind != T_VALUE) {
        perr(ps, "expected a loop-carried argument");
        return;
      }
      advance(ps);
      if (!expect(ps, "=")) return;
      inits[n] = value_ref(ps);
      if (!expect(ps, ":") || !parse_type(ps, &types[n])) return;
      n++;
      if (!accept(ps, ",")) break;
    }
    if (!expect(ps, ")")) return;
  }
  if (ps->err) return;
  if (n != num_results) {
    perr(ps, "for has %d results but carries %d values", num_results, n);
    return;
  }
  if (!expect(ps, "{")) return;
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lb, ub, step, n, inits);
  if (!loop) return;
  bind(ps, &iv, xc_tiled_for_iv(loop));
  for (int i = 0; i < n; i++) {
    bind(ps, &args[i], xc_tiled_for_arg(loop, i));
    check_declared(ps, &args[i], xc_tiled_for_arg(loop, i), &types[i]);
  }
  parse_block(ps, loop);
  for (int i = 0; i < n; i++) bind(ps, &results[i], xc_tiled_for_result(loop, i));
}

static void parse_op(parser_t* ps, xc_tiled_op_t* loop, bool* done) {
  xc_tiled_kernel_t* k = ps->k;
  tok_t results[16];
  int nres = 0;
  if (ps->tok.kind == T_VALUE) {
    for (;;) {
      if (nres == 16) {
        perr(ps, "more than 16 results");
        return;
      }
      results[nres++] = ps->tok;
      advance(ps);
      if (!accept(ps, ",")) break;
      if (ps->tok.kind != T_VALUE) {
        perr(ps, "expected a result name");
        return;
      }
    }
    if (!expect(ps, "=")) return;
  }
  tok_t at = ps->tok;
  if (ps->tok.kind != T_IDENT) {
    perr(ps, "expected an op, found '%.*s'", (int)ps->tok.n, ps->tok.s);
    return;
  }
  xc_tiled_opcode_t oc = opcode_named(&ps->tok);
  if (oc == XC_TOP_COUNT) {
    perr(ps, "unknown op '%.*s'", (int)ps->tok.n, ps->tok.s);
    return;
  }
  advance(ps);
  bool has_result = !(oc == XC_TOP_STORE || oc == XC_TOP_BARRIER || oc == XC_TOP_YIELD ||
                      oc == XC_TOP_FOR);
  if (oc != XC_TOP_FOR && nres != (has_result ? 1 : 0)) {
    ps->tok = at;
    perr(ps, "%s has %d results", xc_tiled_opcode_name(oc), has_result ? 1 : 0);
    return;
  }
  if (oc == XC_TOP_FOR) {
    parse_for(ps, nres, results);
    return;
  }
  if (oc == XC_TOP_YIELD) {
    xc_tiled_value_t* ys[16];
    int n = 0;
    while (!ps->err && ps->tok.kind == T_VALUE && n < 16) {
      ys[n++] = value_ref(ps);
      if (!accept(ps, ",")) break;
    }
    if (!loop) {
      ps->tok = at;
      perr(ps, "yield outside a for body");
      return;
    }
    if (!ps->err) xc_tiled_for_end(k, loop, n, ys);
    *done = true;
    return;
  }
  if (oc == XC_TOP_STORE) {
    xc_tiled_value_t* m = value_ref(ps);
    if (!expect(ps, "[")) return;
    xc_tiled_value_t* off = value_ref(ps);
    if (!expect(ps, "]") || !expect(ps, ",")) return;
    xc_tiled_value_t* v = value_ref(ps);
    xc_tiled_value_t* mask = NULL;
    if (accept(ps, "mask")) mask = value_ref(ps);
    if (!ps->err) xc_tiled_store(k, m, off, v, mask);
    return;
  }
  if (oc == XC_TOP_BARRIER) {
    xc_tiled_barrier(k);
    return;
  }
  /* single-result ops: attributes and operands, then ': type' */
  xc_tiled_value_t* ops[4] = {NULL, NULL, NULL, NULL};
  int64_t axis = 0;
  int sub = 0;
  double cval = 0;
  int64_t ival = 0;
  bool const_is_int = false;
  tok_t sub_tok = ps->tok;
  if (oc == XC_TOP_CONST) {
    if (is(ps, "true") || is(ps, "false")) {
      cval = is(ps, "true");
      advance(ps);
    } else if (is(ps, "inf") || is(ps, "nan")) {
      cval = is(ps, "inf") ? INFINITY : NAN;
      advance(ps);
    } else if (ps->tok.kind == T_NUM) {
      char buf[64];
      size_t n = ps->tok.n < sizeof buf - 1 ? ps->tok.n : sizeof buf - 1;
      memcpy(buf, ps->tok.s, n);
      buf[n] = 0;
      cval = strtod(buf, NULL);
      char* e;
      errno = 0;
      long long iv = strtoll(buf, &e, 10);
      if (!*e && !errno) {
        const_is_int = true;
        ival = iv;
      }
      advance(ps);
    } else {
      perr(ps, "expected a constant");
      return;
    }
  } else if (oc == XC_TOP_PROGRAM_ID || oc == XC_TOP_NUM_PROGRAMS) {
    if (!parse_int(ps, &axis)) return;
  } else if (oc == XC_TOP_KNOB) {
    char* name = tok_str(ps);
    axis = name ? xc_tiled_find_knob(k, name) : -1;
    if (axis < 0) {
      perr(ps, "unknown knob '%.*s'", (int)ps->tok.n, ps->tok.s);
      return;
    }
    advance(ps);
  } else if (oc == XC_TOP_CMP || oc == XC_TOP_REDUCE) {
    sub = oc == XC_TOP_CMP ? name_index(&ps->tok, xc_tiled_cmp_name, 6)
                           : name_index(&ps->tok, xc_tiled_reduce_name, 4);
    if (sub < 0) {
      perr(ps, "unknown %s kind '%.*s'", xc_tiled_opcode_name(oc), (int)ps->tok.n, ps->tok.s);
      return;
    }
    advance(ps);
  }
  if (oc == XC_TOP_LOAD) {
    ops[0] = value_ref(ps);
    if (!expect(ps, "[")) return;
    ops[1] = value_ref(ps);
    if (!expect(ps, "]")) return;
    if (accept(ps, "mask")) ops[2] = value_ref(ps);
    if (accept(ps, "other")) ops[3] = value_ref(ps);
  } else {
    int n = 0;
    while (!ps->err && ps->tok.kind == T_VALUE && n < 4) {
      ops[n++] = value_ref(ps);
      if (!accept(ps, ",")) break;
    }
  }
  if ((oc == XC_TOP_EXPAND_DIMS || oc == XC_TOP_REDUCE) &&
      (!expect(ps, "axis") || !parse_int(ps, &axis)))
    return;
  xc_tiled_type_t t;
  if (!expect(ps, ":") || !parse_type(ps, &t) || ps->err) return;
  xc_tiled_value_t* r = NULL;
  switch (oc) {
    case XC_TOP_CONST:
      /* A float literal for an integer constant must fit (NaN does not). */
      if (xc_dtype_is_int(t.dtype) && !const_is_int && !(cval >= -9223372036854775808.0 && cval < 9223372036854775808.0)) {
        perr(ps, "integer constant %g out of range", cval);
        return;
      }
      r = xc_dtype_is_int(t.dtype) ? xc_tiled_const_i(k, t.dtype, const_is_int ? ival : (int64_t)cval,
                                                      t.rank, t.dims)
                                   : xc_tiled_const_f(k, t.dtype, cval, t.rank, t.dims);
      break;
    case XC_TOP_PROGRAM_ID: r = xc_tiled_program_id(k, (int)axis); break;
    case XC_TOP_NUM_PROGRAMS: r = xc_tiled_num_programs(k, (int)axis); break;
    case XC_TOP_KNOB: r = xc_tiled_knob_value(k, (int)axis); break;
    case XC_TOP_ARANGE:
      if (t.rank != 1) {
        perr(ps, "arange needs a rank-1 type");
        return;
      }
      r = xc_tiled_arange(k, t.dims[0]);
      break;
    case XC_TOP_EXPAND_DIMS: r = xc_tiled_expand_dims(k, ops[0], (int)axis); break;
    case XC_TOP_BROADCAST: r = xc_tiled_broadcast(k, ops[0], t.rank, t.dims); break;
    case XC_TOP_TRANS: r = xc_tiled_trans(k, ops[0]); break;
    case XC_TOP_LOAD: r = xc_tiled_load(k, ops[0], ops[1], ops[2], ops[3]); break;
    case XC_TOP_ALLOC: r = xc_tiled_alloc(k, t.scope, t.dtype, t.rank, t.dims); break;
    case XC_TOP_CMP: r = xc_tiled_cmp(k, (xc_tiled_cmp_t)sub, ops[0], ops[1]); break;
    case XC_TOP_SELECT: r = xc_tiled_select(k, ops[0], ops[1], ops[2]); break;
    case XC_TOP_CAST: r = xc_tiled_cast(k, ops[0], t.dtype); break;
    case XC_TOP_REDUCE: r = xc_tiled_reduce(k, (xc_tiled_reduce_kind_t)sub, ops[0], (int)axis); break;
    case XC_TOP_DOT: r = xc_tiled_dot(k, ops[0], ops[1], ops[2]); break;
    default:
      if (xc_tiled_is_unary(oc)) r = xc_tiled_unary(k, oc, ops[0]);
      else r = xc_tiled_binary(k, oc, ops[0], ops[1]);
      break;
  }
  (void)sub_tok;
  if (!r && k->pending_error) {
    ps->tok = at;
    xc_status_t st = xc_tiled_kernel_take_error(k);
    ps->err = xc_status_annotate(st, "%s:%d:%d", ps->file, at.line, at.col);
    return;
  }
  check_declared(ps, &at, r, &t);
  bind(ps, &results[0], r);
}

static void parse_block(parser_t* ps, xc_tiled_op_t* loop) {
  bool done = false;
  while (!ps->err && !is(ps, "}")) {
    if (ps->tok.kind == T_EOF) {
      perr(ps, "unexpected end of text in a block");
      return;
    }
    if (done) {
      perr(ps, "ops after yield");
      return;
    }
    tok_t at = ps->tok;
    parse_op(ps, loop, &done);
    if (!ps->err && ps->k->pending_error) {
      xc_status_t st = xc_tiled_kernel_take_error(ps->k);
      ps->err = xc_status_annotate(st, "%s:%d:%d", ps->file, at.line, at.col);
    }
  }
  if (loop && !done && !ps->err) perr(ps, "for body does not end with yield");
  expect(ps, "}");
}

static const char* knob_kind_names(int i) {
  static const char* const n[] = {"tile", "threads", "vector", "unroll", "stages", "other"};
  return n[i];
}

static bool ident_is(const tok_t* t, const char* s) {
  return t->kind == T_IDENT && t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}

/* One dot line of a schedule: "dot I: generic, stages S, operands none" or
 * "dot I: mma mMnNkK IN -> ACC, stages S, operands shared|dynamic". */
static void parse_schedule_dot(parser_t* ps, xc_tiled_schedule_t* s) {
  int64_t index;
  if (!parse_int(ps, &index) || !expect(ps, ":")) return;
  if (index != s->num_dots || index >= XC_TILED_MAX_SCHED_DOTS) {
    perr(ps, "dot entries of a schedule are numbered 0, 1, ... (at most %d); found %lld", XC_TILED_MAX_SCHED_DOTS,
         (long long)index);
    return;
  }
  xc_tiled_dot_schedule_t* d = &s->dots[s->num_dots++];
  memset(d, 0, sizeof *d);
  if (accept(ps, "mma")) {
    char buf[64];
    size_t n = ps->tok.n < sizeof buf - 1 ? ps->tok.n : sizeof buf - 1;
    memcpy(buf, ps->tok.s, n);
    buf[n] = 0;
    int m, nn, kk, used = 0;
    if (ps->tok.kind != T_IDENT || sscanf(buf, "m%dn%dk%d%n", &m, &nn, &kk, &used) != 3 || buf[used] ||
        m <= 0 || nn <= 0 || kk <= 0) {
      perr(ps, "expected a matrix instruction shape such as m16n8k16, found '%s'", buf);
      return;
    }
    advance(ps);
    d->mma.m = m, d->mma.n = nn, d->mma.k = kk;
    if (!parse_dtype(ps, &d->mma.input_dtype) || !expect(ps, "-") || !expect(ps, ">") ||
        !parse_dtype(ps, &d->mma.accumulator_dtype))
      return;
  } else if (!expect(ps, "generic")) {
    return;
  }
  int64_t stages;
  if (!expect(ps, ",") || !expect(ps, "stages") || !parse_int(ps, &stages) || !expect(ps, ",") ||
      !expect(ps, "operands"))
    return;
  if (stages < 1 || stages > 64) {
    perr(ps, "stages %lld out of range (1..64)", (long long)stages);
    return;
  }
  d->stages = (int)stages;
  if (accept(ps, "none")) d->operands = XC_SPACE_NONE;
  else if (accept(ps, "shared")) d->operands = XC_SPACE_SHARED;
  else if (accept(ps, "dynamic")) d->operands = XC_SPACE_DYNAMIC;
  else perr(ps, "expected none, shared or dynamic, found '%.*s'", (int)ps->tok.n, ps->tok.s);
}

/* "schedule [NAME] { knobs K = V, ...  threads T, vector V, unroll U
 *  dot ...  local L, dynamic D }" (xc_tiled_schedule_print). */
static void parse_schedule(parser_t* ps) {
  const xc_tiled_kernel_t* k = ps->k;
  xc_tiled_schedule_t* s = &ps->schedule;
  memset(s, 0, sizeof *s);
  if (ps->have_schedule) {
    perr(ps, "a kernel has one schedule");
    return;
  }
  ps->have_schedule = true;
  if (ps->tok.kind == T_IDENT && !is(ps, "{")) {
    if (ps->tok.n >= sizeof s->scheduler) {
      perr(ps, "scheduler name too long");
      return;
    }
    memcpy(s->scheduler, ps->tok.s, ps->tok.n);
    advance(ps);
  }
  if (!expect(ps, "{")) return;
  s->num_knobs = k->num_knobs;
  for (int i = 0; i < k->num_knobs && i < XC_TILED_MAX_SCHED_KNOBS; i++) s->knobs[i] = k->knobs[i].default_value;
  bool have_threads = false;
  while (!ps->err && !is(ps, "}")) {
    tok_t at = ps->tok;
    if (accept(ps, "knobs")) {
      do {
        /* the name on the stack: parsing a schedule alone leaves the kernel as it is */
        char name[128];
        size_t nlen = ps->tok.n < sizeof name - 1 ? ps->tok.n : sizeof name - 1;
        memcpy(name, ps->tok.s, nlen);
        name[nlen] = 0;
        int knob = ps->tok.kind == T_IDENT && ps->tok.n < sizeof name - 1 ? xc_tiled_find_knob(k, name) : -1;
        if (knob < 0 || knob >= XC_TILED_MAX_SCHED_KNOBS) {
          perr(ps, "unknown knob '%.*s' in the schedule", (int)ps->tok.n, ps->tok.s);
          return;
        }
        advance(ps);
        if (!expect(ps, "=") || !parse_int(ps, &s->knobs[knob])) return;
      } while (accept(ps, ","));
    } else if (accept(ps, "threads")) {
      have_threads = true;
      if (!parse_int(ps, &s->threads) || !expect(ps, ",") || !expect(ps, "vector") || !parse_int(ps, &s->vector) ||
          !expect(ps, ",") || !expect(ps, "unroll") || !parse_int(ps, &s->unroll))
        return;
    } else if (accept(ps, "dot")) {
      parse_schedule_dot(ps, s);
    } else if (accept(ps, "local")) {
      if (!parse_int(ps, &s->local_bytes) || !expect(ps, ",") || !expect(ps, "dynamic") ||
          !parse_int(ps, &s->dynamic_bytes))
        return;
    } else {
      ps->tok = at;
      perr(ps, "unexpected '%.*s' in a schedule", (int)ps->tok.n, ps->tok.s);
      return;
    }
  }
  if (!ps->err && !have_threads) perr(ps, "the schedule has no threads line");
  expect(ps, "}");
}

static void parse_kernel(parser_t* ps) {
  xc_tiled_kernel_t* k = ps->k;
  while (!ps->err && !is(ps, "}")) {
    if (accept(ps, "knob")) {
      char* name = tok_str(ps);
      advance(ps);
      if (!expect(ps, ":")) return;
      int kind = name_index(&ps->tok, knob_kind_names, 6);
      if (kind < 0) {
        perr(ps, "unknown knob kind '%.*s'", (int)ps->tok.n, ps->tok.s);
        return;
      }
      advance(ps);
      if (!expect(ps, "in") || !expect(ps, "{")) return;
      int64_t cand[XC_TILED_MAX_KNOB_CANDIDATES];
      int n = 0;
      while (!ps->err && !is(ps, "}")) {
        if (n == XC_TILED_MAX_KNOB_CANDIDATES) {
          perr(ps, "too many candidates");
          return;
        }
        if (!parse_int(ps, &cand[n++])) return;
        if (!accept(ps, ",")) break;
      }
      int64_t def;
      if (!expect(ps, "}") || !expect(ps, "=") || !parse_int(ps, &def)) return;
      xc_tiled_add_knob(k, name, (xc_tiled_knob_kind_t)kind, n, cand, def);
    } else if (accept(ps, "constraint")) {
      xc_tiled_add_constraint(k, parse_expr(ps, 0));
    } else if (ident_is(&ps->tok, "schedule")) {
      advance(ps);
      parse_schedule(ps);
    } else if (accept(ps, "param")) {
      tok_t name = ps->tok;
      if (name.kind != T_VALUE) {
        perr(ps, "expected a parameter name");
        return;
      }
      advance(ps);
      xc_tiled_type_t t;
      if (!expect(ps, ":") || !parse_type(ps, &t)) return;
      char* s = xc_arena_strndup(k->arena, name.s + 1, name.n - 1);
      xc_tiled_value_t* v = NULL;
      if (t.kind == XC_TILED_MEMREF && t.scope == XC_SCOPE_GLOBAL)
        v = xc_tiled_param_buffer(k, s, t.dtype, t.role);
      else if (t.kind == XC_TILED_TENSOR && t.dtype == XC_I64 && t.rank == 0)
        v = xc_tiled_param_scalar(k, s);
      else perr(ps, "parameters are global memrefs or i64 scalars");
      bind(ps, &name, v);
    } else if (accept(ps, "grid")) {
      if (!expect(ps, "[")) return;
      const xc_tiled_expr_t* g[XC_TILED_MAX_GRID];
      int n = 0;
      while (!ps->err && !is(ps, "]")) {
        if (n == XC_TILED_MAX_GRID) {
          perr(ps, "more than 3 grid axes");
          return;
        }
        g[n++] = parse_expr(ps, 0);
        if (!accept(ps, ",")) break;
      }
      if (!expect(ps, "]")) return;
      xc_tiled_set_grid(k, n, g);
    } else {
      break;
    }
    if (!ps->err && k->pending_error) {
      xc_status_t st = xc_tiled_kernel_take_error(k);
      ps->err = xc_status_annotate(st, "%s:%d", ps->file, ps->tok.line);
    }
  }
  parse_block(ps, NULL);
}

/* The "# origin: ..." and "# pattern: ..." comments xc_tiled_print writes
 * after the header: the first line with the tag gives its text (other
 * comments are skipped by advance). *found: false when there is none. */
static char* read_tagged(const char* text, size_t len, const char* tag, bool* found) {
  const size_t tag_len = strlen(tag);
  *found = false;
  for (const char* line = text; line < text + len;) {
    const char* end = memchr(line, '\n', (size_t)(text + len - line));
    if (!end) end = text + len;
    const char* t = line;
    while (t < end && (*t == ' ' || *t == '\t')) t++;
    if ((size_t)(end - t) >= tag_len && memcmp(t, tag, tag_len) == 0) {
      size_t n = (size_t)(end - t) - tag_len;
      while (n && (t[tag_len + n - 1] == '\r' || t[tag_len + n - 1] == ' ')) n--;
      *found = true;
      char* copy = malloc(n + 1);
      if (!copy) return NULL;
      memcpy(copy, t + tag_len, n);
      copy[n] = 0;
      return copy;
    }
    line = end + 1;
  }
  return NULL;
}

/* The origin is for messages only (lost on OOM); a pattern that cannot be
 * kept is an error, since a target would then emit the body instead. */
static xc_status_t read_comments(xc_tiled_kernel_t* k, const char* text, size_t len) {
  bool found;
  char* origin = read_tagged(text, len, "# origin: ", &found);
  if (origin) xc_tiled_set_origin(k, origin);
  free(origin);
  char* pattern = read_tagged(text, len, "# pattern: ", &found);
  if (found && !pattern) return xc_error_oom();
  if (pattern) xc_tiled_set_pattern(k, pattern);
  free(pattern);
  return NULL;
}

xc_status_t xc_tiled_parse(const char* text, size_t len, const char* filename,
                           xc_tiled_kernel_t** out) {
  *out = NULL;
  parser_t ps;
  memset(&ps, 0, sizeof ps);
  ps.p = text;
  ps.end = text + len;
  ps.file = filename ? filename : "<text>";
  ps.line = 1;
  ps.col = 1;
  advance(&ps);
  if (!expect(&ps, "kernel")) return ps.err;
  if (ps.tok.kind != T_AT) {
    perr(&ps, "expected the kernel name (@name)");
    return ps.err;
  }
  char name[256];
  size_t n = ps.tok.n - 1 < sizeof name - 1 ? ps.tok.n - 1 : sizeof name - 1;
  memcpy(name, ps.tok.s + 1, n);
  name[n] = 0;
  advance(&ps);
  XC_RETURN_IF_ERROR(xc_tiled_kernel_create(name, &ps.k));
  if (expect(&ps, "{")) parse_kernel(&ps);
  if (!ps.err && ps.tok.kind != T_EOF) perr(&ps, "text after the kernel");
  if (!ps.err) ps.err = read_comments(ps.k, text, len);
  if (!ps.err) ps.err = xc_tiled_verify(ps.k);
  if (!ps.err && ps.have_schedule)
    ps.err = xc_status_annotate(xc_tiled_set_schedule(ps.k, &ps.schedule), "%s: the schedule", ps.file);
  free(ps.names);
  if (ps.err) {
    xc_tiled_kernel_destroy(ps.k);
    return ps.err;
  }
  *out = ps.k;
  return NULL;
}

xc_status_t xc_tiled_schedule_parse(const xc_tiled_kernel_t* k, const char* text, xc_tiled_schedule_t* out) {
  memset(out, 0, sizeof *out);
  if (!k || !text) return xc_error(XC_INVALID_ARGUMENT, "xc_tiled_schedule_parse: NULL argument");
  parser_t ps;
  memset(&ps, 0, sizeof ps);
  ps.p = text;
  ps.end = text + strlen(text);
  ps.file = "<schedule>";
  ps.line = 1;
  ps.col = 1;
  ps.k = (xc_tiled_kernel_t*)k; /* read only: parse_schedule looks knobs up */
  advance(&ps);
  if (expect(&ps, "schedule")) parse_schedule(&ps);
  if (!ps.err && ps.tok.kind != T_EOF) perr(&ps, "text after the schedule");
  if (ps.err) return xc_status_annotate(ps.err, "schedule of kernel '%s'", k->name);
  *out = ps.schedule;
  return NULL;
}
