/* The compiled-target half of `xcomp run` (tools/cmd_compile.c): loading a
 * compiled module (.xcm) or compiling a model in memory through the cache,
 * and running it with the executor. */
#ifndef XCOMP_TOOLS_RUNTIME_CLI_H
#define XCOMP_TOOLS_RUNTIME_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "xcomp/driver.h"
#include "xcomp/runtime.h"

/* True when `xcomp run MODEL --target T` goes through the executor: MODEL is
 * a .xcm file or T is not the reference interpreter. */
bool xc_cli_uses_executor(const char* model, const char* target);
/* A .xcm is read; another model is compiled for `target` (through the cache
 * unless no_cache) at optimization level opt_level. */
xc_status_t xc_cli_load_compiled(const char* model, const char* target, int opt_level, xc_dtype_t precision,
                                 bool no_cache, bool allow_tf32, const char* input_shapes,
                                 xc_compiled_module_t** out);
/* Compiles a model file with session options o through the cache; the
 * session's cache counters go to *stats (may be NULL). */
xc_status_t xc_cli_compile_model(const char* model, const xc_session_options_t* o, xc_cache_stats_t* stats,
                                 xc_compiled_module_t** out);
/* The same, with the session's phase times (may be NULL). */
xc_status_t xc_cli_compile_model_timed(const char* model, const xc_session_options_t* o, xc_cache_stats_t* stats,
                                       xc_compile_phases_t* phases, xc_compiled_module_t** out);
/* Session options with the CLI's defaults: progress on stderr, knob
 * overrides from $XCOMP_KNOBS (read here only, never in the libraries). */
void xc_cli_session_options_init(xc_session_options_t* o);
/* --precision: "f16" or "bf16" (or "f32": as written). */
bool xc_cli_parse_precision(const char* s, xc_dtype_t* out);
/* `xcomp run --profile` (tools/cli_profile.c): per kernel of a module, its
 * launches, device time and bytes its buffer parameters hold, summed over
 * the runs added; and the host's split of the runs. */
typedef struct xc_cli_profile_kernel {
  int launches;
  double total_ms;
  int64_t bytes; /* read + written by its buffer parameters, all launches */
} xc_cli_profile_kernel_t;
typedef struct xc_cli_profile {
  const xc_compiled_module_t* m;
  char device[128];
  int runs, launches;
  double total_ms, bind_ms, upload_ms, kernels_ms, download_ms;
  xc_cli_profile_kernel_t* kernels; /* per module kernel */
} xc_cli_profile_t;
xc_status_t xc_cli_profile_init(xc_cli_profile_t* p, const xc_compiled_module_t* m);
void xc_cli_profile_free(xc_cli_profile_t* p);
/* Adds one run's stats (from an executor created with options.profile). */
void xc_cli_profile_add(xc_cli_profile_t* p, const xc_run_stats_t* st);
/* The table, sorted by device time, and the host split. */
void xc_cli_profile_print(const xc_cli_profile_t* p, FILE* f);
/* The same as JSON (docs/cli.md, "Profiles"). */
xc_status_t xc_cli_profile_write_json(const xc_cli_profile_t* p, const char* path);

typedef struct xc_cli_run_options {
  const char* device; /* NULL: the module's target */
  bool poison;
  bool verbose;       /* print each run's time and peak memory to stderr */
  bool no_graphs;     /* --no-cuda-graph */
  int repeat;         /* runs (>= 1); the outputs are those of the last run */
  bool resident;      /* inputs and outputs in device memory; outputs read after the last run */
  xc_cli_profile_t* profile; /* not NULL: time each launch, add every run to it */
} xc_cli_run_options_t;

/* Device-resident runs (tools/cli_resident.c). init uploads the inputs
 * into buffers of the executor's device (XC_UNSUPPORTED on a target without
 * device addresses); run_once runs with host tensors when r is not set up
 * (r->in NULL; the first run makes the output tensors, later runs write
 * them again with xc_executor_run_into; the caller destroys them), else on
 * the device buffers (the first run allocates the outputs, later runs write
 * them again);
 * download reads the outputs into new host tensors. */
typedef struct xc_cli_resident {
  int n_in, n_out;
  xc_buffer_t** in_buffers;
  xc_device_tensor_t* in;
  xc_device_tensor_t* out;
} xc_cli_resident_t;
xc_status_t xc_cli_resident_init(xc_executor_t* e, const xc_compiled_module_t* m, const xc_tensor_t* const* inputs,
                                 xc_cli_resident_t* r);
xc_status_t xc_cli_run_once(xc_executor_t* e, const xc_compiled_module_t* m, const xc_tensor_t* const* inputs,
                            xc_tensor_t** outputs, xc_cli_resident_t* r, xc_run_stats_t* st);
xc_status_t xc_cli_resident_download(const xc_cli_resident_t* r, xc_tensor_t** outputs);
void xc_cli_resident_free(xc_cli_resident_t* r);

/* Runs m and, with repeat > 1, prints the median run time to stderr
 * (wall, device, upload and download apart). */
xc_status_t xc_cli_run_compiled(const xc_compiled_module_t* m, const xc_cli_run_options_t* o, int num_inputs,
                                const xc_tensor_t* const* inputs, xc_tensor_t** outputs);

#endif
