//===- ChannelsLast.cpp - convolutions in NHWC -------------------------------===//
//
// A convolution of static shape runs as im2col^T x filter^T, whose product
// is NHWC. In NCHW every convolution pays twice for the layout: its im2col
// gathers single values (one channel plane at a time) and its product is
// scattered back to NCHW (or, for f32, the im2col is packed into panels at
// run time instead of the constant filter at compile time). This pass runs
// them channels-last instead: widening convolutions (int8 or bf16,
// kiln-quantize-* / kiln-fuse-qdq / kiln-convert-to-half), and f32 ones with
// a constant filter, without groups or depthwise (vectorized along the
// channels):
//
//   conv(x)  ->  to_nchw(conv_nhwc(to_nhwc(x)))
//
// then moves each to_nchw down through the ops that follow, as long as they
// work in either layout (elementwise ops, with per-channel operands
// reshaped to [1, 1, 1, C]; constant padding; max pooling; concatenation;
// global average pooling, as a mean over H and W), where it meets the next
// convolution's to_nhwc and both fold away. What remains are the transposes
// at the edges of such a chain: the network's input and what reads its
// output in NCHW (a reshape, a resize).
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCHANNELSLAST
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kToNhwc[] = {0, 2, 3, 1}, kToNchw[] = {0, 3, 1, 2};

SmallVector<int64_t> permuted(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> result;
  for (int64_t p : perm)
    result.push_back(shape[p]);
  return result;
}

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The NHWC value `v` is to_nchw of, if it is one.
Value nhwcSource(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || t.getPerm() != ArrayRef<int64_t>(kToNchw))
    return {};
  return t.getInput();
}

/// Whether `type` is a rank-4 tensor of static shape.
bool isStatic4d(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.getRank() == 4 && t.hasStaticShape();
}

/// The op's result in NHWC: `op` cloned onto `operands`, with the result
/// type permuted (and `adjust` applied), followed by to_nchw, which replaces
/// it.
void rewriteInNhwc(PatternRewriter &rewriter, Operation *op, ValueRange operands,
                   function_ref<void(Operation *)> adjust = {}) {
  Operation *clone = rewriter.clone(*op);
  clone->setOperands(operands);
  auto type = tensorType(op->getResult(0));
  clone->getResult(0).setType(
      RankedTensorType::get(permuted(type.getShape(), kToNhwc), type.getElementType()));
  if (adjust)
    adjust(clone);
  rewriter.replaceOp(op, createTranspose(rewriter, op->getLoc(), clone->getResult(0), kToNchw));
}

/// Whether `op` is depthwise: one group per input channel, one filter each.
bool isDepthwise(ConvOp op) {
  int64_t channels = tensorType(op.getInput()).getDimSize(1);
  return static_cast<int64_t>(op.getGroup()) == channels &&
         tensorType(op.getFilter()).getDimSize(0) == channels;
}

/// conv(x) -> to_nchw(conv_nhwc(to_nhwc(x))) for widening convolutions
/// without groups, and f32 ones with a constant filter, without groups or
/// depthwise.
struct ConvToChannelsLast : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    if (op.getChannelsLast() || !isStatic4d(op.getType()) ||
        !isStatic4d(op.getInput().getType()))
      return failure();
    Type in = tensorType(op.getInput()).getElementType();
    Type out = tensorType(op.getResult()).getElementType();
    bool widening = (in.isInteger(8) && out.isInteger(32)) || (in.isBF16() && out.isF32());
    bool constantFloat = in.isF32() && out.isF32() && op.getFilter().getDefiningOp<ConstantOp>();
    if (!(widening && op.getGroup() == 1) &&
        !(constantFloat && (op.getGroup() == 1 || isDepthwise(op))))
      return failure();
    SmallVector<Value> operands = {createTranspose(rewriter, op.getLoc(), op.getInput(), kToNhwc),
                                   op.getFilter()};
    if (op.getBias())
      operands.push_back(op.getBias());
    rewriteInNhwc(rewriter, op, operands,
                  [](Operation *conv) { cast<ConvOp>(conv).setChannelsLast(true); });
    return success();
  }
};

/// Whether `v`'s element type is quantized per axis (its axis would need
/// permuting too).
bool isPerAxis(Value v) {
  return isa<quant::UniformQuantizedPerAxisType>(tensorType(v).getElementType());
}

/// u(to_nchw(x)) -> to_nchw(u(x)) for elementwise ops of one operand.
template <typename Op>
struct SinkThroughUnary : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Value x = nhwcSource(op->getOperand(0));
    if (!x || op->getNumOperands() != 1 || !isStatic4d(op->getResult(0).getType()) ||
        isPerAxis(x) || isPerAxis(op->getResult(0)))
      return failure();
    rewriteInNhwc(rewriter, op, x);
    return success();
  }
};

/// The NCHW operand `v` of a binary op whose result is NCHW, in NHWC: x for
/// to_nchw(x); a per-channel [.., C, 1, 1] as [1, 1, 1, C]; a scalar as it
/// is; anything else of rank 4 through to_nhwc. Null if none applies.
Value inNhwc(PatternRewriter &rewriter, Location loc, Value v) {
  if (Value x = nhwcSource(v))
    return x;
  auto type = tensorType(v);
  if (!type.hasStaticShape())
    return {};
  SmallVector<int64_t> shape(type.getShape());
  if (shape.size() > 4)
    return {};
  if (type.getNumElements() == 1)
    return v;
  shape.insert(shape.begin(), 4 - shape.size(), 1);
  if (shape[0] == 1 && shape[2] == 1 && shape[3] == 1)
    return ReshapeOp::create(rewriter, loc,
                             RankedTensorType::get({1, 1, 1, shape[1]}, type.getElementType()),
                             v);
  if (type.getRank() == 4)
    return createTranspose(rewriter, loc, v, kToNhwc);
  return {};
}

/// b(to_nchw(x), y) -> to_nchw(b(x, y in NHWC)) for elementwise binary ops.
template <typename Op>
struct SinkThroughBinary : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    if (!isStatic4d(op.getType()) ||
        (!nhwcSource(op.getLhs()) && !nhwcSource(op.getRhs())))
      return failure();
    Value lhs = inNhwc(rewriter, op.getLoc(), op.getLhs());
    Value rhs = lhs ? inNhwc(rewriter, op.getLoc(), op.getRhs()) : Value();
    if (!lhs || !rhs)
      return failure();
    rewriteInNhwc(rewriter, op, ValueRange{lhs, rhs});
    return success();
  }
};

/// pad(to_nchw(x)) -> to_nchw(pad(x)) with the pads permuted.
struct SinkThroughPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &rewriter) const override {
    Value x = nhwcSource(op.getInput());
    if (!x || op.getMode() != "constant" || !isStatic4d(op.getType()))
      return failure();
    ArrayRef<int64_t> p = op.getPads();
    SmallVector<int64_t> pads = {p[0], p[2], p[3], p[1], p[4], p[6], p[7], p[5]};
    rewriteInNhwc(rewriter, op, x, [&](Operation *pad) { cast<PadOp>(pad).setPads(pads); });
    return success();
  }
};

/// max_pool(to_nchw(x)) -> to_nchw(max_pool_nhwc(x)).
struct SinkThroughMaxPool : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolOp op, PatternRewriter &rewriter) const override {
    Value x = nhwcSource(op.getInput());
    if (!x || op.getChannelsLast() || !isStatic4d(op.getType()))
      return failure();
    rewriteInNhwc(rewriter, op, x,
                  [](Operation *pool) { cast<MaxPoolOp>(pool).setChannelsLast(true); });
    return success();
  }
};

/// concat(.., to_nchw(x), ..) -> to_nchw(concat(.. in NHWC ..)) along the
/// permuted axis.
struct SinkThroughConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    if (!isStatic4d(op.getType()) || llvm::none_of(op.getInputs(), nhwcSource))
      return failure();
    SmallVector<Value> inputs;
    for (Value v : op.getInputs()) {
      Value x = isStatic4d(v.getType()) ? inNhwc(rewriter, op.getLoc(), v) : Value();
      if (!x || tensorType(x).getRank() != 4)
        return failure();
      inputs.push_back(x);
    }
    int64_t axis = kToNchw[op.getAxis()];
    rewriteInNhwc(rewriter, op, inputs,
                  [&](Operation *concat) { cast<ConcatOp>(concat).setAxis(axis); });
    return success();
  }
};

/// global_average_pool(to_nchw(x)) -> to_nchw(reduce_mean(x) over H and W).
struct SinkThroughGlobalAveragePool : OpRewritePattern<GlobalAveragePoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalAveragePoolOp op, PatternRewriter &rewriter) const override {
    Value x = nhwcSource(op.getInput());
    if (!x || !isStatic4d(op.getType()))
      return failure();
    auto type = tensorType(op.getResult());
    auto meanType = RankedTensorType::get(permuted(type.getShape(), kToNhwc), type.getElementType());
    Value mean = ReduceMeanOp::create(rewriter, op.getLoc(), meanType, x,
                                      rewriter.getDenseI64ArrayAttr({1, 2}),
                                      rewriter.getBoolAttr(true));
    rewriter.replaceOp(op, createTranspose(rewriter, op.getLoc(), mean, kToNchw));
    return success();
  }
};

struct KilnChannelsLastPass : mlir::kiln::impl::KilnChannelsLastBase<KilnChannelsLastPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ConvToChannelsLast, SinkThroughPad, SinkThroughMaxPool, SinkThroughConcat,
                 SinkThroughGlobalAveragePool>(ctx);
    patterns.add<SinkThroughUnary<ReluOp>, SinkThroughUnary<CastOp>, SinkThroughUnary<ClipOp>,
                 SinkThroughUnary<RoundOp>, SinkThroughUnary<QuantizeOp>,
                 SinkThroughUnary<DequantizeOp>, SinkThroughUnary<StorageCastOp>,
                 SinkThroughUnary<SigmoidOp>, SinkThroughUnary<TanhOp>, SinkThroughUnary<NegOp>,
                 SinkThroughUnary<AbsOp>, SinkThroughUnary<ExpOp>, SinkThroughUnary<ErfOp>,
                 SinkThroughUnary<SqrtOp>>(ctx);
    patterns.add<SinkThroughBinary<AddOp>, SinkThroughBinary<SubOp>, SinkThroughBinary<MulOp>,
                 SinkThroughBinary<DivOp>, SinkThroughBinary<MaxOp>, SinkThroughBinary<MinOp>>(
        ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
