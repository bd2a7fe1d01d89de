//===- QuantizeDynamic.cpp - int8 matmuls, activations quantized at run time ===//
//
// Dynamic quantization (onnxruntime's quantize_dynamic): the weights of a
// matmul become int8 at compile time, symmetric per output column, and its
// activations become uint8 per tensor at run time from their observed range
// (kiln.dynamic_quantize). The product is Quantization.cpp's.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/Quantization.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNQUANTIZEDYNAMIC
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct KilnQuantizeDynamicPass
    : mlir::kiln::impl::KilnQuantizeDynamicBase<KilnQuantizeDynamicPass> {
  using KilnQuantizeDynamicBase::KilnQuantizeDynamicBase;

  void runOnOperation() override {
    rewriteConstantWeightMatmuls(
        getOperation(), report,
        "runs in int8 (weights per column, activations per tensor at run time)",
        [](const ConstantWeightMatmul &c, std::string &) {
          OpBuilder b(c.op);
          auto xType = cast<RankedTensorType>(c.activation.getType());
          auto scalar = [&](Type t) { return RankedTensorType::get({}, t); };
          Type u8 = b.getIntegerType(8, false);
          auto q = DynamicQuantizeOp::create(b, c.op->getLoc(),
                                             RankedTensorType::get(xType.getShape(), u8),
                                             scalar(b.getF32Type()), scalar(u8), c.activation);
          replaceWithInt8(c, {q.getResult(), q.getScale(), q.getZeroPoint()});
          return success();
        });
  }
};
} // namespace
