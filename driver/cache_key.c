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

/* The bytes of a program file, hashed once per process and path (zero
 * when unreadable: then the version string alone decides). The running
 * program's own bytes: a rebuilt xcomp (another emitter, another pass) must
 * not reuse entries of the old one even though its version string is the
 * same; a plugin target's shared object likewise. */
static xc_hash128_t file_identity(const char* path) {
  static struct {
    char path[512];
    xc_hash128_t id;
  } seen[8];
  static int num_seen = 0;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  xc_hash128_t id = {0, 0};
  pthread_mutex_lock(&lock);
  for (int i = 0; i < num_seen; i++)
    if (strcmp(seen[i].path, path) == 0) {
      id = seen[i].id;
      pthread_mutex_unlock(&lock);
      return id;
    }
  uint8_t* bytes = NULL;
  size_t size = 0;
  xc_status_t s = xc_read_file_bytes(path, &bytes, &size);
  if (!s) id = xc_hash128(bytes, size);
  xc_status_free(s);
  free(bytes);
  if (num_seen < 8 && strlen(path) < sizeof seen[0].path) {
    snprintf(seen[num_seen].path, sizeof seen[num_seen].path, "%s", path);
    seen[num_seen++].id = id;
  }
  pthread_mutex_unlock(&lock);
  return id;
}

/* The plugin file a target came from (NULL for built-in targets). */
static const char* plugin_path(const char* target_name) {
  for (int i = 0; xc_target_at(i); i++) {
    const xc_target_t* t = xc_target_at(i);
    if (strcmp(xc_target_name(t), target_name) != 0) continue;
    const char* origin = xc_target_origin(t);
    return origin && *origin && strcmp(origin, "built-in") != 0 ? origin : NULL;
  }
  return NULL;
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
           "O%d|precision=%s|flags=%s|extra=%s|cross=%d|tf32=%d|env=%s|clenv=%s|cuenv=%s|hipenv=%s|knobs=%s|format=%u|vendor=%d|"
           "arch=%d|idxchk=%d",
           r->opt_level,
           r->precision == XC_DTYPE_UNDEFINED ? "-" : xc_dtype_name(r->precision), c->flags ? c->flags : "-",
           c->extra_flags ? c->extra_flags : "-", c->cross ? 1 : 0, c->allow_tf32 ? 1 : 0,
           getenv("XCOMP_CPU_CFLAGS") ? getenv("XCOMP_CPU_CFLAGS") : "-",
           getenv("XCOMP_OPENCL_FLAGS") ? getenv("XCOMP_OPENCL_FLAGS") : "-",
           getenv("XCOMP_CUDA_FLAGS") ? getenv("XCOMP_CUDA_FLAGS") : "-",
           getenv("XCOMP_HIP_FLAGS") ? getenv("XCOMP_HIP_FLAGS") : "-",
           r->knobs && *r->knobs ? r->knobs : "-", XC_CM_FORMAT_VERSION,
           r->no_vendor_blas ? 0 : 1, arch_only ? 1 : 0, r->no_index_checks ? 0 : 1);
  hash_str(st, "options", opts);
  hash_str(st, "input-shapes", r->input_shapes && *r->input_shapes ? r->input_shapes : "-");
  hash_str(st, "dynamic", r->dynamic && *r->dynamic ? r->dynamic : "-");
  hash_str(st, "buckets", r->buckets && *r->buckets ? r->buckets : "-");
  hash_str(st, "xcomp", XCOMP_VERSION);
  xc_hash128_t self = file_identity("/proc/self/exe");
  XXH3_128bits_update(st, &self, sizeof self);
  const char* plugin = plugin_path(target_name);
  xc_hash128_t plugin_id = plugin ? file_identity(plugin) : (xc_hash128_t){0, 0};
  XXH3_128bits_update(st, &plugin_id, sizeof plugin_id);
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

