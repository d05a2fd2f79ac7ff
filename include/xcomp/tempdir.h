/* The per-process temp folder. Every temporary file xcomp makes (generated C
 * and its shared object in the cpu target, kernel objects written for
 * dlopen, module graph side files, plugin scratch files through the host
 * table's temp_dir) lives under one folder, $TMPDIR/xcomp-<pid>-XXXXXX
 * (0700), created on first use and removed when the process exits, and, once
 * a program calls xc_temp_install_signal_cleanup, on SIGINT, SIGTERM and
 * SIGHUP; a child process working in it (the C compiler of the cpu target,
 * registered with xc_temp_track_child) is killed first. A process killed
 * with SIGKILL cannot clean up: the folders of dead processes are swept by
 * the next xcomp process that makes its own (or calls xc_temp_sweep_stale).
 * XCOMP_KEEP_TEMP=1 keeps the folder for inspection. */
#ifndef XCOMP_TEMPDIR_H
#define XCOMP_TEMPDIR_H

#include <sys/types.h>

#include "xcomp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The per-process folder, created on the first call (thread-safe). The
 * string lives until the process exits. Fails when $TMPDIR (or /tmp) does
 * not admit a folder. */
xc_status_t xc_temp_dir(const char** out_path);
/* Removes the per-process folder and everything in it now (a later
 * xc_temp_dir makes a new one). Only the process that created it removes
 * it: a forked child's exit leaves its parent's folder alone. */
void xc_temp_cleanup(void);
/* Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the folder
 * and then die of the signal as they would have (for programs: a library
 * does not take signals on its own). Handlers a program installed before
 * are left in place. */
void xc_temp_install_signal_cleanup(void);
/* Removes the xcomp-<pid>-* folders under $TMPDIR of processes that no
 * longer exist (owned by this user), and the xcomp-cpu-XXXXXX folders that
 * earlier versions of xcomp made directly under $TMPDIR (no pid in the name:
 * owned by this user and untouched for an hour); returns how many were
 * removed. */
int xc_temp_sweep_stale(void);
/* A child process working in the folder (the C compiler): when the process
 * dies of SIGINT, SIGTERM or SIGHUP (with xc_temp_install_signal_cleanup) or
 * exits while the child runs, the child's process group gets SIGTERM (then
 * SIGKILL after a second) before the folder is removed. The child should lead
 * its own process group (posix_spawnattr_setpgroup(attr, 0)) so that what it
 * starts (cc1, as, ld) goes with it. Forget it before reaping it (wait with
 * WNOWAIT first): a reaped pid may be reused. Returns a handle for
 * xc_temp_forget_child, or -1 when all slots are taken (then it is not
 * tracked). */
int xc_temp_track_child(pid_t pid);
void xc_temp_forget_child(int handle);
/* A temp file outside the folder (the temp file an atomic write renames
 * into place, which must live beside its destination) is removed with the
 * folder at exit or on a signal while it is registered. Returns a handle for
 * xc_temp_forget, or -1 when all slots are taken (then it is not tracked). */
int xc_temp_track(const char* path);
void xc_temp_forget(int handle);

#ifdef __cplusplus
}
#endif
#endif
