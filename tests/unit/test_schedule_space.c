/* The schedulers through the target interface, on real lowered kernels of
 * tests/models (no device needed: architectures and emission only):
 * - the default schedule of every kernel is legal, and on cuda:sm_90 in bf16
 *   the GEMMs take tensor cores;
 * - the schedule space of a GEMM (xc_target_schedule_space) holds only legal
 *   records, with both matrix-instruction and generic dots, and every record
 *   of it emits;
 * - under small limits (16 KiB of work-group memory, 64 threads) every kernel
 *   still gets a legal schedule (the fallbacks), and the emitter follows it;
 * - FOLLOW refuses what the device cannot do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "xcomp/driver.h"
#include "xcomp/frontend.h"
#include "xcomp/lower.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

typedef struct space_ctx {
  xc_target_t* target;
  const xc_device_caps_t* caps;
  const xc_tiled_kernel_t* kernel;
  const xc_tiled_limits_t* limits;
  int mma, generic, emitted, bad;
} space_ctx_t;

static bool visit(void* p, const xc_tiled_schedule_t* s) {
  space_ctx_t* c = p;
  xc_status_t st = xc_tiled_schedule_check(c->kernel, s, c->limits);
  if (st) {
    fprintf(stderr, "illegal record in the space: %s\n", xc_status_message(st));
    xc_status_free(st);
    c->bad++;
    return true;
  }
  bool any_mma = false;
  for (int i = 0; i < s->num_dots; i++) any_mma |= s->dots[i].mma.m != 0;
  if (any_mma) c->mma++;
  else c->generic++;
  /* the emitter follows the record (a copy of the kernel carries it) */
  char* text = xc_tiled_print_to_string(c->kernel);
  xc_tiled_kernel_t* k = NULL;
  st = text ? xc_tiled_parse(text, strlen(text), "space", &k) : xc_error_oom();
  free(text);
  if (!st) st = xc_tiled_set_schedule(k, s);
  xc_knob_t knobs[XC_TILED_MAX_SCHED_KNOBS];
  for (int i = 0; !st && i < s->num_knobs; i++) knobs[i] = (xc_knob_t){k->knobs[i].name, s->knobs[i]};
  xc_kernel_source_t src;
  if (!st) st = xc_target_emit(c->target, c->caps, k, knobs, s->num_knobs, &src);
  if (!st) {
    c->emitted++;
    xc_kernel_source_release(&src);
  } else {
    fprintf(stderr, "emitting a record of the space: %s\n", xc_status_message(st));
    xc_status_free(st);
    c->bad++;
  }
  xc_tiled_kernel_destroy(k);
  return true;
}

/* Lowers a model for a session and runs check(kernel) on each kernel. */
static void lower_model(const char* model, xc_session_options_t* o, void (*check)(xc_session_t*, xc_lowered_module_t*)) {
  xc_session_t* s = NULL;
  xc_status_t st = xc_session_create(o, &s);
  if (st && xc_status_code(st) == XC_UNAVAILABLE) {
    printf("skip %s on %s: %s\n", model, o->target, xc_status_message(st));
    xc_status_free(st);
    return;
  }
  CHECK_OK(st);
  if (!s) return;
  xc_graph_t* g = NULL;
  CHECK_OK(xc_load_model(model, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  xc_lowered_module_t* lm = NULL;
  if (g) CHECK_OK(xc_session_optimize(s, g));
  if (g) CHECK_OK(xc_session_lower(s, g, &lm));
  if (lm) check(s, lm);
  if (lm) xc_session_lowered_free(s, lm);
  xc_graph_destroy(g);
  xc_session_destroy(s);
}

static void check_defaults_and_space(xc_session_t* s, xc_lowered_module_t* lm) {
  xc_target_t* t = xc_session_target(s);
  const xc_device_caps_t* caps = xc_session_caps(s);
  const xc_tiled_limits_t* limits = xc_session_tiled_limits(s);
  int gemms_on_mma = 0;
  const xc_tiled_kernel_t* gemm = NULL;
  for (int i = 0; i < lm->num_kernels; i++) {
    const xc_tiled_kernel_t* k = lm->kernels[i].kernel;
    CHECK(k->schedule != NULL);
    if (!k->schedule) continue;
    CHECK_OK(xc_tiled_schedule_check(k, k->schedule, limits));
    CHECK(!strcmp(k->schedule->scheduler, "cuda"));
    if (k->schedule->num_dots == 1 && k->schedule->dots[0].mma.m == 16 && k->schedule->dots[0].mma.n == 8 &&
        k->schedule->dots[0].mma.k == 16 && k->schedule->dots[0].mma.input_dtype == XC_BF16) {
      gemms_on_mma++;
      if (!gemm) gemm = k;
    }
  }
  CHECK(gemms_on_mma > 0);
  if (!gemm) return;
  space_ctx_t c = {t, caps, gemm, limits, 0, 0, 0, 0};
  int count = 0;
  CHECK_OK(xc_target_schedule_space(t, caps, gemm, limits, 48, visit, &c, &count));
  printf("space of %s on cuda:sm_90: %d legal records (%d with tensor cores, %d generic), %d emitted\n",
         gemm->name, count, c.mma, c.generic, c.emitted);
  CHECK(count > 1);
  CHECK(c.mma > 0);
  CHECK(c.generic > 0);
  CHECK_EQ_INT(c.bad, 0);
  CHECK_EQ_INT(c.emitted, count);

  /* FOLLOW: a record asking for an instruction the caps do not list is refused */
  xc_tiled_schedule_t r = *gemm->schedule;
  r.dots[0].mma.n = 16; /* m16n16k16: not an sm_90 mma.sync shape the dialect issues */
  xc_status_t st = xc_target_schedule(t, caps, gemm, limits, XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW, &r);
  CHECK(st != NULL);
  xc_status_free(st);
}

static void check_small(xc_session_t* s, xc_lowered_module_t* lm) {
  xc_target_t* t = xc_session_target(s);
  const xc_device_caps_t* caps = xc_session_caps(s);
  const xc_tiled_limits_t* limits = xc_session_tiled_limits(s);
  CHECK(caps->local_memory_bytes <= 16384 && caps->max_threads_per_group <= 64);
  for (int i = 0; i < lm->num_kernels; i++) {
    const xc_lowered_kernel_t* lk = &lm->kernels[i];
    const xc_tiled_schedule_t* r = lk->kernel->schedule;
    CHECK(r != NULL);
    if (!r) continue;
    CHECK(r->threads <= 64);
    CHECK(r->local_bytes <= 16384 && r->dynamic_bytes == 0);
    xc_knob_t knobs[XC_TILED_MAX_SCHED_KNOBS];
    for (int j = 0; j < r->num_knobs; j++) knobs[j] = (xc_knob_t){lk->kernel->knobs[j].name, lk->knobs[j]};
    xc_kernel_source_t src;
    xc_status_t st = xc_target_emit(t, caps, lk->kernel, knobs, r->num_knobs, &src);
    CHECK_OK(st);
    if (!st) xc_kernel_source_release(&src);
  }
  (void)limits;
}

int main(void) {
  CHECK_OK(xc_targets_init());
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = "cuda:sm_90";
  o.use_cache = false;
  o.precision = XC_BF16;
  lower_model("tests/models/gpt2-tiny/model.onnx", &o, check_defaults_and_space);

  /* a small device of each work-group target: every kernel of every model
   * gets a legal schedule and emits */
  const char* targets[] = {"cuda:sm_90", "rocm:gfx90a", "opencl"};
  const char* models[] = {"tests/models/cnn/model.onnx", "tests/models/bert-tiny/model.onnx",
                          "tests/models/gpt2-tiny/model.onnx"};
  for (int t = 0; t < 3; t++)
    for (int m = 0; m < 3; m++) {
      xc_session_options_init(&o);
      o.target = targets[t];
      o.use_cache = false;
      o.max_local_memory_bytes = 16384;
      o.max_threads_per_group = 64;
      lower_model(models[m], &o, check_small);
    }
  return xc_test_summary("test_schedule_space");
}
