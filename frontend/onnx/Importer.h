//===- Importer.h - ONNX model -> kiln dialect ------------------*- C++ -*-===//
#ifndef KILN_FRONTEND_ONNX_IMPORTER_H
#define KILN_FRONTEND_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::onnx_frontend {

struct ImportOptions {
  /// Shapes pinned by --input-shape NAME=1x3x224x224.
  llvm::StringMap<std::vector<int64_t>> inputShapes;
  /// Inputs bound to a constant by --input-value NAME=V: every element is V
  /// and the input disappears from the compiled model's signature.
  llvm::StringMap<double> inputValues;
};

/// Loads, checks and imports an ONNX model into a module holding one
/// `func.func @main` of kiln ops. Returns null after printing a diagnostic
/// (naming the file, and the node, op type and opset where one is at fault).
mlir::OwningOpRef<mlir::ModuleOp> importModel(const std::string &path,
                                              const ImportOptions &options,
                                              mlir::MLIRContext &context);

/// importModel() of a model already in memory; `path` names it in messages.
mlir::OwningOpRef<mlir::ModuleOp> importModelBytes(llvm::StringRef bytes,
                                                   const std::string &path,
                                                   const ImportOptions &options,
                                                   mlir::MLIRContext &context);

} // namespace kiln::onnx_frontend

#endif
