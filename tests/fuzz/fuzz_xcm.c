/* libFuzzer harness for the compiled-module (.xcm) reader. The XXH3 checksum
 * would stop almost every mutation at the door, so the harness recomputes
 * the header's payload size and checksum of every input before reading it:
 * the fuzzer reaches the section table, the plan, the kernels' tiled IR, the
 * graph text and the plan/graph/kernel consistency checks
 * (runtime/module_check.c). Any bytes must either read into a module (which
 * must then write and read back, and plan memory for a static binding) or
 * give an error status; never a crash, a hang or a leak. Kernel blobs are
 * never loaded: they are native code.
 *
 * Seeds: tests/fuzz/corpus/xcm (modules with their blobs cut to the ELF
 * header, tests/tools/xcm_edit strip-blobs) and tests/bad-input/xcm.
 *   tools/fuzz.sh build-fuzz 60 2     (or `make fuzz`) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/module.h"
#include "xcomp/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerInitialize(int* argc, char*** argv);

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  unsetenv("XCOMP_MODULE_KEY"); /* signatures would refuse every mutation */
  unsetenv("XCOMP_MODULE_KEY_FILE");
  return 0;
}

static void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* bytes = malloc(size ? size : 1);
  if (!bytes) return 0;
  if (size) memcpy(bytes, data, size);
  if (size >= 48) {
    put_u64(bytes + 16, (uint64_t)(size - 48));
    xc_hash128_t h = xc_hash128(bytes + 48, size - 48);
    put_u64(bytes + 24, h.lo);
    put_u64(bytes + 32, h.hi);
  }
  xc_compiled_module_t* m = NULL;
  xc_status_t s = xc_compiled_module_deserialize(bytes, size, "fuzz.xcm", &m);
  free(bytes);
  if (s) {
    xc_status_free(s);
    return 0;
  }
  /* What reads must write, and the writing must read back. */
  uint8_t* again = NULL;
  size_t again_size = 0;
  s = xc_compiled_module_serialize(m, &again, &again_size);
  if (!s) {
    xc_compiled_module_t* m2 = NULL;
    s = xc_compiled_module_deserialize(again, again_size, "fuzz-again.xcm", &m2);
    if (s) abort(); /* the writer wrote something the reader rejects */
    xc_compiled_module_destroy(m2);
  }
  xc_status_free(s);
  free(again);
  /* The memory plan for the empty binding (symbols stay unbound: an error). */
  xc_symbind_t none;
  xc_symbind_init(&none);
  xc_memplan_t plan;
  s = xc_memplan_build(m, &none, &plan);
  if (!s) xc_memplan_free(&plan);
  xc_status_free(s);
  xc_symbind_free(&none);
  xc_compiled_module_destroy(m);
  return 0;
}
