//===- WeightMatrix.cpp - constant weights seen as a [K, N] matrix --------===//
#include "passes/WeightMatrix.h"
#include "passes/Quantization.h"

using namespace mlir;
using namespace mlir::kiln;

std::optional<WeightMatrix> mlir::kiln::weightMatrixOf(Operation *layer, std::string &why) {
  auto conv = dyn_cast<ConvOp>(layer);
  if (!conv) {
    FailureOr<ConstantWeightMatmul> matmul = constantWeightMatmul(layer, why);
    if (failed(matmul))
      return std::nullopt;
    return weightMatrixOf(*matmul);
  }
  auto type = cast<RankedTensorType>(conv.getFilter().getType());
  auto constant = conv.getFilter().getDefiningOp<ConstantOp>();
  std::optional<std::vector<float>> values =
      constant && type.hasStaticShape() ? f32Elements(constant.getValue()) : std::nullopt;
  if (!values) {
    why = "its filter is not an f32 constant of static shape";
    return std::nullopt;
  }
  int64_t filters = type.getDimSize(0);
  return WeightMatrix{layer,
                      1,
                      type.getNumElements() / std::max<int64_t>(filters, 1),
                      filters,
                      /*outputMajor=*/true,
                      std::move(*values),
                      /*window=*/type.getDimSize(2) * type.getDimSize(3),
                      /*groups=*/static_cast<int64_t>(conv.getGroup())};
}

WeightMatrix mlir::kiln::weightMatrixOf(const ConstantWeightMatmul &matmul) {
  return WeightMatrix{matmul.op, 1, matmul.k, matmul.n, matmul.transposed,
                      *f32Elements(matmul.weights)};
}
