/*===- npy.h - read and write NumPy .npy files ----------------------------===*/
#ifndef KILN_RUNTIME_NPY_H
#define KILN_RUNTIME_NPY_H

#include <stddef.h>
#include <stdint.h>

#define KILN_NPY_MAX_RANK 16

typedef struct kiln_npy {
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  int64_t shape[KILN_NPY_MAX_RANK];
  void *data;
  size_t bytes;
} kiln_npy;

/* Returns 0 on success; otherwise writes a message. Only little-endian,
 * C-order arrays of the kiln dtypes are accepted. */
int kiln_npy_read(const char *path, kiln_npy *out, char *message, size_t message_size);
int kiln_npy_write(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                   const void *data, char *message, size_t message_size);
void kiln_npy_free(kiln_npy *npy);

#endif
