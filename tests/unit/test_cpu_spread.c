/* The cpu scheduler spreads one-program kernels over the cores
 * (targets/cpu/cpu_target.c, cpu_spread_programs; docs/targets.md): small
 * 1x1 convs of mobilenet-class models (36 pixels x 32 channels, 9 pixels x
 * 112 channels) are one program with the lowering's default tiles, which
 * leaves every core but one idle. For each case below:
 *   - the lowering offers the split (half the pixels, half the channels)
 *     as a candidate;
 *   - the cpu scheduler, given caps of 2 cores and no fixed knobs, picks it
 *     (at least 2 programs, the tile the case names), keeps the defaults
 *     with 1 core, with XC_SCHEDULE_KEEP_KNOBS, and for a kernel that
 *     already has programs enough;
 *   - compiled for the cpu with the split tile (and with the host's own
 *     default), the outputs (poisoned first) match the interpreter;
 *   - on a host of 2 or more cores, the default compile of a split kernel
 *     carries its one-thread form (`xk_<kernel>_alone` under the default
 *     knobs, with `_alone_grid` the default's grid), and a kernel that is
 *     not split carries none.
 * ctest runs this twice: with the pool's threads (the split programs over
 * the pool) and as test_cpu_spread_one_thread with XCOMP_NUM_THREADS=1,
 * where every launch of a split kernel runs its one-thread form.
 * A scheduler that ignored the cores, split a large kernel, an emitter
 * wrong on the split tiles, or a one-thread form with other knobs or a
 * wrong grid fails here. */

#include <unistd.h>

#include "cpu_case.h"
#include "xcomp/lower.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

typedef struct scase {
  const char* name;
  const char* text;
  const char* knob;   /* the knob the split changes ("BLOCK_M_p0"), or NULL: none */
  int64_t whole;      /* its default: the whole count */
  int64_t split;      /* its value with 2 cores */
  /* its value with 2 cores where the host's SIMD width does not divide
   * `split` (a channel tile is a multiple of it: 112 channels on AVX-512
   * split as 64 + 48); 0: `split` everywhere */
  int64_t split_wide;
} scase_t;

static int64_t g_simd; /* the cpu target's SIMD width here (f32 lanes) */

static int64_t split_of(const scase_t* c) {
  return c->split_wide && g_simd > 0 && c->split % g_simd ? c->split_wide : c->split;
}

static const scase_t cases[] = {
    {"1x1 conv, 36 pixels, 40 -> 32 channels: two programs of 18 pixels",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 6, 6, 40]\n  input w: f32[1, 1, 40, 32]\n  input b: f32[32]\n"
     "  c = xcomp::ConvNHWC(x, w, b) {weight_layout: \"HWIO\"}\n  y = Relu(c)\n  output y\n}\n",
     "BLOCK_M_p0", 36, 18, 0},
    {"1x1 conv, 9 pixels, 64 -> 112 channels: two programs of 56 channels (64 + 48 on AVX-512)",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 3, 3, 64]\n  input w: f32[1, 1, 64, 112]\n"
     "  y = xcomp::ConvNHWC(x, w) {weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_N_p0", 112, 56, 64},
    {"3x3 conv, 36 pixels, 8 -> 24 channels (window rows): two programs of 18 pixels",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 6, 6, 8]\n  input w: f32[3, 3, 8, 24]\n"
     "  y = xcomp::ConvNHWC(x, w) {pads: [1, 1, 1, 1], weight_layout: \"HWIO\"}\n  output y\n}\n",
     "BLOCK_M_p0", 36, 18, 0},
    {"1x1 conv, 576 pixels, 16 -> 48 channels: programs enough, unchanged",
     "xir 1\ngraph g opset 23 {\n  input x: f32[1, 24, 24, 16]\n  input w: f32[1, 1, 16, 48]\n"
     "  y = xcomp::ConvNHWC(x, w) {weight_layout: \"HWIO\"}\n  output y\n}\n",
     NULL, 0, 0, 0},
};

/* The conv kernel's default knobs scheduled for `cores` cores. */
static void schedule_for(xc_session_t* s, const xc_tiled_kernel_t* k, int cores, unsigned flags,
                         xc_tiled_schedule_t* out) {
  xc_device_caps_t caps = *xc_session_caps(s);
  caps.compute_units = cores;
  xc_tiled_schedule_init(k, out);
  for (int j = 0; j < k->num_knobs; j++) out->knobs[j] = k->knobs[j].default_value;
  CHECK_OK(xc_target_schedule(xc_session_target(s), &caps, k, xc_session_tiled_limits(s), flags, out));
}

static void check_schedules(const scase_t* c, xc_graph_t* g) {
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = "cpu";
  o.use_cache = false;
  xc_session_t* s = NULL;
  CHECK_OK(xc_session_create(&o, &s));
  xc_lowered_module_t* lm = NULL;
  if (s) CHECK_OK(xc_session_lower(s, g, &lm));
  const xc_tiled_limits_t* limits = s ? xc_session_tiled_limits(s) : NULL;
  int convs = 0;
  for (int i = 0; lm && i < lm->num_kernels; i++) {
    const xc_tiled_kernel_t* k = lm->kernels[i].kernel;
    if (!strstr(k->name, "conv")) continue;
    convs++;
    int64_t defaults[XC_TILED_MAX_SCHED_KNOBS];
    for (int j = 0; j < k->num_knobs; j++) defaults[j] = k->knobs[j].default_value;
    int64_t before = xc_tiled_static_programs(k, defaults, limits);
    int at = c->knob ? xc_tiled_find_knob(k, c->knob) : -1;
    if (c->knob) {
      CHECK(at >= 0);
      if (at < 0) continue;
      CHECK_EQ_INT(before, 1);
      bool offered = false;
      for (int q = 0; q < k->knobs[at].num_candidates; q++) offered |= k->knobs[at].candidates[q] == split_of(c);
      CHECK(offered);
    } else {
      CHECK(before >= 2);
    }
    xc_tiled_schedule_t two, one, kept;
    schedule_for(s, k, 2, 0, &two);
    schedule_for(s, k, 1, 0, &one);
    schedule_for(s, k, 2, XC_SCHEDULE_KEEP_KNOBS, &kept);
    int64_t p2 = xc_tiled_static_programs(k, two.knobs, limits);
    printf("cpu: %s: %lld program(s) by default, %lld on 2 cores\n", c->name, (long long)before, (long long)p2);
    CHECK(p2 >= 2);
    for (int j = 0; j < k->num_knobs; j++) {
      CHECK_EQ_INT(one.knobs[j], defaults[j]);
      CHECK_EQ_INT(kept.knobs[j], defaults[j]);
      int64_t want = j == at ? split_of(c) : defaults[j];
      if (k->knobs[j].kind == XC_KNOB_TILE) CHECK_EQ_INT(two.knobs[j], want);
    }
  }
  CHECK_EQ_INT(convs, 1);
  if (lm) xc_session_lowered_free(s, lm);
  xc_session_destroy(s);
}

/* The default compile's source (the host's caps: its cores, as the cpu
 * target reads them): a split kernel's one-thread form under the default
 * knobs and grid, none for a kernel that is not split or on one core. */
static void check_alone_form(const scase_t* c, const char* src) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char* alone = strstr(src, "_alone: kernel ");
  printf("cpu: %s: %ld core(s), one-thread form %s\n", c->name, cores, alone ? "emitted" : "none");
  if (!c->knob || cores <= 1) {
    CHECK(alone == NULL);
    return;
  }
  CHECK(alone != NULL);
  if (!alone) return;
  /* the header line of the alone entry names its knobs: the split knob at
   * its default (the whole count: 36 pixels, 112 channels), not the split */
  const char* eol = strchr(alone, '\n');
  char want[64];
  snprintf(want, sizeof want, " %s=%lld ", c->knob, (long long)c->whole);
  const char* at = strstr(alone, want);
  CHECK(at != NULL && eol && at < eol);
  snprintf(want, sizeof want, " %s=%lld ", c->knob, (long long)split_of(c));
  at = strstr(alone, want);
  CHECK(!at || (eol && at > eol));
  /* one program by default (checked in check_schedules) */
  CHECK(strstr(alone, "_alone_grid[3] = {1, 1, 1};") != NULL);
}

/* Compiles g for the cpu with `knobs` (NULL: the host's default) and
 * compares its output with want (three runs: a replay records the launches
 * and replays them, choosing the pool or the calling thread). */
static void check_run(const scase_t* c, xc_graph_t* g, const char* knobs, int ni, xc_tensor_t* const* in,
                      const xc_tensor_t* want) {
  char dir[] = "/tmp/xc-spread-XXXXXX";
  bool dumped = !knobs && mkdtemp(dir) != NULL;
  xc_compiled_module_t* m = cpu_case_compile(g, knobs, dumped ? dir : NULL);
  if (dumped && m) check_alone_form(c, cpu_case_dumped_source(dir));
  if (dumped) cpu_case_remove_dir(dir);
  char label[256];
  snprintf(label, sizeof label, "%s, knobs %s", c->name, knobs ? knobs : "default");
  cpu_case_run(m, 3, ni, in, want, label);
  xc_compiled_module_destroy(m);
}

static void check_case(const scase_t* c) {
  xc_graph_t* g = cpu_case_parse(c->text, "spread.xir");
  if (!g) return;
  xc_tensor_t* in[CPU_CASE_MAX_IN];
  int ni = cpu_case_inputs(g, 0.0, in);
  xc_tensor_t* want = cpu_case_reference(g, ni, in);
  check_schedules(c, g);
  check_run(c, g, NULL, ni, in, want);
  if (c->knob) {
    char forced[64]; /* XCOMP_KNOBS-style override that forces the split */
    snprintf(forced, sizeof forced, "%s=%lld", c->knob, (long long)split_of(c));
    check_run(c, g, forced, ni, in, want);
  }
  cpu_case_free(ni, in, want);
  xc_graph_destroy(g);
}

int main(void) {
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = "cpu";
  xc_session_t* s = NULL;
  if (cpu_case_have_cpu()) {
    CHECK_OK(xc_session_create(&o, &s));
    if (s) g_simd = xc_session_tiled_limits(s)->value[XC_TILED_LIMIT_SIMD_WIDTH];
    xc_session_destroy(s);
  }
  printf("cpu: SIMD width %lld\n", (long long)g_simd);
  if (cpu_case_have_cpu())
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  return xc_test_summary("test_cpu_spread");
}
