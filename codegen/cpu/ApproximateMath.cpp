//===- ApproximateMath.cpp - f32 exp, erf, tanh as inline polynomials -----===//
//
// libm's expf and erff are calls, so LLVM cannot vectorize the elementwise
// loops around them: Softmax's exponentials and GELU's erf ran one element
// per call. Upstream's polynomial approximations are plain arithmetic
// (bit casts, FMAs, selects) that the loop vectorizer turns into AVX-512 or
// NEON code like the rest of the loop.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUAPPROXIMATEMATH
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnApproximateMathPass
    : mlir::kiln::impl::KilnCpuApproximateMathBase<KilnApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Only the functions whose error test/e2e/math-accuracy.test bounds;
    // the others stay libm calls.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName() || name == math::ErfOp::getOperationName() ||
             name == math::TanhOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
