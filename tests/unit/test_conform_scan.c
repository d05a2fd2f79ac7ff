/* Unit tests of the conformance runner's pieces that need no op kernels:
 * reading op types from ONNX protobuf bytes (hand-encoded here), and the
 * verdict names. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/conformance.h"

/* ModelProto { ir_version: 8, graph { node {op_type "Relu"} node {op_type
 * "Add"} name "g" node {op_type "Relu"} input {name "x" type {tensor_type
 * {elem_type 10}}} } }: field 7 (key 0x3a) holds the GraphProto; its nodes
 * are field 1 (key 0x0a); op_type is field 4 (0x22); inputs are field 11
 * (0x5a), ValueInfoProto.type is field 2, TypeProto.tensor_type field 1,
 * elem_type field 1 (10 = FLOAT16). */
static const unsigned char model[] = {
    0x08, 0x08,                                      /* ir_version = 8 */
    0x3a, 37,                                        /* graph, 37 bytes */
    0x5a, 9, 0x0a, 1, 'x', 0x12, 4, 0x0a, 2, 0x08, 10, /* input x: f16 */
    0x0a, 6, 0x22, 4, 'R', 'e', 'l', 'u',            /* node Relu */
    0x0a, 5, 0x22, 3, 'A', 'd', 'd',                 /* node Add */
    0x12, 1, 'g',                                    /* name "g" */
    0x0a, 6, 0x22, 4, 'R', 'e', 'l', 'u',            /* node Relu again */
};

static char* write_temp(const unsigned char* data, size_t n) {
  char* path = malloc(64);
  snprintf(path, 64, "/tmp/xcomp-scan-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) {
    free(path);
    return NULL;
  }
  if (write(fd, data, n) != (ssize_t)n) n = 0;
  close(fd);
  return path;
}

static void test_scan(void) {
  char* p = write_temp(model, sizeof model);
  CHECK(p != NULL);
  if (!p) return;
  int nodes = -1;
  xc_dtype_t dt = XC_DTYPE_UNDEFINED;
  char* ops = xc_conform_scan_ops(p, &nodes, &dt);
  CHECK_STR(ops, "Relu Add");
  CHECK_EQ_INT(nodes, 3);
  CHECK_EQ_INT(dt, XC_F16);
  free(ops);
  unlink(p);
  free(p);

  /* Truncated inside the graph: the graph length runs past the end. */
  p = write_temp(model, sizeof model - 5);
  ops = xc_conform_scan_ops(p, &nodes, &dt);
  CHECK(ops == NULL);
  CHECK_EQ_INT(nodes, 0);
  free(ops);
  unlink(p);
  free(p);

  /* A model without a graph has no ops (empty list, not an error). */
  p = write_temp(model, 2);
  ops = xc_conform_scan_ops(p, &nodes, &dt);
  CHECK_STR(ops, "");
  CHECK_EQ_INT(nodes, 0);
  CHECK_EQ_INT(dt, XC_DTYPE_UNDEFINED);
  free(ops);
  unlink(p);
  free(p);

  /* A varint that never ends, and a group wire type, are rejected. */
  static const unsigned char bad_varint[] = {0x08, 0xff, 0xff, 0xff};
  static const unsigned char group[] = {0x0b, 0x00};
  p = write_temp(bad_varint, sizeof bad_varint);
  ops = xc_conform_scan_ops(p, &nodes, &dt);
  CHECK(ops == NULL);
  unlink(p);
  free(p);
  p = write_temp(group, sizeof group);
  ops = xc_conform_scan_ops(p, &nodes, &dt);
  CHECK(ops == NULL);
  unlink(p);
  free(p);

  CHECK(xc_conform_scan_ops("/nonexistent/model.onnx", &nodes, &dt) == NULL);
}

static void test_names(void) {
  CHECK_STR(xc_conform_verdict_name(XC_CONFORM_PASS), "PASS");
  CHECK_STR(xc_conform_verdict_name(XC_CONFORM_FAIL), "FAIL");
  CHECK_STR(xc_conform_verdict_name(XC_CONFORM_UNSUPPORTED), "UNSUPPORTED");
  xc_conform_options_t o;
  xc_conform_options_init(&o);
  CHECK_STR(o.target, "ref");
  CHECK_NEAR(o.timeout_s, 60, 0);
  /* A folder without tests is an empty report, a missing folder an error. */
  xc_conform_report_t r;
  CHECK_ERR(xc_conform_run("/nonexistent-folder", &o, &r), "not a folder");
  char dir[] = "/tmp/xcomp-conform-XXXXXX";
  if (mkdtemp(dir)) {
    CHECK_OK(xc_conform_run(dir, &o, &r));
    CHECK_EQ_INT(r.num_cases, 0);
    xc_conform_report_free(&r);
    o.filter = "(";
    CHECK_ERR(xc_conform_run(dir, &o, &r), "--filter");
    rmdir(dir);
  }
}

int main(void) {
  test_scan();
  test_names();
  return xc_test_summary("test_conform_scan");
}
