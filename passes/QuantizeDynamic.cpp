//===- QuantizeDynamic.cpp - int8 matmuls, activations quantized at run time ===//
//
// Dynamic quantization (onnxruntime's quantize_dynamic): the weights of a
// matmul become int8 at compile time, symmetric per output column, and its
// activations become uint8 per tensor at run time from their observed range.
// The product runs on 8-bit integers with 32-bit sums; with
//   X ~ xs * (Xq - xz),  W ~ Wq * ws  (per column n),
// X W ~ xs * ws[n] * (sum_k Xq[k] Wq[k, n] - xz * sum_k Wq[k, n]),
// so the zero point costs one constant vector (the column sums of Wq).
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNQUANTIZEDYNAMIC
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Int8 weights, symmetric per column, with what the product needs of them.
struct QuantizedWeights {
  int64_t k, n;
  std::vector<int8_t> values;   // [K, N], row-major
  std::vector<float> scales;    // [N]
  std::vector<int32_t> columnSums; // [N], of `values`
};

/// Quantizes the f32 [K, N] weights `w` (read as [N, K] when `transposed`).
QuantizedWeights quantizeWeights(const std::vector<float> &w, int64_t k, int64_t n,
                                 bool transposed) {
  auto at = [&](int64_t row, int64_t col) { return transposed ? w[col * k + row] : w[row * n + col]; };
  QuantizedWeights q{k, n, std::vector<int8_t>(k * n), std::vector<float>(n),
                     std::vector<int32_t>(n, 0)};
  for (int64_t col = 0; col < n; ++col) {
    float maxAbs = 0;
    for (int64_t row = 0; row < k; ++row)
      maxAbs = std::max(maxAbs, std::fabs(at(row, col)));
    float scale = maxAbs > 0 ? maxAbs / 127.0f : 1.0f;
    q.scales[col] = scale;
    for (int64_t row = 0; row < k; ++row) {
      float v = std::nearbyint(at(row, col) / scale);
      auto qv = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      q.values[row * n + col] = qv;
      q.columnSums[col] += qv;
    }
  }
  return q;
}

/// The f32 values of a constant 2-D weight, or why it cannot be quantized.
FailureOr<std::vector<float>> constantWeights(Value w, std::string &why) {
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
  std::optional<std::vector<float>> values = f32Elements(constant.getValue());
  if (!values) {
    why = "its weights are not f32";
    return failure();
  }
  return *values;
}

/// x * W for f32 `x` [..., K] and quantized W: returns the f32 [..., N]
/// product scaled by `alpha`.
Value quantizedProduct(OpBuilder &b, Location loc, Value x, const QuantizedWeights &w,
                       RankedTensorType resultType, float alpha) {
  auto xType = cast<RankedTensorType>(x.getType());
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), u8 = b.getIntegerType(8, false);
  auto scalar = [&](Type t) { return RankedTensorType::get({}, t); };
  auto vector = [&](Type t) { return RankedTensorType::get({w.n}, t); };
  auto quantized = DynamicQuantizeOp::create(
      b, loc, RankedTensorType::get(xType.getShape(), u8), scalar(f32), scalar(u8), x);
  Value weights = blobConstant(b, loc, RankedTensorType::get({w.k, w.n}, b.getI8Type()),
                               ArrayRef(w.values), "int8_weight");
  auto sumsType = RankedTensorType::get(resultType.getShape(), i32);
  Value sums = MatMulOp::create(b, loc, sumsType, quantized.getResult(), weights);
  // Remove the activations' zero point: xz * colsum(Wq) per column.
  Value columnSums =
      blobConstant(b, loc, vector(i32), ArrayRef(w.columnSums), "int8_weight_column_sums");
  Value zeroPoint = CastOp::create(b, loc, scalar(i32), quantized.getZeroPoint());
  Value offset = MulOp::create(b, loc, vector(i32), zeroPoint, columnSums);
  Value centered = SubOp::create(b, loc, sumsType, sums, offset);
  std::vector<float> scales(w.scales);
  for (float &s : scales)
    s *= alpha;
  Value weightScales = blobConstant(b, loc, vector(f32), ArrayRef(scales), "int8_weight_scales");
  Value scale = MulOp::create(b, loc, vector(f32), quantized.getScale(), weightScales);
  Value product = CastOp::create(b, loc, resultType, centered);
  return MulOp::create(b, loc, resultType, product, scale);
}

LogicalResult quantize(MatMulOp op, std::string &why) {
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  if (!lhsType.getElementType().isF32()) {
    why = "its activations are not f32";
    return failure();
  }
  if (lhsType.getRank() < 2) {
    why = "its left operand is a vector";
    return failure();
  }
  auto weights = constantWeights(op.getRhs(), why);
  if (failed(weights))
    return failure();
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  QuantizedWeights q =
      quantizeWeights(*weights, rhsType.getDimSize(0), rhsType.getDimSize(1), false);
  OpBuilder b(op);
  op.replaceAllUsesWith(quantizedProduct(b, op.getLoc(), op.getLhs(), q, op.getType(), 1.0f));
  op.erase();
  return success();
}

LogicalResult quantize(GemmOp op, std::string &why) {
  if (!cast<RankedTensorType>(op.getA().getType()).getElementType().isF32()) {
    why = "its activations are not f32";
    return failure();
  }
  if (op.getTransA()) {
    why = "its activations are transposed (trans_a)";
    return failure();
  }
  auto weights = constantWeights(op.getB(), why);
  if (failed(weights))
    return failure();
  auto bType = cast<RankedTensorType>(op.getB().getType());
  bool transposed = op.getTransB();
  int64_t k = bType.getDimSize(transposed ? 1 : 0), n = bType.getDimSize(transposed ? 0 : 1);
  QuantizedWeights q = quantizeWeights(*weights, k, n, transposed);
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value y = quantizedProduct(b, loc, op.getA(), q, op.getType(), op.getAlpha().convertToFloat());
  if (Value c = op.getC()) {
    float beta = op.getBeta().convertToFloat();
    if (beta != 1.0f) {
      auto scalar = RankedTensorType::get({}, b.getF32Type());
      Value betaValue = ConstantOp::create(b, loc, scalar, DenseElementsAttr::get(scalar, beta));
      c = MulOp::create(b, loc, c.getType(), c, betaValue);
    }
    y = AddOp::create(b, loc, op.getType(), y, c);
  }
  op.replaceAllUsesWith(y);
  op.erase();
  return success();
}

struct KilnQuantizeDynamicPass
    : mlir::kiln::impl::KilnQuantizeDynamicBase<KilnQuantizeDynamicPass> {
  using KilnQuantizeDynamicBase::KilnQuantizeDynamicBase;

  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp>(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      Location loc = op->getLoc();
      StringRef kind = isa<MatMulOp>(op) ? "matmul" : "gemm";
      std::string why;
      LogicalResult done = isa<MatMulOp>(op) ? quantize(cast<MatMulOp>(op), why)
                                              : quantize(cast<GemmOp>(op), why);
      if (!report)
        continue;
      if (succeeded(done))
        emitRemark(loc) << "quant: " << kind
                        << " runs in int8 (weights per column, activations per tensor at run time)";
      else
        emitRemark(loc) << "quant: " << kind << " stays f32: " << why;
    }
  }
};
} // namespace
