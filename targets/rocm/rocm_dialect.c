/* The HIP dialect of the C-family emitter (docs/emitter.md,
 * docs/targets/rocm.md): HIP C++ for hiprtc or hipcc on AMD GPUs, and the
 * same text for NVRTC on NVIDIA GPUs (the rocm_nv target). A program is one
 * thread block of `threads` threads (__launch_bounds__), tiles are
 * __shared__ arrays (LDS) or distributed over per-thread arrays, and the
 * barrier is __syncthreads(). Only the part of the HIP kernel language that
 * HIP and CUDA spell alike is used, so the text is one source for both
 * platforms; AMD-only code (matrix instructions) sits under __AMDGCN__.
 *
 * Headers: hiprtc has the HIP runtime header built in (__HIPCC_RTC__),
 * hipcc needs <hip/hip_runtime.h>, and NVRTC (__CUDACC_RTC__) has CUDA's
 * built-ins, which are the HIP spellings used here. The prelude's helper
 * functions carry no __device__: on clang (hiprtc, hipcc) the
 * force_cuda_host_device pragma makes them host+device, on NVRTC
 * -default-device does. */
#include <string.h>

#include "rocm_target.h"

static void hip_write_entry(xc_cstyle_writer_t* w, const xc_cstyle_dialect_t* d, const xc_cstyle_entry_t* e) {
  const xc_tiled_kernel_t* k = e->kernel;
  xc_cstyle_printf(w,
                   "#if defined(__clang__) && defined(__HIP__)\n#pragma clang force_cuda_host_device end\n#endif\n"
                   "extern \"C\" __global__ void __launch_bounds__(%lld)\n%s(",
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

const xc_cstyle_dialect_t xc_cstyle_dialect_hip = {
    .name = "hip",
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
    /* rsqrtf is approximate on both platforms; 1/sqrtf is correctly rounded
     * with the compilers' defaults. */
    .has_rsqrt = false,
    .simd_pragma = NULL,
    .unroll_pragma = "#pragma unroll",
    .prelude = "#if defined(__HIPCC_RTC__) || defined(__CUDACC_RTC__)\n"
               "/* hiprtc and NVRTC: the kernel language is built in */\n"
               "#else\n#include <hip/hip_runtime.h>\n#endif\n"
               "#if defined(__clang__) && defined(__HIP__)\n#pragma clang force_cuda_host_device begin\n#endif\n"
               "typedef unsigned short xc_u16;\ntypedef unsigned int xc_u32;\n"
               "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
               "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
               "static inline xc_u32 xc_fbits(float f) { return __float_as_uint(f); }\n"
               "static inline float xc_bitsf(xc_u32 u) { return __uint_as_float(u); }\n",
    .f64_prelude = NULL,
    .write_entry = hip_write_entry,
};
