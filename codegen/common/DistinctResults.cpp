//===- DistinctResults.cpp - one buffer per returned tensor ---------------===//
#include "codegen/common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNDISTINCTRESULTS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnDistinctResultsPass
    : mlir::kiln::impl::KilnDistinctResultsBase<KilnDistinctResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::DenseSet<Value> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        if (!type || seen.insert(operand.get()).second)
          continue;
        operand.set(bufferization::AllocTensorOp::create(b, ret.getLoc(), type, ValueRange{},
                                                         operand.get()));
      }
    });
  }
};
} // namespace
