/*===- memory.h - device memory of a model instance (internal) ------------===
 *
 * What the Vulkan, CUDA and Metal runtimes share: the table of device
 * buffers an instance has (regions), mapped on the host but for constants
 * an API keeps apart; finding the region that holds a kernel argument, with
 * the model's constants copied to the device at their first use; and the
 * region launches' parameters are staged in. The API creates, fills and
 * destroys the buffers through kiln_region_api.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_DEVICE_MEMORY_H
#define KILN_DEVICE_MEMORY_H

#include "device.h"

#include <stddef.h>

/* What a region holds, which decides where an API may put it. */
typedef enum kiln_region_kind {
  /* kiln_device_alloc's: host code reads and writes it between kernels. */
  KILN_REGION_BUFFER,
  /* kiln_device_alloc_input's: the host writes it at `mapped` before the
   * kernels and says so (kiln_device_touched); kernels only read it. Where
   * that is not the memory the kernels read (`buffer`), the API copies what
   * was touched over, ahead of the next kernels. */
  KILN_REGION_INPUT,
  /* The copy of a model's constant: written once (kiln_region_api's
   * upload), then only read by kernels; the host never reads it. */
  KILN_REGION_CONSTANT,
  /* Launches' parameters: the host writes them at `mapped`, kernels read
   * them; where that is not the memory the kernels read (`buffer`), the
   * API copies them over before the launches. */
  KILN_REGION_PARAMS,
  /* kiln_device_alloc_private's: only kernels and copies read and write it;
   * `mapped` is the address the host knows it by, which an API may leave
   * unmapped (CUDA: the device address). */
  KILN_REGION_PRIVATE,
  /* kiln_device_alloc_host's: page-locked host memory for the caller's
   * inputs and outputs, which copies to and from device memory read and
   * write directly; kernels never take it. Only an API that sets
   * kiln_device_base.host_regions is asked for one. */
  KILN_REGION_HOST,
} kiln_region_kind;

/* A buffer of device memory, mapped at `mapped` (NULL for a constant an API
 * keeps where the host cannot reach it); `key` is the host constant it holds
 * a copy of, or NULL. */
typedef struct kiln_region {
  unsigned char *mapped;
  size_t bytes;
  kiln_region_kind kind;
  const void *key;
  void *buffer; /* the API's buffer object (VkBuffer, id<MTLBuffer>, CUdeviceptr) */
  void *memory; /* its memory where the API keeps that apart (VkDeviceMemory) */
} kiln_region;

typedef struct kiln_region_api {
  void *device;
  /* Makes r->buffer (and r->memory) of r->bytes, for r->kind, and maps it
   * at r->mapped; nonzero when out of memory. */
  int (*create)(void *device, kiln_region *r);
  void (*destroy)(void *device, kiln_region *r);
  /* Runs the queued launches and waits for them (frees the parameters). */
  int (*drain)(void *device, char *error, size_t size);
  /* Copies r->bytes of a constant at `data` into r, ahead of the launches
   * that read it; nonzero on failure. NULL: copied at r->mapped. */
  int (*upload)(void *device, kiln_region *r, const void *data);
} kiln_region_api;

/* A copy of kiln_device_copy_out's, not yet done. */
typedef struct kiln_copy_out {
  void *to;
  const void *from;
  size_t bytes;
} kiln_copy_out;

typedef struct kiln_regions {
  kiln_region_api api;
  size_t params_alignment; /* of a launch's parameters in their region */
  kiln_region *items;
  size_t count, capacity;
  size_t params;      /* index + 1 of the parameters' region; 0: none yet */
  size_t params_used; /* bytes of it the queued launches use */
} kiln_regions;

/* What every API's struct kiln_device begins with: kiln_device_name,
 * kiln_device_alloc and kiln_device_free are the same for all (device.c). */
typedef struct kiln_device_base {
  const kiln_device_ops *ops;
  uint32_t num_kernels; /* the program's: launches of others are refused */
  kiln_regions regions;
  /* kiln_device_copy_out's since the last wait: an API's wait may do them
   * itself (and empty the list); what is left is copied on the host after
   * a wait that succeeded. */
  kiln_copy_out *copies_out;
  size_t num_copies_out, copies_out_capacity;
  int host_regions; /* the API makes KILN_REGION_HOST regions */
  /* The host reads BUFFER and PRIVATE regions by copies, not in place
   * (kiln_device_read_by_copy). */
  int read_by_copy;
  char name[300];
} kiln_device_base;

/* A zeroed device of `bytes` (an API's struct kiln_device, which begins
 * with its kiln_device_base) named `name`, whose regions `api` makes (its
 * `device` set to it); NULL with a message when out of memory. */
void *kiln_device_new(size_t bytes, const char *name, kiln_region_api api, char *error,
                      size_t size);

/* `items`, an array of `count` items of `item_bytes` with room for
 * `*capacity`, with room for one more: itself, or moved to twice the room
 * (`first` items at first) when it is full; NULL when out of memory (the
 * array and `*capacity` unchanged). */
void *kiln_room_for_one(void *items, size_t *capacity, size_t count, size_t item_bytes,
                        size_t first);

/* Formats `fmt` into `error` and returns 1. */
int kiln_device_fail(char *error, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new region of `bytes` holding `kind`, a copy of `key` for a constant;
 * NULL when out of memory. */
kiln_region *kiln_regions_add(kiln_regions *regions, size_t bytes, kiln_region_kind kind,
                              const void *key);
/* The region of kiln_device_alloc, kiln_device_alloc_input or
 * kiln_device_alloc_private holding the `bytes` at `memory`, or NULL. */
kiln_region *kiln_regions_holding(kiln_regions *regions, const void *memory, size_t bytes);
/* Frees the region of kiln_device_alloc, kiln_device_alloc_input,
 * kiln_device_alloc_private or kiln_device_alloc_host at `memory`. */
void kiln_regions_free(kiln_regions *regions, void *memory);
/* Destroys every region. */
void kiln_regions_clear(kiln_regions *regions);

/* Where argument `i` of a launch of kernel `kernel` lives on the device:
 * `*region` and `*offset` in it (a launch's parameters staged, a
 * constant's copy, made at its first use, or the memory of
 * kiln_device_alloc holding it). Fails with a message naming the argument
 * when it is host memory or no memory is left for the copy. */
int kiln_regions_locate(kiln_regions *regions, const char *device, uint32_t kernel, uint32_t i,
                        const kiln_gpu_arg *arg, kiln_region **region, size_t *offset,
                        char *error, size_t size);

/* Copies a launch's parameters (KILN_GPU_ARG_PARAMS) where they stay
 * untouched until the launch has run: at `*offset` of `*region`. */
int kiln_regions_stage_params(kiln_regions *regions, const kiln_gpu_arg *arg,
                              kiln_region **region, size_t *offset, char *error, size_t size);
/* The queued launches have run: their parameters' bytes are free again. */
void kiln_regions_drained(kiln_regions *regions);
/* The region of the queued launches' parameters (its first `*used` bytes
 * are theirs), or NULL when none has been staged yet. */
kiln_region *kiln_regions_params(kiln_regions *regions, size_t *used);

#endif /* KILN_DEVICE_MEMORY_H */
