/* xcomp lowering: the fusion plan of an optimized graph becomes a list of
 * steps, each a tiled kernel launch or a zero-copy alias (pure views such as
 * Reshape/Flatten/Squeeze/Unsqueeze, whose output is the bytes of their
 * input). Everything a runtime needs to launch the kernels is here: which
 * graph value feeds each buffer parameter, and how each scalar parameter is
 * computed from the graph's (possibly symbolic) dims.
 *
 * The graph is borrowed: it must outlive the lowered module. Kernels are
 * owned by the module. A group that cannot be lowered is an XC_UNSUPPORTED
 * error naming the op and the group, never a silent fallback. */
#ifndef XCOMP_LOWER_H
#define XCOMP_LOWER_H

#include "xcomp/fusion.h"
#include "xcomp/graph.h"
#include "xcomp/tiled.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_lowered_kernel {
  int group;                     /* fusion-plan group id it came from */
  xc_tiled_kernel_t* kernel;     /* owned */
  /* One entry per kernel parameter, in the kernel's parameter order:
   * buffer parameters name a graph value (param_values[i] != NULL),
   * scalar parameters give an expression over graph dims (param_dims[i]). */
  int num_params;
  const xc_value_t** param_values;
  xc_dim_t* param_dims;
  int64_t* knobs;                /* chosen knob values, kernel->num_knobs of them */
  /* Index checks (xcomp/tiled.h, "index checks"): when num_index_checks > 0
   * the buffer parameter index_error_param (its param_values entry is NULL)
   * is the run's index-error record, i64[XC_INDEX_ERROR_WORDS *
   * num_index_error_slots] (the kernel writes its own slot). */
  int num_index_checks;
  int index_error_param;
} xc_lowered_kernel_t;

typedef enum xc_step_kind {
  XC_STEP_KERNEL = 0,            /* launch kernels[index] */
  XC_STEP_ALIAS,                 /* dst holds exactly the bytes of src */
} xc_step_kind_t;

typedef struct xc_lowered_step {
  xc_step_kind_t kind;
  int index;                     /* XC_STEP_KERNEL */
  const xc_value_t* dst;         /* XC_STEP_ALIAS */
  const xc_value_t* src;
} xc_lowered_step_t;

typedef struct xc_lowered_module {
  const xc_graph_t* graph;       /* borrowed */
  int num_kernels;
  xc_lowered_kernel_t* kernels;
  int num_steps;
  xc_lowered_step_t* steps;      /* in execution order */
  int num_index_error_slots;     /* kernels with index checks: slots of the index-error record */
} xc_lowered_module_t;

/* Lowers every group of plan (built from g) into steps. limits: the target's
 * limits for the default knob chooser (NULL: unlimited). */
xc_status_t xc_lower(const xc_graph_t* g, const xc_fusion_plan_t* plan,
                     const xc_tiled_limits_t* limits, xc_lowered_module_t** out);

typedef struct xc_lower_options {
  /* Leave out the index checks (xcomp/tiled.h, "index checks"): indices read
   * from tensors address memory unchecked, as before the checks existed.
   * For measuring what the checks cost only: an index out of range then
   * reads or writes outside its buffer. */
  bool no_index_checks;
} xc_lower_options_t;

/* xc_lower with options (NULL: the defaults, all zero). */
xc_status_t xc_lower_with(const xc_graph_t* g, const xc_fusion_plan_t* plan, const xc_tiled_limits_t* limits,
                          const xc_lower_options_t* options, xc_lowered_module_t** out);
void xc_lowered_module_destroy(xc_lowered_module_t* m);

/* Runs a lowered module with the tiled-IR interpreter (no target needed):
 * inputs[i] binds g->inputs[i]; outputs[i] receives a new tensor for
 * g->outputs[i]. The executable meaning of lowering, compared with the graph
 * interpreter by tests and by `xcomp conform --target tiled`. */
xc_status_t xc_lowered_run_interp(const xc_lowered_module_t* m, int num_inputs,
                                  const xc_tensor_t* const* inputs, xc_tensor_t** outputs);

#ifdef __cplusplus
}
#endif
#endif
