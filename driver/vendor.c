/* Vendor GEMMs: a GEMM fusion group (MatMul or Gemm, optionally + a bias row
 * and ReLU or tanh-form GELU, or a SwiGLU with a tensor of the product's
 * shape, reshapes of its output (views; a bias only
 * while rows of n are kept); static shapes, a
 * 2-D B, A 2-D or with leading dims that are rows; f32/f16/bf16) may run
 * through the target's
 * vendor library (cuBLASLt on cuda) instead of the generated kernel. Where a
 * device of the target reports has_vendor_blas, both are run on it on random
 * inputs: the outputs must agree at the dtype's tolerance, and the faster one
 * (by device events, median of several runs) is kept in the module — the
 * kernel's blob becomes an XC_VENDOR_GEMM_FORMAT blob when the library wins.
 * The choice is thus recorded in the module and reused from the cache. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"

/* ---- which groups qualify ---- */

static bool static_dims(const xc_value_t* v, int64_t* d) {
  for (int i = 0; i < v->rank; i++) {
    if (!xc_dim_is_static(v->dims[i])) return false;
    d[i] = v->dims[i].value;
  }
  return true;
}

/* A bias for Y [m, n]: a value of shape [n] or [1, n]. */
static bool is_bias(const xc_value_t* v, int64_t n) {
  int64_t d[XC_MAX_RANK];
  if (!v || !static_dims(v, d)) return false;
  return (v->rank == 1 && d[0] == n) || (v->rank == 2 && d[0] == 1 && d[1] == n);
}

static int buffer_position(const xc_lowered_kernel_t* lk, const xc_value_t* v) {
  int pos = 0;
  for (int i = 0; i < lk->num_params; i++) {
    if (!lk->param_values[i]) continue;
    if (lk->param_values[i] == v) return pos;
    pos++;
  }
  return -1;
}

/* The buffer position of v, or else of `bytes_of`, the value it views. */
static int view_position(const xc_lowered_kernel_t* lk, const xc_value_t* v, const xc_value_t* bytes_of) {
  int p = buffer_position(lk, v);
  return p >= 0 ? p : buffer_position(lk, bytes_of);
}

static bool candidate(const xc_fusion_group_t* grp, const xc_lowered_kernel_t* lk, bool allow_tf32,
                      xc_vendor_gemm_t* out) {
  memset(out, 0, sizeof *out);
  if (grp->num_nodes < 1 || grp->num_nodes > 6 || grp->num_outputs != 1) return false;
  /* Reshapes before the product are views of its operands' bytes (GPT-2's
   * Conv1D export: a 2-D view of the activations into Gemm). */
  int gi = 0;
  while (gi < grp->num_nodes && strcmp(grp->nodes[gi]->op_type, "Reshape") == 0) gi++;
  if (gi == grp->num_nodes) return false;
  const xc_node_t* g = grp->nodes[gi];
  bool gemm = strcmp(g->op_type, "Gemm") == 0;
  if (!gemm && strcmp(g->op_type, "MatMul") != 0) return false;
  const xc_value_t *A = g->inputs[0], *B = g->inputs[1], *Y = g->outputs[0], *bias = NULL;
  int64_t da[XC_MAX_RANK], db[XC_MAX_RANK];
  /* A MatMul's A may have leading dims ([batch, seq, k] against a 2-D
   * weight): its rows are those of one [m, k] matrix, m their product. */
  if (!A || !B || A->rank < 2 || (gemm && A->rank != 2) || B->rank != 2 || !static_dims(A, da) ||
      !static_dims(B, db))
    return false;
  xc_dtype_t dt = A->dtype;
  if (!(dt == XC_F32 || dt == XC_F16 || dt == XC_BF16) || B->dtype != dt || Y->dtype != dt) return false;
  bool ta = gemm && xc_node_attr_int(g, "transA"), tb = gemm && xc_node_attr_int(g, "transB");
  const xc_value_t *a_src = A, *b_src = B;
  for (int i = gi - 1; i >= 0; i--) {
    const xc_node_t* nd = grp->nodes[i];
    if (nd->outputs[0] == a_src) a_src = nd->inputs[0];
    else if (nd->outputs[0] == b_src) b_src = nd->inputs[0];
    else return false;
  }
  int64_t rows = 1;
  for (int d = 0; d + 1 < A->rank; d++) rows *= da[d];
  int64_t m = ta ? da[1] : rows, k = ta ? da[0] : da[A->rank - 1], kb = tb ? db[1] : db[0], n = tb ? db[0] : db[1];
  if (k != kb || m < 1 || n < 1 || k < 1) return false;
  if (gemm) {
    if (xc_node_attr_float(g, "alpha") != 1.0) return false;
    const xc_value_t* C = g->num_inputs > 2 ? g->inputs[2] : NULL;
    if (C && xc_node_attr_float(g, "beta") != 0.0) {
      if (xc_node_attr_float(g, "beta") != 1.0 || !is_bias(C, n) || C->dtype != dt) return false;
      bias = C;
    }
  }
  bool relu = false, gelu = false, swiglu_a = false;
  const xc_value_t *cur = Y, *computed = Y; /* computed: the last output that is not a view */
  const xc_value_t* u = NULL;               /* SwiGLU's other tensor */
  for (int i = gi + 1; i < grp->num_nodes; i++) {
    const xc_node_t* nd = grp->nodes[i];
    if (u && strcmp(nd->op_type, "Reshape") != 0) return false; /* nothing after the SwiGLU but views */
    if (strcmp(nd->op_type, "SwiGLU") == 0 && nd->domain && strcmp(nd->domain, "xcomp") == 0 && !bias && !relu &&
        !gelu && nd->num_inputs == 2 && (nd->inputs[0] == cur || nd->inputs[1] == cur)) {
      /* SwiGLU(a, b) = silu(a) b with the product as a or b and U of its
       * shape and dtype: elementwise over the same row-major bytes */
      const xc_value_t* other = nd->inputs[0] == cur ? nd->inputs[1] : nd->inputs[0];
      int64_t dc[XC_MAX_RANK], du[XC_MAX_RANK];
      if (!other || other == cur || other->dtype != dt || other->rank != cur->rank || !static_dims(cur, dc) ||
          !static_dims(other, du) || memcmp(dc, du, sizeof *dc * (size_t)cur->rank) != 0)
        return false;
      u = other;
      swiglu_a = nd->inputs[0] == cur;
    } else if (strcmp(nd->op_type, "Add") == 0 && !bias && !relu && !gelu && nd->num_inputs == 2) {
      const xc_value_t* other = nd->inputs[0] == cur ? nd->inputs[1] : nd->inputs[1] == cur ? nd->inputs[0] : NULL;
      if (!other || !is_bias(other, n) || other->dtype != dt) return false;
      /* the sum keeps the product's shape, whose rows are n long (the
       * bias row broadcasts along them; not after a reshape that split them) */
      int64_t dc[XC_MAX_RANK];
      if (nd->outputs[0]->rank != cur->rank || !static_dims(cur, dc) || cur->rank < 1 || dc[cur->rank - 1] != n)
        return false;
      bias = other;
    } else if (strcmp(nd->op_type, "Relu") == 0 && !relu && !gelu && nd->inputs[0] == cur) {
      relu = true;
    } else if (strcmp(nd->op_type, "Gelu") == 0 && !relu && !gelu && nd->inputs[0] == cur) {
      /* the libraries' GELU epilogue is the tanh form */
      const char* ap = xc_node_attr_string(nd, "approximate");
      if (!ap || strcmp(ap, "tanh") != 0) return false;
      gelu = true;
    } else if (strcmp(nd->op_type, "Reshape") == 0 && nd->inputs[0] == cur) {
      /* a view of the same row-major bytes, whatever its dims (the heads'
       * split of a projection, [b, s, h * d] -> [b, s, h, d]); a bias after
       * it must still broadcast along rows of n (checked at the Add) */
      const xc_value_t* o = nd->outputs[0];
      int64_t d[XC_MAX_RANK];
      if (!static_dims(o, d) || o->rank < 1) return false;
    } else {
      return false;
    }
    cur = nd->outputs[0];
    if (strcmp(nd->op_type, "Reshape") != 0) computed = cur;
  }
  if (cur != grp->outputs[0]) return false;
  out->dtype = dt;
  out->trans_a = ta;
  out->trans_b = tb;
  out->m = m;
  out->n = n;
  out->k = k;
  out->epilogue = bias ? (relu ? XC_VENDOR_EPILOGUE_BIAS_RELU : gelu ? XC_VENDOR_EPILOGUE_BIAS_GELU : XC_VENDOR_EPILOGUE_BIAS)
                       : (relu ? XC_VENDOR_EPILOGUE_RELU : gelu ? XC_VENDOR_EPILOGUE_GELU : XC_VENDOR_EPILOGUE_NONE);
  if (u) out->epilogue = swiglu_a ? XC_VENDOR_EPILOGUE_SWIGLU_A : XC_VENDOR_EPILOGUE_SWIGLU_B;
  /* The lowering may leave the views to alias steps around the kernel:
   * then its buffers are the viewed values (same bytes). */
  out->a = view_position(lk, A, a_src);
  out->b = view_position(lk, B, b_src);
  out->y = view_position(lk, cur, computed);
  out->bias = bias ? buffer_position(lk, bias) : -1;
  out->allow_tf32 = allow_tf32;
  out->u = u ? buffer_position(lk, u) : -1;
  return out->a >= 0 && out->b >= 0 && out->y >= 0 && (!bias || out->bias >= 0) && (!u || out->u >= 0);
}

void xc_drv_vendor_candidates(const xc_fusion_plan_t* plan, const xc_lowered_module_t* lm, bool allow_tf32,
                             bool* has, xc_vendor_gemm_t* cands) {
  for (int i = 0; i < lm->num_kernels; i++) {
    const xc_lowered_kernel_t* lk = &lm->kernels[i];
    has[i] = plan && lk->group >= 0 && lk->group < plan->num_groups &&
             candidate(&plan->groups[lk->group], lk, allow_tf32, &cands[i]);
  }
}

/* ---- measuring ---- */

double xc_drv_element(const uint8_t* p, xc_dtype_t t, size_t i) {
  switch (t) {
    case XC_F32: {
      float f;
      memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case XC_F64: {
      double d;
      memcpy(&d, p + 8 * i, 8);
      return d;
    }
    case XC_F16:
    case XC_BF16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      return t == XC_F16 ? xc_f16_to_f32(h) : xc_bf16_to_f32(h);
    }
    default:
      return 0;
  }
}

void xc_drv_fill_random(uint8_t* p, xc_dtype_t t, size_t n, uint32_t seed) {
  /* The first FILL_PERIOD values from the generator, then copies of them: a
   * prime period lines up with no power-of-two row length, and a 77 MB
   * weight (GPT-2's LM head) fills at copying speed, not at 13 ns a value. */
  enum { FILL_PERIOD = 65521 };
  bool is_float = t == XC_F32 || t == XC_F64 || t == XC_F16 || t == XC_BF16;
  if (!is_float) return; /* integers and booleans stay as they are (zero in fresh buffers) */
  size_t first = n < FILL_PERIOD ? n : FILL_PERIOD, es = xc_dtype_size(t);
  uint32_t x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < first; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    double v = (double)(x >> 8) / (double)(1u << 23) - 1.0;
    if (t == XC_F32) {
      float f = (float)v;
      memcpy(p + 4 * i, &f, 4);
    } else if (t == XC_F64) {
      memcpy(p + 8 * i, &v, 8);
    } else {
      uint16_t h = t == XC_F16 ? xc_f64_to_f16(v) : xc_f64_to_bf16(v);
      memcpy(p + 2 * i, &h, 2);
    }
  }
  /* doubling copies keep the period: each copies a multiple of it from 0 */
  for (size_t done = first; done < n;) {
    size_t c = done < n - done ? done : n - done;
    memcpy(p + done * es, p, c * es);
    done += c;
  }
}

/* The relative L2 distance of got from ref (n floats of dtype t); the
 * absolute one where ref is all zeros. */
static double rel_l2(const uint8_t* ref, const uint8_t* got, xc_dtype_t t, size_t n) {
  double num = 0, den = 0;
  if (t == XC_BF16) { /* the common case, without a call per element */
    for (size_t i = 0; i < n; i++) {
      uint16_t hr, hg;
      memcpy(&hr, ref + 2 * i, 2);
      memcpy(&hg, got + 2 * i, 2);
      uint32_t br = (uint32_t)hr << 16, bg = (uint32_t)hg << 16;
      float r, g;
      memcpy(&r, &br, 4);
      memcpy(&g, &bg, 4);
      double d = (double)g - (double)r;
      num += d * d;
      den += (double)r * r;
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      double r = xc_drv_element(ref, t, i), d = xc_drv_element(got, t, i) - r;
      num += d * d;
      den += r * r;
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct trial {
  xc_device_t* dev;
  xc_buffer_t* bufs[XC_TARGET_MAX_ARGS];
  xc_launch_t launch;
} trial_t;

enum { LAUNCHES_PER_GRAPH = 10 };

/* The replayed form of xc_drv_time_launch; an error means "time launches
 * alone instead" (the device is back in normal mode). */
static xc_status_t time_replayed(xc_device_t* dev, xc_kernel_t* k, const xc_launch_t* launch, int runs, double* ms) {
  XC_RETURN_IF_ERROR(xc_device_capture_begin(dev));
  xc_status_t ls = NULL;
  for (int i = 0; i < LAUNCHES_PER_GRAPH && !ls; i++) ls = xc_kernel_launch(k, launch);
  xc_launch_graph_t* g = NULL;
  xc_status_t s = xc_device_capture_end(dev, &g);
  if (ls) {
    xc_launch_graph_free(g);
    xc_status_free(s);
    return ls;
  }
  if (!s) s = xc_launch_graph_run(g); /* a first replay: the graph's own set-up */
  for (int r = 0; !s && r < runs; r++) {
    xc_event_t *a = NULL, *b = NULL;
    s = xc_event_record(dev, &a);
    if (!s) s = xc_launch_graph_run(g);
    if (!s) s = xc_event_record(dev, &b);
    if (!s) s = xc_event_elapsed_ms(a, b, &ms[r]);
    if (!s) ms[r] /= LAUNCHES_PER_GRAPH;
    xc_event_free(a);
    xc_event_free(b);
  }
  if (!s) s = xc_device_synchronize(dev);
  xc_launch_graph_free(g);
  return s;
}

xc_status_t xc_drv_time_launch(xc_device_t* dev, xc_kernel_t* k, const xc_launch_t* launch, int runs,
                               bool allow_replay, double* out_ms, bool* replayed) {
  double ms[16];
  if (runs < 1 || runs > 16) return xc_error(XC_INVALID_ARGUMENT, "xc_drv_time_launch: runs %d not in 1..16", runs);
  *replayed = false;
  for (int r = 0; r < 2; r++) XC_RETURN_IF_ERROR(xc_kernel_launch(k, launch));
  if (allow_replay && xc_device_can_capture(dev)) {
    xc_status_t s = time_replayed(dev, k, launch, runs, ms);
    *replayed = s == NULL;
    xc_status_free(s);
  }
  for (int r = 0; !*replayed && r < runs; r++) {
    xc_event_t *a = NULL, *b = NULL;
    xc_status_t s = xc_event_record(dev, &a);
    if (!s) s = xc_kernel_launch(k, launch);
    if (!s) s = xc_event_record(dev, &b);
    if (!s) s = xc_event_elapsed_ms(a, b, &ms[r]);
    xc_event_free(a);
    xc_event_free(b);
    XC_RETURN_IF_ERROR(s);
  }
  qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
  *out_ms = ms[runs / 2];
  return NULL;
}

static xc_status_t run_once(trial_t* t, xc_kernel_t* k, xc_buffer_t* y, uint8_t* host, size_t bytes) {
  XC_RETURN_IF_ERROR(xc_kernel_launch(k, &t->launch));
  XC_RETURN_IF_ERROR(xc_device_synchronize(t->dev));
  return xc_buffer_read(y, 0, host, bytes);
}

/* One candidate: both versions on random inputs; on success *use_vendor says
 * which to keep and note what was measured. */
static xc_status_t measure(xc_device_t* dev, const xc_compiled_module_t* m, int kernel, int step,
                           const xc_vendor_gemm_t* v, const xc_blob_t* vendor_blob, bool* use_vendor, char* note,
                           size_t note_size) {
  *use_vendor = false;
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  xc_cm_step_launch_t sl;
  xc_status_t s = xc_cm_step_launch(m, step, &binds, xc_device_caps(dev)->max_threads_per_group, &sl);
  xc_symbind_free(&binds);
  XC_RETURN_IF_ERROR(s);
  if (sl.empty) {
    snprintf(note, note_size, "empty grid: generated kernel kept");
    return NULL;
  }
  trial_t t;
  memset(&t, 0, sizeof t);
  t.dev = dev;
  size_t ybytes = 0;
  uint8_t *host = NULL, *ref = NULL;
  xc_module_t *gm = NULL, *vm = NULL;
  xc_kernel_t *gk = NULL, *vk = NULL;
  for (int i = 0; !s && i < sl.num_values; i++) {
    const xc_cm_value_t* val = &m->values[sl.values[i]];
    int64_t numel = 1, d = 0;
    xc_symbind_t none;
    xc_symbind_init(&none);
    for (int j = 0; !s && j < val->rank; j++) {
      s = xc_dim_eval(val->dims[j], &none, &d);
      if (!s && !xc_mul_i64(numel, d, &numel)) s = xc_error(XC_OUT_OF_RANGE, "size overflows");
    }
    xc_symbind_free(&none);
    size_t bytes = (size_t)numel * xc_dtype_size(val->dtype);
    if (!s) s = xc_buffer_alloc(dev, bytes, &t.bufs[i]);
    uint8_t* data = s ? NULL : malloc(bytes ? bytes : 1);
    if (!s && !data) s = xc_error_oom();
    if (!s) {
      xc_drv_fill_random(data, val->dtype, (size_t)numel, (uint32_t)(i + 1));
      s = xc_buffer_write(t.bufs[i], 0, data, bytes);
    }
    free(data);
    if (i == v->y) ybytes = bytes;
  }
  for (int a = 0; a < 3; a++) {
    t.launch.grid[a] = sl.grid[a];
    t.launch.threads[a] = sl.threads[a];
  }
  t.launch.buffers = t.bufs;
  t.launch.num_buffers = sl.num_values;
  t.launch.scalars = sl.scalars;
  t.launch.num_scalars = sl.num_scalars;
  if (!s) s = xc_module_load(dev, &m->kernels[kernel].blob, &gm);
  if (!s) s = xc_module_kernel(gm, m->kernels[kernel].entry, &gk);
  xc_status_t vs = s ? NULL : xc_module_load(dev, vendor_blob, &vm);
  if (!s && !vs) vs = xc_module_kernel(vm, "vendor_gemm", &vk);
  if (!s && vs) {
    snprintf(note, note_size, "vendor library declined (%s): generated kernel kept", xc_status_message(vs));
    xc_status_free(vs);
    vk = NULL;
  }
  host = malloc(ybytes ? ybytes : 1);
  ref = malloc(ybytes ? ybytes : 1);
  if (!s && (!host || !ref)) s = xc_error_oom();
  if (!s && vk) s = run_once(&t, gk, t.bufs[v->y], ref, ybytes);
  if (!s && vk) s = run_once(&t, vk, t.bufs[v->y], host, ybytes);
  if (!s && vk) {
    double err = rel_l2(ref, host, v->dtype, ybytes / xc_dtype_size(v->dtype));
    double tol = v->dtype == XC_BF16 ? 1.6e-2 : v->dtype == XC_F16 ? 2e-3 : v->allow_tf32 ? 5e-3 : 1e-5;
    if (!(err <= tol)) {
      snprintf(note, note_size, "vendor library result differs (rel-L2 %.2g > %.2g): generated kernel kept", err,
               tol);
    } else {
      double tg = 0, tv = 0;
      bool rg = false, rv = false;
      s = xc_drv_time_launch(dev, gk, &t.launch, 7, true, &tg, &rg);
      if (!s) s = xc_drv_time_launch(dev, vk, &t.launch, 7, true, &tv, &rv);
      if (!s && rg != rv) { /* one side could not be replayed: both timed alone, alike */
        s = xc_drv_time_launch(dev, gk, &t.launch, 7, false, &tg, &rg);
        if (!s) s = xc_drv_time_launch(dev, vk, &t.launch, 7, false, &tv, &rv);
      }
      if (!s) {
        *use_vendor = tv < 0.97 * tg;
        snprintf(note, note_size, "vendor library %.4f ms, generated %.4f ms (%s; rel-L2 %.1e): %s", tv, tg,
                 rg && rv ? "replayed" : "launched alone", err,
                 *use_vendor ? "vendor library chosen" : "generated kernel kept");
      }
    }
  }
  free(host);
  free(ref);
  xc_module_unload(gm);
  xc_module_unload(vm);
  for (int i = 0; i < sl.num_values; i++) xc_buffer_free(t.bufs[i]);
  return s;
}

/* The same GEMM for the race: shape, dtype, transposes, epilogue (where its
 * buffers sit among the kernel's parameters does not change the timing). */
static bool same_gemm(const xc_vendor_gemm_t* a, const xc_vendor_gemm_t* b) {
  return a->dtype == b->dtype && a->trans_a == b->trans_a && a->trans_b == b->trans_b && a->m == b->m &&
         a->n == b->n && a->k == b->k && a->epilogue == b->epilogue && a->allow_tf32 == b->allow_tf32;
}

/* The vendor-gemm blob of g (the library's module in place of a kernel). */
static xc_status_t vendor_blob(const xc_vendor_gemm_t* g, xc_blob_t* out) {
  memset(out, 0, sizeof *out);
  snprintf(out->format, sizeof out->format, "%s", XC_VENDOR_GEMM_FORMAT);
  if (!(out->bytes = malloc(XC_VENDOR_GEMM_BYTES))) return xc_error_oom();
  out->size = XC_VENDOR_GEMM_BYTES;
  xc_vendor_gemm_pack(g, out->bytes);
  return NULL;
}

/* The index of a device of target with capabilities caps (the race
 * measures on it), or -1 where none is here. */
static xc_status_t race_device_index(xc_target_t* target, const xc_device_caps_t* caps, int* index) {
  *index = -1;
  int count = 0;
  XC_RETURN_IF_ERROR(xc_target_device_count(target, &count));
  xc_hash128_t fp = xc_device_caps_fingerprint(caps);
  for (int d = 0; d < count && *index < 0; d++) {
    xc_device_caps_t c;
    xc_status_t cs = xc_target_device_caps(target, d, &c);
    if (cs) {
      xc_status_free(cs);
      continue;
    }
    xc_hash128_t f = xc_device_caps_fingerprint(&c);
    if (f.lo == fp.lo && f.hi == fp.hi) *index = d;
  }
  return NULL;
}

static void* race_prep_main(void* arg) {
  xc_drv_race_prep_t* p = arg;
  double t0 = xc_drv_now_ms();
  int index = -1;
  p->status = race_device_index(p->target, &p->caps, &index);
  if (!p->status && index >= 0) p->status = xc_target_open_device(p->target, index, &p->dev);
  if (!p->status && p->dev) {
    /* The vendor library's own set-up (cuBLASLt: loading the library, a
     * handle, its workspace) through a small GEMM's module, kept by the
     * device; where it fails, the race says so for each GEMM. */
    xc_blob_t blob;
    xc_status_t bs = vendor_blob(&p->probe, &blob);
    xc_module_t* mod = NULL;
    if (!bs) xc_status_free(xc_module_load(p->dev, &blob, &mod));
    xc_status_free(bs);
    xc_module_unload(mod);
    xc_blob_release(&blob);
  }
  p->ms = xc_drv_now_ms() - t0;
  return NULL;
}

void xc_drv_race_prep_begin(xc_drv_race_prep_t* p, xc_target_t* target, const xc_device_caps_t* caps, const bool* has,
                            const xc_vendor_gemm_t* cands, int n) {
  memset(p, 0, sizeof *p);
  int first = -1;
  for (int i = 0; i < n && first < 0; i++)
    if (has[i]) first = i;
  if (first < 0 || !caps->has_vendor_blas) return;
  p->target = target;
  p->caps = *caps;
  p->probe.dtype = cands[first].dtype;
  p->probe.m = p->probe.n = p->probe.k = 128;
  p->probe.epilogue = XC_VENDOR_EPILOGUE_NONE;
  p->probe.a = 0;
  p->probe.b = 1;
  p->probe.bias = -1;
  p->probe.y = 2;
  p->probe.allow_tf32 = cands[first].allow_tf32;
  p->probe.u = -1;
  /* a SwiGLU candidate: the target's elementwise step is set up too */
  for (int i = 0; i < n; i++)
    if (has[i] && (cands[i].epilogue == XC_VENDOR_EPILOGUE_SWIGLU_A || cands[i].epilogue == XC_VENDOR_EPILOGUE_SWIGLU_B)) {
      p->probe.epilogue = cands[i].epilogue;
      p->probe.u = 3;
      break;
    }
  p->started = pthread_create(&p->thread, NULL, race_prep_main, p) == 0;
}

xc_device_t* xc_drv_race_prep_end(xc_drv_race_prep_t* p, double* waited_ms) {
  double t0 = xc_drv_now_ms();
  if (p->started) pthread_join(p->thread, NULL);
  if (waited_ms) *waited_ms = xc_drv_now_ms() - t0;
  p->started = false;
  xc_status_free(p->status); /* the race opens the device itself again and reports why not */
  p->status = NULL;
  xc_device_t* dev = p->dev;
  p->dev = NULL;
  return dev;
}

xc_status_t xc_drv_vendor_choose(xc_compiled_module_t* m, xc_target_t* target, const xc_device_caps_t* caps,
                                const bool* has, const xc_vendor_gemm_t* cands, xc_device_t* dev, FILE* progress) {
  bool any = false;
  for (int i = 0; i < m->num_kernels; i++) any = any || has[i];
  if (!any || !caps->has_vendor_blas) {
    xc_device_close(dev);
    return NULL;
  }
  if (!dev) {
    int index = -1;
    XC_RETURN_IF_ERROR(race_device_index(target, caps, &index));
    if (index < 0) return NULL; /* compiling for a device that is not here: nothing to measure on */
    XC_RETURN_IF_ERROR(xc_target_open_device(target, index, &dev));
  }
  /* Each distinct race once: a kernel computing the same GEMM (shape, dtype,
   * epilogue: the same layer repeated, or another layer of that shape)
   * takes the earlier decision. */
  signed char* decided = calloc((size_t)m->num_kernels + 1, 1); /* -1 none, 0 kept, 1 vendor */
  xc_status_t s = decided ? NULL : xc_error_oom();
  for (int k = 0; !s && k < m->num_kernels; k++) decided[k] = -1;
  for (int k = 0; !s && k < m->num_kernels; k++) {
    if (!has[k]) continue;
    int same = -1;
    for (int j = 0; j < k && same < 0; j++)
      if (decided[j] >= 0 && same_gemm(&cands[j], &cands[k])) same = j;
    if (same >= 0) {
      decided[k] = decided[same];
      if (decided[k]) {
        xc_blob_t blob;
        if ((s = vendor_blob(&cands[k], &blob))) break;
        xc_blob_release(&m->kernels[k].blob);
        m->kernels[k].blob = blob;
        snprintf(m->kernels[k].entry, sizeof m->kernels[k].entry, "vendor_gemm");
      }
      continue;
    }
    int step = -1;
    for (int i = 0; i < m->num_steps && step < 0; i++)
      if (m->steps[i].kind == XC_CM_STEP_KERNEL && m->steps[i].kernel == k) step = i;
    if (step < 0) continue;
    xc_blob_t blob;
    if ((s = vendor_blob(&cands[k], &blob))) break;
    bool use = false;
    char note[512] = "";
    double t0 = xc_drv_now_ms();
    s = measure(dev, m, k, step, &cands[k], &blob, &use, note, sizeof note);
    if (s) s = xc_status_annotate(s, "measuring kernel '%s' against the vendor GEMM", m->kernels[k].name);
    if (!s && progress)
      fprintf(progress, "xcomp: kernel %s (%lldx%lldx%lld %s GEMM): %s [raced in %.0f ms]\n", m->kernels[k].name,
              (long long)cands[k].m, (long long)cands[k].n, (long long)cands[k].k, xc_dtype_name(cands[k].dtype),
              note, xc_drv_now_ms() - t0);
    if (!s) decided[k] = use ? 1 : 0;
    if (!s && use) {
      xc_blob_release(&m->kernels[k].blob);
      m->kernels[k].blob = blob;
      snprintf(m->kernels[k].entry, sizeof m->kernels[k].entry, "vendor_gemm");
    } else {
      xc_blob_release(&blob);
    }
  }
  free(decided);
  xc_device_close(dev);
  return s;
}
