/*===- profile.h - what a profiled run records (internal) -----------------===*/
#ifndef KILN_PROFILE_H
#define KILN_PROFILE_H

#include "kiln/runtime.h"

#include <stdio.h>

/* The recording of one instance: per kernel its calls and time, and a
 * trace of timed events per thread (0: the running thread; 1..: pool
 * workers). Thread 0's log, the totals and the run counters are written by
 * the running thread only; each worker writes its own log only. */
typedef struct kiln_profiler kiln_profiler;

kiln_profiler *kiln_profiler_new(const kiln_profile_info *info);
void kiln_profiler_free(kiln_profiler *p);
/* Forgets what was recorded; the clock's origin becomes now. */
void kiln_profiler_clear(kiln_profiler *p);

/* Makes `p` the profiler of the run on this thread (NULL: none), for
 * kiln_profile_begin/end; returns the previous one. */
kiln_profiler *kiln_profiler_enter(kiln_profiler *p);
kiln_profiler *kiln_profiler_current(void);

/* Around a run, on the running thread. */
void kiln_profiler_run_begin(kiln_profiler *p);
void kiln_profiler_run_end(kiln_profiler *p);

/* The kernel running on the posting thread now (-1: none), for the pool to
 * attribute worker shares. */
int32_t kiln_profiler_kernel(const kiln_profiler *p);
int64_t kiln_profiler_now(void);
/* Worker `thread` (>= 1) ran a share of job `job` of `kernel` from `begin`
 * to `end` (kiln_profiler_now). Consecutive shares of one job merge. */
void kiln_profiler_share(kiln_profiler *p, int thread, uint32_t job, int32_t kernel,
                         int64_t begin, int64_t end);
/* A GPU model's kernel `kernel` ran on the device from `begin` to `end`
 * (kiln_profiler_now's clock, as near as the device can place it) over
 * buffers of `bytes`, as the running thread learns at a wait: its time and
 * bytes count for the kernel, and the trace shows it on the device's own
 * track. */
void kiln_profiler_device_kernel(kiln_profiler *p, uint32_t kernel, int64_t begin, int64_t end,
                                 uint64_t bytes);

void kiln_profiler_summary(const kiln_profiler *p, kiln_profile_summary *summary);
void kiln_profiler_kernel_entry(const kiln_profiler *p, uint32_t index,
                                kiln_profile_entry *entry);
/* The Chrome trace JSON of what was recorded, for model `name`. */
int kiln_profiler_write_trace(const kiln_profiler *p, const char *name, FILE *out);

#endif /* KILN_PROFILE_H */
