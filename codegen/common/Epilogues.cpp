//===- Epilogues.cpp - elementwise ops a reduction's tiles can apply ------===//
#include "codegen/common/Epilogues.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

std::optional<StringRef> mlir::kiln::whyNotAnEpilogue(linalg::GenericOp op, Value input,
                                                      Operation *tiled, DominanceInfo &dominance,
                                                      EpilogueLatitude latitude) {
  bool broadcasts = latitude.broadcasts;
  if (op.getNumDpsInits() != 1 || !llvm::is_contained(op.getDpsInputs(), input))
    return StringRef("it is not elementwise on the result");
  for (Value other : op.getDpsInputs())
    if (other != input && ((!broadcasts && other.getType() != input.getType()) ||
                           !dominance.properlyDominates(other, tiled)))
      return StringRef("it reads a tensor of another shape, or one computed after the tiles");
  auto elementwise = [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool broadcast = broadcasts && op.isDpsInput(&operand) && operand.get() != input;
    return broadcast ? map.isProjectedPermutation() : map.isIdentity();
  };
  if (op.getNumReductionLoops() != 0 || !llvm::all_of(op->getOpOperands(), elementwise))
    return StringRef("it is not elementwise on the result");
  auto resultType = cast<ShapedType>(op.getResult(0).getType());
  if (resultType.getShape() != cast<ShapedType>(input.getType()).getShape())
    return StringRef("its result has another shape");
  if (!latitude.otherElementType && resultType != input.getType())
    return StringRef("its result has another element type");
  if (!op.getRegionOutputArgs()[0].use_empty())
    return StringRef("it reads its output");
  Block *body = op.getBlock();
  for (Operation &inner : body->without_terminator())
    if (!isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()) ||
        inner.getNumRegions() != 0)
      return StringRef("its body is not scalar arithmetic");
  // Values from outside the body (a count to divide by) must exist too.
  auto available = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return v.getParentBlock() == body || (def && def->hasTrait<OpTrait::ConstantLike>()) ||
           dominance.properlyDominates(v, tiled);
  };
  for (Operation &inner : *body)
    if (!llvm::all_of(inner.getOperands(), available))
      return StringRef("it takes a value computed after the tiles");
  return std::nullopt;
}
