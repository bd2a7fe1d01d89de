/* Outputs whose size is known only after the run: a detector's
 * post-processing (non-maximum suppression per class, then the kept boxes
 * gathered) embedded in a C program.
 *
 *   kiln-compile detections.onnx --emit=static-lib -o libdetections.a
 *   cc -I. detections.c libdetections.a -lm -lpthread -o embed-detections
 *   ./embed-detections
 *
 * The model (test/inputs/data_dependent.py, "detections") takes boxes
 * [1, 40, 4] (center x, center y, width, height), scores [1, 3, 40] and a
 * minimum score, and returns the selected [class, box] rows and the kept
 * boxes. One instance runs with two minimum scores; each run says how many
 * boxes it kept, in each output's shape. */
#include "detections.h"

#include <stdio.h>

enum { BOXES = 40, CLASSES = 3 };

static int run(kiln_model *model, const float *boxes, const float *scores, float min_score) {
  const int64_t boxes_shape[] = {1, BOXES, 4}, scores_shape[] = {1, CLASSES, BOXES};
  const int64_t min_score_shape[] = {1};
  kiln_tensor outputs[DETECTIONS_NUM_OUTPUTS];
  if (detections_run(model, boxes, boxes_shape, scores, scores_shape, &min_score,
                     min_score_shape, outputs) != 0) {
    fprintf(stderr, "inference failed: %s\n", kiln_model_error(model));
    return 1;
  }
  /* outputs[0]: selected [kept, 3] rows (batch, class, box), int64. */
  const kiln_tensor *selected = &outputs[0];
  const int64_t *rows = selected->data;
  printf("min_score %.2f: %lld kept:", min_score, (long long)selected->shape[0]);
  for (int64_t i = 0; i < selected->shape[0]; ++i)
    printf(" %lld/%lld", (long long)rows[3 * i + 1], (long long)rows[3 * i + 2]);
  printf("\n");
  return 0;
}

int main(void) {
  /* Boxes on a grid, overlapping their neighbours; scores in steps of 1/40. */
  float boxes[BOXES * 4], scores[CLASSES * BOXES];
  for (int i = 0; i < BOXES; ++i) {
    boxes[4 * i + 0] = (float)(i % 8) * 1.5f + 0.25f * (float)(i / 8);
    boxes[4 * i + 1] = (float)(i / 8) * 1.5f;
    boxes[4 * i + 2] = 2.0f;
    boxes[4 * i + 3] = 2.0f;
    for (int c = 0; c < CLASSES; ++c)
      scores[c * BOXES + i] = (float)((i * 7 + c * 13) % 40) / 40.0f;
  }
  kiln_model *model = detections_create();
  if (!model) {
    fprintf(stderr, "cannot create the model\n");
    return 1;
  }
  int failed = run(model, boxes, scores, 0.5f) || run(model, boxes, scores, 0.9f);
  detections_destroy(model);
  return failed;
}
