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
} // namespace mlir::kiln

#endif
