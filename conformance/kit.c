/* The vendor conformance kit: expected-failure lists (xfail files) and the
 * reports of a run over several suites (node tests, the op suite, models):
 * the JSON report, written with libjansson, and the Markdown report.
 * docs/conformance.md, "The vendor conformance kit", documents both. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_internal.h"
#include "xcomp/conformance.h"

static char* dup_n(const char* s, size_t n) {
  char* d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* ---- xfail files --------------------------------------------------------- */

void xc_xfail_free(xc_xfail_list_t* l) {
  if (!l) return;
  for (int i = 0; i < l->num_entries; i++) {
    free(l->entries[i].name);
    free(l->entries[i].reason);
  }
  free(l->entries);
  free(l->path);
  memset(l, 0, sizeof *l);
}

/* Parses one line (no newline) into *e; NULL for a blank or comment line
 * (e->name left NULL), else an error message (static text). */
static const char* parse_line(char* line, xc_xfail_entry_t* e) {
  char* p = line;
  while (isspace((unsigned char)*p)) p++;
  if (!*p || *p == '#') return NULL;
  char* name = p;
  while (*p && !isspace((unsigned char)*p) && *p != '#') p++;
  size_t name_len = (size_t)(p - name);
  while (isspace((unsigned char)*p)) p++;
  if (*p != '#') return "an entry needs a reason: write NAME  # reason";
  p++;
  while (isspace((unsigned char)*p)) p++;
  char* end = p + strlen(p);
  while (end > p && isspace((unsigned char)end[-1])) end--;
  if (end == p) return "the reason after '#' is empty: write NAME  # reason";
  bool prefix = name[name_len - 1] == '*';
  if (prefix) name_len--;
  if (memchr(name, '*', name_len)) return "'*' may only end a name (a prefix match)";
  if (name_len == 0) return "a lone '*' would match every test; name a prefix";
  e->name = dup_n(name, name_len);
  e->reason = dup_n(p, (size_t)(end - p));
  e->prefix = prefix;
  return e->name && e->reason ? NULL : "out of memory";
}

xc_status_t xc_xfail_load(const char* path, xc_xfail_list_t* out) {
  memset(out, 0, sizeof *out);
  FILE* f = fopen(path, "r");
  if (!f) return xc_error(XC_IO, "%s: cannot open the xfail file", path);
  out->path = dup_n(path, strlen(path));
  char line[4096];
  int lineno = 0;
  xc_status_t s = out->path ? NULL : xc_error_oom();
  while (!s && fgets(line, sizeof line, f)) {
    lineno++;
    size_t n = strlen(line);
    if (n == sizeof line - 1 && line[n - 1] != '\n') {
      s = xc_error(XC_INVALID_ARGUMENT, "%s:%d: line too long", path, lineno);
      break;
    }
    line[strcspn(line, "\r\n")] = '\0';
    xc_xfail_entry_t e;
    memset(&e, 0, sizeof e);
    const char* err = parse_line(line, &e);
    if (err) {
      free(e.name);
      free(e.reason);
      s = xc_error(XC_INVALID_ARGUMENT, "%s:%d: %s", path, lineno, err);
      break;
    }
    if (!e.name) continue;
    e.line = lineno;
    xc_xfail_entry_t* grown = realloc(out->entries, (size_t)(out->num_entries + 1) * sizeof *grown);
    if (!grown) {
      free(e.name);
      free(e.reason);
      s = xc_error_oom();
      break;
    }
    out->entries = grown;
    out->entries[out->num_entries++] = e;
  }
  if (!s && ferror(f)) s = xc_error(XC_IO, "%s: read failed", path);
  fclose(f);
  if (s) xc_xfail_free(out);
  return s;
}

xc_xfail_entry_t* xc_xfail_match(xc_xfail_list_t* l, const char* name) {
  if (!l || !name) return NULL;
  for (int i = 0; i < l->num_entries; i++) {
    xc_xfail_entry_t* e = &l->entries[i];
    if (e->prefix ? strncmp(name, e->name, strlen(e->name)) == 0 : strcmp(name, e->name) == 0) return e;
  }
  return NULL;
}

void xc_conform_apply_xfail(xc_conform_report_t* r, xc_xfail_list_t* l) {
  for (int i = 0; i < r->num_cases; i++) {
    xc_conform_case_t* c = &r->cases[i];
    xc_xfail_entry_t* e = xc_xfail_match(l, c->name);
    if (!e) continue;
    e->matches++;
    free(c->xfail_reason);
    c->xfail_reason = dup_n(e->reason, strlen(e->reason));
    if (c->verdict == XC_CONFORM_FAIL) {
      c->verdict = XC_CONFORM_XFAIL;
      r->failed--;
      r->xfailed++;
    } else if (c->verdict == XC_CONFORM_PASS) {
      c->verdict = XC_CONFORM_XPASS;
      r->passed--;
      r->xpassed++;
    }
  }
}

/* ---- shared pieces of the reports ---------------------------------------- */

const char* xc_conform_target_title(const xc_conform_run_info_t* info, char* buf, size_t n) {
  const char* t = info->target ? info->target : "ref";
  const char* name = info->device_name && *info->device_name ? info->device_name : NULL;
  const char* ver = info->device_version && *info->device_version ? info->device_version : NULL;
  if (info->arch && *info->arch)
    snprintf(buf, n, "%s (architecture %s, compile only)", t, info->arch);
  else if (name && ver)
    snprintf(buf, n, "%s (%s, %s)", t, name, ver);
  else if (name)
    snprintf(buf, n, "%s (%s)", t, name);
  else
    snprintf(buf, n, "%s", t);
  return buf;
}

static const char* status_name(xc_conform_verdict_t v) {
  switch (v) {
    case XC_CONFORM_PASS: return "pass";
    case XC_CONFORM_FAIL: return "fail";
    case XC_CONFORM_UNSUPPORTED: return "unsupported";
    case XC_CONFORM_XFAIL: return "xfail";
    case XC_CONFORM_XPASS: return "xpass";
  }
  return "?";
}

/* The number after `key` in a case's detail ("max-abs 0.25, max-ULP 3,
 * rel-L2 1.2e-07"); false when the detail does not carry it. */
static bool figure(const char* detail, const char* key, double* out) {
  const char* p = detail ? strstr(detail, key) : NULL;
  if (!p) return false;
  p += strlen(key);
  char* end = NULL;
  double v = strtod(p, &end);
  if (end == p) return false;
  *out = v;
  return true;
}

static void utc_now(char* buf, size_t n) {
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm))
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
  else
    snprintf(buf, n, "unknown");
}

/* The dtypes the tolerance table lists, in its order. */
static const xc_dtype_t policy_dtypes[] = {XC_F32, XC_F64, XC_F16, XC_BF16, XC_F8E4M3FN, XC_F8E5M2,
                                           XC_I64, XC_I32, XC_I16, XC_I8, XC_U8, XC_BOOL};

/* ---- JSON --------------------------------------------------------------- */

static json_t* str_or_null(const char* s) { return s ? json_string(s) : json_null(); }

/* json_real of a finite value; null for inf/NaN (JSON has neither). */
static json_t* real_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t* tolerance_json(const xc_tolerance_t* t) {
  json_t* o = json_object();
  if (!t->check_allclose && !t->check_rel_l2) {
    json_object_set_new(o, "check", json_string("exact"));
    return o;
  }
  json_object_set_new(o, "check", json_string("close"));
  if (t->check_allclose) {
    json_object_set_new(o, "rtol", json_real(t->rtol));
    json_object_set_new(o, "atol", json_real(t->atol));
  }
  if (t->check_rel_l2) json_object_set_new(o, "max_rel_l2", json_real(t->max_rel_l2));
  return o;
}

static json_t* policy_json(bool allow_tf32) {
  json_t* p = json_object();
  json_t* per = json_object();
  for (size_t i = 0; i < sizeof policy_dtypes / sizeof policy_dtypes[0]; i++) {
    xc_tolerance_t t;
    xc_tolerance_for_dtype(policy_dtypes[i], &t);
    json_object_set_new(per, xc_dtype_name(policy_dtypes[i]), tolerance_json(&t));
  }
  json_object_set_new(p, "per_dtype", per);
  xc_tolerance_t onnx;
  xc_tolerance_onnx(&onnx);
  json_object_set_new(p, "onnx_tests", tolerance_json(&onnx));
  json_object_set_new(p, "suites",
                      json_pack("{s:s, s:s, s:s}", "node",
                                "onnx_tests against the stored outputs; integers and bool exact",
                                "op-suite", "per_dtype against the reference interpreter", "models",
                                "the interpreter against the stored outputs by the per_dtype max_rel_l2 alone; "
                                "the target against the interpreter by per_dtype"));
  json_object_set_new(p, "tf32", allow_tf32 ? json_pack("{s:s, s:f}", "check", "close", "max_rel_l2", 5e-4)
                                            : json_null());
  json_object_set_new(p, "always_fails", json_string("a NaN where the reference has none, a wrong-signed infinity"));
  return p;
}

static json_t* case_json(const xc_conform_case_t* c, const char* suite) {
  json_t* o = json_object();
  json_object_set_new(o, "name", json_string(c->name));
  json_object_set_new(o, "suite", json_string(suite));
  json_object_set_new(o, "op", str_or_null(c->op));
  json_object_set_new(o, "dtype", c->dtype == XC_DTYPE_UNDEFINED ? json_null() : json_string(xc_dtype_name(c->dtype)));
  json_object_set_new(o, "status", json_string(status_name(c->verdict)));
  json_t* err = json_object();
  double v;
  if (figure(c->detail, "max-abs ", &v)) json_object_set_new(err, "max_abs", real_or_null(v));
  if (figure(c->detail, "max-ULP ", &v)) json_object_set_new(err, "max_ulp", real_or_null(v));
  if (figure(c->detail, "rel-L2 ", &v)) json_object_set_new(err, "rel_l2", real_or_null(v));
  if (json_object_size(err) > 0)
    json_object_set_new(o, "error", err);
  else
    json_decref(err);
  json_object_set_new(o, "message", json_string(c->detail ? c->detail : ""));
  json_object_set_new(o, "xfail_reason", str_or_null(c->xfail_reason));
  json_object_set_new(o, "seconds", json_real(c->seconds));
  return o;
}

static json_t* totals_json(int passed, int failed, int xfail, int xpass, int unsupported) {
  return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "passed", passed, "failed", failed, "xfail", xfail, "xpass",
                   xpass, "unsupported", unsupported, "total", passed + failed + xfail + xpass + unsupported);
}

xc_status_t xc_conform_write_json(const char* path, const xc_conform_run_info_t* info,
                                  const xc_conform_suite_t* suites, int num_suites,
                                  const xc_xfail_list_t* xfail) {
  char date[64];
  utc_now(date, sizeof date);
  json_t* root = json_object();
  json_object_set_new(root, "schema", json_string("xcomp-conformance-1"));
  json_object_set_new(root, "target", json_string(info->target ? info->target : "ref"));
  json_t* dev = json_object();
  json_object_set_new(dev, "name", str_or_null(info->device_name));
  json_object_set_new(dev, "vendor", str_or_null(info->device_vendor));
  json_object_set_new(dev, "version", str_or_null(info->device_version));
  json_object_set_new(dev, "arch", str_or_null(info->arch));
  if (info->device_error) json_object_set_new(dev, "error", json_string(info->device_error));
  json_object_set_new(root, "device", dev);
  json_object_set_new(root, "xcomp", json_pack("{s:s, s:s}", "version", info->version ? info->version : "unknown",
                                               "commit", info->commit ? info->commit : "unknown"));
  json_object_set_new(root, "date", json_string(date));
  json_object_set_new(root, "command", str_or_null(info->command));
  json_object_set_new(root, "tolerance", policy_json(info->allow_tf32));
  json_t* opts = json_object();
  json_t* names = json_array();
  for (int i = 0; i < num_suites; i++) json_array_append_new(names, json_string(suites[i].name));
  json_object_set_new(opts, "suites", names);
  json_object_set_new(opts, "filter", str_or_null(info->filter));
  json_object_set_new(opts, "seed", json_integer((json_int_t)info->seed));
  json_object_set_new(opts, "per_op", json_integer(info->per_op));
  json_object_set_new(opts, "cases_per_op", json_integer(info->cases_per_op));
  json_object_set_new(opts, "dtypes", str_or_null(info->dtypes));
  json_object_set_new(opts, "model_dtype", str_or_null(info->model_dtype));
  json_object_set_new(opts, "timeout_s", json_real(info->timeout_s));
  json_object_set_new(opts, "jobs", json_integer(info->jobs));
  json_object_set_new(opts, "compile_only", json_boolean(info->compile_only));
  json_object_set_new(opts, "allow_tf32", json_boolean(info->allow_tf32));
  json_object_set_new(opts, "xfail_file", str_or_null(info->xfail_file));
  json_object_set_new(root, "options", opts);

  int tp = 0, tf = 0, tx = 0, txp = 0, tu = 0;
  json_t* js = json_array();
  json_t* tests = json_array();
  for (int i = 0; i < num_suites; i++) {
    const xc_conform_suite_t* su = &suites[i];
    json_t* o = json_object();
    json_object_set_new(o, "name", json_string(su->name));
    json_object_set_new(o, "source", str_or_null(su->source));
    json_object_set_new(o, "status", json_string(su->skipped ? "skipped" : "ran"));
    if (su->skipped) json_object_set_new(o, "reason", json_string(su->skipped));
    const xc_conform_report_t* r = su->report;
    if (r) {
      json_object_set_new(o, "totals", totals_json(r->passed, r->failed, r->xfailed, r->xpassed, r->skipped));
      tp += r->passed;
      tf += r->failed;
      tx += r->xfailed;
      txp += r->xpassed;
      tu += r->skipped;
      for (int k = 0; k < r->num_cases; k++) json_array_append_new(tests, case_json(&r->cases[k], su->name));
    }
    json_array_append_new(js, o);
  }
  json_object_set_new(root, "suites", js);
  json_object_set_new(root, "totals", totals_json(tp, tf, tx, txp, tu));
  json_object_set_new(root, "tests", tests);
  json_t* unmatched = json_array();
  for (int i = 0; xfail && i < xfail->num_entries; i++) {
    const xc_xfail_entry_t* e = &xfail->entries[i];
    if (e->matches == 0)
      json_array_append_new(unmatched, json_pack("{s:s, s:b, s:i, s:s}", "name", e->name, "prefix", e->prefix,
                                                 "line", e->line, "reason", e->reason));
  }
  json_object_set_new(root, "xfail_unmatched", unmatched);
  int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(root);
  return rc == 0 ? NULL : xc_error(XC_IO, "%s: cannot write the JSON report", path);
}

/* ---- Markdown ------------------------------------------------------------ */

void xc_conform_print_kit_markdown(const xc_conform_run_info_t* info, const xc_conform_suite_t* suites,
                                   int num_suites, const xc_xfail_list_t* xfail, FILE* f) {
  char title[512], date[64];
  utc_now(date, sizeof date);
  fprintf(f, "# xcomp conformance: %s\n\n", xc_conform_target_title(info, title, sizeof title));
  fprintf(f, "Generated by `xcomp conform`:\n\n```\n%s\n```\n\n", info->command ? info->command : "xcomp conform");
  fprintf(f, "| | |\n| --- | --- |\n");
  fprintf(f, "| target | %s |\n", info->target ? info->target : "ref");
  fprintf(f, "| device | ");
  xc_conform_md_cell(f, info->device_name ? info->device_name : "", 200);
  if (info->device_vendor && *info->device_vendor) {
    fprintf(f, "; vendor ");
    xc_conform_md_cell(f, info->device_vendor, 100);
  }
  if (info->device_version && *info->device_version) {
    fprintf(f, "; version ");
    xc_conform_md_cell(f, info->device_version, 100);
  }
  if (info->arch) fprintf(f, "architecture %s (compile only)", info->arch);
  if (info->device_error) {
    fprintf(f, " (");
    xc_conform_md_cell(f, info->device_error, 200);
    fprintf(f, ")");
  }
  fprintf(f, " |\n");
  fprintf(f, "| xcomp | %s (commit %s) |\n", info->version ? info->version : "unknown",
          info->commit ? info->commit : "unknown");
  fprintf(f, "| date | %s |\n", date);
  fprintf(f, "| xfail list | ");
  xc_conform_md_cell(f, info->xfail_file ? info->xfail_file : "none", 300);
  fprintf(f, " |\n| filter | ");
  xc_conform_md_cell(f, info->filter ? info->filter : "none", 300);
  fprintf(f, " |\n");
  fprintf(f, "\n## Summary\n\n| suite | source | status | passed | failed | xfail | xpass | unsupported |\n");
  fprintf(f, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  int tp = 0, tf = 0, tx = 0, txp = 0, tu = 0;
  for (int i = 0; i < num_suites; i++) {
    const xc_conform_suite_t* su = &suites[i];
    const xc_conform_report_t* r = su->report;
    fprintf(f, "| %s | ", su->name);
    xc_conform_md_cell(f, su->source ? su->source : "", 200);
    if (su->skipped) {
      fprintf(f, " | skipped: ");
      xc_conform_md_cell(f, su->skipped, 200);
      fprintf(f, " | - | - | - | - | - |\n");
      continue;
    }
    fprintf(f, " | ran | %d | %d | %d | %d | %d |\n", r->passed, r->failed, r->xfailed, r->xpassed, r->skipped);
    tp += r->passed;
    tf += r->failed;
    tx += r->xfailed;
    txp += r->xpassed;
    tu += r->skipped;
  }
  fprintf(f, "\n**%d passed, %d failed, %d xfail, %d xpass, %d unsupported**\n", tp, tf, tx, txp, tu);
  static const char* const headings[] = {"Failures", "Unexpected passes (xpass)", "Expected failures (xfail)",
                                         "Unsupported"};
  static const xc_conform_verdict_t kinds[] = {XC_CONFORM_FAIL, XC_CONFORM_XPASS, XC_CONFORM_XFAIL,
                                               XC_CONFORM_UNSUPPORTED};
  for (int k = 0; k < 4; k++) {
    int count = 0;
    for (int i = 0; i < num_suites; i++)
      for (int j = 0; suites[i].report && j < suites[i].report->num_cases; j++)
        count += suites[i].report->cases[j].verdict == kinds[k];
    if (count == 0) continue;
    fprintf(f, "\n## %s (%d)\n\n| suite | test | op | dtype | why |\n| --- | --- | --- | --- | --- |\n", headings[k],
            count);
    for (int i = 0; i < num_suites; i++) {
      for (int j = 0; suites[i].report && j < suites[i].report->num_cases; j++) {
        const xc_conform_case_t* c = &suites[i].report->cases[j];
        if (c->verdict != kinds[k]) continue;
        fprintf(f, "| %s | ", suites[i].name);
        xc_conform_md_cell(f, c->name, 120);
        fprintf(f, " | ");
        xc_conform_md_cell(f, c->op, 60);
        fprintf(f, " | %s | ", c->dtype == XC_DTYPE_UNDEFINED ? "?" : xc_dtype_name(c->dtype));
        xc_conform_md_cell(f, c->detail, 200);
        if (c->xfail_reason) {
          fprintf(f, " (xfail: ");
          xc_conform_md_cell(f, c->xfail_reason, 200);
          fprintf(f, ")");
        }
        fprintf(f, " |\n");
      }
    }
  }
  bool header = false;
  for (int i = 0; xfail && i < xfail->num_entries; i++) {
    const xc_xfail_entry_t* e = &xfail->entries[i];
    if (e->matches) continue;
    if (!header) fprintf(f, "\n## xfail entries that matched no test\n\n");
    header = true;
    fprintf(f, "- `%s%s` (%s:%d): ", e->name, e->prefix ? "*" : "", xfail->path, e->line);
    xc_conform_md_cell(f, e->reason, 200);
    fprintf(f, "\n");
  }
  fprintf(f, "\n## Tolerance\n\n| dtype | check |\n| --- | --- |\n");
  for (size_t i = 0; i < sizeof policy_dtypes / sizeof policy_dtypes[0]; i++) {
    xc_tolerance_t t;
    xc_tolerance_for_dtype(policy_dtypes[i], &t);
    fprintf(f, "| %s | ", xc_dtype_name(policy_dtypes[i]));
    if (!t.check_allclose && !t.check_rel_l2) fprintf(f, "exact");
    if (t.check_rel_l2) fprintf(f, "relative L2 <= %g", t.max_rel_l2);
    if (t.check_allclose) fprintf(f, ", allclose rtol %g / atol %g", t.rtol, t.atol);
    fprintf(f, " |\n");
  }
  xc_tolerance_t onnx;
  xc_tolerance_onnx(&onnx);
  fprintf(f,
          "\nNode tests compare with the stored outputs at rtol %g, atol %g; models add the relative L2 "
          "bound of their dtype; the op suite compares with the reference interpreter at the table's "
          "tolerance.%s\n",
          onnx.rtol, onnx.atol, info->allow_tf32 ? " f32 GEMMs may use tf32: f32 outputs at relative L2 <= 5e-4." : "");
  for (int i = 0; i < num_suites; i++) {
    if (!suites[i].report || suites[i].report->num_cases == 0) continue;
    fprintf(f, "\n## %s per op and dtype\n\n", suites[i].name);
    xc_conform_print_op_table_md(suites[i].report, f);
  }
}
