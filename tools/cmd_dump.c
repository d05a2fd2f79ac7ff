/* xcomp dump: print a model at a stage of the pipeline: as imported (after
 * shape inference), optimized by the pass pipeline, as the fusion plan
 * (text or Graphviz), as the tiled kernels with the target's schedules, or
 * as the kernels' emitted source; or the statistics of every stage. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime_cli.h"
#include "xcomp/frontend.h"
#include "xcomp/fusion.h"
#include "xcomp/lower.h"
#include "xcomp/xir.h"

typedef enum { STAGE_IMPORTED, STAGE_OPTIMIZED, STAGE_FUSED, STAGE_KERNELS, STAGE_SOURCE } stage_t;

/* Every kernel of the lowered, scheduled graph: its tiled IR with the
 * schedule record and, for the source stage, what the target's emitter
 * makes of it (no target compile). An emission failure names the kernel. */
static xc_status_t print_kernels(const xc_session_t* session, const xc_graph_t* g, bool source, FILE* f) {
  xc_lowered_module_t* lm = NULL;
  XC_RETURN_IF_ERROR(xc_session_lower(session, g, &lm));
  xc_target_t* t = xc_session_target(session);
  const xc_device_caps_t* caps = xc_session_caps(session);
  xc_status_t s = NULL;
  for (int i = 0; !s && i < lm->num_kernels; i++) {
    const xc_lowered_kernel_t* lk = &lm->kernels[i];
    const xc_tiled_kernel_t* k = lk->kernel;
    fprintf(f, "%s== kernel %d/%d %s (graph nodes: %s)\n", i ? "\n" : "", i + 1, lm->num_kernels, k->name,
            k->origin ? k->origin : "?");
    xc_tiled_print(k, f);
    if (!source) continue;
    xc_knob_t knobs[XC_TILED_MAX_SCHED_KNOBS];
    int nk = k->num_knobs < XC_TILED_MAX_SCHED_KNOBS ? k->num_knobs : XC_TILED_MAX_SCHED_KNOBS;
    for (int j = 0; j < nk; j++) knobs[j] = (xc_knob_t){k->knobs[j].name, lk->knobs[j]};
    xc_kernel_source_t src;
    s = xc_target_emit(t, caps, k, knobs, nk, &src);
    if (s) {
      s = xc_status_annotate(s, "kernel '%s' (graph nodes: %s)", k->name, k->origin ? k->origin : "?");
      break;
    }
    fprintf(f, "\n-- %s source (%s)\n%s", src.language ? src.language : "?", src.entry, src.text);
    xc_kernel_source_release(&src);
  }
  xc_session_lowered_free(session, lm);
  return s;
}

static xc_status_t print_stats(xc_graph_t* g, const xc_session_t* session, int opt_level) {
  printf("== stage imported\n");
  XC_RETURN_IF_ERROR(xc_graph_stats_print(g, NULL, stdout));
  XC_RETURN_IF_ERROR(xc_session_optimize(session, g));
  printf("\n== stage optimized (-O%d)\n", opt_level);
  XC_RETURN_IF_ERROR(xc_graph_stats_print(g, NULL, stdout));
  xc_fusion_plan_t* plan = NULL;
  XC_RETURN_IF_ERROR(xc_session_plan(session, g, &plan));
  printf("\n== stage fused\n");
  xc_status_t s = xc_graph_stats_print(g, plan, stdout);
  xc_fusion_plan_destroy(plan);
  return s;
}

/* shapes: the --shape options joined (freed by dump_main). */
static int dump_args(int argc, char** argv, char** shapes) {
  const xc_cli_command_t* cmd = &xc_cli_dump_command;
  const char* model = NULL;
  const char* target = "ref";
  bool infer = true, stats = false, stage_given = false, precision_given = false;
  stage_t stage = STAGE_IMPORTED;
  xc_plan_format_t format = XC_PLAN_TEXT;
  bool format_given = false;
  xc_cli_pass_args_t pa;
  xc_cli_pass_args_init(&pa, 2);
  for (int i = 1; i < argc; i++) {
    const char* v = NULL;
    int r = xc_cli_pass_option(cmd, argc, argv, &i, &pa);
    if (r < 0) return XC_EXIT_USAGE;
    if (r > 0) continue;
    if ((r = xc_cli_option(argc, argv, &i, "--stage", &v)) != 0) {
      if (r < 0) return xc_cli_usage_error(cmd, "--stage needs a value");
      if (strcmp(v, "imported") == 0) stage = STAGE_IMPORTED;
      else if (strcmp(v, "optimized") == 0) stage = STAGE_OPTIMIZED;
      else if (strcmp(v, "fused") == 0) stage = STAGE_FUSED;
      else if (strcmp(v, "kernels") == 0) stage = STAGE_KERNELS;
      else if (strcmp(v, "source") == 0) stage = STAGE_SOURCE;
      else return xc_cli_usage_error(cmd, "--stage '%s': expected imported, optimized, fused, kernels or source", v);
      stage_given = true;
    } else if ((r = xc_cli_option(argc, argv, &i, "--format", &v)) != 0) {
      if (r < 0) return xc_cli_usage_error(cmd, "--format needs a value");
      if (strcmp(v, "text") == 0) format = XC_PLAN_TEXT;
      else if (strcmp(v, "dot") == 0) format = XC_PLAN_DOT;
      else return xc_cli_usage_error(cmd, "--format '%s': expected text or dot", v);
      format_given = true;
    } else if ((r = xc_cli_option(argc, argv, &i, "--target", &v)) != 0) {
      if (r < 0) return xc_cli_usage_error(cmd, "--target needs a value");
      target = v;
    } else if ((r = xc_cli_option(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) return xc_cli_usage_error(cmd, "--shape needs NAME=DIMS");
      if (!xc_cli_add_shape(shapes, v)) return xc_cli_fail(xc_error_oom());
    } else if ((r = xc_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (r < 0 || !xc_cli_parse_precision(v, &pa.options.precision))
        return xc_cli_usage_error(cmd, "--precision takes f16, bf16 or f32");
      precision_given = pa.options.precision != XC_DTYPE_UNDEFINED;
    } else if (strcmp(argv[i], "--stats") == 0) {
      stats = true;
    } else if (strcmp(argv[i], "--no-infer") == 0) {
      infer = false;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return xc_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return xc_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  if (!model) return xc_cli_usage_error(cmd, "no MODEL given");
  bool pass_options = pa.level_given || pa.options.print_after || pa.options.print_after_all ||
                      pa.options.timing || pa.options.num_disabled || precision_given;
  if (!stage_given && pass_options) stage = STAGE_OPTIMIZED;
  if (precision_given && stage == STAGE_IMPORTED && !stats)
    return xc_cli_usage_error(cmd, "--precision applies from --stage optimized on (the convert-precision pass)");
  if (format_given && stage != STAGE_FUSED && !stats)
    return xc_cli_usage_error(cmd, "--format applies to --stage fused");
  if (!infer && (stage != STAGE_IMPORTED || stats))
    return xc_cli_usage_error(cmd, "--no-infer only applies to --stage imported");
  if ((stage == STAGE_KERNELS || stage == STAGE_SOURCE) && (!strcmp(target, "ref") || !strcmp(target, "tiled")))
    return xc_cli_usage_error(cmd, "--stage kernels and source need a compiled target (--target cpu, cuda:sm_90, ...)");
  /* The session resolves the target once: the traits the passes and the
   * fusion planner read. */
  xc_session_t* session = NULL;
  xc_status_t s = xc_cli_pass_session(target, &pa, &session);
  if (s) return xc_cli_fail(s);
  xc_graph_t* g = NULL;
  char* text = NULL;
  xc_fusion_plan_t* plan = NULL;
  if (!s) s = xc_cli_check_file(model);
  if (!s) s = xc_load_model(model, &g);
  if (!s && infer) s = xc_graph_infer(g);
  if (!s && *shapes) s = infer ? xc_graph_set_input_shapes(g, *shapes) : xc_error(XC_INVALID_ARGUMENT, "--shape needs inference (drop --no-infer)");
  if (!s && stats) {
    s = print_stats(g, session, pa.options.opt_level);
    xc_graph_destroy(g);
    xc_session_destroy(session);
    return s ? xc_cli_fail(s) : XC_EXIT_OK;
  }
  if (!s && stage != STAGE_IMPORTED) s = xc_session_optimize(session, g);
  if (!s && stage == STAGE_FUSED) s = xc_session_plan(session, g, &plan);
  if (!s && (stage == STAGE_KERNELS || stage == STAGE_SOURCE)) {
    size_t n = 0;
    FILE* f = open_memstream(&text, &n);
    if (!f) s = xc_error_oom();
    if (!s) s = print_kernels(session, g, stage == STAGE_SOURCE, f);
    if (f) fclose(f);
  } else if (!s && stage == STAGE_FUSED) {
    /* Printed through a memory stream so a failure leaves no half output. */
    size_t n = 0;
    FILE* f = open_memstream(&text, &n);
    if (!f) s = xc_error_oom();
    if (!s) s = xc_fusion_plan_print(plan, g, f, format);
    if (f) fclose(f);
  } else if (!s) {
    xc_xir_print_options_t o;
    xc_xir_print_options_init(&o);
    o.show_provenance = stage != STAGE_IMPORTED;
    s = xc_xir_print_string(g, &o, &text);
  }
  xc_fusion_plan_destroy(plan);
  xc_graph_destroy(g);
  xc_session_destroy(session);
  if (s) {
    free(text);
    return xc_cli_fail(s);
  }
  fputs(text, stdout);
  free(text);
  return XC_EXIT_OK;
}

static int dump_main(int argc, char** argv) {
  char* shapes = NULL;
  int rc = dump_args(argc, argv, &shapes);
  free(shapes);
  return rc;
}

const xc_cli_command_t xc_cli_dump_command = {
    "dump", dump_main,
    "xcomp dump MODEL [--stage imported|optimized|fused|kernels|source] [--format text|dot] [--stats] "
    "[--target T] [--shape NAME=DIMS]... [--precision f16|bf16] [-O<n>] [pass options]",
    "Print a model (.xir or .onnx) at a stage of the pipeline, or its statistics.",
    "options:\n"
    "  --stage imported    the graph as loaded, with inferred types (default)\n"
    "  --stage optimized   after the pass pipeline (default -O2), with provenance\n"
    "  --stage fused       the fusion plan: each kernel group with its member nodes\n"
    "  --stage kernels     the tiled kernels, each with the schedule the target's scheduler\n"
    "                      chose for the --target device (docs/tiled-ir.md, \"Schedules\")\n"
    "  --stage source      the same and each kernel's emitted source (no target compile)\n"
    "  --format text|dot   the fusion plan as text (default) or Graphviz dot\n"
    "  --stats             per stage: node counts by op, kernel groups, bytes moved\n"
    "                      between kernels (instead of the graph)\n"
    "  --precision f16|bf16 the model's float32 tensors in f16 or bf16 (the convert-precision\n"
    "                      pass, as 'xcomp compile --precision'; from --stage optimized on)\n"
    "  --target T          whose traits (layout, limits) the passes read (default ref);\n"
    "                      an architecture (cuda:sm_90, rocm:gfx90a) needs no device\n"
    "  --no-infer          print the graph as loaded, without shape inference\n"
    "  --shape NAME=DIMS   the graph at this shape of input NAME (repeatable; as\n"
    "                      'xcomp compile --shape': symbolic dims made static)\n"
    "pass options (any of them implies --stage optimized):\n" XC_CLI_PASS_HELP};
