/* Features of a (kernel, schedule) pair for the cost model: the tile
 * extents, the launch shape (programs, threads, waves over the compute
 * units, occupancy), the record's hardware choices (vector width, unroll,
 * pipeline stages, matrix instructions, work-group memory) and the task's
 * scale (its default time). Logs of sizes: trees split them evenly. */
#include <math.h>
#include <string.h>

#include "tune_internal.h"
#include "xcomp/runtime.h"

static float lg(double v) { return v > 0 ? (float)log2(v) : -1.0f; }

void tune_features(const xc_compiled_module_t* m, int step, const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s,
                   const xc_device_caps_t* caps, double default_ms, float* f) {
  memset(f, 0, sizeof(float) * TUNE_NUM_FEATURES);
  int nt = 0;
  double tile_elems = 1;
  for (int i = 0; i < k->num_knobs && i < s->num_knobs; i++) {
    if (k->knobs[i].kind != XC_KNOB_TILE) continue;
    tile_elems *= (double)s->knobs[i];
    if (nt < TUNE_MAX_TILE_KNOBS) f[nt++] = lg((double)s->knobs[i]);
  }
  float* g = f + TUNE_MAX_TILE_KNOBS;
  int stages = 0, mma = 0;
  for (int i = 0; i < s->num_dots; i++) {
    stages += s->dots[i].stages;
    mma += s->dots[i].mma.m > 0;
  }
  /* the launch under these knob values: the step's grid with them */
  double programs = 1;
  xc_cm_step_t* st = (step >= 0 && step < m->num_steps) ? &m->steps[step] : NULL;
  if (st && st->num_knobs == s->num_knobs) {
    int64_t saved[XC_TILED_MAX_SCHED_KNOBS];
    memcpy(saved, st->knobs, sizeof(int64_t) * (size_t)st->num_knobs);
    memcpy(st->knobs, s->knobs, sizeof(int64_t) * (size_t)st->num_knobs);
    xc_symbind_t none;
    xc_symbind_init(&none);
    xc_cm_step_launch_t sl;
    xc_status_t e = xc_cm_step_launch(m, step, &none, caps->max_threads_per_group, &sl);
    xc_symbind_free(&none);
    if (!e) programs = (double)sl.grid[0] * (double)sl.grid[1] * (double)sl.grid[2];
    xc_status_free(e);
    memcpy(st->knobs, saved, sizeof(int64_t) * (size_t)st->num_knobs);
  }
  double threads = s->threads > 0 ? (double)s->threads : 1;
  double units = caps->compute_units > 0 ? caps->compute_units : 1;
  double group_limit = caps->max_threads_per_group > 1 ? caps->max_threads_per_group : 1;
  double occupancy = programs * threads / (units * group_limit);
  g[0] = lg(threads);
  g[1] = lg((double)(s->vector > 0 ? s->vector : 1));
  g[2] = lg((double)s->unroll + 1);
  g[3] = (float)stages;
  g[4] = (float)mma;
  g[5] = lg((double)(s->local_bytes + s->dynamic_bytes) + 1);
  g[6] = lg(programs);
  g[7] = lg(programs / units);
  g[8] = (float)(programs / units - floor(programs / units)); /* the last wave's fill */
  g[9] = lg(programs * threads);
  g[10] = lg(tile_elems);
  g[11] = lg(tile_elems / threads);
  g[12] = (float)(occupancy > 4 ? 4 : occupancy);
  g[13] = caps->local_memory_bytes > 0
              ? (float)((double)(s->local_bytes + s->dynamic_bytes) / (double)caps->local_memory_bytes)
              : 0;
  g[14] = lg(default_ms * 1000);
  g[15] = (float)nt;
}
