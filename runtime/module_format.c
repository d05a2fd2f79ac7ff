/* The .xcm file format: serialization and validated parsing of compiled
 * modules (layout in docs/runtime.md). Every length, count and offset read
 * from a file is checked against what remains before it is used; a bad file
 * is a status naming the section and what is wrong, never a crash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "runtime_internal.h"
#include "xcomp/tempdir.h"

enum { HEADER_SIZE = 48 };
/* Sections 1-4 are required; 5 (the compile-cache key), 7 (shape buckets:
 * nested modules) and 6 (the signature, always last) are optional. */
enum { SEC_GRAPH = 1, SEC_WEIGHTS = 2, SEC_PLAN = 3, SEC_KERNELS = 4, NUM_SECTIONS = 4 };
enum { SEC_CACHE_KEY = 5, SEC_SIGNATURE = 6, SEC_BUCKETS = 7, MAX_SECTION_ID = 7 };
enum { MAX_BUCKETS = 64 };
enum { SIGNATURE_SIZE = 32 };
enum { MAX_EXPR_DEPTH = 64 };

static const char* section_name(uint32_t id) {
  switch (id) {
    case SEC_GRAPH: return "graph";
    case SEC_WEIGHTS: return "weights";
    case SEC_PLAN: return "plan";
    case SEC_KERNELS: return "kernels";
    case SEC_CACHE_KEY: return "cache key";
    case SEC_SIGNATURE: return "signature";
    case SEC_BUCKETS: return "shape buckets";
    default: return "unknown";
  }
}

/* The signature: HMAC-SHA256 over the header's first 24 bytes (magic,
 * version, header size, payload size) and the payload up to the signature
 * section, which is the last thing in the file. The checksum is left out: it
 * covers the signature. */
static void sign_prefix(const uint8_t* key, size_t key_size, const uint8_t* file, size_t sig_offset,
                        uint8_t out[SIGNATURE_SIZE]) {
  xc_byte_span_t parts[2] = {{file, 24}, {file + HEADER_SIZE, sig_offset}};
  xc_hmac_sha256(key, key_size, parts, 2, out);
}

/* ---- writer ---------------------------------------------------------------- */

typedef struct {
  uint8_t* data;
  size_t len, cap;
  bool oom;
} wbuf_t;

static void w_bytes(wbuf_t* w, const void* p, size_t n) {
  if (w->oom) return;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n) cap *= 2;
    uint8_t* d = realloc(w->data, cap);
    if (!d) {
      w->oom = true;
      return;
    }
    w->data = d;
    w->cap = cap;
  }
  if (n) memcpy(w->data + w->len, p, n);
  w->len += n;
}
static void w_u8(wbuf_t* w, uint8_t v) { w_bytes(w, &v, 1); }
static void w_u32(wbuf_t* w, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 4);
}
static void w_u64(wbuf_t* w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 8);
}
static void w_str(wbuf_t* w, const char* s) {
  size_t n = s ? strlen(s) : 0;
  w_u32(w, (uint32_t)n);
  w_bytes(w, s, n);
}
static void put_u64_at(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void w_expr(wbuf_t* w, const xc_symexpr_t* e) {
  w_u8(w, (uint8_t)e->kind);
  switch (e->kind) {
    case XC_SYM_CONST: w_u64(w, (uint64_t)e->value); break;
    case XC_SYM_VAR: w_str(w, e->name); break;
    default:
      w_expr(w, e->a);
      w_expr(w, e->b);
  }
}
static void w_dim(wbuf_t* w, xc_dim_t d) {
  if (!d.sym) {
    w_u8(w, 0);
    w_u64(w, (uint64_t)d.value);
  } else {
    w_u8(w, 1);
    w_expr(w, d.sym);
  }
}

static void write_plan(wbuf_t* w, const xc_compiled_module_t* m) {
  w_u32(w, (uint32_t)m->num_values);
  for (int i = 0; i < m->num_values; i++) {
    const xc_cm_value_t* v = &m->values[i];
    w_str(w, v->name);
    w_u32(w, (uint32_t)v->dtype);
    w_u32(w, v->flags);
    w_u32(w, (uint32_t)v->rank);
    for (int d = 0; d < v->rank; d++) w_dim(w, v->dims[d]);
  }
  w_u32(w, (uint32_t)m->num_inputs);
  for (int i = 0; i < m->num_inputs; i++) w_u32(w, (uint32_t)m->inputs[i]);
  w_u32(w, (uint32_t)m->num_outputs);
  for (int i = 0; i < m->num_outputs; i++) w_u32(w, (uint32_t)m->outputs[i]);
  w_u32(w, (uint32_t)m->num_steps);
  for (int i = 0; i < m->num_steps; i++) {
    const xc_cm_step_t* s = &m->steps[i];
    w_u32(w, (uint32_t)s->kind);
    if (s->kind == XC_CM_STEP_ALIAS) {
      w_str(w, m->values[s->alias_dst].name);
      w_str(w, m->values[s->alias_src].name);
      continue;
    }
    w_u32(w, (uint32_t)s->kernel);
    w_u32(w, (uint32_t)s->num_params);
    for (int p = 0; p < s->num_params; p++) {
      const xc_cm_param_t* prm = &s->params[p];
      if (prm->value >= 0) {
        w_u8(w, 1);
        w_str(w, m->values[prm->value].name);
        w_u32(w, (uint32_t)prm->role);
      } else {
        w_u8(w, 0);
        w_dim(w, prm->dim);
      }
    }
    w_u32(w, (uint32_t)s->num_knobs);
    for (int k = 0; k < s->num_knobs; k++) w_u64(w, (uint64_t)s->knobs[k]);
  }
}

static void write_kernels(wbuf_t* w, const xc_compiled_module_t* m) {
  w_u32(w, (uint32_t)m->num_kernels);
  for (int i = 0; i < m->num_kernels; i++) {
    const xc_cm_kernel_t* k = &m->kernels[i];
    w_str(w, k->name);
    w_str(w, k->entry);
    w_str(w, k->blob.format);
    w_u8(w, k->blob.options ? 1 : 0);
    if (k->blob.options) w_str(w, k->blob.options);
    w_u64(w, (uint64_t)k->blob.size);
    w_bytes(w, k->blob.bytes, k->blob.size);
    w_str(w, k->tiled_text);
  }
}

/* Section 7: the symbol, its range, whether smaller sizes pad, why not,
 * then each bucket's size and its module as a whole module file. */
static xc_status_t write_buckets(wbuf_t* w, const xc_cm_buckets_t* b) {
  w_str(w, b->symbol);
  w_u64(w, (uint64_t)b->min);
  w_u64(w, (uint64_t)b->max);
  w_u32(w, b->pad_ok ? 1u : 0u);
  w_str(w, b->pad_note);
  w_u32(w, (uint32_t)b->num);
  for (int i = 0; i < b->num; i++) {
    uint8_t* bytes = NULL;
    size_t size = 0;
    XC_RETURN_IF_ERROR(xc_compiled_module_serialize(b->items[i].module, &bytes, &size));
    w_u64(w, (uint64_t)b->items[i].size);
    w_u64(w, (uint64_t)size);
    w_bytes(w, bytes, size);
    free(bytes);
  }
  return NULL;
}

/* A module's file as a list of byte spans in file order: the header with the
 * metadata and the section table, then each section after its padding. The
 * graph and weights spans are the module's own buffers (m->graph_text,
 * m->weights), so writing a file copies no weight byte; the other sections
 * are built here and owned. */
typedef struct {
  wbuf_t head; /* header (checksum filled in last), metadata, section table */
  wbuf_t sec[MAX_SECTION_ID];
  xc_byte_span_t parts[1 + 2 * MAX_SECTION_ID];
  int num_parts;
  size_t size;
} image_t;

static void image_free(image_t* im) {
  free(im->head.data);
  for (int i = 0; i < MAX_SECTION_ID; i++) free(im->sec[i].data);
}

static xc_status_t image_build(const xc_compiled_module_t* m, image_t* im) {
  memset(im, 0, sizeof *im);
  uint8_t* key = NULL;
  size_t key_size = 0;
  XC_RETURN_IF_ERROR(xc_module_key_load(&key, &key_size));
  /* Sections: the four required ones, the cache key when the module has
   * one, the shape buckets when it has them, and the signature last (it
   * covers every byte before it). */
  wbuf_t* sec = im->sec;
  xc_byte_span_t data[MAX_SECTION_ID];
  uint32_t ids[MAX_SECTION_ID];
  bool borrowed[MAX_SECTION_ID] = {false}; /* the module's own bytes, not a copy */
  int nsec = 0;
  ids[nsec] = SEC_GRAPH;
  borrowed[nsec] = true;
  data[nsec++] = (xc_byte_span_t){m->graph_text, m->graph_text_size};
  ids[nsec] = SEC_WEIGHTS;
  borrowed[nsec] = true;
  data[nsec++] = (xc_byte_span_t){m->weights, m->weights_size};
  ids[nsec] = SEC_PLAN;
  write_plan(&sec[nsec++], m);
  ids[nsec] = SEC_KERNELS;
  write_kernels(&sec[nsec++], m);
  if (m->has_cache_key) {
    ids[nsec] = SEC_CACHE_KEY;
    w_u64(&sec[nsec], m->cache_key.lo);
    w_u64(&sec[nsec++], m->cache_key.hi);
  }
  xc_status_t bst = NULL;
  if (m->buckets) {
    ids[nsec] = SEC_BUCKETS;
    bst = write_buckets(&sec[nsec++], m->buckets);
  }
  if (key) {
    static const uint8_t blank[SIGNATURE_SIZE];
    ids[nsec] = SEC_SIGNATURE;
    w_bytes(&sec[nsec++], blank, sizeof blank);
  }
  bool oom = false;
  for (int i = 0; i < nsec; i++)
    if (!borrowed[i]) {
      data[i] = (xc_byte_span_t){sec[i].data, sec[i].len};
      oom |= sec[i].oom;
    }
  if (bst || oom) {
    free(key);
    image_free(im);
    return bst ? bst : xc_error_oom();
  }

  wbuf_t* w = &im->head;
  uint8_t header[HEADER_SIZE];
  memset(header, 0, sizeof header);
  w_bytes(w, header, sizeof header);
  w_str(w, m->xcomp_version);
  w_str(w, m->target);
  w_str(w, m->device_name);
  w_u64(w, m->caps_fingerprint.lo);
  w_u64(w, m->caps_fingerprint.hi);
  w_u32(w, m->flags);
  w_u32(w, (uint32_t)nsec);
  /* Section table, then the sections, each 64-byte aligned in the payload. */
  size_t offset = w->len - HEADER_SIZE + (size_t)nsec * 24;
  size_t pads[MAX_SECTION_ID];
  for (int i = 0; i < nsec; i++) {
    size_t at = (offset + 63) & ~(size_t)63;
    pads[i] = at - offset;
    w_u32(w, ids[i]);
    w_u32(w, 0);
    w_u64(w, (uint64_t)at);
    w_u64(w, (uint64_t)data[i].size);
    offset = at + data[i].size;
  }
  if (w->oom) {
    free(key);
    image_free(im);
    return xc_error_oom();
  }
  static const uint8_t zeros[64];
  im->parts[im->num_parts++] = (xc_byte_span_t){w->data, w->len};
  for (int i = 0; i < nsec; i++) {
    if (pads[i]) im->parts[im->num_parts++] = (xc_byte_span_t){zeros, pads[i]};
    im->parts[im->num_parts++] = data[i];
  }
  size_t payload = offset;
  im->size = HEADER_SIZE + payload;
  uint8_t* h = w->data;
  memcpy(h, XC_CM_MAGIC, 8);
  for (int i = 0; i < 4; i++) h[8 + i] = (uint8_t)(XC_CM_FORMAT_VERSION >> (8 * i));
  for (int i = 0; i < 4; i++) h[12 + i] = (uint8_t)((uint32_t)HEADER_SIZE >> (8 * i));
  put_u64_at(h + 16, (uint64_t)payload);
  if (key) {
    /* The HMAC covers the header's first 24 bytes and the payload before the
     * signature, which is the last part (sign_prefix on the whole file). */
    xc_byte_span_t signed_parts[1 + 2 * MAX_SECTION_ID];
    int n = 0;
    signed_parts[n++] = (xc_byte_span_t){h, 24};
    signed_parts[n++] = (xc_byte_span_t){h + HEADER_SIZE, w->len - HEADER_SIZE};
    for (int i = 1; i + 1 < im->num_parts; i++) signed_parts[n++] = im->parts[i];
    xc_hmac_sha256(key, key_size, signed_parts, n, sec[nsec - 1].data);
    free(key);
  }
  /* The checksum: XXH3-128 of the payload, streamed over the parts. */
  XXH3_state_t* st = XXH3_createState();
  if (!st) {
    image_free(im);
    return xc_error_oom();
  }
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, h + HEADER_SIZE, w->len - HEADER_SIZE);
  for (int i = 1; i < im->num_parts; i++) XXH3_128bits_update(st, im->parts[i].data, im->parts[i].size);
  XXH128_hash_t sum = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  put_u64_at(h + 24, sum.low64);
  put_u64_at(h + 32, sum.high64);
  return NULL;
}

xc_status_t xc_compiled_module_serialize(const xc_compiled_module_t* m, uint8_t** out_bytes,
                                         size_t* out_size) {
  *out_bytes = NULL;
  *out_size = 0;
  image_t im;
  XC_RETURN_IF_ERROR(image_build(m, &im));
  uint8_t* bytes = malloc(im.size);
  if (!bytes) {
    image_free(&im);
    return xc_error_oom();
  }
  size_t at = 0;
  for (int i = 0; i < im.num_parts; i++) {
    if (im.parts[i].size) memcpy(bytes + at, im.parts[i].data, im.parts[i].size);
    at += im.parts[i].size;
  }
  image_free(&im);
  *out_bytes = bytes;
  *out_size = at;
  return NULL;
}

/* ---- reader ------------------------------------------------------------------ */

typedef struct {
  const uint8_t* p;
  size_t len, pos;
  const char* what;     /* file name */
  const char* section;  /* section being read */
  xc_status_t err;
} rbuf_t;

static void read_buckets(rbuf_t* r, xc_compiled_module_t* m);

static bool r_fail(rbuf_t* r, const char* msg) {
  if (!r->err)
    r->err = xc_error(XC_DATA_LOSS, "%s: corrupt compiled module: %s section at byte %zu: %s", r->what,
                      r->section, r->pos, msg);
  return false;
}
static bool r_need(rbuf_t* r, size_t n) {
  if (r->err) return false;
  if (n > r->len - r->pos) return r_fail(r, "truncated (a length or count runs past its end)");
  return true;
}
static uint8_t r_u8(rbuf_t* r) {
  if (!r_need(r, 1)) return 0;
  return r->p[r->pos++];
}
static uint32_t r_u32(rbuf_t* r) {
  if (!r_need(r, 4)) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)r->p[r->pos + i] << (8 * i);
  r->pos += 4;
  return v;
}
static uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static uint64_t r_u64(rbuf_t* r) {
  if (!r_need(r, 8)) return 0;
  uint64_t v = get_u64(r->p + r->pos);
  r->pos += 8;
  return v;
}
/* A count of items each at least min_bytes long: refused when the rest of the
 * section could not hold them. */
static int r_count(rbuf_t* r, size_t min_bytes) {
  uint32_t n = r_u32(r);
  if (r->err) return 0;
  if (n > INT32_MAX / 2 || (min_bytes && (size_t)n > (r->len - r->pos) / min_bytes)) {
    r_fail(r, "count larger than the data that follows");
    return 0;
  }
  return (int)n;
}
/* Copies a string into the arena (NUL-terminated). Embedded NULs refused. */
static const char* r_str(rbuf_t* r, xc_arena_t* a) {
  uint32_t n = r_u32(r);
  if (!r_need(r, n)) return NULL;
  if (memchr(r->p + r->pos, 0, n)) {
    r_fail(r, "string holds a NUL byte");
    return NULL;
  }
  char* s = xc_arena_strndup(a, (const char*)r->p + r->pos, n);
  if (!s && !r->err) r->err = xc_error_oom();
  r->pos += n;
  return s;
}
static void r_str_fixed(rbuf_t* r, char* out, size_t cap, const char* field) {
  uint32_t n = r_u32(r);
  if (!r_need(r, n)) return;
  if (n >= cap || memchr(r->p + r->pos, 0, n)) {
    r_fail(r, field);
    return;
  }
  memcpy(out, r->p + r->pos, n);
  out[n] = '\0';
  r->pos += n;
}

static const xc_symexpr_t* r_expr(rbuf_t* r, xc_arena_t* a, int depth) {
  if (depth > MAX_EXPR_DEPTH) {
    r_fail(r, "dim expression nested too deeply");
    return NULL;
  }
  uint8_t kind = r_u8(r);
  if (r->err) return NULL;
  if (kind > XC_SYM_MAX) {
    r_fail(r, "unknown dim expression kind");
    return NULL;
  }
  xc_symexpr_t* e = xc_arena_alloc(a, sizeof *e);
  if (!e) {
    if (!r->err) r->err = xc_error_oom();
    return NULL;
  }
  e->kind = (xc_sym_kind_t)kind;
  if (kind == XC_SYM_CONST) {
    e->value = (int64_t)r_u64(r);
  } else if (kind == XC_SYM_VAR) {
    e->name = r_str(r, a);
    if (e->name && !e->name[0]) r_fail(r, "empty symbol name");
  } else {
    e->a = r_expr(r, a, depth + 1);
    e->b = r_expr(r, a, depth + 1);
  }
  return r->err ? NULL : e;
}
static xc_dim_t r_dim(rbuf_t* r, xc_arena_t* a) {
  xc_dim_t d = {0, NULL};
  uint8_t tag = r_u8(r);
  if (tag == 0) {
    d.value = (int64_t)r_u64(r);
    if (!r->err && d.value < 0) r_fail(r, "negative static dim");
  } else if (tag == 1) {
    d.sym = r_expr(r, a, 0);
  } else {
    r_fail(r, "bad dim tag");
  }
  return d;
}

/* Value names -> indices while a plan is read: open addressing, a power-of-two
 * table at least twice the value count. */
typedef struct {
  int* slots; /* value index + 1; 0 = empty */
  size_t mask;
} name_index_t;

static uint64_t name_hash(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Returns the index of name, or -1; with add >= 0 inserts it when absent. */
static int name_index_find(name_index_t* ix, const xc_compiled_module_t* m, const char* name, int add) {
  if (!name || !ix->slots) return -1;
  for (size_t i = (size_t)name_hash(name) & ix->mask;; i = (i + 1) & ix->mask) {
    int v = ix->slots[i] - 1;
    if (v < 0) {
      if (add >= 0) ix->slots[i] = add + 1;
      return -1;
    }
    if (strcmp(m->values[v].name, name) == 0) return v;
  }
}

static int r_value_ref(rbuf_t* r, xc_compiled_module_t* m, name_index_t* ix) {
  const char* name = r_str(r, m->arena);
  if (r->err) return -1;
  int v = name_index_find(ix, m, name, -1);
  if (v < 0) r_fail(r, "a step names a value missing from the value table");
  return v;
}

static void read_plan(rbuf_t* r, xc_compiled_module_t* m) {
  xc_arena_t* a = m->arena;
  m->num_values = r_count(r, 16);
  name_index_t ix = {NULL, 0};
  size_t cap = 16;
  while (cap < 2 * (size_t)m->num_values + 2) cap *= 2;
  ix.slots = xc_arena_alloc(a, cap * sizeof *ix.slots);
  ix.mask = cap - 1;
  if (!ix.slots && !r->err) r->err = xc_error_oom();
  m->values = calloc((size_t)m->num_values + 1, sizeof *m->values);
  if (!m->values) {
    m->num_values = 0;
    if (!r->err) r->err = xc_error_oom();
  }
  for (int i = 0; i < m->num_values && !r->err; i++) {
    xc_cm_value_t* v = &m->values[i];
    v->name = r_str(r, a);
    uint32_t dt = r_u32(r);
    v->flags = r_u32(r);
    uint32_t rank = r_u32(r);
    if (r->err) break;
    if (dt == XC_DTYPE_UNDEFINED || dt >= XC_DTYPE_COUNT) r_fail(r, "unknown dtype of a value");
    else if (rank > XC_MAX_RANK) r_fail(r, "value rank above the limit");
    else if (v->flags & ~15u) r_fail(r, "unknown value flags");
    else if (!v->name || name_index_find(&ix, m, v->name, i) >= 0) r_fail(r, "duplicate value name");
    if (r->err) break;
    v->dtype = (xc_dtype_t)dt;
    v->rank = (int)rank;
    v->dims = xc_arena_alloc(a, sizeof *v->dims * (rank + 1));
    if (!v->dims) {
      r->err = xc_error_oom();
      break;
    }
    for (uint32_t d = 0; d < rank; d++) v->dims[d] = r_dim(r, a);
  }
  for (int pass = 0; pass < 2 && !r->err; pass++) {
    int n = r_count(r, 4);
    int* idx = xc_arena_alloc(a, sizeof(int) * (size_t)(n + 1));
    if (!idx) {
      r->err = r->err ? r->err : xc_error_oom();
      break;
    }
    for (int i = 0; i < n && !r->err; i++) {
      uint32_t v = r_u32(r);
      if (!r->err && v >= (uint32_t)m->num_values) r_fail(r, "graph input/output index out of range");
      idx[i] = (int)v;
    }
    if (pass == 0) {
      m->num_inputs = n;
      m->inputs = idx;
    } else {
      m->num_outputs = n;
      m->outputs = idx;
    }
  }
  m->num_steps = r_count(r, 4);
  m->steps = xc_arena_alloc(a, sizeof *m->steps * (size_t)(m->num_steps + 1));
  if (!m->steps && !r->err) r->err = xc_error_oom();
  for (int i = 0; i < m->num_steps && !r->err; i++) {
    xc_cm_step_t* s = &m->steps[i];
    uint32_t kind = r_u32(r);
    if (r->err) break;
    if (kind == XC_CM_STEP_ALIAS) {
      s->kind = XC_CM_STEP_ALIAS;
      s->alias_dst = r_value_ref(r, m, &ix);
      s->alias_src = r_value_ref(r, m, &ix);
      continue;
    }
    if (kind != XC_CM_STEP_KERNEL) {
      r_fail(r, "unknown step kind");
      break;
    }
    s->kind = XC_CM_STEP_KERNEL;
    s->kernel = (int)r_u32(r);
    s->num_params = r_count(r, 2);
    s->params = xc_arena_alloc(a, sizeof *s->params * (size_t)(s->num_params + 1));
    if (!s->params && !r->err) r->err = xc_error_oom();
    for (int p = 0; p < s->num_params && !r->err; p++) {
      uint8_t is_buffer = r_u8(r);
      if (is_buffer == 1) {
        s->params[p].value = r_value_ref(r, m, &ix);
        s->params[p].role = (int)r_u32(r);
        if (!r->err && (s->params[p].role < XC_ROLE_IN || s->params[p].role > XC_ROLE_INOUT))
          r_fail(r, "bad buffer role");
      } else if (is_buffer == 0) {
        s->params[p].value = -1;
        s->params[p].dim = r_dim(r, a);
      } else {
        r_fail(r, "bad parameter tag");
      }
    }
    s->num_knobs = r_count(r, 8);
    s->knobs = xc_arena_alloc(a, sizeof(int64_t) * (size_t)(s->num_knobs + 1));
    if (!s->knobs && !r->err) r->err = xc_error_oom();
    for (int k = 0; k < s->num_knobs && !r->err; k++) s->knobs[k] = (int64_t)r_u64(r);
  }
  if (!r->err && r->pos != r->len) r_fail(r, "trailing bytes");
}

static void read_kernels(rbuf_t* r, xc_compiled_module_t* m) {
  m->num_kernels = r_count(r, 24);
  m->kernels = calloc((size_t)m->num_kernels + 1, sizeof *m->kernels);
  if (!m->kernels) {
    m->num_kernels = 0;
    if (!r->err) r->err = xc_error_oom();
    return;
  }
  for (int i = 0; i < m->num_kernels && !r->err; i++) {
    xc_cm_kernel_t* k = &m->kernels[i];
    k->name = r_str(r, m->arena);
    r_str_fixed(r, k->entry, sizeof k->entry, "entry point name too long");
    r_str_fixed(r, k->blob.format, sizeof k->blob.format, "blob format name too long");
    uint8_t has_options = r_u8(r);
    if (has_options > 1) r_fail(r, "bad blob options flag");
    if (has_options == 1) {
      const char* o = r_str(r, m->arena);
      if (o) k->blob.options = strdup(o);
      if (o && !k->blob.options) r->err = xc_error_oom();
    }
    uint64_t size = r_u64(r);
    if (r->err) break;
    if (size > r->len - r->pos) {
      r_fail(r, "kernel blob runs past the section end");
      break;
    }
    k->blob.bytes = malloc(size ? (size_t)size : 1);
    if (!k->blob.bytes) {
      r->err = xc_error_oom();
      break;
    }
    memcpy(k->blob.bytes, r->p + r->pos, (size_t)size);
    k->blob.size = (size_t)size;
    r->pos += (size_t)size;
    k->tiled_text = r_str(r, m->arena);
    if (!r->err && (!k->entry[0] || !k->blob.format[0])) r_fail(r, "kernel without entry point or blob format");
  }
  if (!r->err && r->pos != r->len) r_fail(r, "trailing bytes");
}

xc_status_t xc_compiled_module_deserialize(const uint8_t* bytes, size_t size, const char* what,
                                           xc_compiled_module_t** out) {
  *out = NULL;
  if (!what) what = "compiled module";
  if (size < 8 || memcmp(bytes, XC_CM_MAGIC, 8) != 0)
    return xc_error(XC_DATA_LOSS, "%s: not a compiled xcomp module (no %s magic at byte 0)", what,
                    XC_CM_MAGIC);
  if (size < HEADER_SIZE)
    return xc_error(XC_DATA_LOSS, "%s: truncated compiled module: %zu bytes, the header alone is %d",
                    what, size, HEADER_SIZE);
  uint32_t version = 0, header = 0;
  for (int i = 0; i < 4; i++) version |= (uint32_t)bytes[8 + i] << (8 * i);
  for (int i = 0; i < 4; i++) header |= (uint32_t)bytes[12 + i] << (8 * i);
  if (version != XC_CM_FORMAT_VERSION)
    return xc_error(XC_UNSUPPORTED,
                    "%s: compiled module format version %u, this xcomp reads version %u "
                    "(recompile the model with 'xcomp compile')",
                    what, version, XC_CM_FORMAT_VERSION);
  if (header != HEADER_SIZE)
    return xc_error(XC_DATA_LOSS, "%s: corrupt compiled module: header size %u, expected %d", what, header,
                    HEADER_SIZE);
  uint64_t payload = get_u64(bytes + 16);
  if (payload != size - HEADER_SIZE)
    return xc_error(XC_DATA_LOSS,
                    "%s: %s compiled module: the header announces %llu payload bytes, the file has %zu",
                    what, payload > size - HEADER_SIZE ? "truncated" : "corrupt (trailing bytes in)",
                    (unsigned long long)payload, size - HEADER_SIZE);
  xc_hash128_t want = {get_u64(bytes + 24), get_u64(bytes + 32)};
  xc_hash128_t got = xc_hash128(bytes + HEADER_SIZE, (size_t)payload);
  if (want.lo != got.lo || want.hi != got.hi || get_u64(bytes + 40) != 0)
    return xc_error(XC_DATA_LOSS, "%s: corrupt compiled module: checksum mismatch (XXH3-128 of the payload)",
                    what);

  xc_compiled_module_t* m = calloc(1, sizeof *m);
  if (!m) return xc_error_oom();
  m->arena = xc_arena_create();
  if (!m->arena) {
    free(m);
    return xc_error_oom();
  }
  rbuf_t r = {bytes + HEADER_SIZE, (size_t)payload, 0, what, "module header", NULL};
  r_str_fixed(&r, m->xcomp_version, sizeof m->xcomp_version, "xcomp version string too long");
  r_str_fixed(&r, m->target, sizeof m->target, "target name too long");
  r_str_fixed(&r, m->device_name, sizeof m->device_name, "device name too long");
  m->caps_fingerprint.lo = r_u64(&r);
  m->caps_fingerprint.hi = r_u64(&r);
  m->flags = r_u32(&r);
  if (!r.err && (m->flags & ~XC_CM_ARCH_ONLY)) r_fail(&r, "unknown module flags");
  int nsec = r_count(&r, 24);
  size_t sec_off[MAX_SECTION_ID + 1] = {0}, sec_len[MAX_SECTION_ID + 1] = {0};
  bool seen[MAX_SECTION_ID + 1] = {false};
  for (int i = 0; i < nsec && !r.err; i++) {
    uint32_t id = r_u32(&r);
    r_u32(&r);
    uint64_t off = r_u64(&r), len = r_u64(&r);
    if (r.err) break;
    if (off > payload || len > payload - off) {
      r_fail(&r, "a section lies outside the file");
      break;
    }
    if (id >= 1 && id <= MAX_SECTION_ID) {
      if (seen[id]) {
        r_fail(&r, "a section appears twice");
        break;
      }
      seen[id] = true;
      sec_off[id] = (size_t)off;
      sec_len[id] = (size_t)len;
    }
  }
  for (uint32_t id = 1; id <= NUM_SECTIONS && !r.err; id++)
    if (!seen[id]) {
      r.err = xc_error(XC_DATA_LOSS, "%s: corrupt compiled module: no %s section", what, section_name(id));
    }
  if (!r.err && !m->target[0]) r_fail(&r, "empty target name");
  if (!r.err && seen[SEC_CACHE_KEY]) {
    if (sec_len[SEC_CACHE_KEY] != 16) {
      r_fail(&r, "the cache key section is not 16 bytes");
    } else {
      m->has_cache_key = true;
      m->cache_key.lo = get_u64(bytes + HEADER_SIZE + sec_off[SEC_CACHE_KEY]);
      m->cache_key.hi = get_u64(bytes + HEADER_SIZE + sec_off[SEC_CACHE_KEY] + 8);
    }
  }
  if (!r.err && seen[SEC_SIGNATURE] &&
      (sec_len[SEC_SIGNATURE] != SIGNATURE_SIZE || sec_off[SEC_SIGNATURE] + SIGNATURE_SIZE != payload))
    r_fail(&r, "the signature section is not the last 32 bytes of the file");
  if (!r.err) {
    /* Before anything of the payload is interpreted: with a key set, only a
     * module signed with that key goes on. */
    uint8_t* key = NULL;
    size_t key_size = 0;
    r.err = xc_module_key_load(&key, &key_size);
    if (!r.err && key) {
      if (!seen[SEC_SIGNATURE]) {
        r.err = xc_error(XC_DATA_LOSS,
                         "%s: the module is not signed and a module signing key is set "
                         "(XCOMP_MODULE_KEY / XCOMP_MODULE_KEY_FILE); refusing to load it",
                         what);
      } else {
        uint8_t want_sig[SIGNATURE_SIZE];
        sign_prefix(key, key_size, bytes, sec_off[SEC_SIGNATURE], want_sig);
        if (!xc_digest_equal(want_sig, bytes + HEADER_SIZE + sec_off[SEC_SIGNATURE], SIGNATURE_SIZE))
          r.err = xc_error(XC_DATA_LOSS,
                           "%s: bad module signature: the module was not signed with the key set in "
                           "XCOMP_MODULE_KEY / XCOMP_MODULE_KEY_FILE (or was changed after signing); "
                           "refusing to load it",
                           what);
        else
          m->signature_verified = true;
      }
    }
    free(key);
  }
  if (!r.err) {
    m->graph_text = malloc(sec_len[SEC_GRAPH] + 1);
    m->weights = malloc(sec_len[SEC_WEIGHTS] + 1);
    if (!m->graph_text || !m->weights) {
      r.err = xc_error_oom();
    } else {
      memcpy(m->graph_text, bytes + HEADER_SIZE + sec_off[SEC_GRAPH], sec_len[SEC_GRAPH]);
      m->graph_text[sec_len[SEC_GRAPH]] = '\0';
      m->graph_text_size = sec_len[SEC_GRAPH];
      memcpy(m->weights, bytes + HEADER_SIZE + sec_off[SEC_WEIGHTS], sec_len[SEC_WEIGHTS]);
      m->weights_size = sec_len[SEC_WEIGHTS];
    }
  }
  if (!r.err) {
    rbuf_t s = {bytes + HEADER_SIZE + sec_off[SEC_PLAN], sec_len[SEC_PLAN], 0, what, "plan", NULL};
    read_plan(&s, m);
    r.err = s.err;
  }
  if (!r.err) {
    rbuf_t s = {bytes + HEADER_SIZE + sec_off[SEC_KERNELS], sec_len[SEC_KERNELS], 0, what, "kernels", NULL};
    read_kernels(&s, m);
    r.err = s.err;
  }
  if (!r.err && seen[SEC_BUCKETS]) {
    rbuf_t s = {bytes + HEADER_SIZE + sec_off[SEC_BUCKETS], sec_len[SEC_BUCKETS], 0, what, "shape buckets", NULL};
    read_buckets(&s, m);
    r.err = s.err;
  }
  xc_status_t st = r.err;
  if (!st) st = xc_cm_link(m, what);
  if (st) {
    xc_compiled_module_destroy(m);
    return st;
  }
  *out = m;
  return NULL;
}

static void read_buckets(rbuf_t* r, xc_compiled_module_t* m) {
  xc_cm_buckets_t* b = calloc(1, sizeof *b);
  if (!b) {
    r->err = xc_error_oom();
    return;
  }
  m->buckets = b;
  r_str_fixed(r, b->symbol, sizeof b->symbol, "symbol name too long");
  b->min = (int64_t)r_u64(r);
  b->max = (int64_t)r_u64(r);
  uint32_t flags = r_u32(r);
  r_str_fixed(r, b->pad_note, sizeof b->pad_note, "note too long");
  int n = r_count(r, 16);
  if (r->err) return;
  if (flags > 1 || !b->symbol[0] || b->min < 1 || b->max < b->min || n < 1 || n > MAX_BUCKETS) {
    r_fail(r, "bad bucket header");
    return;
  }
  b->pad_ok = flags == 1;
  b->items = calloc((size_t)n, sizeof *b->items);
  if (!b->items) {
    r->err = xc_error_oom();
    return;
  }
  for (int i = 0; i < n && !r->err; i++) {
    int64_t size = (int64_t)r_u64(r);
    uint64_t len = r_u64(r);
    if (r->err) return;
    if (size < b->min || size > b->max || (i && size <= b->items[i - 1].size)) {
      r_fail(r, "bucket sizes out of range or not ascending");
      return;
    }
    if (!r_need(r, (size_t)len)) return;
    char what[300];
    snprintf(what, sizeof what, "%s (bucket %s=%lld)", r->what, b->symbol, (long long)size);
    xc_status_t st = xc_compiled_module_deserialize(r->p + r->pos, (size_t)len, what, &b->items[i].module);
    if (st) {
      r->err = st;
      return;
    }
    if (b->items[i].module->buckets || strcmp(b->items[i].module->target, m->target) != 0) {
      xc_compiled_module_destroy(b->items[i].module);
      b->items[i].module = NULL;
      r_fail(r, "a bucket's module is for another target or has buckets itself");
      return;
    }
    b->items[i].size = size;
    b->num = i + 1;
    r->pos += (size_t)len;
  }
}

/* ---- files ------------------------------------------------------------------- */

xc_status_t xc_read_file_bytes(const char* path, uint8_t** out_bytes, size_t* out_size) {
  *out_bytes = NULL;
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return xc_error(errno == ENOENT ? XC_NOT_FOUND : XC_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is not a regular file", path);
  }
  size_t size = (size_t)st.st_size;
  uint8_t* data = malloc(size ? size : 1);
  if (!data) {
    fclose(f);
    return xc_error(XC_RESOURCE_EXHAUSTED, "'%s': cannot allocate %zu bytes", path, size);
  }
  size_t got = size ? fread(data, 1, size, f) : 0;
  fclose(f);
  if (got != size) {
    free(data);
    return xc_error(XC_IO, "cannot read '%s'", path);
  }
  *out_bytes = data;
  *out_size = size;
  return NULL;
}

xc_status_t xc_write_file_atomic(const char* path, const void* bytes, size_t size) {
  return xc_write_file_atomic_mode(path, bytes, size, 0644);
}

/* Writes the concatenation of parts to a temp file next to path, then
 * renames it over path. */
static xc_status_t write_parts_atomic(const char* path, const xc_byte_span_t* parts, int num_parts, unsigned mode) {
  size_t n = strlen(path);
  char* tmp = malloc(n + 16);
  if (!tmp) return xc_error_oom();
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  int tracked = fd >= 0 ? xc_temp_track(tmp) : -1; /* removed if a signal ends the process now */
  if (fd < 0) {
    xc_status_t s = xc_error(XC_IO, "cannot create a temp file next to '%s': %s", path, strerror(errno));
    free(tmp);
    return s;
  }
  bool ok = true;
  for (int i = 0; ok && i < num_parts; i++) {
    const uint8_t* p = parts[i].data;
    size_t left = parts[i].size;
    while (left > 0) {
      ssize_t w = write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      p += w;
      left -= (size_t)w;
    }
  }
  (void)fchmod(fd, (mode_t)mode);
  if (close(fd) != 0) ok = false;
  if (!ok || rename(tmp, path) != 0) {
    xc_status_t s = xc_error(XC_IO, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    xc_temp_forget(tracked);
    free(tmp);
    return s;
  }
  xc_temp_forget(tracked);
  free(tmp);
  return NULL;
}

xc_status_t xc_write_file_atomic_mode(const char* path, const void* bytes, size_t size, unsigned mode) {
  xc_byte_span_t part = {bytes, size};
  return write_parts_atomic(path, &part, 1, mode);
}

xc_status_t xc_compiled_module_write(const xc_compiled_module_t* m, const char* path) {
  return xc_compiled_module_write_mode(m, path, 0644);
}

/* Streams the module's parts into the file: the weights go from the module's
 * buffer to the file with no copy in between. */
xc_status_t xc_compiled_module_write_mode(const xc_compiled_module_t* m, const char* path, unsigned mode) {
  image_t im;
  XC_RETURN_IF_ERROR(image_build(m, &im));
  xc_status_t s = write_parts_atomic(path, im.parts, im.num_parts, mode);
  image_free(&im);
  return s;
}

xc_status_t xc_compiled_module_read(const char* path, xc_compiled_module_t** out) {
  *out = NULL;
  uint8_t* bytes;
  size_t size;
  XC_RETURN_IF_ERROR(xc_read_file_bytes(path, &bytes, &size));
  xc_status_t s = xc_compiled_module_deserialize(bytes, size, path, out);
  free(bytes);
  return s;
}
