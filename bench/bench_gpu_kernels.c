/* Memory-bound and attention kernels on a GPU target (default cuda), in bf16:
 *
 *  1. y = Gelu(LayerNormalization(x + res, gamma, beta)), 16384 x 4096: the
 *     fused kernel's bandwidth against a device-to-device copy (cuMemcpyDtoD
 *     through the driver, loaded here with dlopen) timed in the same run;
 *  2. Attention(q, k, v) (ONNX Attention, B4 H32 D128, S = 1024 and 4096, full
 *     and causal): TFLOP/s, counting 4·B·H·S²·D FLOPs (half of that causal).
 *
 * Kernel times are the executor's device-event span (stats.kernels_ms),
 * medians over runs after a warm-up. Before timing, sampled rows of each
 * output are checked against a double-precision host computation at the
 * bf16 tolerance (rel-L2 <= 1.6e-2 per row).
 *
 * Usage: bench_gpu_kernels [--target T] [--runs R] [--quick] [--only layernorm|attention] [--head-dim D]
 *   --head-dim D: the attention's head size (default 128; e.g. 80, 96)
 *   --quick: smaller shapes (a smoke run, e.g. on the cpu target)
 *   --only:  one of the two parts */
#include <dlfcn.h>

#include "bench_common.h"

static int g_runs = 20;

static void fill_bf16(xc_tensor_t* t, uint32_t seed, double scale, double offset) {
  uint32_t x = seed;
  uint16_t* p = (uint16_t*)t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = xc_f64_to_bf16(offset + scale * ((double)(x >> 8) / (double)(1u << 23) - 1.0));
  }
}

static double bf(const xc_tensor_t* t, int64_t i) { return xc_bf16_to_f32(((const uint16_t*)t->data)[i]); }

static double row_rel_l2(const double* want, const xc_tensor_t* got, int64_t off, int64_t n) {
  double num = 0, den = 0;
  for (int64_t j = 0; j < n; j++) {
    double d = bf(got, off + j) - want[j];
    num += d * d;
    den += want[j] * want[j];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Median kernel time (s) of r runs, after 3 warm-up runs. */
static double time_kernels(xc_executor_t* e, int ni, xc_tensor_t** in, int no) {
  xc_tensor_t* out[4] = {NULL};
  for (int i = 0; i < 3; i++) bench_run(e, ni, in, no, out, 0, NULL);
  double* t = calloc((size_t)g_runs, sizeof *t);
  if (!t) exit(1);
  for (int i = 0; i < g_runs; i++) t[i] = bench_run(e, ni, in, no, out, 0, NULL);
  double m = bench_median(t, g_runs);
  free(t);
  return m;
}

/* ---- the copy peer: cuMemcpyDtoD through the driver ---- */

typedef int (*cu_fn_ptr_t)(void);
typedef struct copy_peer {
  int (*Init)(unsigned);
  int (*DeviceGet)(int*, int);
  int (*PrimaryCtxRetain)(void**, int);
  int (*CtxSetCurrent)(void*);
  int (*MemAlloc)(unsigned long long*, size_t);
  int (*MemFree)(unsigned long long);
  int (*MemcpyDtoD)(unsigned long long, unsigned long long, size_t);
  int (*CtxSynchronize)(void);
} copy_peer_t;

/* Median seconds of a device-to-device copy of `bytes`, or -1 without a driver. */
static double copy_seconds(size_t bytes) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  copy_peer_t c;
  *(void**)&c.Init = dlsym(lib, "cuInit");
  *(void**)&c.DeviceGet = dlsym(lib, "cuDeviceGet");
  *(void**)&c.PrimaryCtxRetain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&c.CtxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
  *(void**)&c.MemAlloc = dlsym(lib, "cuMemAlloc_v2");
  *(void**)&c.MemFree = dlsym(lib, "cuMemFree_v2");
  *(void**)&c.MemcpyDtoD = dlsym(lib, "cuMemcpyDtoD_v2");
  *(void**)&c.CtxSynchronize = dlsym(lib, "cuCtxSynchronize");
  int dev = 0;
  void* ctx = NULL;
  unsigned long long a = 0, b = 0;
  if (!c.Init || !c.MemcpyDtoD || c.Init(0) || c.DeviceGet(&dev, 0) || c.PrimaryCtxRetain(&ctx, dev) ||
      c.CtxSetCurrent(ctx) || c.MemAlloc(&a, bytes) || c.MemAlloc(&b, bytes))
    return -1;
  double* t = calloc((size_t)g_runs, sizeof *t);
  if (!t) exit(1);
  for (int i = 0; i < 3 + g_runs; i++) {
    double s = bench_now_s();
    c.MemcpyDtoD(b, a, bytes);
    c.CtxSynchronize();
    if (i >= 3) t[i - 3] = bench_now_s() - s;
  }
  double m = bench_median(t, g_runs);
  free(t);
  c.MemFree(a);
  c.MemFree(b);
  return m;
}

/* ---- 1. Add + LayerNorm + Gelu ---- */

static void bench_layernorm(const char* target, int64_t rows, int64_t cols) {
  char text[1024];
  snprintf(text, sizeof text,
           "xir 1\ngraph add_ln_gelu opset 23 {\n"
           "  input x: bf16[%lld, %lld]\n  input res: bf16[%lld, %lld]\n"
           "  input gamma: bf16[%lld]\n  input beta: bf16[%lld]\n"
           "  s = Add(x, res)\n"
           "  n = LayerNormalization(s, gamma, beta) {axis: -1, epsilon: 1e-5}\n"
           "  y: bf16[%lld, %lld] = Gelu(n)\n  output y\n}\n",
           (long long)rows, (long long)cols, (long long)rows, (long long)cols, (long long)cols,
           (long long)cols, (long long)rows, (long long)cols);
  xc_session_options_t req;
  bench_session_options(&req, target);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  bench_check(bench_try_compile_request(bench_parse_xir(text, "add_ln_gelu.xir"), &req, &m, &e), "compile");
  int64_t dims[2] = {rows, cols};
  xc_tensor_t* in[4] = {NULL};
  bench_check(xc_tensor_create(XC_BF16, 2, dims, &in[0]), "alloc");
  bench_check(xc_tensor_create(XC_BF16, 2, dims, &in[1]), "alloc");
  bench_check(xc_tensor_create(XC_BF16, 1, &dims[1], &in[2]), "alloc");
  bench_check(xc_tensor_create(XC_BF16, 1, &dims[1], &in[3]), "alloc");
  fill_bf16(in[0], 3, 2.0, 0.5);
  fill_bf16(in[1], 5, 1.0, 0.0);
  fill_bf16(in[2], 7, 0.5, 1.0);
  fill_bf16(in[3], 9, 0.5, 0.0);
  xc_tensor_t* out[1] = {NULL};
  bench_run(e, 4, in, 1, out, 1, NULL);
  double worst = 0;
  double* want = malloc(sizeof *want * (size_t)cols);
  if (!want) exit(1);
  for (int k = 0; k < 16; k++) {
    int64_t r = (k * 7919) % rows;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; j++) mean += bf(in[0], r * cols + j) + bf(in[1], r * cols + j);
    mean /= (double)cols;
    for (int64_t j = 0; j < cols; j++) {
      double d = bf(in[0], r * cols + j) + bf(in[1], r * cols + j) - mean;
      var += d * d;
    }
    double inv = 1.0 / sqrt(var / (double)cols + 1e-5);
    for (int64_t j = 0; j < cols; j++) {
      double n = (bf(in[0], r * cols + j) + bf(in[1], r * cols + j) - mean) * inv * bf(in[2], j) + bf(in[3], j);
      want[j] = 0.5 * n * (1.0 + erf(n / sqrt(2.0)));
    }
    double err = row_rel_l2(want, out[0], r * cols, cols);
    if (!(err <= worst)) worst = err;
  }
  free(want);
  xc_tensor_destroy(out[0]);
  if (!(worst <= 1.6e-2)) {
    fprintf(stderr, "bench_gpu_kernels: LayerNorm rows differ from the host computation (rel-L2 %.3g)\n", worst);
    exit(1);
  }
  double t = time_kernels(e, 4, in, 1);
  double tensor = (double)rows * (double)cols * 2;
  double copy = copy_seconds((size_t)tensor * 4); /* a larger copy: steadier figure */
  printf("\n1. Add + LayerNorm + Gelu, bf16 %lld x %lld on %s (%s): %.1f us, max row rel-L2 %.1e\n",
         (long long)rows, (long long)cols, target, xc_device_caps(xc_executor_device(e))->name, t * 1e6, worst);
  printf("| bytes counted | xcomp GB/s | copy GB/s (read + write) | xcomp / copy |\n| --- | --- | --- | --- |\n");
  double copy_bw = copy > 0 ? 2 * tensor * 4 / copy : 0;
  const double counted[2] = {3 * tensor, 2 * tensor};
  const char* label[2] = {"moved: x, res read, y written", "effective: one read, one write (peer convention)"};
  for (int i = 0; i < 2; i++) {
    double bw = counted[i] / t;
    if (copy_bw > 0)
      printf("| %s | %.0f | %.0f | %.1f%% |\n", label[i], bw / 1e9, copy_bw / 1e9, 100 * bw / copy_bw);
    else
      printf("| %s | %.0f | (no driver) | - |\n", label[i], bw / 1e9);
  }
  for (int i = 0; i < 4; i++) xc_tensor_destroy(in[i]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

/* ---- 2. attention ---- */

static void attention_row(const xc_tensor_t* q, const xc_tensor_t* k, const xc_tensor_t* v, int64_t bh, int64_t i,
                          int64_t s, int64_t d, bool causal, double* out) {
  double* p = malloc(sizeof *p * (size_t)s);
  if (!p) exit(1);
  double mx = -INFINITY, scale = 1.0 / sqrt((double)d);
  int64_t last = causal ? i : s - 1;
  for (int64_t j = 0; j <= last; j++) {
    double acc = 0;
    for (int64_t c = 0; c < d; c++) acc += bf(q, (bh * s + i) * d + c) * bf(k, (bh * s + j) * d + c);
    p[j] = acc * scale;
    if (p[j] > mx) mx = p[j];
  }
  double sum = 0;
  for (int64_t j = 0; j <= last; j++) sum += (p[j] = exp(p[j] - mx));
  for (int64_t c = 0; c < d; c++) {
    double acc = 0;
    for (int64_t j = 0; j <= last; j++) acc += p[j] * bf(v, (bh * s + j) * d + c);
    out[c] = acc / sum;
  }
  free(p);
}

static void bench_attention(const char* target, int64_t b, int64_t h, int64_t s, int64_t d, bool causal) {
  char text[1024];
  snprintf(text, sizeof text,
           "xir 1\ngraph attention opset 23 {\n"
           "  input q: bf16[%lld, %lld, %lld, %lld]\n  input k: bf16[%lld, %lld, %lld, %lld]\n"
           "  input v: bf16[%lld, %lld, %lld, %lld]\n"
           "  o = Attention(q, k, v) {is_causal: %d}\n  output o\n}\n",
           (long long)b, (long long)h, (long long)s, (long long)d, (long long)b, (long long)h, (long long)s,
           (long long)d, (long long)b, (long long)h, (long long)s, (long long)d, causal ? 1 : 0);
  xc_session_options_t req;
  bench_session_options(&req, target);
  xc_compiled_module_t* m = NULL;
  xc_executor_t* e = NULL;
  xc_status_t cs = bench_try_compile_request(bench_parse_xir(text, "attention.xir"), &req, &m, &e);
  if (cs) {
    printf("| %lld | %s | not compiled: %s | - | - |\n", (long long)s, causal ? "causal" : "full",
           xc_status_message(cs));
    xc_status_free(cs);
    return;
  }
  int64_t dims[4] = {b, h, s, d};
  xc_tensor_t* in[3] = {NULL};
  for (int i = 0; i < 3; i++) {
    bench_check(xc_tensor_create(XC_BF16, 4, dims, &in[i]), "alloc");
    fill_bf16(in[i], 11 + 2 * (uint32_t)i, 1.0, 0.0);
  }
  xc_tensor_t* out[1] = {NULL};
  bench_run(e, 3, in, 1, out, 1, NULL);
  double worst = 0, want[512];
  for (int kk = 0; kk < 8 && d <= 512; kk++) {
    int64_t bh = (kk * 37) % (b * h), i = (kk * 613 + 5) % s;
    attention_row(in[0], in[1], in[2], bh, i, s, d, causal, want);
    double err = row_rel_l2(want, out[0], (bh * s + i) * d, d);
    if (!(err <= worst)) worst = err;
  }
  xc_tensor_destroy(out[0]);
  if (!(worst <= 1.6e-2)) {
    fprintf(stderr, "bench_gpu_kernels: attention rows differ from the host computation (rel-L2 %.3g)\n", worst);
    exit(1);
  }
  double t = time_kernels(e, 3, in, 1);
  double flops = 4.0 * (double)b * (double)h * (double)s * (double)s * (double)d * (causal ? 0.5 : 1.0);
  printf("| %lld | %s | %.3f | %.1f | %.1e |\n", (long long)s, causal ? "causal" : "full", t * 1e3,
         flops / t / 1e12, worst);
  fflush(stdout);
  for (int i = 0; i < 3; i++) xc_tensor_destroy(in[i]);
  xc_executor_destroy(e);
  xc_compiled_module_destroy(m);
}

int main(int argc, char** argv) {
  const char* target = "cuda";
  bool quick = false;
  int head_dim = 128;
  const char* only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) target = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) g_runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--head-dim") == 0 && i + 1 < argc) head_dim = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_gpu_kernels [--target T] [--runs R] [--quick] [--only layernorm|attention] "
                      "[--head-dim D]\n");
      return 2;
    }
  }
  if (g_runs < 1) g_runs = 1;
  bench_check(xc_targets_init(), "targets");
  if (only && strcmp(only, "layernorm") != 0 && strcmp(only, "attention") != 0) {
    fprintf(stderr, "bench_gpu_kernels: --only takes layernorm or attention, not '%s'\n", only);
    return 2;
  }
  if (!only || !strcmp(only, "layernorm")) {
    if (quick) bench_layernorm(target, 256, 512);
    else bench_layernorm(target, 16384, 4096);
  }
  if (only && strcmp(only, "attention") != 0) return 0;
  if (head_dim < 8 || head_dim > 256 || head_dim % 8) {
    fprintf(stderr, "bench_gpu_kernels: --head-dim %d is not a multiple of 8 in 8..256\n", head_dim);
    return 2;
  }
  printf("\n2. Attention (ONNX Attention op), bf16, %s D%d on %s\n", quick ? "B1 H2" : "B4 H32", quick ? 32 : head_dim,
         target);
  printf("| S | mask | ms | TFLOP/s | max row rel-L2 |\n| --- | --- | --- | --- | --- |\n");
  const int64_t seqs[2] = {1024, 4096};
  for (int si = 0; si < 2; si++)
    for (int c = 0; c < 2; c++) {
      if (quick) bench_attention(target, 1, 2, si ? 96 : 64, 32, c);
      else bench_attention(target, 4, 32, seqs[si], head_dim, c);
    }
  return 0;
}
