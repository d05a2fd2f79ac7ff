/* xcomp embedding API: compile a model (or load a compiled module), ask
 * what its inputs and outputs are, and run it on host tensors, in a handful
 * of calls with plain arguments (strings, ints, xc_tensor_t). For
 * applications that deploy a .xcm, and for language bindings: the Python
 * package (python/xcomp, docs/python.md) is built on it through ctypes.
 *
 *   xc_model_t* m = NULL;
 *   XC_RETURN_IF_ERROR(xc_model_load("gpt2.xcm", NULL, &m));
 *   xc_tensor_t* out[1] = {NULL};
 *   xc_status_t s = xc_model_run(m, 1, (const xc_tensor_t* const*)&ids, out, NULL);
 *   ...
 *   xc_tensor_destroy(out[0]);
 *   xc_model_destroy(m);
 *
 * Compiling goes through a driver session (xcomp/driver.h) and the compile
 * cache; running through the executor (xcomp/runtime.h), opened on the
 * model's device at the first run and kept for the next ones. A model is
 * not thread-safe: run it from one thread at a time. */
#ifndef XCOMP_EMBED_H
#define XCOMP_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/status.h"
#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xc_model xc_model_t;

/* How xc_model_compile compiles. Strings are read during the call only. */
typedef struct xc_model_options {
  const char* target;    /* "cpu", "opencl:1", "cuda", "cuda:sm_90"; NULL: "cpu" */
  const char* precision; /* NULL or "f32" (as written), "f16", "bf16" */
  int opt_level;         /* 0..3; -1 (default): the pipeline's default (2) */
  bool use_cache;        /* through the compile cache ($XCOMP_CACHE_DIR, default
                            ~/.cache/xcomp); default true */
  /* The tuning database (xcomp/tune.h, docs/autotune.md) schedules are
   * picked from. NULL: <cache folder>/tuning.db when that file exists; a
   * named file that does not exist is an error (XC_NOT_FOUND). */
  const char* tuning_db;
  bool no_tuning_db;     /* no database: the schedulers' defaults */
  /* Input shapes to compile for, "NAME=DIMS[;NAME=DIMS...]" (xcomp compile
   * --shape; xc_graph_set_input_shapes). NULL: the model's own. */
  const char* input_shapes;
  /* Shape buckets (xcomp compile --dynamic / --buckets): "NAME=MIN..MAX"
   * and "S1,S2,..." (NULL: powers of two and MAX). NULL dynamic: none. */
  const char* dynamic;
  const char* buckets;
} xc_model_options_t;

/* The defaults: cpu, as written, opt_level -1, the cache, the default
 * tuning database when it exists. */
void xc_model_options_init(xc_model_options_t* o);

/* Compiles a model: the file at path (.onnx, .xir), or when path is NULL
 * the bytes of an ONNX model (size bytes; external data is not supported:
 * the model must hold its weights). Give one of the two. o NULL: the
 * defaults (xc_model_options_init). The caller owns *out
 * (xc_model_destroy). */
xc_status_t xc_model_compile(const char* path, const void* bytes, size_t size, const xc_model_options_t* o,
                             xc_model_t** out);
/* xc_model_compile of a file with the other options at their defaults. */
xc_status_t xc_model_compile_file(const char* path, const char* target, const char* precision, int opt_level,
                                  bool use_cache, xc_model_t** out);
/* xc_model_compile of ONNX bytes with the other options at their defaults. */
xc_status_t xc_model_compile_onnx_buffer(const void* bytes, size_t size, const char* target, const char* precision,
                                         int opt_level, bool use_cache, xc_model_t** out);
/* Reads a compiled module (.xcm). device: a device selector of the
 * module's target ("opencl:1"); NULL: the target's first device. */
xc_status_t xc_model_load(const char* path, const char* device, xc_model_t** out);
/* Writes the compiled module to path (.xcm; atomically). */
xc_status_t xc_model_save(const xc_model_t* m, const char* path);
void xc_model_destroy(xc_model_t* m);

/* sizeof of a public struct that foreign-function bindings mirror field by
 * field ("xc_tensor_t", "xc_run_stats_t", "xc_model_options_t",
 * "xc_tune_options_t", "xc_tune_summary_t", "xc_conform_options_t",
 * "xc_conform_case_t", "xc_conform_report_t"); 0 for another name. A
 * binding compares it with its own layout before calling anything (the
 * Python package refuses to load on a mismatch instead of letting the
 * library write past its structs). */
size_t xc_abi_struct_size(const char* name);

/* The compiled module (owned by m). */
const xc_compiled_module_t* xc_model_module(const xc_model_t* m);
/* The target's name ("cpu"). */
const char* xc_model_target(const xc_model_t* m);
/* The device's name once a run opened it; before, the name of the device
 * the module was compiled for. */
const char* xc_model_device_name(const xc_model_t* m);

/* Inputs (is_output false) and outputs (true), in call order. */
int xc_model_num_ios(const xc_model_t* m, bool is_output);
/* NULL when index is out of range. */
const char* xc_model_io_name(const xc_model_t* m, bool is_output, int index);
xc_dtype_t xc_model_io_dtype(const xc_model_t* m, bool is_output, int index);
/* -1 when unknown or out of range. */
int xc_model_io_rank(const xc_model_t* m, bool is_output, int index);
/* Dim d: its size, or -1 when symbolic, with the dim's text ("batch",
 * "seq + 1") written into buf (n bytes) either way. */
int64_t xc_model_io_dim(const xc_model_t* m, bool is_output, int index, int d, char* buf, size_t n);

/* Runs once: inputs[i] binds input i (its dtype and shape are checked);
 * outputs[i] receives a new tensor the caller destroys. stats may be
 * NULL. The first run opens the device and uploads the weights. */
xc_status_t xc_model_run(xc_model_t* m, int num_inputs, const xc_tensor_t* const* inputs, xc_tensor_t** outputs,
                         xc_run_stats_t* stats);
/* Runs once into the caller's host tensors (xc_executor_run_into):
 * outputs[i] must have output i's dtype and shape for these inputs and is
 * written in place; repeated runs then reuse the same host memory. */
xc_status_t xc_model_run_into(xc_model_t* m, int num_inputs, const xc_tensor_t* const* inputs, int num_outputs,
                              xc_tensor_t* const* outputs, xc_run_stats_t* stats);

/* Device-resident runs (xc_executor_run_device; include/xcomp/runtime.h):
 * tensors that live in the device's memory, given by device address, with
 * no host copy. xc_model_device opens the device and loads the model (as
 * the first run would) and tells where its tensors live in DLPack's terms:
 * *device_type 1 (CPU: the cpu target), 2 (CUDA: cuda, rocm_nv) or 10
 * (ROCm: rocm), *device_index the device's index; XC_UNSUPPORTED, naming the
 * target, when its memory has no device addresses (opencl, spirv). Output
 * buffers xc_model_run_device allocates are freed with xc_buffer_free
 * before the model is destroyed. */
xc_status_t xc_model_device(xc_model_t* m, int* device_type, int* device_index);
xc_status_t xc_model_run_device(xc_model_t* m, int num_inputs, const xc_device_tensor_t* inputs, int num_outputs,
                                xc_device_tensor_t* outputs, xc_run_stats_t* stats);

#ifdef __cplusplus
}
#endif
#endif
