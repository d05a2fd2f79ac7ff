/* Tensor-core GEMMs of the cuda target (docs/targets/cuda.md, "Tensor
 * cores"). Graphs MatMul [+ bias [+ Gelu]] in f16, bf16 and f32 go through
 * the whole pipeline (passes, fusion, lowering, the emitter with the CUDA
 * dialect's matrix-instruction hook, NVRTC).
 *
 * Without a GPU (SKIP without NVRTC): compiled for sm_80 and sm_90, the PTX
 * of every kernel must hold mma.sync of the operand type (m16n8k16 for
 * f16/bf16, m16n8k8 tf32 for f32 only with allow_tf32; exact f32 has none),
 * ldmatrix for 16-bit operands and cp.async, and pipelines deeper than 48
 * KiB of static shared memory in dynamic shared memory; when cuobjdump is found (PATH,
 * $CUDA_HOME/bin, /usr/local/cuda/bin, .cuda-tools/ from tools/install-cuda-tools.sh)
 * the cubin's SASS must hold HMMA exactly when tensor cores are used.
 * With a GPU: odd sizes (masked tiles, rows that are not 16-byte aligned),
 * bias and GELU epilogues, batched A, other tile / pipeline-stage knobs, all
 * compared with the reference interpreter at the dtype tolerances of
 * ARCHITECTURE.md (f16 rel-L2 <= 2e-3, bf16 1.6e-2, f32 1e-5, tf32 5e-4). */
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/conformance.h"
#include "xcomp/fusion.h"
#include "xcomp/interp.h"
#include "xcomp/lower.h"
#include "xcomp/module.h"
#include "xcomp/passes.h"
#include "xcomp/driver.h"
#include "xcomp/runtime.h"
#include "xcomp/tensor.h"
#include "xcomp/xir.h"

#include "../../targets/cuda/cuda_target.h"

typedef struct gcase {
  xc_dtype_t dt;
  int batch; /* 0: A is [M,K]; else A is [batch,M,K] */
  int m, n, k;
  int epilogue; /* 0 none, 1 bias, 2 bias + Gelu */
  bool tf32;
  int64_t bk, stages; /* > 0: forced BLOCK_K / STAGES knobs */
  bool dyn;           /* the stages exceed 48 KiB: operands in dynamic shared memory (the
                         default for 16-bit K >= 128 on sm_80+: two stages of BLOCK_K 64) */
} gcase_t;

static const gcase_t cases[] = {
    {XC_BF16, 0, 256, 384, 512, 1, false, 0, 0, true},   /* aligned, 2x3 programs; default: 2 stages of 64 */
    {XC_F16, 0, 257, 383, 515, 2, false, 0, 0, true},    /* odd: masks, unaligned rows */
    {XC_BF16, 0, 130, 200, 72, 0, false, 0, 0, false},   /* partial K tile */
    {XC_F16, 2, 96, 136, 160, 1, false, 16, 3, false},   /* batched A, 3 stages of BLOCK_K 16 */
    {XC_BF16, 0, 200, 264, 96, 2, false, 32, 1, false},  /* no pipeline */
    {XC_F32, 0, 193, 130, 100, 2, true, 0, 0, true},     /* tf32: 3 stages of 18.5 KiB, dynamic */
    {XC_F32, 0, 129, 136, 64, 1, true, 8, 3, false},     /* tf32, 3 stages of BLOCK_K 8 */
    {XC_F32, 0, 65, 70, 33, 1, false, 0, 0, false},      /* exact f32: no matrix instructions */
    {XC_BF16, 0, 257, 300, 520, 1, false, 32, 4, true}, /* 4 stages: 64 KiB, dynamic shared memory */
    {XC_F16, 0, 256, 256, 320, 2, false, 64, 3, true},  /* 3 stages of BLOCK_K 64: 96 KiB */
};

static void graph_text(const gcase_t* c, char* out, size_t size) {
  const char* t = xc_dtype_name(c->dt);
  char adims[64];
  if (c->batch) snprintf(adims, sizeof adims, "%d, %d, %d", c->batch, c->m, c->k);
  else snprintf(adims, sizeof adims, "%d, %d", c->m, c->k);
  char ydims[64];
  if (c->batch) snprintf(ydims, sizeof ydims, "%d, %d, %d", c->batch, c->m, c->n);
  else snprintf(ydims, sizeof ydims, "%d, %d", c->m, c->n);
  int n = snprintf(out, size,
                   "xir 1\ngraph g opset 23 {\n  input a: %s[%s]\n  input b: %s[%d, %d]\n", t, adims, t, c->k, c->n);
  if (c->epilogue) n += snprintf(out + n, size - (size_t)n, "  input bias: %s[%d]\n", t, c->n);
  n += snprintf(out + n, size - (size_t)n, "  y0: %s[%s] = MatMul(a, b)\n", t, ydims);
  if (c->epilogue) n += snprintf(out + n, size - (size_t)n, "  y1: %s[%s] = Add(y0, bias)\n", t, ydims);
  if (c->epilogue == 2) n += snprintf(out + n, size - (size_t)n, "  y2: %s[%s] = Gelu(y1)\n", t, ydims);
  snprintf(out + n, size - (size_t)n, "  output y%d\n}\n", c->epilogue);
}

static xc_graph_t* parse(const gcase_t* c) {
  char text[1024];
  graph_text(c, text, sizeof text);
  xc_graph_t* g = NULL;
  CHECK_OK(xc_xir_parse(text, strlen(text), "gemm.xir", NULL, &g));
  if (g) CHECK_OK(xc_graph_infer(g));
  return g;
}

/* The default lowering, then forced BLOCK_K / STAGES knobs. */
static xc_status_t lower_forced(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                                xc_lowered_module_t** out) {
  const gcase_t* c = ctx;
  xc_target_traits_t traits;
  xc_target_traits_init(&traits);
  traits.name = "cuda";
  traits.has_tensor_cores = true;
  xc_fusion_plan_t* plan = NULL;
  XC_RETURN_IF_ERROR(xc_fusion_plan_build(g, &traits, &plan));
  xc_status_t s = xc_lower(g, plan, limits, out);
  xc_fusion_plan_destroy(plan);
  if (s) return s;
  for (int k = 0; k < (*out)->num_kernels; k++) {
    const xc_tiled_kernel_t* tk = (*out)->kernels[k].kernel;
    for (int i = 0; i < tk->num_knobs; i++) {
      if (strncmp(tk->knobs[i].name, "BLOCK_K", 7) == 0 && c->bk) (*out)->kernels[k].knobs[i] = c->bk;
      if (strncmp(tk->knobs[i].name, "STAGES", 6) == 0 && c->stages) (*out)->kernels[k].knobs[i] = c->stages;
    }
  }
  return NULL;
}

static void lower_free(void* ctx, xc_lowered_module_t* lm) {
  (void)ctx;
  xc_lowered_module_destroy(lm);
}

static xc_status_t compile(const gcase_t* c, const char* selector, xc_compiled_module_t** out) {
  xc_graph_t* g = parse(c);
  if (!g) return xc_error(XC_INTERNAL, "parse failed");
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = selector;
  o.use_cache = false;
  o.build.compile.allow_tf32 = c->tf32;
  o.no_vendor_blas = true; /* these kernels, not cuBLASLt */
  if (c->bk || c->stages) {
    o.lower = lower_forced;
    o.lower_free = lower_free;
    o.lower_ctx = (void*)c;
  }
  xc_session_t* session = NULL;
  xc_status_t s = xc_session_create(&o, &session);
  if (!s) s = xc_session_compile_graph(session, g, out);
  xc_session_destroy(session);
  xc_graph_destroy(g);
  return s;
}

/* cuobjdump from PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or the folder
 * tools/install-cuda-tools.sh fills (.cuda-tools/, tests run in the source root). */
static bool find_cuobjdump(char* out, size_t size) {
  glob_t g;
  if (glob(".cuda-tools/nvidia/cu*/bin/cuobjdump", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
    snprintf(out, size, "%s", g.gl_pathv[0]);
    globfree(&g);
    if (access(out, X_OK) == 0) return true;
  } else {
    globfree(&g);
  }
  const char* dirs[3] = {getenv("PATH"), getenv("CUDA_HOME"), "/usr/local/cuda"};
  char buf[4096];
  for (int d = 0; d < 3; d++) {
    if (!dirs[d]) continue;
    snprintf(buf, sizeof buf, "%s", dirs[d]);
    for (char* tok = strtok(buf, ":"); tok; tok = strtok(NULL, ":")) {
      snprintf(out, size, d == 0 ? "%s/cuobjdump" : "%s/bin/cuobjdump", tok);
      if (access(out, X_OK) == 0) return true;
    }
  }
  return false;
}

/* Whether the SASS of cubin holds `what` (-1: no disassembler). */
static int sass_has(const uint8_t* cubin, size_t size, const char* what) {
  char tool[4200];
  if (!find_cuobjdump(tool, sizeof tool)) return -1;
  char path[] = "/tmp/xcomp_tc_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  bool ok = write(fd, cubin, size) == (ssize_t)size;
  close(fd);
  int found = -1;
  if (ok) {
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "'%s' -sass '%s' 2>/dev/null", tool, path);
    FILE* p = popen(cmd, "r");
    if (p) {
      found = 0;
      char line[1024];
      while (fgets(line, sizeof line, p))
        if (strstr(line, what)) found = 1;
      if (pclose(p) != 0) found = -1;
    }
  }
  unlink(path);
  return found;
}

static int sass_checked;

/* Compile-only checks for one architecture. */
static void check_arch(const char* arch) {
  char sel[32];
  snprintf(sel, sizeof sel, "cuda:%s", arch);
  xc_target_t* t = NULL;
  xc_device_caps_t caps;
  int index = -1;
  xc_status_t s = xc_cuda_select(sel, &t, &caps, &index);
  if (s) {
    printf("SKIP %s: %s\n", sel, xc_status_message(s));
    xc_status_free(s);
    return;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase_t* c = &cases[i];
    if (strcmp(arch, "sm_90") != 0 && i != 0 && i != 5) continue; /* bf16 and tf32 only for sm_80 (CI time) */
    xc_compiled_module_t* m = NULL;
    s = compile(c, sel, &m);
    if (s && strstr(xc_status_message(s), "NVRTC") && strstr(xc_status_message(s), "not found")) {
      printf("SKIP compile (%s)\n", xc_status_message(s));
      xc_status_free(s);
      return;
    }
    CHECK_OK(s);
    if (!m) continue;
    CHECK_EQ_INT(m->num_kernels, 1);
    const char* ptx = NULL;
    const uint8_t* cubin = NULL;
    size_t ncubin = 0;
    CHECK(m->num_kernels >= 1 && xc_cuda_blob_parts(&m->kernels[0].blob, NULL, &cubin, &ncubin, &ptx, NULL));
    if (!ptx) {
      xc_compiled_module_destroy(m);
      continue;
    }
    bool half = c->dt != XC_F32;
    bool mma16 = strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32") != NULL;
    bool mma_tf32 = strstr(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != NULL;
    char want[64];
    snprintf(want, sizeof want, ".f32.%s.%s.f32", c->dt == XC_F16 ? "f16" : "bf16", c->dt == XC_F16 ? "f16" : "bf16");
    if (half) CHECK(mma16 && strstr(ptx, want) && strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
    CHECK_EQ_INT(mma_tf32, c->dt == XC_F32 && c->tf32);
    if (c->dt == XC_F32) CHECK(!mma16);
    bool tc = half || c->tf32;
    CHECK_EQ_INT(strstr(ptx, "cp.async.cg.shared.global") != NULL, tc);
    if (tc && c->stages != 1) CHECK(strstr(ptx, "cp.async.wait_group") != NULL);
    if (!(half || c->tf32)) CHECK(strstr(ptx, "mma.sync") == NULL);
    /* deep pipelines: the operands in dynamic shared memory, its size in
     * the module for the launch */
    CHECK_EQ_INT(strstr(ptx, XC_CUDA_DSM_PREFIX) != NULL, c->dyn);
    CHECK_EQ_INT(strstr(ptx, ".extern .shared") != NULL, c->dyn);
    int h = sass_has(cubin, ncubin, "HMMA");
    if (h >= 0) {
      sass_checked++;
      CHECK_EQ_INT(h, tc);
    }
    xc_compiled_module_destroy(m);
  }
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Runs every case on the device and compares with the interpreter. */
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
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase_t* c = &cases[i];
    xc_graph_t* g = parse(c);
    if (!g) continue;
    xc_tensor_t* in[3] = {NULL, NULL, NULL};
    int ni = c->epilogue ? 3 : 2;
    for (int j = 0; j < ni; j++) {
      const xc_value_t* v = g->inputs[j];
      int64_t dims[3];
      for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d].value;
      CHECK_OK(xc_tensor_create(c->dt, v->rank, dims, &in[j]));
      for (int64_t e = 0; in[j] && e < in[j]->numel; e++) xc_tensor_set_f64(in[j], e, rnd());
    }
    xc_tensor_t* want[1] = {NULL};
    xc_interp_options_t io;
    xc_interp_options_init(&io);
    CHECK_OK(xc_interp_run(g, &io, ni, (const xc_tensor_t* const*)in, want));
    xc_graph_destroy(g);
    xc_compiled_module_t* m = NULL;
    CHECK_OK(compile(c, "cuda", &m));
    xc_executor_t* ex = NULL;
    xc_executor_options_t eo;
    xc_executor_options_init(&eo);
    eo.poison = true;
    if (m) CHECK_OK(xc_executor_create(m, "cuda", &eo, &ex));
    xc_tensor_t* got[1] = {NULL};
    if (ex) CHECK_OK(xc_executor_run(ex, ni, (const xc_tensor_t* const*)in, got, NULL));
    if (got[0] && want[0]) {
      xc_tolerance_t tol;
      xc_tolerance_for_dtype(c->dt, &tol);
      if (c->tf32) tol.max_rel_l2 = 5e-4, tol.check_allclose = false;
      xc_compare_result_t r;
      CHECK_OK(xc_compare_tensors(got[0], want[0], &tol, &r));
      printf("case %zu %s %s%dx%dx%d epilogue %d%s: rel-L2 %.3g, max-abs %.3g %s\n", i, xc_dtype_name(c->dt),
             c->batch ? "batched " : "", c->m, c->n, c->k, c->epilogue, c->tf32 ? " tf32" : "", r.rel_l2, r.max_abs,
             r.ok ? "ok" : r.reason);
      CHECK(r.ok);
      /* tf32 must differ from exact f32 somewhere (inputs lose 13 bits) */
      if (c->tf32) CHECK(r.rel_l2 > 1e-7);
    }
    xc_tensor_destroy(got[0]);
    xc_tensor_destroy(want[0]);
    for (int j = 0; j < ni; j++) xc_tensor_destroy(in[j]);
    xc_executor_destroy(ex);
    xc_compiled_module_destroy(m);
  }
}

int main(void) {
  CHECK_OK(xc_targets_init());
  check_arch("sm_80");
  check_arch("sm_90");
  if (!sass_checked) printf("SKIP SASS checks: no cuobjdump\n");
  check_device();
  return xc_test_summary("test_cuda_tc");
}
