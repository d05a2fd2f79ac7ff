/* The executor: a compiled module loaded on one device (kernels and weights
 * once), run any number of times on input tensors. Each run binds the
 * symbolic dims from the input shapes, plans memory (memplan.c), reuses the
 * slot buffers of earlier runs when they are large enough, uploads the
 * inputs, launches every step and downloads the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime_internal.h"

#define XC_EXECUTOR_MAX_GRAPHS 8
#define XC_EXECUTOR_MAX_KEY (XC_MAX_RANK * 16)
#define XC_EXECUTOR_MAX_CHECKED 16
#define XC_MAX_INPUTS_BUCKETED 64

typedef struct graph_entry {
  int64_t key[XC_EXECUTOR_MAX_KEY]; /* the input shapes */
  int key_len;
  uint64_t generation;
  xc_launch_graph_t* graph;
  int launches;
  uint64_t last_used;
} graph_entry_t;

struct xc_executor {
  const xc_compiled_module_t* m;
  xc_executor_options_t options;
  xc_device_t* device;
  xc_module_t** modules;       /* per kernel */
  xc_kernel_t** kernels;       /* per kernel */
  xc_buffer_t** value_buffers; /* per value: weights (uploaded once) and inputs (per run) */
  int num_slots;
  xc_buffer_t** slots;
  int64_t weight_bytes;
  size_t guard; /* XC_EXECUTOR_GUARD_BYTES when options.guard, else 0 */
  /* Launch graphs, one per input-shape bucket. A graph bakes in buffer
   * addresses, so it is valid only for the buffers of the generation it was
   * captured in; any reallocation starts a new generation. */
  uint64_t generation;
  graph_entry_t graphs[XC_EXECUTOR_MAX_GRAPHS];
  int num_graphs;
  uint64_t graph_clock;
  bool graphs_off;  /* options.no_graphs, no capture support, or capture failed */
  int index_error;  /* the value of the index-error record (its own buffer, zero between runs), -1: none */
  int64_t index_error_words;
  int64_t* index_error_host; /* where the record is read back (copy path) */
  /* The record's host address when the host reads it in place (a mapped
   * buffer, or a target whose buffers are host memory); NULL: copies. */
  int64_t* index_error_mapped;
  char graph_note[160];
  /* Input shapes whose binding passed xc_cm_check_accesses (modules with
   * symbols; a static module was checked when it was read). */
  int64_t checked[XC_EXECUTOR_MAX_CHECKED][XC_EXECUTOR_MAX_KEY];
  int checked_len[XC_EXECUTOR_MAX_CHECKED];
  int num_checked, next_checked;
  /* options.profile: the event pair of each step in the run under way
   * (NULL outside it), and each step's time of the last run. */
  xc_event_t** step_events;
  double* step_ms;
  /* $XCOMP_FAULT_KERNEL (a test hook, docs/runtime.md): the kernel whose
   * first output element gets 1.0 added after each launch; NULL: none. */
  const char* fault_kernel;
  /* The last successful run's plan and binding (xc_executor_read_value). */
  bool have_last;
  xc_memplan_t last_plan;
  xc_symbind_t last_binds;
  /* Shape buckets (m->buckets): each bucket's executor, made on its first
   * run. A bucket's executor has the module's executor as parent: it uses
   * the parent's device, and the parent's weight buffers where a weight of
   * the same name holds the same bytes (borrowed: not freed). */
  xc_executor_t** bucket_exec;
  xc_executor_t* parent;
  bool* borrowed; /* per value */
};

void xc_executor_options_init(xc_executor_options_t* o) { memset(o, 0, sizeof *o); }

xc_device_t* xc_executor_device(xc_executor_t* e) { return e ? e->device : NULL; }

/* Writes the guard pattern at [offset, offset + e->guard) of b. */
static xc_status_t write_guard(const xc_executor_t* e, xc_buffer_t* b, size_t offset) {
  if (!e->guard || !b) return NULL;
  uint8_t pat[XC_EXECUTOR_GUARD_BYTES];
  memset(pat, XC_EXECUTOR_GUARD_BYTE, sizeof pat);
  return xc_buffer_write(b, offset, pat, e->guard);
}

/* Fails when the guard after `offset` bytes of b was overwritten. */
static xc_status_t check_guard(const xc_executor_t* e, xc_buffer_t* b, size_t offset, const char* what,
                               int index) {
  if (!e->guard || !b) return NULL;
  uint8_t got[XC_EXECUTOR_GUARD_BYTES];
  XC_RETURN_IF_ERROR(xc_buffer_read(b, offset, got, e->guard));
  size_t bad = 0, first = 0;
  for (size_t i = e->guard; i-- > 0;)
    if (got[i] != XC_EXECUTOR_GUARD_BYTE) {
      bad++;
      first = i;
    }
  if (!bad) return NULL;
  return xc_error(XC_INTERNAL,
                  "a kernel wrote past the end of %s %d (%zu bytes): %zu guard byte%s changed, the first "
                  "%zu bytes past the end",
                  what, index, offset, bad, bad == 1 ? "" : "s", first);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void xc_executor_destroy(xc_executor_t* e) {
  if (!e) return;
  for (int i = 0; i < e->num_graphs; i++) xc_launch_graph_free(e->graphs[i].graph);
  for (int i = 0; i < e->num_slots; i++) xc_buffer_free(e->slots[i]);
  free(e->slots);
  if (e->bucket_exec)
    for (int i = 0; i < e->m->buckets->num; i++) xc_executor_destroy(e->bucket_exec[i]);
  free(e->bucket_exec);
  if (e->value_buffers)
    for (int v = 0; v < e->m->num_values; v++)
      if (!e->borrowed || !e->borrowed[v]) xc_buffer_free(e->value_buffers[v]);
  free(e->value_buffers);
  free(e->borrowed);
  if (e->modules)
    for (int k = 0; k < e->m->num_kernels; k++) xc_module_unload(e->modules[k]);
  free(e->modules);
  free(e->kernels);
  free(e->index_error_host);
  free(e->step_events);
  free(e->step_ms);
  if (e->have_last) {
    xc_memplan_free(&e->last_plan);
    xc_symbind_free(&e->last_binds);
  }
  if (!e->parent) xc_device_close(e->device);
  free(e);
}

/* A weight of the parent's module with the same name and bytes as value v
 * of e's module: its buffer, else NULL. */
static xc_buffer_t* parent_weight(const xc_executor_t* e, const xc_cm_value_t* val) {
  const xc_executor_t* p = e->parent;
  size_t n = xc_tensor_nbytes(val->constant);
  for (int v = 0; v < p->m->num_values; v++) {
    const xc_cm_value_t* pv = &p->m->values[v];
    if (!(pv->flags & XC_CM_VALUE_WEIGHT) || !pv->constant || !p->value_buffers[v] || strcmp(pv->name, val->name))
      continue;
    if (pv->constant->dtype != val->constant->dtype || xc_tensor_nbytes(pv->constant) != n) return NULL;
    return memcmp(pv->constant->data, val->constant->data, n) == 0 ? p->value_buffers[v] : NULL;
  }
  return NULL;
}

/* The index-error record, zeroed. Read after every run, so where the target
 * can, it is memory the host reads in place (a mapped buffer: no copy, no
 * second synchronization); else an ordinary buffer read back with a copy. */
static xc_status_t alloc_index_record(xc_executor_t* e, size_t bytes, xc_buffer_t** out) {
  xc_status_t s = xc_buffer_alloc_mapped(e->device, bytes, out);
  if (s && xc_status_code(s) == XC_UNSUPPORTED) {
    xc_status_free(s);
    s = xc_buffer_alloc(e->device, bytes, out);
  } else if (!s) {
    e->index_error_mapped = xc_buffer_host_pointer(*out);
  }
  if (s) return s;
  if (e->index_error_mapped) {
    memset(e->index_error_mapped, 0, bytes);
    return NULL;
  }
  return xc_buffer_write(*out, 0, e->index_error_host, bytes);
}

static xc_status_t create_impl(const xc_compiled_module_t* m, const char* selector, const xc_executor_options_t* o,
                               xc_executor_t* parent, xc_executor_t** out) {
  *out = NULL;
  XC_RETURN_IF_ERROR(xc_targets_init());
  xc_executor_t* e = calloc(1, sizeof *e);
  if (!e) return xc_error_oom();
  e->m = m;
  e->parent = parent;
  if (o) e->options = *o;
  else xc_executor_options_init(&e->options);
  e->guard = e->options.guard ? XC_EXECUTOR_GUARD_BYTES : 0;
  xc_status_t s = NULL;
  if (parent) e->device = parent->device;
  else s = xc_device_open(selector && *selector ? selector : m->target, &e->device);
  if (!s && m->buckets && !(e->bucket_exec = calloc((size_t)m->buckets->num, sizeof *e->bucket_exec)))
    s = xc_error_oom();
  if (!s && parent && !(e->borrowed = calloc((size_t)m->num_values + 1, sizeof *e->borrowed))) s = xc_error_oom();
  if (!s && !parent) {
    const char* tname = xc_target_name(xc_device_target(e->device));
    const xc_device_caps_t* caps = xc_device_caps(e->device);
    if (strcmp(tname, m->target) != 0) {
      s = xc_error(XC_INVALID_ARGUMENT, "the module was compiled for target %s; device '%s' belongs to target %s",
                   m->target, selector, tname);
    } else if (!e->options.ignore_fingerprint && !(m->flags & XC_CM_ARCH_ONLY)) {
      /* A module compiled for an architecture (cuda:sm_90, rocm:gfx90a)
       * is not tied to one device: the target checks its code when loading
       * it (cubin architecture or PTX, code object architecture). */
      xc_hash128_t fp = xc_device_caps_fingerprint(caps);
      if (fp.lo != m->caps_fingerprint.lo || fp.hi != m->caps_fingerprint.hi)
        s = xc_error(XC_UNSUPPORTED,
                     "the module was compiled for device '%s'; device '%s' has other capabilities "
                     "(recompile it for this device)",
                     m->device_name, caps->name);
    }
  }
  const char* fault = getenv("XCOMP_FAULT_KERNEL");
  e->fault_kernel = fault && *fault ? fault : NULL;
  e->graphs_off = e->options.no_graphs || e->options.profile || e->fault_kernel || !e->device || !xc_device_can_capture(e->device);
  e->index_error = -1;
  e->modules = calloc((size_t)m->num_kernels + 1, sizeof *e->modules);
  e->kernels = calloc((size_t)m->num_kernels + 1, sizeof *e->kernels);
  e->value_buffers = calloc((size_t)m->num_values + 1, sizeof *e->value_buffers);
  if (!s && (!e->modules || !e->kernels || !e->value_buffers)) s = xc_error_oom();
  if (!s && e->options.profile) {
    e->step_events = calloc(2 * (size_t)m->num_steps + 1, sizeof *e->step_events);
    e->step_ms = calloc((size_t)m->num_steps + 1, sizeof *e->step_ms);
    if (!e->step_events || !e->step_ms) s = xc_error_oom();
  }
  for (int k = 0; !s && k < m->num_kernels; k++) {
    s = xc_module_load(e->device, &m->kernels[k].blob, &e->modules[k]);
    if (!s) s = xc_module_kernel(e->modules[k], m->kernels[k].entry, &e->kernels[k]);
    if (s) s = xc_status_annotate(s, "loading kernel '%s'", m->kernels[k].name);
  }
  for (int v = 0; !s && v < m->num_values; v++) {
    const xc_cm_value_t* val = &m->values[v];
    if (!(val->flags & XC_CM_VALUE_WEIGHT) || !val->constant) continue;
    size_t n = xc_tensor_nbytes(val->constant);
    xc_buffer_t* shared = e->parent ? parent_weight(e, val) : NULL;
    if (shared) {
      e->value_buffers[v] = shared;
      e->borrowed[v] = true;
      continue;
    }
    s = xc_buffer_alloc(e->device, n + e->guard, &e->value_buffers[v]);
    if (!s && n) s = xc_buffer_write(e->value_buffers[v], 0, val->constant->data, n);
    if (!s) s = write_guard(e, e->value_buffers[v], n);
    if (s) s = xc_status_annotate(s, "uploading weight '%s'", val->name);
    e->weight_bytes += (int64_t)n;
  }
  for (int v = 0; !s && v < m->num_values; v++) {
    if (!(m->values[v].flags & XC_CM_VALUE_INDEX_ERROR)) continue;
    e->index_error = v;
    e->index_error_words = m->values[v].dims[0].value; /* checked by xc_cm_link */
    e->index_error_host = calloc((size_t)e->index_error_words, sizeof(int64_t));
    if (!e->index_error_host) s = xc_error_oom();
    size_t bytes = (size_t)e->index_error_words * sizeof(int64_t);
    if (!s) s = alloc_index_record(e, bytes, &e->value_buffers[v]);
  }
  if (s) {
    xc_executor_destroy(e);
    return s;
  }
  *out = e;
  return NULL;
}

xc_status_t xc_executor_create(const xc_compiled_module_t* m, const char* selector,
                               const xc_executor_options_t* o, xc_executor_t** out) {
  return create_impl(m, selector, o, NULL, out);
}

/* After a run (its launches synchronized): the index-error record names the
 * first kernel whose indices were out of range (xcomp/tiled.h); it is zeroed
 * again for the next run. A mapped record is read and zeroed in place. */
static xc_status_t check_index_error(xc_executor_t* e) {
  if (e->index_error < 0) return NULL;
  size_t bytes = (size_t)e->index_error_words * sizeof(int64_t);
  if (e->index_error_mapped) {
    xc_status_t s = xc_index_error_status(e->m->graph, false, e->index_error_mapped, e->index_error_words);
    if (s) memset(e->index_error_mapped, 0, bytes);
    return s;
  }
  xc_buffer_t* b = e->value_buffers[e->index_error];
  XC_RETURN_IF_ERROR(xc_buffer_read(b, 0, e->index_error_host, bytes));
  xc_status_t s = xc_index_error_status(e->m->graph, false, e->index_error_host, e->index_error_words);
  if (!s) return NULL;
  memset(e->index_error_host, 0, bytes);
  xc_status_t z = xc_buffer_write(b, 0, e->index_error_host, bytes);
  if (z) xc_status_free(z);
  return s;
}

/* Checks an input tensor against its value and binds its symbols. */
static xc_status_t bind_input(const xc_cm_value_t* v, const xc_tensor_t* t, int index, xc_symbind_t* binds) {
  char b[256];
  if (!t) return xc_error(XC_INVALID_ARGUMENT, "input %d '%s' is missing", index, v->name);
  if (t->dtype != v->dtype)
    return xc_error(XC_INVALID_ARGUMENT, "input %d '%s': got %s, the module expects dtype %s", index, v->name,
                    xc_tensor_describe(t, b, sizeof b), xc_dtype_name(v->dtype));
  if (t->rank != v->rank)
    return xc_error(XC_INVALID_ARGUMENT, "input %d '%s': got %s, the module expects rank %d", index, v->name,
                    xc_tensor_describe(t, b, sizeof b), v->rank);
  for (int d = 0; d < v->rank; d++) {
    xc_status_t s = xc_dim_unify(v->dims[d], t->dims[d], binds);
    if (s) {
      xc_status_free(s);
      char want[128];
      return xc_error(XC_INVALID_ARGUMENT, "input %d '%s': got %s, axis %d should be %s", index, v->name,
                      xc_tensor_describe(t, b, sizeof b), d, xc_dim_print(v->dims[d], want, sizeof want));
    }
  }
  return NULL;
}

static xc_buffer_t* buffer_of(xc_executor_t* e, const xc_memplan_t* plan, int v) {
  int slot = plan->value_slot[v];
  if (slot >= 0) return e->slots[slot];
  return e->value_buffers[plan->value_root[v]];
}

/* Makes slot buffers fit the plan, keeping those that are large enough. */
static xc_status_t fit_slots(xc_executor_t* e, const xc_memplan_t* plan) {
  if (plan->num_slots > e->num_slots) {
    xc_buffer_t** ns = realloc(e->slots, sizeof *ns * (size_t)plan->num_slots);
    if (!ns) return xc_error_oom();
    for (int i = e->num_slots; i < plan->num_slots; i++) ns[i] = NULL;
    e->slots = ns;
    e->num_slots = plan->num_slots;
  }
  for (int i = 0; i < plan->num_slots; i++) {
    size_t need = (size_t)plan->slot_bytes[i];
    if (e->slots[i] && xc_buffer_size(e->slots[i]) >= need + e->guard) continue;
    xc_buffer_free(e->slots[i]);
    e->slots[i] = NULL;
    e->generation++;
    XC_RETURN_IF_ERROR(xc_buffer_alloc(e->device, need + e->guard, &e->slots[i]));
  }
  for (int i = 0; i < plan->num_slots; i++)
    XC_RETURN_IF_ERROR(write_guard(e, e->slots[i], (size_t)plan->slot_bytes[i]));
  return NULL;
}

static xc_status_t poison_slots(xc_executor_t* e, const xc_memplan_t* plan) {
  int64_t most = 0;
  for (int i = 0; i < plan->num_slots; i++)
    if (plan->slot_bytes[i] > most) most = plan->slot_bytes[i];
  if (most == 0) return NULL;
  uint8_t* junk = malloc((size_t)most);
  if (!junk) return xc_error_oom();
  memset(junk, 0xFF, (size_t)most);
  xc_status_t s = NULL;
  for (int i = 0; !s && i < plan->num_slots; i++)
    s = xc_buffer_write(e->slots[i], 0, junk, (size_t)plan->slot_bytes[i]);
  free(junk);
  return s;
}

xc_status_t xc_cm_step_launch(const xc_compiled_module_t* m, int index, const xc_symbind_t* binds,
                              int max_threads_per_group, xc_cm_step_launch_t* out) {
  const xc_cm_step_t* st = &m->steps[index];
  const xc_cm_kernel_t* k = &m->kernels[st->kernel];
  const xc_tiled_kernel_t* tk = k->tiled;
  memset(out, 0, sizeof *out);
  if (st->num_params > 2 * XC_TARGET_MAX_ARGS)
    return xc_error(XC_INVALID_ARGUMENT, "step %d (kernel '%s'): %d parameters", index, k->name, st->num_params);
  int64_t* param_values = calloc((size_t)st->num_params + 1, sizeof *param_values);
  if (!param_values) return xc_error_oom();
  xc_status_t s = NULL;
  for (int p = 0; !s && p < st->num_params; p++) {
    if (st->params[p].value >= 0) {
      if (out->num_values == XC_TARGET_MAX_ARGS) s = xc_error(XC_INVALID_ARGUMENT, "too many buffer parameters");
      else out->values[out->num_values++] = st->params[p].value;
    } else if (out->num_scalars == XC_TARGET_MAX_ARGS) {
      s = xc_error(XC_INVALID_ARGUMENT, "too many scalar parameters");
    } else {
      s = xc_dim_eval(st->params[p].dim, binds, &param_values[p]);
      out->scalars[out->num_scalars++] = param_values[p];
    }
  }
  for (int a = 0; !s && a < 3; a++) {
    out->grid[a] = 1;
    out->threads[a] = 1;
    if (a < tk->grid_rank) {
      s = xc_texpr_eval(tk->grid[a], st->knobs, param_values, NULL, &out->grid[a]);
      if (!s && out->grid[a] <= 0) out->empty = true;
    }
  }
  /* Work-items per program, as the emitter built the kernel for them. A cpu
   * program is one thread: its "threads" are SIMD lanes inside the code. */
  if (!s && max_threads_per_group > 1) out->threads[0] = xc_tiled_threads(tk, st->knobs);
  free(param_values);
  if (s) return xc_status_annotate(s, "step %d (kernel '%s')", index, k->name);
  return NULL;
}

/* The XCOMP_FAULT_KERNEL test hook: adds 1.0 to the first element of the
 * step's first output value (a wrong kernel for `xcomp conform --localize`
 * and its tests to find). */
static xc_status_t inject_fault(xc_executor_t* e, const xc_memplan_t* plan, const xc_symbind_t* binds, int index) {
  (void)binds;
  const xc_cm_step_t* st = &e->m->steps[index];
  for (int p = 0; p < st->num_params; p++) {
    int v = st->params[p].value;
    if (v < 0 || st->params[p].role == XC_ROLE_IN || plan->value_bytes[v] == 0) continue;
    if (e->m->values[v].flags & XC_CM_VALUE_INDEX_ERROR) continue;
    int64_t one = 1;
    xc_tensor_t* t = NULL;
    XC_RETURN_IF_ERROR(xc_tensor_create(e->m->values[v].dtype, 1, &one, &t));
    xc_buffer_t* b = buffer_of(e, plan, v);
    size_t n = xc_tensor_nbytes(t);
    xc_status_t s = xc_device_synchronize(e->device);
    if (!s) s = xc_buffer_read(b, 0, t->data, n);
    if (!s) {
      xc_tensor_set_f64(t, 0, xc_tensor_get_f64(t, 0) + 1.0);
      s = xc_buffer_write(b, 0, t->data, n);
    }
    xc_tensor_destroy(t);
    return s;
  }
  return NULL;
}

static xc_status_t launch_step(xc_executor_t* e, const xc_memplan_t* plan, const xc_symbind_t* binds, int index,
                               int* launches) {
  const xc_compiled_module_t* m = e->m;
  const xc_cm_kernel_t* k = &m->kernels[m->steps[index].kernel];
  xc_cm_step_launch_t sl;
  XC_RETURN_IF_ERROR(
      xc_cm_step_launch(m, index, binds, xc_device_caps(e->device)->max_threads_per_group, &sl));
  if (sl.empty) return NULL; /* no programs: an empty tensor */
  xc_buffer_t* bufs[XC_TARGET_MAX_ARGS];
  for (int i = 0; i < sl.num_values; i++) bufs[i] = buffer_of(e, plan, sl.values[i]);
  xc_launch_t launch;
  memset(&launch, 0, sizeof launch);
  for (int a = 0; a < 3; a++) {
    launch.grid[a] = sl.grid[a];
    launch.threads[a] = sl.threads[a];
  }
  launch.buffers = bufs;
  launch.num_buffers = sl.num_values;
  launch.scalars = sl.scalars;
  launch.num_scalars = sl.num_scalars;
  /* options.profile: an event pair around this launch alone */
  xc_event_t** events = e->step_events ? &e->step_events[2 * index] : NULL;
  xc_status_t s = events ? xc_event_record(e->device, &events[0]) : NULL;
  if (!s) s = xc_kernel_launch(e->kernels[m->steps[index].kernel], &launch);
  if (!s && events) s = xc_event_record(e->device, &events[1]);
  if (!s && e->fault_kernel && strcmp(e->fault_kernel, k->name) == 0) s = inject_fault(e, plan, binds, index);
  if (s) return xc_status_annotate(s, "step %d (kernel '%s')", index, k->name);
  (*launches)++;
  return NULL;
}

static xc_status_t launch_all(xc_executor_t* e, const xc_memplan_t* plan, const xc_symbind_t* binds, int* launches) {
  for (int i = 0; i < e->m->num_steps; i++)
    if (e->m->steps[i].kind == XC_CM_STEP_KERNEL) XC_RETURN_IF_ERROR(launch_step(e, plan, binds, i, launches));
  return NULL;
}

/* Before the first launch with a binding of a module's symbols: every kernel
 * access inside the values its step binds (runtime/module_check.c).
 * Remembers the input shapes that passed. */
static xc_status_t check_binding(xc_executor_t* e, const xc_tensor_t* const* inputs, const xc_symbind_t* binds) {
  if (xc_cm_is_static(e->m)) return NULL; /* checked when it was read or built */
  int64_t key[XC_EXECUTOR_MAX_KEY];
  int n = 0;
  bool keyed = true;
  for (int i = 0; keyed && i < e->m->num_inputs; i++) {
    if (n + 1 + inputs[i]->rank > XC_EXECUTOR_MAX_KEY) {
      keyed = false;
      break;
    }
    key[n++] = inputs[i]->rank;
    for (int d = 0; d < inputs[i]->rank; d++) key[n++] = inputs[i]->dims[d];
  }
  for (int i = 0; keyed && i < e->num_checked; i++)
    if (e->checked_len[i] == n && memcmp(e->checked[i], key, sizeof *key * (size_t)n) == 0) return NULL;
  XC_RETURN_IF_ERROR(xc_cm_check_accesses(e->m, binds, "compiled module"));
  if (keyed) {
    int slot = e->next_checked;
    e->next_checked = (e->next_checked + 1) % XC_EXECUTOR_MAX_CHECKED;
    if (e->num_checked < XC_EXECUTOR_MAX_CHECKED) e->num_checked++;
    memcpy(e->checked[slot], key, sizeof *key * (size_t)n);
    e->checked_len[slot] = n;
  }
  return NULL;
}

/* The graph for these input shapes and buffers, captured now if needed.
 * NULL (and no error) when graphs are off or capture failed: the caller
 * launches one by one. */
static xc_status_t graph_for(xc_executor_t* e, const xc_tensor_t* const* inputs, const xc_memplan_t* plan,
                             const xc_symbind_t* binds, graph_entry_t** out, bool* captured) {
  *out = NULL;
  *captured = false;
  if (e->graphs_off) return NULL;
  int64_t key[XC_EXECUTOR_MAX_KEY];
  int n = 0;
  for (int i = 0; i < e->m->num_inputs; i++) {
    if (n + 1 + inputs[i]->rank > XC_EXECUTOR_MAX_KEY) return NULL; /* too many inputs to key: no graph */
    key[n++] = inputs[i]->rank;
    for (int d = 0; d < inputs[i]->rank; d++) key[n++] = inputs[i]->dims[d];
  }
  graph_entry_t* victim = NULL;
  for (int i = 0; i < e->num_graphs; i++) {
    graph_entry_t* g = &e->graphs[i];
    if (g->key_len == n && memcmp(g->key, key, sizeof *key * (size_t)n) == 0) {
      if (g->generation == e->generation) {
        g->last_used = ++e->graph_clock;
        *out = g;
        return NULL;
      }
      victim = g; /* same shapes, buffers moved: recapture in place */
    }
  }
  if (!victim && e->num_graphs < XC_EXECUTOR_MAX_GRAPHS) victim = &e->graphs[e->num_graphs++];
  if (!victim) {
    victim = &e->graphs[0];
    for (int i = 1; i < e->num_graphs; i++)
      if (e->graphs[i].last_used < victim->last_used) victim = &e->graphs[i];
  }
  xc_launch_graph_free(victim->graph);
  memset(victim, 0, sizeof *victim);
  int launches = 0;
  xc_launch_graph_t* graph = NULL;
  xc_status_t s = xc_device_capture_begin(e->device);
  if (!s) {
    xc_status_t ls = launch_all(e, plan, binds, &launches);
    s = xc_device_capture_end(e->device, &graph);
    if (ls) { /* a launch that fails while recording fails the run, as it would without graphs */
      xc_launch_graph_free(graph);
      xc_status_free(s);
      memcpy(victim, &e->graphs[--e->num_graphs], sizeof *victim);
      return ls;
    }
  }
  if (s) { /* capture is not possible here: launch one by one from now on */
    snprintf(e->graph_note, sizeof e->graph_note, "launch graph capture failed: %s", xc_status_message(s));
    xc_status_free(s);
    e->graphs_off = true;
    memcpy(victim, &e->graphs[--e->num_graphs], sizeof *victim);
    return NULL;
  }
  memcpy(victim->key, key, sizeof *key * (size_t)n);
  victim->key_len = n;
  victim->generation = e->generation;
  victim->graph = graph;
  victim->launches = launches;
  victim->last_used = ++e->graph_clock;
  *out = victim;
  *captured = true;
  return NULL;
}

/* options.profile, after synchronize: each step's time from its event pair
 * (-1 when it was not launched); the events are freed. Keeps the first
 * error, s, when there is one. */
static xc_status_t collect_step_times(xc_executor_t* e, xc_status_t s) {
  for (int i = 0; i < e->m->num_steps; i++) {
    xc_event_t** ev = &e->step_events[2 * i];
    e->step_ms[i] = -1;
    if (!s && ev[0] && ev[1]) s = xc_event_elapsed_ms(ev[0], ev[1], &e->step_ms[i]);
    xc_event_free(ev[0]);
    xc_event_free(ev[1]);
    ev[0] = ev[1] = NULL;
  }
  return s;
}

xc_status_t xc_executor_read_value(xc_executor_t* e, int value, xc_tensor_t** out) {
  *out = NULL;
  if (!e || !e->have_last) return xc_error(XC_INVALID_ARGUMENT, "xc_executor_read_value: no successful run yet");
  const xc_compiled_module_t* m = e->m;
  if (value < 0 || value >= m->num_values)
    return xc_error(XC_INVALID_ARGUMENT, "xc_executor_read_value: value %d of %d", value, m->num_values);
  const xc_cm_value_t* val = &m->values[value];
  const xc_memplan_t* plan = &e->last_plan;
  if (plan->value_slot[value] >= 0 && !e->options.keep_values && !(val->flags & XC_CM_VALUE_OUTPUT))
    return xc_error(XC_INVALID_ARGUMENT,
                    "value '%s' shares a reused buffer: create the executor with keep_values to read it", val->name);
  int64_t dims[XC_MAX_RANK];
  for (int d = 0; d < val->rank; d++) XC_RETURN_IF_ERROR(xc_dim_eval(val->dims[d], &e->last_binds, &dims[d]));
  xc_buffer_t* b = buffer_of(e, plan, value);
  if (!b) return xc_error(XC_INVALID_ARGUMENT, "value '%s' has no buffer", val->name);
  XC_RETURN_IF_ERROR(xc_tensor_create(val->dtype, val->rank, dims, out));
  size_t n = xc_tensor_nbytes(*out);
  xc_status_t s = n ? xc_buffer_read(b, 0, (*out)->data, n) : NULL;
  if (s) {
    xc_tensor_destroy(*out);
    *out = NULL;
    return xc_status_annotate(s, "reading value '%s'", val->name);
  }
  return NULL;
}

/* An output tensor the caller gave (xc_executor_run_into) must be what the
 * run makes. */
static xc_status_t check_into(const xc_tensor_t* t, xc_dtype_t dtype, int rank, const int64_t* dims) {
  bool same = t && t->dtype == dtype && t->rank == rank && (t->data || t->numel == 0);
  for (int d = 0; same && d < rank; d++) same = t->dims[d] == dims[d];
  if (same) return NULL;
  xc_tensor_t want = {.dtype = dtype, .rank = rank};
  memcpy(want.dims, dims, sizeof *dims * (size_t)rank);
  char w[160], h[160];
  xc_tensor_describe(&want, w, sizeof w);
  if (!t) return xc_error(XC_INVALID_ARGUMENT, "no tensor given for it (the run makes %s)", w);
  if (!t->data && t->numel) return xc_error(XC_INVALID_ARGUMENT, "the tensor given has no data");
  return xc_error(XC_INVALID_ARGUMENT, "the tensor given is %s, the run makes %s", xc_tensor_describe(t, h, sizeof h),
                  w);
}

/* Where a run's inputs come from and its outputs go: host tensors (upload
 * and download by copies) or device tensors (device-side copies). */
typedef struct run_io {
  const xc_device_tensor_t* dev_in; /* NULL: host inputs */
  xc_tensor_t** host_out;
  bool host_into; /* host_out holds the caller's tensors, written in place */
  xc_device_tensor_t* dev_out;
} run_io_t;

/* A device output: into the caller's memory when it gave an address, else
 * into a new buffer that becomes the caller's. */
static xc_status_t device_output(xc_executor_t* e, const xc_cm_value_t* val, const int64_t* dims, xc_buffer_t* from,
                                 xc_device_tensor_t* out) {
  int64_t numel = 0;
  XC_RETURN_IF_ERROR(xc_shape_numel(val->rank, dims, val->dtype, &numel));
  size_t n = (size_t)numel * xc_dtype_size(val->dtype);
  if (out->address) {
    if (out->bytes < n)
      return xc_error(XC_INVALID_ARGUMENT, "the output needs %zu bytes, the memory given holds %zu", n, out->bytes);
  } else {
    XC_RETURN_IF_ERROR(xc_buffer_alloc(e->device, n, &out->buffer));
    out->address = xc_buffer_device_address(out->buffer);
    out->bytes = n;
  }
  out->dtype = val->dtype;
  out->rank = val->rank;
  for (int d = 0; d < val->rank; d++) out->dims[d] = dims[d];
  return xc_device_copy(e->device, out->address, xc_buffer_device_address(from), n);
}

static xc_status_t run_impl(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs, const run_io_t* io,
                            xc_run_stats_t* stats) {
  const xc_compiled_module_t* m = e->m;
  double t0 = now_ms();
  xc_tensor_t** outputs = io->host_out;
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  xc_memplan_t plan;
  memset(&plan, 0, sizeof plan);
  xc_status_t s = NULL;
  for (int i = 0; !s && i < num_inputs; i++) s = bind_input(&m->values[m->inputs[i]], inputs[i], i, &binds);
  if (!s) s = xc_memplan_build(m, &binds, &plan);
  if (!s && e->options.keep_values) s = xc_memplan_unshare(&plan);
  if (!s) s = check_binding(e, inputs, &binds);
  if (!s) s = fit_slots(e, &plan);
  if (!s && e->options.poison) s = poison_slots(e, &plan);
  double bind_ms = now_ms() - t0, upload0 = now_ms();
  int64_t input_bytes = 0;
  for (int i = 0; !s && i < num_inputs; i++) {
    int v = m->inputs[i];
    size_t n = xc_tensor_nbytes(inputs[i]);
    xc_buffer_t** b = &e->value_buffers[v];
    if (*b && xc_buffer_size(*b) != n + e->guard) {
      xc_buffer_free(*b);
      *b = NULL;
    }
    if (!*b) {
      e->generation++;
      s = xc_buffer_alloc(e->device, n + e->guard, b);
    }
    if (!s && n && io->dev_in) s = xc_device_copy(e->device, xc_buffer_device_address(*b), io->dev_in[i].address, n);
    else if (!s && n) s = xc_buffer_write(*b, 0, inputs[i]->data, n);
    if (!s) s = write_guard(e, *b, n);
    input_bytes += (int64_t)n;
  }
  double upload_ms = now_ms() - upload0;
  int launches = 0;
  xc_event_t *start = NULL, *end = NULL;
  double kernels_ms = 0;
  graph_entry_t* graph = NULL;
  bool captured = false;
  if (!s) s = graph_for(e, inputs, &plan, &binds, &graph, &captured);
  if (!s) s = xc_event_record(e->device, &start);
  double issue0 = now_ms();
  if (!s && graph) {
    s = xc_launch_graph_run(graph->graph);
    launches = graph->launches;
  } else if (!s) {
    s = launch_all(e, &plan, &binds, &launches);
  }
  double issue_ms = now_ms() - issue0;
  if (!s) s = xc_event_record(e->device, &end);
  if (!s) s = xc_device_synchronize(e->device);
  if (!s) s = xc_event_elapsed_ms(start, end, &kernels_ms);
  xc_event_free(start);
  xc_event_free(end);
  if (e->step_events) s = collect_step_times(e, s);
  if (!s) s = check_index_error(e);
  /* Guards: every slot, input and weight buffer must end where it should. */
  for (int i = 0; !s && e->guard && i < plan.num_slots; i++) {
    s = check_guard(e, e->slots[i], (size_t)plan.slot_bytes[i], "buffer slot", i);
    for (int v = m->num_values; s && v-- > 0;)
      if (plan.value_slot[v] == i) {
        s = xc_status_annotate(s, "slot of value '%s'", m->values[v].name);
        break;
      }
  }
  for (int i = 0; !s && e->guard && i < num_inputs; i++)
    s = check_guard(e, e->value_buffers[m->inputs[i]], xc_tensor_nbytes(inputs[i]), "input", i);
  for (int v = 0; !s && e->guard && v < m->num_values; v++) {
    const xc_cm_value_t* val = &m->values[v];
    if ((val->flags & XC_CM_VALUE_WEIGHT) && val->constant && e->value_buffers[v])
      s = check_guard(e, e->value_buffers[v], xc_tensor_nbytes(val->constant), "weight", v);
  }
  double download0 = now_ms();
  for (int i = 0; !s && i < m->num_outputs; i++) {
    int v = m->outputs[i];
    const xc_cm_value_t* val = &m->values[v];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; !s && d < val->rank; d++) s = xc_dim_eval(val->dims[d], &binds, &dims[d]);
    xc_buffer_t* b = s ? NULL : buffer_of(e, &plan, v);
    if (!s && !b) s = xc_error(XC_INTERNAL, "output '%s' has no buffer", val->name);
    if (!s && io->dev_out) {
      s = device_output(e, val, dims, b, &io->dev_out[i]);
    } else if (!s && io->host_into) {
      s = check_into(outputs[i], val->dtype, val->rank, dims);
      size_t n = s ? 0 : xc_tensor_nbytes(outputs[i]);
      if (n) s = xc_buffer_read(b, 0, outputs[i]->data, n);
    } else if (!s) {
      s = xc_tensor_create(val->dtype, val->rank, dims, &outputs[i]);
      size_t n = outputs[i] ? xc_tensor_nbytes(outputs[i]) : 0;
      if (!s && n) s = xc_buffer_read(b, 0, outputs[i]->data, n);
    }
    if (s) s = xc_status_annotate(s, "output %d '%s'", i, val->name);
  }
  if (!s && io->dev_out) s = xc_device_synchronize(e->device); /* the outputs are there when the call returns */
  if (s) {
    for (int i = 0; i < m->num_outputs; i++) {
      if (io->dev_out) {
        if (io->dev_out[i].buffer) io->dev_out[i].address = 0;
        xc_buffer_free(io->dev_out[i].buffer);
        io->dev_out[i].buffer = NULL;
        continue;
      }
      if (io->host_into) continue; /* the caller's */
      xc_tensor_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  } else if (stats) {
    double end_ms = now_ms();
    memset(stats, 0, sizeof *stats);
    stats->total_ms = end_ms - t0;
    stats->kernels_ms = kernels_ms;
    stats->issue_ms = issue_ms;
    stats->planned_bytes = plan.planned_bytes;
    stats->unplanned_bytes = plan.unplanned_bytes;
    stats->peak_bytes = plan.planned_bytes + e->weight_bytes + input_bytes;
    stats->launches = launches;
    stats->graph_replayed = graph != NULL;
    stats->graph_captured = captured;
    snprintf(stats->graph_note, sizeof stats->graph_note, "%s", e->graph_note);
    stats->bind_ms = bind_ms;
    stats->upload_ms = upload_ms;
    stats->download_ms = end_ms - download0;
    stats->step_ms = e->step_ms;
  }
  /* Keep this run's plan and binding for xc_executor_read_value. */
  if (e->have_last) {
    xc_memplan_free(&e->last_plan);
    xc_symbind_free(&e->last_binds);
  }
  e->have_last = !s;
  if (!s) {
    e->last_plan = plan;
    e->last_binds = binds;
    if (stats) stats->value_bytes = plan.value_bytes;
    return NULL;
  }
  xc_memplan_free(&plan);
  xc_symbind_free(&binds);
  return s;
}

/* ---- shape buckets ----------------------------------------------------------- */

static bool is_bucket_dim(xc_dim_t d, const char* sym) {
  return d.sym && d.sym->kind == XC_SYM_VAR && strcmp(d.sym->name, sym) == 0;
}

/* The size of the buckets' symbol in this run's input shapes. */
static xc_status_t bucket_size_of(const xc_compiled_module_t* m, int num_inputs, const int* ranks,
                                  const int64_t* const* dims, int64_t* out) {
  const xc_cm_buckets_t* b = m->buckets;
  *out = -1;
  for (int i = 0; i < num_inputs; i++) {
    const xc_cm_value_t* val = &m->values[m->inputs[i]];
    if (ranks[i] != val->rank)
      return xc_error(XC_INVALID_ARGUMENT, "input %d ('%s'): rank %d, the module takes rank %d", i, val->name,
                      ranks[i], val->rank);
    for (int d = 0; d < val->rank; d++) {
      if (!is_bucket_dim(val->dims[d], b->symbol)) continue;
      if (*out >= 0 && dims[i][d] != *out)
        return xc_error(XC_INVALID_ARGUMENT, "input %d ('%s'): dim %d is %lld but '%s' is %lld in an earlier input",
                        i, val->name, d, (long long)dims[i][d], b->symbol, (long long)*out);
      *out = dims[i][d];
    }
  }
  if (*out < 0) return xc_error(XC_INTERNAL, "no input has the bucket symbol '%s'", b->symbol);
  if (*out < b->min || *out > b->max)
    return xc_error(XC_INVALID_ARGUMENT,
                    "'%s' is %lld in the inputs; the module was compiled for %s in %lld..%lld "
                    "(xcomp compile --dynamic %s=MIN..MAX)",
                    b->symbol, (long long)*out, b->symbol, (long long)b->min, (long long)b->max, b->symbol);
  return NULL;
}

/* Which bucket runs size n: exact, else the smallest above it when padding
 * is allowed; -1: the generic module. */
static int bucket_for(const xc_cm_buckets_t* b, int64_t n, bool allow_pad) {
  for (int i = 0; i < b->num; i++) {
    if (b->items[i].size == n) return i;
    if (b->items[i].size > n) return allow_pad && b->pad_ok ? i : -1;
  }
  return -1;
}

static xc_status_t bucket_executor(xc_executor_t* e, int i, xc_executor_t** out) {
  if (!e->bucket_exec[i])
    XC_RETURN_IF_ERROR(create_impl(e->m->buckets->items[i].module, NULL, &e->options, e, &e->bucket_exec[i]));
  *out = e->bucket_exec[i];
  return NULL;
}

/* Copies the box the two tensors share (per dim the smaller size, from 0)
 * from src into dst: both row-major, same rank and dtype. Pads (dst larger)
 * and slices (dst smaller); the rest of dst keeps what it holds. */
static void copy_shared_box(const xc_tensor_t* src, xc_tensor_t* dst) {
  int r = src->rank;
  size_t es = xc_dtype_size(src->dtype);
  if (src->numel == 0 || dst->numel == 0) return;
  if (r == 0) {
    memcpy(dst->data, src->data, es);
    return;
  }
  int64_t box[XC_MAX_RANK] = {0}, rows = 1;
  for (int d = 0; d < r; d++) {
    box[d] = src->dims[d] < dst->dims[d] ? src->dims[d] : dst->dims[d];
    if (d < r - 1) rows *= box[d];
  }
  size_t row = (size_t)box[r - 1] * es;
  int64_t idx[XC_MAX_RANK] = {0};
  for (int64_t k = 0; k < rows; k++) {
    int64_t so = 0, dof = 0;
    for (int d = 0; d < r - 1; d++) {
      so = so * src->dims[d] + idx[d];
      dof = dof * dst->dims[d] + idx[d];
    }
    memcpy((char*)dst->data + (size_t)dof * (size_t)dst->dims[r - 1] * es,
           (const char*)src->data + (size_t)so * (size_t)src->dims[r - 1] * es, row);
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < box[d]) break;
      idx[d] = 0;
    }
  }
}

/* Runs size n on bucket i: inputs padded with zeros along the symbol's dims
 * to the bucket's size, outputs sliced back to n along theirs. */
static xc_status_t run_padded(xc_executor_t* e, xc_executor_t* be, int64_t size, int num_inputs,
                              const xc_tensor_t* const* inputs, xc_tensor_t** outputs, bool into,
                              xc_run_stats_t* stats) {
  const xc_compiled_module_t* m = e->m;
  const char* sym = m->buckets->symbol;
  double t0 = now_ms();
  xc_tensor_t** padded = calloc((size_t)num_inputs + 1, sizeof *padded);
  xc_tensor_t** full = calloc((size_t)m->num_outputs + 1, sizeof *full);
  xc_status_t s = padded && full ? NULL : xc_error_oom();
  for (int i = 0; !s && i < num_inputs; i++) {
    const xc_cm_value_t* val = &m->values[m->inputs[i]];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < val->rank; d++) dims[d] = is_bucket_dim(val->dims[d], sym) ? size : inputs[i]->dims[d];
    s = xc_tensor_create(inputs[i]->dtype, inputs[i]->rank, dims, &padded[i]);
    if (!s) copy_shared_box(inputs[i], padded[i]);
  }
  double pad_ms = now_ms() - t0;
  if (!s) s = xc_executor_run(be, num_inputs, (const xc_tensor_t* const*)padded, full, stats);
  double t1 = now_ms();
  for (int i = 0; !s && i < m->num_outputs; i++) {
    const xc_cm_value_t* val = &m->values[m->outputs[i]];
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < full[i]->rank; d++) dims[d] = full[i]->dims[d];
    for (int d = 0; d < val->rank && d < full[i]->rank; d++)
      if (is_bucket_dim(val->dims[d], sym)) dims[d] = -1;
    /* the kept size along the symbol's dims: the inputs' */
    int64_t n = -1;
    for (int k = 0; k < num_inputs && n < 0; k++) {
      const xc_cm_value_t* iv = &m->values[m->inputs[k]];
      for (int d = 0; d < iv->rank; d++)
        if (is_bucket_dim(iv->dims[d], sym)) n = inputs[k]->dims[d];
    }
    for (int d = 0; d < full[i]->rank; d++)
      if (dims[d] < 0) dims[d] = n;
    s = into ? check_into(outputs[i], full[i]->dtype, full[i]->rank, dims)
             : xc_tensor_create(full[i]->dtype, full[i]->rank, dims, &outputs[i]);
    if (s) s = xc_status_annotate(s, "output %d '%s'", i, val->name);
    if (!s) copy_shared_box(full[i], outputs[i]);
  }
  if (stats && !s) {
    double extra = pad_ms + (now_ms() - t1);
    stats->total_ms += extra;
    stats->upload_ms += pad_ms;
    stats->download_ms += now_ms() - t1;
  }
  for (int i = 0; padded && i < num_inputs; i++) xc_tensor_destroy(padded[i]);
  for (int i = 0; full && i < m->num_outputs; i++) xc_tensor_destroy(full[i]);
  free(padded);
  free(full);
  if (s && !into)
    for (int i = 0; i < m->num_outputs; i++) {
      xc_tensor_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  return s;
}

/* Host runs: new output tensors, or (into) the caller's written in place. */
static xc_status_t run_host(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs,
                            xc_tensor_t** outputs, bool into, xc_run_stats_t* stats) {
  if (!into)
    for (int i = 0; i < e->m->num_outputs; i++) outputs[i] = NULL;
  if (num_inputs != e->m->num_inputs)
    return xc_error(XC_INVALID_ARGUMENT, "the module takes %d inputs, %d given", e->m->num_inputs, num_inputs);
  if (e->m->buckets) {
    int ranks[XC_MAX_INPUTS_BUCKETED];
    const int64_t* dims[XC_MAX_INPUTS_BUCKETED];
    if (num_inputs > XC_MAX_INPUTS_BUCKETED)
      return xc_error(XC_UNSUPPORTED, "a module with shape buckets takes at most %d inputs", XC_MAX_INPUTS_BUCKETED);
    for (int i = 0; i < num_inputs; i++) {
      ranks[i] = inputs[i]->rank;
      dims[i] = inputs[i]->dims;
    }
    int64_t n = 0;
    XC_RETURN_IF_ERROR(bucket_size_of(e->m, num_inputs, ranks, dims, &n));
    int b = bucket_for(e->m->buckets, n, true);
    if (b >= 0) {
      xc_executor_t* be = NULL;
      XC_RETURN_IF_ERROR(bucket_executor(e, b, &be));
      int64_t size = e->m->buckets->items[b].size;
      xc_status_t s = size == n ? run_host(be, num_inputs, inputs, outputs, into, stats)
                                : run_padded(e, be, size, num_inputs, inputs, outputs, into, stats);
      if (!s && stats) {
        stats->bucket = size;
        stats->module = be->m;
      }
      return s;
    }
  }
  run_io_t io = {.host_out = outputs, .host_into = into};
  xc_status_t s = run_impl(e, num_inputs, inputs, &io, stats);
  if (!s && stats) {
    stats->bucket = 0;
    stats->module = e->m;
  }
  return s;
}

xc_status_t xc_executor_run(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs,
                            xc_tensor_t** outputs, xc_run_stats_t* stats) {
  return run_host(e, num_inputs, inputs, outputs, false, stats);
}

xc_status_t xc_executor_run_into(xc_executor_t* e, int num_inputs, const xc_tensor_t* const* inputs,
                                 int num_outputs, xc_tensor_t* const* outputs, xc_run_stats_t* stats) {
  if (num_outputs != e->m->num_outputs)
    return xc_error(XC_INVALID_ARGUMENT, "the module has %d outputs, %d given", e->m->num_outputs, num_outputs);
  return run_host(e, num_inputs, inputs, (xc_tensor_t**)outputs, true, stats);
}

xc_status_t xc_executor_run_device(xc_executor_t* e, int num_inputs, const xc_device_tensor_t* inputs,
                                   int num_outputs, xc_device_tensor_t* outputs, xc_run_stats_t* stats) {
  const xc_compiled_module_t* m = e->m;
  if (num_inputs != m->num_inputs)
    return xc_error(XC_INVALID_ARGUMENT, "the module takes %d inputs, %d given", m->num_inputs, num_inputs);
  if (num_outputs != m->num_outputs)
    return xc_error(XC_INVALID_ARGUMENT, "the module has %d outputs, %d given", m->num_outputs, num_outputs);
  if (!xc_device_has_addresses(e->device))
    return xc_error(XC_UNSUPPORTED,
                    "%s (target %s): its memory has no device addresses, so it cannot take device-resident tensors "
                    "(targets that can: cuda, rocm, cpu); run with host tensors",
                    xc_device_caps(e->device)->name, xc_target_name(xc_device_target(e->device)));
  for (int i = 0; i < num_outputs; i++) {
    outputs[i].buffer = NULL;
    if (outputs[i].address == 0) outputs[i].bytes = 0;
  }
  /* Tensor headers (no data) carry the inputs' dtypes and shapes through
   * binding, the checks and the launch-graph key. */
  xc_tensor_t* heads = calloc((size_t)(num_inputs ? num_inputs : 1), sizeof *heads);
  const xc_tensor_t** views = calloc((size_t)(num_inputs ? num_inputs : 1), sizeof *views);
  xc_status_t s = heads && views ? NULL : xc_error_oom();
  for (int i = 0; !s && i < num_inputs; i++) {
    const xc_device_tensor_t* t = &inputs[i];
    if (t->rank < 0 || t->rank > XC_MAX_RANK) {
      s = xc_error(XC_INVALID_ARGUMENT, "input %d: rank %d", i, t->rank);
      break;
    }
    heads[i].dtype = t->dtype;
    heads[i].rank = t->rank;
    memcpy(heads[i].dims, t->dims, sizeof *t->dims * (size_t)t->rank);
    s = xc_shape_numel(t->rank, t->dims, t->dtype, &heads[i].numel);
    if (!s && heads[i].numel > 0 && !t->address)
      s = xc_error(XC_INVALID_ARGUMENT, "input %d ('%s'): device address 0", i, m->values[m->inputs[i]].name);
    if (s) s = xc_status_annotate(s, "input %d", i);
    views[i] = &heads[i];
  }
  xc_executor_t* runner = e;
  int64_t bucket = 0;
  if (!s && m->buckets) {
    /* Device tensors are not padded: a size that is a bucket runs it, any
     * other size the generic module. */
    int ranks[XC_MAX_INPUTS_BUCKETED];
    const int64_t* dims[XC_MAX_INPUTS_BUCKETED];
    if (num_inputs > XC_MAX_INPUTS_BUCKETED)
      s = xc_error(XC_UNSUPPORTED, "a module with shape buckets takes at most %d inputs", XC_MAX_INPUTS_BUCKETED);
    for (int i = 0; !s && i < num_inputs; i++) {
      ranks[i] = heads[i].rank;
      dims[i] = heads[i].dims;
    }
    int64_t n = 0;
    if (!s) s = bucket_size_of(m, num_inputs, ranks, dims, &n);
    int b = s ? -1 : bucket_for(m->buckets, n, false);
    if (b >= 0) {
      s = bucket_executor(e, b, &runner);
      bucket = n;
    }
  }
  if (!s) {
    run_io_t io = {.dev_in = inputs, .dev_out = outputs};
    s = run_impl(runner, num_inputs, views, &io, stats);
  }
  if (!s && stats) {
    stats->bucket = bucket;
    stats->module = runner->m;
  }
  free(heads);
  free(views);
  return s;
}
