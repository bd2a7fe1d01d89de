//===- PruneTest.cpp - SparseGPT against a NumPy reference ----------------===//
//
// sparseGptPrune (passes/SparseGPT.cpp) checked against a straightforward
// NumPy implementation of the paper's algorithm (full inverse, every later
// column updated at each step, no lazy batches; each output's share of a
// block's weights pruned, as kiln does), and for properties that
// hold on any input: the pattern is met, and the output error on the
// calibration rows is below that of the same mask without the update.
//
//===----------------------------------------------------------------------===//
#include "passes/SparseGPT.h"

#include <gtest/gtest.h>

#include <random>

using mlir::kiln::PrunePattern;
using mlir::kiln::sparseGptPrune;
using mlir::kiln::WeightMatrix;

namespace {

/// A [K, N] weight matrix stored input-major.
WeightMatrix matrix(int64_t K, int64_t N, std::vector<float> values) {
  return WeightMatrix{nullptr, 1, K, N, /*outputMajor=*/false, std::move(values)};
}

std::vector<float> gramOf(const std::vector<float> &x, int64_t rows, int64_t K) {
  std::vector<float> g(K * K, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j)
        g[i * K + j] += x[r * K + i] * x[r * K + j];
  return g;
}

/// sum over rows and outputs of ((dense - pruned) x)^2.
double outputError(const WeightMatrix &dense, const WeightMatrix &pruned,
                   const std::vector<float> &x, int64_t rows) {
  double e = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < dense.outputs; ++n) {
      double d = 0;
      for (int64_t k = 0; k < dense.inputs; ++k)
        d += (dense.at(k, n) - pruned.at(k, n)) * x[r * dense.inputs + k];
      e += d * d;
    }
  return e;
}

TEST(SparseGPT, MatchesNumPyReference) {
  // Five rows in which inputs 0 and 1 move together (test/passes/kiln-prune.mlir).
  std::vector<float> x = {1, 1, 0, 2, 2, 2.1f, 1, 0, 0, 0.1f, -1, 1, 1, 0.9f, 2, 1, 3, 3, 0, -1};
  WeightMatrix w = matrix(4, 2, {0.5f, -9, -2, 1, 3, -7, -4, 8});
  std::string why;
  ASSERT_TRUE(succeeded(sparseGptPrune(w, PrunePattern{}, 0.5, gramOf(x, 5, 4), why))) << why;
  // ref.sparsegpt(W.T, X.T @ X, 0.5).T in NumPy.
  const double want[] = {0, 0, 0, 0, 2.06156628, -12.39599396, -3.86797639, 8.75913577};
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(w.values[i], want[i], 1e-4) << "element " << i;
}

TEST(SparseGPT, MeetsPatternAndBeatsPlainMasking) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t K = 256, N = 24, rows = 300; // K > 128: two blocks of inputs
  std::vector<float> x(rows * K);
  for (int64_t r = 0; r < rows; ++r) {
    float shared = normal(rng);
    for (int64_t k = 0; k < K; ++k)
      x[r * K + k] = normal(rng) + (k % 8 == 0 ? 3 * shared : 0.0f); // correlated inputs
  }
  std::vector<float> values(K * N);
  for (float &v : values)
    v = normal(rng);
  std::vector<float> gram = gramOf(x, rows, K);
  for (PrunePattern p : {PrunePattern{}, PrunePattern{PrunePattern::NofM, 2, 4}}) {
    WeightMatrix dense = matrix(K, N, values), pruned = dense;
    std::string why;
    ASSERT_TRUE(succeeded(sparseGptPrune(pruned, p, 0.5, gram, why))) << why;
    WeightMatrix masked = dense; // the same zeros, no update
    int64_t zeros = 0;
    for (size_t i = 0; i < values.size(); ++i)
      if (pruned.values[i] == 0) {
        masked.values[i] = 0;
        ++zeros;
      }
    EXPECT_EQ(zeros, K * N / 2);
    if (p.kind == PrunePattern::NofM)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k0 = 0; k0 < K; k0 += 4) {
          int kept = 0;
          for (int64_t k = k0; k < k0 + 4; ++k)
            kept += pruned.at(k, n) != 0;
          EXPECT_EQ(kept, 2) << "output " << n << ", inputs " << k0 << "..";
        }
    EXPECT_LT(outputError(dense, pruned, x, rows), 0.8 * outputError(dense, masked, x, rows));
  }
}

TEST(SparseGPT, RefusesBlocksAndIndefiniteGram) {
  WeightMatrix w = matrix(2, 2, {1, 2, 3, 4});
  std::string why;
  EXPECT_TRUE(failed(sparseGptPrune(w, PrunePattern{PrunePattern::Block, 1, 2}, 0.5,
                                    {1, 0, 0, 1}, why)));
  EXPECT_EQ(why, "SparseGPT prunes unstructured and N:M patterns, not blocks");
  EXPECT_TRUE(failed(sparseGptPrune(w, PrunePattern{}, 0.5, {1, 0, 0, -5}, why)));
  EXPECT_EQ(why, "the Gram matrix of its calibration inputs is not positive definite");
  EXPECT_EQ(w.values, (std::vector<float>{1, 2, 3, 4})); // untouched
}

} // namespace
