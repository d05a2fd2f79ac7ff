/* The C dialect of the C-family emitter: kernels for the cpu target, with
 * the C ABI of docs/targets.md. A program is one OpenMP iteration; tiles are
 * stack arrays and tile ops loops with `#pragma omp simd`. */
#include <inttypes.h>
#include <string.h>

#include "cstyle.h"

static void c_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  const xc_tiled_kernel_t* k = e->kernel;
  xc_cstyle_printf(w,
                   "void %s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end);\n"
                   "void %s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
                   "        int64_t program_begin, int64_t program_end) {\n",
                   e->entry, e->entry);
  int nb = 0, ns = 0;
  char name[80];
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    xc_cstyle_param_name(p, name, sizeof name);
    if (p->type.kind == XC_TILED_MEMREF) {
      const char* c = p->type.role == XC_ROLE_IN ? "const " : "";
      const char* t = d->storage_type[p->type.dtype];
      xc_cstyle_printf(w, "  %s%s* %s%s = (%s%s*)buffers[%d];\n", c, t, d->restrict_kw, name, c, t, nb++);
    } else {
      xc_cstyle_printf(w, "  const int64_t %s = scalars[%d];\n", name, ns++);
    }
  }
  xc_cstyle_printf(w,
                   "  (void)scalars;\n"
                   "  #pragma omp parallel for schedule(dynamic, 1)\n"
                   "  for (int64_t p = program_begin; p < program_end; p++) {\n"
                   "    const int64_t pid0 = p %% grid[0], pid1 = (p / grid[0]) %% grid[1];\n"
                   "    const int64_t pid2 = p / (grid[0] * grid[1]);\n"
                   "    (void)pid0, (void)pid1, (void)pid2;\n");
  /* declarations are one per line: indent them */
  const char* s = e->decls;
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    xc_cstyle_printf(w, "    %.*s\n", len, s);
    s += len + (nl ? 1 : 0);
  }
  /* the body is indented for depth 1; programs are at depth 2 */
  s = e->body;
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    xc_cstyle_printf(w, "  %.*s\n", len, s);
    s += len + (nl ? 1 : 0);
  }
  xc_cstyle_printf(w, "  }\n}\n");
}

const xc_cstyle_dialect_t xc_cstyle_dialect_c = {
    .name = "c",
    .work_groups = false,
    .value_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "float", [XC_BF16] = "float",
                   [XC_I8] = "int8_t", [XC_I16] = "int16_t", [XC_I32] = "int32_t", [XC_I64] = "int64_t",
                   [XC_U8] = "uint8_t", [XC_U16] = "uint16_t", [XC_U32] = "uint32_t", [XC_U64] = "uint64_t",
                   [XC_BOOL] = "uint8_t"},
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
    .prelude = "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
               "typedef uint16_t xc_u16;\ntypedef uint32_t xc_u32;\n"
               "static inline xc_u32 xc_fbits(float f) { xc_u32 u; memcpy(&u, &f, 4); return u; }\n"
               "static inline float xc_bitsf(xc_u32 u) { float f; memcpy(&f, &u, 4); return f; }\n",
    .f64_prelude = NULL,
    .write_entry = c_write_entry,
};
