/* Pieces shared by the runtime's files (not a public interface). */
#ifndef XCOMP_RUNTIME_INTERNAL_H
#define XCOMP_RUNTIME_INTERNAL_H

#include "xcomp/module.h"
#include "xcomp/runtime.h"

/* After the sections of m are filled in (by build or by parsing a file):
 * parses the graph text with its weights, points weight values at the graph's
 * constants, parses every kernel's tiled IR and checks that the plan agrees
 * with the kernels (parameter kinds and counts, knob values, indices). */
xc_status_t xc_cm_link(xc_compiled_module_t* m, const char* what);

/* The graph as .xir text with every non-empty constant in a separate weights
 * blob (the xir side-file layout). Both malloc'd. */
xc_status_t xc_cm_graph_to_text(const xc_graph_t* g, char** out_text, size_t* out_text_size,
                                uint8_t** out_weights, size_t* out_weights_size);

/* mkdir -p: creates dir and its missing parents. */
xc_status_t xc_rt_make_dirs(const char* dir);


#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

#endif
