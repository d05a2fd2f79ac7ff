/* Error reporting and option parsing shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static void print_one_line(const char* msg) {
  fputs("xcomp: error: ", stderr);
  for (const char* p = msg; *p; p++) {
    if (*p == '\n' || *p == '\r') {
      if (p[1]) fputs("; ", stderr);
    } else {
      fputc(*p, stderr);
    }
  }
  fputc('\n', stderr);
  fflush(stderr);
}

int xc_cli_fail(xc_status_t s) {
  const char* msg = xc_status_message(s);
  print_one_line(msg && *msg ? msg : xc_code_name(xc_status_code(s)));
  xc_status_free(s);
  return XC_EXIT_ERROR;
}

static int vreport(const char* fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  print_one_line(buf);
  return XC_EXIT_ERROR;
}

int xc_cli_errorf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vreport(fmt, ap);
  va_end(ap);
  return rc;
}

int xc_cli_usage_error(const xc_cli_command_t* cmd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  fprintf(stderr, "usage: %s (see 'xcomp %s --help')\n", cmd->usage, cmd->name);
  return XC_EXIT_USAGE;
}

void xc_cli_print_help(const xc_cli_command_t* cmd, FILE* f) {
  fprintf(f, "usage: %s\n\n%s\n", cmd->usage, cmd->summary);
  if (cmd->help && *cmd->help) fprintf(f, "\n%s", cmd->help);
}

bool xc_cli_wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return false;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

int xc_cli_option(int argc, char** argv, int* i, const char* name, const char** value) {
  const char* a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) return -1;
  *value = argv[++*i];
  return 1;
}

bool xc_cli_parse_double(const char* s, double* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v)) return false;
  *out = v;
  return true;
}

bool xc_cli_parse_int(const char* s, int* out) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < 1 || v > 1000000) return false;
  *out = (int)v;
  return true;
}

xc_status_t xc_cli_check_file(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  if (!S_ISREG(st.st_mode))
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is not a regular file", path);
  return NULL;
}
