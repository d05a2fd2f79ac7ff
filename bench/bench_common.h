/* Shared helpers for the benchmark programs in bench/: timing, medians,
 * compiling a graph for the cpu target, running the executor. Benchmarks
 * print ratios against a peer measured in the same process; they are never
 * tests and never fail on speed. */
#ifndef XCOMP_BENCH_COMMON_H
#define XCOMP_BENCH_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xcomp/driver.h"
#include "xcomp/graph.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

/* Exits with the status message when s is an error. */
static inline void bench_check(xc_status_t s, const char* what) {
  if (!s) return;
  fprintf(stderr, "bench: %s: %s\n", what, xc_status_message(s));
  xc_status_free(s);
  exit(1);
}

static inline double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median of n values (sorts v in place). */
static inline double bench_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Deterministic pseudo-random floats in [-1, 1) (xorshift). */
static inline void bench_fill(float* p, int64_t n, uint32_t seed) {
  uint32_t x = seed ? seed : 1u;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (float)((double)(x >> 8) / (double)(1u << 23) - 1.0);
  }
}

/* rel-L2 of got against want: ||got - want|| / ||want||, in double. */
static inline double bench_rel_l2(const float* got, const float* want, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = (double)got[i] - (double)want[i];
    num += d * d;
    den += (double)want[i] * (double)want[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Session options for target (no cache), knob overrides from $XCOMP_KNOBS
 * (docs/tiled-ir.md: a measuring aid). */
static inline void bench_session_options(xc_session_options_t* o, const char* target) {
  xc_session_options_init(o);
  o->target = target;
  o->use_cache = false;
  o->knobs = getenv("XCOMP_KNOBS");
}

/* Compiles g through a session with options req (target NULL: cpu),
 * destroys g, and opens an executor on the module; returns the first error
 * (nothing left allocated). */
static inline xc_status_t bench_try_compile_request(xc_graph_t* g, const xc_session_options_t* req,
                                                    xc_compiled_module_t** out_m, xc_executor_t** out_e) {
  *out_m = NULL;
  *out_e = NULL;
  xc_session_options_t o = *req;
  if (!o.target) o.target = "cpu";
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(&o, &session);
  if (!s) s = xc_session_compile_graph(session, g, out_m);
  xc_session_destroy(session);
  xc_graph_destroy(g); /* the module holds its own copy */
  if (!s) s = xc_executor_create(*out_m, o.target, NULL, out_e);
  if (s) {
    xc_compiled_module_destroy(*out_m);
    *out_m = NULL;
  }
  return s;
}

/* The same with the default request for "cpu". */
static inline xc_status_t bench_try_compile_cpu(xc_graph_t* g, xc_compiled_module_t** out_m,
                                                xc_executor_t** out_e) {
  xc_session_options_t req;
  bench_session_options(&req, "cpu");
  return bench_try_compile_request(g, &req, out_m, out_e);
}

/* The same; exits on error. */
static inline void bench_compile_cpu(xc_graph_t* g, xc_compiled_module_t** out_m, xc_executor_t** out_e) {
  bench_check(bench_try_compile_cpu(g, out_m, out_e), "compile for cpu");
}

/* Parses and shape-infers .xir text. */
static inline xc_graph_t* bench_parse_xir(const char* text, const char* name) {
  xc_graph_t* g = NULL;
  bench_check(xc_xir_parse(text, strlen(text), name, NULL, &g), "parse");
  bench_check(xc_graph_infer(g), "infer");
  return g;
}

/* One executor run; returns its kernel time in seconds (stats.kernels_ms)
 * and, when wall is not NULL, the whole run's wall-clock time. outputs are
 * destroyed unless keep is set. */
static inline double bench_run(xc_executor_t* e, int ni, xc_tensor_t** in, int no, xc_tensor_t** out,
                               int keep, double* wall) {
  xc_run_stats_t st;
  double t0 = bench_now_s();
  bench_check(xc_executor_run(e, ni, (const xc_tensor_t* const*)in, out, &st), "run");
  double t1 = bench_now_s();
  if (wall) *wall = t1 - t0;
  if (!keep)
    for (int i = 0; i < no; i++) {
      xc_tensor_destroy(out[i]);
      out[i] = NULL;
    }
  return st.kernels_ms * 1e-3;
}

#endif
