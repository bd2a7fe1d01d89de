//===- FuseQdq.cpp - QDQ graphs into int8 products --------------------------===//
//
// Quantization tools write int8 models as QDQ graphs: each Conv, MatMul or
// Gemm stays a float op, reading DequantizeLinear(q) of 8-bit activations q
// (which a QuantizeLinear computed) and DequantizeLinear of constant int8
// weights. Computed as written, that is dequantize, float product,
// quantize. This pass runs the product on the 8-bit values themselves,
// with the model's own int8 weights and scales: the integer product of
// Quantization.cpp (kiln-vnni-matmul's kernels), the zero point removed
// through the weights' column sums, then rescaled to f32.
//
// DequantizeLinear arrives (ImportQuant.cpp) as
//   mul(sub(cast(q), cast(zero_point)), scale)  or  mul(cast(q), scale)
// with scale and zero point constants (through reshapes, for per-axis
// weights). Activations must be per tensor; weights per output channel (or
// per tensor) with zero zero points, as symmetric int8 weights are.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/Quantization.h"

#include <cstdio>
#include <cstring>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEQDQ
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The values of a constant, looked up through reshapes and casts (a cast
/// of a constant zero point to f32, say), as doubles.
std::optional<std::vector<double>> constantValues(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, CastOp>(def))
      break;
    v = def->getOperand(0);
  }
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  ElementsAttr attr = constant.getValue();
  Type et = attr.getElementType();
  std::vector<double> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(et))
      for (APFloat x : dense.getValues<APFloat>())
        values.push_back(x.convertToDouble());
    else if (et.isUnsignedInteger())
      for (APInt x : dense.getValues<APInt>())
        values.push_back(static_cast<double>(x.getZExtValue()));
    else
      for (APInt x : dense.getValues<APInt>())
        values.push_back(static_cast<double>(x.getSExtValue()));
    return values;
  }
  // Large constants are resources: only int8 weights and f32 scales are.
  std::optional<ArrayRef<char>> raw = rawElementsData(attr);
  if (!raw)
    return std::nullopt;
  if (et.isF32())
    for (size_t i = 0; i + 4 <= raw->size(); i += 4) {
      float x;
      std::memcpy(&x, raw->data() + i, 4);
      values.push_back(x);
    }
  else if (et.isSignlessInteger(8))
    for (char c : *raw)
      values.push_back(static_cast<int8_t>(c));
  else if (et.isUnsignedInteger(8))
    for (char c : *raw)
      values.push_back(static_cast<uint8_t>(c));
  else
    return std::nullopt;
  return values;
}

/// A DequantizeLinear: 8-bit `q` with constant scales and zero points (one
/// each for a tensor; or one per channel, with `scaleType` the shape they
/// broadcast in).
struct Dequantized {
  Value q;
  std::vector<double> scales, zeroPoints;
  RankedTensorType scaleType;
};

std::optional<Dequantized> matchDequantize(Value v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  Dequantized d;
  d.scaleType = cast<RankedTensorType>(mul.getRhs().getType());
  auto scales = constantValues(mul.getRhs());
  if (!scales)
    return std::nullopt;
  d.scales = *scales;
  Value centered = mul.getLhs();
  d.zeroPoints = {0.0};
  if (auto sub = centered.getDefiningOp<SubOp>()) {
    auto zeroPoints = constantValues(sub.getRhs());
    if (!zeroPoints)
      return std::nullopt;
    d.zeroPoints = *zeroPoints;
    centered = sub.getLhs();
  }
  auto toFloat = centered.getDefiningOp<CastOp>();
  if (!toFloat)
    return std::nullopt;
  d.q = toFloat.getInput();
  Type et = cast<RankedTensorType>(d.q.getType()).getElementType();
  if (!et.isInteger(8) || !cast<RankedTensorType>(toFloat.getType()).getElementType().isF32())
    return std::nullopt;
  return d;
}

/// `v` without the reshapes applied to it (a Flatten after the dequantize).
Value throughReshapes(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

/// Per-tensor 8-bit activations (reshaped as `v` is), or why not.
FailureOr<Dequantized> quantizedActivations(OpBuilder &b, Value v, std::string &why) {
  std::optional<Dequantized> d = matchDequantize(throughReshapes(v));
  if (!d) {
    why = "its activations are not dequantized 8-bit values";
    return failure();
  }
  if (d->scales.size() != 1 || d->zeroPoints.size() != 1 || d->scales[0] <= 0) {
    why = "its activations are not quantized per tensor";
    return failure();
  }
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.hasStaticShape()) {
    why = "its activations' shape is not static";
    return failure();
  }
  // Per tensor, dequantize and reshape commute.
  if (v.getDefiningOp<ReshapeOp>())
    d->q = ReshapeOp::create(
        b, v.getLoc(),
        RankedTensorType::get(type.getShape(),
                              cast<RankedTensorType>(d->q.getType()).getElementType()),
        d->q);
  return *d;
}

/// Constant int8 weights (symmetric: zero points all zero) as [K, N] with a
/// scale per column, from a dequantized [rows, cols] weight whose output
/// channels run along `channelAxis`; `transposed` when the channels are its
/// rows (a [N, K] Gemm operand, or a conv filter as [F, C*KH*KW]).
FailureOr<QuantizedWeights> quantizedWeights(Value w, bool transposed, float alpha,
                                             std::string &why) {
  std::optional<Dequantized> d = matchDequantize(w);
  std::optional<std::vector<double>> q = d ? constantValues(d->q) : std::nullopt;
  if (!d || !q || !cast<RankedTensorType>(d->q.getType()).getElementType().isSignlessInteger(8)) {
    why = "its weights are not dequantized int8 constants";
    return failure();
  }
  if (llvm::any_of(d->zeroPoints, [](double z) { return z != 0; })) {
    why = "its weights have nonzero zero points";
    return failure();
  }
  auto type = cast<RankedTensorType>(w.getType());
  int64_t channels = type.getDimSize(transposed ? 0 : type.getRank() - 1);
  int64_t perChannel = type.getNumElements() / channels;
  // Per output channel: the scale's shape has the channels on their axis
  // and ones elsewhere.
  ArrayRef<int64_t> scaleShape = d->scaleType.getShape();
  bool perAxis = d->scales.size() == static_cast<size_t>(channels) &&
                 !scaleShape.empty() &&
                 (transposed ? scaleShape.front() : scaleShape.back()) == channels;
  if (d->scales.size() != 1 && !perAxis) {
    why = "its weights are not quantized per output channel";
    return failure();
  }
  std::vector<int8_t> values(perChannel * channels);
  std::vector<float> scales(channels);
  for (int64_t n = 0; n < channels; ++n) {
    scales[n] = static_cast<float>(d->scales[perAxis ? n : 0]) * alpha;
    for (int64_t k = 0; k < perChannel; ++k)
      values[k * channels + n] =
          static_cast<int8_t>((*q)[transposed ? n * perChannel + k : k * channels + n]);
  }
  return QuantizedWeights::of(std::move(values), std::move(scales));
}

/// Weights that are a 2-D matrix: QDQ weights are read by quantizedWeights,
/// not as a constant.
FailureOr<ElementsAttr> matrixWeights(Value w, std::string &why) {
  if (cast<RankedTensorType>(w.getType()).getRank() != 2) {
    why = "its weights are not a 2-D matrix";
    return failure();
  }
  return ElementsAttr();
}

/// The activations as the int8 product reads them: the values and rank-0
/// constants of their scale and zero point.
QuantizedActivations activationOperands(OpBuilder &b, Location loc, const Dequantized &x) {
  auto scalar = [&](Type t) { return RankedTensorType::get({}, t); };
  Type et = cast<RankedTensorType>(x.q.getType()).getElementType();
  Value scale = ConstantOp::create(b, loc, scalar(b.getF32Type()),
                                   DenseElementsAttr::get(scalar(b.getF32Type()),
                                                          static_cast<float>(x.scales[0])));
  auto z = static_cast<int64_t>(x.zeroPoints[0]);
  APInt zp(8, static_cast<uint64_t>(z), /*isSigned=*/z < 0);
  Value zeroPoint = ConstantOp::create(b, loc, scalar(et), DenseElementsAttr::get(scalar(et), zp));
  return {x.q, scale, zeroPoint};
}

/// Rewrites `op` if it reads QDQ activations and weights; returns how, or
/// failure with why not.
FailureOr<std::string> fuse(Operation *op, std::string &why) {
  Value activations = isa<ConvOp>(op) ? cast<ConvOp>(op).getInput() : op->getOperand(0);
  OpBuilder b(op);
  FailureOr<Dequantized> x = quantizedActivations(b, activations, why);
  if (failed(x))
    return failure();
  char how[160];
  snprintf(how, sizeof how, "activations %s, scale %.4g, zero point %d",
           cast<RankedTensorType>(x->q.getType()).getElementType().isUnsignedInteger() ? "uint8"
                                                                                      : "int8",
           x->scales[0], static_cast<int>(x->zeroPoints[0]));
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (conv.getGroup() != 1) {
      why = "it is grouped (group " + std::to_string(conv.getGroup()) + ")";
      return failure();
    }
    if (!cast<RankedTensorType>(conv.getType()).hasStaticShape()) {
      why = "its shape is not static";
      return failure();
    }
    FailureOr<QuantizedWeights> w = quantizedWeights(conv.getFilter(), /*transposed=*/true, 1.0f, why);
    if (failed(w))
      return failure();
    replaceConvWithInt8(op, x->q, static_cast<float>(x->scales[0]),
                        static_cast<int32_t>(x->zeroPoints[0]), *w);
    return std::string(how);
  }
  FailureOr<ConstantWeightMatmul> c = matmulCandidate(op, why, matrixWeights);
  if (failed(c))
    return failure();
  FailureOr<QuantizedWeights> w =
      quantizedWeights(op->getOperand(1), c->transposed, c->alpha, why);
  if (failed(w))
    return failure();
  replaceWithInt8(*c, activationOperands(b, op->getLoc(), *x), *w);
  return std::string(how);
}

struct KilnFuseQdqPass : mlir::kiln::impl::KilnFuseQdqBase<KilnFuseQdqPass> {
  using KilnFuseQdqBase::KilnFuseQdqBase;

  void runOnOperation() override {
    for (Operation *op : quantizableOps(getOperation())) {
      // Only ops that read a DequantizeLinear are part of a QDQ graph.
      Value activations = isa<ConvOp>(op) ? cast<ConvOp>(op).getInput() : op->getOperand(0);
      if (!matchDequantize(throughReshapes(activations)))
        continue;
      Location loc = op->getLoc();
      StringRef kind = quantKind(op);
      std::string why;
      FailureOr<std::string> how = fuse(op, why);
      if (!report)
        continue;
      if (succeeded(how))
        emitRemark(loc) << "quant: " << kind << " runs in int8 (QDQ: the model's int8 weights, "
                        << *how << ")";
      else
        emitRemark(loc) << "quant: " << kind << " stays f32 (QDQ not fused): " << why;
    }
  }
};
} // namespace
