/* xcomp tune: search each kernel's schedule of a model on a device and
 * record the measurements in the tuning database that compiles read; and
 * the database's report, plots, export and import (docs/autotune.md). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "runtime_cli.h"
#include "xcomp/tune.h"

/* This program, for the measuring processes. */
static xc_status_t self_exe(char* out, size_t size) {
  ssize_t n = readlink("/proc/self/exe", out, size - 1);
  if (n <= 0) return xc_error(XC_UNAVAILABLE, "cannot find this program's path (/proc/self/exe)");
  out[n] = 0;
  return NULL;
}

static int db_command(const char* db_path, const char* report, const char* plot_dir, const char* export_path,
                      const char* import_path) {
  char def[4096];
  if (!db_path) {
    xc_status_t s = xc_tune_db_default_path(def, sizeof def);
    if (s) return xc_cli_fail(s);
    db_path = def;
  }
  xc_tune_db_t* db = NULL;
  xc_status_t s = xc_tune_db_open(db_path, import_path != NULL, &db);
  if (!s && import_path) {
    int added = 0;
    s = xc_tune_db_import_jsonl(db, import_path, &added);
    if (!s) fprintf(stderr, "xcomp: tune: imported %d records from %s into %s\n", added, import_path, db_path);
  }
  if (!s && export_path) {
    FILE* f = strcmp(export_path, "-") == 0 ? stdout : fopen(export_path, "w");
    if (!f) s = xc_error(XC_IO, "cannot write %s", export_path);
    if (!s) s = xc_tune_db_export_jsonl(db, f);
    if (f && f != stdout && fclose(f) != 0 && !s) s = xc_error(XC_IO, "cannot write %s", export_path);
  }
  if (!s && report) {
    FILE* md = strcmp(report, "-") == 0 ? stdout : fopen(report, "w");
    if (!md) s = xc_error(XC_IO, "cannot write %s", report);
    if (!s) s = xc_tune_report(db, md, plot_dir);
    if (md && md != stdout && fclose(md) != 0 && !s) s = xc_error(XC_IO, "cannot write %s", report);
  }
  xc_tune_db_close(db);
  return s ? xc_cli_fail(s) : XC_EXIT_OK;
}

static int tune_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_tune_command;
  xc_tune_options_t o;
  xc_tune_options_init(&o);
  const char *report = NULL, *plot_dir = NULL, *export_path = NULL, *import_path = NULL;
  bool quiet = false, plain = false;
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m;
    if (strcmp(argv[i], "--worker") == 0) {
      if (i + 1 >= argc) return xc_cli_usage_error(cmd, "--worker needs a request file");
      return xc_tune_worker_main(argv[i + 1]);
    } else if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--target needs a value");
      o.target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--db", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--db needs a file");
      o.db_path = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--trials", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.trials) || o.trials < 1)
        return xc_cli_usage_error(cmd, "--trials takes a positive number");
    } else if ((m = xc_cli_option(argc, argv, &i, "--time-budget", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_double(v, &o.time_budget_s) || o.time_budget_s <= 0)
        return xc_cli_usage_error(cmd, "--time-budget takes seconds (> 0)");
    } else if ((m = xc_cli_option(argc, argv, &i, "--batch", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.batch) || o.batch < 1 || o.batch > 256)
        return xc_cli_usage_error(cmd, "--batch takes 1 to 256");
    } else if ((m = xc_cli_option(argc, argv, &i, "--jobs", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.jobs) || o.jobs < 1 || o.jobs > 256)
        return xc_cli_usage_error(cmd, "--jobs takes 1 to 256");
    } else if ((m = xc_cli_option(argc, argv, &i, "--timeout", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_double(v, &o.timeout_s) || o.timeout_s <= 0)
        return xc_cli_usage_error(cmd, "--timeout takes seconds (> 0)");
    } else if ((m = xc_cli_option(argc, argv, &i, "--max-tasks", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.max_tasks) || o.max_tasks < 1)
        return xc_cli_usage_error(cmd, "--max-tasks takes a positive number");
    } else if ((m = xc_cli_option(argc, argv, &i, "--seed", &v)) != 0) {
      int seed = 0;
      if (m < 0 || !xc_cli_parse_int(v, &seed) || seed < 0) return xc_cli_usage_error(cmd, "--seed takes a number");
      o.seed = (uint64_t)seed;
    } else if ((m = xc_cli_option(argc, argv, &i, "--search", &v)) != 0) {
      if (m < 0 || (strcmp(v, "model") != 0 && strcmp(v, "random") != 0))
        return xc_cli_usage_error(cmd, "--search takes model or random");
      o.random_search = strcmp(v, "random") == 0;
    } else if ((m = xc_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_precision(v, &o.precision))
        return xc_cli_usage_error(cmd, "--precision takes f16, bf16 or f32");
    } else if ((m = xc_cli_option(argc, argv, &i, "--max-local-memory", &v)) != 0) {
      int kb = 0;
      if (m < 0 || !xc_cli_parse_int(v, &kb) || kb < 1) return xc_cli_usage_error(cmd, "--max-local-memory takes bytes");
      o.max_local_memory_bytes = kb;
    } else if ((m = xc_cli_option(argc, argv, &i, "--max-threads", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.max_threads_per_group) || o.max_threads_per_group < 1)
        return xc_cli_usage_error(cmd, "--max-threads takes a positive number");
    } else if ((m = xc_cli_option(argc, argv, &i, "--report", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--report needs a file (- for stdout)");
      report = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--plot", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--plot needs a folder");
      plot_dir = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--export", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--export needs a file (- for stdout)");
      export_path = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--import", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--import needs a file");
      import_path = v;
    } else if (strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else if (strcmp(argv[i], "--plain") == 0) {
      plain = true;
    } else if (argv[i][0] == '-' && argv[i][1] == 'O' && argv[i][2] >= '0' && argv[i][2] <= '3' && !argv[i][3]) {
      o.opt_level = argv[i][2] - '0';
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else if (!o.model_path) {
      o.model_path = argv[i];
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  if (plot_dir && !report) return xc_cli_usage_error(cmd, "--plot goes with --report");
  if (report || export_path || import_path) {
    if (o.model_path)
      return xc_cli_usage_error(cmd, "--report, --export and --import work on a database (--db), not a model");
    return db_command(o.db_path, report, plot_dir, export_path, import_path);
  }
  if (!o.model_path) return xc_cli_usage_error(cmd, "no MODEL given");
  xc_status_t s = xc_cli_check_file(o.model_path);
  char exe[PATH_MAX];
  if (!s) s = self_exe(exe, sizeof exe);
  if (s) return xc_cli_fail(s);
  /* $XCOMP_TUNE_WORKER: another program to measure with (a wrapper that
   * pins the measuring process to cores, or runs it under a debugger; it
   * ends by running this xcomp with the arguments it was given) */
  const char* wrap = getenv("XCOMP_TUNE_WORKER");
  o.worker_exe = wrap && *wrap ? wrap : exe;
  o.progress = quiet ? NULL : stderr;
  o.live = !quiet && !plain && isatty(2);
  xc_tune_summary_t sum;
  s = xc_tune_model(&o, &sum);
  if (s) return xc_cli_fail(s);
  printf("tuned %s on %s: %d tasks (%d kernels), %d trials (%d invalid) in %.1f s\n", o.model_path, o.target,
         sum.num_tasks, sum.num_kernels, sum.trials, sum.invalid, sum.seconds);
  if (sum.tuned_ms > 0)
    printf("kernel time per run (tasks x launches): default %.4g ms, tuned %.4g ms (%.2fx)\n", sum.default_ms,
           sum.tuned_ms, sum.default_ms / sum.tuned_ms);
  if (sum.rank_samples >= 2)
    printf("cost model: rank correlation %.3f over %d held-out measurements\n", sum.rank_correlation,
           sum.rank_samples);
  printf("run %s recorded in %s\n", sum.run_id, o.db_path ? o.db_path : "the default tuning database");
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_tune_command = {
    "tune", tune_main,
    "xcomp tune MODEL [--target T] [--trials N] [--time-budget S] [--db FILE] [--search model|random] "
    "[--batch N] [--jobs N] [--timeout S] [--max-tasks N] [--seed N] [--precision f16|bf16] [-O<n>] "
    "[--quiet | --plain]\n"
    "       xcomp tune [--db FILE] --report OUT.md [--plot DIR] | --export FILE.jsonl | --import FILE.jsonl",
    "Search the kernels' schedules of a model on a device; record them for later compiles.",
    "options:\n"
    "  --target T           the device to tune on (default cpu): a present device, not an\n"
    "                       architecture\n"
    "  --trials N           schedules measured per task besides the default (default 32)\n"
    "  --time-budget S      start no new round of measurements after S seconds\n"
    "  --db FILE            the tuning database (default: tuning.db in the cache folder,\n"
    "                       $XCOMP_CACHE_DIR or ~/.cache/xcomp); created when missing\n"
    "  --search model|random  candidates ranked by the learned cost model (default) or\n"
    "                       drawn at random (the baseline)\n"
    "  --batch N            candidates measured per round (default 8)\n"
    "  --jobs N             candidates compiled at once (default: the online CPUs)\n"
    "  --timeout S          one candidate's run, after which it counts as hung (default 30)\n"
    "  --max-tasks N        tune only the N tasks with the most launches\n"
    "  --seed N             the search's random seed\n"
    "  --precision f16|bf16 tune the model as compiled in f16 or bf16\n"
    "  --max-local-memory B, --max-threads N  tune for a smaller device of the target\n"
    "  --quiet, --plain     no progress; plain progress lines instead of a status line\n"
    "  --report OUT.md      write the database's summary (markdown; - for stdout)\n"
    "  --plot DIR           with --report: PNG plots (gnuplot) of best time against trials\n"
    "                       per task and of the cost model's predictions against measurements\n"
    "  --export FILE        the database as JSON lines (- for stdout)\n"
    "  --import FILE        add the records of a JSON-lines export (duplicates skipped)\n"
    "\n"
    "Kernels with the same structure (identical layers) form one task, tuned once. Each\n"
    "candidate is compiled (in parallel), run in a separate process on random inputs and\n"
    "compared with the default schedule's result; wrong, crashing or hung candidates are\n"
    "recorded as invalid. 'xcomp compile' (and run, bench) then take each kernel's best\n"
    "recorded schedule for that target and device ('--tuning-db', $XCOMP_TUNING_DB).\n"};
