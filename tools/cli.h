/* Shared pieces of the xcomp command-line tool: the subcommand table, error
 * and usage reporting, option parsing.
 *
 * Conventions every subcommand keeps: bad input (a missing or malformed file,
 * a model xcomp rejects, inputs that do not fit) ends with exit status 1 and
 * exactly one line "xcomp: error: <what, where>" on stderr; a malformed
 * command line ends with exit status 2, an error line and a usage line;
 * --help prints the subcommand's help on stdout and exits 0. */
#ifndef XCOMP_TOOLS_CLI_H
#define XCOMP_TOOLS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "xcomp/driver.h"
#include "xcomp/passes.h"
#include "xcomp/status.h"

enum { XC_EXIT_OK = 0, XC_EXIT_ERROR = 1, XC_EXIT_USAGE = 2 };

typedef struct xc_cli_command {
  const char* name;
  int (*main)(int argc, char** argv); /* argv[0] is the subcommand name */
  const char* usage;                  /* "xcomp run MODEL [options]" */
  const char* summary;                /* one line for `xcomp help` */
  const char* help;                   /* the options, for --help */
} xc_cli_command_t;

extern const xc_cli_command_t xc_cli_run_command;
extern const xc_cli_command_t xc_cli_dump_command;
extern const xc_cli_command_t xc_cli_compare_command;
extern const xc_cli_command_t xc_cli_targets_command;
extern const xc_cli_command_t xc_cli_ops_command;
extern const xc_cli_command_t xc_cli_conform_command;
extern const xc_cli_command_t xc_cli_check_passes_command;
extern const xc_cli_command_t xc_cli_compile_command;
extern const xc_cli_command_t xc_cli_bench_command;
extern const xc_cli_command_t xc_cli_tune_command;

/* `xcomp conform --localize ...` (tools/conform_localize.c): argv is the
 * conform command's. */
int xc_cli_conform_localize(int argc, char** argv);

/* Prints "xcomp: error: <message>" as one line (newlines in the message are
 * flattened), frees the status and returns XC_EXIT_ERROR. */
int xc_cli_fail(xc_status_t s);
int xc_cli_errorf(const char* fmt, ...) XC_PRINTF(1, 2);
/* Error line plus "usage: ..." of cmd; returns XC_EXIT_USAGE. */
int xc_cli_usage_error(const xc_cli_command_t* cmd, const char* fmt, ...) XC_PRINTF(2, 3);
/* Full help of a subcommand on f. */
void xc_cli_print_help(const xc_cli_command_t* cmd, FILE* f);
/* True if argv holds --help or -h (before a "--"). */
bool xc_cli_wants_help(int argc, char** argv);

/* Matches option `name` ("--rtol") at argv[*i], as "--rtol X" or "--rtol=X".
 * Returns 1 and sets *value (advancing *i past a separate value), 0 when
 * argv[*i] is another option, -1 when the value is missing. */
int xc_cli_option(int argc, char** argv, int* i, const char* name, const char** value);
/* Refuses a path that exists but is not a regular file (a FIFO or device
 * would block the readers forever, a folder is not a model). Missing paths
 * pass: the reader reports them in its own words. */
xc_status_t xc_cli_check_file(const char* path);

/* Pass-pipeline options (-O<n>, --disable-pass, --print-after[-all],
 * --pass-timing), parsed by xc_cli_pass_option. */
typedef struct xc_cli_pass_args {
  xc_pass_options_t options;
  const char* disabled[32];
  bool level_given; /* -O<n> appeared */
} xc_cli_pass_args_t;

#define XC_CLI_PASS_HELP                                                        \
  "  -O0 .. -O3            optimization level of the graph pass pipeline\n"    \
  "  --disable-pass=NAME   skip a pass (repeatable; see docs/passes.md)\n"     \
  "  --print-after=NAME    print the graph (.xir) to stderr after pass NAME\n" \
  "  --print-after-all     print the graph to stderr after every pass\n"       \
  "  --pass-timing         print each pass's time and node count to stderr\n"

void xc_cli_pass_args_init(xc_cli_pass_args_t* pa, int default_level);
/* Returns 1 when argv[*i] was a pass option (consumed), 0 when it is not
 * one, -1 after reporting a usage error. */
int xc_cli_pass_option(const xc_cli_command_t* cmd, int argc, char** argv, int* i,
                       xc_cli_pass_args_t* pa);

/* A compile session for `target` ("ref": no device) with the pass options
 * of pa (level, precision, disabled passes, prints, timing). */
xc_status_t xc_cli_pass_session(const char* target, const xc_cli_pass_args_t* pa, xc_session_t** out);

/* Traits the pass pipeline reads for a target selector (through a session): `ref` gives the
 * defaults; other targets ("cpu", "opencl:1") are looked up in the target
 * registry and their device capabilities (preferred layout, local memory,
 * matrix units) become the traits. */
xc_status_t xc_cli_target_traits(const char* target, xc_target_traits_t* out);

/* --input values (tools/cli_inputs.c): NAME=@FILE or @FILE (name NULL). */
typedef struct xc_cli_input_spec {
  const char* name;
  const char* path;
} xc_cli_input_spec_t;
/* Parses arg in place (the '=' of NAME=@FILE becomes a NUL). */
xc_status_t xc_cli_parse_input_spec(char* arg, xc_cli_input_spec_t* out);
/* Reads the tensors the specs name into inputs[] (graph-input order):
 * named specs bind by name, the others the next unbound input. Each tensor
 * is checked against its input (dtype, rank, dims, which binds symbols);
 * with precision f16/bf16, f32 files are rounded for inputs of that dtype.
 * Without allow_missing every input must be bound; with it, unbound ones
 * stay NULL. The caller destroys inputs[i]. */
xc_status_t xc_cli_read_inputs(const xc_graph_t* g, const xc_cli_input_spec_t* specs, int num_specs,
                               xc_dtype_t precision, bool allow_missing, xc_tensor_t** inputs, xc_symbind_t* binds);
/* --shape NAME=DIMS ("1x128" or "1,128"): unifies input NAME's dims with
 * DIMS, binding its symbols. */
xc_status_t xc_cli_apply_shape(const xc_graph_t* g, const char* arg, xc_symbind_t* binds);
/* Appends one --shape NAME=DIMS to *spec ("A;B": the session's
 * input_shapes; *spec is malloc'ed, caller frees). false: out of memory. */
bool xc_cli_add_shape(char** spec, const char* arg);
/* Fills the inputs[i] still NULL with seeded random tensors of the input's
 * dtype and shape (every dim must be static or bound): floats uniform in
 * [-1, 1), integers and bools 0 or 1. */
xc_status_t xc_cli_random_inputs(const xc_graph_t* g, xc_tensor_t** inputs, xc_symbind_t* binds, uint64_t seed);

/* Parses a finite double / a positive int; false on junk. */
bool xc_cli_parse_double(const char* s, double* out);
bool xc_cli_parse_int(const char* s, int* out);

#endif
