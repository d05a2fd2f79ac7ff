/* The cpu target's thread pool (cpu_pool.h).
 *
 * Why not an OpenMP parallel loop in every kernel, as before: each launch
 * then paid a fork and a join, and the join waits for every thread of the
 * team, including one the OS has not scheduled yet. On a machine shared
 * with other jobs (more runnable threads than cores) a model of a hundred
 * small kernels took tens of milliseconds of such waits. Here the calling
 * thread works too and waits only for programs that workers have actually
 * claimed; a worker that wakes late finds nothing left (the design of ONNX
 * Runtime's and Eigen's pools).
 *
 * One job at a time. Its state is one 64-bit ticket word: generation (20
 * bits) | next program (22 bits) | programs (22 bits). A thread claims
 * programs [i, i + c) (c the job's chunk, cut at n) by a compare-and-swap
 * of the ticket from (g, i, n) to (g, i + c, n) with i < n. The chunk is
 * read before the claim: the ticket load that saw generation g acquires
 * the job's fields, stored before its publication, and a later job's
 * chunk can only be read once the ticket has moved on, failing the swap.
 * The job's other fields (function, argument, first program) are read
 * after a successful claim, when the job cannot finish (and be replaced)
 * before the claimed programs are done. The
 * caller then waits until `done` reaches n. Launches of more than 2^22 - 1
 * programs run as several jobs.
 *
 * Workers spin on the ticket for a while after each job (kernels follow each
 * other closely within a model run), then sleep on a condition variable;
 * the caller signals only when some worker sleeps. */
#define _GNU_SOURCE
#include "cpu_pool.h"
#include "xcomp/target.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GEN_BITS 20
#define IDX_BITS 22
#define IDX_MASK ((UINT64_C(1) << IDX_BITS) - 1)
#define MAX_JOB_PROGRAMS ((int64_t)IDX_MASK)
/* polling before a worker sleeps: ~20-50 us, enough for the next kernel of
 * a model run; longer spinning took a core from the calling thread when
 * the machine was shared */
#define SPIN_ROUNDS 4000
#define MAX_THREADS 256
/* claims of programs a thread makes per job, about (docs/targets.md, "Threads") */
#define CLAIMS_PER_THREAD 8

typedef struct pool {
  int nthreads; /* caller included */
  /* the ticket and the job it describes, read by every claim: one cache line */
  _Alignas(64) _Atomic uint64_t ticket;
  _Atomic int64_t chunk; /* programs per claim, read before the claim (see work) */
  /* the job: written before its ticket is published, read after a claim */
  xc_cpu_range_fn fn;
  void* arg;
  int64_t base;
  /* completions, counted by every chunk's thread and polled by the caller:
   * a line of their own */
  _Alignas(64) _Atomic int64_t done;
  char pad_done[64 - sizeof(int64_t)];
  /* sleeping workers */
  pthread_mutex_t lock;
  pthread_cond_t wake;
  _Atomic int sleepers;
  pthread_mutex_t busy; /* one launch at a time */
} pool_t;

static pool_t* the_pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static inline uint64_t ticket_gen(uint64_t t) { return t >> (2 * IDX_BITS); }
static inline int64_t ticket_next(uint64_t t) { return (int64_t)((t >> IDX_BITS) & IDX_MASK); }
static inline int64_t ticket_count(uint64_t t) { return (int64_t)(t & IDX_MASK); }
static inline uint64_t make_ticket(uint64_t gen, int64_t next, int64_t count) {
  return ((gen & ((UINT64_C(1) << GEN_BITS) - 1)) << (2 * IDX_BITS)) | ((uint64_t)next << IDX_BITS) | (uint64_t)count;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Claims and runs programs of the job of generation gen until none is left;
 * returns how many this thread ran. */
static int64_t work(pool_t* p, uint64_t gen) {
  int64_t ran = 0;
  uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  for (;;) {
    if (ticket_gen(t) != gen) break;
    int64_t i = ticket_next(t), n = ticket_count(t);
    if (i >= n) break;
    /* programs [i, end) in one claim; the chunk read before it is the job's:
     * a later job's ticket (published after its chunk) fails the exchange */
    int64_t c = atomic_load_explicit(&p->chunk, memory_order_relaxed);
    int64_t end = c > 1 && c < n - i ? i + c : c > 1 ? n : i + 1;
    if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, make_ticket(gen, end, n), memory_order_acq_rel,
                                               memory_order_acquire))
      continue; /* t now holds the current ticket */
    int64_t b = p->base + i;
    p->fn(p->arg, b, p->base + end);
    atomic_fetch_add_explicit(&p->done, end - i, memory_order_release);
    ran += end - i;
    t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  }
  return ran;
}

static void* worker_main(void* arg) {
  pool_t* p = arg;
  uint64_t seen = ticket_gen(atomic_load_explicit(&p->ticket, memory_order_acquire));
  for (;;) {
    uint64_t t = 0;
    for (int spin = 0; spin < SPIN_ROUNDS; spin++) {
      t = atomic_load_explicit(&p->ticket, memory_order_acquire);
      if (ticket_gen(t) != seen) break;
      cpu_relax();
    }
    if (ticket_gen(t) == seen) {
      pthread_mutex_lock(&p->lock);
      atomic_fetch_add(&p->sleepers, 1); /* seq_cst: pairs with the caller's publish, then load */
      while (ticket_gen(t = atomic_load(&p->ticket)) == seen) pthread_cond_wait(&p->wake, &p->lock);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->lock);
    }
    seen = ticket_gen(t);
    work(p, seen);
  }
  return NULL;
}

static int env_threads(const char* name) {
  const char* s = getenv(name);
  if (!s || !*s) return 0;
  char* end;
  long v = strtol(s, &end, 10);
  return v > 0 && end != s ? (int)(v > MAX_THREADS ? MAX_THREADS : v) : 0;
}

static int count_threads(void) {
  int n = env_threads("XCOMP_NUM_THREADS");
  if (!n) n = env_threads("OMP_NUM_THREADS");
  if (!n) {
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n <= 0) {
      long c = sysconf(_SC_NPROCESSORS_ONLN);
      n = c > 0 ? (int)c : 1;
    }
  }
  return n > MAX_THREADS ? MAX_THREADS : n;
}

/* After fork() the child has none of the workers (and maybe a lock held by
 * one): it starts over with a pool of its own when it first needs one. */
static void forget_pool_in_child(void) {
  the_pool = NULL;
  pool_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

static void create_pool(void) {
  int n = count_threads();
  pthread_atfork(NULL, NULL, forget_pool_in_child);
  /* the struct's 64-byte members need the allocation aligned */
  size_t bytes = (sizeof(pool_t) + 63) / 64 * 64;
  pool_t* p = aligned_alloc(64, bytes);
  if (p) memset(p, 0, bytes);
  if (!p) return;
  p->nthreads = n;
  atomic_init(&p->ticket, make_ticket(0, 0, 0));
  atomic_init(&p->done, 0);
  atomic_init(&p->sleepers, 0);
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_mutex_init(&p->busy, NULL);
  int started = 1;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 1; i < n; i++) {
    pthread_t th;
    if (pthread_create(&th, &attr, worker_main, p) != 0) break; /* fewer workers: still correct */
    started++;
  }
  pthread_attr_destroy(&attr);
  p->nthreads = started;
  the_pool = p; /* the workers live as long as the process */
}

static void get_pool(pool_t** out) {
  pthread_once(&pool_once, create_pool);
  *out = the_pool;
}

int xc_cpu_pool_threads(void) {
  static int n;
  if (!n) n = count_threads();
  return n;
}

int xc_cpu_runtime_threads(void) { return xc_cpu_pool_threads(); }

static void run_serial(xc_cpu_range_fn fn, void* arg, int64_t programs) { fn(arg, 0, programs); }

void xc_cpu_pool_run(xc_cpu_range_fn fn, void* arg, int64_t programs) {
  if (programs <= 0) return;
  if (programs == 1 || xc_cpu_pool_threads() <= 1) {
    run_serial(fn, arg, programs);
    return;
  }
  pool_t* p;
  get_pool(&p);
  /* no pool (out of memory), or another thread's launch in flight: this one
   * runs on its own thread rather than wait */
  if (!p || p->nthreads <= 1 || pthread_mutex_trylock(&p->busy) != 0) {
    run_serial(fn, arg, programs);
    return;
  }
  for (int64_t base = 0; base < programs; base += MAX_JOB_PROGRAMS) {
    int64_t n = programs - base < MAX_JOB_PROGRAMS ? programs - base : MAX_JOB_PROGRAMS;
    uint64_t gen = ticket_gen(atomic_load_explicit(&p->ticket, memory_order_relaxed)) + 1;
    gen &= (UINT64_C(1) << GEN_BITS) - 1;
    p->fn = fn;
    p->arg = arg;
    p->base = base;
    /* about CLAIMS_PER_THREAD claims a thread: one claim per program made
     * every program of a kernel of many small ones (an input transpose of
     * 288 programs of ~15 ns) a round trip of the ticket's cache line
     * between cores, 60 us instead of 4 */
    int64_t chunk = n / ((int64_t)p->nthreads * CLAIMS_PER_THREAD);
    atomic_store_explicit(&p->chunk, chunk < 1 ? 1 : chunk, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store(&p->ticket, make_ticket(gen, 0, n)); /* seq_cst: publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_broadcast(&p->wake);
      pthread_mutex_unlock(&p->lock);
    }
    work(p, gen);
    /* wait for the programs workers claimed */
    for (int spin = 0; atomic_load_explicit(&p->done, memory_order_acquire) < n; spin++) {
      if (spin < 4096) cpu_relax();
      else sched_yield(); /* the worker holding a program may need this core */
    }
  }
  pthread_mutex_unlock(&p->busy);
}
