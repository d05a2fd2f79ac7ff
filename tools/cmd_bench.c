/* xcomp bench: compile a model (through the compile cache) or load a .xcm,
 * run it on random inputs (or given ones) for a number of iterations or a
 * time, and print a summary in the manner of trtexec: compile time, latency
 * percentiles, throughput, device time from the target's events, peak
 * memory; --json prints the same as one JSON object (docs/cli.md). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "runtime_cli.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"

typedef struct bench_args {
  const char* model;
  const char* target;
  const char* device;
  int opt_level;
  xc_dtype_t precision;
  bool no_cache, allow_tf32, no_graphs, json;
  bool resident; /* inputs and outputs stay in device memory (xc_executor_run_device) */
  int warmup;
  int iterations;   /* 0: run for `seconds` */
  double seconds;
  uint64_t seed;
} bench_args_t;

typedef struct series {
  double min, median, mean, p90, p99, max;
} series_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static double percentile(const double* v, int n, double p) {
  int k = (int)ceil(p / 100.0 * n) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

static void summarize(double* v, int n, series_t* out) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  out->min = v[0];
  out->max = v[n - 1];
  out->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  out->mean = sum / n;
  out->p90 = percentile(v, n, 90);
  out->p99 = percentile(v, n, 99);
}

static json_t* series_json(const series_t* s) {
  return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "min", s->min, "median", s->median, "mean", s->mean, "p90",
                   s->p90, "p99", s->p99, "max", s->max);
}

/* The progress line: rewritten in place on a terminal, a plain line every
 * tenth of the work otherwise. */
typedef struct progress {
  bool tty;
  int last_tenth;
  double last_draw;
} progress_t;

static void progress_show(progress_t* p, const char* phase, int done, int total, double elapsed_s, double budget_s,
                          double last_ms) {
  double frac = total > 0 ? (double)done / total : (budget_s > 0 ? elapsed_s / budget_s : 1);
  if (frac > 1) frac = 1;
  if (p->tty) {
    double t = now_ms();
    if (done != total && t - p->last_draw < 100) return;
    p->last_draw = t;
    int width = 30, filled = (int)(frac * width);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    if (total > 0)
      fprintf(stderr, "\r%-7s [%s] %d/%d  last %.3f ms ", phase, bar, done, total, last_ms);
    else
      fprintf(stderr, "\r%-7s [%s] %d runs, %.1f/%.1f s  last %.3f ms ", phase, bar, done, elapsed_s, budget_s,
              last_ms);
    fflush(stderr);
    return;
  }
  int tenth = (int)(frac * 10);
  if (tenth <= p->last_tenth) return;
  p->last_tenth = tenth;
  if (total > 0)
    fprintf(stderr, "xcomp bench: %s %d/%d, last %.3f ms\n", phase, done, total, last_ms);
  else
    fprintf(stderr, "xcomp bench: %s %d, %.1f/%.1f s, last %.3f ms\n", phase, done, elapsed_s, budget_s, last_ms);
}

static void progress_end(progress_t* p) {
  if (p->tty) fprintf(stderr, "\n");
}

typedef struct bench_result {
  double compile_ms;
  xc_compile_phases_t phases; /* of the compile (zero for a module loaded) */
  const char* compile_how; /* "cache hit", "cache miss", "no cache", "loaded" */
  int kernels_compiled;
  int iterations, warmup;
  double measured_s;
  series_t latency, kernels, issue;
  bool device_events;
  int64_t peak_bytes, planned_bytes, unplanned_bytes;
  int launches;
  bool graph_replayed;
  bool resident;
  char device_name[128];
  char target[64];
  int num_kernels;
} bench_result_t;

static xc_status_t bench_run(const bench_args_t* a, const xc_compiled_module_t* m, const xc_tensor_t* const* inputs,
                             bench_result_t* r) {
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.no_graphs = a->no_graphs;
  xc_executor_t* e = NULL;
  XC_RETURN_IF_ERROR(xc_executor_create(m, a->device, &eo, &e));
  xc_device_t* dev = xc_executor_device(e);
  snprintf(r->device_name, sizeof r->device_name, "%s", xc_device_caps(dev)->name);
  xc_target_t* t = xc_device_target(dev);
  r->device_events = t && t->iface && t->iface->event_record;
  xc_tensor_t** outputs = calloc((size_t)m->num_outputs + 1, sizeof *outputs);
  size_t cap = a->iterations > 0 ? (size_t)a->iterations : 1024;
  double* lat = malloc(cap * sizeof *lat);
  double* ker = malloc(cap * sizeof *ker);
  double* iss = malloc(cap * sizeof *iss);
  xc_status_t s = (!outputs || !lat || !ker || !iss) ? xc_error_oom() : NULL;
  xc_cli_resident_t res;
  memset(&res, 0, sizeof res);
  if (!s && a->resident) s = xc_cli_resident_init(e, m, inputs, &res);
  r->resident = a->resident;
  progress_t p = {isatty(2) != 0, -1, 0};
  bool quiet = a->json;
  xc_run_stats_t st;
  memset(&st, 0, sizeof st);
  for (int i = 0; !s && i < a->warmup; i++) {
    s = xc_cli_run_once(e, m, inputs, outputs, &res, &st);
    if (!s && !quiet) progress_show(&p, "warmup", i + 1, a->warmup, 0, 0, st.total_ms);
  }
  if (!s && a->warmup > 0 && !quiet) progress_end(&p);
  p.last_tenth = -1;
  int n = 0;
  double start = now_ms();
  while (!s) {
    double elapsed = (now_ms() - start) / 1e3;
    if (a->iterations > 0 ? n >= a->iterations : (n > 0 && elapsed >= a->seconds)) break;
    if ((size_t)n == cap) {
      cap *= 2;
      double* l2 = realloc(lat, cap * sizeof *lat);
      if (l2) lat = l2;
      double* k2 = realloc(ker, cap * sizeof *ker);
      if (k2) ker = k2;
      double* i2 = realloc(iss, cap * sizeof *iss);
      if (i2) iss = i2;
      if (!l2 || !k2 || !i2) {
        s = xc_error_oom();
        break;
      }
    }
    double t0 = now_ms();
    s = xc_cli_run_once(e, m, inputs, outputs, &res, &st);
    double wall = now_ms() - t0;
    if (s) break;
    lat[n] = wall;
    ker[n] = st.kernels_ms;
    iss[n] = st.issue_ms;
    n++;
    if (!quiet)
      progress_show(&p, "run", n, a->iterations, (now_ms() - start) / 1e3, a->seconds, wall);
  }
  if (!s && !quiet) progress_end(&p);
  r->measured_s = (now_ms() - start) / 1e3;
  if (!s) {
    r->iterations = n;
    r->warmup = a->warmup;
    summarize(lat, n, &r->latency);
    summarize(ker, n, &r->kernels);
    summarize(iss, n, &r->issue);
    r->peak_bytes = st.peak_bytes;
    r->planned_bytes = st.planned_bytes;
    r->unplanned_bytes = st.unplanned_bytes;
    r->launches = st.launches;
    r->graph_replayed = st.graph_replayed;
  }
  free(lat);
  free(ker);
  free(iss);
  for (int i = 0; outputs && i < m->num_outputs; i++) xc_tensor_destroy(outputs[i]);
  free(outputs);
  xc_cli_resident_free(&res);
  xc_executor_destroy(e);
  return s;
}

static void print_series(const char* what, const series_t* s) {
  printf("  %-14s min %.4f, median %.4f, mean %.4f, p90 %.4f, p99 %.4f, max %.4f ms\n", what, s->min, s->median,
         s->mean, s->p90, s->p99, s->max);
}

static void print_summary(const bench_args_t* a, const bench_result_t* r) {
  printf("xcomp bench: %s on %s (%s)\n", a->model, r->target, r->device_name);
  if (strcmp(r->compile_how, "loaded") == 0)
    printf("  compile        %.1f ms (compiled module loaded, %d kernels)\n", r->compile_ms, r->num_kernels);
  else
    printf("  compile        %.1f ms (%s, %d kernels, %d compiled now)\n", r->compile_ms, r->compile_how,
           r->num_kernels, r->kernels_compiled);
  printf("  runs           %d after %d warm-up, %.3f s%s\n", r->iterations, r->warmup, r->measured_s,
         r->resident ? " (device-resident: inputs and outputs stay in device memory)" : "");
  print_series("latency", &r->latency);
  print_series(r->device_events ? "device time" : "kernels time", &r->kernels);
  printf("  %-14s %s\n", "", r->device_events ? "(device events: first launch to end of last)"
                                               : "(host clock: the target has no device events)");
  print_series("launch issue", &r->issue);
  printf("  throughput     %.2f inferences/s (%.2f at the median latency)\n",
         r->measured_s > 0 ? r->iterations / r->measured_s : 0.0, r->latency.median > 0 ? 1e3 / r->latency.median : 0.0);
  printf("  device/wall    median device %.4f ms of %.4f ms wall (%.0f%%)\n", r->kernels.median, r->latency.median,
         r->latency.median > 0 ? 100 * r->kernels.median / r->latency.median : 0.0);
  printf("  peak memory    %lld bytes (intermediates %lld, %lld without reuse)\n", (long long)r->peak_bytes,
         (long long)r->planned_bytes, (long long)r->unplanned_bytes);
  printf("  launches       %d per run%s\n", r->launches, r->graph_replayed ? ", replayed as a launch graph" : "");
}

static int print_json(const bench_args_t* a, const bench_result_t* r) {
  json_t* o = json_object();
  json_object_set_new(o, "model", json_string(a->model));
  json_object_set_new(o, "target", json_string(r->target));
  json_object_set_new(o, "device", json_string(r->device_name));
  const xc_compile_phases_t* ph = &r->phases;
  json_object_set_new(o, "compile",
                      json_pack("{s:f, s:s, s:i, s:i, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}}", "ms", r->compile_ms,
                                "how", r->compile_how, "kernels", r->num_kernels, "kernels_compiled",
                                r->kernels_compiled, "phases_ms", "session", ph->session_ms, "load", ph->load_ms,
                                "passes", ph->passes_ms, "lowering", ph->lower_ms, "kernels", ph->kernels_ms,
                                "vendor_race", ph->vendor_ms, "cache_store", ph->cache_ms));
  json_object_set_new(o, "warmup", json_integer(r->warmup));
  json_object_set_new(o, "iterations", json_integer(r->iterations));
  json_object_set_new(o, "resident", json_boolean(r->resident));
  json_object_set_new(o, "measured_s", json_real(r->measured_s));
  json_object_set_new(o, "latency_ms", series_json(&r->latency));
  json_object_set_new(o, "device_ms", series_json(&r->kernels));
  json_object_set_new(o, "device_timing", json_string(r->device_events ? "events" : "host"));
  json_object_set_new(o, "issue_ms", series_json(&r->issue));
  json_object_set_new(o, "throughput_per_s", json_real(r->measured_s > 0 ? r->iterations / r->measured_s : 0.0));
  json_object_set_new(o, "peak_memory_bytes", json_integer(r->peak_bytes));
  json_object_set_new(o, "planned_bytes", json_integer(r->planned_bytes));
  json_object_set_new(o, "unplanned_bytes", json_integer(r->unplanned_bytes));
  json_object_set_new(o, "launches", json_integer(r->launches));
  json_object_set_new(o, "launch_graph", json_boolean(r->graph_replayed));
  char* text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!text) return xc_cli_fail(xc_error_oom());
  printf("%s\n", text);
  free(text);
  return XC_EXIT_OK;
}

static bool parse_count(const char* v, long lo, long hi, int* out) {
  char* end = NULL;
  long x = strtol(v, &end, 10);
  if (!*v || !end || *end || x < lo || x > hi) return false;
  *out = (int)x;
  return true;
}

static bool has_suffix(const char* s, const char* suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int bench_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_bench_command;
  bench_args_t a = {NULL, "cpu", NULL, 2, XC_DTYPE_UNDEFINED, false, false, false, false, false, 5, 0, 3.0, 1};
  bool time_given = false;
  int num_specs = 0, num_shapes = 0, rc = XC_EXIT_OK;
  xc_cli_input_spec_t* specs = calloc((size_t)argc + 1, sizeof *specs);
  char** copies = calloc((size_t)argc + 1, sizeof *copies);
  const char** shapes = calloc((size_t)argc + 1, sizeof *shapes);
  xc_compiled_module_t* m = NULL;
  xc_tensor_t** inputs = NULL;
  char* shape_spec = NULL;
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  if (!specs || !copies || !shapes) {
    rc = xc_cli_fail(xc_error_oom());
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int k;
    if ((k = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (k < 0) { rc = xc_cli_usage_error(cmd, "--target needs a value"); goto done; }
      a.target = v;
    } else if ((k = xc_cli_option(argc, argv, &i, "--device", &v)) != 0) {
      if (k < 0) { rc = xc_cli_usage_error(cmd, "--device needs a value"); goto done; }
      a.device = v;
    } else if ((k = xc_cli_option(argc, argv, &i, "--input", &v)) != 0) {
      if (k < 0) { rc = xc_cli_usage_error(cmd, "--input needs a value"); goto done; }
      copies[num_specs] = strdup(v);
      if (!copies[num_specs]) { rc = xc_cli_fail(xc_error_oom()); goto done; }
      xc_status_t s = xc_cli_parse_input_spec(copies[num_specs], &specs[num_specs]);
      num_specs++;
      if (s) { rc = xc_cli_fail(s); goto done; }
    } else if ((k = xc_cli_option(argc, argv, &i, "--shape", &v)) != 0) {
      if (k < 0) { rc = xc_cli_usage_error(cmd, "--shape needs a value"); goto done; }
      shapes[num_shapes++] = v;
    } else if ((k = xc_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (k < 0 || !xc_cli_parse_precision(v, &a.precision)) {
        rc = xc_cli_usage_error(cmd, "--precision takes f16, bf16 or f32");
        goto done;
      }
    } else if ((k = xc_cli_option(argc, argv, &i, "--warmup", &v)) != 0) {
      if (k < 0 || !parse_count(v, 0, 1000000, &a.warmup)) {
        rc = xc_cli_usage_error(cmd, "--warmup needs a count from 0 to 1000000");
        goto done;
      }
    } else if ((k = xc_cli_option(argc, argv, &i, "--iterations", &v)) != 0) {
      if (k < 0 || !parse_count(v, 1, 10000000, &a.iterations)) {
        rc = xc_cli_usage_error(cmd, "--iterations needs a count from 1 to 10000000");
        goto done;
      }
    } else if ((k = xc_cli_option(argc, argv, &i, "--time", &v)) != 0) {
      if (k < 0 || !xc_cli_parse_double(v, &a.seconds) || !(a.seconds > 0) || a.seconds > 86400) {
        rc = xc_cli_usage_error(cmd, "--time needs seconds, more than 0");
        goto done;
      }
      time_given = true;
    } else if ((k = xc_cli_option(argc, argv, &i, "--seed", &v)) != 0) {
      int seed = 0;
      if (k < 0 || !parse_count(v, 0, 2147483647, &seed)) {
        rc = xc_cli_usage_error(cmd, "--seed needs a count from 0");
        goto done;
      }
      a.seed = (uint64_t)seed;
    } else if (strcmp(argv[i], "--resident") == 0) {
      a.resident = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      a.json = true;
    } else if (strcmp(argv[i], "--no-cache") == 0) {
      a.no_cache = true;
    } else if (strcmp(argv[i], "--allow-tf32") == 0) {
      a.allow_tf32 = true;
    } else if (strcmp(argv[i], "--no-cuda-graph") == 0) {
      a.no_graphs = true;
    } else if (argv[i][0] == '-' && argv[i][1] == 'O' && argv[i][2] >= '0' && argv[i][2] <= '3' && !argv[i][3]) {
      a.opt_level = argv[i][2] - '0';
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
      goto done;
    } else if (!a.model) {
      a.model = argv[i];
    } else {
      rc = xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
      goto done;
    }
  }
  if (!a.model) { rc = xc_cli_usage_error(cmd, "no MODEL given"); goto done; }
  if (a.iterations > 0 && time_given) {
    rc = xc_cli_usage_error(cmd, "give --iterations or --time, not both");
    goto done;
  }
  if (strcmp(a.target, "ref") == 0) {
    rc = xc_cli_errorf("target ref is the reference interpreter: bench a compiled target (cpu, opencl, cuda, ...)");
    goto done;
  }

  bench_result_t r;
  memset(&r, 0, sizeof r);
  double t0 = now_ms();
  xc_status_t s = NULL;
  if (has_suffix(a.model, ".xcm")) {
    s = xc_cli_check_file(a.model);
    if (!s) s = xc_compiled_module_read(a.model, &m);
    r.compile_how = "loaded";
  } else {
    xc_session_options_t o;
    xc_cli_session_options_init(&o);
    if (a.json) o.build.progress = NULL;
    o.target = a.target;
    o.opt_level = a.opt_level;
    o.precision = a.precision;
    o.use_cache = !a.no_cache;
    o.build.compile.allow_tf32 = a.allow_tf32;
    /* --shape compiles for the shape (fixed dims re-shaped, symbolic ones made static). */
    for (int k = 0; k < num_shapes && !s; k++)
      if (!xc_cli_add_shape(&shape_spec, shapes[k])) s = xc_error_oom();
    o.input_shapes = shape_spec;
    xc_cache_stats_t cs;
    memset(&cs, 0, sizeof cs);
    if (!s) s = xc_cli_compile_model_timed(a.model, &o, &cs, &r.phases, &m);
    r.compile_how = cs.hits ? "cache hit" : (o.use_cache ? "cache miss" : "no cache");
    r.kernels_compiled = cs.kernels_compiled;
    if (!a.device) a.device = a.target;
  }
  r.compile_ms = now_ms() - t0;
  if (s) { rc = xc_cli_fail(s); goto done; }
  snprintf(r.target, sizeof r.target, "%s", m->target);
  r.num_kernels = m->num_kernels;

  const xc_graph_t* g = m->graph;
  inputs = calloc((size_t)g->num_inputs + 1, sizeof *inputs);
  if (!inputs) { rc = xc_cli_fail(xc_error_oom()); goto done; }
  s = xc_cli_read_inputs(g, specs, num_specs, a.precision, true, inputs, &binds);
  for (int k = 0; k < num_shapes && !s; k++) s = xc_cli_apply_shape(g, shapes[k], &binds);
  if (!s) s = xc_cli_random_inputs(g, inputs, &binds, a.seed);
  if (!s) s = bench_run(&a, m, (const xc_tensor_t* const*)inputs, &r);
  if (s) { rc = xc_cli_fail(s); goto done; }
  if (a.json)
    rc = print_json(&a, &r);
  else
    print_summary(&a, &r);

done:
  free(shape_spec);
  if (inputs && m)
    for (int i = 0; i < m->graph->num_inputs; i++) xc_tensor_destroy(inputs[i]);
  free(inputs);
  xc_symbind_free(&binds);
  xc_compiled_module_destroy(m);
  if (copies)
    for (int k = 0; k < argc; k++) free(copies[k]);
  free(copies);
  free(specs);
  free(shapes);
  return rc;
}

const xc_cli_command_t xc_cli_bench_command = {
    "bench", bench_main,
    "xcomp bench MODEL [--target T] [--shape NAME=DIMS]... [--input NAME=@FILE | --input @FILE]... "
    "[--precision f16|bf16] [--warmup N] [--iterations N | --time S] [--json] [--device SEL] [-O<n>] "
    "[--no-cache] [--allow-tf32] [--no-cuda-graph] [--resident] [--seed N]",
    "Benchmark a model (.xir, .onnx or .xcm) on a compiled target: latency, throughput, memory.",
    "options:\n"
    "  --target T           target and device to compile for (default: cpu; 'xcomp targets'\n"
    "                       lists them); a MODEL.xcm runs on its own target\n"
    "  --device SEL         another device of the target (default: the target's, or the\n"
    "                       module's for a .xcm)\n"
    "  --shape NAME=DIMS    dims of input NAME, e.g. input_ids=1x128 (repeatable): the model\n"
    "                       is compiled for it (symbolic dims made static; a model exported\n"
    "                       at another size where its shape constants allow)\n"
    "  --input NAME=@FILE   use the tensor in FILE (.npy or .pb) for input NAME; --input @FILE\n"
    "                       the next unbound input. Inputs not given are random: floats\n"
    "                       uniform in [-1, 1), integers and bools 0 or 1 (--seed N, default 1)\n"
    "  --precision f16|bf16 compile the model's float32 tensors in f16 or bf16\n"
    "  --warmup N           untimed runs first (default 5)\n"
    "  --iterations N       timed runs (default: as many as fit in --time)\n"
    "  --time S             run for S seconds (default 3; at least one run)\n"
    "  --json               print the results as one JSON object on stdout (no progress,\n"
    "                       no compile lines)\n"
    "  -O0 .. -O3           optimization level of the graph pass pipeline (default 2)\n"
    "  --no-cache           compile without the compile cache\n"
    "  --allow-tf32         f32 GEMMs may use tf32 tensor cores (cuda sm_80+)\n"
    "  --no-cuda-graph      launch kernel by kernel (no launch-graph replay)\n"
    "  --resident           keep inputs and outputs in device memory: the inputs are\n"
    "                       uploaded once, each run copies them on the device and leaves\n"
    "                       its outputs there (no host transfer; cuda, rocm, cpu)\n"
    "\n"
    "Prints a progress bar on a terminal (plain lines otherwise) on stderr, then the\n"
    "summary: compile time (and whether the compile cache hit), latency min / median /\n"
    "mean / p90 / p99 / max over the timed runs (wall time of a whole run: input upload,\n"
    "launches, output download), device time (the target's events from the first launch\n"
    "to the end of the last; host clock where the target has no events), launch issue\n"
    "time, throughput, peak device memory and launches per run.\n"};
