//===- CudaModelTest.cpp - a GPU model's runs on a fake CUDA driver -------===//
//
// runtime.c and cuda.c together, on FakeCuda (see FakeCuda.h), which moves
// managed memory's pages as a GPU does and counts the moves by fault. Once
// a static model's kernels run as a graph, its runs should move no page by
// fault: the inputs go to the GPU and the outputs come back in bulk, and
// nothing else the kernels use is written by the host at each run. Each
// such page would cost the run a fault on the GPU (tens of microseconds)
// and one on the host. Not so before: the arena's chunk headers (written at
// each allocation) sat in its first page, and the launch parameters in
// managed memory. Where the compiler says only kernels use an input or
// output, it is device memory, copied straight from and to the caller's
// buffer: no managed memory of the run is the host's at all.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"
#include "kiln/runtime.h"

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using fakecuda::Launch;
using fakecuda::state;

constexpr int64_t kCount = 4096; // 16 KiB of floats: four pages
constexpr uint64_t kBytes = kCount * sizeof(float);
const int64_t kShape[] = {kCount};
const kiln_tensor_info kInputs[] = {{"x", KILN_FLOAT32, 1, kShape, nullptr}};
const kiln_tensor_info kOutputs[] = {{"y", KILN_FLOAT32, 1, kShape, nullptr}};
const float kScale = 3; // a constant of the model

float *floats(uint64_t pointer) { return reinterpret_cast<float *>(pointer); }

/// What kiln-compile's host code does for y = x * 3 + 1 on two kernels:
/// the product in the arena, the 1 a launch parameter.
void entry(void **buffers, int64_t *) {
  void *product = _mlir_memref_to_llvm_aligned_alloc(64, kBytes);
  kiln_gpu_arg scale[] = {{buffers[0], kBytes, 0},
                          {product, kBytes, 0},
                          {&kScale, sizeof kScale, KILN_GPU_ARG_CONSTANT}};
  kiln_gpu_launch(0, kCount / 256, 1, 1, scale);
  uint32_t one = 1;
  kiln_gpu_arg add[] = {
      {product, kBytes, 0}, {buffers[1], kBytes, 0}, {&one, sizeof one, KILN_GPU_ARG_PARAMS}};
  kiln_gpu_launch(1, kCount / 256, 1, 1, add);
}

const kiln_gpu_kernel kKernels[] = {
    {"scale", "fatbin of scale", 15, {256, 1, 1}, 3, 0, 0},
    {"add_n", "fatbin of add_n", 15, {256, 1, 1}, 3, 0, 0},
};
// As if host code of the model could touch x and y: mapped memory.
const kiln_gpu_program kProgram = {KILN_GPU_CUDA, 2, kKernels, /*buffer_flags=*/nullptr};
const kiln_model_info kModel = {KILN_ABI_VERSION, 0, "scale", 1, 1, kInputs, kOutputs, entry,
                                /*arena_bytes=*/kBytes, &kProgram, /*weights_bytes=*/0,
                                /*profile=*/nullptr, /*external_weights=*/nullptr,
                                /*num_variants=*/0, /*variants=*/nullptr};
// As kiln-compile says of this entry: only kernels touch x and y.
const uint8_t kKernelsOnly[] = {KILN_GPU_BUFFER_KERNELS_ONLY, KILN_GPU_BUFFER_KERNELS_ONLY};
const kiln_gpu_program kKernelsOnlyProgram = {KILN_GPU_CUDA, 2, kKernels, kKernelsOnly};
const kiln_model_info kKernelsOnlyModel = {
    KILN_ABI_VERSION, 0, "scale", 1, 1, kInputs, kOutputs, entry,
    /*arena_bytes=*/kBytes, &kKernelsOnlyProgram, /*weights_bytes=*/0,
    /*profile=*/nullptr, /*external_weights=*/nullptr,
    /*num_variants=*/0, /*variants=*/nullptr};

// y = x * 3 + 1 again, for x of any length (a multiple of 256), as the
// host code of a model with dynamic dimensions does it: the product and y
// in the arena, y's address and length written to the output's slots.
const int64_t kAnyLength[] = {KILN_DYNAMIC};
const kiln_tensor_info kDynamicInputs[] = {{"x", KILN_FLOAT32, 1, kAnyLength, nullptr}};
const kiln_tensor_info kDynamicOutputs[] = {{"y", KILN_FLOAT32, 1, kAnyLength, nullptr}};

void dynamicEntry(void **buffers, int64_t *shapes) {
  int64_t n = shapes[0];
  uint64_t bytes = uint64_t(n) * sizeof(float);
  void *product = _mlir_memref_to_llvm_aligned_alloc(64, bytes);
  void *y = _mlir_memref_to_llvm_aligned_alloc(64, bytes);
  kiln_gpu_arg scale[] = {
      {buffers[0], bytes, 0}, {product, bytes, 0}, {&kScale, sizeof kScale, KILN_GPU_ARG_CONSTANT}};
  kiln_gpu_launch(0, n / 256, 1, 1, scale);
  uint32_t one = 1;
  kiln_gpu_arg add[] = {{product, bytes, 0}, {y, bytes, 0}, {&one, sizeof one, KILN_GPU_ARG_PARAMS}};
  kiln_gpu_launch(1, n / 256, 1, 1, add);
  buffers[1] = y;
  shapes[1] = n;
}

const kiln_model_info kDynamicModel = {KILN_ABI_VERSION, 0, "scale", 1, 1, kDynamicInputs,
                                       kDynamicOutputs, dynamicEntry,
                                       /*arena_bytes=*/2 * kBytes, &kProgram,
                                       /*weights_bytes=*/0, /*profile=*/nullptr,
                                       /*external_weights=*/nullptr,
                                       /*num_variants=*/0, /*variants=*/nullptr};

class CudaModel : public ::testing::Test {
protected:
  void SetUp() override {
    state() = fakecuda::State();
    unsetenv("KILN_CUDA_PREFETCH");
    // scale: out = in * c; add_n: out = in + n, over the grid's threads.
    state().kernels["scale"] = {3, [](const Launch &l) {
                                  for (unsigned i = 0; i < l.grid[0] * l.block[0]; ++i)
                                    floats(l.pointers[1])[i] =
                                        floats(l.pointers[0])[i] * *floats(l.pointers[2]);
                                }};
    state().kernels["add_n"] = {3, [](const Launch &l) {
                                  float n = float(*reinterpret_cast<uint32_t *>(l.pointers[2]));
                                  for (unsigned i = 0; i < l.grid[0] * l.block[0]; ++i)
                                    floats(l.pointers[1])[i] = floats(l.pointers[0])[i] + n;
                                }};
  }
  void TearDown() override {
    unsetenv("KILN_CUDA_PREFETCH");
    EXPECT_TRUE(state().memory.empty()) << state().memory.size() << " allocations leaked";
    EXPECT_EQ(state().events, 0);
  }

  /// Runs the model `runs` times on x = 0, 1, 2, ...; y = 3x + 1 each time.
  static void run(kiln_model *m, int runs) {
    std::vector<float> x(kCount), y(kCount);
    run(m, runs, x, y);
  }
  static void run(kiln_model *m, int runs, std::vector<float> &x, std::vector<float> &y) {
    for (int64_t i = 0; i < kCount; ++i)
      x[i] = float(i);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    for (int r = 0; r < runs; ++r) {
      std::fill(y.begin(), y.end(), 0.0f);
      ASSERT_EQ(kiln_model_run(m, in, out), 0) << kiln_model_error(m);
      EXPECT_EQ(y[0], 1.0f);
      EXPECT_EQ(y[kCount - 1], 3.0f * float(kCount - 1) + 1);
    }
  }
};

TEST_F(CudaModel, SteadyRunsMoveNoPageByFault) {
  kiln_model *m = kiln_model_create(&kModel);
  ASSERT_NE(m, nullptr);
  ASSERT_STREQ(kiln_model_device(m), "Fake GPU 0 (CUDA, sm_90)") << kiln_model_error(m);
  run(m, 2); // launched one by one, then captured into a graph
  EXPECT_EQ(state().graphsMade, 1);
  state().gpuFaults = state().hostFaults = 0;
  state().copies.clear();
  size_t ran = state().ran.size();
  run(m, 3);
  EXPECT_EQ(state().graphLaunches, 4);
  EXPECT_EQ(state().gpuFaults, 0) << "pages a kernel found on the host";
  EXPECT_EQ(state().hostFaults, 0) << "pages the host found on the GPU";
  // Each run copies its input to the GPU, then the launches' parameters,
  // ahead of its two kernels, which read the input there.
  ASSERT_EQ(state().copies.size(), 6u);
  for (size_t r = 0; r < 3; ++r) {
    const auto &input = state().copies[2 * r], &params = state().copies[2 * r + 1];
    EXPECT_EQ(input.bytes, kBytes);
    EXPECT_EQ(input.ranBefore, ran + 2 * r);
    EXPECT_EQ(input.to, state().ran[ran + 2 * r].pointers[0]);
    EXPECT_EQ(params.bytes, 4u);
    EXPECT_EQ(params.ranBefore, ran + 2 * r);
  }
  kiln_model_destroy(m);
}

// Without the prefetches, the outputs move by faults, a page at a time: the
// counts above are the fake's, not zero by construction. The inputs do not
// move: the GPU has its own copy, to which each run copies them.
TEST_F(CudaModel, CountsTheFaultsOfUnprefetchedPages) {
  setenv("KILN_CUDA_PREFETCH", "0", 1);
  kiln_model *m = kiln_model_create(&kModel);
  ASSERT_NE(m, nullptr);
  run(m, 2);
  state().gpuFaults = state().hostFaults = 0;
  run(m, 3);
  // Each run: the output's 4 pages to the GPU and back.
  EXPECT_EQ(state().gpuFaults, 3 * 4);
  EXPECT_EQ(state().hostFaults, 3 * 4);
  kiln_model_destroy(m);
}

// The buffers only kernels use are device memory: each run's input is
// copied there straight from the caller's buffer, and the output straight
// back into the caller's, behind the kernels. Nothing of the run is managed
// memory but the arena, which the host does not touch between runs: no
// page moves by a fault, with or without the prefetches.
TEST_F(CudaModel, CopiesKernelsOnlyBuffersStraightFromAndToTheCaller) {
  for (const char *prefetch : {"1", "0"}) {
    setenv("KILN_CUDA_PREFETCH", prefetch, 1);
    kiln_model *m = kiln_model_create(&kKernelsOnlyModel);
    ASSERT_NE(m, nullptr);
    std::vector<float> x(kCount), y(kCount);
    run(m, 2, x, y);
    state().gpuFaults = state().hostFaults = 0;
    state().copies.clear();
    state().copiesBack.clear();
    size_t ran = state().ran.size();
    run(m, 3, x, y);
    EXPECT_EQ(state().gpuFaults, 0) << "prefetch " << prefetch;
    EXPECT_EQ(state().hostFaults, 0) << "prefetch " << prefetch;
    // Per run: x in, the launch parameters, two kernels, y out.
    ASSERT_EQ(state().copies.size(), 6u);
    ASSERT_EQ(state().copiesBack.size(), 3u);
    for (size_t r = 0; r < 3; ++r) {
      const auto &input = state().copies[2 * r], &output = state().copiesBack[r];
      const Launch &scale = state().ran[ran + 2 * r], &add = state().ran[ran + 2 * r + 1];
      EXPECT_EQ(input.from, reinterpret_cast<uintptr_t>(x.data()));
      EXPECT_EQ(input.to, scale.pointers[0]);
      EXPECT_EQ(input.ranBefore, ran + 2 * r);
      EXPECT_EQ(output.from, add.pointers[1]);
      EXPECT_TRUE(state().onDevice(output.from)) << "y is managed memory";
      EXPECT_EQ(output.to, reinterpret_cast<uintptr_t>(y.data()));
      EXPECT_EQ(output.bytes, kBytes);
      EXPECT_EQ(output.ranBefore, ran + 2 * r + 2) << "not behind the run's kernels";
    }
    kiln_model_destroy(m);
  }
  // KILN_GPU_DIRECT_COPIES=0: staged as if host code touched them.
  setenv("KILN_GPU_DIRECT_COPIES", "0", 1);
  kiln_model *m = kiln_model_create(&kKernelsOnlyModel);
  unsetenv("KILN_GPU_DIRECT_COPIES");
  ASSERT_NE(m, nullptr);
  state().copiesBack.clear();
  run(m, 2);
  EXPECT_TRUE(state().copiesBack.empty());
  kiln_model_destroy(m);
}

// kiln_model_alloc_host gives page-locked memory on CUDA: the copies of a
// run go straight between it and device memory (by DMA on a GPU; from
// pageable memory the driver would stage them). kiln_model_run_tensors'
// outputs of a static model are such memory too. KILN_CUDA_PINNED=0 gives
// the C library's memory instead. What the caller does not free goes with
// the instance (TearDown: nothing leaked).
TEST_F(CudaModel, CopiesFromAndToPageLockedMemoryOfTheInstance) {
  kiln_model *m = kiln_model_create(&kKernelsOnlyModel);
  ASSERT_NE(m, nullptr);
  auto *x = static_cast<float *>(kiln_model_alloc_host(m, kBytes));
  auto *y = static_cast<float *>(kiln_model_alloc_host(m, kBytes));
  ASSERT_TRUE(x && y);
  EXPECT_TRUE(state().pinned(reinterpret_cast<uintptr_t>(x)));
  EXPECT_TRUE(state().pinned(reinterpret_cast<uintptr_t>(y + kCount - 1)));
  for (int64_t i = 0; i < kCount; ++i)
    x[i] = float(i);
  const void *in[] = {x};
  void *out[] = {y};
  state().copies.clear();
  state().copiesBack.clear();
  ASSERT_EQ(kiln_model_run(m, in, out), 0) << kiln_model_error(m);
  EXPECT_EQ(y[kCount - 1], 3.0f * float(kCount - 1) + 1);
  ASSERT_EQ(state().copiesBack.size(), 1u);
  EXPECT_EQ(state().copies[0].from, reinterpret_cast<uintptr_t>(x));
  EXPECT_EQ(state().copiesBack[0].to, reinterpret_cast<uintptr_t>(y));

  kiln_tensor input = {x, KILN_FLOAT32, 1, kShape}, output = {};
  ASSERT_EQ(kiln_model_run_tensors(m, &input, &output), 0) << kiln_model_error(m);
  EXPECT_TRUE(state().pinned(reinterpret_cast<uintptr_t>(output.data)));
  EXPECT_EQ(state().copiesBack.back().to, reinterpret_cast<uintptr_t>(output.data));
  EXPECT_EQ(static_cast<float *>(output.data)[1], 4.0f);

  kiln_model_free_host(m, x);
  EXPECT_FALSE(state().pinned(reinterpret_cast<uintptr_t>(x)));
  kiln_model_free_host(m, nullptr); // as free(NULL)
  kiln_model_destroy(m);            // y too

  setenv("KILN_CUDA_PINNED", "0", 1);
  m = kiln_model_create(&kKernelsOnlyModel);
  unsetenv("KILN_CUDA_PINNED");
  ASSERT_NE(m, nullptr);
  void *plain = kiln_model_alloc_host(m, kBytes);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(state().pinned(reinterpret_cast<uintptr_t>(plain)));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plain) % 64, 0u);
  run(m, 1);
  kiln_model_destroy(m);
}

// A dynamic model's outputs are where its host code left them: on CUDA,
// the arena's managed memory, which the host reading in place would move
// to the host and the next run back to the GPU. Each is copied behind the
// kernels into page-locked memory of the instance instead, which the
// caller gets until the next run: kept for the next runs, and grown for a
// longer output. No page moves by a fault.
TEST_F(CudaModel, CopiesADynamicModelsOutputsToPageLockedMemory) {
  std::vector<float> x(2 * kCount);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  int64_t length = 0;
  kiln_tensor input = {x.data(), KILN_FLOAT32, 1, &length}, y = {};
  auto runOn = [&](kiln_model *m, int64_t n) {
    length = n;
    y = {};
    ASSERT_EQ(kiln_model_run_tensors(m, &input, &y), 0) << kiln_model_error(m);
    ASSERT_EQ(y.rank, 1);
    ASSERT_EQ(y.shape[0], n);
    EXPECT_EQ(static_cast<float *>(y.data)[n - 1], 3.0f * float(n - 1) + 1);
  };
  kiln_model *m = kiln_model_create(&kDynamicModel);
  ASSERT_NE(m, nullptr);
  runOn(m, kCount);
  runOn(m, kCount);
  state().gpuFaults = state().hostFaults = 0;
  state().copiesBack.clear();
  size_t ran = state().ran.size();
  runOn(m, kCount);
  EXPECT_EQ(state().gpuFaults, 0) << "pages a kernel found on the host";
  EXPECT_EQ(state().hostFaults, 0) << "pages the host found on the GPU";
  ASSERT_EQ(state().copiesBack.size(), 1u);
  const auto &copy = state().copiesBack[0];
  EXPECT_EQ(copy.from, state().ran[ran + 1].pointers[1]) << "not from add_n's output";
  EXPECT_EQ(copy.to, reinterpret_cast<uintptr_t>(y.data));
  EXPECT_EQ(copy.bytes, kBytes);
  EXPECT_EQ(copy.ranBefore, ran + 2) << "not behind the run's kernels";
  EXPECT_TRUE(state().pinned(copy.to));
  void *first = y.data;
  kiln_model_free_host(m, first); // the instance's own: left alone
  EXPECT_TRUE(state().pinned(reinterpret_cast<uintptr_t>(first)));

  runOn(m, 2 * kCount);
  EXPECT_EQ(state().copiesBack.back().bytes, 2 * kBytes);
  EXPECT_TRUE(state().pinned(reinterpret_cast<uintptr_t>(y.data) + 2 * kBytes - 1));
  void *longer = y.data;
  runOn(m, kCount);
  EXPECT_EQ(y.data, longer) << "the longer output's memory serves a shorter one";
  kiln_model_destroy(m); // and frees it (TearDown: nothing leaked)

  // KILN_GPU_DIRECT_COPIES=0: read in place, its pages moved to the host in
  // bulk behind the kernels and back ahead of the next run's.
  setenv("KILN_GPU_DIRECT_COPIES", "0", 1);
  m = kiln_model_create(&kDynamicModel);
  unsetenv("KILN_GPU_DIRECT_COPIES");
  ASSERT_NE(m, nullptr);
  runOn(m, kCount);
  runOn(m, kCount);
  state().gpuFaults = state().hostFaults = 0;
  state().copiesBack.clear();
  ran = state().ran.size();
  runOn(m, kCount);
  EXPECT_TRUE(state().copiesBack.empty());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(y.data), state().ran[ran + 1].pointers[1]);
  EXPECT_EQ(state().gpuFaults, 0);
  EXPECT_EQ(state().hostFaults, 0);
  kiln_model_destroy(m);
}

// A GPU model is profiled without --profile: while profiling, the device
// launches each kernel between two events, one by one rather than as the
// graph, and hands their times to the profiler at the wait. Here the fake
// GPU's clock says scale takes 0.25 ms and add_n 0.5 ms; the trace has
// them on the GPU's own track. Once profiling stops, the graph is back.
TEST_F(CudaModel, ProfilesKernelsOnTheGpu) {
  state().kernelMs = {{"scale", 0.25}, {"add_n", 0.5}};
  kiln_model *m = kiln_model_create(&kModel);
  ASSERT_NE(m, nullptr);
  run(m, 2);
  int graphLaunches = state().graphLaunches;
  ASSERT_EQ(kiln_model_profile_start(m), 0) << kiln_model_error(m);
  run(m, 3);
  kiln_model_profile_stop(m);
  EXPECT_EQ(state().graphLaunches, graphLaunches) << "a profiled run replayed the graph";

  kiln_profile_summary summary;
  ASSERT_EQ(kiln_model_profile_summary(m, &summary), 0) << kiln_model_error(m);
  EXPECT_EQ(summary.runs, 3u);
  EXPECT_EQ(summary.num_kernels, 2u);
  EXPECT_GE(summary.total_ms, 0.0);
  const char *names[] = {"scale", "add_n"};
  const double ms[] = {0.25, 0.5};
  // Per run, the bytes of each launch's buffers: x, the product and the
  // constant; the product and y (not the parameters).
  const uint64_t bytes[] = {2 * kBytes + sizeof kScale, 2 * kBytes};
  for (uint32_t k = 0; k < 2; ++k) {
    kiln_profile_entry entry;
    ASSERT_EQ(kiln_model_profile_kernel(m, k, &entry), 0) << kiln_model_error(m);
    EXPECT_STREQ(entry.name, names[k]);
    EXPECT_EQ(entry.calls, 3u);
    EXPECT_NEAR(entry.total_ms, 3 * ms[k], 1e-5);
    EXPECT_EQ(entry.flops, 0u) << "unknown";
    EXPECT_EQ(entry.bytes, bytes[k]);
  }

  std::string path = ::testing::TempDir() + "/cuda-profile-trace.json";
  ASSERT_EQ(kiln_model_profile_write_trace(m, path.c_str()), 0) << kiln_model_error(m);
  std::stringstream trace;
  trace << std::ifstream(path).rdbuf();
  std::string text = trace.str();
  EXPECT_NE(text.find("\"args\": {\"name\": \"GPU\"}"), std::string::npos) << text;
  size_t kernels = 0;
  for (size_t at = text.find("\"gpu kernel\""); at != std::string::npos;
       at = text.find("\"gpu kernel\"", at + 1))
    ++kernels;
  EXPECT_EQ(kernels, 6u);

  run(m, 1);
  EXPECT_EQ(state().graphLaunches, graphLaunches + 1) << "no graph once profiling stopped";
  kiln_model_destroy(m);
}

} // namespace
