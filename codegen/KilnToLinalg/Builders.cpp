//===- Builders.cpp - helpers for the kiln -> linalg lowering -------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::kiln {

int64_t largestDivisorUpTo(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, limit); d > 1; --d)
    if (extent % d == 0)
      return d;
  return 1;
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor, int64_t d) {
  RankedTensorType type = tensorType(tensor);
  if (!type.isDynamicDim(d))
    return b.getIndexAttr(type.getDimSize(d));
  return tensor::DimOp::create(b, loc, tensor, d).getResult();
}

SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value tensor) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < tensorType(tensor).getRank(); ++d)
    sizes.push_back(dimOf(b, loc, tensor, d));
  return sizes;
}

OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx + *cy);
  return arith::AddIOp::create(b, loc, indexValue(b, loc, x), indexValue(b, loc, y)).getResult();
}

OpFoldResult mulSizes(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) {
  int64_t constant = 1;
  Value dynamic;
  for (OpFoldResult size : sizes) {
    if (auto c = getConstantIntValue(size)) {
      constant *= *c;
      continue;
    }
    Value v = indexValue(b, loc, size);
    dynamic = dynamic ? arith::MulIOp::create(b, loc, dynamic, v).getResult() : v;
  }
  if (!dynamic)
    return b.getIndexAttr(constant);
  if (constant == 1)
    return dynamic;
  return arith::MulIOp::create(b, loc, dynamic, arith::ConstantIndexOp::create(b, loc, constant))
      .getResult();
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value indexValue(OpBuilder &b, Location loc, OpFoldResult size) {
  return getValueOrCreateConstantIndexOp(b, loc, size);
}

/// Whether two sizes are the same constant, value, or dimension of a tensor.
static bool knownEqual(OpFoldResult x, OpFoldResult y) {
  if (isEqualConstantIntOrValue(x, y))
    return true;
  auto dx = dyn_cast_if_present<Value>(x), dy = dyn_cast_if_present<Value>(y);
  auto tx = dx ? dx.getDefiningOp<tensor::DimOp>() : nullptr;
  auto ty = dy ? dy.getDefiningOp<tensor::DimOp>() : nullptr;
  return tx && ty && tx.getSource() == ty.getSource() &&
         tx.getConstantIndex() == ty.getConstantIndex() && tx.getConstantIndex();
}

void checkSizesEqual(OpBuilder &b, Location loc, OpFoldResult actual, OpFoldResult expected,
                     const Twine &message) {
  if (knownEqual(actual, expected))
    return;
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, indexValue(b, loc, actual),
                                   indexValue(b, loc, expected));
  checkAtRunTime(b, loc, ok, message);
}

/// The number of elements of a tensor, as an index value.
static Value numElements(OpBuilder &b, Location loc, Value tensor) {
  return indexValue(b, loc, mulSizes(b, loc, sizesOf(b, loc, tensor)));
}

Value scalarConst(OpBuilder &b, Location loc, Type type, double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

RankedTensorType signlessType(Type t) {
  auto tt = cast<RankedTensorType>(t);
  if (std::optional<QuantParams> q = quantParams(tt.getElementType()))
    return RankedTensorType::get(tt.getShape(), IntegerType::get(t.getContext(), q->width));
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

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Value value) {
  Value init = emptyTensor(b, loc, sizes, value.getType());
  return linalg::FillOp::create(b, loc, value, init).getResult(0);
}

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return filledTensor(b, loc, shape, scalarConst(b, loc, elementType, 0.0));
}

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elementType) {
  return filledTensor(b, loc, sizes, scalarConst(b, loc, elementType, 0.0));
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

SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType resultType, ValueRange operands,
                                         ArrayRef<OpFoldResult> given) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes(given);
  if (sizes.empty()) {
    sizes.resize(rank);
    for (int64_t i = 0; i < rank; ++i) {
      if (!resultType.isDynamicDim(i)) {
        sizes[i] = b.getIndexAttr(resultType.getDimSize(i));
        continue;
      }
      for (Value v : operands) {
        int64_t j = i - (rank - tensorType(v).getRank());
        if (j >= 0 && tensorType(v).isDynamicDim(j)) {
          sizes[i] = dimOf(b, loc, v, j);
          break;
        }
      }
      assert(sizes[i] && "a dynamic result size that no operand has needs `sizes`");
    }
  }
  for (auto [k, v] : llvm::enumerate(operands)) {
    RankedTensorType type = tensorType(v);
    for (int64_t j = 0; j < type.getRank(); ++j)
      if (type.isDynamicDim(j))
        checkSizesEqual(b, loc, dimOf(b, loc, v, j), sizes[j + rank - type.getRank()],
                        "dimension " + Twine(j) + " of operand " + Twine(k) +
                            " does not match the other operands' (a dynamic dimension must "
                            "match; it does not broadcast)");
  }
  return sizes;
}

/// linalg.generic over `resultType` whose scalar body is `body(operands...)`;
/// operands broadcast to the result shape.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, BodyFn body, ArrayRef<OpFoldResult> sizes) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx, tensorType(v).getShape(), shape));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<utils::IteratorType> iterators(shape.size(), utils::IteratorType::parallel);
  Value init = resultType.hasStaticShape()
                   ? emptyTensor(b, loc, shape, resultType.getElementType())
                   : emptyTensor(b, loc, broadcastSizes(b, loc, resultType, operands, sizes),
                                 resultType.getElementType());
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
  SmallVector<OpFoldResult> outSizes = sizesOf(b, loc, input);
  for (int64_t a : axes)
    outSizes[a] = b.getIndexAttr(1);
  Value acc = filledTensor(b, loc, outSizes, init);
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
  Type et = tensorType(input).getElementType();
  bool dynamic = llvm::any_of(axes, [&](int64_t a) { return tensorType(input).isDynamicDim(a); });
  if (dynamic) {
    Value count = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t a : axes)
      count = arith::MulIOp::create(b, loc, count, indexValue(b, loc, dimOf(b, loc, input, a)));
    count = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
    count = arith::SIToFPOp::create(b, loc, et, count);
    return buildElementwise(b, loc, tensorType(sum), sum,
                            [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                              return arith::DivFOp::create(nb, l, a[0], count);
                            });
  }
  int64_t n = 1;
  for (int64_t a : axes)
    n *= tensorType(input).getDimSize(a);
  double inv = 1.0 / static_cast<double>(n);
  return buildElementwise(b, loc, tensorType(sum), sum,
                          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            Value c = scalarConst(nb, l, a[0].getType(), inv);
                            return arith::MulFOp::create(nb, l, a[0], c);
                          });
}

static SmallVector<ReassociationIndices> allDims(int64_t rank) {
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

/// The sizes of `target` when only one of its dimensions may be dynamic: it
/// gets what the element count of `input` leaves, which must divide; a
/// static target must hold exactly the input's elements.
static SmallVector<OpFoldResult> inferredSizes(OpBuilder &b, Location loc, Value input,
                                               RankedTensorType target) {
  assert(target.getNumDynamicDims() <= 1 && "reshapeTo needs sizes for this target");
  Value total = numElements(b, loc, input);
  int64_t known = 1;
  for (int64_t d : target.getShape())
    known *= ShapedType::isDynamic(d) ? 1 : d;
  Value knownValue = arith::ConstantIndexOp::create(b, loc, known);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : target.getShape())
    sizes.push_back(ShapedType::isDynamic(d)
                        ? OpFoldResult(arith::DivUIOp::create(b, loc, total, knownValue))
                        : OpFoldResult(b.getIndexAttr(d)));
  Value rebuilt = target.getNumDynamicDims()
                      ? arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, total,
                                                                             knownValue),
                                              knownValue)
                      : knownValue;
  checkAtRunTime(b, loc,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, total, rebuilt),
                 "the input's element count does not fit the shape " +
                     Twine(llvm::join(llvm::map_range(target.getShape(),
                                                      [](int64_t d) {
                                                        return ShapedType::isDynamic(d)
                                                                   ? std::string("?")
                                                                   : std::to_string(d);
                                                      }),
                                      "x")));
  return sizes;
}

/// Reinterprets a tensor with a new shape (row-major), via collapse_shape/
/// expand_shape so that bufferization makes it a view.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target,
                ArrayRef<OpFoldResult> sizes) {
  RankedTensorType source = tensorType(input);
  if (source == target && (sizes.empty() || source.hasStaticShape()))
    return input;
  if (source.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, input,
                                         SmallVector<ReassociationIndices>{});
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, input,
                                           SmallVector<ReassociationIndices>{});
  if (source.hasStaticShape() && target.hasStaticShape()) {
    Value flat = input;
    if (source.getRank() != 1)
      flat = tensor::CollapseShapeOp::create(b, loc, input, allDims(source.getRank()));
    if (target.getRank() == 1)
      return flat;
    return tensor::ExpandShapeOp::create(b, loc, target, flat, allDims(target.getRank()));
  }
  SmallVector<OpFoldResult> targetSizes(sizes);
  if (targetSizes.empty())
    targetSizes = inferredSizes(b, loc, input, target);
  if (target.getNumDynamicDims() > 1) {
    // One expand_shape group cannot take several dynamic sizes as a view
    // that later passes handle; tensor.reshape takes them as a shape.
    SmallVector<Value> dims;
    for (OpFoldResult size : targetSizes)
      dims.push_back(indexValue(b, loc, size));
    Value shape = tensor::FromElementsOp::create(b, loc, dims);
    return tensor::ReshapeOp::create(b, loc, target, input, shape);
  }
  Value flat = input;
  if (source.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, input, allDims(source.getRank()));
  if (target.getRank() == 1)
    return tensor::CastOp::create(b, loc, target, flat);
  if (tensorType(flat).hasStaticShape()) // a static input reshaped to a dynamic type
    flat = tensor::CastOp::create(b, loc, RankedTensorType::get({ShapedType::kDynamic},
                                                                target.getElementType()),
                                  flat);
  return tensor::ExpandShapeOp::create(b, loc, target, flat, allDims(target.getRank()),
                                       targetSizes);
}

Value padWithConstant(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> low,
                      ArrayRef<int64_t> high, Value value, RankedTensorType type) {
  if (!type.hasStaticShape() || !tensorType(input).hasStaticShape())
    return tensor::PadOp::create(b, loc, type, input, getAsIndexOpFoldResult(b.getContext(), low),
                                 getAsIndexOpFoldResult(b.getContext(), high), value);
  // A fill and a copy into the interior: as a tensor.pad it would bufferize
  // to a loop that computes each element's value, which LLVM vectorizes
  // poorly (scattered stores).
  Value filled = filledTensor(b, loc, type.getShape(), value);
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> ones(low.size(), 1);
  return tensor::InsertSliceOp::create(b, loc, input, filled, getAsIndexOpFoldResult(ctx, low),
                                       getAsIndexOpFoldResult(ctx, tensorType(input).getShape()),
                                       getAsIndexOpFoldResult(ctx, ones));
}

Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> pads,
                 double value, bool channelsLast) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return input;
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> low = {0, 0, pads[0], pads[1]}, high = {0, 0, pads[2], pads[3]};
  if (channelsLast) {
    low = {0, pads[0], pads[1], 0};
    high = {0, pads[2], pads[3], 0};
  }
  SmallVector<int64_t> shape(type.getShape());
  for (int i = 0; i < 4; ++i)
    if (!ShapedType::isDynamic(shape[i]))
      shape[i] += low[i] + high[i];
  auto padded = RankedTensorType::get(shape, type.getElementType());
  Value padValue = scalarConst(b, loc, type.getElementType(), value);
  return padWithConstant(b, loc, input, low, high, padValue, padded);
}

Value finiteMax(OpBuilder &b, Location loc, Value m) {
  Value ninf = extremeConst(b, loc, m.getType(), /*lowest=*/true);
  Value isNinf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, ninf);
  return arith::SelectOp::create(b, loc, isNinf, scalarConst(b, loc, m.getType(), 0.0), m);
}

Value broadcastElement(OpBuilder &b, Location loc, Value v, ValueRange indices) {
  ArrayRef<int64_t> shape = tensorType(v).getShape();
  SmallVector<Value> at(indices.take_back(shape.size()));
  for (auto [size, index] : llvm::zip(shape, at))
    if (size == 1)
      index = indexConst(b, loc, 0);
  return tensor::ExtractOp::create(b, loc, v, at);
}

Operation *elementwiseOpOf(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return nullptr;
  Block &body = op.getRegion().front();
  Operation *first = &body.front();
  bool alone = first->getNumOperands() == 1 && first->getOperand(0) == body.getArgument(0) &&
               first->getNumResults() == 1 &&
               body.getTerminator()->getOperand(0) == first->getResult(0);
  return alone ? first : nullptr;
}

Value buildTileLoop(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> lbs,
                    ArrayRef<OpFoldResult> ubs, ArrayRef<OpFoldResult> steps, Value init,
                    function_ref<TileResult(OpBuilder &, Location, ValueRange, Value)> tile) {
  auto loop = scf::ForallOp::create(b, loc, lbs, ubs, steps, ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getTerminator());
  TileResult r = tile(b, loc, loop.getInductionVars(), loop.getRegionIterArgs()[0]);
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(r.offsets.size(), b.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(b, loc, r.value, loop.getRegionIterArgs()[0], r.offsets,
                                        r.sizes, strides);
  return loop.getResult(0);
}

Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape,
                  ArrayRef<OpFoldResult> sizes) {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  auto target = RankedTensorType::get(shape, type.getElementType());
  return buildElementwise(
      b, loc, target, v, [](OpBuilder &, Location, ValueRange a) { return a[0]; }, sizes);
}

/// A widening matmul as a linalg.generic over (batch..., m, n, k): each
/// operand is extended (integers by their own signedness, which
/// linalg.matmul's single `cast` cannot express for mixed u8 x s8 operands;
/// bf16 to f32) and the products summed in the result's type.
ElementsAttr constantValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  return constant ? constant.getValue() : ElementsAttr();
}

Value wideningMultiplyAdd(OpBuilder &b, Location loc, Value acc, Value x, Value y,
                          Extension ext) {
  Type sumType = acc.getType();
  bool isFloat = isa<FloatType>(sumType);
  auto extend = [&](Value v, bool isUnsigned) -> Value {
    if (isFloat)
      return arith::ExtFOp::create(b, loc, sumType, v);
    if (isUnsigned)
      return arith::ExtUIOp::create(b, loc, sumType, v);
    return arith::ExtSIOp::create(b, loc, sumType, v);
  };
  x = extend(x, ext.lhsUnsigned);
  y = extend(y, ext.rhsUnsigned);
  if (isFloat)
    return arith::AddFOp::create(b, loc, acc, arith::MulFOp::create(b, loc, x, y));
  return arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, x, y));
}

Value wideningMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                     Extension ext) {
  MLIRContext *ctx = b.getContext();
  int64_t batch = tensorType(init).getRank() - 2;
  unsigned dims = batch + 3;
  SmallVector<AffineExpr> prefix;
  for (int64_t i = 0; i < batch; ++i)
    prefix.push_back(getAffineDimExpr(i, ctx));
  AffineExpr m = getAffineDimExpr(batch, ctx), n = getAffineDimExpr(batch + 1, ctx),
             k = getAffineDimExpr(batch + 2, ctx);
  auto map = [&](AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs(prefix);
    exprs.append({r, c});
    return AffineMap::get(dims, 0, exprs, ctx);
  };
  SmallVector<utils::IteratorType> iterators(dims - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs, rhs}, init,
      ArrayRef<AffineMap>{map(m, k), map(k, n), map(m, n)}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l, wideningMultiplyAdd(nb, l, a[2], a[0], a[1], ext));
      });
  // A contraction that elementwise fusion must leave whole, and that
  // kiln-cpu-vnni-matmul compiles to a dedicated kernel.
  generic->setAttr("kiln.widening_matmul", b.getUnitAttr());
  return generic.getResult(0);
}

} // namespace mlir::kiln
