/*===- weights.h - the weights file (.kw) of external-weight models --------===
 *
 * kiln-compile --weights=external writes a model's constants to a file that
 * the runtime maps read-only (kiln_model_swap_weights, kiln_model_create).
 * Little-endian, laid out so that the data can be used where it is mapped:
 *
 *   kiln_weights_header          48 bytes
 *   kiln_weights_entry[n]        one per tensor, in data order
 *   zero padding                 to data_offset, a multiple of 4096
 *   data                         each tensor at its entry's offset (a
 *                                multiple of 64), zero padding between
 *
 * The fingerprint names the code that reads the data: a hash of the compiled
 * model with its external constants' values left out. Two files with one
 * fingerprint fit the same binary. The compiler writes files with
 * kiln_weights_write (it links the runtime), so reader and writer share this
 * definition.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_WEIGHTS_H
#define KILN_RUNTIME_WEIGHTS_H

#include "kiln/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_WEIGHTS_MAGIC "KILNWTS\0"
#define KILN_WEIGHTS_VERSION 1u
#define KILN_WEIGHTS_PAGE 4096u    /* data_offset is a multiple of it */
#define KILN_WEIGHTS_ALIGN 64u     /* each tensor's offset is a multiple of it */
#define KILN_WEIGHTS_MAX_RANK 8

typedef struct kiln_weights_header {
  char magic[8];
  uint32_t version;
  uint32_t num_tensors;
  uint64_t fingerprint;
  uint64_t data_offset;    /* from the start of the file */
  uint64_t data_bytes;
  uint64_t data_checksum;  /* kiln_weights_checksum of the data */
  uint64_t table_checksum; /* of the header up to this field, and the table */
} kiln_weights_header;

typedef struct kiln_weights_entry {
  char name[64];   /* NUL-terminated; the ONNX node that produced it where known */
  uint64_t offset; /* in the data */
  uint64_t bytes;
  int32_t dtype;   /* kiln_dtype */
  int32_t rank;
  int64_t shape[KILN_WEIGHTS_MAX_RANK]; /* in the compiled layout (packed) */
} kiln_weights_entry;

/* A 64-bit checksum of `bytes` bytes: Fletcher-style running sums of 64-bit
 * words in eight lanes (it reads at memory speed), mixed at the end. */
uint64_t kiln_weights_checksum(const void *data, uint64_t bytes);

/* Writes a weights file: tensor i's `entries[i].bytes` bytes from data[i] at
 * its entry's offset. Writes `path`.tmp and renames it over `path`, so that
 * processes that have the old file mapped keep its contents. Returns 0, or
 * nonzero with a message in `error`. */
int kiln_weights_write(const char *path, uint64_t fingerprint, uint32_t num_tensors,
                       const kiln_weights_entry *entries, const void *const *data,
                       uint64_t data_bytes, char *error, size_t error_size);

/* Reads and checks the header and table of a weights file (not its data):
 * for kiln-compile --pack-weights --for. The caller frees *entries. */
int kiln_weights_read_table(const char *path, kiln_weights_header *header,
                            kiln_weights_entry **entries, char *error, size_t error_size);

/* One more reference to open weights (kiln_weights_close drops one). */
void kiln_weights_open_again(kiln_weights *weights);
/* The data of open weights, where the generated code reads it. */
const void *kiln_weights_data(const kiln_weights *weights);

/* kiln_weights_open of `file_name` in the running executable's directory. */
kiln_weights *kiln_weights_open_beside_executable(const char *file_name, char *error,
                                                         size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
