/* Tuning tasks and schedule text: the structural hash that makes identical
 * layers one task, and the schedule record as the text the database keeps. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/module.h"
#include "xcomp/target.h"
#include "xcomp/tune.h"

/* A growable string. */
typedef struct sbuf {
  char* p;
  size_t n, cap;
} sbuf_t;

static bool sb_put(sbuf_t* b, const char* s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    while (cap < b->n + n + 1) cap *= 2;
    char* p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  return true;
}

/* Value names in order of first appearance: a kernel built in memory and
 * the same kernel parsed back from its text print different numbers
 * (%0 vs %4) and parameters have the names of graph values (%v11); the
 * hash sees positions. */
typedef struct names {
  const char** s;
  size_t* n;
  int count, cap;
} names_t;

static int name_index(names_t* t, const char* s, size_t n) {
  for (int i = t->count - 1; i >= 0; i--)
    if (t->n[i] == n && memcmp(t->s[i], s, n) == 0) return i;
  if (t->count == t->cap) {
    int cap = t->cap ? 2 * t->cap : 256;
    const char** ns = realloc(t->s, sizeof *ns * (size_t)cap);
    if (ns) t->s = ns;
    size_t* nn = ns ? realloc(t->n, sizeof *nn * (size_t)cap) : NULL;
    if (!nn) return -1;
    t->n = nn;
    t->cap = cap;
  }
  t->s[t->count] = s;
  t->n[t->count] = n;
  return t->count++;
}

xc_status_t xc_tune_task_hash(const xc_tiled_kernel_t* k, char out[33]) {
  out[0] = 0;
  if (!k) return xc_error(XC_INVALID_ARGUMENT, "xc_tune_task_hash: NULL kernel");
  char* text = xc_tiled_print_to_string(k);
  if (!text) return xc_error_oom();
  names_t names = {0};
  sbuf_t b = {0};
  bool ok = true, in_schedule = false;
  for (char* line = text; ok && *line;) {
    char* end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char* t = line;
    while (t < line + len && *t == ' ') t++;
    /* the header names the kernel; the schedule block is what is tuned */
    if (line == text && strncmp(t, "kernel ", 7) == 0) {
      ok = sb_put(&b, "kernel {\n", 9);
    } else if (*t == '#') {
      /* comments (the kernel's origin) name graph nodes: not its structure */
    } else if (!in_schedule && strncmp(t, "schedule", 8) == 0 && (t[8] == ' ' || t[8] == '{')) {
      in_schedule = true;
    } else if (in_schedule) {
      if (len && line[len - 1] == '}' && (size_t)(t - line) + 1 == len) in_schedule = false;
    } else {
      /* values by order of appearance: %v11 and %v54 of two identical layers both read %0 */
      for (const char* c = line; ok && c < line + len;) {
        if (*c == '%') {
          const char* s = c + 1;
          const char* e = s;
          while (e < line + len && (isalnum((unsigned char)*e) || *e == '_' || *e == '.')) e++;
          int p = name_index(&names, s, (size_t)(e - s));
          if (p < 0) {
            ok = false;
            break;
          }
          char tmp[24];
          int tn = snprintf(tmp, sizeof tmp, "%%%d", p);
          ok = sb_put(&b, tmp, (size_t)tn);
          c = e;
          continue;
        }
        ok = sb_put(&b, c, 1);
        c++;
      }
      ok = ok && sb_put(&b, "\n", 1);
    }
    line += len + (end ? 1 : 0);
  }
  free(text);
  free(names.s);
  free(names.n);
  if (!ok) {
    free(b.p);
    return xc_error_oom();
  }
  xc_hash128_t h = xc_hash128(b.p ? b.p : "", b.n);
  free(b.p);
  xc_hash128_hex(h, out);
  return NULL;
}

void xc_tune_device_id(const char* target, const xc_device_caps_t* caps, char out[33]) {
  xc_hash128_t fp = xc_device_caps_fingerprint(caps);
  if (!target || strcmp(target, "cpu") != 0) {
    xc_hash128_hex(fp, out);
    return;
  }
  /* the cpu runtime's threads: a kernel measured with two threads competing
   * for the cores is not the kernel one thread runs */
  char hex[33], buf[64];
  xc_hash128_hex(fp, hex);
  int n = snprintf(buf, sizeof buf, "%s|threads=%d", hex, xc_cpu_runtime_threads());
  xc_hash128_hex(xc_hash128(buf, (size_t)n), out);
}

xc_status_t xc_tune_schedule_format(const xc_tiled_kernel_t* k, const xc_tiled_schedule_t* s, char** out_text) {
  *out_text = NULL;
  if (!k || !s) return xc_error(XC_INVALID_ARGUMENT, "xc_tune_schedule_format: NULL argument");
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return xc_error_oom();
  xc_tiled_schedule_print(k, s, "", f);
  if (fclose(f) != 0 || !buf) {
    free(buf);
    return xc_error_oom();
  }
  /* one line per field, no trailing newline: the database's text */
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = 0;
  *out_text = buf;
  return NULL;
}
