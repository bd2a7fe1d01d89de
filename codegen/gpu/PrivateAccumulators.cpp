//===- PrivateAccumulators.cpp - reductions in registers ------------------===//
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUPRIVATEACCUMULATORS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Results a thread's private accumulator holds at most.
constexpr int64_t kMaxAccumulator = 64;

/// Constant upper bounds of `tile`'s sizes, or nothing if one has none.
std::optional<SmallVector<int64_t>> sizeBounds(Value tile) {
  SmallVector<int64_t> bounds;
  for (int64_t d = 0; d < cast<MemRefType>(tile.getType()).getRank(); ++d) {
    FailureOr<int64_t> bound = sizeBound(tile, d);
    if (failed(bound))
      return std::nullopt;
    bounds.push_back(*bound);
  }
  return bounds;
}

/// Whether `op` is a reduction into one buffer that no input of it reads.
bool reducesIntoBuffer(linalg::LinalgOp op) {
  return op.getNumReductionLoops() != 0 && op.getNumDpsInits() == 1 &&
         op.hasPureBufferSemantics() &&
         !llvm::is_contained(op.getDpsInputs(), op.getDpsInitOperand(0)->get());
}

/// The permutation that puts `op`'s reduced loops first, in order.
SmallVector<unsigned> reducedLoopsFirst(linalg::LinalgOp op) {
  SmallVector<unsigned> order;
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::reduction)
      order.push_back(i);
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iterator != utils::IteratorType::reduction)
      order.push_back(i);
  return order;
}

/// `op` generalized, its reduced loops outermost (as it is if that fails).
linalg::LinalgOp reducedLoopsOutermost(RewriterBase &rewriter, linalg::LinalgOp op) {
  rewriter.setInsertionPoint(op);
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return op;
    generic = *generalized;
  }
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, reducedLoopsFirst(generic));
  return succeeded(interchanged) ? *interchanged : generic;
}

/// Where the op after `copyOut` is an epilogue that updates the tile in
/// place (kiln-gpu-distribute applies a matmul's bias and activation so),
/// has it read the accumulator instead: the results go to memory once.
void readAccumulatorInEpilogue(RewriterBase &rewriter, linalg::CopyOp copyOut) {
  Value accumulator = copyOut.getInputs()[0];
  Value tile = copyOut.getOutputs()[0];
  Operation *next = copyOut->getNextNode();
  while (next && isMemoryEffectFree(next)) // the epilogue's slices of other operands
    next = next->getNextNode();
  auto epilogue = dyn_cast_if_present<linalg::GenericOp>(next);
  if (!epilogue || epilogue.getNumDpsInits() != 1 ||
      epilogue.getDpsInitOperand(0)->get() != tile || epilogue.getNumReductionLoops() != 0 ||
      !epilogue.getMatchingIndexingMap(epilogue.getDpsInitOperand(0)).isIdentity() ||
      llvm::is_contained(epilogue.getDpsInputs(), tile))
    return;
  SmallVector<Value> inputs = epilogue.getDpsInputs();
  inputs.push_back(accumulator);
  SmallVector<AffineMap> maps = epilogue.getIndexingMapsArray();
  maps.insert(maps.end() - 1, maps.back());
  rewriter.setInsertionPoint(epilogue);
  auto reading = linalg::GenericOp::create(rewriter, epilogue.getLoc(), TypeRange(), inputs,
                                           ValueRange{tile}, maps,
                                           epilogue.getIteratorTypesArray());
  rewriter.inlineRegionBefore(epilogue.getRegion(), reading.getRegion(),
                              reading.getRegion().end());
  Block &body = reading.getRegion().front();
  BlockArgument output = body.getArgument(inputs.size() - 1);
  BlockArgument accumulated =
      body.insertArgument(inputs.size() - 1, output.getType(), epilogue.getLoc());
  rewriter.replaceAllUsesWith(output, accumulated);
  rewriter.eraseOp(epilogue);
  rewriter.eraseOp(copyOut);
}

LogicalResult privatize(RewriterBase &rewriter, linalg::LinalgOp op) {
  Value tile = op.getDpsInitOperand(0)->get();
  std::optional<SmallVector<int64_t>> bounds = sizeBounds(tile);
  if (!bounds || llvm::product_of(*bounds) > kMaxAccumulator)
    return failure();
  auto fill = dyn_cast_if_present<linalg::FillOp>(op->getPrevNode());
  op = reducedLoopsOutermost(rewriter, op);
  Location loc = op.getLoc();
  auto tileType = cast<MemRefType>(tile.getType());
  auto space = gpu::AddressSpaceAttr::get(op.getContext(), gpu::AddressSpace::Private);
  rewriter.setInsertionPoint(fill && fill.getDpsInitOperand(0)->get() == tile ? fill : op);
  Value accumulator = memref::AllocaOp::create(
      rewriter, loc, MemRefType::get(*bounds, tileType.getElementType(), nullptr, space));
  if (!tileType.hasStaticShape()) {
    // The tile's own sizes, at the accumulator's start.
    SmallVector<OpFoldResult> zeros(tileType.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(tileType.getRank(), rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes = memref::getMixedSizes(rewriter, loc, tile);
    accumulator = memref::SubViewOp::create(rewriter, loc, accumulator, zeros, sizes, ones);
  }
  // The fill that initialized the tile initializes the accumulator instead.
  if (fill && fill.getDpsInitOperand(0)->get() == tile)
    rewriter.modifyOpInPlace(fill, [&] { fill.getDpsInitOperand(0)->set(accumulator); });
  else
    linalg::CopyOp::create(rewriter, loc, tile, accumulator);
  rewriter.modifyOpInPlace(op, [&] { op.getDpsInitOperand(0)->set(accumulator); });
  rewriter.setInsertionPointAfter(op);
  auto copyOut = linalg::CopyOp::create(rewriter, loc, accumulator, tile);
  readAccumulatorInEpilogue(rewriter, copyOut);
  return success();
}

struct KilnGpuPrivateAccumulatorsPass
    : mlir::kiln::impl::KilnGpuPrivateAccumulatorsBase<KilnGpuPrivateAccumulatorsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> reductions;
    getOperation().walk([&](gpu::LaunchOp launch) {
      launch.getBody().walk([&](linalg::LinalgOp op) {
        if (reducesIntoBuffer(op))
          reductions.push_back(op);
      });
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : reductions) {
      // One that already accumulates in private memory (a temporary of its
      // epilogue's tile) only takes its reduced loops outermost.
      if (isPrivateMemory(op.getDpsInitOperand(0)->get().getType()))
        (void)reducedLoopsOutermost(rewriter, op);
      else
        (void)privatize(rewriter, op);
    }
  }
};

} // namespace
