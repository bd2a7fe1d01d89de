//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;

#include "dialects/kiln/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln/KilnOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

std::optional<ArrayRef<char>> mlir::kiln::rawElementsData(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && !dense.isSplat())
    return dense.getRawData();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

Value mlir::kiln::createTranspose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return TransposeOp::create(b, loc, type.clone(shape), v, b.getDenseI64ArrayAttr(perm));
}

DenseResourceElementsAttr mlir::kiln::blobElements(ShapedType type, StringRef name,
                                                   ArrayRef<char> bytes) {
  // Aligned to the element size, as the elements are read in place.
  size_t align = std::max<size_t>(1, type.getElementTypeBitWidth() / 8);
  return DenseResourceElementsAttr::get(
      type, name, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, align));
}

ElementsAttr mlir::kiln::relaidElements(ElementsAttr source, ShapedType type, StringRef name,
                                        function_ref<int64_t(int64_t)> sourceIndex) {
  int64_t count = type.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(source); dense && dense.isSplat()) {
    for (int64_t i = 0; i < count; ++i)
      if (sourceIndex(i) < 0)
        return {};
    return dense.resizeSplat(type);
  }
  std::optional<ArrayRef<char>> data = rawElementsData(source);
  size_t width = type.getElementTypeBitWidth() / 8;
  if (!data || width == 0 || type.getElementTypeBitWidth() % 8 != 0 ||
      data->size() != source.getNumElements() * width)
    return {};
  std::vector<char> relaid(count * width, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = sourceIndex(i);
    assert(from < source.getNumElements() && "source index out of range");
    if (from >= 0)
      std::memcpy(&relaid[i * width], &(*data)[from * width], width);
  }
  if (isa<DenseElementsAttr>(source))
    return DenseElementsAttr::getFromRawBuffer(type, relaid);
  return blobElements(type, name, relaid);
}

std::optional<OnnxNode> mlir::kiln::onnxNodeOf(Location loc) {
  auto node = dyn_cast<NameLoc>(loc);
  if (!node)
    return std::nullopt;
  OnnxNode result{node.getName().strref(), StringRef()};
  if (auto opType = dyn_cast<NameLoc>(node.getChildLoc()))
    result.opType = opType.getName().strref();
  return result;
}

std::vector<OnnxNode> mlir::kiln::onnxNodesOf(Location loc) {
  std::vector<OnnxNode> nodes;
  auto add = [&](Location part) {
    std::optional<OnnxNode> node = onnxNodeOf(part);
    if (node && llvm::none_of(nodes, [&](const OnnxNode &n) { return n.name == node->name; }))
      nodes.push_back(*node);
  };
  if (auto fused = dyn_cast<FusedLoc>(loc))
    llvm::for_each(fused.getLocations(), add);
  else
    add(loc);
  return nodes;
}

std::string mlir::kiln::describeNode(Operation *op) {
  std::optional<OnnxNode> node = onnxNodeOf(op->getLoc());
  return node ? node->describe() : op->getName().getStringRef().str();
}

bool mlir::kiln::hasF32Elements(ElementsAttr attr) {
  if (!attr.getElementType().isF32())
    return false;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat())
    return true;
  std::optional<ArrayRef<char>> data = rawElementsData(attr);
  return data && data->size() == attr.getNumElements() * sizeof(float);
}

std::optional<std::vector<float>> mlir::kiln::f32Elements(ElementsAttr attr) {
  if (!hasF32Elements(attr))
    return std::nullopt;
  size_t count = attr.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat())
    return std::vector<float>(count, dense.getSplatValue<float>());
  std::optional<ArrayRef<char>> data = rawElementsData(attr);
  std::vector<float> values(count);
  std::memcpy(values.data(), data->data(), data->size());
  return values;
}

bool mlir::kiln::isHalfFloat(Type t) {
  Type element = getElementTypeOrSelf(t);
  return element.isF16() || element.isBF16();
}

ArrayRef<int64_t> mlir::kiln::shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

std::optional<float> mlir::kiln::f32Scalar(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant || cast<RankedTensorType>(constant.getType()).getNumElements() != 1)
    return std::nullopt;
  std::optional<std::vector<float>> values = f32Elements(constant.getValue());
  return values ? std::optional<float>(values->front()) : std::nullopt;
}
