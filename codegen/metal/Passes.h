//===- Passes.h - Metal's kernels (kiln-metal-*) ----------------*- C++ -*-===//
#ifndef KILN_CODEGEN_METAL_PASSES_H
#define KILN_CODEGEN_METAL_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DECL
#include "codegen/metal/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/metal/Passes.h.inc"
} // namespace mlir::kiln

#endif
