/* Helpers shared by the pass tests: parse .xir text into an inferred graph,
 * count ops. */
#ifndef XCOMP_TESTS_GRAPH_TEST_UTIL_H
#define XCOMP_TESTS_GRAPH_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

#include "xcomp/graph.h"
#include "xcomp/xir.h"

/* Parses and infers; prints the error and returns NULL on failure. */
static inline xc_graph_t* parse(const char* text) {
  xc_graph_t* g = NULL;
  xc_status_t s = xc_xir_parse(text, strlen(text), "test.xir", NULL, &g);
  if (!s) s = xc_graph_infer(g);
  if (s) {
    fprintf(stderr, "parse: %s\n", xc_status_message(s));
    xc_status_free(s);
    xc_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* Live nodes whose op type is `op`. */
static inline int count_op(const xc_graph_t* g, const char* op) {
  int n = 0;
  for (int i = 0; i < g->num_nodes; i++)
    n += !g->nodes[i]->dead && strcmp(g->nodes[i]->op_type, op) == 0;
  return n;
}

#endif
