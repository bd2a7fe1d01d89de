//===- FoldBatchNorm.cpp - BatchNormalization folded into Conv ------------===//
//
// Inference batch norm is an affine map per channel, so after a convolution
// it folds into the convolution's weights and bias at compile time:
//   y = (conv(x, W) + b - mean) * s + bias,  s = scale / sqrt(var + eps)
//     = conv(x, W * s) + ((b - mean) * s + bias).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFOLDBATCHNORM
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The f32 elements of `v` when it is a kiln.constant.
std::optional<std::vector<float>> constantValues(Value v) {
  if (!v)
    return std::nullopt;
  auto constant = v.getDefiningOp<ConstantOp>();
  return constant ? f32Elements(constant.getValue()) : std::nullopt;
}

Value f32Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  const std::vector<float> &values, StringRef name) {
  return blobConstant(b, loc, RankedTensorType::get(shape, b.getF32Type()), ArrayRef(values),
                      name);
}

/// Folds `bn` into the conv feeding it, or returns why it cannot.
FailureOr<ConvOp> fold(BatchNormOp bn, std::string &why) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  if (!conv) {
    why = "its input is not a convolution";
    return failure();
  }
  if (!conv->hasOneUse()) {
    why = "the convolution has other users";
    return failure();
  }
  auto weights = constantValues(conv.getFilter());
  auto scale = constantValues(bn.getScale()), shift = constantValues(bn.getBias());
  auto mean = constantValues(bn.getMean()), var = constantValues(bn.getVariance());
  std::optional<std::vector<float>> bias =
      conv.getBias() ? constantValues(conv.getBias()) : std::nullopt;
  if (!weights || !scale || !shift || !mean || !var || (conv.getBias() && !bias)) {
    why = "the weights or batch-norm parameters are not f32 constants";
    return failure();
  }
  auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
  size_t channels = filterType.getDimSize(0);
  if (scale->size() != channels || shift->size() != channels || mean->size() != channels ||
      var->size() != channels) {
    why = "the batch-norm parameters do not have one value per output channel";
    return failure();
  }
  if (!bias)
    bias = std::vector<float>(channels, 0.0f);
  size_t perChannel = weights->size() / channels;
  float eps = bn.getEpsilon().convertToFloat();
  for (size_t f = 0; f < channels; ++f) {
    float s = (*scale)[f] / std::sqrt((*var)[f] + eps);
    for (size_t i = 0; i < perChannel; ++i)
      (*weights)[f * perChannel + i] *= s;
    (*bias)[f] = ((*bias)[f] - (*mean)[f]) * s + (*shift)[f];
  }
  OpBuilder b(bn);
  Location loc = conv.getLoc();
  Value filter = f32Constant(b, loc, filterType.getShape(), *weights, "folded_bn_weight");
  Value newBias = f32Constant(b, loc, {(int64_t)channels}, *bias, "folded_bn_bias");
  auto folded = ConvOp::create(b, loc, bn.getType(), conv.getInput(), filter, newBias,
                               conv.getStridesAttr(), conv.getDilationsAttr(),
                               conv.getPadsAttr(), conv.getGroupAttr());
  bn.replaceAllUsesWith(folded.getResult());
  bn.erase();
  conv.erase();
  return folded;
}

struct KilnFoldBatchNormPass : mlir::kiln::impl::KilnFoldBatchNormBase<KilnFoldBatchNormPass> {
  using KilnFoldBatchNormBase::KilnFoldBatchNormBase;

  void runOnOperation() override {
    SmallVector<BatchNormOp> norms;
    getOperation().walk([&](BatchNormOp bn) { norms.push_back(bn); });
    for (BatchNormOp bn : norms) {
      Location loc = bn.getLoc();
      std::string why;
      FailureOr<ConvOp> folded = fold(bn, why);
      if (!report)
        continue;
      if (succeeded(folded))
        emitRemark(loc) << "fusion: folded into the convolution that feeds it";
      else
        emitRemark(loc) << "fusion: not folded into a convolution: " << why;
    }
  }
};
} // namespace
