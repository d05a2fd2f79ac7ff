/* numpy .npy files (format versions 1.0, 2.0 and 3.0), read and written.
 *
 * dtypes: '<f4' f32, '<f8' f64, '<f2' f16, '|i1' i8, '<i2' i16, '<i4' i32,
 * '<i8' i64, '|u1' u8, '<u2' u16, '<u4' u32, '<u8' u64, '|b1' bool.
 * Big-endian descrs ('>f4'...) are read and byte-swapped. numpy has no
 * bfloat16: xcomp writes bf16 as the 2-byte void type '<V2' (numpy loads it
 * as raw bytes; `.view(ml_dtypes.bfloat16)` recovers the values) and reads
 * '<V2'/'|V2' back as bf16. That is also what np.save writes for an
 * ml_dtypes.bfloat16 array. fp8 tensors have no unambiguous numpy spelling
 * and are refused; use .pb for them. fortran_order True is read by
 * transposing into row-major order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/tensor_io.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_type {
  const char* code; /* descr without the byte-order character */
  xc_dtype_t dtype;
} npy_type_t;

static const npy_type_t npy_types[] = {
    {"f4", XC_F32}, {"f8", XC_F64}, {"f2", XC_F16}, {"i1", XC_I8},  {"i2", XC_I16},
    {"i4", XC_I32}, {"i8", XC_I64}, {"u1", XC_U8},  {"u2", XC_U16}, {"u4", XC_U32},
    {"u8", XC_U64}, {"b1", XC_BOOL}, {"V2", XC_BF16},
};

/* ---- header dict parser ------------------------------------------------ */

typedef struct header_parser {
  const char* p;
  const char* end;
} header_parser_t;

static void skip_space(header_parser_t* h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool expect(header_parser_t* h, char c) {
  skip_space(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted Python string literal without escapes, into buf. */
static bool parse_str(header_parser_t* h, char* buf, size_t n) {
  skip_space(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  size_t k = 0;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\' || k + 1 >= n) return false;
    buf[k++] = *h->p++;
  }
  if (h->p >= h->end) return false;
  h->p++;
  buf[k] = 0;
  return true;
}

static bool parse_int(header_parser_t* h, int64_t* out) {
  skip_space(h);
  int64_t v = 0;
  const char* start = h->p;
  while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
    if (!xc_mul_i64(v, 10, &v) || !xc_add_i64(v, *h->p - '0', &v)) return false;
    h->p++;
  }
  /* numpy writes Python ints, which may carry an 'L' suffix in old files. */
  if (h->p < h->end && *h->p == 'L') h->p++;
  *out = v;
  return h->p > start;
}

typedef struct npy_header {
  char descr[32];
  bool fortran;
  int rank;
  int64_t dims[XC_MAX_RANK];
} npy_header_t;

static xc_status_t parse_header(const char* text, size_t len, const char* what,
                                npy_header_t* out) {
  header_parser_t h = {text, text + len};
  bool have_descr = false, have_fortran = false, have_shape = false;
  memset(out, 0, sizeof *out);
#define BAD(msg) xc_error(XC_INVALID_ARGUMENT, "%s: bad .npy header dict (%s)", what, msg)
  if (!expect(&h, '{')) return BAD("expected '{'");
  for (;;) {
    if (expect(&h, '}')) break;
    char key[32];
    if (!parse_str(&h, key, sizeof key)) return BAD("expected a quoted key");
    if (!expect(&h, ':')) return BAD("expected ':'");
    if (strcmp(key, "descr") == 0) {
      if (have_descr) return BAD("duplicate 'descr'");
      if (!parse_str(&h, out->descr, sizeof out->descr))
        return BAD("'descr' must be a simple type string (structured dtypes are unsupported)");
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (have_fortran) return BAD("duplicate 'fortran_order'");
      skip_space(&h);
      if ((size_t)(h.end - h.p) >= 4 && memcmp(h.p, "True", 4) == 0) {
        out->fortran = true;
        h.p += 4;
      } else if ((size_t)(h.end - h.p) >= 5 && memcmp(h.p, "False", 5) == 0) {
        out->fortran = false;
        h.p += 5;
      } else {
        return BAD("'fortran_order' must be True or False");
      }
      have_fortran = true;
    } else if (strcmp(key, "shape") == 0) {
      if (have_shape) return BAD("duplicate 'shape'");
      if (!expect(&h, '(')) return BAD("'shape' must be a tuple");
      out->rank = 0;
      for (;;) {
        if (expect(&h, ')')) break;
        int64_t d;
        if (!parse_int(&h, &d)) return BAD("'shape' entries must be non-negative integers");
        if (out->rank >= XC_MAX_RANK)
          return xc_error(XC_UNSUPPORTED, "%s: .npy rank exceeds the maximum %d", what,
                          XC_MAX_RANK);
        out->dims[out->rank++] = d;
        if (expect(&h, ')')) break;
        if (!expect(&h, ',')) return BAD("expected ',' in 'shape'");
      }
      have_shape = true;
    } else {
      return BAD("unknown key");
    }
    if (expect(&h, '}')) break;
    if (!expect(&h, ',')) return BAD("expected ','");
  }
  skip_space(&h);
  if (h.p != h.end) return BAD("trailing characters");
  if (!have_descr || !have_fortran || !have_shape)
    return BAD("needs 'descr', 'fortran_order' and 'shape'");
#undef BAD
  return NULL;
}

static xc_status_t descr_to_dtype(const char* descr, const char* what, xc_dtype_t* out,
                                  bool* big_endian) {
  char order = descr[0];
  const char* code = descr + 1;
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return xc_error(XC_UNSUPPORTED, "%s: unsupported .npy dtype '%s'", what, descr);
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (strcmp(code, npy_types[i].code) == 0) {
      *out = npy_types[i].dtype;
      *big_endian = order == '>' && xc_dtype_size(*out) > 1;
      return NULL;
    }
  return xc_error(XC_UNSUPPORTED, "%s: unsupported .npy dtype '%s'", what, descr);
}

static void byteswap(uint8_t* p, int64_t n, size_t esize) {
  for (int64_t i = 0; i < n; i++, p += esize)
    for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

xc_status_t xc_npy_read_buffer(const void* data, size_t size, const char* what,
                               xc_tensor_t** out) {
  *out = NULL;
  if (!what) what = "<buffer>";
  const uint8_t* b = data;
  if (size < 10 || memcmp(b, npy_magic, 6) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "%s: not a .npy file (bad magic)", what);
  unsigned major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return xc_error(XC_DATA_LOSS, "%s: truncated .npy header", what);
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  } else {
    return xc_error(XC_UNSUPPORTED, "%s: unsupported .npy format version %u.%u", what, major,
                    (unsigned)b[7]);
  }
  if (hlen > size - hstart)
    return xc_error(XC_DATA_LOSS, "%s: truncated .npy header (%zu bytes declared, %zu present)",
                    what, hlen, size - hstart);
  npy_header_t hdr;
  XC_RETURN_IF_ERROR(parse_header((const char*)b + hstart, hlen, what, &hdr));
  xc_dtype_t dt = XC_DTYPE_UNDEFINED;
  bool big = false;
  XC_RETURN_IF_ERROR(descr_to_dtype(hdr.descr, what, &dt, &big));
  int64_t numel;
  xc_status_t s = xc_shape_numel(hdr.rank, hdr.dims, dt, &numel);
  if (s) return xc_status_annotate(s, "%s", what);
  size_t esize = xc_dtype_size(dt);
  uint64_t nbytes = (uint64_t)numel * esize;
  size_t body = size - hstart - hlen;
  if (body < nbytes)
    return xc_error(XC_DATA_LOSS, "%s: truncated .npy data (%zu bytes, shape needs %llu)", what,
                    body, (unsigned long long)nbytes);
  if (body > nbytes)
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: .npy size mismatch (%zu data bytes, shape needs %llu)", what, body,
                    (unsigned long long)nbytes);
  xc_tensor_t* t;
  XC_RETURN_IF_ERROR(xc_tensor_create(dt, hdr.rank, hdr.dims, &t));
  const uint8_t* src = b + hstart + hlen;
  if (!hdr.fortran || hdr.rank < 2 || numel == 0) {
    if (nbytes) memcpy(t->data, src, nbytes);
  } else {
    /* Column-major source: element (i0..ik) sits at sum(i_j * fstride_j). */
    int64_t fstride[XC_MAX_RANK], idx[XC_MAX_RANK] = {0};
    int64_t acc = 1;
    for (int d = 0; d < hdr.rank; d++) {
      fstride[d] = acc;
      acc *= hdr.dims[d];
    }
    int64_t i = 0;
    do {
      int64_t off = 0;
      for (int d = 0; d < hdr.rank; d++) off += idx[d] * fstride[d];
      memcpy((uint8_t*)t->data + (size_t)i * esize, src + (size_t)off * esize, esize);
      i++;
    } while (xc_index_next(hdr.rank, hdr.dims, idx));
  }
  if (big) byteswap(t->data, numel, esize);
  if (dt == XC_BOOL) {
    uint8_t* p = t->data;
    for (int64_t k = 0; k < numel; k++) p[k] = p[k] != 0;
  }
  *out = t;
  return NULL;
}

xc_status_t xc_npy_read(const char* path, xc_tensor_t** out) {
  *out = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return xc_error(errno == ENOENT ? XC_NOT_FOUND : XC_IO, "%s: %s", path, strerror(errno));
  uint8_t* buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      size_t ncap = cap ? cap * 2 : 65536;
      if ((int64_t)ncap > XC_MAX_TENSOR_BYTES + 65536) {
        free(buf);
        fclose(f);
        return xc_error(XC_RESOURCE_EXHAUSTED, "%s: file too large", path);
      }
      uint8_t* nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        fclose(f);
        return xc_error(XC_RESOURCE_EXHAUSTED, "%s: out of memory reading the file", path);
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  bool err = ferror(f) != 0;
  fclose(f);
  if (err) {
    free(buf);
    return xc_error(XC_IO, "%s: read failed", path);
  }
  xc_status_t s = xc_npy_read_buffer(buf, len, path, out);
  free(buf);
  return s;
}

xc_status_t xc_npy_write(const char* path, const xc_tensor_t* t) {
  const char* code = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].dtype == t->dtype) code = npy_types[i].code;
  if (!code)
    return xc_error(XC_UNSUPPORTED, "%s: dtype %s has no .npy spelling (use .pb)", path,
                    xc_dtype_name(t->dtype));
  char order = xc_dtype_size(t->dtype) == 1 ? '|' : '<';
  char dict[64 + 24 * XC_MAX_RANK];
  int k = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                   order, code);
  for (int i = 0; i < t->rank; i++)
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld,%s", (long long)t->dims[i],
                  i + 1 < t->rank ? " " : "");
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  /* Pad with spaces so the data starts on a 64-byte boundary; end with \n. */
  size_t total = 10 + (size_t)k + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t hlen = padded - 10;
  uint8_t head[10 + sizeof dict + 64];
  memcpy(head, npy_magic, 6);
  head[6] = 1;
  head[7] = 0;
  head[8] = (uint8_t)(hlen & 0xff);
  head[9] = (uint8_t)(hlen >> 8);
  memcpy(head + 10, dict, (size_t)k);
  memset(head + 10 + k, ' ', hlen - (size_t)k - 1);
  head[padded - 1] = '\n';
  FILE* f = fopen(path, "wb");
  if (!f) return xc_error(XC_IO, "%s: %s", path, strerror(errno));
  size_t nbytes = xc_tensor_nbytes(t);
  bool ok = fwrite(head, 1, padded, f) == padded;
  if (ok && nbytes) ok = fwrite(t->data, 1, nbytes, f) == nbytes;
  ok = (fclose(f) == 0) && ok;
  return ok ? NULL : xc_error(XC_IO, "%s: write failed", path);
}
