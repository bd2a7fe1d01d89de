//===- MetalRuntimeTest.cpp - metal.c against a fake Metal ----------------===//
//
// There is no Mac here, so runtime/src/device/metal.c runs on Linux against
// a fake of what it calls: objc_msgSend, sel_registerName, objc_getClass,
// the autorelease pool and MTLCreateSystemDefaultDevice. The fake models
// the Metal objects metal.c uses (device, queue, library, function,
// pipeline, buffer, command buffer, encoder) with reference counts, and
// "runs" a dispatch at commit by calling the C++ function registered under
// the kernel's name with the bound buffers. The tests check what reaches
// Metal (sources, buffers and offsets, threadgroup counts and sizes), that
// results appear only after kiln_device_wait, the messages of every failure,
// and that closing releases every object.
//
// objc_msgSend is defined here as a variadic function while metal.c calls
// it through pointers of each method's own type, as on a Mac: on the SysV
// x86-64 and AAPCS64 Linux ABIs a variadic callee receives such calls'
// integer, pointer and large-struct (MTLSize) arguments where va_arg looks.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

extern "C" {
#include "device/device.h"
}

#include <gtest/gtest.h>

#include <cstdarg>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using NSUInteger = unsigned long;
struct MTLSize {
  NSUInteger width, height, depth;
};

struct Object;
struct Binding {
  Object *buffer = nullptr;
  NSUInteger offset = 0;
};
struct Dispatch {
  std::string kernel;
  std::map<NSUInteger, Binding> buffers;
  MTLSize groups, threads;
};

struct Object {
  std::string kind, text; // text: a string's characters, a library's source, a name
  int refs = 1;
  std::vector<unsigned char> contents;               // a buffer's
  NSUInteger options = 0;                            // a buffer's
  Object *pipeline = nullptr;                        // an encoder's current pipeline
  std::map<NSUInteger, Binding> bound;               // an encoder's buffers
  std::vector<Dispatch> dispatches;                  // a command buffer's
  Object *encoder = nullptr;                         // a command buffer's (it holds it)
  bool ended = false; // an encoder's
};

// The state of the fake, reset by each test.
struct FakeMetal {
  std::set<Object *> live;
  std::vector<std::vector<Object *>> pools;
  std::vector<Dispatch> ran;
  std::map<std::string, std::function<void(const Dispatch &)>> kernels;
  bool hasDevice = true, kernelsFail = false;
  NSUInteger maxThreads = 1024;
} fake;

Object *make(const std::string &kind, const std::string &text = "") {
  auto *o = new Object;
  o->kind = kind;
  o->text = text;
  fake.live.insert(o);
  return o;
}

void release(Object *o) {
  if (--o->refs == 0) {
    if (o->encoder) // a command buffer holds its encoder
      release(o->encoder);
    fake.live.erase(o);
    delete o;
  }
}

Object *autoreleased(Object *o) {
  EXPECT_FALSE(fake.pools.empty()) << o->kind << " autoreleased with no pool";
  if (!fake.pools.empty())
    fake.pools.back().push_back(o);
  return o;
}

unsigned char *contents(const Binding &b) { return b.buffer->contents.data() + b.offset; }

void commit(Object *commands) {
  for (const Dispatch &d : commands->dispatches) {
    fake.ran.push_back(d);
    auto kernel = fake.kernels.find(d.kernel);
    if (kernel != fake.kernels.end() && !fake.kernelsFail)
      kernel->second(d);
  }
}

uintptr_t send(Object *self, const std::string &sel, va_list ap) {
  auto ret = [](auto *p) { return reinterpret_cast<uintptr_t>(p); };
  if (sel == "release")
    return release(self), 0;
  if (sel == "retain")
    return ++self->refs, ret(self);
  if (sel == "stringWithUTF8String:")
    return ret(autoreleased(make("NSString", va_arg(ap, const char *))));
  if (sel == "UTF8String")
    return ret(self->text.c_str());
  if (sel == "localizedDescription")
    return ret(autoreleased(make("NSString", self->text)));
  if (sel == "name")
    return ret(autoreleased(make("NSString", "Fake GPU")));
  if (sel == "newCommandQueue")
    return ret(make("MTLCommandQueue"));
  if (sel == "newLibraryWithSource:options:error:") {
    auto *source = va_arg(ap, Object *);
    EXPECT_EQ(va_arg(ap, Object *), nullptr); // default options
    auto **error = va_arg(ap, Object **);
    if (source->text.find("#error") != std::string::npos) {
      *error = autoreleased(make("NSError", "program_source:1:2: error: a syntax error"));
      return 0;
    }
    return ret(make("MTLLibrary", source->text));
  }
  if (sel == "newFunctionWithName:") {
    std::string name = va_arg(ap, Object *)->text;
    if (self->text.find("kernel void " + name + "(") == std::string::npos)
      return 0;
    return ret(make("MTLFunction", name));
  }
  if (sel == "newComputePipelineStateWithFunction:error:")
    return ret(make("MTLComputePipelineState", va_arg(ap, Object *)->text));
  if (sel == "maxTotalThreadsPerThreadgroup")
    return fake.maxThreads;
  if (sel == "newBufferWithLength:options:") {
    Object *buffer = make("MTLBuffer");
    buffer->contents.assign(va_arg(ap, NSUInteger), 0);
    buffer->options = va_arg(ap, NSUInteger);
    return ret(buffer);
  }
  if (sel == "contents")
    return ret(self->contents.data());
  if (sel == "commandBuffer")
    return ret(autoreleased(make("MTLCommandBuffer")));
  if (sel == "computeCommandEncoder") {
    EXPECT_EQ(self->encoder, nullptr) << "a second encoder for one command buffer";
    self->encoder = autoreleased(make("MTLComputeCommandEncoder"));
    ++self->encoder->refs; // the command buffer's
    return ret(self->encoder);
  }
  if (sel == "setComputePipelineState:") {
    self->pipeline = va_arg(ap, Object *);
    return 0;
  }
  if (sel == "setBuffer:offset:atIndex:") {
    Binding b;
    b.buffer = va_arg(ap, Object *);
    b.offset = va_arg(ap, NSUInteger);
    self->bound[va_arg(ap, NSUInteger)] = b;
    return 0;
  }
  if (sel == "dispatchThreadgroups:threadsPerThreadgroup:") {
    Dispatch d{self->pipeline->text, self->bound, va_arg(ap, MTLSize), va_arg(ap, MTLSize)};
    // The encoder's command buffer is the one whose encoder it is.
    for (Object *o : fake.live)
      if (o->kind == "MTLCommandBuffer" && o->encoder == self)
        o->dispatches.push_back(d);
    return 0;
  }
  if (sel == "endEncoding")
    return self->ended = true, 0;
  if (sel == "commit") {
    EXPECT_TRUE(self->encoder && self->encoder->ended) << "committed before endEncoding";
    return commit(self), 0;
  }
  if (sel == "waitUntilCompleted")
    return 0;
  if (sel == "status")
    return fake.kernelsFail ? 5 : 4; // MTLCommandBufferStatusError : Completed
  if (sel == "error")
    return fake.kernelsFail ? ret(autoreleased(make("NSError", "GPU address fault"))) : 0;
  ADD_FAILURE() << "unexpected message " << sel << " to " << self->kind;
  return 0;
}

} // namespace

extern "C" {
void *sel_registerName(const char *name) {
  static std::set<std::string> names;
  return const_cast<char *>(names.insert(name).first->c_str());
}
void *objc_getClass(const char *name) {
  static Object string;
  EXPECT_STREQ(name, "NSString");
  return &string;
}
// Called through pointers of other types, as objc_msgSend always is: no
// -fsanitize=function check (the sanitized build) applies to it.
__attribute__((no_sanitize("function"))) uintptr_t objc_msgSend(void *self, void *sel, ...) {
  va_list ap;
  va_start(ap, sel);
  uintptr_t result = send(static_cast<Object *>(self), static_cast<const char *>(sel), ap);
  va_end(ap);
  return result;
}
void *objc_autoreleasePoolPush(void) {
  fake.pools.emplace_back();
  return reinterpret_cast<void *>(fake.pools.size());
}
void objc_autoreleasePoolPop(void *pool) {
  EXPECT_EQ(reinterpret_cast<size_t>(pool), fake.pools.size()) << "pools popped out of order";
  for (Object *o : fake.pools.back())
    release(o);
  fake.pools.pop_back();
}
void *MTLCreateSystemDefaultDevice(void) {
  return fake.hasDevice ? make("MTLDevice") : nullptr;
}
}

namespace {

const char kAddSource[] = "#include <metal_stdlib>\n"
                          "kernel void add_one(device float* a [[buffer(0)]], "
                          "device uint* n [[buffer(1)]]) {}\n";
const char kScaleSource[] = "kernel void scale(device float* a [[buffer(0)]], "
                            "device const float* s [[buffer(1)]]) {}\n";

kiln_gpu_kernel kernel(const char *name, const char *source, uint32_t threads,
                       uint32_t buffers) {
  return {name, source, strlen(source), {threads, 1, 1}, buffers, 0, 0};
}

class MetalRuntime : public ::testing::Test {
protected:
  void SetUp() override {
    fake = FakeMetal();
    // add_one: a[i] += 1 for i < n (the launch's parameters).
    fake.kernels["add_one"] = [](const Dispatch &d) {
      auto *a = reinterpret_cast<float *>(contents(d.buffers.at(0)));
      uint32_t n = *reinterpret_cast<uint32_t *>(contents(d.buffers.at(1)));
      for (uint32_t i = 0; i < n; ++i)
        a[i] += 1;
    };
    // scale: a[i] *= s[0] for every thread.
    fake.kernels["scale"] = [](const Dispatch &d) {
      auto *a = reinterpret_cast<float *>(contents(d.buffers.at(0)));
      float s = *reinterpret_cast<float *>(contents(d.buffers.at(1)));
      for (NSUInteger i = 0; i < d.groups.width * d.threads.width; ++i)
        a[i] *= s;
    };
  }
  void TearDown() override {
    // Closing the device released every object it made.
    EXPECT_TRUE(fake.live.empty()) << fake.live.size() << " objects leaked, e.g. a "
                                   << (*fake.live.begin())->kind;
    EXPECT_TRUE(fake.pools.empty());
  }

  kiln_device *open(const std::vector<kiln_gpu_kernel> &kernels, std::string &error) {
    program = {KILN_GPU_METAL, static_cast<uint32_t>(kernels.size()), nullptr, nullptr};
    this->kernels = kernels;
    program.kernels = this->kernels.data();
    char message[512] = "";
    kiln_device *d = kiln_device_open(&program, message, sizeof message);
    error = message;
    return d;
  }

  std::vector<kiln_gpu_kernel> kernels;
  kiln_gpu_program program;
};

TEST_F(MetalRuntime, RunsLaunchesInOrderAtWait) {
  std::string error;
  kiln_device *d = open({kernel("add_one", kAddSource, 64, 2), kernel("scale", kScaleSource,
                                                                      32, 2)}, error);
  ASSERT_NE(d, nullptr) << error;
  EXPECT_STREQ(kiln_device_name(d), "Fake GPU (Metal)");
  auto *a = static_cast<float *>(kiln_device_alloc(d, 128 * sizeof(float)));
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 128; ++i)
    a[i] = float(i);
  const float two = 2;
  for (int launch = 0; launch < 2; ++launch) {
    uint32_t n = 128; // on the caller's stack: copied at the launch
    kiln_gpu_arg addArgs[] = {{a, 128 * sizeof(float), 0}, {&n, sizeof n, KILN_GPU_ARG_PARAMS}};
    int64_t grid[3] = {2, 1, 1};
    char message[256];
    ASSERT_EQ(kiln_device_launch(d, 0, grid, addArgs, message, sizeof message), 0) << message;
    n = 0;
    kiln_gpu_arg scaleArgs[] = {{a, 128 * sizeof(float), 0},
                                {&two, sizeof two, KILN_GPU_ARG_CONSTANT}};
    grid[0] = 4;
    ASSERT_EQ(kiln_device_launch(d, 1, grid, scaleArgs, message, sizeof message), 0) << message;
  }
  EXPECT_EQ(a[3], 3.0f) << "a launch ran before kiln_device_wait";
  char message[256];
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  EXPECT_EQ(a[3], ((3.0f + 1) * 2 + 1) * 2);
  EXPECT_EQ(a[127], ((127.0f + 1) * 2 + 1) * 2);

  // Four dispatches in one command buffer, with each kernel's threadgroup size.
  ASSERT_EQ(fake.ran.size(), 4u);
  EXPECT_EQ(fake.ran[0].kernel, "add_one");
  EXPECT_EQ(fake.ran[0].groups.width, 2u);
  EXPECT_EQ(fake.ran[0].threads.width, 64u);
  EXPECT_EQ(fake.ran[0].threads.height, 1u);
  EXPECT_EQ(fake.ran[1].kernel, "scale");
  EXPECT_EQ(fake.ran[1].groups.width, 4u);
  EXPECT_EQ(fake.ran[1].threads.width, 32u);
  // The constant went to the device once; the two launches' parameters to
  // distinct, aligned places of one buffer.
  EXPECT_EQ(fake.ran[1].buffers.at(1).buffer, fake.ran[3].buffers.at(1).buffer);
  const Binding &p0 = fake.ran[0].buffers.at(1), &p1 = fake.ran[2].buffers.at(1);
  EXPECT_EQ(p0.buffer, p1.buffer);
  EXPECT_NE(p0.offset, p1.offset);
  EXPECT_EQ(p1.offset % 256, 0u);
  EXPECT_EQ(fake.ran[0].buffers.at(0).buffer->options, 0u); // shared storage
  kiln_device_free(d, a);
  kiln_device_close(d);
}

TEST_F(MetalRuntime, BindsAViewAtItsOffset) {
  std::string error;
  kiln_device *d = open({kernel("add_one", kAddSource, 8, 2)}, error);
  ASSERT_NE(d, nullptr) << error;
  auto *arena = static_cast<float *>(kiln_device_alloc(d, 1024));
  uint32_t n = 4;
  kiln_gpu_arg args[] = {{arena + 16, 16, 0}, {&n, sizeof n, KILN_GPU_ARG_PARAMS}};
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  EXPECT_EQ(fake.ran[0].buffers.at(0).offset, 16 * sizeof(float));
  EXPECT_EQ(arena[16], 1.0f);
  EXPECT_EQ(arena[15], 0.0f);
  EXPECT_EQ(arena[20], 0.0f);
  kiln_device_close(d); // frees the arena too
}

// Launch parameters fill their 64 KiB region: the queued launches run and
// the region starts over, and no launch is lost on the way (each adds 1).
TEST_F(MetalRuntime, RunsEveryLaunchWhenParametersOverflow) {
  std::string error;
  kiln_device *d = open({kernel("add_one", kAddSource, 8, 2)}, error);
  ASSERT_NE(d, nullptr) << error;
  auto *a = static_cast<float *>(kiln_device_alloc(d, 8 * sizeof(float)));
  std::vector<uint32_t> params(1024, 0); // 4 KiB: n, then padding
  params[0] = 8;
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  for (int launch = 0; launch < 20; ++launch) {
    kiln_gpu_arg args[] = {{a, 8 * sizeof(float), 0},
                           {params.data(), params.size() * 4, KILN_GPU_ARG_PARAMS}};
    ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
  }
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  EXPECT_EQ(fake.ran.size(), 20u);
  EXPECT_EQ(a[7], 20.0f);
  kiln_device_close(d);
}

// A constant used through a short view first and whole later gets a copy
// that covers the whole use.
TEST_F(MetalRuntime, CopiesAConstantWholeForALongerUse) {
  std::string error;
  kiln_device *d = open({kernel("scale", kScaleSource, 4, 2)}, error);
  ASSERT_NE(d, nullptr) << error;
  auto *a = static_cast<float *>(kiln_device_alloc(d, 4 * sizeof(float)));
  static const float factors[4] = {3, 5, 7, 9};
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  for (uint64_t bytes : {4u, 16u}) {
    kiln_gpu_arg args[] = {{a, 4 * sizeof(float), 0}, {factors, bytes, KILN_GPU_ARG_CONSTANT}};
    ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
  }
  ASSERT_EQ(kiln_device_wait(d, message, sizeof message), 0) << message;
  ASSERT_EQ(fake.ran.size(), 2u);
  EXPECT_EQ(fake.ran[0].buffers.at(1).buffer->contents.size(), 4u);
  EXPECT_EQ(fake.ran[1].buffers.at(1).buffer->contents.size(), 16u);
  EXPECT_EQ(reinterpret_cast<float *>(fake.ran[1].buffers.at(1).buffer->contents.data())[3], 9.0f);
  kiln_device_close(d);
}

TEST_F(MetalRuntime, SaysWhatIsWrong) {
  std::string error;
  EXPECT_EQ(open({kernel("bad", "#error nope\nkernel void bad() {}", 8, 0)}, error), nullptr);
  EXPECT_EQ(error, "Fake GPU (Metal) cannot compile the MSL of kernel 'bad': "
                   "program_source:1:2: error: a syntax error");
  EXPECT_EQ(open({kernel("other", kAddSource, 8, 2)}, error), nullptr);
  EXPECT_EQ(error, "the MSL of kernel 'other' has no function of that name");
  EXPECT_EQ(open({kernel("add_one", kAddSource, 2048, 2)}, error), nullptr);
  EXPECT_EQ(error, "kernel 'add_one' has 2048 threads per workgroup; Fake GPU (Metal) runs it "
                   "with at most 1024");
  fake.hasDevice = false;
  EXPECT_EQ(open({kernel("add_one", kAddSource, 8, 2)}, error), nullptr);
  EXPECT_EQ(error, "no Metal device (MTLCreateSystemDefaultDevice)");
  program = {KILN_GPU_VULKAN, 0, nullptr, nullptr};
  char message[256];
  EXPECT_EQ(kiln_device_open(&program, message, sizeof message), nullptr);
  EXPECT_STREQ(message, "this runtime runs Metal kernels, not Vulkan kernels (the model was "
                        "compiled for another system)");
}

TEST_F(MetalRuntime, ReportsLaunchAndKernelFailures) {
  std::string error;
  kiln_device *d = open({kernel("add_one", kAddSource, 8, 2)}, error);
  ASSERT_NE(d, nullptr) << error;
  float host[4] = {};
  uint32_t n = 4;
  kiln_gpu_arg args[] = {{host, sizeof host, 0}, {&n, sizeof n, KILN_GPU_ARG_PARAMS}};
  int64_t grid[3] = {1, 1, 1};
  char message[256];
  EXPECT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 1);
  // Host memory is not the device's (the message names its address).
  EXPECT_EQ(std::string(message).rfind("kernel 0: buffer 0 (16 bytes at ", 0), 0u) << message;
  EXPECT_NE(std::string(message).find(") is not in Fake GPU (Metal)'s memory"),
            std::string::npos)
      << message;
  EXPECT_EQ(kiln_device_launch(d, 7, grid, args, message, sizeof message), 1);
  EXPECT_STREQ(message, "kernel 7 does not exist (the model has 1)");

  auto *a = static_cast<float *>(kiln_device_alloc(d, sizeof host));
  args[0].data = a;
  ASSERT_EQ(kiln_device_launch(d, 0, grid, args, message, sizeof message), 0) << message;
  fake.kernelsFail = true;
  EXPECT_EQ(kiln_device_wait(d, message, sizeof message), 1);
  EXPECT_STREQ(message, "Fake GPU (Metal): the kernels failed: GPU address fault");
  kiln_device_close(d);
}

} // namespace
