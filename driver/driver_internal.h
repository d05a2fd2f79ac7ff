/* Pieces shared by the driver's files (not a public interface). */
#ifndef XCOMP_DRIVER_INTERNAL_H
#define XCOMP_DRIVER_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "xcomp/driver.h"
#include "xcomp/passes.h"

struct xc_session {
  xc_session_options_t o;
  bool has_device;               /* false: "ref", no target */
  xc_target_resolution_t res;    /* the target and the caps compiled for */
  xc_target_traits_t traits;     /* what passes and fusion read, from the caps */
  xc_tiled_limits_t limits;      /* what lowering's knob chooser reads, from the caps */
  xc_cache_stats_t stats;
  struct xc_tune_db* tuning;     /* the tuning database schedules come from; NULL: none */
  xc_hash128_t tuning_digest;    /* what it could supply here ({0, 0}: nothing) */
  /* Wall time of the compile's phases (ms), summed over the session's
   * compiles: the progress line after each model compile says where the
   * time went. */
  double session_ms, load_ms, passes_ms, lower_ms, kernels_ms, vendor_ms, cache_ms;
};

/* Monotonic milliseconds. */
double xc_drv_now_ms(void);

/* The schedule of every kernel of lm, between lowering and emission: the
 * knob values each kernel runs with. Lowering's default chooser has picked
 * values within the session's tiled limits; this is the one place that
 * changes them (the session's knob overrides; per-target schedulers). */
xc_status_t xc_driver_schedule_kernels(const xc_session_t* s, const struct xc_fusion_plan* plan,
                                       struct xc_lowered_module* lm);

/* Shape buckets (buckets.c): the module for s->o.dynamic from g (loaded
 * and inferred, symbolic) and further copies of the model from load. */
xc_status_t xc_drv_compile_buckets(xc_session_t* s, xc_model_loader_fn load, void* load_ctx, xc_graph_t* g,
                                   xc_compiled_module_t** out);

/* Vendor GEMMs (vendor.c): for each kernel of lm, whether its group is a
 * GEMM a vendor library can compute (has[i]) and how (cands[i]). */
void xc_drv_vendor_candidates(const struct xc_fusion_plan* plan, const struct xc_lowered_module* lm, bool allow_tf32,
                              bool* has, xc_vendor_gemm_t* cands);
/* Measures each candidate against the generated kernel on a device of
 * `target` with capabilities caps (outputs compared first) and keeps the
 * faster one in m (blob, entry). Notes go to progress. dev: such a device
 * already open (closed here) or NULL. Does nothing when no device of the
 * target has these capabilities. */
xc_status_t xc_drv_vendor_choose(xc_compiled_module_t* m, xc_target_t* target, const xc_device_caps_t* caps,
                                 const bool* has, const xc_vendor_gemm_t* cands, xc_device_t* dev, FILE* progress);

/* The race's device, made ready on a thread of its own while the kernels
 * compile (neither needs the other): opening it (a CUDA context) and the
 * vendor library's set-up (cuBLASLt) cost a cold compile ~0.3-1 s that
 * would otherwise follow the kernels' compile. */
typedef struct xc_drv_race_prep {
  pthread_t thread;
  bool started;
  xc_target_t* target;
  xc_device_caps_t caps;
  xc_vendor_gemm_t probe; /* a small GEMM of the candidates' dtype: loading it sets the library up */
  xc_device_t* dev;
  xc_status_t status;
  double ms; /* how long the preparation took */
} xc_drv_race_prep_t;
/* Starts the preparation where a kernel is a candidate (has[0..n)) and caps
 * say the target has a vendor library; otherwise starts nothing. */
void xc_drv_race_prep_begin(xc_drv_race_prep_t* p, xc_target_t* target, const xc_device_caps_t* caps, const bool* has,
                            const xc_vendor_gemm_t* cands, int n);
/* Waits for it (*waited_ms: how long) and hands over the device opened
 * (the caller closes it; NULL: none was, the race opens its own). */
xc_device_t* xc_drv_race_prep_end(xc_drv_race_prep_t* p, double* waited_ms);

/* Median device milliseconds of one launch of k over `runs` timings (at
 * most 16), as a model's replayed run sees it: where the device captures
 * launch graphs, ten launches are captured once and each replay is timed by
 * device events (so a launch's host cost, cuBLASLt's set-up per call among
 * them, is not counted), *replayed set; otherwise (also without
 * allow_replay), or where capturing fails, each launch is timed alone. Two
 * untimed launches come first. */
xc_status_t xc_drv_time_launch(xc_device_t* dev, xc_kernel_t* k, const xc_launch_t* launch, int runs,
                               bool allow_replay, double* out_ms, bool* replayed);

/* Random values in [-1, 1) for float dtypes (f32, f64, f16, bf16) from a
 * seed, integers left as they are; and element i of a float buffer as a
 * double (0 for other dtypes). What measurements on the device fill their
 * inputs with and compare (vendor.c; the tuner's measuring process). The
 * values repeat every 65521 elements (a prime: large buffers fill at
 * copying speed), so a kernel that confused elements exactly a multiple of
 * that apart would pass such a comparison; the conformance suites, which
 * use their own inputs, would not let it. */
void xc_drv_fill_random(uint8_t* p, xc_dtype_t t, size_t n, uint32_t seed);
double xc_drv_element(const uint8_t* p, xc_dtype_t t, size_t i);

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

#endif
