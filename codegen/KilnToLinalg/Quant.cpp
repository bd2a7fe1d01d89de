//===- Quant.cpp - quantization ops to linalg -----------------------------===//
//
// kiln.dynamic_quantize reads its input twice: one reduction for the range
// (min and max together), then one elementwise pass that quantizes. The
// scale and zero point are computed once, as rank-0 tensors, between them.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// min(x) and max(x) over all elements, in one pass, as rank-0 tensors.
std::pair<Value, Value> buildRange(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(x);
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value lo = filledTensor(b, loc, ArrayRef<int64_t>{},
                          extremeConst(b, loc, type.getElementType(), /*lowest=*/false));
  Value hi = filledTensor(b, loc, ArrayRef<int64_t>{},
                          extremeConst(b, loc, type.getElementType(), /*lowest=*/true));
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, {}, ctx), AffineMap::get(rank, 0, {}, ctx)};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::reduction);
  auto range = linalg::GenericOp::create(
      b, loc, TypeRange{scalar, scalar}, x, ValueRange{lo, hi}, maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l,
                                ValueRange{arith::MinimumFOp::create(nb, l, a[0], a[1]),
                                           arith::MaximumFOp::create(nb, l, a[0], a[2])});
      });
  return {range.getResult(0), range.getResult(1)};
}

Value clampTo(OpBuilder &b, Location loc, Value v, double lo, double hi) {
  Type t = v.getType();
  return arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, v, scalarConst(b, loc, t, lo)),
      scalarConst(b, loc, t, hi));
}

struct DynamicQuantizeLowering : OpConversionPattern<DynamicQuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DynamicQuantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    Type f32 = rewriter.getF32Type(), i8 = rewriter.getIntegerType(8);
    auto [minv, maxv] = buildRange(rewriter, loc, x);
    auto scalarF32 = RankedTensorType::get({}, f32);
    // scale = (max(hi, 0) - min(lo, 0)) / 255.
    Value scale = buildElementwise(rewriter, loc, scalarF32, {minv, maxv},
                                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                     Value zero = scalarConst(b, l, f32, 0.0);
                                     Value lo = arith::MinimumFOp::create(b, l, a[0], zero);
                                     Value hi = arith::MaximumFOp::create(b, l, a[1], zero);
                                     Value range = arith::SubFOp::create(b, l, hi, lo);
                                     return arith::DivFOp::create(b, l, range,
                                                                  scalarConst(b, l, f32, 255.0));
                                   });
    // The zero point, kept in f32 for the quantization below; a zero scale
    // (all-zero input) has zero point 0.
    Value zeroPoint = buildElementwise(
        rewriter, loc, scalarF32, {minv, scale}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value zero = scalarConst(b, l, f32, 0.0);
          Value lo = arith::MinimumFOp::create(b, l, a[0], zero);
          Value isZero = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a[1], zero);
          Value safe = arith::SelectOp::create(b, l, isZero, scalarConst(b, l, f32, 1.0), a[1]);
          Value zp = math::RoundEvenOp::create(
              b, l, arith::DivFOp::create(b, l, arith::NegFOp::create(b, l, lo), safe));
          return clampTo(b, l, zp, 0, 255);
        });
    Value q = buildElementwise(
        rewriter, loc, signlessType(op.getResult().getType()), {x, scale, zeroPoint},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value zero = scalarConst(b, l, f32, 0.0);
          Value isZero = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a[1], zero);
          Value safe = arith::SelectOp::create(b, l, isZero, scalarConst(b, l, f32, 1.0), a[1]);
          Value v = math::RoundEvenOp::create(b, l, arith::DivFOp::create(b, l, a[0], safe));
          v = clampTo(b, l, arith::AddFOp::create(b, l, v, a[2]), 0, 255);
          return arith::FPToUIOp::create(b, l, i8, v);
        });
    Value zp = buildElementwise(rewriter, loc, RankedTensorType::get({}, i8), {zeroPoint},
                                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                  return arith::FPToUIOp::create(b, l, i8, a[0]);
                                });
    rewriter.replaceOp(op, {q, scale, zp});
    return success();
  }
};

} // namespace

void mlir::kiln::populateQuantLowerings(RewritePatternSet &patterns) {
  patterns.add<DynamicQuantizeLowering>(patterns.getContext());
}
