/* The compile cache key: everything that decides a compiled module (the
 * model's bytes, the target and device, the options, the compile
 * environment, the compiler itself). runtime/cache.c stores the entries. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "driver_internal.h"

/* First line of `<compiler> --version`, computed once per compiler command. */
static void compiler_identity(const char* compiler, char* out, size_t size) {
  static char cached_cmd[512], cached_id[256];
  static bool have = false;
  if (have && strcmp(cached_cmd, compiler) == 0) {
    snprintf(out, size, "%s", cached_id);
    return;
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "%s --version 2>/dev/null", compiler);
  char line[256] = "unknown compiler";
  FILE* p = popen(cmd, "r");
  if (p) {
    if (!fgets(line, sizeof line, p)) snprintf(line, sizeof line, "unknown compiler");
    pclose(p);
  }
  line[strcspn(line, "\n")] = '\0';
  snprintf(cached_cmd, sizeof cached_cmd, "%s", compiler);
  snprintf(cached_id, sizeof cached_id, "%s", line);
  have = true;
  snprintf(out, size, "%s", line);
}

/* The running program's own bytes: a rebuilt xcomp (another emitter, another
 * pass) must not reuse entries of the old one even though its version string
 * is the same. Read once per process; zero when unreadable (then the version
 * string alone decides). */
static xc_hash128_t self_identity(void) {
  static xc_hash128_t id;
  static bool have = false;
  if (have) return id;
  uint8_t* bytes = NULL;
  size_t size = 0;
  xc_status_t s = xc_read_file_bytes("/proc/self/exe", &bytes, &size);
  if (!s) id = xc_hash128(bytes, size);
  xc_status_free(s);
  free(bytes);
  have = true;
  return id;
}

/* A plugin target's shared object bytes, for the same reason: a rebuilt
 * plugin emits other code under the same xcomp. Zero for built-in targets;
 * each plugin file is read once per process. */
static xc_hash128_t plugin_identity(const char* target_name) {
  static struct {
    char path[512];
    xc_hash128_t id;
  } seen[8];
  static int num_seen = 0;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  xc_hash128_t id = {0, 0};
  const char* origin = NULL;
  for (int i = 0; xc_target_at(i); i++)
    if (strcmp(xc_target_name(xc_target_at(i)), target_name) == 0) origin = xc_target_origin(xc_target_at(i));
  if (!origin || !*origin || strcmp(origin, "built-in") == 0) return id;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < num_seen; i++)
    if (strcmp(seen[i].path, origin) == 0) {
      id = seen[i].id;
      pthread_mutex_unlock(&lock);
      return id;
    }
  uint8_t* bytes = NULL;
  size_t size = 0;
  xc_status_t s = xc_read_file_bytes(origin, &bytes, &size);
  if (!s) id = xc_hash128(bytes, size);
  xc_status_free(s);
  free(bytes);
  if (num_seen < 8 && strlen(origin) < sizeof seen[0].path) {
    snprintf(seen[num_seen].path, sizeof seen[num_seen].path, "%s", origin);
    seen[num_seen++].id = id;
  }
  pthread_mutex_unlock(&lock);
  return id;
}

static void hash_str(XXH3_state_t* st, const char* tag, const char* s) {
  if (!s) s = "";
  uint64_t n = strlen(s);
  XXH3_128bits_update(st, tag, strlen(tag));
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, s, (size_t)n);
}

xc_hash128_t xc_compile_cache_key(const void* model_bytes, size_t model_size, const char* target_name,
                                  const xc_device_caps_t* caps, bool arch_only, const xc_session_options_t* r) {
  XXH3_state_t* st = XXH3_createState();
  xc_hash128_t out = {0, 0};
  if (!st) return out;
  XXH3_128bits_reset(st);
  uint64_t n = model_size;
  XXH3_128bits_update(st, "model", 5);
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, model_bytes, model_size);
  hash_str(st, "target", target_name);
  xc_hash128_t fp = xc_device_caps_fingerprint(caps);
  XXH3_128bits_update(st, &fp, sizeof fp);
  char opts[1200];
  const xc_compile_options_t* c = &r->build.compile;
  snprintf(opts, sizeof opts,
           "O%d|precision=%s|flags=%s|extra=%s|cross=%d|tf32=%d|env=%s|clenv=%s|knobs=%s|format=%u|vendor=%d|arch=%d|idxchk=%d",
           r->opt_level,
           r->precision == XC_DTYPE_UNDEFINED ? "-" : xc_dtype_name(r->precision), c->flags ? c->flags : "-",
           c->extra_flags ? c->extra_flags : "-", c->cross ? 1 : 0, c->allow_tf32 ? 1 : 0,
           getenv("XCOMP_CPU_CFLAGS") ? getenv("XCOMP_CPU_CFLAGS") : "-",
           getenv("XCOMP_OPENCL_FLAGS") ? getenv("XCOMP_OPENCL_FLAGS") : "-",
           r->knobs && *r->knobs ? r->knobs : "-", XC_CM_FORMAT_VERSION,
           r->no_vendor_blas ? 0 : 1, arch_only ? 1 : 0, r->no_index_checks ? 0 : 1);
  hash_str(st, "options", opts);
  hash_str(st, "xcomp", XCOMP_VERSION);
  xc_hash128_t self = self_identity();
  XXH3_128bits_update(st, &self, sizeof self);
  xc_hash128_t plugin = plugin_identity(target_name);
  XXH3_128bits_update(st, &plugin, sizeof plugin);
  hash_str(st, "spirv-vector", getenv("XCOMP_SPIRV_VECTOR")); /* the spirv scheduler reads it */
  if (strcmp(target_name, "cpu") == 0) {
    const char* compiler = c->compiler ? c->compiler : getenv("CC");
    if (!compiler || !*compiler) compiler = "cc";
    char id[256];
    compiler_identity(compiler, id, sizeof id);
    hash_str(st, "compiler", compiler);
    hash_str(st, "compiler-id", id);
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  out.lo = h.low64;
  out.hi = h.high64;
  return out;
}

