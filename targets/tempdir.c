/* The per-process temp folder (include/xcomp/tempdir.h): created once,
 * removed at exit and on fatal signals (after the tracked child processes
 * are stopped), stale ones of dead processes swept. Removal uses only system
 * calls that are safe in a signal handler (kill, waitpid, nanosleep, openat,
 * getdents64, unlinkat), so the signal path and the exit path are one
 * function. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "targets_internal.h"
#include "xcomp/tempdir.h"

static pthread_mutex_t temp_lock = PTHREAD_MUTEX_INITIALIZER;
static char temp_path[4096];
static volatile sig_atomic_t temp_ready; /* temp_path names a folder this process made */
static pid_t temp_owner;
static bool exit_hook_set, swept;

/* Child processes to kill before the folder goes (xc_temp_track_child);
 * 0: a free slot. pid_t is an int on the systems xcomp runs on. */
enum { MAX_CHILDREN = 64 };
static volatile sig_atomic_t child_pid[MAX_CHILDREN];
static pid_t child_owner[MAX_CHILDREN];

/* Files outside the folder to remove with it (xc_temp_track). */
enum { MAX_TRACKED = 16 };
static char tracked[MAX_TRACKED][4096];
static volatile sig_atomic_t tracked_used[MAX_TRACKED];
static pid_t tracked_owner[MAX_TRACKED];

static const char* temp_base(void) {
  const char* dir = getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

/* Removes name (a file or a folder tree) inside dirfd. Bounded depth; only
 * async-signal-safe calls. Our folders hold at most one level of
 * subfolders (xcomp-cpu-*). */
static void remove_at(int dirfd, const char* name, int depth) {
  if (unlinkat(dirfd, name, 0) == 0) return;
  if (errno != EISDIR && errno != EPERM) return; /* gone already, or not ours */
  if (depth > 8) return;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct {
        unsigned long long ino;
        long long off;
        unsigned short reclen;
        unsigned char type;
        char name[];
      }* d = (void*)(buf + off);
      off += d->reclen;
      if (d->name[0] == '.' && (d->name[1] == '\0' || (d->name[1] == '.' && d->name[2] == '\0'))) continue;
      remove_at(fd, d->name, depth + 1);
    }
  }
  close(fd);
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void remove_tree(const char* path) { remove_at(AT_FDCWD, path, 0); }

static bool keep_temp(void) {
  const char* k = getenv("XCOMP_KEEP_TEMP");
  return k && *k && strcmp(k, "0") != 0;
}

void xc_temp_cleanup(void) {
  pthread_mutex_lock(&temp_lock);
  if (temp_ready && temp_owner == getpid() && !keep_temp()) remove_tree(temp_path);
  if (temp_owner == getpid()) temp_ready = 0;
  pthread_mutex_unlock(&temp_lock);
}

static void remove_tracked(void) {
  for (int i = 0; i < MAX_TRACKED; i++)
    if (tracked_used[i] && tracked_owner[i] == getpid()) unlink(tracked[i]);
}

static void ensure_exit_hook(void);

static bool any_child_alive(void) {
  for (int i = 0; i < MAX_CHILDREN; i++) {
    pid_t pid = (pid_t)child_pid[i];
    if (pid <= 0 || child_owner[i] != getpid()) continue;
    /* Reaps it once it is gone: the process is on its way out. */
    if (waitpid(pid, NULL, WNOHANG) == 0) return true;
  }
  return false;
}

static void signal_children(int sig) {
  for (int i = 0; i < MAX_CHILDREN; i++) {
    pid_t pid = (pid_t)child_pid[i];
    if (pid <= 0 || child_owner[i] != getpid()) continue;
    if (kill(-pid, sig) != 0) kill(pid, sig); /* its own group, else the child alone */
  }
}

/* Stops the tracked children (async-signal-safe: kill, waitpid, nanosleep):
 * SIGTERM lets a compiler driver remove its own temp files; what is still
 * running after a second gets SIGKILL. */
static void kill_children(void) {
  bool any = false;
  for (int i = 0; i < MAX_CHILDREN && !any; i++) any = child_pid[i] > 0 && child_owner[i] == getpid();
  if (!any) return;
  signal_children(SIGTERM);
  struct timespec step = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 100 && any_child_alive(); i++) nanosleep(&step, NULL);
  if (any_child_alive()) signal_children(SIGKILL);
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (child_owner[i] == getpid()) child_pid[i] = 0;
}

int xc_temp_track_child(pid_t pid) {
  if (pid <= 0) return -1;
  pthread_mutex_lock(&temp_lock);
  int slot = -1;
  for (int i = 0; i < MAX_CHILDREN && slot < 0; i++)
    if (child_pid[i] <= 0 || child_owner[i] != getpid()) slot = i; /* a forked child's copy: free */
  if (slot >= 0) {
    child_owner[slot] = getpid();
    child_pid[slot] = (sig_atomic_t)pid;
    ensure_exit_hook();
  }
  pthread_mutex_unlock(&temp_lock);
  return slot;
}

void xc_temp_forget_child(int handle) {
  if (handle < 0 || handle >= MAX_CHILDREN) return;
  pthread_mutex_lock(&temp_lock);
  child_pid[handle] = 0;
  pthread_mutex_unlock(&temp_lock);
}

static void cleanup_at_exit(void) {
  /* No lock: another thread may hold it while the process exits. */
  kill_children();
  remove_tracked();
  if (temp_ready && temp_owner == getpid() && !keep_temp()) remove_tree(temp_path);
}

static void ensure_exit_hook(void) {
  if (!exit_hook_set) {
    exit_hook_set = true;
    atexit(cleanup_at_exit);
  }
}

int xc_temp_track(const char* path) {
  if (strlen(path) >= sizeof tracked[0]) return -1;
  pthread_mutex_lock(&temp_lock);
  int slot = -1;
  for (int i = 0; i < MAX_TRACKED && slot < 0; i++)
    if (!tracked_used[i]) slot = i;
  if (slot >= 0) {
    memcpy(tracked[slot], path, strlen(path) + 1);
    tracked_owner[slot] = getpid();
    tracked_used[slot] = 1;
    ensure_exit_hook();
  }
  pthread_mutex_unlock(&temp_lock);
  return slot;
}

void xc_temp_forget(int handle) {
  if (handle < 0 || handle >= MAX_TRACKED) return;
  pthread_mutex_lock(&temp_lock);
  tracked_used[handle] = 0;
  pthread_mutex_unlock(&temp_lock);
}

/* Parses "xcomp-<pid>-XXXXXX"; 0 when name is not one of ours. */
static pid_t owner_of(const char* name) {
  if (strncmp(name, "xcomp-", 6) != 0) return 0;
  const char* p = name + 6;
  long pid = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) pid = pid * 10 + (*p - '0');
  if (!digits || *p != '-' || strlen(p + 1) != 6 || pid <= 0) return 0;
  return (pid_t)pid;
}

/* "xcomp-cpu-XXXXXX": a folder the cpu target of earlier versions made
 * directly under $TMPDIR (before the per-process folder). */
static bool old_style_name(const char* name) {
  return strncmp(name, "xcomp-cpu-", 10) == 0 && strlen(name + 10) == 6;
}

/* Old-style folders carry no pid: one untouched for this long is taken
 * for a leftover (a compile that ran for an hour still writes into its
 * folder at the end, so its mtime is recent). */
#define OLD_STYLE_AGE_S 3600

int xc_temp_sweep_stale(void) {
  const char* base = temp_base();
  DIR* d = opendir(base);
  if (!d) return 0;
  int fd = dirfd(d), removed = 0;
  struct dirent* e;
  time_t now = time(NULL);
  while ((e = readdir(d)) != NULL) {
    pid_t pid = owner_of(e->d_name);
    bool old_style = !pid && old_style_name(e->d_name);
    if ((!pid && !old_style) || pid == getpid()) continue;
    struct stat st;
    if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    if (old_style) {
      if (now - st.st_mtime < OLD_STYLE_AGE_S) continue; /* maybe an old xcomp still at work */
    } else if (kill(pid, 0) == 0 || errno != ESRCH) {
      continue; /* alive (or not ours to ask about) */
    }
    remove_at(fd, e->d_name, 0);
    removed++;
  }
  closedir(d);
  return removed;
}

xc_status_t xc_temp_dir(const char** out_path) {
  *out_path = NULL;
  pthread_mutex_lock(&temp_lock);
  if (temp_ready && temp_owner != getpid()) temp_ready = 0; /* a forked child makes its own */
  if (!temp_ready) {
    if (!swept) {
      swept = true;
      xc_temp_sweep_stale();
    }
    const char* base = temp_base();
    char path[sizeof temp_path];
    if (snprintf(path, sizeof path, "%s/xcomp-%ld-XXXXXX", base, (long)getpid()) >= (int)sizeof path) {
      pthread_mutex_unlock(&temp_lock);
      return xc_error(XC_IO, "the temp folder path under %s is too long", base);
    }
    if (!mkdtemp(path)) { /* mkdtemp makes it 0700 */
      xc_status_t s = xc_error(XC_IO, "cannot create a temp folder in %s: %s", base, strerror(errno));
      pthread_mutex_unlock(&temp_lock);
      return s;
    }
    memcpy(temp_path, path, sizeof path);
    temp_owner = getpid();
    temp_ready = 1;
    ensure_exit_hook();
  }
  *out_path = temp_path;
  pthread_mutex_unlock(&temp_lock);
  return NULL;
}

static void on_fatal_signal(int sig) {
  int saved = errno;
  cleanup_at_exit();
  errno = saved;
  signal(sig, SIG_DFL);
  raise(sig);
}

void xc_temp_install_signal_cleanup(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    if (sigaction(sigs[i], NULL, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL) continue; /* ignored, or the program's own handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

const char* xc_targets_temp_dir(void) {
  const char* path = NULL;
  xc_status_t s = xc_temp_dir(&path);
  if (s) { /* the callers' own mkdtemp then names the problem */
    xc_status_free(s);
    return temp_base();
  }
  return path;
}
