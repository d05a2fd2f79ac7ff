/* xcomp ONNX importer: ModelProto -> graph IR.
 *
 * Models of default-domain opsets 11 to 23 are accepted; nodes written for
 * older op versions are rewritten into the latest form the op registry
 * defines (axes/split/pads/min/max/k attributes become constant inputs,
 * opset < 13 Softmax family becomes Flatten + op + Reshape, ...). Graph inputs
 * that are also initializers become initializers. dim_param names become
 * symbolic dims; dims with neither value nor name get fresh symbols. Nodes
 * keep their ONNX name (or a generated one) and the model path as
 * provenance. Errors name the node, value or tensor at fault. */
#ifndef XCOMP_ONNX_H
#define XCOMP_ONNX_H

#include "xcomp/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Imports an ONNX model file. External data is resolved relative to the
 * model's folder. The result is verified, with ops resolved, but not
 * shape-inferred. Caller owns *out. */
xc_status_t xc_onnx_import_file(const char* path, xc_graph_t** out);
/* Imports from memory; base_dir (may be NULL) resolves external data. */
xc_status_t xc_onnx_import_buffer(const void* data, size_t size, const char* what,
                                  const char* base_dir, xc_graph_t** out);

typedef struct xc_onnx_import_options {
  /* Keep nodes whose op the registry lacks instead of failing (for tools that
   * only inspect a model). The graph is then toposorted but neither resolved
   * nor verified, and such nodes have op == NULL. */
  bool allow_unknown_ops;
  /* Highest default-domain opset accepted; 0 = XC_ONNX_MAX_OPSET. Newer
   * opsets mostly widen type constraints, but the IR only promises opset-23
   * semantics, so accepting them is the caller's decision. */
  int64_t max_opset;
} xc_onnx_import_options_t;

/* Default-domain opsets the importer accepts by default. */
#define XC_ONNX_MIN_OPSET 11
#define XC_ONNX_MAX_OPSET 23

/* As above with options (NULL = defaults). */
xc_status_t xc_onnx_import_file_ex(const char* path, const xc_onnx_import_options_t* opts,
                                   xc_graph_t** out);
xc_status_t xc_onnx_import_buffer_ex(const void* data, size_t size, const char* what,
                                     const char* base_dir,
                                     const xc_onnx_import_options_t* opts, xc_graph_t** out);

#ifdef __cplusplus
}
#endif
#endif
