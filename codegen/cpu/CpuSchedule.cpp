//===- CpuSchedule.cpp - transform-dialect schedule for CPU kernels -------===//
//
// Matmuls are tiled to register blocks (rows x vector registers x K steps)
// and vectorized into vector.contract. The schedule is a transform-dialect
// script generated for the tiles chosen for this module and the target's
// vector width, applied in-process; `kiln-opt --kiln-cpu-schedule` replays it.
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

/// The largest divisor of `extent` that is at most `limit`: tiles then cover
/// the iteration space exactly and vectorize without masks.
static int64_t largestDivisorUpTo(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, limit); d > 1; --d)
    if (extent % d == 0)
      return d;
  return 1;
}

/// Columns per register tile: two or one whole vector registers when they
/// divide the extent; otherwise the largest divisor that fits one register
/// (wider odd tiles split into mixed-width vectors and spill).
static int64_t chooseColumns(int64_t extent, int64_t vectorWidth) {
  for (int64_t regs : {2, 1})
    if (extent % (regs * vectorWidth) == 0)
      return regs * vectorWidth;
  return largestDivisorUpTo(extent, vectorWidth);
}

static std::string tileList(const mlir::kiln::MatmulTile &t) {
  return llvm::formatv("{0}{1}, {2}, {3}", t.batched ? "1, " : "", t.m, t.n, t.k).str();
}

/// The register tile over the parallel dims only (the scf.forall's tile sizes).
static std::string parallelTileList(const mlir::kiln::MatmulTile &t) {
  return llvm::formatv("{0}{1}, {2}", t.batched ? "1, " : "", t.m, t.n).str();
}

/// Tile sizes of the K loop inside one register tile.
static std::string reductionTileList(const mlir::kiln::MatmulTile &t) {
  return llvm::formatv("{0}0, 0, {1}", t.batched ? "0, " : "", t.k).str();
}

mlir::kiln::MatmulTile mlir::kiln::chooseRegisterTile(bool batched, int64_t m, int64_t n,
                                                      int64_t vectorWidth) {
  // AVX-512 and NEON have 32 vector registers: 8 rows x 2 registers of sums
  // fit beside the B registers and a broadcast. AVX2 (8 floats) has 16: at
  // most 6 x 2 sums, or the tile spills in its inner loop.
  int64_t maxRows = vectorWidth == 8 ? 6 : 8;
  return {batched, largestDivisorUpTo(m, maxRows), chooseColumns(n, vectorWidth), 1};
}

/// Packed contractions (kiln-pack-matmul): one register tile per (column
/// panel, row panel), then the K loop, as for plain matmuls. The copies that
/// pack B move one panel row (a whole vector or two) per step, in parallel
/// over panels; as scalar loops LLVM could not vectorize them (the source
/// and the panel buffer may alias).
static constexpr const char *packedSchedule = R"mlir(
    %packed = transform.structured.match ops{["linalg.contract"]} attributes{kiln.packed} in %root
        : (!transform.any_op) -> !transform.any_op
    %packedTile, %packedForall = transform.structured.tile_using_forall %packed tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %packedK, %packedLoop = transform.structured.tile_using_for %packedTile tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %packedK {create_named_contraction} : !transform.any_op
    %pack = transform.structured.match ops{["linalg.generic"]} attributes{kiln.pack} in %root
        : (!transform.any_op) -> !transform.any_op
    %packPanel, %packForall = transform.structured.tile_using_forall %pack tile_sizes [1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %packRow, %packLoop = transform.structured.tile_using_for %packPanel tile_sizes [0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %packRow : !transform.any_op
)mlir";

std::string mlir::kiln::buildCpuScheduleScript(ArrayRef<MatmulTile> tiles, bool packed) {
  std::string body = packed ? packedSchedule : "";
  for (auto [i, t] : llvm::enumerate(tiles)) {
    // Register tiles form an scf.forall (run on the thread pool after
    // kiln-outline-parallel-loops); each tile loops over K in steps of t.k.
    body += llvm::formatv(R"mlir(
    %op{0} = transform.structured.match ops{{["{1}"]} attributes{{kiln.tile = array<i64: {2}>} in %root
        : (!transform.any_op) -> !transform.any_op
    %tile{0}, %forall{0} = transform.structured.tile_using_forall %op{0} tile_sizes [{3}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled{0}, %k{0} = transform.structured.tile_using_for %tile{0} tile_sizes [{4}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %tiled{0} {{create_named_contraction} : !transform.any_op
)mlir",
                          i, t.batched ? "linalg.batch_matmul" : "linalg.matmul", tileList(t),
                          parallelTileList(t), reductionTileList(t))
                .str();
  }
  return llvm::formatv(R"mlir(
module attributes {{transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}) {{{0}
    %funcs = transform.structured.match ops{{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
    } : !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
    } : !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_outerproduct
    } : !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
    } : !transform.any_op
    transform.yield
  }
}
)mlir",
                       body)
      .str();
}

namespace {
/// Chooses each matmul's register tile (chooseRegisterTile): one K step at a
/// time, an outer product per step. The choice is recorded on the op as
/// `kiln.tile`, which the schedule script matches.
SmallVector<mlir::kiln::MatmulTile> chooseTiles(ModuleOp module, int64_t vectorWidth) {
  SmallVector<mlir::kiln::MatmulTile> distinct;
  module.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
      return;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return;
    size_t m = ranges.size() - 3;
    mlir::kiln::MatmulTile tile = mlir::kiln::chooseRegisterTile(
        isa<linalg::BatchMatmulOp>(op), ranges[m], ranges[m + 1], vectorWidth);
    SmallVector<int64_t> sizes;
    if (tile.batched)
      sizes.push_back(1);
    sizes.append({tile.m, tile.n, tile.k});
    op->setAttr("kiln.tile", DenseI64ArrayAttr::get(op->getContext(), sizes));
    if (!llvm::is_contained(distinct, tile))
      distinct.push_back(tile);
  });
  return distinct;
}

struct KilnCpuSchedulePass : mlir::kiln::impl::KilnCpuScheduleBase<KilnCpuSchedulePass> {
  using KilnCpuScheduleBase::KilnCpuScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mlir::kiln::MatmulTile> tiles = chooseTiles(module, vectorWidth);
    bool packed = module
                      .walk([](linalg::LinalgOp op) {
                        return op->hasAttr("kiln.packed") || op->hasAttr("kiln.pack")
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      })
                      .wasInterrupted();
    if (tiles.empty() && !packed)
      return;
    std::string script = mlir::kiln::buildCpuScheduleScript(tiles, packed);
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
