/* libFuzzer harness for the .xir parser: any bytes must either parse into a
 * graph (which must then print and parse again) or give an error status;
 * never a crash, a hang or a leak. Side files resolve inside a directory that
 * does not exist, so runs do not depend on the machine's files.
 *
 * The library itself must be built with coverage instrumentation for the
 * fuzzer to see into the parser (XCOMP_FUZZ alone instruments only this file):
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DXCOMP_FUZZ=ON \
 *         -DXCOMP_SANITIZE=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
 *   cmake --build build-fuzz --target fuzz_xir
 *   mkdir -p /tmp/xir-corpus && cp tests/fuzz/corpus/xir/* /tmp/xir-corpus/
 *   build-fuzz/fuzz_xir -max_len=4096 /tmp/xir-corpus */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"
#include "xcomp/xir.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_xir_parse((const char*)data, size, "fuzz.xir",
                               "/nonexistent-xcomp-fuzz-dir", &g);
  if (s) {
    xc_status_free(s);
    return 0;
  }
  /* Whatever parses must print, and the print must parse back. */
  char* text = NULL;
  s = xc_xir_print_string(g, NULL, &text);
  if (!s) {
    xc_graph_t* g2 = NULL;
    s = xc_xir_parse(text, strlen(text), "fuzz-print.xir", NULL, &g2);
    if (s) abort(); /* the printer wrote something the parser rejects */
    xc_graph_destroy(g2);
  }
  xc_status_free(s);
  free(text);
  xc_graph_destroy(g);
  return 0;
}
