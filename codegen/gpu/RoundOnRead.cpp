//===- RoundOnRead.cpp - activations rounded where the fields read them ---===//
//
// With --precision=bf16 or f16, an activation is rounded to 16 bits before
// each convolution: a kernel that writes the rounded copy, which the
// convolution's receptive fields read. The fields are computed where the
// matmul loads them (kiln-gpu-compute-on-read); where nothing else reads
// the copy, the rounding is computed there too, and costs no kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUROUNDONREAD
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether `op` rounds each element of its one input to a narrower float
/// type: identity maps, parallel loops, a body of one truncf.
bool isRounding(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && isa_and_nonnull<arith::TruncFOp>(elementwiseOpOf(op));
}

/// Whether `op` is computed where it is read (receptive fields, a
/// transpose).
bool isComputedOnRead(Operation *op) { return op && op->hasAttr(kComputedOnRead); }

/// Whether every reader of `value` is computed where it is read: reads it
/// as an input, or by a tensor.extract in its body.
bool onlyReadByComputedOnRead(Value value) {
  return !value.use_empty() && llvm::all_of(value.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExtractOp>(user))
      return isComputedOnRead(user->getParentOfType<linalg::GenericOp>());
    auto generic = dyn_cast<linalg::GenericOp>(user);
    return generic && isComputedOnRead(generic) && generic.isDpsInput(&use);
  });
}

/// The linalg ops that read `value`, through reshapes.
void readersThroughReshapes(Value value, SmallVectorImpl<linalg::LinalgOp> &readers) {
  for (Operation *user : value.getUsers()) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
      readersThroughReshapes(user->getResult(0), readers);
    else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user))
      readers.push_back(linalgOp);
  }
}

/// The results each thread of `op` holds, by `tiles`.
int64_t resultsPerThread(linalg::LinalgOp op, const Tiles &tiles) {
  int64_t results = 1;
  for (auto [loop, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::parallel && tiles.thread[loop] > 0)
      results *= tiles.thread[loop];
  return results;
}

/// A thread's results from which the fields it loads stay 16-bit values
/// (see the pass's description).
constexpr int64_t kManyResults = 64;

struct KilnGpuRoundOnReadPass : mlir::kiln::impl::KilnGpuRoundOnReadBase<KilnGpuRoundOnReadPass> {
  using KilnGpuRoundOnReadBase::KilnGpuRoundOnReadBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    // Whether a contraction that reads `fields` gives its threads many
    // results.
    auto readByLargeTiles = [&](Operation *fields) {
      SmallVector<linalg::LinalgOp> readers;
      readersThroughReshapes(fields->getResult(0), readers);
      return llvm::any_of(readers, [&](linalg::LinalgOp reader) {
        Tiles tiles = chooseTiles(reader, *target, enoughWorkgroups, wideTensorTiles);
        return !tiles.none() && resultsPerThread(reader, tiles) >= kManyResults;
      });
    };
    Builder b(&getContext());
    getOperation().walk([&](linalg::GenericOp op) {
      if (!isRounding(op) || !onlyReadByComputedOnRead(op.getResult(0)))
        return;
      for (Operation *user : op.getResult(0).getUsers()) {
        Operation *fields = isa<tensor::ExtractOp>(user) ? user->getParentOfType<linalg::GenericOp>()
                                                         : user;
        if (readByLargeTiles(fields))
          return;
      }
      op->setAttr(kComputedOnRead, b.getUnitAttr());
    });
  }
};

} // namespace
