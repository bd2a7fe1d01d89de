//===- ImportMath.cpp - elementwise ONNX ops ------------------------------===//
//
// Arithmetic, comparisons, logic and activations. Activations without a kiln
// op of their own are composed from kiln elementwise ops here; the
// elementwise fusion in codegen merges the pieces again.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/HostEval.h"
#include "frontend/onnx/ImportContext.h"

#include <cmath>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

/// Host evaluation of each binary kiln op (float and integer forms).
template <typename Op>
struct HostFn;
#define KILN_HOST_FN(OP, EXPR)                                                               \
  template <>                                                                                \
  struct HostFn<OP> {                                                                        \
    static double f(double a, double b) { return EXPR; }                                     \
    static int64_t i(int64_t a, int64_t b) { return EXPR; }                                  \
  };
KILN_HOST_FN(k::AddOp, a + b)
KILN_HOST_FN(k::SubOp, a - b)
KILN_HOST_FN(k::MulOp, a * b)
KILN_HOST_FN(k::DivOp, b == 0 ? 0 : a / b)
KILN_HOST_FN(k::MaxOp, std::max(a, b))
KILN_HOST_FN(k::MinOp, std::min(a, b))
KILN_HOST_FN(k::EqualOp, a == b)
KILN_HOST_FN(k::LessOp, a < b)
KILN_HOST_FN(k::LessEqualOp, a <= b)
KILN_HOST_FN(k::GreaterOp, a > b)
KILN_HOST_FN(k::GreaterEqualOp, a >= b)
#undef KILN_HOST_FN
// And/Or/Xor are bitwise on integers (ONNX Bitwise*) and logical on bools,
// which hold 0 and 1; they have no floating-point form.
#define KILN_HOST_BITWISE(OP, EXPR)                                                          \
  template <>                                                                                \
  struct HostFn<OP> {                                                                        \
    static double f(double a, double) { return a; }                                          \
    static int64_t i(int64_t a, int64_t b) { return EXPR; }                                  \
  };
KILN_HOST_BITWISE(k::AndOp, a & b)
KILN_HOST_BITWISE(k::OrOp, a | b)
KILN_HOST_BITWISE(k::XorOp, a ^ b)
#undef KILN_HOST_BITWISE
template <>
struct HostFn<k::ShiftLeftOp> {
  static double f(double a, double) { return a; }
  static int64_t i(int64_t a, int64_t b) { return (int64_t)((uint64_t)a << b); }
};
template <>
struct HostFn<k::ShiftRightOp> {
  static double f(double a, double) { return a; }
  static int64_t i(int64_t a, int64_t b) { return (int64_t)((uint64_t)a >> b); }
};

/// Folds the node on the host when both inputs are compile-time tensors.
template <typename Op>
bool foldOnHost(ImportContext &ctx, int32_t resultDtype = 0) {
  const HostTensor *a = ctx.hostInput(0), *b = ctx.hostInput(1);
  if (!a || !b)
    return false;
  auto r = hostBinary(*a, *b, HostFn<Op>::f, HostFn<Op>::i, resultDtype);
  if (!r)
    return false;
  ctx.setHostOutput(0, std::move(*r));
  return true;
}

template <typename Op>
LogicalResult importBinary(ImportContext &ctx) {
  if (foldOnHost<Op>(ctx))
    return success();
  auto lhs = ctx.input(0), rhs = ctx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto r = Emitter{ctx}.binary<Op>(*lhs, *rhs);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

template <typename Op>
LogicalResult importCompare(ImportContext &ctx) {
  if (foldOnHost<Op>(ctx, onnx::TensorProto::BOOL))
    return success();
  auto lhs = ctx.input(0), rhs = ctx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto r = Emitter{ctx}.binary<Op>(*lhs, *rhs, ctx.b.getI1Type());
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Host evaluation of unary kiln ops used in shape arithmetic.
template <typename Op>
struct HostUnary {
  static constexpr bool exists = false;
  static double f(double) { return 0; }
};
#define KILN_HOST_UNARY(OP, EXPR)                                                            \
  template <>                                                                                \
  struct HostUnary<OP> {                                                                     \
    static constexpr bool exists = true;                                                     \
    static double f(double a) { return EXPR; }                                               \
  };
KILN_HOST_UNARY(k::NegOp, -a)
KILN_HOST_UNARY(k::AbsOp, std::fabs(a))
KILN_HOST_UNARY(k::NotOp, a == 0)
KILN_HOST_UNARY(k::ReluOp, std::max(a, 0.0))
KILN_HOST_UNARY(k::FloorOp, std::floor(a))
KILN_HOST_UNARY(k::CeilOp, std::ceil(a))
KILN_HOST_UNARY(k::SqrtOp, std::sqrt(a))
KILN_HOST_UNARY(k::ReciprocalOp, 1.0 / a)
#undef KILN_HOST_UNARY

/// A unary op; `floatOnly` rejects integer inputs with a clear message.
template <typename Op, bool floatOnly = true>
LogicalResult importUnary(ImportContext &ctx) {
  if (const HostTensor *t = ctx.hostInput(0); t && HostUnary<Op>::exists) {
    HostTensor r = *t;
    for (double &v : r.floats)
      v = HostUnary<Op>::f(v);
    for (int64_t &v : r.ints)
      v = static_cast<int64_t>(HostUnary<Op>::f(static_cast<double>(v)));
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (floatOnly && !isa<FloatType>(getElementTypeOrSelf(x->getType())))
    return ctx.fail("element type " + llvm::Twine(getElementTypeOrSelf(x->getType()) ==
                                                          ctx.b.getI1Type()
                                                      ? "bool"
                                                      : "integer") +
                    " is not supported for this operator");
  ctx.setOutput(0, Emitter{ctx}.unary<Op>(*x));
  return success();
}

/// Max, Min, Sum: a left fold over any number of inputs; Mean divides the sum.
template <typename Op, bool mean = false>
LogicalResult importVariadic(ImportContext &ctx) {
  if (ctx.numInputs() == 2 && !mean && foldOnHost<Op>(ctx))
    return success();
  auto acc = ctx.input(0);
  if (failed(acc))
    return failure();
  Value r = *acc;
  Emitter e{ctx};
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    auto next = e.binary<Op>(r, *v);
    if (failed(next))
      return failure();
    r = *next;
  }
  if (mean) {
    auto d = e.binary<k::DivOp>(r, e.constant(r, (double)ctx.numInputs()));
    if (failed(d))
      return failure();
    r = *d;
  }
  ctx.setOutput(0, r);
  return success();
}

LogicalResult importMod(ImportContext &ctx) {
  auto lhs = ctx.input(0), rhs = ctx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  bool fmod = ctx.attrInt("fmod", 0);
  if (!fmod && isa<FloatType>(getElementTypeOrSelf(lhs->getType())))
    return ctx.fail("Mod of floating-point tensors requires fmod=1");
  auto type = broadcastType(ctx, *lhs, *rhs);
  if (failed(type))
    return failure();
  ctx.setOutput(0, k::ModOp::create(ctx.b, ctx.loc, *type, *lhs, *rhs, fmod));
  return success();
}

/// Pow's exponent may have another type than the base; the result has the
/// base's type, so the exponent is converted first.
LogicalResult importPow(ImportContext &ctx) {
  auto base = ctx.input(0), exponent = ctx.input(1);
  if (failed(base) || failed(exponent))
    return failure();
  Type et = getElementTypeOrSelf(base->getType());
  Value exp = *exponent;
  if (getElementTypeOrSelf(exp.getType()) != et) {
    auto shape = cast<RankedTensorType>(exp.getType()).getShape();
    exp = k::CastOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et), exp);
  }
  auto r = Emitter{ctx}.binary<k::PowOp>(*base, exp);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

LogicalResult importWhere(ImportContext &ctx) {
  if (ctx.hostInput(0) && ctx.hostInput(1) && ctx.hostInput(2))
    if (auto r = hostWhere(*ctx.hostInput(0), *ctx.hostInput(1), *ctx.hostInput(2))) {
      ctx.setHostOutput(0, std::move(*r));
      return success();
    }
  auto c = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  auto xy = broadcastType(ctx, *x, *y);
  if (failed(xy))
    return failure();
  auto shape = k::broadcastShapes(cast<RankedTensorType>(c->getType()).getShape(),
                                  xy->getShape());
  if (failed(shape))
    return ctx.fail("operand shapes are not broadcast-compatible");
  ctx.setOutput(0, k::WhereOp::create(ctx.b, ctx.loc,
                                      RankedTensorType::get(*shape, xy->getElementType()), *c,
                                      *x, *y));
  return success();
}

/// Clip: constant float bounds become kiln.clip; tensor-valued or integer
/// bounds become max/min.
LogicalResult importClip(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Type et = getElementTypeOrSelf(x->getType());
  if (ctx.opset < 11) {
    ctx.setOutput(0, k::ClipOp::create(ctx.b, ctx.loc, x->getType(), *x,
                                       ctx.b.getF32FloatAttr(ctx.attrFloat("min", -INFINITY)),
                                       ctx.b.getF32FloatAttr(ctx.attrFloat("max", INFINITY))));
    return success();
  }
  bool constantBounds = isa<FloatType>(et);
  for (size_t i : {1, 2})
    if (ctx.hasInput(i)) {
      const HostTensor *t = ctx.hostInput(i);
      constantBounds &= t && t->numElements() == 1 && t->isFloat();
    }
  if (constantBounds) {
    float lo = ctx.hasInput(1) ? ctx.hostInput(1)->floats[0] : -INFINITY;
    float hi = ctx.hasInput(2) ? ctx.hostInput(2)->floats[0] : INFINITY;
    ctx.setOutput(0, k::ClipOp::create(ctx.b, ctx.loc, x->getType(), *x,
                                       ctx.b.getF32FloatAttr(lo), ctx.b.getF32FloatAttr(hi)));
    return success();
  }
  Value r = *x;
  Emitter e{ctx};
  for (size_t i : {1, 2}) {
    if (!ctx.hasInput(i))
      continue;
    auto bound = ctx.input(i);
    if (failed(bound))
      return failure();
    auto next = i == 1 ? e.binary<k::MaxOp>(r, *bound) : e.binary<k::MinOp>(r, *bound);
    if (failed(next))
      return failure();
    r = *next;
  }
  ctx.setOutput(0, r);
  return success();
}

/// Activations composed from kiln ops: f(x) built by `body`.
using Composer = function_ref<FailureOr<Value>(Emitter &, Value)>;
LogicalResult importComposed(ImportContext &ctx, Composer body) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(x->getType())))
    return ctx.fail("only floating-point inputs are supported");
  Emitter e{ctx};
  auto r = body(e, *x);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// x < 0 ? negative(x) : positive(x)
FailureOr<Value> piecewise(Emitter &e, Value x, Value negative, Value positive,
                           double threshold = 0.0, bool strictlyAbove = false) {
  auto cond = strictlyAbove ? e.binary<k::GreaterOp>(x, e.constant(x, threshold),
                                                     e.ctx.b.getI1Type())
                            : e.binary<k::LessOp>(x, e.constant(x, threshold),
                                                  e.ctx.b.getI1Type());
  if (failed(cond))
    return failure();
  Value a = strictlyAbove ? positive : negative, b = strictlyAbove ? negative : positive;
  return k::WhereOp::create(e.ctx.b, e.ctx.loc, x.getType(), *cond, a, b).getResult();
}

LogicalResult importLeakyRelu(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 0.01f);
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    auto scaled = e.binary<k::MulOp>(x, e.constant(x, alpha));
    if (failed(scaled))
      return failure();
    return piecewise(e, x, *scaled, x);
  });
}

LogicalResult importPRelu(ImportContext &ctx) {
  auto slope = ctx.input(1);
  if (failed(slope))
    return failure();
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    // Before opset 7 a 1-D slope holds one value per channel (axis 1), not a
    // numpy-broadcast trailing axis.
    auto xShape = cast<RankedTensorType>(x.getType()).getShape();
    auto slopeShape = cast<RankedTensorType>(slope->getType()).getShape();
    if (ctx.opset < 7 && slopeShape.size() == 1 && xShape.size() > 2 && slopeShape[0] > 1) {
      SmallVector<int64_t> perChannel(xShape.size() - 1, 1);
      perChannel[0] = slopeShape[0];
      *slope = e.reshape(*slope, perChannel);
    }
    auto scaled = e.binary<k::MulOp>(x, *slope);
    if (failed(scaled))
      return failure();
    if (cast<RankedTensorType>(scaled->getType()) != cast<RankedTensorType>(x.getType()))
      return e.ctx.fail("slope must broadcast to the input shape");
    return piecewise(e, x, *scaled, x);
  });
}

/// alpha * (exp(x) - 1) for x < 0, optionally scaled by gamma (Selu).
FailureOr<Value> expLinear(Emitter &e, Value x, double alpha, double gamma, double divide) {
  Value in = x;
  if (divide != 1.0) {
    auto d = e.binary<k::DivOp>(x, e.constant(x, divide));
    if (failed(d))
      return failure();
    in = *d;
  }
  Value ex = e.unary<k::ExpOp>(in);
  auto m1 = e.binary<k::SubOp>(ex, e.constant(x, 1.0));
  if (failed(m1))
    return failure();
  auto neg = e.binary<k::MulOp>(*m1, e.constant(x, alpha * gamma));
  if (failed(neg))
    return failure();
  Value pos = x;
  if (gamma != 1.0) {
    auto p = e.binary<k::MulOp>(x, e.constant(x, gamma));
    if (failed(p))
      return failure();
    pos = *p;
  }
  return piecewise(e, x, *neg, pos);
}

LogicalResult importElu(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 1.0f);
  return importComposed(ctx, [&](Emitter &e, Value x) { return expLinear(e, x, alpha, 1.0, 1.0); });
}

LogicalResult importSelu(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 1.67326319217681884765625f);
  float gamma = ctx.attrFloat("gamma", 1.05070102214813232421875f);
  return importComposed(ctx,
                        [&](Emitter &e, Value x) { return expLinear(e, x, alpha, gamma, 1.0); });
}

/// Celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
LogicalResult importCelu(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 1.0f);
  return importComposed(ctx, [&](Emitter &e, Value x) { return expLinear(e, x, alpha, 1.0, alpha); });
}

LogicalResult importThresholdedRelu(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 1.0f);
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    return piecewise(e, x, e.constant(x, 0.0), x, alpha, /*strictlyAbove=*/true);
  });
}

/// BitwiseNot: kiln.not flips every bit of an integer (not a bool: ONNX Not).
LogicalResult importBitwiseNot(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Type et = getElementTypeOrSelf(x->getType());
  if (!et.isInteger() || et.isInteger(1))
    return ctx.fail("BitwiseNot needs an integer input");
  ctx.setOutput(0, Emitter{ctx}.unary<k::NotOp>(*x));
  return success();
}

/// Gelu(x) = x/2 * (1 + erf(x / sqrt 2)), or with approximate="tanh"
/// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
LogicalResult importGelu(ImportContext &ctx) {
  std::string approximate = ctx.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return ctx.fail("approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    FailureOr<Value> inner;
    if (approximate == "tanh") {
      auto cube = e.binary<k::MulOp>(x, *e.binary<k::MulOp>(x, x));
      auto poly = e.binary<k::AddOp>(x, *e.binary<k::MulOp>(*cube, e.constant(x, 0.044715)));
      inner = e.binary<k::MulOp>(*poly, e.constant(x, std::sqrt(2.0 / M_PI)));
      inner = e.unary<k::TanhOp>(*inner);
    } else {
      inner = e.unary<k::ErfOp>(*e.binary<k::MulOp>(x, e.constant(x, M_SQRT1_2)));
    }
    auto half = e.binary<k::MulOp>(x, e.constant(x, 0.5));
    return e.binary<k::MulOp>(*half, *e.binary<k::AddOp>(*inner, e.constant(x, 1.0)));
  });
}

/// Swish(x) = x * sigmoid(alpha * x).
LogicalResult importSwish(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 1.0f);
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    Value scaled = alpha == 1.0f ? x : *e.binary<k::MulOp>(x, e.constant(x, alpha));
    return e.binary<k::MulOp>(x, e.unary<k::SigmoidOp>(scaled));
  });
}

/// Softplus(x) = log(exp(x) + 1).
FailureOr<Value> softplus(Emitter &e, Value x) {
  auto s = e.binary<k::AddOp>(e.unary<k::ExpOp>(x), e.constant(x, 1.0));
  if (failed(s))
    return failure();
  return e.unary<k::LogOp>(*s);
}

LogicalResult importSoftplus(ImportContext &ctx) { return importComposed(ctx, softplus); }

LogicalResult importSoftsign(ImportContext &ctx) {
  return importComposed(ctx, [](Emitter &e, Value x) -> FailureOr<Value> {
    auto d = e.binary<k::AddOp>(e.unary<k::AbsOp>(x), e.constant(x, 1.0));
    if (failed(d))
      return failure();
    return e.binary<k::DivOp>(x, *d);
  });
}

/// Mish(x) = x * tanh(softplus(x)).
LogicalResult importMish(ImportContext &ctx) {
  return importComposed(ctx, [](Emitter &e, Value x) -> FailureOr<Value> {
    auto sp = softplus(e, x);
    if (failed(sp))
      return failure();
    return e.binary<k::MulOp>(x, e.unary<k::TanhOp>(*sp));
  });
}

/// clip(alpha * x + beta, 0, 1)
FailureOr<Value> hardSigmoid(Emitter &e, Value x, float alpha, float beta) {
  auto scaled = e.binary<k::MulOp>(x, e.constant(x, alpha));
  if (failed(scaled))
    return failure();
  auto shifted = e.binary<k::AddOp>(*scaled, e.constant(x, beta));
  if (failed(shifted))
    return failure();
  return k::ClipOp::create(e.ctx.b, e.ctx.loc, x.getType(), *shifted,
                           e.ctx.b.getF32FloatAttr(0.0f), e.ctx.b.getF32FloatAttr(1.0f))
      .getResult();
}

LogicalResult importHardSigmoid(ImportContext &ctx) {
  float alpha = ctx.attrFloat("alpha", 0.2f), beta = ctx.attrFloat("beta", 0.5f);
  return importComposed(ctx, [&](Emitter &e, Value x) { return hardSigmoid(e, x, alpha, beta); });
}

LogicalResult importHardSwish(ImportContext &ctx) {
  return importComposed(ctx, [](Emitter &e, Value x) -> FailureOr<Value> {
    auto hs = hardSigmoid(e, x, 1.0f / 6.0f, 0.5f);
    if (failed(hs))
      return failure();
    return e.binary<k::MulOp>(x, *hs);
  });
}

/// Shrink(x) = x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
LogicalResult importShrink(ImportContext &ctx) {
  float lambd = ctx.attrFloat("lambd", 0.5f), bias = ctx.attrFloat("bias", 0.0f);
  return importComposed(ctx, [&](Emitter &e, Value x) -> FailureOr<Value> {
    auto plus = e.binary<k::AddOp>(x, e.constant(x, bias));
    auto minus = e.binary<k::SubOp>(x, e.constant(x, bias));
    if (failed(plus) || failed(minus))
      return failure();
    auto upper = piecewise(e, x, e.constant(x, 0.0), *minus, lambd, /*strictlyAbove=*/true);
    if (failed(upper))
      return failure();
    return piecewise(e, x, *plus, *upper, -lambd);
  });
}

/// Identity and inference-mode Dropout forward their input.
LogicalResult importIdentity(ImportContext &ctx) {
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

LogicalResult importDropout(ImportContext &ctx) {
  if (ctx.node->output_size() > 1 && !ctx.node->output(1).empty()) {
    // The mask of an inference-mode Dropout is all true.
    auto x = ctx.input(0);
    if (failed(x))
      return failure();
    auto shape = cast<RankedTensorType>(x->getType()).getShape();
    auto type = RankedTensorType::get(shape, ctx.b.getI1Type());
    ctx.setOutput(1, mlir::kiln::ConstantOp::create(
                         ctx.b, ctx.loc, type, DenseElementsAttr::get(type, true)));
  }
  if (ctx.hasInput(2)) {
    const HostTensor *training = ctx.hostInput(2);
    if (!training || training->ints.empty() || training->ints[0] != 0)
      return ctx.fail("training-mode Dropout is not supported (inference only)");
  }
  return importIdentity(ctx);
}

LogicalResult importBitShift(ImportContext &ctx) {
  std::string direction = ctx.attrString("direction");
  if (direction == "LEFT")
    return importBinary<k::ShiftLeftOp>(ctx);
  if (direction == "RIGHT")
    return importBinary<k::ShiftRightOp>(ctx);
  return ctx.fail("direction must be LEFT or RIGHT");
}

/// IsNaN(x) = !(x == x).
LogicalResult importIsNaN(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Emitter e{ctx};
  auto same = e.binary<k::EqualOp>(*x, *x, ctx.b.getI1Type());
  if (failed(same))
    return failure();
  ctx.setOutput(0, e.unary<k::NotOp>(*same));
  return success();
}

/// IsInf(x) = x == +inf (detect_positive) or x == -inf (detect_negative).
LogicalResult importIsInf(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(x->getType())))
    return ctx.fail("IsInf needs a floating-point input");
  Emitter e{ctx};
  Value r;
  for (auto [attr, sign] : {std::pair{"detect_positive", 1.0}, std::pair{"detect_negative", -1.0}}) {
    if (!ctx.attrInt(attr, 1))
      continue;
    auto hit = e.binary<k::EqualOp>(*x, e.constant(*x, sign * INFINITY), ctx.b.getI1Type());
    if (failed(hit))
      return failure();
    if (r) {
      hit = e.binary<k::OrOp>(r, *hit);
      if (failed(hit))
        return failure();
    }
    r = *hit;
  }
  if (!r) { // neither sign: all false
    auto f = e.binary<k::EqualOp>(*x, e.constant(*x, NAN), ctx.b.getI1Type());
    if (failed(f))
      return failure();
    r = *f;
  }
  ctx.setOutput(0, r);
  return success();
}

} // namespace

void registerMathOps(ImportTable &t) {
  t["BitShift"] = importBitShift;
  t["IsNaN"] = importIsNaN;
  t["IsInf"] = importIsInf;
  t["Add"] = importBinary<k::AddOp>;
  t["Sub"] = importBinary<k::SubOp>;
  t["Mul"] = importBinary<k::MulOp>;
  t["Div"] = importBinary<k::DivOp>;
  t["Pow"] = importPow;
  t["Mod"] = importMod;
  t["And"] = importBinary<k::AndOp>;
  t["Or"] = importBinary<k::OrOp>;
  t["Xor"] = importBinary<k::XorOp>;
  t["BitwiseAnd"] = importBinary<k::AndOp>;
  t["BitwiseOr"] = importBinary<k::OrOp>;
  t["BitwiseXor"] = importBinary<k::XorOp>;
  t["BitwiseNot"] = importBitwiseNot;
  t["Equal"] = importCompare<k::EqualOp>;
  t["Less"] = importCompare<k::LessOp>;
  t["LessOrEqual"] = importCompare<k::LessEqualOp>;
  t["Greater"] = importCompare<k::GreaterOp>;
  t["GreaterOrEqual"] = importCompare<k::GreaterEqualOp>;
  t["Where"] = importWhere;
  t["Max"] = importVariadic<k::MaxOp>;
  t["Min"] = importVariadic<k::MinOp>;
  t["Sum"] = importVariadic<k::AddOp>;
  t["Mean"] = importVariadic<k::AddOp, true>;
  t["Relu"] = importUnary<k::ReluOp, false>;
  t["Neg"] = importUnary<k::NegOp, false>;
  t["Abs"] = importUnary<k::AbsOp, false>;
  t["Sign"] = importUnary<k::SignOp, false>;
  t["Not"] = importUnary<k::NotOp, false>;
  t["Sigmoid"] = importUnary<k::SigmoidOp>;
  t["Tanh"] = importUnary<k::TanhOp>;
  t["Exp"] = importUnary<k::ExpOp>;
  t["Log"] = importUnary<k::LogOp>;
  t["Erf"] = importUnary<k::ErfOp>;
  t["Sqrt"] = importUnary<k::SqrtOp>;
  t["Reciprocal"] = importUnary<k::ReciprocalOp>;
  t["Ceil"] = importUnary<k::CeilOp>;
  t["Floor"] = importUnary<k::FloorOp>;
  t["Round"] = importUnary<k::RoundOp>;
  t["Sin"] = importUnary<k::SinOp>;
  t["Cos"] = importUnary<k::CosOp>;
  t["Tan"] = importUnary<k::TanOp>;
  t["Asin"] = importUnary<k::AsinOp>;
  t["Acos"] = importUnary<k::AcosOp>;
  t["Atan"] = importUnary<k::AtanOp>;
  t["Sinh"] = importUnary<k::SinhOp>;
  t["Cosh"] = importUnary<k::CoshOp>;
  t["Asinh"] = importUnary<k::AsinhOp>;
  t["Acosh"] = importUnary<k::AcoshOp>;
  t["Atanh"] = importUnary<k::AtanhOp>;
  t["Clip"] = importClip;
  t["LeakyRelu"] = importLeakyRelu;
  t["PRelu"] = importPRelu;
  t["Elu"] = importElu;
  t["Selu"] = importSelu;
  t["Celu"] = importCelu;
  t["ThresholdedRelu"] = importThresholdedRelu;
  t["Softplus"] = importSoftplus;
  t["Softsign"] = importSoftsign;
  t["Mish"] = importMish;
  t["Gelu"] = importGelu;
  t["Swish"] = importSwish;
  t["HardSigmoid"] = importHardSigmoid;
  t["HardSwish"] = importHardSwish;
  t["Shrink"] = importShrink;
  t["Identity"] = importIdentity;
  t["Dropout"] = importDropout;
}

} // namespace kiln::onnx_frontend
