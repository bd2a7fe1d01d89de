//===- StagedMatmul.cpp - a thread's matmul over staged chunks ------------===//
#include "codegen/cuda/StagedMatmul.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The PTX type of input `input` of `op`, of elements `element` summed in
/// `sum`: 16-bit floats widened to f32, f32 rounded to tf32 (with `tf32`),
/// 8-bit integers extended (by the body's extsi or extui) to i32.
std::optional<NVVM::MMATypes> ptxType(linalg::GenericOp op, unsigned input, Type element,
                                      Type sum, bool tf32) {
  if (sum.isF32()) {
    if (element.isF16())
      return NVVM::MMATypes::f16;
    if (element.isBF16())
      return NVVM::MMATypes::bf16;
    if (element.isF32() && tf32)
      return NVVM::MMATypes::tf32;
    return std::nullopt;
  }
  if (!sum.isInteger(32) || !element.isInteger(8))
    return std::nullopt;
  Value arg = op.getRegionInputArgs()[input];
  if (!arg.hasOneUse())
    return std::nullopt;
  Operation *extend = *arg.getUsers().begin();
  if (isa<arith::ExtSIOp>(extend))
    return NVVM::MMATypes::s8;
  if (isa<arith::ExtUIOp>(extend))
    return NVVM::MMATypes::u8;
  return std::nullopt;
}

/// The staged chunk `view` (a thread's view of it) views: the unpadded
/// view, of static shape, of a workgroup buffer (of one chunk, or of two
/// along a leading dimension).
memref::SubViewOp stagedChunk(memref::SubViewOp view) {
  auto chunk = view ? view.getSource().getDefiningOp<memref::SubViewOp>() : nullptr;
  if (!chunk || !chunk.getSource().getDefiningOp<memref::AllocOp>() ||
      !chunk.getType().hasStaticShape() || chunk.getType().getRank() < 2)
    return {};
  return chunk;
}

/// Input `input` of `op` as an operand whose chunk holds the reduction
/// (loop 0), loop `dim` (the rows or the columns) and not loop `other`,
/// every other loop with extent 1 in the chunk.
std::optional<StagedOperand> operandOf(linalg::GenericOp op, unsigned input, unsigned dim,
                                       unsigned other) {
  MLIRContext *ctx = op.getContext();
  OpOperand *operand = op.getDpsInputOperand(input);
  AffineMap map = op.getMatchingIndexingMap(operand);
  auto view = operand->get().getDefiningOp<memref::SubViewOp>();
  memref::SubViewOp chunk = stagedChunk(view);
  if (!chunk || !map.isProjectedPermutation() || map.getNumResults() != view.getType().getRank())
    return std::nullopt;
  std::optional<unsigned> step = map.getResultPosition(getAffineDimExpr(0, ctx));
  std::optional<unsigned> position = map.getResultPosition(getAffineDimExpr(dim, ctx));
  if (!step || !position || map.getResultPosition(getAffineDimExpr(other, ctx)))
    return std::nullopt;
  for (unsigned d = 0; d < map.getNumResults(); ++d)
    if (d != *step && d != *position && chunk.getType().getDimSize(d) != 1)
      return std::nullopt;
  return StagedOperand{view, *step, *position, input};
}

} // namespace

int64_t mlir::kiln::bytesOf(MemRefType type) {
  return llvm::alignTo(type.getNumElements() * type.getElementTypeBitWidth() / 8, 16);
}

int64_t mlir::kiln::workgroupBytes(gpu::LaunchOp launch) {
  int64_t bytes = 0;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (!isPrivateMemory(type) && type.getMemorySpace() && type.hasStaticShape())
      bytes += bytesOf(type);
  });
  return bytes;
}

memref::AllocOp mlir::kiln::bufferOf(const StagedOperand &operand) {
  return stagedChunk(operand.view).getSource().getDefiningOp<memref::AllocOp>();
}

std::optional<StagedMatmul> mlir::kiln::asStagedMatmul(linalg::GenericOp op, bool tf32,
                                                       const GpuTarget &target) {
  auto launch = op->getParentOfType<gpu::LaunchOp>();
  if (!launch || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics() || op.getNumLoops() < 3 ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().front() != utils::IteratorType::reduction ||
      !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  unsigned loops = op.getNumLoops(), rowLoop = loops - 2, colLoop = loops - 1;
  Value acc = op.getDpsInitOperand(0)->get();
  auto accType = cast<MemRefType>(acc.getType());
  AffineMap out = op.getIndexingMapsArray()[2];
  if (!isPrivateMemory(accType) ||
      out != AffineMap::getMultiDimIdentityMap(loops, op.getContext()).dropResult(0))
    return std::nullopt;
  for (int64_t d = 0; d + 2 < accType.getRank(); ++d)
    if (accType.getDimSize(d) != 1)
      return std::nullopt;
  StagedMatmul m{op, launch, {}, {}, {}, {}, {}, {}, {}, 0, 0, 0, 0, 0, false};
  m.guard = dyn_cast<scf::IfOp>(op->getParentOp());
  m.chunks = dyn_cast<scf::ForOp>((m.guard ? m.guard.getOperation() : op.getOperation())->getParentOp());
  if (!m.chunks || m.chunks->getBlock() != &launch.getBody().front())
    return std::nullopt;
  // A holds the rows, B the columns, in either order.
  std::optional<StagedOperand> a = operandOf(op, 0, rowLoop, colLoop);
  std::optional<StagedOperand> b = operandOf(op, 1, colLoop, rowLoop);
  if (!a || !b) {
    a = operandOf(op, 1, rowLoop, colLoop);
    b = operandOf(op, 0, colLoop, rowLoop);
  }
  if (!a || !b)
    return std::nullopt;
  m.a = *a;
  m.b = *b;
  // What the epilogue (after the loop) reuses must be defined before the
  // chunk loop: the thread's offsets and sizes, the guard's condition.
  SmallVector<Value> reused;
  for (const StagedOperand &operand : {m.a, m.b})
    for (OpFoldResult r : {operand.offset(), operand.size()})
      if (auto value = dyn_cast<Value>(r))
        reused.push_back(value);
  if (m.guard)
    reused.push_back(m.guard.getCondition());
  if (llvm::any_of(reused, [&](Value v) {
        return m.chunks->isAncestor(v.getParentBlock()->getParentOp());
      }))
    return std::nullopt;
  auto chunkA = cast<MemRefType>(m.a.chunk().getType());
  auto chunkB = cast<MemRefType>(m.b.chunk().getType());
  // The body sums products of the operands (widened): their element types
  // are the region's.
  m.sum = op.getRegionOutputArgs()[0].getType();
  std::optional<NVVM::MMATypes> typeA =
      ptxType(op, m.a.input, chunkA.getElementType(), m.sum, tf32);
  std::optional<NVVM::MMATypes> typeB =
      ptxType(op, m.b.input, chunkB.getElementType(), m.sum, tf32);
  if (!typeA || !typeB || chunkA.getElementType() != chunkB.getElementType())
    return std::nullopt;
  m.typeA = *typeA;
  m.typeB = *typeB;
  m.perRegister = 32 / chunkA.getElementTypeBitWidth();
  m.chunk = chunkA.getDimSize(m.a.step);
  m.rows = chunkA.getDimSize(m.a.position);
  m.cols = chunkB.getDimSize(m.b.position);
  // Every chunk whole: the op reads all C steps of each.
  if (chunkB.getDimSize(m.b.step) != m.chunk ||
      m.a.view.getType().getDimSize(m.a.step) != m.chunk)
    return std::nullopt;
  std::optional<std::array<int64_t, 3>> size = staticBlockSize(launch);
  if (!size)
    return std::nullopt;
  m.threads = (*size)[0] * (*size)[1] * (*size)[2];
  if (m.threads % kWarp != 0)
    return std::nullopt;
  // The sums' buffer joins the staged chunks in shared memory, or where
  // both do not fit, takes their place after the loop (where nothing else
  // lives there): dynamic shared memory where it passes the budget (a
  // 128x128 tile's 64 KiB).
  int64_t shared = workgroupBytes(launch), sums = m.rows * m.cols * 4;
  m.sumsReplaceChunks = shared + sums > target.sharedMemoryBytes;
  int64_t chunks = bytesOf(bufferOf(m.a).getType()) + bytesOf(bufferOf(m.b).getType());
  if (m.sumsReplaceChunks && (shared != chunks || sums > target.maxSharedMemoryBytes))
    return std::nullopt;
  return m;
}

Value mlir::kiln::sumsBuffer(OpBuilder &b, Location loc, StagedMatmul &m,
                             MutableArrayRef<Value> chunks) {
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto sumsType = MemRefType::get({m.rows, m.cols}, m.sum, nullptr, workgroup);
  b.setInsertionPointToStart(&m.launch.getBody().front());
  if (!m.sumsReplaceChunks) {
    auto sums = memref::AllocOp::create(b, loc, sumsType);
    sums.setAlignment(16);
    return sums;
  }
  int64_t bytes = bytesOf(sumsType), offset = 0;
  for (Value chunk : chunks)
    offset += bytesOf(cast<MemRefType>(chunk.getType()));
  auto shared = memref::AllocOp::create(
      b, loc, MemRefType::get({std::max(bytes, offset)}, b.getI8Type(), nullptr, workgroup));
  shared.setAlignment(16);
  auto view = [&](int64_t at, MemRefType type) {
    return memref::ViewOp::create(b, loc, type, shared,
                                  arith::ConstantIndexOp::create(b, loc, at), ValueRange{});
  };
  offset = 0;
  for (Value &chunk : chunks) {
    auto alloc = chunk.getDefiningOp<memref::AllocOp>();
    b.setInsertionPoint(alloc);
    chunk = view(offset, alloc.getType());
    alloc.replaceAllUsesWith(chunk);
    offset += bytesOf(alloc.getType());
    alloc.erase();
  }
  b.setInsertionPointAfter(shared);
  return view(0, sumsType);
}

Value mlir::kiln::zeroSums(OpBuilder &b, Location loc, StagedMatmul &m, ArrayRef<int64_t> shape,
                           Type sum) {
  b.setInsertionPoint(m.chunks);
  auto privateSpace = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Private);
  auto sums = memref::AllocaOp::create(b, loc, MemRefType::get(shape, sum, nullptr, privateSpace));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(sum));
  linalg::FillOp::create(b, loc, zero, sums.getResult());
  return sums;
}

void mlir::kiln::addSumsToAccumulators(OpBuilder &b, Location loc, StagedMatmul &m, Value sums,
                                       function_ref<void()> storeSums) {
  MLIRContext *ctx = b.getContext();
  b.setInsertionPointAfter(m.chunks);
  if (m.sumsReplaceChunks)
    gpu::BarrierOp::create(b, loc);
  storeSums();
  gpu::BarrierOp::create(b, loc);
  if (m.guard) {
    auto guard = scf::IfOp::create(b, loc, m.guard.getCondition(), false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  SmallVector<OpFoldResult> offsets{m.a.offset(), m.b.offset()};
  SmallVector<OpFoldResult> sizes{m.a.size(), m.b.size()};
  Value mine = memref::SubViewOp::create(b, loc, sums, offsets, sizes,
                                         SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  // The accumulator's last two dimensions are the region's (the others,
  // batches, have extent 1).
  Value acc = m.op.getDpsInitOperand(0)->get();
  unsigned rank = cast<MemRefType>(acc.getType()).getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap lastTwo = identity.getMinorSubMap(2);
  bool integer = m.integer();
  linalg::GenericOp::create(
      b, loc, ValueRange{mine}, ValueRange{acc}, ArrayRef<AffineMap>{lastTwo, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value total = integer ? arith::AddIOp::create(nb, nl, args[1], args[0]).getResult()
                              : arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        linalg::YieldOp::create(nb, nl, total);
      });

  m.op.erase();
  if (m.guard && m.guard.thenBlock()->without_terminator().empty())
    m.guard.erase();
}

Value Lane::at(Value origin, Value v, int64_t scale, int64_t c) {
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  return affine::makeComposedAffineApply(b, loc, s0 + s1 * scale + c,
                                         {OpFoldResult(origin), OpFoldResult(v)})
      .getResult();
}

Value Lane::plus(Value v, int64_t c) {
  AffineExpr s0;
  bindSymbols(b.getContext(), s0);
  return affine::makeComposedAffineApply(b, loc, s0 + c, {OpFoldResult(v)}).getResult();
}

Value Lane::at(Value origin, function_ref<AffineExpr(AffineExpr)> f) {
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  return affine::makeComposedAffineApply(b, loc, s1 + f(s0),
                                         {OpFoldResult(id), OpFoldResult(origin)})
      .getResult();
}

Lane mlir::kiln::laneOf(OpBuilder &b, Location loc, StagedMatmul &m, int64_t unitThreads,
                        int64_t unitRows, int64_t unitCols) {
  gpu::KernelDim3 ids = m.launch.getThreadIds();
  AffineExpr linear = linearThreadId(m.launch);
  SmallVector<OpFoldResult> operands{ids.x, ids.y, ids.z};
  auto apply = [&](AffineExpr e) {
    return affine::makeComposedAffineApply(b, loc, e, operands).getResult();
  };
  int64_t unitsAcross = m.cols / unitCols;
  AffineExpr unit = linear.floorDiv(unitThreads);
  return Lane{b,
              loc,
              apply(linear % kWarp),
              apply((linear % kWarp).floorDiv(4)),
              apply(linear % 4),
              apply(linear.floorDiv(kWarp) % (unitThreads / kWarp)),
              apply(unit.floorDiv(unitsAcross) * unitRows),
              apply((unit % unitsAcross) * unitCols),
              arith::ConstantIndexOp::create(b, loc, 0)};
}
