/* Private to the .xir reader and writer (ir/xir_*.c): the token stream of
 * the lexer and the rules both sides share (which names print bare, how
 * float elements are spelled). The grammar is in docs/ir.md. */
#ifndef XCOMP_IR_XIR_INTERNAL_H
#define XCOMP_IR_XIR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xcomp/dtype.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* Side files hold raw little-endian data and tensors are copied to and from
 * them byte for byte; a big-endian host would need a swap on both paths. */
#error "the .xir side-file code assumes a little-endian host"
#endif

/* Inputs longer than this are refused so that line and column numbers (int)
 * and every offset fit comfortably. */
#define XC_XIR_MAX_TEXT ((size_t)1 << 30)
/* Deepest nesting of brackets / parentheses in dims and literals. */
#define XC_XIR_MAX_DEPTH 64

typedef enum xir_tok_kind {
  XIR_TOK_EOF = 0,
  XIR_TOK_ERROR,   /* lexer error; message in lexer->error */
  XIR_TOK_IDENT,   /* [A-Za-z_][A-Za-z0-9_.]* */
  XIR_TOK_INT,     /* decimal or 0x hex digits, no sign */
  XIR_TOK_FLOAT,   /* digits with '.' and/or exponent, no sign */
  XIR_TOK_STRING,  /* "..." with escapes; decode with xc_xir_decode_string */
  XIR_TOK_PUNCT,   /* one of ( ) [ ] { } , : = @ - + * ?  or "::" */
} xir_tok_kind_t;

typedef struct xir_token {
  xir_tok_kind_t kind;
  size_t start, len; /* bytes of the token in the text */
  int line, col;     /* 1-based position of its first byte */
  char punct;        /* XIR_TOK_PUNCT: the character; ':' twice is 'D' */
  /* XIR_TOK_INT: the magnitude, or int_overflow when it exceeds 2^64-1. */
  uint64_t int_value;
  bool int_overflow;
} xir_token_t;

typedef struct xir_lexer {
  const char* text;
  size_t len, pos;
  int line, col;
  char error[160]; /* message of the last XIR_TOK_ERROR */
} xir_lexer_t;

void xc_xir_lexer_init(xir_lexer_t* lx, const char* text, size_t len);
/* Scans the next token. Never reads past len; never fails otherwise than
 * with an XIR_TOK_ERROR token. */
void xc_xir_lex(xir_lexer_t* lx, xir_token_t* out);
/* Decodes the body of a STRING token into buf (at least tok->len bytes),
 * NUL-terminated. The lexer has already validated the escapes. */
void xc_xir_decode_string(const char* text, const xir_token_t* tok, char* buf);
/* Describes a token for "expected X, got Y" messages. */
const char* xc_xir_describe_token(const xir_lexer_t* lx, const xir_token_t* tok,
                                  char* buf, size_t n);

/* True when `s` can be written without quotes: an identifier that is not
 * the placeholder "_". */
bool xc_xir_is_plain_name(const char* s);

/* Bit pattern that `nan` (or `-nan`) in a tensor literal of float dtype t
 * stores: C's NAN converted to t. Other NaN patterns print as nan(0xBITS). */
uint64_t xc_xir_nan_bits(xc_dtype_t t, bool negative);

#endif
