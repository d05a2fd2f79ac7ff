/* Internals of the op-level suite: the graph builder the generators use and
 * the generator table (opsuite_gen.c), shared with the runner (opsuite.c). */
#ifndef XCOMP_OPSUITE_INTERNAL_H
#define XCOMP_OPSUITE_INTERNAL_H

#include "xcomp/graph.h"
#include "xcomp/opsuite.h"

#define GB_MAX_INPUTS 8

/* A case under construction. Errors stick in err; later calls do nothing. */
typedef struct gb {
  xc_graph_t* g;
  uint64_t rng;
  xc_dtype_t dt;          /* the case's dtype (main input) */
  uint32_t dtypes;        /* dtypes the run asked for (Cast targets) */
  const char* op;         /* op under test (generic generators) */
  const char* domain;     /* its domain ("" for ONNX) */
  bool same_shape;        /* generic binary: the op takes no broadcasting */
  char name[512];
  size_t len;
  int num_inputs;
  xc_tensor_t* inputs[GB_MAX_INPUTS];
  int num_values;
  xc_status_t err;
} gb_t;

typedef void (*gb_fn)(gb_t* b, int k);

typedef struct os_gen {
  const char* label;   /* op name, or "A+B+C" for fused chains */
  const char* op;      /* registry op whose dtypes apply; NULL: `dtypes` */
  uint32_t dtypes;     /* used when op is NULL, or to narrow the registry's */
  gb_fn fn;
} os_gen_t;

/* The specific generators (NULL-terminated), and the generic ones. */
extern const os_gen_t os_generators[];
void os_gen_unary(gb_t* b, int k);
void os_gen_binary(gb_t* b, int k);

/* Seeds the builder; creates the graph. */
xc_status_t gb_begin(gb_t* b, uint64_t seed, xc_dtype_t dt, const char* op);
/* Infers the graph; on success the builder's graph and inputs are the case. */
xc_status_t gb_finish(gb_t* b);
void gb_free(gb_t* b);

#endif
