/* Pieces shared by the runtime's files (not a public interface). */
#ifndef XCOMP_RUNTIME_INTERNAL_H
#define XCOMP_RUNTIME_INTERNAL_H

#include <stdio.h>

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

/* The launch of kernel step `index` under binds: the values of its buffer
 * parameters in order (values[], *num_values), its scalar arguments, grid and
 * threads per program (threads > 1 only when max_threads_per_group > 1), and
 * whether the grid is empty (nothing to launch). The executor's rule, shared
 * with the vendor-GEMM measurement. */
typedef struct xc_rt_step_launch {
  int values[XC_TARGET_MAX_ARGS];
  int num_values;
  int64_t scalars[XC_TARGET_MAX_ARGS];
  int num_scalars;
  int64_t grid[3], threads[3];
  bool empty;
} xc_rt_step_launch_t;
xc_status_t xc_rt_step_launch(const xc_compiled_module_t* m, int index, const xc_symbind_t* binds,
                              int max_threads_per_group, xc_rt_step_launch_t* out);

/* Vendor GEMMs (vendor.c): for each kernel of lm, whether its group is a
 * GEMM a vendor library can compute (has[i]) and how (cands[i]). */
struct xc_fusion_plan;
struct xc_lowered_module;
void xc_rt_vendor_candidates(const struct xc_fusion_plan* plan, const struct xc_lowered_module* lm, bool allow_tf32,
                             bool* has, xc_vendor_gemm_t* cands);
/* Measures each candidate against the generated kernel on a device of
 * `target` with capabilities caps (outputs compared first) and keeps the
 * faster one in m (blob, entry). Notes go to progress. Does nothing when no
 * device of the target has these capabilities. */
xc_status_t xc_rt_vendor_choose(xc_compiled_module_t* m, xc_target_t* target, const xc_device_caps_t* caps,
                                const bool* has, const xc_vendor_gemm_t* cands, FILE* progress);


#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

#endif
