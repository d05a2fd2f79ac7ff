/* Element types: sizes, names, ONNX enum mapping and exact float conversions. */
#include "xcomp/dtype.h"

#include <math.h>
#include <string.h>

typedef struct {
  const char* name;
  size_t size;
  int32_t onnx;
} dtype_info_t;

/* ONNX TensorProto.DataType: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6
 * INT64=7 STRING=8 BOOL=9 FLOAT16=10 DOUBLE=11 UINT32=12 UINT64=13 BFLOAT16=16
 * FLOAT8E4M3FN=17 FLOAT8E5M2=19. */
static const dtype_info_t infos[XC_DTYPE_COUNT] = {
    [XC_DTYPE_UNDEFINED] = {"undefined", 0, 0},
    [XC_F32] = {"f32", 4, 1},
    [XC_F64] = {"f64", 8, 11},
    [XC_F16] = {"f16", 2, 10},
    [XC_BF16] = {"bf16", 2, 16},
    [XC_I8] = {"i8", 1, 3},
    [XC_I16] = {"i16", 2, 5},
    [XC_I32] = {"i32", 4, 6},
    [XC_I64] = {"i64", 8, 7},
    [XC_U8] = {"u8", 1, 2},
    [XC_U16] = {"u16", 2, 4},
    [XC_U32] = {"u32", 4, 12},
    [XC_U64] = {"u64", 8, 13},
    [XC_BOOL] = {"bool", 1, 9},
    [XC_F8E4M3FN] = {"f8e4m3fn", 1, 17},
    [XC_F8E5M2] = {"f8e5m2", 1, 19},
};

size_t xc_dtype_size(xc_dtype_t t) {
  return (unsigned)t < XC_DTYPE_COUNT ? infos[t].size : 0;
}

const char* xc_dtype_name(xc_dtype_t t) {
  return (unsigned)t < XC_DTYPE_COUNT ? infos[t].name : "invalid";
}

bool xc_dtype_from_name(const char* name, xc_dtype_t* out) {
  for (int t = 1; t < XC_DTYPE_COUNT; t++) {
    if (strcmp(infos[t].name, name) == 0) {
      *out = (xc_dtype_t)t;
      return true;
    }
  }
  return false;
}

bool xc_dtype_is_float(xc_dtype_t t) {
  return t == XC_F32 || t == XC_F64 || t == XC_F16 || t == XC_BF16 ||
         t == XC_F8E4M3FN || t == XC_F8E5M2;
}

bool xc_dtype_is_int(xc_dtype_t t) {
  return (t >= XC_I8 && t <= XC_I64) || (t >= XC_U8 && t <= XC_U64);
}

bool xc_dtype_is_signed(xc_dtype_t t) {
  return xc_dtype_is_float(t) || (t >= XC_I8 && t <= XC_I64);
}

xc_dtype_t xc_dtype_from_onnx(int32_t onnx_type) {
  if (onnx_type <= 0) return XC_DTYPE_UNDEFINED;
  for (int t = 1; t < XC_DTYPE_COUNT; t++)
    if (infos[t].onnx == onnx_type) return (xc_dtype_t)t;
  return XC_DTYPE_UNDEFINED;
}

int32_t xc_dtype_to_onnx(xc_dtype_t t) {
  return (unsigned)t < XC_DTYPE_COUNT ? infos[t].onnx : 0;
}

/* Generic round-to-nearest-even encoder for small binary floats with
 * `ebits` exponent bits and `mbits` mantissa bits (IEEE-like, with inf/nan). */
static uint32_t encode_ieee(double x, int ebits, int mbits) {
  uint32_t sign = signbit(x) ? 1u : 0u;
  uint32_t emax_field = (1u << ebits) - 1;
  uint32_t out_sign = sign << (ebits + mbits);
  if (isnan(x)) return out_sign | (emax_field << mbits) | (1u << (mbits - 1));
  double a = fabs(x);
  int bias = (1 << (ebits - 1)) - 1;
  if (isinf(a)) return out_sign | (emax_field << mbits);
  if (a == 0) return out_sign;
  int e;
  frexp(a, &e); /* a = f * 2^e, f in [0.5,1) -> unbiased exponent e-1 */
  int exp = e - 1;
  int min_exp = 1 - bias;
  /* Quantum: spacing of representable numbers at this exponent. */
  int q_exp = (exp < min_exp ? min_exp : exp) - mbits;
  double scaled = ldexp(a, -q_exp); /* integer significand, exact in double */
  double r = nearbyint(scaled);     /* default rounding mode: nearest even */
  double m = r;
  int out_exp = exp < min_exp ? min_exp : exp;
  if (m >= ldexp(1.0, mbits + 1)) { /* rounding overflowed into next binade */
    m /= 2;
    out_exp++;
  }
  uint32_t field;
  uint32_t mant;
  if (m < ldexp(1.0, mbits)) { /* subnormal */
    field = 0;
    mant = (uint32_t)m;
  } else {
    field = (uint32_t)(out_exp + bias);
    mant = (uint32_t)(m - ldexp(1.0, mbits));
  }
  if (field >= emax_field) return out_sign | (emax_field << mbits); /* inf */
  return out_sign | (field << mbits) | mant;
}

static double decode_ieee(uint32_t bits, int ebits, int mbits) {
  uint32_t sign = (bits >> (ebits + mbits)) & 1u;
  uint32_t field = (bits >> mbits) & ((1u << ebits) - 1);
  uint32_t mant = bits & ((1u << mbits) - 1);
  int bias = (1 << (ebits - 1)) - 1;
  double v;
  if (field == (1u << ebits) - 1)
    v = mant ? NAN : INFINITY;
  else if (field == 0)
    v = ldexp((double)mant, 1 - bias - mbits);
  else
    v = ldexp((double)(mant | (1u << mbits)), (int)field - bias - mbits);
  return sign ? -v : v;
}

float xc_f16_to_f32(uint16_t h) { return (float)decode_ieee(h, 5, 10); }
uint16_t xc_f64_to_f16(double x) { return (uint16_t)encode_ieee(x, 5, 10); }
float xc_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint16_t xc_f64_to_bf16(double x) { return (uint16_t)encode_ieee(x, 8, 7); }

/* e4m3fn: no infinities, NaN = S.1111.111, max 448. */
float xc_f8e4m3fn_to_f32(uint8_t v) {
  uint32_t sign = v >> 7, field = (v >> 3) & 15, mant = v & 7;
  if (field == 15 && mant == 7) return NAN;
  double r = field == 0 ? ldexp(mant, -9) : ldexp(mant | 8, (int)field - 10);
  return (float)(sign ? -r : r);
}

uint8_t xc_f64_to_f8e4m3fn(double x) {
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) return 0x7f;
  double a = fabs(x);
  if (a >= 448.0) return sign | 0x7e; /* saturate (inf too) */
  /* Encode as if IEEE with 4/3 bits; fields up to 15 are finite here. */
  int e;
  frexp(a, &e);
  int exp = e - 1;
  if (a == 0) return sign;
  int q_exp = (exp < -6 ? -6 : exp) - 3;
  double m = nearbyint(ldexp(a, -q_exp));
  int out_exp = exp < -6 ? -6 : exp;
  if (m >= 16) {
    m /= 2;
    out_exp++;
  }
  uint8_t bits;
  if (m < 8)
    bits = (uint8_t)m;
  else
    bits = (uint8_t)(((out_exp + 7) << 3) | ((int)m - 8));
  if (bits > 0x7e) bits = 0x7e;
  return sign | bits;
}

float xc_f8e5m2_to_f32(uint8_t v) { return (float)decode_ieee(v, 5, 2); }
uint8_t xc_f64_to_f8e5m2(double x) {
  uint8_t b = (uint8_t)encode_ieee(x, 5, 2);
  /* Saturate finite overflow to max normal (ONNX saturate=1). */
  if (!isinf(x) && !isnan(x) && (b & 0x7f) == 0x7c) b = (uint8_t)((b & 0x80) | 0x7b);
  return b;
}

double xc_round_to_dtype(xc_dtype_t t, double x) {
  switch (t) {
    case XC_F32: return (double)(float)x;
    case XC_F16: return xc_f16_to_f32(xc_f64_to_f16(x));
    case XC_BF16: return xc_bf16_to_f32(xc_f64_to_bf16(x));
    case XC_F8E4M3FN: return xc_f8e4m3fn_to_f32(xc_f64_to_f8e4m3fn(x));
    case XC_F8E5M2: return xc_f8e5m2_to_f32(xc_f64_to_f8e5m2(x));
    default: return x;
  }
}
