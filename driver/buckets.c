/* Shape buckets (xcomp compile --dynamic NAME=MIN..MAX [--buckets LIST];
 * docs/cli.md, docs/runtime.md): one module holding the generic module
 * (NAME symbolic) and a specialization per bucket size, with the padding
 * check's verdict on whether sizes between buckets may be padded up. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "xcomp/passes.h"

enum { MAX_BUCKETS = 64 };

/* Parses "NAME=MIN..MAX". */
static xc_status_t parse_dynamic(const char* spec, char* name, size_t name_size, int64_t* lo, int64_t* hi) {
  const char* eq = strchr(spec, '=');
  const char* dots = eq ? strstr(eq, "..") : NULL;
  char* end = NULL;
  if (eq && dots && eq > spec && (size_t)(eq - spec) < name_size) {
    *lo = strtoll(eq + 1, &end, 10);
    if (end == dots) {
      *hi = strtoll(dots + 2, &end, 10);
      if (end != dots + 2 && *end == '\0' && *lo >= 1 && *hi >= *lo) {
        memcpy(name, spec, (size_t)(eq - spec));
        name[eq - spec] = '\0';
        return NULL;
      }
    }
  }
  return xc_error(XC_INVALID_ARGUMENT, "--dynamic '%s': expected NAME=MIN..MAX with 1 <= MIN <= MAX (e.g. seq=1..512)",
                  spec);
}

/* NAME is a symbol of the inputs' dims, or an input with exactly one
 * symbolic dim (that dim's symbol). */
static xc_status_t resolve_symbol(const xc_graph_t* g, const char* name, char* sym, size_t sym_size) {
  if (xc_graph_has_symbol(g, name)) {
    snprintf(sym, sym_size, "%s", name);
    return NULL;
  }
  for (int i = 0; i < g->num_inputs; i++) {
    const xc_value_t* in = g->inputs[i];
    if (strcmp(in->name, name) != 0) continue;
    const xc_symexpr_t* only = NULL;
    int count = 0;
    for (int d = 0; d < in->rank; d++)
      if (in->dims[d].sym) {
        only = in->dims[d].sym;
        count++;
      }
    if (count == 1 && only->kind == XC_SYM_VAR) {
      snprintf(sym, sym_size, "%s", only->name);
      return NULL;
    }
    char b[160];
    return xc_error(XC_INVALID_ARGUMENT,
                    "--dynamic %s: input '%s' is %s; name one of its symbolic dims instead (a model exported with "
                    "fixed sizes has none: re-export it with a dynamic axis, or compile one size with --shape)",
                    name, name, xc_value_describe(in, b, sizeof b));
  }
  char syms[400] = "";
  for (int i = 0; i < g->num_inputs; i++) {
    char b[160];
    snprintf(syms + strlen(syms), sizeof syms - strlen(syms), "%s%s %s", i ? "," : "", g->inputs[i]->name,
             xc_value_describe(g->inputs[i], b, sizeof b));
  }
  return xc_error(XC_INVALID_ARGUMENT, "--dynamic %s: no input dim or input is named '%s' (inputs:%s)", name, name, syms);
}

/* The bucket sizes: the list given (each in [lo, hi]), else powers of two
 * from the first at or above lo, and hi itself; ascending, unique, and hi
 * always last so every size in range has a bucket at or above it. */
static xc_status_t bucket_sizes(const char* list, int64_t lo, int64_t hi, int64_t* sizes, int* n) {
  *n = 0;
  if (list && *list) {
    for (const char* p = list; *p;) {
      char* end = NULL;
      long long v = strtoll(p, &end, 10);
      if (end == p || (*end && *end != ','))
        return xc_error(XC_INVALID_ARGUMENT, "--buckets '%s': expected sizes separated by commas", list);
      if (v < lo || v > hi)
        return xc_error(XC_INVALID_ARGUMENT, "--buckets: %lld is outside --dynamic's range %" PRId64 "..%" PRId64, v,
                        lo, hi);
      if (*n == MAX_BUCKETS) return xc_error(XC_INVALID_ARGUMENT, "--buckets: at most %d sizes", MAX_BUCKETS);
      sizes[(*n)++] = v;
      p = *end ? end + 1 : end;
    }
  } else {
    int64_t v = 1;
    while (v < lo) v *= 2;
    for (; v < hi && *n < MAX_BUCKETS - 1; v *= 2) sizes[(*n)++] = v;
  }
  bool has_hi = false;
  for (int i = 0; i < *n; i++) has_hi |= sizes[i] == hi;
  if (!has_hi) {
    if (*n == MAX_BUCKETS) return xc_error(XC_INVALID_ARGUMENT, "--buckets: at most %d sizes", MAX_BUCKETS);
    sizes[(*n)++] = hi;
  }
  /* sort, drop duplicates */
  for (int i = 1; i < *n; i++)
    for (int j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
      int64_t t = sizes[j];
      sizes[j] = sizes[j - 1];
      sizes[j - 1] = t;
    }
  int k = 0;
  for (int i = 0; i < *n; i++)
    if (!k || sizes[k - 1] != sizes[i]) sizes[k++] = sizes[i];
  *n = k;
  return NULL;
}

xc_status_t xc_drv_compile_buckets(xc_session_t* s, xc_model_loader_fn load, void* load_ctx, xc_graph_t* g,
                                   xc_compiled_module_t** out) {
  *out = NULL;
  char name[64], sym[64];
  int64_t lo = 0, hi = 0, sizes[MAX_BUCKETS];
  int n = 0;
  XC_RETURN_IF_ERROR(parse_dynamic(s->o.dynamic, name, sizeof name, &lo, &hi));
  XC_RETURN_IF_ERROR(resolve_symbol(g, name, sym, sizeof sym));
  XC_RETURN_IF_ERROR(bucket_sizes(s->o.buckets, lo, hi, sizes, &n));
  FILE* progress = s->o.build.progress;
  xc_cm_buckets_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  b->items = calloc((size_t)n, sizeof *b->items);
  snprintf(b->symbol, sizeof b->symbol, "%s", sym);
  b->min = lo;
  b->max = hi;
  xc_status_t st = b->items ? NULL : xc_error_oom();
  /* The generic module: the symbol stays symbolic. */
  xc_compiled_module_t* m = NULL;
  if (!st) {
    if (progress) fprintf(progress, "xcomp: shape buckets of '%s': the generic module\n", sym);
    st = xc_session_compile_graph(s, g, &m);
    if (st) st = xc_status_annotate(st, "the generic module ('%s' symbolic)", sym);
  }
  if (!st) {
    /* g is now the optimized graph (what runs), with its provenance */
    b->pad_ok = xc_padding_check(g, sym, b->pad_note, sizeof b->pad_note);
    if (progress)
      fprintf(progress, "xcomp: sizes between buckets: %s%s%s\n",
              b->pad_ok ? "padded with zeros to the next bucket (the padding check passed)" : "run the generic module",
              b->pad_ok ? "" : "; not padded because ", b->pad_ok ? "" : b->pad_note);
  }
  for (int i = 0; !st && i < n; i++) {
    if (progress)
      fprintf(progress, "xcomp: shape bucket %s=%" PRId64 " (%d/%d)\n", sym, sizes[i], i + 1, n);
    xc_graph_t* gb = NULL;
    st = load(load_ctx, &gb);
    if (!st) st = xc_graph_set_input_shapes(gb, s->o.input_shapes);
    if (!st) st = xc_graph_bind_symbol(gb, sym, sizes[i]);
    if (!st) st = xc_session_compile_graph(s, gb, &b->items[i].module);
    xc_graph_destroy(gb);
    if (st) {
      st = xc_status_annotate(st, "shape bucket %s=%" PRId64, sym, sizes[i]);
      break;
    }
    b->items[i].size = sizes[i];
    b->num = i + 1;
  }
  if (st) {
    xc_cm_buckets_destroy(b);
    xc_compiled_module_destroy(m);
    return st;
  }
  m->buckets = b;
  *out = m;
  return NULL;
}
