/* Loads a model file of any supported kind, chosen by extension. */
#include <string.h>

#include "xcomp/frontend.h"
#include "xcomp/onnx.h"
#include "xcomp/xir.h"

static bool ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

xc_status_t xc_load_model(const char* path, xc_graph_t** out) {
  *out = NULL;
  if (ends_with(path, ".xir")) return xc_xir_parse_file(path, out);
  if (ends_with(path, ".onnx")) return xc_onnx_import_file(path, out);
  return xc_error(XC_UNSUPPORTED, "%s: unknown model format (expected .xir or .onnx)",
                  path);
}
