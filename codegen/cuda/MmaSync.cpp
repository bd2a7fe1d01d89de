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

constexpr int64_t kWarp = 32;
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

/// An operand of a thread's contraction: its view of a staged chunk, whose
/// dimension `step` is the reduction's and dimension `position` the tile's
/// rows (A) or columns (B); any other has extent 1 (a batch).
struct Operand {
  mutable memref::SubViewOp view; // (its accessors are not const)
  unsigned step = 0;
  unsigned position = 0;
  unsigned input = 0; ///< its index among the op's inputs

  Value chunk() const { return view.getSource(); }
  OpFoldResult offset() const { return view.getMixedOffsets()[position]; }
  OpFoldResult size() const { return view.getMixedSizes()[position]; }
  /// The chunk's indices of step `k` and row or column `at`.
  SmallVector<Value> indices(Value k, Value at, Value zero) const {
    SmallVector<Value> indices(view.getType().getRank(), zero);
    indices[step] = k;
    indices[position] = at;
    return indices;
  }
  /// Whether the chunk's lines (its last dimension, contiguous) hold the
  /// rows or columns, a step of k per line; else they hold the steps.
  bool linesAreSteps() const { return position + 1 == view.getType().getRank(); }
  /// Whether the steps of k run along the chunk's lines (a line is a row
  /// of A, a column of B).
  bool stepsAlongLines() const { return step + 1 == view.getType().getRank(); }
};

/// A thread's contraction as kiln-gpu-promote-operands leaves it, which the
/// tensor cores can compute: in the chunk loop of a launch of static block
/// size (a whole number of warps); its first loop the reduction, the others
/// parallel and its output's (batch..., i, j) in order, a private
/// accumulator (f32, or i32 for bytes) of extent 1 along the batch loops;
/// one input A of (k, i), the other B of (k, j) (each possibly with batch
/// loops of extent 1), both views of staged chunks, of one type the
/// instruction takes, whole along k; the workgroup's tile a whole number
/// of 16x8 tiles that its warps share evenly, the chunk a whole number of
/// the instruction's K steps. A matmul (k, i, j) is one, a convolution's
/// im2col contraction (k, n, f, p) with its filter as A another.
struct Matmul {
  Instruction mma;
  linalg::GenericOp op;
  gpu::LaunchOp launch;
  scf::ForOp chunks;
  scf::IfOp guard;                 ///< the op's guard, or null
  Operand a, b;
  int64_t chunk, rows, cols;       ///< C and the workgroup's tile
  int64_t warpRows, warpCols;      ///< a warp's block, in 16x8 tiles
  bool sumsReplaceChunks;          ///< the sums' buffer is the chunks' after the loop
};

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
std::optional<Operand> operandOf(linalg::GenericOp op, unsigned input, unsigned dim,
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
  return Operand{view, *step, *position, input};
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

/// The bytes of a buffer of `type` (static), rounded up to 16.
int64_t bytesOf(MemRefType type) {
  return llvm::alignTo(type.getNumElements() * type.getElementTypeBitWidth() / 8, 16);
}

/// The bytes of the workgroup memory `launch` allocates.
int64_t workgroupBytes(gpu::LaunchOp launch) {
  int64_t bytes = 0;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (!isPrivateMemory(type) && type.getMemorySpace() && type.hasStaticShape())
      bytes += bytesOf(type);
  });
  return bytes;
}

/// The workgroup buffer that holds `operand`'s staged chunks.
memref::AllocOp bufferOf(const Operand &operand) {
  return stagedChunk(operand.view).getSource().getDefiningOp<memref::AllocOp>();
}

std::optional<Matmul> asMatmul(linalg::GenericOp op, bool tf32, const GpuTarget &target) {
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
  Matmul m{{}, op, launch, {}, {}, {}, {}, 0, 0, 0, 0, 0, false};
  m.guard = dyn_cast<scf::IfOp>(op->getParentOp());
  m.chunks = dyn_cast<scf::ForOp>((m.guard ? m.guard.getOperation() : op.getOperation())->getParentOp());
  if (!m.chunks || m.chunks->getBlock() != &launch.getBody().front())
    return std::nullopt;
  // A holds the rows, B the columns, in either order.
  std::optional<Operand> a = operandOf(op, 0, rowLoop, colLoop);
  std::optional<Operand> b = operandOf(op, 1, colLoop, rowLoop);
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
  for (const Operand &operand : {m.a, m.b})
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
  Type sum = op.getRegionOutputArgs()[0].getType();
  std::optional<NVVM::MMATypes> typeA =
      ptxType(op, m.a.input, chunkA.getElementType(), sum, tf32);
  std::optional<NVVM::MMATypes> typeB =
      ptxType(op, m.b.input, chunkB.getElementType(), sum, tf32);
  if (!typeA || !typeB || chunkA.getElementType() != chunkB.getElementType())
    return std::nullopt;
  m.mma = Instruction{*typeA, *typeB, 32 / chunkA.getElementTypeBitWidth(), sum};
  m.chunk = chunkA.getDimSize(m.a.step);
  m.rows = chunkA.getDimSize(m.a.position);
  m.cols = chunkB.getDimSize(m.b.position);
  // Every chunk whole: the op reads all C steps of each.
  if (chunkB.getDimSize(m.b.step) != m.chunk ||
      m.a.view.getType().getDimSize(m.a.step) != m.chunk ||
      m.chunk % m.mma.k() != 0 || m.rows % kM != 0 || m.cols % kN != 0)
    return std::nullopt;
  std::optional<std::array<int64_t, 3>> size = staticBlockSize(launch);
  if (!size)
    return std::nullopt;
  int64_t threads = (*size)[0] * (*size)[1] * (*size)[2];
  if (threads % kWarp != 0)
    return std::nullopt;
  auto block = warpBlock(m.rows / kM, m.cols / kN, threads / kWarp);
  if (!block)
    return std::nullopt;
  std::tie(m.warpRows, m.warpCols) = *block;
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

/// The workgroup's buffer of the sums (m's tile of f32 or i32), at the
/// start of its launch's body: its own, or where they replace the chunks,
/// one byte buffer that both staged chunks' buffers become views of, the
/// sums a view of its start.
Value sumsBuffer(OpBuilder &b, Location loc, Matmul &m) {
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto sumsType = MemRefType::get({m.rows, m.cols}, m.mma.sum, nullptr, workgroup);
  b.setInsertionPointToStart(&m.launch.getBody().front());
  if (!m.sumsReplaceChunks) {
    auto sums = memref::AllocOp::create(b, loc, sumsType);
    sums.setAlignment(16);
    return sums;
  }
  SmallVector<memref::AllocOp> chunks{bufferOf(m.a), bufferOf(m.b)};
  int64_t bytes = bytesOf(sumsType), offset = 0;
  for (memref::AllocOp chunk : chunks)
    offset += bytesOf(chunk.getType());
  auto shared = memref::AllocOp::create(
      b, loc, MemRefType::get({std::max(bytes, offset)}, b.getI8Type(), nullptr, workgroup));
  shared.setAlignment(16);
  auto view = [&](int64_t at, MemRefType type) {
    return memref::ViewOp::create(b, loc, type, shared,
                                  arith::ConstantIndexOp::create(b, loc, at), ValueRange{});
  };
  offset = 0;
  for (memref::AllocOp chunk : chunks) {
    b.setInsertionPoint(chunk);
    chunk.replaceAllUsesWith(view(offset, chunk.getType()).getResult());
    offset += bytesOf(chunk.getType());
    chunk.erase();
  }
  b.setInsertionPointAfter(shared);
  return view(0, sumsType);
}

/// Index arithmetic of one lane, built at a fixed point.
struct Lane {
  OpBuilder &b;
  Location loc;
  Value id;          ///< the lane, 0..31
  Value group, quad; ///< g = lane / 4, t = lane % 4
  Value rowOrigin, colOrigin; ///< the warp's block in the workgroup's tile
  Value zero;

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
  /// origin + f(lane), f an expression of symbol 0, the lane.
  Value at(Value origin, function_ref<AffineExpr(AffineExpr)> f) {
    AffineExpr s0, s1;
    bindSymbols(b.getContext(), s0, s1);
    return affine::makeComposedAffineApply(b, loc, s1 + f(s0),
                                           {OpFoldResult(id), OpFoldResult(origin)})
        .getResult();
  }
};

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

/// The lane's linear id, its group and quad, and its warp's block origin.
Lane laneOf(OpBuilder &b, Location loc, Matmul &m) {
  gpu::KernelDim3 ids = m.launch.getThreadIds();
  AffineExpr linear = linearThreadId(m.launch);
  SmallVector<OpFoldResult> operands{ids.x, ids.y, ids.z};
  auto apply = [&](AffineExpr e) {
    return affine::makeComposedAffineApply(b, loc, e, operands).getResult();
  };
  int64_t warpsAcross = m.cols / (kN * m.warpCols);
  AffineExpr warp = linear.floorDiv(kWarp);
  Lane l{b, loc, apply(linear % kWarp), apply((linear % kWarp).floorDiv(4)), apply(linear % 4),
         apply(warp.floorDiv(warpsAcross) * (kM * m.warpRows)),
         apply((warp % warpsAcross) * (kN * m.warpCols)),
         arith::ConstantIndexOp::create(b, loc, 0)};
  return l;
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
  Value sumsOut = sumsBuffer(b, loc, m);

  // The lane's sums, zero before the chunk loop.
  b.setInsertionPoint(m.chunks);
  auto sums = memref::AllocaOp::create(
      b, loc, MemRefType::get({tiles, 4}, sum, nullptr, privateSpace));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(sum));
  linalg::FillOp::create(b, loc, zero, sums.getResult());
  Lane lane = laneOf(b, loc, m);
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

  // After the loop: the lanes' sums to the workgroup's buffer (once every
  // warp is done with the last chunk, where the buffer is the chunks'), a
  // barrier, and each thread's results into its accumulator (in the guard).
  b.setInsertionPointAfter(m.chunks);
  if (m.sumsReplaceChunks)
    gpu::BarrierOp::create(b, loc);
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
  SmallVector<OpFoldResult> offsets{m.a.offset(), m.b.offset()};
  SmallVector<OpFoldResult> sizes{m.a.size(), m.b.size()};
  Value mine = memref::SubViewOp::create(b, loc, sumsOut, offsets, sizes,
                                         SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  // The accumulator's last two dimensions are the region's (the others,
  // batches, have extent 1).
  Value acc = m.op.getDpsInitOperand(0)->get();
  unsigned rank = cast<MemRefType>(acc.getType()).getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap lastTwo = identity.getMinorSubMap(2);
  linalg::GenericOp::create(
      b, loc, ValueRange{mine}, ValueRange{acc}, ArrayRef<AffineMap>{lastTwo, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value total = m.mma.integer()
                          ? arith::AddIOp::create(nb, nl, args[1], args[0]).getResult()
                          : arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        linalg::YieldOp::create(nb, nl, total);
      });

  m.op.erase();
  if (m.guard && m.guard.thenBlock()->without_terminator().empty())
    m.guard.erase();
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
