/* The embedding API (include/xcomp/embed.h): a compiled module plus the
 * executor it runs on, behind plain-argument calls for applications and
 * language bindings. Compiles through a driver session, the cache and the
 * tuning database. */
#include <stdlib.h>
#include <string.h>

#include "xcomp/driver.h"
#include "xcomp/embed.h"
#include "xcomp/conformance.h"
#include "xcomp/onnx.h"
#include "xcomp/tune.h"

struct xc_model {
  xc_compiled_module_t* module;
  char* device;            /* selector for the executor; NULL: the target's first */
  xc_executor_t* executor; /* opened at the first run */
};

static xc_status_t parse_precision(const char* precision, xc_dtype_t* out) {
  *out = XC_DTYPE_UNDEFINED;
  if (!precision || !*precision || strcmp(precision, "f32") == 0) return NULL;
  if (strcmp(precision, "f16") == 0) *out = XC_F16;
  else if (strcmp(precision, "bf16") == 0) *out = XC_BF16;
  else return xc_error(XC_INVALID_ARGUMENT, "precision '%s': expected f32, f16 or bf16", precision);
  return NULL;
}

static xc_status_t model_new(xc_compiled_module_t* cm, const char* device, xc_model_t** out) {
  xc_model_t* m = calloc(1, sizeof *m);
  if (!m || (device && !(m->device = strdup(device)))) {
    free(m);
    xc_compiled_module_destroy(cm);
    return xc_error_oom();
  }
  m->module = cm;
  *out = m;
  return NULL;
}

typedef struct onnx_bytes {
  const void* bytes;
  size_t size;
} onnx_bytes_t;

static xc_status_t load_onnx_bytes(void* ctx, xc_graph_t** out) {
  const onnx_bytes_t* b = ctx;
  return xc_onnx_import_buffer(b->bytes, b->size, "<onnx bytes>", NULL, out);
}

void xc_model_options_init(xc_model_options_t* o) {
  memset(o, 0, sizeof *o);
  o->opt_level = -1;
  o->use_cache = true;
}

xc_status_t xc_model_compile(const char* path, const void* bytes, size_t size, const xc_model_options_t* options,
                             xc_model_t** out) {
  *out = NULL;
  xc_model_options_t defaults;
  xc_model_options_init(&defaults);
  const xc_model_options_t* mo = options ? options : &defaults;
  if (path && bytes) return xc_error(XC_INVALID_ARGUMENT, "xc_model_compile: give a model path or bytes, not both");
  if (!path && (!bytes || size == 0))
    return xc_error(XC_INVALID_ARGUMENT, "no model path given and the ONNX model bytes are empty");
  if (mo->opt_level < -1 || mo->opt_level > 3)
    return xc_error(XC_INVALID_ARGUMENT, "optimization level %d: expected 0 to 3", mo->opt_level);
  if (mo->tuning_db && !*mo->tuning_db) return xc_error(XC_INVALID_ARGUMENT, "the tuning database path is empty");
  const char* target = mo->target && *mo->target ? mo->target : "cpu";
  if (strcmp(target, "ref") == 0)
    return xc_error(XC_INVALID_ARGUMENT, "target ref is the reference interpreter: there is nothing to compile for it");
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = target;
  if (mo->opt_level >= 0) o.opt_level = mo->opt_level;
  o.use_cache = mo->use_cache;
  o.tuning_db = mo->tuning_db;
  o.no_tuning_db = mo->no_tuning_db;
  o.input_shapes = mo->input_shapes;
  o.dynamic = mo->dynamic;
  o.buckets = mo->buckets;
  XC_RETURN_IF_ERROR(parse_precision(mo->precision, &o.precision));
  xc_session_t* s = NULL;
  XC_RETURN_IF_ERROR(xc_session_create(&o, &s));
  xc_compiled_module_t* cm = NULL;
  onnx_bytes_t b = {bytes, size};
  xc_status_t st = path ? xc_session_compile_model_file(s, path, &cm)
                        : xc_session_compile_bytes(s, bytes, size, load_onnx_bytes, &b, &cm);
  /* A module compiled for an architecture runs on the target's first device
   * of it; one compiled for a device runs on that device. */
  bool arch_only = xc_session_arch_only(s);
  xc_session_destroy(s);
  if (st) return st;
  return model_new(cm, arch_only ? NULL : target, out);
}

/* The two older entry points: xc_model_compile with these options. */
static xc_status_t compile_plain(const char* path, const void* bytes, size_t size, const char* target,
                                 const char* precision, int opt_level, bool use_cache, xc_model_t** out) {
  xc_model_options_t o;
  xc_model_options_init(&o);
  o.target = target;
  o.precision = precision;
  o.opt_level = opt_level;
  o.use_cache = use_cache;
  return xc_model_compile(path, bytes, size, &o, out);
}

xc_status_t xc_model_compile_file(const char* path, const char* target, const char* precision, int opt_level,
                                  bool use_cache, xc_model_t** out) {
  *out = NULL;
  if (!path) return xc_error(XC_INVALID_ARGUMENT, "no model path given");
  return compile_plain(path, NULL, 0, target, precision, opt_level, use_cache, out);
}

xc_status_t xc_model_compile_onnx_buffer(const void* bytes, size_t size, const char* target, const char* precision,
                                         int opt_level, bool use_cache, xc_model_t** out) {
  *out = NULL;
  if (!bytes || size == 0) return xc_error(XC_INVALID_ARGUMENT, "the ONNX model bytes are empty");
  return compile_plain(NULL, bytes, size, target, precision, opt_level, use_cache, out);
}

xc_status_t xc_model_load(const char* path, const char* device, xc_model_t** out) {
  *out = NULL;
  if (!path) return xc_error(XC_INVALID_ARGUMENT, "no module path given");
  xc_compiled_module_t* cm = NULL;
  XC_RETURN_IF_ERROR(xc_compiled_module_read(path, &cm));
  return model_new(cm, device, out);
}

xc_status_t xc_model_save(const xc_model_t* m, const char* path) {
  if (!m || !path) return xc_error(XC_INVALID_ARGUMENT, "xc_model_save: no model or path");
  return xc_compiled_module_write(m->module, path);
}

void xc_model_destroy(xc_model_t* m) {
  if (!m) return;
  xc_executor_destroy(m->executor);
  xc_compiled_module_destroy(m->module);
  free(m->device);
  free(m);
}

const xc_compiled_module_t* xc_model_module(const xc_model_t* m) { return m ? m->module : NULL; }

const char* xc_model_target(const xc_model_t* m) { return m ? m->module->target : NULL; }

const char* xc_model_device_name(const xc_model_t* m) {
  if (!m) return NULL;
  if (m->executor) return xc_device_caps(xc_executor_device(m->executor))->name;
  return m->module->device_name;
}

static const xc_value_t* io_value(const xc_model_t* m, bool is_output, int index) {
  if (!m) return NULL;
  const xc_graph_t* g = m->module->graph;
  int n = is_output ? g->num_outputs : g->num_inputs;
  if (index < 0 || index >= n) return NULL;
  return is_output ? g->outputs[index] : g->inputs[index];
}

int xc_model_num_ios(const xc_model_t* m, bool is_output) {
  if (!m) return 0;
  return is_output ? m->module->graph->num_outputs : m->module->graph->num_inputs;
}

const char* xc_model_io_name(const xc_model_t* m, bool is_output, int index) {
  const xc_value_t* v = io_value(m, is_output, index);
  return v ? v->name : NULL;
}

xc_dtype_t xc_model_io_dtype(const xc_model_t* m, bool is_output, int index) {
  const xc_value_t* v = io_value(m, is_output, index);
  return v ? v->dtype : XC_DTYPE_UNDEFINED;
}

int xc_model_io_rank(const xc_model_t* m, bool is_output, int index) {
  const xc_value_t* v = io_value(m, is_output, index);
  return v ? v->rank : -1;
}

int64_t xc_model_io_dim(const xc_model_t* m, bool is_output, int index, int d, char* buf, size_t n) {
  const xc_value_t* v = io_value(m, is_output, index);
  if (buf && n) buf[0] = '\0';
  if (!v || d < 0 || d >= v->rank) return -1;
  if (buf && n) xc_dim_print(v->dims[d], buf, n);
  return v->dims[d].sym ? -1 : v->dims[d].value;
}

static xc_status_t open_executor(xc_model_t* m) {
  if (m->executor) return NULL;
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  return xc_executor_create(m->module, m->device, &o, &m->executor);
}

static xc_status_t check_run_inputs(xc_model_t* m, const char* fn, int num_inputs, const xc_tensor_t* const* inputs) {
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "%s: no model", fn);
  const xc_graph_t* g = m->module->graph;
  if (num_inputs != g->num_inputs)
    return xc_error(XC_INVALID_ARGUMENT, "the model takes %d input%s, %d given", g->num_inputs,
                    g->num_inputs == 1 ? "" : "s", num_inputs);
  for (int i = 0; i < num_inputs; i++)
    if (!inputs[i]) return xc_error(XC_INVALID_ARGUMENT, "input %d ('%s') is missing", i, g->inputs[i]->name);
  return open_executor(m);
}

xc_status_t xc_model_run(xc_model_t* m, int num_inputs, const xc_tensor_t* const* inputs, xc_tensor_t** outputs,
                         xc_run_stats_t* stats) {
  XC_RETURN_IF_ERROR(check_run_inputs(m, "xc_model_run", num_inputs, inputs));
  return xc_executor_run(m->executor, num_inputs, inputs, outputs, stats);
}

xc_status_t xc_model_run_into(xc_model_t* m, int num_inputs, const xc_tensor_t* const* inputs, int num_outputs,
                              xc_tensor_t* const* outputs, xc_run_stats_t* stats) {
  XC_RETURN_IF_ERROR(check_run_inputs(m, "xc_model_run_into", num_inputs, inputs));
  return xc_executor_run_into(m->executor, num_inputs, inputs, num_outputs, outputs, stats);
}

xc_status_t xc_model_device(xc_model_t* m, int* device_type, int* device_index) {
  *device_type = 0;
  *device_index = -1;
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "xc_model_device: no model");
  XC_RETURN_IF_ERROR(open_executor(m));
  xc_device_t* d = xc_executor_device(m->executor);
  const char* target = xc_target_name(xc_device_target(d));
  if (!xc_device_has_addresses(d))
    return xc_error(XC_UNSUPPORTED,
                    "target %s keeps tensors where no device address reaches them: device-resident tensors "
                    "need cuda, rocm or cpu", target);
  /* DLPack's DLDeviceType: kDLCPU 1, kDLCUDA 2, kDLROCM 10. */
  if (strcmp(target, "cpu") == 0) *device_type = 1;
  else if (strcmp(target, "rocm") == 0) *device_type = 10;
  else if (strcmp(target, "cuda") == 0 || strcmp(target, "rocm_nv") == 0)
    *device_type = 2;
  if (!*device_type)
    return xc_error(XC_UNSUPPORTED, "target %s has device addresses but no DLPack device type is known for it",
                    target);
  *device_index = xc_device_index(d);
  return NULL;
}

xc_status_t xc_model_run_device(xc_model_t* m, int num_inputs, const xc_device_tensor_t* inputs, int num_outputs,
                                xc_device_tensor_t* outputs, xc_run_stats_t* stats) {
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "xc_model_run_device: no model");
  XC_RETURN_IF_ERROR(open_executor(m));
  return xc_executor_run_device(m->executor, num_inputs, inputs, num_outputs, outputs, stats);
}

size_t xc_abi_struct_size(const char* name) {
  static const struct {
    const char* name;
    size_t size;
  } sizes[] = {
      {"xc_tensor_t", sizeof(xc_tensor_t)},
      {"xc_run_stats_t", sizeof(xc_run_stats_t)},
      {"xc_device_tensor_t", sizeof(xc_device_tensor_t)},
      {"xc_model_options_t", sizeof(xc_model_options_t)},
      {"xc_tune_options_t", sizeof(xc_tune_options_t)},
      {"xc_tune_summary_t", sizeof(xc_tune_summary_t)},
      {"xc_conform_options_t", sizeof(xc_conform_options_t)},
      {"xc_conform_case_t", sizeof(xc_conform_case_t)},
      {"xc_conform_report_t", sizeof(xc_conform_report_t)},
  };
  for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
    if (strcmp(sizes[i].name, name) == 0) return sizes[i].size;
  return 0;
}
