//===- Distribute.cpp - linalg on tensors to workgroups and threads -------===//
//
// The first step of the GPU pipeline: every root linalg op becomes an
// scf.forall over workgroups (#gpu.block) whose body computes one tile of
// it, with its single-use producers fused in, and that tile an scf.forall
// over the workgroup's threads (#gpu.thread). Bufferization, the mapping
// to gpu.launch and the kernels' outlining come after it.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Epilogues.h"
#include "codegen/gpu/GpuTarget.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include <memory>
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "dialects/kiln/KilnDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUDISTRIBUTE
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Replaces each tensor.dim of `op`'s results by the size the op reifies
/// from its operands (a linalg op's init, a tensor.empty's sizes), so that
/// a fused producer left with only shape queries can go.
void answerShapeQueries(RewriterBase &rewriter, Operation *op) {
  SmallVector<tensor::DimOp> dims;
  for (Operation *user : op->getUsers())
    if (auto dim = dyn_cast<tensor::DimOp>(user))
      dims.push_back(dim);
  if (dims.empty())
    return;
  rewriter.setInsertionPoint(op);
  ReifiedRankedShapedTypeDims shapes;
  if (failed(reifyResultShapes(rewriter, op, shapes)))
    return;
  for (tensor::DimOp dim : dims) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      continue;
    unsigned result = cast<OpResult>(dim.getSource()).getResultNumber();
    OpFoldResult size = shapes[result][*index];
    rewriter.setInsertionPoint(dim);
    rewriter.replaceOp(dim, getValueOrCreateConstantIndexOp(rewriter, dim.getLoc(), size));
  }
}

/// Tiles `op` into an scf.forall by `tileSizes`, fusing the producers that
/// nothing else uses (no reduction but `reduction`, whose epilogue `op`
/// is); replaces its results. Returns the tiled op.
FailureOr<TilingInterface> tileAndFuse(RewriterBase &rewriter, TilingInterface op,
                                       ArrayRef<int64_t> tileSizes, bool threads,
                                       Operation *reduction = nullptr) {
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tileSizes));
  tiling.setMapping(mappingFor(rewriter.getContext(), tileSizes, threads));
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  // The ops whose originals the loop replaces: the root, then each fused
  // producer (its original stays until the fusion is done).
  auto replaced = std::make_shared<DenseSet<Operation *>>();
  replaced->insert(op.getOperation());
  options.setFusionControlFn([replaced, reduction](tensor::ExtractSliceOp slice,
                                                   OpResult producer, bool)
                                 -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
    // A kernel built before the distribution (an scf.forall, such as
    // attention's) is no producer to fuse: it is not tiled, and the clone
    // left in the loop, its workgroup buffers and barriers side effects,
    // would stay.
    if (!isa<TilingInterface>(producer.getOwner()))
      return std::nullopt;
    // A reduction (a matmul) is a root of its own: fused into the tiles of
    // its consumer it would be scheduled by the consumer's tile sizes
    // (unless the consumer is its epilogue, tiled by its sizes).
    auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer.getOwner());
    if (linalgProducer && linalgProducer.getNumReductionLoops() > 0 &&
        producer.getOwner() != reduction)
      return std::nullopt;
    // An operand a reduction reads whole along its reduced loops (a
    // matmul's rows and columns) would be recomputed by every thread that
    // reads it: such producers are roots too. Inits (a fill) fuse.
    for (OpOperand &use : slice->getUses()) {
      auto reader = dyn_cast<linalg::LinalgOp>(use.getOwner());
      if (reader && reader.getNumReductionLoops() > 0 && reader.isDpsInput(&use))
        return std::nullopt;
    }
    // Fused, a producer with users outside the loop (other than the ops
    // the loop replaces) would be computed twice. (Shape queries are
    // answered from the producer's operands instead.)
    auto loop = slice->getParentOfType<scf::ForallOp>();
    for (Operation *user : producer.getUsers())
      if (!replaced->contains(user) && !loop->isAncestor(user) && !isa<tensor::DimOp>(user))
        return std::nullopt;
    replaced->insert(producer.getOwner());
    return scf::SCFTileAndFuseOptions::ControlFnResult{};
  });
  FailureOr<scf::SCFTileAndFuseResult> result =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, op, options);
  if (failed(result))
    return failure();
  for (OpResult r : op->getResults())
    rewriter.replaceAllUsesWith(r, result->replacements.lookup(r));
  rewriter.eraseOp(op);
  for (Operation *producer : result->fusedProducers) {
    answerShapeQueries(rewriter, producer);
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }
  return cast<TilingInterface>(result->tiledAndFusedOps.front());
}

/// Whether `insert` puts back the result of an op computed in place on the
/// same slice of its destination (a chunk of a batch): bufferized, both
/// are one view of one buffer, and the copy between them folds away.
bool insertsInPlace(tensor::InsertSliceOp insert) {
  auto result = dyn_cast<OpResult>(insert.getSource());
  auto op = result ? dyn_cast<DestinationStyleOpInterface>(result.getOwner()) : nullptr;
  if (!op)
    return false;
  auto slice = op.getTiedOpOperand(result)->get().getDefiningOp<tensor::ExtractSliceOp>();
  return slice && slice.getSource() == insert.getDest() &&
         slice.getMixedOffsets() == insert.getMixedOffsets() &&
         slice.getMixedSizes() == insert.getMixedSizes() &&
         slice.getMixedStrides() == insert.getMixedStrides();
}

/// Turns the data movement that bufferization would make host copies of
/// into linalg ops, which become kernels: a tensor.pad into a fill and an
/// insert_slice, and each tensor.insert_slice (a concatenation's parts, a
/// pad's interior) into a linalg.copy onto the slice of its destination
/// that it replaces, which bufferization then writes in place; except an
/// insert of what was computed in place on that slice.
LogicalResult copiesAsLinalg(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  patterns.add<linalg::DecomposePadOpPattern>(func.getContext());
  if (failed(applyPatternsGreedily(func, std::move(patterns))))
    return failure();
  func.walk([](tensor::InsertSliceOp insert) {
    if (insert->getParentOfType<scf::ForallOp>() ||
        insert.getSource().getDefiningOp<linalg::CopyOp>() || insertsInPlace(insert))
      return;
    OpBuilder b(insert);
    Location loc = insert.getLoc();
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, insert.getSourceType(), insert.getDest(), insert.getMixedOffsets(),
        insert.getMixedSizes(), insert.getMixedStrides());
    Value copied = linalg::CopyOp::create(b, loc, insert.getSource(), slice).getResult(0);
    insert.getSourceMutable().assign(copied);
  });
  return success();
}

/// Gives each user of a linalg.fill a fill of its own (CSE merges the
/// identical fills of several matmuls' accumulators): each one then fuses
/// into its consumer's tiles, where a shared one would be a kernel of its
/// own and a copy per consumer.
void unshareFills(func::FuncOp func) {
  func.walk([](linalg::FillOp fill) {
    if (!fill.hasPureTensorSemantics())
      return;
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : fill->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder b(use->getOwner());
      use->set(b.clone(*fill)->getResult(0));
    }
  });
}

/// The elementwise op after a reduction, and whether the reduction's
/// threads apply it (`why` not, else).
struct EpiloguePlan {
  linalg::GenericOp op;
  Location at, from; // the reduction's, the op's
  std::string epilogue;
  std::optional<std::string> why;
  bool changesType; // the op is the root, the reduction fused into its tiles

  /// A `fusion:` remark, unless the op is a step of the reduction's own
  /// node (a Gemm's alpha and beta).
  void report() const {
    if (from == at)
      return;
    emitRemark(at) << "fusion: " << epilogue
                   << (why ? " runs as a kernel of its own: " + *why
                           : std::string(" applied by the kernel's threads to the results "
                                         "they hold (epilogue)"));
  }
};

struct KilnGpuDistributePass
    : mlir::kiln::impl::KilnGpuDistributeBase<KilnGpuDistributePass> {
  using KilnGpuDistributeBase::KilnGpuDistributeBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    if (failed(copiesAsLinalg(getOperation())))
      return signalPassFailure();
    unshareFills(getOperation());
    IRRewriter rewriter(&getContext());
    prepareEpilogues(rewriter, getOperation());
    // Roots first, from the end: their producers are fused into them and
    // erased before the walk reaches them. An epilogue waits for its
    // reduction, whose threads apply it.
    SmallVector<linalg::LinalgOp> ops;
    llvm::MapVector<Operation *, EpiloguePlan> plans;
    DenseSet<Operation *> waiting;
    collectRoots(ops, plans, waiting);
    DenseSet<Operation *> erased;
    struct Listener : RewriterBase::Listener {
      DenseSet<Operation *> &erased;
      explicit Listener(DenseSet<Operation *> &erased) : erased(erased) {}
      void notifyOperationErased(Operation *op) override { erased.insert(op); }
    } listener(erased);
    rewriter.setListener(&listener);
    for (linalg::LinalgOp op : llvm::reverse(ops)) {
      if (erased.contains(op) || waiting.contains(op))
        continue;
      bool onHost = unsupportedByKernels(op, *target).has_value();
      auto plan = plans.find(op);
      if (plan != plans.end() && !plan->second.why && plan->second.changesType &&
          !erased.contains(plan->second.op)) {
        // The epilogue is the root, by the reduction's tiles.
        EpiloguePlan &epilogue = plan->second;
        LogicalResult rooted = distributeAsEpilogue(rewriter, epilogue.op, op, *target, epilogue);
        if (failed(rooted))
          return signalPassFailure();
        if (!epilogue.why) {
          waiting.erase(epilogue.op);
          continue;
        }
      }
      FailureOr<Operation *> threadTile = distribute(rewriter, op, *target);
      if (failed(threadTile))
        return signalPassFailure();
      if (plan == plans.end() || plan->second.why)
        continue;
      EpiloguePlan &epilogue = plan->second;
      if (erased.contains(epilogue.op))
        epilogue.why = "it was fused into the tiles of its own consumer";
      else if (!*threadTile)
        epilogue.why = onHost ? "the reduction runs on the host" : "the reduction has no threads";
      else if (failed(applyInThreadTiles(rewriter, epilogue.op, *threadTile)))
        epilogue.why = "the reduction's threads do not each hold a block of its result";
      if (!epilogue.why)
        waiting.erase(epilogue.op);
    }
    // Epilogues whose reduction's threads could not apply them: roots.
    for (linalg::LinalgOp op : ops)
      if (waiting.contains(op) && !erased.contains(op) && failed(distribute(rewriter, op, *target)))
        return signalPassFailure();
    if (failed(boundThreadTensors(rewriter)))
      return signalPassFailure();
    if (reportFusion)
      report(plans);
  }

  /// The linalg ops not yet in a loop, in order; the epilogue each
  /// reduction could have, and those that wait for their reduction.
  void collectRoots(SmallVectorImpl<linalg::LinalgOp> &ops,
                    llvm::MapVector<Operation *, EpiloguePlan> &plans,
                    DenseSet<Operation *> &waiting) {
    DominanceInfo dominance(getOperation());
    getOperation().walk([&](linalg::LinalgOp op) {
      // (Computed where the kernels read it: kiln-gpu-compute-on-read.)
      if (op->getParentOfType<scf::ForallOp>() || op->hasAttr(kComputedOnRead))
        return;
      ops.push_back(op);
      std::optional<EpilogueCandidate> epilogue = epilogueCandidate(op, dominance);
      if (!epilogue)
        return;
      std::optional<std::string> why;
      if (epilogue->why)
        why = epilogue->why->str();
      plans.insert(
          {op, EpiloguePlan{epilogue->op, op.getLoc(), epilogue->op.getLoc(),
                            describeNode(epilogue->op), why, epilogue->changesType}});
      if (!epilogue->why)
        waiting.insert(epilogue->op);
    });
  }

  /// The plans' remarks; an op that two reductions read, by the one that
  /// applies it.
  static void report(const llvm::MapVector<Operation *, EpiloguePlan> &plans) {
    DenseSet<Operation *> applied;
    for (const auto &[reduction, plan] : plans)
      if (!plan.why)
        applied.insert(plan.op);
    for (const auto &[reduction, plan] : plans)
      if (!plan.why || !applied.contains(plan.op))
        plan.report();
  }

  /// The tiles of `op`, or none where it stays on the host (no parallel
  /// loop, or what the target's kernels cannot compute).
  std::optional<Tiles> kernelTiles(linalg::LinalgOp op, const GpuTarget &target) {
    Tiles tiles = chooseTiles(op, target, enoughWorkgroups, wideTensorTiles);
    if (tiles.none() || unsupportedByKernels(op, target))
      return std::nullopt;
    return tiles;
  }

  /// Tiles `epilogue` to workgroups and threads by `reduction`'s tiles,
  /// fusing `reduction` into them, where those tiles are whole; else says
  /// why not in `plan`, changing nothing. Fails on a tiling error.
  LogicalResult distributeAsEpilogue(RewriterBase &rewriter, linalg::GenericOp epilogue,
                                     linalg::LinalgOp reduction, const GpuTarget &target,
                                     EpiloguePlan &plan) {
    std::optional<Tiles> tiles = kernelTiles(reduction, target);
    if (!tiles || unsupportedByKernels(epilogue, target)) {
      plan.why = "the reduction runs on the host";
      return success();
    }
    // The epilogue's loops are the reduction's result's dimensions.
    AffineMap result = reduction.getMatchingIndexingMap(reduction.getDpsInitOperand(0));
    if (!result.isProjectedPermutation()) {
      // (Tiling fuses a producer only by a result that is a projection.)
      plan.why = "the reduction keeps dimensions of 1 (constants in its result's map), which "
                 "its tiles cannot be fused by";
      return success();
    }
    auto shape = cast<ShapedType>(epilogue.getResult(0).getType()).getShape();
    Tiles mine;
    for (unsigned d = 0; d < result.getNumResults(); ++d) {
      unsigned loop = result.getDimPosition(d);
      int64_t workgroup = tiles->workgroup[loop], thread = tiles->thread[loop];
      // A tile past the extent is the extent (a matmul of one row), and a
      // thread's part of it at most all of it.
      int64_t perWorkgroup = workgroup ? std::min(workgroup, shape[d]) : shape[d];
      thread = std::min(thread, perWorkgroup);
      // A thread's results stay a static private buffer: a partial tile's
      // are a slice of one of their bounds (boundThreadTensors).
      if (ShapedType::isDynamic(shape[d]) || shape[d] == 0 ||
          (thread && perWorkgroup % thread)) {
        plan.why = "its result has another element type, and the reduction's extents are not "
                   "static and nonzero, or its threads do not share a workgroup's tile evenly";
        return success();
      }
      mine.workgroup.push_back(workgroup ? perWorkgroup : 0);
      mine.thread.push_back(thread);
    }
    rewriter.setInsertionPoint(epilogue);
    FailureOr<TilingInterface> tile =
        tileAndFuse(rewriter, cast<TilingInterface>(epilogue.getOperation()), mine.workgroup,
                    /*threads=*/false, reduction);
    if (failed(tile))
      return epilogue.emitError("kiln-gpu-distribute: cannot tile this epilogue to workgroups");
    // The reduction's tile in the workgroup's, which the threads' fuse.
    Operation *reductionTile = nullptr;
    for (Value input : cast<linalg::LinalgOp>(tile->getOperation()).getDpsInputs())
      if (auto producer = input.getDefiningOp<linalg::LinalgOp>();
          producer && producer.getNumReductionLoops() > 0)
        reductionTile = producer;
    rewriter.setInsertionPoint(*tile);
    FailureOr<TilingInterface> threadTile =
        tileAndFuse(rewriter, *tile, mine.thread, /*threads=*/true, reductionTile);
    if (failed(threadTile))
      return tile->emitError("kiln-gpu-distribute: cannot tile this epilogue to threads");
    // The reduction's sums: a tensor of the thread's own (a slice of an
    // empty tensor is one), which becomes private memory, not a slice of a
    // buffer of the whole result. (The epilogue is erased: its tiles
    // replaced it.)
    RewritePatternSet patterns(rewriter.getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    auto workgroups = threadTile->getOperation()
                          ->getParentOfType<scf::ForallOp>()
                          ->getParentOfType<scf::ForallOp>();
    if (failed(applyPatternsGreedily(workgroups, std::move(patterns))))
      return failure();
    return success();
  }

  /// Gives each tensor of dynamic size that a thread computes in (a
  /// partial tile's sums, fused into a type-changing epilogue: its extents
  /// are affine.min of the tile and what is left) a buffer of its constant
  /// bounds, the tensor a slice of it: a static private buffer, which
  /// kiln-gpu-unroll-private-loops keeps in registers; a kernel cannot
  /// allocate one of dynamic size. Slices of a tensor.empty are tensor.empty
  /// ops first; the buffer is an alloc_tensor, which
  /// kiln-gpu-unshare-empty-tensors does not fold back into the slice.
  LogicalResult boundThreadTensors(RewriterBase &rewriter) {
    RewritePatternSet patterns(rewriter.getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return failure();
    SmallVector<tensor::EmptyOp> sums;
    getOperation().walk([&](tensor::EmptyOp empty) {
      auto forall = empty->getParentOfType<scf::ForallOp>();
      if (!empty.getType().hasStaticShape() && forall && forall->getParentOfType<scf::ForallOp>())
        sums.push_back(empty);
    });
    for (tensor::EmptyOp empty : sums) {
      RankedTensorType type = empty.getType();
      SmallVector<int64_t> bounds;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        FailureOr<int64_t> bound =
            type.isDynamicDim(d)
                ? ValueBoundsConstraintSet::computeConstantBound(
                      presburger::BoundType::UB, {empty.getResult(), d}, nullptr,
                      /*closedUB=*/true)
                : FailureOr<int64_t>(type.getDimSize(d));
        if (failed(bound))
          break;
        bounds.push_back(*bound);
      }
      if ((int64_t)bounds.size() != type.getRank())
        continue;
      rewriter.setInsertionPoint(empty);
      Location loc = empty.getLoc();
      Value buffer = bufferization::AllocTensorOp::create(
          rewriter, loc, RankedTensorType::get(bounds, type.getElementType()), ValueRange{});
      SmallVector<OpFoldResult> sizes = empty.getMixedSizes();
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          empty, type, buffer, SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(0)),
          sizes, SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(1)));
    }
    return success();
  }

  /// Tiles root `op` to workgroups and threads. Returns its threads' tile,
  /// null where it is not tiled to threads (or not at all).
  FailureOr<Operation *> distribute(RewriterBase &rewriter, linalg::LinalgOp op,
                                    const GpuTarget &target) {
    if (!op.hasPureTensorSemantics())
      return nullptr;
    std::optional<Tiles> tiles = kernelTiles(op, target);
    if (!tiles)
      return nullptr;
    rewriter.setInsertionPoint(op);
    FailureOr<TilingInterface> tile =
        tileAndFuse(rewriter, cast<TilingInterface>(op.getOperation()), tiles->workgroup,
                    /*threads=*/false);
    if (failed(tile)) {
      op.emitError("kiln-gpu-distribute: cannot tile this op to workgroups");
      return failure();
    }
    if (llvm::all_of(tiles->thread, [](int64_t s) { return s == 0; }))
      return nullptr;
    rewriter.setInsertionPoint(*tile);
    FailureOr<TilingInterface> threadTile =
        tileAndFuse(rewriter, *tile, tiles->thread, /*threads=*/true);
    if (failed(threadTile)) {
      tile->emitError("kiln-gpu-distribute: cannot tile this op to threads");
      return failure();
    }
    return threadTile->getOperation();
  }

};

} // namespace
