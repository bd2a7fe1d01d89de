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

#include <csignal>

#include <sys/mman.h>

using namespace fakecuda;

namespace {

enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kNotFound = 500,
  kNotSupported = 801,
  kCaptureInvalidated = 901,
};

} // namespace

// The driver's handles, named as cuda.h names them: UBSan checks that a
// function is called through a pointer of its own type, and cuda.c's
// pointers take these (and CUresult = int, CUdevice = int, CUdeviceptr =
// unsigned long long).
struct CUctx_st {};
struct CUstream_st {};
struct CUmod_st {
  std::string image;
};
struct CUfunc_st {
  std::string name;
  Kernel kernel;
  int dynamicShared = 0; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};
struct CUgraph_st {
  std::vector<Launch> launches;
};
struct CUgraphExec_st {
  std::vector<Launch> launches;
};
struct CUevent_st {
  double atMs = -1; // the GPU's clock when recorded; -1: never
};

namespace {

/// Whether a stream capture is active, counting the call as one a capture
/// forbids (all but launches and ending it).
bool duringCapture() {
  if (state().capturing)
    ++state().callsDuringCapture;
  return state().capturing;
}

constexpr size_t kPage = 4096;

size_t pages(size_t bytes) { return (bytes + kPage - 1) / kPage; }

/// KILN_FAKE_CUDA_ANY_KERNEL=1: a compiled model's host side alone, timed
/// (scripts/bench/cuda_host.sh): any kernel exists and does nothing, and
/// no memory is protected, which would cost the run system calls.
bool anyKernel() {
  static const bool any = [] {
    const char *value = getenv("KILN_FAKE_CUDA_ANY_KERNEL");
    return value && strcmp(value, "1") == 0;
  }();
  return any;
}

void protect(uint64_t address, size_t bytes, bool allowed) {
  if (anyKernel())
    return;
  if (mprotect(reinterpret_cast<void *>(address), bytes,
               allowed ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
    perror("FakeCuda: mprotect"); // a page left protected would fault forever
    abort();
  }
}

/// Lets the host touch device and managed memory (while a kernel or a copy
/// runs), or stops it where a page is not the host's.
void deviceAccess(bool allowed) {
  for (auto [address, bytes] : state().device)
    protect(address, bytes, allowed);
  for (auto &[address, where] : state().managed)
    for (size_t first = 0, last; first < where.size(); first = last) { // runs of one kind
      bool open = allowed || where[first] == State::kHost;
      for (last = first + 1; last < where.size() && (allowed || where[last] == State::kHost) == open;)
        ++last;
      protect(address + first * kPage, (last - first) * kPage, open);
    }
}

/// The managed allocation holding `address`, or null.
std::pair<const uint64_t, std::vector<State::Where>> *managedAt(uint64_t address) {
  auto next = state().managed.upper_bound(address);
  if (next == state().managed.begin())
    return nullptr;
  auto &found = *std::prev(next);
  return address < found.first + found.second.size() * kPage ? &found : nullptr;
}

/// Moves pages [first, last) of `m` to `to`, counting those a fault moved.
void move(std::pair<const uint64_t, std::vector<State::Where>> &m, size_t first, size_t last,
          State::Where to, int *faults) {
  for (size_t i = first; i < last && i < m.second.size(); ++i) {
    if (faults && m.second[i] != State::kNowhere && m.second[i] != to)
      ++*faults;
    m.second[i] = to;
    protect(m.first + i * kPage, kPage, to == State::kHost);
  }
}

/// Whole pages for `bytes` of device or managed memory at `*pointer`, which
/// the host may not touch yet (unless any kernel goes).
bool mapPages(unsigned long long *pointer, size_t bytes) {
  void *memory = mmap(nullptr, pages(bytes) * kPage, anyKernel() ? PROT_READ | PROT_WRITE : PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return false;
  state().memory.insert(memory);
  *pointer = reinterpret_cast<uintptr_t>(memory);
  return true;
}

/// SIGSEGV's handler before the fake's (the sanitizers', or the default).
struct sigaction previousHandler;

/// The host touched a page it may not: a managed one on the GPU moves to the
/// host; anything else is the crash it would be without the fake, reported
/// by the handler before it. (The fake is single-threaded: kiln's runtime
/// touches device memory from the running thread only.)
void onHostFault(int, siginfo_t *info, void *) {
  auto *m = managedAt(reinterpret_cast<uintptr_t>(info->si_addr));
  if (!m) {
    sigaction(SIGSEGV, &previousHandler, nullptr); // the access runs again under it
    return;
  }
  size_t page = (reinterpret_cast<uintptr_t>(info->si_addr) - m->first) / kPage;
  move(*m, page, page + 1, State::kHost, &state().hostFaults);
}

void run(const Launch &launch) {
  State &s = state();
  auto ms = s.kernelMs.find(launch.kernel);
  s.clockMs += ms != s.kernelMs.end() ? ms->second : anyKernel() ? 0.01 : 0;
  if (anyKernel())
    return; // kept, the launches of many runs would be what is timed
  s.ran.push_back(launch);
  for (uint64_t pointer : launch.pointers)
    if (auto *m = managedAt(pointer))
      move(*m, 0, m->second.size(), State::kGpu, &s.gpuFaults);
  auto kernel = s.kernels.find(launch.kernel);
  if (kernel != s.kernels.end() && kernel->second.run) {
    deviceAccess(true);
    kernel->second.run(launch);
    deviceAccess(false);
  }
}

} // namespace

State &fakecuda::state() {
  static State s;
  return s;
}

/// Whether `pointer` is in one of `ranges` (address: bytes).
static bool inRanges(const std::map<uint64_t, size_t> &ranges, uint64_t pointer) {
  auto next = ranges.upper_bound(pointer);
  return next != ranges.begin() && pointer < std::prev(next)->first + std::prev(next)->second;
}

bool State::onDevice(uint64_t pointer) const { return inRanges(device, pointer); }
bool State::pinned(uint64_t pointer) const { return inRanges(host, pointer); }

extern "C" {

int cuInit(unsigned) { return kSuccess; }

int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
  case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; return kSuccess;
  case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
  case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; return kSuccess;
  case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
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
  case 97: *value = state().sharedOptIn; break; // per block, opted into
  default: *value = 0;
  }
  return kSuccess;
}

int cuDevicePrimaryCtxRetain(CUctx_st **context, int) {
  static CUctx_st primary;
  ++state().contexts;
  *context = &primary;
  return kSuccess;
}

int cuDevicePrimaryCtxRelease_v2(int) {
  --state().contexts;
  return kSuccess;
}

int cuCtxSetCurrent(CUctx_st *) { return duringCapture() ? kCaptureInvalidated : kSuccess; }

int cuModuleLoadData(CUmod_st **module, const void *image) {
  std::string text(static_cast<const char *>(image));
  if (state().badImages.count(text))
    return kInvalidImage;
  *module = new CUmod_st{text};
  ++state().modules;
  return kSuccess;
}

int cuModuleUnload(CUmod_st *module) {
  delete module;
  --state().modules;
  return kSuccess;
}

int cuModuleGetFunction(CUfunc_st **function, CUmod_st *, const char *name) {
  auto kernel = state().kernels.find(name);
  if (kernel == state().kernels.end() && anyKernel())
    kernel = state().kernels.emplace(name, Kernel{0, nullptr}).first;
  if (kernel == state().kernels.end())
    return kNotFound;
  // Leaked on purpose, as the driver keeps functions with their module.
  static std::vector<std::unique_ptr<CUfunc_st>> functions;
  functions.push_back(std::make_unique<CUfunc_st>(CUfunc_st{name, kernel->second}));
  *function = functions.back().get();
  return kSuccess;
}

int cuFuncSetAttribute(CUfunc_st *function, int attribute, int value) {
  if (duringCapture())
    return kCaptureInvalidated;
  if (attribute != 8) // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: all cuda.c sets
    return kNotSupported;
  if (value < 0 || value > state().sharedOptIn)
    return kInvalidValue;
  function->dynamicShared = value;
  return kSuccess;
}

int cuMemAllocManaged(unsigned long long *pointer, size_t bytes, unsigned) {
  if (duringCapture())
    return kCaptureInvalidated;
  static bool handling = false;
  if (!handling) {
    struct sigaction action = {};
    action.sa_sigaction = onHostFault;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, &previousHandler);
    handling = true;
  }
  if (!mapPages(pointer, bytes))
    return kOutOfMemory;
  state().managed[*pointer].assign(pages(bytes), State::kNowhere);
  return kSuccess;
}

int cuMemAlloc_v2(unsigned long long *pointer, size_t bytes) {
  if (duringCapture())
    return kCaptureInvalidated;
  if (bytes == 0 || bytes > state().freeBytes)
    return kOutOfMemory;
  if (!mapPages(pointer, bytes))
    return kOutOfMemory;
  state().device[*pointer] = pages(bytes) * kPage;
  return kSuccess;
}

int cuMemFree_v2(unsigned long long pointer) {
  void *memory = reinterpret_cast<void *>(pointer);
  state().memory.erase(memory);
  auto device = state().device.find(pointer);
  auto managed = state().managed.find(pointer);
  if (device != state().device.end()) {
    munmap(memory, device->second);
    state().device.erase(device);
  } else if (managed != state().managed.end()) {
    munmap(memory, managed->second.size() * kPage);
    state().managed.erase(managed);
  } else {
    return kInvalidValue;
  }
  return kSuccess;
}

int cuMemAllocHost_v2(void **pointer, size_t bytes) {
  if (duringCapture())
    return kCaptureInvalidated;
  *pointer = aligned_alloc(kPage, pages(bytes) * kPage);
  if (!*pointer)
    return kOutOfMemory;
  state().memory.insert(*pointer);
  state().host[reinterpret_cast<uint64_t>(*pointer)] = bytes;
  return kSuccess;
}

int cuMemFreeHost(void *pointer) {
  state().memory.erase(pointer);
  state().host.erase(reinterpret_cast<uint64_t>(pointer));
  free(pointer);
  return kSuccess;
}

int cuMemcpyHtoDAsync_v2(unsigned long long to, const void *from, size_t bytes, CUstream_st *) {
  State &s = state();
  if (duringCapture())
    return kCaptureInvalidated; // cuda.c copies outside captures
  if (!s.onDevice(to) || (bytes && !s.onDevice(to + bytes - 1)) || s.copiesFail)
    return kInvalidValue;
  s.copies.push_back({to, reinterpret_cast<uintptr_t>(from), bytes, s.ran.size()});
  deviceAccess(true);
  memcpy(reinterpret_cast<void *>(to), from, bytes);
  deviceAccess(false);
  return kSuccess;
}

/// Copies from managed memory read it on the GPU, as a kernel does: its
/// pages there stay, those on the host move by fault.
int cuMemcpyDtoHAsync_v2(void *to, unsigned long long from, size_t bytes, CUstream_st *) {
  State &s = state();
  if (duringCapture())
    return kCaptureInvalidated; // cuda.c copies outside captures
  auto *managed = managedAt(from);
  bool fits = managed ? !bytes || managedAt(from + bytes - 1) == managed
                      : s.onDevice(from) && (!bytes || s.onDevice(from + bytes - 1));
  if (!fits || s.copiesFail)
    return kInvalidValue;
  s.copiesBack.push_back({reinterpret_cast<uintptr_t>(to), from, bytes, s.ran.size()});
  if (managed && bytes)
    move(*managed, (from - managed->first) / kPage, (from + bytes - 1 - managed->first) / kPage + 1,
         State::kGpu, &s.gpuFaults);
  deviceAccess(true);
  memcpy(to, reinterpret_cast<const void *>(from), bytes);
  deviceAccess(false);
  return kSuccess;
}

int cuMemGetInfo_v2(size_t *free, size_t *total) {
  if (duringCapture())
    return kCaptureInvalidated;
  *free = state().freeBytes;
  *total = 2 * state().freeBytes;
  return kSuccess;
}

struct CUmemLocation {
  int type, id;
};

int cuMemPrefetchAsync_v2(unsigned long long memory, size_t bytes, CUmemLocation location,
                          unsigned flags, CUstream_st *) {
  if (duringCapture())
    return kCaptureInvalidated;
  if (flags)
    return kNotSupported;
  state().prefetched.push_back({memory, bytes, location.type, location.id, state().ran.size()});
  if (auto *m = managedAt(memory))
    move(*m, (memory - m->first) / kPage, pages(memory - m->first + bytes),
         location.type == 1 /* CU_MEM_LOCATION_TYPE_DEVICE */ ? State::kGpu : State::kHost,
         nullptr);
  return kSuccess;
}

int cuStreamCreate(CUstream_st **stream, unsigned flags) {
  static CUstream_st stream0;
  ++state().streams;
  state().streamFlags = flags;
  *stream = &stream0;
  return kSuccess;
}

int cuStreamDestroy_v2(CUstream_st *) {
  --state().streams;
  return kSuccess;
}

int cuStreamSynchronize(CUstream_st *) { return duringCapture() ? kCaptureInvalidated : kSuccess; }

int cuLaunchKernel(CUfunc_st *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned sharedBytes, CUstream_st *, void **params,
                   void **extra) {
  State &s = state();
  ++s.kernelLaunches;
  if (extra)
    return kNotSupported; // cuda.c passes none
  if (sharedBytes > unsigned(function->dynamicShared))
    return kInvalidValue; // more than the kernel opted into
  Launch launch{function->name, {gx, gy, gz}, {bx, by, bz}, sharedBytes, {}};
  for (unsigned i = 0; i < function->kernel.buffers; ++i)
    launch.pointers.push_back(*static_cast<unsigned long long *>(params[i]));
  if (s.capturing)
    s.captured.push_back(launch);
  else
    run(launch);
  return kSuccess;
}

int cuStreamBeginCapture_v2(CUstream_st *, int mode) {
  State &s = state();
  ++s.captures;
  if (!s.canCapture || s.capturing || mode != 1 /* thread-local */)
    return kNotSupported;
  s.capturing = true;
  s.captured.clear();
  return kSuccess;
}

int cuStreamEndCapture(CUstream_st *, CUgraph_st **graph) {
  State &s = state();
  if (!s.capturing)
    return kCaptureInvalidated;
  s.capturing = false;
  *graph = new CUgraph_st{s.captured};
  ++s.graphs;
  return kSuccess;
}

int cuGraphInstantiateWithFlags(CUgraphExec_st **exec, CUgraph_st *graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->launches};
  ++state().execs;
  ++state().graphsMade;
  return kSuccess;
}

int cuGraphLaunch(CUgraphExec_st *exec, CUstream_st *) {
  if (duringCapture())
    return kCaptureInvalidated;
  ++state().graphLaunches;
  for (const Launch &launch : exec->launches)
    run(launch);
  return kSuccess;
}

int cuGraphExecDestroy(CUgraphExec_st *exec) {
  delete exec;
  --state().execs;
  return kSuccess;
}

int cuEventCreate(CUevent_st **event, unsigned flags) {
  if (duringCapture())
    return kCaptureInvalidated;
  if (flags) // cuda.c's events time: CU_EVENT_DEFAULT
    return kNotSupported;
  *event = new CUevent_st;
  ++state().events;
  return kSuccess;
}

int cuEventRecord(CUevent_st *event, CUstream_st *) {
  if (duringCapture())
    return kCaptureInvalidated; // cuda.c times launches outside graphs
  event->atMs = state().clockMs;
  return kSuccess;
}

int cuEventElapsedTime(float *ms, CUevent_st *start, CUevent_st *end) {
  if (start->atMs < 0 || end->atMs < 0)
    return kInvalidValue;
  *ms = float(end->atMs - start->atMs);
  return kSuccess;
}

int cuEventDestroy_v2(CUevent_st *event) {
  delete event;
  --state().events;
  return kSuccess;
}

int cuGraphDestroy(CUgraph_st *graph) {
  delete graph;
  --state().graphs;
  return kSuccess;
}

} // extern "C"
