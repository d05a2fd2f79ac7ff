/* Whole models through the emitter: the vendored models (tests/models) are
 * imported, optimized, fused and lowered to tiled kernels; every kernel is
 * emitted, compiled and launched on `cpu` and `opencl` (skipped without a
 * platform) step by step, and the model outputs are compared with the
 * lowered module run by the tiled interpreter (rel-L2 <= 1e-5). Kernels a
 * target declines or cannot fit are reported and make the model fail. */
#include <stdlib.h>

#include "test.h"
#include "xcomp/frontend.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/passes.h"
#include "xcomp/target.h"
#include "xcomp/tensor_io.h"

#include "../../targets/cstyle/cstyle.h"

static double rel_l2(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (a->numel != b->numel) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = xc_tensor_get_f64(a, i), y = xc_tensor_get_f64(b, i);
    if (isnan(x) || isnan(y)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return sqrt(num / (den > 0 ? den : 1));
}

static const xc_tensor_t* constant_of(const xc_value_t* v) {
  if (v->constant) return v->constant;
  if (v->producer && !strcmp(v->producer->op_type, "Constant")) return xc_node_attr_tensor(v->producer, "value");
  return NULL;
}

static bool is_alias_dst(const xc_lowered_module_t* m, const xc_value_t* v) {
  for (int i = 0; i < m->num_steps; i++)
    if (m->steps[i].kind == XC_STEP_ALIAS && m->steps[i].dst == v) return true;
  return false;
}

/* Launches one lowered kernel on dev with host tensors as its buffers. */
static xc_status_t launch_kernel(xc_device_t* dev, const xc_lowered_kernel_t* lk, xc_tensor_t* const* bufs,
                                 const int64_t* params) {
  const xc_tiled_kernel_t* k = lk->kernel;
  xc_target_t* t = xc_device_target(dev);
  const xc_device_caps_t* caps = xc_device_caps(dev);
  char why[512];
  if (!xc_target_supports(t, caps, (const struct xc_tiled_kernel*)k, why, sizeof why))
    return xc_error(XC_UNSUPPORTED, "kernel %s declined: %s", k->name, why);
  xc_knob_t knobs[64];
  for (int i = 0; i < k->num_knobs && i < 64; i++) knobs[i] = (xc_knob_t){k->knobs[i].name, lk->knobs[i]};
  /* XCOMP_EMIT_TEST_DUMP=<kernel name>: print its tiled IR and emitted source */
  const char* dump = getenv("XCOMP_EMIT_TEST_DUMP");
  if (dump && !strcmp(dump, k->name)) {
    xc_tiled_print(k, stdout);
    xc_kernel_source_t src;
    if (!xc_target_emit(t, caps, (const struct xc_tiled_kernel*)k, knobs, k->num_knobs, &src)) {
      fputs(src.text, stdout);
      xc_kernel_source_release(&src);
    }
  }
  xc_blob_t blob;
  XC_RETURN_IF_ERROR(
      xc_target_compile_kernel(t, caps, (const struct xc_tiled_kernel*)k, knobs, k->num_knobs, NULL, &blob));
  xc_module_t* module = NULL;
  xc_kernel_t* kernel = NULL;
  char entry[160], kname[140];
  size_t n = 0;
  for (const char* c = k->name; *c && n + 1 < sizeof kname; c++)
    kname[n++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')) ? *c : '_';
  kname[n] = 0;
  snprintf(entry, sizeof entry, "xk_%s%s", (kname[0] >= '0' && kname[0] <= '9') || !kname[0] ? "v" : "", kname);
  xc_status_t s = xc_module_load(dev, &blob, &module);
  xc_blob_release(&blob);
  if (!s) s = xc_module_kernel(module, entry, &kernel);
  xc_buffer_t* dbufs[XC_TARGET_MAX_ARGS] = {0};
  int64_t scalars[XC_TARGET_MAX_ARGS];
  int nb = 0, ns = 0;
  for (int p = 0; p < lk->num_params && !s; p++) {
    if (lk->kernel->params[p]->type.kind != XC_TILED_MEMREF) {
      scalars[ns++] = params[p];
      continue;
    }
    /* parameters bound to the same tensor (a view and its source) share one device buffer */
    int same = -1;
    for (int q = 0, b = 0; q < p; q++)
      if (lk->kernel->params[q]->type.kind == XC_TILED_MEMREF) {
        if (bufs[q] == bufs[p]) same = b;
        b++;
      }
    size_t bytes = (size_t)bufs[p]->numel * xc_dtype_size(bufs[p]->dtype);
    if (same >= 0) {
      dbufs[nb++] = dbufs[same];
      continue;
    }
    s = xc_buffer_alloc(dev, bytes, &dbufs[nb]);
    if (!s && bytes) s = xc_buffer_write(dbufs[nb], 0, bufs[p]->data, bytes);
    nb++;
  }
  if (!s) {
    xc_launch_t launch;
    memset(&launch, 0, sizeof launch);
    for (int a = 0; a < k->grid_rank && !s; a++) s = xc_texpr_eval(k->grid[a], lk->knobs, params, NULL, &launch.grid[a]);
    launch.threads[0] = caps->max_threads_per_group > 1 ? xc_tiled_threads(k, lk->knobs) : 1;
    launch.buffers = dbufs;
    launch.num_buffers = nb;
    launch.scalars = scalars;
    launch.num_scalars = ns;
    if (!s && launch.grid[0] * (launch.grid[1] ? launch.grid[1] : 1) * (launch.grid[2] ? launch.grid[2] : 1) > 0)
      s = xc_kernel_launch(kernel, &launch);
    if (!s) s = xc_device_synchronize(dev);
  }
  for (int p = 0, b = 0; p < lk->num_params; p++) {
    if (lk->kernel->params[p]->type.kind != XC_TILED_MEMREF) continue;
    xc_buffer_t* db = dbufs[b++];
    bool first = true;
    for (int q = 0; q < b - 1; q++) first &= dbufs[q] != db;
    if (!first) continue;
    if (!s && db) {
      size_t bytes = (size_t)bufs[p]->numel * xc_dtype_size(bufs[p]->dtype);
      if (bytes) s = xc_buffer_read(db, 0, bufs[p]->data, bytes);
    }
    if (db) xc_buffer_free(db);
  }
  if (module) xc_module_unload(module);
  return s ? xc_status_annotate(s, "kernel %s", k->name) : NULL;
}

/* xc_lowered_run_interp with every kernel launched on dev instead. */
static xc_status_t run_on_device(xc_device_t* dev, const xc_lowered_module_t* m, const xc_tensor_t* const* inputs,
                                 xc_tensor_t** outputs) {
  const xc_graph_t* g = m->graph;
  int nv = 1;
  for (int i = 0; i < g->num_values; i++)
    if (g->values[i] && g->values[i]->id + 1 > nv) nv = g->values[i]->id + 1;
  xc_tensor_t** of = calloc((size_t)nv, sizeof *of);
  bool* owned = calloc((size_t)nv, sizeof *owned);
  xc_symbind_t bind;
  xc_tensor_t* index_error = NULL; /* the index-error record of kernels that check indices */
  xc_symbind_init(&bind);
  xc_status_t s = (!of || !owned) ? xc_error_oom() : NULL;
  for (int i = 0; i < g->num_outputs; i++) outputs[i] = NULL;
  for (int i = 0; i < g->num_inputs && !s; i++) {
    for (int d = 0; d < g->inputs[i]->rank && !s; d++) s = xc_dim_unify(g->inputs[i]->dims[d], inputs[i]->dims[d], &bind);
    of[g->inputs[i]->id] = (xc_tensor_t*)inputs[i];
  }
  for (int i = 0; i < g->num_values && !s; i++) {
    const xc_value_t* v = g->values[i];
    if (!v || of[v->id]) continue;
    const xc_tensor_t* ct = constant_of(v);
    if (ct) {
      of[v->id] = (xc_tensor_t*)ct;
      continue;
    }
    if (!v->producer || is_alias_dst(m, v) || v->rank < 0) continue;
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < v->rank && !s; d++) s = xc_dim_eval(v->dims[d], &bind, &dims[d]);
    if (!s) s = xc_tensor_create(v->dtype, v->rank, dims, &of[v->id]);
    if (!s) {
      owned[v->id] = true;
      memset(of[v->id]->data, 0xff, (size_t)of[v->id]->numel * xc_dtype_size(v->dtype)); /* poison */
    }
  }
  for (bool progress = true; progress && !s;) {
    progress = false;
    for (int i = 0; i < m->num_steps; i++) {
      const xc_lowered_step_t* st = &m->steps[i];
      if (st->kind == XC_STEP_ALIAS && !of[st->dst->id] && of[st->src->id]) {
        of[st->dst->id] = of[st->src->id];
        progress = true;
      }
    }
  }
  for (int i = 0; i < m->num_steps && !s; i++) {
    const xc_lowered_step_t* st = &m->steps[i];
    if (st->kind == XC_STEP_ALIAS) continue;
    const xc_lowered_kernel_t* lk = &m->kernels[st->index];
    xc_tensor_t* bufs[XC_TARGET_MAX_ARGS] = {0};
    int64_t params[XC_TARGET_MAX_ARGS] = {0};
    for (int p = 0; p < lk->num_params && p < XC_TARGET_MAX_ARGS && !s; p++) {
      if (lk->num_index_checks && p == lk->index_error_param) {
        int64_t words = (int64_t)XC_INDEX_ERROR_WORDS * m->num_index_error_slots;
        if (!index_error) s = xc_tensor_create(XC_I64, 1, &words, &index_error);
        bufs[p] = index_error;
      } else if (lk->param_values[p]) {
        bufs[p] = of[lk->param_values[p]->id];
        if (!bufs[p]) s = xc_error(XC_INTERNAL, "value '%s' has no buffer", lk->param_values[p]->name);
      } else {
        s = xc_dim_eval(lk->param_dims[p], &bind, &params[p]);
      }
    }
    /* the interpreter on copies of the written buffers: names the first kernel that differs */
    xc_tiled_arg_t args[XC_TARGET_MAX_ARGS];
    xc_tensor_t* copies[XC_TARGET_MAX_ARGS] = {0};
    for (int p = 0; p < lk->num_params && !s; p++) {
      args[p].buffer = bufs[p];
      args[p].scalar = params[p];
      if (bufs[p] && lk->kernel->params[p]->type.role != XC_ROLE_IN) {
        /* one copy per tensor: a view and its source stay one buffer */
        int q = 0;
        while (q < p && !(copies[q] && bufs[q] == bufs[p])) q++;
        if (q < p) {
          args[p].buffer = copies[q];
          continue;
        }
        s = xc_tensor_clone(bufs[p], &copies[p]);
        args[p].buffer = copies[p];
      }
    }
    /* read-only views of a written tensor read the copy too */
    for (int p = 0; p < lk->num_params && !s; p++)
      for (int q = 0; q < lk->num_params; q++)
        if (bufs[p] && copies[q] && bufs[q] == bufs[p]) args[p].buffer = copies[q];
    if (!s) s = xc_tiled_run(lk->kernel, lk->knobs, lk->num_params, args);
    if (!s) s = launch_kernel(dev, lk, bufs, params);
    for (int p = 0; p < lk->num_params; p++) {
      if (!s && copies[p]) {
        double err = rel_l2(bufs[p], copies[p]);
        if (!(err <= 1e-5))
          s = xc_error(XC_INTERNAL, "kernel %s (step %d): buffer %s differs from the interpreter: rel-L2 %g",
                       lk->kernel->name, i, lk->kernel->params[p]->name, err);
      }
      xc_tensor_destroy(copies[p]);
    }
  }
  for (int i = 0; i < g->num_outputs && !s; i++) {
    xc_tensor_t* t = of[g->outputs[i]->id];
    if (!t) s = xc_error(XC_INTERNAL, "output not computed");
    else s = xc_tensor_clone(t, &outputs[i]);
  }
  for (int i = 0; i < nv && of; i++)
    if (owned[i]) xc_tensor_destroy(of[i]);
  free(of);
  free(owned);
  xc_symbind_free(&bind);
  if (!s && index_error) s = xc_index_error_status(m->graph, true, (const int64_t*)index_error->data, index_error->numel);
  xc_tensor_destroy(index_error);
  return s;
}

static void check_model(const char* dir, xc_device_t* dev, const char* label) {
  char path[512];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  xc_graph_t* g = NULL;
  CHECK_OK(xc_load_model(path, &g));
  if (!g) return;
  CHECK_OK(xc_graph_infer(g));
  xc_pass_options_t po;
  xc_pass_options_init(&po);
  CHECK_OK(xc_passes_run(g, &po));
  xc_fusion_plan_t* plan = NULL;
  CHECK_OK(xc_fusion_plan_build(g, NULL, &plan));
  const xc_device_caps_t* caps = xc_device_caps(dev);
  xc_tiled_limits_t lim;
  if (caps->max_threads_per_group > 1) {
    xc_tiled_limits_init_gpu(&lim);
    lim.value[XC_TILED_LIMIT_MAX_THREADS] = caps->max_threads_per_group < 256 ? caps->max_threads_per_group : 256;
    lim.value[XC_TILED_LIMIT_SHARED_BYTES] = caps->local_memory_bytes / 4;
  } else {
    xc_tiled_limits_init_cpu(&lim);
  }
  xc_lowered_module_t* m = NULL;
  if (plan) CHECK_OK(xc_lower(g, plan, &lim, &m));
  xc_tensor_t* ins[16] = {0};
  for (int i = 0; i < g->num_inputs && i < 16; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    CHECK_OK(xc_pb_read(path, &ins[i], NULL));
  }
  xc_tensor_t* ref[16] = {0}, *got[16] = {0};
  if (m) CHECK_OK(xc_lowered_run_interp(m, g->num_inputs, (const xc_tensor_t* const*)ins, ref));
  if (m) {
    xc_status_t s = run_on_device(dev, m, (const xc_tensor_t* const*)ins, got);
    if (s) fprintf(stderr, "%s on %s: %s\n", dir, label, xc_status_message(s));
    CHECK(s == NULL);
    xc_status_free(s);
    for (int i = 0; i < g->num_outputs && ref[i] && got[i]; i++) {
      double err = rel_l2(got[i], ref[i]);
      printf("%s on %s: %d kernels, output %d rel-L2 %.3g\n", dir, label, m->num_kernels, i, err);
      CHECK(err <= 1e-5);
    }
  }
  for (int i = 0; i < 16; i++) xc_tensor_destroy(ins[i]), xc_tensor_destroy(ref[i]), xc_tensor_destroy(got[i]);
  xc_lowered_module_destroy(m);
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
}

int main(void) {
  CHECK_OK(xc_targets_init());
  const char* models[] = {"tests/models/mlp", "tests/models/cnn", "tests/models/gpt2-tiny", "tests/models/bert-tiny"};
  const char* selectors[3] = {"cpu", getenv("XCOMP_EMIT_TEST_OPENCL") ? getenv("XCOMP_EMIT_TEST_OPENCL") : "opencl",
                              "cuda"};
  for (int d = 0; d < 3; d++) {
    xc_device_t* dev = NULL;
    xc_status_t s = xc_device_open(selectors[d], &dev);
    if (s) {
      if (d == 0) CHECK_OK(s);
      else printf("SKIP %s: %s\n", selectors[d], xc_status_message(s)), xc_status_free(s);
      continue;
    }
    for (int i = 0; i < 4; i++) check_model(models[i], dev, selectors[d]);
    xc_device_close(dev);
  }
  return xc_test_summary("test_emit_lowered");
}
