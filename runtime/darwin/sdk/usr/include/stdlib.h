/* stdlib.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h). */
#ifndef _STDLIB_H_
#define _STDLIB_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *ptr, size_t size);
void *aligned_alloc(size_t alignment, size_t size); /* macOS 10.15 and later */
void free(void *ptr);
void abort(void) __attribute__((noreturn));
void exit(int status) __attribute__((noreturn));
char *getenv(const char *name);
int mkstemp(char *path_template);
int atoi(const char *s);
long strtol(const char *restrict s, char **restrict end, int base);
long long strtoll(const char *restrict s, char **restrict end, int base);
double strtod(const char *restrict s, char **restrict end);
void qsort(void *base, size_t n, size_t size, int (*compare)(const void *, const void *));
_KILN_END_DECLS
#endif
