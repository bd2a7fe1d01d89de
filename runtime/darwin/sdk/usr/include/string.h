/* string.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h). */
#ifndef _STRING_H_
#define _STRING_H_
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
size_t strcspn(const char *s, const char *reject);
char *strerror(int errnum);
_KILN_END_DECLS
#endif
