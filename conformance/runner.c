/* The conformance runner: finds test folders, runs each in a forked child
 * with a timeout (a crashing or hanging test must never take the runner
 * down), collects one result line per child through a pipe, and writes the
 * report: per-test lines, per-op totals, "N passed, N failed, N skipped". */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report_internal.h"
#include "xcomp/conformance.h"
#include "xcomp/tempdir.h"

#define MAX_DEPTH 3

void xc_conform_options_init(xc_conform_options_t* o) {
  memset(o, 0, sizeof *o);
  o->target = "ref";
  o->timeout_s = 60;
  o->jobs = 1;
}

const char* xc_conform_verdict_name(xc_conform_verdict_t v) {
  switch (v) {
    case XC_CONFORM_PASS: return "PASS";
    case XC_CONFORM_FAIL: return "FAIL";
    case XC_CONFORM_UNSUPPORTED: return "UNSUPPORTED";
    case XC_CONFORM_XFAIL: return "XFAIL";
    case XC_CONFORM_XPASS: return "XPASS";
  }
  return "?";
}

static char* xstrdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static char* join_path(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s", a, *a && a[strlen(a) - 1] == '/' ? "" : "/", b);
  return p;
}

static bool is_dir(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_test_dir(const char* p) {
  char* m = join_path(p, "model.onnx");
  struct stat st;
  bool ok = m && stat(m, &st) == 0 && S_ISREG(st.st_mode);
  free(m);
  return ok;
}

typedef struct {
  xc_conform_case_t* v;
  int n, cap;
} case_list_t;

static xc_status_t add_case(case_list_t* l, const char* name, const char* dir) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 256;
    xc_conform_case_t* nv = realloc(l->v, (size_t)cap * sizeof *nv);
    if (!nv) return xc_error_oom();
    l->v = nv;
    l->cap = cap;
  }
  xc_conform_case_t* c = &l->v[l->n];
  memset(c, 0, sizeof *c);
  c->name = xstrdup(name);
  c->dir = xstrdup(dir);
  if (!c->name || !c->dir) {
    free(c->name);
    free(c->dir);
    return xc_error_oom();
  }
  l->n++;
  return NULL;
}

/* Collects test folders under dir; rel is dir's name relative to the root. */
static xc_status_t discover(const char* dir, const char* rel, int depth, case_list_t* out) {
  if (is_test_dir(dir)) return add_case(out, rel, dir);
  if (depth >= MAX_DEPTH) return NULL;
  DIR* d = opendir(dir);
  if (!d) return NULL;
  xc_status_t s = NULL;
  struct dirent* e;
  while (!s && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char* sub = join_path(dir, e->d_name);
    char* subrel = *rel ? join_path(rel, e->d_name) : xstrdup(e->d_name);
    if (!sub || !subrel)
      s = xc_error_oom();
    else if (is_dir(sub))
      s = discover(sub, subrel, depth + 1, out);
    free(sub);
    free(subrel);
  }
  closedir(d);
  return s;
}

static int case_cmp(const void* a, const void* b) {
  return strcmp(((const xc_conform_case_t*)a)->name, ((const xc_conform_case_t*)b)->name);
}

/* "ReduceMax" -> "reducemax"; test names lose "test_" and underscores too. */
static void squash(const char* s, char* out, size_t n) {
  size_t k = 0;
  for (; *s && k + 1 < n; s++)
    if (*s != '_') out[k++] = (char)((*s >= 'A' && *s <= 'Z') ? *s - 'A' + 'a' : *s);
  out[k] = '\0';
}

static const char* base_name(const char* path) {
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* The op a test is about: the only op of the model; else the model op whose
 * name the test name starts with (test_reduce_max_* -> ReduceMax); else the
 * op of the test it expands (test_x_expanded -> test_x); else its ops joined
 * with '+' when there are at most 3, else "(multi-op models)". */
static char* main_op(const xc_conform_case_t* c, const char* ops, int num_nodes) {
  if (!ops) return xstrdup("?");
  if (!*ops) return xstrdup(num_nodes ? "?" : "(no nodes)");
  if (!strchr(ops, ' ')) return xstrdup(ops);
  char tname[512], oname[256];
  const char* b = base_name(c->name);
  if (strncmp(b, "test_", 5) == 0) b += 5;
  squash(b, tname, sizeof tname);
  const char* best = NULL;
  size_t best_len = 0;
  for (const char* p = ops; *p;) {
    const char* sp = strchr(p, ' ');
    size_t len = sp ? (size_t)(sp - p) : strlen(p);
    char word[256];
    if (len < sizeof word) {
      memcpy(word, p, len);
      word[len] = '\0';
      squash(word, oname, sizeof oname);
      size_t ol = strlen(oname);
      if (ol > best_len && strncmp(tname, oname, ol) == 0) {
        best = p;
        best_len = len;
      }
    }
    p = sp ? sp + 1 : p + len;
  }
  if (best) {
    char* r = malloc(best_len + 1);
    if (r) {
      memcpy(r, best, best_len);
      r[best_len] = '\0';
    }
    return r;
  }
  return NULL; /* caller tries the expanded-test rule, then the list */
}

static void resolve_ops(case_list_t* l, bool models) {
  /* Real models are about themselves, not one op. */
  if (models) {
    for (int i = 0; i < l->n; i++) l->v[i].op = xstrdup(base_name(l->v[i].name));
    return;
  }
  char** lists = calloc((size_t)l->n + 1, sizeof *lists);
  for (int i = 0; i < l->n; i++) {
    int nodes = 0;
    char* path = join_path(l->v[i].dir, "model.onnx");
    char* ops = path ? xc_conform_scan_ops(path, &nodes, &l->v[i].dtype) : NULL;
    free(path);
    l->v[i].op = main_op(&l->v[i], ops, nodes);
    if (lists) lists[i] = ops;
    else free(ops);
  }
  for (int i = 0; i < l->n; i++) {
    if (l->v[i].op) continue;
    /* test_foo_expanded[_ver18] -> the op of test_foo. */
    const char* ex = strstr(l->v[i].name, "_expanded");
    if (ex) {
      size_t plen = (size_t)(ex - l->v[i].name);
      for (int j = 0; j < l->n; j++)
        if (j != i && strlen(l->v[j].name) == plen &&
            strncmp(l->v[j].name, l->v[i].name, plen) == 0 && l->v[j].op &&
            !strchr(l->v[j].op, '+')) {
          l->v[i].op = xstrdup(l->v[j].op);
          break;
        }
    }
    /* A few ops: name them all; a whole model: one bucket. */
    if (!l->v[i].op && lists && lists[i]) {
      int words = 1;
      for (const char* p = lists[i]; *p; p++) words += *p == ' ';
      if (words <= 3) {
        l->v[i].op = xstrdup(lists[i]);
        for (char* p = l->v[i].op; p && *p; p++)
          if (*p == ' ') *p = '+';
      } else {
        l->v[i].op = xstrdup("(multi-op models)");
      }
    }
    if (!l->v[i].op) l->v[i].op = xstrdup("?");
  }
  if (lists)
    for (int i = 0; i < l->n; i++) free(lists[i]);
  free(lists);
}

/* ---- child processes ---------------------------------------------------- */

/* A test times out when it has used --timeout seconds of CPU time, counting
 * the processes it waited for (a compiled target's C compiler runs hundreds
 * of times for a large model), or WALL_FACTOR times that in wall time (a
 * test blocked without using the CPU). Wall time alone made a model that
 * needs 20 CPU seconds time out at 60 s on a loaded 2-core machine, where it
 * gets a sixth of a core. Without /proc the deadline is wall time. */
#define WALL_FACTOR 4.0

typedef struct {
  pid_t pid;
  int fd;
  int index;
  double deadline;      /* wall-clock ceiling */
  double cpu_deadline;  /* CPU seconds; <= 0: wall time only (no /proc) */
  double start;
  char buf[2048];
  size_t len;
} child_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds used by `pid` and by the children it has waited for
 * (utime + stime + cutime + cstime of /proc/PID/stat); -1 where unreadable. */
static double child_cpu_s(pid_t pid) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  char* p = strrchr(line, ')'); /* the command name may hold spaces */
  if (!p) return -1;
  p++;
  /* fields 3..13 (state .. cmajflt), then utime stime cutime cstime */
  for (int field = 3; field <= 13; field++) {
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++;
  }
  unsigned long long t[4];
  if (sscanf(p, " %llu %llu %llu %llu", &t[0], &t[1], &t[2], &t[3]) != 4) return -1;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return -1;
  return (double)(t[0] + t[1] + t[2] + t[3]) / (double)hz;
}

static void write_all(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

/* What a child runs for case `index` (test folders: xc_conform_run_case). */
typedef struct {
  xc_conform_case_fn fn;
  void* ctx;
} case_runner_t;

static xc_status_t spawn(const xc_conform_case_t* c, int index, const xc_conform_options_t* opt,
                         const case_runner_t* run, child_t* ch) {
  int fds[2];
  if (pipe(fds) != 0) return xc_error(XC_IO, "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return xc_error(XC_IO, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    char* detail = NULL;
    xc_conform_verdict_t v =
        run->fn ? run->fn(run->ctx, c, index, &detail) : xc_conform_run_case(c->dir, opt, &detail);
    /* One line, always newline-terminated: long details (compiler logs) are
     * cut and their newlines flattened, or the parent would see no result. */
    char line[2048];
    int n = snprintf(line, sizeof line - 1, "%d\t%s", (int)v, detail ? detail : "");
    free(detail);
    size_t len = n < 0 ? 0 : ((size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2);
    for (size_t i = 0; i < len; i++)
      if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    line[len] = '\n';
    line[len + 1] = '\0';
    write_all(fds[1], line, strlen(line));
    close(fds[1]);
    xc_temp_cleanup(); /* the child's own temp folder: _exit runs no exit hooks */
    _exit(0);
  }
  close(fds[1]);
  ch->pid = pid;
  ch->fd = fds[0];
  ch->index = index;
  ch->start = now_s();
  bool by_cpu = child_cpu_s(pid) >= 0;
  ch->cpu_deadline = by_cpu ? opt->timeout_s : 0;
  ch->deadline = ch->start + (by_cpu ? WALL_FACTOR : 1.0) * opt->timeout_s;
  ch->len = 0;
  return NULL;
}

static void finish(child_t* ch, bool timed_out, xc_conform_case_t* c, double timeout_s) {
  int status = 0;
  if (timed_out) kill(ch->pid, SIGKILL);
  while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(ch->fd);
  c->seconds = now_s() - ch->start;
  ch->buf[ch->len < sizeof ch->buf ? ch->len : sizeof ch->buf - 1] = '\0';
  char* tab = strchr(ch->buf, '\t');
  char* nl = strchr(ch->buf, '\n');
  if (timed_out) {
    c->verdict = XC_CONFORM_FAIL;
    char msg[96];
    if (ch->cpu_deadline > 0)
      snprintf(msg, sizeof msg, "TIMEOUT after %.0f s (CPU time; %.0f s wall)", timeout_s, c->seconds);
    else
      snprintf(msg, sizeof msg, "TIMEOUT after %.0f s", timeout_s);
    c->detail = xstrdup(msg);
  } else if (tab && nl && nl > tab && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    *nl = '\0';
    int v = atoi(ch->buf);
    c->verdict = (v == XC_CONFORM_PASS || v == XC_CONFORM_UNSUPPORTED) ? (xc_conform_verdict_t)v
                                                                        : XC_CONFORM_FAIL;
    c->detail = xstrdup(tab + 1);
  } else {
    c->verdict = XC_CONFORM_FAIL;
    char msg[128];
    if (WIFSIGNALED(status))
      snprintf(msg, sizeof msg, "CRASH: killed by signal %d (%s)", WTERMSIG(status),
               strsignal(WTERMSIG(status)));
    else
      snprintf(msg, sizeof msg, "CRASH: exited with status %d without a result",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    c->detail = xstrdup(msg);
  }
}

static void print_case(FILE* f, const xc_conform_case_t* c) {
  fprintf(f, "%-11s %s", xc_conform_verdict_name(c->verdict), c->name);
  if (c->detail && *c->detail) fprintf(f, "  (%s)", c->detail);
  if (c->xfail_reason) fprintf(f, "  [xfail: %s]", c->xfail_reason);
  fputc('\n', f);
}

static xc_status_t run_all(case_list_t* l, const xc_conform_options_t* opt, const case_runner_t* run) {
  int jobs = opt->jobs > 0 ? opt->jobs : 1;
  if (jobs > 256) jobs = 256;
  child_t* ch = calloc((size_t)jobs, sizeof *ch);
  struct pollfd* pf = calloc((size_t)jobs, sizeof *pf);
  if (!ch || !pf) {
    free(ch);
    free(pf);
    return xc_error_oom();
  }
  int running = 0, next = 0;
  xc_status_t s = NULL;
  while (!s && (next < l->n || running > 0)) {
    while (running < jobs && next < l->n) {
      s = spawn(&l->v[next], next, opt, run, &ch[running]);
      if (s) break;
      running++;
      next++;
    }
    if (s) break;
    double t = now_s(), soonest = 1e300;
    for (int i = 0; i < running; i++) {
      pf[i].fd = ch[i].fd;
      pf[i].events = POLLIN;
      pf[i].revents = 0;
      if (ch[i].deadline < soonest) soonest = ch[i].deadline;
    }
    double wait = soonest - t;
    int ms = wait <= 0 ? 0 : (wait > 1000 ? 1000000 : (int)(wait * 1000) + 1);
    for (int i = 0; i < running; i++)
      if (ch[i].cpu_deadline > 0 && ms > 250) ms = 250; /* CPU time is polled */
    int r = poll(pf, (nfds_t)running, ms);
    if (r < 0 && errno != EINTR) {
      s = xc_error(XC_IO, "poll: %s", strerror(errno));
      break;
    }
    t = now_s();
    for (int i = 0; i < running; i++) {
      bool done = false, timed_out = false;
      if (r > 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char tmp[1024];
        ssize_t got = read(ch[i].fd, tmp, sizeof tmp);
        if (got > 0) {
          size_t room = sizeof ch[i].buf - 1 - ch[i].len;
          size_t take = (size_t)got < room ? (size_t)got : room;
          memcpy(ch[i].buf + ch[i].len, tmp, take);
          ch[i].len += take;
        } else if (got == 0 || errno != EINTR) {
          done = true;
        }
      }
      if (!done && t >= ch[i].deadline) done = timed_out = true;
      if (!done && ch[i].cpu_deadline > 0 && child_cpu_s(ch[i].pid) >= ch[i].cpu_deadline)
        done = timed_out = true;
      if (!done) continue;
      xc_conform_case_t* c = &l->v[ch[i].index];
      finish(&ch[i], timed_out, c, opt->timeout_s);
      if (opt->progress) {
        print_case(opt->progress, c);
        fflush(opt->progress);
      }
      ch[i] = ch[running - 1];
      pf[i] = pf[running - 1];
      running--;
      i--;
    }
  }
  /* On an internal error, do not leave children behind. */
  for (int i = 0; i < running; i++) finish(&ch[i], true, &l->v[ch[i].index], opt->timeout_s);
  free(ch);
  free(pf);
  return s;
}

/* Keeps the first `per_op` cases (the list is in name order) of each
 * (main op, dtype); cases without a resolved op form one bucket. */
static void sample_per_op(case_list_t* l, int per_op) {
  int kept = 0;
  for (int i = 0; i < l->n; i++) {
    int seen = 0;
    for (int j = 0; j < kept && seen < per_op; j++) {
      const xc_conform_case_t *a = &l->v[j], *b = &l->v[i];
      bool same_op = (!a->op && !b->op) || (a->op && b->op && strcmp(a->op, b->op) == 0);
      if (same_op && a->dtype == b->dtype) seen++;
    }
    if (seen < per_op) {
      l->v[kept++] = l->v[i];
    } else {
      free(l->v[i].name);
      free(l->v[i].dir);
      free(l->v[i].op);
    }
  }
  l->n = kept;
}

xc_status_t xc_conform_run(const char* root, const xc_conform_options_t* opt,
                           xc_conform_report_t* out) {
  memset(out, 0, sizeof *out);
  xc_conform_options_t defaults;
  if (!opt) {
    xc_conform_options_init(&defaults);
    opt = &defaults;
  }
  xc_conform_options_t o = *opt;
  if (o.timeout_s <= 0) o.timeout_s = 60;
  if (!is_dir(root)) return xc_error(XC_NOT_FOUND, "%s: not a folder", root);
  regex_t re;
  bool have_re = false;
  if (o.filter) {
    int rc = regcomp(&re, o.filter, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &re, msg, sizeof msg);
      return xc_error(XC_INVALID_ARGUMENT, "--filter '%s': %s", o.filter, msg);
    }
    have_re = true;
  }
  case_list_t all = {0};
  xc_status_t s = NULL;
  if (is_test_dir(root)) {
    s = add_case(&all, base_name(root), root);
  } else {
    s = discover(root, "", 0, &all);
  }
  /* Keep only the tests matching the filter. */
  int kept = 0;
  for (int i = 0; i < all.n; i++) {
    if (!s && (!have_re || regexec(&re, all.v[i].name, 0, NULL, 0) == 0)) {
      all.v[kept++] = all.v[i];
    } else {
      free(all.v[i].name);
      free(all.v[i].dir);
    }
  }
  all.n = kept;
  if (have_re) regfree(&re);
  if (!s && all.n > 0) qsort(all.v, (size_t)all.n, sizeof *all.v, case_cmp);
  if (!s) resolve_ops(&all, o.models);
  if (!s && o.per_op > 0) sample_per_op(&all, o.per_op);
  case_runner_t folders = {NULL, NULL};
  if (!s) s = run_all(&all, &o, &folders);
  out->cases = all.v;
  out->num_cases = all.n;
  for (int i = 0; i < all.n; i++) {
    if (!all.v[i].detail) all.v[i].detail = xstrdup("");
    switch (all.v[i].verdict) {
      case XC_CONFORM_PASS: out->passed++; break;
      case XC_CONFORM_FAIL: out->failed++; break;
      case XC_CONFORM_UNSUPPORTED: out->skipped++; break;
      case XC_CONFORM_XFAIL: out->xfailed++; break;
      case XC_CONFORM_XPASS: out->xpassed++; break;
    }
  }
  if (s) xc_conform_report_free(out);
  return s;
}

xc_status_t xc_conform_run_cases(xc_conform_report_t* r, const xc_conform_options_t* opt,
                                 xc_conform_case_fn fn, void* ctx) {
  xc_conform_options_t o;
  if (opt)
    o = *opt;
  else
    xc_conform_options_init(&o);
  if (o.timeout_s <= 0) o.timeout_s = 60;
  case_list_t l = {r->cases, r->num_cases, r->num_cases};
  case_runner_t run = {fn, ctx};
  xc_status_t s = run_all(&l, &o, &run);
  r->passed = r->failed = r->skipped = r->xfailed = r->xpassed = 0;
  for (int i = 0; i < r->num_cases; i++) {
    if (!r->cases[i].detail) r->cases[i].detail = xstrdup("");
    switch (r->cases[i].verdict) {
      case XC_CONFORM_PASS: r->passed++; break;
      case XC_CONFORM_FAIL: r->failed++; break;
      case XC_CONFORM_UNSUPPORTED: r->skipped++; break;
      case XC_CONFORM_XFAIL: r->xfailed++; break;
      case XC_CONFORM_XPASS: r->xpassed++; break;
    }
  }
  return s;
}

void xc_conform_report_free(xc_conform_report_t* r) {
  for (int i = 0; i < r->num_cases; i++) {
    free(r->cases[i].name);
    free(r->cases[i].dir);
    free(r->cases[i].op);
    free(r->cases[i].detail);
    free(r->cases[i].xfail_reason);
  }
  free(r->cases);
  memset(r, 0, sizeof *r);
}

/* ---- reports ----------------------------------------------------------- */

typedef struct {
  const char* op;
  xc_dtype_t dtype;
  int pass, fail, skip;
  const char* why_skip; /* detail of the first unsupported case */
} op_total_t;

static int op_total_cmp(const void* a, const void* b) {
  const op_total_t* x = a;
  const op_total_t* y = b;
  int c = strcmp(x->op, y->op);
  return c ? c : (int)x->dtype - (int)y->dtype;
}

static const char* dtype_label(xc_dtype_t t) {
  return t == XC_DTYPE_UNDEFINED ? "?" : xc_dtype_name(t);
}

/* Totals per (op, dtype), sorted; caller frees the array. */
static op_total_t* op_totals(const xc_conform_report_t* r, int* out_n) {
  op_total_t* t = calloc((size_t)r->num_cases + 1, sizeof *t);
  int n = 0;
  if (!t) {
    *out_n = 0;
    return NULL;
  }
  for (int i = 0; i < r->num_cases; i++) {
    const xc_conform_case_t* c = &r->cases[i];
    const char* op = c->op ? c->op : "?";
    int k = 0;
    while (k < n && (strcmp(t[k].op, op) != 0 || t[k].dtype != c->dtype)) k++;
    if (k == n) {
      t[n].op = op;
      t[n++].dtype = c->dtype;
    }
    switch (c->verdict) {
      case XC_CONFORM_PASS:
      case XC_CONFORM_XPASS: t[k].pass++; break;
      case XC_CONFORM_FAIL:
      case XC_CONFORM_XFAIL: t[k].fail++; break;
      case XC_CONFORM_UNSUPPORTED:
        t[k].skip++;
        if (!t[k].why_skip) t[k].why_skip = c->detail;
        break;
    }
  }
  qsort(t, (size_t)n, sizeof *t, op_total_cmp);
  *out_n = n;
  return t;
}

void xc_conform_print_report(const xc_conform_report_t* r, bool include_cases, FILE* f) {
  if (include_cases)
    for (int i = 0; i < r->num_cases; i++) print_case(f, &r->cases[i]);
  int n = 0;
  op_total_t* t = op_totals(r, &n);
  if (n > 0) {
    fprintf(f, "\n%-32s %-8s %7s %7s %7s\n", "op", "dtype", "passed", "failed", "skipped");
    for (int i = 0; i < n; i++)
      fprintf(f, "%-32s %-8s %7d %7d %7d\n", t[i].op, dtype_label(t[i].dtype), t[i].pass,
              t[i].fail, t[i].skip);
    fputc('\n', f);
  }
  free(t);
  fprintf(f, "%d passed, %d failed, %d skipped", r->passed, r->failed, r->skipped);
  if (r->xfailed || r->xpassed) fprintf(f, ", %d xfail, %d xpass", r->xfailed, r->xpassed);
  fputc('\n', f);
}

void xc_conform_md_cell(FILE* f, const char* s, size_t max) {
  size_t k = 0;
  for (; s && *s && k < max; s++, k++) {
    if (*s == '|')
      fputs("\\|", f);
    else if (*s == '\n')
      fputc(' ', f);
    else
      fputc(*s, f);
  }
  if (s && *s) fputs("...", f);
}

/* Failures whose cause is known to lie in the test data, not in xcomp. */
static const struct {
  const char* prefix;
  const char* why;
} known_failures[] = {
    {"test_qlinearmatmul_",
     "the stored int8 outputs wrap out-of-range results (e.g. -236 stored as 20) where the "
     "QLinearMatMul definition saturates to [-128, 127]; xcomp saturates. The test data were "
     "generated by a reference implementation that wrapped (ONNX issue 7835)."},
};

void xc_conform_print_op_table_md(const xc_conform_report_t* r, FILE* f) {
  int n = 0;
  op_total_t* t = op_totals(r, &n);
  fprintf(f, "| op | dtype | passed | failed | skipped | first reason skipped |\n");
  fprintf(f, "| --- | --- | ---: | ---: | ---: | --- |\n");
  for (int i = 0; i < n; i++) {
    fprintf(f, "| ");
    xc_conform_md_cell(f, t[i].op, 80);
    fprintf(f, " | %s | %d | %d | %d | ", dtype_label(t[i].dtype), t[i].pass, t[i].fail,
            t[i].skip);
    xc_conform_md_cell(f, t[i].why_skip, 100);
    fprintf(f, " |\n");
  }
  free(t);
}

void xc_conform_print_markdown(const xc_conform_report_t* r, const char* command, FILE* f) {
  xc_conform_print_markdown_titled(r, command, NULL, f);
}

void xc_conform_print_markdown_titled(const xc_conform_report_t* r, const char* command,
                                      const char* title, FILE* f) {
  if (title)
    fprintf(f, "# xcomp conformance: %s\n\n", title);
  else
    fprintf(f, "# Conformance of the reference interpreter\n\n");
  if (title)
    fprintf(f, "Generated by `xcomp conform`:\n\n");
  else
    fprintf(f, "Generated by `xcomp conform`; do not edit by hand. Regenerate with `make docs`, which runs:\n\n");
  fprintf(f, "```\n%s\n```\n\n", command ? command : "xcomp conform --target ref ...");
  fprintf(f,
          "Each test folder (`model.onnx` + `test_data_set_N/`) is imported, shape-inferred, "
          "run %s and compared with the stored outputs (rtol 1e-3, "
          "atol 1e-7, dtype and shape exact, integers and bool exact, NaN positions equal; see "
          "docs/cli.md). *Skipped* means xcomp reported the test unsupported (unknown op, "
          "dtype or attribute); a crash or timeout counts as failed. The op of a test is the "
          "op of its single node, or the op its name is about; its dtype is that of the model's "
          "first input.\n\n",
          title ? "on the target" : "by the reference interpreter");
  fprintf(f, "**%d passed, %d failed, %d skipped", r->passed, r->failed, r->skipped);
  if (r->xfailed || r->xpassed) fprintf(f, ", %d xfail, %d xpass", r->xfailed, r->xpassed);
  fprintf(f, "** (%d tests)\n\n", r->num_cases);
  xc_conform_print_op_table_md(r, f);
  /* Every test that did not pass, with its reason, so each is explained. */
  static const char* const headings[] = {"Failures", "Skipped tests", "Expected failures (xfail)",
                                         "Unexpected passes (xpass)"};
  static const xc_conform_verdict_t kinds[] = {XC_CONFORM_FAIL, XC_CONFORM_UNSUPPORTED, XC_CONFORM_XFAIL,
                                               XC_CONFORM_XPASS};
  for (int pass = 0; pass < 4; pass++) {
    xc_conform_verdict_t want = kinds[pass];
    int count = 0;
    for (int i = 0; i < r->num_cases; i++) count += r->cases[i].verdict == want;
    if (count == 0) continue;
    fprintf(f, "\n## %s (%d)\n\n", headings[pass], count);
    if (pass == 0 && !title) {
      for (size_t k = 0; k < sizeof known_failures / sizeof known_failures[0]; k++)
        fprintf(f, "- `%s*`: %s\n", known_failures[k].prefix, known_failures[k].why);
      fprintf(f, "\n");
    }
    fprintf(f, "| test | op | why |\n| --- | --- | --- |\n");
    for (int i = 0; i < r->num_cases; i++) {
      const xc_conform_case_t* c = &r->cases[i];
      if (c->verdict != want) continue;
      fprintf(f, "| ");
      xc_conform_md_cell(f, c->name, 100);
      fprintf(f, " | ");
      xc_conform_md_cell(f, c->op, 60);
      fprintf(f, " | ");
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
