/* Golden text of the emitter for one tiny kernel per dialect (the `scale`
 * example of docs/tiled-ir.md with BLOCK = 4): the header comment with knobs
 * and provenance, and the whole entry function. A change here is a change of
 * the generated code: review the new text, then update the expectation. */
#include "test.h"
#include "tiled_kernels.h"

#include "../../targets/cstyle/cstyle.h"

static const char* const expected_c =
    "void xk_scale(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
    "        int64_t program_begin, int64_t program_end);\n"
    "void xk_scale(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
    "        int64_t program_begin, int64_t program_end) {\n"
    "  const float* restrict p_x = (const float*)buffers[0];\n"
    "  float* p_y = (float*)buffers[1];\n"
    "  const int64_t p_n = scalars[0];\n"
    "  (void)scalars;\n"
    "  for (int64_t p = program_begin; p < program_end; p++) {\n"
    "    const int64_t pid0 = p % grid[0], pid1 = (p / grid[0]) % grid[1];\n"
    "    const int64_t pid2 = p / (grid[0] * grid[1]);\n"
    "    (void)pid0, (void)pid1, (void)pid2;\n"
    "    const int64_t v3 = 4; /* BLOCK */\n"
    "    const int64_t v4 = pid0;\n"
    "    const int64_t v5 = (int64_t)((v4) * (v3));\n"
    "    const float v10 = 2.0f;\n"
    "    #pragma omp simd\n"
    "    for (int64_t i0 = 0; i0 < 4; i0++) {\n"
    "      const int64_t f = i0;\n"
    "      const float v9 = ((int32_t)(((int64_t)((v5) + ((i0)))) < (p_n))) ? p_x[(int64_t)((v5) + ((i0)))] : (0.0f);\n"
    "      const float v11 = (float)((v9) * (v10));\n"
    "      if ((int32_t)(((int64_t)((v5) + ((i0)))) < (p_n))) p_y[(int64_t)((v5) + ((i0)))] = (float)(v11);\n"
    "    }\n"
    "  }\n"
    "}\n"
    ;

static const char* const expected_opencl =
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void xk_scale(__global const float* p_x,\n"
    "    __global float* p_y,\n"
    "    const long p_n) {\n"
    "  const long lid = (long)get_local_id(0);\n"
    "  float v9[1];\n"
    "  float v11[1];\n"
    "  const long v3 = 4; /* BLOCK */\n"
    "  const long v4 = (long)get_group_id(0);\n"
    "  const long v5 = (long)((v4) * (v3));\n"
    "  #pragma unroll\n"
    "  for (int j = 0; j < 1; j++) {\n"
    "    const long f = lid + (long)j * 64;\n"
    "    if (f < 4) {\n"
    "      const long i0 = f;\n"
    "      v9[j] = ((uchar)(((long)((v5) + ((i0)))) < (p_n))) ? p_x[(long)((v5) + ((i0)))] : (0.0f);\n"
    "    }\n"
    "  }\n"
    "  const float v10 = 2.0f;\n"
    "  #pragma unroll\n"
    "  for (int j = 0; j < 1; j++) {\n"
    "    const long f = lid + (long)j * 64;\n"
    "    if (f < 4) {\n"
    "      const long i0 = f;\n"
    "      v11[j] = (float)((v9[j]) * (v10));\n"
    "    }\n"
    "  }\n"
    "  #pragma unroll\n"
    "  for (int j = 0; j < 1; j++) {\n"
    "    const long f = lid + (long)j * 64;\n"
    "    if (f < 4) {\n"
    "      const long i0 = f;\n"
    "      if ((uchar)(((long)((v5) + ((i0)))) < (p_n))) p_y[(long)((v5) + ((i0)))] = (float)(v11[j]);\n"
    "    }\n"
    "  }\n"
    "}\n"
    ;

static void check_dialect(const xc_cstyle_dialect_t* d, const char* first_lines, const char* entry_start,
                          const char* expected) {
  kern_t* k = build_scale();
  CHECK(k != NULL);
  if (!k) return;
  const char* prov[2] = {"graph g: node y = Mul(x, two)", "pass fuse */ tricky"};
  xc_cstyle_options_t options = {.provenance = prov, .num_provenance = 2};
  xc_kernel_source_t src;
  CHECK_OK(xc_cstyle_emit(d, NULL, k, NULL, 0, &options, &src));
  if (src.text) {
    CHECK_STR(src.language, d->name);
    CHECK_STR(src.entry, "xk_scale");
    CHECK(strncmp(src.text, first_lines, strlen(first_lines)) == 0);
    if (strncmp(src.text, first_lines, strlen(first_lines)) != 0) fprintf(stderr, "header:\n%s\n", src.text);
    const char* entry = strstr(src.text, entry_start);
    CHECK(entry != NULL);
    if (entry) CHECK_STR(entry, expected);
  }
  xc_kernel_source_release(&src);
  /* knobs by name: BLOCK = 8 changes the tile loops */
  xc_knob_t knob = {"BLOCK", 8};
  CHECK_OK(xc_cstyle_emit(d, NULL, k, &knob, 1, NULL, &src));
  if (src.text) {
    CHECK(strstr(src.text, "BLOCK=8") != NULL);
    CHECK(strstr(src.text, "< 8;") != NULL || strstr(src.text, "< 8)") != NULL);
    CHECK(strstr(src.text, "from:") == NULL);
  }
  xc_kernel_source_release(&src);
  xc_tiled_kernel_destroy(k);
}

int main(void) {
  check_dialect(&xc_cstyle_dialect_c,
                "/* xcomp kernel scale: xk_scale, emitted for c\n * knobs: BLOCK=4\n"
                " * from: graph g: node y = Mul(x, two)\n * from: pass fuse +/ tricky\n */\n",
                "void xk_scale(", expected_c);
  check_dialect(&xc_cstyle_dialect_opencl,
                "/* xcomp kernel scale: xk_scale, emitted for opencl-c\n * knobs: BLOCK=4\n"
                " * work-items per program: 64\n * from: graph g: node y = Mul(x, two)\n"
                " * from: pass fuse +/ tricky\n */\n",
                "__kernel", expected_opencl);
  return xc_test_summary("test_emit_golden");
}
