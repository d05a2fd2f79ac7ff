/* The compiled-target half of `xcomp run` (tools/cmd_compile.c): loading a
 * compiled module (.xcm) or compiling a model in memory through the cache,
 * and running it with the executor. */
#ifndef XCOMP_TOOLS_RUNTIME_CLI_H
#define XCOMP_TOOLS_RUNTIME_CLI_H

#include <stdbool.h>

#include "xcomp/driver.h"
#include "xcomp/runtime.h"

/* True when `xcomp run MODEL --target T` goes through the executor: MODEL is
 * a .xcm file or T is not the reference interpreter. */
bool xc_cli_uses_executor(const char* model, const char* target);
/* A .xcm is read; another model is compiled for `target` (through the cache
 * unless no_cache) at optimization level opt_level. */
xc_status_t xc_cli_load_compiled(const char* model, const char* target, int opt_level, xc_dtype_t precision,
                                 bool no_cache, bool allow_tf32, xc_compiled_module_t** out);
/* Compiles a model file with session options o through the cache; the
 * session's cache counters go to *stats (may be NULL). */
xc_status_t xc_cli_compile_model(const char* model, const xc_session_options_t* o, xc_cache_stats_t* stats,
                                 xc_compiled_module_t** out);
/* Session options with the CLI's defaults: progress on stderr, knob
 * overrides from $XCOMP_KNOBS (read here only, never in the libraries). */
void xc_cli_session_options_init(xc_session_options_t* o);
/* --precision: "f16" or "bf16" (or "f32": as written). */
bool xc_cli_parse_precision(const char* s, xc_dtype_t* out);
typedef struct xc_cli_run_options {
  const char* device; /* NULL: the module's target */
  bool poison;
  bool verbose;       /* print each run's time and peak memory to stderr */
  bool no_graphs;     /* --no-cuda-graph */
  int repeat;         /* runs (>= 1); the outputs are those of the last run */
} xc_cli_run_options_t;

/* Runs m and, with repeat > 1, prints the median run time to stderr. */
xc_status_t xc_cli_run_compiled(const xc_compiled_module_t* m, const xc_cli_run_options_t* o, int num_inputs,
                                const xc_tensor_t* const* inputs, xc_tensor_t** outputs);

#endif
