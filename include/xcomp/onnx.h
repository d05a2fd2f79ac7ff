/* xcomp ONNX importer: ModelProto -> graph IR. */
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

#ifdef __cplusplus
}
#endif
#endif
