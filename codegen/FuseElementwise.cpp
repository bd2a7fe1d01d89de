//===- FuseElementwise.cpp - elementwise fusion that spares contractions --===//
#include "codegen/Passes.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <set>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEELEMENTWISE
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::describeNode;

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
/// consumer. That pays for a scale or a bias (one op) that every user can
/// take in, so that it is never written to memory; not for one that stays
/// for a matmul or a convolution (the consumer would read the producer's
/// inputs instead of its result), nor for a normalization: fused into the
/// next residual add and LayerNormalization, whose reductions it feeds
/// too, each LayerNormalization of a BERT encoder recomputed all the ones
/// before it for every element.
static bool worthFusing(OpOperand *fused) {
  Value value = fused->get();
  Operation *consumer = fused->getOwner();
  if (llvm::all_of(value.getUsers(), [&](Operation *user) { return user == consumer; }))
    return true;
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  bool allUsersFuse = llvm::all_of(value.getUsers(), [](Operation *user) {
    return isa<linalg::GenericOp>(user) && !keepsIdentity(user) && !readsInputTwice(user);
  });
  return producer && allUsersFuse && producer.getNumReductionLoops() == 0 &&
         producer.getBody()->getOperations().size() <= 2; // one op and the yield
}

/// Why the elementwise producer of `fused` is not fused into its consumer,
/// or nothing when it is.
static std::optional<std::string> whyNotFused(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (keepsIdentity(producer) || keepsIdentity(consumer))
    return std::string("one of them keeps its identity for the CPU schedule");
  if (readsInputTwice(consumer))
    return std::string("the quantization reads its input twice");
  if (!worthFusing(fused))
    return std::string("it has other users, and recomputing it would not save its pass");
  return std::nullopt;
}

namespace {
struct KilnFuseElementwisePass
    : mlir::kiln::impl::KilnFuseElementwiseBase<KilnFuseElementwisePass> {
  using KilnFuseElementwiseBase::KilnFuseElementwiseBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The greedy driver asks again after every rewrite: report each
    // decision once.
    std::set<std::string> reported;
    auto remark = [&](Operation *at, const std::string &message) {
      if (report && reported.insert(describeNode(at) + message).second)
        emitRemark(at->getLoc()) << "fusion: " << message;
    };
    linalg::ControlFusionFn control = [&](OpOperand *fused) {
      std::optional<std::string> why = whyNotFused(fused);
      // Decisions between two ops of one node's lowering are not news.
      Operation *producer = fused->get().getDefiningOp(), *consumer = fused->getOwner();
      if (producer && isa<linalg::GenericOp>(producer) && isa<linalg::GenericOp>(consumer) &&
          describeNode(producer) != describeNode(consumer))
        remark(producer, why ? "not fused into " + describeNode(consumer) + ": " + *why
                             : "fused into " + describeNode(consumer));
      return !why;
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
