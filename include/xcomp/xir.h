/* xcomp .xir text format: parser and printer. The grammar is documented in
 * docs/ir.md. Printing a parsed graph gives its canonical form; parsing the
 * canonical form again gives the same graph. */
#ifndef XCOMP_XIR_H
#define XCOMP_XIR_H

#include <stdio.h>

#include "xcomp/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses text (len bytes, need not be NUL-terminated). `filename` is used in
 * messages (file:line:col) and provenance; side files for large constants are
 * resolved relative to `base_dir` (may be NULL = current directory). The
 * result is verified but not shape-inferred. Caller owns *out. */
xc_status_t xc_xir_parse(const char* text, size_t len, const char* filename,
                         const char* base_dir, xc_graph_t** out);
xc_status_t xc_xir_parse_file(const char* path, xc_graph_t** out);

typedef struct xc_xir_print_options {
  /* Constants with more elements than this are written to a side file (when
   * side_file is set) instead of inline. */
  int64_t inline_limit;
  const char* side_file;  /* path to write large constants to, or NULL: all inline */
  bool show_provenance;   /* print provenance comments / labels */
} xc_xir_print_options_t;

void xc_xir_print_options_init(xc_xir_print_options_t* o);
xc_status_t xc_xir_print(const xc_graph_t* g, const xc_xir_print_options_t* o,
                         FILE* f);
/* Prints into a malloc'd NUL-terminated string (caller frees). */
xc_status_t xc_xir_print_string(const xc_graph_t* g,
                                const xc_xir_print_options_t* o, char** out);

#ifdef __cplusplus
}
#endif
#endif
