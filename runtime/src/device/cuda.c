/*===- cuda.c - kernels of a model on an NVIDIA GPU -----------------------===
 *
 * The CUDA driver API only, opened at run time (dlopen libcuda.so.1): the
 * executable needs the NVIDIA driver and nothing of the toolkit. The GPU is
 * the one KILN_CUDA_DEVICE names (its ordinal), else the first. Each
 * kernel's fatbin (sm_80 and sm_90a cubins, and PTX the driver compiles for
 * other GPUs) is loaded into the device's primary context at open.
 *
 * Launches are recorded, and run on one stream, in order, at
 * kiln_device_wait: the launches between two waits (a segment; a static
 * model's run is one or a few) go to the GPU as one CUDA graph once the
 * same segment (the same kernels, grids and buffers) has been seen twice,
 * which costs one cuGraphLaunch instead of a cuLaunchKernel per kernel.
 * The first time, they are launched one by one; the second, captured into
 * a graph and kept (the last kGraphs distinct segments); a dynamic model's
 * segments of new sizes are launched one by one. KILN_CUDA_GRAPHS=0 launches
 * every kernel at once, one by one; a driver that cannot capture (or has no
 * graph API) gets the same.
 *
 * The memory of kiln_device_alloc (the arena, a run's outputs) is managed
 * (cuMemAllocManaged): one address for the host and the GPU, so host code
 * between kernels reads and writes it in place, once kiln_device_wait has
 * drained the launches, and the driver migrates pages to where they are
 * used. Before a segment's kernels, the managed memory the host touched (a
 * run's last outputs) is prefetched to the GPU in bulk; after them, what
 * the host will touch next (the outputs it copies out) is prefetched back
 * to the host, before the wait returns (KILN_CUDA_PREFETCH=0: both left to
 * page faults). What the host does not read back is device memory
 * (cuMemAlloc), which does not migrate: the model's constants, copied in
 * at their first use; the launches' parameters, written to pinned host
 * memory and copied over ahead of their kernels (a segment's at once,
 * before its graph); a run's inputs (kiln_device_alloc_input), written
 * to pinned host memory and copied over as the host says it wrote them;
 * and the inputs and outputs no host code of the model touches
 * (kiln_device_alloc_private), copied straight from the caller's buffers
 * ahead of the kernels and back into them behind the kernels.
 *===----------------------------------------------------------------------===*/
#include "device.h"
#include "memory.h"
#include "../profile.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver API's types, as cuda.h declares them (the ABI is stable). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUevent_st *CUevent;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CU_MEM_ATTACH_GLOBAL = 1,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
  CU_STREAM_NON_BLOCKING = 1,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
  CU_MEM_LOCATION_TYPE_HOST = 2,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
typedef struct CUmemLocation {
  int type, id;
} CUmemLocation;

/* Entry points, by the name libcuda exports (cuda.h maps some to _v2). */
#define KILN_CUDA_FUNCTIONS(X)                                                 \
  X(cuInit, "cuInit", CUresult, (unsigned))                                    \
  X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult, const char **))     \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *))                   \
  X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice *, int))                   \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice))     \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *, int, CUdevice)) \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult,            \
    (CUcontext *, CUdevice))                                                   \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice)) \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext))                 \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult, (CUmodule *, const void *)) \
  X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule))                    \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult,                      \
    (CUfunction *, CUmodule, const char *))                                    \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction, int, int)) \
  X(cuMemAllocManaged, "cuMemAllocManaged", CUresult,                          \
    (CUdeviceptr *, size_t, unsigned))                                         \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr *, size_t))             \
  X(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr))                        \
  X(cuMemAllocHost, "cuMemAllocHost_v2", CUresult, (void **, size_t))          \
  X(cuMemFreeHost, "cuMemFreeHost", CUresult, (void *))                        \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                       \
    (CUdeviceptr, const void *, size_t, CUstream))                             \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult,                       \
    (void *, CUdeviceptr, size_t, CUstream))                                   \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult, (size_t *, size_t *))            \
  X(cuStreamCreate, "cuStreamCreate", CUresult, (CUstream *, unsigned))        \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream))               \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream))          \
  X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))

/* Those of CUDA graphs (CUDA 11.4 on): without them, no graphs. */
#define KILN_CUDA_GRAPH_FUNCTIONS(X)                                           \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUresult, (CUstream, int)) \
  X(cuStreamEndCapture, "cuStreamEndCapture", CUresult, (CUstream, CUgraph *)) \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", CUresult,              \
    (CUgraphExec *, CUgraph, unsigned long long))                              \
  X(cuGraphLaunch, "cuGraphLaunch", CUresult, (CUgraphExec, CUstream))         \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult, (CUgraphExec))         \
  X(cuGraphDestroy, "cuGraphDestroy", CUresult, (CUgraph))

/* Those of events: without them, no profiling. */
#define KILN_CUDA_EVENT_FUNCTIONS(X)                                           \
  X(cuEventCreate, "cuEventCreate", CUresult, (CUevent *, unsigned))           \
  X(cuEventRecord, "cuEventRecord", CUresult, (CUevent, CUstream))             \
  X(cuEventElapsedTime, "cuEventElapsedTime", CUresult, (float *, CUevent, CUevent)) \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult, (CUevent))

/* Optional (CUDA 12.2 on): without it, kernels fault the pages they use. */
#define KILN_CUDA_PREFETCH_FUNCTIONS(X)                                        \
  X(cuMemPrefetchAsync, "cuMemPrefetchAsync_v2", CUresult,                     \
    (CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream))

typedef struct kernel {
  CUmodule module;
  CUfunction function;
  uint32_t num_buffers;
  uint32_t threads[3];
  uint32_t shared_bytes; /* dynamic shared memory, given at each launch */
} kernel;

/* A kernel's most buffers (one pointer parameter each). */
enum { kMaxBuffers = 64 };

/* One recorded launch: what cuLaunchKernel takes, the pointers by value. */
typedef struct launch {
  uint32_t kernel;
  uint32_t num_pointers;
  unsigned grid[3];
  uint64_t bytes; /* of its buffers (views), for the profile */
  CUdeviceptr pointers[kMaxBuffers];
} launch;

/* Ranges of memory to prefetch. */
typedef struct touched_ranges {
  struct {
    CUdeviceptr memory;
    size_t bytes;
  } *ranges;
  size_t count, capacity;
} touched_ranges;

/* The launches between two waits. */
typedef struct segment {
  launch *launches;
  size_t count, capacity;
  uint64_t hash;
} segment;

/* Distinct segments kept: as graphs, and seen once (not yet a graph). */
enum { kGraphs = 8 };

typedef struct graph {
  segment launches; /* empty: a free slot */
  CUgraphExec exec; /* NULL: seen once only */
  uint64_t used;    /* when it last ran: the least recent is replaced */
} graph;

struct kiln_device {
  kiln_device_base base; /* first: see memory.h */
  void *library;
#define X(field, symbol, ret, args) ret(*field) args;
  KILN_CUDA_FUNCTIONS(X)
  KILN_CUDA_GRAPH_FUNCTIONS(X)
  KILN_CUDA_EVENT_FUNCTIONS(X)
  KILN_CUDA_PREFETCH_FUNCTIONS(X)
#undef X
  CUdevice device;
  CUcontext context; /* the device's primary context, retained */
  CUstream stream;
  int queued; /* launches not yet waited for */
  kernel *kernels;
  uint32_t num_kernels;
  int graphs;   /* record segments and replay them as graphs */
  int prefetch; /* move what the host touches to and from the GPU in bulk */
  touched_ranges touched; /* by the host since the kernels last ran */
  touched_ranges returning; /* the host touches next, after the wait */
  segment pending; /* the launches since the last wait, not yet run */
  CUresult failed_copy; /* to the GPU, since the last wait */
  int copies_pending;   /* copies queued since the last wait */
  kiln_profiler *profiler; /* while profiling: kernels are timed, not graphed */
  CUevent *events; /* around each launch of the segment: 2 per launch */
  size_t num_events;
  int64_t submitted; /* when the timed launches went (kiln_profiler_now) */
  graph cache[kGraphs];
  uint64_t clock; /* segments run */
};

static int cuda_wait(kiln_device *d, char *error, size_t size);
static void forget(kiln_device *d, graph *g);

/* "CUDA_ERROR_OUT_OF_MEMORY", or the number. */
static const char *error_name(kiln_device *d, CUresult r, char buffer[32]) {
  const char *name = NULL;
  if (d->cuGetErrorName && d->cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
    return name;
  if (r == CUDA_ERROR_STUB_LIBRARY)
    return "CUDA_ERROR_STUB_LIBRARY: this libcuda.so.1 is the toolkit's stub, not a driver";
  snprintf(buffer, 32, "CUresult %d", r);
  return buffer;
}

/* Fails with "<what> failed (<error name>)" unless `r` is success. */
static int check(kiln_device *d, CUresult r, const char *what, char *error, size_t size) {
  char buffer[32];
  if (r == CUDA_SUCCESS)
    return 0;
  return kiln_device_fail(error, size, "%s: %s failed (%s)", d->base.name, what,
                          error_name(d, r, buffer));
}

static int load_driver(kiln_device *d, char *error, size_t size) {
  d->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->library)
    return kiln_device_fail(error, size,
                            "no CUDA driver (%s); install the NVIDIA driver",
                            dlerror());
#define X(field, symbol, ret, args)                                            \
  d->field = (ret(*) args)dlsym(d->library, symbol);                           \
  if (!d->field)                                                               \
    return kiln_device_fail(error, size, "the CUDA driver has no %s (too old?)", symbol);
  KILN_CUDA_FUNCTIONS(X)
#undef X
#define X(field, symbol, ret, args)                                            \
  d->field = (ret(*) args)dlsym(d->library, symbol);                           \
  if (!d->field)                                                               \
    d->graphs = 0;
  KILN_CUDA_GRAPH_FUNCTIONS(X)
#undef X
#define X(field, symbol, ret, args) d->field = (ret(*) args)dlsym(d->library, symbol);
  KILN_CUDA_EVENT_FUNCTIONS(X)
  KILN_CUDA_PREFETCH_FUNCTIONS(X)
#undef X
  return 0;
}

static int pick_device(kiln_device *d, char *error, size_t size) {
  if (check(d, d->cuInit(0), "cuInit", error, size))
    return 1;
  int count = 0;
  if (check(d, d->cuDeviceGetCount(&count), "cuDeviceGetCount", error, size))
    return 1;
  if (count == 0)
    return kiln_device_fail(error, size, "no CUDA GPU (the driver found none)");
  int ordinal = 0;
  const char *chosen = getenv("KILN_CUDA_DEVICE");
  if (chosen && *chosen) {
    char *end;
    long index = strtol(chosen, &end, 10);
    if (*end || index < 0 || index >= count)
      return kiln_device_fail(error, size, "KILN_CUDA_DEVICE=%s is not a GPU ordinal (0..%d)",
                              chosen, count - 1);
    ordinal = (int)index;
  }
  if (check(d, d->cuDeviceGet(&d->device, ordinal), "cuDeviceGet", error, size))
    return 1;
  char name[256] = "";
  int major = 0, minor = 0, managed = 0;
  d->cuDeviceGetName(name, sizeof name, d->device);
  d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->device);
  d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->device);
  /* Kernels launched at once (KILN_CUDA_GRAPHS=0) run while the host goes
   * on, and it may touch managed memory (a dynamic model's sizes in the
   * arena) meanwhile: the GPU must allow that (Linux drivers for sm_60+;
   * not WSL2 or some virtual machines). Prefetching needs it too. */
  d->cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, d->device);
  snprintf(d->base.name, sizeof d->base.name, "%s (CUDA, sm_%d%d)", name, major, minor);
  if (!managed)
    return kiln_device_fail(error, size,
                            "%s has no concurrent managed memory access, which kiln's CUDA "
                            "models use",
                            d->base.name);
  if (check(d, d->cuDevicePrimaryCtxRetain(&d->context, d->device), "cuDevicePrimaryCtxRetain",
            error, size))
    return 1;
  return check(d, d->cuCtxSetCurrent(d->context), "cuCtxSetCurrent", error, size) ||
         /* Not synchronized with the legacy default stream: another thread's
          * work there cannot invalidate a capture. */
         check(d, d->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
               error, size);
}

static int load_kernel(kiln_device *d, const kiln_gpu_kernel *k, kernel *out, char *error,
                       size_t size) {
  char buffer[32];
  out->num_buffers = k->num_buffers;
  memcpy(out->threads, k->workgroup_size, sizeof out->threads);
  CUresult r = d->cuModuleLoadData(&out->module, k->code);
  if (r != CUDA_SUCCESS)
    return kiln_device_fail(error, size,
                            "%s cannot load kernel '%s' (%s): its fatbin has sm_80 and sm_90a "
                            "code and PTX for newer GPUs, or sm_90a's alone where its matmuls "
                            "use wgmma (--cuda-wgmma)",
                            d->base.name, k->name, error_name(d, r, buffer));
  r = d->cuModuleGetFunction(&out->function, out->module, k->name);
  if (r != CUDA_SUCCESS)
    return kiln_device_fail(error, size, "kernel '%s' is not in its fatbin (%s)", k->name,
                            error_name(d, r, buffer));
  /* Shared memory past 48 KiB is dynamic, which a kernel must opt into. */
  out->shared_bytes = k->shared_bytes;
  if (k->shared_bytes) {
    r = d->cuFuncSetAttribute(out->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              (int)k->shared_bytes);
    if (r != CUDA_SUCCESS) {
      int most = 0;
      d->cuDeviceGetAttribute(&most, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                              d->device);
      return kiln_device_fail(error, size,
                              "kernel '%s' takes %u bytes of shared memory; %s gives a "
                              "workgroup at most %d (%s)",
                              k->name, k->shared_bytes, d->base.name, most,
                              error_name(d, r, buffer));
    }
  }
  return 0;
}

/* Managed memory, for what host code reads and writes between kernels. */
static int create_managed(kiln_device *d, kiln_region *r) {
  /* Managed memory beyond what the GPU has free can hang it: such a request
   * is out of memory here. */
  size_t free_bytes = 0, total_bytes = 0;
  if (d->cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS || r->bytes > free_bytes)
    return 1;
  CUdeviceptr memory = 0;
  if (d->cuMemAllocManaged(&memory, r->bytes ? r->bytes : 4, CU_MEM_ATTACH_GLOBAL) !=
      CUDA_SUCCESS)
    return 1;
  r->buffer = (void *)(uintptr_t)memory;
  r->mapped = (unsigned char *)(uintptr_t)memory;
  return 0;
}

/* Device memory (r->buffer); for launch parameters and inputs also pinned
 * host memory the host writes them to (r->mapped) and they are copied from.
 * Private memory is known by its device address. */
static int create_unmanaged(kiln_device *d, kiln_region *r) {
  CUdeviceptr memory = 0;
  if (d->cuMemAlloc(&memory, r->bytes ? r->bytes : 4) != CUDA_SUCCESS)
    return 1;
  r->buffer = (void *)(uintptr_t)memory;
  if (r->kind == KILN_REGION_PRIVATE) {
    r->mapped = (unsigned char *)(uintptr_t)memory;
    return 0;
  }
  void *staging = NULL;
  if (r->kind != KILN_REGION_CONSTANT &&
      d->cuMemAllocHost(&staging, r->bytes ? r->bytes : 4) != CUDA_SUCCESS) {
    d->cuMemFree(memory);
    return 1;
  }
  r->mapped = staging;
  return 0;
}

/* Page-locked host memory (r->mapped) and no device memory: the caller's
 * inputs and outputs, which copies reach by DMA. */
static int create_host(kiln_device *d, kiln_region *r) {
  void *memory = NULL;
  if (d->cuMemAllocHost(&memory, r->bytes ? r->bytes : 4) != CUDA_SUCCESS)
    return 1;
  r->mapped = memory;
  return 0;
}

/* Constants, launch parameters, inputs and what only kernels use live in
 * device memory, which never migrates: the host writes parameters and
 * inputs at each run, and in managed memory their pages would move to the
 * host at each write and back to the GPU by the kernels' faults or a
 * prefetch. */
static int create_region(void *device, kiln_region *r) {
  kiln_device *d = device;
  /* The caller's thread may not be the one that opened the device. */
  if (d->cuCtxSetCurrent(d->context) != CUDA_SUCCESS)
    return 1;
  switch (r->kind) {
  case KILN_REGION_BUFFER: return create_managed(d, r);
  case KILN_REGION_HOST: return create_host(d, r);
  default: return create_unmanaged(d, r);
  }
}

static void destroy_region(void *device, kiln_region *r) {
  kiln_device *d = device;
  d->cuCtxSetCurrent(d->context);
  if (r->kind != KILN_REGION_HOST)
    d->cuMemFree((CUdeviceptr)(uintptr_t)r->buffer);
  if (r->kind == KILN_REGION_PARAMS || r->kind == KILN_REGION_INPUT ||
      r->kind == KILN_REGION_HOST)
    d->cuMemFreeHost(r->mapped);
}

/* Queues the copy of `bytes` at `from` to `to` on the stream, ahead of
 * the launches after it (never inside a capture: launches are recorded and
 * captured at the wait); the next wait waits for it. */
static CUresult copy_to_device(kiln_device *d, CUdeviceptr to, const void *from, size_t bytes) {
  if (!bytes)
    return CUDA_SUCCESS;
  d->copies_pending = 1;
  return d->cuMemcpyHtoDAsync(to, from, bytes, d->stream);
}

static int upload(void *device, kiln_region *r, const void *data) {
  kiln_device *d = device;
  return copy_to_device(d, (CUdeviceptr)(uintptr_t)r->buffer, data, r->bytes) != CUDA_SUCCESS;
}

/* Copies `bytes` of the launch parameters staged at `offset` to the device,
 * on the stream ahead of the launches that read them. */
static int upload_params(kiln_device *d, size_t offset, size_t bytes, char *error, size_t size) {
  size_t used;
  kiln_region *r = kiln_regions_params(&d->base.regions, &used);
  if (!r)
    return 0;
  return check(d,
               copy_to_device(d, (CUdeviceptr)(uintptr_t)r->buffer + offset, r->mapped + offset,
                              bytes),
               "copying the launch parameters", error, size);
}

static int drain(void *device, char *error, size_t size) { return cuda_wait(device, error, size); }

static void cuda_close(kiln_device *d) {
  if (d->stream) {
    char ignored[64];
    cuda_wait(d, ignored, sizeof ignored);
  }
  if (d->context) {
    d->cuCtxSetCurrent(d->context);
    for (int i = 0; i < kGraphs; ++i) /* before the kernels and memory they use */
      forget(d, &d->cache[i]);
    for (size_t i = 0; i < d->num_events; ++i)
      d->cuEventDestroy(d->events[i]);
    kiln_regions_clear(&d->base.regions);
    for (uint32_t i = 0; i < d->num_kernels; ++i)
      if (d->kernels[i].module)
        d->cuModuleUnload(d->kernels[i].module);
    if (d->stream)
      d->cuStreamDestroy(d->stream);
    d->cuDevicePrimaryCtxRelease(d->device);
  }
  if (d->library)
    dlclose(d->library);
  free(d->pending.launches);
  free(d->events);
  free(d->touched.ranges);
  free(d->returning.ranges);
  free(d->kernels);
  free(d);
}

static kiln_device *cuda_open(const kiln_gpu_program *program, char *error, size_t size) {
  kiln_device *d =
      kiln_device_new(sizeof *d, "the CUDA GPU",
                      (kiln_region_api){NULL, create_region, destroy_region, drain, upload}, error,
                      size);
  if (!d)
    return NULL;
  d->base.regions.params_alignment = 16;
  const char *graphs = getenv("KILN_CUDA_GRAPHS");
  d->graphs = !(graphs && strcmp(graphs, "0") == 0);
  const char *prefetch = getenv("KILN_CUDA_PREFETCH");
  d->prefetch = !(prefetch && strcmp(prefetch, "0") == 0);
  const char *pinned = getenv("KILN_CUDA_PINNED");
  d->base.host_regions = !(pinned && strcmp(pinned, "0") == 0);
  d->base.read_by_copy = 1; /* device memory, or managed memory that would move */
  d->kernels = calloc(program->num_kernels + 1, sizeof *d->kernels);
  if (!d->kernels || load_driver(d, error, size) || pick_device(d, error, size)) {
    cuda_close(d);
    return NULL;
  }
  d->num_kernels = program->num_kernels;
  for (uint32_t i = 0; i < program->num_kernels; ++i)
    if (load_kernel(d, &program->kernels[i], &d->kernels[i], error, size)) {
      cuda_close(d);
      return NULL;
    }
  return d;
}

/* Queues on the stream the move of `ranges` to `to`, one bulk copy per
 * range rather than page faults where they are used, and empties them. */
static void prefetch_ranges(kiln_device *d, touched_ranges *ranges, CUmemLocation to) {
  for (size_t i = 0; i < ranges->count; ++i) /* a hint: failing costs the faults */
    d->cuMemPrefetchAsync(ranges->ranges[i].memory, ranges->ranges[i].bytes, to, 0, d->stream);
  ranges->count = 0;
}

/* Before the kernels: the memory the host touched since the last ones
 * (kiln_device_touched: a run's inputs and last outputs) to the GPU; the
 * rest (intermediates, constants) stays there. */
static void prefetch(kiln_device *d) {
  prefetch_ranges(d, &d->touched, (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, d->device});
}

static void add_range(kiln_device *d, touched_ranges *t, void *memory, size_t bytes) {
  if (!d->prefetch || !d->cuMemPrefetchAsync || !bytes)
    return;
  void *ranges = kiln_room_for_one(t->ranges, &t->capacity, t->count, sizeof *t->ranges, 8);
  if (!ranges)
    return; /* only a hint */
  t->ranges = ranges;
  t->ranges[t->count].memory = (CUdeviceptr)(uintptr_t)memory;
  t->ranges[t->count++].bytes = bytes;
}

/* Copies now, on the stream, ahead of the kernels; a failure is the next
 * wait's. */
static void copy_in_now(kiln_device *d, CUdeviceptr to, const void *from, size_t bytes) {
  d->cuCtxSetCurrent(d->context);
  CUresult copied = copy_to_device(d, to, from, bytes);
  if (copied != CUDA_SUCCESS && d->failed_copy == CUDA_SUCCESS)
    d->failed_copy = copied;
}

/* An input's bytes go to the GPU now; managed memory is prefetched before
 * the next kernels. */
static void cuda_touched(kiln_device *d, void *memory, size_t bytes) {
  kiln_region *r = kiln_regions_holding(&d->base.regions, memory, bytes);
  if (!r || r->kind != KILN_REGION_INPUT) {
    add_range(d, &d->touched, memory, bytes);
    return;
  }
  size_t offset = (size_t)((unsigned char *)memory - r->mapped);
  copy_in_now(d, (CUdeviceptr)(uintptr_t)r->buffer + offset, memory, bytes);
}

/* Straight from the caller's memory, pageable or not: the driver stages
 * pageable memory itself before this returns. */
static void cuda_copy_in(kiln_device *d, void *to, const void *from, size_t bytes) {
  copy_in_now(d, (CUdeviceptr)(uintptr_t)to, from, bytes);
}

/* Queues the copies of kiln_device_copy_out since the last wait, behind
 * the kernels, and empties the list; the first failure. */
static CUresult copy_outputs(kiln_device *d) {
  CUresult first = CUDA_SUCCESS;
  for (size_t i = 0; i < d->base.num_copies_out; ++i) {
    const kiln_copy_out *c = &d->base.copies_out[i];
    if (!c->bytes)
      continue;
    d->copies_pending = 1;
    CUresult r = d->cuMemcpyDtoHAsync(c->to, (CUdeviceptr)(uintptr_t)c->from, c->bytes, d->stream);
    if (first == CUDA_SUCCESS)
      first = r;
  }
  d->base.num_copies_out = 0;
  return first;
}

/* Only managed memory moves: the host's copy of an input is its own. */
static void cuda_will_touch(kiln_device *d, void *memory, size_t bytes) {
  kiln_region *r = kiln_regions_holding(&d->base.regions, memory, bytes);
  if (r && r->kind == KILN_REGION_BUFFER)
    add_range(d, &d->returning, memory, bytes);
}

/* Queues `l` on the stream (or into the graph being captured). */
static int launch_one(kiln_device *d, const launch *l, char *error, size_t size) {
  kernel *k = &d->kernels[l->kernel];
  CUdeviceptr pointers[kMaxBuffers];
  void *params[kMaxBuffers];
  for (uint32_t i = 0; i < l->num_pointers; ++i) {
    pointers[i] = l->pointers[i];
    params[i] = &pointers[i];
  }
  char what[64];
  snprintf(what, sizeof what, "launching kernel %u", l->kernel);
  return check(d,
               d->cuLaunchKernel(k->function, l->grid[0], l->grid[1], l->grid[2],
                                 k->threads[0], k->threads[1], k->threads[2], k->shared_bytes,
                                 d->stream,
                                 params, NULL),
               what, error, size);
}

static int launch_all(kiln_device *d, const segment *s, char *error, size_t size) {
  for (size_t i = 0; i < s->count; ++i)
    if (launch_one(d, &s->launches[i], error, size))
      return 1;
  return 0;
}

/* FNV-1a over a launch's 64-bit words up to its last pointer (the rest
 * is zeros): a run's launches are hashed as they are recorded. */
static uint64_t hash_launch(uint64_t h, const launch *l) {
  size_t words = (offsetof(launch, pointers) + l->num_pointers * sizeof(CUdeviceptr)) / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    memcpy(&word, (const unsigned char *)l + 8 * i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  return h;
}

static int record(segment *s, const launch *l) {
  launch *launches = kiln_room_for_one(s->launches, &s->capacity, s->count, sizeof *launches, 16);
  if (!launches)
    return 1;
  s->launches = launches;
  /* memcpy, not assignment: the padding too, for same_launches' memcmp. */
  memcpy(&s->launches[s->count++], l, sizeof *l);
  s->hash = hash_launch(s->count == 1 ? 14695981039346656037ull : s->hash, l);
  return 0;
}

static int same_launches(const segment *a, const segment *b) {
  return a->count == b->count && a->hash == b->hash &&
         memcmp(a->launches, b->launches, a->count * sizeof *a->launches) == 0;
}

static void forget(kiln_device *d, graph *g) {
  if (g->exec)
    d->cuGraphExecDestroy(g->exec);
  free(g->launches.launches);
  memset(g, 0, sizeof *g);
}

/* The kept segment with the pending launches, or NULL. */
static graph *find_graph(kiln_device *d) {
  for (int i = 0; i < kGraphs; ++i)
    if (d->cache[i].launches.count && same_launches(&d->cache[i].launches, &d->pending))
      return &d->cache[i];
  return NULL;
}

/* Keeps the pending launches (seen once), in a free slot or the least
 * recently run one's; the pending list starts empty. */
static void remember(kiln_device *d) {
  graph *slot = &d->cache[0];
  for (int i = 0; i < kGraphs; ++i) {
    if (!d->cache[i].launches.count) {
      slot = &d->cache[i];
      break;
    }
    if (d->cache[i].used < slot->used)
      slot = &d->cache[i];
  }
  forget(d, slot);
  slot->launches = d->pending;
  slot->used = d->clock;
  memset(&d->pending, 0, sizeof d->pending);
}

static int launch_graph(kiln_device *d, graph *g, char *error, size_t size) {
  return check(d, d->cuGraphLaunch(g->exec, d->stream), "launching the kernels' graph", error,
               size);
}

/* Captures the pending launches (a segment seen before) into g's graph
 * and launches it; a driver that cannot capture or instantiate gets them
 * one by one, now and from now on. */
static int capture(kiln_device *d, graph *g, char *error, size_t size) {
  if (d->cuStreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
    d->graphs = 0;
    return launch_all(d, &d->pending, error, size);
  }
  int failed = launch_all(d, &d->pending, error, size);
  CUgraph captured = NULL;
  CUresult ended = d->cuStreamEndCapture(d->stream, &captured);
  CUresult made = failed || ended != CUDA_SUCCESS
                      ? ended
                      : d->cuGraphInstantiate(&g->exec, captured, 0);
  if (captured)
    d->cuGraphDestroy(captured);
  if (failed)
    return 1;
  if (made != CUDA_SUCCESS) {
    g->exec = NULL;
    d->graphs = 0;
    return launch_all(d, &d->pending, error, size);
  }
  return launch_graph(d, g, error, size);
}

/* At least `count` events (cuEventCreate's: they time). */
static int reserve_events(kiln_device *d, size_t count, char *error, size_t size) {
  if (count <= d->num_events)
    return 0;
  CUevent *grown = realloc(d->events, count * sizeof *grown);
  if (!grown)
    return kiln_device_fail(error, size, "out of memory for %zu events", count);
  d->events = grown;
  for (; d->num_events < count; ++d->num_events)
    if (check(d, d->cuEventCreate(&d->events[d->num_events], 0), "cuEventCreate", error, size))
      return 1;
  return 0;
}

/* While profiling: the segment's launches one by one, each between two
 * events (not as a graph, whose kernels cannot be told apart). All go to
 * the stream at once, so the GPU runs them back to back, as it would the
 * graph, unless it catches up with the host: then a kernel's time holds
 * the wait for its launch (a few microseconds). */
static int launch_timed(kiln_device *d, const segment *s, char *error, size_t size) {
  if (reserve_events(d, 2 * s->count, error, size))
    return 1;
  d->submitted = kiln_profiler_now();
  for (size_t i = 0; i < s->count; ++i)
    if (check(d, d->cuEventRecord(d->events[2 * i], d->stream), "cuEventRecord", error, size) ||
        launch_one(d, &s->launches[i], error, size) ||
        check(d, d->cuEventRecord(d->events[2 * i + 1], d->stream), "cuEventRecord", error,
              size))
      return 1;
  return 0;
}

/* After the wait: each of the first `count` launches of `s` to the
 * profiler, placed on the host's clock from when they were submitted. */
static void report_times(kiln_device *d, const segment *s, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    float since = 0, took = 0;
    if (d->cuEventElapsedTime(&since, d->events[0], d->events[2 * i]) != CUDA_SUCCESS ||
        d->cuEventElapsedTime(&took, d->events[2 * i], d->events[2 * i + 1]) != CUDA_SUCCESS)
      continue;
    /* ms as floats, to the nearest ns */
    int64_t begin = d->submitted + (int64_t)((double)since * 1e6 + 0.5);
    kiln_profiler_device_kernel(d->profiler, s->launches[i].kernel, begin,
                                begin + (int64_t)((double)took * 1e6 + 0.5), s->launches[i].bytes);
  }
}

/* Runs the pending launches: as the graph of the same segment, captured
 * at its second sighting; else one by one; while profiling, one by one
 * and timed. The caller empties the list. */
static int run_pending(kiln_device *d, char *error, size_t size) {
  if (!d->pending.count)
    return 0;
  prefetch(d);
  size_t params;
  kiln_regions_params(&d->base.regions, &params);
  if (upload_params(d, 0, params, error, size))
    return 1;
  if (d->profiler)
    return launch_timed(d, &d->pending, error, size);
  ++d->clock;
  graph *g = find_graph(d);
  if (!g) {
    int failed = launch_all(d, &d->pending, error, size);
    remember(d);
    return failed;
  }
  g->used = d->clock;
  return g->exec ? launch_graph(d, g, error, size) : capture(d, g, error, size);
}

static int cuda_launch(kiln_device *d, uint32_t index, const int64_t grid[3],
                       const kiln_gpu_arg *args, char *error, size_t size) {
  kernel *k = &d->kernels[index];
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 0 || grid[i] > (i ? 65535 : 2147483647))
      return kiln_device_fail(error, size,
                              "kernel %u: a grid of %lld blocks on axis %d exceeds CUDA's limit",
                              index, (long long)grid[i], i);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return 0;
  if (k->num_buffers > kMaxBuffers)
    return kiln_device_fail(error, size, "kernel %u has %u buffers (at most %d)", index,
                            k->num_buffers, kMaxBuffers);
  /* One pointer parameter per buffer (bare pointers, as the kernels were
   * compiled): the address of its data, for a view its buffer's. */
  launch l;
  memset(&l, 0, sizeof l);
  l.kernel = index;
  l.num_pointers = k->num_buffers;
  for (int i = 0; i < 3; ++i)
    l.grid[i] = (unsigned)grid[i];
  if (check(d, d->cuCtxSetCurrent(d->context), "cuCtxSetCurrent", error, size))
    return 1;
  for (uint32_t i = 0; i < k->num_buffers; ++i) {
    kiln_region *r;
    size_t offset;
    if (kiln_regions_locate(&d->base.regions, d->base.name, index, i, &args[i], &r, &offset,
                            error, size))
      return 1;
    l.pointers[i] = (CUdeviceptr)(uintptr_t)r->buffer + offset;
    if (!(args[i].flags & KILN_GPU_ARG_PARAMS))
      l.bytes += args[i].bytes;
    /* Launched now: its parameters go now. Recorded: at the wait, with the
     * rest of the segment's. */
    if (!d->graphs && !d->profiler && (args[i].flags & KILN_GPU_ARG_PARAMS) &&
        upload_params(d, offset, args[i].bytes, error, size))
      return 1;
  }
  if (!d->graphs && !d->profiler) {
    if (!d->queued)
      prefetch(d);
    d->queued = 1;
    return launch_one(d, &l, error, size);
  }
  d->queued = 1;
  if (record(&d->pending, &l))
    return kiln_device_fail(error, size, "out of memory recording kernel %u's launch", index);
  return 0;
}

/* The first copy to the GPU that failed since the last wait, if one did. */
static int check_copies(kiln_device *d, char *error, size_t size) {
  CUresult failed = d->failed_copy;
  d->failed_copy = CUDA_SUCCESS;
  return check(d, failed, "copying an input to the GPU", error, size);
}

static int cuda_wait(kiln_device *d, char *error, size_t size) {
  int ran = d->queued, failed = 0;
  size_t timed = 0;
  d->cuCtxSetCurrent(d->context);
  if (ran) {
    d->queued = 0;
    failed = run_pending(d, error, size);
    timed = d->profiler && !failed ? d->pending.count : 0;
    /* Behind the kernels (after a graph's launch, outside its capture). */
    prefetch_ranges(d, &d->returning, (CUmemLocation){CU_MEM_LOCATION_TYPE_HOST, 0});
    d->pending.count = 0; /* its launches stay, for report_times */
    kiln_regions_drained(&d->base.regions);
  } else {
    /* No kernels moved it: the host may touch it again where it is. */
    d->touched.count = 0;
    d->returning.count = 0;
  }
  /* Not after failed kernels or a failed copy in: the caller's outputs
   * keep what they held. */
  CUresult copied = CUDA_SUCCESS;
  if (failed || d->failed_copy != CUDA_SUCCESS)
    d->base.num_copies_out = 0;
  else
    copied = copy_outputs(d);
  /* Copies too: their memory may be freed or rewritten next. */
  CUresult synced = ran || d->copies_pending ? d->cuStreamSynchronize(d->stream) : CUDA_SUCCESS;
  d->copies_pending = 0;
  if (synced == CUDA_SUCCESS)
    report_times(d, &d->pending, timed);
  failed |= check_copies(d, error, size);
  if (!failed)
    failed = check(d, copied, "copying an output from the GPU", error, size);
  return failed || check(d, synced, ran ? "the kernels" : "the copies", error, size);
}

/* Launches already queued one by one (KILN_CUDA_GRAPHS=0) go untimed. */
static int cuda_profile(kiln_device *d, kiln_profiler *profiler) {
  if (profiler && !(d->cuEventCreate && d->cuEventRecord && d->cuEventElapsedTime &&
                    d->cuEventDestroy))
    return 1;
  d->profiler = profiler;
  return 0;
}

const kiln_device_ops kiln_cuda_device = {.api = KILN_GPU_CUDA,
                                          .name = "CUDA",
                                          .open = cuda_open,
                                          .close = cuda_close,
                                          .launch = cuda_launch,
                                          .wait = cuda_wait,
                                          .touched = cuda_touched,
                                          .will_touch = cuda_will_touch,
                                          .profile = cuda_profile,
                                          .copy_in = cuda_copy_in};
