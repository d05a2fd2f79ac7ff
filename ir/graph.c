/* Graph IR construction: values, nodes, attributes, name index. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"
#include "xcomp/op.h"

/* Open-addressing hash map: value name -> value. */
typedef struct name_index {
  size_t cap, count;
  xc_value_t** slots;
} name_index_t;

static uint64_t hash_str(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static xc_status_t index_insert(name_index_t* ix, xc_value_t* v) {
  if ((ix->count + 1) * 2 > ix->cap) {
    size_t ncap = ix->cap ? ix->cap * 2 : 64;
    xc_value_t** ns = calloc(ncap, sizeof *ns);
    if (!ns) return xc_error_oom();
    for (size_t i = 0; i < ix->cap; i++) {
      xc_value_t* e = ix->slots[i];
      if (!e) continue;
      size_t j = hash_str(e->name) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = e;
    }
    free(ix->slots);
    ix->slots = ns;
    ix->cap = ncap;
  }
  size_t j = hash_str(v->name) & (ix->cap - 1);
  while (ix->slots[j]) j = (j + 1) & (ix->cap - 1);
  ix->slots[j] = v;
  ix->count++;
  return NULL;
}

xc_status_t xc_graph_reindex_names_(xc_graph_t* g);
xc_status_t xc_graph_reindex_names_(xc_graph_t* g) {
  name_index_t* ix = g->name_index;
  free(ix->slots);
  ix->slots = NULL;
  ix->cap = ix->count = 0;
  for (int i = 0; i < g->num_values; i++)
    XC_RETURN_IF_ERROR(index_insert(ix, g->values[i]));
  return NULL;
}

xc_value_t* xc_graph_find_value(const xc_graph_t* g, const char* name) {
  const name_index_t* ix = g->name_index;
  if (!ix || !ix->cap || !name) return NULL;
  size_t j = hash_str(name) & (ix->cap - 1);
  while (ix->slots[j]) {
    if (strcmp(ix->slots[j]->name, name) == 0) return ix->slots[j];
    j = (j + 1) & (ix->cap - 1);
  }
  return NULL;
}

/* Grows a pointer array to hold one more element. */
static xc_status_t grow(void*** arr, int* count, int* cap) {
  if (*count < *cap) return NULL;
  int ncap = *cap ? *cap * 2 : 16;
  void** n = realloc(*arr, sizeof(void*) * (size_t)ncap);
  if (!n) return xc_error_oom();
  *arr = n;
  *cap = ncap;
  return NULL;
}

#define PUSH(arr, count, cap, item)                                   \
  do {                                                                \
    XC_RETURN_IF_ERROR(grow((void***)&(arr), &(count), &(cap)));      \
    (arr)[(count)++] = (item);                                        \
  } while (0)

xc_status_t xc_graph_create(const char* name, xc_graph_t** out) {
  *out = NULL;
  xc_graph_t* g = calloc(1, sizeof *g);
  if (!g) return xc_error_oom();
  g->arena = xc_arena_create();
  g->name_index = calloc(1, sizeof(name_index_t));
  if (!g->arena || !g->name_index) {
    xc_graph_destroy(g);
    return xc_error_oom();
  }
  g->name = xc_arena_strdup(g->arena, name ? name : "main");
  g->opset = 23;
  *out = g;
  return NULL;
}

struct xc_graph_cleanup {
  void (*fn)(void*);
  void* arg;
};

xc_status_t xc_graph_on_destroy(xc_graph_t* g, void (*fn)(void*), void* arg) {
  if (g->num_cleanups == g->cap_cleanups) {
    int ncap = g->cap_cleanups ? g->cap_cleanups * 2 : 4;
    struct xc_graph_cleanup* n = realloc(g->cleanups, sizeof *n * (size_t)ncap);
    if (!n) {
      fn(arg);
      return xc_error_oom();
    }
    g->cleanups = n;
    g->cap_cleanups = ncap;
  }
  g->cleanups[g->num_cleanups].fn = fn;
  g->cleanups[g->num_cleanups].arg = arg;
  g->num_cleanups++;
  return NULL;
}

void xc_graph_destroy(xc_graph_t* g) {
  if (!g) return;
  for (int i = 0; i < g->num_owned; i++) xc_tensor_destroy(g->owned[i]);
  free(g->owned);
  for (int i = g->num_cleanups - 1; i >= 0; i--) g->cleanups[i].fn(g->cleanups[i].arg);
  free(g->cleanups);
  free(g->values);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->initializers);
  if (g->name_index) free(((name_index_t*)g->name_index)->slots);
  free(g->name_index);
  xc_status_free(g->pending_error);
  xc_arena_destroy(g->arena);
  free(g);
}

xc_status_t xc_graph_take_error(xc_graph_t* g) {
  xc_status_t s = g->pending_error;
  g->pending_error = NULL;
  return s;
}

xc_status_t xc_graph_own_tensor(xc_graph_t* g, xc_tensor_t* t) {
  if (!t) return NULL;
  xc_status_t s = grow((void***)&g->owned, &g->num_owned, &g->cap_owned);
  if (s) {
    xc_tensor_destroy(t);
    return s;
  }
  g->owned[g->num_owned++] = t;
  return NULL;
}

xc_status_t xc_graph_add_value(xc_graph_t* g, const char* name, xc_dtype_t dtype,
                               int rank, const xc_dim_t* dims,
                               xc_value_t** out) {
  *out = NULL;
  if (!name || !*name)
    return xc_error(XC_INVALID_ARGUMENT, "a value needs a non-empty name");
  if (xc_graph_find_value(g, name))
    return xc_error(XC_INVALID_ARGUMENT, "duplicate value name '%s'", name);
  if (rank > XC_MAX_RANK)
    return xc_error(XC_UNSUPPORTED, "value '%s' has rank %d (maximum %d)", name,
                    rank, XC_MAX_RANK);
  xc_value_t* v = xc_arena_alloc(g->arena, sizeof *v);
  if (!v) return xc_error_oom();
  v->name = xc_arena_strdup(g->arena, name);
  if (!v->name) return xc_error_oom();
  v->id = g->num_values;
  v->rank = -1;
  if (rank >= 0) XC_RETURN_IF_ERROR(xc_value_set_type(g, v, dtype, rank, dims));
  v->dtype = dtype;
  PUSH(g->values, g->num_values, g->cap_values, v);
  XC_RETURN_IF_ERROR(index_insert(g->name_index, v));
  *out = v;
  return NULL;
}

xc_status_t xc_value_set_type(xc_graph_t* g, xc_value_t* v, xc_dtype_t dtype,
                              int rank, const xc_dim_t* dims) {
  if (rank < 0 || rank > XC_MAX_RANK)
    return xc_error(XC_UNSUPPORTED, "value '%s': rank %d out of range", v->name, rank);
  /* Never NULL, even for rank 0, so callers may memcpy rank * size bytes. */
  xc_dim_t* d = xc_arena_alloc(g->arena, sizeof(xc_dim_t) * (size_t)(rank ? rank : 1));
  if (!d) return xc_error_oom();
  {
    for (int i = 0; i < rank; i++) {
      if (!dims[i].sym && dims[i].value < 0)
        return xc_error(XC_INVALID_ARGUMENT, "value '%s': negative dimension %lld",
                        v->name, (long long)dims[i].value);
      d[i] = dims[i];
    }
  }
  v->dtype = dtype;
  v->rank = rank;
  v->dims = d;
  return NULL;
}

xc_status_t xc_value_set_elems(xc_graph_t* g, xc_value_t* v, int64_t n,
                               const xc_dim_t* elems) {
  xc_dim_t* e = xc_arena_alloc(g->arena, sizeof(xc_dim_t) * (size_t)(n ? n : 1));
  if (!e) return xc_error_oom();
  for (int64_t i = 0; i < n; i++) e[i] = elems[i];
  v->num_elems = n;
  v->elems = e;
  return NULL;
}

bool xc_value_known_elems(xc_graph_t* g, const xc_value_t* v, int64_t* n,
                          const xc_dim_t** out) {
  if (v->elems) {
    *n = v->num_elems;
    *out = v->elems;
    return true;
  }
  const xc_tensor_t* t = v->constant;
  if (!t || t->rank > 1 || t->numel > 64 ||
      !(xc_dtype_is_int(t->dtype) || t->dtype == XC_BOOL))
    return false;
  xc_dim_t* e = xc_arena_alloc(g->arena, sizeof(xc_dim_t) * (size_t)(t->numel ? t->numel : 1));
  if (!e) return false;
  for (int64_t i = 0; i < t->numel; i++) e[i] = xc_dim_const(xc_tensor_get_i64(t, i));
  *n = t->numel;
  *out = e;
  return true;
}

xc_status_t xc_graph_add_input(xc_graph_t* g, xc_value_t* v) {
  v->flags |= XC_VALUE_INPUT;
  PUSH(g->inputs, g->num_inputs, g->cap_inputs, v);
  return NULL;
}

xc_status_t xc_graph_add_output(xc_graph_t* g, xc_value_t* v) {
  v->flags |= XC_VALUE_OUTPUT;
  PUSH(g->outputs, g->num_outputs, g->cap_outputs, v);
  return NULL;
}

xc_status_t xc_graph_add_initializer(xc_graph_t* g, const char* name,
                                     xc_tensor_t* tensor, xc_value_t** out) {
  *out = NULL;
  XC_RETURN_IF_ERROR(xc_graph_own_tensor(g, tensor));
  xc_dim_t dims[XC_MAX_RANK];
  for (int i = 0; i < tensor->rank; i++) dims[i] = xc_dim_const(tensor->dims[i]);
  xc_value_t* v;
  XC_RETURN_IF_ERROR(xc_graph_add_value(g, name, tensor->dtype, tensor->rank, dims, &v));
  v->constant = tensor;
  v->flags |= XC_VALUE_INITIALIZER;
  PUSH(g->initializers, g->num_initializers, g->cap_initializers, v);
  *out = v;
  return NULL;
}

xc_status_t xc_graph_add_node(xc_graph_t* g, const char* op_type,
                              const char* domain, const char* name,
                              int num_inputs, xc_value_t* const* inputs,
                              int num_outputs, xc_value_t* const* outputs,
                              xc_node_t** out) {
  if (out) *out = NULL;
  if (!op_type || !*op_type)
    return xc_error(XC_INVALID_ARGUMENT, "node without an op type");
  if (num_inputs < 0 || num_outputs < 0)
    return xc_error(XC_INVALID_ARGUMENT, "negative arity");
  xc_node_t* n = xc_arena_alloc(g->arena, sizeof *n);
  if (!n) return xc_error_oom();
  n->id = g->num_nodes;
  n->op_type = xc_arena_strdup(g->arena, op_type);
  n->domain = xc_arena_strdup(g->arena, domain ? domain : "");
  n->name = name && *name ? xc_arena_strdup(g->arena, name)
                          : xc_arena_printf(g->arena, "%s_%d", op_type, n->id);
  n->num_inputs = num_inputs;
  n->inputs = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(num_inputs + 1));
  n->num_outputs = num_outputs;
  n->outputs = xc_arena_alloc(g->arena, sizeof(xc_value_t*) * (size_t)(num_outputs + 1));
  if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs)
    return xc_error_oom();
  for (int i = 0; i < num_inputs; i++) n->inputs[i] = inputs[i];
  for (int i = 0; i < num_outputs; i++) {
    xc_value_t* v = outputs[i];
    n->outputs[i] = v;
    if (!v) continue;
    if (v->producer || (v->flags & (XC_VALUE_INPUT | XC_VALUE_INITIALIZER)))
      return xc_error(XC_INVALID_ARGUMENT,
                      "node '%s' (%s): value '%s' is already defined", n->name,
                      op_type, v->name);
    v->producer = n;
    v->producer_output = i;
  }
  n->prov.source = n->name;
  PUSH(g->nodes, g->num_nodes, g->cap_nodes, n);
  if (out) *out = n;
  return NULL;
}

/* ---- attributes -------------------------------------------------------- */

static xc_status_t attr_slot(xc_graph_t* g, xc_node_t* n, const char* name,
                             xc_attr_kind_t kind, xc_attr_t** out) {
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) {
      memset(&n->attrs[i], 0, sizeof n->attrs[i]);
      n->attrs[i].name = xc_arena_strdup(g->arena, name);
      n->attrs[i].kind = kind;
      *out = &n->attrs[i];
      return NULL;
    }
  /* Attributes are few; grow by copying in the arena. */
  xc_attr_t* na = xc_arena_alloc(g->arena, sizeof(xc_attr_t) * (size_t)(n->num_attrs + 1));
  if (!na) return xc_error_oom();
  if (n->num_attrs) memcpy(na, n->attrs, sizeof(xc_attr_t) * (size_t)n->num_attrs);
  n->attrs = na;
  xc_attr_t* a = &na[n->num_attrs++];
  a->name = xc_arena_strdup(g->arena, name);
  if (!a->name) return xc_error_oom();
  a->kind = kind;
  *out = a;
  return NULL;
}

xc_status_t xc_node_set_int(xc_graph_t* g, xc_node_t* n, const char* name, int64_t v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_INT, &a));
  a->i = v;
  return NULL;
}

xc_status_t xc_node_set_float(xc_graph_t* g, xc_node_t* n, const char* name, double v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_FLOAT, &a));
  a->f = v;
  return NULL;
}

xc_status_t xc_node_set_string(xc_graph_t* g, xc_node_t* n, const char* name, const char* v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_STRING, &a));
  a->s = xc_arena_strdup(g->arena, v ? v : "");
  return a->s ? NULL : xc_error_oom();
}

xc_status_t xc_node_set_tensor(xc_graph_t* g, xc_node_t* n, const char* name, xc_tensor_t* t) {
  XC_RETURN_IF_ERROR(xc_graph_own_tensor(g, t));
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_TENSOR, &a));
  a->t = t;
  return NULL;
}

xc_status_t xc_node_set_ints(xc_graph_t* g, xc_node_t* n, const char* name,
                             int64_t count, const int64_t* v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_INTS, &a));
  a->n = count;
  a->ints = xc_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(count ? count : 1));
  if (!a->ints) return xc_error_oom();
  for (int64_t i = 0; i < count; i++) a->ints[i] = v[i];
  return NULL;
}

xc_status_t xc_node_set_floats(xc_graph_t* g, xc_node_t* n, const char* name,
                               int64_t count, const double* v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_FLOATS, &a));
  a->n = count;
  a->floats = xc_arena_alloc(g->arena, sizeof(double) * (size_t)(count ? count : 1));
  if (!a->floats) return xc_error_oom();
  for (int64_t i = 0; i < count; i++) a->floats[i] = v[i];
  return NULL;
}

xc_status_t xc_node_set_strings(xc_graph_t* g, xc_node_t* n, const char* name,
                                int64_t count, const char* const* v) {
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_STRINGS, &a));
  a->n = count;
  a->strings = xc_arena_alloc(g->arena, sizeof(char*) * (size_t)(count ? count : 1));
  if (!a->strings) return xc_error_oom();
  for (int64_t i = 0; i < count; i++) {
    a->strings[i] = xc_arena_strdup(g->arena, v[i]);
    if (!a->strings[i]) return xc_error_oom();
  }
  return NULL;
}

xc_status_t xc_node_set_tensors(xc_graph_t* g, xc_node_t* n, const char* name,
                                int64_t count, xc_tensor_t* const* v) {
  xc_status_t s = NULL;
  for (int64_t i = 0; i < count; i++) {
    xc_status_t e = xc_graph_own_tensor(g, v[i]);
    if (e && !s) s = e; else xc_status_free(e);
  }
  if (s) return s;
  xc_attr_t* a;
  XC_RETURN_IF_ERROR(attr_slot(g, n, name, XC_ATTR_TENSORS, &a));
  a->n = count;
  a->tensors = xc_arena_alloc(g->arena, sizeof(xc_tensor_t*) * (size_t)(count ? count : 1));
  if (!a->tensors) return xc_error_oom();
  for (int64_t i = 0; i < count; i++) a->tensors[i] = v[i];
  return NULL;
}

const xc_attr_t* xc_node_find_attr(const xc_node_t* n, const char* name) {
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

bool xc_node_has_attr(const xc_node_t* n, const char* name) {
  return xc_node_find_attr(n, name) != NULL;
}

static const xc_attr_def_t* def_of(const xc_node_t* n, const char* name) {
  const xc_attr_def_t* d = n->op ? xc_op_find_attr_def(n->op, name) : NULL;
  assert((d || !n->op) && "attribute not declared by the op");
  return d;
}

int64_t xc_node_attr_int(const xc_node_t* n, const char* name) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_INT) return a->i;
  const xc_attr_def_t* d = def_of(n, name);
  return d ? d->default_int : 0;
}

double xc_node_attr_float(const xc_node_t* n, const char* name) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_FLOAT) return a->f;
  if (a && a->kind == XC_ATTR_INT) return (double)a->i;
  const xc_attr_def_t* d = def_of(n, name);
  return d ? d->default_float : 0.0;
}

const char* xc_node_attr_string(const xc_node_t* n, const char* name) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_STRING) return a->s;
  const xc_attr_def_t* d = def_of(n, name);
  return d && d->default_string ? d->default_string : "";
}

const xc_tensor_t* xc_node_attr_tensor(const xc_node_t* n, const char* name) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  return a && a->kind == XC_ATTR_TENSOR ? a->t : NULL;
}

const int64_t* xc_node_attr_ints(const xc_node_t* n, const char* name, int64_t* count) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_INTS) {
    *count = a->n;
    return a->ints;
  }
  *count = 0;
  return NULL;
}

const double* xc_node_attr_floats(const xc_node_t* n, const char* name, int64_t* count) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_FLOATS) {
    *count = a->n;
    return a->floats;
  }
  *count = 0;
  return NULL;
}

const char* const* xc_node_attr_strings(const xc_node_t* n, const char* name, int64_t* count) {
  const xc_attr_t* a = xc_node_find_attr(n, name);
  if (a && a->kind == XC_ATTR_STRINGS) {
    *count = a->n;
    return a->strings;
  }
  *count = 0;
  return NULL;
}

const char* xc_attr_kind_name(xc_attr_kind_t k) {
  static const char* names[] = {"undefined", "int",     "float",   "string", "tensor",
                                "ints",      "floats",  "strings", "tensors", "graph"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "invalid";
}

const char* xc_value_describe(const xc_value_t* v, char* buf, size_t n) {
  if (v->rank < 0) {
    snprintf(buf, n, "%s[?]", xc_dtype_name(v->dtype));
    return buf;
  }
  size_t k = (size_t)snprintf(buf, n, "%s[", xc_dtype_name(v->dtype));
  for (int i = 0; i < v->rank && k < n; i++) {
    char d[128];
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "",
                          xc_dim_print(v->dims[i], d, sizeof d));
  }
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

const char* xc_node_describe(const xc_node_t* n, char* buf, size_t size) {
  if (n->prov.file && n->prov.line)
    snprintf(buf, size, "node '%s' (%s) at %s:%d:%d", n->name, n->op_type,
             n->prov.file, n->prov.line, n->prov.col);
  else
    snprintf(buf, size, "node '%s' (%s)", n->name, n->op_type);
  return buf;
}
