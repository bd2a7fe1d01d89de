//===- BufferUses.cpp - where a bufferized allocation is used -------------===//
#include "codegen/common/BufferUses.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

LogicalResult mlir::kiln::forEachBufferUser(Value buffer, function_ref<void(Operation *)> onUser) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    onUser(user);
    if (auto view = dyn_cast<ViewLikeOpInterface>(user);
        view && view.getViewSource() == buffer) {
      for (Value result : user->getResults())
        if (failed(forEachBufferUser(result, onUser)))
          return failure();
      continue;
    }
    if (user->hasTrait<OpTrait::IsTerminator>() ||
        isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp,
            UnrealizedConversionCastOp>(user) ||
        isa<LLVM::LLVMDialect>(user->getDialect()))
      return failure();
    if (llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
      return failure();
  }
  return success();
}
