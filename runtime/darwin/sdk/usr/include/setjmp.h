/* setjmp.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h). Libc's
 * arm64 jmp_buf holds x19-x29, sp, fp, lr, d8-d15 and two signal words:
 * _JBLEN = (14 + 8 + 2) * 2 ints. */
#ifndef _BSD_SETJMP_H
#define _BSD_SETJMP_H
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
#define _JBLEN ((14 + 8 + 2) * 2)
typedef int jmp_buf[_JBLEN];
int setjmp(jmp_buf env) __attribute__((returns_twice));
void longjmp(jmp_buf env, int value) __attribute__((noreturn));
_KILN_END_DECLS
#endif
