/* stdio.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h). FILE is
 * opaque; stdout and stderr are Libc's __stdoutp and __stderrp. */
#ifndef _STDIO_H_
#define _STDIO_H_
#include "_kiln_darwin.h"
#include <stdarg.h>
_KILN_BEGIN_DECLS
typedef struct __sFILE FILE;
extern FILE *__stdinp, *__stdoutp, *__stderrp;
#define stdin __stdinp
#define stdout __stdoutp
#define stderr __stderrp
#define EOF (-1)
#define SEEK_SET 0
#define SEEK_END 2
typedef int64_t off_t;
FILE *fopen(const char *restrict path, const char *restrict mode);
int fclose(FILE *stream);
FILE *freopen(const char *restrict path, const char *restrict mode, FILE *restrict stream);
int fflush(FILE *stream);
int fileno(FILE *stream);
int fseeko(FILE *stream, off_t offset, int whence);
off_t ftello(FILE *stream);
int rename(const char *from, const char *to);
int ferror(FILE *stream);
size_t fread(void *restrict ptr, size_t size, size_t n, FILE *restrict stream);
size_t fwrite(const void *restrict ptr, size_t size, size_t n, FILE *restrict stream);
int fputc(int c, FILE *stream);
int fgetc(FILE *stream);
char *fgets(char *restrict s, int n, FILE *restrict stream);
int fputs(const char *restrict s, FILE *restrict stream);
int puts(const char *s);
int printf(const char *restrict fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(FILE *restrict stream, const char *restrict fmt, ...)
    __attribute__((format(printf, 2, 3)));
int snprintf(char *restrict s, size_t n, const char *restrict fmt, ...)
    __attribute__((format(printf, 3, 4)));
int vsnprintf(char *restrict s, size_t n, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int vfprintf(FILE *restrict stream, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
_KILN_END_DECLS
#endif
