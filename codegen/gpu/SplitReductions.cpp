//===- SplitReductions.cpp - long reductions over few rows, in two steps --===//
//
// The GPU pipeline gives a reduction one thread per result, each summing
// its row alone: a layer norm's 128 means of 768 values are one workgroup
// on one multiprocessor, its threads reading addresses a row apart. Split,
// the row's values are summed in `ratio` interleaved partial sums, a
// thread each, adjacent threads reading adjacent values; a second, short
// reduction adds up the partials.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUSPLITREDUCTIONS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// Threads a split reduction aims for: enough to fill a large GPU (an
/// H100 holds 270K resident threads; a quarter of them keeps its memory
/// busy).
constexpr int64_t kEnoughThreads = int64_t(1) << 16;
/// The most partial sums per result: each is an element the second
/// reduction's thread reads.
constexpr int64_t kMostPartials = 64;
/// The fewest values each partial sum adds up.
constexpr int64_t kFewestPerPartial = 8;

/// The op of `op`'s body that combines a value into the accumulator (an
/// arith op with a neutral element, such as addf or maximumf), or null.
Operation *combiner(linalg::LinalgOp op) {
  SmallVector<Operation *> combiners;
  Value reduced = matchReduction(op.getRegionOutputArgs(), 0, combiners);
  if (!reduced || combiners.size() != 1 || combiners[0]->getNumOperands() != 2 ||
      !arith::getNeutralElement(combiners[0]))
    return nullptr;
  return combiners[0];
}

/// The partial sums per result `op` should be split into, or 1: a
/// reduction of static shapes over one loop, the innermost of its inputs
/// (contiguous in memory), with fewer results than kEnoughThreads. The
/// ratio is the smallest power of two that reaches kEnoughThreads threads,
/// at most kMostPartials, that divides the loop, and leaves each partial
/// kFewestPerPartial values or more. Contractions are left to the matmul
/// tiles.
int64_t splitRatio(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op) || !op.hasPureTensorSemantics() ||
      op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 || op.hasIndexSemantics() ||
      linalg::isaContractionOpInterface(op) || !combiner(op))
    return 1;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (llvm::any_of(sizes, ShapedType::isDynamic))
    return 1;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  unsigned reduced = reductions.front();
  // The reduced loop indexes each input's last dimension (or none).
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    for (auto [i, expr] : llvm::enumerate(map.getResults()))
      if (expr.isFunctionOfDim(reduced) &&
          (i + 1 != map.getNumResults() || !isa<AffineDimExpr>(expr)))
        return 1;
  }
  int64_t results = 1;
  for (auto [d, size] : llvm::enumerate(sizes))
    if (d != reduced)
      results *= size;
  int64_t length = sizes[reduced];
  int64_t ratio = 1;
  while (results * ratio < kEnoughThreads && ratio < kMostPartials &&
         length % (2 * ratio) == 0 && length / (2 * ratio) >= kFewestPerPartial)
    ratio *= 2;
  return ratio;
}

/// `map` over the split op's loops: loop `reduced` becomes two, the values
/// per partial there and the partials last (`partials`); the loops after
/// `reduced` move up by one.
AffineMap splitMap(AffineMap map, unsigned reduced, bool expandsReduced) {
  MLIRContext *ctx = map.getContext();
  unsigned loops = map.getNumDims() + 1;
  SmallVector<AffineExpr> shifted;
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    shifted.push_back(getAffineDimExpr(d <= reduced ? d : d + 1, ctx));
  SmallVector<AffineExpr> results;
  for (AffineExpr expr : map.getResults()) {
    results.push_back(expr.replaceDims(shifted));
    if (expandsReduced && expr == getAffineDimExpr(reduced, ctx))
      results.push_back(getAffineDimExpr(loops - 1, ctx));
  }
  return AffineMap::get(loops, 0, results, ctx);
}

/// Splits reduction `op` over its loop `reduced` into `ratio` partial
/// results each (see the file comment); replaces it.
void split(RewriterBase &rewriter, linalg::GenericOp op, unsigned reduced, int64_t ratio) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Operation *combine = combiner(op);
  // The inputs, their last dimension (the reduced loop) as [K / ratio, ratio].
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    bool expands = map.getNumResults() && map.getResults().back() == getAffineDimExpr(reduced, ctx);
    Value value = input->get();
    if (expands) {
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.back() /= ratio;
      shape.push_back(ratio);
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d + 1 < type.getRank(); ++d)
        groups.push_back({d});
      groups.push_back({type.getRank() - 1, type.getRank()});
      value = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, type.getElementType()), value, groups);
    }
    inputs.push_back(value);
    maps.push_back(splitMap(map, reduced, expands));
  }
  // The partials: the init's shape and `ratio`, the combiner's neutral
  // element.
  Value init = op.getDpsInits()[0];
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> shape(initType.getShape());
  shape.push_back(ratio);
  Type elementType = initType.getElementType();
  Value neutral = arith::ConstantOp::create(rewriter, loc, *arith::getNeutralElement(combine));
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape, elementType);
  Value partialsInit = linalg::FillOp::create(rewriter, loc, neutral, empty).getResult(0);
  AffineMap initMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap partialsMap = splitMap(initMap, reduced, false);
  partialsMap = partialsMap.insertResult(getAffineDimExpr(partialsMap.getNumDims() - 1, ctx),
                                         partialsMap.getNumResults());
  maps.push_back(partialsMap);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::parallel);
  auto partials = linalg::GenericOp::create(rewriter, loc, TypeRange{partialsInit.getType()},
                                            inputs, partialsInit, maps, iterators);
  rewriter.cloneRegionBefore(op.getRegion(), partials.getRegion(), partials.getRegion().end());
  // The partials combined into the init.
  unsigned rank = initType.getRank();
  SmallVector<utils::IteratorType> combining(rank, utils::IteratorType::parallel);
  combining.push_back(utils::IteratorType::reduction);
  auto combined = linalg::GenericOp::create(
      rewriter, loc, TypeRange{initType}, partials.getResult(0), init,
      {AffineMap::getMultiDimIdentityMap(rank + 1, ctx),
       AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank)},
      combining, [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping operands;
        operands.map(combine->getOperands(), args.take_front(2));
        linalg::YieldOp::create(b, l, b.clone(*combine, operands)->getResult(0));
      });
  rewriter.replaceOp(op, combined.getResults());
}

struct KilnGpuSplitReductionsPass
    : mlir::kiln::impl::KilnGpuSplitReductionsBase<KilnGpuSplitReductionsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (splitRatio(op) > 1)
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<unsigned> reductions;
      op.getReductionDims(reductions);
      split(rewriter, cast<linalg::GenericOp>(op.getOperation()), reductions.front(),
            splitRatio(op));
    }
  }
};

} // namespace
