//===- FuseEpilogues.cpp - elementwise consumers applied in register tiles ===//
//
// A matmul or convolution tiled by kiln-cpu-schedule writes each register
// tile once, from the vectors its K loop carried. An elementwise op that
// only reads that result (a ReLU after a convolution) is applied to those
// vectors before the write instead of in a pass of its own over memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/common/Epilogues.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUFUSEEPILOGUES
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::describeNode;

namespace {

/// The only user of a tiled op's result past tensor reshapes.
struct Consumer {
  Operation *op;
  Value input;                       // the reshaped result it reads
  SmallVector<Operation *> reshapes; // from the result to `input`
};

/// The only user of `value` past tensor reshapes; nothing when a value on
/// the way has other users.
std::optional<Consumer> soleUserThroughReshapes(Value value) {
  SmallVector<Operation *> reshapes;
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user))
      return Consumer{user, value, reshapes};
    reshapes.push_back(user);
    value = user->getResult(0);
  }
  return std::nullopt;
}

/// `other`, shaped like the consumer's input, reshaped back to the tiled
/// op's result: `reshapes` undone in reverse order.
Value reshapeBack(OpBuilder &b, Location loc, Value other, ArrayRef<Operation *> reshapes) {
  for (Operation *reshape : llvm::reverse(reshapes)) {
    auto from = cast<RankedTensorType>(reshape->getOperand(0).getType());
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape))
      other =
          tensor::ExpandShapeOp::create(b, loc, from, other, collapse.getReassociationIndices());
    else
      other = tensor::CollapseShapeOp::create(
          b, loc, from, other, cast<tensor::ExpandShapeOp>(reshape).getReassociationIndices());
  }
  return other;
}

/// A constant that size `size` of a tile never exceeds: the size itself, or
/// the constant of the arith.minsi that bounds a last, partial tile.
std::optional<int64_t> sizeBound(OpFoldResult size) {
  if (std::optional<int64_t> known = getConstantIntValue(size))
    return known;
  auto min = dyn_cast<Value>(size).getDefiningOp<arith::MinSIOp>();
  if (!min)
    return std::nullopt;
  std::optional<int64_t> lhs = getConstantIntValue(min.getLhs());
  return lhs ? lhs : getConstantIntValue(min.getRhs());
}

/// Whether the `vector` written at index 0 covers all of `tile` (a slice):
/// each of its sizes is at most the vector's.
bool coversTile(VectorType vector, Value tile) {
  auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>();
  auto type = cast<RankedTensorType>(tile.getType());
  if (type.getRank() != vector.getRank())
    return false;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    std::optional<int64_t> bound = type.isDynamicDim(d) && slice
                                       ? sizeBound(slice.getMixedSizes()[d])
                                       : std::optional<int64_t>(type.getDimSize(d));
    if (!bound || *bound > vector.getDimSize(d))
      return false;
  }
  return true;
}

/// The transfer_write that produces the forall's only tile, covering the
/// whole tile from index 0 (with a masked edge where the vector is larger);
/// nothing otherwise.
vector::TransferWriteOp tileWrite(scf::ForallOp forall) {
  auto yielding = forall.getTerminator().getYieldingOps();
  if (!llvm::hasSingleElement(yielding))
    return {};
  auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&*yielding.begin());
  auto write = insert ? insert.getSource().getDefiningOp<vector::TransferWriteOp>()
                      : vector::TransferWriteOp();
  if (!write || write.getMask() || write->getBlock() != forall.getBody())
    return {};
  bool fromZero =
      llvm::all_of(write.getIndices(), [](Value i) { return matchPattern(i, m_Zero()); });
  if (!fromZero || !write.getPermutationMap().isMinorIdentity() ||
      !coversTile(write.getVectorType(), write.getBase()))
    return {};
  return write;
}

/// Applies `op`'s body to the vector `write` stores, before the store.
/// Values the body takes from outside are broadcast; constants are cloned.
void applyBefore(linalg::GenericOp op, const Consumer &consumer,
                 vector::TransferWriteOp write) {
  Block *body = op.getBlock();
  OpBuilder b(write);
  VectorType vectorType = write.getVectorType();
  IRMapping map;
  auto tiled = cast<scf::ForallOp>(write->getParentOp());
  auto insert =
      cast<tensor::ParallelInsertSliceOp>(*tiled.getTerminator().getYieldingOps().begin());
  for (OpOperand *operand : op.getDpsInputOperands()) {
    BlockArgument arg = body->getArgument(operand->getOperandNumber());
    if (operand->get() == consumer.input) {
      map.map(arg, write.getVector());
      continue;
    }
    // Another tensor at the same elements: its tile, read like the result's.
    OpBuilder before(tiled);
    Value whole = reshapeBack(before, op.getLoc(), operand->get(), consumer.reshapes);
    Value tile = tensor::ExtractSliceOp::create(
        b, write.getLoc(), cast<RankedTensorType>(insert.getSourceType()), whole,
        insert.getMixedOffsets(), insert.getMixedSizes(), insert.getMixedStrides());
    Value padding = ub::PoisonOp::create(b, write.getLoc(), vectorType.getElementType());
    map.map(arg, vector::TransferReadOp::create(b, write.getLoc(), vectorType, tile,
                                                write.getIndices(), write.getPermutationMapAttr(),
                                                padding, Value(), write.getInBoundsAttr()));
  }
  auto vectorOf = [&](Value v) -> Value {
    if (map.contains(v))
      return map.lookup(v);
    Value scalar = v;
    if (Operation *def = v.getDefiningOp(); def && def->hasTrait<OpTrait::ConstantLike>())
      scalar = b.clone(*def)->getResult(0);
    Value splat = vector::BroadcastOp::create(
        b, write.getLoc(), VectorType::get(vectorType.getShape(), v.getType()), scalar);
    map.map(v, splat);
    return splat;
  };
  for (Operation &inner : body->without_terminator()) {
    if (inner.hasTrait<OpTrait::ConstantLike>()) // a scalar, broadcast where used
      continue;
    SmallVector<Value> operands = llvm::map_to_vector(inner.getOperands(), vectorOf);
    Operation *clone = b.clone(inner);
    clone->setOperands(operands);
    for (auto [from, to] : llvm::zip(inner.getResults(), clone->getResults())) {
      to.setType(VectorType::get(vectorType.getShape(), from.getType()));
      map.map(from, to);
    }
  }
  write.getValueToStoreMutable().assign(vectorOf(body->getTerminator()->getOperand(0)));
}

struct KilnFuseEpiloguesPass : mlir::kiln::impl::KilnCpuFuseEpiloguesBase<KilnFuseEpiloguesPass> {
  using KilnCpuFuseEpiloguesBase::KilnCpuFuseEpiloguesBase;

  void runOnOperation() override {
    SmallVector<scf::ForallOp> foralls;
    getOperation().walk([&](scf::ForallOp forall) {
      if (forall.getNumResults() == 1 && tileWrite(forall))
        foralls.push_back(forall);
    });
    for (scf::ForallOp forall : foralls)
      fuseInto(forall);
  }

  void fuseInto(scf::ForallOp forall) {
    std::optional<Consumer> use = soleUserThroughReshapes(forall.getResult(0));
    auto consumer = use ? dyn_cast<linalg::GenericOp>(use->op) : linalg::GenericOp();
    if (!consumer)
      return;
    DominanceInfo &dominance = getAnalysis<DominanceInfo>();
    std::optional<StringRef> why =
        kiln::whyNotAnEpilogue(consumer, use->input, forall, dominance, {});
    // A step of the tiled node's own lowering (a Gemm's bias) is not news.
    if (report && describeNode(consumer) != describeNode(forall))
      emitRemark(forall.getLoc())
          << "fusion: " << describeNode(consumer)
          << (why ? " runs as a separate pass over the result: " + why->str()
                  : std::string(" applied in the register tiles (epilogue)"));
    if (why)
      return;
    applyBefore(consumer, *use, tileWrite(forall));
    consumer.getResult(0).replaceAllUsesWith(use->input);
    consumer.erase();
  }
};
} // namespace
