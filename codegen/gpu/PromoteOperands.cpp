//===- PromoteOperands.cpp - contraction operands staged in shared memory -===//
//
// After kiln-gpu-private-accumulators, a thread's tile of a matmul reads
// its rows of A and its columns of B from global memory at every step of
// the reduction, and every thread of the workgroup's row (column) reads
// the same ones. This pass stages the workgroup's tiles of both operands
// in shared memory, a chunk of the reduction at a time: the threads copy a
// chunk together (consecutive threads on consecutive elements), wait at a
// barrier, accumulate it from shared memory into their private
// accumulators, and wait again before the next chunk overwrites it. Where
// a thread's elements of a chunk fit in a few registers, it loads those
// of the next chunk before it computes the current one (the loads in
// flight during the computation, not one after another in the copy) and
// stores them after; where two chunks fit, into the other of two
// alternating buffers, a single barrier per chunk. Where the target copies
// asynchronously (CUDA's cp.async) and every chunk can move 16 bytes at a
// time, up to four chunks are in flight instead, straight into their
// buffers, with no registers in between.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/GpuTarget.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUPROMOTEOPERANDS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The reduction chunks a staging buffer may hold, smallest first.
constexpr int64_t kChunks[] = {8, 16, 32};
/// The elements of a chunk a thread may hold in registers on their way to
/// shared memory, beside up to 64 results of its own (a register each,
/// whatever their width).
constexpr int64_t kMaxStagedPerThread = 32;
/// The chunks asynchronous copies may have in flight.
constexpr int64_t kMaxStages = 4;

/// One operand of a thread's contraction that shared memory can hold: a
/// workgroup's tile that no thread id moves, and the region of it the
/// thread reads (all of it, or a unit-stride view of it).
struct Operand {
  unsigned input;                     ///< its index among the op's inputs
  Value tile;                         ///< the workgroup's tile
  SmallVector<OpFoldResult> offsets;  ///< the thread's region of `tile`
  SmallVector<OpFoldResult> sizes;
  unsigned reduced;                   ///< the dimension of `tile` the chunked loop walks
  SmallVector<int64_t> shape;         ///< the staging buffer's, for a chunk of 1
  /// Whether `tile` is never written: each load of it computes the element
  /// (a convolution's receptive fields, kiln-gpu-compute-on-read), which
  /// no asynchronous copy can.
  bool computedOnRead = false;
  /// The tile's dimensions in the order the copy walks them, innermost
  /// last: consecutive threads copy consecutive elements along it. The
  /// tile's own order, but for a transpose read in place whose source's
  /// innermost dimension is another of the tile's (copyOrderOf).
  SmallVector<unsigned> copyOrder;
};

/// Where dimension `dim` of `view`'s source is in its result, where a step
/// along the result's dimension is a step along the source's `dim`: the
/// same dimension of a subview (not dropped), the last of the dimensions an
/// expand_shape splits it into, the group a collapse_shape folds it into if
/// it is the group's last. None for other views.
std::optional<unsigned> dimThroughView(Operation *view, unsigned dim) {
  if (auto subview = dyn_cast<memref::SubViewOp>(view)) {
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    if (dropped.test(dim))
      return std::nullopt;
    unsigned droppedBefore = 0;
    for (unsigned d = 0; d < dim; ++d)
      droppedBefore += dropped.test(d);
    return dim - droppedBefore;
  }
  auto groupOf = [&](ArrayRef<ReassociationIndices> groups) -> std::optional<unsigned> {
    for (auto [g, group] : llvm::enumerate(groups))
      if (llvm::is_contained(group, int64_t(dim)))
        return g;
    return std::nullopt;
  };
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(view))
    return static_cast<unsigned>(expand.getReassociationIndices()[dim].back());
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(view)) {
    SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
    std::optional<unsigned> g = groupOf(groups);
    if (g && groups[*g].back() == int64_t(dim))
      return g;
  }
  return std::nullopt;
}

/// The dimension of `tile` whose consecutive elements are consecutive in
/// memory where kiln-gpu-compute-on-read loads them: for a transpose read
/// in place (a copy whose input map is a permutation), the one that steps
/// along its source's innermost dimension (of unit stride), found through
/// the views from the transpose's buffer to `tile`. None for other tiles.
std::optional<unsigned> innermostInSource(Value tile) {
  auto copy = dyn_cast_or_null<linalg::GenericOp>(computedOnReadBy(tile));
  if (!copy || copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1)
    return std::nullopt;
  AffineMap read = copy.getMatchingIndexingMap(copy.getDpsInputOperand(0));
  auto source = dyn_cast<MemRefType>(copy.getDpsInputOperand(0)->get().getType());
  if (!read.isPermutation() || !source || !source.isLastDimUnitStride() ||
      !copy.getMatchingIndexingMap(copy.getDpsInitOperand(0)).isIdentity())
    return std::nullopt;
  // The copy's output is its whole buffer, in the loops' order.
  unsigned dim = read.getDimPosition(read.getNumResults() - 1);
  SmallVector<Operation *> views;
  for (Value v = tile; v != copy.getDpsInitOperand(0)->get();) {
    auto view = v.getDefiningOp<ViewLikeOpInterface>();
    if (!view)
      return std::nullopt;
    views.push_back(view);
    v = view.getViewSource();
  }
  for (Operation *view : llvm::reverse(views)) {
    std::optional<unsigned> next = dimThroughView(view, dim);
    if (!next)
      return std::nullopt;
    dim = *next;
  }
  return dim;
}

/// Operand::copyOrder for `tile` of `rank`.
SmallVector<unsigned> copyOrderOf(Value tile, unsigned rank) {
  SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(rank));
  if (std::optional<unsigned> innermost = innermostInSource(tile)) {
    llvm::erase(order, *innermost);
    order.push_back(*innermost);
  }
  return order;
}

/// Whether `value` varies between the threads of `launch`'s workgroup.
bool dependsOnThreadIds(Value value, gpu::LaunchOp launch, DenseMap<Value, bool> &memo) {
  if (auto it = memo.find(value); it != memo.end())
    return it->second;
  bool depends = false;
  gpu::KernelDim3 tid = launch.getThreadIds();
  if (value == tid.x || value == tid.y || value == tid.z) {
    depends = true;
  } else if (Operation *def = value.getDefiningOp(); def && launch->isAncestor(def)) {
    depends = llvm::any_of(def->getOperands(),
                           [&](Value v) { return dependsOnThreadIds(v, launch, memo); });
  }
  return memo[value] = depends;
}

/// Whether `target`'s shared memory holds elements of `type`: 32-bit ones
/// on every target; 16-bit floats and 8-bit integers where mma.sync's
/// tensor cores read them (kiln-cuda-mma-sync).
bool stagesElementsOf(Type type, const GpuTarget &target) {
  if (!type.isIntOrFloat())
    return false;
  unsigned bits = type.getIntOrFloatBitWidth();
  bool tensorCores = target.has(MmaKind::MmaSync);
  return bits == 32 || (tensorCores && bits == 16 && isa<FloatType>(type)) ||
         (tensorCores && bits == 8 && isa<IntegerType>(type));
}

/// The bytes of one element of `operand`'s tile.
int64_t elementBytes(const Operand &operand) {
  return cast<MemRefType>(operand.tile.getType()).getElementTypeBitWidth() / 8;
}

/// `op`'s input `input` as an Operand: a tile that no thread id moves,
/// read whole or through a unit-stride view of it, whole along the op's
/// first loop (its outermost reduction), of elements `target` stages and
/// sizes of constant bounds.
std::optional<Operand> stageable(linalg::GenericOp op, unsigned input, gpu::LaunchOp launch,
                                 const GpuTarget &target, DenseMap<Value, bool> &memo) {
  OpOperand *operand = op.getDpsInputOperand(input);
  AffineMap map = op.getMatchingIndexingMap(operand);
  std::optional<unsigned> reduced =
      map.isProjectedPermutation() ? map.getResultPosition(getAffineDimExpr(0, op.getContext()))
                                   : std::nullopt;
  auto type = dyn_cast<MemRefType>(operand->get().getType());
  if (!reduced || !type || type.getMemorySpace() ||
      !stagesElementsOf(type.getElementType(), target))
    return std::nullopt; // (a thread's private buffer is no workgroup's tile)
  Operand staged{input, operand->get(), {}, {}, *reduced, {}, false, {}};
  Builder b(op.getContext());
  if (!dependsOnThreadIds(operand->get(), launch, memo) && type.hasStaticShape()) {
    staged.offsets.assign(type.getRank(), b.getIndexAttr(0));
    staged.sizes = getAsIndexOpFoldResult(op.getContext(), type.getShape());
  } else {
    auto view = operand->get().getDefiningOp<memref::SubViewOp>();
    if (!view || !view.hasUnitStride() || view.getSourceType().getRank() != type.getRank() ||
        view.getStaticOffsets()[*reduced] != 0 ||
        dependsOnThreadIds(view.getSource(), launch, memo))
      return std::nullopt;
    staged.tile = view.getSource();
    staged.offsets = view.getMixedOffsets();
    staged.sizes = view.getMixedSizes();
  }
  staged.computedOnRead = computedOnReadBy(staged.tile) != nullptr;
  staged.copyOrder = copyOrderOf(staged.tile, type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    FailureOr<int64_t> bound = d == *reduced ? FailureOr<int64_t>(1) : sizeBound(staged.tile, d);
    if (failed(bound))
      return std::nullopt;
    staged.shape.push_back(*bound);
  }
  return staged;
}

/// The order of a staging buffer's dimensions. For 32-bit elements, which
/// threads sum with fma, the reduced one first, so that a thread's elements
/// for one step of the reduction (a row of its A tile, a row of its B tile)
/// are contiguous: vector loads, where the target has them, and no two
/// threads of a subgroup reading different addresses of one bank. For the
/// tensor cores' 16-bit and 8-bit operands, the tile's own order: a line of
/// the buffer is a run of the tile in memory, which the copy moves 16 bytes
/// at a time, and ldmatrix reads either order (kiln-cuda-mma-sync).
SmallVector<unsigned> bufferOrder(const Operand &operand) {
  SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(operand.shape.size()));
  if (elementBytes(operand) < 4)
    return order;
  llvm::erase(order, operand.reduced);
  order.insert(order.begin(), operand.reduced);
  return order;
}

/// `values` (one per dimension of `operand`'s tile) in bufferOrder.
template <typename T>
SmallVector<T> inBufferOrder(const Operand &operand, ArrayRef<T> values) {
  return llvm::map_to_vector(bufferOrder(operand), [&](unsigned d) { return values[d]; });
}

/// The shape of a chunk of `chunk` steps of `operand`'s tile, in the
/// tile's order of dimensions.
SmallVector<int64_t> chunkShape(const Operand &operand, int64_t chunk) {
  SmallVector<int64_t> shape = operand.shape;
  shape[operand.reduced] = chunk;
  return shape;
}

/// The staging buffer's shape for a chunk of `chunk`, in bufferOrder, and
/// its rows padded to an odd number of 16-byte lines: then any 8
/// consecutive rows start in 8 different quarters of the 32 banks (a
/// column of the copy's stores, an ldmatrix's 8 lines, conflict-free).
SmallVector<int64_t> bufferShape(const Operand &operand, int64_t chunk) {
  SmallVector<int64_t> shape =
      inBufferOrder<int64_t>(operand, chunkShape(operand, chunk));
  if (shape.size() > 1) {
    int64_t perLine = 16 / elementBytes(operand);
    shape.back() = llvm::alignTo(shape.back(), perLine);
    if ((shape.back() / perLine) % 2 == 0)
      shape.back() += perLine;
  }
  return shape;
}

/// A workgroup buffer for `copies` of `operand`'s chunks (16-byte aligned)
/// at the builder: more than one along a leading dimension.
memref::AllocOp createBuffer(OpBuilder &b, Location loc, const Operand &operand, int64_t chunk,
                             int64_t copies) {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Type element = cast<MemRefType>(operand.tile.getType()).getElementType();
  SmallVector<int64_t> shape = bufferShape(operand, chunk);
  if (copies > 1)
    shape.insert(shape.begin(), copies);
  auto alloc =
      memref::AllocOp::create(b, loc, MemRefType::get(shape, element, nullptr, workgroup));
  alloc.setAlignment(16);
  return alloc;
}

/// Copy `copy` (an index; null for a buffer of one) of `buffer`'s chunks,
/// as a view without its padding, in bufferOrder.
Value chunkView(OpBuilder &b, Location loc, memref::AllocOp buffer, const Operand &operand,
                int64_t chunk, Value copy) {
  SmallVector<int64_t> shape = inBufferOrder<int64_t>(operand, chunkShape(operand, chunk));
  int64_t rank = shape.size();
  if (!copy)
    return memref::SubViewOp::create(b, loc, buffer, SmallVector<int64_t>(rank, 0), shape,
                                     SmallVector<int64_t>(rank, 1));
  SmallVector<OpFoldResult> offsets(rank + 1, b.getIndexAttr(0));
  offsets[0] = copy;
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
  for (int64_t extent : shape)
    sizes.push_back(b.getIndexAttr(extent));
  SmallVector<OpFoldResult> strides(rank + 1, b.getIndexAttr(1));
  auto type = memref::SubViewOp::inferRankReducedResultType(shape, buffer.getType(), offsets,
                                                            sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(type), buffer, offsets, sizes,
                                   strides);
}

/// chunkView of copy `copy` of each operand's buffer, in the operands'
/// order.
SmallVector<Value> chunkViews(OpBuilder &b, Location loc, ArrayRef<memref::AllocOp> buffers,
                              ArrayRef<Operand> operands, int64_t chunk, Value copy) {
  SmallVector<Value> views;
  for (auto [operand, buffer] : llvm::zip(operands, buffers))
    views.push_back(chunkView(b, loc, buffer, operand, chunk, copy));
  return views;
}

/// The bytes of the operands' buffers for a chunk of `chunk`.
int64_t stagedBytes(ArrayRef<Operand> operands, int64_t chunk) {
  int64_t bytes = 0;
  for (const Operand &operand : operands)
    bytes += elementBytes(operand) * llvm::product_of(bufferShape(operand, chunk));
  return bytes;
}

/// The bytes of the workgroup's tile of 4-byte sums (its rows of the first
/// operand by its columns of the second), or 0 where a tile's shape is
/// dynamic.
int64_t sumsBytes(ArrayRef<Operand> operands) {
  int64_t bytes = 4;
  for (const Operand &operand : operands) {
    auto tile = cast<MemRefType>(operand.tile.getType());
    if (!tile.hasStaticShape())
      return 0;
    bytes *= tile.getNumElements() / tile.getDimSize(operand.reduced);
  }
  return bytes;
}

/// The shared memory a contraction's chunks in flight may take: the
/// target's budget, or where the tensor cores' sums of the tile pass it
/// (a 128x128 tile's 64 KiB, which kiln-cuda-mma-sync moves into the
/// chunks' place after the loop, in dynamic shared memory), as much as
/// they take: more chunks in flight for no fewer workgroups per SM.
int64_t stagingBudget(ArrayRef<Operand> operands, const GpuTarget &target) {
  int64_t sums = sumsBytes(operands);
  if (!target.has(MmaKind::MmaSync) || elementBytes(operands.front()) > 2 ||
      sums > target.maxSharedMemoryBytes)
    return target.sharedMemoryBytes;
  return std::max(target.sharedMemoryBytes, sums);
}

/// The largest chunk whose buffers take at most half the target's shared
/// memory (two workgroups can share a compute unit), or 0; no larger than
/// needed for a reduction of `steps` (when known).
int64_t chooseChunk(ArrayRef<Operand> operands, const GpuTarget &target,
                    std::optional<int64_t> steps) {
  int64_t chosen = 0;
  for (int64_t chunk : kChunks) {
    if (stagedBytes(operands, chunk) > target.sharedMemoryBytes / 2)
      break;
    chosen = chunk;
    if (steps && chunk >= *steps)
      break;
  }
  return chosen;
}

/// The thread count of `launch` (of static block size) and the thread's
/// linear id in it.
std::pair<int64_t, Value> threadCountAndId(OpBuilder &b, Location loc, gpu::LaunchOp launch) {
  auto [x, y, z] = *staticBlockSize(launch);
  gpu::KernelDim3 ids = launch.getThreadIds();
  Value id = affine::makeComposedAffineApply(b, loc, linearThreadId(launch),
                                             SmallVector<OpFoldResult>{ids.x, ids.y, ids.z});
  return {x * y * z, id};
}

/// What a thread does with one element of a chunk: its slot among the
/// thread's elements (0, 1, ...), its indices in the tile and in the
/// buffer.
using ElementFn = function_ref<void(OpBuilder &, Value slot, ValueRange tileIndices,
                                    ValueRange bufferIndices)>;

/// Calls `element` for each element of the chunk [k, k + size) of
/// `operand`'s tile along its reduced dimension (a chunk of `chunk` in the
/// buffer) that thread `thread` of `threads` copies: element i (in the
/// operand's copyOrder) by thread i mod `threads`, consecutive threads on
/// consecutive elements, skipping
/// what lies past the tile (the last chunk, an edge tile). With `slots`,
/// the loop walks the thread's slots (a constant trip count: unrolled,
/// they are registers); without, the elements (slot null). With `vector`
/// > 1, an element is a run of that many along the innermost dimension
/// (the chunk whole and a whole number of runs long: see wholeRuns), and
/// the indices are its first's.
void forEachElementOfChunk(OpBuilder &b, Location loc, const Operand &operand, Value k,
                           Value size, int64_t chunk, int64_t threads, Value thread, bool slots,
                           ElementFn element, int64_t vector = 1) {
  SmallVector<int64_t> shape = chunkShape(operand, chunk);
  // The tile's sizes where the buffer's do not bound them.
  auto tileType = cast<MemRefType>(operand.tile.getType());
  SmallVector<Value> limits(shape.size());
  for (auto [d, extent] : llvm::enumerate(shape)) {
    if (d == operand.reduced)
      limits[d] = getConstantIntValue(size) == chunk ? Value() : size;
    else if (tileType.isDynamicDim(d) || tileType.getDimSize(d) != extent)
      limits[d] = memref::DimOp::create(b, loc, operand.tile, d);
  }
  assert((vector == 1 || llvm::all_of(limits, [](Value v) { return !v; })) &&
         "runs are copied from whole chunks only");
  assert((vector == 1 || llvm::is_sorted(operand.copyOrder)) &&
         "runs are copied in the tile's order");
  // From here on the dimensions are in the copy's order, until the indices
  // go back to the tile's.
  shape = llvm::map_to_vector(operand.copyOrder, [&](unsigned d) { return shape[d]; });
  limits = llvm::map_to_vector(operand.copyOrder, [&](unsigned d) { return limits[d]; });
  shape.back() /= vector;
  int64_t total = llvm::product_of(shape);
  OpBuilder::InsertionGuard guard(b);
  // The chunk's rows: its first dimension of more than one element (after
  // a batch of one). Where the threads copy whole rows at a time, a
  // thread's slot j is its slot 0's element j * threads / rowElements rows
  // on: only its row depends on the slot, so its addresses are one base and
  // constant steps, not a register each.
  int64_t rows = 0;
  while (rows + 1 < static_cast<int64_t>(shape.size()) && shape[rows] == 1)
    ++rows;
  int64_t rowElements = llvm::product_of(ArrayRef(shape).drop_front(rows + 1));
  bool byRows = slots && threads % rowElements == 0;
  // The element's linear index, by rows the thread's (its digits within a
  // row are the element's); the thread's slot; by rows, the element's row.
  Value linear, slot, row;
  if (!slots) {
    auto loop = scf::ForOp::create(b, loc, thread, arith::ConstantIndexOp::create(b, loc, total),
                                   arith::ConstantIndexOp::create(b, loc, threads));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    linear = loop.getInductionVar();
  } else {
    // Slot j: element thread + j * threads (by rows too, computed apart).
    auto loop = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0),
        arith::ConstantIndexOp::create(b, loc, llvm::divideCeil(total, threads)),
        arith::ConstantIndexOp::create(b, loc, 1));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    slot = loop.getInductionVar();
    AffineExpr s0, s1;
    bindSymbols(b.getContext(), s0, s1);
    SmallVector<OpFoldResult> operands{thread, slot};
    if (byRows) {
      linear = thread;
      row = affine::makeComposedAffineApply(
          b, loc, s0.floorDiv(rowElements) + s1 * (threads / rowElements), operands);
    } else {
      linear = affine::makeComposedAffineApply(b, loc, s0 + s1 * threads, operands);
    }
  }
  if (slots && total % threads != 0) {
    // Past the last element: past the last row, by rows.
    Value below = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, byRows ? row : linear,
        arith::ConstantIndexOp::create(b, loc, byRows ? shape[rows] : total));
    auto within = scf::IfOp::create(b, loc, below, /*withElseRegion=*/false);
    b.setInsertionPoint(within.thenBlock()->getTerminator());
  }
  // The indices: `linear`'s digits (by rows, those within a row).
  SmallVector<Value> indices(shape.size());
  int64_t lastDigit = byRows ? rows + 1 : 1;
  Value rest = linear;
  for (int64_t d = shape.size() - 1; d >= lastDigit; --d) {
    Value extent = arith::ConstantIndexOp::create(b, loc, shape[d]);
    indices[d] = arith::RemUIOp::create(b, loc, rest, extent);
    if (!byRows || d > lastDigit)
      rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  if (byRows) {
    for (int64_t d = 0; d < rows; ++d)
      indices[d] = arith::ConstantIndexOp::create(b, loc, 0);
    indices[rows] = row;
  } else {
    indices[0] = rest;
  }
  if (vector > 1)
    indices.back() = arith::MulIOp::create(b, loc, indices.back(),
                                           arith::ConstantIndexOp::create(b, loc, vector));
  Value inside;
  for (auto [index, limit] : llvm::zip(indices, limits)) {
    if (!limit)
      continue;
    Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index, limit);
    inside = inside ? arith::AndIOp::create(b, loc, inside, below).getResult() : below;
  }
  if (inside) {
    auto within = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPoint(within.thenBlock()->getTerminator());
  }
  SmallVector<Value> tileIndices(indices.size());
  for (auto [index, d] : llvm::zip(indices, operand.copyOrder))
    tileIndices[d] = index;
  SmallVector<Value> source = tileIndices;
  source[operand.reduced] = arith::AddIOp::create(b, loc, k, tileIndices[operand.reduced]);
  element(b, slot, source, inBufferOrder<Value>(operand, tileIndices));
}

/// The elements of one chunk a thread copies at most.
int64_t elementsPerThread(const Operand &operand, int64_t chunk, int64_t threads) {
  return llvm::divideCeil(llvm::product_of(chunkShape(operand, chunk)), threads);
}

/// A thread's contraction whose operands this pass stages: in a launch of
/// static block size, directly in its body or in one guard (`if thread id
/// < trip count`) there, its first loop a reduction, its result a private
/// accumulator; the ops before it in its guard either free of memory
/// effects, allocas, or without results (the accumulator's fill), so that
/// they can leave the guard.
struct Contraction {
  linalg::GenericOp op;
  gpu::LaunchOp launch;
  scf::IfOp guard; ///< or null
  SmallVector<Operand, 2> operands;
};

std::optional<Contraction> asContraction(linalg::GenericOp op, const GpuTarget &target,
                                         DenseMap<Value, bool> &memo) {
  auto launch = op->getParentOfType<gpu::LaunchOp>();
  if (!launch || !linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics() ||
      op.getIteratorTypesArray().front() != utils::IteratorType::reduction ||
      !isPrivateMemory(op.getDpsInitOperand(0)->get().getType()))
    return std::nullopt;
  Block *body = &launch.getBody().front();
  scf::IfOp guard;
  if (op->getBlock() != body) {
    guard = dyn_cast<scf::IfOp>(op->getParentOp());
    if (!guard || guard->getBlock() != body || guard.getNumResults() != 0 ||
        !guard.getElseRegion().empty())
      return std::nullopt;
    for (Operation &before : guard.thenBlock()->getOperations()) {
      if (&before == op.getOperation())
        break;
      if (!isPure(&before) && !isa<memref::AllocaOp>(before) && before.getNumResults() != 0)
        return std::nullopt;
    }
  }
  Contraction contraction{op, launch, guard, {}};
  for (unsigned input = 0; input < 2; ++input) {
    std::optional<Operand> operand = stageable(op, input, launch, target, memo);
    if (!operand)
      return std::nullopt;
    contraction.operands.push_back(*operand);
  }
  OpFoldResult reduced = contraction.operands[0].sizes[contraction.operands[0].reduced];
  if (auto size = dyn_cast<Value>(reduced); size && dependsOnThreadIds(size, launch, memo))
    return std::nullopt;
  return contraction;
}

/// Moves the ops before the contraction in its guard out of it: the pure
/// ones (free of effects and speculatable: index arithmetic and views,
/// harmless in the threads the guard idles) and allocas (each thread's
/// own) before the guard, the others (the accumulator's fill) into a guard
/// of their own before it.
void hoistOutOfGuard(OpBuilder &b, Contraction &c) {
  SmallVector<Operation *> effects;
  for (Operation &before : llvm::make_early_inc_range(c.guard.thenBlock()->getOperations())) {
    if (&before == c.op.getOperation())
      break;
    if (isPure(&before) || isa<memref::AllocaOp>(before))
      before.moveBefore(c.guard);
    else
      effects.push_back(&before);
  }
  if (effects.empty())
    return;
  b.setInsertionPoint(c.guard);
  auto first = scf::IfOp::create(b, c.op.getLoc(), c.guard.getCondition(), false);
  for (Operation *effect : effects)
    effect->moveBefore(first.thenBlock()->getTerminator());
}

/// The size of the chunk at `k`: `chunk`, or what is left of `total`.
Value chunkSize(OpBuilder &b, Location loc, Value k, Value total, int64_t chunk,
                std::optional<int64_t> staticTotal) {
  if (staticTotal && *staticTotal % chunk == 0)
    return arith::ConstantIndexOp::create(b, loc, chunk);
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  return affine::makeComposedAffineMin(
      b, loc, AffineMap::get(0, 2, {getAffineConstantExpr(chunk, b.getContext()), s1 - s0},
                             b.getContext()),
      SmallVector<OpFoldResult>{k, total});
}

/// Points `c.op` at the staged chunks (views of the buffers, of `size`
/// steps) and moves it before `compute`.
void readFromChunks(OpBuilder &b, Location loc, Contraction &c, ArrayRef<Value> chunks,
                    Value size, Operation *compute) {
  // The thread's views, now of the chunk in shared memory; the op reads
  // them in bufferOrder.
  b.setInsertionPoint(compute);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = c.op.getIndexingMapsArray();
  for (auto [operand, staged] : llvm::zip(c.operands, chunks)) {
    SmallVector<OpFoldResult> offsets = operand.offsets, sizes = operand.sizes;
    offsets[operand.reduced] = b.getIndexAttr(0);
    sizes[operand.reduced] = getAsOpFoldResult(size);
    SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
    Value view = memref::SubViewOp::create(b, loc, staged,
                                           inBufferOrder<OpFoldResult>(operand, offsets),
                                           inBufferOrder<OpFoldResult>(operand, sizes), strides);
    c.op.getDpsInputOperand(operand.input)->set(view);
    AffineMap &map = maps[operand.input];
    map = AffineMap::get(map.getNumDims(), 0,
                         inBufferOrder<AffineExpr>(operand, map.getResults()), ctx);
  }
  c.op.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
  c.op->moveBefore(compute);
}

/// Where `c`'s op goes in the chunk loop: before `end`, in a guard of its
/// own if it had one.
Operation *computePoint(OpBuilder &b, Location loc, Contraction &c, Operation *end) {
  if (!c.guard)
    return end;
  b.setInsertionPoint(end);
  return scf::IfOp::create(b, loc, c.guard.getCondition(), false).thenBlock()->getTerminator();
}

/// The buffers of `c`'s operands, `copies` chunks each, once per workgroup
/// (at the start of the launch); the ops before the op in its guard leave
/// it, and the builder is left where the staging goes: before the guard
/// (or the op).
SmallVector<memref::AllocOp> allocateBuffers(OpBuilder &b, Location loc, Contraction &c,
                                             int64_t chunk, int64_t copies) {
  b.setInsertionPointToStart(&c.launch.getBody().front());
  SmallVector<memref::AllocOp> buffers;
  for (const Operand &operand : c.operands)
    buffers.push_back(createBuffer(b, loc, operand, chunk, copies));
  if (c.guard)
    hoistOutOfGuard(b, c);
  b.setInsertionPoint(c.guard ? c.guard.getOperation() : c.op.getOperation());
  return buffers;
}

/// Copies the chunk at step `k` (of `size` steps) of `operand` into `view`
/// (a chunk of its buffer), each thread its elements one at a time.
void copyOperandChunk(OpBuilder &b, Location loc, const Operand &operand, Value k, Value size,
                      int64_t chunk, Value view, int64_t threads, Value thread) {
  forEachElementOfChunk(b, loc, operand, k, size, chunk, threads, thread, /*slots=*/false,
                        [&, tile = operand.tile](OpBuilder &nb, Value, ValueRange from,
                                                 ValueRange to) {
                          Value v = memref::LoadOp::create(nb, loc, tile, from);
                          memref::StoreOp::create(nb, loc, v, view, to);
                        });
}

/// The same for all of `c`'s operands, into `views`.
void copyChunk(OpBuilder &b, Location loc, Contraction &c, Value k, Value size, int64_t chunk,
               ArrayRef<Value> views, int64_t threads, Value thread) {
  for (auto [operand, view] : llvm::zip(c.operands, views))
    copyOperandChunk(b, loc, operand, k, size, chunk, view, threads, thread);
}

/// Registers for a thread's elements of a chunk of `operand`, between their
/// load and their store.
Value allocateRegisters(OpBuilder &b, Location loc, const Operand &operand, int64_t chunk,
                        int64_t threads) {
  auto privateSpace = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Private);
  return memref::AllocaOp::create(
      b, loc,
      MemRefType::get({elementsPerThread(operand, chunk, threads)},
                      cast<MemRefType>(operand.tile.getType()).getElementType(), nullptr,
                      privateSpace));
}

/// Loads the thread's elements of `operand`'s chunk at step `k` into
/// `registers`, every load issued before any is needed.
void loadIntoRegisters(OpBuilder &b, Location loc, const Operand &operand, Value registers,
                       Value k, Value size, int64_t chunk, int64_t threads, Value thread) {
  forEachElementOfChunk(b, loc, operand, k, size, chunk, threads, thread, /*slots=*/true,
                        [&, tile = operand.tile](OpBuilder &nb, Value slot, ValueRange from,
                                                 ValueRange) {
                          Value v = memref::LoadOp::create(nb, loc, tile, from);
                          memref::StoreOp::create(nb, loc, v, registers, slot);
                        });
}

/// Stores what loadIntoRegisters loaded into `view`, a chunk of the
/// operand's buffer.
void storeFromRegisters(OpBuilder &b, Location loc, const Operand &operand, Value registers,
                        Value view, Value k, Value size, int64_t chunk, int64_t threads,
                        Value thread) {
  forEachElementOfChunk(b, loc, operand, k, size, chunk, threads, thread, /*slots=*/true,
                        [&](OpBuilder &nb, Value slot, ValueRange, ValueRange to) {
                          Value v = memref::LoadOp::create(nb, loc, registers, slot);
                          memref::StoreOp::create(nb, loc, v, view, to);
                        });
}

/// Stages `c`'s operands in shared memory, `chunk` steps of the reduction
/// at a time, in `copies` (1 or 2) buffers. Without `prefetch` (one
/// buffer), each chunk is copied in, a barrier, computed, a barrier. With
/// it, the first chunk is copied before the loop; in the loop each thread
/// loads its elements of the next chunk into registers (all of them issued
/// before any is needed), computes the current one while they arrive and
/// stores them: into the other buffer, then one barrier; or, with one
/// buffer, after a barrier (everyone is done reading it), then a second.
void stageOperands(Contraction &c, int64_t chunk, int64_t copies, bool prefetch) {
  Location loc = c.op.getLoc();
  MLIRContext *ctx = c.op.getContext();
  OpBuilder b(ctx);
  SmallVector<memref::AllocOp> buffers = allocateBuffers(b, loc, c, chunk, copies);
  auto [threads, thread] = threadCountAndId(b, loc, c.launch);
  const Operand &first = c.operands.front();
  OpFoldResult reduced = first.sizes[first.reduced];
  std::optional<int64_t> staticTotal = getConstantIntValue(reduced);
  Value total = getValueOrCreateConstantIndexOp(b, loc, reduced);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value step = arith::ConstantIndexOp::create(b, loc, chunk);

  if (!prefetch) {
    SmallVector<Value> views;
    {
      OpBuilder::InsertionGuard atStart(b);
      b.setInsertionPointAfter(buffers.back());
      views = chunkViews(b, loc, buffers, c.operands, chunk, Value());
    }
    auto loop = scf::ForOp::create(b, loc, zero, total, step);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value k = loop.getInductionVar();
    Value size = chunkSize(b, loc, k, total, chunk, staticTotal);
    copyChunk(b, loc, c, k, size, chunk, views, threads, thread);
    gpu::BarrierOp::create(b, loc);
    Operation *compute = computePoint(b, loc, c, gpu::BarrierOp::create(b, loc));
    readFromChunks(b, loc, c, views, size, compute);
    return;
  }

  // The thread's elements of a chunk, in registers between load and store.
  SmallVector<Value> registers;
  for (const Operand &operand : c.operands)
    registers.push_back(allocateRegisters(b, loc, operand, chunk, threads));
  // The first chunk's views: copy 0 of two, or the one buffer's (every
  // chunk's).
  SmallVector<Value> firstViews =
      chunkViews(b, loc, buffers, c.operands, chunk, copies == 2 ? zero : Value());
  copyChunk(b, loc, c, zero, chunkSize(b, loc, zero, total, chunk, staticTotal), chunk,
            firstViews, threads, thread);
  gpu::BarrierOp::create(b, loc);

  auto loop = scf::ForOp::create(b, loc, zero, total, step);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value k = loop.getInductionVar();
  Value copy, other;
  if (copies == 2) {
    AffineExpr s0;
    bindSymbols(ctx, s0);
    copy = affine::makeComposedAffineApply(b, loc, s0.floorDiv(chunk) % 2, {OpFoldResult(k)});
    other = affine::makeComposedAffineApply(b, loc, (s0.floorDiv(chunk) + 1) % 2,
                                            {OpFoldResult(k)});
  }
  Value next = arith::AddIOp::create(b, loc, k, step);
  Value nextSize = chunkSize(b, loc, next, total, chunk, staticTotal);
  Value hasNext = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next, total);
  auto loads = scf::IfOp::create(b, loc, hasNext, /*withElseRegion=*/false);
  // With one buffer, everyone is done reading it before it is written.
  Operation *readDone = copies == 1 ? gpu::BarrierOp::create(b, loc).getOperation() : nullptr;
  auto stores = scf::IfOp::create(b, loc, hasNext, /*withElseRegion=*/false);
  gpu::BarrierOp::create(b, loc);
  b.setInsertionPoint(loads.thenBlock()->getTerminator());
  for (auto [operand, regs] : llvm::zip(c.operands, registers))
    loadIntoRegisters(b, loc, operand, regs, next, nextSize, chunk, threads, thread);
  b.setInsertionPoint(stores.thenBlock()->getTerminator());
  for (auto [i, operand, regs, buffer] : llvm::enumerate(c.operands, registers, buffers)) {
    Value view = copies == 2 ? chunkView(b, loc, buffer, operand, chunk, other) : firstViews[i];
    storeFromRegisters(b, loc, operand, regs, view, next, nextSize, chunk, threads, thread);
  }
  Operation *end = readDone ? readDone : stores.getOperation();
  b.setInsertionPoint(end);
  Value size = chunkSize(b, loc, k, total, chunk, staticTotal);
  SmallVector<Value> current =
      copies == 2 ? chunkViews(b, loc, buffers, c.operands, chunk, copy) : firstViews;
  Operation *compute = computePoint(b, loc, c, end);
  readFromChunks(b, loc, c, current, size, compute);
}

/// The elements of a 16-byte run of `operand`'s tile, where every chunk of
/// `chunk` steps is a whole number of such runs: whole (the tile's sizes
/// static and the buffer's, the reduction's `steps` a whole number of
/// chunks), its innermost dimension contiguous, innermost in the buffer
/// too and a whole number of runs long, the tile's other strides whole
/// numbers of runs; 0 where not, or where the tile is computed on read.
/// (Where the tile starts is known at run time: tilesAligned.)
int64_t wholeRuns(const Operand &operand, int64_t chunk, std::optional<int64_t> steps) {
  auto type = cast<MemRefType>(operand.tile.getType());
  SmallVector<int64_t> shape = chunkShape(operand, chunk);
  int64_t run = 16 / elementBytes(operand), last = shape.size() - 1;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (operand.computedOnRead || !steps || *steps % chunk != 0 ||
      bufferOrder(operand).back() != last ||
      shape[last] % run != 0 || failed(type.getStridesAndOffset(strides, offset)) ||
      strides[last] != 1)
    return 0;
  for (int64_t d = 0; d < last; ++d)
    if (ShapedType::isDynamic(strides[d]) || strides[d] % run != 0)
      return 0;
  for (int64_t d = 0; d <= last; ++d)
    if (d != operand.reduced && (type.isDynamicDim(d) || type.getDimSize(d) != shape[d]))
      return 0;
  return run;
}

/// Whether every one of `operands`' tiles whose `runs` are not 0 starts on
/// 16 bytes (an i1): the kernel's buffers do, their views not always (an
/// odd row, a slice of a batch). A tile computed on read has no address.
Value tilesAligned(OpBuilder &b, Location loc, ArrayRef<Operand> operands,
                   ArrayRef<int64_t> runs) {
  Value all;
  for (auto [operand, run] : llvm::zip(operands, runs)) {
    if (!run)
      continue;
    Value start = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operand.tile);
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, operand.tile);
    AffineExpr s0, s1;
    bindSymbols(b.getContext(), s0, s1);
    Value misaligned = affine::makeComposedAffineApply(
        b, loc, (s0 + s1 * elementBytes(operand)) % 16,
        {OpFoldResult(start), OpFoldResult(metadata.getOffset())});
    Value aligned = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, misaligned,
                                          arith::ConstantIndexOp::create(b, loc, 0));
    all = all ? arith::AndIOp::create(b, loc, all, aligned).getResult() : aligned;
  }
  return all;
}

/// Stages `c`'s operands by asynchronous copies of 16 bytes (cp.async.cg,
/// `runs[i]` elements of operand i: see wholeRuns), `stages` chunks in
/// flight. The copies of chunks 0 .. stages - 2 start in a loop before the
/// main one, each chunk's a group of its own. At chunk i, each thread waits until at
/// most stages - 2 of its groups are pending (chunk i's has landed), the
/// threads meet at a barrier (chunk i is everyone's, and everyone is done
/// with chunk i - 1), start the copies of chunk i + stages - 1 into the
/// buffer chunk i - 1 held (a group, empty past the last chunk), and
/// compute chunk i. Where a tile does not start on 16 bytes, the threads
/// copy its elements one at a time instead, in the same places.
///
/// An operand computed on read (runs 0: a convolution's receptive fields,
/// a transpose) has no bytes to copy: each thread loads its elements of
/// chunk i + stages - 1 into registers where the others' copies start,
/// and stores them into the same buffer after computing chunk i (the
/// barrier at chunk i + 1 makes them everyone's long before chunk
/// i + stages - 1 is read). Before the main loop, its first chunks are
/// copied one element at a time, behind the others' asynchronous copies.
///
/// `synchronous`: every tile is copied as one that does not start on 16
/// bytes, at once, with no cp.async, commit or wait (the same schedule on
/// any target).
void stageAsync(Contraction &c, int64_t chunk, int64_t stages, ArrayRef<int64_t> runs,
                bool synchronous) {
  Location loc = c.op.getLoc();
  OpBuilder b(c.op.getContext());
  SmallVector<memref::AllocOp> buffers = allocateBuffers(b, loc, c, chunk, stages);
  // Not a structured binding: lambdas below capture them.
  std::pair<int64_t, Value> countAndId = threadCountAndId(b, loc, c.launch);
  int64_t threads = countAndId.first;
  Value thread = countAndId.second;
  const Operand &first = c.operands.front();
  int64_t steps = *getConstantIntValue(first.sizes[first.reduced]);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value size = index(chunk);
  Value aligned = synchronous ? Value() : tilesAligned(b, loc, c.operands, runs);
  auto commitGroup = [&] {
    if (!synchronous)
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
  };
  SmallVector<Value> registers(c.operands.size());
  for (auto [operand, run, regs] : llvm::zip(c.operands, runs, registers))
    if (!run)
      regs = allocateRegisters(b, loc, operand, chunk, threads);
  // Starts copying the chunk at step `k` of the operands copied
  // asynchronously into copy `copy` of their buffers.
  auto startCopy = [&](Value k, Value copy) {
    SmallVector<Value> views = chunkViews(b, loc, buffers, c.operands, chunk, copy);
    OpBuilder::InsertionGuard guard(b);
    scf::IfOp branch;
    if (aligned)
      branch = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
    for (auto [operand, view, run] : llvm::zip(c.operands, views, runs)) {
      if (!run)
        continue;
      if (branch) {
        b.setInsertionPoint(branch.thenBlock()->getTerminator());
        forEachElementOfChunk(
            b, loc, operand, k, size, chunk, threads, thread, /*slots=*/false,
            [&, tile = operand.tile, view = view, run = run](OpBuilder &nb, Value,
                                                             ValueRange from, ValueRange to) {
              nvgpu::DeviceAsyncCopyOp::create(nb, loc, view, to, tile, from,
                                               nb.getIndexAttr(run), Value(), nb.getUnitAttr());
            },
            run);
        b.setInsertionPoint(branch.elseBlock()->getTerminator());
      }
      copyOperandChunk(b, loc, operand, k, size, chunk, view, threads, thread);
    }
    return views;
  };

  // Chunks 0 .. stages - 2, in a loop: unrolled, the element-by-element
  // copies of an operand computed on read held enough addresses for ptxas
  // to spill on sm_90a (--split-k's bf16 convolution in cuda.test).
  {
    auto prologue = scf::ForOp::create(b, loc, index(0), index(stages - 1), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(prologue.getBody()->getTerminator());
    Value s = prologue.getInductionVar();
    Value k = arith::MulIOp::create(b, loc, s, size);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k, index(steps));
    auto copyFirst = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPoint(copyFirst.thenBlock()->getTerminator());
    SmallVector<Value> views = startCopy(k, s);
    for (auto [operand, view, run] : llvm::zip(c.operands, views, runs))
      if (!run)
        copyOperandChunk(b, loc, operand, k, size, chunk, view, threads, thread);
    b.setInsertionPointAfter(copyFirst);
    commitGroup();
  }
  auto loop = scf::ForOp::create(b, loc, index(0), index(steps), size);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value k = loop.getInductionVar();
  if (!synchronous)
    NVVM::CpAsyncWaitGroupOp::create(b, loc, stages - 2);
  gpu::BarrierOp::create(b, loc);
  AffineExpr s0;
  bindSymbols(b.getContext(), s0);
  Value next = affine::makeComposedAffineApply(b, loc, s0 + (stages - 1) * chunk,
                                               {OpFoldResult(k)});
  Value nextCopy = affine::makeComposedAffineApply(
      b, loc, (s0.floorDiv(chunk) + stages - 1) % stages, {OpFoldResult(k)});
  Value hasNext = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next, index(steps));
  auto copyNext = scf::IfOp::create(b, loc, hasNext, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(copyNext.thenBlock()->getTerminator());
    startCopy(next, nextCopy);
    for (auto [operand, regs] : llvm::zip(c.operands, registers))
      if (regs)
        loadIntoRegisters(b, loc, operand, regs, next, size, chunk, threads, thread);
  }
  commitGroup();
  Value copy =
      affine::makeComposedAffineApply(b, loc, s0.floorDiv(chunk) % stages, {OpFoldResult(k)});
  SmallVector<Value> current = chunkViews(b, loc, buffers, c.operands, chunk, copy);
  Operation *end = loop.getBody()->getTerminator();
  if (llvm::is_contained(runs, 0)) {
    auto stores = scf::IfOp::create(b, loc, hasNext, /*withElseRegion=*/false);
    end = stores.getOperation();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(stores.thenBlock()->getTerminator());
    // The views made in copyNext do not reach here: made again.
    SmallVector<Value> views = chunkViews(b, loc, buffers, c.operands, chunk, nextCopy);
    for (auto [operand, regs, view] : llvm::zip(c.operands, registers, views))
      if (regs)
        storeFromRegisters(b, loc, operand, regs, view, next, size, chunk, threads, thread);
  }
  Operation *compute = computePoint(b, loc, c, end);
  readFromChunks(b, loc, c, current, size, compute);
}

struct KilnGpuPromoteOperandsPass
    : mlir::kiln::impl::KilnGpuPromoteOperandsBase<KilnGpuPromoteOperandsPass> {
  using KilnGpuPromoteOperandsBase::KilnGpuPromoteOperandsBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    std::vector<std::pair<Contraction, int64_t>> staged;
    getOperation().walk([&](gpu::LaunchOp launch) {
      if (!staticBlockSize(launch))
        return;
      // A workgroup computes one root op's tile: one contraction at most.
      DenseMap<Value, bool> memo;
      launch.getBody().walk([&](linalg::GenericOp op) {
        std::optional<Contraction> c = asContraction(op, *target, memo);
        if (!c)
          return WalkResult::advance();
        const Operand &first = c->operands.front();
        if (int64_t chunk = chooseChunk(c->operands, *target,
                                        getConstantIntValue(first.sizes[first.reduced])))
          staged.push_back({std::move(*c), chunk});
        return WalkResult::interrupt();
      });
    });
    for (auto &contractionAndChunk : staged) {
      Contraction &contraction = contractionAndChunk.first;
      int64_t chunk = contractionAndChunk.second;
      int64_t bytes = stagedBytes(contraction.operands, chunk);
      auto [x, y, z] = *staticBlockSize(contraction.launch);
      int64_t threads = x * y * z;
      // Asynchronous copies where every chunk moves in 16-byte runs: as
      // many chunks in flight as the workgroup's staging budget holds
      // (CUDA's multiprocessors hold several such workgroups; the tensor
      // cores' sums take the chunks' place after the loop where they do
      // not fit beside them: kiln-cuda-mma-sync). An operand computed on
      // read goes through a few registers a thread instead, beside the
      // other's asynchronous copies.
      const Operand &first = contraction.operands.front();
      std::optional<int64_t> steps = getConstantIntValue(first.sizes[first.reduced]);
      SmallVector<int64_t> runs = llvm::map_to_vector(
          contraction.operands, [&](const Operand &o) { return wholeRuns(o, chunk, steps); });
      bool throughRegisters = false, copiable = llvm::any_of(runs, [](int64_t r) { return r; });
      for (auto [operand, run] : llvm::zip(contraction.operands, runs)) {
        if (run)
          continue;
        throughRegisters = true;
        copiable = copiable && operand.computedOnRead &&
                   elementsPerThread(operand, chunk, threads) <= kMaxStagedPerThread;
      }
      int64_t stages =
          std::min(kMaxStages, stagingBudget(contraction.operands, *target) / bytes);
      if ((target->asyncCopies || synchronous) && stages >= 2 && copiable) {
        if (report)
          emitRemark(contraction.op.getLoc())
              << "placement: operands staged in shared memory, " << stages * bytes
              << " bytes, " << chunk << " steps of the reduction at a time, " << stages
              << " chunks in flight ("
              << (synchronous ? "each copied at once on the schedule of asynchronous copies"
                              : "asynchronous copies, 16 bytes a thread")
              << (throughRegisters ? "; an operand (receptive fields, a transpose) computed "
                                     "from its source as it is loaded, through registers"
                                   : "")
              << ")";
        stageAsync(contraction, chunk, stages, runs, synchronous);
        continue;
      }
      // The next chunk loaded during the current one where a thread's
      // elements of a chunk fit in a few registers, the chunk halved until
      // they do (loads in flight during the computation are worth more
      // than fewer barriers); into a second buffer where two fit where one
      // did.
      auto perThread = [&](int64_t size) {
        int64_t elements = 0;
        for (const Operand &operand : contraction.operands)
          elements += elementsPerThread(operand, size, threads);
        return elements;
      };
      // No smaller than a step of the tensor cores' instruction for the
      // elements (8 for tf32, 16 for 16 bits, 32 for bytes): kiln-cuda-
      // mma-sync takes whole ones.
      int64_t smallest = std::max(kChunks[0], 32 / elementBytes(first));
      int64_t prefetched = chunk;
      while (prefetched / 2 >= smallest && perThread(prefetched) > kMaxStagedPerThread)
        prefetched /= 2;
      bool prefetch = perThread(prefetched) <= kMaxStagedPerThread;
      if (prefetch && prefetched != chunk) {
        chunk = prefetched;
        bytes = stagedBytes(contraction.operands, chunk);
      }
      int64_t copies = prefetch && 2 * bytes <= target->sharedMemoryBytes / 2 ? 2 : 1;
      if (report)
        emitRemark(contraction.op.getLoc())
            << "placement: operands staged in shared memory, " << copies * bytes << " bytes, "
            << chunk << " steps of the reduction at a time"
            << (prefetch ? ", the next chunk loaded during the current one" : "")
            << (copies == 2 ? " into a second buffer" : "")
            << (llvm::any_of(contraction.operands,
                             [](const Operand &o) { return o.computedOnRead; })
                    ? ", an operand (receptive fields, a transpose) computed from its "
                      "source as it is loaded"
                    : "");
      stageOperands(contraction, chunk, copies, prefetch);
    }
  }
};

} // namespace
