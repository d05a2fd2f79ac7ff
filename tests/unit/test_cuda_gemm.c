/* The cuda target's sm_90 GEMM program for the tiled IR's gemm pattern
 * (targets/cuda/cuda_gemm.c, docs/targets/cuda.md, "GEMM on sm_90").
 * Graphs with MatMul and Gemm go through the whole pipeline.
 *
 * Without a GPU (SKIP without NVRTC): the lowering's pattern names the
 * operands' buffers and strides exactly (row-major B, B stored [n, k] by
 * Gemm's transB, a batch, B broadcast over the batch); it is absent where
 * the program does not apply (f32, an epilogue) and the program refuses
 * what it cannot read (A stored [k, m], rows not 16-byte aligned) or fills
 * badly (fewer 128 x 256 tiles than SMs); the
 * cuda scheduler gives pattern kernels the program's record (384 threads,
 * wgmma m64n256k16, four stages in dynamic shared memory) and the emitter
 * the program, compiled for sm_90a (PTX with wgmma.mma_async of the input
 * type, mbarriers, cp.async); sm_80 and kernels whose tile knobs are forced
 * get the C-family emission. With an sm_90 GPU: every case against the
 * reference interpreter at the dtype tolerance of ARCHITECTURE.md (f16
 * rel-L2 <= 2e-3, bf16 1.6e-2), with the vendor-library race off, including
 * ragged M, N and K. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "device_run.h"
#include "xcomp/lower.h"

#include "../../targets/cuda/cuda_gemm.h"
#include "../../targets/cuda/cuda_target.h"

typedef struct gcase {
  const char* name;
  const char* text;    /* the graph */
  const char* pattern; /* the expected pattern (a substring), NULL: none */
  bool taken;          /* the sm_90 program takes it */
} gcase_t;

#define MM(dt, a, b) \
  "xir 1\ngraph g opset 18 {\n  input a: " dt "[" a "]\n  input b: " dt "[" b "]\n  y = MatMul(a, b)\n  output y\n}\n"
#define GEMM(dt, a, b, attrs)                                                                        \
  "xir 1\ngraph g opset 18 {\n  input a: " dt "[" a "]\n  input b: " dt "[" b "]\n  y = Gemm(a, b) {" attrs \
  "}\n  output y\n}\n"

/* z = silu(g) h with (g, h) = (y, u) or (u, y), y = the product */
#define SWIGLU(dt, a, b, u, prod, g, h)                                                                      \
  "xir 1\ngraph g opset 18 {\n  input a: " dt "[" a "]\n  input b: " dt "[" b "]\n  input u: " dt "[" u \
  "]\n  y = " prod "\n  s = Sigmoid(" g ")\n  t = Mul(" g ", s)\n  z = Mul(t, " h ")\n  output z\n}\n"

/* The program takes products of at least one 128 x 256 tile per SM (132
 * on sm_90 without a device, and on the H200). */
static const gcase_t cases[] = {
    {"bf16 1536x2816x128", MM("bf16", "1536, 128", "128, 2816"),
     "gemm dtype=bf16 batch=1 m=1536 n=2816 k=128 a=0,0,0,128,1 b=1,0,0,2816,1 y=2,0,0,2816,1", true},
    {"bf16 ragged 1500x2800x136", MM("bf16", "1500, 136", "136, 2800"), "m=1500 n=2800 k=136", true},
    {"f16 B stored [n, k] 1300x2900x192", GEMM("f16", "1300, 192", "2900, 192", "transB: 1"),
     "gemm dtype=f16 batch=1 m=1300 n=2900 k=192 a=0,0,0,192,1 b=1,0,0,1,192 y=2,0,0,2900,1", true},
    {"bf16 batch 66 130x256x64", MM("bf16", "66, 130, 64", "66, 64, 256"),
     "batch=66 m=130 n=256 k=64 a=0,0,8320,64,1 b=1,0,16384,256,1 y=2,0,33280,256,1", true},
    {"f16 B broadcast 12x256x2816x64", MM("f16", "12, 256, 64", "64, 2816"),
     "batch=12 m=256 n=2816 k=64 a=0,0,16384,64,1 b=1,0,0,2816,1", true},
    {"bf16 ragged K 1536x2816x200", MM("bf16", "1536, 200", "200, 2816"), "k=200", true},
    /* 13 x 12 tiles: persistent programs take two tiles each */
    {"f16 ragged 1600x3000x136", MM("f16", "1600, 136", "136, 3000"), "m=1600 n=3000 k=136", true},
    /* an odd N (a vocabulary): rows of Y stored by element */
    {"bf16 odd N, B stored [n, k] 1536x2815x128", GEMM("bf16", "1536, 128", "2815, 128", "transB: 1"),
     "n=2815 k=128 a=0,0,0,128,1 b=1,0,0,1,128 y=2,0,0,2815,1", true},
    /* a SwiGLU epilogue with another tensor (an MLP's gate and up
     * projections): silu(A B) U, then silu(U) A B with B stored [n, k] and an
     * odd N (U read by element) */
    {"bf16 SwiGLU(AB, U) 1600x3000x136", SWIGLU("bf16", "1600, 136", "136, 3000", "1600, 3000", "MatMul(a, b)", "y", "u"),
     "m=1600 n=3000 k=136 a=0,0,0,136,1 b=1,0,0,3000,1 y=3,0,0,3000,1 epi=swiglu_a u=2,0,0,3000,1", true},
    {"f16 SwiGLU(U, AB) 1536x2815x128",
     SWIGLU("f16", "1536, 128", "2815, 128", "1536, 2815", "Gemm(a, b) {transB: 1}", "u", "y"),
     "n=2815 k=128 a=0,0,0,128,1 b=1,0,0,1,128 y=3,0,0,2815,1 epi=swiglu_b u=2,0,0,2815,1", true},
    /* with an epilogue, fewer tiles than SMs (a short sequence's MLP) */
    {"bf16 SwiGLU(AB, U) 512x2048x768", SWIGLU("bf16", "512, 768", "768, 2048", "512, 2048", "MatMul(a, b)", "y", "u"),
     "m=512 n=2048 k=768 a=0,0,0,768,1 b=1,0,0,2048,1 y=3,0,0,2048,1 epi=swiglu_a u=2,0,0,2048,1", true},
    /* patterns the program refuses: fewer tiles than SMs; A stored [k, m];
     * rows of 250 elements */
    {"bf16 256x512x256", MM("bf16", "256, 256", "256, 512"), "m=256 n=512 k=256", false},
    {"bf16 A stored [k, m]", GEMM("bf16", "128, 256", "128, 256", "transA: 1"), "a=0,0,0,1,256", false},
    {"bf16 N 250", MM("bf16", "256, 128", "128, 250"), "n=250", false},
    /* no pattern: f32; an epilogue */
    {"f32", MM("f32", "256, 128", "128, 256"), NULL, false},
    {"bf16 + Relu",
     "xir 1\ngraph g opset 18 {\n  input a: bf16[256, 128]\n  input b: bf16[128, 256]\n  t = MatMul(a, b)\n"
     "  y = Relu(t)\n  output y\n}\n",
     NULL, false},
};

static xc_status_t compile(const gcase_t* c, const char* selector, const char* knobs, xc_compiled_module_t** out) {
  xc_graph_t* g = xc_test_parse(c->text);
  if (!g) return xc_error(XC_INTERNAL, "parse failed");
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = selector;
  o.use_cache = false;
  o.knobs = knobs; /* as $XCOMP_KNOBS: kept by the scheduler */
  o.no_vendor_blas = true; /* with a GPU: keep the kernel, not a cuBLASLt blob */
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(&o, &session);
  if (!s) s = xc_session_compile_graph(session, g, out);
  xc_session_destroy(session);
  xc_graph_destroy(g);
  return s;
}

static const xc_cm_kernel_t* gemm_kernel(const xc_compiled_module_t* m) {
  for (int i = 0; i < m->num_kernels; i++)
    if (m->kernels[i].tiled && xc_tiled_dot_count(m->kernels[i].tiled) == 1) return &m->kernels[i];
  return NULL;
}

static bool ptx_has(const xc_cm_kernel_t* k, const char* what) {
  const char* ptx = NULL;
  return xc_cuda_blob_parts(&k->blob, NULL, NULL, NULL, &ptx, NULL) && ptx && strstr(ptx, what);
}

/* Compile-only checks (false: NVRTC or the target is missing). */
static bool check_compile(void) {
  xc_target_t* t = NULL;
  xc_device_caps_t caps;
  int index = -1;
  xc_status_t s = xc_cuda_select("cuda:sm_90", &t, &caps, &index);
  if (s) {
    printf("SKIP cuda:sm_90: %s\n", xc_status_message(s));
    xc_status_free(s);
    return false;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase_t* c = &cases[i];
    xc_compiled_module_t* m = NULL;
    s = compile(c, "cuda:sm_90", NULL, &m);
    if (s && strstr(xc_status_message(s), "NVRTC") && strstr(xc_status_message(s), "not found")) {
      printf("SKIP compile (%s)\n", xc_status_message(s));
      xc_status_free(s);
      return false;
    }
    CHECK_OK(s);
    const xc_cm_kernel_t* k = m ? gemm_kernel(m) : NULL;
    CHECK(k != NULL);
    if (!k) {
      xc_compiled_module_destroy(m);
      continue;
    }
    const char* pat = k->tiled->pattern;
    printf("%s: %s\n", c->name, pat ? pat : "(no pattern)");
    CHECK(c->pattern ? pat && strstr(pat, c->pattern) : pat == NULL);
    xc_cuda_gemm_t g;
    char why[128] = "";
    bool taken = xc_cuda_gemm_take(&caps, k->tiled, &g, why, sizeof why);
    CHECK(taken == c->taken);
    const xc_tiled_schedule_t* sc = k->tiled->schedule;
    bool program = sc && sc->threads == 384 && sc->num_dots == 1 && sc->dots[0].mma.m == 64 &&
                   sc->dots[0].mma.n == 256 && sc->dots[0].stages == 4 && sc->dots[0].operands == XC_SPACE_DYNAMIC;
    CHECK(program == c->taken);
    bool wgmma = ptx_has(k, "wgmma.mma_async.sync.aligned.m64n256k16.f32");
    CHECK(wgmma == c->taken);
    if (taken) CHECK(g.y_pairs == ((g.y.si & 1) == 0)); /* 2-byte stores of odd rows */
    if (taken) CHECK(g.staged);                           /* through shared memory */
    if (taken) {
      CHECK(sc && sc->dynamic_bytes == g.smem);
      bool bf = strstr(pat, "dtype=bf16") != NULL;
      CHECK(ptx_has(k, bf ? "m64n256k16.f32.bf16.bf16" : "m64n256k16.f32.f16.f16"));
      CHECK(ptx_has(k, ".target sm_90a") && ptx_has(k, "mbarrier.try_wait.parity.shared::cta.b64") &&
            ptx_has(k, XC_CUDA_DSM_PREFIX));
      /* every case's operands suit TMA: tensor copies completing on the
       * barriers, the maps in the launch plan, no per-thread copies */
      CHECK(g.tma);
      CHECK(ptx_has(k, g.tma ? "cp.async.bulk.tensor" : "cp.async.cg.shared.global") &&
            ptx_has(k, g.tma ? "mbarrier.arrive.expect_tx" : "fence.proxy.async"));
      CHECK(ptx_has(k, XC_CUDA_LAUNCH_PREFIX) == g.tma && ptx_has(k, "cp.async.cg.shared.global") == !g.tma);
      /* persistent programs (a tile loop over gridDim.x, %nctaid.x) where
       * there are more tiles than the 132 SMs */
      bool more = (g.M + 127) / 128 * ((g.N + 255) / 256) * g.batch > 132;
      CHECK((g.programs == 132) == more && (g.programs == 0) == !more && ptx_has(k, "%nctaid.x") == more);
      /* a batch of A and B both strided over it: 3-D maps */
      CHECK(ptx_has(k, "cp.async.bulk.tensor.3d") == (g.batch > 1 && (g.a.sb != 0 || g.b.sb != 0)));
      CHECK(ptx_has(k, "cp.async.bulk.tensor.2d") == (g.batch == 1 || g.a.sb == 0 || g.b.sb == 0));
      /* the other forms, as $XCOMP_SM90_GEMM asks */
      const char* forms[2] = {"cp.async", "tma"};
      for (int f = 0; f < 2; f++) {
        setenv("XCOMP_SM90_GEMM", forms[f], 1);
        xc_compiled_module_t* mf = NULL;
        CHECK_OK(compile(c, "cuda:sm_90", NULL, &mf));
        const xc_cm_kernel_t* kf = mf ? gemm_kernel(mf) : NULL;
        CHECK(kf && ptx_has(kf, "wgmma.mma_async"));
        if (kf && f == 0) CHECK(ptx_has(kf, "cp.async.cg.shared.global") && !ptx_has(kf, "cp.async.bulk.tensor"));
        /* one program per tile: no tile loop over gridDim.x (%nctaid.x) */
        if (kf && f == 1) CHECK(ptx_has(kf, "cp.async.bulk.tensor") && !ptx_has(kf, "%nctaid.x"));
        xc_compiled_module_destroy(mf);
        unsetenv("XCOMP_SM90_GEMM");
      }
      /* forced 64 x 64 tiles: the C-family emission of the body */
      xc_compiled_module_t* m2 = NULL;
      CHECK_OK(compile(c, "cuda:sm_90", "BLOCK_M_p0=64,BLOCK_N_p0=64", &m2));
      const xc_cm_kernel_t* k2 = m2 ? gemm_kernel(m2) : NULL;
      CHECK(k2 && k2->tiled->pattern && !ptx_has(k2, "wgmma") && ptx_has(k2, "mma.sync.aligned.m16n8k16"));
      xc_compiled_module_destroy(m2);
      /* sm_80: no wgmma */
      CHECK_OK(compile(c, "cuda:sm_80", NULL, &m2));
      k2 = m2 ? gemm_kernel(m2) : NULL;
      CHECK(k2 && !ptx_has(k2, "wgmma") && !ptx_has(k2, "sm_90a"));
      xc_compiled_module_destroy(m2);
    } else if (pat) {
      printf("  not taken: %s\n", why);
    }
    xc_compiled_module_destroy(m);
  }
  return true;
}

static void check_device(void) {
  xc_target_t* t = NULL;
  int index = 0;
  xc_device_caps_t caps;
  xc_status_t s = xc_target_find("cuda", &t, &index);
  if (!s) s = xc_target_device_caps(t, index, &caps);
  if (s) {
    printf("SKIP device runs: %s\n", xc_status_message(s));
    xc_status_free(s);
    return;
  }
  printf("device: %s (%s)\n", caps.name, caps.vendor);
  if (xc_cuda_caps_arch(&caps) != 90) printf("note: not sm_90: the cases run the C-family emission\n");
  /* $XCOMP_TEST_CASES: run only the cases whose name holds it (a
   * compute-sanitizer run on a few cases) */
  const char* only = getenv("XCOMP_TEST_CASES");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase_t* c = &cases[i];
    if (only && *only && !strstr(c->name, only)) continue;
    /* each form of the program: the default (TMA, persistent where there
     * are more tiles than SMs, the epilogue through shared memory),
     * cp.async, TMA with a program per tile, the epilogue's stores from
     * registers */
    for (int f = 0; f < 4; f++) {
    static const char* const forms[4] = {NULL, "cp.async", "tma", "direct epilogue"};
    if (f == 1 || f == 2) setenv("XCOMP_SM90_GEMM", forms[f], 1);
    if (f == 3) setenv("XCOMP_SM90_EPILOGUE", "direct", 1);
    xc_session_options_t o;
    xc_session_options_init(&o);
    o.target = "cuda";
    o.use_cache = false;
    o.no_vendor_blas = true; /* the generated kernel, not cuBLASLt */
    xc_compiled_module_t* m = NULL;
    xc_compare_result_t r;
    xc_test_device_run(c->text, &o, &m, &r);
    const xc_cm_kernel_t* k = m ? gemm_kernel(m) : NULL;
    bool prog = k && ptx_has(k, "wgmma.mma_async");
    printf("%s (%s, %s): rel-L2 %.3g, max-abs %.3g %s\n", c->name, prog ? "sm_90 GEMM program" : "generic",
           forms[f] ? forms[f] : "default", r.rel_l2, r.max_abs, r.ok ? "ok" : r.reason);
    CHECK(r.ok);
    if (xc_cuda_caps_arch(&caps) == 90) CHECK(prog == c->taken);
    xc_compiled_module_destroy(m);
    unsetenv("XCOMP_SM90_GEMM");
    unsetenv("XCOMP_SM90_EPILOGUE");
    if (!c->taken) break; /* one run of the body */
    }
  }
}

int main(void) {
  CHECK_OK(xc_targets_init());
  if (check_compile()) check_device();
  return xc_test_summary("test_cuda_gemm");
}
