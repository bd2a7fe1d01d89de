/* Runs ONNX's test_scatternd model, compiled as a static library
 * (scatter.h), and checks that kiln_model_run leaves the caller's inputs as
 * they were: its ScatterND writes a copy of `data`, not `data` itself. */
#include "scatter.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  float data[SCATTER_INPUT_0_SIZE], before[SCATTER_INPUT_0_SIZE];
  float updates[SCATTER_INPUT_2_SIZE], y[SCATTER_OUTPUT_0_SIZE];
  int64_t indices[SCATTER_INPUT_1_SIZE] = {0, 2};
  for (int i = 0; i < SCATTER_INPUT_0_SIZE; ++i)
    data[i] = (float)i;
  for (int i = 0; i < SCATTER_INPUT_2_SIZE; ++i)
    updates[i] = (float)(-1 - i);
  memcpy(before, data, sizeof data);
  kiln_model *m = scatter_create();
  if (!m || scatter_run(m, data, indices, updates, y) != 0) {
    printf("run failed: %s\n", m ? kiln_model_error(m) : "no instance");
    return 1;
  }
  printf("%s\n", memcmp(before, data, sizeof data) ? "data changed" : "data unchanged");
  printf("y[0]=%g y[16]=%g y[32]=%g\n", y[0], y[16], y[32]);
  kiln_model_destroy(m);
  return 0;
}
