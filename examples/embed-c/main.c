/* Embedding a kiln-compiled model in a C program.
 *
 *   kiln-compile mlp.onnx --emit=static-lib -o libmlp.a   # also writes mlp.h
 *   cc -I. main.c libmlp.a -lm -lpthread -o embed
 *   ./embed [THREADS]                      # 0 or none: KILN_NUM_THREADS or every CPU
 *
 * The input is a fixed pattern, x[i] = 0.5 * sin(i), so that the result can
 * be compared with the executable kiln-compile makes from the same model. */
#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  static float x[MLP_INPUT_0_SIZE], logits[MLP_OUTPUT_0_SIZE];
  for (int i = 0; i < MLP_INPUT_0_SIZE; ++i)
    x[i] = 0.5f * sinf((float)i);

  int threads = argc > 1 ? atoi(argv[1]) : 0;
  kiln_model *model = mlp_create_threads(threads);
  if (!model) {
    fprintf(stderr, "cannot create the model (out of memory, or %d threads)\n", threads);
    return 1;
  }
  if (mlp_run(model, x, logits) != 0) {
    fprintf(stderr, "inference failed: %s\n", kiln_model_error(model));
    return 1;
  }
  printf("    values:");
  for (int i = 0; i < MLP_OUTPUT_0_SIZE && i < 16; ++i)
    printf(" %.6g", logits[i]);
  printf(MLP_OUTPUT_0_SIZE > 16 ? " ...\n" : "\n");
  mlp_destroy(model);
  return 0;
}
