//===- ConvAsMatmul.cpp - the GPU's convolutions as matmuls ---------------===//
//
// A convolution tiled like any other op gives each thread one output and
// reads its receptive field and the filter from global memory, with no
// reuse between the threads. As an im2col copy and a matmul, its filter
// and fields go through the matmul's register tiles and shared memory
// (kiln-gpu-private-accumulators, kiln-gpu-promote-operands), at the cost
// of writing the fields out once.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUCONVASMATMUL
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// The most elements of receptive fields a convolution may write out
/// (64 MiB of f32); a larger one stays direct.
constexpr int64_t kMaxFieldElements = int64_t(16) << 20;

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

/// The images of a batch `conv` should convolve at a time as a matmul, or
/// 0 where it should stay direct: static shapes, more than one input
/// channel or tap per output (a filter of one scale per channel pair has
/// no fields for a matmul to reuse), and fields of at most
/// kMaxFieldElements at a time. Where the whole batch's fields are more,
/// the batch goes in chunks: the most images whose fields fit that divide
/// the batch (the chunks alike, one kernel each).
int64_t imagesAtATime(const Conv &conv) {
  auto input = cast<ShapedType>(conv.input().getType());
  auto filter = cast<ShapedType>(conv.filter().getType());
  auto output = cast<ShapedType>(conv.init().getType());
  if (!conv.op.hasPureTensorSemantics() || !input.hasStaticShape() || !filter.hasStaticShape() ||
      !output.hasStaticShape())
    return 0;
  int64_t taps = filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
  int64_t fieldsPerImage = taps * output.getDimSize(2) * output.getDimSize(3);
  if (taps == 1 || fieldsPerImage > kMaxFieldElements)
    return 0;
  int64_t batch = output.getDimSize(0);
  int64_t images = std::min(batch, kMaxFieldElements / fieldsPerImage);
  while (batch % images)
    --images;
  return images;
}

/// The receptive fields of `input` for `conv` as [N, C, KH, KW, OH, OW]: a
/// copy whose input map carries the strides and dilations (monotonic, so
/// that tiling it takes exact slices of the input).
Value buildFields(OpBuilder &b, const Conv &conv, Value input, ShapedType output) {
  Location loc = conv.op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filter = cast<ShapedType>(conv.filter().getType());
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
  Value empty = tensor::EmptyOp::create(b, loc, fieldsType.getShape(), fieldsType.getElementType());
  return linalg::GenericOp::create(
             b, loc, fieldsType, input, empty,
             {read, AffineMap::getMultiDimIdentityMap(6, ctx)},
             SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
             [](OpBuilder &nested, Location l, ValueRange args) {
               linalg::YieldOp::create(nested, l, args[0]);
             })
      .getResult(0);
}

/// Whether `conv` reads each pixel of `input` once, at its own output
/// pixel: a 1x1 filter, stride 1, the output as large as the input (no
/// padding).
bool isPointwise(const Conv &conv, Value input) {
  auto filter = cast<ShapedType>(conv.filter().getType());
  auto inputType = cast<ShapedType>(input.getType());
  auto output = cast<ShapedType>(conv.init().getType());
  return filter.getDimSize(2) == 1 && filter.getDimSize(3) == 1 &&
         llvm::all_of(conv.strides, [](int64_t s) { return s == 1; }) &&
         inputType.getShape().drop_front(2) == output.getShape().drop_front(2);
}

/// `conv` of the images `input` into `flatInit` [N, F, OH*OW] (the whole
/// batch's or some of its images') as the contraction of its filter
/// [F, C*KH*KW] with their fields [N, C*KH*KW, OH*OW], its body the
/// convolution's (the same operands in the same order: field, filter,
/// accumulator).
Value convolveAsMatmul(RewriterBase &rewriter, const Conv &conv, Value input, Value flatInit) {
  Location loc = conv.op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto output = cast<ShapedType>(conv.init().getType());
  auto flatType = cast<ShapedType>(flatInit.getType());
  auto imagesType = RankedTensorType::get(
      {flatType.getDimSize(0), output.getDimSize(1), output.getDimSize(2), output.getDimSize(3)},
      output.getElementType());
  // A pointwise convolution's fields are its input: [N, C, H*W], no copy.
  Value fields =
      isPointwise(conv, input)
          ? tensor::CollapseShapeOp::create(rewriter, loc, input,
                                            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}})
          : tensor::CollapseShapeOp::create(rewriter, loc,
                                            buildFields(rewriter, conv, input, imagesType),
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

/// Replaces `conv` by matmuls of `images` images at a time into its init
/// collapsed to [N, F, OH*OW], expanded back: one matmul for the whole
/// batch, or one per chunk of it, each on slices of the input and of the
/// collapsed init that it goes back into (in place once bufferized: the
/// same view of the same buffer).
void rewriteAsMatmuls(RewriterBase &rewriter, const Conv &conv, int64_t images) {
  Location loc = conv.op.getLoc();
  rewriter.setInsertionPoint(conv.op);
  SmallVector<ReassociationIndices> pixels{{0}, {1}, {2, 3}};
  Value result = collapsedInit(rewriter, conv.init());
  // `images` images of `whole` from image `first`, as a slice's arguments.
  auto chunk = [&](Value whole, int64_t first) {
    auto shape = cast<ShapedType>(whole.getType()).getShape();
    SmallVector<OpFoldResult> offsets(shape.size(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(rewriter.getContext(), shape);
    SmallVector<OpFoldResult> strides(shape.size(), rewriter.getIndexAttr(1));
    offsets[0] = rewriter.getIndexAttr(first);
    sizes[0] = rewriter.getIndexAttr(images);
    return std::make_tuple(offsets, sizes, strides);
  };
  int64_t batch = cast<ShapedType>(conv.init().getType()).getDimSize(0);
  if (images == batch) {
    result = convolveAsMatmul(rewriter, conv, conv.input(), result);
  } else {
    for (int64_t first = 0; first < batch; first += images) {
      auto [inOffsets, inSizes, inStrides] = chunk(conv.input(), first);
      Value input = tensor::ExtractSliceOp::create(rewriter, loc, conv.input(), inOffsets,
                                                   inSizes, inStrides);
      auto [offsets, sizes, strides] = chunk(result, first);
      Value init =
          tensor::ExtractSliceOp::create(rewriter, loc, result, offsets, sizes, strides);
      result = tensor::InsertSliceOp::create(rewriter, loc,
                                             convolveAsMatmul(rewriter, conv, input, init),
                                             result, offsets, sizes, strides);
    }
  }
  Operation *init = conv.init().getDefiningOp();
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(conv.op, conv.op->getResultTypes()[0],
                                                     result, pixels);
  if (init && isOpTriviallyDead(init)) // a bias rebuilt collapsed
    rewriter.eraseOp(init);
}

struct KilnGpuConvAsMatmulPass
    : mlir::kiln::impl::KilnGpuConvAsMatmulBase<KilnGpuConvAsMatmulPass> {
  void runOnOperation() override {
    SmallVector<std::pair<Conv, int64_t>> convs;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<Conv> conv = asConv(op))
        if (int64_t images = imagesAtATime(*conv))
          convs.push_back({*conv, images});
    });
    IRRewriter rewriter(&getContext());
    for (auto &[conv, images] : convs)
      rewriteAsMatmuls(rewriter, conv, images);
  }
};

} // namespace
