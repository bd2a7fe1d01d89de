//===- QuantizeStatic.cpp - int8 matmuls with calibrated activations ------===//
//
// Static post-training quantization: like kiln-quantize-dynamic, but each
// activation's uint8 scale and zero point are fixed at compile time from the
// range that calibration observed (the `kiln.activation_range` attribute the
// driver sets), so quantizing costs one fused elementwise pass and the zero
// point's correction folds into constants. The product is Quantization.cpp's.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/Quantization.h"

#include <cstdio>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNQUANTIZESTATIC
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// kiln.quantize of `x` to uint8 with `scale` and `zeroPoint` (in its
/// type), viewed as ui8, with the rank-0 constants the int8 product reads.
QuantizedActivations quantizeFixed(OpBuilder &b, Location loc, Value x, float scale,
                                   uint8_t zeroPoint) {
  auto xType = cast<RankedTensorType>(x.getType());
  Type f32 = b.getF32Type(), u8 = b.getIntegerType(8, false);
  auto quantType = quant::UniformQuantizedType::get(0, b.getIntegerType(8), f32, scale,
                                                    zeroPoint, 0, 255);
  Value q = QuantizeOp::create(b, loc, RankedTensorType::get(xType.getShape(), quantType), x);
  q = StorageCastOp::create(b, loc, RankedTensorType::get(xType.getShape(), u8), q);
  return QuantizedActivations::fixed(b, loc, q, scale, zeroPoint);
}

struct KilnQuantizeStaticPass : mlir::kiln::impl::KilnQuantizeStaticBase<KilnQuantizeStaticPass> {
  using KilnQuantizeStaticBase::KilnQuantizeStaticBase;

  void runOnOperation() override {
    for (Operation *op : quantizableOps(getOperation())) {
      Location loc = op->getLoc();
      StringRef kind = quantKind(op);
      std::string why, how;
      FailureOr<Value> activation = int8Activation(op, why);
      auto range = op->getAttrOfType<DenseF32ArrayAttr>(kActivationRangeAttr);
      if (succeeded(activation) && (!range || range.size() != 2)) {
        why = "its activations were not calibrated";
        activation = failure();
      }
      if (succeeded(activation)) {
        auto [scale, zeroPoint] = uint8Parameters(range[0], range[1]);
        if (scale == 0) {
          why = "its activations were all zero in calibration";
          activation = failure();
        } else {
          OpBuilder b(op);
          QuantizedActivations q = quantizeFixed(b, loc, *activation, scale, zeroPoint);
          if (isa<ConvOp>(op))
            replaceConvWithInt8(op, q.values, scale, zeroPoint);
          else
            replaceWithInt8(*constantWeightMatmul(op, why), q);
          char text[160];
          snprintf(text, sizeof text, "activations in [%.4g, %.4g]: scale %.4g, zero point %d",
                   range[0], range[1], scale, zeroPoint);
          how = text;
        }
      }
      if (!report)
        continue;
      if (succeeded(activation))
        emitRemark(loc) << "quant: " << kind << " runs in int8 (weights per output channel, "
                        << how << ")";
      else
        emitRemark(loc) << "quant: " << kind << " stays f32: " << why;
    }
  }
};
} // namespace
