//===- DistributeBuffers.cpp - linalg ops on buffers to workgroups --------===//
//
// Bufferization makes ops of its own after kiln-gpu-distribute: copies
// where a buffer cannot be written in place (a value used after a slice of
// it is overwritten), linalg.map for what tensor ops become. On the host
// each would cost a wait for the device and a pass over device memory by
// the CPU; this pass tiles them to workgroups and threads like
// kiln-gpu-distribute, so that kiln-gpu-map-forall makes kernels of them.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUDISTRIBUTEBUFFERS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Tiles `op` (on buffers) into an scf.forall by `tileSizes` and erases it;
/// returns the tiled op.
FailureOr<TilingInterface> tile(RewriterBase &rewriter, TilingInterface op,
                                ArrayRef<int64_t> tileSizes, bool threads) {
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tileSizes));
  options.setMapping(mappingFor(rewriter.getContext(), tileSizes, threads));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result = scf::tileUsingSCF(rewriter, op, options);
  if (failed(result))
    return failure();
  rewriter.eraseOp(op);
  return cast<TilingInterface>(result->tiledOps.front());
}

struct KilnGpuDistributeBuffersPass
    : mlir::kiln::impl::KilnGpuDistributeBuffersBase<KilnGpuDistributeBuffersPass> {
  using KilnGpuDistributeBuffersBase::KilnGpuDistributeBuffersBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    // Host copies become linalg.copy ops first.
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<scf::ForallOp>() && !copy->getParentOfType<gpu::LaunchOp>())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && !op->getParentOfType<scf::ForallOp>() &&
          !op->getParentOfType<gpu::LaunchOp>() && !op->hasAttr(kComputedOnRead))
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops) {
      Tiles tiles = chooseTiles(op, *target, enoughWorkgroups, wideTensorTiles);
      if (tiles.none() || unsupportedByKernels(op, *target))
        continue;
      FailureOr<TilingInterface> workgroup =
          tile(rewriter, cast<TilingInterface>(op.getOperation()), tiles.workgroup, false);
      if (failed(workgroup) ||
          failed(tile(rewriter, *workgroup, tiles.thread, /*threads=*/true))) {
        op.emitError("kiln-gpu-distribute-buffers: cannot tile this op to workgroups and "
                     "threads");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
