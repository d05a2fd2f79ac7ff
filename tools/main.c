/* xcomp: the command-line tool. Dispatches to one subcommand per file
 * (cmd_<name>.c); see docs/cli.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/tempdir.h"

#include "cli.h"

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

static const xc_cli_command_t* const commands[] = {
    &xc_cli_run_command,     &xc_cli_dump_command, &xc_cli_compare_command,
    &xc_cli_conform_command, &xc_cli_ops_command,  &xc_cli_targets_command,
    &xc_cli_check_passes_command,
    &xc_cli_compile_command, &xc_cli_bench_command, &xc_cli_tune_command,
};
enum { NUM_COMMANDS = (int)(sizeof commands / sizeof commands[0]) };

static void print_overview(FILE* f) {
  fprintf(f,
          "usage: xcomp MODEL [--target T] [--input NAME=@FILE | --input @FILE]... [run options]\n"
          "       xcomp <command> [options]\n"
          "\n"
          "xcomp %s, a cross-vendor ML inference compiler.\n"
          "\n"
          "'xcomp MODEL --target T' (or 'xcomp --target T MODEL') compiles MODEL (.onnx, .xir)\n"
          "for target T (default cpu) through the compile cache and runs it on the inputs,\n"
          "writing output_<i>.npy: 'xcomp run' with a compiled target ('xcomp help run'\n"
          "lists the run options). A MODEL.xcm runs on its own target.\n"
          "\n"
          "commands:\n",
          XCOMP_VERSION);
  for (int i = 0; i < NUM_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f,
          "  %-10s %s\n"
          "\n"
          "'xcomp <command> --help' describes a command; 'xcomp --version' prints the version.\n",
          "help", "show this overview, or 'xcomp help <command>' for one command");
}

/* The design card's form, `xcomp MODEL --target T ...` or `xcomp --target T
 * MODEL ...`: a first argument that is --target, or a model file, rather
 * than a command. */
static bool is_model_form(const char* first) {
  if (strcmp(first, "--target") == 0 || strncmp(first, "--target=", 9) == 0) return true;
  if (first[0] == '-') return false;
  static const char* const suffixes[] = {".onnx", ".xir", ".xcm"};
  size_t n = strlen(first);
  for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
    size_t m = strlen(suffixes[k]);
    if (n > m && strcmp(first + n - m, suffixes[k]) == 0) return true;
  }
  return strchr(first, '/') != NULL; /* a path: the loader names what is wrong with it */
}

/* Runs `xcomp run ARGS...`, with --target cpu unless a target is given. */
static int run_model_form(int argc, char** argv) {
  char** args = calloc((size_t)argc + 3, sizeof *args);
  if (!args) return xc_cli_fail(xc_error_oom());
  int n = 0;
  bool has_target = false;
  args[n++] = "run";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "--target") == 0 || strncmp(argv[i], "--target=", 9) == 0) has_target = true;
  }
  if (!has_target) {
    args[n++] = "--target";
    args[n++] = "cpu";
  }
  for (int i = 1; i < argc; i++) args[n++] = argv[i];
  int rc = xc_cli_run_command.main(n, args);
  free(args);
  return rc;
}

static const xc_cli_command_t* find_command(const char* name) {
  for (int i = 0; i < NUM_COMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    print_overview(stderr);
    return XC_EXIT_USAGE;
  }
  const char* name = argv[1];
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("xcomp %s\n", XCOMP_VERSION);
    return XC_EXIT_OK;
  }
  if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    if (argc >= 3 && strcmp(name, "help") == 0) {
      const xc_cli_command_t* c = find_command(argv[2]);
      if (!c) return xc_cli_errorf("unknown command '%s' (see 'xcomp help')", argv[2]);
      xc_cli_print_help(c, stdout);
      return XC_EXIT_OK;
    }
    print_overview(stdout);
    return XC_EXIT_OK;
  }
  const xc_cli_command_t* c = find_command(name);
  if (!c && is_model_form(name)) {
    if (xc_cli_wants_help(argc - 1, argv + 1)) {
      print_overview(stdout);
      return XC_EXIT_OK;
    }
    int rc = run_model_form(argc, argv);
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == XC_EXIT_OK)
      rc = xc_cli_errorf("writing to standard output failed");
    return rc;
  }
  if (!c) {
    if (name[0] == '-')
      return xc_cli_errorf("unknown option '%s' (see 'xcomp help')", name);
    return xc_cli_errorf("unknown command '%s' (see 'xcomp help')", name);
  }
  if (xc_cli_wants_help(argc - 1, argv + 1)) {
    xc_cli_print_help(c, stdout);
    return XC_EXIT_OK;
  }
  /* Temp files live in one folder of this process (xcomp/tempdir.h):
   * removed at exit and on SIGINT/SIGTERM/SIGHUP; folders left by killed
   * runs are swept here. */
  xc_temp_install_signal_cleanup();
  xc_temp_sweep_stale();
  int rc = c->main(argc - 1, argv + 1);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    if (rc == XC_EXIT_OK) rc = xc_cli_errorf("writing to standard output failed");
  }
  return rc;
}
