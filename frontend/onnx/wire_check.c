/* A pre-pass over protobuf wire format, run before protobuf-c unpacks a file:
 * protobuf-c recurses once per nested message, so a crafted file with deep
 * nesting (graph -> node -> attribute -> graph -> ...) could exhaust the stack.
 * This walk follows the schema's descriptors, rejects malformed framing with
 * a message naming the input, and bounds the nesting depth. */
#include "onnx_internal.h"

typedef struct wire_reader {
  const uint8_t* p;
  const uint8_t* end;
} wire_reader_t;

static bool read_varint(wire_reader_t* r, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return false;
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

static xc_status_t check_message(const ProtobufCMessageDescriptor* desc,
                                 const uint8_t* data, size_t size, int depth,
                                 const char* what) {
  if (depth > XC_ONNX_MAX_NESTING)
    return xc_error(XC_INVALID_ARGUMENT, "%s: messages nested more than %d deep",
                    what, XC_ONNX_MAX_NESTING);
  wire_reader_t r = {data, data + size};
  while (r.p < r.end) {
    uint64_t key;
    if (!read_varint(&r, &key))
      return xc_error(XC_DATA_LOSS, "%s: truncated or invalid protobuf (bad field key)",
                      what);
    uint64_t number = key >> 3;
    unsigned wire = (unsigned)(key & 7);
    if (number == 0 || number > 536870911u)
      return xc_error(XC_INVALID_ARGUMENT, "%s: invalid protobuf field number %llu", what,
                      (unsigned long long)number);
    uint64_t v;
    switch (wire) {
      case 0:
        if (!read_varint(&r, &v))
          return xc_error(XC_DATA_LOSS, "%s: truncated protobuf varint", what);
        break;
      case 1:
        if (r.end - r.p < 8) return xc_error(XC_DATA_LOSS, "%s: truncated protobuf", what);
        r.p += 8;
        break;
      case 5:
        if (r.end - r.p < 4) return xc_error(XC_DATA_LOSS, "%s: truncated protobuf", what);
        r.p += 4;
        break;
      case 2: {
        if (!read_varint(&r, &v) || v > (uint64_t)(r.end - r.p))
          return xc_error(XC_DATA_LOSS,
                          "%s: truncated protobuf (field %llu claims more bytes than remain)",
                          what, (unsigned long long)number);
        const ProtobufCFieldDescriptor* f =
            desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)number) : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
          XC_RETURN_IF_ERROR(check_message(f->descriptor, r.p, (size_t)v, depth + 1, what));
        r.p += v;
        break;
      }
      default:
        return xc_error(XC_INVALID_ARGUMENT,
                        "%s: invalid protobuf (wire type %u of field %llu)", what, wire,
                        (unsigned long long)number);
    }
  }
  return NULL;
}

xc_status_t xc_onnx_check_wire(const ProtobufCMessageDescriptor* desc,
                               const uint8_t* data, size_t size, const char* what) {
  return check_message(desc, data, size, 0, what);
}
