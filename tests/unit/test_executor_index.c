/* The executor's index-error record across runs, on every target with a
 * device here: cpu (host-memory buffers: read and zeroed in place), opencl
 * (read back with copies), spirv, cuda and rocm (a mapped buffer): a Gather
 * with ids out of range fails the run naming the node, a later run with
 * valid ids succeeds (the record was zeroed), and a bad run after that fails
 * again, with its own index; with launch graphs and without. */
#include "test.h"
#include "xcomp/driver.h"
#include "xcomp/graph.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

static const char* const kGather =
    "xir 1\n"
    "graph gather opset 23 {\n"
    "  input ids: i64[n]\n"
    "  const table: f32[4, 2] = [0, 1, 2, 3, 4, 5, 6, 7]\n"
    "  y = Gather(table, ids) {axis: 0} @embed\n"
    "  output y\n"
    "}\n";

static xc_status_t run_ids(xc_executor_t* e, const int64_t* ids, int64_t n, float* out, int64_t out_size) {
  xc_tensor_t* in = NULL;
  XC_RETURN_IF_ERROR(xc_tensor_create(XC_I64, 1, &n, &in));
  memcpy(in->data, ids, (size_t)n * sizeof *ids);
  xc_tensor_t* y = NULL;
  const xc_tensor_t* inputs[1] = {in};
  xc_status_t s = xc_executor_run(e, 1, inputs, &y, NULL);
  if (!s && out) {
    if (y->numel != out_size) s = xc_error(XC_INTERNAL, "%lld outputs", (long long)y->numel);
    else memcpy(out, y->data, (size_t)out_size * sizeof *out);
  }
  xc_tensor_destroy(y);
  xc_tensor_destroy(in);
  return s;
}

/* The whole sequence on one target; targets without a device are skipped. */
static void check_target(const char* target) {
  xc_device_t* probe = NULL;
  xc_status_t s = xc_device_open(target, &probe);
  xc_device_close(probe);
  if (s) {
    printf("test_executor_index: %s skipped: %s\n", target, xc_status_message(s));
    xc_status_free(s);
    return;
  }
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(kGather, strlen(kGather), "gather.xir", NULL, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = target;
  o.use_cache = false;
  xc_session_t* session = NULL;
  xc_compiled_module_t* m = NULL;
  CHECK_OK(xc_session_create(&o, &session));
  if (session && g) CHECK_OK(xc_session_compile_graph(session, g, &m));
  xc_session_destroy(session);
  xc_graph_destroy(g);
  if (!m) return;
  bool has_record = false;
  for (int v = 0; v < m->num_values; v++) has_record |= (m->values[v].flags & XC_CM_VALUE_INDEX_ERROR) != 0;
  CHECK(has_record);

  /* With launch graphs (where the target has them) and without. */
  for (int graphs = 0; graphs < 2; graphs++) {
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.no_graphs = graphs == 1;
    xc_executor_t* e = NULL;
    CHECK_OK(xc_executor_create(m, target, &eo, &e));
    if (!e) continue;
    const int64_t ok[3] = {3, -4, 1}, bad[2] = {1, 4}, bad2[1] = {-5};
    float y[6] = {0};
    for (int round = 0; round < 2; round++) {
      CHECK_OK(run_ids(e, ok, 3, y, 6));
      CHECK_NEAR(y[0], 6, 0);
      CHECK_NEAR(y[1], 7, 0);
      CHECK_NEAR(y[2], 0, 0);
      CHECK_NEAR(y[5], 3, 0);
      s = run_ids(e, bad, 2, NULL, 0);
      CHECK(s && xc_status_code(s) == XC_OUT_OF_RANGE);
      CHECK(s && strstr(xc_status_message(s), "node 'embed' (Gather): index 4 out of range") != NULL);
      xc_status_free(s);
      /* The record was zeroed: a valid run passes, a bad one names its own index. */
      CHECK_OK(run_ids(e, ok, 3, y, 6));
      s = run_ids(e, bad2, 1, NULL, 0);
      CHECK(s && strstr(xc_status_message(s), "index -5 out of range") != NULL);
      xc_status_free(s);
    }
    xc_executor_destroy(e);
  }
  xc_compiled_module_destroy(m);
}

int main(void) {
  CHECK_OK(xc_targets_init());
  /* cpu always; the others where a device is present (spirv: lavapipe; cuda
   * and rocm: the mapped pinned record on a GPU). */
  static const char* const targets[] = {"cpu", "opencl", "spirv", "cuda", "rocm"};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) check_target(targets[i]);
  return xc_test_summary("test_executor_index");
}
