/* xcomp op-level conformance suite: small graphs generated from a seed, one
 * op (or one fused chain) each, run on a target and compared with the
 * reference interpreter at the tolerance of the dtype (docs/conformance.md).
 *
 * Cases are generated per (generator, dtype, case number) from a generator
 * of its own seeded by (seed, generator name, dtype, case number), so a case
 * does not change when others are filtered out or more are asked for. A
 * case's name says the op, the dtype, the input shapes and the attributes,
 * e.g. "ReduceSum.f16.[13,31].axes=1.keepdims=0"; --filter on it reruns it
 * alone. Generators exist per op family; every op of the registry without
 * one is tried with a generic unary or binary generator, and ops neither
 * fits are listed as not covered. What a target cannot lower or compile is
 * reported UNSUPPORTED (never passed). */
#ifndef XCOMP_OPSUITE_H
#define XCOMP_OPSUITE_H

#include <stdio.h>

#include "xcomp/conformance.h"
#include "xcomp/graph.h"
#include "xcomp/driver.h"
#include "xcomp/target.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_opsuite_options {
  const char* target;    /* "ref", "tiled", or a target selector (cpu, opencl:0, cuda) */
  uint64_t seed;         /* default 1 */
  int cases_per_op;      /* per op and dtype; default 3 */
  uint32_t dtypes;       /* XC_DT(...) mask of main-input dtypes; 0: f32 */
  const char* filter;    /* POSIX ERE on the case name; NULL: all */
  double timeout_s;      /* per case; default 60 */
  int jobs;              /* cases at a time; default 1 */
  FILE* progress;        /* per-case lines as they finish (may be NULL) */
  bool in_process;       /* run cases in this process, no fork (tests, debugging) */
  /* Compile only: each case is lowered and compiled for `target`, an
   * architecture without its device (rocm:gfx90a, cuda:sm_90, resolved as
   * xcomp compile resolves it), and nothing runs; PASS means "compiled", a
   * compile error is FAIL, a declined case UNSUPPORTED. */
  bool compile_only;
  /* Test hooks (checks that the suite catches broken targets):
   *  perturb  multiply every float output of the target by (1 + perturb)
   *           before the comparison;
   *  lower    replaces lowering for compiled targets (xc_session_options_t). */
  double perturb;
  xc_session_lower_fn lower;
  xc_session_lower_free_fn lower_free;
  void* lower_ctx;
} xc_opsuite_options_t;

void xc_opsuite_options_init(xc_opsuite_options_t* o);

/* Parses "f32,f16,bf16,i32" (or "all": every dtype; "default": f32, f16,
 * bf16, i32, i64, i8, u8, bool) into an XC_DT mask. */
xc_status_t xc_opsuite_parse_dtypes(const char* list, uint32_t* out);

/* Lists the cases the options select (names, op, dtype; verdicts unset),
 * without running them. *uncovered (may be NULL) receives a malloc'd
 * comma-separated list of registry ops no generator covers. */
xc_status_t xc_opsuite_list(const xc_opsuite_options_t* o, xc_conform_report_t* out, char** uncovered);

/* Generates and runs the selected cases (each in a forked child unless
 * o->in_process) and fills the report: per-case verdicts, totals. */
xc_status_t xc_opsuite_run(const xc_opsuite_options_t* o, xc_conform_report_t* out, char** uncovered);

/* Builds case `name` (as listed) into a graph and its inputs: for tests and
 * for reproducing a case by hand. Caller destroys the graph and tensors. */
xc_status_t xc_opsuite_build(const xc_opsuite_options_t* o, const char* name, xc_graph_t** out_graph,
                             int* out_num_inputs, xc_tensor_t*** out_inputs);

#ifdef __cplusplus
}
#endif
#endif
