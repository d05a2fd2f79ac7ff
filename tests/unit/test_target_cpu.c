/* The cpu target through xcomp/target.h: hand-written kernels in the cpu C
 * ABI (docs/targets.md) compiled by the system compiler, loaded and launched;
 * compiler errors, missing compilers and missing kernels as statuses. */
#include <sys/stat.h>
#include <unistd.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "../../targets/cpu/cpu_pool.h"
#include "test.h"
#include "../../driver/driver_internal.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

/* Ragged vector add: program p handles elements [64p, 64p+64) ∩ [0, n). */
static const char* vector_add_source =
    "#include <stdint.h>\n"
    "void xk_vadd(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
    "             int64_t program_begin, int64_t program_end) {\n"
    "  const float* a = buffers[0]; const float* b = buffers[1]; float* c = buffers[2];\n"
    "  int64_t n = scalars[0];\n"
    "  #pragma omp parallel for\n"
    "  for (int64_t p = program_begin; p < program_end; p++)\n"
    "    for (int64_t i = p * 64; i < p * 64 + 64 && i < n; i++) c[i] = a[i] + b[i];\n"
    "}\n";

/* C[M,N] = A[M,K] B[K,N]; a 2-D grid (N, M), one output per program. */
static const char* gemm_source =
    "#include <stdint.h>\n"
    "void xk_gemm(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
    "             int64_t program_begin, int64_t program_end) {\n"
    "  const float* A = buffers[0]; const float* B = buffers[1]; float* C = buffers[2];\n"
    "  int64_t N = scalars[1], K = scalars[2];\n"
    "  #pragma omp parallel for\n"
    "  for (int64_t p = program_begin; p < program_end; p++) {\n"
    "    int64_t j = p % grid[0], i = (p / grid[0]) % grid[1];\n"
    "    float acc = 0;\n"
    "    for (int64_t k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];\n"
    "    C[i * N + j] = acc;\n"
    "  }\n"
    "}\n";

/* A kernel of the current ABI (the runtime_threads marker): the runtime's
 * pool calls it per program; each program counts its visits in hits[p]. */
static const char* count_source =
    "#include <stdint.h>\n"
    "const int xk_count_runtime_threads = 1;\n"
    "void xk_count(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
    "              int64_t program_begin, int64_t program_end) {\n"
    "  int32_t* hits = buffers[0];\n"
    "  for (int64_t p = program_begin; p < program_end; p++) {\n"
    "    volatile int64_t spin = 0; /* some work, so that the threads overlap */\n"
    "    for (int64_t i = 0; i < 200; i++) spin += i;\n"
    "    hits[p] += 1;\n"
    "  }\n"
    "}\n";

static xc_kernel_source_t source_of(const char* text, const char* entry) {
  xc_kernel_source_t s;
  memset(&s, 0, sizeof s);
  s.language = "c";
  s.text = text;
  snprintf(s.entry, sizeof s.entry, "%s", entry);
  return s;
}

static void test_vector_add(xc_device_t* dev, xc_target_t* t) {
  enum { N = 1000, PAD = 16 };
  xc_kernel_source_t src = source_of(vector_add_source, "xk_vadd");
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(t, xc_device_caps(dev), &src, NULL, &blob);
  CHECK_OK(st);
  if (st) return;
  CHECK_STR(blob.format, "elf-so");
  CHECK(blob.size > 4 && memcmp(blob.bytes, "\177ELF", 4) == 0);
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  if (!module) return;
  xc_kernel_t* kernel = NULL;
  CHECK_OK(xc_module_kernel(module, "xk_vadd", &kernel));
  xc_kernel_t* again = NULL;
  CHECK_OK(xc_module_kernel(module, "xk_vadd", &again));
  CHECK(kernel == again);
  CHECK_ERR(xc_module_kernel(module, "xk_missing", &again), "no kernel 'xk_missing'");

  float a[N + PAD], b[N + PAD], c[N + PAD];
  for (int i = 0; i < N + PAD; i++) {
    a[i] = (float)i;
    b[i] = (float)(2 * i + 1);
    c[i] = -7.0f; /* sentinel */
  }
  xc_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof a, &ba));
  CHECK_OK(xc_buffer_alloc(dev, sizeof b, &bb));
  CHECK_OK(xc_buffer_alloc(dev, sizeof c, &bc));
  CHECK(xc_buffer_host_pointer(ba) != NULL);
  CHECK_OK(xc_buffer_write(ba, 0, a, sizeof a));
  CHECK_OK(xc_buffer_write(bb, 0, b, sizeof b));
  CHECK_OK(xc_buffer_write(bc, 0, c, sizeof c));
  CHECK_ERR(xc_buffer_write(bc, 8, c, sizeof c), "outside");
  xc_buffer_t* bufs[] = {ba, bb, bc};
  int64_t n = N;
  xc_launch_t launch = {{(N + 63) / 64, 1, 1}, {1, 1, 1}, bufs, 3, &n, 1};
  xc_event_t *e0 = NULL, *e1 = NULL;
  CHECK_OK(xc_event_record(dev, &e0));
  CHECK_OK(xc_kernel_launch(kernel, &launch));
  CHECK_OK(xc_event_record(dev, &e1));
  CHECK_OK(xc_device_synchronize(dev));
  double ms = -1;
  CHECK_OK(xc_event_elapsed_ms(e0, e1, &ms));
  CHECK(ms >= 0 && ms < 60000);
  xc_event_free(e0);
  xc_event_free(e1);
  memset(c, 0, sizeof c);
  CHECK_OK(xc_buffer_read(bc, 0, c, sizeof c));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += c[i] != (float)(3 * i + 1);
  CHECK_EQ_INT(wrong, 0);
  CHECK_NEAR(c[N - 1], 3.0 * (N - 1) + 1, 0);
  for (int i = N; i < N + PAD; i++) CHECK_NEAR(c[i], -7.0, 0); /* past n: untouched */

  /* The vendor race's timing (driver): replayed through a launch graph on a
   * device that captures, each launch alone when asked; afterwards the device
   * is out of capture mode (it synchronizes and reads back). */
  CHECK(xc_device_can_capture(dev));
  bool replayed = false;
  double t_ms = -1;
  CHECK_OK(xc_drv_time_launch(dev, kernel, &launch, 5, true, &t_ms, &replayed));
  CHECK(replayed);
  CHECK(t_ms >= 0 && t_ms < 1000);
  CHECK_OK(xc_drv_time_launch(dev, kernel, &launch, 3, false, &t_ms, &replayed));
  CHECK(!replayed);
  CHECK(t_ms >= 0 && t_ms < 1000);
  CHECK_ERR(xc_drv_time_launch(dev, kernel, &launch, 17, true, &t_ms, &replayed), "runs 17 not in 1..16");
  CHECK_OK(xc_device_synchronize(dev));
  memset(c, 0, sizeof c);
  CHECK_OK(xc_buffer_read(bc, 0, c, sizeof c));
  wrong = 0;
  for (int i = 0; i < N; i++) wrong += c[i] != (float)(3 * i + 1);
  CHECK_EQ_INT(wrong, 0);

  /* Arguments from another device and too many threads are refused. */
  xc_launch_t bad = launch;
  bad.threads[0] = 2; /* a cpu program is one thread */
  CHECK_ERR(xc_kernel_launch(kernel, &bad), "device limit");
  xc_buffer_free(ba);
  xc_buffer_free(bb);
  xc_buffer_free(bc);
  xc_module_unload(module);
}

static void test_gemm(xc_device_t* dev, xc_target_t* t) {
  enum { M = 5, N = 7, K = 3 };
  xc_kernel_source_t src = source_of(gemm_source, "xk_gemm");
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(t, xc_device_caps(dev), &src, NULL, &blob);
  CHECK_OK(st);
  if (st) return;
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  if (!module) return;
  xc_kernel_t* kernel = NULL;
  CHECK_OK(xc_module_kernel(module, "xk_gemm", &kernel));
  /* A[i,k] = (i+1)(k+1), B[k,j] = (k+1)(j+1)  =>  C[i,j] = (i+1)(j+1) K(K+1)(2K+1)/6. */
  float A[M * K], B[K * N], C[M * N];
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) A[i * K + k] = (float)((i + 1) * (k + 1));
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++) B[k * N + j] = (float)((k + 1) * (j + 1));
  xc_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof A, &ba));
  CHECK_OK(xc_buffer_alloc(dev, sizeof B, &bb));
  CHECK_OK(xc_buffer_alloc(dev, sizeof C, &bc));
  CHECK_OK(xc_buffer_write(ba, 0, A, sizeof A));
  CHECK_OK(xc_buffer_write(bb, 0, B, sizeof B));
  xc_buffer_t* bufs[] = {ba, bb, bc};
  int64_t dims[] = {M, N, K};
  xc_launch_t launch = {{N, M, 1}, {0, 0, 0}, bufs, 3, dims, 3};
  CHECK_OK(xc_kernel_launch(kernel, &launch));
  CHECK_OK(xc_device_synchronize(dev));
  CHECK_OK(xc_buffer_read(bc, 0, C, sizeof C));
  const int sum_sq = K * (K + 1) * (2 * K + 1) / 6; /* 14 */
  int wrong = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) wrong += C[i * N + j] != (float)((i + 1) * (j + 1) * sum_sq);
  CHECK_EQ_INT(wrong, 0);
  CHECK_NEAR(C[M * N - 1], 5 * 7 * 14, 0);
  xc_buffer_free(ba);
  xc_buffer_free(bb);
  xc_buffer_free(bc);
  xc_module_unload(module);
}

/* The directory named after "log in " in a message, which must exist (inside
 * the process's temp folder until exit). */
static void check_kept_dir(const char* msg) {
  const char* p = strstr(msg, "log in ");
  CHECK(p != NULL);
  if (!p) return;
  p += 7;
  char dir[1024];
  size_t n = 0;
  while (p[n] && p[n] != ',' && n + 1 < sizeof dir) {
    dir[n] = p[n];
    n++;
  }
  dir[n] = 0;
  struct stat sb;
  CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
  char path[1200];
  snprintf(path, sizeof path, "%s/xk_broken.c", dir);
  CHECK(access(path, R_OK) == 0);
  unlink(path);
  snprintf(path, sizeof path, "%s/compile.log", dir);
  unlink(path);
  rmdir(dir);
}

static void test_errors(xc_device_t* dev, xc_target_t* t) {
  xc_kernel_source_t src = source_of("void xk_broken(void) { this is not C; }\n", "xk_broken");
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(t, xc_device_caps(dev), &src, NULL, &blob);
  CHECK(st != NULL);
  if (st) {
    const char* msg = xc_status_message(st);
    CHECK(strstr(msg, "xk_broken.c") != NULL);
    CHECK(strstr(msg, "error") != NULL); /* the compiler's own diagnostic */
    CHECK(strstr(msg, "-march=native") != NULL);
    check_kept_dir(msg);
    xc_status_free(st);
  }
  /* Cross-compiling drops -march=native (the command line is in the message). */
  xc_compile_options_t cross = {0};
  cross.cross = true;
  st = xc_target_compile(t, xc_device_caps(dev), &src, &cross, &blob);
  CHECK(st != NULL);
  if (st) {
    CHECK(strstr(xc_status_message(st), "-march=native") == NULL);
    CHECK(strstr(xc_status_message(st), "-O3") != NULL);
    check_kept_dir(xc_status_message(st));
    xc_status_free(st);
  }
  xc_compile_options_t missing = {0};
  missing.compiler = "/nonexistent/xcomp-no-such-cc";
  st = xc_target_compile(t, xc_device_caps(dev), &src, &missing, &blob);
  CHECK(st != NULL && xc_status_code(st) == XC_UNAVAILABLE);
  CHECK(st && strstr(xc_status_message(st), "xcomp-no-such-cc") != NULL);
  xc_status_free(st);

  xc_kernel_source_t opencl = source_of("__kernel void k(void) {}", "k");
  opencl.language = "opencl-c";
  CHECK_ERR(xc_target_compile(t, xc_device_caps(dev), &opencl, NULL, &blob), "compiles C");

  xc_blob_t junk = {"elf-so", (uint8_t*)"not an elf file", 15, NULL};
  xc_module_t* module = NULL;
  CHECK_ERR(xc_module_load(dev, &junk, &module), "not a shared object");
  xc_blob_t wrong_format = {"opencl-c", (uint8_t*)"\177ELF", 4, NULL};
  CHECK_ERR(xc_module_load(dev, &wrong_format, &module), "elf-so");
  CHECK(module == NULL);

  /* A kernel that does not verify is declined by the emitter, not a crash. */
  xc_tiled_kernel_t* bad_kernel = NULL;
  CHECK_OK(xc_tiled_kernel_create("no_grid", &bad_kernel));
  xc_kernel_source_t out;
  CHECK_ERR(xc_target_emit(t, xc_device_caps(dev), (const struct xc_tiled_kernel*)bad_kernel, NULL, 0, &out),
            "emitter");
  xc_tiled_kernel_destroy(bad_kernel);
}

/* Every program of every launch runs exactly once, over many launches (the
 * pool's job generations) of 0 .. 3000 programs. */
static void test_pool_launches(xc_device_t* dev, xc_target_t* t) {
  enum { MAX = 3000 };
  xc_kernel_source_t src = source_of(count_source, "xk_count");
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(t, xc_device_caps(dev), &src, NULL, &blob);
  CHECK_OK(st);
  if (st) return;
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  if (!module) return;
  xc_kernel_t* kernel = NULL;
  CHECK_OK(xc_module_kernel(module, "xk_count", &kernel));
  xc_buffer_t* bh = NULL;
  CHECK_OK(xc_buffer_alloc(dev, MAX * sizeof(int32_t), &bh));
  static int32_t hits[MAX];
  int bad = 0;
  for (int round = 0; round < 300 && kernel && bh; round++) {
    int64_t n = round % 7 == 0 ? 1 : (round * 37) % MAX;
    memset(hits, 0, sizeof hits);
    CHECK_OK(xc_buffer_write(bh, 0, hits, sizeof hits));
    xc_buffer_t* bufs[] = {bh};
    xc_launch_t launch = {{n ? n : 1, 1, 1}, {1, 1, 1}, bufs, 1, NULL, 0};
    CHECK_OK(xc_kernel_launch(kernel, &launch));
    CHECK_OK(xc_buffer_read(bh, 0, hits, sizeof hits));
    int64_t programs = n ? n : 1;
    for (int64_t p = 0; p < MAX; p++) bad += hits[p] != (p < programs ? 1 : 0);
  }
  CHECK_EQ_INT(bad, 0);
  xc_buffer_free(bh);
  xc_module_unload(module);
}

static _Atomic int pool_hits[5000];
static _Atomic int pool_calls;
static void count_range(void* arg, int64_t begin, int64_t end) {
  (void)arg;
  atomic_fetch_add(&pool_calls, 1);
  for (int64_t p = begin; p < end; p++) atomic_fetch_add(&pool_hits[p], 1);
}

/* The pool directly: 0, 1 and many programs, many times in a row. */
static void test_pool_direct(void) {
  CHECK_EQ_INT(xc_cpu_pool_threads(), 4); /* XCOMP_NUM_THREADS, set in main */
  int bad = 0;
  for (int round = 0; round < 2000; round++) {
    int64_t n = round % 3 == 0 ? round % 5 : (round * 131) % 5000;
    for (int i = 0; i < 5000; i++) atomic_store(&pool_hits[i], 0);
    xc_cpu_pool_run(count_range, NULL, n);
    for (int64_t p = 0; p < 5000; p++) bad += atomic_load(&pool_hits[p]) != (p < n ? 1 : 0);
  }
  CHECK_EQ_INT(bad, 0);
  /* many small programs are claimed in chunks (about 8 claims a thread),
   * not one by one: 4096 programs on 4 threads in far fewer calls */
  atomic_store(&pool_calls, 0);
  for (int i = 0; i < 5000; i++) atomic_store(&pool_hits[i], 0);
  xc_cpu_pool_run(count_range, NULL, 4096);
  for (int64_t p = 0; p < 5000; p++) bad += atomic_load(&pool_hits[p]) != (p < 4096 ? 1 : 0);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(atomic_load(&pool_calls), 4 * 8); /* 8 chunks a thread, of 4096 / 32 = 128 */
}

int main(void) {
  setenv("XCOMP_NUM_THREADS", "4", 1); /* a pool of workers even on a 1-CPU machine */
  CHECK_OK(xc_targets_init());
  xc_target_t* t = NULL;
  int index = -1;
  CHECK_OK(xc_target_find("cpu", &t, &index));
  CHECK_EQ_INT(index, 0);
  if (!t) return xc_test_summary("test_target_cpu");
  CHECK_STR(xc_target_name(t), "cpu");
  CHECK_STR(xc_target_origin(t), "built-in");
  xc_device_t* dev = NULL;
  CHECK_OK(xc_device_open("cpu:0", &dev));
  if (!dev) return xc_test_summary("test_target_cpu");
  const xc_device_caps_t* caps = xc_device_caps(dev);
  CHECK(caps->kind == XC_DEVICE_CPU);
  CHECK(caps->compute_units >= 1);
  CHECK(caps->simd_width == 4 || caps->simd_width == 8 || caps->simd_width == 16);
  CHECK_EQ_INT(caps->max_threads_per_group, 1);
  CHECK(caps->global_memory_bytes > 0);
  CHECK(caps->name[0] != 0);
  CHECK(caps->dtypes & XC_DT(XC_F32));
  CHECK(xc_device_target(dev) == t);
  test_vector_add(dev, t);
  test_gemm(dev, t);
  test_errors(dev, t);
  test_pool_launches(dev, t);
  test_pool_direct();
  xc_device_close(dev);
  CHECK_ERR(xc_device_open("cpu:3", &dev), "no device '3'");
  return xc_test_summary("test_target_cpu");
}
