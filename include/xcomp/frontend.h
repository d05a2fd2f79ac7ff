/* xcomp frontends: load a model of any supported format. */
#ifndef XCOMP_FRONTEND_H
#define XCOMP_FRONTEND_H

#include "xcomp/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads .xir or .onnx by extension. The graph is verified with ops resolved
 * but not yet shape-inferred. Caller owns *out. */
xc_status_t xc_load_model(const char* path, xc_graph_t** out);

#ifdef __cplusplus
}
#endif
#endif
