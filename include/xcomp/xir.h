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
/* xc_xir_parse with one side file held in memory: file("side_name") reads
 * side[0, side_size) (no other side file is opened). With borrow, large
 * constants point into side instead of being copied (bool ones, which are
 * normalized, are still copied): side must then stay unchanged and outlive
 * the graph (the compiled module's weights section and its graph). */
xc_status_t xc_xir_parse_with_side(const char* text, size_t len, const char* filename, const char* side_name,
                                   const uint8_t* side, size_t side_size, bool borrow, xc_graph_t** out);

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
/* Prints with the constants larger than o->inline_limit written to a side
 * file held in memory, named side_name in the text (o->side_file is
 * ignored): *out_text and *out_side (*out_side_size bytes, each constant at
 * a multiple of 64) are malloc'd, caller frees both. The constants' bytes
 * are copied once, into a buffer sized before printing: how a compiled
 * module's weights section is made. */
xc_status_t xc_xir_print_with_side(const xc_graph_t* g, const xc_xir_print_options_t* o, const char* side_name,
                                   char** out_text, uint8_t** out_side, size_t* out_side_size);

#ifdef __cplusplus
}
#endif
#endif
