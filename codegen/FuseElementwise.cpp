//===- FuseElementwise.cpp - elementwise fusion that spares contractions --===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEELEMENTWISE
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

/// Named structured ops (matmul, batch_matmul, fill, transpose, ...) keep
/// their identity: the CPU schedule and bufferization look for them by name.
/// So do widening integer matmuls, generics that kiln-vnni-matmul looks for,
/// and layout copies, whose loop order is chosen for their memory accesses.
static bool keepsIdentity(Operation *op) {
  if (!op || !isa<linalg::LinalgOp>(op))
    return false;
  return !isa<linalg::GenericOp>(op) || op->hasAttr("kiln.widening_matmul") ||
         op->hasAttr("kiln.layout_copy");
}

/// A quantization reads its input twice (range, then values): a producer
/// fused into both would be computed twice, so its input stays a tensor.
static bool readsInputTwice(Operation *op) { return op && op->hasAttr("kiln.quantize"); }

/// Fusing a producer that has other users computes it once more per
/// consumer. That pays for a scale or a bias (one op), but not for a
/// normalization: fused into the next residual add and LayerNormalization,
/// whose reductions it feeds too, each LayerNormalization of a BERT encoder
/// recomputed all the ones before it for every element.
static bool worthFusing(OpOperand *fused) {
  Value value = fused->get();
  Operation *consumer = fused->getOwner();
  if (llvm::all_of(value.getUsers(), [&](Operation *user) { return user == consumer; }))
    return true;
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  return producer && producer.getNumReductionLoops() == 0 &&
         producer.getBody()->getOperations().size() <= 2; // one op and the yield
}

namespace {
struct KilnFuseElementwisePass
    : mlir::kiln::impl::KilnFuseElementwiseBase<KilnFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      return !keepsIdentity(fused->get().getDefiningOp()) && !keepsIdentity(fused->getOwner()) &&
             !readsInputTwice(fused->getOwner()) && worthFusing(fused);
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
