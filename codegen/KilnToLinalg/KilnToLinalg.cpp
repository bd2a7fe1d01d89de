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

/// How the operands of a widening integer matmul (8-bit operands, i32
/// result) extend; both false otherwise.
struct Extension {
  bool lhsUnsigned = false, rhsUnsigned = false;
};

/// A widening matmul as a linalg.generic over (batch..., m, n, k): each
/// operand is extended (integers by their own signedness, which
/// linalg.matmul's single `cast` cannot express for mixed u8 x s8 operands;
/// bf16 to f32) and the products summed in the result's type.
Value wideningMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                     Extension ext) {
  MLIRContext *ctx = b.getContext();
  int64_t batch = tensorType(init).getRank() - 2;
  unsigned dims = batch + 3;
  SmallVector<AffineExpr> prefix;
  for (int64_t i = 0; i < batch; ++i)
    prefix.push_back(getAffineDimExpr(i, ctx));
  AffineExpr m = getAffineDimExpr(batch, ctx), n = getAffineDimExpr(batch + 1, ctx),
             k = getAffineDimExpr(batch + 2, ctx);
  auto map = [&](AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs(prefix);
    exprs.append({r, c});
    return AffineMap::get(dims, 0, exprs, ctx);
  };
  SmallVector<utils::IteratorType> iterators(dims - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  Type sumType = tensorType(init).getElementType();
  bool isFloat = isa<FloatType>(sumType);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs, rhs}, init,
      ArrayRef<AffineMap>{map(m, k), map(k, n), map(m, n)}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        auto extend = [&](Value v, bool isUnsigned) -> Value {
          if (isFloat)
            return arith::ExtFOp::create(nb, l, sumType, v);
          if (isUnsigned)
            return arith::ExtUIOp::create(nb, l, sumType, v);
          return arith::ExtSIOp::create(nb, l, sumType, v);
        };
        Value x = extend(a[0], ext.lhsUnsigned), y = extend(a[1], ext.rhsUnsigned);
        Value sum = isFloat ? (Value)arith::AddFOp::create(nb, l, a[2],
                                                           arith::MulFOp::create(nb, l, x, y))
                            : (Value)arith::AddIOp::create(nb, l, a[2],
                                                           arith::MulIOp::create(nb, l, x, y));
        linalg::YieldOp::create(nb, l, ValueRange{sum});
      });
  // A contraction that elementwise fusion must leave whole, and that
  // kiln-cpu-vnni-matmul compiles to a dedicated kernel.
  generic->setAttr("kiln.widening_matmul", b.getUnitAttr());
  return generic.getResult(0);
}

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

/// Unfolds a padded [1, C, H, W] input into the [C*KH*KW, OH*OW] matrix whose
/// columns are the receptive fields (im2col), so a convolution becomes one
/// matmul. The unfold is a copy over (c, ky, kx, oy, ox) whose input map
/// carries the strides and dilations, so it needs no index arithmetic per
/// element and its inner loop reads a row of the input. 1x1 stride-1
/// convolutions need no copy: the input is the matrix.
Value buildIm2Col(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                  ArrayRef<OpFoldResult> outSize) {
  RankedTensorType type = tensorType(input);
  Type et = type.getElementType();
  int64_t c = type.getDimSize(1), kh = kernel[0], kw = kernel[1];
  auto dim = [](OpFoldResult size) {
    return getConstantIntValue(size).value_or(ShapedType::kDynamic);
  };
  int64_t oh = dim(outSize[0]), ow = dim(outSize[1]);
  int64_t pixels = ShapedType::isDynamic(oh) || ShapedType::isDynamic(ow) ? ShapedType::kDynamic
                                                                          : oh * ow;
  OpFoldResult pixelSize = mulSizes(b, loc, outSize);
  if (kh == 1 && kw == 1 && strides[0] == 1 && strides[1] == 1)
    return reshapeTo(b, loc, input, RankedTensorType::get({c, pixels}, et),
                     {b.getIndexAttr(c), pixelSize});
  MLIRContext *ctx = b.getContext();
  AffineExpr ch, ky, kx, oy, ox;
  bindDims(ctx, ch, ky, kx, oy, ox);
  AffineMap inputMap = AffineMap::get(
      5, 0,
      {getAffineConstantExpr(0, ctx), ch, oy * strides[0] + ky * dilations[0],
       ox * strides[1] + kx * dilations[1]},
      ctx);
  SmallVector<AffineMap> maps = {inputMap, AffineMap::getMultiDimIdentityMap(5, ctx)};
  auto unfoldedType = RankedTensorType::get({c, kh, kw, oh, ow}, et);
  SmallVector<OpFoldResult> unfoldedSizes = {b.getIndexAttr(c), b.getIndexAttr(kh),
                                             b.getIndexAttr(kw), outSize[0], outSize[1]};
  SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
  auto unfold = linalg::GenericOp::create(
      b, loc, unfoldedType, input, emptyTensor(b, loc, unfoldedSizes, et), maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
  return reshapeTo(b, loc, unfold.getResult(0),
                   RankedTensorType::get({c * kh * kw, pixels}, et),
                   {b.getIndexAttr(c * kh * kw), pixelSize});
}

/// One image [1, C, H, W] (padded) convolved as filter [F, C*KH*KW] x
/// im2col [C*KH*KW, OH*OW], accumulating into `init` [1, F, OH, OW] of
/// `sizes`.
static Value convolveAsMatmul(OpBuilder &b, Location loc, ConvOp op, Value image, Value filter,
                              Value init, ArrayRef<OpFoldResult> sizes) {
  auto type = tensorType(init);
  Type et = type.getElementType();
  ArrayRef<int64_t> fs = tensorType(filter).getShape(), out = type.getShape();
  Value col = buildIm2Col(b, loc, image, {fs[2], fs[3]}, op.getStrides(), op.getDilations(),
                          sizes.drop_front(2));
  Value w2d = reshapeTo(b, loc, filter, RankedTensorType::get({fs[0], fs[1] * fs[2] * fs[3]}, et));
  int64_t pixels = ShapedType::isDynamic(out[2]) || ShapedType::isDynamic(out[3])
                       ? ShapedType::kDynamic
                       : out[2] * out[3];
  auto flat = RankedTensorType::get({out[1], pixels}, et);
  SmallVector<OpFoldResult> flatSizes = {b.getIndexAttr(out[1]),
                                         mulSizes(b, loc, sizes.drop_front(2))};
  Value mm = linalg::MatmulOp::create(b, loc, TypeRange{flat}, ValueRange{w2d, col},
                                      reshapeTo(b, loc, init, flat, flatSizes))
                 .getResult(0);
  return reshapeTo(b, loc, mm, type, sizes);
}

/// convolveAsMatmul over each image of a batch of any size.
static Value convolveImages(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                            Value init, ArrayRef<OpFoldResult> sizes) {
  auto inType = tensorType(input), outType = tensorType(init);
  auto imageType = RankedTensorType::get(
      {1, inType.getDimSize(1), inType.getDimSize(2), inType.getDimSize(3)},
      inType.getElementType());
  auto tileType = RankedTensorType::get(
      {1, outType.getDimSize(1), outType.getDimSize(2), outType.getDimSize(3)},
      outType.getElementType());
  return buildTileLoop(
      b, loc, {b.getIndexAttr(0)}, {sizes[0]}, {b.getIndexAttr(1)}, init,
      [&](OpBuilder &nb, Location l, ValueRange ivs, Value out) -> TileResult {
        Value n = ivs[0];
        auto unit = [&](ArrayRef<OpFoldResult> full) {
          SmallVector<OpFoldResult> s(full);
          s[0] = nb.getIndexAttr(1);
          return s;
        };
        SmallVector<OpFoldResult> at(4, nb.getIndexAttr(0)), step(4, nb.getIndexAttr(1));
        at[0] = n;
        SmallVector<OpFoldResult> imageSizes = unit(sizesOf(nb, l, input)),
                                  tileSizes = unit(sizes);
        Value image = tensor::ExtractSliceOp::create(nb, l, imageType, input, at, imageSizes, step);
        Value tile = tensor::ExtractSliceOp::create(nb, l, tileType, out, at, tileSizes, step);
        return {convolveAsMatmul(nb, l, op, image, filter, tile, tileSizes), at, tileSizes};
      });
}

/// Where one output pixel of a window over an NHWC image reads: its image
/// and, per tap, the input row and column.
struct PixelWindow {
  Value image, oy, ox;
  ArrayRef<int64_t> strides, dilations;

  Value inputCoordinate(OpBuilder &b, Location loc, int64_t dim, int64_t tap) const {
    Value out = dim == 0 ? oy : ox;
    Value scaled = arith::MulIOp::create(b, loc, out,
                                         arith::ConstantIndexOp::create(b, loc, strides[dim]));
    return arith::AddIOp::create(b, loc, scaled,
                                 arith::ConstantIndexOp::create(b, loc, tap * dilations[dim]));
  }
};

/// A [N*OH*OW, cols] tensor of `et` built one row per output pixel in an
/// scf.forall: `fillRow(row, window)` returns the pixel's row ([1, cols])
/// written.
static Value buildPixelRows(OpBuilder &b, Location loc, int64_t n, int64_t oh, int64_t ow,
                            int64_t cols, Type et, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations,
                            function_ref<Value(Value, const PixelWindow &)> fillRow) {
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value rows = emptyTensor(b, loc, ArrayRef<int64_t>{n * oh * ow, cols}, et);
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(n * oh * ow)},
                                      ValueRange{rows}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value pixel = forall.getInductionVar(0);
  Value within = arith::RemUIOp::create(b, loc, pixel, index(oh * ow));
  PixelWindow window{arith::DivUIOp::create(b, loc, pixel, index(oh * ow)),
                     arith::DivUIOp::create(b, loc, within, index(ow)),
                     arith::RemUIOp::create(b, loc, within, index(ow)), strides, dilations};
  SmallVector<OpFoldResult> offsets = {pixel, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(cols)};
  SmallVector<OpFoldResult> unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value row = tensor::ExtractSliceOp::create(b, loc, forall.getRegionIterArgs()[0], offsets, sizes,
                                             unit);
  row = fillRow(row, window);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, row, forall.getRegionIterArgs()[0], offsets, sizes,
                                        unit);
  return forall.getResult(0);
}

/// Calls `step(row, c0, width)` over `channels` in vectors of `chunk` (then
/// one of the remainder), threading `row` through. More than two whole
/// chunks are an scf.for: unrolled, bufferization's analysis grows
/// quadratically with the chain of writes.
static Value forEachChannelChunk(OpBuilder &b, Location loc, int64_t channels, int64_t chunk,
                                 Value row, function_ref<Value(OpBuilder &, Value, Value, int64_t)> step) {
  auto index = [&](OpBuilder &ib, int64_t v) { return arith::ConstantIndexOp::create(ib, loc, v); };
  int64_t whole = channels / chunk, rest = channels % chunk;
  if (whole > 2) {
    row = scf::ForOp::create(b, loc, index(b, 0), index(b, whole * chunk), index(b, chunk),
                             ValueRange{row},
                             [&](OpBuilder &cb, Location, Value c0, ValueRange iter) {
                               scf::YieldOp::create(cb, loc, step(cb, iter[0], c0, chunk));
                             })
              .getResult(0);
  } else {
    for (int64_t i = 0; i < whole; ++i)
      row = step(b, row, index(b, i * chunk), chunk);
  }
  if (rest > 0)
    row = step(b, row, index(b, whole * chunk), rest);
  return row;
}

/// Elements of `et` in one 64-byte vector.
static int64_t vectorChunk(Type et) {
  return std::max<int64_t>(1, 64 / (et.getIntOrFloatBitWidth() / 8));
}

/// The receptive fields of the padded NHWC `input` as rows [N*OH*OW,
/// KH*KW*C]: per output pixel, each tap's C channels are one contiguous run
/// in both the input and the row, copied as vectors of at most 64 bytes. (As
/// a linalg.generic, LLVM unrolls the channel loop fully and then cannot
/// vectorize the byte copies, not knowing that input and rows do not
/// overlap.) Without dilation along x, an f32 window row's KW taps are one
/// run of KW*C values (read from the input viewed as [N, H, W*C]): a 1-D
/// convolution over one channel copies its window in vectors, not tap by
/// tap. A 1x1 window of stride 1 needs no copy: the input is the rows.
static Value unfoldChannelsLast(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                                int64_t oh, int64_t ow) {
  RankedTensorType inType = tensorType(input);
  Type et = inType.getElementType();
  int64_t n = inType.getDimSize(0), c = inType.getDimSize(3);
  int64_t cols = kernel[0] * kernel[1] * c;
  if (kernel[0] == 1 && kernel[1] == 1 && strides[0] == 1 && strides[1] == 1)
    return reshapeTo(b, loc, input, RankedTensorType::get({n * oh * ow, cols}, et));
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));
  // One run per tap, or per window row when its taps are contiguous (f32
  // only: LLVM fails to legalize bf16 vectors of some odd run lengths).
  bool rowRuns = dilations[1] == 1 && et.isF32();
  int64_t runLength = rowRuns ? kernel[1] * c : c, runsPerRow = rowRuns ? 1 : kernel[1];
  Value source = input;
  if (rowRuns)
    source = tensor::CollapseShapeOp::create(
        b, loc, input, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  auto fill = [&](Value row, const PixelWindow &window) {
    for (int64_t ky = 0; ky < kernel[0]; ++ky)
      for (int64_t kx = 0; kx < runsPerRow; ++kx) {
        Value iy = window.inputCoordinate(b, loc, 0, ky);
        Value ix = window.inputCoordinate(b, loc, 1, kx);
        Value base = arith::ConstantIndexOp::create(b, loc, (ky * kernel[1] + kx) * c);
        SmallVector<Value> at = {window.image, iy};
        if (rowRuns)
          at.push_back(
              arith::MulIOp::create(b, loc, ix, arith::ConstantIndexOp::create(b, loc, c)));
        else
          at.push_back(ix);
        row = forEachChannelChunk(
            b, loc, runLength, vectorChunk(et), row,
            [&](OpBuilder &nb, Value into, Value c0, int64_t width) -> Value {
              SmallVector<Value> from = at;
              if (rowRuns)
                from.back() = arith::AddIOp::create(nb, loc, from.back(), c0);
              else
                from.push_back(c0);
              Value v = vector::TransferReadOp::create(nb, loc, VectorType::get({width}, et),
                                                       source, from, zero, ArrayRef<bool>{true});
              Value at = arith::AddIOp::create(nb, loc, base, c0);
              return vector::TransferWriteOp::create(
                         nb, loc, v, into,
                         ValueRange{arith::ConstantIndexOp::create(nb, loc, 0), at},
                         ArrayRef<bool>{true})
                  .getResult();
            });
      }
    return row;
  };
  return buildPixelRows(b, loc, n, oh, ow, cols, et, strides, dilations, fill);
}

/// A depthwise convolution of the padded NHWC `input` (f32, one filter per
/// channel) as [N, OH, OW, C]: per output pixel and vector of channels, the
/// bias (or zero) plus an FMA per tap of the input's channels by the
/// filter's, the filter as `taps` [KH*KW, C].
static Value depthwiseChannelsLast(OpBuilder &b, Location loc, Value input, Value taps, Value bias,
                                   RankedTensorType type, ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  Type et = type.getElementType();
  ArrayRef<int64_t> out = type.getShape();
  int64_t c = out[3];
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));
  auto fill = [&](Value row, const PixelWindow &window) {
    return forEachChannelChunk(
        b, loc, c, vectorChunk(et), row,
        [&](OpBuilder &nb, Value into, Value c0, int64_t width) -> Value {
          auto vt = VectorType::get({width}, et);
          auto read = [&](Value from, ValueRange at) -> Value {
            return vector::TransferReadOp::create(nb, loc, vt, from, at, zero,
                                                  ArrayRef<bool>{true});
          };
          Value acc = bias ? read(bias, ValueRange{c0})
                           : (Value)arith::ConstantOp::create(nb, loc, vt, nb.getZeroAttr(vt));
          for (int64_t ky = 0; ky < kernel[0]; ++ky)
            for (int64_t kx = 0; kx < kernel[1]; ++kx) {
              Value iy = window.inputCoordinate(nb, loc, 0, ky);
              Value ix = window.inputCoordinate(nb, loc, 1, kx);
              Value tap = arith::ConstantIndexOp::create(nb, loc, ky * kernel[1] + kx);
              acc = vector::FMAOp::create(nb, loc, read(input, ValueRange{window.image, iy, ix, c0}),
                                          read(taps, ValueRange{tap, c0}), acc);
            }
          return vector::TransferWriteOp::create(
                     nb, loc, acc, into, ValueRange{arith::ConstantIndexOp::create(nb, loc, 0), c0},
                     ArrayRef<bool>{true})
              .getResult();
        });
  };
  Value rows = buildPixelRows(b, loc, out[0], out[1], out[2], c, et, strides, dilations, fill);
  return reshapeTo(b, loc, rows, type);
}

/// A depthwise filter [C, 1, KH, KW] as taps [KH*KW, C]: relaid out at
/// compile time when constant, else transposed.
static Value depthwiseTaps(OpBuilder &b, Location loc, ConvOp op, Value filter) {
  ArrayRef<int64_t> fs = tensorType(filter).getShape();
  Type et = tensorType(filter).getElementType();
  int64_t c = fs[0], taps = fs[2] * fs[3];
  auto type = RankedTensorType::get({taps, c}, et);
  if (auto constant = op.getFilter().getDefiningOp<ConstantOp>())
    if (Value t = relayoutConstant(b, loc, constant.getValue(), type,
                                   [&](int64_t i) { return (i % c) * taps + i / c; }))
      return t;
  Value t = linalg::TransposeOp::create(b, loc, filter,
                                        emptyTensor(b, loc, ArrayRef<int64_t>{fs[2], fs[3], 1, c}, et),
                                        ArrayRef<int64_t>{2, 3, 1, 0})
                .getResult()[0];
  return reshapeTo(b, loc, t, type);
}

/// A convolution of static shape as a matmul with the receptive fields as
/// rows: fields = im2col^T [N*OH*OW, K] and filterT = filter^T [K, F]. A
/// constant filter is relaid out at compile time and is then the matmul's
/// right operand, which the matmul kernels pack at compile time. On NCHW
/// input, K runs over (c, ky, kx); with `channels_last` (NHWC input) over
/// (ky, kx, c), so that each field is a few runs of C contiguous values.
struct FieldsTimesFilter {
  Value fields, filterT;
  int64_t n, oh, ow, f;
};

static FieldsTimesFilter fieldsTimesFilter(OpBuilder &b, Location loc, ConvOp op, Value input,
                                           Value filter, RankedTensorType type) {
  MLIRContext *ctx = b.getContext();
  bool channelsLast = op.getChannelsLast();
  ArrayRef<int64_t> fs = tensorType(filter).getShape(), out = type.getShape();
  Type inType = tensorType(input).getElementType(), filterType = tensorType(filter).getElementType();
  int64_t n = out[0], f = channelsLast ? out[3] : out[1], oh = channelsLast ? out[1] : out[2],
          ow = channelsLast ? out[2] : out[3];
  int64_t c = fs[1], kh = fs[2], kw = fs[3];
  int64_t rows = n * oh * ow, cols = c * kh * kw;
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  Value fields;
  if (channelsLast) {
    fields = unfoldChannelsLast(b, loc, input, {kh, kw}, strides, dilations, oh, ow);
  } else {
    // Unfolded as [N, OH, OW, C, KH, KW].
    AffineExpr in, oy, ox, ch, ky, kx;
    bindDims(ctx, in, oy, ox, ch, ky, kx);
    AffineMap inputMap = AffineMap::get(
        6, 0, {in, ch, oy * strides[0] + ky * dilations[0], ox * strides[1] + kx * dilations[1]},
        ctx);
    SmallVector<int64_t> unfoldedShape = {n, oh, ow, c, kh, kw};
    auto unfold = linalg::GenericOp::create(
        b, loc, RankedTensorType::get(unfoldedShape, inType), input,
        emptyTensor(b, loc, unfoldedShape, inType),
        ArrayRef<AffineMap>{inputMap, AffineMap::getMultiDimIdentityMap(6, ctx)},
        SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
        [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
    fields = reshapeTo(b, loc, unfold.getResult(0), RankedTensorType::get({rows, cols}, inType));
  }
  // filter^T [K, F]: row k of the FCHW filter's column f.
  auto filterIndex = [&](int64_t k) {
    if (!channelsLast)
      return k;
    int64_t ch = k % c, tap = k / c;
    return (ch * kh + tap / kw) * kw + tap % kw;
  };
  auto filterTType = RankedTensorType::get({cols, f}, filterType);
  Value filterT;
  if (auto constant = op.getFilter().getDefiningOp<ConstantOp>())
    filterT = relayoutConstant(b, loc, constant.getValue(), filterTType,
                               [&](int64_t i) { return (i % f) * cols + filterIndex(i / f); });
  if (!filterT) {
    // [F, C, KH, KW] -> [C, KH, KW, F] or [KH, KW, C, F], then [K, F].
    SmallVector<int64_t> perm = channelsLast ? SmallVector<int64_t>{2, 3, 1, 0}
                                             : SmallVector<int64_t>{1, 2, 3, 0};
    SmallVector<int64_t> permuted = {fs[perm[0]], fs[perm[1]], fs[perm[2]], fs[perm[3]]};
    Value t = linalg::TransposeOp::create(b, loc, filter, emptyTensor(b, loc, permuted, filterType),
                                          perm)
                  .getResult()[0];
    filterT = reshapeTo(b, loc, t, filterTType);
  }
  return {fields, filterT, n, oh, ow, f};
}

/// A widening convolution (8-bit input and filter with an i32 result, or
/// bf16 with f32) of static shape as one widening matmul of
/// fieldsTimesFilter; kiln-cpu-vnni-matmul packs the constant filter at compile
/// time. The product is [N, OH, OW, F].
///
/// On NCHW input the product is permuted back to NCHW by a copy that reads
/// it in order and writes each pixel's channels to their planes. That copy
/// stays unfused (`kiln.layout_copy`): fused into its consumer it would read
/// the product with a gather per element, at a stride of F. With
/// `channels_last` the product is the result as it is.
static Value convolveWidening(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                              RankedTensorType type, Extension ext) {
  MLIRContext *ctx = b.getContext();
  FieldsTimesFilter m = fieldsTimesFilter(b, loc, op, input, filter, type);
  Type sumType = type.getElementType();
  Value product =
      wideningMatmul(b, loc, m.fields, m.filterT,
                     zeroFilled(b, loc, ArrayRef<int64_t>{m.n * m.oh * m.ow, m.f}, sumType), ext);
  Value nhwf = reshapeTo(b, loc, product, RankedTensorType::get({m.n, m.oh, m.ow, m.f}, sumType));
  if (op.getChannelsLast())
    return nhwf;
  AffineExpr e0, e1, e2, e3;
  bindDims(ctx, e0, e1, e2, e3);
  auto toNchw = linalg::GenericOp::create(
      b, loc, type, nhwf, emptyTensor(b, loc, type.getShape(), sumType),
      ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(4, ctx),
                          AffineMap::get(4, 0, {e0, e3, e1, e2}, ctx)},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
  toNchw->setAttr("kiln.layout_copy", b.getUnitAttr());
  return toNchw.getResult(0);
}

/// A channels-last convolution of static shape (f32, no group) as the
/// matmul of fieldsTimesFilter, accumulating into the bias broadcast over
/// the pixels (or zeros): [N*OH*OW, F], which is the NHWC result.
static Value convolveChannelsLast(OpBuilder &b, Location loc, ConvOp op, Value input,
                                  Value filter, Value bias, RankedTensorType type) {
  FieldsTimesFilter m = fieldsTimesFilter(b, loc, op, input, filter, type);
  Type et = type.getElementType();
  SmallVector<int64_t> flat = {m.n * m.oh * m.ow, m.f};
  Value init = bias ? broadcastTo(b, loc, reshapeTo(b, loc, bias, RankedTensorType::get({1, m.f}, et)),
                                  flat)
                    : zeroFilled(b, loc, flat, et);
  Value product = linalg::MatmulOp::create(b, loc, TypeRange{init.getType()},
                                           ValueRange{m.fields, m.filterT}, init)
                      .getResult(0);
  return reshapeTo(b, loc, product, type);
}

/// [N, channels, OH, OW] of a window of `kernel` sliding over the spatial
/// dimensions of the padded NCHW `input`; a dynamic input must be at least
/// as large as the window (checked at run time).
static SmallVector<OpFoldResult> windowOutputSizes(OpBuilder &b, Location loc, Value input,
                                                   int64_t channels, ArrayRef<int64_t> kernel,
                                                   ArrayRef<int64_t> strides,
                                                   ArrayRef<int64_t> dilations) {
  SmallVector<OpFoldResult> sizes = {dimOf(b, loc, input, 0), b.getIndexAttr(channels)};
  for (int64_t i = 0; i < 2; ++i) {
    int64_t span = dilations[i] * (kernel[i] - 1) + 1;
    OpFoldResult in = dimOf(b, loc, input, i + 2);
    if (auto c = getConstantIntValue(in)) {
      sizes.push_back(b.getIndexAttr((*c - span) / strides[i] + 1));
      continue;
    }
    Value inValue = indexValue(b, loc, in);
    Value spanValue = arith::ConstantIndexOp::create(b, loc, span);
    checkAtRunTime(b, loc,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, inValue, spanValue),
                   "spatial dimension " + Twine(i) + " (padded) is smaller than the window (" +
                       Twine(span) + ")");
    Value out = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, inValue, spanValue),
                                       arith::ConstantIndexOp::create(b, loc, strides[i]));
    sizes.push_back(
        arith::AddIOp::create(b, loc, out, arith::ConstantIndexOp::create(b, loc, 1)).getResult());
  }
  return sizes;
}

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessType(op.getType());
    Type et = type.getElementType();
    ArrayRef<int64_t> out = type.getShape();
    Value input =
        padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), 0.0, op.getChannelsLast());
    Value filter = adaptor.getFilter();
    ArrayRef<int64_t> fs = tensorType(filter).getShape();
    if (tensorType(input).getElementType() != et) {
      if (!type.hasStaticShape() || !tensorType(input).hasStaticShape())
        return rewriter.notifyMatchFailure(op, "widening convolutions need static shapes");
      Extension ext{isUnsigned(op.getInput()), isUnsigned(op.getFilter())};
      rewriter.replaceOp(op, convolveWidening(rewriter, loc, op, input, filter, type, ext));
      return success();
    }
    if (op.getChannelsLast()) {
      if (!type.hasStaticShape() || !tensorType(input).hasStaticShape())
        return rewriter.notifyMatchFailure(op, "channels-last convolutions need static shapes");
      if (op.getGroup() == 1)
        rewriter.replaceOp(op, convolveChannelsLast(rewriter, loc, op, input, filter,
                                                    adaptor.getBias(), type));
      else
        rewriter.replaceOp(op, depthwiseChannelsLast(rewriter, loc, input,
                                                     depthwiseTaps(rewriter, loc, op, filter),
                                                     adaptor.getBias(), type, {fs[2], fs[3]},
                                                     op.getStrides(), op.getDilations()));
      return success();
    }
    int64_t group = op.getGroup(), channels = tensorType(input).getDimSize(1);
    SmallVector<OpFoldResult> outSizes =
        windowOutputSizes(rewriter, loc, input, fs[0], {fs[2], fs[3]}, op.getStrides(),
                          op.getDilations());
    // The bias initializes the accumulator, so it costs no extra pass.
    Value init;
    if (Value bias = adaptor.getBias()) {
      Value b4 = reshapeTo(rewriter, loc, bias, RankedTensorType::get({out[1], 1, 1}, et));
      init = broadcastTo(rewriter, loc, b4, out, outSizes);
    } else {
      init = zeroFilled(rewriter, loc, outSizes, et);
    }
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    Value result;
    if (group == 1 && out[0] == 1 && type.hasStaticShape()) {
      // Batch 1: filter [F, C*KH*KW] x im2col [C*KH*KW, OH*OW] on the matmul path.
      result = convolveAsMatmul(rewriter, loc, op, input, filter, init, outSizes);
    } else if (group == 1 && !type.hasStaticShape()) {
      // Sizes known at run time: the same per image, in a loop over the
      // batch; kiln-cpu-peel-dynamic-matmul gives the matmuls static tiles.
      result = convolveImages(rewriter, loc, op, input, filter, init, outSizes);
    } else if (group == 1) {
      result = linalg::Conv2DNchwFchwOp::create(rewriter, loc, TypeRange{type},
                                                ValueRange{input, filter}, init, strides,
                                                dilations)
                   .getResult(0);
    } else if (group == channels && fs[0] == channels) {
      Value dw = reshapeTo(rewriter, loc, filter,
                           RankedTensorType::get({fs[0], fs[2], fs[3]}, et));
      result = linalg::DepthwiseConv2DNchwChwOp::create(rewriter, loc, TypeRange{type},
                                                        ValueRange{input, dw}, init,
                                                        strides, dilations)
                   .getResult(0);
    } else {
      ArrayRef<int64_t> is = tensorType(input).getShape();
      SmallVector<OpFoldResult> isz = sizesOf(rewriter, loc, input);
      auto index = [&](int64_t v) -> OpFoldResult { return rewriter.getIndexAttr(v); };
      auto inG = RankedTensorType::get({is[0], group, is[1] / group, is[2], is[3]}, et);
      auto fG = RankedTensorType::get({group, fs[0] / group, fs[1], fs[2], fs[3]}, et);
      auto outG = RankedTensorType::get({out[0], group, out[1] / group, out[2], out[3]}, et);
      Value r = linalg::Conv2DNgchwGfchwOp::create(
                    rewriter, loc, TypeRange{outG},
                    ValueRange{reshapeTo(rewriter, loc, input, inG,
                                         {isz[0], index(group), index(is[1] / group), isz[2],
                                          isz[3]}),
                               reshapeTo(rewriter, loc, filter, fG)},
                    reshapeTo(rewriter, loc, init, outG,
                              {outSizes[0], index(group), index(out[1] / group), outSizes[2],
                               outSizes[3]}),
                    strides, dilations)
                    .getResult(0);
      result = reshapeTo(rewriter, loc, r, type, outSizes);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

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
                 ConcatLowering, MatMulLowering, GemmLowering, ConvLowering, BatchNormLowering,
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
    populateAttentionLowering(patterns);
    populateDataDependentLowerings(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
