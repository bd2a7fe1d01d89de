/*===- memory.c - device memory of a model instance -----------------------===*/
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kiln_region *kiln_regions_add(kiln_regions *rs, size_t bytes, const void *key) {
  if (rs->count == rs->capacity) {
    size_t capacity = rs->capacity ? 2 * rs->capacity : 16;
    kiln_region *grown = realloc(rs->items, capacity * sizeof *grown);
    if (!grown)
      return NULL;
    rs->items = grown;
    rs->capacity = capacity;
  }
  kiln_region r = {.bytes = bytes, .key = key};
  if (rs->api.create(rs->api.device, &r))
    return NULL;
  rs->items[rs->count] = r;
  return &rs->items[rs->count++];
}

void kiln_regions_free(kiln_regions *rs, void *memory) {
  for (size_t i = 0; i < rs->count; ++i)
    if (rs->items[i].mapped == memory && !rs->items[i].key) {
      rs->api.destroy(rs->api.device, &rs->items[i]);
      rs->items[i] = rs->items[--rs->count];
      if (rs->params == rs->count + 1) /* the parameters' region moved */
        rs->params = i + 1;
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

kiln_region *kiln_regions_find(kiln_regions *rs, const kiln_gpu_arg *arg) {
  const unsigned char *p = arg->data;
  int constant = (arg->flags & KILN_GPU_ARG_CONSTANT) != 0;
  for (size_t i = 0; !constant && i < rs->count; ++i) {
    kiln_region *r = &rs->items[i];
    if (!r->key && p >= r->mapped && p + arg->bytes <= r->mapped + r->bytes)
      return r;
  }
  if (!constant && !(arg->flags & KILN_GPU_ARG_MAYBE_CONSTANT))
    return NULL;
  /* A copy of the constant that covers this use (a view of it may be
   * shorter than a later one). */
  for (size_t i = 0; i < rs->count; ++i)
    if (rs->items[i].key == p && rs->items[i].bytes >= arg->bytes)
      return &rs->items[i];
  kiln_region *r = kiln_regions_add(rs, arg->bytes, p);
  if (r)
    memcpy(r->mapped, p, arg->bytes);
  return r;
}

size_t kiln_region_offset(const kiln_region *r, const kiln_gpu_arg *arg) {
  return r->key ? 0 : (size_t)((const unsigned char *)arg->data - r->mapped);
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
    /* Keyed by the regions themselves: no constant of the model has their
     * address. */
    if (!kiln_regions_add(rs, PARAMS_BYTES, rs))
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

int kiln_regions_locate(kiln_regions *rs, const char *device, uint32_t kernel, uint32_t i,
                        const kiln_gpu_arg *arg, kiln_region **region, size_t *offset,
                        char *error, size_t size) {
  if (arg->flags & KILN_GPU_ARG_PARAMS)
    return kiln_regions_stage_params(rs, arg, region, offset, error, size);
  *region = kiln_regions_find(rs, arg);
  if (!*region)
    return kiln_device_fail(error, size,
                            "kernel %u: buffer %u (%llu bytes at %p) is not in %s's memory",
                            kernel, i, (unsigned long long)arg->bytes, arg->data, device);
  *offset = kiln_region_offset(*region, arg);
  return 0;
}
