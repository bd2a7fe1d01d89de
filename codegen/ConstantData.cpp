//===- ConstantData.cpp - compile-time re-layout of weights ---------------===//
#include "codegen/ConstantData.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;

ElementsAttr mlir::kiln::constantBehindReshapes(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto constant = dyn_cast<arith::ConstantOp>(def);
    auto attr = constant ? dyn_cast<ElementsAttr>(constant.getValue()) : ElementsAttr();
    return attr && rawElementsData(attr) ? attr : ElementsAttr();
  }
  return {};
}

Value mlir::kiln::relayoutConstant(OpBuilder &b, Location loc, ElementsAttr source,
                                   RankedTensorType type,
                                   function_ref<int64_t(int64_t)> sourceIndex) {
  ElementsAttr relaid = relaidElements(source, type, "relaid_weight", sourceIndex);
  if (!relaid)
    return {};
  return arith::ConstantOp::create(b, loc, cast<TypedAttr>(relaid));
}
