//===- ReadThroughPadding.cpp - the GPU's ops read past their padding -----===//
//
// A padded tensor is a fill of the pad value with the source inserted into
// its interior: on the GPU, a kernel for the fill, one for the copy, and
// where several consumers share the fill (CSE merges them), copies of it
// that bufferization adds. An op that reads the padded tensor can read the
// source instead, at its indices less the low padding, and take the pad
// value where they fall outside: no kernels, no copies, one buffer less.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUREADTHROUGHPADDING
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// A padded tensor, or a slice of one: element i of it is element
/// i + offset - low of `source`, or `value` where that falls outside along
/// a dimension that has padding (`padded`).
struct Padding {
  Value source;
  SmallVector<OpFoldResult> low, offsets;
  SmallVector<bool> padded;
  Value value;
};

/// The padding of `source` by the constant `value`, `low` elements before
/// it along each dimension, into a tensor of `paddedType`.
Padding makePadding(Value source, SmallVector<OpFoldResult> low, ShapedType paddedType,
                    Value value) {
  auto sourceType = cast<ShapedType>(source.getType());
  OpFoldResult zero = Builder(source.getContext()).getIndexAttr(0);
  Padding padding{source, low, SmallVector<OpFoldResult>(low.size(), zero), {}, value};
  for (int64_t d = 0; d < sourceType.getRank(); ++d)
    padding.padded.push_back(!isZeroInteger(low[d]) || sourceType.isDynamicDim(d) ||
                             sourceType.getDimSize(d) != paddedType.getDimSize(d));
  return padding;
}

/// `padded` as a padding of a tensor: a tensor.pad of a constant value, a
/// tensor.insert_slice of a whole tensor (unit strides) into a
/// linalg.fill, or a slice (unit strides, all dimensions kept) of either
/// (a chunk of a batch).
std::optional<Padding> asPadding(Value padded) {
  auto paddedType = cast<ShapedType>(padded.getType());
  if (auto pad = padded.getDefiningOp<tensor::PadOp>()) {
    Value value = pad.getConstantPaddingValue();
    if (!value || pad.getNofold())
      return std::nullopt;
    return makePadding(pad.getSource(), pad.getMixedLowPad(), paddedType, value);
  }
  if (auto slice = padded.getDefiningOp<tensor::ExtractSliceOp>()) {
    std::optional<Padding> whole;
    if (!slice.hasUnitStride() || slice.getSourceType().getRank() != paddedType.getRank() ||
        !(whole = asPadding(slice.getSource())) ||
        llvm::any_of(whole->offsets, [](OpFoldResult o) { return !isZeroInteger(o); }))
      return std::nullopt;
    whole->offsets = slice.getMixedOffsets();
    return whole;
  }
  auto insert = padded.getDefiningOp<tensor::InsertSliceOp>();
  if (!insert || !insert.hasUnitStride() ||
      insert.getSourceType().getRank() != insert.getDestType().getRank())
    return std::nullopt;
  auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics())
    return std::nullopt;
  // The insert covers its source whole (not rank-reducing: same ranks).
  for (auto [size, dim] : llvm::zip(insert.getMixedSizes(), insert.getSourceType().getShape()))
    if (ShapedType::isStatic(dim) && getConstantIntValue(size) != dim)
      return std::nullopt;
  return makePadding(insert.getSource(), insert.getMixedOffsets(), paddedType,
                     fill.getInputs()[0]);
}

/// The first input of `op` that is a padding it may read through, with its
/// operand number. Contractions keep theirs: their operands go through
/// shared memory and the tensor cores whole (kiln-gpu-promote-operands).
std::optional<std::pair<unsigned, Padding>> paddedInput(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || linalg::isaContractionOpInterface(op))
    return std::nullopt;
  for (OpOperand *input : op.getDpsInputOperands())
    if (std::optional<Padding> padding = asPadding(input->get()))
      return std::make_pair(input->getOperandNumber(), *padding);
  return std::nullopt;
}

/// The value `generic` reads from its input `operand`, a padding, computed
/// at the start of its body: the source's element at the input map's
/// indices shifted by the padding (and the slice's offsets), clamped into
/// the source, or the pad value where they fall outside it.
Value readThrough(RewriterBase &rewriter, linalg::GenericOp generic, unsigned operand,
                  const Padding &padding) {
  Location loc = generic.getLoc();
  // The source's sizes and the offsets, outside the op (the body captures
  // them).
  rewriter.setInsertionPoint(generic);
  SmallVector<Value> sizes, shifts;
  for (auto [d, low] : llvm::enumerate(padding.low)) {
    sizes.push_back(getValueOrCreateConstantIndexOp(
        rewriter, loc, tensor::getMixedSize(rewriter, loc, padding.source, d)));
    shifts.push_back(arith::SubIOp::create(
        rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, low),
        getValueOrCreateConstantIndexOp(rewriter, loc, padding.offsets[d])));
  }
  Block &body = generic.getRegion().front();
  rewriter.setInsertionPointToStart(&body);
  SmallVector<Value> loops;
  for (unsigned d = 0; d < generic.getNumLoops(); ++d)
    loops.push_back(linalg::IndexOp::create(rewriter, loc, d));
  AffineMap map = generic.getMatchingIndexingMap(&generic->getOpOperand(operand));
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value inside;
  SmallVector<Value> indices;
  for (auto [d, expr] : llvm::enumerate(map.getResults())) {
    Value index = arith::SubIOp::create(
        rewriter, loc, affine::expandAffineExpr(rewriter, loc, expr, loops, {}), shifts[d]);
    if (!padding.padded[d]) { // read as it is
      indices.push_back(index);
      continue;
    }
    Value last = arith::SubIOp::create(rewriter, loc, sizes[d], one);
    Value atLeast = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, index, zero);
    Value atMost = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, index, last);
    Value here = arith::AndIOp::create(rewriter, loc, atLeast, atMost);
    inside = inside ? arith::AndIOp::create(rewriter, loc, inside, here).getResult() : here;
    // Clamped, the read stays in the source whatever the index (it is
    // discarded outside).
    Value clamped = arith::MaxSIOp::create(rewriter, loc, index, zero);
    indices.push_back(arith::MinSIOp::create(rewriter, loc, clamped, last));
  }
  Value element = tensor::ExtractOp::create(rewriter, loc, padding.source, indices);
  if (!inside)
    return element;
  return arith::SelectOp::create(rewriter, loc, inside, element, padding.value);
}

/// Rewrites `op` (generalized first) to read `padding`'s source instead of
/// its input `operand`; returns the new op.
FailureOr<linalg::GenericOp> readThroughPadding(RewriterBase &rewriter, linalg::LinalgOp op,
                                                unsigned operand, const Padding &padding) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return failure();
    generic = *generalized;
  }
  Value read = readThrough(rewriter, generic, operand, padding);
  Block &body = generic.getRegion().front();
  rewriter.replaceAllUsesWith(body.getArgument(operand), read);
  // The same op without the operand.
  SmallVector<Value> inputs(generic.getInputs());
  inputs.erase(inputs.begin() + operand);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  maps.erase(maps.begin() + operand);
  rewriter.setInsertionPoint(generic);
  auto rewritten = linalg::GenericOp::create(rewriter, generic.getLoc(), generic.getResultTypes(),
                                             inputs, generic.getOutputs(), maps,
                                             generic.getIteratorTypesArray());
  rewritten->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(generic.getRegion(), rewritten.getRegion(),
                              rewritten.getRegion().end());
  rewritten.getRegion().front().eraseArgument(operand);
  rewriter.replaceOp(generic, rewritten->getResults());
  return rewritten;
}

struct KilnGpuReadThroughPaddingPass
    : mlir::kiln::impl::KilnGpuReadThroughPaddingBase<KilnGpuReadThroughPaddingPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops) {
      // One padded input at a time: each rewrite makes a new op.
      while (std::optional<std::pair<unsigned, Padding>> input = paddedInput(op)) {
        FailureOr<linalg::GenericOp> rewritten =
            readThroughPadding(rewriter, op, input->first, input->second);
        if (failed(rewritten))
          break;
        op = *rewritten;
      }
    }
  }
};

} // namespace
