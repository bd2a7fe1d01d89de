//===- ImportMath.cpp - elementwise ONNX ops ------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include <cmath>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

template <typename Op>
static LogicalResult importBinary(ImportContext &ctx) {
  auto lhs = ctx.input(0), rhs = ctx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto type = broadcastType(ctx, *lhs, *rhs);
  if (failed(type))
    return failure();
  ctx.setOutput(0, Op::create(ctx.b, ctx.loc, *type, *lhs, *rhs));
  return success();
}

template <typename Op>
static LogicalResult importUnary(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  ctx.setOutput(0, Op::create(ctx.b, ctx.loc, x->getType(), *x));
  return success();
}

/// Clip takes min/max as attributes before opset 11 and as optional scalar
/// constant inputs from 11 on.
static LogicalResult importClip(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  float lo = -INFINITY, hi = INFINITY;
  if (ctx.opset < 11) {
    lo = ctx.attrFloat("min", lo);
    hi = ctx.attrFloat("max", hi);
  } else {
    for (size_t i : {1, 2}) {
      if (!ctx.hasInput(i))
        continue;
      const HostTensor *t = ctx.hostInput(i);
      if (!t || t->numElements() != 1 || !t->isFloat())
        return ctx.fail(llvm::Twine(i == 1 ? "min" : "max") +
                        " must be a compile-time float scalar");
      (i == 1 ? lo : hi) = t->floats[0];
    }
  }
  ctx.setOutput(0, k::ClipOp::create(ctx.b, ctx.loc, x->getType(), *x, ctx.b.getF32FloatAttr(lo),
                                     ctx.b.getF32FloatAttr(hi)));
  return success();
}

/// HardSigmoid(x) = clip(alpha * x + beta, 0, 1).
static LogicalResult importHardSigmoid(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Type t = x->getType(), et = getElementTypeOrSelf(t);
  Value alpha = ctx.scalar(et, ctx.attrFloat("alpha", 0.2f));
  Value beta = ctx.scalar(et, ctx.attrFloat("beta", 0.5f));
  Value scaled = k::MulOp::create(ctx.b, ctx.loc, t, *x, alpha);
  Value shifted = k::AddOp::create(ctx.b, ctx.loc, t, scaled, beta);
  ctx.setOutput(0, k::ClipOp::create(ctx.b, ctx.loc, t, shifted, ctx.b.getF32FloatAttr(0.0f),
                                     ctx.b.getF32FloatAttr(1.0f)));
  return success();
}

/// Identity and inference-mode Dropout forward their input.
static LogicalResult importIdentity(ImportContext &ctx) {
  if (const HostTensor *t = ctx.hostInput(0)) {
    ctx.setHostOutput(0, *t);
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  ctx.setOutput(0, *x);
  return success();
}

static LogicalResult importDropout(ImportContext &ctx) {
  if (ctx.node->output_size() > 1 && !ctx.node->output(1).empty())
    return ctx.fail("the Dropout mask output is not supported (inference only)");
  if (ctx.hasInput(2))
    return ctx.fail("training-mode Dropout is not supported (inference only)");
  return importIdentity(ctx);
}

void registerMathOps(ImportTable &t) {
  t["Add"] = importBinary<k::AddOp>;
  t["Sub"] = importBinary<k::SubOp>;
  t["Mul"] = importBinary<k::MulOp>;
  t["Div"] = importBinary<k::DivOp>;
  t["Pow"] = importBinary<k::PowOp>;
  t["Relu"] = importUnary<k::ReluOp>;
  t["Sigmoid"] = importUnary<k::SigmoidOp>;
  t["Tanh"] = importUnary<k::TanhOp>;
  t["Exp"] = importUnary<k::ExpOp>;
  t["Erf"] = importUnary<k::ErfOp>;
  t["Sqrt"] = importUnary<k::SqrtOp>;
  t["Neg"] = importUnary<k::NegOp>;
  t["Clip"] = importClip;
  t["HardSigmoid"] = importHardSigmoid;
  t["Identity"] = importIdentity;
  t["Dropout"] = importDropout;
}

} // namespace kiln::onnx_frontend
