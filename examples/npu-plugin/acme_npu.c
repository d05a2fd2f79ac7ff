/* acme: an out-of-tree xcomp target for a pretend NPU, the "ACME NPU2".
 *
 * Code generation is xcomp's C-family emitter, reached through the host table
 * (host->emit_kernel) with a dialect of our own: the C base with an "acme-c"
 * name, an ACME_KERNEL qualifier on entries and our own entry writer (a plain
 * loop over the programs it is given: no OpenMP). Compiling runs the system C
 * compiler into a shared object; the "device" is the host: its memory is host
 * memory and its NPU_THREADS cores are pthreads, each running a slice of the
 * programs of a launch. A real NPU plugin would call its vendor's compiler,
 * allocator and dispatch where this one calls cc, malloc and pthreads.
 *
 * It links nothing of xcomp (statuses, the emitter and the temp directory all
 * come from the host table): only xcomp's installed headers are needed. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xcomp/emit.h>
#include <xcomp/target.h>

#define EXPORT __attribute__((visibility("default")))
#define NPU_THREADS 4
/* -fopenmp-simd honours the emitter's `#pragma omp simd` without an OpenMP
 * runtime: the kernels need no libgomp. */
#define ACME_DEFAULT_CFLAGS "-O2 -fno-trapping-math -fopenmp-simd -fPIC -shared"

extern char** environ;
static const xc_target_host_t* host;

/* ---- the dialect: C with our entry ABI ----
 *   ACME_KERNEL void xk_NAME(void* const* buffers, const int64_t* scalars,
 *                            const int64_t grid[3], int64_t begin, int64_t end)
 * runs programs [begin, end) of the launch. */
static void acme_write_lines(xc_emit_writer_t* w, const char* s, const char* indent) {
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    host->emit_printf(w, "%s%.*s\n", indent, len, s);
    s += len + (nl ? 1 : 0);
  }
}

static void acme_write_entry(xc_emit_writer_t* w, const xc_emit_entry_t* e, void* user) {
  const xc_tiled_kernel_t* k = e->kernel;
  host->emit_printf(w, "void %s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                       "        int64_t begin, int64_t end) {\n", e->entry);
  int nb = 0, ns = 0;
  char name[80];
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    host->emit_param_name(p, name, sizeof name);
    if (p->type.kind == XC_TILED_MEMREF) {
      const char* c = p->type.role == XC_ROLE_IN ? "const " : "";
      const char* t = e->param_types[i];
      host->emit_printf(w, "  %s%s* %s = (%s%s*)buffers[%d];\n", c, t, name, c, t, nb++);
    } else {
      host->emit_printf(w, "  const int64_t %s = scalars[%d];\n", name, ns++);
    }
  }
  host->emit_printf(w, "  (void)scalars;\n  for (int64_t p = begin; p < end; p++) {\n"
                       "    const int64_t pid0 = p %% grid[0], pid1 = (p / grid[0]) %% grid[1];\n"
                       "    const int64_t pid2 = p / (grid[0] * grid[1]);\n"
                       "    (void)pid0, (void)pid1, (void)pid2;\n");
  acme_write_lines(w, e->decls, "    ");
  acme_write_lines(w, e->body, "  ");
  host->emit_printf(w, "  }\n}\n");
}

static const xc_emit_dialect_t acme_dialect = {
    .base = XC_EMIT_BASE_C,
    .name = "acme-c",
    .kernel_prefix = "ACME_KERNEL",
    .prelude_extra = "#define ACME_KERNEL __attribute__((visibility(\"default\")))\n",
    .write_entry = acme_write_entry,
};

/* ---- capabilities ---- */
static xc_status_t acme_device_count(void* t, int* out) { *out = 1; return NULL; }

static xc_status_t acme_device_caps(void* t, int index, xc_device_caps_t* c) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "ACME NPU2 (host emulation)");
  snprintf(c->vendor, sizeof c->vendor, "ACME Silicon");
  snprintf(c->version, sizeof c->version, "npu2-sim 1.0");
  c->kind = XC_DEVICE_NPU;
  c->compute_units = NPU_THREADS;
  c->simd_width = 8;
  c->max_threads_per_group = 1;          /* a program is one core's thread */
  c->local_memory_bytes = 64 * 1024;     /* per-core scratchpad */
  c->global_memory_bytes = (int64_t)1 << 30;
  c->preferred_layout = XC_LAYOUT_NHWC;
  c->dtypes = XC_DT_ALL;
  return NULL;
}

/* ---- code generation: the emitter through the host table ---- */
static bool acme_supports(void* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k, char* why,
                          size_t n) {
  return host->emit_supports(&acme_dialect, caps, k, why, n);
}

/* The scheduler: the emitter's own, made legal under the device's limits. */
static xc_status_t acme_schedule(void* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                                 const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* s) {
  return host->emit_schedule(&acme_dialect, caps, k, limits, flags, s);
}

static xc_status_t acme_emit(void* t, const xc_device_caps_t* caps, const struct xc_tiled_kernel* k,
                             const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out) {
  return host->emit_kernel(&acme_dialect, caps, k, knobs, num_knobs, NULL, out);
}

static xc_status_t read_file(const char* path, xc_blob_t* blob) {
  FILE* f = fopen(path, "rb");
  if (!f) return host->error(XC_IO, "acme: cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  blob->bytes = malloc(n > 0 ? (size_t)n : 1);  /* freed by xcomp (xc_blob_release: free) */
  blob->size = blob->bytes && n > 0 ? fread(blob->bytes, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!blob->bytes || (long)blob->size != n) return host->error(XC_IO, "acme: cannot read %s", path);
  snprintf(blob->format, sizeof blob->format, "acme-elf");
  return NULL;
}

static xc_status_t acme_compile(void* t, const xc_device_caps_t* caps, const xc_kernel_source_t* src,
                                const xc_compile_options_t* o, xc_blob_t* out) {
  if (!src->language || strcmp(src->language, "acme-c") != 0)
    return host->error(XC_UNSUPPORTED, "acme compiles acme-c, not %s", src->language ? src->language : "?");
  char dir[512], c_path[600], so_path[600];
  snprintf(dir, sizeof dir, "%s/acme-XXXXXX", host->temp_dir());
  if (!mkdtemp(dir)) return host->error(XC_IO, "acme: cannot create a temp directory: %s", strerror(errno));
  snprintf(c_path, sizeof c_path, "%s/k.c", dir);
  snprintf(so_path, sizeof so_path, "%s/k.so", dir);
  FILE* f = fopen(c_path, "w");
  if (!f || fputs(src->text, f) < 0 || fclose(f) != 0) return host->error(XC_IO, "acme: cannot write %s", c_path);
  const char* cc = o->compiler && *o->compiler ? o->compiler : getenv("CC") ? getenv("CC") : "cc";
  const char* flags = o->flags ? o->flags : getenv("ACME_CFLAGS") ? getenv("ACME_CFLAGS") : ACME_DEFAULT_CFLAGS;
  char line[2048];
  snprintf(line, sizeof line, "%s %s %s -o %s %s", cc, flags, o->extra_flags ? o->extra_flags : "", so_path, c_path);
  char* argv[128];
  int argc = 0;
  for (char* s = strtok(line, " \t"); s && argc < 127; s = strtok(NULL, " \t")) argv[argc++] = s;
  argv[argc] = NULL;
  pid_t pid;
  int status = -1, rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
  if (rc != 0) return host->error(XC_UNAVAILABLE, "acme: cannot run the C compiler %s: %s", argv[0], strerror(rc));
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return host->error(XC_INVALID_ARGUMENT, "acme: compiling %s failed (source kept in %s)", src->entry, dir);
  xc_status_t st = read_file(so_path, out);
  if (!o->keep_temp) {
    unlink(c_path);
    unlink(so_path);
    rmdir(dir);
  }
  return st;
}

/* ---- runtime: host memory, modules are shared objects, cores are threads ---- */
typedef void (*acme_fn)(void* const*, const int64_t*, const int64_t*, int64_t, int64_t);
typedef struct acme_kernel { acme_fn fn; struct acme_kernel* next; } acme_kernel_t;
typedef struct acme_module { void* handle; acme_kernel_t* kernels; } acme_module_t;

static xc_status_t acme_device_open(void* t, int index, void** out) { *out = (void*)1; return NULL; }
static void acme_device_close(void* d) {}

static xc_status_t acme_buffer_alloc(void* d, size_t size, void** out) {
  *out = aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  return *out ? NULL : host->error(XC_RESOURCE_EXHAUSTED, "acme: cannot allocate %zu bytes", size);
}
static void acme_buffer_free(void* d, void* b) { free(b); }
static void* acme_buffer_host_pointer(void* d, void* b) { return b; }
static xc_status_t acme_buffer_write(void* d, void* b, size_t off, const void* src, size_t n) {
  memcpy((char*)b + off, src, n);
  return NULL;
}
static xc_status_t acme_buffer_read(void* d, void* b, size_t off, void* dst, size_t n) {
  memcpy(dst, (const char*)b + off, n);
  return NULL;
}

static xc_status_t acme_module_load(void* d, const xc_blob_t* blob, void** out) {
  if (strcmp(blob->format, "acme-elf") != 0)
    return host->error(XC_INVALID_ARGUMENT, "acme: expected an acme-elf blob, got '%s'", blob->format);
  char path[600];
  snprintf(path, sizeof path, "%s/acme-module-XXXXXX.so", host->temp_dir());
  int fd = mkstemps(path, 3);
  if (fd < 0) return host->error(XC_IO, "acme: cannot create %s: %s", path, strerror(errno));
  bool ok = write(fd, blob->bytes, blob->size) == (ssize_t)blob->size;
  close(fd);
  void* h = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  unlink(path);
  if (!h) return host->error(XC_INVALID_ARGUMENT, "acme: cannot load the module: %s", ok ? dlerror() : "write failed");
  acme_module_t* m = calloc(1, sizeof *m);
  if (!m) {
    dlclose(h);
    return host->error(XC_RESOURCE_EXHAUSTED, "acme: out of memory");
  }
  m->handle = h;
  *out = m;
  return NULL;
}

static void acme_module_unload(void* d, void* module) {
  acme_module_t* m = module;
  for (acme_kernel_t *k = m->kernels, *next; k; k = next) {
    next = k->next;
    free(k);
  }
  dlclose(m->handle);
  free(m);
}

static xc_status_t acme_kernel_get(void* d, void* module, const char* name, void** out) {
  acme_module_t* m = module;
  void* sym = dlsym(m->handle, name);
  if (!sym) return host->error(XC_NOT_FOUND, "acme: the module has no kernel '%s'", name);
  acme_kernel_t* k = calloc(1, sizeof *k);
  if (!k) return host->error(XC_RESOURCE_EXHAUSTED, "acme: out of memory");
  *(void**)&k->fn = sym;
  k->next = m->kernels;
  m->kernels = k;
  *out = k;
  return NULL;
}

typedef struct acme_slice {
  acme_fn fn;
  const xc_launch_args_t* a;
  int64_t begin, end;
} acme_slice_t;

static void* acme_core(void* p) {
  acme_slice_t* s = p;
  s->fn(s->a->buffers, s->a->scalars, s->a->grid, s->begin, s->end);
  return NULL;
}

/* Programs are spread over the cores in contiguous slices; the launch
 * returns when every core is done (launches are synchronous). */
static xc_status_t acme_launch(void* d, void* kernel, const xc_launch_args_t* a) {
  int64_t programs = a->grid[0] * a->grid[1] * a->grid[2];
  int cores = programs < NPU_THREADS ? (int)programs : NPU_THREADS;
  acme_slice_t s[NPU_THREADS];
  pthread_t th[NPU_THREADS];
  bool started[NPU_THREADS] = {false};
  for (int i = 0; i < cores; i++) {
    s[i] = (acme_slice_t){((acme_kernel_t*)kernel)->fn, a, programs * i / cores, programs * (i + 1) / cores};
    if (i > 0) started[i] = pthread_create(&th[i], NULL, acme_core, &s[i]) == 0;
  }
  for (int i = 1; i < cores; i++)
    if (!started[i]) acme_core(&s[i]);  /* no thread: run the slice here */
  if (cores > 0) acme_core(&s[0]);
  for (int i = 1; i < cores; i++)
    if (started[i]) pthread_join(th[i], NULL);
  return NULL;
}

static const xc_target_iface_t acme_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .name = "acme",
    .description = "ACME NPU2 (pretend NPU: C through xcomp's emitter, host memory, 4 cores as threads)",
    .device_count = acme_device_count,
    .device_caps = acme_device_caps,
    .supports = acme_supports,
    .emit = acme_emit,
    .schedule = acme_schedule,
    .compile = acme_compile,
    .device_open = acme_device_open,
    .device_close = acme_device_close,
    .buffer_alloc = acme_buffer_alloc,
    .buffer_free = acme_buffer_free,
    .buffer_host_pointer = acme_buffer_host_pointer,
    .buffer_write = acme_buffer_write,
    .buffer_read = acme_buffer_read,
    .module_load = acme_module_load,
    .module_unload = acme_module_unload,
    .kernel_get = acme_kernel_get,
    .launch = acme_launch,
};

XC_TARGET_PLUGIN_DEFINE_VERSION()

EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* h);
EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* h) {
  if (api_version != XC_TARGET_API_VERSION || h->api_version < 3 || h->size < sizeof *h)
    return h->error(XC_UNSUPPORTED, "acme: built for target API %d, host has %d", XC_TARGET_API_VERSION,
                    api_version);
  host = h;
  return h->register_target(h, &acme_iface, NULL);
}
