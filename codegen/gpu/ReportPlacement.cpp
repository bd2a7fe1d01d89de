//===- ReportPlacement.cpp - what runs on the GPU, what stays on the host -===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUREPORTPLACEMENT
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// "8x4x1" from three index values ("?" where dynamic).
std::string extents(Value x, Value y, Value z) {
  auto extent = [](Value v) {
    std::optional<int64_t> c = getConstantIntValue(v);
    return c ? std::to_string(*c) : std::string("?");
  };
  return extent(x) + "x" + extent(y) + "x" + extent(z);
}

void reportKernel(gpu::LaunchOp launch) {
  SmallVector<linalg::LinalgOp> ops;
  launch.getBody().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  Location at = ops.empty() ? launch.getLoc() : ops.back().getLoc();
  InFlightDiagnostic remark = emitRemark(at)
                              << "placement: GPU kernel, " << extents(grid.x, grid.y, grid.z)
                              << " workgroups of " << extents(block.x, block.y, block.z)
                              << " threads";
  if (!ops.empty())
    remark << ": " << llvm::join(llvm::map_range(ops, [](linalg::LinalgOp op) {
                                   return op->getName().getStringRef();
                                 }),
                                 ", ");
}

/// Why host op `op` is not a kernel.
std::string hostReason(Operation *op, const GpuTarget &target) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (linalgOp.getNumParallelLoops() == 0)
      return "no parallel loop to distribute (a 0-d op or a reduction to a scalar)";
    if (std::optional<std::string> reason = unsupportedByKernels(op, target))
      return *reason;
  }
  if (auto reason = op->getAttrOfType<StringAttr>("kiln.placement"))
    return reason.str();
  if (isa<memref::LoadOp>(op))
    return "the host reads a value it needs (a branch's condition, a run-time size), once "
           "the kernels before it are done";
  if (isa<memref::ReshapeOp>(op))
    return "the host reads a shape computed at run time (a Reshape to it)";
  if (isa<memref::StoreOp>(op))
    return "the host writes a value (a run-time size, a loop's state)";
  if (isa<memref::CopyOp>(op))
    return "a copy between buffers (a slice, a concatenation or a pad), done by the host";
  if (isa<scf::ForOp, scf::WhileOp, scf::IfOp, scf::ForallOp, scf::ParallelOp>(op))
    return "a loop or branch (a recurrent or data-dependent op, attention's blocks) runs on "
           "the host";
  return ("'" + op->getName().getStringRef() + "' has no GPU lowering yet").str();
}

/// Reports the ops of `block` that run kernels or touch their buffers
/// (`device`, by root); a loop that launches kernels is reported op by op
/// inside.
void report(Block &block, const DenseSet<Value> &device, const GpuTarget &target) {
  for (Operation &op : block) {
    if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      reportKernel(launch);
      continue;
    }
    if (op.hasAttr(kComputedOnRead)) {
      emitRemark(op.getLoc()) << "placement: not written out: the kernels that read it compute "
                                 "each element from its inputs where they load it";
      continue;
    }
    bool launches =
        op.walk([](gpu::LaunchOp) { return WalkResult::interrupt(); }).wasInterrupted();
    if (launches) {
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          report(inner, device, target);
    } else if (kiln::touchesDeviceBuffers(&op, device)) {
      emitRemark(op.getLoc()) << "placement: host: " << hostReason(&op, target);
    }
  }
}

struct KilnGpuReportPlacementPass
    : mlir::kiln::impl::KilnGpuReportPlacementBase<KilnGpuReportPlacementPass> {
  using KilnGpuReportPlacementBase::KilnGpuReportPlacementBase;

  void runOnOperation() override {
    if (getOperation().isExternal())
      return markAllAnalysesPreserved();
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    // The buffers kernels use: those their bodies read or write from
    // outside, by root.
    DenseSet<Value> device;
    getOperation().walk([&](gpu::LaunchOp launch) {
      launch.getBody().walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (isa<MemRefType>(operand.getType()) &&
              !launch->isAncestor(operand.getParentRegion()->getParentOp()))
            device.insert(rootBuffer(operand));
      });
    });
    report(getOperation().getBody().front(), device, *target);
    markAllAnalysesPreserved();
  }
};

} // namespace
