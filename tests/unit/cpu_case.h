/* Shared harness of the cpu kernel tests (test_cpu_pack, test_cpu_reduce, test_cpu_rows,
 * test_cpu_spread; test_vec_chunks takes its folder removal): a graph's inputs from a fixed generator, its reference
 * outputs from the interpreter, a compile for the cpu target with knob
 * overrides and an optional kernel-dump folder, runs on an executor with
 * poisoned intermediates, and the f32 comparison. Header-only (static
 * inline): each test is one translation unit. */
#ifndef XCOMP_TESTS_CPU_CASE_H
#define XCOMP_TESTS_CPU_CASE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/driver.h"
#include "xcomp/interp.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

enum { CPU_CASE_MAX_IN = 4 };

/* Uniform in [-1, 1) from a fixed xorshift stream. */
static inline double cpu_case_rnd(void) {
  static uint64_t rng = 0x9e3779b97f4a7c15ull;
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Parses and infers `text`; NULL (a failed check) when it does not parse. */
static inline xc_graph_t* cpu_case_parse(const char* text, const char* file) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), file, NULL, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  return g;
}

/* The graph's inputs (at most CPU_CASE_MAX_IN, static dims), elements
 * offset + cpu_case_rnd(); their number. */
static inline int cpu_case_inputs(const xc_graph_t* g, double offset, xc_tensor_t** in) {
  int ni = g->num_inputs < CPU_CASE_MAX_IN ? g->num_inputs : CPU_CASE_MAX_IN;
  for (int j = 0; j < ni; j++) {
    const xc_value_t* v = g->inputs[j];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
    in[j] = NULL;
    CHECK_OK(xc_tensor_create(v->dtype, v->rank, dims, &in[j]));
    for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, offset + cpu_case_rnd());
  }
  return ni;
}

/* Output 0 of g on the inputs by the reference interpreter (NULL on failure). */
static inline xc_tensor_t* cpu_case_reference(const xc_graph_t* g, int ni, xc_tensor_t* const* in) {
  xc_tensor_t* want[1] = {NULL};
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
  return want[0];
}

/* g compiled for the cpu without the cache, with `knobs` (XCOMP_KNOBS-style,
 * NULL: the defaults) and, when dump_dir is set, each kernel's source there. */
/* The graph pass level of the next compiles (-1: the default). */
static int cpu_case_opt_level = -1;

static inline xc_compiled_module_t* cpu_case_compile(xc_graph_t* g, const char* knobs, const char* dump_dir) {
  xc_session_options_t o;
  xc_session_options_init(&o);
  if (cpu_case_opt_level >= 0) o.opt_level = cpu_case_opt_level;
  o.target = "cpu";
  o.use_cache = false;
  o.knobs = knobs;
  o.build.dump_dir = dump_dir;
  xc_compiled_module_t* m = NULL;
  xc_session_t* s = NULL;
  CHECK_OK(xc_session_create(&o, &s));
  if (s) CHECK_OK(xc_session_compile_graph(s, g, &m));
  xc_session_destroy(s);
  return m;
}

/* Runs m `runs` times on one executor (intermediates poisoned) and checks
 * output 0 against want at f32's tolerance each time; prints one line per
 * run, `label` first. */
static inline void cpu_case_run(const xc_compiled_module_t* m, int runs, int ni, xc_tensor_t* const* in,
                                const xc_tensor_t* want, const char* label) {
  xc_executor_t* ex = NULL;
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.poison = true;
  if (m) CHECK_OK(xc_executor_create(m, "cpu", &eo, &ex));
  for (int run = 0; run < runs && ex; run++) {
    xc_tensor_t* got[1] = {NULL};
    CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
    if (got[0] && want) {
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(XC_F32, &tol);
      xc_compare_result_t r;
      CHECK_OK(xc_compare_tensors(got[0], want, &tol, &r));
      printf("cpu: %s%s: rel-L2 %.3g, max-abs %.3g %s\n", label, runs > 1 ? (run ? ", run 2+" : ", run 1") : "",
             r.rel_l2, r.max_abs, r.ok ? "ok" : r.reason);
      CHECK(r.ok);
    } else {
      CHECK(got[0] != NULL);
    }
    xc_tensor_destroy(got[0]);
  }
  CHECK(ex != NULL);
  xc_executor_destroy(ex);
}

/* Frees what cpu_case_inputs and cpu_case_reference made. */
static inline void cpu_case_free(int ni, xc_tensor_t** in, xc_tensor_t* want) {
  xc_tensor_destroy(want);
  for (int j = 0; j < ni; j++) xc_tensor_destroy(in[j]);
}

/* A case whose emitted source is checked: text parsed, its inputs (offset +
 * cpu_case_rnd()), the interpreter's output 0 and a cpu compile with knobs,
 * its kernels dumped into a temporary folder whose first source `*src`
 * points at (cpu_case_dumped_source's buffer); the folder is removed. NULL
 * (a failed check) when the text does not parse or the compile fails, the
 * inputs and want then freed (*ni 0). */
static inline xc_compiled_module_t* cpu_case_build(const char* text, const char* file, const char* knobs,
                                                   double offset, int* ni, xc_tensor_t** in, xc_tensor_t** want,
                                                   const char** src);
static inline void cpu_case_remove_dir(const char* dir);

/* Whether an emitted source copies a tile row by row (rows_split): each
 * row's mask tested at its two ends. */
static inline bool cpu_case_rows_split(const char* src) {
  return strstr(src, "if (xrows") != NULL || strstr(src, "if (XC_UNLIKELY(!xrows") != NULL;
}

/* Runs m once against want, then frees the inputs, want and m. */
static inline void cpu_case_check_free(xc_compiled_module_t* m, int ni, xc_tensor_t** in, xc_tensor_t* want,
                                       const char* label) {
  cpu_case_run(m, 1, ni, in, want, label);
  cpu_case_free(ni, in, want);
  xc_compiled_module_destroy(m);
}

/* Registers the targets; false (printing SKIP and the reason) when this
 * host has no cpu target (no C compiler). */
static inline bool cpu_case_have_cpu(void) {
  CHECK_OK(xc_targets_init());
  xc_target_t* t = NULL;
  int index = 0;
  xc_status_t s = xc_target_find("cpu", &t, &index);
  if (!s) return true;
  printf("SKIP cpu: %s\n", xc_status_message(s));
  xc_status_free(s);
  return false;
}

/* The emitted C source in dir (the first .c file), NUL-terminated in a
 * static buffer; "" when there is none. */
static inline const char* cpu_case_dumped_source(const char* dir) {
  static char buf[1 << 20];
  buf[0] = 0;
  DIR* d = opendir(dir);
  if (!d) return buf;
  struct dirent* de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n < 3 || strcmp(de->d_name + n - 2, ".c")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE* f = fopen(path, "rb");
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    break;
  }
  closedir(d);
  return buf;
}

/* Removes a flat folder and its files. */
static inline void cpu_case_remove_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  struct dirent* de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static inline xc_compiled_module_t* cpu_case_build(const char* text, const char* file, const char* knobs,
                                                   double offset, int* ni, xc_tensor_t** in, xc_tensor_t** want,
                                                   const char** src) {
  xc_graph_t* g = cpu_case_parse(text, file);
  *src = "";
  *ni = 0;
  *want = NULL;
  if (!g) return NULL;
  *ni = cpu_case_inputs(g, offset, in);
  *want = cpu_case_reference(g, *ni, in);
  char dir[] = "/tmp/xc-case-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  xc_compiled_module_t* m = cpu_case_compile(g, knobs, dir);
  xc_graph_destroy(g);
  *src = cpu_case_dumped_source(dir);
  cpu_case_remove_dir(dir);
  if (!m) {
    cpu_case_free(*ni, in, *want);
    *ni = 0, *want = NULL;
  }
  return m;
}

#endif
