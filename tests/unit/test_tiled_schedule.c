/* Schedule records in the tiled IR: the default record, printing and
 * parsing with the kernel text, the fit check against the kernel and the
 * legality check against device limits. */
#include "test.h"
#include "tiled_kernels.h"

static char* print_parse_print(const kern_t* k, kern_t** out_parsed) {
  char* text = xc_tiled_print_to_string(k);
  *out_parsed = NULL;
  if (!text) return NULL;
  xc_status_t s = xc_tiled_parse(text, strlen(text), "sched", out_parsed);
  free(text);
  if (s) {
    fprintf(stderr, "parse: %s\n", xc_status_message(s));
    xc_status_free(s);
    return NULL;
  }
  return xc_tiled_print_to_string(*out_parsed);
}

static void test_round_trip(void) {
  kern_t* k = build_gemm_half(XC_BF16);
  CHECK(k != NULL);
  if (!k) return;
  CHECK_EQ_INT(xc_tiled_dot_count(k), 1);
  CHECK(xc_tiled_dot_at(k, 0) != NULL && xc_tiled_dot_at(k, 0)->opcode == XC_TOP_DOT);
  CHECK(xc_tiled_dot_at(k, 1) == NULL);
  CHECK_EQ_INT(xc_tiled_dot_index(k, xc_tiled_dot_at(k, 0)), 0);

  xc_tiled_schedule_t s;
  xc_tiled_schedule_init(k, &s);
  CHECK_EQ_INT(s.num_knobs, k->num_knobs);
  CHECK_EQ_INT(s.num_dots, 1);
  CHECK_EQ_INT(s.dots[0].stages, 1);
  CHECK_EQ_INT(s.dots[0].mma.m, 0);
  snprintf(s.scheduler, sizeof s.scheduler, "cuda");
  s.dots[0] = (xc_tiled_dot_schedule_t){{16, 8, 16, XC_BF16, XC_F32}, 3, XC_SPACE_DYNAMIC};
  s.local_bytes = 1024;
  s.dynamic_bytes = 65536;
  s.vector = 8;
  s.unroll = 32;
  CHECK_OK(xc_tiled_set_schedule(k, &s));
  kern_t* parsed = NULL;
  char* a = xc_tiled_print_to_string(k);
  char* b = print_parse_print(k, &parsed);
  CHECK_STR(a, b);
  CHECK(a && strstr(a, "schedule cuda {") && strstr(a, "dot 0: mma m16n8k16 bf16 -> f32, stages 3, operands dynamic"));
  CHECK(parsed && parsed->schedule && parsed->schedule->dynamic_bytes == 65536 &&
        parsed->schedule->dots[0].mma.k == 16 && parsed->schedule->dots[0].operands == XC_SPACE_DYNAMIC &&
        parsed->schedule->vector == 8 && parsed->schedule->unroll == 32);
  free(a), free(b);
  xc_tiled_kernel_destroy(parsed);

  /* a record that does not fit the kernel is refused and the old one kept */
  xc_tiled_schedule_t bad = s;
  bad.knobs[0] = 3;
  CHECK_ERR(xc_tiled_set_schedule(k, &bad), "not a candidate");
  bad = s;
  bad.num_dots = 0;
  CHECK_ERR(xc_tiled_set_schedule(k, &bad), "0 dot entries for 1 dots");
  bad = s;
  bad.dots[0].operands = XC_SPACE_NONE;
  CHECK_ERR(xc_tiled_set_schedule(k, &bad), "needs a staging space");
  CHECK(k->schedule && k->schedule->dynamic_bytes == 65536);

  /* bad text names the line */
  char* text = xc_tiled_print_to_string(k);
  if (text) {
    char* at = strstr(text, "operands dynamic");
    if (at) memcpy(at + 9, "dynamix", 7);
    kern_t* p = NULL;
    CHECK_ERR(xc_tiled_parse(text, strlen(text), "bad", &p), "expected none, shared or dynamic");
    CHECK(p == NULL);
    free(text);
  }
  xc_tiled_kernel_destroy(k);
}

static void test_limits(void) {
  kern_t* k = build_gemm_half(XC_F16);
  CHECK(k != NULL);
  if (!k) return;
  xc_tiled_limits_t l;
  xc_tiled_limits_init_gpu(&l);
  l.value[XC_TILED_LIMIT_MMA] = (int64_t)1 << XC_F16;
  xc_tiled_schedule_t s;
  xc_tiled_schedule_init(k, &s);
  CHECK_OK(xc_tiled_schedule_check(k, &s, &l));
  xc_tiled_schedule_t t = s;
  t.threads = 2048;
  CHECK_ERR(xc_tiled_schedule_check(k, &t, &l), "2048 threads per program, the device allows 1024");
  t = s;
  t.local_bytes = 49664;
  CHECK_ERR(xc_tiled_schedule_check(k, &t, &l), "49664 bytes of static work-group memory, the device allows 49152");
  t = s;
  t.dynamic_bytes = 4096;
  t.dots[0] = (xc_tiled_dot_schedule_t){{16, 8, 16, XC_F16, XC_F32}, 2, XC_SPACE_DYNAMIC};
  CHECK_ERR(xc_tiled_schedule_check(k, &t, &l), "has no dynamic work-group memory");
  l.value[XC_TILED_LIMIT_STAGED_BYTES] = 227 * 1024;
  CHECK_OK(xc_tiled_schedule_check(k, &t, &l));
  t.dynamic_bytes = 227 * 1024;
  t.local_bytes = 1;
  CHECK_ERR(xc_tiled_schedule_check(k, &t, &l), "static and dynamic");
  xc_tiled_kernel_destroy(k);
}

/* Kernels with too many knob combinations to search all (fused multi-phase
 * groups): an invalid default still finds a valid choice, walking down from
 * the defaults (threads within max_threads, then smaller tiles). */
static void test_choose_many_knobs(void) {
  kern_t* k = NULL;
  CHECK_OK(xc_tiled_kernel_create("many", &k));
  if (!k) return;
  const int64_t tiles[6] = {8, 16, 32, 64, 128, 256}, threads[3] = {32, 64, 128};
  int kn[8];
  for (int i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof name, "BLOCK_%d", i);
    kn[i] = xc_tiled_add_knob(k, name, XC_KNOB_TILE, 6, tiles, 128);
  }
  xc_tiled_add_knob(k, "num_threads", XC_KNOB_THREADS, 3, threads, 128);
  /* BLOCK_0 * BLOCK_1 <= 4096 */
  xc_tiled_add_constraint(k, xc_texpr_binary(k, XC_TEXPR_LE,
                                             xc_texpr_binary(k, XC_TEXPR_MUL, xc_texpr_knob(k, kn[0]),
                                                             xc_texpr_knob(k, kn[1])),
                                             xc_texpr_const(k, 4096)));
  val_t* y = xc_tiled_param_buffer(k, "y", XC_F32, XC_ROLE_OUT);
  const xc_tiled_expr_t* grid[1] = {xc_texpr_const(k, 1)};
  xc_tiled_set_grid(k, 1, grid);
  xc_tiled_store(k, y, xc_tiled_arange(k, xc_tiled_dim_knob(kn[2])), f32c(k, 1.0), NULL);
  CHECK_OK(xc_tiled_verify(k));
  xc_tiled_limits_t l;
  xc_tiled_limits_init_gpu(&l);
  l.value[XC_TILED_LIMIT_MAX_THREADS] = 64;
  int64_t v[9];
  CHECK_OK(xc_tiled_knobs_choose(k, &l, v));
  CHECK_EQ_INT(v[8], 64);
  CHECK(v[0] * v[1] <= 4096);
  CHECK_OK(xc_tiled_knobs_check(k, v, &l));
  l.value[XC_TILED_LIMIT_MAX_THREADS] = 16; /* no thread candidate fits */
  CHECK_ERR(xc_tiled_knobs_choose(k, &l, v), "too many knob combinations");
  xc_tiled_kernel_destroy(k);
}

int main(void) {
  test_choose_many_knobs();
  test_round_trip();
  test_limits();
  return xc_test_summary("test_tiled_schedule");
}
