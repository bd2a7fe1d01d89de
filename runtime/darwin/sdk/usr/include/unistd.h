/* unistd.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h); sysconf
 * names as in Libc's unistd.h. */
#ifndef _UNISTD_H_
#define _UNISTD_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
#define _SC_PAGESIZE 29
#define _SC_NPROCESSORS_CONF 57
#define _SC_NPROCESSORS_ONLN 58
long sysconf(int name);
_KILN_END_DECLS
#endif
