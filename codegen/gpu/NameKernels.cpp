//===- NameKernels.cpp - kernels named after the nodes they compute -------===//
//
// Outlining names every kernel `main_kernel` (each in a gpu.module of its
// own), so a profiler's trace (Nsight, RenderDoc, Xcode) lists sixty
// kernels of one name. This pass names each one after the ONNX node whose
// result it writes, as --report=placement does, prefixed by its launch's
// index: `k12_layernormalization_35`.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUNAMEKERNELS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// The longest node name a kernel's name carries.
constexpr size_t kMaxNodeChars = 48;

/// `k<index>_<node>`: the node of the last linalg op in `kernel` (the one
/// that writes its result), its characters outside [A-Za-z0-9_] as `_`.
std::string kernelName(unsigned index, gpu::GPUFuncOp kernel) {
  Location at = kernel.getLoc();
  kernel.walk([&](linalg::LinalgOp op) { at = op.getLoc(); });
  std::string name = "k" + std::to_string(index);
  // A fused location's last node: the op whose result is written.
  std::vector<kiln::OnnxNode> nodes = kiln::onnxNodesOf(at);
  if (nodes.empty() || nodes.back().name.empty())
    return name;
  name += '_';
  for (char c : nodes.back().name.take_front(kMaxNodeChars))
    name += llvm::isAlnum(c) ? c : '_';
  return name;
}

struct KilnGpuNameKernelsPass
    : mlir::kiln::impl::KilnGpuNameKernelsBase<KilnGpuNameKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
    DenseSet<Operation *> named;
    MLIRContext *ctx = &getContext();
    for (auto [index, launch] : llvm::enumerate(launches)) {
      auto gpuModule = symbols.lookup<gpu::GPUModuleOp>(launch.getKernelModuleName());
      auto kernel = gpuModule ? gpuModule.lookupSymbol<gpu::GPUFuncOp>(launch.getKernelName())
                              : gpu::GPUFuncOp();
      // One module and kernel per launch, as outlining leaves them.
      if (!kernel || !named.insert(gpuModule).second) {
        launch.emitError("kiln-gpu-name-kernels: this launch's kernel is not its own");
        return signalPassFailure();
      }
      // A name another symbol has (from a run before) gets a suffix.
      std::string wanted = kernelName(index, kernel), name = wanted;
      for (unsigned n = 1; gpuModule.getSymName() != name && symbols.lookup(name); ++n)
        name = wanted + "_" + std::to_string(n);
      if (gpuModule.getSymName() != name && failed(symbols.rename(gpuModule, name))) {
        launch.emitError("kiln-gpu-name-kernels: cannot rename ") << launch.getKernelModuleName();
        return signalPassFailure();
      }
      SymbolTable::setSymbolName(kernel, name);
      launch.setKernelAttr(SymbolRefAttr::get(ctx, name, {FlatSymbolRefAttr::get(ctx, name)}));
    }
  }
};

} // namespace
