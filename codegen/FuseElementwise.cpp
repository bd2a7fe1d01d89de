//===- FuseElementwise.cpp - elementwise fusion that spares contractions --===//
#include "codegen/Passes.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"

#include <set>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEELEMENTWISE
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::describeNode;

/// Named structured ops (matmul, batch_matmul, fill, transpose, ...) keep
/// their identity: the CPU schedule and bufferization look for them by name.
/// So do widening integer matmuls, generics that kiln-cpu-vnni-matmul looks for,
/// and layout copies, whose loop order is chosen for their memory accesses.
static bool keepsIdentity(Operation *op) {
  if (!op || !isa<linalg::LinalgOp>(op))
    return false;
  return !isa<linalg::GenericOp>(op) || op->hasAttr("kiln.widening_matmul") ||
         op->hasAttr("kiln.layout_copy");
}

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
    return isa<linalg::GenericOp>(user) && !keepsIdentity(user);
  });
  return producer && allUsersFuse && producer.getNumReductionLoops() == 0 &&
         producer.getBody()->getOperations().size() <= 2; // one op and the yield
}

/// Whether `op` sums products over reduction loops: a matmul's or a
/// convolution's body, possibly on extended integers (a quantized one).
static bool isContractionOrConvolution(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0 &&
         (linalg::isaContractionOpInterface(linalgOp) ||
          linalg::isaConvolutionOpInterface(linalgOp));
}

/// LLVM's loop vectorizer takes time quadratic in the length of a loop body
/// (4000 fused Add/Mul: 2.5 s in VPlan), so fused bodies stop growing at
/// this many operations; one pass over memory per 256 operations costs
/// little next to them.
constexpr size_t kMaxFusedOps = 256;

static size_t bodySize(linalg::GenericOp op) {
  return op.getBody()->getOperations().size() - 1; // without the yield
}

/// Why the elementwise producer of `fused` is not fused into its consumer,
/// or nothing when it is.
static std::optional<std::string> whyNotFused(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (keepsIdentity(producer) || keepsIdentity(consumer))
    return std::string("one of them keeps its identity for the CPU schedule");
  if (!worthFusing(fused))
    return std::string("it has other users, and recomputing it would not save its pass");
  auto producerGeneric = dyn_cast_or_null<linalg::GenericOp>(producer);
  auto consumerGeneric = dyn_cast<linalg::GenericOp>(consumer);
  if (producerGeneric && consumerGeneric &&
      bodySize(producerGeneric) + bodySize(consumerGeneric) > kMaxFusedOps)
    return "the fused body would exceed " + std::to_string(kMaxFusedOps) + " operations";
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Tree fusion: each maximal tree of single-use elementwise producers becomes
// one generic, built in one go.
//
// Upstream's pattern fuses one producer into one consumer at a time; each
// fusion clones the whole (growing) body and re-deduplicates the operands, so
// a chain of N elementwise nodes costs O(N^2) (4000 Add/Mul by constants: 49
// s). Here every body is cloned exactly once and operands are deduplicated
// by a hash map, so the cost is linear in the size of the graph. Upstream's
// patterns then see only what is left: producers with several users,
// reshapes and constant folding.
//===----------------------------------------------------------------------===//

/// A producer that can be folded into `use`'s owner as part of a tree: an
/// all-parallel generic whose only use is `use` (an input of a generic that
/// is free to fuse), whose result map is a permutation, and whose body reads
/// neither its output nor linalg.index (the body is cloned at other indices).
static bool isTreeFusable(OpOperand &use) {
  auto producer = use.get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!producer || !consumer || keepsIdentity(producer) || keepsIdentity(consumer) ||
      !use.get().hasOneUse() || !consumer.isDpsInput(&use) ||
      producer->getNumResults() != 1 || producer.getNumLoops() != producer.getNumParallelLoops())
    return false;
  if (!consumer.getMatchingIndexingMap(&use).isProjectedPermutation() ||
      !producer.getIndexingMapMatchingResult(cast<OpResult>(use.get())).isPermutation())
    return false;
  return llvm::all_of(producer.getDpsInitsMutable(),
                      [&](OpOperand &init) {
                        return producer.getMatchingBlockArgument(&init).use_empty();
                      }) &&
         producer.getBody()->getOps<linalg::IndexOp>().empty();
}

/// Whether every loop appears in some operand's indexing map.
static bool coversEveryLoop(ArrayRef<AffineMap> maps, unsigned numLoops) {
  llvm::SmallBitVector covered(numLoops);
  for (AffineMap map : maps)
    for (AffineExpr e : map.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        covered.set(dim.getPosition());
  return covered.all();
}

/// The element of a constant whose elements are all equal.
static TypedAttr splatOf(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
  return splat ? splat.getSplatValue<TypedAttr>() : nullptr;
}

namespace {
/// Fuses one tree into its root: the fused generic's inputs are the tree's
/// leaves (deduplicated by value and indexing map), its body every member's
/// body, producers before consumers. Iterative: chains are thousands deep.
class TreeFuser {
public:
  /// Producers left out because the tree reached kMaxFusedOps go to
  /// `moreRoots`: each roots a tree of its own.
  TreeFuser(linalg::GenericOp root, const linalg::ControlFusionFn &control,
            SmallVectorImpl<linalg::GenericOp> &moreRoots)
      : root(root), control(control), moreRoots(moreRoots) {}

  /// Replaces the root by the fused generic; false when nothing fuses.
  bool run(RewriterBase &rewriter) {
    collect();
    if (members.size() == 1)
      return false;
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (const auto &leaf : llvm::make_first_range(leaves)) {
      if (splatOf(leaf.first))
        continue;
      inputs.push_back(leaf.first);
      maps.push_back(leaf.second);
    }
    for (OpOperand &init : root.getDpsInitsMutable())
      maps.push_back(root.getMatchingIndexingMap(&init));
    // A reduction loop's bounds come from its operands: keep them known.
    if (!coversEveryLoop(maps, root.getNumLoops()))
      return false;
    rewriter.setInsertionPoint(root);
    auto fusedOp = linalg::GenericOp::create(rewriter, root.getLoc(), root.getResultTypes(),
                                             inputs, root.getDpsInits(), maps,
                                             root.getIteratorTypesArray());
    fusedOp->setDiscardableAttrs(root->getDiscardableAttrDictionary());
    Block *block = rewriter.createBlock(&fusedOp.getRegion());
    for (Value v : llvm::concat<Value>(inputs, root.getDpsInits()))
      block->addArgument(getElementTypeOrSelf(v.getType()), v.getLoc());
    for (auto [i, init] : llvm::enumerate(root.getDpsInitsMutable()))
      mapping.map(root.getMatchingBlockArgument(&init), block->getArgument(inputs.size() + i));
    // Leaves become block arguments, except splat constants (a Mul by 2.0),
    // which become scalars in the body.
    rewriter.setInsertionPointToStart(block);
    unsigned nextArgument = 0;
    for (const auto &leaf : llvm::make_first_range(leaves)) {
      if (TypedAttr splat = splatOf(leaf.first))
        leafValues.push_back(arith::ConstantOp::create(rewriter, leaf.first.getLoc(), splat));
      else
        leafValues.push_back(block->getArgument(nextArgument++));
    }
    // Reverse pre-order: every producer before its consumer, the root last.
    for (linalg::GenericOp op : llvm::reverse(members))
      cloneBody(rewriter, op);
    auto yield = cast<linalg::YieldOp>(root.getBody()->getTerminator());
    linalg::YieldOp::create(rewriter, yield.getLoc(),
                            llvm::map_to_vector(yield.getValues(), [&](Value v) {
                              return mapping.lookupOrDefault(v);
                            }));
    rewriter.replaceOp(root, fusedOp->getResults());
    for (linalg::GenericOp producer : llvm::drop_begin(members)) // consumers first
      rewriter.eraseOp(producer);
    return true;
  }

private:
  /// Walks the tree in pre-order, recording each leaf operand's indexing
  /// map in the root's iteration space.
  void collect() {
    size_t size = bodySize(root);
    SmallVector<std::pair<linalg::GenericOp, AffineMap>> worklist = {
        {root, AffineMap::getMultiDimIdentityMap(root.getNumLoops(), root.getContext())}};
    while (!worklist.empty()) {
      auto [op, rootToOp] = worklist.pop_back_val();
      members.push_back(op);
      for (OpOperand *use : op.getDpsInputOperands()) {
        AffineMap map = op.getMatchingIndexingMap(use).compose(rootToOp);
        auto producer = use->get().getDefiningOp<linalg::GenericOp>();
        bool fusable = isTreeFusable(*use);
        bool fits = fusable && size + bodySize(producer) <= kMaxFusedOps;
        if (fits && control(use)) {
          size += bodySize(producer);
          AffineMap result = producer.getIndexingMapMatchingResult(cast<OpResult>(use->get()));
          worklist.push_back({producer, inversePermutation(result).compose(map)});
          continue;
        }
        if (fusable && !fits)
          moreRoots.push_back(producer);
        leafOf[use] = leaves.insert({{use->get(), map}, (unsigned)leaves.size()}).first->second;
      }
    }
  }

  /// Clones `op`'s body (without its yield) at the insertion point, its
  /// input block arguments bound to the leaves' values or to what the fused
  /// producers (already cloned) yield.
  void cloneBody(RewriterBase &rewriter, linalg::GenericOp op) {
    for (OpOperand *use : op.getDpsInputOperands()) {
      Value bound;
      if (auto leaf = leafOf.find(use); leaf != leafOf.end()) {
        bound = leafValues[leaf->second];
      } else {
        auto producer = use->get().getDefiningOp<linalg::GenericOp>();
        auto yield = cast<linalg::YieldOp>(producer.getBody()->getTerminator());
        bound = mapping.lookupOrDefault(yield.getValues()[0]);
      }
      mapping.map(op.getMatchingBlockArgument(use), bound);
    }
    for (Operation &inner : op.getBody()->without_terminator())
      rewriter.clone(inner, mapping);
  }

  linalg::GenericOp root;
  const linalg::ControlFusionFn &control;
  SmallVectorImpl<linalg::GenericOp> &moreRoots;
  SmallVector<linalg::GenericOp> members; // pre-order: the root first
  llvm::MapVector<std::pair<Value, AffineMap>, unsigned> leaves;
  llvm::DenseMap<OpOperand *, unsigned> leafOf;
  SmallVector<Value> leafValues; // per leaf: a block argument or a scalar
  IRMapping mapping;
};
} // namespace

/// Fuses every tree of single-use elementwise producers into its root.
static void fuseTrees(Operation *scope, const linalg::ControlFusionFn &control) {
  SmallVector<linalg::GenericOp> roots;
  scope->walk([&](linalg::GenericOp op) {
    if (!keepsIdentity(op) && !(op->hasOneUse() && isTreeFusable(*op->getUses().begin())))
      roots.push_back(op);
  });
  IRRewriter rewriter(scope->getContext());
  for (size_t i = 0; i < roots.size(); ++i)
    TreeFuser(roots[i], control, roots).run(rewriter);
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
      if (!why && keepContractions && isContractionOrConvolution(fused->getOwner()))
        why = "the GPU tiles the consumer as a matmul, which would compute the producer "
              "again for every output";
      // Decisions between two ops of one node's lowering are not news.
      Operation *producer = fused->get().getDefiningOp(), *consumer = fused->getOwner();
      if (producer && isa<linalg::GenericOp>(producer) && isa<linalg::GenericOp>(consumer) &&
          describeNode(producer) != describeNode(consumer))
        remark(producer, why ? "not fused into " + describeNode(consumer) + ": " + *why
                             : "fused into " + describeNode(consumer));
      return !why;
    };
    fuseTrees(getOperation(), control);
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
