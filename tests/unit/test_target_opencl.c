/* The opencl target through xcomp/target.h, on whatever OpenCL platform is
 * present (PoCL in CI): hand-written OpenCL C kernels (a ragged vector add, a
 * work-group reduction in __local memory with barriers), build logs in
 * errors, device selection. Prints SKIP and passes when no platform exists. */
#include "test.h"
#include "xcomp/target.h"

static const char* kernels_source =
    "__kernel void vadd(__global const float* a, __global const float* b, __global float* c, long n) {\n"
    "  long i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    "#define GROUP 64\n"
    "__kernel void partial_sums(__global const float* x, __global float* out, long n) {\n"
    "  __local float acc[GROUP];\n"
    "  long i = get_global_id(0);\n"
    "  int lane = (int)get_local_id(0);\n"
    "  acc[lane] = i < n ? x[i] : 0.0f;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (int stride = GROUP / 2; stride > 0; stride /= 2) {\n"
    "    if (lane < stride) acc[lane] += acc[lane + stride];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (lane == 0) out[get_group_id(0)] = acc[0];\n"
    "}\n";

static xc_module_t* build(xc_device_t* dev, const char* text, const char* options) {
  xc_kernel_source_t src;
  memset(&src, 0, sizeof src);
  src.language = "opencl-c";
  src.text = text;
  xc_compile_options_t opts = {0};
  opts.extra_flags = options;
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(xc_device_target(dev), xc_device_caps(dev), &src, &opts, &blob);
  CHECK_OK(st);
  if (st) return NULL;
  CHECK_STR(blob.format, "opencl-c");
  CHECK_EQ_INT(blob.size, strlen(text));
  CHECK_STR(blob.options, options);
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  return module;
}

static void test_vector_add(xc_device_t* dev, xc_kernel_t* kernel) {
  enum { N = 1000, PAD = 24 };  /* 1000 = 15 groups of 64 + 40 */
  float a[N + PAD], b[N + PAD], c[N + PAD];
  for (int i = 0; i < N + PAD; i++) {
    a[i] = (float)i;
    b[i] = (float)(1000 - 2 * i);
    c[i] = 12345.0f; /* sentinel */
  }
  xc_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof a, &ba));
  CHECK_OK(xc_buffer_alloc(dev, sizeof b, &bb));
  CHECK_OK(xc_buffer_alloc(dev, sizeof c, &bc));
  if (!ba || !bb || !bc) return;
  CHECK(xc_buffer_host_pointer(ba) == NULL);
  CHECK_OK(xc_buffer_write(ba, 0, a, sizeof a));
  CHECK_OK(xc_buffer_write(bb, 0, b, sizeof b));
  CHECK_OK(xc_buffer_write(bc, 0, c, sizeof c));
  xc_buffer_t* bufs[] = {ba, bb, bc};
  int64_t n = N;
  xc_launch_t launch = {{(N + 63) / 64, 1, 1}, {64, 1, 1}, bufs, 3, &n, 1};
  xc_event_t *e0 = NULL, *e1 = NULL;
  CHECK_OK(xc_event_record(dev, &e0));
  CHECK_OK(xc_kernel_launch(kernel, &launch));
  CHECK_OK(xc_event_record(dev, &e1));
  CHECK_OK(xc_device_synchronize(dev));
  double ms = -1;
  if (e0 && e1) CHECK_OK(xc_event_elapsed_ms(e0, e1, &ms));
  CHECK(ms >= 0 && ms < 60000);
  xc_event_free(e0);
  xc_event_free(e1);
  memset(c, 0, sizeof c);
  CHECK_OK(xc_buffer_read(bc, 0, c, sizeof c));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += c[i] != (float)(1000 - i);
  CHECK_EQ_INT(wrong, 0);
  CHECK_NEAR(c[N - 1], 1.0, 0);
  for (int i = N; i < N + PAD; i++) CHECK_NEAR(c[i], 12345.0, 0);
  /* A partial read at an offset. */
  float tail[2] = {0, 0};
  CHECK_OK(xc_buffer_read(bc, (N - 2) * sizeof(float), tail, sizeof tail));
  CHECK_NEAR(tail[0], 2.0, 0);
  CHECK_NEAR(tail[1], 1.0, 0);
  /* Wrong argument count (OpenCL would silently reuse the last value). */
  xc_launch_t bad = launch;
  bad.num_scalars = 0;
  CHECK_ERR(xc_kernel_launch(kernel, &bad), "takes 4 arguments");
  xc_buffer_free(ba);
  xc_buffer_free(bb);
  xc_buffer_free(bc);
}

static void test_reduction(xc_device_t* dev, xc_kernel_t* kernel) {
  enum { N = 1000, GROUPS = (N + 63) / 64 };
  float x[N], partial[GROUPS];
  for (int i = 0; i < N; i++) x[i] = (float)(i % 13);
  xc_buffer_t *bx = NULL, *bp = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof x, &bx));
  CHECK_OK(xc_buffer_alloc(dev, sizeof partial, &bp));
  if (!bx || !bp) return;
  CHECK_OK(xc_buffer_write(bx, 0, x, sizeof x));
  xc_buffer_t* bufs[] = {bx, bp};
  int64_t n = N;
  xc_launch_t launch = {{GROUPS, 1, 1}, {64, 1, 1}, bufs, 2, &n, 1};
  CHECK_OK(xc_kernel_launch(kernel, &launch));
  CHECK_OK(xc_buffer_read(bp, 0, partial, sizeof partial));
  double total = 0;
  int wrong = 0;
  for (int g = 0; g < GROUPS; g++) {
    long expect = 0;
    for (int i = g * 64; i < g * 64 + 64 && i < N; i++) expect += i % 13;
    wrong += partial[g] != (float)expect;
    total += partial[g];
  }
  CHECK_EQ_INT(wrong, 0);
  /* 76 full cycles of 0..12 (sum 78) and then 0..11 (sum 66). */
  CHECK_NEAR(total, 76 * 78 + 66, 0);
  xc_buffer_free(bx);
  xc_buffer_free(bp);
}

int main(void) {
  CHECK_OK(xc_targets_init());
  xc_target_t* t = NULL;
  xc_status_t st = xc_target_find("opencl", &t, NULL);
  if (st) {
    printf("SKIP: %s\n", xc_status_message(st));
    CHECK(xc_status_code(st) == XC_UNAVAILABLE || xc_status_code(st) == XC_NOT_FOUND);
    xc_status_free(st);
    return xc_test_summary("test_target_opencl");
  }
  int count = 0;
  CHECK_OK(xc_target_device_count(t, &count));
  CHECK(count >= 1);
  xc_device_caps_t caps;
  CHECK_OK(xc_target_device_caps(t, 0, &caps));
  char summary[512];
  xc_device_caps_summary(&caps, summary, sizeof summary);
  printf("opencl:0 %s: %s\n", caps.name, summary);
  CHECK(caps.name[0] != 0);
  CHECK(caps.compute_units >= 1);
  CHECK(caps.max_threads_per_group >= 64);
  CHECK(caps.local_memory_bytes >= 1024);
  CHECK(caps.global_memory_bytes > 0);
  CHECK(caps.simd_width >= 1);
  CHECK(caps.dtypes & XC_DT(XC_F32));

  /* Selection by index and by a piece of the device name. */
  char piece[8];
  snprintf(piece, sizeof piece, "%.4s", caps.name);
  char selector[32];
  snprintf(selector, sizeof selector, "opencl:%s", piece);
  int index = -1;
  CHECK_OK(xc_target_find(selector, &t, &index));
  CHECK(index >= 0 && index < count);
  CHECK_ERR(xc_target_find("opencl:99", &t, &index), "no device '99'");
  CHECK_ERR(xc_target_find("opencl:no-such-device-name", &t, &index), "devices: opencl:0");

  xc_device_t* dev = NULL;
  CHECK_OK(xc_device_open("opencl:0", &dev));
  if (!dev) return xc_test_summary("test_target_opencl");
  xc_module_t* module = build(dev, kernels_source, "-cl-std=CL1.2");
  if (module) {
    xc_kernel_t *vadd = NULL, *sums = NULL;
    CHECK_OK(xc_module_kernel(module, "vadd", &vadd));
    CHECK_OK(xc_module_kernel(module, "partial_sums", &sums));
    CHECK_ERR(xc_module_kernel(module, "nope", &sums), "no kernel 'nope'");
    CHECK_OK(xc_module_kernel(module, "partial_sums", &sums));
    if (vadd) test_vector_add(dev, vadd);
    if (sums) test_reduction(dev, sums);
    /* More threads than a group may have. */
    xc_launch_t huge = {{1, 1, 1}, {(int64_t)caps.max_threads_per_group + 1, 1, 1}, NULL, 0, NULL, 0};
    if (vadd) CHECK_ERR(xc_kernel_launch(vadd, &huge), "device limit");
    xc_module_unload(module);
  }

  /* flags and extra_flags both travel with the blob; C source is refused. */
  xc_kernel_source_t c_source = {"c", "int x;", "x"};
  xc_compile_options_t opts = {0};
  opts.flags = "-cl-std=CL1.2";
  opts.extra_flags = "-cl-mad-enable";
  xc_blob_t blob;
  CHECK_OK(xc_target_compile(xc_device_target(dev), &caps, &(xc_kernel_source_t){"opencl-c", "__kernel void k(void) {}", "k"}, &opts, &blob));
  CHECK_STR(blob.options, "-cl-std=CL1.2 -cl-mad-enable");
  xc_blob_release(&blob);
  /* Without flags, $XCOMP_OPENCL_FLAGS stands in for them; given flags win. */
  setenv("XCOMP_OPENCL_FLAGS", "-cl-fast-relaxed-math", 1);
  CHECK_OK(xc_target_compile(xc_device_target(dev), &caps, &(xc_kernel_source_t){"opencl-c", "__kernel void k(void) {}", "k"}, &opts, &blob));
  CHECK_STR(blob.options, "-cl-std=CL1.2 -cl-mad-enable");
  xc_blob_release(&blob);
  opts.flags = NULL;
  CHECK_OK(xc_target_compile(xc_device_target(dev), &caps, &(xc_kernel_source_t){"opencl-c", "__kernel void k(void) {}", "k"}, &opts, &blob));
  CHECK_STR(blob.options, "-cl-fast-relaxed-math -cl-mad-enable");
  xc_blob_release(&blob);
  unsetenv("XCOMP_OPENCL_FLAGS");
  opts.flags = "-cl-std=CL1.2";
  CHECK_ERR(xc_target_compile(xc_device_target(dev), &caps, &c_source, NULL, &blob), "not c");

  /* A build error carries the build log (which names the unknown identifier). */
  xc_blob_t bad = {"opencl-c", (uint8_t*)"__kernel void k(__global float* x) { x[0] = undefined_thing; }",
                   0, NULL};
  bad.size = strlen((const char*)bad.bytes);
  xc_module_t* broken = NULL;
  CHECK_ERR(xc_module_load(dev, &bad, &broken), "undefined_thing");
  CHECK_ERR(xc_module_load(dev, &bad, &broken), "build log");
  xc_blob_t wrong = {"elf-so", (uint8_t*)"x", 1, NULL};
  CHECK_ERR(xc_module_load(dev, &wrong, &broken), "opencl-c blob");
  CHECK(broken == NULL);

  /* Empty buffers get a handle; copies of zero bytes are no-ops. */
  xc_buffer_t* empty = NULL;
  CHECK_OK(xc_buffer_alloc(dev, 0, &empty));
  CHECK_OK(xc_buffer_write(empty, 0, NULL, 0));
  CHECK_ERR(xc_buffer_read(empty, 0, &caps, 4), "outside");
  xc_buffer_free(empty);
  xc_device_close(dev);
  return xc_test_summary("test_target_opencl");
}
