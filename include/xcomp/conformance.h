/* xcomp conformance: numeric comparison of a computed tensor with a reference
 * tensor, and the runner of ONNX-backend-test-style test folders.
 *
 * The comparison is the single definition of "these numbers agree" used by
 * `xcomp compare`, `xcomp conform` and the tests. Its rules (see
 * docs/conformance.md and the conformance table of the architecture guide):
 *
 *  - dtype and shape must match exactly;
 *  - integers and bool must match exactly;
 *  - floats: a NaN in one tensor must be a NaN in the other (a NaN where the
 *    reference has none always fails), infinities must match in sign, and
 *    finite values must satisfy numpy's allclose |a - e| <= atol + rtol*|e|
 *    (e = reference) element by element;
 *  - optionally the relative L2 error ||a - e|| / ||e|| over the finite
 *    elements must not exceed max_rel_l2.
 *
 * The result always carries the max-abs error, the max-ULP error (measured in
 * the tensors' own dtype) and the relative L2 error, plus the first
 * mismatching element, so failures can be reported precisely. */
#ifndef XCOMP_CONFORMANCE_H
#define XCOMP_CONFORMANCE_H

#include <stdio.h>

#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_tolerance {
  double rtol;        /* allclose relative tolerance (floats) */
  double atol;        /* allclose absolute tolerance (floats) */
  bool check_allclose;/* apply the element-wise allclose check */
  double max_rel_l2;  /* relative L2 bound; checked when check_rel_l2 */
  bool check_rel_l2;
} xc_tolerance_t;

/* ONNX backend-test tolerance: rtol 1e-3, atol 1e-7, no L2 bound. */
void xc_tolerance_onnx(xc_tolerance_t* out);
/* The architecture guide's per-dtype rule for comparing a target with the
 * reference interpreter: f32 rel-L2 <= 1e-5 and allclose(1e-3, 1e-5); f16
 * rel-L2 <= 2e-3; bf16 rel-L2 <= 1.6e-2; f64 as f32; fp8 rel-L2 <= 1.25e-1;
 * integers and bool exact. */
void xc_tolerance_for_dtype(xc_dtype_t dtype, xc_tolerance_t* out);
/* The check of the reference interpreter against a real model's stored
 * output, which another implementation computed in the model's dtype (ONNX
 * Runtime: f32 arithmetic, its own summation order): floats by the relative
 * L2 bound of their dtype alone (f32 1e-5), integers and bool exact; NaN
 * and infinity rules as always. No element-wise allclose: logits near zero
 * carry the stored side's rounding (a few 1e-7 absolute) that no tolerance
 * of the interpreter's own can fix, while a wrong op moves the rel-L2 error
 * by orders of magnitude. Targets are still held to xc_tolerance_for_dtype
 * against the interpreter. */
void xc_tolerance_stored_model(xc_dtype_t dtype, xc_tolerance_t* out);

typedef struct xc_compare_result {
  bool ok;
  /* One line saying why it failed ("" when ok), e.g. "shape f32[2,3] vs
   * f32[3,2]", "NaN at [0,1] where the reference has 0.5". */
  char reason[256];
  int64_t num_mismatches;   /* elements failing the element-wise rules */
  int64_t first_mismatch;   /* flat index of the first one; -1 when none */
  double actual_at_first;   /* values there (as double) */
  double expected_at_first;
  double max_abs;           /* max |a - e| over elements (inf if an inf differs) */
  double max_ulp;           /* max ULP distance in the dtype (integers: |a - e|) */
  double rel_l2;            /* ||a - e|| / ||e|| over finite pairs (0 if both 0) */
} xc_compare_result_t;

/* Compares `actual` with the reference `expected`. Never fails for numeric
 * reasons: mismatches are reported in *out (out->ok false). Returns an error
 * only for unusable arguments (NULL tensors). */
xc_status_t xc_compare_tensors(const xc_tensor_t* actual, const xc_tensor_t* expected,
                               const xc_tolerance_t* tol, xc_compare_result_t* out);

/* Distance in units in the last place between two values of a float dtype,
 * given as raw bit patterns (low bits of the uint64; f16/bf16 16 bits, f32 32
 * bits, f64 64 bits, fp8 8 bits). Adjacent representable values are 1 apart;
 * +0 and -0 are 0 apart. Saturates at UINT64_MAX. NaN inputs give UINT64_MAX. */
uint64_t xc_ulp_distance_bits(xc_dtype_t dtype, uint64_t a_bits, uint64_t b_bits);
/* Same on values: rounds a and b into dtype first. */
uint64_t xc_ulp_distance(xc_dtype_t dtype, double a, double b);

/* "[1,0,2]" for a flat index into dims. Returns buf. */
const char* xc_format_index(int rank, const int64_t* dims, int64_t flat, char* buf,
                            size_t n);

/* ---- the test-folder runner ------------------------------------------- */

typedef enum xc_conform_verdict {
  XC_CONFORM_PASS = 0,
  XC_CONFORM_FAIL,
  XC_CONFORM_UNSUPPORTED,
  /* Set only by xc_conform_apply_xfail, never by a test run: a FAIL of a test
   * the xfail list expects to fail, and a PASS of one it expects to fail. */
  XC_CONFORM_XFAIL,
  XC_CONFORM_XPASS,
} xc_conform_verdict_t;

typedef struct xc_conform_options {
  const char* target;    /* only "ref" exists so far */
  const char* filter;    /* POSIX extended regex matched against the test name; NULL = all */
  bool models;           /* real models: the interpreter is checked against the
                            stored output by xc_tolerance_stored_model (not ONNX's
                            allclose), and tiled like the compiled targets: against
                            the interpreter by xc_tolerance_for_dtype */
  double timeout_s;      /* per test; <= 0 means 60 s */
  int jobs;              /* tests run concurrently; <= 0 means 1 */
  FILE* progress;        /* per-test lines as they finish (may be NULL) */
  /* F16 or BF16: the model's float32 tensors are converted to this dtype
   * (xc_convert_precision) before the target runs it, and its outputs are
   * compared with the f32 interpreter's at this dtype's rel-L2 bound.
   * XC_DTYPE_UNDEFINED or F32: as the model is. */
  xc_dtype_t dtype;
  bool allow_tf32;       /* compiled targets may run f32 GEMMs in tf32: f32 outputs are
                            compared at relative L2 <= 5e-4 (no allclose) */
  int per_op;            /* > 0: of the tests left by the filter, only the first per_op
                            (in name order) of each (main op, dtype) run; the others are
                            left out of the report (a sample for slow targets) */
  /* > 0: compiled targets compile as for a smaller device of theirs (at most
   * this much work-group memory, this many threads per work-group;
   * xc_session_options_t) and run on the real one: the schedulers' fallbacks
   * under test. */
  int64_t max_local_memory_bytes;
  int max_threads_per_group;
  /* Models: compile each for the architecture `target` names (cuda:sm_90,
   * rocm:gfx90a; no device needed: nothing runs) after the conversion of
   * `dtype`; PASS means compiled, a compile error is a FAIL. */
  bool compile_only;
} xc_conform_options_t;

void xc_conform_options_init(xc_conform_options_t* o);

typedef struct xc_conform_case {
  char* name;             /* path relative to the root, e.g. "node/test_abs" */
  char* dir;              /* full path of the test folder */
  char* op;               /* the test's main op, e.g. "Abs" ("?" if unknown) */
  xc_dtype_t dtype;       /* dtype of its first input (UNDEFINED if unknown) */
  xc_conform_verdict_t verdict;
  char* detail;           /* one line: why it failed or is unsupported */
  double seconds;
  char* xfail_reason;     /* the reason of the xfail entry it matched (NULL: none) */
} xc_conform_case_t;

typedef struct xc_conform_report {
  int num_cases;
  xc_conform_case_t* cases;   /* sorted by name */
  int passed, failed, skipped;
  int xfailed, xpassed;       /* XFAIL / XPASS cases (not in passed or failed) */
} xc_conform_report_t;

/* Finds every test folder under root (a folder holding model.onnx; root may
 * be one test, a folder of tests, or a folder of folders of tests) and runs
 * each matching the filter in a forked child with a timeout. A crash or a
 * timeout of a test is a FAIL of that test, never of the runner. Caller owns
 * *out (xc_conform_report_free). */
xc_status_t xc_conform_run(const char* root, const xc_conform_options_t* opt,
                           xc_conform_report_t* out);
void xc_conform_report_free(xc_conform_report_t* r);

/* Runs case `index` of a caller-made list in this process (a forked child
 * of xc_conform_run_cases): returns its verdict and a malloc'd one-line
 * detail (may be NULL). */
typedef xc_conform_verdict_t (*xc_conform_case_fn)(void* ctx, const xc_conform_case_t* c, int index,
                                                   char** out_detail);
/* Runs every case of r (name, op and dtype filled by the caller; dir may be
 * NULL) like xc_conform_run runs test folders: each in a forked child with
 * opt's timeout and job count, a crash or timeout is a FAIL. Fills verdict,
 * detail and seconds of each case and the totals; opt->filter and
 * opt->models are not used. */
xc_status_t xc_conform_run_cases(xc_conform_report_t* r, const xc_conform_options_t* opt,
                                 xc_conform_case_fn fn, void* ctx);

/* Runs one test folder in this process (what the child does). Returns the
 * verdict and a malloc'd one-line detail. */
xc_conform_verdict_t xc_conform_run_case(const char* dir, const xc_conform_options_t* opt,
                                         char** out_detail);

/* Writes the per-test lines (when include_cases), totals per op and dtype,
 * and the closing line "N passed, N failed, N skipped" (followed by
 * ", N xfail, N xpass" when the report has either). In the per-op totals an
 * XFAIL counts as failed and an XPASS as passed (what the target did). */
void xc_conform_print_report(const xc_conform_report_t* r, bool include_cases, FILE* f);
/* Writes the per-op table as Markdown (docs/conformance.md). `command` is the
 * command line that regenerates it, quoted in the header. */
void xc_conform_print_markdown(const xc_conform_report_t* r, const char* command,
                               FILE* f);
/* The same, titled "# xcomp conformance: TITLE" and saying the tests ran on
 * TITLE; title NULL: the reference interpreter (docs/conformance.md). */
void xc_conform_print_markdown_titled(const xc_conform_report_t* r, const char* command,
                                      const char* title, FILE* f);
/* The per-op Markdown table alone (op, dtype, passed, failed, skipped, first
 * reason skipped). */
void xc_conform_print_op_table_md(const xc_conform_report_t* r, FILE* f);
const char* xc_conform_verdict_name(xc_conform_verdict_t v);

/* ---- expected failures (the vendor conformance kit) ------------------- */

/* One entry of an xfail file: "NAME  # reason". NAME is a test name as the
 * reports print it (node tests "test_abs" below their folder, models "mlp",
 * op-suite cases "Relu.f32.[7,5]"); a trailing '*' makes it a prefix. */
typedef struct xc_xfail_entry {
  char* name;       /* without the trailing '*' */
  bool prefix;      /* the entry ended in '*' */
  char* reason;
  int line;         /* line in the file */
  int matches;      /* tests it matched (xc_conform_apply_xfail) */
} xc_xfail_entry_t;

typedef struct xc_xfail_list {
  char* path;
  int num_entries;
  xc_xfail_entry_t* entries;
} xc_xfail_list_t;

/* Reads an xfail file: one entry a line, "NAME  # reason" (NAME, whitespace,
 * '#', a non-empty reason); blank lines and lines starting with '#' are
 * skipped. A line without a reason, or a NAME holding '*' anywhere but at
 * its end, is an XC_INVALID_ARGUMENT error naming FILE:LINE. */
xc_status_t xc_xfail_load(const char* path, xc_xfail_list_t* out);
void xc_xfail_free(xc_xfail_list_t* l);
/* The first entry matching name (exact, or prefix for a '*' entry); NULL. */
xc_xfail_entry_t* xc_xfail_match(xc_xfail_list_t* l, const char* name);
/* Marks every case of r an entry matches: its reason goes to xfail_reason,
 * a FAIL becomes XFAIL and a PASS XPASS (UNSUPPORTED stays UNSUPPORTED), the
 * totals follow, and each entry's match count grows. */
void xc_conform_apply_xfail(xc_conform_report_t* r, xc_xfail_list_t* l);

/* ---- the kit's reports ------------------------------------------------- */

/* One suite of a conformance run: "node", "op-suite" or "models". */
typedef struct xc_conform_suite {
  const char* name;
  const char* source;               /* the folder, or "generated" */
  const char* skipped;              /* why the suite did not run; NULL: it ran */
  const xc_conform_report_t* report;/* NULL when skipped */
} xc_conform_suite_t;

/* What the reports say about the run. Strings may be NULL (written as null
 * or left out). */
typedef struct xc_conform_run_info {
  const char* target;
  const char* device_name;     /* xc_device_caps_t name/vendor/version */
  const char* device_vendor;
  const char* device_version;
  const char* arch;            /* compile-only targets: the architecture */
  const char* device_error;    /* why the device could not be described */
  const char* version;         /* xcomp's version */
  const char* commit;          /* git commit it was built from ("unknown") */
  const char* command;         /* the command line */
  const char* filter;
  const char* xfail_file;
  const char* dtypes;          /* op suite dtypes, e.g. "f32" */
  const char* model_dtype;     /* --dtype of the models; NULL: as exported */
  uint64_t seed;
  int per_op;                  /* node tests / models sample; 0: all */
  int cases_per_op;
  double timeout_s;
  int jobs;
  bool compile_only;
  bool allow_tf32;
} xc_conform_run_info_t;

/* "cpu (NAME, VERSION)": the target and its device as the report titles
 * name it, into buf. */
const char* xc_conform_target_title(const xc_conform_run_info_t* info, char* buf, size_t n);

/* Writes the JSON report (docs/conformance.md, "The vendor conformance kit")
 * of the suites to path. */
xc_status_t xc_conform_write_json(const char* path, const xc_conform_run_info_t* info,
                                  const xc_conform_suite_t* suites, int num_suites,
                                  const xc_xfail_list_t* xfail);
/* Writes the kit's Markdown report of the suites. */
void xc_conform_print_kit_markdown(const xc_conform_run_info_t* info, const xc_conform_suite_t* suites,
                                   int num_suites, const xc_xfail_list_t* xfail, FILE* f);

/* The op types of an ONNX model file, read straight from the protobuf wire
 * format (works even when the importer rejects the model). Returns a malloc'd
 * space-separated list of distinct op types in order of first use, the node
 * count, and the dtype of the first graph input (else of the first output;
 * XC_DTYPE_UNDEFINED when unknown); NULL if the file cannot be read or
 * parsed. */
char* xc_conform_scan_ops(const char* model_path, int* out_num_nodes, xc_dtype_t* out_dtype);

#ifdef __cplusplus
}
#endif
#endif
