//===- FlattenEmptyArguments.cpp - zero-element arguments as memref<0xT> --===//
#include "codegen/common/Passes.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFLATTENEMPTYARGUMENTS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
struct KilnFlattenEmptyArgumentsPass
    : mlir::kiln::impl::KilnFlattenEmptyArgumentsBase<KilnFlattenEmptyArgumentsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    SmallVector<Type> argTypes(func.getArgumentTypes());
    for (BlockArgument arg : entry.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || !type.hasStaticShape() || type.getNumElements() != 0 || type.getRank() == 1)
        continue;
      // Nothing is read or written through a zero-element buffer: uses may
      // as well see a local one of the original type.
      Value local = memref::AllocaOp::create(b, func.getLoc(), type);
      arg.replaceAllUsesWith(local);
      auto flat = MemRefType::get({0}, type.getElementType());
      arg.setType(flat);
      argTypes[arg.getArgNumber()] = flat;
    }
    func.setFunctionType(FunctionType::get(&getContext(), argTypes, func.getResultTypes()));
  }
};
} // namespace
