/* Runs one test folder in the ONNX backend-test layout:
 *
 *   <dir>/model.onnx
 *   <dir>/test_data_set_N/input_K.pb   binds graph input K (or the input named
 *                                      like the tensor, when it has a name)
 *   <dir>/test_data_set_N/output_K.pb  the reference for graph output K
 *
 * Import, infer, run with the reference interpreter, compare. The verdict is
 * UNSUPPORTED when any step fails with XC_UNSUPPORTED (xcomp does not handle
 * an op, a dtype, an attribute or a file kind), FAIL for every other error or
 * a numeric mismatch, PASS otherwise. This runs inside the forked child of
 * the runner (runner.c); it may also be called directly. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xcomp/conformance.h"
#include "xcomp/interp.h"
#include "xcomp/onnx.h"
#include "xcomp/tensor_io.h"

#define MAX_FILES 4096

static char* dup_printf(const char* fmt, ...) XC_PRINTF(1, 2);
static char* dup_printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char* s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  /* Details are one line. */
  for (char* p = s; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  return s;
}

/* Details name the test already; drop a leading "<dir>/model.onnx: ". */
static void strip_prefix(char* detail, const char* prefix) {
  size_t n = strlen(prefix);
  if (detail && strncmp(detail, prefix, n) == 0) memmove(detail, detail + n, strlen(detail + n) + 1);
}

static bool file_exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static xc_conform_verdict_t verdict_of(xc_status_t s) {
  return xc_status_code(s) == XC_UNSUPPORTED ? XC_CONFORM_UNSUPPORTED : XC_CONFORM_FAIL;
}

/* Tensors of one data set: files[k] holds kind_k.pb, names[k] its name. */
typedef struct {
  int count;
  xc_tensor_t* tensors[MAX_FILES];
  char* names[MAX_FILES];
} tensor_files_t;

static void tensor_files_free(tensor_files_t* f) {
  for (int i = 0; i < f->count; i++) {
    xc_tensor_destroy(f->tensors[i]);
    free(f->names[i]);
  }
  f->count = 0;
}

static xc_status_t read_files(const char* set_dir, const char* kind, tensor_files_t* f) {
  char path[4096];
  f->count = 0;
  for (int k = 0; k < MAX_FILES; k++) {
    snprintf(path, sizeof path, "%s/%s_%d.pb", set_dir, kind, k);
    if (!file_exists(path)) break;
    f->names[k] = NULL;
    f->tensors[k] = NULL;
    xc_status_t s = xc_pb_read(path, &f->tensors[k], &f->names[k]);
    f->count = k + 1;
    if (s) return s;
  }
  return NULL;
}

/* Maps data files onto graph values (inputs or outputs): a file whose tensor
 * name matches a value binds it; the others fill the unbound positions in
 * order. Input files naming an initializer (older models list weights as
 * inputs) are skipped. slot[i] = file index for value i. */
static xc_status_t bind_files(const xc_graph_t* g, bool inputs, const tensor_files_t* f,
                              int* slot) {
  int n = inputs ? g->num_inputs : g->num_outputs;
  xc_value_t* const* vals = inputs ? g->inputs : g->outputs;
  const char* kind = inputs ? "input" : "output";
  bool used[MAX_FILES] = {false};
  for (int i = 0; i < n; i++) slot[i] = -1;
  for (int k = 0; k < f->count; k++) {
    if (!f->names[k] || !f->names[k][0]) continue;
    for (int i = 0; i < n; i++)
      if (slot[i] < 0 && vals[i]->name && strcmp(vals[i]->name, f->names[k]) == 0) {
        slot[i] = k;
        used[k] = true;
        break;
      }
    if (!used[k] && inputs) {
      const xc_value_t* v = xc_graph_find_value(g, f->names[k]);
      if (v && (v->flags & XC_VALUE_INITIALIZER)) used[k] = true;
    }
  }
  int next = 0;
  for (int k = 0; k < f->count; k++) {
    if (used[k]) continue;
    while (next < n && slot[next] >= 0) next++;
    if (next >= n)
      return xc_error(XC_INVALID_ARGUMENT, "%s_%d.pb: the model has only %d %ss", kind, k,
                      n, kind);
    slot[next] = k;
  }
  for (int i = 0; i < n; i++)
    if (slot[i] < 0)
      return xc_error(XC_INVALID_ARGUMENT, "no %s_K.pb for graph %s %d '%s'", kind, kind, i,
                      vals[i]->name ? vals[i]->name : "?");
  return NULL;
}

static xc_conform_verdict_t run_set(const xc_graph_t* g, const char* set_dir, int set_index,
                                    const xc_conform_options_t* opt, char** detail) {
  tensor_files_t* in = calloc(1, sizeof *in);
  tensor_files_t* want = calloc(1, sizeof *want);
  xc_tensor_t** got = calloc((size_t)g->num_outputs + 1, sizeof *got);
  const xc_tensor_t** args = calloc((size_t)g->num_inputs + 1, sizeof *args);
  int* in_slot = calloc((size_t)g->num_inputs + 1, sizeof *in_slot);
  int* out_slot = calloc((size_t)g->num_outputs + 1, sizeof *out_slot);
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  xc_status_t s = NULL;
  if (!in || !want || !got || !args || !in_slot || !out_slot) {
    s = xc_error_oom();
    goto done;
  }
  s = read_files(set_dir, "input", in);
  if (!s) s = read_files(set_dir, "output", want);
  if (!s) s = bind_files(g, true, in, in_slot);
  if (!s) s = bind_files(g, false, want, out_slot);
  if (s) {
    s = xc_status_annotate(s, "test_data_set_%d", set_index);
    goto done;
  }
  for (int i = 0; i < g->num_inputs; i++) args[i] = in->tensors[in_slot[i]];
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  s = xc_interp_run(g, &io, g->num_inputs, args, got);
  if (s) goto done;
  for (int i = 0; i < g->num_outputs; i++) {
    const xc_tensor_t* ref = want->tensors[out_slot[i]];
    /* ONNX's tolerance always; real models add the relative-L2 bound of
     * their dtype (f32: 1e-5) from the conformance table. */
    xc_tolerance_t tol;
    xc_tolerance_onnx(&tol);
    if (opt->models) {
      xc_tolerance_t by_dtype;
      xc_tolerance_for_dtype(ref->dtype, &by_dtype);
      tol.check_rel_l2 = by_dtype.check_rel_l2;
      tol.max_rel_l2 = by_dtype.max_rel_l2;
    }
    xc_compare_result_t r;
    s = xc_compare_tensors(got[i], ref, &tol, &r);
    if (s) goto done;
    if (!r.ok) {
      v = XC_CONFORM_FAIL;
      char where[64] = "";
      if (set_index) snprintf(where, sizeof where, "test_data_set_%d ", set_index);
      *detail = dup_printf("%soutput %d '%s': max-abs %.3g, max-ULP %.0f, rel-L2 %.3g; %s",
                           where, i, g->outputs[i]->name ? g->outputs[i]->name : "?",
                           r.max_abs, r.max_ulp, r.rel_l2, r.reason);
      break;
    }
  }
done:
  if (s) {
    v = verdict_of(s);
    *detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
  }
  if (got)
    for (int i = 0; i < g->num_outputs; i++) xc_tensor_destroy(got[i]);
  if (in) tensor_files_free(in);
  if (want) tensor_files_free(want);
  free(in);
  free(want);
  free(got);
  free(args);
  free(in_slot);
  free(out_slot);
  return v;
}

xc_conform_verdict_t xc_conform_run_case(const char* dir, const xc_conform_options_t* opt,
                                         char** out_detail) {
  *out_detail = NULL;
  xc_conform_options_t defaults;
  if (!opt) {
    xc_conform_options_init(&defaults);
    opt = &defaults;
  }
  if (opt->target && strcmp(opt->target, "ref") != 0) {
    *out_detail = dup_printf("target '%s' is not available", opt->target);
    return XC_CONFORM_UNSUPPORTED;
  }
  char path[4096], path_prefix[4200];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  snprintf(path_prefix, sizeof path_prefix, "%s: ", path);
  xc_graph_t* g = NULL;
  xc_status_t s = xc_onnx_import_file(path, &g);
  if (!s) s = xc_graph_infer(g);
  if (s) {
    xc_conform_verdict_t v = verdict_of(s);
    *out_detail = dup_printf("%s", xc_status_message(s));
    xc_status_free(s);
    xc_graph_destroy(g);
    strip_prefix(*out_detail, path_prefix);
    return v;
  }
  xc_conform_verdict_t v = XC_CONFORM_PASS;
  int sets = 0;
  for (int n = 0; v == XC_CONFORM_PASS; n++) {
    snprintf(path, sizeof path, "%s/test_data_set_%d", dir, n);
    if (!file_exists(path)) break;
    char* d = NULL;
    v = run_set(g, path, n, opt, &d);
    if (v != XC_CONFORM_PASS)
      *out_detail = d;
    else
      free(d);
    sets++;
  }
  if (v == XC_CONFORM_PASS && sets == 0) {
    v = XC_CONFORM_FAIL;
    *out_detail = dup_printf("no test_data_set_0 folder");
  }
  xc_graph_destroy(g);
  if (!*out_detail) *out_detail = dup_printf("%s", "");
  strip_prefix(*out_detail, path_prefix);
  return v;
}
