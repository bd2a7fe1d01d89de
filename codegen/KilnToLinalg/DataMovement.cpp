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
  Value init = emptyTensor(b, loc, resultType.getShape(), resultType.getElementType());
  return linalg::GenericOp::create(
             b, loc, resultType, input, init,
             SmallVector<AffineMap>{inputMap, AffineMap::getMultiDimIdentityMap(rank, ctx)},
             iterators,
             [](OpBuilder &nb, Location l, ValueRange a) { linalg::YieldOp::create(nb, l, a[0]); })
      .getResult(0);
}

/// A generic over `resultType` whose body computes the source coordinates
/// from the output coordinates and extracts from `source`.
Value gatherFrom(OpBuilder &b, Location loc, Value source, ValueRange inputs,
                 ArrayRef<AffineMap> inputMaps, RankedTensorType resultType,
                 function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange,
                                                 ArrayRef<Value>)>
                     coordinates) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, resultType.getShape(), resultType.getElementType());
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

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value clampIndex(OpBuilder &b, Location loc, Value i, int64_t size) {
  Value lo = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, 0));
  return arith::MinSIOp::create(b, loc, lo, indexConst(b, loc, size - 1));
}

Value normalizeIndex(OpBuilder &b, Location loc, Value raw, int64_t size);

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    MLIRContext *ctx = rewriter.getContext();
    if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, type, adaptor.getInput(), getAsIndexOpFoldResult(ctx, starts),
          getAsIndexOpFoldResult(ctx, type.getShape()), getAsIndexOpFoldResult(ctx, steps));
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
    auto type = cast<RankedTensorType>(op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    int64_t axis = op.getAxis(), q = tensorType(indices).getRank();
    int64_t dim = tensorType(data).getDimSize(axis);
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < q; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    AffineMap idxMap = AffineMap::get(type.getRank(), 0, idxExprs, ctx);
    Value r = gatherFrom(
        rewriter, loc, data, indices, {idxMap}, type,
        [&](OpBuilder &b, Location l, ValueRange in, ArrayRef<Value> out) {
          SmallVector<Value> src(out.begin(), out.begin() + axis);
          src.push_back(normalizeIndex(b, l, in[0], dim));
          src.append(out.begin() + axis + q, out.end());
          return src;
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// A run-time index into a dimension of `size`: negative counts from the
/// end, and out-of-range values are clamped so reads stay in bounds.
Value normalizeIndex(OpBuilder &b, Location loc, Value raw, int64_t size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, indexConst(b, loc, 0));
  i = arith::SelectOp::create(b, loc, neg,
                              arith::AddIOp::create(b, loc, i, indexConst(b, loc, size)), i);
  return clampIndex(b, loc, i, size);
}

struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
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
    MLIRContext *ctx = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Value input = adaptor.getInput();
    ArrayRef<int64_t> in = tensorType(input).getShape();
    int64_t rank = in.size();
    ArrayRef<int64_t> pads = op.getPads();
    if (op.getMode() == "constant") {
      Value value = scalarConst(rewriter, loc, type.getElementType(),
                                op.getValue().convertToDouble());
      rewriter.replaceOpWithNewOp<tensor::PadOp>(
          op, type, input, getAsIndexOpFoldResult(ctx, pads.take_front(rank)),
          getAsIndexOpFoldResult(ctx, pads.drop_front(rank)), value);
      return success();
    }
    bool reflect = op.getMode() == "reflect";
    Value r = gatherFrom(rewriter, loc, input, {}, {}, type,
                         [&](OpBuilder &b, Location l, ValueRange, ArrayRef<Value> out) {
                           SmallVector<Value> src;
                           for (int64_t d = 0; d < rank; ++d) {
                             Value i = arith::SubIOp::create(b, l, out[d],
                                                             indexConst(b, l, pads[d]));
                             if (reflect) {
                               // -i before the start, 2(n-1) - i past the end.
                               Value neg = arith::CmpIOp::create(
                                   b, l, arith::CmpIPredicate::slt, i, indexConst(b, l, 0));
                               Value mirrored = arith::SubIOp::create(b, l, indexConst(b, l, 0), i);
                               i = arith::SelectOp::create(b, l, neg, mirrored, i);
                               Value past = arith::CmpIOp::create(
                                   b, l, arith::CmpIPredicate::sge, i, indexConst(b, l, in[d]));
                               Value back = arith::SubIOp::create(
                                   b, l, indexConst(b, l, 2 * (in[d] - 1)), i);
                               i = arith::SelectOp::create(b, l, past, back, i);
                             }
                             src.push_back(clampIndex(b, l, i, in[d]));
                           }
                           return src;
                         });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ExpandLowering : OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, broadcastTo(rewriter, op.getLoc(), adaptor.getInput(),
                                       cast<RankedTensorType>(op.getType()).getShape()));
    return success();
  }
};

struct TileLowering : OpConversionPattern<TileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TileOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
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

} // namespace

void mlir::kiln::populateDataMovementLowerings(RewritePatternSet &patterns) {
  patterns.add<SliceLowering, GatherLowering, GatherElementsLowering, PadLowering, ExpandLowering, TileLowering>(
      patterns.getContext());
}
