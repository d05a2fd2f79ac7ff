/* libFuzzer harness: arbitrary bytes as a TensorProto (.pb) file; a tensor
 * that loads must be fully readable. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "xcomp/tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xc_tensor_t* t = NULL;
  char* name = NULL;
  xc_status_t s = xc_pb_read_buffer(data, size, "fuzz.pb", &t, &name);
  if (!s) {
    volatile double sink = 0;
    for (int64_t i = 0; i < t->numel; i++) sink += xc_tensor_get_f64(t, i);
    (void)sink;
  }
  xc_status_free(s);
  xc_tensor_destroy(t);
  free(name);
  return 0;
}
