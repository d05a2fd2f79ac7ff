/* The compile cache: compiled modules stored as .xcm files named by a
 * 128-bit key under $XCOMP_CACHE_DIR (default ~/.cache/xcomp). Entries are
 * written through a temp file and renamed, so a reader sees a whole entry or
 * none; each records the key it was stored under (the module's cache-key
 * section), so a module copied under another key's name is not served. A
 * corrupt or mismatched entry is a miss and is removed (the caller recompiles
 * and stores a good one). Folders are made 0700 and entries 0600: an entry is
 * code the next compile runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

xc_status_t xc_cache_dir(char* out, size_t size) {
  const char* env = getenv("XCOMP_CACHE_DIR");
  if (env && *env) {
    snprintf(out, size, "%s", env);
    return NULL;
  }
  const char* home = getenv("HOME");
  if (!home || !*home)
    return xc_error(XC_UNAVAILABLE, "no cache folder: set XCOMP_CACHE_DIR or HOME (or pass --no-cache)");
  snprintf(out, size, "%s/.cache/xcomp", home);
  return NULL;
}

void xc_cache_entry_path(const char* dir, xc_hash128_t key, char* out, size_t size) {
  char hex[33];
  xc_hash128_hex(key, hex);
  snprintf(out, size, "%s/%s.xcm", dir, hex);
}

xc_status_t xc_make_dirs(const char* dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return xc_error(XC_INVALID_ARGUMENT, "bad folder name '%s'", dir);
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char saved = path[i];
    path[i] = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
      return xc_error(XC_IO, "cannot create folder %s: %s", path, strerror(errno));
    path[i] = saved;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return xc_error(XC_IO, "%s is not a folder", dir);
  return NULL;
}

xc_status_t xc_cache_lookup(const char* dir, xc_hash128_t key, xc_cache_stats_t* stats,
                            xc_compiled_module_t** out) {
  *out = NULL;
  char path[4200];
  xc_cache_entry_path(dir, key, path, sizeof path);
  uint8_t* bytes = NULL;
  size_t size = 0;
  xc_status_t s = xc_read_file_bytes(path, &bytes, &size);
  if (s) {
    bool missing = xc_status_code(s) == XC_NOT_FOUND;
    xc_status_free(s);
    if (stats) {
      stats->misses++;
      if (!missing) stats->corrupt++;
    }
    return NULL;
  }
  s = xc_compiled_module_deserialize(bytes, size, path, out);
  free(bytes);
  if (!s && (!(*out)->has_cache_key || (*out)->cache_key.lo != key.lo || (*out)->cache_key.hi != key.hi)) {
    /* A valid module, but not the one compiled for this key (copied or
     * renamed into the cache, or an entry of an older xcomp): a miss. */
    xc_compiled_module_destroy(*out);
    *out = NULL;
    s = xc_error(XC_DATA_LOSS, "%s: the entry was stored under another key", path);
  }
  if (s) {
    /* A damaged entry (a crash mid-copy, a disk error, another version):
     * drop it; the caller recompiles and stores a good one. */
    xc_status_free(s);
    unlink(path);
    if (stats) {
      stats->misses++;
      stats->corrupt++;
    }
    return NULL;
  }
  if (stats) stats->hits++;
  return NULL;
}

/* Temp files of stores that were killed (SIGKILL, power loss) before their
 * rename: removed once they are an hour old, which no live store takes. */
static void sweep_stale_temps(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (!strstr(e->d_name, ".xcm.tmp.")) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == getuid() && now - st.st_mtime > 3600)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

xc_status_t xc_cache_store(const char* dir, xc_hash128_t key, const xc_compiled_module_t* m,
                           xc_cache_stats_t* stats) {
  XC_RETURN_IF_ERROR(xc_make_dirs(dir));
  sweep_stale_temps(dir);
  char path[4200];
  xc_cache_entry_path(dir, key, path, sizeof path);
  xc_compiled_module_t keyed = *m; /* the same module, recording its key */
  keyed.has_cache_key = true;
  keyed.cache_key = key;
  XC_RETURN_IF_ERROR(xc_compiled_module_write_mode(&keyed, path, 0600));
  if (stats) stats->stores++;
  return NULL;
}
