/* Masked rows on the cpu target (docs/emitter.md, "Masked rows"): a masked
 * 2-D load into an array whose mask is convex along its rows (a
 * convolution's window row: pixels at the input's edges read part of it) is
 * copied row by row, unmasked where the mask holds at both ends of the row,
 * per element elsewhere. Each graph below goes through the whole pipeline
 * for cpu with knob overrides that put rows at every edge (left, right, top,
 * bottom, the ragged last tile), and
 *   - the emitted source must take the path (`xrow`),
 *   - the outputs (poisoned before the run) must match the interpreter.
 * A row test that looked at one end only, or copied a partly masked row
 * unmasked, reads the neighbouring pixels' channels (or past the tile) and
 * fails here. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/driver.h"
#include "xcomp/interp.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

typedef struct rcase {
  const char* name;
  const char* text;
  const char* knobs; /* XCOMP_KNOBS-style overrides, or NULL */
} rcase_t;

static const rcase_t cases[] = {
    {"3x3 conv, 3 channels, pad 1 (the stem's rows of 9), default tiles",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 10, 9, 3]\n  input w: f32[3, 3, 3, 8]\n  input b: f32[8]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  y = Relu(c)\n  output y\n}\n",
     NULL},
    {"3x3 conv, 3 channels, pad 1, tiles 16 x 16 x 8 (a row split over K steps)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 10, 9, 3]\n  input w: f32[3, 3, 3, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=8"},
    {"3x2 conv, 5 channels, strides 2, pads [1, 0, 2, 1], dilated rows",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 11, 13, 5]\n  input w: f32[3, 2, 5, 6]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 0, 2, 1], strides: [2, 2], dilations: [2, 1], "
     "weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL},
    {"MatMul [37,29] x [29,45] (ragged tiles)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[37, 29]\n  input b: f32[29, 45]\n"
     "  y: f32[37, 45] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=16"},
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* The emitted C source in dir (the first .c file), NUL-terminated in a
 * static buffer; "" when there is none. */
static const char* dumped_source(const char* dir) {
  static char buf[1 << 20];
  buf[0] = 0;
  DIR* d = opendir(dir);
  if (!d) return buf;
  struct dirent* de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n < 3 || strcmp(de->d_name + n - 2, ".c")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE* f = fopen(path, "rb");
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    break;
  }
  closedir(d);
  return buf;
}

static void remove_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  struct dirent* de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void check_case(const rcase_t* c) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(c->text, strlen(c->text), "rows.xir", NULL, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  enum { MAX_IN = 4 };
  xc_tensor_t* in[MAX_IN] = {NULL};
  int ni = g->num_inputs < MAX_IN ? g->num_inputs : MAX_IN;
  for (int j = 0; j < ni; j++) {
    const xc_value_t* v = g->inputs[j];
    int64_t dims[4];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
    CHECK_OK(xc_tensor_create(v->dtype, v->rank, dims, &in[j]));
    /* no zeros: a masked-off element read as data shows */
    for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, 0.5 + rnd());
  }
  xc_tensor_t* want[1] = {NULL};
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
  char dir[] = "/tmp/xc-rows-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = "cpu";
  o.use_cache = false;
  o.knobs = c->knobs;
  o.build.dump_dir = dir;
  xc_compiled_module_t* m = NULL;
  xc_session_t* session = NULL;
  CHECK_OK(xc_session_create(&o, &session));
  if (session) CHECK_OK(xc_session_compile_graph(session, g, &m));
  xc_session_destroy(session);
  xc_graph_destroy(g);
  bool rows = strstr(dumped_source(dir), "if (xrow) {") != NULL;
  remove_dir(dir);
  CHECK(rows);
  xc_executor_t* ex = NULL;
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.poison = true;
  if (m) CHECK_OK(xc_executor_create(m, "cpu", &eo, &ex));
  xc_tensor_t* got[1] = {NULL};
  if (ex) CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
  if (got[0] && want[0]) {
    xc_tolerance_t tol;
    xc_tolerance_for_dtype(XC_F32, &tol);
    xc_compare_result_t r;
    CHECK_OK(xc_compare_tensors(got[0], want[0], &tol, &r));
    printf("cpu: %s: rows %s, rel-L2 %.3g, max-abs %.3g %s\n", c->name, rows ? "split" : "not split", r.rel_l2,
           r.max_abs, r.ok ? "ok" : r.reason);
    CHECK(r.ok);
  } else {
    CHECK(got[0] != NULL);
  }
  xc_tensor_destroy(got[0]);
  xc_tensor_destroy(want[0]);
  for (int j = 0; j < ni; j++) xc_tensor_destroy(in[j]);
  xc_executor_destroy(ex);
  xc_compiled_module_destroy(m);
}

int main(void) {
  CHECK_OK(xc_targets_init());
  xc_target_t* t = NULL;
  int index = 0;
  xc_status_t s = xc_target_find("cpu", &t, &index);
  if (s) {
    printf("SKIP cpu: %s\n", xc_status_message(s));
    xc_status_free(s);
    return xc_test_summary("test_cpu_rows");
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_rows");
}
