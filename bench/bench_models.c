/* Each model of tests/models: latency of the module compiled for a target
 * (default cpu; executor, whole run: upload, kernels, download) with launch
 * graphs (the default) and without (--no-cuda-graph), versus the reference
 * interpreter (xc_interp_run) on the same inputs, in the same process.
 * Outputs are compared first (rel-L2); runs are interleaved after a warm-up;
 * the table shows medians and the median of the per-pair speed-ups.
 *
 * Usage: bench_models [--target T] [model_dir...]   (default: every model
 * under XCOMP_BENCH_MODELS, the source tree's tests/models) */
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

static const char* g_target = "cpu";

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
  xc_session_options_t req;
  bench_session_options(&req, g_target);
  xc_status_t cs = bench_try_compile_request(load(path), &req, &m, &e);
  double compile_s = bench_now_s() - t0;
  xc_executor_t* ep = NULL; /* the same module, one launch per kernel */
  if (!cs) {
    xc_executor_options_t o;
    xc_executor_options_init(&o);
    o.no_graphs = true;
    cs = xc_executor_create(m, g_target, &o, &ep);
  }
  if (cs) {
    printf("| %s | - | not compiled | - | - | - | - | - |\n", name);
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
  double err = 0;
  for (int pass = 0; pass < 2; pass++) {
    bench_run(pass ? ep : e, ni, in, no, got, 1, NULL);
    for (int i = 0; i < no; i++) {
      double d = out_rel_l2(got[i], want[i]);
      if (!(d <= err)) err = d;
      xc_tensor_destroy(got[i]);
      got[i] = NULL;
    }
  }
  for (int i = 0; i < no; i++) {
    xc_tensor_destroy(want[i]);
    want[i] = NULL;
  }

  /* Warm-up, then interleaved pairs until the interpreter has spent about
   * 3 s (at least 5 pairs, at most 101). */
  bench_run(e, ni, in, no, got, 0, NULL);
  bench_run(ep, ni, in, no, got, 0, NULL);
  enum { MAXR = 101 };
  double xc[MAXR], xp[MAXR], ip[MAXR], ratio[MAXR], spent = 0;
  int runs = 0;
  while (runs < MAXR && (runs < 5 || spent < 3.0)) {
    /* Each timed run follows an untimed one of the same executor: the first
     * run after the interpreter pays for waking the OpenMP workers, which on
     * a loaded machine can take milliseconds. */
    bench_run(e, ni, in, no, got, 0, NULL);
    bench_run(e, ni, in, no, got, 0, &xc[runs]);
    bench_run(ep, ni, in, no, got, 0, NULL);
    bench_run(ep, ni, in, no, got, 0, &xp[runs]);
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
  double mxc = bench_median(xc, runs), mxp = bench_median(xp, runs), mip = bench_median(ip, runs);
  printf("| %s | %d | %.3f | %.3f | %.3f | %.1fx | %.1e | %.1f |\n", name, runs, mxc * 1e3, mxp * 1e3, mip * 1e3,
         bench_median(ratio, runs), err, compile_s);
  fflush(stdout);
  for (int i = 0; i < ni; i++) xc_tensor_destroy(in[i]);
  xc_executor_destroy(e);
  xc_executor_destroy(ep);
  xc_compiled_module_destroy(m);
  xc_graph_destroy(ref);
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "2", 0);
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--target") == 0) {
    g_target = argv[2];
    first = 3;
  }
  printf("Models: compiled %s module (executor, whole run) vs the reference interpreter; OMP_NUM_THREADS=%s\n",
         g_target, getenv("OMP_NUM_THREADS"));
  printf("| model | runs | xcomp ms | xcomp ms, no launch graph | interpreter ms | speed-up | max rel-L2 | compile s |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  if (argc > first) {
    for (int i = first; i < argc; i++) bench_model(argv[i]);
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
