/* xcomp driver: the one way to run the compile pipeline (docs/driver.md).
 *
 *   model --passes--> optimized graph --fusion--> plan --lowering--> lowered
 *     --schedule--> knobs --emit + compile (target)--> compiled module
 *     (+ the vendor-library race), through the compile cache.
 *
 * A compile session resolves its target string once (a present device, or an
 * architecture's nominal capabilities through the target's resolve_arch
 * entry), derives the fusion traits and the tiled limits from those
 * capabilities once, and then compiles any number of graphs or model files
 * with the same options. The CLI, conformance, the benches and the tests all
 * go through it; runtime/ below it only stores, loads and runs modules.
 *
 * This header names the pass-level types (graph passes, fusion plans,
 * lowered modules) only as incomplete structs: callers that look inside them
 * include xcomp/passes.h, fusion.h or lower.h themselves. */
#ifndef XCOMP_DRIVER_H
#define XCOMP_DRIVER_H

#include <stdbool.h>
#include <stdio.h>

#include "xcomp/graph.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xc_fusion_plan;     /* xcomp/fusion.h */
struct xc_lowered_module;  /* xcomp/lower.h */
struct xc_target_traits;   /* xcomp/passes.h */

/* ---- building a module from a lowered module ------------------------------------ */

/* How xc_compiled_module_build gets each kernel's source. */
typedef xc_status_t (*xc_cm_emit_fn)(void* ctx, const xc_tiled_kernel_t* kernel, const int64_t* knobs,
                                     xc_kernel_source_t* out_source);

typedef struct xc_cm_build_options {
  xc_compile_options_t compile;  /* passed to the target's compile */
  const char* dump_dir;          /* write <dir>/<kernel>.<ext> sources and .tiled text */
  FILE* progress;                /* one line per kernel compiled; NULL = quiet */
  /* NULL: the target's emitter. Set: this function supplies the source
   * (hand-written kernels in tests, other code generators). */
  xc_cm_emit_fn emit;
  void* emit_ctx;
} xc_cm_build_options_t;

void xc_cm_build_options_init(xc_cm_build_options_t* o);

/* Compiles every kernel of a lowered module for `target` / `caps` and builds
 * a module. The module takes a copy of the graph (re-parsed from its printed
 * form, so what is run is what a file holds). *kernels_compiled (may be
 * NULL) is incremented once per target compile. */
xc_status_t xc_compiled_module_build(const struct xc_lowered_module* lowered, xc_target_t* target,
                                     const xc_device_caps_t* caps, const xc_cm_build_options_t* o,
                                     int* kernels_compiled, xc_compiled_module_t** out);

/* ---- what the capabilities decide -------------------------------------------------- */

/* The tiled limits the default knob chooser and the verifier read for a
 * device (xc_target_tiled_limits in target.h). */
void xc_driver_tiled_limits(const xc_device_caps_t* caps, bool allow_tf32, xc_tiled_limits_t* out);
/* The traits the passes and the fusion planner read for a device of target
 * `name` (layout, shared memory, tensor cores). */
void xc_driver_target_traits(const char* name, const xc_device_caps_t* caps, struct xc_target_traits* out);

/* ---- sessions ------------------------------------------------------------------------ */

/* Replaces lowering (other lowering strategies, tests): given the optimized
 * graph and the session's limits (NULL: unlimited), produce a lowered
 * module; lower_free releases it. Hooks are not part of the cache key. */
typedef xc_status_t (*xc_session_lower_fn)(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                                           struct xc_lowered_module** out);
typedef void (*xc_session_lower_free_fn)(void* ctx, struct xc_lowered_module* lowered);

/* Loads a model whose bytes were hashed for the cache key (called on a miss
 * only). */
typedef xc_status_t (*xc_model_loader_fn)(void* ctx, xc_graph_t** out_graph);

typedef struct xc_session_options {
  /* "cpu", "opencl:1", "H200", "cuda:sm_90", "rocm:gfx90a", a plugin's
   * "npu:npu2" (xc_target_resolve); NULL or "ref": no device (the reference
   * traits, unlimited tiled limits: optimize, plan and lower only). */
  const char* target;
  int opt_level;                       /* graph pass pipeline level, 0..3 (default 2) */
  /* f16 / bf16: run the model's float32 tensors in this precision (the
   * convert-precision pass); XC_DTYPE_UNDEFINED (default): as written. */
  xc_dtype_t precision;
  const char* const* disabled_passes;  /* pass names not to run */
  int num_disabled_passes;
  const char* print_after;             /* print the graph to stderr after this pass */
  bool print_after_all;
  bool pass_timing;                    /* each pass's time on stderr */
  bool use_cache;                      /* default true (model files and bytes only) */
  const char* cache_dir;               /* NULL: xc_cache_dir() */
  /* Knob overrides "NAME=V[,NAME=V...]": every kernel with knob NAME takes
   * value V (a candidate of the knob). The CLI passes $XCOMP_KNOBS. */
  const char* knobs;
  /* GEMM groups a vendor library can compute are measured against the
   * generated kernel on the device (cuda: cuBLASLt) and the faster kept;
   * set to keep the generated kernels. */
  bool no_vendor_blas;
  /* Leave the index checks out of the generated kernels (xc_lower_options_t;
   * for measuring their cost: out-of-range indices then read and write out
   * of bounds). The CLI sets it from XCOMP_INDEX_CHECKS=off. */
  bool no_index_checks;
  xc_cm_build_options_t build;         /* compile options (allow_tf32, flags), dump folder, progress, emit */
  xc_session_lower_fn lower;           /* NULL: fusion plan + xc_lower */
  xc_session_lower_free_fn lower_free;
  void* lower_ctx;
  /* Tighter device limits than the device's own (0: the device's): the
   * session compiles as if the device had at most this much work-group
   * memory (static and opt-in) and this many threads per work-group. What a
   * smaller device of the same target would get; its schedules are checked
   * against these limits (tests of the schedulers' fallbacks). Part of the
   * compile-cache key through the capabilities. */
  int64_t max_local_memory_bytes;
  int max_threads_per_group;
  /* The tuning database (xcomp/tune.h, docs/autotune.md) schedules are
   * picked from: each kernel takes the best schedule recorded for its
   * task on this target and device, where one is recorded and the device
   * can follow it. NULL: <cache folder>/tuning.db when that file exists; a
   * path that does not exist is an error. What the database could supply is
   * part of the compile-cache key. */
  const char* tuning_db;
  bool no_tuning_db;                   /* no database: the schedulers' defaults */
  /* Input shapes to compile for, "NAME=DIMS[;NAME=DIMS...]"
   * (xc_graph_set_input_shapes): a model exported at one size compiled for
   * another where its shape constants allow (an error naming the node where
   * they do not), or symbolic dims made static. Part of the cache key.
   * NULL: the model's own shapes. */
  const char* input_shapes;
  /* Shape buckets, "NAME=MIN..MAX" (NAME a symbolic dim of the inputs, or
   * an input with one symbolic dim): model files compile into one module
   * holding the generic module and one specialization per size of
   * `buckets` ("64,128,256"; NULL: powers of two in range, and MAX), sizes
   * between buckets padded up where the padding check allows
   * (xc_padding_check). Both part of the cache key. NULL: no buckets. */
  const char* dynamic;
  const char* buckets;
} xc_session_options_t;

void xc_session_options_init(xc_session_options_t* o);

typedef struct xc_session xc_session_t;

/* Resolves the target and derives traits and limits. o is copied; the
 * strings it points to must outlive the session. */
xc_status_t xc_session_create(const xc_session_options_t* o, xc_session_t** out);
void xc_session_destroy(xc_session_t* s);

/* NULL for a session without a device ("ref"). */
xc_target_t* xc_session_target(const xc_session_t* s);
const xc_device_caps_t* xc_session_caps(const xc_session_t* s);
/* The present device compiled for; -1 for an architecture's nominal caps. */
int xc_session_device_index(const xc_session_t* s);
/* Modules are compiled for an architecture, not a device (XC_CM_ARCH_ONLY). */
bool xc_session_arch_only(const xc_session_t* s);
/* NULL: unlimited (sessions without a device). */
const xc_tiled_limits_t* xc_session_tiled_limits(const xc_session_t* s);
const struct xc_target_traits* xc_session_traits(const xc_session_t* s);
/* Cache counters over the session's compiles (kernels_compiled counts every
 * target compile, cached or not). */
const xc_cache_stats_t* xc_session_cache_stats(const xc_session_t* s);
/* Wall time (ms) of the session's creation (the target resolved and opened:
 * a device's driver initialized) and of its compiles' phases, summed over
 * them: what `xcomp: compiled in` reports per compile. Phases a cache hit
 * skips stay 0. */
typedef struct xc_compile_phases {
  double session_ms, load_ms, passes_ms, lower_ms, kernels_ms, vendor_ms, cache_ms;
} xc_compile_phases_t;
void xc_session_compile_phases(const xc_session_t* s, xc_compile_phases_t* out);

/* The pass pipeline on g (in place). */
xc_status_t xc_session_optimize(const xc_session_t* s, xc_graph_t* g);
/* The fusion plan of an optimized graph. */
xc_status_t xc_session_plan(const xc_session_t* s, const xc_graph_t* g, struct xc_fusion_plan** out);
/* Fusion, lowering and schedule (knob choice and overrides) of an optimized
 * graph. Release with xc_session_lowered_free. */
xc_status_t xc_session_lower(const xc_session_t* s, const xc_graph_t* g, struct xc_lowered_module** out);
void xc_session_lowered_free(const xc_session_t* s, struct xc_lowered_module* lowered);

/* The whole pipeline on a loaded graph (optimized in place), no cache. */
xc_status_t xc_session_compile_graph(xc_session_t* s, xc_graph_t* g, xc_compiled_module_t** out);
/* The model whose file holds bytes: a cache hit returns the stored module
 * without calling load; otherwise load() supplies the graph, which is
 * compiled and stored. Without the cache (use_cache false) the bytes are not
 * looked at and may be NULL. */
xc_status_t xc_session_compile_bytes(xc_session_t* s, const void* bytes, size_t size, xc_model_loader_fn load,
                                     void* load_ctx, xc_compiled_module_t** out);
/* A model file (.xir, .onnx), through the cache. */
xc_status_t xc_session_compile_model_file(xc_session_t* s, const char* path, xc_compiled_module_t** out);

/* The cache key of compiling model bytes for target_name / caps with the
 * options o (xcomp version and binary, the cpu compiler's identity, the
 * compile environment included). */
xc_hash128_t xc_compile_cache_key(const void* model_bytes, size_t model_size, const char* target_name,
                                  const xc_device_caps_t* caps, bool arch_only, const xc_session_options_t* o);

#ifdef __cplusplus
}
#endif
#endif
