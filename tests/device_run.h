/* Device tests of pattern programs (test_cuda_attention, test_cuda_gemm):
 * one graph on random inputs through the reference interpreter and through
 * a module compiled for a device target, compared at the output dtype's
 * tolerance (ARCHITECTURE.md). Include after test.h. */
#ifndef XCOMP_TESTS_DEVICE_RUN_H
#define XCOMP_TESTS_DEVICE_RUN_H

#include <stdint.h>

#include "xcomp/conformance.h"
#include "xcomp/driver.h"
#include "xcomp/interp.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

static uint64_t xc_test_rng = 0x9e3779b97f4a7c15ull;
static double xc_test_rnd(void) {
  xc_test_rng ^= xc_test_rng << 13, xc_test_rng ^= xc_test_rng >> 7, xc_test_rng ^= xc_test_rng << 17;
  return (double)(xc_test_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static xc_graph_t* xc_test_parse(const char* text) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), "case.xir", NULL, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  return g;
}

/* Compiles `text` with options o (o->target the device's target), runs the
 * first output on inputs uniform in [-2, 2) and compares it with the
 * interpreter's into *r (r->ok false when anything failed). *module keeps
 * the compiled module (the caller destroys it), NULL: not kept. */
static void xc_test_device_run(const char* text, const xc_session_options_t* o, xc_compiled_module_t** module,
                               xc_compare_result_t* r) {
  enum { MAXIN = 4 };
  memset(r, 0, sizeof *r);
  if (module) *module = NULL;
  xc_graph_t* g = xc_test_parse(text);
  if (!g) return;
  int ni = g->num_inputs < MAXIN ? g->num_inputs : MAXIN;
  xc_tensor_t* in[MAXIN] = {NULL};
  xc_dtype_t dt = g->outputs[0]->dtype;
  for (int j = 0; j < ni; j++) {
    const xc_value_t* v = g->inputs[j];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
    CHECK_OK(xc_tensor_create(v->dtype, v->rank, dims, &in[j]));
    for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, 2.0 * xc_test_rnd());
  }
  xc_tensor_t* want[1] = {NULL};
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
  xc_compiled_module_t* m = NULL;
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(o, &session);
  if (!s) s = xc_session_compile_graph(session, g, &m);
  xc_session_destroy(session);
  CHECK_OK(s);
  xc_graph_destroy(g);
  xc_executor_t* ex = NULL;
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.poison = true;
  if (m) CHECK_OK(xc_executor_create(m, o->target, &eo, &ex));
  xc_tensor_t* got[1] = {NULL};
  if (ex) CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
  if (got[0] && want[0]) {
    xc_tolerance_t tol;
    xc_tolerance_for_dtype(dt, &tol);
    CHECK_OK(xc_compare_tensors(got[0], want[0], &tol, r));
  }
  xc_tensor_destroy(got[0]);
  xc_tensor_destroy(want[0]);
  for (int j = 0; j < ni; j++) xc_tensor_destroy(in[j]);
  xc_executor_destroy(ex);
  if (module) *module = m;
  else xc_compiled_module_destroy(m);
}

#endif
