/*===- device.c - the device of a model instance, by its kernels' API -----===
 *
 * Which APIs this runtime has is the build's choice (KILN_WITH_VULKAN,
 * KILN_WITH_CUDA, KILN_WITH_METAL); a program for another is refused by
 * name. The functions all devices share are here too.
 *===----------------------------------------------------------------------===*/
#include "device.h"
#include "memory.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kiln_device_ops *const kDevices[] = {
#ifdef KILN_WITH_VULKAN
    &kiln_vulkan_device,
#endif
#ifdef KILN_WITH_CUDA
    &kiln_cuda_device,
#endif
#ifdef KILN_WITH_METAL
    &kiln_metal_device,
#endif
    NULL};

/* Every device begins with its kiln_device_base. */
static kiln_device_base *base(kiln_device *d) { return (kiln_device_base *)d; }

int kiln_device_fail(char *error, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error, size, fmt, ap);
  va_end(ap);
  return 1;
}

void *kiln_device_new(size_t bytes, const char *name, kiln_region_api api, char *error,
                      size_t size) {
  kiln_device_base *b = calloc(1, bytes);
  if (!b) {
    kiln_device_fail(error, size, "out of memory");
    return NULL;
  }
  snprintf(b->name, sizeof b->name, "%s", name);
  api.device = b;
  b->regions.api = api;
  return b;
}

static const char *api_name(uint32_t api) {
  switch (api) {
  case KILN_GPU_VULKAN: return "Vulkan";
  case KILN_GPU_METAL: return "Metal";
  case KILN_GPU_CUDA: return "CUDA";
  default: return NULL;
  }
}

kiln_device *kiln_device_open(const kiln_gpu_program *program, char *error, size_t size) {
  char have[64] = "";
  for (size_t i = 0; kDevices[i]; ++i) {
    const kiln_device_ops *ops = kDevices[i];
    if (ops->api == program->api) {
      kiln_device *d = ops->open(program, error, size);
      if (d) {
        base(d)->ops = ops;
        base(d)->num_kernels = program->num_kernels;
      }
      return d;
    }
    size_t used = strlen(have);
    snprintf(have + used, sizeof have - used, "%s%s", i ? " and " : "", ops->name);
  }
  if (api_name(program->api))
    kiln_device_fail(error, size,
                     "this runtime runs %s kernels, not %s kernels (the model was compiled "
                     "for another system)",
                     have, api_name(program->api));
  else
    kiln_device_fail(error, size, "this runtime runs %s kernels, not kernels for GPU API %u",
                     have, program->api);
  return NULL;
}

void kiln_device_close(kiln_device *d) {
  if (!d)
    return;
  kiln_copy_out *copies = base(d)->copies_out;
  base(d)->ops->close(d);
  free(copies);
}

const char *kiln_device_name(const kiln_device *d) {
  return ((const kiln_device_base *)d)->name;
}

void *kiln_device_alloc(kiln_device *d, size_t bytes) {
  kiln_region *r = kiln_regions_add(&base(d)->regions, bytes, KILN_REGION_BUFFER, NULL);
  return r ? r->mapped : NULL;
}

void *kiln_device_alloc_input(kiln_device *d, size_t bytes) {
  kiln_region *r = kiln_regions_add(&base(d)->regions, bytes, KILN_REGION_INPUT, NULL);
  return r ? r->mapped : NULL;
}

void *kiln_device_alloc_private(kiln_device *d, size_t bytes) {
  kiln_region *r = kiln_regions_add(&base(d)->regions, bytes, KILN_REGION_PRIVATE, NULL);
  return r ? r->mapped : NULL;
}

void *kiln_device_alloc_host(kiln_device *d, size_t bytes) {
  if (!base(d)->host_regions)
    return NULL;
  kiln_region *r = kiln_regions_add(&base(d)->regions, bytes, KILN_REGION_HOST, NULL);
  return r ? r->mapped : NULL;
}

void kiln_device_free(kiln_device *d, void *memory) {
  kiln_regions_free(&base(d)->regions, memory);
}

void kiln_device_touched(kiln_device *d, void *memory, size_t bytes) {
  if (base(d)->ops->touched)
    base(d)->ops->touched(d, memory, bytes);
}

void kiln_device_will_touch(kiln_device *d, void *memory, size_t bytes) {
  if (base(d)->ops->will_touch)
    base(d)->ops->will_touch(d, memory, bytes);
}

void kiln_device_copy_in(kiln_device *d, void *to, const void *from, size_t bytes) {
  if (base(d)->ops->copy_in)
    base(d)->ops->copy_in(d, to, from, bytes);
  else
    memcpy(to, from, bytes);
}

int kiln_device_copy_out(kiln_device *d, void *to, const void *from, size_t bytes) {
  kiln_device_base *b = base(d);
  kiln_copy_out *copies = kiln_room_for_one(b->copies_out, &b->copies_out_capacity,
                                            b->num_copies_out, sizeof *copies, 8);
  if (!copies)
    return 1;
  b->copies_out = copies;
  b->copies_out[b->num_copies_out++] = (kiln_copy_out){to, from, bytes};
  return 0;
}

int kiln_device_read_by_copy(kiln_device *d, const void *memory, size_t bytes) {
  if (!base(d)->read_by_copy)
    return 0;
  const kiln_region *r = kiln_regions_holding(&base(d)->regions, memory, bytes);
  return r && (r->kind == KILN_REGION_BUFFER || r->kind == KILN_REGION_PRIVATE);
}

void kiln_device_cancel_copies_out(kiln_device *d) { base(d)->num_copies_out = 0; }

int kiln_device_launch(kiln_device *d, uint32_t kernel, const int64_t grid[3],
                       const kiln_gpu_arg *args, char *error, size_t size) {
  if (kernel >= base(d)->num_kernels)
    return kiln_device_fail(error, size, "kernel %u does not exist (the model has %u)", kernel,
                            base(d)->num_kernels);
  return base(d)->ops->launch(d, kernel, grid, args, error, size);
}

int kiln_device_wait(kiln_device *d, char *error, size_t size) {
  kiln_device_base *b = base(d);
  int failed = b->ops->wait(d, error, size);
  for (size_t i = 0; i < b->num_copies_out && !failed; ++i) /* those the API left */
    memcpy(b->copies_out[i].to, b->copies_out[i].from, b->copies_out[i].bytes);
  b->num_copies_out = 0;
  return failed;
}

int kiln_device_profile(kiln_device *d, kiln_profiler *profiler) {
  return base(d)->ops->profile ? base(d)->ops->profile(d, profiler) : 1;
}
