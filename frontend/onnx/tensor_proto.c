/* ONNX TensorProto <-> xcomp tensor, and the .pb tensor file reader/writer.
 *
 * Reading accepts raw_data (little-endian, fixed width) and every typed
 * field the ONNX schema defines for the dtype: float_data (f32), double_data
 * (f64), int64_data (i64), uint64_data (u32, u64) and int32_data (i32, i16,
 * i8, u16, u8, bool, and the bit patterns of f16, bf16 and fp8). Element
 * counts must match the shape exactly. Writing always uses raw_data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "xcomp/tensor_io.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor files are read in place: little-endian hosts only"
#endif

const char* xc_onnx_type_name(int32_t t) {
  static const char* names[] = {
      "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
      "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2",
      "FLOAT6E2M3", "FLOAT6E3M2"};
  if (t >= 0 && t < (int32_t)(sizeof names / sizeof names[0])) return names[t];
  return "unknown";
}

xc_status_t xc_onnx_tensor_external(const Onnx__TensorProto* tp, const char* what,
                                    xc_onnx_extdata_t* ext, xc_dtype_t dtype, int rank,
                                    const int64_t* dims, int64_t nbytes, xc_tensor_t** out);

/* Range of values int32_data may hold for a dtype stored there. */
static bool int32_field_range(xc_dtype_t t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case XC_I8: *lo = -128; *hi = 127; return true;
    case XC_I16: *lo = -32768; *hi = 32767; return true;
    case XC_I32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case XC_U8: case XC_F8E4M3FN: case XC_F8E5M2: *lo = 0; *hi = 255; return true;
    case XC_U16: case XC_F16: case XC_BF16: *lo = 0; *hi = 65535; return true;
    case XC_BOOL: *lo = 0; *hi = 1; return true;
    default: return false;
  }
}

static xc_status_t count_mismatch(const char* what, const char* field, size_t got,
                                  int64_t want) {
  return xc_error(XC_INVALID_ARGUMENT, "%s: %s has %zu elements, its shape needs %lld", what,
                  field, got, (long long)want);
}

xc_status_t xc_onnx_tensor_from_proto(Onnx__TensorProto* tp, const char* what,
                                      xc_onnx_extdata_t* ext, xc_tensor_t** out) {
  *out = NULL;
  if (!tp->has_data_type || tp->data_type == 0)
    return xc_error(XC_INVALID_ARGUMENT, "%s: tensor has no data type", what);
  xc_dtype_t dt = xc_dtype_from_onnx(tp->data_type);
  if (dt == XC_DTYPE_UNDEFINED)
    return xc_error(XC_UNSUPPORTED, "%s: unsupported data type %d (%s)", what,
                    (int)tp->data_type, xc_onnx_type_name(tp->data_type));
  if (tp->n_dims > XC_MAX_RANK)
    return xc_error(XC_UNSUPPORTED, "%s: rank %zu exceeds the maximum %d", what, tp->n_dims,
                    XC_MAX_RANK);
  int rank = (int)tp->n_dims;
  int64_t numel;
  xc_status_t s = xc_shape_numel(rank, tp->dims, dt, &numel);
  if (s) return xc_status_annotate(s, "%s", what);
  if (tp->segment)
    return xc_error(XC_UNSUPPORTED,
                    "%s: segmented tensors are not supported (or this is a sequence, map or "
                    "optional value, which xcomp does not support)", what);
  size_t esize = xc_dtype_size(dt);
  int64_t nbytes = numel * (int64_t)esize; /* checked by xc_shape_numel */

  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if (tp->has_raw_data)
      return xc_error(XC_INVALID_ARGUMENT, "%s: both external and raw data", what);
    return xc_onnx_tensor_external(tp, what, ext, dt, rank, tp->dims, nbytes, out);
  }
  if (tp->n_external_data)
    return xc_error(XC_INVALID_ARGUMENT,
                    "%s: external_data given but data_location is not EXTERNAL", what);

  /* Which typed field carries the data for this dtype. */
  size_t n_float = tp->n_float_data, n_i32 = tp->n_int32_data, n_i64 = tp->n_int64_data,
         n_f64 = tp->n_double_data, n_u64 = tp->n_uint64_data;
  size_t typed_total = n_float + n_i32 + n_i64 + n_f64 + n_u64 + tp->n_string_data;
  if (tp->n_string_data)
    return xc_error(XC_UNSUPPORTED, "%s: string tensors are not supported", what);

  if (tp->has_raw_data) {
    if (typed_total)
      return xc_error(XC_INVALID_ARGUMENT, "%s: both raw_data and a typed data field", what);
    if ((int64_t)tp->raw_data.len != nbytes)
      return xc_error(XC_INVALID_ARGUMENT,
                      "%s: raw_data holds %zu bytes; %lld %s elements need %lld", what,
                      tp->raw_data.len, (long long)numel, xc_dtype_name(dt), (long long)nbytes);
    if (nbytes == 0) return xc_tensor_create(dt, rank, tp->dims, out);
    /* Take over protobuf-c's malloc'd copy of the bytes (malloc alignment
     * suits every dtype): no second copy of large weights. */
    XC_RETURN_IF_ERROR(xc_tensor_wrap(dt, rank, tp->dims, tp->raw_data.data, out));
    (*out)->owns_data = true;
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
    if (dt == XC_BOOL) {
      uint8_t* b = (*out)->data;
      for (int64_t i = 0; i < numel; i++) b[i] = b[i] != 0;
    }
    return NULL;
  }

  const char* field;
  size_t have;
  switch (dt) {
    case XC_F32: field = "float_data"; have = n_float; break;
    case XC_F64: field = "double_data"; have = n_f64; break;
    case XC_I64: field = "int64_data"; have = n_i64; break;
    case XC_U32: case XC_U64: field = "uint64_data"; have = n_u64; break;
    default: field = "int32_data"; have = n_i32; break;
  }
  if (typed_total != have)
    return xc_error(XC_INVALID_ARGUMENT, "%s: a %s tensor must keep its data in %s or raw_data",
                    what, xc_dtype_name(dt), field);
  if (have == 0 && numel > 0)
    return xc_error(XC_INVALID_ARGUMENT, "%s: tensor %s[%lld elements] has no data", what,
                    xc_dtype_name(dt), (long long)numel);
  if ((int64_t)have != numel) return count_mismatch(what, field, have, numel);

  XC_RETURN_IF_ERROR(xc_tensor_create(dt, rank, tp->dims, out));
  xc_tensor_t* t = *out;
  switch (dt) {
    case XC_F32:
      if (numel) memcpy(t->data, tp->float_data, (size_t)nbytes);
      return NULL;
    case XC_F64:
      if (numel) memcpy(t->data, tp->double_data, (size_t)nbytes);
      return NULL;
    case XC_I64:
      if (numel) memcpy(t->data, tp->int64_data, (size_t)nbytes);
      return NULL;
    case XC_U64:
      if (numel) memcpy(t->data, tp->uint64_data, (size_t)nbytes);
      return NULL;
    case XC_U32:
      for (int64_t i = 0; i < numel; i++) {
        if (tp->uint64_data[i] > UINT32_MAX) goto out_of_range;
        ((uint32_t*)t->data)[i] = (uint32_t)tp->uint64_data[i];
      }
      return NULL;
    default: {
      int64_t lo, hi;
      if (!int32_field_range(dt, &lo, &hi)) {
        xc_tensor_destroy(t);
        *out = NULL;
        return xc_error(XC_INTERNAL, "%s: no int32_data layout for %s", what, xc_dtype_name(dt));
      }
      for (int64_t i = 0; i < numel; i++) {
        int64_t v = tp->int32_data[i];
        /* Bit patterns written as signed 16-bit values are accepted too. */
        if ((dt == XC_F16 || dt == XC_BF16 || dt == XC_U16) && v < 0 && v >= -32768) v += 65536;
        if (v < lo || v > hi) goto out_of_range;
        switch (esize) {
          case 1: ((uint8_t*)t->data)[i] = (uint8_t)v; break;
          case 2: ((uint16_t*)t->data)[i] = (uint16_t)v; break;
          default: ((int32_t*)t->data)[i] = (int32_t)v; break;
        }
      }
      return NULL;
    }
  }
out_of_range:
  xc_tensor_destroy(t);
  *out = NULL;
  return xc_error(XC_OUT_OF_RANGE, "%s: %s value out of range for %s", what, field,
                  xc_dtype_name(dt));
}

xc_status_t xc_onnx_tensor_to_proto(const xc_tensor_t* t, const char* name,
                                    Onnx__TensorProto* tp) {
  int32_t ot = xc_dtype_to_onnx(t->dtype);
  if (!ot)
    return xc_error(XC_UNSUPPORTED, "dtype %s has no ONNX equivalent", xc_dtype_name(t->dtype));
  onnx__tensor_proto__init(tp);
  tp->n_dims = (size_t)t->rank;
  tp->dims = (int64_t*)t->dims;
  tp->has_data_type = 1;
  tp->data_type = ot;
  tp->name = (char*)(name ? name : "");
  tp->has_raw_data = 1;
  tp->raw_data.len = xc_tensor_nbytes(t);
  tp->raw_data.data = t->data;
  return NULL;
}

xc_status_t xc_read_whole_file(const char* path, uint8_t** out_data, size_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return xc_error(errno == ENOENT ? XC_NOT_FOUND : XC_IO, "%s: %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return xc_error(XC_IO, "%s: cannot seek", path);
  }
  long len = ftell(f);
  if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return xc_error(XC_IO, "%s: cannot determine the size (not a regular file?)", path);
  }
  if ((int64_t)len > XC_MAX_TENSOR_BYTES) {
    fclose(f);
    return xc_error(XC_RESOURCE_EXHAUSTED, "%s: file too large (%ld bytes)", path, len);
  }
  uint8_t* buf = malloc((size_t)len + 1);
  if (!buf) {
    fclose(f);
    return xc_error(XC_RESOURCE_EXHAUSTED, "%s: cannot allocate %ld bytes", path, len);
  }
  size_t got = fread(buf, 1, (size_t)len, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != (size_t)len) {
    free(buf);
    return xc_error(XC_IO, "%s: read failed", path);
  }
  *out_data = buf;
  *out_size = (size_t)len;
  return NULL;
}

static xc_status_t pb_read_impl(const void* data, size_t size, const char* what,
                                const char* base_dir, xc_tensor_t** out, char** out_name) {
  *out = NULL;
  if (out_name) *out_name = NULL;
  XC_RETURN_IF_ERROR(xc_onnx_check_wire(&onnx__tensor_proto__descriptor, data, size, what));
  Onnx__TensorProto* tp = onnx__tensor_proto__unpack(NULL, size, data);
  if (!tp) return xc_error(XC_INVALID_ARGUMENT, "%s: not a valid TensorProto", what);
  xc_onnx_extdata_t* ext = NULL;
  xc_status_t s = xc_onnx_extdata_open(base_dir, &ext);
  xc_tensor_t* t = NULL;
  if (!s) {
    const char* nm = tp->name && *tp->name ? tp->name : NULL;
    char label[512];
    if (nm) snprintf(label, sizeof label, "%s: tensor '%s'", what, nm);
    else snprintf(label, sizeof label, "%s", what);
    s = xc_onnx_tensor_from_proto(tp, label, ext, &t);
  }
  /* A tensor pointing into a mapping must outlive it: copy. */
  if (!s && t && !t->owns_data && t->data) {
    xc_tensor_t* c;
    s = xc_tensor_clone(t, &c);
    xc_tensor_destroy(t);
    t = s ? NULL : c;
  }
  if (!s && out_name) {
    *out_name = strdup(tp->name ? tp->name : "");
    if (!*out_name) s = xc_error_oom();
  }
  xc_onnx_extdata_close(ext);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (s) {
    xc_tensor_destroy(t);
    if (out_name) {
      free(*out_name);
      *out_name = NULL;
    }
    return s;
  }
  *out = t;
  return NULL;
}

xc_status_t xc_pb_read_buffer(const void* data, size_t size, const char* what,
                              xc_tensor_t** out, char** out_name) {
  return pb_read_impl(data, size, what ? what : "<buffer>", NULL, out, out_name);
}

xc_status_t xc_pb_read(const char* path, xc_tensor_t** out, char** out_name) {
  *out = NULL;
  if (out_name) *out_name = NULL;
  uint8_t* data;
  size_t size;
  XC_RETURN_IF_ERROR(xc_read_whole_file(path, &data, &size));
  char* dir = strdup(path);
  if (!dir) {
    free(data);
    return xc_error_oom();
  }
  char* slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  xc_status_t s = pb_read_impl(data, size, path, dir, out, out_name);
  free(dir);
  free(data);
  return s;
}

xc_status_t xc_pb_write(const char* path, const xc_tensor_t* t, const char* name) {
  Onnx__TensorProto tp;
  xc_status_t s = xc_onnx_tensor_to_proto(t, name, &tp);
  if (s) return xc_status_annotate(s, "%s", path);
  size_t n = onnx__tensor_proto__get_packed_size(&tp);
  uint8_t* buf = malloc(n ? n : 1);
  if (!buf) return xc_error_oom();
  onnx__tensor_proto__pack(&tp, buf);
  FILE* f = fopen(path, "wb");
  if (!f) {
    free(buf);
    return xc_error(XC_IO, "%s: %s", path, strerror(errno));
  }
  bool ok = fwrite(buf, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  free(buf);
  return ok ? NULL : xc_error(XC_IO, "%s: write failed", path);
}
