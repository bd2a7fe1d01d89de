//===- UnshareEmptyTensors.cpp - one tensor.empty per use ------------------===//
//
// CSE merges equal tensor.empty ops, and one-shot bufferization then lets
// the ops that write them share one buffer, each writing it in place once
// the previous one's value is dead at the tensor level. A kernel that
// reads a buffer the tensors do not show (kiln-gpu-compute-on-read: the
// matmul computes a convolution's fields from its input) would then write
// its results over the input it is still reading. Each use gets a
// tensor.empty of its own, so each op writes a new buffer; the memory plan
// still lets buffers of disjoint lifetimes share memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUUNSHAREEMPTYTENSORS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

struct KilnGpuUnshareEmptyTensorsPass
    : mlir::kiln::impl::KilnGpuUnshareEmptyTensorsBase<KilnGpuUnshareEmptyTensorsPass> {
  void runOnOperation() override {
    // A reshape or slice of a tensor.empty is one (CSE merges those too).
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns, /*foldSingleUseOnly=*/false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    SmallVector<tensor::EmptyOp> shared;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (!empty->hasOneUse() && !empty->use_empty())
        shared.push_back(empty);
    });
    IRRewriter rewriter(&getContext());
    for (tensor::EmptyOp empty : shared) {
      // A clone just before each user; the original goes.
      for (OpOperand &use : llvm::make_early_inc_range(empty->getUses())) {
        rewriter.setInsertionPoint(use.getOwner());
        Operation *clone = rewriter.clone(*empty);
        rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(clone->getResult(0)); });
      }
      rewriter.eraseOp(empty);
    }
  }
};

} // namespace
