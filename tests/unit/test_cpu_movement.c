/* Data movement on the cpu target (docs/lowering.md, "Group kinds",
 * data movement): each graph below goes through the whole pipeline for cpu
 * and its output (poisoned before the run) must match the interpreter's;
 * the source must take the form the case names.
 *   - A Concat whose inputs are contiguous runs of the output (nothing
 *     before the axis but dims of 1) copies run by run, programs over
 *     (blocks, input): the input a program copies is a condition on its
 *     second program index (`= pid1;`), the same for all its lanes. A run
 *     placed at the wrong start, a block past a run's end stored, or a
 *     program copying the wrong input fails here; runs of different lengths
 *     that are no multiple of the block leave ragged blocks in each.
 *   - A Concat with a batch before the axis keeps the flat form (one
 *     program index).
 *   - A tiled Transpose of f32 tiles whose sides are multiples of 8
 *     transposes them in 8x8 blocks of vector shuffles (`xc_tr8`), ragged
 *     tiles (masked stores) included; other tile sides and element sizes
 *     read the tile transposed element by element. A shuffle that moves the
 *     wrong lane, a block at the wrong place or a masked lane stored fails
 *     here. */
#include "cpu_case.h"

typedef struct mcase {
  const char* name;
  const char* text;
  const char* knobs;  /* XCOMP_KNOBS-style overrides, or NULL */
  const char* expect; /* a substring the source must hold, or NULL */
  const char* refuse; /* a substring it must not hold, or NULL */
} mcase_t;

static const mcase_t cases[] = {
    {"Concat of four NCHW maps, 3 + 5 + 8 + 16 channels of 5 x 7 (runs 105, 175, 280, 560)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[1, 3, 5, 7]\n  input b: f32[1, 5, 5, 7]\n"
     "  input c: f32[1, 8, 5, 7]\n  input d: f32[1, 16, 5, 7]\n"
     "  y = Concat(a, b, c, d) {axis: 1}\n  output y\n}\n",
     NULL, "= pid1;", NULL},
    {"Concat of four NCHW maps in blocks of 64 (several ragged blocks a run)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[1, 3, 5, 7]\n  input b: f32[1, 5, 5, 7]\n"
     "  input c: f32[1, 8, 5, 7]\n  input d: f32[1, 16, 5, 7]\n"
     "  y = Concat(a, b, c, d) {axis: 1}\n  output y\n}\n",
     "BLOCK_p0=64", "= pid1;", NULL},
    {"Concat along the first axis of [2, 9] and [5, 9]",
     "xir 1\ngraph g opset 23 {\n  input a: f32[2, 9]\n  input b: f32[5, 9]\n"
     "  y = Concat(a, b) {axis: 0}\n  output y\n}\n",
     NULL, "= pid1;", NULL},
    {"Concat of two batches of maps: the flat form",
     "xir 1\ngraph g opset 23 {\n  input a: f32[2, 3, 4, 5]\n  input b: f32[2, 6, 4, 5]\n"
     "  y = Concat(a, b) {axis: 1}\n  output y\n}\n",
     NULL, NULL, "= pid1;"},
    {"Transpose NCHW -> NHWC of [2, 48, 8, 16] (tiles of 16 pixels x 16 channels: 8x8 blocks)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 48, 8, 16]\n"
     "  y = Transpose(x) {perm: [0, 2, 3, 1]}\n  output y\n}\n",
     NULL, "xc_tr8(&", NULL},
    {"Transpose NCHW -> NHWC of [1, 40, 6, 24] in tiles of 8 x 32 (a ragged channel tile, masked stores)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 40, 6, 24]\n"
     "  y = Transpose(x) {perm: [0, 2, 3, 1]}\n  output y\n}\n",
     "BLOCK_A_p0=8,BLOCK_B_p0=32", "xc_tr8(&", NULL},
    {"Transpose NCHW -> NHWC of [1, 20, 3, 12] (rows of 12 pixels: per element)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 20, 3, 12]\n"
     "  y = Transpose(x) {perm: [0, 2, 3, 1]}\n  output y\n}\n",
     NULL, NULL, "xc_tr8(&"},
    {"Transpose NCHW -> NHWC of [1, 64, 4, 32] in tiles of 32 x 64 (8x8 blocks over a 64 x 32 tile)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 64, 4, 32]\n"
     "  y = Transpose(x) {perm: [0, 2, 3, 1]}\n  output y\n}\n",
     "BLOCK_A_p0=32,BLOCK_B_p0=64", "xc_tr8(&", NULL},
    {"Transpose of f64 [16, 24] (8-byte elements: per element)",
     "xir 1\ngraph g opset 23 {\n  input x: f64[16, 24]\n  y = Transpose(x)\n  output y\n}\n",
     NULL, NULL, "xc_tr8(&"},
};

static void check_case(const mcase_t* c) {
  xc_tensor_t* in[CPU_CASE_MAX_IN], *want = NULL;
  int ni = 0;
  const char* src;
  xc_compiled_module_t* m = cpu_case_build(c->text, "movement.xir", c->knobs, 0.5, &ni, in, &want, &src);
  if (!m) return; /* cpu_case_build freed the case */
  if (c->expect && !strstr(src, c->expect)) fprintf(stderr, "%s: the source lacks '%s'\n", c->name, c->expect);
  if (c->refuse && strstr(src, c->refuse)) fprintf(stderr, "%s: the source holds '%s'\n", c->name, c->refuse);
  CHECK(!c->expect || strstr(src, c->expect) != NULL);
  CHECK(!c->refuse || strstr(src, c->refuse) == NULL);
  cpu_case_check_free(m, ni, in, want, c->name);
}

int main(void) {
  if (cpu_case_have_cpu())
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_movement");
}
