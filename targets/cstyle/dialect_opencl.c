/* The OpenCL C 1.2 dialect of the C-family emitter: one work-group per
 * program, `threads` work-items per group (reqd_work_group_size), tiles in
 * __local memory or distributed over private arrays (docs/emitter.md).
 * Only core OpenCL C 1.2 is used (f16/bf16 are converted by helpers, no
 * cl_khr_fp16), so the source builds on every vendor's driver. */
#include <string.h>

#include "cstyle.h"

static void cl_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  const xc_tiled_kernel_t* k = e->kernel;
  xc_cstyle_printf(w, "__kernel __attribute__((reqd_work_group_size(%lld, 1, 1)))\nvoid %s(",
                   (long long)e->threads, e->entry);
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
        xc_cstyle_printf(w, "const long %s", name);
    }
  if (first) xc_cstyle_printf(w, "void");
  /* Not `% threads` as in CUDA and HIP: with it PoCL 3.1 (LLVM 15) computed
   * wrong results for one op-suite kernel (AveragePool f32 [2,2,3,5], 16
   * unrolled slots; right at -cl-opt-disable, with 256 threads, or without
   * the modulo), seen 2026-12-02 and not explained. */
  xc_cstyle_printf(w, ") {\n  const long lid = (long)%s;\n", d->thread_id);
  const char* s = e->decls;
  while (*s) {
    const char* nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    xc_cstyle_printf(w, "  %.*s\n", len, s);
    s += len + (nl ? 1 : 0);
  }
  xc_cstyle_printf(w, "%s}\n", e->body);
}

const xc_cstyle_dialect_t xc_cstyle_dialect_opencl = {
    .name = "opencl-c",
    .work_groups = true,
    .value_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "float", [XC_BF16] = "float",
                   [XC_I8] = "char", [XC_I16] = "short", [XC_I32] = "int", [XC_I64] = "long",
                   [XC_U8] = "uchar", [XC_U16] = "ushort", [XC_U32] = "uint", [XC_U64] = "ulong",
                   [XC_BOOL] = "uchar"},
    .storage_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "ushort", [XC_BF16] = "ushort",
                     [XC_I8] = "char", [XC_I16] = "short", [XC_I32] = "int", [XC_I64] = "long",
                     [XC_U8] = "uchar", [XC_U16] = "ushort", [XC_U32] = "uint", [XC_U64] = "ulong",
                     [XC_BOOL] = "uchar"},
    .global_qual = "__global ",
    .local_qual = "__local ",
    .local_ptr_qual = "__local ",
    .float_vectors = true,
    .align16 = "__attribute__((aligned(16))) ",
    .private_qual = "",
    .restrict_kw = "",
    .program_id = {"(long)get_group_id(0)", "(long)get_group_id(1)", "(long)get_group_id(2)"},
    .num_programs = {"(long)get_num_groups(0)", "(long)get_num_groups(1)", "(long)get_num_groups(2)"},
    .thread_id = "get_local_id(0)",
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
    .global_barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    .f32_suffix = "",
    .f64_suffix = "",
    .has_rsqrt = true,
    .simd_pragma = NULL,
    .unroll_pragma = "#pragma unroll",
    .prelude = "typedef ushort xc_u16;\ntypedef uint xc_u32;\n"
               "static inline xc_u32 xc_fbits(float f) { return as_uint(f); }\n"
               "static inline float xc_bitsf(xc_u32 u) { return as_float(u); }\n",
    .f64_prelude = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    .write_entry = cl_write_entry,
    .vec_chunks = true,
};
