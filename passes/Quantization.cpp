//===- Quantization.cpp - the int8 product shared by the quantize passes --===//
//
// With activations X ~ xs * (Xq - xz) (uint8) and weights W ~ Wq * ws
// (int8, symmetric per column n):
//   X W ~ xs * ws[n] * (sum_k Xq[k] Wq[k, n] - xz * sum_k Wq[k, n]),
// so the activations' zero point costs one constant vector (the column sums
// of Wq) and the product is a widening u8 x i8 -> i32 kiln.matmul.
//
//===----------------------------------------------------------------------===//
#include "passes/Quantization.h"
#include "dialects/kiln/KilnDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The f32 data of a constant 2-D weight, or why it cannot be quantized.
FailureOr<ElementsAttr> constantWeights(Value w, std::string &why) {
  auto type = cast<RankedTensorType>(w.getType());
  auto constant = w.getDefiningOp<ConstantOp>();
  if (!constant) {
    why = "its right operand is not a constant";
    return failure();
  }
  if (type.getRank() != 2 || !type.hasStaticShape()) {
    why = "its weights are not a 2-D matrix";
    return failure();
  }
  if (!hasF32Elements(constant.getValue())) {
    why = "its weights are not f32";
    return failure();
  }
  return constant.getValue();
}

bool isF32(Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); }

FailureOr<ConstantWeightMatmul> fromMatMul(MatMulOp op, std::string &why,
                                           WeightCheck checkWeights) {
  if (!isF32(op.getLhs())) {
    why = "its activations are not f32";
    return failure();
  }
  if (cast<RankedTensorType>(op.getLhs().getType()).getRank() < 2) {
    why = "its left operand is a vector";
    return failure();
  }
  auto weights = checkWeights(op.getRhs(), why);
  if (failed(weights))
    return failure();
  auto type = cast<RankedTensorType>(op.getRhs().getType());
  return ConstantWeightMatmul{op,    op.getLhs(), *weights, type.getDimSize(0), type.getDimSize(1),
                              false, 1.0f,        1.0f,     Value()};
}

FailureOr<ConstantWeightMatmul> fromGemm(GemmOp op, std::string &why,
                                         WeightCheck checkWeights) {
  if (!isF32(op.getA())) {
    why = "its activations are not f32";
    return failure();
  }
  if (op.getTransA()) {
    why = "its activations are transposed (trans_a)";
    return failure();
  }
  auto weights = checkWeights(op.getB(), why);
  if (failed(weights))
    return failure();
  auto type = cast<RankedTensorType>(op.getB().getType());
  bool transposed = op.getTransB();
  return ConstantWeightMatmul{op,
                              op.getA(),
                              *weights,
                              type.getDimSize(transposed ? 1 : 0),
                              type.getDimSize(transposed ? 0 : 1),
                              transposed,
                              op.getAlpha().convertToFloat(),
                              op.getBeta().convertToFloat(),
                              op.getC()};
}

/// Replaces `op` by `replacement`, whose defining op inherits kiln.layer.
void replaceTagged(Operation *op, Value replacement) {
  if (Attribute layer = op->getAttr(kLayerAttr))
    replacement.getDefiningOp()->setAttr(kLayerAttr, layer);
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
}

} // namespace

QuantizedActivations QuantizedActivations::fixed(OpBuilder &b, Location loc, Value values,
                                                float scale, int64_t zeroPoint) {
  auto scalar = [&](Type t) { return RankedTensorType::get({}, t); };
  Type f32 = b.getF32Type();
  Type et = cast<RankedTensorType>(values.getType()).getElementType();
  Value scaleValue =
      ConstantOp::create(b, loc, scalar(f32), DenseElementsAttr::get(scalar(f32), scale));
  APInt zp(et.getIntOrFloatBitWidth(), static_cast<uint64_t>(zeroPoint), /*isSigned=*/zeroPoint < 0);
  Value zeroPointValue =
      ConstantOp::create(b, loc, scalar(et), DenseElementsAttr::get(scalar(et), zp));
  return {values, scaleValue, zeroPointValue};
}

FailureOr<ConstantWeightMatmul> mlir::kiln::matmulCandidate(Operation *op, std::string &why,
                                                            WeightCheck checkWeights) {
  if (auto matmul = dyn_cast<MatMulOp>(op))
    return fromMatMul(matmul, why, checkWeights);
  if (auto gemm = dyn_cast<GemmOp>(op))
    return fromGemm(gemm, why, checkWeights);
  why = "it is not a matmul or gemm";
  return failure();
}

FailureOr<ConstantWeightMatmul> mlir::kiln::constantWeightMatmul(Operation *op, std::string &why) {
  return matmulCandidate(op, why, constantWeights);
}

StringRef mlir::kiln::quantKind(Operation *op) {
  return isa<MatMulOp>(op) ? "matmul" : isa<GemmOp>(op) ? "gemm" : "conv";
}

SmallVector<Operation *> mlir::kiln::quantizableOps(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<MatMulOp, GemmOp, ConvOp>(op))
      ops.push_back(op);
  });
  return ops;
}

void mlir::kiln::rewriteConstantWeightMatmuls(Operation *root, bool report,
                                               llvm::StringRef done, MatmulRewrite rewrite) {
  for (Operation *op : quantizableOps(root)) {
    if (isa<ConvOp>(op))
      continue;
    Location loc = op->getLoc();
    StringRef kind = quantKind(op);
    std::string why;
    FailureOr<ConstantWeightMatmul> candidate = constantWeightMatmul(op, why);
    if (succeeded(candidate) && failed(rewrite(*candidate, why)))
      candidate = failure();
    if (!report)
      continue;
    if (succeeded(candidate))
      emitRemark(loc) << "quant: " << kind << " " << done;
    else
      emitRemark(loc) << "quant: " << kind << " stays f32: " << why;
  }
}

FailureOr<Value> mlir::kiln::int8Activation(Operation *op, std::string &why) {
  auto conv = dyn_cast<ConvOp>(op);
  if (!conv) {
    auto candidate = constantWeightMatmul(op, why);
    return failed(candidate) ? FailureOr<Value>(failure()) : candidate->activation;
  }
  if (!isF32(conv.getInput())) {
    why = "its input is not f32";
    return failure();
  }
  if (conv.getGroup() != 1) {
    why = "it is grouped (group " + std::to_string(conv.getGroup()) + ")";
    return failure();
  }
  auto filter = conv.getFilter().getDefiningOp<ConstantOp>();
  if (!filter || !hasF32Elements(filter.getValue())) {
    why = "its filter is not an f32 constant";
    return failure();
  }
  if (!cast<RankedTensorType>(conv.getType()).hasStaticShape()) {
    why = "its shape is not static";
    return failure();
  }
  return conv.getInput();
}

void mlir::kiln::replaceConvWithInt8(Operation *op, Value activations, float activationScale,
                                     int32_t zeroPoint) {
  auto conv = cast<ConvOp>(op);
  auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
  int64_t f = filterType.getDimSize(0), perFilter = filterType.getNumElements() / f;
  // The filter as [F, C*KH*KW] is a transposed [K, N] weight: per-row scales.
  ConstantWeightMatmul c{op,
                         activations,
                         conv.getFilter().getDefiningOp<ConstantOp>().getValue(),
                         perFilter,
                         f,
                         /*transposed=*/true,
                         1.0f,
                         1.0f,
                         Value()};
  replaceConvWithInt8(op, activations, activationScale, zeroPoint, quantizeWeights(c));
}

void mlir::kiln::replaceConvWithInt8(Operation *op, Value activations, float activationScale,
                                     int32_t zeroPoint, const QuantizedWeights &w) {
  auto conv = cast<ConvOp>(op);
  auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
  int64_t f = filterType.getDimSize(0), perFilter = filterType.getNumElements() / f;
  std::vector<int8_t> filterValues(f * perFilter);
  for (int64_t i = 0; i < f; ++i)
    for (int64_t j = 0; j < perFilter; ++j)
      filterValues[i * perFilter + j] = w.values[j * f + i];
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(conv.getType());
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value filter = blobConstant(b, loc, RankedTensorType::get(filterType.getShape(), b.getI8Type()),
                              ArrayRef(filterValues), "int8_filter");
  // The border holds real zeros: the zero point in the quantized domain.
  Value input = activations;
  ArrayRef<int64_t> pads = conv.getPads();
  if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
    auto t = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[2] += pads[0] + pads[2];
    shape[3] += pads[1] + pads[3];
    input = PadOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()), input,
                          b.getDenseI64ArrayAttr({0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]}),
                          b.getStringAttr("constant"), b.getF64FloatAttr(zeroPoint));
  }
  auto sumsType = RankedTensorType::get(resultType.getShape(), i32);
  Value sums = ConvOp::create(b, loc, sumsType, input, filter, Value(), conv.getStridesAttr(),
                              conv.getDilationsAttr(), b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                              conv.getGroupAttr());
  auto perChannel = [&](Type t) { return RankedTensorType::get({f, 1, 1}, t); };
  std::vector<int32_t> offsets(f);
  std::vector<float> scales(f);
  for (int64_t i = 0; i < f; ++i) {
    offsets[i] = zeroPoint * w.columnSums[i];
    scales[i] = activationScale * w.scales[i];
  }
  Value centered =
      SubOp::create(b, loc, sumsType, sums,
                    blobConstant(b, loc, perChannel(i32), ArrayRef(offsets), "int8_filter_offsets"));
  Value y = MulOp::create(b, loc, resultType, CastOp::create(b, loc, resultType, centered),
                          blobConstant(b, loc, perChannel(f32), ArrayRef(scales), "int8_filter_scales"));
  if (Value bias = conv.getBias())
    y = AddOp::create(b, loc, resultType, y,
                      ReshapeOp::create(b, loc, perChannel(f32), bias).getResult());
  replaceTagged(op, y);
}

QuantizedWeights QuantizedWeights::of(std::vector<int8_t> values, std::vector<float> scales) {
  int64_t n = scales.size();
  std::vector<int32_t> sums(n, 0);
  for (size_t i = 0; i < values.size(); ++i)
    sums[i % n] += values[i];
  return {std::move(values), std::move(scales), std::move(sums)};
}

QuantizedWeights mlir::kiln::quantizeWeights(const ConstantWeightMatmul &c) {
  int64_t k = c.k, n = c.n;
  std::vector<float> w = *f32Elements(c.weights);
  auto at = [&](int64_t row, int64_t col) {
    return c.transposed ? w[col * k + row] : w[row * n + col];
  };
  QuantizedWeights q{std::vector<int8_t>(k * n), std::vector<float>(n),
                     std::vector<int32_t>(n, 0)};
  for (int64_t col = 0; col < n; ++col) {
    float maxAbs = 0;
    for (int64_t row = 0; row < k; ++row)
      maxAbs = std::max(maxAbs, std::fabs(at(row, col)));
    float scale = maxAbs > 0 ? maxAbs / 127.0f : 1.0f;
    q.scales[col] = scale * c.alpha;
    for (int64_t row = 0; row < k; ++row) {
      float v = std::nearbyint(at(row, col) / scale);
      auto qv = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      q.values[row * n + col] = qv;
      q.columnSums[col] += qv;
    }
  }
  return q;
}

std::pair<float, uint8_t> mlir::kiln::uint8Parameters(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  float scale = (hi - lo) / 255.0f;
  if (scale == 0)
    return {0.0f, 0};
  float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  return {scale, static_cast<uint8_t>(zp)};
}

void mlir::kiln::replaceWithInt8(const ConstantWeightMatmul &c, const QuantizedActivations &x) {
  replaceWithInt8(c, x, quantizeWeights(c));
}

void mlir::kiln::replaceWithInt8(const ConstantWeightMatmul &c, const QuantizedActivations &x,
                                 const QuantizedWeights &w) {
  Operation *op = c.op;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto scalar = [&](Type t) { return RankedTensorType::get({}, t); };
  auto vector = [&](Type t) { return RankedTensorType::get({c.n}, t); };
  Value weights = blobConstant(b, loc, RankedTensorType::get({c.k, c.n}, b.getI8Type()),
                               ArrayRef(w.values), "int8_weight");
  auto sumsType = RankedTensorType::get(resultType.getShape(), i32);
  Value sums = MatMulOp::create(b, loc, sumsType, x.values, weights);
  // Remove the activations' zero point: xz * colsum(Wq) per column.
  Value columnSums =
      blobConstant(b, loc, vector(i32), ArrayRef(w.columnSums), "int8_weight_column_sums");
  Value zeroPoint = CastOp::create(b, loc, scalar(i32), x.zeroPoint);
  Value offset = MulOp::create(b, loc, vector(i32), zeroPoint, columnSums);
  Value centered = SubOp::create(b, loc, sumsType, sums, offset);
  Value weightScales = blobConstant(b, loc, vector(f32), ArrayRef(w.scales), "int8_weight_scales");
  Value scale = MulOp::create(b, loc, vector(f32), x.scale, weightScales);
  Value product = CastOp::create(b, loc, resultType, centered);
  Value y = MulOp::create(b, loc, resultType, product, scale);
  replaceTagged(op, gemmEpilogue(b, loc, c, y, /*alphaApplied=*/true));
}

Value mlir::kiln::gemmEpilogue(OpBuilder &b, Location loc, const ConstantWeightMatmul &c,
                               Value y, bool alphaApplied) {
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  auto scalar = [&](float v) -> Value {
    return ConstantOp::create(b, loc, scalarType, DenseElementsAttr::get(scalarType, v));
  };
  if (!alphaApplied && c.alpha != 1.0f)
    y = MulOp::create(b, loc, y.getType(), y, scalar(c.alpha));
  if (Value bias = c.bias) {
    if (c.beta != 1.0f)
      bias = MulOp::create(b, loc, bias.getType(), bias, scalar(c.beta));
    y = AddOp::create(b, loc, y.getType(), y, bias);
  }
  return y;
}
