//===- AmxTiles.cpp - AMX tile code for kiln-cpu-vnni-matmul's blocks ---------===//
//
// kiln-cpu-vnni-matmul leaves each output block of an AMX matmul as a
// `linalg.generic` tagged `kiln.amx_tile`:
//   C[m][n] += A[m][k] * P[n / 16][k / g][(n % 16) * g + k % g]
// with M, N in {16, 32}, K a multiple of 64 bytes, A rows of u8/i8 or bf16
// and P the packed weights (g = 4 bytes or 2 bf16 per 32-bit lane). After
// bufferization this pass writes it with AMX tiles of 16 rows of 64 bytes:
//
//   acc[r][j] = tile_load C[16r][16j]
//   for each 64 bytes of k:
//     a[r] = tile_load A[16r][k]
//     p[j] = tile_load P[j][k / g][0]      16 groups of k x 16 columns
//     acc[r][j] = tdp*(a[r], p[j], acc[r][j])
//   tile_store acc[r][j] -> C[16r][16j]
//
// P needs no copy: a panel's next 16 groups are one contiguous 1 KiB tile.
// Every tile has the one full shape on purpose: LLVM configures the tile
// registers once per function (ldtilecfg), one shape per register, so
// partial tiles of other shapes would compete for the eight registers with
// every other block inlined into the same function. kiln-cpu-vnni-matmul covers
// the edges instead (a last block of rows overlapping the one before it).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/WideningBody.h"

#include "mlir/Dialect/AMX/AMXDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUAMXTILES
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::isZeroExtended;

namespace {

constexpr int64_t kTileRows = 16, kTileBytes = 64;

/// One `kiln.amx_tile` product on buffers.
struct TileProduct {
  linalg::GenericOp op;
  Value lhs, panels, out;
  Type element, accumulator;
  int64_t rowTiles, columnTiles, k, group;
  bool zextLhs, zextRhs; // int8 only: unsigned operands

  int64_t tileColumns() const { return kTileBytes * 8 / element.getIntOrFloatBitWidth(); }
};

std::optional<TileProduct> matchTileProduct(linalg::GenericOp op) {
  if (!op->hasAttr("kiln.amx_tile") || !op.hasPureBufferSemantics() ||
      op.getNumDpsInputs() != 2)
    return std::nullopt;
  auto lhsType = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto outType = cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!lhsType.hasStaticShape() || !outType.hasStaticShape())
    return std::nullopt;
  Block &body = op.getRegion().front();
  Type element = lhsType.getElementType();
  TileProduct p{op,
                op.getDpsInputs()[0],
                op.getDpsInputs()[1],
                op.getDpsInits()[0],
                element,
                outType.getElementType(),
                outType.getDimSize(0) / kTileRows,
                outType.getDimSize(1) / kTileRows,
                lhsType.getDimSize(1),
                32 / element.getIntOrFloatBitWidth(),
                isZeroExtended(body.getArgument(0)),
                isZeroExtended(body.getArgument(1))};
  // Anything else stays a generic, which lowers to (slow, correct) loops.
  auto wholeTiles = [](int64_t extent) { return extent == kTileRows || extent == 2 * kTileRows; };
  if (!wholeTiles(outType.getDimSize(0)) || !wholeTiles(outType.getDimSize(1)) ||
      p.k % p.tileColumns() != 0)
    return std::nullopt;
  return p;
}

struct TileBuilder {
  OpBuilder &b;
  Location loc;
  const TileProduct &p;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  amx::TileType tileOf(Type element) {
    return amx::TileType::get({kTileRows, kTileBytes * 8 / element.getIntOrFloatBitWidth()}, element);
  }

  SmallVector<Value> loadAccumulators() {
    SmallVector<Value> accs;
    for (int64_t r = 0; r < p.rowTiles; ++r)
      for (int64_t j = 0; j < p.columnTiles; ++j)
        accs.push_back(amx::TileLoadOp::create(b, loc, tileOf(p.accumulator), p.out,
                                               ValueRange{index(r * kTileRows), index(j * kTileRows)}));
    return accs;
  }

  void storeAccumulators(ValueRange accs) {
    for (int64_t r = 0; r < p.rowTiles; ++r)
      for (int64_t j = 0; j < p.columnTiles; ++j)
        amx::TileStoreOp::create(b, loc, p.out, ValueRange{index(r * kTileRows), index(j * kTileRows)},
                                 accs[r * p.columnTiles + j]);
  }

  Value multiply(Value a, Value w, Value acc) {
    if (p.element.isBF16())
      return amx::TileMulFOp::create(b, loc, acc.getType(), a, w, acc);
    return amx::TileMulIOp::create(b, loc, acc.getType(), a, w, acc, p.zextLhs, p.zextRhs);
  }

  /// One tile's width of k, from `k0`, for every accumulator.
  SmallVector<Value> step(ValueRange accs, Value k0) {
    SmallVector<Value> a, w;
    for (int64_t r = 0; r < p.rowTiles; ++r)
      a.push_back(amx::TileLoadOp::create(b, loc, tileOf(p.element), p.lhs,
                                          ValueRange{index(r * kTileRows), k0}));
    Value group0 = arith::DivUIOp::create(b, loc, k0, index(p.group));
    for (int64_t j = 0; j < p.columnTiles; ++j)
      w.push_back(amx::TileLoadOp::create(b, loc, tileOf(p.element), p.panels,
                                          ValueRange{index(j), group0, index(0)}));
    SmallVector<Value> next;
    for (int64_t r = 0; r < p.rowTiles; ++r)
      for (int64_t j = 0; j < p.columnTiles; ++j)
        next.push_back(multiply(a[r], w[j], accs[r * p.columnTiles + j]));
    return next;
  }

  void build() {
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(p.k), index(p.tileColumns()), loadAccumulators(),
        [&](OpBuilder &nb, Location l, Value k0, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, l, step(iter, k0));
        });
    storeAccumulators(loop.getResults());
  }
};

struct KilnAmxTilesPass : mlir::kiln::impl::KilnCpuAmxTilesBase<KilnAmxTilesPass> {
  void runOnOperation() override {
    SmallVector<TileProduct> products;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto p = matchTileProduct(op))
        products.push_back(*p);
    });
    for (TileProduct &p : products) {
      OpBuilder b(p.op);
      TileBuilder{b, p.op.getLoc(), p}.build();
      p.op.erase();
    }
  }
};
} // namespace
