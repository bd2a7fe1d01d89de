//===- Calibrate.h - activation ranges for static int8 ----------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_CALIBRATE_H
#define KILN_TOOLS_KILN_COMPILE_CALIBRATE_H

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>

namespace kiln {

/// How an activation's range is chosen from what calibration observed.
enum class CalibrationMethod { MinMax, Percentile, Entropy };

/// Parses "minmax", "percentile" or "entropy".
std::optional<CalibrationMethod> parseCalibrationMethod(llvm::StringRef name);

/// Builds the executable of a module at the kiln-opt stage into `path`.
using ExecutableBuilder =
    std::function<mlir::LogicalResult(mlir::ModuleOp module, llvm::StringRef path)>;

/// What calibration measured, for the report.
struct CalibrationSummary {
  size_t samples = 0, activations = 0;
};

/// Runs the f32 model (`module`, at the kiln-opt stage) on every sample of
/// `dir` (one sub-directory per sample, one <input>.npy per model input,
/// names sanitized as the executables do) and records on each int8
/// candidate op its activations' range (`kiln.activation_range`). Returns
/// failure with `error` set for bad calibration data or a failed run.
mlir::FailureOr<CalibrationSummary> calibrate(mlir::ModuleOp module, llvm::StringRef dir,
                                              CalibrationMethod method,
                                              const ExecutableBuilder &build,
                                              std::string &error);

} // namespace kiln

#endif
