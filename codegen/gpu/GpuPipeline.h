//===- GpuPipeline.h - the stages every GPU backend shares ------*- C++ -*-===//
//
// A GPU model is a host program that launches kernels through the runtime.
// Up to the outlined kernels, every GPU target runs the same passes; only
// the kernels' code (SPIR-V, MSL, PTX) and the host's CPU differ:
//   linalg      the target-neutral lowering, attention unfused, elementwise
//               ops fused;
//   bufferized  linalg ops tiled to workgroups and threads, bufferized,
//               mapped to gpu.launch; the memory plan;
//   llvm        kernels outlined, their loops over whole buffers, their
//               scalars and shapes in one params buffer; then the target's
//               code for them, kiln-gpu-embed-kernels, the host's llvm stage.
// What the pipeline does not distribute stays in the host code and runs on
// the CPU, on the same buffers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_GPUPIPELINE_H
#define KILN_CODEGEN_GPU_GPUPIPELINE_H

#include "codegen/Pipeline.h"
#include "codegen/gpu/GpuTarget.h"

namespace mlir::kiln {

/// A GPU target's backend: the stages above, host code for `host`; a
/// target adds what compiles the outlined kernels into the code its
/// gpu.modules carry for kiln-gpu-embed-kernels.
class GpuBackend : public TargetBackend {
public:
  GpuBackend(GpuTarget gpu, std::unique_ptr<TargetBackend> host)
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

protected:
  GpuTarget gpu;

  /// From the outlined kernels (after kiln-gpu-pack-params) to their code
  /// on their gpu.modules.
  virtual void addKernelCompilation(OpPassManager &pm, const PipelineOptions &options) const = 0;
  /// Before kiln-gpu-attention-rows: the target's own kernels for attention
  /// too large to run unfused (tensor cores).
  virtual void addAttentionPasses(OpPassManager &pm, const PipelineOptions &options) const {}
  /// After kiln-gpu-promote-operands: the target's own instructions for
  /// the staged matmuls (tensor cores).
  virtual void addMatrixPasses(OpPassManager &pm, const PipelineOptions &options) const {}
  /// After kiln-gpu-embed-kernels, before the host's llvm stage.
  virtual void addAfterEmbedding(OpPassManager &pm) const {}

private:
  std::unique_ptr<TargetBackend> host;

  void addLinalgPasses(OpPassManager &pm, const PipelineOptions &options) const final;
  void addBufferizedPasses(OpPassManager &pm, const PipelineOptions &options) const final;
  void addLLVMPasses(OpPassManager &pm, const PipelineOptions &options) const final;
};

} // namespace mlir::kiln

#endif
