//===- ImportQuant.cpp - ONNX quantization ops -----------------------------===//
//
// QuantizeLinear and DequantizeLinear with constant scales and zero points
// (per tensor or per axis, 8- or 16-bit) become kiln.quantize and
// kiln.dequantize on a !quant.uniform type that carries them, viewed as the
// ONNX integer tensor through kiln.storage_cast. So a QDQ pair is one
// quantized value, and passes read its parameters from its type.
//
// Otherwise (parameters computed at run time, other scale types) they are
// composed from kiln elementwise ops in float:
// q = saturate(round_half_even(x / scale) + zp), x = (q - zp) * scale, with
// per-axis scales and zero points broadcast along axis. DynamicQuantizeLinear
// is kiln.dynamic_quantize.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include <cmath>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

/// A per-axis parameter (1-D of the axis' size) reshaped to broadcast over
/// `like` along `axis`; scalars pass through.
Value alongAxis(Emitter &e, Value param, RankedTensorType like, int64_t axis) {
  auto pt = cast<RankedTensorType>(param.getType());
  if (pt.getRank() != 1 || like.getRank() == 0)
    return param;
  SmallVector<int64_t> shape(like.getRank(), 1);
  shape[axis] = pt.getDimSize(0);
  return e.reshape(param, shape);
}

/// The quantization axis; only checked when the scale is per-axis (1-D).
FailureOr<int64_t> quantAxis(ImportContext &ctx, RankedTensorType x, Value scale) {
  int64_t axis = ctx.attrInt("axis", 1);
  if (cast<RankedTensorType>(scale.getType()).getRank() != 1)
    return axis;
  return ctx.axis(axis, x.getRank());
}

/// What QuantizeLinear and DequantizeLinear both read first: the data x, its
/// scale, and the axis of a per-axis scale.
struct LinearQuantOperands {
  Value x, scale;
  RankedTensorType type; // of x
  int64_t axis;
};

FailureOr<LinearQuantOperands> linearQuantOperands(ImportContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = quantAxis(ctx, xt, *scale);
  if (failed(axis))
    return failure();
  return LinearQuantOperands{*x, *scale, xt, *axis};
}

/// The integer range of a quantized element type.
std::pair<double, double> quantRange(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  if (t.isUnsignedInteger())
    return {0.0, std::ldexp(1.0, w) - 1};
  return {-std::ldexp(1.0, w - 1), std::ldexp(1.0, w - 1) - 1};
}

/// The !quant.uniform type of the node's scale (input 1) and zero point
/// (input 2, else 0 of `defaultStorage`) for data of type `x`, if both are
/// constants that such a type holds: an f32 scale, positive and finite, per
/// tensor or with one per index along the node's axis; an 8- or 16-bit
/// integer zero point. Reads host constants only, so that nothing is
/// materialized when the node is composed from elementwise ops instead.
std::optional<Type> constantQuantType(ImportContext &ctx, RankedTensorType x,
                                      Type defaultStorage) {
  const HostTensor *scale = ctx.hostInput(1);
  const HostTensor *zeroPoint = ctx.hasInput(2) ? ctx.hostInput(2) : nullptr;
  if (!scale || scale->dtype != onnx::TensorProto::FLOAT || (ctx.hasInput(2) && !zeroPoint) ||
      scale->shape.size() > 1)
    return std::nullopt;
  auto storage = dyn_cast<IntegerType>(
      zeroPoint ? elementTypeOf(ctx.b, zeroPoint->dtype) : defaultStorage);
  if (!storage || (storage.getWidth() != 8 && storage.getWidth() != 16))
    return std::nullopt;
  size_t count = scale->floats.size();
  bool perAxis = scale->shape.size() == 1;
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0)
    axis += x.getRank();
  if (perAxis && (axis < 0 || axis >= x.getRank() || x.isDynamicDim(axis) ||
                  x.getDimSize(axis) != static_cast<int64_t>(count)))
    return std::nullopt;
  if (zeroPoint && zeroPoint->ints.size() != count)
    return std::nullopt;
  bool isSigned = !storage.isUnsigned();
  unsigned width = storage.getWidth();
  int64_t lo = quant::QuantizedType::getDefaultMinimumForInteger(isSigned, width);
  int64_t hi = quant::QuantizedType::getDefaultMaximumForInteger(isSigned, width);
  std::vector<int64_t> zeroPoints = zeroPoint ? zeroPoint->ints : std::vector<int64_t>(count, 0);
  for (size_t i = 0; i < count; ++i)
    if (!(scale->floats[i] > 0) || std::isinf(scale->floats[i]) || zeroPoints[i] < lo ||
        zeroPoints[i] > hi)
      return std::nullopt;
  MLIRContext *mctx = ctx.b.getContext();
  unsigned flags = isSigned ? quant::QuantizationFlags::Signed : 0;
  Type bits = IntegerType::get(mctx, width), f32 = Float32Type::get(mctx);
  if (!perAxis)
    return quant::UniformQuantizedType::get(flags, bits, f32, scale->floats[0], zeroPoints[0], lo,
                                            hi);
  return quant::UniformQuantizedPerAxisType::get(flags, bits, f32, scale->floats, zeroPoints,
                                                 static_cast<int32_t>(axis), lo, hi);
}

RankedTensorType withElement(RankedTensorType t, Type element) {
  return RankedTensorType::get(t.getShape(), element);
}

} // namespace

FailureOr<Value> requantize(Emitter &e, Value scaled, Value zeroPoint, Type qt) {
  Value q = e.unary<k::RoundOp>(scaled);
  if (zeroPoint) {
    auto shifted =
        e.binary<k::AddOp>(q, e.castTo(zeroPoint, getElementTypeOrSelf(scaled.getType())));
    if (failed(shifted))
      return failure();
    q = *shifted;
  }
  auto [lo, hi] = quantRange(qt);
  q = k::ClipOp::create(e.ctx.b, e.ctx.loc, q.getType(), q, e.ctx.b.getF32FloatAttr(lo),
                        e.ctx.b.getF32FloatAttr(hi));
  return e.castTo(q, qt);
}

namespace {

/// saturate(round(x / scale) + zp) as element type `qt`; x, scale float.
FailureOr<Value> quantize(Emitter &e, Value x, Value scale, Value zeroPoint, Type qt) {
  auto div = e.binary<k::DivOp>(x, scale);
  if (failed(div))
    return failure();
  return requantize(e, *div, zeroPoint, qt);
}

LogicalResult importQuantize(ImportContext &ctx) {
  auto input = ctx.input(0);
  if (failed(input))
    return failure();
  auto inputType = cast<RankedTensorType>(input->getType());
  if (inputType.getElementType().isF32())
    if (std::optional<Type> quantType =
            constantQuantType(ctx, inputType, ctx.b.getIntegerType(8, false))) {
      Type qt = k::quantParams(*quantType)->storageType(ctx.b.getContext());
      Value q = k::QuantizeOp::create(ctx.b, ctx.loc, withElement(inputType, *quantType), *input);
      ctx.setOutput(0, k::StorageCastOp::create(ctx.b, ctx.loc, withElement(inputType, qt), q));
      return success();
    }
  auto operands = linearQuantOperands(ctx);
  if (failed(operands))
    return failure();
  auto [x, scale, xt, axis] = *operands;
  Emitter e{ctx};
  Value zp;
  Type qt = ctx.b.getIntegerType(8, false);
  if (ctx.hasInput(2)) {
    auto z = ctx.input(2);
    if (failed(z))
      return failure();
    zp = alongAxis(e, *z, xt, axis);
    qt = getElementTypeOrSelf(z->getType());
  }
  if (!isa<IntegerType>(qt) || qt.getIntOrFloatBitWidth() > 16)
    return ctx.fail("only 8- and 16-bit integer quantization is supported");
  auto q = quantize(e, x, alongAxis(e, scale, xt, axis), zp, qt);
  if (failed(q))
    return failure();
  ctx.setOutput(0, *q);
  return success();
}

/// A blockwise parameter (scale or zero point: the data's shape with
/// ceil(n / block) along `axis`) repeated to the data's shape.
FailureOr<Value> perElement(ImportContext &ctx, Value param, RankedTensorType data, int64_t axis,
                            int64_t block) {
  auto pt = cast<RankedTensorType>(param.getType());
  int64_t n = data.getDimSize(axis);
  SmallVector<int64_t> expected(data.getShape());
  expected[axis] = (n + block - 1) / block;
  if (pt.getShape() != ArrayRef<int64_t>(expected))
    return ctx.fail("blockwise scale and zero point must have shape " + shapeText(expected) +
                    " (block_size " + llvm::Twine(block) + "), got " + shapeText(pt.getShape()));
  Emitter e{ctx};
  SmallVector<int64_t> spread(expected), repeated(expected), flat(expected);
  spread.insert(spread.begin() + axis + 1, 1);
  repeated.insert(repeated.begin() + axis + 1, block);
  flat[axis] *= block;
  Value r = k::ExpandOp::create(ctx.b, ctx.loc, RankedTensorType::get(repeated, pt.getElementType()),
                                e.reshape(param, spread));
  r = e.reshape(r, flat);
  if (flat[axis] == n)
    return r;
  SmallVector<int64_t> starts(flat.size(), 0), steps(flat.size(), 1);
  return k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(data.getShape(), pt.getElementType()),
                            r, starts, steps).getResult();
}

/// DequantizeLinear with block_size (opset 21): (x - zero_point) * scale with
/// one scale per block of `block_size` elements along `axis`.
LogicalResult importBlockDequantize(ImportContext &ctx, Value x, int64_t block) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto axis = ctx.axis(ctx.attrInt("axis", 1), xt.getRank());
  auto scale = ctx.input(1);
  if (failed(axis) || failed(scale))
    return failure();
  auto fullScale = perElement(ctx, *scale, xt, *axis, block);
  if (failed(fullScale))
    return failure();
  Emitter e{ctx};
  Type ft = getElementTypeOrSelf(scale->getType());
  Value v = e.castTo(x, ft);
  if (ctx.hasInput(2)) {
    auto z = ctx.input(2);
    if (failed(z))
      return failure();
    auto fullZero = perElement(ctx, *z, xt, *axis, block);
    if (failed(fullZero))
      return failure();
    auto centered = e.binary<k::SubOp>(v, e.castTo(*fullZero, ft));
    if (failed(centered))
      return failure();
    v = *centered;
  }
  auto y = e.binary<k::MulOp>(v, *fullScale);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

LogicalResult importDequantize(ImportContext &ctx) {
  auto input = ctx.input(0);
  if (failed(input))
    return failure();
  if (int64_t block = ctx.attrInt("block_size", 0); block > 0)
    return importBlockDequantize(ctx, *input, block);
  auto inputType = cast<RankedTensorType>(input->getType());
  Type storage = inputType.getElementType();
  if (std::optional<Type> quantType = constantQuantType(ctx, inputType, storage))
    if (k::quantParams(*quantType)->storageType(ctx.b.getContext()) == storage) {
      Value q = k::StorageCastOp::create(ctx.b, ctx.loc, withElement(inputType, *quantType), *input);
      ctx.setOutput(0, k::DequantizeOp::create(ctx.b, ctx.loc,
                                               withElement(inputType, ctx.b.getF32Type()), q));
      return success();
    }
  auto operands = linearQuantOperands(ctx);
  if (failed(operands))
    return failure();
  auto [x, scale, xt, axis] = *operands;
  Emitter e{ctx};
  Type ft = getElementTypeOrSelf(scale.getType());
  Value v = e.castTo(x, ft);
  if (ctx.hasInput(2)) {
    auto z = ctx.input(2);
    if (failed(z))
      return failure();
    auto centered = e.binary<k::SubOp>(v, e.castTo(alongAxis(e, *z, xt, axis), ft));
    if (failed(centered))
      return failure();
    v = *centered;
  }
  auto y = e.binary<k::MulOp>(v, alongAxis(e, scale, xt, axis));
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// DynamicQuantizeLinear: uint8 with scale and zero point from the data
/// range (always including 0).
LogicalResult importDynamicQuantize(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!xt.getElementType().isF32())
    return ctx.fail("only f32 inputs are supported");
  Type u8 = ctx.b.getIntegerType(8, false);
  auto q = k::DynamicQuantizeOp::create(
      ctx.b, ctx.loc, RankedTensorType::get(xt.getShape(), u8),
      RankedTensorType::get({}, xt.getElementType()), RankedTensorType::get({}, u8), *x);
  ctx.setOutput(0, q.getResult());
  ctx.setOutput(1, q.getScale());
  ctx.setOutput(2, q.getZeroPoint());
  return success();
}

} // namespace

void registerQuantOps(ImportTable &t) {
  t["QuantizeLinear"] = importQuantize;
  t["DequantizeLinear"] = importDequantize;
  t["DynamicQuantizeLinear"] = importDynamicQuantize;
}

} // namespace kiln::onnx_frontend
