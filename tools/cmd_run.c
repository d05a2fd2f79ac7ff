/* xcomp run: load a model, bind input tensors from files, run it on a target
 * (only the reference interpreter so far) and write the outputs as .npy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "runtime_cli.h"
#include "targets.h"
#include "xcomp/driver.h"
#include "xcomp/frontend.h"
#include "xcomp/interp.h"
#include "xcomp/lower.h"
#include "xcomp/tensor_io.h"

/* mkdir -p: creates dir and any missing parents. */
static xc_status_t make_dir(const char* dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return xc_error(XC_INVALID_ARGUMENT, "--output-dir: bad path");
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char saved = path[i];
    path[i] = '\0';
    struct stat st;
    if (stat(path, &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return xc_error(XC_INVALID_ARGUMENT, "--output-dir %s: %s is not a folder", dir, path);
    } else if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      return xc_error(XC_IO, "--output-dir %s: cannot create %s: %s", dir, path, strerror(errno));
    }
    path[i] = saved;
  }
  return NULL;
}

static int run_main(int argc, char** argv) {
  const xc_cli_command_t* cmd = &xc_cli_run_command;
  const char* model = NULL;
  const char* target = "ref";
  const char* out_dir = ".";
  const char* device = NULL;
  bool trace = false, no_cache = false, poison = false, no_graphs = false, allow_tf32 = false, profile = false;
  bool resident = false;
  char* shapes = NULL; /* --shape options joined */
  const char* profile_json = NULL;
  xc_cli_profile_t prof;
  memset(&prof, 0, sizeof prof);
  int repeat = 1;
  xc_compiled_module_t* cm = NULL;
  xc_session_t* session = NULL; /* ref and tiled: the optimizing (and lowering) session */
  int num_specs = 0;
  xc_cli_input_spec_t* specs = calloc((size_t)argc + 1, sizeof *specs);
  char** spec_copies = calloc((size_t)argc + 1, sizeof *spec_copies);
  xc_graph_t* g = NULL;
  xc_tensor_t** inputs = NULL;
  xc_tensor_t** outputs = NULL;
  xc_symbind_t binds;
  xc_symbind_init(&binds);
  int rc = XC_EXIT_OK;
  if (!specs || !spec_copies) {
    rc = xc_cli_fail(xc_error_oom());
    goto done;
  }
  /* The reference target runs the graph as written unless asked to optimize:
   * it is the oracle other targets are compared with. */
  xc_cli_pass_args_t pa;
  xc_cli_pass_args_init(&pa, 0);
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int m;
    if ((m = xc_cli_pass_option(cmd, argc, argv, &i, &pa)) != 0) {
      if (m < 0) { rc = XC_EXIT_USAGE; goto done; }
    } else if ((m = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--target needs a value"); goto done; }
      target = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--input", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--input needs a value"); goto done; }
      spec_copies[num_specs] = strdup(v);
      if (!spec_copies[num_specs]) { rc = xc_cli_fail(xc_error_oom()); goto done; }
      xc_status_t s = xc_cli_parse_input_spec(spec_copies[num_specs], &specs[num_specs]);
      num_specs++;
      if (s) { rc = xc_cli_fail(s); goto done; }
    } else if ((m = xc_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (m < 0 || !xc_cli_parse_precision(v, &pa.options.precision)) {
        rc = xc_cli_usage_error(cmd, "--precision takes f16, bf16 or f32");
        goto done;
      }
    } else if ((m = xc_cli_option(argc, argv, &i, "--output-dir", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--output-dir needs a value"); goto done; }
      out_dir = v;
    } else if ((m = xc_cli_option(argc, argv, &i, "--device", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--device needs a value"); goto done; }
      device = v;
    } else if (strcmp(argv[i], "--no-cache") == 0 || strcmp(argv[i], "--poison") == 0) {
      if (argv[i][2] == 'n') no_cache = true;
      else poison = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--shape", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--shape needs NAME=DIMS"); goto done; }
      if (!xc_cli_add_shape(&shapes, v)) { rc = xc_cli_fail(xc_error_oom()); goto done; }
    } else if (strcmp(argv[i], "--resident") == 0) {
      resident = true;
    } else if (strcmp(argv[i], "--profile") == 0) {
      profile = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--profile-json", &v)) != 0) {
      if (m < 0) { rc = xc_cli_usage_error(cmd, "--profile-json needs a file"); goto done; }
      profile_json = v;
    } else if (strcmp(argv[i], "--trace") == 0) {
      trace = true;
    } else if (strcmp(argv[i], "--allow-tf32") == 0) {
      allow_tf32 = true;
    } else if (strcmp(argv[i], "--no-cuda-graph") == 0) {
      no_graphs = true;
    } else if ((m = xc_cli_option(argc, argv, &i, "--repeat", &v)) != 0) {
      char* end = NULL;
      long r = m > 0 ? strtol(v, &end, 10) : 0;
      if (m < 0 || !end || *end || r < 1 || r > 1000000) {
        rc = xc_cli_usage_error(cmd, "--repeat needs a count from 1 to 1000000");
        goto done;
      }
      repeat = (int)r;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
      goto done;
    } else if (!model) {
      model = argv[i];
    } else {
      rc = xc_cli_usage_error(cmd, "unexpected argument '%s' (inputs go in --input @FILE)", argv[i]);
      goto done;
    }
  }
  if (!model) { rc = xc_cli_usage_error(cmd, "no MODEL given"); goto done; }
  bool tiled = strcmp(target, "tiled") == 0;
  bool compiled = !tiled && xc_cli_uses_executor(model, target);
  if ((profile || profile_json) && !compiled) {
    rc = xc_cli_usage_error(cmd, "--profile needs a compiled target (--target cpu, opencl, ...) or a .xcm");
    goto done;
  }
  if (resident && !compiled) {
    rc = xc_cli_usage_error(cmd, "--resident needs a compiled target (--target cpu, cuda, rocm) or a .xcm");
    goto done;
  }
  xc_status_t s = NULL;
  if (compiled) {
    /* A compiled target: the module's optimized graph describes the inputs. */
    s = xc_cli_load_compiled(model, target, pa.level_given ? pa.options.opt_level : 2, pa.options.precision,
                             no_cache, allow_tf32, shapes, &cm);
    if (!s) g = cm->graph;
    if (!s && !device && strcmp(target, "ref") != 0) device = target;
  } else {
    /* tiled: the optimized graph lowered to tiled kernels and run by the
     * tiled-IR interpreter (what `xcomp conform --target tiled` checks) */
    if (tiled && !pa.level_given) pa.options.opt_level = 2;
    s = tiled ? NULL : xc_cli_check_target(target);
    if (!s) s = xc_cli_check_file(model);
    if (!s) s = xc_load_model(model, &g);
    if (!s) s = xc_graph_infer(g);
    if (!s) s = xc_graph_set_input_shapes(g, shapes);
    if (!s) s = xc_cli_pass_session("ref", &pa, &session);
    if (!s) s = xc_session_optimize(session, g);
  }
  if (s) { rc = xc_cli_fail(s); goto done; }

  /* Named inputs bind by name; positional ones fill the rest in order. */
  int n = g->num_inputs;
  inputs = calloc((size_t)n + 1, sizeof *inputs);
  outputs = calloc((size_t)g->num_outputs + 1, sizeof *outputs);
  if (!inputs || !outputs) { rc = xc_cli_fail(xc_error_oom()); goto done; }
  s = xc_cli_read_inputs(g, specs, num_specs, pa.options.precision, false, inputs, &binds);
  if (s) { rc = xc_cli_fail(s); goto done; }

  xc_interp_options_t io;
  xc_interp_options_init(&io);
  io.trace = trace;
  xc_cli_run_options_t ro = {device, poison, trace, no_graphs, repeat, resident, NULL};
  if (compiled && (profile || profile_json)) {
    s = xc_cli_profile_init(&prof, cm);
    if (s) { rc = xc_cli_fail(s); goto done; }
    ro.profile = &prof;
  }
  if (compiled) {
    s = xc_cli_run_compiled(cm, &ro, n, (const xc_tensor_t* const*)inputs, outputs);
  } else if (tiled) {
    xc_lowered_module_t* lm = NULL;
    s = xc_session_lower(session, g, &lm);
    if (!s) s = xc_lowered_run_interp(lm, n, (const xc_tensor_t* const*)inputs, outputs);
    xc_session_lowered_free(session, lm);
  } else
    s = xc_interp_run(g, &io, n, (const xc_tensor_t* const*)inputs, outputs);
  if (!s) s = make_dir(out_dir);
  if (s) { rc = xc_cli_fail(s); goto done; }
  for (int i = 0; i < g->num_outputs; i++) {
    char path[4096], b[256];
    snprintf(path, sizeof path, "%s/output_%d.npy", out_dir, i);
    s = xc_npy_write(path, outputs[i]);
    if (s) { rc = xc_cli_fail(s); goto done; }
    printf("output %d '%s': %s -> %s\n", i, g->outputs[i]->name,
           xc_tensor_describe(outputs[i], b, sizeof b), path);
  }
  if (ro.profile && profile) xc_cli_profile_print(&prof, stdout);
  if (ro.profile && profile_json) {
    s = xc_cli_profile_write_json(&prof, profile_json);
    if (s) { rc = xc_cli_fail(s); goto done; }
  }

done:
  free(shapes);
  xc_cli_profile_free(&prof);
  xc_session_destroy(session);
  if (outputs && g)
    for (int i = 0; i < g->num_outputs; i++) xc_tensor_destroy(outputs[i]);
  if (inputs && g)
    for (int i = 0; i < g->num_inputs; i++) xc_tensor_destroy(inputs[i]);
  free(outputs);
  free(inputs);
  xc_symbind_free(&binds);
  if (cm) {
    xc_compiled_module_destroy(cm); /* owns g */
    g = NULL;
  }
  xc_graph_destroy(g);
  if (spec_copies)
    for (int k = 0; k < argc; k++) free(spec_copies[k]);
  free(spec_copies);
  free(specs);
  return rc;
}

const xc_cli_command_t xc_cli_run_command = {
    "run", run_main,
    "xcomp run MODEL [--target T] [--input NAME=@FILE | --input @FILE]... "
    "[--output-dir DIR] [--device SEL] [--trace] [--repeat N] [--resident] [--profile] [--profile-json FILE] "
    "[--no-cuda-graph] [--allow-tf32] [--shape NAME=DIMS]... "
    "[--precision f16|bf16] [-O<n>] [pass options]",
    "Run a model (.xir, .onnx or compiled .xcm) on input tensors and write its outputs.",
    "options:\n"
    "  --target T          where to run it (default: ref, the reference interpreter;\n"
    "                      'xcomp targets' lists the available targets). Another target\n"
    "                      (cpu, opencl[:N]) compiles the model in memory, through the\n"
    "                      compile cache, and runs it with the executor; tiled lowers\n"
    "                      it (-O2 unless -O<n> is given) and runs the tiled kernels\n"
    "                      with the tiled-IR interpreter\n"
    "  --device SEL        device for a compiled module MODEL.xcm (default: its target)\n"
    "  --no-cache          compile without the compile cache\n"
    "  --allow-tf32        compiled f32 GEMMs may use tf32 tensor cores (cuda sm_80+)\n"
    "  --poison            fill intermediate buffers with NaN before running (compiled)\n"
    "  --no-cuda-graph     launch kernel by kernel: do not capture the launch sequence\n"
    "                      once and replay it as a launch graph (CUDA Graphs on cuda;\n"
    "                      a recorded call list on cpu)\n"
    "  --repeat N          run N times (compiled) and print the median run time: wall,\n"
    "                      device (the target's events), input upload and output\n"
    "                      download; the outputs written are those of the last run\n"
    "  --resident          (compiled) keep inputs and outputs in device memory: inputs\n"
    "                      uploaded once and copied on the device each run, outputs\n"
    "                      left there and read once after the last run (cuda, rocm,\n"
    "                      cpu: targets whose memory has device addresses)\n"
    "  --profile           (compiled) time every launch on its own (no launch graph)\n"
    "                      and print, after the outputs, a table per kernel sorted by\n"
    "                      device time: launches, total and mean ms, bytes its buffers\n"
    "                      hold, GB/s, the graph nodes it computes; then the host's\n"
    "                      split of the run (binding, upload, kernels, download).\n"
    "                      With --repeat N (N > 1) the runs after the first are\n"
    "                      summed (the first is a warm-up: one-time set-up costs)\n"
    "  --profile-json FILE write the same profile as JSON to FILE\n"
    "  --precision f16|bf16  run the model's float32 tensors in f16 or bf16 (the\n"
    "                      convert-precision pass); float32 input files are rounded\n"
    "                      to it, outputs are written in it\n"
    "  --shape NAME=DIMS   run at this shape of input NAME (e.g. input_ids=1x64;\n"
    "                      repeatable): a model exported at one size, where its shape\n"
    "                      constants allow (else an error naming the node); compiled\n"
    "                      targets compile for it (a static specialization)\n"
    "  --input NAME=@FILE  bind graph input NAME to the tensor in FILE (.npy or .pb)\n"
    "  --input @FILE       bind the next unbound graph input, in graph-input order\n"
    "  --output-dir DIR    write DIR/output_<i>.npy for output i (default: .; created\n"
    "                      with its parents if missing)\n"
    "  --trace             print each node to stderr as it runs (compiled: the run's\n"
    "                      time and peak memory)\n"
    "pass options (default -O0: the interpreter runs the graph as written):\n"
    XC_CLI_PASS_HELP
    "\n"
    "Prints one line per output: index, name, dtype and shape, file written.\n"
    "Every graph input must be bound exactly once, with the graph's dtype and shape.\n"};
