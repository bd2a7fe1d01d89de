/*===- memref.c - support routines called by MLIR-generated code ----------===*/
#include <stdint.h>
#include <string.h>

/* Layout of MLIR's unranked memref and its ranked descriptor. */
typedef struct {
  int64_t rank;
  void *descriptor;
} unranked_memref;

typedef struct {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes_and_strides[]; /* sizes[rank], then strides[rank] */
} memref_descriptor;

/* Copies between two memrefs of the same shape with arbitrary strides; the
 * generated code calls this for copies it cannot prove contiguous. */
void memrefCopy(int64_t elem_size, unranked_memref *src_arg, unranked_memref *dst_arg) {
  int64_t rank = src_arg->rank;
  const memref_descriptor *src = src_arg->descriptor, *dst = dst_arg->descriptor;
  const int64_t *sizes = src->sizes_and_strides;
  const int64_t *src_strides = src->sizes_and_strides + rank;
  const int64_t *dst_strides = dst->sizes_and_strides + rank;
  char *s = src->aligned + src->offset * elem_size;
  char *d = dst->aligned + dst->offset * elem_size;
  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i)
    total *= sizes[i];
  if (total == 0)
    return;
  if (rank == 0) {
    memcpy(d, s, (size_t)elem_size);
    return;
  }
  int64_t index[32] = {0};
  int64_t so = 0, dofs = 0;
  for (int64_t n = 0; n < total; ++n) {
    memcpy(d + dofs * elem_size, s + so * elem_size, (size_t)elem_size);
    for (int64_t axis = rank - 1; axis >= 0; --axis) { /* odometer increment */
      ++index[axis];
      so += src_strides[axis];
      dofs += dst_strides[axis];
      if (index[axis] < sizes[axis])
        break;
      so -= src_strides[axis] * sizes[axis];
      dofs -= dst_strides[axis] * sizes[axis];
      index[axis] = 0;
    }
  }
}
