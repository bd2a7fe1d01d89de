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

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUCONVASMATMUL
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// The most elements of receptive fields a convolution may write out
/// (64 MiB of f32); a larger one stays direct.
constexpr int64_t kMaxFieldElements = int64_t(16) << 20;

/// Whether `conv` can and should be a matmul: static shapes, more than one
/// input channel or tap per output (a filter of one scale per channel pair
/// has no fields for a matmul to reuse), fields of a bounded size.
bool worthAMatmul(linalg::Conv2DNchwFchwOp conv) {
  auto input = cast<ShapedType>(conv.getInputs()[0].getType());
  auto filter = cast<ShapedType>(conv.getInputs()[1].getType());
  auto output = cast<ShapedType>(conv.getOutputs()[0].getType());
  if (!conv.hasPureTensorSemantics() || !input.hasStaticShape() || !filter.hasStaticShape() ||
      !output.hasStaticShape())
    return false;
  int64_t taps = filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
  int64_t fields = output.getDimSize(0) * taps * output.getDimSize(2) * output.getDimSize(3);
  return taps > 1 && fields <= kMaxFieldElements;
}

/// The receptive fields of `conv`'s input as [N, C, KH, KW, OH, OW]: a copy
/// whose input map carries the strides and dilations (monotonic, so that
/// tiling it takes exact slices of the input).
Value buildFields(OpBuilder &b, linalg::Conv2DNchwFchwOp conv) {
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  Value input = conv.getInputs()[0];
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filter = cast<ShapedType>(conv.getInputs()[1].getType());
  auto output = cast<ShapedType>(conv.getOutputs()[0].getType());
  SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
  SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
  auto fieldsType = RankedTensorType::get(
      {output.getDimSize(0), filter.getDimSize(1), filter.getDimSize(2), filter.getDimSize(3),
       output.getDimSize(2), output.getDimSize(3)},
      inputType.getElementType());
  AffineExpr n, c, kh, kw, oh, ow;
  bindDims(ctx, n, c, kh, kw, oh, ow);
  AffineMap read = AffineMap::get(
      6, 0, {n, c, oh * strides[0] + kh * dilations[0], ow * strides[1] + kw * dilations[1]}, ctx);
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

/// Replaces `conv` by the contraction of its filter [F, C*KH*KW] with its
/// fields [N, C*KH*KW, OH*OW] into [N, F, OH*OW], its body the
/// convolution's (the same operands in the same order: field, filter,
/// accumulator).
void rewriteAsMatmul(RewriterBase &rewriter, linalg::Conv2DNchwFchwOp conv) {
  Location loc = conv.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(conv);
  Value fields = tensor::CollapseShapeOp::create(rewriter, loc, buildFields(rewriter, conv),
                                                 ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
  Value filter = tensor::CollapseShapeOp::create(rewriter, loc, conv.getInputs()[1],
                                                 ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
  SmallVector<ReassociationIndices> pixels{{0}, {1}, {2, 3}};
  Value init = tensor::CollapseShapeOp::create(rewriter, loc, conv.getOutputs()[0], pixels);
  AffineExpr n, f, p, k;
  bindDims(ctx, n, f, p, k);
  auto maps = {AffineMap::get(4, 0, {n, k, p}, ctx), AffineMap::get(4, 0, {f, k}, ctx),
               AffineMap::get(4, 0, {n, f, p}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto matmul = linalg::GenericOp::create(rewriter, loc, init.getType(), {fields, filter}, init,
                                          maps, iterators);
  rewriter.cloneRegionBefore(conv->getRegion(0), matmul.getRegion(), matmul.getRegion().end());
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(conv, conv.getResultTypes()[0],
                                                     matmul.getResult(0), pixels);
}

struct KilnGpuConvAsMatmulPass
    : mlir::kiln::impl::KilnGpuConvAsMatmulBase<KilnGpuConvAsMatmulPass> {
  void runOnOperation() override {
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk([&](linalg::Conv2DNchwFchwOp conv) {
      if (worthAMatmul(conv))
        convs.push_back(conv);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::Conv2DNchwFchwOp conv : convs)
      rewriteAsMatmul(rewriter, conv);
  }
};

} // namespace
