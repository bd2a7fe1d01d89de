//===- Epilogues.h - elementwise ops in a reduction's kernel ----*- C++ -*-===//
//
// Helpers of kiln-gpu-distribute: the elementwise op after a matmul (a bias,
// an activation, a residual add) is applied by the matmul's threads to the
// results they hold, instead of in a kernel of its own.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_EPILOGUES_H
#define KILN_CODEGEN_GPU_EPILOGUES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include <optional>

namespace mlir::kiln {

/// Readies the elementwise ops that only read a reduction's result for
/// being its epilogue: one that reads it through a tensor.expand_shape (a
/// projection split into heads, a convolution's pixels back into rows)
/// becomes one over the reduction's own shape, its other operands collapsed
/// alike; the ops that compute its other operands after the reduction move
/// before it where they can.
void prepareEpilogues(RewriterBase &rewriter, func::FuncOp func);

/// The elementwise op that reads `reduction`'s only result, if it is its
/// only user; `why` says why it cannot be applied in `reduction`'s tiles.
/// One of another element type (a rounding to 16 bits) cannot update the
/// tiles in place: it becomes the root, `reduction` fused into its tiles.
struct EpilogueCandidate {
  linalg::GenericOp op;
  std::optional<StringRef> why;
  bool changesType = false;
};
std::optional<EpilogueCandidate> epilogueCandidate(linalg::LinalgOp reduction,
                                                   DominanceInfo &dominance);

/// Applies `epilogue` to each thread's tile of its input where
/// `threadTile` (the thread-level tile of the input's producer, inside an
/// scf.forall over threads inside one over workgroups) computes it, and
/// replaces `epilogue` by the workgroups' result.
LogicalResult applyInThreadTiles(RewriterBase &rewriter, linalg::GenericOp epilogue,
                                 Operation *threadTile);

} // namespace mlir::kiln

#endif
