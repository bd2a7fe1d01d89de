//===- CpuSchedule.cpp - transform-dialect schedule for CPU kernels -------===//
//
// Matmuls that divide into whole tiles are tiled to an MxN register block (8 rows x two vector registers)
// with a K step of 1 and vectorized with masks for the partial edge tiles.
// The schedule is a transform-dialect script built for the target's vector
// width and applied in-process, so it can also be printed and replayed with
// `kiln-opt --transform-interpreter`.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "codegen/cpu/CpuPipeline.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUSCHEDULE
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

std::string mlir::kiln::buildCpuScheduleScript(int64_t vectorWidth) {
  int64_t rows = 8, cols = 2 * vectorWidth;
  return llvm::formatv(R"mlir(
module attributes {{transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}) {
    %mm = transform.structured.match ops{{["linalg.matmul"]} attributes{{kiln.vectorize} in %root
        : (!transform.any_op) -> !transform.any_op
    %mm_tile, %mm_loops:3 = transform.structured.tile_using_for %mm tile_sizes [{0}, {1}, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %mm_tile vector_sizes [{0}, {1}, 1] : !transform.any_op

    %bmm = transform.structured.match ops{{["linalg.batch_matmul"]} attributes{{kiln.vectorize} in %root
        : (!transform.any_op) -> !transform.any_op
    %bmm_tile, %bmm_loops:4 = transform.structured.tile_using_for %bmm tile_sizes [1, {0}, {1}, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %bmm_tile vector_sizes [1, {0}, {1}, 1] : !transform.any_op

    %funcs = transform.structured.match ops{{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
)mlir",
                       rows, cols)
      .str();
}

namespace {
/// Marks the matmuls whose M and N divide into whole register tiles. Edge
/// tiles would need masked vectorization, which MLIR 22 cannot lower for
/// these contractions yet; the others stay scalar loops for now.
void markVectorizable(ModuleOp module, int64_t vectorWidth) {
  int64_t rows = 8, cols = 2 * vectorWidth;
  module.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
      return;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    size_t m = ranges.size() - 3, n = ranges.size() - 2;
    if (ShapedType::isDynamic(ranges[m]) || ShapedType::isDynamic(ranges[n]) ||
        ranges[m] % rows != 0 || ranges[n] % cols != 0)
      return;
    op->setAttr("kiln.vectorize", UnitAttr::get(op->getContext()));
  });
}

struct KilnCpuSchedulePass : mlir::kiln::impl::KilnCpuScheduleBase<KilnCpuSchedulePass> {
  using KilnCpuScheduleBase::KilnCpuScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markVectorizable(module, vectorWidth);
    std::string script = mlir::kiln::buildCpuScheduleScript(vectorWidth);
    OwningOpRef<ModuleOp> schedule =
        parseSourceString<ModuleOp>(script, ParserConfig(&getContext()));
    if (!schedule) {
      module.emitError("internal error: the CPU schedule script does not parse");
      return signalPassFailure();
    }
    Operation *entry = transform::detail::findTransformEntryPoint(
        module, *schedule, transform::TransformDialect::kTransformEntryPointSymbolName);
    if (!entry ||
        failed(transform::applyTransformNamedSequence(module, entry, *schedule,
                                                      transform::TransformOptions())))
      return signalPassFailure();
  }
};
} // namespace
