/* Vendor GEMMs without a GPU: which fusion groups qualify for a vendor
 * library (runtime/vendor.c), with which transposes, sizes, epilogue and
 * buffer positions; the 64-byte descriptor round trip and its refusals.
 * (The measurement and the cuBLASLt calls run on a GPU: docs/targets/cuda.md.) */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/passes.h"
#include "xcomp/xir.h"
#include "../../driver/driver_internal.h"

typedef struct analysed {
  xc_graph_t* g;
  xc_fusion_plan_t* plan;
  xc_lowered_module_t* lm;
  bool has[16];
  xc_vendor_gemm_t c[16];
} analysed_t;

static void analyse(const char* body, analysed_t* a) {
  memset(a, 0, sizeof *a);
  char text[2048];
  snprintf(text, sizeof text, "xir 1\ngraph t opset 23 {\n%s}\n", body);
  CHECK_OK(xc_xir_parse(text, strlen(text), "t.xir", NULL, &a->g));
  if (!a->g) return;
  CHECK_OK(xc_graph_infer(a->g));
  xc_pass_options_t po;
  xc_pass_options_init(&po);
  CHECK_OK(xc_passes_run(a->g, &po));
  CHECK_OK(xc_fusion_plan_build(a->g, NULL, &a->plan));
  xc_tiled_limits_t lim;
  xc_tiled_limits_init_gpu(&lim);
  if (a->plan) CHECK_OK(xc_lower(a->g, a->plan, &lim, &a->lm));
  if (!a->lm) return;
  CHECK(a->lm->num_kernels <= 16);
  xc_drv_vendor_candidates(a->plan, a->lm, false, a->has, a->c);
}

static void release(analysed_t* a) {
  if (a->lm) xc_lowered_module_destroy(a->lm);
  xc_fusion_plan_destroy(a->plan);
  xc_graph_destroy(a->g);
}

/* The buffer position of graph value `name` among kernel k's buffers. */
static int position(const analysed_t* a, int k, const char* name) {
  const xc_lowered_kernel_t* lk = &a->lm->kernels[k];
  int pos = 0;
  for (int i = 0; i < lk->num_params; i++) {
    if (!lk->param_values[i]) continue;
    if (strcmp(lk->param_values[i]->name, name) == 0) return pos;
    pos++;
  }
  return -100;
}

/* Some kernel of a is offered with sizes m x n and this epilogue, and every
 * offered one is: the first such kernel, or -1. */
static int check_offered(const analysed_t* a, int64_t m, int64_t n, xc_vendor_epilogue_t epi) {
  int first = -1;
  for (int k = 0; a->lm && k < a->lm->num_kernels; k++)
    if (a->has[k]) {
      if (first < 0) first = k;
      CHECK_EQ_INT(a->c[k].m, m);
      CHECK_EQ_INT(a->c[k].n, n);
      CHECK_EQ_INT(a->c[k].epilogue, epi);
    }
  if (a->lm) CHECK(first >= 0);
  return first;
}

static void test_plain_matmul(void) {
  analysed_t a;
  analyse("  input x: f32[64, 32]\n  input w: f32[32, 16]\n  y = MatMul(x, w)\n  output y\n", &a);
  if (a.lm) {
    CHECK_EQ_INT(a.lm->num_kernels, 1);
    CHECK(a.has[0]);
    const xc_vendor_gemm_t* c = &a.c[0];
    CHECK_EQ_INT(c->m, 64);
    CHECK_EQ_INT(c->n, 16);
    CHECK_EQ_INT(c->k, 32);
    CHECK(!c->trans_a && !c->trans_b);
    CHECK_EQ_INT(c->epilogue, XC_VENDOR_EPILOGUE_NONE);
    CHECK_EQ_INT(c->dtype, XC_F32);
    CHECK_EQ_INT(c->a, position(&a, 0, "x"));
    CHECK_EQ_INT(c->b, position(&a, 0, "w"));
    CHECK_EQ_INT(c->y, position(&a, 0, "y"));
    CHECK_EQ_INT(c->bias, -1);
  }
  release(&a);
}

static void test_bias_relu(void) {
  analysed_t a;
  analyse("  input x: bf16[8, 24]\n  input w: bf16[24, 40]\n  input b: bf16[40]\n"
          "  h = MatMul(x, w)\n  s = Add(b, h)\n  y = Relu(s)\n  output y\n",
          &a);
  if (a.lm) {
    CHECK_EQ_INT(a.lm->num_kernels, 1);
    CHECK(a.has[0]);
    CHECK_EQ_INT(a.c[0].epilogue, XC_VENDOR_EPILOGUE_BIAS_RELU);
    CHECK_EQ_INT(a.c[0].dtype, XC_BF16);
    CHECK_EQ_INT(a.c[0].bias, position(&a, 0, "b"));
    CHECK_EQ_INT(a.c[0].y, position(&a, 0, "y"));
    CHECK_EQ_INT(a.c[0].n, 40);
  }
  release(&a);
}

static void test_gemm_transposed_with_c(void) {
  analysed_t a;
  analyse("  input x: f16[32, 12]\n  input w: f16[20, 32]\n  input c: f16[1, 20]\n"
          "  y = Gemm(x, w, c) {transA: 1, transB: 1}\n  output y\n",
          &a);
  if (a.lm) {
    CHECK(a.has[0]);
    CHECK(a.c[0].trans_a && a.c[0].trans_b);
    CHECK_EQ_INT(a.c[0].m, 12);
    CHECK_EQ_INT(a.c[0].n, 20);
    CHECK_EQ_INT(a.c[0].k, 32);
    CHECK_EQ_INT(a.c[0].epilogue, XC_VENDOR_EPILOGUE_BIAS);
    CHECK_EQ_INT(a.c[0].bias, position(&a, 0, "c"));
  }
  release(&a);
}

/* A transformer's linear layer: [batch, seq, k] activations against a 2-D
 * weight (rows = batch * seq), a bias row, tanh-form GELU, reshapes that
 * keep rows of n. */
static void test_rows_bias_gelu(void) {
  analysed_t a;
  analyse("  input x: bf16[2, 12, 32]\n  input w: bf16[32, 48]\n  input b: bf16[48]\n"
          "  h = MatMul(x, w)\n  s = Add(h, b)\n  y = Gelu(s) {approximate: \"tanh\"}\n  output y\n",
          &a);
  if (a.lm) {
    CHECK_EQ_INT(a.lm->num_kernels, 1);
    CHECK(a.has[0]);
    CHECK_EQ_INT(a.c[0].m, 24);
    CHECK_EQ_INT(a.c[0].n, 48);
    CHECK_EQ_INT(a.c[0].k, 32);
    CHECK_EQ_INT(a.c[0].epilogue, XC_VENDOR_EPILOGUE_BIAS_GELU);
    CHECK_EQ_INT(a.c[0].bias, position(&a, 0, "b"));
    CHECK_EQ_INT(a.c[0].y, position(&a, 0, "y"));
  }
  release(&a);
  analyse("  input x: f16[64, 32]\n  input w: f16[32, 48]\n"
          "  h = MatMul(x, w)\n  y = Gelu(h) {approximate: \"tanh\"}\n  output y\n",
          &a);
  if (a.lm) {
    CHECK(a.has[0]);
    CHECK_EQ_INT(a.c[0].epilogue, XC_VENDOR_EPILOGUE_GELU);
  }
  release(&a);
  /* Gemm on 2-D views of the activations, viewed back (GPT-2's Conv1D export) */
  analyse("  input x: f32[1, 16, 32]\n  input w: f32[32, 96]\n  input b: f32[96]\n"
          "  const s2: i64[2] = [16, 32]\n  const s3: i64[3] = [1, 16, 96]\n"
          "  x2 = Reshape(x, s2)\n  h = Gemm(x2, w, b)\n  y = Reshape(h, s3)\n  output y\n",
          &a);
  check_offered(&a, 16, 96, XC_VENDOR_EPILOGUE_BIAS);
  release(&a);
}

/* A projection viewed as heads ([b, s, h * d] -> [b, s, h, d], the rows'
 * length changed): the same row-major bytes, so the library writes them. */
static void test_head_split_view(void) {
  analysed_t a;
  analyse("  input x: bf16[1, 24, 32]\n  input w: bf16[32, 48]\n  const s: i64[4] = [1, 24, 4, 12]\n"
          "  h = MatMul(x, w)\n  y = Reshape(h, s)\n  output y\n",
          &a);
  int k = check_offered(&a, 24, 48, XC_VENDOR_EPILOGUE_NONE);
  if (k >= 0) {
    CHECK_EQ_INT(a.c[k].k, 32);
    /* the kernel's buffer holds the view's bytes under one of the two names */
    int y = position(&a, k, "y");
    CHECK_EQ_INT(a.c[k].y, y >= 0 ? y : position(&a, k, "h"));
    CHECK(a.c[k].y >= 0);
  }
  release(&a);
  /* a bias row after a view that changed the rows' length no longer runs
   * along rows of n: never the library's bias epilogue (the product and its
   * view alone may still be offered, the Add then being a kernel of its own) */
  analyse("  input x: f32[16, 16]\n  input w: f32[16, 16]\n  input b: f32[16]\n  const s: i64[2] = [256, 1]\n"
          "  h = MatMul(x, w)\n  v = Reshape(h, s)\n  y = Add(v, b)\n  output y\n",
          &a);
  for (int j = 0; a.lm && j < a.lm->num_kernels; j++)
    if (a.has[j]) {
      CHECK_EQ_INT(a.c[j].epilogue, XC_VENDOR_EPILOGUE_NONE);
      CHECK_EQ_INT(a.c[j].bias, -1);
      int y = position(&a, j, "y");
      CHECK(y < 0 || a.c[j].y != y);
    }
  release(&a);
}

/* Groups a vendor library cannot compute exactly are never offered. */
static void test_refused(void) {
  const char* bodies[] = {
      /* exact (erf) GELU epilogue */
      "  input x: f32[16, 16]\n  input w: f32[16, 16]\n  h = MatMul(x, w)\n  y = Gelu(h)\n  output y\n",
      /* batched */
      "  input x: f32[2, 16, 16]\n  input w: f32[2, 16, 16]\n  y = MatMul(x, w)\n  output y\n",
      /* symbolic rows */
      "  input x: f32[n, 16]\n  input w: f32[16, 16]\n  y = MatMul(x, w)\n  output y\n",
      /* a full-matrix addend is not a bias row */
      "  input x: f32[16, 8]\n  input w: f32[8, 16]\n  input r: f32[16, 16]\n  h = MatMul(x, w)\n"
      "  y = Add(h, r)\n  output y\n",
      /* alpha != 1 */
      "  input x: f32[16, 8]\n  input w: f32[8, 16]\n  y = Gemm(x, w) {alpha: 2.0}\n  output y\n",
      /* f64 */
      "  input x: f64[16, 8]\n  input w: f64[8, 16]\n  y = MatMul(x, w)\n  output y\n",
  };
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
    analysed_t a;
    analyse(bodies[i], &a);
    if (a.lm) {
      bool any = false;
      for (int k = 0; k < a.lm->num_kernels; k++) any = any || a.has[k];
      if (any) fprintf(stderr, "case %zu offered to the vendor library\n", i);
      CHECK(!any);
    }
    release(&a);
  }
}

static void test_descriptor(void) {
  xc_vendor_gemm_t g = {XC_BF16, true, false, 4096, 1024, 333, XC_VENDOR_EPILOGUE_BIAS_GELU, 1, 0, 2, 3, true, -1};
  uint8_t bytes[XC_VENDOR_GEMM_BYTES];
  xc_vendor_gemm_pack(&g, bytes);
  xc_vendor_gemm_t back;
  CHECK_OK(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back));
  CHECK_EQ_INT(back.dtype, XC_BF16);
  CHECK(back.trans_a && !back.trans_b && back.allow_tf32);
  CHECK_EQ_INT(back.m, 4096);
  CHECK_EQ_INT(back.n, 1024);
  CHECK_EQ_INT(back.k, 333);
  CHECK_EQ_INT(back.epilogue, XC_VENDOR_EPILOGUE_BIAS_GELU);
  CHECK_EQ_INT(back.a, 1);
  CHECK_EQ_INT(back.b, 0);
  CHECK_EQ_INT(back.bias, 2);
  CHECK_EQ_INT(back.y, 3);
  CHECK_ERR(xc_vendor_gemm_unpack(bytes, sizeof bytes - 1, &back), "malformed");
  uint8_t bad[XC_VENDOR_GEMM_BYTES];
  memcpy(bad, bytes, sizeof bad);
  bad[0] = 'Y';
  CHECK_ERR(xc_vendor_gemm_unpack(bad, sizeof bad, &back), "malformed");
  memcpy(bad, bytes, sizeof bad);
  bad[8] = (uint8_t)XC_F64; /* dtype */
  CHECK_ERR(xc_vendor_gemm_unpack(bad, sizeof bad, &back), "out of range");
  memcpy(bad, bytes, sizeof bad);
  bad[28] = 0; /* bias -1 with a BIAS epilogue */
  CHECK_ERR(xc_vendor_gemm_unpack(bad, sizeof bad, &back), "out of range");
  memcpy(bad, bytes, sizeof bad);
  bad[47] = 0x80; /* m negative */
  CHECK_ERR(xc_vendor_gemm_unpack(bad, sizeof bad, &back), "out of range");
  memcpy(bad, bytes, sizeof bad);
  bad[36] = 2; /* a SwiGLU operand without a SwiGLU epilogue */
  CHECK_ERR(xc_vendor_gemm_unpack(bad, sizeof bad, &back), "out of range");
  /* SwiGLU: U's position round-trips; without one the blob is refused */
  xc_vendor_gemm_t w = {XC_F16, false, true, 512, 2048, 768, XC_VENDOR_EPILOGUE_SWIGLU_B, 0, 1, -1, 3, false, 2};
  xc_vendor_gemm_pack(&w, bytes);
  CHECK_OK(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back));
  CHECK_EQ_INT(back.epilogue, XC_VENDOR_EPILOGUE_SWIGLU_B);
  CHECK_EQ_INT(back.u, 2);
  CHECK_EQ_INT(back.y, 3);
  CHECK_EQ_INT(back.bias, -1);
  CHECK(!back.trans_a && back.trans_b);
  w.u = -1;
  xc_vendor_gemm_pack(&w, bytes);
  CHECK_ERR(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back), "out of range");
  w.u = 3; /* U where Y is written: the product would overwrite it first */
  xc_vendor_gemm_pack(&w, bytes);
  CHECK_ERR(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back), "out of range");
  w.u = 0; /* U may be an operand (silu(X W) X) */
  xc_vendor_gemm_pack(&w, bytes);
  CHECK_OK(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back));
  w.u = 2;
  w.m = (int64_t)1 << 31; /* sizes past 2^31 - 1: m x n would not fit the launch's count */
  xc_vendor_gemm_pack(&w, bytes);
  CHECK_ERR(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back), "out of range");
  /* a plain GEMM's U field is written as none whatever the struct holds */
  g.u = 5;
  xc_vendor_gemm_pack(&g, bytes);
  CHECK_OK(xc_vendor_gemm_unpack(bytes, sizeof bytes, &back));
  CHECK_EQ_INT(back.u, -1);
}

/* A SwiGLU MLP's gated product: silu(x Wg) * (x Wu) becomes a GEMM with a
 * SwiGLU epilogue whose U is the other projection (either operand order);
 * nothing else may follow it. */
static void test_swiglu(void) {
  const char* orders[2] = {"  s = Sigmoid(g)\n  t = Mul(g, s)\n  y = Mul(t, up)\n",
                           "  s = Sigmoid(g)\n  t = Mul(s, g)\n  y = Mul(up, t)\n"};
  for (int o = 0; o < 2; o++) {
    char body[1024];
    snprintf(body, sizeof body,
             "  input x: bf16[2, 64, 32]\n  input wg: bf16[32, 96]\n  input wu: bf16[32, 96]\n"
             "  g = MatMul(x, wg)\n  up = MatMul(x, wu)\n%s  output y\n",
             orders[o]);
    analysed_t a;
    analyse(body, &a);
    int gated = -1;
    for (int k = 0; a.lm && k < a.lm->num_kernels; k++)
      if (a.has[k] && (a.c[k].epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A || a.c[k].epilogue == XC_VENDOR_EPILOGUE_SWIGLU_B))
        gated = k;
    if (a.lm) {
      CHECK(gated >= 0);
      if (gated >= 0) {
        const xc_vendor_gemm_t* c = &a.c[gated];
        CHECK_EQ_INT(c->m, 128);
        CHECK_EQ_INT(c->n, 96);
        CHECK_EQ_INT(c->k, 32);
        CHECK_EQ_INT(c->bias, -1);
        CHECK_EQ_INT(c->y, position(&a, gated, "y"));
        /* the gated product is g (SWIGLU_A, U = up) or up (SWIGLU_B, U = g) */
        if (c->epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A) {
          CHECK_EQ_INT(c->b, position(&a, gated, "wg"));
          CHECK_EQ_INT(c->u, position(&a, gated, "up"));
        } else {
          CHECK_EQ_INT(c->b, position(&a, gated, "wu"));
          CHECK_EQ_INT(c->u, position(&a, gated, "g"));
        }
      }
    }
    release(&a);
  }
  /* an Add after the SwiGLU: not the library's */
  analysed_t a;
  analyse("  input x: bf16[64, 32]\n  input wg: bf16[32, 96]\n  input wu: bf16[32, 96]\n  input r: bf16[96]\n"
          "  g = MatMul(x, wg)\n  up = MatMul(x, wu)\n  s = Sigmoid(g)\n  t = Mul(g, s)\n  z = Mul(t, up)\n"
          "  y = Add(z, r)\n  output y\n",
          &a);
  for (int k = 0; a.lm && k < a.lm->num_kernels; k++)
    CHECK(!a.has[k] || (a.c[k].epilogue != XC_VENDOR_EPILOGUE_SWIGLU_A && a.c[k].epilogue != XC_VENDOR_EPILOGUE_SWIGLU_B));
  release(&a);
}

/* The race's random inputs: floats in [-1, 1) that repeat with a prime
 * period (65521), so that large buffers fill at copying speed; integers
 * untouched. */
static void test_fill_random(void) {
  enum { P = 65521 };
  size_t n = 3 * (size_t)P + 77;
  uint16_t* h = malloc(n * sizeof *h);
  float* f = malloc(n * sizeof *f);
  CHECK(h && f);
  if (!h || !f) {
    free(h);
    free(f);
    return;
  }
  xc_drv_fill_random((uint8_t*)h, XC_BF16, n, 3);
  xc_drv_fill_random((uint8_t*)f, XC_F32, n, 3);
  int distinct_pow2 = 0, bad = 0;
  for (size_t i = 0; i < n; i++) {
    double v = xc_bf16_to_f32(h[i]);
    if (!(v >= -1.0 && v <= 1.0) || !(f[i] >= -1.0f && f[i] < 1.0f)) bad++;
    if (i + P < n && (h[i] != h[i + P] || f[i] != f[i + P])) bad++;
    if (i + 65536 < n && f[i] != f[i + 65536]) distinct_pow2++;
  }
  CHECK(bad == 0);
  CHECK(distinct_pow2 > (int)(n / 2)); /* no power-of-two period */
  CHECK(f[n - 1] == f[(n - 1) % P]);
  CHECK(f[0] != f[1] && h[5] != h[6]);
  /* the same seed gives the same values; a short buffer is the period's start */
  float g[100];
  xc_drv_fill_random((uint8_t*)g, XC_F32, 100, 3);
  CHECK(memcmp(g, f, sizeof g) == 0);
  int32_t ints[8];
  memset(ints, 0xAB, sizeof ints);
  xc_drv_fill_random((uint8_t*)ints, XC_I32, 8, 3);
  CHECK(ints[0] == (int32_t)0xABABABAB && ints[7] == (int32_t)0xABABABAB);
  free(h);
  free(f);
}

int main(void) {
  test_plain_matmul();
  test_bias_relu();
  test_gemm_transposed_with_c();
  test_rows_bias_gelu();
  test_head_split_view();
  test_refused();
  test_descriptor();
  test_fill_random();
  test_swiglu();
  return xc_test_summary("test_vendor_gemm");
}
