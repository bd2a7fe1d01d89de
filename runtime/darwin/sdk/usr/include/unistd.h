/* unistd.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h); sysconf
 * names and X_OK as in Libc's unistd.h. */
#ifndef _UNISTD_H_
#define _UNISTD_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
#define _SC_PAGESIZE 29
#define _SC_NPROCESSORS_CONF 57
#define _SC_NPROCESSORS_ONLN 58
#define F_OK 0
#define X_OK 1
typedef int pid_t;
long sysconf(int name);
int access(const char *path, int mode);
pid_t fork(void);
void _exit(int status) __attribute__((noreturn));
int execv(const char *path, char *const argv[]);
int close(int fd);
int unlink(const char *path);
_KILN_END_DECLS
#endif
