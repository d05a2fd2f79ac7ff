/* Reads the op types of an ONNX model straight from the protobuf wire format.
 *
 * The conformance report groups tests by op, including tests whose model the
 * importer rejects (unknown op, unsupported dtype) and tests that crash, so
 * the op names must come from somewhere other than the importer. This walks
 * only ModelProto.graph (field 7) -> GraphProto.node (field 1) ->
 * NodeProto.op_type (field 4), and the element type of the first graph input
 * (or output), with every length checked against the buffer; anything
 * malformed simply yields NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/conformance.h"

typedef struct {
  const unsigned char* p;
  const unsigned char* end;
} reader_t;

static bool read_varint(reader_t* r, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return false;
    unsigned char b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* Reads one field header; for length-delimited fields *sub is the payload,
 * for varints sub->p is NULL and *varint holds the value. */
static bool next_field(reader_t* r, int* field, int* wire, reader_t* sub, uint64_t* varint) {
  uint64_t key;
  if (!read_varint(r, &key)) return false;
  *field = (int)(key >> 3);
  *wire = (int)(key & 7);
  uint64_t skip = 0;
  switch (*wire) {
    case 0: return read_varint(r, varint);
    case 1: skip = 8; break;
    case 5: skip = 4; break;
    case 2:
      if (!read_varint(r, &skip)) return false;
      if (skip > (uint64_t)(r->end - r->p)) return false;
      sub->p = r->p;
      sub->end = r->p + skip;
      r->p += skip;
      return true;
    default: return false;
  }
  if (skip > (uint64_t)(r->end - r->p)) return false;
  r->p += skip;
  return true;
}

typedef struct {
  char* buf;
  size_t len, cap;
  int count;
} oplist_t;

static bool oplist_add(oplist_t* l, const unsigned char* s, size_t n) {
  if (n == 0 || n > 200) return true;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= ' ' || s[i] > '~') return true; /* not a plausible op name */
  /* Distinct names only. */
  size_t pos = 0;
  while (pos < l->len) {
    char* sp = memchr(l->buf + pos, ' ', l->len - pos);
    size_t wl = sp ? (size_t)(sp - (l->buf + pos)) : l->len - pos;
    if (wl == n && memcmp(l->buf + pos, s, n) == 0) return true;
    pos += wl + 1;
  }
  size_t need = l->len + n + 2;
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    while (cap < need) cap *= 2;
    char* nb = realloc(l->buf, cap);
    if (!nb) return false;
    l->buf = nb;
    l->cap = cap;
  }
  if (l->len) l->buf[l->len++] = ' ';
  memcpy(l->buf + l->len, s, n);
  l->len += n;
  l->buf[l->len] = '\0';
  return true;
}

/* ValueInfoProto.type (2) -> TypeProto.tensor_type (1) -> elem_type (1). */
static int64_t value_info_elem_type(reader_t vi) {
  int field, wire;
  uint64_t v = 0;
  reader_t sub;
  while (vi.p < vi.end) {
    if (!next_field(&vi, &field, &wire, &sub, &v)) return -1;
    if (field != 2 || wire != 2) continue;
    reader_t type = sub;
    while (type.p < type.end) {
      if (!next_field(&type, &field, &wire, &sub, &v)) return -1;
      if (field != 1 || wire != 2) continue;
      reader_t tensor = sub;
      while (tensor.p < tensor.end) {
        if (!next_field(&tensor, &field, &wire, &sub, &v)) return -1;
        if (field == 1 && wire == 0) return (int64_t)(v & 0x7fffffff);
      }
    }
  }
  return -1;
}

char* xc_conform_scan_ops(const char* model_path, int* out_num_nodes, xc_dtype_t* out_dtype) {
  *out_num_nodes = 0;
  *out_dtype = XC_DTYPE_UNDEFINED;
  FILE* f = fopen(model_path, "rb");
  if (!f) return NULL;
  unsigned char* data = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? cap * 2 : 65536;
      if (cap > ((size_t)1 << 31)) break; /* absurd for a test model */
      unsigned char* nd = realloc(data, cap);
      if (!nd) break;
      data = nd;
    }
    size_t got = fread(data + size, 1, cap - size, f);
    size += got;
    if (got == 0) break;
  }
  fclose(f);
  if (!data) return NULL;
  oplist_t ops = {0};
  bool ok = true;
  reader_t model = {data, data + size}, sub;
  int field, wire;
  uint64_t varint;
  int64_t input_type = -1, output_type = -1;
  while (ok && model.p < model.end) {
    if (!next_field(&model, &field, &wire, &sub, &varint)) {
      ok = false;
      break;
    }
    if (field != 7 || wire != 2) continue;
    reader_t graph = sub, node;
    while (ok && graph.p < graph.end) {
      if (!next_field(&graph, &field, &wire, &node, &varint)) {
        ok = false;
        break;
      }
      /* GraphProto.input (11) and .output (12): the first typed one of each. */
      if (field == 11 && wire == 2 && input_type < 0) input_type = value_info_elem_type(node);
      if (field == 12 && wire == 2 && output_type < 0) output_type = value_info_elem_type(node);
      if (field != 1 || wire != 2) continue;
      (*out_num_nodes)++;
      reader_t nr = node, str;
      while (ok && nr.p < nr.end) {
        if (!next_field(&nr, &field, &wire, &str, &varint)) {
          ok = false;
          break;
        }
        if (field == 4 && wire == 2)
          ok = oplist_add(&ops, str.p, (size_t)(str.end - str.p));
      }
    }
  }
  free(data);
  if (ok) {
    int64_t t = input_type >= 0 ? input_type : output_type;
    if (t >= 0 && t <= INT32_MAX) *out_dtype = xc_dtype_from_onnx((int32_t)t);
  }
  if (!ok || !ops.buf) {
    free(ops.buf);
    if (!ok) *out_num_nodes = 0;
    return ok ? calloc(1, 1) : NULL;
  }
  return ops.buf;
}
