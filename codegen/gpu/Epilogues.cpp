//===- Epilogues.cpp - elementwise ops in a reduction's kernel ------------===//
#include "codegen/gpu/Epilogues.h"
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/common/Epilogues.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

/// The collapse_shape ops that collapsing put on `op`'s operands: one that
/// undoes an expand_shape (the reduction's result, a bias split into heads)
/// goes, `op` reading what was expanded; another (a residual) moves before
/// `reduction`, since an epilogue's operands must exist before it runs.
static void tidyCollapsedOperands(RewriterBase &rewriter, linalg::LinalgOp op,
                                  Operation *reduction, DominanceInfo &dominance) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto collapse = operand.get().getDefiningOp<tensor::CollapseShapeOp>();
    if (!collapse)
      continue;
    auto expanded = collapse.getSrc().getDefiningOp<tensor::ExpandShapeOp>();
    if (expanded && expanded.getSrcType() == collapse.getResultType() &&
        expanded.getReassociationIndices() == collapse.getReassociationIndices()) {
      rewriter.modifyOpInPlace(op, [&] { operand.set(expanded.getSrc()); });
      if (collapse->use_empty())
        rewriter.eraseOp(collapse);
      if (expanded->use_empty())
        rewriter.eraseOp(expanded);
      continue;
    }
    bool after =
        collapse->getBlock() == reduction->getBlock() && reduction->isBeforeInBlock(collapse);
    if (after && dominance.properlyDominates(collapse.getSrc(), reduction))
      rewriter.moveOpBefore(collapse, reduction);
  }
}

/// Reads each input of `op` that it reads at 0 along dimensions of size 1
/// (a per-channel scale of shape [C, 1, 1] at (d1, 0, 0), as quantization
/// leaves them) through a collapse_shape without those dimensions.
static void dropUnitConstantResults(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool changed = false;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand->get().getType());
    AffineMap &map = maps[operand->getOperandNumber()];
    if (!type)
      continue;
    llvm::SmallBitVector dropped(map.getNumResults());
    for (auto [r, result] : llvm::enumerate(map.getResults())) {
      auto zero = dyn_cast<AffineConstantExpr>(result);
      dropped[r] = zero && zero.getValue() == 0 && type.getDimSize(r) == 1;
    }
    if (dropped.none())
      continue;
    // Each dropped dimension joins the group of the kept one before it
    // (leading ones, the first group); none kept: a tensor of rank 0.
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices leading;
    SmallVector<int64_t> shape;
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      if (dropped[r]) {
        (groups.empty() ? leading : groups.back()).push_back(r);
        continue;
      }
      groups.push_back(leading);
      groups.back().push_back(r);
      leading.clear();
      shape.push_back(type.getDimSize(r));
    }
    Value collapsed = tensor::CollapseShapeOp::create(
        rewriter, op.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        operand->get(), groups);
    rewriter.modifyOpInPlace(op, [&] { operand->set(collapsed); });
    map = map.dropResults(dropped);
    changed = true;
  }
  if (changed)
    rewriter.modifyOpInPlace(
        op, [&] { op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps)); });
}

/// Rewrites each elementwise op that reads a reduction's result through a
/// tensor.expand_shape into one over the reduction's own shape.
static void collapseOntoReductions(RewriterBase &rewriter, func::FuncOp func) {
  // Each op once, by the first expand it can collapse along: one that adds
  // two matmuls' results reads two expands.
  llvm::MapVector<linalg::GenericOp, SmallVector<tensor::ExpandShapeOp, 1>> found;
  func.walk([&](tensor::ExpandShapeOp expand) {
    auto reduction = expand.getSrc().getDefiningOp<linalg::LinalgOp>();
    if (!reduction || reduction.getNumReductionLoops() == 0 || !expand.getSrc().hasOneUse() ||
        !expand->hasOneUse())
      return;
    OpOperand &use = *expand->use_begin();
    auto op = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (op && op.getNumReductionLoops() == 0 && op.isDpsInput(&use) &&
        op.getMatchingIndexingMap(&use).isIdentity())
      found[op].push_back(expand);
  });
  DominanceInfo dominance(func);
  for (auto &[op, expands] : found) {
    rewriter.setInsertionPoint(op);
    // (Collapsing takes maps that are projected permutations.)
    dropUnitConstantResults(rewriter, op);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (!llvm::all_of(maps, [](AffineMap map) { return map.isProjectedPermutation(); }))
      continue;
    auto along = llvm::find_if(expands, [&](tensor::ExpandShapeOp expand) {
      return linalg::areDimSequencesPreserved(maps, expand.getReassociationIndices());
    });
    if (along == expands.end())
      continue;
    Operation *reduction = along->getSrc().getDefiningOp();
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(op, along->getReassociationIndices(), rewriter);
    if (failed(collapsed))
      continue;
    rewriter.replaceOp(op, collapsed->results);
    tidyCollapsedOperands(rewriter, collapsed->collapsedOp, reduction, dominance);
  }
}

/// Moves the ops that compute `epilogue`'s operands after `reduction` (the
/// shortcut convolution of a downsampling block, exported after the block's
/// second convolution) to before it, where none depends on it and all are
/// free of side effects.
static void hoistOperandsAbove(RewriterBase &rewriter, linalg::GenericOp epilogue,
                               Operation *reduction) {
  Block *block = reduction->getBlock();
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitUsesFromAbove = false;
  options.filter = [&](Operation *op) {
    return op->getBlock() == block && reduction->isBeforeInBlock(op);
  };
  SetVector<Value> operands;
  getUsedValuesDefinedAbove(epilogue.getRegion(), operands);
  operands.insert_range(epilogue.getDpsInputs());
  SetVector<Operation *> slice;
  for (Value operand : operands) {
    Operation *def = operand.getDefiningOp();
    if (def && def != reduction && options.filter(def) &&
        failed(getBackwardSlice(def, &slice, options)))
      return;
  }
  auto readsReduction = [&](Operation *op) {
    bool reads = false;
    op->walk([&](Operation *inner) {
      reads |= llvm::is_contained(inner->getOperands(), reduction->getResult(0));
    });
    return reads;
  };
  if (llvm::any_of(slice,
                   [&](Operation *op) { return !isMemoryEffectFree(op) || readsReduction(op); }))
    return;
  for (Operation *op : slice) // in the order they were
    rewriter.moveOpBefore(op, reduction);
}

/// The elementwise (all-parallel) generic that is the only user of
/// `reduction`'s only result, or null.
static linalg::GenericOp soleElementwiseUser(linalg::LinalgOp reduction) {
  if (reduction.getNumReductionLoops() == 0 || reduction->getNumResults() != 1 ||
      !reduction->getResult(0).hasOneUse())
    return {};
  auto op = dyn_cast<linalg::GenericOp>(*reduction->user_begin());
  return op && op.getNumReductionLoops() == 0 ? op : linalg::GenericOp();
}

void mlir::kiln::prepareEpilogues(RewriterBase &rewriter, func::FuncOp func) {
  collapseOntoReductions(rewriter, func);
  // An op that adds two reductions' results (a residual block's two
  // convolutions) is already the epilogue of the later one.
  llvm::MapVector<linalg::GenericOp, SmallVector<Operation *, 1>> reductionsOf;
  func.walk([&](linalg::LinalgOp reduction) {
    linalg::GenericOp op = soleElementwiseUser(reduction);
    if (op && op->getBlock() == reduction->getBlock())
      reductionsOf[op].push_back(reduction);
  });
  for (auto &[epilogue, reductions] : reductionsOf)
    if (reductions.size() == 1)
      hoistOperandsAbove(rewriter, epilogue, reductions.front());
}

std::optional<kiln::EpilogueCandidate>
mlir::kiln::epilogueCandidate(linalg::LinalgOp reduction, DominanceInfo &dominance) {
  linalg::GenericOp op = soleElementwiseUser(reduction);
  // An op computed where its readers load it (a rounding to 16 bits that
  // only a convolution's receptive fields read) has no kernel to fuse the
  // reduction into.
  if (!op || op->hasAttr(kComputedOnRead))
    return std::nullopt;
  Value result = reduction->getResult(0);
  EpilogueLatitude latitude{/*broadcasts=*/true, /*otherElementType=*/true};
  return EpilogueCandidate{op, whyNotAnEpilogue(op, result, reduction, dominance, latitude),
                           op.getResult(0).getType() != result.getType()};
}

/// The parallel_insert_slice that puts `value` (a forall's tile) into the
/// forall's only result, or null.
static tensor::ParallelInsertSliceOp insertOfTile(Value value) {
  if (!value.hasOneUse())
    return {};
  auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(*value.user_begin());
  if (!insert || !llvm::all_of(insert.getMixedStrides(), isOneInteger))
    return {};
  return insert;
}

LogicalResult mlir::kiln::applyInThreadTiles(RewriterBase &rewriter, linalg::GenericOp epilogue,
                                             Operation *threadTile) {
  auto threads = threadTile->getParentOfType<scf::ForallOp>();
  auto workgroups = threads ? threads->getParentOfType<scf::ForallOp>() : scf::ForallOp();
  if (!workgroups || threadTile->getNumResults() != 1 || threads.getNumResults() != 1 ||
      workgroups.getNumResults() != 1)
    return failure();
  Value input = workgroups.getResult(0);
  tensor::ParallelInsertSliceOp threadInsert = insertOfTile(threadTile->getResult(0));
  tensor::ParallelInsertSliceOp workgroupInsert = insertOfTile(threads.getResult(0));
  if (!threadInsert || !workgroupInsert || !input.hasOneUse() ||
      *input.user_begin() != epilogue.getOperation())
    return failure();

  // The thread's tile in the whole result: the workgroup's offset plus the
  // thread's in it, the thread's sizes.
  Location loc = epilogue.getLoc();
  rewriter.setInsertionPoint(threads.getTerminator());
  AffineExpr s0, s1;
  bindSymbols(rewriter.getContext(), s0, s1);
  SmallVector<OpFoldResult> offsets;
  for (auto [outer, inner] :
       llvm::zip(workgroupInsert.getMixedOffsets(), threadInsert.getMixedOffsets()))
    offsets.push_back(
        affine::makeComposedFoldedAffineApply(rewriter, loc, s0 + s1, {outer, inner}));
  SmallVector<OpFoldResult> sizes = threadInsert.getMixedSizes();

  // The other operands' slices at those elements, through their maps.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *operand : epilogue.getDpsInputOperands()) {
    if (operand->get() == input)
      continue;
    AffineMap map = epilogue.getMatchingIndexingMap(operand);
    SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      sliceOffsets.push_back(offsets[map.getDimPosition(r)]);
      sliceSizes.push_back(sizes[map.getDimPosition(r)]);
    }
    SmallVector<OpFoldResult> strides(map.getNumResults(), rewriter.getIndexAttr(1));
    inputs.push_back(tensor::ExtractSliceOp::create(rewriter, loc, operand->get(), sliceOffsets,
                                                    sliceSizes, strides));
    maps.push_back(map);
  }
  maps.push_back(rewriter.getMultiDimIdentityMap(epilogue.getNumLoops()));

  // The epilogue's body on the tile, in place: its input is now the output.
  Value tile = threadInsert.getSource();
  Block *body = epilogue.getBlock();
  auto applied = linalg::GenericOp::create(
      rewriter, loc, tile.getType(), inputs, ValueRange{tile}, maps,
      epilogue.getIteratorTypesArray(), [&](OpBuilder &b, Location loc, ValueRange args) {
        IRMapping map;
        unsigned next = 0;
        for (OpOperand *operand : epilogue.getDpsInputOperands())
          map.map(body->getArgument(operand->getOperandNumber()),
                  operand->get() == input ? args.back() : args[next++]);
        for (Operation &inner : body->without_terminator())
          b.clone(inner, map);
        linalg::YieldOp::create(b, loc,
                                map.lookupOrDefault(body->getTerminator()->getOperand(0)));
      });
  rewriter.modifyOpInPlace(threadInsert,
                           [&] { threadInsert.getSourceMutable().assign(applied.getResult(0)); });
  rewriter.replaceOp(epilogue, input);
  return success();
}
