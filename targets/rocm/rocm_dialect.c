/* The HIP dialect of the C-family emitter (docs/emitter.md,
 * docs/targets/rocm.md): HIP C++ for hiprtc or hipcc on AMD GPUs, and the
 * same text for NVRTC on NVIDIA GPUs (the rocm_nv target). A program is one
 * thread block of `threads` threads (__launch_bounds__), tiles are
 * __shared__ arrays (LDS) or distributed over per-thread arrays, and the
 * barrier is __syncthreads(). Only the part of the HIP kernel language that
 * HIP and CUDA spell alike is used, so the text is one source for both
 * platforms; AMD-only code (matrix instructions) sits under #if on the
 * architectures that have it (__gfx90a__, ...).
 *
 * Headers: hiprtc has the HIP runtime header built in (__HIPCC_RTC__),
 * hipcc needs <hip/hip_runtime.h>, and NVRTC (__CUDACC_RTC__) has CUDA's
 * built-ins, which are the HIP spellings used here. The prelude's helper
 * functions carry no __device__: on clang (hiprtc, hipcc) the
 * force_cuda_host_device pragma makes them host+device, on NVRTC
 * -default-device does. */
#include "../cuda/cuda_dialect.h"
#include "rocm_target.h"

/* The kernel function as CUDA writes it, after closing the prelude's
 * host+device region. lid without CUDA's `% threads`: PoCL (LLVM 15)
 * computed one kernel wrong with that bound (docs/emitter.md), and AMD's
 * compilers are LLVM too while the AMD code is only ever compiled here,
 * never run. */
static void hip_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  xc_cstyle_printf(w, "#if defined(__clang__) && defined(__HIP__)\n#pragma clang force_cuda_host_device end\n#endif\n");
  xc_cuda_write_kernel(w, d, e, false);
}

/* ---- MFMA (docs/targets/rocm.md, "Matrix instructions") ----
 * CDNA (gfx908, gfx90a, gfx94x), wave 64. The waves of a block form a
 * WM x WN grid; each computes a TM x TN part of the [m,n] accumulator as
 * MT x NT blocks of S x S (S = 32: v_mfma_f32_32x32x8{f16,bf16_1k} /
 * 32x32x2f32, 16 accumulator registers; S = 16: 16x16x16{f16,bf16_1k} /
 * 16x16x4f32, 4 registers). Per instruction lane l supplies row l%S of A
 * and column l%S of B at k = (l/S)*E + i (E = 4 for 16-bit operands, 1 for
 * f32), and holds accumulator register v of the block at row
 * 8*(v/4) + 4*(l/S) + v%4, column l%S. Slot s of a work-item is register
 * s%R of block (mt, nt) = ((s/R)/NT, (s/R)%NT).
 * Only compiled for the architectures that have these instructions; any
 * other compiler (NVRTC for rocm_nv) gets a plain loop over the same slots,
 * so the layout and the staging are the same on both platforms. */
/* P_WMMA: 1 in a WMMA plan (below), 0 in an MFMA one */
enum { P_WM, P_WN, P_TM, P_TN, P_S, P_KI, P_WMMA };

static bool wmma_arch(const xc_device_caps_t* caps);
static bool wmma_plan(xc_cstyle_dot_t* t);
static void wmma_slot_index(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* s);
static void wmma_emit_dot(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in);

static bool hip_dot_plan(const xc_cstyle_dialect_t* d, xc_cstyle_dot_t* t) {
  (void)d;
  if (wmma_arch(t->caps)) return wmma_plan(t);
  if (t->acc_dtype != XC_F32 || t->a_dtype != t->b_dtype || t->warp != 64 || t->threads % 64) return false;
  bool half = t->a_dtype == XC_F16 || t->a_dtype == XC_BF16;
  if (!half && t->a_dtype != XC_F32) return false;
  int64_t waves = t->threads / 64, best = -1;
  for (int S = 32; S >= 16 && best < 0; S -= 16) {
    int ki = half ? (S == 32 ? 8 : 16) : (S == 32 ? 2 : 4);
    if (!xc_cuda_caps_have_mma(t->caps, S, S, ki, t->a_dtype) || t->k % ki) continue;
    for (int64_t wm = 1; wm <= waves; wm++) {
      if (waves % wm) continue;
      int64_t wn = waves / wm;
      if (t->m % wm || t->n % wn) continue;
      int64_t tm = t->m / wm, tn = t->n / wn;
      if (tm % S || tn % S || tm * tn / 64 > 128) continue;
      int64_t score = tm + tn; /* LDS reads per wave and k */
      if (best < 0 || score < best) {
        best = score;
        t->params[P_WM] = wm, t->params[P_WN] = wn, t->params[P_TM] = tm, t->params[P_TN] = tn;
        t->params[P_S] = S, t->params[P_KI] = ki;
      }
    }
  }
  if (best < 0) return false;
  t->slots = t->params[P_TM] * t->params[P_TN] / 64;
  t->inst_m = (int)t->params[P_S], t->inst_n = (int)t->params[P_S], t->inst_k = (int)t->params[P_KI];
  /* 16 bytes of padding per row keeps rows 16-byte aligned and shifts
   * consecutive rows across LDS banks */
  t->lda = t->k + (half ? 8 : 4);
  t->ldb = t->n + (half ? 8 : 4);
  return true;
}

static void hip_dot_slot_index(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* s) {
  if (t->params[P_WMMA]) {
    wmma_slot_index(w, t, s);
    return;
  }
  const int64_t* p = t->params;
  long long S = p[P_S], R = S * S / 64, NT = p[P_TN] / S, WM = p[P_WM];
  xc_cstyle_printf(w,
                   "((((lid >> 6) %% %lld) * %lld + ((%s) / %lld / %lld) * %lld + (((%s) %% %lld) >> 2) * 8 + "
                   "((lid & 63) / %lld) * 4 + ((%s) & 3)) * %lld + ((lid >> 6) / %lld) * %lld + "
                   "(((%s) / %lld) %% %lld) * %lld + ((lid & 63) %% %lld))",
                   WM, (long long)p[P_TM], s, R, NT, S, s, R, S, s, (long long)t->n, WM, (long long)p[P_TN], s, R,
                   NT, S, S);
}

/* The plain loop over the accumulator slots: what every compiler without the
 * planned instructions (NVRTC for rocm_nv, or an architecture of the other
 * family) runs, in the plan's slot layout. */
static void emit_slot_loop(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in) {
  const char* cv = t->a_dtype == XC_F16 ? "xc_h2f" : t->a_dtype == XC_BF16 ? "xc_bf2f" : "";
  xc_cstyle_printf(w, "%s  #pragma unroll\n%s  for (int s = 0; s < %lld; s++) {\n", in, in, (long long)t->slots);
  xc_cstyle_printf(w, "%s    const int xi = (int)", in);
  hip_dot_slot_index(w, t, "s");
  xc_cstyle_printf(w, ";\n%s    const int xr = xi / %lld, xcol = xi %% %lld;\n", in, (long long)t->n, (long long)t->n);
  xc_cstyle_printf(w, "%s    float xs = 0.0f;\n", in);
  xc_cstyle_printf(w, "%s    for (int q = 0; q < %lld; q++) xs += %s(%s[xr * %lld + q]) * %s(%s[q * %lld + xcol]);\n", in,
                   (long long)t->k, cv, t->a, (long long)t->lda, cv, t->b, (long long)t->ldb);
  xc_cstyle_printf(w, "%s    %s[s] += xs;\n%s  }\n", in, t->acc, in);
}

static void hip_emit_dot(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in) {
  if (t->params[P_WMMA]) {
    wmma_emit_dot(w, t, in);
    return;
  }
  const int64_t* p = t->params;
  long long WM = p[P_WM], S = p[P_S], KI = p[P_KI], R = S * S / 64, MT = p[P_TM] / S, NT = p[P_TN] / S;
  long long lda = t->lda, ldb = t->ldb, K = t->k;
  bool half = t->a_dtype != XC_F32;
  long long E = half ? 4 : 1;
  const char* fn = t->a_dtype == XC_F16   ? (S == 32 ? "__builtin_amdgcn_mfma_f32_32x32x8f16" : "__builtin_amdgcn_mfma_f32_16x16x16f16")
                   : t->a_dtype == XC_BF16 ? (S == 32 ? "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k"
                                                      : "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k")
                                           : (S == 32 ? "__builtin_amdgcn_mfma_f32_32x32x2f32" : "__builtin_amdgcn_mfma_f32_16x16x4f32");
#define W(...) xc_cstyle_printf(w, __VA_ARGS__)
  W("%s{ /* matrix instructions: %lldx%lld waves of %lldx%lld, %s */\n", in, WM, (long long)p[P_WN],
    (long long)p[P_TM], (long long)p[P_TN], fn + 17);
  W("#if defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || "
    "defined(__gfx942__)\n");
  W("%s  typedef float xc_acc __attribute__((ext_vector_type(%lld)));\n", in, R);
  if (half) {
    W("%s  typedef short xc_s4 __attribute__((ext_vector_type(4)));\n", in);
    if (t->a_dtype == XC_F16) W("%s  typedef _Float16 xc_h4 __attribute__((ext_vector_type(4)));\n", in);
  }
  W("%s  const int xl = (int)(lid & 63), xw = (int)(lid >> 6);\n", in);
  W("%s  const int xra = (xw %% %lld) * %lld + (xl %% %lld), xcb = (xw / %lld) * %lld + (xl %% %lld), xk = (xl / %lld) * %lld;\n",
    in, WM, (long long)p[P_TM], S, WM, (long long)p[P_TN], S, S, E);
  W("%s  xc_acc xc[%lld];\n", in, MT * NT);
  W("%s  #pragma unroll\n%s  for (int b = 0; b < %lld; b++)\n", in, in, MT * NT);
  W("%s    #pragma unroll\n%s    for (int v = 0; v < %lld; v++) xc[b][v] = %s[b * %lld + v];\n", in, in, R, t->acc, R);
  W("%s  #pragma unroll\n%s  for (int kk = 0; kk < %lld; kk += %lld) {\n", in, in, K, KI);
  const char* op = half ? "xc_s4" : "float";
  W("%s    %s xa[%lld], xb[%lld];\n", in, op, MT, NT);
  if (half) {
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++)\n", in, in, MT);
    W("%s      #pragma unroll\n%s      for (int i = 0; i < 4; i++) xa[mt][i] = (short)%s[(xra + mt * %lld) * %lld + kk + xk + i];\n",
      in, in, t->a, S, lda);
    W("%s    #pragma unroll\n%s    for (int nt = 0; nt < %lld; nt++)\n", in, in, NT);
    W("%s      #pragma unroll\n%s      for (int i = 0; i < 4; i++) xb[nt][i] = (short)%s[(kk + xk + i) * %lld + xcb + nt * %lld];\n",
      in, in, t->b, ldb, S);
  } else {
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++) xa[mt] = %s[(xra + mt * %lld) * %lld + kk + xk];\n", in,
      in, MT, t->a, S, lda);
    W("%s    #pragma unroll\n%s    for (int nt = 0; nt < %lld; nt++) xb[nt] = %s[(kk + xk) * %lld + xcb + nt * %lld];\n", in,
      in, NT, t->b, ldb, S);
  }
  W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++)\n", in, in, MT);
  W("%s      #pragma unroll\n%s      for (int nt = 0; nt < %lld; nt++)\n", in, in, NT);
  if (t->a_dtype == XC_F16)
    W("%s        xc[mt * %lld + nt] = %s(__builtin_bit_cast(xc_h4, xa[mt]), __builtin_bit_cast(xc_h4, xb[nt]), "
      "xc[mt * %lld + nt], 0, 0, 0);\n", in, NT, fn, NT);
  else
    W("%s        xc[mt * %lld + nt] = %s(xa[mt], xb[nt], xc[mt * %lld + nt], 0, 0, 0);\n", in, NT, fn, NT);
  W("%s  }\n", in);
  W("%s  #pragma unroll\n%s  for (int b = 0; b < %lld; b++)\n", in, in, MT * NT);
  W("%s    #pragma unroll\n%s    for (int v = 0; v < %lld; v++) %s[b * %lld + v] = xc[b][v];\n", in, in, R, t->acc, R);
  W("#else\n");
  emit_slot_loop(w, t, in);
  W("#endif\n%s}\n", in);
#undef W
}

/* ---- WMMA (docs/targets/rocm.md, "Matrix instructions") ----
 * RDNA3 (gfx11), wave 32: v_wmma_f32_16x16x16_{f16,bf16} through
 * __builtin_amdgcn_wmma_f32_16x16x16_{f16,bf16}_w32. The waves of a block
 * form a WM x WN grid as for MFMA; each computes a TM x TN part as MT x NT
 * blocks of 16x16, 8 accumulator registers per lane and block. Per
 * instruction (AMD's RDNA3 ISA guide and GPUOpen's "How to accelerate AI
 * applications on RDNA 3 using WMMA"): lane l supplies row l%16 of A and
 * column l%16 of B, all 16 k values each (lanes 16-31 repeat lanes 0-15),
 * and holds register v of the 16x16 result at row 2*v + l/16, column l%16.
 * Slot s of a work-item is register s%8 of block
 * (mt, nt) = ((s/8)/NT, (s/8)%NT).
 *
 * The slot layout belongs to the plan, and a plan to the caps of one
 * architecture: a source planned for gfx11 carries this layout, the MFMA
 * one a source planned for CDNA, so the instruction's own result layout is
 * the slot layout and no exchange through LDS or lanes is needed. Such a
 * source holds no MFMA branch (wave-64 lanes would not match the wave-32
 * layout); any other compiler that gets it runs the plain slot loop. */

/* Whether caps are those of an architecture with WMMA (the table's 'W'). */
static bool wmma_arch(const xc_device_caps_t* caps) {
  char arch[16];
  if (!caps || !xc_rocm_caps_arch(caps, arch, sizeof arch)) return false;
  const xc_rocm_arch_t* a = xc_rocm_arch_find(arch);
  return a && a->matrix == 'W';
}

static bool wmma_plan(xc_cstyle_dot_t* t) {
  bool half = t->a_dtype == XC_F16 || t->a_dtype == XC_BF16;
  if (t->acc_dtype != XC_F32 || t->a_dtype != t->b_dtype || !half || t->warp != 32 || t->threads % 32 ||
      t->k % 16 || !xc_cuda_caps_have_mma(t->caps, 16, 16, 16, t->a_dtype))
    return false;
  int64_t waves = t->threads / 32, best = -1;
  for (int64_t wm = 1; wm <= waves; wm++) {
    if (waves % wm) continue;
    int64_t wn = waves / wm;
    if (t->m % wm || t->n % wn) continue;
    int64_t tm = t->m / wm, tn = t->n / wn;
    if (tm % 16 || tn % 16 || tm * tn / 32 > 128) continue;
    int64_t score = tm + tn; /* LDS reads per wave and k */
    if (best < 0 || score < best) {
      best = score;
      t->params[P_WM] = wm, t->params[P_WN] = wn, t->params[P_TM] = tm, t->params[P_TN] = tn;
    }
  }
  if (best < 0) return false;
  t->params[P_S] = 16, t->params[P_KI] = 16, t->params[P_WMMA] = 1;
  t->inst_m = 16, t->inst_n = 16, t->inst_k = 16;
  t->slots = t->params[P_TM] * t->params[P_TN] / 32;
  t->lda = t->k + 8; /* 16 bytes of padding per row, as for MFMA */
  t->ldb = t->n + 8;
  return true;
}

static void wmma_slot_index(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* s) {
  const int64_t* p = t->params;
  long long NT = p[P_TN] / 16, WM = p[P_WM];
  xc_cstyle_printf(w,
                   "((((lid >> 5) %% %lld) * %lld + ((%s) / 8 / %lld) * 16 + ((%s) %% 8) * 2 + ((lid & 31) >> 4)) * %lld + "
                   "((lid >> 5) / %lld) * %lld + (((%s) / 8) %% %lld) * 16 + (lid & 15))",
                   WM, (long long)p[P_TM], s, NT, s, (long long)t->n, WM, (long long)p[P_TN], s, NT);
}

static void wmma_emit_dot(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in) {
  const int64_t* p = t->params;
  long long WM = p[P_WM], MT = p[P_TM] / 16, NT = p[P_TN] / 16;
  long long lda = t->lda, ldb = t->ldb, K = t->k;
  bool f16 = t->a_dtype == XC_F16;
  const char* fn = f16 ? "__builtin_amdgcn_wmma_f32_16x16x16_f16_w32" : "__builtin_amdgcn_wmma_f32_16x16x16_bf16_w32";
#define W(...) xc_cstyle_printf(w, __VA_ARGS__)
  W("%s{ /* matrix instructions: %lldx%lld waves of %lldx%lld, %s */\n", in, WM, (long long)p[P_WN],
    (long long)p[P_TM], (long long)p[P_TN], fn + 17);
  W("#if ");
  for (int i = 0, n = 0; xc_rocm_arch_at(i); i++)
    if (xc_rocm_arch_at(i)->matrix == 'W') W("%sdefined(__%s__)", n++ ? " || " : "", xc_rocm_arch_at(i)->name);
  W("\n");
  W("%s  typedef float xc_acc __attribute__((ext_vector_type(8)));\n", in);
  W("%s  typedef short xc_s16 __attribute__((ext_vector_type(16)));\n", in);
  if (f16) W("%s  typedef _Float16 xc_h16 __attribute__((ext_vector_type(16)));\n", in);
  W("%s  const int xl = (int)(lid & 31), xw = (int)(lid >> 5);\n", in);
  W("%s  const int xra = (xw %% %lld) * %lld + (xl & 15), xcb = (xw / %lld) * %lld + (xl & 15);\n", in, WM,
    (long long)p[P_TM], WM, (long long)p[P_TN]);
  W("%s  xc_acc xc[%lld];\n", in, MT * NT);
  W("%s  #pragma unroll\n%s  for (int b = 0; b < %lld; b++)\n", in, in, MT * NT);
  W("%s    #pragma unroll\n%s    for (int v = 0; v < 8; v++) xc[b][v] = %s[b * 8 + v];\n", in, in, t->acc);
  W("%s  #pragma unroll\n%s  for (int kk = 0; kk < %lld; kk += 16) {\n", in, in, K);
  /* all B fragments of the step, then one A fragment at a time: with 8
   * accumulator registers per block the wave tile's accumulators take most
   * of the 256 VGPRs a wave-32 lane has */
  W("%s    xc_s16 xb[%lld];\n", in, NT);
  W("%s    #pragma unroll\n%s    for (int nt = 0; nt < %lld; nt++)\n", in, in, NT);
  W("%s      #pragma unroll\n%s      for (int i = 0; i < 16; i++) xb[nt][i] = (short)%s[(kk + i) * %lld + xcb + nt * 16];\n",
    in, in, t->b, ldb);
  W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++) {\n", in, in, MT);
  W("%s      xc_s16 xa;\n", in);
  W("%s      #pragma unroll\n%s      for (int i = 0; i < 16; i++) xa[i] = (short)%s[(xra + mt * 16) * %lld + kk + i];\n", in,
    in, t->a, lda);
  W("%s      #pragma unroll\n%s      for (int nt = 0; nt < %lld; nt++)\n", in, in, NT);
  if (f16)
    W("%s        xc[mt * %lld + nt] = %s(__builtin_bit_cast(xc_h16, xa), __builtin_bit_cast(xc_h16, xb[nt]), "
      "xc[mt * %lld + nt]);\n", in, NT, fn, NT);
  else
    W("%s        xc[mt * %lld + nt] = %s(xa, xb[nt], xc[mt * %lld + nt]);\n", in, NT, fn, NT);
  W("%s    }\n%s  }\n", in, in);
  W("%s  #pragma unroll\n%s  for (int b = 0; b < %lld; b++)\n", in, in, MT * NT);
  W("%s    #pragma unroll\n%s    for (int v = 0; v < 8; v++) %s[b * 8 + v] = xc[b][v];\n", in, in, t->acc);
  W("#else\n");
  emit_slot_loop(w, t, in);
  W("#endif\n%s}\n", in);
#undef W
}

/* CUDA's table (cuda_dialect.h) with HIP's prelude, entry, matrix
 * instructions and lane exchange. */
const xc_cstyle_dialect_t xc_cstyle_dialect_hip = {
    .name = "hip",
    XC_CUDA_DIALECT_COMMON,
    .prelude = "#if defined(__HIPCC_RTC__) || defined(__CUDACC_RTC__)\n"
               "/* hiprtc and NVRTC: the kernel language is built in */\n"
               "#else\n#include <hip/hip_runtime.h>\n#endif\n"
               "#if defined(__clang__) && defined(__HIP__)\n#pragma clang force_cuda_host_device begin\n#endif\n"
               XC_CUDA_PRELUDE_BITS
               /* lane exchange: HIP on NVIDIA is CUDA's, whose unsynchronized
                * form is gone; on AMD, xor masks below 32 stay within a
                * half of a wave64 */
               "#if defined(__HIP_PLATFORM_NVIDIA__)\n"
               "#define XC_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))\n"
               "#else\n#define XC_SHFL_XOR(v, m) __shfl_xor((v), (m))\n#endif\n",
    .write_entry = hip_write_entry,
    .dot_plan = hip_dot_plan,
    .dot_staged = true,
    .dot_slot_index = hip_dot_slot_index,
    .emit_dot = hip_emit_dot,
    .align16 = "__attribute__((aligned(16))) ",
    .shfl_xor_fmt = "XC_SHFL_XOR(%s, %d)",
};
