/* sys/stat.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h): only
 * mkdir (mode_t is 16 bits on Darwin). */
#ifndef _SYS_STAT_H_
#define _SYS_STAT_H_
#include "../_kiln_darwin.h"
_KILN_BEGIN_DECLS
typedef uint16_t mode_t;
int mkdir(const char *path, mode_t mode);
_KILN_END_DECLS
#endif
