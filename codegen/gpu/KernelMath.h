//===- KernelMath.h - math ops the GPU targets lack, rewritten --*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_KERNELMATH_H
#define KILN_CODEGEN_GPU_KERNELMATH_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// math.ipowi of scalar integers as a loop over the exponent's bits
/// (neither SPIR-V nor NVVM has an integer power).
void populateIntegerPowerBySquaringPattern(RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif
