/* xcomp runtime: runs compiled modules (xcomp/module.h) on a device, plans
 * their memory, and compiles models through an on-disk cache
 * (docs/runtime.md).
 *
 *   executor   loads a module's kernels and weights on a device once, then
 *              runs it on input tensors: binds symbolic dims from the input
 *              shapes, plans buffers (liveness-based reuse, aliases share),
 *              launches the steps in order and downloads the outputs.
 *   memplan    the static memory plan for one binding of the symbols.
 *   cache      compiled modules keyed by everything that decides them.
 *   compile    model -> optimized graph -> fusion plan -> lowered -> compiled
 *              module, through the cache. */
#ifndef XCOMP_RUNTIME_H
#define XCOMP_RUNTIME_H

#include <stdio.h>

#include "xcomp/module.h"
#include "xcomp/passes.h"
#include "xcomp/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory plan ------------------------------------------------------------ */

/* Where each value of a module lives for one shape binding. Values are
 * inputs (their own buffers, written per run), weights (uploaded once), or
 * slots: device buffers shared by values whose lifetimes do not overlap. */
typedef struct xc_memplan {
  int num_values;
  int64_t* value_bytes;  /* per value, evaluated from its dims */
  int* value_slot;       /* slot index for planned values; -1 for inputs/weights */
  int* value_root;       /* the value whose buffer this one uses (aliases) */
  int num_slots;
  int64_t* slot_bytes;   /* size of each slot buffer */
  int64_t planned_bytes; /* sum of slot sizes: the intermediates' peak */
  int64_t unplanned_bytes; /* sum of every planned value's size (no reuse) */
} xc_memplan_t;

/* Plans m for the symbol binding (every symbol of every value must be bound).
 * Greedy in step order: a value takes the best-fitting free slot (else grows
 * the largest free slot, else a new one) when its first step runs and frees
 * it after its last use; aliases join their source's lifetime. Graph outputs
 * live to the end. Outputs of a step never share a slot with its inputs. */
xc_status_t xc_memplan_build(const xc_compiled_module_t* m, const xc_symbind_t* binds, xc_memplan_t* out);
void xc_memplan_free(xc_memplan_t* p);

/* ---- executor --------------------------------------------------------------- */

typedef struct xc_executor_options {
  /* Fill every planned buffer with 0xFF bytes (NaN for floats) before each
   * run, so a kernel that skips part of its output shows up. */
  bool poison;
  /* Guard every buffer the executor allocates (weights, inputs, slots) with
   * XC_EXECUTOR_GUARD_BYTES of 0xA5 right after the bytes it holds, filled
   * before each run and checked after it: a kernel that wrote past the end
   * of a buffer makes the run fail (XC_INTERNAL, naming the buffer). Also
   * makes small over-reads land in owned memory. */
  bool guard;
  /* Run on a device whose capability fingerprint differs from the one the
   * module was compiled for (normally refused: code may not fit it). */
  bool ignore_fingerprint;
  /* Launch kernel by kernel even on devices that can capture the launch
   * sequence once and replay it as one launch graph (CUDA Graphs). */
  bool no_graphs;
} xc_executor_options_t;

#define XC_EXECUTOR_GUARD_BYTES 256
#define XC_EXECUTOR_GUARD_BYTE 0xA5

void xc_executor_options_init(xc_executor_options_t* o);

typedef struct xc_executor xc_executor_t;

typedef struct xc_run_stats {
  double total_ms;      /* whole run: binding, uploads, launches, downloads */
  double kernels_ms;    /* from the first launch to the end of the last */
  double issue_ms;      /* host time spent issuing the launches (or the graph replay):
                           the launch overhead the host pays, kernels not awaited */
  int64_t peak_bytes;   /* device bytes held during the run: weights + inputs + slots */
  int64_t planned_bytes;   /* slots alone */
  int64_t unplanned_bytes; /* what the intermediates would take without reuse */
  int launches;
  /* How the launches went: replayed as a launch graph (captured in this run
   * when graph_captured), else one by one; graph_note says why not when the
   * device can capture but capture failed. */
  bool graph_replayed;
  bool graph_captured;
  char graph_note[160];
} xc_run_stats_t;

/* Opens the device `selector` names (NULL or "": the module's target,
 * device 0) and loads m on it: the module's kernels and its weights. The
 * device must belong to the module's target. m must outlive the executor. */
xc_status_t xc_executor_create(const xc_compiled_module_t* m, const char* selector,
                               const xc_executor_options_t* o, xc_executor_t** out);
void xc_executor_destroy(xc_executor_t* e);
xc_device_t* xc_executor_device(xc_executor_t* e);

/* Runs once: inputs[i] binds graph input i (dtype and shape checked, which
 * binds the symbols); outputs[i] receives a new tensor (caller destroys).
 * stats may be NULL. */
xc_status_t xc_executor_run(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs,
                            xc_tensor_t** outputs, xc_run_stats_t* stats);

/* ---- cache -------------------------------------------------------------------- */

typedef struct xc_cache_stats {
  int hits, misses, corrupt, stores;
  int kernels_compiled; /* target compiles run by xc_runtime_compile */
} xc_cache_stats_t;

/* The cache folder: $XCOMP_CACHE_DIR, else $HOME/.cache/xcomp (into out). */
xc_status_t xc_cache_dir(char* out, size_t size);
/* Looks key up under dir: NULL status and *out set on a hit; NULL status and
 * *out NULL on a miss. A corrupt or unreadable entry is a miss (counted in
 * stats->corrupt) and is removed. */
xc_status_t xc_cache_lookup(const char* dir, xc_hash128_t key, xc_cache_stats_t* stats,
                            xc_compiled_module_t** out);
/* Stores m under key (temp file + rename; the folder is created). */
xc_status_t xc_cache_store(const char* dir, xc_hash128_t key, const xc_compiled_module_t* m,
                           xc_cache_stats_t* stats);
/* Path of the entry for key (into out). */
void xc_cache_entry_path(const char* dir, xc_hash128_t key, char* out, size_t size);

/* ---- compile -------------------------------------------------------------------- */

typedef struct xc_compile_request {
  const char* target;          /* selector: "cpu", "opencl:1" */
  /* Optional: a target and capabilities the caller resolved itself, for
   * compile-only selectors such as "cuda:sm_90" on a machine without that
   * device. NULL: `target` is resolved through the registry. */
  xc_target_t* resolved_target;
  const xc_device_caps_t* resolved_caps;
  /* resolved_caps are an architecture's nominal capabilities, not a present
   * device's: the module is marked XC_CM_ARCH_ONLY. */
  bool resolved_for_arch;
  int opt_level;               /* graph pass pipeline level (default 2) */
  /* f16 / bf16: run the model's float32 tensors in this precision (the
   * convert-precision pass); XC_DTYPE_UNDEFINED (default): as written. */
  xc_dtype_t precision;
  bool use_cache;              /* default true */
  const char* cache_dir;       /* NULL: xc_cache_dir() */
  xc_cm_build_options_t build; /* compile options, dump folder, progress */
  /* GEMM groups a vendor library can compute are measured against the
   * generated kernel on the device and the faster one is kept, where a device
   * of the target is present and reports has_vendor_blas (cuda: cuBLASLt).
   * Set to keep the generated kernels (`--no-vendor-blas`). */
  bool no_vendor_blas;
  /* NULL: xc_lower. Set: lowers the optimized graph instead (other lowering
   * strategies, tests); lower_free then releases its result. Hooks are not
   * part of the cache key. */
  xc_status_t (*lower)(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                       xc_lowered_module_t** out);
  void (*lower_free)(void* ctx, xc_lowered_module_t* lowered);
  void* lower_ctx;
} xc_compile_request_t;

void xc_compile_request_init(xc_compile_request_t* r);

/* Loads a model from its bytes' file: supplied by the caller (the frontend
 * lives above the runtime). */
typedef xc_status_t (*xc_model_loader_fn)(void* ctx, xc_graph_t** out_graph);

/* The cache key of a compile (model bytes, target, device fingerprint,
 * options, xcomp version, compiler identity). */
xc_hash128_t xc_compile_cache_key(const void* model_bytes, size_t model_size, const char* target_name,
                                  const xc_device_caps_t* caps, const xc_compile_request_t* r);

/* Compiles the model whose file holds model_bytes: a cache hit returns the
 * stored module without loading the model; otherwise load() is called, the
 * graph is optimized, fused, lowered and every kernel compiled, and the
 * result is stored. stats (may be NULL) accumulates. */
xc_status_t xc_runtime_compile(const void* model_bytes, size_t model_size, xc_model_loader_fn load,
                               void* load_ctx, const xc_compile_request_t* r, xc_cache_stats_t* stats,
                               xc_compiled_module_t** out);

/* Compiles an already loaded graph (consumed: optimized in place) with no
 * cache. */
xc_status_t xc_runtime_compile_graph(xc_graph_t* g, xc_target_t* target, const xc_device_caps_t* caps,
                                     const xc_compile_request_t* r, int* kernels_compiled,
                                     xc_compiled_module_t** out);

#ifdef __cplusplus
}
#endif
#endif
