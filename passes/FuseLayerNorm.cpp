//===- FuseLayerNorm.cpp - a layer norm written out in ops, as one op -----===//
//
// Before opset 17 ONNX had no LayerNormalization, so exporters (torch.onnx,
// Paddle2ONNX, keras2onnx) write one out as
//   mean = ReduceMean(x), c = x - mean, var = ReduceMean(c^2),
//   y = c / Sqrt(var + eps) [* scale] [+ bias].
// As nine ops it is nine loops or kernels; as kiln.layer_norm it is one
// normalization (on a GPU, one kernel per row: kiln-gpu-normalize-rows).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSELAYERNORM
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The operands of the kiln.layer_norm a chain becomes, and the ops it
/// replaces, first to last.
struct LayerNormChain {
  Value input, scale, bias;
  int64_t axis = 0;
  float epsilon = 0;
  SmallVector<Operation *> ops;
  Value result() const { return ops.back()->getResult(0); }
};

/// The other operand of a binary `op` of which `v` is one.
Value otherOperand(Operation *op, Value v) {
  return op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0);
}

/// The only user of `v`, or null.
Operation *soleUser(Value v) { return v.hasOneUse() ? *v.user_begin() : nullptr; }

/// The centering `x - mean` that makes `mean` = ReduceMean(x) the start of a
/// layer norm, or null when it is not one.
SubOp centeringOf(ReduceMeanOp mean) {
  for (Operation *user : mean->getUsers())
    if (auto sub = dyn_cast<SubOp>(user);
        sub && sub.getLhs() == mean.getInput() && sub.getRhs() == mean.getResult())
      return sub;
  return SubOp();
}

/// The dimensions `mean` reduces, in increasing order (a model may list
/// them in any).
SmallVector<int64_t> sortedAxes(ReduceMeanOp mean) {
  SmallVector<int64_t> axes(mean.getAxes());
  llvm::sort(axes);
  return axes;
}

/// The axis from which `mean` reduces every dimension, kept as size 1.
FailureOr<int64_t> normalizedAxis(ReduceMeanOp mean, std::string &why) {
  if (!mean.getKeepdims()) {
    why = "the mean is not kept as dimensions of size 1";
    return failure();
  }
  int64_t rank = shapeOf(mean.getInput()).size();
  SmallVector<int64_t> axes = sortedAxes(mean);
  int64_t axis = rank - (int64_t)axes.size();
  if (axes.empty() || axes != llvm::to_vector(llvm::seq<int64_t>(axis, rank))) {
    why = "the mean is not over the trailing dimensions";
    return failure();
  }
  return axis;
}

/// Whether `square` is `c`^2: Pow(c, 2) or Mul(c, c).
bool isSquareOf(Operation *square, Value c) {
  if (auto pow = dyn_cast<PowOp>(square))
    return pow.getLhs() == c && f32Scalar(pow.getRhs()) == 2.0f;
  auto mul = dyn_cast<MulOp>(square);
  return mul && mul.getLhs() == c && mul.getRhs() == c;
}

/// Matches var = ReduceMean(c^2) over the axes of `mean`, then
/// Sqrt(var + eps); returns the square root and fills the chain's epsilon.
FailureOr<SqrtOp> matchDeviation(ReduceMeanOp mean, SubOp centered, LayerNormChain &chain,
                                 std::string &why) {
  Operation *square = nullptr;
  for (Operation *user : centered->getUsers())
    if (isSquareOf(user, centered))
      square = user;
  auto var = square ? dyn_cast_or_null<ReduceMeanOp>(soleUser(square->getResult(0)))
                    : ReduceMeanOp();
  if (!var || sortedAxes(var) != sortedAxes(mean) || !var.getKeepdims()) {
    why = "the centered values' squares are not averaged over the same dimensions";
    return failure();
  }
  auto varEps = dyn_cast_or_null<AddOp>(soleUser(var));
  std::optional<float> eps = varEps ? f32Scalar(otherOperand(varEps, var)) : std::nullopt;
  if (!eps) {
    why = "no one-element f32 constant epsilon is added to the variance";
    return failure();
  }
  auto sqrt = dyn_cast_or_null<SqrtOp>(soleUser(varEps));
  if (!sqrt) {
    why = "the variance plus epsilon has no square root of its own";
    return failure();
  }
  chain.epsilon = *eps;
  chain.ops.append({square, var, varEps, sqrt});
  return sqrt;
}

/// Matches c / std, or c * Reciprocal(std), and appends it to the chain.
LogicalResult matchNormalization(SubOp centered, SqrtOp sqrt, LayerNormChain &chain,
                                 std::string &why) {
  Operation *user = soleUser(sqrt);
  if (auto div = dyn_cast_or_null<DivOp>(user); div && div.getLhs() == centered.getResult() &&
                                                div.getRhs() == sqrt.getResult()) {
    chain.ops.push_back(div);
    return success();
  }
  if (auto reciprocal = dyn_cast_or_null<ReciprocalOp>(user)) {
    auto mul = dyn_cast_or_null<MulOp>(soleUser(reciprocal));
    if (mul && otherOperand(mul, reciprocal) == centered.getResult()) {
      chain.ops.append({reciprocal, mul});
      return success();
    }
  }
  why = "the centered values are not divided by the square root of the variance plus epsilon";
  return failure();
}

/// Whether `v` holds one value per normalized element at most: a static
/// shape whose dimensions before `axis` (numpy-aligned with `x`) are 1 and
/// whose others are 1 or those of `x`.
bool isPerNormalizedElement(Value v, Value x, int64_t axis) {
  ArrayRef<int64_t> shape = shapeOf(v), xShape = shapeOf(x);
  if (ShapedType::isDynamicShape(shape) || shape.size() > xShape.size())
    return false;
  int64_t offset = xShape.size() - shape.size();
  for (auto [i, dim] : llvm::enumerate(shape)) {
    int64_t at = offset + i;
    if (dim != 1 && (at < axis || dim != xShape[at]))
      return false;
  }
  return true;
}

/// Extends the chain by the op that uses its result, an `OpTy` (Mul for the
/// scale, Add for the bias) of a value per normalized element, if there is
/// one; returns that value.
template <typename OpTy>
Value matchAffine(LayerNormChain &chain) {
  Value r = chain.result();
  auto op = dyn_cast_or_null<OpTy>(soleUser(r));
  if (!op || op.getType() != r.getType())
    return Value();
  Value operand = otherOperand(op, r);
  if (operand == r || !isPerNormalizedElement(operand, chain.input, chain.axis))
    return Value();
  chain.ops.push_back(op);
  return operand;
}

/// Matches the layer norm that starts with `mean`, centered by `centered`.
FailureOr<LayerNormChain> matchLayerNorm(ReduceMeanOp mean, SubOp centered, std::string &why) {
  LayerNormChain chain;
  chain.input = mean.getInput();
  auto type = cast<RankedTensorType>(chain.input.getType());
  if (!type.getElementType().isF32()) {
    why = "its input is not f32";
    return failure();
  }
  FailureOr<int64_t> axis = normalizedAxis(mean, why);
  if (failed(axis))
    return failure();
  chain.axis = *axis;
  if (!mean->hasOneUse()) {
    why = "the mean has other users";
    return failure();
  }
  if (centered.getType() != type) {
    why = "the centered values do not have the input's type";
    return failure();
  }
  chain.ops = {mean, centered};
  FailureOr<SqrtOp> sqrt = matchDeviation(mean, centered, chain, why);
  if (failed(sqrt) || failed(matchNormalization(centered, *sqrt, chain, why)))
    return failure();
  // The centered values feed their square and the normalization only.
  for (Operation *user : centered->getUsers())
    if (user != chain.ops[2] && user != chain.ops.back()) {
      why = "the centered values have other users";
      return failure();
    }
  if (chain.result().getType() != type) {
    why = "the normalized values do not have the input's type";
    return failure();
  }
  chain.scale = matchAffine<MulOp>(chain);
  chain.bias = matchAffine<AddOp>(chain);
  return chain;
}

/// `v` (see isPerNormalizedElement) at most as many dimensions as are
/// normalized: leading 1s dropped, as kiln.layer_norm's verifier asks.
Value atNormalizedRank(OpBuilder &b, Location loc, Value v, const LayerNormChain &chain) {
  ArrayRef<int64_t> shape = shapeOf(v);
  size_t normalized = shapeOf(chain.input).size() - chain.axis;
  if (shape.size() <= normalized)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  return ReshapeOp::create(b, loc, type.clone(shape.take_back(normalized)), v);
}

/// Replaces the chain by one kiln.layer_norm (a scale of one 1.0 when the
/// chain has none). It takes the location of the op whose result it is, so
/// reports and profiles name it by that node.
void fuse(const LayerNormChain &chain) {
  Operation *last = chain.ops.back();
  OpBuilder b(last);
  Location loc = last->getLoc();
  Value scale = chain.scale;
  if (scale) {
    scale = atNormalizedRank(b, loc, scale, chain);
  } else {
    auto one = RankedTensorType::get({1}, b.getF32Type());
    scale = ConstantOp::create(b, loc, one, DenseElementsAttr::get(one, 1.0f));
  }
  Value bias = chain.bias ? atNormalizedRank(b, loc, chain.bias, chain) : Value();
  auto norm = LayerNormOp::create(b, loc, last->getResult(0).getType(), chain.input, scale, bias,
                                  b.getI64IntegerAttr(chain.axis),
                                  b.getF32FloatAttr(chain.epsilon));
  last->getResult(0).replaceAllUsesWith(norm.getResult());
  // The chain's constants (its epsilon, Pow's 2) go with it.
  SetVector<Operation *> constants;
  for (Operation *op : chain.ops)
    for (Value operand : op->getOperands())
      if (auto constant = operand.getDefiningOp<ConstantOp>())
        constants.insert(constant);
  for (Operation *op : llvm::reverse(chain.ops))
    op->erase();
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
}

/// "mean (ReduceMean), center (Sub), ...", first to last; a node the
/// importer wrote as several ops (InstanceNormalization) once.
std::string fusedNodes(const LayerNormChain &chain) {
  SmallVector<std::string> names;
  for (Operation *op : chain.ops)
    if (std::string name = describeNode(op); names.empty() || names.back() != name)
      names.push_back(name);
  return llvm::join(names, ", ");
}

struct KilnFuseLayerNormPass : mlir::kiln::impl::KilnFuseLayerNormBase<KilnFuseLayerNormPass> {
  using KilnFuseLayerNormBase::KilnFuseLayerNormBase;

  void runOnOperation() override {
    SmallVector<ReduceMeanOp> means;
    getOperation().walk([&](ReduceMeanOp op) { means.push_back(op); });
    // Each chain erases two means: its own and its variance.
    DenseSet<Operation *> erased;
    for (ReduceMeanOp mean : means) {
      if (erased.contains(mean))
        continue;
      SubOp centered = centeringOf(mean);
      if (!centered)
        continue;
      Location loc = mean.getLoc();
      std::string why;
      FailureOr<LayerNormChain> chain = matchLayerNorm(mean, centered, why);
      if (failed(chain)) {
        if (report)
          emitRemark(loc) << "fusion: not fused into a layer norm: " << why;
        continue;
      }
      if (report)
        emitRemark(loc) << "fusion: layer norm of " << chain->ops.size()
                        << " ops: " << fusedNodes(*chain);
      erased.insert(chain->ops.begin(), chain->ops.end());
      fuse(*chain);
    }
  }
};
} // namespace
