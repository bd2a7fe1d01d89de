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
// 16-bit fragments come from ldmatrix where the chunk allows it (section
// 9.7.13.4.15): an 8x8 block of steps by rows (A) or columns (B) is one
// 8x8 matrix, register r of A the matrix of rows 8 (r % 2) on and steps
// 8 (r / 2) on, register r of B the one of steps 8r on. Lane l gives the
// address of line l % 8 of matrix l / 8, and receives steps 2t and 2t + 1
// of row (column) g, the low half first: where the chunk's lines are
// rows (a step of k runs along a line), as row g's elements 2t and 2t + 1;
// where they are steps (the rows run along them), by `.trans`, as elements
// [2t][g] and [2t + 1][g].
//
//===----------------------------------------------------------------------===//
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

/// Two 16-bit or four 8-bit values as one 32-bit register, the first in
/// the lowest bits (the first element of an f16x2).
Value pack(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  unsigned bits = values[0].getType().getIntOrFloatBitWidth();
  Value word;
  for (auto [e, value] : llvm::enumerate(values)) {
    Value v = value;
    if (!isa<IntegerType>(v.getType()))
      v = arith::BitcastOp::create(b, loc, b.getIntegerType(bits), v);
    v = arith::ExtUIOp::create(b, loc, b.getI32Type(), v);
    if (e > 0)
      v = arith::ShLIOp::create(b, loc, v,
                                arith::ConstantIntOp::create(b, loc, b.getI32Type(), bits * e));
    word = word ? arith::OrIOp::create(b, loc, word, v).getResult() : v;
  }
  if (values[0].getType().isF16()) // f16 operands are <2 x half>
    return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, b.getF16Type()), word);
  return word;
}

/// One register of an operand fragment: its P values along k from `k`
/// on, at `at` (the row of A, the column of B) of the operand's chunk; a
/// tf32 value rounded to nearest, ties away (cvt.rna). Where the steps run
/// along the chunk's lines, the P values are one 32-bit load (k is a
/// multiple of P, every line starts on 16 bytes).
Value loadRegister(Lane &l, const Instruction &mma, const Operand &operand, Value k, Value at) {
  if (mma.perRegister > 1 && operand.stepsAlongLines()) {
    Type element = cast<MemRefType>(operand.chunk().getType()).getElementType();
    Value values = vector::LoadOp::create(l.b, l.loc, VectorType::get({mma.perRegister}, element),
                                          operand.chunk(), operand.indices(k, at, l.zero),
                                          /*nontemporal=*/false, llvm::Align(4));
    if (element.isF16()) // f16 operands are <2 x half>
      return values;
    return LLVM::BitcastOp::create(l.b, l.loc, l.b.getI32Type(), values);
  }
  SmallVector<Value> values;
  for (int64_t e = 0; e < mma.perRegister; ++e)
    values.push_back(memref::LoadOp::create(l.b, l.loc, operand.chunk(),
                                            operand.indices(l.plus(k, e), at, l.zero)));
  if (mma.perRegister == 1) // tf32
    return NVVM::ConvertFloatToTF32Op::create(l.b, l.loc, l.b.getI32Type(), values[0],
                                              NVVM::FPRoundingMode::RNA,
                                              NVVM::SaturationMode::NONE, false);
  return pack(l.b, l.loc, values);
}

/// Lane's A fragment of the 16xK tile at rows `row0`, steps `k0` on of
/// `a`'s chunk: 4 registers.
SmallVector<Value> loadA(Lane &l, const Instruction &mma, const Operand &a, Value row0, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(loadRegister(l, mma, a, l.plus(k0, mma.k() / 2 * (r / 2)),
                                l.plus(row0, 8 * (r % 2))));
  return regs;
}

/// Lane's B fragment of the Kx8 tile at column `col` (its own), steps
/// `k0` on of `b`'s chunk: 2 registers.
SmallVector<Value> loadB(Lane &l, const Instruction &mma, const Operand &b, Value col, Value k0) {
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 2; ++r)
    regs.push_back(loadRegister(l, mma, b, l.plus(k0, mma.k() / 2 * r), col));
  return regs;
}

/// Whether `operand`'s chunk can be read with ldmatrix: 16-bit values,
/// its lines either the steps of k or the rows (columns), every line and
/// every 8 of them 16-byte aligned (the buffer is): the buffer's strides
/// but the last multiples of 8, the chunk's offset along the last
/// dimension too.
bool readableWithLdmatrix(const Operand &operand) {
  auto chunk = operand.chunk().getDefiningOp<memref::SubViewOp>();
  MemRefType type = chunk.getType(), buffer = chunk.getSourceType();
  auto [strides, offset] = buffer.getStridesAndOffset();
  std::optional<int64_t> lastOffset = getConstantIntValue(chunk.getMixedOffsets().back());
  int64_t last = type.getRank() - 1;
  return type.getElementTypeBitWidth() == 16 &&
         (operand.position == last || operand.step == last) && strides.back() == 1 &&
         lastOffset && *lastOffset % 8 == 0 &&
         llvm::all_of(ArrayRef(strides).drop_back(), [](int64_t s) { return s % 8 == 0; });
}

/// A 32-bit register of two 16-bit values (<2 x half> for f16, as mma.sync
/// takes them).
Value asRegister(OpBuilder &b, Location loc, Value pair) {
  if (cast<VectorType>(pair.getType()).getElementType().isF16())
    return pair;
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}

/// Which 8x8 block of steps (or of rows, columns) matrix `j` of an
/// ldmatrix holds, as an expression of j.
using BlockFn = function_ref<AffineExpr(AffineExpr j)>;

/// The registers of an ldmatrix of `count` 8x8 matrices from `operand`'s
/// chunk, matrix j the one of steps 8 stepBlock(j) on from `step` and of
/// rows (columns) 8 atBlock(j) on from `at`: lane l gives the address of
/// line l % 8 of matrix l / 8 (an x2 reads lanes 0-15's addresses only).
SmallVector<Value> ldmatrix(Lane &l, const Operand &operand, int64_t count, Value step,
                            Value at, BlockFn stepBlock, BlockFn atBlock) {
  bool linesAreSteps = operand.linesAreSteps();
  Value k = l.at(step, [&](AffineExpr lane) {
    AffineExpr first = stepBlock(lane.floorDiv(8)) * 8;
    return linesAreSteps ? first + lane % 8 : first;
  });
  Value x = l.at(at, [&](AffineExpr lane) {
    AffineExpr first = atBlock(lane.floorDiv(8)) * 8;
    return linesAreSteps ? first : first + lane % 8;
  });
  Type element = cast<MemRefType>(operand.chunk().getType()).getElementType();
  auto matrices = nvgpu::LdMatrixOp::create(l.b, l.loc, VectorType::get({count, 2}, element),
                                            operand.chunk(), operand.indices(k, x, l.zero),
                                            /*transpose=*/linesAreSteps, count);
  SmallVector<Value> regs;
  for (int64_t r = 0; r < count; ++r)
    regs.push_back(asRegister(
        l.b, l.loc, vector::ExtractOp::create(l.b, l.loc, matrices, ArrayRef<int64_t>{r})));
  return regs;
}

/// Lane's A fragment of the 16x16 tile at rows `row0`, steps `step` on, by
/// one ldmatrix.x4: matrix j holds rows 8 (j % 2) on, steps 8 (j / 2) on.
SmallVector<Value> ldmatrixA(Lane &l, const Operand &a, Value row0, Value step) {
  return ldmatrix(
      l, a, 4, step, row0, [](AffineExpr j) { return j.floorDiv(2); },
      [](AffineExpr j) { return j % 2; });
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
  auto privateSpace = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
  Type sum = m.mma.sum; // f32, or i32 for 8-bit integers

  // The workgroup's sums, once per workgroup.
  SmallVector<Value> chunks{bufferOf(m.a), bufferOf(m.b)};
  Value sumsOut = sumsBuffer(b, loc, m, chunks);

  // The lane's sums, zero before the chunk loop.
  b.setInsertionPoint(m.chunks);
  auto sums = memref::AllocaOp::create(
      b, loc, MemRefType::get({tiles, 4}, sum, nullptr, privateSpace));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(sum));
  linalg::FillOp::create(b, loc, zero, sums.getResult());
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
                          ? ::ldmatrixA(lane, m.a, lane.plus(lane.rowOrigin, kM * i), index(step))
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
        Value tile = index(i * m.warpCols + j);
        SmallVector<Value> c;
        for (int64_t e = 0; e < 4; ++e)
          c.push_back(memref::LoadOp::create(b, loc, sums, ValueRange{tile, index(e)}));
        auto mma = NVVM::MmaOp::create(b, loc, struct4, fragA[i], fragB[j], c,
                                       {kM, kN, m.mma.k()},
                                       std::nullopt, overflow,
                                       std::array<NVVM::MMATypes, 2>{m.mma.a, m.mma.b},
                                       std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                                      NVVM::MMALayout::col});
        for (int64_t e = 0; e < 4; ++e) {
          Value d = LLVM::ExtractValueOp::create(b, loc, mma, ArrayRef<int64_t>{e});
          memref::StoreOp::create(b, loc, d, sums, ValueRange{tile, index(e)});
        }
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
