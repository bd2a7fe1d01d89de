//===- RuntimeTest.cpp - unit tests of the C runtime ----------------------===//
#include "kiln/runtime.h"

extern "C" {
#include "npy.h"
#include "weights.h"
void *_mlir_memref_to_llvm_alloc(size_t size);
void memrefCopy(int64_t elemSize, void *src, void *dst);
}

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <vector>

namespace {

// A fake compiled model: y = x * 2 + (a 1 KiB scratch buffer from the arena),
// with the descriptor layout kiln-compile emits.
const int64_t kShape[] = {2, 3};
const kiln_tensor_info kInputs[] = {{"x", KILN_FLOAT32, 2, kShape, nullptr}};
const kiln_tensor_info kOutputs[] = {{"y", KILN_FLOAT32, 2, kShape, nullptr}};
std::vector<void *> scratchSeen;

void doubleEntry(void **buffers, int64_t *) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *y = static_cast<float *>(buffers[1]);
  auto *scratch = static_cast<float *>(_mlir_memref_to_llvm_alloc(1024));
  scratchSeen.push_back(scratch);
  for (int i = 0; i < 6; ++i)
    scratch[i] = x[i] * 2;
  for (int i = 0; i < 6; ++i)
    y[i] = scratch[i];
}

const kiln_model_info kModel = {KILN_ABI_VERSION, 0, "double", 1, 1, kInputs, kOutputs,
                                doubleEntry, /*arena_bytes=*/0, /*gpu=*/nullptr, /*weights_bytes=*/0, /*profile=*/nullptr, /*external_weights=*/nullptr, /*num_variants=*/0, /*variants=*/nullptr};

TEST(Runtime, RunsAndReusesOneArena) {
  kiln_model *m = kiln_model_create(&kModel);
  ASSERT_NE(m, nullptr);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  scratchSeen.clear();
  for (int run = 0; run < 3; ++run)
    ASSERT_EQ(kiln_model_run(m, in, out), 0);
  EXPECT_FLOAT_EQ(y[5], 12.0f);
  // Steady state: every run gets the same arena block, 64-byte aligned.
  EXPECT_EQ(scratchSeen[1], scratchSeen[2]);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(scratchSeen[2]) % 64, 0u);
  EXPECT_EQ(kiln_model_arena_bytes(m), 1024u);
  kiln_model_destroy(m);
}

// The same model with its arena planned at compile time: the instance holds
// the block from its creation, and the first run already uses it.
const kiln_model_info kPlannedModel = {KILN_ABI_VERSION, 0, "planned", 1, 1, kInputs, kOutputs,
                                       doubleEntry, 1024, /*gpu=*/nullptr, /*weights_bytes=*/0, /*profile=*/nullptr, /*external_weights=*/nullptr, /*num_variants=*/0, /*variants=*/nullptr};

TEST(Runtime, AllocatesThePlannedArenaAtCreation) {
  kiln_model *m = kiln_model_create(&kPlannedModel);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(kiln_model_arena_bytes(m), 1024u);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  scratchSeen.clear();
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(kiln_model_run(m, in, out), 0);
  EXPECT_FLOAT_EQ(y[5], 12.0f);
  EXPECT_EQ(scratchSeen[0], scratchSeen[1]);
  EXPECT_EQ(kiln_model_arena_bytes(m), 1024u);
  kiln_model_destroy(m);
}

// A fake model whose generated check fails when x[0] is negative, after it
// has taken arena memory (as a guard after a computation would).
void checkedEntry(void **buffers, int64_t *) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *y = static_cast<float *>(buffers[1]);
  _mlir_memref_to_llvm_alloc(256);
  if (x[0] < 0)
    kiln_check_failed("x[0] must not be negative");
  y[0] = x[0];
}

const kiln_model_info kCheckedModel = {KILN_ABI_VERSION, 0, "checked", 1, 1, kInputs,
                                       kOutputs, checkedEntry, /*arena_bytes=*/0, /*gpu=*/nullptr, /*weights_bytes=*/0, /*profile=*/nullptr, /*external_weights=*/nullptr, /*num_variants=*/0, /*variants=*/nullptr};

TEST(Runtime, FailedCheckEndsTheRunWithItsMessage) {
  kiln_model *m = kiln_model_create(&kCheckedModel);
  ASSERT_NE(m, nullptr);
  float good[6] = {1}, bad[6] = {-1}, y[6] = {};
  void *out[] = {y};
  const void *badIn[] = {bad};
  EXPECT_EQ(kiln_model_run(m, badIn, out), 1);
  EXPECT_STREQ(kiln_model_error(m), "run-time check failed: x[0] must not be negative");
  EXPECT_EQ(y[0], 0.0f);
  // The instance stays usable: the next run succeeds and clears the error.
  const void *goodIn[] = {good};
  EXPECT_EQ(kiln_model_run(m, goodIn, out), 0);
  EXPECT_STREQ(kiln_model_error(m), "");
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(kiln_model_run(m, badIn, out), 1);
  kiln_model_destroy(m);
}

TEST(Runtime, RejectsNullBuffersAndOtherAbi) {
  kiln_model *m = kiln_model_create(&kModel);
  float y[6];
  const void *in[] = {nullptr};
  void *out[] = {y};
  EXPECT_NE(kiln_model_run(m, in, out), 0);
  EXPECT_STREQ(kiln_model_error(m), "input 0 ('x') is NULL");
  kiln_model_destroy(m);
  kiln_model_info other = kModel;
  other.abi_version = KILN_ABI_VERSION + 1;
  EXPECT_EQ(kiln_model_create(&other), nullptr);
}

// A GPU model whose device cannot be opened (here: kernels for an API this
// runtime does not run) still gets an instance, which says why at once and
// fails every run with that message; kiln_model_device is NULL. A CPU
// model has no device either.
// A CPU model's host memory is the C library's, 64-byte aligned; what the
// caller does not free goes with the instance (the sanitizer build checks
// that nothing leaks).
TEST(Runtime, AllocatesHostMemoryForTheCaller) {
  kiln_model *m = kiln_model_create(&kModel);
  ASSERT_NE(m, nullptr);
  auto *x = static_cast<float *>(kiln_model_alloc_host(m, 6 * sizeof(float)));
  auto *y = static_cast<float *>(kiln_model_alloc_host(m, 6 * sizeof(float)));
  void *empty = kiln_model_alloc_host(m, 0);
  ASSERT_TRUE(x && y && empty);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x) % 64, 0u);
  for (int i = 0; i < 6; ++i)
    x[i] = float(i);
  const void *in[] = {x};
  void *out[] = {y};
  ASSERT_EQ(kiln_model_run(m, in, out), 0) << kiln_model_error(m);
  EXPECT_EQ(y[5], 10.0f);
  // kiln_model_run_tensors' outputs are the instance's: not freed here.
  kiln_tensor input = {x, KILN_FLOAT32, 2, kShape}, output = {};
  ASSERT_EQ(kiln_model_run_tensors(m, &input, &output), 0) << kiln_model_error(m);
  kiln_model_free_host(m, output.data);
  void *kept = output.data;
  ASSERT_EQ(kiln_model_run_tensors(m, &input, &output), 0) << kiln_model_error(m);
  EXPECT_EQ(output.data, kept);
  EXPECT_EQ(static_cast<float *>(output.data)[5], 10.0f);
  EXPECT_EQ(kiln_model_alloc_host(m, SIZE_MAX - 8), nullptr);
  kiln_model_free_host(m, x);
  kiln_model_free_host(m, empty);
  kiln_model_destroy(m);
}

TEST(Runtime, GpuModelWithoutDeviceFailsWithTheReason) {
  const kiln_gpu_program program = {/*api=*/99, /*num_kernels=*/0, /*kernels=*/nullptr, /*buffer_flags=*/nullptr};
  kiln_model_info gpu = kModel;
  gpu.gpu = &program;
  kiln_model *m = kiln_model_create(&gpu);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(kiln_model_device(m), nullptr);
  const char *reason = "this runtime runs Vulkan and CUDA kernels, not kernels for GPU API 99";
  EXPECT_STREQ(kiln_model_error(m), reason);
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_EQ(kiln_model_run(m, in, out), 1);
  EXPECT_STREQ(kiln_model_error(m), reason);
  kiln_model_destroy(m);
  // A Metal model on Linux.
  const kiln_gpu_program metal = {KILN_GPU_METAL, 0, nullptr, nullptr};
  gpu.gpu = &metal;
  m = kiln_model_create(&gpu);
  ASSERT_NE(m, nullptr);
  EXPECT_STREQ(kiln_model_error(m), "this runtime runs Vulkan and CUDA kernels, not Metal "
                                    "kernels (the model was compiled for another system)");
  kiln_model_destroy(m);
  kiln_model *cpu = kiln_model_create(&kModel);
  EXPECT_EQ(kiln_model_device(cpu), nullptr);
  kiln_model_destroy(cpu);
}

TEST(Runtime, ChecksTensorsWithMessages) {
  char msg[256];
  const int64_t good[] = {2, 3}, bad[] = {3, 2};
  EXPECT_EQ(kiln_check_tensor(&kInputs[0], KILN_FLOAT32, 2, good, msg, sizeof msg), 0);
  EXPECT_NE(kiln_check_tensor(&kInputs[0], KILN_FLOAT32, 2, bad, msg, sizeof msg), 0);
  EXPECT_STREQ(msg, "input 'x' must have shape [2,3], got [3,2]");
  EXPECT_NE(kiln_check_tensor(&kInputs[0], KILN_INT64, 2, good, msg, sizeof msg), 0);
  EXPECT_STREQ(msg, "input 'x' must be float32, got int64");
  EXPECT_EQ(kiln_tensor_num_elements(&kInputs[0]), 6u);
  EXPECT_EQ(kiln_dtype_size(KILN_BFLOAT16), 2u);
}

// A fake model whose entry is one parallel loop: every index of [0, 1000)
// is counted, and the threads that ran a chunk and the chunks' lengths are
// recorded.
std::atomic<int> hits[1000];
std::mutex threadsMutex;
std::set<std::thread::id> threadsSeen;
std::vector<int64_t> chunkLengths;
int nestedCalls;

void countRange(void *, int64_t begin, int64_t end) {
  {
    std::lock_guard<std::mutex> lock(threadsMutex);
    threadsSeen.insert(std::this_thread::get_id());
    chunkLengths.push_back(end - begin);
  }
  for (int64_t i = begin; i < end; ++i)
    hits[i]++;
}

void countNested(void *, int64_t, int64_t) { ++nestedCalls; }

void countIgnoringCtx(void *ctx, int64_t begin, int64_t end) {
  // A parallel loop inside a task runs serially on the task's thread.
  if (begin == 0)
    kiln_parallel_for(countNested, ctx, 8);
  countRange(ctx, begin, end);
}

void parallelEntry(void **, int64_t *) { kiln_parallel_for(countIgnoringCtx, nullptr, 1000); }

const kiln_model_info kParallelModel = {KILN_ABI_VERSION, 0, "parallel", 1, 1, kInputs, kOutputs,
                                        parallelEntry, /*arena_bytes=*/0, /*gpu=*/nullptr, /*weights_bytes=*/0, /*profile=*/nullptr, /*external_weights=*/nullptr, /*num_variants=*/0, /*variants=*/nullptr};

void runParallelModel(int threads) {
  for (auto &h : hits)
    h = 0;
  threadsSeen.clear();
  chunkLengths.clear();
  nestedCalls = 0;
  kiln_model *m = kiln_model_create(&kParallelModel);
  ASSERT_EQ(kiln_model_set_num_threads(m, threads), 0);
  EXPECT_EQ(kiln_model_num_threads(m), threads);
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  ASSERT_EQ(kiln_model_run(m, in, out), 0);
  kiln_model_destroy(m);
}

// Threads claim chunks (four per thread: 1000 / 8 = 125 with two threads)
// until none are left, so how many threads took part depends on how soon
// they woke; each index still runs exactly once.
TEST(Threads, ParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 3, 7}) {
    runParallelModel(threads);
    for (auto &h : hits)
      ASSERT_EQ(h, 1) << threads << " threads";
    EXPECT_GE(threadsSeen.size(), 1u);
    EXPECT_LE(threadsSeen.size(), static_cast<size_t>(threads));
    EXPECT_EQ(nestedCalls, 1); // the nested loop ran as one serial call
    if (threads == 1)
      EXPECT_EQ(chunkLengths, std::vector<int64_t>{1000});
    if (threads == 2)
      EXPECT_EQ(chunkLengths, std::vector<int64_t>(8, 125));
  }
}

// Jobs posted back to back (workers spinning between them, or asleep when
// they were slow) still cover each range exactly once.
void manyLoopsEntry(void **, int64_t *) {
  for (int job = 0; job < 500; ++job)
    kiln_parallel_for(countRange, nullptr, 1000);
}

const kiln_model_info kManyLoopsModel = {KILN_ABI_VERSION, 0, "many", 1, 1, kInputs, kOutputs,
                                         manyLoopsEntry, /*arena_bytes=*/0, /*gpu=*/nullptr, /*weights_bytes=*/0, /*profile=*/nullptr, /*external_weights=*/nullptr, /*num_variants=*/0, /*variants=*/nullptr};

double processCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

TEST(Threads, BackToBackJobsThenIdleWorkersSleep) {
  for (auto &h : hits)
    h = 0;
  kiln_model *m = kiln_model_create(&kManyLoopsModel);
  ASSERT_EQ(kiln_model_set_num_threads(m, 3), 0);
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  ASSERT_EQ(kiln_model_run(m, in, out), 0);
  for (auto &h : hits)
    ASSERT_EQ(h, 500);
  // Workers spin for at most 50 us after a job, then sleep: 200 ms after the
  // run the process uses (almost) no CPU; two spinning workers would use 400.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double before = processCpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(processCpuSeconds() - before, 0.02);
  kiln_model_destroy(m);
}

TEST(Threads, OutsideARunLoopsAreSerial) {
  for (auto &h : hits)
    h = 0;
  threadsSeen.clear();
  kiln_parallel_for(countRange, nullptr, 1000);
  EXPECT_EQ(hits[999], 1);
  EXPECT_EQ(threadsSeen.size(), 1u);
}

TEST(Threads, CountsAndDefaults) {
  kiln_model *m = kiln_model_create(&kModel);
  EXPECT_NE(kiln_model_set_num_threads(m, -1), 0);
  EXPECT_STREQ(kiln_model_error(m), "thread count -1 is outside 0..1024");
  EXPECT_NE(kiln_model_set_num_threads(m, 1025), 0);
  setenv("KILN_NUM_THREADS", "3", 1);
  EXPECT_EQ(kiln_model_set_num_threads(m, 0), 0);
  EXPECT_EQ(kiln_model_num_threads(m), 3);
  kiln_model_destroy(m);
  kiln_model *fresh = kiln_model_create(&kModel);
  EXPECT_EQ(kiln_model_num_threads(fresh), 3);
  kiln_model_destroy(fresh);
  unsetenv("KILN_NUM_THREADS");
}

TEST(Npy, RoundTripsAndRejectsGarbage) {
  std::string path = testing::TempDir() + "kiln_npy_test.npy";
  const int64_t shape[] = {2, 2};
  const double data[] = {1.5, -2, 3, 4.25};
  char msg[256];
  ASSERT_EQ(kiln_npy_write(path.c_str(), KILN_FLOAT64, 2, shape, data, msg, sizeof msg), 0);
  kiln_npy npy;
  ASSERT_EQ(kiln_npy_read(path.c_str(), &npy, msg, sizeof msg), 0) << msg;
  EXPECT_EQ(npy.dtype, KILN_FLOAT64);
  ASSERT_EQ(npy.rank, 2);
  EXPECT_EQ(npy.shape[1], 2);
  EXPECT_EQ(static_cast<double *>(npy.data)[3], 4.25);
  kiln_npy_free(&npy);

  FILE *f = std::fopen(path.c_str(), "wb");
  std::fputs("not numpy", f);
  std::fclose(f);
  EXPECT_NE(kiln_npy_read(path.c_str(), &npy, msg, sizeof msg), 0);
  EXPECT_EQ(std::string(msg), "'" + path + "' is not a .npy file");
  std::remove(path.c_str());
}

TEST(MemrefCopy, CopiesStridedViews) {
  // Copy the 2x2 top-left block of a 3x3 row-major matrix into a 2x2 buffer.
  float src[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, dst[4] = {};
  struct Desc {
    float *allocated, *aligned;
    int64_t offset, sizes[2], strides[2];
  } s{src, src, 0, {2, 2}, {3, 1}}, d{dst, dst, 0, {2, 2}, {2, 1}};
  struct Unranked {
    int64_t rank;
    void *descriptor;
  } us{2, &s}, ud{2, &d};
  memrefCopy(sizeof(float), &us, &ud);
  EXPECT_EQ(dst[0], 0);
  EXPECT_EQ(dst[1], 1);
  EXPECT_EQ(dst[2], 3);
  EXPECT_EQ(dst[3], 4);
}

} // namespace

namespace {
// A profiled model: kernel 0 ("scale (Mul)") runs a parallel loop whose
// tasks sleep, so that each thread's share lasts; kernel 1 ("out (Identity)")
// copies the result.
const kiln_profile_kernel kProfileKernels[] = {{"scale (Mul)", 12, 48}, {"out (Identity)", 0, 48}};
const kiln_profile_info kProfile = {2, kProfileKernels};

void sleepTask(void *, int64_t begin, int64_t end) {
  std::this_thread::sleep_for(std::chrono::microseconds(200 * (end - begin)));
}

void profiledEntry(void **buffers, int64_t *) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *y = static_cast<float *>(buffers[1]);
  kiln_profile_begin(0);
  kiln_parallel_for(sleepTask, nullptr, 16);
  kiln_profile_end(0);
  kiln_profile_begin(1);
  for (int i = 0; i < 6; ++i)
    y[i] = 2 * x[i];
  kiln_profile_end(1);
}

kiln_model_info profiledModel() {
  kiln_model_info info = kModel;
  info.name = "profiled";
  info.entry = profiledEntry;
  info.weights_bytes = 4096;
  info.profile = &kProfile;
  return info;
}

std::string readFile(const std::string &path) {
  std::string text;
  if (FILE *f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
      text.append(buf, n);
    std::fclose(f);
  }
  return text;
}
} // namespace

TEST(Runtime, ProfilesKernelsAndWorkerShares) {
  kiln_model_info info = profiledModel();
  kiln_model *m = kiln_model_create(&info);
  ASSERT_EQ(kiln_model_set_num_threads(m, 2), 0);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  kiln_profile_summary summary;
  // Nothing is recorded before start; runs before it do not count.
  EXPECT_NE(kiln_model_profile_summary(m, &summary), 0);
  EXPECT_STREQ(kiln_model_error(m),
               "nothing was recorded: call kiln_model_profile_start first");
  ASSERT_EQ(kiln_model_run(m, in, out), 0);
  ASSERT_EQ(kiln_model_profile_start(m), 0);
  for (int run = 0; run < 3; ++run)
    ASSERT_EQ(kiln_model_run(m, in, out), 0);
  kiln_model_profile_stop(m);
  ASSERT_EQ(kiln_model_run(m, in, out), 0); // after stop: not recorded
  ASSERT_EQ(kiln_model_profile_summary(m, &summary), 0);
  EXPECT_EQ(summary.runs, 3u);
  EXPECT_EQ(summary.num_kernels, 2u);
  EXPECT_EQ(summary.dropped, 0u);
  kiln_profile_entry scale, copy;
  ASSERT_EQ(kiln_model_profile_kernel(m, 0, &scale), 0);
  ASSERT_EQ(kiln_model_profile_kernel(m, 1, &copy), 0);
  EXPECT_STREQ(scale.name, "scale (Mul)");
  EXPECT_EQ(scale.calls, 3u);
  EXPECT_EQ(scale.flops, 12u);
  EXPECT_EQ(scale.bytes, 48u);
  // 16 tasks of 200 us on 2 threads: at least 1.6 ms per run.
  EXPECT_GE(scale.total_ms, 3 * 1.6);
  EXPECT_LE(scale.total_ms + copy.total_ms, summary.total_ms);
  EXPECT_NE(kiln_model_profile_kernel(m, 2, &copy), 0);
  EXPECT_STREQ(kiln_model_error(m), "kernel 2 is outside the model's 2");

  std::string path = ::testing::TempDir() + "kiln-profile-trace.json";
  ASSERT_EQ(kiln_model_profile_write_trace(m, path.c_str()), 0);
  std::string trace = readFile(path);
  std::remove(path.c_str());
  auto count = [&](const std::string &needle) {
    size_t n = 0;
    for (size_t at = trace.find(needle); at != std::string::npos; at = trace.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("\"cat\": \"run\""), 3u);
  EXPECT_EQ(count("\"cat\": \"kernel\", \"name\": \"scale (Mul)\""), 3u);
  EXPECT_EQ(count("\"cat\": \"kernel\", \"name\": \"out (Identity)\""), 3u);
  // The worker took shares of kernel 0, merged into one event per run.
  EXPECT_GE(count("\"tid\": 1, \"cat\": \"share\", \"name\": \"scale (Mul)\""), 1u);
  EXPECT_LE(count("\"tid\": 1, \"cat\": \"share\""), 3u);
  EXPECT_EQ(count("\"name\": \"worker 1\""), 1u);

  EXPECT_NE(kiln_model_profile_write_trace(m, "/nonexistent-dir/t.json"), 0);
  EXPECT_STREQ(kiln_model_error(m),
               "cannot write the trace '/nonexistent-dir/t.json': No such file or directory");
  // A restart forgets what was recorded.
  ASSERT_EQ(kiln_model_profile_start(m), 0);
  ASSERT_EQ(kiln_model_profile_summary(m, &summary), 0);
  EXPECT_EQ(summary.runs, 0u);
  kiln_model_destroy(m);
}

TEST(Runtime, RefusesToProfileAModelWithoutTimings) {
  kiln_model *m = kiln_model_create(&kModel);
  EXPECT_NE(kiln_model_profile_start(m), 0);
  EXPECT_STREQ(kiln_model_error(m),
               "model 'double' was compiled without --profile: it has no kernel timings");
  kiln_profile_summary summary;
  EXPECT_NE(kiln_model_profile_summary(m, &summary), 0);
  EXPECT_STREQ(kiln_model_error(m), "nothing was recorded: call kiln_model_profile_start first "
                                    "(and compile the model with --profile)");
  kiln_model_destroy(m);
}

TEST(Runtime, ReportsMemory) {
  kiln_model_info info = profiledModel();
  info.arena_bytes = 1024;
  kiln_model *m = kiln_model_create(&info);
  kiln_memory_stats stats;
  kiln_model_memory(m, &stats);
  EXPECT_EQ(stats.arena, 1024u);
  EXPECT_EQ(stats.weights, 4096u);
  EXPECT_EQ(stats.peak, stats.arena + stats.runtime + stats.weights);
  // kiln_model_run_tensors holds its outputs: runtime memory grows.
  float x[6] = {1, 2, 3, 4, 5, 6};
  kiln_tensor in[] = {{x, KILN_FLOAT32, 2, kShape}};
  kiln_tensor out[1];
  uint64_t before = stats.runtime;
  ASSERT_EQ(kiln_model_run_tensors(m, in, out), 0);
  kiln_model_memory(m, &stats);
  EXPECT_GE(stats.runtime, before + 6 * sizeof(float));
  EXPECT_EQ(stats.peak, stats.arena + stats.runtime + stats.weights);
  kiln_model_destroy(m);
}

namespace {

// A fake model with external weights: y = x + w, w (6 floats) read from the
// instance's weights data at offset 64.
const kiln_external_weights kExternal = {0x5eed, 64 + 6 * sizeof(float), 1, "absent.kw"};

void addWeightsEntry(void **buffers, int64_t *) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *y = static_cast<float *>(buffers[1]);
  auto *w = reinterpret_cast<const float *>(static_cast<const char *>(kiln_run_weights()) + 64);
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] + w[i];
}

const kiln_model_info kWeightsModel = {KILN_ABI_VERSION, 0, "addw", 1, 1, kInputs, kOutputs,
                                       addWeightsEntry, /*arena_bytes=*/0, /*gpu=*/nullptr,
                                       /*weights_bytes=*/0, /*profile=*/nullptr, &kExternal, 0, nullptr};

/// Writes a weights file holding w = {base, base + 1, ...} at offset 64.
std::string writeWeights(const char *name, float base, uint64_t fingerprint = 0x5eed) {
  std::string path = ::testing::TempDir() + name;
  float w[6];
  for (int i = 0; i < 6; ++i)
    w[i] = base + i;
  kiln_weights_entry entry = {};
  snprintf(entry.name, sizeof entry.name, "w");
  entry.offset = 64;
  entry.bytes = sizeof w;
  entry.dtype = KILN_FLOAT32;
  entry.rank = 1;
  entry.shape[0] = 6;
  const void *data[] = {w};
  char error[256];
  EXPECT_EQ(kiln_weights_write(path.c_str(), fingerprint, 1, &entry, data, 64 + sizeof w, error,
                               sizeof error),
            0)
      << error;
  return path;
}

float runFirst(kiln_model *m) {
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_EQ(kiln_model_run(m, in, out), 0) << kiln_model_error(m);
  return y[0];
}

TEST(Weights, MapsSwapsAndSharesFiles) {
  std::string a = writeWeights("a.kw", 10), b = writeWeights("b.kw", 20);
  kiln_model *m = kiln_model_create_with_weights(&kWeightsModel, a.c_str());
  ASSERT_NE(kiln_model_weights(m), nullptr) << kiln_model_error(m);
  EXPECT_EQ(runFirst(m), 10.0f);
  ASSERT_EQ(kiln_model_swap_weights(m, b.c_str()), 0) << kiln_model_error(m);
  EXPECT_EQ(runFirst(m), 20.0f);
  kiln_memory_stats mem;
  kiln_model_memory(m, &mem);
  EXPECT_EQ(mem.weights, kExternal.bytes);

  // Instances of one file share its mapping, and one file's content is
  // mapped once even under two names.
  std::string copy = writeWeights("b-copy.kw", 20);
  char error[256];
  kiln_weights *w1 = kiln_weights_open(b.c_str(), error, sizeof error);
  kiln_weights *w2 = kiln_weights_open(copy.c_str(), error, sizeof error);
  ASSERT_NE(w1, nullptr) << error;
  EXPECT_EQ(w1, kiln_model_weights(m));
  EXPECT_EQ(w1, w2);
  kiln_weights_close(w2);
  // Weights opened ahead: switching is a pointer swap.
  kiln_weights *wa = kiln_weights_open(a.c_str(), error, sizeof error);
  ASSERT_EQ(kiln_model_use_weights(m, wa), 0);
  kiln_weights_close(wa);
  kiln_weights_close(w1);
  EXPECT_EQ(runFirst(m), 10.0f); // the instance holds its own reference
  kiln_model_destroy(m);
}

TEST(Weights, RefusesOtherCodesWeightsAndKeepsItsOwn) {
  std::string a = writeWeights("a.kw", 10), other = writeWeights("other.kw", 30, 0xbad);
  kiln_model *m = kiln_model_create_with_weights(&kWeightsModel, a.c_str());
  EXPECT_NE(kiln_model_swap_weights(m, other.c_str()), 0);
  EXPECT_NE(std::string(kiln_model_error(m)).find("these weights were written for other code "
                                                    "than model 'addw' (fingerprint "
                                                    "0000000000000bad"),
            std::string::npos)
      << kiln_model_error(m);
  EXPECT_EQ(runFirst(m), 10.0f);
  EXPECT_NE(kiln_model_use_weights(m, nullptr), 0);
  EXPECT_STREQ(kiln_model_error(m), "kiln_model_use_weights: no weights given");
  EXPECT_EQ(runFirst(m), 10.0f);
  kiln_model_destroy(m);
}

TEST(Weights, ReportsMissingWeightsAtCreateAndEveryRun) {
  kiln_model *m = kiln_model_create(&kWeightsModel); // absent.kw beside the test binary
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(kiln_model_weights(m), nullptr);
  std::string error = kiln_model_error(m);
  EXPECT_NE(error.find("model 'addw' has no weights: "), std::string::npos) << error;
  EXPECT_NE(error.find("absent.kw: No such file or directory"), std::string::npos) << error;
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_NE(kiln_model_run(m, in, out), 0);
  EXPECT_EQ(std::string(kiln_model_error(m)), error);
  kiln_model_destroy(m);
}

TEST(Weights, UsesABufferInPlace) {
  std::string a = writeWeights("a.kw", 40);
  FILE *f = fopen(a.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::vector<char> bytes(64 * 1024 + 64);
  char *aligned = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
  size_t size = fread(aligned, 1, 64 * 1024, f);
  fclose(f);
  kiln_model *m = kiln_model_create_with_weights(&kWeightsModel, a.c_str());
  ASSERT_EQ(kiln_model_swap_weights_buffer(m, aligned, size), 0) << kiln_model_error(m);
  EXPECT_EQ(runFirst(m), 40.0f);
  EXPECT_STREQ(kiln_weights_path(kiln_model_weights(m)), "(buffer)");
  EXPECT_NE(kiln_model_swap_weights_buffer(m, aligned + 1, size - 1), 0);
  EXPECT_STREQ(kiln_model_error(m), "a weights buffer must be aligned to 64 bytes");
  aligned[size - 1] ^= 1;
  EXPECT_NE(kiln_model_swap_weights_buffer(m, aligned, size), 0);
  EXPECT_STREQ(kiln_model_error(m),
               "weights buffer: corrupt weights file (the checksum of its data fails)");
  EXPECT_EQ(runFirst(m), 40.0f);
  kiln_model_destroy(m);
}

TEST(Weights, ChecksumSeesEveryByteAndItsPlace) {
  std::vector<unsigned char> data(1000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (unsigned char)(i * 37);
  uint64_t sum = kiln_weights_checksum(data.data(), data.size());
  for (size_t i : {0, 63, 64, 500, 999}) {
    data[i] ^= 0x10;
    EXPECT_NE(kiln_weights_checksum(data.data(), data.size()), sum) << i;
    data[i] ^= 0x10;
  }
  std::swap(data[0], data[8]); // two words swapped: a plain sum would not see it
  EXPECT_NE(kiln_weights_checksum(data.data(), data.size()), sum);
  std::swap(data[0], data[8]);
  EXPECT_NE(kiln_weights_checksum(data.data(), data.size() - 1), sum);
}

} // namespace

#if defined(__x86_64__)
namespace {

// A model of two CPU variants: the baseline (x * 2) and one that needs an
// AArch64 extension no x86 CPU has.
const kiln_model_info kBaseline = {KILN_ABI_VERSION, 0, "variants", 1, 1, kInputs, kOutputs,
                                   doubleEntry, 0, nullptr, 0, nullptr, nullptr, 0, nullptr};
const kiln_cpu_variant kVariants[] = {{"baseline", 0, &kBaseline},
                                      {"needs-i8mm", KILN_CPU_AARCH64_I8MM, &kModel}};
const kiln_model_info kVariantModel = {KILN_ABI_VERSION, 0, "variants", 1, 1, kInputs, kOutputs,
                                       nullptr, 0, nullptr, 0, nullptr, nullptr, 2, kVariants};
const kiln_cpu_variant kUnrunnable[] = {{"needs-dotprod", KILN_CPU_AARCH64_DOTPROD, &kModel}};
const kiln_model_info kUnrunnableModel = {KILN_ABI_VERSION, 0, "arm-only", 1, 1, kInputs,
                                          kOutputs, nullptr, 0, nullptr, 0, nullptr, nullptr,
                                          1, kUnrunnable};

TEST(CpuVariants, PicksTheMostDemandingVariantTheCpuRuns) {
  EXPECT_EQ(kiln_cpu_features() & (KILN_CPU_AARCH64_DOTPROD | KILN_CPU_AARCH64_I8MM), 0u);
  unsetenv("KILN_CPU_VARIANT");
  kiln_model *m = kiln_model_create(&kVariantModel);
  ASSERT_NE(m, nullptr);
  EXPECT_STREQ(kiln_model_cpu_variant(m), "baseline");
  EXPECT_EQ(kiln_model_get_info(m), &kBaseline);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  ASSERT_EQ(kiln_model_run(m, in, out), 0) << kiln_model_error(m);
  EXPECT_FLOAT_EQ(y[5], 12.0f);
  kiln_model_destroy(m);
  kiln_model *plain = kiln_model_create(&kModel);
  EXPECT_EQ(kiln_model_cpu_variant(plain), nullptr);
  kiln_model_destroy(plain);
}

TEST(CpuVariants, RefusesAVariantTheCpuCannotRun) {
  setenv("KILN_CPU_VARIANT", "needs-i8mm", 1);
  char error[256];
  EXPECT_EQ(kiln_pick_cpu_variant(&kVariantModel, error, sizeof error), nullptr);
  EXPECT_STREQ(error, "KILN_CPU_VARIANT=needs-i8mm: this CPU lacks the int8 matrix multiply "
                      "instructions (i8mm)");
  setenv("KILN_CPU_VARIANT", "baseline", 1);
  EXPECT_EQ(kiln_pick_cpu_variant(&kVariantModel, error, sizeof error), &kVariants[0]);
  unsetenv("KILN_CPU_VARIANT");

  kiln_model *m = kiln_model_create(&kUnrunnableModel);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(kiln_model_cpu_variant(m), nullptr);
  const char *expected = "model 'arm-only' has no variant for this CPU: the least demanding "
                         "(needs-dotprod) needs the dot-product instructions";
  EXPECT_STREQ(kiln_model_error(m), expected);
  float x[6] = {}, y[6] = {};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_NE(kiln_model_run(m, in, out), 0);
  EXPECT_STREQ(kiln_model_error(m), expected);
  kiln_model_destroy(m);
}

} // namespace
#endif

namespace {

// A recurrent fake model: s_out = s_in + x, on static [2, 3] tensors.
const kiln_tensor_info kRecurrentInputs[] = {{"x", KILN_FLOAT32, 2, kShape, nullptr},
                                             {"s_in", KILN_FLOAT32, 2, kShape, nullptr}};
const kiln_tensor_info kRecurrentOutputs[] = {{"s_out", KILN_FLOAT32, 2, kShape, nullptr}};
std::vector<const void *> stateReads;

void accumulateEntry(void **buffers, int64_t *) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *s = static_cast<const float *>(buffers[1]);
  auto *out = static_cast<float *>(buffers[2]);
  stateReads.push_back(s);
  for (int i = 0; i < 6; ++i)
    out[i] = s[i] + x[i];
}

const kiln_model_info kRecurrent = {KILN_ABI_VERSION, 0, "recurrent", 2, 1, kRecurrentInputs,
                                    kRecurrentOutputs, accumulateEntry, 0, nullptr, 0, nullptr,
                                    nullptr, 0, nullptr};

TEST(States, FeedEachRunsOutputToTheNextInPlace) {
  kiln_model *m = kiln_model_create(&kRecurrent);
  ASSERT_EQ(kiln_model_bind_state(m, "s_out", "s_in"), 0) << kiln_model_error(m);
  float x[6] = {1, 1, 1, 1, 1, 1}, s0[6] = {10, 10, 10, 10, 10, 10};
  kiln_tensor in[] = {{x, KILN_FLOAT32, 2, kShape}, {s0, KILN_FLOAT32, 2, kShape}};
  kiln_tensor out[1];
  stateReads.clear();
  std::vector<const void *> written;
  for (int run = 0; run < 4; ++run) {
    ASSERT_EQ(kiln_model_run_tensors(m, in, out), 0) << kiln_model_error(m);
    written.push_back(out[0].data);
    EXPECT_FLOAT_EQ(static_cast<float *>(out[0].data)[5], 11.0f + run);
  }
  // The first run reads the caller's state; each later one the last run's
  // output where it lies, while writing the other buffer.
  EXPECT_EQ(stateReads[0], s0);
  for (int run = 1; run < 4; ++run) {
    EXPECT_EQ(stateReads[run], written[run - 1]);
    EXPECT_NE(written[run], written[run - 1]);
  }
  EXPECT_EQ(written[0], written[2]);
  // Reset: the caller's state again.
  kiln_model_reset_states(m);
  ASSERT_EQ(kiln_model_run_tensors(m, in, out), 0);
  EXPECT_FLOAT_EQ(static_cast<float *>(out[0].data)[0], 11.0f);
  // kiln_model_run cannot feed states.
  const void *raw_in[] = {x, s0};
  float y[6];
  void *raw_out[] = {y};
  EXPECT_NE(kiln_model_run(m, raw_in, raw_out), 0);
  EXPECT_STREQ(kiln_model_error(m),
               "model 'recurrent' has bound states; run it with kiln_model_run_tensors");
  kiln_model_destroy(m);
}

TEST(States, RefusesBindingsThatCannotFit) {
  kiln_model *m = kiln_model_create(&kRecurrent);
  EXPECT_NE(kiln_model_bind_state(m, "s_out", "nope"), 0);
  EXPECT_STREQ(kiln_model_error(m), "model 'recurrent' has no input 'nope'");
  EXPECT_NE(kiln_model_bind_state(m, "y", "s_in"), 0);
  EXPECT_STREQ(kiln_model_error(m), "model 'recurrent' has no output 'y'");
  ASSERT_EQ(kiln_model_bind_state(m, "s_out", "x"), 0);
  EXPECT_NE(kiln_model_bind_state(m, "s_out", "x"), 0);
  EXPECT_STREQ(kiln_model_error(m), "input 'x' is bound to output 's_out' already");
  kiln_model_destroy(m);
}

} // namespace
