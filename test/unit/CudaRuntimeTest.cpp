//===- CudaRuntimeTest.cpp - cuda.c against a fake CUDA driver ------------===//
//
// There is no GPU here, so runtime/src/device/cuda.c runs against
// FakeCuda (libcuda.so.1 on host memory). The tests check what reaches the
// driver (modules, kernel parameters, grids and blocks), that launches run
// at kiln_device_wait, that constants and launch parameters reach kernels
// through device memory the host never touches (the fake protects it),
// that a segment of launches seen twice becomes a CUDA graph replayed from
// then on (and one of new sizes does not), the fallbacks (KILN_CUDA_GRAPHS=0, a driver that cannot capture), the
// messages of every refusal, and that closing releases everything.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"
#include "kiln/runtime.h"

extern "C" {
#include "device/device.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using fakecuda::Launch;
using fakecuda::state;

float *floats(uint64_t pointer) { return reinterpret_cast<float *>(pointer); }

class CudaRuntime : public ::testing::Test {
protected:
  void SetUp() override {
    state() = fakecuda::State();
    unsetenv("KILN_CUDA_GRAPHS");
    unsetenv("KILN_CUDA_DEVICE");
    unsetenv("KILN_CUDA_PREFETCH");
    // scale: a[i] *= s for the grid's blocks of threads; add_one: a[i] += 1.
    state().kernels["scale"] = {2, [](const Launch &l) {
                                  float s = *floats(l.pointers[1]);
                                  for (unsigned i = 0; i < l.grid[0] * l.block[0]; ++i)
                                    floats(l.pointers[0])[i] *= s;
                                }};
    state().kernels["add_one"] = {1, [](const Launch &l) {
                                    for (unsigned i = 0; i < l.grid[0] * l.block[0]; ++i)
                                      floats(l.pointers[0])[i] += 1;
                                  }};
    // add_n: a[i] += n, n a launch parameter (KILN_GPU_ARG_PARAMS).
    state().kernels["add_n"] = {2, [](const Launch &l) {
                                  float n = float(*reinterpret_cast<uint32_t *>(l.pointers[1]));
                                  for (unsigned i = 0; i < l.grid[0] * l.block[0]; ++i)
                                    floats(l.pointers[0])[i] += n;
                                }};
  }
  void TearDown() override {
    // Closing the device released what it made.
    const fakecuda::State &s = state();
    EXPECT_TRUE(s.memory.empty()) << s.memory.size() << " allocations leaked";
    EXPECT_EQ(s.modules, 0);
    EXPECT_EQ(s.graphs, 0);
    EXPECT_EQ(s.execs, 0);
    EXPECT_EQ(s.streams, 0);
    EXPECT_EQ(s.contexts, 0);
    EXPECT_EQ(s.events, 0);
    EXPECT_FALSE(s.capturing);
    EXPECT_EQ(s.callsDuringCapture, 0) << "a call a stream capture forbids";
  }

  static kiln_gpu_kernel kernel(const char *name, const char *image, uint32_t threads,
                                uint32_t buffers) {
    return {name, image, strlen(image), {threads, 1, 1}, buffers, 0, 0};
  }

  kiln_device *open(std::string &error) {
    kernels = {kernel("scale", "fatbin of scale", 4, 2), kernel("add_one", "fatbin of add_one", 4, 1),
               kernel("add_n", "fatbin of add_n", 4, 2)};
    program = {KILN_GPU_CUDA, static_cast<uint32_t>(kernels.size()), kernels.data(), nullptr};
    char message[512] = "";
    kiln_device *d = kiln_device_open(&program, message, sizeof message);
    error = message;
    return d;
  }

  /// 64 zeroed floats of device memory; NULL when out of memory.
  static float *zeros(kiln_device *d) {
    auto *a = static_cast<float *>(kiln_device_alloc(d, 64 * sizeof(float)));
    if (a)
      std::fill(a, a + 64, 0.0f);
    return a;
  }

  /// One run of a model: a[0..n) += 1, then *= 2, then += 1, over `blocks`
  /// blocks of 4 threads; waits.
  void run(kiln_device *d, float *a, int64_t blocks) {
    static const float two = 2; // a model's constant: at one address
    kiln_gpu_arg addArgs[] = {{a, 64 * sizeof(float), 0}};
    kiln_gpu_arg scaleArgs[] = {{a, 64 * sizeof(float), 0}, {&two, sizeof two, KILN_GPU_ARG_CONSTANT}};
    int64_t grid[3] = {blocks, 1, 1};
    char message[256];
    ASSERT_EQ(kiln_device_launch(d, 1, grid, addArgs, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_launch(d, 0, grid, scaleArgs, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_launch(d, 1, grid, addArgs, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  }

  /// One run of a model of two launches with parameters: a[0..4) += n, then
  /// += 2n; waits.
  void runAddN(kiln_device *d, float *a, uint32_t n) {
    uint32_t twice = 2 * n;
    kiln_gpu_arg first[] = {{a, 64 * sizeof(float), 0}, {&n, sizeof n, KILN_GPU_ARG_PARAMS}};
    kiln_gpu_arg second[] = {{a, 64 * sizeof(float), 0},
                             {&twice, sizeof twice, KILN_GPU_ARG_PARAMS}};
    int64_t grid[3] = {1, 1, 1};
    char message[256];
    ASSERT_EQ(kiln_device_launch(d, 2, grid, first, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_launch(d, 2, grid, second, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  }

  /// With KILN_CUDA_PREFETCH=0, a run after `announce` (kiln_device_touched
  /// or kiln_device_will_touch) of 64 floats prefetches nothing: pages move
  /// by faults.
  void expectNoPrefetchWithoutIt(void (*announce)(kiln_device *, void *, size_t)) {
    setenv("KILN_CUDA_PREFETCH", "0", 1);
    state().prefetched.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    float *a = zeros(d);
    announce(d, a, 64 * sizeof(float));
    run(d, a, 16);
    EXPECT_TRUE(state().prefetched.empty());
    kiln_device_close(d);
  }

  std::vector<kiln_gpu_kernel> kernels;
  kiln_gpu_program program;
};

TEST_F(CudaRuntime, RunsLaunchesInOrderAtWait) {
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  EXPECT_STREQ(kiln_device_name(d), "Fake GPU 0 (CUDA, sm_90)");
  EXPECT_EQ(state().modules, 3);
  EXPECT_EQ(state().streamFlags, 1u) << "not CU_STREAM_NON_BLOCKING";
  auto *a = static_cast<float *>(kiln_device_alloc(d, 64 * sizeof(float)));
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 64; ++i)
    a[i] = float(i);
  const float two = 2;
  kiln_gpu_arg args[] = {{a + 8, 8 * sizeof(float), 0}, {&two, sizeof two, KILN_GPU_ARG_CONSTANT}};
  int64_t grid[3] = {2, 1, 1};
  char message[256];
  ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
  EXPECT_TRUE(state().ran.empty()) << "a launch ran before kiln_device_wait";
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  EXPECT_EQ(a[7], 7.0f);
  EXPECT_EQ(a[8], 16.0f);
  EXPECT_EQ(a[15], 30.0f);
  EXPECT_EQ(a[16], 16.0f);

  // One launch: the view's address, the constant's copy on the device, the
  // grid, and the kernel's block.
  ASSERT_EQ(state().ran.size(), 1u);
  const Launch &l = state().ran[0];
  EXPECT_EQ(l.kernel, "scale");
  EXPECT_EQ(l.pointers[0], reinterpret_cast<uintptr_t>(a + 8));
  EXPECT_FALSE(state().onDevice(l.pointers[0])) << "the host's buffer is not managed memory";
  EXPECT_TRUE(state().onDevice(l.pointers[1])) << "the constant's copy is not device memory";
  ASSERT_EQ(state().copies.size(), 1u);
  EXPECT_EQ(state().copies[0].to, l.pointers[1]);
  EXPECT_EQ(state().copies[0].bytes, sizeof two);
  EXPECT_EQ(state().copies[0].ranBefore, 0u);
  EXPECT_EQ(l.grid[0], 2u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block[0], 4u);
  kiln_device_close(d); // frees `a` too
}

// A model's run is a segment of launches between two waits. The first
// time, its launches go one by one; the second, they are captured into a
// graph that runs them; from then on the graph runs them alone.
TEST_F(CudaRuntime, ReplaysARepeatedSegmentAsAGraph) {
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  float *a = zeros(d);
  ASSERT_NE(a, nullptr);
  run(d, a, 1);
  EXPECT_EQ(state().kernelLaunches, 3);
  EXPECT_EQ(state().graphsMade, 0);
  run(d, a, 1);
  EXPECT_EQ(state().kernelLaunches, 6);
  EXPECT_EQ(state().graphsMade, 1);
  EXPECT_EQ(state().graphLaunches, 1);
  for (int i = 0; i < 3; ++i)
    run(d, a, 1);
  EXPECT_EQ(state().kernelLaunches, 6) << "a replayed run launched kernels one by one";
  EXPECT_EQ(state().graphsMade, 1);
  EXPECT_EQ(state().graphLaunches, 4);
  // Five runs of x -> (x + 1) * 2 + 1 on the first 4 elements, in order.
  float x = 0;
  for (int i = 0; i < 5; ++i)
    x = (x + 1) * 2 + 1;
  EXPECT_EQ(a[0], x);
  EXPECT_EQ(a[3], x);
  EXPECT_EQ(a[4], 0.0f);
  ASSERT_EQ(state().ran.size(), 15u);
  EXPECT_EQ(state().ran[13].kernel, "scale");
  kiln_device_close(d);
}

// A replayed graph reads launch parameters staged anew at each run (a
// dynamic model's sizes): the same places, new contents.
TEST_F(CudaRuntime, ReplaysWithEachRunsParameters) {
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  float *a = zeros(d);
  ASSERT_NE(a, nullptr);
  for (uint32_t n = 1; n <= 4; ++n) {
    runAddN(d, a, n);
    EXPECT_EQ(a[0], float(3 * n * (n + 1) / 2)) << "run " << n;
  }
  EXPECT_EQ(state().graphsMade, 1);
  EXPECT_EQ(state().graphLaunches, 3);
  kiln_device_close(d);
}

// What the host never reads is device memory, which does not migrate: a
// constant, copied in once, ahead of the first kernel that reads it; and
// the launch parameters, written to pinned memory and copied over at each
// run ahead of their kernels (a segment's at once, before its graph runs;
// launched one by one, each launch's before it).
TEST_F(CudaRuntime, KeepsConstantsAndParametersInDeviceMemory) {
  for (const char *graphs : {"1", "0"}) {
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    state().copies.clear();
    state().ran.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    float *a = zeros(d);
    for (int i = 0; i < 3; ++i)
      run(d, a, 1);
    EXPECT_EQ(a[0], 21.0f) << "three runs of (a + 1) * 2 + 1: 3, 9, 21";
    ASSERT_EQ(state().copies.size(), 1u) << "graphs " << graphs;
    EXPECT_EQ(state().copies[0].bytes, sizeof(float));
    EXPECT_LE(state().copies[0].ranBefore, 1u) << "not ahead of kernel 1, the first reading it";
    EXPECT_EQ(state().copies[0].to, state().ran[1].pointers[1]);
    EXPECT_EQ(state().ran[7].pointers[1], state().ran[1].pointers[1]) << "copied again";

    state().copies.clear();
    for (uint32_t n = 1; n <= 3; ++n) {
      size_t before = state().ran.size();
      runAddN(d, a, n);
      const Launch &l = state().ran[before], &m = state().ran[before + 1];
      EXPECT_TRUE(state().onDevice(l.pointers[1]));
      EXPECT_EQ(m.pointers[1], l.pointers[1] + 16) << "parameters 16-byte aligned";
      if (strcmp(graphs, "1") == 0) {
        ASSERT_EQ(state().copies.size(), n) << "run " << n;
        EXPECT_EQ(state().copies.back().to, l.pointers[1]);
        EXPECT_EQ(state().copies.back().bytes, 20u) << "both launches' parameters";
        EXPECT_EQ(state().copies.back().ranBefore, before);
      } else {
        ASSERT_EQ(state().copies.size(), 2 * n) << "run " << n;
        const auto &c = state().copies;
        EXPECT_EQ(c[2 * n - 2].to, l.pointers[1]);
        EXPECT_EQ(c[2 * n - 2].bytes, 4u);
        EXPECT_EQ(c[2 * n - 2].ranBefore, before);
        EXPECT_EQ(c[2 * n - 1].to, m.pointers[1]);
        EXPECT_EQ(c[2 * n - 1].ranBefore, before + 1);
      }
    }
    EXPECT_EQ(a[0], 21.0f + 3 + 6 + 9) << "runs of + n + 2n for n = 1, 2, 3";
    kiln_device_close(d);
  }
}

// A run's input: the host writes it and says so (kiln_device_touched),
// which copies it to the GPU's own copy then, ahead of the kernels that
// read it there; KILN_CUDA_PREFETCH=0 changes nothing, as it is no hint.
// The host's copy does not move (kiln_device_will_touch prefetches
// nothing), and a failed copy fails the next wait.
TEST_F(CudaRuntime, CopiesInputsToTheGpu) {
  for (const char *prefetch : {"1", "0"}) {
    setenv("KILN_CUDA_PREFETCH", prefetch, 1);
    state().copies.clear();
    state().ran.clear();
    state().prefetched.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    float *a = zeros(d);
    std::fill(a, a + 64, 1.0f);
    auto *input = static_cast<float *>(kiln_device_alloc_input(d, 64 * sizeof(float)));
    ASSERT_NE(input, nullptr);
    EXPECT_FALSE(state().onDevice(reinterpret_cast<uintptr_t>(input)));
    for (int r = 0; r < 3; ++r) {
      std::fill(input, input + 64, float(r + 2));
      kiln_device_touched(d, input, 64 * sizeof(float));
      ASSERT_EQ(state().copies.size(), size_t(r + 1)) << "prefetch " << prefetch;
      EXPECT_EQ(state().copies.back().bytes, 64 * sizeof(float));
      EXPECT_EQ(state().copies.back().ranBefore, state().ran.size());
      kiln_device_will_touch(d, input, 64 * sizeof(float));
      // a *= input[0]: scale reads the GPU's copy.
      kiln_gpu_arg args[] = {{a, 64 * sizeof(float), 0}, {input, 64 * sizeof(float), 0}};
      int64_t grid[3] = {16, 1, 1};
      char message[256];
      ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
      ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
      EXPECT_EQ(state().ran.back().pointers[1], state().copies.back().to);
    }
    EXPECT_EQ(a[63], 24.0f) << "1 * 2 * 3 * 4";
    EXPECT_TRUE(state().prefetched.empty()) << "the host's copy of the input moved";

    state().copiesFail = true;
    kiln_device_touched(d, input, 64 * sizeof(float));
    state().copiesFail = false;
    char message[256];
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 1);
    EXPECT_STREQ(message, "Fake GPU 0 (CUDA, sm_90): copying an input to the GPU failed "
                          "(CUDA_ERROR_INVALID_VALUE)");
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 0) << "reported once";
    kiln_device_close(d);
  }
}

// Memory only kernels use (kiln_device_alloc_private: an input or output
// no host code touches) is device memory, known to the host by its device
// address. A copy in goes straight from the host memory given, ahead of
// the kernels; a copy out goes straight into the host memory given, behind
// the kernels (launched one by one, captured, or replayed as a graph), or
// at once at a wait with no kernels. A failed copy out fails the wait,
// once; after a failed copy in, nothing is copied out.
TEST_F(CudaRuntime, CopiesPrivateMemoryStraightFromAndToTheHost) {
  for (const char *graphs : {"1", "0"}) {
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    state().copies.clear();
    state().copiesBack.clear();
    state().ran.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    const size_t bytes = 64 * sizeof(float);
    void *a = kiln_device_alloc_private(d, bytes);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(state().onDevice(reinterpret_cast<uintptr_t>(a)));
    std::vector<float> in(64), out(64);
    char message[256];
    for (int r = 0; r < 3; ++r) {
      std::fill(in.begin(), in.end(), float(r));
      std::fill(out.begin(), out.end(), -1.0f);
      size_t before = state().ran.size();
      kiln_device_copy_in(d, a, in.data(), bytes);
      ASSERT_EQ(state().copies.size(), size_t(r + 1)) << "graphs " << graphs;
      EXPECT_EQ(state().copies.back().from, reinterpret_cast<uintptr_t>(in.data()));
      EXPECT_EQ(state().copies.back().to, reinterpret_cast<uintptr_t>(a));
      EXPECT_EQ(state().copies.back().ranBefore, before);
      kiln_gpu_arg args[] = {{a, bytes, 0}};
      int64_t grid[3] = {16, 1, 1};
      ASSERT_EQ(kiln_device_launch(d, 1, grid, args, message, sizeof message), 0) << message;
      ASSERT_EQ(kiln_device_copy_out(d, out.data(), a, bytes), 0);
      EXPECT_EQ(state().copiesBack.size(), size_t(r)) << "copied before the wait";
      ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
      ASSERT_EQ(state().copiesBack.size(), size_t(r + 1));
      EXPECT_EQ(state().copiesBack.back().to, reinterpret_cast<uintptr_t>(out.data()));
      EXPECT_EQ(state().copiesBack.back().from, reinterpret_cast<uintptr_t>(a));
      EXPECT_EQ(state().copiesBack.back().bytes, bytes);
      EXPECT_EQ(state().copiesBack.back().ranBefore, before + 1) << "not behind the kernel";
      EXPECT_EQ(out[63], float(r + 1)) << "run " << r;
    }
    // With no kernels queued, the wait copies.
    ASSERT_EQ(kiln_device_copy_out(d, out.data(), a, bytes), 0);
    ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
    EXPECT_EQ(state().copiesBack.size(), 4u);

    state().copiesFail = true;
    ASSERT_EQ(kiln_device_copy_out(d, out.data(), a, bytes), 0);
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 1);
    state().copiesFail = false;
    EXPECT_STREQ(message, "Fake GPU 0 (CUDA, sm_90): copying an output from the GPU failed "
                          "(CUDA_ERROR_INVALID_VALUE)");
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 0) << "reported once";

    // After a failed copy in, the wait fails and copies nothing out: the
    // caller's output keeps what it held.
    std::fill(out.begin(), out.end(), -1.0f);
    state().copiesFail = true;
    kiln_device_copy_in(d, a, in.data(), bytes);
    state().copiesFail = false;
    kiln_gpu_arg args[] = {{a, bytes, 0}};
    int64_t grid[3] = {16, 1, 1};
    ASSERT_EQ(kiln_device_launch(d, 1, grid, args, message, sizeof message), 0) << message;
    ASSERT_EQ(kiln_device_copy_out(d, out.data(), a, bytes), 0);
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 1);
    EXPECT_STREQ(message, "Fake GPU 0 (CUDA, sm_90): copying an input to the GPU failed "
                          "(CUDA_ERROR_INVALID_VALUE)");
    EXPECT_EQ(state().copiesBack.size(), 4u);
    EXPECT_EQ(out[0], -1.0f);
    kiln_device_free(d, a);
    EXPECT_TRUE(state().device.empty()) << "freed";
    kiln_device_close(d);
  }
}

// Segments of other sizes (a dynamic model's) are other segments: each
// becomes a graph at its own second run; a new one is launched one by one.
TEST_F(CudaRuntime, KeepsAGraphPerSegment) {
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  float *a = zeros(d);
  ASSERT_NE(a, nullptr);
  for (int64_t blocks : {1, 2, 1, 2, 1, 2, 3})
    run(d, a, blocks);
  EXPECT_EQ(state().graphsMade, 2);
  EXPECT_EQ(state().graphLaunches, 4);
  EXPECT_EQ(state().kernelLaunches, 3 * 5); // 1, 2, capture 1, capture 2, 3
  // x -> (x + 1) * 2 + 1: elements 0-3 ran 7 times, 4-7 four times, 8-11
  // once.
  EXPECT_EQ(a[0], 381.0f);
  EXPECT_EQ(a[4], 45.0f);
  EXPECT_EQ(a[8], 3.0f);
  EXPECT_EQ(a[12], 0.0f);
  kiln_device_close(d);
}

TEST_F(CudaRuntime, LaunchesAtOnceWithoutGraphs) {
  setenv("KILN_CUDA_GRAPHS", "0", 1);
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  float *a = zeros(d);
  ASSERT_NE(a, nullptr);
  kiln_gpu_arg args[] = {{a, 64 * sizeof(float), 0}};
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  ASSERT_EQ(kiln_device_launch(d, 1, grid, args, message, sizeof message), 0) << message;
  EXPECT_EQ(state().ran.size(), 1u) << "queued on the stream at once";
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  for (int i = 0; i < 3; ++i)
    run(d, a, 1);
  EXPECT_EQ(state().captures, 0);
  EXPECT_EQ(state().kernelLaunches, 10);
  EXPECT_EQ(a[0], 29.0f); // 1, then x -> (x + 1) * 2 + 1 three times
  kiln_device_close(d);
}

// A driver that cannot capture: the segment's launches go one by one, then
// and from then on, with the same results.
TEST_F(CudaRuntime, LaunchesOneByOneWhenCaptureFails) {
  state().canCapture = false;
  std::string error;
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  float *a = zeros(d);
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 4; ++i)
    run(d, a, 1);
  EXPECT_EQ(state().captures, 1);
  EXPECT_EQ(state().graphsMade, 0);
  EXPECT_EQ(state().kernelLaunches, 12);
  EXPECT_EQ(a[0], 45.0f); // 0 -> 3 -> 9 -> 21 -> 45
  kiln_device_close(d);
}

// What the host touched (a run's inputs and outputs) moves to the GPU
// before the next kernels, in bulk: once, and only that.
TEST_F(CudaRuntime, PrefetchesWhatTheHostTouched) {
  for (const char *graphs : {"1", "0"}) {
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    state().prefetched.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    float *a = zeros(d), *b = zeros(d);
    kiln_device_touched(d, a, 64 * sizeof(float));
    kiln_device_touched(d, b, 16 * sizeof(float));
    EXPECT_TRUE(state().prefetched.empty()) << "prefetched before the kernels were due";
    run(d, a, 16);
    ASSERT_EQ(state().prefetched.size(), 2u) << "graphs " << graphs;
    EXPECT_EQ(state().prefetched[0].memory, reinterpret_cast<uintptr_t>(a));
    EXPECT_EQ(state().prefetched[0].bytes, 64 * sizeof(float));
    EXPECT_EQ(state().prefetched[0].locationType, 1) << "not CU_MEM_LOCATION_TYPE_DEVICE";
    EXPECT_EQ(state().prefetched[0].device, 0);
    EXPECT_EQ(state().prefetched[1].memory, reinterpret_cast<uintptr_t>(b));
    run(d, a, 16); // nothing touched since
    EXPECT_EQ(state().prefetched.size(), 2u);
    EXPECT_EQ(a[0], 9.0f) << "((0 + 1) * 2 + 1 + 1) * 2 + 1";
    kiln_device_close(d);
  }
  // KILN_CUDA_PREFETCH=0: left to the kernels' page faults.
  expectNoPrefetchWithoutIt(kiln_device_touched);
}

// What the host will touch once the wait returns (a run's outputs, the
// next run's inputs) moves back to the host in bulk, behind the kernels:
// launched one by one, captured into a graph, or the graph replayed.
TEST_F(CudaRuntime, PrefetchesBackWhatTheHostWillTouch) {
  for (const char *graphs : {"1", "0"}) {
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    state().prefetched.clear();
    std::string error;
    kiln_device *d = open(error);
    ASSERT_NE(d, nullptr) << error;
    float *a = zeros(d), *b = zeros(d);
    for (size_t i = 0; i < 3; ++i) {
      size_t before = state().ran.size();
      kiln_device_will_touch(d, b, 16 * sizeof(float));
      EXPECT_EQ(state().prefetched.size(), i) << "prefetched before the kernels were due";
      run(d, a, 16);
      ASSERT_EQ(state().prefetched.size(), i + 1) << "graphs " << graphs << ", run " << i;
      const auto &p = state().prefetched.back();
      EXPECT_EQ(p.memory, reinterpret_cast<uintptr_t>(b));
      EXPECT_EQ(p.bytes, 16 * sizeof(float));
      EXPECT_EQ(p.locationType, 2) << "not CU_MEM_LOCATION_TYPE_HOST";
      EXPECT_EQ(p.ranBefore, before + 3) << "not behind the run's 3 kernels";
    }
    // A wait with no kernels since moves nothing: the memory is where the
    // host left it.
    kiln_device_will_touch(d, b, 16 * sizeof(float));
    char message[256];
    EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
    run(d, a, 16);
    EXPECT_EQ(state().prefetched.size(), 3u);
    kiln_device_close(d);
  }
  // KILN_CUDA_PREFETCH=0: left to the host's page faults.
  expectNoPrefetchWithoutIt(kiln_device_will_touch);
}

// A kernel whose shared memory passes 48 KiB (kiln.shared_bytes) opts into
// that much dynamic shared memory at load and gets it at each launch,
// captured into a graph too; one past what the GPU gives a workgroup is
// refused at open, with the numbers.
TEST_F(CudaRuntime, GivesKernelsTheirDynamicSharedMemory) {
  for (const char *graphs : {"1", "0"}) {
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    std::string error;
    kernels = {kernel("scale", "fatbin of scale", 4, 2), kernel("add_one", "fatbin of add_one", 4, 1),
               kernel("add_n", "fatbin of add_n", 4, 2)};
    kernels[1].shared_bytes = 65536;
    program = {KILN_GPU_CUDA, static_cast<uint32_t>(kernels.size()), kernels.data(), nullptr};
    char message[512] = "";
    kiln_device *d = kiln_device_open(&program, message, sizeof message);
    ASSERT_NE(d, nullptr) << message;
    float *a = zeros(d);
    for (int i = 0; i < 3; ++i) // launched, captured, replayed
      run(d, a, 16);
    ASSERT_EQ(state().ran.size(), 9u);
    for (const fakecuda::Launch &l : state().ran)
      EXPECT_EQ(l.sharedBytes, l.kernel == "add_one" ? 65536u : 0u) << l.kernel;
    EXPECT_EQ(a[0], 21.0f) << "three runs of (a + 1) * 2 + 1: 3, 9, 21";
    kiln_device_close(d);
    state().ran.clear();
  }
  kernels[1].shared_bytes = 232449;
  char message[512] = "";
  EXPECT_EQ(kiln_device_open(&program, message, sizeof message), nullptr);
  EXPECT_STREQ(message, "kernel 'add_one' takes 232449 bytes of shared memory; Fake GPU 0 "
                        "(CUDA, sm_90) gives a workgroup at most 232448 "
                        "(CUDA_ERROR_INVALID_VALUE)");
}

TEST_F(CudaRuntime, SaysWhatIsWrong) {
  std::string error;
  state().devices = 0;
  EXPECT_EQ(open(error), nullptr);
  EXPECT_EQ(error, "no CUDA GPU (the driver found none)");

  state() = fakecuda::State();
  state().kernels["scale"] = {2, nullptr};
  state().kernels["add_one"] = {1, nullptr};
  state().kernels["add_n"] = {2, nullptr};
  setenv("KILN_CUDA_DEVICE", "3", 1);
  EXPECT_EQ(open(error), nullptr);
  EXPECT_EQ(error, "KILN_CUDA_DEVICE=3 is not a GPU ordinal (0..0)");
  unsetenv("KILN_CUDA_DEVICE");

  state().managedAccess = false;
  EXPECT_EQ(open(error), nullptr);
  EXPECT_EQ(error, "Fake GPU 0 (CUDA, sm_90) has no concurrent managed memory access, which "
                   "kiln's CUDA models use");
  state().managedAccess = true;

  state().badImages.insert("fatbin of add_one");
  EXPECT_EQ(open(error), nullptr);
  EXPECT_EQ(error, "Fake GPU 0 (CUDA, sm_90) cannot load kernel 'add_one' "
                   "(CUDA_ERROR_INVALID_IMAGE): its fatbin has sm_80 and sm_90a code and PTX "
                   "for newer GPUs, or sm_90a's alone where its matmuls use wgmma "
                   "(--cuda-wgmma)");
  state().badImages.clear();

  state().kernels.erase("add_one");
  EXPECT_EQ(open(error), nullptr);
  EXPECT_EQ(error, "kernel 'add_one' is not in its fatbin (CUDA_ERROR_NOT_FOUND)");
  state().kernels["add_one"] = {1, nullptr};

  // Memory beyond what the GPU has free is out of memory, not a hang.
  kiln_device *d = open(error);
  ASSERT_NE(d, nullptr) << error;
  void *a = kiln_device_alloc(d, 256);
  ASSERT_NE(a, nullptr);
  state().freeBytes = 1024;
  EXPECT_EQ(kiln_device_alloc(d, 4096), nullptr);

  // So is a constant the device has no room for.
  static const float big[512] = {};
  kiln_gpu_arg args[] = {{a, 256, 0}, {big, sizeof big, KILN_GPU_ARG_CONSTANT}};
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  EXPECT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 1);
  EXPECT_STREQ(message, "kernel 0: buffer 1: out of Fake GPU 0 (CUDA, sm_90)'s memory for a "
                        "copy of the model's constant (2048 bytes)");
  // Or one the driver does not copy.
  state().freeBytes = 1 << 20;
  state().copiesFail = true;
  EXPECT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 1);
  state().copiesFail = false;
  EXPECT_STREQ(message, "kernel 0: buffer 1: copying the model's constant (2048 bytes) to Fake "
                        "GPU 0 (CUDA, sm_90) failed");
  EXPECT_TRUE(state().device.empty()) << "the failed copy's memory was kept";
  // Host memory that is no constant is no kernel's argument.
  float host[4];
  args[1] = {host, sizeof host, 0};
  EXPECT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 1);
  EXPECT_EQ(std::string(message).find("kernel 0: buffer 1 (16 bytes at 0x"), 0u) << message;
  kiln_device_close(d);
}

} // namespace
