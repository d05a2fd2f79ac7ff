/* .xir printer: writes a graph in canonical form (docs/ir.md). Parsing the
 * output gives the same graph, and printing that again gives the same text.
 * Floats are printed with the fewest digits that read back to the same bits
 * in their dtype; NaNs other than the default one keep their bit pattern.
 * Large constants can go to a raw side file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/xir.h"
#include "xir_internal.h"

typedef struct printer {
  char* buf;
  size_t len, cap;
  bool oom;
  const xc_xir_print_options_t* opt;
  FILE* side;           /* opened on the first constant that goes there */
  const char* side_ref; /* the name written in file("...") */
  int64_t side_offset;
  /* xc_xir_print_with_side: the side file's bytes kept in memory instead */
  bool side_in_memory;
  uint8_t* side_bytes;
  size_t side_cap;
} printer_t;

static void put_n(printer_t* p, const char* s, size_t n) {
  if (p->oom) return;
  if (p->len + n + 1 > p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 4096;
    while (cap < p->len + n + 1) cap *= 2;
    char* nb = realloc(p->buf, cap);
    if (!nb) {
      p->oom = true;
      return;
    }
    p->buf = nb;
    p->cap = cap;
  }
  memcpy(p->buf + p->len, s, n);
  p->len += n;
  p->buf[p->len] = 0;
}

static void put(printer_t* p, const char* s) { put_n(p, s, strlen(s)); }

static void putf(printer_t* p, const char* fmt, ...) XC_PRINTF(2, 3);
static void putf(printer_t* p, const char* fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof tmp) put_n(p, tmp, (size_t)n);
}

/* Column of the end of the buffer (bytes since the last newline). */
static size_t column(const printer_t* p) {
  size_t i = p->len;
  while (i > 0 && p->buf[i - 1] != '\n') i--;
  return p->len - i;
}

static void put_string(printer_t* p, const char* s) {
  put(p, "\"");
  for (const unsigned char* c = (const unsigned char*)s; *c; c++) {
    switch (*c) {
      case '"': put(p, "\\\""); break;
      case '\\': put(p, "\\\\"); break;
      case '\n': put(p, "\\n"); break;
      case '\t': put(p, "\\t"); break;
      case '\r': put(p, "\\r"); break;
      default:
        if (*c < 0x20 || *c == 0x7f)
          putf(p, "\\x%02x", *c);
        else
          put_n(p, (const char*)c, 1);
    }
  }
  put(p, "\"");
}

static void put_name(printer_t* p, const char* s) {
  if (xc_xir_is_plain_name(s))
    put(p, s);
  else
    put_string(p, s);
}

/* ---- dims (same layout as xc_dim_print, with quoted odd symbol names) --- */

static int prec(const xc_symexpr_t* e) {
  switch (e->kind) {
    case XC_SYM_ADD:
    case XC_SYM_SUB: return 1;
    case XC_SYM_MUL: return 2;
    default: return 3;
  }
}

static void put_expr(printer_t* p, const xc_symexpr_t* e, int min_prec) {
  bool paren = prec(e) < min_prec;
  if (paren) put(p, "(");
  switch (e->kind) {
    case XC_SYM_CONST: putf(p, "%" PRId64, e->value); break;
    case XC_SYM_VAR: put_name(p, e->name); break;
    case XC_SYM_ADD:
    case XC_SYM_SUB:
      put_expr(p, e->a, 1);
      put(p, e->kind == XC_SYM_ADD ? "+" : "-");
      put_expr(p, e->b, 2);
      break;
    case XC_SYM_MUL:
      put_expr(p, e->a, 2);
      put(p, "*");
      put_expr(p, e->b, 3);
      break;
    default:
      put(p, e->kind == XC_SYM_FLOORDIV  ? "floordiv("
             : e->kind == XC_SYM_CEILDIV ? "ceildiv("
             : e->kind == XC_SYM_MIN     ? "min("
                                         : "max(");
      put_expr(p, e->a, 0);
      put(p, ", ");
      put_expr(p, e->b, 0);
      put(p, ")");
  }
  if (paren) put(p, ")");
}

static void put_dim(printer_t* p, xc_dim_t d) {
  if (d.sym)
    put_expr(p, d.sym, 0);
  else
    putf(p, "%" PRId64, d.value);
}

static void put_type(printer_t* p, xc_dtype_t dtype, int rank, const xc_dim_t* dims) {
  put(p, xc_dtype_name(dtype));
  if (rank < 0) {
    put(p, "[?]");
    return;
  }
  put(p, "[");
  for (int i = 0; i < rank; i++) {
    if (i) put(p, ", ");
    put_dim(p, dims[i]);
  }
  put(p, "]");
}

/* ---- numbers ------------------------------------------------------------ */

static uint64_t encode(xc_dtype_t t, double v) {
  uint64_t bits = 0;
  xc_tensor_t one;
  memset(&one, 0, sizeof one);
  one.dtype = t;
  one.numel = 1;
  one.data = &bits;
  xc_tensor_set_f64(&one, 0, v); /* low bytes of `bits` on a little-endian host */
  return bits;
}

/* Writes element bits of float dtype t (value v) into out: the shortest
 * decimal that reads back to the same bits, always with '.' or an exponent. */
static void format_float(xc_dtype_t t, uint64_t bits, double v, char* out, size_t n) {
  if (isnan(v)) {
    if (bits == xc_xir_nan_bits(t, false))
      snprintf(out, n, "nan");
    else if (bits == xc_xir_nan_bits(t, true))
      snprintf(out, n, "-nan");
    else
      snprintf(out, n, "nan(0x%0*" PRIx64 ")", (int)(2 * xc_dtype_size(t)), bits);
    return;
  }
  if (isinf(v)) {
    snprintf(out, n, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(out, n, "%.*g", digits, v);
    if (encode(t, strtod(out, NULL)) == bits) break;
  }
  /* Integral values print in full rather than as 6.55e+04, when exact. */
  if (strchr(out, 'e') && v == floor(v) && fabs(v) < 1e16) {
    char full[32];
    snprintf(full, sizeof full, "%.1f", v);
    if (strlen(full) < n && encode(t, strtod(full, NULL)) == bits) memcpy(out, full, strlen(full) + 1);
  }
  if (!strpbrk(out, ".e")) {
    size_t l = strlen(out);
    if (l + 3 <= n) memcpy(out + l, ".0", 3);
  }
}

static void put_element(printer_t* p, const xc_tensor_t* t, int64_t i) {
  char tmp[64];
  size_t size = xc_dtype_size(t->dtype);
  const unsigned char* src = (const unsigned char*)t->data + (size_t)i * size;
  if (xc_dtype_is_float(t->dtype)) {
    uint64_t bits = 0;
    memcpy(&bits, src, size);
    format_float(t->dtype, bits, xc_tensor_get_f64(t, i), tmp, sizeof tmp);
    put(p, tmp);
  } else if (t->dtype == XC_BOOL) {
    put(p, *src ? "true" : "false");
  } else if (t->dtype == XC_U64) {
    uint64_t u;
    memcpy(&u, src, 8);
    putf(p, "%" PRIu64, u);
  } else {
    putf(p, "%" PRId64, xc_tensor_get_i64(t, i));
  }
}

static void put_double(printer_t* p, double v) {
  char tmp[64];
  uint64_t bits;
  memcpy(&bits, &v, 8);
  format_float(XC_F64, bits, v, tmp, sizeof tmp);
  put(p, tmp);
}

/* ---- tensors ----------------------------------------------------------- */

static const char* base_name(const char* path) {
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Appends t's bytes at the next multiple of 64 of the in-memory side file. */
static xc_status_t append_side(printer_t* p, const xc_tensor_t* t, int64_t* offset) {
  size_t at = ((size_t)p->side_offset + 63) & ~(size_t)63, nbytes = xc_tensor_nbytes(t);
  if (at + nbytes > p->side_cap) {
    size_t cap = p->side_cap ? p->side_cap : 1 << 16;
    while (cap < at + nbytes) cap *= 2;
    uint8_t* nb = realloc(p->side_bytes, cap);
    if (!nb) return xc_error_oom();
    p->side_bytes = nb;
    p->side_cap = cap;
  }
  memset(p->side_bytes + p->side_offset, 0, at - (size_t)p->side_offset);
  if (nbytes) memcpy(p->side_bytes + at, t->data, nbytes);
  *offset = (int64_t)at;
  p->side_offset = (int64_t)(at + nbytes);
  return NULL;
}

static xc_status_t write_side(printer_t* p, const xc_tensor_t* t, int64_t* offset) {
  const xc_xir_print_options_t* o = p->opt;
  if (p->side_in_memory) return append_side(p, t, offset);
  if (!p->side) {
    p->side = fopen(o->side_file, "wb");
    if (!p->side)
      return xc_error(XC_IO, "cannot create side file '%s': %s", o->side_file,
                      strerror(errno));
    p->side_ref = base_name(o->side_file);
  }
  /* Each tensor starts at a multiple of 64 bytes, so it can be mapped and
   * read with aligned vector loads. */
  static const char zeros[64];
  size_t pad = (size_t)((64 - p->side_offset % 64) % 64);
  size_t nbytes = xc_tensor_nbytes(t);
  if ((pad && fwrite(zeros, 1, pad, p->side) != pad) ||
      (nbytes && fwrite(t->data, 1, nbytes, p->side) != nbytes))
    return xc_error(XC_IO, "cannot write side file '%s'", o->side_file);
  p->side_offset += (int64_t)pad;
  *offset = p->side_offset;
  p->side_offset += (int64_t)nbytes;
  return NULL;
}

/* Tensor data (after its type): file(...), a bare scalar, or [e, e, ...]. */
static xc_status_t put_data(printer_t* p, const xc_tensor_t* t, size_t indent) {
  const xc_xir_print_options_t* o = p->opt;
  if ((o->side_file || p->side_in_memory) && t->numel > o->inline_limit) {
    int64_t off = 0;
    XC_RETURN_IF_ERROR(write_side(p, t, &off));
    put(p, "file(");
    put_string(p, p->side_ref);
    putf(p, ", offset=%" PRId64 ")", off);
    return NULL;
  }
  if (t->rank == 0) {
    put_element(p, t, 0);
    return NULL;
  }
  put(p, "[");
  for (int64_t i = 0; i < t->numel; i++) {
    if (i) {
      put(p, ",");
      if (t->numel > 16 && column(p) > 90) {
        put(p, "\n");
        for (size_t k = 0; k < indent; k++) put(p, " ");
      } else {
        put(p, " ");
      }
    }
    put_element(p, t, i);
  }
  put(p, "]");
  return NULL;
}

static void put_tensor_type(printer_t* p, const xc_tensor_t* t) {
  put(p, xc_dtype_name(t->dtype));
  put(p, "[");
  for (int i = 0; i < t->rank; i++) putf(p, "%s%" PRId64, i ? ", " : "", t->dims[i]);
  put(p, "]");
}

static xc_status_t put_tensor_literal(printer_t* p, const xc_tensor_t* t) {
  put_tensor_type(p, t);
  put(p, " ");
  return put_data(p, t, 6);
}

/* ---- attributes and nodes ---------------------------------------------- */

static xc_status_t put_attr(printer_t* p, const xc_attr_t* a) {
  put_name(p, a->name);
  put(p, ": ");
  switch (a->kind) {
    case XC_ATTR_INT: putf(p, "%" PRId64, a->i); break;
    case XC_ATTR_FLOAT: put_double(p, a->f); break;
    case XC_ATTR_STRING: put_string(p, a->s ? a->s : ""); break;
    case XC_ATTR_TENSOR:
      if (!a->t) return xc_error(XC_INVALID_ARGUMENT, "tensor attribute '%s' is empty", a->name);
      return put_tensor_literal(p, a->t);
    case XC_ATTR_INTS:
    case XC_ATTR_FLOATS:
    case XC_ATTR_STRINGS:
    case XC_ATTR_TENSORS:
      if (a->n == 0) {
        put(p, xc_attr_kind_name(a->kind));
        put(p, "[]");
        break;
      }
      put(p, "[");
      for (int64_t i = 0; i < a->n; i++) {
        if (i) put(p, ", ");
        if (a->kind == XC_ATTR_INTS) {
          putf(p, "%" PRId64, a->ints[i]);
        } else if (a->kind == XC_ATTR_FLOATS) {
          put_double(p, a->floats[i]);
        } else if (a->kind == XC_ATTR_STRINGS) {
          put_string(p, a->strings[i] ? a->strings[i] : "");
        } else {
          if (!a->tensors[i])
            return xc_error(XC_INVALID_ARGUMENT, "attribute '%s': tensor %lld is empty",
                            a->name, (long long)i);
          XC_RETURN_IF_ERROR(put_tensor_literal(p, a->tensors[i]));
        }
      }
      put(p, "]");
      break;
    default:
      return xc_error(XC_UNSUPPORTED, "attribute '%s' of kind %s has no text form yet",
                      a->name, xc_attr_kind_name(a->kind));
  }
  return NULL;
}

static void put_value_type(printer_t* p, const xc_value_t* v) {
  if (v->dtype == XC_DTYPE_UNDEFINED) return;
  put(p, ": ");
  put_type(p, v->dtype, v->rank, v->dims);
}

/* Comment text must stay on one line. */
static void put_comment_text(printer_t* p, const char* s) {
  for (const unsigned char* c = (const unsigned char*)s; *c; c++)
    put_n(p, *c < 0x20 ? "?" : (const char*)c, 1);
}

static void put_provenance(printer_t* p, const xc_node_t* n) {
  const xc_provenance_t* pv = &n->prov;
  bool src = pv->source && strcmp(pv->source, n->name) != 0;
  if (!src && !pv->file && !pv->num_origins) return;
  put(p, "  #");
  if (src) {
    put(p, " source ");
    put_comment_text(p, pv->source);
  }
  if (pv->file) {
    put(p, " at ");
    put_comment_text(p, pv->file);
    if (pv->line) putf(p, ":%d:%d", pv->line, pv->col);
  }
  if (pv->num_origins) {
    put(p, " from");
    for (int i = 0; i < pv->num_origins; i++) {
      put(p, i ? ", " : " ");
      put_comment_text(p, pv->origins[i] ? pv->origins[i] : "?");
    }
  }
}

static xc_status_t put_node(printer_t* p, const xc_node_t* n, int index) {
  put(p, "  ");
  for (int i = 0; i < n->num_outputs; i++) {
    if (i) put(p, ", ");
    const xc_value_t* v = n->outputs[i];
    if (!v) {
      put(p, "_");
      continue;
    }
    put_name(p, v->name);
    put_value_type(p, v);
  }
  if (n->num_outputs == 0)
    return xc_error(XC_INVALID_ARGUMENT, "node '%s' has no outputs", n->name);
  put(p, " = ");
  if (n->domain && *n->domain) {
    if (!xc_xir_is_plain_name(n->domain))
      return xc_error(XC_UNSUPPORTED, "node '%s': domain '%s' has no text form", n->name,
                      n->domain);
    put(p, n->domain);
    put(p, "::");
  }
  if (!xc_xir_is_plain_name(n->op_type))
    return xc_error(XC_UNSUPPORTED, "node '%s': op type '%s' has no text form", n->name,
                    n->op_type);
  put(p, n->op_type);
  put(p, "(");
  for (int i = 0; i < n->num_inputs; i++) {
    if (i) put(p, ", ");
    if (n->inputs[i])
      put_name(p, n->inputs[i]->name);
    else
      put(p, "_");
  }
  put(p, ")");
  if (n->num_attrs) {
    put(p, " {");
    for (int i = 0; i < n->num_attrs; i++) {
      if (i) put(p, ", ");
      XC_RETURN_IF_ERROR(put_attr(p, &n->attrs[i]));
    }
    put(p, "}");
  }
  /* The parser names unlabeled nodes "<Op>_<index>"; print a label only
   * when the name differs from that. */
  char auto_name[256];
  snprintf(auto_name, sizeof auto_name, "%s_%d", n->op_type, index);
  if (p->opt->show_provenance || strcmp(n->name, auto_name) != 0) {
    put(p, " @");
    put_name(p, n->name);
  }
  if (p->opt->show_provenance) put_provenance(p, n);
  put(p, "\n");
  return NULL;
}

static xc_status_t print_graph(printer_t* p, const xc_graph_t* g) {
  put(p, "xir 1\ngraph ");
  put_name(p, g->name && *g->name ? g->name : "main");
  putf(p, " opset %" PRId64 " {\n", g->opset);
  for (int i = 0; i < g->num_inputs; i++) {
    const xc_value_t* v = g->inputs[i];
    put(p, "  input ");
    put_name(p, v->name);
    put(p, ": ");
    put_type(p, v->dtype, v->rank, v->dims);
    put(p, "\n");
  }
  for (int i = 0; i < g->num_initializers; i++) {
    const xc_value_t* v = g->initializers[i];
    if (!v->constant)
      return xc_error(XC_INVALID_ARGUMENT, "initializer '%s' has no data", v->name);
    put(p, "  const ");
    put_name(p, v->name);
    put(p, ": ");
    put_tensor_type(p, v->constant);
    put(p, " = ");
    XC_RETURN_IF_ERROR(put_data(p, v->constant, 4));
    put(p, "\n");
  }
  for (int i = 0; i < g->num_nodes; i++) XC_RETURN_IF_ERROR(put_node(p, g->nodes[i], i));
  for (int i = 0; i < g->num_outputs; i++) {
    put(p, "  output ");
    put_name(p, g->outputs[i]->name);
    put(p, "\n");
  }
  put(p, "}\n");
  return p->oom ? xc_error_oom() : NULL;
}

void xc_xir_print_options_init(xc_xir_print_options_t* o) {
  memset(o, 0, sizeof *o);
  o->inline_limit = 64;
  o->side_file = NULL;
  o->show_provenance = false;
}

xc_status_t xc_xir_print_string(const xc_graph_t* g, const xc_xir_print_options_t* o,
                                char** out) {
  *out = NULL;
  xc_xir_print_options_t defaults;
  if (!o) {
    xc_xir_print_options_init(&defaults);
    o = &defaults;
  }
  printer_t p;
  memset(&p, 0, sizeof p);
  p.opt = o;
  xc_status_t s = print_graph(&p, g);
  if (p.side && fclose(p.side) != 0 && !s)
    s = xc_error(XC_IO, "cannot write side file '%s'", o->side_file);
  if (s) {
    free(p.buf);
    return s;
  }
  *out = p.buf;
  return NULL;
}

/* The side file's size for the initializers printed there, each at a
 * multiple of 64 bytes: its buffer is allocated once (tensor attributes, rare
 * and small, grow it). */
static size_t side_size_of(const xc_graph_t* g, int64_t inline_limit) {
  size_t size = 0;
  for (int i = 0; i < g->num_initializers; i++) {
    const xc_tensor_t* t = g->initializers[i]->constant;
    if (t && t->numel > inline_limit) size = ((size + 63) & ~(size_t)63) + xc_tensor_nbytes(t);
  }
  return size;
}

xc_status_t xc_xir_print_with_side(const xc_graph_t* g, const xc_xir_print_options_t* o, const char* side_name,
                                   char** out_text, uint8_t** out_side, size_t* out_side_size) {
  *out_text = NULL;
  *out_side = NULL;
  *out_side_size = 0;
  xc_xir_print_options_t opt;
  if (o) opt = *o;
  else xc_xir_print_options_init(&opt);
  opt.side_file = NULL;
  printer_t p;
  memset(&p, 0, sizeof p);
  p.opt = &opt;
  p.side_in_memory = true;
  p.side_ref = side_name;
  p.side_cap = side_size_of(g, opt.inline_limit);
  p.side_bytes = malloc(p.side_cap ? p.side_cap : 1);
  if (!p.side_bytes) return xc_error_oom();
  if (!p.side_cap) p.side_cap = 1;
  xc_status_t s = print_graph(&p, g);
  if (s) {
    free(p.buf);
    free(p.side_bytes);
    return s;
  }
  *out_text = p.buf;
  *out_side = p.side_bytes;
  *out_side_size = (size_t)p.side_offset;
  return NULL;
}

xc_status_t xc_xir_print(const xc_graph_t* g, const xc_xir_print_options_t* o, FILE* f) {
  char* text;
  XC_RETURN_IF_ERROR(xc_xir_print_string(g, o, &text));
  size_t n = strlen(text);
  bool ok = fwrite(text, 1, n, f) == n;
  free(text);
  return ok ? NULL : xc_error(XC_IO, "cannot write .xir text");
}
