/*===- npy.h - read and write NumPy .npy files ----------------------------===*/
#ifndef KILN_RUNTIME_NPY_H
#define KILN_RUNTIME_NPY_H

#include "kiln/runtime.h"

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

/* The model's tensors as files: DIR/<name>.npy, where a character of the
 * name other than a letter, a digit, '_', '.' or '-' becomes '_'. */
void kiln_npy_path(char *path, size_t size, const char *dir, const char *tensor_name);
/* Reads input `t` from `path`; a bfloat16 input comes as its uint16 bit
 * patterns (.npy has no bfloat16). */
int kiln_npy_read_input(const char *path, const kiln_tensor_info *t, kiln_npy *out,
                        char *message, size_t message_size);
/* Writes the model's outputs `out` to DIR/<name>.npy, creating DIR. */
int kiln_npy_write_outputs(const char *dir, const kiln_model_info *info, const kiln_tensor *out,
                           char *message, size_t message_size);

#endif
