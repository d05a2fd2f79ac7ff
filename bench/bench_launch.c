/* Per-kernel launch overhead with and without launch graphs.
 *
 * A chain of N small MatMuls (each its own kernel: y_i = y_{i-1} @ w) is
 * compiled for the target and run by two executors on the same module: one
 * launching kernel by kernel, one replaying the launch sequence captured
 * once (CUDA Graphs on cuda, a recorded call list on cpu). The kernels do
 * almost no work. Three figures per mode: the host time spent issuing the
 * launches (stats.issue_ms: what the host pays per kernel, the overhead a
 * launch graph removes), the device-event span from the first kernel to the
 * end of the last (per kernel: execution plus the gaps between kernels), and
 * the whole run on the host clock. Both outputs are
 * checked against the reference interpreter before timing; runs alternate
 * (plain, graph, plain, ...) after a warm-up; the table shows medians.
 *
 * Usage: bench_launch [--target T] [--kernels N] [--runs R]   (default cuda, 64, 200) */
#include "bench_common.h"
#include "xcomp/interp.h"

static char* chain_text(int n) {
  size_t cap = 256 + (size_t)n * 64;
  char* t = malloc(cap);
  if (!t) return NULL;
  size_t len = (size_t)snprintf(t, cap, "xir 1\ngraph chain opset 23 {\n  input x: f32[8, 8]\n  input w: f32[8, 8]\n");
  for (int i = 1; i <= n; i++) {
    if (i == 1) len += (size_t)snprintf(t + len, cap - len, "  y1 = MatMul(x, w)\n");
    else len += (size_t)snprintf(t + len, cap - len, "  y%d = MatMul(y%d, w)\n", i, i - 1);
  }
  snprintf(t + len, cap - len, "  output y%d\n}\n", n);
  return t;
}

int main(int argc, char** argv) {
  const char* target = "cuda";
  int n = 64, runs = 200;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) target = argv[++i];
    else if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) n = atoi(argv[++i]);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_launch [--target T] [--kernels N] [--runs R]\n");
      return 2;
    }
  }
  if (n < 1 || n > 4096 || runs < 3) {
    fprintf(stderr, "bench_launch: need 1 <= kernels <= 4096 and runs >= 3\n");
    return 2;
  }
  char* text = chain_text(n);
  if (!text) return 1;
  xc_graph_t* g = bench_parse_xir(text, "chain.xir");
  xc_graph_t* oracle = bench_parse_xir(text, "chain.xir");
  free(text);

  xc_session_options_t req;
  bench_session_options(&req, target);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* eg = NULL; /* default options: graphs where the device can capture */
  bench_check(bench_try_compile_request(g, &req, &m, &eg), "compile");
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.no_graphs = true;
  xc_executor_t* ep = NULL;
  bench_check(xc_executor_create(m, target, &o, &ep), "executor");
  if (!xc_device_can_capture(xc_executor_device(eg)))
    fprintf(stderr, "bench_launch: target %s cannot capture launch graphs; both columns launch one by one\n", target);

  /* x: small values; w = 0.5 * I + small noise keeps the chain bounded. */
  int64_t dims[2] = {8, 8};
  xc_tensor_t* in[2] = {NULL, NULL};
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[0]), "input");
  bench_check(xc_tensor_create(XC_F32, 2, dims, &in[1]), "input");
  bench_fill((float*)in[0]->data, 64, 7);
  bench_fill((float*)in[1]->data, 64, 11);
  for (int i = 0; i < 64; i++) ((float*)in[1]->data)[i] = 0.05f * ((float*)in[1]->data)[i] + (i % 9 == 0 ? 0.5f : 0);
  xc_tensor_t* want[1] = {NULL};
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  bench_check(xc_interp_run(oracle, &io, 2, (const xc_tensor_t* const*)in, want), "interpreter");
  xc_graph_destroy(oracle);
  xc_tensor_t* got[1] = {NULL};
  for (int which = 0; which < 2; which++) {
    bench_run(which ? eg : ep, 2, in, 1, got, 1, NULL);
    double err = bench_rel_l2((const float*)got[0]->data, (const float*)want[0]->data, 64);
    xc_tensor_destroy(got[0]);
    got[0] = NULL;
    if (!(err <= 1e-5)) {
      fprintf(stderr, "bench_launch: %s output differs from the interpreter (rel-L2 %.3g)\n",
              which ? "graph" : "plain", err);
      return 1;
    }
  }

  double* kp = calloc((size_t)runs, sizeof *kp), *kg = calloc((size_t)runs, sizeof *kg);
  double* wp = calloc((size_t)runs, sizeof *wp), *wg = calloc((size_t)runs, sizeof *wg);
  double* ratio = calloc((size_t)runs, sizeof *ratio);
  double *ip = calloc((size_t)runs, sizeof *ip), *ig = calloc((size_t)runs, sizeof *ig);
  if (!kp || !kg || !wp || !wg || !ratio || !ip || !ig) return 1;
  for (int r = 0; r < 10; r++) { /* warm-up */
    bench_run(ep, 2, in, 1, got, 0, NULL);
    bench_run(eg, 2, in, 1, got, 0, NULL);
  }
  for (int r = 0; r < runs; r++) {
    xc_run_stats_t st;
    double t0 = bench_now_s();
    bench_check(xc_executor_run(ep, 2, (const xc_tensor_t* const*)in, got, &st), "run");
    wp[r] = bench_now_s() - t0;
    kp[r] = st.kernels_ms * 1e-3;
    ip[r] = st.issue_ms * 1e-3;
    xc_tensor_destroy(got[0]);
    t0 = bench_now_s();
    bench_check(xc_executor_run(eg, 2, (const xc_tensor_t* const*)in, got, &st), "run");
    wg[r] = bench_now_s() - t0;
    kg[r] = st.kernels_ms * 1e-3;
    ig[r] = st.issue_ms * 1e-3;
    xc_tensor_destroy(got[0]);
    got[0] = NULL;
    ratio[r] = ig[r] > 0 ? ip[r] / ig[r] : 0;
  }
  const xc_device_caps_t* caps = xc_device_caps(xc_executor_device(eg));
  double mkp = bench_median(kp, runs), mkg = bench_median(kg, runs);
  double mwp = bench_median(wp, runs), mwg = bench_median(wg, runs);
  double mip = bench_median(ip, runs), mig = bench_median(ig, runs);
  printf("Launch overhead: %d chained 8x8 MatMul kernels on %s (%s), %d runs, medians, per kernel\n", n, target,
         caps->name, runs);
  printf("| mode | host issue time | device span (execution + gaps) | whole run (host) |\n");
  printf("| --- | --- | --- | --- |\n");
  printf("| one launch per kernel | %.3f us | %.2f us | %.2f us |\n", mip * 1e6 / n, mkp * 1e6 / n, mwp * 1e6 / n);
  printf("| launch graph replay | %.3f us | %.2f us | %.2f us |\n", mig * 1e6 / n, mkg * 1e6 / n, mwg * 1e6 / n);
  printf("host issue time per kernel, plain / graph: %.1fx (median of per-pair ratios %.1fx); device span: %.2fx\n",
         mig > 0 ? mip / mig : 0, bench_median(ratio, runs), mkg > 0 ? mkp / mkg : 0);
  free(kp), free(kg), free(wp), free(wg), free(ratio), free(ip), free(ig);
  xc_tensor_destroy(in[0]);
  xc_tensor_destroy(in[1]);
  xc_tensor_destroy(want[0]);
  xc_executor_destroy(ep);
  xc_executor_destroy(eg);
  xc_compiled_module_destroy(m);
  return 0;
}
