//===- Wgmma.cpp - matmuls on sm_90a's tensor cores, with wgmma -----------===//
//
// After kiln-gpu-promote-operands, a workgroup's tile of a 16-bit matmul
// summed in f32 reads chunks of both operands from shared memory (see
// StagedMatmul.h). On sm_90a this pass has the workgroup's warpgroups (4
// warps each) compute the tile with wgmma.mma_async, which reads both
// operands from shared memory itself, through matrix descriptors: each
// warpgroup owns a band of the tile's rows and, per 16 steps of the
// reduction, issues one m64nNk16 per 64 of its rows, N the tile's columns.
//
// wgmma reads shared memory in "core matrices" of 8 lines of 16 bytes
// (8 values), 128 contiguous bytes each (the descriptors' layout type 0,
// no swizzle). A core matrix's lines run along k for an operand whose
// chunk holds its steps along lines (K-major: a row of A, a column of B),
// along the rows or columns otherwise (MN-major, read transposed). This
// pass gives each operand a buffer of that layout in place of the one
// kiln-gpu-promote-operands made, and moves the staging's stores (16-byte
// cp.async runs, or single values) to their places in it. Core matrices
// along the rows (columns) follow each other; between those of
// consecutive 8 steps of k (K-major) or of consecutive 8 rows (MN-major)
// lie a few 16-byte gaps, so that the 8 runs that 8 consecutive threads
// copy land in 8 different quarters of the banks.
//
// A descriptor (PTX ISA 8.0, "Matrix Descriptor Format") is 64 bits: the
// start address >> 4 (bits 0-13), the leading dimension byte offset >> 4
// (16-29: between core matrices adjacent along k), the stride dimension
// byte offset >> 4 (32-45: between core matrices adjacent along M or N),
// base offset 0 and layout type 0 (no swizzle).
//
// Accumulator fragment of m64nNk16 (f32): thread t of the warpgroup, warp
// w = t / 32, g = (t % 32) / 4, q = t % 4, holds in register d
//   D[16 w + g + 8 ((d % 4) / 2)][8 (d / 4) + 2 q + d % 2].
//
// The staging writes shared memory through the generic proxy, which wgmma
// (the async proxy) does not see without a fence: before a chunk's wgmma
// each thread fences (fence.proxy.async.shared::cta) and the workgroup
// meets at a barrier. Where the chunks are staged in more than one buffer
// (cp.async, several in flight, or the next chunk stored from registers
// into the other of two), one chunk's wgmma run while the loop goes on to
// the next: each thread waits only for the previous chunk's
// (wgmma.wait_group 1), the workgroup meets at a barrier, and only then is
// the buffer that chunk held written again. With one buffer each chunk's
// wgmma are waited for (wait_group 0) before the next chunk's stores.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"
#include "codegen/cuda/StagedMatmul.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDAWGMMA
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kWarpgroup = 128;
/// The rows and steps of one wgmma (m64nNk16); its columns N, 8 to 256.
constexpr int64_t kM = 64, kK = 16, kMaxN = 256;
/// The most sums a thread keeps in registers (as mma.sync's widest tiles).
constexpr int64_t kMaxSums = 128;
/// A core matrix: 8 lines of 8 16-bit values.
constexpr int64_t kCore = 8, kCoreBytes = 128, kLineBytes = 16;

/// Where an operand's chunks lie in its buffer of core matrices, in bytes:
/// element (k, p) (p its row of A, column of B) of copy c at
///   c * copyBytes + (k / 8) * kGroup + (p / 8) * pGroup + line * 16 + 2 * run
/// with (line, run) = (p % 8, k % 8) where kMajor, else (k % 8, p % 8).
struct CoreLayout {
  bool kMajor;
  int64_t kGroup, pGroup, copyBytes;

  /// The leading and stride dimension byte offsets of a descriptor.
  int64_t leading() const { return kGroup; }
  int64_t stride() const { return pGroup; }
};

/// A gap (a whole number of 16-byte lines) after each group along the
/// copy's lines, so that 8 consecutive 16-byte runs (`runsPerLine` to a
/// line, the copy's order) start in different 16-byte quarters of 128
/// bytes (all 8 where `runsPerLine` is a power of 2).
int64_t gapBytes(int64_t runsPerLine) {
  int64_t runs = std::min<int64_t>(runsPerLine, kCore);
  return llvm::alignTo(llvm::divideCeil(kCoreBytes, runs), kLineBytes) % kCoreBytes;
}

/// The layout for `operand`'s chunks of `chunk` steps by `extent` rows or
/// columns. K-major, the copy's runs along a line are the k groups of one
/// row: the gap follows each k group. MN-major, they are the row groups
/// of one step: the gap follows each core matrix.
CoreLayout layoutFor(const StagedOperand &operand, int64_t chunk, int64_t extent) {
  CoreLayout l;
  l.kMajor = operand.stepsAlongLines();
  if (l.kMajor) {
    l.pGroup = kCoreBytes;
    l.kGroup = extent / kCore * kCoreBytes + gapBytes(chunk / kCore);
  } else {
    l.pGroup = kCoreBytes + gapBytes(extent / kCore);
    l.kGroup = extent / kCore * l.pGroup;
  }
  l.copyBytes = llvm::alignTo(chunk / kCore * l.kGroup, kCoreBytes);
  assert(l.kGroup % kLineBytes == 0 && l.pGroup % kLineBytes == 0 &&
         "descriptors encode offsets of whole 16-byte lines");
  return l;
}

/// A staged matmul that a workgroup's warpgroups compute by wgmma.
struct Matmul : StagedMatmul {
  int64_t groupRows; ///< each warpgroup's band of the tile
  CoreLayout layoutA, layoutB;
  int64_t copies;    ///< chunks each buffer holds
};

/// How many chunks the buffer of `operand` holds (its leading dimension,
/// where it has one more than a chunk), or 0 where its accesses are not
/// all the staging's stores into views of whole chunks, which this pass
/// can move.
int64_t copiesIfMovable(const StagedOperand &operand, linalg::GenericOp op) {
  memref::AllocOp buffer = bufferOf(operand);
  int64_t rank = operand.view.getType().getRank();
  int64_t copies = buffer.getType().getRank() == rank + 1 ? buffer.getType().getDimSize(0) : 1;
  for (Operation *user : buffer->getUsers()) {
    auto chunk = dyn_cast<memref::SubViewOp>(user);
    if (!chunk || chunk.getType().getRank() != rank || !chunk.hasUnitStride())
      return 0;
    for (OpOperand &use : chunk->getUses()) {
      Operation *access = use.getOwner();
      auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(access);
      auto store = dyn_cast<memref::StoreOp>(access);
      auto view = dyn_cast<memref::SubViewOp>(access);
      bool theOpsView = view && llvm::all_of(view->getUsers(),
                                             [&](Operation *u) { return u == op; });
      bool copyInto = copy && use.get() == copy.getDst() &&
                      copy.getDstElements().getZExtValue() == kCore; // 16 bytes
      bool storeInto = store && use.get() == store.getMemref();
      if (!copyInto && !storeInto && !theOpsView)
        return 0;
    }
  }
  return copies;
}

std::optional<Matmul> asMatmul(linalg::GenericOp op, const GpuTarget &target) {
  std::optional<StagedMatmul> staged = asStagedMatmul(op, /*tf32=*/false, target);
  if (!staged)
    return std::nullopt;
  Matmul m{*staged, 0, {}, {}, 0};
  bool sixteenBits = m.typeA == m.typeB &&
                     (m.typeA == NVVM::MMATypes::bf16 || m.typeA == NVVM::MMATypes::f16);
  if (!sixteenBits || m.threads % kWarpgroup != 0 || m.chunk % kK != 0 ||
      m.cols % kCore != 0 || m.cols > kMaxN)
    return std::nullopt;
  m.groupRows = m.rows / (m.threads / kWarpgroup);
  if (m.rows % (m.threads / kWarpgroup) != 0 || m.groupRows % kM != 0 ||
      m.groupRows / kM * m.cols / 2 > kMaxSums)
    return std::nullopt;
  int64_t copiesA = copiesIfMovable(m.a, op), copiesB = copiesIfMovable(m.b, op);
  if (!copiesA || copiesA != copiesB)
    return std::nullopt;
  m.copies = copiesA;
  m.layoutA = layoutFor(m.a, m.chunk, m.rows);
  m.layoutB = layoutFor(m.b, m.chunk, m.cols);
  // The new buffers in place of the old within the shared memory budget
  // (where the sums take the chunks' place, the chunks are all there is).
  int64_t chunks = m.copies * (m.layoutA.copyBytes + m.layoutB.copyBytes);
  int64_t others = workgroupBytes(m.launch) - bytesOf(bufferOf(m.a).getType()) -
                   bytesOf(bufferOf(m.b).getType());
  int64_t sums = m.rows * m.cols * 4;
  if (m.sumsReplaceChunks ? std::max(chunks, sums) > target.maxSharedMemoryBytes
                          : others + chunks + sums > target.sharedMemoryBytes)
    return std::nullopt;
  return m;
}

/// The byte offset of element (k, p) of copy `copy` in `layout`.
Value byteOffset(OpBuilder &b, Location loc, const CoreLayout &layout, OpFoldResult copy,
                 OpFoldResult k, OpFoldResult p) {
  AffineExpr c, s, x;
  bindSymbols(b.getContext(), c, s, x);
  AffineExpr line = layout.kMajor ? x % kCore : s % kCore;
  AffineExpr run = layout.kMajor ? s % kCore : x % kCore;
  AffineExpr at = c * layout.copyBytes + s.floorDiv(kCore) * layout.kGroup +
                  x.floorDiv(kCore) * layout.pGroup + line * kLineBytes + run * 2;
  return affine::makeComposedAffineApply(b, loc, at, {copy, k, p}).getResult();
}

/// Gives `operand`'s chunks a buffer of `layout` (16-bit values, indexed
/// by byte offset / 2): the staging's stores move there, the old buffer
/// and its views go (but the op's view, which goes with the op).
memref::AllocOp moveToCoreMatrices(OpBuilder &b, const StagedOperand &operand,
                                   const CoreLayout &layout, int64_t copies) {
  memref::AllocOp old = bufferOf(operand);
  Location loc = old.getLoc();
  b.setInsertionPoint(old);
  Type element = old.getType().getElementType();
  auto buffer = memref::AllocOp::create(
      b, loc,
      MemRefType::get({copies * layout.copyBytes / 2}, element, nullptr,
                      old.getType().getMemorySpace()));
  buffer.setAlignment(kLineBytes);
  bool leadingCopy = old.getType().getRank() == operand.view.getType().getRank() + 1;
  for (Operation *user : llvm::make_early_inc_range(old->getUsers())) {
    auto chunk = cast<memref::SubViewOp>(user);
    OpFoldResult copy = leadingCopy ? chunk.getMixedOffsets()[0] : b.getIndexAttr(0);
    for (Operation *access : llvm::make_early_inc_range(chunk->getUsers())) {
      if (isa<memref::SubViewOp>(access))
        continue; // the op's view
      b.setInsertionPoint(access);
      auto at = [&](ValueRange indices) {
        Value bytes = byteOffset(b, loc, layout, copy, indices[operand.step],
                                 indices[operand.position]);
        AffineExpr s0;
        bindSymbols(b.getContext(), s0);
        return affine::makeComposedAffineApply(b, loc, s0.floorDiv(2), {OpFoldResult(bytes)})
            .getResult();
      };
      if (auto copyOp = dyn_cast<nvgpu::DeviceAsyncCopyOp>(access)) {
        nvgpu::DeviceAsyncCopyOp::create(b, copyOp.getLoc(), buffer,
                                         ValueRange{at(copyOp.getDstIndices())},
                                         copyOp.getSrc(), copyOp.getSrcIndices(),
                                         copyOp.getDstElementsAttr(), copyOp.getSrcElements(),
                                         copyOp.getBypassL1Attr());
      } else {
        auto store = cast<memref::StoreOp>(access);
        memref::StoreOp::create(b, store.getLoc(), store.getValue(), buffer,
                                ValueRange{at(store.getIndices())});
      }
      access->erase();
    }
  }
  return buffer;
}

/// The descriptor of the 8 x 2 (A) or N/8 x 2 (B) core matrices `offset`
/// bytes after `base16` (a chunk's shared-window address >> 4, see
/// copyBase16), in `layout`.
Value descriptor(OpBuilder &b, Location loc, Value base16, const CoreLayout &layout,
                 int64_t offset) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i64, v); };
  Value start = arith::AddIOp::create(b, loc, base16, constant(offset / 16));
  start = arith::AndIOp::create(b, loc, start, constant(0x3FFF));
  int64_t high = (layout.leading() / 16) << 16 | (layout.stride() / 16) << 32;
  return arith::OrIOp::create(b, loc, start, constant(high));
}

/// The shared-window address of copy `copy` of `buffer`, >> 4, as an i64.
Value copyBase16(OpBuilder &b, Location loc, Value buffer, const CoreLayout &layout,
                 Value copy) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  Value at = affine::makeComposedAffineApply(b, loc, s0.floorDiv(16) + s1 * (layout.copyBytes / 16),
                                             {OpFoldResult(address), OpFoldResult(copy)});
  return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), at);
}

/// The copy of the chunks the op reads in the chunk loop: the offset of its
/// A view's source, where the buffer holds more than one.
Value currentCopy(OpBuilder &b, Location loc, Matmul &m) {
  if (m.copies == 1)
    return arith::ConstantIndexOp::create(b, loc, 0);
  auto chunk = m.a.chunk().getDefiningOp<memref::SubViewOp>();
  return getValueOrCreateConstantIndexOp(b, loc, chunk.getMixedOffsets()[0]);
}

/// Erases `buffers` and their views, once nothing reads them.
void eraseOldBuffers(ArrayRef<memref::AllocOp> buffers) {
  for (memref::AllocOp buffer : buffers) {
    for (Operation *chunk : llvm::make_early_inc_range(buffer->getUsers())) {
      for (Operation *view : llvm::make_early_inc_range(chunk->getUsers()))
        view->erase();
      chunk->erase();
    }
    buffer.erase();
  }
}

/// How the chunk loop stages a later chunk, where one chunk's wgmma can
/// stay in flight while the loop goes on: the ops that write the buffer
/// the previous chunk held, which may start only once that chunk's wgmma
/// are done in every warpgroup. Two forms of kiln-gpu-promote-operands':
/// - asynchronous: at the loop's start each thread waits for its copies
///   of this chunk (cp.async.wait_group) and the workgroup meets at a
///   barrier (`arrived`); then the copies of chunk i + S - 1 start into
///   the buffer chunk i - 1 held (an scf.if, false past the last chunk)
///   and are committed as a group: `writes`, before the op;
/// - two buffers, the next chunk loaded into registers before the op and
///   stored into the other buffer after it (an scf.if; `writes`), then a
///   barrier (`trailing`) before the next chunk's reads, which the
///   fence and barrier before the next chunk's wgmma take over.
/// Empty where the loop stages otherwise (one buffer), or where the op is
/// not in the loop's body itself.
struct LaterChunkStaging {
  gpu::BarrierOp arrived;          ///< asynchronous staging's, or null
  SmallVector<Operation *> writes; ///< in order
  gpu::BarrierOp trailing;         ///< the two buffers' closing barrier, or null

  explicit operator bool() const { return !writes.empty(); }
};

LaterChunkStaging asynchronousStaging(Matmul &m, Block *body, Operation *compute) {
  LaterChunkStaging s;
  for (Operation &op : *body) {
    // The wait leaves S - 2 groups pending: chunk i has landed, and the
    // copies started in the loop are of chunk i + S - 1, into the buffer
    // of chunk i - 1, never of chunk i.
    if (auto wait = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op); wait && !s.arrived) {
      if (m.copies < 2 || wait.getN() != m.copies - 2)
        return {};
      s.arrived = dyn_cast_or_null<gpu::BarrierOp>(op.getNextNode());
    }
    auto commit = dyn_cast<NVVM::CpAsyncCommitGroupOp>(op);
    if (!commit)
      continue;
    auto copies = dyn_cast_or_null<scf::IfOp>(commit->getPrevNode());
    if (!s.arrived || !copies || !commit->isBeforeInBlock(compute))
      return {};
    s.writes = {copies, commit};
    return s;
  }
  return {};
}

LaterChunkStaging twoBufferStaging(Matmul &m, Block *body, Operation *compute) {
  // After the op: the stores into the other buffer, a barrier, the yield.
  auto stores = dyn_cast_or_null<scf::IfOp>(compute->getNextNode());
  auto trailing = stores ? dyn_cast_or_null<gpu::BarrierOp>(stores->getNextNode()) : nullptr;
  if (m.copies != 2 || !trailing || trailing->getNextNode() != body->getTerminator())
    return {};
  LaterChunkStaging s;
  s.writes = {stores};
  s.trailing = trailing;
  return s;
}

/// Where the op reads its chunks in the chunk loop: its guard, or itself.
Operation *computePoint(Matmul &m) {
  return m.guard ? m.guard.getOperation() : m.op.getOperation();
}

LaterChunkStaging laterChunkStaging(Matmul &m, bool overlap) {
  if (!overlap)
    return {};
  Operation *compute = computePoint(m);
  Block *body = m.chunks.getBody();
  if (compute->getBlock() != body)
    return {};
  if (LaterChunkStaging s = asynchronousStaging(m, body, compute))
    return s;
  return twoBufferStaging(m, body, compute);
}

/// Rewrites `m` for wgmma; `staging` (laterChunkStaging's) says whether and
/// how a chunk's wgmma stay in flight.
void rewrite(Matmul &m, LaterChunkStaging &staging) {
  Location loc = m.op.getLoc();
  MLIRContext *ctx = m.op.getContext();
  OpBuilder b(ctx);
  Type f32 = b.getF32Type();
  int64_t blocks = m.groupRows / kM, regs = m.cols / 2;
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };

  // Where the op reads its chunks, before their views go.
  Operation *compute = computePoint(m);
  b.setInsertionPoint(compute);
  Value copy = currentCopy(b, loc, m);

  SmallVector<memref::AllocOp> old{bufferOf(m.a), bufferOf(m.b)};
  SmallVector<Value> buffers{moveToCoreMatrices(b, m.a, m.layoutA, m.copies),
                             moveToCoreMatrices(b, m.b, m.layoutB, m.copies)};
  Value sumsOut = sumsBuffer(b, loc, m, buffers);
  Value bufferA = buffers[0], bufferB = buffers[1];

  // The thread's sums, zero before the chunk loop.
  Value sums = zeroSums(b, loc, m, {blocks, regs}, f32);
  Lane lane = laneOf(b, loc, m, kWarpgroup, m.groupRows, m.cols);

  // In the chunk loop, in every thread: the staged chunk visible to the
  // async proxy (each thread's writes fenced before the barrier where the
  // workgroup meets), then the wgmma of each k step and band of 64 rows.
  auto fenceProxy = [&] {
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_shared,
                               NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  };
  if (staging.arrived) {
    b.setInsertionPoint(staging.arrived);
    fenceProxy();
    b.setInsertionPoint(compute);
  } else {
    b.setInsertionPoint(compute);
    fenceProxy();
    gpu::BarrierOp::create(b, loc);
  }
  Value baseA = copyBase16(b, loc, bufferA, m.layoutA, copy);
  Value baseB = copyBase16(b, loc, bufferB, m.layoutB, copy);
  // The warpgroup's band: rows rowOrigin on, as bytes into A's core matrices.
  Value bandA = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      affine::makeComposedAffineApply(
          b, loc, getAffineSymbolExpr(0, ctx).floorDiv(kCore) * (m.layoutA.pGroup / 16),
          {OpFoldResult(lane.rowOrigin)}));
  baseA = arith::AddIOp::create(b, loc, baseA, bandA);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  Type accType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(regs, f32));
  auto wgmmaType = m.typeA == NVVM::MMATypes::bf16 ? NVVM::WGMMATypes::bf16
                                                   : NVVM::WGMMATypes::f16;
  // Not transposed: K-major operands (row A, col B); transposed: MN-major.
  NVVM::MMALayout layoutA = m.layoutA.kMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col;
  NVVM::MMALayout layoutB = m.layoutB.kMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  for (int64_t step = 0; step < m.chunk; step += kK) {
    int64_t kBytesA = step / kCore * m.layoutA.kGroup, kBytesB = step / kCore * m.layoutB.kGroup;
    Value descB = descriptor(b, loc, baseB, m.layoutB, kBytesB);
    for (int64_t band = 0; band < blocks; ++band) {
      Value descA = descriptor(b, loc, baseA, m.layoutA,
                               kBytesA + band * kM / kCore * m.layoutA.pGroup);
      Value acc = LLVM::PoisonOp::create(b, loc, accType);
      for (int64_t d = 0; d < regs; ++d) {
        Value v = memref::LoadOp::create(b, loc, sums, ValueRange{index(band), index(d)});
        acc = LLVM::InsertValueOp::create(b, loc, acc, v, ArrayRef<int64_t>{d});
      }
      auto mma = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc, descA, descB,
          NVVM::MMAShapeAttr::get(ctx, kM, m.cols, kK), wgmmaType, wgmmaType,
          NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one,
          NVVM::WGMMAScaleIn::one, layoutA, layoutB, NVVM::MMAIntOverflowAttr());
      for (int64_t d = 0; d < regs; ++d) {
        Value v = LLVM::ExtractValueOp::create(b, loc, mma, ArrayRef<int64_t>{d});
        memref::StoreOp::create(b, loc, v, sums, ValueRange{index(band), index(d)});
      }
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  if (staging) {
    // This chunk's wgmma stay in flight; the previous chunk's are done in
    // every warpgroup before a later chunk overwrites its buffer.
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    gpu::BarrierOp::create(b, loc);
    for (Operation *write : staging.writes)
      write->moveBefore(compute);
    if (staging.trailing)
      staging.trailing.erase();
  } else {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  }

  // After the loop: register d of band j to row 64 j + 16 w + g + 8 ((d % 4)
  // / 2), column 8 (d / 4) + 2 q + d % 2 of the warpgroup's block.
  addSumsToAccumulators(b, loc, m, sumsOut, [&] {
    for (int64_t band = 0; band < blocks; ++band)
      for (int64_t d = 0; d < regs; ++d) {
        AffineExpr w, g;
        bindSymbols(ctx, w, g);
        Value row = affine::makeComposedAffineApply(
                        b, loc, w * 16 + g + kM * band + 8 * ((d % 4) / 2),
                        {OpFoldResult(lane.warp), OpFoldResult(lane.group)})
                        .getResult();
        row = lane.at(lane.rowOrigin, row, 1, 0);
        Value col = lane.at(lane.colOrigin, lane.quad, 2, 8 * (d / 4) + d % 2);
        Value v = memref::LoadOp::create(b, loc, sums, ValueRange{index(band), index(d)});
        memref::StoreOp::create(b, loc, v, sumsOut, ValueRange{row, col});
      }
  });
  if (staging) { // the last chunk's wgmma, before anything after the loop
    b.setInsertionPointAfter(m.chunks);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  }
  eraseOldBuffers(old);
}

struct KilnCudaWgmmaPass : mlir::kiln::impl::KilnCudaWgmmaBase<KilnCudaWgmmaPass> {
  using KilnCudaWgmmaBase::KilnCudaWgmmaBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    if (!llvm::is_contained(target->mma, MmaKind::Wgmma)) {
      getOperation().emitError("kiln-cuda-wgmma: target '")
          << target->name << "' has no wgmma (it needs cuda-sm90a)";
      return signalPassFailure();
    }
    std::vector<Matmul> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<Matmul> m = asMatmul(op, *target))
        matmuls.push_back(*m);
    });
    for (Matmul &m : matmuls) {
      LaterChunkStaging staging = laterChunkStaging(m, overlap);
      if (report)
        emitRemark(m.op.getLoc())
            << "placement: tensor cores (wgmma.m64n" << m.cols << "k16, "
            << stringifyMMATypes(m.typeA) << "), each warpgroup " << m.groupRows << "x"
            << m.cols << " of the " << m.rows << "x" << m.cols << " tile, "
            << (staging ? "a chunk's wgmma in flight while the next is staged"
                        : "each chunk's wgmma waited for");
      rewrite(m, staging);
    }
  }
};

} // namespace
