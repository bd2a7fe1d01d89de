//===- ConvertToBF16.cpp - matmuls in bf16 with f32 sums ------------------===//
//
// --precision=bf16: a matmul or gemm with constant f32 weights, and a 2-D
// convolution without groups with a constant f32 filter, take bf16 operands
// and sum in f32 (the widening kiln.matmul / kiln.conv): the weights are
// rounded to bf16 at compile time (half their bytes), the activations by a
// cast at run time. kiln-cpu-vnni-matmul runs the products on AMX-BF16 tiles or
// vdpbf16ps (two multiply-adds per lane and instruction). bf16
// keeps f32's exponent range and 8 bits of mantissa, so no calibration is
// needed; elementwise ops, softmax and normalizations stay f32.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/Quantization.h"

#include <cstring>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCONVERTTOBF16
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// f32 -> bf16 bits, rounding to nearest even (values are finite weights).
uint16_t toBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

void convert(const ConstantWeightMatmul &c) {
  OpBuilder b(c.op);
  Location loc = c.op->getLoc();
  auto resultType = cast<RankedTensorType>(c.op->getResult(0).getType());
  std::vector<float> values = *f32Elements(c.weights);
  std::vector<uint16_t> weights(c.k * c.n);
  for (int64_t row = 0; row < c.k; ++row)
    for (int64_t col = 0; col < c.n; ++col)
      weights[row * c.n + col] =
          toBF16(c.transposed ? values[col * c.k + row] : values[row * c.n + col]);
  Type bf16 = b.getBF16Type();
  auto xType = cast<RankedTensorType>(c.activation.getType());
  Value x = CastOp::create(b, loc, RankedTensorType::get(xType.getShape(), bf16), c.activation);
  Value w = blobConstant(b, loc, RankedTensorType::get({c.k, c.n}, bf16), ArrayRef(weights),
                         "bf16_weight");
  Value y = MatMulOp::create(b, loc, resultType, x, w);
  c.op->getResult(0).replaceAllUsesWith(gemmEpilogue(b, loc, c, y, /*alphaApplied=*/false));
  c.op->erase();
}

/// The convolution on bf16 input and filter with f32 sums, then its bias.
void convertConv(ConvOp conv) {
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
  std::vector<float> values = *f32Elements(conv.getFilter().getDefiningOp<ConstantOp>().getValue());
  std::vector<uint16_t> filter(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    filter[i] = toBF16(values[i]);
  Type bf16 = b.getBF16Type();
  auto xType = cast<RankedTensorType>(conv.getInput().getType());
  Value x = CastOp::create(b, loc, RankedTensorType::get(xType.getShape(), bf16), conv.getInput());
  Value w = blobConstant(b, loc, RankedTensorType::get(filterType.getShape(), bf16),
                         ArrayRef(filter), "bf16_filter");
  auto resultType = cast<RankedTensorType>(conv.getType());
  Value y = ConvOp::create(b, loc, resultType, x, w, Value(), conv.getStridesAttr(),
                           conv.getDilationsAttr(), conv.getPadsAttr(), conv.getGroupAttr());
  if (Value bias = conv.getBias()) {
    auto perChannel = RankedTensorType::get({filterType.getDimSize(0), 1, 1}, b.getF32Type());
    y = AddOp::create(b, loc, resultType, y, ReshapeOp::create(b, loc, perChannel, bias).getResult());
  }
  conv.getResult().replaceAllUsesWith(y);
  conv.erase();
}

struct KilnConvertToBF16Pass : mlir::kiln::impl::KilnConvertToBF16Base<KilnConvertToBF16Pass> {
  using KilnConvertToBF16Base::KilnConvertToBF16Base;

  void runOnOperation() override {
    rewriteConstantWeightMatmuls(getOperation(), report, "runs in bf16 (f32 sums)", convert);
    // Convolutions qualify as for int8: group 1, a constant f32 filter,
    // static shapes.
    SmallVector<ConvOp> convs;
    getOperation()->walk([&](ConvOp conv) { convs.push_back(conv); });
    for (ConvOp conv : convs) {
      std::string why;
      Location loc = conv.getLoc();
      bool eligible = succeeded(int8Activation(conv, why));
      if (eligible)
        convertConv(conv);
      if (!report)
        continue;
      if (eligible)
        emitRemark(loc) << "quant: conv runs in bf16 (f32 sums)";
      else
        emitRemark(loc) << "quant: conv stays f32: " << why;
    }
  }
};
} // namespace
