/* xcomp autotuning (docs/autotune.md): schedule search per tuning task with a
 * learned cost model, measured on the device, recorded in a tuning database
 * that compiles read.
 *
 *   task        the kernels of a model that share one structural hash (the
 *               tiled kernel's text with names made positional and without
 *               its schedule): identical layers tune once
 *   database    one SQLite file (WAL, transactions: several tuners may write
 *               it at once) of measured schedules per (task, target, device)
 *   cost model  gradient-boosted trees (XGBoost's C API, loaded at run time)
 *               over features of the kernel and its schedule
 *   search      evolutionary (mutation and crossover of schedule records,
 *               validity from the target's scheduler), the model ranks
 *               candidates and the best predicted are measured
 *
 * Schedules are stored as text: the "schedule NAME { ... }" block of the
 * tiled IR (xc_tiled_schedule_print), parsed back with
 * xc_tiled_schedule_parse against the kernel it belongs to. */
#ifndef XCOMP_TUNE_H
#define XCOMP_TUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "xcomp/module.h"
#include "xcomp/status.h"
#include "xcomp/tiled.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tasks ------------------------------------------------------------------ */

/* The structural hash of a tiled kernel (32 hex digits + NUL): its printed
 * text with the kernel's name left out, parameters renamed by position and
 * no schedule block. Kernels that differ only in names hash alike. */
xc_status_t xc_tune_task_hash(const xc_tiled_kernel_t* k, char out[33]);

/* The device a tuning record of target `target` belongs to (32 hex digits
 * + NUL): the caps fingerprint (xc_device_caps_fingerprint) and, for the
 * cpu target, the threads its runtime runs kernels with
 * (xc_cpu_runtime_threads): schedules measured with one thread are not
 * taken for runs with two, nor the other way round. */
void xc_tune_device_id(const char* target, const xc_device_caps_t* caps, char out[33]);

/* ---- schedule text ---------------------------------------------------------- */

/* The schedule record as the tiled IR prints it ("schedule NAME { ... }"),
 * malloc'd (caller frees). */
xc_status_t xc_tune_schedule_format(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s, char** out_text);
/* (xc_tiled_schedule_parse, xcomp/tiled.h, reads it back.) */

/* ---- the tuning database ----------------------------------------------------- */

typedef struct xc_tune_db xc_tune_db_t;

/* One measurement. Strings are copied in by xc_tune_db_add; records read
 * back (xc_tune_db_query) own their strings (xc_tune_records_free). */
typedef struct xc_tune_record {
  char task[33];            /* xc_tune_task_hash */
  char target[64];          /* target name ("cpu", "spirv") */
  char device[33];          /* xc_tune_device_id */
  char device_name[128];    /* for people */
  char kernel[128];         /* one kernel name of the task (for people) */
  char* schedule;           /* xc_tune_schedule_format text */
  bool valid;               /* false: failed to compile, crashed, timed out or gave a wrong result */
  double time_ms;           /* measured time (valid records); 0 otherwise */
  double default_ms;        /* the default schedule's time in the same measurement session (0: unknown) */
  double predicted;         /* the cost model's score when it was picked (NaN: picked without one) */
  char error[256];          /* why invalid ("" when valid) */
  char xcomp_version[32];
  char run_id[40];          /* the tuning run that measured it */
  int64_t trial;            /* trial number within that run's task (0-based) */
  double created;           /* unix seconds */
} xc_tune_record_t;

/* Opens (and with create, creates) the database file: WAL journal, a busy
 * timeout so concurrent tuners wait instead of failing, the schema created
 * or checked (a file of another schema version is refused, naming it). */
xc_status_t xc_tune_db_open(const char* path, bool create, xc_tune_db_t** out);
void xc_tune_db_close(xc_tune_db_t* db);
/* The default file: <cache folder>/tuning.db (xc_cache_dir). */
xc_status_t xc_tune_db_default_path(char* out, size_t size);

/* Adds n records in one transaction. */
xc_status_t xc_tune_db_add(xc_tune_db_t* db, const xc_tune_record_t* records, int n);
/* Describes a task for reports (idempotent: the last description wins). */
xc_status_t xc_tune_db_add_task(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                                const char* kernel, const char* description, double weight);
/* The best valid record of (task, target, device) (docs/autotune.md,
 * "Rules": the schedule with the lowest mean time relative to the median
 * of its run's default times, its fastest record): *out_found false when
 * there is none; else *out (strings owned, free with xc_tune_records_free(out, 1)). */
xc_status_t xc_tune_db_best(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                            xc_tune_record_t* out, bool* out_found);
/* A hash over the best record of every task of (target, device): what a
 * compile could pick from the database (part of the compile cache key).
 * An empty database hashes to {0, 0}. */
xc_status_t xc_tune_db_digest(xc_tune_db_t* db, const char* target, const char* device, xc_hash128_t* out);
/* Every record, filtered by the non-NULL arguments, oldest first. */
xc_status_t xc_tune_db_query(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                             xc_tune_record_t** out_records, int* out_count);
void xc_tune_records_free(xc_tune_record_t* records, int count);

/* JSON lines: one object per record (and per task description, "kind":
 * "task"). Import skips records already present (same run_id, task,
 * trial, schedule) and reports how many it added. */
xc_status_t xc_tune_db_export_jsonl(xc_tune_db_t* db, FILE* out);
xc_status_t xc_tune_db_import_jsonl(xc_tune_db_t* db, const char* path, int* out_added);

/* The report of a database: a markdown summary (per task: target, device,
 * kernel, trials, valid, default and best time, speedup) to md, and with
 * plot_dir set, PNG plots drawn by gnuplot there (best-so-far time against
 * trials per task; the cost model's predicted score against the measured
 * speedup), each named in the summary. A missing gnuplot is an error that
 * says what to install. */
xc_status_t xc_tune_report(xc_tune_db_t* db, FILE* md, const char* plot_dir);

/* ---- the cost model ----------------------------------------------------------- */

typedef struct xc_cost_model xc_cost_model_t;

/* Gradient-boosted regression trees through XGBoost's C API, loaded with
 * dlopen (libxgboost.so.0 / libxgboost.so, or $XCOMP_XGBOOST_LIB): a missing
 * library is XC_UNAVAILABLE naming the package (libxgboost0). */
xc_status_t xc_cost_model_create(int num_features, xc_cost_model_t** out);
void xc_cost_model_destroy(xc_cost_model_t* m);
/* Adds training rows (features row-major, n x num_features; higher y is
 * better) to the model's set; they are kept for retraining. */
xc_status_t xc_cost_model_add(xc_cost_model_t* m, const float* features, const float* y, int n);
/* Trains from scratch on every row added so far (a few dozen rounds). */
xc_status_t xc_cost_model_train(xc_cost_model_t* m);
/* Predicted scores of n rows; a model not trained yet predicts 0. */
xc_status_t xc_cost_model_predict(xc_cost_model_t* m, const float* features, int n, float* out);
int xc_cost_model_rows(const xc_cost_model_t* m);
/* Spearman's rank correlation of two series (ties get average ranks);
 * NaN for n < 2 or a constant series. */
double xc_spearman(const double* a, const double* b, int n);

/* ---- tuning a model ------------------------------------------------------------- */

typedef struct xc_tune_options {
  const char* model_path;     /* .onnx or .xir */
  const char* target;         /* a present device: "cpu", "opencl:0", "spirv", "cuda" */
  xc_dtype_t precision;       /* XC_DTYPE_UNDEFINED: as written; f16 / bf16 like compile's --precision */
  int opt_level;              /* default 2 */
  const char* db_path;        /* NULL: xc_tune_db_default_path */
  int trials;                 /* schedules measured per task besides the default (default 32) */
  double time_budget_s;       /* > 0: no new round starts after this many seconds */
  int batch;                  /* candidates measured per round (default 8) */
  int jobs;                   /* parallel candidate compiles (0: the online CPUs) */
  bool random_search;         /* no cost model: candidates drawn uniformly (the baseline search) */
  uint64_t seed;              /* search randomness (0: a fixed default) */
  /* The program measuring runs as "<worker_exe> tune --worker REQUEST" (a
   * process of its own, so a crashing or hanging candidate cannot take the
   * tuner down); the CLI passes its own executable. Required. */
  const char* worker_exe;
  double timeout_s;           /* one candidate's measurement, compile excluded (default 30) */
  int max_tasks;              /* > 0: only the heaviest tasks (by weight x default time) */
  int64_t max_local_memory_bytes; /* as the session options: tune for a smaller device */
  int max_threads_per_group;
  FILE* progress;             /* NULL: quiet */
  bool live;                  /* progress is a terminal: one status line redrawn in place */
} xc_tune_options_t;

void xc_tune_options_init(xc_tune_options_t* o);

typedef struct xc_tune_summary {
  char run_id[40];
  int num_tasks;              /* tasks tuned (kernels with more than one legal schedule) */
  int num_kernels;            /* kernels of the model */
  int trials;                 /* candidates measured (valid or not) */
  int invalid;                /* of them: compile failures, crashes, time-outs, wrong results */
  double seconds;
  double default_ms;          /* sum over tasks of weight x default time */
  double tuned_ms;            /* the same with each task's best */
  /* Spearman's rank correlation between the cost model's predictions and
   * the measured times of candidates it had not been trained on, pooled
   * over rounds (NaN: too few). */
  double rank_correlation;
  int rank_samples;
} xc_tune_summary_t;

/* Tunes every task of the model on the target's device, writing every
 * measurement to the database; what it finds is used by later compiles for
 * the same target and device (xc_session_options_t.tuning_db). */
xc_status_t xc_tune_model(const xc_tune_options_t* o, xc_tune_summary_t* out);

/* The measuring process's main (xc_tune_options_t.worker_exe runs it with
 * the request file the tuner wrote): loads the module, measures the default
 * schedule and each candidate, answers on stdout line by line. Returns the
 * process exit status. */
int xc_tune_worker_main(const char* request_path);

#ifdef __cplusplus
}
#endif
#endif
