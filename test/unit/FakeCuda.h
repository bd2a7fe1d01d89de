//===- FakeCuda.h - a CUDA driver for tests without a GPU -------*- C++ -*-===//
//
// libcuda.so.1 for CudaRuntimeTest.cpp: the driver API entry points
// runtime/src/device/cuda.c looks up, on host memory. A launch "runs" the
// C++ function registered under its kernel's name, with the pointers it
// was given; stream capture records launches into a graph, which runs them
// at cuGraphLaunch. Nothing runs asynchronously: cuStreamSynchronize has
// nothing to wait for. The test executable links this library, so cuda.c's
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

  // What is alive: all zero once the runtime has closed the device.
  std::set<void *> memory;
  int modules = 0, graphs = 0, execs = 0, streams = 0, contexts = 0;
};

/// The fake's state; tests reset it with `state() = State()`.
State &state();

} // namespace fakecuda

#endif
