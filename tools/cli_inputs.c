/* Binding graph inputs from --input options (`xcomp run`, `xcomp bench`):
 * NAME=@FILE binds by name, @FILE the next unbound input in graph order;
 * the file's tensor is checked against the input's dtype and shape, which
 * binds the graph's symbols. `xcomp bench` fills what is left unbound with
 * random tensors (--shape gives their symbolic dims). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xcomp/tensor_io.h"

xc_status_t xc_cli_parse_input_spec(char* arg, xc_cli_input_spec_t* out) {
  const char* at = strchr(arg, '@');
  if (arg[0] == '@' && arg[1]) {
    out->name = NULL;
    out->path = arg + 1;
    return NULL;
  }
  char* eq = strchr(arg, '=');
  if (eq && eq > arg && at == eq + 1 && eq[2]) {
    *eq = '\0';
    out->name = arg;
    out->path = eq + 2;
    return NULL;
  }
  return xc_error(XC_INVALID_ARGUMENT, "--input '%s': expected NAME=@FILE or @FILE", arg);
}

static void list_inputs(const xc_graph_t* g, char* buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < g->num_inputs && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", g->inputs[i]->name);
  if (g->num_inputs == 0) snprintf(buf, n, "none");
}

/* Checks a tensor against the graph input it binds (binds its symbols). */
static xc_status_t check_input(const xc_value_t* v, const xc_tensor_t* t, const char* path, xc_symbind_t* binds) {
  char b1[256], b2[256];
  if (t->dtype != v->dtype)
    return xc_error(XC_INVALID_ARGUMENT, "input '%s': %s holds %s, the graph expects dtype %s (%s)", v->name, path,
                    xc_tensor_describe(t, b1, sizeof b1), xc_dtype_name(v->dtype),
                    xc_value_describe(v, b2, sizeof b2));
  if (v->rank >= 0 && t->rank != v->rank)
    return xc_error(XC_INVALID_ARGUMENT, "input '%s': %s holds %s, the graph expects rank %d (%s)", v->name, path,
                    xc_tensor_describe(t, b1, sizeof b1), v->rank, xc_value_describe(v, b2, sizeof b2));
  for (int d = 0; v->rank >= 0 && d < t->rank; d++) {
    xc_status_t s = xc_dim_unify(v->dims[d], t->dims[d], binds);
    if (s) {
      xc_status_free(s);
      return xc_error(XC_INVALID_ARGUMENT, "input '%s': %s holds %s, the graph expects shape %s (axis %d differs)",
                      v->name, path, xc_tensor_describe(t, b1, sizeof b1), xc_value_describe(v, b2, sizeof b2), d);
    }
  }
  return NULL;
}

/* Rounds a float32 tensor to `precision` (--precision: f32 files feed an
 * f16/bf16 graph). */
static xc_status_t round_to(xc_dtype_t precision, xc_tensor_t** t) {
  xc_tensor_t* r = NULL;
  XC_RETURN_IF_ERROR(xc_tensor_create(precision, (*t)->rank, (*t)->dims, &r));
  for (int64_t e = 0; e < r->numel; e++) xc_tensor_set_f64(r, e, xc_tensor_get_f64(*t, e));
  xc_tensor_destroy(*t);
  *t = r;
  return NULL;
}

xc_status_t xc_cli_read_inputs(const xc_graph_t* g, const xc_cli_input_spec_t* specs, int num_specs,
                               xc_dtype_t precision, bool allow_missing, xc_tensor_t** inputs, xc_symbind_t* binds) {
  int n = g->num_inputs;
  int* source = malloc(((size_t)n + 1) * sizeof *source);
  if (!source) return xc_error_oom();
  for (int i = 0; i < n; i++) source[i] = -1;
  char names[2048];
  list_inputs(g, names, sizeof names);
  xc_status_t s = NULL;
  for (int k = 0; k < num_specs && !s; k++) {
    if (!specs[k].name) continue;
    int found = -1;
    for (int i = 0; i < n; i++)
      if (strcmp(g->inputs[i]->name, specs[k].name) == 0) found = i;
    if (found < 0)
      s = xc_error(XC_INVALID_ARGUMENT, "--input %s=@%s: the graph has no input '%s' (its inputs: %s)", specs[k].name,
                   specs[k].path, specs[k].name, names);
    else if (source[found] >= 0)
      s = xc_error(XC_INVALID_ARGUMENT, "input '%s' is given twice", specs[k].name);
    else
      source[found] = k;
  }
  int next = 0;
  for (int k = 0; k < num_specs && !s; k++) {
    if (specs[k].name) continue;
    while (next < n && source[next] >= 0) next++;
    if (next >= n)
      s = xc_error(XC_INVALID_ARGUMENT, "--input @%s: too many inputs, the graph takes %d (%s)", specs[k].path, n,
                   names);
    else
      source[next] = k;
  }
  for (int i = 0; i < n && !s && !allow_missing; i++) {
    char b[256];
    if (source[i] < 0)
      s = xc_error(XC_INVALID_ARGUMENT, "missing input '%s' (%s): the graph takes %d input%s (%s)", g->inputs[i]->name,
                   xc_value_describe(g->inputs[i], b, sizeof b), n, n == 1 ? "" : "s", names);
  }
  for (int i = 0; i < n && !s; i++) {
    if (source[i] < 0) continue;
    const char* path = specs[source[i]].path;
    s = xc_cli_check_file(path);
    if (!s) s = xc_tensor_read_file(path, &inputs[i], NULL);
    if (s) s = xc_status_annotate(s, "input '%s'", g->inputs[i]->name);
    if (!s && precision != XC_DTYPE_UNDEFINED && inputs[i]->dtype == XC_F32 && g->inputs[i]->dtype == precision)
      s = round_to(precision, &inputs[i]);
    if (!s) s = check_input(g->inputs[i], inputs[i], path, binds);
  }
  free(source);
  return s;
}

/* splitmix64: a small, seedable generator (the same inputs every run). */
static uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

xc_status_t xc_cli_random_inputs(const xc_graph_t* g, xc_tensor_t** inputs, xc_symbind_t* binds, uint64_t seed) {
  uint64_t state = seed;
  for (int i = 0; i < g->num_inputs; i++) {
    if (inputs[i]) continue;
    const xc_value_t* v = g->inputs[i];
    char b[256];
    if (v->rank < 0)
      return xc_error(XC_INVALID_ARGUMENT, "input '%s' has an unknown rank: give it with --input %s=@FILE", v->name,
                      v->name);
    int64_t dims[XC_MAX_RANK];
    for (int d = 0; d < v->rank; d++) {
      xc_status_t s = xc_dim_eval(v->dims[d], binds, &dims[d]);
      if (s) {
        xc_status_free(s);
        char dim[64];
        return xc_error(XC_INVALID_ARGUMENT,
                        "input '%s' (%s): dim %d (%s) is not known: give it with --shape %s=DIMS or --input %s=@FILE",
                        v->name, xc_value_describe(v, b, sizeof b), d, xc_dim_print(v->dims[d], dim, sizeof dim),
                        v->name, v->name);
      }
    }
    XC_RETURN_IF_ERROR(xc_tensor_create(v->dtype, v->rank, dims, &inputs[i]));
    xc_tensor_t* t = inputs[i];
    bool is_float = v->dtype == XC_F32 || v->dtype == XC_F16 || v->dtype == XC_BF16 || v->dtype == XC_F64;
    /* Floats uniform in [-1, 1); integers 0 or 1 (valid indices along any
     * non-empty axis, so Gather and friends stay in bounds); bools either. */
    for (int64_t e = 0; e < t->numel; e++) {
      uint64_t r = next_random(&state);
      if (is_float)
        xc_tensor_set_f64(t, e, (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
      else
        xc_tensor_set_i64(t, e, (int64_t)(r >> 63));
    }
  }
  return NULL;
}

xc_status_t xc_cli_apply_shape(const xc_graph_t* g, const char* arg, xc_symbind_t* binds) {
  const char* eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1])
    return xc_error(XC_INVALID_ARGUMENT, "--shape '%s': expected NAME=DIMS (e.g. input_ids=1x128)", arg);
  const xc_value_t* v = NULL;
  for (int i = 0; i < g->num_inputs; i++)
    if (strlen(g->inputs[i]->name) == (size_t)(eq - arg) && strncmp(g->inputs[i]->name, arg, (size_t)(eq - arg)) == 0)
      v = g->inputs[i];
  if (!v) {
    char names[2048];
    list_inputs(g, names, sizeof names);
    return xc_error(XC_INVALID_ARGUMENT, "--shape %s: the graph has no input '%.*s' (its inputs: %s)", arg,
                    (int)(eq - arg), arg, names);
  }
  int64_t dims[XC_MAX_RANK];
  int rank = 0;
  const char* p = eq + 1;
  while (*p) {
    char* end = NULL;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || d > ((int64_t)1 << 40) || rank >= XC_MAX_RANK ||
        (*end && *end != 'x' && *end != ','))
      return xc_error(XC_INVALID_ARGUMENT, "--shape %s: DIMS must be sizes separated by 'x' or ',' (e.g. 1x128)", arg);
    dims[rank++] = (int64_t)d;
    p = *end ? end + 1 : end;
  }
  char b[256];
  if (v->rank >= 0 && rank != v->rank)
    return xc_error(XC_INVALID_ARGUMENT, "--shape %s: input '%s' has rank %d (%s)", arg, v->name, v->rank,
                    xc_value_describe(v, b, sizeof b));
  for (int d = 0; d < rank; d++) {
    xc_status_t s = xc_dim_unify(v->dims[d], dims[d], binds);
    if (s) {
      xc_status_free(s);
      return xc_error(XC_INVALID_ARGUMENT, "--shape %s: input '%s' is %s (axis %d differs)", arg, v->name,
                      xc_value_describe(v, b, sizeof b), d);
    }
  }
  return NULL;
}

bool xc_cli_add_shape(char** spec, const char* arg) {
  size_t have = *spec ? strlen(*spec) : 0, add = strlen(arg);
  char* grown = realloc(*spec, have + add + 2);
  if (!grown) return false;
  if (have) grown[have++] = ';';
  memcpy(grown + have, arg, add + 1);
  *spec = grown;
  return true;
}
