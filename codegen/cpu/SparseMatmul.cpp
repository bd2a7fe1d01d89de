//===- SparseMatmul.cpp - kiln.sparse_matmul as vector loops --------------===//
//
// The product of activations x [M, K] and a weight matrix stored by column
// blocks of B outputs (kiln.sparse_matmul), as an scf.forall over the
// column blocks. Each task walks its block's nonzero entries once per group
// of rows:
//   - B > 1 (16x1 blocks): entry e adds x[m, indices[e]] (broadcast) times
//     values[e] (B lanes) to the rows' accumulators: no gathers, and every
//     loaded weight feeds `rows` multiply-adds;
//   - B = 1 (compressed columns) over fewer than `vector-width` rows: the
//     entries go `vector-width` at a time: x[m, indices[e .. e+w)] is
//     gathered and multiplied by the values, then the lanes are summed; the
//     last partial group is masked.
// The weights stream through once per group of rows, which is what makes
// batch 1 memory-bound on the compressed bytes rather than on K * N * 4.
// B = 1 over a static `vector-width` rows or more runs as an scf.forall
// over tiles of that many rows instead (buildRowTiles): the tile of x is
// transposed into a scratch that stays in cache, and each entry multiplies
// a whole vector of rows, no gathers.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/cpu/Passes.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUSPARSEMATMUL
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// Rows of x a 16x1-block task (B > 1) keeps accumulators for at once.
constexpr int64_t kRowsPerPass = 4;
/// Independent sums per output column in the row-tile kernel, split among
/// its vectors of rows.
constexpr int64_t kChains = 4;
/// Vectors of rows a row tile takes at most: each loaded value and index
/// feeds one multiply-add per vector.
constexpr int64_t kRowVectors = 2;

/// vpdpbusd: x[row, k .. k+4) (uint8 activations, one i32 broadcast to 16
/// lanes) times the 64 signed bytes `w` (16 outputs by 4 rows, output-major),
/// summed into the i32 lanes of `acc`.
Value dotInt8(OpBuilder &b, Location loc, Value acc, Value x, Value row, Value k, Value w) {
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  Value padding = arith::ConstantOp::create(b, loc, i8, b.getZeroAttr(i8));
  Value four = vector::TransferReadOp::create(b, loc, VectorType::get({4}, i8), x,
                                              ValueRange{row, k}, padding, ArrayRef<bool>{true});
  Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), four);
  Value lanes = vector::BroadcastOp::create(b, loc, VectorType::get({16}, i32), word);
  Value bytes = vector::BitCastOp::create(b, loc, w.getType(), lanes);
  StringAttr vpdpbusd = b.getStringAttr("llvm.x86.avx512.vpdpbusd.512");
  return LLVM::CallIntrinsicOp::create(b, loc, acc.getType(), vpdpbusd, ValueRange{acc, bytes, w})
      .getResult(0);
}

/// What both kernels build their index arithmetic and constants with.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value sub(Value l, Value r) { return arith::SubIOp::create(b, loc, l, r); }
  Value mul(Value l, int64_t r) { return arith::MulIOp::create(b, loc, l, index(r)); }
  Value zeros(VectorType type) {
    return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  }
};

struct SparseKernel : KernelBuilder {
  Value x;       // [M, K] f32, or i8 holding uint8 activations
  Value offsets; // [N/B + 1] i32
  Value indices; // [E] i16 or i32
  Value values;  // [E, B] f32, or [E, 4 B] i8: B outputs by 4 rows
  int64_t block, vectorWidth;

  bool int8() { return getElementTypeOrSelf(values.getType()).isInteger(8); }
  /// The element type of the product: f32, or i32 for int8.
  Type sumType() { return int8() ? Type(b.getI32Type()) : b.getF32Type(); }

  /// Element `i` of `offsets` as an index.
  Value offsetAt(Value i) {
    Value v = tensor::ExtractOp::create(b, loc, offsets, i);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }

  /// Row index `e` of W (indices are unsigned).
  Value rowAt(Value e) {
    Value v = tensor::ExtractOp::create(b, loc, indices, e);
    if (v.getType().isInteger(16))
      v = arith::ExtUIOp::create(b, loc, b.getI32Type(), v);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  }

  /// scf.for over [lo, hi) by `step` carrying `init`.
  SmallVector<Value> loop(Value lo, Value hi, int64_t step, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(b, loc, lo, hi, index(step), init,
                                    [&](OpBuilder &lb, Location, Value iv, ValueRange carried) {
                                      OpBuilder::InsertionGuard guard(b);
                                      b.setInsertionPointToEnd(lb.getInsertionBlock());
                                      scf::YieldOp::create(b, loc, body(iv, carried));
                                    });
    return SmallVector<Value>(forOp.getResults());
  }

  /// Rows [m0, m0 + rows) of a B > 1 column block with entries [lo, hi),
  /// written into `tile` [M, B].
  Value blockRows(Value tile, Value m0, int64_t rows, Value lo, Value hi) {
    auto lanes = VectorType::get({block}, sumType());
    Type element = getElementTypeOrSelf(values.getType());
    auto weights = VectorType::get({int8() ? 4 * block : block}, element);
    SmallVector<Value> init(rows, zeros(lanes));
    SmallVector<Value> sums = loop(lo, hi, 1, init, [&](Value e, ValueRange acc) {
      Value k = rowAt(e);
      Value pad = ub::PoisonOp::create(b, loc, element);
      Value w = vector::TransferReadOp::create(b, loc, weights, values, ValueRange{e, index(0)},
                                               pad, ArrayRef<bool>{true});
      SmallVector<Value> next;
      for (auto [r, sum] : llvm::enumerate(acc)) {
        Value row = add(m0, index(r));
        if (int8()) {
          next.push_back(dotInt8(b, loc, sum, x, row, k, w));
          continue;
        }
        Value xv = tensor::ExtractOp::create(b, loc, x, ValueRange{row, k});
        Value splat = vector::BroadcastOp::create(b, loc, lanes, xv);
        next.push_back(vector::FMAOp::create(b, loc, splat, w, sum));
      }
      return next;
    });
    for (auto [r, sum] : llvm::enumerate(sums))
      tile = vector::TransferWriteOp::create(b, loc, sum, tile,
                                             ValueRange{add(m0, index(r)), index(0)},
                                             ArrayRef<bool>{true})
                 .getResult();
    return tile;
  }

  /// Column block `j` for every row: [M, B].
  Value blockTile(Value j, OpFoldResult m) {
    Value lo = offsetAt(j), hi = offsetAt(add(j, index(1)));
    Value tile =
        emptyTensor(b, loc, ArrayRef<OpFoldResult>{m, b.getIndexAttr(block)}, sumType());
    Value rows = indexValue(b, loc, m);
    Value full = sub(rows, arith::RemUIOp::create(b, loc, rows, index(kRowsPerPass)));
    tile = loop(index(0), full, kRowsPerPass, tile, [&](Value m0, ValueRange t) {
      return SmallVector<Value>{blockRows(t[0], m0, kRowsPerPass, lo, hi)};
    })[0];
    return loop(full, rows, 1, tile, [&](Value m0, ValueRange t) {
      return SmallVector<Value>{blockRows(t[0], m0, 1, lo, hi)};
    })[0];
  }

  /// `vectorWidth` entries from `e` of the compressed column (masked by
  /// `mask` if given) times the gathered x[m, indices], added to `acc`.
  Value gatherProducts(Value acc, Value m, Value e, Value mask) {
    int64_t w = vectorWidth;
    auto lanes = VectorType::get({w}, b.getF32Type());
    auto rowType = VectorType::get({w}, getElementTypeOrSelf(indices.getType()));
    bool inBounds = !mask;
    Value rows = vector::TransferReadOp::create(
        b, loc, rowType, indices, ValueRange{e},
        arith::ConstantOp::create(b, loc, b.getZeroAttr(rowType.getElementType())),
        ArrayRef<bool>{inBounds});
    auto wideType = VectorType::get({w}, b.getI32Type());
    if (rowType.getElementType().isInteger(16))
      rows = arith::ExtUIOp::create(b, loc, wideType, rows);
    Value weights = vector::TransferReadOp::create(
        b, loc, lanes, values, ValueRange{e, index(0)},
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f)),
        AffineMap::get(2, 0, b.getAffineDimExpr(0)), ArrayRef<bool>{inBounds});
    Value zero = zeros(lanes);
    Value all = mask ? mask
                     : arith::ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                             VectorType::get({w}, b.getI1Type()),
                                                             true));
    if (mask) // lanes past the column may read the next column's weights
      weights = arith::SelectOp::create(b, loc, mask, weights, zero);
    Value xs = vector::GatherOp::create(b, loc, lanes, x, ValueRange{m, index(0)}, rows, all,
                                        zero);
    return vector::FMAOp::create(b, loc, xs, weights, acc);
  }

  /// Output column `n` (B = 1) for every row: [M, 1].
  Value columnTile(Value n, OpFoldResult m) {
    Value lo = offsetAt(n), hi = offsetAt(add(n, index(1)));
    Value count = sub(hi, lo);
    Value full = add(lo, sub(count, arith::RemUIOp::create(b, loc, count, index(vectorWidth))));
    auto lanes = VectorType::get({vectorWidth}, b.getF32Type());
    Value tile = emptyTensor(b, loc, ArrayRef<OpFoldResult>{m, b.getIndexAttr(1)},
                             b.getF32Type());
    return loop(index(0), indexValue(b, loc, m), 1, tile, [&](Value row, ValueRange t) {
      Value acc = loop(lo, full, vectorWidth, zeros(lanes), [&](Value e, ValueRange a) {
        return SmallVector<Value>{gatherProducts(a[0], row, e, nullptr)};
      })[0];
      Value mask = vector::CreateMaskOp::create(b, loc, VectorType::get({vectorWidth}, b.getI1Type()),
                                                ValueRange{sub(hi, full)});
      acc = gatherProducts(acc, row, full, mask);
      Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc);
      return SmallVector<Value>{
          tensor::InsertOp::create(b, loc, sum, t[0], ValueRange{row, index(0)})};
    })[0];
  }

  /// Rows [m0, m0 + v w) of x, transposed block by block into a [K', v w]
  /// tensor (K rounded up to w; rows and inputs past x read as zeros).
  Value transposedRowTile(Value m0, int64_t k, int64_t v) {
    int64_t w = vectorWidth;
    auto square = VectorType::get({w, w}, b.getF32Type());
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    int64_t inputs = llvm::alignTo(k, w);
    Value xt = emptyTensor(b, loc, ArrayRef<int64_t>{inputs, v * w}, b.getF32Type());
    return loop(index(0), index(inputs), w, xt, [&](Value k0, ValueRange t) {
      Value into = t[0];
      for (int64_t i = 0; i < v; ++i) {
        Value block = vector::TransferReadOp::create(b, loc, square, x,
                                                     ValueRange{add(m0, index(i * w)), k0}, zero,
                                                     ArrayRef<bool>{false, false});
        Value transposed = vector::TransposeOp::create(b, loc, block, ArrayRef<int64_t>{1, 0});
        into = vector::TransferWriteOp::create(b, loc, transposed, into,
                                               ValueRange{k0, index(i * w)},
                                               ArrayRef<bool>{true, true})
                   .getResult();
      }
      return SmallVector<Value>{into};
    })[0];
  }

  /// Outputs [n0, n0 + count) of the v w rows in `xt`: per output, its
  /// entries' values (broadcast) times rows of xt, summed in v vectors over
  /// the rows; each vector's group of outputs, transposed, goes into `tile`
  /// [v w, N] at column n0 as whole rows.
  Value columnGroup(Value tile, Value xt, Value n0, int64_t count, int64_t v) {
    int64_t w = vectorWidth, chains = std::max<int64_t>(1, kChains / v);
    auto lanes = VectorType::get({w}, b.getF32Type());
    Value pad = ub::PoisonOp::create(b, loc, b.getF32Type());
    // Per vector of rows, [output, row].
    SmallVector<Value> groups(v, zeros(VectorType::get({w, w}, b.getF32Type())));
    // Entry e's value times row indices[e] of xt, added to the v sums
    // `acc`: one value and one index loaded per v multiply-adds.
    auto product = [&](Value e, ValueRange acc) {
      Value weight = tensor::ExtractOp::create(b, loc, values, ValueRange{e, index(0)});
      Value splat = vector::BroadcastOp::create(b, loc, lanes, weight);
      Value k = rowAt(e);
      SmallVector<Value> next;
      for (auto [i, a] : llvm::enumerate(acc)) {
        Value row = vector::TransferReadOp::create(b, loc, lanes, xt,
                                                   ValueRange{k, index(i * w)}, pad,
                                                   ArrayRef<bool>{true});
        next.push_back(vector::FMAOp::create(b, loc, splat, row, a));
      }
      return next;
    };
    for (int64_t j = 0; j < count; ++j) {
      Value n = add(n0, index(j));
      Value lo = offsetAt(n), hi = offsetAt(add(n, index(1)));
      // `chains` sets of sums side by side hide the multiply-add latency;
      // the entries past a multiple of `chains` go into the first.
      Value split = sub(hi, arith::RemUIOp::create(b, loc, sub(hi, lo), index(chains)));
      SmallVector<Value> sums(chains * v, zeros(lanes));
      sums = loop(lo, split, chains, sums, [&](Value e, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t c = 0; c < chains; ++c)
          llvm::append_range(next, product(add(e, index(c)), acc.slice(c * v, v)));
        return next;
      });
      SmallVector<Value> first = loop(split, hi, 1, ValueRange(sums).take_front(v),
                                      [&](Value e, ValueRange acc) { return product(e, acc); });
      for (int64_t i = 0; i < v; ++i) {
        Value sum = first[i];
        for (int64_t c = 1; c < chains; ++c)
          sum = arith::AddFOp::create(b, loc, sum, sums[c * v + i]);
        groups[i] = vector::InsertOp::create(b, loc, sum, groups[i], ArrayRef<int64_t>{j});
      }
    }
    for (int64_t i = 0; i < v; ++i) {
      Value rows = vector::TransposeOp::create(b, loc, groups[i], ArrayRef<int64_t>{1, 0});
      tile = vector::TransferWriteOp::create(b, loc, rows, tile, ValueRange{index(i * w), n0},
                                             ArrayRef<bool>{true, count == w})
                 .getResult();
    }
    return tile;
  }

  /// The product [M, N] (B = 1, static M) by tiles of v w rows (v vectors
  /// of rows, up to kRowVectors), each a task: the tile of x is transposed
  /// into a [K, v w] scratch that stays in cache, each output's entries
  /// multiply its rows as v vectors over the tile's rows, and each group of
  /// w outputs is transposed back and written as whole rows: no transposed
  /// copy of x in memory, no strided stores.
  Value buildRowTiles(int64_t m, int64_t n) {
    int64_t w = vectorWidth, k = cast<RankedTensorType>(x.getType()).getDimSize(1);
    int64_t v = std::clamp<int64_t>(m / w, 1, kRowVectors), rows = v * w;
    int64_t padded = static_cast<int64_t>(llvm::alignTo(m, rows));
    Value init = emptyTensor(b, loc, ArrayRef<int64_t>{padded, n}, b.getF32Type());
    SmallVector<OpFoldResult> lbs = {b.getIndexAttr(0)}, ubs = {b.getIndexAttr(padded / rows)},
                              steps = {b.getIndexAttr(1)};
    Value product = buildTileLoop(
        b, loc, lbs, ubs, steps, init,
        [&](OpBuilder &, Location, ValueRange ivs, Value) -> TileResult {
          Value m0 = mul(ivs[0], rows);
          Value xt = transposedRowTile(m0, k, v);
          Value tile = emptyTensor(b, loc, ArrayRef<int64_t>{rows, n}, b.getF32Type());
          int64_t full = n / w * w;
          tile = loop(index(0), index(full), w, tile, [&](Value n0, ValueRange t) {
            return SmallVector<Value>{columnGroup(t[0], xt, n0, w, v)};
          })[0];
          if (full < n)
            tile = columnGroup(tile, xt, index(full), n - full, v);
          return {tile, {m0, b.getIndexAttr(0)}, {b.getIndexAttr(rows), b.getIndexAttr(n)}};
        });
    if (padded == m)
      return product;
    SmallVector<OpFoldResult> zero = {b.getIndexAttr(0), b.getIndexAttr(0)},
                              sizes = {b.getIndexAttr(m), b.getIndexAttr(n)},
                              ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
    return tensor::ExtractSliceOp::create(b, loc, product, zero, sizes, ones);
  }

  /// The product [M, N].
  Value build(OpFoldResult m, int64_t n) {
    // B = 1 over a vector of rows or more: the columns' entries multiply
    // whole vectors of rows, rather than gathering along x's rows.
    std::optional<int64_t> staticRows = getConstantIntValue(m);
    if (block == 1 && staticRows && *staticRows >= vectorWidth)
      return buildRowTiles(*staticRows, n);
    Value init = emptyTensor(b, loc, ArrayRef<OpFoldResult>{m, b.getIndexAttr(n)}, sumType());
    SmallVector<OpFoldResult> lbs = {b.getIndexAttr(0)}, ubs = {b.getIndexAttr(n / block)},
                              steps = {b.getIndexAttr(1)};
    return buildTileLoop(b, loc, lbs, ubs, steps, init,
                         [&](OpBuilder &, Location, ValueRange ivs, Value) -> TileResult {
                           Value j = ivs[0];
                           Value tile = block > 1 ? blockTile(j, m) : columnTile(j, m);
                           return {tile,
                                   {b.getIndexAttr(0), mul(j, block)},
                                   {m, b.getIndexAttr(block)}};
                         });
  }
};

/// kiln.bitmap_matmul: per column block of 16 outputs and group of rows,
/// its mask says which of the group's weights are stored; they are
/// expanded into their lanes (zeros elsewhere) straight from the packed
/// values, read as a buffer, and multiply-added like a 16x1 block's. f32
/// groups are one row: 16 lanes (vexpandps), times x[m, k] broadcast. int8
/// groups are 4 rows: 64 bytes (vpexpandb), and vpdpbusd sums their
/// products with x[m, 4g .. 4g+4) into 16 i32 lanes.
struct BitmapKernel : KernelBuilder {
  Value x;      // [M, K] f32, or i8 holding uint8 activations
  Value starts; // [N/16 * S + 1] i32: S segments of groups per column block
  Value masks;  // [N/16, K/g] i16 (f32) or i64 (int8, g = 4)
  Value values; // memref [nonzeros] f32 or i8

  bool int8() { return cast<RankedTensorType>(masks.getType()).getElementType().isInteger(64); }
  /// The 16 sums of a column block: f32, or i32 for int8.
  VectorType lanes() {
    return VectorType::get({16}, int8() ? Type(b.getI32Type()) : b.getF32Type());
  }
  int64_t groups() { return cast<RankedTensorType>(masks.getType()).getDimSize(1); }
  int64_t segments() {
    int64_t blocks = cast<RankedTensorType>(masks.getType()).getDimSize(0);
    return blocks ? (cast<RankedTensorType>(starts.getType()).getDimSize(0) - 1) / blocks : 1;
  }

  /// Group `g` of column block `j`: its weights expanded from the values
  /// at cursor `at`, times x[m, group g], added to `acc`; returns the sums
  /// and the cursor past the group's values.
  SmallVector<Value> accumulateGroup(Value j, Value g, Value m, Value acc, Value at) {
    Type element = int8() ? Type(b.getI8Type()) : b.getF32Type();
    int64_t width = int8() ? 64 : 16;
    auto weights = VectorType::get({width}, element);
    Value bits = tensor::ExtractOp::create(b, loc, masks, ValueRange{j, g});
    Value word = vector::BroadcastOp::create(b, loc, VectorType::get({1}, bits.getType()), bits);
    Value mask = vector::BitCastOp::create(b, loc, VectorType::get({width}, b.getI1Type()), word);
    Value w = vector::ExpandLoadOp::create(b, loc, weights, values, ValueRange{at}, mask,
                                           zeros(weights));
    Value count = math::CtPopOp::create(b, loc, bits);
    Value next = add(at, arith::IndexCastUIOp::create(b, loc, b.getIndexType(), count));
    if (!int8()) {
      Value xv = tensor::ExtractOp::create(b, loc, x, ValueRange{m, g});
      Value splat = vector::BroadcastOp::create(b, loc, lanes(), xv);
      return {vector::FMAOp::create(b, loc, splat, w, acc), next};
    }
    Value k = mul(g, 4);
    return {dotInt8(b, loc, acc, x, m, k, w), next};
  }

  /// Row m of column block `j`: [16] sums. Each of the block's segments of
  /// groups has its own cursor into the values and its own sums, so that
  /// the cursors' popcount-and-add chains run side by side; the groups past
  /// the last whole segment continue the last one. (Each row of x expands
  /// the weights anew: bitmaps pay off at batch 1, where the weights' bytes
  /// bound the time.)
  Value rowSums(Value j, Value m) {
    int64_t k = groups(), parts = segments(), length = k / parts;
    SmallVector<Value> init;
    for (int64_t s = 0; s < parts; ++s) {
      Value at = tensor::ExtractOp::create(
          b, loc, starts, add(mul(j, parts), index(s)));
      init.push_back(zeros(lanes()));
      init.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), at));
    }
    auto forRows = [&](Value lo, Value hi, ValueRange carried,
                       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
      return SmallVector<Value>(
          scf::ForOp::create(b, loc, lo, hi, index(1), carried,
                             [&](OpBuilder &lb, Location, Value i, ValueRange c) {
                               OpBuilder::InsertionGuard guard(b);
                               b.setInsertionPointToEnd(lb.getInsertionBlock());
                               scf::YieldOp::create(b, loc, body(i, c));
                             })
              .getResults());
    };
    // (sum, cursor) per segment.
    SmallVector<Value> state = forRows(index(0), index(length), init, [&](Value i, ValueRange c) {
      SmallVector<Value> next;
      for (int64_t s = 0; s < parts; ++s)
        llvm::append_range(
            next, accumulateGroup(j, add(index(s * length), i), m, c[2 * s], c[2 * s + 1]));
      return next;
    });
    SmallVector<Value> last = forRows(
        index(parts * length), index(k), ValueRange(state).take_back(2),
        [&](Value g, ValueRange c) { return accumulateGroup(j, g, m, c[0], c[1]); });
    Value sum = last[0];
    for (int64_t s = 0; s + 1 < parts; ++s)
      sum = int8() ? arith::AddIOp::create(b, loc, sum, state[2 * s]).getResult()
                   : arith::AddFOp::create(b, loc, sum, state[2 * s]).getResult();
    return sum;
  }

  /// The product [M, N].
  Value build(OpFoldResult m, int64_t n) {
    Type element = lanes().getElementType();
    Value init = emptyTensor(b, loc, ArrayRef<OpFoldResult>{m, b.getIndexAttr(n)}, element);
    SmallVector<OpFoldResult> lbs = {b.getIndexAttr(0)}, ubs = {b.getIndexAttr(n / 16)},
                              steps = {b.getIndexAttr(1)};
    return buildTileLoop(
        b, loc, lbs, ubs, steps, init, [&](OpBuilder &, Location, ValueRange ivs, Value) {
          Value j = ivs[0];
          Value tile =
              emptyTensor(b, loc, ArrayRef<OpFoldResult>{m, b.getIndexAttr(16)}, element);
          tile = scf::ForOp::create(
                     b, loc, index(0), indexValue(b, loc, m), index(1), ValueRange{tile},
                     [&](OpBuilder &lb, Location, Value row, ValueRange t) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPointToEnd(lb.getInsertionBlock());
                       Value written = vector::TransferWriteOp::create(
                                           b, loc, rowSums(j, row), t[0],
                                           ValueRange{row, index(0)}, ArrayRef<bool>{true})
                                           .getResult();
                       scf::YieldOp::create(b, loc, written);
                     })
                     .getResult(0);
          Value j0 = mul(j, 16);
          return TileResult{tile, {b.getIndexAttr(0), j0}, {m, b.getIndexAttr(16)}};
        });
  }
};

/// x [..., K] as [M, K] (a vector is one row), and M.
std::pair<Value, OpFoldResult> rowsOfInput(OpBuilder &b, Location loc, Value input,
                                           SmallVector<OpFoldResult> &leading) {
  auto inType = cast<RankedTensorType>(input.getType());
  // uint8 activations as the signless bytes the vector ops take.
  if (inType.getElementType().isUnsignedInteger(8)) {
    inType = inType.clone(b.getI8Type());
    input = BitcastOp::create(b, loc, inType, input);
  }
  int64_t k = inType.getShape().back();
  leading = sizesOf(b, loc, input);
  leading.pop_back();
  OpFoldResult m = leading.empty() ? b.getIndexAttr(1) : mulSizes(b, loc, leading);
  std::optional<int64_t> staticM = getConstantIntValue(m);
  auto matrixType = RankedTensorType::get({staticM ? *staticM : ShapedType::kDynamic, k},
                                          inType.getElementType());
  return {reshapeTo(b, loc, input, matrixType, {m, b.getIndexAttr(k)}), m};
}

void lowerBitmap(BitmapMatMulOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  SmallVector<OpFoldResult> leading;
  auto [x, m] = rowsOfInput(b, loc, op.getInput(), leading);
  auto valuesType = cast<RankedTensorType>(op.getValues().getType());
  auto buffer = MemRefType::get(valuesType.getShape(), valuesType.getElementType());
  Value values = bufferization::ToBufferOp::create(b, loc, buffer, op.getValues(),
                                                   /*read_only=*/true);
  BitmapKernel kernel{{b, loc}, x, op.getStarts(), op.getMasks(), values};
  Value product = kernel.build(m, type.getShape().back());
  leading.push_back(b.getIndexAttr(type.getShape().back()));
  op.getResult().replaceAllUsesWith(reshapeTo(b, loc, product, type, leading));
  op.erase();
}

void lower(SparseMatMulOp op, int64_t vectorWidth) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  SmallVector<OpFoldResult> leading;
  auto [x, m] = rowsOfInput(b, loc, op.getInput(), leading);
  auto valuesType = cast<RankedTensorType>(op.getValues().getType());
  int64_t block = valuesType.getDimSize(1);
  if (valuesType.getElementType().isInteger(8))
    block /= 4; // int8 entries are B outputs by 4 rows
  SparseKernel kernel{{b, loc}, x, op.getOffsets(), op.getIndices(), op.getValues(), block,
                      vectorWidth};
  Value product = kernel.build(m, type.getShape().back());
  leading.push_back(b.getIndexAttr(type.getShape().back()));
  op.getResult().replaceAllUsesWith(reshapeTo(b, loc, product, type, leading));
  op.erase();
}

struct KilnSparseMatmulPass : mlir::kiln::impl::KilnCpuSparseMatmulBase<KilnSparseMatmulPass> {
  using KilnCpuSparseMatmulBase::KilnCpuSparseMatmulBase;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<SparseMatMulOp, BitmapMatMulOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto bitmap = dyn_cast<BitmapMatMulOp>(op))
        lowerBitmap(bitmap);
      else
        lower(cast<SparseMatMulOp>(op), vectorWidth);
    }
  }
};
} // namespace
