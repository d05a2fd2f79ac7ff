/* The report of a tuning database (xc_tune_report, docs/autotune.md
 * "Reports"): a markdown table with one row per (task, target, device) and,
 * with a plot folder, PNG plots drawn by gnuplot: best-so-far time against
 * trials per task, and the cost model's predicted score against the measured
 * speedup per target.
 *
 * gnuplot runs as a separate program on a script and a data file written
 * beside each plot (kept, so a person can restyle a plot by editing the .gp
 * and running gnuplot on it again), from inside the plot folder so no path
 * has to be quoted for it. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune_db_internal.h"

/* One row of the report. */
typedef struct group {
  char task[33];
  char target[64];
  char device[33];
} group_t;

typedef struct report {
  xc_tune_db_t* db;
  FILE* md;
  const char* plot_dir; /* NULL: no plots */
  char gnuplot[4096];   /* the program's path */
  group_t* groups;
  int group_count;
} report_t;

/* ---- small helpers -------------------------------------------------------------------- */

/* The gnuplot program on PATH, or XC_UNAVAILABLE saying what to install. */
static xc_status_t find_gnuplot(char* out, size_t size) {
  const char* path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    /* An empty PATH entry means the current folder. */
    int written = n ? snprintf(out, size, "%.*s/gnuplot", (int)n, path) : snprintf(out, size, "./gnuplot");
    if (written > 0 && (size_t)written < size && access(out, X_OK) == 0) return NULL;
    path += n;
    if (*path == ':') path++;
  }
  out[0] = '\0';
  return xc_error(XC_UNAVAILABLE, "gnuplot not found: install gnuplot-nox (the report's plots are drawn by it)");
}

/* Letters, digits, '.', '-' and '_' of text (at most size-1 bytes), others
 * as '_': names of plot files and text inside gnuplot's quoted strings. */
static void safe_name(const char* text, char* out, size_t size) {
  size_t i = 0;
  for (; text[i] && i + 1 < size; i++) {
    char c = text[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_';
    out[i] = ok ? c : '_';
  }
  out[i] = '\0';
}

/* text as a markdown table cell: '|' escaped, line breaks as spaces. */
static void md_cell(FILE* md, const char* text) {
  fputs("| ", md);
  for (; *text; text++) {
    if (*text == '|') fputs("\\|", md);
    else if (*text == '\n' || *text == '\r') fputc(' ', md);
    else fputc(*text, md);
  }
  fputc(' ', md);
}

static void md_number(FILE* md, const char* format, double v) {
  fputs("| ", md);
  if (isnan(v)) fputs("-", md);
  else fprintf(md, format, v);
  fputc(' ', md);
}

static xc_status_t path_in(const char* dir, const char* name, char* out, size_t size) {
  int n = snprintf(out, size, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= size) return xc_error(XC_OUT_OF_RANGE, "path %s/%s is too long", dir, name);
  return NULL;
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* ---- gnuplot -------------------------------------------------------------------------- */

/* The lines every script starts with: pngcairo draws smoother plots, but a
 * gnuplot built without cairo has only the libgd png terminal. */
static void script_prologue(FILE* f, const char* name) {
  fprintf(f,
          "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size 900,540 } "
          "else { set terminal png size 900,540 }\n"
          "set output \"%s.png\"\n"
          "set grid\n"
          /* Room at the edges: the default time is often the top of the
           * range and would hide under the border. */
          "set offsets graph 0.02, graph 0.02, graph 0.08, graph 0.08\n",
          name);
}

/* Runs gnuplot on <dir>/<name>.gp (which draws <name>.png) and checks it
 * exited 0 and drew a file; its output goes to <name>.log, quoted in the
 * error when it fails and removed when it succeeds. */
static xc_status_t run_gnuplot(const report_t* r, const char* name) {
  char script[300], log_name[300], log_path[4400], png_path[4400];
  snprintf(script, sizeof script, "%s.gp", name);
  snprintf(log_name, sizeof log_name, "%s.log", name);
  XC_RETURN_IF_ERROR(path_in(r->plot_dir, log_name, log_path, sizeof log_path));
  char png_name[300];
  snprintf(png_name, sizeof png_name, "%s.png", name);
  XC_RETURN_IF_ERROR(path_in(r->plot_dir, png_name, png_path, sizeof png_path));
  unlink(png_path); /* a stale plot must not pass for a new one */
  fflush(NULL);     /* the child must not write our buffered output a second time */
  pid_t pid = fork();
  if (pid < 0) return xc_error(XC_IO, "plot %s: cannot start gnuplot: %s", png_path, strerror(errno));
  if (pid == 0) {
    /* Only calls that are safe between fork and exec. */
    if (chdir(r->plot_dir) != 0) _exit(126);
    int fd = open(log_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execl(r->gnuplot, "gnuplot", script, (char*)NULL);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return xc_error(XC_IO, "plot %s: waiting for gnuplot: %s", png_path, strerror(errno));
  }
  struct stat st;
  bool drawn = stat(png_path, &st) == 0 && st.st_size > 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && drawn) {
    unlink(log_path);
    return NULL;
  }
  char log[512] = "";
  FILE* f = fopen(log_path, "r");
  if (f) {
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = '\0';
    fclose(f);
    for (char* c = log; *c; c++)
      if (*c == '\n') *c = ' ';
  }
  if (!WIFEXITED(status))
    return xc_error(XC_IO, "plot %s: gnuplot was killed by signal %d", png_path,
                    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return xc_error(XC_IO, "plot %s: gnuplot (%s) exited with status %d%s: %s (script %s/%s)", png_path, r->gnuplot,
                  WEXITSTATUS(status), drawn ? "" : " and drew nothing", log, r->plot_dir, script);
}

/* Opens <dir>/<name>.<extension> for writing. */
static xc_status_t create_in_plot_dir(const report_t* r, const char* name, const char* extension, FILE** out) {
  char file[300], path[4400];
  snprintf(file, sizeof file, "%s.%s", name, extension);
  XC_RETURN_IF_ERROR(path_in(r->plot_dir, file, path, sizeof path));
  *out = fopen(path, "w");
  if (!*out) return xc_error(XC_IO, "cannot write %s: %s", path, strerror(errno));
  return NULL;
}

/* Removes <dir>/<name>.<extension> (an empty data file: no plot drawn). */
static void remove_in_plot_dir(const report_t* r, const char* name, const char* extension) {
  char file[300], path[4400];
  snprintf(file, sizeof file, "%s.%s", name, extension);
  xc_status_t s = path_in(r->plot_dir, file, path, sizeof path);
  if (s) xc_status_free(s);
  else unlink(path);
}

static xc_status_t close_written(FILE* f, const report_t* r, const char* name) {
  bool ok = !ferror(f);
  if (fclose(f) != 0) ok = false;
  return ok ? NULL : xc_error(XC_IO, "writing %s/%s: %s", r->plot_dir, name, strerror(errno));
}

/* ---- the rows ------------------------------------------------------------------------- */

static xc_status_t load_groups(report_t* r) {
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(r->db,
                                        "SELECT task, target, device FROM records UNION"
                                        " SELECT task, target, device FROM tasks ORDER BY 1, 2, 3",
                                        &st));
  int capacity = 0, rc = SQLITE_DONE;
  xc_status_t s = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (r->group_count == capacity) {
      int grown = capacity ? capacity * 2 : 32;
      group_t* more = realloc(r->groups, (size_t)grown * sizeof *more);
      if (!more) {
        s = xc_error_oom();
        break;
      }
      r->groups = more;
      capacity = grown;
    }
    group_t* g = &r->groups[r->group_count++];
    snprintf(g->task, sizeof g->task, "%s", (const char*)sqlite3_column_text(st, 0));
    snprintf(g->target, sizeof g->target, "%s", (const char*)sqlite3_column_text(st, 1));
    snprintf(g->device, sizeof g->device, "%s", (const char*)sqlite3_column_text(st, 2));
  }
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(r->db, rc, "listing tasks");
  sqlite3_finalize(st);
  return s;
}

static void bind_group(sqlite3_stmt* st, const group_t* g) {
  sqlite3_bind_text(st, 1, g->task, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, g->target, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, g->device, -1, SQLITE_STATIC);
}

/* What one row of the table says. */
typedef struct group_stats {
  char kernel[128];
  char description[512];
  char device_name[128];
  double weight;     /* NaN: no task description */
  int64_t trials, valid;
  double default_ms; /* median of the records' known default times; NaN: none */
  double best_ms;    /* NaN: no valid record */
} group_stats_t;

/* The median of the records' default_ms (0 is "unknown" and left out): each
 * tuning run measures the default schedule again, and one noisy session
 * should not move the speedup. */
static xc_status_t median_default(xc_tune_db_t* db, const group_t* g, double* out) {
  *out = NAN;
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(db,
                                        "SELECT default_ms FROM records WHERE task = ?1 AND target = ?2 AND"
                                        " device = ?3 AND default_ms > 0",
                                        &st));
  bind_group(st, g);
  double* values = NULL;
  size_t count = 0, capacity = 0;
  int rc = SQLITE_DONE;
  xc_status_t s = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == capacity) {
      size_t grown = capacity ? capacity * 2 : 64;
      double* more = realloc(values, grown * sizeof *more);
      if (!more) {
        s = xc_error_oom();
        break;
      }
      values = more;
      capacity = grown;
    }
    values[count++] = sqlite3_column_double(st, 0);
  }
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "reading default times");
  sqlite3_finalize(st);
  if (!s && count > 0) {
    qsort(values, count, sizeof *values, compare_double);
    *out = count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
  }
  free(values);
  return s;
}

static xc_status_t group_stats(xc_tune_db_t* db, const group_t* g, group_stats_t* out) {
  memset(out, 0, sizeof *out);
  out->weight = NAN;
  out->best_ms = NAN;
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(db,
                                        "SELECT COUNT(*), TOTAL(valid), MIN(CASE WHEN valid THEN time_ms END),"
                                        " MAX(kernel), MAX(device_name) FROM records"
                                        " WHERE task = ?1 AND target = ?2 AND device = ?3",
                                        &st));
  bind_group(st, g);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    out->trials = sqlite3_column_int64(st, 0);
    out->valid = (int64_t)sqlite3_column_double(st, 1);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) out->best_ms = sqlite3_column_double(st, 2);
    const char* kernel = (const char*)sqlite3_column_text(st, 3);
    const char* device_name = (const char*)sqlite3_column_text(st, 4);
    snprintf(out->kernel, sizeof out->kernel, "%s", kernel ? kernel : "");
    snprintf(out->device_name, sizeof out->device_name, "%s", device_name ? device_name : "");
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return xc_tune_db_sql_error(db, rc, "summarizing records");

  XC_RETURN_IF_ERROR(xc_tune_db_prepare(
      db, "SELECT kernel, description, weight FROM tasks WHERE task = ?1 AND target = ?2 AND device = ?3", &st));
  bind_group(st, g);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char* kernel = (const char*)sqlite3_column_text(st, 0);
    const char* description = (const char*)sqlite3_column_text(st, 1);
    /* The task's own description names the kernel people know it by. */
    if (kernel && *kernel) snprintf(out->kernel, sizeof out->kernel, "%s", kernel);
    snprintf(out->description, sizeof out->description, "%s", description ? description : "");
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) out->weight = sqlite3_column_double(st, 2);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return xc_tune_db_sql_error(db, rc, "reading a task");
  return median_default(db, g, &out->default_ms);
}

static xc_status_t write_table(report_t* r) {
  FILE* md = r->md;
  fprintf(md,
          "# Tuning report\n\n"
          "Database: `%s`. Times in milliseconds; default is the median of the default schedule's time over the\n"
          "tuning sessions, best the fastest valid trial, speedup default / best.\n\n"
          "| task | target | device | kernel | description | weight | trials | valid | default ms | best ms | speedup |\n"
          "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n",
          r->db->path);
  for (int i = 0; i < r->group_count; i++) {
    const group_t* g = &r->groups[i];
    group_stats_t gs;
    XC_RETURN_IF_ERROR(group_stats(r->db, g, &gs));
    char device[200];
    if (gs.device_name[0]) snprintf(device, sizeof device, "%s (%.8s)", gs.device_name, g->device);
    else snprintf(device, sizeof device, "%.8s", g->device);
    md_cell(md, g->task);
    md_cell(md, g->target);
    md_cell(md, device);
    md_cell(md, gs.kernel);
    md_cell(md, gs.description);
    md_number(md, "%g", gs.weight);
    fprintf(md, "| %lld | %lld ", (long long)gs.trials, (long long)gs.valid);
    md_number(md, "%.4g", gs.default_ms);
    md_number(md, "%.4g", gs.best_ms);
    md_number(md, "%.2fx", gs.default_ms / gs.best_ms);
    fputs("|\n", md);
  }
  if (r->group_count == 0) fputs("\n(The database holds no task.)\n", md);
  return NULL;
}

/* ---- the plots ------------------------------------------------------------------------ */

/* best_<task8>_<target>, or with the whole task and the device when another
 * row shares the task's first 8 digits and the target (two devices). */
static void best_plot_name(const report_t* r, int index, char* out, size_t size) {
  const group_t* g = &r->groups[index];
  char target[64];
  safe_name(g->target, target, sizeof target);
  bool shared = false;
  for (int j = 0; j < r->group_count && !shared; j++)
    shared = j != index && strncmp(r->groups[j].task, g->task, 8) == 0 && strcmp(r->groups[j].target, g->target) == 0;
  char task[33], device[33];
  safe_name(g->task, task, sizeof task);
  safe_name(g->device, device, sizeof device);
  if (shared) snprintf(out, size, "best_%s_%s_%.8s", task, target, device);
  else snprintf(out, size, "best_%.8s_%s", task, target);
}

/* Writes the best-so-far series of g to f ("trial best" lines); *out_points
 * counts them. Records in run order (run_id, then trial); an invalid trial
 * keeps the previous best; none is drawn before the first valid one. */
static xc_status_t write_best_series(xc_tune_db_t* db, const group_t* g, FILE* f, int* out_points) {
  *out_points = 0;
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(db,
                                        "SELECT valid, time_ms FROM records WHERE task = ?1 AND target = ?2 AND"
                                        " device = ?3 ORDER BY run_id, trial, id",
                                        &st));
  bind_group(st, g);
  double best = INFINITY;
  int64_t trial = 0;
  int rc = SQLITE_DONE;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    trial++;
    if (sqlite3_column_int(st, 0) && sqlite3_column_double(st, 1) < best) best = sqlite3_column_double(st, 1);
    if (isinf(best)) continue;
    fprintf(f, "%lld %.17g\n", (long long)trial, best);
    (*out_points)++;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? NULL : xc_tune_db_sql_error(db, rc, "reading trials");
}

static xc_status_t plot_best(report_t* r, int index) {
  const group_t* g = &r->groups[index];
  char name[200];
  best_plot_name(r, index, name, sizeof name);
  FILE* f = NULL;
  XC_RETURN_IF_ERROR(create_in_plot_dir(r, name, "dat", &f));
  int points = 0;
  xc_status_t s = write_best_series(r->db, g, f, &points);
  xc_status_t closed = close_written(f, r, name);
  if (s) {
    xc_status_free(closed);
    return s;
  }
  XC_RETURN_IF_ERROR(closed);
  if (points == 0) {
    remove_in_plot_dir(r, name, "dat");
    fprintf(r->md, "- %s: no plot, no valid trial of task %.8s on %s\n", name, g->task, g->target);
    return NULL;
  }
  double default_ms;
  XC_RETURN_IF_ERROR(median_default(r->db, g, &default_ms));
  char task[33], target[64];
  safe_name(g->task, task, sizeof task);
  safe_name(g->target, target, sizeof target);
  XC_RETURN_IF_ERROR(create_in_plot_dir(r, name, "gp", &f));
  script_prologue(f, name);
  fprintf(f,
          "set title \"task %.8s on %s: best time so far\"\n"
          "set xlabel \"trial\"\n"
          "set ylabel \"best time (ms)\"\n"
          "set key top right\n",
          task, target);
  /* Steps end at the last trial: the points show where each lies. */
  fprintf(f, "plot \"%s.dat\" using 1:2 with steps lw 2 lc 1 title \"best so far\", \"\" using 1:2 with points pt 7 "
          "ps 0.6 lc 1 notitle", name);
  if (!isnan(default_ms)) fprintf(f, ", %.17g with lines dt 2 lc 2 title \"default schedule\"", default_ms);
  fputc('\n', f);
  XC_RETURN_IF_ERROR(close_written(f, r, name));
  XC_RETURN_IF_ERROR(run_gnuplot(r, name));
  fprintf(r->md, "- %s.png: best-so-far time of task %.8s on %s\n", name, g->task, g->target);
  return NULL;
}

/* Predicted score against measured speedup (default / time) over the valid
 * records of target that were picked by a model and whose session measured
 * the default: how well the model ranks. */
static xc_status_t plot_model(report_t* r, const char* target_name) {
  char target[64], name[100];
  safe_name(target_name, target, sizeof target);
  snprintf(name, sizeof name, "model_%s", target);
  FILE* f = NULL;
  XC_RETURN_IF_ERROR(create_in_plot_dir(r, name, "dat", &f));
  sqlite3_stmt* st = NULL;
  xc_status_t s = xc_tune_db_prepare(r->db,
                                     "SELECT predicted, default_ms / time_ms FROM records WHERE target = ?1 AND"
                                     " valid = 1 AND predicted IS NOT NULL AND default_ms > 0 AND time_ms > 0",
                                     &st);
  int points = 0, rc = SQLITE_DONE;
  if (!s) {
    sqlite3_bind_text(st, 1, target_name, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      fprintf(f, "%.17g %.17g\n", sqlite3_column_double(st, 0), sqlite3_column_double(st, 1));
      points++;
    }
    if (rc != SQLITE_DONE) s = xc_tune_db_sql_error(r->db, rc, "reading predictions");
  }
  sqlite3_finalize(st);
  xc_status_t closed = close_written(f, r, name);
  if (s) {
    xc_status_free(closed);
    return s;
  }
  XC_RETURN_IF_ERROR(closed);
  if (points == 0) {
    remove_in_plot_dir(r, name, "dat");
    fprintf(r->md, "- %s: no plot, no valid trial on %s with a prediction and a default time\n", name, target);
    return NULL;
  }
  XC_RETURN_IF_ERROR(create_in_plot_dir(r, name, "gp", &f));
  script_prologue(f, name);
  fprintf(f,
          "set title \"cost model on %s: predicted score against measured speedup\"\n"
          "set xlabel \"predicted score\"\n"
          "set ylabel \"measured speedup over the default schedule\"\n"
          "set key off\n"
          "plot \"%s.dat\" using 1:2 with points pt 7 ps 0.7\n",
          target, name);
  XC_RETURN_IF_ERROR(close_written(f, r, name));
  XC_RETURN_IF_ERROR(run_gnuplot(r, name));
  fprintf(r->md, "- %s.png: the cost model's predicted score against the measured speedup on %s\n", name, target);
  return NULL;
}

static xc_status_t write_plots(report_t* r) {
  XC_RETURN_IF_ERROR(xc_make_dirs(r->plot_dir));
  fprintf(r->md, "\n## Plots\n\nIn `%s` (each drawn by the .gp script beside it):\n\n", r->plot_dir);
  for (int i = 0; i < r->group_count; i++) XC_RETURN_IF_ERROR(plot_best(r, i));
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(r->db, "SELECT DISTINCT target FROM records ORDER BY target", &st));
  xc_status_t s = NULL;
  int rc = SQLITE_DONE;
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    char* target = strdup((const char*)sqlite3_column_text(st, 0));
    s = target ? plot_model(r, target) : xc_error_oom();
    free(target);
  }
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(r->db, rc, "listing targets");
  sqlite3_finalize(st);
  return s;
}

xc_status_t xc_tune_report(xc_tune_db_t* db, FILE* md, const char* plot_dir) {
  report_t r = {.db = db, .md = md, .plot_dir = plot_dir && *plot_dir ? plot_dir : NULL};
  /* Before anything is written: a report without its plots is not what was
   * asked for. */
  if (r.plot_dir) XC_RETURN_IF_ERROR(find_gnuplot(r.gnuplot, sizeof r.gnuplot));
  /* One read transaction: every number comes from the same snapshot while
   * tuners go on writing. */
  int rc = sqlite3_exec(db->sql, "BEGIN", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return xc_tune_db_sql_error(db, rc, "starting a read");
  xc_status_t s = load_groups(&r);
  if (!s) s = write_table(&r);
  if (!s && r.plot_dir) s = write_plots(&r);
  sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL);
  free(r.groups);
  if (!s && (fflush(md) != 0 || ferror(md))) s = xc_error(XC_IO, "writing the report: %s", strerror(errno));
  return s;
}
