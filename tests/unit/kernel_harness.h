/* Running a hand-built tiled kernel on a real device and checking it against
 * the tiled interpreter: shared by test_emit (cpu, opencl, cuda),
 * test_target_cuda and test_target_rocm (rocm_nv). Output buffers are
 * poisoned with NaN before the launch and followed by sentinel bytes that
 * must survive; f32/f64 outputs must match within rel-L2 1e-5, 16-bit GEMM
 * outputs within 2e-3, everything else exactly.
 *
 * A file may define KERNEL_HARNESS_SEED before including this to pick its
 * random stream. */
#ifndef XCOMP_TESTS_KERNEL_HARNESS_H
#define XCOMP_TESTS_KERNEL_HARNESS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tiled_kernels.h"
#include "xcomp/target.h"

#define KERNEL_HARNESS_SENTINEL 256

#ifndef KERNEL_HARNESS_SEED
#define KERNEL_HARNESS_SEED 0x2545f4914f6cdd1dull
#endif

static uint64_t rng_state = KERNEL_HARNESS_SEED;

/* Uniform in [-1, 1). */
static inline double rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A 1-D tensor of n elements, random or zero. */
static inline xc_tensor_t* tensor(xc_dtype_t dt, int64_t n, bool random) {
  xc_tensor_t* t = NULL;
  int64_t d[1] = {n};
  if (xc_tensor_create(dt, 1, d, &t)) return NULL;
  for (int64_t i = 0; random && i < n; i++) xc_tensor_set_f64(t, i, rnd());
  return t;
}

/* rel-L2 of a against b; NaN/inf must sit at the same places. */
static inline double rel_l2(const xc_tensor_t* a, const xc_tensor_t* b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = xc_tensor_get_f64(a, i), y = xc_tensor_get_f64(b, i);
    if (isnan(x) != isnan(y)) return INFINITY;
    if (isinf(x) || isinf(y)) {
      if (x != y) return INFINITY;
      continue;
    }
    if (isnan(x)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return sqrt(num / (den > 0 ? den : 1));
}

static inline void free_args(xc_tiled_arg_t* args, int n) {
  for (int i = 0; i < n; i++) xc_tensor_destroy(args[i].buffer);
}

/* Arguments of the attention test kernel (tiled_kernels.h build_attention):
 * random Q, K, V and a zero output of bh heads x sl positions x 16
 * channels, then the scalars S = sl and BH = bh. */
static inline void attention_args(int64_t bh, int64_t sl, xc_tiled_arg_t args[6]) {
  int64_t n = bh * sl * 16;
  for (int i = 0; i < 4; i++) args[i] = (xc_tiled_arg_t){tensor(XC_F32, n, i < 3), 0};
  args[4] = (xc_tiled_arg_t){NULL, sl};
  args[5] = (xc_tiled_arg_t){NULL, bh};
}

/* Knob values (defaults when knobs is NULL) into values; runs k on args with
 * the tiled interpreter; ref[i] points at each output argument's result. */
static inline void kernel_reference(const kern_t* k, const int64_t* knobs, xc_tiled_arg_t* args, int64_t* values,
                                    xc_tensor_t** ref) {
  if (knobs) memcpy(values, knobs, sizeof(int64_t) * (size_t)k->num_knobs);
  else
    for (int i = 0; i < k->num_knobs; i++) values[i] = k->knobs[i].default_value;
  CHECK_OK(xc_tiled_run(k, values, k->num_params, args));
  for (int i = 0; i < 16; i++) ref[i] = NULL;
  for (int i = 0; i < k->num_params; i++)
    if (args[i].buffer && k->params[i]->type.role != XC_ROLE_IN) ref[i] = args[i].buffer;
}

/* Loads blob (released here) on dev, launches entry xk_<name> of k with
 * knob_values on args (inputs uploaded, outputs poisoned, sentinels after
 * every buffer), and compares each output with ref. Returns whether it ran. */
static inline bool kernel_launch_check(xc_device_t* dev, xc_blob_t* blob, const kern_t* k, const int64_t* knob_values,
                                       const xc_tiled_arg_t* args, xc_tensor_t* const* ref, const char* label,
                                       bool verbose) {
  enum { S = KERNEL_HARNESS_SENTINEL };
  const xc_device_caps_t* caps = xc_device_caps(dev);
  xc_module_t* module = NULL;
  xc_kernel_t* kernel = NULL;
  char entry[160];
  snprintf(entry, sizeof entry, "xk_%s", k->name);
  CHECK_OK(xc_module_load(dev, blob, &module));
  if (module) CHECK_OK(xc_module_kernel(module, entry, &kernel));
  xc_blob_release(blob);
  xc_buffer_t* bufs[16] = {0};
  int64_t scalars[16], params[16];
  int nb = 0, ns = 0;
  for (int i = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    params[i] = 0;
    if (p->type.kind != XC_TILED_MEMREF) {
      params[i] = scalars[ns++] = args[i].scalar;
      continue;
    }
    size_t bytes = (size_t)args[i].buffer->numel * xc_dtype_size(p->type.dtype);
    uint8_t* host = malloc(bytes + S);
    if (p->type.role == XC_ROLE_OUT) memset(host, 0xff, bytes); /* NaN in every float dtype */
    else memcpy(host, args[i].buffer->data, bytes);
    memset(host + bytes, 0xa5, S);
    CHECK_OK(xc_buffer_alloc(dev, bytes + S, &bufs[nb]));
    if (bufs[nb]) CHECK_OK(xc_buffer_write(bufs[nb], 0, host, bytes + S));
    free(host);
    nb++;
  }
  int64_t kv_[16];
  memcpy(kv_, knob_values, sizeof(int64_t) * (size_t)k->num_knobs);
  xc_launch_t launch;
  memset(&launch, 0, sizeof launch);
  for (int a = 0; a < k->grid_rank; a++) CHECK_OK(xc_texpr_eval(k->grid[a], kv_, params, NULL, &launch.grid[a]));
  launch.threads[0] = caps->max_threads_per_group > 1 ? xc_tiled_threads(k, kv_) : 1;
  launch.buffers = bufs;
  launch.num_buffers = nb;
  launch.scalars = scalars;
  launch.num_scalars = ns;
  if (kernel) {
    CHECK_OK(xc_kernel_launch(kernel, &launch));
    CHECK_OK(xc_device_synchronize(dev));
  }
  for (int i = 0, b = 0; i < k->num_params; i++) {
    const xc_tiled_value_t* p = k->params[i];
    if (p->type.kind != XC_TILED_MEMREF) continue;
    xc_buffer_t* buf = bufs[b++];
    if (p->type.role == XC_ROLE_IN || !buf) continue;
    const xc_tensor_t* r = ref[i];
    size_t bytes = (size_t)r->numel * xc_dtype_size(p->type.dtype);
    uint8_t* host = malloc(bytes + S);
    CHECK_OK(xc_buffer_read(buf, 0, host, bytes + S));
    int bad_sentinel = 0;
    for (int s = 0; s < S; s++) bad_sentinel += host[bytes + (size_t)s] != 0xa5;
    if (bad_sentinel) fprintf(stderr, "%s: write past the end of %s\n", label, p->name);
    CHECK_EQ_INT(bad_sentinel, 0);
    xc_tensor_t* got = tensor(p->type.dtype, r->numel, false);
    memcpy(got->data, host, bytes);
    double err = rel_l2(got, r);
    double tol = p->type.dtype == XC_F32 || p->type.dtype == XC_F64 ? 1e-5 : 0;
    if (strncmp(k->name, "gemm_", 5) == 0 && (p->type.dtype == XC_F16 || p->type.dtype == XC_BF16)) tol = 2e-3;
    /* 16-bit probabilities: a rounding of exp's f32 result may differ from
     * the interpreter's by one 16-bit step */
    if (strncmp(k->name, "attention_half", 14) == 0) tol = 2e-3;
    if (!(err <= tol)) fprintf(stderr, "%s: output %s rel-L2 %g\n", label, p->name, err);
    else if (verbose) printf("%s: %s rel-L2 %.3g\n", label, p->name, err);
    CHECK(err <= tol);
    xc_tensor_destroy(got);
    free(host);
  }
  for (int i = 0; i < nb; i++) xc_buffer_free(bufs[i]);
  xc_module_unload(module);
  return kernel != NULL;
}

#endif
