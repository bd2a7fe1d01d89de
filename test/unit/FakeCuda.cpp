//===- FakeCuda.cpp - a CUDA driver for tests without a GPU ---------------===//
//
// See FakeCuda.h. The types are cuda.h's as cuda.c declares them: handles
// are pointers to the fake's objects, CUresult an int.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace fakecuda;

namespace {

enum : int {
  kSuccess = 0,
  kOutOfMemory = 2,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kNotFound = 500,
  kNotSupported = 801,
  kCaptureInvalidated = 901,
};

struct Module {
  std::string image;
};
struct Function {
  std::string name;
  Kernel kernel;
};
struct Graph {
  std::vector<Launch> launches;
};

void run(const Launch &launch) {
  State &s = state();
  s.ran.push_back(launch);
  auto kernel = s.kernels.find(launch.kernel);
  if (kernel != s.kernels.end() && kernel->second.run)
    kernel->second.run(launch);
}

} // namespace

State &fakecuda::state() {
  static State s;
  return s;
}

extern "C" {

int cuInit(unsigned) { return kSuccess; }

int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
  case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; return kSuccess;
  case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
  case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; return kSuccess;
  default: return 1;
  }
}

int cuDeviceGetCount(int *count) {
  *count = state().devices;
  return kSuccess;
}

int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= state().devices)
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

int cuDeviceGetName(char *name, int length, int device) {
  snprintf(name, length, "Fake GPU %d", device);
  return kSuccess;
}

int cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 75: *value = 9; break; // compute capability major
  case 76: *value = 0; break; // minor
  case 89: *value = state().managedAccess; break;
  default: *value = 0;
  }
  return kSuccess;
}

int cuDevicePrimaryCtxRetain(void **context, int) {
  ++state().contexts;
  *context = &state();
  return kSuccess;
}

int cuDevicePrimaryCtxRelease_v2(int) {
  --state().contexts;
  return kSuccess;
}

int cuCtxSetCurrent(void *) { return kSuccess; }

int cuModuleLoadData(Module **module, const void *image) {
  std::string text(static_cast<const char *>(image));
  if (state().badImages.count(text))
    return kInvalidImage;
  *module = new Module{text};
  ++state().modules;
  return kSuccess;
}

int cuModuleUnload(Module *module) {
  delete module;
  --state().modules;
  return kSuccess;
}

int cuModuleGetFunction(Function **function, Module *, const char *name) {
  auto kernel = state().kernels.find(name);
  if (kernel == state().kernels.end())
    return kNotFound;
  // Leaked on purpose, as the driver keeps functions with their module.
  static std::vector<std::unique_ptr<Function>> functions;
  functions.push_back(std::make_unique<Function>(Function{name, kernel->second}));
  *function = functions.back().get();
  return kSuccess;
}

int cuMemAllocManaged(uint64_t *pointer, size_t bytes, unsigned) {
  void *memory = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return kOutOfMemory;
  state().memory.insert(memory);
  *pointer = reinterpret_cast<uintptr_t>(memory);
  return kSuccess;
}

int cuMemFree_v2(uint64_t pointer) {
  void *memory = reinterpret_cast<void *>(pointer);
  state().memory.erase(memory);
  free(memory);
  return kSuccess;
}

int cuMemGetInfo_v2(size_t *free, size_t *total) {
  *free = state().freeBytes;
  *total = 2 * state().freeBytes;
  return kSuccess;
}

int cuStreamCreate(void **stream, unsigned) {
  ++state().streams;
  *stream = &state().streams;
  return kSuccess;
}

int cuStreamDestroy_v2(void *) {
  --state().streams;
  return kSuccess;
}

int cuStreamSynchronize(void *) { return state().capturing ? kCaptureInvalidated : kSuccess; }

int cuLaunchKernel(Function *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned sharedBytes, void *, void **params,
                   void **extra) {
  State &s = state();
  ++s.kernelLaunches;
  if (sharedBytes || extra)
    return kNotSupported; // cuda.c passes neither
  Launch launch{function->name, {gx, gy, gz}, {bx, by, bz}, {}};
  for (unsigned i = 0; i < function->kernel.buffers; ++i)
    launch.pointers.push_back(*static_cast<uint64_t *>(params[i]));
  if (s.capturing)
    s.captured.push_back(launch);
  else
    run(launch);
  return kSuccess;
}

int cuStreamBeginCapture_v2(void *, int mode) {
  State &s = state();
  ++s.captures;
  if (!s.canCapture || s.capturing || mode != 1 /* thread-local */)
    return kNotSupported;
  s.capturing = true;
  s.captured.clear();
  return kSuccess;
}

int cuStreamEndCapture(void *, Graph **graph) {
  State &s = state();
  if (!s.capturing)
    return kCaptureInvalidated;
  s.capturing = false;
  *graph = new Graph{s.captured};
  ++s.graphs;
  return kSuccess;
}

int cuGraphInstantiateWithFlags(Graph **exec, Graph *graph, unsigned long long) {
  *exec = new Graph{graph->launches};
  ++state().execs;
  ++state().graphsMade;
  return kSuccess;
}

int cuGraphLaunch(Graph *exec, void *) {
  ++state().graphLaunches;
  for (const Launch &launch : exec->launches)
    run(launch);
  return kSuccess;
}

int cuGraphExecDestroy(Graph *exec) {
  delete exec;
  --state().execs;
  return kSuccess;
}

int cuGraphDestroy(Graph *graph) {
  delete graph;
  --state().graphs;
  return kSuccess;
}

} // extern "C"
