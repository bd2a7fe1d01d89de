/* Measures this machine's float32 peak two ways, on T threads:
 *   sgemm  OpenBLAS cblas_sgemm 1024^3 (dlopen'ed; Debian libopenblas0-pthread)
 *   fma    an AVX-512 (else AVX2) FMA loop with independent accumulators
 * and, given a byte count, how long reading that many bytes takes: the floor
 * of a model whose weights must be read once per inference.
 * usage: peak THREADS          prints: sgemm_gflops=<x> fma_gflops=<y>
 *        peak THREADS BYTES    prints: read_ms=<median of 400 passes>
 * Build: clang -O2 -march=native peak.c -o peak -ldl -lpthread */
#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);

static double sgemm_gflops(int threads) {
  void *lib = dlopen("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", RTLD_NOW);
  if (!lib)
    return 0;
  sgemm_fn sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
  void (*set_threads)(int) = (void (*)(int))dlsym(lib, "openblas_set_num_threads");
  if (!sgemm || !set_threads)
    return 0;
  set_threads(threads);
  const int n = 1024;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = malloc(sizeof(float) * n * n);
  for (int i = 0; i < n * n; ++i)
    a[i] = b[i] = (float)(i % 7) * 0.1f;
  double best = 1e9;
  for (int rep = 0; rep < 20; ++rep) {
    double t0 = now();
    sgemm(101 /*row major*/, 111, 111, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = now() - t0;
    if (rep >= 2 && t < best)
      best = t;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * n / best / 1e9;
}

#ifdef __AVX512F__
typedef __m512 vec;
#define LANES 16
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SET1 _mm512_set1_ps
#define STORE _mm512_storeu_ps
#define ADD _mm512_add_ps
#define LOAD _mm512_load_ps
#else
typedef __m256 vec;
#define LANES 8
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SET1 _mm256_set1_ps
#define STORE _mm256_storeu_ps
#define ADD _mm256_add_ps
#define LOAD _mm256_load_ps
#endif

enum { ITERS = 20000000 };

static void *fma_loop(void *out) {
  vec acc[10], x = SET1(0.999f), y = SET1(1e-7f);
  for (int i = 0; i < 10; ++i)
    acc[i] = SET1((float)i);
  for (long it = 0; it < ITERS; ++it)
    for (int i = 0; i < 10; ++i)
      acc[i] = FMA(acc[i], x, y);
  float sink[LANES];
  for (int i = 1; i < 10; ++i)
    acc[0] = FMA(acc[0], x, acc[i]);
  STORE(sink, acc[0]);
  *(float *)out = sink[0];
  return NULL;
}

static double fma_gflops(int threads) {
  pthread_t tid[64];
  float sinks[64];
  double t0 = now();
  for (int t = 0; t < threads; ++t)
    pthread_create(&tid[t], NULL, fma_loop, &sinks[t]);
  for (int t = 0; t < threads; ++t)
    pthread_join(tid[t], NULL);
  double seconds = now() - t0;
  return 2.0 * LANES * 10.0 * ITERS * threads / seconds / 1e9;
}

/* Read bandwidth: every pass, each thread sums its contiguous share of one
 * buffer with 8 independent vector accumulators, as a weight stream would be
 * read; passes repeat back to back (what stays cached between inferences
 * stays cached here too) and are separated by a spinning barrier. */
enum { READ_PASSES = 400, READ_UNROLL = 8 };

struct reader {
  const float *data;
  size_t count; /* floats, a multiple of LANES * READ_UNROLL */
  int index, threads;
  atomic_int *arrived;
  double *pass_ms;
};

static float __attribute__((noinline)) read_share(const float *p, size_t count) {
  vec acc[READ_UNROLL];
  for (int i = 0; i < READ_UNROLL; ++i)
    acc[i] = SET1(0.f);
  for (size_t i = 0; i < count; i += LANES * READ_UNROLL)
    for (int j = 0; j < READ_UNROLL; ++j)
      acc[j] = ADD(acc[j], LOAD(p + i + LANES * j));
  for (int j = 1; j < READ_UNROLL; ++j)
    acc[0] = ADD(acc[0], acc[j]);
  float sink[LANES];
  STORE(sink, acc[0]);
  return sink[0];
}

static void *read_passes(void *arg) {
  struct reader *r = arg;
  volatile float sink = 0;
  for (int pass = 0; pass < READ_PASSES; ++pass) {
    /* All threads arrive, then thread 0 times the pass they make together. */
    atomic_fetch_add(r->arrived, 1);
    while (atomic_load(r->arrived) < (pass + 1) * r->threads)
      ;
    double t0 = now();
    sink += read_share(r->data + r->index * r->count, r->count);
    atomic_fetch_add(r->arrived + 1, 1);
    while (atomic_load(r->arrived + 1) < (pass + 1) * r->threads)
      ;
    if (r->index == 0)
      r->pass_ms[pass] = (now() - t0) * 1e3;
  }
  return NULL;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double read_ms(size_t bytes, int threads) {
  size_t block = LANES * READ_UNROLL,
         share = (bytes / sizeof(float) / threads + block - 1) / block * block;
  float *data = aligned_alloc(64, share * threads * sizeof(float));
  for (size_t i = 0; i < share * threads; ++i)
    data[i] = (float)(i % 7);
  atomic_int arrived[2] = {0, 0};
  double pass_ms[READ_PASSES];
  struct reader readers[64];
  pthread_t tid[64];
  for (int t = 0; t < threads; ++t) {
    readers[t] = (struct reader){data, share, t, threads, arrived, pass_ms};
    pthread_create(&tid[t], NULL, read_passes, &readers[t]);
  }
  for (int t = 0; t < threads; ++t)
    pthread_join(tid[t], NULL);
  free(data);
  qsort(pass_ms, READ_PASSES, sizeof(double), compare_doubles);
  return pass_ms[READ_PASSES / 2];
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 64)
    threads = 1;
  if (argc > 2) {
    printf("read_ms=%.4f\n", read_ms(strtoull(argv[2], NULL, 10), threads));
    return 0;
  }
  printf("sgemm_gflops=%.1f fma_gflops=%.1f\n", sgemm_gflops(threads), fma_gflops(threads));
  return 0;
}
