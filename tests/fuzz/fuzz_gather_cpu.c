/* libFuzzer harness for index data at run time: a Gather compiled once for
 * the cpu target (generated C through the system compiler, loaded into this
 * process) runs on indices taken from the fuzzer's bytes. Every run must end
 * in one of two ways: the correct output (indices in [-5, 5), negative ones
 * counted from the end, as ONNX says), or an error status (an index out of
 * range); never a crash, a write past a buffer (the executor's guard bytes
 * are on), or an output computed from an out-of-range index. A run that
 * succeeds with an out-of-range index aborts: the generated kernel must
 * check its indices.
 *
 * Needs a C compiler at run time (cc, or $CC), like the cpu target itself.
 *   tools/fuzz.sh build-fuzz 60 2     (or `make fuzz`) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/driver.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/xir.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerInitialize(int* argc, char*** argv);

enum { ROWS = 5, COLS = 3, NUM_INDICES = 6 };

static const char* model =
    "xir 1\n"
    "graph gather opset 17 {\n"
    "  input idx : i64[6]\n"
    "  const data: f32[5, 3] = [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42]\n"
    "  y = Gather(data, idx) {axis: 0}\n"
    "  output y\n"
    "}\n";

static xc_compiled_module_t* module;
static xc_executor_t* executor;

static void die(const char* what, xc_status_t s) {
  fprintf(stderr, "fuzz_gather_cpu: %s: %s\n", what, xc_status_message(s));
  abort();
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  xc_graph_t* g = NULL;
  xc_status_t s = xc_xir_parse(model, strlen(model), "gather.xir", NULL, &g);
  if (!s) s = xc_graph_infer(g);
  if (s) die("parse", s);
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = "cpu";
  o.use_cache = false;
  xc_session_t* session = NULL;
  s = xc_session_create(&o, &session);
  if (!s) s = xc_session_compile_graph(session, g, &module);
  if (s) die("compile", s);
  xc_session_destroy(session);
  xc_graph_destroy(g);
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.guard = true;
  eo.poison = true;
  s = xc_executor_create(module, NULL, &eo, &executor);
  if (s) die("executor", s);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t dims[1] = {NUM_INDICES};
  xc_tensor_t* idx = NULL;
  if (xc_tensor_create(XC_I64, 1, dims, &idx)) abort();
  int64_t* v = (int64_t*)idx->data;
  bool in_range = true;
  for (int i = 0; i < NUM_INDICES; i++) {
    uint64_t u = 0;
    /* Mostly small values near the edges, sometimes any 64-bit value. */
    if ((size_t)(i * 8 + 8) <= size) memcpy(&u, data + i * 8, 8);
    else if ((size_t)i < size) u = (uint64_t)(int64_t)(int8_t)data[i];
    v[i] = (int64_t)u;
    if (size > 0 && (data[0] & 1) && (size_t)(i * 8 + 8) > size) v[i] = (int64_t)(int8_t)(u & 0xFF) % 8;
    in_range &= v[i] >= -ROWS && v[i] < ROWS;
  }
  xc_tensor_t* out[1] = {NULL};
  xc_status_t s = xc_executor_run(executor, 1, (const xc_tensor_t* const*)&idx, out, NULL);
  if (s) {
    const char* msg = xc_status_message(s);
    if (strstr(msg, "wrote past the end")) {
      fprintf(stderr, "fuzz_gather_cpu: %s\n", msg);
      abort();
    }
    if (in_range) {
      fprintf(stderr, "fuzz_gather_cpu: indices in range refused: %s\n", msg);
      abort();
    }
    xc_status_free(s);
    xc_tensor_destroy(idx);
    return 0;
  }
  if (!in_range) {
    fprintf(stderr, "fuzz_gather_cpu: a run with an out-of-range index succeeded (indices");
    for (int i = 0; i < NUM_INDICES; i++) fprintf(stderr, " %lld", (long long)v[i]);
    fprintf(stderr, ")\n");
    abort();
  }
  const float* y = (const float*)out[0]->data;
  for (int i = 0; i < NUM_INDICES; i++) {
    int64_t row = v[i] < 0 ? v[i] + ROWS : v[i];
    for (int c = 0; c < COLS; c++)
      if (y[i * COLS + c] != (float)(row * 10 + c)) {
        fprintf(stderr, "fuzz_gather_cpu: wrong output at [%d, %d] for index %lld\n", i, c, (long long)v[i]);
        abort();
      }
  }
  xc_tensor_destroy(out[0]);
  xc_tensor_destroy(idx);
  return 0;
}
