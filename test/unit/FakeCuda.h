//===- FakeCuda.h - a CUDA driver for tests without a GPU -------*- C++ -*-===//
//
// libcuda.so.1 for CudaRuntimeTest.cpp: the driver API entry points
// runtime/src/device/cuda.c looks up, on host memory. A launch "runs" the
// C++ function registered under its kernel's name, with the pointers it
// was given; stream capture records launches into a graph, which runs them
// at cuGraphLaunch. Nothing runs asynchronously: cuStreamSynchronize has
// nothing to wait for. Device memory (cuMemAlloc) is host pages that only
// kernels and copies may touch: the rest of the time they are protected,
// so the host reading or writing them crashes the test, as dereferencing
// a device pointer on the host would. Managed memory's pages move as a
// GPU's do, and the moves by fault are counted: a kernel takes to the GPU
// every page of each managed allocation it is given; the host takes back
// each page it touches (those on the GPU are protected; a SIGSEGV handler
// moves them); a prefetch moves a range in bulk, without faults. Copies
// (cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2) are memcpy, recorded with
// both addresses; a copy from managed memory reads it on the GPU. The test executable links this library, so cuda.c's
// dlopen("libcuda.so.1") finds the same one, and its state.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_FAKECUDA_H
#define KILN_TEST_UNIT_FAKECUDA_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fakecuda {

struct Launch {
  std::string kernel;
  unsigned grid[3], block[3];
  unsigned sharedBytes; // dynamic shared memory
  std::vector<uint64_t> pointers; // the kernel's pointer parameters
};

struct Kernel {
  unsigned buffers; // its pointer parameters
  std::function<void(const Launch &)> run;
};

struct State {
  // What the fake GPU is and does.
  int devices = 1;
  bool managedAccess = true;       // CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
  bool canCapture = true;          // cuStreamBeginCapture succeeds
  uint64_t freeBytes = 1ull << 30; // cuMemGetInfo
  int sharedOptIn = 232448;        // a workgroup's shared memory at most (an H100's)
  bool copiesFail = false;         // cuMemcpyHtoDAsync_v2 and cuMemcpyDtoHAsync_v2 fail
  // The GPU's clock, in ms: each kernel that runs moves it on by its time
  // here (KILN_FAKE_CUDA_ANY_KERNEL=1: 0.01 ms each), events read it.
  std::map<std::string, double> kernelMs;
  double clockMs = 0;
  std::set<std::string> badImages; // module images cuModuleLoadData refuses
  std::map<std::string, Kernel> kernels;

  // What reached it.
  std::vector<Launch> ran; // kernels that ran, in order
  int kernelLaunches = 0;  // cuLaunchKernel calls, captured or not
  int captures = 0;        // cuStreamBeginCapture calls
  int graphsMade = 0;      // cuGraphInstantiate calls that succeeded
  int graphLaunches = 0;
  bool capturing = false;
  std::vector<Launch> captured;
  int callsDuringCapture = 0; // other than launches: what a capture forbids
  unsigned streamFlags = 0;
  struct Prefetch {
    uint64_t memory;
    size_t bytes;
    int locationType, device;
    size_t ranBefore; // kernels that had run when it was queued
  };
  std::vector<Prefetch> prefetched; // cuMemPrefetchAsync_v2 calls
  struct Copy {
    uint64_t to, from; // device memory and host memory, or the reverse
    size_t bytes;
    size_t ranBefore; // kernels that had run when it was queued
  };
  std::vector<Copy> copies;     // cuMemcpyHtoDAsync_v2 calls
  std::vector<Copy> copiesBack; // cuMemcpyDtoHAsync_v2 calls (from device or managed memory)

  /// Whether `pointer` is in device memory (cuMemAlloc's).
  bool onDevice(uint64_t pointer) const;
  /// Whether `pointer` is in page-locked host memory (cuMemAllocHost's).
  bool pinned(uint64_t pointer) const;

  // Pages of managed memory moved by a fault: to the GPU, as a kernel
  // found them on the host; to the host, as it found them on the GPU.
  int gpuFaults = 0, hostFaults = 0;
  enum Where : char { kNowhere, kHost, kGpu }; // where a page is
  std::map<uint64_t, std::vector<Where>> managed; // address: its 4 KiB pages

  // What is alive: all zero once the runtime has closed the device.
  std::set<void *> memory; // managed, device and pinned host memory
  std::map<uint64_t, size_t> device; // device memory: address, bytes
  std::map<uint64_t, size_t> host;   // page-locked host memory: address, bytes
  int modules = 0, graphs = 0, execs = 0, streams = 0, contexts = 0, events = 0;
};

/// The fake's state; tests reset it with `state() = State()`.
State &state();

} // namespace fakecuda

#endif
