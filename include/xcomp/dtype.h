/* xcomp element types and the exact conversions between them.
 *
 * f16 and bf16 are stored as uint16_t bit patterns; conversions to them round
 * to nearest, ties to even, and preserve NaN/Inf. fp8 types are declared so
 * that files and graphs can name them; only conversion is defined for them. */
#ifndef XCOMP_DTYPE_H
#define XCOMP_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xc_dtype {
  XC_DTYPE_UNDEFINED = 0,
  XC_F32,
  XC_F64,
  XC_F16,
  XC_BF16,
  XC_I8,
  XC_I16,
  XC_I32,
  XC_I64,
  XC_U8,
  XC_U16,
  XC_U32,
  XC_U64,
  XC_BOOL,
  XC_F8E4M3FN,
  XC_F8E5M2,
  XC_DTYPE_COUNT
} xc_dtype_t;

/* Bit masks of dtypes, for op type constraints. */
#define XC_DT(t) (1u << (t))
#define XC_DT_FLOAT (XC_DT(XC_F32) | XC_DT(XC_F64) | XC_DT(XC_F16) | XC_DT(XC_BF16))
#define XC_DT_SINT (XC_DT(XC_I8) | XC_DT(XC_I16) | XC_DT(XC_I32) | XC_DT(XC_I64))
#define XC_DT_UINT (XC_DT(XC_U8) | XC_DT(XC_U16) | XC_DT(XC_U32) | XC_DT(XC_U64))
#define XC_DT_INT (XC_DT_SINT | XC_DT_UINT)
#define XC_DT_NUMERIC (XC_DT_FLOAT | XC_DT_INT)
#define XC_DT_ALL (XC_DT_NUMERIC | XC_DT(XC_BOOL))

/* Size in bytes of one element; 0 for XC_DTYPE_UNDEFINED. */
size_t xc_dtype_size(xc_dtype_t t);
/* Short name used in .xir and messages: "f32", "bf16", "i64", "bool"... */
const char* xc_dtype_name(xc_dtype_t t);
/* Parses a short name. Returns false if unknown. */
bool xc_dtype_from_name(const char* name, xc_dtype_t* out);
bool xc_dtype_is_float(xc_dtype_t t);   /* f64 f32 f16 bf16 fp8 */
bool xc_dtype_is_int(xc_dtype_t t);     /* signed or unsigned integer (not bool) */
bool xc_dtype_is_signed(xc_dtype_t t);  /* signed integers and floats */

/* ONNX TensorProto.DataType enum <-> xc_dtype. Unknown maps to UNDEFINED. */
xc_dtype_t xc_dtype_from_onnx(int32_t onnx_type);
int32_t xc_dtype_to_onnx(xc_dtype_t t);

/* Exact half-precision conversions (round to nearest even). */
float xc_f16_to_f32(uint16_t h);
uint16_t xc_f64_to_f16(double x);
float xc_bf16_to_f32(uint16_t b);
uint16_t xc_f64_to_bf16(double x);
float xc_f8e4m3fn_to_f32(uint8_t v);
uint8_t xc_f64_to_f8e4m3fn(double x);  /* saturating, as ONNX Cast saturate=1 */
float xc_f8e5m2_to_f32(uint8_t v);
uint8_t xc_f64_to_f8e5m2(double x);

/* Rounds a double to the precision of a float dtype (identity for f64). */
double xc_round_to_dtype(xc_dtype_t t, double x);

#ifdef __cplusplus
}
#endif
#endif
