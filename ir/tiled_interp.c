/* Tiled IR interpreter: the executable meaning of a tiled kernel. Runs the
 * programs of the grid one after another on concrete buffers, computing
 * floats in double and integers exactly in int64, and rounding into buffer
 * dtypes on store. Every out-of-bounds access, integer overflow and division
 * by zero is an error naming the op and the program, never a crash. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

/* The interpreter is a reference, not a runtime: refuse absurd grids. */
#define XC_TILED_INTERP_MAX_PROGRAMS ((int64_t)1 << 24)

typedef struct rt_value {
  bool set;
  bool is_int;  /* integer and bool dtypes live in i, floats in f */
  xc_dtype_t dtype;
  int rank;
  int64_t dims[XC_TILED_MAX_RANK];
  int64_t n;
  double* f;
  int64_t* i;
  xc_tensor_t* mem; /* memrefs (not owned) */
  const char* mem_name;
} rt_value_t;

typedef struct interp {
  const xc_tiled_kernel_t* k;
  const int64_t* knobs;
  const xc_tiled_arg_t* args;
  int64_t* params;          /* scalar param values by param index */
  int64_t pid[XC_TILED_MAX_GRID], nprog[XC_TILED_MAX_GRID];
  rt_value_t* vals;         /* by value id */
  int num_allocs, cap_allocs;
  xc_tensor_t** allocs;     /* this program's shared/private allocations */
} interp_t;

static void rt_clear(rt_value_t* v) {
  free(v->f);
  free(v->i);
  memset(v, 0, sizeof *v);
}

static bool dtype_is_intlike(xc_dtype_t t) { return xc_dtype_is_int(t) || t == XC_BOOL; }

/* Allocates storage for a tile of `dtype` and shape. */
static xc_status_t rt_make(rt_value_t* v, xc_dtype_t dtype, int rank, const int64_t* dims) {
  memset(v, 0, sizeof *v);
  v->set = true;
  v->dtype = dtype;
  v->is_int = dtype_is_intlike(dtype);
  v->rank = rank;
  v->n = 1;
  for (int i = 0; i < rank; i++) {
    v->dims[i] = dims[i];
    if (!xc_mul_i64(v->n, dims[i], &v->n) || v->n > XC_TILED_MAX_TILE_ELEMS)
      return xc_error(XC_RESOURCE_EXHAUSTED, "tile of more than %lld elements",
                      (long long)XC_TILED_MAX_TILE_ELEMS);
  }
  if (v->is_int) v->i = calloc((size_t)v->n, sizeof *v->i);
  else v->f = calloc((size_t)v->n, sizeof *v->f);
  if (!v->i && !v->f) return xc_error_oom();
  return NULL;
}

static xc_status_t rt_copy(rt_value_t* dst, const rt_value_t* src) {
  if (src->mem) {
    *dst = *src;
    return NULL;
  }
  XC_RETURN_IF_ERROR(rt_make(dst, src->dtype, src->rank, src->dims));
  if (src->is_int) memcpy(dst->i, src->i, (size_t)src->n * sizeof *dst->i);
  else memcpy(dst->f, src->f, (size_t)src->n * sizeof *dst->f);
  return NULL;
}

static void resolve_dims(const interp_t* in, const xc_tiled_type_t* t, int64_t* out) {
  for (int i = 0; i < t->rank; i++) out[i] = xc_tiled_dim_resolve(t->dims[i], in->knobs);
}

/* Element offset in v of the output multi-index idx under broadcasting. */
static int64_t bcast_offset(const rt_value_t* v, int rank, const int64_t* idx) {
  int64_t off = 0;
  int shift = rank - v->rank;
  for (int j = 0; j < v->rank; j++) off = off * v->dims[j] + (v->dims[j] == 1 ? 0 : idx[shift + j]);
  return off;
}

static void next_index(int rank, const int64_t* dims, int64_t* idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return;
    idx[d] = 0;
  }
}

static double get_f(const rt_value_t* v, int64_t i) {
  return v->is_int ? (double)v->i[i] : v->f[i];
}

/* Wraps an int64 into an integer dtype, as a C conversion would. */
static int64_t wrap_int(xc_dtype_t t, int64_t x) {
  switch (t) {
    case XC_I8: return (int8_t)x;
    case XC_I16: return (int16_t)x;
    case XC_I32: return (int32_t)x;
    case XC_U8: return (uint8_t)x;
    case XC_U16: return (uint16_t)x;
    case XC_U32: return (uint32_t)x;
    case XC_BOOL: return x != 0;
    default: return x;
  }
}

static bool int_fits(xc_dtype_t t, int64_t x) { return wrap_int(t, x) == x; }

/* Float -> integer dtype: NaN is 0, otherwise saturate and truncate. */
static int64_t float_to_int(xc_dtype_t t, double x) {
  if (isnan(x)) return 0;
  if (t == XC_BOOL) return x != 0;
  double lo, hi;
  switch (t) {
    case XC_I8: lo = -128, hi = 127; break;
    case XC_I16: lo = -32768, hi = 32767; break;
    case XC_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case XC_U8: lo = 0, hi = 255; break;
    case XC_U16: lo = 0, hi = 65535; break;
    case XC_U32: lo = 0, hi = 4294967295.0; break;
    case XC_U64: lo = 0, hi = 9223372036854774784.0; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854774784.0; break;
  }
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return (int64_t)x;
}

/* ---- ops -------------------------------------------------------------------------- */

static xc_status_t exec_unary(const xc_tiled_op_t* op, const rt_value_t* x, rt_value_t* r) {
  XC_RETURN_IF_ERROR(rt_make(r, x->dtype, x->rank, x->dims));
  for (int64_t e = 0; e < x->n; e++) {
    if (x->is_int) {
      int64_t a = x->i[e], y;
      switch (op->opcode) {
        case XC_TOP_NEG:
          if (!xc_sub_i64(0, a, &y) || !int_fits(x->dtype, y))
            return xc_error(XC_OUT_OF_RANGE, "integer overflow in neg");
          break;
        case XC_TOP_ABS:
          y = a < 0 ? -a : a;
          if (a == INT64_MIN || !int_fits(x->dtype, y))
            return xc_error(XC_OUT_OF_RANGE, "integer overflow in abs");
          break;
        case XC_TOP_NOT: y = x->dtype == XC_BOOL ? !a : wrap_int(x->dtype, ~a); break;
        default: return xc_error(XC_INTERNAL, "unary %s on integers", xc_tiled_opcode_name(op->opcode));
      }
      r->i[e] = y;
      continue;
    }
    double a = x->f[e], y;
    switch (op->opcode) {
      case XC_TOP_NEG: y = -a; break;
      case XC_TOP_ABS: y = fabs(a); break;
      case XC_TOP_EXP: y = exp(a); break;
      case XC_TOP_LOG: y = log(a); break;
      case XC_TOP_SQRT: y = sqrt(a); break;
      case XC_TOP_RSQRT: y = 1.0 / sqrt(a); break;
      case XC_TOP_ERF: y = erf(a); break;
      case XC_TOP_TANH: y = tanh(a); break;
      case XC_TOP_SIGMOID: y = a >= 0 ? 1.0 / (1.0 + exp(-a)) : exp(a) / (1.0 + exp(a)); break;
      case XC_TOP_FLOOR: y = floor(a); break;
      case XC_TOP_CEIL: y = ceil(a); break;
      case XC_TOP_SIN: y = sin(a); break;
      case XC_TOP_COS: y = cos(a); break;
      case XC_TOP_RECIP: y = 1.0 / a; break;
      case XC_TOP_ATAN: y = atan(a); break;
      default: return xc_error(XC_INTERNAL, "unary %s on floats", xc_tiled_opcode_name(op->opcode));
    }
    r->f[e] = y;
  }
  return NULL;
}

static xc_status_t int_binary(xc_tiled_opcode_t oc, xc_dtype_t t, int64_t a, int64_t b,
                              int64_t* y) {
  bool ok = true;
  switch (oc) {
    case XC_TOP_ADD: ok = xc_add_i64(a, b, y); break;
    case XC_TOP_SUB: ok = xc_sub_i64(a, b, y); break;
    case XC_TOP_MUL: ok = xc_mul_i64(a, b, y); break;
    case XC_TOP_DIV:
    case XC_TOP_REM:
      if (b == 0) return xc_error(XC_INVALID_ARGUMENT, "integer division by zero");
      if (a == INT64_MIN && b == -1) return xc_error(XC_OUT_OF_RANGE, "integer overflow in %s",
                                                     xc_tiled_opcode_name(oc));
      *y = oc == XC_TOP_DIV ? a / b : a % b;
      break;
    case XC_TOP_MAX: *y = a > b ? a : b; break;
    case XC_TOP_MIN: *y = a < b ? a : b; break;
    case XC_TOP_AND: *y = a & b; break;
    case XC_TOP_OR: *y = a | b; break;
    case XC_TOP_XOR: *y = a ^ b; break;
    case XC_TOP_SHL:
    case XC_TOP_SHR: {
      int bits = (int)xc_dtype_size(t) * 8;
      if (b < 0 || b >= bits)
        return xc_error(XC_OUT_OF_RANGE, "%s by %lld on %s", xc_tiled_opcode_name(oc), (long long)b, xc_dtype_name(t));
      if (oc == XC_TOP_SHL) {
        *y = wrap_int(t, (int64_t)((uint64_t)a << b)); /* bits shifted out are dropped */
        return NULL;
      }
      *y = xc_dtype_is_signed(t) ? a >> b : (int64_t)((uint64_t)a >> b);
      break;
    }
    default: return xc_error(XC_INTERNAL, "binary %s on integers", xc_tiled_opcode_name(oc));
  }
  if (!ok || !int_fits(t, *y))
    return xc_error(XC_OUT_OF_RANGE, "%s overflow in %s", xc_dtype_name(t), xc_tiled_opcode_name(oc));
  return NULL;
}

static double float_binary(xc_tiled_opcode_t oc, double a, double b) {
  switch (oc) {
    case XC_TOP_ADD: return a + b;
    case XC_TOP_SUB: return a - b;
    case XC_TOP_MUL: return a * b;
    case XC_TOP_DIV: return a / b;
    case XC_TOP_REM: return fmod(a, b);
    case XC_TOP_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case XC_TOP_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case XC_TOP_POW: return pow(a, b);
    default: return NAN;
  }
}

static bool compare(int cmp, double a, double b) {
  switch (cmp) {
    case XC_CMP_EQ: return a == b;
    case XC_CMP_NE: return a != b;
    case XC_CMP_LT: return a < b;
    case XC_CMP_LE: return a <= b;
    case XC_CMP_GT: return a > b;
    default: return a >= b;
  }
}
static bool compare_i(int cmp, int64_t a, int64_t b) {
  switch (cmp) {
    case XC_CMP_EQ: return a == b;
    case XC_CMP_NE: return a != b;
    case XC_CMP_LT: return a < b;
    case XC_CMP_LE: return a <= b;
    case XC_CMP_GT: return a > b;
    default: return a >= b;
  }
}

static xc_status_t exec_binary(const interp_t* in, const xc_tiled_op_t* op, const rt_value_t* a,
                               const rt_value_t* b, rt_value_t* r) {
  const xc_tiled_type_t* rt = &op->results[0]->type;
  int64_t dims[XC_TILED_MAX_RANK], idx[XC_TILED_MAX_RANK] = {0, 0, 0};
  resolve_dims(in, rt, dims);
  XC_RETURN_IF_ERROR(rt_make(r, rt->dtype, rt->rank, dims));
  for (int64_t e = 0; e < r->n; e++, next_index(r->rank, dims, idx)) {
    int64_t ia = bcast_offset(a, r->rank, idx), ib = bcast_offset(b, r->rank, idx);
    if (op->opcode == XC_TOP_CMP) {
      r->i[e] = a->is_int ? compare_i(op->cmp, a->i[ia], b->i[ib])
                          : compare(op->cmp, a->f[ia], b->f[ib]);
    } else if (a->is_int) {
      XC_RETURN_IF_ERROR(int_binary(op->opcode, a->dtype, a->i[ia], b->i[ib], &r->i[e]));
    } else {
      r->f[e] = float_binary(op->opcode, a->f[ia], b->f[ib]);
    }
  }
  return NULL;
}

static xc_status_t exec_select(const interp_t* in, const xc_tiled_op_t* op, const rt_value_t* c,
                               const rt_value_t* a, const rt_value_t* b, rt_value_t* r) {
  const xc_tiled_type_t* rt = &op->results[0]->type;
  int64_t dims[XC_TILED_MAX_RANK], idx[XC_TILED_MAX_RANK] = {0, 0, 0};
  resolve_dims(in, rt, dims);
  XC_RETURN_IF_ERROR(rt_make(r, rt->dtype, rt->rank, dims));
  for (int64_t e = 0; e < r->n; e++, next_index(r->rank, dims, idx)) {
    bool take_a = c->i[bcast_offset(c, r->rank, idx)] != 0;
    const rt_value_t* s = take_a ? a : b;
    int64_t is = bcast_offset(s, r->rank, idx);
    if (r->is_int) r->i[e] = s->i[is];
    else r->f[e] = s->f[is];
  }
  return NULL;
}

static xc_status_t exec_cast(const rt_value_t* x, xc_dtype_t to, rt_value_t* r) {
  XC_RETURN_IF_ERROR(rt_make(r, to, x->rank, x->dims));
  for (int64_t e = 0; e < x->n; e++) {
    if (!r->is_int) r->f[e] = xc_round_to_dtype(to, get_f(x, e));
    else if (x->is_int) r->i[e] = wrap_int(to, x->i[e]);
    else r->i[e] = float_to_int(to, x->f[e]);
  }
  return NULL;
}

static xc_status_t exec_broadcast(const rt_value_t* x, int rank, const int64_t* dims,
                                  rt_value_t* r) {
  XC_RETURN_IF_ERROR(rt_make(r, x->dtype, rank, dims));
  int64_t idx[XC_TILED_MAX_RANK] = {0, 0, 0};
  for (int64_t e = 0; e < r->n; e++, next_index(rank, dims, idx)) {
    int64_t s = bcast_offset(x, rank, idx);
    if (r->is_int) r->i[e] = x->i[s];
    else r->f[e] = x->f[s];
  }
  return NULL;
}

static xc_status_t exec_reduce(const xc_tiled_op_t* op, const rt_value_t* x, rt_value_t* r) {
  int axis = (int)op->axis;
  int64_t outer = 1, inner = 1, len = x->dims[axis], rdims[XC_TILED_MAX_RANK];
  for (int i = 0; i < axis; i++) outer *= x->dims[i];
  for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
  for (int i = 0, j = 0; i < x->rank; i++)
    if (i != axis) rdims[j++] = x->dims[i];
  XC_RETURN_IF_ERROR(rt_make(r, x->dtype, x->rank - 1, rdims));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * len * inner + in;
      if (x->is_int) {
        int64_t acc = x->i[base];
        for (int64_t l = 1; l < len; l++) {
          int64_t v = x->i[base + l * inner];
          bool ok = true;
          switch (op->reduce) {
            case XC_REDUCE_SUM: ok = xc_add_i64(acc, v, &acc); break;
            case XC_REDUCE_PROD: ok = xc_mul_i64(acc, v, &acc); break;
            case XC_REDUCE_MAX: acc = v > acc ? v : acc; break;
            default: acc = v < acc ? v : acc; break;
          }
          if (!ok) return xc_error(XC_OUT_OF_RANGE, "integer overflow in reduce");
        }
        if (!int_fits(x->dtype, acc))
          return xc_error(XC_OUT_OF_RANGE, "%s overflow in reduce", xc_dtype_name(x->dtype));
        r->i[o * inner + in] = acc;
      } else {
        double acc = x->f[base];
        for (int64_t l = 1; l < len; l++) {
          double v = x->f[base + l * inner];
          switch (op->reduce) {
            case XC_REDUCE_SUM: acc += v; break;
            case XC_REDUCE_PROD: acc *= v; break;
            case XC_REDUCE_MAX: acc = isnan(v) || isnan(acc) ? NAN : v > acc ? v : acc; break;
            default: acc = isnan(v) || isnan(acc) ? NAN : v < acc ? v : acc; break;
          }
        }
        r->f[o * inner + in] = acc;
      }
    }
  return NULL;
}

static xc_status_t exec_dot(const rt_value_t* a, const rt_value_t* b, const rt_value_t* c,
                            rt_value_t* r) {
  int64_t m = a->dims[0], kk = a->dims[1], n = b->dims[1];
  XC_RETURN_IF_ERROR(rt_copy(r, c));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      if (r->is_int) {
        int64_t acc = r->i[i * n + j];
        for (int64_t l = 0; l < kk; l++) {
          int64_t p;
          if (!xc_mul_i64(a->i[i * kk + l], b->i[l * n + j], &p) || !xc_add_i64(acc, p, &acc))
            return xc_error(XC_OUT_OF_RANGE, "integer overflow in dot");
        }
        if (!int_fits(r->dtype, acc))
          return xc_error(XC_OUT_OF_RANGE, "%s overflow in dot", xc_dtype_name(r->dtype));
        r->i[i * n + j] = acc;
      } else {
        double acc = r->f[i * n + j];
        for (int64_t l = 0; l < kk; l++) acc += a->f[i * kk + l] * b->f[l * n + j];
        r->f[i * n + j] = acc;
      }
    }
  return NULL;
}

static xc_status_t exec_memory(const interp_t* in, const xc_tiled_op_t* op, rt_value_t* r) {
  bool load = op->opcode == XC_TOP_LOAD;
  const rt_value_t* mem = &in->vals[op->operands[0]->id];
  const rt_value_t* offs = &in->vals[op->operands[1]->id];
  const xc_tiled_value_t* mask_v = load ? op->operands[2] : op->operands[3];
  const xc_tiled_value_t* data_v = load ? op->operands[3] : op->operands[2];
  const rt_value_t* mask = mask_v ? &in->vals[mask_v->id] : NULL;
  const rt_value_t* data = data_v ? &in->vals[data_v->id] : NULL;
  xc_tensor_t* t = mem->mem;
  int rank;
  int64_t dims[XC_TILED_MAX_RANK] = {1, 1, 1}, idx[XC_TILED_MAX_RANK] = {0, 0, 0};
  if (load) {
    const xc_tiled_type_t* rt = &op->results[0]->type;
    rank = rt->rank;
    resolve_dims(in, rt, dims);
    XC_RETURN_IF_ERROR(rt_make(r, rt->dtype, rank, dims));
  } else {
    rank = offs->rank;
    memcpy(dims, offs->dims, sizeof dims);
  }
  int64_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];
  for (int64_t e = 0; e < total; e++, next_index(rank, dims, idx)) {
    if (mask && !mask->i[bcast_offset(mask, rank, idx)]) {
      if (load && data) {
        int64_t s = bcast_offset(data, rank, idx);
        if (r->is_int) r->i[e] = data->i[s];
        else r->f[e] = data->f[s];
      }
      continue; /* masked-off lanes read `other` (0 when absent) and write nothing */
    }
    int64_t off = offs->i[bcast_offset(offs, rank, idx)];
    if (off < 0 || off >= t->numel)
      return xc_error(XC_OUT_OF_RANGE, "%s at element offset %lld, outside buffer '%s' of %lld "
                      "elements", load ? "load" : "store", (long long)off,
                      mem->mem_name ? mem->mem_name : "?", (long long)t->numel);
    if (load) {
      if (r->is_int) r->i[e] = xc_tensor_get_i64(t, off);
      else r->f[e] = xc_tensor_get_f64(t, off);
    } else {
      int64_t s = bcast_offset(data, rank, idx);
      if (data->is_int) xc_tensor_set_i64(t, off, data->i[s]);
      else xc_tensor_set_f64(t, off, data->f[s]);
    }
  }
  return NULL;
}

static xc_status_t exec_alloc(interp_t* in, const xc_tiled_op_t* op, rt_value_t* r) {
  const xc_tiled_type_t* ty = &op->results[0]->type;
  int64_t dims[XC_TILED_MAX_RANK];
  resolve_dims(in, ty, dims);
  if (in->num_allocs == in->cap_allocs) {
    int cap = in->cap_allocs ? in->cap_allocs * 2 : 8;
    xc_tensor_t** n = realloc(in->allocs, (size_t)cap * sizeof *n);
    if (!n) return xc_error_oom();
    in->allocs = n;
    in->cap_allocs = cap;
  }
  xc_tensor_t* t;
  XC_RETURN_IF_ERROR(xc_tensor_create(ty->dtype, ty->rank, dims, &t));
  in->allocs[in->num_allocs++] = t;
  /* Fresh local memory is undefined: NaN makes reads before writes visible. */
  if (xc_dtype_is_float(ty->dtype))
    for (int64_t e = 0; e < t->numel; e++) xc_tensor_set_f64(t, e, NAN);
  memset(r, 0, sizeof *r);
  r->set = true;
  r->mem = t;
  r->dtype = ty->dtype;
  r->mem_name = xc_tiled_scope_name(ty->scope);
  return NULL;
}

static xc_status_t exec_block(interp_t* in, const xc_tiled_block_t* b);

static xc_status_t exec_for(interp_t* in, const xc_tiled_op_t* op) {
  int64_t lb = in->vals[op->operands[0]->id].i[0];
  int64_t ub = in->vals[op->operands[1]->id].i[0];
  int64_t step = in->vals[op->operands[2]->id].i[0];
  if (step <= 0) return xc_error(XC_INVALID_ARGUMENT, "loop step %lld is not positive",
                                 (long long)step);
  const xc_tiled_block_t* body = op->body;
  int n = op->num_results;
  for (int i = 0; i < n; i++) {
    rt_value_t* arg = &in->vals[body->args[1 + i]->id];
    rt_clear(arg);
    XC_RETURN_IF_ERROR(rt_copy(arg, &in->vals[op->operands[3 + i]->id]));
  }
  rt_value_t* iv = &in->vals[body->args[0]->id];
  for (int64_t it = lb; it < ub;) {
    rt_clear(iv);
    XC_RETURN_IF_ERROR(rt_make(iv, XC_I64, 0, NULL));
    iv->i[0] = it;
    XC_RETURN_IF_ERROR(exec_block(in, body));
    const xc_tiled_op_t* y = body->ops[body->num_ops - 1];
    /* Copy first: a yielded value may itself be a carried argument. */
    rt_value_t next[16];
    rt_value_t* tmp = n <= 16 ? next : calloc((size_t)n, sizeof *tmp);
    if (!tmp) return xc_error_oom();
    xc_status_t st = NULL;
    int made = 0;
    for (; made < n && !st; made++) st = rt_copy(&tmp[made], &in->vals[y->operands[made]->id]);
    for (int i = 0; i < n; i++) {
      rt_value_t* arg = &in->vals[body->args[1 + i]->id];
      rt_clear(arg);
      if (!st) *arg = tmp[i];
      else if (i < made) rt_clear(&tmp[i]);
    }
    if (tmp != next) free(tmp);
    XC_RETURN_IF_ERROR(st);
    if (!xc_add_i64(it, step, &it)) break;
  }
  for (int i = 0; i < n; i++) {
    rt_value_t* res = &in->vals[op->results[i]->id];
    rt_clear(res);
    XC_RETURN_IF_ERROR(rt_copy(res, &in->vals[body->args[1 + i]->id]));
  }
  return NULL;
}

static xc_status_t exec_op(interp_t* in, const xc_tiled_op_t* op) {
  const xc_tiled_kernel_t* k = in->k;
  rt_value_t tmp;
  memset(&tmp, 0, sizeof tmp);
  rt_value_t* x = op->num_operands > 0 && op->operands[0] ? &in->vals[op->operands[0]->id] : NULL;
  const xc_tiled_type_t* rt = op->num_results == 1 ? &op->results[0]->type : NULL;
  xc_status_t st = NULL;
  switch (op->opcode) {
    case XC_TOP_FOR: return exec_for(in, op);
    case XC_TOP_YIELD:
    case XC_TOP_BARRIER: return NULL; /* programs run whole tiles at once */
    case XC_TOP_STORE: return exec_memory(in, op, NULL);
    case XC_TOP_LOAD: st = exec_memory(in, op, &tmp); break;
    case XC_TOP_ALLOC: st = exec_alloc(in, op, &tmp); break;
    case XC_TOP_CONST: {
      int64_t dims[XC_TILED_MAX_RANK];
      resolve_dims(in, rt, dims);
      st = rt_make(&tmp, rt->dtype, rt->rank, dims);
      for (int64_t e = 0; !st && e < tmp.n; e++) {
        if (xc_dtype_is_int(rt->dtype)) tmp.i[e] = wrap_int(rt->dtype, op->i);
        else if (rt->dtype == XC_BOOL) tmp.i[e] = op->f != 0;
        else tmp.f[e] = xc_round_to_dtype(rt->dtype, op->f);
      }
      break;
    }
    case XC_TOP_PROGRAM_ID:
    case XC_TOP_NUM_PROGRAMS:
    case XC_TOP_KNOB:
      st = rt_make(&tmp, XC_I64, 0, NULL);
      if (!st)
        tmp.i[0] = op->opcode == XC_TOP_KNOB ? in->knobs[op->axis]
                 : op->opcode == XC_TOP_PROGRAM_ID ? in->pid[op->axis] : in->nprog[op->axis];
      break;
    case XC_TOP_ARANGE: {
      int64_t n = xc_tiled_dim_resolve(rt->dims[0], in->knobs);
      st = rt_make(&tmp, XC_I64, 1, &n);
      for (int64_t e = 0; !st && e < n; e++) tmp.i[e] = e;
      break;
    }
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: {
      int64_t dims[XC_TILED_MAX_RANK];
      resolve_dims(in, rt, dims);
      if (op->opcode == XC_TOP_EXPAND_DIMS) {
        st = rt_copy(&tmp, x);
        if (!st) {
          tmp.rank = rt->rank;
          memcpy(tmp.dims, dims, sizeof dims);
        }
      } else {
        st = exec_broadcast(x, rt->rank, dims, &tmp);
      }
      break;
    }
    case XC_TOP_TRANS: {
      int64_t dims[2] = {x->dims[1], x->dims[0]};
      st = rt_make(&tmp, x->dtype, 2, dims);
      for (int64_t i = 0; !st && i < x->dims[0]; i++)
        for (int64_t j = 0; j < x->dims[1]; j++) {
          if (tmp.is_int) tmp.i[j * dims[1] + i] = x->i[i * x->dims[1] + j];
          else tmp.f[j * dims[1] + i] = x->f[i * x->dims[1] + j];
        }
      break;
    }
    case XC_TOP_CMP: st = exec_binary(in, op, x, &in->vals[op->operands[1]->id], &tmp); break;
    case XC_TOP_SELECT:
      st = exec_select(in, op, x, &in->vals[op->operands[1]->id], &in->vals[op->operands[2]->id],
                       &tmp);
      break;
    case XC_TOP_CAST: st = exec_cast(x, rt->dtype, &tmp); break;
    case XC_TOP_REDUCE: st = exec_reduce(op, x, &tmp); break;
    case XC_TOP_DOT:
      st = exec_dot(x, &in->vals[op->operands[1]->id], &in->vals[op->operands[2]->id], &tmp);
      break;
    default:
      if (xc_tiled_is_unary(op->opcode)) st = exec_unary(op, x, &tmp);
      else if (xc_tiled_is_binary(op->opcode))
        st = exec_binary(in, op, x, &in->vals[op->operands[1]->id], &tmp);
      else st = xc_error(XC_INTERNAL, "cannot interpret %s", xc_tiled_opcode_name(op->opcode));
      break;
  }
  (void)k;
  if (st) {
    rt_clear(&tmp);
    return st;
  }
  rt_value_t* dst = &in->vals[op->results[0]->id];
  rt_clear(dst);
  *dst = tmp;
  return NULL;
}

static xc_status_t exec_block(interp_t* in, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    xc_status_t st = exec_op(in, b->ops[i]);
    if (st) {
      char where[64];
      return xc_status_annotate(st, "%s", xc_tiled_op_str(b->ops[i], where, sizeof where));
    }
  }
  return NULL;
}

static xc_status_t run_programs(interp_t* in) {
  const xc_tiled_kernel_t* k = in->k;
  int64_t total = 1;
  for (int a = 0; a < XC_TILED_MAX_GRID; a++) {
    in->nprog[a] = 1;
    if (a < k->grid_rank) {
      XC_RETURN_IF_ERROR(xc_status_annotate(
          xc_texpr_eval(k->grid[a], in->knobs, in->params, NULL, &in->nprog[a]), "grid axis %d", a));
      if (in->nprog[a] < 0)
        return xc_error(XC_INVALID_ARGUMENT, "grid axis %d has %lld programs", a,
                        (long long)in->nprog[a]);
    }
    if (!xc_mul_i64(total, in->nprog[a], &total))
      return xc_error(XC_OUT_OF_RANGE, "grid size overflows");
  }
  if (total > XC_TILED_INTERP_MAX_PROGRAMS)
    return xc_error(XC_RESOURCE_EXHAUSTED, "grid of %lld programs is too large to interpret",
                    (long long)total);
  /* Buffer and scalar parameters are fixed for the whole launch. */
  for (int p = 0; p < k->num_params; p++) {
    const xc_tiled_value_t* pv = k->params[p];
    rt_value_t* v = &in->vals[pv->id];
    if (pv->type.kind == XC_TILED_MEMREF) {
      v->set = true;
      v->mem = in->args[p].buffer;
      v->dtype = pv->type.dtype;
      v->mem_name = pv->name;
    } else {
      XC_RETURN_IF_ERROR(rt_make(v, XC_I64, 0, NULL));
      v->i[0] = in->args[p].scalar;
    }
  }
  for (int64_t z = 0; z < in->nprog[2]; z++)
    for (int64_t y = 0; y < in->nprog[1]; y++)
      for (int64_t x = 0; x < in->nprog[0]; x++) {
        in->pid[0] = x, in->pid[1] = y, in->pid[2] = z;
        xc_status_t st = exec_block(in, k->body);
        for (int i = 0; i < in->num_allocs; i++) xc_tensor_destroy(in->allocs[i]);
        in->num_allocs = 0;
        if (st)
          return xc_status_annotate(st, "program (%lld,%lld,%lld)", (long long)x, (long long)y,
                                    (long long)z);
      }
  return NULL;
}

xc_status_t xc_tiled_run(const xc_tiled_kernel_t* k, const int64_t* knob_values, int num_args,
                         const xc_tiled_arg_t* args) {
  XC_RETURN_IF_ERROR(xc_tiled_verify(k));
  if (num_args != k->num_params)
    return xc_error(XC_INVALID_ARGUMENT, "tiled kernel '%s' takes %d arguments, got %d", k->name,
                    k->num_params, num_args);
  for (int p = 0; p < k->num_params; p++) {
    const xc_tiled_value_t* pv = k->params[p];
    if (pv->type.kind != XC_TILED_MEMREF) continue;
    if (!args[p].buffer)
      return xc_error(XC_INVALID_ARGUMENT, "tiled kernel '%s': buffer '%s' is not bound", k->name,
                      pv->name);
    if (args[p].buffer->dtype != pv->type.dtype)
      return xc_error(XC_INVALID_ARGUMENT, "tiled kernel '%s': buffer '%s' is %s, argument is %s",
                      k->name, pv->name, xc_dtype_name(pv->type.dtype),
                      xc_dtype_name(args[p].buffer->dtype));
    if (args[p].buffer->numel > 0 && !args[p].buffer->data)
      return xc_error(XC_INVALID_ARGUMENT, "tiled kernel '%s': buffer '%s' has no data", k->name,
                      pv->name);
  }
  int nk = k->num_knobs;
  int64_t* knobs = calloc((size_t)(nk ? nk : 1), sizeof *knobs);
  int64_t* params = calloc((size_t)(k->num_params ? k->num_params : 1), sizeof *params);
  rt_value_t* vals = calloc((size_t)(k->num_values ? k->num_values : 1), sizeof *vals);
  xc_status_t st = NULL;
  if (!knobs || !params || !vals) st = xc_error_oom();
  if (!st) {
    for (int i = 0; i < nk; i++) knobs[i] = knob_values ? knob_values[i] : k->knobs[i].default_value;
    for (int p = 0; p < k->num_params; p++) params[p] = args[p].scalar;
    st = xc_status_annotate(xc_tiled_knobs_check(k, knobs, NULL), "tiled kernel '%s'", k->name);
  }
  if (!st) {
    interp_t in = {k, knobs, args, params, {0}, {0}, vals, 0, 0, NULL};
    st = run_programs(&in);
    free(in.allocs);
    st = xc_status_annotate(st, "tiled kernel '%s'", k->name);
  }
  if (vals)
    for (int i = 0; i < k->num_values; i++) rt_clear(&vals[i]);
  free(vals);
  free(params);
  free(knobs);
  return st;
}
