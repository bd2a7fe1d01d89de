/*===- memory.c - device memory of a model instance -----------------------===*/
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *kiln_room_for_one(void *items, size_t *capacity, size_t count, size_t item_bytes,
                        size_t first) {
  if (count < *capacity)
    return items;
  size_t grown_capacity = *capacity ? 2 * *capacity : first;
  void *grown = realloc(items, grown_capacity * item_bytes);
  if (grown)
    *capacity = grown_capacity;
  return grown;
}

kiln_region *kiln_regions_add(kiln_regions *rs, size_t bytes, kiln_region_kind kind,
                              const void *key) {
  kiln_region *items = kiln_room_for_one(rs->items, &rs->capacity, rs->count, sizeof *items, 16);
  if (!items)
    return NULL;
  rs->items = items;
  kiln_region r = {.bytes = bytes, .kind = kind, .key = key};
  if (rs->api.create(rs->api.device, &r))
    return NULL;
  rs->items[rs->count] = r;
  return &rs->items[rs->count++];
}

/* Whether `r` is memory of kiln_device_alloc, kiln_device_alloc_input or
 * kiln_device_alloc_private: a buffer kernels take, found by the address
 * the host knows it by. */
static int kernels_take(const kiln_region *r) {
  return r->kind == KILN_REGION_BUFFER || r->kind == KILN_REGION_INPUT ||
         r->kind == KILN_REGION_PRIVATE;
}

/* Destroys region `i`; the last one takes its place. */
static void remove_region(kiln_regions *rs, size_t i) {
  rs->api.destroy(rs->api.device, &rs->items[i]);
  rs->items[i] = rs->items[--rs->count];
  if (rs->params == rs->count + 1) /* the parameters' region moved */
    rs->params = i + 1;
}

void kiln_regions_free(kiln_regions *rs, void *memory) {
  for (size_t i = 0; i < rs->count; ++i)
    if ((kernels_take(&rs->items[i]) || rs->items[i].kind == KILN_REGION_HOST) &&
        rs->items[i].mapped == memory) {
      remove_region(rs, i);
      return;
    }
}

void kiln_regions_clear(kiln_regions *rs) {
  for (size_t i = 0; i < rs->count; ++i)
    rs->api.destroy(rs->api.device, &rs->items[i]);
  free(rs->items);
  rs->items = NULL;
  rs->count = rs->capacity = rs->params = rs->params_used = 0;
}

kiln_region *kiln_regions_holding(kiln_regions *rs, const void *memory, size_t bytes) {
  const unsigned char *p = memory;
  for (size_t i = 0; i < rs->count; ++i) {
    kiln_region *r = &rs->items[i];
    if (kernels_take(r) && p >= r->mapped && p + bytes <= r->mapped + r->bytes)
      return r;
  }
  return NULL;
}

/* The device's copy of the constant `arg`, made now if none covers this use
 * (a view of it may be shorter than a later one); NULL with a message when
 * there is no memory for it or it cannot be copied there. */
static kiln_region *find_constant(kiln_regions *rs, const char *device, uint32_t kernel,
                                  uint32_t i, const kiln_gpu_arg *arg, char *error,
                                  size_t size) {
  for (size_t k = 0; k < rs->count; ++k)
    if (rs->items[k].kind == KILN_REGION_CONSTANT && rs->items[k].key == arg->data &&
        rs->items[k].bytes >= arg->bytes)
      return &rs->items[k];
  kiln_region *r = kiln_regions_add(rs, arg->bytes, KILN_REGION_CONSTANT, arg->data);
  if (!r) {
    kiln_device_fail(error, size,
                     "kernel %u: buffer %u: out of %s's memory for a copy of the model's "
                     "constant (%llu bytes)",
                     kernel, i, device, (unsigned long long)arg->bytes);
    return NULL;
  }
  if (!rs->api.upload) {
    memcpy(r->mapped, arg->data, arg->bytes);
  } else if (rs->api.upload(rs->api.device, r, arg->data)) {
    remove_region(rs, (size_t)(r - rs->items));
    kiln_device_fail(error, size,
                     "kernel %u: buffer %u: copying the model's constant (%llu bytes) to %s "
                     "failed",
                     kernel, i, (unsigned long long)arg->bytes, device);
    return NULL;
  }
  return r;
}

/* Bytes of the parameters' region: a run whose queued launches fill it
 * drains them and starts it over. */
#define PARAMS_BYTES (64u * 1024u)

int kiln_regions_stage_params(kiln_regions *rs, const kiln_gpu_arg *arg, kiln_region **region,
                              size_t *offset, char *error, size_t size) {
  if (arg->bytes > PARAMS_BYTES)
    return kiln_device_fail(error, size, "a launch's %llu bytes of parameters exceed %u",
                            (unsigned long long)arg->bytes, PARAMS_BYTES);
  size_t align = rs->params_alignment;
  size_t at = (rs->params_used + align - 1) / align * align;
  if (at + arg->bytes > PARAMS_BYTES) {
    if (rs->api.drain(rs->api.device, error, size)) /* starts the region over */
      return 1;
    at = 0;
  }
  if (!rs->params) {
    if (!kiln_regions_add(rs, PARAMS_BYTES, KILN_REGION_PARAMS, NULL))
      return kiln_device_fail(error, size, "out of device memory for launch parameters");
    rs->params = rs->count;
  }
  kiln_region *r = &rs->items[rs->params - 1];
  memcpy(r->mapped + at, arg->data, arg->bytes);
  rs->params_used = at + arg->bytes;
  *region = r;
  *offset = at;
  return 0;
}

void kiln_regions_drained(kiln_regions *rs) { rs->params_used = 0; }

kiln_region *kiln_regions_params(kiln_regions *rs, size_t *used) {
  *used = rs->params ? rs->params_used : 0;
  return rs->params ? &rs->items[rs->params - 1] : NULL;
}

int kiln_regions_locate(kiln_regions *rs, const char *device, uint32_t kernel, uint32_t i,
                        const kiln_gpu_arg *arg, kiln_region **region, size_t *offset,
                        char *error, size_t size) {
  if (arg->flags & KILN_GPU_ARG_PARAMS)
    return kiln_regions_stage_params(rs, arg, region, offset, error, size);
  *region =
      arg->flags & KILN_GPU_ARG_CONSTANT ? NULL : kiln_regions_holding(rs, arg->data, arg->bytes);
  if (*region) {
    *offset = (size_t)((const unsigned char *)arg->data - (*region)->mapped);
    return 0;
  }
  if (!(arg->flags & (KILN_GPU_ARG_CONSTANT | KILN_GPU_ARG_MAYBE_CONSTANT)))
    return kiln_device_fail(error, size,
                            "kernel %u: buffer %u (%llu bytes at %p) is not in %s's memory",
                            kernel, i, (unsigned long long)arg->bytes, arg->data, device);
  *region = find_constant(rs, device, kernel, i, arg, error, size);
  *offset = 0;
  return *region ? 0 : 1;
}
