/*===- swap_weights.c - what switching a model's weights costs ------------===
 *
 *   swap_weights A.kw B.kw SWITCHES
 *
 * Linked with a static library of a model compiled with --weights=external
 * (symbol prefix "swap", one f32 input and output), whose weights files A
 * and B hold two sets of weights for its code. Prints one JSON object:
 * medians over SWITCHES switches of
 *   open_ms        kiln_weights_open of a file not mapped yet: map it and
 *                  verify its checksums
 *   swap_path_ms   kiln_model_swap_weights(path) to a file no instance uses
 *                  (the same work, plus the switch)
 *   use_ms         kiln_model_use_weights to weights opened ahead of time
 *   first_run_ms   the first run after a switch to opened weights
 *   run_ms         a run in the steady state
 * and whether A's and B's outputs differ (they must).
 *===----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L
#include "kiln/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const kiln_model_info swap_info;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, compare);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const char *message) {
  fprintf(stderr, "swap_weights: %s: %s\n", what, message);
  exit(1);
}

static size_t elements(const kiln_tensor_info *t) {
  size_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    n *= (size_t)t->shape[d];
  return n;
}

int main(int argc, char **argv) {
  if (argc != 4)
    die("usage", "swap_weights A.kw B.kw SWITCHES");
  const char *paths[2] = {argv[1], argv[2]};
  int switches = atoi(argv[3]);
  if (switches < 2)
    die("usage", "SWITCHES must be at least 2");
  size_t in_n = elements(&swap_info.inputs[0]), out_n = elements(&swap_info.outputs[0]);
  float *in = malloc(in_n * sizeof(float)), *out[2] = {malloc(out_n * 4), malloc(out_n * 4)};
  for (size_t i = 0; i < in_n; ++i)
    in[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  const void *inputs[] = {in};

  kiln_model *m = kiln_model_create_with_weights(&swap_info, paths[0]);
  if (!m || !kiln_model_weights(m))
    die(paths[0], m ? kiln_model_error(m) : "cannot create the model");
  kiln_model_set_num_threads(m, 1);
  char error[512];
  double *open_ms = calloc(switches, sizeof(double)), *swap_ms = calloc(switches, sizeof(double));
  double *use_ms = calloc(switches, sizeof(double)), *first_ms = calloc(switches, sizeof(double));
  double *run_ms = calloc(switches, sizeof(double));

  /* Opening a file nobody maps: map and verify. */
  for (int i = 0; i < switches; ++i) {
    double t0 = now_ms();
    kiln_weights *w = kiln_weights_open(paths[1], error, sizeof error);
    open_ms[i] = now_ms() - t0;
    if (!w)
      die(paths[1], error);
    kiln_weights_close(w); /* unmapped: no one else uses it */
  }
  /* Swapping by path, to the file the instance does not use. */
  for (int i = 0; i < switches; ++i) {
    double t0 = now_ms();
    if (kiln_model_swap_weights(m, paths[(i + 1) % 2]))
      die(paths[(i + 1) % 2], kiln_model_error(m));
    swap_ms[i] = now_ms() - t0;
  }
  if (kiln_model_swap_weights(m, paths[0]))
    die(paths[0], kiln_model_error(m));
  /* Switching between weights opened ahead of time, with a run after each. */
  kiln_weights *opened[2];
  for (int k = 0; k < 2; ++k)
    if (!(opened[k] = kiln_weights_open(paths[k], error, sizeof error)))
      die(paths[k], error);
  for (int i = 0; i < switches; ++i) {
    int k = (i + 1) % 2;
    double t0 = now_ms();
    if (kiln_model_use_weights(m, opened[k]))
      die(paths[k], kiln_model_error(m));
    double t1 = now_ms();
    void *outputs[] = {out[k]};
    if (kiln_model_run(m, inputs, outputs))
      die("run", kiln_model_error(m));
    double t2 = now_ms();
    if (kiln_model_run(m, inputs, outputs))
      die("run", kiln_model_error(m));
    use_ms[i] = t1 - t0;
    first_ms[i] = t2 - t1;
    run_ms[i] = now_ms() - t2;
  }
  int differ = memcmp(out[0], out[1], out_n * sizeof(float)) != 0;
  printf("{\"weights_bytes\": %llu, \"switches\": %d, \"open_ms\": %.4f, \"swap_path_ms\": %.4f, "
         "\"use_ms\": %.6f, \"first_run_ms\": %.4f, \"run_ms\": %.4f, \"outputs_differ\": %s}\n",
         (unsigned long long)swap_info.external_weights->bytes, switches,
         median(open_ms, switches), median(swap_ms, switches), median(use_ms, switches),
         median(first_ms, switches), median(run_ms, switches), differ ? "true" : "false");
  for (int k = 0; k < 2; ++k)
    kiln_weights_close(opened[k]);
  kiln_model_destroy(m);
  return differ ? 0 : 1;
}
