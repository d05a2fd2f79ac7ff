/* The executor on the cpu target with a hand-lowered module
 * (test_module_fixture.h): results against the closed form for several
 * bindings of the symbolic length (ragged against the block sizes, empty),
 * poisoned intermediates, the memory plan's reuse (peak below the sum of
 * the intermediates; which values share a buffer), knob values reaching the
 * grid, a module read back from bytes, input errors, runs into the caller's
 * output tensors, and device-resident runs (inputs and outputs by device
 * address). */
#include "test_module_fixture.h"

static int value_index(const xc_compiled_module_t* m, const char* name) {
  for (int i = 0; i < m->num_values; i++)
    if (strcmp(m->values[i].name, name) == 0) return i;
  return -1;
}

static void check_memplan(const xc_compiled_module_t* m) {
  xc_symbind_t b;
  xc_symbind_init(&b);
  CHECK_OK(xc_symbind_set(&b, "n", 100));
  xc_memplan_t p;
  CHECK_OK(xc_memplan_build(m, &b, &p));
  int x = value_index(m, "x"), w = value_index(m, "w"), t1 = value_index(m, "t1"), t2 = value_index(m, "t2"),
      t3 = value_index(m, "t3"), r = value_index(m, "r"), t4 = value_index(m, "t4"), y = value_index(m, "y");
  CHECK(x >= 0 && w >= 0 && t1 >= 0 && t2 >= 0 && t3 >= 0 && r >= 0 && t4 >= 0 && y >= 0);
  if (x < 0 || w < 0 || t1 < 0 || t2 < 0 || t3 < 0 || r < 0 || t4 < 0 || y < 0) return;
  /* Inputs and weights have their own buffers. */
  CHECK_EQ_INT(p.value_slot[x], -1);
  CHECK_EQ_INT(p.value_slot[w], -1);
  CHECK_EQ_INT(p.value_bytes[t1], 400);
  /* The alias shares its source's buffer. */
  CHECK_EQ_INT(p.value_slot[r], p.value_slot[t3]);
  CHECK_EQ_INT(p.value_root[r], t3);
  /* t2 dies at neg (step 2); t4 is born at abs (step 4): same slot. t3/r
   * dies at abs; y is born at add (step 5): same slot. t1 lives throughout. */
  CHECK_EQ_INT(p.value_slot[t4], p.value_slot[t2]);
  CHECK_EQ_INT(p.value_slot[y], p.value_slot[t3]);
  CHECK(p.value_slot[t1] != p.value_slot[t2] && p.value_slot[t1] != p.value_slot[t3] &&
        p.value_slot[t1] != p.value_slot[y]);
  CHECK(p.value_slot[t2] != p.value_slot[t3]); /* a kernel's output never shares its input's slot */
  CHECK_EQ_INT(p.num_slots, 3);
  CHECK_EQ_INT(p.planned_bytes, 3 * 400);
  CHECK_EQ_INT(p.unplanned_bytes, 5 * 400); /* t1 t2 t3(+r) t4 y */
  CHECK(p.planned_bytes < p.unplanned_bytes);
  xc_memplan_free(&p);
  /* An unbound symbol is an error naming the value, not a crash. */
  xc_symbind_t empty;
  xc_symbind_init(&empty);
  CHECK_ERR(xc_memplan_build(m, &empty, &p), "n");
  xc_symbind_free(&empty);
  xc_symbind_free(&b);
}

static void run_and_check(xc_executor_t* e, int64_t n, int expect_launches) {
  xc_tensor_t* in = fixture_input(n);
  xc_tensor_t* out[1] = {NULL};
  xc_run_stats_t st;
  CHECK(in != NULL);
  CHECK_OK(xc_executor_run(e, 1, (const xc_tensor_t* const*)&in, out, &st));
  CHECK(out[0] != NULL);
  if (out[0]) {
    CHECK_EQ_INT(out[0]->rank, 1);
    CHECK_EQ_INT(out[0]->dims[0], n);
    CHECK_EQ_INT(fixture_wrong(in, out[0]), 0);
    CHECK_EQ_INT(st.launches, expect_launches);
    CHECK_EQ_INT(st.planned_bytes, 3 * 4 * n);
    CHECK_EQ_INT(st.unplanned_bytes, 5 * 4 * n);
    /* weights (4 bytes) + input + slots */
    CHECK_EQ_INT(st.peak_bytes, 4 + 4 * n + 3 * 4 * n);
    CHECK(st.total_ms >= 0 && st.kernels_ms >= 0);
  }
  xc_tensor_destroy(in);
  xc_tensor_destroy(out[0]);
}

static void check_executor(const xc_compiled_module_t* m) {
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.poison = true; /* any element a kernel skips would read back as NaN */
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(m, NULL, &o, &e));
  if (!e) return;
  run_and_check(e, 100, 5);  /* ragged: add_w runs 4 programs of 32, the rest 2 of 64 */
  run_and_check(e, 1000, 5); /* larger: slots grow */
  run_and_check(e, 37, 5);   /* smaller again: slots kept */
  run_and_check(e, 1, 5);
  run_and_check(e, 0, 0);    /* empty: no programs to launch */

  /* Inputs that do not fit. */
  int64_t d2[2] = {2, 3};
  xc_tensor_t* bad = NULL;
  xc_tensor_t* out[1] = {NULL};
  CHECK_OK(xc_tensor_create(XC_F32, 2, d2, &bad));
  CHECK_ERR(xc_executor_run(e, 1, (const xc_tensor_t* const*)&bad, out, NULL), "rank 1");
  xc_tensor_destroy(bad);
  CHECK_OK(xc_tensor_create(XC_I64, 1, d2, &bad));
  CHECK_ERR(xc_executor_run(e, 1, (const xc_tensor_t* const*)&bad, out, NULL), "dtype f32");
  xc_tensor_destroy(bad);
  CHECK_ERR(xc_executor_run(e, 0, NULL, out, NULL), "takes 1 inputs");
  CHECK(out[0] == NULL);
  xc_executor_destroy(e);

  /* Devices of another target, or with other capabilities, are refused. */
  CHECK_ERR(xc_executor_create(m, "no_such_target", NULL, &e), "no_such_target");
  CHECK(e == NULL);
}

/* Runs into the caller's tensors: the same memory written again with the
 * right values; a tensor of another shape or dtype, a missing one or a wrong
 * count is refused naming the output, and the caller's tensor is kept. */
static void check_run_into(const xc_compiled_module_t* m) {
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.poison = true;
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(m, NULL, &o, &e));
  if (!e) return;
  xc_tensor_t* in = fixture_input(100);
  xc_tensor_t* out[1] = {NULL};
  CHECK_OK(xc_executor_run(e, 1, (const xc_tensor_t* const*)&in, out, NULL));
  CHECK(out[0] != NULL);
  if (!out[0]) {
    xc_tensor_destroy(in);
    xc_executor_destroy(e);
    return;
  }
  void* data = out[0]->data;
  for (int r = 0; r < 3; r++) {
    memset(out[0]->data, 0xff, xc_tensor_nbytes(out[0])); /* NaN: must be overwritten */
    xc_run_stats_t st;
    CHECK_OK(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in, 1, out, &st));
    CHECK(out[0]->data == data);
    CHECK_EQ_INT(fixture_wrong(in, out[0]), 0);
    CHECK_EQ_INT(st.launches, 5);
  }
  /* another input size: the tensor of 100 no longer fits */
  xc_tensor_t* in37 = fixture_input(37);
  CHECK_ERR(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 1, out, NULL), "f32[100]");
  CHECK_ERR(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 1, out, NULL), "run makes f32[37]");
  CHECK(out[0]->data == data); /* still the caller's */
  xc_tensor_t* other = NULL;
  int64_t d37 = 37;
  CHECK_OK(xc_tensor_create(XC_I32, 1, &d37, &other));
  CHECK_ERR(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 1, &other, NULL), "output 0");
  xc_tensor_destroy(other);
  CHECK_OK(xc_tensor_create(XC_F32, 1, &d37, &other));
  CHECK_OK(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 1, &other, NULL));
  CHECK_EQ_INT(fixture_wrong(in37, other), 0);
  xc_tensor_destroy(other);
  xc_tensor_t* none[1] = {NULL};
  CHECK_ERR(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 1, none, NULL), "no tensor given");
  CHECK_ERR(xc_executor_run_into(e, 1, (const xc_tensor_t* const*)&in37, 2, out, NULL), "has 1 outputs, 2 given");
  xc_tensor_destroy(in37);
  xc_tensor_destroy(in);
  xc_tensor_destroy(out[0]);
  xc_executor_destroy(e);
}

/* The knob values stored in a step decide the grid: with BLOCK forced to 64
 * while add_w's body still covers 32 elements per program, half the elements
 * stay poisoned. */
static void check_knobs_reach_grid(const xc_compiled_module_t* m) {
  xc_compiled_module_t* copy = NULL;
  uint8_t* bytes = NULL;
  size_t size = 0;
  CHECK_OK(xc_compiled_module_serialize(m, &bytes, &size));
  if (bytes) CHECK_OK(xc_compiled_module_deserialize(bytes, size, "copy", &copy));
  free(bytes);
  if (!copy) return;
  CHECK_EQ_INT(copy->steps[0].knobs[0], 32);
  copy->steps[0].knobs[0] = 64;
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.poison = true;
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(copy, NULL, &o, &e));
  if (e) {
    xc_tensor_t* in = fixture_input(128);
    xc_tensor_t* out[1] = {NULL};
    CHECK_OK(xc_executor_run(e, 1, (const xc_tensor_t* const*)&in, out, NULL));
    int nan = 0;
    for (int64_t i = 0; out[0] && i < 128; i++) nan += isnan(((float*)out[0]->data)[i]);
    CHECK_EQ_INT(nan, 64); /* programs 0 and 1 each wrote their first 32 only */
    xc_tensor_destroy(in);
    xc_tensor_destroy(out[0]);
    xc_executor_destroy(e);
  }
  xc_compiled_module_destroy(copy);
}

/* Launch graphs: the first run of a shape captures (and replays), later runs
 * of the same shape replay without capturing; another shape is its own
 * bucket; moved buffers force a new capture; no_graphs turns it off. The
 * results are checked every time (poisoned intermediates). */
static void graph_run(xc_executor_t* e, int64_t n, bool replayed, bool captured, int launches) {
  xc_tensor_t* in = fixture_input(n);
  xc_tensor_t* out[1] = {NULL};
  xc_run_stats_t st;
  CHECK_OK(xc_executor_run(e, 1, (const xc_tensor_t* const*)&in, out, &st));
  CHECK(out[0] != NULL);
  if (out[0]) {
    CHECK_EQ_INT(fixture_wrong(in, out[0]), 0);
    CHECK_EQ_INT(st.graph_replayed, replayed);
    CHECK_EQ_INT(st.graph_captured, captured);
    CHECK_EQ_INT(st.launches, launches);
    CHECK(st.graph_note[0] == 0);
  }
  xc_tensor_destroy(in);
  xc_tensor_destroy(out[0]);
}

static void check_graphs(const xc_compiled_module_t* m) {
  xc_executor_options_t o;
  xc_executor_options_init(&o);
  o.poison = true;
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(m, NULL, &o, &e));
  CHECK(xc_device_can_capture(xc_executor_device(e)));
  if (!e) return;
  graph_run(e, 100, true, true, 5);
  graph_run(e, 100, true, false, 5);  /* same shape, same buffers: replay */
  graph_run(e, 100, true, false, 5);
  graph_run(e, 37, true, true, 5);    /* a new shape bucket (new input buffer) */
  graph_run(e, 37, true, false, 5);
  graph_run(e, 100, true, true, 5);   /* input buffer reallocated since: recapture */
  graph_run(e, 5000, true, true, 5);  /* slots grow */
  graph_run(e, 5000, true, false, 5);
  graph_run(e, 0, true, true, 0);     /* empty: a graph with no launches */
  /* While capturing, copies and synchronization are refused. */
  xc_device_t* d = xc_executor_device(e);
  xc_buffer_t* b = NULL;
  CHECK_OK(xc_buffer_alloc(d, 16, &b));
  float f[4] = {0};
  CHECK_OK(xc_device_capture_begin(d));
  CHECK_ERR(xc_buffer_write(b, 0, f, sizeof f), "capturing");
  CHECK_ERR(xc_buffer_read(b, 0, f, sizeof f), "capturing");
  CHECK_ERR(xc_device_synchronize(d), "capturing");
  CHECK_ERR(xc_device_capture_begin(d), "capturing");
  xc_launch_graph_t* g = NULL;
  CHECK_OK(xc_device_capture_end(d, &g));
  CHECK(g != NULL);
  CHECK_OK(xc_launch_graph_run(g)); /* nothing recorded: nothing runs */
  xc_launch_graph_free(g);
  CHECK_ERR(xc_device_capture_end(d, &g), "without capture begin");
  CHECK_OK(xc_buffer_write(b, 0, f, sizeof f));
  xc_buffer_free(b);
  xc_executor_destroy(e);

  o.no_graphs = true;
  CHECK_OK(xc_executor_create(m, NULL, &o, &e));
  if (!e) return;
  graph_run(e, 100, false, false, 5);
  graph_run(e, 100, false, false, 5);
  xc_executor_destroy(e);
}

/* Device-resident runs: the input read from a buffer of the device by its
 * address, the output written into a buffer the executor allocates (the
 * caller's) or into memory the caller gives; the same numbers as a host run;
 * misuse refused with nothing allocated. */
static void check_device_runs(const xc_compiled_module_t* m) {
  xc_executor_t* e = NULL;
  CHECK_OK(xc_executor_create(m, NULL, NULL, &e));
  if (!e) return;
  xc_device_t* d = xc_executor_device(e);
  CHECK(xc_device_has_addresses(d));
  for (int round = 0; round < 3; round++) {
    int64_t n = round == 2 ? 37 : 100;
    xc_tensor_t* in = fixture_input(n);
    xc_buffer_t* src = NULL;
    CHECK_OK(xc_buffer_alloc(d, xc_tensor_nbytes(in), &src));
    CHECK_OK(xc_buffer_write(src, 0, in->data, xc_tensor_nbytes(in)));
    xc_device_tensor_t di = {.dtype = XC_F32, .rank = 1, .dims = {n}, .address = xc_buffer_device_address(src)};
    CHECK(di.address != 0);
    xc_device_tensor_t dout = {0};
    xc_buffer_t* given = NULL;
    if (round == 1) { /* into the caller's memory, with room to spare */
      CHECK_OK(xc_buffer_alloc(d, 4 * (size_t)n + 64, &given));
      dout.address = xc_buffer_device_address(given);
      dout.bytes = 4 * (size_t)n + 64;
    }
    xc_run_stats_t st;
    CHECK_OK(xc_executor_run_device(e, 1, &di, 1, &dout, &st));
    CHECK_EQ_INT(dout.rank, 1);
    CHECK_EQ_INT(dout.dims[0], n);
    CHECK(dout.dtype == XC_F32);
    CHECK_EQ_INT(st.launches, 5);
    CHECK(round == 1 ? dout.buffer == NULL && dout.address == xc_buffer_device_address(given)
                     : dout.buffer != NULL && dout.bytes == 4 * (size_t)n);
    xc_tensor_t* out = NULL;
    int64_t dims[1] = {n};
    CHECK_OK(xc_tensor_create(XC_F32, 1, dims, &out));
    CHECK_OK(xc_buffer_read(round == 1 ? given : dout.buffer, 0, out->data, 4 * (size_t)n));
    CHECK_EQ_INT(fixture_wrong(in, out), 0);
    xc_buffer_free(dout.buffer);
    xc_buffer_free(given);
    xc_buffer_free(src);
    xc_tensor_destroy(out);
    xc_tensor_destroy(in);
  }
  /* Misuse: a wrong shape, a missing address, too little room, counts. */
  xc_buffer_t* src = NULL;
  CHECK_OK(xc_buffer_alloc(d, 400, &src));
  xc_device_tensor_t di = {.dtype = XC_F32, .rank = 2, .dims = {10, 10}, .address = xc_buffer_device_address(src)};
  xc_device_tensor_t dout = {0};
  CHECK_ERR(xc_executor_run_device(e, 1, &di, 1, &dout, NULL), "rank 1");
  CHECK(dout.buffer == NULL);
  di.rank = 1;
  di.dims[0] = 100;
  di.address = 0;
  CHECK_ERR(xc_executor_run_device(e, 1, &di, 1, &dout, NULL), "device address 0");
  di.address = xc_buffer_device_address(src);
  dout.address = xc_buffer_device_address(src) + 200;
  dout.bytes = 100;
  CHECK_ERR(xc_executor_run_device(e, 1, &di, 1, &dout, NULL), "needs 400 bytes");
  CHECK(dout.buffer == NULL);
  CHECK_ERR(xc_executor_run_device(e, 1, &di, 0, NULL, NULL), "has 1 outputs");
  CHECK_ERR(xc_executor_run_device(e, 0, NULL, 1, &dout, NULL), "takes 1 inputs");
  CHECK_ERR(xc_device_copy(d, 0, xc_buffer_device_address(src), 4), "address 0");
  xc_buffer_free(src);
  xc_executor_destroy(e);
}

int main(void) {
  xc_compiled_module_t* m = NULL;
  int compiled = 0;
  xc_status_t s = fixture_module(&m, &compiled);
  CHECK_OK(s);
  if (!m) {
    fprintf(stderr, "test_executor: no module: %d failure(s)\n", xc_test_failures);
    return 1;
  }
  CHECK_EQ_INT(compiled, FIXTURE_KERNELS);
  check_memplan(m);
  check_executor(m);
  check_run_into(m);
  check_knobs_reach_grid(m);
  check_graphs(m);
  check_device_runs(m);
  xc_compiled_module_destroy(m);
  return xc_test_summary("test_executor");
}
