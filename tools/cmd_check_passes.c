/* xcomp check-passes: the semantics-preservation harness on one model. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xcomp/frontend.h"
#include "xcomp/pass_check.h"
#include "xcomp/tensor_io.h"

static int check_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_check_passes_command;
  const char* model = NULL;
  const char* data_dir = NULL;
  const char* target = "ref";
  const char* files[64];
  int num_files = 0;
  xc_pass_check_options_t o;
  xc_pass_check_options_init(&o);
  xc_cli_pass_args_t pa;
  xc_cli_pass_args_init(&pa, 3);
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m = xc_cli_pass_option(cmd, argc, argv, &i, &pa);
    if (m < 0) return XC_EXIT_USAGE;
    if (m > 0) continue;
    if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--target needs a value");
      target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--data", &v)) != 0) {
      if (m < 0) return xc_cli_usage_error(cmd, "--data needs a folder");
      data_dir = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--input", &v)) != 0) {
      if (m < 0 || v[0] != '@' || !v[1]) return xc_cli_usage_error(cmd, "--input takes @FILE");
      if (num_files == 64) return xc_cli_usage_error(cmd, "too many --input options");
      files[num_files++] = v + 1;
    } else if ((m = xc_cli_option(argc, argv, &i, "--seeds", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_int(v, &o.num_seeds) || o.num_seeds > 100)
        return xc_cli_usage_error(cmd, "--seeds takes a number from 0 to 100");
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  if (!model) return xc_cli_usage_error(cmd, "no MODEL given");
  if (data_dir && num_files) return xc_cli_usage_error(cmd, "use --data or --input, not both");
  o.passes = pa.options;
  o.passes.disabled = pa.disabled;
  o.log = stdout;
  xc_graph_t* g = NULL;
  xc_tensor_t** templates = NULL;
  xc_status_t s = xc_cli_target_traits(target, &o.passes.target);
  if (!s) s = xc_cli_check_file(model);
  if (!s) s = xc_load_model(model, &g);
  if (!s) s = xc_graph_infer(g);
  if (!s) {
    templates = calloc((size_t)g->num_inputs + 1, sizeof *templates);
    if (!templates) s = xc_error_oom();
  }
  if (!s && num_files > g->num_inputs)
    s = xc_error(XC_INVALID_ARGUMENT, "%d --input files for %d graph inputs", num_files,
                 g->num_inputs);
  for (int i = 0; !s && g && i < g->num_inputs; i++) {
    char path[4096];
    const char* file = NULL;
    if (data_dir) {
      snprintf(path, sizeof path, "%s/input_%d.pb", data_dir, i);
      file = path;
    } else if (i < num_files) {
      file = files[i];
    }
    if (!file) continue;
    s = xc_tensor_read_file(file, &templates[i], NULL);
    if (!s && (templates[i]->dtype != g->inputs[i]->dtype || templates[i]->rank != g->inputs[i]->rank))
      s = xc_error(XC_INVALID_ARGUMENT, "%s does not fit graph input '%s'", file,
                   g->inputs[i]->name);
  }
  int failures = 0;
  if (!s) s = xc_pass_check(g, (const xc_tensor_t* const*)templates, &o, &failures);
  if (templates)
    for (int i = 0; i < g->num_inputs; i++) xc_tensor_destroy(templates[i]);
  free(templates);
  xc_graph_destroy(g);
  if (s) return xc_cli_fail(s);
  if (failures) return xc_cli_errorf("%s: %d result(s) changed by a pass", model, failures);
  printf("all passes preserve the results of %s\n", model);
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_check_passes_command = {
    "check-passes", check_main,
    "xcomp check-passes MODEL [--data DIR | --input @FILE...] [--seeds N] [--target T] [-O<n>] "
    "[pass options]",
    "Run the interpreter before and after every pass and check the results agree.",
    "options:\n"
    "  --data DIR       take input templates from DIR/input_<k>.pb (a test_data_set folder)\n"
    "  --input @FILE    template for the next graph input (.npy or .pb)\n"
    "  --seeds N        random input sets besides the templates (default 3)\n"
    "  --target T       whose traits (layout, limits) the passes read (default ref)\n"
    "pass options (default -O3, every pass):\n" XC_CLI_PASS_HELP
    "\n"
    "Templates give input shapes and the values of integer/bool inputs (token ids,\n"
    "masks); float inputs are drawn uniformly from [-2, 2). Results are compared with\n"
    "the per-dtype tolerance of docs/conformance.md. Exit status 1 when a pass changed\n"
    "a result.\n"};
