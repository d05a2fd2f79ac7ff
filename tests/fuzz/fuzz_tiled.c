/* libFuzzer harness for the tiled-IR text parser (the form compiled modules
 * store every kernel in): any bytes must either parse into a verified kernel
 * (which must then print and parse again, and go through the access-bounds
 * analysis of ir/tiled_bounds.c under its default knobs) or give an error
 * status naming file:line:col; never a crash, a hang or a leak.
 *
 * Seeds: tests/fuzz/corpus/tiled (kernels of the repository's models, as
 * `xcomp compile --dump-kernels` writes them).
 *   tools/fuzz.sh build-fuzz 60 2     (or `make fuzz`) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/tiled.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void ignore_access(void* ctx, const xc_tiled_access_t* a) {
  int* n = ctx;
  if (a->bounded && a->lo > a->hi) abort(); /* a bounded range is never empty */
  (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xc_tiled_kernel_t* k = NULL;
  xc_status_t s = xc_tiled_parse((const char*)data, size, "fuzz.tiled", &k);
  if (s) {
    xc_status_free(s);
    return 0;
  }
  char* text = xc_tiled_print_to_string(k);
  if (text) {
    xc_tiled_kernel_t* k2 = NULL;
    s = xc_tiled_parse(text, strlen(text), "fuzz-print.tiled", &k2);
    if (s) abort(); /* the printer wrote something the parser rejects */
    xc_tiled_kernel_destroy(k2);
    free(text);
  }
  int64_t knobs[XC_TILED_MAX_SCHED_KNOBS + 1] = {0};
  for (int i = 0; i < k->num_knobs && i < XC_TILED_MAX_SCHED_KNOBS; i++) knobs[i] = k->knobs[i].default_value;
  int64_t* params = calloc((size_t)k->num_params + 1, sizeof *params);
  if (params && k->num_knobs <= XC_TILED_MAX_SCHED_KNOBS) {
    for (int p = 0; p < k->num_params; p++) params[p] = 7 + p;
    int64_t grid[XC_TILED_MAX_GRID] = {1, 1, 1};
    for (int a = 0; a < k->grid_rank && a < XC_TILED_MAX_GRID; a++) {
      int64_t n = 1;
      xc_status_t g = xc_texpr_eval(k->grid[a], knobs, params, NULL, &n);
      xc_status_free(g);
      grid[a] = g || n < 0 ? 0 : n;
    }
    int n = 0;
    xc_status_free(xc_tiled_accesses(k, knobs, params, grid, ignore_access, &n));
  }
  free(params);
  xc_tiled_kernel_destroy(k);
  return 0;
}
