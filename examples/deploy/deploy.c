/* Deploying a compiled module from C: load a .xcm, read one input tensor
 * per graph input (.npy or ONNX .pb), run, write the outputs as .npy.
 * Uses only the installed SDK: include/xcomp/embed.h and libxcomp.so.
 *
 *   cc -O2 -I<prefix>/include deploy.c -L<prefix>/lib -lxcomp -o deploy
 *   ./deploy model.xcm input_0.pb [input_1.npy ...] out_prefix
 *
 * writes out_prefix0.npy, out_prefix1.npy, ... (docs/tutorial-port-a-model.md). */
#include <stdio.h>
#include <stdlib.h>

#include <xcomp/embed.h>
#include <xcomp/tensor_io.h>

static int fail(xc_status_t s) {
  fprintf(stderr, "deploy: %s\n", xc_status_message(s));
  xc_status_free(s);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.xcm INPUT... OUT_PREFIX\n", argv[0]);
    return 2;
  }
  xc_model_t* m = NULL;
  xc_status_t s = xc_model_load(argv[1], NULL, &m); /* NULL: the target's first device */
  if (s) return fail(s);
  int n_in = xc_model_num_ios(m, false), n_out = xc_model_num_ios(m, true);
  if (argc - 3 != n_in) {
    fprintf(stderr, "deploy: %s takes %d inputs, %d given\n", argv[1], n_in, argc - 3);
    xc_model_destroy(m);
    return 2;
  }
  xc_tensor_t** inputs = calloc((size_t)n_in + 1, sizeof *inputs);
  xc_tensor_t** outputs = calloc((size_t)n_out + 1, sizeof *outputs);
  if (!inputs || !outputs) s = xc_error_oom();
  for (int i = 0; !s && i < n_in; i++) s = xc_tensor_read_file(argv[2 + i], &inputs[i], NULL);
  xc_run_stats_t stats;
  if (!s) s = xc_model_run(m, n_in, (const xc_tensor_t* const*)inputs, outputs, &stats);
  for (int i = 0; !s && i < n_out; i++) {
    char path[4096], shape[128];
    snprintf(path, sizeof path, "%s%d.npy", argv[argc - 1], i);
    s = xc_npy_write(path, outputs[i]);
    if (!s)
      printf("%s: %s -> %s\n", xc_model_io_name(m, true, i), xc_tensor_describe(outputs[i], shape, sizeof shape),
             path);
  }
  if (!s) printf("ran on %s (%s) in %.3f ms\n", xc_model_device_name(m), xc_model_target(m), stats.total_ms);
  for (int i = 0; inputs && i < n_in; i++) xc_tensor_destroy(inputs[i]);
  for (int i = 0; outputs && i < n_out; i++) xc_tensor_destroy(outputs[i]);
  free(inputs);
  free(outputs);
  xc_model_destroy(m);
  return s ? fail(s) : 0;
}
