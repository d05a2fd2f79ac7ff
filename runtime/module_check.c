/* Consistency of a compiled module's plan with its graph and its kernels,
 * checked before anything runs: every plan value that names a graph value
 * has that value's dtype and shape, and for a binding of the symbols, every
 * element offset a kernel step may touch in a buffer lies inside the value
 * the step binds to it (ir/tiled_bounds.c bounds the offsets). A module whose
 * plan was edited to shrink a buffer (and its checksum recomputed) is refused
 * here instead of having its kernels write past the end of the heap block.
 * Modules without symbols are checked once when they are read or built;
 * modules with symbols for each new binding, by the executor, before the
 * first launch of a run. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

static xc_status_t fail(const char* what, const char* fmt, ...) XC_PRINTF(2, 3);
static xc_status_t fail(const char* what, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xc_error(XC_DATA_LOSS, "%s: inconsistent compiled module: %s", what ? what : "compiled module", msg);
}

static const char* shape_text(int rank, const xc_dim_t* dims, char* buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && n < size; d++) {
    char one[96];
    n += (size_t)snprintf(buf + n, size - n, "%s%s", d ? ", " : "", xc_dim_print(dims[d], one, sizeof one));
  }
  if (n < size) snprintf(buf + n, size - n, "]");
  return buf;
}

xc_status_t xc_cm_check_values(const xc_compiled_module_t* m, const char* what) {
  for (int i = 0; i < m->num_values; i++) {
    const xc_cm_value_t* v = &m->values[i];
    const xc_value_t* gv = m->graph ? xc_graph_find_value(m->graph, v->name) : NULL;
    if (!gv || gv->rank < 0 || gv->dtype == XC_DTYPE_UNDEFINED) continue;
    bool same = gv->dtype == v->dtype && gv->rank == v->rank;
    for (int d = 0; same && d < v->rank; d++) same = xc_dim_equal(gv->dims[d], v->dims[d]);
    if (!same) {
      char a[256], b[256];
      return fail(what, "value '%s' is %s%s in the plan but %s%s in the graph", v->name, xc_dtype_name(v->dtype),
                  shape_text(v->rank, v->dims, a, sizeof a), xc_dtype_name(gv->dtype),
                  shape_text(gv->rank, gv->dims, b, sizeof b));
    }
  }
  return NULL;
}

bool xc_cm_is_static(const xc_compiled_module_t* m) {
  for (int i = 0; i < m->num_values; i++)
    for (int d = 0; d < m->values[i].rank; d++)
      if (m->values[i].dims[d].sym) return false;
  for (int i = 0; i < m->num_steps; i++)
    for (int p = 0; p < m->steps[i].num_params; p++)
      if (m->steps[i].params[p].value < 0 && m->steps[i].params[p].dim.sym) return false;
  return true;
}

typedef struct access_check {
  const int64_t* elems; /* per kernel parameter: elements of the bound value (-1: scalar) */
  const xc_tiled_access_t* bad;
  xc_tiled_access_t first_bad;
} access_check_t;

static void on_access(void* ctx, const xc_tiled_access_t* a) {
  access_check_t* c = ctx;
  if (c->bad || a->never || !a->bounded) return;
  int64_t n = c->elems[a->param];
  if (n < 0 || a->lo < 0 || a->hi >= n) {
    c->first_bad = *a;
    c->bad = &c->first_bad;
  }
}

xc_status_t xc_cm_check_accesses(const xc_compiled_module_t* m, const xc_symbind_t* binds, const char* what) {
  int64_t* elems = NULL;
  int64_t* params = NULL;
  xc_status_t s = NULL;
  for (int i = 0; !s && i < m->num_steps; i++) {
    const xc_cm_step_t* st = &m->steps[i];
    if (st->kind != XC_CM_STEP_KERNEL) continue;
    const xc_tiled_kernel_t* tk = m->kernels[st->kernel].tiled;
    xc_cm_step_launch_t sl;
    s = xc_cm_step_launch(m, i, binds, 1, &sl);
    if (s) break;
    if (sl.empty) continue;
    free(elems);
    free(params);
    elems = calloc((size_t)st->num_params + 1, sizeof *elems);
    params = calloc((size_t)st->num_params + 1, sizeof *params);
    if (!elems || !params) {
      s = xc_error_oom();
      break;
    }
    for (int p = 0; !s && p < st->num_params; p++) {
      elems[p] = -1;
      if (st->params[p].value < 0) {
        s = xc_dim_eval(st->params[p].dim, binds, &params[p]);
        continue;
      }
      const xc_cm_value_t* v = &m->values[st->params[p].value];
      int64_t n = 1;
      for (int d = 0; !s && d < v->rank; d++) {
        int64_t x;
        s = xc_dim_eval(v->dims[d], binds, &x);
        if (!s && (x < 0 || !xc_mul_i64(n, x, &n)))
          s = fail(what, "value '%s' has a negative or overflowing size", v->name);
      }
      elems[p] = n;
    }
    if (s) break;
    access_check_t c = {elems, NULL, {0}};
    s = xc_tiled_accesses(tk, st->knobs, params, sl.grid, on_access, &c);
    if (!s && c.bad) {
      const xc_tiled_access_t* a = c.bad;
      int v = st->params[a->param].value;
      char shape[256];
      s = fail(what,
               "step %d: kernel '%s' %s elements %lld..%lld of its parameter %d, but the plan binds value '%s' "
               "%s%s (%lld elements) to it (op %d)",
               i, tk->name, a->store ? "writes" : "reads", (long long)a->lo, (long long)a->hi, a->param,
               v >= 0 ? m->values[v].name : "?", v >= 0 ? xc_dtype_name(m->values[v].dtype) : "",
               v >= 0 ? shape_text(m->values[v].rank, m->values[v].dims, shape, sizeof shape) : "",
               (long long)elems[a->param], a->op ? a->op->id : -1);
    }
  }
  free(elems);
  free(params);
  return s;
}
