/* The rocm target: kernels emitted in HIP C++ by the C-family emitter
 * (rocm_dialect.c), compiled to an AMDGPU code object for one gfx
 * architecture by hiprtc (or, where hiprtc is missing or too old for the
 * architecture, by `hipcc --genco`), and run through the HIP runtime's module
 * API. hiprtc and the runtime are loaded with dlopen on first use (no
 * link-time dependency), each with a table of the functions used
 * (hip_api.h) resolved once. Compilation works without a GPU; the runtime
 * half reports "target rocm unavailable: <reason>" when the runtime or an
 * AMD GPU is missing.
 *
 * A launch of grid G and threads T is hipModuleLaunchKernel with G blocks of
 * T threads on the device's stream; arguments are the buffers (device
 * pointers) then the scalars (long long), in order. docs/targets/rocm.md. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../targets_internal.h"
#include "hip_api.h"
#include "rocm_target.h"

extern char** environ;

void xc_rocm_fill_device_caps(xc_device_caps_t* caps, const char* arch);
xc_status_t xc_rocm_blob_make(const char* arch, const uint8_t* code, size_t size, xc_blob_t* out);

typedef struct rocm_target {
  pthread_mutex_t lock;
  /* runtime */
  bool loaded;
  xc_status_t load_error;
  void* library;
  xc_hip_api_t api;
  int num_devices;
  int runtime_version;
  bool has_graphs; /* the runtime exports the graph-capture functions */
  bool has_mapped; /* ... and the mapped pinned host memory functions */
  /* hiprtc */
  bool rtc_loaded;
  xc_status_t rtc_error;
  void* rtc_library;
  xc_hiprtc_api_t rtc;
  int rtc_version; /* ROCm release of hiprtc, major*100+minor; 0 unknown */
} rocm_target_t;

typedef struct rocm_device {
  rocm_target_t* target;
  int index;
  hipStream_t stream;
} rocm_device_t;

typedef struct rocm_buffer {
  void* ptr;
  size_t size;
  /* Pinned host memory mapped into the device (rocm_buffer_alloc_mapped):
   * ptr is its device address; freed with hipHostFree, copied with memcpy
   * after the stream is idle. NULL: device memory from hipMalloc. */
  void* host;
} rocm_buffer_t;

typedef struct rocm_kernel {
  hipFunction_t function;
  int max_threads;
  struct rocm_kernel* next;
} rocm_kernel_t;

typedef struct rocm_module {
  hipModule_t module;
  void* image; /* the code object, kept alive while the module is loaded */
  rocm_kernel_t* kernels;
} rocm_module_t;

typedef struct rocm_event {
  hipEvent_t event;
} rocm_event_t;

static _Thread_local const char* g_last_compiler = "";
const char* xc_rocm_last_compiler(void) { return g_last_compiler; }

#define RUNTIME_HINT "install the ROCm runtime (libamdhip64.so, e.g. Debian's libamdhip64-5) and run on a machine with an AMD GPU"
#define RTC_HINT                                                                                              \
  "install hiprtc (Debian: libamdhip64-dev, which ships libamdhip64.so with hiprtc; ROCm: /opt/rocm/lib/"   \
  "libhiprtc.so) or hipcc, or set XCOMP_HIPRTC_LIBRARY / XCOMP_HIPCC"

/* ---- errors ---- */

static xc_status_t hip_fail(rocm_target_t* t, hipError_t e, const char* what) {
  const char* name = t->api.hipGetErrorName ? t->api.hipGetErrorName(e) : NULL;
  const char* text = t->api.hipGetErrorString ? t->api.hipGetErrorString(e) : NULL;
  xc_code_t code = e == hipErrorOutOfMemory ? XC_RESOURCE_EXHAUSTED
                   : (e == hipErrorInvalidValue || e == hipErrorInvalidHandle || e == hipErrorLaunchOutOfResources)
                       ? XC_INVALID_ARGUMENT
                   : e == hipErrorNotFound ? XC_NOT_FOUND
                                           : XC_INTERNAL;
  if (text && name && strcmp(text, name) == 0) text = NULL; /* ROCm 5 gives the name twice */
  return xc_error(code, "rocm: %s failed: %s (%d)%s%s", what, name ? name : "HIP error", (int)e, text ? ": " : "",
                  text ? text : "");
}

#define HIP_CHECK(t, expr, what)                                      \
  do {                                                                \
    hipError_t hip_err_ = (expr);                                     \
    if (hip_err_ != hipSuccess) return hip_fail(t, hip_err_, what);   \
  } while (0)

/* ---- loading the runtime (once) ---- */

static void* open_first(const char* override, const char* const* paths, size_t n) {
  if (override && *override) return dlopen(override, RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; i < n; i++) {
    void* h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  return NULL;
}

static xc_status_t rocm_load_runtime(rocm_target_t* t) {
  const char* override = getenv("XCOMP_HIP_LIBRARY");
  static const char* const paths[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so",
                                      "/opt/rocm/lib/libamdhip64.so"};
  t->library = open_first(override, paths, sizeof paths / sizeof paths[0]);
  if (!t->library)
    return xc_error(XC_UNAVAILABLE, "target rocm unavailable: %s not found (no HIP runtime) — " RUNTIME_HINT,
                    override && *override ? override : "libamdhip64.so");
#define XC_HIP_RESOLVE(ret, name, sym, params)                                                       \
  *(void**)&t->api.name = dlsym(t->library, sym);                                                    \
  if (!t->api.name)                                                                                  \
    return xc_error(XC_UNAVAILABLE, "target rocm unavailable: libamdhip64 lacks " sym               \
                                    " (the HIP runtime is too old) — " RUNTIME_HINT);
  XC_HIP_FUNCTIONS(XC_HIP_RESOLVE)
#undef XC_HIP_RESOLVE
  t->has_graphs = true;
#define XC_HIP_RESOLVE_OPTIONAL(ret, name, sym, params) \
  *(void**)&t->api.name = dlsym(t->library, sym);       \
  if (!t->api.name) t->has_graphs = false;
  XC_HIP_GRAPH_FUNCTIONS(XC_HIP_RESOLVE_OPTIONAL)
#undef XC_HIP_RESOLVE_OPTIONAL
  t->has_mapped = true;
#define XC_HIP_RESOLVE_MAPPED(ret, name, sym, params) \
  *(void**)&t->api.name = dlsym(t->library, sym);     \
  if (!t->api.name) t->has_mapped = false;
  XC_HIP_MAPPED_FUNCTIONS(XC_HIP_RESOLVE_MAPPED)
#undef XC_HIP_RESOLVE_MAPPED
  hipError_t e = t->api.hipInit(0);
  if (e != hipSuccess) {
    xc_status_t st = hip_fail(t, e, "hipInit");
    xc_status_t un = xc_error(XC_UNAVAILABLE,
                              "target rocm unavailable: %s (no AMD GPU is visible; to compile without one, "
                              "name an architecture: rocm:gfx90a)",
                              xc_status_message(st));
    xc_status_free(st);
    return un;
  }
  t->api.hipRuntimeGetVersion(&t->runtime_version);
  int count = 0;
  e = t->api.hipGetDeviceCount(&count);
  if (e != hipSuccess || count <= 0)
    return xc_error(XC_UNAVAILABLE, "target rocm unavailable: the HIP runtime reports no AMD GPU (to compile "
                                    "without one, name an architecture: rocm:gfx90a)");
  t->num_devices = count;
  return NULL;
}

static xc_status_t rocm_probe(void* target) {
  rocm_target_t* t = target;
  pthread_mutex_lock(&t->lock);
  if (!t->loaded) {
    t->loaded = true;
    t->load_error = rocm_load_runtime(t);
  }
  xc_status_t st = t->load_error ? xc_error(xc_status_code(t->load_error), "%s", xc_status_message(t->load_error))
                                 : NULL;
  pthread_mutex_unlock(&t->lock);
  return st;
}

static xc_status_t rocm_device_count(void* target, int* out_count) {
  rocm_target_t* t = target;
  XC_RETURN_IF_ERROR(rocm_probe(t));
  *out_count = t->num_devices;
  return NULL;
}

static int attr(rocm_target_t* t, int index, int which) {
  int v = 0;
  if (t->api.hipDeviceGetAttribute(&v, which, index) != hipSuccess) v = 0;
  return v;
}

/* The architecture of device `index` ("gfx90a") from its properties. */
static bool device_arch(rocm_target_t* t, int index, char* out, size_t size) {
  unsigned char* props = calloc(1, XC_HIP_PROPS_BUFFER);
  bool found = false;
  if (props && t->api.hipGetDeviceProperties(props, index) == hipSuccess) {
    for (size_t i = 0; !found && i + 8 < XC_HIP_PROPS_BUFFER; i++) {
      if (props[i] != 'g' || memcmp(props + i, "gfx", 3) != 0) continue;
      if (i && ((props[i - 1] >= 'a' && props[i - 1] <= 'z') || (props[i - 1] >= '0' && props[i - 1] <= '9'))) continue;
      xc_device_caps_t probe;
      memset(&probe, 0, sizeof probe);
      snprintf(probe.name, sizeof probe.name, "%.100s", (const char*)props + i);
      found = xc_rocm_caps_arch(&probe, out, size);
    }
  }
  free(props);
  return found;
}

static xc_status_t rocm_device_caps(void* target, int index, xc_device_caps_t* caps) {
  rocm_target_t* t = target;
  memset(caps, 0, sizeof *caps);
  hipDevice_t d;
  HIP_CHECK(t, t->api.hipDeviceGet(&d, index), "hipDeviceGet");
  HIP_CHECK(t, t->api.hipDeviceGetName(caps->name, (int)sizeof caps->name - 1, d), "hipDeviceGetName");
  char arch[16];
  if (!device_arch(t, index, arch, sizeof arch)) snprintf(arch, sizeof arch, "gfx000");
  xc_rocm_fill_device_caps(caps, arch);
  snprintf(caps->version, sizeof caps->version, "HIP runtime %d.%d, %s", t->runtime_version / 10000000,
           (t->runtime_version / 100000) % 100, arch);
  int v;
  if ((v = attr(t, index, hipDeviceAttributeMultiprocessorCount)) > 0) caps->compute_units = v;
  if ((v = attr(t, index, hipDeviceAttributeWarpSize)) > 0) caps->simd_width = v;
  if ((v = attr(t, index, hipDeviceAttributeMaxThreadsPerBlock)) > 0) caps->max_threads_per_group = v;
  if ((v = attr(t, index, hipDeviceAttributeMaxSharedMemoryPerBlock)) > 0) caps->local_memory_bytes = v;
  size_t total = 0;
  if (t->api.hipDeviceTotalMem(&total, d) == hipSuccess) caps->global_memory_bytes = (int64_t)total;
  return NULL;
}

/* ---- hiprtc (loaded on the first compile) ---- */

static xc_status_t rocm_load_rtc(rocm_target_t* t) {
  const char* override = getenv("XCOMP_HIPRTC_LIBRARY");
  /* ROCm 6 has libhiprtc.so; ROCm 5.x (Debian 12/13) exports hiprtc from
   * libamdhip64.so. */
  static const char* const paths[] = {"libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so",
                                      "/opt/rocm/lib/libhiprtc.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                      "libamdhip64.so", "/opt/rocm/lib/libamdhip64.so"};
  size_t n = sizeof paths / sizeof paths[0];
  for (size_t i = 0; i < (override && *override ? 1 : n); i++) {
    const char* path = override && *override ? override : paths[i];
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    bool all = true;
#define XC_HIPRTC_RESOLVE(ret, name, sym, params) \
  *(void**)&t->rtc.name = dlsym(h, sym);          \
  all = all && t->rtc.name;
    XC_HIPRTC_FUNCTIONS(XC_HIPRTC_RESOLVE)
#undef XC_HIPRTC_RESOLVE
    if (!all) {
      memset(&t->rtc, 0, sizeof t->rtc);
      dlclose(h);
      continue;
    }
    t->rtc_library = h;
    /* The ROCm release: hiprtcVersion reports the compiler's own version
     * (9.0 on ROCm 5.2), hipRuntimeGetVersion the release (50221153 =
     * 5.2.21153) and needs no device. */
    hipError_t (*runtime_version)(int*) = NULL;
    *(void**)&runtime_version = dlsym(h, "hipRuntimeGetVersion");
    void* rt = NULL;
    for (size_t k = 4; !runtime_version && k < n; k++)
      if ((rt = dlopen(paths[k], RTLD_NOW | RTLD_LOCAL)) != NULL) {
        *(void**)&runtime_version = dlsym(rt, "hipRuntimeGetVersion");
        if (!runtime_version) dlclose(rt);
      }
    int v = 0;
    if (runtime_version && runtime_version(&v) == hipSuccess && v > 0)
      t->rtc_version = (v / 10000000) * 100 + (v / 100000) % 100;
    return NULL;
  }
  return xc_error(XC_UNAVAILABLE, "hiprtc not found (%s)",
                  override && *override ? override : "libhiprtc.so, libamdhip64.so");
}

static xc_status_t rocm_rtc(rocm_target_t* t) {
  pthread_mutex_lock(&t->lock);
  if (!t->rtc_loaded) {
    t->rtc_loaded = true;
    t->rtc_error = rocm_load_rtc(t);
  }
  xc_status_t st = t->rtc_error ? xc_error(xc_status_code(t->rtc_error), "%s", xc_status_message(t->rtc_error))
                                : NULL;
  pthread_mutex_unlock(&t->lock);
  return st;
}

/* ---- compile: hiprtc, else hipcc -> code object ---- */

/* Splits flags on blanks into argv (pointers into the copy `buf`). */
static int split_flags(char* buf, const char** argv, int max) {
  int n = 0;
  for (char* p = buf; *p && n < max;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
    if (!*p) break;
    argv[n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
  }
  return n;
}

static char* join(const char* const* argv, int argc) {
  size_t len = 1;
  for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
  char* s = malloc(len);
  if (!s) return NULL;
  s[0] = 0;
  for (int i = 0; i < argc; i++) {
    if (i) strcat(s, " ");
    strcat(s, argv[i]);
  }
  return s;
}

/* Stores the code object (an ELF, or the entry for arch of an offload
 * bundle) in the blob. */
static xc_status_t store_code(const char* arch, const uint8_t* code, size_t size, const char* who,
                              xc_blob_t* out) {
  const uint8_t* elf = code;
  size_t n = size;
  if (size >= 24 && memcmp(code, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0 &&
      !xc_rocm_bundle_extract(code, size, arch, &elf, &n))
    return xc_error(XC_INTERNAL, "rocm: %s produced an offload bundle without a code object for %s", who, arch);
  if (n < 4 || memcmp(elf, "\x7f" "ELF", 4) != 0)
    return xc_error(XC_INTERNAL, "rocm: %s produced %zu bytes that are not an AMDGPU code object", who, n);
  return xc_rocm_blob_make(arch, elf, n, out);
}

static xc_status_t compile_hiprtc(rocm_target_t* t, const char* arch, const xc_kernel_source_t* source,
                                  const char* const* argv, int argc, xc_blob_t* out_blob) {
  char program_name[160];
  snprintf(program_name, sizeof program_name, "%s.hip", source->entry[0] ? source->entry : "kernel");
  hiprtcProgram prog = NULL;
  hiprtcResult r = t->rtc.hiprtcCreateProgram(&prog, source->text, program_name, 0, NULL, NULL);
  if (r != HIPRTC_SUCCESS)
    return xc_error(XC_INTERNAL, "rocm: hiprtcCreateProgram failed: %s (%d)", t->rtc.hiprtcGetErrorString(r), r);
  xc_status_t st = NULL;
  r = t->rtc.hiprtcCompileProgram(prog, argc, argv);
  if (r != HIPRTC_SUCCESS) {
    size_t log_size = 0;
    t->rtc.hiprtcGetProgramLogSize(prog, &log_size);
    char* log = calloc(1, log_size + 1);
    if (log && log_size) t->rtc.hiprtcGetProgramLog(prog, log);
    char* opts = join(argv, argc);
    st = xc_error(r == HIPRTC_ERROR_COMPILATION ? XC_INVALID_ARGUMENT : XC_INTERNAL,
                  "rocm: hiprtc could not compile %s for %s: %s (%d); options \"%s\"; log:\n%s", program_name, arch,
                  t->rtc.hiprtcGetErrorString(r), (int)r, opts ? opts : "", log ? log : "");
    free(opts);
    free(log);
  }
  size_t n = 0;
  if (!st && ((r = t->rtc.hiprtcGetCodeSize(prog, &n)) != HIPRTC_SUCCESS || n == 0))
    st = xc_error(XC_INTERNAL, "rocm: hiprtc produced no code object for %s (%d)", arch, (int)r);
  char* code = st ? NULL : malloc(n);
  if (!st && !code) st = xc_error_oom();
  if (!st && (r = t->rtc.hiprtcGetCode(prog, code)) != HIPRTC_SUCCESS)
    st = xc_error(XC_INTERNAL, "rocm: hiprtcGetCode failed (%d)", (int)r);
  if (!st) st = store_code(arch, (const uint8_t*)code, n, "hiprtc", out_blob);
  free(code);
  t->rtc.hiprtcDestroyProgram(&prog);
  return st;
}

/* Whether `cmd` (a path, or a name on PATH) exists and is executable. */
static bool have_program(const char* cmd) {
  if (strchr(cmd, '/')) return access(cmd, X_OK) == 0;
  const char* path = getenv("PATH");
  if (!path) return false;
  char buf[4096];
  for (const char* p = path; *p;) {
    const char* c = strchr(p, ':');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len && len + strlen(cmd) + 2 < sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, cmd);
      if (access(buf, X_OK) == 0) return true;
    }
    p += len + (c ? 1 : 0);
  }
  return false;
}

/* Runs argv (argv[0] a program on PATH or a path) with stdout into out_path
 * (NULL: the log) and stderr into log_path; *out_ok tells whether it exited
 * with 0. An error only when it could not be started. */
static xc_status_t spawn_logged(const char* const* argv, const char* out_path, const char* log_path, bool* out_ok) {
  *out_ok = false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out_path) posix_spawn_file_actions_addopen(&actions, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  else posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, NULL, (char* const*)argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return xc_error(XC_UNAVAILABLE, "rocm: cannot run %s: %s", argv[0], strerror(rc));
  int status = -1;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *out_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return NULL;
}

/* hipcc MODE --offload-arch=ARCH and the flags (but an --offload-arch of
 * their own) into argv, at most max entries; returns the count. */
static int hipcc_head(const char** argv, const char* hipcc, const char* mode, const char* arch_flag,
                      const char* const* flags, int nflags, int max) {
  int argc = 0;
  argv[argc++] = hipcc;
  argv[argc++] = mode;
  argv[argc++] = arch_flag;
  for (int i = 0; i < nflags && argc < max; i++)
    if (strncmp(flags[i], "--offload-arch=", 15) != 0) argv[argc++] = flags[i];
  return argc;
}

/* Precompiled HIP headers for hipcc. A kernel's own work is small next to
 * parsing <hip/hip_runtime.h>, which each hipcc process does again (about
 * 0.45 s of 0.75 s for a small kernel with Debian's clang 15). The first
 * hipcc compile for an (hipcc, architecture, flags) triple builds a
 * precompiled header of <hip/hip_runtime.h> with the same options into the
 * process's temp folder; later compiles pass -include-pch (the kernel's own
 * #include is then a no-op behind the header's guard; the code is the same
 * but for register choices). A PCH that cannot be built is remembered as
 * such and the kernels compile without it; a kernel that fails with it is
 * compiled again without it before an error is reported. XCOMP_HIP_PCH=0
 * turns it off. */
#define PCH_SLOTS 8
typedef struct {
  char* key;    /* hipcc \n arch \n flags */
  char* path;   /* NULL: could not be built */
} pch_slot_t;
static pthread_mutex_t g_pch_lock = PTHREAD_MUTEX_INITIALIZER;
static pch_slot_t g_pch[PCH_SLOTS];
static int g_pch_count;

static bool pch_enabled(void) {
  const char* e = getenv("XCOMP_HIP_PCH");
  return !(e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0));
}

/* Builds the PCH into `path`; false when hipcc could not. */
static bool pch_build(const char* hipcc, const char* arch_flag, const char* const* flags, int nflags,
                      const char* path) {
  char header[4300], log[4300];
  snprintf(header, sizeof header, "%s.h", path);
  snprintf(log, sizeof log, "%s.log", path);
  static const char text[] = "#include <hip/hip_runtime.h>\n";
  xc_status_t st = xc_targets_write_file(header, text, sizeof text - 1);
  if (st) {
    xc_status_free(st);
    return false;
  }
  const char* argv[96];
  int argc = hipcc_head(argv, hipcc, "--cuda-device-only", arch_flag, flags, nflags, 86);
  /* clang writes the PCH of a syntax-only run to standard output */
  const char* tail[] = {"-x", "hip", "-Xclang", "-emit-pch", "-fsyntax-only", header, NULL};
  for (int i = 0; tail[i]; i++) argv[argc++] = tail[i];
  argv[argc] = NULL;
  bool ok = false;
  st = spawn_logged(argv, path, log, &ok);
  unlink(log); /* the header stays: clang checks that the PCH's source still exists */
  /* a PCH file starts with "CPCH" */
  uint8_t* bytes = NULL;
  size_t n = 0;
  if (!st && ok) st = xc_targets_read_file(path, &bytes, &n);
  ok = !st && ok && n > 4 && memcmp(bytes, "CPCH", 4) == 0;
  xc_status_free(st);
  free(bytes);
  if (!ok) {
    unlink(path);
    unlink(header);
  }
  return ok;
}

/* The PCH for these options (built on first use), or NULL. */
static const char* pch_get(const char* hipcc, const char* arch_flag, const char* const* flags, int nflags) {
  if (!pch_enabled()) return NULL;
  size_t len = strlen(hipcc) + strlen(arch_flag) + 3;
  for (int i = 0; i < nflags; i++) len += strlen(flags[i]) + 1;
  char* key = malloc(len);
  if (!key) return NULL;
  snprintf(key, len, "%s\n%s\n", hipcc, arch_flag);
  for (int i = 0; i < nflags; i++) {
    strcat(key, flags[i]);
    strcat(key, " ");
  }
  const char* result = NULL;
  pthread_mutex_lock(&g_pch_lock);
  int slot = -1;
  for (int i = 0; i < g_pch_count; i++)
    if (strcmp(g_pch[i].key, key) == 0) slot = i;
  /* the temp folder may have been removed (xc_temp_cleanup): build again */
  if (slot >= 0 && g_pch[slot].path && access(g_pch[slot].path, R_OK) != 0) {
    free(g_pch[slot].path);
    g_pch[slot].path = NULL;
    slot = -2 - slot;
  }
  if (slot >= 0) {
    result = g_pch[slot].path;
  } else if (slot < -1 || g_pch_count < PCH_SLOTS) {
    int i = slot < -1 ? -2 - slot : g_pch_count++;
    if (slot == -1) {
      g_pch[i].key = key;
      key = NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/hip-pch-%d-%d.pch", xc_targets_temp_dir(), (int)getpid(), i);
    if (pch_build(hipcc, arch_flag, flags, nflags, path)) g_pch[i].path = strdup(path);
    result = g_pch[i].path;
  }
  pthread_mutex_unlock(&g_pch_lock);
  free(key);
  return result;
}

static xc_status_t compile_hipcc(const char* hipcc, const char* arch, const xc_kernel_source_t* source,
                                 const char* const* flags, int nflags, bool keep, xc_blob_t* out_blob) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/rocm-XXXXXX", xc_targets_temp_dir());
  if (!mkdtemp(dir))
    return xc_error(XC_IO, "rocm: cannot create a temp directory in %s: %s", xc_targets_temp_dir(), strerror(errno));
  char src[4200], obj[4200], log[4200], arch_flag[48];
  snprintf(src, sizeof src, "%s/kernel.hip", dir);
  snprintf(obj, sizeof obj, "%s/kernel.co", dir);
  snprintf(log, sizeof log, "%s/build.log", dir);
  snprintf(arch_flag, sizeof arch_flag, "--offload-arch=%s", arch);
  xc_status_t st = xc_targets_write_file(src, source->text, strlen(source->text));
  const char* pch = st ? NULL : pch_get(hipcc, arch_flag, flags, nflags);
  const char* argv[84];
  int argc = hipcc_head(argv, hipcc, "--genco", arch_flag, flags, nflags, 74);
  int pch_at = argc;
  if (pch) {
    argv[argc++] = "-include-pch";
    argv[argc++] = pch;
  }
  argv[argc++] = "-o";
  argv[argc++] = obj;
  argv[argc++] = src;
  argv[argc] = NULL;
  bool ok = false;
  if (!st) st = spawn_logged(argv, NULL, log, &ok);
  if (!st && !ok && pch) {
    /* again without the PCH, so that the error (or success) is the kernel's own */
    memmove(argv + pch_at, argv + pch_at + 2, (size_t)(argc - pch_at - 1) * sizeof *argv);
    argc -= 2;
    st = spawn_logged(argv, NULL, log, &ok);
  }
  uint8_t* code = NULL;
  size_t n = 0;
  if (!st && !ok) {
    uint8_t* text = NULL;
    size_t tn = 0;
    xc_status_free(xc_targets_read_file(log, &text, &tn));
    char* cmd = join(argv, argc);
    st = xc_error(XC_INVALID_ARGUMENT, "rocm: %s could not compile %s for %s (%s); log:\n%s", hipcc,
                  source->entry[0] ? source->entry : "kernel", arch, cmd ? cmd : "", text ? (char*)text : "");
    free(cmd);
    free(text);
  }
  if (!st) st = xc_targets_read_file(obj, &code, &n);
  if (!st) st = store_code(arch, code, n, "hipcc", out_blob);
  free(code);
  if (!keep) {
    unlink(src);
    unlink(obj);
    unlink(log);
    rmdir(dir);
  }
  return st;
}

static xc_status_t rocm_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                                const xc_compile_options_t* options, xc_blob_t* out_blob) {
  rocm_target_t* t = target;
  if (source->language && strcmp(source->language, "hip") != 0)
    return xc_error(XC_UNSUPPORTED, "rocm target builds HIP C++ (hip), not %s", source->language);
  char arch[16];
  if (!xc_rocm_caps_arch(caps, arch, sizeof arch))
    return xc_error(XC_INVALID_ARGUMENT,
                    "rocm: cannot tell the architecture to compile for from device '%s' (select rocm:gfxNNN)",
                    caps->name);
  char arch_flag[48];
  snprintf(arch_flag, sizeof arch_flag, "--offload-arch=%s", arch);
  /* $XCOMP_HIP_FLAGS replaces the default as options->flags does (e.g. -O1
   * for compile-only checks). */
  const char* flags = options->flags ? options->flags : getenv("XCOMP_HIP_FLAGS");
  if (!flags) flags = "-O3";
  const char* extra = options->extra_flags ? options->extra_flags : "";
  size_t flen = strlen(flags) + strlen(extra) + 2;
  char* fbuf = malloc(flen);
  if (!fbuf) return xc_error_oom();
  snprintf(fbuf, flen, "%s %s", flags, extra);
  const char* argv[72];
  argv[0] = arch_flag;
  int argc = 1 + split_flags(fbuf, argv + 1, 71);

  /* hiprtc, unless the architecture is newer than it (an old hiprtc may
   * crash on a target it does not know) or XCOMP_HIPCC forces hipcc. */
  const xc_rocm_arch_t* a = xc_rocm_arch_find(arch);
  const char* hipcc = getenv("XCOMP_HIPCC");
  bool force_hipcc = hipcc && *hipcc;
  xc_status_t rtc_st = force_hipcc ? xc_error(XC_UNAVAILABLE, "XCOMP_HIPCC is set") : rocm_rtc(t);
  xc_status_t st = NULL;
  bool done = false;
  if (!rtc_st && a && t->rtc_version && t->rtc_version < a->min_hiprtc)
    rtc_st = xc_error(XC_UNAVAILABLE, "hiprtc of ROCm %d.%d predates %s (needs ROCm %d.%d)", t->rtc_version / 100,
                      t->rtc_version % 100, arch, a->min_hiprtc / 100, a->min_hiprtc % 100);
  if (!rtc_st) {
    st = compile_hiprtc(t, arch, source, argv, argc, out_blob);
    g_last_compiler = "hiprtc";
    done = true;
  }
  if (!done) {
    if (!force_hipcc) hipcc = "hipcc";
    if (have_program(hipcc)) {
      st = compile_hipcc(hipcc, arch, source, argv + 1, argc - 1, options->keep_temp, out_blob);
      g_last_compiler = "hipcc";
      if (st && !force_hipcc) st = xc_status_annotate(st, "hipcc used for %s because %s", arch, xc_status_message(rtc_st));
    } else {
      st = xc_error(XC_UNAVAILABLE, "target rocm unavailable: cannot compile for %s: %s, and %s is not installed — " RTC_HINT,
                    arch, xc_status_message(rtc_st), hipcc);
    }
  }
  xc_status_free(rtc_st);
  if (!st) {
    out_blob->options = join(argv, argc);
    if (!out_blob->options) st = xc_error_oom();
  }
  if (!st && options->dump_path) {
    /* the code object, for llvm-objdump (xcomp compile --dump-kernels) */
    const uint8_t* code = NULL;
    size_t n = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s.co", options->dump_path);
    if (xc_rocm_blob_parts(out_blob, NULL, 0, &code, &n)) st = xc_targets_write_file(path, code, n);
  }
  free(fbuf);
  return st; /* on failure the caller releases the blob */
}

/* ---- devices ---- */

static xc_status_t use(rocm_device_t* dev) {
  HIP_CHECK(dev->target, dev->target->api.hipSetDevice(dev->index), "hipSetDevice");
  return NULL;
}

static xc_status_t rocm_device_open(void* target, int index, void** out_device) {
  rocm_target_t* t = target;
  rocm_device_t* dev = calloc(1, sizeof *dev);
  if (!dev) return xc_error_oom();
  dev->target = t;
  dev->index = index;
  xc_status_t st = use(dev);
  hipError_t e;
  if (!st && (e = t->api.hipStreamCreate(&dev->stream)) != hipSuccess) st = hip_fail(t, e, "hipStreamCreate");
  if (st) {
    free(dev);
    return st;
  }
  *out_device = dev;
  return NULL;
}

static void rocm_device_close(void* device) {
  rocm_device_t* dev = device;
  xc_hip_api_t* api = &dev->target->api;
  if (api->hipSetDevice(dev->index) == hipSuccess) {
    api->hipStreamSynchronize(dev->stream);
    api->hipStreamDestroy(dev->stream);
  }
  free(dev);
}

static xc_status_t rocm_synchronize(void* device) {
  rocm_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(dev->target, dev->target->api.hipStreamSynchronize(dev->stream), "hipStreamSynchronize");
  return NULL;
}

/* ---- buffers ---- */

static xc_status_t rocm_buffer_alloc(void* device, size_t size, void** out_buffer) {
  rocm_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  rocm_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  hipError_t e = dev->target->api.hipMalloc(&b->ptr, size ? size : 1);
  if (e != hipSuccess) {
    free(b);
    return xc_status_annotate(hip_fail(dev->target, e, "hipMalloc"), "allocating %zu bytes", size);
  }
  b->size = size;
  *out_buffer = b;
  return NULL;
}

/* Pinned, coherent host memory the device reads and writes through the
 * bus: no copy to see what a kernel wrote once the stream is synchronized. */
static xc_status_t rocm_buffer_alloc_mapped(void* device, size_t size, void** out_buffer, void** out_host) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  if (!t->has_mapped)
    return xc_error(XC_UNSUPPORTED, "rocm: the runtime lacks hipHostMalloc/hipHostGetDevicePointer/hipHostFree");
  if (attr(t, dev->index, hipDeviceAttributeCanMapHostMemory) != 1)
    return xc_error(XC_UNSUPPORTED, "rocm: the device cannot map host memory");
  XC_RETURN_IF_ERROR(use(dev));
  rocm_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return xc_error_oom();
  hipError_t e = t->api.hipHostMalloc(&b->host, size ? size : 1,
                                      hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent);
  if (e != hipSuccess) {
    free(b);
    return xc_status_annotate(hip_fail(t, e, "hipHostMalloc"), "allocating %zu bytes of mapped host memory", size);
  }
  e = t->api.hipHostGetDevicePointer(&b->ptr, b->host, 0);
  if (e != hipSuccess) {
    t->api.hipHostFree(b->host);
    free(b);
    return hip_fail(t, e, "hipHostGetDevicePointer");
  }
  b->size = size;
  *out_buffer = b;
  *out_host = b->host;
  return NULL;
}

static void rocm_buffer_free(void* device, void* buffer) {
  rocm_device_t* dev = device;
  rocm_buffer_t* b = buffer;
  if (dev->target->api.hipSetDevice(dev->index) == hipSuccess) {
    if (b->host) dev->target->api.hipHostFree(b->host);
    else dev->target->api.hipFree(b->ptr);
  }
  free(b);
}

static void* rocm_buffer_host_pointer(void* device, void* buffer) {
  (void)device;
  return ((rocm_buffer_t*)buffer)->host;
}

/* Device addresses: a buffer's device pointer; copies are queued on the
 * device's stream after the launches queued before them. */
static uint64_t rocm_buffer_device_address(void* device, void* buffer) {
  (void)device;
  return (uint64_t)(uintptr_t)((rocm_buffer_t*)buffer)->ptr;
}

static xc_status_t rocm_copy_device(void* device, uint64_t dst, uint64_t src, size_t size) {
  rocm_device_t* dev = device;
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(dev->target,
            dev->target->api.hipMemcpyDtoDAsync((hipDeviceptr_t)(uintptr_t)dst, (hipDeviceptr_t)(uintptr_t)src, size,
                                                dev->stream),
            "hipMemcpyDtoDAsync");
  return NULL;
}

static xc_status_t rocm_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  rocm_device_t* dev = device;
  if (size == 0) return NULL;
  XC_RETURN_IF_ERROR(use(dev));
  rocm_buffer_t* b = buffer;
  if (b->host) { /* mapped: once queued kernels are done, the host writes it */
    HIP_CHECK(dev->target, dev->target->api.hipStreamSynchronize(dev->stream), "hipStreamSynchronize before a copy");
    memcpy((char*)b->host + offset, src, size);
    return NULL;
  }
  HIP_CHECK(dev->target,
            dev->target->api.hipMemcpyHtoDAsync((char*)b->ptr + offset, (void*)src, size, dev->stream),
            "hipMemcpyHtoDAsync");
  HIP_CHECK(dev->target, dev->target->api.hipStreamSynchronize(dev->stream), "hipStreamSynchronize after a copy");
  return NULL;
}

static xc_status_t rocm_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  rocm_device_t* dev = device;
  if (size == 0) return NULL;
  XC_RETURN_IF_ERROR(use(dev));
  rocm_buffer_t* b = buffer;
  if (b->host) {
    HIP_CHECK(dev->target, dev->target->api.hipStreamSynchronize(dev->stream), "hipStreamSynchronize before a copy");
    memcpy(dst, (const char*)b->host + offset, size);
    return NULL;
  }
  HIP_CHECK(dev->target, dev->target->api.hipMemcpyDtoHAsync(dst, (char*)b->ptr + offset, size, dev->stream),
            "hipMemcpyDtoHAsync");
  HIP_CHECK(dev->target, dev->target->api.hipStreamSynchronize(dev->stream), "hipStreamSynchronize after a copy");
  return NULL;
}

/* ---- modules and kernels ---- */

static xc_status_t rocm_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  if (strcmp(blob->format, XC_ROCM_BLOB_FORMAT) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "rocm: a module must be a %s blob, not '%s'", XC_ROCM_BLOB_FORMAT,
                    blob->format);
  char arch[16];
  const uint8_t* code = NULL;
  size_t n = 0;
  if (!xc_rocm_blob_parts(blob, arch, sizeof arch, &code, &n))
    return xc_error(XC_INVALID_ARGUMENT, "rocm: malformed %s blob (%zu bytes)", XC_ROCM_BLOB_FORMAT, blob->size);
  char dev_arch[16];
  if (device_arch(t, dev->index, dev_arch, sizeof dev_arch) && strcmp(dev_arch, arch) != 0)
    return xc_error(XC_UNSUPPORTED, "rocm: the module was compiled for %s; this device is %s (recompile with "
                    "--target rocm:%s)", arch, dev_arch, dev_arch);
  XC_RETURN_IF_ERROR(use(dev));
  /* Aligned copy: the loader reads the ELF in place. */
  void* image = malloc(n);
  if (!image) return xc_error_oom();
  memcpy(image, code, n);
  hipModule_t mod = NULL;
  hipError_t e = t->api.hipModuleLoadData(&mod, image);
  if (e != hipSuccess) {
    free(image);
    return xc_status_annotate(hip_fail(t, e, "hipModuleLoadData"), "loading a code object for %s", arch);
  }
  rocm_module_t* m = calloc(1, sizeof *m);
  if (!m) {
    t->api.hipModuleUnload(mod);
    free(image);
    return xc_error_oom();
  }
  m->module = mod;
  m->image = image;
  *out_module = m;
  return NULL;
}

static void rocm_module_unload(void* device, void* module) {
  rocm_device_t* dev = device;
  rocm_module_t* m = module;
  for (rocm_kernel_t* k = m->kernels; k;) {
    rocm_kernel_t* next = k->next;
    free(k);
    k = next;
  }
  if (dev->target->api.hipSetDevice(dev->index) == hipSuccess) dev->target->api.hipModuleUnload(m->module);
  free(m->image);
  free(m);
}

static xc_status_t rocm_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  rocm_module_t* m = module;
  XC_RETURN_IF_ERROR(use(dev));
  hipFunction_t f = NULL;
  hipError_t e = t->api.hipModuleGetFunction(&f, m->module, name);
  if (e == hipErrorNotFound) return xc_error(XC_NOT_FOUND, "rocm: the module has no kernel '%s'", name);
  if (e != hipSuccess) return hip_fail(t, e, "hipModuleGetFunction");
  rocm_kernel_t* k = calloc(1, sizeof *k);
  if (!k) return xc_error_oom();
  k->function = f;
  if (t->api.hipFuncGetAttribute(&k->max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) != hipSuccess)
    k->max_threads = 0;
  k->next = m->kernels;
  m->kernels = k;
  *out_kernel = k;
  return NULL;
}

static xc_status_t rocm_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  rocm_kernel_t* k = kernel;
  int64_t threads = args->threads[0] * args->threads[1] * args->threads[2];
  if (k->max_threads > 0 && threads > k->max_threads)
    return xc_error(XC_INVALID_ARGUMENT, "rocm: %lld threads per block exceed the limit of %d for this kernel",
                    (long long)threads, k->max_threads);
  for (int i = 0; i < 3; i++)
    if (args->grid[i] > 2147483647 || args->threads[i] > 1024 || args->grid[i] * args->threads[i] > 4294967295LL)
      return xc_error(XC_OUT_OF_RANGE, "rocm: grid %lld x %lld x %lld of blocks %lld x %lld x %lld is beyond the limits",
                      (long long)args->grid[0], (long long)args->grid[1], (long long)args->grid[2],
                      (long long)args->threads[0], (long long)args->threads[1], (long long)args->threads[2]);
  void* ptrs[XC_TARGET_MAX_ARGS];
  long long scalars[XC_TARGET_MAX_ARGS];
  void* params[2 * XC_TARGET_MAX_ARGS];
  int n = 0;
  for (int i = 0; i < args->num_buffers; i++) {
    ptrs[i] = ((rocm_buffer_t*)args->buffers[i])->ptr;
    params[n++] = &ptrs[i];
  }
  for (int i = 0; i < args->num_scalars; i++) {
    scalars[i] = (long long)args->scalars[i];
    params[n++] = &scalars[i];
  }
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(t,
            t->api.hipModuleLaunchKernel(k->function, (unsigned)args->grid[0], (unsigned)args->grid[1],
                                         (unsigned)args->grid[2], (unsigned)args->threads[0],
                                         (unsigned)args->threads[1], (unsigned)args->threads[2], 0, dev->stream,
                                         n ? params : NULL, NULL),
            "hipModuleLaunchKernel");
  return NULL;
}

/* ---- launch graphs: HIP stream capture of a launch sequence ---- */

static xc_status_t rocm_capture_begin(void* device) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  if (!t->has_graphs)
    return xc_error(XC_UNSUPPORTED, "rocm: the HIP runtime lacks the graph-capture functions (HIP 4.3+ needed)");
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(t, t->api.hipStreamBeginCapture(dev->stream, hipStreamCaptureModeThreadLocal), "hipStreamBeginCapture");
  return NULL;
}

static xc_status_t rocm_capture_end(void* device, void** out_graph) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  hipGraph_t graph = NULL;
  hipError_t e = t->api.hipStreamEndCapture(dev->stream, &graph);
  if (e != hipSuccess) {
    if (graph) t->api.hipGraphDestroy(graph);
    return hip_fail(t, e, "hipStreamEndCapture");
  }
  hipGraphExec_t exec = NULL;
  e = t->api.hipGraphInstantiate(&exec, graph, NULL, NULL, 0);
  t->api.hipGraphDestroy(graph); /* the executable graph does not need it */
  if (e != hipSuccess) return hip_fail(t, e, "hipGraphInstantiate");
  *out_graph = exec;
  return NULL;
}

static xc_status_t rocm_graph_launch(void* device, void* graph) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(t, t->api.hipGraphLaunch((hipGraphExec_t)graph, dev->stream), "hipGraphLaunch");
  return NULL;
}

static void rocm_graph_free(void* device, void* graph) {
  rocm_device_t* dev = device;
  if (graph && dev->target->api.hipSetDevice(dev->index) == hipSuccess)
    dev->target->api.hipGraphExecDestroy((hipGraphExec_t)graph);
}

/* ---- events ---- */

static xc_status_t rocm_event_record(void* device, void** out_event) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  rocm_event_t* ev = calloc(1, sizeof *ev);
  if (!ev) return xc_error_oom();
  hipError_t e = t->api.hipEventCreate(&ev->event);
  if (e == hipSuccess) {
    e = t->api.hipEventRecord(ev->event, dev->stream);
    if (e != hipSuccess) t->api.hipEventDestroy(ev->event);
  }
  if (e != hipSuccess) {
    free(ev);
    return hip_fail(t, e, "hipEventCreate/hipEventRecord");
  }
  *out_event = ev;
  return NULL;
}

static xc_status_t rocm_event_elapsed_ms(void* device, void* start, void* end, double* out_ms) {
  rocm_device_t* dev = device;
  rocm_target_t* t = dev->target;
  XC_RETURN_IF_ERROR(use(dev));
  HIP_CHECK(t, t->api.hipEventSynchronize(((rocm_event_t*)end)->event), "hipEventSynchronize");
  float ms = 0;
  HIP_CHECK(t, t->api.hipEventElapsedTime(&ms, ((rocm_event_t*)start)->event, ((rocm_event_t*)end)->event),
            "hipEventElapsedTime");
  *out_ms = ms;
  return NULL;
}

static void rocm_event_free(void* device, void* event) {
  rocm_device_t* dev = device;
  rocm_event_t* ev = event;
  if (dev->target->api.hipSetDevice(dev->index) == hipSuccess) dev->target->api.hipEventDestroy(ev->event);
  free(ev);
}

static void rocm_target_free(void* target) {
  rocm_target_t* t = target;
  xc_status_free(t->load_error);
  xc_status_free(t->rtc_error);
  pthread_mutex_destroy(&t->lock);
  /* The libraries stay loaded: the runtime does not survive being unloaded. */
  free(t);
}

/* ---- emission: the C-family emitter with the HIP dialect ---- */

static bool rocm_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                          char* why, size_t why_size) {
  (void)target;
  return xc_cstyle_supports(&xc_cstyle_dialect_hip, caps, kernel, why, why_size);
}

static xc_status_t rocm_schedule(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout) {
  (void)target;
  return xc_cstyle_schedule(&xc_cstyle_dialect_hip, caps, kernel, limits, flags, NULL, inout);
}

static xc_status_t rocm_emit(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                             const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  (void)target;
  return xc_cstyle_emit(&xc_cstyle_dialect_hip, caps, kernel, knobs, num_knobs, NULL, out_source);
}

static const xc_target_iface_t rocm_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .resolve_arch = xc_rocm_resolve_arch,
    .name = "rocm",
    .description = "AMD GPUs: HIP C++ compiled by hiprtc (or hipcc) to gfx code objects, run through the HIP "
                   "runtime (libamdhip64.so)",
    .probe = rocm_probe,
    .device_count = rocm_device_count,
    .device_caps = rocm_device_caps,
    .supports = rocm_supports,
    .emit = rocm_emit,
    .schedule = rocm_schedule,
    .compile = rocm_compile,
    .device_open = rocm_device_open,
    .device_close = rocm_device_close,
    .buffer_alloc = rocm_buffer_alloc,
    .buffer_free = rocm_buffer_free,
    .buffer_host_pointer = rocm_buffer_host_pointer,
    .buffer_write = rocm_buffer_write,
    .buffer_read = rocm_buffer_read,
    .buffer_device_address = rocm_buffer_device_address,
    .copy_device = rocm_copy_device,
    .module_load = rocm_module_load,
    .module_unload = rocm_module_unload,
    .kernel_get = rocm_kernel_get,
    .launch = rocm_launch,
    .synchronize = rocm_synchronize,
    .event_record = rocm_event_record,
    .event_elapsed_ms = rocm_event_elapsed_ms,
    .event_free = rocm_event_free,
    .capture_begin = rocm_capture_begin,
    .capture_end = rocm_capture_end,
    .graph_launch = rocm_graph_launch,
    .graph_free = rocm_graph_free,
    .target_free = rocm_target_free,
    .buffer_alloc_mapped = rocm_buffer_alloc_mapped,
};

xc_status_t xc_target_rocm_init(int api_version, const xc_target_host_t* host) {
  (void)api_version;
  rocm_target_t* t = calloc(1, sizeof *t);
  if (!t) return xc_error_oom();
  pthread_mutex_init(&t->lock, NULL);
  return host->register_target(host, &rocm_iface, t);
}
