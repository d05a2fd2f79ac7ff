/* The target registry: built-in targets, plugins found on XCOMP_PLUGIN_PATH
 * (the example plugin of tests/plugins/ and a copy built for another API
 * version, which must be refused; a version-3 build, which must load),
 * explicit plugin loads and their failures, mapped buffers (version 4),
 * selectors, and the whole runtime path through the example plugin. */
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/target.h"

static char plugin_dir[1024];

static bool has_plugin_error(const char* needle) {
  for (int i = 0; i < xc_target_plugin_error_count(); i++)
    if (strstr(xc_target_plugin_error_at(i), needle)) return true;
  return false;
}

static void test_builtins(void) {
  CHECK(xc_target_count() >= 3);
  CHECK_STR(xc_target_name(xc_target_at(0)), "cpu");
  CHECK_STR(xc_target_name(xc_target_at(1)), "opencl");
  CHECK(xc_target_at(-1) == NULL);
  CHECK(xc_target_at(xc_target_count()) == NULL);
  CHECK(xc_target_description(xc_target_at(0))[0] != 0);
  xc_target_t* t = NULL;
  CHECK_ERR(xc_target_find("nosuch", &t, NULL), "targets: cpu, opencl, cuda, rocm, rocm_nv, example");
  CHECK(t == NULL);
  CHECK_ERR(xc_target_find("nosuch:0", &t, NULL), "no target or device matches 'nosuch:0'");
  CHECK_ERR(xc_target_find("cpu:1", &t, NULL), "target cpu has no device '1' (devices: cpu:0");
  int index = -1;
  CHECK_OK(xc_target_find("cpu:0", &t, &index));
  CHECK_EQ_INT(index, 0);
  CHECK_OK(xc_target_availability(t));
}

static void test_plugin_path(void) {
  /* Both .so of the directory were tried: the good one registered, the
   * other refused with its version in the message. */
  CHECK(has_plugin_error("xcomp_example_plugin_v999.so: built for target API version 999"));
  CHECK(has_plugin_error("rebuild the plugin"));
  /* The broken copy is loaded first (name order) and fails: its target
   * lacks `launch`. The good copy still registers under the same name. */
  CHECK(has_plugin_error("xcomp_example_plugin_broken.so: initialization failed"));
  CHECK(has_plugin_error("target 'example' lacks required entry launch"));
  CHECK_EQ_INT(xc_target_plugin_error_count(), 2);
  xc_target_t* t = NULL;
  CHECK_OK(xc_target_find("example", &t, NULL));
  if (!t) return;
  CHECK(strstr(xc_target_origin(t), "xcomp_example_plugin.so") != NULL);
  /* Device-name selectors, with and without the target prefix. */
  int index = -1;
  xc_target_t* by_name = NULL;
  CHECK_OK(xc_target_find("example:ACCELERATOR", &by_name, &index));
  CHECK(by_name == t);
  CHECK_OK(xc_target_find("Example accel", &by_name, &index));
  CHECK(by_name == t);
  CHECK_OK(xc_target_find("example inc", &by_name, &index)); /* vendor */
  CHECK(by_name == t);

  xc_device_caps_t caps;
  CHECK_OK(xc_target_device_caps(t, 0, &caps));
  CHECK_STR(caps.name, "Example accelerator (host memory)");
  CHECK(caps.kind == XC_DEVICE_NPU);
  CHECK_EQ_INT(caps.simd_width, 16);
  CHECK_EQ_INT(caps.num_mma_shapes, 1);
  CHECK_EQ_INT(caps.mma_shapes[0].k, 32);
  CHECK(caps.mma_shapes[0].accumulator_dtype == XC_I32);
  char summary[512];
  xc_device_caps_summary(&caps, summary, sizeof summary);
  CHECK(strstr(summary, "npu, 4 compute units, simd 16, 64 threads/group, local 256 KiB, global 1.0 GiB, nhwc") != NULL);
  CHECK(strstr(summary, "dtypes f32 i8") != NULL);
  CHECK_ERR(xc_target_device_caps(t, 1, &caps), "has no device 1");
}

static void test_plugin_refusals(void) {
  int errors = xc_target_plugin_error_count();
  char path[1200];
  snprintf(path, sizeof path, "%s/xcomp_example_plugin_v999.so", plugin_dir);
  xc_status_t st = xc_target_load_plugin(path);
  CHECK(st && xc_status_code(st) == XC_UNSUPPORTED);
  CHECK(st && strstr(xc_status_message(st), "version 999, this xcomp has version 5 (and loads versions 3 to 5)") != NULL);
  xc_status_free(st);
  /* The same plugin twice: its target name is taken. */
  snprintf(path, sizeof path, "%s/xcomp_example_plugin.so", plugin_dir);
  CHECK_ERR(xc_target_load_plugin(path), "a target named 'example' is already registered");
  CHECK_ERR(xc_target_load_plugin("/nonexistent/plugin.so"), "cannot be loaded");
  /* Not a shared object at all. */
  char junk[] = "/tmp/xcomp-test-junk-XXXXXX";
  int fd = mkstemp(junk);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(write(fd, "garbage", 7) == 7);
    close(fd);
    CHECK_ERR(xc_target_load_plugin(junk), "cannot be loaded");
    unlink(junk);
  }
  CHECK_ERR(xc_target_load_plugin(NULL), "NULL");
  CHECK_EQ_INT(xc_target_plugin_error_count(), errors + 4);
  CHECK(has_plugin_error("/nonexistent/plugin.so"));
}

static void test_plugin_runtime(void) {
  xc_device_t* dev = NULL;
  CHECK_OK(xc_device_open("example", &dev));
  if (!dev) return;
  xc_target_t* t = xc_device_target(dev);
  const xc_device_caps_t* caps = xc_device_caps(dev);

  /* It declines tiled kernels: unsupported, with the plugin's reason. */
  int fake = 0;
  char why[128];
  CHECK(!xc_target_supports(t, caps, (const struct xc_tiled_kernel*)&fake, why, sizeof why));
  CHECK(strstr(why, "built-in kernels") != NULL);
  xc_blob_t blob;
  xc_status_t st = xc_target_compile_kernel(t, caps, (const struct xc_tiled_kernel*)&fake, NULL, 0, NULL, &blob);
  CHECK(st && xc_status_code(st) == XC_UNSUPPORTED);
  CHECK(st && strstr(xc_status_message(st), "does not support this kernel: the example accelerator") != NULL);
  xc_status_free(st);

  /* No compile entry: the blob is the source, with its language as format. */
  xc_kernel_source_t src = {"example-ops", "add_f32\nscale_f32\n", "add_f32"};
  CHECK_OK(xc_target_compile(t, caps, &src, NULL, &blob));
  CHECK_STR(blob.format, "example-ops");
  CHECK_EQ_INT(blob.size, 18);
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  xc_kernel_source_t unknown = {"example-ops", "matmul_f32\n", "matmul_f32"};
  CHECK_OK(xc_target_compile(t, caps, &unknown, NULL, &blob));
  xc_module_t* bad_module = NULL;
  CHECK_ERR(xc_module_load(dev, &blob, &bad_module), "no kernel 'matmul_f32'");
  xc_blob_release(&blob);
  if (!module) {
    xc_device_close(dev);
    return;
  }
  xc_kernel_t *add = NULL, *scale = NULL;
  CHECK_OK(xc_module_kernel(module, "add_f32", &add));
  CHECK_OK(xc_module_kernel(module, "scale_f32", &scale));
  float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, c[5] = {0};
  xc_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof a, &ba));
  CHECK_OK(xc_buffer_alloc(dev, sizeof b, &bb));
  CHECK_OK(xc_buffer_alloc(dev, sizeof c, &bc));
  CHECK(xc_buffer_host_pointer(ba) == NULL); /* no buffer_host_pointer entry */
  CHECK_EQ_INT(xc_buffer_size(ba), sizeof a);
  CHECK_OK(xc_buffer_write(ba, 0, a, sizeof a));
  CHECK_OK(xc_buffer_write(bb, 0, b, sizeof b));
  xc_buffer_t* bufs[] = {ba, bb, bc};
  int64_t n = 5;
  xc_launch_t launch = {{1, 1, 1}, {1, 1, 1}, bufs, 3, &n, 1};
  xc_event_t *e0 = NULL, *e1 = NULL;
  CHECK_OK(xc_event_record(dev, &e0)); /* host-clock default */
  CHECK_OK(xc_kernel_launch(add, &launch));
  int64_t scale_args[] = {5, 3};
  xc_buffer_t* cbuf[] = {bc};
  xc_launch_t scale_launch = {{1, 1, 1}, {1, 1, 1}, cbuf, 1, scale_args, 2};
  CHECK_OK(xc_kernel_launch(scale, &scale_launch));
  CHECK_OK(xc_event_record(dev, &e1));
  double ms = -1;
  CHECK_OK(xc_event_elapsed_ms(e0, e1, &ms));
  CHECK(ms >= 0);
  xc_event_free(e0);
  xc_event_free(e1);
  CHECK_OK(xc_device_synchronize(dev)); /* NULL entry: no-op */
  CHECK_OK(xc_buffer_read(bc, 0, c, sizeof c));
  for (int i = 0; i < 5; i++) CHECK_NEAR(c[i], 33.0 * (i + 1), 0);
  /* The plugin's own argument checks come back as statuses. */
  launch.num_scalars = 0;
  CHECK_ERR(xc_kernel_launch(add, &launch), "add_f32 takes 3 buffers and 1 scalars");
  int64_t too_many = 6;
  launch.scalars = &too_many;
  launch.num_scalars = 1;
  CHECK_ERR(xc_kernel_launch(add, &launch), "overruns buffer 0");
  /* Argument checks of the registry itself. */
  launch.grid[1] = -1;
  CHECK_ERR(xc_kernel_launch(add, &launch), "negative");
  launch.grid[1] = 1;
  launch.threads[0] = 65;
  CHECK_ERR(xc_kernel_launch(add, &launch), "65 threads per program exceed the device limit of 64");
  launch.threads[0] = 1;
  bufs[1] = NULL;
  CHECK_ERR(xc_kernel_launch(add, &launch), "buffer argument 1 is NULL");
  CHECK_ERR(xc_buffer_read(bc, 4, c, sizeof c), "outside the 20-byte buffer");
  CHECK_ERR(xc_buffer_write(bc, 21, c, 0), "outside");

  /* A buffer of another device is refused. */
  xc_device_t* cpu = NULL;
  CHECK_OK(xc_device_open("cpu", &cpu));
  xc_buffer_t* foreign = NULL;
  if (cpu) CHECK_OK(xc_buffer_alloc(cpu, 20, &foreign));
  if (foreign) {
    bufs[1] = foreign;
    CHECK_ERR(xc_kernel_launch(add, &launch), "belongs to another device");
    xc_buffer_free(foreign);
  }
  xc_device_close(cpu);
  xc_buffer_free(ba);
  xc_buffer_free(bb);
  xc_buffer_free(bc);
  xc_module_unload(module);
  xc_device_close(dev);
}

/* Version 4's buffer_alloc_mapped through the example plugin: the buffer is
 * an ordinary buffer for copies and launches, and the host sees at its host
 * pointer what a launch wrote, and the launch what the host wrote there. */
static void test_mapped_buffers(void) {
  xc_device_t* dev = NULL;
  CHECK_OK(xc_device_open("example", &dev));
  if (!dev) return;
  xc_buffer_t* m = NULL;
  CHECK_OK(xc_buffer_alloc_mapped(dev, 4 * sizeof(float), &m));
  float* host = m ? xc_buffer_host_pointer(m) : NULL;
  CHECK(host != NULL);
  if (!host) {
    xc_buffer_free(m);
    xc_device_close(dev);
    return;
  }
  CHECK_EQ_INT(xc_buffer_size(m), 4 * sizeof(float));
  for (int i = 0; i < 4; i++) host[i] = (float)(i + 1);
  xc_kernel_source_t src = {"example-ops", "scale_f32\n", "scale_f32"};
  xc_blob_t blob;
  xc_module_t* module = NULL;
  xc_kernel_t* scale = NULL;
  CHECK_OK(xc_target_compile(xc_device_target(dev), xc_device_caps(dev), &src, NULL, &blob));
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  if (module) CHECK_OK(xc_module_kernel(module, "scale_f32", &scale));
  if (scale) {
    int64_t args[] = {4, 2};
    xc_buffer_t* bufs[] = {m};
    xc_launch_t launch = {{1, 1, 1}, {1, 1, 1}, bufs, 1, args, 2};
    CHECK_OK(xc_kernel_launch(scale, &launch));
    CHECK_OK(xc_device_synchronize(dev));
    for (int i = 0; i < 4; i++) CHECK_NEAR(host[i], 2.0 * (i + 1), 0);
    float back[4] = {0};
    CHECK_OK(xc_buffer_read(m, 0, back, sizeof back));
    CHECK_NEAR(back[3], 8.0, 0);
    float three = 3;
    CHECK_OK(xc_buffer_write(m, 0, &three, sizeof three));
    CHECK_NEAR(host[0], 3.0, 0);
  }
  xc_module_unload(module);
  xc_buffer_free(m);
  /* cpu has no entry; its buffers are host memory, so they serve. */
  xc_device_t* cpu = NULL;
  CHECK_OK(xc_device_open("cpu", &cpu));
  xc_buffer_t* c = NULL;
  if (cpu) CHECK_OK(xc_buffer_alloc_mapped(cpu, 32, &c));
  if (c) CHECK(xc_buffer_host_pointer(c) != NULL);
  xc_buffer_free(c);
  xc_device_close(cpu);
  CHECK_ERR(xc_buffer_alloc_mapped(NULL, 8, &c), "NULL argument");
  xc_device_close(dev);
}

/* A plugin built for version 3 still loads (its table ends before the
 * version-4 entries; the init function gets 3, as it insists); without
 * buffer_alloc_mapped or buffer_host_pointer, a mapped buffer is
 * XC_UNSUPPORTED and ordinary buffers work. */
static void test_plugin_v3(void) {
  char path[1200];
  snprintf(path, sizeof path, "%s/v3/xcomp_example_plugin_v3.so", plugin_dir);
  CHECK_OK(xc_target_load_plugin(path));
  xc_device_t* dev = NULL;
  CHECK_OK(xc_device_open("example_v3", &dev));
  if (!dev) return;
  xc_buffer_t* b = NULL;
  xc_status_t st = xc_buffer_alloc_mapped(dev, 16, &b);
  CHECK(st && xc_status_code(st) == XC_UNSUPPORTED);
  CHECK(st && strstr(xc_status_message(st), "no host-mapped buffers") != NULL);
  xc_status_free(st);
  CHECK(b == NULL);
  CHECK_OK(xc_buffer_alloc(dev, 16, &b));
  int64_t words[2] = {7, 9}, back[2] = {0};
  CHECK_OK(xc_buffer_write(b, 0, words, sizeof words));
  CHECK_OK(xc_buffer_read(b, 0, back, sizeof back));
  CHECK_EQ_INT(back[1], 9);
  xc_buffer_free(b);
  xc_device_close(dev);
}

int main(void) {
  const char* dir = getenv("XCOMP_TEST_PLUGIN_DIR");
  if (!dir) {
    fprintf(stderr, "XCOMP_TEST_PLUGIN_DIR is not set (run through ctest)\n");
    return 1;
  }
  snprintf(plugin_dir, sizeof plugin_dir, "%s", dir);
  char path[2100];
  snprintf(path, sizeof path, "/nonexistent-xcomp-dir::%s", plugin_dir);
  setenv("XCOMP_PLUGIN_PATH", path, 1);
  CHECK_OK(xc_targets_init());
  CHECK_OK(xc_targets_init()); /* idempotent */
  test_builtins();
  test_plugin_path();
  test_plugin_refusals();
  test_plugin_runtime();
  test_mapped_buffers();
  test_plugin_v3();
  int example = 0;
  for (int i = 0; i < xc_target_count(); i++) example += strcmp(xc_target_name(xc_target_at(i)), "example") == 0;
  CHECK_EQ_INT(example, 1);
  return xc_test_summary("test_target_registry");
}
