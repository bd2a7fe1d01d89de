//===- Passes.h - kiln graph passes -----------------------------*- C++ -*-===//
//
// Passes on the kiln dialect (fusion, folding), before codegen. They know the
// kiln dialect and nothing about targets.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// A kiln-prune pattern: unstructured, N of every M inputs kept, or blocks of
/// R outputs by C inputs.
struct PrunePattern {
  enum Kind { Unstructured, NofM, Block } kind = Unstructured;
  int64_t a = 1, b = 1; // N and M, or R and C
};
/// Parses "unstructured", "N:M" (0 < N < M) or "block:RxC".
std::optional<PrunePattern> parsePrunePattern(llvm::StringRef text);

/// Calibration statistics of a layer's input that make kiln-prune
/// activation-aware (the driver attaches them; kiln-prune reads and removes
/// them): the L2 norm of each input channel over the calibration data
/// (DenseF32ArrayAttr; Wanda), and the Gram matrix X^T X of the layer's
/// input rows (f32 [K, K], a conv's unfolded windows; SparseGPT).
inline constexpr const char *kInputNormsAttr = "kiln.input_norms";
inline constexpr const char *kInputGramAttr = "kiln.input_gram";
} // namespace mlir::kiln

#endif
