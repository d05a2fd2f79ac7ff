/* The cuda target. Everywhere NVRTC exists (SKIP otherwise): the shared
 * tiled kernels (elementwise, row reduction, GEMM with both epilogues,
 * LayerNorm, FlashAttention causal and not, f16/bf16 conversions and half
 * GEMMs) are emitted in CUDA C++ and compiled for sm_90; the blob must hold
 * an ELF cubin for NVIDIA (EM_CUDA) and PTX for sm_90 declaring the entry.
 * Compile errors carry the NVRTC log and the generated source line.
 * On a machine with an NVIDIA GPU (SKIP and pass without one, after checking
 * that the runtime reports "target cuda unavailable"): device capabilities,
 * then every kernel with several knob choices launched through the target
 * API and compared with the tiled interpreter (f32 rel-L2 <= 1e-5, integers
 * and 16-bit conversions exact), with NaN-poisoned outputs and sentinels
 * after every buffer; PTX fallback for a cubin of another architecture;
 * events; launch errors; vendor GEMM blobs through cuBLASLt with the SwiGLU
 * epilogues. XCOMP_CUDA_TEST_QUICK=1 runs one knob choice per
 * kernel (for compute-sanitizer). */
#define KERNEL_HARNESS_SEED 0x9e3779b97f4a7c15ull
#include "kernel_harness.h"

#include "../../targets/cuda/cuda_blaslt.h"
#include "../../targets/cuda/cuda_target.h"

static bool quick;
static xc_target_t* cuda;
static xc_device_t* dev;
static int runs;


/* ---- compilation (no GPU needed) ------------------------------------------------ */

/* Emits and compiles k for caps; checks the source and the blob. */
static bool compile_checked(const kern_t* k, const xc_device_caps_t* caps, const xc_knob_t* knobs, int nk,
                            const char* arch, xc_blob_t* blob) {
  xc_kernel_source_t src;
  xc_status_t st = xc_target_emit(cuda, caps, (const struct xc_tiled_kernel*)k, knobs, nk, &src);
  if (st) {
    fprintf(stderr, "emit %s: %s\n", k->name, xc_status_message(st));
    xc_status_free(st);
    CHECK(false);
    return false;
  }
  char entry[160];
  snprintf(entry, sizeof entry, "xk_%s", k->name);
  CHECK_STR(src.language, "cuda");
  CHECK_STR(src.entry, entry);
  CHECK(strstr(src.text, "extern \"C\" __global__ void __launch_bounds__(") != NULL);
  CHECK(strstr(src.text, "blockIdx.x") != NULL);
  CHECK(strstr(src.text, "const long long lid = (long long)(threadIdx.x % ") != NULL);
  st = xc_target_compile(cuda, caps, &src, NULL, blob);
  if (st) {
    fprintf(stderr, "compile %s for %s: %s\n", k->name, arch, xc_status_message(st));
    xc_status_free(st);
    CHECK(false);
    xc_kernel_source_release(&src);
    return false;
  }
  xc_kernel_source_release(&src);
  CHECK_STR(blob->format, XC_CUDA_BLOB_FORMAT);
  int barch = 0;
  const uint8_t* cubin = NULL;
  const char* ptx = NULL;
  size_t nc = 0, np = 0;
  CHECK(xc_cuda_blob_parts(blob, &barch, &cubin, &nc, &ptx, &np));
  if (!cubin || !ptx) return false;
  CHECK_EQ_INT(barch, atoi(arch + 3));
  /* ELF, 64-bit, little-endian, e_machine EM_CUDA (190) */
  CHECK(nc > 64 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
  CHECK_EQ_INT(cubin[4], 2);
  CHECK_EQ_INT(cubin[18] | (cubin[19] << 8), 190);
  char want[200];
  snprintf(want, sizeof want, ".entry %s(", entry);
  CHECK(strstr(ptx, want) != NULL);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(ptx, entry), ((const struct xc_tiled_kernel*)k)->num_params);
  snprintf(want, sizeof want, ".target %s", arch);
  CHECK(strstr(ptx, want) != NULL);
  snprintf(want, sizeof want, "--gpu-architecture=%s", arch);
  CHECK(blob->options && strstr(blob->options, want) != NULL);
  return true;
}

static kern_t* all_kernels[16];
static int num_kernels;

static void build_all(void) {
  all_kernels[num_kernels++] = build_elementwise();
  all_kernels[num_kernels++] = build_row_reduce();
  all_kernels[num_kernels++] = build_gemm(EPI_BIAS_GELU);
  all_kernels[num_kernels++] = build_gemm(EPI_BIAS_RELU_RESIDUAL);
  all_kernels[num_kernels++] = build_layernorm(100, 1e-5);
  all_kernels[num_kernels++] = build_attention(false, 0.25);
  all_kernels[num_kernels++] = build_attention(true, 0.25);
  all_kernels[num_kernels++] = build_convert(XC_F16);
  all_kernels[num_kernels++] = build_convert(XC_BF16);
  all_kernels[num_kernels++] = build_gemm_half(XC_F16);
  all_kernels[num_kernels++] = build_gemm_half(XC_BF16);
  /* 11-14: attention with 16-bit dot operands (f16 D=64, f16 causal
   * D=128, bf16 D=128, bf16 causal D=64) */
  for (int i = 0; i < 4; i++)
    all_kernels[num_kernels++] = build_attention_half(i < 2 ? XC_F16 : XC_BF16, i % 2 == 1, (i == 0 || i == 3) ? 64 : 128, 0.125);
  for (int i = 0; i < num_kernels; i++) CHECK(all_kernels[i] != NULL);
}

static void test_compile(void) {
  xc_device_caps_t caps;
  CHECK_OK(xc_cuda_arch_caps("sm_90", &caps));
  /* Is NVRTC here at all? */
  xc_kernel_source_t trivial = {"cuda", "extern \"C\" __global__ void xk_t(float* p) { p[threadIdx.x] = 1.0f; }",
                                "xk_t"};
  xc_blob_t blob;
  xc_status_t st = xc_target_compile(cuda, &caps, &trivial, NULL, &blob);
  if (st && xc_status_code(st) == XC_UNAVAILABLE) {
    printf("SKIP compilation: %s\n", xc_status_message(st));
    CHECK(strstr(xc_status_message(st), "target cuda unavailable: ") == xc_status_message(st));
    xc_status_free(st);
    return;
  }
  CHECK_OK(st);
  /* The launch check's parameter count comes from the PTX entry. */
  const char* ptx = NULL;
  size_t nptx = 0;
  int arch = 0;
  const uint8_t* cubin = NULL;
  size_t ncubin = 0;
  CHECK(xc_cuda_blob_parts(&blob, &arch, &cubin, &ncubin, &ptx, &nptx));
  CHECK_EQ_INT(xc_cuda_ptx_param_count(ptx, "xk_t"), 1);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(ptx, "xk"), -1);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(ptx, "xk_t_other"), -1);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(".entry k(\n\t.param .u64 k_param_0,\n\t.param .align 8 .b8 k_param_1[16]\n)", "k"), 2);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(".entry k()\n{", "k"), 0);
  CHECK_EQ_INT(xc_cuda_ptx_param_count(".entry k(\n\t.param .u64 k_param_0,", "k"), -1); /* cut short */
  xc_blob_release(&blob);

  int compiled = 0;
  for (int i = 0; i < num_kernels; i++) {
    if (!all_kernels[i]) continue;
    if (compile_checked(all_kernels[i], &caps, NULL, 0, "sm_90", &blob)) compiled++;
    xc_blob_release(&blob);
  }
  CHECK_EQ_INT(compiled, num_kernels);
  printf("compiled %d kernels for sm_90 with NVRTC\n", compiled);

  /* The GEMM's staging tiles are __shared__ and it synchronizes. */
  xc_kernel_source_t src;
  CHECK_OK(xc_target_emit(cuda, &caps, (const struct xc_tiled_kernel*)all_kernels[2], NULL, 0, &src));
  if (src.text) {
    CHECK(strstr(src.text, "__shared__ float ") != NULL);
    CHECK(strstr(src.text, "__syncthreads();") != NULL);
    CHECK(strstr(src.text, "__launch_bounds__(128)") != NULL); /* default num_threads */
    CHECK(strstr(src.text, "emitted for cuda") != NULL);
  }
  xc_kernel_source_release(&src);

  /* Attention with 16-bit operands: both dots on tensor cores (staged
   * operands, mma.sync m16n8k16 of the operands' type) for sm_90 and sm_80,
   * in the source and in the PTX. */
  for (int i = 11; i < 15; i++) {
    const kern_t* k = all_kernels[i];
    if (!k) continue;
    const char* ty = k->params[0]->type.dtype == XC_F16 ? "f16" : "bf16";
    char mma[96];
    snprintf(mma, sizeof mma, "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32", ty, ty);
    for (int a = 0; a < 2; a++) {
      xc_device_caps_t ac;
      CHECK_OK(xc_cuda_arch_caps(a ? "sm_80" : "sm_90", &ac));
      CHECK_OK(xc_target_emit(cuda, &ac, (const struct xc_tiled_kernel*)k, NULL, 0, &src));
      int staged = 0;
      for (const char* p = src.text; p && (p = strstr(p, "operands staged in work-group memory")); p++) staged++;
      CHECK_EQ_INT(staged, 2);
      CHECK(src.text && strstr(src.text, mma) != NULL);
      xc_kernel_source_release(&src);
      if (!compile_checked(k, &ac, NULL, 0, a ? "sm_80" : "sm_90", &blob)) continue;
      int barch = 0;
      const uint8_t* kbin = NULL;
      const char* kptx = NULL;
      size_t nc = 0, np = 0;
      CHECK(xc_cuda_blob_parts(&blob, &barch, &kbin, &nc, &kptx, &np));
      int n = 0;
      for (const char* p = kptx; p && (p = strstr(p, mma)); p++) n++;
      if (n < 2) fprintf(stderr, "%s for sm_%d: %d mma.sync in the PTX\n", k->name, barch, n);
      CHECK(n >= 2);
      xc_blob_release(&blob);
    }
  }

  /* Another architecture comes from the selector. */
  xc_device_caps_t caps80;
  CHECK_OK(xc_cuda_arch_caps("sm_80", &caps80));
  xc_knob_t knobs[] = {{"BLOCK_M", 64}, {"BLOCK_N", 32}, {"num_threads", 256}};
  if (all_kernels[2]) CHECK(compile_checked(all_kernels[2], &caps80, knobs, 3, "sm_80", &blob));
  xc_blob_release(&blob);

  /* Flags: defaults replaced, extras appended, recorded in the blob. */
  xc_compile_options_t opts = {0};
  opts.flags = "-std=c++17";
  opts.extra_flags = "-DXC_TEST_VALUE=3 --use_fast_math";
  CHECK_OK(xc_target_compile(cuda, &caps, &trivial, &opts, &blob));
  CHECK_STR(blob.options, "--gpu-architecture=sm_90 -default-device -std=c++17 -DXC_TEST_VALUE=3 --use_fast_math");
  xc_blob_release(&blob);

  /* A compile error shows NVRTC's log and the generated line it points at. */
  xc_kernel_source_t bad = {"cuda",
                            "extern \"C\" __global__ void xk_bad(float* x) {\n"
                            "  x[0] = 1.0f;\n"
                            "  x[1] = undefined_thing * 2.0f;\n"
                            "}\n",
                            "xk_bad"};
  st = xc_target_compile(cuda, &caps, &bad, NULL, &blob);
  CHECK(st != NULL);
  if (st) {
    const char* msg = xc_status_message(st);
    CHECK(strstr(msg, "xk_bad.cu(3)") != NULL);
    CHECK(strstr(msg, "undefined_thing") != NULL);
    CHECK(strstr(msg, "generated source line 3:   x[1] = undefined_thing * 2.0f;") != NULL);
    CHECK(strstr(msg, "sm_90") != NULL);
    CHECK_EQ_INT(xc_status_code(st), XC_INVALID_ARGUMENT);
    xc_status_free(st);
  }
  CHECK(blob.bytes == NULL);
  xc_kernel_source_t c_source = {"c", "int x;", "x"};
  CHECK_ERR(xc_target_compile(cuda, &caps, &c_source, NULL, &blob), "not c");
  xc_device_caps_t no_arch;
  memset(&no_arch, 0, sizeof no_arch);
  snprintf(no_arch.name, sizeof no_arch.name, "mystery");
  CHECK_ERR(xc_target_compile(cuda, &no_arch, &trivial, NULL, &blob), "cannot tell the architecture");
}

/* Architecture capabilities and selectors; no GPU needed. */
static void test_arch_caps(void) {
  xc_device_caps_t caps;
  CHECK_OK(xc_cuda_arch_caps("sm_90", &caps));
  CHECK_EQ_INT(caps.kind, XC_DEVICE_GPU);
  CHECK_EQ_INT(caps.simd_width, 32);
  CHECK_EQ_INT(caps.max_threads_per_group, 1024);
  CHECK_EQ_INT(caps.local_memory_bytes, 49152);
  CHECK_EQ_INT(xc_cuda_caps_arch(&caps), 90);
  CHECK(caps.dtypes & XC_DT(XC_BF16));
  bool wgmma = false, mma_bf16 = false;
  for (int i = 0; i < caps.num_mma_shapes; i++) {
    xc_mma_shape_t s = caps.mma_shapes[i];
    wgmma |= s.m == 64 && s.k == 16 && s.input_dtype == XC_F16 && s.accumulator_dtype == XC_F32;
    mma_bf16 |= s.m == 16 && s.n == 8 && s.k == 16 && s.input_dtype == XC_BF16;
  }
  CHECK(wgmma && mma_bf16);
  CHECK_OK(xc_cuda_arch_caps("80", &caps));
  CHECK_EQ_INT(xc_cuda_caps_arch(&caps), 80);
  for (int i = 0; i < caps.num_mma_shapes; i++) CHECK(caps.mma_shapes[i].m != 64); /* no wgmma before sm_90 */
  CHECK_ERR(xc_cuda_arch_caps("sm_9", &caps), "not a CUDA architecture");
  CHECK_ERR(xc_cuda_arch_caps("gfx90a", &caps), "not a CUDA architecture");
  CHECK_ERR(xc_cuda_arch_caps("sm_90x", &caps), "not a CUDA architecture");

  xc_target_t* t = NULL;
  int index = 7;
  CHECK_OK(xc_cuda_select("cuda:sm_90", &t, &caps, &index));
  CHECK(t == cuda);
  CHECK_EQ_INT(xc_cuda_caps_arch(&caps), 90);
  xc_status_t avail = xc_target_availability(cuda);
  if (avail == NULL) CHECK(index >= -1);
  else CHECK_EQ_INT(index, -1);
  xc_status_free(avail);
  CHECK_ERR(xc_cuda_select("opencl:0", &t, &caps, &index), "not a cuda selector");
}

/* ---- running on a GPU ------------------------------------------------------------- */

static void run_kernel(const kern_t* k, const int64_t* knob_values, const xc_tiled_arg_t* args,
                       xc_tensor_t* const* ref, const char* label, const xc_device_caps_t* compile_caps) {
  const xc_device_caps_t* caps = compile_caps ? compile_caps : xc_device_caps(dev);
  xc_knob_t knobs[16];
  for (int i = 0; i < k->num_knobs; i++) knobs[i] = (xc_knob_t){k->knobs[i].name, knob_values[i]};
  xc_blob_t blob;
  xc_status_t st =
      xc_target_compile_kernel(cuda, caps, (const struct xc_tiled_kernel*)k, knobs, k->num_knobs, NULL, &blob);
  if (st) {
    fprintf(stderr, "%s: %s\n", label, xc_status_message(st));
    xc_status_free(st);
    CHECK(false);
    return;
  }
  kernel_launch_check(dev, &blob, k, knob_values, args, ref, label, getenv("XCOMP_CUDA_TEST_VERBOSE") != NULL);
  runs++;
}

static void check_kernel(const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args, const char* label,
                         const xc_device_caps_t* compile_caps) {
  int64_t values[16];
  xc_tensor_t* ref[16];
  kernel_reference(k, knobs, args, values, ref);
  run_kernel(k, values, args, ref, label, compile_caps);
}

static int nchoices(int n) { return quick ? 1 : n; }

static void gpu_elementwise(const xc_device_caps_t* compile_caps, const char* tag) {
  const kern_t* k = all_kernels[0];
  const int64_t choices[][3] = {{4, 32, 64}, {1, 16, 32}, {8, 64, 128}};
  const int64_t sizes[][2] = {{13, 37}, {8, 64}, {1, 1}};
  for (int c = 0; c < nchoices(3); c++)
    for (int s = 0; s < 3; s++) {
      int64_t m = sizes[s][0], n = sizes[s][1];
      xc_tiled_arg_t args[7] = {{tensor(XC_F32, m * n, true), 0}, {tensor(XC_F32, n, true), 0},
                                {tensor(XC_F32, m, true), 0},     {tensor(XC_F32, m * n, false), 0},
                                {tensor(XC_I32, m * n, false), 0}, {NULL, m}, {NULL, n}};
      char label[128];
      snprintf(label, sizeof label, "%selementwise %lldx%lld knobs %d", tag, (long long)m, (long long)n, c);
      check_kernel(k, choices[c], args, label, compile_caps);
      free_args(args, 7);
    }
}

static void gpu_kernels(void) {
  gpu_elementwise(NULL, "");
  {
    const kern_t* k = all_kernels[1];
    const int64_t choices[][3] = {{2, 32, 64}, {1, 8, 16}, {8, 128, 256}};
    const int64_t sizes[][2] = {{7, 100}, {16, 32}, {3, 5}};
    for (int c = 0; c < nchoices(3); c++)
      for (int s = 0; s < 3; s++) {
        int64_t r = sizes[s][0], n = sizes[s][1];
        xc_tiled_arg_t args[5] = {{tensor(XC_F32, r * n, true), 0}, {tensor(XC_F32, r, false), 0},
                                  {tensor(XC_F32, r, false), 0}, {NULL, r}, {NULL, n}};
        char label[128];
        snprintf(label, sizeof label, "row reduce %lldx%lld knobs %d", (long long)r, (long long)n, c);
        check_kernel(k, choices[c], args, label, NULL);
        free_args(args, 5);
      }
  }
  {
    const int64_t choices[][6] = {{32, 32, 16, 128, 4, 2}, {16, 16, 8, 32, 1, 1}, {64, 32, 32, 256, 2, 3},
                                  {16, 64, 16, 64, 4, 2}, {64, 64, 16, 256, 1, 1}};
    const int64_t sizes[][3] = {{67, 45, 33}, {64, 64, 32}, {1, 3, 1}, {200, 130, 70}};
    for (int epi = 0; epi < 2; epi++) {
      const kern_t* k = all_kernels[2 + epi];
      for (int c = 0; c < nchoices(5); c++)
        for (int s = 0; s < 4; s++) {
          if (s == 1 && c > 1) continue;
          int64_t m = sizes[s][0], n = sizes[s][1], kk = sizes[s][2];
          xc_tiled_arg_t args[8] = {{tensor(XC_F32, m * kk, true), 0}, {tensor(XC_F32, kk * n, true), 0},
                                    {tensor(XC_F32, n, true), 0},      {tensor(XC_F32, m * n, true), 0},
                                    {tensor(XC_F32, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
          char label[128];
          snprintf(label, sizeof label, "gemm epi %d %lldx%lldx%lld knobs %d", epi, (long long)m, (long long)n,
                   (long long)kk, c);
          check_kernel(k, choices[c], args, label, NULL);
          free_args(args, 8);
        }
    }
  }
  {
    const kern_t* k = all_kernels[4];
    const int64_t choices[][2] = {{2, 128}, {1, 128}, {4, 256}};
    for (int c = 0; c < nchoices(3); c++) {
      int64_t rows = c == 2 ? 9 : 7, n = 100;
      xc_tiled_arg_t args[7] = {{tensor(XC_F32, rows * n, true), 0}, {tensor(XC_F32, rows * n, true), 0},
                                {tensor(XC_F32, n, true), 0},        {tensor(XC_F32, n, true), 0},
                                {tensor(XC_F32, rows * n, false), 0}, {NULL, rows}, {NULL, n}};
      char label[128];
      snprintf(label, sizeof label, "layernorm %lldx%lld knobs %d", (long long)rows, (long long)n, c);
      check_kernel(k, choices[c], args, label, NULL);
      free_args(args, 7);
    }
  }
  {
    const int64_t choices[][3] = {{16, 16, 64}, {8, 16, 32}, {32, 8, 128}};
    const int64_t sizes[][2] = {{2, 37}, {1, 64}, {1, 5}, {3, 130}};
    for (int causal = 0; causal < 2; causal++) {
      const kern_t* k = all_kernels[5 + causal];
      for (int c = 0; c < nchoices(3); c++)
        for (int s = 0; s < 4; s++) {
          int64_t sl = sizes[s][1];
          xc_tiled_arg_t args[6];
          attention_args(sizes[s][0], sl, args);
          char label[128];
          snprintf(label, sizeof label, "attention causal %d S=%lld knobs %d", causal, (long long)sl, c);
          check_kernel(k, choices[c], args, label, NULL);
          free_args(args, 6);
        }
    }
  }
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    const kern_t* k = all_kernels[7 + h];
    const int64_t n = 65536;
    xc_tiled_arg_t args[5] = {{tensor(XC_F32, n, false), 0}, {tensor(half, n, false), 0},
                              {tensor(half, n, false), 0},   {tensor(XC_F32, n, false), 0}, {NULL, n}};
    float* a = (float*)args[0].buffer->data;
    uint16_t* b = (uint16_t*)args[2].buffer->data;
    const float special[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e6f, INFINITY, -INFINITY, NAN,
                             5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.9406967e-8f, 6.1035156e-5f,
                             6.1035152e-5f, 3.3895314e38f, 1.0009766f, 1.0004883f, 1.0014648f};
    for (int64_t i = 0; i < n; i++) {
      b[i] = (uint16_t)i;
      if (i < (int64_t)(sizeof special / sizeof special[0])) a[i] = special[i];
      else {
        uint32_t u = (uint32_t)(rnd() * 2147483647.0) ^ (uint32_t)(i * 2654435761u);
        if (i % 3 == 0) u = (u & 0xffff0000u) | (h ? 0x8000u : 0x1000u);
        memcpy(&a[i], &u, 4);
      }
    }
    const int64_t choices[][2] = {{256, 64}, {64, 32}};
    for (int c = 0; c < nchoices(2); c++) check_kernel(k, choices[c], args, h ? "convert bf16" : "convert f16", NULL);
    free_args(args, 5);
  }
  for (int h = 0; h < 2; h++) {
    xc_dtype_t half = h ? XC_BF16 : XC_F16;
    const kern_t* k = all_kernels[9 + h];
    int64_t m = 37, n = 21, kk = 50;
    xc_tiled_arg_t args[6] = {{tensor(half, m * kk, true), 0}, {tensor(half, kk * n, true), 0},
                              {tensor(half, m * n, false), 0}, {NULL, m}, {NULL, n}, {NULL, kk}};
    const int64_t choices[][4] = {{16, 16, 16, 64}, {32, 16, 32, 128}};
    for (int c = 0; c < nchoices(2); c++) check_kernel(k, choices[c], args, h ? "gemm bf16" : "gemm f16", NULL);
    free_args(args, 6);
  }
  /* attention on tensor cores: knobs BLOCK_M BLOCK_N num_threads */
  for (int i = 11; i < 15; i++) {
    const kern_t* k = all_kernels[i];
    xc_dtype_t t = k->params[0]->type.dtype;
    int64_t d = (i == 11 || i == 14) ? 64 : 128;
    const int64_t choices[][3] = {{32, 32, 128}, {16, 32, 64}, {64, 16, 128}};
    const int64_t sizes[][2] = {{2, 96}, {3, 45}, {1, 7}};
    for (int c = 0; c < nchoices(3); c++)
      for (int s = 0; s < 3; s++) {
        int64_t bh = sizes[s][0], sl = sizes[s][1], n = bh * sl * d;
        xc_tiled_arg_t args[6] = {{tensor(t, n, true), 0},        {tensor(t, n, true), 0}, {tensor(t, n, true), 0},
                                  {tensor(XC_F32, n, false), 0}, {NULL, sl},              {NULL, bh}};
        char label[128];
        snprintf(label, sizeof label, "%s D=%lld S=%lld knobs %d", k->name, (long long)d, (long long)sl, c);
        check_kernel(k, choices[c], args, label, NULL);
        free_args(args, 6);
      }
  }
}

/* Vendor GEMM blobs through cuBLASLt: the plain product and both SwiGLU
 * epilogues (the library's product, then the target's elementwise step in
 * place) in each dtype, against the host: the product (exact: small
 * multiples of 1/8) rounded to the dtype, then silu in double, rounded.
 * M x N = 777 elements: the step's vector accesses and a tail of one. */
static void gpu_vendor_gemm(void) {
  char why[256];
  if (!xc_cublaslt_available(why, sizeof why)) {
    printf("SKIP vendor GEMM: %s\n", why);
    return;
  }
  enum { M = 37, N = 21, K = 48 };
  const xc_dtype_t dts[3] = {XC_F32, XC_F16, XC_BF16};
  const xc_vendor_epilogue_t epis[3] = {XC_VENDOR_EPILOGUE_NONE, XC_VENDOR_EPILOGUE_SWIGLU_A,
                                        XC_VENDOR_EPILOGUE_SWIGLU_B};
  for (int d = 0; d < 3; d++)
    for (int e = 0; e < 3; e++) {
      xc_dtype_t dt = dts[d];
      xc_vendor_gemm_t g = {dt, false, false, M, N, K, epis[e], 0, 1, -1, 3, false, e ? 2 : -1};
      xc_tensor_t *a = tensor(dt, M * K, false), *b = tensor(dt, K * N, false), *u = tensor(dt, M * N, false),
                  *y = tensor(dt, M * N, false);
      if (!a || !b || !u || !y) {
        CHECK(false);
        xc_tensor_destroy(a), xc_tensor_destroy(b), xc_tensor_destroy(u), xc_tensor_destroy(y);
        continue;
      }
      for (int64_t i = 0; i < M * K; i++) xc_tensor_set_f64(a, i, (double)((int)(i * 7 % 9) - 4) / 8);
      for (int64_t i = 0; i < K * N; i++) xc_tensor_set_f64(b, i, (double)((int)(i * 5 % 7) - 3) / 8);
      for (int64_t i = 0; i < M * N; i++) xc_tensor_set_f64(u, i, (double)((int)(i * 3 % 11) - 5) / 4);
      memset(y->data, 0xff, xc_tensor_nbytes(y)); /* NaN in every dtype */
      xc_tensor_t* host[4] = {a, b, u, y};
      xc_buffer_t* bufs[4] = {NULL, NULL, NULL, NULL};
      for (int i = 0; i < 4; i++) {
        CHECK_OK(xc_buffer_alloc(dev, xc_tensor_nbytes(host[i]), &bufs[i]));
        if (bufs[i]) CHECK_OK(xc_buffer_write(bufs[i], 0, host[i]->data, xc_tensor_nbytes(host[i])));
      }
      xc_blob_t blob;
      memset(&blob, 0, sizeof blob);
      snprintf(blob.format, sizeof blob.format, "%s", XC_VENDOR_GEMM_FORMAT);
      blob.bytes = malloc(XC_VENDOR_GEMM_BYTES);
      blob.size = XC_VENDOR_GEMM_BYTES;
      xc_vendor_gemm_pack(&g, blob.bytes);
      xc_module_t* mod = NULL;
      xc_kernel_t* k = NULL;
      CHECK_OK(xc_module_load(dev, &blob, &mod));
      if (mod) CHECK_OK(xc_module_kernel(mod, "vendor_gemm", &k));
      if (k && bufs[0] && bufs[1] && bufs[2] && bufs[3]) {
        xc_launch_t launch = {{1, 1, 1}, {1, 1, 1}, bufs, 4, NULL, 0};
        CHECK_OK(xc_kernel_launch(k, &launch));
        CHECK_OK(xc_device_synchronize(dev));
        CHECK_OK(xc_buffer_read(bufs[3], 0, y->data, xc_tensor_nbytes(y)));
        double tol = dt == XC_F32 ? 1e-5 : dt == XC_F16 ? 2e-3 : 1.6e-2;
        int bad = 0;
        for (int i = 0; i < M; i++)
          for (int j = 0; j < N; j++) {
            double p = 0;
            for (int q = 0; q < K; q++) p += xc_tensor_get_f64(a, i * K + q) * xc_tensor_get_f64(b, q * N + j);
            p = xc_round_to_dtype(dt, p);
            double w = xc_tensor_get_f64(u, i * N + j), want = p;
            if (epis[e] == XC_VENDOR_EPILOGUE_SWIGLU_A) want = p / (1 + exp(-p)) * w;
            if (epis[e] == XC_VENDOR_EPILOGUE_SWIGLU_B) want = p * (w / (1 + exp(-w)));
            double got = xc_tensor_get_f64(y, i * N + j);
            if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
              if (bad++ < 3)
                printf("vendor GEMM %s epilogue %d [%d,%d]: got %g, want %g\n", xc_dtype_name(dt), (int)epis[e], i,
                       j, got, want);
            }
          }
        CHECK_EQ_INT(bad, 0);
        runs++;
      }
      xc_module_unload(mod);
      xc_blob_release(&blob);
      for (int i = 0; i < 4; i++) {
        xc_buffer_free(bufs[i]);
        xc_tensor_destroy(host[i]);
      }
    }
}

/* Hand-written kernels: events, launch errors, PTX fallback, empty buffers. */
static void gpu_runtime(const xc_device_caps_t* caps) {
  xc_kernel_source_t src = {"cuda",
                            "extern \"C\" __global__ void vadd(const float* a, const float* b, float* c, long long n) {\n"
                            "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "  if (i < n) c[i] = a[i] + b[i];\n"
                            "}\n",
                            "vadd"};
  xc_blob_t blob;
  CHECK_OK(xc_target_compile(cuda, caps, &src, NULL, &blob));
  xc_module_t* module = NULL;
  CHECK_OK(xc_module_load(dev, &blob, &module));
  xc_blob_release(&blob);
  if (!module) return;
  xc_kernel_t* vadd = NULL;
  CHECK_ERR(xc_module_kernel(module, "nope", &vadd), "no kernel 'nope'");
  CHECK_OK(xc_module_kernel(module, "vadd", &vadd));
  enum { N = 1000 };
  float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = (float)(1000 - 2 * i), c[i] = -1;
  xc_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  CHECK_OK(xc_buffer_alloc(dev, sizeof a, &ba));
  CHECK_OK(xc_buffer_alloc(dev, sizeof b, &bb));
  CHECK_OK(xc_buffer_alloc(dev, sizeof c, &bc));
  if (vadd && ba && bb && bc) {
    CHECK(xc_buffer_host_pointer(ba) == NULL);
    CHECK_OK(xc_buffer_write(ba, 0, a, sizeof a));
    CHECK_OK(xc_buffer_write(bb, 0, b, sizeof b));
    CHECK_OK(xc_buffer_write(bc, 0, c, sizeof c));
    xc_buffer_t* bufs[] = {ba, bb, bc};
    int64_t n = N;
    xc_launch_t launch = {{(N + 127) / 128, 1, 1}, {128, 1, 1}, bufs, 3, &n, 1};
    xc_event_t *e0 = NULL, *e1 = NULL;
    CHECK_OK(xc_event_record(dev, &e0));
    for (int r = 0; r < 10; r++) CHECK_OK(xc_kernel_launch(vadd, &launch));
    CHECK_OK(xc_event_record(dev, &e1));
    double ms = -1;
    if (e0 && e1) CHECK_OK(xc_event_elapsed_ms(e0, e1, &ms));
    printf("10 launches of vadd: %.3f ms (events)\n", ms);
    CHECK(ms >= 0 && ms < 60000);
    xc_event_free(e0);
    xc_event_free(e1);
    CHECK_OK(xc_buffer_read(bc, 0, c, sizeof c));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += c[i] != (float)(1000 - i);
    CHECK_EQ_INT(wrong, 0);
    float tail[2] = {0, 0};
    CHECK_OK(xc_buffer_read(bc, (N - 2) * sizeof(float), tail, sizeof tail));
    CHECK_NEAR(tail[0], 2.0, 0);
    CHECK_NEAR(tail[1], 1.0, 0);
    xc_launch_t huge = launch;
    huge.threads[0] = caps->max_threads_per_group + 1;
    CHECK_ERR(xc_kernel_launch(vadd, &huge), "limit");
    xc_launch_t short_args = launch;
    short_args.num_scalars = 0;
    xc_status_t st = xc_kernel_launch(vadd, &short_args);
    if (st) CHECK(strstr(xc_status_message(st), "takes 4 arguments") != NULL);
    else printf("note: the driver cannot report parameter counts (no cuFuncGetParamInfo)\n");
    xc_status_free(st);
    CHECK_OK(xc_device_synchronize(dev));

    /* A mapped output (cuMemHostAlloc + DEVICEMAP): the kernel writes pinned
     * host memory; after synchronize the host reads it in place, and copies
     * and host writes work on it too. */
    xc_buffer_t* bm = NULL;
    CHECK_OK(xc_buffer_alloc_mapped(dev, sizeof c, &bm));
    float* host = bm ? xc_buffer_host_pointer(bm) : NULL;
    CHECK(host != NULL);
    if (host) {
      for (int i = 0; i < N; i++) host[i] = -1;
      xc_buffer_t* mbufs[] = {ba, bb, bm};
      xc_launch_t mapped = launch;
      mapped.buffers = mbufs;
      CHECK_OK(xc_kernel_launch(vadd, &mapped));
      CHECK_OK(xc_device_synchronize(dev));
      wrong = 0;
      for (int i = 0; i < N; i++) wrong += host[i] != (float)(1000 - i);
      CHECK_EQ_INT(wrong, 0);
      float two[2] = {5, 6}, back[2] = {0, 0};
      CHECK_OK(xc_buffer_write(bm, 0, two, sizeof two));
      CHECK_NEAR(host[1], 6.0, 0);
      host[0] = 7;
      CHECK_OK(xc_buffer_read(bm, 0, back, sizeof back));
      CHECK_NEAR(back[0], 7.0, 0);
    }
    xc_buffer_free(bm);
  }
  xc_buffer_free(ba);
  xc_buffer_free(bb);
  xc_buffer_free(bc);
  xc_module_unload(module);

  xc_blob_t wrong = {"elf-so", (uint8_t*)"x", 1, NULL};
  xc_module_t* broken = NULL;
  CHECK_ERR(xc_module_load(dev, &wrong, &broken), "cuda-cubin+ptx blob");
  xc_blob_t junk = {XC_CUDA_BLOB_FORMAT, (uint8_t*)"XCCUDA01 but nothing else", 25, NULL};
  CHECK_ERR(xc_module_load(dev, &junk, &broken), "malformed");
  CHECK(broken == NULL);
  xc_buffer_t* empty = NULL;
  CHECK_OK(xc_buffer_alloc(dev, 0, &empty));
  CHECK_OK(xc_buffer_write(empty, 0, NULL, 0));
  CHECK_ERR(xc_buffer_read(empty, 0, c, 4), "outside");
  xc_buffer_free(empty);

  /* A cubin for another major architecture does not load: the PTX does. */
  int arch = xc_cuda_caps_arch(caps);
  const char* other = arch >= 80 && arch < 90 ? "sm_75" : "sm_80";
  xc_device_caps_t other_caps;
  CHECK_OK(xc_cuda_arch_caps(other, &other_caps));
  int before = xc_cuda_ptx_fallback_count();
  gpu_elementwise(&other_caps, "PTX fallback ");
  CHECK(xc_cuda_ptx_fallback_count() > before);
  printf("PTX fallback (%s cubin on sm_%d): %d modules\n", other, arch, xc_cuda_ptx_fallback_count() - before);
}

int main(void) {
  quick = getenv("XCOMP_CUDA_TEST_QUICK") && atoi(getenv("XCOMP_CUDA_TEST_QUICK"));
  CHECK_OK(xc_targets_init());
  for (int i = 0; i < xc_target_count(); i++)
    if (strcmp(xc_target_name(xc_target_at(i)), "cuda") == 0) cuda = xc_target_at(i);
  CHECK(cuda != NULL);
  if (!cuda) return xc_test_summary("test_target_cuda");
  CHECK_STR(xc_target_origin(cuda), "built-in");
  build_all();
  test_arch_caps();
  test_compile();

  xc_status_t st = xc_device_open("cuda", &dev);
  if (st) {
    printf("SKIP runtime: %s\n", xc_status_message(st));
    CHECK(xc_status_code(st) == XC_UNAVAILABLE);
    CHECK(strstr(xc_status_message(st), "target cuda unavailable: ") == xc_status_message(st));
    xc_status_free(st);
  } else {
    const xc_device_caps_t* caps = xc_device_caps(dev);
    char summary[512];
    xc_device_caps_summary(caps, summary, sizeof summary);
    printf("cuda:0 %s (%s; %s): %s\n", caps->name, caps->vendor, caps->version, summary);
    CHECK_EQ_INT(caps->kind, XC_DEVICE_GPU);
    CHECK(caps->compute_units >= 1);
    CHECK_EQ_INT(caps->simd_width, 32);
    CHECK(caps->max_threads_per_group >= 1024);
    CHECK(caps->local_memory_bytes >= 48 * 1024);
    CHECK(caps->global_memory_bytes > ((int64_t)1 << 30));
    int arch = xc_cuda_caps_arch(caps);
    CHECK(arch >= 50);
    if (arch >= 80) CHECK(caps->num_mma_shapes >= 3);
    /* cuda:sm_XX picks the present device of that architecture */
    char sel[32];
    snprintf(sel, sizeof sel, "cuda:sm_%d", arch);
    xc_target_t* t = NULL;
    int index = -1;
    xc_device_caps_t sel_caps;
    CHECK_OK(xc_cuda_select(sel, &t, &sel_caps, &index));
    CHECK_EQ_INT(index, 0);
    CHECK_OK(xc_target_find(sel, &t, &index));
    CHECK_EQ_INT(index, 0);
    gpu_kernels();
    /* every module so far was compiled for this device: its cubin loaded */
    CHECK_EQ_INT(xc_cuda_ptx_fallback_count(), 0);
    gpu_runtime(caps);
    gpu_vendor_gemm();
    printf("%d kernel launches compared with the interpreter\n", runs);
    xc_device_close(dev);
  }
  for (int i = 0; i < num_kernels; i++) xc_tiled_kernel_destroy(all_kernels[i]);
  return xc_test_summary("test_target_cuda");
}
