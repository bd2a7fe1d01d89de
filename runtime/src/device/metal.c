/*===- metal.c - kernels of a model on the Metal device -------------------===
 *
 * The Metal API is Objective-C; this is plain C that talks to the
 * Objective-C runtime directly, so it builds without Apple's SDK: every
 * message is objc_msgSend cast to the method's C signature (the runtime
 * calls the method with the platform's C calling convention, structs such
 * as MTLSize included). The device is MTLCreateSystemDefaultDevice's.
 *
 * At open, each kernel's MSL source (translated from SPIR-V at compile
 * time) is compiled by the driver into a compute pipeline. Launches are
 * encoded into one command buffer with one serial compute encoder, whose
 * dispatches see each other's writes, and committed at kiln_device_wait.
 * Memory is shared storage (MTLResourceStorageModeShared): the host reads
 * and writes it in place, as on Apple's unified memory it is the GPU's.
 *
 * Objects kept across calls are retained by new* methods or explicitly;
 * each entry point drains its own autorelease pool, so a caller without
 * one (any thread of a C program) leaks nothing.
 *===----------------------------------------------------------------------===*/
#include "device.h"
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Objective-C runtime (libobjc) and Metal's one C function. */
typedef void *id;
typedef void *SEL;
typedef unsigned long NSUInteger;
id objc_getClass(const char *name);
SEL sel_registerName(const char *name);
void objc_msgSend(void);
void *objc_autoreleasePoolPush(void);
void objc_autoreleasePoolPop(void *pool);
id MTLCreateSystemDefaultDevice(void);

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
enum { MTLResourceStorageModeShared = 0 };
enum { MTLCommandBufferStatusError = 5 };

/* objc_msgSend as a method of the given C signature. */
#define MSG(ret, ...) ((ret(*)(id, SEL, ##__VA_ARGS__))objc_msgSend)
#define SEL_(name) sel_registerName(name)

static void release(id object) {
  if (object)
    MSG(void)(object, SEL_("release"));
}

/* An NSString's characters (valid while its autorelease pool lives). */
static const char *utf8(id string) {
  return string ? MSG(const char *)(string, SEL_("UTF8String")) : "(none)";
}

static const char *describe(id error) {
  return error ? utf8(MSG(id)(error, SEL_("localizedDescription"))) : "no reason given";
}

typedef struct kernel {
  id pipeline; /* id<MTLComputePipelineState> */
  uint32_t num_buffers;
  MTLSize threads; /* per threadgroup: the kernel's workgroup size */
} kernel;

struct kiln_device {
  kiln_device_base base; /* first: see memory.h */
  id device, queue;
  id commands; /* the command buffer launches are encoded into, or NULL */
  id encoder;  /* its compute encoder */
  kernel *kernels;
  uint32_t num_kernels;
};

static void metal_close(kiln_device *d);
static int metal_wait(kiln_device *d, char *error, size_t size);

static int create_kernel(kiln_device *d, const kiln_gpu_kernel *k, kernel *out, char *error,
                         size_t size) {
  out->num_buffers = k->num_buffers;
  out->threads = (MTLSize){k->workgroup_size[0], k->workgroup_size[1], k->workgroup_size[2]};
  id NSString = objc_getClass("NSString");
  id source = MSG(id, const char *)(NSString, SEL_("stringWithUTF8String:"), k->code);
  id failure = NULL;
  id library = MSG(id, id, id, id *)(d->device, SEL_("newLibraryWithSource:options:error:"),
                                     source, NULL, &failure);
  if (!library)
    return kiln_device_fail(error, size, "%s cannot compile the MSL of kernel '%s': %s",
                            d->base.name, k->name, describe(failure));
  id entry = MSG(id, const char *)(NSString, SEL_("stringWithUTF8String:"), k->name);
  id function = MSG(id, id)(library, SEL_("newFunctionWithName:"), entry);
  release(library);
  if (!function)
    return kiln_device_fail(error, size, "the MSL of kernel '%s' has no function of that name",
                            k->name);
  failure = NULL;
  out->pipeline = MSG(id, id, id *)(d->device, SEL_("newComputePipelineStateWithFunction:error:"),
                                    function, &failure);
  release(function);
  if (!out->pipeline)
    return kiln_device_fail(error, size, "%s cannot build kernel '%s': %s", d->base.name, k->name,
                            describe(failure));
  NSUInteger most = MSG(NSUInteger)(out->pipeline, SEL_("maxTotalThreadsPerThreadgroup"));
  NSUInteger threads = out->threads.width * out->threads.height * out->threads.depth;
  if (threads > most)
    return kiln_device_fail(error, size,
                            "kernel '%s' has %lu threads per workgroup; %s runs it with at "
                            "most %lu",
                            k->name, threads, d->base.name, most);
  return 0;
}

static int create_region(void *device, kiln_region *r) {
  kiln_device *d = device;
  id buffer = MSG(id, NSUInteger, NSUInteger)(d->device, SEL_("newBufferWithLength:options:"),
                                              r->bytes ? r->bytes : 4,
                                              MTLResourceStorageModeShared);
  if (!buffer)
    return 1;
  r->buffer = buffer;
  r->mapped = MSG(void *)(buffer, SEL_("contents"));
  return 0;
}

static void destroy_region(void *device, kiln_region *r) {
  (void)device;
  release(r->buffer);
}

static int drain(void *device, char *error, size_t size) {
  return metal_wait(device, error, size);
}

static int open_device(kiln_device *d, const kiln_gpu_program *program, char *error,
                       size_t size) {
  d->device = MTLCreateSystemDefaultDevice();
  if (!d->device)
    return kiln_device_fail(error, size, "no Metal device (MTLCreateSystemDefaultDevice)");
  snprintf(d->base.name, sizeof d->base.name, "%s (Metal)", utf8(MSG(id)(d->device, SEL_("name"))));
  d->queue = MSG(id)(d->device, SEL_("newCommandQueue"));
  if (!d->queue)
    return kiln_device_fail(error, size, "%s: cannot create a command queue", d->base.name);
  d->num_kernels = program->num_kernels;
  for (uint32_t i = 0; i < program->num_kernels; ++i)
    if (create_kernel(d, &program->kernels[i], &d->kernels[i], error, size))
      return 1;
  return 0;
}

static kiln_device *metal_open(const kiln_gpu_program *program, char *error, size_t size) {
  kiln_device *d =
      kiln_device_new(sizeof *d, "the Metal device",
                      (kiln_region_api){.create = create_region, .destroy = destroy_region, .drain = drain},
                      error, size);
  if (!d)
    return NULL;
  d->base.regions.params_alignment = 256; /* the strictest buffer offset alignment of Metal */
  d->kernels = calloc(program->num_kernels + 1, sizeof *d->kernels);
  void *pool = objc_autoreleasePoolPush();
  int failed = !d->kernels || open_device(d, program, error, size);
  objc_autoreleasePoolPop(pool);
  if (failed) {
    metal_close(d);
    return NULL;
  }
  return d;
}

static void metal_close(kiln_device *d) {
  if (!d)
    return;
  if (d->commands) {
    char ignored[64];
    metal_wait(d, ignored, sizeof ignored);
  }
  kiln_regions_clear(&d->base.regions);
  for (uint32_t i = 0; i < d->num_kernels; ++i)
    release(d->kernels[i].pipeline);
  release(d->queue);
  release(d->device);
  free(d->kernels);
  free(d);
}

/* Starts the command buffer and its encoder if none is open. */
static int begin_commands(kiln_device *d, char *error, size_t size) {
  if (d->commands)
    return 0;
  /* Both come autoreleased: keep them past this call's pool. */
  d->commands = MSG(id)(d->queue, SEL_("commandBuffer"));
  if (d->commands) {
    MSG(id)(d->commands, SEL_("retain"));
    d->encoder = MSG(id)(d->commands, SEL_("computeCommandEncoder"));
  }
  if (!d->encoder) {
    release(d->commands);
    d->commands = NULL;
    return kiln_device_fail(error, size, "%s: cannot create a command buffer", d->base.name);
  }
  MSG(id)(d->encoder, SEL_("retain"));
  return 0;
}

static int launch(kiln_device *d, uint32_t index, const int64_t grid[3],
                  const kiln_gpu_arg *args, char *error, size_t size) {
  kernel *k = &d->kernels[index];
  /* Every argument's buffer first: staging the parameters may commit the
   * queued launches, and with them the encoder. */
  id buffers[31];
  NSUInteger offsets[31];
  if (k->num_buffers > 31)
    return kiln_device_fail(error, size, "kernel %u has %u buffers (Metal binds at most 31)",
                            index, k->num_buffers);
  for (uint32_t i = 0; i < k->num_buffers; ++i) {
    kiln_region *r;
    size_t offset;
    if (kiln_regions_locate(&d->base.regions, d->base.name, index, i, &args[i], &r, &offset,
                            error, size))
      return 1;
    buffers[i] = r->buffer;
    offsets[i] = offset;
  }
  if (begin_commands(d, error, size))
    return 1;
  MSG(void, id)(d->encoder, SEL_("setComputePipelineState:"), k->pipeline);
  for (uint32_t i = 0; i < k->num_buffers; ++i)
    MSG(void, id, NSUInteger, NSUInteger)(d->encoder, SEL_("setBuffer:offset:atIndex:"),
                                          buffers[i], offsets[i], i);
  MTLSize groups = {(NSUInteger)grid[0], (NSUInteger)grid[1], (NSUInteger)grid[2]};
  MSG(void, MTLSize, MTLSize)(d->encoder, SEL_("dispatchThreadgroups:threadsPerThreadgroup:"),
                              groups, k->threads);
  return 0;
}

static int metal_launch(kiln_device *d, uint32_t index, const int64_t grid[3],
                        const kiln_gpu_arg *args, char *error, size_t size) {
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 0 || grid[i] > UINT32_MAX)
      return kiln_device_fail(error, size,
                              "kernel %u: a grid of %lld workgroups on axis %d is out of range",
                              index, (long long)grid[i], i);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return 0;
  void *pool = objc_autoreleasePoolPush();
  int failed = launch(d, index, grid, args, error, size);
  objc_autoreleasePoolPop(pool);
  return failed;
}

static int metal_wait(kiln_device *d, char *error, size_t size) {
  if (!d->commands)
    return 0;
  void *pool = objc_autoreleasePoolPush();
  id commands = d->commands;
  MSG(void)(d->encoder, SEL_("endEncoding"));
  release(d->encoder);
  d->encoder = d->commands = NULL;
  kiln_regions_drained(&d->base.regions);
  MSG(void)(commands, SEL_("commit"));
  MSG(void)(commands, SEL_("waitUntilCompleted"));
  int failed = MSG(NSUInteger)(commands, SEL_("status")) == MTLCommandBufferStatusError;
  if (failed)
    kiln_device_fail(error, size, "%s: the kernels failed: %s", d->base.name,
                     describe(MSG(id)(commands, SEL_("error"))));
  release(commands);
  objc_autoreleasePoolPop(pool);
  return failed;
}

const kiln_device_ops kiln_metal_device = {.api = KILN_GPU_METAL,
                                           .name = "Metal",
                                           .open = metal_open,
                                           .close = metal_close,
                                           .launch = metal_launch,
                                           .wait = metal_wait};
