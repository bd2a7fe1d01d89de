//===- FuseQdq.cpp - QDQ graphs into int8 products --------------------------===//
//
// Quantization tools write int8 models as QDQ graphs: each Conv, MatMul or
// Gemm stays a float op, reading DequantizeLinear(q) of 8-bit activations q
// (which a QuantizeLinear computed) and DequantizeLinear of constant int8
// weights. Computed as written, that is dequantize, float product,
// quantize. This pass runs the product on the 8-bit values themselves,
// with the model's own int8 weights and scales: the integer product of
// Quantization.cpp (kiln-cpu-vnni-matmul's kernels), the zero point removed
// through the weights' column sums, then rescaled to f32.
//
// DequantizeLinear with constant parameters arrives (ImportQuant.cpp) as
// kiln.dequantize of a !quant.uniform tensor, which carries the scale and
// zero point. Activations must be per tensor; weights per output channel
// (or per tensor) with zero zero points, as symmetric int8 weights are.
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

/// The values of an 8-bit integer constant, looked up through reshapes.
std::optional<std::vector<int64_t>> constantValues(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  ElementsAttr attr = constant.getValue();
  Type et = attr.getElementType();
  if (!et.isInteger(8))
    return std::nullopt;
  std::vector<int64_t> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    for (APInt x : dense.getValues<APInt>())
      values.push_back(et.isUnsignedInteger() ? x.getZExtValue() : x.getSExtValue());
    return values;
  }
  // Large constants are resources.
  std::optional<ArrayRef<char>> raw = rawElementsData(attr);
  if (!raw)
    return std::nullopt;
  for (char c : *raw)
    values.push_back(et.isUnsignedInteger() ? static_cast<uint8_t>(c) : static_cast<int8_t>(c));
  return values;
}

/// A kiln.dequantize of 8-bit values: the quantized tensor and the
/// parameters of its type.
struct Dequantized {
  Value quantized;
  QuantParams params;

  /// The integers (ui8 or i8) the quantized values are stored in.
  Value storage(OpBuilder &b) const {
    if (auto cast = quantized.getDefiningOp<StorageCastOp>())
      return cast.getInput();
    auto type = cast<RankedTensorType>(quantized.getType());
    return StorageCastOp::create(
        b, quantized.getLoc(),
        RankedTensorType::get(type.getShape(), params.storageType(b.getContext())), quantized);
  }
};

std::optional<Dequantized> matchDequantize(Value v) {
  auto dequantize = v.getDefiningOp<DequantizeOp>();
  if (!dequantize)
    return std::nullopt;
  QuantParams params =
      *quantParams(cast<RankedTensorType>(dequantize.getInput().getType()).getElementType());
  if (params.width != 8)
    return std::nullopt;
  return Dequantized{dequantize.getInput(), std::move(params)};
}

/// `v` without the reshapes applied to it (a Flatten after the dequantize).
Value throughReshapes(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

/// Per-tensor 8-bit activations, or why not.
FailureOr<Dequantized> quantizedActivations(Value v, std::string &why) {
  std::optional<Dequantized> d = matchDequantize(throughReshapes(v));
  if (!d) {
    why = "its activations are not dequantized 8-bit values";
    return failure();
  }
  if (d->params.axis) {
    why = "its activations are not quantized per tensor";
    return failure();
  }
  if (!cast<RankedTensorType>(v.getType()).hasStaticShape()) {
    why = "its activations' shape is not static";
    return failure();
  }
  return *d;
}

/// The stored values of activations `x`, reshaped as `v` is (per tensor,
/// dequantize and reshape commute).
Value activationValues(OpBuilder &b, Value v, const Dequantized &x) {
  Value q = x.storage(b);
  if (!v.getDefiningOp<ReshapeOp>())
    return q;
  auto type = cast<RankedTensorType>(v.getType());
  return ReshapeOp::create(
      b, v.getLoc(),
      RankedTensorType::get(type.getShape(), cast<RankedTensorType>(q.getType()).getElementType()),
      q);
}

/// Constant int8 weights (symmetric: zero points all zero) as [K, N] with a
/// scale per column, from a dequantized [rows, cols] weight (or conv
/// filter) whose output channels run along its last dimension, or along
/// its first when `transposed` (a [N, K] Gemm operand, or a conv filter as
/// [F, C*KH*KW]).
FailureOr<QuantizedWeights> quantizedWeights(Value w, bool transposed, float alpha,
                                             std::string &why) {
  std::optional<Dequantized> d = matchDequantize(w);
  auto stored = d ? d->quantized.getDefiningOp<StorageCastOp>() : nullptr;
  std::optional<std::vector<int64_t>> q =
      stored && d->params.isSigned ? constantValues(stored.getInput()) : std::nullopt;
  if (!q) {
    why = "its weights are not dequantized int8 constants";
    return failure();
  }
  const QuantParams &p = d->params;
  if (llvm::any_of(p.zeroPoints, [](int64_t z) { return z != 0; })) {
    why = "its weights have nonzero zero points";
    return failure();
  }
  auto type = cast<RankedTensorType>(w.getType());
  int64_t channelAxis = transposed ? 0 : type.getRank() - 1;
  if (p.axis && *p.axis != channelAxis) {
    why = "its weights are not quantized per output channel";
    return failure();
  }
  int64_t channels = type.getDimSize(channelAxis);
  int64_t perChannel = type.getNumElements() / channels;
  std::vector<int8_t> values(perChannel * channels);
  std::vector<float> scales(channels);
  for (int64_t n = 0; n < channels; ++n) {
    scales[n] = static_cast<float>(p.scales[p.axis ? n : 0]) * alpha;
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

/// The activations as the int8 product reads them: their stored values
/// (reshaped as `v` is) and rank-0 constants of their scale and zero point.
QuantizedActivations activationOperands(OpBuilder &b, Location loc, Value v,
                                        const Dequantized &x) {
  return QuantizedActivations::fixed(b, loc, activationValues(b, v, x),
                                     static_cast<float>(x.params.scales[0]),
                                     x.params.zeroPoints[0]);
}

/// Rewrites `op` if it reads QDQ activations and weights; returns how, or
/// failure with why not.
FailureOr<std::string> fuse(Operation *op, std::string &why) {
  Value activations = isa<ConvOp>(op) ? cast<ConvOp>(op).getInput() : op->getOperand(0);
  OpBuilder b(op);
  FailureOr<Dequantized> x = quantizedActivations(activations, why);
  if (failed(x))
    return failure();
  float scale = static_cast<float>(x->params.scales[0]);
  auto zeroPoint = static_cast<int32_t>(x->params.zeroPoints[0]);
  char how[160];
  snprintf(how, sizeof how, "activations %s, scale %.4g, zero point %d",
           x->params.isSigned ? "int8" : "uint8", scale, zeroPoint);
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (conv.getGroup() != 1) {
      why = "it is grouped (group " + std::to_string(conv.getGroup()) + ")";
      return failure();
    }
    if (!cast<RankedTensorType>(conv.getType()).hasStaticShape()) {
      why = "its shape is not static";
      return failure();
    }
    FailureOr<QuantizedWeights> w =
        quantizedWeights(conv.getFilter(), /*transposed=*/true, 1.0f, why);
    if (failed(w))
      return failure();
    replaceConvWithInt8(op, activationValues(b, activations, *x), scale, zeroPoint, *w);
    return std::string(how);
  }
  FailureOr<ConstantWeightMatmul> c = matmulCandidate(op, why, matrixWeights);
  if (failed(c))
    return failure();
  FailureOr<QuantizedWeights> w =
      quantizedWeights(op->getOperand(1), c->transposed, c->alpha, why);
  if (failed(w))
    return failure();
  replaceWithInt8(*c, activationOperands(b, op->getLoc(), activations, *x), *w);
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
