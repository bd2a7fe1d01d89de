//===- Passes.h - codegen passes every kiln target uses ----------*- C++ -*-===//
#ifndef KILN_CODEGEN_COMMON_PASSES_H
#define KILN_CODEGEN_COMMON_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DECL
#include "codegen/common/Passes.h.inc"

/// A byte count as the reports print it: "1.5 MiB", "12.0 KiB", "100 B".
std::string formatBytes(int64_t bytes);

#define GEN_PASS_REGISTRATION
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

#endif
