/* xcomp ONNX test cases: a folder in the layout of the ONNX backend tests,
 *
 *   <dir>/model.onnx
 *   <dir>/test_data_set_0/input_0.pb, input_1.pb, ...   (TensorProto files)
 *   <dir>/test_data_set_0/output_0.pb, ...
 *   <dir>/test_data_set_1/...
 *
 * loaded into an imported graph plus, for each data set, the input tensors
 * and the expected output tensors. input_K.pb is matched BY POSITION to
 * graph->inputs[K] (graph inputs that are also initializers are not graph
 * inputs in xcomp, so models listing them are handled by skipping those
 * positions); output_K.pb to graph->outputs[K]. Both sides are checked:
 * a count mismatch, or a tensor whose dtype differs from a typed graph value,
 * is an error naming the file.
 *
 * Errors keep the status code of their cause, so a caller can tell "xcomp does
 * not support this" (XC_UNSUPPORTED: unknown op, dtype, opset) from a broken
 * test folder (XC_INVALID_ARGUMENT, XC_NOT_FOUND, XC_DATA_LOSS...). */
#ifndef XCOMP_ONNX_TESTCASE_H
#define XCOMP_ONNX_TESTCASE_H

#include "xcomp/graph.h"
#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_onnx_test_data {
  char* dir;                /* path of the test_data_set_N folder */
  int num_inputs;           /* == graph->num_inputs */
  xc_tensor_t** inputs;     /* inputs[k] feeds graph->inputs[k] */
  int num_outputs;          /* == graph->num_outputs */
  xc_tensor_t** expected;   /* expected[k] is the reference for graph->outputs[k] */
} xc_onnx_test_data_t;

typedef struct xc_onnx_testcase {
  char* dir;                /* the test folder as given */
  char* name;               /* its last path component, e.g. "test_abs" */
  xc_graph_t* graph;        /* imported, verified, ops resolved, not inferred */
  int num_sets;             /* test_data_set_0 .. test_data_set_{num_sets-1} */
  xc_onnx_test_data_t* sets;
} xc_onnx_testcase_t;

/* Loads <dir>/model.onnx and every test_data_set_N (N = 0, 1, ... until the
 * first missing one). A folder without data sets loads with num_sets == 0.
 * Caller owns *out (xc_onnx_testcase_destroy). *out is NULL on error. */
xc_status_t xc_onnx_testcase_load(const char* dir, xc_onnx_testcase_t** out);
/* As above, importing the model with options (NULL = defaults), e.g. a
 * higher max_opset. */
struct xc_onnx_import_options;
xc_status_t xc_onnx_testcase_load_ex(const char* dir, const struct xc_onnx_import_options* opts,
                                     xc_onnx_testcase_t** out);

/* Frees everything, including the graph. NULL is fine. */
void xc_onnx_testcase_destroy(xc_onnx_testcase_t* tc);

#ifdef __cplusplus
}
#endif
#endif
