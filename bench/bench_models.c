/* Each model of tests/models: latency of the module compiled for the cpu
 * target (executor, whole run) versus the reference interpreter
 * (xc_interp_run) on the same inputs, in the same process. Outputs are
 * compared first (rel-L2); runs are interleaved after a warm-up; the table
 * shows medians and the median of the per-pair speed-ups.
 *
 * Usage: bench_models [model_dir...]   (default: every model under
 * XCOMP_BENCH_MODELS, the source tree's tests/models) */
#include <dirent.h>
#include <unistd.h>

#include "bench_common.h"
#include "xcomp/frontend.h"
#include "xcomp/interp.h"
#include "xcomp/tensor_io.h"

#ifndef XCOMP_BENCH_MODELS
#define XCOMP_BENCH_MODELS "tests/models"
#endif

#define MAX_IO 16

static xc_graph_t* load(const char* path) {
  xc_graph_t* g = NULL;
  bench_check(xc_load_model(path, &g), path);
  bench_check(xc_graph_infer(g), "infer");
  return g;
}

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

static void bench_model(const char* dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (access(path, R_OK) != 0) return;
  const char* name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
  xc_graph_t* ref = load(path);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  double t0 = bench_now_s();
  xc_status_t cs = bench_try_compile_cpu(load(path), &m, &e);
  double compile_s = bench_now_s() - t0;
  if (cs) {
    printf("| %s | - | not compiled | - | - | - | - |\n", name);
    fprintf(stderr, "bench_models: %s: %s\n", name, xc_status_message(cs));
    xc_status_free(cs);
    xc_graph_destroy(ref);
    fflush(stdout);
    return;
  }

  xc_tensor_t* in[MAX_IO] = {NULL};
  int ni = ref->num_inputs, no = ref->num_outputs;
  if (ni > MAX_IO || no > MAX_IO) bench_check(xc_error(XC_UNSUPPORTED, "too many inputs/outputs"), name);
  for (int i = 0; i < ni; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    bench_check(xc_pb_read(path, &in[i], NULL), path);
  }
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  xc_tensor_t* want[MAX_IO] = {NULL};
  xc_tensor_t* got[MAX_IO] = {NULL};
  bench_check(xc_interp_run(ref, &io, ni, (const xc_tensor_t* const*)in, want), "interpreter");
  bench_run(e, ni, in, no, got, 1, NULL);
  double err = 0;
  for (int i = 0; i < no; i++) {
    double d = out_rel_l2(got[i], want[i]);
    if (!(d <= err)) err = d;
    xc_tensor_destroy(got[i]);
    xc_tensor_destroy(want[i]);
    got[i] = want[i] = NULL;
  }

  /* Warm-up, then interleaved pairs until the interpreter has spent about
   * 3 s (at least 5 pairs, at most 101). */
  bench_run(e, ni, in, no, got, 0, NULL);
  enum { MAXR = 101 };
  double xc[MAXR], ip[MAXR], ratio[MAXR], spent = 0;
  int runs = 0;
  while (runs < MAXR && (runs < 5 || spent < 3.0)) {
    bench_run(e, ni, in, no, got, 0, &xc[runs]);
    double s = bench_now_s();
    bench_check(xc_interp_run(ref, &io, ni, (const xc_tensor_t* const*)in, want), "interpreter");
    ip[runs] = bench_now_s() - s;
    for (int i = 0; i < no; i++) {
      xc_tensor_destroy(want[i]);
      want[i] = NULL;
    }
    spent += ip[runs];
    ratio[runs] = ip[runs] / xc[runs];
    runs++;
  }
  double mxc = bench_median(xc, runs), mip = bench_median(ip, runs);
  printf("| %s | %d | %.3f | %.3f | %.1fx | %.1e | %.1f |\n", name, runs, mxc * 1e3, mip * 1e3,
         bench_median(ratio, runs), err, compile_s);
  fflush(stdout);
  for (int i = 0; i < ni; i++) xc_tensor_destroy(in[i]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
  xc_graph_destroy(ref);
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  printf("Models: compiled cpu module (executor, whole run) vs the reference interpreter; OMP_NUM_THREADS=%s\n",
         getenv("OMP_NUM_THREADS"));
  printf("| model | runs | xcomp ms | interpreter ms | speed-up | max rel-L2 | compile s |\n"
         "| --- | --- | --- | --- | --- | --- | --- |\n");
  if (argc > 1) {
    for (int i = 1; i < argc; i++) bench_model(argv[i]);
    return 0;
  }
  DIR* d = opendir(XCOMP_BENCH_MODELS);
  if (!d) {
    fprintf(stderr, "bench_models: cannot open %s\n", XCOMP_BENCH_MODELS);
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
