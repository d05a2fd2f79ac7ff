/* A small model lowered by hand for the runtime tests (test_module*.c,
 * test_executor*.c, test_cache*.c): a chain of elementwise kernels over a
 * symbolic length n with one weight and one alias, whose tiled kernels give
 * the grid and parameters and whose C bodies are written here in the cpu
 * kernel ABI (docs/targets.md), so no emitter is needed.
 *
 *   t1 = x + w[0]      kernel add_w   (BLOCK knob 32: grid = ceil(n/32))
 *   t2 = t1 * t1       kernel square
 *   t3 = -t2           kernel neg
 *   r  = Identity(t3)  alias step
 *   t4 = |r|           kernel abs
 *   y  = t4 + t1       kernel add     (t1 lives across the chain)
 *
 * so y = (x + w)^2 + (x + w). */
#ifndef XCOMP_TESTS_MODULE_FIXTURE_H
#define XCOMP_TESTS_MODULE_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "xcomp/driver.h"
#include "xcomp/lower.h"
#include "xcomp/module.h"
#include "xcomp/runtime.h"
#include "xcomp/target.h"
#include "xcomp/xir.h"

/* Each test program uses a different part of the fixture. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

static const char* fixture_xir =
    "xir 1\n"
    "graph chain opset 23 {\n"
    "  input x: f32[n]\n"
    "  const w: f32[1] = [0.5]\n"
    "  t1 = Add(x, w)\n"
    "  t2 = Mul(t1, t1)\n"
    "  t3 = Neg(t2)\n"
    "  r = Identity(t3)\n"
    "  t4 = Abs(r)\n"
    "  y = Add(t4, t1)\n"
    "  output y\n"
    "}\n";

static float fixture_expected(float x) {
  float t1 = x + 0.5f;
  float t2 = t1 * t1;
  return fabsf(-t2) + t1;
}

/* A tiled elementwise kernel over n elements: num_in inputs, one output. */
static xc_tiled_kernel_t* fixture_tiled(const char* name, int num_in) {
  xc_tiled_kernel_t* k = NULL;
  if (xc_tiled_kernel_create(name, &k)) return NULL;
  const int64_t blocks[] = {32, 64};
  int kb = xc_tiled_add_knob(k, "BLOCK", XC_KNOB_TILE, 2, blocks, 64);
  xc_tiled_value_t* in[2] = {NULL, NULL};
  for (int i = 0; i < num_in; i++)
    in[i] = xc_tiled_param_buffer(k, i ? "B" : "A", XC_F32, XC_ROLE_IN);
  xc_tiled_value_t* out = xc_tiled_param_buffer(k, "Y", XC_F32, XC_ROLE_OUT);
  xc_tiled_value_t* n = xc_tiled_param_scalar(k, "n");
  const xc_tiled_expr_t* grid[1] = {
      xc_texpr_binary(k, XC_TEXPR_CEILDIV, xc_texpr_param(k, n), xc_texpr_knob(k, kb))};
  xc_tiled_set_grid(k, 1, grid);
  xc_tiled_value_t* off = xc_tiled_binary(
      k, XC_TOP_ADD, xc_tiled_binary(k, XC_TOP_MUL, xc_tiled_program_id(k, 0), xc_tiled_knob_value(k, kb)),
      xc_tiled_arange(k, xc_tiled_dim_knob(kb)));
  xc_tiled_value_t* mask = xc_tiled_cmp(k, XC_CMP_LT, off, n);
  xc_tiled_value_t* v = xc_tiled_load(k, in[0], off, mask, NULL);
  /* add_w reads one element of B (b[0]) for every lane: its offsets are 0. */
  xc_tiled_value_t* b_off =
      strcmp(name, "add_w") == 0 ? xc_tiled_binary(k, XC_TOP_MUL, off, xc_tiled_const_i(k, XC_I64, 0, 0, NULL)) : off;
  if (num_in == 2) v = xc_tiled_binary(k, XC_TOP_ADD, v, xc_tiled_load(k, in[1], b_off, mask, NULL));
  xc_tiled_store(k, out, off, v, mask);
  xc_status_t s = xc_tiled_verify(k);
  if (s) {
    fprintf(stderr, "fixture kernel %s: %s\n", name, xc_status_message(s));
    xc_status_free(s);
    xc_tiled_kernel_destroy(k);
    return NULL;
  }
  return k;
}

typedef struct {
  const char* kernel;
  const char* a;
  const char* b; /* NULL: unary */
  const char* y;
  const char* expr;
  int64_t block;
} fixture_kernel_t;

static const fixture_kernel_t fixture_kernels[] = {
    {"add_w", "x", "w", "t1", "a[i] + b[0]", 32},
    {"square", "t1", NULL, "t2", "a[i] * a[i]", 64},
    {"neg", "t2", NULL, "t3", "-a[i]", 64},
    {"abs_", "r", NULL, "t4", "(a[i] < 0 ? -a[i] : a[i])", 64},
    {"add", "t4", "t1", "y", "a[i] + b[i]", 64},
};
enum { FIXTURE_KERNELS = 5 };

/* Counts calls of the lowering hook (a cache hit must not lower). */
static int fixture_lower_calls = 0;

static void fixture_lower_free(void* ctx, xc_lowered_module_t* lm) {
  (void)ctx;
  if (!lm) return;
  for (int i = 0; i < lm->num_kernels; i++) {
    xc_tiled_kernel_destroy(lm->kernels[i].kernel);
    free(lm->kernels[i].param_values);
    free(lm->kernels[i].param_dims);
    free(lm->kernels[i].knobs);
  }
  free(lm->kernels);
  free(lm->steps);
  free(lm);
}

static xc_status_t fixture_lower(void* ctx, const xc_graph_t* g, const xc_tiled_limits_t* limits,
                                 xc_lowered_module_t** out) {
  (void)ctx;
  (void)limits;
  fixture_lower_calls++;
  *out = NULL;
  xc_lowered_module_t* lm = calloc(1, sizeof *lm);
  if (!lm) return xc_error_oom();
  lm->graph = g;
  lm->kernels = calloc(FIXTURE_KERNELS, sizeof *lm->kernels);
  lm->steps = calloc(FIXTURE_KERNELS + 1, sizeof *lm->steps);
  if (!lm->kernels || !lm->steps) {
    fixture_lower_free(NULL, lm);
    return xc_error_oom();
  }
  const xc_value_t* x = xc_graph_find_value(g, "x");
  for (int i = 0; i < FIXTURE_KERNELS; i++) {
    const fixture_kernel_t* fk = &fixture_kernels[i];
    xc_lowered_kernel_t* k = &lm->kernels[i];
    lm->num_kernels = i + 1;
    int nin = fk->b ? 2 : 1;
    k->kernel = fixture_tiled(fk->kernel, nin);
    k->num_params = nin + 2;
    k->param_values = calloc(4, sizeof *k->param_values);
    k->param_dims = calloc(4, sizeof *k->param_dims);
    k->knobs = calloc(1, sizeof *k->knobs);
    if (!k->kernel || !k->param_values || !k->param_dims || !k->knobs || !x) {
      fixture_lower_free(NULL, lm);
      return xc_error(XC_INTERNAL, "fixture lowering failed");
    }
    k->param_values[0] = xc_graph_find_value(g, fk->a);
    if (fk->b) k->param_values[1] = xc_graph_find_value(g, fk->b);
    k->param_values[nin] = xc_graph_find_value(g, fk->y);
    k->param_dims[nin + 1] = x->dims[0];
    k->knobs[0] = fk->block;
  }
  /* steps: add_w square neg alias abs add */
  int order[] = {0, 1, 2, -1, 3, 4};
  for (int i = 0; i < 6; i++) {
    if (order[i] < 0) {
      lm->steps[i].kind = XC_STEP_ALIAS;
      lm->steps[i].dst = xc_graph_find_value(g, "r");
      lm->steps[i].src = xc_graph_find_value(g, "t3");
    } else {
      lm->steps[i].kind = XC_STEP_KERNEL;
      lm->steps[i].index = order[i];
    }
  }
  lm->num_steps = 6;
  *out = lm;
  return NULL;
}

/* The C body of a fixture kernel, with its BLOCK knob baked in. */
static xc_status_t fixture_emit(void* ctx, const xc_tiled_kernel_t* kernel, const int64_t* knobs,
                                xc_kernel_source_t* out) {
  (void)ctx;
  memset(out, 0, sizeof *out);
  const fixture_kernel_t* fk = NULL;
  for (int i = 0; i < FIXTURE_KERNELS; i++)
    if (strcmp(fixture_kernels[i].kernel, kernel->name) == 0) fk = &fixture_kernels[i];
  if (!fk) return xc_error(XC_UNSUPPORTED, "no fixture body for kernel %s", kernel->name);
  char* text = malloc(2048);
  if (!text) return xc_error_oom();
  snprintf(text, 2048,
           "#include <stdint.h>\n"
           "void xk_%s(void* const* buffers, const int64_t* scalars, const int64_t grid[3],\n"
           "           int64_t program_begin, int64_t program_end) {\n"
           "  const float* a = buffers[0];\n"
           "  const float* b = buffers[%d];\n"
           "  float* y = buffers[%d];\n"
           "  int64_t n = scalars[0];\n"
           "  (void)b; (void)grid;\n"
           "  for (int64_t p = program_begin; p < program_end; p++)\n"
           "    for (int64_t i = p * %lld; i < (p + 1) * %lld && i < n; i++) y[i] = %s;\n"
           "}\n",
           fk->kernel, fk->b ? 1 : 0, fk->b ? 2 : 1, (long long)knobs[0], (long long)knobs[0], fk->expr);
  out->language = "c";
  out->text = text;
  snprintf(out->entry, sizeof out->entry, "xk_%s", fk->kernel);
  return NULL;
}

static xc_status_t fixture_parse_graph(xc_graph_t** out) {
  xc_status_t s = xc_xir_parse(fixture_xir, strlen(fixture_xir), "chain.xir", NULL, out);
  if (!s) s = xc_graph_infer(*out);
  return s;
}

/* Small, quick blobs: no optimization, stripped. */
static void fixture_build_options(xc_cm_build_options_t* o) {
  xc_cm_build_options_init(o);
  o->emit = fixture_emit;
  o->compile.flags = "-O1 -fPIC -shared -s";
}

/* The fixture compiled for the cpu target. */
static xc_status_t fixture_module(xc_compiled_module_t** out, int* kernels_compiled) {
  *out = NULL;
  XC_RETURN_IF_ERROR(xc_targets_init());
  xc_target_t* t = NULL;
  int index = 0;
  XC_RETURN_IF_ERROR(xc_target_find("cpu", &t, &index));
  xc_device_caps_t caps;
  XC_RETURN_IF_ERROR(xc_target_device_caps(t, index, &caps));
  xc_graph_t* g = NULL;
  xc_status_t s = fixture_parse_graph(&g);
  xc_lowered_module_t* lm = NULL;
  if (!s) s = fixture_lower(NULL, g, NULL, &lm);
  xc_cm_build_options_t o;
  fixture_build_options(&o);
  if (!s) s = xc_compiled_module_build(lm, t, &caps, &o, kernels_compiled, out);
  fixture_lower_free(NULL, lm);
  xc_graph_destroy(g);
  return s;
}

static xc_tensor_t* fixture_input(int64_t n) {
  xc_tensor_t* t = NULL;
  if (xc_tensor_create(XC_F32, 1, &n, &t)) return NULL;
  for (int64_t i = 0; i < n; i++) ((float*)t->data)[i] = (float)((i * 7) % 23) * 0.25f - 2.0f;
  return t;
}

/* Number of elements of out that differ from the closed form. */
static int64_t fixture_wrong(const xc_tensor_t* in, const xc_tensor_t* out) {
  if (!in || !out || out->numel != in->numel || out->dtype != XC_F32) return -1;
  int64_t wrong = 0;
  for (int64_t i = 0; i < in->numel; i++) {
    float want = fixture_expected(((const float*)in->data)[i]);
    float got = ((const float*)out->data)[i];
    if (!(fabsf(got - want) <= 1e-6f * fabsf(want) + 1e-7f)) wrong++;
  }
  return wrong;
}

#endif
