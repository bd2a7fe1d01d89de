//===- MapForall.cpp - workgroup and thread foralls onto gpu.launch -------===//
//
// After bufferization, a workgroup scf.forall (#gpu.block) and the thread
// scf.forall loops in it (#gpu.thread) become one gpu.launch. Unlike the
// transform dialect's map_forall_to_blocks, grid sizes may be dynamic (a
// model's run-time batch), and a thread loop whose trip count is only
// bounded (the last, partial tile) runs on a block of its bound with the
// threads past the trip count idle. Several thread loops in a workgroup
// loop (steps that share workgroup buffers) run in turn, a barrier
// between them. A grid dimension of more than 65535
// blocks (CUDA's limit on y and z) is launched with 65535, each block
// looping over the ids it stands for.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include <numeric>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUMAPFORALL
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The forall's mapping ids, one per loop; none if it has no GPU mapping
/// of the kind asked for.
std::optional<SmallVector<int64_t>> mappingIds(scf::ForallOp forall, bool threads) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  if (!mapping || mapping->empty())
    return std::nullopt;
  SmallVector<int64_t> ids;
  for (Attribute a : *mapping) {
    if (threads && isa<gpu::GPUThreadMappingAttr>(a))
      ids.push_back(cast<gpu::GPUThreadMappingAttr>(a).getMappingId());
    else if (!threads && isa<gpu::GPUBlockMappingAttr>(a))
      ids.push_back(cast<gpu::GPUBlockMappingAttr>(a).getMappingId() -
                    static_cast<int64_t>(gpu::MappingId::LinearDim0));
    else
      return std::nullopt;
  }
  return ids;
}

/// Whether `ids` are distinct and of the kind this pass maps: thread x, y,
/// z (0..2), block linear dimensions (0 and up).
bool supportedIds(ArrayRef<int64_t> ids, bool threads) {
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t id : ids)
    if (id < 0 || (threads && id > 2) || !seen.insert(id).second)
      return false;
  return true;
}

/// (ub - lb) ceildiv step of each loop; steps are static.
FailureOr<SmallVector<OpFoldResult>> tripCounts(OpBuilder &b, scf::ForallOp forall) {
  SmallVector<OpFoldResult> trips;
  for (auto [lb, ub, step] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(), forall.getMixedStep())) {
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!s)
      return failure();
    AffineExpr l, u;
    bindSymbols(b.getContext(), l, u);
    trips.push_back(affine::makeComposedFoldedAffineApply(
        b, forall.getLoc(), AffineMap::get(0, 2, (u - l).ceilDiv(*s)), {lb, ub}));
  }
  return trips;
}

/// lb + id * step for each loop, the ids given per loop.
SmallVector<Value> inductionValues(OpBuilder &b, scf::ForallOp forall, ArrayRef<Value> ids) {
  SmallVector<Value> ivs;
  for (auto [lb, step, id] : llvm::zip(forall.getMixedLowerBound(), forall.getMixedStep(), ids)) {
    AffineExpr l, i;
    bindSymbols(b.getContext(), l, i);
    int64_t s = *getConstantIntValue(step);
    ivs.push_back(getValueOrCreateConstantIndexOp(
        b, forall.getLoc(),
        affine::makeComposedFoldedAffineApply(b, forall.getLoc(),
                                              AffineMap::get(0, 2, l + i * s), {lb, id})));
  }
  return ivs;
}

/// Moves the forall's body (without its terminator) to the builder's
/// insertion point, its induction variables replaced by `ivs`.
void inlineBody(RewriterBase &rewriter, scf::ForallOp forall, ArrayRef<Value> ivs) {
  Block *body = forall.getBody();
  rewriter.eraseOp(body->getTerminator());
  Block *into = rewriter.getInsertionBlock();
  rewriter.inlineBlockBefore(body, into, rewriter.getInsertionPoint(), ivs);
}

/// The static number of threads a thread loop of trip count `trip` needs.
FailureOr<int64_t> threadBound(OpFoldResult trip) {
  if (std::optional<int64_t> c = getConstantIntValue(trip))
    return *c;
  return ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(cast<Value>(trip)),
      /*stopCondition=*/nullptr, /*closedUB=*/true);
}

/// The launch's static block size along dimension `d`.
int64_t launchBlockSize(gpu::LaunchOp launch, int64_t d) {
  gpu::KernelDim3 sizes = launch.getBlockSizeOperandValues();
  Value v = d == 0 ? sizes.x : d == 1 ? sizes.y : sizes.z;
  return *getConstantIntValue(v);
}

/// One thread loop inside a launch: each thread runs the body for its ids
/// when they are within the trip counts.
void mapThreads(RewriterBase &rewriter, scf::ForallOp forall, gpu::LaunchOp launch,
                ArrayRef<int64_t> ids, ArrayRef<OpFoldResult> trips) {
  Location loc = forall.getLoc();
  rewriter.setInsertionPoint(forall);
  gpu::KernelDim3 tid = launch.getThreadIds();
  Value threadIds[3] = {tid.x, tid.y, tid.z};
  SmallVector<Value> perLoop;
  Value inRange;
  for (auto [id, trip] : llvm::zip(ids, trips)) {
    Value t = threadIds[id];
    perLoop.push_back(t);
    std::optional<int64_t> staticTrip = getConstantIntValue(trip);
    if (staticTrip && *staticTrip == launchBlockSize(launch, id))
      continue; // every thread of this dimension has an iteration
    Value within = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, t,
                                         getValueOrCreateConstantIndexOp(rewriter, loc, trip));
    inRange = inRange ? arith::AndIOp::create(rewriter, loc, inRange, within) : within;
  }
  if (inRange) {
    auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElseRegion=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  inlineBody(rewriter, forall, inductionValues(rewriter, forall, perLoop));
  rewriter.eraseOp(forall);
}

/// The most blocks a grid dimension gets: CUDA's limit on y and z, and the
/// least Vulkan guarantees on each dimension.
constexpr int64_t kMaxGridBlocks = 65535;

/// Whether `blocks` (a grid dimension's) is launched as it is: a size known
/// to fit, or one known only at run time (the runtime refuses a launch
/// beyond the device's limit with a message; a loop here would keep
/// kiln-gpu-promote-operands and kiln-cuda-mma-sync from the kernel).
bool fitsInGrid(OpFoldResult blocks) {
  std::optional<int64_t> known = getConstantIntValue(blocks);
  return !known || *known <= kMaxGridBlocks;
}

/// The block ids of `launch`, whose grid the dimensions of `grid` marked
/// `clamped` were clamped in: for each of those, the induction variable of
/// a loop (around the rest of the body) from the block's id to that
/// dimension's size, in steps of the launch's grid size.
gpu::KernelDim3 blockIdLoops(RewriterBase &rewriter, gpu::LaunchOp launch,
                             ArrayRef<OpFoldResult> grid, ArrayRef<bool> clamped) {
  Location loc = launch.getLoc();
  gpu::KernelDim3 ids = launch.getBlockIds(), launched = launch.getGridSize();
  Value *id[3] = {&ids.x, &ids.y, &ids.z};
  Value step[3] = {launched.x, launched.y, launched.z};
  for (int d = 0; d < 3; ++d) {
    if (!clamped[d])
      continue;
    Value size = getValueOrCreateConstantIndexOp(rewriter, loc, grid[d]);
    auto loop = scf::ForOp::create(rewriter, loc, *id[d], size, step[d]);
    rewriter.setInsertionPointToStart(loop.getBody());
    *id[d] = loop.getInductionVar();
  }
  return ids;
}

/// Maps a workgroup loop and the thread loops in it onto one gpu.launch.
LogicalResult mapBlocks(RewriterBase &rewriter, scf::ForallOp blocks,
                        ArrayRef<int64_t> linearDims) {
  Location loc = blocks.getLoc();
  rewriter.setInsertionPoint(blocks);
  FailureOr<SmallVector<OpFoldResult>> trips = tripCounts(rewriter, blocks);
  if (failed(trips))
    return blocks.emitError("kiln-gpu-map-forall: workgroup loops need static steps");

  // The block: per thread dimension, the most iterations any thread loop
  // in this workgroup has.
  struct ThreadLoop {
    scf::ForallOp forall;
    SmallVector<int64_t> ids;
    SmallVector<OpFoldResult> trips;
  };
  SmallVector<ThreadLoop> threadLoops;
  int64_t blockSize[3] = {1, 1, 1};
  WalkResult walk = blocks.getBody()->walk([&](scf::ForallOp forall) {
    std::optional<SmallVector<int64_t>> ids = mappingIds(forall, /*threads=*/true);
    if (!ids || !supportedIds(*ids, /*threads=*/true)) {
      forall.emitError("kiln-gpu-map-forall: a loop in a workgroup loop must map to distinct "
                       "thread dimensions x, y, z");
      return WalkResult::interrupt();
    }
    if (forall.getNumResults() != 0) {
      forall.emitError("kiln-gpu-map-forall: a thread loop must be bufferized first");
      return WalkResult::interrupt();
    }
    // (Its bounds may be defined in the workgroup's body.)
    rewriter.setInsertionPoint(forall);
    FailureOr<SmallVector<OpFoldResult>> t = tripCounts(rewriter, forall);
    if (failed(t)) {
      forall.emitError("kiln-gpu-map-forall: thread loops need static steps");
      return WalkResult::interrupt();
    }
    for (auto [id, trip] : llvm::zip(*ids, *t)) {
      FailureOr<int64_t> bound = threadBound(trip);
      if (failed(bound)) {
        forall.emitError("kiln-gpu-map-forall: a thread loop's trip count has no static bound");
        return WalkResult::interrupt();
      }
      blockSize[id] = std::max(blockSize[id], *bound);
    }
    threadLoops.push_back({forall, *ids, *t});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // Several thread loops run one after another, a barrier between them:
  // each must be in the workgroup loop's body itself, which every thread
  // runs.
  if (threadLoops.size() > 1)
    for (ThreadLoop &loop : threadLoops)
      if (loop.forall->getParentOp() != blocks.getOperation())
        return loop.forall.emitError("kiln-gpu-map-forall: of several thread loops in a "
                                     "workgroup loop, each must be directly in its body");
  rewriter.setInsertionPoint(blocks);

  // The grid: linear dimension 0 on x, 1 on y, the rest on z.
  SmallVector<OpFoldResult> grid(3, rewriter.getIndexAttr(1));
  AffineExpr a, b;
  bindSymbols(rewriter.getContext(), a, b);
  AffineMap product = AffineMap::get(0, 2, a * b);
  for (auto [dim, trip] : llvm::zip(linearDims, *trips)) {
    int64_t g = std::min<int64_t>(dim, 2);
    grid[g] = affine::makeComposedFoldedAffineApply(rewriter, loc, product, {grid[g], trip});
  }
  auto index = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(rewriter, loc, v); };
  // A grid dimension of more than kMaxGridBlocks blocks gets that many,
  // each block taking every kMaxGridBlocks-th block id in a loop.
  SmallVector<OpFoldResult> launched(grid);
  // So is one known only at run time where several thread loops take
  // turns (a workgroup per row: a run-time number of rows), since no
  // tensor-core pass looks at such a kernel.
  SmallVector<bool> clamped(3, false);
  bool turns = threadLoops.size() > 1;
  for (auto [blocks, clamp] : llvm::zip(launched, clamped))
    if ((clamp = !fitsInGrid(blocks) || (turns && !getConstantIntValue(blocks))))
      blocks = affine::makeComposedFoldedAffineMin(
          rewriter, loc, AffineMap::get(0, 1, {a, rewriter.getAffineConstantExpr(kMaxGridBlocks)},
                                        rewriter.getContext()),
          {blocks});
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, index(launched[0]), index(launched[1]), index(launched[2]),
      index(rewriter.getIndexAttr(blockSize[0])), index(rewriter.getIndexAttr(blockSize[1])),
      index(rewriter.getIndexAttr(blockSize[2])));
  rewriter.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPointToStart(&launch.getBody().front());

  // Block ids per loop; z is delinearized over linear dimensions 2 and up
  // (the highest one varies slowest).
  gpu::KernelDim3 bid = blockIdLoops(rewriter, launch, grid, clamped);
  SmallVector<Value> ids(linearDims.size());
  Value rest = bid.z;
  SmallVector<unsigned> byDim(linearDims.size());
  std::iota(byDim.begin(), byDim.end(), 0);
  llvm::sort(byDim, [&](unsigned x, unsigned y) { return linearDims[x] < linearDims[y]; });
  for (unsigned i : byDim) {
    if (linearDims[i] < 2) {
      ids[i] = linearDims[i] == 0 ? bid.x : bid.y;
      continue;
    }
    if (i == byDim.back()) {
      ids[i] = rest; // the slowest: what the others leave
      break;
    }
    Value trip = index((*trips)[i]);
    ids[i] = arith::RemUIOp::create(rewriter, loc, rest, trip);
    rest = arith::DivUIOp::create(rewriter, loc, rest, trip);
  }
  inlineBody(rewriter, blocks, inductionValues(rewriter, blocks, ids));
  rewriter.eraseOp(blocks);
  // Several thread loops share workgroup buffers: each waits for the one
  // before to finish, and a block that loops over several ids finishes
  // the last before the next id's first. (gpu.barrier orders workgroup
  // memory only, on Vulkan: thread loops may pass values through
  // workgroup buffers, not through global memory.)
  for (auto [i, loop] : llvm::enumerate(threadLoops)) {
    bool last = i + 1 == threadLoops.size();
    if (threadLoops.size() > 1 && (!last || llvm::is_contained(clamped, true))) {
      rewriter.setInsertionPointAfter(loop.forall);
      gpu::BarrierOp::create(rewriter, loc);
    }
    mapThreads(rewriter, loop.forall, launch, loop.ids, loop.trips);
  }
  return success();
}

/// The first op of workgroup loop `blocks` that every thread of the block
/// would run, outside its thread loops, and that is more than a view, an
/// index computation or a workgroup buffer (an allocation, a store); null
/// if none. (Without a thread loop, the block is one thread: anything
/// goes.)
Operation *workOutsideThreads(scf::ForallOp blocks) {
  Block *body = blocks.getBody();
  if (body->getOps<scf::ForallOp>().empty())
    return nullptr;
  for (Operation &op : body->without_terminator()) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (alloc && gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(alloc.getType()))
      continue; // a buffer the threads share
    if (!isa<scf::ForallOp>(op) && !isMemoryEffectFree(&op))
      return &op;
  }
  return nullptr;
}

/// Leaves `blocks` and its thread loops to the host: plain scf.forall
/// loops (the CPU's parallel loops run them), marked with the reason.
void leaveToHost(scf::ForallOp blocks, Operation *work) {
  blocks->walk([](scf::ForallOp forall) { forall.setMappingAttr(ArrayAttr()); });
  blocks->setAttr("kiln.placement",
                  StringAttr::get(blocks.getContext(),
                                  "each workgroup would run '" + work->getName().getStringRef() +
                                      "' outside its threads' tiles"));
}

/// Erases the copies that bufferized tensor.parallel_insert_slice ops
/// leave: a view copied onto itself, or onto an identical view.
void eraseSelfCopies(Operation *root) {
  root->walk([](memref::CopyOp copy) {
    Value source = copy.getSource(), target = copy.getTarget();
    Operation *s = source.getDefiningOp(), *t = target.getDefiningOp();
    if (source == target ||
        (s && t && isa<memref::SubViewOp>(s) &&
         OperationEquivalence::isEquivalentTo(s, t, OperationEquivalence::IgnoreLocations)))
      copy.erase();
  });
}

struct KilnGpuMapForallPass : mlir::kiln::impl::KilnGpuMapForallBase<KilnGpuMapForallPass> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ForallOp, SmallVector<int64_t>>> workgroups;
    getOperation().walk([&](scf::ForallOp forall) {
      if (auto ids = mappingIds(forall, /*threads=*/false))
        workgroups.push_back({forall, *ids});
    });
    IRRewriter rewriter(&getContext());
    eraseSelfCopies(getOperation());
    for (auto &[forall, ids] : workgroups) {
      if (!supportedIds(ids, /*threads=*/false)) {
        forall.emitError("kiln-gpu-map-forall: a workgroup loop must map to distinct block "
                         "linear dimensions");
        return signalPassFailure();
      }
      if (forall.getNumResults() != 0) {
        forall.emitError("kiln-gpu-map-forall: a workgroup loop must be bufferized first");
        return signalPassFailure();
      }
      if (Operation *work = workOutsideThreads(forall)) {
        leaveToHost(forall, work);
        continue;
      }
      if (failed(mapBlocks(rewriter, forall, ids)))
        return signalPassFailure();
    }

  }
};

} // namespace
