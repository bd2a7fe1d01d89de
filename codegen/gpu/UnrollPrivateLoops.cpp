//===- UnrollPrivateLoops.cpp - a thread's private arrays in registers ----===//
//
// A thread's accumulator (kiln-gpu-private-accumulators) stays in
// registers only where every index into it is a constant; an array indexed
// by a variable, the backend keeps in local memory. So the loops over a
// thread's tile are unrolled here rather than left to LLVM, whose
// thresholds stop short of an 8x8 tile whose elements are guarded.
//
// The guards come from partial tiles: a thread's tile of a workgroup's
// last tile (17 of a matmul's 49 columns, by 4) has a dynamic extent under
// a constant bound. A loop over it runs to that bound instead, its body in
// `if (iv < extent)`: the same at every step of the reduction, the guard
// is a predicate. Before, the code every workgroup runs had loops of
// dynamic length, and each multiply-add loaded and stored its sum in local
// memory (resnet18's 7x7 convolutions ran under 1 TFLOP/s on an H100).
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUUNROLLPRIVATELOOPS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The most iterations of a loop this pass unrolls: a thread's tile is at
/// most 8x8 results.
constexpr int64_t kMaxIterations = 64;
/// The most operations a loop unrolls into: an 8x8 tile's guarded
/// multiply-adds are about 600; a thread's large private temporary (a
/// 32x32 tile of an elementwise op) stays a loop.
constexpr int64_t kMaxUnrolledOps = 2048;

/// Whether `value` is computed, within `loop`, from its induction variable.
bool derivesFromInductionVar(Value value, scf::ForOp loop) {
  if (value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || !loop->isProperAncestor(def))
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value v) { return derivesFromInductionVar(v, loop); });
}

/// Whether `loop`'s induction variable indexes private memory in its body.
bool indexesPrivateMemory(scf::ForOp loop) {
  auto indexedByLoop = [&](Value memref, ValueRange indices) {
    return isPrivateMemory(memref.getType()) &&
           llvm::any_of(indices, [&](Value i) { return derivesFromInductionVar(i, loop); });
  };
  return loop.getBody()
      ->walk([&](Operation *op) {
        bool indexed = false;
        if (auto load = dyn_cast<memref::LoadOp>(op))
          indexed = indexedByLoop(load.getMemRef(), load.getIndices());
        else if (auto store = dyn_cast<memref::StoreOp>(op))
          indexed = indexedByLoop(store.getMemRef(), store.getIndices());
        return indexed ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The constant bound `loop`'s upper bound never passes (the bound itself
/// where it is a constant), if its iterations up to it are at most
/// kMaxIterations and unrolled make at most kMaxUnrolledOps operations;
/// `loop` has no results, an index induction variable compared signed, a
/// constant start and step, and at least one iteration up to the bound.
std::optional<int64_t> iterationBound(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (loop.getNumResults() != 0 || !loop.getInductionVar().getType().isIndex() ||
      loop.getUnsignedCmp() || !lower || !step || *step <= 0)
    return std::nullopt;
  FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(loop.getUpperBound()),
      nullptr, /*closedUB=*/true);
  if (failed(bound) || *bound <= *lower)
    return std::nullopt;
  int64_t iterations = llvm::divideCeilSigned(*bound - *lower, *step);
  // A dynamic bound adds a guard to each iteration: a compare, an scf.if
  // and its terminator.
  int64_t ops = getConstantIntValue(loop.getUpperBound()) ? 0 : 3;
  loop.getBody()->walk([&](Operation *) { ++ops; });
  if (iterations > kMaxIterations || iterations * ops > kMaxUnrolledOps)
    return std::nullopt;
  return *bound;
}

/// `loop`, of a dynamic upper bound, run to `bound` (a constant it never
/// passes), its body in `if (iv < upper bound)`.
void runToBound(RewriterBase &rewriter, scf::ForOp loop, int64_t bound) {
  Location loc = loop.getLoc();
  Block *body = loop.getBody();
  rewriter.setInsertionPointToStart(body);
  Value inRange = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                        loop.getInductionVar(), loop.getUpperBound());
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElseRegion=*/false);
  Block *then = guard.thenBlock();
  then->getOperations().splice(then->getTerminator()->getIterator(), body->getOperations(),
                               std::next(guard->getIterator()), body->getTerminator()->getIterator());
  rewriter.setInsertionPoint(loop);
  Value constant = arith::ConstantIndexOp::create(rewriter, loc, bound);
  rewriter.modifyOpInPlace(loop, [&] { loop.getUpperBoundMutable().assign(constant); });
}

struct KilnGpuUnrollPrivateLoopsPass
    : mlir::kiln::impl::KilnGpuUnrollPrivateLoopsBase<KilnGpuUnrollPrivateLoopsPass> {
  void runOnOperation() override {
    // Innermost first: an outer loop unrolls copies of its unrolled inner
    // ones.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (indexesPrivateMemory(loop))
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      std::optional<int64_t> bound = iterationBound(loop);
      if (!bound)
        continue;
      if (!getConstantIntValue(loop.getUpperBound()))
        runToBound(rewriter, loop, *bound);
      if (failed(loopUnrollFull(loop)))
        return signalPassFailure();
    }
  }
};

} // namespace
