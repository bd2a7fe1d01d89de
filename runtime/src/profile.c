/*===- profile.c - kernel timings and Chrome traces of profiled runs -------===*/
#define _POSIX_C_SOURCE 200809L
#include "profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Events kept per thread; later ones are counted as dropped. */
enum { MAX_EVENTS = 1 << 20 };
/* The kernel index of a run's event. */
enum { RUN_EVENT = -1 };

typedef struct event {
  int32_t kernel; /* RUN_EVENT, or an index into the profile info */
  uint32_t job;   /* worker shares: the pool's job, to merge shares */
  int64_t begin, end;
} event;

typedef struct thread_log {
  event *events;
  size_t count, capacity;
  uint64_t dropped;
} thread_log;

typedef struct kernel_total {
  uint64_t calls;
  int64_t ns;
  uint64_t bytes; /* a GPU kernel's buffers over its calls */
} kernel_total;

struct kiln_profiler {
  const kiln_profile_info *info;
  kernel_total *totals;
  thread_log threads[KILN_MAX_THREADS];
  thread_log device; /* a GPU model's kernels, on the device */
  int64_t origin;
  int32_t open_kernel; /* on the running thread, or -1 */
  int64_t open_begin, run_begin;
  uint64_t runs;
  int64_t run_ns;
};

static _Thread_local kiln_profiler *current_profiler;

int64_t kiln_profiler_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

kiln_profiler *kiln_profiler_new(const kiln_profile_info *info) {
  kiln_profiler *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->info = info;
  p->totals = calloc(info->num_kernels + 1, sizeof(kernel_total));
  if (!p->totals) {
    free(p);
    return NULL;
  }
  kiln_profiler_clear(p);
  return p;
}

void kiln_profiler_free(kiln_profiler *p) {
  if (!p)
    return;
  for (int i = 0; i < KILN_MAX_THREADS; ++i)
    free(p->threads[i].events);
  free(p->device.events);
  free(p->totals);
  free(p);
}

void kiln_profiler_clear(kiln_profiler *p) {
  for (int i = 0; i < KILN_MAX_THREADS; ++i) {
    p->threads[i].count = 0;
    p->threads[i].dropped = 0;
  }
  p->device.count = 0;
  p->device.dropped = 0;
  memset(p->totals, 0, p->info->num_kernels * sizeof(kernel_total));
  p->runs = 0;
  p->run_ns = 0;
  p->open_kernel = -1;
  p->origin = kiln_profiler_now();
}

kiln_profiler *kiln_profiler_enter(kiln_profiler *p) {
  kiln_profiler *previous = current_profiler;
  current_profiler = p;
  return previous;
}

kiln_profiler *kiln_profiler_current(void) { return current_profiler; }

int32_t kiln_profiler_kernel(const kiln_profiler *p) { return p->open_kernel; }

/* The thread's log with room for one more event, or NULL (counted). */
static event *next_event(thread_log *log) {
  if (log->count == log->capacity) {
    size_t capacity = log->capacity ? 2 * log->capacity : 1024;
    event *grown = capacity <= MAX_EVENTS ? realloc(log->events, capacity * sizeof(event)) : NULL;
    if (!grown) {
      ++log->dropped;
      return NULL;
    }
    log->events = grown;
    log->capacity = capacity;
  }
  return &log->events[log->count++];
}

static void record(thread_log *log, int32_t kernel, uint32_t job, int64_t begin, int64_t end) {
  event *e = next_event(log);
  if (e)
    *e = (event){kernel, job, begin, end};
}

void kiln_profiler_run_begin(kiln_profiler *p) {
  p->open_kernel = -1;
  p->run_begin = kiln_profiler_now();
}

void kiln_profiler_run_end(kiln_profiler *p) {
  int64_t end = kiln_profiler_now();
  record(&p->threads[0], RUN_EVENT, 0, p->run_begin, end);
  ++p->runs;
  p->run_ns += end - p->run_begin;
  p->open_kernel = -1;
}

void kiln_profile_begin(uint32_t kernel) {
  kiln_profiler *p = current_profiler;
  if (!p || kernel >= p->info->num_kernels)
    return;
  p->open_kernel = (int32_t)kernel;
  p->open_begin = kiln_profiler_now();
}

void kiln_profile_end(uint32_t kernel) {
  kiln_profiler *p = current_profiler;
  if (!p || p->open_kernel != (int32_t)kernel)
    return;
  int64_t end = kiln_profiler_now();
  record(&p->threads[0], (int32_t)kernel, 0, p->open_begin, end);
  p->totals[kernel].calls++;
  p->totals[kernel].ns += end - p->open_begin;
  p->open_kernel = -1;
}

void kiln_profiler_share(kiln_profiler *p, int thread, uint32_t job, int32_t kernel,
                         int64_t begin, int64_t end) {
  if (thread < 1 || thread >= KILN_MAX_THREADS)
    return;
  thread_log *log = &p->threads[thread];
  if (log->count && log->events[log->count - 1].job == job &&
      log->events[log->count - 1].kernel == kernel) {
    log->events[log->count - 1].end = end;
    return;
  }
  record(log, kernel, job, begin, end);
}

void kiln_profiler_device_kernel(kiln_profiler *p, uint32_t kernel, int64_t begin, int64_t end,
                                 uint64_t bytes) {
  if (kernel >= p->info->num_kernels)
    return;
  record(&p->device, (int32_t)kernel, 0, begin, end);
  p->totals[kernel].calls++;
  p->totals[kernel].ns += end - begin;
  p->totals[kernel].bytes += bytes;
}

void kiln_profiler_summary(const kiln_profiler *p, kiln_profile_summary *s) {
  s->runs = p->runs;
  s->total_ms = (double)p->run_ns / 1e6;
  s->num_kernels = p->info->num_kernels;
  s->dropped = 0;
  for (int i = 0; i < KILN_MAX_THREADS; ++i)
    s->dropped += p->threads[i].dropped;
  s->dropped += p->device.dropped;
}

void kiln_profiler_kernel_entry(const kiln_profiler *p, uint32_t index, kiln_profile_entry *e) {
  const kiln_profile_kernel *k = &p->info->kernels[index];
  e->name = k->name;
  e->calls = p->totals[index].calls;
  e->total_ms = (double)p->totals[index].ns / 1e6;
  e->flops = k->flops;
  /* The compiler's count, else (a GPU kernel) the runs' buffers per run. */
  e->bytes = k->bytes ? k->bytes : p->runs ? p->totals[index].bytes / p->runs : 0;
}

static void write_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20)
      fprintf(out, "\\u%04x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

int kiln_profiler_write_trace(const kiln_profiler *p, const char *name, FILE *out) {
  fprintf(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(out, "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": ");
  write_json_string(out, name);
  fprintf(out, "}}");
  for (int t = 0; t < KILN_MAX_THREADS; ++t) {
    const thread_log *log = &p->threads[t];
    if (!log->count && t)
      continue;
    fprintf(out, ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
                 "\"args\": {\"name\": \"%s %d\"}}",
            t, t ? "worker" : "caller", t);
    for (size_t i = 0; i < log->count; ++i) {
      const event *e = &log->events[i];
      fprintf(out, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"cat\": \"%s\", \"name\": ", t,
              t ? "share" : e->kernel == RUN_EVENT ? "run" : "kernel");
      write_json_string(out, e->kernel >= 0 ? p->info->kernels[e->kernel].name
                             : t ? "(between kernels)" : "run");
      fprintf(out, ", \"ts\": %.3f, \"dur\": %.3f}", (double)(e->begin - p->origin) / 1e3,
              (double)(e->end - e->begin) / 1e3);
    }
  }
  if (p->device.count)
    fprintf(out, ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
                 "\"args\": {\"name\": \"GPU\"}}",
            KILN_MAX_THREADS);
  for (size_t i = 0; i < p->device.count; ++i) {
    const event *e = &p->device.events[i];
    fprintf(out, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"cat\": \"gpu kernel\", \"name\": ",
            KILN_MAX_THREADS);
    write_json_string(out, p->info->kernels[e->kernel].name);
    fprintf(out, ", \"ts\": %.3f, \"dur\": %.3f}", (double)(e->begin - p->origin) / 1e3,
            (double)(e->end - e->begin) / 1e3);
  }
  fprintf(out, "\n]}\n");
  return ferror(out) ? 1 : 0;
}
