//===- Builders.cpp - helpers for the kiln -> linalg lowering -------------===//
#include "codegen/KilnToLinalg/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::kiln {

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value scalarConst(OpBuilder &b, Location loc, Type type, double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

RankedTensorType signlessType(Type t) {
  auto tt = cast<RankedTensorType>(t);
  if (auto it = dyn_cast<IntegerType>(tt.getElementType()); it && !it.isSignless())
    return RankedTensorType::get(tt.getShape(),
                                 IntegerType::get(t.getContext(), it.getWidth()));
  return tt;
}

Value extremeConst(OpBuilder &b, Location loc, Type type, bool lowest, bool isUnsigned) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type, APFloat::getInf(ft.getFloatSemantics(), lowest)));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v = width == 1 || isUnsigned
                 ? (lowest ? APInt::getMinValue(width) : APInt::getMaxValue(width))
                 : (lowest ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value value) {
  Value init = emptyTensor(b, loc, shape, value.getType());
  return linalg::FillOp::create(b, loc, value, init).getResult(0);
}

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return filledTensor(b, loc, shape, scalarConst(b, loc, elementType, 0.0));
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape) {
  size_t offset = resultShape.size() - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(operandShape)) {
    bool broadcast = dim == 1 && resultShape[i + offset] != 1;
    exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

/// linalg.generic over `resultType` whose scalar body is `body(operands...)`;
/// operands broadcast to the result shape.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx, tensorType(v).getShape(), shape));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<utils::IteratorType> iterators(shape.size(), utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, shape, resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

/// Reduces `input` over `axes` with `combine`, starting from `init`.
/// The result keeps reduced dimensions as size 1.
Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                     Value init, BodyFn combine) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType inType = tensorType(input);
  SmallVector<int64_t> outShape(inType.getShape());
  SmallVector<utils::IteratorType> iterators(outShape.size(), utils::IteratorType::parallel);
  SmallVector<AffineExpr> outExprs;
  for (size_t i = 0; i < outShape.size(); ++i)
    outExprs.push_back(getAffineDimExpr(i, ctx));
  for (int64_t a : axes) {
    outShape[a] = 1;
    iterators[a] = utils::IteratorType::reduction;
    outExprs[a] = getAffineConstantExpr(0, ctx);
  }
  Value acc = filledTensor(b, loc, outShape, init);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(outShape.size(), ctx),
                                 AffineMap::get(outShape.size(), 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, acc.getType(), input, acc, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args));
      });
  return generic.getResult(0);
}

Value buildSum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes) {
  Type et = tensorType(input).getElementType();
  return buildReduction(b, loc, input, axes, scalarConst(b, loc, et, 0.0),
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          if (isa<FloatType>(a[0].getType()))
                            return arith::AddFOp::create(nb, l, a[0], a[1]);
                          return arith::AddIOp::create(nb, l, a[0], a[1]);
                        });
}

Value buildMax(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
               bool isUnsigned) {
  Type et = tensorType(input).getElementType();
  return buildReduction(b, loc, input, axes,
                        extremeConst(b, loc, et, /*lowest=*/true, isUnsigned),
                        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          if (isa<FloatType>(a[0].getType()))
                            return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                          if (isUnsigned)
                            return arith::MaxUIOp::create(nb, l, a[0], a[1]);
                          return arith::MaxSIOp::create(nb, l, a[0], a[1]);
                        });
}

Value buildMean(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes) {
  Value sum = buildSum(b, loc, input, axes);
  int64_t count = 1;
  for (int64_t a : axes)
    count *= tensorType(input).getDimSize(a);
  double inv = 1.0 / static_cast<double>(count);
  return buildElementwise(b, loc, tensorType(sum), sum,
                          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            Value c = scalarConst(nb, l, a[0].getType(), inv);
                            return arith::MulFOp::create(nb, l, a[0], c);
                          });
}

/// Reinterprets a static tensor with a new shape (row-major), via
/// collapse_shape/expand_shape so that bufferization makes it a view.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target) {
  RankedTensorType source = tensorType(input);
  if (source == target)
    return input;
  auto allDims = [](int64_t rank) {
    ReassociationIndices all;
    for (int64_t i = 0; i < rank; ++i)
      all.push_back(i);
    return SmallVector<ReassociationIndices>{all};
  };
  if (source.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, input,
                                         SmallVector<ReassociationIndices>{});
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, input,
                                           SmallVector<ReassociationIndices>{});
  Value flat = input;
  if (source.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, input, allDims(source.getRank()));
  if (target.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, target, flat, allDims(target.getRank()));
}

Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> pads,
                 double value) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return input;
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> low = {0, 0, pads[0], pads[1]}, high = {0, 0, pads[2], pads[3]};
  SmallVector<int64_t> shape(type.getShape());
  for (int i = 2; i < 4; ++i)
    shape[i] += low[i] + high[i];
  auto padded = RankedTensorType::get(shape, type.getElementType());
  Value padValue = scalarConst(b, loc, type.getElementType(), value);
  return tensor::PadOp::create(b, loc, padded, input, getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high), padValue);
}

Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  auto target = RankedTensorType::get(shape, type.getElementType());
  return buildElementwise(b, loc, target, v,
                          [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}


} // namespace mlir::kiln
