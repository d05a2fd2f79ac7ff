/* Masked rows on the cpu target (docs/emitter.md, "Masked rows"): a masked
 * 2-D load into an array whose mask is convex along its rows (a
 * convolution's window row: pixels at the input's edges read part of it) is
 * copied row by row, unmasked where the mask holds at both ends of the row,
 * per element elsewhere. Each graph below goes through the whole pipeline
 * for cpu with knob overrides that put rows at every edge (left, right, top,
 * bottom, the ragged last tile), and
 *   - the emitted source must take the path (`xrows`), and read the rows
 *     inside the mask in place through row pointers where only the dot
 *     reads the tile, the input's and the weights' (docs/emitter.md,
 *     "Rows read in place"),
 *   - the outputs (poisoned before the run) must match the interpreter.
 *   - a ragged tile's epilogue tests each register row against the store's
 *     mask at both ends and stores the rows inside it unmasked (a loop GCC
 *     vectorizes), the others masked: an end test that looked at one end
 *     writes a row's lanes past N into the next row, which fails here,
 *   - a dot whose K per step is short (at most 32) runs after its K loops,
 *     over one slice of its operands per step (docs/emitter.md, "Hoisted
 *     dots"): the source must take that form where expected and only there.
 * A row test that looked at one end only, or copied a partly masked row
 * unmasked, reads the neighbouring pixels' channels (or past the tile) and
 * fails here; so does a row pointer at the wrong offset, or a hoisted dot
 * reading another step's slice. */
#include "cpu_case.h"

typedef struct rcase {
  const char* name;
  const char* text;
  const char* knobs; /* XCOMP_KNOBS-style overrides, or NULL */
  bool hoisted;      /* the dot runs after its K loops */
  bool full_rows;    /* the epilogue tests its register rows against the store's mask */
  const char* expect; /* '|'-separated substrings the source must hold, or NULL */
  int patch;          /* 1: the input rows come from a padded patch, -1: they must not, 0: either */
} rcase_t;

static const rcase_t cases[] = {
    {"3x3 conv, 3 channels, pad 1 (the stem's rows of 9), default tiles",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 10, 9, 3]\n  input w: f32[3, 3, 3, 8]\n  input b: f32[8]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  y = Relu(c)\n  output y\n}\n",
     NULL, true, false, NULL, 0},
    {"3x3 conv, 3 channels, pad 1, tiles 16 x 16 x 8 (a row split over K steps)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 10, 9, 3]\n  input w: f32[3, 3, 3, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=8", true, false, NULL, 0},
    {"3x2 conv, 5 channels, strides 2, pads [1, 0, 2, 1], dilated rows",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 11, 13, 5]\n  input w: f32[3, 2, 5, 6]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 0, 2, 1], strides: [2, 2], dilations: [2, 1], "
     "weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL, true, false, NULL, 0},
    {"MatMul [37,29] x [29,45] (ragged tiles)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[37, 29]\n  input b: f32[29, 45]\n"
     "  y: f32[37, 45] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=16", true, false, NULL, 0},
    {"1-D conv 8 -> 40 channels + Gelu, 37 pixels (ragged rows and columns under the epilogue), K steps of 8",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 37, 8]\n  input w: f32[3, 8, 40]\n  input b: f32[40]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [1, 1], weight_layout: \"HWIO\"}\n  y = Gelu(c)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=8", true, true, NULL, 0},
    {"1-D conv 8 -> 40 channels + Gelu, 37 pixels, one K step (the epilogue on the last step)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 37, 8]\n  input w: f32[3, 8, 40]\n  input b: f32[40]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [1, 1], weight_layout: \"HWIO\"}\n  y = Gelu(c)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=64", false, true, NULL, 0},
    {"MatMul [37,100] x [100,45], K steps of 64 (too long a step to hoist)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[37, 100]\n  input b: f32[100, 45]\n"
     "  y: f32[37, 45] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=64", false, false, NULL, 0},
    {"MatMul f64 [37,29] x [29,45] (ragged tiles, double rows in place)",
     "xir 1\ngraph g opset 23 {\n  input a: f64[37, 29]\n  input b: f64[29, 45]\n"
     "  y: f64[37, 45] = MatMul(a, b)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=32,BLOCK_K_p0=16", true, false, NULL, 0},
    {"1x1 conv, 24 -> 32 channels, whole tiles (no mask: every row in place)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 8, 8, 24]\n  input w: f32[1, 1, 24, 32]\n"
     "  y = xcomp::ConvNHWC(x, w) {weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_M_p0=32,BLOCK_N_p0=32,BLOCK_K_p0=8", true, false, NULL, 0},
    /* defaults: a 144-long reduction in two steps of 72 (no masked tail,
     * the input rows read in place), 24 channels as vectors of 8 in the
     * blocked dot (not padded to 32, which copied every weight row) */
    {"1x1 conv, 144 -> 24 channels over 6x6, default tiles: whole tiles",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 6, 6, 144]\n  input w: f32[1, 1, 144, 24]\n  input b: f32[24]\n"
     "  y = xcomp::ConvNHWC(x, w, b) {weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL, false, false, "= 72; /* BLOCK_K_p0 */|= 24; /* BLOCK_N_p0 */|typedef float xc_vec __attribute__((vector_size(32)))", 0},
    /* rows that the default tile would leave ragged take tiles as even as
     * the 8-row blocks allow: 24 rows in one tile of 24 (a decoder's 24
     * tokens), 100 in two of 56 (not 64) */
    {"MatMul [24,64] x [64,64], default tiles: whole tiles",
     "xir 1\ngraph g opset 23 {\n  input a: f32[24, 64]\n  input b: f32[64, 64]\n"
     "  y: f32[24, 64] = MatMul(a, b)\n  output y\n}\n",
     NULL, false, false, "= 24; /* BLOCK_M_p0 */", 0},
    {"MatMul [100,64] x [64,256], default tiles (twelve ragged rows)",
     "xir 1\ngraph g opset 23 {\n  input a: f32[100, 64]\n  input b: f32[64, 256]\n"
     "  y: f32[100, 256] = MatMul(a, b)\n  output y\n}\n",
     NULL, false, false, "= 56; /* BLOCK_M_p0 */", 0},
    /* padded patches (docs/lowering.md, "Padded patches"): the input rows a
     * program reads copied once with their padding as zeros, every window
     * row then read in place from the copy. A patch row at the wrong input
     * row, a pad not zeroed, a tile's rows counted wrong where it crosses
     * from one image into the next, or the copy past its rows fails here. */
    {"3x3 conv, 3 channels, pad 1, 2 x 32 x 32 (the stem), default tiles: a padded patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 32, 32, 3]\n  input w: f32[3, 3, 3, 16]\n  input b: f32[16]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  y = Relu(c)\n  output y\n}\n",
     NULL, true, false, NULL, 1},
    {"3x3 conv, 4 channels, pad 1, 3 images of 5 x 7, tiles of 16 pixels crossing from image to image: a padded patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[3, 5, 7, 4]\n  input w: f32[3, 3, 4, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=8", true, false, NULL, 1},
    {"3x3 conv, 4 channels, strides 2, dilations [2, 1], pads [2, 1, 1, 2], 2 images: a padded patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 12, 11, 4]\n  input w: f32[3, 3, 4, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [2, 1, 1, 2], strides: [2, 2], dilations: [2, 1], weight_layout: \"HWIO\"}\n"
     "  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=8", true, false, NULL, 1},
    {"1-D conv k=4, 8 channels, pads [2, 1], 8 x 6 pixels in tiles of 16: a padded patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[8, 6, 8]\n  input w: f32[4, 8, 16]\n  input b: f32[16]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {pads: [2, 1], weight_layout: \"HWIO\"}\n  y = Relu(c)\n  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=32", false, false, NULL, 1},
    {"3x3 conv, 4 channels, strides 2, pads [1, 1, 0, 0] over 9 x 11 (the patch holds 10 of 11 input columns)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[2, 9, 11, 4]\n  input w: f32[3, 3, 4, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 1, 0, 0], strides: [2, 2], weight_layout: \"HWIO\"}\n"
     "  output y\n}\n",
     "BLOCK_M_p0=16,BLOCK_N_p0=16,BLOCK_K_p0=8", true, false, NULL, 1},
    {"5x5 conv, one channel, pad 2, 16 x 16: a padded patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 16, 16, 1]\n  input w: f32[5, 5, 1, 8]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [2, 2, 2, 2], weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL, true, false, NULL, 1},
    /* a group of several phases (the conv and an Add reading it through two
     * Reshapes, not folded at -O0) runs its programs as loops, where a
     * work-group allocation may not sit: the edge rows are copied */
    {"3x3 conv, 4 channels, pad 1, in a group of several phases (-O0): no patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 6, 7, 4]\n  input w: f32[3, 3, 4, 8]\n"
     "  const s: i64[2] = [42, 8]\n  const s2: i64[4] = [1, 6, 7, 8]\n"
     "  c = xcomp::ConvNHWC(x, w) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n"
     "  r = Reshape(c, s)\n  r2 = Reshape(r, s2)\n  y = Add(c, r2)\n  output y\n}\n",
     NULL, true, false, NULL, -1},
    /* a stride-2 stem padded on one side only has few edge rows: copying
     * the patch would cost more than it saves (mobilenetv2-tiny's stem) */
    {"3x3 conv, 3 channels, strides 2, pads [0, 0, 1, 1] over 96 x 96: no patch",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 96, 96, 3]\n  input w: f32[3, 3, 3, 16]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [0, 0, 1, 1], strides: [2, 2], weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL, true, false, NULL, -1},
};

/* Whether the source reads a dot's rows in place from an allocation of the
 * kernel (`xa..[i0] = v<id> + xoffs..`, or `? v<id> + xoffs..` where some
 * rows are copied) rather than from a parameter (`p_v<id> + xoffs..`). */
static bool rows_from_patch(const char* src) {
  for (const char* p = strstr(src, " v"); p; p = strstr(p + 1, " v")) {
    if (p < src + 2 || (p[-1] != '=' && p[-1] != '?')) continue;
    const char* q = p + 2;
    if (*q < '0' || *q > '9') continue;
    while (*q >= '0' && *q <= '9') q++;
    if (!strncmp(q, " + xoffs", 8)) return true;
  }
  return false;
}

static void check_case(const rcase_t* c) {
  xc_tensor_t* in[CPU_CASE_MAX_IN], *want = NULL;
  int ni = 0;
  const char* src;
  /* no zeros: a masked-off element read as data shows */
  cpu_case_opt_level = strstr(c->name, "(-O0)") ? 0 : -1;
  xc_compiled_module_t* m = cpu_case_build(c->text, "rows.xir", c->knobs, 0.5, &ni, in, &want, &src);
  cpu_case_opt_level = -1;
  if (!m) return; /* cpu_case_build freed the case */
  bool rows = cpu_case_rows_split(src), in_place = strstr(src, " + xoffs") != NULL;
  bool whole = strstr(src, "no mask: every row in place") != NULL;
  bool b_in_place = strstr(src, "memcpy(&b0, &xa") != NULL || strstr(src, "memcpy(&b0, &xb[q]") != NULL;
  bool hoisted = strstr(src, "for (int64_t xo = 0; xo < ") != NULL && strstr(src, "xhb_xa") != NULL;
  bool full_rows = strstr(src, "if (xfull) {") != NULL;
  bool patch = rows_from_patch(src);
  if (c->patch) CHECK(patch == (c->patch > 0));
  if (!patch) CHECK(strstr(c->name, "whole tiles") ? whole : rows);
  for (const char* x = c->expect; x && *x;) {
    const char* bar = strchr(x, '|');
    size_t n = bar ? (size_t)(bar - x) : strlen(x);
    char want_text[128];
    snprintf(want_text, sizeof want_text, "%.*s", (int)n, x);
    if (!strstr(src, want_text)) fprintf(stderr, "%s: the source lacks '%s'\n", c->name, want_text);
    CHECK(strstr(src, want_text) != NULL);
    x += n + (bar ? 1 : 0);
  }
  CHECK(in_place);
  CHECK(b_in_place); /* the weights' rows too */
  CHECK(hoisted == c->hoisted);
  CHECK(!c->full_rows || full_rows);
  char label[256];
  snprintf(label, sizeof label, "%s: rows %s%s%s", c->name, rows ? "split" : "not split", hoisted ? ", hoisted" : "",
           patch ? ", from a patch" : "");
  cpu_case_check_free(m, ni, in, want, label);
}

int main(void) {
  if (cpu_case_have_cpu())
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_rows");
}
