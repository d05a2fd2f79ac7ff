/* Mask analysis for the attention rewrite (attention_mask.c). Internal to
 * passes/. */
#ifndef XCOMP_PASSES_ATTENTION_MASK_H
#define XCOMP_PASSES_ATTENTION_MASK_H

#include "xcomp/graph.h"

typedef enum xc_attn_mask_kind {
  XC_ATTN_MASK_NONE,
  XC_ATTN_MASK_ADD,    /* softmax(scores + value) */
  XC_ATTN_MASK_SELECT, /* softmax(Where(value, scores, fill)) or with branches swapped */
} xc_attn_mask_kind_t;

typedef struct xc_attn_mask {
  /* What was matched. */
  xc_attn_mask_kind_t kind;
  xc_value_t* value;     /* the additive mask, or the bool condition */
  bool keep_when_true;   /* SELECT: scores are the true branch */
  double fill;           /* SELECT: value of the masked scores */
  bool guard;            /* the softmax output has the NaN guard */
  xc_dtype_t dtype;      /* of the scores */
  int64_t sq, skv;       /* static query/key lengths, or -1 */
  /* The decision. */
  bool causal;           /* use is_causal = 1 and no mask input */
  xc_value_t* input;     /* attn_mask input, or NULL */
  bool negate;           /* input is a condition to be negated (Not) first */
} xc_attn_mask_t;

/* Fills the decision fields; false when Attention would not compute
 * exactly what the subgraph computes. */
bool xc_attn_mask_decide(xc_attn_mask_t* m);

#endif
