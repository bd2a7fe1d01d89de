//===- SplitReductions.cpp - long reductions over few rows, in two steps --===//
//
// The GPU pipeline gives a reduction one thread per result, each summing
// its row alone: a layer norm's 128 means of 768 values are one workgroup
// on one multiprocessor, its threads reading addresses a row apart. Split,
// the row's values are summed in `ratio` interleaved partial sums, a
// thread each, adjacent threads reading adjacent values; a second, short
// reduction adds up the partials.
//
// A matmul (or a convolution as one) with few workgroups and a long
// reduction is likewise split, on request (split-K): its reduction in
// consecutive slices, each a batch of the matmul's tiles, so that the
// slices' workgroups fill the GPU; then a short reduction adds them up.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

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
using namespace mlir::kiln;

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
/// A split contraction's most slices of its reduction.
constexpr int64_t kMostSlices = 16;
/// The fewest values a slice sums, and what its length must be a multiple
/// of: whole chunks of the largest that kiln-gpu-promote-operands stages
/// (and with them whole steps of the tensor cores).
constexpr int64_t kFewestPerSlice = 256;
constexpr int64_t kSliceChunk = 32;

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

/// The slices contraction `op` should be split into, or 1: one of static
/// shapes with one reduction loop, 4-byte sums (f32, i32) that its body
/// adds, and fewer than kEnoughWorkgroups workgroups on `target`. The
/// slices are the fewest (a power of two, at most kMostSlices) that give it
/// that many, or as many as keep each slice at least kFewestPerSlice values
/// long and a whole number of kSliceChunk.
int64_t contractionSlices(linalg::LinalgOp op, const GpuTarget &target) {
  std::optional<int64_t> workgroups = contractionWorkgroups(op, target);
  if (!workgroups || *workgroups >= kEnoughWorkgroups || !op.hasPureTensorSemantics() ||
      op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 || op.hasIndexSemantics() ||
      !combiner(op))
    return 1;
  Type sum = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if ((!sum.isF32() && !sum.isInteger(32)) || llvm::any_of(sizes, ShapedType::isDynamic))
    return 1;
  // (A contraction's maps are projected permutations: each input indexes
  // the reduced loop by itself in one dimension, or not at all.)
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  int64_t length = sizes[reductions.front()], slices = 1;
  auto sliceFits = [&](int64_t n) {
    return length % n == 0 && length / n >= kFewestPerSlice && (length / n) % kSliceChunk == 0;
  };
  while (*workgroups * slices < kEnoughWorkgroups && slices < kMostSlices &&
         sliceFits(2 * slices))
    slices *= 2;
  return slices;
}

/// Where a split reduction's partial sums go: interleaved (partial p adds
/// up values p, p + n, p + 2n, ...: adjacent threads read adjacent values),
/// the partials a loop and a dimension of their own, innermost; or in
/// consecutive slices (slice s the values from s K / n on, a batch of the
/// op), the slices the outermost loop and dimension.
enum class Partials { Interleaved, Slices };

/// `map` over the split op's loops: loop `reduced` runs over the values of
/// one partial, and the partials' loop is added (the last, or the first,
/// the others one further on); where `reduced` is a dimension of its own,
/// that dimension becomes two, the partials' and the values'. The init's
/// map (`init`) gains the partials' loop as a dimension instead.
AffineMap splitMap(AffineMap map, unsigned reduced, Partials layout, bool init) {
  MLIRContext *ctx = map.getContext();
  unsigned dims = map.getNumDims();
  bool slices = layout == Partials::Slices;
  AffineExpr partial = getAffineDimExpr(slices ? 0 : dims, ctx);
  SmallVector<AffineExpr> results;
  for (AffineExpr expr : map.getResults()) {
    AffineExpr shifted = expr.shiftDims(dims, slices ? 1 : 0);
    bool split = expr == getAffineDimExpr(reduced, ctx);
    if (split && slices)
      results.push_back(partial);
    results.push_back(shifted);
    if (split && !slices)
      results.push_back(partial);
  }
  if (init)
    results.insert(slices ? results.begin() : results.end(), partial);
  return AffineMap::get(dims + 1, 0, results, ctx);
}

/// Splits reduction `op` over its loop `reduced` into `n` partial sums per
/// result, laid out as `layout` says: each input's dimension of that loop
/// as [K / n, n] (interleaved) or [n, K / n] (slices); the partials, the
/// init's shape and n, start from the combiner's neutral element; then a
/// reduction over the partials, innermost, adds them into the op's init.
/// Replaces `op`.
void split(RewriterBase &rewriter, linalg::LinalgOp op, unsigned reduced, int64_t n,
           Partials layout) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  bool slices = layout == Partials::Slices;
  rewriter.setInsertionPoint(op);
  Operation *combine = combiner(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    Value value = input->get();
    if (std::optional<unsigned> at = map.getResultPosition(getAffineDimExpr(reduced, ctx))) {
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[*at] /= n;
      shape.insert(shape.begin() + *at + (slices ? 0 : 1), n);
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d < type.getRank(); ++d)
        groups.push_back(d < *at    ? ReassociationIndices{d}
                         : d == *at ? ReassociationIndices{d, d + 1}
                                    : ReassociationIndices{d + 1});
      value = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, type.getElementType()), value, groups);
    }
    inputs.push_back(value);
    maps.push_back(splitMap(map, reduced, layout, /*init=*/false));
  }
  Value init = op.getDpsInits()[0];
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> shape(initType.getShape());
  shape.insert(slices ? shape.begin() : shape.end(), n);
  Value neutral = arith::ConstantOp::create(rewriter, loc, *arith::getNeutralElement(combine));
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape, initType.getElementType());
  Value partialsInit = linalg::FillOp::create(rewriter, loc, neutral, empty).getResult(0);
  maps.push_back(splitMap(op.getMatchingIndexingMap(op.getDpsInitOperand(0)), reduced, layout,
                          /*init=*/true));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.insert(slices ? iterators.begin() : iterators.end(), utils::IteratorType::parallel);
  auto partials = linalg::GenericOp::create(rewriter, loc, TypeRange{partialsInit.getType()},
                                            inputs, partialsInit, maps, iterators);
  rewriter.cloneRegionBefore(op->getRegion(0), partials.getRegion(), partials.getRegion().end());
  // The partials added up into the init, their loop the innermost.
  unsigned rank = initType.getRank();
  SmallVector<AffineExpr> partialsIndex;
  for (unsigned d = 0; d < rank; ++d)
    partialsIndex.push_back(getAffineDimExpr(d, ctx));
  partialsIndex.insert(slices ? partialsIndex.begin() : partialsIndex.end(),
                       getAffineDimExpr(rank, ctx));
  SmallVector<utils::IteratorType> combining(rank, utils::IteratorType::parallel);
  combining.push_back(utils::IteratorType::reduction);
  auto combined = linalg::GenericOp::create(
      rewriter, loc, TypeRange{initType}, partials.getResult(0), init,
      {AffineMap::get(rank + 1, 0, partialsIndex, ctx),
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
  using KilnGpuSplitReductionsBase::KilnGpuSplitReductionsBase;
  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    SmallVector<std::pair<linalg::LinalgOp, int64_t>> reductions, contractions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (int64_t ratio = splitRatio(op); ratio > 1)
        reductions.push_back({op, ratio});
      else if (int64_t slices = splitContractions ? contractionSlices(op, *target) : 1;
               slices > 1)
        contractions.push_back({op, slices});
    });
    IRRewriter rewriter(&getContext());
    auto reducedLoop = [](linalg::LinalgOp op) {
      SmallVector<unsigned> reduced;
      op.getReductionDims(reduced);
      return reduced.front();
    };
    for (auto [op, ratio] : reductions)
      split(rewriter, op, reducedLoop(op), ratio, Partials::Interleaved);
    for (auto [op, slices] : contractions) {
      if (report)
        emitRemark(op.getLoc()) << "placement: reduction split into " << slices
                                << " slices of " << op.getStaticLoopRanges()[reducedLoop(op)] / slices
                                << ", their partial sums added up after";
      split(rewriter, op, reducedLoop(op), slices, Partials::Slices);
    }
  }
};

} // namespace
