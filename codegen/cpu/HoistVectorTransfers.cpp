//===- HoistVectorTransfers.cpp - accumulators stay in registers ----------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHOISTVECTORTRANSFERS
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnHoistVectorTransfersPass
    : mlir::kiln::impl::KilnHoistVectorTransfersBase<KilnHoistVectorTransfersPass> {
  void runOnOperation() override {
    linalg::hoistRedundantVectorTransfers(getOperation());
  }
};
} // namespace
