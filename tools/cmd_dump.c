/* xcomp dump: print a model as .xir text, after shape inference by default. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xcomp/frontend.h"
#include "xcomp/xir.h"

static int dump_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_dump_command;
  const char* model = NULL;
  bool infer = true;
  xc_cli_pass_args_t pa;
  xc_cli_pass_args_init(&pa, 2);
  for (int i = 1; i < argc; i++) {
    int r = xc_cli_pass_option(cmd, argc, argv, &i, &pa);
    if (r < 0) return XC_EXIT_USAGE;
    if (r > 0) continue;
    if (strcmp(argv[i], "--no-infer") == 0)
      infer = false;
    else if (argv[i][0] == '-' && argv[i][1])
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    else if (!model)
      model = argv[i];
    else
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
  }
  if (!model) return xc_cli_usage_error(cmd, "no MODEL given");
  bool optimize = pa.level_given || pa.options.print_after || pa.options.print_after_all ||
                  pa.options.timing || pa.options.num_disabled;
  if (optimize && !infer)
    return xc_cli_usage_error(cmd, "--no-infer cannot be combined with pass options");
  xc_graph_t* g = NULL;
  xc_status_t s = xc_cli_check_file(model);
  if (!s) s = xc_load_model(model, &g);
  if (!s && infer) s = xc_graph_infer(g);
  if (!s && optimize) s = xc_passes_run(g, &pa.options);
  char* text = NULL;
  if (!s) {
    xc_xir_print_options_t o;
    xc_xir_print_options_init(&o);
    /* Printed to a string first so a failure leaves no half-written output. */
    s = xc_xir_print_string(g, &o, &text);
  }
  xc_graph_destroy(g);
  if (s) return xc_cli_fail(s);
  fputs(text, stdout);
  free(text);
  return XC_EXIT_OK;
}

const xc_cli_command_t xc_cli_dump_command = {
    "dump", dump_main, "xcomp dump MODEL [--no-infer] [-O<n>] [pass options]",
    "Print a model (.xir or .onnx) in .xir text form, with inferred types.",
    "options:\n"
    "  --no-infer            print the graph as loaded, without shape inference\n"
    "pass options (any of them runs the pass pipeline, default -O2, before printing):\n"
    XC_CLI_PASS_HELP};
