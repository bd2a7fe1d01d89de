//===- VnniMatmul.cpp - int8 and bf16 matmuls on dot-product instructions ===//
//
// A widening matmul C[M][N] += A[M][K] * B[K][N] with constant B becomes a
// register-tiled kernel around a dot-product instruction, which sums a group
// of k products into each 32-bit lane:
//   vpdpbusd  (AVX-512 VNNI) u8 x i8 -> i32, four k per lane, 16 lanes:
//             64 multiply-adds per instruction, four times an f32 FMA;
//   vdpbf16ps (AVX512-BF16)  bf16 x bf16 -> f32, two k per lane, 16 lanes;
//   USDOT     (AArch64 I8MM) u8 x i8 -> i32, four k per lane, 4 lanes;
//   SDOT      (AArch64 dot product) i8 x i8 -> i32, four k per lane, 4 lanes;
//   vpmaddwd  (AVX2, AVX512-BW; for CPUs without VNNI) i16 x i16 -> i32, two
//             k per lane, 8 or 16 lanes, not accumulating: both operands
//             are extended from 8 bits (A by its signedness, B packed as
//             i16 at compile time), so the product is exact, twice an FMA.
// With AMX the product runs on tile registers instead (16 rows of 64 bytes;
// one tdpbusd or tdpbf16ps multiplies a 16-row tile of A by a 16 x 16 tile
// of B): each output block of 16 or 32 x 16 or 32 becomes a
// `linalg.generic` tagged `kiln.amx_tile`, which kiln-cpu-amx-tiles lowers
// after bufferization, since tile loads and stores address memory.
//
// B is packed at compile time into [N/L][K/g][L][g] (L lanes, g the group):
// one register load holds g consecutive k of L columns, exactly the
// instruction's second operand. Each row of A contributes g values (four
// bytes) per step, broadcast to all lanes. N is padded to a multiple of L
// and K to a multiple of g with zero weights.
//
// The int8 instructions multiply unsigned bytes of A (SDOT: signed ones) by
// signed bytes of B. Rows of the other signedness are flipped (a + 128 or
// a - 128, an xor of the sign bit) and the difference, 128 * sum_k B[k][n],
// a compile-time constant, starts the accumulators (negated for a + 128).
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/ConstantData.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/WideningBody.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <cstring>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUVNNIMATMUL
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::isZeroExtended;

namespace {

/// The dot-product instruction a kernel is built around.
struct DotKind {
  Type element;         // of A and B: i8 or bf16
  Type accumulator;     // i32 or f32
  int64_t lanes;        // 32-bit lanes of a register: 16 (AVX-512), 8 (AVX2), 4 (NEON)
  int64_t group;        // k summed per lane: four bytes, two bf16 or two i16
  const char *intrinsic;
  int64_t registers = 32; // vector registers: 16 on AVX2
  bool tiles = false;     // AMX tile registers rather than vector ones
  bool signedLhs = false; // int8: the instruction reads A's bytes as signed (SDOT)
  Type widened = {};      // what both operands are extended to first (vpmaddwd: i16)
  bool accumulates = true; // the instruction adds into its first operand

  /// The element type the instruction multiplies (and B is packed in).
  Type operand() const { return widened ? widened : element; }
};

/// A widening matmul that the kernel handles, with what it needs to know.
struct WideningMatmul {
  linalg::GenericOp op;
  Value lhs, init;
  ElementsAttr weights; // B, [K][N]
  DotKind kind;
  bool lhsUnsigned; // int8 only
  int64_t m, n, k;
};

/// Which dot-product instructions the target has.
struct DotInstructions {
  bool int8, bf16, usdot, sdot, avxvnni, amxInt8, amxBf16;
  int64_t pmaddwdLanes; // 8 (AVX2) or 16 (AVX512-BW) when used for int8, else 0
};

/// The kernel's instruction for a widening matmul of these operands, if the
/// target has it: AMX tiles (int8 of either signedness, or bf16; `k` must
/// fill whole 64-byte tile rows), vpdpbusd (AVX-512 VNNI, or AVX-VNNI on 256-bit registers),
/// vdpbf16ps (AVX512-BF16), USDOT (AArch64 I8MM, u8 x i8 like vpdpbusd, on
/// 128-bit registers), SDOT, or vpmaddwd on 8-bit values extended to 16 bits
/// (x86 without VNNI).
std::optional<DotKind> dotKindFor(linalg::GenericOp op, int64_t k, DotInstructions has) {
  Block &body = op.getRegion().front();
  Type element = body.getArgument(0).getType();
  MLIRContext *ctx = op.getContext();
  bool signedWeights = !isZeroExtended(body.getArgument(1));
  Type i32 = IntegerType::get(ctx, 32);
  if (has.amxInt8 && element.isInteger(8) && k % 64 == 0)
    return DotKind{element, i32, 16, 4, "llvm.x86.tdpbusd.internal", 0, /*tiles=*/true};
  if (has.amxBf16 && element.isBF16() && k % 32 == 0)
    return DotKind{element, Float32Type::get(ctx), 16, 2, "llvm.x86.tdpbf16ps.internal", 0,
                   /*tiles=*/true};
  if (has.int8 && element.isInteger(8) && signedWeights)
    return DotKind{element, i32, 16, 4, "llvm.x86.avx512.vpdpbusd.512"};
  if (has.usdot && element.isInteger(8) && signedWeights)
    return DotKind{element, i32, 4, 4, "llvm.aarch64.neon.usdot"};
  if (has.sdot && element.isInteger(8) && signedWeights)
    return DotKind{element, i32, 4, 4, "llvm.aarch64.neon.sdot", 32, false, /*signedLhs=*/true};
  if (has.avxvnni && element.isInteger(8) && signedWeights)
    return DotKind{element, i32, 8, 4, "llvm.x86.avx512.vpdpbusd.256", 16};
  if (has.bf16 && element.isBF16())
    return DotKind{element, Float32Type::get(ctx), 16, 2, "llvm.x86.avx512bf16.dpbf16ps.512"};
  if (has.pmaddwdLanes && element.isInteger(8) && signedWeights) {
    bool wide = has.pmaddwdLanes == 16;
    return DotKind{element,
                   i32,
                   has.pmaddwdLanes,
                   2,
                   wide ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd",
                   wide ? 32 : 16,
                   /*tiles=*/false,
                   /*signedLhs=*/false,
                   IntegerType::get(ctx, 16),
                   /*accumulates=*/false};
  }
  return std::nullopt;
}

/// Whether `init` is a tensor filled with zeros.
bool isZeroFilled(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value value = fill.getInputs()[0];
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

std::optional<WideningMatmul> matchWideningMatmul(linalg::GenericOp op, DotInstructions has) {
  if (!op->hasAttr("kiln.widening_matmul") || op.getNumDpsInputs() != 2 ||
      op.getNumLoops() != 3 || !op.hasPureTensorSemantics())
    return std::nullopt;
  auto lhsType = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  auto initType = cast<RankedTensorType>(op.getDpsInits()[0].getType());
  if (!lhsType.hasStaticShape() || !initType.hasStaticShape())
    return std::nullopt;
  // AMX blocks are whole tiles of 16 rows computed from zero (the last one
  // may overlap the one before it).
  if (lhsType.getDimSize(0) < 16 || !isZeroFilled(op.getDpsInits()[0]))
    has.amxInt8 = has.amxBf16 = false;
  std::optional<DotKind> kind = dotKindFor(op, lhsType.getDimSize(1), has);
  ElementsAttr weights = mlir::kiln::constantBehindReshapes(op.getDpsInputs()[1]);
  if (!kind || !weights)
    return std::nullopt;
  Block &body = op.getRegion().front();
  return WideningMatmul{op,
                        op.getDpsInputs()[0],
                        op.getDpsInits()[0],
                        weights,
                        *kind,
                        isZeroExtended(body.getArgument(0)),
                        lhsType.getDimSize(0),
                        initType.getDimSize(1),
                        lhsType.getDimSize(1)};
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The register tile: `rows` of A by `vectors` registers of lanes columns,
/// with rows * vectors accumulators, `vectors` registers of B and one
/// broadcast of A live at once.
struct Tile {
  int64_t rows, vectors;
};

/// The tile for M rows: as many rows as the registers hold, the last
/// M % rows rows forming a tile of their own (49 rows: 8 tiles of 6, then
/// 1, not 49 of 1; 128 rows: 21 of 6, then 2, measured faster than 32 of 4).
Tile chooseTile(int64_t m, int64_t columnBlocks, int64_t registers) {
  int64_t vectors = mlir::kiln::largestDivisorUpTo(columnBlocks, registers / 8);
  return {std::min<int64_t>({8, m, (registers - 2 - vectors) / vectors}), vectors};
}

/// B as [Np/16][K/g][16 * g], zero-padded; and, for a signed int8 A, the
/// accumulators' start -128 * sum_k B[k][n] over the padded columns.
struct PackedWeights {
  Value panels, start;
};

PackedWeights packWeights(OpBuilder &b, Location loc, const WideningMatmul &mm, int64_t np) {
  ArrayRef<char> data = *mlir::kiln::rawElementsData(mm.weights);
  int64_t width = mm.kind.element.getIntOrFloatBitWidth() / 8, group = mm.kind.group;
  int64_t packedWidth = mm.kind.operand().getIntOrFloatBitWidth() / 8;
  int64_t lanes = mm.kind.lanes;
  int64_t groups = ceilDiv(mm.k, group);
  std::vector<char> packed(np * groups * group * packedWidth, 0);
  for (int64_t block = 0; block < np / lanes; ++block)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t lane = 0; lane < lanes; ++lane)
        for (int64_t r = 0; r < group; ++r) {
          int64_t k = g * group + r, n = block * lanes + lane;
          if (k >= mm.k || n >= mm.n)
            continue;
          char *to = &packed[(((block * groups + g) * lanes + lane) * group + r) * packedWidth];
          const char *from = &data[(k * mm.n + n) * width];
          if (mm.kind.widened) { // int8 weights as int16
            auto value = static_cast<int16_t>(static_cast<int8_t>(*from));
            std::memcpy(to, &value, sizeof value);
          } else {
            std::memcpy(to, from, width);
          }
        }
  auto panelType =
      RankedTensorType::get({np / lanes, groups, lanes * group}, mm.kind.operand());
  PackedWeights result;
  result.panels = arith::ConstantOp::create(
      b, loc, mlir::kiln::blobElements(panelType, "vnni_weight", packed));
  if (mm.kind.element.isInteger(8) && !mm.kind.tiles && !mm.kind.widened &&
      mm.lhsUnsigned == mm.kind.signedLhs) {
    // Flipped rows: a + 128 (to unsigned) adds 128 * colsum, a - 128 (to
    // signed) takes it away.
    int32_t excess = mm.kind.signedLhs ? -128 : 128;
    std::vector<int32_t> start(np, 0);
    for (int64_t n = 0; n < mm.n; ++n)
      for (int64_t k = 0; k < mm.k; ++k)
        start[n] -= excess * static_cast<int8_t>(data[k * mm.n + n]);
    auto startType = RankedTensorType::get({np}, b.getI32Type());
    ArrayRef<char> startBytes(reinterpret_cast<const char *>(start.data()),
                              start.size() * sizeof(int32_t));
    result.start = arith::ConstantOp::create(
        b, loc, mlir::kiln::blobElements(startType, "vnni_flip_start", startBytes));
  }
  return result;
}

/// Emits the register tile at rows [m0, m0 + rows) and column blocks
/// [block0, block0 + vectors) of the padded output `tile` ([rows][16 *
/// vectors]); returns the written tile.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  const WideningMatmul &mm;
  Tile tile;
  PackedWeights weights;
  VectorType acc, bytes;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  Value zeroOf(Type t) {
    return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
  }

  /// One group of A at (row, k) (four bytes, two bf16 or two i16),
  /// broadcast to every lane as the instruction's first operand (vpdpbusd's
  /// unsigned one). `inBounds` is false for a row's last, partial group.
  Value broadcastA(Value row, Value k, bool inBounds) {
    Type element = mm.kind.operand();
    auto groupType = VectorType::get({mm.kind.group}, element);
    Value word = vector::TransferReadOp::create(b, loc, groupType, mm.lhs, ValueRange{row, k},
                                                zeroOf(element), ArrayRef<bool>{inBounds});
    Value asI32 = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), word);
    Value scalar = vector::ExtractOp::create(b, loc, asI32, ArrayRef<int64_t>{0});
    auto words = VectorType::get({mm.kind.lanes}, b.getI32Type());
    Value lanes = vector::BroadcastOp::create(b, loc, words, scalar);
    if (weights.start) {
      Value signBits = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(words, b.getI32IntegerAttr(0x80808080u)));
      lanes = arith::XOrIOp::create(b, loc, lanes, signBits);
    }
    return vector::BitCastOp::create(b, loc, bytes, lanes);
  }

  Value dot(Value accumulator, Value a, Value w) {
    StringAttr intrinsic = b.getStringAttr(mm.kind.intrinsic);
    if (mm.kind.accumulates)
      return LLVM::CallIntrinsicOp::create(b, loc, acc, intrinsic, ValueRange{accumulator, a, w})
          .getResult(0);
    Value sums = LLVM::CallIntrinsicOp::create(b, loc, acc, intrinsic, ValueRange{a, w}).getResult(0);
    return arith::AddIOp::create(b, loc, accumulator, sums);
  }

  /// One k group for all rows and vectors of the tile.
  SmallVector<Value> step(ValueRange accs, Value m0, Value block0, Value group, bool inBounds) {
    SmallVector<Value> w;
    Value zero = zeroOf(mm.kind.operand());
    for (int64_t v = 0; v < tile.vectors; ++v) {
      Value block = arith::AddIOp::create(b, loc, block0, index(v));
      w.push_back(vector::TransferReadOp::create(b, loc, bytes, weights.panels,
                                                 ValueRange{block, group, index(0)}, zero,
                                                 ArrayRef<bool>{true}));
    }
    Value k = arith::MulIOp::create(b, loc, group, index(mm.kind.group));
    SmallVector<Value> next;
    for (int64_t r = 0; r < tile.rows; ++r) {
      Value a = broadcastA(arith::AddIOp::create(b, loc, m0, index(r)), k, inBounds);
      for (int64_t v = 0; v < tile.vectors; ++v)
        next.push_back(dot(accs[r * tile.vectors + v], a, w[v]));
    }
    return next;
  }

  /// The tile's accumulators: read from the output tile, plus the signed
  /// correction.
  SmallVector<Value> initialAccumulators(Value out, Value n0) {
    SmallVector<Value> accs;
    Value zero = zeroOf(mm.kind.accumulator);
    for (int64_t r = 0; r < tile.rows; ++r)
      for (int64_t v = 0; v < tile.vectors; ++v) {
        Value a = vector::TransferReadOp::create(b, loc, acc, out,
                                                 ValueRange{index(r), index(v * mm.kind.lanes)}, zero,
                                                 ArrayRef<bool>{true});
        if (weights.start) {
          Value col = arith::AddIOp::create(b, loc, n0, index(v * mm.kind.lanes));
          Value s = vector::TransferReadOp::create(b, loc, acc, weights.start, ValueRange{col},
                                                   zero, ArrayRef<bool>{true});
          a = arith::AddIOp::create(b, loc, a, s);
        }
        accs.push_back(a);
      }
    return accs;
  }

  /// AMX: the block's product as a `linalg.generic` tagged `kiln.amx_tile`
  /// over A's rows and the block's weight panels, with the original body,
  /// from zero: C[m][n] = sum_k A[m][k] * P[n / L][k / g][(n % L) * g + k % g].
  Value buildTileProduct(Value out, Value m0, Value block0) {
    // Zeroed in place (not a new tensor), so that it bufferizes to the
    // output's block rather than to a temporary.
    out = linalg::FillOp::create(b, loc, zeroOf(mm.kind.accumulator), out).getResult(0);
    int64_t groups = mm.k / mm.kind.group, lanes = mm.kind.lanes, group = mm.kind.group;
    auto one = [&](int64_t rank) { return SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)); };
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, mm.lhs, ArrayRef<OpFoldResult>{m0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(tile.rows), b.getIndexAttr(mm.k)}, one(2));
    Value panels = tensor::ExtractSliceOp::create(
        b, loc, weights.panels, ArrayRef<OpFoldResult>{block0, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(tile.vectors), b.getIndexAttr(groups),
                               b.getIndexAttr(lanes * group)},
        one(3));
    AffineExpr m, n, k;
    bindDims(b.getContext(), m, n, k);
    SmallVector<AffineMap> maps = {
        AffineMap::get(3, 0, {m, k}, b.getContext()),
        AffineMap::get(3, 0, {n.floorDiv(lanes), k.floorDiv(group), (n % lanes) * group + k % group},
                       b.getContext()),
        AffineMap::get(3, 0, {m, n}, b.getContext())};
    SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                  utils::IteratorType::parallel,
                                                  utils::IteratorType::reduction};
    auto product = linalg::GenericOp::create(b, loc, TypeRange{out.getType()}, ValueRange{rows, panels},
                                             ValueRange{out}, maps, iterators);
    IRMapping mapping;
    linalg::GenericOp(mm.op).getRegion().cloneInto(&product.getRegion(), mapping);
    product->setAttr("kiln.amx_tile", b.getUnitAttr());
    return product.getResult(0);
  }

  Value build(Value out, Value m0, Value n0, Value block0) {
    if (mm.kind.tiles)
      return buildTileProduct(out, m0, block0);
    SmallVector<Value> accs = initialAccumulators(out, n0);
    int64_t fullGroups = mm.k / mm.kind.group;
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(fullGroups), index(1), accs,
        [&](OpBuilder &nb, Location l, Value group, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, l, step(iter, m0, block0, group, /*inBounds=*/true));
        });
    SmallVector<Value> result(loop.getResults());
    if (mm.k % mm.kind.group != 0)
      result = step(result, m0, block0, index(fullGroups), /*inBounds=*/false);
    for (int64_t r = 0; r < tile.rows; ++r)
      for (int64_t v = 0; v < tile.vectors; ++v)
        out = vector::TransferWriteOp::create(b, loc, result[r * tile.vectors + v], out,
                                              ValueRange{index(r), index(v * mm.kind.lanes)},
                                              ArrayRef<bool>{true})
                  .getResult();
    return out;
  }
};

/// The output C padded to `np` columns (the padding's values are unused).
Value paddedInit(OpBuilder &b, Location loc, Value init, int64_t m, int64_t n, int64_t np) {
  if (np == n)
    return init;
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{m, np},
                                        cast<RankedTensorType>(init.getType()).getElementType());
  return tensor::InsertSliceOp::create(b, loc, init, empty,
                                       ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
                                       ArrayRef<OpFoldResult>{b.getIndexAttr(m), b.getIndexAttr(n)},
                                       ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// An scf.forall of `rowTiles` x `columnTiles` register tiles of `kernel`,
/// the first at row `rowBegin`, computing into `init`.
Value tileLoop(OpBuilder &b, Location loc, KernelBuilder kernel, Value init, int64_t rowBegin,
               int64_t rowTiles, int64_t columnTiles) {
  Tile tile = kernel.tile;
  int64_t tileColumns = tile.vectors * kernel.mm.kind.lanes;
  SmallVector<OpFoldResult> counts = {b.getIndexAttr(rowTiles), b.getIndexAttr(columnTiles)};
  auto forall = scf::ForallOp::create(b, loc, counts, ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value m0 = arith::AddIOp::create(
      b, loc, kernel.index(rowBegin),
      arith::MulIOp::create(b, loc, forall.getInductionVar(0), kernel.index(tile.rows)));
  Value n0 = arith::MulIOp::create(b, loc, forall.getInductionVar(1), kernel.index(tileColumns));
  Value block0 =
      arith::MulIOp::create(b, loc, forall.getInductionVar(1), kernel.index(tile.vectors));
  Value shared = forall.getRegionIterArgs()[0];
  SmallVector<OpFoldResult> offsets = {m0, n0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(tile.rows), b.getIndexAttr(tileColumns)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  Value out = tensor::ExtractSliceOp::create(b, loc, shared, offsets, sizes, strides);
  Value written = kernel.build(out, m0, n0, block0);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, written, shared, offsets, sizes, strides);
  return forall.getResult(0);
}

/// A [M][K] extended to `wide` by its signedness, once, so that the kernel's
/// broadcasts of A are plain loads.
Value widenRows(OpBuilder &b, Location loc, const WideningMatmul &mm, Type wide) {
  auto type = RankedTensorType::get({mm.m, mm.k}, wide);
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), wide);
  AffineMap identity = b.getMultiDimIdentityMap(2);
  auto widen = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{mm.lhs}, ValueRange{empty},
      ArrayRef<AffineMap>{identity, identity},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = mm.lhsUnsigned ? (Value)arith::ExtUIOp::create(nb, l, wide, a[0])
                                 : (Value)arith::ExtSIOp::create(nb, l, wide, a[0]);
        linalg::YieldOp::create(nb, l, v);
      });
  return widen.getResult(0);
}

void rewriteAsKernel(WideningMatmul mm) {
  OpBuilder b(mm.op);
  Location loc = mm.op.getLoc();
  if (mm.kind.widened)
    mm.lhs = widenRows(b, loc, mm, mm.kind.widened);
  int64_t lanes = mm.kind.lanes;
  int64_t np = ceilDiv(mm.n, lanes) * lanes;
  // AMX: blocks of two by two 16 x 16 tiles (four accumulators, two tiles
  // of A and two of B: the eight tile registers).
  Tile tile = mm.kind.tiles ? Tile{32, (np / lanes) % 2 == 0 ? 2 : 1}
                            : chooseTile(mm.m, np / lanes, mm.kind.registers);
  int64_t tileColumns = tile.vectors * lanes;
  PackedWeights weights = packWeights(b, loc, mm, np);
  // AMX blocks zero their own output: the zero fill of the whole is unneeded.
  Value init = mm.kind.tiles ? mm.init.getDefiningOp<linalg::FillOp>().getOutputs()[0] : mm.init;
  init = paddedInit(b, loc, init, mm.m, mm.n, np);
  auto kernelFor = [&](Tile t) {
    return KernelBuilder{b,
                         loc,
                         mm,
                         t,
                         weights,
                         VectorType::get({lanes}, mm.kind.accumulator),
                         VectorType::get({lanes * mm.kind.group}, mm.kind.operand())};
  };
  int64_t fullRows = mm.m - mm.m % tile.rows;
  Value result = init;
  if (fullRows != 0)
    result = tileLoop(b, loc, kernelFor(tile), init, 0, fullRows / tile.rows, np / tileColumns);
  if (mm.kind.tiles) {
    // AMX: after the blocks of 32 rows, one of 16, then one of 16 ending at
    // row M: every tile whole, the overlapping rows computed twice.
    Tile half = {16, tile.vectors};
    if (mm.m - fullRows >= 16) {
      result = tileLoop(b, loc, kernelFor(half), result, fullRows, 1, np / tileColumns);
      fullRows += 16;
    }
    if (fullRows != mm.m)
      result = tileLoop(b, loc, kernelFor(half), result, mm.m - 16, 1, np / tileColumns);
  } else if (fullRows != mm.m) {
    result = tileLoop(b, loc, kernelFor({mm.m - fullRows, tile.vectors}), result, fullRows, 1,
                      np / tileColumns);
  }
  if (np != mm.n)
    result = tensor::ExtractSliceOp::create(
        b, loc, result, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(mm.m), b.getIndexAttr(mm.n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  mm.op.getResult(0).replaceAllUsesWith(result);
  mm.op.erase();
}

struct KilnVnniMatmulPass : mlir::kiln::impl::KilnCpuVnniMatmulBase<KilnVnniMatmulPass> {
  using KilnCpuVnniMatmulBase::KilnCpuVnniMatmulBase;

  void runOnOperation() override {
    SmallVector<WideningMatmul> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto mm = matchWideningMatmul(
              op, {int8, bf16, usdot, sdot, avxvnni, amxInt8, amxBf16, pmaddwdLanes}))
        matmuls.push_back(*mm);
    });
    for (WideningMatmul &mm : matmuls)
      rewriteAsKernel(mm);
  }
};
} // namespace
