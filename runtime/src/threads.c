/*===- threads.c - the thread pool that runs generated parallel loops -----===*/
#define _GNU_SOURCE
#include "threads.h"
#include "profile.h"

#include <pthread.h>
#ifdef __linux__
#include <sched.h>
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* One job at a time: the caller posts (fn, ctx, n), split into a few
 * contiguous chunks per thread; every thread of the pool (the caller is
 * thread 0) claims chunks until none are left, and the caller waits until
 * every claimed chunk is done. A thread that is slow to wake (its core busy
 * with another process) claims less, or nothing, instead of holding the job
 * up by a fixed share; the caller never waits for a worker that has not
 * started. Between jobs a worker spins for a moment (SPIN_NS) watching for
 * the next one, which in a run usually follows within microseconds, and then
 * sleeps on a condition variable; the caller spins as long before it sleeps
 * waiting for the last chunk. So an idle pool costs no CPU a moment after a
 * run, and jobs in a run do not pay a futex wake-up each. */
struct kiln_pool {
  int size; /* threads, the caller included */
  pthread_t *workers;
  pthread_mutex_t mutex;
  pthread_cond_t posted, finished;
  /* Bumped for every job, under the mutex; read by spinning workers. */
  _Atomic unsigned long generation;
  int sleepers; /* workers waiting on `posted` */
  _Atomic int stop;
  kiln_task_fn fn;
  void *ctx;
  void *environment; /* kiln_task_environment() of the posting thread */
  kiln_profiler *profiler; /* of the posting thread's run, or NULL */
  int32_t kernel;          /* the profiled kernel posting the job */
  int64_t n, chunk, chunks;
  /* The next chunk to claim, tagged with the job's generation in the high
   * 32 bits, so that a worker still holding an old job claims nothing of a
   * newer one. */
  _Atomic uint64_t claim;
  _Atomic int64_t done; /* chunks of the current job finished */
};

/* Chunks per thread: enough to even out a late or slow thread. */
enum { CHUNKS_PER_THREAD = 4 };

/* How long a worker waits for the next job, and the caller for the last
 * chunk, before sleeping. */
enum { SPIN_NS = 50 * 1000 };

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins up to SPIN_NS until `ready(p, arg)`; returns whether it became true. */
static int spin_until(int (*ready)(kiln_pool *, uint64_t), kiln_pool *p, uint64_t arg) {
  int64_t deadline = 0;
  for (unsigned i = 0;; ++i) {
    if (ready(p, arg))
      return 1;
    if ((i & 63) == 0) {
      int64_t t = now_ns();
      if (!deadline)
        deadline = t + SPIN_NS;
      else if (t > deadline)
        return 0;
    }
    cpu_relax();
  }
}

typedef struct {
  kiln_pool *pool;
  int index;
} worker_arg;

static _Thread_local kiln_pool *current_pool;
static _Thread_local int inside_task;

/* A job as a thread saw it when it was posted. */
typedef struct {
  uint32_t generation;
  kiln_task_fn fn;
  void *ctx;
  int64_t n, chunk, chunks;
  kiln_profiler *profiler;
  int32_t kernel;
} job;

/* Claims and runs chunks of `j` until none are left; whoever finishes the
 * last one wakes the caller. A profiled run's workers (thread >= 1) record
 * their shares, before the caller can see the job done. */
static void run_chunks(kiln_pool *p, const job *j, int thread) {
  for (;;) {
    uint64_t c = atomic_load(&p->claim);
    if ((uint32_t)(c >> 32) != j->generation || (int64_t)(c & 0xffffffffu) >= j->chunks)
      return;
    if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1))
      continue;
    int64_t begin = (int64_t)(c & 0xffffffffu) * j->chunk;
    int64_t end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
    int64_t started = j->profiler && thread ? kiln_profiler_now() : 0;
    inside_task = 1;
    j->fn(j->ctx, begin, end);
    inside_task = 0;
    if (started)
      kiln_profiler_share(j->profiler, thread, j->generation, j->kernel, started,
                          kiln_profiler_now());
    if (atomic_fetch_add(&p->done, 1) + 1 == j->chunks) {
      pthread_mutex_lock(&p->mutex);
      pthread_cond_signal(&p->finished);
      pthread_mutex_unlock(&p->mutex);
    }
  }
}

static job current_job(const kiln_pool *p) {
  job j = {(uint32_t)p->generation, p->fn, p->ctx, p->n, p->chunk, p->chunks, p->profiler,
           p->kernel};
  return j;
}

static int job_posted(kiln_pool *p, uint64_t seen) {
  return atomic_load(&p->generation) != seen || atomic_load(&p->stop);
}

static void *worker_main(void *raw) {
  worker_arg arg = *(worker_arg *)raw;
  free(raw);
  kiln_pool *p = arg.pool;
  unsigned long seen = 0;
  for (;;) {
    int posted = spin_until(job_posted, p, seen);
    pthread_mutex_lock(&p->mutex);
    if (!posted) {
      ++p->sleepers;
      while (!p->stop && p->generation == seen)
        pthread_cond_wait(&p->posted, &p->mutex);
      --p->sleepers;
    }
    if (p->stop)
      break;
    seen = p->generation;
    job j = current_job(p);
    void *environment = p->environment;
    pthread_mutex_unlock(&p->mutex);
    kiln_set_task_environment(environment);
    run_chunks(p, &j, arg.index);
    kiln_set_task_environment(NULL);
  }
  pthread_mutex_unlock(&p->mutex);
  return NULL;
}

kiln_pool *kiln_pool_create(int size) {
  kiln_pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->size = 1;
  pthread_mutex_init(&p->mutex, NULL);
  pthread_cond_init(&p->posted, NULL);
  pthread_cond_init(&p->finished, NULL);
  p->workers = calloc(size > 1 ? (size_t)size - 1 : 1, sizeof(pthread_t));
  if (!p->workers) {
    kiln_pool_destroy(p);
    return NULL;
  }
  /* If a thread cannot be started, the pool runs with the ones it has. */
  for (int i = 1; i < size; ++i) {
    worker_arg *arg = malloc(sizeof *arg);
    if (!arg)
      break;
    arg->pool = p;
    arg->index = i;
    if (pthread_create(&p->workers[i - 1], NULL, worker_main, arg) != 0) {
      free(arg);
      break;
    }
    p->size = i + 1;
  }
  return p;
}

void kiln_pool_destroy(kiln_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mutex);
  p->stop = 1;
  pthread_cond_broadcast(&p->posted);
  pthread_mutex_unlock(&p->mutex);
  for (int i = 1; i < p->size; ++i)
    pthread_join(p->workers[i - 1], NULL);
  pthread_cond_destroy(&p->posted);
  pthread_cond_destroy(&p->finished);
  pthread_mutex_destroy(&p->mutex);
  free(p->workers);
  free(p);
}

int kiln_pool_size(const kiln_pool *p) { return p ? p->size : 1; }

kiln_pool *kiln_pool_enter(kiln_pool *p) {
  kiln_pool *previous = current_pool;
  current_pool = p;
  return previous;
}

static int chunks_done(kiln_pool *p, uint64_t chunks) {
  return atomic_load(&p->done) >= (int64_t)chunks;
}

void kiln_parallel_for(kiln_task_fn fn, void *ctx, int64_t n) {
  kiln_pool *p = current_pool;
  if (!p || p->size == 1 || n < 2 || inside_task) {
    fn(ctx, 0, n);
    return;
  }
  int64_t chunks = (int64_t)p->size * CHUNKS_PER_THREAD;
  if (chunks > n)
    chunks = n;
  pthread_mutex_lock(&p->mutex);
  p->fn = fn;
  p->ctx = ctx;
  p->environment = kiln_task_environment();
  p->profiler = kiln_profiler_current();
  p->kernel = p->profiler ? kiln_profiler_kernel(p->profiler) : -1;
  p->n = n;
  p->chunk = (n + chunks - 1) / chunks;
  p->chunks = (n + p->chunk - 1) / p->chunk;
  ++p->generation;
  atomic_store(&p->done, 0);
  atomic_store(&p->claim, (uint64_t)(uint32_t)p->generation << 32);
  job j = current_job(p);
  if (p->sleepers)
    pthread_cond_broadcast(&p->posted);
  pthread_mutex_unlock(&p->mutex);

  run_chunks(p, &j, 0);

  if (spin_until(chunks_done, p, (uint64_t)j.chunks))
    return;
  pthread_mutex_lock(&p->mutex);
  while (atomic_load(&p->done) < j.chunks)
    pthread_cond_wait(&p->finished, &p->mutex);
  pthread_mutex_unlock(&p->mutex);
}

int kiln_default_num_threads(void) {
  const char *env = getenv("KILN_NUM_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == 0 && v >= 1 && v <= KILN_MAX_THREADS)
      return (int)v;
  }
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set) < KILN_MAX_THREADS ? CPU_COUNT(&set) : KILN_MAX_THREADS;
#endif
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online < 1 ? 1 : online < KILN_MAX_THREADS ? (int)online : KILN_MAX_THREADS;
}
