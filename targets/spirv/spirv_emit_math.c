/* Element math of the SPIR-V emitter: types, constants, the tiled IR's
 * unary/binary/compare/cast meanings (docs/tiled-ir.md, the interpreter in
 * ir/tiled_interp.c is the reference) and buffer storage conversions.
 *
 * Compute types: f32 for f32, f16 and bf16 (rounded to their precision only
 * where the IR casts or stores, as the reference does); f64; i32 for i8, i16,
 * i32; u32 for u8, u16, u32; i64; u64; bool. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv/unified1/GLSL.std.450.h>

#include "spirv_emit_internal.h"

void spv_fail(spv_emitter_t* e, xc_code_t code, const char* fmt, ...) {
  if (e->err) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  e->err = spv_host->error(code, "spirv: kernel '%s': %s", e->k->name ? e->k->name : "?", msg);
}

uint32_t spv_ptr(spv_emitter_t* e, SpvStorageClass sc, uint32_t type) {
  return spv_type(&e->b, SpvOpTypePointer, 2, (uint32_t)sc, type);
}

static void need(spv_emitter_t* e, uint32_t feature, const char* what) {
  if (!(e->t->features & feature)) spv_fail(e, XC_UNSUPPORTED, "the device lacks %s", what);
  e->features |= feature;
}

static uint32_t int_type(spv_emitter_t* e, int bits, bool is_signed) {
  if (bits == 64) {
    need(e, SPV_FEATURE_INT64, "64-bit integers (shaderInt64)");
    spv_capability(&e->b, SpvCapabilityInt64);
  }
  return spv_type(&e->b, SpvOpTypeInt, 2, (uint32_t)bits, is_signed ? 1u : 0u);
}

uint32_t spv_ctype(spv_emitter_t* e, xc_dtype_t t) {
  switch (t) {
    case XC_F32:
    case XC_F16:
    case XC_BF16: return e->t_f32;
    case XC_F64:
      need(e, SPV_FEATURE_FLOAT64, "64-bit floats (shaderFloat64)");
      spv_capability(&e->b, SpvCapabilityFloat64);
      return spv_type(&e->b, SpvOpTypeFloat, 1, 64u);
    case XC_I8:
    case XC_I16:
    case XC_I32: return e->t_i32;
    case XC_U8:
    case XC_U16:
    case XC_U32: return e->t_u32;
    case XC_I64: return e->t_i64;
    case XC_U64: return int_type(e, 64, false);
    case XC_BOOL: return e->t_bool;
    default: spv_fail(e, XC_UNSUPPORTED, "dtype %s", spv_dtype_name(t)); return e->t_f32;
  }
}

static void storage16(spv_emitter_t* e) {
  need(e, SPV_FEATURE_STORAGE16, "16-bit storage buffers (storageBuffer16BitAccess)");
  spv_capability(&e->b, SpvCapabilityStorageBuffer16BitAccess);
}

static void storage8(spv_emitter_t* e) {
  need(e, SPV_FEATURE_STORAGE8, "8-bit storage buffers (storageBuffer8BitAccess)");
  spv_capability(&e->b, SpvCapabilityStorageBuffer8BitAccess);
  spv_extension(&e->b, "SPV_KHR_8bit_storage");
}

uint32_t spv_stype(spv_emitter_t* e, xc_dtype_t t) {
  switch (t) {
    case XC_F16:
      storage16(e);
      need(e, SPV_FEATURE_FLOAT16, "16-bit floats (shaderFloat16)");
      spv_capability(&e->b, SpvCapabilityFloat16);
      return spv_type(&e->b, SpvOpTypeFloat, 1, 16u);
    case XC_BF16:
    case XC_U16:
    case XC_I16:
      storage16(e);
      need(e, SPV_FEATURE_INT16, "16-bit integers (shaderInt16)");
      spv_capability(&e->b, SpvCapabilityInt16);
      return spv_type(&e->b, SpvOpTypeInt, 2, 16u, t == XC_I16 ? 1u : 0u);
    case XC_I8:
    case XC_U8:
    case XC_BOOL:
      storage8(e);
      need(e, SPV_FEATURE_INT8, "8-bit integers (shaderInt8)");
      spv_capability(&e->b, SpvCapabilityInt8);
      return spv_type(&e->b, SpvOpTypeInt, 2, 8u, t == XC_I8 ? 1u : 0u);
    default: return spv_ctype(e, t);
  }
}

uint32_t spv_ci32(spv_emitter_t* e, int64_t v) { return spv_const(&e->b, e->t_i32, 1, (uint32_t)(int32_t)v, 0); }
uint32_t spv_cu32(spv_emitter_t* e, uint32_t v) { return spv_const(&e->b, e->t_u32, 1, v, 0); }
uint32_t spv_ci64(spv_emitter_t* e, int64_t v) {
  uint64_t u = (uint64_t)v;
  return spv_const(&e->b, e->t_i64, 2, (uint32_t)u, (uint32_t)(u >> 32));
}
uint32_t spv_cf32(spv_emitter_t* e, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return spv_const(&e->b, e->t_f32, 1, u, 0);
}

uint32_t spv_const_of(spv_emitter_t* e, xc_dtype_t t, double f, int64_t i) {
  uint32_t ty = spv_ctype(e, t);
  switch (t) {
    case XC_BOOL: return spv_const_bool(&e->b, f != 0 || i != 0);
    case XC_F64: {
      uint64_t u;
      memcpy(&u, &f, 8);
      return spv_const(&e->b, ty, 2, (uint32_t)u, (uint32_t)(u >> 32));
    }
    case XC_F32:
    case XC_F16:
    case XC_BF16: return spv_cf32(e, (float)f);
    case XC_I64:
    case XC_U64: return spv_const(&e->b, ty, 2, (uint32_t)(uint64_t)i, (uint32_t)((uint64_t)i >> 32));
    default: return spv_const(&e->b, ty, 1, (uint32_t)i, 0);
  }
}

uint32_t spv_ext(spv_emitter_t* e, int inst, uint32_t type, int n, uint32_t a, uint32_t b, uint32_t c) {
  if (n == 1) return spv_val(&e->b, SpvOpExtInst, type, 3, e->glsl, (uint32_t)inst, a);
  if (n == 2) return spv_val(&e->b, SpvOpExtInst, type, 4, e->glsl, (uint32_t)inst, a, b);
  return spv_val(&e->b, SpvOpExtInst, type, 5, e->glsl, (uint32_t)inst, a, b, c);
}

static bool is_float(xc_dtype_t t) { return t == XC_F32 || t == XC_F16 || t == XC_BF16 || t == XC_F64; }
static bool is_signed_int(xc_dtype_t t) { return t == XC_I8 || t == XC_I16 || t == XC_I32 || t == XC_I64; }
static bool is_64(xc_dtype_t t) { return t == XC_I64 || t == XC_U64 || t == XC_F64; }

static uint32_t fconst(spv_emitter_t* e, xc_dtype_t t, double v) { return spv_const_of(e, t, v, 0); }

static uint32_t nan_const(spv_emitter_t* e, xc_dtype_t t) {
  if (t == XC_F64) return spv_const(&e->b, spv_ctype(e, t), 2, 0, 0x7ff80000u);
  return spv_const(&e->b, e->t_f32, 1, 0x7fc00000u, 0);
}

/* Transcendentals of GLSL.std.450 take 16/32-bit floats only. */
static bool f64_transcendental(spv_emitter_t* e, xc_dtype_t t, const char* what) {
  if (t != XC_F64) return false;
  spv_fail(e, XC_UNSUPPORTED, "%s on f64 (GLSL.std.450 has it for 32-bit floats only)", what);
  return true;
}

/* erf: odd; a series near 0 (relative accuracy), Abramowitz & Stegun 7.1.26
 * elsewhere (absolute error below 1.5e-7). */
static uint32_t erf_f32(spv_emitter_t* e, uint32_t x) {
  uint32_t f = e->t_f32;
  spv_builder_t* b = &e->b;
  uint32_t ax = spv_ext(e, GLSLstd450FAbs, f, 1, x, 0, 0);
  uint32_t t = spv_val(b, SpvOpFDiv, f, 2, spv_cf32(e, 1.0f),
                       spv_ext(e, GLSLstd450Fma, f, 3, spv_cf32(e, 0.3275911f), ax, spv_cf32(e, 1.0f)));
  static const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  uint32_t p = spv_cf32(e, a[4]);
  for (int i = 3; i >= 0; i--) p = spv_ext(e, GLSLstd450Fma, f, 3, p, t, spv_cf32(e, a[i]));
  p = spv_val(b, SpvOpFMul, f, 2, p, t);
  uint32_t x2 = spv_val(b, SpvOpFMul, f, 2, ax, ax);
  uint32_t ex = spv_ext(e, GLSLstd450Exp, f, 1, spv_val(b, SpvOpFNegate, f, 1, x2), 0, 0);
  uint32_t far = spv_val(b, SpvOpFSub, f, 2, spv_cf32(e, 1.0f), spv_val(b, SpvOpFMul, f, 2, p, ex));
  far = spv_val(b, SpvOpFMul, f, 2, far, spv_ext(e, GLSLstd450FSign, f, 1, x, 0, 0));
  /* 2/sqrt(pi) * x * (1 - x^2/3 + x^4/10 - x^6/42 + x^8/216) */
  static const float c[5] = {1.0f, -1.0f / 3, 1.0f / 10, -1.0f / 42, 1.0f / 216};
  uint32_t s = spv_cf32(e, c[4]);
  for (int i = 3; i >= 0; i--) s = spv_ext(e, GLSLstd450Fma, f, 3, s, x2, spv_cf32(e, c[i]));
  uint32_t near = spv_val(b, SpvOpFMul, f, 2, spv_val(b, SpvOpFMul, f, 2, s, x), spv_cf32(e, 1.1283791671f));
  uint32_t small = spv_val(b, SpvOpFOrdLessThan, e->t_bool, 2, ax, spv_cf32(e, 0.5f));
  return spv_val(b, SpvOpSelect, f, 3, small, near, far);
}

/* pow with C's meaning on negative bases and zero. */
static uint32_t pow_f32(spv_emitter_t* e, uint32_t a, uint32_t y) {
  uint32_t f = e->t_f32, bt = e->t_bool;
  spv_builder_t* b = &e->b;
  uint32_t aa = spv_ext(e, GLSLstd450FAbs, f, 1, a, 0, 0);
  uint32_t r = spv_ext(e, GLSLstd450Pow, f, 2, aa, y, 0);
  uint32_t yi = spv_ext(e, GLSLstd450Floor, f, 1, y, 0, 0);
  uint32_t y_int = spv_val(b, SpvOpFOrdEqual, bt, 2, yi, y);
  uint32_t half = spv_val(b, SpvOpFMul, f, 2, y, spv_cf32(e, 0.5f));
  uint32_t y_odd = spv_val(b, SpvOpLogicalAnd, bt, 2, y_int,
                           spv_val(b, SpvOpFOrdNotEqual, bt, 2, spv_ext(e, GLSLstd450Floor, f, 1, half, 0, 0), half));
  uint32_t neg = spv_val(b, SpvOpFOrdLessThan, bt, 2, a, spv_cf32(e, 0.0f));
  uint32_t flip = spv_val(b, SpvOpLogicalAnd, bt, 2, neg, y_odd);
  r = spv_val(b, SpvOpSelect, f, 3, flip, spv_val(b, SpvOpFNegate, f, 1, r), r);
  uint32_t bad = spv_val(b, SpvOpLogicalAnd, bt, 2, neg, spv_val(b, SpvOpLogicalNot, bt, 1, y_int));
  r = spv_val(b, SpvOpSelect, f, 3, bad, nan_const(e, XC_F32), r);
  /* 0^y: 0 for y > 0, inf for y < 0 (sign kept for odd y), 1 for y == 0 */
  uint32_t zero = spv_val(b, SpvOpFOrdEqual, bt, 2, a, spv_cf32(e, 0.0f));
  uint32_t zr = spv_val(b, SpvOpSelect, f, 3, spv_val(b, SpvOpFOrdGreaterThan, bt, 2, y, spv_cf32(e, 0.0f)),
                        spv_cf32(e, 0.0f), spv_cf32(e, INFINITY));
  zr = spv_val(b, SpvOpSelect, f, 3, y_odd, spv_val(b, SpvOpFMul, f, 2, zr, spv_ext(e, GLSLstd450FSign, f, 1, a, 0, 0)), zr);
  r = spv_val(b, SpvOpSelect, f, 3, zero, zr, r);
  uint32_t y0 = spv_val(b, SpvOpFOrdEqual, bt, 2, y, spv_cf32(e, 0.0f));
  uint32_t a1 = spv_val(b, SpvOpFOrdEqual, bt, 2, a, spv_cf32(e, 1.0f));
  return spv_val(b, SpvOpSelect, f, 3, spv_val(b, SpvOpLogicalOr, bt, 2, y0, a1), spv_cf32(e, 1.0f), r);
}

/* Values of 8/16-bit dtypes computed in 32 bits, wrapped as a C conversion. */
static uint32_t wrap_small(spv_emitter_t* e, xc_dtype_t t, uint32_t x) {
  spv_builder_t* b = &e->b;
  switch (t) {
    case XC_I8:
    case XC_I16: {
      uint32_t sh = spv_ci32(e, t == XC_I8 ? 24 : 16);
      return spv_val(b, SpvOpShiftRightArithmetic, e->t_i32, 2, spv_val(b, SpvOpShiftLeftLogical, e->t_i32, 2, x, sh),
                     sh);
    }
    case XC_U8: return spv_val(b, SpvOpBitwiseAnd, e->t_u32, 2, x, spv_cu32(e, 0xffu));
    case XC_U16: return spv_val(b, SpvOpBitwiseAnd, e->t_u32, 2, x, spv_cu32(e, 0xffffu));
    default: return x;
  }
}

uint32_t spv_unary(spv_emitter_t* e, xc_tiled_opcode_t op, xc_dtype_t t, uint32_t x) {
  spv_builder_t* b = &e->b;
  uint32_t ty = spv_ctype(e, t);
  if (t == XC_BOOL) {
    if (op == XC_TOP_NOT) return spv_val(b, SpvOpLogicalNot, ty, 1, x);
    spv_fail(e, XC_UNSUPPORTED, "%s on bool", spv_op_name(op));
    return x;
  }
  if (!is_float(t)) {
    switch (op) {
      case XC_TOP_NEG: return spv_val(b, SpvOpSNegate, ty, 1, x);
      case XC_TOP_ABS: return is_signed_int(t) ? spv_ext(e, GLSLstd450SAbs, ty, 1, x, 0, 0) : x;
      case XC_TOP_NOT: return wrap_small(e, t, spv_val(b, SpvOpNot, ty, 1, x));
      default: spv_fail(e, XC_UNSUPPORTED, "%s on integers", spv_op_name(op)); return x;
    }
  }
  switch (op) {
    case XC_TOP_NEG: return spv_val(b, SpvOpFNegate, ty, 1, x);
    case XC_TOP_ABS: return spv_ext(e, GLSLstd450FAbs, ty, 1, x, 0, 0);
    case XC_TOP_SQRT: return spv_ext(e, GLSLstd450Sqrt, ty, 1, x, 0, 0);
    case XC_TOP_RSQRT: return spv_ext(e, GLSLstd450InverseSqrt, ty, 1, x, 0, 0);
    case XC_TOP_FLOOR: return spv_ext(e, GLSLstd450Floor, ty, 1, x, 0, 0);
    case XC_TOP_CEIL: return spv_ext(e, GLSLstd450Ceil, ty, 1, x, 0, 0);
    case XC_TOP_RECIP: return spv_val(b, SpvOpFDiv, ty, 2, fconst(e, t, 1.0), x);
    default: break;
  }
  if (f64_transcendental(e, t, spv_op_name(op))) return x;
  switch (op) {
    case XC_TOP_EXP: return spv_ext(e, GLSLstd450Exp, ty, 1, x, 0, 0);
    case XC_TOP_LOG: return spv_ext(e, GLSLstd450Log, ty, 1, x, 0, 0);
    case XC_TOP_SIN: return spv_ext(e, GLSLstd450Sin, ty, 1, x, 0, 0);
    case XC_TOP_COS: return spv_ext(e, GLSLstd450Cos, ty, 1, x, 0, 0);
    case XC_TOP_ATAN: return spv_ext(e, GLSLstd450Atan, ty, 1, x, 0, 0);
    case XC_TOP_ERF: return erf_f32(e, x);
    case XC_TOP_TANH: {
      /* tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)): exact at the tails, no inf/inf */
      uint32_t ax = spv_ext(e, GLSLstd450FAbs, ty, 1, x, 0, 0);
      uint32_t ex = spv_ext(e, GLSLstd450Exp, ty, 1, spv_val(b, SpvOpFMul, ty, 2, ax, spv_cf32(e, 2.0f)), 0, 0);
      uint32_t r = spv_val(b, SpvOpFSub, ty, 2, spv_cf32(e, 1.0f),
                           spv_val(b, SpvOpFDiv, ty, 2, spv_cf32(e, 2.0f),
                                   spv_val(b, SpvOpFAdd, ty, 2, ex, spv_cf32(e, 1.0f))));
      /* small |x|: the library tanh keeps relative accuracy */
      uint32_t small = spv_val(b, SpvOpFOrdLessThan, e->t_bool, 2, ax, spv_cf32(e, 0.125f));
      uint32_t sr = spv_val(b, SpvOpFMul, ty, 2, r, spv_ext(e, GLSLstd450FSign, ty, 1, x, 0, 0));
      return spv_val(b, SpvOpSelect, ty, 3, small, spv_ext(e, GLSLstd450Tanh, ty, 1, x, 0, 0), sr);
    }
    case XC_TOP_SIGMOID: {
      uint32_t ax = spv_ext(e, GLSLstd450FAbs, ty, 1, x, 0, 0);
      uint32_t ex = spv_ext(e, GLSLstd450Exp, ty, 1, spv_val(b, SpvOpFNegate, ty, 1, ax), 0, 0);
      uint32_t den = spv_val(b, SpvOpFAdd, ty, 2, ex, spv_cf32(e, 1.0f));
      uint32_t pos = spv_val(b, SpvOpFDiv, ty, 2, spv_cf32(e, 1.0f), den);
      uint32_t neg = spv_val(b, SpvOpFDiv, ty, 2, ex, den);
      uint32_t ge = spv_val(b, SpvOpFOrdGreaterThanEqual, e->t_bool, 2, x, spv_cf32(e, 0.0f));
      return spv_val(b, SpvOpSelect, ty, 3, ge, pos, neg);
    }
    default: spv_fail(e, XC_UNSUPPORTED, "unary %s", spv_op_name(op)); return x;
  }
}

static uint32_t cmp64(spv_emitter_t* e, xc_tiled_cmp_t cmp, bool is_signed, uint32_t a, uint32_t c);

/* max/min of floats: NaN when either operand is NaN. */
static uint32_t fminmax(spv_emitter_t* e, bool max, uint32_t ty, uint32_t a, uint32_t b) {
  spv_builder_t* bl = &e->b;
  uint32_t c = spv_val(bl, max ? SpvOpFOrdGreaterThan : SpvOpFOrdLessThan, e->t_bool, 2, a, b);
  uint32_t r = spv_val(bl, SpvOpSelect, ty, 3, c, a, b);
  return spv_val(bl, SpvOpSelect, ty, 3, spv_val(bl, SpvOpIsNan, e->t_bool, 1, a), a, r);
}

uint32_t spv_binary(spv_emitter_t* e, xc_tiled_opcode_t op, xc_dtype_t t, uint32_t a, uint32_t c) {
  spv_builder_t* b = &e->b;
  uint32_t ty = spv_ctype(e, t);
  if (t == XC_BOOL) {
    switch (op) {
      case XC_TOP_AND:
      case XC_TOP_MIN:
      case XC_TOP_MUL: return spv_val(b, SpvOpLogicalAnd, ty, 2, a, c);
      case XC_TOP_OR:
      case XC_TOP_MAX: return spv_val(b, SpvOpLogicalOr, ty, 2, a, c);
      case XC_TOP_XOR: return spv_val(b, SpvOpLogicalNotEqual, ty, 2, a, c);
      default: spv_fail(e, XC_UNSUPPORTED, "%s on bool", spv_op_name(op)); return a;
    }
  }
  if (is_float(t)) {
    switch (op) {
      case XC_TOP_ADD: return spv_val(b, SpvOpFAdd, ty, 2, a, c);
      case XC_TOP_SUB: return spv_val(b, SpvOpFSub, ty, 2, a, c);
      case XC_TOP_MUL: return spv_val(b, SpvOpFMul, ty, 2, a, c);
      case XC_TOP_DIV: return spv_val(b, SpvOpFDiv, ty, 2, a, c);
      case XC_TOP_REM: {
        /* fmod takes the dividend's sign; NVIDIA's driver (580) gives OpFRem
         * the divisor's (a - b floor(a / b)): a result whose sign differs
         * from a's is that one, and r - b is fmod's. */
        uint32_t r = spv_val(b, SpvOpFRem, ty, 2, a, c);
        uint32_t zero = fconst(e, t, 0);
        uint32_t differs = spv_val(b, SpvOpLogicalNotEqual, e->t_bool, 2,
                                   spv_val(b, SpvOpFOrdLessThan, e->t_bool, 2, r, zero),
                                   spv_val(b, SpvOpFOrdLessThan, e->t_bool, 2, a, zero));
        uint32_t fix = spv_val(b, SpvOpLogicalAnd, e->t_bool, 2, differs,
                               spv_val(b, SpvOpFOrdNotEqual, e->t_bool, 2, r, zero));
        return spv_val(b, SpvOpSelect, ty, 3, fix, spv_val(b, SpvOpFSub, ty, 2, r, c), r);
      }
      case XC_TOP_MAX: return fminmax(e, true, ty, a, c);
      case XC_TOP_MIN: return fminmax(e, false, ty, a, c);
      case XC_TOP_POW:
        if (f64_transcendental(e, t, "pow")) return a;
        return pow_f32(e, a, c);
      default: spv_fail(e, XC_UNSUPPORTED, "%s on floats", spv_op_name(op)); return a;
    }
  }
  bool s = is_signed_int(t);
  switch (op) {
    case XC_TOP_ADD: return spv_val(b, SpvOpIAdd, ty, 2, a, c);
    case XC_TOP_SUB: return spv_val(b, SpvOpISub, ty, 2, a, c);
    case XC_TOP_MUL: return spv_val(b, SpvOpIMul, ty, 2, a, c);
    case XC_TOP_DIV: return spv_val(b, s ? SpvOpSDiv : SpvOpUDiv, ty, 2, a, c);
    case XC_TOP_REM:
      if (s || is_64(t)) { /* NVIDIA's Vulkan driver (580) gets OpSRem wrong (negative operands, 64 bits);
                            * a - (a / b) * b, with C's truncating division, is right */
        uint32_t q = spv_val(b, s ? SpvOpSDiv : SpvOpUDiv, ty, 2, a, c);
        return spv_val(b, SpvOpISub, ty, 2, a, spv_val(b, SpvOpIMul, ty, 2, q, c));
      }
      return spv_val(b, s ? SpvOpSRem : SpvOpUMod, ty, 2, a, c);
    case XC_TOP_MAX:
    case XC_TOP_MIN:
      if (is_64(t)) /* through the 64-bit comparison above */
        return spv_val(b, SpvOpSelect, ty, 3, cmp64(e, op == XC_TOP_MAX ? XC_CMP_GT : XC_CMP_LT, s, a, c), a, c);
      return spv_ext(e, op == XC_TOP_MAX ? (s ? GLSLstd450SMax : GLSLstd450UMax) : (s ? GLSLstd450SMin : GLSLstd450UMin),
                     ty, 2, a, c, 0);
    case XC_TOP_AND: return spv_val(b, SpvOpBitwiseAnd, ty, 2, a, c);
    case XC_TOP_OR: return spv_val(b, SpvOpBitwiseOr, ty, 2, a, c);
    case XC_TOP_XOR: return spv_val(b, SpvOpBitwiseXor, ty, 2, a, c);
    case XC_TOP_SHL: return wrap_small(e, t, spv_val(b, SpvOpShiftLeftLogical, ty, 2, a, c));
    case XC_TOP_SHR: return spv_val(b, s ? SpvOpShiftRightArithmetic : SpvOpShiftRightLogical, ty, 2, a, c);
    default: spv_fail(e, XC_UNSUPPORTED, "%s on integers", spv_op_name(op)); return a;
  }
}

/* 64-bit integer comparisons go through 32-bit halves: llvmpipe (Mesa 22,
 * LLVM 15) gets varying 64-bit compares wrong, and the halves cost little
 * elsewhere. */
static uint32_t cmp64(spv_emitter_t* e, xc_tiled_cmp_t cmp, bool is_signed, uint32_t a, uint32_t c) {
  spv_builder_t* b = &e->b;
  uint32_t bt = e->t_bool, u = e->t_u32;
  if (cmp == XC_CMP_GT || cmp == XC_CMP_GE) {
    uint32_t t = a;
    a = c;
    c = t;
    cmp = cmp == XC_CMP_GT ? XC_CMP_LT : XC_CMP_LE;
  }
  uint32_t ty = is_signed ? e->t_i64 : spv_ctype(e, XC_U64);
  uint32_t sh = spv_const(b, ty, 2, 32u, 0u);
  uint32_t alo = spv_val(b, SpvOpUConvert, u, 1, a), clo = spv_val(b, SpvOpUConvert, u, 1, c);
  uint32_t ahi = spv_val(b, SpvOpUConvert, u, 1, spv_val(b, SpvOpShiftRightLogical, ty, 2, a, sh));
  uint32_t chi = spv_val(b, SpvOpUConvert, u, 1, spv_val(b, SpvOpShiftRightLogical, ty, 2, c, sh));
  uint32_t hi_eq = spv_val(b, SpvOpIEqual, bt, 2, ahi, chi);
  if (cmp == XC_CMP_EQ || cmp == XC_CMP_NE) {
    uint32_t eq = spv_val(b, SpvOpLogicalAnd, bt, 2, hi_eq, spv_val(b, SpvOpIEqual, bt, 2, alo, clo));
    return cmp == XC_CMP_EQ ? eq : spv_val(b, SpvOpLogicalNot, bt, 1, eq);
  }
  uint32_t hi_lt = is_signed ? spv_val(b, SpvOpSLessThan, bt, 2, spv_val(b, SpvOpBitcast, e->t_i32, 1, ahi),
                                       spv_val(b, SpvOpBitcast, e->t_i32, 1, chi))
                             : spv_val(b, SpvOpULessThan, bt, 2, ahi, chi);
  uint32_t lo_cmp = spv_val(b, cmp == XC_CMP_LT ? SpvOpULessThan : SpvOpULessThanEqual, bt, 2, alo, clo);
  return spv_val(b, SpvOpLogicalOr, bt, 2, hi_lt, spv_val(b, SpvOpLogicalAnd, bt, 2, hi_eq, lo_cmp));
}

uint32_t spv_lt_i64(spv_emitter_t* e, uint32_t a, uint32_t c) { return cmp64(e, XC_CMP_LT, true, a, c); }

uint32_t spv_compare(spv_emitter_t* e, xc_tiled_cmp_t cmp, xc_dtype_t t, uint32_t a, uint32_t c) {
  static const SpvOp fops[] = {SpvOpFOrdEqual, SpvOpFUnordNotEqual, SpvOpFOrdLessThan, SpvOpFOrdLessThanEqual,
                               SpvOpFOrdGreaterThan, SpvOpFOrdGreaterThanEqual};
  static const SpvOp sops[] = {SpvOpIEqual, SpvOpINotEqual, SpvOpSLessThan, SpvOpSLessThanEqual,
                               SpvOpSGreaterThan, SpvOpSGreaterThanEqual};
  static const SpvOp uops[] = {SpvOpIEqual, SpvOpINotEqual, SpvOpULessThan, SpvOpULessThanEqual,
                               SpvOpUGreaterThan, SpvOpUGreaterThanEqual};
  if ((unsigned)cmp > XC_CMP_GE) cmp = XC_CMP_EQ;
  if (t == XC_BOOL) {
    if (cmp == XC_CMP_EQ) return spv_val(&e->b, SpvOpLogicalEqual, e->t_bool, 2, a, c);
    if (cmp == XC_CMP_NE) return spv_val(&e->b, SpvOpLogicalNotEqual, e->t_bool, 2, a, c);
    /* ordered comparisons of bools: as 0/1 */
    a = spv_val(&e->b, SpvOpSelect, e->t_u32, 3, a, spv_cu32(e, 1), spv_cu32(e, 0));
    c = spv_val(&e->b, SpvOpSelect, e->t_u32, 3, c, spv_cu32(e, 1), spv_cu32(e, 0));
    return spv_val(&e->b, uops[cmp], e->t_bool, 2, a, c);
  }
  if (t == XC_I64 || t == XC_U64) return cmp64(e, cmp, t == XC_I64, a, c);
  const SpvOp* ops = is_float(t) ? fops : is_signed_int(t) ? sops : uops;
  return spv_val(&e->b, ops[cmp], e->t_bool, 2, a, c);
}

uint32_t spv_reduce_combine(spv_emitter_t* e, xc_tiled_reduce_kind_t kind, xc_dtype_t t, uint32_t acc, uint32_t v) {
  static const xc_tiled_opcode_t ops[] = {[XC_REDUCE_SUM] = XC_TOP_ADD, [XC_REDUCE_MAX] = XC_TOP_MAX,
                                          [XC_REDUCE_MIN] = XC_TOP_MIN, [XC_REDUCE_PROD] = XC_TOP_MUL};
  if ((unsigned)kind > XC_REDUCE_PROD) kind = XC_REDUCE_SUM;
  if (t == XC_BOOL && kind == XC_REDUCE_SUM) return spv_val(&e->b, SpvOpLogicalOr, e->t_bool, 2, acc, v);
  return spv_binary(e, ops[kind], t, acc, v);
}

/* f32 -> bf16 bits (round to nearest even, NaN kept quiet) in a u32. */
static uint32_t bf16_bits(spv_emitter_t* e, uint32_t x) {
  spv_builder_t* b = &e->b;
  uint32_t u = spv_val(b, SpvOpBitcast, e->t_u32, 1, x);
  uint32_t lsb = spv_val(b, SpvOpBitwiseAnd, e->t_u32, 2,
                         spv_val(b, SpvOpShiftRightLogical, e->t_u32, 2, u, spv_cu32(e, 16)), spv_cu32(e, 1));
  uint32_t r = spv_val(b, SpvOpIAdd, e->t_u32, 2, u, spv_val(b, SpvOpIAdd, e->t_u32, 2, lsb, spv_cu32(e, 0x7fff)));
  r = spv_val(b, SpvOpShiftRightLogical, e->t_u32, 2, r, spv_cu32(e, 16));
  uint32_t nan = spv_val(b, SpvOpIsNan, e->t_bool, 1, x);
  return spv_val(b, SpvOpSelect, e->t_u32, 3, nan, spv_cu32(e, 0x7fc0), r);
}

static uint32_t round_to(spv_emitter_t* e, xc_dtype_t t, uint32_t x) {
  spv_builder_t* b = &e->b;
  if (t == XC_F16) {
    uint32_t h = spv_val(b, SpvOpFConvert, spv_stype(e, XC_F16), 1, x);
    return spv_val(b, SpvOpFConvert, e->t_f32, 1, h);
  }
  if (t == XC_BF16) {
    uint32_t bits = spv_val(b, SpvOpShiftLeftLogical, e->t_u32, 2, bf16_bits(e, x), spv_cu32(e, 16));
    return spv_val(b, SpvOpBitcast, e->t_f32, 1, bits);
  }
  return x;
}

uint32_t spv_int_to(spv_emitter_t* e, uint32_t x, xc_dtype_t from, uint32_t to_type, bool to64, bool to_signed) {
  spv_builder_t* b = &e->b;
  bool from64 = is_64(from), fs = is_signed_int(from);
  if (from64 != to64) {
    uint32_t mid = to64 ? (fs ? e->t_i64 : spv_ctype(e, XC_U64)) : (fs ? e->t_i32 : e->t_u32);
    x = spv_val(b, fs ? SpvOpSConvert : SpvOpUConvert, mid, 1, x);
    if (fs == to_signed) return x;
    return spv_val(b, SpvOpBitcast, to_type, 1, x);
  }
  if (fs == to_signed) return x;
  return spv_val(b, SpvOpBitcast, to_type, 1, x);
}

/* Saturating float -> integer of dtype `to` (NaN -> 0), computed type out. */
static uint32_t float_to_int(spv_emitter_t* e, xc_dtype_t from, xc_dtype_t to, uint32_t x) {
  spv_builder_t* b = &e->b;
  uint32_t fty = spv_ctype(e, from), ty = spv_ctype(e, to);
  double lo, hi;
  switch (to) {
    case XC_I8: lo = -128, hi = 127; break;
    case XC_I16: lo = -32768, hi = 32767; break;
    case XC_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case XC_U8: lo = 0, hi = 255; break;
    case XC_U16: lo = 0, hi = 65535; break;
    case XC_U32: lo = 0, hi = 4294967295.0; break;
    case XC_U64: lo = 0, hi = 18446744073709551615.0; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
  }
  bool s = is_signed_int(to);
  /* Clamp below the first value that does not convert, then fix the top. */
  uint32_t clo = fconst(e, from, lo);
  /* the largest value of `from` below hi that converts exactly */
  double hi_safe = hi;
  if (from == XC_F64) {
    if (to == XC_I64) hi_safe = 9223372036854774784.0;
    if (to == XC_U64) hi_safe = 18446744073709549568.0;
  } else if (hi > 16777216.0) {
    hi_safe = to == XC_I32 ? 2147483520.0 : to == XC_U32 ? 4294967040.0
              : to == XC_U64 ? 18446742974197923840.0 : 9223371487098961920.0;
  }
  uint32_t cl = spv_ext(e, GLSLstd450FMax, fty, 2, x, clo, 0);
  cl = spv_ext(e, GLSLstd450FMin, fty, 2, cl, fconst(e, from, hi_safe), 0);
  uint32_t r = spv_val(b, s ? SpvOpConvertFToS : SpvOpConvertFToU, ty, 1, cl);
  uint32_t top = spv_val(b, SpvOpFOrdGreaterThanEqual, e->t_bool, 2, x, fconst(e, from, hi));
  r = spv_val(b, SpvOpSelect, ty, 3, top, spv_const_of(e, to, 0, (int64_t)(to == XC_U64 ? -1 : (int64_t)hi)), r);
  if (to == XC_I64) r = spv_val(b, SpvOpSelect, ty, 3, top, spv_ci64(e, INT64_MAX), r);
  uint32_t nan = spv_val(b, SpvOpIsNan, e->t_bool, 1, x);
  return spv_val(b, SpvOpSelect, ty, 3, nan, spv_const_of(e, to, 0, 0), r);
}

uint32_t spv_cast(spv_emitter_t* e, xc_dtype_t from, xc_dtype_t to, uint32_t x) {
  spv_builder_t* b = &e->b;
  if (from == to) return x;
  uint32_t ty = spv_ctype(e, to);
  if (to == XC_BOOL) {
    if (is_float(from)) return spv_val(b, SpvOpFOrdNotEqual, ty, 2, x, fconst(e, from, 0));
    return spv_val(b, SpvOpINotEqual, ty, 2, x, spv_const_of(e, from, 0, 0));
  }
  if (from == XC_BOOL) {
    uint32_t one = spv_const_of(e, to, 1, 1), zero = spv_const_of(e, to, 0, 0);
    return spv_val(b, SpvOpSelect, ty, 3, x, one, zero);
  }
  if (is_float(from) && is_float(to)) {
    uint32_t fty = spv_ctype(e, from);
    if (fty != ty) x = spv_val(b, SpvOpFConvert, ty, 1, x);
    return round_to(e, to, x);
  }
  if (is_float(to)) {
    uint32_t r = spv_val(b, is_signed_int(from) ? SpvOpConvertSToF : SpvOpConvertUToF, ty, 1, x);
    return round_to(e, to, r);
  }
  if (is_float(from)) {
    return wrap_small(e, to, float_to_int(e, from, to, x));
  }
  return wrap_small(e, to, spv_int_to(e, x, from, ty, is_64(to), is_signed_int(to)));
}

uint32_t spv_from_storage(spv_emitter_t* e, xc_dtype_t t, uint32_t x) {
  spv_builder_t* b = &e->b;
  switch (t) {
    case XC_F16: return spv_val(b, SpvOpFConvert, e->t_f32, 1, x);
    case XC_BF16: {
      uint32_t u = spv_val(b, SpvOpUConvert, e->t_u32, 1, x);
      u = spv_val(b, SpvOpShiftLeftLogical, e->t_u32, 2, u, spv_cu32(e, 16));
      return spv_val(b, SpvOpBitcast, e->t_f32, 1, u);
    }
    case XC_I8:
    case XC_I16: return spv_val(b, SpvOpSConvert, e->t_i32, 1, x);
    case XC_U8:
    case XC_U16: return spv_val(b, SpvOpUConvert, e->t_u32, 1, x);
    case XC_BOOL:
      return spv_val(b, SpvOpINotEqual, e->t_bool, 2, spv_val(b, SpvOpUConvert, e->t_u32, 1, x), spv_cu32(e, 0));
    default: return x;
  }
}

uint32_t spv_to_storage(spv_emitter_t* e, xc_dtype_t t, uint32_t x) {
  spv_builder_t* b = &e->b;
  uint32_t st = spv_stype(e, t);
  switch (t) {
    case XC_F16: return spv_val(b, SpvOpFConvert, st, 1, x);
    case XC_BF16: return spv_val(b, SpvOpUConvert, st, 1, bf16_bits(e, x));
    case XC_I8:
    case XC_I16: return spv_val(b, SpvOpSConvert, st, 1, x);
    case XC_U8:
    case XC_U16: return spv_val(b, SpvOpUConvert, st, 1, x);
    case XC_BOOL:
      return spv_val(b, SpvOpUConvert, st, 1, spv_val(b, SpvOpSelect, e->t_u32, 3, x, spv_cu32(e, 1), spv_cu32(e, 0)));
    default: return x;
  }
}
