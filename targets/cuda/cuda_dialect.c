/* The CUDA dialect of the C-family emitter (docs/emitter.md): CUDA C++ for
 * NVRTC. A program is one thread block of `threads` threads
 * (__launch_bounds__), tiles are __shared__ arrays or distributed over
 * per-thread arrays, and the barrier is __syncthreads(). No header is
 * included (NVRTC has none by default): fixed-width types are spelled out,
 * f16/bf16 are stored as unsigned short and converted by the shared exact
 * helpers, and the source is compiled with -default-device so the prelude's
 * helper functions are device functions. */
#include <string.h>

#include "cuda_target.h"

static void cuda_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
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

const xc_cstyle_dialect_t xc_cstyle_dialect_cuda = {
    .name = "cuda",
    .work_groups = true,
    .value_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "float", [XC_BF16] = "float",
                   [XC_I8] = "signed char", [XC_I16] = "short", [XC_I32] = "int", [XC_I64] = "long long",
                   [XC_U8] = "unsigned char", [XC_U16] = "unsigned short", [XC_U32] = "unsigned int",
                   [XC_U64] = "unsigned long long", [XC_BOOL] = "unsigned char"},
    .storage_type = {[XC_F32] = "float", [XC_F64] = "double", [XC_F16] = "unsigned short",
                     [XC_BF16] = "unsigned short", [XC_I8] = "signed char", [XC_I16] = "short", [XC_I32] = "int",
                     [XC_I64] = "long long", [XC_U8] = "unsigned char", [XC_U16] = "unsigned short",
                     [XC_U32] = "unsigned int", [XC_U64] = "unsigned long long", [XC_BOOL] = "unsigned char"},
    .global_qual = "",
    .local_qual = "__shared__ ",
    .private_qual = "",
    /* No restrict: lowered modules may bind a view and its source to two
     * parameters, so buffers can alias. */
    .restrict_kw = "",
    .program_id = {"(long long)blockIdx.x", "(long long)blockIdx.y", "(long long)blockIdx.z"},
    .num_programs = {"(long long)gridDim.x", "(long long)gridDim.y", "(long long)gridDim.z"},
    .thread_id = "threadIdx.x",
    .barrier = "__syncthreads();",
    .f32_suffix = "f",
    .f64_suffix = "",
    /* rsqrtf is approximate (2 ulp); 1/sqrtf is correctly rounded with NVRTC's defaults */
    .has_rsqrt = false,
    .simd_pragma = NULL,
    .unroll_pragma = "#pragma unroll",
    .prelude = "typedef unsigned short xc_u16;\ntypedef unsigned int xc_u32;\n"
               "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
               "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
               "static inline xc_u32 xc_fbits(float f) { return __float_as_uint(f); }\n"
               "static inline float xc_bitsf(xc_u32 u) { return __uint_as_float(u); }\n",
    .f64_prelude = NULL,
    .write_entry = cuda_write_entry,
};
