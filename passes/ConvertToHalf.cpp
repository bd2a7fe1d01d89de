//===- ConvertToHalf.cpp - matmuls in bf16 or f16 with f32 sums -----------===//
//
// --precision=bf16 and --precision=f16: a matmul or gemm with constant f32
// weights, and a 2-D convolution without groups with a constant f32 filter,
// take 16-bit operands and sum in f32 (the widening kiln.matmul /
// kiln.conv): the weights are rounded at compile time (half their bytes),
// the activations by a cast at run time. On the CPU, kiln-cpu-vnni-matmul
// runs bf16 products on AMX-BF16 tiles or vdpbf16ps; on CUDA both types run
// on the tensor cores. bf16 keeps f32's exponent range and 8 bits of
// mantissa, so no calibration is needed; f16 keeps 11 bits of mantissa but
// only reaches 65504, so an op whose weights do not fit stays f32 (the
// activations' range is the user's to know). Elementwise ops, softmax and
// normalizations stay f32.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/Quantization.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCONVERTTOHALF
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The 16-bit weights of one op, rounded to nearest even.
struct HalfWeights {
  std::vector<uint16_t> bits;
  bool overflowed = false; // a finite weight became infinite
};

HalfWeights round(ArrayRef<float> values, const llvm::fltSemantics &semantics) {
  HalfWeights weights;
  weights.bits.reserve(values.size());
  for (float value : values) {
    llvm::APFloat half(value);
    bool lost;
    half.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
    weights.overflowed |= half.isInfinity() && std::isfinite(value);
    weights.bits.push_back(half.bitcastToAPInt().getZExtValue());
  }
  return weights;
}

struct KilnConvertToHalfPass : mlir::kiln::impl::KilnConvertToHalfBase<KilnConvertToHalfPass> {
  using KilnConvertToHalfBase::KilnConvertToHalfBase;

  Type half;
  const llvm::fltSemantics *semantics = nullptr;

  LogicalResult initialize(MLIRContext *context) override {
    if (type == "bf16") {
      half = BFloat16Type::get(context);
      semantics = &llvm::APFloat::BFloat();
    } else if (type == "f16") {
      half = Float16Type::get(context);
      semantics = &llvm::APFloat::IEEEhalf();
    } else {
      return emitError(UnknownLoc::get(context))
             << "kiln-convert-to-half: unknown type '" << type << "' (expected bf16 or f16)";
    }
    return success();
  }

  /// Why `weights` cannot be used, or nothing.
  std::optional<std::string> whyNot(const HalfWeights &weights) const {
    if (!weights.overflowed)
      return std::nullopt;
    llvm::SmallString<16> largest;
    llvm::APFloat::getLargest(*semantics).toString(largest);
    return "a weight is beyond " + type + "'s range (" + largest.str().str() + ")";
  }

  LogicalResult convertMatmul(const ConstantWeightMatmul &c, std::string &why) const {
    std::vector<float> values = *f32Elements(c.weights);
    std::vector<float> ordered(c.k * c.n);
    for (int64_t row = 0; row < c.k; ++row)
      for (int64_t col = 0; col < c.n; ++col)
        ordered[row * c.n + col] = c.transposed ? values[col * c.k + row] : values[row * c.n + col];
    HalfWeights weights = round(ordered, *semantics);
    if (std::optional<std::string> reason = whyNot(weights)) {
      why = *reason;
      return failure();
    }
    OpBuilder b(c.op);
    Location loc = c.op->getLoc();
    auto resultType = cast<RankedTensorType>(c.op->getResult(0).getType());
    auto xType = cast<RankedTensorType>(c.activation.getType());
    Value x = CastOp::create(b, loc, RankedTensorType::get(xType.getShape(), half), c.activation);
    Value w = blobConstant(b, loc, RankedTensorType::get({c.k, c.n}, half),
                           ArrayRef(weights.bits), type + "_weight");
    Value y = MatMulOp::create(b, loc, resultType, x, w);
    c.op->getResult(0).replaceAllUsesWith(gemmEpilogue(b, loc, c, y, /*alphaApplied=*/false));
    c.op->erase();
    return success();
  }

  /// The convolution on 16-bit input and filter with f32 sums, then its bias.
  LogicalResult convertConv(ConvOp conv, std::string &why) const {
    HalfWeights filter =
        round(*f32Elements(conv.getFilter().getDefiningOp<ConstantOp>().getValue()), *semantics);
    if (std::optional<std::string> reason = whyNot(filter)) {
      why = *reason;
      return failure();
    }
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
    auto xType = cast<RankedTensorType>(conv.getInput().getType());
    Value x = CastOp::create(b, loc, RankedTensorType::get(xType.getShape(), half), conv.getInput());
    Value w = blobConstant(b, loc, RankedTensorType::get(filterType.getShape(), half),
                           ArrayRef(filter.bits), type + "_filter");
    auto resultType = cast<RankedTensorType>(conv.getType());
    Value y = ConvOp::create(b, loc, resultType, x, w, Value(), conv.getStridesAttr(),
                             conv.getDilationsAttr(), conv.getPadsAttr(), conv.getGroupAttr());
    if (Value bias = conv.getBias()) {
      auto perChannel =
          RankedTensorType::get({filterType.getDimSize(0), 1, 1}, b.getF32Type());
      y = AddOp::create(b, loc, resultType, y,
                        ReshapeOp::create(b, loc, perChannel, bias).getResult());
    }
    conv.getResult().replaceAllUsesWith(y);
    conv.erase();
    return success();
  }

  void runOnOperation() override {
    std::string done = "runs in " + type + " (f32 sums)";
    rewriteConstantWeightMatmuls(getOperation(), report, done,
                                 [&](const ConstantWeightMatmul &c, std::string &why) {
                                   return convertMatmul(c, why);
                                 });
    // Convolutions qualify as for int8: group 1, a constant f32 filter,
    // static shapes.
    SmallVector<ConvOp> convs;
    getOperation()->walk([&](ConvOp conv) { convs.push_back(conv); });
    for (ConvOp conv : convs) {
      std::string why;
      Location loc = conv.getLoc();
      bool converted = succeeded(int8Activation(conv, why)) && succeeded(convertConv(conv, why));
      if (!report)
        continue;
      if (converted)
        emitRemark(loc) << "quant: conv " << done;
      else
        emitRemark(loc) << "quant: conv stays f32: " << why;
    }
  }
};
} // namespace
