/* The cpu target's thread pool: spreads the programs of one kernel launch
 * over the process's worker threads and the calling thread (docs/targets.md,
 * "C ABI of CPU kernels"). Internal to targets/cpu/. */
#ifndef XCOMP_TARGETS_CPU_POOL_H
#define XCOMP_TARGETS_CPU_POOL_H

#include <stdint.h>

/* A kernel that runs programs [begin, end) on the calling thread. */
typedef void (*xc_cpu_range_fn)(void* arg, int64_t begin, int64_t end);

/* Threads a launch may use, the caller included: $XCOMP_NUM_THREADS, else
 * the first number of $OMP_NUM_THREADS, else the CPUs this process may run
 * on. Read once. */
int xc_cpu_pool_threads(void);

/* Runs fn(arg, p, p + 1) for every program p in [0, programs), on the
 * calling thread and on the pool's workers, and returns when all are done.
 * The caller takes programs itself and waits only for the programs workers
 * have claimed: a worker that is not running (a busy machine) never holds
 * the launch up, it finds nothing left when it wakes. With one thread, or
 * one program, fn runs on the caller alone. Not reentrant: one launch at a
 * time per process (launches from several threads are serialized). */
void xc_cpu_pool_run(xc_cpu_range_fn fn, void* arg, int64_t programs);

#endif
