/* Pad folding: a constant-mode Pad by zeros in front of a convolution
 * becomes the convolution's own padding, and a Pad by nothing disappears.
 *
 *   Conv(Pad(x, pads, 0)) -> Conv(x) with pads' = pads_conv + pads_spatial
 *
 * Exporters of "TF-style" SAME padding (TensorFlow ports, Hugging Face's
 * MobileNet) put an explicit Pad before every convolution, often by zero
 * amounts; as separate kernels they cost a full copy of the activation each
 * (and, on channels-last targets, two layout Transposes around it, since a
 * Pad does not move to NHWC). Requires: mode "constant", constant pads that
 * are non-negative and zero on the batch and channel dims, a constant pad
 * value of 0 (or none), and a Conv that reads the Pad's result as its input
 * X with explicit pads (auto_pad NOTSET). The Pad stays for any other user;
 * DCE drops it otherwise. */
#include <string.h>

#include "pattern_util.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

/* The Pad's amounts per dim ([2 * rank]: begins then ends) when it pads by
 * zeros in constant mode; false otherwise. */
static bool zero_pad_amounts(const xc_node_t* pad, int rank, int64_t* amounts) {
  const char* mode = xc_node_attr_string(pad, "mode");
  if (mode && strcmp(mode, "constant") != 0) return false;
  memset(amounts, 0, sizeof(int64_t) * 2 * (size_t)rank);
  if (pad->num_inputs == 1) { /* opset < 11: pads and value are attributes */
    int64_t cnt = 0;
    const int64_t* v = xc_node_attr_ints(pad, "pads", &cnt);
    if (!v || cnt != 2 * rank || xc_node_attr_float(pad, "value") != 0.0) return false;
    memcpy(amounts, v, sizeof(int64_t) * 2 * (size_t)rank);
    return true;
  }
  const xc_value_t* pv = pad->inputs[1];
  if (!pv || !pv->constant) return false;
  if (pad->num_inputs > 2 && pad->inputs[2]) {
    const xc_tensor_t* c = pad->inputs[2]->constant;
    if (!c || c->numel != 1 || xc_tensor_get_f64(c, 0) != 0.0) return false;
  }
  int64_t axes[XC_MAX_RANK];
  int naxes = rank;
  for (int i = 0; i < rank; i++) axes[i] = i;
  if (pad->num_inputs > 3 && pad->inputs[3]) {
    const xc_tensor_t* a = pad->inputs[3]->constant;
    if (!a || a->numel > rank) return false;
    naxes = (int)a->numel;
    for (int i = 0; i < naxes; i++) {
      int64_t ax = xc_tensor_get_i64(a, i);
      if (ax < 0) ax += rank;
      if (ax < 0 || ax >= rank) return false;
      axes[i] = ax;
    }
  }
  if (pv->constant->numel != 2 * naxes) return false;
  for (int i = 0; i < naxes; i++) {
    amounts[axes[i]] = xc_tensor_get_i64(pv->constant, i);
    amounts[rank + axes[i]] = xc_tensor_get_i64(pv->constant, naxes + i);
  }
  return true;
}

/* Folds the Pad into consumer Conv c. */
static xc_status_t fold_into_conv(xc_graph_t* g, xc_node_t* pad, xc_node_t* c, const int64_t* amounts, int rank,
                                  bool* changed) {
  const char* ap = xc_node_attr_string(c, "auto_pad");
  if (ap && strcmp(ap, "NOTSET") != 0) return NULL;
  int nsp = rank - 2;
  int64_t pads[2 * XC_MAX_RANK];
  int64_t cnt = 0;
  const int64_t* old = xc_node_attr_ints(c, "pads", &cnt);
  if (old && cnt != 2 * nsp) return NULL;
  for (int i = 0; i < nsp; i++) {
    pads[i] = (old ? old[i] : 0) + amounts[2 + i];
    pads[nsp + i] = (old ? old[nsp + i] : 0) + amounts[rank + 2 + i];
  }
  XC_RETURN_IF_ERROR(xc_node_set_ints(g, c, "pads", 2 * nsp, pads));
  c->inputs[0] = pad->inputs[0];
  XC_RETURN_IF_ERROR(xc_node_inherit_provenance(g, c, pad));
  *changed = true;
  return NULL;
}

static xc_status_t fold(xc_graph_t* g, xc_node_t* pad, bool* changed) {
  if (pad->num_inputs < 1 || !pad->inputs[0] || pad->num_outputs != 1 || !pad->outputs[0]) return NULL;
  xc_value_t *x = pad->inputs[0], *y = pad->outputs[0];
  int rank = x->rank;
  if (rank < 1 || rank > XC_MAX_RANK || y->rank != rank) return NULL;
  int64_t amounts[2 * XC_MAX_RANK];
  if (!zero_pad_amounts(pad, rank, amounts)) return NULL;
  bool none = true, spatial_only = rank >= 3;
  for (int i = 0; i < 2 * rank; i++) {
    if (amounts[i] < 0) return NULL; /* a crop */
    none = none && amounts[i] == 0;
    if (amounts[i] && (i % rank) < 2) spatial_only = false;
  }
  if (none) {
    if (!xc_pat_same_type(x, y)) return NULL;
    XC_RETURN_IF_ERROR(xc_graph_replace_uses(g, y, x));
    pad->dead = true;
    *changed = true;
    return NULL;
  }
  if (!spatial_only) return NULL;
  for (int i = 0; i < g->num_nodes; i++) {
    xc_node_t* c = g->nodes[i];
    if (xc_pat_is_op(c, "Conv") && c->num_inputs >= 2 && c->inputs[0] == y && c->inputs[1] != y)
      XC_RETURN_IF_ERROR(fold_into_conv(g, pad, c, amounts, rank, changed));
  }
  return NULL;
}

xc_status_t xc_pass_pad_fold(xc_graph_t* g, const xc_pass_options_t* o, bool* changed) {
  (void)o;
  bool any = false;
  int count = g->num_nodes;
  for (int i = 0; i < count; i++)
    if (xc_pat_is_op(g->nodes[i], "Pad")) XC_RETURN_IF_ERROR(fold(g, g->nodes[i], &any));
  if (any) *changed = true;
  return xc_pat_finish(g, any);
}
