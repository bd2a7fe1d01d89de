//===- ConvAsMatmul.cpp - the GPU's convolutions as matmuls ---------------===//
//
// A convolution tiled like any other op gives each thread one output and
// reads its receptive field and the filter from global memory, with no
// reuse between the threads. As a matmul of its filter and its receptive
// fields, both go through the matmul's register tiles and shared memory
// (kiln-gpu-private-accumulators, kiln-gpu-promote-operands). The fields
// are an im2col copy that is never written out: kiln-gpu-compute-on-read
// has the matmul's kernel compute each element from the input where it
// reads it (an implicit GEMM).
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUCONVASMATMUL
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// An NCHW convolution of one group: linalg.conv_2d_nchw_fchw, or a
/// linalg.generic of the same loops and maps (a widening convolution: bf16
/// operands summed in f32, kiln-to-linalg's convolveWidening).
struct Conv {
  mutable linalg::LinalgOp op; // (its accessors are not const)
  SmallVector<int64_t, 2> strides, dilations;

  // Read when needed: rewriting a convolution replaces the values the next
  // one reads.
  Value input() const { return op.getDpsInputs()[0]; }
  Value filter() const { return op.getDpsInputs()[1]; }
  Value init() const { return op.getDpsInits()[0]; }
};

/// The coefficient of dimension `dim` in `expr`, a sum of dimensions times
/// constants.
int64_t coefficient(AffineExpr expr, unsigned dim, unsigned dims) {
  MLIRContext *ctx = expr.getContext();
  SmallVector<AffineExpr> values(dims, getAffineConstantExpr(0, ctx));
  values[dim] = getAffineConstantExpr(1, ctx);
  auto value = dyn_cast<AffineConstantExpr>(
      simplifyAffineExpr(expr.replaceDims(values), dims, 0));
  return value ? value.getValue() : 0;
}

/// `op` as a convolution: the named op, or a generic over (n, f, oy, ox,
/// c, ky, kx) with maps (n, c, oy * s + ky * d, ox * s + kx * d),
/// (f, c, ky, kx), (n, f, oy, ox).
std::optional<Conv> asConv(linalg::LinalgOp op) {
  if (auto named = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation()))
    return Conv{op, SmallVector<int64_t, 2>(named.getStrides().getValues<int64_t>()),
                SmallVector<int64_t, 2>(named.getDilations().getValues<int64_t>())};
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumLoops() != 7 || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 3 ||
      !linalg::isaConvolutionOpInterface(generic))
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineExpr n, f, oy, ox, c, ky, kx;
  bindDims(ctx, n, f, oy, ox, c, ky, kx);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  AffineMap in = maps[0];
  if (in.getNumResults() != 4)
    return std::nullopt;
  Conv conv{op,
            {coefficient(in.getResult(2), 2, 7), coefficient(in.getResult(3), 3, 7)},
            {coefficient(in.getResult(2), 5, 7), coefficient(in.getResult(3), 6, 7)}};
  auto map = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(7, 0, exprs, ctx); };
  SmallVector<AffineMap> expected = {
      map({n, c, oy * conv.strides[0] + ky * conv.dilations[0],
           ox * conv.strides[1] + kx * conv.dilations[1]}),
      map({f, c, ky, kx}), map({n, f, oy, ox})};
  if (maps != expected)
    return std::nullopt;
  return conv;
}

/// Whether `conv` should be a matmul: static shapes and more than one
/// input channel or tap per output (a filter of one scale per channel pair
/// has no fields for a matmul to reuse).
bool isWorthAMatmul(const Conv &conv) {
  auto input = cast<ShapedType>(conv.input().getType());
  auto filter = cast<ShapedType>(conv.filter().getType());
  auto output = cast<ShapedType>(conv.init().getType());
  return conv.op.hasPureTensorSemantics() && input.hasStaticShape() &&
         filter.hasStaticShape() && output.hasStaticShape() &&
         filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3) > 1;
}

/// The receptive fields of `conv`'s input as [N, C, KH, KW, OH, OW]: a copy
/// whose input map carries the strides and dilations, computed where the
/// matmul reads it (kComputedOnRead).
Value buildFields(OpBuilder &b, const Conv &conv) {
  Location loc = conv.op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value input = conv.input();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filter = cast<ShapedType>(conv.filter().getType());
  auto output = cast<ShapedType>(conv.init().getType());
  auto fieldsType = RankedTensorType::get(
      {output.getDimSize(0), filter.getDimSize(1), filter.getDimSize(2), filter.getDimSize(3),
       output.getDimSize(2), output.getDimSize(3)},
      inputType.getElementType());
  AffineExpr n, c, kh, kw, oh, ow;
  bindDims(ctx, n, c, kh, kw, oh, ow);
  AffineMap read = AffineMap::get(6, 0,
                                  {n, c, oh * conv.strides[0] + kh * conv.dilations[0],
                                   ow * conv.strides[1] + kw * conv.dilations[1]},
                                  ctx);
  // Two convolutions' fields may share this tensor.empty after CSE;
  // kiln-gpu-unshare-empty-tensors gives each its own buffer again.
  Value buffer = tensor::EmptyOp::create(b, loc, fieldsType.getShape(),
                                         fieldsType.getElementType());
  auto copy = linalg::GenericOp::create(
      b, loc, fieldsType, input, buffer, {read, AffineMap::getMultiDimIdentityMap(6, ctx)},
      SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
      [](OpBuilder &nested, Location l, ValueRange args) {
        linalg::YieldOp::create(nested, l, args[0]);
      });
  copy->setAttr(kiln::kComputedOnRead, b.getUnitAttr());
  return copy.getResult(0);
}

/// Whether `conv` reads each pixel of `input` once, at its own output
/// pixel: a 1x1 filter, stride 1, the output as large as the input (no
/// padding).
bool isPointwise(const Conv &conv) {
  auto filter = cast<ShapedType>(conv.filter().getType());
  auto inputType = cast<ShapedType>(conv.input().getType());
  auto output = cast<ShapedType>(conv.init().getType());
  return filter.getDimSize(2) == 1 && filter.getDimSize(3) == 1 &&
         llvm::all_of(conv.strides, [](int64_t s) { return s == 1; }) &&
         inputType.getShape().drop_front(2) == output.getShape().drop_front(2);
}

/// `conv` into `flatInit` [N, F, OH*OW] as the contraction of its filter
/// [F, C*KH*KW] with its fields [N, C*KH*KW, OH*OW], its body the
/// convolution's (the same operands in the same order: field, filter,
/// accumulator).
Value convolveAsMatmul(RewriterBase &rewriter, const Conv &conv, Value flatInit) {
  Location loc = conv.op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto flatType = cast<ShapedType>(flatInit.getType());
  // A pointwise convolution's fields are its input: [N, C, H*W], no copy.
  Value fields =
      isPointwise(conv)
          ? tensor::CollapseShapeOp::create(rewriter, loc, conv.input(),
                                            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}})
          : tensor::CollapseShapeOp::create(rewriter, loc, buildFields(rewriter, conv),
                                            ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
  Value filter = tensor::CollapseShapeOp::create(rewriter, loc, conv.filter(),
                                                 ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
  AffineExpr n, f, p, k;
  bindDims(ctx, n, f, p, k);
  auto maps = {AffineMap::get(4, 0, {n, k, p}, ctx), AffineMap::get(4, 0, {f, k}, ctx),
               AffineMap::get(4, 0, {n, f, p}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto matmul = linalg::GenericOp::create(rewriter, loc, flatType, {fields, filter}, flatInit,
                                          maps, iterators);
  rewriter.cloneRegionBefore(conv.op->getRegion(0), matmul.getRegion(), matmul.getRegion().end());
  return matmul.getResult(0);
}

/// `init` (a convolution's [N, F, OH, OW]) collapsed to [N, F, OH*OW]. A
/// bias broadcast into a tensor.empty (a linalg.generic of parallel loops
/// whose inputs do not read OH or OW) is rebuilt on the collapsed shape
/// instead: the matmul's init is then that op itself, which
/// kiln-gpu-distribute fuses into the matmul's tiles (each thread starts
/// its sums from the bias), not a kernel of its own.
Value collapsedInit(RewriterBase &rewriter, Value init) {
  Location loc = init.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<ReassociationIndices> pixels{{0}, {1}, {2, 3}};
  auto type = cast<RankedTensorType>(init.getType());
  auto collapsedType = RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1), type.getDimSize(2) * type.getDimSize(3)},
      type.getElementType());
  auto broadcast = init.getDefiningOp<linalg::GenericOp>();
  auto readsPixels = [](AffineMap map) {
    return llvm::any_of(map.getResults(), [](AffineExpr e) {
      return e.isFunctionOfDim(2) || e.isFunctionOfDim(3);
    });
  };
  SmallVector<AffineMap> broadcastMaps =
      broadcast ? broadcast.getIndexingMapsArray() : SmallVector<AffineMap>();
  if (!broadcast || broadcast.getNumLoops() != 4 || broadcast.getNumDpsInits() != 1 ||
      broadcast.getNumParallelLoops() != 4 || broadcast.hasIndexSemantics() ||
      !broadcastMaps.back().isIdentity() ||
      !broadcast.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
      llvm::any_of(ArrayRef(broadcastMaps).drop_back(), readsPixels))
    return tensor::CollapseShapeOp::create(rewriter, loc, init, pixels);
  // Dimensions (n, f, p): the inputs' maps keep n, f and their constants.
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  SmallVector<AffineExpr> dims = {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx), zero, zero};
  SmallVector<AffineMap> maps;
  for (AffineMap map : ArrayRef(broadcastMaps).drop_back())
    maps.push_back(map.replaceDimsAndSymbols(dims, {}, 3, 0));
  maps.push_back(AffineMap::getMultiDimIdentityMap(3, ctx));
  Value empty = tensor::EmptyOp::create(rewriter, loc, collapsedType.getShape(),
                                        collapsedType.getElementType());
  auto collapsed = linalg::GenericOp::create(
      rewriter, loc, TypeRange{collapsedType}, broadcast.getInputs(), empty, maps,
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel));
  rewriter.cloneRegionBefore(broadcast.getRegion(), collapsed.getRegion(),
                             collapsed.getRegion().end());
  return collapsed.getResult(0);
}

/// Replaces `conv` by a matmul into its init collapsed to [N, F, OH*OW],
/// expanded back.
void rewriteAsMatmul(RewriterBase &rewriter, const Conv &conv) {
  rewriter.setInsertionPoint(conv.op);
  Value result = convolveAsMatmul(rewriter, conv, collapsedInit(rewriter, conv.init()));
  Operation *init = conv.init().getDefiningOp();
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
      conv.op, conv.op->getResultTypes()[0], result,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  if (init && isOpTriviallyDead(init)) // a bias rebuilt collapsed
    rewriter.eraseOp(init);
}

struct KilnGpuConvAsMatmulPass
    : mlir::kiln::impl::KilnGpuConvAsMatmulBase<KilnGpuConvAsMatmulPass> {
  void runOnOperation() override {
    SmallVector<Conv> convs;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<Conv> conv = asConv(op); conv && isWorthAMatmul(*conv))
        convs.push_back(*conv);
    });
    IRRewriter rewriter(&getContext());
    for (const Conv &conv : convs)
      rewriteAsMatmul(rewriter, conv);
  }
};

} // namespace
