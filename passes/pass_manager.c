/* The pass pipeline: ordering by level, disabling, printing, timing, and
 * re-verification after each pass. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xcomp/passes.h"
#include "xcomp/xir.h"

static const xc_pass_t pipeline[] = {
    {"convert-precision", "float32 tensors to the requested precision (f16, bf16); off unless asked", 0,
     xc_pass_convert_precision},
    {"simplify", "remove no-op ops and fold algebraic identities", 1, xc_pass_simplify},
    {"fold-constants", "evaluate nodes whose inputs are all constant", 1, xc_pass_fold_constants},
    {"cse", "merge identical nodes on identical inputs", 1, xc_pass_cse},
    {"pad-fold", "zero Pad before a Conv into the Conv's pads; Pad by nothing removed", 1, xc_pass_pad_fold},
    {"pattern-gelu", "erf and tanh GELU chains to Gelu", 2, xc_pass_pattern_gelu},
    {"pattern-layer-norm", "mean/variance chains to LayerNormalization", 2,
     xc_pass_pattern_layer_norm},
    {"pattern-rms-norm", "mean-square chains to RMSNormalization", 2, xc_pass_pattern_rms_norm},
    {"pattern-softmax", "exp/sum chains to Softmax, Log(Softmax) to LogSoftmax", 2,
     xc_pass_pattern_softmax},
    {"pattern-silu", "x*Sigmoid(x) to xcomp.Silu", 2, xc_pass_pattern_silu},
    {"pattern-swiglu", "Silu(a)*b to xcomp.SwiGLU", 2, xc_pass_pattern_swiglu},
    {"bn-fold", "fold BatchNormalization into a preceding Conv or Gemm", 2, xc_pass_bn_fold},
    {"pattern-rotary", "x*cos + rotate(x)*sin to RotaryEmbedding", 2, xc_pass_pattern_rotary},
    {"pattern-attention", "softmax(Q*K^T*scale + mask)*V to Attention", 2,
     xc_pass_pattern_attention},
    {"layout", "move convolution networks to the target's preferred layout (NHWC)", 2, xc_pass_layout},
    {"dce", "remove nodes whose results are never used", 0, xc_pass_dce},
};

#define NUM_PASSES ((int)(sizeof pipeline / sizeof pipeline[0]))

int xc_pass_count(void) { return NUM_PASSES; }
const xc_pass_t* xc_pass_at(int i) { return i >= 0 && i < NUM_PASSES ? &pipeline[i] : NULL; }

const xc_pass_t* xc_pass_find(const char* name) {
  for (int i = 0; i < NUM_PASSES; i++)
    if (strcmp(pipeline[i].name, name) == 0) return &pipeline[i];
  return NULL;
}

void xc_pass_options_init(xc_pass_options_t* o) {
  memset(o, 0, sizeof *o);
  o->opt_level = 2;
  o->fold_limit_bytes = 1 << 20;
  o->fold_layout_limit_bytes = (int64_t)1 << 31;
  xc_target_traits_init(&o->target);
}

static bool is_disabled(const xc_pass_options_t* o, const char* name) {
  for (int i = 0; i < o->num_disabled; i++)
    if (strcmp(o->disabled[i], name) == 0) return true;
  return false;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool xc_pass_enabled(const xc_pass_t* p, const xc_pass_options_t* o) {
  return p->min_level <= o->opt_level && !is_disabled(o, p->name);
}

xc_status_t xc_pass_apply(xc_graph_t* g, const xc_pass_t* p, const xc_pass_options_t* o,
                          bool* out_changed) {
  bool changed = false;
  xc_status_t s = p->run(g, o, &changed);
  if (!s && changed) s = xc_graph_compact(g);
  if (!s && changed) s = xc_graph_verify(g);
  if (!s && changed) s = xc_graph_infer(g);
  if (out_changed) *out_changed = changed;
  return s ? xc_status_annotate(s, "pass '%s'", p->name) : NULL;
}

xc_status_t xc_passes_run(xc_graph_t* g, const xc_pass_options_t* o) {
  xc_pass_options_t defaults;
  if (!o) {
    xc_pass_options_init(&defaults);
    o = &defaults;
  }
  FILE* log = o->log ? o->log : stderr;
  if (o->opt_level < 0 || o->opt_level > 3)
    return xc_error(XC_INVALID_ARGUMENT, "optimization level %d (expected 0 to 3)", o->opt_level);
  for (int i = 0; i < o->num_disabled; i++)
    if (!xc_pass_find(o->disabled[i]))
      return xc_error(XC_INVALID_ARGUMENT, "unknown pass '%s'", o->disabled[i]);
  if (o->print_after && !xc_pass_find(o->print_after))
    return xc_error(XC_INVALID_ARGUMENT, "unknown pass '%s'", o->print_after);
  for (int i = 0; i < NUM_PASSES; i++) {
    const xc_pass_t* p = &pipeline[i];
    if (!xc_pass_enabled(p, o)) continue;
    double t0 = now_seconds();
    bool changed = false;
    XC_RETURN_IF_ERROR(xc_pass_apply(g, p, o, &changed));
    if (o->timing)
      fprintf(log, "xcomp: pass %-16s %8.3f ms  %d nodes%s\n", p->name,
              (now_seconds() - t0) * 1e3, g->num_nodes, changed ? " (changed)" : "");
    if (o->print_after_all || (o->print_after && strcmp(o->print_after, p->name) == 0)) {
      fprintf(log, "# after pass %s\n", p->name);
      xc_xir_print_options_t po;
      xc_xir_print_options_init(&po);
      po.show_provenance = true;
      XC_RETURN_IF_ERROR(xc_xir_print(g, &po, log));
    }
  }
  return NULL;
}
