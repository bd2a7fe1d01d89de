//===- SpirvBackend.cpp - models whose kernels go through SPIR-V ----------===//
//
// A Vulkan model is a host program (this machine's CPU backend compiles it)
// that launches SPIR-V kernels through the runtime; a Metal model the same
// for arm64 macOS, its kernels translated to MSL. The stages are the shared
// GPU pipeline's (codegen/gpu/GpuPipeline.h); the llvm stage converts the
// outlined kernels to SPIR-V (Metal: then to MSL).
//
//===----------------------------------------------------------------------===//
#include "codegen/spirv/SpirvBackend.h"
#include "codegen/cpu/CpuBackend.h"
#include "codegen/cuda/CudaBackend.h"
#include "codegen/gpu/GpuPipeline.h"
#include "codegen/gpu/Passes.h"
#include "codegen/metal/Passes.h"
#include "codegen/spirv/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::isSpirvTarget(llvm::StringRef target) {
  std::optional<GpuTarget> gpu = lookupGpuTarget(target);
  return gpu && (gpu->api == GpuApi::Vulkan || gpu->api == GpuApi::Metal);
}

namespace {
class SpirvBackend final : public GpuBackend {
public:
  using GpuBackend::GpuBackend;

  /// vulkan-lavapipe-sm80 keeps 16-bit matmul operands, as CUDA does.
  bool widensHalfMatmuls() const override { return gpu.has(MmaKind::MmaSync); }

private:
  void addAttentionPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    addTensorCoreAttention(pm, gpu, options);
  }
  /// vulkan-lavapipe-sm80: CUDA's tensor-core kernels, their warp
  /// instructions then emulated by the workgroup.
  void addMatrixPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    if (!gpu.has(MmaKind::MmaSync))
      return;
    addTensorCorePasses(pm, gpu, options);
    pm.addNestedPass<func::FuncOp>(createKilnSpirvEmulateWarpMatrices());
  }

  void addKernelCompilation(OpPassManager &pm, const PipelineOptions &) const override {
    pm.addPass(createKilnSpirvConvertGpu());
    OpPassManager &spirvModules = pm.nest<spirv::ModuleOp>();
    spirvModules.addPass(spirv::createSPIRVLowerABIAttributesPass());
    spirvModules.addPass(spirv::createSPIRVUpdateVCEPass());
    pm.addPass(createKilnSpirvSerializeKernels());
  }

  void addAfterEmbedding(OpPassManager &pm) const override {
    if (gpu.api == GpuApi::Metal)
      pm.addPass(createKilnMetalTranslateKernels());
  }
};
} // namespace

FailureOr<std::unique_ptr<TargetBackend>>
mlir::kiln::createSpirvBackend(llvm::StringRef target, llvm::StringRef cpu, std::string &error) {
  if (!isSpirvTarget(target)) {
    error = "unknown Vulkan or Metal target '" + target.str() + "'";
    return failure();
  }
  GpuTarget gpu = *lookupGpuTarget(target);
  // Metal's host is an Apple GPU's Mac: arm64 macOS 13 and up.
  bool metal = gpu.api == GpuApi::Metal;
  auto host = createCpuBackend(metal ? "arm64-apple-macosx13.0.0" : "",
                               metal && cpu.empty() ? "apple-m1" : cpu, error);
  if (failed(host))
    return failure();
  return std::unique_ptr<TargetBackend>(
      std::make_unique<SpirvBackend>(std::move(gpu), std::move(*host)));
}
