//===- DataDependent.cpp - ops whose result sizes depend on the data -----===//
//
// kiln.iota, kiln.nonzero, kiln.unique and kiln.non_max_suppression produce
// tensors whose size is known only at run time; the entry returns them with
// their sizes like any dynamic output. kiln.iota is one parallel loop over
// its run-time count. The others are sequential scf.for loops over tensors
// (bufferization makes their inserts in place) that count what they find:
// NonZero counts first, then writes each column; Unique and
// NonMaxSuppression write into buffers of the largest possible size and
// return the counted part.
//
// These are scalar loops on purpose: their work is small next to the
// networks around them, and their order matters (NonZero is row-major,
// non-maximum suppression is greedy). Unique compares each row with the
// distinct rows found so far: O(N x U x M) for N rows of M elements with U
// distinct ones.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

using Values = SmallVector<Value>;
using LoopBody = function_ref<Values(OpBuilder &, Location, Value, ValueRange)>;
using Branch = function_ref<Values(OpBuilder &, Location)>;

Value boolConst(OpBuilder &b, Location l, bool v) {
  return arith::ConstantIntOp::create(b, l, b.getI1Type(), v);
}
Value toI64(OpBuilder &b, Location l, Value index) {
  return arith::IndexCastOp::create(b, l, b.getI64Type(), index);
}
Value toIndex(OpBuilder &b, Location l, Value i64) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), i64);
}
Value cmpi(OpBuilder &b, Location l, arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, l, p, x, y);
}
Value andI(OpBuilder &b, Location l, Value x, Value y) { return arith::AndIOp::create(b, l, x, y); }
Value orI(OpBuilder &b, Location l, Value x, Value y) { return arith::OrIOp::create(b, l, x, y); }
Value notI(OpBuilder &b, Location l, Value x) {
  return arith::XOrIOp::create(b, l, x, boolConst(b, l, true));
}
Value addIdx(OpBuilder &b, Location l, Value x, int64_t y) {
  return arith::AddIOp::create(b, l, x, indexConst(b, l, y));
}

/// scf.for from `lb` to `ub` carrying `inits`; `body` returns what to yield.
ValueRange forLoop(OpBuilder &b, Location loc, Value lb, Value ub, ValueRange inits,
                   LoopBody body) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, indexConst(b, loc, 1), inits,
                                 [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
                                   scf::YieldOp::create(nb, l, body(nb, l, iv, args));
                                 });
  return loop.getResults();
}

/// scf.if yielding `then`'s values or `otherwise`'s.
ValueRange ifThenElse(OpBuilder &b, Location loc, Value cond, Branch then, Branch otherwise) {
  auto op = scf::IfOp::create(
      b, loc, cond, [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, then(nb, l)); },
      [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, otherwise(nb, l)); });
  return op.getResults();
}

/// The first `count` rows of `padded` (rows of static length).
Value leadingRows(OpBuilder &b, Location loc, Value padded, Value count) {
  auto type = tensorType(padded);
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes, strides;
  sizes.push_back(count);
  for (int64_t d = 1; d < type.getRank(); ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  strides.assign(type.getRank(), b.getIndexAttr(1));
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()),
                                        padded, offsets, sizes, strides);
}

Value extract(OpBuilder &b, Location l, Value t, ValueRange at) {
  return tensor::ExtractOp::create(b, l, t, at);
}
Value insert(OpBuilder &b, Location l, Value v, Value t, ValueRange at) {
  return tensor::InsertOp::create(b, l, v, t, at);
}

//===----------------------------------------------------------------------===//
// Iota
//===----------------------------------------------------------------------===//

/// Sizes a run-time count may take: enough for any tensor kiln compiles,
/// and far from index overflow.
constexpr int64_t kMaxCount = int64_t(1) << 40;

struct IotaLowering : OpConversionPattern<IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(IotaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type i64 = b.getI64Type();
    Value count = extract(b, loc, adaptor.getCount(), {});
    Value inRange =
        andI(b, loc, cmpi(b, loc, arith::CmpIPredicate::sge, count, scalarConst(b, loc, i64, 0)),
             cmpi(b, loc, arith::CmpIPredicate::sle, count, scalarConst(b, loc, i64, kMaxCount)));
    checkAtRunTime(b, loc, inRange, "the element count must be between 0 and 2^40");
    Value empty = emptyTensor(b, loc, {OpFoldResult(toIndex(b, loc, count))}, i64);
    auto iota = linalg::GenericOp::create(
        b, loc, empty.getType(), ValueRange{}, ValueRange{empty},
        SmallVector<AffineMap>{b.getMultiDimIdentityMap(1)},
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange) {
          linalg::YieldOp::create(nb, l,
                                  ValueRange{toI64(nb, l, linalg::IndexOp::create(nb, l, 0))});
        });
    rewriter.replaceOp(op, iota.getResult(0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// NonZero
//===----------------------------------------------------------------------===//

Value isNonzero(OpBuilder &b, Location l, Value v) {
  Type t = v.getType();
  if (isa<FloatType>(t)) // NaN is nonzero
    return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, v, scalarConst(b, l, t, 0));
  return cmpi(b, l, arith::CmpIPredicate::ne, v, scalarConst(b, l, t, 0));
}

/// The coordinates of flat position `i` in a tensor of `sizes`.
Values delinearize(OpBuilder &b, Location l, Value i, ArrayRef<OpFoldResult> sizes) {
  Values coords(sizes.size());
  for (int64_t d = (int64_t)sizes.size() - 1; d >= 0; --d) {
    Value size = indexValue(b, l, sizes[d]);
    coords[d] = arith::RemUIOp::create(b, l, i, size);
    i = arith::DivUIOp::create(b, l, i, size);
  }
  return coords;
}

/// One pass counts the nonzero elements (a vectorizable reduction); the
/// second writes each one's coordinates as a column of the result.
struct NonZeroLowering : OpConversionPattern<NonZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(NonZeroOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    int64_t rank = tensorType(x).getRank();
    Type i64 = b.getI64Type();
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
    SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                                AffineMap::get(rank, 0, {}, b.getContext())};
    Value counted =
        linalg::GenericOp::create(
            b, loc, RankedTensorType::get({}, i64), ValueRange{x},
            ValueRange{zeroFilled(b, loc, ArrayRef<int64_t>{}, i64)}, maps,
            SmallVector<utils::IteratorType>(rank, utils::IteratorType::reduction),
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value one = arith::ExtUIOp::create(nb, l, i64, isNonzero(nb, l, a[0]));
              linalg::YieldOp::create(nb, l, ValueRange{arith::AddIOp::create(nb, l, a[1], one)});
            })
            .getResult(0);
    Value count = toIndex(b, loc, extract(b, loc, counted, {}));
    Value result = emptyTensor(b, loc, {b.getIndexAttr(rank), count}, i64);
    Value total = indexValue(b, loc, mulSizes(b, loc, sizes));
    ValueRange filled =
        forLoop(b, loc, indexConst(b, loc, 0), total, {result, indexConst(b, loc, 0)},
                [&](OpBuilder &nb, Location l, Value i, ValueRange acc) -> Values {
                  Values at = delinearize(nb, l, i, sizes);
                  return ifThenElse(
                      nb, l, isNonzero(nb, l, extract(nb, l, x, at)),
                      [&](OpBuilder &tb, Location tl) -> Values {
                        Value column = acc[0];
                        for (int64_t d = 0; d < rank; ++d)
                          column = insert(tb, tl, toI64(tb, tl, at[d]), column,
                                          {indexConst(tb, tl, d), acc[1]});
                        return {column, addIdx(tb, tl, acc[1], 1)};
                      },
                      [&](OpBuilder &, Location) -> Values {
                        return {acc[0], acc[1]};
                      });
                });
    rewriter.replaceOp(op, filled[0]);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Unique
//===----------------------------------------------------------------------===//

/// Compares rows of a 2-D tensor element by element.
struct RowCompare {
  Value rows, width;
  bool isUnsignedInt;

  Value equal(OpBuilder &b, Location loc, Value r, Value s) const {
    return forLoop(b, loc, indexConst(b, loc, 0), width, {boolConst(b, loc, true)},
                   [&](OpBuilder &nb, Location l, Value k, ValueRange acc) -> Values {
                     Value x = extract(nb, l, rows, {r, k}), y = extract(nb, l, rows, {s, k});
                     Value eq =
                         isa<FloatType>(x.getType())
                             ? (Value)arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, x, y)
                             : cmpi(nb, l, arith::CmpIPredicate::eq, x, y);
                     return {andI(nb, l, acc[0], eq)};
                   })[0];
  }

  /// Whether row r comes before row s in lexicographic order.
  Value less(OpBuilder &b, Location loc, Value r, Value s) const {
    ValueRange state = forLoop(
        b, loc, indexConst(b, loc, 0), width, {boolConst(b, loc, false), boolConst(b, loc, false)},
        [&](OpBuilder &nb, Location l, Value k, ValueRange acc) -> Values {
          Value x = extract(nb, l, rows, {r, k}), y = extract(nb, l, rows, {s, k});
          Value lt, gt;
          if (isa<FloatType>(x.getType())) {
            lt = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT, x, y);
            gt = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, x, y);
          } else {
            using P = arith::CmpIPredicate;
            lt = cmpi(nb, l, isUnsignedInt ? P::ult : P::slt, x, y);
            gt = cmpi(nb, l, isUnsignedInt ? P::ugt : P::sgt, x, y);
          }
          Value decided = acc[0];
          return {orI(nb, l, decided, orI(nb, l, lt, gt)),
                  arith::SelectOp::create(nb, l, decided, acc[1], lt)};
        });
    return state[1];
  }
};

/// Pass 1 walks the rows, looking each up among the distinct rows found so
/// far (by the index of its first occurrence) and counting. With `sorted`,
/// pass 2 ranks the distinct rows (each against all others). Pass 3 writes
/// the results in final order.
struct UniqueLowering : OpConversionPattern<UniqueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(UniqueOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    Type i64 = b.getI64Type(), et = tensorType(x).getElementType();
    Value n = indexValue(b, loc, dimOf(b, loc, x, 0));
    RowCompare rows{x, indexValue(b, loc, dimOf(b, loc, x, 1)),
                    isUnsigned(op.getInput()) && !isa<FloatType>(et)};
    Value zero = indexConst(b, loc, 0);
    auto column = [&](OpFoldResult size) { return emptyTensor(b, loc, {size}, i64); };
    OpFoldResult nSize = dimOf(b, loc, x, 0);

    // Pass 1: first[u] and counts[u] for the distinct rows u < U in order of
    // first occurrence; inverse[i] = u for each row i.
    ValueRange found = forLoop(
        b, loc, zero, n, {column(nSize), column(nSize), column(nSize), zero},
        [&](OpBuilder &nb, Location l, Value i, ValueRange acc) -> Values {
          Value first = acc[0], counts = acc[1], inverse = acc[2], u = acc[3];
          Value match = forLoop(nb, l, indexConst(nb, l, 0), u, {u},
                                [&](OpBuilder &fb, Location fl, Value j, ValueRange m) -> Values {
                                  Value searching = cmpi(fb, fl, arith::CmpIPredicate::eq, m[0], u);
                                  Value hit = ifThenElse(
                                      fb, fl, searching,
                                      [&](OpBuilder &tb, Location tl) -> Values {
                                        Value row = toIndex(tb, tl, extract(tb, tl, first, {j}));
                                        return {rows.equal(tb, tl, row, i)};
                                      },
                                      [&](OpBuilder &eb, Location el) -> Values {
                                        return {boolConst(eb, el, false)};
                                      })[0];
                                  return {arith::SelectOp::create(fb, fl, hit, j, m[0])};
                                })[0];
          Value isNew = cmpi(nb, l, arith::CmpIPredicate::eq, match, u);
          ValueRange next = ifThenElse(
              nb, l, isNew,
              [&](OpBuilder &tb, Location tl) -> Values {
                Value one = arith::ConstantIntOp::create(tb, tl, i64, 1);
                return {insert(tb, tl, toI64(tb, tl, i), first, {u}),
                        insert(tb, tl, one, counts, {u}), addIdx(tb, tl, u, 1)};
              },
              [&](OpBuilder &eb, Location el) -> Values {
                Value c = extract(eb, el, counts, {match});
                Value more =
                    arith::AddIOp::create(eb, el, c, arith::ConstantIntOp::create(eb, el, i64, 1));
                return {first, insert(eb, el, more, counts, {match}), u};
              });
          return {next[0], next[1], insert(nb, l, toI64(nb, l, match), inverse, {i}), next[2]};
        });
    Value first = found[0], counts = found[1], inverse = found[2], u = found[3];

    // Pass 2 (sorted): rank[v] = how many distinct rows precede row v;
    // slot[r] = the v of rank r.
    Value rank, slot;
    if (op.getSorted()) {
      ValueRange ranked = forLoop(
          b, loc, zero, u, {column(nSize), column(nSize)},
          [&](OpBuilder &nb, Location l, Value v, ValueRange acc) -> Values {
            Value rv = toIndex(nb, l, extract(nb, l, first, {v}));
            Value r = forLoop(
                nb, l, indexConst(nb, l, 0), u, {indexConst(nb, l, 0)},
                [&](OpBuilder &fb, Location fl, Value w, ValueRange c) -> Values {
                  Value rw = toIndex(fb, fl, extract(fb, fl, first, {w}));
                  Value before = rows.less(fb, fl, rw, rv);
                  return {arith::SelectOp::create(fb, fl, before, addIdx(fb, fl, c[0], 1), c[0])};
                })[0];
            return {insert(nb, l, toI64(nb, l, r), acc[0], {v}),
                    insert(nb, l, toI64(nb, l, v), acc[1], {r})};
          });
      rank = ranked[0];
      slot = ranked[1];
    }

    // Pass 3: the U results in final order, and inverse through the ranks.
    Value width = rows.width;
    ValueRange out = forLoop(
        b, loc, zero, u,
        {emptyTensor(b, loc, {OpFoldResult(u), dimOf(b, loc, x, 1)}, et),
         emptyTensor(b, loc, {OpFoldResult(u)}, i64), emptyTensor(b, loc, {OpFoldResult(u)}, i64)},
        [&](OpBuilder &nb, Location l, Value r, ValueRange acc) -> Values {
          Value v = slot ? toIndex(nb, l, extract(nb, l, slot, {r})) : r;
          Value f = extract(nb, l, first, {v});
          Value row = toIndex(nb, l, f);
          Value values =
              forLoop(nb, l, indexConst(nb, l, 0), width, {acc[0]},
                      [&](OpBuilder &cb, Location cl, Value k, ValueRange t) -> Values {
                        return {insert(cb, cl, extract(cb, cl, x, {row, k}), t[0], {r, k})};
                      })[0];
          return {values, insert(nb, l, f, acc[1], {r}),
                  insert(nb, l, extract(nb, l, counts, {v}), acc[2], {r})};
        });
    if (rank)
      inverse = forLoop(b, loc, zero, n, {inverse},
                        [&](OpBuilder &nb, Location l, Value i, ValueRange acc) -> Values {
                          Value v = toIndex(nb, l, extract(nb, l, acc[0], {i}));
                          return {insert(nb, l, extract(nb, l, rank, {v}), acc[0], {i})};
                        })[0];
    rewriter.replaceOp(op, {out[0], out[1], inverse, out[2]});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// NonMaxSuppression
//===----------------------------------------------------------------------===//

/// A box's extent as [lo, hi) per axis.
struct Box {
  Value y0, x0, y1, x1;
};

Box loadBox(OpBuilder &b, Location l, Value boxes, Value batch, Value i, bool centerPoint) {
  Value c[4];
  for (int64_t k = 0; k < 4; ++k)
    c[k] = extract(b, l, boxes, {batch, i, indexConst(b, l, k)});
  if (!centerPoint) // [y1, x1, y2, x2], corners in either order
    return {
        arith::MinimumFOp::create(b, l, c[0], c[2]), arith::MinimumFOp::create(b, l, c[1], c[3]),
        arith::MaximumFOp::create(b, l, c[0], c[2]), arith::MaximumFOp::create(b, l, c[1], c[3])};
  // [x_center, y_center, width, height]
  Value half = scalarConst(b, l, b.getF32Type(), 0.5);
  Value hw = arith::MulFOp::create(b, l, c[2], half), hh = arith::MulFOp::create(b, l, c[3], half);
  return {arith::SubFOp::create(b, l, c[1], hh), arith::SubFOp::create(b, l, c[0], hw),
          arith::AddFOp::create(b, l, c[1], hh), arith::AddFOp::create(b, l, c[0], hw)};
}

/// Whether the intersection over union of a and b exceeds `threshold`;
/// boxes that do not overlap, or have no area, never suppress (as
/// onnxruntime decides it).
Value overlapsAbove(OpBuilder &b, Location l, const Box &p, const Box &q, Value threshold) {
  using P = arith::CmpFPredicate;
  auto sub = [&](Value x, Value y) { return (Value)arith::SubFOp::create(b, l, x, y); };
  auto mul = [&](Value x, Value y) { return (Value)arith::MulFOp::create(b, l, x, y); };
  auto positive = [&](Value v) {
    return (Value)arith::CmpFOp::create(b, l, P::OGT, v, scalarConst(b, l, v.getType(), 0));
  };
  Value h =
      sub(arith::MinimumFOp::create(b, l, p.y1, q.y1), arith::MaximumFOp::create(b, l, p.y0, q.y0));
  Value w =
      sub(arith::MinimumFOp::create(b, l, p.x1, q.x1), arith::MaximumFOp::create(b, l, p.x0, q.x0));
  Value inter = mul(h, w);
  Value areaP = mul(sub(p.y1, p.y0), sub(p.x1, p.x0));
  Value areaQ = mul(sub(q.y1, q.y0), sub(q.x1, q.x0));
  Value uni = sub(arith::AddFOp::create(b, l, areaP, areaQ), inter);
  Value valid = andI(b, l, andI(b, l, positive(h), positive(w)),
                     andI(b, l, andI(b, l, positive(areaP), positive(areaQ)), positive(uni)));
  Value iou = arith::DivFOp::create(b, l, inter, uni);
  return andI(b, l, valid, arith::CmpFOp::create(b, l, P::OGT, iou, threshold));
}

/// One scf.for over (batch, class) pairs; in each, up to N rounds that pick
/// the best box not yet considered (a scan over the class's scores: no
/// sort, and the rounds stop when max_per_class are kept or no candidate is
/// left), then keep it unless a box kept for this class overlaps it.
struct NonMaxSuppressionLowering : OpConversionPattern<NonMaxSuppressionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(NonMaxSuppressionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value boxes = adaptor.getBoxes(), scores = adaptor.getScores();
    bool center = op.getCenterPointBox();
    Type i64 = b.getI64Type(), i1 = b.getI1Type();
    Value iouThreshold = extract(b, loc, adaptor.getIouThreshold(), {});
    Value scoreThreshold =
        adaptor.getScoreThreshold() ? extract(b, loc, adaptor.getScoreThreshold(), {}) : Value();
    OpFoldResult nSize = dimOf(b, loc, boxes, 1);
    checkSizesEqual(b, loc, dimOf(b, loc, scores, 0), dimOf(b, loc, boxes, 0),
                    "scores and boxes must have the same number of batches");
    checkSizesEqual(b, loc, dimOf(b, loc, scores, 2), nSize,
                    "scores and boxes must have the same number of boxes");
    Value n = indexValue(b, loc, nSize);
    Value classes = indexValue(b, loc, dimOf(b, loc, scores, 1));
    Value pairs =
        arith::MulIOp::create(b, loc, indexValue(b, loc, dimOf(b, loc, scores, 0)), classes);
    // max_per_class below 0 keeps nothing, as 0 does.
    Value limit = arith::MinSIOp::create(
        b, loc, n,
        arith::MaxSIOp::create(b, loc, indexConst(b, loc, 0),
                               toIndex(b, loc, extract(b, loc, adaptor.getMaxPerClass(), {}))));
    Value capacity = arith::MulIOp::create(b, loc, pairs, limit);
    Value zero = indexConst(b, loc, 0);
    Value selected = emptyTensor(b, loc, {OpFoldResult(capacity), b.getIndexAttr(3)}, i64);
    Value taken = emptyTensor(b, loc, {nSize}, i1);

    ValueRange all =
        forLoop(b, loc, zero, pairs, {selected, taken, zero},
                [&](OpBuilder &pb, Location pl, Value pair, ValueRange acc) -> Values {
                  Value batch = arith::DivUIOp::create(pb, pl, pair, classes);
                  Value cls = arith::RemUIOp::create(pb, pl, pair, classes);
                  Value start = acc[2];
                  Value none =
                      linalg::FillOp::create(pb, pl, boolConst(pb, pl, false), acc[1]).getResult(0);
                  ValueRange rounds = forLoop(
                      pb, pl, zero, n, {acc[0], none, start, boolConst(pb, pl, false)},
                      [&](OpBuilder &rb, Location rl, Value, ValueRange st) -> Values {
                        Value kept = arith::SubIOp::create(rb, rl, st[2], start);
                        Value done = orI(rb, rl, st[3],
                                         cmpi(rb, rl, arith::CmpIPredicate::uge, kept, limit));
                        return ifThenElse(
                            rb, rl, done, [&](OpBuilder &, Location) -> Values { return st; },
                            [&](OpBuilder &ob, Location ol) -> Values {
                              return pickAndKeep(ob, ol, boxes, scores, batch, cls, n, start, st,
                                                 iouThreshold, scoreThreshold, center);
                            });
                      });
                  return {rounds[0], rounds[1], rounds[2]};
                });
    Value count = all[2];
    Value result = leadingRows(b, loc, all[0], count);
    rewriter.replaceOp(op, result);
    return success();
  }

  /// One round: the best-scoring candidate not yet taken (lowest index among
  /// equals, above the score threshold), marked taken and kept unless a box
  /// kept since `start` overlaps it. `st` is (selected, taken, count,
  /// exhausted): exhausted once no candidate is left.
  static Values pickAndKeep(OpBuilder &b, Location l, Value boxes, Value scores, Value batch,
                            Value cls, Value n, Value start, ValueRange st, Value iouThreshold,
                            Value scoreThreshold, bool center) {
    Value selected = st[0], taken = st[1], count = st[2];
    Type f32 = b.getF32Type();
    // best = n means no candidate.
    ValueRange best = forLoop(
        b, l, indexConst(b, l, 0), n, {n, scalarConst(b, l, f32, 0)},
        [&](OpBuilder &sb, Location sl, Value i, ValueRange bestSoFar) -> Values {
          Value s = extract(sb, sl, scores, {batch, cls, i});
          Value free = notI(sb, sl, extract(sb, sl, taken, {i}));
          if (scoreThreshold)
            free =
                andI(sb, sl, free,
                     arith::CmpFOp::create(sb, sl, arith::CmpFPredicate::OGT, s, scoreThreshold));
          Value first = cmpi(sb, sl, arith::CmpIPredicate::eq, bestSoFar[0], n);
          Value higher = arith::CmpFOp::create(sb, sl, arith::CmpFPredicate::OGT, s, bestSoFar[1]);
          Value better = andI(sb, sl, free, orI(sb, sl, first, higher));
          return {arith::SelectOp::create(sb, sl, better, i, bestSoFar[0]),
                  arith::SelectOp::create(sb, sl, better, s, bestSoFar[1])};
        });
    Value pick = best[0];
    Value found = cmpi(b, l, arith::CmpIPredicate::ult, pick, n);
    return ifThenElse(
        b, l, found,
        [&](OpBuilder &tb, Location tl) -> Values {
          Value nowTaken = insert(tb, tl, boolConst(tb, tl, true), taken, {pick});
          Box candidate = loadBox(tb, tl, boxes, batch, pick, center);
          Value suppressed =
              forLoop(tb, tl, start, count, {boolConst(tb, tl, false)},
                      [&](OpBuilder &kb, Location kl, Value r, ValueRange sup) -> Values {
                        Value other =
                            toIndex(kb, kl, extract(kb, kl, selected, {r, indexConst(kb, kl, 2)}));
                        Box keptBox = loadBox(kb, kl, boxes, batch, other, center);
                        return {orI(kb, kl, sup[0],
                                    overlapsAbove(kb, kl, candidate, keptBox, iouThreshold))};
                      })[0];
          ValueRange kept = ifThenElse(
              tb, tl, suppressed,
              [&](OpBuilder &, Location) -> Values {
                return {selected, count};
              },
              [&](OpBuilder &kb, Location kl) -> Values {
                Value row = selected;
                Value fields[3] = {batch, cls, pick};
                for (int64_t k = 0; k < 3; ++k)
                  row =
                      insert(kb, kl, toI64(kb, kl, fields[k]), row, {count, indexConst(kb, kl, k)});
                return {row, addIdx(kb, kl, count, 1)};
              });
          return {kept[0], nowTaken, kept[1], boolConst(tb, tl, false)};
        },
        [&](OpBuilder &eb, Location el) -> Values {
          return {selected, taken, count, boolConst(eb, el, true)};
        });
  }
};

} // namespace

void mlir::kiln::populateDataDependentLowerings(RewritePatternSet &patterns) {
  patterns.add<IotaLowering, NonZeroLowering, UniqueLowering, NonMaxSuppressionLowering>(
      patterns.getContext());
}
