/* Pass-pipeline options shared by the subcommands that optimize a graph:
 * -O<level>, --disable-pass=NAME, --print-after=NAME, --print-after-all,
 * --pass-timing. */
#include <string.h>

#include "cli.h"
#include "xcomp/driver.h"
#include "xcomp/target.h"

void xc_cli_pass_args_init(xc_cli_pass_args_t* pa, int default_level) {
  memset(pa, 0, sizeof *pa);
  xc_pass_options_init(&pa->options);
  pa->options.opt_level = default_level;
  pa->options.disabled = pa->disabled;
}

int xc_cli_pass_option(const xc_cli_command_t* cmd, int argc, char** argv, int* i,
                       xc_cli_pass_args_t* pa) {
  const char* a = argv[*i];
  const char* v = NULL;
  if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && a[3] == 0) {
    pa->options.opt_level = a[2] - '0';
    pa->level_given = true;
    return 1;
  }
  if (a[0] == '-' && a[1] == 'O') {
    xc_cli_usage_error(cmd, "'%s': optimization levels are -O0 to -O3", a);
    return -1;
  }
  int r = xc_cli_option(argc, argv, i, "--disable-pass", &v);
  if (r < 0) {
    xc_cli_usage_error(cmd, "--disable-pass needs a pass name");
    return -1;
  }
  if (r > 0) {
    if (pa->options.num_disabled == (int)(sizeof pa->disabled / sizeof pa->disabled[0])) {
      xc_cli_usage_error(cmd, "too many --disable-pass options");
      return -1;
    }
    pa->disabled[pa->options.num_disabled++] = v;
    return 1;
  }
  r = xc_cli_option(argc, argv, i, "--print-after", &v);
  if (r < 0) {
    xc_cli_usage_error(cmd, "--print-after needs a pass name");
    return -1;
  }
  if (r > 0) {
    pa->options.print_after = v;
    return 1;
  }
  if (strcmp(a, "--print-after-all") == 0) {
    pa->options.print_after_all = true;
    return 1;
  }
  if (strcmp(a, "--pass-timing") == 0) {
    pa->options.timing = true;
    return 1;
  }
  return 0;
}

xc_status_t xc_cli_pass_session(const char* target, const xc_cli_pass_args_t* pa, xc_session_t** out) {
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = target;
  o.opt_level = pa->options.opt_level;
  o.precision = pa->options.precision;
  o.disabled_passes = pa->disabled;
  o.num_disabled_passes = pa->options.num_disabled;
  o.print_after = pa->options.print_after;
  o.print_after_all = pa->options.print_after_all;
  o.pass_timing = pa->options.timing;
  return xc_session_create(&o, out);
}

xc_status_t xc_cli_target_traits(const char* target, xc_target_traits_t* out) {
  /* The reference interpreter has no device; its traits are the defaults. */
  xc_session_options_t o;
  xc_session_options_init(&o);
  o.target = target;
  xc_session_t* session = NULL;
  XC_RETURN_IF_ERROR(xc_session_create(&o, &session));
  *out = *xc_session_traits(session);
  out->name = target ? target : "ref";
  xc_session_destroy(session);
  return NULL;
}
