/*===- threads.h - the runtime's thread pool (internal) -------------------===*/
#ifndef KILN_THREADS_H
#define KILN_THREADS_H

#include "kiln/runtime.h"

typedef struct kiln_pool kiln_pool;

/* Starts size - 1 worker threads; the calling thread is the pool's first.
 * Returns NULL when out of memory. */
kiln_pool *kiln_pool_create(int size);
void kiln_pool_destroy(kiln_pool *pool);
int kiln_pool_size(const kiln_pool *pool);
/* Makes `pool` the one kiln_parallel_for uses on this thread (NULL: run
 * serially); returns the previous one. */
kiln_pool *kiln_pool_enter(kiln_pool *pool);
/* The per-thread state of a run that tasks need (runtime.c: the run's
 * arena): read on the thread that posts a job, installed on the workers
 * while they run their shares. */
void *kiln_task_environment(void);
void kiln_set_task_environment(void *environment);

/* KILN_NUM_THREADS when it is a valid count, else the CPUs this process may
 * run on. */
int kiln_default_num_threads(void);

#endif /* KILN_THREADS_H */
