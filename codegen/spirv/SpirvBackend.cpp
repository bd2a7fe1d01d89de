//===- SpirvBackend.cpp - models whose kernels go through SPIR-V ----------===//
//
// A Vulkan model is a host program (this machine's CPU backend compiles it)
// that launches SPIR-V kernels through the runtime; a Metal model the same
// for arm64 macOS, its kernels translated to MSL. The stages:
//   linalg      the target-neutral lowering, elementwise ops fused;
//   bufferized  linalg ops tiled to workgroups and threads, bufferized,
//               mapped to gpu.launch; the memory plan;
//   llvm        kernels outlined and converted to SPIR-V, embedded in the
//               module, launches turned into runtime calls (Metal: the
//               kernels translated to MSL); then the host's own llvm stage.
// What the GPU pipeline does not distribute stays in the host code and runs
// on the CPU, on the same (host-visible) buffers.
//
//===----------------------------------------------------------------------===//
#include "codegen/spirv/SpirvBackend.h"
#include "codegen/Passes.h"
#include "codegen/common/Passes.h"
#include "codegen/cpu/CpuBackend.h"
#include "codegen/gpu/GpuTarget.h"
#include "codegen/gpu/Passes.h"
#include "codegen/metal/Passes.h"
#include "codegen/spirv/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::isSpirvTarget(llvm::StringRef target) {
  std::optional<GpuTarget> gpu = lookupGpuTarget(target);
  return gpu && (gpu->api == GpuApi::Vulkan || gpu->api == GpuApi::Metal);
}

namespace {
class SpirvBackend final : public TargetBackend {
public:
  SpirvBackend(GpuTarget gpu, std::unique_ptr<TargetBackend> host)
      : gpu(std::move(gpu)), host(std::move(host)) {}

  llvm::StringRef triple() const override { return host->triple(); }
  std::string description() const override {
    return gpu.name + " kernels, host " + host->description();
  }

  LogicalResult emitObject(ModuleOp module, const ModelSignature &signature,
                           llvm::StringRef prefix, bool addMainAlias, bool emitLLVMIR,
                           std::string &out) const override {
    return host->emitObject(module, signature, prefix, addMainAlias, emitLLVMIR, out);
  }

private:
  GpuTarget gpu;
  std::unique_ptr<TargetBackend> host;

  void addLinalgPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    // Attention unfused: its matmuls and softmax become kernels (the
    // blocked online softmax is a host loop nest).
    ConvertKilnToLinalgOptions lowering;
    lowering.attentionKeyBlock = 0;
    pm.addPass(createConvertKilnToLinalg(lowering));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createKilnFuseElementwise({options.reportFusion}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }

  void addBufferizedPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    pm.addNestedPass<func::FuncOp>(createKilnGpuDistribute({gpu.name}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    addBufferizationPasses(pm);
    pm.addNestedPass<func::FuncOp>(createKilnGpuDistributeBuffers({gpu.name}));
    pm.addNestedPass<func::FuncOp>(createKilnGpuMapForall());
    pm.addNestedPass<func::FuncOp>(createKilnGpuKernelBuffers());
    if (options.reportPlacement)
      pm.addNestedPass<func::FuncOp>(createKilnGpuReportPlacement({gpu.name}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createKilnPlanMemory({options.reportMemory}));
  }

  void addLLVMPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    pm.addPass(createGpuLaunchSinkIndexComputationsPass());
    pm.addPass(createGpuKernelOutliningPass());
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    kernels.addNestedPass<gpu::GPUFuncOp>(createConvertLinalgToLoopsPass());
    kernels.addPass(memref::createFoldMemRefAliasOpsPass());
    kernels.addPass(memref::createExpandStridedMetadataPass());
    kernels.addPass(createLowerAffinePass());
    kernels.addPass(createCanonicalizerPass());
    kernels.addPass(createCSEPass());
    pm.addPass(createKilnSpirvPackParams());
    pm.addPass(createKilnSpirvConvertGpu());
    OpPassManager &spirvModules = pm.nest<spirv::ModuleOp>();
    spirvModules.addPass(spirv::createSPIRVLowerABIAttributesPass());
    spirvModules.addPass(spirv::createSPIRVUpdateVCEPass());
    pm.addPass(createKilnSpirvEmbedKernels());
    if (gpu.api == GpuApi::Metal)
      pm.addPass(createKilnMetalTranslateKernels());
    host->addStagePasses(pm, Stage::LLVM, options);
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
