//===- MmaSync.cpp - 16-bit matmuls on the tensor cores, with mma.sync ----===//
//
// After kiln-gpu-promote-operands, a workgroup's tile of a widening matmul
// (f16 or bf16 operands, f32 sums; with `tf32`, an f32 matmul too) reads
// chunks of both operands from shared memory, and each thread sums its own
// 4x4 results with fma. This pass has the workgroup's warps compute the
// tile on the tensor cores instead: each warp owns a block of 16x8 tiles
// and, per K steps of the reduction, loads its fragments of A and B from
// the staged chunks and issues one mma.sync per tile (m16n8k16 for 16-bit
// operands, m16n8k8 for tf32), summing in f32 registers. After the
// reduction the warps write their sums to a workgroup buffer, and each
// thread adds its 4x4 results from there to its private accumulator, where
// the op's epilogue (bias, activation, the copy out) finds them as before.
//
// Fragment layouts are PTX ISA 8.0's (section 9.7.13.4.8): lane l has
// group g = l / 4 and t = l % 4; a register holds P = 2 16-bit values or
// P = 1 tf32 value, and K = 8P:
//   A (16xK, row-major): register r holds A[g + 8 (r % 2)][Pt + (K/2)(r / 2) + {0..P-1}]
//   B (Kx8, col-major):  register r holds B[Pt + (K/2) r + {0..P-1}][g]
//   C, D (16x8, f32):    element c is       C[g + 8 (c / 2)][2t + c % 2]
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDAMMASYNC
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kWarp = 32;
/// The rows and columns of an mma.sync tile.
constexpr int64_t kM = 16, kN = 8;

/// The mma.sync for an operand type: m16n8k16 on f16 or bf16 (two values
/// per 32-bit register), m16n8k8 on tf32 (one).
struct Instruction {
  NVVM::MMATypes type;
  int64_t perRegister;
  int64_t k() const { return 8 * perRegister; }
  StringRef name() const {
    return type == NVVM::MMATypes::tf32 ? "mma.sync.m16n8k8, tf32"
           : type == NVVM::MMATypes::f16 ? "mma.sync.m16n8k16, f16"
                                          : "mma.sync.m16n8k16, bf16";
  }
};

/// The instruction for a contraction of `operand` values summed in
/// `sum`: 16-bit floats widened to f32, or (with tf32) f32.
std::optional<Instruction> instructionFor(Type operand, Type sum, bool tf32) {
  if (!sum.isF32())
    return std::nullopt;
  if (operand.isF16())
    return Instruction{NVVM::MMATypes::f16, 2};
  if (operand.isBF16())
    return Instruction{NVVM::MMATypes::bf16, 2};
  if (operand.isF32() && tf32)
    return Instruction{NVVM::MMATypes::tf32, 1};
  return std::nullopt;
}

/// A thread's contraction as kiln-gpu-promote-operands leaves it, which the
/// tensor cores can compute: in the chunk loop of a launch of static block
/// size (a whole number of warps), maps (k, i, j) -> (k, i), (k, j), (i, j),
/// both inputs views of staged chunks of one type the instruction takes,
/// whole along k, the output a private f32 accumulator; the workgroup's
/// tile a whole number of 16x8 tiles that its warps share evenly, the chunk
/// a whole number of the instruction's K steps.
struct Matmul {
  Instruction mma;
  linalg::GenericOp op;
  gpu::LaunchOp launch;
  scf::ForOp chunks;
  scf::IfOp guard;                 ///< the op's guard, or null
  memref::SubViewOp a, b;          ///< the thread's views of the chunks [C, rows], [C, cols]
  int64_t chunk, rows, cols;       ///< C and the workgroup's tile
  int64_t threads;
  int64_t warpRows, warpCols;      ///< a warp's block, in 16x8 tiles
};

/// The workgroup buffer `view` (a thread's view of a staged chunk) views:
/// its unpadded view of the buffer, of static shape.
memref::SubViewOp stagedChunk(memref::SubViewOp view) {
  auto chunk = view ? view.getSource().getDefiningOp<memref::SubViewOp>() : nullptr;
  if (!chunk || !chunk.getSource().getDefiningOp<memref::AllocOp>() ||
      !chunk.getType().hasStaticShape() || chunk.getType().getRank() != 2)
    return {};
  return chunk;
}

/// A warp's block of WM x WN tiles for `warps` warps over a tile of
/// `rowTiles` x `colTiles`: as wide as it can be (each A fragment serves
/// WN mma), the warps tiling the workgroup's tile exactly.
std::optional<std::pair<int64_t, int64_t>> warpBlock(int64_t rowTiles, int64_t colTiles,
                                                     int64_t warps) {
  if ((rowTiles * colTiles) % warps != 0)
    return std::nullopt;
  int64_t perWarp = rowTiles * colTiles / warps;
  for (int64_t wn = std::min(colTiles, perWarp); wn >= 1; --wn) {
    int64_t wm = perWarp / wn;
    if (colTiles % wn == 0 && perWarp % wn == 0 && rowTiles % wm == 0)
      return std::pair{wm, wn};
  }
  return std::nullopt;
}

std::optional<Matmul> asMatmul(linalg::GenericOp op, bool tf32) {
  auto launch = op->getParentOfType<gpu::LaunchOp>();
  if (!launch || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics() || op.getNumLoops() != 3 ||
      !isPrivateMemory(op.getDpsInitOperand(0)->get().getType()))
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineExpr k, i, j;
  bindDims(ctx, k, i, j);
  if (op.getIndexingMapsArray() !=
      SmallVector<AffineMap>{AffineMap::get(3, 0, {k, i}, ctx), AffineMap::get(3, 0, {k, j}, ctx),
                             AffineMap::get(3, 0, {i, j}, ctx)})
    return std::nullopt;
  Matmul m{{}, op, launch, {}, {}, {}, {}, 0, 0, 0, 0, 0, 0};
  m.guard = dyn_cast<scf::IfOp>(op->getParentOp());
  m.chunks = dyn_cast<scf::ForOp>((m.guard ? m.guard.getOperation() : op.getOperation())->getParentOp());
  if (!m.chunks || m.chunks->getBlock() != &launch.getBody().front())
    return std::nullopt;
  m.a = op.getDpsInputOperand(0)->get().getDefiningOp<memref::SubViewOp>();
  m.b = op.getDpsInputOperand(1)->get().getDefiningOp<memref::SubViewOp>();
  memref::SubViewOp chunkA = stagedChunk(m.a), chunkB = stagedChunk(m.b);
  if (!chunkA || !chunkB)
    return std::nullopt;
  // The body sums products of the operands (widened): their element types
  // are the region's.
  Type element = chunkA.getType().getElementType();
  std::optional<Instruction> mma =
      instructionFor(element, op.getRegionOutputArgs()[0].getType(), tf32);
  if (!mma || chunkB.getType().getElementType() != element ||
      !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  m.mma = *mma;
  m.chunk = chunkA.getType().getDimSize(0);
  m.rows = chunkA.getType().getDimSize(1);
  m.cols = chunkB.getType().getDimSize(1);
  // Every chunk whole: the op reads all C steps of each.
  if (chunkB.getType().getDimSize(0) != m.chunk || m.a.getType().getDimSize(0) != m.chunk ||
      m.chunk % m.mma.k() != 0 || m.rows % kM != 0 || m.cols % kN != 0)
    return std::nullopt;
  gpu::KernelDim3 size = launch.getBlockSizeOperandValues();
  std::optional<int64_t> x = getConstantIntValue(size.x), y = getConstantIntValue(size.y),
                         z = getConstantIntValue(size.z);
  if (!x || !y || !z || (*x * *y * *z) % kWarp != 0)
    return std::nullopt;
  m.threads = *x * *y * *z;
  auto block = warpBlock(m.rows / kM, m.cols / kN, m.threads / kWarp);
  if (!block)
    return std::nullopt;
  std::tie(m.warpRows, m.warpCols) = *block;
  return m;
}

/// Index arithmetic of one lane, built at a fixed point.
struct Lane {
  OpBuilder &b;
  Location loc;
  Value group, quad; ///< g = lane / 4, t = lane % 4
  Value rowOrigin, colOrigin; ///< the warp's block in the workgroup's tile

  /// origin + scale * v + c
  Value at(Value origin, Value v, int64_t scale, int64_t c) {
    AffineExpr s0, s1;
    bindSymbols(b.getContext(), s0, s1);
    return affine::makeComposedAffineApply(b, loc, s0 + s1 * scale + c,
                                           {OpFoldResult(origin), OpFoldResult(v)})
        .getResult();
  }
  Value plus(Value v, int64_t c) {
    AffineExpr s0;
    bindSymbols(b.getContext(), s0);
    return affine::makeComposedAffineApply(b, loc, s0 + c, {OpFoldResult(v)}).getResult();
  }
};

/// Two 16-bit values as one 32-bit register, `low` in the low half (the
/// first element of an f16x2).
Value pack(OpBuilder &b, Location loc, Value low, Value high) {
  auto bits = [&](Value v) {
    Value i16 = arith::BitcastOp::create(b, loc, b.getI16Type(), v);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), i16).getResult();
  };
  Value shifted = arith::ShLIOp::create(b, loc, bits(high),
                                        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16));
  Value word = arith::OrIOp::create(b, loc, shifted, bits(low));
  if (getElementTypeOrSelf(low.getType()).isF16()) // f16 operands are <2 x half>
    return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, b.getF16Type()), word);
  return word;
}

/// One register of an operand fragment: its P values along k from `k`
/// on, at `other` (the row of A, the column of B) of `chunk` ([C, rows]
/// or [C, cols]); a tf32 value rounded to nearest, ties away (cvt.rna).
Value loadRegister(Lane &l, const Instruction &mma, Value chunk, Value k, Value other) {
  SmallVector<Value> values;
  for (int64_t e = 0; e < mma.perRegister; ++e)
    values.push_back(memref::LoadOp::create(l.b, l.loc, chunk, ValueRange{l.plus(k, e), other}));
  if (mma.type == NVVM::MMATypes::tf32)
    return NVVM::ConvertFloatToTF32Op::create(l.b, l.loc, l.b.getI32Type(), values[0],
                                              NVVM::FPRoundingMode::RNA,
                                              NVVM::SaturationMode::NONE, false);
  return pack(l.b, l.loc, values[0], values[1]);
}

/// Lane's A fragment of the 16xK tile at rows `row0`, steps `k0` on of the
/// chunk `a`: 4 registers.
SmallVector<Value> loadA(Lane &l, const Instruction &mma, Value a, Value row0, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(loadRegister(l, mma, a, l.plus(k0, mma.k() / 2 * (r / 2)),
                                l.plus(row0, 8 * (r % 2))));
  return regs;
}

/// Lane's B fragment of the Kx8 tile at column `col` (its own), steps
/// `k0` on of the chunk `b`: 2 registers.
SmallVector<Value> loadB(Lane &l, const Instruction &mma, Value b, Value col, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 2; ++r)
    regs.push_back(loadRegister(l, mma, b, l.plus(k0, mma.k() / 2 * r), col));
  return regs;
}

/// The lane's linear id, its group and quad, and its warp's block origin.
Lane laneOf(OpBuilder &b, Location loc, Matmul &m) {
  gpu::KernelDim3 ids = m.launch.getThreadIds(), size = m.launch.getBlockSizeOperandValues();
  int64_t x = *getConstantIntValue(size.x), y = *getConstantIntValue(size.y);
  MLIRContext *ctx = b.getContext();
  AffineExpr tx, ty, tz;
  bindSymbols(ctx, tx, ty, tz);
  AffineExpr linear = tx + x * (ty + y * tz);
  SmallVector<OpFoldResult> operands{ids.x, ids.y, ids.z};
  auto apply = [&](AffineExpr e) {
    return affine::makeComposedAffineApply(b, loc, e, operands).getResult();
  };
  int64_t warpsAcross = m.cols / (kN * m.warpCols);
  AffineExpr warp = linear.floorDiv(kWarp);
  Lane l{b, loc, apply((linear % kWarp).floorDiv(4)), apply(linear % 4),
         apply(warp.floorDiv(warpsAcross) * (kM * m.warpRows)),
         apply((warp % warpsAcross) * (kN * m.warpCols))};
  return l;
}

/// Replaces `m.op` by the warps' mma.sync over each chunk, summing in
/// `sums` (memref<tiles x 4 x f32>, private), and adds the sums to the
/// thread's accumulator after the chunk loop.
void rewrite(Matmul &m) {
  Location loc = m.op.getLoc();
  MLIRContext *ctx = m.op.getContext();
  OpBuilder b(ctx);
  int64_t tiles = m.warpRows * m.warpCols;
  auto privateSpace = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type f32 = b.getF32Type();

  // The workgroup's sums, once per workgroup.
  b.setInsertionPointToStart(&m.launch.getBody().front());
  auto sumsOut = memref::AllocOp::create(
      b, loc, MemRefType::get({m.rows, m.cols}, f32, nullptr, workgroup));
  sumsOut.setAlignment(16);

  // The lane's sums, zero before the chunk loop.
  b.setInsertionPoint(m.chunks);
  auto sums = memref::AllocaOp::create(
      b, loc, MemRefType::get({tiles, 4}, f32, nullptr, privateSpace));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  linalg::FillOp::create(b, loc, zero, sums.getResult());
  Lane lane = laneOf(b, loc, m);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };

  // In the chunk loop, where the op was, in every thread (mma.sync is a
  // warp's instruction).
  b.setInsertionPoint(m.guard ? m.guard.getOperation() : m.op.getOperation());
  Value a = m.a.getSource(), bChunk = m.b.getSource();
  NVVM::MMATypes kind = m.mma.type;
  Type struct4 = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  for (int64_t step = 0; step < m.chunk; step += m.mma.k()) {
    Value k0 = lane.at(index(step), lane.quad, m.mma.perRegister, 0);
    SmallVector<SmallVector<Value>> fragA, fragB;
    for (int64_t i = 0; i < m.warpRows; ++i)
      fragA.push_back(
          loadA(lane, m.mma, a, lane.at(lane.rowOrigin, lane.group, 1, kM * i), k0));
    for (int64_t j = 0; j < m.warpCols; ++j)
      fragB.push_back(
          loadB(lane, m.mma, bChunk, lane.at(lane.colOrigin, lane.group, 1, kN * j), k0));
    for (int64_t i = 0; i < m.warpRows; ++i)
      for (int64_t j = 0; j < m.warpCols; ++j) {
        Value tile = index(i * m.warpCols + j);
        SmallVector<Value> c;
        for (int64_t e = 0; e < 4; ++e)
          c.push_back(memref::LoadOp::create(b, loc, sums, ValueRange{tile, index(e)}));
        auto mma = NVVM::MmaOp::create(b, loc, struct4, fragA[i], fragB[j], c,
                                       {kM, kN, m.mma.k()},
                                       std::nullopt, std::nullopt,
                                       std::array<NVVM::MMATypes, 2>{kind, kind},
                                       std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                                      NVVM::MMALayout::col});
        for (int64_t e = 0; e < 4; ++e) {
          Value d = LLVM::ExtractValueOp::create(b, loc, mma, ArrayRef<int64_t>{e});
          memref::StoreOp::create(b, loc, d, sums, ValueRange{tile, index(e)});
        }
      }
  }

  // After the loop: the lanes' sums to the workgroup's buffer, a barrier,
  // and each thread's 4x4 of them into its accumulator (in the guard).
  b.setInsertionPointAfter(m.chunks);
  for (int64_t i = 0; i < m.warpRows; ++i)
    for (int64_t j = 0; j < m.warpCols; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        Value row = lane.at(lane.rowOrigin, lane.group, 1, kM * i + 8 * (e / 2));
        Value col = lane.at(lane.colOrigin, lane.quad, 2, kN * j + e % 2);
        Value sum = memref::LoadOp::create(b, loc, sums,
                                           ValueRange{index(i * m.warpCols + j), index(e)});
        memref::StoreOp::create(b, loc, sum, sumsOut, ValueRange{row, col});
      }
  gpu::BarrierOp::create(b, loc);
  if (m.guard) {
    auto guard = scf::IfOp::create(b, loc, m.guard.getCondition(), false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  SmallVector<OpFoldResult> offsets{m.a.getMixedOffsets()[1], m.b.getMixedOffsets()[1]};
  SmallVector<OpFoldResult> sizes{m.a.getMixedSizes()[1], m.b.getMixedSizes()[1]};
  Value mine = memref::SubViewOp::create(b, loc, sumsOut, offsets, sizes,
                                         SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  Value acc = m.op.getDpsInitOperand(0)->get();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  linalg::GenericOp::create(
      b, loc, ValueRange{mine}, ValueRange{acc}, ArrayRef<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location nl, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, nl, args[1], args[0]);
        linalg::YieldOp::create(nb, nl, sum);
      });

  m.op.erase();
  if (m.guard && m.guard.thenBlock()->without_terminator().empty())
    m.guard.erase();
}

struct KilnCudaMmaSyncPass : mlir::kiln::impl::KilnCudaMmaSyncBase<KilnCudaMmaSyncPass> {
  using KilnCudaMmaSyncBase::KilnCudaMmaSyncBase;

  void runOnOperation() override {
    std::vector<Matmul> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<Matmul> m = asMatmul(op, tf32))
        matmuls.push_back(*m);
    });
    for (Matmul &m : matmuls) {
      if (report)
        emitRemark(m.op.getLoc()) << "placement: tensor cores (" << m.mma.name()
                                  << "), each warp "
                                  << kM * m.warpRows << "x" << kN * m.warpCols << " of the "
                                  << m.rows << "x" << m.cols << " tile";
      rewrite(m);
    }
  }
};

} // namespace
