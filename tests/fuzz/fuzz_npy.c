/* libFuzzer harness: arbitrary bytes as a .npy file; a tensor that loads
 * must be fully readable. */
#include <stddef.h>
#include <stdint.h>

#include "xcomp/tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xc_tensor_t* t = NULL;
  xc_status_t s = xc_npy_read_buffer(data, size, "fuzz.npy", &t);
  if (!s) {
    volatile double sink = 0;
    for (int64_t i = 0; i < t->numel; i++) sink += xc_tensor_get_f64(t, i);
    (void)sink;
  }
  xc_status_free(s);
  xc_tensor_destroy(t);
  return 0;
}
