//===- CpuSchedule.cpp - transform-dialect schedule for CPU kernels -------===//
//
// Matmuls are tiled to register blocks (rows x vector registers x K steps)
// and vectorized into vector.contract. The schedule is a transform-dialect
// script generated for the tiles chosen for this module and the target's
// vector width, applied in-process; `kiln-opt --kiln-cpu-schedule` replays it.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/cpu/CpuBackend.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUSCHEDULE
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

/// Columns per register tile: two or one whole vector registers when they
/// divide the extent; otherwise the largest divisor that fits one register
/// (wider odd tiles split into mixed-width vectors and spill).
static int64_t chooseColumns(int64_t extent, int64_t vectorWidth) {
  for (int64_t regs : {2, 1})
    if (extent % (regs * vectorWidth) == 0)
      return regs * vectorWidth;
  return mlir::kiln::largestDivisorUpTo(extent, vectorWidth);
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

int64_t mlir::kiln::maxRegisterRows(int64_t vectorWidth) {
  // AVX-512 and NEON have 32 vector registers: 8 rows x 2 registers of sums
  // fit beside the B registers and a broadcast. AVX2 (8 floats) has 16: at
  // most 6 x 2 sums, or the tile spills in its inner loop.
  return vectorWidth == 8 ? 6 : 8;
}

mlir::kiln::MatmulTile mlir::kiln::chooseRegisterTile(bool batched, int64_t m, int64_t n,
                                                      int64_t vectorWidth) {
  return {batched, mlir::kiln::largestDivisorUpTo(m, maxRegisterRows(vectorWidth)),
          chooseColumns(n, vectorWidth), 1};
}

/// Packed contractions (kiln-cpu-pack-matmul): one register tile per (column
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

/// Row reductions (kiln.row_reduction = loop count): one task per row, the
/// row reduced into a vector of partial results (`width` lanes) by a loop of
/// vector ops, then the lanes into the result (vector.reduction, a shuffle
/// tree in LLVM). As scalar loops, LLVM kept the accumulator in memory (the
/// output may alias the input, as far as it knows) and could not vectorize
/// them: Softmax's sums of exponentials and LayerNormalization's means ran
/// one element at a time.
static std::string rowReductionSchedule(int64_t loops, int64_t width) {
  std::string rows, reduced;
  for (int64_t d = 0; d + 1 < loops; ++d) {
    rows += "1, ";
    reduced += "0, ";
  }
  return llvm::formatv(R"mlir(
    %reduction{0} = transform.structured.match ops{{["linalg.generic"]}
        attributes{{kiln.row_reduction = {0} : i64} in %root
        : (!transform.any_op) -> !transform.any_op
    %row{0}, %rowForall{0} = transform.structured.tile_using_forall %reduction{0}
        tile_sizes [{1}0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %lanesInit{0}, %lanes{0}, %merge{0}, %lanesLoop{0} =
        transform.structured.tile_reduction_using_for %row{0} by tile_sizes = [{2}{3}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %lanesInit{0} : !transform.any_op
    transform.structured.vectorize %lanes{0} : !transform.any_op
    transform.structured.vectorize %merge{0} : !transform.any_op
    transform.apply_patterns to %rowForall{0} {{
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
    } : !transform.any_op
)mlir",
                       loops, rows, reduced, width)
      .str();
}

std::string mlir::kiln::buildCpuScheduleScript(ArrayRef<MatmulTile> tiles, bool packed,
                                               ArrayRef<int64_t> rowReductionLoops,
                                               int64_t vectorWidth) {
  std::string body = packed ? packedSchedule : "";
  for (int64_t loops : rowReductionLoops)
    body += rowReductionSchedule(loops, vectorWidth);
  for (auto [i, t] : llvm::enumerate(tiles)) {
    // Register tiles form an scf.forall (run on the thread pool after
    // kiln-cpu-outline-parallel-loops); each tile loops over K in steps of t.k.
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

/// Whether operand `operand` of `op` keeps a reduced dimension as size 1:
/// its map's last result is the constant 0 (kiln lowers Softmax and
/// LayerNormalization's statistics so).
bool keepsUnitDimension(linalg::GenericOp op, OpOperand &operand) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  auto zero = map.getNumResults() >= 2 ? dyn_cast<AffineConstantExpr>(map.getResults().back())
                                       : AffineConstantExpr();
  return type && zero && zero.getValue() == 0 && type.getShape().back() == 1;
}

/// The operand's map without a kept unit dimension.
AffineMap mapWithoutUnitDimension(linalg::GenericOp op, OpOperand &operand) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  return keepsUnitDimension(op, operand) ? map.dropResult(map.getNumResults() - 1) : map;
}

/// Whether `op` reduces the innermost, contiguous dimension of its inputs
/// with one combiner that has a neutral element (sum, product, max, min),
/// over a multiple of `width` f32 elements, in static shapes.
bool isRowReduction(linalg::GenericOp op, int64_t width) {
  int64_t loops = op.getNumLoops();
  if (loops < 2 || op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics() ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges.back() % width != 0)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = mapWithoutUnitDimension(op, operand);
    if (!getElementTypeOrSelf(operand.get().getType()).isF32() || !map.isProjectedPermutation())
      return false;
    // The reduced dimension, where read, must be the operand's innermost.
    std::optional<unsigned> at =
        map.getResultPosition(getAffineDimExpr(loops - 1, op.getContext()));
    if (at && *at != map.getNumResults() - 1)
      return false;
  }
  SmallVector<Operation *> combiner;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiner) || combiner.size() != 1)
    return false;
  return arith::getNeutralElement(combiner.front()).has_value();
}

/// Rewrites `op` so that no operand keeps a unit dimension (the vectorizer
/// does not take constant indexing-map results): such operands are
/// collapsed, and a collapsed result is expanded back. Returns the new op.
linalg::GenericOp dropUnitDimensions(linalg::GenericOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<AffineMap> maps;
  SmallVector<Value> operands;
  SmallVector<ReassociationIndices> resultGroups;
  for (OpOperand &operand : op->getOpOperands()) {
    maps.push_back(mapWithoutUnitDimension(op, operand));
    operands.push_back(operand.get());
    if (!keepsUnitDimension(op, operand))
      continue;
    int64_t rank = cast<RankedTensorType>(operand.get().getType()).getRank();
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 2 < rank; ++d)
      groups.push_back({d});
    groups.push_back({rank - 2, rank - 1});
    operands.back() = tensor::CollapseShapeOp::create(b, loc, operand.get(), groups);
    if (op.isDpsInit(&operand))
      resultGroups = groups;
  }
  auto clone = cast<linalg::GenericOp>(b.clone(*op));
  clone->setOperands(operands);
  clone.getResult(0).setType(clone.getDpsInits()[0].getType());
  clone.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
  Value result = clone.getResult(0);
  if (!resultGroups.empty())
    result =
        tensor::ExpandShapeOp::create(b, loc, op.getResult(0).getType(), result, resultGroups);
  op.getResult(0).replaceAllUsesWith(result);
  op.erase();
  return clone;
}

/// Tags the row reductions `kiln.row_reduction = <loop count>`; returns the
/// distinct loop counts.
SmallVector<int64_t> tagRowReductions(ModuleOp module, int64_t width) {
  SmallVector<int64_t> loopCounts;
  SmallVector<linalg::GenericOp> candidates;
  module.walk([&](linalg::GenericOp op) {
    if (isRowReduction(op, width))
      candidates.push_back(op);
  });
  for (linalg::GenericOp candidate : candidates) {
    linalg::GenericOp op = dropUnitDimensions(candidate);
    int64_t loops = op.getNumLoops();
    op->setAttr("kiln.row_reduction",
                IntegerAttr::get(IntegerType::get(op.getContext(), 64), loops));
    if (!llvm::is_contained(loopCounts, loops))
      loopCounts.push_back(loops);
  }
  return loopCounts;
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
    SmallVector<int64_t> rowReductions = tagRowReductions(module, vectorWidth);
    if (tiles.empty() && !packed && rowReductions.empty())
      return;
    std::string script =
        mlir::kiln::buildCpuScheduleScript(tiles, packed, rowReductions, vectorWidth);
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
