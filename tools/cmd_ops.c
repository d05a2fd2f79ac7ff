/* xcomp ops: list the op registry (generates docs/ops.md with --markdown). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xcomp/op.h"

static int op_cmp(const void* a, const void* b) {
  const xc_op_def_t* x = *(const xc_op_def_t* const*)a;
  const xc_op_def_t* y = *(const xc_op_def_t* const*)b;
  int c = strcmp(x->domain ? x->domain : "", y->domain ? y->domain : "");
  return c ? c : strcmp(x->name, y->name);
}

static void arity(int lo, int hi, char* buf, size_t n) {
  if (hi < 0)
    snprintf(buf, n, "%d+", lo);
  else if (lo == hi)
    snprintf(buf, n, "%d", lo);
  else
    snprintf(buf, n, "%d-%d", lo, hi);
}

static void dtypes(uint32_t mask, char* buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (int t = 1; t < XC_DTYPE_COUNT && k < n; t++)
    if (mask & XC_DT(t))
      k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? " " : "", xc_dtype_name((xc_dtype_t)t));
  if (!mask) snprintf(buf, n, "-");
}

static void attr_text(const xc_attr_def_t* a, char* buf, size_t n) {
  const char* kind = xc_attr_kind_name(a->kind);
  if (a->required) {
    snprintf(buf, n, "%s: %s (required)", a->name, kind);
    return;
  }
  switch (a->kind) {
    case XC_ATTR_INT: snprintf(buf, n, "%s: %s = %lld", a->name, kind, (long long)a->default_int); break;
    case XC_ATTR_FLOAT: snprintf(buf, n, "%s: %s = %g", a->name, kind, a->default_float); break;
    case XC_ATTR_STRING:
      if (a->default_string)
        snprintf(buf, n, "%s: %s = \"%s\"", a->name, kind, a->default_string);
      else
        snprintf(buf, n, "%s: %s (optional)", a->name, kind);
      break;
    case XC_ATTR_INTS:
    case XC_ATTR_FLOATS:
    case XC_ATTR_STRINGS:
    case XC_ATTR_TENSORS: snprintf(buf, n, "%s: %s = []", a->name, kind); break;
    default: snprintf(buf, n, "%s: %s (optional)", a->name, kind); break;
  }
}

static void md_escape(const char* s, FILE* f) {
  for (; s && *s; s++) {
    if (*s == '|')
      fputs("\\|", f);
    else if (*s == '\n')
      fputc(' ', f);
    else
      fputc(*s, f);
  }
}

static int ops_main(int argc, char** argv) {
  bool markdown = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--markdown") == 0)
      markdown = true;
    else
      return xc_cli_usage_error(&xc_cli_ops_command, "unexpected argument '%s'", argv[i]);
  }
  int n = xc_op_count();
  const xc_op_def_t** ops = calloc((size_t)n + 1, sizeof *ops);
  if (!ops) return xc_cli_fail(xc_error_oom());
  for (int i = 0; i < n; i++) ops[i] = xc_op_at(i);
  qsort(ops, (size_t)n, sizeof *ops, op_cmp);
  if (markdown) {
    printf("# Operators\n\n"
           "Generated from the op registry by `xcomp ops --markdown > docs/ops.md`; do not edit\n"
           "by hand (a test fails when this file and the registry disagree). Semantics follow the\n"
           "latest ONNX opset (23); older forms are rewritten on import. Inputs and outputs give\n"
           "the accepted counts; dtypes are those of the main input.\n\n"
           "%d ops.\n\n"
           "| op | domain | inputs | outputs | attributes | dtypes | summary |\n"
           "| --- | --- | --- | --- | --- | --- | --- |\n",
           n);
  }
  for (int i = 0; i < n; i++) {
    const xc_op_def_t* op = ops[i];
    char in[32], out[32], dt[256], at[512];
    arity(op->min_inputs, op->max_inputs, in, sizeof in);
    arity(op->min_outputs, op->max_outputs, out, sizeof out);
    dtypes(op->dtypes, dt, sizeof dt);
    const char* domain = op->domain && *op->domain ? op->domain : "ai.onnx";
    if (markdown) {
      printf("| %s | %s | %s | %s | ", op->name, domain, in, out);
      int na = 0;
      for (const xc_attr_def_t* a = op->attrs; a && a->name; a++, na++) {
        attr_text(a, at, sizeof at);
        if (na) fputs("<br>", stdout);
        fputc('`', stdout);
        md_escape(at, stdout);
        fputc('`', stdout);
      }
      if (!na) fputs("-", stdout);
      printf(" | %s | ", dt);
      md_escape(op->summary ? op->summary : "", stdout);
      printf(" |\n");
    } else {
      printf("%s (%s)  inputs %s, outputs %s\n", op->name, domain, in, out);
      if (op->summary && *op->summary) printf("  %s\n", op->summary);
      printf("  dtypes: %s\n", dt);
      for (const xc_attr_def_t* a = op->attrs; a && a->name; a++) {
        attr_text(a, at, sizeof at);
        printf("  attr %s\n", at);
      }
    }
  }
  free(ops);
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_ops_command = {
    "ops", ops_main, "xcomp ops [--markdown]",
    "List the op registry: name, domain, arity, attributes, dtypes, summary.",
    "options:\n"
    "  --markdown   print the table of docs/ops.md\n"};
