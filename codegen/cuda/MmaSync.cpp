//===- MmaSync.cpp - matmuls on the tensor cores, with mma.sync -----------===//
//
// After kiln-gpu-promote-operands, a workgroup's tile of a widening matmul
// (f16 or bf16 operands summed in f32, u8/s8 ones in i32; with `tf32`, an
// f32 matmul too) reads chunks of both operands from shared memory, and
// each thread sums its own 4x4 results. This pass has the workgroup's
// warps compute the tile on the tensor cores instead: each warp owns a
// block of 16x8 tiles and, per K steps of the reduction, loads its
// fragments of A and B from the staged chunks and issues one mma.sync per
// tile (m16n8k16 for 16-bit operands, m16n8k8 for tf32, m16n8k32 for
// bytes), summing in registers. After the reduction the warps write their
// sums to a workgroup buffer (where it does not fit beside the staged
// chunks, in their place), and each thread adds its results from there to
// its private accumulator, where the op's epilogue (the copy out) finds
// them as before.
//
// Fragment layouts are PTX ISA 8.0's (section 9.7.13.4.8; upstream MLIR's
// MMAUtils agrees): lane l has group g = l / 4 and t = l % 4; a register
// holds P values (2 of 16 bits, 1 tf32, 4 bytes; the first in the lowest
// bits), and K = 8P:
//   A (16xK, row-major): register r holds A[g + 8 (r % 2)][Pt + (K/2)(r / 2) + {0..P-1}]
//   B (Kx8, col-major):  register r holds B[Pt + (K/2) r + {0..P-1}][g]
//   C, D (16x8):         element c is       C[g + 8 (c / 2)][2t + c % 2]
//
// 16-bit fragments come from ldmatrix where the chunk allows it
// (Fragments.h): an 8x8 block of steps by rows (A) or columns (B) is one
// 8x8 matrix, register r of A the matrix of rows 8 (r % 2) on and steps
// 8 (r / 2) on, register r of B the one of steps 8r on.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Fragments.h"
#include "codegen/cuda/Passes.h"
#include "codegen/cuda/StagedMatmul.h"
#include "codegen/gpu/Tiles.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDAMMASYNC
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The rows and columns of an mma.sync tile.
constexpr int64_t kM = 16, kN = 8;

/// The mma.sync for the operands' types: m16n8k16 on f16 or bf16 (two
/// values per 32-bit register) summed in f32, m16n8k8 on tf32 (one) in f32,
/// m16n8k32 on 8-bit integers (four, each signed or not) in i32.
struct Instruction {
  NVVM::MMATypes a, b; ///< A's and B's PTX types
  int64_t perRegister;
  Type sum;
  int64_t k() const { return 8 * perRegister; }
  bool integer() const { return isa<IntegerType>(sum); }
  std::string name() const {
    std::string types = stringifyMMATypes(a).str();
    if (b != a)
      types += " x " + stringifyMMATypes(b).str();
    return "mma.sync.m16n8k" + std::to_string(k()) + ", " + types;
  }
};

/// A staged matmul whose warps compute it by mma.sync: the workgroup's tile
/// a whole number of 16x8 tiles that its warps share evenly in blocks, the
/// chunk a whole number of the instruction's K steps.
struct Matmul : StagedMatmul {
  Instruction mma;
  int64_t warpRows, warpCols; ///< a warp's block, in 16x8 tiles
};

using Operand = StagedOperand;

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

std::optional<Matmul> asMatmul(linalg::GenericOp op, bool tf32, const GpuTarget &target) {
  std::optional<StagedMatmul> staged = asStagedMatmul(op, tf32, target);
  if (!staged)
    return std::nullopt;
  Matmul m{*staged, {staged->typeA, staged->typeB, staged->perRegister, staged->sum}, 0, 0};
  if (m.chunk % m.mma.k() != 0 || m.rows % kM != 0 || m.cols % kN != 0)
    return std::nullopt;
  auto block = warpBlock(m.rows / kM, m.cols / kN, m.threads / kWarp);
  if (!block)
    return std::nullopt;
  std::tie(m.warpRows, m.warpCols) = *block;
  return m;
}

/// Lane's A fragment of the 16xK tile at rows `row0`, steps `k0` on of
/// `a`'s chunk: 4 registers.
SmallVector<Value> loadA(Lane &l, const Instruction &mma, const Operand &a, Value row0, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(loadRegister(l, mma.perRegister, a, l.plus(k0, mma.k() / 2 * (r / 2)),
                                l.plus(row0, 8 * (r % 2))));
  return regs;
}

/// Lane's B fragment of the Kx8 tile at column `col` (its own), steps
/// `k0` on of `b`'s chunk: 2 registers.
SmallVector<Value> loadB(Lane &l, const Instruction &mma, const Operand &b, Value col, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 2; ++r)
    regs.push_back(loadRegister(l, mma.perRegister, b, l.plus(k0, mma.k() / 2 * r), col));
  return regs;
}

/// Lane's B fragments of `tiles` (1 or 2) 16x8 tiles, the first at column
/// `col0`, steps `step` on: matrix j holds steps 8 (j % 2) on of the tile
/// j / 2.
SmallVector<SmallVector<Value>> ldmatrixB(Lane &l, const Operand &b, int64_t tiles, Value col0,
                                          Value step) {
  SmallVector<Value> regs = ldmatrix(
      l, b, 2 * tiles, step, col0, [](AffineExpr j) { return j % 2; },
      [&](AffineExpr j) { return j.floorDiv(2) % tiles; });
  SmallVector<SmallVector<Value>> fragments;
  for (int64_t t = 0; t < tiles; ++t)
    fragments.push_back({regs[2 * t], regs[2 * t + 1]});
  return fragments;
}

/// Replaces `m.op` by the warps' mma.sync over each chunk, summing in
/// `sums` (memref<tiles x 4 x f32 or i32>, private), and adds the sums to
/// the thread's accumulator after the chunk loop.
void rewrite(Matmul &m) {
  Location loc = m.op.getLoc();
  MLIRContext *ctx = m.op.getContext();
  OpBuilder b(ctx);
  int64_t tiles = m.warpRows * m.warpCols;
  Type sum = m.mma.sum; // f32, or i32 for 8-bit integers

  // The workgroup's sums, once per workgroup.
  SmallVector<Value> chunks{bufferOf(m.a), bufferOf(m.b)};
  Value sumsOut = sumsBuffer(b, loc, m, chunks);

  // The lane's sums, zero before the chunk loop.
  Value sums = zeroSums(b, loc, m, {tiles, 4}, sum);
  Lane lane = laneOf(b, loc, m, kWarp, kM * m.warpRows, kN * m.warpCols);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };

  // In the chunk loop, where the op was, in every thread (mma.sync is a
  // warp's instruction).
  b.setInsertionPoint(m.guard ? m.guard.getOperation() : m.op.getOperation());
  Type struct4 = LLVM::LLVMStructType::getLiteral(ctx, {sum, sum, sum, sum});
  // Integer sums wrap, as the i32 adds they replace do.
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (m.mma.integer())
    overflow = NVVM::MMAIntOverflow::wrapped;
  bool ldmatrixA = m.mma.perRegister == 2 && readableWithLdmatrix(m.a);
  bool ldmatrixB = m.mma.perRegister == 2 && readableWithLdmatrix(m.b);
  for (int64_t step = 0; step < m.chunk; step += m.mma.k()) {
    Value k0 = lane.at(index(step), lane.quad, m.mma.perRegister, 0);
    SmallVector<SmallVector<Value>> fragA, fragB;
    for (int64_t i = 0; i < m.warpRows; ++i)
      fragA.push_back(ldmatrixA
                          ? ldmatrix16x16(lane, m.a, lane.plus(lane.rowOrigin, kM * i), index(step))
                          : loadA(lane, m.mma, m.a,
                                  lane.at(lane.rowOrigin, lane.group, 1, kM * i), k0));
    for (int64_t j = 0; j < m.warpCols; j += ldmatrixB ? 2 : 1) {
      if (!ldmatrixB) {
        fragB.push_back(
            loadB(lane, m.mma, m.b, lane.at(lane.colOrigin, lane.group, 1, kN * j), k0));
        continue;
      }
      int64_t tiles = std::min<int64_t>(2, m.warpCols - j); // two per ldmatrix.x4
      llvm::append_range(fragB, ::ldmatrixB(lane, m.b, tiles,
                                            lane.plus(lane.colOrigin, kN * j), index(step)));
    }
    for (int64_t i = 0; i < m.warpRows; ++i)
      for (int64_t j = 0; j < m.warpCols; ++j) {
        accumulateTile(b, loc, sums, index(i * m.warpCols + j), [&](ValueRange c) {
          return NVVM::MmaOp::create(b, loc, struct4, fragA[i], fragB[j], c,
                                     {kM, kN, m.mma.k()}, std::nullopt, overflow,
                                     std::array<NVVM::MMATypes, 2>{m.mma.a, m.mma.b},
                                     std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                                    NVVM::MMALayout::col});
        });
      }
  }

  // After the loop: the lanes' sums to the workgroup's buffer (rows g and
  // g + 8, columns 2t and 2t + 1 of each tile).
  addSumsToAccumulators(b, loc, m, sumsOut, [&] {
    for (int64_t i = 0; i < m.warpRows; ++i)
      for (int64_t j = 0; j < m.warpCols; ++j)
        for (int64_t e = 0; e < 4; ++e) {
          Value row = lane.at(lane.rowOrigin, lane.group, 1, kM * i + 8 * (e / 2));
          Value col = lane.at(lane.colOrigin, lane.quad, 2, kN * j + e % 2);
          Value sum = memref::LoadOp::create(b, loc, sums,
                                             ValueRange{index(i * m.warpCols + j), index(e)});
          memref::StoreOp::create(b, loc, sum, sumsOut, ValueRange{row, col});
        }
  });
}

struct KilnCudaMmaSyncPass : mlir::kiln::impl::KilnCudaMmaSyncBase<KilnCudaMmaSyncPass> {
  using KilnCudaMmaSyncBase::KilnCudaMmaSyncBase;

  void runOnOperation() override {
    std::optional<GpuTarget> target = lookupGpuTarget(getOperation(), targetName);
    if (!target)
      return signalPassFailure();
    std::vector<Matmul> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<Matmul> m = asMatmul(op, tf32, *target))
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
