/* The tuner: a model's kernels grouped into tasks, each task's schedules
 * searched — evolution over schedule records guided by the cost model,
 * candidates measured on the device against the default schedule — and
 * every measurement recorded in the tuning database (docs/autotune.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune_internal.h"
#include "xcomp/frontend.h"
#include "xcomp/runtime.h"
#include "xcomp/tempdir.h"

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

void xc_tune_options_init(xc_tune_options_t* o) {
  memset(o, 0, sizeof *o);
  o->target = "cpu";
  o->opt_level = 2;
  o->trials = 32;
  o->batch = 8;
  o->timeout_s = 30;
}

/* ---- random numbers (xorshift64*: reproducible from the seed) ---- */

static uint64_t rnd(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}
static int rnd_below(uint64_t* s, int n) { return n > 0 ? (int)(rnd(s) % (uint64_t)n) : 0; }

/* ---- tasks ---- */

typedef struct task {
  char hash[33];
  int kernel;           /* representative kernel */
  int step;             /* a step launching it */
  int weight;           /* launches per run of the model */
  char names[256];      /* its kernels, for people */
} task_t;

static xc_status_t make_tasks(const xc_compiled_module_t* m, task_t** out, int* out_n) {
  *out = NULL;
  *out_n = 0;
  task_t* t = calloc((size_t)m->num_kernels + 1, sizeof *t);
  if (!t) return xc_error_oom();
  int n = 0;
  for (int k = 0; k < m->num_kernels; k++) {
    if (strcmp(m->kernels[k].blob.format, XC_VENDOR_GEMM_FORMAT) == 0) continue;
    char h[33];
    xc_status_t s = xc_tune_task_hash(m->kernels[k].tiled, h);
    if (s) {
      free(t);
      return s;
    }
    int steps = 0, first = -1;
    for (int i = 0; i < m->num_steps; i++)
      if (m->steps[i].kind == XC_CM_STEP_KERNEL && m->steps[i].kernel == k) {
        steps++;
        if (first < 0) first = i;
      }
    if (first < 0) continue;
    int j = 0;
    while (j < n && strcmp(t[j].hash, h) != 0) j++;
    if (j == n) {
      memcpy(t[n].hash, h, sizeof h);
      t[n].kernel = k;
      t[n].step = first;
      n++;
    } else {
      size_t used = strlen(t[j].names);
      if (used + 4 < sizeof t[j].names) snprintf(t[j].names + used, sizeof t[j].names - used, ", ");
    }
    size_t used = strlen(t[j].names);
    snprintf(t[j].names + used, sizeof t[j].names - used, "%s", m->kernels[k].name);
    t[j].weight += steps;
  }
  *out = t;
  *out_n = n;
  return NULL;
}

/* ---- the space of one task ---- */

typedef struct space {
  tune_cand_t* c;   /* legal records, first the default */
  uint64_t* h;      /* hash of each text */
  int n, cap;
  const xc_tiled_kernel_t* k;
  bool no_groups;   /* programs are not work-groups: THREADS knobs change no code */
  xc_status_t err;
} space_t;

static bool space_has(const space_t* sp, uint64_t h) {
  for (int i = 0; i < sp->n; i++)
    if (sp->h[i] == h) return true;
  return false;
}

/* Adds a legal record unless already there; false on out-of-memory. */
static bool space_add(space_t* sp, const xc_tiled_schedule_t* in) {
  xc_tiled_schedule_t canon = *in;
  const xc_tiled_schedule_t* s = &canon;
  /* where a program is one thread (cpu), the THREADS knob is not read by
   * the code: records that differ only there are one candidate */
  for (int i = 0; sp->no_groups && i < sp->k->num_knobs && i < canon.num_knobs; i++)
    if (sp->k->knobs[i].kind == XC_KNOB_THREADS) canon.knobs[i] = sp->k->knobs[i].default_value;
  char* text = NULL;
  xc_status_t e = xc_tune_schedule_format(sp->k, s, &text);
  if (e) {
    sp->err = e;
    return false;
  }
  uint64_t h = xc_hash128(text, strlen(text)).lo;
  if (space_has(sp, h)) {
    free(text);
    return true;
  }
  if (sp->n == sp->cap) {
    int cap = sp->cap ? 2 * sp->cap : 64;
    tune_cand_t* c = realloc(sp->c, sizeof *c * (size_t)cap);
    uint64_t* hh = c ? realloc(sp->h, sizeof *hh * (size_t)cap) : NULL;
    if (c) sp->c = c;
    if (!c || !hh) {
      free(text);
      sp->err = xc_error_oom();
      return false;
    }
    sp->h = hh;
    sp->cap = cap;
  }
  tune_cand_t* c = &sp->c[sp->n];
  memset(c, 0, sizeof *c);
  c->sched = *s;
  c->text = text;
  c->predicted = NAN;
  sp->h[sp->n++] = h;
  return true;
}

static bool visit_space(void* ctx, const xc_tiled_schedule_t* s) { return space_add((space_t*)ctx, s); }

static void space_free(space_t* sp) {
  for (int i = 0; i < sp->n; i++) free(sp->c[i].text);
  free(sp->c);
  free(sp->h);
  xc_status_free(sp->err);
}

/* The distinct default times of a task's run (a batch's records share
 * its default's time) and their median: what every record of the run is
 * divided by when schedules are ranked, so one outlier default (the
 * machine loaded for a moment) does not make a schedule look faster than
 * it is. */
typedef struct defaults {
  double v[256];
  int n;
} defaults_t;

static void defaults_add(defaults_t* d, double ms) {
  if (!(ms > 0)) return;
  for (int i = 0; i < d->n; i++)
    if (d->v[i] == ms) return;
  if (d->n < (int)(sizeof d->v / sizeof d->v[0])) d->v[d->n++] = ms;
}

static int cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

static double defaults_median(defaults_t* d) {
  if (d->n == 0) return 0;
  qsort(d->v, (size_t)d->n, sizeof d->v[0], cmp_double);
  return d->n % 2 ? d->v[d->n / 2] : (d->v[d->n / 2 - 1] + d->v[d->n / 2]) / 2;
}

/* ---- the search state of one task ---- */

typedef struct search {
  const xc_tune_options_t* o;
  xc_session_t* session;
  xc_compiled_module_t* m;
  const task_t* task;
  space_t space;        /* the enumerated legal records */
  space_t seen;         /* every record generated (measured or pooled) */
  uint64_t rng;
  /* the vector and unroll the whole enumerated space last joined the pool
   * with (make_pool): not legalized again while the fastest keeps them */
  int64_t space_vector, space_unroll;
} search_t;

/* The vector widths and unroll factors the search sets (the targets
 * legalize them to what they follow). */
static const int64_t vector_widths[] = {1, 2, 4, 8, 16};
static const int64_t unroll_factors[] = {0, 2, 4, 8, 16, 32};
#define NUM_VECTOR_WIDTHS (int)(sizeof vector_widths / sizeof vector_widths[0])
#define NUM_UNROLL_FACTORS (int)(sizeof unroll_factors / sizeof unroll_factors[0])

/* Schedules knobs (and, with follow, the record's other choices) through
 * the target's scheduler: NULL when the device cannot run it. */
static bool legalize(search_t* se, xc_tiled_schedule_t* s, bool follow) {
  const xc_tiled_kernel_t* k = se->m->kernels[se->task->kernel].tiled;
  xc_status_t e = xc_tiled_knobs_check(k, s->knobs, xc_session_tiled_limits(se->session));
  if (!e)
    e = xc_target_schedule(xc_session_target(se->session), xc_session_caps(se->session), k,
                           xc_session_tiled_limits(se->session),
                           XC_SCHEDULE_KEEP_KNOBS | (follow ? XC_SCHEDULE_FOLLOW : 0), s);
  if (e) {
    xc_status_free(e);
    return false;
  }
  return true;
}

/* v moved among the values vals[0..n) (in any order): two times in three
 * to the next larger or smaller one (a local move: a tile twice or half as
 * long), else to any of them. */
static int64_t move_value(search_t* se, int64_t v, const int64_t* vals, int n) {
  if (n < 2 || rnd_below(&se->rng, 3) == 0) return vals[rnd_below(&se->rng, n)];
  bool up = rnd_below(&se->rng, 2);
  for (int pass = 0; pass < 2; pass++, up = !up) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if ((up ? vals[i] > v : vals[i] < v) && (best < 0 || (up ? vals[i] < vals[best] : vals[i] > vals[best])))
        best = i;
    if (best >= 0) return vals[best];
  }
  return v;
}

/* A mutant of parent p: one or two knobs moved (mostly to a neighbouring
 * candidate value, so that a pair of moves such as a tile twice as tall and
 * half as deep, which keeps its footprint, is a likely child), sometimes the
 * vector width or unroll changed (kept when the target can follow it). */
static bool mutate(search_t* se, const xc_tiled_schedule_t* p, xc_tiled_schedule_t* out) {
  const xc_tiled_kernel_t* k = se->m->kernels[se->task->kernel].tiled;
  *out = *p;
  int changes = 1 + rnd_below(&se->rng, 2);
  bool fields = false;
  for (int c = 0; c < changes; c++) {
    int which = rnd_below(&se->rng, k->num_knobs + 2);
    if (which < k->num_knobs) {
      const xc_tiled_knob_t* kn = &k->knobs[which];
      if (kn->num_candidates > 1)
        out->knobs[which] = move_value(se, out->knobs[which], kn->candidates, kn->num_candidates);
    } else if (which == k->num_knobs) {
      out->vector = move_value(se, out->vector, vector_widths, NUM_VECTOR_WIDTHS);
      fields = true;
    } else {
      out->unroll = move_value(se, out->unroll, unroll_factors, NUM_UNROLL_FACTORS);
      fields = true;
    }
  }
  if (fields && legalize(se, out, true)) return true;
  xc_tiled_schedule_t t = *out;
  t.vector = p->vector;
  t.unroll = p->unroll;
  if (legalize(se, &t, true)) {
    *out = t;
    return true;
  }
  return legalize(se, out, false);
}

/* Uniform crossover of the knobs of a and b; the rest from a. */
static bool crossover(search_t* se, const xc_tiled_schedule_t* a, const xc_tiled_schedule_t* b,
                      xc_tiled_schedule_t* out) {
  *out = *a;
  for (int i = 0; i < a->num_knobs; i++)
    if (rnd(&se->rng) & 1) out->knobs[i] = b->knobs[i];
  return legalize(se, out, true) || legalize(se, out, false);
}

static int cmp_ms(const void* x, const void* y) {
  const tune_cand_t *a = *(tune_cand_t* const*)x, *b = *(tune_cand_t* const*)y;
  return (a->ms > b->ms) - (a->ms < b->ms);
}

/* The pool of unmeasured candidates for a round, as indices into seen:
 * the whole enumerated space when it is small, else a sample of it, plus
 * mutants and crossovers of the best measured (not for random search). */
static xc_status_t make_pool(search_t* se, int** out, int* out_n) {
  *out = NULL;
  *out_n = 0;
  /* parents: the measured valid ones, fastest first (none for random search) */
  xc_tiled_schedule_t parents[8];
  int np = 0;
  if (!se->o->random_search) {
    tune_cand_t** par = malloc(sizeof *par * (size_t)(se->seen.n + 1));
    if (!par) return xc_error_oom();
    for (int i = 0; i < se->seen.n; i++)
      if (se->seen.c[i].measured && se->seen.c[i].valid) par[np++] = &se->seen.c[i];
    qsort(par, (size_t)np, sizeof *par, cmp_ms);
    if (np > 8) np = 8;
    for (int i = 0; i < np; i++) parents[i] = par[i]->sched;
    free(par);
  }
  /* the enumerated records carry the scheduler's own vector and unroll;
   * where the fastest so far has others (a seed's vector width that beat
   * the default's), each enumerated tile comes with them too, so that
   * tiles are explored where the hardware choices are known to be good
   * and not only through mutants */
  bool small = se->space.n <= 512 || se->o->random_search;
  /* a whole small space joined with the fastest's choices already */
  bool joined = small && np > 0 && se->space_vector == parents[0].vector && se->space_unroll == parents[0].unroll;
  if (small && np > 0) {
    se->space_vector = parents[0].vector;
    se->space_unroll = parents[0].unroll;
  }
  for (int i = 0; i < (small ? se->space.n : 128); i++) {
    const xc_tiled_schedule_t* c = &se->space.c[small ? i : rnd_below(&se->rng, se->space.n)].sched;
    if (!space_add(&se->seen, c)) return se->seen.err;
    if (np == 0 || joined || (c->vector == parents[0].vector && c->unroll == parents[0].unroll)) continue;
    xc_tiled_schedule_t v = *c;
    v.vector = parents[0].vector;
    v.unroll = parents[0].unroll;
    if (legalize(se, &v, true) && v.vector == parents[0].vector && !space_add(&se->seen, &v))
      return se->seen.err;
  }
  /* children of the fastest */
  for (int i = 0; np > 0 && i < 256; i++) {
    xc_tiled_schedule_t child;
    const xc_tiled_schedule_t* a = &parents[rnd_below(&se->rng, np)];
    bool ok = (i % 4 == 3 && np > 1) ? crossover(se, a, &parents[rnd_below(&se->rng, np)], &child)
                                     : mutate(se, a, &child);
    if (ok && !space_add(&se->seen, &child)) return se->seen.err;
  }
  int* pool = malloc(sizeof *pool * (size_t)(se->seen.n + 1));
  if (!pool) return xc_error_oom();
  int n = 0;
  for (int i = 0; i < se->seen.n; i++)
    if (!se->seen.c[i].measured) pool[n++] = i;
  *out = pool;
  *out_n = n;
  return NULL;
}

/* ---- progress ---- */

static void fmt_duration(double s, char* out, size_t size) {
  if (s < 0 || !isfinite(s)) snprintf(out, size, "?");
  else if (s < 60) snprintf(out, size, "%.0fs", s);
  else if (s < 3600) snprintf(out, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(out, size, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

typedef struct progress {
  const xc_tune_options_t* o;
  double start;
  int task_index, num_tasks;
  int done_trials, total_trials;
} progress_t;

/* trials: the search's measurements (at most budget); again: the final
 * round's re-measurements. */
static void report(const progress_t* p, const task_t* t, int trials, int again, int budget, double default_ms,
                   double best_ms, int invalid, bool final) {
  FILE* f = p->o->progress;
  if (!f) return;
  double el = tune_now_s() - p->start;
  double eta = p->done_trials > 0 ? el / p->done_trials * (p->total_trials - p->done_trials) : -1;
  char els[32], etas[32];
  fmt_duration(el, els, sizeof els);
  fmt_duration(eta, etas, sizeof etas);
  double speed = best_ms > 0 ? default_ms / best_ms : 0;
  const char* kname = t->names;
  if (p->o->live) {
    fprintf(f, "\r\033[Ktune: task %d/%d %.40s  trials %d/%d%s  best %.4g ms (%.2fx)  %d invalid  elapsed %s  ETA %s",
            p->task_index + 1, p->num_tasks, kname, trials, budget, again ? " +re-measured" : "", best_ms, speed,
            invalid, els, etas);
    if (final) fprintf(f, "\n");
  } else if (final) {
    fprintf(f, "xcomp: tune: task %d/%d %s (x%d): %d trials (+%d re-measured), %d invalid, default %.4g ms, "
            "best %.4g ms (%.2fx), elapsed %s\n", p->task_index + 1, p->num_tasks, kname, t->weight, trials, again,
            invalid, default_ms, best_ms, speed, els);
  }
  fflush(f);
}

/* ---- one task ---- */

typedef struct run {
  const xc_tune_options_t* o;
  xc_session_t* session;
  xc_compiled_module_t* m;
  tune_measure_t tm;
  xc_tune_db_t* db;
  xc_cost_model_t* model;
  char run_id[40];
  char device[33];
  const char* target;
  progress_t prog;
  double* rank_pred;    /* pooled held-out predictions and measured scores */
  double* rank_meas;
  int rank_n, rank_cap;
  int trials, invalid;
} run_t;

static xc_status_t record(run_t* r, const task_t* t, const tune_cand_t* c, int trial) {
  xc_tune_record_t rec;
  memset(&rec, 0, sizeof rec);
  snprintf(rec.task, sizeof rec.task, "%s", t->hash);
  snprintf(rec.target, sizeof rec.target, "%s", r->target);
  snprintf(rec.device, sizeof rec.device, "%s", r->device);
  snprintf(rec.device_name, sizeof rec.device_name, "%s", xc_session_caps(r->session)->name);
  snprintf(rec.kernel, sizeof rec.kernel, "%s", r->m->kernels[t->kernel].name);
  rec.schedule = c->text;
  rec.valid = c->valid;
  rec.time_ms = c->valid ? c->ms : 0;
  rec.default_ms = c->default_ms;
  rec.predicted = c->predicted;
  snprintf(rec.error, sizeof rec.error, "%s", c->valid ? "" : c->error);
  snprintf(rec.xcomp_version, sizeof rec.xcomp_version, "%s", XCOMP_VERSION);
  snprintf(rec.run_id, sizeof rec.run_id, "%s", r->run_id);
  rec.trial = trial;
  rec.created = (double)time(NULL);
  return xc_tune_db_add(r->db, &rec, 1);
}

static xc_status_t add_rank_pair(run_t* r, double pred, double meas) {
  if (r->rank_n == r->rank_cap) {
    int cap = r->rank_cap ? 2 * r->rank_cap : 64;
    double* a = realloc(r->rank_pred, sizeof *a * (size_t)cap);
    if (a) r->rank_pred = a;
    double* b = a ? realloc(r->rank_meas, sizeof *b * (size_t)cap) : NULL;
    if (!a || !b) return xc_error_oom();
    r->rank_meas = b;
    r->rank_cap = cap;
  }
  r->rank_pred[r->rank_n] = pred;
  r->rank_meas[r->rank_n++] = meas;
  return NULL;
}

static xc_status_t tune_task(run_t* r, const task_t* t, double deadline, double* out_default, double* out_best) {
  const xc_tune_options_t* o = r->o;
  search_t se;
  memset(&se, 0, sizeof se);
  se.space_vector = se.space_unroll = -1;
  se.o = o;
  se.session = r->session;
  se.m = r->m;
  se.task = t;
  se.rng = (o->seed ? o->seed : 0x9e3779b97f4a7c15ull) ^ xc_hash128(t->hash, 32).lo;
  const xc_tiled_kernel_t* k = r->m->kernels[t->kernel].tiled;
  se.space.k = k;
  se.seen.k = k;
  se.space.no_groups = se.seen.no_groups = xc_session_caps(r->session)->max_threads_per_group <= 1;
  *out_default = *out_best = 0;
  /* the default first: what the compile chose */
  xc_status_t s = NULL;
  if (!k->schedule) s = xc_error(XC_INTERNAL, "kernel '%s' has no schedule", k->name);
  if (!s && !space_add(&se.space, k->schedule)) s = se.space.err, se.space.err = NULL;
  if (!s && !space_add(&se.seen, k->schedule)) s = se.seen.err, se.seen.err = NULL;
  int count = 0;
  if (!s)
    s = xc_target_schedule_space(xc_session_target(r->session), xc_session_caps(r->session), k,
                                 xc_session_tiled_limits(r->session), 4096, visit_space, &se.space, &count);
  if (!s && se.space.err) s = se.space.err, se.space.err = NULL;
  /* the default's hardware variants: its knobs with each other vector
   * width the target follows, measured in the first round with the
   * default (the search reaches them only by a mutation of that field, and
   * they are where a layout choice such as the chunked register tiles of
   * work-group dots lies) */
  int seeds[NUM_VECTOR_WIDTHS], num_seeds = 0;
  for (int i = 0; !s && i < NUM_VECTOR_WIDTHS && k->schedule; i++) {
    if (vector_widths[i] == k->schedule->vector) continue;
    xc_tiled_schedule_t v = *k->schedule;
    v.vector = vector_widths[i];
    if (!legalize(&se, &v, true) || v.vector != vector_widths[i]) continue;
    int before = se.seen.n;
    if (!space_add(&se.seen, &v)) s = se.seen.err, se.seen.err = NULL;
    else if (se.seen.n > before) seeds[num_seeds++] = before;
  }
  /* candidates besides the default: the enumerated ones and the seeds */
  int budget = o->trials < se.space.n - 1 + num_seeds ? o->trials : se.space.n - 1 + num_seeds;
  r->tm.kernel = t->kernel;
  r->tm.step = t->step;
  int trials = 0, invalid = 0;
  double default_ms = 0, best_ms = 0;
  defaults_t dfl = {{0}, 0};
  /* a round measures up to --batch candidates; the first also the seeds */
  tune_cand_t* batch = calloc((size_t)(o->batch > 0 ? o->batch : 8) + 1 + 4, sizeof *batch);
  int* picked = calloc((size_t)(o->batch > 0 ? o->batch : 8) + 1 + 4, sizeof *picked);
  if (!s && (!batch || !picked)) s = xc_error_oom();
  bool first = true;
  int seeded = 0; /* seeds picked in the first round, after the default */
  while (!s && trials < budget + 1 && (first || tune_now_s() < deadline)) {
    int want = o->batch > 0 ? o->batch : 8;
    int nb = 0;
    if (first) { /* the default, measured like any candidate, and its variants */
      picked[nb++] = 0;
      se.seen.c[0].measured = true;
      for (int i = 0; i < num_seeds && trials + nb < budget + 1; i++) {
        picked[nb++] = seeds[i];
        se.seen.c[seeds[i]].measured = true;
        seeded++;
      }
    }
    int* pool = NULL;
    int np = 0;
    s = make_pool(&se, &pool, &np);
    if (!s && !first && np == 0) {
      free(pool);
      break;
    }
    /* features and predictions of the pool */
    float* feats = NULL;
    float* pred = NULL;
    bool use_model = !s && r->model && xc_cost_model_rows(r->model) >= 8 && np > 0;
    if (!s && np > 0) {
      feats = malloc(sizeof *feats * TUNE_NUM_FEATURES * (size_t)np);
      pred = calloc((size_t)np, sizeof *pred);
      if (!feats || !pred) s = xc_error_oom();
      for (int i = 0; !s && i < np; i++)
        tune_features(r->m, t->step, k, &se.seen.c[pool[i]].sched, xc_session_caps(r->session),
                      default_ms > 0 ? default_ms : 1, feats + (size_t)i * TUNE_NUM_FEATURES);
      if (!s && use_model) s = xc_cost_model_predict(r->model, feats, np, pred);
    }
    /* pick: the best predicted, one in four drawn at random (exploration);
     * all at random without a trained model */
    int left = budget + 1 - trials;
    if (want > left) want = left;
    while (!s && nb < want && np > 0) {
      int choice;
      if (use_model && (nb % 4 != 3)) {
        choice = 0;
        for (int i = 1; i < np; i++)
          if (pred[i] > pred[choice]) choice = i;
      } else {
        choice = rnd_below(&se.rng, np);
      }
      se.seen.c[pool[choice]].predicted = use_model ? pred[choice] : NAN;
      memcpy(se.seen.c[pool[choice]].features, feats + (size_t)choice * TUNE_NUM_FEATURES,
             sizeof(float) * TUNE_NUM_FEATURES);
      picked[nb++] = pool[choice];
      pool[choice] = pool[np - 1];
      pred[choice] = pred[np - 1];
      memcpy(feats + (size_t)choice * TUNE_NUM_FEATURES, feats + (size_t)(np - 1) * TUNE_NUM_FEATURES,
             sizeof(float) * TUNE_NUM_FEATURES);
      np--;
    }
    free(pool);
    free(feats);
    free(pred);
    if (s || nb == 0) break;
    for (int i = 0; i < nb; i++) {
      se.seen.c[picked[i]].measured = true;
      batch[i] = se.seen.c[picked[i]];
    }
    s = tune_measure_batch(&r->tm, batch, nb);
    if (s) s = xc_status_annotate(s, "task %s (kernel %s)", t->hash, t->names);
    for (int i = 0; !s && i < nb; i++) {
      tune_cand_t* c = &se.seen.c[picked[i]];
      c->valid = batch[i].valid;
      c->ms = batch[i].ms;
      c->default_ms = batch[i].default_ms;
      snprintf(c->error, sizeof c->error, "%s", batch[i].error);
      if (first && i == 0) {
        if (!c->valid) {
          s = xc_error(XC_INTERNAL, "kernel '%s': the default schedule failed to run: %s", k->name, c->error);
          break;
        }
        /* the task's default time: the measuring process's own run of the
         * module's kernel (every later time is scaled by its batch's) */
        default_ms = c->default_ms > 0 ? c->default_ms : c->ms;
        best_ms = default_ms;
        tune_features(r->m, t->step, k, &c->sched, xc_session_caps(r->session), default_ms, c->features);
      } else if (first && i <= seeded) {
        tune_features(r->m, t->step, k, &c->sched, xc_session_caps(r->session), default_ms, c->features);
      }
      /* features carry the default time: fill it now that it is known */
      c->features[TUNE_MAX_TILE_KNOBS + 14] = default_ms > 0 ? (float)log2(default_ms * 1000) : -1.0f;
      s = record(r, t, c, trials);
      trials++;
      r->trials++;
      r->prog.done_trials++;
      if (!c->valid) {
        invalid++;
        r->invalid++;
        continue;
      }
      double ref = c->default_ms > 0 ? c->default_ms : default_ms;
      double score = log(ref / c->ms); /* > 0: faster than the default */
      defaults_add(&dfl, ref);
      c->rel_sum += c->ms;
      c->rel_n++;
      if (!s && !isnan(c->predicted)) s = add_rank_pair(r, c->predicted, score);
      float y = (float)score;
      if (!s && r->model) s = xc_cost_model_add(r->model, c->features, &y, 1);
    }
    if (!s && r->model && !o->random_search) s = xc_cost_model_train(r->model);
    first = false;
    report(&r->prog, t, trials, 0, budget + 1, default_ms, best_ms, invalid, false);
  }
  /* Confirmation: the default and the three best so far (by mean time;
   * within a run every record is divided by the same median default)
   * measured again side by side (one process, the same inputs); the
   * database ranks schedules by their mean relative time, so one lucky run
   * does not decide. */
  int again = 0;
  if (!s && trials > 2 && tune_now_s() < deadline) {
    int top[4] = {0, -1, -1, -1}, nt = 1;
    for (int j = 1; j < 4; j++) {
      int b = -1;
      for (int i = 1; i < se.seen.n; i++) {
        const tune_cand_t* c = &se.seen.c[i];
        bool taken = false;
        for (int q = 1; q < nt; q++) taken |= top[q] == i;
        if (!c->measured || !c->valid || !c->rel_n || taken) continue;
        if (b < 0 || c->rel_sum / c->rel_n < se.seen.c[b].rel_sum / se.seen.c[b].rel_n) b = i;
      }
      if (b >= 0) top[nt++] = b;
    }
    tune_cand_t conf[4];
    for (int i = 0; i < nt; i++) {
      conf[i] = se.seen.c[top[i]];
      conf[i].predicted = NAN; /* not a pick of the model: no rank sample */
    }
    s = tune_measure_batch(&r->tm, conf, nt);
    for (int i = 0; !s && i < nt; i++) {
      s = record(r, t, &conf[i], trials + again);
      again++;
      r->trials++;
      if (!conf[i].valid) {
        invalid++;
        r->invalid++;
        continue;
      }
      tune_cand_t* c = &se.seen.c[top[i]];
      defaults_add(&dfl, conf[i].default_ms > 0 ? conf[i].default_ms : default_ms);
      c->rel_sum += conf[i].ms;
      c->rel_n++;
    }
  }
  /* the best schedule by mean time relative to the run's median default,
   * as the database ranks them (tune_db.c, SCHEDULE_SCORES) */
  double median = defaults_median(&dfl), best_rel = 1;
  for (int i = 0; median > 0 && i < se.seen.n; i++) {
    const tune_cand_t* c = &se.seen.c[i];
    if (c->measured && c->valid && c->rel_n && c->rel_sum / c->rel_n / median < best_rel)
      best_rel = c->rel_sum / c->rel_n / median;
  }
  if (default_ms > 0) best_ms = default_ms * best_rel;
  report(&r->prog, t, trials, again, budget + 1, default_ms, best_ms, invalid, true);
  free(batch);
  free(picked);
  space_free(&se.space);
  space_free(&se.seen);
  *out_default = default_ms;
  *out_best = best_ms > 0 ? best_ms : default_ms;
  return s;
}

/* ---- the model ---- */

static xc_status_t scratch_dir(char* out, size_t size) {
  const char* base = NULL;
  XC_RETURN_IF_ERROR(xc_temp_dir(&base));
  snprintf(out, size, "%s/tune-XXXXXX", base);
  if (!mkdtemp(out)) return xc_error(XC_IO, "cannot create a folder under %s", base);
  return NULL;
}

xc_status_t xc_tune_model(const xc_tune_options_t* o, xc_tune_summary_t* out) {
  memset(out, 0, sizeof *out);
  out->rank_correlation = NAN;
  if (!o || !o->model_path || !o->worker_exe)
    return xc_error(XC_INVALID_ARGUMENT, "xc_tune_model: a model path and the measuring program are required");
  double start = tune_now_s();
  run_t r;
  memset(&r, 0, sizeof r);
  r.o = o;
  r.prog.o = o;
  r.prog.start = start;
  xc_session_options_t so;
  xc_session_options_init(&so);
  so.target = o->target;
  so.opt_level = o->opt_level;
  so.precision = o->precision;
  so.use_cache = false;
  so.no_vendor_blas = true;   /* the generated kernels are what is tuned */
  so.no_tuning_db = true;     /* the defaults are the baseline */
  so.max_local_memory_bytes = o->max_local_memory_bytes;
  so.max_threads_per_group = o->max_threads_per_group;
  XC_RETURN_IF_ERROR(xc_session_create(&so, &r.session));
  xc_status_t s = NULL;
  if (xc_session_device_index(r.session) < 0)
    s = xc_error(XC_INVALID_ARGUMENT, "tuning measures on a device: '%s' names an architecture, not a present device",
                 o->target);
  r.target = s ? "" : xc_target_name(xc_session_target(r.session));
  if (!s) {
    xc_tune_device_id(r.target, xc_session_caps(r.session), r.device);
    snprintf(r.tm.selector, sizeof r.tm.selector, "%s:%d", r.target, xc_session_device_index(r.session));
  }
  xc_graph_t* g = NULL;
  if (!s) s = xc_load_model(o->model_path, &g);
  if (!s) s = xc_graph_infer(g);
  if (!s) s = xc_session_compile_graph(r.session, g, &r.m);
  xc_graph_destroy(g);
  char dir[4096] = "", module_path[4200] = "", db_path[4096] = "";
  if (!s) s = scratch_dir(dir, sizeof dir);
  if (!s) {
    snprintf(module_path, sizeof module_path, "%s/model.xcm", dir);
    s = xc_compiled_module_write(r.m, module_path);
  }
  if (!s && o->db_path) snprintf(db_path, sizeof db_path, "%s", o->db_path);
  else if (!s) s = xc_tune_db_default_path(db_path, sizeof db_path);
  if (!s) s = xc_tune_db_open(db_path, true, &r.db);
  if (!s && !o->random_search) {
    s = xc_cost_model_create(TUNE_NUM_FEATURES, &r.model);
    if (s) s = xc_status_annotate(s, "the cost model (--search random tunes without it)");
  }
  snprintf(r.run_id, sizeof r.run_id, "%lx-%x-%llx", (unsigned long)time(NULL), (unsigned)getpid(),
           (unsigned long long)(o->seed));
  snprintf(out->run_id, sizeof out->run_id, "%s", r.run_id);
  task_t* tasks = NULL;
  int nt = 0;
  if (!s) s = make_tasks(r.m, &tasks, &nt);
  if (!s) {
    out->num_kernels = r.m->num_kernels;
    /* heaviest first (most launches), so a budget cut spends on what matters */
    for (int i = 1; i < nt; i++)
      for (int j = i; j > 0 && tasks[j].weight > tasks[j - 1].weight; j--) {
        task_t tmp = tasks[j];
        tasks[j] = tasks[j - 1];
        tasks[j - 1] = tmp;
      }
    if (o->max_tasks > 0 && nt > o->max_tasks) nt = o->max_tasks;
    r.tm.target = xc_session_target(r.session);
    r.tm.caps = xc_session_caps(r.session);
    r.tm.worker_exe = o->worker_exe;
    r.tm.module_path = module_path;
    r.tm.dir = dir;
    r.tm.module = r.m;
    r.tm.jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    r.tm.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
    r.prog.num_tasks = nt;
    r.prog.total_trials = nt * ((o->trials > 0 ? o->trials : 32) + 1);
    if (o->progress)
      fprintf(o->progress, "xcomp: tune: %s on %s (%s): %d kernels, %d tasks, up to %d trials each, database %s\n",
              o->model_path, r.tm.selector, xc_session_caps(r.session)->name, r.m->num_kernels, nt,
              o->trials > 0 ? o->trials : 32, db_path);
  }
  double deadline = o->time_budget_s > 0 ? start + o->time_budget_s : INFINITY;
  for (int i = 0; !s && i < nt; i++) {
    const task_t* t = &tasks[i];
    char desc[400];
    snprintf(desc, sizeof desc, "%s", t->names);
    s = xc_tune_db_add_task(r.db, t->hash, r.target, r.device, r.m->kernels[t->kernel].name, desc, t->weight);
    r.prog.task_index = i;
    double d = 0, b = 0;
    if (!s && tune_now_s() >= deadline) break;
    if (!s) s = tune_task(&r, t, deadline, &d, &b);
    out->num_tasks++;
    out->default_ms += t->weight * d;
    out->tuned_ms += t->weight * b;
  }
  out->trials = r.trials;
  out->invalid = r.invalid;
  out->rank_samples = r.rank_n;
  out->rank_correlation = xc_spearman(r.rank_pred, r.rank_meas, r.rank_n);
  out->seconds = tune_now_s() - start;
  free(tasks);
  free(r.rank_pred);
  free(r.rank_meas);
  xc_cost_model_destroy(r.model);
  xc_tune_db_close(r.db);
  xc_compiled_module_destroy(r.m);
  xc_session_destroy(r.session);
  return s;
}
