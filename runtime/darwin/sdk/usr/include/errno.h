/* errno.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h): errno is
 * Libc's per-thread __error(); the values are xnu's sys/errno.h. */
#ifndef _SYS_ERRNO_H_
#define _SYS_ERRNO_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
extern int *__error(void);
#define errno (*__error())
#define ENOENT 2
#define EINTR 4
#define ENOMEM 12
#define EEXIST 17
#define EINVAL 22
#define ENOTSUP 45
_KILN_END_DECLS
#endif
