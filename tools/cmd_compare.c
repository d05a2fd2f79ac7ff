/* xcomp compare: check a tensor file against a reference tensor file with
 * numpy-allclose tolerances (plus equal NaN positions). */
#include <math.h>
#include <string.h>

#include "cli.h"
#include "xcomp/conformance.h"
#include "xcomp/tensor_io.h"

static int compare_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_compare_command;
  const char* files[2] = {NULL, NULL};
  int nfiles = 0;
  xc_tolerance_t tol;
  memset(&tol, 0, sizeof tol);
  tol.rtol = 1e-5;
  tol.atol = 1e-8;
  tol.check_allclose = true;
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m;
    double* target = NULL;
    const char* opt = argv[i];
    if ((m = xc_cli_option(argc, argv, &i, "--rtol", &v)) != 0)
      target = &tol.rtol;
    else if ((m = xc_cli_option(argc, argv, &i, "--atol", &v)) != 0)
      target = &tol.atol;
    else if ((m = xc_cli_option(argc, argv, &i, "--rel-l2", &v)) != 0) {
      target = &tol.max_rel_l2;
      tol.check_rel_l2 = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else if (nfiles < 2) {
      files[nfiles++] = argv[i];
      continue;
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    if (m < 0) return xc_cli_usage_error(cmd, "%s needs a value", opt);
    if (!xc_cli_parse_double(v, target) || *target < 0)
      return xc_cli_usage_error(cmd, "%s: '%s' is not a non-negative number", opt, v);
  }
  if (nfiles != 2) return xc_cli_usage_error(cmd, "expected two tensor files");
  xc_tensor_t* a = NULL;
  xc_tensor_t* e = NULL;
  xc_status_t s = xc_cli_check_file(files[0]);
  if (!s) s = xc_cli_check_file(files[1]);
  if (!s) s = xc_tensor_read_file(files[0], &a, NULL);
  if (!s) s = xc_tensor_read_file(files[1], &e, NULL);
  xc_compare_result_t r;
  if (!s) s = xc_compare_tensors(a, e, &tol, &r);
  if (s) {
    xc_tensor_destroy(a);
    xc_tensor_destroy(e);
    return xc_cli_fail(s);
  }
  char desc[128], idx[96];
  xc_tensor_describe(a, desc, sizeof desc);
  int rc = XC_EXIT_OK;
  if (r.ok) {
    printf("match: %s, max-abs %.6g, max-ULP %.0f, rel-L2 %.3g\n", desc, r.max_abs, r.max_ulp,
           r.rel_l2);
  } else {
    printf("mismatch: %s\n", r.reason);
    printf("  max-abs error:  %.6g\n", r.max_abs);
    printf("  max-ULP error:  %.0f\n", r.max_ulp);
    printf("  rel-L2 error:   %.6g\n", r.rel_l2);
    if (r.first_mismatch >= 0)
      printf("  first mismatch: %s (got %.9g, expected %.9g)\n",
             xc_format_index(a->rank, a->dims, r.first_mismatch, idx, sizeof idx),
             r.actual_at_first, r.expected_at_first);
    rc = xc_cli_errorf("%s and %s differ: %s", files[0], files[1], r.reason);
  }
  xc_tensor_destroy(a);
  xc_tensor_destroy(e);
  return rc;
}

const xc_cli_command_t xc_cli_compare_command = {
    "compare", compare_main, "xcomp compare ACTUAL REFERENCE [--rtol R] [--atol A] [--rel-l2 L]",
    "Compare a tensor file (.npy or .pb) with a reference; exit 0 when they agree.",
    "Dtype and shape must match exactly; integers and bool must be equal; float\n"
    "elements must satisfy numpy's allclose |a - r| <= atol + rtol * |r| with NaN\n"
    "exactly where the reference has NaN and infinities of the same sign.\n"
    "On a mismatch, prints the max-abs error, the max-ULP error (in the dtype) and\n"
    "the first mismatching index, and exits 1.\n"
    "\n"
    "options:\n"
    "  --rtol R     relative tolerance (default 1e-5, numpy's)\n"
    "  --atol A     absolute tolerance (default 1e-8, numpy's)\n"
    "  --rel-l2 L   also require ||a - r|| / ||r|| <= L\n"};
