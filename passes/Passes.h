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
} // namespace mlir::kiln

#endif
