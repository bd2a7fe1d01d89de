/* time.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h); clock ids
 * as in Libc's time.h (clock_gettime: macOS 10.12 and later). */
#ifndef _TIME_H_
#define _TIME_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
typedef long time_t;
struct timespec {
  time_t tv_sec;
  long tv_nsec;
};
typedef enum {
  _CLOCK_REALTIME = 0,
  _CLOCK_MONOTONIC_RAW = 4,
  _CLOCK_MONOTONIC = 6,
  _CLOCK_UPTIME_RAW = 8,
  _CLOCK_PROCESS_CPUTIME_ID = 12,
  _CLOCK_THREAD_CPUTIME_ID = 16
} clockid_t;
#define CLOCK_REALTIME _CLOCK_REALTIME
#define CLOCK_MONOTONIC _CLOCK_MONOTONIC
#define CLOCK_MONOTONIC_RAW _CLOCK_MONOTONIC_RAW
#define CLOCK_PROCESS_CPUTIME_ID _CLOCK_PROCESS_CPUTIME_ID
int clock_gettime(clockid_t clock, struct timespec *tp);
int nanosleep(const struct timespec *request, struct timespec *remain);
_KILN_END_DECLS
#endif
