//===- KilnToLinalg.cpp - kiln ops to linalg/tensor/arith/math ------------===//
//
// Elementwise ops and reductions become linalg.generic with broadcasting
// indexing maps; matmul, conv and pooling become linalg named ops so that the
// CPU schedule can match and tile them.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value floatConst(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType,
                   double value) {
  Value init = emptyTensor(b, loc, shape, elementType);
  Value scalar = floatConst(b, loc, elementType, value);
  return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
}

/// The map from an iteration space of `resultShape` to an operand of
/// `operandShape` under numpy broadcasting (operand aligned to the right,
/// size-1 dimensions pinned to index 0).
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape) {
  size_t offset = resultShape.size() - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(operandShape)) {
    bool broadcast = dim == 1 && resultShape[i + offset] != 1;
    exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

/// linalg.generic over `resultType` whose scalar body is `body(operands...)`;
/// operands broadcast to the result shape.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx, tensorType(v).getShape(), shape));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<utils::IteratorType> iterators(shape.size(), utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, shape, resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

/// Reduces `input` over `axes` with `combine`, starting from `identity`.
/// The result keeps reduced dimensions as size 1.
Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                     double identity, BodyFn combine) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType inType = tensorType(input);
  SmallVector<int64_t> outShape(inType.getShape());
  SmallVector<utils::IteratorType> iterators(outShape.size(), utils::IteratorType::parallel);
  SmallVector<AffineExpr> outExprs;
  for (size_t i = 0; i < outShape.size(); ++i)
    outExprs.push_back(getAffineDimExpr(i, ctx));
  for (int64_t a : axes) {
    outShape[a] = 1;
    iterators[a] = utils::IteratorType::reduction;
    outExprs[a] = getAffineConstantExpr(0, ctx);
  }
  Type elementType = inType.getElementType();
  Value init = filledTensor(b, loc, outShape, elementType, identity);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(outShape.size(), ctx),
                                 AffineMap::get(outShape.size(), 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), input, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args));
      });
  return generic.getResult(0);
}

Value buildMean(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes) {
  Value sum = buildReduction(b, loc, input, axes, 0.0,
                             [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                               return arith::AddFOp::create(nb, l, a[0], a[1]);
                             });
  int64_t count = 1;
  for (int64_t a : axes)
    count *= tensorType(input).getDimSize(a);
  double inv = 1.0 / static_cast<double>(count);
  return buildElementwise(b, loc, tensorType(sum), sum,
                          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            Value c = floatConst(nb, l, a[0].getType(), inv);
                            return arith::MulFOp::create(nb, l, a[0], c);
                          });
}

/// Reinterprets a static tensor with a new shape (row-major), via
/// collapse_shape/expand_shape so that bufferization makes it a view.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target) {
  RankedTensorType source = tensorType(input);
  if (source == target)
    return input;
  auto allDims = [](int64_t rank) {
    ReassociationIndices all;
    for (int64_t i = 0; i < rank; ++i)
      all.push_back(i);
    return SmallVector<ReassociationIndices>{all};
  };
  if (source.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, input,
                                         SmallVector<ReassociationIndices>{});
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, input,
                                           SmallVector<ReassociationIndices>{});
  Value flat = input;
  if (source.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, input, allDims(source.getRank()));
  if (target.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, target, flat, allDims(target.getRank()));
}

Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> pads,
                 double value) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return input;
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> low = {0, 0, pads[0], pads[1]}, high = {0, 0, pads[2], pads[3]};
  SmallVector<int64_t> shape(type.getShape());
  for (int i = 2; i < 4; ++i)
    shape[i] += low[i] + high[i];
  auto padded = RankedTensorType::get(shape, type.getElementType());
  Value padValue = floatConst(b, loc, type.getElementType(), value);
  return tensor::PadOp::create(b, loc, padded, input, getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high), padValue);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename KilnOp>
struct ElementwiseLowering : OpConversionPattern<KilnOp> {
  using OpConversionPattern<KilnOp>::OpConversionPattern;
  using Adaptor = typename KilnOp::Adaptor;

  virtual Value scalar(OpBuilder &b, Location loc, KilnOp op, ValueRange args) const = 0;

  LogicalResult matchAndRewrite(KilnOp op, Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!isa<FloatType>(type.getElementType()))
      return rewriter.notifyMatchFailure(op, "only floating-point element types");
    Value r = buildElementwise(rewriter, op.getLoc(), type, adaptor.getOperands(),
                               [&](OpBuilder &b, Location l, ValueRange args) {
                                 return scalar(b, l, op, args);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// An elementwise op whose scalar body is a single op of `ScalarOp`.
template <typename KilnOp, typename ScalarOp>
struct SimpleElementwise : ElementwiseLowering<KilnOp> {
  using ElementwiseLowering<KilnOp>::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, KilnOp, ValueRange args) const override {
    return ScalarOp::create(b, loc, args);
  }
};

struct ReluLowering : ElementwiseLowering<ReluOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, ReluOp, ValueRange args) const override {
    return arith::MaximumFOp::create(b, loc, args[0], floatConst(b, loc, args[0].getType(), 0));
  }
};

struct SigmoidLowering : ElementwiseLowering<SigmoidOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, SigmoidOp, ValueRange args) const override {
    Type t = args[0].getType();
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, args[0]));
    Value one = floatConst(b, loc, t, 1.0);
    return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
  }
};

struct ClipLowering : ElementwiseLowering<ClipOp> {
  using ElementwiseLowering::ElementwiseLowering;
  Value scalar(OpBuilder &b, Location loc, ClipOp op, ValueRange args) const override {
    Type t = args[0].getType();
    Value lo = floatConst(b, loc, t, op.getMin().convertToDouble());
    Value hi = floatConst(b, loc, t, op.getMax().convertToDouble());
    return arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, args[0], lo), hi);
  }
};

//===----------------------------------------------------------------------===//
// Constants and shape manipulation
//===----------------------------------------------------------------------===//

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConstantOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getInput(),
                                     cast<RankedTensorType>(op.getType())));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(), type.getElementType());
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
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    Value result = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    int64_t axis = op.getAxis(), offset = 0;
    for (Value in : adaptor.getInputs()) {
      ArrayRef<int64_t> shape = tensorType(in).getShape();
      SmallVector<int64_t> offsets(shape.size(), 0), strides(shape.size(), 1);
      offsets[axis] = offset;
      MLIRContext *ctx = rewriter.getContext();
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result,
                                             getAsIndexOpFoldResult(ctx, offsets),
                                             getAsIndexOpFoldResult(ctx, shape),
                                             getAsIndexOpFoldResult(ctx, strides));
      offset += shape[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// MatMul and Gemm
//===----------------------------------------------------------------------===//

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return filledTensor(b, loc, shape, elementType, 0.0);
}

/// [.., M, K] x [.., K, N] with identical batch dims (already broadcast).
Value batchedMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    RankedTensorType resultType) {
  Type et = resultType.getElementType();
  int64_t rank = resultType.getRank();
  if (rank == 2)
    return linalg::MatmulOp::create(b, loc, TypeRange{resultType}, ValueRange{lhs, rhs},
                                    zeroFilled(b, loc, resultType.getShape(), et))
        .getResult(0);
  // Collapse all batch dimensions into one and use linalg.batch_matmul.
  int64_t batch = 1;
  for (int64_t d : resultType.getShape().drop_back(2))
    batch *= d;
  auto to3d = [&](Value v) {
    ArrayRef<int64_t> s = tensorType(v).getShape();
    return reshapeTo(b, loc, v,
                     RankedTensorType::get({batch, s[rank - 2], s[rank - 1]}, et));
  };
  ArrayRef<int64_t> rs = resultType.getShape();
  auto out3d = RankedTensorType::get({batch, rs[rank - 2], rs[rank - 1]}, et);
  Value mm = linalg::BatchMatmulOp::create(b, loc, TypeRange{out3d},
                                           ValueRange{to3d(lhs), to3d(rhs)},
                                           zeroFilled(b, loc, out3d.getShape(), et))
                 .getResult(0);
  return reshapeTo(b, loc, mm, resultType);
}

/// Materializes `v` broadcast to `shape` (numpy rules); no-op if equal.
Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  auto target = RankedTensorType::get(shape, type.getElementType());
  return buildElementwise(b, loc, target, v,
                          [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type et = resultType.getElementType();
    // Promote 1-D operands to matrices, as numpy does.
    SmallVector<int64_t> ls(tensorType(lhs).getShape()), rs(tensorType(rhs).getShape());
    if (ls.size() == 1) {
      ls.insert(ls.begin(), 1);
      lhs = reshapeTo(rewriter, loc, lhs, RankedTensorType::get(ls, et));
    }
    if (rs.size() == 1) {
      rs.push_back(1);
      rhs = reshapeTo(rewriter, loc, rhs, RankedTensorType::get(rs, et));
    }
    int64_t m = ls[ls.size() - 2], k = ls.back(), n = rs.back();
    SmallVector<int64_t> batch(*broadcastShapes(ArrayRef(ls).drop_back(2),
                                                ArrayRef(rs).drop_back(2)));
    Value result;
    if (rs.size() == 2) {
      // [.., M, K] x [K, N]: fold the lhs batch into the rows of one matmul.
      int64_t rows = m;
      for (int64_t d : batch)
        rows *= d;
      Value lhs2d = reshapeTo(rewriter, loc, broadcastTo(rewriter, loc, lhs, [&] {
                                SmallVector<int64_t> s(batch);
                                s.append({m, k});
                                return s;
                              }()),
                              RankedTensorType::get({rows, k}, et));
      result = batchedMatmul(rewriter, loc, lhs2d, rhs, RankedTensorType::get({rows, n}, et));
    } else {
      SmallVector<int64_t> lshape(batch), rshape(batch), oshape(batch);
      lshape.append({m, k});
      rshape.append({k, n});
      oshape.append({m, n});
      result = batchedMatmul(rewriter, loc, broadcastTo(rewriter, loc, lhs, lshape),
                             broadcastTo(rewriter, loc, rhs, rshape),
                             RankedTensorType::get(oshape, et));
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, resultType));
    return success();
  }
};

struct GemmLowering : OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type et = type.getElementType();
    // Transposed operands are materialized so that every matmul reaches the
    // CPU schedule in the canonical [M,K]x[K,N] form.
    auto transposed = [&](Value v, bool t) -> Value {
      if (!t)
        return v;
      ArrayRef<int64_t> s = tensorType(v).getShape();
      Value init = emptyTensor(rewriter, loc, {s[1], s[0]}, et);
      return linalg::TransposeOp::create(rewriter, loc, v, init, ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    };
    Value init = zeroFilled(rewriter, loc, type.getShape(), et);
    Value result =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{type},
                                 ValueRange{transposed(adaptor.getA(), op.getTransA()),
                                            transposed(adaptor.getB(), op.getTransB())},
                                 init)
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
                                  v = arith::MulFOp::create(b, l, v, floatConst(b, l, et, alpha));
                                if (a.size() < 2)
                                  return v;
                                Value c = a[1];
                                if (beta != 1.0)
                                  c = arith::MulFOp::create(b, l, c, floatConst(b, l, et, beta));
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
/// matmul. 1x1 stride-1 convolutions need no copy: the input is the matrix.
Value buildIm2Col(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                  ArrayRef<int64_t> outSize) {
  RankedTensorType type = tensorType(input);
  Type et = type.getElementType();
  int64_t c = type.getDimSize(1), kh = kernel[0], kw = kernel[1];
  int64_t pixels = outSize[0] * outSize[1];
  if (kh == 1 && kw == 1 && strides[0] == 1 && strides[1] == 1)
    return reshapeTo(b, loc, input, RankedTensorType::get({c, pixels}, et));
  auto colType = RankedTensorType::get({c * kh * kw, pixels}, et);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(2, ctx)};
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, colType.getShape(), et);
  auto generic = linalg::GenericOp::create(
      b, loc, colType, ValueRange{}, init, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange) {
        auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
        Value row = linalg::IndexOp::create(nb, l, 0), col = linalg::IndexOp::create(nb, l, 1);
        Value window = idx(kh * kw);
        Value channel = arith::DivUIOp::create(nb, l, row, window);
        Value offset = arith::RemUIOp::create(nb, l, row, window);
        Value ky = arith::DivUIOp::create(nb, l, offset, idx(kw));
        Value kx = arith::RemUIOp::create(nb, l, offset, idx(kw));
        Value oy = arith::DivUIOp::create(nb, l, col, idx(outSize[1]));
        Value ox = arith::RemUIOp::create(nb, l, col, idx(outSize[1]));
        auto coord = [&](Value o, Value k, int64_t stride, int64_t dilation) -> Value {
          Value a = arith::MulIOp::create(nb, l, o, idx(stride));
          Value d = arith::MulIOp::create(nb, l, k, idx(dilation));
          return arith::AddIOp::create(nb, l, a, d);
        };
        Value y = coord(oy, ky, strides[0], dilations[0]);
        Value x = coord(ox, kx, strides[1], dilations[1]);
        Value v = tensor::ExtractOp::create(nb, l, input, ValueRange{idx(0), channel, y, x});
        linalg::YieldOp::create(nb, l, v);
      });
  return generic.getResult(0);
}

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type et = type.getElementType();
    ArrayRef<int64_t> out = type.getShape();
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), 0.0);
    Value filter = adaptor.getFilter();
    ArrayRef<int64_t> fs = tensorType(filter).getShape();
    int64_t group = op.getGroup(), channels = tensorType(input).getDimSize(1);
    // The bias initializes the accumulator, so it costs no extra pass.
    Value init;
    if (Value bias = adaptor.getBias()) {
      Value b4 = reshapeTo(rewriter, loc, bias, RankedTensorType::get({out[1], 1, 1}, et));
      init = broadcastTo(rewriter, loc, b4, out);
    } else {
      init = zeroFilled(rewriter, loc, out, et);
    }
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    Value result;
    if (group == 1 && out[0] == 1) {
      // Batch 1: filter [F, C*KH*KW] x im2col [C*KH*KW, OH*OW] on the matmul path.
      Value col = buildIm2Col(rewriter, loc, input, {fs[2], fs[3]}, op.getStrides(),
                              op.getDilations(), {out[2], out[3]});
      Value w2d = reshapeTo(rewriter, loc, filter,
                            RankedTensorType::get({fs[0], fs[1] * fs[2] * fs[3]}, et));
      auto flat = RankedTensorType::get({out[1], out[2] * out[3]}, et);
      Value mm = linalg::MatmulOp::create(rewriter, loc, TypeRange{flat}, ValueRange{w2d, col},
                                          reshapeTo(rewriter, loc, init, flat))
                     .getResult(0);
      result = reshapeTo(rewriter, loc, mm, type);
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
      auto inG = RankedTensorType::get({is[0], group, is[1] / group, is[2], is[3]}, et);
      auto fG = RankedTensorType::get({group, fs[0] / group, fs[1], fs[2], fs[3]}, et);
      auto outG = RankedTensorType::get({out[0], group, out[1] / group, out[2], out[3]}, et);
      Value r = linalg::Conv2DNgchwGfchwOp::create(
                    rewriter, loc, TypeRange{outG},
                    ValueRange{reshapeTo(rewriter, loc, input, inG),
                               reshapeTo(rewriter, loc, filter, fG)},
                    reshapeTo(rewriter, loc, init, outG), strides, dilations)
                    .getResult(0);
      result = reshapeTo(rewriter, loc, r, type);
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
    auto type = cast<RankedTensorType>(op.getType());
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
          Value var = arith::AddFOp::create(b, l, a[4], floatConst(b, l, et, eps));
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
  auto type = cast<RankedTensorType>(op.getType());
  Type et = type.getElementType();
  Value padded = padSpatial(rewriter, loc, input, op.getPads(), padValue);
  Value window = emptyTensor(rewriter, loc, op.getKernel(), et);
  Value init = filledTensor(rewriter, loc, type.getShape(), et, padValue);
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
    rewriter.replaceOp(op, buildPool<MaxPoolOp, linalg::PoolingNchwMaxOp>(
                               rewriter, op, adaptor.getInput(), op.getDilations(), lowest));
    return success();
  }
};

/// Number of non-padding input elements under each output window position
/// along one spatial axis.
SmallVector<int64_t> windowCounts(int64_t in, int64_t padBefore, int64_t kernel,
                                  int64_t stride, int64_t outSize) {
  SmallVector<int64_t> counts;
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t start = o * stride - padBefore;
    int64_t lo = std::max<int64_t>(start, 0), hi = std::min(start + kernel, in);
    counts.push_back(std::max<int64_t>(hi - lo, 0));
  }
  return counts;
}

struct AveragePoolLowering : OpConversionPattern<AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AveragePoolOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type et = type.getElementType();
    Value sum = buildPool<AveragePoolOp, linalg::PoolingNchwSumOp>(
        rewriter, op, adaptor.getInput(), {1, 1}, 0.0);
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(), p = op.getPads();
    ArrayRef<int64_t> in = tensorType(adaptor.getInput()).getShape();
    int64_t oh = type.getDimSize(2), ow = type.getDimSize(3);
    // Divisors per output position: the full window if padding counts,
    // otherwise only the elements inside the input (a compile-time table).
    SmallVector<int64_t> rows(oh, k[0]), cols(ow, k[1]);
    if (!op.getCountIncludePad()) {
      rows = windowCounts(in[2], p[0], k[0], s[0], oh);
      cols = windowCounts(in[3], p[1], k[1], s[1], ow);
    }
    SmallVector<float> inverse;
    for (int64_t r : rows)
      for (int64_t c : cols)
        inverse.push_back(r * c ? 1.0f / float(r * c) : 0.0f);
    auto tableType = RankedTensorType::get({oh, ow}, rewriter.getF32Type());
    Value table = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(tableType, ArrayRef<float>(inverse)));
    Value r = buildElementwise(rewriter, loc, type, {sum, table},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::MulFOp::create(b, l, a[0], a[1]);
                               });
    (void)et;
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

struct ReduceMeanLowering : OpConversionPattern<ReduceMeanOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReduceMeanOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Value mean = buildMean(rewriter, op.getLoc(), adaptor.getInput(), op.getAxes());
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), mean,
                                     cast<RankedTensorType>(op.getType())));
    return success();
  }
};

struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis();
    Value max = buildReduction(rewriter, loc, x, axis, -std::numeric_limits<double>::infinity(),
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::MaximumFOp::create(b, l, a[0], a[1]);
                               });
    Value e = buildElementwise(rewriter, loc, type, {x, max},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return math::ExpOp::create(
                                     b, l, arith::SubFOp::create(b, l, a[0], a[1]));
                               });
    Value sum = buildReduction(rewriter, loc, e, axis, 0.0,
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::AddFOp::create(b, l, a[0], a[1]);
                               });
    Value r = buildElementwise(rewriter, loc, type, {e, sum},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return arith::DivFOp::create(b, l, a[0], a[1]);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
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
              b, l, arith::AddFOp::create(b, l, a[1], floatConst(b, l, et, eps)));
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
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<KilnDialect>();

    RewritePatternSet patterns(ctx);
    patterns.add<ConstantLowering, ReshapeLowering, TransposeLowering, ConcatLowering,
                 MatMulLowering, GemmLowering, ConvLowering, BatchNormLowering,
                 MaxPoolLowering, AveragePoolLowering, GlobalAveragePoolLowering,
                 ReduceMeanLowering, SoftmaxLowering, LayerNormLowering, ReluLowering,
                 SigmoidLowering, ClipLowering, SimpleElementwise<AddOp, arith::AddFOp>,
                 SimpleElementwise<SubOp, arith::SubFOp>,
                 SimpleElementwise<MulOp, arith::MulFOp>,
                 SimpleElementwise<DivOp, arith::DivFOp>,
                 SimpleElementwise<PowOp, math::PowFOp>,
                 SimpleElementwise<TanhOp, math::TanhOp>,
                 SimpleElementwise<ExpOp, math::ExpOp>,
                 SimpleElementwise<ErfOp, math::ErfOp>,
                 SimpleElementwise<SqrtOp, math::SqrtOp>,
                 SimpleElementwise<NegOp, arith::NegFOp>>(ctx);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
