/* Pieces shared by the tuner's files (not a public interface). */
#ifndef XCOMP_TUNE_INTERNAL_H
#define XCOMP_TUNE_INTERNAL_H

#include <math.h>
#include <stdio.h>

#include "xcomp/driver.h"
#include "xcomp/tune.h"

/* Features of one (kernel, schedule) for the cost model (tune_features.c). */
#define TUNE_MAX_TILE_KNOBS 8
#define TUNE_NUM_FEATURES (TUNE_MAX_TILE_KNOBS + 16)

/* One candidate schedule of a task and what measuring it gave. */
typedef struct tune_cand {
  xc_tiled_schedule_t sched;
  char* text;                 /* xc_tune_schedule_format (owned) */
  float features[TUNE_NUM_FEATURES];
  double predicted;           /* the cost model's score when picked; NAN: none */
  bool measured;              /* picked for measuring (the search's bookkeeping) */
  double rel_sum;             /* sum of ms over its valid measurements (relative to the run's
                                 median default when ranked, as the database ranks) */
  int rel_n;
  bool valid;
  double ms;                  /* measured (valid) */
  double default_ms;          /* the default's time in the same measuring process */
  char error[256];            /* why not valid */
} tune_cand_t;

/* What measuring needs to know about one task (tune_measure.c). */
typedef struct tune_measure {
  xc_target_t* target;
  const xc_device_caps_t* caps;
  char selector[96];          /* the device, as the worker opens it ("cpu:0") */
  const char* worker_exe;
  char* const* env;           /* the worker's environment (xc_targets_startup_environment) */
  const char* module_path;    /* the model compiled with default schedules (.xcm) */
  const char* dir;            /* this run's scratch folder */
  xc_compiled_module_t* module; /* the same, loaded (its tiled kernels emit the candidates) */
  int kernel, step;           /* the task's representative kernel and one step launching it */
  int jobs;                   /* parallel compiles */
  double timeout_s;
  int serial;                 /* batch counter: file names */
} tune_measure_t;

/* Compiles the candidates (in parallel processes), then measures them in a
 * worker process against the default schedule; fills valid / ms /
 * default_ms / error of each. A failure to measure the default itself is
 * an error; a failing candidate is only invalid. */
xc_status_t tune_measure_batch(tune_measure_t* tm, tune_cand_t* cands, int n);

/* Features of schedule s of kernel k (launch grid from its step), into f. */
void tune_features(const xc_compiled_module_t* m, int step, const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s,
                   const xc_device_caps_t* caps, double default_ms, float* f);

double tune_now_s(void);

#endif
