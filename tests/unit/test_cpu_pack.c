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
#include "cpu_case.h"

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

/* Operands the source's pack entry packs: its "the tiles of" blocks. */
static int packed_operands(const char* src) {
  int n = 0;
  for (const char* p = src; (p = strstr(p, "/* the tiles of ")); p++) n++;
  return n;
}

static void check_case(const pcase_t* c) {
  xc_graph_t* g = cpu_case_parse(c->text, "pack.xir");
  if (!g) return;
  xc_tensor_t* in[CPU_CASE_MAX_IN];
  int ni = cpu_case_inputs(g, 0.0, in);
  xc_tensor_t* want = cpu_case_reference(g, ni, in);
  char dir[] = "/tmp/xc-pack-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  xc_compiled_module_t* m = cpu_case_compile(g, c->knobs, dir);
  xc_graph_destroy(g);
  const char* src = cpu_case_dumped_source(dir);
  int packed = packed_operands(src);
  bool entry = strstr(src, "_pack_programs") != NULL;
  /* the blocked dot's layouts: strips of b, panels of a rows */
  bool layouts = strstr(src, "for (int64_t xs = 0; xs < ") && strstr(src, "const int64_t xb = i0 < ");
  cpu_case_remove_dir(dir);
  CHECK_EQ_INT(packed, c->packed);
  CHECK_EQ_INT(entry, c->packed > 0);
  CHECK_EQ_INT(layouts, c->packed > 0);
  char label[256];
  snprintf(label, sizeof label, "%s (%d packed)", c->name, packed);
  /* twice: the second run reuses the device's pack buffer */
  cpu_case_run(m, 2, ni, in, want, label);
  cpu_case_free(ni, in, want);
  xc_compiled_module_destroy(m);
}

int main(void) {
  if (cpu_case_have_cpu())
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_pack");
}
