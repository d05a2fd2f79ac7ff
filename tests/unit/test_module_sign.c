/* Module signatures: SHA-256 (FIPS 180-4 examples) and HMAC-SHA256 (RFC 4231
 * test cases 1-4, 6, 7) against the published vectors; with a key set a
 * written module is signed and reads back, an unsigned module or one signed
 * with another key is refused, a signed module changed after signing (and
 * its checksum recomputed) is refused; without a key a signed module reads;
 * bad key settings are errors. */
#include <unistd.h>

#include "test_module_fixture.h"

static void hex(const uint8_t* d, size_t n, char* out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_sha(const char* msg, size_t n, const char* want) {
  uint8_t d[32];
  char got[65];
  xc_sha256(msg, n, d);
  hex(d, 32, got);
  CHECK_STR(got, want);
  /* The same through many small updates (block boundaries). */
  xc_sha256_t s;
  xc_sha256_init(&s);
  for (size_t i = 0; i < n; i++) xc_sha256_update(&s, msg + i, 1);
  xc_sha256_final(&s, d);
  hex(d, 32, got);
  CHECK_STR(got, want);
}

static void check_hmac(const uint8_t* key, size_t key_size, const uint8_t* data, size_t size, const char* want,
                       size_t want_bytes) {
  uint8_t d[32];
  char got[65];
  xc_byte_span_t parts[2] = {{data, size / 2}, {data + size / 2, size - size / 2}};
  xc_hmac_sha256(key, key_size, parts, 2, d);
  hex(d, want_bytes, got);
  CHECK_STR(got, want);
}

static void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void reseal(uint8_t* bytes, size_t size) {
  xc_hash128_t h = xc_hash128(bytes + 48, size - 48);
  put_u64(bytes + 24, h.lo);
  put_u64(bytes + 32, h.hi);
}

int main(void) {
  check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  check_sha(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  static char million[1000000];
  memset(million, 'a', sizeof million);
  {
    uint8_t d[32];
    char got[65];
    xc_sha256(million, sizeof million, d);
    hex(d, 32, got);
    CHECK_STR(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }

  /* RFC 4231. */
  uint8_t k1[20], k3[20], k4[25], k6[131], d3[50], d4[50];
  memset(k1, 0x0b, sizeof k1);
  check_hmac(k1, 20, (const uint8_t*)"Hi There", 8,
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32);
  check_hmac((const uint8_t*)"Jefe", 4, (const uint8_t*)"what do ya want for nothing?", 28,
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32);
  memset(k3, 0xaa, sizeof k3);
  memset(d3, 0xdd, sizeof d3);
  check_hmac(k3, 20, d3, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32);
  for (int i = 0; i < 25; i++) k4[i] = (uint8_t)(i + 1);
  memset(d4, 0xcd, sizeof d4);
  check_hmac(k4, 25, d4, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32);
  memset(k6, 0xaa, sizeof k6);
  const char* m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  check_hmac(k6, 131, (const uint8_t*)m6, strlen(m6),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32);
  const char* m7 =
      "This is a test using a larger than block-size key and a larger than block-size data. The key needs to "
      "be hashed before being used by the HMAC algorithm.";
  check_hmac(k6, 131, (const uint8_t*)m7, strlen(m7),
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32);
  uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5};
  CHECK(xc_digest_equal(a, a, 4));
  CHECK(!xc_digest_equal(a, b, 4));

  /* Signed modules. */
  unsetenv("XCOMP_MODULE_KEY");
  unsetenv("XCOMP_MODULE_KEY_FILE");
  xc_compiled_module_t* m = NULL;
  int compiled = 0;
  CHECK_OK(fixture_module(&m, &compiled));
  if (!m) return xc_test_summary("test_module_sign");
  uint8_t *plain = NULL, *signed_bytes = NULL, *other = NULL;
  size_t plain_size = 0, signed_size = 0, other_size = 0;
  CHECK_OK(xc_compiled_module_serialize(m, &plain, &plain_size));
  setenv("XCOMP_MODULE_KEY", "correct horse battery staple", 1);
  CHECK_OK(xc_compiled_module_serialize(m, &signed_bytes, &signed_size));
  CHECK(signed_size > plain_size);
  /* Written to a file (streamed from the module's parts): the same bytes. */
  {
    char dir[] = "/tmp/xcomp-test-sign-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/signed.xcm", dir);
    CHECK_OK(xc_compiled_module_write(m, path));
    uint8_t* disk = NULL;
    size_t disk_size = 0;
    CHECK_OK(xc_read_file_bytes(path, &disk, &disk_size));
    CHECK(disk && disk_size == signed_size && memcmp(disk, signed_bytes, signed_size) == 0);
    free(disk);
    xc_compiled_module_t* read_back = NULL;
    CHECK_OK(xc_compiled_module_read(path, &read_back));
    CHECK(read_back && read_back->signature_verified);
    xc_compiled_module_destroy(read_back);
    unlink(path);
    rmdir(dir);
  }
  xc_compiled_module_t* back = NULL;
  CHECK_OK(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back));
  CHECK(back && back->signature_verified);
  xc_compiled_module_destroy(back);
  back = NULL;
  CHECK_ERR(xc_compiled_module_deserialize(plain, plain_size, "plain.xcm", &back), "plain.xcm: the module is not signed");
  CHECK(back == NULL);
  /* A byte of a kernel blob changed, the checksum recomputed: refused. */
  uint8_t* copy = malloc(signed_size);
  memcpy(copy, signed_bytes, signed_size);
  copy[signed_size / 2] ^= 0x40;
  reseal(copy, signed_size);
  CHECK_ERR(xc_compiled_module_deserialize(copy, signed_size, "changed.xcm", &back), "bad module signature");
  free(copy);
  /* Another key. */
  setenv("XCOMP_MODULE_KEY", "another key of sixteen bytes or more", 1);
  CHECK_OK(xc_compiled_module_serialize(m, &other, &other_size));
  setenv("XCOMP_MODULE_KEY", "correct horse battery staple", 1);
  CHECK_ERR(xc_compiled_module_deserialize(other, other_size, "other.xcm", &back), "bad module signature");
  /* The key from a file (a trailing newline is not part of it). */
  unsetenv("XCOMP_MODULE_KEY");
  char key_path[] = "/tmp/xcomp-test-key-XXXXXX";
  int fd = mkstemp(key_path);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(write(fd, "correct horse battery staple\n", 29) == 29);
    close(fd);
    setenv("XCOMP_MODULE_KEY_FILE", key_path, 1);
    CHECK_OK(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back));
    xc_compiled_module_destroy(back);
    back = NULL;
    setenv("XCOMP_MODULE_KEY", "correct horse battery staple", 1);
    CHECK_ERR(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back), "set one");
    unsetenv("XCOMP_MODULE_KEY");
    unlink(key_path);
    CHECK_ERR(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back), "XCOMP_MODULE_KEY_FILE");
    unsetenv("XCOMP_MODULE_KEY_FILE");
  }
  setenv("XCOMP_MODULE_KEY", "short", 1);
  CHECK_ERR(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back), "at least 16");
  /* No key: signed and unsigned modules both read (nothing to check against). */
  unsetenv("XCOMP_MODULE_KEY");
  CHECK_OK(xc_compiled_module_deserialize(signed_bytes, signed_size, "signed.xcm", &back));
  CHECK(back && !back->signature_verified);
  xc_compiled_module_destroy(back);
  back = NULL;
  CHECK_OK(xc_compiled_module_deserialize(plain, plain_size, "plain.xcm", &back));
  xc_compiled_module_destroy(back);
  free(plain);
  free(signed_bytes);
  free(other);
  xc_compiled_module_destroy(m);
  return xc_test_summary("test_module_sign");
}
