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

void addGpuLinalgPasses(OpPassManager &pm, const PipelineOptions &options);
void addGpuBufferizedPasses(OpPassManager &pm, const GpuTarget &gpu,
                            const PipelineOptions &options);
/// The first part of the llvm stage: kernels outlined into gpu.modules,
/// their bodies loops over buffers with static layouts, and
/// kiln-gpu-pack-params.
void addGpuKernelOutlining(OpPassManager &pm);

} // namespace mlir::kiln

#endif
