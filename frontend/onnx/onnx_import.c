/* The ONNX importer: ModelProto (protobuf-c) -> xcomp graph IR.
 *
 * Order of work: check the wire format, unpack, check the opset, add
 * initializers, graph inputs (minus those that are initializers), create
 * every node output value (so node order in the file need not be
 * topological), then build nodes: resolve input names, convert attributes,
 * upgrade older op versions (onnx_legacy.c), check the op is known. Finally
 * mark outputs, toposort, resolve ops and verify. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"
#include "xcomp/onnx.h"
#include "xcomp/op.h"


/* ---- small helpers ------------------------------------------------------ */

const char* xc_onnx_unique_name(xc_onnx_importer_t* im, const char* base, const char* suffix) {
  const char* name = xc_arena_printf(im->g->arena, "%s%s", base, suffix);
  for (int k = 1; name && xc_graph_find_value(im->g, name); k++)
    name = xc_arena_printf(im->g->arena, "%s%s_%d", base, suffix, k);
  return name;
}

xc_status_t xc_onnx_add_constant(xc_onnx_importer_t* im, const char* node_name,
                                 const char* what, xc_tensor_t* t, xc_value_t** out) {
  char suffix[128];
  snprintf(suffix, sizeof suffix, "__%s", what);
  const char* name = xc_onnx_unique_name(im, node_name, suffix);
  if (!name) {
    xc_tensor_destroy(t);
    return xc_error_oom();
  }
  return xc_graph_add_initializer(im->g, name, t, out);
}

const xc_tensor_t* xc_onnx_known_tensor(const xc_value_t* v) {
  if (!v) return NULL;
  if (v->constant) return v->constant;
  const xc_node_t* p = v->producer;
  if (p && strcmp(p->op_type, "Constant") == 0 && !*p->domain) {
    const xc_attr_t* a = xc_node_find_attr(p, "value");
    if (a && a->kind == XC_ATTR_TENSOR) return a->t;
  }
  return NULL;
}

static const Onnx__ValueInfoProto* find_value_info(xc_onnx_importer_t* im, const char* name) {
  for (size_t i = 0; i < im->gp->n_value_info; i++) {
    const Onnx__ValueInfoProto* vi = im->gp->value_info[i];
    if (vi->name && strcmp(vi->name, name) == 0) return vi;
  }
  return NULL;
}

int xc_onnx_hint_rank(xc_onnx_importer_t* im, const xc_value_t* v) {
  if (!v) return -1;
  if (v->rank >= 0) return v->rank;
  const xc_tensor_t* t = xc_onnx_known_tensor(v);
  if (t) return t->rank;
  const Onnx__ValueInfoProto* vi = find_value_info(im, v->name);
  if (vi && vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
      vi->type->tensor_type->shape)
    return (int)vi->type->tensor_type->shape->n_dim;
  return -1;
}

xc_dtype_t xc_onnx_hint_dtype(xc_onnx_importer_t* im, const xc_value_t* v) {
  if (!v) return XC_DTYPE_UNDEFINED;
  if (v->dtype != XC_DTYPE_UNDEFINED) return v->dtype;
  const xc_tensor_t* t = xc_onnx_known_tensor(v);
  if (t) return t->dtype;
  const Onnx__ValueInfoProto* vi = find_value_info(im, v->name);
  if (vi && vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return xc_dtype_from_onnx(vi->type->tensor_type->elem_type);
  return XC_DTYPE_UNDEFINED;
}

xc_status_t xc_onnx_node_set_input(xc_graph_t* g, xc_node_t* n, int pos, xc_value_t* v) {
  char where[512];
  if (pos < n->num_inputs) {
    if (n->inputs[pos])
      return xc_error(XC_INVALID_ARGUMENT, "%s: input %d given both as an input and an attribute",
                      xc_node_describe(n, where, sizeof where), pos);
    n->inputs[pos] = v;
    return NULL;
  }
  xc_value_t** ni = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(pos + 2));
  if (!ni) return xc_error_oom();
  for (int i = 0; i < n->num_inputs; i++) ni[i] = n->inputs[i];
  ni[pos] = v;
  n->inputs = ni;
  n->num_inputs = pos + 1;
  return NULL;
}

void xc_onnx_node_remove_attr(xc_node_t* n, const char* name) {
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) {
      for (int j = i + 1; j < n->num_attrs; j++) n->attrs[j - 1] = n->attrs[j];
      n->num_attrs--;
      return;
    }
}

void xc_onnx_node_set_prov(xc_onnx_importer_t* im, xc_node_t* n, const char* source) {
  n->prov.source = source;
  n->prov.file = im->file;
}

/* ---- types --------------------------------------------------------------- */

static const char* type_case_name(Onnx__TypeProto__ValueCase c) {
  switch (c) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "sparse tensor";
    case ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE: return "opaque";
    default: return "unknown";
  }
}

/* Type of a graph input: dtype and (symbolic) dims. */
static xc_status_t value_info_type(xc_onnx_importer_t* im, const Onnx__ValueInfoProto* vi,
                                   const char* kind, xc_dtype_t* dt, int* rank,
                                   xc_dim_t* dims) {
  const char* name = vi->name;
  const Onnx__TypeProto* tp = vi->type;
  if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
    return xc_error(XC_INVALID_ARGUMENT, "%s: %s '%s' has no type", im->what, kind, name);
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return xc_error(XC_UNSUPPORTED,
                    "%s: %s '%s' has non-tensor type '%s' (only tensors are supported)",
                    im->what, kind, name, type_case_name(tp->value_case));
  const Onnx__TypeProto__Tensor* tt = tp->tensor_type;
  *dt = xc_dtype_from_onnx(tt->elem_type);
  if (*dt == XC_DTYPE_UNDEFINED)
    return xc_error(XC_UNSUPPORTED, "%s: %s '%s' has unsupported element type %d (%s)",
                    im->what, kind, name, (int)tt->elem_type, xc_onnx_type_name(tt->elem_type));
  if (!tt->shape)
    return xc_error(XC_UNSUPPORTED, "%s: %s '%s' has no shape (unknown rank)", im->what, kind,
                    name);
  if (tt->shape->n_dim > XC_MAX_RANK)
    return xc_error(XC_UNSUPPORTED, "%s: %s '%s' has rank %zu (maximum %d)", im->what, kind,
                    name, tt->shape->n_dim, XC_MAX_RANK);
  *rank = (int)tt->shape->n_dim;
  for (int i = 0; i < *rank; i++) {
    const Onnx__TensorShapeProto__Dimension* d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0)
        return xc_error(XC_INVALID_ARGUMENT, "%s: %s '%s' has negative dim %lld", im->what,
                        kind, name, (long long)d->dim_value);
      dims[i] = xc_dim_const(d->dim_value);
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               d->dim_param && *d->dim_param) {
      dims[i] = xc_dim_var(im->g, d->dim_param);
    } else {
      dims[i] = xc_dim_fresh(im->g, "unk");
    }
  }
  return xc_graph_take_error(im->g);
}

/* ---- attributes ------------------------------------------------------------ */

static xc_status_t convert_attr(xc_onnx_importer_t* im, xc_node_t* n,
                                const Onnx__AttributeProto* a) {
  xc_graph_t* g = im->g;
  char where[512], what[768];
  xc_node_describe(n, where, sizeof where);
  const char* an = a->name;
  if (!an || !*an) return xc_error(XC_INVALID_ARGUMENT, "%s: attribute without a name", where);
  if (xc_node_find_attr(n, an))
    return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' given twice", where, an);
  if (a->ref_attr_name && *a->ref_attr_name)
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: attribute '%s' refers to a function attribute outside a function",
                    where, an);
  int type = a->has_type ? (int)a->type : 0;
  if (!type) { /* IR version 1: guess from the field in use */
    if (a->t) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    else if (a->g) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    else if (a->n_floats) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    else if (a->n_ints) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    else if (a->n_strings) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    else if (a->n_tensors) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    else if (a->has_s) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    else if (a->has_f) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    else if (a->has_i) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    else return xc_error(XC_INVALID_ARGUMENT, "%s: attribute '%s' has no value", where, an);
  }
  switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      return xc_node_set_float(g, n, an, a->f);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      return xc_node_set_int(g, n, an, a->i);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
      char* s = xc_arena_strndup(g->arena, a->s.data ? (const char*)a->s.data : "",
                                 a->s.data ? a->s.len : 0);
      if (!s) return xc_error_oom();
      return xc_node_set_string(g, n, an, s);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
      if (!a->t) return xc_error(XC_INVALID_ARGUMENT, "%s: tensor attribute '%s' is empty", where, an);
      snprintf(what, sizeof what, "%s: attribute '%s'", where, an);
      xc_tensor_t* t;
      XC_RETURN_IF_ERROR(xc_onnx_tensor_from_proto(a->t, what, im->ext, &t));
      return xc_node_set_tensor(g, n, an, t);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
      double* v = xc_arena_alloc(g->arena, sizeof(double) * (a->n_floats + 1));
      if (!v) return xc_error_oom();
      for (size_t i = 0; i < a->n_floats; i++) v[i] = a->floats[i];
      return xc_node_set_floats(g, n, an, (int64_t)a->n_floats, v);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      return xc_node_set_ints(g, n, an, (int64_t)a->n_ints, a->ints);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
      const char** v = xc_arena_alloc(g->arena, sizeof(char*) * (a->n_strings + 1));
      if (!v) return xc_error_oom();
      for (size_t i = 0; i < a->n_strings; i++) {
        const ProtobufCBinaryData* b = &a->strings[i];
        v[i] = xc_arena_strndup(g->arena, b->data ? (const char*)b->data : "",
                                b->data ? b->len : 0);
        if (!v[i]) return xc_error_oom();
      }
      return xc_node_set_strings(g, n, an, (int64_t)a->n_strings, v);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: {
      xc_tensor_t** ts = calloc(a->n_tensors + 1, sizeof *ts);
      if (!ts) return xc_error_oom();
      xc_status_t s = NULL;
      size_t made = 0;
      for (; made < a->n_tensors && !s; made++) {
        snprintf(what, sizeof what, "%s: attribute '%s'[%zu]", where, an, made);
        s = xc_onnx_tensor_from_proto(a->tensors[made], what, im->ext, &ts[made]);
      }
      if (s) {
        for (size_t i = 0; i < made; i++) xc_tensor_destroy(ts[i]);
        free(ts);
        return s;
      }
      s = xc_node_set_tensors(g, n, an, (int64_t)a->n_tensors, ts);
      free(ts);
      return s;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
      return xc_error(XC_UNSUPPORTED,
                      "%s: attribute '%s' holds a subgraph (control flow is not supported)",
                      where, an);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
      return xc_error(XC_UNSUPPORTED, "%s: attribute '%s' holds a sparse tensor (unsupported)",
                      where, an);
    default:
      return xc_error(XC_UNSUPPORTED, "%s: attribute '%s' has unsupported type %d", where, an,
                      type);
  }
}

/* ---- nodes ------------------------------------------------------------- */

static bool is_default_domain(const char* d) {
  return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static xc_status_t import_node(xc_onnx_importer_t* im, const Onnx__NodeProto* np, int index) {
  xc_graph_t* g = im->g;
  const char* op_type = np->op_type && *np->op_type ? np->op_type : NULL;
  const char* name = np->name && *np->name
                         ? np->name
                         : xc_arena_printf(g->arena, "%s_%d", op_type ? op_type : "node", index);
  if (!name) return xc_error_oom();
  if (!op_type)
    return xc_error(XC_INVALID_ARGUMENT, "%s: node '%s' has no op_type", im->what, name);
  const char* domain = is_default_domain(np->domain) ? "" : np->domain;
  if (np->n_input > 65536 || np->n_output > 65536)
    return xc_error(XC_UNSUPPORTED, "%s: node '%s' has too many inputs or outputs", im->what,
                    name);
  int nin = (int)np->n_input, nout = (int)np->n_output;
  while (nin > 0 && !*np->input[nin - 1]) nin--;
  while (nout > 0 && !*np->output[nout - 1]) nout--;
  xc_value_t** ins = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(nin + 1));
  xc_value_t** outs = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(nout + 1));
  if (!ins || !outs) return xc_error_oom();
  for (int i = 0; i < nin; i++) {
    const char* in = np->input[i];
    if (!*in) continue;
    ins[i] = xc_graph_find_value(g, in);
    if (!ins[i])
      return xc_error(XC_INVALID_ARGUMENT, "%s: node '%s' (%s): input '%s' is not defined anywhere",
                      im->what, name, op_type, in);
  }
  for (int i = 0; i < nout; i++)
    if (*np->output[i]) outs[i] = xc_graph_find_value(g, np->output[i]);
  xc_node_t* n;
  XC_RETURN_IF_ERROR(xc_graph_add_node(g, op_type, domain, name, nin, ins, nout, outs, &n));
  xc_onnx_node_set_prov(im, n, n->name);
  if (*domain && !xc_op_lookup(domain, op_type) && !im->allow_unknown_ops) {
    return xc_error(XC_UNSUPPORTED, "node '%s': unsupported op '%s' in domain '%s'", name,
                    op_type, domain);
  }
  if (!*domain && !im->allow_unknown_ops) {
    /* Ops xcomp knows only under another name or not at all: a clearer
     * message than the registry miss below. */
    if (strcmp(op_type, "Upsample") == 0)
      return xc_error(XC_UNSUPPORTED,
                      "node '%s': unsupported op 'Upsample' (removed in opset 10; export "
                      "with Resize)", name);
  }
  for (size_t i = 0; i < np->n_attribute; i++)
    XC_RETURN_IF_ERROR(convert_attr(im, n, np->attribute[i]));
  if (!*domain) XC_RETURN_IF_ERROR(xc_onnx_upgrade_node(im, n));
  if (!im->allow_unknown_ops && !xc_op_lookup(n->domain, n->op_type))
    return xc_error(XC_UNSUPPORTED, "node '%s': unsupported op '%s' (opset %lld)", name,
                    op_type, (long long)im->opset);
  return NULL;
}

/* ---- the model ----------------------------------------------------------- */

static xc_status_t import_graph(xc_onnx_importer_t* im) {
  const Onnx__GraphProto* gp = im->gp;
  xc_graph_t* g = im->g;
  char what[512];
  if (gp->n_sparse_initializer)
    return xc_error(XC_UNSUPPORTED, "%s: sparse initializer '%s' is not supported", im->what,
                    gp->sparse_initializer[0]->values && gp->sparse_initializer[0]->values->name
                        ? gp->sparse_initializer[0]->values->name
                        : "?");
  for (size_t i = 0; i < gp->n_initializer; i++) {
    Onnx__TensorProto* tp = gp->initializer[i];
    if (!tp->name || !*tp->name)
      return xc_error(XC_INVALID_ARGUMENT, "%s: initializer %zu has no name", im->what, i);
    if (xc_graph_find_value(g, tp->name))
      return xc_error(XC_INVALID_ARGUMENT, "%s: duplicate initializer '%s'", im->what, tp->name);
    snprintf(what, sizeof what, "%s: initializer '%s'", im->what, tp->name);
    xc_tensor_t* t;
    XC_RETURN_IF_ERROR(xc_onnx_tensor_from_proto(tp, what, im->ext, &t));
    xc_value_t* v;
    XC_RETURN_IF_ERROR(xc_graph_add_initializer(g, tp->name, t, &v));
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto* vi = gp->input[i];
    if (!vi->name || !*vi->name)
      return xc_error(XC_INVALID_ARGUMENT, "%s: graph input %zu has no name", im->what, i);
    xc_value_t* existing = xc_graph_find_value(g, vi->name);
    if (existing) {
      if (existing->flags & XC_VALUE_INITIALIZER) continue; /* a constant with a default */
      return xc_error(XC_INVALID_ARGUMENT, "%s: graph input '%s' is listed twice", im->what,
                      vi->name);
    }
    xc_dtype_t dt = XC_DTYPE_UNDEFINED;
    int rank = 0;
    xc_dim_t dims[XC_MAX_RANK];
    XC_RETURN_IF_ERROR(value_info_type(im, vi, "graph input", &dt, &rank, dims));
    xc_value_t* v;
    XC_RETURN_IF_ERROR(xc_graph_add_value(g, vi->name, dt, rank, dims, &v));
    XC_RETURN_IF_ERROR(xc_graph_add_input(g, v));
  }
  /* Every node output first, so nodes may appear in any order. */
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto* np = gp->node[i];
    for (size_t k = 0; k < np->n_output; k++) {
      const char* on = np->output[k];
      if (!*on) continue;
      if (xc_graph_find_value(g, on)) {
        const char* nn = np->name && *np->name ? np->name : np->op_type ? np->op_type : "?";
        return xc_error(XC_INVALID_ARGUMENT,
                        "%s: node '%s': output '%s' is defined more than once", im->what, nn,
                        on);
      }
      xc_value_t* v;
      XC_RETURN_IF_ERROR(xc_graph_add_value(g, on, XC_DTYPE_UNDEFINED, -1, NULL, &v));
    }
  }
  for (size_t i = 0; i < gp->n_node; i++)
    XC_RETURN_IF_ERROR(import_node(im, gp->node[i], (int)i));
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto* vi = gp->output[i];
    xc_value_t* v = vi->name ? xc_graph_find_value(g, vi->name) : NULL;
    if (!v)
      return xc_error(XC_INVALID_ARGUMENT, "%s: graph output '%s' is never defined", im->what,
                      vi->name ? vi->name : "");
    if (vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET &&
        vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
      return xc_error(XC_UNSUPPORTED,
                      "%s: graph output '%s' has non-tensor type '%s' (only tensors are "
                      "supported)", im->what, vi->name, type_case_name(vi->type->value_case));
    XC_RETURN_IF_ERROR(xc_graph_add_output(g, v));
  }
  if (gp->n_output == 0)
    return xc_error(XC_INVALID_ARGUMENT, "%s: the graph has no outputs", im->what);
  XC_RETURN_IF_ERROR(xc_graph_take_error(g));
  xc_status_t s = xc_graph_toposort(g);
  if (s) return xc_status_annotate(s, "%s", im->what);
  if (im->allow_unknown_ops) return NULL;
  s = xc_graph_resolve_ops(g);
  if (!s) s = xc_graph_verify(g);
  return s ? xc_status_annotate(s, "%s", im->what) : NULL;
}

static xc_status_t import_model(const Onnx__ModelProto* mp, xc_onnx_importer_t* im) {
  if (!mp->graph) return xc_error(XC_INVALID_ARGUMENT, "%s: the model has no graph", im->what);
  bool found = false;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto* o = mp->opset_import[i];
    if (is_default_domain(o->domain)) {
      if (found)
        return xc_error(XC_INVALID_ARGUMENT, "%s: the default opset is imported twice", im->what);
      found = true;
      im->opset = o->has_version ? o->version : 0;
    }
  }
  if (!found)
    return xc_error(XC_UNSUPPORTED,
                    "%s: the model imports no opset of the default ONNX domain%s%s%s", im->what,
                    mp->n_opset_import ? " (only '" : "",
                    mp->n_opset_import && mp->opset_import[0]->domain
                        ? mp->opset_import[0]->domain : "",
                    mp->n_opset_import ? "')" : "");
  if (im->opset < XC_ONNX_MIN_OPSET || im->opset > im->max_opset)
    return xc_error(XC_UNSUPPORTED, "%s: model opset %lld is not supported (xcomp supports "
                    "opsets %d to %lld)", im->what, (long long)im->opset, XC_ONNX_MIN_OPSET,
                    (long long)im->max_opset);
  im->gp = mp->graph;
  im->g->opset = im->opset;
  xc_status_t s = import_graph(im);
  if (s && mp->n_functions) {
    /* A node calling a model-local function shows up as an unknown op. */
    for (size_t i = 0; i < mp->n_functions; i++)
      if (mp->functions[i]->name && strstr(xc_status_message(s), mp->functions[i]->name))
        return xc_status_annotate(s, "model-local functions are not supported ('%s')",
                                  mp->functions[i]->name);
  }
  return s;
}

xc_status_t xc_onnx_import_buffer_ex(const void* data, size_t size, const char* what,
                                     const char* base_dir,
                                     const xc_onnx_import_options_t* opts, xc_graph_t** out) {
  *out = NULL;
  if (!what) what = "<buffer>";
  if (size == 0) return xc_error(XC_INVALID_ARGUMENT, "%s: empty file", what);
  XC_RETURN_IF_ERROR(xc_onnx_check_wire(&onnx__model_proto__descriptor, data, size, what));
  Onnx__ModelProto* mp = onnx__model_proto__unpack(NULL, size, data);
  if (!mp) return xc_error(XC_INVALID_ARGUMENT, "%s: not a valid ONNX model (protobuf)", what);
  xc_onnx_importer_t im;
  memset(&im, 0, sizeof im);
  im.what = what;
  im.allow_unknown_ops = opts && opts->allow_unknown_ops;
  im.max_opset = opts && opts->max_opset > 0 ? opts->max_opset : XC_ONNX_MAX_OPSET;
  xc_status_t s = xc_graph_create(mp->graph && mp->graph->name && *mp->graph->name
                                      ? mp->graph->name : "main", &im.g);
  if (!s) s = xc_onnx_extdata_open(base_dir, &im.ext);
  if (!s) {
    im.file = xc_arena_strdup(im.g->arena, what);
    if (!im.file) s = xc_error_oom();
  }
  if (!s) s = import_model(mp, &im);
  if (!s) s = xc_onnx_extdata_give_to_graph(im.ext, im.g);
  xc_onnx_extdata_close(im.ext);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (s) {
    xc_graph_destroy(im.g);
    /* Every message names the model file. */
    if (strncmp(xc_status_message(s), what, strlen(what)) != 0)
      s = xc_status_annotate(s, "%s", what);
    return s;
  }
  *out = im.g;
  return NULL;
}

xc_status_t xc_onnx_import_buffer(const void* data, size_t size, const char* what,
                                  const char* base_dir, xc_graph_t** out) {
  return xc_onnx_import_buffer_ex(data, size, what, base_dir, NULL, out);
}

xc_status_t xc_onnx_import_file_ex(const char* path, const xc_onnx_import_options_t* opts,
                                   xc_graph_t** out) {
  *out = NULL;
  /* Mapped, not read: protobuf-c copies what it keeps, and the page cache
   * then holds the only other copy of the file. Pipes and the like are
   * read into memory instead. */
  const uint8_t* data = NULL;
  uint8_t* owned = NULL;
  size_t size = 0;
  void* map = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return xc_error(errno == ENOENT ? XC_NOT_FOUND : XC_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    size = (size_t)st.st_size;
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) map = NULL;
    data = map;
  }
  close(fd);
  if (!map) {
    XC_RETURN_IF_ERROR(xc_read_whole_file(path, &owned, &size));
    data = owned;
  }
  char* dir = strdup(path);
  xc_status_t s = NULL;
  if (!dir) {
    s = xc_error_oom();
  } else {
    char* slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0; /* model in "/" */
    else *slash = 0;
    s = xc_onnx_import_buffer_ex(data, size, path, dir, opts, out);
  }
  free(dir);
  if (map) munmap(map, size);
  free(owned);
  return s;
}

xc_status_t xc_onnx_import_file(const char* path, xc_graph_t** out) {
  return xc_onnx_import_file_ex(path, NULL, out);
}
