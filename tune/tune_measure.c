/* Measuring candidate schedules: compiled in parallel processes, run in a
 * worker process of their own against the default schedule.
 *
 * The tuner (parent) never runs candidate code: a kernel that crashes or
 * hangs takes down the worker, which the parent notices (end of its output,
 * or no line within the time limit), records the candidate it was running
 * as invalid and starts a fresh worker for the rest. Compiles run in forked
 * processes for the same reason (and to use every core).
 *
 * The worker's request file (one item per line):
 *   module PATH            the model compiled with default schedules
 *   device SELECTOR        "cpu:0", "spirv:0"
 *   step S                 the step whose launch is measured
 *   cand ID PATH N K0..KN  a candidate: its blob file (PATH, PATH.meta holds
 *                          format, entry and build options) and knob values
 * Its answers on stdout, flushed line by line:
 *   default MS             the module's own kernel (after its reference run);
 *                          again after the candidates (the lower one counts)
 *   start ID               about to run candidate ID
 *   done ID ok MS          right result, MS milliseconds
 *   done ID bad REASON     wrong result or an error
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../driver/driver_internal.h"
#include "tune_internal.h"
#include "xcomp/runtime.h"

double tune_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- compiling candidates (parent, forked children) ---- */

static void cand_path(const tune_measure_t* tm, int batch, int i, const char* ext, char* out, size_t size) {
  snprintf(out, size, "%s/b%d_c%d%s", tm->dir, batch, i, ext);
}

static xc_status_t write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) return xc_error(XC_IO, "cannot write %s: %s", path, strerror(errno));
  fputs(text, f);
  if (fclose(f) != 0) return xc_error(XC_UNAVAILABLE, "cannot write %s", path);
  return NULL;
}

/* In a child: emit and compile candidate i into its files. */
static void compile_one(tune_measure_t* tm, int batch, int i, tune_cand_t* c) {
  char path[4096], meta[4200], errp[4200];
  cand_path(tm, batch, i, ".blob", path, sizeof path);
  snprintf(meta, sizeof meta, "%s.meta", path);
  snprintf(errp, sizeof errp, "%s.err", path);
  xc_tiled_kernel_t* tk = tm->module->kernels[tm->kernel].tiled;
  xc_status_t s = xc_tiled_set_schedule(tk, &c->sched);
  xc_knob_t knobs[XC_TILED_MAX_SCHED_KNOBS];
  int nk = tk->num_knobs < XC_TILED_MAX_SCHED_KNOBS ? tk->num_knobs : XC_TILED_MAX_SCHED_KNOBS;
  for (int j = 0; j < nk; j++) {
    knobs[j].name = tk->knobs[j].name;
    knobs[j].value = c->sched.knobs[j];
  }
  xc_kernel_source_t src;
  memset(&src, 0, sizeof src);
  xc_blob_t blob;
  memset(&blob, 0, sizeof blob);
  char why[512] = "";
  if (!s && !xc_target_supports(tm->target, tm->caps, tk, why, sizeof why))
    s = xc_error(XC_UNSUPPORTED, "the target declines it: %s", why);
  if (!s) s = xc_target_emit(tm->target, tm->caps, tk, knobs, nk, &src);
  xc_compile_options_t co;
  memset(&co, 0, sizeof co);
  if (!s) s = xc_target_compile(tm->target, tm->caps, &src, &co, &blob);
  if (!s) s = xc_write_file_atomic(path, blob.bytes ? (const void*)blob.bytes : "", blob.size);
  if (!s) {
    char* m = NULL;
    size_t mn = 0;
    FILE* f = open_memstream(&m, &mn);
    if (f) {
      fprintf(f, "%s\n%s\n%s\n", blob.format, src.entry, blob.options ? blob.options : "");
      fclose(f);
    }
    s = m ? write_text(meta, m) : xc_error_oom();
    free(m);
  }
  if (s) {
    (void)write_text(errp, xc_status_message(s));
    xc_status_free(s);
  }
  xc_kernel_source_release(&src);
  xc_blob_release(&blob);
}

static void compile_all(tune_measure_t* tm, int batch, tune_cand_t* cands, int n) {
  int jobs = tm->jobs > 0 ? tm->jobs : 1;
  if (jobs > n) jobs = n;
  fflush(NULL);
  pid_t pids[256];
  int started = 0;
  for (int j = 0; j < jobs && j < 256; j++) {
    pid_t p = fork();
    if (p == 0) {
      for (int i = j; i < n; i += jobs) compile_one(tm, batch, i, &cands[i]);
      _exit(0);
    }
    if (p > 0) pids[started++] = p;
  }
  if (started == 0) /* no processes to be had: compile here, one after another */
    for (int i = 0; i < n; i++) compile_one(tm, batch, i, &cands[i]);
  for (int j = 0; j < started; j++) {
    int st;
    while (waitpid(pids[j], &st, 0) < 0 && errno == EINTR) {
    }
  }
  for (int i = 0; i < n; i++) {
    char path[4096], other[4200];
    cand_path(tm, batch, i, ".blob", path, sizeof path);
    snprintf(other, sizeof other, "%s.err", path);
    uint8_t* err = NULL;
    size_t en = 0;
    xc_status_t r = xc_read_file_bytes(other, &err, &en);
    struct stat sb;
    snprintf(other, sizeof other, "%s.meta", path);
    cands[i].valid = r != NULL && stat(other, &sb) == 0; /* compiled; measuring decides */
    if (!r)
      snprintf(cands[i].error, sizeof cands[i].error, "compile: %.*s", (int)(en > 200 ? 200 : en), (const char*)err);
    else if (!cands[i].valid)
      snprintf(cands[i].error, sizeof cands[i].error, "compile: the compiling process died");
    xc_status_free(r);
    free(err);
  }
}

/* ---- the worker process ---- */

/* A whole file as a NUL-terminated string (malloc'd). */
static xc_status_t read_text(const char* path, char** out) {
  *out = NULL;
  uint8_t* b = NULL;
  size_t n = 0;
  XC_RETURN_IF_ERROR(xc_read_file_bytes(path, &b, &n));
  char* t = malloc(n + 1);
  if (!t) {
    free(b);
    return xc_error_oom();
  }
  if (n) memcpy(t, b, n);
  t[n] = 0;
  free(b);
  *out = t;
  return NULL;
}

/* NULL when got matches ref within the dtype's tolerance; else why not. */
static const char* compare(const uint8_t* ref, const uint8_t* got, xc_dtype_t t, size_t bytes, char* why, size_t size) {
  bool fl = t == XC_F32 || t == XC_F64 || t == XC_F16 || t == XC_BF16;
  if (!fl) {
    if (memcmp(ref, got, bytes) == 0) return NULL;
    snprintf(why, size, "integer output differs from the default schedule's");
    return why;
  }
  size_t n = bytes / xc_dtype_size(t);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double r = xc_drv_element(ref, t, i), g = xc_drv_element(got, t, i);
    if (isnan(r) != isnan(g) || (isinf(r) && r != g)) {
      snprintf(why, size, "element %zu is %g, the default schedule gives %g", i, g, r);
      return why;
    }
    if (!isfinite(r)) continue;
    num += (g - r) * (g - r);
    den += r * r;
  }
  double err = den > 0 ? sqrt(num / den) : sqrt(num);
  double tol = t == XC_BF16 ? 3e-2 : t == XC_F16 ? 5e-3 : 1e-4;
  if (err <= tol) return NULL;
  snprintf(why, size, "result differs from the default schedule's (rel-L2 %.2g > %.2g)", err, tol);
  return why;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct worker {
  xc_compiled_module_t* m;
  xc_device_t* dev;
  int step;
  int nbuf;
  xc_buffer_t* bufs[XC_TARGET_MAX_ARGS];
  uint8_t* init[XC_TARGET_MAX_ARGS];   /* initial contents */
  size_t bytes[XC_TARGET_MAX_ARGS];
  xc_dtype_t dtype[XC_TARGET_MAX_ARGS];
  bool written[XC_TARGET_MAX_ARGS];    /* OUT / INOUT: compared */
  uint8_t* ref[XC_TARGET_MAX_ARGS];    /* the default's results */
} worker_t;

static xc_status_t launch_of(worker_t* w, xc_launch_t* l, xc_cm_step_launch_t* sl) {
  xc_symbind_t none;
  xc_symbind_init(&none);
  xc_status_t s = xc_cm_step_launch(w->m, w->step, &none, xc_device_caps(w->dev)->max_threads_per_group, sl);
  xc_symbind_free(&none);
  XC_RETURN_IF_ERROR(s);
  if (sl->empty) return xc_error(XC_UNSUPPORTED, "the launch grid is empty");
  memset(l, 0, sizeof *l);
  for (int a = 0; a < 3; a++) {
    l->grid[a] = sl->grid[a];
    l->threads[a] = sl->threads[a];
  }
  l->buffers = w->bufs;
  l->num_buffers = sl->num_values;
  l->scalars = sl->scalars;
  l->num_scalars = sl->num_scalars;
  return NULL;
}

static xc_status_t setup_buffers(worker_t* w) {
  xc_cm_step_launch_t sl;
  xc_symbind_t none;
  xc_symbind_init(&none);
  xc_status_t s = xc_cm_step_launch(w->m, w->step, &none, xc_device_caps(w->dev)->max_threads_per_group, &sl);
  const xc_cm_step_t* st = &w->m->steps[w->step];
  int b = 0;
  for (int p = 0; !s && p < st->num_params; p++) {
    if (st->params[p].value < 0) continue;
    const xc_cm_value_t* v = &w->m->values[st->params[p].value];
    int64_t numel = 1, d = 0;
    for (int j = 0; !s && j < v->rank; j++) {
      s = xc_dim_eval(v->dims[j], &none, &d);
      if (s) s = xc_status_annotate(s, "value '%s' (tuning needs static shapes)", v->name);
      else if (!xc_mul_i64(numel, d, &numel)) s = xc_error(XC_OUT_OF_RANGE, "value '%s' is too large", v->name);
    }
    if (s) break;
    size_t bytes = (size_t)numel * xc_dtype_size(v->dtype);
    w->bytes[b] = bytes;
    w->dtype[b] = v->dtype;
    w->written[b] = st->params[p].role != XC_ROLE_IN;
    w->init[b] = calloc(bytes + 1, 1);
    if (!w->init[b]) s = xc_error_oom();
    else if ((v->flags & XC_CM_VALUE_WEIGHT) && v->constant && xc_tensor_nbytes(v->constant) == bytes)
      memcpy(w->init[b], v->constant->data, bytes);
    else if (!(v->flags & XC_CM_VALUE_INDEX_ERROR))
      xc_drv_fill_random(w->init[b], v->dtype, (size_t)numel, (uint32_t)(b + 1));
    if (!s) s = xc_buffer_alloc(w->dev, bytes, &w->bufs[b]);
    if (!s) s = xc_buffer_write(w->bufs[b], 0, w->init[b], bytes);
    b++;
    w->nbuf = b;
  }
  xc_symbind_free(&none);
  return s;
}

/* Restores the written buffers, runs k once, reads them into out[] (or
 * compares them with the reference when out is NULL). */
static xc_status_t run_checked(worker_t* w, xc_kernel_t* k, const xc_launch_t* l, uint8_t** out, char* why,
                               size_t why_size, bool* ok) {
  *ok = true;
  for (int b = 0; b < w->nbuf; b++)
    if (w->written[b]) XC_RETURN_IF_ERROR(xc_buffer_write(w->bufs[b], 0, w->init[b], w->bytes[b]));
  XC_RETURN_IF_ERROR(xc_kernel_launch(k, l));
  XC_RETURN_IF_ERROR(xc_device_synchronize(w->dev));
  for (int b = 0; b < w->nbuf && *ok; b++) {
    if (!w->written[b]) continue;
    if (out) {
      out[b] = malloc(w->bytes[b] + 1);
      if (!out[b]) return xc_error_oom();
      XC_RETURN_IF_ERROR(xc_buffer_read(w->bufs[b], 0, out[b], w->bytes[b]));
      continue;
    }
    uint8_t* got = malloc(w->bytes[b] + 1);
    if (!got) return xc_error_oom();
    xc_status_t s = xc_buffer_read(w->bufs[b], 0, got, w->bytes[b]);
    if (!s && compare(w->ref[b], got, w->dtype[b], w->bytes[b], why, why_size)) *ok = false;
    free(got);
    XC_RETURN_IF_ERROR(s);
  }
  return NULL;
}

/* Warm-up, then repeated timed launches (device events); the result is the
 * mean of the runs inside the interquartile fences (outliers: preemption,
 * frequency changes). */
static xc_status_t time_kernel(worker_t* w, xc_kernel_t* k, const xc_launch_t* l, double* out_ms) {
  enum { MAX_RUNS = 200 };
  double ms[MAX_RUNS];
  for (int r = 0; r < 2; r++) XC_RETURN_IF_ERROR(xc_kernel_launch(k, l));
  XC_RETURN_IF_ERROR(xc_device_synchronize(w->dev));
  int runs = 0, want = 5;
  double total = 0;
  while (runs < want && runs < MAX_RUNS) {
    xc_event_t *a = NULL, *b = NULL;
    xc_status_t s = xc_event_record(w->dev, &a);
    if (!s) s = xc_kernel_launch(k, l);
    if (!s) s = xc_event_record(w->dev, &b);
    if (!s) s = xc_event_elapsed_ms(a, b, &ms[runs]);
    xc_event_free(a);
    xc_event_free(b);
    XC_RETURN_IF_ERROR(s);
    total += ms[runs++];
    /* about 150 ms of measurement per candidate, 5 to 200 runs */
    if (runs == 5) {
      double each = total / 5;
      want = each > 0 ? (int)(150.0 / each) : MAX_RUNS;
      if (want < 5) want = 5;
      if (want > MAX_RUNS) want = MAX_RUNS;
    }
  }
  qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
  double q1 = ms[runs / 4], q3 = ms[(3 * runs) / 4], iqr = q3 - q1;
  double sum = 0;
  int kept = 0;
  for (int i = 0; i < runs; i++)
    if (ms[i] >= q1 - 1.5 * iqr && ms[i] <= q3 + 1.5 * iqr) sum += ms[i], kept++;
  *out_ms = kept ? sum / kept : ms[runs / 2];
  return NULL;
}

static xc_status_t load_blob(worker_t* w, const char* path, xc_module_t** mod, xc_kernel_t** k) {
  char meta_path[4200];
  snprintf(meta_path, sizeof meta_path, "%s.meta", path);
  uint8_t* bytes = NULL;
  char* meta = NULL;
  size_t size = 0;
  XC_RETURN_IF_ERROR(xc_read_file_bytes(path, &bytes, &size));
  xc_status_t s = read_text(meta_path, &meta);
  char *format = NULL, *entry = NULL, *options = NULL;
  if (!s) {
    char* save = NULL;
    format = strtok_r(meta, "\n", &save);
    entry = format ? strtok_r(NULL, "\n", &save) : NULL;
    options = entry ? strtok_r(NULL, "\n", &save) : NULL;
    if (!format || !entry) s = xc_error(XC_DATA_LOSS, "%s: malformed", meta_path);
  }
  xc_blob_t blob;
  memset(&blob, 0, sizeof blob);
  if (!s) {
    snprintf(blob.format, sizeof blob.format, "%s", format);
    blob.bytes = bytes;
    blob.size = size;
    blob.options = options && *options ? options : NULL;
    s = xc_module_load(w->dev, &blob, mod);
  }
  if (!s) s = xc_module_kernel(*mod, entry, k);
  free(bytes);
  free(meta);
  return s;
}

/* Fault injection for the tests of the tuner's isolation:
 * $XCOMP_TUNE_FAULT = "crash:ID", "hang:ID" or "wrong:ID" makes the worker
 * crash, hang or report a wrong result at candidate ID of every batch.
 * Returns 'c', 'h', 'w' or 0. */
static int injected_fault(int id) {
  const char* f = getenv("XCOMP_TUNE_FAULT");
  if (!f) return 0;
  const char* colon = strchr(f, ':');
  if (!colon || atoi(colon + 1) != id) return 0;
  if (strncmp(f, "crash", 5) == 0) return 'c';
  if (strncmp(f, "hang", 4) == 0) return 'h';
  if (strncmp(f, "wrong", 5) == 0) return 'w';
  return 0;
}

static void say(const char* fmt, ...) XC_PRINTF(1, 2);
static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

int xc_tune_worker_main(const char* request_path) {
  char* req = NULL;
  worker_t w;
  memset(&w, 0, sizeof w);
  xc_status_t s = read_text(request_path, &req);
  char module[4096] = "", device[128] = "";
  w.step = -1;
  for (char *save = NULL, *line = s ? NULL : strtok_r(req, "\n", &save); line && !s;
       line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "module ", 7) == 0) snprintf(module, sizeof module, "%s", line + 7);
    else if (strncmp(line, "device ", 7) == 0) snprintf(device, sizeof device, "%s", line + 7);
    else if (strncmp(line, "step ", 5) == 0) w.step = atoi(line + 5);
    else if (strncmp(line, "cand ", 5) == 0) break; /* read again below */
  }
  free(req);
  req = NULL;
  if (!s) s = xc_targets_init();
  if (!s) s = xc_compiled_module_read(module, &w.m);
  if (!s && (w.step < 0 || w.step >= w.m->num_steps || w.m->steps[w.step].kind != XC_CM_STEP_KERNEL))
    s = xc_error(XC_INVALID_ARGUMENT, "%s: no kernel step %d", request_path, w.step);
  if (!s) s = xc_device_open(device, &w.dev);
  if (!s) s = setup_buffers(&w);
  xc_cm_step_t* st = s ? NULL : &w.m->steps[w.step];
  int64_t* default_knobs = st ? malloc(sizeof(int64_t) * (size_t)(st->num_knobs + 1)) : NULL;
  if (st && !default_knobs) s = xc_error_oom();
  if (!s && st->num_knobs) memcpy(default_knobs, st->knobs, sizeof(int64_t) * (size_t)st->num_knobs);
  /* the default: the reference result and the time to beat */
  xc_module_t* dm = NULL;
  xc_kernel_t* dk = NULL;
  xc_launch_t l;
  xc_cm_step_launch_t sl;
  char why[512] = "";
  bool ok = true;
  double ms = 0;
  if (!s) s = xc_module_load(w.dev, &w.m->kernels[st->kernel].blob, &dm);
  if (!s) s = xc_module_kernel(dm, w.m->kernels[st->kernel].entry, &dk);
  if (!s) s = launch_of(&w, &l, &sl);
  if (!s) s = run_checked(&w, dk, &l, w.ref, why, sizeof why, &ok);
  if (!s) s = time_kernel(&w, dk, &l, &ms);
  if (!s) say("default %.6f\n", ms);
  /* the candidates, in request order */
  if (!s) s = read_text(request_path, &req);
  for (char *save = NULL, *line = s ? NULL : strtok_r(req, "\n", &save); line && !s;
       line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "cand ", 5) != 0) continue;
    int id = -1, nk = -1, used = 0;
    char path[4096];
    if (sscanf(line + 5, "%d %4095s %d%n", &id, path, &nk, &used) != 3 || nk != st->num_knobs) {
      s = xc_error(XC_INVALID_ARGUMENT, "%s: malformed candidate line '%s'", request_path, line);
      break;
    }
    const char* p = line + 5 + used;
    for (int j = 0; j < nk; j++) {
      char* e = NULL;
      st->knobs[j] = strtoll(p, &e, 10);
      p = e;
    }
    say("start %d\n", id);
    int fault = injected_fault(id);
    if (fault == 'c') raise(SIGSEGV);
    if (fault == 'h')
      for (;;) pause();
    xc_module_t* cm = NULL;
    xc_kernel_t* ck = NULL;
    xc_status_t cs = load_blob(&w, path, &cm, &ck);
    if (!cs) cs = launch_of(&w, &l, &sl);
    if (!cs) cs = run_checked(&w, ck, &l, NULL, why, sizeof why, &ok);
    if (!cs && ok && fault == 'w') {
      ok = false; /* as a kernel that computed something else would be caught */
      snprintf(why, sizeof why, "result differs from the default schedule's (injected)");
    }
    if (!cs && ok) cs = time_kernel(&w, ck, &l, &ms);
    if (cs) {
      char msg[300];
      snprintf(msg, sizeof msg, "%s", xc_status_message(cs));
      for (char* c = msg; *c; c++)
        if (*c == '\n') *c = ' ';
      say("done %d bad %s\n", id, msg);
      xc_status_free(cs);
    } else if (!ok) {
      say("done %d bad %s\n", id, why);
    } else {
      say("done %d ok %.6f\n", id, ms);
    }
    xc_module_unload(cm);
    memcpy(st->knobs, default_knobs, sizeof(int64_t) * (size_t)st->num_knobs);
  }
  /* the default once more, after the candidates: the first kernel a fresh
   * process times can run slow (clocks still rising, pages first touched),
   * and every candidate of the batch would look faster than it is; the
   * parent keeps the lower of the two */
  if (!s && dk) s = launch_of(&w, &l, &sl);
  if (!s && dk) s = run_checked(&w, dk, &l, NULL, why, sizeof why, &ok); /* the inputs restored */
  if (!s && dk) s = time_kernel(&w, dk, &l, &ms);
  if (!s && dk) say("default %.6f\n", ms);
  xc_module_unload(dm);
  free(req);
  free(default_knobs);
  int rc = 0;
  if (s) {
    fprintf(stderr, "xcomp: error: %s\n", xc_status_message(s));
    xc_status_free(s);
    rc = 1;
  }
  for (int b = 0; b < w.nbuf; b++) {
    xc_buffer_free(w.bufs[b]);
    free(w.init[b]);
    free(w.ref[b]);
  }
  if (w.dev) xc_device_close(w.dev);
  xc_compiled_module_destroy(w.m);
  return rc;
}

/* ---- running workers (parent) ---- */

/* The last bytes of a file, for messages. */
static void tail_of(const char* path, char* out, size_t size) {
  out[0] = 0;
  uint8_t* b = NULL;
  size_t n = 0;
  xc_status_t s = xc_read_file_bytes(path, &b, &n);
  if (s) {
    xc_status_free(s);
    return;
  }
  size_t from = n > size - 1 ? n - (size - 1) : 0;
  while (n > from && (b[n - 1] == '\n' || b[n - 1] == ' ')) n--;
  snprintf(out, size, "%.*s", (int)(n - from), (const char*)b + from);
  for (char* c = out; *c; c++)
    if (*c == '\n') *c = ' ';
  free(b);
}

/* One worker over the candidates still to measure (todo[i] true). Returns
 * when the worker ends; *default_ms is the lower of the default's times it
 * reported (0: it reported none). */
static xc_status_t run_worker(tune_measure_t* tm, int batch, tune_cand_t* cands, int n, bool* todo, double* default_ms,
                              bool* progressed) {
  *progressed = false;
  char req[4096], errp[4096];
  snprintf(req, sizeof req, "%s/b%d.request", tm->dir, batch);
  snprintf(errp, sizeof errp, "%s/b%d.stderr", tm->dir, batch);
  FILE* f = fopen(req, "w");
  if (!f) return xc_error(XC_UNAVAILABLE, "cannot write %s: %s", req, strerror(errno));
  fprintf(f, "module %s\ndevice %s\nstep %d\n", tm->module_path, tm->selector, tm->step);
  for (int i = 0; i < n; i++) {
    if (!todo[i]) continue;
    char path[4096];
    cand_path(tm, batch, i, ".blob", path, sizeof path);
    fprintf(f, "cand %d %s %d", i, path, cands[i].sched.num_knobs);
    for (int j = 0; j < cands[i].sched.num_knobs; j++) fprintf(f, " %lld", (long long)cands[i].sched.knobs[j]);
    fprintf(f, "\n");
  }
  if (fclose(f) != 0) return xc_error(XC_UNAVAILABLE, "cannot write %s", req);

  int fds[2];
  if (pipe(fds) != 0) return xc_error(XC_UNAVAILABLE, "pipe: %s", strerror(errno));
  /* fork + exec: the worker gets the pipe as stdout, a file as stderr and
   * nothing else of the tuner's (the database, device driver handles) */
  char* argv[] = {(char*)tm->worker_exe, "tune", "--worker", req, NULL};
  if (!tm->env) tm->env = xc_targets_startup_environment();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (dup2(fds[1], 1) < 0 || e < 0 || dup2(e, 2) < 0) _exit(127);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
      for (int fd = 3; fd < 4096; fd++) close(fd);
    execve(tm->worker_exe, argv, (char* const*)tm->env);
    _exit(127);
  }
  int spawn_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return xc_error(XC_UNAVAILABLE, "cannot start the measuring process %s: %s", tm->worker_exe,
                    strerror(spawn_errno));
  }
  char buf[8192];
  size_t have = 0;
  int current = -1;
  bool eof = false, timed_out = false;
  double deadline = tune_now_s() + (*default_ms > 0 ? tm->timeout_s : tm->timeout_s + 300);
  while (!eof && !timed_out) {
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int wait_ms = (int)((deadline - tune_now_s()) * 1000);
    if (wait_ms <= 0) {
      timed_out = true;
      break;
    }
    int pr = poll(&pfd, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      timed_out = true;
      break;
    }
    ssize_t got = read(fds[0], buf + have, sizeof buf - 1 - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      eof = true;
      got = 0;
    }
    have += (size_t)got;
    buf[have] = 0;
    char* nl;
    while ((nl = strchr(buf, '\n'))) {
      *nl = 0;
      int id = -1, used = 0;
      double ms = 0;
      if (sscanf(buf, "default %lf", &ms) == 1) {
        if (*default_ms <= 0 || ms < *default_ms) *default_ms = ms; /* the lower of the two */
      } else if (sscanf(buf, "start %d", &id) == 1 && id >= 0 && id < n) {
        current = id;
      } else if (sscanf(buf, "done %d ok %lf", &id, &ms) == 2 && id >= 0 && id < n) {
        cands[id].valid = true;
        cands[id].ms = ms;
        cands[id].default_ms = *default_ms; /* tune_measure_batch sets the final one */
        todo[id] = false;
        current = -1;
        *progressed = true;
      } else if (sscanf(buf, "done %d bad %n", &id, &used) == 1 && used > 0 && id >= 0 && id < n) {
        cands[id].valid = false;
        snprintf(cands[id].error, sizeof cands[id].error, "%s", buf + used);
        todo[id] = false;
        current = -1;
        *progressed = true;
      }
      size_t consumed = (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, have - consumed + 1);
      have -= consumed;
      deadline = tune_now_s() + tm->timeout_s;
    }
    if (have == sizeof buf - 1) have = 0; /* an overlong line: dropped */
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char tail[240];
  tail_of(errp, tail, sizeof tail);
  if (current >= 0) {
    /* the candidate that was running took the worker down */
    cands[current].valid = false;
    todo[current] = false;
    *progressed = true;
    if (timed_out)
      snprintf(cands[current].error, sizeof cands[current].error, "timed out after %.0f s", tm->timeout_s);
    else if (WIFSIGNALED(status))
      snprintf(cands[current].error, sizeof cands[current].error, "crashed (signal %d)", WTERMSIG(status));
    else
      snprintf(cands[current].error, sizeof cands[current].error, "the measuring process exited: %.200s", tail);
    return NULL;
  }
  if (*default_ms <= 0) {
    if (timed_out) return xc_error(XC_UNAVAILABLE, "measuring the default schedule timed out");
    return xc_error(XC_INTERNAL, "measuring the default schedule failed: %s",
                    tail[0] ? tail : WIFSIGNALED(status) ? "the process was killed by a signal" : "no answer");
  }
  return NULL;
}

xc_status_t tune_measure_batch(tune_measure_t* tm, tune_cand_t* cands, int n) {
  int batch = tm->serial++;
  for (int i = 0; i < n; i++) {
    cands[i].valid = false;
    cands[i].ms = 0;
    cands[i].default_ms = 0;
    cands[i].error[0] = 0;
  }
  compile_all(tm, batch, cands, n);
  bool* todo = calloc((size_t)n + 1, sizeof *todo);
  if (!todo) return xc_error_oom();
  int left = 0;
  for (int i = 0; i < n; i++) left += (todo[i] = cands[i].valid);
  double default_ms = 0;
  xc_status_t s = NULL;
  while (!s && left > 0) {
    bool progressed = false;
    double d = 0;
    s = run_worker(tm, batch, cands, n, todo, &d, &progressed);
    if (d > 0 && (default_ms <= 0 || d < default_ms)) default_ms = d; /* the lowest of the workers' */
    left = 0;
    for (int i = 0; i < n; i++) left += todo[i];
    if (!s && left > 0 && !progressed) s = xc_error(XC_INTERNAL, "the measuring process stopped without answering");
  }
  for (int i = 0; i < n; i++) {
    cands[i].default_ms = default_ms;
    if (todo[i]) {
      cands[i].valid = false;
      snprintf(cands[i].error, sizeof cands[i].error, "not measured");
    }
  }
  free(todo);
  return s;
}
