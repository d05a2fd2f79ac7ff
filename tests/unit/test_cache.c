/* The compile cache through a driver session (xc_session_compile_bytes): a miss compiles and stores,
 * a second compile of the same model is a hit that neither loads the model,
 * lowers it nor runs the C compiler (counters, not wall-clock time); a
 * corrupt or truncated entry is a miss that is replaced, and so is a valid
 * module stored under another key; entries are 0600 in a 0700 folder; the key changes
 * with the model, the options and the target; --no-cache writes nothing;
 * XCOMP_CACHE_DIR picks the folder. */
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_module_fixture.h"

static int loads = 0;

static xc_status_t load_fixture(void* ctx, xc_graph_t** out) {
  (void)ctx;
  loads++;
  return fixture_parse_graph(out);
}

static int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void request(xc_session_options_t* r, const char* dir) {
  xc_session_options_init(r);
  r->target = "cpu";
  r->opt_level = 0;
  r->cache_dir = dir;
  r->lower = fixture_lower;
  r->lower_free = fixture_lower_free;
  fixture_build_options(&r->build);
}

/* Compiles through the cache (a session of its own: the counters of one
 * compile are added to st) and checks the module runs correctly. */
static void compile_and_run(const xc_session_options_t* r, xc_cache_stats_t* st) {
  xc_compiled_module_t* m = NULL;
  xc_session_t* session = NULL;
  CHECK_OK(xc_session_create(r, &session));
  if (!session) return;
  CHECK_OK(xc_session_compile_bytes(session, fixture_xir, strlen(fixture_xir), load_fixture, NULL, &m));
  const xc_cache_stats_t* add = xc_session_cache_stats(session);
  st->hits += add->hits;
  st->misses += add->misses;
  st->corrupt += add->corrupt;
  st->stores += add->stores;
  st->kernels_compiled += add->kernels_compiled;
  xc_session_destroy(session);
  if (!m) return;
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(m, NULL, NULL, &e));
  xc_tensor_t* in = fixture_input(50);
  xc_tensor_t* out[1] = {NULL};
  if (e) CHECK_OK(xc_executor_run(e, 1, (const xc_tensor_t* const*)&in, out, NULL));
  CHECK_EQ_INT(fixture_wrong(in, out[0]), 0);
  xc_tensor_destroy(in);
  xc_tensor_destroy(out[0]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

static void damage_entry(const char* path, bool truncate_it) {
  uint8_t* bytes = NULL;
  size_t size = 0;
  CHECK_OK(xc_read_file_bytes(path, &bytes, &size));
  if (!bytes) return;
  if (truncate_it) size = size / 3;
  else bytes[size / 2] ^= 0x10;
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    fwrite(bytes, 1, size, f);
    fclose(f);
  }
  free(bytes);
}

int main(void) {
  char dir[] = "/tmp/xcomp-test-cache-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char sub[300];
  snprintf(sub, sizeof sub, "%s/nested/cache", dir); /* created on the first store */
  xc_session_options_t r;
  request(&r, sub);
  xc_cache_stats_t st;
  memset(&st, 0, sizeof st);

  /* Cold: a miss, the model loaded and lowered once, every kernel compiled, one entry stored. */
  compile_and_run(&r, &st);
  CHECK_EQ_INT(st.misses, 1);
  CHECK_EQ_INT(st.hits, 0);
  CHECK_EQ_INT(st.corrupt, 0);
  CHECK_EQ_INT(st.stores, 1);
  CHECK_EQ_INT(st.kernels_compiled, FIXTURE_KERNELS);
  CHECK_EQ_INT(loads, 1);
  CHECK_EQ_INT(fixture_lower_calls, 1);
  CHECK_EQ_INT(count_entries(sub), 1);

  /* Warm: a hit; no load, no lowering, no C compiler. */
  compile_and_run(&r, &st);
  CHECK_EQ_INT(st.hits, 1);
  CHECK_EQ_INT(st.misses, 1);
  CHECK_EQ_INT(st.kernels_compiled, FIXTURE_KERNELS);
  CHECK_EQ_INT(loads, 1);
  CHECK_EQ_INT(fixture_lower_calls, 1);

  /* A corrupt entry is a miss, recompiled and replaced; then a hit again. */
  xc_target_t* t = NULL;
  int index = 0;
  xc_device_caps_t caps;
  CHECK_OK(xc_target_find("cpu", &t, &index));
  CHECK_OK(xc_target_device_caps(t, index, &caps));
  xc_hash128_t key = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, false, &r);
  char path[600];
  xc_cache_entry_path(sub, key, path, sizeof path);
  CHECK(access(path, R_OK) == 0);
  damage_entry(path, false);
  compile_and_run(&r, &st);
  CHECK_EQ_INT(st.corrupt, 1);
  CHECK_EQ_INT(st.misses, 2);
  CHECK_EQ_INT(st.stores, 2);
  CHECK_EQ_INT(st.kernels_compiled, 2 * FIXTURE_KERNELS);
  compile_and_run(&r, &st);
  CHECK_EQ_INT(st.hits, 2);
  CHECK_EQ_INT(st.kernels_compiled, 2 * FIXTURE_KERNELS);
  damage_entry(path, true);
  compile_and_run(&r, &st);
  CHECK_EQ_INT(st.corrupt, 2);
  CHECK_EQ_INT(st.kernels_compiled, 3 * FIXTURE_KERNELS);
  CHECK_EQ_INT(count_entries(sub), 1);

  /* Entries and folders are the user's alone. */
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
  CHECK(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700);

  /* An entry records its key: a valid module of another model (here: the
   * same module stored under another key, then renamed onto this key's name)
   * is a miss, recompiled and replaced, never a hit. */
  {
    xc_compiled_module_t* good = NULL;
    CHECK_OK(xc_compiled_module_read(path, &good));
    CHECK(good && good->has_cache_key && good->cache_key.lo == key.lo && good->cache_key.hi == key.hi);
    xc_hash128_t foreign_key = {key.lo ^ 1, key.hi};
    char foreign[600];
    if (good) CHECK_OK(xc_cache_store(sub, foreign_key, good, NULL));
    xc_cache_entry_path(sub, foreign_key, foreign, sizeof foreign);
    CHECK(rename(foreign, path) == 0);
    xc_compiled_module_destroy(good);
    /* Without a key section at all (a module written by 'xcomp compile -o'). */
    int hits = st.hits;
    compile_and_run(&r, &st);
    CHECK_EQ_INT(st.hits, hits);
    CHECK_EQ_INT(st.corrupt, 3);
    CHECK_EQ_INT(st.kernels_compiled, 4 * FIXTURE_KERNELS);
    CHECK_OK(xc_compiled_module_read(path, &good));
    CHECK(good && good->has_cache_key && good->cache_key.lo == key.lo && good->cache_key.hi == key.hi);
    if (good) {
      good->has_cache_key = false;
      CHECK_OK(xc_compiled_module_write(good, path));
    }
    xc_compiled_module_destroy(good);
    compile_and_run(&r, &st);
    CHECK_EQ_INT(st.hits, hits);
    CHECK_EQ_INT(st.corrupt, 4);
    compile_and_run(&r, &st);
    CHECK_EQ_INT(st.hits, hits + 1);
    CHECK_EQ_INT(count_entries(sub), 1);
  }

  /* A store removes the temp files of stores killed before their rename,
   * once they are an hour old; a fresh one (a store in progress) stays. */
  {
    char stale[700], fresh[700];
    snprintf(stale, sizeof stale, "%s/0123.xcm.tmp.AbCdEf", sub);
    snprintf(fresh, sizeof fresh, "%s/4567.xcm.tmp.AbCdEf", sub);
    FILE* f1 = fopen(stale, "w");
    FILE* f2 = fopen(fresh, "w");
    CHECK(f1 && f2);
    if (f1) fclose(f1);
    if (f2) fclose(f2);
    struct timespec old_times[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    CHECK(utimensat(AT_FDCWD, stale, old_times, 0) == 0);
    xc_compiled_module_t* any = NULL;
    CHECK_OK(xc_compiled_module_read(path, &any));
    if (any) CHECK_OK(xc_cache_store(sub, key, any, NULL));
    xc_compiled_module_destroy(any);
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(fresh, F_OK) == 0);
    unlink(fresh);
  }

  /* The key follows everything that decides the result. */
  xc_hash128_t same = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, false, &r);
  CHECK(same.lo == key.lo && same.hi == key.hi);
  xc_hash128_t other_model = xc_compile_cache_key(fixture_xir, strlen(fixture_xir) - 1, "cpu", &caps, false, &r);
  CHECK(other_model.lo != key.lo || other_model.hi != key.hi);
  xc_hash128_t other_target = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "opencl", &caps, false, &r);
  CHECK(other_target.lo != key.lo || other_target.hi != key.hi);
  xc_session_options_t r2 = r;
  r2.opt_level = 2;
  xc_hash128_t other_level = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, false, &r2);
  CHECK(other_level.lo != key.lo || other_level.hi != key.hi);
  r2 = r;
  r2.build.compile.extra_flags = "-DX=1";
  xc_hash128_t other_flags = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, false, &r2);
  CHECK(other_flags.lo != key.lo || other_flags.hi != key.hi);
  r2 = r;
  r2.knobs = "num_threads=64";
  xc_hash128_t other_knobs = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, false, &r2);
  CHECK(other_knobs.lo != key.lo || other_knobs.hi != key.hi);
  xc_hash128_t arch_only = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps, true, &r);
  CHECK(arch_only.lo != key.lo || arch_only.hi != key.hi);
  xc_device_caps_t caps2 = caps;
  caps2.simd_width *= 2;
  xc_hash128_t other_device = xc_compile_cache_key(fixture_xir, strlen(fixture_xir), "cpu", &caps2, false, &r);
  CHECK(other_device.lo != key.lo || other_device.hi != key.hi);

  /* No cache: compiles every time, writes nothing. */
  char nodir[300];
  snprintf(nodir, sizeof nodir, "%s/unused", dir);
  request(&r2, nodir);
  r2.use_cache = false;
  int before = st.kernels_compiled;
  compile_and_run(&r2, &st);
  CHECK_EQ_INT(st.kernels_compiled, before + FIXTURE_KERNELS);
  CHECK(access(nodir, F_OK) != 0);

  /* The default folder. */
  char where[4096];
  setenv("XCOMP_CACHE_DIR", "/some/where", 1);
  CHECK_OK(xc_cache_dir(where, sizeof where));
  CHECK_STR(where, "/some/where");
  unsetenv("XCOMP_CACHE_DIR");
  setenv("HOME", "/home/u", 1);
  CHECK_OK(xc_cache_dir(where, sizeof where));
  CHECK_STR(where, "/home/u/.cache/xcomp");

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
  return xc_test_summary("test_cache");
}
