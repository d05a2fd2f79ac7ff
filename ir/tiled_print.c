/* Tiled IR printer: the readable text form documented in docs/tiled-ir.md. */
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

static bool is_infix(xc_tiled_expr_kind_t k) {
  return k == XC_TEXPR_ADD || k == XC_TEXPR_SUB || k == XC_TEXPR_MUL || k == XC_TEXPR_LE ||
         k == XC_TEXPR_LT || k == XC_TEXPR_EQ || k == XC_TEXPR_AND;
}

static void expr_rec(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e, FILE* f, bool nested,
                     int depth) {
  if (!e || depth > 64) {
    fputs("?", f);
    return;
  }
  switch (e->kind) {
    case XC_TEXPR_CONST: fprintf(f, "%lld", (long long)e->value); return;
    case XC_TEXPR_PARAM:
      if (e->value >= 0 && e->value < k->num_params) fputs(k->params[e->value]->name, f);
      else fprintf(f, "param#%lld", (long long)e->value);
      return;
    case XC_TEXPR_KNOB:
      if (e->value >= 0 && e->value < k->num_knobs) fputs(k->knobs[e->value].name, f);
      else fprintf(f, "knob#%lld", (long long)e->value);
      return;
    case XC_TEXPR_LIMIT: fputs(xc_tiled_limit_name((xc_tiled_limit_t)e->value), f); return;
    default: break;
  }
  if (is_infix(e->kind)) {
    const char* sym = e->kind == XC_TEXPR_ADD ? "+" : e->kind == XC_TEXPR_SUB ? "-"
                    : e->kind == XC_TEXPR_MUL ? "*" : e->kind == XC_TEXPR_LE ? "<="
                    : e->kind == XC_TEXPR_LT ? "<" : e->kind == XC_TEXPR_EQ ? "==" : "&&";
    if (nested) fputc('(', f);
    expr_rec(k, e->a, f, true, depth + 1);
    fprintf(f, " %s ", sym);
    expr_rec(k, e->b, f, true, depth + 1);
    if (nested) fputc(')', f);
    return;
  }
  const char* fn = e->kind == XC_TEXPR_FLOORDIV ? "floordiv" : e->kind == XC_TEXPR_CEILDIV
                 ? "ceildiv" : e->kind == XC_TEXPR_MOD ? "mod" : e->kind == XC_TEXPR_MIN
                 ? "min" : e->kind == XC_TEXPR_MAX ? "max" : "?";
  fprintf(f, "%s(", fn);
  expr_rec(k, e->a, f, false, depth + 1);
  fputs(", ", f);
  expr_rec(k, e->b, f, false, depth + 1);
  fputc(')', f);
}

void xc_texpr_fprint(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e, FILE* f) {
  expr_rec(k, e, f, false, 0);
}

char* xc_texpr_to_string(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return NULL;
  xc_texpr_fprint(k, e, f);
  fclose(f);
  return buf;
}

static void print_value(const xc_tiled_value_t* v, FILE* f) {
  if (!v) fputs("_", f);
  else if (v->param >= 0) fprintf(f, "%%%s", v->name);
  else if (v->name) fprintf(f, "%%%s.%d", v->name, v->id);
  else fprintf(f, "%%%d", v->id);
}

static void print_type(const xc_tiled_kernel_t* k, const xc_tiled_type_t* t, FILE* f) {
  char buf[160];
  fputs(xc_tiled_type_str(k, t, buf, sizeof buf), f);
}

static void indent(FILE* f, int depth) {
  for (int i = 0; i < depth; i++) fputs("  ", f);
}

static void print_const(const xc_tiled_op_t* op, FILE* f) {
  xc_dtype_t t = op->results[0]->type.dtype;
  if (xc_dtype_is_int(t)) fprintf(f, "%lld", (long long)op->i);
  else if (t == XC_BOOL) fputs(op->f != 0 ? "true" : "false", f);
  else fprintf(f, "%.17g", op->f);
}

static void print_block(const xc_tiled_kernel_t* k, const xc_tiled_block_t* b, FILE* f, int depth);

static void print_op(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op, FILE* f, int depth) {
  indent(f, depth);
  if (op->opcode == XC_TOP_FOR) {
    for (int i = 0; i < op->num_results; i++) {
      if (i) fputs(", ", f);
      print_value(op->results[i], f);
    }
    if (op->num_results) fputs(" = ", f);
    fputs("for ", f);
    print_value(op->body->args[0], f);
    fputs(" = ", f);
    print_value(op->operands[0], f);
    fputs(" to ", f);
    print_value(op->operands[1], f);
    fputs(" step ", f);
    print_value(op->operands[2], f);
    if (op->num_results) {
      fputs(" iter(", f);
      for (int i = 0; i < op->num_results; i++) {
        if (i) fputs(", ", f);
        print_value(op->body->args[1 + i], f);
        fputs(" = ", f);
        print_value(op->operands[3 + i], f);
        fputs(": ", f);
        print_type(k, &op->results[i]->type, f);
      }
      fputs(")", f);
    }
    fputs(" {\n", f);
    print_block(k, op->body, f, depth + 1);
    indent(f, depth);
    fputs("}\n", f);
    return;
  }
  if (op->num_results == 1) {
    print_value(op->results[0], f);
    fputs(" = ", f);
  }
  fputs(xc_tiled_opcode_name(op->opcode), f);
  switch (op->opcode) {
    case XC_TOP_CONST:
      fputc(' ', f);
      print_const(op, f);
      break;
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS: fprintf(f, " %lld", (long long)op->axis); break;
    case XC_TOP_KNOB:
      fprintf(f, " %s", op->axis >= 0 && op->axis < k->num_knobs ? k->knobs[op->axis].name : "?");
      break;
    case XC_TOP_CMP: fprintf(f, " %s", xc_tiled_cmp_name(op->cmp)); break;
    case XC_TOP_REDUCE: fprintf(f, " %s", xc_tiled_reduce_name(op->reduce)); break;
    default: break;
  }
  if (op->opcode == XC_TOP_LOAD || op->opcode == XC_TOP_STORE) {
    bool load = op->opcode == XC_TOP_LOAD;
    fputc(' ', f);
    print_value(op->operands[0], f);
    fputc('[', f);
    print_value(op->operands[1], f);
    fputc(']', f);
    if (!load) {
      fputs(", ", f);
      print_value(op->operands[2], f);
    }
    const xc_tiled_value_t* mask = load ? op->operands[2] : op->operands[3];
    if (mask) {
      fputs(" mask ", f);
      print_value(mask, f);
    }
    if (load && op->operands[3]) {
      fputs(" other ", f);
      print_value(op->operands[3], f);
    }
  } else {
    for (int i = 0; i < op->num_operands; i++) {
      fputs(i ? ", " : " ", f);
      print_value(op->operands[i], f);
    }
  }
  if (op->opcode == XC_TOP_EXPAND_DIMS || op->opcode == XC_TOP_REDUCE)
    fprintf(f, " axis %lld", (long long)op->axis);
  if (op->num_results == 1) {
    fputs(" : ", f);
    print_type(k, &op->results[0]->type, f);
  }
  fputc('\n', f);
}

static void print_block(const xc_tiled_kernel_t* k, const xc_tiled_block_t* b, FILE* f,
                        int depth) {
  for (int i = 0; i < b->num_ops; i++) print_op(k, b->ops[i], f, depth);
}

static const char* knob_kind_name(xc_tiled_knob_kind_t kind) {
  switch (kind) {
    case XC_KNOB_TILE: return "tile";
    case XC_KNOB_THREADS: return "threads";
    case XC_KNOB_VECTOR: return "vector";
    case XC_KNOB_UNROLL: return "unroll";
    case XC_KNOB_STAGES: return "stages";
    case XC_KNOB_OTHER: return "other";
  }
  return "?";
}

void xc_tiled_print(const xc_tiled_kernel_t* k, FILE* f) {
  fprintf(f, "kernel @%s {\n", k->name);
  /* The origin rides along as a comment the parser reads back (xc_tiled_parse):
   * a compiled module keeps what each kernel computes. One line: newlines
   * in node names become spaces. */
  if (k->origin && *k->origin) {
    fputs("  # origin: ", f);
    for (const char* c = k->origin; *c; c++) fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
    fputc('\n', f);
  }
  if (k->pattern && *k->pattern) {
    fputs("  # pattern: ", f);
    for (const char* c = k->pattern; *c; c++) fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
    fputc('\n', f);
  }
  for (int i = 0; i < k->num_knobs; i++) {
    const xc_tiled_knob_t* kn = &k->knobs[i];
    fprintf(f, "  knob %s: %s in {", kn->name, knob_kind_name(kn->kind));
    for (int j = 0; j < kn->num_candidates; j++)
      fprintf(f, "%s%lld", j ? ", " : "", (long long)kn->candidates[j]);
    fprintf(f, "} = %lld\n", (long long)kn->default_value);
  }
  for (int i = 0; i < k->num_constraints; i++) {
    fputs("  constraint ", f);
    xc_texpr_fprint(k, k->constraints[i], f);
    fputc('\n', f);
  }
  for (int i = 0; i < k->num_params; i++) {
    fputs("  param ", f);
    print_value(k->params[i], f);
    fputs(": ", f);
    print_type(k, &k->params[i]->type, f);
    fputc('\n', f);
  }
  fputs("  grid [", f);
  for (int i = 0; i < k->grid_rank; i++) {
    if (i) fputs(", ", f);
    xc_texpr_fprint(k, k->grid[i], f);
  }
  fputs("]\n", f);
  if (k->schedule) xc_tiled_schedule_print(k, k->schedule, "  ", f);
  if (k->body) print_block(k, k->body, f, 1);
  fputs("}\n", f);
}

char* xc_tiled_print_to_string(const xc_tiled_kernel_t* k) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return NULL;
  xc_tiled_print(k, f);
  fclose(f);
  return buf;
}
