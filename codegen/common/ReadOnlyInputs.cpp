//===- ReadOnlyInputs.cpp - the model's inputs are never written ----------===//
#include "codegen/common/Passes.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNREADONLYINPUTS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnReadOnlyInputsPass
    : mlir::kiln::impl::KilnReadOnlyInputsBase<KilnReadOnlyInputsPass> {
  void runOnOperation() override {
    auto readOnly = BoolAttr::get(&getContext(), false);
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      for (BlockArgument arg : func.getArguments())
        if (isa<TensorType>(arg.getType()))
          func.setArgAttr(arg.getArgNumber(), bufferization::BufferizationDialect::kWritableAttrName,
                          readOnly);
    }
  }
};
} // namespace
