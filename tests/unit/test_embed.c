/* The embedding API (include/xcomp/embed.h): compile from a file and from
 * ONNX bytes, describe inputs and outputs (symbolic dims included), run,
 * save and load, the options struct (the tuning database), and the errors
 * of each call. Runs on the cpu target with a compile cache of its own. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/embed.h"
#include "xcomp/module.h"
#include "xcomp/tensor.h"

static const char* kRelu =
    "xir 1\n"
    "graph relu opset 23 {\n"
    "  input x: f32[n,3]\n"
    "  y = Relu(x)\n"
    "  output y\n"
    "}\n";

static void check_relu(xc_model_t* m, int64_t rows) {
  int64_t dims[2] = {rows, 3};
  xc_tensor_t* x = NULL;
  CHECK_OK(xc_tensor_create(XC_F32, 2, dims, &x));
  if (!x) return;
  for (int64_t i = 0; i < x->numel; i++) xc_tensor_set_f64(x, i, (double)i - 2.5);
  xc_tensor_t* y = NULL;
  xc_run_stats_t stats;
  CHECK_OK(xc_model_run(m, 1, (const xc_tensor_t* const*)&x, &y, &stats));
  if (y) {
    CHECK_EQ_INT(y->rank, 2);
    CHECK_EQ_INT((int)y->dims[0], (int)rows);
    for (int64_t i = 0; i < y->numel; i++) CHECK_NEAR(xc_tensor_get_f64(y, i), i > 2 ? (double)i - 2.5 : 0.0, 0);
    CHECK(stats.launches >= 1);
  }
  xc_tensor_destroy(y);
  xc_tensor_destroy(x);
}

int main(void) {
  char dir[] = "/tmp/xcomp-embed.XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char cache[512], model[512], module[512];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(model, sizeof model, "%s/relu.xir", dir);
  snprintf(module, sizeof module, "%s/relu.xcm", dir);
  setenv("XCOMP_CACHE_DIR", cache, 1);
  FILE* f = fopen(model, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(kRelu, f);
    fclose(f);
  }

  xc_model_t* m = NULL;
  CHECK_OK(xc_model_compile_file(model, "cpu", NULL, -1, true, &m));
  if (m) {
    CHECK_STR(xc_model_target(m), "cpu");
    CHECK_EQ_INT(xc_model_num_ios(m, false), 1);
    CHECK_EQ_INT(xc_model_num_ios(m, true), 1);
    CHECK_STR(xc_model_io_name(m, false, 0), "x");
    CHECK_STR(xc_model_io_name(m, true, 0), "y");
    CHECK(xc_model_io_name(m, false, 1) == NULL);
    CHECK_EQ_INT(xc_model_io_dtype(m, false, 0), XC_F32);
    CHECK_EQ_INT(xc_model_io_rank(m, false, 0), 2);
    char buf[64];
    CHECK_EQ_INT((int)xc_model_io_dim(m, false, 0, 0, buf, sizeof buf), -1);
    CHECK_STR(buf, "n");
    CHECK_EQ_INT((int)xc_model_io_dim(m, false, 0, 1, buf, sizeof buf), 3);
    CHECK_EQ_INT((int)xc_model_io_dim(m, false, 0, 2, buf, sizeof buf), -1);
    check_relu(m, 2);
    check_relu(m, 5); /* the symbol binds again per run */
    CHECK(xc_model_device_name(m) && xc_model_device_name(m)[0]);

    /* Wrong inputs: count, dtype, shape. */
    int64_t dims[2] = {2, 4};
    xc_tensor_t* bad = NULL;
    xc_tensor_t* out = NULL;
    CHECK_OK(xc_tensor_create(XC_F32, 2, dims, &bad));
    CHECK_ERR(xc_model_run(m, 0, NULL, &out, NULL), "takes 1 input");
    CHECK_ERR(xc_model_run(m, 1, (const xc_tensor_t* const*)&bad, &out, NULL), "x");
    xc_tensor_destroy(bad);
    bad = NULL;
    CHECK_OK(xc_tensor_create(XC_I64, 2, dims, &bad));
    CHECK_ERR(xc_model_run(m, 1, (const xc_tensor_t* const*)&bad, &out, NULL), "x");
    xc_tensor_destroy(bad);

    CHECK_OK(xc_model_save(m, module));
    xc_model_destroy(m);
  }

  /* The saved module loads and runs. */
  m = NULL;
  CHECK_OK(xc_model_load(module, NULL, &m));
  if (m) check_relu(m, 3);
  xc_model_destroy(m);

  /* ONNX bytes. */
  uint8_t* bytes = NULL;
  size_t size = 0;
  CHECK_OK(xc_read_file_bytes("tests/models/mlp/model.onnx", &bytes, &size));
  m = NULL;
  CHECK_OK(xc_model_compile_onnx_buffer(bytes, size, NULL, "f32", 2, false, &m));
  if (m) CHECK_EQ_INT(xc_model_num_ios(m, false), 1);
  xc_model_destroy(m);
  free(bytes);

  /* The options struct: defaults, a file and bytes, the tuning database. */
  xc_model_options_t mo;
  xc_model_options_init(&mo);
  CHECK(mo.target == NULL && mo.precision == NULL && mo.opt_level == -1 && mo.use_cache);
  CHECK(mo.tuning_db == NULL && !mo.no_tuning_db);
  m = NULL;
  CHECK_OK(xc_model_compile(model, NULL, 0, NULL, &m)); /* NULL options: the defaults (cpu) */
  if (m) {
    CHECK_STR(xc_model_target(m), "cpu");
    check_relu(m, 4);
  }
  xc_model_destroy(m);
  CHECK_OK(xc_read_file_bytes("tests/models/mlp/model.onnx", &bytes, &size));
  mo.use_cache = false;
  mo.no_tuning_db = true;
  m = NULL;
  CHECK_OK(xc_model_compile(NULL, bytes, size, &mo, &m));
  if (m) CHECK_EQ_INT(xc_model_num_ios(m, true), 1);
  xc_model_destroy(m);
  m = NULL;
  CHECK_ERR(xc_model_compile(model, bytes, size, &mo, &m), "not both");
  free(bytes);
  char missing_db[600];
  snprintf(missing_db, sizeof missing_db, "%s/missing.db", dir);
  xc_model_options_init(&mo);
  mo.tuning_db = missing_db;
  xc_status_t st = xc_model_compile(model, NULL, 0, &mo, &m);
  CHECK(st != NULL && xc_status_code(st) == XC_NOT_FOUND);
  if (st) {
    CHECK(strstr(xc_status_message(st), "missing.db") != NULL);
    xc_status_free(st);
  }
  CHECK(m == NULL);
  mo.no_tuning_db = true; /* no database at all: the named file is not opened */
  CHECK_OK(xc_model_compile(model, NULL, 0, &mo, &m));
  xc_model_destroy(m);
  m = NULL;
  CHECK_ERR(xc_model_compile(NULL, NULL, 0, NULL, &m), "no model path");

  /* Errors name what is wrong. */
  m = NULL;
  CHECK_ERR(xc_model_compile_file("/nonexistent/model.onnx", "cpu", NULL, -1, true, &m), "/nonexistent/model.onnx");
  CHECK_ERR(xc_model_compile_file(model, "nosuch", NULL, -1, true, &m), "nosuch");
  CHECK_ERR(xc_model_compile_file(model, "ref", NULL, -1, true, &m), "reference interpreter");
  CHECK_ERR(xc_model_compile_file(model, "cpu", "f8", -1, true, &m), "precision 'f8'");
  CHECK_ERR(xc_model_compile_file(model, "cpu", NULL, 7, true, &m), "optimization level 7");
  CHECK_ERR(xc_model_compile_onnx_buffer("junk", 4, "cpu", NULL, -1, true, &m), "onnx");
  CHECK_ERR(xc_model_compile_onnx_buffer(NULL, 0, "cpu", NULL, -1, true, &m), "empty");
  CHECK_ERR(xc_model_load("/nonexistent/m.xcm", NULL, &m), "/nonexistent/m.xcm");
  CHECK(m == NULL);
  CHECK_ERR(xc_model_run(NULL, 0, NULL, NULL, NULL), "no model");
  xc_model_destroy(NULL);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  return xc_test_summary("test_embed");
}
