/* sys/mman.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h): mapping
 * files read-only, with the constants of xnu's sys/mman.h. */
#ifndef _SYS_MMAN_H_
#define _SYS_MMAN_H_
#include "../_kiln_darwin.h"
_KILN_BEGIN_DECLS
typedef int64_t off_t;
#define PROT_READ 0x01
#define MAP_SHARED 0x0001
#define MAP_FAILED ((void *)-1)
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int munmap(void *addr, size_t len);
_KILN_END_DECLS
#endif
