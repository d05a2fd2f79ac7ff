/* The C dialect of the C-family emitter: kernels for the cpu target, with
 * the C ABI of docs/targets.md. A kernel runs a range of programs on the
 * calling thread (the runtime's pool spreads them over threads); tiles are
 * stack arrays and tile ops loops with `#pragma omp simd`. */
#include <inttypes.h>
#include <string.h>

#include "cstyle.h"

/* The kernel's buffer parameters and scalars as locals; returns the number
 * of buffers (the packed operands' buffer follows them). */
static int write_params(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_tiled_kernel_t* k) {
  int nb = 0, ns = 0;
  char name[80];
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    xc_cstyle_param_name(p, name, sizeof name);
    if (p->type.kind == XC_TILED_MEMREF) {
      /* Inputs are restrict: the runtime never binds memory a launch writes
       * to one of its read-only (`in`) parameters (docs/targets.md), so
       * stores through the outputs cannot change them and their reads (a
       * Clip's bounds, a bias) hoist out of the element loops, which then
       * vectorize. Outputs may alias each other (views): no restrict. */
      bool in = p->type.role == XC_ROLE_IN;
      const char* c = in ? "const " : "";
      const char* t = d->storage_type[p->type.dtype];
      xc_cstyle_printf(w, "  %s%s* %s%s = (%s%s*)buffers[%d];\n", c, t, in ? "restrict " : d->restrict_kw, name, c,
                       t, nb++);
    } else {
      xc_cstyle_printf(w, "  const int64_t %s = scalars[%d];\n", name, ns++);
    }
  }
  return nb;
}

/* Writes text line by line, each line after `indent`. */
static void write_indented(xc_cstyle_writer_t* w, const char* indent, const char* s) {
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    xc_cstyle_printf(w, "%s%.*s\n", indent, len, s);
    s += len + (nl ? 1 : 0);
  }
}

/* The pack entry (packed dot operands, docs/targets.md): same arguments as
 * the kernel, pack programs [program_begin, program_end) of
 * <entry>_pack_programs, each filling its part of the buffer of
 * <entry>_pack_bytes bytes that the runtime passes, after the kernel's
 * buffers, to this entry and then to the kernel. */
static void write_pack_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  xc_cstyle_printf(w,
                   "extern const int64_t %s_pack_programs, %s_pack_bytes;\n"
                   "const int64_t %s_pack_programs = %" PRId64 ", %s_pack_bytes = %" PRId64 ";\n",
                   e->entry, e->entry, e->entry, e->pack_programs, e->entry, e->pack_bytes);
  xc_cstyle_printf(w,
                   "void %s_pack(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end);\n"
                   "void %s_pack(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end) {\n",
                   e->entry, e->entry);
  int nb = write_params(w, d, e->kernel);
  xc_cstyle_printf(w,
                   "  char* xc_pack = (char*)buffers[%d];\n"
                   "  (void)scalars, (void)grid;\n"
                   "  for (int64_t p = program_begin; p < program_end; p++) {\n",
                   nb);
  write_indented(w, "  ", e->pack_body);
  xc_cstyle_printf(w, "  }\n}\n");
}

static void c_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  const xc_tiled_kernel_t* k = e->kernel;
  if (e->pack_body) write_pack_entry(w, d, e);
  xc_cstyle_printf(w, "extern const int %s_runtime_threads;\nconst int %s_runtime_threads = 1;\n", e->entry, e->entry);
  xc_cstyle_printf(w,
                   "void %s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end);\n"
                   "void %s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end) {\n",
                   e->entry, e->entry);
  int nb = write_params(w, d, k);
  if (e->pack_body) xc_cstyle_printf(w, "  const char* restrict xc_pack = (const char*)buffers[%d];\n", nb);
  /* The runtime spreads the programs over its threads (the cpu target's
   * pool, targets/cpu/cpu_pool.c) and calls this with a range to run on the
   * calling thread; the marker tells it the kernel expects that (kernels
   * without it open their own OpenMP loop and are called once). */
  xc_cstyle_printf(w,
                   "  (void)scalars;\n"
                   "  for (int64_t p = program_begin; p < program_end; p++) {\n"
                   "    const int64_t pid0 = p %% grid[0], pid1 = (p / grid[0]) %% grid[1];\n"
                   "    const int64_t pid2 = p / (grid[0] * grid[1]);\n"
                   "    (void)pid0, (void)pid1, (void)pid2;\n");
  /* declarations are one per line; the body is indented for depth 1,
   * programs are at depth 2 */
  write_indented(w, "    ", e->decls);
  write_indented(w, "  ", e->body);
  xc_cstyle_printf(w, "  }\n}\n");
}

const xc_cstyle_dialect_t xc_cstyle_dialect_c = {
    .name = "c",
    .work_groups = false,
    .value_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "float", [XC_BF16] = "float",
                   [XC_I8] = "int8_t", [XC_I16] = "int16_t", [XC_I32] = "int32_t", [XC_I64] = "int64_t",
                   [XC_U8] = "uint8_t", [XC_U16] = "uint16_t", [XC_U32] = "uint32_t", [XC_U64] = "uint64_t",
                   /* masks as 32-bit values, not uint8_t: GCC 12 does not vectorize
                    * a masked load of floats under a uint8_t mask ("no vectype for
                    * .MASK_LOAD"), and builds an AVX-512 mask from a row's _Bool
                    * byte with ~30 instructions; from an int32_t it is one compare.
                    * Buffers keep uint8_t storage. */
                   [XC_BOOL] = "int32_t"},
    .storage_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "uint16_t", [XC_BF16] = "uint16_t",
                     [XC_I8] = "int8_t", [XC_I16] = "int16_t", [XC_I32] = "int32_t", [XC_I64] = "int64_t",
                     [XC_U8] = "uint8_t", [XC_U16] = "uint16_t", [XC_U32] = "uint32_t", [XC_U64] = "uint64_t",
                     [XC_BOOL] = "uint8_t"},
    .global_qual = "",
    .local_qual = "",
    .private_qual = "",
    .restrict_kw = "",
    .program_id = {"pid0", "pid1", "pid2"},
    .num_programs = {"grid[0]", "grid[1]", "grid[2]"},
    .thread_id = "0",
    .barrier = "",
    .global_barrier = "",
    .f32_suffix = "f",
    .f64_suffix = "",
    .has_rsqrt = false,
    .simd_pragma = "#pragma omp simd",
    .unroll_pragma = NULL,
    .vector_math = true,
    .transpose8 = "xc_tr8",
    /* GCC's regional register allocation (IRA's default, per loop) spilled
     * a blocked dot's b vectors to the stack in some kernels, reading them
     * back as memory operands of every FMA (a 24-row projection GEMM 5.1 ->
     * 6.8 us where 32 rows had none): one region for the function keeps
     * them in registers (3.6 us; distilbert-tiny 0.172 -> 0.152 ms; register
     * allocation only, values unchanged). GCC only: clang rejects the
     * option and allocates differently. */
    .prelude = "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC optimize(\"ira-region=one\")\n#endif\n"
               "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
               "typedef uint16_t xc_u16;\ntypedef uint32_t xc_u32;\n"
               /* XC_MAX / XC_MIN as the shared prelude defines them (NaN of either
                * operand propagates, ties give b), the ordered comparison first:
                * GCC 12 makes it a max/min and two blends where the shared order
                * takes seven blends (a ReLU6 Clip: 9 -> 4 vector instructions per
                * bound; the stem's depthwise convolution 47 -> 42 us) */
               "#define XC_MAX(a, b) ((a) > (b) ? (a) : (b) >= (a) ? (b) : (a) + (b))\n"
               "#define XC_MIN(a, b) ((a) < (b) ? (a) : (b) <= (a) ? (b) : (a) + (b))\n"
               "static inline xc_u32 xc_fbits(float f) { xc_u32 u; memcpy(&u, &f, 4); return u; }\n"
               /* xc_tr8: an 8x8 f32 block transposed in three rounds of
                * two-vector shuffles (pairs of lanes, pairs of pairs, halves:
                * the unpack / shuffle / permute of an 8x8 transpose), eight
                * loads and eight stores of 8 lanes; a transposed tile's store
                * had read it element by element (segformer-tiny's [256, 16]
                * channels-last transposes: 27.5 -> 9.5 us). Element loops
                * where the compiler has no two-vector shuffle (GCC < 12). */
               "#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)\n"
               "typedef float xc_v8f __attribute__((vector_size(32)));\n"
               "#define XC_SH(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n"
               "static inline void xc_tr8(const float* s, int64_t ss, float* d, int64_t ds) {\n"
               "  xc_v8f r[8], t[8], u[8];\n"
               "  for (int i = 0; i < 8; i++) memcpy(&r[i], s + i * ss, 32);\n"
               "  for (int i = 0; i < 8; i += 2) {\n"
               "    t[i] = XC_SH(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);\n"
               "    t[i + 1] = XC_SH(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);\n"
               "  }\n"
               "  for (int i = 0; i < 8; i += 4)\n"
               "    for (int j = 0; j < 2; j++) {\n"
               "      u[i + 2 * j] = XC_SH(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);\n"
               "      u[i + 2 * j + 1] = XC_SH(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);\n"
               "    }\n"
               "  for (int i = 0; i < 4; i++) {\n"
               "    xc_v8f lo = XC_SH(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);\n"
               "    xc_v8f hi = XC_SH(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);\n"
               "    memcpy(d + i * ds, &lo, 32);\n"
               "    memcpy(d + (i + 4) * ds, &hi, 32);\n"
               "  }\n"
               "}\n"
               "#else\n"
               "static inline void xc_tr8(const float* s, int64_t ss, float* d, int64_t ds) {\n"
               "  for (int i = 0; i < 8; i++)\n"
               "    for (int j = 0; j < 8; j++) d[i * ds + j] = s[j * ss + i];\n"
               "}\n"
               "#endif\n"
               "static inline float xc_bitsf(xc_u32 u) { float f; memcpy(&f, &u, 4); return f; }\n"
               /* exp: round x*log2(e) to n with the 1.5*2^23 trick, e^r on
                * [-ln2/2, ln2/2] by its degree-6 Taylor polynomial, times 2^n
                * as two normal powers of two (so subnormal results and
                * overflow to inf round once, in the last multiply) */
               "static inline float xc_vexpf(float x) {\n"
               "  float c = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;\n"
               "  float n = (c * 1.44269504f + 12582912.0f) - 12582912.0f;\n"
               "  float r = (c - n * 0.693145752f) - n * 1.42860677e-06f;\n"
               "  float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666679f\n"
               "            + r * (0.00833333377f + r * 0.00138888892f)))));\n"
               "  int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;\n"
               "  float y = p * xc_bitsf((xc_u32)(n1 + 127) << 23) * xc_bitsf((xc_u32)(n2 + 127) << 23);\n"
               "  return x != x ? x : y;\n"
               "}\n"
               /* erf: the Taylor series of erf(x)/x below |x| = 0.75 (8 terms), above
                * it 1 - q with q a degree-14 polynomial fit of erfc on [0.75, 3.95]
                * (Chebyshev interpolation, in u = (|x| - 2.35) / 1.6), exactly 1
                * beyond (1 - q(3.95) rounds to 1, so l needs no test of |x| > 3.95:
                * one made a boolean select that GCC 12 does not vectorize); no
                * division, no exp; 2.7e-7 relative error at most */
               "static inline float xc_verff(float x) {\n"
               "  float z = fabsf(x), z2 = x * x;\n"
               "  float s = x * (1.12837923f + z2 * (-0.376126379f + z2 * (0.112837918f + z2 * (-0.0268661715f\n"
               "            + z2 * (0.00522397785f + z2 * (-0.000854832702f + z2 * (0.000120553326f\n"
               "            + z2 * -1.49256502e-05f)))))));\n"
               "  float u = ((z > 3.95f ? 3.95f : z) - 2.35f) * 0.625f;\n"
               "  float q = 0.00088926137f + u * (-0.00721389707f + u * (0.0271258354f + u * (-0.0618465804f\n"
               "            + u * (0.093092896f + u * (-0.0924392119f + u * (0.0525435694f + u * (-0.000451645465f\n"
               "            + u * (-0.0292935409f + u * (0.0255432334f + u * (-0.00404053926f + u * (-0.0090289386f\n"
               "            + u * (0.00512681389f + u * (0.00101485604f + u * -0.00102210743f)))))))))))));\n"
               "  float l = q < 0.0f ? 1.0f : 1.0f - q;\n"
               "  return z < 0.75f ? s : (x < 0.0f ? -l : l);\n"
               "}\n"
               /* tanh: Taylor series below 0.25, 1 - 2 / (e^2|x| + 1) above */
               "static inline float xc_vtanhf(float x) {\n"
               "  float z = fabsf(x), z2 = x * x;\n"
               "  float s = x * (1.0f + z2 * (-0.333333343f + z2 * (0.13333334f + z2 * (-0.0539682545f\n"
               "            + z2 * (0.0218694885f + z2 * -0.00886323582f)))));\n"
               "  float zc = z > 20.0f ? 20.0f : z, l = 1.0f - 2.0f / (xc_vexpf(2.0f * zc) + 1.0f);\n"
               "  return z < 0.25f ? s : (x < 0.0f ? -l : l);\n"
               "}\n",
    .f64_prelude = NULL,
    .write_entry = c_write_entry,
};
