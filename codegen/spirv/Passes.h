//===- Passes.h - GPU kernels to SPIR-V (kiln-spirv-*) ----------*- C++ -*-===//
#ifndef KILN_CODEGEN_SPIRV_PASSES_H
#define KILN_CODEGEN_SPIRV_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DECL
#include "codegen/spirv/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/spirv/Passes.h.inc"
} // namespace mlir::kiln

#endif
