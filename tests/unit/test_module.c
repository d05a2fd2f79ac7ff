/* Compiled module files (.xcm): write/read round trip (every field, bytes
 * stable), the file on disk (temp + rename), corruption of every byte and
 * truncation at every length refused cleanly, wrong magic and version named,
 * and the parser behind the checksum fed every single-byte change of the
 * payload with a recomputed checksum (must never crash). */
#include <unistd.h>

#include "test_module_fixture.h"

static void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void reseal(uint8_t* bytes, size_t size) {
  xc_hash128_t h = xc_hash128(bytes + 48, size - 48);
  put_u64(bytes + 24, h.lo);
  put_u64(bytes + 32, h.hi);
}

static void check_round_trip(const xc_compiled_module_t* m, const uint8_t* bytes, size_t size) {
  xc_compiled_module_t* back = NULL;
  CHECK_OK(xc_compiled_module_deserialize(bytes, size, "chain.xcm", &back));
  if (!back) return;
  CHECK_STR(back->target, "cpu");
  CHECK_STR(back->target, m->target);
  CHECK_STR(back->xcomp_version, m->xcomp_version);
  CHECK_STR(back->device_name, m->device_name);
  CHECK(back->caps_fingerprint.lo == m->caps_fingerprint.lo && back->caps_fingerprint.hi == m->caps_fingerprint.hi);
  CHECK_EQ_INT(back->num_kernels, FIXTURE_KERNELS);
  CHECK_EQ_INT(back->num_steps, 6);
  CHECK_EQ_INT(back->num_values, m->num_values);
  CHECK_EQ_INT(back->num_inputs, 1);
  CHECK_EQ_INT(back->num_outputs, 1);
  CHECK_STR(back->values[back->inputs[0]].name, "x");
  CHECK_STR(back->values[back->outputs[0]].name, "y");
  /* The symbolic dim survives as the symbol n. */
  const xc_cm_value_t* x = &back->values[back->inputs[0]];
  CHECK_EQ_INT(x->rank, 1);
  CHECK(x->dims[0].sym && x->dims[0].sym->kind == XC_SYM_VAR && strcmp(x->dims[0].sym->name, "n") == 0);
  for (int i = 0; i < m->num_values; i++) {
    char a[128], b[128];
    CHECK_STR(back->values[i].name, m->values[i].name);
    CHECK_EQ_INT(back->values[i].dtype, m->values[i].dtype);
    CHECK_EQ_INT(back->values[i].flags, m->values[i].flags);
    CHECK_EQ_INT(back->values[i].rank, m->values[i].rank);
    for (int d = 0; d < m->values[i].rank; d++)
      CHECK_STR(xc_dim_print(back->values[i].dims[d], a, sizeof a), xc_dim_print(m->values[i].dims[d], b, sizeof b));
  }
  /* The weight's data, through the graph's weights section. */
  int w = -1;
  for (int i = 0; i < back->num_values; i++)
    if (strcmp(back->values[i].name, "w") == 0) w = i;
  CHECK(w >= 0 && (back->values[w].flags & XC_CM_VALUE_WEIGHT) && back->values[w].constant);
  if (w >= 0 && back->values[w].constant) CHECK_NEAR(((const float*)back->values[w].constant->data)[0], 0.5, 0);
  CHECK(xc_graph_find_value(back->graph, "t1") != NULL);
  /* Steps: kernels with buffer bindings by value, scalar dims and knobs; the alias. */
  CHECK_EQ_INT(back->steps[0].kind, XC_CM_STEP_KERNEL);
  CHECK_EQ_INT(back->steps[0].num_params, 4);
  CHECK_STR(back->values[back->steps[0].params[0].value].name, "x");
  CHECK_STR(back->values[back->steps[0].params[1].value].name, "w");
  CHECK_STR(back->values[back->steps[0].params[2].value].name, "t1");
  CHECK_EQ_INT(back->steps[0].params[2].role, XC_ROLE_OUT);
  CHECK_EQ_INT(back->steps[0].params[3].value, -1);
  CHECK(back->steps[0].params[3].dim.sym && strcmp(back->steps[0].params[3].dim.sym->name, "n") == 0);
  CHECK_EQ_INT(back->steps[0].knobs[0], 32);
  CHECK_EQ_INT(back->steps[3].kind, XC_CM_STEP_ALIAS);
  CHECK_STR(back->values[back->steps[3].alias_dst].name, "r");
  CHECK_STR(back->values[back->steps[3].alias_src].name, "t3");
  for (int k = 0; k < m->num_kernels; k++) {
    CHECK_STR(back->kernels[k].name, m->kernels[k].name);
    CHECK_STR(back->kernels[k].entry, m->kernels[k].entry);
    CHECK_STR(back->kernels[k].blob.format, "elf-so");
    CHECK_EQ_INT(back->kernels[k].blob.size, m->kernels[k].blob.size);
    CHECK(memcmp(back->kernels[k].blob.bytes, m->kernels[k].blob.bytes, m->kernels[k].blob.size) == 0);
    CHECK_STR(back->kernels[k].tiled_text, m->kernels[k].tiled_text);
    CHECK(back->kernels[k].tiled && back->kernels[k].tiled->grid_rank == 1);
  }
  /* The weights are not copied out of the weights section: the linked
   * graph's constants are views of it, here and in the built module. */
  int weights_seen = 0;
  for (int i = 0; i < back->num_values; i++) {
    if (!(back->values[i].flags & XC_CM_VALUE_WEIGHT)) continue;
    const xc_tensor_t* t = back->values[i].constant;
    const uint8_t* at = t ? (const uint8_t*)t->data : NULL;
    CHECK(at && at >= back->weights && at + xc_tensor_nbytes(t) <= back->weights + back->weights_size);
    CHECK(t && !t->owns_data);
    const xc_tensor_t* built = m->values[i].constant;
    at = built ? (const uint8_t*)built->data : NULL;
    CHECK(at && at >= m->weights && at + xc_tensor_nbytes(built) <= m->weights + m->weights_size);
    weights_seen++;
  }
  CHECK(weights_seen > 0);
  /* Serializing again gives the same bytes. */
  uint8_t* again = NULL;
  size_t again_size = 0;
  CHECK_OK(xc_compiled_module_serialize(back, &again, &again_size));
  CHECK_EQ_INT(again_size, size);
  CHECK(again && memcmp(again, bytes, size) == 0);
  free(again);
  xc_compiled_module_destroy(back);
}

static void check_file(const xc_compiled_module_t* m, const uint8_t* bytes, size_t size) {
  char dir[] = "/tmp/xcomp-test-module-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/chain.xcm", dir);
  CHECK_OK(xc_compiled_module_write(m, path));
  uint8_t* disk = NULL;
  size_t disk_size = 0;
  CHECK_OK(xc_read_file_bytes(path, &disk, &disk_size));
  CHECK_EQ_INT(disk_size, size);
  CHECK(disk && memcmp(disk, bytes, size) == 0);
  free(disk);
  xc_compiled_module_t* back = NULL;
  CHECK_OK(xc_compiled_module_read(path, &back));
  xc_compiled_module_destroy(back);
  /* Nothing but the file itself is left in the folder (no temp files). */
  char cmd[300];
  snprintf(cmd, sizeof cmd, "test \"$(ls -A %s | wc -l)\" = 1", dir);
  CHECK_EQ_INT(system(cmd), 0);
  CHECK_ERR(xc_compiled_module_read("/nonexistent/x.xcm", &back), "cannot open");
  unlink(path);
  rmdir(dir);
}

static void check_damage(const uint8_t* bytes, size_t size) {
  uint8_t* copy = malloc(size);
  if (!copy) return;
  memcpy(copy, bytes, size);
  /* Every byte flipped: refused (the checksum, or the header checks). */
  int accepted = 0;
  for (size_t i = 0; i < size; i++) {
    copy[i] ^= 0x5a;
    xc_compiled_module_t* m = NULL;
    xc_status_t s = xc_compiled_module_deserialize(copy, size, "damaged.xcm", &m);
    if (!s || m) accepted++;
    xc_status_free(s);
    xc_compiled_module_destroy(m);
    copy[i] ^= 0x5a;
  }
  CHECK_EQ_INT(accepted, 0);
  /* Every truncation: refused. */
  accepted = 0;
  int named = 0;
  for (size_t n = 0; n < size; n++) {
    xc_compiled_module_t* m = NULL;
    xc_status_t s = xc_compiled_module_deserialize(bytes, n, "short.xcm", &m);
    if (!s || m) accepted++;
    if (s && n >= 48 && strstr(xc_status_message(s), "truncated")) named++;
    xc_status_free(s);
    xc_compiled_module_destroy(m);
  }
  CHECK_EQ_INT(accepted, 0);
  CHECK_EQ_INT(named, (long long)size - 48);
  /* Magic and version. */
  copy[0] = 'Y';
  CHECK_ERR(xc_compiled_module_deserialize(copy, size, "m.xcm", &(xc_compiled_module_t*){NULL}),
            "not a compiled xcomp module");
  copy[0] = bytes[0];
  copy[8] = 7;
  CHECK_ERR(xc_compiled_module_deserialize(copy, size, "m.xcm", &(xc_compiled_module_t*){NULL}),
            "format version 7");
  copy[8] = bytes[8];
  copy[size / 2] ^= 1;
  CHECK_ERR(xc_compiled_module_deserialize(copy, size, "m.xcm", &(xc_compiled_module_t*){NULL}), "checksum");
  free(copy);
}

/* Behind a valid checksum: every single-byte change outside the kernel blobs
 * either parses or is refused with a message; never a crash (run under the
 * sanitizers). */
static void check_resealed(const xc_compiled_module_t* m, const uint8_t* bytes, size_t size) {
  uint8_t* copy = malloc(size);
  size_t blob_at[FIXTURE_KERNELS], blob_size[FIXTURE_KERNELS];
  if (!copy) return;
  memcpy(copy, bytes, size);
  for (int k = 0; k < m->num_kernels && k < FIXTURE_KERNELS; k++) {
    blob_size[k] = m->kernels[k].blob.size;
    blob_at[k] = size;
    for (size_t at = 48; at + blob_size[k] <= size; at++)
      if (memcmp(bytes + at, m->kernels[k].blob.bytes, blob_size[k]) == 0) {
        blob_at[k] = at;
        break;
      }
    CHECK(blob_at[k] < size);
  }
  /* Text (graph, tiled IR) has its own parsers' tests: sample it sparsely. */
  size_t graph_at = size;
  for (size_t at = 48; at + 6 <= size; at++)
    if (memcmp(bytes + at, "xir 1\n", 6) == 0) {
      graph_at = at;
      break;
    }
  int refused = 0, tried = 0;
  for (size_t i = 48; i < size; i++) {
    bool skip = false;
    for (int k = 0; k < m->num_kernels && k < FIXTURE_KERNELS; k++)
      skip |= i >= blob_at[k] && i < blob_at[k] + blob_size[k];
    if (i >= graph_at && i < graph_at + m->graph_text_size && i % 64 != 0) skip = true;
    if (skip) continue;
    copy[i] ^= 0xff;
    reseal(copy, size);
    xc_compiled_module_t* back = NULL;
    xc_status_t s = xc_compiled_module_deserialize(copy, size, "resealed.xcm", &back);
    tried++;
    if (s) {
      refused++;
      CHECK(strlen(xc_status_message(s)) > 0);
    }
    xc_status_free(s);
    xc_compiled_module_destroy(back);
    copy[i] = bytes[i];
  }
  CHECK(tried > 1000);
  CHECK(refused > tried / 4);
  free(copy);
}

int main(void) {
  xc_compiled_module_t* m = NULL;
  int compiled = 0;
  CHECK_OK(fixture_module(&m, &compiled));
  if (!m) return xc_test_summary("test_module");
  uint8_t* bytes = NULL;
  size_t size = 0;
  CHECK_OK(xc_compiled_module_serialize(m, &bytes, &size));
  if (bytes) {
    CHECK(memcmp(bytes, "XCOMPMOD", 8) == 0);
    check_round_trip(m, bytes, size);
    check_file(m, bytes, size);
    check_damage(bytes, size);
    check_resealed(m, bytes, size);
  }
  free(bytes);
  xc_compiled_module_destroy(m);
  return xc_test_summary("test_module");
}
