//===- Quant.cpp - quantization ops to linalg -----------------------------===//
//
// kiln.dynamic_quantize reads its input twice: one vectorized pass for the
// range (min and max together), then one elementwise pass that quantizes
// (elementwise fusion leaves the input's producers out of it: the range
// pass reads the input too). The scale and zero point are
// computed once, as scalars, between them. kiln.quantize is that second
// pass alone, with the scale and zero point of its result's quantized type
// (scalars, or per axis constants that broadcast along the axis);
// kiln.dequantize is (q - zero point) * scale the same way, and
// kiln.storage_cast is nothing (quantized tensors lower to their storage).
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// min(x) and max(x) over all elements as scalars, in one pass over
/// x flattened: 16 lanes of running minimum and maximum, then across lanes.
/// (A linalg reduction to a scalar would run as a serial scalar loop.)
std::pair<Value, Value> buildRange(OpBuilder &b, Location loc, Value x) {
  constexpr int64_t lanes = 16;
  auto type = tensorType(x);
  Type et = type.getElementType();
  OpFoldResult count = mulSizes(b, loc, sizesOf(b, loc, x));
  std::optional<int64_t> staticCount = getConstantIntValue(count);
  auto flatType = RankedTensorType::get({staticCount ? *staticCount : ShapedType::kDynamic}, et);
  Value flat = reshapeTo(b, loc, x, flatType, {count});
  Value n = indexValue(b, loc, count);
  auto vt = VectorType::get({lanes}, et);
  Value inf = extremeConst(b, loc, et, /*lowest=*/false), negInf = extremeConst(b, loc, et, true);
  Value step = arith::ConstantIndexOp::create(b, loc, lanes);
  Value full = arith::SubIOp::create(b, loc, n, arith::RemUIOp::create(b, loc, n, step));
  auto read = [&](OpBuilder &nb, Location l, Value at, Value padding, bool inBounds) -> Value {
    return vector::TransferReadOp::create(nb, l, vt, flat, ValueRange{at}, padding,
                                          ArrayRef<bool>{inBounds});
  };
  auto loop = scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0), full, step,
      ValueRange{vector::BroadcastOp::create(b, loc, vt, inf),
                 vector::BroadcastOp::create(b, loc, vt, negInf)},
      [&](OpBuilder &nb, Location l, Value i, ValueRange acc) {
        Value v = read(nb, l, i, inf, /*inBounds=*/true);
        scf::YieldOp::create(nb, l, ValueRange{arith::MinimumFOp::create(nb, l, acc[0], v),
                                               arith::MaximumFOp::create(nb, l, acc[1], v)});
      });
  // The last partial vector (none when the count is a multiple of 16): lanes
  // past the end read as +inf for the minimum and -inf for the maximum.
  Value lo = arith::MinimumFOp::create(b, loc, loop.getResult(0), read(b, loc, full, inf, false));
  Value hi =
      arith::MaximumFOp::create(b, loc, loop.getResult(1), read(b, loc, full, negInf, false));
  return {vector::ReductionOp::create(b, loc, vector::CombiningKind::MINIMUMF, lo),
          vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF, hi)};
}

/// v clamped to [lo, hi] with compares and selects, which LLVM vectorizes
/// (minimumf/maximumf, with their NaN rules, stay scalar loops).
Value clampTo(OpBuilder &b, Location loc, Value v, double lo, double hi) {
  Value low = scalarConst(b, loc, v.getType(), lo), high = scalarConst(b, loc, v.getType(), hi);
  Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v, low);
  v = arith::SelectOp::create(b, loc, below, low, v);
  Value above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v, high);
  return arith::SelectOp::create(b, loc, above, high, v);
}

/// A quantization's scale and zero point as f32: scalars, or (per axis)
/// tensors that broadcast along the axis, passed to the generic as operands
/// 1 and 2.
struct ScaleAndZeroPoint {
  Value scale, zeroPoint;
  bool perAxis = false;

  /// The generic's operands: `x`, then (per axis) the scale and zero point.
  SmallVector<Value> operandsAfter(Value x) const {
    if (perAxis)
      return {x, scale, zeroPoint};
    return {x};
  }

  /// The pair as the body of the generic reads it, from its arguments `a`.
  std::pair<Value, Value> in(ValueRange a) const {
    return perAxis ? std::pair{a[1], a[2]} : std::pair{scale, zeroPoint};
  }
};

/// The scale and zero point of `p`, for a tensor of rank `rank`.
ScaleAndZeroPoint constantParams(OpBuilder &b, Location loc, const QuantParams &p,
                                 int64_t rank) {
  Type f32 = b.getF32Type();
  if (!p.axis)
    return {scalarConst(b, loc, f32, p.scales[0]),
            scalarConst(b, loc, f32, static_cast<double>(p.zeroPoints[0]))};
  SmallVector<int64_t> shape(rank, 1);
  shape[*p.axis] = static_cast<int64_t>(p.scales.size());
  auto type = RankedTensorType::get(shape, f32);
  SmallVector<float> scales(p.scales.begin(), p.scales.end());
  SmallVector<float> zeroPoints(p.zeroPoints.begin(), p.zeroPoints.end());
  auto constant = [&](ArrayRef<float> values) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
  };
  return {constant(scales), constant(zeroPoints), /*perAxis=*/true};
}

/// saturate(round(x / scale) + zeroPoint) into [lo, hi], elementwise, as the
/// signless integers of `type` (converted by `isSigned`).
Value buildQuantize(OpBuilder &b, Location loc, Value x, RankedTensorType type,
                    const ScaleAndZeroPoint &params, double lo, double hi, bool isSigned) {
  Type storage = type.getElementType();
  auto body = [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    auto [scale, zeroPoint] = params.in(a);
    Value v = math::RoundEvenOp::create(nb, l, arith::DivFOp::create(nb, l, a[0], scale));
    v = clampTo(nb, l, arith::AddFOp::create(nb, l, v, zeroPoint), lo, hi);
    if (isSigned)
      return arith::FPToSIOp::create(nb, l, storage, v);
    return arith::FPToUIOp::create(nb, l, storage, v);
  };
  return buildElementwise(b, loc, type, params.operandsAfter(x), body);
}

struct QuantizeLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    QuantParams p = *quantParams(op.getType().getElementType());
    ScaleAndZeroPoint params = constantParams(rewriter, loc, p, op.getType().getRank());
    rewriter.replaceOp(op, buildQuantize(rewriter, loc, adaptor.getInput(),
                                         signlessType(op.getType()), params,
                                         static_cast<double>(p.storageMin),
                                         static_cast<double>(p.storageMax), p.isSigned));
    return success();
  }
};

/// (q - zero point) * scale in f32, elementwise.
struct DequantizeLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    QuantParams p = *quantParams(inputType.getElementType());
    ScaleAndZeroPoint params = constantParams(rewriter, loc, p, inputType.getRank());
    bool hasZeroPoint = llvm::any_of(p.zeroPoints, [](int64_t z) { return z != 0; });
    Value y = buildElementwise(
        rewriter, loc, op.getType(), params.operandsAfter(adaptor.getInput()), [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          auto [scale, zeroPoint] = params.in(a);
          Type f32 = b.getF32Type();
          Value v = p.isSigned ? (Value)arith::SIToFPOp::create(b, l, f32, a[0])
                               : (Value)arith::UIToFPOp::create(b, l, f32, a[0]);
          if (hasZeroPoint)
            v = arith::SubFOp::create(b, l, v, zeroPoint);
          return arith::MulFOp::create(b, l, v, scale);
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// Quantized tensors lower to their storage: the cast is the value itself.
struct StorageCastLowering : OpConversionPattern<StorageCastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(StorageCastOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

struct DynamicQuantizeLowering : OpConversionPattern<DynamicQuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DynamicQuantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    Type f32 = rewriter.getF32Type(), i8 = rewriter.getIntegerType(8);
    auto [minv, maxv] = buildRange(rewriter, loc, x);
    // Scale and zero point as scalars, computed once (inside the quantizing
    // generic they would be recomputed per element).
    OpBuilder &b = rewriter;
    Value zero = scalarConst(b, loc, f32, 0.0);
    Value lo = arith::MinimumFOp::create(b, loc, minv, zero);
    Value hi = arith::MaximumFOp::create(b, loc, maxv, zero);
    Value scale = arith::DivFOp::create(b, loc, arith::SubFOp::create(b, loc, hi, lo),
                                        scalarConst(b, loc, f32, 255.0));
    // A zero scale (all-zero input) divides by 1 instead: zero point 0.
    Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, scale, zero);
    Value divisor = arith::SelectOp::create(b, loc, isZero, scalarConst(b, loc, f32, 1.0), scale);
    Value zeroPoint = clampTo(
        b, loc,
        math::RoundEvenOp::create(
            b, loc, arith::DivFOp::create(b, loc, arith::NegFOp::create(b, loc, lo), divisor)),
        0, 255);
    Value q = buildQuantize(rewriter, loc, x, signlessType(op.getResult().getType()),
                            {divisor, zeroPoint}, 0, 255, /*isSigned=*/false);
    auto rank0 = [&](Value v) -> Value {
      return tensor::FromElementsOp::create(b, loc, RankedTensorType::get({}, v.getType()),
                                            ValueRange{v});
    };
    Value zp = rank0(arith::FPToUIOp::create(b, loc, i8, zeroPoint));
    scale = rank0(scale);
    rewriter.replaceOp(op, {q, scale, zp});
    return success();
  }
};

} // namespace

void mlir::kiln::populateQuantLowerings(RewritePatternSet &patterns) {
  patterns.add<DynamicQuantizeLowering, QuantizeLowering, DequantizeLowering,
               StorageCastLowering>(patterns.getContext());
}
