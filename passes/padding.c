/* Padding check for shape buckets (xcomp compile --dynamic, docs/cli.md).
 *
 * A module compiled for a bucket size B of symbol S serves a smaller size n
 * by padding every input along its S dims to B, running, and slicing the
 * outputs back to n. That is exact only when nothing at the padded positions
 * (index >= n along an S axis) reaches the positions kept. This file proves
 * it for a graph with S symbolic, or says which node it could not follow.
 *
 * Abstract values. A value's axes whose dim is exactly S are its padded
 * axes. For each padded axis a, pad[a] describes the elements whose index
 * along a is >= n while every other padded axis is < n (the ones a
 * contraction along a would mix into kept positions):
 *   ANY      finite, otherwise unknown
 *   CONST c  every such element is c
 *   MASKED   very negative (-inf, or at most -1000 added to finite scores):
 *            exp() of it against the row's kept maximum underflows to 0
 *   WILD     possibly not finite (a division by the zero padding): must
 *            not be summed into kept positions, even times 0
 * `dirty` marks values whose kept positions may differ from the unpadded
 * run's; a graph output that is dirty (or has a dim that involves S other
 * than as S itself) refuses padding. `symval` marks data computed from the
 * size itself (a Shape turned into numbers): at bucket size those numbers
 * say B, not n, so they may only be used as shapes, or as Range's limit
 * (positions 0, 1, ... agree on the kept prefix).
 *
 * Rules: element-wise ops combine pads (constants evaluated with the
 * reference kernel); contractions, softmax and reductions along a padded
 * axis need the padded side to be 0 (sums) or MASKED (softmax, max);
 * Attention along padded keys needs is_causal or a mask that is MASKED
 * (additive) or false (boolean) there; Trilu keeps the lower triangle
 * (the causal mask: keys after the query are zeroed); views that keep the
 * padded axis's outer and inner extents keep it; Concat, Split, Slice,
 * LayerNorm-style ops work along other axes. Anything else that touches a
 * padded axis refuses, naming the node. Mask constants of at most -1000 are
 * taken as masking, as every attention implementation does (exp(-1000)
 * is 0 in every float type; BERT's -10000 is -9984 in bf16). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/interp.h"
#include "xcomp/op.h"
#include "xcomp/passes.h"

typedef enum { PV_ANY, PV_CONST, PV_MASKED, PV_WILD } pv_kind_t;

typedef struct {
  pv_kind_t k;
  double c;
} pv_t;

typedef struct {
  bool dirty;
  bool symval;
  bool all_const; /* every element is c */
  double c;
  pv_t pad[XC_MAX_RANK];
} av_t;

typedef struct {
  const xc_node_t* node; /* where a value first went dirty */
  char msg[200];
} reason_t;

typedef struct {
  const xc_graph_t* g;
  const char* sym;
  av_t* av;          /* per value id */
  reason_t* reasons; /* per value id */
  char* why;
  size_t why_size;
  bool failed; /* why holds the reason */
} pc_t;

static const pv_t PV_ANY_V = {PV_ANY, 0};

static bool sym_uses(const xc_symexpr_t* e, const char* sym) {
  if (!e) return false;
  if (e->kind == XC_SYM_VAR) return strcmp(e->name, sym) == 0;
  return sym_uses(e->a, sym) || sym_uses(e->b, sym);
}

/* The dim is S itself. */
static bool is_pad_dim(xc_dim_t d, const char* sym) {
  return d.sym && d.sym->kind == XC_SYM_VAR && strcmp(d.sym->name, sym) == 0;
}

static bool is_padded(const xc_value_t* v, int a, const char* sym) {
  return v && a >= 0 && a < v->rank && is_pad_dim(v->dims[a], sym);
}

static bool has_padded_axis(const xc_value_t* v, const char* sym) {
  for (int a = 0; v && a < v->rank; a++)
    if (is_pad_dim(v->dims[a], sym)) return true;
  return false;
}

/* A dim that involves S other than as S (seq*4, seq-1). */
static bool has_complex_dim(const xc_value_t* v, const char* sym) {
  for (int a = 0; v && a < v->rank; a++)
    if (v->dims[a].sym && !is_pad_dim(v->dims[a], sym) && sym_uses(v->dims[a].sym, sym)) return true;
  return false;
}

static av_t* AV(pc_t* p, const xc_value_t* v) { return &p->av[v->id]; }

/* Marks every output of n dirty and remembers why: the reason of a dirty
 * input when there is one (where it went wrong first), else this node's. */
static void dirty_out(pc_t* p, const xc_node_t* n, const char* fmt, const char* detail) {
  const reason_t* from = NULL;
  for (int i = 0; i < n->num_inputs && !from; i++)
    if (n->inputs[i] && p->reasons[n->inputs[i]->id].node) from = &p->reasons[n->inputs[i]->id];
  for (int k = 0; k < n->num_outputs; k++) {
    const xc_value_t* o = n->outputs[k];
    if (!o) continue;
    AV(p, o)->dirty = true;
    if (p->reasons[o->id].node) continue;
    if (from) {
      p->reasons[o->id] = *from;
    } else {
      p->reasons[o->id].node = n;
      snprintf(p->reasons[o->id].msg, sizeof p->reasons[o->id].msg, fmt, detail ? detail : "");
    }
  }
}

/* A dirty input makes every output dirty (with the input's reason). */
static void propagate_dirty(pc_t* p, const xc_node_t* n) {
  for (int i = 0; i < n->num_inputs; i++)
    if (n->inputs[i] && AV(p, n->inputs[i])->dirty) {
      dirty_out(p, n, "%s", "");
      return;
    }
}

/* The input's axis aligned (numpy broadcasting) with output axis a of an
 * output of rank out_rank, or -1 when the input has no such axis or size 1. */
static int aligned_axis(const xc_value_t* in, int out_rank, int a) {
  int ia = a - (out_rank - in->rank);
  if (ia < 0) return -1;
  xc_dim_t d = in->dims[ia];
  if (!d.sym && d.value == 1) return -1;
  return ia;
}

/* What input i contributes to output padded axis a. */
static pv_t contribution(pc_t* p, const xc_value_t* in, int out_rank, int a) {
  const av_t* v = AV(p, in);
  int ia = aligned_axis(in, out_rank, a);
  if (ia >= 0 && is_padded(in, ia, p->sym)) return v->pad[ia];
  if (v->all_const) return (pv_t){PV_CONST, v->c};
  return PV_ANY_V;
}

static bool is_masking(pv_t v) { return v.k == PV_MASKED || (v.k == PV_CONST && v.c <= -1000); }
/* Finite (ANY is finite by assumption, as the kept positions are). */
static bool is_finite_pv(pv_t v) { return v.k == PV_ANY || (v.k == PV_CONST && isfinite(v.c)); }

/* Evaluates n's op on scalars (every operand a constant). */
static bool eval_scalar(const xc_node_t* n, const double* cs, double* out) {
  xc_tensor_t* ins[8] = {0};
  xc_tensor_t* outs[4] = {0};
  bool ok = n->num_inputs <= 8 && n->num_outputs >= 1 && n->num_outputs <= 4;
  for (int i = 0; i < n->num_inputs && ok; i++) {
    if (!n->inputs[i]) continue;
    if (xc_tensor_create(n->inputs[i]->dtype, 0, NULL, &ins[i])) {
      ok = false;
      break;
    }
    xc_tensor_set_f64(ins[i], 0, cs[i]);
  }
  if (ok) {
    xc_status_t s = xc_interp_eval_node(n, n->num_inputs, (const xc_tensor_t* const*)ins, outs);
    if (s) {
      xc_status_free(s);
      ok = false;
    } else {
      ok = outs[0] && outs[0]->numel == 1;
      *out = ok ? xc_tensor_get_f64(outs[0], 0) : NAN;
    }
  }
  for (int i = 0; i < 8; i++) xc_tensor_destroy(ins[i]);
  for (int i = 0; i < 4; i++) xc_tensor_destroy(outs[i]);
  return ok;
}

static bool op_is(const xc_node_t* n, const char* name) { return strcmp(n->op_type, name) == 0; }

static bool in_list(const char* s, const char* const* list) {
  for (int i = 0; list[i]; i++)
    if (strcmp(s, list[i]) == 0) return true;
  return false;
}

static const char* const ELEMENTWISE[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Where", "Cast", "CastLike",
    "Identity", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Sin", "Cos", "Tan", "Tanh", "Sigmoid",
    "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Gelu", "Silu", "Softplus", "Softsign", "HardSigmoid",
    "HardSwish", "Mish", "Erf", "Sign", "Floor", "Ceil", "Round", "Clip", "Not", "And", "Or", "Xor",
    "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "IsNaN", "IsInf", "PRelu", "ThresholdedRelu",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "BitwiseNot", "QuickGelu", NULL};

static pv_t combine_elementwise(pc_t* p, const xc_node_t* n, int out_rank, int a) {
  pv_t c[8];
  int ni = n->num_inputs < 8 ? n->num_inputs : 8;
  bool all_const = true;
  double cs[8] = {0};
  for (int i = 0; i < ni; i++) {
    c[i] = n->inputs[i] ? contribution(p, n->inputs[i], out_rank, a) : (pv_t){PV_CONST, 0};
    cs[i] = c[i].c;
    if (c[i].k != PV_CONST) all_const = false;
  }
  if (all_const) {
    double r;
    if (eval_scalar(n, cs, &r)) return isnan(r) ? (pv_t){PV_WILD, 0} : (pv_t){PV_CONST, r};
    return PV_ANY_V;
  }
  const char* op = n->op_type;
  for (int i = 0; i < ni; i++)
    if (c[i].k == PV_WILD) return c[i];
  if ((!strcmp(op, "Div") || !strcmp(op, "Mod")) && ni == 2 && c[1].k == PV_CONST && c[1].c == 0)
    return (pv_t){PV_WILD, 0};
  if (!strcmp(op, "Add") || !strcmp(op, "Sum") || !strcmp(op, "Min")) {
    bool m = false;
    for (int i = 0; i < ni; i++) m |= is_masking(c[i]);
    if (m) return (pv_t){PV_MASKED, 0};
  }
  if (!strcmp(op, "Sub") && ni == 2 && is_masking(c[0]) && !is_masking(c[1]) &&
      !(c[1].k == PV_CONST && c[1].c < 0))
    return (pv_t){PV_MASKED, 0};
  if ((!strcmp(op, "Mul") || !strcmp(op, "Div")) && ni == 2) {
    if (c[0].k == PV_MASKED && c[1].k == PV_CONST && c[1].c > 0) return (pv_t){PV_MASKED, 0};
    if (!strcmp(op, "Mul") && c[1].k == PV_MASKED && c[0].k == PV_CONST && c[0].c > 0) return (pv_t){PV_MASKED, 0};
  }
  if ((!strcmp(op, "Cast") || !strcmp(op, "Identity")) && c[0].k == PV_MASKED) {
    xc_dtype_t t = n->outputs[0]->dtype;
    if (t == XC_F32 || t == XC_F16 || t == XC_BF16 || t == XC_F64) return c[0];
  }
  if (!strcmp(op, "Where") && ni == 3 && c[0].k == PV_CONST) return c[0].c != 0 ? c[1] : c[2];
  return PV_ANY_V;
}

static void do_elementwise(pc_t* p, const xc_node_t* n) {
  const xc_value_t* o = n->outputs[0];
  av_t* r = AV(p, o);
  bool all_const = true;
  double cs[8] = {0};
  for (int i = 0; i < n->num_inputs && i < 8; i++) {
    const xc_value_t* in = n->inputs[i];
    if (!in) continue;
    if (!AV(p, in)->all_const) all_const = false;
    cs[i] = AV(p, in)->c;
  }
  if (all_const && n->num_inputs <= 8) r->all_const = eval_scalar(n, cs, &r->c) && !isnan(r->c);
  for (int a = 0; a < o->rank; a++)
    if (is_padded(o, a, p->sym)) r->pad[a] = combine_elementwise(p, n, o->rank, a);
}

/* Static product of dims [from, to) of v; -1 when a dim is symbolic. */
static int64_t static_product(const xc_value_t* v, int from, int to) {
  int64_t prod = 1;
  for (int a = from; a < to; a++) {
    if (v->dims[a].sym) return -1;
    prod *= v->dims[a].value;
  }
  return prod;
}

static int count_padded(const xc_value_t* v, const char* sym, int* first) {
  int c = 0;
  *first = -1;
  for (int a = 0; a < v->rank; a++)
    if (is_pad_dim(v->dims[a], sym)) {
      if (*first < 0) *first = a;
      c++;
    }
  return c;
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the padded axis keeps its outer and
 * inner extents (the elements keep their order around it). */
static void do_view(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0], *o = n->outputs[0];
  int ia, oa;
  int ci = count_padded(in, p->sym, &ia), co = count_padded(o, p->sym, &oa);
  if (ci == 0 && co == 0) return;
  if (ci != 1 || co != 1 || static_product(in, 0, ia) < 0 || static_product(in, ia + 1, in->rank) < 0 ||
      static_product(in, 0, ia) != static_product(o, 0, oa) ||
      static_product(in, ia + 1, in->rank) != static_product(o, oa + 1, o->rank)) {
    dirty_out(p, n, "the view moves the padded dim%s", NULL);
    return;
  }
  AV(p, o)->pad[oa] = AV(p, in)->pad[ia];
}

static void do_transpose(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0], *o = n->outputs[0];
  int64_t cnt = 0;
  const int64_t* perm = xc_node_attr_ints(n, "perm", &cnt);
  for (int a = 0; a < o->rank; a++) {
    int src = cnt == o->rank ? (int)perm[a] : o->rank - 1 - a;
    if (is_padded(o, a, p->sym)) AV(p, o)->pad[a] = AV(p, in)->pad[src];
  }
}

/* Softmax / LogSoftmax / reductions: along the axes in `red` (a mask). */
static void do_reduce_like(pc_t* p, const xc_node_t* n, unsigned red, bool softmax, bool log_softmax) {
  const xc_value_t* in = n->inputs[0];
  const av_t* v = AV(p, in);
  for (int a = 0; a < in->rank; a++) {
    if (!(red & (1u << a)) || !is_padded(in, a, p->sym)) continue;
    pv_t pv = v->pad[a];
    bool ok = false;
    if (softmax || log_softmax || op_is(n, "ReduceMax") || op_is(n, "ReduceLogSumExp")) ok = is_masking(pv);
    else if (op_is(n, "ReduceSum") || op_is(n, "ReduceL1") || op_is(n, "ReduceL2") || op_is(n, "ReduceSumSquare"))
      ok = pv.k == PV_CONST && pv.c == 0;
    if (!ok) {
      dirty_out(p, n, "reduces over the padded dim where the padded elements are not neutral%s", NULL);
      return;
    }
  }
  const xc_value_t* o = n->outputs[0];
  for (int a = 0; a < o->rank; a++) {
    if (!is_padded(o, a, p->sym)) continue;
    bool along = (red & (1u << a)) != 0;
    if (softmax && along) AV(p, o)->pad[a] = (pv_t){PV_CONST, 0};
    else if (log_softmax && along) AV(p, o)->pad[a] = (pv_t){PV_MASKED, 0};
    else AV(p, o)->pad[a] = PV_ANY_V;
  }
}

static unsigned axes_mask_of(const xc_node_t* n, int rank) {
  /* axes from the attribute (older opsets) or the constant second input */
  int64_t cnt = 0;
  const int64_t* axes = NULL;
  int64_t buf[XC_MAX_RANK];
  if (xc_node_has_attr(n, "axes")) {
    axes = xc_node_attr_ints(n, "axes", &cnt);
  } else if (n->num_inputs > 1 && n->inputs[1] && n->inputs[1]->constant) {
    const xc_tensor_t* t = n->inputs[1]->constant;
    cnt = t->numel < XC_MAX_RANK ? t->numel : XC_MAX_RANK;
    for (int64_t i = 0; i < cnt; i++) buf[i] = xc_tensor_get_i64(t, i);
    axes = buf;
  }
  if (!axes || cnt == 0) return (1u << rank) - 1u;
  unsigned m = 0;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a >= 0 && a < rank) m |= 1u << a;
  }
  return m;
}

static void do_matmul(pc_t* p, const xc_node_t* n) {
  const xc_value_t* A = n->inputs[0], *B = n->inputs[1];
  if (A->rank < 2 || B->rank < 2) {
    if (has_padded_axis(A, p->sym) || has_padded_axis(B, p->sym)) dirty_out(p, n, "a 1-D MatMul over the padded dim%s", NULL);
    return;
  }
  int ka = A->rank - 1, kb = B->rank - 2;
  bool pa = is_padded(A, ka, p->sym), pb = is_padded(B, kb, p->sym);
  if (pa || pb) {
    pv_t va = pa ? AV(p, A)->pad[ka] : PV_ANY_V, vb = pb ? AV(p, B)->pad[kb] : PV_ANY_V;
    bool za = va.k == PV_CONST && va.c == 0, zb = vb.k == PV_CONST && vb.c == 0;
    bool ok = (za && is_finite_pv(vb)) || (zb && is_finite_pv(va));
    if (!ok) {
      dirty_out(p, n, "contracts over the padded dim where neither side is zero%s", NULL);
      return;
    }
  }
  /* o's padded axes hold anything finite: visit's default */
}

static void do_attention(pc_t* p, const xc_node_t* n) {
  const xc_value_t* Q = n->inputs[0], *K = n->inputs[1];
  int r = Q->rank;
  if (n->num_inputs > 4) {
    for (int i = 4; i < n->num_inputs; i++)
      if (n->inputs[i] && (has_padded_axis(n->inputs[i], p->sym) || AV(p, n->inputs[i])->symval)) {
        dirty_out(p, n, "attention with a cache over the padded dim%s", NULL);
        return;
      }
  }
  int kseq = K->rank - 2;
  if (r == 3) kseq = 1;
  if (is_padded(K, kseq, p->sym)) {
    bool causal = xc_node_attr_int(n, "is_causal") != 0 && is_padded(Q, r == 3 ? 1 : r - 2, p->sym);
    bool masked = false;
    const xc_value_t* M = n->num_inputs > 3 ? n->inputs[3] : NULL;
    if (!causal && M && is_padded(M, M->rank - 1, p->sym)) {
      pv_t mv = AV(p, M)->pad[M->rank - 1];
      masked = M->dtype == XC_BOOL ? (mv.k == PV_CONST && mv.c == 0) : is_masking(mv);
    }
    if (!causal && !masked) {
      dirty_out(p, n, "attends to padded keys (no causal flag, no mask that hides them)%s", NULL);
      return;
    }
  }
  for (int k = 0; k < n->num_outputs; k++) {
    const xc_value_t* o = n->outputs[k];
    if (!o) continue;
    if (k > 0 && has_padded_axis(o, p->sym)) {
      dirty_out(p, n, "attention's extra outputs over the padded dim%s", NULL);
      return;
    }
  }
}

static void do_trilu(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0], *o = n->outputs[0];
  int64_t k = 0;
  if (n->num_inputs > 1 && n->inputs[1]) {
    if (!n->inputs[1]->constant) {
      if (has_padded_axis(in, p->sym)) dirty_out(p, n, "a diagonal offset that is not a constant%s", NULL);
      return;
    }
    k = xc_tensor_get_i64(n->inputs[1]->constant, 0);
  }
  int r = o->rank;
  bool pr = is_padded(o, r - 2, p->sym), pc = is_padded(o, r - 1, p->sym);
  for (int a = 0; a < r - 2; a++)
    if (is_padded(o, a, p->sym)) AV(p, o)->pad[a] = AV(p, in)->pad[a];
  bool upper = xc_node_attr_int(n, "upper") != 0;
  if (!pr && !pc) return;
  /* Lower (k <= 0): a column j >= n beside a row i < n has j > i >= i + k,
   * so it is zeroed; a row i >= n beside a column j < n keeps its input. */
  if (!upper && k <= 0 && pr && pc) {
    AV(p, o)->pad[r - 1] = (pv_t){PV_CONST, 0};
    AV(p, o)->pad[r - 2] = AV(p, in)->pad[r - 2];
    return;
  }
  if (upper && k >= 1 && pr && pc) {
    AV(p, o)->pad[r - 2] = (pv_t){PV_CONST, 0};
    AV(p, o)->pad[r - 1] = AV(p, in)->pad[r - 1];
    return;
  }
  /* Otherwise a padded axis next to a static one: the triangle's border
   * does not depend on n, but which side is kept may: refuse. */
  dirty_out(p, n, "a triangle over the padded dim that is not causal%s", NULL);
}

static void do_gather(pc_t* p, const xc_node_t* n) {
  const xc_value_t* D = n->inputs[0], *I = n->inputs[1], *o = n->outputs[0];
  int axis = (int)xc_node_attr_int(n, "axis");
  if (axis < 0) axis += D->rank;
  if (is_padded(D, axis, p->sym)) {
    dirty_out(p, n, "gathers along the padded dim (indices may pick padded positions)%s", NULL);
    return;
  }
  if (AV(p, I)->symval) {
    dirty_out(p, n, "indices computed from the padded size%s", NULL);
    return;
  }
  /* out = D[:axis] + I + D[axis+1:] */
  for (int a = 0; a < o->rank; a++) {
    if (!is_padded(o, a, p->sym)) continue;
    if (a < axis) AV(p, o)->pad[a] = AV(p, D)->pad[a];
    else if (a < axis + I->rank) AV(p, o)->pad[a] = PV_ANY_V;
    else AV(p, o)->pad[a] = AV(p, D)->pad[a - I->rank + 1];
  }
}

/* Along `axis`: Concat, Split, Slice (elsewhere), LayerNorm-style ops
 * (from axis on). Refuses when a padded axis is in the affected set. */
static bool axes_clear(pc_t* p, const xc_node_t* n, const xc_value_t* v, unsigned affected, const char* what) {
  for (int a = 0; a < v->rank; a++)
    if ((affected & (1u << a)) && is_padded(v, a, p->sym)) {
      dirty_out(p, n, "%s along the padded dim", what);
      return false;
    }
  return true;
}

static void copy_pads_same_rank(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0];
  for (int k = 0; k < n->num_outputs; k++) {
    const xc_value_t* o = n->outputs[k];
    if (!o) continue;
    for (int a = 0; a < o->rank && a < in->rank; a++)
      if (is_padded(o, a, p->sym)) AV(p, o)->pad[a] = AV(p, in)->pad[a];
  }
}

static void do_slice(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0], *o = n->outputs[0];
  if (in->rank != o->rank) {
    dirty_out(p, n, "a slice that changes the rank%s", NULL);
    return;
  }
  for (int a = 0; a < in->rank; a++) {
    bool pi = is_padded(in, a, p->sym), po = is_padded(o, a, p->sym);
    if (pi != po) {
      dirty_out(p, n, "slices the padded dim%s", NULL);
      return;
    }
  }
  /* Along a padded axis the output has the same dim S: the slice takes it
   * whole only when it starts at 0 with step 1; check the constant starts. */
  const xc_value_t* st = n->num_inputs > 1 ? n->inputs[1] : NULL;
  const xc_value_t* ax = n->num_inputs > 3 ? n->inputs[3] : NULL;
  const xc_value_t* sp = n->num_inputs > 4 ? n->inputs[4] : NULL;
  if (st && st->constant) {
    for (int64_t i = 0; i < st->constant->numel; i++) {
      int64_t axis = ax && ax->constant ? xc_tensor_get_i64(ax->constant, i) : i;
      if (axis < 0) axis += in->rank;
      if (!is_padded(in, (int)axis, p->sym)) continue;
      int64_t s = xc_tensor_get_i64(st->constant, i);
      int64_t step = sp && sp->constant ? xc_tensor_get_i64(sp->constant, i) : 1;
      if (s != 0 || step != 1) {
        dirty_out(p, n, "slices the padded dim%s", NULL);
        return;
      }
    }
  } else if (has_padded_axis(in, p->sym)) {
    dirty_out(p, n, "slices with starts that are not constants%s", NULL);
    return;
  }
  copy_pads_same_rank(p, n);
}

static void do_concat(pc_t* p, const xc_node_t* n) {
  const xc_value_t* o = n->outputs[0];
  int axis = (int)xc_node_attr_int(n, "axis");
  if (axis < 0) axis += o->rank;
  if (!axes_clear(p, n, o, 1u << axis, "concatenates")) return;
  for (int i = 0; i < n->num_inputs; i++)
    if (n->inputs[i] && n->inputs[i]->rank == o->rank && !axes_clear(p, n, n->inputs[i], 1u << axis, "concatenates"))
      return;
  for (int a = 0; a < o->rank; a++) {
    if (!is_padded(o, a, p->sym)) continue;
    pv_t acc = contribution(p, n->inputs[0], o->rank, a);
    for (int i = 1; i < n->num_inputs; i++) {
      pv_t c = contribution(p, n->inputs[i], o->rank, a);
      if (c.k == PV_WILD || acc.k == PV_WILD) acc = (pv_t){PV_WILD, 0};
      else if (!(c.k == acc.k && (c.k != PV_CONST || c.c == acc.c)))
        acc = is_masking(c) && is_masking(acc) ? (pv_t){PV_MASKED, 0} : PV_ANY_V;
    }
    AV(p, o)->pad[a] = acc;
  }
}

static void do_expand(pc_t* p, const xc_node_t* n) {
  const xc_value_t* in = n->inputs[0], *o = n->outputs[0];
  for (int a = 0; a < o->rank; a++) {
    if (!is_padded(o, a, p->sym)) continue;
    AV(p, o)->pad[a] = contribution(p, in, o->rank, a);
  }
  AV(p, o)->all_const = AV(p, in)->all_const;
  AV(p, o)->c = AV(p, in)->c;
}

/* Inputs of op `n` that are shapes (their values say sizes, not data). */
static bool shape_operand(const xc_node_t* n, int i) {
  const char* op = n->op_type;
  if (i == 0) return !strcmp(op, "ConstantOfShape");
  if (!strcmp(op, "Reshape") || !strcmp(op, "Expand") || !strcmp(op, "Tile") || !strcmp(op, "Unsqueeze") ||
      !strcmp(op, "Squeeze") || !strcmp(op, "Split") || !strcmp(op, "Slice") || !strcmp(op, "Range") ||
      !strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean") || !strcmp(op, "ReduceMax") ||
      !strcmp(op, "ReduceMin") || !strcmp(op, "ReduceProd") || !strcmp(op, "Trilu"))
    return true;
  return false;
}

static void visit(pc_t* p, xc_graph_t* g, const xc_node_t* n) {
  const char* op = n->op_type;
  bool any_padded = false, any_sym = false, any_complex = false;
  for (int i = 0; i < n->num_inputs; i++) {
    const xc_value_t* in = n->inputs[i];
    if (!in) continue;
    if (AV(p, in)->symval && !shape_operand(n, i)) any_sym = true;
    any_padded |= has_padded_axis(in, p->sym);
    any_complex |= has_complex_dim(in, p->sym);
  }
  for (int k = 0; k < n->num_outputs; k++) {
    const xc_value_t* o = n->outputs[k];
    if (!o) continue;
    any_padded |= has_padded_axis(o, p->sym);
    any_complex |= has_complex_dim(o, p->sym);
    for (int a = 0; a < o->rank; a++) AV(p, o)->pad[a] = PV_ANY_V;
  }
  /* Shape values: their elements are known (possibly symbolic) sizes. */
  if (n->num_outputs == 1 && n->outputs[0]) {
    int64_t ne = 0;
    const xc_dim_t* el = NULL;
    if (xc_value_known_elems(g, n->outputs[0], &ne, &el)) {
      bool uses = false;
      for (int64_t i = 0; i < ne; i++) uses |= el[i].sym && sym_uses(el[i].sym, p->sym);
      AV(p, n->outputs[0])->symval = uses;
      if (!uses && ne == 1 && !el[0].sym) {
        AV(p, n->outputs[0])->all_const = true;
        AV(p, n->outputs[0])->c = (double)el[0].value;
      }
      return;
    }
  }
  if (op_is(n, "Shape") || op_is(n, "Size")) {
    AV(p, n->outputs[0])->symval = any_padded || any_complex;
    return;
  }
  if (op_is(n, "Range")) {
    bool ok = !AV(p, n->inputs[0])->symval && (!n->inputs[2] || !AV(p, n->inputs[2])->symval);
    if (!ok) dirty_out(p, n, "a range whose start or step depends on the padded size%s", NULL);
    return; /* positions 0, 1, ...: the kept prefix agrees */
  }
  if (any_sym) {
    /* Arithmetic on sizes (shape computations, a length as a float) stays
     * a size until it meets data along the padded dim or an output. */
    bool outputs_padded = false;
    for (int k = 0; k < n->num_outputs; k++)
      outputs_padded |= n->outputs[k] && (has_padded_axis(n->outputs[k], p->sym) || has_complex_dim(n->outputs[k], p->sym));
    if (outputs_padded) {
      dirty_out(p, n, "computes with the padded size as a number (at a bucket it is the bucket's size)%s", NULL);
      return;
    }
    for (int k = 0; k < n->num_outputs; k++)
      if (n->outputs[k]) AV(p, n->outputs[k])->symval = true;
    propagate_dirty(p, n);
    return;
  }
  if (!any_padded && !any_complex) {
    /* Nothing here depends on the padding; carry constness of scalars. */
    if (in_list(op, ELEMENTWISE) && n->num_outputs == 1) do_elementwise(p, n);
    if (op_is(n, "ConstantOfShape") && n->num_outputs == 1) {
      const xc_tensor_t* t = xc_node_find_attr(n, "value") ? xc_node_attr_tensor(n, "value") : NULL;
      AV(p, n->outputs[0])->all_const = true;
      AV(p, n->outputs[0])->c = t && t->numel == 1 ? xc_tensor_get_f64(t, 0) : 0.0;
    }
    propagate_dirty(p, n);
    return;
  }
  if (any_complex && !op_is(n, "Reshape") && !op_is(n, "Flatten") && !op_is(n, "Squeeze") && !op_is(n, "Unsqueeze")) {
    dirty_out(p, n, "a dim that involves the padded size other than as itself%s", NULL);
    return;
  }
  int rank0 = n->inputs[0] ? n->inputs[0]->rank : 0;
  if (in_list(op, ELEMENTWISE)) do_elementwise(p, n);
  else if (op_is(n, "ConstantOfShape")) {
    const xc_tensor_t* t = xc_node_find_attr(n, "value") ? xc_node_attr_tensor(n, "value") : NULL;
    double c = t && t->numel == 1 ? xc_tensor_get_f64(t, 0) : 0.0;
    const xc_value_t* o = n->outputs[0];
    AV(p, o)->all_const = true;
    AV(p, o)->c = c;
    for (int a = 0; a < o->rank; a++) AV(p, o)->pad[a] = (pv_t){PV_CONST, c};
  } else if (op_is(n, "Expand")) do_expand(p, n);
  else if (op_is(n, "Reshape") || op_is(n, "Flatten") || op_is(n, "Squeeze") || op_is(n, "Unsqueeze")) do_view(p, n);
  else if (op_is(n, "Transpose")) do_transpose(p, n);
  else if (op_is(n, "MatMul")) do_matmul(p, n);
  else if (op_is(n, "Softmax") || op_is(n, "LogSoftmax")) {
    int axis = (int)xc_node_attr_int(n, "axis");
    if (axis < 0) axis += rank0;
    do_reduce_like(p, n, 1u << axis, op_is(n, "Softmax"), op_is(n, "LogSoftmax"));
  } else if (!strncmp(op, "Reduce", 6)) {
    unsigned m = axes_mask_of(n, rank0);
    if (xc_node_attr_int(n, "keepdims") == 0) {
      /* the output's axes shift: only a reduction off the padded axes keeps them */
      if (!axes_clear(p, n, n->inputs[0], m, "reduces")) return;
      dirty_out(p, n, "reduces without keepdims next to the padded dim%s", NULL);
      return;
    }
    do_reduce_like(p, n, m, false, false);
  } else if (op_is(n, "LayerNormalization") || op_is(n, "RMSNormalization") || op_is(n, "SimplifiedLayerNormalization")) {
    int axis = (int)xc_node_attr_int(n, "axis");
    if (axis < 0) axis += rank0;
    unsigned m = ((1u << rank0) - 1u) & ~((1u << axis) - 1u);
    if (axes_clear(p, n, n->inputs[0], m, "normalizes")) copy_pads_same_rank(p, n);
  } else if (op_is(n, "SwiGLU") || op_is(n, "LpNormalization")) {
    if (axes_clear(p, n, n->inputs[0], 1u << (rank0 - 1), "computes")) copy_pads_same_rank(p, n);
  } else if (op_is(n, "Split")) {
    int axis = (int)xc_node_attr_int(n, "axis");
    if (axis < 0) axis += rank0;
    if (axes_clear(p, n, n->inputs[0], 1u << axis, "splits")) copy_pads_same_rank(p, n);
  } else if (op_is(n, "Slice")) do_slice(p, n);
  else if (op_is(n, "Concat")) do_concat(p, n);
  else if (op_is(n, "Gather")) do_gather(p, n);
  else if (op_is(n, "Trilu")) do_trilu(p, n);
  else if (op_is(n, "Attention")) do_attention(p, n);
  else {
    dirty_out(p, n, "the op is not known to keep padded positions apart%s", NULL);
    return;
  }
  propagate_dirty(p, n);
}

/* The node, and the source nodes it was made from when a pass fused it. */
static void describe(const xc_node_t* n, char* buf, size_t size) {
  xc_node_describe(n, buf, size);
  for (int i = 0; i < n->prov.num_origins && i < 4; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", i ? ", " : " (made from ", n->prov.origins[i]);
  }
  if (n->prov.num_origins) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s)", n->prov.num_origins > 4 ? ", ..." : "");
  }
}

bool xc_padding_check(xc_graph_t* g, const char* symbol, char* why, size_t why_size) {
  if (why_size) why[0] = '\0';
  reason_t* reasons = calloc((size_t)g->num_values + 1, sizeof(reason_t));
  pc_t p = {g, symbol, calloc((size_t)g->num_values + 1, sizeof(av_t)), reasons, why, why_size, false};
  if (!p.av || !reasons) {
    free(p.av);
    free(reasons);
    snprintf(why, why_size, "out of memory");
    return false;
  }
  for (int i = 0; i < g->num_values; i++) {
    const xc_value_t* v = g->values[i];
    if (v->constant && v->constant->numel >= 1) {
      /* a constant whose elements are all equal (a scalar, a splat) */
      double c0 = xc_tensor_get_f64(v->constant, 0);
      bool same = v->constant->numel <= 4096;
      for (int64_t k = 1; same && k < v->constant->numel; k++) same = xc_tensor_get_f64(v->constant, k) == c0;
      p.av[v->id].all_const = same;
      p.av[v->id].c = c0;
    }
  }
  /* Inputs: padded with zeros. */
  for (int i = 0; i < g->num_inputs; i++) {
    const xc_value_t* in = g->inputs[i];
    for (int a = 0; a < in->rank; a++) p.av[in->id].pad[a] = (pv_t){PV_CONST, 0};
    if (has_complex_dim(in, symbol) && !p.failed) {
      p.failed = true;
      snprintf(why, why_size, "input '%s' has a dim that involves '%s' other than as itself", in->name, symbol);
    }
  }
  for (int i = 0; i < g->num_nodes && !p.failed; i++) visit(&p, g, g->nodes[i]);
  for (int i = 0; i < g->num_outputs && !p.failed; i++) {
    const xc_value_t* o = g->outputs[i];
    if (p.av[o->id].dirty) {
      p.failed = true;
      const reason_t* r = &reasons[o->id];
      char where[256] = "";
      if (r->node) describe(r->node, where, sizeof where);
      snprintf(why, why_size, "output '%s' depends on padded positions through %s: %s", o->name,
               r->node ? where : "an input", r->node ? r->msg : "");
    } else if (has_complex_dim(o, symbol) || p.av[o->id].symval) {
      p.failed = true;
      snprintf(why, why_size, "output '%s' has a dim or values that involve '%s' other than as a dim of its own",
               o->name, symbol);
    }
  }
  free(reasons);
  free(p.av);
  return !p.failed;
}
