/* Embedding a model with a dynamic batch dimension in a C program.
 *
 *   kiln-compile net.onnx --emit=static-lib -o libnet.a    # also writes net.h
 *   cc -I. dynamic.c libnet.a -lm -lpthread -o embed-dynamic
 *   ./embed-dynamic
 *
 * The model (test/inputs/make_models.py mlp_dynamic) maps x[batch, 3, 4] to
 * y[batch, 8, 2]. One instance runs batch 1 and then batch 3; the first
 * sample of both batches is the same pattern, x[i] = 0.5 * sin(i), so the
 * first rows of the two outputs must agree. */
#include "net.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int run(kiln_model *model, int64_t batch, float *first_row) {
  static float x[3 * 12];
  for (int i = 0; i < batch * 12; ++i)
    x[i] = 0.5f * sinf((float)(i % 12)) + 0.1f * (float)(i / 12);
  const int64_t shape[] = {batch, 3, 4};
  kiln_tensor outputs[NET_NUM_OUTPUTS];
  if (net_run(model, x, shape, outputs) != 0) {
    fprintf(stderr, "inference failed: %s\n", kiln_model_error(model));
    return 1;
  }
  const kiln_tensor *y = &outputs[0];
  printf("batch %lld: y [%lld, %lld, %lld]\n", (long long)batch, (long long)y->shape[0],
         (long long)y->shape[1], (long long)y->shape[2]);
  memcpy(first_row, y->data, 16 * sizeof(float)); /* y's data lives until the next run */
  return 0;
}

int main(void) {
  kiln_model *model = net_create();
  if (!model) {
    fprintf(stderr, "cannot create the model\n");
    return 1;
  }
  float one[16], three[16];
  if (run(model, 1, one) || run(model, 3, three))
    return 1;
  int same = 1;
  for (int i = 0; i < 16; ++i)
    same &= fabsf(one[i] - three[i]) <= 1e-5f + 1e-4f * fabsf(one[i]);
  printf("first sample %s\n", same ? "agrees" : "DIFFERS");
  net_destroy(model);
  return same ? 0 : 1;
}
