/* xcomp graph passes and the pass manager.
 *
 * A pass rewrites a graph in place and must preserve what it computes. The
 * pass manager runs an ordered pipeline chosen by optimization level, lets
 * users disable passes by name, print the graph after a pass, and time
 * passes. After every pass the graph is re-verified and re-inferred, so a
 * pass that breaks the graph is caught at once and named. */
#ifndef XCOMP_PASSES_H
#define XCOMP_PASSES_H

#include <stdio.h>

#include "xcomp/graph.h"
#include "xcomp/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the pipeline reads from a target. A plain struct: later filled from
 * the target interface; xc_target_traits_init gives the defaults of the
 * reference target `ref` (NCHW, no tensor cores). */

typedef struct xc_target_traits {
  const char* name;           /* target name, e.g. "ref" */
  xc_layout_t preferred_layout;
  int64_t shared_mem_bytes;   /* shared/local memory per work-group */
  int max_fused_ops;          /* most compute ops in one kernel group (0 = no limit) */
  bool has_tensor_cores;
} xc_target_traits_t;

void xc_target_traits_init(xc_target_traits_t* t);
/* Traits of a named target ("ref"); error for unknown names. */
xc_status_t xc_target_traits_for(const char* target, xc_target_traits_t* t);

typedef struct xc_pass_options {
  int opt_level;               /* 0..3 */
  int num_disabled;
  const char* const* disabled; /* pass names not to run */
  const char* print_after;     /* pass name, or NULL */
  bool print_after_all;
  bool timing;                 /* per-pass wall time to `log` */
  FILE* log;                   /* where prints and timings go (default stderr) */
  /* Constant folding never creates a constant larger than this (bytes)... */
  int64_t fold_limit_bytes;
  /* ...except by a layout change of constants (Transpose, Cast, Reshape,
   * Flatten, Squeeze, Unsqueeze, Identity: the weight re-laid-out once at
   * compile time instead of at every run, e.g. the transposed embedding of
   * a tied LM head), up to this size. The source stays when other nodes use
   * it, so the module may then hold both layouts. */
  int64_t fold_layout_limit_bytes;
  xc_target_traits_t target;   /* defaults: xc_target_traits_init */
  /* convert-precision: run the model's float32 tensors in this dtype (f16,
   * bf16); XC_DTYPE_UNDEFINED (default) or f32 leaves the graph as it is. */
  xc_dtype_t precision;
} xc_pass_options_t;

void xc_pass_options_init(xc_pass_options_t* o);

typedef struct xc_pass {
  const char* name;
  const char* summary;
  int min_level;  /* runs at -O<min_level> and above */
  /* Sets *changed when the graph changed. */
  xc_status_t (*run)(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
} xc_pass_t;

int xc_pass_count(void);
const xc_pass_t* xc_pass_at(int i);
const xc_pass_t* xc_pass_find(const char* name);

/* Runs one pass, then compacts, re-verifies and re-infers the graph when it
 * changed. *changed (may be NULL) tells whether it did. */
xc_status_t xc_pass_apply(xc_graph_t* g, const xc_pass_t* p, const xc_pass_options_t* o,
                          bool* changed);
/* True when pass p runs in the pipeline under options o (level, disabled). */
bool xc_pass_enabled(const xc_pass_t* p, const xc_pass_options_t* o);

/* Runs the pipeline for o->opt_level. The graph must be verified and
 * inferred; it is again afterwards. Unknown names in `disabled` or
 * `print_after` are an error. */
xc_status_t xc_passes_run(xc_graph_t* g, const xc_pass_options_t* o);

/* Shape buckets (passes/padding.c): true when inputs padded with zeros
 * along every dim that is exactly `symbol` (index >= n up to a bucket size)
 * leave the outputs' positions below n as the unpadded run computes them,
 * so outputs sliced back to n are exact. g must be inferred with the
 * symbol left symbolic. Otherwise false, with the first node that could
 * not be followed (or the output that depends on padding) in why. */
bool xc_padding_check(xc_graph_t* g, const char* symbol, char* why, size_t why_size);

/* Individual passes (also reachable through the table). */
xc_status_t xc_pass_dce(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_cse(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_fold_constants(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_simplify(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
/* Zero Pad folded into the Conv it feeds (passes/pad_fold.c). */
xc_status_t xc_pass_pad_fold(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
/* Pattern recognition (passes/pattern_*.c, passes/bn_fold.c; docs/passes.md). */
xc_status_t xc_pass_pattern_gelu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_layer_norm(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_rms_norm(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_softmax(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_silu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_swiglu(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_bn_fold(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_layout(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
/* Converts every float32 tensor of g (inputs, initializers, attribute
 * tensors, Cast targets, hence every computed value and output) to dt (f16,
 * bf16, f64) and re-infers; f32 or UNDEFINED does nothing
 * (passes/convert_precision.c). The pass runs it with o->precision. */
xc_status_t xc_convert_precision(xc_graph_t* g, xc_dtype_t dt, bool* changed);
xc_status_t xc_pass_convert_precision(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
/* Attention and rotary embedding (passes/attention*.c, passes/rotary.c). */
xc_status_t xc_pass_pattern_rotary(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);
xc_status_t xc_pass_pattern_attention(xc_graph_t* g, const xc_pass_options_t* o, bool* changed);

#ifdef __cplusplus
}
#endif
#endif
