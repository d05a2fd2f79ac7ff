/* xcomp conform: run every test folder under a directory (ONNX backend tests
 * or exported models) and report PASS / FAIL / UNSUPPORTED per test and per
 * op. Each test runs in its own child process with a timeout. */
#include <stdlib.h>
#include <string.h>

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
                              const char* command) {
  char* tail = markdown ? read_tail(path) : NULL;
  FILE* f = fopen(path, "w");
  if (!f) {
    free(tail);
    return xc_error(XC_IO, "%s: cannot open for writing", path);
  }
  if (markdown) {
    xc_conform_print_markdown(r, command, f);
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

static int conform_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_conform_command;
  xc_conform_options_t o;
  xc_conform_options_init(&o);
  const char* dir = NULL;
  const char* report = NULL;
  const char* markdown = NULL;
  bool strict = false;
  bool op_suite = false, list_only = false;
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
      if (dir) return xc_cli_usage_error(cmd, "give one of --onnx-tests and --models, once");
      dir = v;
      o.models = false;
    } else if ((m = xc_cli_option(argc, argv, &i, "--models", &v)) != 0) {
      if (dir) return xc_cli_usage_error(cmd, "give one of --onnx-tests and --models, once");
      dir = v;
      o.models = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--filter", &v)) != 0) {
      o.filter = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--per-op", &v)) != 0) {
      if (m > 0 && (!xc_cli_parse_int(v, &o.per_op) || o.per_op <= 0))
        return xc_cli_usage_error(cmd, "--per-op: '%s' is not a positive count", v);
    } else if ((m = xc_cli_option(argc, argv, &i, "--report", &v)) != 0) {
      report = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--markdown", &v)) != 0) {
      markdown = v;
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
  if (op_suite && dir) return xc_cli_usage_error(cmd, "give one of --op-suite, --onnx-tests and --models");
  if (op_suite && o.per_op > 0)
    return xc_cli_usage_error(cmd, "--per-op goes with --onnx-tests or --models (the op suite takes --cases-per-op)");
  if (!op_suite && (dtypes || list_only || so.compile_only))
    return xc_cli_usage_error(cmd, "--dtypes, --list and --compile-only go with --op-suite");
  if (dtype && (op_suite || !dir || !o.models))
    return xc_cli_usage_error(cmd, "--dtype goes with --models (the op suite takes --dtypes)");
  if (!dir && !op_suite) return xc_cli_usage_error(cmd, "give --op-suite, --onnx-tests DIR or --models DIR");
  if (dtype) {
    if (!xc_dtype_from_name(dtype, &o.dtype) || (o.dtype != XC_F16 && o.dtype != XC_BF16 && o.dtype != XC_F32))
      return xc_cli_usage_error(cmd, "--dtype: '%s' is not f16, bf16 or f32", dtype);
  }
  /* ref and tiled (lowering run by the tiled-IR interpreter) run in-process;
   * anything else must be a registered
   * target with a device (cpu, opencl:N, plugins). */
  xc_status_t s = NULL;
  if (so.compile_only) {
    /* an architecture (cuda:sm_90, rocm:gfx90a): compiled without its device */
    xc_target_resolution_t res;
    memset(&res, 0, sizeof res);
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
  o.progress = stdout;
  xc_conform_report_t r;
  char* uncovered = NULL;
  if (op_suite) {
    so.target = o.target;
    so.filter = o.filter;
    so.timeout_s = o.timeout_s;
    so.jobs = o.jobs;
    so.progress = stdout;
    if (dtypes) {
      s = xc_opsuite_parse_dtypes(dtypes, &so.dtypes);
      if (s) {
        int rc = xc_cli_usage_error(cmd, "%s", xc_status_message(s));
        xc_status_free(s);
        return rc;
      }
    }
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
  if (s) return xc_cli_fail(s);
  if (op_suite && r.num_cases == 0) {
    free(uncovered);
    xc_conform_report_free(&r);
    return xc_cli_errorf("--op-suite: no cases%s", so.filter ? " match the filter" : "");
  }
  if (r.num_cases == 0) {
    xc_conform_report_free(&r);
    return xc_cli_errorf("%s: no test folders (model.onnx) found%s", dir,
                         o.filter ? " matching the filter" : "");
  }
  /* The command that regenerates the markdown, quoted in its header. */
  char command[2048];
  size_t k = (size_t)snprintf(command, sizeof command, "xcomp");
  for (int i = 0; i < argc && k < sizeof command; i++)
    k += (size_t)snprintf(command + k, sizeof command - k, " %s", argv[i]);
  if (uncovered) printf("\nops not covered by a generator: %s\n", uncovered);
  free(uncovered);
  xc_conform_print_report(&r, false, stdout);
  if (report) s = write_file(report, &r, false, command);
  if (!s && markdown) s = write_file(markdown, &r, true, command);
  int failed = r.failed;
  xc_conform_report_free(&r);
  if (s) return xc_cli_fail(s);
  if (strict && failed > 0) return xc_cli_errorf("%d test%s failed (--strict)", failed, failed == 1 ? "" : "s");
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_conform_command = {
    "conform", conform_main,
    "xcomp conform [--target T] (--onnx-tests DIR | --models DIR [--dtype f16|bf16] | --op-suite "
    "[--seed N] [--cases-per-op N] [--dtypes LIST] [--list] [--compile-only]) [--filter REGEX] "
    "[--per-op N] [--report FILE] [--markdown FILE] [-j N] [--timeout S] [--strict] [--allow-tf32]",
    "Run test folders (model.onnx + test_data_set_N/) or the generated op suite and report conformance.",
    "DIR is one test folder, a folder of them (onnx-backend-tests/node), or a folder\n"
    "of such folders (the backend-test root with node/, simple/, ...).\n"
    "Each test prints PASS, FAIL (max-abs, max-ULP, which output) or UNSUPPORTED\n"
    "(what xcomp does not handle); then come totals per op and dtype and the line\n"
    "'N passed, N failed, N skipped'. A test that crashes or times out is a FAIL.\n"
    "\n"
    "options:\n"
    "  --target T        target to check (default: ref; `tiled`: lowered kernels on the\n"
    "                    tiled-IR interpreter)\n"
    "  --onnx-tests DIR  ONNX backend tests: rtol 1e-3, atol 1e-7, exact dtype and shape\n"
    "  --models DIR      exported models: the same, plus relative L2 error <= 1e-5\n"
    "                    (f32, f64; f16: 2e-3; bf16: 1.6e-2)\n"
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
    "  --compile-only    op suite: only lower and compile each case for an architecture\n"
    "                    (--target cuda:sm_90, rocm:gfx90a; no GPU needed); PASS means\n"
    "                    compiled, nothing runs\n"
    "  --filter REGEX    only tests whose name (path below DIR, or op-suite case name)\n"
    "                    matches (POSIX ERE)\n"
    "  --per-op N        --onnx-tests/--models: of the matching tests, run only the first\n"
    "                    N (name order) of each op and dtype (a sample for slow targets)\n"
    "  --report FILE     also write the full report to FILE\n"
    "  --markdown FILE   write the per-op table as Markdown (docs/conformance.md)\n"
    "  -j N, --jobs N    run N tests at a time (default 1)\n"
    "  --timeout S       seconds per test before it counts as TIMEOUT (default 60)\n"
    "  --strict          exit 1 when any test failed (default: exit 0)\n"
    "  --allow-tf32      compiled targets: f32 GEMMs may use tf32 tensor cores; f32\n"
    "                    outputs are then held to relative L2 <= 5e-4 (ARCHITECTURE.md)\n"};
