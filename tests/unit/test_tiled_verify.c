/* Tiled IR checks: builder and verifier errors (dot shapes, store to an input
 * buffer, use before definition, loop-carried types, shared allocation in a
 * loop), knob validity, interpreter out-of-bounds and arithmetic errors, and
 * the printed text form. */
#include "test.h"
#include "xcomp/tiled.h"

typedef xc_tiled_value_t val_t;
typedef xc_tiled_kernel_t kern_t;

static const xc_tiled_expr_t* one(kern_t* k) { return xc_texpr_const(k, 1); }

/* y[i] = x[i] * 2 over one tile of BLOCK elements, masked by n. */
static kern_t* build_scale(void) {
  kern_t* k;
  if (xc_tiled_kernel_create("scale", &k)) return NULL;
  const int64_t cand[] = {4, 8};
  int kb = xc_tiled_add_knob(k, "BLOCK", XC_KNOB_TILE, 2, cand, 4);
  val_t* x = xc_tiled_param_buffer(k, "x", XC_F32, XC_ROLE_IN);
  val_t* y = xc_tiled_param_buffer(k, "y", XC_F32, XC_ROLE_OUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  const xc_tiled_expr_t* g[1] = {
      xc_texpr_binary(k, XC_TEXPR_CEILDIV, xc_texpr_param(k, n), xc_texpr_knob(k, kb))};
  xc_tiled_set_grid(k, 1, g);
  val_t* pid = xc_tiled_program_id(k, 0);
  val_t* start = xc_tiled_binary(k, XC_TOP_MUL, pid, xc_tiled_knob_value(k, kb));
  val_t* lanes = xc_tiled_arange(k, xc_tiled_dim_knob(kb));
  val_t* offs = xc_tiled_binary(k, XC_TOP_ADD, start, lanes);
  val_t* mask = xc_tiled_cmp(k, XC_CMP_LT, offs, n);
  val_t* v = xc_tiled_load(k, x, offs, mask, NULL);
  val_t* r = xc_tiled_binary(k, XC_TOP_MUL, v, xc_tiled_const_f(k, XC_F32, 2.0, 0, NULL));
  xc_tiled_store(k, y, offs, r, mask);
  return k;
}

static void test_printer(void) {
  kern_t* k = build_scale();
  CHECK_OK(xc_tiled_verify(k));
  char* text = xc_tiled_print_to_string(k);
  CHECK_STR(text,
            "kernel @scale {\n"
            "  knob BLOCK: tile in {4, 8} = 4\n"
            "  param %x: memref<global f32 in>\n"
            "  param %y: memref<global f32 out>\n"
            "  param %n: i64\n"
            "  grid [ceildiv(n, BLOCK)]\n"
            "  %3 = program_id 0 : i64\n"
            "  %4 = knob BLOCK : i64\n"
            "  %5 = mul %3, %4 : i64\n"
            "  %6 = arange : i64[BLOCK]\n"
            "  %7 = add %5, %6 : i64[BLOCK]\n"
            "  %8 = cmp lt %7, %n : bool[BLOCK]\n"
            "  %9 = load %x[%7] mask %8 : f32[BLOCK]\n"
            "  %10 = const 2 : f32\n"
            "  %11 = mul %9, %10 : f32[BLOCK]\n"
            "  store %y[%7], %11 mask %8\n"
            "}\n");
  free(text);
  xc_tiled_kernel_destroy(k);
}

static void test_run_scale(void) {
  kern_t* k = build_scale();
  xc_tensor_t *x, *y;
  int64_t d[1] = {10}, small[1] = {9};
  CHECK_OK(xc_tensor_create(XC_F32, 1, d, &x));
  CHECK_OK(xc_tensor_create(XC_F32, 1, d, &y));
  for (int i = 0; i < 10; i++) xc_tensor_set_f64(x, i, i + 0.5);
  xc_tiled_arg_t args[3] = {{x, 0}, {y, 0}, {NULL, 10}};
  const int64_t eight[1] = {8};
  CHECK_OK(xc_tiled_run(k, eight, 3, args));
  for (int i = 0; i < 10; i++) CHECK_NEAR(xc_tensor_get_f64(y, i), 2 * i + 1.0, 0);
  /* n larger than the buffers: the mask lets lane 10 through -> clean error */
  args[2].scalar = 11;
  CHECK_ERR(xc_tiled_run(k, NULL, 3, args), "outside buffer 'x' of 10 elements");
  /* wrong dtype / arity */
  xc_tensor_t* yi;
  CHECK_OK(xc_tensor_create(XC_I32, 1, small, &yi));
  xc_tiled_arg_t bad[3] = {{x, 0}, {yi, 0}, {NULL, 9}};
  CHECK_ERR(xc_tiled_run(k, NULL, 3, bad), "buffer 'y' is f32, argument is i32");
  CHECK_ERR(xc_tiled_run(k, NULL, 2, args), "takes 3 arguments");
  /* a knob value that is not a candidate */
  const int64_t five[1] = {5};
  args[2].scalar = 10;
  CHECK_ERR(xc_tiled_run(k, five, 3, args), "BLOCK = 5 is not one of its candidates");
  xc_tensor_destroy(yi);
  xc_tensor_destroy(x);
  xc_tensor_destroy(y);
  xc_tiled_kernel_destroy(k);
}

static void test_unmasked_out_of_bounds(void) {
  /* y[pid*4 + arange(4)] = x[...] without a mask, on 6-element buffers. */
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("oob", &k));
  val_t* x = xc_tiled_param_buffer(k, "x", XC_F32, XC_ROLE_IN);
  val_t* y = xc_tiled_param_buffer(k, "y", XC_F32, XC_ROLE_INOUT);
  const xc_tiled_expr_t* g[1] = {xc_texpr_const(k, 2)};
  xc_tiled_set_grid(k, 1, g);
  val_t* offs = xc_tiled_binary(k, XC_TOP_ADD,
                                xc_tiled_binary(k, XC_TOP_MUL, xc_tiled_program_id(k, 0),
                                                xc_tiled_const_i(k, XC_I64, 4, 0, NULL)),
                                xc_tiled_arange(k, xc_tiled_dim_const(4)));
  val_t* v = xc_tiled_load(k, x, offs, NULL, NULL);
  xc_tiled_store(k, y, offs, v, NULL);
  CHECK_OK(xc_tiled_verify(k));
  xc_tensor_t *tx, *ty, *big;
  int64_t d6[1] = {6}, d8[1] = {8};
  CHECK_OK(xc_tensor_create(XC_F32, 1, d6, &tx));
  CHECK_OK(xc_tensor_create(XC_F32, 1, d6, &ty));
  CHECK_OK(xc_tensor_create(XC_F32, 1, d8, &big));
  xc_tiled_arg_t args[2] = {{tx, 0}, {ty, 0}};
  CHECK_ERR(xc_tiled_run(k, NULL, 2, args), "program (1,0,0)");
  CHECK_ERR(xc_tiled_run(k, NULL, 2, args), "load at element offset 6, outside buffer 'x'");
  xc_tiled_arg_t args2[2] = {{big, 0}, {ty, 0}};
  CHECK_ERR(xc_tiled_run(k, NULL, 2, args2), "store at element offset 6, outside buffer 'y'");
  xc_tensor_destroy(tx), xc_tensor_destroy(ty), xc_tensor_destroy(big);
  xc_tiled_kernel_destroy(k);

  /* negative offsets and integer division by zero */
  CHECK_OK(xc_tiled_kernel_create("neg", &k));
  x = xc_tiled_param_buffer(k, "x", XC_F32, XC_ROLE_INOUT);
  val_t* n = xc_tiled_param_scalar(k, "n");
  const xc_tiled_expr_t* g1[1] = {one(k)};
  xc_tiled_set_grid(k, 1, g1);
  val_t* o = xc_tiled_binary(k, XC_TOP_DIV, xc_tiled_const_i(k, XC_I64, -3, 0, NULL), n);
  xc_tiled_store(k, x, o, xc_tiled_const_f(k, XC_F32, 1.0, 0, NULL), NULL);
  CHECK_OK(xc_tiled_verify(k));
  CHECK_OK(xc_tensor_create(XC_F32, 1, d6, &tx));
  xc_tiled_arg_t a1[2] = {{tx, 0}, {NULL, 1}};
  CHECK_ERR(xc_tiled_run(k, NULL, 2, a1), "offset -3");
  a1[1].scalar = 0;
  CHECK_ERR(xc_tiled_run(k, NULL, 2, a1), "integer division by zero");
  a1[1].scalar = -1;
  CHECK_OK(xc_tiled_run(k, NULL, 2, a1));
  CHECK_NEAR(xc_tensor_get_f64(tx, 3), 1.0, 0);
  xc_tensor_destroy(tx);
  xc_tiled_kernel_destroy(k);
}

/* acc[M,N] = dot(a[M,K], b[K,N], acc) on 2-D tiles of constants. */
static kern_t* dot_kernel(int64_t m, int64_t kk, int64_t kk2, int64_t n, bool want_error) {
  kern_t* k;
  if (xc_tiled_kernel_create("dot", &k)) return NULL;
  const xc_tiled_expr_t* g[1] = {one(k)};
  xc_tiled_set_grid(k, 1, g);
  xc_tiled_dim_t da[2] = {xc_tiled_dim_const(m), xc_tiled_dim_const(kk)};
  xc_tiled_dim_t db[2] = {xc_tiled_dim_const(kk2), xc_tiled_dim_const(n)};
  xc_tiled_dim_t dc[2] = {xc_tiled_dim_const(m), xc_tiled_dim_const(n)};
  val_t* a = xc_tiled_const_f(k, XC_F32, 1, 2, da);
  val_t* b = xc_tiled_const_f(k, XC_F32, 1, 2, db);
  val_t* c = xc_tiled_const_f(k, XC_F32, 0, 2, dc);
  val_t* r = xc_tiled_dot(k, a, b, c);
  CHECK(want_error ? r == NULL : r != NULL);
  return k;
}

static void test_verifier_errors(void) {
  /* dot shape mismatch, caught by the builder */
  kern_t* k = dot_kernel(4, 8, 6, 2, true);
  CHECK_ERR(xc_tiled_verify(k), "dot shapes do not match: f32[4,8] x f32[6,2] into f32[4,2]");
  xc_tiled_kernel_destroy(k);
  /* ... and by the verifier when the IR is edited after building */
  k = dot_kernel(4, 8, 8, 2, false);
  CHECK_OK(xc_tiled_verify(k));
  xc_tiled_op_t* dot = k->body->ops[k->body->num_ops - 1];
  xc_tiled_value_t* tmp = dot->operands[0];
  dot->operands[0] = dot->operands[2]; /* a := acc [4,2] */
  CHECK_ERR(xc_tiled_verify(k), "op 3 (dot): dot shapes do not match");
  dot->operands[0] = tmp;
  /* dtype mismatch of the accumulator */
  dot->operands[2]->type.dtype = XC_F16;
  CHECK_ERR(xc_tiled_verify(k), "needs an f32 accumulator");
  xc_tiled_kernel_destroy(k);

  /* store to an input buffer */
  CHECK_OK(xc_tiled_kernel_create("st", &k));
  val_t* in = xc_tiled_param_buffer(k, "in", XC_F32, XC_ROLE_IN);
  val_t* out = xc_tiled_param_buffer(k, "out", XC_F32, XC_ROLE_OUT);
  const xc_tiled_expr_t* g[1] = {one(k)};
  xc_tiled_set_grid(k, 1, g);
  val_t* z = xc_tiled_const_i(k, XC_I64, 0, 0, NULL);
  val_t* f = xc_tiled_const_f(k, XC_F32, 1, 0, NULL);
  CHECK(xc_tiled_store(k, in, z, f, NULL) == NULL);
  CHECK_ERR(xc_tiled_verify(k), "store to 'in', an input buffer");
  xc_tiled_kernel_destroy(k);
  /* load from an output-only buffer, and a role edited after building */
  CHECK_OK(xc_tiled_kernel_create("ld", &k));
  in = xc_tiled_param_buffer(k, "in", XC_F32, XC_ROLE_IN);
  out = xc_tiled_param_buffer(k, "out", XC_F32, XC_ROLE_OUT);
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  z = xc_tiled_const_i(k, XC_I64, 0, 0, NULL);
  xc_tiled_store(k, out, z, xc_tiled_load(k, in, z, NULL, NULL), NULL);
  CHECK_OK(xc_tiled_verify(k));
  in->type.role = XC_ROLE_OUT;
  CHECK_ERR(xc_tiled_verify(k), "load from 'in', an output-only buffer");
  in->type.role = XC_ROLE_IN;
  out->type.role = XC_ROLE_IN;
  CHECK_ERR(xc_tiled_verify(k), "store to 'out', an input buffer");
  xc_tiled_kernel_destroy(k);

  /* use before definition: a value of a loop body used after the loop */
  CHECK_OK(xc_tiled_kernel_create("scope", &k));
  out = xc_tiled_param_buffer(k, "out", XC_I64, XC_ROLE_OUT);
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  val_t* zero = xc_tiled_const_i(k, XC_I64, 0, 0, NULL);
  val_t* ten = xc_tiled_const_i(k, XC_I64, 10, 0, NULL);
  val_t* step = xc_tiled_const_i(k, XC_I64, 1, 0, NULL);
  xc_tiled_op_t* loop = xc_tiled_for_begin(k, zero, ten, step, 1, &zero);
  val_t* inner = xc_tiled_binary(k, XC_TOP_ADD, xc_tiled_for_arg(loop, 0), xc_tiled_for_iv(loop));
  xc_tiled_for_end(k, loop, 1, &inner);
  xc_tiled_store(k, out, zero, xc_tiled_for_result(loop, 0), NULL);
  CHECK_OK(xc_tiled_verify(k));
  xc_tensor_t* t;
  int64_t d1[1] = {1};
  CHECK_OK(xc_tensor_create(XC_I64, 1, d1, &t));
  xc_tiled_arg_t args[1] = {{t, 0}};
  CHECK_OK(xc_tiled_run(k, NULL, 1, args));
  CHECK_EQ_INT(xc_tensor_get_i64(t, 0), 45); /* 0+1+...+9 */
  xc_tiled_op_t* st = k->body->ops[k->body->num_ops - 1];
  st->operands[2] = inner;
  CHECK_ERR(xc_tiled_verify(k), "operand 2 (%");
  CHECK_ERR(xc_tiled_verify(k), "used before its definition or outside its scope");
  st->operands[2] = xc_tiled_for_result(loop, 0);
  /* an op using a value defined after it */
  xc_tiled_op_t* first = k->body->ops[0];
  (void)first;
  xc_tiled_op_t* add_op = loop->body->ops[0];
  add_op->operands[1] = xc_tiled_for_result(loop, 0);
  CHECK_ERR(xc_tiled_verify(k), "used before its definition");
  xc_tensor_destroy(t);
  xc_tiled_kernel_destroy(k);

  /* loop-carried type mismatch */
  CHECK_OK(xc_tiled_kernel_create("carry", &k));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  zero = xc_tiled_const_i(k, XC_I64, 0, 0, NULL);
  val_t* fz = xc_tiled_const_f(k, XC_F32, 0, 0, NULL);
  loop = xc_tiled_for_begin(k, zero, zero, xc_tiled_const_i(k, XC_I64, 1, 0, NULL), 1, &fz);
  val_t* wrong = xc_tiled_cast(k, xc_tiled_for_arg(loop, 0), XC_F64);
  xc_tiled_for_end(k, loop, 1, &wrong);
  CHECK_ERR(xc_tiled_verify(k), "loop-carried value 0 is f32 but the body yields f64");
  xc_tiled_kernel_destroy(k);

  /* an unclosed loop, a shared allocation inside a loop */
  CHECK_OK(xc_tiled_kernel_create("open", &k));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  zero = xc_tiled_const_i(k, XC_I64, 0, 0, NULL);
  loop = xc_tiled_for_begin(k, zero, zero, zero, 0, NULL);
  xc_tiled_dim_t d4[1] = {xc_tiled_dim_const(4)};
  CHECK(xc_tiled_alloc(k, XC_SCOPE_SHARED, XC_F32, 1, d4) != NULL);
  CHECK_ERR(xc_tiled_verify(k), "a for loop was not closed");
  xc_tiled_for_end(k, loop, 0, NULL);
  CHECK_ERR(xc_tiled_verify(k), "shared allocations must be at the top level");
  xc_tiled_kernel_destroy(k);

  /* broadcasting, dtypes, ranks */
  CHECK_OK(xc_tiled_kernel_create("shapes", &k));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  val_t* a4 = xc_tiled_arange(k, xc_tiled_dim_const(4));
  val_t* a3 = xc_tiled_arange(k, xc_tiled_dim_const(3));
  CHECK(xc_tiled_binary(k, XC_TOP_ADD, a4, a3) == NULL);
  CHECK_ERR(xc_tiled_verify(k), "shapes i64[4] and i64[3] do not broadcast");
  xc_tiled_kernel_destroy(k);
  CHECK_OK(xc_tiled_kernel_create("dtypes", &k));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  CHECK(xc_tiled_binary(k, XC_TOP_ADD, xc_tiled_arange(k, xc_tiled_dim_const(4)),
                        xc_tiled_const_f(k, XC_F32, 1, 0, NULL)) == NULL);
  CHECK_ERR(xc_tiled_verify(k), "operand dtypes differ: i64 vs f32");
  xc_tiled_kernel_destroy(k);
  CHECK_OK(xc_tiled_kernel_create("rank", &k));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  val_t* r = xc_tiled_arange(k, xc_tiled_dim_const(2));
  for (int i = 0; i < 3; i++) r = xc_tiled_expand_dims(k, r, 0);
  CHECK_ERR(xc_tiled_verify(k), "exceeds rank 3");
  xc_tiled_kernel_destroy(k);
  /* a kernel without a grid */
  CHECK_OK(xc_tiled_kernel_create("nogrid", &k));
  CHECK_ERR(xc_tiled_verify(k), "the grid is not set");
  xc_tiled_kernel_destroy(k);
}

static void test_knob_errors(void) {
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("knobs", &k));
  const int64_t c[] = {16, 32, 64};
  CHECK_EQ_INT(xc_tiled_add_knob(k, "B", XC_KNOB_TILE, 3, c, 48), -1);
  CHECK_ERR(xc_tiled_kernel_take_error(k), "default 48 is not one of its candidates");
  const int64_t neg[] = {0, 4};
  CHECK_EQ_INT(xc_tiled_add_knob(k, "B", XC_KNOB_TILE, 2, neg, 4), -1);
  CHECK_ERR(xc_tiled_kernel_take_error(k), "candidate 0 is not positive");
  int b = xc_tiled_add_knob(k, "B", XC_KNOB_TILE, 3, c, 32);
  const int64_t th[] = {64, 256, 1024};
  int t = xc_tiled_add_knob(k, "threads", XC_KNOB_THREADS, 3, th, 256);
  CHECK_EQ_INT(xc_tiled_add_knob(k, "B", XC_KNOB_TILE, 3, c, 32), -1);
  CHECK_ERR(xc_tiled_kernel_take_error(k), "already used");
  /* B*B <= threads*4 */
  xc_tiled_add_constraint(
      k, xc_texpr_binary(k, XC_TEXPR_LE,
                         xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, b), xc_texpr_knob(k, b)),
                         xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, t), xc_texpr_const(k, 4))));
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  xc_tiled_dim_t sh[2] = {xc_tiled_dim_knob(b), xc_tiled_dim_knob(b)};
  xc_tiled_alloc(k, XC_SCOPE_SHARED, XC_F32, 2, sh);
  CHECK_OK(xc_tiled_verify(k));
  xc_tiled_limits_t gpu;
  xc_tiled_limits_init_gpu(&gpu);
  int64_t v[2] = {32, 256};
  CHECK_OK(xc_tiled_knobs_check(k, v, &gpu));
  v[0] = 64, v[1] = 64;
  CHECK_ERR(xc_tiled_knobs_check(k, v, &gpu), "constraint 0 ((B * B) <= (threads * 4)) does not hold");
  v[0] = 16, v[1] = 1024;
  gpu.value[XC_TILED_LIMIT_MAX_THREADS] = 512;
  CHECK_ERR(xc_tiled_knobs_check(k, v, &gpu), "threads = 1024 exceeds max_threads 512");
  v[0] = 64, v[1] = 1024;
  gpu.value[XC_TILED_LIMIT_MAX_THREADS] = 1024;
  gpu.value[XC_TILED_LIMIT_SHARED_BYTES] = 8192;
  CHECK_ERR(xc_tiled_knobs_check(k, v, &gpu), "need 16384 bytes, more than shared_bytes 8192");
  v[0] = 33;
  CHECK_ERR(xc_tiled_knobs_check(k, v, &gpu), "B = 33 is not one of its candidates");
  /* chooser: defaults (32, 256) need 4096 bytes; with 2 KiB the nearest valid
   * choice moves B one step down. */
  gpu.value[XC_TILED_LIMIT_SHARED_BYTES] = 2048;
  CHECK_OK(xc_tiled_knobs_choose(k, &gpu, v));
  CHECK_EQ_INT(v[0], 16);
  CHECK_EQ_INT(v[1], 256);
  /* grid expressions evaluate with checked arithmetic */
  int64_t out;
  const xc_tiled_expr_t* e = xc_texpr_binary(k, XC_TEXPR_CEILDIV, xc_texpr_const(k, 67),
                                             xc_texpr_knob(k, b));
  int64_t kv[2] = {16, 64};
  CHECK_OK(xc_texpr_eval(e, kv, NULL, NULL, &out));
  CHECK_EQ_INT(out, 5);
  e = xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_const(k, INT64_MAX), xc_texpr_const(k, 2));
  CHECK_ERR(xc_texpr_eval(e, kv, NULL, NULL, &out), "overflow");
  e = xc_texpr_binary(k, XC_TEXPR_FLOORDIV, xc_texpr_const(k, 1), xc_texpr_const(k, 0));
  CHECK_ERR(xc_texpr_eval(e, kv, NULL, NULL, &out), "division by 0");
  xc_tiled_kernel_destroy(k);
}

/* Prints k, parses it back and checks the text is unchanged. */
static void check_round_trip(const xc_tiled_kernel_t* k) {
  char* text = xc_tiled_print_to_string(k);
  xc_tiled_kernel_t* back = NULL;
  CHECK(text != NULL);
  if (text) CHECK_OK(xc_tiled_parse(text, strlen(text), k->name, &back));
  if (back) {
    char* again = xc_tiled_print_to_string(back);
    CHECK_STR(again, text);
    free(again);
    xc_tiled_kernel_destroy(back);
  }
  free(text);
}

/* Runs a one-program kernel out[i] = op(a[i], b[i]) over 1-D i32 / f32
 * vectors and returns the status. */
static xc_status_t run_elementwise(xc_tiled_opcode_t oc, xc_dtype_t dt, int n, const double* a,
                                   const double* b, xc_tensor_t** out) {
  kern_t* k;
  XC_RETURN_IF_ERROR(xc_tiled_kernel_create("ew", &k));
  val_t* A = xc_tiled_param_buffer(k, "a", dt, XC_ROLE_IN);
  val_t* B = xc_tiled_param_buffer(k, "b", dt, XC_ROLE_IN);
  val_t* O = xc_tiled_param_buffer(k, "o", oc == XC_TOP_CMP ? XC_BOOL : dt, XC_ROLE_OUT);
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  val_t* offs = xc_tiled_arange(k, xc_tiled_dim_const(n));
  val_t* x = xc_tiled_load(k, A, offs, NULL, NULL);
  val_t* y = xc_tiled_load(k, B, offs, NULL, NULL);
  val_t* r = oc == XC_TOP_CMP ? xc_tiled_cmp(k, XC_CMP_LT, x, y)
           : (oc >= XC_TOP_NEG && oc <= XC_TOP_NOT) ? xc_tiled_unary(k, oc, x) : xc_tiled_binary(k, oc, x, y);
  xc_tiled_store(k, O, offs, r, NULL);
  xc_tensor_t *ta = NULL, *tb = NULL;
  int64_t d[1] = {n};
  xc_status_t st = xc_tiled_verify(k);
  if (!st) st = xc_tensor_create(dt, 1, d, &ta);
  if (!st) st = xc_tensor_create(dt, 1, d, &tb);
  if (!st) st = xc_tensor_create(oc == XC_TOP_CMP ? XC_BOOL : dt, 1, d, out);
  if (!st) {
    for (int i = 0; i < n; i++) xc_tensor_set_f64(ta, i, a[i]), xc_tensor_set_f64(tb, i, b[i]);
    xc_tiled_arg_t args[3] = {{ta, 0}, {tb, 0}, {*out, 0}};
    st = xc_tiled_run(k, NULL, 3, args);
  }
  xc_tensor_destroy(ta);
  xc_tensor_destroy(tb);
  xc_tiled_kernel_destroy(k);
  return st;
}

static void test_elementwise_semantics(void) {
  xc_tensor_t* o = NULL;
  /* integer division and remainder truncate toward zero (C semantics) */
  const double a[4] = {-7, 7, -7, 9}, b[4] = {2, -2, -2, 4};
  CHECK_OK(run_elementwise(XC_TOP_DIV, XC_I32, 4, a, b, &o));
  if (o) {
    CHECK_EQ_INT(xc_tensor_get_i64(o, 0), -3);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 1), -3);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 2), 3);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 3), 2);
  }
  xc_tensor_destroy(o), o = NULL;
  CHECK_OK(run_elementwise(XC_TOP_REM, XC_I32, 4, a, b, &o));
  if (o) {
    CHECK_EQ_INT(xc_tensor_get_i64(o, 0), -1);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 1), 1);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 3), 1);
  }
  xc_tensor_destroy(o), o = NULL;
  /* i32 overflow is an error, not a silent wrap */
  const double big[1] = {2147483647.0}, onev[1] = {1};
  CHECK_ERR(run_elementwise(XC_TOP_ADD, XC_I32, 1, big, onev, &o), "i32 overflow in add");
  xc_tensor_destroy(o), o = NULL;
  /* NaN propagates through max/min; comparisons with NaN are false */
  const double fa[3] = {NAN, 1.0, -0.0}, fb[3] = {1.0, NAN, 0.0};
  CHECK_OK(run_elementwise(XC_TOP_MAX, XC_F32, 3, fa, fb, &o));
  if (o) {
    CHECK(isnan(xc_tensor_get_f64(o, 0)));
    CHECK(isnan(xc_tensor_get_f64(o, 1)));
  }
  xc_tensor_destroy(o), o = NULL;
  CHECK_OK(run_elementwise(XC_TOP_CMP, XC_F32, 3, fa, fb, &o));
  if (o) {
    CHECK_EQ_INT(xc_tensor_get_i64(o, 0), 0);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 1), 0);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 2), 0); /* -0 < 0 is false */
  }
  xc_tensor_destroy(o), o = NULL;
  /* unary float ops against closed forms; results rounded into f32 */
  const double xs[4] = {-2.0, -0.5, 0.25, 3.0}, pos[4] = {0.5, 1.0, 4.0, 9.0};
  struct { xc_tiled_opcode_t op; const double* in; double expect[4]; } u[] = {
      {XC_TOP_SIGMOID, xs, {0.11920292202211755, 0.37754066879814541, 0.56217650088579807,
                            0.95257412682243336}},
      {XC_TOP_RSQRT, pos, {1.4142135623730951, 1.0, 0.5, 1.0 / 3.0}},
      {XC_TOP_RECIP, pos, {2.0, 1.0, 0.25, 1.0 / 9.0}},
      {XC_TOP_ERF, xs, {-0.99532226501895273, -0.52049987781304654, 0.27632639016823696,
                        0.99997790950300136}},
      {XC_TOP_TANH, xs, {-0.96402758007581690, -0.46211715726000974, 0.24491866240370913,
                         0.99505475368673045}},
      {XC_TOP_ABS, xs, {2.0, 0.5, 0.25, 3.0}},
      {XC_TOP_FLOOR, xs, {-2.0, -1.0, 0.0, 3.0}},
      {XC_TOP_ATAN, xs, {-1.1071487177940904, -0.46364760900080612, 0.24497866312686414,
                         1.2490457723982544}},
  };
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
    CHECK_OK(run_elementwise(u[i].op, XC_F32, 4, u[i].in, u[i].in, &o));
    for (int j = 0; o && j < 4; j++)
      CHECK_NEAR(xc_tensor_get_f64(o, j), (float)u[i].expect[j], 0);
    xc_tensor_destroy(o), o = NULL;
  }
  /* float ops on integers are refused by the typing rule */
  CHECK_ERR(run_elementwise(XC_TOP_EXP, XC_I32, 1, big, onev, &o), "exp does not accept i32");
  xc_tensor_destroy(o), o = NULL;
  /* shifts: shl drops the bits shifted out of the dtype, shr is logical on
   * unsigned and arithmetic on signed types; an amount >= the width fails */
  const double sa[4] = {200, 1, 255, 7}, sb[4] = {1, 7, 4, 0};
  const int64_t shl_u8[4] = {144, 128, 240, 7}, shr_u8[4] = {100, 0, 15, 7};
  CHECK_OK(run_elementwise(XC_TOP_SHL, XC_U8, 4, sa, sb, &o));
  for (int j = 0; o && j < 4; j++) CHECK_EQ_INT(xc_tensor_get_i64(o, j), shl_u8[j]);
  xc_tensor_destroy(o), o = NULL;
  CHECK_OK(run_elementwise(XC_TOP_SHR, XC_U8, 4, sa, sb, &o));
  for (int j = 0; o && j < 4; j++) CHECK_EQ_INT(xc_tensor_get_i64(o, j), shr_u8[j]);
  xc_tensor_destroy(o), o = NULL;
  const double na[2] = {-8, -1}, nb[2] = {1, 3};
  CHECK_OK(run_elementwise(XC_TOP_SHR, XC_I32, 2, na, nb, &o));
  if (o) {
    CHECK_EQ_INT(xc_tensor_get_i64(o, 0), -4);
    CHECK_EQ_INT(xc_tensor_get_i64(o, 1), -1);
  }
  xc_tensor_destroy(o), o = NULL;
  const double wide[1] = {8};
  CHECK_ERR(run_elementwise(XC_TOP_SHL, XC_U8, 1, onev, wide, &o), "shl by 8 on u8");
  xc_tensor_destroy(o), o = NULL;
  CHECK_ERR(run_elementwise(XC_TOP_SHR, XC_F32, 1, onev, onev, &o), "shr does not accept f32");
  xc_tensor_destroy(o), o = NULL;
}

/* A private accumulator tile round-tripped through memory, a shared buffer
 * read before it is written (NaN), reductions and casts. */
static void test_misc_semantics(void) {
  kern_t* k;
  CHECK_OK(xc_tiled_kernel_create("misc", &k));
  val_t* out = xc_tiled_param_buffer(k, "out", XC_F32, XC_ROLE_OUT);
  val_t* outi = xc_tiled_param_buffer(k, "outi", XC_I32, XC_ROLE_OUT);
  xc_tiled_set_grid(k, 1, (const xc_tiled_expr_t* const[]){one(k)});
  xc_tiled_dim_t d23[2] = {xc_tiled_dim_const(2), xc_tiled_dim_const(3)};
  val_t* ar = xc_tiled_arange(k, xc_tiled_dim_const(3));                 /* 0 1 2 */
  val_t* rows = xc_tiled_expand_dims(k, xc_tiled_arange(k, xc_tiled_dim_const(2)), 1);
  val_t* m = xc_tiled_binary(k, XC_TOP_ADD, xc_tiled_binary(k, XC_TOP_MUL, rows,
                              xc_tiled_const_i(k, XC_I64, 3, 0, NULL)), ar); /* [[0 1 2][3 4 5]] */
  val_t* mf = xc_tiled_cast(k, m, XC_F32);
  val_t* priv = xc_tiled_alloc(k, XC_SCOPE_PRIVATE, XC_F32, 2, d23);
  xc_tiled_store(k, priv, m, mf, NULL);
  val_t* back = xc_tiled_load(k, priv, xc_tiled_trans(k, m), NULL, NULL); /* [3,2] */
  val_t* sums = xc_tiled_reduce(k, XC_REDUCE_SUM, back, 0);               /* [3, 12] */
  val_t* maxs = xc_tiled_reduce(k, XC_REDUCE_MAX, mf, 1);                 /* [2, 5] */
  val_t* i2 = xc_tiled_arange(k, xc_tiled_dim_const(2));
  xc_tiled_store(k, out, i2, sums, NULL);
  xc_tiled_store(k, out, xc_tiled_binary(k, XC_TOP_ADD, i2, xc_tiled_const_i(k, XC_I64, 2, 0, NULL)),
                 maxs, NULL);
  val_t* sh = xc_tiled_alloc(k, XC_SCOPE_SHARED, XC_F32, 1, d23);
  val_t* junk = xc_tiled_load(k, sh, xc_tiled_const_i(k, XC_I64, 0, 0, NULL), NULL, NULL);
  xc_tiled_store(k, out, xc_tiled_const_i(k, XC_I64, 4, 0, NULL), junk, NULL);
  /* cast f32 -> i32 saturates; 2.7 -> 2, -1e10 -> INT32_MIN */
  val_t* big = xc_tiled_const_f(k, XC_F32, -1e10, 0, NULL);
  xc_tiled_store(k, outi, xc_tiled_const_i(k, XC_I64, 0, 0, NULL), xc_tiled_cast(k, big, XC_I32), NULL);
  xc_tiled_store(k, outi, xc_tiled_const_i(k, XC_I64, 1, 0, NULL),
                 xc_tiled_cast(k, xc_tiled_const_f(k, XC_F32, 2.7, 0, NULL), XC_I32), NULL);
  CHECK_OK(xc_tiled_verify(k));
  check_round_trip(k);
  xc_tensor_t *t, *ti;
  int64_t d5[1] = {5}, d2[1] = {2};
  CHECK_OK(xc_tensor_create(XC_F32, 1, d5, &t));
  CHECK_OK(xc_tensor_create(XC_I32, 1, d2, &ti));
  xc_tiled_arg_t args[2] = {{t, 0}, {ti, 0}};
  CHECK_OK(xc_tiled_run(k, NULL, 2, args));
  /* priv[x] = x, back[j][i] = priv[3i + j]; summing over j gives 3 and 12 */
  CHECK_NEAR(xc_tensor_get_f64(t, 0), 0 + 1 + 2, 0);
  CHECK_NEAR(xc_tensor_get_f64(t, 1), 3 + 4 + 5, 0);
  CHECK_NEAR(xc_tensor_get_f64(t, 2), 2, 0);
  CHECK_NEAR(xc_tensor_get_f64(t, 3), 5, 0);
  CHECK(isnan(xc_tensor_get_f64(t, 4)));
  CHECK_EQ_INT(xc_tensor_get_i64(ti, 0), INT32_MIN);
  CHECK_EQ_INT(xc_tensor_get_i64(ti, 1), 2);
  xc_tensor_destroy(t);
  xc_tensor_destroy(ti);
  xc_tiled_kernel_destroy(k);
}


static const char* kScaleText =
    "kernel @scale {\n"
    "  knob BLOCK: tile in {4, 8} = 4\n"
    "  param %x: memref<global f32 in>\n"
    "  param %y: memref<global f32 out>\n"
    "  param %n: i64\n"
    "  grid [ceildiv(n, BLOCK)]\n"
    "  %pid = program_id 0 : i64\n"
    "  %b = knob BLOCK : i64\n"
    "  %start = mul %pid, %b : i64\n"
    "  %lanes = arange : i64[BLOCK]\n"
    "  %offs = add %start, %lanes : i64[BLOCK]\n"
    "  %m = cmp lt %offs, %n : bool[BLOCK]\n"
    "  %v = load %x[%offs] mask %m : f32[BLOCK]\n"
    "  %one = const 1 : i64\n"
    "  %zero = const 0 : i64\n"
    "  %init = const 0 : f32[BLOCK]\n"
    "  # v * 3 as a loop adding v three times\n"
    "  %three = const 3 : i64\n"
    "  %r = for %i = %zero to %three step %one iter(%acc = %init: f32[BLOCK]) {\n"
    "    %next = add %acc, %v : f32[BLOCK]\n"
    "    yield %next\n"
    "  }\n"
    "  store %y[%offs], %r mask %m\n"
    "}\n";

static void test_parser(void) {
  xc_tiled_kernel_t* k = NULL;
  CHECK_OK(xc_tiled_parse(kScaleText, strlen(kScaleText), "scale.txt", &k));
  if (k) {
    xc_tensor_t *x, *y;
    int64_t d[1] = {7};
    CHECK_OK(xc_tensor_create(XC_F32, 1, d, &x));
    CHECK_OK(xc_tensor_create(XC_F32, 1, d, &y));
    for (int i = 0; i < 7; i++) xc_tensor_set_f64(x, i, i - 2.5);
    xc_tiled_arg_t args[3] = {{x, 0}, {y, 0}, {NULL, 7}};
    CHECK_OK(xc_tiled_run(k, NULL, 3, args));
    for (int i = 0; i < 7; i++) CHECK_NEAR(xc_tensor_get_f64(y, i), 3 * (i - 2.5), 0);
    char* text = xc_tiled_print_to_string(k);
    CHECK(text && strstr(text, "%r.16 = for %i.14 = %zero.11 to %three.13 step %one.10 "
                               "iter(%acc.15 = %init.12: f32[BLOCK]) {\n"));
    free(text);
    xc_tensor_destroy(x);
    xc_tensor_destroy(y);
    xc_tiled_kernel_destroy(k);
  }
  struct { const char* from; const char* to; const char* err; } cases[] = {
      {"%v = load %x[%offs] mask %m : f32[BLOCK]", "%v = load %x[%offs] mask %q : f32[BLOCK]",
       "scale.txt:13:28: unknown value '%q'"},
      {"%v = load %x[%offs] mask %m : f32[BLOCK]", "%v = load %x[%offs] mask %m : f16[BLOCK]",
       "scale.txt:13:8: declared type f16[BLOCK] differs from the derived type f32[BLOCK]"},
      {"store %y[%offs]", "store %x[%offs]", "scale.txt:23:3: tiled kernel 'scale': op 14 (store): store to 'x', an input buffer"},
      {"%start = mul", "%start = fma", "scale.txt:9:12: unknown op 'fma'"},
      {"arange : i64[BLOCK]", "arange : i64[WIDTH]", "unknown knob 'WIDTH' in a shape"},
      {"    yield %next\n", "", "for body does not end with yield"},
      {"{4, 8} = 4", "{4, 8} = 5", "default 5 is not one of its candidates"},
      {"ceildiv(n, BLOCK)", "ceildiv(n, BLK)", "unknown name 'BLK' in an expression"},
      {"%next = add %acc, %v", "%next = add %acc, %m", "operand dtypes differ: f32 vs bool"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char* at = strstr(kScaleText, cases[i].from);
    CHECK(at != NULL);
    if (!at) continue;
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - kScaleText), kScaleText, cases[i].to,
             at + strlen(cases[i].from));
    k = NULL;
    CHECK_ERR(xc_tiled_parse(buf, strlen(buf), "scale.txt", &k), cases[i].err);
    CHECK(k == NULL);
  }
  /* mutated text (random byte replacements from the grammar's alphabet)
   * parses or fails cleanly, and what parses also verifies */
  static const char alphabet[] = "%@{}[](),:=<*+-& \n0123456789abkmxyBLOCKfi.";
  uint64_t seed = 12345;
  size_t len = strlen(kScaleText);
  char* buf = malloc(len + 1);
  for (int iter = 0; buf && iter < 3000; iter++) {
    memcpy(buf, kScaleText, len + 1);
    for (int m = 0; m < 1 + iter % 4; m++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      buf[(seed >> 33) % len] = alphabet[(seed >> 17) % (sizeof alphabet - 1)];
    }
    k = NULL;
    xc_status_t st = xc_tiled_parse(buf, len, "mut.txt", &k);
    if (!st) {
      CHECK_OK(xc_tiled_verify(k));
      /* and runs or fails cleanly on small buffers */
      xc_tensor_t *x = NULL, *y = NULL;
      int64_t d[1] = {7};
      CHECK_OK(xc_tensor_create(XC_F32, 1, d, &x));
      CHECK_OK(xc_tensor_create(XC_F32, 1, d, &y));
      xc_tiled_arg_t args[8];
      memset(args, 0, sizeof args);
      for (int p = 0; p < k->num_params && p < 8; p++) {
        if (k->params[p]->type.kind == XC_TILED_MEMREF)
          args[p].buffer = k->params[p]->type.dtype == XC_F32 ? (p % 2 ? y : x) : NULL;
        else args[p].scalar = 7;
      }
      if (k->num_params <= 8) xc_status_free(xc_tiled_run(k, NULL, k->num_params, args));
      xc_tensor_destroy(x);
      xc_tensor_destroy(y);
      xc_tiled_kernel_destroy(k);
    }
    xc_status_free(st);
  }
  free(buf);
  /* truncated text never crashes */
  for (size_t n = 0; n < strlen(kScaleText); n += 7) {
    k = NULL;
    xc_status_t st = xc_tiled_parse(kScaleText, n, "cut.txt", &k);
    CHECK(st != NULL && k == NULL);
    xc_status_free(st);
  }
}

int main(void) {
  test_printer();
  test_run_scale();
  test_unmasked_out_of_bounds();
  test_verifier_errors();
  test_knob_errors();
  test_misc_semantics();
  test_parser();
  test_elementwise_semantics();
  return xc_test_summary("test_tiled_verify");
}
