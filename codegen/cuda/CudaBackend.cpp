//===- CudaBackend.cpp - models whose kernels run on NVIDIA GPUs ----------===//
//
// A CUDA model is a host program (this machine's CPU backend compiles it)
// that launches kernels through the runtime's CUDA device (the driver API
// only). The stages are the shared GPU pipeline's (codegen/gpu/
// GpuPipeline.h); the llvm stage compiles the outlined kernels to a fatbin
// (kiln-cuda-compile-kernels).
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaBackend.h"
#include "codegen/cpu/CpuBackend.h"
#include "codegen/cuda/Passes.h"
#include "codegen/gpu/GpuPipeline.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;
using namespace mlir::kiln;

std::string mlir::kiln::findCudaToolkit(llvm::StringRef option) {
  auto hasPtxas = [](llvm::StringRef dir) {
    llvm::SmallString<256> ptxas(dir);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    return llvm::sys::fs::can_execute(ptxas);
  };
  if (!option.empty())
    return hasPtxas(option) ? option.str() : "";
  for (const char *dir : {static_cast<const char *>(std::getenv("CUDA_HOME")), "/usr/local/cuda"})
    if (dir && hasPtxas(dir))
      return dir;
  if (llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas"))
    return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas)).str();
  return "";
}

std::string mlir::kiln::cudaToolkitMissing(llvm::StringRef option) {
  return "no CUDA toolkit (ptxas) " +
         (option.empty() ? std::string("in $CUDA_HOME, /usr/local/cuda or the PATH")
                         : "in " + option.str()) +
         "; pass --cuda-toolkit=DIR";
}

bool mlir::kiln::isCudaTarget(llvm::StringRef target) {
  std::optional<GpuTarget> gpu = lookupGpuTarget(target);
  return gpu && gpu->api == GpuApi::Cuda;
}

void mlir::kiln::addTensorCorePasses(OpPassManager &pm, const GpuTarget &gpu,
                                     const PipelineOptions &options) {
  if (options.sparseMma)
    pm.addPass(createKilnCudaMmaSparse({gpu.name, options.reportPlacement}));
  if (options.wgmma)
    pm.addNestedPass<func::FuncOp>(
        createKilnCudaWgmma({gpu.name, options.wgmmaOverlap, options.reportPlacement}));
  pm.addNestedPass<func::FuncOp>(createKilnCudaMmaSync(
      {gpu.name, options.precision == Precision::TF32, options.reportPlacement}));
}

void mlir::kiln::addTensorCoreAttention(OpPassManager &pm, const GpuTarget &gpu,
                                        const PipelineOptions &options) {
  if (!gpu.has(MmaKind::MmaSync))
    return;
  // With --precision, every attention's operands are rounded; without it,
  // a half model's attention runs in its own 16-bit type, exactly.
  StringRef type = options.precision == Precision::F16    ? "f16"
                   : options.precision == Precision::BF16 ? "bf16"
                                                          : "";
  pm.addNestedPass<func::FuncOp>(createKilnCudaAttentionMma(
      {options.attentionRowsAbove, type.str(), options.reportPlacement}));
}

namespace {
class CudaBackend final : public GpuBackend {
public:
  using GpuBackend::GpuBackend;

  bool widensHalfMatmuls() const override { return true; }

private:
  void addAttentionPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    addTensorCoreAttention(pm, gpu, options);
  }
  void addMatrixPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    addTensorCorePasses(pm, gpu, options);
  }
  void addKernelCompilation(OpPassManager &pm, const PipelineOptions &options) const override {
    KilnCudaCompileKernelsOptions compile;
    compile.toolkit = options.cudaToolkit;
    pm.addPass(createKilnCudaCompileKernels(compile));
  }
};
} // namespace

FailureOr<std::unique_ptr<TargetBackend>>
mlir::kiln::createCudaBackend(llvm::StringRef target, llvm::StringRef cpu, std::string &error) {
  if (!isCudaTarget(target)) {
    error = "unknown CUDA target '" + target.str() + "'";
    return failure();
  }
  auto host = createCpuBackend("", cpu, error);
  if (failed(host))
    return failure();
  return std::unique_ptr<TargetBackend>(
      std::make_unique<CudaBackend>(*lookupGpuTarget(target), std::move(*host)));
}
