/* `xcomp conform --localize MODEL_DIR --target T`: the first kernel of a
 * compiled module whose outputs disagree with the reference interpreter.
 * Runs the module with every intermediate value kept (executor option
 * keep_values) and the interpreter on the module's own optimized graph
 * (intermediates through on_value), then compares, in step order, each
 * kernel's output values with the interpreter's values of the same names at
 * the dtype's tolerance (docs/conformance.md). docs/cli.md, "Localizing a
 * divergence". */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "runtime_cli.h"
#include "xcomp/conformance.h"
#include "xcomp/interp.h"
#include "xcomp/runtime.h"

typedef struct reference_values {
  xc_tensor_t** by_id; /* graph value id -> the interpreter's tensor (owned) */
  bool oom;
} reference_values_t;

static void keep_value(void* ctx, const xc_value_t* v, const xc_tensor_t* t) {
  reference_values_t* r = ctx;
  if (r->by_id[v->id]) return;
  xc_status_t s = xc_tensor_clone(t, &r->by_id[v->id]);
  if (s) {
    r->oom = true;
    xc_status_free(s);
  }
}

static bool is_dir(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* MODEL_DIR/test_data_set_0/input_<i>.pb, in order, as --input specs. */
static int default_inputs(const char* dir, char** paths, int max) {
  int n = 0;
  for (; n < max; n++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/test_data_set_0/input_%d.pb", dir, n);
    struct stat st;
    if (stat(p, &st) != 0) break;
    paths[n] = strdup(p);
    if (!paths[n]) break;
  }
  return n;
}

/* "[i,j,k]" of flat index i in t. */
static void index_text(const xc_tensor_t* t, int64_t flat, char* out, size_t size) {
  int64_t idx[XC_MAX_RANK];
  for (int d = t->rank; d-- > 0;) {
    idx[d] = t->dims[d] ? flat % t->dims[d] : 0;
    flat = t->dims[d] ? flat / t->dims[d] : 0;
  }
  size_t n = (size_t)snprintf(out, size, "[");
  for (int d = 0; d < t->rank && n < size; d++)
    n += (size_t)snprintf(out + n, size - n, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (n < size) snprintf(out + n, size - n, "]");
}

int xc_cli_conform_localize(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_conform_command;
  const char* where = NULL;
  const char* target = "cpu";
  bool no_cache = false;
  uint64_t seed = 1;
  char* paths[64] = {0};
  int num_paths = 0;
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m;
    if ((m = xc_cli_option(argc, argv, &i, "--localize", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--localize needs a model folder or file");
      where = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--target needs a value");
      target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--input", &v)) != 0) {
      if (m < 0 || v[0] != '@') return xc_cli_usage_error(cmd, "--input takes @FILE (with --localize)");
      if (num_paths == 64) return xc_cli_usage_error(cmd, "too many --input");
      paths[num_paths++] = strdup(v + 1);
    } else if (strcmp(argv[i], "--no-cache") == 0) {
      no_cache = true;
    } else {
      for (int k = 0; k < num_paths; k++) free(paths[k]);
      return xc_cli_usage_error(cmd, "'%s' does not go with --localize (it takes --target, --input @FILE, --no-cache)",
                                argv[i]);
    }
  }
  char model[4096];
  bool folder = is_dir(where);
  snprintf(model, sizeof model, folder ? "%s/model.onnx" : "%s", where);
  if (folder && num_paths == 0) num_paths = default_inputs(where, paths, 64);
  if (strcmp(target, "ref") == 0 || strcmp(target, "tiled") == 0) {
    for (int k = 0; k < num_paths; k++) free(paths[k]);
    return xc_cli_usage_error(cmd, "--localize needs a compiled target (cpu, opencl, ...)");
  }

  int rc = XC_EXIT_ERROR;
  xc_compiled_module_t* cm = NULL;
  xc_executor_t* e = NULL;
  xc_tensor_t **inputs = NULL, **outputs = NULL, **ref_outputs = NULL;
  reference_values_t ref = {0};
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  xc_cli_input_spec_t specs[64];
  for (int k = 0; k < num_paths; k++) specs[k] = (xc_cli_input_spec_t){NULL, paths[k]};
  xc_status_t s = xc_cli_load_compiled(model, target, 2, XC_DTYPE_UNDEFINED, no_cache, false, NULL, &cm);
  const xc_graph_t* g = cm ? cm->graph : NULL;
  if (!s) {
    inputs = calloc((size_t)g->num_inputs + 1, sizeof *inputs);
    outputs = calloc((size_t)g->num_outputs + 1, sizeof *outputs);
    ref_outputs = calloc((size_t)g->num_outputs + 1, sizeof *ref_outputs);
    ref.by_id = calloc((size_t)g->num_values + 1, sizeof *ref.by_id);
    if (!inputs || !outputs || !ref_outputs || !ref.by_id) s = xc_error_oom();
  }
  if (!s) s = xc_cli_read_inputs(g, specs, num_paths, XC_DTYPE_UNDEFINED, true, inputs, &binds);
  if (!s) s = xc_cli_random_inputs(g, inputs, &binds, seed);
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.keep_values = true;
  if (!s) s = xc_executor_create(cm, strcmp(target, cm->target) ? target : NULL, &eo, &e);
  if (!s) s = xc_executor_run(e, g->num_inputs, (const xc_tensor_t* const*)inputs, outputs, NULL);
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  io.on_value = keep_value;
  io.on_value_ctx = &ref;
  if (!s) s = xc_interp_run(g, &io, g->num_inputs, (const xc_tensor_t* const*)inputs, ref_outputs);
  if (!s && ref.oom) s = xc_error_oom();
  if (s) {
    rc = xc_cli_fail(s);
    goto done;
  }
  /* Graph inputs are values too (a kernel never writes them, but an alias can). */
  for (int i = 0; i < g->num_inputs; i++)
    if (!ref.by_id[g->inputs[i]->id]) keep_value(&ref, g->inputs[i], inputs[i]);

  const xc_compiled_module_t* m = cm;
  int compared = 0, skipped = 0, kernels = 0;
  printf("localize: %s on %s (%s): %d kernels in %d steps, each kernel's outputs against the reference "
         "interpreter on the module's optimized graph\n",
         model, m->target, xc_device_caps(xc_executor_device(e))->name, m->num_kernels, m->num_steps);
  for (int i = 0; i < m->num_steps; i++) {
    const xc_cm_step_t* st = &m->steps[i];
    if (st->kind != XC_CM_STEP_KERNEL) continue;
    kernels++;
    for (int p = 0; p < st->num_params; p++) {
      int v = st->params[p].value;
      if (v < 0 || st->params[p].role == XC_ROLE_IN || (m->values[v].flags & XC_CM_VALUE_INDEX_ERROR)) continue;
      const xc_value_t* gv = xc_graph_find_value(g, m->values[v].name);
      const xc_tensor_t* expected = gv ? ref.by_id[gv->id] : NULL;
      if (!expected) {
        skipped++; /* a value the reference graph does not compute under this name */
        continue;
      }
      xc_tensor_t* actual = NULL;
      s = xc_executor_read_value(e, v, &actual);
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(m->values[v].dtype, &tol);
      xc_compare_result_t r;
      if (!s) s = xc_compare_tensors(actual, expected, &tol, &r);
      if (s) {
        xc_tensor_destroy(actual);
        rc = xc_cli_fail(s);
        goto done;
      }
      compared++;
      if (r.ok) {
        xc_tensor_destroy(actual);
        continue;
      }
      const xc_cm_kernel_t* k = &m->kernels[st->kernel];
      char at[128] = "";
      if (r.first_mismatch >= 0) index_text(actual, r.first_mismatch, at, sizeof at);
      printf("first divergence: step %d, kernel %s, output value '%s'\n", i, k->name, m->values[v].name);
      printf("  computes: %s\n", k->tiled && k->tiled->origin ? k->tiled->origin : "(origin unknown)");
      printf("  max abs %g, rel-L2 %g, max ULP %g, %lld element%s off%s%s (%s tolerance: rel-L2 <= %g%s)\n",
             r.max_abs, r.rel_l2, r.max_ulp, (long long)r.num_mismatches, r.num_mismatches == 1 ? "" : "s",
             r.reason[0] ? "; " : "", r.reason, xc_dtype_name(m->values[v].dtype), tol.max_rel_l2,
             tol.check_allclose ? ", allclose" : "");
      if (r.first_mismatch >= 0 && !r.reason[0])
        printf("  first at %s: got %.9g, expected %.9g\n", at, r.actual_at_first, r.expected_at_first);
      printf("  source: kernel %s; 'xcomp compile %s --target %s --dump-kernels DIR' writes its code, "
             "'xcomp dump %s --stage source --target %s' prints it\n",
             k->name, model, target, model, target);
      printf("compared %d value%s of %d kernel%s up to here (%d skipped: not in the reference graph)\n", compared,
             compared == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s", skipped);
      xc_tensor_destroy(actual);
      rc = XC_EXIT_ERROR;
      goto done;
    }
  }
  printf("no divergence: %d kernel output value%s of %d kernel%s agree with the reference (%d skipped: not in "
         "the reference graph)\n",
         compared, compared == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s", skipped);
  rc = XC_EXIT_OK;
done:
  xc_executor_destroy(e);
  if (g) {
    for (int i = 0; inputs && i < g->num_inputs; i++) xc_tensor_destroy(inputs[i]);
    for (int i = 0; outputs && i < g->num_outputs; i++) xc_tensor_destroy(outputs[i]);
    for (int i = 0; ref_outputs && i < g->num_outputs; i++) xc_tensor_destroy(ref_outputs[i]);
    for (int i = 0; ref.by_id && i < g->num_values; i++) xc_tensor_destroy(ref.by_id[i]);
  }
  free(inputs);
  free(outputs);
  free(ref_outputs);
  free(ref.by_id);
  xc_symbind_free(&binds);
  xc_compiled_module_destroy(cm);
  for (int k = 0; k < num_paths; k++) free(paths[k]);
  return rc;
}
