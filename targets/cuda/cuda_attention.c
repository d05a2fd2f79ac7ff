/* The cuda target's FlashAttention kernel for the tiled IR's "attention"
 * pattern (docs/tiled-ir.md, "Patterns"; docs/targets/cuda.md,
 * "Attention"). A kernel whose pattern this file takes is emitted as one
 * FlashAttention-2-style program per (query tile, batch x head) instead of
 * the C-family emission of its body; the body stays the definition (the
 * interpreter runs it, conformance compares against it).
 *
 * The program: 4 warps of 16 or 32 query rows (BLOCK_M 64 or 128), key
 * tiles of BLOCK_N 64 (32 for 32-row warps at head sizes above 64). Q, K
 * and V tiles move by 16-byte cp.async into dynamic shared memory (rows
 * padded by 16 bytes, so the 8 rows an ldmatrix reads fall in distinct
 * banks); K/V are double-buffered: tile j+1 loads while tile j is
 * computed, one barrier per tile. Q's fragments are read once into
 * registers (or per key tile where two m-tiles of head size 128 would not
 * fit the registers). S = Q K^T and O += P V run on mma.sync m16n8k16 (f32
 * accumulation); the scores stay in their accumulator fragments, where the
 * online softmax runs in registers (row max and sum over the 4 lanes of a
 * row by shuffles, exp2 with log2(e) folded into the scale) and the
 * probabilities, rounded to the input type, are the A fragments of P V
 * without a trip through memory. Causal programs stop at the diagonal and
 * mask only the tiles that cross it; they run heaviest first.
 *
 * On sm_90 at head sizes 64 to 128 (fa_wg_body): one or two consumer
 * warpgroups of 64 query rows on wgmma (S = Q K^T from shared memory, O +=
 * P V with P in registers), 128-key tiles in three stages filled by a
 * producer warpgroup behind full/empty mbarriers; per round a consumer
 * issues P V of the previous tile with Q K^T of the next, and the two
 * consumers take turns at the tensor cores (named barriers) so that one's
 * softmax overlaps the other's products. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cstyle/cstyle_internal.h"
#include "cuda_attention.h"
#include "cuda_dialect.h"
#include "cuda_target.h"

enum { FA_WARPS = 4, FA_THREADS = 32 * FA_WARPS };

static bool parse_operand(const char* p, const char* name, xc_cuda_fa_operand_t* o) {
  char tag[8];
  snprintf(tag, sizeof tag, " %s=", name);
  const char* s = strstr(p, tag);
  return s && sscanf(s + strlen(tag), "%d,%lld,%lld,%lld,%lld", &o->param, &o->base, &o->sb, &o->sh, &o->ss) == 5;
}

bool xc_cuda_fa_parse(const xc_tiled_kernel_t* k, xc_cuda_fa_t* fa) {
  memset(fa, 0, sizeof *fa);
  if (!k->pattern || strncmp(k->pattern, "attention ", 10)) return false;
  char dt[16];
  if (sscanf(k->pattern, "attention dtype=%15s b=%lld hq=%lld hk=%lld s=%lld l=%lld d=%lld causal=%d scale=%lg", dt,
             &fa->B, &fa->Hq, &fa->Hk, &fa->S, &fa->L, &fa->D, &fa->causal, &fa->scale) != 9)
    return false;
  if (!strcmp(dt, "bf16")) fa->dtype = XC_BF16;
  else if (!strcmp(dt, "f16")) fa->dtype = XC_F16;
  else return false;
  if (!parse_operand(k->pattern, "q", &fa->q) || !parse_operand(k->pattern, "k", &fa->k) ||
      !parse_operand(k->pattern, "v", &fa->v) || !parse_operand(k->pattern, "o", &fa->o))
    return false;
  const xc_cuda_fa_operand_t* ops[4] = {&fa->q, &fa->k, &fa->v, &fa->o};
  for (int i = 0; i < 4; i++) {
    if (ops[i]->param < 0 || ops[i]->param >= k->num_params) return false;
    const xc_tiled_value_t* p = k->params[ops[i]->param];
    if (p->type.kind != XC_TILED_MEMREF || p->type.dtype != fa->dtype) return false;
  }
  return fa->B > 0 && fa->Hq > 0 && fa->Hk > 0 && fa->Hq % fa->Hk == 0 && fa->S > 0 && fa->L > 0 && fa->D > 0;
}

static bool aligned(const xc_cuda_fa_operand_t* o, long long n) {
  return o->base % n == 0 && o->sb % n == 0 && o->sh % n == 0 && o->ss % n == 0;
}

/* The mma.sync program's tiles. */
static void fa_mma_tiles(xc_cuda_fa_t* fa, int sms) {
  /* Two 16-row m-tiles per warp (BLOCK_M 128) reuse each K/V fragment read
   * from shared memory twice, where the grid still fills the device twice
   * over; else one (BLOCK_M 64, twice the programs). Q's fragments stay in
   * registers unless two m-tiles of head size > 64 would spill. */
  fa->mt = ((fa->S + 127) / 128) * fa->B * fa->Hq >= 2LL * sms ? 2 : 1;
  fa->qreg = fa->mt == 1 || fa->D <= 64;
  fa->bm = 16 * FA_WARPS * fa->mt, fa->threads = FA_THREADS;
  fa->bn = fa->mt == 2 && fa->D > 64 ? 32 : 64; /* (the scores of 32 x 64 would spill next to O) */
  fa->pitch = fa->D + 8;
  fa->smem = (fa->bm + 4LL * fa->bn) * fa->pitch * 2;
}

bool xc_cuda_fa_take(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, xc_cuda_fa_t* fa, char* why,
                     size_t why_size) {
  if (!xc_cuda_fa_parse(k, fa)) {
    snprintf(why, why_size, "no attention pattern");
    return false;
  }
  if (!xc_cuda_caps_have_mma(caps, 16, 8, 16, fa->dtype)) {
    snprintf(why, why_size, "the device has no mma.m16n8k16 for %s", xc_dtype_name(fa->dtype));
    return false;
  }
  if (fa->S >= (1LL << 30) || fa->L >= (1LL << 30)) { /* positions in int */
    snprintf(why, why_size, "sequence lengths of 2^30 or more");
    return false;
  }
  if (fa->D % 16 || fa->D > 128) {
    snprintf(why, why_size, "head size %lld (multiples of 16 up to 128)", fa->D);
    return false;
  }
  /* 16-byte copies of q, k, v rows; 4-byte stores of o */
  if (!aligned(&fa->q, 8) || !aligned(&fa->k, 8) || !aligned(&fa->v, 8) || !aligned(&fa->o, 2)) {
    snprintf(why, why_size, "operand rows not 16-byte aligned");
    return false;
  }
  int sms = caps && caps->compute_units > 0 ? caps->compute_units : 132;
  /* sm_90, head sizes 64 to 128: warpgroups of 64 query rows on wgmma, 128
   * keys a tile; two of them (BLOCK_M 128) where the grid still has a
   * program per SM, else one. Rows sit in shared memory as whole 64-column
   * panels (pitch: the head size rounded up to 64, e.g. 128 for Llama-7B's
   * 80-wide or 96-wide heads): S = Q K^T takes the head's own k-steps, O +=
   * P V is computed pitch columns wide and its first D stored. */
  fa->wg = 0;
  if (xc_cuda_caps_arch(caps) == 90 && fa->D >= 64 && fa->D <= 128 && fa->scale > 0 &&
      xc_cuda_caps_have_mma(caps, 64, 256, 16, fa->dtype)) {
    fa->wg = ((fa->S + 127) / 128) * fa->B * fa->Hq >= sms ? 2 : 1;
    fa->mt = 0, fa->qreg = false;
    fa->bm = 64 * fa->wg, fa->bn = 128, fa->threads = 128 * fa->wg + 128;
    fa->pitch = (fa->D + 63) / 64 * 64;
    /* Q, the stages of K and V, 1024 bytes to align them for the swizzle,
     * a full and an empty barrier a stage; three stages where they fit */
    long long optin = caps && caps->local_memory_optin_bytes > 0 ? caps->local_memory_optin_bytes : 232448;
    for (fa->stages = 3; fa->stages > 2; fa->stages--)
      if ((fa->bm + 2LL * fa->stages * fa->bn) * fa->pitch * 2 + 1024 + 16LL * fa->stages <= optin) break;
    fa->smem = (fa->bm + 2LL * fa->stages * fa->bn) * fa->pitch * 2 + 1024 + 16LL * fa->stages;
  } else {
    fa_mma_tiles(fa, sms);
    fa->stages = 2;
  }
  if (caps && caps->local_memory_optin_bytes > 0 && fa->smem > caps->local_memory_optin_bytes) {
    snprintf(why, why_size, "%lld bytes of shared memory, the device allows %lld", fa->smem,
             (long long)caps->local_memory_optin_bytes);
    return false;
  }
  return true;
}

/* The record of the program above; knobs from `start` (the caller's
 * values) with the tile and thread knobs set. False: the kernel has no such
 * knobs (not a lowering's attention kernel). */
static bool fa_record(const xc_tiled_kernel_t* k, const xc_cuda_fa_t* fa, const int64_t* start,
                      xc_tiled_schedule_t* s) {
  int bm = xc_tiled_find_knob(k, "BLOCK_M_p0"), bn = xc_tiled_find_knob(k, "BLOCK_N_p0");
  int th = xc_tiled_knob_of_kind(k, XC_KNOB_THREADS);
  if (bm < 0 || bn < 0 || th < 0 || k->num_knobs > XC_TILED_MAX_SCHED_KNOBS || xc_tiled_dot_count(k) != 2)
    return false;
  memset(s, 0, sizeof *s);
  snprintf(s->scheduler, sizeof s->scheduler, "cuda");
  s->num_knobs = k->num_knobs;
  for (int i = 0; i < k->num_knobs; i++) s->knobs[i] = start ? start[i] : k->knobs[i].default_value;
  s->knobs[bm] = fa->bm, s->knobs[bn] = fa->bn, s->knobs[th] = fa->threads;
  s->threads = fa->threads;
  s->vector = 8;
  s->unroll = 0;
  s->num_dots = 2;
  for (int i = 0; i < 2; i++) {
    /* wgmma: S = Q K^T m64n<BLOCK_N>k16, O += P V m64n<pitch>k16 */
    s->dots[i].mma = fa->wg ? (xc_tiled_mma_t){64, i ? (int)fa->pitch : fa->bn, 16, fa->dtype, XC_F32}
                            : (xc_tiled_mma_t){16, 8, 16, fa->dtype, XC_F32};
    s->dots[i].stages = fa->stages;
    s->dots[i].operands = XC_SPACE_DYNAMIC;
  }
  s->local_bytes = 0;
  s->dynamic_bytes = fa->smem;
  return true;
}

static bool fa_program(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* start, void* prog,
                       xc_tiled_schedule_t* s) {
  char why[128];
  return xc_cuda_fa_take(caps, k, prog, why, sizeof why) && fa_record(k, prog, start, s);
}

bool xc_cuda_fa_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                         unsigned flags, xc_tiled_schedule_t* inout) {
  xc_cuda_fa_t fa;
  return xc_cuda_program_schedule(caps, k, limits, flags, inout, fa_program, &fa);
}

/* Helpers of both programs (after the FA_* defines and xc_cuda_program_helpers). */
static const char fa_head[] =
    "static __device__ __forceinline__ float fa_exp2(float x) {\n"
    "  float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y;\n"
    "}\n";

/* The mma.sync program. */
static const char fa_body[] =
    "#define FA_KT (FA_D / 16)  /* k-steps of S = Q K^T */\n"
    "#define FA_NT (FA_BN / 8)  /* 8-column tiles of S */\n"
    "#define FA_DT (FA_D / 8)   /* 8-column tiles of O */\n"
    "#define FA_CH (FA_D / 8)   /* 16-byte chunks of a row */\n"
    "static __device__ __forceinline__ void fa_ldm4(unsigned* r, unsigned a) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void fa_ldm4t(unsigned* r, unsigned a) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void fa_mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" XC_TY \".\" XC_TY \".f32 {%0, %1, %2, %3}, \"\n"
    "               \"{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "               : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "/* rows [r0, r0 + n) of a tile (global row stride `ss`, `lim` valid rows)\n"
    " * into shared rows of FA_PITCH elements, zero-filled past lim */\n"
    "static __device__ __forceinline__ void fa_load(unsigned short* dst, const unsigned short* src, long long ss,\n"
    "                                               long long r0, int n, long long lim, int tid) {\n"
    "  for (int i = tid; i < n * FA_CH; i += FA_THREADS) {\n"
    "    const int r = i / FA_CH, c = i % FA_CH;\n"
    "    const bool full = r0 + r < lim;\n"
    "    xc_cp16(xc_smem(dst + r * FA_PITCH + c * 8), full ? src + (r0 + r) * ss + c * 8 : src, full);\n"
    "  }\n"
    "}\n"
    "FA_ENTRY {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
    "  extern __shared__ __align__(128) unsigned char fa_dsm[];\n"
    "  unsigned short* const sq = (unsigned short*)fa_dsm;\n"
    "  unsigned short* const sk = sq + FA_BM * FA_PITCH; /* [2][FA_BN][FA_PITCH] */\n"
    "  unsigned short* const sv = sk + 2 * FA_BN * FA_PITCH;\n"
    "  const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
    "  const long long mtile = FA_CAUSAL ? (long long)(gridDim.x - 1 - blockIdx.x) : (long long)blockIdx.x;\n"
    "  const long long m0 = mtile * FA_BM, bh = blockIdx.y, b = bh / FA_HQ, h = bh % FA_HQ, hk = h / (FA_HQ / FA_HK);\n"
    "  const unsigned short* const qp = (const unsigned short*)FA_QP + FA_QBASE + b * FA_QSB + h * FA_QSH;\n"
    "  const unsigned short* const kp = (const unsigned short*)FA_KP + FA_KBASE + b * FA_KSB + hk * FA_KSH;\n"
    "  const unsigned short* const vp = (const unsigned short*)FA_VP + FA_VBASE + b * FA_VSB + hk * FA_VSH;\n"
    "  unsigned short* const op = (unsigned short*)FA_OP + FA_OBASE + b * FA_OSB + h * FA_OSH;\n"
    "  /* keys this query tile sees: all, or up to its last row (causal) */\n"
    "  const long long kend = FA_CAUSAL ? (m0 + FA_BM < FA_L ? m0 + FA_BM : FA_L) : FA_L;\n"
    "  const int ntiles = (int)((kend + FA_BN - 1) / FA_BN);\n"
    "  fa_load(sq, qp, FA_QSS, m0, FA_BM, FA_S, tid);\n"
    "  fa_load(sk, kp, FA_KSS, 0, FA_BN, FA_L, tid);\n"
    "  fa_load(sv, vp, FA_VSS, 0, FA_BN, FA_L, tid);\n"
    "  asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "  float o[FA_MT][FA_DT][4];\n"
    "  float mrow[FA_MT][2], lrow[FA_MT][2];\n"
    "  #pragma unroll\n"
    "  for (int mt = 0; mt < FA_MT; mt++) {\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < FA_DT; i++) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.0f;\n"
    "    mrow[mt][0] = mrow[mt][1] = -INFINITY;\n"
    "    lrow[mt][0] = lrow[mt][1] = 0.0f;\n"
    "  }\n"
    "  /* this warp's rows: w0 + mt * 16 + (lane >> 2) (+ 8) */\n"
    "  const int w0 = warp * 16 * FA_MT;\n"
    "  const unsigned qa0 = xc_smem(sq + (w0 + ((lane >> 3) & 1) * 8 + (lane & 7)) * FA_PITCH + (lane >> 4) * 8);\n"
    "#if FA_QREG\n"
    "  unsigned qf[FA_MT][FA_KT][4];\n"
    "#endif\n"
    "  for (int j = 0; j < ntiles; j++) {\n"
    "    const int st = j & 1;\n"
    "    asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\");\n"
    "    __syncthreads(); /* tile j is in; every warp is done with tile j - 1 */\n"
    "#if FA_QREG\n"
    "    if (j == 0) {\n"
    "      #pragma unroll\n"
    "      for (int mt = 0; mt < FA_MT; mt++)\n"
    "        #pragma unroll\n"
    "        for (int kk = 0; kk < FA_KT; kk++) fa_ldm4(qf[mt][kk], qa0 + (mt * 16 * FA_PITCH + kk * 16) * 2);\n"
    "    }\n"
    "#endif\n"
    "    if (j + 1 < ntiles) {\n"
    "      fa_load(sk + (st ^ 1) * FA_BN * FA_PITCH, kp, FA_KSS, (long long)(j + 1) * FA_BN, FA_BN, FA_L, tid);\n"
    "      fa_load(sv + (st ^ 1) * FA_BN * FA_PITCH, vp, FA_VSS, (long long)(j + 1) * FA_BN, FA_BN, FA_L, tid);\n"
    "      asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "    }\n"
    "    const unsigned ka = xc_smem(sk + st * FA_BN * FA_PITCH + ((lane >> 4) * 8 + (lane & 7)) * FA_PITCH +\n"
    "                                ((lane >> 3) & 1) * 8);\n"
    "    const unsigned va = xc_smem(sv + st * FA_BN * FA_PITCH + (((lane >> 3) & 1) * 8 + (lane & 7)) * FA_PITCH +\n"
    "                                (lane >> 4) * 8);\n"
    "    float s[FA_MT][FA_NT][4];\n"
    "    #pragma unroll\n"
    "    for (int mt = 0; mt < FA_MT; mt++)\n"
    "      #pragma unroll\n"
    "      for (int i = 0; i < FA_NT; i++) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.0f;\n"
    "    #pragma unroll\n"
    "    for (int kk = 0; kk < FA_KT; kk++) {\n"
    "#if FA_QREG\n"
    "#define FA_QF(mt) qf[mt][kk]\n"
    "#else\n"
    "      unsigned qt[FA_MT][4];\n"
    "      #pragma unroll\n"
    "      for (int mt = 0; mt < FA_MT; mt++) fa_ldm4(qt[mt], qa0 + (mt * 16 * FA_PITCH + kk * 16) * 2);\n"
    "#define FA_QF(mt) qt[mt]\n"
    "#endif\n"
    "      #pragma unroll\n"
    "      for (int nt = 0; nt < FA_NT; nt += 2) {\n"
    "        unsigned kb[4];\n"
    "        fa_ldm4(kb, ka + (nt * 8 * FA_PITCH + kk * 16) * 2);\n"
    "        #pragma unroll\n"
    "        for (int mt = 0; mt < FA_MT; mt++) {\n"
    "          fa_mma(s[mt][nt], FA_QF(mt), kb[0], kb[1]);\n"
    "          fa_mma(s[mt][nt + 1], FA_QF(mt), kb[2], kb[3]);\n"
    "        }\n"
    "      }\n"
    "#undef FA_QF\n"
    "    }\n"
    "    /* scale (log2 domain) and mask: keys past L, and past the row (causal) */\n"
    "    const int n0 = j * FA_BN;\n"
    "    const bool edge = n0 + FA_BN > FA_L || (FA_CAUSAL && n0 + FA_BN - 1 > m0 + w0);\n"
    "    #pragma unroll\n"
    "    for (int mt = 0; mt < FA_MT; mt++) {\n"
    "      const int row0 = (int)m0 + w0 + mt * 16 + (lane >> 2);\n"
    "      #pragma unroll\n"
    "      for (int nt = 0; nt < FA_NT; nt++)\n"
    "        #pragma unroll\n"
    "        for (int e = 0; e < 4; e++) {\n"
    "          float x = s[mt][nt][e] * FA_SCALE_LOG2;\n"
    "          if (edge) {\n"
    "            const int col = n0 + nt * 8 + 2 * (lane & 3) + (e & 1), row = row0 + (e >> 1) * 8;\n"
    "            if (col >= FA_L || (FA_CAUSAL && col > row)) x = -INFINITY;\n"
    "          }\n"
    "          s[mt][nt][e] = x;\n"
    "        }\n"
    "      /* online softmax, rows row0 (e = 0, 1) and row0 + 8 (e = 2, 3) */\n"
    "      #pragma unroll\n"
    "      for (int r = 0; r < 2; r++) {\n"
    "        float mx = -INFINITY;\n"
    "        #pragma unroll\n"
    "        for (int nt = 0; nt < FA_NT; nt++) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));\n"
    "        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));\n"
    "        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));\n"
    "        const float mnew = fmaxf(mrow[mt][r], mx), msafe = mnew == -INFINITY ? 0.0f : mnew;\n"
    "        const float alpha = fa_exp2(mrow[mt][r] - msafe);\n"
    "        float sum = 0.0f;\n"
    "        #pragma unroll\n"
    "        for (int nt = 0; nt < FA_NT; nt++) {\n"
    "          s[mt][nt][2 * r] = fa_exp2(s[mt][nt][2 * r] - msafe);\n"
    "          s[mt][nt][2 * r + 1] = fa_exp2(s[mt][nt][2 * r + 1] - msafe);\n"
    "          sum += s[mt][nt][2 * r] + s[mt][nt][2 * r + 1];\n"
    "        }\n"
    "        lrow[mt][r] = lrow[mt][r] * alpha + sum;\n"
    "        mrow[mt][r] = mnew;\n"
    "        #pragma unroll\n"
    "        for (int dt = 0; dt < FA_DT; dt++) o[mt][dt][2 * r] *= alpha, o[mt][dt][2 * r + 1] *= alpha;\n"
    "      }\n"
    "    }\n"
    "    /* O += P V: the probabilities of two 8-key tiles are one A fragment */\n"
    "    #pragma unroll\n"
    "    for (int kk = 0; kk < FA_BN / 16; kk++) {\n"
    "      unsigned pa[FA_MT][4];\n"
    "      #pragma unroll\n"
    "      for (int mt = 0; mt < FA_MT; mt++) {\n"
    "        pa[mt][0] = xc_pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);\n"
    "        pa[mt][1] = xc_pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);\n"
    "        pa[mt][2] = xc_pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);\n"
    "        pa[mt][3] = xc_pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);\n"
    "      }\n"
    "      #pragma unroll\n"
    "      for (int dt = 0; dt < FA_DT; dt += 2) {\n"
    "        unsigned vb[4];\n"
    "        fa_ldm4t(vb, va + (kk * 16 * FA_PITCH + dt * 8) * 2);\n"
    "        #pragma unroll\n"
    "        for (int mt = 0; mt < FA_MT; mt++) {\n"
    "          fa_mma(o[mt][dt], pa[mt], vb[0], vb[1]);\n"
    "          fa_mma(o[mt][dt + 1], pa[mt], vb[2], vb[3]);\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  /* O / l; a row without a visible key is 0 */\n"
    "  #pragma unroll\n"
    "  for (int mt = 0; mt < FA_MT; mt++)\n"
    "    #pragma unroll\n"
    "    for (int r = 0; r < 2; r++) {\n"
    "      float l = lrow[mt][r];\n"
    "      l += __shfl_xor_sync(0xffffffffu, l, 1);\n"
    "      l += __shfl_xor_sync(0xffffffffu, l, 2);\n"
    "      const float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
    "      const long long row = m0 + w0 + mt * 16 + (lane >> 2) + r * 8;\n"
    "      if (row < FA_S) {\n"
    "        #pragma unroll\n"
    "        for (int dt = 0; dt < FA_DT; dt++)\n"
    "          *(unsigned*)(op + row * FA_OSS + dt * 8 + 2 * (lane & 3)) =\n"
    "              xc_pack(o[mt][dt][2 * r] * inv, o[mt][dt][2 * r + 1] * inv);\n"
    "      }\n"
    "    }\n"
    "#endif\n"
    "}\n";

/* The sm_90 program (fa_mma_s and fa_mma_o are written by
 * xc_cuda_write_wgmma). */
static const char fa_wg_body[] =
    "#define FA_KT (FA_D / 16)  /* k-steps of S = Q K^T */\n"
    "#define FA_CH (FA_D / 8)   /* 16-byte chunks of a row */\n"
    "#define FA_DP FA_PITCH     /* columns a row takes in shared memory: whole 64-column panels */\n"
    "#define FA_CHP (FA_DP / 8) /* 16-byte chunks of that */\n"
    "#define FA_QB (FA_BM * FA_DP * 2)\n"
    "#define FA_KB (FA_BN * FA_DP * 2)\n"
    "#define FA_STAGE (2 * FA_KB) /* K, then V */\n"
    "#define FA_CONSUMERS (128 * FA_WG)\n"
    "/* tiles in flight behind the newest before the producer signals one: at\n"
    " * most FA_ST - 2 (docs/targets/cuda.md, \"GEMM on sm_90\") */\n"
    "#define FA_LAG (FA_ST - 2)\n"
    "/* rows [r0, r0 + n) of a [rows, FA_D] tile as wgmma's k-major operand:\n"
    " * panels of 64 columns, 128-byte rows, 16-byte chunk c of row r at\n"
    " * c ^ (r % 8); zero-filled past lim. By the producer warpgroup: thread p\n"
    " * copies chunk p % FA_CHP of rows p / FA_CHP + FA_RP * i, whose swizzle and\n"
    " * offsets are the same in every tile; chunks past the head's (FA_D <\n"
    " * FA_DP) are not copied: no k-step of S reads them, and the columns of O\n"
    " * they make are not stored. */\n"
    "#define FA_RP (128 / FA_CHP) /* rows a pass of the producer copies (a multiple of 8) */\n"
    "static __device__ __forceinline__ void fa_load_kmajor(unsigned dst, const unsigned short* src, long long ss,\n"
    "                                                      long long r0, int n, long long lim, int p) {\n"
    "  const int cc = p % FA_CHP, rb = p / FA_CHP;\n"
    "  if (FA_CH < FA_CHP && cc >= FA_CH) return;\n"
    "  const unsigned d = dst + (cc >> 3) * n * 128 + rb * 128 + (((cc & 7) ^ (rb & 7)) << 4);\n"
    "  const unsigned short* const s = src + (r0 + rb) * ss + cc * 8;\n"
    "  const long long left = lim - r0 - rb;\n"
    "  #pragma unroll\n"
    "  for (int i = 0; i < n / FA_RP; i++) {\n"
    "    const bool full = FA_RP * i < left;\n"
    "    xc_cp16(d + i * FA_RP * 128, full ? s + i * FA_RP * ss : src, full);\n"
    "  }\n"
    "}\n"
    "/* FA_BN rows of V as the n-major B operand of P V: atoms of 8 rows x 64\n"
    " * columns (1024 bytes), 8-row groups contiguous within a 64-column panel */\n"
    "static __device__ __forceinline__ void fa_load_nmajor(unsigned dst, const unsigned short* src, long long ss,\n"
    "                                                      long long r0, long long lim, int p) {\n"
    "  const int cc = p % FA_CHP, rb = p / FA_CHP;\n"
    "  if (FA_CH < FA_CHP && cc >= FA_CH) return;\n"
    "  const unsigned d = dst + ((cc >> 3) * (FA_BN / 8) + (rb >> 3)) * 1024 + (rb & 7) * 128 + (((cc & 7) ^ (rb & 7)) << 4);\n"
    "  const unsigned short* const s = src + (r0 + rb) * ss + cc * 8;\n"
    "  const long long left = lim - r0 - rb;\n"
    "  #pragma unroll\n"
    "  for (int i = 0; i < FA_BN / FA_RP; i++) {\n"
    "    const bool full = FA_RP * i < left;\n"
    "    xc_cp16(d + i * (FA_RP / 8) * 1024, full ? s + i * FA_RP * ss : src, full);\n"
    "  }\n"
    "}\n"
    "/* the accumulators' and fragments' values ordered against the wgmma\n"
    " * statements around them (the asm statements do not name the registers\n"
    " * an asynchronous wgmma still reads or writes) */\n"
    "#define FA_PIN(r, n, c) \\\n"
    "  _Pragma(\"unroll\") for (int i_ = 0; i_ < (n); i_++) asm volatile(\"\" : \"+\" c(r[i_]) :: \"memory\")\n"
    "/* the warpgroups take turns at the tensor cores: named barriers 1 and 2 */\n"
    "static __device__ __forceinline__ void fa_turn_wait(int wg) {\n"
    "  if (FA_WG > 1) asm volatile(\"bar.sync %0, 256;\\n\" :: \"r\"(1 + wg) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void fa_turn_pass(int wg) {\n"
    "  if (FA_WG > 1) asm volatile(\"bar.arrive %0, 256;\\n\" :: \"r\"(2 - wg) : \"memory\");\n"
    "}\n"
    "FA_ENTRY {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  extern __shared__ __align__(1024) unsigned char fa_dsm[];\n"
    "  const unsigned sq = (xc_smem(fa_dsm) + 1023u) & ~1023u;\n"
    "  const unsigned ring = sq + FA_QB; /* FA_ST stages of K and V */\n"
    "  const unsigned full = ring + FA_ST * FA_STAGE, empty = full + 8 * FA_ST;\n"
    "  const int tid = (int)threadIdx.x, lane = tid & 31;\n"
    "  const long long mtile = FA_CAUSAL ? (long long)(gridDim.x - 1 - blockIdx.x) : (long long)blockIdx.x;\n"
    "  const long long m0 = mtile * FA_BM, bh = blockIdx.y, b = bh / FA_HQ, h = bh % FA_HQ, hk = h / (FA_HQ / FA_HK);\n"
    "  /* keys this query tile sees: all, or up to its last row (causal) */\n"
    "  const long long kend = FA_CAUSAL ? (m0 + FA_BM < FA_L ? m0 + FA_BM : FA_L) : FA_L;\n"
    "  const int ntiles = (int)((kend + FA_BN - 1) / FA_BN);\n"
    "  if (tid == 0) {\n"
    "    for (int s = 0; s < FA_ST; s++) {\n"
    "      xc_bar_init(full + 8 * s, 128);                /* every producer thread */\n"
    "      xc_bar_init(empty + 8 * s, FA_CONSUMERS / 32); /* every consumer warp */\n"
    "    }\n"
    "  }\n"
    "  __syncthreads();\n"
    "  /* the warpgroup, uniform to the compiler (its wgmma statements are then\n"
    "   * not in divergent code, which would serialize them) */\n"
    "  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);\n"
    "  if (wg == FA_WG) {\n"
    "    /* the producer warpgroup: Q with the first tile, then K and V tile by\n"
    "     * tile; with two consumers it leaves them most of the registers */\n"
    "#if FA_WG > 1\n"
    "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 96;\\n\" ::: \"memory\");\n"
    "#endif\n"
    "    const int p = tid - FA_CONSUMERS;\n"
    "    const unsigned short* const qp = (const unsigned short*)FA_QP + FA_QBASE + b * FA_QSB + h * FA_QSH;\n"
    "    const unsigned short* const kp = (const unsigned short*)FA_KP + FA_KBASE + b * FA_KSB + hk * FA_KSH;\n"
    "    const unsigned short* const vp = (const unsigned short*)FA_VP + FA_VBASE + b * FA_VSB + hk * FA_VSH;\n"
    "    for (int j = 0; j < ntiles; j++) {\n"
    "      const int s = j % FA_ST;\n"
    "      xc_bar_wait(empty + 8 * s, ((j / FA_ST) & 1) ^ 1);\n"
    "      if (j == 0) fa_load_kmajor(sq, qp, FA_QSS, m0, FA_BM, FA_S, p);\n"
    "      fa_load_kmajor(ring + s * FA_STAGE, kp, FA_KSS, (long long)j * FA_BN, FA_BN, FA_L, p);\n"
    "      fa_load_nmajor(ring + s * FA_STAGE + FA_KB, vp, FA_VSS, (long long)j * FA_BN, FA_L, p);\n"
    "      asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "      if (j >= FA_LAG) {\n"
    "        asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(FA_LAG) : \"memory\");\n"
    "        asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\"); /* the copies, visible to wgmma */\n"
    "        xc_bar_arrive(full + 8 * ((j - FA_LAG) % FA_ST));\n"
    "      }\n"
    "    }\n"
    "    asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\");\n"
    "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
    "    for (int j = ntiles > FA_LAG ? ntiles - FA_LAG : 0; j < ntiles; j++) xc_bar_arrive(full + 8 * (j % FA_ST));\n"
    "    return;\n"
    "  }\n"
    "  /* a consumer warpgroup: query rows wrow0 .. wrow0 + 63; this thread's\n"
    "   * rows row0 and row0 + 8 */\n"
    "#if FA_WG > 1\n"
    "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 200;\\n\" ::: \"memory\");\n"
    "#endif\n"
    "  const int warp = (tid >> 5) & 3;\n"
    "  const int wrow0 = (int)m0 + 64 * wg, row0 = wrow0 + 16 * warp + (lane >> 2);\n"
    "  /* the key tiles it computes: causal ones past its last row are skipped */\n"
    "  const int mine = FA_CAUSAL ? min(ntiles, (wrow0 + 63) / FA_BN + 1) : ntiles;\n"
    "  const unsigned qa = sq + wg * 64 * 128;\n"
    "  float o[FA_DP / 2], s[FA_BN / 2];\n"
    "  unsigned pa[FA_BN / 16][4];\n"
    "  #pragma unroll\n"
    "  for (int i = 0; i < FA_DP / 2; i++) o[i] = 0.0f;\n"
    "  float mrow[2] = {-INFINITY, -INFINITY}, lrow[2] = {0.0f, 0.0f};\n"
    "  if (FA_WG > 1 && wg == 1) fa_turn_pass(1); /* warpgroup 0 goes first */\n"
    "  /* round j issues O += P_{j-1} V_{j-1} and S_j = Q K_j^T together, then\n"
    "   * runs the softmax of S_j while the other warpgroup has its turn */\n"
    "  for (int j = 0; j <= ntiles; j++) {\n"
    "    const bool pv = j > 0 && j - 1 < mine, qk = j < mine;\n"
    "    if (qk) xc_bar_wait(full + 8 * (j % FA_ST), (j / FA_ST) & 1);\n"
    "    fa_turn_wait(wg);\n"
    "    if (pv || qk) {\n"
    "      #pragma unroll\n"
    "      for (int i = 0; i < FA_BN / 2; i++) s[i] = 0.0f;\n"
    "      FA_PIN(s, FA_BN / 2, \"f\");\n"
    "      FA_PIN(o, FA_DP / 2, \"f\");\n"
    "      FA_PIN(((unsigned*)pa), FA_BN / 4, \"r\");\n"
    "      asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
    "      if (pv) {\n"
    "        const unsigned va = ring + ((j - 1) % FA_ST) * FA_STAGE + FA_KB;\n"
    "        #pragma unroll\n"
    "        for (int kk = 0; kk < FA_BN / 16; kk++)\n"
    "          fa_mma_o(o, pa[kk], xc_desc(va + 2048 * kk, (FA_BN / 8) * 1024, 1024), 1);\n"
    "      }\n"
    "      if (qk) {\n"
    "        const unsigned ka = ring + (j % FA_ST) * FA_STAGE;\n"
    "        #pragma unroll\n"
    "        for (int kk = 0; kk < FA_KT; kk++)\n"
    "          fa_mma_s(s, xc_desc(qa + (kk >> 2) * FA_BM * 128 + 32 * (kk & 3), 16, 1024),\n"
    "                   xc_desc(ka + (kk >> 2) * FA_BN * 128 + 32 * (kk & 3), 16, 1024), 1);\n"
    "      }\n"
    "      asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
    "    }\n"
    "    fa_turn_pass(wg);\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
    "    FA_PIN(s, FA_BN / 2, \"f\");\n"
    "    FA_PIN(o, FA_DP / 2, \"f\");\n"
    "    FA_PIN(((unsigned*)pa), FA_BN / 4, \"r\");\n"
    "    /* tile j - 1 is done with: its stage may be refilled */\n"
    "    if (j > 0 && lane == 0) xc_bar_arrive(empty + 8 * ((j - 1) % FA_ST));\n"
    "    if (!qk) continue;\n"
    "    /* mask: keys past L, and past the row (causal); s[4 * t + e] is row\n"
    "     * row0 + 8 * (e >> 1), key n0 + 8 * t + 2 * (lane & 3) + (e & 1) */\n"
    "    const int n0 = j * FA_BN;\n"
    "    if (n0 + FA_BN > FA_L || (FA_CAUSAL && n0 + FA_BN - 1 > wrow0)) {\n"
    "      #pragma unroll\n"
    "      for (int t = 0; t < FA_BN / 8; t++)\n"
    "        #pragma unroll\n"
    "        for (int e = 0; e < 4; e++) {\n"
    "          const int col = n0 + 8 * t + 2 * (lane & 3) + (e & 1), row = row0 + (e >> 1) * 8;\n"
    "          if (col >= FA_L || (FA_CAUSAL && col > row)) s[4 * t + e] = -INFINITY;\n"
    "        }\n"
    "    }\n"
    "    /* online softmax of rows row0 (e = 0, 1) and row0 + 8 (e = 2, 3); the\n"
    "     * row maxima are of the unscaled scores (the scale is positive), the\n"
    "     * exponents exp2(s * scale * log2(e) - max * scale * log2(e)) one fma */\n"
    "    #pragma unroll\n"
    "    for (int r = 0; r < 2; r++) {\n"
    "      float mx = -INFINITY;\n"
    "      #pragma unroll\n"
    "      for (int t = 0; t < FA_BN / 8; t++) mx = fmaxf(mx, fmaxf(s[4 * t + 2 * r], s[4 * t + 2 * r + 1]));\n"
    "      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));\n"
    "      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));\n"
    "      const float mnew = fmaxf(mrow[r], mx), msafe = mnew == -INFINITY ? 0.0f : -mnew * FA_SCALE_LOG2;\n"
    "      const float alpha = fa_exp2(fmaf(mrow[r], FA_SCALE_LOG2, msafe));\n"
    "      float sum = 0.0f;\n"
    "      #pragma unroll\n"
    "      for (int t = 0; t < FA_BN / 8; t++) {\n"
    "        s[4 * t + 2 * r] = fa_exp2(fmaf(s[4 * t + 2 * r], FA_SCALE_LOG2, msafe));\n"
    "        s[4 * t + 2 * r + 1] = fa_exp2(fmaf(s[4 * t + 2 * r + 1], FA_SCALE_LOG2, msafe));\n"
    "        sum += s[4 * t + 2 * r] + s[4 * t + 2 * r + 1];\n"
    "      }\n"
    "      lrow[r] = lrow[r] * alpha + sum;\n"
    "      mrow[r] = mnew;\n"
    "      #pragma unroll\n"
    "      for (int t = 0; t < FA_D / 8; t++) o[4 * t + 2 * r] *= alpha, o[4 * t + 2 * r + 1] *= alpha;\n"
    "    }\n"
    "    /* P, rounded to the input type: two 8-key column tiles make one A\n"
    "     * fragment of P V (registers) */\n"
    "    #pragma unroll\n"
    "    for (int kk = 0; kk < FA_BN / 16; kk++) {\n"
    "      pa[kk][0] = xc_pack(s[8 * kk], s[8 * kk + 1]);\n"
    "      pa[kk][1] = xc_pack(s[8 * kk + 2], s[8 * kk + 3]);\n"
    "      pa[kk][2] = xc_pack(s[8 * kk + 4], s[8 * kk + 5]);\n"
    "      pa[kk][3] = xc_pack(s[8 * kk + 6], s[8 * kk + 7]);\n"
    "    }\n"
    "  }\n"
    "  if (FA_WG > 1 && wg == 0) fa_turn_wait(0); /* warpgroup 1's last pass */\n"
    "  /* O / l; a row without a visible key is 0 */\n"
    "  unsigned short* const op = (unsigned short*)FA_OP + FA_OBASE + b * FA_OSB + h * FA_OSH;\n"
    "  #pragma unroll\n"
    "  for (int r = 0; r < 2; r++) {\n"
    "    float l = lrow[r];\n"
    "    l += __shfl_xor_sync(0xffffffffu, l, 1);\n"
    "    l += __shfl_xor_sync(0xffffffffu, l, 2);\n"
    "    const float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
    "    const long long row = row0 + r * 8;\n"
    "    if (row < FA_S) {\n"
    "      #pragma unroll\n"
    "      for (int t = 0; t < FA_D / 8; t++)\n"
    "        *(unsigned*)(op + row * FA_OSS + 8 * t + 2 * (lane & 3)) =\n"
    "            xc_pack(o[4 * t + 2 * r] * inv, o[4 * t + 2 * r + 1] * inv);\n"
    "    }\n"
    "  }\n"
    "#endif\n"
    "}\n";

static void operand_defines(xc_cstyle_writer_t* b, const char* n, const xc_cuda_fa_operand_t* o) {
  P(b, "#define FA_%sP p%d\n#define FA_%sBASE %lldLL\n#define FA_%sSB %lldLL\n#define FA_%sSH %lldLL\n"
       "#define FA_%sSS %lldLL\n",
    n, o->param, n, o->base, n, o->sb, n, o->sh, n, o->ss);
}

xc_status_t xc_cuda_fa_emit(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                            int num_knobs, bool* taken, xc_kernel_source_t* out) {
  xc_cuda_fa_t fa;
  *taken = xc_cuda_program_selected(caps, k, knobs, num_knobs, fa_program, &fa);
  if (!*taken) return NULL;
  char entry[128];
  xc_cstyle_writer_t b = {0};
  xc_cuda_program_begin(&b, caps, k, entry, sizeof entry);
  if (fa.wg)
    P(&b, " * FlashAttention program for the kernel's attention pattern (sm_90): %d query rows x %d keys per\n"
          " * tile, %d warpgroup(s) of 64 rows on wgmma.mma_async %s (S = Q K^T m64n%dk16 from shared memory,\n"
          " * O += P V m64n%lldk16 with P in registers), taking turns; a producer warpgroup filling %d stages of\n"
          " * K/V by cp.async; softmax in registers\n",
      fa.bm, fa.bn, fa.wg, xc_dtype_name(fa.dtype), fa.bn, fa.pitch, fa.stages);
  else
    P(&b, " * FlashAttention program for the kernel's attention pattern: %d query rows x %d keys per\n"
          " * tile, %d warps of %d rows, K/V double-buffered by cp.async, mma.m16n8k16 %s, softmax in\n"
          " * registers, Q's fragments %s\n",
      fa.bm, fa.bn, FA_WARPS, 16 * fa.mt, xc_dtype_name(fa.dtype),
      fa.qreg ? "in registers" : "read from shared memory per key tile");
  xc_cuda_program_pattern(&b, k);
  P(&b, "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n");
  P(&b, "#define FA_BM %d\n#define FA_MT %d\n#define FA_QREG %d\n#define FA_BN %d\n#define FA_THREADS %d\n", fa.bm,
    fa.mt, fa.qreg ? 1 : 0, fa.bn, fa.threads);
  P(&b, "#define FA_D %lld\n#define FA_PITCH %lld\n#define FA_WG %d\n#define FA_ST %d\n", fa.D, fa.pitch, fa.wg,
    fa.stages);
  P(&b, "#define FA_S %lldLL\n#define FA_L %lldLL\n#define FA_HQ %lldLL\n#define FA_HK %lldLL\n#define FA_CAUSAL %d\n",
    fa.S, fa.L, fa.Hq, fa.Hk, fa.causal ? 1 : 0);
  P(&b, "#define FA_SCALE_LOG2 %.9ef\n", fa.scale * 1.4426950408889634);
  operand_defines(&b, "Q", &fa.q);
  operand_defines(&b, "K", &fa.k);
  operand_defines(&b, "V", &fa.v);
  operand_defines(&b, "O", &fa.o);
  char bounds[16];
  snprintf(bounds, sizeof bounds, fa.wg ? "%d, 1" : "%d", fa.threads);
  xc_cuda_program_entry(&b, k, "FA_ENTRY", bounds, entry, fa.smem, 0);
  xc_cuda_program_helpers(&b, fa.dtype);
  P(&b, "%s", fa_head);
  if (fa.wg) {
    xc_cuda_write_wgmma(&b, "fa_mma_s", fa.bn, fa.dtype, false, false);
    xc_cuda_write_wgmma(&b, "fa_mma_o", (int)fa.pitch, fa.dtype, true, true);
    P(&b, "%s", fa_wg_body);
  } else {
    P(&b, "%s", fa_body);
  }
  return xc_cuda_program_end(&b, entry, out);
}
