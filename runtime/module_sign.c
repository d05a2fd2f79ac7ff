/* Module signatures: SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), and the
 * signing key from the environment (XCOMP_MODULE_KEY or
 * XCOMP_MODULE_KEY_FILE). A .xcm is executable code (a cpu module carries a
 * shared object that is loaded and run); its XXH3 checksum only catches
 * damage. With a key set, module_format.c signs every module it writes and
 * refuses to read one that is unsigned or signed with another key.
 *
 * Written here rather than taken from a library: it is 150 lines, nothing
 * else in xcomp needs a crypto library, and linking OpenSSL into libxcomp.so
 * for one hash is a larger dependency than the code. Checked against the
 * FIPS 180-4 and RFC 4231 test vectors in tests/unit/test_module_sign.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = k + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
    uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void xc_sha256_init(xc_sha256_t* s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->total = 0;
  s->fill = 0;
}

void xc_sha256_update(xc_sha256_t* s, const void* data, size_t size) {
  const uint8_t* p = data;
  s->total += size;
  if (s->fill) {
    size_t take = 64 - s->fill < size ? 64 - s->fill : size;
    memcpy(s->buf + s->fill, p, take);
    s->fill += take;
    p += take;
    size -= take;
    if (s->fill < 64) return;
    sha256_block(s->h, s->buf);
    s->fill = 0;
  }
  for (; size >= 64; p += 64, size -= 64) sha256_block(s->h, p);
  memcpy(s->buf, p, size);
  s->fill = size;
}

void xc_sha256_final(xc_sha256_t* s, uint8_t out[32]) {
  uint64_t bits = s->total * 8;
  uint8_t pad[72] = {0x80};
  size_t n = (s->fill < 56 ? 56 : 120) - s->fill;
  for (int i = 0; i < 8; i++) pad[n + i] = (uint8_t)(bits >> (56 - 8 * i));
  xc_sha256_update(s, pad, n + 8);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void xc_sha256(const void* data, size_t size, uint8_t out[32]) {
  xc_sha256_t s;
  xc_sha256_init(&s);
  xc_sha256_update(&s, data, size);
  xc_sha256_final(&s, out);
}

void xc_hmac_sha256(const void* key, size_t key_size, const xc_byte_span_t* parts, int num_parts,
                    uint8_t out[32]) {
  uint8_t k[64] = {0}, pad[64], inner[32];
  if (key_size > 64) xc_sha256(key, key_size, k);
  else if (key_size) memcpy(k, key, key_size);
  xc_sha256_t s;
  for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
  xc_sha256_init(&s);
  xc_sha256_update(&s, pad, 64);
  for (int i = 0; i < num_parts; i++) xc_sha256_update(&s, parts[i].data, parts[i].size);
  xc_sha256_final(&s, inner);
  for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
  xc_sha256_init(&s);
  xc_sha256_update(&s, pad, 64);
  xc_sha256_update(&s, inner, 32);
  xc_sha256_final(&s, out);
}

bool xc_digest_equal(const uint8_t* a, const uint8_t* b, size_t n) {
  uint8_t diff = 0; /* no early exit: the time does not tell how many bytes matched */
  for (size_t i = 0; i < n; i++) diff |= a[i] ^ b[i];
  return diff == 0;
}

xc_status_t xc_module_key_load(uint8_t** out_key, size_t* out_size) {
  *out_key = NULL;
  *out_size = 0;
  const char* text = getenv("XCOMP_MODULE_KEY");
  const char* file = getenv("XCOMP_MODULE_KEY_FILE");
  if (text && !*text) text = NULL;
  if (file && !*file) file = NULL;
  if (text && file)
    return xc_error(XC_INVALID_ARGUMENT, "both XCOMP_MODULE_KEY and XCOMP_MODULE_KEY_FILE are set; set one");
  if (!text && !file) return NULL;
  uint8_t* key = NULL;
  size_t size = 0;
  if (text) {
    size = strlen(text);
    key = malloc(size);
    if (!key) return xc_error_oom();
    memcpy(key, text, size);
  } else {
    xc_status_t s = xc_read_file_bytes(file, &key, &size);
    if (s) return xc_status_annotate(s, "XCOMP_MODULE_KEY_FILE");
    /* A key written with echo ends in a newline that is not part of it. */
    while (size > 0 && (key[size - 1] == '\n' || key[size - 1] == '\r')) size--;
  }
  if (size < 16) {
    free(key);
    return xc_error(XC_INVALID_ARGUMENT, "the module signing key (%s) is %zu bytes; at least 16 are needed",
                    text ? "XCOMP_MODULE_KEY" : file, size);
  }
  *out_key = key;
  *out_size = size;
  return NULL;
}
