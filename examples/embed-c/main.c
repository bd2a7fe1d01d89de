/* Embedding a kiln-compiled model in a C program.
 *
 *   kiln-compile mlp.onnx --emit=static-lib -o libmlp.a   # also writes mlp.h
 *   cc -I. main.c libmlp.a -lm -lpthread -o embed
 *
 * The input is a fixed pattern, x[i] = 0.5 * sin(i), so that the result can
 * be compared with the executable kiln-compile makes from the same model. */
#include "mlp.h"

#include <math.h>
#include <stdio.h>

int main(void) {
  static float x[MLP_INPUT_0_SIZE], logits[MLP_OUTPUT_0_SIZE];
  for (int i = 0; i < MLP_INPUT_0_SIZE; ++i)
    x[i] = 0.5f * sinf((float)i);

  kiln_model *model = mlp_create();
  if (!model) {
    fprintf(stderr, "cannot create the model\n");
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
