//===- WeightMatrix.h - constant weights seen as a [K, N] matrix -*- C++ -*-===//
//
// Pruning and sparsity see the constant weights of a MatMul, Gemm or Conv as
// one matrix of K inputs by N outputs, whatever their layout: a matmul's
// [K, N] right operand, a gemm's B ([N, K] with trans_b), a conv's
// [F, C, kh, kw] filter (N = F, K = C * kh * kw).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_WEIGHTMATRIX_H
#define KILN_PASSES_WEIGHTMATRIX_H

#include "dialects/kiln/KilnDialect.h"
#include "passes/Quantization.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::kiln {

struct WeightMatrix {
  Operation *layer;     // the matmul, gemm or conv
  unsigned operand;     // the operand that holds the weights
  int64_t inputs;       // K
  int64_t outputs;      // N
  bool outputMajor;     // stored [N, K] (gemm trans_b, conv) rather than [K, N]
  std::vector<float> values; // as stored
  int64_t window = 1;   // a conv's kh * kw: K = channels per group * window
  int64_t groups = 1;   // a conv's groups

  int64_t index(int64_t k, int64_t n) const {
    return outputMajor ? n * inputs + k : k * outputs + n;
  }
  float at(int64_t k, int64_t n) const { return values[index(k, n)]; }
  /// The channel of the layer's input that input k of output n reads: k for
  /// a matmul or gemm, the channel of the conv's group of n for a conv.
  int64_t inputChannel(int64_t k, int64_t n) const {
    return n / (outputs / groups) * (inputs / window) + k / window;
  }
  int64_t inputChannels() const { return groups * inputs / window; }
};

/// The weights of `layer` when it is a kiln.matmul with a rank-2 right
/// operand, a kiln.gemm or a kiln.conv, and the weights are a kiln.constant
/// of f32; otherwise nullopt with `why` saying what is missing.
std::optional<WeightMatrix> weightMatrixOf(Operation *layer, std::string &why);
/// The weights of a matmul or gemm already found to have constant f32 ones.
WeightMatrix weightMatrixOf(const ConstantWeightMatmul &matmul);

} // namespace mlir::kiln

#endif
