/* xcomp runtime: runs compiled modules (xcomp/module.h) on a device, plans
 * their memory, and compiles models through an on-disk cache
 * (docs/runtime.md).
 *
 *   executor   loads a module's kernels and weights on a device once, then
 *              runs it on input tensors: binds symbolic dims from the input
 *              shapes, plans buffers (liveness-based reuse, aliases share),
 *              launches the steps in order and downloads the outputs.
 *   memplan    the static memory plan for one binding of the symbols.
 *   cache      compiled modules stored under the keys the driver computes
 *              (xcomp/driver.h compiles models; this layer runs no pass). */
#ifndef XCOMP_RUNTIME_H
#define XCOMP_RUNTIME_H

#include <stdio.h>

#include "xcomp/module.h"
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
  /* Time every launch on its own: an event pair around each (host clock
   * readings after synchronize where the device has no events), launched
   * one by one (no launch-graph replay). The run's stats carry the time of
   * each step (step_ms). */
  bool profile;
  /* Give every planned value its own buffer (no slot reuse), so that any
   * value's contents can be read after a run (xc_executor_read_value). */
  bool keep_values;
} xc_executor_options_t;

#define XC_EXECUTOR_GUARD_BYTES 256
#define XC_EXECUTOR_GUARD_BYTE 0xA5

void xc_executor_options_init(xc_executor_options_t* o);

typedef struct xc_executor xc_executor_t;

/* (Mirrored field by field in python/xcomp/_native.py: change both.) */
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
  /* The host's view of total_ms: binding the symbols, planning and fitting
   * the buffers (bind_ms), writing the inputs (upload_ms), reading the
   * outputs back (download_ms); kernels_ms is the rest that matters. */
  double bind_ms;
  double upload_ms;
  double download_ms;
  /* Per step (m->num_steps): with options.profile, the device time of its
   * launch in ms (-1 for steps not launched: aliases, empty grids), else
   * NULL. Per value (m->num_values): its bytes under this run's binding.
   * Both owned by the executor, valid until its next run or destroy. */
  const double* step_ms;
  const int64_t* value_bytes;
  /* The module whose steps and values step_ms and value_bytes index: the
   * executor's, or the shape bucket's that ran (bucket: its size; 0 when
   * the module itself ran). */
  const xc_compiled_module_t* module;
  int64_t bucket;
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

/* Runs once into the caller's host tensors: outputs[i] must have the dtype
 * and shape the run makes for output i (else XC_INVALID_ARGUMENT naming the
 * output and both shapes) and is written in place; the tensors stay the
 * caller's. Runs that repeat at the same shapes then reuse the same host
 * memory: a new tensor per run costs its page faults (~20 ms for the 51 MB of
 * a GPT-2 run's logits, several times the copy itself). On failure the
 * outputs' contents are unspecified. */
xc_status_t xc_executor_run_into(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs,
                                 int num_outputs, xc_tensor_t* const* outputs, xc_run_stats_t* stats);

/* A dense, row-major tensor in the memory of the executor's device, named
 * by its device address (xc_buffer_device_address; a framework's tensor:
 * DLPack's data pointer plus its byte offset).
 * (Mirrored in python/xcomp/_native.py: change both.) */
typedef struct xc_device_tensor {
  xc_dtype_t dtype;
  int rank;
  int64_t dims[XC_MAX_RANK];
  uint64_t address;
  /* Outputs: the room at address when the caller gives it; the size of
   * the buffer the executor allocated otherwise. */
  size_t bytes;
  /* Outputs without an address: the buffer the executor allocated for it,
   * the caller's from then on (xc_buffer_free, before the executor is
   * destroyed). NULL otherwise. */
  xc_buffer_t* buffer;
} xc_device_tensor_t;

/* Runs once on device-resident tensors: no host copy of inputs or outputs.
 * Each input is copied on the device into the executor's input buffer
 * (queued on the device's queue, after the work queued there before: on
 * cuda and rocm the executor's stream, which waits for the legacy default
 * stream). Each output is copied on the device to outputs[i].address when
 * the caller gives one (outputs[i].bytes must hold it), else into a new
 * buffer the caller owns (outputs[i].buffer); outputs[i] gets the dtype,
 * rank and dims. The outputs are complete when the call returns. Needs a
 * target with device addresses (xc_device_has_addresses: cuda, rocm, cpu);
 * XC_UNSUPPORTED otherwise. On failure no buffer is left allocated. */
xc_status_t xc_executor_run_device(xc_executor_t* e, int num_inputs, const xc_device_tensor_t* inputs,
                                   int num_outputs, xc_device_tensor_t* outputs, xc_run_stats_t* stats);

/* After a successful run: a new tensor (caller destroys) holding value
 * `value`'s contents under that run's binding. Inputs, weights and graph
 * outputs can always be read; other values need options.keep_values (with
 * slot reuse their buffers hold later values). */
xc_status_t xc_executor_read_value(xc_executor_t* e, int value, xc_tensor_t** out);

/* ---- cache -------------------------------------------------------------------- */

typedef struct xc_cache_stats {
  int hits, misses, corrupt, stores;
  int kernels_compiled; /* target compiles run (driver sessions count them) */
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

/* ---- launches ------------------------------------------------------------------- */

/* The launch of kernel step `index` under binds: the values of its buffer
 * parameters in order (values[], *num_values), its scalar arguments, grid and
 * threads per program (threads > 1 only when max_threads_per_group > 1), and
 * whether the grid is empty (nothing to launch). The executor's rule, shared
 * with the driver's vendor-GEMM measurement. */
typedef struct xc_cm_step_launch {
  int values[XC_TARGET_MAX_ARGS];
  int num_values;
  int64_t scalars[XC_TARGET_MAX_ARGS];
  int num_scalars;
  int64_t grid[3], threads[3];
  bool empty;
} xc_cm_step_launch_t;
xc_status_t xc_cm_step_launch(const xc_compiled_module_t* m, int index, const xc_symbind_t* binds,
                              int max_threads_per_group, xc_cm_step_launch_t* out);

#ifdef __cplusplus
}
#endif
#endif
