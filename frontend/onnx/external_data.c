/* ONNX external tensor data: TensorProto.external_data names a file relative
 * to the model's folder plus an optional offset and length. Paths are
 * confined to that folder (no absolute paths, no "..", no symlinks leading
 * out), ranges are checked against the file size, and each file is mapped
 * once so large weights are used in place without a copy. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

typedef struct mapped_file {
  char* real_path;
  uint8_t* base;  /* NULL for an empty file */
  size_t size;
} mapped_file_t;

struct xc_onnx_extdata {
  char* base_dir;       /* NULL: external data is refused */
  char* real_base;
  int count, cap;
  mapped_file_t* files;
};

xc_status_t xc_onnx_extdata_open(const char* base_dir, xc_onnx_extdata_t** out) {
  *out = NULL;
  xc_onnx_extdata_t* x = calloc(1, sizeof *x);
  if (!x) return xc_error_oom();
  if (base_dir) {
    x->base_dir = strdup(*base_dir ? base_dir : ".");
    if (!x->base_dir) {
      free(x);
      return xc_error_oom();
    }
  }
  *out = x;
  return NULL;
}

static void unmap_file(void* arg) {
  mapped_file_t* m = arg;
  if (m->base) munmap(m->base, m->size);
  free(m->real_path);
  free(m);
}

void xc_onnx_extdata_close(xc_onnx_extdata_t* x) {
  if (!x) return;
  for (int i = 0; i < x->count; i++) {
    if (x->files[i].base) munmap(x->files[i].base, x->files[i].size);
    free(x->files[i].real_path);
  }
  free(x->files);
  free(x->base_dir);
  free(x->real_base);
  free(x);
}

xc_status_t xc_onnx_extdata_give_to_graph(xc_onnx_extdata_t* x, xc_graph_t* g) {
  xc_status_t s = NULL;
  for (int i = 0; i < x->count; i++) {
    mapped_file_t* m = malloc(sizeof *m);
    if (!m) {
      if (!s) s = xc_error_oom();
      continue; /* stays in x, unmapped by close */
    }
    *m = x->files[i];
    x->files[i].base = NULL;
    x->files[i].real_path = NULL;
    xc_status_t e = xc_graph_on_destroy(g, unmap_file, m);
    if (e && !s) s = e; else xc_status_free(e);
  }
  return s;
}

/* Rejects locations that could leave the model's folder by their spelling. */
static xc_status_t check_location(const char* loc, const char* what) {
  if (!*loc) return xc_error(XC_INVALID_ARGUMENT, "%s: external data has an empty location", what);
  if (loc[0] == '/')
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: external data location '%s' is an absolute path", what, loc);
  const char* p = loc;
  while (*p) {
    const char* e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return xc_error(XC_INVALID_ARGUMENT,
                      "%s: external data location '%s' contains '..'", what, loc);
    p += n;
    if (*p == '/') p++;
  }
  if (strchr(loc, '\\'))
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: external data location '%s' contains a backslash", what, loc);
  return NULL;
}

static xc_status_t map_file(xc_onnx_extdata_t* x, const char* loc, const char* what,
                            mapped_file_t** out) {
  if (!x || !x->base_dir)
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: external data '%s' but the model's folder is unknown", what, loc);
  XC_RETURN_IF_ERROR(check_location(loc, what));
  if (!x->real_base) {
    x->real_base = realpath(x->base_dir, NULL);
    if (!x->real_base)
      return xc_error(XC_NOT_FOUND, "%s: model folder '%s': %s", what, x->base_dir,
                      strerror(errno));
  }
  size_t blen = strlen(x->base_dir), llen = strlen(loc);
  char* joined = malloc(blen + llen + 2);
  if (!joined) return xc_error_oom();
  memcpy(joined, x->base_dir, blen);
  joined[blen] = '/';
  memcpy(joined + blen + 1, loc, llen + 1);
  char* real = realpath(joined, NULL);
  if (!real) {
    xc_status_t s = xc_error(XC_NOT_FOUND, "%s: external data file '%s': %s", what, joined,
                             strerror(errno));
    free(joined);
    return s;
  }
  size_t rb = strlen(x->real_base);
  bool inside = strncmp(real, x->real_base, rb) == 0 &&
                (real[rb] == '/' || (rb == 1 && x->real_base[0] == '/'));
  if (!inside) {
    xc_status_t s = xc_error(XC_INVALID_ARGUMENT,
                             "%s: external data file '%s' resolves outside the model's folder",
                             what, joined);
    free(joined);
    free(real);
    return s;
  }
  free(joined);
  for (int i = 0; i < x->count; i++)
    if (x->files[i].real_path && strcmp(x->files[i].real_path, real) == 0) {
      free(real);
      *out = &x->files[i];
      return NULL;
    }
  /* Non-blocking: a FIFO planted in the folder must not hang the import. */
  int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    xc_status_t s = xc_error(XC_IO, "%s: cannot open external data file '%s': %s", what,
                             loc, strerror(errno));
    free(real);
    return s;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    free(real);
    return xc_error(XC_INVALID_ARGUMENT, "%s: external data '%s' is not a regular file",
                    what, loc);
  }
  uint8_t* base = NULL;
  size_t size = (size_t)st.st_size;
  if (size > 0) {
    /* Private and writable: passes may rewrite constants in place without
     * touching the file. */
    void* m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      xc_status_t s = xc_error(XC_IO, "%s: cannot map external data file '%s': %s", what,
                               loc, strerror(errno));
      close(fd);
      free(real);
      return s;
    }
    base = m;
  }
  close(fd);
  if (x->count == x->cap) {
    int ncap = x->cap ? x->cap * 2 : 4;
    mapped_file_t* nf = realloc(x->files, sizeof *nf * (size_t)ncap);
    if (!nf) {
      if (base) munmap(base, size);
      free(real);
      return xc_error_oom();
    }
    x->files = nf;
    x->cap = ncap;
  }
  mapped_file_t* f = &x->files[x->count++];
  f->real_path = real;
  f->base = base;
  f->size = size;
  *out = f;
  return NULL;
}

/* Non-negative decimal integer, no sign, no spaces, no overflow. */
static bool parse_u63(const char* s, int64_t* out) {
  if (!s || !*s) return false;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (!xc_mul_i64(v, 10, &v) || !xc_add_i64(v, *s - '0', &v)) return false;
  }
  *out = v;
  return true;
}

/* Defined in tensor_proto.c. */
xc_status_t xc_onnx_tensor_external(const Onnx__TensorProto* tp, const char* what,
                                    xc_onnx_extdata_t* ext, xc_dtype_t dtype, int rank,
                                    const int64_t* dims, int64_t nbytes, xc_tensor_t** out);

xc_status_t xc_onnx_tensor_external(const Onnx__TensorProto* tp, const char* what,
                                    xc_onnx_extdata_t* ext, xc_dtype_t dtype, int rank,
                                    const int64_t* dims, int64_t nbytes, xc_tensor_t** out) {
  *out = NULL;
  const char* location = NULL;
  int64_t offset = 0, length = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto* e = tp->external_data[i];
    const char* k = e->key ? e->key : "";
    const char* v = e->value ? e->value : "";
    if (strcmp(k, "location") == 0) {
      location = v;
    } else if (strcmp(k, "offset") == 0) {
      if (!parse_u63(v, &offset))
        return xc_error(XC_INVALID_ARGUMENT, "%s: bad external data offset '%s'", what, v);
    } else if (strcmp(k, "length") == 0) {
      if (!parse_u63(v, &length))
        return xc_error(XC_INVALID_ARGUMENT, "%s: bad external data length '%s'", what, v);
    } /* "checksum" and unknown keys are informational */
  }
  if (!location)
    return xc_error(XC_INVALID_ARGUMENT, "%s: external data without a location", what);
  mapped_file_t* f = NULL;
  XC_RETURN_IF_ERROR(map_file(ext, location, what, &f));
  if ((uint64_t)offset > f->size)
    return xc_error(XC_OUT_OF_RANGE,
                    "%s: external data offset %lld is past the end of '%s' (%zu bytes)", what,
                    (long long)offset, location, f->size);
  int64_t avail = (int64_t)(f->size - (size_t)offset);
  if (length < 0) length = avail;
  if (length > avail)
    return xc_error(XC_OUT_OF_RANGE,
                    "%s: external data range [%lld, +%lld) exceeds '%s' (%zu bytes)", what,
                    (long long)offset, (long long)length, location, f->size);
  if (length != nbytes)
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: external data holds %lld bytes, its shape needs %lld", what,
                    (long long)length, (long long)nbytes);
  if (nbytes == 0) return xc_tensor_create(dtype, rank, dims, out);
  uint8_t* p = f->base + offset;
  size_t esize = xc_dtype_size(dtype);
  if ((uintptr_t)p % esize == 0) return xc_tensor_wrap(dtype, rank, dims, p, out);
  /* Misaligned for its element type: copy. */
  XC_RETURN_IF_ERROR(xc_tensor_create(dtype, rank, dims, out));
  memcpy((*out)->data, p, (size_t)nbytes);
  return NULL;
}
