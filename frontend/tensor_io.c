/* Tensor files of either kind, chosen by extension. */
#include <string.h>

#include "xcomp/tensor_io.h"

static bool has_suffix(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

xc_status_t xc_tensor_read_file(const char* path, xc_tensor_t** out, char** out_name) {
  *out = NULL;
  if (out_name) *out_name = NULL;
  if (has_suffix(path, ".pb")) return xc_pb_read(path, out, out_name);
  if (has_suffix(path, ".npy")) return xc_npy_read(path, out);
  return xc_error(XC_UNSUPPORTED, "%s: unknown tensor file type (expected .npy or .pb)", path);
}
