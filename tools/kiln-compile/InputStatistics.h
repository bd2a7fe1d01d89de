//===- InputStatistics.h - calibration for activation-aware pruning -*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_INPUTSTATISTICS_H
#define KILN_TOOLS_KILN_COMPILE_INPUTSTATISTICS_H

#include "tools/kiln-compile/Calibrate.h"

namespace kiln {

/// What calibration for pruning attaches to each prunable layer.
enum class PruneStatistics {
  None,        // nothing: magnitude pruning, measured against the dense model
  Norms,       // kiln.input_norms: Wanda
  NormsAndGram // and kiln.input_gram: SparseGPT
};

/// Runs the f32 model (`module`, at the kiln-opt stage, not yet pruned) on
/// the calibration samples of `dir` and attaches `which` statistics of its
/// input to every MatMul, Gemm and Conv with constant f32 weights (see
/// passes/Passes.h). The result holds the dense model's outputs, so that
/// measureOutputs can compare the pruned model with it.
mlir::FailureOr<CalibrationResult> calibrateForPruning(mlir::ModuleOp module,
                                                       llvm::StringRef dir,
                                                       PruneStatistics which,
                                                       const ExecutableBuilder &build,
                                                       std::string &error);

} // namespace kiln

#endif
