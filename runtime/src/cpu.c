/*===- cpu.c - what the CPU can run: the variants of portable models ------===*/
#define _GNU_SOURCE /* getauxval */
#include "kiln/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* The x86-64 micro-architecture levels of the psABI: v2, v3, v4. */
static uint32_t detect(void) {
  unsigned a, b, c, d, ecx1, c81 = 0, b7 = 0;
  if (!__get_cpuid(1, &a, &b, &ecx1, &d))
    return 0;
  if (__get_cpuid(0x80000001, &a, &b, &c, &d))
    c81 = c;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
    b7 = b;
#define BIT(word, n) (((word) >> (n)) & 1u)
  int v2 = BIT(ecx1, 0) && BIT(ecx1, 9) && BIT(ecx1, 13) && BIT(ecx1, 19) && BIT(ecx1, 20) &&
           BIT(ecx1, 23) && BIT(c81, 0);
  int osxsave = BIT(ecx1, 27);
  uint64_t xcr = osxsave ? xcr0() : 0;
  int v3 = v2 && osxsave && (xcr & 0x6) == 0x6 && BIT(ecx1, 12) && BIT(ecx1, 22) &&
           BIT(ecx1, 28) && BIT(ecx1, 29) && BIT(c81, 5) && BIT(b7, 3) && BIT(b7, 5) &&
           BIT(b7, 8);
  int v4 = v3 && (xcr & 0xe6) == 0xe6 && BIT(b7, 16) && BIT(b7, 17) && BIT(b7, 28) &&
           BIT(b7, 30) && BIT(b7, 31);
#undef BIT
  return (v2 ? KILN_CPU_X86_64_V2 : 0) | (v3 ? KILN_CPU_X86_64_V3 : 0) |
         (v4 ? KILN_CPU_X86_64_V4 : 0);
}
#elif defined(__aarch64__) && defined(__APPLE__)
int sysctlbyname(const char *name, void *value, size_t *size, void *newp, size_t newlen);

static int has(const char *feature) {
  int value = 0;
  size_t size = sizeof value;
  return sysctlbyname(feature, &value, &size, NULL, 0) == 0 && value;
}

static uint32_t detect(void) {
  return (has("hw.optional.arm.FEAT_DotProd") ? KILN_CPU_AARCH64_DOTPROD : 0) |
         (has("hw.optional.arm.FEAT_I8MM") ? KILN_CPU_AARCH64_I8MM : 0);
}
#elif defined(__aarch64__)
#include <sys/auxv.h>

static uint32_t detect(void) {
  unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  return ((hwcap >> 20) & 1 ? KILN_CPU_AARCH64_DOTPROD : 0) | /* HWCAP_ASIMDDP */
         ((hwcap2 >> 13) & 1 ? KILN_CPU_AARCH64_I8MM : 0);   /* HWCAP2_I8MM */
}
#else
static uint32_t detect(void) { return 0; }
#endif

uint32_t kiln_cpu_features(void) { return detect(); }

/* "AVX2 ..." for the bits of `missing`. */
static void describe_missing(uint32_t missing, char *out, size_t size) {
  static const struct {
    uint32_t bit;
    const char *what;
  } names[] = {{KILN_CPU_X86_64_V2, "x86-64-v2 (SSE4.2, POPCNT)"},
               {KILN_CPU_X86_64_V3, "x86-64-v3 (AVX2, FMA)"},
               {KILN_CPU_X86_64_V4, "x86-64-v4 (AVX-512)"},
               {KILN_CPU_AARCH64_DOTPROD, "the dot-product instructions"},
               {KILN_CPU_AARCH64_I8MM, "the int8 matrix multiply instructions (i8mm)"}};
  out[0] = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (missing & names[i].bit) {
      size_t used = strlen(out);
      snprintf(out + used, size - used, "%s%s", used ? ", " : "", names[i].what);
    }
}

const kiln_cpu_variant *kiln_pick_cpu_variant(const kiln_model_info *info, char *error,
                                              size_t error_size) {
  error[0] = 0;
  if (!info->num_variants)
    return NULL;
  uint32_t have = kiln_cpu_features();
  const char *wanted = getenv("KILN_CPU_VARIANT");
  if (wanted && *wanted) {
    char names[512] = "";
    for (uint32_t i = 0; i < info->num_variants; ++i) {
      const kiln_cpu_variant *v = &info->variants[i];
      if (strcmp(v->cpu, wanted) == 0) {
        char missing[256];
        describe_missing(v->requires & ~have, missing, sizeof missing);
        if (!missing[0])
          return v;
        snprintf(error, error_size, "KILN_CPU_VARIANT=%s: this CPU lacks %s", wanted, missing);
        return NULL;
      }
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", v->cpu);
    }
    snprintf(error, error_size, "KILN_CPU_VARIANT=%s: model '%s' was compiled for %s", wanted,
             info->name, names);
    return NULL;
  }
  for (uint32_t i = info->num_variants; i-- > 0;)
    if ((info->variants[i].requires & ~have) == 0)
      return &info->variants[i];
  char missing[256];
  describe_missing(info->variants[0].requires & ~have, missing, sizeof missing);
  snprintf(error, error_size,
           "model '%s' has no variant for this CPU: the least demanding (%s) needs %s",
           info->name, info->variants[0].cpu, missing);
  return NULL;
}
