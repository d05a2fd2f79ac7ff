/* xcomp compile: a model (.xir or .onnx) -> a compiled module (.xcm) for one
 * target, through the compile cache; and the executor side of `xcomp run`
 * (tools/runtime_cli.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime_cli.h"
#include "xcomp/driver.h"
#include "xcomp/frontend.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"

static bool has_suffix(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool xc_cli_uses_executor(const char* model, const char* target) {
  if (has_suffix(model, ".xcm")) return true;
  if (strcmp(target, "ref") == 0) return false;
  /* A name no registered target answers to stays with the interpreter's
   * target check, which lists what is available. */
  xc_status_t s = xc_targets_init();
  xc_target_t* t = NULL;
  if (!s) s = xc_target_find(target, &t, NULL);
  bool known = !s || xc_status_code(s) != XC_NOT_FOUND;
  xc_status_free(s);
  return known;
}

void xc_cli_session_options_init(xc_session_options_t* o) {
  xc_session_options_init(o);
  o->knobs = getenv("XCOMP_KNOBS");
  const char* checks = getenv("XCOMP_INDEX_CHECKS"); /* "off": kernels without index checks (cost measurements) */
  o->no_index_checks = checks && (strcmp(checks, "off") == 0 || strcmp(checks, "0") == 0);
  /* the tuning database: $XCOMP_TUNING_DB names one, "off" uses none */
  const char* db = getenv("XCOMP_TUNING_DB");
  if (db && *db) {
    if (strcmp(db, "off") == 0) o->no_tuning_db = true;
    else o->tuning_db = db;
  }
  o->build.progress = stderr;
}

/* The model file is checked before the target is resolved (its errors come
 * first). An architecture ("cuda:sm_90", "rocm:gfx90a") compiles without a
 * GPU: the session resolves it through the target to a present device of
 * it or to its nominal capabilities (the module is then marked as compiled
 * for an architecture, not a device). */
xc_status_t xc_cli_compile_model(const char* model, const xc_session_options_t* o, xc_cache_stats_t* stats,
                                 xc_compiled_module_t** out) {
  return xc_cli_compile_model_timed(model, o, stats, NULL, out);
}

xc_status_t xc_cli_compile_model_timed(const char* model, const xc_session_options_t* o, xc_cache_stats_t* stats,
                                       xc_compile_phases_t* phases, xc_compiled_module_t** out) {
  *out = NULL;
  XC_RETURN_IF_ERROR(xc_cli_check_file(model));
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(o, &session);
  if (!s) s = xc_session_compile_model_file(session, model, out);
  if (session && stats) *stats = *xc_session_cache_stats(session);
  if (session && phases) xc_session_compile_phases(session, phases);
  xc_session_destroy(session);
  return s;
}

bool xc_cli_parse_precision(const char* s, xc_dtype_t* out) {
  if (!xc_dtype_from_name(s, out)) return false;
  if (*out == XC_F32) *out = XC_DTYPE_UNDEFINED;
  return *out == XC_DTYPE_UNDEFINED || *out == XC_F16 || *out == XC_BF16;
}

xc_status_t xc_cli_load_compiled(const char* model, const char* target, int opt_level, xc_dtype_t precision,
                                 bool no_cache, bool allow_tf32, const char* input_shapes,
                                 xc_compiled_module_t** out) {
  *out = NULL;
  if (has_suffix(model, ".xcm")) {
    if (input_shapes)
      return xc_error(XC_INVALID_ARGUMENT, "--shape goes with a model to compile, not a compiled module (%s)", model);
    XC_RETURN_IF_ERROR(xc_cli_check_file(model));
    return xc_compiled_module_read(model, out);
  }
  xc_session_options_t r;
  xc_cli_session_options_init(&r);
  r.target = target;
  r.opt_level = opt_level;
  r.precision = precision;
  r.use_cache = !no_cache;
  r.build.compile.allow_tf32 = allow_tf32;
  r.input_shapes = input_shapes;
  return xc_cli_compile_model(model, &r, NULL, out);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median of n values (sorts v). */
static double median_of(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

xc_status_t xc_cli_run_compiled(const xc_compiled_module_t* m, const xc_cli_run_options_t* ro, int num_inputs,
                                const xc_tensor_t* const* inputs, xc_tensor_t** outputs) {
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.poison = ro->poison;
  o.no_graphs = ro->no_graphs;
  o.profile = ro->profile != NULL;
  int repeat = ro->repeat > 1 ? ro->repeat : 1;
  /* Per run: wall, device (kernels), upload, download. */
  double* times = calloc((size_t)repeat * 4, sizeof *times);
  if (!times) return xc_error_oom();
  xc_cli_resident_t res;
  memset(&res, 0, sizeof res);
  xc_executor_t* e = NULL;
  xc_status_t s = xc_executor_create(m, ro->device, &o, &e);
  if (!s && ro->resident) s = xc_cli_resident_init(e, m, inputs, &res);
  for (int r = 0; !s && r < repeat; r++) {
    xc_run_stats_t st;
    /* runs after the first write the first run's outputs again */
    s = xc_cli_run_once(e, m, inputs, outputs, &res, &st);
    if (s) break;
    times[r] = st.total_ms;
    times[repeat + r] = st.kernels_ms;
    times[2 * repeat + r] = st.upload_ms;
    times[3 * repeat + r] = st.download_ms;
    if (m->buckets && r == 0) {
      int64_t n = -1; /* the symbol's size in this run's inputs */
      for (int i = 0; i < m->num_inputs && n < 0; i++) {
        const xc_cm_value_t* iv = &m->values[m->inputs[i]];
        for (int d = 0; d < iv->rank; d++)
          if (iv->dims[d].sym && iv->dims[d].sym->kind == XC_SYM_VAR &&
              strcmp(iv->dims[d].sym->name, m->buckets->symbol) == 0)
            n = inputs[i]->dims[d];
      }
      if (!st.bucket)
        fprintf(stderr, "xcomp: %s=%lld ran the generic module (no bucket of that size%s)\n", m->buckets->symbol,
                (long long)n, m->buckets->pad_ok ? "" : "; padding not allowed for this model");
      else if (st.bucket == n)
        fprintf(stderr, "xcomp: %s=%lld ran shape bucket %lld\n", m->buckets->symbol, (long long)n,
                (long long)st.bucket);
      else
        fprintf(stderr, "xcomp: %s=%lld ran shape bucket %lld (inputs padded, outputs sliced)\n", m->buckets->symbol,
                (long long)n, (long long)st.bucket);
    }
    /* With several runs the first is a warm-up the profile leaves out: it
     * carries one-time costs (a vendor library's first call of each kind,
     * lazy module loading) that no later run pays. */
    if (ro->profile && (repeat == 1 || r > 0)) {
      snprintf(ro->profile->device, sizeof ro->profile->device, "%s", xc_device_caps(xc_executor_device(e))->name);
      xc_cli_profile_add(ro->profile, &st);
    }
    if (ro->verbose)
      fprintf(stderr,
              "xcomp: ran %d kernels on %s%s: %.3f ms (kernels %.3f ms), peak memory %lld bytes%s%s\n",
              st.launches, xc_device_caps(xc_executor_device(e))->name,
              st.graph_replayed ? (st.graph_captured ? " as a launch graph (captured now)" : " as a launch graph")
                                : "",
              st.total_ms, st.kernels_ms, (long long)st.peak_bytes, st.graph_note[0] ? "; " : "", st.graph_note);
  }
  if (!s && ro->resident) s = xc_cli_resident_download(&res, outputs);
  if (!s && repeat > 1) {
    double wall_min = times[0], wall_max = times[0];
    for (int r = 1; r < repeat; r++) {
      if (times[r] < wall_min) wall_min = times[r];
      if (times[r] > wall_max) wall_max = times[r];
    }
    double wall = median_of(times, repeat), device = median_of(times + repeat, repeat);
    double up = median_of(times + 2 * repeat, repeat), down = median_of(times + 3 * repeat, repeat);
    fprintf(stderr,
            "xcomp: %d runs: median %.3f ms wall (min %.3f, max %.3f), of which device %.3f ms (%.0f%%), "
            "input %s %.3f ms, output %s %.3f ms%s\n",
            repeat, wall, wall_min, wall_max, device, wall > 0 ? 100 * device / wall : 0.0,
            ro->resident ? "device copy" : "upload", up, ro->resident ? "device copy" : "download", down,
            ro->resident ? " (device-resident: outputs read once, after the last run)" : "");
  }
  free(times);
  xc_cli_resident_free(&res);
  xc_executor_destroy(e);
  return s;
}

/* model.onnx -> model.xcm in the current folder. */
static char* default_output(const char* model) {
  const char* base = strrchr(model, '/');
  base = base ? base + 1 : model;
  size_t n = strlen(base);
  const char* dot = strrchr(base, '.');
  if (dot && dot != base) n = (size_t)(dot - base);
  char* out = malloc(n + 5);
  if (out) snprintf(out, n + 5, "%.*s.xcm", (int)n, base);
  return out;
}

/* shapes: the --shape options joined (freed by compile_main). */
static int compile_args(int argc, char** argv, char** shapes_out) {
  const xc_cli_command_t* cmd = &xc_cli_compile_command;
  char* shapes = NULL;
  const char* model = NULL;
  const char* output = NULL;
  xc_session_options_t r;
  xc_cli_session_options_init(&r);
  xc_cli_pass_args_t pa;
  xc_cli_pass_args_init(&pa, r.opt_level);
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m = xc_cli_pass_option(cmd, argc, argv, &i, &pa);
    if (m < 0) return XC_EXIT_USAGE;
    if (m > 0) continue;
    if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--target needs a value");
      r.target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "-o", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "-o needs a value");
      output = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--dump-kernels", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--dump-kernels needs a value");
      r.build.dump_dir = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_precision(v, &r.precision))
        return xc_cli_usage_error(cmd, "--precision takes f16, bf16 or f32");
    } else if ((m = xc_cli_option(argc, argv, &i, "--shape", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--shape needs NAME=DIMS");
      if (!xc_cli_add_shape(&shapes, v)) return xc_cli_fail(xc_error_oom());
      *shapes_out = shapes;
      r.input_shapes = shapes;
    } else if ((m = xc_cli_option(argc, argv, &i, "--dynamic", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--dynamic needs NAME=MIN..MAX");
      r.dynamic = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--buckets", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--buckets needs sizes separated by commas");
      r.buckets = v;
    } else if (strcmp(argv[i], "--no-cache") == 0) {
      r.use_cache = false;
    } else if (strcmp(argv[i], "--allow-tf32") == 0) {
      r.build.compile.allow_tf32 = true;
    } else if (strcmp(argv[i], "--no-vendor-blas") == 0) {
      r.no_vendor_blas = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--tuning-db", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--tuning-db needs a value");
      r.tuning_db = v;
    } else if (strcmp(argv[i], "--no-tuning-db") == 0) {
      r.no_tuning_db = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  if (!model) return xc_cli_usage_error(cmd, "no MODEL given");
  r.opt_level = pa.options.opt_level;
  r.disabled_passes = pa.disabled;
  r.num_disabled_passes = pa.options.num_disabled;
  r.print_after = pa.options.print_after;
  r.print_after_all = pa.options.print_after_all;
  r.pass_timing = pa.options.timing;
  if (r.buckets && !r.dynamic) return xc_cli_usage_error(cmd, "--buckets goes with --dynamic NAME=MIN..MAX");
  if (strcmp(r.target, "ref") == 0)
    return xc_cli_errorf("target ref is the reference interpreter: there is nothing to compile for it");
  char* out_path = output ? strdup(output) : default_output(model);
  if (!out_path) return xc_cli_fail(xc_error_oom());
  xc_cache_stats_t stats;
  memset(&stats, 0, sizeof stats);
  xc_compiled_module_t* m = NULL;
  xc_status_t s = xc_cli_compile_model(model, &r, &stats, &m);
  if (!s) s = xc_compiled_module_write(m, out_path);
  if (s) {
    free(out_path);
    return xc_cli_fail(s);
  }
  printf("wrote %s: target %s, %d kernels, %d steps (%s, %d kernels compiled)\n", out_path, m->target,
         m->num_kernels, m->num_steps, stats.hits ? "cache hit" : (r.use_cache ? "cache miss" : "no cache"),
         stats.kernels_compiled);
  if (m->buckets) {
    const xc_cm_buckets_t* b = m->buckets;
    printf("shape buckets of '%s' (%lld..%lld):", b->symbol, (long long)b->min, (long long)b->max);
    for (int i = 0; i < b->num; i++)
      printf("%s %lld (%d kernels)", i ? "," : "", (long long)b->items[i].size, b->items[i].module->num_kernels);
    printf("\n");
    if (b->pad_ok) printf("sizes between buckets: inputs padded with zeros to the next bucket, outputs sliced back\n");
    else printf("sizes between buckets: the generic module (not padded: %s)\n", b->pad_note);
  }
  xc_compiled_module_destroy(m);
  free(out_path);
  return XC_EXIT_OK;
}

static int compile_main(int argc, char** argv) {
  char* shapes = NULL;
  int rc = compile_args(argc, argv, &shapes);
  free(shapes);
  return rc;
}

const xc_cli_command_t xc_cli_compile_command = {
    "compile", compile_main,
    "xcomp compile MODEL [--target T] [-o OUT.xcm] [-O<n>] [--precision f16|bf16] [--no-cache] [--allow-tf32] "
    "[--dump-kernels DIR] [--no-vendor-blas] [--tuning-db FILE | --no-tuning-db] [--shape NAME=DIMS]... "
    "[--dynamic NAME=MIN..MAX [--buckets S1,S2,...]] [pass options]",
    "Compile a model (.xir or .onnx) into a compiled module (.xcm) for one target.",
    "options:\n"
    "  --target T           target and device to compile for (default: cpu; e.g. opencl:1;\n"
    "                       'xcomp targets' lists them)\n"
    "  -o OUT.xcm           where to write the module (default: MODEL's name with .xcm,\n"
    "                       in the current folder)\n"

    "  --precision f16|bf16 run the model's float32 tensors (inputs, weights, compute,\n"
    "                       outputs) in f16 or bf16 (the convert-precision pass)\n"
    "  --no-cache           neither read nor write the compile cache\n"
    "                       ($XCOMP_CACHE_DIR, default ~/.cache/xcomp)\n"
    "  --allow-tf32         f32 GEMMs may use tf32 tensor cores (cuda sm_80+): inputs rounded\n"
    "                       to 10-bit mantissas, f32 accumulation (default: exact f32)\n"
    "  --dump-kernels DIR   write every kernel's source and tiled IR into DIR\n"
    "  --no-vendor-blas     keep the generated GEMM kernels: do not measure them against\n"
    "                       the vendor library (cuda: cuBLASLt) on the device\n"
    "  --tuning-db FILE     take each kernel's schedule from this tuning database where it\n"
    "                       holds one for the kernel's task on this target and device\n"
    "                       ('xcomp tune'; default: the cache folder's tuning.db when it exists)\n"
    "  --no-tuning-db       the schedulers' default schedules, whatever was tuned\n"
    "  --shape NAME=DIMS    compile for this shape of input NAME (e.g. input_ids=1x64;\n"
    "                       repeatable): a model exported at one size compiled for another\n"
    "                       where its shape constants allow (else an error naming the\n"
    "                       node that does not), symbolic dims made static\n"
    "  --dynamic NAME=MIN..MAX  shape buckets for the symbolic dim NAME (or the input NAME\n"
    "                       with one symbolic dim), sizes MIN..MAX: one module holding a\n"
    "                       module specialized for each bucket size and the generic one.\n"
    "                       A run of a bucket's size runs its module; a smaller size runs\n"
    "                       the next bucket with the inputs padded by zeros and the outputs\n"
    "                       sliced, when the padding check proves that exact (causal or\n"
    "                       masked attention, row-wise ops), else the generic module; sizes\n"
    "                       outside MIN..MAX are refused (docs/cli.md, \"Shape buckets\")\n"
    "  --buckets S1,S2,...  the bucket sizes (default: powers of two from MIN, and MAX)\n"
    "pass options:\n" XC_CLI_PASS_HELP
    "\n"
    "Prints one line per kernel compiled on stderr, and a summary line on stdout.\n"
    "Run the result with 'xcomp run OUT.xcm --input ...' (docs/runtime.md).\n"};
