//===- ImportLoss.cpp - ONNX loss functions --------------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed from kiln
// ops: the per-element loss picks the target class with gather_elements,
// weights come from a gather, ignored targets are masked out.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

/// NLL of log-probabilities `x` [N, C, d...] against integer `target`
/// [N, d...] with optional class `weight` [C].
FailureOr<Value> nllLoss(ImportContext &ctx, Value x, Value target, Value weight) {
  Emitter e{ctx};
  auto xt = cast<RankedTensorType>(x.getType());
  auto tt = cast<RankedTensorType>(target.getType());
  if (xt.getRank() < 2 || tt.getRank() != xt.getRank() - 1)
    return ctx.fail("target must have the input's shape without the class dimension");
  Type ft = xt.getElementType(), i1 = ctx.b.getI1Type();
  std::string reduction = ctx.attrString("reduction", "mean");
  bool ignoring = ctx.hasAttr("ignore_index");

  // Ignored targets read class 0 and are masked out below.
  Value index = target, valid;
  if (ignoring) {
    auto v = e.binary<k::EqualOp>(target, e.constant(target, ctx.attrInt("ignore_index", 0)), i1);
    if (failed(v))
      return failure();
    valid = e.unary<k::NotOp>(*v);
    index = k::WhereOp::create(ctx.b, ctx.loc, tt, valid, target, e.constant(target, 0));
  }
  SmallVector<int64_t> withClass(tt.getShape());
  withClass.insert(withClass.begin() + 1, 1);
  Value picked = k::GatherElementsOp::create(ctx.b, ctx.loc, RankedTensorType::get(withClass, ft),
                                             x, e.reshape(index, withClass), 1);
  Value loss = e.unary<k::NegOp>(e.reshape(picked, tt.getShape()));

  // Per-element weights: the class weight, times 0 where ignored.
  Value w;
  if (weight)
    w = k::GatherOp::create(ctx.b, ctx.loc, RankedTensorType::get(tt.getShape(), ft), weight,
                            index, 0);
  if (ignoring) {
    Value mask = e.castTo(valid, ft);
    if (w) {
      auto m = e.binary<k::MulOp>(w, mask);
      if (failed(m))
        return failure();
      w = *m;
    } else {
      w = mask;
    }
  }
  if (w) {
    auto weighted = e.binary<k::MulOp>(loss, w);
    if (failed(weighted))
      return failure();
    loss = *weighted;
  }
  if (reduction == "none")
    return loss;
  Value sum = e.sumAll(loss);
  if (reduction == "sum")
    return sum;
  if (reduction != "mean")
    return ctx.fail("unknown reduction '" + reduction + "'");
  Value count = w ? e.sumAll(w) : e.constant(loss, (double)tt.getNumElements());
  return e.binary<k::DivOp>(sum, count);
}

LogicalResult importNLL(ImportContext &ctx) {
  auto x = ctx.input(0), target = ctx.input(1);
  if (failed(x) || failed(target))
    return failure();
  auto loss = nllLoss(ctx, *x, *target, ctx.optionalInput(2));
  if (failed(loss))
    return failure();
  ctx.setOutput(0, *loss);
  return success();
}

LogicalResult importSoftmaxCrossEntropy(ImportContext &ctx) {
  auto x = ctx.input(0), target = ctx.input(1);
  if (failed(x) || failed(target))
    return failure();
  Value logProb = k::LogSoftmaxOp::create(ctx.b, ctx.loc, x->getType(), *x, 1);
  auto loss = nllLoss(ctx, logProb, *target, ctx.optionalInput(2));
  if (failed(loss))
    return failure();
  ctx.setOutput(0, *loss);
  ctx.setOutput(1, logProb);
  return success();
}

} // namespace

void registerLossOps(ImportTable &t) {
  t["NegativeLogLikelihoodLoss"] = importNLL;
  t["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropy;
}

} // namespace kiln::onnx_frontend
