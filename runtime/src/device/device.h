/*===- device.h - the GPU device of a model instance (internal) -----------===
 *
 * A model compiled for a GPU carries a kiln_gpu_program (its kernels). The
 * instance opens a device for it at create; its arena and its output
 * buffers live in memory the host and the kernels share (mapped on the
 * host), so host code between kernels reads and writes them in place once
 * kiln_device_wait has drained the launches. Its inputs are mapped too,
 * though a GPU may keep a copy of its own that the host's writes reach
 * through kiln_device_touched; the model's constants are copied to the
 * device at their first use. The inputs and outputs that only kernels use
 * may be memory the host cannot reach, copied to it from the caller's
 * buffers and back from it into them.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#include "kiln/runtime.h"

typedef struct kiln_device kiln_device;
typedef struct kiln_profiler kiln_profiler; /* profile.h */

/* Opens the device for `program` and prepares every kernel; NULL with a
 * message in `error` when this runtime has no device for its API (Vulkan
 * and CUDA on Linux, Metal on macOS), there is none, or it refuses a
 * kernel. */
kiln_device *kiln_device_open(const kiln_gpu_program *program, char *error, size_t size);
void kiln_device_close(kiln_device *device);
/* "llvmpipe (Vulkan 1.3)", for --help and errors. */
const char *kiln_device_name(const kiln_device *device);

/* Memory the kernels can use, mapped on the host and 64-byte aligned; NULL
 * when out of memory. */
void *kiln_device_alloc(kiln_device *device, size_t bytes);
/* The same for a run's input, which kernels only read: the host writes it
 * and then says so (kiln_device_touched), before the kernels; the GPU may
 * keep its own copy. */
void *kiln_device_alloc_input(kiln_device *device, size_t bytes);
/* Memory only kernels read and write (an input or output that no host code
 * of the model touches): the host passes its address to launches and to
 * kiln_device_copy_in and kiln_device_copy_out, and never dereferences it.
 * CUDA: device memory; other APIs: kiln_device_alloc's. */
void *kiln_device_alloc_private(kiln_device *device, size_t bytes);
/* Host memory that copies to and from kiln_device_alloc_private's go
 * fastest from and to (CUDA: page-locked, copied by DMA without the
 * driver staging it), for a run's inputs and outputs; kernels never take
 * it. NULL where the API has none (its copies are memcpy) or none is left.
 * Freed by kiln_device_free, or at the latest by kiln_device_close. */
void *kiln_device_alloc_host(kiln_device *device, size_t bytes);
void kiln_device_free(kiln_device *device, void *memory);
/* Copies `bytes` of host memory `from` to kiln_device_alloc_private's `to`,
 * ahead of the next kernels; `from` must stay as it is until the next
 * kiln_device_wait returns (the copy may read it until then). A failure is
 * the next wait's. */
void kiln_device_copy_in(kiln_device *device, void *to, const void *from, size_t bytes);
/* Copies `bytes` of kiln_device_alloc_private's or kiln_device_alloc's
 * `from` to host memory `to` after the kernels queued so far: done when the
 * next kiln_device_wait returns success (not at all if it fails). Nonzero
 * when out of memory. */
int kiln_device_copy_out(kiln_device *device, void *to, const void *from, size_t bytes);
/* Whether the host reads the `bytes` at `memory` by kiln_device_copy_out
 * rather than in place: memory of kiln_device_alloc_private, which it may
 * not reach, or of kiln_device_alloc where reading it in place would move
 * its pages to the host and back (CUDA's managed memory). 0 for other
 * memory, and where the kernels' memory is the host's to read (Vulkan's
 * and Metal's mapped memory). */
int kiln_device_read_by_copy(kiln_device *device, const void *memory, size_t bytes);
/* Forgets the copies kiln_device_copy_out queued since the last wait (a
 * run that failed leaves the caller's outputs alone). */
void kiln_device_cancel_copies_out(kiln_device *device);
/* The host wrote or read `bytes` of kiln_device_alloc's memory at `memory`
 * (a run's inputs copied in, its outputs copied out): where that memory
 * migrates (CUDA's managed memory), it moves back to the GPU ahead of the
 * next kernels, in bulk; where the GPU keeps its own copy of an input, what
 * the host wrote is copied there. */
void kiln_device_touched(kiln_device *device, void *memory, size_t bytes);
/* The host will read or write `bytes` of kiln_device_alloc's memory at
 * `memory` once the next kiln_device_wait returns (a run's outputs copied
 * out, the next run's inputs copied in): where that memory migrates, it
 * moves to the host in bulk behind the kernels, before the wait returns,
 * not a page at a time as the host touches it. */
void kiln_device_will_touch(kiln_device *device, void *memory, size_t bytes);

/* Queues kernel `kernel` on a grid of workgroups; each argument is memory of
 * kiln_device_alloc or a constant of the model (copied to the device at its
 * first use). Launches run in order. Returns nonzero with a message. */
int kiln_device_launch(kiln_device *device, uint32_t kernel, const int64_t grid[3],
                       const kiln_gpu_arg *args, char *error, size_t size);
/* Runs what was queued and waits for it. Returns nonzero with a message. */
int kiln_device_wait(kiln_device *device, char *error, size_t size);
/* From now on, each kernel's time on the device goes to `profiler` at the
 * wait after it (kiln_profiler_device_kernel); NULL stops. Nonzero where
 * this API's kernels are not timed. */
int kiln_device_profile(kiln_device *device, kiln_profiler *profiler);

/* One API's device (vulkan.c, cuda.c, metal.c): the functions above that
 * differ by API; device.c picks by the program's. */
typedef struct kiln_device_ops {
  uint32_t api; /* kiln_gpu_api */
  const char *name;
  kiln_device *(*open)(const kiln_gpu_program *program, char *error, size_t size);
  void (*close)(kiln_device *device);
  int (*launch)(kiln_device *device, uint32_t kernel, const int64_t grid[3],
                const kiln_gpu_arg *args, char *error, size_t size);
  int (*wait)(kiln_device *device, char *error, size_t size);
  void (*touched)(kiln_device *device, void *memory, size_t bytes);    /* optional */
  void (*will_touch)(kiln_device *device, void *memory, size_t bytes); /* optional */
  int (*profile)(kiln_device *device, kiln_profiler *profiler);         /* optional */
  /* Without it, kiln_device_copy_in copies at once, on the host (the
   * memory is mapped). */
  void (*copy_in)(kiln_device *device, void *to, const void *from, size_t bytes); /* optional */
} kiln_device_ops;
extern const kiln_device_ops kiln_vulkan_device, kiln_cuda_device, kiln_metal_device;

#endif /* KILN_DEVICE_H */
