/* Tensor files: .npy and .pb round trips for every dtype, hand-built .npy
 * and TensorProto bytes (typed fields, big-endian, fortran order, format
 * versions 2 and 3), and clean errors for malformed files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/tensor_io.h"

static char tmpdir[64];

static const char* tmp_path(const char* name) {
  static char buf[256];
  snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
  return buf;
}

/* A tensor of dtype dt, shape [2,3], whose bytes are a fixed pattern. */
static xc_tensor_t* pattern_tensor(xc_dtype_t dt) {
  int64_t d[2] = {2, 3};
  xc_tensor_t* t = NULL;
  CHECK_OK(xc_tensor_create(dt, 2, d, &t));
  if (!t) return NULL;
  uint8_t* b = t->data;
  size_t n = xc_tensor_nbytes(t);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 37 + 11);
  if (dt == XC_BOOL)
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i % 2);
  return t;
}

static bool same_tensor(const xc_tensor_t* a, const xc_tensor_t* b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return memcmp(a->data, b->data, xc_tensor_nbytes(a)) == 0;
}

static void test_roundtrips(void) {
  for (int dt = 1; dt < XC_DTYPE_COUNT; dt++) {
    xc_tensor_t* t = pattern_tensor((xc_dtype_t)dt);
    if (!t) continue;
    /* .pb: every dtype */
    const char* pb = tmp_path("t.pb");
    CHECK_OK(xc_pb_write(pb, t, "my_tensor"));
    xc_tensor_t* r = NULL;
    char* name = NULL;
    CHECK_OK(xc_pb_read(pb, &r, &name));
    if (!same_tensor(t, r)) fprintf(stderr, "pb round trip of %s\n", xc_dtype_name(dt));
    CHECK(same_tensor(t, r));
    CHECK_STR(name, "my_tensor");
    free(name);
    xc_tensor_destroy(r);
    /* .npy: every dtype but fp8 */
    const char* npy = tmp_path("t.npy");
    if (dt == XC_F8E4M3FN || dt == XC_F8E5M2) {
      CHECK_ERR(xc_npy_write(npy, t), "no .npy spelling");
    } else {
      CHECK_OK(xc_npy_write(npy, t));
      r = NULL;
      CHECK_OK(xc_tensor_read_file(npy, &r, NULL));
      if (!same_tensor(t, r)) fprintf(stderr, "npy round trip of %s\n", xc_dtype_name(dt));
      CHECK(same_tensor(t, r));
      xc_tensor_destroy(r);
    }
    xc_tensor_destroy(t);
  }
  /* Scalars and empty tensors. */
  xc_tensor_t* s;
  CHECK_OK(xc_tensor_create(XC_F64, 0, NULL, &s));
  ((double*)s->data)[0] = -3.5;
  CHECK_OK(xc_npy_write(tmp_path("s.npy"), s));
  xc_tensor_t* r = NULL;
  CHECK_OK(xc_npy_read(tmp_path("s.npy"), &r));
  CHECK(r && r->rank == 0 && ((double*)r->data)[0] == -3.5);
  xc_tensor_destroy(r);
  xc_tensor_destroy(s);
  int64_t ed[2] = {0, 4};
  CHECK_OK(xc_tensor_create(XC_I32, 2, ed, &s));
  CHECK_OK(xc_npy_write(tmp_path("e.npy"), s));
  CHECK_OK(xc_pb_write(tmp_path("e.pb"), s, NULL));
  r = NULL;
  CHECK_OK(xc_npy_read(tmp_path("e.npy"), &r));
  CHECK(r && r->rank == 2 && r->dims[0] == 0 && r->dims[1] == 4 && r->numel == 0);
  xc_tensor_destroy(r);
  r = NULL;
  CHECK_OK(xc_pb_read(tmp_path("e.pb"), &r, NULL));
  CHECK(r && r->rank == 2 && r->dims[1] == 4 && r->numel == 0);
  xc_tensor_destroy(r);
  xc_tensor_destroy(s);
}

/* The exact bytes numpy 1.x/2.x writes for np.save(np.array([[1,2,3]], '<i2')). */
static void test_npy_known_bytes(void) {
  const char hdr[] = "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 3), }";
  uint8_t buf[128];
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  size_t hl = 118; /* 10 + 118 = 128 */
  buf[8] = (uint8_t)hl;
  buf[9] = 0;
  memset(buf + 10, ' ', hl);
  memcpy(buf + 10, hdr, sizeof hdr - 1);
  buf[127] = '\n';
  uint8_t file[134];
  memcpy(file, buf, 128);
  int16_t v[3] = {1, 2, -3};
  memcpy(file + 128, v, 6);
  xc_tensor_t* t = NULL;
  CHECK_OK(xc_npy_read_buffer(file, sizeof file, "known.npy", &t));
  CHECK(t && t->dtype == XC_I16 && t->rank == 2 && t->dims[0] == 1 && t->dims[1] == 3);
  if (t) CHECK_EQ_INT(xc_tensor_get_i64(t, 2), -3);
  xc_tensor_destroy(t);
  /* Truncated body, extra body, bad magic. */
  CHECK_ERR(xc_npy_read_buffer(file, sizeof file - 1, "known.npy", &t), "truncated");
  uint8_t longer[140];
  memcpy(longer, file, sizeof file);
  CHECK_ERR(xc_npy_read_buffer(longer, sizeof longer, "known.npy", &t), "size mismatch");
  file[1] = 'X';
  CHECK_ERR(xc_npy_read_buffer(file, sizeof file, "known.npy", &t), "bad magic");
}

/* Builds a .npy file with the given version, header dict and body. */
static size_t make_npy(uint8_t* out, int major, const char* dict, const void* body,
                       size_t body_len) {
  size_t dl = strlen(dict);
  size_t pre = major == 1 ? 10 : 12;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major;
  out[7] = 0;
  size_t hl = dl + 1;
  if (major == 1) {
    out[8] = (uint8_t)hl;
    out[9] = (uint8_t)(hl >> 8);
  } else {
    out[8] = (uint8_t)hl;
    out[9] = (uint8_t)(hl >> 8);
    out[10] = 0;
    out[11] = 0;
  }
  memcpy(out + pre, dict, dl);
  out[pre + dl] = '\n';
  memcpy(out + pre + hl, body, body_len);
  return pre + hl + body_len;
}

static void test_npy_variants(void) {
  uint8_t f[512];
  xc_tensor_t* t = NULL;
  /* Big-endian f4: 1.0f is 3f 80 00 00. */
  const uint8_t be[8] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0};
  size_t n = make_npy(f, 2, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be, 8);
  CHECK_OK(xc_npy_read_buffer(f, n, "be.npy", &t));
  if (t) {
    CHECK_NEAR(xc_tensor_get_f64(t, 0), 1.0, 0);
    CHECK_NEAR(xc_tensor_get_f64(t, 1), -2.0, 0);
  }
  xc_tensor_destroy(t);
  /* Fortran order [2,3]: memory holds columns: (0,0)(1,0)(0,1)(1,1)(0,2)(1,2). */
  const uint8_t fo[6] = {0, 10, 1, 11, 2, 12};
  n = make_npy(f, 3, "{'shape': (2, 3), 'fortran_order': True, 'descr': '|u1'}", fo, 6);
  t = NULL;
  CHECK_OK(xc_npy_read_buffer(f, n, "fortran.npy", &t));
  if (t) {
    const uint8_t want[6] = {0, 1, 2, 10, 11, 12};
    CHECK(memcmp(t->data, want, 6) == 0);
  }
  xc_tensor_destroy(t);
  /* bf16 as '<V2'. */
  const uint16_t bf[1] = {0x3f80};
  n = make_npy(f, 1, "{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", bf, 2);
  t = NULL;
  CHECK_OK(xc_npy_read_buffer(f, n, "bf.npy", &t));
  CHECK(t && t->dtype == XC_BF16);
  if (t) CHECK_NEAR(xc_tensor_get_f64(t, 0), 1.0, 0);
  xc_tensor_destroy(t);
  /* Errors. */
  const uint8_t z[16] = {0};
  n = make_npy(f, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", z, 8);
  CHECK_ERR(xc_npy_read_buffer(f, n, "c.npy", &t), "unsupported .npy dtype '<c8'");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "neg.npy", &t), "bad .npy header dict");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "huge.npy", &t), "huge.npy");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "overflow.npy", &t), "bad .npy header dict");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': False}", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "noshape.npy", &t), "needs 'descr'");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "maybe.npy", &t), "True or False");
  n = make_npy(f, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", z, 4);
  CHECK_ERR(xc_npy_read_buffer(f, n, "struct.npy", &t), "structured");
  n = make_npy(f, 7, "{}", z, 0);
  CHECK_ERR(xc_npy_read_buffer(f, n, "v7.npy", &t), "format version 7");
  n = make_npy(f, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", z, 4);
  f[8] = 0xff; /* header longer than the file */
  CHECK_ERR(xc_npy_read_buffer(f, n, "hl.npy", &t), "truncated .npy header");
  CHECK_ERR(xc_npy_read(tmp_path("does_not_exist.npy"), &t), "does_not_exist.npy");
  CHECK_ERR(xc_tensor_read_file("x.txt", &t, NULL), "unknown tensor file type");
}

/* ---- hand-encoded TensorProto -------------------------------------------- */

typedef struct pbuf {
  uint8_t b[1024];
  size_t n;
} pbuf_t;

static void put_varint(pbuf_t* p, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    p->b[p->n++] = (uint8_t)(c | (v ? 0x80 : 0));
  } while (v);
}
static void put_key(pbuf_t* p, int field, int wire) { put_varint(p, (uint64_t)(field << 3 | wire)); }
static void put_int(pbuf_t* p, int field, int64_t v) {
  put_key(p, field, 0);
  put_varint(p, (uint64_t)v);
}
/* Packed varints (int32_data 5, int64_data 7, uint64_data 11). */
static void put_packed(pbuf_t* p, int field, const int64_t* v, int n) {
  pbuf_t tmp = {{0}, 0};
  for (int i = 0; i < n; i++) put_varint(&tmp, (uint64_t)v[i]);
  put_key(p, field, 2);
  put_varint(p, tmp.n);
  memcpy(p->b + p->n, tmp.b, tmp.n);
  p->n += tmp.n;
}
static void put_bytes(pbuf_t* p, int field, const void* d, size_t n) {
  put_key(p, field, 2);
  put_varint(p, n);
  memcpy(p->b + p->n, d, n);
  p->n += n;
}

static void test_pb_typed_fields(void) {
  xc_tensor_t* t = NULL;
  /* int32_data for i8 / u16 / bool / f16 / bf16. ONNX types: INT8=3
   * UINT16=4 BOOL=9 FLOAT16=10 BFLOAT16=16. */
  struct {
    int onnx;
    xc_dtype_t dt;
    int64_t v[3];
    double want[3];
  } cases[] = {
      {3, XC_I8, {-128, 5, 127}, {-128, 5, 127}},
      {4, XC_U16, {0, 65535, 7}, {0, 65535, 7}},
      {9, XC_BOOL, {1, 0, 1}, {1, 0, 1}},
      {10, XC_F16, {0x3c00, 0xc000, 0x3800}, {1.0, -2.0, 0.5}},
      {16, XC_BF16, {0x3f80, 0xc000, 0x3f00}, {1.0, -2.0, 0.5}},
      {5, XC_I16, {-32768, 0, 32767}, {-32768, 0, 32767}},
      {2, XC_U8, {0, 200, 255}, {0, 200, 255}},
      {6, XC_I32, {-2147483648LL, 1, 2147483647}, {-2147483648.0, 1, 2147483647}},
      {17, XC_F8E4M3FN, {0x38, 0x7e, 0}, {1.0, 448.0, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    pbuf_t p = {{0}, 0};
    put_int(&p, 1, 3);               /* dims */
    put_int(&p, 2, cases[c].onnx);   /* data_type */
    put_packed(&p, 5, cases[c].v, 3); /* int32_data */
    t = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "typed.pb", &t, NULL));
    CHECK(t && t->dtype == cases[c].dt);
    if (t)
      for (int i = 0; i < 3; i++) CHECK_NEAR(xc_tensor_get_f64(t, i), cases[c].want[i], 0);
    xc_tensor_destroy(t);
  }
  /* int64_data */
  {
    pbuf_t p = {{0}, 0};
    int64_t v[2] = {INT64_MIN, INT64_MAX};
    put_int(&p, 1, 2);
    put_int(&p, 2, 7);
    put_packed(&p, 7, v, 2);
    t = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "i64.pb", &t, NULL));
    if (t) {
      CHECK(xc_tensor_get_i64(t, 0) == INT64_MIN);
      CHECK(xc_tensor_get_i64(t, 1) == INT64_MAX);
    }
    xc_tensor_destroy(t);
  }
  /* uint64_data for u32 and u64 */
  {
    pbuf_t p = {{0}, 0};
    int64_t v[2] = {4294967295LL, 3};
    put_int(&p, 1, 2);
    put_int(&p, 2, 12);
    put_packed(&p, 11, v, 2);
    t = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "u32.pb", &t, NULL));
    if (t) CHECK(((uint32_t*)t->data)[0] == 4294967295u);
    xc_tensor_destroy(t);
    p.n = 0;
    int64_t w[1] = {-1}; /* 2^64-1 as a varint */
    put_int(&p, 1, 1);
    put_int(&p, 2, 13);
    put_packed(&p, 11, w, 1);
    t = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "u64.pb", &t, NULL));
    if (t) CHECK(((uint64_t*)t->data)[0] == UINT64_MAX);
    xc_tensor_destroy(t);
    /* u32 out of range */
    p.n = 0;
    int64_t big[1] = {4294967296LL};
    put_int(&p, 1, 1);
    put_int(&p, 2, 12);
    put_packed(&p, 11, big, 1);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "u32big.pb", &t, NULL), "out of range");
  }
  /* float_data (packed fixed32) and double_data (packed fixed64) */
  {
    pbuf_t p = {{0}, 0};
    float fv[2] = {1.5f, -0.25f};
    put_int(&p, 1, 2);
    put_int(&p, 2, 1);
    put_bytes(&p, 4, fv, sizeof fv);
    put_bytes(&p, 8, "nm", 2); /* name */
    t = NULL;
    char* name = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "f.pb", &t, &name));
    if (t) CHECK_NEAR(xc_tensor_get_f64(t, 1), -0.25, 0);
    CHECK_STR(name, "nm");
    free(name);
    xc_tensor_destroy(t);
    p.n = 0;
    double dv[1] = {1e300};
    put_int(&p, 2, 11); /* scalar: no dims */
    put_bytes(&p, 10, dv, sizeof dv);
    t = NULL;
    CHECK_OK(xc_pb_read_buffer(p.b, p.n, "d.pb", &t, NULL));
    CHECK(t && t->rank == 0);
    if (t) CHECK_NEAR(xc_tensor_get_f64(t, 0), 1e300, 0);
    xc_tensor_destroy(t);
  }
  /* Errors */
  {
    pbuf_t p = {{0}, 0};
    int64_t v[2] = {1, 2};
    put_int(&p, 1, 3);
    put_int(&p, 2, 6);
    put_packed(&p, 5, v, 2);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "short.pb", &t, NULL), "int32_data has 2 elements, its shape needs 3");
    p.n = 0;
    put_int(&p, 1, 2);
    put_int(&p, 2, 1);
    put_bytes(&p, 9, "abcdefghi", 9);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "raw.pb", &t, NULL), "raw_data holds 9 bytes");
    p.n = 0;
    put_int(&p, 1, 1);
    put_int(&p, 2, 8);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "str.pb", &t, NULL), "unsupported data type 8 (STRING)");
    p.n = 0;
    put_int(&p, 1, 1);
    put_int(&p, 2, 99);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "enum.pb", &t, NULL), "unsupported data type 99");
    p.n = 0;
    put_int(&p, 1, -5);
    put_int(&p, 2, 1);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "negdim.pb", &t, NULL), "negative");
    p.n = 0;
    put_int(&p, 1, INT64_C(1) << 40);
    put_int(&p, 1, INT64_C(1) << 40);
    put_int(&p, 2, 1);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "hugedim.pb", &t, NULL), "hugedim.pb");
    p.n = 0;
    put_int(&p, 1, 2);
    put_int(&p, 2, 7);
    int64_t one[2] = {1, 2};
    put_packed(&p, 5, one, 2); /* int32_data for an i64 tensor */
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "wrongfield.pb", &t, NULL), "int64_data");
    p.n = 0;
    put_int(&p, 1, 4);
    put_int(&p, 2, 1);
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "nodata.pb", &t, NULL), "has no data");
    p.n = 0;
    put_int(&p, 2, 1);
    put_key(&p, 9, 2);
    put_varint(&p, 100); /* claims 100 bytes, none follow */
    CHECK_ERR(xc_pb_read_buffer(p.b, p.n, "trunc.pb", &t, NULL), "truncated");
    const uint8_t junk[3] = {0x0f, 0x01, 0x02}; /* wire type 7 */
    CHECK_ERR(xc_pb_read_buffer(junk, 3, "junk.pb", &t, NULL), "invalid protobuf");
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/xc_tensor_io_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_roundtrips();
  test_npy_known_bytes();
  test_npy_variants();
  test_pb_typed_fields();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return xc_test_summary("test_tensor_io");
}
