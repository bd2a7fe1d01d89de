//===- Quantization.h - what the int8 quantization passes share -*- C++ -*-===//
//
// kiln-quantize-dynamic and kiln-quantize-static rewrite the same ops (a
// MatMul or Gemm with constant f32 weights) into the same int8 product; they
// differ in how the activations are quantized: from their range at run time,
// or with a scale and zero point fixed at compile time from calibration. The
// driver uses constantWeightMatmul() too, to know which activations to calibrate.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_QUANTIZATION_H
#define KILN_PASSES_QUANTIZATION_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <string>
#include <vector>

namespace mlir::kiln {

/// A matmul or gemm of activations [..., K] and constant f32 weights [K, N],
/// then alpha, then beta * bias: what can run in int8 or bf16.
struct ConstantWeightMatmul {
  Operation *op;
  Value activation;
  ElementsAttr weights; // f32, row-major; [N, K] when `transposed`
  int64_t k, n;
  bool transposed;
  float alpha = 1.0f, beta = 1.0f;
  Value bias; // a Gemm's C, or null
};

/// Checks an op's weights: their constant values (null when they are not a
/// constant the rewrite reads), or failure with the reason in `why`.
using WeightCheck = llvm::function_ref<FailureOr<ElementsAttr>(Value, std::string &)>;

/// The op (a MatMul, or a Gemm without trans_a, of f32 activations) as a
/// matmul whose weights `checkWeights` accepts, or failure with the reason
/// in `why`.
FailureOr<ConstantWeightMatmul> matmulCandidate(Operation *op, std::string &why,
                                                WeightCheck checkWeights);

/// The op as a matmul with constant f32 weights (what int8 and bf16 rewrite),
/// or failure with the reason in `why`.
FailureOr<ConstantWeightMatmul> constantWeightMatmul(Operation *op, std::string &why);

/// "matmul", "gemm" or "conv": how the quantization remarks name `op`.
llvm::StringRef quantKind(Operation *op);

/// The MatMul, Gemm and Conv ops under `root`, in order.
llvm::SmallVector<Operation *> quantizableOps(Operation *root);

/// Calls `rewrite` on each MatMul and Gemm under `root` that is a
/// constantWeightMatmul; `rewrite` may decline one, saying why. With
/// `report`, each gets a remark: "quant: <kind> <done>", or "quant: <kind>
/// stays f32: <why>".
using MatmulRewrite = llvm::function_ref<LogicalResult(const ConstantWeightMatmul &, std::string &)>;
void rewriteConstantWeightMatmuls(Operation *root, bool report, llvm::StringRef done,
                                  MatmulRewrite rewrite);

/// The activations of an op that can run in int8, or failure with the reason
/// in `why`: a constantWeightMatmul, or a 2-D convolution without groups whose
/// filter is a constant f32 tensor.
FailureOr<Value> int8Activation(Operation *op, std::string &why);

/// The attribute holding an activation's calibrated [min, max] (set by the
/// driver, read by kiln-quantize-static).
inline constexpr const char *kActivationRangeAttr = "kiln.activation_range";

/// The attribute numbering a calibrated op (set by the driver); the op that
/// computes the quantized replacement's result keeps it, so that the
/// driver can compare the two.
inline constexpr const char *kLayerAttr = "kiln.layer";

/// How the activations of a candidate are quantized: uint8 (or int8) values
/// with a rank-0 f32 scale and a rank-0 zero point of the values' type.
struct QuantizedActivations {
  Value values, scale, zeroPoint;

  /// `values` with a compile-time `scale` and `zeroPoint` (of the values'
  /// type), as those rank-0 constants.
  static QuantizedActivations fixed(OpBuilder &b, Location loc, Value values, float scale,
                                    int64_t zeroPoint);
};

/// Int8 weights [K, N] with a scale per column, as the product uses them.
struct QuantizedWeights {
  std::vector<int8_t> values;      // [K, N], row-major
  std::vector<float> scales;       // [N]
  std::vector<int32_t> columnSums; // [N], of `values`

  /// `values` [K, N] and `scales` [N], with their column sums.
  static QuantizedWeights of(std::vector<int8_t> values, std::vector<float> scales);
};

/// The candidate's f32 weights quantized to int8, symmetric per column
/// (alpha folded into the scales).
QuantizedWeights quantizeWeights(const ConstantWeightMatmul &candidate);

/// Replaces the candidate by the int8 product of `activations` with
/// `weights` (by default its own, quantized per column), dequantized to f32.
/// `candidate.weights` is only read for the default.
void replaceWithInt8(const ConstantWeightMatmul &candidate,
                     const QuantizedActivations &activations);
void replaceWithInt8(const ConstantWeightMatmul &candidate,
                     const QuantizedActivations &activations, const QuantizedWeights &weights);

/// Replaces a convolution (int8Activation succeeded) by the int8 one over
/// 8-bit `activations` of compile-time `scale` and `zeroPoint` (which pads
/// the border), the filter quantized per output channel, dequantized to f32.
/// The second form takes the int8 filter as `weights`: [C*KH*KW, F], a
/// scale per output channel.
void replaceConvWithInt8(Operation *conv, Value activations, float scale, int32_t zeroPoint);
void replaceConvWithInt8(Operation *conv, Value activations, float scale, int32_t zeroPoint,
                         const QuantizedWeights &weights);

/// `y` (the candidate's product) times alpha unless `alphaApplied`, plus
/// beta * C for a gemm with C: what follows the product of a gemm.
Value gemmEpilogue(OpBuilder &b, Location loc, const ConstantWeightMatmul &candidate, Value y,
                   bool alphaApplied);

/// The uint8 scale and zero point that map [min(lo, 0), max(hi, 0)] onto
/// [0, 255] (as DynamicQuantizeLinear computes them).
std::pair<float, uint8_t> uint8Parameters(float lo, float hi);

} // namespace mlir::kiln

#endif
