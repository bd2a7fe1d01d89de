//===- SparseGPT.h - pruning that updates the remaining weights -*- C++ -*-===//
//
// SparseGPT (Frantar and Alistarh, 2023): prune a layer's inputs one at a
// time, in order, and after each spread the error it made over the inputs
// not yet visited, weighted by the inverse Hessian of the layer's squared
// output error on calibration data (H = X^T X). What is kept compensates
// for what was zeroed, an approximation of Optimal Brain Surgeon that costs
// O(K^3 + N K^2) for K inputs and N outputs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_SPARSEGPT_H
#define KILN_PASSES_SPARSEGPT_H

#include "passes/Passes.h"
#include "passes/WeightMatrix.h"

#include <string>
#include <vector>

namespace mlir::kiln {

/// Prunes `w` to `pattern` (unstructured: `fraction` of each output's
/// weights in each block of 128 inputs; N:M) with the SparseGPT update,
/// given the Gram matrix `gram` of the layer's inputs ([K, K], row-major).
/// Failure, with `why`, for block patterns and when the dampened Gram
/// matrix is not positive definite.
LogicalResult sparseGptPrune(WeightMatrix &w, const PrunePattern &pattern, double fraction,
                             const std::vector<float> &gram, std::string &why);

} // namespace mlir::kiln

#endif
