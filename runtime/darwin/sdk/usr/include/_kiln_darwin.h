/*===- _kiln_darwin.h - common to kiln's arm64 macOS stub headers --------===
 *
 * These headers stand in for the macOS SDK so that kiln's runtime can be
 * cross-compiled for arm64-apple-macosx on Linux, where Apple's SDK cannot
 * be installed. They declare only what the runtime calls, with the types,
 * constants and structure sizes of Apple's open-source Libc, libpthread and
 * xnu headers for arm64 (LP64). On a Mac, build with Xcode's SDK instead.
 * clang's own headers supply stddef.h, stdint.h, stdarg.h and stdatomic.h.
 *===----------------------------------------------------------------------===*/
#ifndef _KILN_DARWIN_H
#define _KILN_DARWIN_H
#if !defined(__APPLE__) || !defined(__aarch64__)
#error "kiln's stub SDK is for arm64-apple-macosx only"
#endif
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#define _KILN_BEGIN_DECLS extern "C" {
#define _KILN_END_DECLS }
#else
#define _KILN_BEGIN_DECLS
#define _KILN_END_DECLS
#endif
#endif
