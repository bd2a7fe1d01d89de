//===- KilnToLinalg.cpp - kiln ops to linalg/tensor/arith/math ------------===//
//
// Elementwise ops and reductions become linalg.generic with broadcasting
// indexing maps; matmul, conv and pooling become linalg named ops so that the
// CPU schedule can match and tile them.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/ConstantData.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

//===----------------------------------------------------------------------===//
// Constants and shape manipulation
//===----------------------------------------------------------------------===//

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConstantOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Attribute value = op.getValue();
    // arith works on signless integers: reinterpret unsigned constants.
    auto type = signlessType(op.getType());
    if (type != op.getType())
      value = cast<DenseElementsAttr>(value).bitcast(type.getElementType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(value));
    return success();
  }
};

/// Element `i` of a run-time i64 shape, as an index checked to be >= 1.
static Value shapeElement(OpBuilder &b, Location loc, Value shape, int64_t i) {
  Value at = arith::ConstantIndexOp::create(b, loc, i);
  Value size = tensor::ExtractOp::create(b, loc, shape, ValueRange{at});
  Value one = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
  checkAtRunTime(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, size, one),
                 "element " + Twine(i) + " of the run-time shape is not a size (>= 1)");
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), size);
}

/// The sizes of a dynamic reshape: kept input sizes, static sizes, and
/// what the element count leaves for the rest (checked to divide). Empty
/// when reshapeTo can infer them itself.
static SmallVector<OpFoldResult> keptSizes(OpBuilder &b, Location loc, Value input,
                                           Value shape, RankedTensorType type,
                                           std::optional<ArrayRef<int64_t>> kept) {
  if (!kept || type.hasStaticShape())
    return {};
  SmallVector<OpFoldResult> sizes;
  int64_t inferred = -1;
  for (auto [i, source] : llvm::enumerate(*kept)) {
    if (source == -2)
      sizes.push_back(shapeElement(b, loc, shape, i));
    else if (source >= 0)
      sizes.push_back(dimOf(b, loc, input, source));
    else if (type.isDynamicDim(i))
      sizes.push_back(OpFoldResult()), inferred = i;
    else
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
  }
  if (inferred < 0)
    return sizes;
  SmallVector<OpFoldResult> others(llvm::make_filter_range(sizes, [](OpFoldResult s) {
    return static_cast<bool>(s);
  }));
  Value total = indexValue(b, loc, mulSizes(b, loc, sizesOf(b, loc, input)));
  Value known = indexValue(b, loc, mulSizes(b, loc, others));
  Value rest = arith::DivUIOp::create(b, loc, total, known);
  checkAtRunTime(b, loc,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       arith::MulIOp::create(b, loc, rest, known), total),
                 "the input's element count is not a multiple of the other dimensions' "
                 "product");
  sizes[inferred] = rest;
  return sizes;
}

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    Value input = adaptor.getInput();
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), input, type,
                                     keptSizes(rewriter, op.getLoc(), input, adaptor.getShape(),
                                               type, op.getKept())));
    return success();
  }
};

struct ShapeLowering : OpConversionPattern<ShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ShapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> dims;
    for (OpFoldResult size : sizesOf(rewriter, loc, adaptor.getInput()))
      dims.push_back(arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                                indexValue(rewriter, loc, size)));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, signlessType(op.getType()), dims);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    SmallVector<OpFoldResult> in = sizesOf(rewriter, op.getLoc(), adaptor.getInput()), sizes;
    for (int64_t p : op.getPerm())
      sizes.push_back(in[p]);
    Value init = emptyTensor(rewriter, op.getLoc(), sizes, type.getElementType());
    auto inType = tensorType(adaptor.getInput());
    int64_t rank = type.getRank();
    if (rank > 1 && type.hasStaticShape() && type.getDimSize(rank - 1) < 8 &&
        inType.getDimSize(rank - 1) >= 8) {
      // A short innermost result dimension (NCHW -> NHWC of 3 channels):
      // iterate in the input's order instead, so that the innermost loop
      // reads long contiguous rows rather than a few scattered values.
      SmallVector<AffineExpr> outputExprs;
      for (int64_t p : op.getPerm())
        outputExprs.push_back(rewriter.getAffineDimExpr(p));
      auto copy = linalg::GenericOp::create(
          rewriter, op.getLoc(), TypeRange{type}, adaptor.getInput(), init,
          ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank),
                              AffineMap::get(rank, 0, outputExprs, rewriter.getContext())},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [](OpBuilder &b, Location l, ValueRange args) { linalg::YieldOp::create(b, l, args[0]); });
      rewriter.replaceOp(op, copy.getResult(0));
      return success();
    }
    auto t = linalg::TransposeOp::create(rewriter, op.getLoc(), adaptor.getInput(), init,
                                         op.getPerm());
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = signlessType(op.getType());
    Location loc = op.getLoc();
    int64_t axis = op.getAxis(), rank = type.getRank();
    // Offsets along the axis add up; the other sizes come from the result
    // type or the first input with that dimension dynamic, and must agree.
    ValueRange inputs = adaptor.getInputs();
    SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(0)};
    for (Value in : inputs)
      offsets.push_back(addSizes(rewriter, loc, offsets.back(), dimOf(rewriter, loc, in, axis)));
    SmallVector<OpFoldResult> sizes(rank);
    sizes[axis] = offsets.back();
    for (int64_t i = 0; i < rank; ++i) {
      if (i == axis)
        continue;
      if (!type.isDynamicDim(i)) {
        sizes[i] = rewriter.getIndexAttr(type.getDimSize(i));
        continue;
      }
      Value from = *llvm::find_if(inputs, [&](Value in) { return tensorType(in).isDynamicDim(i); });
      sizes[i] = dimOf(rewriter, loc, from, i);
    }
    for (auto [k, in] : llvm::enumerate(inputs))
      for (int64_t i = 0; i < rank; ++i)
        if (i != axis && tensorType(in).isDynamicDim(i))
          checkSizesEqual(rewriter, loc, dimOf(rewriter, loc, in, i), sizes[i],
                          "dimension " + Twine(i) + " of input " + Twine(k) +
                              " differs from the other inputs'");
    Value result = emptyTensor(rewriter, loc, sizes, type.getElementType());
    SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
    for (auto [k, in] : llvm::enumerate(inputs)) {
      SmallVector<OpFoldResult> at(rank, rewriter.getIndexAttr(0));
      at[axis] = offsets[k];
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result, at,
                                             sizesOf(rewriter, loc, in), strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// MatMul and Gemm
//===----------------------------------------------------------------------===//

/// [.., M, K] x [.., K, N] with identical batch dims (already broadcast).
Value batchedMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    RankedTensorType resultType, Extension ext = {}) {
  Type et = resultType.getElementType();
  int64_t rank = resultType.getRank();
  bool widening = tensorType(lhs).getElementType() != et;
  SmallVector<OpFoldResult> ls = sizesOf(b, loc, lhs), rs = sizesOf(b, loc, rhs);
  SmallVector<OpFoldResult> outSizes(ls.begin(), ls.end() - 1);
  outSizes.push_back(rs.back());
  if (widening)
    return wideningMatmul(b, loc, lhs, rhs, zeroFilled(b, loc, outSizes, et), ext);
  if (rank == 2)
    return linalg::MatmulOp::create(b, loc, TypeRange{resultType}, ValueRange{lhs, rhs},
                                    zeroFilled(b, loc, outSizes, et))
        .getResult(0);
  // Collapse all batch dimensions into one and use linalg.batch_matmul.
  OpFoldResult batchSize = mulSizes(b, loc, ArrayRef(ls).drop_back(2));
  int64_t batch = 1;
  for (int64_t d : resultType.getShape().drop_back(2))
    batch = ShapedType::isDynamic(d) || ShapedType::isDynamic(batch) ? ShapedType::kDynamic
                                                                       : batch * d;
  auto to3d = [&](Value v) {
    ArrayRef<int64_t> s = tensorType(v).getShape();
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v);
    return reshapeTo(b, loc, v,
                     RankedTensorType::get({batch, s[rank - 2], s[rank - 1]},
                                           tensorType(v).getElementType()),
                     {batchSize, sizes[rank - 2], sizes[rank - 1]});
  };
  ArrayRef<int64_t> rts = resultType.getShape();
  auto out3d = RankedTensorType::get({batch, rts[rank - 2], rts[rank - 1]}, et);
  Value mm = linalg::BatchMatmulOp::create(
                 b, loc, TypeRange{out3d}, ValueRange{to3d(lhs), to3d(rhs)},
                 zeroFilled(b, loc, {batchSize, ls[rank - 2], rs[rank - 1]}, et))
                 .getResult(0);
  return reshapeTo(b, loc, mm, resultType, outSizes);
}

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto resultType = signlessType(op.getType());
    Type et = resultType.getElementType();
    Type lhsEt = tensorType(lhs).getElementType(), rhsEt = tensorType(rhs).getElementType();
    Extension ext{isUnsigned(op.getLhs()), isUnsigned(op.getRhs())};
    // Promote 1-D operands to matrices, as numpy does.
    SmallVector<int64_t> ls(tensorType(lhs).getShape()), rs(tensorType(rhs).getShape());
    if (ls.size() == 1) {
      ls.insert(ls.begin(), 1);
      lhs = reshapeTo(rewriter, loc, lhs, RankedTensorType::get(ls, lhsEt));
    }
    if (rs.size() == 1) {
      rs.push_back(1);
      rhs = reshapeTo(rewriter, loc, rhs, RankedTensorType::get(rs, rhsEt));
    }
    SmallVector<OpFoldResult> lsz = sizesOf(rewriter, loc, lhs), rsz = sizesOf(rewriter, loc, rhs);
    checkSizesEqual(rewriter, loc, lsz.back(), rsz[rsz.size() - 2],
                    "the contraction dimensions of the operands differ");
    int64_t m = ls[ls.size() - 2], k = ls.back(), n = rs.back();
    SmallVector<int64_t> batch(*broadcastShapes(ArrayRef(ls).drop_back(2),
                                                ArrayRef(rs).drop_back(2)));
    // The result's sizes, matrices promoted: batch sizes as broadcast, M, N.
    auto batchType = RankedTensorType::get(batch, et);
    auto batchOf = [&](Value v) {
      SmallVector<int64_t> s(tensorType(v).getShape().drop_back(2));
      SmallVector<OpFoldResult> z = sizesOf(rewriter, loc, v);
      z.truncate(s.size());
      return std::make_pair(s, z);
    };
    SmallVector<OpFoldResult> batchSizes;
    {
      auto [lb, lz] = batchOf(lhs);
      auto [rb, rz] = batchOf(rhs);
      int64_t rank = batch.size();
      for (int64_t i = 0; i < rank; ++i) {
        int64_t li = i - (rank - (int64_t)lb.size()), ri = i - (rank - (int64_t)rb.size());
        if (!batchType.isDynamicDim(i))
          batchSizes.push_back(rewriter.getIndexAttr(batch[i]));
        else
          batchSizes.push_back(li >= 0 && ShapedType::isDynamic(lb[li]) ? lz[li] : rz[ri]);
      }
    }
    Value result;
    if (rs.size() == 2) {
      // [.., M, K] x [K, N]: fold the lhs batch into the rows of one matmul.
      int64_t rows = m;
      for (int64_t d : batch)
        rows = ShapedType::isDynamic(d) || ShapedType::isDynamic(rows) ? ShapedType::kDynamic
                                                                         : rows * d;
      SmallVector<int64_t> full(batch);
      full.append({m, k});
      SmallVector<OpFoldResult> fullSizes(batchSizes);
      fullSizes.append({lsz[lsz.size() - 2], lsz.back()});
      Value lhs2d = reshapeTo(
          rewriter, loc, broadcastTo(rewriter, loc, lhs, full, fullSizes),
          RankedTensorType::get({rows, k}, lhsEt),
          {mulSizes(rewriter, loc, ArrayRef(fullSizes).drop_back()), lsz.back()});
      result =
          batchedMatmul(rewriter, loc, lhs2d, rhs, RankedTensorType::get({rows, n}, et), ext);
    } else {
      SmallVector<int64_t> lshape(batch), rshape(batch), oshape(batch);
      lshape.append({m, k});
      rshape.append({k, n});
      oshape.append({m, n});
      SmallVector<OpFoldResult> lfull(batchSizes), rfull(batchSizes);
      lfull.append({lsz[lsz.size() - 2], lsz.back()});
      rfull.append({rsz[rsz.size() - 2], rsz.back()});
      result = batchedMatmul(rewriter, loc, broadcastTo(rewriter, loc, lhs, lshape, lfull),
                             broadcastTo(rewriter, loc, rhs, rshape, rfull),
                             RankedTensorType::get(oshape, et), ext);
    }
    SmallVector<OpFoldResult> outSizes(batchSizes);
    if (tensorType(adaptor.getLhs()).getRank() > 1)
      outSizes.push_back(lsz[lsz.size() - 2]);
    if (tensorType(adaptor.getRhs()).getRank() > 1)
      outSizes.push_back(rsz.back());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, resultType, outSizes));
    return success();
  }
};

/// Transposes a 2-D float weight at compile time, so that a transposed Gemm
/// operand costs nothing per inference. Returns null if `v` is not such a
/// constant.
static Value transposedConstant(OpBuilder &b, Location loc, Value original) {
  auto constant = original.getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(original.getType());
  if (!constant || !type || type.getRank() != 2 || !isa<FloatType>(type.getElementType()))
    return {};
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  auto transposed = RankedTensorType::get({cols, rows}, type.getElementType());
  return relayoutConstant(b, loc, constant.getValue(), transposed, [&](int64_t i) {
    int64_t c = i / rows, r = i % rows;
    return r * cols + c;
  });
}

struct GemmLowering : OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Type et = type.getElementType();
    // Transposed operands are materialized so that every matmul reaches the
    // CPU schedule in the canonical [M,K]x[K,N] form.
    auto transposed = [&](Value v, Value original, bool t) -> Value {
      if (!t)
        return v;
      if (Value folded = transposedConstant(rewriter, loc, original))
        return folded;
      SmallVector<OpFoldResult> s = sizesOf(rewriter, loc, v);
      Value init = emptyTensor(rewriter, loc, {s[1], s[0]}, et);
      return linalg::TransposeOp::create(rewriter, loc, v, init, ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    };
    Value a = transposed(adaptor.getA(), op.getA(), op.getTransA());
    Value b = transposed(adaptor.getB(), op.getB(), op.getTransB());
    checkSizesEqual(rewriter, loc, dimOf(rewriter, loc, a, 1), dimOf(rewriter, loc, b, 0),
                    "the contraction dimensions of A and B differ");
    Value init = zeroFilled(
        rewriter, loc, {dimOf(rewriter, loc, a, 0), dimOf(rewriter, loc, b, 1)}, et);
    Value result = linalg::MatmulOp::create(rewriter, loc, TypeRange{type}, ValueRange{a, b}, init)
                       .getResult(0);
    double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
    SmallVector<Value> operands = {result};
    if (adaptor.getC())
      operands.push_back(adaptor.getC());
    if (alpha == 1.0 && operands.size() == 1) {
      rewriter.replaceOp(op, result);
      return success();
    }
    // Epilogue alpha * AB + beta * C as one elementwise op.
    result = buildElementwise(rewriter, loc, type, operands,
                              [&](OpBuilder &b, Location l, ValueRange a) {
                                Value v = a[0];
                                if (alpha != 1.0)
                                  v = arith::MulFOp::create(b, l, v, scalarConst(b, l, et, alpha));
                                if (a.size() < 2)
                                  return v;
                                Value c = a[1];
                                if (beta != 1.0)
                                  c = arith::MulFOp::create(b, l, c, scalarConst(b, l, et, beta));
                                return (Value)arith::AddFOp::create(b, l, v, c);
                              });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

struct BatchNormLowering : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Type et = type.getElementType();
    // Per-channel parameters as [C, 1, ...] so they broadcast over dim 1.
    SmallVector<int64_t> paramShape(type.getRank() - 1, 1);
    paramShape[0] = type.getDimSize(1);
    auto paramType = RankedTensorType::get(paramShape, et);
    SmallVector<Value> operands = {adaptor.getInput()};
    for (Value p : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                    adaptor.getVariance()})
      operands.push_back(reshapeTo(rewriter, loc, p, paramType));
    double eps = op.getEpsilon().convertToDouble();
    Value r = buildElementwise(
        rewriter, loc, type, operands, [&](OpBuilder &b, Location l, ValueRange a) {
          Value var = arith::AddFOp::create(b, l, a[4], scalarConst(b, l, et, eps));
          Value inv = math::RsqrtOp::create(b, l, var);
          Value x = arith::SubFOp::create(b, l, a[0], a[3]);
          Value s = arith::MulFOp::create(b, l, a[1], inv);
          return (Value)arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, x, s), a[2]);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

template <typename PoolOp, typename LinalgPoolOp>
Value buildPool(ConversionPatternRewriter &rewriter, PoolOp op, Value input,
                ArrayRef<int64_t> dilations, double padValue) {
  Location loc = op.getLoc();
  auto type = signlessType(op.getType());
  Type et = type.getElementType();
  Value padded = padSpatial(rewriter, loc, input, op.getPads(), padValue);
  Value window = emptyTensor(rewriter, loc, op.getKernel(), et);
  SmallVector<OpFoldResult> sizes =
      windowOutputSizes(rewriter, loc, padded, type.getDimSize(1), op.getKernel(),
                        op.getStrides(), dilations);
  sizes[1] = dimOf(rewriter, loc, padded, 1);
  Value init = filledTensor(rewriter, loc, sizes, scalarConst(rewriter, loc, et, padValue));
  return LinalgPoolOp::create(rewriter, loc, TypeRange{type}, ValueRange{padded, window},
                              init, rewriter.getI64TensorAttr(op.getStrides()),
                              rewriter.getI64TensorAttr(dilations))
      .getResult(0);
}

struct MaxPoolLowering : OpConversionPattern<MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MaxPoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    double lowest = -std::numeric_limits<double>::infinity();
    if (op.getChannelsLast()) {
      // NHWC (static shapes): the window slides over dimensions 1 and 2.
      auto type = signlessType(op.getType());
      if (!type.hasStaticShape())
        return rewriter.notifyMatchFailure(op, "channels-last pooling needs static shapes");
      Location loc = op.getLoc();
      Type et = type.getElementType();
      Value padded = padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), lowest, true);
      Value init = filledTensor(rewriter, loc,
                                getAsIndexOpFoldResult(rewriter.getContext(), type.getShape()),
                                scalarConst(rewriter, loc, et, lowest));
      rewriter.replaceOp(op, linalg::PoolingNhwcMaxOp::create(
                                 rewriter, loc, TypeRange{type},
                                 ValueRange{padded, emptyTensor(rewriter, loc, op.getKernel(), et)},
                                 init, rewriter.getI64TensorAttr(op.getStrides()),
                                 rewriter.getI64TensorAttr(op.getDilations()))
                                 .getResult(0));
      return success();
    }
    rewriter.replaceOp(op, buildPool<MaxPoolOp, linalg::PoolingNchwMaxOp>(
                               rewriter, op, adaptor.getInput(), op.getDilations(), lowest));
    return success();
  }
};

/// Indices of MaxPool: a window reduction carrying (max, flat NCHW index);
/// positions in the padding read -inf and are never chosen.
struct MaxPoolIndicesLowering : OpConversionPattern<MaxPoolIndicesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MaxPoolIndicesOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = signlessType(op.getType());
    ArrayRef<int64_t> in = tensorType(adaptor.getInput()).getShape();
    Type et = tensorType(adaptor.getInput()).getElementType(), i64 = rewriter.getI64Type();
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(), p = op.getPads(),
                      d = op.getDilations();
    double lowest = -std::numeric_limits<double>::infinity();
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), p, lowest);
    // Loops: n, c, oh, ow (parallel), kh, kw (reduction).
    AffineExpr n, c, oh, ow, kh, kw;
    bindDims(ctx, n, c, oh, ow, kh, kw);
    // The window operand only gives kh/kw their extents, as in linalg pooling.
    Value window = emptyTensor(rewriter, loc, k, et);
    SmallVector<AffineMap> maps = {
        AffineMap::get(6, 0, {n, c, oh * s[0] + kh * d[0], ow * s[1] + kw * d[1]}, ctx),
        AffineMap::get(6, 0, {kh, kw}, ctx), AffineMap::get(6, 0, {n, c, oh, ow}, ctx),
        AffineMap::get(6, 0, {n, c, oh, ow}, ctx)};
    SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    Value best = filledTensor(rewriter, loc, type.getShape(), scalarConst(rewriter, loc, et, lowest));
    Value index = zeroFilled(rewriter, loc, type.getShape(), i64);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{best.getType(), index.getType()}, ValueRange{padded, window},
        ValueRange{best, index}, maps, iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          auto dim = [&](int64_t i) {
            return arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, i));
          };
          auto cst = [&](int64_t v) { return scalarConst(b, l, i64, (double)v); };
          auto coord = [&](int64_t o, int64_t kk, int64_t stride, int64_t dil, int64_t pad) {
            Value v = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, dim(o), cst(stride)),
                                            arith::MulIOp::create(b, l, dim(kk), cst(dil)));
            return arith::SubIOp::create(b, l, v, cst(pad));
          };
          Value h = coord(2, 4, s[0], d[0], p[0]), w = coord(3, 5, s[1], d[1], p[1]);
          Value flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, dim(0), cst(in[1])),
                                             dim(1));
          bool colMajor = op.getColumnMajor();
          Value outer = colMajor ? w : h, inner = colMajor ? h : w;
          int64_t outerSize = colMajor ? in[3] : in[2], innerSize = colMajor ? in[2] : in[3];
          flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, flat, cst(outerSize)),
                                       outer);
          flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, flat, cst(innerSize)),
                                       inner);
          Value better = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, a[0], a[2]);
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, better, a[0], a[2]),
                                             arith::SelectOp::create(b, l, better, flat, a[3])});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

/// Number of non-padding input elements under each output window position
/// along one spatial axis.
SmallVector<int64_t> windowCounts(int64_t in, int64_t padBefore, int64_t kernel,
                                  int64_t stride, int64_t dilation, int64_t outSize) {
  SmallVector<int64_t> counts;
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t count = 0;
    for (int64_t j = 0, at = o * stride - padBefore; j < kernel; ++j, at += dilation)
      count += at >= 0 && at < in;
    counts.push_back(count);
  }
  return counts;
}

/// The taps of the window at output position `o` that lie inside an input
/// of `size`: with start = o*stride - pad, the taps start + j*dilation for
/// j from max(0, ceil(-start / dilation)) to min(kernel, ceil((size - start)
/// / dilation)).
static Value windowCount(OpBuilder &b, Location loc, Value o, Value size, int64_t kernel,
                         int64_t stride, int64_t dilation, int64_t pad) {
  auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value start = arith::SubIOp::create(
      b, loc, arith::MulIOp::create(b, loc, o, constant(stride)), constant(pad));
  Value d = constant(dilation);
  Value first = arith::MaxSIOp::create(
      b, loc, arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, constant(0), start), d),
      constant(0));
  Value end = arith::MinSIOp::create(
      b, loc, arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, size, start), d),
      constant(kernel));
  return arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, end, first), constant(0));
}

struct AveragePoolLowering : OpConversionPattern<AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AveragePoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Type et = type.getElementType();
    Value sum = buildPool<AveragePoolOp, linalg::PoolingNchwSumOp>(
        rewriter, op, adaptor.getInput(), op.getDilations(), 0.0);
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(), p = op.getPads(),
                      d = op.getDilations();
    ArrayRef<int64_t> in = tensorType(adaptor.getInput()).getShape();
    int64_t oh = type.getDimSize(2), ow = type.getDimSize(3);
    if (ShapedType::isDynamic(oh) || ShapedType::isDynamic(ow)) {
      // Sizes known at run time: each output divides by the count of its
      // window's elements inside the input, computed from its position.
      Value size[2] = {indexValue(rewriter, loc, dimOf(rewriter, loc, adaptor.getInput(), 2)),
                       indexValue(rewriter, loc, dimOf(rewriter, loc, adaptor.getInput(), 3))};
      bool counted = op.getCountIncludePad();
      rewriter.replaceOp(
          op, buildElementwise(rewriter, loc, type, sum,
                               [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 Value count = arith::ConstantIndexOp::create(b, l, 1);
                                 for (int64_t i = 0; i < 2; ++i) {
                                   Value n = arith::ConstantIndexOp::create(b, l, k[i]);
                                   if (!counted)
                                     n = windowCount(b, l, linalg::IndexOp::create(b, l, i + 2),
                                                     size[i], k[i], s[i], d[i], p[i]);
                                   count = arith::MulIOp::create(b, l, count, n);
                                 }
                                 Value c = arith::IndexCastOp::create(b, l, b.getI64Type(), count);
                                 return arith::DivFOp::create(
                                     b, l, a[0], arith::SIToFPOp::create(b, l, et, c));
                               }));
      return success();
    }
    // Divisors per output position: the full window if padding counts,
    // otherwise only the elements inside the input (a compile-time table).
    SmallVector<int64_t> rows(oh, k[0]), cols(ow, k[1]);
    if (!op.getCountIncludePad()) {
      rows = windowCounts(in[2], p[0], k[0], s[0], d[0], oh);
      cols = windowCounts(in[3], p[1], k[1], s[1], d[1], ow);
    }
    // The table has the input's element type, so f16/f64 pools stay consistent.
    SmallVector<Attribute> inverse;
    for (int64_t r : rows)
      for (int64_t c : cols)
        inverse.push_back(rewriter.getFloatAttr(et, r * c ? 1.0 / double(r * c) : 0.0));
    auto tableType = RankedTensorType::get({oh, ow}, et);
    Value table =
        arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(tableType, inverse));
    Value r = buildElementwise(rewriter, loc, type, {sum, table},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::MulFOp::create(b, l, a[0], a[1]);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalization and reductions
//===----------------------------------------------------------------------===//

SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

struct GlobalAveragePoolLowering : OpConversionPattern<GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GlobalAveragePoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    int64_t rank = tensorType(adaptor.getInput()).getRank();
    rewriter.replaceOp(op, buildMean(rewriter, op.getLoc(), adaptor.getInput(),
                                     trailingAxes(2, rank)));
    return success();
  }
};

/// The reduction `r` (reduced dimensions kept as 1) reshaped to the op's
/// `type`, which drops them when keepdims is 0.
static Value withoutReducedDims(OpBuilder &b, Location loc, Value r, ArrayRef<int64_t> axes,
                                Type type) {
  SmallVector<OpFoldResult> sizes;
  auto target = signlessType(type);
  for (auto [i, size] : llvm::enumerate(sizesOf(b, loc, r)))
    if (target.getRank() == tensorType(r).getRank() || !llvm::is_contained(axes, (int64_t)i))
      sizes.push_back(size);
  return reshapeTo(b, loc, r, target, sizes);
}

struct ReduceMeanLowering : OpConversionPattern<ReduceMeanOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReduceMeanOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Value mean = buildMean(rewriter, op.getLoc(), adaptor.getInput(), op.getAxes());
    rewriter.replaceOp(op, withoutReducedDims(rewriter, op.getLoc(), mean, op.getAxes(),
                                              op.getType()));
    return success();
  }
};

/// softmax = exp(x - max) / sum; log_softmax = (x - max) - log(sum), with
/// sum = sum(exp(x - max)) along the axis.
template <typename OpTy, bool isLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = signlessType(op.getType());
    int64_t axis = op.getAxis();
    Value max = buildMax(rewriter, loc, x, axis);
    Value shifted = buildElementwise(rewriter, loc, type, {x, max},
                                     [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                       return arith::SubFOp::create(b, l, a[0], a[1]);
                                     });
    Value e = buildElementwise(rewriter, loc, type, shifted,
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return math::ExpOp::create(b, l, a[0]);
                               });
    Value sum = buildSum(rewriter, loc, e, axis);
    Value r = buildElementwise(rewriter, loc, type, {isLog ? shifted : e, sum},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 if (isLog)
                                   return arith::SubFOp::create(b, l, a[0],
                                                                math::LogOp::create(b, l, a[1]));
                                 return arith::DivFOp::create(b, l, a[0], a[1]);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    Type et = tensorType(x).getElementType();
    StringRef kind = op.getKind();
    bool isFloat = isa<FloatType>(et);
    Value r;
    if (kind == "sum") {
      r = buildSum(rewriter, loc, x, op.getAxes());
    } else if (kind == "max") {
      r = buildMax(rewriter, loc, x, op.getAxes(), isUnsigned(op.getInput()));
    } else if (kind == "min") {
      bool isU = isUnsigned(op.getInput());
      r = buildReduction(rewriter, loc, x, op.getAxes(),
                         extremeConst(rewriter, loc, et, false, isU),
                         [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                           if (isFloat)
                             return arith::MinimumFOp::create(b, l, a[0], a[1]);
                           if (isU)
                             return arith::MinUIOp::create(b, l, a[0], a[1]);
                           return arith::MinSIOp::create(b, l, a[0], a[1]);
                         });
    } else {
      r = buildReduction(rewriter, loc, x, op.getAxes(), scalarConst(rewriter, loc, et, 1.0),
                         [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                           if (isFloat)
                             return arith::MulFOp::create(b, l, a[0], a[1]);
                           return arith::MulIOp::create(b, l, a[0], a[1]);
                         });
    }
    rewriter.replaceOp(op, withoutReducedDims(rewriter, loc, r, op.getAxes(), op.getType()));
    return success();
  }
};

/// ArgMax/ArgMin: one reduction carrying (best value, its index). Ties keep
/// the first index, or the last with select_last_index.
template <typename OpTy, bool isMax>
struct ArgLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    RankedTensorType in = tensorType(x);
    Type et = in.getElementType(), i64 = rewriter.getI64Type();
    int64_t axis = op.getAxis(), rank = in.getRank();
    bool last = op.getSelectLastIndex();
    SmallVector<int64_t> keptShape(in.getShape());
    keptShape[axis] = 1;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    for (int64_t i = 0; i < rank; ++i)
      outExprs.push_back(i == axis ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
    iterators[axis] = utils::IteratorType::reduction;
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    bool isU = isUnsigned(op.getInput());
    Value best =
        filledTensor(rewriter, loc, keptShape, extremeConst(rewriter, loc, et, isMax, isU));
    Value index = zeroFilled(rewriter, loc, keptShape, i64);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{best.getType(), index.getType()}, x, ValueRange{best, index},
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx), outMap, outMap},
        iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value v = a[0], cur = a[1], curIndex = a[2];
          Value better;
          if (isa<FloatType>(et)) {
            auto pred = isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
                              : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
            better = arith::CmpFOp::create(b, l, pred, v, cur);
          } else {
            using P = arith::CmpIPredicate;
            auto pred = isMax ? (last ? (isU ? P::uge : P::sge) : (isU ? P::ugt : P::sgt))
                              : (last ? (isU ? P::ule : P::sle) : (isU ? P::ult : P::slt));
            better = arith::CmpIOp::create(b, l, pred, v, cur);
          }
          Value pos = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, better, v, cur),
                                             arith::SelectOp::create(b, l, better, pos, curIndex)});
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, generic.getResult(1),
                                     signlessType(op.getType())));
    return success();
  }
};

/// TopK in two linalg.generic passes over each slice along the axis: the
/// rank of every element (how many elements beat it; of equal ones the lower
/// index wins), then, for each output slot p < k, the element of rank p.
/// Quadratic in the axis length, but branch-free and with no sorting state.
struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    RankedTensorType in = tensorType(x);
    Type et = in.getElementType(), i64 = rewriter.getI64Type();
    int64_t axis = op.getAxis(), rank = in.getRank();
    bool largest = op.getLargest(), isU = isUnsigned(op.getInput());
    // Loops: the tensor's dimensions, then one more that walks the axis.
    SmallVector<AffineExpr> own, along;
    for (int64_t d = 0; d < rank; ++d) {
      own.push_back(getAffineDimExpr(d, ctx));
      along.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    }
    AffineMap ownMap = AffineMap::get(rank + 1, 0, own, ctx);
    AffineMap alongMap = AffineMap::get(rank + 1, 0, along, ctx);
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    auto beats = [&](OpBuilder &b, Location l, Value v, Value w) -> Value { // v before w?
      if (isa<FloatType>(et))
        return arith::CmpFOp::create(
            b, l, largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, v, w);
      using P = arith::CmpIPredicate;
      return arith::CmpIOp::create(
          b, l, largest ? (isU ? P::ugt : P::sgt) : (isU ? P::ult : P::slt), v, w);
    };
    auto equal = [&](OpBuilder &b, Location l, Value v, Value w) -> Value {
      if (isa<FloatType>(et))
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, v, w);
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, v, w);
    };
    Value ranks =
        linalg::GenericOp::create(
            rewriter, loc, RankedTensorType::get(in.getShape(), i64), ValueRange{x, x},
            zeroFilled(rewriter, loc, in.getShape(), i64),
            SmallVector<AffineMap>{ownMap, alongMap, ownMap}, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value i = linalg::IndexOp::create(b, l, axis), j = linalg::IndexOp::create(b, l, rank);
              Value tieBreak = arith::AndIOp::create(
                  b, l, equal(b, l, a[1], a[0]),
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, i));
              Value before = arith::OrIOp::create(b, l, beats(b, l, a[1], a[0]), tieBreak);
              linalg::YieldOp::create(
                  b, l, arith::AddIOp::create(b, l, a[2], arith::ExtUIOp::create(b, l, i64, before))
                            .getResult());
            })
            .getResult(0);
    auto valuesType = signlessType(op.getValues().getType());
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, x);
    if (Value k = adaptor.getK()) {
      Value kValue = tensor::ExtractOp::create(rewriter, loc, k, ValueRange{});
      Value n = arith::ConstantIntOp::create(rewriter, loc, i64, in.getDimSize(axis));
      Value zero = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
      checkAtRunTime(rewriter, loc,
                     arith::AndIOp::create(
                         rewriter, loc,
                         arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, kValue,
                                               zero),
                         arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, kValue, n)),
                     "K must be between 0 and " + Twine(in.getDimSize(axis)) +
                         ", the input's size along the axis");
      sizes[axis] = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), kValue)
                        .getResult();
    } else {
      sizes[axis] = rewriter.getIndexAttr(valuesType.getDimSize(axis));
    }
    Value values = zeroFilled(rewriter, loc, sizes, et);
    Value indices = zeroFilled(rewriter, loc, sizes, i64);
    auto select = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valuesType, indices.getType()}, ValueRange{x, ranks},
        ValueRange{values, indices},
        SmallVector<AffineMap>{alongMap, alongMap, ownMap, ownMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value slot = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, axis));
          Value from = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, rank));
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[1], slot);
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, hit, a[0], a[2]),
                                             arith::SelectOp::create(b, l, hit, from, a[3])});
        });
    rewriter.replaceOp(op, select.getResults());
    return success();
  }
};

/// CumSum/CumProd as a masked contraction along the axis: out[..i..] = sum
/// (product) over j of x[..j..] where j precedes i (per exclusive/reverse),
/// other elements counting as 0 (1). Quadratic in the axis length, but one
/// vectorizable generic.
struct CumulativeLowering : OpConversionPattern<CumulativeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CumulativeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = signlessType(op.getType());
    int64_t rank = type.getRank(), axis = op.getAxis();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    // Dimensions: the result's, then j (the reduced position along axis).
    SmallVector<AffineExpr> inExprs, outExprs;
    for (int64_t d = 0; d < rank; ++d) {
      outExprs.push_back(getAffineDimExpr(d, ctx));
      inExprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, inExprs, ctx),
                                   AffineMap::get(rank + 1, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(rank + 1, utils::IteratorType::parallel);
    iterators[rank] = utils::IteratorType::reduction;
    bool product = op.getKind() == "prod";
    Value identity = scalarConst(rewriter, loc, type.getElementType(), product ? 1.0 : 0.0);
    Value init = filledTensor(rewriter, loc, type.getShape(), identity);
    Value r = linalg::GenericOp::create(
                  rewriter, loc, type, adaptor.getInput(), init, maps, iterators,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value i = linalg::IndexOp::create(b, l, axis);
                    Value j = linalg::IndexOp::create(b, l, rank);
                    using P = arith::CmpIPredicate;
                    P pred = reverse ? (exclusive ? P::ugt : P::uge) : (exclusive ? P::ult : P::ule);
                    Value take = arith::CmpIOp::create(b, l, pred, j, i);
                    Value v = arith::SelectOp::create(b, l, take, a[0], identity);
                    bool isFloat = isa<FloatType>(v.getType());
                    Value acc = product ? (isFloat ? (Value)arith::MulFOp::create(b, l, a[1], v)
                                                   : (Value)arith::MulIOp::create(b, l, a[1], v))
                                        : (isFloat ? (Value)arith::AddFOp::create(b, l, a[1], v)
                                                   : (Value)arith::AddIOp::create(b, l, a[1], v));
                    linalg::YieldOp::create(b, l, acc);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Einsum as one linalg.generic: a loop per letter (output letters first,
/// summed ones after), each operand read through its letters' map.
struct EinsumLowering : OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<int64_t> ranks;
    for (Value v : adaptor.getInputs())
      ranks.push_back(tensorType(v).getRank());
    std::string message;
    auto spec = parseEinsum(op.getEquation(), ranks, message);
    if (failed(spec))
      return rewriter.notifyMatchFailure(op, message);
    std::string letters = spec->output;
    for (const std::string &in : spec->inputs)
      for (char c : in)
        if (letters.find(c) == std::string::npos)
          letters += c;
    auto mapOf = [&](StringRef used) {
      SmallVector<AffineExpr> exprs;
      for (char c : used)
        exprs.push_back(getAffineDimExpr(letters.find(c), ctx));
      return AffineMap::get(letters.size(), 0, exprs, ctx);
    };
    SmallVector<AffineMap> maps;
    for (auto [letters2, v] : llvm::zip(spec->inputs, adaptor.getInputs())) {
      // Size-1 operand dimensions broadcast: read them at index 0.
      AffineMap m = mapOf(letters2);
      SmallVector<AffineExpr> exprs(m.getResults());
      ArrayRef<int64_t> shape = tensorType(v).getShape();
      auto out = signlessType(op.getType());
      for (auto [i, c] : llvm::enumerate(letters2)) {
        size_t at = spec->output.find(c);
        if (shape[i] == 1 && at != std::string::npos && out.getDimSize(at) != 1)
          exprs[i] = getAffineConstantExpr(0, ctx);
      }
      maps.push_back(AffineMap::get(letters.size(), 0, exprs, ctx));
    }
    maps.push_back(mapOf(spec->output));
    SmallVector<utils::IteratorType> iterators;
    for (size_t i = 0; i < letters.size(); ++i)
      iterators.push_back(i < spec->output.size() ? utils::IteratorType::parallel
                                                  : utils::IteratorType::reduction);
    auto type = signlessType(op.getType());
    Value init = zeroFilled(rewriter, loc, type.getShape(), type.getElementType());
    Value r = linalg::GenericOp::create(
                  rewriter, loc, type, adaptor.getInputs(), init, maps, iterators,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    bool isF = isa<FloatType>(a[0].getType());
                    Value prod = a[0];
                    for (Value v : a.drop_front().drop_back())
                      prod = isF ? (Value)arith::MulFOp::create(b, l, prod, v)
                                 : (Value)arith::MulIOp::create(b, l, prod, v);
                    Value sum = isF ? (Value)arith::AddFOp::create(b, l, a.back(), prod)
                                    : (Value)arith::AddIOp::create(b, l, a.back(), prod);
                    linalg::YieldOp::create(b, l, sum);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Type et = type.getElementType();
    Value x = adaptor.getInput();
    SmallVector<int64_t> axes = trailingAxes(op.getAxis(), type.getRank());
    Value mean = buildMean(rewriter, loc, x, axes);
    Value centered = buildElementwise(rewriter, loc, type, {x, mean},
                                      [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                        return arith::SubFOp::create(b, l, a[0], a[1]);
                                      });
    Value squared = buildElementwise(rewriter, loc, type, centered,
                                     [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                       return arith::MulFOp::create(b, l, a[0], a[0]);
                                     });
    Value var = buildMean(rewriter, loc, squared, axes);
    SmallVector<Value> operands = {centered, var, adaptor.getScale()};
    if (adaptor.getBias())
      operands.push_back(adaptor.getBias());
    double eps = op.getEpsilon().convertToDouble();
    Value r = buildElementwise(
        rewriter, loc, type, operands, [&](OpBuilder &b, Location l, ValueRange a) {
          Value inv = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, a[1], scalarConst(b, l, et, eps)));
          Value y = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, a[0], inv), a[2]);
          return a.size() > 3 ? (Value)arith::AddFOp::create(b, l, y, a[3]) : y;
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ConvertKilnToLinalgPass
    : mlir::kiln::impl::ConvertKilnToLinalgBase<ConvertKilnToLinalgPass> {
  using ConvertKilnToLinalgBase::ConvertKilnToLinalgBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect, arith::ArithDialect,
                           math::MathDialect, scf::SCFDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<KilnDialect>();

    // Unsigned kiln tensors become signless at function boundaries too.
    TypeConverter types;
    types.addConversion([](Type t) { return t; });
    types.addConversion([](RankedTensorType t) -> Type { return signlessType(t); });
    target.addDynamicallyLegalOp<func::FuncOp>(
        [&](func::FuncOp f) { return types.isSignatureLegal(f.getFunctionType()); });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp r) { return types.isLegal(r.getOperandTypes()); });

    RewritePatternSet patterns(ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns, types);
    populateReturnOpTypeConversionPattern(patterns, types);
    patterns.add<ConstantLowering, ReshapeLowering, ShapeLowering, TransposeLowering,
                 ConcatLowering, MatMulLowering, GemmLowering, BatchNormLowering,
                 MaxPoolLowering, AveragePoolLowering, GlobalAveragePoolLowering,
                 ReduceMeanLowering, SoftmaxLowering<SoftmaxOp, false>,
                 SoftmaxLowering<LogSoftmaxOp, true>, ReduceLowering,
                 ArgLowering<ArgMaxOp, true>, ArgLowering<ArgMinOp, false>, LayerNormLowering,
                 CumulativeLowering, EinsumLowering, MaxPoolIndicesLowering, TopKLowering>(
        ctx);
    populateElementwiseLowerings(patterns);
    populateDataMovementLowerings(patterns);
    populateAssertLowering(patterns);
    populateQuantLowerings(patterns);
    populateAttentionLowering(patterns, attentionQueryBlock, attentionKeyBlock,
                              attentionHalfMatmuls);
    populateConvLowering(patterns);
    populateDataDependentLowerings(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
