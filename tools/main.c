/* xcomp: the command-line tool. Dispatches to one subcommand per file
 * (cmd_<name>.c); see docs/cli.md. */
#include <stdio.h>
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
    &xc_cli_compile_command,
};
enum { NUM_COMMANDS = (int)(sizeof commands / sizeof commands[0]) };

static void print_overview(FILE* f) {
  fprintf(f,
          "usage: xcomp <command> [options]\n"
          "\n"
          "xcomp %s, a cross-vendor ML inference compiler.\n"
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
