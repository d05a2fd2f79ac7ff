/* xcomp conform: run every test folder under a directory (ONNX backend tests
 * or exported models) and report PASS / FAIL / UNSUPPORTED per test and per
 * op. Each test runs in its own child process with a timeout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "xcomp/target.h"
#include "targets.h"
#include "xcomp/conformance.h"
#include "xcomp/opsuite.h"
#include "runtime_cli.h"

/* A Markdown file written by --markdown keeps everything from this line on
 * (hand-written sections below the generated table). */
#define HAND_WRITTEN_MARK "<!-- hand-written below: kept by xcomp conform --markdown -->"

/* The hand-written tail of an existing file (from the mark), or NULL. */
static char* read_tail(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* buf = NULL;
  size_t len = 0, cap = 0;
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char* nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[len] = '\0';
  char* mark = strstr(buf, HAND_WRITTEN_MARK);
  char* tail = NULL;
  if (mark) {
    size_t tl = strlen(mark);
    tail = malloc(tl + 1);
    if (tail) memcpy(tail, mark, tl + 1);
  }
  free(buf);
  return tail;
}

static xc_status_t write_file(const char* path, const xc_conform_report_t* r, bool markdown,
                              const char* command, const char* title) {
  char* tail = markdown ? read_tail(path) : NULL;
  FILE* f = fopen(path, "w");
  if (!f) {
    free(tail);
    return xc_error(XC_IO, "%s: cannot open for writing", path);
  }
  if (markdown) {
    xc_conform_print_markdown_titled(r, command, title, f);
    if (tail) fprintf(f, "\n%s", tail);
    free(tail);
  } else {
    xc_conform_print_report(r, true, f);
  }
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0) bad = true;
  return bad ? xc_error(XC_IO, "%s: write failed", path) : NULL;
}

/* Checks that the target part of a selector ("cuda" of "cuda:0") names a
 * registered target, without touching its driver: every test runs in a
 * forked child, and GPU drivers (CUDA, NVIDIA's OpenCL) must not be
 * initialized in the parent before a fork. The child opens the device. */
static xc_status_t check_target_name(const char* selector) {
  XC_RETURN_IF_ERROR(xc_targets_init());
  size_t n = strcspn(selector, ":");
  char names[512] = "";
  size_t k = 0;
  for (int i = 0; i < xc_target_count(); i++) {
    const char* name = xc_target_name(xc_target_at(i));
    if (strlen(name) == n && strncmp(name, selector, n) == 0) return NULL;
    k += (size_t)snprintf(names + k, k < sizeof names ? sizeof names - k : 0, "%s%s", i ? ", " : "", name);
  }
  return xc_error(XC_UNAVAILABLE, "no target or device matches '%s' (targets: ref, tiled%s%s)", selector,
                  names[0] ? ", " : "", names);
}

static bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end || s[0] == '-') return false;
  *out = (uint64_t)v;
  return true;
}

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif
#ifndef XCOMP_GIT_COMMIT
#define XCOMP_GIT_COMMIT "unknown"
#endif

/* The device of the run, as the reports describe it. */
typedef struct device_desc {
  char name[160];
  char vendor[64];
  char version[64];
  char arch[64];
  char error[256];
} device_desc_t;

/* Fills the device part of info. Called after every test has run: opening a
 * GPU driver in the parent before the suites fork their children is not
 * allowed (see check_target_name). */
static void describe_device(const char* target, bool compile_only, const xc_device_caps_t* arch_caps,
                            device_desc_t* d, xc_conform_run_info_t* info) {
  memset(d, 0, sizeof *d);
  if (!target || strcmp(target, "ref") == 0) {
    snprintf(d->name, sizeof d->name, "reference interpreter");
    snprintf(d->vendor, sizeof d->vendor, "xcomp");
    snprintf(d->version, sizeof d->version, "%s", XCOMP_VERSION);
  } else if (strcmp(target, "tiled") == 0) {
    snprintf(d->name, sizeof d->name, "tiled-IR interpreter");
    snprintf(d->vendor, sizeof d->vendor, "xcomp");
    snprintf(d->version, sizeof d->version, "%s", XCOMP_VERSION);
  } else if (compile_only) {
    const char* colon = strchr(target, ':');
    snprintf(d->arch, sizeof d->arch, "%s", colon ? colon + 1 : target);
    if (arch_caps) {
      snprintf(d->name, sizeof d->name, "%s", arch_caps->name);
      snprintf(d->vendor, sizeof d->vendor, "%s", arch_caps->vendor);
    }
  } else {
    xc_device_t* dev = NULL;
    xc_status_t s = xc_device_open(target, &dev);
    if (s) {
      snprintf(d->error, sizeof d->error, "%s", xc_status_message(s));
      xc_status_free(s);
    } else {
      const xc_device_caps_t* c = xc_device_caps(dev);
      snprintf(d->name, sizeof d->name, "%s", c->name);
      snprintf(d->vendor, sizeof d->vendor, "%s", c->vendor);
      snprintf(d->version, sizeof d->version, "%s", c->version);
      xc_device_close(dev);
    }
  }
  info->device_name = d->name[0] ? d->name : NULL;
  info->device_vendor = d->vendor[0] ? d->vendor : NULL;
  info->device_version = d->version[0] ? d->version : NULL;
  info->arch = d->arch[0] ? d->arch : NULL;
  info->device_error = d->error[0] ? d->error : NULL;
}

/* Warns about every xfail entry no test matched. */
static void warn_unmatched(const xc_xfail_list_t* l) {
  for (int i = 0; l && i < l->num_entries; i++) {
    const xc_xfail_entry_t* e = &l->entries[i];
    if (e->matches == 0)
      fprintf(stderr, "xcomp: warning: %s:%d: xfail entry '%s%s' matches no test that ran\n", l->path, e->line,
              e->name, e->prefix ? "*" : "");
  }
}

/* The XFAIL and XPASS lines of a report (the per-test lines printed while
 * the tests ran show what each did before the xfail list was applied). */
static void print_expected(const xc_conform_report_t* r, FILE* f) {
  for (int i = 0; i < r->num_cases; i++) {
    const xc_conform_case_t* c = &r->cases[i];
    if (c->verdict == XC_CONFORM_XFAIL || c->verdict == XC_CONFORM_XPASS)
      fprintf(f, "%-11s %s  (xfail: %s)\n", xc_conform_verdict_name(c->verdict), c->name, c->xfail_reason);
  }
}

static bool is_dir(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Kit defaults (docs/conformance.md, "The vendor conformance kit"). */
#define KIT_PER_OP 1
#define KIT_CASES_PER_OP 1

typedef struct kit_args {
  const char* out;
  const char* shared;
  const char* onnx_tests;
  const char* models;
} kit_args_t;

static void print_suite_totals(int i, const char* name, const xc_conform_report_t* r, double seconds) {
  fprintf(stderr, "kit: suite %d/3 %s: %d passed, %d failed, %d xfail, %d xpass, %d unsupported (%.1f s)\n", i,
          name, r->passed, r->failed, r->xfailed, r->xpassed, r->skipped, seconds);
}

static xc_status_t write_suite_log(const char* out_dir, const char* name, const xc_conform_report_t* r) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.txt", out_dir, name);
  FILE* f = fopen(path, "w");
  if (!f) return xc_error(XC_IO, "%s: cannot open for writing", path);
  xc_conform_print_report(r, true, f);
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0) bad = true;
  return bad ? xc_error(XC_IO, "%s: write failed", path) : NULL;
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xcomp conform --kit: node tests, the op suite and the models on one target,
 * one report of all three. */
static int run_kit(const kit_args_t* ka, xc_conform_options_t* o, xc_opsuite_options_t* so,
                   xc_xfail_list_t* xfail, xc_conform_run_info_t* info) {
  if (mkdir(ka->out, 0777) != 0 && errno != EEXIST)
    return xc_cli_errorf("%s: cannot create the output folder (%s)", ka->out, strerror(errno));
  if (!is_dir(ka->out)) return xc_cli_errorf("%s: not a folder", ka->out);
  const char* shared = ka->shared ? ka->shared : "../shared";
  char node_dir[4096], models_dir[4096];
  snprintf(node_dir, sizeof node_dir, "%s", ka->onnx_tests ? ka->onnx_tests : "");
  if (!ka->onnx_tests) snprintf(node_dir, sizeof node_dir, "%s/onnx-backend-tests/node", shared);
  snprintf(models_dir, sizeof models_dir, "%s", ka->models ? ka->models : "");
  if (!ka->models) snprintf(models_dir, sizeof models_dir, "%s/models", shared);

  xc_conform_report_t reports[3];
  memset(reports, 0, sizeof reports);
  char skipped[3][4200];
  xc_conform_suite_t suites[3] = {
      {"node", node_dir, NULL, NULL}, {"op-suite", "generated", NULL, NULL}, {"models", models_dir, NULL, NULL}};
  xc_status_t s = NULL;
  o->progress = stdout;
  for (int i = 0; i < 3 && !s; i++) {
    const char* dir = i == 0 ? node_dir : i == 2 ? models_dir : NULL;
    if (dir && !is_dir(dir)) {
      snprintf(skipped[i], sizeof skipped[i], "%s is not a folder (no %s)", dir,
               i == 0 ? "ONNX backend node tests: give --onnx-tests DIR or --shared DIR"
                      : "exported models: give --models DIR or --shared DIR");
      suites[i].skipped = skipped[i];
      fprintf(stderr, "kit: suite %d/3 %s: SKIPPED: %s\n", i + 1, suites[i].name, skipped[i]);
      continue;
    }
    fprintf(stderr, "kit: suite %d/3 %s (%s) on %s ...\n", i + 1, suites[i].name, suites[i].source,
            o->target ? o->target : "ref");
    double t0 = wall_s();
    if (i == 1) {
      char* uncovered = NULL;
      s = xc_opsuite_run(so, &reports[i], &uncovered);
      free(uncovered);
    } else {
      xc_conform_options_t co = *o;
      co.models = i == 2;
      if (i == 2) co.per_op = 0;
      s = xc_conform_run(dir, &co, &reports[i]);
    }
    if (s) break;
    suites[i].report = &reports[i];
    xc_conform_apply_xfail(&reports[i], xfail);
    print_expected(&reports[i], stdout);
    print_suite_totals(i + 1, suites[i].name, &reports[i], wall_s() - t0);
    s = write_suite_log(ka->out, suites[i].name, &reports[i]);
  }
  device_desc_t dd;
  if (!s) describe_device(o->target, false, NULL, &dd, info);
  char path[4096];
  if (!s) {
    snprintf(path, sizeof path, "%s/report.json", ka->out);
    s = xc_conform_write_json(path, info, suites, 3, xfail);
  }
  if (!s) {
    snprintf(path, sizeof path, "%s/report.md", ka->out);
    FILE* f = fopen(path, "w");
    if (!f) {
      s = xc_error(XC_IO, "%s: cannot open for writing", path);
    } else {
      xc_conform_print_kit_markdown(info, suites, 3, xfail, f);
      bool bad = ferror(f) != 0;
      if (fclose(f) != 0) bad = true;
      if (bad) s = xc_error(XC_IO, "%s: write failed", path);
    }
  }
  int failed = 0, xpassed = 0, ran = 0, num_skipped = 0;
  for (int i = 0; i < 3; i++) {
    failed += reports[i].failed;
    xpassed += reports[i].xpassed;
    ran += reports[i].num_cases;
    num_skipped += suites[i].skipped != NULL;
    xc_conform_report_free(&reports[i]);
  }
  if (s) return xc_cli_fail(s);
  warn_unmatched(xfail);
  fprintf(stderr, "kit: wrote %s/report.md and %s/report.json\n", ka->out, ka->out);
  if (ran == 0) return xc_cli_errorf("conformance kit: no test ran (%d of 3 suites skipped)", num_skipped);
  if (failed || xpassed)
    return xc_cli_errorf("conformance kit: %d failed, %d passed that the xfail list expects to fail (xpass); see %s/report.md",
                         failed, xpassed, ka->out);
  return XC_EXIT_OK;
}

static int conform_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_conform_command;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--localize") == 0 || strncmp(argv[i], "--localize=", 11) == 0)
      return xc_cli_conform_localize(argc, argv);
  xc_conform_options_t o;
  xc_conform_options_init(&o);
  const char* dir = NULL;
  const char* report = NULL;
  const char* markdown = NULL;
  const char* report_json = NULL;
  const char* xfail_file = NULL;
  bool strict = false, kit = false;
  kit_args_t ka = {NULL, NULL, NULL, NULL};
  bool op_suite = false, list_only = false;
  bool seen_per_op = false, seen_cases = false;
  xc_opsuite_options_t so;
  xc_opsuite_options_init(&so);
  const char* dtypes = NULL;
  const char* dtype = NULL;
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    const char* opt = argv[i];
    int m;
    if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      o.target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--onnx-tests", &v)) != 0) {
      if (ka.onnx_tests) return xc_cli_usage_error(cmd, "give one of --onnx-tests and --models, once");
      ka.onnx_tests = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--models", &v)) != 0) {
      if (ka.models) return xc_cli_usage_error(cmd, "give one of --onnx-tests and --models, once");
      ka.models = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--filter", &v)) != 0) {
      o.filter = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--per-op", &v)) != 0) {
      seen_per_op = true;
      if (m > 0 && (!xc_cli_parse_int(v, &o.per_op) || o.per_op <= 0))
        return xc_cli_usage_error(cmd, "--per-op: '%s' is not a positive count", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "--max-local-memory", &v)) != 0) {
      int n = 0;
      if (m > 0 && (!xc_cli_parse_int(v, &n) || n <= 0))
        return xc_cli_usage_error(cmd, "--max-local-memory: '%s' is not a positive byte count", v);
      o.max_local_memory_bytes = n;
    } else if ((m = xc_cli_option(argc, argv, &i, "--max-threads", &v)) != 0) {
      if (m > 0 && (!xc_cli_parse_int(v, &o.max_threads_per_group) || o.max_threads_per_group <= 0))
        return xc_cli_usage_error(cmd, "--max-threads: '%s' is not a positive count", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "--report", &v)) != 0) {
      report = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--markdown", &v)) != 0) {
      markdown = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--report-json", &v)) != 0) {
      report_json = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--xfail", &v)) != 0) {
      xfail_file = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--out", &v)) != 0) {
      ka.out = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--shared", &v)) != 0) {
      ka.shared = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--timeout", &v)) != 0) {
      if (m > 0 && (!xc_cli_parse_double(v, &o.timeout_s) || o.timeout_s <= 0))
        return xc_cli_usage_error(cmd, "--timeout: '%s' is not a positive number of seconds", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "-j", &v)) != 0 ||
               (m = xc_cli_option(argc, argv, &i, "--jobs", &v)) != 0) {
      if (m > 0 && !xc_cli_parse_int(v, &o.jobs))
        return xc_cli_usage_error(cmd, "%s: '%s' is not a positive count", opt, v);
    } else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2]) {
      m = 1;
      if (!xc_cli_parse_int(argv[i] + 2, &o.jobs))
        return xc_cli_usage_error(cmd, "-j: '%s' is not a positive count", argv[i] + 2);
    } else if (strcmp(argv[i], "--strict") == 0) {
      m = 1;
      strict = true;
    } else if (strcmp(argv[i], "--kit") == 0) {
      m = 1;
      kit = true;
    } else if (strcmp(argv[i], "--op-suite") == 0) {
      m = 1;
      op_suite = true;
    } else if (strcmp(argv[i], "--list") == 0) {
      m = 1;
      list_only = true;
    } else if (strcmp(argv[i], "--compile-only") == 0) {
      m = 1;
      so.compile_only = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--seed", &v)) != 0) {
      if (m > 0 && !parse_u64(v, &so.seed))
        return xc_cli_usage_error(cmd, "--seed: '%s' is not a non-negative integer", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "--cases-per-op", &v)) != 0) {
      seen_cases = true;
      if (m > 0 && !xc_cli_parse_int(v, &so.cases_per_op))
        return xc_cli_usage_error(cmd, "--cases-per-op: '%s' is not a positive count", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "--dtypes", &v)) != 0) {
      dtypes = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--dtype", &v)) != 0) {
      dtype = v;
    } else if (strcmp(argv[i], "--allow-tf32") == 0) {
      m = 1;
      o.allow_tf32 = true;
    } else if (argv[i][0] == '-') {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    if (m < 0) return xc_cli_usage_error(cmd, "%s needs a value", opt);
  }
  if (kit) {
    if (!ka.out) return xc_cli_usage_error(cmd, "--kit needs --out DIR");
    if (op_suite || list_only || so.compile_only || report || markdown || report_json || strict || dtype)
      return xc_cli_usage_error(cmd, "--kit runs all three suites and writes DIR/report.md and DIR/report.json: "
                                     "leave out --op-suite, --list, --compile-only, --report, --markdown, "
                                     "--report-json, --strict and --dtype");
    if (!seen_per_op) o.per_op = KIT_PER_OP;
    if (!seen_cases) so.cases_per_op = KIT_CASES_PER_OP;
  } else {
    if (ka.out || ka.shared) return xc_cli_usage_error(cmd, "--out and --shared go with --kit");
    if (ka.onnx_tests && ka.models) return xc_cli_usage_error(cmd, "give one of --onnx-tests and --models, once");
    dir = ka.onnx_tests ? ka.onnx_tests : ka.models;
    o.models = ka.models != NULL;
    if (op_suite && dir) return xc_cli_usage_error(cmd, "give one of --op-suite, --onnx-tests and --models");
    if (op_suite && o.per_op > 0)
      return xc_cli_usage_error(cmd, "--per-op goes with --onnx-tests or --models (the op suite takes --cases-per-op)");
    if (!op_suite && (dtypes || list_only))
      return xc_cli_usage_error(cmd, "--dtypes and --list go with --op-suite");
    if (so.compile_only && !op_suite && !o.models)
      return xc_cli_usage_error(cmd, "--compile-only goes with --op-suite or --models");
    if (so.compile_only && (o.max_local_memory_bytes > 0 || o.max_threads_per_group > 0))
      return xc_cli_usage_error(cmd, "--compile-only compiles for the architecture's own limits: "
                                     "leave out --max-local-memory and --max-threads");
    if (dtype && (op_suite || !dir || !o.models))
      return xc_cli_usage_error(cmd, "--dtype goes with --models (the op suite takes --dtypes)");
    if (!dir && !op_suite) return xc_cli_usage_error(cmd, "give --op-suite, --onnx-tests DIR, --models DIR or --kit");
    if (list_only && (xfail_file || report_json))
      return xc_cli_usage_error(cmd, "--list runs nothing: leave out --xfail and --report-json");
  }
  if (dtype) {
    if (!xc_dtype_from_name(dtype, &o.dtype) || (o.dtype != XC_F16 && o.dtype != XC_BF16 && o.dtype != XC_F32))
      return xc_cli_usage_error(cmd, "--dtype: '%s' is not f16, bf16 or f32", dtype);
  }
  /* ref and tiled (lowering run by the tiled-IR interpreter) run in-process;
   * anything else must be a registered
   * target with a device (cpu, opencl:N, plugins). */
  xc_status_t s = NULL;
  xc_target_resolution_t res;
  memset(&res, 0, sizeof res);
  if (so.compile_only) {
    /* an architecture (cuda:sm_90, rocm:gfx90a): compiled without its device */
    s = o.target ? xc_target_resolve(o.target, &res) : NULL;
    if (s && xc_status_code(s) != XC_INVALID_ARGUMENT) { /* not an architecture's error: not one at all */
      xc_status_free(s);
      s = NULL;
    }
    if (!s && !res.arch)
      return xc_cli_usage_error(cmd, "--compile-only takes an architecture target: cuda:sm_XX or rocm:gfxNNN");
  } else if (o.target && strcmp(o.target, "tiled") != 0 && strcmp(o.target, "ref") != 0) {
    s = check_target_name(o.target);
  }
  if (s) return xc_cli_fail(s);
  xc_xfail_list_t xfail;
  memset(&xfail, 0, sizeof xfail);
  if (xfail_file && (s = xc_xfail_load(xfail_file, &xfail)) != NULL) return xc_cli_fail(s);
  if (dtypes) {
    s = xc_opsuite_parse_dtypes(dtypes, &so.dtypes);
    if (s) {
      int rc = xc_cli_usage_error(cmd, "%s", xc_status_message(s));
      xc_status_free(s);
      xc_xfail_free(&xfail);
      return rc;
    }
  }
  /* The command line, quoted in the reports' headers. */
  char command[2048];
  size_t k = (size_t)snprintf(command, sizeof command, "xcomp");
  for (int i = 0; i < argc && k < sizeof command; i++)
    k += (size_t)snprintf(command + k, sizeof command - k, " %s", argv[i]);
  xc_conform_run_info_t info;
  memset(&info, 0, sizeof info);
  info.target = o.target ? o.target : "ref";
  info.version = XCOMP_VERSION;
  info.commit = XCOMP_GIT_COMMIT;
  info.command = command;
  info.filter = o.filter;
  info.xfail_file = xfail_file;
  info.dtypes = dtypes ? dtypes : "f32";
  info.model_dtype = dtype;
  info.seed = so.seed;
  info.per_op = o.per_op;
  info.cases_per_op = so.cases_per_op;
  info.timeout_s = o.timeout_s;
  info.jobs = o.jobs;
  info.compile_only = so.compile_only;
  o.compile_only = so.compile_only;
  info.allow_tf32 = o.allow_tf32;
  so.target = o.target;
  so.filter = o.filter;
  so.timeout_s = o.timeout_s;
  so.jobs = o.jobs;
  so.progress = stdout;
  if (kit) {
    int rc = run_kit(&ka, &o, &so, &xfail, &info);
    xc_xfail_free(&xfail);
    return rc;
  }
  o.progress = stdout;
  xc_conform_report_t r;
  char* uncovered = NULL;
  if (op_suite) {
    if (list_only) {
      s = xc_opsuite_list(&so, &r, &uncovered);
      if (s) return xc_cli_fail(s);
      for (int i = 0; i < r.num_cases; i++) printf("%s\n", r.cases[i].name);
      printf("%d cases\n", r.num_cases);
      if (uncovered) printf("not covered by a generator: %s\n", uncovered);
      free(uncovered);
      xc_conform_report_free(&r);
      return XC_EXIT_OK;
    }
    s = xc_opsuite_run(&so, &r, &uncovered);
  } else {
    s = xc_conform_run(dir, &o, &r);
  }
  if (s) {
    xc_xfail_free(&xfail);
    return xc_cli_fail(s);
  }
  if (op_suite && r.num_cases == 0) {
    free(uncovered);
    xc_conform_report_free(&r);
    xc_xfail_free(&xfail);
    return xc_cli_errorf("--op-suite: no cases%s", so.filter ? " match the filter" : "");
  }
  if (r.num_cases == 0) {
    xc_conform_report_free(&r);
    xc_xfail_free(&xfail);
    return xc_cli_errorf("%s: no test folders (model.onnx) found%s", dir,
                         o.filter ? " matching the filter" : "");
  }
  if (uncovered) printf("\nops not covered by a generator: %s\n", uncovered);
  free(uncovered);
  if (xfail_file) {
    xc_conform_apply_xfail(&r, &xfail);
    print_expected(&r, stdout);
  }
  xc_conform_print_report(&r, false, stdout);
  /* The device is described once every test has run (no fork follows). */
  device_desc_t dd;
  bool want_device = report_json || (markdown && o.target && strcmp(o.target, "ref") != 0);
  if (want_device) describe_device(o.target, so.compile_only, so.compile_only ? &res.caps : NULL, &dd, &info);
  if (report) s = write_file(report, &r, false, command, NULL);
  if (!s && markdown) {
    char title[512];
    bool is_ref = !o.target || strcmp(o.target, "ref") == 0;
    s = write_file(markdown, &r, true, command, is_ref ? NULL : xc_conform_target_title(&info, title, sizeof title));
  }
  if (!s && report_json) {
    xc_conform_suite_t suite = {op_suite ? "op-suite" : o.models ? "models" : "node", op_suite ? "generated" : dir,
                                NULL, &r};
    s = xc_conform_write_json(report_json, &info, &suite, 1, &xfail);
  }
  int failed = r.failed, xpassed = r.xpassed;
  xc_conform_report_free(&r);
  if (s) {
    xc_xfail_free(&xfail);
    return xc_cli_fail(s);
  }
  warn_unmatched(&xfail);
  xc_xfail_free(&xfail);
  if (xpassed > 0)
    return xc_cli_errorf("%d test%s passed that the xfail list expects to fail (xpass)%s", xpassed,
                         xpassed == 1 ? "" : "s",
                         failed ? "; and unexpected failures" : "");
  if ((strict || xfail_file) && failed > 0)
    return xc_cli_errorf("%d test%s failed (%s)", failed, failed == 1 ? "" : "s", strict ? "--strict" : "not in the xfail list");
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_conform_command = {
    "conform", conform_main,
    "xcomp conform [--target T] (--onnx-tests DIR | --models DIR [--dtype f16|bf16] | --op-suite "
    "[--seed N] [--cases-per-op N] [--dtypes LIST] [--list]) [--compile-only] [--filter REGEX] "
    "[--per-op N] [--report FILE] [--markdown FILE] [--report-json FILE] [--xfail FILE] [-j N] [--timeout S] "
    "[--strict] [--allow-tf32]\n"
    "       xcomp conform --kit [--target T] --out DIR [--xfail FILE] [--shared DIR] [--onnx-tests DIR] "
    "[--models DIR] [...]\n"
    "       xcomp conform --localize MODEL_DIR|MODEL [--target T] [--input @FILE]... [--no-cache]",
    "Run test folders (model.onnx + test_data_set_N/) or the generated op suite and report conformance.",
    "DIR is one test folder, a folder of them (onnx-backend-tests/node), or a folder\n"
    "of such folders (the backend-test root with node/, simple/, ...).\n"
    "Each test prints PASS, FAIL (max-abs, max-ULP, which output) or UNSUPPORTED\n"
    "(what xcomp does not handle); then come totals per op and dtype and the line\n"
    "'N passed, N failed, N skipped'. A test that crashes or times out is a FAIL.\n"
    "\n"
    "--localize MODEL_DIR (or a .onnx/.xir/.xcm) runs the model compiled for --target T\n"
    "(default cpu) keeping every intermediate value, runs the reference interpreter on\n"
    "the module's graph with the same inputs (--input @FILE in graph-input order, else\n"
    "MODEL_DIR/test_data_set_0/input_<i>.pb, else seeded random), compares each kernel's\n"
    "outputs in step order at the dtype's tolerance and names the first kernel that\n"
    "diverges: its graph nodes, max abs / rel-L2 error and where its source is. Exit 1\n"
    "when one diverges, 0 when all agree.\n"
    "\n"
    "options:\n"
    "  --target T        target to check (default: ref; `tiled`: lowered kernels on the\n"
    "                    tiled-IR interpreter)\n"
    "  --onnx-tests DIR  ONNX backend tests: rtol 1e-3, atol 1e-7, exact dtype and shape\n"
    "  --models DIR      exported models: the interpreter against the stored outputs by\n"
    "                    relative L2 error alone (f32, f64: <= 1e-5; f16: 2e-3; bf16:\n"
    "                    1.6e-2), the target against the interpreter by its dtype's rule\n"
    "  --dtype f16|bf16  with --models: convert the model's float32 tensors (weights,\n"
    "                    inputs, outputs, compute) to DTYPE, run the target and compare\n"
    "                    with the f32 interpreter at DTYPE's rel-L2 bound\n"
    "  --op-suite        generated op-level cases (every op with a generator, fused\n"
    "                    chains), each against the interpreter at its dtype's tolerance\n"
    "  --seed N          op suite: seed of the generator (default 1)\n"
    "  --cases-per-op N  op suite: cases per op and dtype (default 3)\n"
    "  --dtypes LIST     op suite: dtypes to generate, e.g. f32,f16,bf16,i32 (default f32;\n"
    "                    `default`: f32,f16,bf16,i32,i64,i8,u8,bool; `all`)\n"
    "  --list            op suite: print the case names only\n"
    "  --compile-only    op suite or models: only lower and compile each case or model\n"
    "                    (after --dtype's conversion) for an architecture (--target\n"
    "                    cuda:sm_90, rocm:gfx90a; no GPU needed); PASS means compiled,\n"
    "                    nothing runs\n"
    "  --filter REGEX    only tests whose name (path below DIR, or op-suite case name)\n"
    "                    matches (POSIX ERE)\n"
    "  --per-op N        --onnx-tests/--models: of the matching tests, run only the first\n"
    "                    N (name order) of each op and dtype (a sample for slow targets)\n"
    "  --max-local-memory BYTES, --max-threads N\n"
    "                    compile as for a smaller device of the target (at most this much\n"
    "                    work-group memory / threads per work-group) and run on the real\n"
    "                    one: checks that the schedulers find legal schedules\n"
    "  --report FILE     also write the full report to FILE\n"
    "  --markdown FILE   write the per-op table as Markdown (docs/conformance.md),\n"
    "                    titled by the target and its device (ref: the interpreter)\n"
    "  --report-json FILE  write the JSON report (target, device, version, commit,\n"
    "                    date, tolerance, options, totals, every test)\n"
    "  --xfail FILE      tests expected to fail, 'NAME  # reason' a line (a trailing\n"
    "                    '*' makes NAME a prefix): a listed FAIL is XFAIL, a listed\n"
    "                    PASS is XPASS and exits 1, an unlisted FAIL exits 1\n"
    "  --kit             node tests, op suite and models on the target, one report:\n"
    "                    --out DIR (report.md, report.json, a log per suite); node\n"
    "                    tests from SHARED/onnx-backend-tests/node (--onnx-tests),\n"
    "                    models from SHARED/models (--models), SHARED = --shared DIR\n"
    "                    (default ../shared); defaults --per-op 1, --cases-per-op 1,\n"
    "                    --dtypes f32; exits 1 on a failure or an xpass\n"
    "  -j N, --jobs N    run N tests at a time (default 1)\n"
    "  --timeout S       CPU seconds per test (its own and its compiler's; at most 4x\n"
    "                    that in wall time) before it counts as TIMEOUT (default 60)\n"
    "  --strict          exit 1 when any test failed (default: exit 0, unless --xfail)\n"
    "  --allow-tf32      compiled targets: f32 GEMMs may use tf32 tensor cores; f32\n"
    "                    outputs are then held to relative L2 <= 5e-4 (ARCHITECTURE.md)\n"};
