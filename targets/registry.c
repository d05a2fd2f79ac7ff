/* The target registry: built-in targets, plugins from XCOMP_PLUGIN_PATH and
 * the plugins installed with xcomp (lib/xcomp/plugins beside the binary or
 * libxcomp.so: the spirv target), all registered through the same
 * xc_target_plugin_init-style entry point; selector resolution
 * ("opencl:1", "opencl:nvidia", "H200"). */
/* dladdr needs _GNU_SOURCE: CMakeLists.txt defines it for this file (the SDK
 * libraries force-include headers before the first line). */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xcomp/emit.h"
#include "xcomp/tiled.h"

#include "targets_internal.h"

typedef struct registry {
  xc_target_t** targets;
  int count, capacity;
  char** plugin_errors;
  int num_plugin_errors;
  char** loaded;  /* real paths of the plugins loaded, each once */
  int num_loaded;
  bool initialized;
} registry_t;

static registry_t g_registry;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Built-in targets, in listing order. */
static const xc_target_plugin_init_fn builtin_inits[] = {
    xc_target_cpu_init,
    xc_target_opencl_init,
    xc_target_cuda_init,
    xc_target_rocm_init,
    xc_target_rocm_nv_init,
};

static bool valid_target_name(const char* name) {
  if (!name || !*name || strlen(name) > 31) return false;
  for (const char* p = name; *p; p++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')) return false;
  return true;
}

static char* dup_string(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void free_context(const xc_target_iface_t* iface, void* context) {
  if (iface && iface->target_free && context) iface->target_free(context);
}

/* What is being initialized ("built-in" or a plugin path), for messages and
 * xc_target_origin. Set with g_lock held around each init call. */
static const char* g_current_origin = "built-in";
static bool g_in_init;

/* host->register_target. */
static xc_status_t host_register(const xc_target_host_t* host, const xc_target_iface_t* iface,
                                 void* context) {
  const char* origin = g_current_origin;
  if (!g_in_init)
    return xc_error(XC_INVALID_ARGUMENT, "register_target may only be called from a plugin's init function");
  if (!iface) return xc_error(XC_INVALID_ARGUMENT, "%s: register_target with no interface", origin);
  if (iface->api_version < XC_TARGET_API_MIN_VERSION || iface->api_version > XC_TARGET_API_VERSION) {
    xc_status_t st = xc_error(XC_UNSUPPORTED,
                              "%s: target '%s' was built for target API version %d, this xcomp "
                              "has version %d (and loads versions %d to %d); rebuild it against this "
                              "xcomp's xcomp/target.h",
                              origin, iface->name ? iface->name : "?", iface->api_version,
                              XC_TARGET_API_VERSION, XC_TARGET_API_MIN_VERSION, XC_TARGET_API_VERSION);
    free_context(iface, context);
    return st;
  }
  const char* missing = NULL;
  if (!iface->device_count) missing = "device_count";
  else if (!iface->device_caps) missing = "device_caps";
  else if (!iface->device_open) missing = "device_open";
  else if (!iface->device_close) missing = "device_close";
  else if (!iface->buffer_alloc) missing = "buffer_alloc";
  else if (!iface->buffer_free) missing = "buffer_free";
  else if (!iface->buffer_write) missing = "buffer_write";
  else if (!iface->buffer_read) missing = "buffer_read";
  else if (!iface->module_load) missing = "module_load";
  else if (!iface->module_unload) missing = "module_unload";
  else if (!iface->kernel_get) missing = "kernel_get";
  else if (!iface->launch) missing = "launch";
  else if ((iface->event_record != NULL) != (iface->event_elapsed_ms != NULL) ||
           (iface->event_record != NULL) != (iface->event_free != NULL))
    missing = "event_record/event_elapsed_ms/event_free (all three or none)";
  else if ((iface->capture_begin != NULL) != (iface->capture_end != NULL) ||
           (iface->capture_begin != NULL) != (iface->graph_launch != NULL) ||
           (iface->capture_begin != NULL) != (iface->graph_free != NULL))
    missing = "capture_begin/capture_end/graph_launch/graph_free (all four or none)";
  else if (iface->api_version >= 5 && (iface->buffer_device_address != NULL) != (iface->copy_device != NULL))
    missing = "buffer_device_address/copy_device (both or none)";
  if (!valid_target_name(iface->name) || missing) {
    xc_status_t st =
        missing ? xc_error(XC_INVALID_ARGUMENT, "%s: target '%s' lacks required entry %s", origin,
                           iface->name ? iface->name : "?", missing)
                : xc_error(XC_INVALID_ARGUMENT,
                           "%s: target name '%s' must be 1-31 characters of [a-z0-9_]", origin,
                           iface->name ? iface->name : "(null)");
    free_context(iface, context);
    return st;
  }
  registry_t* r = &g_registry;
  for (int i = 0; i < r->count; i++) {
    if (strcmp(r->targets[i]->iface->name, iface->name) == 0) {
      xc_status_t st = xc_error(XC_INVALID_ARGUMENT, "%s: a target named '%s' is already registered (%s)",
                                origin, iface->name, r->targets[i]->origin);
      free_context(iface, context);
      return st;
    }
  }
  if (r->count == r->capacity) {
    int cap = r->capacity ? r->capacity * 2 : 8;
    xc_target_t** grown = realloc(r->targets, (size_t)cap * sizeof *grown);
    if (!grown) {
      free_context(iface, context);
      return xc_error_oom();
    }
    r->targets = grown;
    r->capacity = cap;
  }
  xc_target_t* t = calloc(1, sizeof *t);
  char* origin_copy = dup_string(origin);
  if (!t || !origin_copy) {
    free(t);
    free(origin_copy);
    free_context(iface, context);
    return xc_error_oom();
  }
  /* An older table is shorter: copy the part its version defines into a
   * full table whose later entries are NULL, so the rest of xcomp reads
   * every table the same way. Targets (and so the copy) live as long as
   * the process. */
  if (iface->api_version < XC_TARGET_API_VERSION) {
    xc_target_iface_t* full = calloc(1, sizeof *full);
    if (!full) {
      free(t);
      free(origin_copy);
      free_context(iface, context);
      return xc_error_oom();
    }
    size_t defined = iface->api_version == 3 ? offsetof(xc_target_iface_t, buffer_alloc_mapped)
                                             : offsetof(xc_target_iface_t, buffer_device_address);
    memcpy(full, iface, defined);
    iface = full;
  }
  t->iface = iface;
  t->context = context;
  t->origin = origin_copy;
  r->targets[r->count++] = t;
  return NULL;
}

static void host_status_free(xc_status_t st) { xc_status_free(st); }
static const char* host_status_message(xc_status_t st) { return xc_status_message(st); }

static xc_status_t host_error(xc_code_t code, const char* fmt, ...) XC_PRINTF(2, 3);
static xc_status_t host_error(xc_code_t code, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xc_error(code, "%s", msg);
}

static void host_free(void* p) { free(p); }
static int64_t host_dim_resolve(const struct xc_tiled_dim* d, const int64_t* knob_values) {
  return xc_tiled_dim_resolve(*d, knob_values);
}
static char* host_tiled_print(const struct xc_tiled_kernel* k) { return xc_tiled_print_to_string(k); }

/* One table for everyone; plugins may keep the pointer for their lifetime. */
static const xc_target_host_t g_host_table = {
    .api_version = XC_TARGET_API_VERSION,
    .register_target = host_register,
    .error = host_error,
    .status_free = host_status_free,
    .status_message = host_status_message,
    .reserved = NULL,
    .size = sizeof(xc_target_host_t),
    .status_code = xc_status_code,
    .free = host_free,
    .tiled_print = host_tiled_print,
    .resolve_knobs = xc_emit_resolve_knobs,
    .tiled_threads = xc_tiled_threads,
    .dim_resolve = host_dim_resolve,
    .tiled_ranges = xc_tiled_ranges,
    .emit_kernel = xc_emit_kernel,
    .emit_supports = xc_emit_supports,
    .emit_printf = xc_emit_printf,
    .emit_param_name = xc_emit_param_name,
    .emit_write_base_entry = xc_emit_write_base_entry,
    .kernel_source_release = xc_kernel_source_release,
    .blob_release = xc_blob_release,
    .temp_dir = xc_targets_temp_dir,
    .emit_schedule = xc_emit_schedule,
    .schedule_check = xc_tiled_schedule_check,
    .schedule_generic = xc_schedule_generic,
};

static void record_plugin_error(xc_status_t st) {
  registry_t* r = &g_registry;
  char* msg = dup_string(xc_status_message(st));
  char** grown = msg ? realloc(r->plugin_errors, (size_t)(r->num_plugin_errors + 1) * sizeof *grown) : NULL;
  if (!grown) {
    free(msg);
    return;
  }
  r->plugin_errors = grown;
  r->plugin_errors[r->num_plugin_errors++] = msg;
}

static bool already_loaded(const char* real) {
  for (int i = 0; i < g_registry.num_loaded; i++)
    if (strcmp(g_registry.loaded[i], real) == 0) return true;
  return false;
}

/* Remembers the real path of a plugin that loaded. */
static void remember_loaded(const char* path) {
  char* real = realpath(path, NULL);
  if (!real || already_loaded(real)) {
    free(real);
    return;
  }
  char** grown = realloc(g_registry.loaded, (size_t)(g_registry.num_loaded + 1) * sizeof *grown);
  if (!grown) {
    free(real);
    return;
  }
  g_registry.loaded = grown;
  g_registry.loaded[g_registry.num_loaded++] = real;
}

/* Loads one plugin with g_lock held. */
static xc_status_t load_plugin_locked(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return xc_error(XC_UNAVAILABLE, "plugin %s: cannot be loaded: %s", path, why ? why : "dlopen failed");
  }
  xc_target_plugin_version_fn version_fn;
  xc_target_plugin_init_fn init_fn;
  *(void**)&version_fn = dlsym(handle, "xc_target_plugin_api_version");
  *(void**)&init_fn = dlsym(handle, "xc_target_plugin_init");
  if (!version_fn || !init_fn) {
    dlclose(handle);
    return xc_error(XC_INVALID_ARGUMENT,
                    "plugin %s: not an xcomp target plugin (it must export "
                    "xc_target_plugin_api_version and xc_target_plugin_init)",
                    path);
  }
  int version = version_fn();
  if (version < XC_TARGET_API_MIN_VERSION || version > XC_TARGET_API_VERSION) {
    dlclose(handle);
    return xc_error(XC_UNSUPPORTED,
                    "plugin %s: built for target API version %d, this xcomp has version %d (and loads "
                    "versions %d to %d); rebuild the plugin against this xcomp's include/xcomp/target.h",
                    path, version, XC_TARGET_API_VERSION, XC_TARGET_API_MIN_VERSION, XC_TARGET_API_VERSION);
  }
  int before = g_registry.count;
  g_current_origin = path;
  g_in_init = true;
  /* The plugin's own version: a version-3 plugin checks that it gets 3. The
   * host table only grows (its size field says how far), so it fits all. */
  xc_status_t st = init_fn(version, &g_host_table);
  g_in_init = false;
  g_current_origin = "built-in";
  if (st) {
    /* Targets it registered before failing stay: their code is loaded. */
    if (g_registry.count == before) dlclose(handle);
    return xc_status_annotate(st, "plugin %s: initialization failed", path);
  }
  /* The handle stays open for the life of the process. */
  remember_loaded(path);
  return NULL;
}

xc_status_t xc_target_load_plugin(const char* path) {
  if (!path) return xc_error(XC_INVALID_ARGUMENT, "plugin path is NULL");
  pthread_mutex_lock(&g_lock);
  xc_status_t st = load_plugin_locked(path);
  if (st) record_plugin_error(st);
  pthread_mutex_unlock(&g_lock);
  return st;
}

static bool ends_with_so(const char* name) {
  size_t n = strlen(name);
  return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

static int compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Loads the *.so of one directory in name order; errors are recorded.
 * skip_loaded: plugins already loaded from elsewhere are left alone (the
 * installed directory may also be on XCOMP_PLUGIN_PATH). */
static void load_plugin_dir_locked(const char* dir, bool skip_loaded) {
  DIR* d = opendir(dir);
  if (!d) return; /* a missing directory on the path is not an error */
  char** names = NULL;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (!ends_with_so(e->d_name)) continue;
    char** grown = realloc(names, (size_t)(n + 1) * sizeof *grown);
    char* name = dup_string(e->d_name);
    if (!grown || !name) {
      free(name);
      if (grown) names = grown;
      break;
    }
    names = grown;
    names[n++] = name;
  }
  closedir(d);
  if (n > 1) qsort(names, (size_t)n, sizeof *names, compare_names);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(dir) + strlen(names[i]) + 2;
    char* path = malloc(len);
    if (path) {
      snprintf(path, len, "%s/%s", dir, names[i]);
      char* real = skip_loaded ? realpath(path, NULL) : NULL;
      bool skip = real && already_loaded(real);
      free(real);
      xc_status_t st = skip ? NULL : load_plugin_locked(path);
      if (st) record_plugin_error(st);
      xc_status_free(st);
      free(path);
    }
    free(names[i]);
  }
  free(names);
}

/* Plugins that come with xcomp live in lib/xcomp/plugins: found from the
 * file holding this code (the CLI or a test in the build tree: DIR/lib/...;
 * an installed CLI in bin/: DIR/../lib/...; an installed libxcomp.so in
 * lib/: DIR/xcomp/plugins). XCOMP_NO_INSTALLED_PLUGINS=1 turns it off. */
static void load_installed_plugins_locked(void) {
  const char* off = getenv("XCOMP_NO_INSTALLED_PLUGINS");
  if (off && strcmp(off, "1") == 0) return;
  Dl_info di;
  if (!dladdr((void*)load_installed_plugins_locked, &di) || !di.dli_fname) return;
  char* self = realpath(di.dli_fname, NULL);
  if (!self) return;
  char* slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  static const char* const rel[] = {"lib/xcomp/plugins", "../lib/xcomp/plugins", "xcomp/plugins"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    size_t len = strlen(self) + strlen(rel[i]) + 2;
    char* dir = malloc(len);
    if (!dir) break;
    snprintf(dir, len, "%s/%s", self, rel[i]);
    load_plugin_dir_locked(dir, true);
    free(dir);
  }
  free(self);
}

/* The environment before any vendor library was loaded (copied strings). */
static char** g_startup_env;

static void save_environment_locked(void) {
  extern char** environ;
  int n = 0;
  while (environ && environ[n]) n++;
  char** copy = calloc((size_t)n + 1, sizeof *copy);
  if (!copy) return;
  for (int i = 0; i < n; i++)
    if (!(copy[i] = dup_string(environ[i]))) {
      for (int j = 0; j < i; j++) free(copy[j]);
      free(copy);
      return;
    }
  g_startup_env = copy;
}

char* const* xc_targets_startup_environment(void) {
  extern char** environ;
  pthread_mutex_lock(&g_lock);
  if (!g_registry.initialized && !g_startup_env) save_environment_locked();
  char* const* env = g_startup_env ? g_startup_env : environ;
  pthread_mutex_unlock(&g_lock);
  return env;
}

xc_status_t xc_targets_init(void) {
  pthread_mutex_lock(&g_lock);
  if (g_registry.initialized) {
    pthread_mutex_unlock(&g_lock);
    return NULL;
  }
  g_registry.initialized = true;
  if (!g_startup_env) save_environment_locked();
  for (size_t i = 0; i < sizeof builtin_inits / sizeof builtin_inits[0]; i++) {
    g_in_init = true;
    xc_status_t st = builtin_inits[i](XC_TARGET_API_VERSION, &g_host_table);
    g_in_init = false;
    if (st) {
      /* A built-in target failing to register is a bug or out of memory. */
      pthread_mutex_unlock(&g_lock);
      return st;
    }
  }
  const char* path = getenv("XCOMP_PLUGIN_PATH");
  if (path && *path) {
    char* copy = dup_string(path);
    if (copy) {
      char* save = NULL;
      for (char* dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        if (*dir) load_plugin_dir_locked(dir, false);
      free(copy);
    }
  }
  load_installed_plugins_locked();
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

int xc_target_plugin_error_count(void) { return g_registry.num_plugin_errors; }
const char* xc_target_plugin_error_at(int index) {
  return index >= 0 && index < g_registry.num_plugin_errors ? g_registry.plugin_errors[index] : NULL;
}

int xc_target_count(void) { return g_registry.count; }
xc_target_t* xc_target_at(int index) {
  return index >= 0 && index < g_registry.count ? g_registry.targets[index] : NULL;
}

const char* xc_target_name(const xc_target_t* t) { return t ? t->iface->name : ""; }
const char* xc_target_description(const xc_target_t* t) {
  return t && t->iface->description ? t->iface->description : "";
}
const char* xc_target_origin(const xc_target_t* t) { return t ? t->origin : ""; }

xc_status_t xc_target_availability(xc_target_t* t) {
  if (!t) return xc_error(XC_INVALID_ARGUMENT, "target is NULL");
  pthread_mutex_lock(&g_lock);
  if (!t->probed) {
    t->unavailable = t->iface->probe ? t->iface->probe(t->context) : NULL;
    if (t->unavailable && xc_status_code(t->unavailable) != XC_UNAVAILABLE)
      t->unavailable = xc_status_annotate(t->unavailable, "target %s unavailable", t->iface->name);
    t->probed = true;
  }
  xc_status_t st = t->unavailable
                       ? xc_error(xc_status_code(t->unavailable), "%s", xc_status_message(t->unavailable))
                       : NULL;
  pthread_mutex_unlock(&g_lock);
  return st;
}

xc_status_t xc_target_device_count(xc_target_t* t, int* out_count) {
  if (out_count) *out_count = 0;
  if (!t || !out_count) return xc_error(XC_INVALID_ARGUMENT, "xc_target_device_count: NULL argument");
  XC_RETURN_IF_ERROR(xc_target_availability(t));
  return t->iface->device_count(t->context, out_count);
}

xc_status_t xc_target_device_caps(xc_target_t* t, int index, xc_device_caps_t* out_caps) {
  if (!t || !out_caps) return xc_error(XC_INVALID_ARGUMENT, "xc_target_device_caps: NULL argument");
  memset(out_caps, 0, sizeof *out_caps);
  int count = 0;
  XC_RETURN_IF_ERROR(xc_target_device_count(t, &count));
  if (index < 0 || index >= count)
    return xc_error(XC_NOT_FOUND, "target %s has no device %d (it has %d)", t->iface->name, index, count);
  return t->iface->device_caps(t->context, index, out_caps);
}

static bool parse_index(const char* s, int* out) {
  if (!*s) return false;
  long v = 0;
  for (const char* p = s; *p; p++) {
    if (!isdigit((unsigned char)*p)) return false;
    v = v * 10 + (*p - '0');
    if (v > 1000000) return false;
  }
  *out = (int)v;
  return true;
}

/* Finds device `spec` (index or name substring) of an available target. */
static xc_status_t find_device(xc_target_t* t, const char* spec, int* out_index) {
  int count = 0;
  XC_RETURN_IF_ERROR(xc_target_device_count(t, &count));
  int index;
  if (parse_index(spec, &index)) {
    if (index < count) {
      *out_index = index;
      return NULL;
    }
  } else {
    for (int i = 0; i < count; i++) {
      xc_device_caps_t caps;
      xc_status_t st = xc_target_device_caps(t, i, &caps);
      if (st) {
        xc_status_free(st);
        continue;
      }
      if (xc_targets_contains_ci(caps.name, spec) || xc_targets_contains_ci(caps.vendor, spec)) {
        *out_index = i;
        return NULL;
      }
    }
  }
  char list[1024] = "";
  size_t k = 0;
  for (int i = 0; i < count && k < sizeof list; i++) {
    xc_device_caps_t caps;
    xc_status_t st = xc_target_device_caps(t, i, &caps);
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s:%d %s", i ? ", " : "", t->iface->name, i,
                          st ? "?" : caps.name);
    xc_status_free(st);
  }
  return xc_error(XC_NOT_FOUND, "target %s has no device '%s' (devices: %s)", t->iface->name, spec,
                  count ? list : "none");
}

xc_status_t xc_target_find(const char* selector, xc_target_t** out_target, int* out_device_index) {
  if (out_target) *out_target = NULL;
  if (out_device_index) *out_device_index = 0;
  if (!selector || !out_target) return xc_error(XC_INVALID_ARGUMENT, "xc_target_find: NULL argument");
  XC_RETURN_IF_ERROR(xc_targets_init());
  const char* colon = strchr(selector, ':');
  size_t name_len = colon ? (size_t)(colon - selector) : strlen(selector);
  const char* spec = colon ? colon + 1 : "0";
  int device = 0;
  for (int i = 0; i < g_registry.count; i++) {
    xc_target_t* t = g_registry.targets[i];
    if (strlen(t->iface->name) != name_len || strncmp(t->iface->name, selector, name_len) != 0) continue;
    XC_RETURN_IF_ERROR(find_device(t, spec, &device));
    *out_target = t;
    if (out_device_index) *out_device_index = device;
    return NULL;
  }
  /* Not a target name: a device name substring over available targets. */
  if (!colon && *selector) {
    for (int i = 0; i < g_registry.count; i++) {
      xc_target_t* t = g_registry.targets[i];
      xc_status_t st = find_device(t, selector, &device);
      if (!st) {
        *out_target = t;
        if (out_device_index) *out_device_index = device;
        return NULL;
      }
      xc_status_free(st);
    }
  }
  char list[512] = "";
  size_t k = 0;
  for (int i = 0; i < g_registry.count && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", g_registry.targets[i]->iface->name);
  return xc_error(XC_NOT_FOUND, "no target or device matches '%s' (targets: %s)", selector, list);
}

/* True when haystack holds word as a whole word (any case): not preceded or
 * followed by a letter, digit or '_' ("sm_90" is in "NVIDIA sm_90", not in
 * "NVIDIA sm_90a"). */
static bool contains_word_ci(const char* haystack, const char* word) {
  size_t n = strlen(word);
  if (!haystack || !n) return false;
  for (const char* p = haystack; *p; p++) {
    if (strncasecmp(p, word, n) != 0) continue;
    bool before = p > haystack && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool after = isalnum((unsigned char)p[n]) || p[n] == '_';
    if (!before && !after) return true;
  }
  return false;
}

xc_status_t xc_target_resolve(const char* selector, xc_target_resolution_t* out) {
  if (!selector || !out) return xc_error(XC_INVALID_ARGUMENT, "xc_target_resolve: NULL argument");
  memset(out, 0, sizeof *out);
  out->device_index = -1;
  XC_RETURN_IF_ERROR(xc_targets_init());
  const char* colon = strchr(selector, ':');
  xc_target_t* named = NULL;
  for (int i = 0; colon && colon[1] && i < g_registry.count; i++) {
    xc_target_t* t = g_registry.targets[i];
    size_t n = (size_t)(colon - selector);
    if (strlen(t->iface->name) == n && strncmp(t->iface->name, selector, n) == 0) named = t;
  }
  if (named && named->iface->resolve_arch) {
    const char* spec = colon + 1;
    xc_device_caps_t nominal;
    memset(&nominal, 0, sizeof nominal);
    xc_status_t st = named->iface->resolve_arch(named->context, spec, &nominal);
    if (!st) {
      out->target = named;
      out->arch = true;
      out->caps = nominal;
      /* A present device of that architecture: its own capabilities. */
      int count = 0;
      xc_status_t avail = xc_target_availability(named);
      if (!avail) avail = xc_target_device_count(named, &count);
      xc_status_free(avail);
      for (int i = 0; i < count; i++) {
        xc_device_caps_t caps;
        xc_status_t cs = xc_target_device_caps(named, i, &caps);
        if (cs) {
          xc_status_free(cs);
          continue;
        }
        if (contains_word_ci(caps.vendor, spec) || contains_word_ci(caps.version, spec) ||
            contains_word_ci(caps.name, spec)) {
          out->caps = caps;
          out->device_index = i;
          break;
        }
      }
      return NULL;
    }
    if (xc_status_code(st) != XC_NOT_FOUND) return st;
    xc_status_free(st); /* not an architecture: a device selector */
  }
  int index = 0;
  XC_RETURN_IF_ERROR(xc_target_find(selector, &out->target, &index));
  XC_RETURN_IF_ERROR(xc_target_device_caps(out->target, index, &out->caps));
  out->device_index = index;
  return NULL;
}
