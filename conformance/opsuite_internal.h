/* Internals of the op-level suite: the graph builder the generators use
 * (opsuite_builder.c), the generators (opsuite_gen_elementwise.c,
 * opsuite_gen_nn.c, opsuite_gen_shape.c) and their table (opsuite_gen.c),
 * shared with the runner (opsuite.c). */
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

/* ---- the builder (opsuite_builder.c) ---- */

/* Sizes the suite draws: odd and prime sizes that break tile multiples,
 * and a few powers of two. */
extern const int64_t gb_sizes_small[9];
extern const int64_t gb_sizes_all[11];
#define PICK(b, arr) ((arr)[gb_rnd((b), (int)(sizeof(arr) / sizeof((arr)[0])))])

static inline bool is_int(xc_dtype_t t) { return (XC_DT(t) & XC_DT_INT) != 0; }
static inline bool is_unsigned(xc_dtype_t t) { return (XC_DT(t) & XC_DT_UINT) != 0; }

/* Where an input's values are drawn (fill, opsuite_builder.c). */
typedef struct {
  double lo, hi;
  double grid;
  bool avoid_zero; /* values in [lo, hi] with a random sign */
} range_t;

static inline range_t R(double lo, double hi) {
  range_t r = {lo, hi, 0, false};
  return r;
}

int gb_rnd(gb_t* b, int n);
double gb_unif(gb_t* b, double lo, double hi);
bool gb_coin(gb_t* b);
void gb_rand_shape(gb_t* b, int r, int64_t cap, int64_t* dims);
void gb_name_add(gb_t* b, const char* fmt, ...) XC_PRINTF(2, 3);
void gb_name_shape(gb_t* b, int r, const int64_t* d);
void gb_name_ints(gb_t* b, const char* key, int n, const int64_t* v);
void gb_keep_err(gb_t* b, xc_status_t s);
char* gb_fresh_name(gb_t* b, const char* base);
xc_value_t* gb_in_r(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, range_t range);
xc_value_t* gb_in(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi);
xc_value_t* gb_weight(gb_t* b, xc_dtype_t dt, int r, const int64_t* dims, double lo, double hi);
xc_value_t* gb_ints_r(gb_t* b, int n, const int64_t* vals, bool scalar);
xc_value_t* gb_ints(gb_t* b, int n, const int64_t* vals);
xc_value_t* gb_scalar(gb_t* b, xc_dtype_t dt, double val);
xc_node_t* gb_node_n(gb_t* b, const char* op, const char* domain, int nin, xc_value_t* const* ins, int nout,
                     xc_value_t** outs);
xc_node_t* gb_node(gb_t* b, const char* op, int nin, xc_value_t* const* ins, xc_value_t** out);
void gb_set_i(gb_t* b, xc_node_t* n, const char* k, int64_t v);
void gb_set_f(gb_t* b, xc_node_t* n, const char* k, double v);
void gb_set_s(gb_t* b, xc_node_t* n, const char* k, const char* v);
void gb_set_is(gb_t* b, xc_node_t* n, const char* k, int c, const int64_t* v);
void gb_out(gb_t* b, xc_value_t* v);
void gb_name_head(gb_t* b, const char* label);

/* ---- elementwise generators (opsuite_gen_elementwise.c) ---- */

range_t gb_range_for(const char* op, xc_dtype_t dt);
int gb_bshape(int kind, int r, const int64_t* d, int64_t* a, int* ra, int64_t* o, int* ro);
void os_gen_variadic(gb_t* b, int k);
void os_gen_where(gb_t* b, int k);
void os_gen_clip(gb_t* b, int k);
void os_gen_cast(gb_t* b, int k);
void os_gen_bitshift(gb_t* b, int k);

/* ---- reductions, matrix, convolution, normalization, fused chains (opsuite_gen_nn.c) ---- */

void os_gen_reduce(gb_t* b, int k);
void os_gen_argreduce(gb_t* b, int k);
void os_gen_softmax(gb_t* b, int k);
void os_gen_cumsum(gb_t* b, int k);
void os_gen_topk(gb_t* b, int k);
void os_gen_matmul(gb_t* b, int k);
void os_gen_gemm(gb_t* b, int k);
void os_gen_conv(gb_t* b, int k);
void os_gen_conv_relu(gb_t* b, int k);
void os_gen_convtranspose(gb_t* b, int k);
void os_gen_pool(gb_t* b, int k);
void os_gen_global_pool(gb_t* b, int k);
void os_gen_layernorm(gb_t* b, int k);
void os_gen_chan_norm(gb_t* b, int k);
void os_gen_lpnorm(gb_t* b, int k);
void os_gen_loss(gb_t* b, int k);
void os_gen_lppool(gb_t* b, int k);
void os_gen_matmul_bias_gelu(gb_t* b, int k);
void os_gen_add_layernorm(gb_t* b, int k);
void os_gen_attention_chain(gb_t* b, int k);
void os_gen_attention_op(gb_t* b, int k);
void os_gen_ew_chain(gb_t* b, int k);

/* ---- data movement (opsuite_gen_shape.c) ---- */

void os_gen_transpose(gb_t* b, int k);
void os_gen_concat(gb_t* b, int k);
void os_gen_split(gb_t* b, int k);
void os_gen_slice(gb_t* b, int k);
void os_gen_gather(gb_t* b, int k);
void os_gen_expand(gb_t* b, int k);
void os_gen_pad(gb_t* b, int k);
void os_gen_reshape_chain(gb_t* b, int k);
void os_gen_tile(gb_t* b, int k);
void os_gen_trilu(gb_t* b, int k);
xc_value_t* gb_index_tensor(gb_t* b, int r, const int64_t* dims, int64_t (*fn)(gb_t*, int64_t, void*),
                            void* ctx);
void os_gen_space_depth(gb_t* b, int k);
void os_gen_gather_elements(gb_t* b, int k);
void os_gen_gather_nd(gb_t* b, int k);
void os_gen_scatter_elements(gb_t* b, int k);
void os_gen_scatter_nd(gb_t* b, int k);
void os_gen_unsqueeze_squeeze(gb_t* b, int k);
void os_gen_onehot(gb_t* b, int k);
void os_gen_eyelike(gb_t* b, int k);
void os_gen_quantize(gb_t* b, int k);
void os_gen_dequantize(gb_t* b, int k);
void os_gen_resize(gb_t* b, int k);

#endif
