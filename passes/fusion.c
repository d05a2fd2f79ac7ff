/* Fusion planning: assigns every node of an optimized graph to one kernel
 * group. Groups are grown greedily around anchors, in this order:
 *
 *   1. attention: Attention ops, and MatMul -> elementwise -> Softmax ->
 *      elementwise -> MatMul chains, with the pure layout ops (Reshape,
 *      Transpose, Split, scale Mul) feeding them and following them;
 *   2. MatMul/Gemm/Conv with an epilogue of elementwise ops whose other
 *      operands are constants (bias, activation, scale, cast);
 *   3. reductions with their elementwise producers and consumers;
 *   4. MatMul/Gemm/Conv epilogues reading other kernels' results (residual);
 *   5. remaining elementwise chains;
 *   6. everything else is one data-movement group per op;
 *   7. views join their producer's or their consumers' group, or form view
 *      groups (aliases, no kernel).
 *
 * Invariants: a node is in one group only (nothing is recomputed); a group
 * never holds two anchors (reduction, GEMM, convolution, attention); every
 * value a group produces and something outside uses is an output of the
 * group (materialized); the group graph stays acyclic; a group has at most
 * traits->max_fused_ops computing members. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/fusion.h"
#include "xcomp/op.h"

enum {
  C_CONST,
  C_VIEW,
  C_ELEM,
  C_RED,
  C_GEMM,
  C_CONV,
  C_ATTN,
  C_DATA,
};

static bool in_list(const char* s, const char* const* list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

static const char* const elem_ops[] = {
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BatchNormalization",
    "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil",
    "Celu", "Clip", "Cos", "Cosh", "DequantizeLinear", "Div", "Dropout", "Elu", "Equal", "Erf",
    "Exp", "Expand", "Floor", "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish",
    "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mish",
    "Mod", "Mul", "Neg", "Not", "Or", "PRelu", "Pow", "QuantizeLinear", "Reciprocal", "Relu",
    "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt",
    "Sub", "Sum", "Swish", "Tan", "Tanh", "ThresholdedRelu", "Where", "Xor", NULL};
static const char* const composite_elem_words[] = {"gelu", "silu", "swish", "glu", "relu",
                                                   "sigmoid", "tanh", NULL};
static const char* const red_ops[] = {
    "ArgMax", "ArgMin", "AveragePool", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool",
    "GroupNormalization", "Hardmax", "InstanceNormalization", "LayerNormalization",
    "LogSoftmax", "LpNormalization", "LpPool", "MaxPool", "MeanVarianceNormalization",
    "RMSNormalization", "Softmax", NULL};
static const char* const gemm_ops[] = {"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum",
                                       NULL};
static const char* const conv_ops[] = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv",
                                       "DeformConv", "ConvNHWC", NULL};
static const char* const view_ops[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity",
                                       NULL};

static int classify(const xc_node_t* n) {
  const char* t = n->op_type;
  bool onnx = n->domain[0] == 0 || strcmp(n->domain, "ai.onnx") == 0;
  if (onnx && strcmp(t, "Constant") == 0) return C_CONST;
  if (onnx && in_list(t, view_ops)) return C_VIEW;
  if (strcmp(t, "Attention") == 0 || strcmp(t, "MultiHeadAttention") == 0 ||
      strcmp(t, "GroupQueryAttention") == 0)
    return C_ATTN;
  if (in_list(t, gemm_ops)) return C_GEMM;
  if (in_list(t, conv_ops)) return C_CONV;
  if (onnx) {
    if (in_list(t, elem_ops)) return C_ELEM;
    if (in_list(t, red_ops) || strncmp(t, "Reduce", 6) == 0) return C_RED;
    return C_DATA;
  }
  /* Composites (domain xcomp and others) by name, case-insensitively. */
  char low[64];
  size_t i = 0;
  for (; t[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)t[i]);
  low[i] = 0;
  for (const char* const* e = composite_elem_words; *e; e++)
    if (strstr(low, *e)) return C_ELEM;
  if (strstr(low, "norm") || strstr(low, "softmax") || strstr(low, "pool")) return C_RED;
  return C_DATA;
}

/* Layout ops that an attention group may take in front of or after it:
 * those its lowering turns into index math of its loads and stores (views,
 * Transpose, Split). Anything else in the group would be a phase of its
 * own, and a kernel of several phases runs as one program (a grid-wide
 * dependency): a bias Add, a RoPE or a Slice in front of Q/K/V made the
 * attention of a 512-token GPT-2 layer take 26 ms instead of a parallel
 * kernel's fraction of one. They stay GEMM epilogues or kernels of their own. */
static bool is_layout_op(const xc_node_t* n, int cls) {
  if (cls == C_VIEW) return true;
  return strcmp(n->op_type, "Transpose") == 0 || strcmp(n->op_type, "Split") == 0;
}

typedef struct {
  int kind;
  int n, cap;
  int* members; /* node indices */
  int ops;
  bool alive;
} grp_t;

typedef struct {
  const xc_graph_t* g;
  const xc_target_traits_t* tr;
  int n;            /* nodes */
  int* cls;
  int* grp;         /* node index -> group, -1 */
  int* idx_of;      /* node id -> index */
  int max_node_id;
  int nv;           /* value ids bound */
  int* use_start;   /* CSR of consumers per value id */
  int* use_list;
  bool* constlike;  /* per value id */
  bool* is_gout;    /* per value id: graph output */
  int ngroups, capgroups;
  grp_t* groups;
  int* stamp;       /* BFS marks */
  int cur_stamp;
  int* queue;
  bool oom;
} planner_t;

static int node_index(const planner_t* p, const xc_node_t* n) { return p->idx_of[n->id]; }

static int producer_index(const planner_t* p, const xc_value_t* v) {
  return v && v->producer ? node_index(p, v->producer) : -1;
}

static int num_uses(const planner_t* p, const xc_value_t* v) {
  return p->use_start[v->id + 1] - p->use_start[v->id];
}

static bool counts_as_op(const planner_t* p, int i) {
  return p->cls[i] != C_VIEW && p->cls[i] != C_CONST;
}

static int new_group(planner_t* p, int kind) {
  if (p->ngroups == p->capgroups) {
    int cap = p->capgroups ? p->capgroups * 2 : 16;
    grp_t* ng = realloc(p->groups, sizeof *ng * (size_t)cap);
    if (!ng) {
      p->oom = true;
      return -1;
    }
    p->groups = ng;
    p->capgroups = cap;
  }
  grp_t* gr = &p->groups[p->ngroups];
  memset(gr, 0, sizeof *gr);
  gr->kind = kind;
  gr->alive = true;
  return p->ngroups++;
}

static void add_member(planner_t* p, int gi, int i) {
  grp_t* gr = &p->groups[gi];
  if (gr->n == gr->cap) {
    int cap = gr->cap ? gr->cap * 2 : 8;
    int* nm = realloc(gr->members, sizeof *nm * (size_t)cap);
    if (!nm) {
      p->oom = true;
      return;
    }
    gr->members = nm;
    gr->cap = cap;
  }
  gr->members[gr->n++] = i;
  gr->ops += counts_as_op(p, i);
  p->grp[i] = gi;
}

static void remove_last_member(planner_t* p, int gi) {
  grp_t* gr = &p->groups[gi];
  int i = gr->members[--gr->n];
  gr->ops -= counts_as_op(p, i);
  p->grp[i] = -1;
}

/* True when some path leaves group gi and comes back into it, i.e. the group
 * graph would have a cycle. Reaching any member of another group reaches all
 * its members (a group runs as one kernel). */
static bool group_has_cycle(planner_t* p, int gi) {
  int stamp = ++p->cur_stamp;
  int head = 0, tail = 0;
  const grp_t* gr = &p->groups[gi];
  for (int m = 0; m < gr->n; m++) {
    const xc_node_t* nd = p->g->nodes[gr->members[m]];
    for (int k = 0; k < nd->num_outputs; k++) {
      const xc_value_t* v = nd->outputs[k];
      if (!v) continue;
      for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1]; u++) {
        int c = p->use_list[u];
        if (p->grp[c] == gi || p->stamp[c] == stamp) continue;
        p->stamp[c] = stamp;
        p->queue[tail++] = c;
      }
    }
  }
  while (head < tail) {
    int x = p->queue[head++];
    int h = p->grp[x];
    if (h >= 0 && h != gi) {
      const grp_t* hg = &p->groups[h];
      for (int m = 0; m < hg->n; m++) {
        int y = hg->members[m];
        if (p->stamp[y] != stamp) {
          p->stamp[y] = stamp;
          p->queue[tail++] = y;
        }
      }
    }
    const xc_node_t* nd = p->g->nodes[x];
    for (int k = 0; k < nd->num_outputs; k++) {
      const xc_value_t* v = nd->outputs[k];
      if (!v) continue;
      for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1]; u++) {
        int c = p->use_list[u];
        if (p->grp[c] == gi) return true;
        if (p->stamp[c] == stamp) continue;
        p->stamp[c] = stamp;
        p->queue[tail++] = c;
      }
    }
  }
  return false;
}

/* Adds node i to group gi when it is free, the op limit allows and no cycle
 * appears. */
static bool try_add(planner_t* p, int gi, int i, bool limit) {
  if (p->grp[i] != -1 || p->cls[i] == C_CONST) return false;
  int max_ops = p->tr->max_fused_ops;
  if (limit && max_ops > 0 && counts_as_op(p, i) && p->groups[gi].ops >= max_ops) return false;
  add_member(p, gi, i);
  if (p->oom) return false;
  if (group_has_cycle(p, gi)) {
    remove_last_member(p, gi);
    return false;
  }
  return true;
}

static bool produced_in(const planner_t* p, const xc_value_t* v, int gi) {
  int q = producer_index(p, v);
  return q >= 0 && p->grp[q] == gi;
}

/* Every use of every output of node i is in group gi (and none is a graph
 * output). */
static bool all_uses_in(const planner_t* p, int i, int gi) {
  const xc_node_t* nd = p->g->nodes[i];
  for (int k = 0; k < nd->num_outputs; k++) {
    const xc_value_t* v = nd->outputs[k];
    if (!v) continue;
    if (p->is_gout[v->id]) return false;
    for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1]; u++)
      if (p->grp[p->use_list[u]] != gi) return false;
  }
  return true;
}

/* Number of inputs of node i that are neither constants nor produced in gi. */
static int foreign_inputs(const planner_t* p, int i, int gi) {
  const xc_node_t* nd = p->g->nodes[i];
  int c = 0;
  for (int k = 0; k < nd->num_inputs; k++) {
    const xc_value_t* v = nd->inputs[k];
    if (v && !p->constlike[v->id] && !produced_in(p, v, gi)) c++;
  }
  return c;
}

/* ---- reductions: size of one reduced row ---------------------------------- */

static int64_t dims_product(const xc_value_t* v, int from, int to, bool* ok) {
  int64_t r = 1;
  for (int i = from; i < to; i++) {
    if (!xc_dim_is_static(v->dims[i])) {
      *ok = false;
      return 0;
    }
    r *= v->dims[i].value;
  }
  return r;
}

/* Bytes of one row a reduction reads; -1 when unknown. */
static int64_t reduction_row_bytes(const xc_node_t* n) {
  const xc_value_t* x = n->num_inputs > 0 ? n->inputs[0] : NULL;
  const xc_value_t* y = n->num_outputs > 0 ? n->outputs[0] : NULL;
  if (!x || !y || x->rank < 0 || y->rank < 0) return -1;
  bool ok = true;
  int64_t row;
  const char* t = n->op_type;
  const xc_attr_def_t* axis_def = n->op ? xc_op_find_attr_def(n->op, "axis") : NULL;
  if ((strstr(t, "Softmax") || strstr(t, "LayerNorm") || strstr(t, "RMSNorm") || strcmp(t, "Hardmax") == 0) &&
      axis_def && axis_def->kind == XC_ATTR_INT) {
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return -1;
    row = dims_product(x, (int)axis, x->rank, &ok);
  } else {
    int64_t in = dims_product(x, 0, x->rank, &ok);
    int64_t out = dims_product(y, 0, y->rank, &ok);
    row = ok && out > 0 ? in / out : 0;
  }
  if (!ok) return -1;
  return row * (int64_t)xc_dtype_size(x->dtype);
}

/* ---- phases ---------------------------------------------------------------- */

/* Layout producers: repeatedly takes the producer of an input of the group
 * when it is a layout op (or a scale by a constant) used only by the group. */
static void absorb_layout_producers(planner_t* p, int gi) {
  bool changed = true;
  while (changed && !p->oom) {
    changed = false;
    for (int m = 0; m < p->groups[gi].n; m++) {
      const xc_node_t* nd = p->g->nodes[p->groups[gi].members[m]];
      for (int k = 0; k < nd->num_inputs; k++) {
        const xc_value_t* v = nd->inputs[k];
        if (!v || p->constlike[v->id]) continue;
        int q = producer_index(p, v);
        if (q < 0 || p->grp[q] != -1) continue;
        const xc_node_t* pn = p->g->nodes[q];
        bool ok = is_layout_op(pn, p->cls[q]);
        if (!ok || !all_uses_in(p, q, gi)) continue;
        if (try_add(p, gi, q, false)) changed = true;
      }
    }
  }
}

/* Layout consumers: a chain of single-use layout ops after value v. */
static void absorb_layout_consumers(planner_t* p, int gi, const xc_value_t* v) {
  while (v && !p->oom && num_uses(p, v) == 1 && !p->is_gout[v->id]) {
    int c = p->use_list[p->use_start[v->id]];
    const xc_node_t* cn = p->g->nodes[c];
    if (!(p->cls[c] == C_VIEW || strcmp(cn->op_type, "Transpose") == 0) || cn->inputs[0] != v) return;
    if (!try_add(p, gi, c, false)) return;
    v = cn->outputs[0];
  }
}

static bool is_matmul(const planner_t* p, int i) {
  return i >= 0 && p->grp[i] == -1 && strcmp(p->g->nodes[i]->op_type, "MatMul") == 0;
}

/* A MatMul-Softmax-MatMul chain the attention pass left as it is lowers
 * as one kernel of three phases, which runs as a single program: fine for
 * a few rows, a disaster for long sequences (qwen2-style GQA at 512
 * tokens: 26 ms a layer). Chains whose softmax rows number more than a
 * couple of work-groups' worth stay three parallel kernels instead. */
static bool attention_chain_wanted(const planner_t* p, int s) {
  const xc_value_t* x = p->g->nodes[s]->inputs[0];
  if (!x || x->rank < 1) return false;
  int64_t rows = 1;
  for (int i = 0; i + 1 < x->rank; i++) {
    int64_t d = xc_dim_estimate(x->dims[i], 64, NULL);
    if (d < 0 || rows > INT64_MAX / (d ? d : 1)) return false;
    rows *= d;
  }
  return rows <= 256;
}

/* MatMul -> (elementwise|view)* -> Softmax -> (elementwise|view)* -> MatMul. */
static void plan_attention_chain(planner_t* p, int s) {
  const xc_graph_t* g = p->g;
  enum { MAXCHAIN = 16 };
  int pre[MAXCHAIN], npre = 0, m1 = -1;
  const xc_value_t* v = g->nodes[s]->inputs[0];
  for (int depth = 0; depth < MAXCHAIN && v; depth++) {
    int q = producer_index(p, v);
    if (q < 0 || p->grp[q] != -1) return;
    if (is_matmul(p, q)) {
      m1 = q;
      break;
    }
    if (p->cls[q] != C_ELEM && p->cls[q] != C_VIEW) return;
    pre[npre++] = q;
    /* Follow the operand that leads to a MatMul, else the first non-constant. */
    const xc_node_t* qn = g->nodes[q];
    const xc_value_t* next = NULL;
    for (int k = 0; k < qn->num_inputs; k++) {
      const xc_value_t* in = qn->inputs[k];
      if (!in || p->constlike[in->id]) continue;
      if (is_matmul(p, producer_index(p, in))) {
        next = in;
        break;
      }
      if (!next) next = in;
    }
    v = next;
  }
  if (m1 < 0) return;
  /* Forward: elementwise/view nodes reachable from the softmax. */
  int post[MAXCHAIN], npost = 0, m2 = -1;
  int frontier[MAXCHAIN + 1], nf = 0;
  frontier[nf++] = s;
  for (int f = 0; f < nf && m2 < 0; f++) {
    const xc_node_t* fn = g->nodes[frontier[f]];
    for (int k = 0; k < fn->num_outputs && m2 < 0; k++) {
      const xc_value_t* o = fn->outputs[k];
      if (!o) continue;
      for (int u = p->use_start[o->id]; u < p->use_start[o->id + 1]; u++) {
        int c = p->use_list[u];
        if (p->grp[c] != -1) continue;
        if (is_matmul(p, c) && g->nodes[c]->inputs[0] == o) {
          m2 = c;
          break;
        }
        if ((p->cls[c] == C_ELEM || p->cls[c] == C_VIEW) && npost < MAXCHAIN) {
          bool seen = false;
          for (int j = 0; j < npost; j++) seen = seen || post[j] == c;
          if (!seen) {
            post[npost++] = c;
            frontier[nf++] = c;
          }
        }
      }
    }
  }
  if (m2 < 0 || m2 == m1) return;
  int gi = new_group(p, XC_GROUP_ATTENTION);
  if (gi < 0) return;
  add_member(p, gi, m1);
  for (int j = npre - 1; j >= 0; j--) add_member(p, gi, pre[j]);
  add_member(p, gi, s);
  add_member(p, gi, m2);
  /* Post nodes that m2's operand depends on, latest first. */
  bool any = true;
  while (any) {
    any = false;
    for (int j = 0; j < npost; j++) {
      int c = post[j];
      if (p->grp[c] != -1) continue;
      const xc_node_t* cn = g->nodes[c];
      bool feeds = false;
      for (int k = 0; k < cn->num_outputs; k++)
        if (cn->outputs[k])
          for (int u = p->use_start[cn->outputs[k]->id]; u < p->use_start[cn->outputs[k]->id + 1]; u++)
            feeds = feeds || p->grp[p->use_list[u]] == gi;
      if (feeds) {
        add_member(p, gi, c);
        any = true;
      }
    }
  }
  if (p->oom) return;
  if (group_has_cycle(p, gi)) {
    while (p->groups[gi].n) remove_last_member(p, gi);
    p->groups[gi].alive = false;
    return;
  }
  absorb_layout_producers(p, gi);
  absorb_layout_consumers(p, gi, g->nodes[m2]->outputs[0]);
}

/* Elementwise (and view) consumers of the group's values. strict: every
 * other operand must be a constant or produced in the group. check_row: a
 * consumer that re-reads a value computed before the reduction `red` needs
 * the reduced row in shared memory. */
static int64_t numel_with(const xc_value_t* v, int64_t sym) {
  if (!v || v->rank < 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) {
    int64_t d = xc_dim_estimate(v->dims[i], sym, NULL);
    if (d < 0 || (d > 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

/* Same number of elements (symbols tried at two values). */
static bool same_numel(const xc_value_t* a, const xc_value_t* b) {
  for (int64_t sym = 1; sym <= 1009; sym += 1008) {
    int64_t x = numel_with(a, sym), y = numel_with(b, sym);
    if (x < 0 || x != y) return false;
  }
  return true;
}

static void absorb_consumers(planner_t* p, int gi, bool strict, int red) {
  bool changed = true;
  bool row_fits = true;
  /* A GEMM/conv epilogue works per output element: it must not broadcast
   * to more elements than the anchor produces. */
  const xc_value_t* anchor_out = NULL;
  int kind = p->groups[gi].kind;
  if (kind == XC_GROUP_GEMM || kind == XC_GROUP_CONV)
    anchor_out = p->g->nodes[p->groups[gi].members[0]]->outputs[0];
  if (red >= 0) {
    int64_t row = reduction_row_bytes(p->g->nodes[red]);
    row_fits = row >= 0 && row <= p->tr->shared_mem_bytes;
  }
  while (changed && !p->oom) {
    changed = false;
    for (int m = 0; m < p->groups[gi].n; m++) {
      const xc_node_t* nd = p->g->nodes[p->groups[gi].members[m]];
      for (int k = 0; k < nd->num_outputs; k++) {
        const xc_value_t* v = nd->outputs[k];
        if (!v) continue;
        for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1]; u++) {
          int c = p->use_list[u];
          if (p->grp[c] != -1) continue;
          const xc_node_t* cn = p->g->nodes[c];
          if (p->cls[c] == C_VIEW) {
            if (cn->inputs[0] == v && try_add(p, gi, c, true)) changed = true;
            continue;
          }
          if (p->cls[c] != C_ELEM) continue;
          if (strict && foreign_inputs(p, c, gi) > 0) continue;
          if (anchor_out && !same_numel(cn->outputs[0], anchor_out)) continue;
          if (red >= 0 && !row_fits) {
            /* Refuse when c reads a value produced before the reduction. */
            bool early = false;
            for (int j = 0; j < cn->num_inputs; j++) {
              const xc_value_t* in = cn->inputs[j];
              int q = in ? producer_index(p, in) : -1;
              if (q >= 0 && p->grp[q] == gi && q < red) early = true;
            }
            if (early) continue;
          }
          if (try_add(p, gi, c, true)) changed = true;
        }
      }
    }
  }
}

/* Elementwise/view producers of the group's inputs (any other operands). */
static void absorb_producers(planner_t* p, int gi) {
  bool changed = true;
  while (changed && !p->oom) {
    changed = false;
    for (int m = 0; m < p->groups[gi].n; m++) {
      const xc_node_t* nd = p->g->nodes[p->groups[gi].members[m]];
      for (int k = 0; k < nd->num_inputs; k++) {
        const xc_value_t* v = nd->inputs[k];
        if (!v || p->constlike[v->id]) continue;
        int q = producer_index(p, v);
        if (q < 0 || p->grp[q] != -1) continue;
        if (p->cls[q] != C_ELEM && p->cls[q] != C_VIEW) continue;
        if (try_add(p, gi, q, true)) changed = true;
      }
    }
  }
}

static int group_kind_of_anchor(int cls) {
  switch (cls) {
    case C_GEMM: return XC_GROUP_GEMM;
    case C_CONV: return XC_GROUP_CONV;
    case C_RED: return XC_GROUP_REDUCTION;
    case C_ATTN: return XC_GROUP_ATTENTION;
    case C_ELEM: return XC_GROUP_ELEMENTWISE;
    case C_VIEW: return XC_GROUP_VIEW;
    default: return XC_GROUP_DATA_MOVEMENT;
  }
}

static void run_phases(planner_t* p) {
  const xc_graph_t* g = p->g;
  int n = p->n;
  /* 1. attention */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1) continue;
    if (p->cls[i] == C_ATTN) {
      int gi = new_group(p, XC_GROUP_ATTENTION);
      if (gi < 0) return;
      add_member(p, gi, i);
      absorb_layout_producers(p, gi);
      if (g->nodes[i]->num_outputs > 0) absorb_layout_consumers(p, gi, g->nodes[i]->outputs[0]);
    } else if (strcmp(g->nodes[i]->op_type, "Softmax") == 0 && g->nodes[i]->num_inputs > 0 &&
               attention_chain_wanted(p, i)) {
      plan_attention_chain(p, i);
    }
  }
  /* 2. GEMM/conv with constant-operand epilogues */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || (p->cls[i] != C_GEMM && p->cls[i] != C_CONV)) continue;
    int gi = new_group(p, group_kind_of_anchor(p->cls[i]));
    if (gi < 0) return;
    add_member(p, gi, i);
    absorb_consumers(p, gi, true, -1);
  }
  /* 3. reductions */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || p->cls[i] != C_RED) continue;
    int gi = new_group(p, XC_GROUP_REDUCTION);
    if (gi < 0) return;
    add_member(p, gi, i);
    absorb_producers(p, gi);
    absorb_consumers(p, gi, false, i);
  }
  /* 4. GEMM/conv epilogues with other kernels' operands (residual add) */
  for (int gi = 0; gi < p->ngroups && !p->oom; gi++)
    if (p->groups[gi].alive &&
        (p->groups[gi].kind == XC_GROUP_GEMM || p->groups[gi].kind == XC_GROUP_CONV))
      absorb_consumers(p, gi, false, -1);
  /* 5. elementwise chains */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || p->cls[i] != C_ELEM) continue;
    const xc_node_t* nd = g->nodes[i];
    bool joined = false;
    for (int k = 0; k < nd->num_inputs && !joined; k++) {
      int q = nd->inputs[k] ? producer_index(p, nd->inputs[k]) : -1;
      if (q >= 0 && p->grp[q] >= 0 && p->groups[p->grp[q]].kind == XC_GROUP_ELEMENTWISE)
        joined = try_add(p, p->grp[q], i, true);
    }
    if (!joined) {
      int gi = new_group(p, XC_GROUP_ELEMENTWISE);
      if (gi < 0) return;
      add_member(p, gi, i);
    }
  }
  /* 6. other ops: one data-movement group each */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || p->cls[i] == C_CONST || p->cls[i] == C_VIEW) continue;
    int gi = new_group(p, group_kind_of_anchor(p->cls[i]));
    if (gi < 0) return;
    add_member(p, gi, i);
  }
  /* 7. views: join the producer's group, else the consumers' single group. */
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || p->cls[i] != C_VIEW) continue;
    const xc_node_t* nd = g->nodes[i];
    int q = nd->num_inputs > 0 ? producer_index(p, nd->inputs[0]) : -1;
    if (q >= 0 && p->grp[q] >= 0 && try_add(p, p->grp[q], i, true)) continue;
  }
  for (int i = n - 1; i >= 0 && !p->oom; i--) {
    if (p->grp[i] != -1 || p->cls[i] != C_VIEW) continue;
    const xc_node_t* nd = g->nodes[i];
    int target = -1;
    bool single = true;
    for (int k = 0; k < nd->num_outputs; k++) {
      const xc_value_t* v = nd->outputs[k];
      if (!v) continue;
      if (p->is_gout[v->id]) single = false;
      for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1]; u++) {
        int h = p->grp[p->use_list[u]];
        if (h < 0 || (target >= 0 && h != target)) single = false;
        target = h;
      }
    }
    if (single && target >= 0) try_add(p, target, i, true);
  }
  for (int i = 0; i < n && !p->oom; i++) {
    if (p->grp[i] != -1 || p->cls[i] == C_CONST) continue;
    const xc_node_t* nd = g->nodes[i];
    if (p->cls[i] == C_VIEW) {
      int q = nd->num_inputs > 0 ? producer_index(p, nd->inputs[0]) : -1;
      if (q >= 0 && p->grp[q] >= 0 && p->groups[p->grp[q]].kind == XC_GROUP_VIEW &&
          try_add(p, p->grp[q], i, true))
        continue;
    }
    int gi = new_group(p, group_kind_of_anchor(p->cls[i]));
    if (gi < 0) return;
    add_member(p, gi, i);
  }
}

/* ---- building the public plan ------------------------------------------- */

static int cmp_int(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

static xc_status_t push_value(xc_value_t*** arr, int* count, xc_value_t* v) {
  for (int i = 0; i < *count; i++)
    if ((*arr)[i] == v) return NULL;
  xc_value_t** na = realloc(*arr, sizeof *na * (size_t)(*count + 1));
  if (!na) return xc_error_oom();
  *arr = na;
  na[(*count)++] = v;
  return NULL;
}

static xc_status_t push_origin(xc_fusion_group_t* gr, const char* o) {
  if (!o) return NULL;
  for (int i = 0; i < gr->num_origins; i++)
    if (strcmp(gr->origins[i], o) == 0) return NULL;
  const char** na = realloc(gr->origins, sizeof *na * (size_t)(gr->num_origins + 1));
  if (!na) return xc_error_oom();
  gr->origins = na;
  na[gr->num_origins++] = o;
  return NULL;
}

static xc_status_t fill_group(const planner_t* p, const grp_t* src, xc_fusion_group_t* dst) {
  qsort(src->members, (size_t)src->n, sizeof(int), cmp_int);
  dst->kind = (xc_group_kind_t)src->kind;
  dst->num_ops = src->ops;
  dst->nodes = malloc(sizeof *dst->nodes * (size_t)(src->n ? src->n : 1));
  if (!dst->nodes) return xc_error_oom();
  int gi = p->grp[src->members[0]];
  for (int m = 0; m < src->n; m++) {
    xc_node_t* nd = p->g->nodes[src->members[m]];
    dst->nodes[dst->num_nodes++] = nd;
    for (int k = 0; k < nd->num_inputs; k++) {
      xc_value_t* v = nd->inputs[k];
      if (v && !produced_in(p, v, gi)) XC_RETURN_IF_ERROR(push_value(&dst->inputs, &dst->num_inputs, v));
    }
    for (int k = 0; k < nd->num_outputs; k++) {
      xc_value_t* v = nd->outputs[k];
      if (!v) continue;
      bool leaves = p->is_gout[v->id];
      for (int u = p->use_start[v->id]; u < p->use_start[v->id + 1] && !leaves; u++)
        leaves = p->grp[p->use_list[u]] != gi;
      if (leaves) XC_RETURN_IF_ERROR(push_value(&dst->outputs, &dst->num_outputs, v));
    }
    if (nd->prov.num_origins > 0) {
      for (int o = 0; o < nd->prov.num_origins; o++)
        XC_RETURN_IF_ERROR(push_origin(dst, nd->prov.origins[o]));
    } else {
      XC_RETURN_IF_ERROR(push_origin(dst, nd->prov.source ? nd->prov.source : nd->name));
    }
  }
  return NULL;
}

/* Topological order of the live groups (Kahn; ties by first member). */
static xc_status_t order_groups(planner_t* p, int* order, int* count) {
  int ng = p->ngroups;
  int* first = calloc((size_t)ng + 1, sizeof *first);
  bool* done = calloc((size_t)ng + 1, sizeof *done);
  if (!first || !done) {
    free(first);
    free(done);
    return xc_error_oom();
  }
  int live = 0;
  for (int gi = 0; gi < ng; gi++) {
    grp_t* gr = &p->groups[gi];
    if (!gr->alive || gr->n == 0) {
      done[gi] = true;
      continue;
    }
    live++;
    first[gi] = p->n;
    for (int m = 0; m < gr->n; m++)
      if (gr->members[m] < first[gi]) first[gi] = gr->members[m];
  }
  /* Simple O(G * N) selection: pick the ready group with the smallest first
   * member; a group is ready when all its external producers are done. */
  *count = 0;
  while (*count < live) {
    int best = -1;
    for (int gi = 0; gi < ng; gi++) {
      if (done[gi]) continue;
      bool ready = true;
      const grp_t* gr = &p->groups[gi];
      for (int m = 0; m < gr->n && ready; m++) {
        const xc_node_t* nd = p->g->nodes[gr->members[m]];
        for (int k = 0; k < nd->num_inputs && ready; k++) {
          int q = nd->inputs[k] ? producer_index(p, nd->inputs[k]) : -1;
          if (q >= 0 && p->grp[q] >= 0 && p->grp[q] != gi && !done[p->grp[q]]) ready = false;
        }
      }
      if (ready && (best < 0 || first[gi] < first[best])) best = gi;
    }
    if (best < 0) break; /* cannot happen: groups are kept acyclic */
    done[best] = true;
    order[(*count)++] = best;
  }
  free(first);
  free(done);
  if (*count < live) return xc_error(XC_INTERNAL, "fusion plan: group graph has a cycle");
  return NULL;
}

static xc_status_t planner_init(planner_t* p, const xc_graph_t* g, const xc_target_traits_t* tr) {
  memset(p, 0, sizeof *p);
  p->g = g;
  p->tr = tr;
  p->n = g->num_nodes;
  int n = p->n;
  p->max_node_id = 0;
  for (int i = 0; i < n; i++)
    if (g->nodes[i]->id > p->max_node_id) p->max_node_id = g->nodes[i]->id;
  p->nv = 0;
  for (int i = 0; i < g->num_values; i++)
    if (g->values[i]->id + 1 > p->nv) p->nv = g->values[i]->id + 1;
  for (int i = 0; i < n; i++) {
    const xc_node_t* nd = g->nodes[i];
    for (int k = 0; k < nd->num_inputs; k++)
      if (nd->inputs[k] && nd->inputs[k]->id + 1 > p->nv) p->nv = nd->inputs[k]->id + 1;
    for (int k = 0; k < nd->num_outputs; k++)
      if (nd->outputs[k] && nd->outputs[k]->id + 1 > p->nv) p->nv = nd->outputs[k]->id + 1;
  }
  p->cls = calloc((size_t)n + 1, sizeof *p->cls);
  p->grp = calloc((size_t)n + 1, sizeof *p->grp);
  p->idx_of = calloc((size_t)p->max_node_id + 1, sizeof *p->idx_of);
  p->use_start = calloc((size_t)p->nv + 2, sizeof *p->use_start);
  p->constlike = calloc((size_t)p->nv + 1, sizeof *p->constlike);
  p->is_gout = calloc((size_t)p->nv + 1, sizeof *p->is_gout);
  p->stamp = calloc((size_t)n + 1, sizeof *p->stamp);
  p->queue = calloc((size_t)n + 1, sizeof *p->queue);
  if (!p->cls || !p->grp || !p->idx_of || !p->use_start || !p->constlike || !p->is_gout ||
      !p->stamp || !p->queue)
    return xc_error_oom();
  int total_uses = 0;
  for (int i = 0; i < n; i++) {
    const xc_node_t* nd = g->nodes[i];
    p->idx_of[nd->id] = i;
    p->grp[i] = -1;
    p->cls[i] = classify(nd);
    for (int k = 0; k < nd->num_inputs; k++)
      if (nd->inputs[k]) {
        p->use_start[nd->inputs[k]->id + 1]++;
        total_uses++;
      }
  }
  for (int v = 0; v < p->nv; v++) p->use_start[v + 1] += p->use_start[v];
  p->use_list = calloc((size_t)total_uses + 1, sizeof *p->use_list);
  int* fill = calloc((size_t)p->nv + 1, sizeof *fill);
  if (!p->use_list || !fill) {
    free(fill);
    return xc_error_oom();
  }
  for (int i = 0; i < n; i++) {
    const xc_node_t* nd = g->nodes[i];
    for (int k = 0; k < nd->num_inputs; k++) {
      const xc_value_t* v = nd->inputs[k];
      if (!v) continue;
      /* One entry per (value, node), even if the node reads v twice. */
      bool dup = false;
      for (int j = 0; j < k; j++) dup = dup || nd->inputs[j] == v;
      if (dup) continue;
      p->use_list[p->use_start[v->id] + fill[v->id]++] = i;
    }
  }
  /* Compact the CSR (duplicate reads left holes at the end of each row). */
  int w = 0;
  for (int v = 0; v < p->nv; v++) {
    int s = p->use_start[v];
    p->use_start[v] = w;
    for (int j = 0; j < fill[v]; j++) p->use_list[w++] = p->use_list[s + j];
  }
  p->use_start[p->nv] = w;
  free(fill);
  for (int i = 0; i < g->num_outputs; i++) p->is_gout[g->outputs[i]->id] = true;
  for (int i = 0; i < g->num_values; i++)
    if (g->values[i]->constant) p->constlike[g->values[i]->id] = true;
  for (int i = 0; i < n; i++) {
    const xc_node_t* nd = g->nodes[i];
    bool c = p->cls[i] == C_CONST;
    if (p->cls[i] == C_VIEW) {
      c = nd->num_inputs > 0 && nd->inputs[0];
      for (int k = 0; k < nd->num_inputs; k++)
        if (nd->inputs[k] && !p->constlike[nd->inputs[k]->id]) c = false;
    }
    if (c)
      for (int k = 0; k < nd->num_outputs; k++)
        if (nd->outputs[k]) p->constlike[nd->outputs[k]->id] = true;
  }
  return NULL;
}

static void planner_free(planner_t* p) {
  for (int i = 0; i < p->ngroups; i++) free(p->groups[i].members);
  free(p->groups);
  free(p->cls);
  free(p->grp);
  free(p->idx_of);
  free(p->use_start);
  free(p->use_list);
  free(p->constlike);
  free(p->is_gout);
  free(p->stamp);
  free(p->queue);
}

xc_status_t xc_fusion_plan_build(const xc_graph_t* g, const xc_target_traits_t* traits,
                                 xc_fusion_plan_t** out) {
  *out = NULL;
  xc_target_traits_t defaults;
  if (!traits) {
    xc_target_traits_init(&defaults);
    traits = &defaults;
  }
  planner_t p;
  xc_status_t s = planner_init(&p, g, traits);
  if (!s) {
    run_phases(&p);
    if (p.oom) s = xc_error_oom();
  }
  xc_fusion_plan_t* plan = NULL;
  int* order = NULL;
  int count = 0;
  if (!s) {
    plan = calloc(1, sizeof *plan);
    order = calloc((size_t)p.ngroups + 1, sizeof *order);
    if (!plan || !order) s = xc_error_oom();
  }
  if (!s) s = order_groups(&p, order, &count);
  if (!s) {
    plan->groups = calloc((size_t)count + 1, sizeof *plan->groups);
    plan->num_nodes = p.max_node_id + 1;
    plan->group_of = calloc((size_t)plan->num_nodes + 1, sizeof *plan->group_of);
    if (!plan->groups || !plan->group_of) s = xc_error_oom();
  }
  if (!s) {
    for (int i = 0; i < plan->num_nodes; i++) plan->group_of[i] = -1;
    for (int j = 0; j < count && !s; j++) {
      xc_fusion_group_t* gr = &plan->groups[j];
      gr->id = j;
      plan->num_groups = j + 1;
      s = fill_group(&p, &p.groups[order[j]], gr);
      for (int m = 0; m < gr->num_nodes; m++) plan->group_of[gr->nodes[m]->id] = j;
    }
  }
  free(order);
  planner_free(&p);
  if (s) {
    xc_fusion_plan_destroy(plan);
    return s;
  }
  *out = plan;
  return NULL;
}

void xc_fusion_plan_destroy(xc_fusion_plan_t* plan) {
  if (!plan) return;
  for (int i = 0; i < plan->num_groups; i++) {
    free(plan->groups[i].nodes);
    free(plan->groups[i].inputs);
    free(plan->groups[i].outputs);
    free(plan->groups[i].origins);
  }
  free(plan->groups);
  free(plan->group_of);
  free(plan);
}

const char* xc_group_kind_name(xc_group_kind_t k) {
  switch (k) {
    case XC_GROUP_ELEMENTWISE: return "elementwise";
    case XC_GROUP_REDUCTION: return "reduction";
    case XC_GROUP_GEMM: return "gemm";
    case XC_GROUP_CONV: return "conv";
    case XC_GROUP_ATTENTION: return "attention";
    case XC_GROUP_DATA_MOVEMENT: return "data-movement";
    case XC_GROUP_VIEW: return "view";
  }
  return "?";
}

int xc_fusion_plan_kernel_count(const xc_fusion_plan_t* plan) {
  int k = 0;
  for (int i = 0; i < plan->num_groups; i++) k += plan->groups[i].kind != XC_GROUP_VIEW;
  return k;
}

const xc_fusion_group_t* xc_fusion_plan_group_of(const xc_fusion_plan_t* plan, const xc_node_t* n) {
  if (!n || n->id < 0 || n->id >= plan->num_nodes || plan->group_of[n->id] < 0) return NULL;
  return &plan->groups[plan->group_of[n->id]];
}
