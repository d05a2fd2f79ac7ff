/* The spirv plugin's Vulkan runtime through xcomp/target.h, on whatever
 * Vulkan driver is present (lavapipe in CI): capabilities, buffer copies
 * (mapped and through the staging buffer), a hand-written SPIR-V kernel
 * assembled with spirv-as and packed in the "spirv" blob format, launches
 * of more work-groups than one dispatch holds, events, launch graphs
 * replayed with new inputs, and malformed blobs refused. The plugin comes
 * from XCOMP_SPIRV_PLUGIN; without it, a Vulkan driver or spirv-as, the
 * test prints why and passes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/target.h"

/* The blob header of targets/spirv/spirv_plugin.h, written out here: the
 * test checks the format as documented, not the plugin's own packer. */
#define BLOB_MAGIC 0x56505358u
#define BLOB_VERSION 1u

/* y[p*L + lid] = x[p*L + lid] * 2 + scalar0 for program
 * p = program_base + WorkgroupId.y * NumWorkgroups.x + WorkgroupId.x,
 * p < grid[0]*grid[1]*grid[2]. The int64 scalar is read as its low word so
 * that the module needs no Int64 capability. %u: the local size L. */
static const char* scale_asm =
    "OpCapability Shader\n"
    "OpMemoryModel Logical GLSL450\n"
    "OpEntryPoint GLCompute %%main \"scale\" %%wg_id %%num_wg %%local_id\n"
    "OpExecutionMode %%main LocalSize %u 1 1\n"
    "OpDecorate %%wg_id BuiltIn WorkgroupId\n"
    "OpDecorate %%num_wg BuiltIn NumWorkgroups\n"
    "OpDecorate %%local_id BuiltIn LocalInvocationId\n"
    "OpDecorate %%rt ArrayStride 4\n"
    "OpMemberDecorate %%buf 0 Offset 0\n"
    "OpDecorate %%buf Block\n"
    "OpDecorate %%x DescriptorSet 0\n"
    "OpDecorate %%x Binding 0\n"
    "OpDecorate %%y DescriptorSet 0\n"
    "OpDecorate %%y Binding 1\n"
    "OpMemberDecorate %%pc 0 Offset 0\n"
    "OpMemberDecorate %%pc 1 Offset 4\n"
    "OpMemberDecorate %%pc 2 Offset 8\n"
    "OpMemberDecorate %%pc 3 Offset 12\n"
    "OpMemberDecorate %%pc 4 Offset 16\n"
    "OpMemberDecorate %%pc 5 Offset 20\n"
    "OpDecorate %%pc Block\n"
    "%%void = OpTypeVoid\n"
    "%%fn = OpTypeFunction %%void\n"
    "%%uint = OpTypeInt 32 0\n"
    "%%int = OpTypeInt 32 1\n"
    "%%float = OpTypeFloat 32\n"
    "%%bool = OpTypeBool\n"
    "%%v3uint = OpTypeVector %%uint 3\n"
    "%%p_in = OpTypePointer Input %%v3uint\n"
    "%%wg_id = OpVariable %%p_in Input\n"
    "%%num_wg = OpVariable %%p_in Input\n"
    "%%local_id = OpVariable %%p_in Input\n"
    "%%rt = OpTypeRuntimeArray %%float\n"
    "%%buf = OpTypeStruct %%rt\n"
    "%%p_buf = OpTypePointer StorageBuffer %%buf\n"
    "%%x = OpVariable %%p_buf StorageBuffer\n"
    "%%y = OpVariable %%p_buf StorageBuffer\n"
    "%%p_float = OpTypePointer StorageBuffer %%float\n"
    "%%pc = OpTypeStruct %%uint %%uint %%uint %%uint %%uint %%uint\n"
    "%%p_pc = OpTypePointer PushConstant %%pc\n"
    "%%params = OpVariable %%p_pc PushConstant\n"
    "%%p_pc_uint = OpTypePointer PushConstant %%uint\n"
    "%%c0 = OpConstant %%int 0\n"
    "%%c1 = OpConstant %%int 1\n"
    "%%c2 = OpConstant %%int 2\n"
    "%%c3 = OpConstant %%int 3\n"
    "%%c4 = OpConstant %%int 4\n"
    "%%local = OpConstant %%uint %u\n"
    "%%two = OpConstant %%float 2\n"
    "%%main = OpFunction %%void None %%fn\n"
    "%%entry = OpLabel\n"
    "%%wg = OpLoad %%v3uint %%wg_id\n"
    "%%nwg = OpLoad %%v3uint %%num_wg\n"
    "%%lid = OpLoad %%v3uint %%local_id\n"
    "%%wgx = OpCompositeExtract %%uint %%wg 0\n"
    "%%wgy = OpCompositeExtract %%uint %%wg 1\n"
    "%%nx = OpCompositeExtract %%uint %%nwg 0\n"
    "%%lx = OpCompositeExtract %%uint %%lid 0\n"
    "%%pg0 = OpAccessChain %%p_pc_uint %%params %%c0\n"
    "%%pg1 = OpAccessChain %%p_pc_uint %%params %%c1\n"
    "%%pg2 = OpAccessChain %%p_pc_uint %%params %%c2\n"
    "%%pbase = OpAccessChain %%p_pc_uint %%params %%c3\n"
    "%%ps0 = OpAccessChain %%p_pc_uint %%params %%c4\n"
    "%%g0 = OpLoad %%uint %%pg0\n"
    "%%g1 = OpLoad %%uint %%pg1\n"
    "%%g2 = OpLoad %%uint %%pg2\n"
    "%%base = OpLoad %%uint %%pbase\n"
    "%%s0 = OpLoad %%uint %%ps0\n"
    "%%row = OpIMul %%uint %%wgy %%nx\n"
    "%%t = OpIAdd %%uint %%base %%row\n"
    "%%p = OpIAdd %%uint %%t %%wgx\n"
    "%%g01 = OpIMul %%uint %%g0 %%g1\n"
    "%%total = OpIMul %%uint %%g01 %%g2\n"
    "%%in = OpULessThan %%bool %%p %%total\n"
    "OpSelectionMerge %%done None\n"
    "OpBranchConditional %%in %%body %%done\n"
    "%%body = OpLabel\n"
    "%%pl = OpIMul %%uint %%p %%local\n"
    "%%i = OpIAdd %%uint %%pl %%lx\n"
    "%%px = OpAccessChain %%p_float %%x %%c0 %%i\n"
    "%%xv = OpLoad %%float %%px\n"
    "%%si = OpBitcast %%int %%s0\n"
    "%%sf = OpConvertSToF %%float %%si\n"
    "%%m = OpFMul %%float %%xv %%two\n"
    "%%r = OpFAdd %%float %%m %%sf\n"
    "%%py = OpAccessChain %%p_float %%y %%c0 %%i\n"
    "OpStore %%py %%r\n"
    "OpBranch %%done\n"
    "%%done = OpLabel\n"
    "OpReturn\n"
    "OpFunctionEnd\n";

static bool have_spirv_as(void) { return system("spirv-as --version >/dev/null 2>&1") == 0; }

/* Assembles `text` with spirv-as (Vulkan 1.1 environment); malloc'd words. */
static uint32_t* assemble(const char* text, size_t* out_words) {
  *out_words = 0;
  const char* tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char in_path[512], out_path[600], cmd[1400];
  snprintf(in_path, sizeof in_path, "%s/xcomp-spirv-test-XXXXXX", tmp);
  int fd = mkstemp(in_path);
  if (fd < 0) return NULL;
  size_t len = strlen(text);
  bool ok = write(fd, text, len) == (ssize_t)len;
  close(fd);
  snprintf(out_path, sizeof out_path, "%s.spv", in_path);
  snprintf(cmd, sizeof cmd, "spirv-as --target-env vulkan1.1 -o '%s' '%s'", out_path, in_path);
  ok = ok && system(cmd) == 0;
  uint32_t* words = NULL;
  FILE* f = ok ? fopen(out_path, "rb") : NULL;
  if (f) {
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size > 0 && size % 4 == 0) {
      words = malloc((size_t)size);
      if (words && fread(words, 1, (size_t)size, f) == (size_t)size) {
        *out_words = (size_t)size / 4;
      } else {
        free(words);
        words = NULL;
      }
    }
    fclose(f);
  }
  unlink(in_path);
  unlink(out_path);
  return words;
}

typedef struct blob_header {
  uint32_t local_size, num_buffers, num_scalars, features, shared_bytes;
  const char* entry;
} blob_header_t;

/* A "spirv" blob: header words, the NUL-padded entry name, the code. */
static xc_blob_t make_blob(const blob_header_t* h, const uint32_t* code, size_t n) {
  xc_blob_t blob;
  memset(&blob, 0, sizeof blob);
  size_t entry_words = strlen(h->entry) / 4 + 1;
  size_t total = 8 + entry_words + 1 + n;
  uint32_t* w = calloc(total, 4);
  if (!w) return blob;
  uint32_t head[8] = {BLOB_MAGIC, BLOB_VERSION, h->local_size, h->num_buffers,
                      h->num_scalars, h->features, h->shared_bytes, (uint32_t)entry_words};
  memcpy(w, head, sizeof head);
  memcpy(&w[8], h->entry, strlen(h->entry));
  w[8 + entry_words] = (uint32_t)n;
  memcpy(&w[9 + entry_words], code, n * 4);
  snprintf(blob.format, sizeof blob.format, "spirv");
  blob.bytes = (uint8_t*)w;
  blob.size = total * 4;
  return blob;
}

static uint32_t* assemble_scale(unsigned local, size_t* out_words) {
  char text[8192];
  snprintf(text, sizeof text, scale_asm, local, local);
  return assemble(text, out_words);
}

static xc_module_t* load_scale(xc_device_t* dev, unsigned local) {
  size_t n = 0;
  uint32_t* code = assemble_scale(local, &n);
  CHECK(code != NULL);
  if (!code) return NULL;
  blob_header_t h = {local, 2, 1, 0, 0, "scale"};
  xc_blob_t blob = make_blob(&h, code, n);
  free(code);
  xc_module_t* m = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &m));
  xc_blob_release(&blob);
  return m;
}

static void test_caps(xc_device_t* dev) {
  const xc_device_caps_t* caps = xc_device_caps(dev);
  char line[512];
  xc_device_caps_summary(caps, line, sizeof line);
  fprintf(stderr, "spirv device 0: %s (%s, %s): %s\n", caps->name, caps->vendor, caps->version, line);
  CHECK(caps->name[0] != '\0');
  CHECK(caps->vendor[0] != '\0');
  CHECK(caps->local_memory_bytes > 0);
  CHECK(caps->global_memory_bytes > 0);
  CHECK(caps->max_buffer_bytes > 0);
  CHECK(caps->max_threads_per_group >= 64); /* Vulkan guarantees 128 */
  CHECK(caps->simd_width >= 1);
  CHECK(caps->compute_units >= 1);
  CHECK(caps->dtypes & XC_DT(XC_F32));
  CHECK(caps->dtypes & XC_DT(XC_I32));
  CHECK_EQ_INT(caps->kind, XC_DEVICE_GPU);
  CHECK_EQ_INT(caps->num_mma_shapes, 0); /* lavapipe has no VK_NV_cooperative_matrix */
}

static void test_buffers(xc_device_t* dev, bool staging) {
  xc_buffer_t* empty = NULL;
  CHECK_OK(xc_buffer_alloc(dev, 0, &empty));
  CHECK(empty != NULL);
  CHECK_OK(xc_buffer_write(empty, 0, "", 0));
  CHECK_OK(xc_buffer_read(empty, 0, NULL, 0));
  xc_buffer_free(empty);

  enum { N = 1000 };
  uint8_t a[N], b[N];
  for (int i = 0; i < N; i++) a[i] = (uint8_t)(i * 7 + 3);
  xc_buffer_t* buf = NULL;
  CHECK_OK(xc_buffer_alloc(dev, N, &buf));
  if (!buf) return;
  if (staging) CHECK(xc_buffer_host_pointer(buf) == NULL);
  CHECK_OK(xc_buffer_write(buf, 0, a, N));
  uint8_t patch[37];
  for (int i = 0; i < 37; i++) patch[i] = (uint8_t)(200 + i);
  CHECK_OK(xc_buffer_write(buf, 101, patch, sizeof patch));
  memcpy(a + 101, patch, sizeof patch);
  memset(b, 0, sizeof b);
  CHECK_OK(xc_buffer_read(buf, 0, b, N));
  CHECK(memcmp(a, b, N) == 0);
  memset(b, 0, sizeof b);
  CHECK_OK(xc_buffer_read(buf, 99, b, 50));
  CHECK(memcmp(a + 99, b, 50) == 0);
  void* host = xc_buffer_host_pointer(buf);
  if (host) CHECK(memcmp(host, a, N) == 0);
  CHECK_ERR(xc_buffer_read(buf, 990, b, 20), "");
  xc_buffer_free(buf);

  if (staging) {
    /* Larger than the staging buffer: copied in pieces. */
    size_t big = ((size_t)64 << 20) + 4096 + 12;
    uint32_t* src = malloc(big);
    uint32_t* dst = malloc(big);
    CHECK_OK(xc_buffer_alloc(dev, big, &buf));
    if (src && dst && buf) {
      for (size_t i = 0; i < big / 4; i++) src[i] = (uint32_t)(i * 2654435761u);
      CHECK_OK(xc_buffer_write(buf, 0, src, big));
      memset(dst, 0, big);
      CHECK_OK(xc_buffer_read(buf, 0, dst, big));
      CHECK(memcmp(src, dst, big) == 0);
    }
    xc_buffer_free(buf);
    free(src);
    free(dst);
  }
}

/* Launches `k` over `programs` = grid[0]*grid[1]*grid[2] programs of `local`
 * work-items and checks y = 2x + s exactly, and that nothing past the last
 * program was written. */
static void check_scale(xc_buffer_t* ybuf, const float* x, size_t n, size_t pad, int64_t s) {
  float* y = malloc((n + pad) * sizeof *y);
  if (!y) return;
  CHECK_OK(xc_buffer_read(ybuf, 0, y, (n + pad) * sizeof *y));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += y[i] != x[i] * 2.0f + (float)s;
  for (size_t i = n; i < n + pad; i++) wrong += y[i] != -1.0f;
  CHECK_EQ_INT(wrong, 0);
  free(y);
}

static void fill(float* x, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((int)((i * 37 + (size_t)seed) % 2001) - 1000);
}

static void test_kernels(xc_device_t* dev) {
  xc_module_t* m1 = load_scale(dev, 1);
  xc_module_t* m64 = load_scale(dev, 64);
  if (!m1 || !m64) {
    xc_module_unload(m1);
    xc_module_unload(m64);
    return;
  }
  xc_kernel_t* k1 = NULL;
  xc_kernel_t* k64 = NULL;
  CHECK_OK(xc_module_kernel(m1, "scale", &k1));
  CHECK_OK(xc_module_kernel(m64, "scale", &k64));
  xc_kernel_t* missing = NULL;
  CHECK_ERR(xc_module_kernel(m1, "nope", &missing), "no kernel 'nope'");

  /* 70000 programs of one work-item: more than 65535 work-groups in x. */
  enum { N = 70000, PAD = 64 };
  float* x = malloc(N * sizeof *x);
  float* ones = malloc((N + PAD) * sizeof *ones);
  xc_buffer_t *xb = NULL, *yb = NULL;
  CHECK_OK(xc_buffer_alloc(dev, N * sizeof(float), &xb));
  CHECK_OK(xc_buffer_alloc(dev, (N + PAD) * sizeof(float), &yb));
  if (!x || !ones || !xb || !yb || !k1 || !k64) goto out;
  for (size_t i = 0; i < N + PAD; i++) ones[i] = -1.0f;
  fill(x, N, 1);
  CHECK_OK(xc_buffer_write(xb, 0, x, N * sizeof *x));
  CHECK_OK(xc_buffer_write(yb, 0, ones, (N + PAD) * sizeof *ones));
  xc_buffer_t* bufs[] = {xb, yb};
  int64_t s = 7;
  xc_launch_t launch = {{N, 1, 1}, {1, 1, 1}, bufs, 2, &s, 1};
  xc_event_t *e0 = NULL, *e1 = NULL;
  CHECK_OK(xc_event_record(dev, &e0));
  CHECK_OK(xc_kernel_launch(k1, &launch));
  CHECK_OK(xc_event_record(dev, &e1));
  double ms = -1;
  if (e0 && e1) CHECK_OK(xc_event_elapsed_ms(e0, e1, &ms));
  fprintf(stderr, "spirv: %d programs in %.3f ms\n", N, ms);
  CHECK(ms > 0 && ms < 60000);
  xc_event_free(e0);
  xc_event_free(e1);
  check_scale(yb, x, N, PAD, 7);

  /* Many launches in a row (more than one batch is submitted), each seeing
   * the one before: 100 times v = 2v + 1 through swapped buffers, then 300
   * launches writing the same buffer, of which the last must win. */
  xc_buffer_t* swapped[] = {yb, xb};
  int64_t one = 1;
  xc_launch_t forth = {{16, 1, 1}, {1, 1, 1}, bufs, 2, &one, 1};
  xc_launch_t back = {{16, 1, 1}, {1, 1, 1}, swapped, 2, &one, 1};
  for (int i = 0; i < 50; i++) {
    CHECK_OK(xc_kernel_launch(k1, &forth));
    CHECK_OK(xc_kernel_launch(k1, &back));
  }
  int64_t js[300];
  for (int j = 0; j < 300; j++) {
    js[j] = j;
    xc_launch_t w = {{16, 1, 1}, {1, 1, 1}, bufs, 2, &js[j], 1};
    CHECK_OK(xc_kernel_launch(k1, &w));
  }
  float head[16], last[16];
  CHECK_OK(xc_buffer_read(xb, 0, head, sizeof head));
  CHECK_OK(xc_buffer_read(yb, 0, last, sizeof last));
  for (int i = 0; i < 16; i++) {
    volatile float v = x[i];
    for (int j = 0; j < 100; j++) v = v * 2.0f + 1.0f;
    CHECK(head[i] == v);
    CHECK(last[i] == v * 2.0f + 299.0f);
  }
  CHECK_OK(xc_buffer_write(xb, 0, x, N * sizeof *x));

  /* A 3-D grid of 64-work-item programs. */
  CHECK_OK(xc_buffer_write(yb, 0, ones, (N + PAD) * sizeof *ones));
  int64_t s2 = -3;
  xc_launch_t grid3 = {{10, 3, 2}, {64, 1, 1}, bufs, 2, &s2, 1};
  CHECK_OK(xc_kernel_launch(k64, &grid3));
  check_scale(yb, x, 60 * 64, 64, -3);

  /* Argument counts are the module's. */
  xc_launch_t one_buffer = {{1, 1, 1}, {1, 1, 1}, bufs, 1, &s, 1};
  CHECK_ERR(xc_kernel_launch(k1, &one_buffer), "takes 2 buffers and 1 scalars, given 1 and 1");
  xc_launch_t no_scalar = {{1, 1, 1}, {1, 1, 1}, bufs, 2, NULL, 0};
  CHECK_ERR(xc_kernel_launch(k1, &no_scalar), "given 2 and 0");
  xc_launch_t huge = {{1 << 20, 1 << 20, 1}, {1, 1, 1}, bufs, 2, &s, 1};
  CHECK_ERR(xc_kernel_launch(k1, &huge), "2^32");

  /* A launch graph, recorded once and replayed with new inputs. */
  if (xc_device_can_capture(dev)) {
    CHECK_OK(xc_buffer_write(yb, 0, ones, (N + PAD) * sizeof *ones));
    int64_t s3 = 3;
    xc_launch_t g_launch = {{N, 1, 1}, {1, 1, 1}, bufs, 2, &s3, 1};
    xc_launch_graph_t* graph = NULL;
    CHECK_OK(xc_device_capture_begin(dev));
    CHECK_OK(xc_kernel_launch(k1, &g_launch));
    s3 = 1000; /* values are taken at capture time */
    CHECK_OK(xc_device_capture_end(dev, &graph));
    CHECK(graph != NULL);
    /* Nothing ran yet. */
    check_scale(yb, x, 0, N + PAD, 0);
    if (graph) {
      fill(x, N, 2);
      CHECK_OK(xc_buffer_write(xb, 0, x, N * sizeof *x));
      CHECK_OK(xc_launch_graph_run(graph));
      check_scale(yb, x, N, PAD, 3);
      fill(x, N, 3);
      CHECK_OK(xc_buffer_write(xb, 0, x, N * sizeof *x));
      CHECK_OK(xc_launch_graph_run(graph));
      CHECK_OK(xc_launch_graph_run(graph)); /* back to back: waits for the first */
      check_scale(yb, x, N, PAD, 3);
      /* Ordered with ordinary launches on both sides. */
      int64_t s4 = 5;
      xc_launch_t after = {{N, 1, 1}, {1, 1, 1}, bufs, 2, &s4, 1};
      CHECK_OK(xc_kernel_launch(k1, &after));
      CHECK_OK(xc_launch_graph_run(graph));
      check_scale(yb, x, N, PAD, 3);
      CHECK_OK(xc_launch_graph_run(graph));
      CHECK_OK(xc_kernel_launch(k1, &after));
      check_scale(yb, x, N, PAD, 5);
      CHECK_OK(xc_launch_graph_run(graph)); /* freed while it may still run */
    }
    xc_launch_graph_free(graph);
    /* An empty capture is a graph too. */
    CHECK_OK(xc_device_capture_begin(dev));
    CHECK_OK(xc_device_capture_end(dev, &graph));
    if (graph) CHECK_OK(xc_launch_graph_run(graph));
    CHECK_OK(xc_device_synchronize(dev));
    xc_launch_graph_free(graph);
  }
out:
  xc_buffer_free(xb);
  xc_buffer_free(yb);
  free(x);
  free(ones);
  xc_module_unload(m1);
  xc_module_unload(m64);
}

static void expect_refused(xc_device_t* dev, const blob_header_t* h, const uint32_t* code, size_t n,
                           xc_code_t code_expected, const char* needle) {
  xc_blob_t blob = make_blob(h, code, n);
  xc_module_t* m = NULL;
  xc_status_t st = xc_module_load(dev, &blob, &m);
  CHECK(st != NULL && m == NULL);
  if (st) {
    if (xc_status_code(st) != code_expected || !strstr(xc_status_message(st), needle)) {
      fprintf(stderr, "unexpected refusal (%s): %s\n", xc_code_name(xc_status_code(st)), xc_status_message(st));
      CHECK(false);
    }
    xc_status_free(st);
  }
  xc_module_unload(m);
  xc_blob_release(&blob);
}

static void test_bad_blobs(xc_device_t* dev) {
  size_t n = 0;
  uint32_t* code = assemble_scale(1, &n);
  CHECK(code != NULL);
  if (!code) return;
  blob_header_t good = {1, 2, 1, 0, 0, "scale"};
  blob_header_t h = good;
  h.features = 1u << 30;
  expect_refused(dev, &h, code, n, XC_UNSUPPORTED, "feature bit 30");
  h = good;
  h.local_size = 1u << 20;
  expect_refused(dev, &h, code, n, XC_UNSUPPORTED, "work-items per work-group");
  h = good;
  h.shared_bytes = 1u << 30;
  expect_refused(dev, &h, code, n, XC_UNSUPPORTED, "work-group memory");
  h = good;
  h.local_size = 2;
  expect_refused(dev, &h, code, n, XC_INVALID_ARGUMENT, "declares 1 work-items, its blob says 2");
  h = good;
  h.entry = "other";
  expect_refused(dev, &h, code, n, XC_INVALID_ARGUMENT, "no GLCompute entry point 'other'");
  h = good;
  h.num_scalars = 99;
  expect_refused(dev, &h, code, n, XC_INVALID_ARGUMENT, "out of range");
  /* Not SPIR-V at all, truncated, and an instruction broken in the middle. */
  uint32_t junk[16];
  for (int i = 0; i < 16; i++) junk[i] = 0xdeadbeefu + (uint32_t)i;
  expect_refused(dev, &good, junk, 16, XC_INVALID_ARGUMENT, "not SPIR-V");
  expect_refused(dev, &good, code, n - 3, XC_INVALID_ARGUMENT, "truncated");
  uint32_t* broken = malloc(n * 4);
  if (broken) {
    memcpy(broken, code, n * 4);
    /* The last instruction (OpFunctionEnd) becomes an unknown opcode. */
    broken[n - 1] = (1u << 16) | 0x7fffu;
    expect_refused(dev, &good, broken, n, XC_INVALID_ARGUMENT, "invalid module");
    free(broken);
  }
  /* Blob framing: wrong format, magic, size. */
  xc_blob_t blob = make_blob(&good, code, n);
  xc_module_t* m = NULL;
  if (blob.bytes) {
    snprintf(blob.format, sizeof blob.format, "elf-so");
    CHECK_ERR(xc_module_load(dev, &blob, &m), "is not 'spirv'");
    snprintf(blob.format, sizeof blob.format, "spirv");
    size_t size = blob.size;
    blob.size = size - 4;
    CHECK_ERR(xc_module_load(dev, &blob, &m), "does not fill the blob");
    blob.size = 12;
    CHECK_ERR(xc_module_load(dev, &blob, &m), "too short");
    blob.size = size;
    blob.bytes[0] ^= 0xff;
    CHECK_ERR(xc_module_load(dev, &blob, &m), "magic");
    CHECK(m == NULL);
  }
  xc_blob_release(&blob);
  free(code);
}

static void run_device(xc_target_t* t, bool staging) {
  xc_device_t* dev = NULL;
  CHECK_OK(xc_target_open_device(t, 0, &dev));
  if (!dev) return;
  test_caps(dev);
  test_buffers(dev, staging);
  if (have_spirv_as()) {
    test_kernels(dev);
    test_bad_blobs(dev);
  } else {
    fprintf(stderr, "test_spirv_runtime: kernels skipped: spirv-as (spirv-tools) not found\n");
  }
  xc_device_close(dev);
}

int main(void) {
  const char* path = getenv("XCOMP_SPIRV_PLUGIN");
  if (!path || !*path) {
    fprintf(stderr, "test_spirv_runtime: skipped: XCOMP_SPIRV_PLUGIN is not set (spirv plugin not built)\n");
    return 0;
  }
  CHECK_OK(xc_target_load_plugin(path));
  xc_target_t* t = NULL;
  for (int i = 0; i < xc_target_count(); i++)
    if (strcmp(xc_target_name(xc_target_at(i)), "spirv") == 0) t = xc_target_at(i);
  CHECK(t != NULL);
  if (!t) return xc_test_summary("test_spirv_runtime");
  xc_status_t why = xc_target_availability(t);
  if (why) {
    CHECK_EQ_INT(xc_status_code(why), XC_UNAVAILABLE);
    CHECK(strstr(xc_status_message(why), "apt-get install libvulkan1 mesa-vulkan-drivers") != NULL);
    fprintf(stderr, "test_spirv_runtime: skipped: %s\n", xc_status_message(why));
    xc_status_free(why);
    return xc_test_summary("test_spirv_runtime");
  }
  int count = 0;
  CHECK_OK(xc_target_device_count(t, &count));
  CHECK(count >= 1);
  xc_device_caps_t caps;
  CHECK_ERR(xc_target_device_caps(t, count, &caps), "no device");
  run_device(t, false);
  /* Again with copies through the staging buffer, launches split into
   * several dispatches of at most 100 x 100 work-groups, and events timed on
   * the host (as on a device without timestamps). */
  setenv("XCOMP_SPIRV_STAGING", "1", 1);
  setenv("XCOMP_SPIRV_MAX_WORKGROUPS", "100", 1);
  setenv("XCOMP_SPIRV_HOST_TIMING", "1", 1);
  run_device(t, true);
  return xc_test_summary("test_spirv_runtime");
}
