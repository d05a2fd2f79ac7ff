/* The op registry: the list of op families and lookup by (domain, name). */
#include <string.h>

#include "xcomp/op.h"

extern const xc_op_def_t xc_ops_elementwise[];
extern const xc_op_def_t xc_ops_activation[];
extern const xc_op_def_t xc_ops_quant[];
extern const xc_op_def_t xc_ops_linalg[];
extern const xc_op_def_t xc_ops_conv[];
extern const xc_op_def_t xc_ops_norm[];
extern const xc_op_def_t xc_ops_shape[];
extern const xc_op_def_t xc_ops_shape2[];
extern const xc_op_def_t xc_ops_index[];
extern const xc_op_def_t xc_ops_reduce[];
extern const xc_op_def_t xc_ops_resize[];
extern const xc_op_def_t xc_ops_composite[];
extern const xc_op_def_t xc_ops_composite_layout[];

static const xc_op_def_t* const families[] = {
    xc_ops_elementwise,
    xc_ops_activation,
    xc_ops_quant,
    xc_ops_linalg,
    xc_ops_conv,
    xc_ops_norm,
    xc_ops_shape,
    xc_ops_shape2,
    xc_ops_index,
    xc_ops_reduce,
    xc_ops_resize,
    xc_ops_composite,
    xc_ops_composite_layout,
};

#define NUM_FAMILIES ((int)(sizeof families / sizeof families[0]))

int xc_op_count(void) {
  int n = 0;
  for (int f = 0; f < NUM_FAMILIES; f++)
    for (const xc_op_def_t* d = families[f]; d->name; d++) n++;
  return n;
}

const xc_op_def_t* xc_op_at(int i) {
  for (int f = 0; f < NUM_FAMILIES; f++)
    for (const xc_op_def_t* d = families[f]; d->name; d++)
      if (i-- == 0) return d;
  return NULL;
}

const xc_op_def_t* xc_op_lookup(const char* domain, const char* name) {
  if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
  for (int f = 0; f < NUM_FAMILIES; f++)
    for (const xc_op_def_t* d = families[f]; d->name; d++)
      if (strcmp(d->name, name) == 0 && strcmp(d->domain ? d->domain : "", domain) == 0)
        return d;
  return NULL;
}

const xc_attr_def_t* xc_op_find_attr_def(const xc_op_def_t* op, const char* name) {
  if (!op->attrs) return NULL;
  for (const xc_attr_def_t* a = op->attrs; a->name; a++)
    if (strcmp(a->name, name) == 0) return a;
  return NULL;
}
