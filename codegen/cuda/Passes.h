//===- Passes.h - GPU kernels to CUDA (kiln-cuda-*) -------------*- C++ -*-===//
#ifndef KILN_CODEGEN_CUDA_PASSES_H
#define KILN_CODEGEN_CUDA_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DECL
#include "codegen/cuda/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

#endif
