//===- GpuPipeline.cpp - the stages every GPU backend shares --------------===//
#include "codegen/gpu/GpuPipeline.h"
#include "codegen/Passes.h"
#include "codegen/common/Passes.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void GpuBackend::addLinalgPasses(OpPassManager &pm, const PipelineOptions &options) const {
  // Attention whose scores would be large: one kernel, the target's own
  // or a thread per query row. The rest unfused: its matmuls and softmax
  // become kernels (the blocked online softmax is a host loop nest).
  addAttentionPasses(pm, options);
  pm.addNestedPass<func::FuncOp>(
      createKilnGpuAttentionRows({options.attentionRowsAbove, options.reportPlacement}));
  // Softmax and layer norm over long rows: one kernel, a workgroup per row.
  pm.addNestedPass<func::FuncOp>(createKilnGpuNormalizeRows({128, options.reportPlacement}));
  ConvertKilnToLinalgOptions lowering;
  lowering.attentionKeyBlock = 0;
  lowering.attentionHalfMatmuls = widensHalfMatmuls();
  pm.addPass(createConvertKilnToLinalg(lowering));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnFuseElementwise({options.reportFusion, /*keepContractions=*/true}));
  pm.addNestedPass<func::FuncOp>(createKilnGpuConvAsMatmul());
  pm.addNestedPass<func::FuncOp>(createKilnGpuReadThroughPadding());
  pm.addNestedPass<func::FuncOp>(createKilnGpuSplitReductions(
      {gpu.name, options.splitContractions, options.reportPlacement}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void GpuBackend::addBufferizedPasses(OpPassManager &pm, const PipelineOptions &options) const {
  // tf32 matmuls run on the tensor cores only in 4x4 results per thread;
  // both passes that tile take the same rule.
  int64_t enoughWorkgroups = options.precision == Precision::TF32 ? 0 : kEnoughWorkgroups;
  pm.addNestedPass<func::FuncOp>(createKilnGpuTransposeOnRead({options.reportPlacement}));
  // (After the canonicalizer has dropped the padded copies that
  // kiln-gpu-read-through-padding left unread.)
  pm.addNestedPass<func::FuncOp>(
      createKilnGpuRoundOnRead({gpu.name, enoughWorkgroups, options.wideTensorTiles}));
  pm.addNestedPass<func::FuncOp>(
      createKilnGpuDistribute(
          {gpu.name, options.reportFusion, enoughWorkgroups, options.wideTensorTiles}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createKilnGpuUnshareEmptyTensors());
  addBufferizationPasses(pm);
  pm.addNestedPass<func::FuncOp>(
      createKilnGpuDistributeBuffers({gpu.name, enoughWorkgroups, options.wideTensorTiles}));
  pm.addNestedPass<func::FuncOp>(createKilnGpuMapForall());
  pm.addNestedPass<func::FuncOp>(createKilnGpuKernelBuffers());
  if (options.reportPlacement)
    pm.addNestedPass<func::FuncOp>(createKilnGpuReportPlacement({gpu.name}));
  pm.addNestedPass<func::FuncOp>(createKilnGpuPrivateAccumulators());
  pm.addNestedPass<func::FuncOp>(createKilnGpuPromoteOperands(
      {gpu.name, options.reportPlacement, options.synchronousStaging}));
  addMatrixPasses(pm, options);
  pm.addNestedPass<func::FuncOp>(createKilnGpuComputeOnRead());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createKilnPlanMemory({options.reportMemory}));
}

void GpuBackend::addLLVMPasses(OpPassManager &pm, const PipelineOptions &options) const {
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createKilnGpuNameKernels());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addNestedPass<gpu::GPUFuncOp>(createConvertLinalgToLoopsPass());
  kernels.addNestedPass<gpu::GPUFuncOp>(createKilnGpuUnrollPrivateLoops());
  kernels.addPass(memref::createFoldMemRefAliasOpsPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  pm.addPass(createKilnGpuPackParams());
  addKernelCompilation(pm, options);
  pm.addPass(createKilnGpuEmbedKernels());
  addAfterEmbedding(pm);
  host->addStagePasses(pm, Stage::LLVM, options);
}
