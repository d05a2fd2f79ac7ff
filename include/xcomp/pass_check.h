/* xcomp pass checking: the semantics-preservation harness. It runs the
 * reference interpreter on a graph before any pass and again after every
 * pass of the pipeline that changed the graph, on several input sets, and
 * reports the first pass whose results disagree beyond the tolerance of the
 * output dtype (the conformance table of docs/conformance.md). */
#ifndef XCOMP_PASS_CHECK_H
#define XCOMP_PASS_CHECK_H

#include <stdio.h>

#include "xcomp/graph.h"
#include "xcomp/passes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_pass_check_options {
  xc_pass_options_t passes; /* pipeline to check (level, disabled passes) */
  int num_seeds;            /* random input sets besides the templates (default 3) */
  FILE* log;                /* one line per pass; NULL = quiet */
} xc_pass_check_options_t;

void xc_pass_check_options_init(xc_pass_check_options_t* o);

/* g must be verified and inferred; it is optimized in place. templates has
 * g->num_inputs entries (entries may be NULL): a template gives an input's
 * shape and the values of integer and bool inputs (token ids, masks), which
 * random sets keep; float inputs get uniform values in [-2, 2). Without a
 * template, symbolic dims are taken as 2 and integers as 0. When every input
 * has a template, the templates themselves are one more input set.
 * *out_failures counts (pass, input set, output) triples that disagreed. */
xc_status_t xc_pass_check(xc_graph_t* g, const xc_tensor_t* const* templates,
                          const xc_pass_check_options_t* o, int* out_failures);

#ifdef __cplusplus
}
#endif
#endif
