/* The tuning database (tune/tune_db.c) and its report (tune/tune_report.c):
 * the best record is the fastest valid one (an invalid one never, ties keep
 * the oldest) and the digest follows it (a faster record changes it, a slower
 * one does not); times are taken relative to the median of the run's default
 * times, so one noisy default measurement does not pick the schedule;
 * queries filter; predicted NaN round-trips; a JSON-lines export imported
 * into a fresh file gives the same best and digest, a second import adds
 * nothing, and a malformed line adds nothing of its file; a file that is not
 * a tuning database, or one of another schema version, is refused naming it;
 * four processes adding at once lose no record; files are 0600; the report
 * has a row per task and, with gnuplot, PNG plots. */
#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/tune.h"

static const char* const task_a = "0123456789abcdef0123456789abcdef";
static const char* const task_b = "fedcba9876543210fedcba9876543210";
static const char* const device = "00112233445566778899aabbccddeeff";

static char tmp_dir[4096];

static void path_of(const char* name, char* out, size_t size) { snprintf(out, size, "%s/%s", tmp_dir, name); }

static void remove_tree(const char* path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR* d = opendir(path);
    struct dirent* e;
    while (d && (e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char child[4400];
      snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      remove_tree(child);
    }
    if (d) closedir(d);
  }
  remove(path);
}

static xc_tune_record_t record(const char* task, const char* target, const char* schedule, bool valid,
                               double time_ms, const char* run_id, int64_t trial) {
  xc_tune_record_t r;
  memset(&r, 0, sizeof r);
  snprintf(r.task, sizeof r.task, "%s", task);
  snprintf(r.target, sizeof r.target, "%s", target);
  snprintf(r.device, sizeof r.device, "%s", device);
  snprintf(r.device_name, sizeof r.device_name, "Test Device");
  snprintf(r.kernel, sizeof r.kernel, "matmul_%s", target);
  r.schedule = (char*)schedule;
  r.valid = valid;
  r.time_ms = time_ms;
  r.default_ms = 3.0;
  r.predicted = NAN;
  if (!valid) snprintf(r.error, sizeof r.error, "wrong result");
  snprintf(r.xcomp_version, sizeof r.xcomp_version, "0.1.0");
  snprintf(r.run_id, sizeof r.run_id, "%s", run_id);
  r.trial = trial;
  static double clock = 1.7e9;
  r.created = (clock += 1.0); /* distinct and increasing: "oldest" is well defined */
  return r;
}

static int count_records(xc_tune_db_t* db) {
  xc_tune_record_t* rs = NULL;
  int n = -1;
  CHECK_OK(xc_tune_db_query(db, NULL, NULL, NULL, &rs, &n));
  xc_tune_records_free(rs, n);
  return n;
}

static bool same_hash(xc_hash128_t a, xc_hash128_t b) { return a.lo == b.lo && a.hi == b.hi; }

static bool has_mode_0600(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && (st.st_mode & 0777) == 0600;
}

static void check_best(xc_tune_db_t* db, const char* task, const char* schedule, double time_ms) {
  xc_tune_record_t best;
  bool found = false;
  CHECK_OK(xc_tune_db_best(db, task, "cpu", device, &best, &found));
  CHECK(found);
  if (!found) return;
  CHECK_STR(best.schedule, schedule);
  CHECK_NEAR(best.time_ms, time_ms, 0);
  CHECK(best.valid);
  xc_tune_records_free(&best, 1);
}

static xc_hash128_t digest(xc_tune_db_t* db) {
  xc_hash128_t h = {0, 0};
  CHECK_OK(xc_tune_db_digest(db, "cpu", device, &h));
  return h;
}

/* Fills db with the records the later checks expect. */
static void test_best_and_digest(xc_tune_db_t* db) {
  xc_hash128_t empty = digest(db);
  CHECK(empty.lo == 0 && empty.hi == 0);
  xc_tune_record_t rs[] = {
      record(task_a, "cpu", "schedule a1 { tile = 32 }", true, 2.0, "run1", 0),
      record(task_a, "cpu", "schedule a2 { tile = 64 }", false, 0, "run1", 1),
      record(task_a, "cpu", "schedule a3 { tile = 16 }", true, 1.5, "run1", 2),
      record(task_b, "cpu", "schedule b1 {\n  tile = 8\n}", true, 3.0, "run1", 0),
      record(task_a, "spirv", "schedule s1 { tile = 4 }", true, 0.25, "run2", 0),
  };
  rs[2].predicted = 0.75;
  CHECK_OK(xc_tune_db_add(db, rs, 5));
  check_best(db, task_a, "schedule a3 { tile = 16 }", 1.5);
  check_best(db, task_b, "schedule b1 {\n  tile = 8\n}", 3.0);
  xc_hash128_t d1 = digest(db);
  CHECK(!same_hash(d1, empty));

  /* Slower, invalid (however fast it claims to be), or as fast but newer:
   * none changes the best or the digest. */
  xc_tune_record_t no_change[] = {
      record(task_a, "cpu", "schedule a4 { tile = 8 }", true, 1.8, "run1", 3),
      record(task_a, "cpu", "schedule a5 { tile = 2 }", false, 0.01, "run1", 4),
      record(task_a, "cpu", "schedule a6 { tile = 1 }", true, 1.5, "run1", 5),
  };
  CHECK_OK(xc_tune_db_add(db, no_change, 3));
  check_best(db, task_a, "schedule a3 { tile = 16 }", 1.5);
  CHECK(same_hash(digest(db), d1));

  xc_tune_record_t faster = record(task_a, "cpu", "schedule a7 { tile = 128 }", true, 1.0, "run1", 6);
  faster.predicted = 1.25;
  CHECK_OK(xc_tune_db_add(db, &faster, 1));
  check_best(db, task_a, "schedule a7 { tile = 128 }", 1.0);
  CHECK(!same_hash(digest(db), d1));

  xc_tune_record_t best;
  bool found = true;
  CHECK_OK(xc_tune_db_best(db, "ffffffffffffffffffffffffffffffff", "cpu", device, &best, &found));
  CHECK(!found);
  xc_hash128_t other;
  CHECK_OK(xc_tune_db_digest(db, "opencl", device, &other));
  CHECK(other.lo == 0 && other.hi == 0);

  /* A bad record in a batch adds nothing of it. */
  xc_tune_record_t bad[] = {
      record(task_b, "cpu", "schedule ok { }", true, 0.5, "run3", 0),
      record(task_b, "cpu", "schedule zero { }", true, 0, "run3", 1),
  };
  CHECK_ERR(xc_tune_db_add(db, bad, 2), "record 1");
  CHECK_EQ_INT(count_records(db), 9);
  CHECK_OK(xc_tune_db_add_task(db, task_a, "cpu", device, "matmul_64", "matmul 64x64x64 f32", 2.0));
  CHECK_OK(xc_tune_db_add_task(db, task_a, "cpu", device, "matmul_64", "matmul 64x64x64 f32 | fused", 3.0));
}

/* A record of `schedule` measured at time_ms by a worker whose default
 * schedule took default_ms just before (one task, one run). */
static xc_tune_record_t measured(const char* task, const char* schedule, double time_ms, double default_ms,
                                 const char* run_id, int64_t trial) {
  xc_tune_record_t r = record(task, "cpu", schedule, true, time_ms, run_id, trial);
  r.default_ms = default_ms;
  return r;
}

/* One noisy default measurement does not pick the schedule: a record's time
 * is taken relative to the median of its run's default times, not to the
 * default its own batch measured. The run (7 distinct defaults: 123.4 58.9
 * 55.1 56.0 57.3 59.6 56.2, median 57.3):
 *   A        57.8 (its batch's default 123.4: the machine was loaded)
 *   B        40.8 (default 58.9), 44.0 (default 55.1)
 *   default  56.0, 55.1, 57.3, 59.6, 56.2 (each its own default)
 * By the median: A 57.8 / 57.3 = 1.009, B (40.8 + 44.0) / 2 / 57.3 =
 * 0.740, the default 0.986: B, truly the fastest, is the best. By the old
 * per-record rule, time_ms / default_ms: A 57.8 / 123.4 = 0.468, B (0.693 +
 * 0.799) / 2 = 0.746, the default 1.0: A would win, and a compile would emit
 * a schedule slower than the default (the 89 ms vs 57 ms seen for real).
 * Records without a run_id keep their own default: X 30 / 60 = 0.5 beats
 * Y 20 / 20 = 1.0 (by the median of 60 and 20, Y would win). The digest
 * follows the same ranking. */
static void test_noisy_default(void) {
  static const char* const task_c = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0";
  static const char* const task_d = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0";
  static const char* const sched_a = "schedule A { tile = 16 }";
  static const char* const sched_b = "schedule B { tile = 64 }";
  static const char* const sched_default = "schedule default { }";
  char path[4200];
  path_of("noisy.db", path, sizeof path);
  xc_tune_db_t* db = NULL;
  CHECK_OK(xc_tune_db_open(path, true, &db));
  if (!db) return;
  xc_tune_record_t rs[] = {
      measured(task_c, sched_default, 56.0, 56.0, "run-noisy", 0),
      measured(task_c, sched_a, 57.8, 123.4, "run-noisy", 1),
      measured(task_c, sched_b, 40.8, 58.9, "run-noisy", 2),
      measured(task_c, sched_default, 57.3, 57.3, "run-noisy", 3),
      measured(task_c, sched_default, 59.6, 59.6, "run-noisy", 4),
      measured(task_c, sched_default, 56.2, 56.2, "run-noisy", 5),
      measured(task_c, sched_b, 44.0, 55.1, "run-noisy", 6),
      measured(task_c, sched_default, 55.1, 55.1, "run-noisy", 7),
      measured(task_d, "schedule X { }", 30.0, 60.0, "", 0),
      measured(task_d, "schedule Y { }", 20.0, 20.0, "", 1),
  };
  CHECK_OK(xc_tune_db_add(db, rs, (int)(sizeof rs / sizeof rs[0])));
  check_best(db, task_c, sched_b, 40.8);
  check_best(db, task_d, "schedule X { }", 30.0);
  /* Two runs, an even and an odd count of distinct defaults (one outlier,
   * 50, in the first): medians 10.75 and 21. Q scores (7.5 / 10.75 + 19.2 /
   * 21) / 2 = 0.806, P (9.5 / 10.75 + 17 / 21) / 2 = 0.847: Q. Divided by
   * the runs' means (20.375, 21) P would win (0.638 against 0.641), by
   * either middle element alone Q still does. */
  static const char* const task_e = "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0";
  xc_tune_record_t two[] = {
      measured(task_e, sched_default, 10.0, 10.0, "run-1", 0), measured(task_e, sched_default, 10.5, 10.5, "run-1", 1),
      measured(task_e, sched_default, 11.0, 11.0, "run-1", 2), measured(task_e, "schedule P { }", 9.5, 10.0, "run-1", 3),
      measured(task_e, "schedule Q { }", 7.5, 50.0, "run-1", 4), measured(task_e, sched_default, 20.0, 20.0, "run-2", 0),
      measured(task_e, sched_default, 21.0, 21.0, "run-2", 1), measured(task_e, "schedule P { }", 17.0, 21.0, "run-2", 2),
      measured(task_e, "schedule Q { }", 19.2, 22.0, "run-2", 3),
  };
  CHECK_OK(xc_tune_db_add(db, two, (int)(sizeof two / sizeof two[0])));
  check_best(db, task_e, "schedule Q { }", 7.5);
  /* task_c sorts before task_d, task_d before task_e. */
  const char text[] = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0\tschedule B { tile = 64 }\n"
                      "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0\tschedule X { }\n"
                      "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0\tschedule Q { }\n";
  CHECK(same_hash(digest(db), xc_hash128(text, sizeof text - 1)));
  xc_tune_db_close(db);
}

static void test_query(xc_tune_db_t* db) {
  xc_tune_record_t* rs = NULL;
  int n = 0;
  CHECK_EQ_INT(count_records(db), 9);
  CHECK_OK(xc_tune_db_query(db, task_a, NULL, NULL, &rs, &n));
  CHECK_EQ_INT(n, 8);
  xc_tune_records_free(rs, n);
  CHECK_OK(xc_tune_db_query(db, NULL, "spirv", NULL, &rs, &n));
  CHECK_EQ_INT(n, 1);
  xc_tune_records_free(rs, n);
  CHECK_OK(xc_tune_db_query(db, task_b, "cpu", device, &rs, &n));
  CHECK_EQ_INT(n, 1);
  xc_tune_records_free(rs, n);
  CHECK_OK(xc_tune_db_query(db, task_b, "cpu", "0000", &rs, &n));
  CHECK_EQ_INT(n, 0);
  xc_tune_records_free(rs, n);

  /* Oldest first, every field back as written. */
  CHECK_OK(xc_tune_db_query(db, task_a, "cpu", device, &rs, &n));
  CHECK_EQ_INT(n, 7);
  if (n == 7) {
    CHECK_STR(rs[0].schedule, "schedule a1 { tile = 32 }");
    CHECK(isnan(rs[0].predicted));
    CHECK_STR(rs[1].error, "wrong result");
    CHECK(!rs[1].valid);
    CHECK_STR(rs[2].schedule, "schedule a3 { tile = 16 }");
    CHECK_NEAR(rs[2].predicted, 0.75, 0);
    CHECK_STR(rs[2].device_name, "Test Device");
    CHECK_STR(rs[2].kernel, "matmul_cpu");
    CHECK_STR(rs[2].run_id, "run1");
    CHECK_STR(rs[2].xcomp_version, "0.1.0");
    CHECK_EQ_INT(rs[2].trial, 2);
    CHECK_NEAR(rs[2].default_ms, 3.0, 0);
    CHECK(rs[2].created < rs[3].created);
    CHECK_STR(rs[6].schedule, "schedule a7 { tile = 128 }");
  }
  xc_tune_records_free(rs, n);
}

static void test_export_import(xc_tune_db_t* db) {
  char export_path[4200], fresh_path[4200];
  path_of("export.jsonl", export_path, sizeof export_path);
  path_of("imported.db", fresh_path, sizeof fresh_path);
  FILE* f = fopen(export_path, "w");
  CHECK(f != NULL);
  if (!f) return;
  CHECK_OK(xc_tune_db_export_jsonl(db, f));
  fclose(f);

  xc_tune_db_t* fresh = NULL;
  CHECK_OK(xc_tune_db_open(fresh_path, true, &fresh));
  if (!fresh) return;
  int added = -1;
  CHECK_OK(xc_tune_db_import_jsonl(fresh, export_path, &added));
  CHECK_EQ_INT(added, 9);
  CHECK(same_hash(digest(fresh), digest(db)));
  xc_hash128_t a, b;
  CHECK_OK(xc_tune_db_digest(fresh, "spirv", device, &a));
  CHECK_OK(xc_tune_db_digest(db, "spirv", device, &b));
  CHECK(same_hash(a, b));
  check_best(fresh, task_a, "schedule a7 { tile = 128 }", 1.0);
  check_best(fresh, task_b, "schedule b1 {\n  tile = 8\n}", 3.0);
  xc_tune_record_t* rs = NULL;
  int n = 0;
  CHECK_OK(xc_tune_db_query(fresh, task_a, "cpu", device, &rs, &n));
  if (n == 7) {
    CHECK(isnan(rs[0].predicted));
    CHECK_NEAR(rs[2].predicted, 0.75, 0);
  }
  xc_tune_records_free(rs, n);

  CHECK_OK(xc_tune_db_import_jsonl(fresh, export_path, &added));
  CHECK_EQ_INT(added, 0);
  CHECK_EQ_INT(count_records(fresh), 9);
  xc_tune_db_close(fresh);
}

static void write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void test_malformed_import(void) {
  char db_path[4200], bad_path[4200], expected[4300];
  path_of("malformed.db", db_path, sizeof db_path);
  path_of("malformed.jsonl", bad_path, sizeof bad_path);
  xc_tune_db_t* db = NULL;
  CHECK_OK(xc_tune_db_open(db_path, true, &db));
  if (!db) return;
  const char* good =
      "{\"kind\":\"record\",\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"cpu\","
      "\"device\":\"00112233445566778899aabbccddeeff\",\"schedule\":\"schedule x { }\",\"valid\":true,"
      "\"time_ms\":1.0,\"default_ms\":2.0,\"predicted\":null,\"run_id\":\"r\",\"trial\":0,\"created\":1.7e9}\n";
  char text[2048];
  /* A line cut short, after a blank line (skipped) and a repeated good one. */
  snprintf(text, sizeof text, "%s\n%s{\"kind\":\"record\",\"task\":", good, good);
  write_text(bad_path, text);
  int added = -1;
  snprintf(expected, sizeof expected, "%s:4:", bad_path);
  CHECK_ERR(xc_tune_db_import_jsonl(db, bad_path, &added), expected);
  CHECK_EQ_INT(added, 0);
  CHECK_EQ_INT(count_records(db), 0);
  /* Well-formed JSON missing a field. */
  snprintf(text, sizeof text, "%s{\"kind\":\"record\",\"target\":\"cpu\"}\n", good);
  write_text(bad_path, text);
  snprintf(expected, sizeof expected, "%s:2", bad_path);
  CHECK_ERR(xc_tune_db_import_jsonl(db, bad_path, &added), expected);
  CHECK_EQ_INT(count_records(db), 0);
  /* The good line alone goes in. */
  write_text(bad_path, good);
  CHECK_OK(xc_tune_db_import_jsonl(db, bad_path, &added));
  CHECK_EQ_INT(added, 1);
  xc_tune_db_close(db);
}

static void test_refused_files(void) {
  char path[4200];
  xc_tune_db_t* db = NULL;
  path_of("missing.db", path, sizeof path);
  xc_status_t s = xc_tune_db_open(path, false, &db);
  CHECK(xc_status_code(s) == XC_NOT_FOUND);
  CHECK(s && strstr(xc_status_message(s), path));
  xc_status_free(s);
  CHECK(access(path, F_OK) != 0);

  path_of("not_a_db.db", path, sizeof path);
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    for (int i = 0; i < 200; i++) fputs("these are not the bytes of an SQLite database\n", f);
    fclose(f);
  }
  s = xc_tune_db_open(path, true, &db);
  CHECK(db == NULL);
  CHECK(xc_status_code(s) == XC_DATA_LOSS);
  CHECK(s && strstr(xc_status_message(s), path));
  xc_status_free(s);

  /* A tuning database of another schema version. */
  path_of("version2.db", path, sizeof path);
  CHECK_OK(xc_tune_db_open(path, true, &db));
  xc_tune_db_close(db);
  db = NULL;
  sqlite3* raw = NULL;
  CHECK(sqlite3_open(path, &raw) == SQLITE_OK);
  CHECK(sqlite3_exec(raw, "UPDATE meta SET value = '2' WHERE key = 'schema_version'", NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_close(raw);
  s = xc_tune_db_open(path, true, &db);
  CHECK(db == NULL);
  CHECK(xc_status_code(s) == XC_UNSUPPORTED);
  CHECK(s && strstr(xc_status_message(s), path) && strstr(xc_status_message(s), "'2'"));
  xc_status_free(s);

  /* Another application's SQLite file. */
  path_of("foreign.db", path, sizeof path);
  CHECK(sqlite3_open(path, &raw) == SQLITE_OK);
  CHECK(sqlite3_exec(raw, "CREATE TABLE things(x)", NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_close(raw);
  s = xc_tune_db_open(path, false, &db);
  CHECK(xc_status_code(s) == XC_UNSUPPORTED);
  CHECK(s && strstr(xc_status_message(s), path));
  xc_status_free(s);
}

/* Four processes, 50 one-record transactions each, on one file at once. */
static void test_concurrent_writers(void) {
  char path[4200];
  path_of("concurrent.db", path, sizeof path);
  xc_tune_db_t* db = NULL;
  CHECK_OK(xc_tune_db_open(path, true, &db));
  xc_tune_db_close(db);
  fflush(NULL);
  pid_t children[4];
  for (int c = 0; c < 4; c++) {
    children[c] = fork();
    if (children[c] == 0) {
      xc_tune_db_t* mine = NULL;
      xc_status_t s = xc_tune_db_open(path, false, &mine);
      char run[16];
      snprintf(run, sizeof run, "child%d", c);
      for (int i = 0; !s && i < 50; i++) {
        xc_tune_record_t r = record(task_a, "cpu", "schedule c { }", true, 1.0 + i, run, i);
        s = xc_tune_db_add(mine, &r, 1);
      }
      if (s) fprintf(stderr, "child %d: %s\n", c, xc_status_message(s));
      int failed = s != NULL;
      xc_status_free(s);
      xc_tune_db_close(mine);
      _exit(failed);
    }
    CHECK(children[c] > 0);
  }
  for (int c = 0; c < 4; c++) {
    int status = -1;
    if (children[c] > 0) CHECK(waitpid(children[c], &status, 0) == children[c]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK_OK(xc_tune_db_open(path, false, &db));
  if (db) CHECK_EQ_INT(count_records(db), 200);
  xc_tune_db_close(db);
}

static bool is_png(const char* path) {
  unsigned char magic[8] = {0};
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(magic, 1, sizeof magic, f);
  fclose(f);
  return n == 8 && memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0;
}

static void test_report(xc_tune_db_t* db) {
  char* md = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&md, &size);
  CHECK_OK(xc_tune_report(db, f, NULL));
  fclose(f);
  CHECK(md && strstr(md, task_a) && strstr(md, task_b));
  CHECK(md && strstr(md, "matmul 64x64x64 f32 \\| fused")); /* the last description, escaped */
  /* task_a on cpu: 7 trials, 5 valid, default 3 ms, best 1 ms. */
  CHECK(md && strstr(md, "| 3 | 7 | 5 | 3 | 1 | 3.00x |"));
  free(md);

  char plots[4200];
  path_of("plots/sub", plots, sizeof plots);
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    md = NULL;
    f = open_memstream(&md, &size);
    CHECK_OK(xc_tune_report(db, f, plots));
    fclose(f);
    const char* names[] = {"best_01234567_cpu.png", "best_01234567_spirv.png", "best_fedcba98_cpu.png",
                           "model_cpu.png"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char png[4400];
      snprintf(png, sizeof png, "%s/%s", plots, names[i]);
      CHECK(is_png(png));
      CHECK(md && strstr(md, names[i]));
      if (!is_png(png)) fprintf(stderr, "missing plot %s\n", png);
    }
    free(md);
  } else {
    fprintf(stderr, "gnuplot is not installed: report plots not checked\n");
  }

  /* No gnuplot on PATH: an error that says what to install, before any
   * markdown is written. */
  const char* saved = getenv("PATH");
  char* saved_path = saved ? strdup(saved) : NULL;
  setenv("PATH", tmp_dir, 1);
  md = NULL;
  f = open_memstream(&md, &size);
  xc_status_t s = xc_tune_report(db, f, plots);
  fclose(f);
  CHECK(xc_status_code(s) == XC_UNAVAILABLE);
  CHECK(s && strstr(xc_status_message(s), "gnuplot-nox"));
  CHECK(size == 0);
  xc_status_free(s);
  free(md);
  if (saved_path) setenv("PATH", saved_path, 1);
  free(saved_path);
}

static void test_default_path(void) {
  const char* saved = getenv("XCOMP_CACHE_DIR");
  char* saved_dir = saved ? strdup(saved) : NULL;
  setenv("XCOMP_CACHE_DIR", "/some/cache", 1);
  char path[4096];
  CHECK_OK(xc_tune_db_default_path(path, sizeof path));
  CHECK_STR(path, "/some/cache/tuning.db");
  char tiny[8];
  CHECK_ERR(xc_tune_db_default_path(tiny, sizeof tiny), "longer");
  if (saved_dir) setenv("XCOMP_CACHE_DIR", saved_dir, 1);
  else unsetenv("XCOMP_CACHE_DIR");
  free(saved_dir);
}

int main(void) {
  const char* base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/xcomp_tune_db_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmp_dir)) {
    perror("mkdtemp");
    return 1;
  }
  char path[4200];
  path_of("cache/tuning.db", path, sizeof path); /* the folder is made too */
  xc_tune_db_t* db = NULL;
  CHECK_OK(xc_tune_db_open(path, true, &db));
  if (db) {
    CHECK(has_mode_0600(path));
    test_best_and_digest(db);
    test_query(db);
    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(access(wal, F_OK) != 0 || has_mode_0600(wal));
    test_export_import(db);
    test_report(db);
    xc_tune_db_close(db);
  }
  test_noisy_default();
  test_malformed_import();
  test_refused_files();
  test_concurrent_writers();
  test_default_path();
  remove_tree(tmp_dir);
  return xc_test_summary("test_tune_db");
}
