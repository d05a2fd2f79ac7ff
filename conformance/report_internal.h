/* Pieces of the conformance reports shared by runner.c (the per-run
 * reports) and kit.c (the kit's reports); not a public interface. */
#ifndef XCOMP_CONFORMANCE_REPORT_INTERNAL_H
#define XCOMP_CONFORMANCE_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

/* Writes s as the text of one markdown table cell: '|' escaped, newlines
 * as spaces, at most max characters (then "..."). s may be NULL. */
void xc_conform_md_cell(FILE* f, const char* s, size_t max);

#endif
