/* The cuda target's sm_90 GEMM program for the tiled IR's "gemm" pattern
 * (docs/tiled-ir.md, "Patterns"; docs/targets/cuda.md, "GEMM on sm_90").
 * A kernel whose pattern this file takes is emitted as one program per
 * 128 x 256 output tile instead of the C-family emission of its body; the
 * body stays the definition (the interpreter runs it, conformance compares
 * against it).
 *
 * The program: three warpgroups (384 threads), warp-specialized. The
 * first is the producer: it moves the K steps' A (128 x 64) and B
 * (64 x 256) tiles by 16-byte cp.async into a ring of four stages of
 * dynamic shared memory, laid out as wgmma reads them with the 128-byte
 * swizzle (16-byte chunk c of 128-byte row r at chunk c ^ (r % 8)): A and
 * a B stored [n, k] as k-major rows, a B stored [k, n] as n-major atoms of
 * 64 columns x 8 rows. When a stage's copies have landed (cp.async groups,
 * two stages behind the newest) it fences them for the async proxy and
 * arrives on the stage's "full" mbarrier. The other two are consumers of 64
 * rows each: per K step, four wgmma.mma_async m64n256k16 (f32 accumulators
 * in registers, operands read from shared memory through descriptors), one
 * wgmma group kept in flight; when a step's group is complete, each
 * consumer warp arrives on the stage's "empty" mbarrier, which the producer
 * waits on before refilling it. The epilogue rounds the accumulators to the
 * output type in registers and stores them. Out-of-range rows, columns and
 * K columns are zero-filled by the copies and masked at the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cstyle/cstyle_internal.h"
#include "cuda_dialect.h"
#include "cuda_gemm.h"
#include "cuda_target.h"

enum { GM_BM = 128, GM_BN = 256, GM_BK = 64, GM_STAGES = 4, GM_THREADS = 384 };
/* A consumer's staged-epilogue buffer: 64 rows of half a tile's columns
 * (128 x 2 bytes), rows 264 bytes apart (a warp's pair stores then fall on
 * at most two words per bank). */
enum { GM_EROW = 264, GM_EB = 64 * GM_EROW };

static bool parse_operand(const char* p, const char* name, xc_cuda_gemm_operand_t* o) {
  char tag[8];
  snprintf(tag, sizeof tag, " %s=", name);
  const char* s = strstr(p, tag);
  return s && sscanf(s + strlen(tag), "%d,%lld,%lld,%lld,%lld", &o->param, &o->base, &o->sb, &o->si, &o->sj) == 5;
}

bool xc_cuda_gemm_parse(const xc_tiled_kernel_t* k, xc_cuda_gemm_t* g) {
  memset(g, 0, sizeof *g);
  if (!k->pattern || strncmp(k->pattern, "gemm ", 5)) return false;
  char dt[16];
  if (sscanf(k->pattern, "gemm dtype=%15s batch=%lld m=%lld n=%lld k=%lld", dt, &g->batch, &g->M, &g->N, &g->K) != 5)
    return false;
  if (!strcmp(dt, "bf16")) g->dtype = XC_BF16;
  else if (!strcmp(dt, "f16")) g->dtype = XC_F16;
  else return false;
  if (!parse_operand(k->pattern, "a", &g->a) || !parse_operand(k->pattern, "b", &g->b) ||
      !parse_operand(k->pattern, "y", &g->y))
    return false;
  const char* epi = strstr(k->pattern, " epi=");
  if (epi) {
    if (!strncmp(epi, " epi=swiglu_a ", 14)) g->epi = 1;
    else if (!strncmp(epi, " epi=swiglu_b ", 14)) g->epi = 2;
    else return false; /* an epilogue this program does not compute */
    if (!parse_operand(k->pattern, "u", &g->u)) return false;
  }
  const xc_cuda_gemm_operand_t* ops[4] = {&g->a, &g->b, &g->y, &g->u};
  for (int i = 0; i < (g->epi ? 4 : 3); i++) {
    if (ops[i]->param < 0 || ops[i]->param >= k->num_params) return false;
    const xc_tiled_value_t* p = k->params[ops[i]->param];
    if (p->type.kind != XC_TILED_MEMREF || p->type.dtype != g->dtype) return false;
  }
  return g->batch > 0 && g->M > 0 && g->N > 0 && g->K > 0;
}

static bool multiple(const xc_cuda_gemm_operand_t* o, long long n) {
  return o->base % n == 0 && o->sb % n == 0 && o->si % n == 0 && o->sj % n == 0;
}

/* Whether TMA can move an operand of `rows` rows of `cols` contiguous
 * elements, rows `row_stride` apart: coordinates in 32 bits, rows and
 * batches that do not overlap (strides of at least the extent below them),
 * strides under 2^40 bytes (xc_cuda_gemm_take checked they are 16-byte
 * multiples). */
static bool tma_operand(const xc_cuda_gemm_operand_t* o, long long row_stride, long long rows, long long cols,
                        long long batch) {
  if (rows > 2147483647LL || cols > 2147483647LL || batch > 2147483647LL) return false;
  if (row_stride < cols || row_stride >= (1LL << 38)) return false;
  return batch == 1 || o->sb == 0 || (o->sb >= rows * row_stride && o->sb < (1LL << 38));
}

static bool tma_fits(const xc_cuda_gemm_t* g) {
  if (!tma_operand(&g->a, g->a.si, g->M, g->K, g->batch)) return false;
  /* B [n, k]: n rows of k, sj apart; B [k, n]: k rows of n, si apart */
  return g->b_kmajor ? tma_operand(&g->b, g->b.sj, g->N, g->K, g->batch)
                     : tma_operand(&g->b, g->b.si, g->K, g->N, g->batch);
}

bool xc_cuda_gemm_take(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, xc_cuda_gemm_t* g, char* why,
                       size_t why_size) {
  if (!xc_cuda_gemm_parse(k, g)) {
    snprintf(why, why_size, "no gemm pattern");
    return false;
  }
  /* wgmma is sm_90's own (compiled for sm_90a), not in later architectures */
  if (xc_cuda_caps_arch(caps) != 90 || !xc_cuda_caps_have_mma(caps, 64, 256, 16, g->dtype)) {
    snprintf(why, why_size, "the device has no wgmma (sm_90) for %s", xc_dtype_name(g->dtype));
    return false;
  }
  g->b_kmajor = g->b.si == 1 && g->b.sj != 1;
  if (g->a.sj != 1 || g->y.sj != 1 || (g->b.sj != 1 && !g->b_kmajor) || (g->epi && g->u.sj != 1)) {
    snprintf(why, why_size, "A, Y or U not row-major, or B neither [k, n] nor [n, k]");
    return false;
  }
  /* 16-byte copies of A and B rows (every stride but the unit one a multiple
   * of 8 elements); 4-byte stores of Y pairs where its strides are even, else
   * 2-byte ones (a vocabulary of 50257 columns) */
  xc_cuda_gemm_operand_t a = g->a, b = g->b, y = g->y;
  a.sj = 8, y.sj = 2;
  if (g->b_kmajor) b.si = 8;
  else b.sj = 8;
  if (!multiple(&a, 8) || !multiple(&b, 8)) {
    snprintf(why, why_size, "operand rows not 16-byte aligned");
    return false;
  }
  g->y_pairs = multiple(&y, 2);
  xc_cuda_gemm_operand_t u = g->u;
  u.sj = 2;
  g->u_pairs = g->epi && multiple(&u, 2);
  /* one program per SM at least: smaller products run the body's more,
   * smaller tiles (or cuBLASLt, where the race prefers it); but a product
   * with an epilogue that cuBLASLt lacks (SwiGLU) takes the program at any
   * size: on the H200 the body took 57 us for a 512 x 2048 x 768 one (32
   * tiles) */
  int sms = caps && caps->compute_units > 0 ? caps->compute_units : 132;
  long long tiles = (g->M + GM_BM - 1) / GM_BM * ((g->N + GM_BN - 1) / GM_BN) * g->batch;
  if ((tiles < sms && !g->epi) || g->K < GM_BK) {
    snprintf(why, why_size, "%lld x %lld x %lld (batch %lld): %lld tiles of %d x %d for %d SMs", g->M, g->N, g->K,
             g->batch, tiles, GM_BM, GM_BN, sms);
    return false;
  }
  g->bm = GM_BM, g->bn = GM_BN, g->bk = GM_BK, g->stages = GM_STAGES, g->threads = GM_THREADS;
  /* TMA copies where the operands allow tensor maps, and persistent
   * programs (one per SM) where there are more tiles than SMs: the fastest
   * of the three forms on the H200 (bench/RESULTS.md section 28), which
   * $XCOMP_SM90_GEMM selects to measure them: "cp.async" (per-thread
   * copies, one program per tile), "tma" (one program per tile) or
   * "tma-persistent" */
  const char* form = getenv("XCOMP_SM90_GEMM");
  g->tma = (!form || strcmp(form, "cp.async")) && tma_fits(g);
  g->programs = g->tma && (!form || strcmp(form, "tma")) && tiles > sms && tiles < (1LL << 30) ? sms : 0;
  /* the stages, 1024 bytes to align the ring for the swizzle, the staged
   * epilogue's two buffers, the barriers */
  long long base = (long long)g->stages * (g->bm + g->bn) * g->bk * 2 + 1024 + 16LL * g->stages;
  long long optin = caps && caps->local_memory_optin_bytes > 0 ? caps->local_memory_optin_bytes : 232448;
  /* the epilogue through shared memory where it fits (227 KiB on sm_90):
   * 3-6% faster than pair stores from registers at 4096^3 and 8192^3 on
   * the H200, 2.3x on the 50257-column LM head (bench/RESULTS.md section
   * 28); $XCOMP_SM90_EPILOGUE "staged" / "direct" chooses (measuring) */
  const char* ep = getenv("XCOMP_SM90_EPILOGUE");
  g->staged = ep && *ep ? !strcmp(ep, "staged") : base + 2LL * GM_EB <= optin;
  g->smem = base + (g->staged ? 2LL * GM_EB : 0);
  if (caps && caps->local_memory_optin_bytes > 0 && g->smem > caps->local_memory_optin_bytes) {
    snprintf(why, why_size, "%lld bytes of shared memory, the device allows %lld", g->smem,
             (long long)caps->local_memory_optin_bytes);
    return false;
  }
  return true;
}

/* The record of the program; knobs from `start` with the tile, stage and
 * thread knobs set. False: the kernel has not those knobs or candidates. */
static bool gemm_record(const xc_tiled_kernel_t* k, const xc_cuda_gemm_t* g, const int64_t* start,
                        xc_tiled_schedule_t* s) {
  int bm = xc_tiled_find_knob(k, "BLOCK_M_p0"), bn = xc_tiled_find_knob(k, "BLOCK_N_p0");
  int bk = xc_tiled_find_knob(k, "BLOCK_K_p0"), st = xc_tiled_knob_of_kind(k, XC_KNOB_STAGES);
  int th = xc_tiled_knob_of_kind(k, XC_KNOB_THREADS);
  if (bm < 0 || bn < 0 || bk < 0 || st < 0 || th < 0 || k->num_knobs > XC_TILED_MAX_SCHED_KNOBS ||
      xc_tiled_dot_count(k) != 1)
    return false;
  memset(s, 0, sizeof *s);
  snprintf(s->scheduler, sizeof s->scheduler, "cuda");
  s->num_knobs = k->num_knobs;
  for (int i = 0; i < k->num_knobs; i++) s->knobs[i] = start ? start[i] : k->knobs[i].default_value;
  s->knobs[bm] = g->bm, s->knobs[bn] = g->bn, s->knobs[bk] = g->bk, s->knobs[st] = g->stages;
  s->knobs[th] = g->threads;
  s->threads = g->threads;
  s->vector = 8;
  s->unroll = 0;
  s->num_dots = 1;
  s->dots[0].mma = (xc_tiled_mma_t){64, 256, 16, g->dtype, XC_F32};
  s->dots[0].stages = g->stages;
  s->dots[0].operands = XC_SPACE_DYNAMIC;
  s->dynamic_bytes = g->smem;
  return true;
}

static bool gemm_program(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* start, void* prog,
                         xc_tiled_schedule_t* s) {
  char why[128];
  return xc_cuda_gemm_take(caps, k, prog, why, sizeof why) && gemm_record(k, prog, start, s);
}

bool xc_cuda_gemm_schedule(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_tiled_limits_t* limits,
                           unsigned flags, xc_tiled_schedule_t* inout) {
  xc_cuda_gemm_t g;
  return xc_cuda_program_schedule(caps, k, limits, flags, inout, gemm_program, &g);
}

/* Helpers of the program (after the GM_* defines; gm_mma is written by
 * xc_cuda_write_wgmma). */
static const char gm_head[] =
    "typedef unsigned short gm_t;\n"
    "/* a pair of the type (lo in the low half) as two f32 */\n"
    "static __device__ __forceinline__ void gm_unpack(unsigned v, float* lo, float* hi) {\n"
    "#if GM_BF16\n"
    "  *lo = __uint_as_float(v << 16);\n"
    "  *hi = __uint_as_float(v & 0xFFFF0000u);\n"
    "#else\n"
    "  asm(\"{\\n .reg .b16 l, h;\\n mov.b32 {l, h}, %2;\\n cvt.f32.f16 %0, l;\\n cvt.f32.f16 %1, h;\\n}\\n\"\n"
    "      : \"=f\"(*lo), \"=f\"(*hi) : \"r\"(v));\n"
    "#endif\n"
    "}\n"
    "#define GM_ASTAGE (GM_BM * GM_BK * 2)\n"
    "#define GM_STAGE (GM_ASTAGE + GM_BN * GM_BK * 2)\n"
    "/* steps in flight behind the newest before one is signalled; at most\n"
    " * GM_ST - 2, or the producer would wait for a stage whose release needs\n"
    " * the step it has not yet signalled */\n"
    "#define GM_LAG 2\n"
    "/* the tiles of this program: m0, n0 (first row, column), z (batch) */\n"
    "#if GM_PERSIST\n"
    "#define GM_TILES_BEGIN \\\n"
    "  for (int t = (int)blockIdx.x; t < GM_MT * GM_NT * GM_BATCH; t += (int)gridDim.x) { \\\n"
    "    const long long m0 = (long long)(t % GM_MT) * GM_BM, n0 = (long long)(t / GM_MT % GM_NT) * GM_BN; \\\n"
    "    const long long z = t / (GM_MT * GM_NT);\n"
    "#else\n"
    "#define GM_TILES_BEGIN \\\n"
    "  { \\\n"
    "    const long long m0 = (long long)blockIdx.x * GM_BM, n0 = (long long)blockIdx.y * GM_BN, z = blockIdx.z;\n"
    "#endif\n"
    "#define GM_TILES_END }\n"
    "/* the pair v at y (one element where !two) */\n"
    "static __device__ __forceinline__ void gm_store(gm_t* y, unsigned v, bool two) {\n"
    "#if GM_YPAIRS\n"
    "  if (two) {\n"
    "    *(unsigned*)y = v;\n"
    "    return;\n"
    "  }\n"
    "#endif\n"
    "  y[0] = (gm_t)(v & 0xFFFFu);\n"
    "  if (two) y[1] = (gm_t)(v >> 16);\n"
    "}\n"
    "/* the pair of outputs from accumulators a0, a1: rounded to the type, then the epilogue with\n"
    " * u's pair (one element where !two) */\n"
    "static __device__ __forceinline__ unsigned gm_out(float a0, float a1, const gm_t* u, bool two) {\n"
    "  unsigned v = xc_pack(a0, a1);\n"
    "#if GM_EPI\n"
    "  unsigned uv;\n"
    "#if GM_UPAIRS\n"
    "  if (two) uv = *(const unsigned*)u;\n"
    "  else\n"
    "#endif\n"
    "    uv = (unsigned)u[0] | (two ? (unsigned)u[1] << 16 : 0u);\n"
    "  float y0, y1, u0, u1;\n"
    "  gm_unpack(v, &y0, &y1);\n"
    "  gm_unpack(uv, &u0, &u1);\n"
    "#if GM_EPI == 1\n"
    "  v = xc_pack(y0 / (1.0f + __expf(-y0)) * u0, y1 / (1.0f + __expf(-y1)) * u1);\n"
    "#else\n"
    "  v = xc_pack(u0 / (1.0f + __expf(-u0)) * y0, u1 / (1.0f + __expf(-u1)) * y1);\n"
    "#endif\n"
    "#endif\n"
    "  return v;\n"
    "}\n";

/* The staged epilogue's row store: one row of a consumer's half tile from
 * its shared buffer (er) to Y, lane l on columns c0 + l, c0 + l + 32, ...
 * With a SwiGLU epilogue, u holds the row's U elements in that order
 * (loaded by the caller before any store: a load of U cannot pass a store
 * of Y) and gm_out1 applies it to the product already rounded to the type. */
static const char gm_row_store[] =
    "#if GM_EPI\n"
    "static __device__ __forceinline__ gm_t gm_out1(gm_t y, gm_t u) {\n"
    "  float fy, fu;\n"
    "  gm_unpack((unsigned)y | ((unsigned)u << 16), &fy, &fu);\n"
    "#if GM_EPI == 1\n"
    "  const float r = fy / (1.0f + __expf(-fy)) * fu;\n"
    "#else\n"
    "  const float r = fu / (1.0f + __expf(-fu)) * fy;\n"
    "#endif\n"
    "  return (gm_t)(xc_pack(r, 0.0f) & 0xFFFFu);\n"
    "}\n"
    "#endif\n"
    "static __device__ __forceinline__ void gm_row(gm_t* Y, const unsigned char* er, long long row, long long c0,\n"
    "                                              int lane, const gm_t* u) {\n"
    "  if (row >= GM_M) return;\n"
    "  #pragma unroll\n"
    "  for (int e = 0; e < GM_BN / 64; e++) {\n"
    "    const int lc = 32 * e + lane;\n"
    "    const long long col = c0 + lc;\n"
    "#if GM_EPI\n"
    "    if (col < GM_N) Y[row * GM_YSI + col] = gm_out1(*(const gm_t*)(er + 2 * lc), u[e]);\n"
    "#else\n"
    "    (void)u;\n"
    "    if (col < GM_N) Y[row * GM_YSI + col] = *(const gm_t*)(er + 2 * lc);\n"
    "#endif\n"
    "  }\n"
    "}\n";

static const char gm_body[] =
    "GM_ENTRY {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  extern __shared__ __align__(1024) unsigned char gm_dsm[];\n"
    "  const unsigned ring = (xc_smem(gm_dsm) + 1023u) & ~1023u;\n"
    "  const unsigned ebuf = ring + GM_ST * GM_STAGE; /* the staged epilogue's buffers */\n"
    "  const unsigned full = ebuf + (GM_STAGED ? 2 * GM_EB : 0), empty = full + 8 * GM_ST;\n"
    "  const int tid = (int)threadIdx.x, wg = tid >> 7;\n"
    "  const int kt_n = (int)((GM_K + GM_BK - 1) / GM_BK);\n"
    "  if (tid == 0) {\n"
    "    for (int s = 0; s < GM_ST; s++) {\n"
    "      xc_bar_init(full + 8 * s, GM_TMA ? 1 : 128); /* the TMA issuer, or every producer thread */\n"
    "      xc_bar_init(empty + 8 * s, 8);               /* every consumer warp */\n"
    "    }\n"
    "  }\n"
    "  __syncthreads();\n"
    "#if GM_TMA\n"
    "  if (wg == 0) {\n"
    "    /* the producer: one thread issues each step's tensor copies (A's 128 x 64 box, B's 256 x 64\n"
    "     * one or four 64 x 64 boxes of B [k, n]), which land swizzled and complete on the stage's\n"
    "     * full barrier; out-of-range elements arrive as zeros */\n"
    "    if (tid == 0) {\n"
    "      int it = 0;\n"
    "      GM_TILES_BEGIN\n"
    "      for (int kt = 0; kt < kt_n; kt++, it++) {\n"
    "        const int s = it % GM_ST, k0 = kt * GM_BK;\n"
    "        xc_bar_wait(empty + 8 * s, ((it / GM_ST) & 1) ^ 1);\n"
    "        const unsigned sa = ring + s * GM_STAGE, sb = sa + GM_ASTAGE, bar = full + 8 * s;\n"
    "        xc_bar_expect(bar, GM_STAGE);\n"
    "#if GM_ARANK == 3\n"
    "        xc_tma3(sa, &tm0, k0, (int)m0, (int)z, bar);\n"
    "#else\n"
    "        xc_tma2(sa, &tm0, k0, (int)m0, bar);\n"
    "#endif\n"
    "#if GM_BKMAJOR\n"
    "#if GM_BRANK == 3\n"
    "        xc_tma3(sb, &tm1, k0, (int)n0, (int)z, bar);\n"
    "#else\n"
    "        xc_tma2(sb, &tm1, k0, (int)n0, bar);\n"
    "#endif\n"
    "#else\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BN / 64; j++) {\n"
    "#if GM_BRANK == 3\n"
    "          xc_tma3(sb + j * GM_BK * 128, &tm1, (int)n0 + 64 * j, k0, (int)z, bar);\n"
    "#else\n"
    "          xc_tma2(sb + j * GM_BK * 128, &tm1, (int)n0 + 64 * j, k0, bar);\n"
    "#endif\n"
    "        }\n"
    "#endif\n"
    "      }\n"
    "      GM_TILES_END\n"
    "    }\n"
    "  } else {\n"
    "#else\n"
    "  if (wg == 0) {\n"
    "    const long long m0 = (long long)blockIdx.x * GM_BM, n0 = (long long)blockIdx.y * GM_BN, z = blockIdx.z;\n"
    "    /* the producer: thread tid copies 16-byte chunk tid % 8 of A rows tid / 8 + 16 j (and of B's\n"
    "     * rows, or B's chunk column tid % 32 of k rows tid / 32 + 4 j), so that each copy's swizzled\n"
    "     * shared offset and global offset are constants of the step */\n"
    "    const int ar = tid >> 3, ac = tid & 7;\n"
    "    const gm_t* const A = (const gm_t*)GM_AP + GM_ABASE + z * GM_ASB + (m0 + ar) * GM_ASI + 8 * ac;\n"
    "    const long long a_rows = GM_M - m0 - ar;\n"
    "    const unsigned a_off = ar * 128 + ((ac ^ (ar & 7)) << 4);\n"
    "#if GM_BKMAJOR\n"
    "    const gm_t* const B = (const gm_t*)GM_BP + GM_BBASE + z * GM_BSB + (n0 + ar) * GM_BSJ + 8 * ac;\n"
    "    const long long b_rows = GM_N - n0 - ar;\n"
    "    const unsigned b_off = a_off;\n"
    "#else\n"
    "    const int bk = tid >> 5, bc = tid & 31;\n"
    "    const gm_t* const B = (const gm_t*)GM_BP + GM_BBASE + z * GM_BSB + bk * GM_BSI + n0 + 8 * bc;\n"
    "    const bool b_cols = n0 + 8 * bc < GM_N;\n"
    "    /* k rows bk + 4 j: rows bk and bk + 4 of 8-row group j / 2 */\n"
    "    const unsigned b_off0 = (bc >> 3) * (GM_BK / 8) * 1024 + bk * 128 + (((bc & 7) ^ bk) << 4);\n"
    "    const unsigned b_off1 = (bc >> 3) * (GM_BK / 8) * 1024 + (bk + 4) * 128 + (((bc & 7) ^ (bk + 4)) << 4);\n"
    "#endif\n"
    "    const bool m_in = m0 + GM_BM <= GM_M, n_in = n0 + GM_BN <= GM_N;\n"
    "    for (int kt = 0; kt < kt_n; kt++) {\n"
    "      const int s = kt % GM_ST;\n"
    "      xc_bar_wait(empty + 8 * s, ((kt / GM_ST) & 1) ^ 1);\n"
    "      const unsigned sa = ring + s * GM_STAGE, sb = sa + GM_ASTAGE;\n"
    "      const long long k0 = (long long)kt * GM_BK;\n"
    "      if (m_in && n_in && k0 + GM_BK <= GM_K) {\n"
    "        /* a whole tile: no bounds, offsets from one address each */\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BM / 16; j++) xc_cp16(sa + a_off + j * 2048, A + 16 * j * GM_ASI + k0, true);\n"
    "#if GM_BKMAJOR\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BN / 16; j++) xc_cp16(sb + b_off + j * 2048, B + 16 * j * GM_BSJ + k0, true);\n"
    "#else\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BK / 4; j++)\n"
    "          xc_cp16(sb + ((j & 1) ? b_off1 : b_off0) + (j >> 1) * 1024, B + (k0 + 4 * j) * GM_BSI, true);\n"
    "#endif\n"
    "      } else {\n"
    "        const bool a_k = k0 + 8 * ac < GM_K;\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BM / 16; j++) {\n"
    "          const bool ok = a_k && 16 * j < a_rows;\n"
    "          xc_cp16(sa + a_off + j * 2048, ok ? A + 16 * j * GM_ASI + k0 : A, ok);\n"
    "        }\n"
    "#if GM_BKMAJOR\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BN / 16; j++) {\n"
    "          const bool ok = a_k && 16 * j < b_rows;\n"
    "          xc_cp16(sb + b_off + j * 2048, ok ? B + 16 * j * GM_BSJ + k0 : B, ok);\n"
    "        }\n"
    "#else\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < GM_BK / 4; j++) {\n"
    "          const bool ok = b_cols && k0 + bk + 4 * j < GM_K;\n"
    "          xc_cp16(sb + ((j & 1) ? b_off1 : b_off0) + (j >> 1) * 1024, ok ? B + (k0 + 4 * j) * GM_BSI : B, ok);\n"
    "        }\n"
    "#endif\n"
    "      }\n"
    "      asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "      if (kt >= GM_LAG) {\n"
    "        asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(GM_LAG) : \"memory\");\n"
    "        asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
    "        xc_bar_arrive(full + 8 * ((kt - GM_LAG) % GM_ST));\n"
    "      }\n"
    "    }\n"
    "    asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\");\n"
    "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
    "    for (int kt = kt_n > GM_LAG ? kt_n - GM_LAG : 0; kt < kt_n; kt++) xc_bar_arrive(full + 8 * (kt % GM_ST));\n"
    "  } else {\n"
    "#endif\n"
    "    /* a consumer: rows [64 * (wg - 1), 64 * wg) of each tile */\n"
    "    const int c = wg - 1, lane = tid & 31, w = (tid >> 5) & 3;\n"
    "    int it = 0;\n"
    "    GM_TILES_BEGIN\n"
    "    float acc[GM_BN / 2];\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < GM_BN / 2; i++) acc[i] = 0.0f;\n"
    "    for (int kt = 0; kt < kt_n; kt++, it++) {\n"
    "      const int s = it % GM_ST;\n"
    "      xc_bar_wait(full + 8 * s, (it / GM_ST) & 1);\n"
    "      const unsigned sa = ring + s * GM_STAGE + c * 64 * 128, sb = ring + s * GM_STAGE + GM_ASTAGE;\n"
    "      asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
    "      #pragma unroll\n"
    "      for (int kk = 0; kk < GM_BK / 16; kk++) {\n"
    "#if GM_BKMAJOR\n"
    "        gm_mma(acc, xc_desc(sa + 32 * kk, 16, 1024), xc_desc(sb + 32 * kk, 16, 1024), 1);\n"
    "#else\n"
    "        gm_mma(acc, xc_desc(sa + 32 * kk, 16, 1024), xc_desc(sb + 2048 * kk, (GM_BK / 8) * 1024, 1024), 1);\n"
    "#endif\n"
    "      }\n"
    "      asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
    "      asm volatile(\"wgmma.wait_group.sync.aligned 1;\\n\" ::: \"memory\");\n"
    "      if (kt > 0 && lane == 0) xc_bar_arrive(empty + 8 * ((it - 1) % GM_ST));\n"
    "    }\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
    "    /* the tile's last stage is free (the next tile's producer waits for it) */\n"
    "    if (lane == 0) xc_bar_arrive(empty + 8 * ((it - 1) % GM_ST));\n"
    "    gm_t* const Y = (gm_t*)GM_YP + GM_YBASE + z * GM_YSB;\n"
    "#if GM_EPI\n"
    "    const gm_t* const U = (const gm_t*)GM_UP + GM_UBASE + z * GM_USB;\n"
    "#else\n"
    "    const gm_t* const U = Y;\n"
    "#endif\n"
    "#if GM_STAGED\n"
    "    /* per half of the columns: the rounded products into this consumer's buffer, then each warp\n"
    "     * applies a SwiGLU epilogue (U read in the same coalesced order) and stores\n"
    "     * rows w, w + 4, ... element by element, lane l on columns l, l + 32, ... (64 contiguous\n"
    "     * bytes a store) */\n"
    "    unsigned char* const eb = gm_dsm + (ebuf - xc_smem(gm_dsm)) + c * GM_EB;\n"
    "    #pragma unroll\n"
    "    for (int h = 0; h < 2; h++) {\n"
    "      #pragma unroll\n"
    "      for (int jj = 0; jj < GM_BN / 16; jj++) {\n"
    "        const int j = h * (GM_BN / 16) + jj, lr = 16 * w + (lane >> 2), lc = 8 * jj + 2 * (lane & 3);\n"
    "        *(unsigned*)(eb + lr * GM_EROW + 2 * lc) = xc_pack(acc[4 * j], acc[4 * j + 1]);\n"
    "        *(unsigned*)(eb + (lr + 8) * GM_EROW + 2 * lc) = xc_pack(acc[4 * j + 2], acc[4 * j + 3]);\n"
    "      }\n"
    "      asm volatile(\"bar.sync %0, 128;\\n\" :: \"r\"(1 + c) : \"memory\");\n"
    "#if GM_EPI\n"
    "      /* U for four rows at a time, loaded before any of their stores (which the compiler\n"
    "       * may not move a load of U past), so that sixteen loads are in flight */\n"
    "      for (int rb = w; rb < 64; rb += 16) {\n"
    "        gm_t uv[4][GM_BN / 64];\n"
    "        #pragma unroll\n"
    "        for (int q = 0; q < 4; q++) {\n"
    "          const long long row = m0 + 64 * c + rb + 4 * q;\n"
    "          #pragma unroll\n"
    "          for (int e = 0; e < GM_BN / 64; e++) {\n"
    "            const long long col = n0 + h * (GM_BN / 2) + 32 * e + lane;\n"
    "            uv[q][e] = row < GM_M && col < GM_N ? __ldg(U + row * GM_USI + col) : (gm_t)0;\n"
    "          }\n"
    "        }\n"
    "        #pragma unroll\n"
    "        for (int q = 0; q < 4; q++)\n"
    "          gm_row(Y, eb + (rb + 4 * q) * GM_EROW, m0 + 64 * c + rb + 4 * q, n0 + h * (GM_BN / 2), lane, uv[q]);\n"
    "      }\n"
    "#else\n"
    "      #pragma unroll 4\n"
    "      for (int r = w; r < 64; r += 4) gm_row(Y, eb + r * GM_EROW, m0 + 64 * c + r, n0 + h * (GM_BN / 2), lane, 0);\n"
    "#endif\n"
    "      asm volatile(\"bar.sync %0, 128;\\n\" :: \"r\"(1 + c) : \"memory\");\n"
    "    }\n"
    "#else\n"
    "    const long long r0 = m0 + 64 * c + 16 * w + (lane >> 2);\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < GM_BN / 8; j++) {\n"
    "      const long long col = n0 + 8 * j + 2 * (lane & 3);\n"
    "      if (col < GM_N) {\n"
    "        const bool two = col + 1 < GM_N;\n"
    "        if (r0 < GM_M)\n"
    "          gm_store(Y + r0 * GM_YSI + col, gm_out(acc[4 * j], acc[4 * j + 1], U + r0 * GM_USI + col, two), two);\n"
    "        if (r0 + 8 < GM_M)\n"
    "          gm_store(Y + (r0 + 8) * GM_YSI + col,\n"
    "                   gm_out(acc[4 * j + 2], acc[4 * j + 3], U + (r0 + 8) * GM_USI + col, two), two);\n"
    "      }\n"
    "    }\n"
    "#endif\n"
    "    GM_TILES_END\n"
    "  }\n"
    "#endif\n"
    "}\n";

static void operand_defines(xc_cstyle_writer_t* b, const char* n, const xc_cuda_gemm_operand_t* o) {
  P(b, "#define GM_%sP p%d\n#define GM_%sBASE %lldLL\n#define GM_%sSB %lldLL\n#define GM_%sSI %lldLL\n"
       "#define GM_%sSJ %lldLL\n",
    n, o->param, n, o->base, n, o->sb, n, o->si, n, o->sj);
}

/* The launch's buffer that kernel parameter `param` is (buffers are the
 * memref parameters in order). */
static int buffer_index(const xc_tiled_kernel_t* k, int param) {
  int n = 0;
  for (int i = 0; i < param; i++) n += k->params[i]->type.kind == XC_TILED_MEMREF;
  return n;
}

/* One tensor map of the launch plan: `rows` rows of `cols` elements, rows
 * row_stride apart, batches o->sb apart (rank 3 where there are several
 * and o->sb is not 0), boxes of box_cols x box_rows. Returns the rank. */
static int tmap(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k, const xc_cuda_gemm_t* g,
                const xc_cuda_gemm_operand_t* o, long long row_stride, long long rows, long long cols, int box_cols,
                int box_rows) {
  int rank = g->batch > 1 && o->sb != 0 ? 3 : 2;
  /* XC_TMAP_* order: buffer, dtype, rank, base, dims[3], strides[2], box[3] */
  P(b, ",\n  %d, %d, %d, %lld, %lld, %lld, %lld, %lld, %lld, %d, %d, %d", buffer_index(k, o->param),
    g->dtype == XC_BF16 ? 9 : 6, rank, o->base, cols, rows, rank == 3 ? g->batch : 1, row_stride * 2,
    rank == 3 ? o->sb * 2 : 0, box_cols, box_rows, 1);
  return rank;
}

/* The launch plan (XC_CUDA_LAUNCH_PREFIX in cuda_target.h): the persistent
 * programs' count, the maps of A (tm0) and B (tm1), and their ranks. */
static void launch_plan(xc_cstyle_writer_t* b, const xc_tiled_kernel_t* k, const xc_cuda_gemm_t* g,
                        const char* entry) {
  P(b, "extern \"C\" __device__ long long %s%s[] = {%lld, %d", XC_CUDA_LAUNCH_PREFIX, entry, g->programs,
    g->tma ? 2 : 0);
  int ar = 0, br = 0;
  if (g->tma) {
    ar = tmap(b, k, g, &g->a, g->a.si, g->M, g->K, g->bk, g->bm);
    if (g->b_kmajor) br = tmap(b, k, g, &g->b, g->b.sj, g->N, g->K, g->bk, g->bn);
    else br = tmap(b, k, g, &g->b, g->b.si, g->K, g->N, 64, g->bk);
  }
  P(b, "};\n#define GM_ARANK %d\n#define GM_BRANK %d\n", ar, br);
}

xc_status_t xc_cuda_gemm_emit(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const xc_knob_t* knobs,
                              int num_knobs, bool* taken, xc_kernel_source_t* out) {
  xc_cuda_gemm_t g;
  *taken = xc_cuda_program_selected(caps, k, knobs, num_knobs, gemm_program, &g);
  if (!*taken) return NULL;
  char entry[128];
  xc_cstyle_writer_t b = {0};
  xc_cuda_program_begin(&b, caps, k, entry, sizeof entry);
  P(&b, " * sm_90 GEMM program for the kernel's gemm pattern: %d x %d tiles, K steps of %d in %d stages\n"
        " * of shared memory filled by a producer warpgroup (%s, 128-byte swizzle), two consumer\n"
        " * warpgroups on wgmma.mma_async m64n%dk16 %s (B %s-major)%s%s\n",
    g.bm, g.bn, g.bk, g.stages, g.tma ? "TMA" : "cp.async", g.bn, xc_dtype_name(g.dtype), g.b_kmajor ? "k" : "n",
    g.programs ? "; persistent programs" : "", g.epi == 1 ? "; epilogue silu(AB) U" : g.epi == 2 ? "; epilogue silu(U) AB" : "");
  xc_cuda_program_pattern(&b, k);
  P(&b, "#define GM_BM %d\n#define GM_BN %d\n#define GM_BK %d\n#define GM_ST %d\n#define GM_BKMAJOR %d\n", g.bm, g.bn,
    g.bk, g.stages, g.b_kmajor ? 1 : 0);
  P(&b, "#define GM_STAGED %d\n#define GM_EROW %d\n#define GM_EB %d\n", g.staged ? 1 : 0, GM_EROW, GM_EB);
  P(&b, "#define GM_YPAIRS %d\n#define GM_UPAIRS %d\n#define GM_EPI %d\n#define GM_BF16 %d\n", g.y_pairs ? 1 : 0,
    g.u_pairs ? 1 : 0, g.epi, g.dtype == XC_BF16 ? 1 : 0);
  long long mt = (g.M + g.bm - 1) / g.bm, nt = (g.N + g.bn - 1) / g.bn;
  P(&b, "#define GM_TMA %d\n#define GM_PERSIST %d\n#define GM_MT %lld\n#define GM_NT %lld\n#define GM_BATCH %lld\n",
    g.tma ? 1 : 0, g.programs ? 1 : 0, mt, nt, g.batch);
  P(&b, "#define GM_M %lldLL\n#define GM_N %lldLL\n#define GM_K %lldLL\n", g.M, g.N, g.K);
  operand_defines(&b, "A", &g.a);
  operand_defines(&b, "B", &g.b);
  operand_defines(&b, "Y", &g.y);
  if (g.epi) operand_defines(&b, "U", &g.u);
  else P(&b, "#define GM_USI GM_YSI\n");
  char bounds[16];
  snprintf(bounds, sizeof bounds, "%d, 1", g.threads);
  xc_cuda_program_entry(&b, k, "GM_ENTRY", bounds, entry, g.smem, g.tma ? 2 : 0);
  if (g.tma || g.programs) launch_plan(&b, k, &g, entry);
  xc_cuda_program_helpers(&b, g.dtype);
  P(&b, "%s", gm_head);
  xc_cuda_write_wgmma(&b, "gm_mma", g.bn, g.dtype, false, !g.b_kmajor);
  P(&b, "%s", gm_row_store);
  P(&b, "%s", gm_body);
  return xc_cuda_program_end(&b, entry, out);
}
