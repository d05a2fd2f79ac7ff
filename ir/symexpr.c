/* Symbolic dimension expressions: construction with simplification,
 * printing, equality, evaluation against run-time bindings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"

static void record_error(xc_graph_t* g, xc_status_t s) {
  if (!g->pending_error)
    g->pending_error = s;
  else
    xc_status_free(s);
}

static const xc_symexpr_t* make(xc_graph_t* g, xc_sym_kind_t k,
                                const xc_symexpr_t* a, const xc_symexpr_t* b) {
  xc_symexpr_t* e = xc_arena_alloc(g->arena, sizeof *e);
  if (!e) {
    record_error(g, xc_error_oom());
    return NULL;
  }
  e->kind = k;
  e->a = a;
  e->b = b;
  return e;
}

static const xc_symexpr_t* as_expr(xc_graph_t* g, xc_dim_t d) {
  if (d.sym) return d.sym;
  xc_symexpr_t* e = (xc_symexpr_t*)make(g, XC_SYM_CONST, NULL, NULL);
  if (e) e->value = d.value;
  return e;
}

static xc_dim_t from_expr(const xc_symexpr_t* e) {
  xc_dim_t d = {0, e};
  if (!e) return d; /* OOM already recorded; degrade to 0 */
  if (e->kind == XC_SYM_CONST) {
    d.value = e->value;
    d.sym = NULL;
  }
  return d;
}

xc_dim_t xc_dim_var(xc_graph_t* g, const char* name) {
  xc_symexpr_t* e = (xc_symexpr_t*)make(g, XC_SYM_VAR, NULL, NULL);
  if (e) e->name = xc_arena_strdup(g->arena, name);
  return from_expr(e);
}

xc_dim_t xc_dim_fresh(xc_graph_t* g, const char* prefix) {
  char buf[96];
  snprintf(buf, sizeof buf, "%s_%d", prefix, g->fresh_counter++);
  return xc_dim_var(g, buf);
}

static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static bool fold(xc_sym_kind_t k, int64_t a, int64_t b, int64_t* out) {
  switch (k) {
    case XC_SYM_ADD: return xc_add_i64(a, b, out);
    case XC_SYM_SUB: return xc_sub_i64(a, b, out);
    case XC_SYM_MUL: return xc_mul_i64(a, b, out);
    case XC_SYM_FLOORDIV:
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      *out = fdiv(a, b);
      return true;
    case XC_SYM_CEILDIV:
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      *out = -fdiv(-a, b);
      return true;
    case XC_SYM_MIN: *out = a < b ? a : b; return true;
    case XC_SYM_MAX: *out = a > b ? a : b; return true;
    default: return false;
  }
}

static xc_dim_t binary(xc_graph_t* g, xc_sym_kind_t k, xc_dim_t a, xc_dim_t b) {
  if (!a.sym && !b.sym) {
    int64_t r;
    if (fold(k, a.value, b.value, &r)) return xc_dim_const(r);
    record_error(g, xc_error(XC_OUT_OF_RANGE,
                             "dimension arithmetic overflows or divides by zero "
                             "(%lld, %lld)",
                             (long long)a.value, (long long)b.value));
    return xc_dim_const(0);
  }
  switch (k) {
    case XC_SYM_ADD:
      if (!a.sym && a.value == 0) return b;
      if (!b.sym && b.value == 0) return a;
      break;
    case XC_SYM_SUB:
      if (!b.sym && b.value == 0) return a;
      if (xc_dim_equal(a, b)) return xc_dim_const(0);
      break;
    case XC_SYM_MUL:
      if (!a.sym && a.value == 1) return b;
      if (!b.sym && b.value == 1) return a;
      if ((!a.sym && a.value == 0) || (!b.sym && b.value == 0))
        return xc_dim_const(0);
      break;
    case XC_SYM_FLOORDIV:
    case XC_SYM_CEILDIV:
      if (!b.sym && b.value == 1) return a;
      if (xc_dim_equal(a, b)) return xc_dim_const(1);
      /* (x*c) / c -> x */
      if (!b.sym && a.sym->kind == XC_SYM_MUL && a.sym->b &&
          a.sym->b->kind == XC_SYM_CONST && a.sym->b->value == b.value)
        return from_expr(a.sym->a);
      break;
    case XC_SYM_MIN:
    case XC_SYM_MAX:
      if (xc_dim_equal(a, b)) return a;
      break;
    default: break;
  }
  /* Canonical order for commutative ops: symbolic operand first. */
  if ((k == XC_SYM_ADD || k == XC_SYM_MUL) && !a.sym) {
    xc_dim_t t = a;
    a = b;
    b = t;
  }
  /* (x + c1) + c2 -> x + (c1+c2); (x * c1) * c2 -> x * (c1*c2) */
  if ((k == XC_SYM_ADD || k == XC_SYM_MUL) && !b.sym && a.sym->kind == k &&
      a.sym->b && a.sym->b->kind == XC_SYM_CONST) {
    int64_t r;
    if (fold(k, a.sym->b->value, b.value, &r))
      return binary(g, k, from_expr(a.sym->a), xc_dim_const(r));
  }
  return from_expr(make(g, k, as_expr(g, a), as_expr(g, b)));
}

xc_dim_t xc_dim_add(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_ADD, a, b); }
xc_dim_t xc_dim_sub(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_SUB, a, b); }
xc_dim_t xc_dim_mul(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_MUL, a, b); }
xc_dim_t xc_dim_floordiv(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_FLOORDIV, a, b); }
xc_dim_t xc_dim_ceildiv(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_CEILDIV, a, b); }
xc_dim_t xc_dim_min(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_MIN, a, b); }
xc_dim_t xc_dim_max(xc_graph_t* g, xc_dim_t a, xc_dim_t b) { return binary(g, XC_SYM_MAX, a, b); }

static bool expr_equal(const xc_symexpr_t* a, const xc_symexpr_t* b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
    case XC_SYM_CONST: return a->value == b->value;
    case XC_SYM_VAR: return strcmp(a->name, b->name) == 0;
    default: return expr_equal(a->a, b->a) && expr_equal(a->b, b->b);
  }
}

bool xc_dim_equal(xc_dim_t a, xc_dim_t b) {
  if (!a.sym && !b.sym) return a.value == b.value;
  if (!a.sym || !b.sym) return false;
  return expr_equal(a.sym, b.sym);
}

/* Printing: infix for + - *, function form for the rest. Parenthesizes
 * operands of * and - when they are sums. */
typedef struct {
  char* buf;
  size_t n, k;
} sbuf_t;

static void put(sbuf_t* s, const char* text) {
  size_t l = strlen(text);
  if (s->k < s->n) {
    size_t room = s->n - s->k - 1;
    size_t c = l < room ? l : room;
    memcpy(s->buf + s->k, text, c);
    s->buf[s->k + c] = 0;
  }
  s->k += l;
}

static int prec(const xc_symexpr_t* e) {
  switch (e->kind) {
    case XC_SYM_ADD:
    case XC_SYM_SUB: return 1;
    case XC_SYM_MUL: return 2;
    default: return 3;
  }
}

static void print_expr(sbuf_t* s, const xc_symexpr_t* e, int min_prec) {
  char tmp[32];
  bool paren = prec(e) < min_prec;
  if (paren) put(s, "(");
  switch (e->kind) {
    case XC_SYM_CONST:
      snprintf(tmp, sizeof tmp, "%lld", (long long)e->value);
      put(s, tmp);
      break;
    case XC_SYM_VAR: put(s, e->name); break;
    case XC_SYM_ADD:
      print_expr(s, e->a, 1);
      put(s, "+");
      print_expr(s, e->b, 2);
      break;
    case XC_SYM_SUB:
      print_expr(s, e->a, 1);
      put(s, "-");
      print_expr(s, e->b, 2);
      break;
    case XC_SYM_MUL:
      print_expr(s, e->a, 2);
      put(s, "*");
      print_expr(s, e->b, 3);
      break;
    default: {
      const char* fn = e->kind == XC_SYM_FLOORDIV  ? "floordiv"
                       : e->kind == XC_SYM_CEILDIV ? "ceildiv"
                       : e->kind == XC_SYM_MIN     ? "min"
                                                   : "max";
      put(s, fn);
      put(s, "(");
      print_expr(s, e->a, 0);
      put(s, ",");
      print_expr(s, e->b, 0);
      put(s, ")");
    }
  }
  if (paren) put(s, ")");
}

const char* xc_dim_print(xc_dim_t d, char* buf, size_t n) {
  sbuf_t s = {buf, n, 0};
  if (n) buf[0] = 0;
  if (!d.sym) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)d.value);
    put(&s, tmp);
  } else {
    print_expr(&s, d.sym, 0);
  }
  return buf;
}

void xc_dim_fprint(FILE* f, xc_dim_t d) {
  char buf[512];
  fputs(xc_dim_print(d, buf, sizeof buf), f);
}

void xc_symbind_init(xc_symbind_t* b) { memset(b, 0, sizeof *b); }

void xc_symbind_free(xc_symbind_t* b) {
  free(b->names);
  free(b->values);
  memset(b, 0, sizeof *b);
}

bool xc_symbind_lookup(const xc_symbind_t* b, const char* name, int64_t* out) {
  for (int i = 0; i < b->count; i++)
    if (strcmp(b->names[i], name) == 0) {
      *out = b->values[i];
      return true;
    }
  return false;
}

xc_status_t xc_symbind_set(xc_symbind_t* b, const char* name, int64_t v) {
  for (int i = 0; i < b->count; i++)
    if (strcmp(b->names[i], name) == 0) {
      b->values[i] = v;
      return NULL;
    }
  if (b->count == b->capacity) {
    int cap = b->capacity ? b->capacity * 2 : 8;
    const char** nn = realloc(b->names, sizeof(*nn) * (size_t)cap);
    if (!nn) return xc_error_oom();
    b->names = nn;
    int64_t* nv = realloc(b->values, sizeof(*nv) * (size_t)cap);
    if (!nv) return xc_error_oom();
    b->values = nv;
    b->capacity = cap;
  }
  b->names[b->count] = name;
  b->values[b->count++] = v;
  return NULL;
}

static xc_status_t eval_expr(const xc_symexpr_t* e, const xc_symbind_t* b,
                             int64_t* out) {
  switch (e->kind) {
    case XC_SYM_CONST: *out = e->value; return NULL;
    case XC_SYM_VAR:
      if (!xc_symbind_lookup(b, e->name, out))
        return xc_error(XC_INVALID_ARGUMENT, "symbol '%s' is not bound", e->name);
      return NULL;
    default: {
      int64_t x, y;
      XC_RETURN_IF_ERROR(eval_expr(e->a, b, &x));
      XC_RETURN_IF_ERROR(eval_expr(e->b, b, &y));
      if ((e->kind == XC_SYM_FLOORDIV || e->kind == XC_SYM_CEILDIV) && y <= 0)
        return xc_error(XC_INVALID_ARGUMENT,
                        "dimension expression divides by %lld", (long long)y);
      if (!fold(e->kind, x, y, out))
        return xc_error(XC_OUT_OF_RANGE, "dimension expression overflows");
      return NULL;
    }
  }
}

xc_status_t xc_dim_eval(xc_dim_t d, const xc_symbind_t* b, int64_t* out) {
  if (!d.sym) {
    *out = d.value;
    return NULL;
  }
  return eval_expr(d.sym, b, out);
}

xc_status_t xc_dim_unify(xc_dim_t d, int64_t actual, xc_symbind_t* b) {
  char buf[256];
  if (d.sym && d.sym->kind == XC_SYM_VAR) {
    int64_t v;
    if (!xc_symbind_lookup(b, d.sym->name, &v))
      return xc_symbind_set(b, d.sym->name, actual);
  }
  int64_t expect;
  XC_RETURN_IF_ERROR(xc_dim_eval(d, b, &expect));
  if (expect != actual)
    return xc_error(XC_INVALID_ARGUMENT, "dimension %s is %lld, expected %lld",
                    xc_dim_print(d, buf, sizeof buf), (long long)actual,
                    (long long)expect);
  return NULL;
}
