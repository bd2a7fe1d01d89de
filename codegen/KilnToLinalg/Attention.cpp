//===- Attention.cpp - kiln.attention as an online softmax over key blocks ===//
//
// Each task takes a block of Bq query rows of one batch entry and walks the
// keys in blocks of Bk, keeping per row the running maximum m, the running
// sum l of exp(s - m) and the unnormalized output acc (flash attention's
// online softmax). For a block of scores s = scale * q kt + mask:
//   m' = max(m, rowmax(s)),  alpha = exp(m - m'),  p = exp(s - m'),
//   l' = l * alpha + rowsum(p),  acc' = acc * alpha + p v,
// and at the end out = acc / l. Only a [Bq, Bk] block of scores exists at a
// time, so memory grows linearly with the sequence length.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
using utils::IteratorType;

/// Builds linalg.generic ops over one block: [rows, cols] or [rows].
struct BlockBuilder {
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx = b.getContext();
  AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);

  AffineMap map(int64_t dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, ctx);
  }
  /// A generic with `iterators` whose operands' maps are `maps` (inputs, then
  /// outputs) and whose body yields `body(args)`; returns its results.
  ValueRange
  multiGeneric(ValueRange inputs, ValueRange outputs, ArrayRef<AffineMap> maps,
               ArrayRef<IteratorType> iterators,
               function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
    auto op = linalg::GenericOp::create(b, loc, outputs.getTypes(), inputs, outputs, maps,
                                        iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
                                          linalg::YieldOp::create(nb, l, body(nb, l, args));
                                        });
    return op.getResults();
  }
  /// The same with one output.
  Value generic(ValueRange inputs, Value output, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators, BodyFn body) {
    return multiGeneric(inputs, ValueRange{output}, maps, iterators,
                        [&](OpBuilder &nb, Location l, ValueRange args) -> SmallVector<Value> {
                          return {body(nb, l, args)};
                        })[0];
  }
  /// out[r] = combine(in[r, c], out[r]) over all c.
  Value rowReduction(Value in, Value out, BodyFn combine) {
    return generic(in, out, {map(2, {r, c}), map(2, {r})},
                   {IteratorType::parallel, IteratorType::reduction}, combine);
  }
  /// out[r, c] = f(out[r, c], row[r]), in place.
  Value scaleRows(Value out, Value row, BodyFn f) {
    return generic(row, out, {map(2, {r}), map(2, {r, c})},
                   {IteratorType::parallel, IteratorType::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     return f(nb, l, {a[1], a[0]});
                   });
  }
};

/// An f32 [rows, cols] slice of a [N, rows, cols] tensor at (n, row, col).
Value block(OpBuilder &b, Location loc, Value t, OpFoldResult n, OpFoldResult row, OpFoldResult col,
            int64_t rows, int64_t cols) {
  auto type = RankedTensorType::get({rows, cols}, tensorType(t).getElementType());
  SmallVector<OpFoldResult> offsets = {n, row, col};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(rows), b.getIndexAttr(cols)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, t, offsets, sizes, strides);
}

/// Operands of one attention, batch dimensions collapsed into one: query
/// [N, Lq, D], keyT [N, D, Lk], value [N, Lk, Dv], mask [1 or N, 1 or Lq, Lk].
struct Attention {
  Value query, keyT, value, mask;
  float scale;
  int64_t lq, d, lk, dv, bq, bk;

  /// scale * s + mask for the block of keys at `kj`, in place.
  Value scaleAndMask(BlockBuilder &bb, Value s, Value batch, Value qi, Value kj) {
    if (scale == 1.0f && !mask)
      return s;
    OpBuilder &b = bb.b;
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    if (mask) {
      ArrayRef<int64_t> shape = tensorType(mask).getShape();
      bool perRow = shape[1] != 1;
      OpFoldResult zero = b.getIndexAttr(0);
      inputs.push_back(block(b, bb.loc, mask, shape[0] == 1 ? zero : OpFoldResult(batch),
                             perRow ? OpFoldResult(qi) : zero, kj, perRow ? bq : 1, bk));
      maps.push_back(bb.map(2, {perRow ? bb.r : getAffineConstantExpr(0, bb.ctx), bb.c}));
    }
    maps.push_back(bb.map(2, {bb.r, bb.c}));
    return bb.generic(inputs, s, maps, {IteratorType::parallel, IteratorType::parallel},
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        Value x = a.back();
                        if (scale != 1.0f)
                          x = arith::MulFOp::create(nb, l, x,
                                                    scalarConst(nb, l, x.getType(), scale));
                        return a.size() > 1 ? arith::AddFOp::create(nb, l, x, a[0]) : x;
                      });
  }

  /// One block of keys: the loop body; returns the new (m, l, acc).
  SmallVector<Value> keyBlock(BlockBuilder &bb, Value q, Value batch, Value qi, Value kj,
                              ValueRange carried) {
    OpBuilder &b = bb.b;
    Location loc = bb.loc;
    Type f32 = b.getF32Type();
    Value m = carried[0], l = carried[1], acc = carried[2];
    Value kt = block(b, loc, keyT, batch, b.getIndexAttr(0), kj, d, bk);
    Value v = block(b, loc, value, batch, kj, b.getIndexAttr(0), bk, dv);
    Value s = linalg::MatmulOp::create(b, loc, ValueRange{q, kt},
                                       ValueRange{zeroFilled(b, loc, {bq, bk}, f32)})
                  .getResult(0);
    s = scaleAndMask(bb, s, batch, qi, kj);
    Value rowMax =
        bb.rowReduction(s, filledTensor(b, loc, {bq}, extremeConst(b, loc, f32, /*lowest=*/true)),
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                        });
    // m' = max(m, rowmax) in place of m; alpha = exp(m - m').
    ValueRange stats = bb.multiGeneric(
        rowMax, ValueRange{m, emptyTensor(b, loc, {bq}, f32)},
        {bb.map(1, {bb.r}), bb.map(1, {bb.r}), bb.map(1, {bb.r})}, {IteratorType::parallel},
        [](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
          Value next = arith::MaximumFOp::create(nb, l, a[1], a[0]);
          Value alpha = math::ExpOp::create(
              nb, l, arith::SubFOp::create(nb, l, a[1], finiteMax(nb, l, next)));
          return {next, alpha};
        });
    Value mNext = stats[0], alpha = stats[1];
    Value p = bb.scaleRows(s, mNext, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], finiteMax(nb, l, a[1])));
    });
    auto times = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(nb, l, a[0], a[1]);
    };
    Value lScaled = bb.generic(alpha, l, {bb.map(1, {bb.r}), bb.map(1, {bb.r})},
                               {IteratorType::parallel}, times);
    Value lNext = bb.rowReduction(p, lScaled, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::AddFOp::create(nb, l, a[0], a[1]);
    });
    Value accScaled = bb.scaleRows(acc, alpha, times);
    Value accNext =
        linalg::MatmulOp::create(b, loc, ValueRange{p, v}, ValueRange{accScaled}).getResult(0);
    return {mNext, lNext, accNext};
  }

  /// The output rows [qi, qi + bq) of batch entry `batch`.
  Value queryBlock(OpBuilder &b, Location loc, Value batch, Value qi, Value out) {
    BlockBuilder bb{b, loc};
    Type f32 = b.getF32Type();
    Value q = block(b, loc, query, batch, qi, b.getIndexAttr(0), bq, d);
    SmallVector<Value> init = {
        filledTensor(b, loc, {bq}, extremeConst(b, loc, f32, /*lowest=*/true)),
        zeroFilled(b, loc, {bq}, f32), zeroFilled(b, loc, {bq, dv}, f32)};
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto loop = scf::ForOp::create(b, loc, zero, arith::ConstantIndexOp::create(b, loc, lk),
                                   arith::ConstantIndexOp::create(b, loc, bk), init,
                                   [&](OpBuilder &nb, Location l, Value kj, ValueRange carried) {
                                     BlockBuilder inner{nb, l};
                                     scf::YieldOp::create(
                                         nb, l, keyBlock(inner, q, batch, qi, kj, carried));
                                   });
    Value acc = loop.getResult(2), sum = loop.getResult(1);
    Value outBlock = block(b, loc, out, batch, qi, b.getIndexAttr(0), bq, dv);
    return bb.generic(ValueRange{acc, sum}, outBlock,
                      {bb.map(2, {bb.r, bb.c}), bb.map(2, {bb.r}), bb.map(2, {bb.r, bb.c})},
                      {IteratorType::parallel, IteratorType::parallel},
                      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        return arith::DivFOp::create(nb, l, a[0], a[1]);
                      });
  }
};

/// Attention on whole score matrices, for targets that distribute matmuls
/// and row reductions themselves (GPUs): s = scale * q kt + mask (a batch
/// matmul), the softmax's row maximum and sum (reductions over the keys),
/// out = (exp(s - max) v) / sum (a batch matmul). The scores take N x Lq x
/// Lk floats. Where q, kt and v are 16-bit, the matmuls multiply them (and
/// exp(s - max) rounded to their type), summing in f32.
Value unfusedAttention(OpBuilder &b, Location loc, const Attention &a, int64_t n) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  AffineExpr bn = getAffineDimExpr(0, ctx), r = getAffineDimExpr(1, ctx),
             c = getAffineDimExpr(2, ctx);
  auto map = [&](ArrayRef<AffineExpr> results) { return AffineMap::get(3, 0, results, ctx); };
  SmallVector<IteratorType> parallel(3, IteratorType::parallel);
  SmallVector<IteratorType> overKeys = {IteratorType::parallel, IteratorType::parallel,
                                        IteratorType::reduction};
  auto generic = [&](ValueRange inputs, Value output, ArrayRef<AffineMap> maps,
                     ArrayRef<IteratorType> iterators, BodyFn body) {
    return linalg::GenericOp::create(b, loc, output.getType(), inputs, output, maps, iterators,
                                     [&](OpBuilder &nb, Location l, ValueRange args) {
                                       linalg::YieldOp::create(nb, l, body(nb, l, args));
                                     })
        .getResult(0);
  };
  Value s = linalg::BatchMatmulOp::create(b, loc, ValueRange{a.query, a.keyT},
                                          ValueRange{zeroFilled(b, loc, {n, a.lq, a.lk}, f32)})
                .getResult(0);
  if (a.scale != 1.0f || a.mask) {
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    if (a.mask) {
      ArrayRef<int64_t> shape = tensorType(a.mask).getShape();
      AffineExpr zero = getAffineConstantExpr(0, ctx);
      inputs.push_back(a.mask);
      maps.push_back(map({shape[0] == 1 ? zero : bn, shape[1] == 1 ? zero : r, c}));
    }
    maps.push_back(map({bn, r, c}));
    float scale = a.scale;
    s = generic(inputs, s, maps, parallel, [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
      Value v = x.back();
      if (scale != 1.0f)
        v = arith::MulFOp::create(nb, l, v, scalarConst(nb, l, f32, scale));
      return x.size() > 1 ? arith::AddFOp::create(nb, l, v, x[0]) : v;
    });
  }
  Value rowMax = generic(s, filledTensor(b, loc, {n, a.lq}, extremeConst(b, loc, f32, true)),
                         {map({bn, r, c}), map({bn, r})}, overKeys,
                         [](OpBuilder &nb, Location l, ValueRange x) -> Value {
                           return arith::MaximumFOp::create(nb, l, x[0], x[1]);
                         });
  Value p = generic(rowMax, s, {map({bn, r}), map({bn, r, c})}, parallel,
                    [](OpBuilder &nb, Location l, ValueRange x) -> Value {
                      return math::ExpOp::create(
                          nb, l, arith::SubFOp::create(nb, l, x[1], finiteMax(nb, l, x[0])));
                    });
  Value sum = generic(p, zeroFilled(b, loc, {n, a.lq}, f32), {map({bn, r, c}), map({bn, r})},
                      overKeys, [](OpBuilder &nb, Location l, ValueRange x) -> Value {
                        return arith::AddFOp::create(nb, l, x[0], x[1]);
                      });
  Type half = tensorType(a.value).getElementType();
  Value weights = p;
  if (half != f32)
    weights = generic(p, emptyTensor(b, loc, {n, a.lq, a.lk}, half),
                      {map({bn, r, c}), map({bn, r, c})}, parallel,
                      [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                        return arith::TruncFOp::create(nb, l, half, x[0]);
                      });
  Value weighted = linalg::BatchMatmulOp::create(
                       b, loc, ValueRange{weights, a.value},
                       ValueRange{zeroFilled(b, loc, {n, a.lq, a.dv}, f32)})
                       .getResult(0);
  return generic(sum, weighted, {map({bn, r}), map({bn, r, c})}, parallel,
                 [](OpBuilder &nb, Location l, ValueRange x) -> Value {
                   return arith::DivFOp::create(nb, l, x[1], x[0]);
                 });
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t maxQueryBlock, int64_t maxKeyBlock,
                    bool halfMatmuls)
      : OpConversionPattern(ctx), maxQueryBlock(maxQueryBlock), maxKeyBlock(maxKeyBlock),
        halfMatmuls(halfMatmuls) {}
  int64_t maxQueryBlock, maxKeyBlock; ///< a key block of 0: unfused
  bool halfMatmuls;                   ///< unfused, a half model's matmuls in 16 bits

  /// The 16-bit tensor that `v` widens to f32 (a kiln.cast as this pass
  /// lowers it: a linalg.generic of one arith.extf per element), or null.
  static Value widenedFrom(Value v) {
    auto generic = v.getDefiningOp<linalg::GenericOp>();
    if (!generic || !isa_and_nonnull<arith::ExtFOp>(elementwiseOpOf(generic)))
      return {};
    return generic.getDpsInputOperand(0)->get();
  }

  /// The 16-bit tensors, all of one type, that Q, K^T and V (as converted)
  /// widen; none otherwise.
  static std::optional<std::array<Value, 3>> halfOperands(ArrayRef<Value> operands) {
    std::array<Value, 3> sources;
    for (auto [source, v] : llvm::zip(sources, operands)) {
      source = widenedFrom(v);
      if (!source || tensorType(source).getElementType() !=
                         tensorType(sources[0]).getElementType())
        return std::nullopt;
    }
    return sources;
  }

  LogicalResult matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> q = tensorType(adaptor.getQuery()).getShape();
    ArrayRef<int64_t> kt = tensorType(adaptor.getKeyT()).getShape();
    ArrayRef<int64_t> v = tensorType(adaptor.getValue()).getShape();
    int64_t rank = q.size();
    int64_t n = 1;
    for (int64_t s : q.drop_back(2))
      n *= s;
    Attention a{};
    a.lq = q[rank - 2], a.d = q[rank - 1], a.lk = kt[rank - 1], a.dv = v[rank - 1];
    a.bq = largestDivisorUpTo(a.lq, maxQueryBlock);
    a.bk = largestDivisorUpTo(a.lk, maxKeyBlock);
    a.scale = op.getScale().convertToFloat();
    Type f32 = rewriter.getF32Type();
    auto collapsed = [&](Value t, int64_t batch) {
      ArrayRef<int64_t> shape = tensorType(t).getShape();
      return reshapeTo(rewriter, loc, t,
                       RankedTensorType::get({batch, shape[rank - 2], shape[rank - 1]},
                                             tensorType(t).getElementType()));
    };
    std::array<Value, 3> operands = {adaptor.getQuery(), adaptor.getKeyT(), adaptor.getValue()};
    if (maxKeyBlock == 0 && halfMatmuls)
      if (std::optional<std::array<Value, 3>> half = halfOperands(operands))
        operands = *half;
    a.query = collapsed(operands[0], n);
    a.keyT = collapsed(operands[1], n);
    a.value = collapsed(operands[2], n);
    if (Value mask = adaptor.getMask()) {
      ArrayRef<int64_t> shape = tensorType(mask).getShape().drop_back(2);
      bool broadcast = llvm::all_of(shape, [](int64_t s) { return s == 1; });
      a.mask = collapsed(mask, broadcast ? 1 : n);
    }
    if (maxKeyBlock == 0) {
      Value result = unfusedAttention(rewriter, loc, a, n);
      rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, signlessType(op.getType())));
      return success();
    }
    Value out = emptyTensor(rewriter, loc, {n, a.lq, a.dv}, f32);
    Value result =
        buildTileLoop(rewriter, loc, {rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
                      {rewriter.getIndexAttr(n), rewriter.getIndexAttr(a.lq)},
                      {rewriter.getIndexAttr(1), rewriter.getIndexAttr(a.bq)}, out,
                      [&](OpBuilder &b, Location l, ValueRange ivs, Value shared) -> TileResult {
                        Value batch = ivs[0], qi = ivs[1];
                        return {a.queryBlock(b, l, batch, qi, shared),
                                {batch, qi, b.getIndexAttr(0)},
                                {b.getIndexAttr(1), b.getIndexAttr(a.bq), b.getIndexAttr(a.dv)}};
                      });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, signlessType(op.getType())));
    return success();
  }
};
} // namespace

void mlir::kiln::populateAttentionLowering(RewritePatternSet &patterns, int64_t queryBlock,
                                           int64_t keyBlock, bool halfMatmuls) {
  patterns.add<AttentionLowering>(patterns.getContext(), queryBlock, keyBlock, halfMatmuls);
}
