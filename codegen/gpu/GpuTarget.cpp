//===- GpuTarget.cpp - the GPU targets kiln knows -------------------------===//
#include "codegen/gpu/GpuTarget.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir::kiln;

static constexpr MmaKind kNvidiaVulkan[] = {MmaKind::CooperativeMatrix};
static constexpr MmaKind kSm80[] = {MmaKind::MmaSync};
static constexpr MmaKind kSm90a[] = {MmaKind::MmaSync, MmaKind::Wgmma};
static constexpr MmaKind kApple[] = {MmaKind::SimdgroupMatrix};

/// Limits as the devices report them (vulkaninfo, CUDA's and Metal's
/// feature tables). `vulkan` is what every Vulkan 1.1 device guarantees.
/// CUDA's shared memory: 48 KiB static, the tiling's budget; past that,
/// dynamic, up to 163 KiB a workgroup on sm_80 and 227 KiB on sm_90. Every
/// CUDA target compiles for both chips, so sm_80's limit holds.
static const GpuTarget kTargets[] = {
    {"vulkan", GpuApi::Vulkan, 32, 16 * 1024, 16 * 1024, 128, {128, 128, 64}, 16, {}, true, false, false, false},
    {"vulkan-lavapipe", GpuApi::Vulkan, 8, 32 * 1024, 32 * 1024, 1024, {1024, 1024, 1024}, 16, {}, true, false, false, false},
    // lavapipe running sm_80's tensor-core kernels, each warp instruction
    // emulated by the workgroup (kiln-spirv-emulate-warp-matrices): warps
    // of 32 as CUDA's; of lavapipe's 32 KiB, 16 for the tiling, the rest
    // for the emulation's exchange buffer (1152 bytes a warp) and the sums that
    // CUDA would put in the chunks' place (the emulation separates them).
    {"vulkan-lavapipe-sm80", GpuApi::Vulkan, 32, 16 * 1024, 16 * 1024, 1024, {1024, 1024, 1024}, 16, kSm80,
     true, false, false, true},
    // The same with sm_90a's wgmma (--cuda-wgmma), emulated too.
    {"vulkan-lavapipe-sm90a", GpuApi::Vulkan, 32, 16 * 1024, 16 * 1024, 1024, {1024, 1024, 1024}, 16, kSm90a,
     true, false, false, true},
    {"vulkan-nvidia", GpuApi::Vulkan, 32, 48 * 1024, 48 * 1024, 1024, {1024, 1024, 64}, 16, kNvidiaVulkan,
     true, false, false, false},
    {"cuda", GpuApi::Cuda, 32, 48 * 1024, 163 * 1024, 1024, {1024, 1024, 64}, 16, kSm80, true, true, true, true},
    {"cuda-sm80", GpuApi::Cuda, 32, 48 * 1024, 163 * 1024, 1024, {1024, 1024, 64}, 16, kSm80, true, true, true, true},
    {"cuda-sm90a", GpuApi::Cuda, 32, 48 * 1024, 163 * 1024, 1024, {1024, 1024, 64}, 16, kSm90a, true, true, true, true},
    {"metal", GpuApi::Metal, 32, 32 * 1024, 32 * 1024, 1024, {1024, 1024, 1024}, 16, kApple, false, false, false, false},
};

std::optional<GpuTarget> mlir::kiln::lookupGpuTarget(llvm::StringRef name) {
  for (const GpuTarget &target : kTargets)
    if (target.name == name)
      return target;
  return std::nullopt;
}

std::string mlir::kiln::gpuTargetNames() {
  return llvm::join(llvm::map_range(kTargets, [](const GpuTarget &t) { return t.name; }), ", ");
}
