//===- WeightsFile.h - a model's weights file (.kw) --------------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_WEIGHTSFILE_H
#define KILN_TOOLS_KILN_COMPILE_WEIGHTSFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <string>

namespace kiln {
/// Writes the module's kiln.external_weights (kiln-externalize-weights) to
/// the weights file `path`; `dtypeOf` gives an element type's kiln_dtype.
bool writeWeightsFile(mlir::ModuleOp module, llvm::StringRef path,
                      llvm::function_ref<int32_t(mlir::Type)> dtypeOf, std::string &error);

/// Whether the module's weights fit the code that reads the weights file
/// `path` (kiln-compile --pack-weights --for): the same fingerprint. When
/// not, `error` says how they differ.
bool weightsFitFile(mlir::ModuleOp module, llvm::StringRef path, std::string &error);
} // namespace kiln

#endif
