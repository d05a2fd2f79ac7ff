/* The CUDA dialect of the C-family emitter (docs/emitter.md): CUDA C++ for
 * NVRTC. A program is one thread block of `threads` threads
 * (__launch_bounds__), tiles are __shared__ arrays or distributed over
 * per-thread arrays, and the barrier is __syncthreads(). No header is
 * included (NVRTC has none by default): fixed-width types are spelled out,
 * f16/bf16 are stored as unsigned short and converted by the shared exact
 * helpers, and the source is compiled with -default-device so the prelude's
 * helper functions are device functions. The entries HIP shares with it
 * (cuda_dialect.h) are those the HIP dialect starts from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cstyle/cstyle_internal.h"
#include "cuda_dialect.h"
#include "cuda_target.h"

void xc_cuda_write_kernel(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e,
                          bool lid_bound) {
  const xc_tiled_kernel_t* k = e->kernel;
  xc_cstyle_printf(w, "extern \"C\" __global__ void __launch_bounds__(%lld)\n%s(", (long long)e->threads,
                   e->entry);
  char name[80];
  bool first = true;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k->num_params; i++) {
      const xc_tiled_value_t* p = k->params[i];
      bool buffer = p->type.kind == XC_TILED_MEMREF;
      if (buffer != (pass == 0)) continue;
      xc_cstyle_param_name(p, name, sizeof name);
      xc_cstyle_printf(w, "%s", first ? "" : ",\n    ");
      first = false;
      if (buffer)
        xc_cstyle_printf(w, "%s%s%s* %s%s", d->global_qual, p->type.role == XC_ROLE_IN ? "const " : "",
                         d->storage_type[p->type.dtype], d->restrict_kw, name);
      else
        xc_cstyle_printf(w, "const long long %s", name);
    }
  /* a program has exactly `threads` work-items: the modulo changes no value
   * but gives the compiler lid's bound (constant-offset addresses, no
   * division in the element loops) */
  if (lid_bound)
    xc_cstyle_printf(w, ") {\n  const long long lid = (long long)(%s %% %lldu);\n", d->thread_id,
                     (long long)e->threads);
  else
    xc_cstyle_printf(w, ") {\n  const long long lid = (long long)%s;\n", d->thread_id);
  const char* s = e->decls;
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    xc_cstyle_printf(w, "  %.*s\n", len, s);
    s += len + (nl ? 1 : 0);
  }
  xc_cstyle_printf(w, "%s}\n", e->body);
}

static void cuda_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  /* the launch's dynamic shared-memory size, read by the runtime from the
   * module (cuModuleGetGlobal) when it loads the kernel */
  if (e->dyn_local_bytes > 0)
    xc_cstyle_printf(w, "extern \"C\" __device__ unsigned int %s%s = %lldu;\n", XC_CUDA_DSM_PREFIX, e->entry,
                     (long long)e->dyn_local_bytes);
  xc_cuda_write_kernel(w, d, e, true);
}

/* ---- tensor cores (docs/targets/cuda.md, "Tensor cores") ----
 * One warp computes a (wm x wn) part of the [m,n] accumulator as MT x NT
 * mma tiles of 16x8; the warps of a block form a WM x WN grid. Fragment
 * layout of mma.m16n8 (f32 accumulator): lane l holds rows l/4 and l/4+8,
 * columns 2*(l%4) and 2*(l%4)+1 of each 16x8 tile, in the order
 * (r, c), (r, c+1), (r+8, c), (r+8, c+1). Slot s of a thread is element
 * s%4 of tile (mt, nt) = (s/(4*NT), (s/4)%NT). */
enum { P_WM, P_WN, P_WTM, P_WTN, P_MT, P_NT, P_KSTEP, P_KIND };
enum { KIND_F16, KIND_BF16, KIND_TF32 };

bool xc_cuda_caps_have_mma(const xc_device_caps_t* caps, int m, int n, int k, xc_dtype_t in) {
  for (int i = 0; caps && i < caps->num_mma_shapes && i < XC_TARGET_MAX_MMA_SHAPES; i++)
    if (xc_mma_shape_matches(&caps->mma_shapes[i], m, n, k, in, XC_F32)) return true;
  return false;
}

/* Swizzle for rows of `chunks` 16-byte chunks (a power of two >= 2): rows
 * i..i+7 (i a multiple of 8) at one logical chunk land in 8 distinct
 * 16-byte groups of a 128-byte line. Rows of >= 8 chunks: XOR with i & 7;
 * shorter rows share a line (128 / row bytes of them): XOR with the line's
 * index among 8 / ... lines, (i >> log2(8 / chunks)) & (chunks - 1). */
static void swizzle(int64_t chunks, int64_t* shift, int64_t* mask) {
  if (chunks >= 8) {
    *shift = 0, *mask = 7;
    return;
  }
  int64_t sh = 0;
  while (((int64_t)8 >> sh) > chunks) sh++;
  *shift = sh, *mask = chunks - 1;
}

static bool cuda_dot_plan(const xc_cstyle_dialect_t* d, xc_cstyle_dot_t* t) {
  (void)d;
  int kind, kstep;
  if (t->acc_dtype != XC_F32 || t->a_dtype != t->b_dtype || (t->warp && t->warp != 32)) return false;
  if (t->a_dtype == XC_F16 || t->a_dtype == XC_BF16) {
    kind = t->a_dtype == XC_F16 ? KIND_F16 : KIND_BF16, kstep = 16;
    if (!xc_cuda_caps_have_mma(t->caps, 16, 8, 16, t->a_dtype)) return false;
  } else if (t->a_dtype == XC_F32 && t->allow_tf32) {
    kind = KIND_TF32, kstep = 8;
    if (!xc_cuda_caps_have_mma(t->caps, 16, 8, 8, XC_F32)) return false;
  } else {
    return false;
  }
  if (t->threads % 32 || t->k % kstep) return false;
  if (kind != KIND_TF32) {
    /* swizzled rows: whole chunks, and fewer than 8 chunks only as a power of two */
    int64_t ca = t->k / 8, cb = t->n / 8;
    if (t->n % 8 || (ca < 8 && (ca & (ca - 1))) || (cb < 8 && (cb & (cb - 1)))) return false;
  }
  int64_t warps = t->threads / 32, best = -1, bwm = 0;
  for (int64_t wm = 1; wm <= warps; wm++) {
    if (warps % wm) continue;
    int64_t wn = warps / wm;
    if (t->m % wm || t->n % wn) continue;
    int64_t tm = t->m / wm, tn = t->n / wn;
    /* B fragments come in pairs of 8-column tiles (ldmatrix.x4.trans) */
    if (tm % 16 || tn % 16 || (tm / 16) * (tn / 8) * 4 > 128) continue;
    int64_t score = tm + tn; /* shared-memory reads per warp and k */
    if (best < 0 || score < best || (score == best && wm > bwm)) best = score, bwm = wm;
  }
  if (best < 0) return false;
  int64_t wm = bwm, wn = warps / wm, tm = t->m / wm, tn = t->n / wn;
  t->params[P_WM] = wm, t->params[P_WN] = wn, t->params[P_WTM] = tm, t->params[P_WTN] = tn;
  t->params[P_MT] = tm / 16, t->params[P_NT] = tn / 8, t->params[P_KSTEP] = kstep, t->params[P_KIND] = kind;
  t->slots = (tm / 16) * (tn / 8) * 4;
  t->inst_m = 16, t->inst_n = 8, t->inst_k = (int)kstep; /* mma.sync.m16n8k16 / m16n8k8 */
  if (kind == KIND_TF32) {
    /* 16 / 32 bytes of padding per row: the 8 rows a warp reads fall into
     * distinct banks */
    t->lda = t->k + 4;
    t->ldb = t->n + 8;
  } else {
    /* no padding (three stages of 128x128x32 fit 48 KiB): 16-byte chunks
     * XOR-swizzled so that the 8 row addresses of an ldmatrix, same logical
     * chunk, hit the 8 distinct 16-byte bank groups of a 128-byte line */
    t->lda = t->k;
    t->ldb = t->n;
    swizzle(t->k / 8, &t->a_swz_shift, &t->a_swz_mask);
    swizzle(t->n / 8, &t->b_swz_shift, &t->b_swz_mask);
  }
  return true;
}

static void cuda_dot_slot_index(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* s) {
  const int64_t* p = t->params;
  xc_cstyle_printf(w,
                   "((((lid >> 5) %% %lld) * %lld + ((%s) / %lld) * 16 + ((lid & 31) >> 2) + (((%s) & 3) >> 1) * 8) * %lld"
                   " + ((lid >> 5) / %lld) * %lld + (((%s) >> 2) %% %lld) * 8 + (lid & 3) * 2 + ((%s) & 1))",
                   (long long)p[P_WM], (long long)p[P_WTM], s, (long long)(4 * p[P_NT]), s, (long long)t->n,
                   (long long)p[P_WM], (long long)p[P_WTN], s, (long long)p[P_NT], s);
}

/* The plain loop over the accumulator slots, for a compiler that is not
 * CUDA's device compiler (the emitter's tests run this dialect's plans in
 * the OpenCL dialect): slot s adds row . column of the element the slot
 * index names, the operands read through the plan's pitch and chunk
 * swizzle as the emitter's copies wrote them, so the plan, the slot layout
 * and the staging are checked without the instructions. */
static void emit_slot_loop(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in) {
  const char* cv = t->a_dtype == XC_F16 ? "xc_h2f" : t->a_dtype == XC_BF16 ? "xc_bf2f" : "";
  long long n = t->n, lda = t->lda, ldb = t->ldb;
#define W(...) xc_cstyle_printf(w, __VA_ARGS__)
  W("%s  for (int s = 0; s < %lld; s++) {\n", in, (long long)t->slots);
  W("%s    const int xi = (int)", in);
  cuda_dot_slot_index(w, t, "s");
  W(";\n%s    const int xr = xi / %lld, xcol = xi %% %lld;\n", in, n, n);
  W("%s    float xs = 0.0f;\n", in);
  W("%s    for (int q = 0; q < %lld; q++) {\n", in, (long long)t->k);
  /* logical chunk c of row i is stored at chunk c ^ ((i >> shift) & mask) */
  W("%s      const int xqa = ((q >> 3) ^ ((xr >> %lld) & %lld)) * 8 + (q & 7);\n", in, (long long)t->a_swz_shift,
    (long long)t->a_swz_mask);
  W("%s      const int xcb = ((xcol >> 3) ^ ((q >> %lld) & %lld)) * 8 + (xcol & 7);\n", in, (long long)t->b_swz_shift,
    (long long)t->b_swz_mask);
  W("%s      xs += %s(%s[xr * %lld + xqa]) * %s(%s[q * %lld + xcb]);\n", in, cv, t->a, lda, cv, t->b, ldb);
  W("%s    }\n%s    %s[s] += xs;\n%s  }\n", in, in, t->acc, in);
#undef W
}

static void cuda_emit_dot(xc_cstyle_writer_t* w, const xc_cstyle_dot_t* t, const char* in) {
  const int64_t* p = t->params;
  long long WM = p[P_WM], MT = p[P_MT], NT = p[P_NT], lda = t->lda, ldb = t->ldb;
  long long TM = p[P_WTM], TN = p[P_WTN];
#define W(...) xc_cstyle_printf(w, __VA_ARGS__)
  W("%s{ /* tensor cores: %lldx%lld warps of %lldx%lld, %s */\n", in, WM, (long long)p[P_WN], TM, TN,
    p[P_KIND] == KIND_TF32 ? "mma.m16n8k8 tf32" : p[P_KIND] == KIND_F16 ? "mma.m16n8k16 f16" : "mma.m16n8k16 bf16");
  W("#if defined(__CUDA_ARCH__)\n");
  W("%s  const int xw = (int)(lid >> 5), xl = (int)(lid & 31);\n", in);
  if (p[P_KIND] != KIND_TF32) {
    const char* ty = p[P_KIND] == KIND_F16 ? "f16" : "bf16";
    /* lane l addresses row (l & 15) of a 16-row block at logical chunk
     * (l >> 4) (+ the block's first chunk); its swizzle term depends on the
     * row within the block only (blocks start at multiples of 16 rows) */
    W("%s  const unsigned xsa = xc_smem(%s + ((xw %% %lld) * %lld + (xl & 15)) * %lld);\n", in, t->a, WM, TM, lda);
    W("%s  const unsigned xsb = xc_smem(%s + (xl & 15) * %lld);\n", in, t->b, ldb);
    W("%s  const int xxa = (xl >> 4) ^ (((xl & 15) >> %lld) & %lld);\n", in, (long long)t->a_swz_shift,
      (long long)t->a_swz_mask);
    W("%s  const int xxb = (xl >> 4) ^ (((xl & 15) >> %lld) & %lld);\n", in, (long long)t->b_swz_shift,
      (long long)t->b_swz_mask);
    W("%s  const int xcb = (xw / %lld) * %lld;\n", in, WM, TN / 8);
    W("%s  #pragma unroll\n%s  for (int kk = 0; kk < %lld; kk += 16) {\n", in, in, (long long)t->k);
    W("%s    unsigned xa[%lld][4], xb[%lld][2];\n", in, MT, NT);
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++)\n", in, in, MT);
    W("%s      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%0, %%1, %%2, %%3}, [%%4];\\n\"\n"
      "%s                   : \"=r\"(xa[mt][0]), \"=r\"(xa[mt][1]), \"=r\"(xa[mt][2]), \"=r\"(xa[mt][3])\n"
      "%s                   : \"r\"(xsa + (unsigned)(mt * 16 * %lld * 2 + (((kk >> 3) ^ xxa) << 4))) : \"memory\");\n",
      in, in, in, lda);
    W("%s    #pragma unroll\n%s    for (int nt = 0; nt < %lld; nt += 2)\n", in, in, NT);
    W("%s      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%%0, %%1, %%2, %%3}, [%%4];\\n\"\n"
      "%s                   : \"=r\"(xb[nt][0]), \"=r\"(xb[nt][1]), \"=r\"(xb[nt + 1][0]), \"=r\"(xb[nt + 1][1])\n"
      "%s                   : \"r\"(xsb + (unsigned)(kk * %lld * 2 + (((xcb + nt) ^ xxb) << 4))) : \"memory\");\n",
      in, in, in, ldb);
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++)\n", in, in, MT);
    W("%s      #pragma unroll\n%s      for (int nt = 0; nt < %lld; nt++) {\n", in, in, NT);
    W("%s        float* const xc = &%s[(mt * %lld + nt) * 4];\n", in, t->acc, NT);
    W("%s        asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%%0, %%1, %%2, %%3}, "
      "{%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\\n\"\n"
      "%s                     : \"+f\"(xc[0]), \"+f\"(xc[1]), \"+f\"(xc[2]), \"+f\"(xc[3])\n"
      "%s                     : \"r\"(xa[mt][0]), \"r\"(xa[mt][1]), \"r\"(xa[mt][2]), \"r\"(xa[mt][3]), "
      "\"r\"(xb[nt][0]), \"r\"(xb[nt][1]));\n",
      in, ty, ty, in, in);
    W("%s      }\n%s  }\n", in, in);
  } else {
    W("%s  const float* const xpa = %s + ((xw %% %lld) * %lld + (xl >> 2)) * %lld + (xl & 3);\n", in, t->a, WM, TM,
      lda);
    W("%s  const float* const xpb = %s + (xl & 3) * %lld + (xw / %lld) * %lld + (xl >> 2);\n", in, t->b, ldb, WM, TN);
    W("%s  #pragma unroll\n%s  for (int kk = 0; kk < %lld; kk += 8) {\n", in, in, (long long)t->k);
    W("%s    unsigned xa[%lld][4], xb[%lld][2];\n", in, MT, NT);
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++) {\n", in, in, MT);
    W("%s      const float* const q = xpa + mt * 16 * %lld + kk;\n", in, lda);
    W("%s      xa[mt][0] = xc_tf32(q[0]), xa[mt][1] = xc_tf32(q[8 * %lld]);\n", in, lda);
    W("%s      xa[mt][2] = xc_tf32(q[4]), xa[mt][3] = xc_tf32(q[8 * %lld + 4]);\n", in, lda);
    W("%s    }\n", in);
    W("%s    #pragma unroll\n%s    for (int nt = 0; nt < %lld; nt++) {\n", in, in, NT);
    W("%s      const float* const q = xpb + kk * %lld + nt * 8;\n", in, ldb);
    W("%s      xb[nt][0] = xc_tf32(q[0]), xb[nt][1] = xc_tf32(q[4 * %lld]);\n", in, ldb);
    W("%s    }\n", in);
    W("%s    #pragma unroll\n%s    for (int mt = 0; mt < %lld; mt++)\n", in, in, MT);
    W("%s      #pragma unroll\n%s      for (int nt = 0; nt < %lld; nt++) {\n", in, in, NT);
    W("%s        float* const xc = &%s[(mt * %lld + nt) * 4];\n", in, t->acc, NT);
    W("%s        asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%%0, %%1, %%2, %%3}, "
      "{%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\\n\"\n"
      "%s                     : \"+f\"(xc[0]), \"+f\"(xc[1]), \"+f\"(xc[2]), \"+f\"(xc[3])\n"
      "%s                     : \"r\"(xa[mt][0]), \"r\"(xa[mt][1]), \"r\"(xa[mt][2]), \"r\"(xa[mt][3]), "
      "\"r\"(xb[nt][0]), \"r\"(xb[nt][1]));\n",
      in, in, in);
    W("%s      }\n%s  }\n", in, in);
  }
  W("#else\n");
  emit_slot_loop(w, t, in);
  W("#endif\n%s}\n", in);
#undef W
}

/* cp.async (sm_80+; only emitted for dots the plan took, which needs sm_80
 * mma shapes): 16 bytes, .cg (bypasses L1), zero-filled when not full. */
static void cuda_copy16_async(xc_cstyle_writer_t* w, const char* dst, const char* src, const char* full) {
  xc_cstyle_printf(w,
                   "asm volatile(\"cp.async.cg.shared.global.L2::128B [%%0], [%%1], 16, %%2;\\n\" :: \"r\"(xc_smem(%s)), "
                   "\"l\"(%s), \"r\"((%s) ? 16 : 0) : \"memory\");",
                   dst, src, full);
}

const xc_cstyle_dialect_t xc_cstyle_dialect_cuda = {
    .name = "cuda",
    XC_CUDA_DIALECT_COMMON,
    .prelude = XC_CUDA_PRELUDE_BITS
               /* shared-memory address for ldmatrix / cp.async; f32 rounded to tf32 */
               "static inline unsigned xc_smem(const void* p) {\n"
               "  unsigned long long a; asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(p)); return (unsigned)a;\n"
               "}\n"
               /* f16 -> f32 is exact (subnormals, infinities and NaNs included): one
                * instruction where the shared helper takes a dozen integer
                * operations and a branch, on every f16 element read */
               "#define XC_NATIVE_H2F 1\n"
               "static inline float xc_h2f(xc_u16 h) {\n"
               "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"((unsigned short)h)); return f;\n"
               "}\n"
               /* f32 -> f16 rounding to nearest even in one instruction (the shared
                * helper is ~20 integer operations); NaN keeps the shared helper's
                * quiet NaN 0x7e00 with the sign */
               "#define XC_NATIVE_F2H 1\n"
               "static inline xc_u16 xc_f2h(float f) {\n"
               "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
               "  return f != f ? (xc_u16)(((xc_fbits(f) >> 16) & 0x8000u) | 0x7e00u) : (xc_u16)h;\n"
               "}\n"
               /* f32 -> bf16 likewise where the instruction exists (sm_80+); a NaN
                * becomes the canonical quiet NaN 0x7fff (sign and payload are
                * not kept, as in the vendor's own conversion) */
               "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
               "#define XC_NATIVE_F2BF 1\n"
               "static inline xc_u16 xc_f2bf(float f) {\n"
               "  unsigned short h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"
               "}\n"
               "#endif\n"
               /* erf for f16/bf16 values: Abramowitz & Stegun 7.1.26 (absolute error
                * 1.5e-7) with the approximate reciprocal and exponential (flushing
                * subnormal intermediates: e^-x^2 below 2^-126 makes erf 1), and the
                * Taylor series below 0.1, where the formula's absolute error would
                * be a large relative one: 3.5e-6 relative at most, against a
                * 16-bit half ulp of 4.9e-4 (f16) or 3.9e-3 (bf16); about 16
                * operations where the library erff takes 24. xc_erf_h1, the
                * formula alone, for an erf whose only use is 1 + erf (Gelu):
                * there its absolute error of 1.5e-7 is what counts */
               "static inline float xc_erf_h1(float x) {\n"
               "  const float a = fabsf(x);\n"
               "  float t, e;\n"
               "  asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(t) : \"f\"(fmaf(0.3275911f, a, 1.0f)));\n"
               "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(x * x * -1.4426950409f));\n"
               "  const float p = fmaf(fmaf(fmaf(fmaf(1.061405429f, t, -1.453152027f), t, 1.421413741f), t,\n"
               "                           -0.284496736f), t, 0.254829592f) * t;\n"
               "  return copysignf(1.0f - p * e, x);\n"
               "}\n"
               "static inline float xc_erf_h(float x) {\n"
               "  const float x2 = x * x;\n"
               "  const float small = x * fmaf(fmaf(0.1128379167f, x2, -0.3761263890f), x2, 1.1283791671f);\n"
               "  return fabsf(x) < 0.1f ? small : xc_erf_h1(x);\n"
               "}\n"
               "static inline unsigned xc_tf32(float x) {\n"
               "  unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return r;\n"
               "}\n"
               /* tanh and sigmoid out of line (xc_cstyle_dialect_t.tanh_call): the
                * same operations as inline, compiled once per kernel instead of
                * once per accumulator element of an unrolled epilogue */
               "static __noinline__ float xc_tanh_call(float x) { return tanhf(x); }\n"
               "static __noinline__ float xc_sigmoid_call(float x) { return 1.0f / (1.0f + expf(-x)); }\n",
    .write_entry = cuda_write_entry,
    .dot_plan = cuda_dot_plan,
    .dot_staged = true,
    .dot_slot_index = cuda_dot_slot_index,
    .emit_dot = cuda_emit_dot,
    .copy16_async = cuda_copy16_async,
    .align16 = "__align__(16) ",
    .copy_commit = "asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");",
    .copy_wait_fmt = "asm volatile(\"cp.async.wait_group %d;\\n\" ::: \"memory\");",
    .shfl_xor_fmt = "__shfl_xor_sync(0xffffffffu, %s, %d)",
    .erf_half = "xc_erf_h",
    .erf_half_plus_one = "xc_erf_h1",
    .tanh_call = "xc_tanh_call",
    .sigmoid_call = "xc_sigmoid_call",
    .dyn_local_array = "extern __shared__ __align__(128) unsigned char xc_dsm[];",
};

/* ---- pattern programs (cuda_attention.c, cuda_gemm.c) ---- */

bool xc_cuda_same_record(const xc_tiled_schedule_t* a, const xc_tiled_schedule_t* b) {
  if (a->num_knobs != b->num_knobs || a->threads != b->threads || a->num_dots != b->num_dots ||
      a->dynamic_bytes != b->dynamic_bytes || a->local_bytes != b->local_bytes)
    return false;
  for (int i = 0; i < a->num_knobs; i++)
    if (a->knobs[i] != b->knobs[i]) return false;
  for (int i = 0; i < a->num_dots; i++)
    if (memcmp(&a->dots[i].mma, &b->dots[i].mma, sizeof a->dots[i].mma) || a->dots[i].stages != b->dots[i].stages ||
        a->dots[i].operands != b->dots[i].operands)
      return false;
  return true;
}

bool xc_cuda_knob_values(const xc_tiled_kernel_t* k, const xc_knob_t* knobs, int num_knobs, int64_t* values) {
  if (k->num_knobs > XC_TILED_MAX_SCHED_KNOBS) return false;
  for (int i = 0; i < k->num_knobs; i++) values[i] = k->knobs[i].default_value;
  for (int i = 0; i < num_knobs; i++) {
    int idx = knobs[i].name ? xc_tiled_find_knob(k, knobs[i].name) : -1;
    if (idx < 0) return false;
    values[idx] = knobs[i].value;
  }
  return true;
}

bool xc_cuda_program_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                              unsigned flags, xc_tiled_schedule_t* inout, xc_cuda_program_fn fn, void* prog) {
  xc_tiled_schedule_t s;
  if (!fn(caps, k, inout->knobs, prog, &s)) return false;
  if ((flags & XC_SCHEDULE_KEEP_KNOBS) && memcmp(s.knobs, inout->knobs, sizeof s.knobs[0] * (size_t)s.num_knobs))
    return false;
  if ((flags & XC_SCHEDULE_FOLLOW) && !xc_cuda_same_record(&s, inout)) return false;
  xc_status_t st = xc_tiled_schedule_check(k, &s, limits);
  if (st) {
    xc_status_free(st);
    return false;
  }
  *inout = s;
  return true;
}

bool xc_cuda_program_selected(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                              int num_knobs, xc_cuda_program_fn fn, void* prog) {
  int64_t start[XC_TILED_MAX_SCHED_KNOBS];
  xc_tiled_schedule_t s;
  if (!xc_cuda_knob_values(k, knobs, num_knobs, start) || !fn(caps, k, start, prog, &s)) return false;
  if (memcmp(s.knobs, start, sizeof start[0] * (size_t)k->num_knobs)) return false;
  return !k->schedule || xc_cuda_same_record(&s, k->schedule);
}

void xc_cuda_program_begin(xc_cstyle_writer_t* b, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           char* entry, size_t entry_size) {
  char kname[100];
  xc_cse_sanitize(k->name, kname, sizeof kname, 90);
  snprintf(entry, entry_size, "xk_%s", kname);
  P(b, "/* xcomp kernel %s: %s, emitted for cuda", k->name, entry);
  if (caps && caps->name[0]) P(b, " (%s)", caps->name);
  P(b, "\n");
}

void xc_cuda_program_pattern(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k) {
  P(b, " * pattern: ");
  for (const char* c = k->pattern; *c; c++) P(b, "%c", (c[0] == '*' && c[1] == '/') ? '+' : *c);
  P(b, "\n */\n");
}

void xc_cuda_program_entry(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k, const char* macro, const char* bounds,
                           const char* entry, long long dynamic_bytes, int num_tmaps) {
  P(b, "#define %s extern \"C\" __global__ void __launch_bounds__(%s) %s(", macro, bounds, entry);
  bool first = true;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k->num_params; i++) {
      bool buffer = k->params[i]->type.kind == XC_TILED_MEMREF;
      if (buffer != (pass == 0)) continue;
      P(b, "%s%s p%d", first ? "" : ", ", buffer ? "void*" : "const long long", i);
      first = false;
    }
  for (int i = 0; i < num_tmaps; i++) P(b, "%sconst __grid_constant__ xc_tmap tm%d", first ? "" : ", ", i), first = false;
  P(b, ")\n");
  P(b, "extern \"C\" __device__ unsigned int %s%s = %lldu;\n", XC_CUDA_DSM_PREFIX, entry, dynamic_bytes);
}

/* Device helpers of the pattern programs (written after their defines;
 * XC_TY names the 16-bit input type). */
static const char program_helpers[] =
    "static __device__ __forceinline__ unsigned xc_smem(const void* p) {\n"
    "  return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n"
    "/* 16 bytes global -> shared, zero-filled where !full */\n"
    "static __device__ __forceinline__ void xc_cp16(unsigned dst, const void* src, bool full) {\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(dst), \"l\"(src), \"r\"(full ? 16 : 0)\n"
    "               : \"memory\");\n"
    "}\n"
    "/* two f32 rounded to XC_TY, lo in the low half */\n"
    "static __device__ __forceinline__ unsigned xc_pack(float lo, float hi) {\n"
    "  unsigned r;\n"
    "  asm(\"cvt.rn.\" XC_TY \"x2.f32 %0, %2, %1;\\n\" : \"=r\"(r) : \"f\"(lo), \"f\"(hi));\n"
    "  return r;\n"
    "}\n"
    "static __device__ __forceinline__ void xc_bar_init(unsigned bar, unsigned count) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(bar), \"r\"(count) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void xc_bar_arrive(unsigned bar) {\n"
    "  asm volatile(\"{\\n .reg .b64 st;\\n mbarrier.arrive.shared::cta.b64 st, [%0];\\n}\\n\" :: \"r\"(bar)\n"
    "               : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void xc_bar_wait(unsigned bar, unsigned parity) {\n"
    "  unsigned done;\n"
    "  do {\n"
    "    asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n\"\n"
    "                 \" selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(done) : \"r\"(bar), \"r\"(parity) : \"memory\");\n"
    "  } while (!done);\n"
    "}\n"
    "/* the barrier expects tx more bytes (a TMA copy's) in its current phase; one arrival */\n"
    "static __device__ __forceinline__ void xc_bar_expect(unsigned bar, unsigned tx) {\n"
    "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\" :: \"r\"(bar), \"r\"(tx) : \"memory\");\n"
    "}\n"
    "/* a CUtensorMap (a __grid_constant__ kernel parameter) */\n"
    "struct __align__(64) xc_tmap {\n"
    "  unsigned long long q[16];\n"
    "};\n"
    "/* TMA: the box at coordinates (c0, c1[, c2]) of map m into shared memory at dst, completing\n"
    " * its bytes on barrier bar */\n"
    "static __device__ __forceinline__ void xc_tma2(unsigned dst, const xc_tmap* m, int c0, int c1, unsigned bar) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n\"\n"
    "               :: \"r\"(dst), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(bar) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void xc_tma3(unsigned dst, const xc_tmap* m, int c0, int c1, int c2, unsigned bar) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\\n\"\n"
    "               :: \"r\"(dst), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar) : \"memory\");\n"
    "}\n"
    "/* wgmma's shared-memory matrix descriptor, 128-byte swizzle */\n"
    "static __device__ __forceinline__ unsigned long long xc_desc(unsigned addr, unsigned lbo, unsigned sbo) {\n"
    "  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |\n"
    "         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);\n"
    "}\n";

void xc_cuda_program_helpers(xc_cstyle_writer_t* b, xc_dtype_t dtype) {
  P(b, "#define XC_TY \"%s\"\n", dtype == XC_BF16 ? "bf16" : "f16");
  P(b, "%s", program_helpers);
}

void xc_cuda_write_wgmma(xc_cstyle_writer_t* b, const char* name, int n, xc_dtype_t dtype, bool a_regs, bool trans_b) {
  int regs = n / 2, a0 = regs, bd = regs + (a_regs ? 4 : 1), sd = bd + 1;
  const char* ty = dtype == XC_BF16 ? "bf16" : "f16";
  P(b, "static __device__ __forceinline__ void %s(float* d, %s, unsigned long long db, int scale_d) {\n", name,
    a_regs ? "const unsigned* a" : "unsigned long long da");
  P(b, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n");
  P(b, "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", sd);
  P(b, "    \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", n, ty, ty);
  for (int i = 0; i < regs; i++) P(b, "%s%%%d", i ? ", " : "", i);
  if (a_regs)
    P(b, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1, %d;\\n}\\n\"\n    : ", a0, a0 + 1, a0 + 2, a0 + 3, bd, trans_b);
  else P(b, "}, %%%d, %%%d, p, 1, 1, 0, %d;\\n}\\n\"\n    : ", a0, bd, trans_b);
  for (int i = 0; i < regs; i++) P(b, "%s\"+f\"(d[%d])", i ? (i % 8 ? ", " : ",\n      ") : "", i);
  if (a_regs) P(b, "\n    : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), \"r\"(scale_d) : \"memory\");\n");
  else P(b, "\n    : \"l\"(da), \"l\"(db), \"r\"(scale_d) : \"memory\");\n");
  P(b, "#endif\n}\n");
}

xc_status_t xc_cuda_program_end(xc_cstyle_writer_t* b, const char* entry, xc_kernel_source_t* out) {
  if (b->oom) {
    free(b->data);
    return xc_error_oom();
  }
  memset(out, 0, sizeof *out);
  out->language = "cuda";
  out->text = b->data;
  snprintf(out->entry, sizeof out->entry, "%s", entry);
  return NULL;
}
