/* Tolerance checks: the one definition of "the computed tensor agrees with
 * the reference", shared by `xcomp compare`, `xcomp conform` and tests. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xcomp/conformance.h"

void xc_tolerance_onnx(xc_tolerance_t* out) {
  memset(out, 0, sizeof *out);
  out->rtol = 1e-3;
  out->atol = 1e-7;
  out->check_allclose = true;
}

void xc_tolerance_for_dtype(xc_dtype_t dtype, xc_tolerance_t* out) {
  memset(out, 0, sizeof *out);
  out->check_rel_l2 = true;
  switch (dtype) {
    case XC_F32:
    case XC_F64:
      out->max_rel_l2 = 1e-5;
      out->check_allclose = true;
      out->rtol = 1e-3;
      out->atol = 1e-5;
      break;
    case XC_F16: out->max_rel_l2 = 2e-3; break;
    case XC_BF16: out->max_rel_l2 = 1.6e-2; break;
    case XC_F8E4M3FN:
    case XC_F8E5M2: out->max_rel_l2 = 1.25e-1; break;
    default: out->check_rel_l2 = false; break; /* integers, bool: exact anyway */
  }
}

void xc_tolerance_stored_model(xc_dtype_t dtype, xc_tolerance_t* out) {
  xc_tolerance_for_dtype(dtype, out);
  out->check_allclose = false;
}

const char* xc_format_index(int rank, const int64_t* dims, int64_t flat, char* buf,
                            size_t n) {
  int64_t idx[XC_MAX_RANK] = {0};
  for (int d = rank - 1; d >= 0; d--) {
    if (dims[d] > 0) {
      idx[d] = flat % dims[d];
      flat /= dims[d];
    }
  }
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < rank && k < n; d++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

static int dtype_bits(xc_dtype_t t) { return (int)xc_dtype_size(t) * 8; }

static bool bits_are_nan(xc_dtype_t t, uint64_t b) {
  switch (t) {
    case XC_F16: return isnan(xc_f16_to_f32((uint16_t)b));
    case XC_BF16: return isnan(xc_bf16_to_f32((uint16_t)b));
    case XC_F8E4M3FN: return isnan(xc_f8e4m3fn_to_f32((uint8_t)b));
    case XC_F8E5M2: return isnan(xc_f8e5m2_to_f32((uint8_t)b));
    case XC_F32: {
      uint32_t u = (uint32_t)b;
      float f;
      memcpy(&f, &u, sizeof f);
      return isnan(f);
    }
    case XC_F64: {
      double d;
      memcpy(&d, &b, sizeof d);
      return isnan(d);
    }
    default: return false;
  }
}

uint64_t xc_ulp_distance_bits(xc_dtype_t dtype, uint64_t a_bits, uint64_t b_bits) {
  int bits = dtype_bits(dtype);
  if (bits <= 0 || bits > 64 || !xc_dtype_is_float(dtype)) return UINT64_MAX;
  if (bits_are_nan(dtype, a_bits) || bits_are_nan(dtype, b_bits)) return UINT64_MAX;
  uint64_t sign = (uint64_t)1 << (bits - 1);
  uint64_t mask = sign - 1;
  uint64_t ma = a_bits & mask, mb = b_bits & mask;
  bool na = (a_bits & sign) != 0, nb = (b_bits & sign) != 0;
  /* Sign-magnitude to a number line: same sign -> difference of magnitudes;
   * opposite signs -> distance through zero (+0 and -0 coincide). */
  if (na == nb) return ma > mb ? ma - mb : mb - ma;
  uint64_t sum = ma + mb;
  return sum < ma ? UINT64_MAX : sum;
}

static uint64_t to_bits(xc_dtype_t t, double x) {
  switch (t) {
    case XC_F16: return xc_f64_to_f16(x);
    case XC_BF16: return xc_f64_to_bf16(x);
    case XC_F8E4M3FN: return xc_f64_to_f8e4m3fn(x);
    case XC_F8E5M2: return xc_f64_to_f8e5m2(x);
    case XC_F32: {
      float f = (float)x;
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      return u;
    }
    default: {
      uint64_t u;
      memcpy(&u, &x, sizeof u);
      return u;
    }
  }
}

uint64_t xc_ulp_distance(xc_dtype_t dtype, double a, double b) {
  return xc_ulp_distance_bits(dtype, to_bits(dtype, a), to_bits(dtype, b));
}

static uint64_t raw_bits(const xc_tensor_t* t, int64_t i) {
  size_t es = xc_dtype_size(t->dtype);
  const unsigned char* p = (const unsigned char*)t->data + (size_t)i * es;
  switch (es) {
    case 1: return p[0];
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

static bool same_shape(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static bool is_unsigned64(xc_dtype_t t) { return t == XC_U64; }

/* Absolute difference of two integer elements without overflow. */
static double int_abs_diff(const xc_tensor_t* a, const xc_tensor_t* e, int64_t i) {
  int64_t x = xc_tensor_get_i64(a, i), y = xc_tensor_get_i64(e, i);
  if (is_unsigned64(a->dtype)) {
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    return (double)(ux > uy ? ux - uy : uy - ux);
  }
  int64_t d;
  if (xc_sub_i64(x, y, &d)) return d < 0 ? -(double)d : (double)d;
  return fabs((double)x - (double)y);
}

xc_status_t xc_compare_tensors(const xc_tensor_t* actual, const xc_tensor_t* expected,
                               const xc_tolerance_t* tol, xc_compare_result_t* out) {
  memset(out, 0, sizeof *out);
  out->first_mismatch = -1;
  if (!actual || !expected || !tol)
    return xc_error(XC_INVALID_ARGUMENT, "xc_compare_tensors: NULL argument");
  char ba[128], be[128], bi[96];
  if (actual->dtype != expected->dtype || !same_shape(actual, expected)) {
    snprintf(out->reason, sizeof out->reason, "%s %s, reference %s",
             actual->dtype != expected->dtype ? "dtype" : "shape",
             xc_tensor_describe(actual, ba, sizeof ba),
             xc_tensor_describe(expected, be, sizeof be));
    out->max_abs = INFINITY;
    out->max_ulp = INFINITY;
    out->rel_l2 = INFINITY;
    return NULL;
  }
  xc_dtype_t dt = actual->dtype;
  bool is_float = xc_dtype_is_float(dt);
  double sum_diff2 = 0, sum_ref2 = 0;
  const char* first_why = NULL;
  for (int64_t i = 0; i < actual->numel; i++) {
    bool bad = false;
    const char* why = NULL;
    double diff, ulp;
    if (!is_float) {
      diff = int_abs_diff(actual, expected, i);
      ulp = diff;
      bad = diff != 0;
      why = "value";
      double ev = xc_tensor_get_f64(expected, i);
      sum_ref2 += ev * ev;
      sum_diff2 += diff * diff;
    } else {
      double a = xc_tensor_get_f64(actual, i), e = xc_tensor_get_f64(expected, i);
      if (isnan(a) || isnan(e)) {
        bad = !(isnan(a) && isnan(e));
        why = isnan(a) ? "NaN where the reference has a number" : "number where the reference has NaN";
        diff = bad ? INFINITY : 0;
        ulp = bad ? INFINITY : 0;
      } else if (isinf(a) || isinf(e)) {
        bad = a != e;
        why = isinf(e) ? (isinf(a) ? "infinity of the wrong sign" : "finite where the reference is infinite")
                       : "infinity where the reference is finite";
        diff = bad ? INFINITY : 0;
        ulp = bad ? INFINITY : 0;
      } else {
        diff = fabs(a - e);
        uint64_t u = xc_ulp_distance_bits(dt, raw_bits(actual, i), raw_bits(expected, i));
        ulp = (double)u;
        sum_diff2 += diff * diff;
        sum_ref2 += e * e;
        if (tol->check_allclose && !(diff <= tol->atol + tol->rtol * fabs(e))) {
          bad = true;
          why = "outside rtol/atol";
        }
      }
    }
    if (diff > out->max_abs) out->max_abs = diff;
    if (ulp > out->max_ulp) out->max_ulp = ulp;
    if (bad) {
      if (out->num_mismatches == 0) {
        out->first_mismatch = i;
        out->actual_at_first = xc_tensor_get_f64(actual, i);
        out->expected_at_first = xc_tensor_get_f64(expected, i);
        first_why = why;
      }
      out->num_mismatches++;
    }
  }
  if (sum_ref2 > 0)
    out->rel_l2 = sqrt(sum_diff2) / sqrt(sum_ref2);
  else
    out->rel_l2 = sum_diff2 > 0 ? INFINITY : 0;
  bool l2_bad = tol->check_rel_l2 && !(out->rel_l2 <= tol->max_rel_l2);
  out->ok = out->num_mismatches == 0 && !l2_bad;
  if (out->num_mismatches > 0) {
    snprintf(out->reason, sizeof out->reason,
             "%lld of %lld elements differ; first at %s: got %.9g, expected %.9g (%s)",
             (long long)out->num_mismatches, (long long)actual->numel,
             xc_format_index(actual->rank, actual->dims, out->first_mismatch, bi, sizeof bi),
             out->actual_at_first, out->expected_at_first, first_why);
  } else if (l2_bad) {
    snprintf(out->reason, sizeof out->reason, "relative L2 error %.3g exceeds %.3g",
             out->rel_l2, tol->max_rel_l2);
  }
  return NULL;
}
