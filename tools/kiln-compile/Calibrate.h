//===- Calibrate.h - activation ranges for static int8 ----------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_CALIBRATE_H
#define KILN_TOOLS_KILN_COMPILE_CALIBRATE_H

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <map>
#include <string>

namespace kiln {

/// How an activation's range is chosen from what calibration observed.
enum class CalibrationMethod { MinMax, Percentile, Entropy };

/// Parses "minmax", "percentile" or "entropy".
std::optional<CalibrationMethod> parseCalibrationMethod(llvm::StringRef name);

/// Builds the executable of a module at the kiln-opt stage into `path`.
using ExecutableBuilder =
    std::function<mlir::LogicalResult(mlir::ModuleOp module, llvm::StringRef path)>;

/// One calibration sample: its directory and its inputs' files.
struct CalibrationSample {
  std::string dir;
  std::vector<std::pair<std::string, std::string>> inputs; // name, .npy file
};

/// What calibration measured: the samples, how many activations it
/// calibrated, and the f32 model's outputs on each sample (by output name;
/// f32 outputs only), which the quantized model is measured against.
struct CalibrationResult {
  std::vector<CalibrationSample> samples;
  size_t activations = 0;
  std::vector<std::map<std::string, std::vector<float>>> references;
  std::vector<mlir::Location> layers; // the calibrated ops, by their kiln.layer index
};

/// How far one output of the quantized model is from the f32 model's over
/// all calibration samples.
struct OutputError {
  std::string output;
  double sqnrDb, maxAbsError;
  int layer = -1; // for the result of a calibrated op: its index in `layers`
};

/// A layer calibration watches: the op, and the value of it that is observed
/// (its activations).
struct ObservedLayer {
  mlir::Operation *op;
  mlir::Value observed; // null: only the layer's result is compared
};

/// What a calibration run produced for one observed value.
struct ObservedTensor {
  std::vector<float> values;
  std::vector<int64_t> shape;
};
using ObserveFn = std::function<void(size_t layer, const ObservedTensor &value)>;

/// Runs the f32 model (`module`, at the kiln-opt stage) on every sample of
/// `dir` (one sub-directory per sample, one <input>.npy per model input,
/// names sanitized as the executables do), hands each layer's observed
/// value to `observe`, tags each layer with its index (`kiln.layer`, which
/// measureOutputs compares) and records the f32 model's outputs and the
/// layers' results. Returns failure with `error` set for bad calibration
/// data or a failed run.
mlir::FailureOr<CalibrationResult> runCalibration(mlir::ModuleOp module, llvm::StringRef dir,
                                                  llvm::ArrayRef<ObservedLayer> layers,
                                                  const ExecutableBuilder &build,
                                                  const ObserveFn &observe, std::string &error);

/// Runs the f32 model (`module`, at the kiln-opt stage) on every sample of
/// `dir` (one sub-directory per sample, one <input>.npy per model input,
/// names sanitized as the executables do) and records on each int8
/// candidate op its activations' range (`kiln.activation_range`) and its
/// index (`kiln.layer`, which the quantized op keeps). Returns
/// failure with `error` set for bad calibration data or a failed run.
mlir::FailureOr<CalibrationResult> calibrate(mlir::ModuleOp module, llvm::StringRef dir,
                                             CalibrationMethod method,
                                             const ExecutableBuilder &build, std::string &error);

/// Runs the quantized model (`module`, at the kiln-opt stage; it is
/// compiled in place) on the calibration samples and compares its f32
/// outputs, and the result of each quantized op (tagged `kiln.layer`), with
/// the f32 model's.
mlir::FailureOr<std::vector<OutputError>>
measureOutputs(mlir::ModuleOp module, const CalibrationResult &calibration,
               const ExecutableBuilder &build, std::string &error);

} // namespace kiln

#endif
