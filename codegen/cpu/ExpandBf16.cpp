//===- ExpandBf16.cpp - f32 <-> bf16 in integer arithmetic ----------------===//
//
// Without an instruction for it (AVX512-BF16 on x86), LLVM lowers an f32 ->
// bf16 truncation to a call of __truncsfbf2, which compiler-rt has but
// Debian 12's libgcc does not: the executable would not link. The
// conversions are rounded in integer arithmetic instead (upstream's bf16
// patterns of arith-expand, alone: its other expansions would change code
// that has no bf16 in it).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUEXPANDBF16
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnCpuExpandBf16Pass : mlir::kiln::impl::KilnCpuExpandBf16Base<KilnCpuExpandBf16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
