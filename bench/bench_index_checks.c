/* What the index checks in generated kernels cost (docs/runtime.md, "Index
 * checks"): each model is compiled twice for one target, with the checks (the
 * default) and without (xc_session_options_t.no_index_checks, the CLI's
 * XCOMP_INDEX_CHECKS=off), and the two executors run the model's
 * test_data_set_0 inputs interleaved after a warm-up. Outputs of the two must
 * agree to rel-L2 1e-5 (checked first; not bit for bit: the kernels differ,
 * and the C compiler may contract or vectorize their arithmetic differently). The table gives the medians of the whole
 * run (executor: upload, kernels, reading the index-error record, download),
 * the kernels' time (device events; the host clock on cpu) and the median of
 * the per-pair ratios checked / unchecked.
 *
 * Usage: bench_index_checks [--target T] [--seconds S] [model_dir...]
 *        (default: cpu, 2 s per model, every model under XCOMP_BENCH_MODELS) */
#include <dirent.h>
#include <unistd.h>

#include "bench_common.h"
#include "xcomp/frontend.h"
#include "xcomp/tensor_io.h"

#ifndef XCOMP_BENCH_MODELS
#define XCOMP_BENCH_MODELS "tests/models"
#endif

#define MAX_IO 16

static const char* g_target = "cpu";
static double g_seconds = 2.0;

static double out_rel_l2(const xc_tensor_t* got, const xc_tensor_t* want) {
  if (got->numel != want->numel) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want->numel; i++) {
    double w = xc_tensor_get_f64(want, i), d = xc_tensor_get_f64(got, i) - w;
    num += d * d;
    den += w * w;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static xc_graph_t* load(const char* path) {
  xc_graph_t* g = NULL;
  bench_check(xc_load_model(path, &g), path);
  bench_check(xc_graph_infer(g), "infer");
  return g;
}

/* Kernel steps of m that take the index-error record. */
static int checked_kernels(const xc_compiled_module_t* m) {
  int n = 0;
  for (int i = 0; i < m->num_steps; i++) {
    const xc_cm_step_t* st = &m->steps[i];
    if (st->kind != XC_CM_STEP_KERNEL) continue;
    bool has = false;
    for (int p = 0; p < st->num_params; p++)
      has |= st->params[p].value >= 0 && (m->values[st->params[p].value].flags & XC_CM_VALUE_INDEX_ERROR);
    n += has;
  }
  return n;
}

static int kernel_steps(const xc_compiled_module_t* m) {
  int n = 0;
  for (int i = 0; i < m->num_steps; i++) n += m->steps[i].kind == XC_CM_STEP_KERNEL;
  return n;
}

static void bench_model(const char* dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (access(path, R_OK) != 0) return;
  const char* name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
  xc_compiled_module_t* m[2] = {NULL, NULL};
  xc_executor_t* e[2] = {NULL, NULL};
  for (int v = 0; v < 2; v++) {
    xc_session_options_t req;
    bench_session_options(&req, g_target);
    req.no_index_checks = v == 1;
    xc_status_t s = bench_try_compile_request(load(path), &req, &m[v], &e[v]);
    if (s) {
      printf("| %s | not compiled | | | | | | |\n", name);
      fprintf(stderr, "bench_index_checks: %s: %s\n", name, xc_status_message(s));
      xc_status_free(s);
      for (int w = 0; w < v; w++) {
        xc_executor_destroy(e[w]);
        xc_compiled_module_destroy(m[w]);
      }
      return;
    }
  }
  xc_graph_t* ref = load(path);
  int ni = ref->num_inputs, no = ref->num_outputs;
  if (ni > MAX_IO || no > MAX_IO) bench_check(xc_error(XC_UNSUPPORTED, "too many inputs/outputs"), name);
  xc_tensor_t* in[MAX_IO] = {NULL};
  for (int i = 0; i < ni; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    bench_check(xc_pb_read(path, &in[i], NULL), path);
  }
  xc_tensor_t* out[2][MAX_IO] = {{NULL}};
  for (int v = 0; v < 2; v++) bench_run(e[v], ni, in, no, out[v], 1, NULL);
  double err = 0; /* the kernels differ, so the C compiler may contract and vectorize differently */
  for (int i = 0; i < no; i++) {
    double d = out_rel_l2(out[0][i], out[1][i]);
    if (!(d <= 1e-5))
      bench_check(xc_error(XC_INTERNAL, "output %d differs with and without the index checks (rel-L2 %g)", i, d),
                  name);
    if (d > err) err = d;
    xc_tensor_destroy(out[0][i]);
    xc_tensor_destroy(out[1][i]);
    out[0][i] = out[1][i] = NULL;
  }
  for (int w = 0; w < 3; w++)
    for (int v = 0; v < 2; v++) bench_run(e[v], ni, in, no, out[v], 0, NULL);
  enum { MAXR = 401 };
  static double wall[2][MAXR], kern[2][MAXR], ratio[MAXR], kratio[MAXR];
  double spent = 0;
  int runs = 0;
  while (runs < MAXR && (runs < 11 || spent < g_seconds)) {
    /* alternate which variant goes first, so neither always follows the other */
    for (int j = 0; j < 2; j++) {
      int v = (runs + j) % 2;
      kern[v][runs] = bench_run(e[v], ni, in, no, out[v], 0, &wall[v][runs]);
      spent += wall[v][runs];
    }
    ratio[runs] = wall[0][runs] / wall[1][runs];
    kratio[runs] = kern[1][runs] > 0 ? kern[0][runs] / kern[1][runs] : 1.0;
    runs++;
  }
  printf("| %s | %d of %d | %d | %.4f | %.4f | %+.1f%% | %.4f | %.4f | %+.1f%% | %.1e |\n", name, checked_kernels(m[0]),
         kernel_steps(m[0]), runs, bench_median(wall[0], runs) * 1e3, bench_median(wall[1], runs) * 1e3,
         (bench_median(ratio, runs) - 1) * 100, bench_median(kern[0], runs) * 1e3,
         bench_median(kern[1], runs) * 1e3, (bench_median(kratio, runs) - 1) * 100, err);
  fflush(stdout);
  for (int i = 0; i < ni; i++) xc_tensor_destroy(in[i]);
  for (int v = 0; v < 2; v++) {
    xc_executor_destroy(e[v]);
    xc_compiled_module_destroy(m[v]);
  }
  xc_graph_destroy(ref);
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  int first = 1;
  while (argc > first + 1 && argv[first][0] == '-') {
    if (strcmp(argv[first], "--target") == 0) g_target = argv[first + 1];
    else if (strcmp(argv[first], "--seconds") == 0) g_seconds = atof(argv[first + 1]);
    else break;
    first += 2;
  }
  printf("Index checks: %s modules compiled with and without them (executor, whole run and kernels); "
         "OMP_NUM_THREADS=%s\n",
         g_target, getenv("OMP_NUM_THREADS"));
  printf("| model | checked kernels | pairs | run ms, checks | run ms, none | run cost | kernels ms, checks | "
         "kernels ms, none | kernels cost | rel-L2 between |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  if (argc > first) {
    for (int i = first; i < argc; i++) bench_model(argv[i]);
    return 0;
  }
  DIR* d = opendir(XCOMP_BENCH_MODELS);
  if (!d) {
    fprintf(stderr, "bench_index_checks: cannot open %s\n", XCOMP_BENCH_MODELS);
    return 1;
  }
  char* names[64];
  int n = 0;
  struct dirent* ent;
  while ((ent = readdir(d)) != NULL && n < 64)
    if (ent->d_name[0] != '.') names[n++] = strdup(ent->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", XCOMP_BENCH_MODELS, names[i]);
    bench_model(dir);
    free(names[i]);
  }
  return 0;
}
