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
  int64_t count = type.getNumElements();
  // A splat is the same splat in any layout without padding.
  if (auto dense = dyn_cast<DenseElementsAttr>(source);
      dense && dense.isSplat() && count == source.getNumElements())
    return arith::ConstantOp::create(b, loc, dense.resizeSplat(type));
  std::optional<ArrayRef<char>> data = rawElementsData(source);
  size_t width = type.getElementTypeBitWidth() / 8;
  if (!data || width == 0 || data->size() != source.getNumElements() * width)
    return {};
  std::vector<char> relaid(count * width, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = sourceIndex(i);
    assert(from < source.getNumElements() && "source index out of range");
    if (from >= 0)
      std::memcpy(&relaid[i * width], &(*data)[from * width], width);
  }
  if (isa<DenseElementsAttr>(source))
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::getFromRawBuffer(type, relaid));
  return arith::ConstantOp::create(b, loc, blobElements(type, "relaid_weight", relaid));
}
