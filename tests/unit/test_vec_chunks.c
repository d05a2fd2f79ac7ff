/* Vector chunks of the work-group dialects (docs/emitter.md, "Vector
 * chunks"): rows whose length is a multiple of threads * chunk are held in
 * the chunked slot layout and moved as aligned 16-byte structs. Each graph
 * below has such rows (the row normalizations in registers, a plain
 * element-wise chain); it goes through the whole pipeline for every
 * work-group target present (opencl: PoCL here; cuda and rocm_nv on an
 * NVIDIA GPU), and
 *   - the emitted source must declare a chunk struct (the path is taken),
 *   - the outputs must match the reference interpreter at the dtype's
 *     tolerance (ARCHITECTURE.md: f32 1e-5 rel-L2, f16 2e-3, bf16 1.6e-2) —
 *     a slot layout that disagrees between two loops, a chunk read from the
 *     wrong offset or a reduction over the wrong slots fails here.
 * A row that is not a multiple (the last graph) keeps the default layout
 * and must match too. Targets that are absent are skipped with the reason. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_case.h"
#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/interp.h"
#include "xcomp/module.h"
#include "xcomp/driver.h"
#include "xcomp/runtime.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

typedef struct vcase {
  const char* name;
  const char* text;
  bool chunked; /* the emitted source must use chunk structs */
} vcase_t;

static const vcase_t cases[] = {
    {"add+layernorm+gelu bf16 4x4096",
     "xir 1\ngraph g opset 23 {\n  input x: bf16[4, 4096]\n  input r: bf16[4, 4096]\n  input w: bf16[4096]\n"
     "  input b: bf16[4096]\n  s = Add(x, r)\n  n = LayerNormalization(s, w, b) {axis: -1, epsilon: 1e-5}\n"
     "  y: bf16[4, 4096] = Gelu(n)\n  output y\n}\n",
     true},
    {"layernorm f32 3x2048",
     "xir 1\ngraph g opset 23 {\n  input x: f32[3, 2048]\n  input w: f32[2048]\n  input b: f32[2048]\n"
     "  y: f32[3, 2048] = LayerNormalization(x, w, b) {axis: -1, epsilon: 1e-5}\n  output y\n}\n",
     true},
    {"softmax f16 5x4096",
     "xir 1\ngraph g opset 23 {\n  input x: f16[5, 4096]\n  y: f16[5, 4096] = Softmax(x) {axis: -1}\n  output y\n}\n",
     true},
    /* rows padded to the block: the masked loads move the chunks inside the
     * mask whole, the chunk at its edge element by element */
    {"layernorm f32 3x2052 (masked tail: chunks where the mask holds)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[3, 2052]\n  input w: f32[2052]\n  input b: f32[2052]\n"
     "  y: f32[3, 2052] = LayerNormalization(x, w, b) {axis: -1, epsilon: 1e-5}\n  output y\n}\n",
     true},
    /* rows of 2050: a row's chunks are not aligned, nothing is chunked */
    {"softmax f32 3x2050 (unaligned rows: elements)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[3, 2050]\n  y: f32[3, 2050] = Softmax(x) {axis: -1}\n  output y\n}\n",
     false},
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Whether a file in dir holds `needle`. */
static bool dir_has(const char* dir, const char* needle) {
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent* de;
  while (!found && (de = readdir(d))) {
    if (de->d_name[0] == '.' || strstr(de->d_name, ".tiled")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE* f = fopen(path, "rb");
    if (!f) continue;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    found = strstr(buf, needle) != NULL;
  }
  closedir(d);
  return found;
}

static void check_target(const char* selector) {
  xc_target_t* t = NULL;
  int index = 0;
  xc_device_caps_t caps;
  xc_status_t s = xc_target_find(selector, &t, &index);
  if (!s) s = xc_target_device_caps(t, index, &caps);
  if (s) {
    printf("SKIP %s: %s\n", selector, xc_status_message(s));
    xc_status_free(s);
    return;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const vcase_t* c = &cases[i];
    xc_graph_t* g = NULL;
    CHECK_OK(xc_xir_parse(c->text, strlen(c->text), "vec.xir", NULL, &g));
    if (!g) continue;
    CHECK_OK(xc_graph_infer(g));
    xc_tensor_t* in[4] = {NULL, NULL, NULL, NULL};
    int ni = g->num_inputs;
    for (int j = 0; j < ni && j < 4; j++) {
      const xc_value_t* v = g->inputs[j];
      int64_t dims[4];
      for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
      CHECK_OK(xc_tensor_create(v->dtype, v->rank, dims, &in[j]));
      for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, 2.0 * rnd() + 0.25);
    }
    xc_tensor_t* want[1] = {NULL};
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
    char dir[] = "/tmp/xc-vec-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    xc_session_options_t o;
    xc_session_options_init(&o);
    o.target = selector;
    o.use_cache = false;
    o.build.dump_dir = dir;
    xc_compiled_module_t* m = NULL;
    xc_session_t* session = NULL;
    CHECK_OK(xc_session_create(&o, &session));
    if (session) CHECK_OK(xc_session_compile_graph(session, g, &m));
    xc_session_destroy(session);
    xc_dtype_t dt = g->outputs[0]->dtype;
    xc_graph_destroy(g);
    bool chunked = dir_has(dir, "typedef struct __attribute__((aligned(");
    cpu_case_remove_dir(dir);
    CHECK_EQ_INT(chunked, c->chunked);
    xc_executor_t* ex = NULL;
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.poison = true;
    if (m) CHECK_OK(xc_executor_create(m, selector, &eo, &ex));
    xc_tensor_t* got[1] = {NULL};
    if (ex) CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
    if (got[0] && want[0]) {
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(dt, &tol);
      xc_compare_result_t r;
      CHECK_OK(xc_compare_tensors(got[0], want[0], &tol, &r));
      printf("%s: %s%s: rel-L2 %.3g, max-abs %.3g %s\n", selector, c->name, chunked ? " (chunks)" : "", r.rel_l2,
             r.max_abs, r.ok ? "ok" : r.reason);
      CHECK(r.ok);
    }
    xc_tensor_destroy(got[0]);
    xc_tensor_destroy(want[0]);
    for (int j = 0; j < ni && j < 4; j++) xc_tensor_destroy(in[j]);
    xc_executor_destroy(ex);
    xc_compiled_module_destroy(m);
  }
}

int main(void) {
  CHECK_OK(xc_targets_init());
  check_target("opencl");
  check_target("cuda");
  check_target("rocm_nv");
  return xc_test_summary("test_vec_chunks");
}
