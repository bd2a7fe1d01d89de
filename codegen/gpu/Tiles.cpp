//===- Tiles.cpp - how the GPU pipeline tiles a linalg op -----------------===//
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::kiln;

/// Results per thread along each of a contraction's two output dimensions.
static constexpr int64_t kThreadTile = 4;
/// Threads across a contraction's tile of columns.
static constexpr int64_t kThreadColumns = 8;

std::optional<GpuTarget> mlir::kiln::lookupGpuTarget(Operation *op, llvm::StringRef name) {
  std::optional<GpuTarget> target = lookupGpuTarget(name);
  if (!target)
    op->emitError() << "unknown GPU target '" << name << "' (expected one of "
                    << gpuTargetNames() << ")";
  return target;
}

std::optional<std::string> mlir::kiln::unsupportedByKernels(Operation *op,
                                                           const GpuTarget &target) {
  std::optional<std::string> reason;
  op->walk([&](Operation *inner) {
    auto elementType = [](Type t) { return getElementTypeOrSelf(t); };
    auto types = llvm::concat<const Type>(inner->getOperandTypes(), inner->getResultTypes());
    bool math = inner->getDialect() && inner->getDialect()->getNamespace() == "math";
    bool f64 = llvm::any_of(types, [&](Type t) { return elementType(t).isF64(); });
    if (!target.f64 && f64)
      reason = "f64 values, which the target's kernels do not have";
    else if (!target.f64Math && math && f64)
      reason = "math on f64 (exp, log, ...), which the target's kernels do not have";
    else if (!target.bf16 && llvm::any_of(types, [&](Type t) { return elementType(t).isBF16(); }))
      reason = "bf16 values, which the target's kernels do not have";
    return reason ? WalkResult::interrupt() : WalkResult::advance();
  });
  return reason;
}

/// The parallel loops of `op`, outermost first.
static SmallVector<unsigned> parallelLoops(linalg::LinalgOp op) {
  SmallVector<unsigned> parallel;
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::parallel)
      parallel.push_back(i);
  return parallel;
}

/// The workgroups of a contraction of static loop `sizes` in tiles of
/// `rowTile` x `colTile` of its last two `parallel` loops (one iteration
/// of each other).
static int64_t workgroupsOf(ArrayRef<int64_t> sizes, ArrayRef<unsigned> parallel,
                            int64_t rowTile, int64_t colTile) {
  int64_t workgroups = 1;
  for (unsigned d : parallel.drop_back(2))
    workgroups *= sizes[d];
  return workgroups * llvm::divideCeilSigned(sizes[parallel[parallel.size() - 2]], rowTile) *
         llvm::divideCeilSigned(sizes[parallel.back()], colTile);
}

std::optional<int64_t> mlir::kiln::contractionWorkgroups(linalg::LinalgOp op,
                                                         const GpuTarget &target) {
  SmallVector<unsigned> parallel = parallelLoops(op);
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (!linalg::isaContractionOpInterface(op) || parallel.size() < 2 ||
      llvm::any_of(parallel, [&](unsigned d) { return ShapedType::isDynamic(sizes[d]); }))
    return std::nullopt;
  int64_t threadRows = std::max<int64_t>(1, target.workgroupThreads() / kThreadColumns);
  return workgroupsOf(sizes, parallel, kThreadTile * threadRows, kThreadTile * kThreadColumns);
}

/// Results per thread along each of a contraction's two output dimensions:
/// kThreadTile, or for a static matmul of f32 operands that would have
/// fewer than `enough` workgroups (a 7x7 convolution of 512 filters: 16
/// workgroups of 4x4 results per thread, 256 of 1x1), whose few threads
/// would each sum long rows alone, fewer; for one that would have `enough`
/// even at twice kThreadTile, twice as many (8x8: per step of k, a thread's
/// 16 loads from shared memory feed 64 multiply-adds, not 8 loads 16).
/// Matmuls of 16-bit floats (CUDA's tensor cores; elsewhere they are
/// widened first) take 8x8 by the same rule, a warp's 16 mma.sync per 6
/// ldmatrix, and never fewer: the tensor cores need whole 16x8 tiles.
/// Those of bytes keep 4x4 (with --precision=tf32 f32 ones do too: the
/// pipeline passes `enough` 0). With `wide`, a 16-bit one of 8x8 that
/// would still have `enough` workgroups at 8x16 takes 8x16 (128x128 for
/// 128 threads: per multiply-add a third fewer bytes of A and B; its f32
/// sums, 64 KiB, in CUDA's dynamic shared memory). Rows, then columns.
static std::pair<int64_t, int64_t> contractionThreadTile(linalg::LinalgOp op,
                                                         ArrayRef<unsigned> parallel,
                                                         int64_t threadRows, int64_t enough,
                                                         bool wide) {
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (llvm::any_of(parallel, [&](unsigned d) { return ShapedType::isDynamic(sizes[d]); }))
    return {kThreadTile, kThreadTile};
  auto workgroups = [&](int64_t rowTile, int64_t colTile) {
    return workgroupsOf(sizes, parallel, rowTile * threadRows, colTile * kThreadColumns);
  };
  auto inputsAre = [&](function_ref<bool(Type)> is) {
    return llvm::all_of(op.getDpsInputs(),
                        [&](Value v) { return is(getElementTypeOrSelf(v.getType())); });
  };
  bool f32 = inputsAre([](Type t) { return t.isF32(); });
  bool half = inputsAre([](Type t) { return t.isF16() || t.isBF16(); });
  int64_t tile = kThreadTile, big = 2 * kThreadTile;
  if (half && wide && enough && workgroups(big, 2 * big) >= enough)
    return {big, 2 * big};
  if ((f32 || half) && enough && workgroups(big, big) >= enough)
    return {big, big};
  while (f32 && tile > 1 && workgroups(tile, tile) < enough)
    tile /= 2;
  return {tile, tile};
}

/// Whether an indexing map of `op`, or of a linalg op that computes its
/// inputs and may be fused into its tiles (not a reduction: those are
/// roots), divides a loop index (mod, floordiv, ceildiv).
static bool indexedThroughDivision(linalg::LinalgOp op) {
  auto divides = [](AffineMap map) {
    return llvm::any_of(map.getResults(), [](AffineExpr e) {
      bool found = false;
      e.walk([&](AffineExpr inner) {
        found |= inner.getKind() == AffineExprKind::Mod ||
                 inner.getKind() == AffineExprKind::FloorDiv ||
                 inner.getKind() == AffineExprKind::CeilDiv;
      });
      return found;
    });
  };
  SmallVector<linalg::LinalgOp> work{op};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    linalg::LinalgOp next = work.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    if (llvm::any_of(next.getIndexingMapsArray(), divides))
      return true;
    for (Value input : next.getDpsInputs())
      if (auto producer = input.getDefiningOp<linalg::LinalgOp>();
          producer && producer.getNumReductionLoops() == 0)
        work.push_back(producer);
  }
  return false;
}

/// The most even tiles of at most `most` iterations of a loop of `size`
/// (1000 by 128: 8 of 125).
static int64_t evenTile(int64_t size, int64_t most) {
  return llvm::divideCeil(size, llvm::divideCeil(size, most));
}

Tiles mlir::kiln::chooseTiles(linalg::LinalgOp op, const GpuTarget &target,
                              int64_t enoughWorkgroups, bool wideTensorTiles) {
  unsigned loops = op.getNumLoops();
  Tiles tiles{SmallVector<int64_t>(loops, 0), SmallVector<int64_t>(loops, 0)};
  SmallVector<unsigned> parallel = parallelLoops(op);
  if (parallel.empty())
    return tiles; // a reduction to a scalar or a 0-d op: left to the host
  // Outer parallel loops: one iteration per workgroup, not split further.
  for (unsigned d : parallel)
    tiles.workgroup[d] = 1;
  int64_t threads = target.workgroupThreads();
  if (linalg::isaContractionOpInterface(op) && parallel.size() >= 2) {
    unsigned rows = parallel[parallel.size() - 2], cols = parallel.back();
    int64_t threadRows = std::max<int64_t>(1, threads / kThreadColumns);
    auto [rowTile, colTile] =
        contractionThreadTile(op, parallel, threadRows, enoughWorkgroups,
                              wideTensorTiles && target.api == GpuApi::Cuda);
    tiles.workgroup[rows] = rowTile * threadRows;
    tiles.workgroup[cols] = colTile * kThreadColumns;
    tiles.thread[rows] = rowTile;
    tiles.thread[cols] = colTile;
    return tiles;
  }
  // Others: a thread per element of the innermost parallel loop, and where
  // that loop is shorter than the workgroup, of the next ones out too (on
  // thread y, then z): a 14x14 feature map is one workgroup of 98 threads
  // (7 rows of 14, twice), not 14 workgroups of 14.
  // Not where an operand (of the op or of what is fused into its tiles) is
  // indexed through a division (a Tile's `mod`): a tile of such a map is
  // sliced right only where it starts at a multiple of the divisor, so
  // those keep T threads on the innermost loop and 1 on the others.
  if (indexedThroughDivision(op)) {
    tiles.workgroup[parallel.back()] = threads;
    tiles.thread[parallel.back()] = 1;
    return tiles;
  }
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  unsigned threadDim = 0;
  for (unsigned d : llvm::reverse(parallel)) {
    if (threadDim == 3 || threads == 1)
      break;
    if (sizes[d] == 0 || sizes[d] == 1) // nothing to share (0: an empty op)
      continue;
    int64_t room = std::min(threads, target.maxWorkgroupSize[threadDim++]);
    tiles.thread[d] = 1;
    if (ShapedType::isDynamic(sizes[d]) || sizes[d] > room) {
      tiles.workgroup[d] = ShapedType::isDynamic(sizes[d]) ? room : evenTile(sizes[d], room);
      break;
    }
    tiles.workgroup[d] = sizes[d];
    threads /= sizes[d];
  }
  if (threadDim == 0) // every parallel loop has one iteration
    tiles.thread[parallel.back()] = 1;
  return tiles;
}

SmallVector<Attribute> mlir::kiln::mappingFor(MLIRContext *ctx, ArrayRef<int64_t> tileSizes,
                                              bool threads) {
  int64_t tiled = llvm::count_if(tileSizes, [](int64_t s) { return s != 0; });
  SmallVector<Attribute> mapping;
  for (int64_t i = tiled - 1; i >= 0; --i) {
    if (threads)
      mapping.push_back(gpu::GPUThreadMappingAttr::get(ctx, static_cast<gpu::MappingId>(i)));
    else
      mapping.push_back(gpu::GPUBlockMappingAttr::get(
          ctx, static_cast<gpu::MappingId>(static_cast<int64_t>(gpu::MappingId::LinearDim0) + i)));
  }
  return mapping;
}

scf::ForallOp mlir::kiln::workgroupForall(OpBuilder &b, Location loc,
                                          ArrayRef<OpFoldResult> ends,
                                          ArrayRef<OpFoldResult> steps, Value init) {
  SmallVector<OpFoldResult> zeros(ends.size(), b.getIndexAttr(0));
  SmallVector<int64_t> perLoop(ends.size(), 1);
  return scf::ForallOp::create(b, loc, zeros, ends, steps, ValueRange{init},
                               b.getArrayAttr(mappingFor(b.getContext(), perLoop,
                                                         /*threads=*/false)));
}

FailureOr<int64_t> mlir::kiln::sizeBound(Value tile, int64_t d) {
  auto type = cast<MemRefType>(tile.getType());
  if (!type.isDynamicDim(d))
    return type.getDimSize(d);
  return ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(tile, d), nullptr,
      /*closedUB=*/true);
}

bool mlir::kiln::isPrivateMemory(Type type) {
  auto space =
      dyn_cast_if_present<gpu::AddressSpaceAttr>(cast<MemRefType>(type).getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Private;
}

std::optional<std::array<int64_t, 3>> mlir::kiln::staticBlockSize(gpu::LaunchOp launch) {
  gpu::KernelDim3 sizes = launch.getBlockSizeOperandValues();
  std::optional<int64_t> x = getConstantIntValue(sizes.x), y = getConstantIntValue(sizes.y),
                         z = getConstantIntValue(sizes.z);
  if (!x || !y || !z)
    return std::nullopt;
  return std::array<int64_t, 3>{*x, *y, *z};
}

AffineExpr mlir::kiln::linearThreadId(gpu::LaunchOp launch) {
  auto [x, y, z] = *staticBlockSize(launch);
  AffineExpr tx, ty, tz;
  bindSymbols(launch.getContext(), tx, ty, tz);
  return tx + x * (ty + y * tz);
}
