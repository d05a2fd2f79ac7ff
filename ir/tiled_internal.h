/* Private helpers shared by the tiled-IR builder, verifier, printer and
 * interpreter (not part of the public API). */
#ifndef XCOMP_IR_TILED_INTERNAL_H
#define XCOMP_IR_TILED_INTERNAL_H

#include "xcomp/tiled.h"

/* The typing rule of one op with a single result (or none): computes the
 * result type from the operand types and attributes. For CONST, CAST, ALLOC
 * and BROADCAST the requested dtype/shape is read from `declared` (the type
 * the builder was asked for, or the stored result type when verifying).
 * Errors describe the problem without naming the op; callers annotate. */
xc_status_t xc_tiled_infer(const xc_tiled_kernel_t* k, const xc_tiled_op_t* op,
                           const xc_tiled_type_t* declared, xc_tiled_type_t* out);

bool xc_tiled_type_equal(const xc_tiled_type_t* a, const xc_tiled_type_t* b);
bool xc_tiled_dim_equal(xc_tiled_dim_t a, xc_tiled_dim_t b);
/* "f32[BLOCK_M,64]", "i64", "memref<global f32 in>" into buf. */
const char* xc_tiled_type_str(const xc_tiled_kernel_t* k, const xc_tiled_type_t* t,
                              char* buf, size_t n);
/* "op 12 (dot)" into buf. */
const char* xc_tiled_op_str(const xc_tiled_op_t* op, char* buf, size_t n);
void xc_texpr_fprint(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e, FILE* f);
/* malloc'ed text of an expression; NULL on OOM. */
char* xc_texpr_to_string(const xc_tiled_kernel_t* k, const xc_tiled_expr_t* e);
const char* xc_tiled_scope_name(xc_tiled_scope_t s);
const char* xc_tiled_role_name(xc_tiled_role_t r);
const char* xc_tiled_cmp_name(int c);
const char* xc_tiled_reduce_name(int r);

/* Classes of opcodes. */
bool xc_tiled_is_unary(xc_tiled_opcode_t op);
bool xc_tiled_is_binary(xc_tiled_opcode_t op);

#endif
