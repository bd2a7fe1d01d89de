//===- DataMovement.cpp - slice, gather, pad, expand, tile to linalg ------===//
//
// Strided slices with positive steps are tensor.extract_slice views; the
// other movements are linalg.generic ops whose input maps do the address
// arithmetic (affine strides, modulo for tiling) or, for data-dependent
// addresses (gather, reflect/edge padding), a tensor.extract in the body.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// A generic over `resultType` with one input read through `inputMap`.
Value mapInput(OpBuilder &b, Location loc, Value input, AffineMap inputMap,
               RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  // Dynamic result dimensions map one-to-one onto the input's (slices take
  // them whole).
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rank; ++i)
    sizes.push_back(resultType.isDynamicDim(i) ? dimOf(b, loc, input, i)
                                               : b.getIndexAttr(resultType.getDimSize(i)));
  Value init = emptyTensor(b, loc, sizes, resultType.getElementType());
  return linalg::GenericOp::create(
             b, loc, resultType, input, init,
             SmallVector<AffineMap>{inputMap, AffineMap::getMultiDimIdentityMap(rank, ctx)},
             iterators,
             [](OpBuilder &nb, Location l, ValueRange a) { linalg::YieldOp::create(nb, l, a[0]); })
      .getResult(0);
}

/// A generic over `resultType` whose body computes the source coordinates
/// from the output coordinates and extracts from `source`.
/// `sizes` gives the result's sizes when it has dynamic dimensions.
Value gatherFrom(OpBuilder &b, Location loc, Value source, ValueRange inputs,
                 ArrayRef<AffineMap> inputMaps, RankedTensorType resultType,
                 function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange,
                                                 ArrayRef<Value>)>
                     coordinates,
                 ArrayRef<OpFoldResult> sizes = {}) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  Value init = resultType.hasStaticShape()
                   ? emptyTensor(b, loc, resultType.getShape(), resultType.getElementType())
                   : emptyTensor(b, loc, sizes, resultType.getElementType());
  return linalg::GenericOp::create(
             b, loc, resultType, inputs, init, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               SmallVector<Value> out;
               for (int64_t i = 0; i < rank; ++i)
                 out.push_back(linalg::IndexOp::create(nb, l, i));
               SmallVector<Value> src = coordinates(nb, l, a.drop_back(), out);
               Value v = tensor::ExtractOp::create(nb, l, source, src);
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

Value clampIndex(OpBuilder &b, Location loc, Value i, int64_t size) {
  Value lo = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, 0));
  return arith::MinSIOp::create(b, loc, lo, indexConst(b, loc, size - 1));
}

/// clampIndex for a size that may be known only at run time.
Value clampIndex(OpBuilder &b, Location loc, Value i, OpFoldResult size) {
  if (auto c = getConstantIntValue(size))
    return clampIndex(b, loc, i, *c);
  Value lo = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, 0));
  Value last = arith::SubIOp::create(b, loc, indexValue(b, loc, size), indexConst(b, loc, 1));
  return arith::MinSIOp::create(b, loc, lo, last);
}

/// A size as an f32 value.
static Value sizeAsF32(OpBuilder &b, Location loc, OpFoldResult size, double delta = 0) {
  Type f32 = b.getF32Type();
  if (auto c = getConstantIntValue(size))
    return scalarConst(b, loc, f32, double(*c) + delta);
  Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), indexValue(b, loc, size));
  Value f = arith::SIToFPOp::create(b, loc, f32, i);
  return delta == 0 ? f : arith::AddFOp::create(b, loc, f, scalarConst(b, loc, f32, delta));
}

Value normalizeIndex(OpBuilder &b, Location loc, Value raw, int64_t size);
Value normalizeIndex(OpBuilder &b, Location loc, Value raw, OpFoldResult size);

/// Reflect padding's source coordinate: -i before the start, 2(n-1) - i past
/// the end (one reflection; callers clamp the rest).
Value reflectIndex(OpBuilder &b, Location l, Value i, OpFoldResult size) {
  Value n = indexValue(b, l, size);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, indexConst(b, l, 0));
  Value mirrored = arith::SubIOp::create(b, l, indexConst(b, l, 0), i);
  i = arith::SelectOp::create(b, l, neg, mirrored, i);
  Value past = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, n);
  Value last = arith::SubIOp::create(b, l, n, indexConst(b, l, 1));
  Value back = arith::SubIOp::create(b, l, arith::AddIOp::create(b, l, last, last), i);
  return arith::SelectOp::create(b, l, past, back, i);
}

/// i modulo size, in [0, size): the input repeated in both directions.
Value wrapIndex(OpBuilder &b, Location l, Value i, OpFoldResult size) {
  Value n = indexValue(b, l, size);
  Value r = arith::RemSIOp::create(b, l, i, n);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, r, indexConst(b, l, 0));
  return arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, r, n), r);
}

/// The first index and the count that ONNX Slice bounds select from a
/// dimension of run-time size `n` (onnxSliceBounds, in index arithmetic).
std::pair<Value, Value> runtimeSliceBounds(OpBuilder &b, Location l, int64_t start, int64_t end,
                                           int64_t step, Value n) {
  auto c = [&](int64_t v) { return indexConst(b, l, v); };
  auto add = [&](Value x, Value y) { return b.createOrFold<arith::AddIOp>(l, x, y); };
  auto sub = [&](Value x, Value y) { return b.createOrFold<arith::SubIOp>(l, x, y); };
  auto clamp = [&](Value x, Value lo, Value hi) {
    return b.createOrFold<arith::MinSIOp>(l, b.createOrFold<arith::MaxSIOp>(l, x, lo), hi);
  };
  Value begin = start < 0 ? add(n, c(start)) : c(start);
  Value stop = end < 0 ? add(n, c(end)) : c(end);
  Value distance; // from the first index to one past the last, in the step's direction
  int64_t stride = step;
  if (step > 0) {
    begin = clamp(begin, c(0), n);
    distance = sub(clamp(stop, c(0), n), begin);
  } else {
    Value last = sub(n, c(1));
    begin = clamp(begin, c(0), last);
    distance = sub(begin, clamp(stop, c(-1), last));
    stride = -std::max(step, -std::numeric_limits<int64_t>::max());
  }
  // ceil(distance / stride), at least 0
  Value count = add(b.createOrFold<arith::FloorDivSIOp>(l, sub(distance, c(1)), c(stride)), c(1));
  return {begin, b.createOrFold<arith::MaxSIOp>(l, count, c(0))};
}

/// kiln.slice with `ends` (ONNX bounds, dynamic dimensions): the bounds are
/// resolved against the input's sizes at run time.
Value lowerOnnxSlice(OpBuilder &b, Location loc, SliceOp op, Value input, RankedTensorType type) {
  ArrayRef<int64_t> starts = op.getStarts(), ends = *op.getEnds(), steps = op.getSteps();
  SmallVector<OpFoldResult> begins, sizes;
  SmallVector<int64_t> strides(steps);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    OpFoldResult n = dimOf(b, loc, input, d);
    if (auto dim = getConstantIntValue(n)) {
      SliceBounds s = onnxSliceBounds(starts[d], ends[d], steps[d], *dim);
      begins.push_back(b.getIndexAttr(s.begin));
      sizes.push_back(b.getIndexAttr(s.size));
      continue;
    }
    auto [begin, size] = runtimeSliceBounds(b, loc, starts[d], ends[d], steps[d], cast<Value>(n));
    begins.push_back(getAsOpFoldResult(begin));
    sizes.push_back(getAsOpFoldResult(size));
  }
  Value r;
  if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
    r = tensor::ExtractSliceOp::create(b, loc, input, begins, sizes,
                                       getAsIndexOpFoldResult(b.getContext(), strides));
  } else {
    SmallVector<int64_t> shape;
    for (OpFoldResult s : sizes)
      shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
    auto gathered = RankedTensorType::get(shape, type.getElementType());
    r = gatherFrom(
        b, loc, input, {}, {}, gathered,
        [&](OpBuilder &nb, Location l, ValueRange, ArrayRef<Value> out) {
          SmallVector<Value> at;
          for (auto [i, o] : llvm::enumerate(out)) {
            Value step = nb.createOrFold<arith::MulIOp>(l, o, indexConst(nb, l, steps[i]));
            at.push_back(nb.createOrFold<arith::AddIOp>(l, indexValue(nb, l, begins[i]), step));
          }
          return at;
        },
        sizes);
  }
  // Sizes that folded to constants give a more static type than the op's.
  return r.getType() == type ? r : tensor::CastOp::create(b, loc, type, r).getResult();
}

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    if (op.getEnds()) {
      rewriter.replaceOp(op, lowerOnnxSlice(rewriter, loc, op, adaptor.getInput(), type));
      return success();
    }
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    MLIRContext *ctx = rewriter.getContext();
    if (llvm::is_contained(type.getShape(), 0)) { // its offsets may lie past the input's end
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type.getShape(), type.getElementType()));
      return success();
    }
    // Dynamic dimensions are taken whole (verifier): their size is the input's.
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, adaptor.getInput());
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (!type.isDynamicDim(i))
        sizes[i] = rewriter.getIndexAttr(type.getDimSize(i));
    if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, type, adaptor.getInput(), getAsIndexOpFoldResult(ctx, starts), sizes,
          getAsIndexOpFoldResult(ctx, steps));
      return success();
    }
    SmallVector<AffineExpr> exprs;
    for (size_t i = 0; i < starts.size(); ++i)
      exprs.push_back(getAffineDimExpr(i, ctx) * steps[i] + starts[i]);
    AffineMap map = AffineMap::get(starts.size(), 0, exprs, ctx);
    rewriter.replaceOp(op, mapInput(rewriter, loc, adaptor.getInput(), map, type));
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = signlessType(op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    int64_t axis = op.getAxis(), q = tensorType(indices).getRank();
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    OpFoldResult dim = dataSizes[axis];
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < q; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    AffineMap idxMap = AffineMap::get(type.getRank(), 0, idxExprs, ctx);
    // data.shape[:axis] + indices.shape + data.shape[axis+1:]
    SmallVector<OpFoldResult> sizes(dataSizes.begin(), dataSizes.begin() + axis);
    llvm::append_range(sizes, sizesOf(rewriter, loc, indices));
    sizes.append(dataSizes.begin() + axis + 1, dataSizes.end());
    Value r = gatherFrom(
        rewriter, loc, data, indices, {idxMap}, type,
        [&](OpBuilder &b, Location l, ValueRange in, ArrayRef<Value> out) {
          SmallVector<Value> src(out.begin(), out.begin() + axis);
          src.push_back(normalizeIndex(b, l, in[0], dim));
          src.append(out.begin() + axis + q, out.end());
          return src;
        },
        sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// A run-time index into a dimension of `size`: negative counts from the
/// end, and out-of-range values are clamped so reads stay in bounds.
Value normalizeIndex(OpBuilder &b, Location loc, Value raw, int64_t size) {
  return normalizeIndex(b, loc, raw, OpFoldResult(b.getIndexAttr(size)));
}

Value normalizeIndex(OpBuilder &b, Location loc, Value raw, OpFoldResult size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, indexConst(b, loc, 0));
  i = arith::SelectOp::create(b, loc, neg,
                              arith::AddIOp::create(b, loc, i, indexValue(b, loc, size)), i);
  return clampIndex(b, loc, i, size);
}

struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    Value data = adaptor.getData();
    int64_t axis = op.getAxis(), dim = tensorType(data).getDimSize(axis);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(type.getRank(), rewriter.getContext());
    Value r = gatherFrom(rewriter, op.getLoc(), data, adaptor.getIndices(), {identity}, type,
                         [&](OpBuilder &b, Location l, ValueRange in, ArrayRef<Value> out) {
                           SmallVector<Value> src(out);
                           src[axis] = normalizeIndex(b, l, in[0], dim);
                           return src;
                         });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(PadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Value input = adaptor.getInput();
    ArrayRef<int64_t> in = tensorType(input).getShape();
    int64_t rank = in.size();
    ArrayRef<int64_t> pads = op.getPads();
    if (op.getMode() == "constant") {
      Value value = scalarConst(rewriter, loc, type.getElementType(),
                                op.getValue().convertToDouble());
      rewriter.replaceOp(op, padWithConstant(rewriter, loc, input, pads.take_front(rank),
                                             pads.drop_front(rank), value, type));
      return success();
    }
    StringRef mode = op.getMode();
    // Dynamic sizes: the result's are the input's plus the pads, and the
    // input must have what the mode reads (an element to repeat; for
    // reflect, more elements than either pad, the mirror excluding the edge).
    SmallVector<OpFoldResult> inSizes = sizesOf(rewriter, loc, input), outSizes;
    for (int64_t d = 0; d < rank; ++d) {
      outSizes.push_back(addSizes(rewriter, loc, inSizes[d],
                                  rewriter.getIndexAttr(pads[d] + pads[d + rank])));
      if (!ShapedType::isDynamic(in[d]))
        continue;
      int64_t least = mode == "reflect" ? std::max(pads[d], pads[d + rank]) + 1 : 1;
      checkAtRunTime(rewriter, loc,
                     arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge,
                                           indexValue(rewriter, loc, inSizes[d]),
                                           indexConst(rewriter, loc, least)),
                     "dimension " + Twine(d) + " must have at least " + Twine(least) +
                         " elements for " + mode + " padding");
    }
    Value r = gatherFrom(rewriter, loc, input, {}, {}, type,
                         [&](OpBuilder &b, Location l, ValueRange, ArrayRef<Value> out) {
                           SmallVector<Value> src;
                           for (int64_t d = 0; d < rank; ++d) {
                             Value i = arith::SubIOp::create(b, l, out[d],
                                                             indexConst(b, l, pads[d]));
                             if (mode == "reflect")
                               i = reflectIndex(b, l, i, inSizes[d]);
                             else if (mode == "wrap")
                               i = wrapIndex(b, l, i, inSizes[d]);
                             src.push_back(clampIndex(b, l, i, inSizes[d]));
                           }
                           return src;
                         },
                         outSizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// A generic over the result whose body reads input[start + i * step]. A
/// position outside the input reads the padding value ("constant"), the
/// nearest edge ("edge") or its mirror image ("reflect"). Coordinates are
/// clamped before the read, so no lane ever reads out of bounds.
struct WindowLowering : OpConversionPattern<WindowOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WindowOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Value input = adaptor.getInput();
    ArrayRef<int64_t> in = tensorType(input).getShape();
    StringRef mode = op.getMode();
    Value padding = tensor::ExtractOp::create(rewriter, loc, adaptor.getPadding(), ValueRange{});
    if (llvm::is_contained(in, 0)) { // nothing to read: all padding
      rewriter.replaceOp(op, filledTensor(rewriter, loc, type.getShape(), padding));
      return success();
    }
    auto scalarAt = [&](Value vector, int64_t d) -> Value {
      Value v = tensor::ExtractOp::create(rewriter, loc, vector, ValueRange{indexConst(rewriter, loc, d)});
      return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), v);
    };
    SmallVector<Value> starts, steps;
    for (int64_t d = 0; d < (int64_t)in.size(); ++d) {
      starts.push_back(scalarAt(adaptor.getStarts(), d));
      steps.push_back(scalarAt(adaptor.getSteps(), d));
    }
    int64_t rank = type.getRank();
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, init,
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, getContext())},
        iterators, [&](OpBuilder &b, Location l, ValueRange) {
          Value inside = arith::ConstantIntOp::create(b, l, 1, 1);
          SmallVector<Value> src;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(b, l, d);
            Value p = arith::AddIOp::create(b, l, starts[d],
                                            arith::MulIOp::create(b, l, i, steps[d]));
            Value low = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, p,
                                              indexConst(b, l, 0));
            Value high = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, p,
                                               indexConst(b, l, in[d]));
            inside = arith::AndIOp::create(b, l, inside, arith::AndIOp::create(b, l, low, high));
            if (mode == "reflect")
              p = reflectIndex(b, l, p, b.getIndexAttr(in[d]));
            else if (mode == "wrap")
              p = wrapIndex(b, l, p, b.getIndexAttr(in[d]));
            src.push_back(clampIndex(b, l, p, in[d]));
          }
          Value v = tensor::ExtractOp::create(b, l, input, src);
          if (mode == "constant")
            v = arith::SelectOp::create(b, l, inside, v, padding);
          linalg::YieldOp::create(b, l, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct ExpandLowering : OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, broadcastTo(rewriter, op.getLoc(), adaptor.getInput(),
                                       signlessType(op.getType()).getShape()));
    return success();
  }
};

struct TileLowering : OpConversionPattern<TileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TileOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    auto type = signlessType(op.getType());
    ArrayRef<int64_t> in = tensorType(adaptor.getInput()).getShape();
    SmallVector<AffineExpr> exprs;
    for (size_t i = 0; i < in.size(); ++i)
      exprs.push_back(in[i] == 0 ? getAffineConstantExpr(0, ctx)
                                 : getAffineDimExpr(i, ctx) % in[i]);
    AffineMap map = AffineMap::get(in.size(), 0, exprs, ctx);
    rewriter.replaceOp(op, mapInput(rewriter, op.getLoc(), adaptor.getInput(), map, type));
    return success();
  }
};

struct TriluLowering : OpConversionPattern<TriluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TriluOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = signlessType(op.getType());
    int64_t rank = type.getRank();
    bool upper = op.getUpper();
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   AffineMap::get(rank, 0, {}, ctx),
                                   AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    Value r = linalg::GenericOp::create(
                  rewriter, loc, type, ValueRange{adaptor.getInput(), adaptor.getK()}, init, maps,
                  iterators,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    auto i64 = [&](int64_t dim) -> Value {
                      return arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                        linalg::IndexOp::create(b, l, dim));
                    };
                    Value diag = arith::SubIOp::create(b, l, i64(rank - 1), i64(rank - 2));
                    Value keep = arith::CmpIOp::create(
                        b, l, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle, diag,
                        a[1]);
                    Value zero = scalarConst(b, l, a[0].getType(), 0);
                    Value v = arith::SelectOp::create(b, l, keep, a[0], zero);
                    linalg::YieldOp::create(b, l, v);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// A tf_crop_and_resize box along one axis: its normalized start and end.
struct Crop {
  Value start, end;
};

/// The input coordinate (as f32) of output coordinate `x` along one axis
/// whose sizes are `in` and `out`.
Value sourceCoordinate(OpBuilder &b, Location loc, StringRef mode, Value x, Value scale,
                       OpFoldResult in, OpFoldResult out, Crop crop = {}) {
  Type f32 = b.getF32Type();
  auto c = [&](double v) { return scalarConst(b, loc, f32, v); };
  Value xf = arith::SIToFPOp::create(
      b, loc, f32, arith::IndexCastOp::create(b, loc, b.getI64Type(), x));
  if (mode == "tf_crop_and_resize") {
    // start (in - 1) + x (end - start) (in - 1) / (out - 1); the box's
    // centre when the output has one element.
    Value last = sizeAsF32(b, loc, in, -1);
    Value extent = arith::SubFOp::create(b, loc, crop.end, crop.start);
    Value step = arith::DivFOp::create(b, loc, arith::MulFOp::create(b, loc, extent, last),
                                       sizeAsF32(b, loc, out, -1));
    Value along = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, crop.start, last),
                                        arith::MulFOp::create(b, loc, xf, step));
    Value centre = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, arith::AddFOp::create(b, loc, crop.start, crop.end),
                                      c(0.5)),
        last);
    Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, indexValue(b, loc, out),
                                         indexConst(b, loc, 1));
    return arith::SelectOp::create(b, loc, single, centre, along);
  }
  // 0 where the output has one element, else `v` (align_corners, pytorch).
  auto unlessSingle = [&](Value v) -> Value {
    if (auto n = getConstantIntValue(out))
      return *n == 1 ? c(0) : v;
    Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         indexValue(b, loc, out), indexConst(b, loc, 1));
    return arith::SelectOp::create(b, loc, single, c(0), v);
  };
  if (mode == "align_corners") {
    // ONNX divides by the unrounded resized length, in * scale - 1.
    Value resized =
        arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, sizeAsF32(b, loc, in), scale),
                              c(1));
    return unlessSingle(arith::MulFOp::create(
        b, loc, xf, arith::DivFOp::create(b, loc, sizeAsF32(b, loc, in, -1), resized)));
  }
  if (mode == "asymmetric")
    return arith::DivFOp::create(b, loc, xf, scale);
  Value shifted = arith::DivFOp::create(b, loc, arith::AddFOp::create(b, loc, xf, c(0.5)), scale);
  if (mode == "tf_half_pixel_for_nn")
    return shifted;
  Value halfPixel = arith::SubFOp::create(b, loc, shifted, c(0.5));
  if (mode == "pytorch_half_pixel")
    return unlessSingle(halfPixel);
  if (mode == "half_pixel_symmetric") {
    // Centred on the input where rounding made the output smaller than
    // in * scale: shifted by in/2 * (1 - out / (in * scale)).
    Value inF = sizeAsF32(b, loc, in);
    Value adjustment =
        arith::DivFOp::create(b, loc, sizeAsF32(b, loc, out), arith::MulFOp::create(b, loc, inF, scale));
    Value offset = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, inF, c(0.5)),
                                         arith::SubFOp::create(b, loc, c(1), adjustment));
    return arith::AddFOp::create(b, loc, offset, halfPixel);
  }
  return halfPixel;
}

Value toIndex(OpBuilder &b, Location loc, Value f, OpFoldResult size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                       arith::FPToSIOp::create(b, loc, b.getI64Type(), f));
  return clampIndex(b, loc, i, size);
}

Value convertFloat(OpBuilder &b, Location loc, Value v, Type to) {
  unsigned from = v.getType().getIntOrFloatBitWidth(), width = to.getIntOrFloatBitWidth();
  if (v.getType() == to)
    return v;
  if (from < width)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// One input sample a resized element reads along one dimension: its index
/// and its weight (null: 1).
struct Tap {
  Value index, weight;
};

/// Keys' cubic kernel weights for the taps at offsets -1, 0, 1, 2 from
/// floor(x), with s = x - floor(x) and parameter a (ONNX cubic_coeff_a).
SmallVector<Value> cubicWeights(OpBuilder &b, Location l, Value s, double a) {
  Type f32 = b.getF32Type();
  auto c = [&](double v) { return scalarConst(b, l, f32, v); };
  auto mul = [&](Value x, Value y) { return arith::MulFOp::create(b, l, x, y).getResult(); };
  auto add = [&](Value x, Value y) { return arith::AddFOp::create(b, l, x, y).getResult(); };
  auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, l, x, y).getResult(); };
  // |t| in [1, 2): ((a t - 5a) t + 8a) t - 4a;  |t| < 1: ((a + 2) t - (a + 3)) t^2 + 1.
  auto far = [&](Value t) {
    return sub(mul(add(mul(sub(mul(c(a), t), c(5 * a)), t), c(8 * a)), t), c(4 * a));
  };
  auto near = [&](Value t) {
    return add(mul(sub(mul(c(a + 2), t), c(a + 3)), mul(t, t)), c(1));
  };
  Value r = sub(c(1), s);
  return {far(add(s, c(1))), near(s), near(r), far(add(r, c(1)))};
}

struct ResizeLowering : OpConversionPattern<ResizeOp> {
  using OpConversionPattern::OpConversionPattern;

  /// The taps of output coordinate `x` along dimension d.
  SmallVector<Tap> taps(OpBuilder &b, Location l, ResizeOp op, Value src,
                        OpFoldResult in) const {
    Type f32 = b.getF32Type();
    StringRef mode = op.getMode();
    if (mode == "nearest") {
      StringRef nearest = op.getNearestMode();
      Value rounded;
      if (nearest == "floor")
        rounded = math::FloorOp::create(b, l, src);
      else if (nearest == "ceil")
        rounded = math::CeilOp::create(b, l, src);
      else if (nearest == "round_prefer_ceil")
        rounded = math::FloorOp::create(
            b, l, arith::AddFOp::create(b, l, src, scalarConst(b, l, f32, 0.5)));
      else
        rounded = math::CeilOp::create(
            b, l, arith::SubFOp::create(b, l, src, scalarConst(b, l, f32, 0.5)));
      return {{toIndex(b, l, rounded, in), nullptr}};
    }
    if (mode == "linear") {
      Value clamped = arith::MaximumFOp::create(b, l, src, scalarConst(b, l, f32, 0));
      clamped = arith::MinimumFOp::create(b, l, clamped, sizeAsF32(b, l, in, -1));
      Value floor = math::FloorOp::create(b, l, clamped);
      Value lo = toIndex(b, l, floor, in);
      Value hi = clampIndex(b, l, arith::AddIOp::create(b, l, lo, indexConst(b, l, 1)), in);
      Value w = arith::SubFOp::create(b, l, clamped, floor);
      return {{lo, arith::SubFOp::create(b, l, scalarConst(b, l, f32, 1), w)}, {hi, w}};
    }
    // Cubic: four taps around floor(src); outside the input they repeat the
    // edge, or with exclude_outside get no weight and the rest renormalize.
    Value floor = math::FloorOp::create(b, l, src);
    Value s = arith::SubFOp::create(b, l, src, floor);
    Value base = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                            arith::FPToSIOp::create(b, l, b.getI64Type(), floor));
    SmallVector<Value> weights = cubicWeights(b, l, s, op.getCubicCoeffA().convertToDouble());
    SmallVector<Tap> result;
    Value total = scalarConst(b, l, f32, 0);
    for (int64_t t = 0; t < 4; ++t) {
      Value i = arith::AddIOp::create(b, l, base, indexConst(b, l, t - 1));
      Value w = weights[t];
      if (op.getExcludeOutside()) {
        Value inside = arith::AndIOp::create(
            b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, indexConst(b, l, 0)),
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, indexValue(b, l, in)));
        w = arith::SelectOp::create(b, l, inside, w, scalarConst(b, l, f32, 0));
        total = arith::AddFOp::create(b, l, total, w);
      }
      result.push_back({clampIndex(b, l, i, in), w});
    }
    if (op.getExcludeOutside())
      for (Tap &tap : result)
        tap.weight = arith::DivFOp::create(b, l, tap.weight, total);
    return result;
  }

  LogicalResult matchAndRewrite(ResizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Value input = adaptor.getInput();
    ArrayRef<int64_t> in = tensorType(input).getShape(), out = type.getShape();
    ArrayRef<double> scales = op.getScales();
    int64_t rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    // Scales read at run time are extracted once, outside the loop nest.
    SmallVector<Value> runtimeScales;
    if (Value runtime = adaptor.getRuntimeScales())
      for (int64_t d = 0; d < rank; ++d)
        runtimeScales.push_back(
            tensor::ExtractOp::create(rewriter, loc, runtime, ValueRange{indexConst(rewriter, loc, d)}));
    SmallVector<OpFoldResult> inSizes = sizesOf(rewriter, loc, input), outSizes;
    // Sizes read at run time: scale = size / input size, in f32.
    if (Value sizes = adaptor.getRuntimeSizes()) {
      for (int64_t d = 0; d < rank; ++d) {
        Value size = tensor::ExtractOp::create(rewriter, loc, sizes,
                                               ValueRange{indexConst(rewriter, loc, d)});
        size = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), size);
        if (!type.isDynamicDim(d))
          checkSizesEqual(rewriter, loc, size, rewriter.getIndexAttr(out[d]),
                          "Resize sizes[" + Twine(d) + "] must be the result's size " +
                              Twine(out[d]));
        outSizes.push_back(type.isDynamicDim(d) ? OpFoldResult(size)
                                                : rewriter.getIndexAttr(out[d]));
        runtimeScales.push_back(arith::DivFOp::create(
            rewriter, loc, sizeAsF32(rewriter, loc, size), sizeAsF32(rewriter, loc, inSizes[d])));
      }
    }
    // Dynamic sizes from constant scales: the output has floor(in * scale)
    // elements, as ONNX computes it in f32.
    for (int64_t d = 0; d < rank && !adaptor.getRuntimeSizes(); ++d) {
      if (!type.isDynamicDim(d)) {
        outSizes.push_back(rewriter.getIndexAttr(out[d]));
      } else if (scales[d] == 1.0) {
        outSizes.push_back(inSizes[d]);
      } else {
        Value scaled = arith::MulFOp::create(rewriter, loc, sizeAsF32(rewriter, loc, inSizes[d]),
                                             scalarConst(rewriter, loc, rewriter.getF32Type(),
                                                         (float)scales[d]));
        Value floor = math::FloorOp::create(rewriter, loc, scaled);
        Value n = arith::FPToSIOp::create(rewriter, loc, rewriter.getI64Type(), floor);
        outSizes.push_back(
            arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), n).getResult());
      }
    }
    // tf_crop_and_resize's box per dimension, extracted once.
    SmallVector<Crop> crops(rank);
    Value roi = adaptor.getRoi();
    for (int64_t d = 0; d < rank && roi; ++d) {
      auto at = [&](int64_t i) -> Value {
        return tensor::ExtractOp::create(rewriter, loc, roi,
                                         ValueRange{indexConst(rewriter, loc, i)});
      };
      crops[d] = {at(d), at(rank + d)};
    }
    Value init = emptyTensor(rewriter, loc, outSizes, type.getElementType());
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value r =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{}, init,
            SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx)}, iterators,
            [&](OpBuilder &b, Location l, ValueRange) {
              Type f32 = b.getF32Type();
              SmallVector<SmallVector<Tap>> perDim;
              bool weighted = false;
              Value outside; // a crop sample past the input's edge
              for (int64_t d = 0; d < rank; ++d) {
                Value x = linalg::IndexOp::create(b, l, d);
                if (in[d] == out[d] && scales[d] == 1.0 && runtimeScales.empty() && !roi) {
                  perDim.push_back({{x, nullptr}});
                  continue;
                }
                Value scale = runtimeScales.empty() ? scalarConst(b, l, f32, scales[d])
                                                    : runtimeScales[d];
                Value src = sourceCoordinate(b, l, op.getCoordinateMode(), x, scale, inSizes[d],
                                             outSizes[d], crops[d]);
                if (roi) {
                  Value below = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, src,
                                                      scalarConst(b, l, f32, 0));
                  Value above = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, src,
                                                      sizeAsF32(b, l, inSizes[d], -1));
                  Value past = arith::OrIOp::create(b, l, below, above);
                  outside = outside ? arith::OrIOp::create(b, l, outside, past) : past;
                }
                perDim.push_back(taps(b, l, op, src, inSizes[d]));
                weighted |= perDim.back().size() > 1;
              }
              // Sum over every combination of one tap per dimension.
              int64_t combinations = 1;
              for (const auto &t : perDim)
                combinations *= t.size();
              Value acc;
              for (int64_t c = 0; c < combinations; ++c) {
                SmallVector<Value> at;
                Value w;
                for (int64_t d = 0, rest = c; d < rank; ++d) {
                  const Tap &tap = perDim[d][rest % perDim[d].size()];
                  rest /= perDim[d].size();
                  at.push_back(tap.index);
                  if (tap.weight)
                    w = w ? (Value)arith::MulFOp::create(b, l, w, tap.weight) : tap.weight;
                }
                Value v = tensor::ExtractOp::create(b, l, input, at);
                if (!weighted) {
                  acc = v;
                  break;
                }
                Value term = arith::MulFOp::create(b, l, convertFloat(b, l, v, f32), w);
                acc = acc ? (Value)arith::AddFOp::create(b, l, acc, term) : term;
              }
              if (weighted)
                acc = convertFloat(b, l, acc, type.getElementType());
              if (outside)
                acc = arith::SelectOp::create(
                    b, l, outside,
                    scalarConst(b, l, acc.getType(), op.getExtrapolationValue().convertToDouble()),
                    acc);
              linalg::YieldOp::create(b, l, acc);
            })
            .getResult(0);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct GatherNDLowering : OpConversionPattern<GatherNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherNDOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    ArrayRef<int64_t> ds = tensorType(data).getShape(), is = tensorType(indices).getShape();
    int64_t b = op.getBatchDims(), q = is.size(), k = is.back();
    // Index tuples may be counted at run time (NonZero's); the data is static.
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d + 1 < q; ++d)
      sizes.push_back(dimOf(rewriter, op.getLoc(), indices, d));
    for (int64_t d = b + k; d < (int64_t)ds.size(); ++d)
      sizes.push_back(rewriter.getIndexAttr(ds[d]));
    Value r = gatherFrom(rewriter, op.getLoc(), data, {}, {}, type,
                         [&](OpBuilder &nb, Location l, ValueRange, ArrayRef<Value> out) {
                           SmallVector<Value> at(out.begin(), out.begin() + q - 1), src;
                           src.append(out.begin(), out.begin() + b);
                           for (int64_t j = 0; j < k; ++j) {
                             at.push_back(indexConst(nb, l, j));
                             Value raw = tensor::ExtractOp::create(nb, l, indices, at);
                             at.pop_back();
                             src.push_back(normalizeIndex(nb, l, raw, ds[b + j]));
                           }
                           src.append(out.begin() + q - 1, out.end());
                           return src;
                         },
                         sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Combines the current value with an update per the scatter reduction.
Value combine(OpBuilder &b, Location loc, StringRef reduction, Value old, Value update,
              bool isUnsignedInt) {
  bool isF = isa<FloatType>(old.getType());
  if (reduction == "add")
    return isF ? (Value)arith::AddFOp::create(b, loc, old, update)
               : (Value)arith::AddIOp::create(b, loc, old, update);
  if (reduction == "mul")
    return isF ? (Value)arith::MulFOp::create(b, loc, old, update)
               : (Value)arith::MulIOp::create(b, loc, old, update);
  if (reduction == "max")
    return isF ? (Value)arith::MaximumFOp::create(b, loc, old, update)
               : isUnsignedInt ? (Value)arith::MaxUIOp::create(b, loc, old, update)
                               : (Value)arith::MaxSIOp::create(b, loc, old, update);
  if (reduction == "min")
    return isF ? (Value)arith::MinimumFOp::create(b, loc, old, update)
               : isUnsignedInt ? (Value)arith::MinUIOp::create(b, loc, old, update)
                               : (Value)arith::MinSIOp::create(b, loc, old, update);
  return update;
}

/// Scatter as a sequential loop over the updates (ONNX applies them in
/// order), inserting into a copy of data carried by the loop.
Value scatterLoop(OpBuilder &b, Location loc, Value data, Value updates, StringRef reduction,
                  bool isUnsignedInt,
                  function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>)> target) {
  ArrayRef<int64_t> us = tensorType(updates).getShape();
  int64_t n = 1;
  for (int64_t d : us)
    n *= d;
  auto loop = scf::ForOp::create(
      b, loc, indexConst(b, loc, 0), indexConst(b, loc, n), indexConst(b, loc, 1), data,
      [&](OpBuilder &nb, Location l, Value i, ValueRange acc) {
        SmallVector<Value> coords(us.size());
        Value rem = i;
        for (int64_t d = us.size() - 1; d >= 0; --d) {
          coords[d] = arith::RemUIOp::create(nb, l, rem, indexConst(nb, l, us[d]));
          rem = arith::DivUIOp::create(nb, l, rem, indexConst(nb, l, us[d]));
        }
        Value update = tensor::ExtractOp::create(nb, l, updates, coords);
        SmallVector<Value> at = target(nb, l, coords);
        Value old = tensor::ExtractOp::create(nb, l, acc[0], at);
        Value v = combine(nb, l, reduction, old, update, isUnsignedInt);
        Value next = tensor::InsertOp::create(nb, l, v, acc[0], at);
        scf::YieldOp::create(nb, l, next);
      });
  return loop.getResult(0);
}

struct ScatterElementsLowering : OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Value indices = adaptor.getIndices();
    int64_t axis = op.getAxis(), dim = tensorType(adaptor.getData()).getDimSize(axis);
    Value r = scatterLoop(rewriter, op.getLoc(), adaptor.getData(), adaptor.getUpdates(),
                          op.getReduction(), isUnsigned(op.getData()),
                          [&](OpBuilder &b, Location l, ArrayRef<Value> c) {
                            SmallVector<Value> at(c);
                            Value raw = tensor::ExtractOp::create(b, l, indices, c);
                            at[axis] = normalizeIndex(b, l, raw, dim);
                            return at;
                          });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ScatterNDLowering : OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Value indices = adaptor.getIndices();
    ArrayRef<int64_t> ds = tensorType(adaptor.getData()).getShape();
    ArrayRef<int64_t> is = tensorType(indices).getShape();
    int64_t q = is.size(), k = is.back();
    Value r = scatterLoop(rewriter, op.getLoc(), adaptor.getData(), adaptor.getUpdates(),
                          op.getReduction(), isUnsigned(op.getData()),
                          [&](OpBuilder &b, Location l, ArrayRef<Value> c) {
                            SmallVector<Value> at(c.begin(), c.begin() + q - 1), target;
                            for (int64_t j = 0; j < k; ++j) {
                              at.push_back(indexConst(b, l, j));
                              Value raw = tensor::ExtractOp::create(b, l, indices, at);
                              at.pop_back();
                              target.push_back(normalizeIndex(b, l, raw, ds[j]));
                            }
                            target.append(c.begin() + q - 1, c.end());
                            return target;
                          });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// GridSample: per output pixel, the grid's (x, y) becomes an input
/// coordinate (align_corners decides the mapping), is clamped or reflected
/// per padding_mode, and the input is read at the nearest pixel or blended
/// bilinearly from its four neighbours.
struct GridSampleLowering : OpConversionPattern<GridSampleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GridSampleOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    Value input = adaptor.getInput(), grid = adaptor.getGrid();
    ArrayRef<int64_t> in = tensorType(input).getShape();
    bool alignCorners = op.getAlignCorners(), bilinear = op.getMode() == "bilinear";
    StringRef padding = op.getPaddingMode();
    Type et = type.getElementType();
    MLIRContext *ctx = rewriter.getContext();
    Location loc = op.getLoc();
    Value init = emptyTensor(rewriter, loc, type.getShape(), et);
    SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{}, init,
            SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(4, ctx)}, iterators,
            [&](OpBuilder &b, Location l, ValueRange) {
              Type f32 = b.getF32Type();
              auto c = [&](double v) { return scalarConst(b, l, f32, v); };
              SmallVector<Value> o;
              for (int64_t d = 0; d < 4; ++d)
                o.push_back(linalg::IndexOp::create(b, l, d));
              auto gridAt = [&](int64_t comp) {
                Value v = tensor::ExtractOp::create(
                    b, l, grid, ValueRange{o[0], o[2], o[3], indexConst(b, l, comp)});
                return convertFloat(b, l, v, f32);
              };
              // Normalized [-1, 1] -> pixel coordinate, then padding.
              auto pixel = [&](Value g, int64_t size) -> Value {
                Value p = alignCorners
                              ? (Value)arith::MulFOp::create(
                                    b, l, arith::AddFOp::create(b, l, g, c(1)), c((size - 1) / 2.0))
                              : (Value)arith::DivFOp::create(
                                    b, l,
                                    arith::SubFOp::create(
                                        b, l,
                                        arith::MulFOp::create(
                                            b, l, arith::AddFOp::create(b, l, g, c(1)), c(size)),
                                        c(1)),
                                    c(2));
                if (padding == "border")
                  return arith::MinimumFOp::create(
                      b, l, arith::MaximumFOp::create(b, l, p, c(0)), c(size - 1));
                if (padding == "reflection") {
                  double lo = alignCorners ? 0 : -0.5, hi = alignCorners ? size - 1 : size - 0.5;
                  double range = hi - lo;
                  if (range <= 0)
                    return c(0);
                  // Fold p into [lo, hi] by reflecting at the borders.
                  Value below = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, p, c(lo));
                  Value dist = arith::SelectOp::create(b, l, below,
                                                       arith::SubFOp::create(b, l, c(lo), p),
                                                       arith::SubFOp::create(b, l, p, c(hi)));
                  Value outside = arith::OrIOp::create(
                      b, l, below, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, p, c(hi)));
                  Value n = math::FloorOp::create(b, l, arith::DivFOp::create(b, l, dist, c(range)));
                  Value rem = arith::SubFOp::create(b, l, dist, arith::MulFOp::create(b, l, n, c(range)));
                  Value odd = arith::CmpFOp::create(
                      b, l, arith::CmpFPredicate::ONE,
                      arith::RemFOp::create(b, l, n, c(2)), c(0));
                  // even folds from the near border, odd from the far one
                  Value fromLo = arith::AddFOp::create(b, l, c(lo), rem);
                  Value fromHi = arith::SubFOp::create(b, l, c(hi), rem);
                  Value folded = arith::SelectOp::create(
                      b, l, below, arith::SelectOp::create(b, l, odd, fromHi, fromLo),
                      arith::SelectOp::create(b, l, odd, fromLo, fromHi));
                  return arith::SelectOp::create(b, l, outside, folded, p);
                }
                return p;
              };
              Value x = pixel(gridAt(0), in[3]), y = pixel(gridAt(1), in[2]);
              // Reads input[n, c, iy, ix]; zeros padding reads 0 outside.
              auto read = [&](Value fy, Value fx) -> Value {
                Value iy = arith::FPToSIOp::create(b, l, b.getI64Type(), fy);
                Value ix = arith::FPToSIOp::create(b, l, b.getI64Type(), fx);
                auto inside = [&](Value i, int64_t size) {
                  Value zero = scalarConst(b, l, b.getI64Type(), 0);
                  Value lim = scalarConst(b, l, b.getI64Type(), size);
                  return arith::AndIOp::create(
                      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, zero),
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, lim));
                };
                Value ok = arith::AndIOp::create(b, l, inside(iy, in[2]), inside(ix, in[3]));
                auto idx = [&](Value i, int64_t size) {
                  return clampIndex(b, l, arith::IndexCastOp::create(b, l, b.getIndexType(), i),
                                    size);
                };
                Value v = tensor::ExtractOp::create(
                    b, l, input, ValueRange{o[0], o[1], idx(iy, in[2]), idx(ix, in[3])});
                v = convertFloat(b, l, v, f32);
                if (padding == "zeros")
                  v = arith::SelectOp::create(b, l, ok, v, c(0));
                return v;
              };
              Value v;
              if (op.getMode() == "bicubic") {
                // 4 x 4 samples around floor(y), floor(x); zeros outside.
                Value x0 = math::FloorOp::create(b, l, x), y0 = math::FloorOp::create(b, l, y);
                SmallVector<Value> wx = cubicWeights(b, l, arith::SubFOp::create(b, l, x, x0), -0.75);
                SmallVector<Value> wy = cubicWeights(b, l, arith::SubFOp::create(b, l, y, y0), -0.75);
                for (int64_t i = 0; i < 4; ++i)
                  for (int64_t j = 0; j < 4; ++j) {
                    Value fy = arith::AddFOp::create(b, l, y0, c(i - 1));
                    Value fx = arith::AddFOp::create(b, l, x0, c(j - 1));
                    Value term = arith::MulFOp::create(
                        b, l, read(fy, fx), arith::MulFOp::create(b, l, wy[i], wx[j]));
                    v = v ? (Value)arith::AddFOp::create(b, l, v, term) : (Value)term;
                  }
              } else if (!bilinear) {
                v = read(math::RoundEvenOp::create(b, l, y), math::RoundEvenOp::create(b, l, x));
              } else {
                Value x0 = math::FloorOp::create(b, l, x), y0 = math::FloorOp::create(b, l, y);
                Value x1 = arith::AddFOp::create(b, l, x0, c(1));
                Value y1 = arith::AddFOp::create(b, l, y0, c(1));
                Value wx = arith::SubFOp::create(b, l, x, x0), wy = arith::SubFOp::create(b, l, y, y0);
                Value ux = arith::SubFOp::create(b, l, c(1), wx), uy = arith::SubFOp::create(b, l, c(1), wy);
                auto term = [&](Value fy, Value fx, Value w1, Value w2) -> Value {
                  return arith::MulFOp::create(b, l, read(fy, fx),
                                               arith::MulFOp::create(b, l, w1, w2));
                };
                v = arith::AddFOp::create(
                    b, l,
                    arith::AddFOp::create(b, l, term(y0, x0, uy, ux), term(y0, x1, uy, wx)),
                    arith::AddFOp::create(b, l, term(y1, x0, wy, ux), term(y1, x1, wy, wx)));
              }
              v = convertFloat(b, l, v, et);
              linalg::YieldOp::create(b, l, v);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::populateDataMovementLowerings(RewritePatternSet &patterns) {
  patterns.add<SliceLowering, WindowLowering, GatherLowering, GatherElementsLowering, PadLowering, TriluLowering,
               ResizeLowering, GatherNDLowering, ScatterElementsLowering, ScatterNDLowering,
               GridSampleLowering, ExpandLowering, TileLowering>(
      patterns.getContext());
}
