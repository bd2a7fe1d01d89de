//===- FuseSiblingMatmuls.cpp - matmuls of one input as one matmul --------===//
//
// A transformer's query, key and value projections are three matmuls of the
// same activations by three constant weights, each with its bias added.
// One matmul by the weights side by side, and one bias add, reads the
// activations once and gives a backend one wider matrix to tile: on a GPU
// one kernel instead of three, with enough columns for more results per
// thread; on a CPU one packing of the activations and one parallel loop.
// Each projection is then a slice of the result's columns, a view.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSESIBLINGMATMULS
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// A matmul by a constant matrix of its own, and the add of a constant
/// bias (one value per column) that alone uses its result, if there is one.
struct Projection {
  MatMulOp matmul;
  ConstantOp weight;
  AddOp biasAdd; ///< or null
  ConstantOp bias;

  /// The op whose result the projection's users read.
  Operation *last() { return biasAdd ? biasAdd.getOperation() : matmul.getOperation(); }
  int64_t columns() { return cast<RankedTensorType>(weight.getType()).getDimSize(1); }
};

/// The only user of `v`, or null.
Operation *soleUser(Value v) { return v.hasOneUse() ? *v.user_begin() : nullptr; }

/// `value` as a constant that only `user` uses, or null.
ConstantOp ownConstant(Value value, Operation *user) {
  auto constant = value.getDefiningOp<ConstantOp>();
  return constant && soleUser(value) == user ? constant : ConstantOp();
}

/// `op` as a Projection: its right operand a constant [K, N] matrix of
/// floats of static shape that nothing else uses, its left operand of rank
/// 2 or more. A bias is an add of a constant [N] of the result's type.
std::optional<Projection> asProjection(MatMulOp op) {
  Projection p{op, ownConstant(op.getRhs(), op), {}, {}};
  auto weight = p.weight ? dyn_cast<RankedTensorType>(p.weight.getType()) : nullptr;
  auto lhs = dyn_cast<RankedTensorType>(op.getLhs().getType());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!weight || !lhs || !type || weight.getRank() != 2 || !weight.hasStaticShape() ||
      !isa<FloatType>(weight.getElementType()) || lhs.getRank() < 2 ||
      type.getRank() != lhs.getRank())
    return std::nullopt;
  auto add = dyn_cast_or_null<AddOp>(soleUser(op.getResult()));
  if (!add || add.getType() != op.getType())
    return p;
  Value other = add.getLhs() == op.getResult() ? add.getRhs() : add.getLhs();
  ConstantOp bias = ownConstant(other, add);
  auto biasType = bias ? cast<RankedTensorType>(bias.getType()) : nullptr;
  if (biasType && biasType.getRank() == 1 && biasType.getDimSize(0) == p.columns() &&
      biasType.getElementType() == type.getElementType()) {
    p.biasAdd = add;
    p.bias = bias;
  }
  return p;
}

/// Projections that can be one matmul: of one input, in one block, by
/// weights of one element type into results of one element type (a
/// widening matmul may give either), all with a bias (1) or none (0).
using Signature = std::tuple<Value, Block *, Type, Type, unsigned>;

Signature signatureOf(Projection p) {
  return {p.matmul.getLhs(), p.matmul->getBlock(), p.weight.getType().getElementType(),
          getElementTypeOrSelf(p.matmul.getType()), p.biasAdd ? 1u : 0u};
}

/// kiln.concat of `values` (constants) along `axis`, folded into a
/// constant; null (and nothing left behind) where it does not fold.
Value concatConstants(OpBuilder &b, Location loc, ArrayRef<Value> values, int64_t axis) {
  auto first = cast<RankedTensorType>(values.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : values)
    shape[axis] += cast<RankedTensorType>(v.getType()).getDimSize(axis);
  Value joined =
      b.createOrFold<ConcatOp>(loc, first.clone(shape), values, b.getI64IntegerAttr(axis));
  if (matchPattern(joined, m_Constant()))
    return joined;
  joined.getDefiningOp()->erase();
  return Value();
}

/// "q (MatMul), k (MatMul), v (MatMul)".
std::string namesOf(ArrayRef<Projection> group) {
  std::string names;
  for (Projection p : group)
    names += (names.empty() ? "" : ", ") + describeNode(p.matmul);
  return names;
}

/// Replaces `group` (two or more, first in block order first) by one
/// matmul by their weights side by side, and one bias add; each
/// projection's users read a slice of its columns. False, with the IR
/// unchanged but for the weights moved up, where the weights do not fold
/// into one constant.
bool fuse(ArrayRef<Projection> group) {
  MatMulOp first = group.front().matmul;
  OpBuilder b(first);
  // The constants move up to the first matmul (they have no operands).
  for (Projection p : group) {
    p.weight->moveBefore(first);
    if (p.bias)
      p.bias->moveBefore(first);
  }
  SmallVector<Location> matmulLocs, addLocs;
  SmallVector<Value> weights, biases;
  for (Projection p : group) {
    matmulLocs.push_back(p.matmul.getLoc());
    weights.push_back(p.weight.getResult());
    if (p.bias) {
      addLocs.push_back(p.biasAdd.getLoc());
      biases.push_back(p.bias.getResult());
    }
  }
  Location loc = b.getFusedLoc(matmulLocs);
  Value weight = concatConstants(b, loc, weights, 1);
  Value bias = biases.empty() ? Value() : concatConstants(b, loc, biases, 0);
  if (!weight || (!biases.empty() && !bias)) {
    if (weight)
      weight.getDefiningOp()->erase();
    return false;
  }
  auto type = cast<RankedTensorType>(first.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto joinedType = type.clone(shape);
  Value joined = MatMulOp::create(b, loc, joinedType, first.getLhs(), weight);
  if (bias)
    joined = AddOp::create(b, b.getFusedLoc(addLocs), joinedType, joined, bias);
  SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
  for (Projection p : group) {
    Value slice = SliceOp::create(b, p.last()->getLoc(), p.last()->getResult(0).getType(), joined,
                                  starts, steps);
    starts.back() += p.columns();
    p.last()->getResult(0).replaceAllUsesWith(slice);
  }
  // Only now: the builder inserts before the first matmul.
  for (Projection p : group) {
    if (p.biasAdd)
      p.biasAdd->erase();
    p.matmul->erase();
    p.weight->erase();
    if (p.bias)
      p.bias->erase();
  }
  return true;
}

struct KilnFuseSiblingMatmulsPass
    : mlir::kiln::impl::KilnFuseSiblingMatmulsBase<KilnFuseSiblingMatmulsPass> {
  using KilnFuseSiblingMatmulsBase::KilnFuseSiblingMatmulsBase;

  void runOnOperation() override {
    llvm::MapVector<Signature, SmallVector<Projection>> groups;
    getOperation().walk([&](MatMulOp op) {
      if (std::optional<Projection> p = asProjection(op))
        groups[signatureOf(*p)].push_back(*p);
    });
    for (auto &[signature, group] : groups) {
      if (group.size() < 2)
        continue;
      // The walk visits a block's ops in order: the first is first.
      std::string names = namesOf(group);
      Location loc = group.front().matmul.getLoc();
      if (!fuse(group)) {
        if (report)
          emitRemark(loc) << "fusion: matmuls of one input not fused: their weights do not "
                             "fold into one constant: "
                          << names;
        continue;
      }
      if (report)
        emitRemark(loc) << "fusion: " << group.size()
                        << " matmuls of one input by constant weights as one: " << names;
    }
  }
};

} // namespace
