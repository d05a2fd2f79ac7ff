/* .xir lexer: turns text into tokens (identifiers, numbers, strings,
 * punctuation), skipping whitespace and comments. It works on a length-
 * delimited buffer that need not be NUL-terminated and never reads past it;
 * malformed input yields an XIR_TOK_ERROR token with a message, never a
 * crash. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xir_internal.h"

void xc_xir_lexer_init(xir_lexer_t* lx, const char* text, size_t len) {
  memset(lx, 0, sizeof *lx);
  lx->text = text;
  lx->len = len;
  lx->line = 1;
  lx->col = 1;
}

static bool is_ident_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool is_ident_char(int c) { return is_ident_start(c) || is_digit(c) || c == '.'; }

static int peek(const xir_lexer_t* lx, size_t ahead) {
  return lx->pos + ahead < lx->len ? (unsigned char)lx->text[lx->pos + ahead] : -1;
}

static void advance(xir_lexer_t* lx) {
  if (lx->pos >= lx->len) return;
  if (lx->text[lx->pos] == '\n') {
    lx->line++;
    lx->col = 1;
  } else {
    lx->col++;
  }
  lx->pos++;
}

static void fail(xir_lexer_t* lx, xir_token_t* t, const char* msg) {
  snprintf(lx->error, sizeof lx->error, "%s", msg);
  t->kind = XIR_TOK_ERROR;
}

/* Skips whitespace and comments; false (with the error token filled in) on an
 * unterminated block comment. */
static bool skip_space(xir_lexer_t* lx, xir_token_t* t) {
  for (;;) {
    int c = peek(lx, 0);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(lx);
    } else if (c == '#') {
      while (peek(lx, 0) >= 0 && peek(lx, 0) != '\n') advance(lx);
    } else if (c == '/' && peek(lx, 1) == '*') {
      t->line = lx->line;
      t->col = lx->col;
      t->start = lx->pos;
      advance(lx);
      advance(lx);
      while (!(peek(lx, 0) == '*' && peek(lx, 1) == '/')) {
        if (peek(lx, 0) < 0) {
          fail(lx, t, "unterminated comment (opened here)");
          return false;
        }
        advance(lx);
      }
      advance(lx);
      advance(lx);
    } else {
      return true;
    }
  }
}

static void lex_number(xir_lexer_t* lx, xir_token_t* t) {
  t->kind = XIR_TOK_INT;
  if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X')) {
    advance(lx);
    advance(lx);
    if (!is_hex(peek(lx, 0))) return fail(lx, t, "hexadecimal literal without digits");
    while (is_hex(peek(lx, 0))) {
      int c = peek(lx, 0);
      unsigned d = is_digit(c) ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
      if (t->int_value > (UINT64_MAX >> 4)) t->int_overflow = true;
      t->int_value = (t->int_value << 4) | d;
      advance(lx);
    }
  } else {
    while (is_digit(peek(lx, 0))) {
      unsigned d = (unsigned)(peek(lx, 0) - '0');
      if (t->int_value > (UINT64_MAX - d) / 10) t->int_overflow = true;
      t->int_value = t->int_value * 10 + d;
      advance(lx);
    }
    if (peek(lx, 0) == '.' && is_digit(peek(lx, 1))) {
      t->kind = XIR_TOK_FLOAT;
      advance(lx);
      while (is_digit(peek(lx, 0))) advance(lx);
    } else if (peek(lx, 0) == '.') {
      /* "1." is accepted as a float, like numpy prints it. */
      t->kind = XIR_TOK_FLOAT;
      advance(lx);
    }
    if (peek(lx, 0) == 'e' || peek(lx, 0) == 'E') {
      size_t sign = (peek(lx, 1) == '+' || peek(lx, 1) == '-') ? 1 : 0;
      if (!is_digit(peek(lx, 1 + sign))) return fail(lx, t, "malformed exponent");
      t->kind = XIR_TOK_FLOAT;
      advance(lx);
      if (sign) advance(lx);
      while (is_digit(peek(lx, 0))) advance(lx);
    }
  }
  if (is_ident_char(peek(lx, 0)))
    return fail(lx, t, "malformed number (letters or '.' right after digits)");
}

static bool lex_string(xir_lexer_t* lx, xir_token_t* t) {
  advance(lx); /* opening quote */
  for (;;) {
    int c = peek(lx, 0);
    if (c < 0 || c == '\n') {
      fail(lx, t, "unterminated string (opened here)");
      return false;
    }
    if (c == '"') {
      advance(lx);
      return true;
    }
    if (c == '\\') {
      int e = peek(lx, 1);
      if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r') {
        advance(lx);
        advance(lx);
        continue;
      }
      if (e == 'x' && is_hex(peek(lx, 2)) && is_hex(peek(lx, 3))) {
        if (peek(lx, 2) == '0' && peek(lx, 3) == '0') {
          fail(lx, t, "string contains \\x00 (NUL is not allowed)");
          return false;
        }
        for (int i = 0; i < 4; i++) advance(lx);
        continue;
      }
      fail(lx, t, "bad escape in string (use \\\" \\\\ \\n \\t \\r or \\xHH)");
      return false;
    }
    if (c < 0x20 && c != '\t') {
      fail(lx, t, "control character in string (write it as \\xHH)");
      return false;
    }
    advance(lx);
  }
}

void xc_xir_lex(xir_lexer_t* lx, xir_token_t* t) {
  memset(t, 0, sizeof *t);
  if (!skip_space(lx, t)) return;
  t->start = lx->pos;
  t->line = lx->line;
  t->col = lx->col;
  int c = peek(lx, 0);
  if (c < 0) {
    t->kind = XIR_TOK_EOF;
    return;
  }
  if (is_ident_start(c)) {
    t->kind = XIR_TOK_IDENT;
    while (is_ident_char(peek(lx, 0))) advance(lx);
  } else if (is_digit(c)) {
    lex_number(lx, t);
  } else if (c == '"') {
    t->kind = XIR_TOK_STRING;
    lex_string(lx, t);
  } else if (c == ':' && peek(lx, 1) == ':') {
    t->kind = XIR_TOK_PUNCT;
    t->punct = 'D';
    advance(lx);
    advance(lx);
  } else if (strchr("()[]{},:=@-+*?", c)) {
    t->kind = XIR_TOK_PUNCT;
    t->punct = (char)c;
    advance(lx);
  } else {
    char msg[64];
    if (c >= 0x21 && c < 0x7f)
      snprintf(msg, sizeof msg, "unexpected character '%c'", c);
    else
      snprintf(msg, sizeof msg, "unexpected byte 0x%02x", (unsigned)c);
    fail(lx, t, msg);
    advance(lx);
  }
  t->len = lx->pos - t->start;
}

static int hexval(int c) {
  return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

void xc_xir_decode_string(const char* text, const xir_token_t* tok, char* buf) {
  size_t k = 0;
  /* Body between the quotes. */
  for (size_t i = tok->start + 1; i + 1 < tok->start + tok->len; i++) {
    char c = text[i];
    if (c != '\\') {
      buf[k++] = c;
      continue;
    }
    char e = text[++i];
    switch (e) {
      case 'n': buf[k++] = '\n'; break;
      case 't': buf[k++] = '\t'; break;
      case 'r': buf[k++] = '\r'; break;
      case 'x':
        buf[k++] = (char)(hexval((unsigned char)text[i + 1]) * 16 +
                          hexval((unsigned char)text[i + 2]));
        i += 2;
        break;
      default: buf[k++] = e; break;
    }
  }
  buf[k] = 0;
}

const char* xc_xir_describe_token(const xir_lexer_t* lx, const xir_token_t* t,
                                  char* buf, size_t n) {
  int len = t->len > 40 ? 40 : (int)t->len;
  const char* more = t->len > 40 ? "..." : "";
  const char* s = lx->text + t->start;
  switch (t->kind) {
    case XIR_TOK_EOF: snprintf(buf, n, "end of input"); break;
    case XIR_TOK_ERROR: snprintf(buf, n, "%s", lx->error); break;
    case XIR_TOK_IDENT: snprintf(buf, n, "'%.*s%s'", len, s, more); break;
    case XIR_TOK_INT:
    case XIR_TOK_FLOAT: snprintf(buf, n, "number %.*s%s", len, s, more); break;
    case XIR_TOK_STRING: snprintf(buf, n, "string %.*s%s", len, s, more); break;
    case XIR_TOK_PUNCT:
      if (t->punct == 'D')
        snprintf(buf, n, "'::'");
      else
        snprintf(buf, n, "'%c'", t->punct);
      break;
  }
  return buf;
}

bool xc_xir_is_plain_name(const char* s) {
  if (!s || !is_ident_start((unsigned char)s[0])) return false;
  if (s[0] == '_' && s[1] == 0) return false;
  for (const char* p = s + 1; *p; p++)
    if (!is_ident_char((unsigned char)*p)) return false;
  return true;
}

uint64_t xc_xir_nan_bits(xc_dtype_t t, bool negative) {
  double x = negative ? -NAN : NAN;
  switch (t) {
    case XC_F64: {
      uint64_t b;
      memcpy(&b, &x, 8);
      return b;
    }
    case XC_F32: {
      float f = (float)x;
      uint32_t b;
      memcpy(&b, &f, 4);
      return b;
    }
    case XC_F16: return xc_f64_to_f16(x);
    case XC_BF16: return xc_f64_to_bf16(x);
    case XC_F8E4M3FN: return xc_f64_to_f8e4m3fn(x);
    case XC_F8E5M2: return xc_f64_to_f8e5m2(x);
    default: return 0;
  }
}
