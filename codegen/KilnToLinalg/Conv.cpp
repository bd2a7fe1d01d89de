//===- Conv.cpp - kiln.conv as linalg named convolutions ------------------===//
//
// The target-neutral form of a convolution: the named linalg op of its
// layout (NCHW x FCHW, NHWC x HWCF, depthwise, grouped), accumulating into
// the bias broadcast over the pixels. Targets with a strategy of their own
// (the CPU's im2col and direct convolutions) rewrite kiln.conv before this
// lowering runs.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConstantData.h"
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

Value mlir::kiln::depthwiseTaps(OpBuilder &b, Location loc, Value filter,
                                ElementsAttr constant) {
  ArrayRef<int64_t> fs = tensorType(filter).getShape();
  Type et = tensorType(filter).getElementType();
  int64_t c = fs[0], taps = fs[2] * fs[3];
  auto type = RankedTensorType::get({taps, c}, et);
  if (constant)
    if (Value t = relayoutConstant(b, loc, constant, type,
                                   [&](int64_t i) { return (i % c) * taps + i / c; }))
      return t;
  Value t = linalg::TransposeOp::create(b, loc, filter,
                                        emptyTensor(b, loc, ArrayRef<int64_t>{fs[2], fs[3], 1, c}, et),
                                        ArrayRef<int64_t>{2, 3, 1, 0})
                .getResult()[0];
  return reshapeTo(b, loc, t, type);
}

SmallVector<OpFoldResult> mlir::kiln::windowOutputSizes(OpBuilder &b, Location loc, Value input,
                                                        int64_t channels,
                                                        ArrayRef<int64_t> kernel,
                                                        ArrayRef<int64_t> strides,
                                                        ArrayRef<int64_t> dilations) {
  SmallVector<OpFoldResult> sizes = {dimOf(b, loc, input, 0), b.getIndexAttr(channels)};
  for (int64_t i = 0; i < 2; ++i) {
    int64_t span = dilations[i] * (kernel[i] - 1) + 1;
    OpFoldResult in = dimOf(b, loc, input, i + 2);
    if (auto c = getConstantIntValue(in)) {
      sizes.push_back(b.getIndexAttr((*c - span) / strides[i] + 1));
      continue;
    }
    Value inValue = indexValue(b, loc, in);
    Value spanValue = arith::ConstantIndexOp::create(b, loc, span);
    checkAtRunTime(b, loc,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, inValue, spanValue),
                   "spatial dimension " + Twine(i) + " (padded) is smaller than the window (" +
                       Twine(span) + ")");
    Value out = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, inValue, spanValue),
                                       arith::ConstantIndexOp::create(b, loc, strides[i]));
    sizes.push_back(
        arith::AddIOp::create(b, loc, out, arith::ConstantIndexOp::create(b, loc, 1)).getResult());
  }
  return sizes;
}

Value mlir::kiln::convolutionInit(OpBuilder &b, Location loc, Value bias, RankedTensorType type,
                                  ArrayRef<OpFoldResult> sizes) {
  Type et = type.getElementType();
  if (!bias)
    return zeroFilled(b, loc, sizes, et);
  Value b4 = reshapeTo(b, loc, bias, RankedTensorType::get({type.getDimSize(1), 1, 1}, et));
  return broadcastTo(b, loc, b4, type.getShape(), sizes);
}

namespace {

/// The FCHW filter as HWCF [KH, KW, C, F] (linalg.conv_2d_nhwc_hwcf's
/// layout): relaid out at compile time when constant, else transposed.
Value filterHwcf(OpBuilder &b, Location loc, Value filter, ElementsAttr constant) {
  ArrayRef<int64_t> fs = tensorType(filter).getShape();
  int64_t f = fs[0], c = fs[1], kh = fs[2], kw = fs[3];
  auto type = RankedTensorType::get({kh, kw, c, f}, tensorType(filter).getElementType());
  if (constant)
    if (Value t = relayoutConstant(b, loc, constant, type, [&](int64_t i) {
          int64_t fi = i % f, ci = i / f % c, kx = i / (f * c) % kw, ky = i / (f * c * kw);
          return ((fi * c + ci) * kh + ky) * kw + kx;
        }))
      return t;
  return linalg::TransposeOp::create(b, loc, filter,
                                     emptyTensor(b, loc, type.getShape(), type.getElementType()),
                                     ArrayRef<int64_t>{2, 3, 1, 0})
      .getResult()[0];
}

/// A widening convolution (8-bit operands with an i32 result, or bf16 with
/// f32; one group, no bias) as a linalg.generic over (n, f, oy, ox, c, ky,
/// kx), NCHW or NHWC, with each operand extended by its own signedness.
Value convolveWidening(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                       RankedTensorType type, Extension ext) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  AffineExpr n, f, oy, ox, c, ky, kx;
  bindDims(ctx, n, f, oy, ox, c, ky, kx);
  AffineExpr iy = oy * strides[0] + ky * dilations[0], ix = ox * strides[1] + kx * dilations[1];
  bool nhwc = op.getChannelsLast();
  auto map = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(7, 0, exprs, ctx); };
  SmallVector<AffineMap> maps = {nhwc ? map({n, iy, ix, c}) : map({n, c, iy, ix}),
                                 map({f, c, ky, kx}),
                                 nhwc ? map({n, oy, ox, f}) : map({n, f, oy, ox})};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  Value init = zeroFilled(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{input, filter}, init, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, wideningMultiplyAdd(nb, l, a[2], a[0], a[1], ext));
             })
      .getResult(0);
}

/// A channels-last convolution (NHWC input, static shapes): one group as
/// linalg.conv_2d_nhwc_hwcf, one group per channel as
/// linalg.depthwise_conv_2d_nhwc_hwc, into the bias.
Value convolveChannelsLast(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                          Value bias, RankedTensorType type) {
  Type et = type.getElementType();
  int64_t channels = type.getDimSize(3);
  Value init = bias ? broadcastTo(b, loc,
                                 reshapeTo(b, loc, bias,
                                           RankedTensorType::get({1, 1, 1, channels}, et)),
                                 type.getShape())
                    : zeroFilled(b, loc, type.getShape(), et);
  auto strides = b.getI64TensorAttr(op.getStrides());
  auto dilations = b.getI64TensorAttr(op.getDilations());
  ElementsAttr constant = constantValue(op.getFilter());
  if (op.getGroup() == 1)
    return linalg::Conv2DNhwcHwcfOp::create(b, loc, TypeRange{type},
                                            ValueRange{input, filterHwcf(b, loc, filter, constant)},
                                            init, strides, dilations)
        .getResult(0);
  ArrayRef<int64_t> fs = tensorType(filter).getShape();
  Value taps = reshapeTo(b, loc, depthwiseTaps(b, loc, filter, constant),
                         RankedTensorType::get({fs[2], fs[3], channels}, et));
  return linalg::DepthwiseConv2DNhwcHwcOp::create(b, loc, TypeRange{type},
                                                  ValueRange{input, taps}, init, strides,
                                                  dilations)
      .getResult(0);
}

/// An NCHW convolution: linalg.conv_2d_nchw_fchw for one group,
/// depthwise_conv_2d_nchw_chw for one group per channel, else
/// conv_2d_ngchw_gfchw; sizes may be dynamic.
Value convolveNchw(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter, Value bias,
                   RankedTensorType type) {
  Type et = type.getElementType();
  ArrayRef<int64_t> fs = tensorType(filter).getShape(), out = type.getShape();
  int64_t group = op.getGroup(), channels = tensorType(input).getDimSize(1);
  SmallVector<OpFoldResult> outSizes = windowOutputSizes(
      b, loc, input, fs[0], {fs[2], fs[3]}, op.getStrides(), op.getDilations());
  // The bias initializes the accumulator, so it costs no extra pass.
  Value init = convolutionInit(b, loc, bias, type, outSizes);
  auto strides = b.getI64TensorAttr(op.getStrides());
  auto dilations = b.getI64TensorAttr(op.getDilations());
  if (group == 1)
    return linalg::Conv2DNchwFchwOp::create(b, loc, TypeRange{type}, ValueRange{input, filter},
                                            init, strides, dilations)
        .getResult(0);
  if (group == channels && fs[0] == channels) {
    Value dw = reshapeTo(b, loc, filter, RankedTensorType::get({fs[0], fs[2], fs[3]}, et));
    return linalg::DepthwiseConv2DNchwChwOp::create(b, loc, TypeRange{type}, ValueRange{input, dw},
                                                    init, strides, dilations)
        .getResult(0);
  }
  ArrayRef<int64_t> is = tensorType(input).getShape();
  SmallVector<OpFoldResult> isz = sizesOf(b, loc, input);
  auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  auto inG = RankedTensorType::get({is[0], group, is[1] / group, is[2], is[3]}, et);
  auto fG = RankedTensorType::get({group, fs[0] / group, fs[1], fs[2], fs[3]}, et);
  auto outG = RankedTensorType::get({out[0], group, out[1] / group, out[2], out[3]}, et);
  Value r = linalg::Conv2DNgchwGfchwOp::create(
                b, loc, TypeRange{outG},
                ValueRange{reshapeTo(b, loc, input, inG,
                                     {isz[0], index(group), index(is[1] / group), isz[2], isz[3]}),
                           reshapeTo(b, loc, filter, fG)},
                reshapeTo(b, loc, init, outG,
                          {outSizes[0], index(group), index(out[1] / group), outSizes[2],
                           outSizes[3]}),
                strides, dilations)
                .getResult(0);
  return reshapeTo(b, loc, r, type, outSizes);
}

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    auto inType = tensorType(adaptor.getInput());
    bool widening = inType.getElementType() != type.getElementType();
    bool staticShapes = type.hasStaticShape() && inType.hasStaticShape();
    if (widening && (!staticShapes || op.getGroup() != 1 || adaptor.getBias()))
      return rewriter.notifyMatchFailure(
          op, "widening convolutions need static shapes, one group and no bias");
    if (op.getChannelsLast() && !staticShapes)
      return rewriter.notifyMatchFailure(op, "channels-last convolutions need static shapes");
    Value input =
        padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), 0.0, op.getChannelsLast());
    Value filter = adaptor.getFilter();
    Value result;
    if (widening)
      result = convolveWidening(rewriter, loc, op, input, filter, type,
                                {isUnsigned(op.getInput()), isUnsigned(op.getFilter())});
    else if (op.getChannelsLast())
      result = convolveChannelsLast(rewriter, loc, op, input, filter, adaptor.getBias(), type);
    else
      result = convolveNchw(rewriter, loc, op, input, filter, adaptor.getBias(), type);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::populateConvLowering(RewritePatternSet &patterns) {
  patterns.add<ConvLowering>(patterns.getContext());
}
