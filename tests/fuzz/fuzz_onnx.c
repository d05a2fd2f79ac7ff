/* libFuzzer harness: arbitrary bytes as an ONNX model. Imports both ways
 * (strict, and keeping unknown ops so deeper code runs); must never crash,
 * leak or hang. External data is refused (no folder). */
#include <stddef.h>
#include <stdint.h>

#include "xcomp/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (int lenient = 0; lenient < 2; lenient++) {
    xc_onnx_import_options_t o = {lenient != 0, 0};
    xc_graph_t* g = NULL;
    xc_status_t s = xc_onnx_import_buffer_ex(data, size, "fuzz.onnx", NULL, &o, &g);
    xc_status_free(s);
    xc_graph_destroy(g);
  }
  return 0;
}
