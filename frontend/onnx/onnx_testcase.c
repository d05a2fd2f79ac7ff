/* Loader for ONNX backend-test folders: model.onnx + test_data_set_N/
 * {input,output}_K.pb. See include/xcomp/onnx_testcase.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xcomp/onnx.h"
#include "xcomp/onnx_testcase.h"
#include "xcomp/tensor_io.h"

static char* path_join(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = malloc(n);
  size_t la = strlen(a);
  bool slash = la > 0 && a[la - 1] == '/';
  if (p) snprintf(p, n, "%s%s%s", a, slash ? "" : "/", b);
  return p;
}

static bool is_dir(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Reads prefix_0.pb, prefix_1.pb, ... until the first missing one. */
static xc_status_t read_series(const char* dir, const char* prefix, int* count,
                               xc_tensor_t*** tensors, char*** names) {
  *count = 0;
  *tensors = NULL;
  *names = NULL;
  int cap = 0;
  for (int k = 0;; k++) {
    char file[64];
    snprintf(file, sizeof file, "%s_%d.pb", prefix, k);
    char* p = path_join(dir, file);
    if (!p) return xc_error_oom();
    if (!is_file(p)) {
      free(p);
      return NULL;
    }
    if (*count == cap) {
      int ncap = cap ? cap * 2 : 4;
      xc_tensor_t** nt = realloc(*tensors, sizeof *nt * (size_t)ncap);
      if (nt) *tensors = nt;
      char** nn = realloc(*names, sizeof *nn * (size_t)ncap);
      if (nn) *names = nn;
      if (!nt || !nn) {
        free(p);
        return xc_error_oom();
      }
      cap = ncap;
    }
    xc_status_t s = xc_pb_read(p, &(*tensors)[*count], &(*names)[*count]);
    free(p);
    if (s) return s;
    (*count)++;
  }
}

static void free_series(int n, xc_tensor_t** t, char** names) {
  for (int i = 0; i < n; i++) {
    if (t) xc_tensor_destroy(t[i]);
    if (names) free(names[i]);
  }
  free(t);
  free(names);
}

static xc_status_t check_dtype(const xc_value_t* v, const xc_tensor_t* t, const char* dir,
                               const char* kind, int k) {
  if (v->dtype != XC_DTYPE_UNDEFINED && v->dtype != t->dtype)
    return xc_error(XC_INVALID_ARGUMENT, "%s/%s_%d.pb: dtype %s, but '%s' is %s", dir, kind, k,
                    xc_dtype_name(t->dtype), v->name, xc_dtype_name(v->dtype));
  return NULL;
}

static xc_status_t load_set(const xc_graph_t* g, const char* dir, xc_onnx_test_data_t* set) {
  int nin = 0, nout = 0;
  xc_tensor_t **ins = NULL, **outs = NULL;
  char **in_names = NULL, **out_names = NULL;
  xc_status_t s = read_series(dir, "input", &nin, &ins, &in_names);
  if (!s) s = read_series(dir, "output", &nout, &outs, &out_names);
  if (s) goto done;
  set->inputs = calloc((size_t)g->num_inputs + 1, sizeof(xc_tensor_t*));
  set->expected = calloc((size_t)g->num_outputs + 1, sizeof(xc_tensor_t*));
  if (!set->inputs || !set->expected) {
    s = xc_error_oom();
    goto done;
  }
  set->num_inputs = g->num_inputs;
  set->num_outputs = g->num_outputs;
  /* Inputs: by position when the counts agree; otherwise (the model lists
   * initializers among its inputs) by the tensors' names. */
  if (nin == g->num_inputs) {
    for (int k = 0; k < nin; k++) {
      s = check_dtype(g->inputs[k], ins[k], dir, "input", k);
      if (s) goto done;
      set->inputs[k] = ins[k];
      ins[k] = NULL;
    }
  } else {
    for (int k = 0; k < nin; k++) {
      int pos = -1;
      for (int j = 0; j < g->num_inputs; j++)
        if (in_names[k] && strcmp(in_names[k], g->inputs[j]->name) == 0) pos = j;
      if (pos < 0) {
        /* An input for a value that is an initializer in xcomp: it would
         * override the constant, which xcomp does not do. */
        const xc_value_t* v = in_names[k] && *in_names[k] ? xc_graph_find_value(g, in_names[k]) : NULL;
        if (v && (v->flags & XC_VALUE_INITIALIZER)) {
          s = xc_error(XC_UNSUPPORTED, "%s/input_%d.pb: feeds initializer '%s' (overriding "
                       "initializers is not supported)", dir, k, v->name);
          goto done;
        }
        s = xc_error(XC_INVALID_ARGUMENT,
                     "%s: %d input files for %d graph inputs, and input_%d.pb ('%s') matches "
                     "no input by name", dir, nin, g->num_inputs, k, in_names[k] ? in_names[k] : "");
        goto done;
      }
      if (set->inputs[pos]) {
        s = xc_error(XC_INVALID_ARGUMENT, "%s/input_%d.pb: input '%s' given twice", dir, k,
                     g->inputs[pos]->name);
        goto done;
      }
      s = check_dtype(g->inputs[pos], ins[k], dir, "input", k);
      if (s) goto done;
      set->inputs[pos] = ins[k];
      ins[k] = NULL;
    }
    for (int j = 0; j < g->num_inputs; j++)
      if (!set->inputs[j]) {
        s = xc_error(XC_INVALID_ARGUMENT, "%s: no input file for graph input '%s'", dir,
                     g->inputs[j]->name);
        goto done;
      }
  }
  if (nout != g->num_outputs) {
    s = xc_error(XC_INVALID_ARGUMENT, "%s: %d output files for %d graph outputs", dir, nout,
                 g->num_outputs);
    goto done;
  }
  for (int k = 0; k < nout; k++) {
    s = check_dtype(g->outputs[k], outs[k], dir, "output", k);
    if (s) goto done;
    set->expected[k] = outs[k];
    outs[k] = NULL;
  }
done:
  free_series(nin, ins, in_names);
  free_series(nout, outs, out_names);
  return s;
}

static void free_set(xc_onnx_test_data_t* set) {
  for (int i = 0; i < set->num_inputs; i++) xc_tensor_destroy(set->inputs ? set->inputs[i] : NULL);
  for (int i = 0; i < set->num_outputs; i++)
    xc_tensor_destroy(set->expected ? set->expected[i] : NULL);
  free(set->inputs);
  free(set->expected);
  free(set->dir);
}

void xc_onnx_testcase_destroy(xc_onnx_testcase_t* tc) {
  if (!tc) return;
  for (int i = 0; i < tc->num_sets; i++) free_set(&tc->sets[i]);
  free(tc->sets);
  xc_graph_destroy(tc->graph);
  free(tc->dir);
  free(tc->name);
  free(tc);
}

xc_status_t xc_onnx_testcase_load(const char* dir, xc_onnx_testcase_t** out) {
  return xc_onnx_testcase_load_ex(dir, NULL, out);
}

xc_status_t xc_onnx_testcase_load_ex(const char* dir, const xc_onnx_import_options_t* opts,
                                     xc_onnx_testcase_t** out) {
  *out = NULL;
  if (!is_dir(dir)) return xc_error(XC_NOT_FOUND, "%s: not a folder", dir);
  xc_onnx_testcase_t* tc = calloc(1, sizeof *tc);
  if (!tc) return xc_error_oom();
  tc->dir = strdup(dir);
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  size_t start = len;
  while (start > 0 && dir[start - 1] != '/') start--;
  tc->name = strndup(dir + start, len - start);
  char* model = path_join(dir, "model.onnx");
  if (!tc->dir || !tc->name || !model) {
    free(model);
    xc_onnx_testcase_destroy(tc);
    return xc_error_oom();
  }
  xc_status_t s = xc_onnx_import_file_ex(model, opts, &tc->graph);
  free(model);
  for (int n = 0; !s; n++) {
    char sub[64];
    snprintf(sub, sizeof sub, "test_data_set_%d", n);
    char* p = path_join(dir, sub);
    if (!p) {
      s = xc_error_oom();
      break;
    }
    if (!is_dir(p)) {
      free(p);
      break;
    }
    xc_onnx_test_data_t* ns = realloc(tc->sets, sizeof *ns * (size_t)(tc->num_sets + 1));
    if (!ns) {
      free(p);
      s = xc_error_oom();
      break;
    }
    tc->sets = ns;
    xc_onnx_test_data_t* set = &tc->sets[tc->num_sets++];
    memset(set, 0, sizeof *set);
    set->dir = p;
    s = load_set(tc->graph, p, set);
  }
  if (s) {
    xc_onnx_testcase_destroy(tc);
    return s;
  }
  *out = tc;
  return NULL;
}
