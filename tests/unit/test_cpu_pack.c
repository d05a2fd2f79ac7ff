/* Packed dot operands on the cpu target (docs/emitter.md, "Packed
 * operands"): GEMMs whose operand tiles are shared by several programs are
 * packed once per launch by the kernel's pack entry and read in place.
 * Each graph below goes through the whole pipeline for cpu, and
 *   - the emitted source must have a pack entry packing the operands the
 *     case names, in the strips and panels the blocked dot reads (the path
 *     is taken),
 *   - the outputs (poisoned before the run) must match the reference
 *     interpreter at f32 tolerance.
 * The shapes are ragged in M, N and K (tile rows that the dot's register
 * blocks do not divide), with several N panels and K blocks,
 * batched, with a B shared by the batch, a transposed B and a fused
 * epilogue: a tile packed at the wrong place, a K step or batch read from
 * another's tiles, a ragged edge not zero-filled, or a pack entry that
 * missed some programs fails here. */
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

typedef struct pcase {
  const char* name;
  const char* text;
  const char* knobs; /* XCOMP_KNOBS-style overrides, or NULL */
  int packed;        /* operands the pack entry must pack (0: none) */
} pcase_t;

static const pcase_t cases[] = {
    {"batched MatMul 3 x [150,300] x [300,270], default tiles",
     "xir 1\ngraph g opset 23 {\n  input a: f32[3, 150, 300]\n  input b: f32[3, 300, 270]\n"
     "  y: f32[3, 150, 270] = MatMul(a, b)\n  output y\n}\n",
     NULL, 2},
    {"batched MatMul 2 x [77,200] x [200,150], tiles 32 x 64 x 16",
     "xir 1\ngraph g opset 23 {\n  input a: f32[2, 77, 200]\n  input b: f32[2, 200, 150]\n"
     "  y: f32[2, 77, 150] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=32,BLOCK_N_p0=64,BLOCK_K_p0=16", 2},
    {"MatMul [2,130,256] x [256,200] (B shared by the batch) + Add + Relu",
     "xir 1\ngraph g opset 23 {\n  input a: f32[2, 130, 256]\n  input b: f32[256, 200]\n  input c: f32[200]\n"
     "  m = MatMul(a, b)\n  s = Add(m, c)\n  y: f32[2, 130, 200] = Relu(s)\n  output y\n}\n",
     NULL, 2},
    {"Gemm transB [200,300] x [260,300]^T, alpha 0.5, beta 2, bias, tiles 64 x 32 x 32",
     "xir 1\ngraph g opset 23 {\n  input a: f32[200, 300]\n  input b: f32[260, 300]\n  input c: f32[260]\n"
     "  y: f32[200, 260] = Gemm(a, b, c) {transB: 1, alpha: 0.5, beta: 2.0}\n  output y\n}\n",
     "BLOCK_M_p0=64,BLOCK_N_p0=32,BLOCK_K_p0=32", 2},
    {"MatMul [200,192] x [192,180], tiles 64 x 64 x 64 (A and B tiles of one shape, one fused loop)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[200, 192]\n  input b: f32[192, 180]\n"
     "  y: f32[200, 180] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=64,BLOCK_N_p0=64,BLOCK_K_p0=64", 2},
    {"MatMul [16,64] x [64,48]: too small to pack",
     "xir 1\ngraph g opset 23 {\n  input a: f32[16, 64]\n  input b: f32[64, 48]\n"
     "  y: f32[16, 48] = MatMul(a, b)\n  output y\n}\n",
     NULL, 0},
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

/* Operands the source's pack entry packs: its "the tiles of" blocks. */
static int packed_operands(const char* src) {
  int n = 0;
  for (const char* p = src; (p = strstr(p, "/* the tiles of ")); p++) n++;
  return n;
}

static void check_case(const pcase_t* c) {
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(c->text, strlen(c->text), "pack.xir", NULL, &g));
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
    for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, rnd());
  }
  xc_tensor_t* want[1] = {NULL};
  xc_interp_options_t io;
  xc_interp_options_init(&io);
  CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
  char dir[] = "/tmp/xc-pack-XXXXXX";
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
  const char* src = dumped_source(dir);
  int packed = packed_operands(src);
  bool entry = strstr(src, "_pack_programs") != NULL;
  /* the blocked dot's layouts: strips of b, panels of a rows */
  bool layouts = strstr(src, "for (int64_t xs = 0; xs < ") && strstr(src, "const int64_t xb = i0 < ");
  remove_dir(dir);
  CHECK_EQ_INT(packed, c->packed);
  CHECK_EQ_INT(entry, c->packed > 0);
  CHECK_EQ_INT(layouts, c->packed > 0);
  xc_executor_t* ex = NULL;
  xc_executor_options_t eo;
  xc_executor_options_init(&eo);
  eo.poison = true;
  if (m) CHECK_OK(xc_executor_create(m, "cpu", &eo, &ex));
  /* twice: the second run reuses the device's pack buffer */
  for (int run = 0; run < 2 && ex; run++) {
    xc_tensor_t* got[1] = {NULL};
    CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
    if (got[0] && want[0]) {
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(XC_F32, &tol);
      xc_compare_result_t r;
      CHECK_OK(xc_compare_tensors(got[0], want[0], &tol, &r));
      printf("cpu: %s (%d packed, run %d): rel-L2 %.3g, max-abs %.3g %s\n", c->name, packed, run + 1, r.rel_l2,
             r.max_abs, r.ok ? "ok" : r.reason);
      CHECK(r.ok);
    }
    xc_tensor_destroy(got[0]);
  }
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
    return xc_test_summary("test_cpu_pack");
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_pack");
}
