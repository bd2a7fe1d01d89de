/* sys/wait.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h); the
 * status macros as in xnu's sys/wait.h. */
#ifndef _SYS_WAIT_H_
#define _SYS_WAIT_H_
#include "../_kiln_darwin.h"
#include <unistd.h>
_KILN_BEGIN_DECLS
#define WIFEXITED(status) (((status) & 0177) == 0)
#define WEXITSTATUS(status) (((status) >> 8) & 0xff)
pid_t waitpid(pid_t pid, int *status, int options);
_KILN_END_DECLS
#endif
