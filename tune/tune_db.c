/* The tuning database (include/xcomp/tune.h, docs/autotune.md "The tuning
 * database"): one SQLite file of measured schedules per (task, target,
 * device), the best of which compiles pick, and its JSON-lines export and
 * import for moving measurements between machines.
 *
 * Several tuners may write one file at once (one per GPU, or a tuner while a
 * compile reads): the journal is WAL, so readers never block the writer; a
 * busy timeout makes a second writer wait instead of failing; and every
 * multi-row write is one BEGIN IMMEDIATE transaction, which takes the write
 * lock up front so two writers never both read and then deadlock upgrading.
 * The file is made 0600 before SQLite opens it (SQLite gives its -wal and
 * -shm files the database's mode): schedules are what the next compile
 * builds. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune_db_internal.h"
#include "xcomp/runtime.h"

#define SCHEMA_VERSION "1"
/* Long enough for a tuner that waits on another's transaction of a few
 * hundred records on a slow disk; a stuck writer still surfaces as an error. */
#define BUSY_TIMEOUT_MS 30000

static const char* const schema_sql =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT INTO meta(key, value) VALUES('schema_version', '" SCHEMA_VERSION "');"
    "CREATE TABLE records(id INTEGER PRIMARY KEY, task TEXT NOT NULL, target TEXT NOT NULL,"
    " device TEXT NOT NULL, device_name TEXT, kernel TEXT, schedule TEXT NOT NULL,"
    " valid INTEGER NOT NULL, time_ms REAL, default_ms REAL, predicted REAL, error TEXT,"
    " xcomp_version TEXT, run_id TEXT, trial INTEGER, created REAL);"
    /* What best and digest scan: one (task, target, device)'s valid rows by time. */
    "CREATE INDEX records_best ON records(task, target, device, valid, time_ms);"
    "CREATE TABLE tasks(task TEXT NOT NULL, target TEXT NOT NULL, device TEXT NOT NULL,"
    " kernel TEXT, description TEXT, weight REAL, PRIMARY KEY(task, target, device));";

/* The columns of a record in the order read_record expects. */
#define RECORD_COLUMNS                                                                        \
  "task, target, device, device_name, kernel, schedule, valid, time_ms, default_ms, predicted," \
  " error, xcomp_version, run_id, trial, created"
/* The schedules of one task on one (target, device), scored: `rel` is the
 * mean, over the schedule's valid records that carry a default time
 * (default_ms > 0; NULL when none do), of time_ms divided by the MEDIAN of
 * the default times of the valid records of the same task, target, device
 * and run_id, each distinct default time counted once. Every record
 * carries the default schedule's time measured with its batch (the lowest
 * over the batch's workers, shared by the batch's records), but a single
 * such measurement can be an outlier (another process loaded the machine
 * for a moment: 123 ms for a default that takes 58): divided by its own
 * default, a mediocre record would look twice as fast as it is and win
 * over a truly faster schedule. The median of the run's defaults is not
 * moved by one noisy one; the tuner ranks its confirmation picks the same
 * way (tuner.c). Records
 * without a run_id ('' or NULL: imports from elsewhere) cannot be told to
 * share a session with any other, so they keep their own default_ms.
 * Relative times compare across measuring sessions and machine states; the
 * mean over repeated measurements (the tuner re-measures its best ones)
 * keeps one lucky run from deciding. Best first: the lowest `rel`, then the
 * fastest, then the oldest (a later equal record is no reason to change
 * what compiles pick). ?1 ?2 ?3 (or, grouped by task, ?1 ?2 for the
 * target and device): parameters of the statements below. SQLite has no
 * MEDIAN: each run's defaults are numbered in order, and the middle one (odd
 * count) or the mean of the middle two (even count) taken. */
#define SCHEDULE_SCORES(where, group)                                                                              \
  "WITH valid_records AS (SELECT * FROM records WHERE " where " AND valid = 1),"                                   \
  " run_defaults AS (SELECT task, target, device, run_id, default_ms,"                                             \
  " ROW_NUMBER() OVER (PARTITION BY task, target, device, run_id ORDER BY default_ms) AS k,"                       \
  " COUNT(*) OVER (PARTITION BY task, target, device, run_id) AS n"                                                \
  " FROM (SELECT DISTINCT task, target, device, run_id, default_ms FROM valid_records"                              \
  " WHERE default_ms > 0 AND run_id <> '')),"                                                                      \
  " run_median AS (SELECT task, target, device, run_id, AVG(default_ms) AS median_ms FROM run_defaults"             \
  " WHERE k IN ((n + 1) / 2, (n + 2) / 2) GROUP BY task, target, device, run_id)"                                 \
  " SELECT task, schedule AS sch,"                                                                                 \
  " AVG(CASE WHEN default_ms > 0 THEN time_ms / COALESCE(median_ms, default_ms) END) AS rel,"                      \
  " MIN(time_ms) AS t, MIN(created) AS c, MIN(id) AS i"                                                            \
  " FROM valid_records LEFT JOIN run_median USING (task, target, device, run_id) GROUP BY " group
#define BEST_ORDER "rel IS NULL, rel, t, c, i"

xc_status_t xc_tune_db_sql_error(xc_tune_db_t* db, int rc, const char* what) {
  xc_code_t code = XC_IO;
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: code = XC_DATA_LOSS; break;
    case SQLITE_NOMEM: code = XC_RESOURCE_EXHAUSTED; break;
    case SQLITE_CANTOPEN: code = XC_NOT_FOUND; break;
    case SQLITE_MISUSE:
    case SQLITE_ERROR: code = XC_INTERNAL; break; /* our SQL is wrong */
    default: break;
  }
  const char* detail = db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc);
  return xc_error(code, "%s: %s: %s", db->path, what, detail);
}

xc_status_t xc_tune_db_prepare(xc_tune_db_t* db, const char* sql, sqlite3_stmt** out) {
  *out = NULL;
  int rc = sqlite3_prepare_v2(db->sql, sql, -1, out, NULL);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(*out);
    *out = NULL;
    return xc_tune_db_sql_error(db, rc, "preparing a statement");
  }
  return NULL;
}

static xc_status_t exec(xc_tune_db_t* db, const char* sql, const char* what) {
  int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? NULL : xc_tune_db_sql_error(db, rc, what);
}

static xc_status_t begin(xc_tune_db_t* db) { return exec(db, "BEGIN IMMEDIATE", "starting a transaction"); }

/* Commits when s is NULL, else rolls back and returns s: the one exit of
 * every transaction. */
static xc_status_t finish(xc_tune_db_t* db, xc_status_t s) {
  if (!s) return exec(db, "COMMIT", "committing");
  sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
  return s;
}

/* Binds text of at most size bytes (a fixed field of a record, which need
 * not be NUL-terminated if a caller filled it to the brim: that is refused
 * before binding, see check_record). */
static void bind_field(sqlite3_stmt* st, int index, const char* text, size_t size) {
  sqlite3_bind_text(st, index, text, (int)strnlen(text, size), SQLITE_TRANSIENT);
}

static void copy_column(sqlite3_stmt* st, int column, char* out, size_t size) {
  const unsigned char* text = sqlite3_column_text(st, column);
  snprintf(out, size, "%s", text ? (const char*)text : "");
}

/* ---- opening -------------------------------------------------------------------------- */

/* Makes the folder of path and the file itself (0600) when missing: SQLite
 * would make the file 0644. */
static xc_status_t create_file(const char* path) {
  const char* slash = strrchr(path, '/');
  if (slash && slash != path) {
    char* dir = strndup(path, (size_t)(slash - path));
    if (!dir) return xc_error_oom();
    xc_status_t s = xc_make_dirs(dir);
    free(dir);
    XC_RETURN_IF_ERROR(s);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return NULL;
    return xc_error(XC_IO, "cannot create the tuning database %s: %s", path, strerror(errno));
  }
  close(fd);
  return NULL;
}

/* Creates the schema in an empty file, or checks the version of an existing
 * one. Inside one write transaction, so two tuners opening a new file at once
 * do not both create it. */
static xc_status_t init_schema(xc_tune_db_t* db) {
  XC_RETURN_IF_ERROR(begin(db));
  sqlite3_stmt* st = NULL;
  xc_status_t s = xc_tune_db_prepare(
      db, "SELECT (SELECT COUNT(*) FROM sqlite_master), (SELECT COUNT(*) FROM sqlite_master WHERE name = 'meta')", &st);
  if (s) return finish(db, s);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return finish(db, xc_tune_db_sql_error(db, rc, "reading the schema"));
  }
  int64_t objects = sqlite3_column_int64(st, 0), has_meta = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  if (objects == 0) return finish(db, exec(db, schema_sql, "creating the schema"));
  if (!has_meta)
    return finish(db, xc_error(XC_UNSUPPORTED, "%s is an SQLite database but not a tuning database (no meta table)",
                               db->path));
  s = xc_tune_db_prepare(db, "SELECT value FROM meta WHERE key = 'schema_version'", &st);
  if (s) return finish(db, s);
  rc = sqlite3_step(st);
  char version[64] = "";
  if (rc == SQLITE_ROW) copy_column(st, 0, version, sizeof version);
  else if (rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "reading the schema version");
  sqlite3_finalize(st);
  if (!s && strcmp(version, SCHEMA_VERSION) != 0)
    s = xc_error(XC_UNSUPPORTED, "%s: tuning database schema version '%s'; this xcomp reads version " SCHEMA_VERSION,
                 db->path, version);
  return finish(db, s);
}

static xc_status_t open_connection(xc_tune_db_t* db) {
  int rc = sqlite3_open_v2(db->path, &db->sql, SQLITE_OPEN_READWRITE, NULL);
  if (rc != SQLITE_OK) return xc_tune_db_sql_error(db, rc, "cannot open the tuning database");
  sqlite3_busy_timeout(db->sql, BUSY_TIMEOUT_MS);
  /* The first statement that reads the file: a file that is not a database
   * fails here (SQLITE_NOTADB). */
  XC_RETURN_IF_ERROR(exec(db, "PRAGMA journal_mode=WAL", "not a tuning database"));
  /* In WAL mode NORMAL loses no committed transaction to a crash of the
   * process, only to one of the machine, and saves an fsync per trial. */
  XC_RETURN_IF_ERROR(exec(db, "PRAGMA synchronous=NORMAL", "setting synchronous"));
  return init_schema(db);
}

xc_status_t xc_tune_db_open(const char* path, bool create, xc_tune_db_t** out) {
  *out = NULL;
  if (!path || !*path) return xc_error(XC_INVALID_ARGUMENT, "no tuning database path");
  struct stat stat_buf;
  if (stat(path, &stat_buf) != 0) {
    if (errno != ENOENT) return xc_error(XC_IO, "tuning database %s: %s", path, strerror(errno));
    if (!create) return xc_error(XC_NOT_FOUND, "tuning database %s not found", path);
    XC_RETURN_IF_ERROR(create_file(path));
  } else if (!S_ISREG(stat_buf.st_mode)) {
    return xc_error(XC_INVALID_ARGUMENT, "tuning database %s is not a regular file", path);
  }
  xc_tune_db_t* db = calloc(1, sizeof *db);
  if (!db) return xc_error_oom();
  db->path = strdup(path);
  if (!db->path) {
    free(db);
    return xc_error_oom();
  }
  xc_status_t s = open_connection(db);
  if (s) {
    xc_tune_db_close(db);
    return s;
  }
  *out = db;
  return NULL;
}

void xc_tune_db_close(xc_tune_db_t* db) {
  if (!db) return;
  sqlite3_close(db->sql); /* NULL is a no-op; every statement is finalized by then */
  free(db->path);
  free(db);
}

xc_status_t xc_tune_db_default_path(char* out, size_t size) {
  char dir[4096];
  XC_RETURN_IF_ERROR(xc_cache_dir(dir, sizeof dir));
  int n = snprintf(out, size, "%s/tuning.db", dir);
  if (n < 0 || (size_t)n >= size)
    return xc_error(XC_OUT_OF_RANGE, "the tuning database path %s/tuning.db is longer than %zu bytes", dir, size);
  return NULL;
}

/* ---- writing -------------------------------------------------------------------------- */

/* A record fit to store: keys set, fields terminated, times that cannot
 * become a bogus best (a valid time of 0 would win every comparison). */
static xc_status_t check_record(const xc_tune_record_t* r) {
  struct {
    const char* name;
    const char* text;
    size_t size;
  } fields[] = {
      {"task", r->task, sizeof r->task},
      {"target", r->target, sizeof r->target},
      {"device", r->device, sizeof r->device},
      {"device_name", r->device_name, sizeof r->device_name},
      {"kernel", r->kernel, sizeof r->kernel},
      {"error", r->error, sizeof r->error},
      {"xcomp_version", r->xcomp_version, sizeof r->xcomp_version},
      {"run_id", r->run_id, sizeof r->run_id},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (strnlen(fields[i].text, fields[i].size) == fields[i].size)
      return xc_error(XC_INVALID_ARGUMENT, "%s is not NUL-terminated", fields[i].name);
  if (!r->task[0] || !r->target[0] || !r->device[0])
    return xc_error(XC_INVALID_ARGUMENT, "task, target and device must be set");
  if (!r->schedule) return xc_error(XC_INVALID_ARGUMENT, "no schedule text");
  if (!isfinite(r->time_ms) || r->time_ms < 0 || !isfinite(r->default_ms) || r->default_ms < 0)
    return xc_error(XC_INVALID_ARGUMENT, "time_ms %g and default_ms %g must be finite and >= 0", r->time_ms,
                    r->default_ms);
  if (r->valid && r->time_ms <= 0) return xc_error(XC_INVALID_ARGUMENT, "a valid record needs time_ms > 0");
  if (isinf(r->predicted)) return xc_error(XC_INVALID_ARGUMENT, "predicted is infinite");
  if (r->trial < 0) return xc_error(XC_INVALID_ARGUMENT, "negative trial %lld", (long long)r->trial);
  return NULL;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define INSERT_RECORD_SQL \
  "INSERT INTO records(" RECORD_COLUMNS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"

static void bind_record(sqlite3_stmt* st, const xc_tune_record_t* r) {
  bind_field(st, 1, r->task, sizeof r->task);
  bind_field(st, 2, r->target, sizeof r->target);
  bind_field(st, 3, r->device, sizeof r->device);
  bind_field(st, 4, r->device_name, sizeof r->device_name);
  bind_field(st, 5, r->kernel, sizeof r->kernel);
  sqlite3_bind_text(st, 6, r->schedule, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 7, r->valid ? 1 : 0);
  sqlite3_bind_double(st, 8, r->time_ms);
  sqlite3_bind_double(st, 9, r->default_ms);
  /* NaN: picked without a model. SQLite would store a NaN as NULL anyway;
   * saying so keeps the meaning out of an accident. */
  if (isnan(r->predicted)) sqlite3_bind_null(st, 10);
  else sqlite3_bind_double(st, 10, r->predicted);
  bind_field(st, 11, r->error, sizeof r->error);
  bind_field(st, 12, r->xcomp_version, sizeof r->xcomp_version);
  bind_field(st, 13, r->run_id, sizeof r->run_id);
  sqlite3_bind_int64(st, 14, r->trial);
  sqlite3_bind_double(st, 15, r->created > 0 ? r->created : now_seconds());
}

static xc_status_t insert_record(xc_tune_db_t* db, sqlite3_stmt* st, const xc_tune_record_t* r) {
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  bind_record(st, r);
  int rc = sqlite3_step(st);
  return rc == SQLITE_DONE ? NULL : xc_tune_db_sql_error(db, rc, "adding a record");
}

xc_status_t xc_tune_db_add(xc_tune_db_t* db, const xc_tune_record_t* records, int n) {
  if (n < 0) return xc_error(XC_INVALID_ARGUMENT, "negative record count %d", n);
  for (int i = 0; i < n; i++)
    XC_RETURN_IF_ERROR(xc_status_annotate(check_record(&records[i]), "%s: record %d", db->path, i));
  if (n == 0) return NULL;
  XC_RETURN_IF_ERROR(begin(db));
  sqlite3_stmt* st = NULL;
  xc_status_t s = xc_tune_db_prepare(db, INSERT_RECORD_SQL, &st);
  for (int i = 0; !s && i < n; i++) s = insert_record(db, st, &records[i]);
  sqlite3_finalize(st);
  return finish(db, s);
}

static xc_status_t put_task(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                            const char* kernel, const char* description, double weight) {
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(
      db, "INSERT OR REPLACE INTO tasks(task, target, device, kernel, description, weight) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
      &st));
  sqlite3_bind_text(st, 1, task, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, device, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, kernel ? kernel : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, description ? description : "", -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 6, weight);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? NULL : xc_tune_db_sql_error(db, rc, "adding a task");
}

xc_status_t xc_tune_db_add_task(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                                const char* kernel, const char* description, double weight) {
  if (!task || !*task || !target || !*target || !device || !*device)
    return xc_error(XC_INVALID_ARGUMENT, "%s: a task needs its hash, target and device", db->path);
  if (!isfinite(weight)) return xc_error(XC_INVALID_ARGUMENT, "%s: task %s: weight %g", db->path, task, weight);
  /* One statement is its own transaction. */
  return put_task(db, task, target, device, kernel, description, weight);
}

/* ---- reading -------------------------------------------------------------------------- */

/* Fills r from a row of RECORD_COLUMNS; r->schedule is strdup'd. */
static xc_status_t read_record(sqlite3_stmt* st, xc_tune_record_t* r) {
  memset(r, 0, sizeof *r);
  copy_column(st, 0, r->task, sizeof r->task);
  copy_column(st, 1, r->target, sizeof r->target);
  copy_column(st, 2, r->device, sizeof r->device);
  copy_column(st, 3, r->device_name, sizeof r->device_name);
  copy_column(st, 4, r->kernel, sizeof r->kernel);
  const unsigned char* schedule = sqlite3_column_text(st, 5);
  r->schedule = strdup(schedule ? (const char*)schedule : "");
  if (!r->schedule) return xc_error_oom();
  r->valid = sqlite3_column_int(st, 6) != 0;
  r->time_ms = sqlite3_column_double(st, 7);
  r->default_ms = sqlite3_column_double(st, 8);
  r->predicted = sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9);
  copy_column(st, 10, r->error, sizeof r->error);
  copy_column(st, 11, r->xcomp_version, sizeof r->xcomp_version);
  copy_column(st, 12, r->run_id, sizeof r->run_id);
  r->trial = sqlite3_column_int64(st, 13);
  r->created = sqlite3_column_double(st, 14);
  return NULL;
}

xc_status_t xc_tune_db_best(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                            xc_tune_record_t* out, bool* out_found) {
  memset(out, 0, sizeof *out);
  *out_found = false;
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(db,
                                        "WITH best AS (" SCHEDULE_SCORES("task = ?1 AND target = ?2 AND device = ?3",
                                                                         "schedule") " ORDER BY " BEST_ORDER
                                        " LIMIT 1) SELECT " RECORD_COLUMNS " FROM records WHERE task = ?1 AND"
                                        " target = ?2 AND device = ?3 AND valid = 1 AND schedule = (SELECT sch FROM"
                                        " best) ORDER BY time_ms, created, id LIMIT 1",
                                        &st));
  sqlite3_bind_text(st, 1, task, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, device, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  xc_status_t s = NULL;
  if (rc == SQLITE_ROW) {
    s = read_record(st, out);
    if (s) {
      free(out->schedule);
      memset(out, 0, sizeof *out);
    } else {
      *out_found = true;
    }
  } else if (rc != SQLITE_DONE) {
    s = xc_tune_db_sql_error(db, rc, "finding the best record");
  }
  sqlite3_finalize(st);
  return s;
}

xc_status_t xc_tune_db_digest(xc_tune_db_t* db, const char* target, const char* device, xc_hash128_t* out) {
  out->lo = out->hi = 0;
  sqlite3_stmt* st = NULL;
  /* The best row of every task (BEST_ORDER, as xc_tune_db_best picks it). */
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(
      db,
      "SELECT task, sch FROM (SELECT task, sch, ROW_NUMBER() OVER (PARTITION BY task ORDER BY " BEST_ORDER
      ") AS rank FROM (" SCHEDULE_SCORES("target = ?1 AND device = ?2", "task, schedule") ")) WHERE rank = 1"
      " ORDER BY task",
      &st));
  sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, device, -1, SQLITE_STATIC);
  char* text = NULL;
  size_t text_size = 0;
  FILE* buffer = open_memstream(&text, &text_size);
  xc_status_t s = buffer ? NULL : xc_error_oom();
  int rc = SQLITE_DONE;
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW)
    fprintf(buffer, "%s\t%s\n", (const char*)sqlite3_column_text(st, 0), (const char*)sqlite3_column_text(st, 1));
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "computing the digest");
  sqlite3_finalize(st);
  if (buffer && fclose(buffer) != 0 && !s) s = xc_error_oom();
  if (!s && text_size > 0) *out = xc_hash128(text, text_size);
  free(text);
  return s;
}

/* A query's records and their schedule texts live in one allocation, the
 * texts right after the array: xc_tune_records_free tells such a block (free
 * it whole) from a record xc_tune_db_best filled in the caller's storage
 * (free its schedule only), the two uses tune.h gives it. */
static xc_status_t pack_records(xc_tune_record_t* rows, int count, xc_tune_record_t** out) {
  size_t bytes = (size_t)count * sizeof *rows;
  for (int i = 0; i < count; i++) bytes += strlen(rows[i].schedule) + 1;
  xc_tune_record_t* block = malloc(bytes);
  if (!block) return xc_error_oom();
  char* text = (char*)(block + count);
  for (int i = 0; i < count; i++) {
    block[i] = rows[i];
    size_t n = strlen(rows[i].schedule) + 1;
    memcpy(text, rows[i].schedule, n);
    block[i].schedule = text;
    text += n;
  }
  *out = block;
  return NULL;
}

static void free_rows(xc_tune_record_t* rows, int count) {
  for (int i = 0; i < count; i++) free(rows[i].schedule);
  free(rows);
}

xc_status_t xc_tune_db_query(xc_tune_db_t* db, const char* task, const char* target, const char* device,
                             xc_tune_record_t** out_records, int* out_count) {
  *out_records = NULL;
  *out_count = 0;
  sqlite3_stmt* st = NULL;
  XC_RETURN_IF_ERROR(xc_tune_db_prepare(db,
                                        "SELECT " RECORD_COLUMNS " FROM records WHERE (?1 IS NULL OR task = ?1)"
                                        " AND (?2 IS NULL OR target = ?2) AND (?3 IS NULL OR device = ?3)"
                                        " ORDER BY created, id",
                                        &st));
  if (task) sqlite3_bind_text(st, 1, task, -1, SQLITE_STATIC);
  if (target) sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
  if (device) sqlite3_bind_text(st, 3, device, -1, SQLITE_STATIC);
  xc_tune_record_t* rows = NULL;
  int count = 0, capacity = 0, rc = SQLITE_DONE;
  xc_status_t s = NULL;
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == capacity) {
      if (capacity > (1 << 28)) {
        s = xc_error(XC_RESOURCE_EXHAUSTED, "%s: more than %d records", db->path, capacity);
        break;
      }
      int grown = capacity ? capacity * 2 : 64;
      xc_tune_record_t* more = realloc(rows, (size_t)grown * sizeof *rows);
      if (!more) {
        s = xc_error_oom();
        break;
      }
      rows = more;
      capacity = grown;
    }
    s = read_record(st, &rows[count]);
    if (!s) count++;
  }
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "querying records");
  sqlite3_finalize(st);
  if (!s && count > 0) s = pack_records(rows, count, out_records);
  free_rows(rows, count);
  if (!s) *out_count = count;
  return s;
}

void xc_tune_records_free(xc_tune_record_t* records, int count) {
  if (!records || count <= 0) {
    free(records);
    return;
  }
  if (records[0].schedule == (char*)(records + count)) {
    free(records); /* a query's block */
    return;
  }
  for (int i = 0; i < count; i++) {
    free(records[i].schedule);
    records[i].schedule = NULL;
  }
}

/* ---- JSON lines ----------------------------------------------------------------------- */

/* A JSON string of text; bytes that are not UTF-8 (a compiler's message in
 * a record's error) become '?' rather than making the record unexportable. */
static json_t* json_text(const char* text) {
  json_t* v = json_string(text);
  if (v) return v;
  char* copy = strdup(text);
  if (!copy) return NULL;
  for (char* c = copy; *c; c++)
    if ((unsigned char)*c >= 0x80) *c = '?';
  v = json_string(copy);
  free(copy);
  return v;
}

/* Adds key: a number, or null for NaN (JSON has no NaN). */
static int set_number(json_t* obj, const char* key, double v) {
  return json_object_set_new(obj, key, isnan(v) ? json_null() : json_real(v));
}

static json_t* record_json(const xc_tune_record_t* r) {
  json_t* o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= json_object_set_new(o, "kind", json_string("record"));
  bad |= json_object_set_new(o, "task", json_text(r->task));
  bad |= json_object_set_new(o, "target", json_text(r->target));
  bad |= json_object_set_new(o, "device", json_text(r->device));
  bad |= json_object_set_new(o, "device_name", json_text(r->device_name));
  bad |= json_object_set_new(o, "kernel", json_text(r->kernel));
  bad |= json_object_set_new(o, "schedule", json_text(r->schedule));
  bad |= json_object_set_new(o, "valid", json_boolean(r->valid));
  bad |= set_number(o, "time_ms", r->time_ms);
  bad |= set_number(o, "default_ms", r->default_ms);
  bad |= set_number(o, "predicted", r->predicted);
  bad |= json_object_set_new(o, "error", json_text(r->error));
  bad |= json_object_set_new(o, "xcomp_version", json_text(r->xcomp_version));
  bad |= json_object_set_new(o, "run_id", json_text(r->run_id));
  bad |= json_object_set_new(o, "trial", json_integer((json_int_t)r->trial));
  bad |= set_number(o, "created", r->created);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* A row of "SELECT task, target, device, kernel, description, weight FROM
 * tasks" as JSON. */
static json_t* task_json(sqlite3_stmt* st) {
  json_t* o = json_object();
  if (!o) return NULL;
  int bad = json_object_set_new(o, "kind", json_string("task"));
  for (int c = 0; c < 5; c++) {
    const char* text = (const char*)sqlite3_column_text(st, c);
    bad |= json_object_set_new(o, sqlite3_column_name(st, c), json_text(text ? text : ""));
  }
  bad |= set_number(o, "weight", sqlite3_column_double(st, 5));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Writes o as one line and releases it. json_dumps escapes newlines inside
 * strings (schedules are several lines), so one object is one line. */
static xc_status_t write_line(json_t* o, FILE* out, const char* what) {
  if (!o) return xc_error(XC_INVALID_ARGUMENT, "cannot express %s in JSON (invalid UTF-8?)", what);
  /* Default real precision is 17 digits: times round-trip exactly. */
  char* text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!text) return xc_error_oom();
  bool ok = fputs(text, out) >= 0 && fputc('\n', out) != EOF;
  free(text);
  return ok ? NULL : xc_error(XC_IO, "writing the JSON lines export: %s", strerror(errno));
}

xc_status_t xc_tune_db_export_jsonl(xc_tune_db_t* db, FILE* out) {
  /* One read transaction: the tasks and records come from the same snapshot
   * even while a tuner writes. */
  XC_RETURN_IF_ERROR(exec(db, "BEGIN", "starting a read"));
  sqlite3_stmt* st = NULL;
  xc_status_t s = xc_tune_db_prepare(
      db, "SELECT task, target, device, kernel, description, weight FROM tasks ORDER BY task, target, device", &st);
  int rc = SQLITE_DONE;
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) s = write_line(task_json(st), out, "a task");
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "exporting tasks");
  sqlite3_finalize(st);
  st = NULL;
  if (!s) s = xc_tune_db_prepare(db, "SELECT " RECORD_COLUMNS " FROM records ORDER BY id", &st);
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    xc_tune_record_t r;
    s = read_record(st, &r);
    if (!s) s = write_line(record_json(&r), out, "a record");
    free(r.schedule);
  }
  if (!s && rc != SQLITE_DONE) s = xc_tune_db_sql_error(db, rc, "exporting records");
  sqlite3_finalize(st);
  sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL); /* ends the read; nothing to lose */
  if (!s && fflush(out) != 0) s = xc_error(XC_IO, "writing the JSON lines export: %s", strerror(errno));
  return s;
}

/* Copies string member key of o into out (size bytes with the NUL); absent
 * is "" unless required. */
static xc_status_t get_string(json_t* o, const char* key, bool required, char* out, size_t size) {
  json_t* v = json_object_get(o, key);
  if (!v) {
    if (required) return xc_error(XC_INVALID_ARGUMENT, "missing \"%s\"", key);
    out[0] = '\0';
    return NULL;
  }
  if (!json_is_string(v)) return xc_error(XC_INVALID_ARGUMENT, "\"%s\" is not a string", key);
  size_t n = json_string_length(v);
  if (n >= size) return xc_error(XC_INVALID_ARGUMENT, "\"%s\" is longer than %zu bytes", key, size - 1);
  if (memchr(json_string_value(v), '\0', n)) return xc_error(XC_INVALID_ARGUMENT, "\"%s\" holds a NUL", key);
  memcpy(out, json_string_value(v), n + 1);
  return NULL;
}

/* A number member; absent is fallback, null is NaN where allowed. */
static xc_status_t get_number(json_t* o, const char* key, bool null_ok, double fallback, double* out) {
  json_t* v = json_object_get(o, key);
  *out = fallback;
  if (!v) return NULL;
  if (json_is_null(v) && null_ok) {
    *out = NAN;
    return NULL;
  }
  if (!json_is_number(v)) return xc_error(XC_INVALID_ARGUMENT, "\"%s\" is not a number", key);
  *out = json_number_value(v);
  return NULL;
}

/* A record from its JSON object: r->schedule points into o (valid while o is). */
static xc_status_t parse_record(json_t* o, xc_tune_record_t* r) {
  memset(r, 0, sizeof *r);
  XC_RETURN_IF_ERROR(get_string(o, "task", true, r->task, sizeof r->task));
  XC_RETURN_IF_ERROR(get_string(o, "target", true, r->target, sizeof r->target));
  XC_RETURN_IF_ERROR(get_string(o, "device", true, r->device, sizeof r->device));
  XC_RETURN_IF_ERROR(get_string(o, "device_name", false, r->device_name, sizeof r->device_name));
  XC_RETURN_IF_ERROR(get_string(o, "kernel", false, r->kernel, sizeof r->kernel));
  XC_RETURN_IF_ERROR(get_string(o, "error", false, r->error, sizeof r->error));
  XC_RETURN_IF_ERROR(get_string(o, "xcomp_version", false, r->xcomp_version, sizeof r->xcomp_version));
  XC_RETURN_IF_ERROR(get_string(o, "run_id", true, r->run_id, sizeof r->run_id));
  json_t* schedule = json_object_get(o, "schedule");
  if (!json_is_string(schedule)) return xc_error(XC_INVALID_ARGUMENT, "\"schedule\" missing or not a string");
  if (strlen(json_string_value(schedule)) != json_string_length(schedule))
    return xc_error(XC_INVALID_ARGUMENT, "\"schedule\" holds a NUL");
  r->schedule = (char*)json_string_value(schedule);
  json_t* valid = json_object_get(o, "valid");
  if (!json_is_boolean(valid)) return xc_error(XC_INVALID_ARGUMENT, "\"valid\" missing or not true/false");
  r->valid = json_is_true(valid);
  json_t* trial = json_object_get(o, "trial");
  if (!json_is_integer(trial)) return xc_error(XC_INVALID_ARGUMENT, "\"trial\" missing or not an integer");
  r->trial = (int64_t)json_integer_value(trial);
  XC_RETURN_IF_ERROR(get_number(o, "time_ms", false, 0, &r->time_ms));
  XC_RETURN_IF_ERROR(get_number(o, "default_ms", false, 0, &r->default_ms));
  XC_RETURN_IF_ERROR(get_number(o, "predicted", true, NAN, &r->predicted));
  XC_RETURN_IF_ERROR(get_number(o, "created", false, 0, &r->created));
  /* An absent time would be stamped with the import's; keep a record's age. */
  if (r->created <= 0) return xc_error(XC_INVALID_ARGUMENT, "\"created\" missing or not positive");
  return check_record(r);
}

static xc_status_t import_task(xc_tune_db_t* db, json_t* o) {
  char task[33], target[64], device[33], kernel[128];
  XC_RETURN_IF_ERROR(get_string(o, "task", true, task, sizeof task));
  XC_RETURN_IF_ERROR(get_string(o, "target", true, target, sizeof target));
  XC_RETURN_IF_ERROR(get_string(o, "device", true, device, sizeof device));
  XC_RETURN_IF_ERROR(get_string(o, "kernel", false, kernel, sizeof kernel));
  json_t* description = json_object_get(o, "description");
  if (description && !json_is_string(description))
    return xc_error(XC_INVALID_ARGUMENT, "\"description\" is not a string");
  double weight;
  XC_RETURN_IF_ERROR(get_number(o, "weight", false, 1.0, &weight));
  if (!task[0] || !target[0] || !device[0]) return xc_error(XC_INVALID_ARGUMENT, "task, target and device must be set");
  if (!isfinite(weight)) return xc_error(XC_INVALID_ARGUMENT, "\"weight\" is not finite");
  return put_task(db, task, target, device, kernel, description ? json_string_value(description) : "", weight);
}

/* Adds r unless the same measurement is already there (an earlier import of
 * the same file, or a line repeated in it). */
static xc_status_t import_record(xc_tune_db_t* db, sqlite3_stmt* find, sqlite3_stmt* insert,
                                 const xc_tune_record_t* r, int* added) {
  sqlite3_reset(find);
  sqlite3_bind_text(find, 1, r->run_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(find, 2, r->task, -1, SQLITE_STATIC);
  sqlite3_bind_int64(find, 3, r->trial);
  sqlite3_bind_text(find, 4, r->schedule, -1, SQLITE_STATIC);
  sqlite3_bind_text(find, 5, r->target, -1, SQLITE_STATIC);
  sqlite3_bind_text(find, 6, r->device, -1, SQLITE_STATIC);
  int rc = sqlite3_step(find);
  sqlite3_reset(find);
  if (rc == SQLITE_ROW) return NULL;
  if (rc != SQLITE_DONE) return xc_tune_db_sql_error(db, rc, "looking for a duplicate");
  XC_RETURN_IF_ERROR(insert_record(db, insert, r));
  (*added)++;
  return NULL;
}

static xc_status_t import_line(xc_tune_db_t* db, const char* line, sqlite3_stmt* find, sqlite3_stmt* insert,
                               int* added) {
  json_error_t error;
  json_t* o = json_loads(line, JSON_REJECT_DUPLICATES, &error);
  if (!o) return xc_error(XC_INVALID_ARGUMENT, "column %d: %s", error.column, error.text);
  xc_status_t s = NULL;
  const char* kind = json_string_value(json_object_get(o, "kind"));
  if (!json_is_object(o)) {
    s = xc_error(XC_INVALID_ARGUMENT, "not a JSON object");
  } else if (kind && strcmp(kind, "record") == 0) {
    xc_tune_record_t r;
    s = parse_record(o, &r);
    if (!s) s = import_record(db, find, insert, &r, added);
  } else if (kind && strcmp(kind, "task") == 0) {
    s = import_task(db, o);
  } else {
    s = xc_error(XC_INVALID_ARGUMENT, "\"kind\" is not \"record\" or \"task\"");
  }
  json_decref(o);
  return s;
}

static bool blank(const char* line) {
  for (; *line; line++)
    if (!strchr(" \t\r\n", *line)) return false;
  return true;
}

xc_status_t xc_tune_db_import_jsonl(xc_tune_db_t* db, const char* path, int* out_added) {
  *out_added = 0;
  FILE* in = fopen(path, "r");
  if (!in) return xc_error(errno == ENOENT ? XC_NOT_FOUND : XC_IO, "cannot read %s: %s", path, strerror(errno));
  /* One transaction for the whole file: a bad line leaves nothing of it. */
  xc_status_t s = begin(db);
  sqlite3_stmt *find = NULL, *insert = NULL;
  if (!s)
    s = xc_tune_db_prepare(db,
                           "SELECT 1 FROM records WHERE run_id = ?1 AND task = ?2 AND trial = ?3 AND schedule = ?4"
                           " AND target = ?5 AND device = ?6 LIMIT 1",
                           &find);
  if (!s) s = xc_tune_db_prepare(db, INSERT_RECORD_SQL, &insert);
  char* line = NULL;
  size_t capacity = 0;
  int added = 0;
  for (long number = 1; !s; number++) {
    errno = 0;
    if (getline(&line, &capacity, in) < 0) {
      if (ferror(in)) s = xc_error(XC_IO, "reading %s: %s", path, strerror(errno));
      break;
    }
    if (blank(line)) continue;
    s = xc_status_annotate(import_line(db, line, find, insert, &added), "%s:%ld", path, number);
  }
  free(line);
  fclose(in);
  sqlite3_finalize(find);
  sqlite3_finalize(insert);
  /* A failed BEGIN leaves no transaction; the ROLLBACK finish sends is then
   * a harmless no-op. */
  XC_RETURN_IF_ERROR(finish(db, s));
  *out_added = added;
  return NULL;
}
