/* The cuda target's FlashAttention program for the tiled IR's attention
 * pattern (targets/cuda/cuda_attention.c, docs/targets/cuda.md,
 * "Attention"). Graphs with ONNX Attention go through the whole pipeline.
 *
 * Without a GPU (SKIP without NVRTC): the lowering's pattern names the
 * operands' buffers and affine offsets exactly (plain 4-D, 3-D with grouped
 * heads, GPT-2's split/reshape/transpose views, the output through its
 * Transpose); it is absent where the program does not apply (a mask input,
 * f32, a head size that is not a multiple of 16); the cuda scheduler gives
 * pattern kernels the program's record and the emitter the program (PTX
 * with mma.sync of the input type, ldmatrix with and without .trans,
 * cp.async, the dynamic shared-memory size), and kernels whose tile knobs
 * are forced elsewhere the C-family emission. With a GPU: every case
 * against the reference interpreter at the dtype tolerance of
 * ARCHITECTURE.md (f16 rel-L2 <= 2e-3, bf16 1.6e-2), including ragged
 * query and key lengths, keys shorter than queries, causal tiles that cross
 * the diagonal and grouped-query heads; head sizes 64 to 128 in the sm_90
 * form (80, 96, 112 padded to 128-column rows). $XCOMP_ATTN_CASES runs only
 * the device cases whose name contains it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "device_run.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"

#include "../../targets/cuda/cuda_attention.h"
#include "../../targets/cuda/cuda_target.h"

typedef struct acase {
  const char* name;
  const char* text;    /* the graph */
  const char* pattern; /* the expected pattern, NULL: none */
} acase_t;

#define ATT(dt, q, kv, attrs)                                                                          \
  "xir 1\ngraph g opset 23 {\n  input q: " dt "[" q "]\n  input k: " dt "[" kv "]\n  input v: " dt "[" kv \
  "]\n  o = Attention(q, k, v) {" attrs "}\n  output o\n}\n"

static const acase_t cases[] = {
    {"bf16 causal S 200 D 64", ATT("bf16", "2, 4, 200, 64", "2, 4, 200, 64", "is_causal: 1"),
     "attention dtype=bf16 b=2 hq=4 hk=4 s=200 l=200 d=64 causal=1 scale=0.125 q=0,0,51200,12800,64 "
     "k=1,0,51200,12800,64 v=2,0,51200,12800,64 o=3,0,51200,12800,64"},
    {"bf16 full S 200 D 64", ATT("bf16", "2, 4, 200, 64", "2, 4, 200, 64", "is_causal: 0"), "causal=0"},
    {"f16 causal S 130 L 77 D 128", ATT("f16", "1, 4, 130, 128", "1, 4, 77, 128", "is_causal: 1"), "l=77 d=128"},
    {"bf16 full S 130 L 77 D 128", ATT("bf16", "1, 4, 130, 128", "1, 4, 77, 128", "is_causal: 0"), "s=130"},
    {"bf16 grouped heads 8/2", ATT("bf16", "1, 8, 100, 64", "1, 2, 100, 64", "is_causal: 1"), "hq=8 hk=2"},
    /* grids of >= 2 programs per SM: 32-row warps (BLOCK_M 128) */
    {"bf16 causal 4x32 heads S 300 D 128", ATT("bf16", "4, 32, 300, 128", "4, 32, 300, 128", "is_causal: 1"), "s=300"},
    {"f16 full 4x32 heads S 257 D 64", ATT("f16", "4, 32, 257, 64", "4, 32, 257, 64", "is_causal: 0"), "s=257"},
    {"bf16 D 80 S 37", ATT("bf16", "1, 3, 37, 80", "1, 3, 37, 80", "is_causal: 0"), "d=80"},
    {"f16 D 96 causal grouped heads 6/2 S 150", ATT("f16", "2, 6, 150, 96", "2, 2, 150, 96", "is_causal: 1"),
     "hq=6 hk=2 s=150 l=150 d=96"},
    {"bf16 D 112 S 200 L 130", ATT("bf16", "1, 4, 200, 112", "1, 4, 130, 112", "is_causal: 0"), "l=130 d=112"},
    {"f16 D 32 S 5", ATT("f16", "2, 2, 5, 32", "2, 2, 5, 32", "is_causal: 1"), "d=32"},
    {"bf16 scale, keys 300", ATT("bf16", "1, 2, 64, 64", "1, 2, 300, 64", "is_causal: 0, scale: 0.3"), "scale=0.29999"},
    {"bf16 3-D grouped heads",
     ATT("bf16", "2, 70, 256", "2, 70, 128", "is_causal: 1, q_num_heads: 4, kv_num_heads: 2"),
     "attention dtype=bf16 b=2 hq=4 hk=2 s=70 l=70 d=64 causal=1 scale=0.125 q=0,0,17920,64,256 "
     "k=1,0,8960,64,128 v=2,0,8960,64,128 o=3,0,17920,64,256"},
    {"bf16 GPT-2 views",
     "xir 1\ngraph g opset 23 {\n  input x: bf16[2, 200, 768]\n  const s4: i64[4] = [2, 200, 4, 64]\n"
     "  const s3: i64[3] = [2, 200, 256]\n  xq, xk, xv = Split(x) {axis: 2, num_outputs: 3}\n"
     "  q4 = Reshape(xq, s4)\n  k4 = Reshape(xk, s4)\n  v4 = Reshape(xv, s4)\n"
     "  q = Transpose(q4) {perm: [0, 2, 1, 3]}\n  k = Transpose(k4) {perm: [0, 2, 1, 3]}\n"
     "  v = Transpose(v4) {perm: [0, 2, 1, 3]}\n  o = Attention(q, k, v) {is_causal: 1}\n"
     "  ot = Transpose(o) {perm: [0, 2, 1, 3]}\n  y = Reshape(ot, s3)\n  output y\n}\n",
     "q=0,0,153600,64,768 k=0,256,153600,64,768 v=0,512,153600,64,768 o=1,0,51200,64,256"},
    /* not the program's: a mask input, f32, a head size not a multiple of 16 */
    {"bf16 additive mask",
     "xir 1\ngraph g opset 23 {\n  input q: bf16[1, 2, 40, 64]\n  input k: bf16[1, 2, 40, 64]\n"
     "  input v: bf16[1, 2, 40, 64]\n  input m: bf16[40, 40]\n  o = Attention(q, k, v, m)\n  output o\n}\n",
     NULL},
    {"f32", ATT("f32", "1, 2, 40, 64", "1, 2, 40, 64", "is_causal: 1"), NULL},
    {"bf16 D 24", ATT("bf16", "1, 2, 40, 24", "1, 2, 40, 24", "is_causal: 1"), NULL},
};

static xc_status_t compile(const acase_t* c, const char* selector, bool small, xc_compiled_module_t** out) {
  xc_graph_t* g = xc_test_parse(c->text);
  if (!g) return xc_error(XC_INTERNAL, "parse failed");
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = selector;
  o.use_cache = false;
  if (small) o.knobs = "BLOCK_M_p0=32,BLOCK_N_p0=32"; /* as $XCOMP_KNOBS: kept by the scheduler */
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(&o, &session);
  if (!s) s = xc_session_compile_graph(session, g, out);
  xc_session_destroy(session);
  xc_graph_destroy(g);
  return s;
}

/* The module's attention kernel (the one with the most dots). */
static const xc_cm_kernel_t* attention_kernel(const xc_compiled_module_t* m) {
  const xc_cm_kernel_t* best = NULL;
  for (int i = 0; i < m->num_kernels; i++)
    if (m->kernels[i].tiled && xc_tiled_dot_count(m->kernels[i].tiled) == 2) best = &m->kernels[i];
  return best;
}

/* Compile-only checks on sm_90 and sm_80 (false: NVRTC or the target is
 * missing). */
static bool check_compile(const char* selector) {
  xc_target_t* t = NULL;
  xc_device_caps_t caps;
  int index = -1;
  bool hopper = !strcmp(selector, "cuda:sm_90");
  xc_status_t s = xc_cuda_select(selector, &t, &caps, &index);
  if (s) {
    printf("SKIP %s: %s\n", selector, xc_status_message(s));
    xc_status_free(s);
    return false;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const acase_t* c = &cases[i];
    xc_compiled_module_t* m = NULL;
    s = compile(c, selector, false, &m);
    if (s && strstr(xc_status_message(s), "NVRTC") && strstr(xc_status_message(s), "not found")) {
      printf("SKIP compile (%s)\n", xc_status_message(s));
      xc_status_free(s);
      return false;
    }
    CHECK_OK(s);
    const xc_cm_kernel_t* k = m ? attention_kernel(m) : NULL;
    CHECK(k != NULL);
    if (!k) {
      xc_compiled_module_destroy(m);
      continue;
    }
    const char* pat = k->tiled->pattern;
    printf("%s, %s: %s\n", selector, c->name, pat ? pat : "(no pattern)");
    if (!c->pattern) {
      CHECK(pat == NULL);
    } else {
      CHECK(pat && strstr(pat, c->pattern));
      xc_cuda_fa_t fa;
      char why[128];
      CHECK(xc_cuda_fa_take(&caps, k->tiled, &fa, why, sizeof why));
      /* the scheduler gave it the program's record: on sm_90 warpgroups on
       * wgmma at head sizes 64 to 128 (rows padded to 64-column panels),
       * else warps on mma.sync */
      const xc_tiled_schedule_t* sc = k->tiled->schedule;
      bool wg = hopper && fa.D >= 64 && fa.D <= 128;
      if (wg) CHECK(fa.pitch == (fa.D <= 64 ? 64 : 128));
      if (wg) CHECK(fa.wg >= 1 && fa.threads == 128 * fa.wg + 128 && fa.bm == 64 * fa.wg && fa.bn == 128);
      else CHECK(fa.wg == 0 && fa.threads == 128);
      CHECK(sc && sc->threads == fa.threads && sc->dynamic_bytes == fa.smem && sc->num_dots == 2 &&
            sc->dots[0].mma.m == (wg ? 64 : 16) && sc->dots[1].mma.n == (wg ? fa.pitch : 8) &&
            sc->dots[1].operands == XC_SPACE_DYNAMIC);
      const char* ptx = NULL;
      CHECK(xc_cuda_blob_parts(&k->blob, NULL, NULL, NULL, &ptx, NULL));
      if (ptx) {
        bool bf = strstr(pat, "dtype=bf16") != NULL;
        char want[96];
        if (wg) {
          /* S = Q K^T from shared memory, O += P V with P in registers */
          snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n128k16.f32.%s.%s", bf ? "bf16" : "f16",
                   bf ? "bf16" : "f16");
          CHECK(strstr(ptx, want) != NULL);
          snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%lldk16.f32.%s.%s {", fa.pitch,
                   bf ? "bf16" : "f16", bf ? "bf16" : "f16");
          CHECK(strstr(ptx, want) != NULL);
          CHECK(strstr(ptx, "fence.proxy.async.shared::cta") && strstr(ptx, "wgmma.wait_group.sync.aligned"));
          /* a producer warpgroup, mbarriers; two consumers take turns */
          CHECK(strstr(ptx, "mbarrier.try_wait.parity") && strstr(ptx, "mbarrier.init"));
          if (fa.wg == 2) CHECK(strstr(ptx, "bar.arrive") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32"));
          CHECK(!strstr(ptx, "ldmatrix"));
        } else {
          CHECK(strstr(ptx, bf ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
                               : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != NULL);
          CHECK(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") != NULL);
          CHECK(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != NULL);
        }
        CHECK(strstr(ptx, "cp.async.cg.shared.global") != NULL && strstr(ptx, XC_CUDA_DSM_PREFIX) != NULL);
      }
      /* the program's source for this kernel and its own knobs */
      xc_knob_t kn[XC_TILED_MAX_SCHED_KNOBS];
      for (int j = 0; j < k->tiled->num_knobs && j < XC_TILED_MAX_SCHED_KNOBS; j++)
        kn[j].name = k->tiled->knobs[j].name, kn[j].value = sc ? sc->knobs[j] : 0;
      bool taken = false;
      xc_kernel_source_t src;
      CHECK_OK(xc_cuda_fa_emit(&caps, k->tiled, kn, k->tiled->num_knobs, &taken, &src));
      CHECK(taken && src.text && strstr(src.text, "FlashAttention program") && strstr(src.text, src.entry));
      if (taken) xc_kernel_source_release(&src);
      /* forced 32 x 32 tiles: the C-family emission of the body */
      xc_compiled_module_t* m2 = NULL;
      CHECK_OK(compile(c, selector, true, &m2));
      const xc_cm_kernel_t* k2 = m2 ? attention_kernel(m2) : NULL;
      CHECK(k2 && k2->tiled->pattern && k2->tiled->schedule && k2->tiled->schedule->dynamic_bytes != fa.smem);
      if (k2) {
        for (int j = 0; j < k2->tiled->num_knobs && j < XC_TILED_MAX_SCHED_KNOBS; j++)
          kn[j].name = k2->tiled->knobs[j].name, kn[j].value = k2->tiled->schedule->knobs[j];
        CHECK_OK(xc_cuda_fa_emit(&caps, k2->tiled, kn, k2->tiled->num_knobs, &taken, &src));
        CHECK(!taken);
      }
      xc_compiled_module_destroy(m2);
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
  /* $XCOMP_ATTN_CASES: run only the cases whose name contains it (for
   * compute-sanitizer) */
  const char* only = getenv("XCOMP_ATTN_CASES");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const acase_t* c = &cases[i];
    if (only && *only && !strstr(c->name, only)) continue;
    xc_session_options_t o;
    xc_session_options_init(&o);
    o.target = "cuda";
    o.use_cache = false;
    xc_compiled_module_t* m = NULL;
    xc_compare_result_t r;
    xc_test_device_run(c->text, &o, &m, &r);
    const xc_cm_kernel_t* k = m ? attention_kernel(m) : NULL;
    xc_cuda_fa_t fa;
    char why[128];
    bool prog = k && xc_cuda_fa_take(&caps, k->tiled, &fa, why, sizeof why);
    printf("%s (%s, BLOCK_M %d): rel-L2 %.3g, max-abs %.3g %s\n", c->name, prog ? "FlashAttention program" : "generic",
           prog ? fa.bm : 0, r.rel_l2, r.max_abs, r.ok ? "ok" : r.reason);
    CHECK(r.ok);
    xc_compiled_module_destroy(m);
  }
}

int main(void) {
  CHECK_OK(xc_targets_init());
  if (check_compile("cuda:sm_90") && check_compile("cuda:sm_80")) check_device();
  return xc_test_summary("test_cuda_attention");
}
