/* Access bounds of tiled kernels (ir/tiled_bounds.c): the element offsets a
 * load or store may touch under concrete knobs, scalar parameters and grid.
 * A masked tile (offsets of a ragged last tile cut by `offs < n`) is bounded
 * by the mask; an unmasked ragged tile reaches past n; integer div/rem of a
 * linear index stay inside; a clamp bounds a loaded index; a loaded index
 * alone, or a mask joined by `or`, is unbounded; a mask false everywhere is
 * `never`; scalar parameters and the grid are used. */
#include "test.h"
#include "xcomp/tiled.h"

typedef struct {
  int n;
  xc_tiled_access_t a[8];
} seen_t;

static void collect(void* ctx, const xc_tiled_access_t* a) {
  seen_t* s = ctx;
  if (s->n < 8) s->a[s->n++] = *a;
}

/* Parses text, runs the analysis with knob values = defaults, scalar
 * parameter values params[], grid[]. */
static seen_t run(const char* text, const int64_t* params, int64_t g0) {
  seen_t s;
  memset(&s, 0, sizeof s);
  xc_tiled_kernel_t* k = NULL;
  CHECK_OK(xc_tiled_parse(text, strlen(text), "bounds.tiled", &k));
  if (!k) return s;
  int64_t knobs[8] = {0};
  for (int i = 0; i < k->num_knobs && i < 8; i++) knobs[i] = k->knobs[i].default_value;
  int64_t grid[3] = {g0, 1, 1};
  CHECK_OK(xc_tiled_accesses(k, knobs, params, grid, collect, &s));
  xc_tiled_kernel_destroy(k);
  return s;
}

static void expect_bounded(const xc_tiled_access_t* a, int64_t lo, int64_t hi) {
  CHECK(a->bounded && !a->never);
  CHECK_EQ_INT(a->lo, lo);
  CHECK_EQ_INT(a->hi, hi);
}

static const char* copy_kernel =
    "kernel @copy {\n"
    "  knob B: tile in {16, 32} = 16\n"
    "  param %n: i64\n"
    "  param %x: memref<global f32 in>\n"
    "  param %y: memref<global f32 out>\n"
    "  grid [ceildiv(n, B)]\n"
    "  %1 = knob B : i64\n"
    "  %2 = program_id 0 : i64\n"
    "  %3 = mul %2, %1 : i64\n"
    "  %4 = arange : i64[B]\n"
    "  %5 = add %3, %4 : i64[B]\n"
    "  %6 = cmp lt %5, %n : bool[B]\n"
    "  %7 = load %x[%5] mask %6 : f32[B]\n"
    "  store %y[%5], %7\n"
    "}\n";

static const char* divrem_kernel =
    "kernel @transpose {\n"
    "  knob B: tile in {64} = 64\n"
    "  param %x: memref<global f32 in>\n"
    "  param %y: memref<global f32 out>\n"
    "  grid [ceildiv(21, B)]\n"
    "  %1 = knob B : i64\n"
    "  %2 = program_id 0 : i64\n"
    "  %3 = mul %2, %1 : i64\n"
    "  %4 = arange : i64[B]\n"
    "  %5 = add %3, %4 : i64[B]\n"
    "  %6 = const 21 : i64\n"
    "  %7 = cmp lt %5, %6 : bool[B]\n"
    "  %8 = const 7 : i64\n"
    "  %9 = div %5, %8 : i64[B]\n"
    "  %10 = rem %5, %8 : i64[B]\n"
    "  %11 = const 3 : i64\n"
    "  %12 = mul %10, %11 : i64[B]\n"
    "  %13 = add %12, %9 : i64[B]\n"
    "  %14 = load %x[%13] mask %7 : f32[B]\n"
    "  store %y[%5], %14 mask %7\n"
    "}\n";

static const char* gather_kernel =
    "kernel @gather {\n"
    "  knob B: tile in {8} = 8\n"
    "  param %i: memref<global i32 in>\n"
    "  param %d: memref<global f32 in>\n"
    "  param %y: memref<global f32 out>\n"
    "  grid [1]\n"
    "  %1 = arange : i64[B]\n"
    "  %2 = load %i[%1] : i32[B]\n"
    "  %3 = cast %2 : i64[B]\n"
    "  %4 = load %d[%3] : f32[B]\n"
    "  %5 = const 0 : i64\n"
    "  %6 = const 4 : i64\n"
    "  %7 = max %3, %5 : i64[B]\n"
    "  %8 = min %7, %6 : i64[B]\n"
    "  %9 = load %d[%8] : f32[B]\n"
    "  %10 = cmp ge %3, %5 : bool[B]\n"
    "  %11 = cmp le %3, %6 : bool[B]\n"
    "  %12 = and %10, %11 : bool[B]\n"
    "  %13 = load %d[%3] mask %12 : f32[B]\n"
    "  %14 = or %10, %11 : bool[B]\n"
    "  %15 = load %d[%3] mask %14 : f32[B]\n"
    "  %16 = cmp lt %3, %5 : bool[B]\n"
    "  %17 = and %10, %16 : bool[B]\n"
    "  %18 = load %d[%3] mask %17 : f32[B]\n"
    "  %19 = add %4, %9 : f32[B]\n"
    "  store %y[%1], %19\n"
    "}\n";

int main(void) {
  /* n = 40, B = 16: three programs, lanes 0..47; the mask keeps 0..39. */
  int64_t p_copy[3] = {40, 0, 0};
  seen_t s = run(copy_kernel, p_copy, 3);
  CHECK_EQ_INT(s.n, 2);
  if (s.n == 2) {
    CHECK(!s.a[0].store && s.a[0].param == 1);
    expect_bounded(&s.a[0], 0, 39);        /* masked load */
    CHECK(s.a[1].store && s.a[1].param == 2);
    expect_bounded(&s.a[1], 0, 47);        /* the unmasked store runs past n */
  }
  /* The grid is what bounds program ids: one more program, 16 more lanes. */
  s = run(copy_kernel, p_copy, 4);
  if (s.n == 2) expect_bounded(&s.a[1], 0, 63);

  /* y[i] = x[(i % 7) * 3 + i / 7] for i < 21: offsets 0..20. */
  s = run(divrem_kernel, NULL, 1);
  CHECK_EQ_INT(s.n, 2);
  if (s.n == 2) {
    expect_bounded(&s.a[0], 0, 20);
    expect_bounded(&s.a[1], 0, 20);
  }

  s = run(gather_kernel, NULL, 1);
  CHECK_EQ_INT(s.n, 7);
  if (s.n == 7) {
    expect_bounded(&s.a[0], 0, 7);              /* the indices themselves */
    CHECK(!s.a[1].bounded && !s.a[1].never);    /* d[idx]: read from memory */
    expect_bounded(&s.a[2], 0, 4);              /* d[min(max(idx, 0), 4)] */
    expect_bounded(&s.a[3], 0, 4);              /* d[idx] mask idx >= 0 && idx <= 4 */
    CHECK(!s.a[4].bounded);                     /* mask joined by or: not used */
    CHECK(s.a[5].never);                        /* idx >= 0 && idx < 0 */
    expect_bounded(&s.a[6], 0, 7);              /* the store */
  }
  return xc_test_summary("test_tiled_bounds");
}
