/* The semantics-preservation harness: interpreter results before and after
 * every pass, on template and random inputs, compared with the per-dtype
 * tolerance. */
#include "xcomp/pass_check.h"

#include <stdlib.h>
#include <string.h>

#include "xcomp/conformance.h"
#include "xcomp/interp.h"

void xc_pass_check_options_init(xc_pass_check_options_t* o) {
  memset(o, 0, sizeof *o);
  xc_pass_options_init(&o->passes);
  o->num_seeds = 3;
}

static uint64_t next_random(uint64_t* state) {
  /* xorshift64*: deterministic across platforms. */
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 2685821657736338717ull;
}

/* One input tensor for graph input v from its template (or the inferred
 * shape) and a seed; seed 0 copies the template exactly. */
static xc_status_t make_input(const xc_value_t* v, const xc_tensor_t* tmpl, uint64_t seed,
                              xc_tensor_t** out) {
  int64_t dims[XC_MAX_RANK];
  for (int d = 0; d < v->rank; d++)
    dims[d] = tmpl ? tmpl->dims[d] : (v->dims[d].sym ? 2 : v->dims[d].value);
  if (tmpl && seed == 0) return xc_tensor_clone(tmpl, out);
  XC_RETURN_IF_ERROR(xc_tensor_create(v->dtype, v->rank, dims, out));
  xc_tensor_t* t = *out;
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + (uint64_t)v->id + 1;
  for (int64_t i = 0; i < t->numel; i++) {
    if (xc_dtype_is_float(t->dtype)) {
      double u = (double)(next_random(&state) >> 11) / 9007199254740992.0;
      xc_tensor_set_f64(t, i, 4.0 * u - 2.0);
    } else if (tmpl) {
      xc_tensor_set_i64(t, i, xc_tensor_get_i64(tmpl, i));
    }
  }
  return NULL;
}

static void free_tensors(xc_tensor_t** ts, int n) {
  for (int i = 0; i < n; i++) {
    xc_tensor_destroy(ts[i]);
    ts[i] = NULL;
  }
}

xc_status_t xc_pass_check(xc_graph_t* g, const xc_tensor_t* const* templates,
                          const xc_pass_check_options_t* o, int* out_failures) {
  *out_failures = 0;
  bool all_templates = true;
  for (int i = 0; i < g->num_inputs; i++) all_templates = all_templates && templates[i];
  int first_seed = all_templates ? 0 : 1;
  int num_sets = o->num_seeds + (all_templates ? 1 : 0);
  if (num_sets <= 0) return xc_error(XC_INVALID_ARGUMENT, "no input sets to check");
  int ni = g->num_inputs, no = g->num_outputs;
  /* Graph outputs keep their positions through passes, so references are
   * indexed [set][output]. */
  xc_tensor_t** inputs = calloc((size_t)(num_sets * ni + 1), sizeof *inputs);
  xc_tensor_t** refs = calloc((size_t)(num_sets * no + 1), sizeof *refs);
  xc_tensor_t** outs = calloc((size_t)(no + 1), sizeof *outs);
  xc_status_t s = NULL;
  if (!inputs || !refs || !outs) {
    s = xc_error_oom();
    goto done;
  }
  for (int k = 0; k < num_sets && !s; k++)
    for (int i = 0; i < ni && !s; i++)
      s = make_input(g->inputs[i], templates[i], (uint64_t)(first_seed + k), &inputs[k * ni + i]);
  for (int k = 0; k < num_sets && !s; k++) {
    s = xc_interp_run(g, NULL, ni, (const xc_tensor_t* const*)&inputs[k * ni], &refs[k * no]);
    if (s) s = xc_status_annotate(s, "before any pass, input set %d", k);
  }
  for (int p = 0; p < xc_pass_count() && !s; p++) {
    const xc_pass_t* pass = xc_pass_at(p);
    if (!xc_pass_enabled(pass, &o->passes)) continue;
    int nodes_before = g->num_nodes;
    bool changed = false;
    s = xc_pass_apply(g, pass, &o->passes, &changed);
    if (s) break;
    if (!changed) {
      if (o->log) fprintf(o->log, "pass %-16s unchanged\n", pass->name);
      continue;
    }
    double worst_l2 = 0;
    int failures = 0;
    for (int k = 0; k < num_sets && !s; k++) {
      s = xc_interp_run(g, NULL, ni, (const xc_tensor_t* const*)&inputs[k * ni], outs);
      if (s) {
        s = xc_status_annotate(s, "after pass '%s', input set %d", pass->name, k);
        break;
      }
      for (int j = 0; j < no && !s; j++) {
        xc_tolerance_t tol;
        xc_tolerance_for_dtype(refs[k * no + j]->dtype, &tol);
        xc_compare_result_t r;
        s = xc_compare_tensors(outs[j], refs[k * no + j], &tol, &r);
        if (s) break;
        if (r.rel_l2 > worst_l2) worst_l2 = r.rel_l2;
        if (!r.ok) {
          failures++;
          if (o->log)
            fprintf(o->log, "pass %-16s CHANGED RESULTS: input set %d, output %d '%s': %s\n",
                    pass->name, k, j, g->outputs[j]->name, r.reason);
        }
      }
      free_tensors(outs, no);
    }
    *out_failures += failures;
    if (!s && o->log)
      fprintf(o->log, "pass %-16s %d -> %d nodes, %d input sets %s (max rel-L2 %.3g)\n",
              pass->name, nodes_before, g->num_nodes, num_sets,
              failures ? "DISAGREE" : "agree", worst_l2);
  }
done:
  if (inputs) free_tensors(inputs, num_sets * ni);
  if (refs) free_tensors(refs, num_sets * no);
  if (outs) free_tensors(outs, no);
  free(inputs);
  free(refs);
  free(outs);
  return s;
}
