/* QuantizeLinear / DequantizeLinear lowering: a flat space over x; the scale
 * (and zero point) index of each element follows the per-tensor, per-axis
 * or blocked layout. Quantize divides, rounds half to even, adds the zero
 * point and saturates into the integer output (fp8 outputs are not
 * lowered); Dequantize computes (x - zero point) * scale. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

bool lw_is_quant(const xc_node_t* n) {
  return (!n->domain || !n->domain[0]) &&
         (!strcmp(n->op_type, "QuantizeLinear") || !strcmp(n->op_type, "DequantizeLinear"));
}

static const int64_t blk_c[] = {64, 128, 256, 512};

xc_status_t lw_emit_quant(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *S = n->inputs[1], *Y = n->outputs[0];
  const xc_value_t* Z = n->num_inputs > 2 ? n->inputs[2] : NULL;
  bool quant = n->op_type[0] == 'Q';
  int64_t block = xc_node_attr_int(n, "block_size");
  if (X->rank > LW_MAX_RANK) return lw_unsupported(c, n, "rank %d", X->rank);
  double lo = 0, hi = 0;
  if (quant) {
    switch (Y->dtype) {
      case XC_I8: lo = -128, hi = 127; break;
      case XC_U8: lo = 0, hi = 255; break;
      case XC_I16: lo = -32768, hi = 32767; break;
      case XC_U16: lo = 0, hi = 65535; break;
      default: return lw_unsupported(c, n, "quantize to %s", xc_dtype_name(Y->dtype));
    }
    if (xc_node_attr_int(n, "precision") != 0) return lw_unsupported(c, n, "precision attribute");
  }
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 256);
  lw_val_t* start = lw_iter_begin(c, 0, lw_dim(c, lw_numel(c, X->rank, X->dims)), kb, 0);
  lw_space_t sp;
  lw_flat_space(c, X->rank, X->dims, start, kb, &sp, NULL);
  /* scale index */
  lw_val_t* si = lw_i64(c, 0);
  bool per_tensor = S->rank == 0 || (S->rank == 1 && xc_dim_is_static(S->dims[0]) && S->dims[0].value == 1 &&
                                     block == 0);
  if (!per_tensor) {
    int64_t axis = xc_node_attr_int(n, "axis");
    if (axis < 0) axis += X->rank;
    if (axis < 0 || axis >= X->rank) return lw_unsupported(c, n, "bad axis");
    if (block == 0) {
      si = sp.idx[axis];
    } else {
      if (S->rank != X->rank) return lw_unsupported(c, n, "blocked scale rank");
      lw_space_t ss = sp;
      ss.idx[axis] = lw_div(c, sp.idx[axis], lw_i64(c, block));
      si = lw_offset(c, &ss, S);
    }
  }
  xc_dtype_t F = XC_F64;
  lw_val_t* s = lw_cast_to(c, xc_tiled_load(k, lw_buf(c, S), si, sp.mask, NULL), F);
  lw_val_t* z = Z ? lw_cast_to(c, xc_tiled_load(k, lw_buf(c, Z), si, sp.mask, NULL), F) : lw_fconst(c, F, 0);
  lw_val_t* x = lw_cast_to(c, lw_load_at(c, &sp, X), F);
  lw_val_t* y;
  if (quant) {
    /* the division at the scale's precision, then half-to-even rounding */
    lw_val_t* q = lw_cast_to(c, lw_cast_to(c, lw_div(c, x, s), S->dtype), F);
    lw_val_t* r = xc_tiled_unary(k, XC_TOP_FLOOR, lw_add(c, q, lw_fconst(c, F, 0.5)));
    lw_val_t* tie = xc_tiled_cmp(k, XC_CMP_EQ, lw_sub(c, r, q), lw_fconst(c, F, 0.5));
    lw_val_t* odd = xc_tiled_cmp(k, XC_CMP_NE, xc_tiled_binary(k, XC_TOP_REM, r, lw_fconst(c, F, 2)), lw_fconst(c, F, 0));
    r = xc_tiled_select(k, lw_and(c, tie, odd), lw_sub(c, r, lw_fconst(c, F, 1)), r);
    y = lw_add(c, r, z);
    y = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_NE, y, y), lw_fconst(c, F, 0), y);
    y = xc_tiled_binary(k, XC_TOP_MAX, lw_fconst(c, F, lo), xc_tiled_binary(k, XC_TOP_MIN, y, lw_fconst(c, F, hi)));
  } else {
    y = lw_mul(c, lw_sub(c, x, z), s);
  }
  XC_RETURN_IF_ERROR(lw_epilogue(c, &sp, y));
  lw_iter_end(c, start);
  return NULL;
}

/* Half to even on f64: floor(q + 0.5), minus one on an exact tie with an odd
 * result. */
static lw_val_t* round_half_even(lw_ctx_t* c, lw_val_t* q) {
  xc_tiled_kernel_t* k = c->k;
  xc_dtype_t F = XC_F64;
  lw_val_t* r = xc_tiled_unary(k, XC_TOP_FLOOR, lw_add(c, q, lw_fconst(c, F, 0.5)));
  lw_val_t* tie = xc_tiled_cmp(k, XC_CMP_EQ, lw_sub(c, r, q), lw_fconst(c, F, 0.5));
  lw_val_t* odd = xc_tiled_cmp(k, XC_CMP_NE, xc_tiled_binary(k, XC_TOP_REM, r, lw_fconst(c, F, 2)), lw_fconst(c, F, 0));
  return xc_tiled_select(k, lw_and(c, tie, odd), lw_sub(c, r, lw_fconst(c, F, 1)), r);
}

/* DynamicQuantizeLinear: one program. A loop over x carries [BLOCK] minimum
 * and maximum tiles (starting at 0, NaN ignored like the reference); the
 * scale ((max - min) / 255, 1/255 for a constant x) and the zero point
 * (round(-min / scale) clamped to [0, 255]) follow in f32 as ONNX defines
 * them; a second loop stores round(x / scale) + zero point, saturated. */
xc_status_t lw_emit_dynamic_quant(lw_ctx_t* c, const xc_node_t* n) {
  xc_tiled_kernel_t* k = c->k;
  const xc_value_t *X = n->inputs[0], *Y = n->outputs[0];
  const xc_value_t* S = n->num_outputs > 1 ? n->outputs[1] : NULL;
  const xc_value_t* Z = n->num_outputs > 2 ? n->outputs[2] : NULL;
  if (X->dtype != XC_F32 || X->rank > LW_MAX_RANK || !Y) return lw_unsupported(c, n, "input");
  if (c->phase->num_nodes > 1) return lw_unsupported(c, n, "fused consumers");
  xc_dtype_t f = XC_F32, F = XC_F64;
  int kb = lw_knob(c, "BLOCK", 4, blk_c, 256);
  lw_dimv_t numel = lw_dim(c, lw_numel(c, X->rank, X->dims));
  xc_tiled_dim_t bd = xc_tiled_dim_knob(kb);
  lw_val_t* init[2] = {xc_tiled_const_f(k, f, 0, 1, &bd), xc_tiled_const_f(k, f, 0, 1, &bd)};
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, lw_i64(c, 0), numel.v, xc_tiled_knob_value(k, kb), 2, init);
  lw_space_t sp;
  lw_flat_space(c, X->rank, X->dims, xc_tiled_for_iv(loop), kb, &sp, NULL);
  {
    lw_val_t* x = xc_tiled_select(k, sp.mask, lw_load_at(c, &sp, X), lw_fconst(c, f, 0));
    lw_val_t* lo = xc_tiled_for_arg(loop, 0), *hi = xc_tiled_for_arg(loop, 1);
    lw_val_t* next[2] = {xc_tiled_select(k, lw_lt(c, x, lo), x, lo), xc_tiled_select(k, lw_lt(c, hi, x), x, hi)};
    xc_tiled_for_end(k, loop, 2, next);
  }
  lw_val_t* lo = xc_tiled_reduce(k, XC_REDUCE_MIN, xc_tiled_for_result(loop, 0), 0);
  lw_val_t* hi = xc_tiled_reduce(k, XC_REDUCE_MAX, xc_tiled_for_result(loop, 1), 0);
  lw_val_t* range = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_EQ, hi, lo), lw_fconst(c, f, 1), lw_sub(c, hi, lo));
  /* f32 division rounded as f32 (an f64 quotient of f32 values, cast) */
#define DIV32(a, b) lw_cast_to(c, lw_div(c, lw_cast_to(c, (a), F), lw_cast_to(c, (b), F)), f)
  lw_val_t* scale = DIV32(range, lw_fconst(c, f, 255));
  lw_val_t* zpf = lw_sub(c, lw_fconst(c, f, 0), DIV32(lo, scale));
  zpf = xc_tiled_binary(k, XC_TOP_MAX, lw_fconst(c, f, 0), xc_tiled_binary(k, XC_TOP_MIN, zpf, lw_fconst(c, f, 255)));
  lw_val_t* zp = round_half_even(c, lw_cast_to(c, zpf, F));
  if (S) xc_tiled_store(k, lw_buf(c, S), lw_i64(c, 0), scale, NULL);
  if (Z) xc_tiled_store(k, lw_buf(c, Z), lw_i64(c, 0), lw_cast_to(c, zp, XC_U8), NULL);
  loop = xc_tiled_for_begin(k, lw_i64(c, 0), numel.v, xc_tiled_knob_value(k, kb), 0, NULL);
  lw_flat_space(c, X->rank, X->dims, xc_tiled_for_iv(loop), kb, &sp, NULL);
  {
    lw_val_t* q = lw_cast_to(c, DIV32(lw_load_at(c, &sp, X), scale), F);
#undef DIV32
    lw_val_t* v = lw_add(c, round_half_even(c, q), zp);
    v = xc_tiled_select(k, xc_tiled_cmp(k, XC_CMP_NE, v, v), lw_fconst(c, F, 0), v);
    v = xc_tiled_binary(k, XC_TOP_MAX, lw_fconst(c, F, 0), xc_tiled_binary(k, XC_TOP_MIN, v, lw_fconst(c, F, 255)));
    lw_store_at(c, &sp, Y, lw_cast_to(c, v, XC_U8));
    xc_tiled_for_end(k, loop, 0, NULL);
  }
  return NULL;
}
