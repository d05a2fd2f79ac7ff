/* The cpu target: C source compiled by the system C compiler into a shared
 * object (the blob), loaded with dlopen, kernels called through the C ABI of
 * docs/targets.md ("C ABI of CPU kernels"):
 *
 *   void xk_NAME(void* const* buffers, const int64_t* scalars,
 *                const int64_t grid[3], int64_t program_begin, int64_t program_end);
 *
 * The runtime spreads the programs over its thread pool (cpu_pool.c): each
 * thread calls the kernel for the programs it claims. Kernels of older
 * modules, without the `<name>_runtime_threads` marker, run an OpenMP loop
 * themselves and are called once with [0, programs). Buffers are host
 * memory.
 *
 * A kernel with packed dot operands (docs/targets.md) also exports
 * `<name>_pack` (same signature) with `<name>_pack_programs` and
 * `<name>_pack_bytes`: each launch first runs its pack programs over the
 * pool, which fill a buffer of the device (grown to the largest kernel's
 * need, kept for the next launch), then the programs, which read it; the
 * buffer is passed after the launch's own buffers.
 *
 * A kernel the scheduler split over the cores (cpu_spread_programs) also
 * exports `<name>_alone`, the kernel under its default knobs, with
 * `<name>_alone_grid`: where all programs run on the calling thread (one
 * pool thread, or a recorded launch that runs alone faster) the runtime
 * calls it instead of the split programs in turn. */
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cstyle/cstyle.h"
#include "cpu_pool.h"
#include "../targets_internal.h"
#include "xcomp/tempdir.h"

extern char** environ;

/* -fno-trapping-math: kernels never read the floating-point exception
 * flags, so arithmetic under a select may be computed for every lane; GCC
 * then if-converts the element loops with selects (masks, clamps in the
 * inline erf) and vectorizes them. Values are unchanged: the flag allows
 * no reassociation or other value-changing transformation. */
#define CPU_DEFAULT_FLAGS "-O3 -march=native -fno-trapping-math -fPIC -shared -fopenmp"

typedef void (*cpu_kernel_fn)(void* const* buffers, const int64_t* scalars, const int64_t grid[3],
                              int64_t program_begin, int64_t program_end);

typedef struct cpu_kernel {
  cpu_kernel_fn fn;
  bool runtime_threads; /* the module's marker: the runtime parallelizes */
  cpu_kernel_fn pack;   /* packed dot operands: their pack entry, or NULL */
  int64_t pack_programs, pack_bytes;
  /* a split kernel's one-thread form (`<name>_alone`, its own pack entry
   * and grid), or NULL */
  struct cpu_kernel* alone;
  int64_t grid[3]; /* the alone form's grid */
  struct cpu_kernel* next;
} cpu_kernel_t;

typedef struct cpu_module {
  void* handle;
  cpu_kernel_t* kernels; /* freed with the module */
} cpu_module_t;

/* ---- capabilities ---- */

static void cpu_model_name(char* out, size_t size) {
  snprintf(out, size, "host cpu");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) == 0) {
        const char* v = strchr(line, ':');
        if (v) {
          v++;
          while (*v == ' ' || *v == '\t') v++;
          snprintf(out, size, "%s", v);
          size_t n = strlen(out);
          while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
          fclose(f);
          return;
        }
      }
    }
    fclose(f);
  }
  struct utsname u;
  if (uname(&u) == 0) snprintf(out, size, "host cpu (%s)", u.machine);
}

static int cpu_simd_f32_lanes(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx")) return 8;
  return 4;
#else
  return 4; /* NEON, and a conservative default elsewhere */
#endif
}

static xc_status_t cpu_device_count(void* target, int* out_count) {
  *out_count = 1;
  return NULL;
}

static xc_status_t cpu_device_caps(void* target, int index, xc_device_caps_t* caps) {
  memset(caps, 0, sizeof *caps);
  cpu_model_name(caps->name, sizeof caps->name);
  snprintf(caps->vendor, sizeof caps->vendor, "host");
  caps->kind = XC_DEVICE_CPU;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  caps->compute_units = cores > 0 ? (int)cores : 1;
  caps->simd_width = cpu_simd_f32_lanes();
  caps->max_threads_per_group = 1; /* a program is one thread; lanes are SIMD */
  long l1 = -1;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
#endif
  caps->local_memory_bytes = l1 > 0 ? l1 : 32 * 1024;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  caps->global_memory_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
  caps->max_buffer_bytes = 0;
  caps->preferred_layout = XC_LAYOUT_NHWC;
  caps->dtypes = XC_DT_ALL;
  caps->has_vendor_blas = false;
  return NULL;
}

/* ---- compile ---- */

/* Splits a command line on blanks into argv entries appended at argv[*n]. */
static void split_words(char* s, char** argv, int* n, int max) {
  for (char* p = s; *p;) {
    while (*p && isspace((unsigned char)*p)) *p++ = 0;
    if (!*p) break;
    if (*n < max) argv[(*n)++] = p;
    while (*p && !isspace((unsigned char)*p)) p++;
  }
}

/* "argv[0] argv[1] ..." for messages (malloc'd; NULL when out of memory). */
static char* join_words(char* const* argv, int argc) {
  size_t n = 1;
  for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
  char* s = malloc(n);
  if (!s) return NULL;
  size_t k = 0;
  for (int i = 0; i < argc; i++) {
    size_t m = strlen(argv[i]);
    if (i) s[k++] = ' ';
    memcpy(s + k, argv[i], m);
    k += m;
  }
  s[k] = 0;
  return s;
}

static bool is_safe_file_name(const char* s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

static void remove_dir(const char* dir, const char* const* files, int n) {
  char path[4096];
  for (int i = 0; i < n; i++) {
    if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) < (int)sizeof path) unlink(path);
  }
  rmdir(dir);
}

static xc_status_t cpu_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                               const xc_compile_options_t* options, xc_blob_t* out_blob) {
  if (source->language && strcmp(source->language, "c") != 0)
    return xc_error(XC_UNSUPPORTED, "cpu target compiles C, not %s", source->language);
  const char* base = is_safe_file_name(source->entry) ? source->entry : "kernel";
  char dir[1024];
  if (snprintf(dir, sizeof dir, "%s/cpu-XXXXXX", xc_targets_temp_dir()) >= (int)sizeof dir)
    return xc_error(XC_IO, "cpu: the temp directory path %s is too long", xc_targets_temp_dir());
  if (!mkdtemp(dir)) return xc_error(XC_IO, "cpu: cannot create a temp directory in %s: %s", xc_targets_temp_dir(), strerror(errno));
  char c_path[1400], so_path[1400], log_path[1400], c_name[160], so_name[160];
  bool fits = snprintf(c_name, sizeof c_name, "%s.c", base) < (int)sizeof c_name &&
              snprintf(so_name, sizeof so_name, "%s.so", base) < (int)sizeof so_name &&
              snprintf(c_path, sizeof c_path, "%s/%s", dir, c_name) < (int)sizeof c_path &&
              snprintf(so_path, sizeof so_path, "%s/%s", dir, so_name) < (int)sizeof so_path &&
              snprintf(log_path, sizeof log_path, "%s/compile.log", dir) < (int)sizeof log_path;
  if (!fits) {
    rmdir(dir);
    return xc_error(XC_IO, "cpu: temp file paths under %s are too long", dir);
  }
  const char* files[] = {c_name, so_name, "compile.log"};
  xc_status_t st = xc_targets_write_file(c_path, source->text, strlen(source->text));
  if (st) {
    remove_dir(dir, files, 3);
    return st;
  }

  const char* cc = options->compiler;
  if (!cc || !*cc) cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  const char* flags = options->flags ? options->flags : getenv("XCOMP_CPU_CFLAGS");
  if (!flags) flags = CPU_DEFAULT_FLAGS;
  const char* extra = options->extra_flags ? options->extra_flags : "";
  size_t line_size = strlen(cc) + strlen(flags) + strlen(extra) + 3;
  char* line = malloc(line_size);
  if (!line) {
    remove_dir(dir, files, 3);
    return xc_error_oom();
  }
  snprintf(line, line_size, "%s %s %s", cc, flags, extra);
  enum { MAX_ARGS = 256 };
  char* argv[MAX_ARGS + 8];
  int argc = 0;
  split_words(line, argv, &argc, MAX_ARGS);
  /* Cross-compiling: code for another machine must not be tuned to this one. */
  if (options->cross) {
    int k = 0;
    for (int i = 0; i < argc; i++)
      if (strncmp(argv[i], "-march=native", 13) != 0 && strncmp(argv[i], "-mtune=native", 13) != 0)
        argv[k++] = argv[i];
    argc = k;
  }
  const char* compiler_name = argc ? argv[0] : "cc";
  argv[argc++] = (char*)"-o";
  argv[argc++] = so_path;
  argv[argc++] = c_path;
  argv[argc] = NULL;

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  /* Its own process group, tracked by the temp folder module: when xcomp
   * dies of SIGTERM or SIGINT, the compiler and what it started (cc1, as,
   * ld) are stopped before the folder goes. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    st = xc_error(rc == ENOENT ? XC_UNAVAILABLE : XC_IO,
                  "cpu: cannot run the C compiler '%s': %s (install gcc or clang, or set CC)", compiler_name,
                  strerror(rc));
    free(line);
    remove_dir(dir, files, 3);
    return st;
  }
  int tracked = xc_temp_track_child(pid);
  char* command = join_words(argv, argc);
  /* Waits without reaping, so the pid stays the compiler's until it is
   * forgotten. */
  siginfo_t info;
  while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  xc_temp_forget_child(tracked);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      status = -1;
      break;
    }
  }
  bool ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    uint8_t* log = NULL;
    size_t log_size = 0;
    xc_status_free(xc_targets_read_file(log_path, &log, &log_size));
    if (log && log_size > 8000) log[8000] = 0;
    bool not_found = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    st = xc_error(not_found ? XC_UNAVAILABLE : XC_INVALID_ARGUMENT,
                  "cpu: compiling %s failed (%s exited with %d; source and log in %s, kept after exit with "
                  "XCOMP_KEEP_TEMP=1)\ncommand: %s\n%s",
                  c_path, compiler_name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, dir, command ? command : "",
                  log ? (char*)log : "");
    free(command);
    free(log);
    free(line);
    return st;
  }
  free(line);
  free(command);
  st = xc_targets_read_file(so_path, &out_blob->bytes, &out_blob->size);
  if (st) return st;
  snprintf(out_blob->format, sizeof out_blob->format, "elf-so");
  if (!options->keep_temp && !getenv("XCOMP_KEEP_TEMP")) remove_dir(dir, files, 3);
  return NULL;
}

/* ---- runtime ---- */

struct cpu_device;

/* A launch as the kernel function takes it. */
typedef struct cpu_call {
  cpu_kernel_t* kernel;
  struct cpu_device* dev; /* its packed-operand buffer (kernel->pack) */
  int num_buffers;
  /* a recorded call's choice between the pool and the calling thread alone:
   * running averages of the two launch times (ns) and the launch count */
  double pool_ns, alone_ns;
  uint32_t launches;
  int64_t grid[3];
  int64_t programs;
  void* buffers[XC_TARGET_MAX_ARGS + 1];
  int64_t scalars[XC_TARGET_MAX_ARGS + 1];
} cpu_call_t;

/* A captured launch sequence: replay calls the kernels directly, skipping
 * the per-launch work of the layers above (argument checks, grid
 * evaluation). */
typedef struct cpu_graph {
  int count, cap;
  cpu_call_t* calls;
} cpu_graph_t;

typedef struct cpu_device {
  cpu_graph_t* recording; /* non-NULL between capture_begin and capture_end */
  /* where kernels pack dot operands (their pack entries), shared by every
   * launch of the device: launches run one at a time */
  void* pack;
  int64_t pack_size;
} cpu_device_t;

static xc_status_t cpu_device_open(void* target, int index, void** out_device) {
  cpu_device_t* dev = calloc(1, sizeof *dev);
  if (!dev) return xc_error_oom();
  *out_device = dev;
  return NULL;
}

static void cpu_graph_free(void* device, void* graph) {
  (void)device;
  cpu_graph_t* g = graph;
  if (!g) return;
  free(g->calls);
  free(g);
}

static void cpu_device_close(void* device) {
  cpu_device_t* dev = device;
  cpu_graph_free(dev, dev->recording);
  free(dev->pack);
  free(dev);
}

static xc_status_t cpu_buffer_alloc(void* device, size_t size, void** out_buffer) {
  /* 64-byte alignment for vector loads; at least one byte so the pointer is unique. */
  size_t rounded = (size + 63) & ~(size_t)63;
  if (rounded < size) return xc_error(XC_RESOURCE_EXHAUSTED, "cpu: buffer of %zu bytes is too large", size);
  void* p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) return xc_error(XC_RESOURCE_EXHAUSTED, "cpu: cannot allocate %zu bytes", size);
  *out_buffer = p;
  return NULL;
}

static void cpu_buffer_free(void* device, void* buffer) { free(buffer); }
static void* cpu_buffer_host_pointer(void* device, void* buffer) { return buffer; }

static xc_status_t cpu_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  memcpy((char*)buffer + offset, src, size);
  return NULL;
}

static xc_status_t cpu_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  memcpy(dst, (const char*)buffer + offset, size);
  return NULL;
}

/* Device addresses are host addresses; launches run when they are queued,
 * so a copy is ordered by running it now. */
static uint64_t cpu_buffer_device_address(void* device, void* buffer) {
  (void)device;
  return (uint64_t)(uintptr_t)buffer;
}

static xc_status_t cpu_copy_device(void* device, uint64_t dst, uint64_t src, size_t size) {
  (void)device;
  memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, size);
  return NULL;
}

/* libgomp must never be unloaded while its worker threads exist: pin it once
 * (a kernel module that pulled it in can then be dlclosed safely). */
static void pin_openmp_runtime(void) {
  static bool pinned;
  if (pinned) return;
  pinned = true;
  void* h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NODELETE | RTLD_GLOBAL);
  if (!h) (void)dlerror();
}

/* The structure of a shared object before the dynamic loader sees it: the
 * loader trusts its headers (a damaged one can trip its assertions and abort
 * the process), so the header, program headers, segments, dynamic section
 * and section headers must lie inside the blob and be of this machine. This
 * refuses damaged files; it cannot make a modified one safe to run (a module
 * is code: docs/runtime.md, "Trust and signatures"). */
static xc_status_t check_elf(const xc_blob_t* blob) {
  const uint8_t* p = blob->bytes;
  size_t n = blob->size;
  Elf64_Ehdr eh;
  if (n < sizeof eh) return xc_error(XC_DATA_LOSS, "cpu: module blob of %zu bytes is too short for an ELF header", n);
  memcpy(&eh, p, sizeof eh);
#if defined(__x86_64__)
  const int machine = EM_X86_64;
#elif defined(__aarch64__)
  const int machine = EM_AARCH64;
#else
  const int machine = eh.e_machine;
#endif
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT ||
      eh.e_type != ET_DYN || eh.e_machine != machine || eh.e_version != EV_CURRENT || eh.e_ehsize != sizeof eh)
    return xc_error(XC_DATA_LOSS, "cpu: module blob is not a 64-bit little-endian shared object for this machine");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64 || eh.e_phoff > n ||
      (size_t)eh.e_phnum * sizeof(Elf64_Phdr) > n - eh.e_phoff)
    return xc_error(XC_DATA_LOSS, "cpu: module blob: program headers lie outside the file");
  if (eh.e_shnum && (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > n ||
                     (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > n - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum))
    return xc_error(XC_DATA_LOSS, "cpu: module blob: section headers lie outside the file");
  int loads = 0;
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, p + eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) continue;
    if (ph.p_offset > n || ph.p_filesz > n - ph.p_offset || ph.p_filesz > ph.p_memsz ||
        (ph.p_align > 1 && ((ph.p_align & (ph.p_align - 1)) || ph.p_offset % ph.p_align != ph.p_vaddr % ph.p_align)))
      return xc_error(XC_DATA_LOSS, "cpu: module blob: segment %d lies outside the file or is misaligned", i);
    loads += ph.p_type == PT_LOAD;
  }
  if (!loads) return xc_error(XC_DATA_LOSS, "cpu: module blob has no loadable segment");
  for (int i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, p + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset))
      return xc_error(XC_DATA_LOSS, "cpu: module blob: section %d lies outside the file", i);
  }
  return NULL;
}

static xc_status_t cpu_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  if (strcmp(blob->format, "elf-so") != 0)
    return xc_error(XC_INVALID_ARGUMENT, "cpu: a module must be an elf-so blob, not '%s'", blob->format);
  if (blob->size < 4 || memcmp(blob->bytes, "\177ELF", 4) != 0)
    return xc_error(XC_DATA_LOSS, "cpu: module blob of %zu bytes is not a shared object", blob->size);
  XC_RETURN_IF_ERROR(check_elf(blob));
  pin_openmp_runtime();
  char path[4096];
  snprintf(path, sizeof path, "%s/module-XXXXXX.so", xc_targets_temp_dir());
  int fd = mkstemps(path, 3);
  if (fd < 0) return xc_error(XC_IO, "cpu: cannot create %s: %s", path, strerror(errno));
  size_t done = 0;
  while (done < blob->size) {
    ssize_t w = write(fd, blob->bytes + done, blob->size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      unlink(path);
      return xc_error(XC_IO, "cpu: error writing %s", path);
    }
    done += (size_t)w;
  }
  close(fd);
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const char* why = handle ? NULL : dlerror();
  xc_status_t st = handle ? NULL : xc_error(XC_INVALID_ARGUMENT, "cpu: cannot load the module: %s", why ? why : "dlopen failed");
  unlink(path); /* the mapping stays valid */
  if (st) return st;
  cpu_module_t* m = calloc(1, sizeof *m);
  if (!m) {
    dlclose(handle);
    return xc_error_oom();
  }
  m->handle = handle;
  *out_module = m;
  return NULL;
}

static void cpu_module_unload(void* device, void* module) {
  cpu_module_t* m = module;
  for (cpu_kernel_t* k = m->kernels; k;) {
    cpu_kernel_t* next = k->next;
    free(k->alone);
    free(k);
    k = next;
  }
  dlclose(m->handle);
  free(m);
}

/* One entry point of a module with its markers and pack entry; NULL when
 * the module has no `name` (or out of memory: *oom). */
static cpu_kernel_t* cpu_entry_load(cpu_module_t* m, const char* name, bool* oom) {
  void* sym = dlsym(m->handle, name);
  if (!sym) return NULL;
  cpu_kernel_t* k = calloc(1, sizeof *k);
  if (!k) {
    *oom = true;
    return NULL;
  }
  *(void**)&k->fn = sym;
  char marker[512];
  if (snprintf(marker, sizeof marker, "%s_runtime_threads", name) < (int)sizeof marker) {
    const int* flag = dlsym(m->handle, marker);
    k->runtime_threads = flag && *flag == 1;
  }
  if (k->runtime_threads && snprintf(marker, sizeof marker, "%s_pack", name) < (int)sizeof marker) {
    void* pack = dlsym(m->handle, marker);
    char count[540], bytes[540];
    bool fits = snprintf(count, sizeof count, "%s_programs", marker) < (int)sizeof count &&
                snprintf(bytes, sizeof bytes, "%s_bytes", marker) < (int)sizeof bytes;
    const int64_t* programs = pack && fits ? dlsym(m->handle, count) : NULL;
    const int64_t* size = programs ? dlsym(m->handle, bytes) : NULL;
    if (size && *programs > 0 && *size > 0) {
      *(void**)&k->pack = pack;
      k->pack_programs = *programs;
      k->pack_bytes = *size;
    }
  }
  return k;
}

static xc_status_t cpu_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  cpu_module_t* m = module;
  (void)dlerror();
  bool oom = false;
  cpu_kernel_t* k = cpu_entry_load(m, name, &oom);
  if (!k) {
    (void)dlerror();
    return oom ? xc_error_oom() : xc_error(XC_NOT_FOUND, "cpu: the module has no kernel '%s'", name);
  }
  char alone[512], grid[540];
  if (k->runtime_threads && snprintf(alone, sizeof alone, "%s_alone", name) < (int)sizeof alone &&
      snprintf(grid, sizeof grid, "%s_grid", alone) < (int)sizeof grid) {
    const int64_t* g = dlsym(m->handle, grid);
    k->alone = g && g[0] > 0 && g[1] > 0 && g[2] > 0 ? cpu_entry_load(m, alone, &oom) : NULL;
    if (k->alone && !k->alone->runtime_threads) {
      free(k->alone);
      k->alone = NULL;
    }
    for (int i = 0; k->alone && i < 3; i++) k->grid[i] = g[i];
  }
  if (oom) {
    free(k);
    (void)dlerror();
    return xc_error_oom();
  }
  (void)dlerror();
  k->next = m->kernels;
  m->kernels = k;
  *out_kernel = k;
  return NULL;
}

static void cpu_call_range(void* arg, int64_t begin, int64_t end) {
  const cpu_call_t* c = arg;
  c->kernel->fn(c->buffers, c->scalars, c->grid, begin, end);
}

static void cpu_pack_range(void* arg, int64_t begin, int64_t end) {
  const cpu_call_t* c = arg;
  c->kernel->pack(c->buffers, c->scalars, c->grid, begin, end);
}

/* The device's pack buffer of at least the kernel's size (launch time, so
 * that replays never allocate). */
static xc_status_t ensure_pack(struct cpu_device* dev, const cpu_kernel_t* k);

/* A launch of a kernel with a pack entry: the pack programs, then the
 * programs, on the pool or (alone) on the calling thread. */
static void cpu_call_packed(cpu_call_t* c, bool alone) {
  c->buffers[c->num_buffers] = c->dev->pack;
  if (alone) {
    c->kernel->pack(c->buffers, c->scalars, c->grid, 0, c->kernel->pack_programs);
    c->kernel->fn(c->buffers, c->scalars, c->grid, 0, c->programs);
  } else {
    xc_cpu_pool_run(cpu_pack_range, c, c->kernel->pack_programs);
    xc_cpu_pool_run(cpu_call_range, c, c->programs);
  }
}

/* All the programs on the calling thread: a split kernel's one-thread form
 * where it has one, else its programs in turn. */
static void cpu_call_alone(cpu_call_t* c) {
  const cpu_kernel_t* k = c->kernel;
  const cpu_kernel_t* a = k->alone;
  if (!a) {
    if (k->pack) cpu_call_packed(c, true);
    else k->fn(c->buffers, c->scalars, c->grid, 0, c->programs);
    return;
  }
  c->buffers[c->num_buffers] = a->pack ? c->dev->pack : NULL;
  if (a->pack) a->pack(c->buffers, c->scalars, k->grid, 0, a->pack_programs);
  a->fn(c->buffers, c->scalars, k->grid, 0, k->grid[0] * k->grid[1] * k->grid[2]);
}

static void cpu_call_run(cpu_call_t* c) {
  if (c->kernel->alone && xc_cpu_pool_threads() <= 1) cpu_call_alone(c);
  else if (c->kernel->pack) cpu_call_packed(c, false);
  else if (c->kernel->runtime_threads) xc_cpu_pool_run(cpu_call_range, (void*)c, c->programs);
  else c->kernel->fn(c->buffers, c->scalars, c->grid, 0, c->programs);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Whether spreading a kernel over threads pays depends on its work (a few
 * microseconds of it do not cover waking a worker) and on the machine (on
 * a core shared with other jobs a worker may be descheduled holding a
 * program, and the launch waits for it). A recorded call therefore measures
 * both ways and keeps the faster: the first 8 replays alternate, then it
 * runs the way whose running average (weight 1/8 for a new launch) is
 * lower, trying the other way on every 32nd replay (every 256th when it was
 * more than twice as slow) so that a change (the machine got busy or
 * quiet) is seen. */
static void cpu_call_run_adaptive(cpu_call_t* c) {
  if (!c->kernel->runtime_threads || c->programs <= 1 || xc_cpu_pool_threads() <= 1) {
    cpu_call_run(c);
    return;
  }
  uint32_t n = c->launches++;
  bool best_alone = c->alone_ns < c->pool_ns;
  /* the other way is retried less often the more it lost by */
  double ratio = best_alone ? c->pool_ns / (c->alone_ns + 1) : c->alone_ns / (c->pool_ns + 1);
  uint32_t every = ratio > 2 ? 256 : 32;
  bool alone = n < 8 ? (n & 1) : (n % every == 0) ? !best_alone : best_alone;
  double t0 = now_ns();
  if (alone) cpu_call_alone(c);
  else if (c->kernel->pack) cpu_call_packed(c, false);
  else xc_cpu_pool_run(cpu_call_range, c, c->programs);
  double dt = now_ns() - t0;
  double* avg = alone ? &c->alone_ns : &c->pool_ns;
  /* a launch the OS interrupted (3x the average) counts as 3x: the choice
   * follows the usual time of each way, not its rare stalls */
  if (*avg > 0 && dt > 3 * *avg) dt = 3 * *avg;
  *avg = *avg == 0 ? dt : *avg + (dt - *avg) / 8;
}

/* Runs every program: over the pool's threads, or in one call for a kernel
 * that spreads them itself. */
static xc_status_t cpu_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  cpu_device_t* dev = device;
  cpu_call_t one, *c = &one;
  XC_RETURN_IF_ERROR(ensure_pack(dev, kernel));
  if (dev->recording) {
    cpu_graph_t* g = dev->recording;
    if (g->count == g->cap) {
      int cap = g->cap ? 2 * g->cap : 16;
      cpu_call_t* calls = realloc(g->calls, sizeof *calls * (size_t)cap);
      if (!calls) return xc_error_oom();
      g->calls = calls;
      g->cap = cap;
    }
    c = &g->calls[g->count++];
  }
  c->kernel = kernel;
  c->dev = dev;
  c->num_buffers = args->num_buffers;
  c->pool_ns = c->alone_ns = 0;
  c->launches = 0;
  for (int i = 0; i < 3; i++) c->grid[i] = args->grid[i];
  c->programs = args->grid[0] * args->grid[1] * args->grid[2]; /* checked by the caller */
  for (int i = 0; i < args->num_buffers; i++) c->buffers[i] = args->buffers[i];
  c->buffers[args->num_buffers] = NULL;
  for (int i = 0; i < args->num_scalars; i++) c->scalars[i] = args->scalars[i];
  c->scalars[args->num_scalars] = 0;
  if (!dev->recording) cpu_call_run(c);
  return NULL;
}

static xc_status_t ensure_pack(cpu_device_t* dev, const cpu_kernel_t* k) {
  if (k->alone) XC_RETURN_IF_ERROR(ensure_pack(dev, k->alone));
  if (!k->pack || k->pack_bytes <= dev->pack_size) return NULL;
  size_t size = ((size_t)k->pack_bytes + 63) & ~(size_t)63;
  void* p = aligned_alloc(64, size);
  if (!p) return xc_error(XC_RESOURCE_EXHAUSTED, "cpu: cannot allocate %lld bytes for packed operands",
                          (long long)k->pack_bytes);
  free(dev->pack);
  dev->pack = p;
  dev->pack_size = k->pack_bytes;
  return NULL;
}

static xc_status_t cpu_capture_begin(void* device) {
  cpu_device_t* dev = device;
  dev->recording = calloc(1, sizeof *dev->recording);
  return dev->recording ? NULL : xc_error_oom();
}

static xc_status_t cpu_capture_end(void* device, void** out_graph) {
  cpu_device_t* dev = device;
  *out_graph = dev->recording;
  dev->recording = NULL;
  return NULL;
}

static xc_status_t cpu_graph_launch(void* device, void* graph) {
  (void)device;
  cpu_graph_t* g = graph;
  for (int i = 0; i < g->count; i++) cpu_call_run_adaptive(&g->calls[i]);
  return NULL;
}

/* Kernel emission: the C-family emitter with the c dialect (targets/cstyle/). */
static bool cpu_supports(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                          char* why, size_t why_size) {
  (void)target;
  return xc_cstyle_supports(&xc_cstyle_dialect_c, caps, kernel, why, why_size);
}

/* A default schedule whose grid has fewer programs than the device has
 * cores (a 1x1 conv over the 36 pixels of a 6x6 map and 32 channels is one
 * program) leaves cores idle: the pool has nothing to give them. Smaller
 * tiles of one knob spread it, where a candidate does: of the single-knob
 * changes that add programs, the one with the shortest critical path,
 * ceil(programs / cores) times that knob's tile (the other tiles
 * unchanged), when it is shorter than the default's; ties go to fewer
 * programs. So 36 pixels x 32 channels becomes two programs of 18 pixels
 * (the lowering lists half the pixels as a candidate), 9 pixels x 112
 * channels two of 56 channels. Kernels of at least `cores` programs (every
 * large one) keep their defaults; tuned and overridden knobs are never
 * changed (the caller passes XC_SCHEDULE_KEEP_KNOBS). */
static void cpu_spread_programs(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                                const xc_tiled_limits_t* limits, int64_t* knobs) {
  int64_t cores = caps->compute_units;
  for (int round = 0; round < 4; round++) {
    int64_t programs = xc_tiled_static_programs(k, knobs, limits);
    if (programs <= 0 || programs >= cores) return;
    int best = -1;
    int64_t best_value = 0, best_programs = 0;
    double best_cost = 0;
    for (int i = 0; i < k->num_knobs; i++) {
      const xc_tiled_knob_t* kn = &k->knobs[i];
      if (kn->kind != XC_KNOB_TILE) continue;
      int64_t keep = knobs[i];
      double base = (double)((programs + cores - 1) / cores) * (double)keep;
      for (int c = 0; c < kn->num_candidates; c++) {
        int64_t v = kn->candidates[c];
        if (v >= keep) continue;
        knobs[i] = v;
        int64_t p = xc_tiled_static_programs(k, knobs, limits);
        xc_status_t bad = p > programs ? xc_tiled_knobs_check(k, knobs, limits) : NULL;
        knobs[i] = keep;
        if (p <= programs || bad) {
          xc_status_free(bad);
          continue;
        }
        double cost = (double)((p + cores - 1) / cores) * (double)v / base;
        if (cost >= 1.0) continue;
        if (best < 0 || cost < best_cost || (cost == best_cost && p < best_programs))
          best = i, best_value = v, best_programs = p, best_cost = cost;
      }
    }
    if (best < 0) return;
    knobs[best] = best_value;
  }
}

static xc_status_t cpu_schedule(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout) {
  (void)target;
  if (!(flags & (XC_SCHEDULE_KEEP_KNOBS | XC_SCHEDULE_FOLLOW)) && caps && caps->compute_units > 1 && kernel &&
      inout && inout->num_knobs == kernel->num_knobs) {
    xc_status_t bad = xc_tiled_knobs_check(kernel, inout->knobs, limits);
    if (!bad) cpu_spread_programs(caps, kernel, limits, inout->knobs);
    xc_status_free(bad);
  }
  return xc_cstyle_schedule(&xc_cstyle_dialect_c, caps, kernel, limits, flags, NULL, inout);
}

/* Whether `values` are the split cpu_spread_programs makes of the kernel's
 * defaults on these caps; then *out_defaults are those defaults and
 * out_grid their (static) grid. A tuned schedule that happens to equal the
 * split counts as one: its one-thread form is the default schedule. */
static bool cpu_split_of_defaults(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* values,
                                  int64_t* out_defaults, int64_t out_grid[3]) {
  if (!caps || caps->compute_units <= 1 || k->num_knobs <= 0 || k->num_knobs > XC_TILED_MAX_SCHED_KNOBS) return false;
  xc_tiled_limits_t limits; /* the session's for this device */
  xc_target_tiled_limits(caps, false, &limits);
  int64_t split[XC_TILED_MAX_SCHED_KNOBS];
  for (int i = 0; i < k->num_knobs; i++) out_defaults[i] = split[i] = k->knobs[i].default_value;
  xc_status_t bad = xc_tiled_knobs_check(k, out_defaults, &limits);
  if (bad) {
    xc_status_free(bad);
    return false;
  }
  cpu_spread_programs(caps, k, &limits, split);
  size_t bytes = sizeof *split * (size_t)k->num_knobs;
  if (memcmp(split, values, bytes) != 0 || memcmp(split, out_defaults, bytes) == 0) return false;
  int64_t grid[XC_TILED_MAX_GRID];
  if (!xc_tiled_static_grid(k, out_defaults, &limits, grid)) return false;
  for (int i = 0; i < 3; i++) out_grid[i] = grid[i]; /* XC_TILED_MAX_GRID is 3 */
  return true;
}

/* Appends to a split kernel's source its one-thread form (docs/targets.md,
 * "C ABI of CPU kernels"): `<entry>_alone`, the kernel under its default
 * knobs, with `<entry>_alone_grid`. The runtime calls it where all the
 * programs run on the calling thread (one pool thread, or a launch that
 * runs alone faster), so the split costs nothing there: its programs in
 * turn were 10-15% slower than the one program they replace. */
static xc_status_t cpu_emit_alone(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* defaults,
                                  const int64_t grid[3], xc_kernel_source_t* inout) {
  xc_cstyle_options_t options = {.pack_operands = true, .entry_suffix = "_alone"};
  xc_tiled_schedule_t plan;
  XC_RETURN_IF_ERROR(xc_cstyle_plan(&xc_cstyle_dialect_c, caps, k, defaults, NULL, &options, &plan));
  options.schedule = &plan;
  xc_knob_t knobs[XC_TILED_MAX_SCHED_KNOBS];
  for (int i = 0; i < k->num_knobs; i++) knobs[i] = (xc_knob_t){k->knobs[i].name, defaults[i]};
  xc_kernel_source_t alone;
  XC_RETURN_IF_ERROR(xc_cstyle_emit(&xc_cstyle_dialect_c, caps, k, knobs, k->num_knobs, &options, &alone));
  size_t a = strlen(inout->text), b = strlen(alone.text), tail = 2 * sizeof alone.entry + 128;
  char* text = malloc(a + b + tail);
  if (!text) {
    xc_kernel_source_release(&alone);
    return xc_error_oom();
  }
  memcpy(text, inout->text, a);
  memcpy(text + a, alone.text, b);
  snprintf(text + a + b, tail,
           "extern const int64_t %s_grid[3];\nconst int64_t %s_grid[3] = {%" PRId64 ", %" PRId64 ", %" PRId64 "};\n",
           alone.entry, alone.entry, grid[0], grid[1], grid[2]);
  xc_kernel_source_release(&alone);
  free((char*)inout->text);
  inout->text = text;
  return NULL;
}

static xc_status_t cpu_emit(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                             const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source) {
  (void)target;
  /* this runtime runs pack entries: dot operands may be packed */
  xc_cstyle_options_t options = {.pack_operands = true};
  XC_RETURN_IF_ERROR(xc_cstyle_emit(&xc_cstyle_dialect_c, caps, kernel, knobs, num_knobs, &options, out_source));
  int64_t values[XC_TILED_MAX_SCHED_KNOBS], defaults[XC_TILED_MAX_SCHED_KNOBS], grid[3];
  if (kernel->num_knobs <= 0 || kernel->num_knobs > XC_TILED_MAX_SCHED_KNOBS) return NULL;
  xc_status_t st = xc_cstyle_resolve_knobs(kernel, knobs, num_knobs, values);
  if (!st && cpu_split_of_defaults(caps, kernel, values, defaults, grid))
    st = cpu_emit_alone(caps, kernel, defaults, grid, out_source);
  if (st) xc_kernel_source_release(out_source);
  return st;
}

static const xc_target_iface_t cpu_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .name = "cpu",
    .description = "host CPU: C compiled by $CC (default cc) into a shared object, a thread pool over programs",
    .probe = NULL,
    .device_count = cpu_device_count,
    .device_caps = cpu_device_caps,
    .supports = cpu_supports,
    .emit = cpu_emit,
    .schedule = cpu_schedule,
    .compile = cpu_compile,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_host_pointer = cpu_buffer_host_pointer,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .buffer_device_address = cpu_buffer_device_address,
    .copy_device = cpu_copy_device,
    .module_load = cpu_module_load,
    .module_unload = cpu_module_unload,
    .kernel_get = cpu_kernel_get,
    .launch = cpu_launch,
    .synchronize = NULL,
    .event_record = NULL,
    .event_elapsed_ms = NULL,
    .event_free = NULL,
    .target_free = NULL,
    .capture_begin = cpu_capture_begin,
    .capture_end = cpu_capture_end,
    .graph_launch = cpu_graph_launch,
    .graph_free = cpu_graph_free,
};

xc_status_t xc_target_cpu_init(int api_version, const xc_target_host_t* host) {
  return host->register_target(host, &cpu_iface, NULL);
}
