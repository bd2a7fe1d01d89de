//===- LoopAllocaScopes.cpp - loop iterations free their stack buffers ----===//
//
// scf.for, scf.parallel and scf.while bodies are automatic allocation
// scopes: a memref.alloca in a body lives for one iteration. The lowering
// to control flow drops that, and each iteration's allocas then pile up on
// the stack until the function returns (a loop over 4096 keys in blocks
// overflows it). A body that allocates saves the stack pointer when it
// starts and restores it before its terminator, as memref.alloca_scope
// would; that op cannot be used here, since its region must stay one block
// while convert-scf-to-cf turns the loops inside it into many.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPULOOPALLOCASCOPES
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
/// Frees the allocas of `body` at the end of each iteration.
void restoreStackEachIteration(Block &body) {
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = body.getParentOp()->getLoc();
  Value saved = LLVM::StackSaveOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  b.setInsertionPoint(body.getTerminator());
  LLVM::StackRestoreOp::create(b, loc, saved);
}

struct KilnLoopAllocaScopesPass
    : mlir::kiln::impl::KilnCpuLoopAllocaScopesBase<KilnLoopAllocaScopesPass> {
  void runOnOperation() override {
    SmallVector<Block *> bodies;
    getOperation()->walk([&](Operation *op) {
      if (!isa<scf::ForOp, scf::ParallelOp, scf::WhileOp>(op))
        return;
      for (Region &region : op->getRegions())
        for (Block &block : region)
          if (!block.getOps<memref::AllocaOp>().empty())
            bodies.push_back(&block);
    });
    for (Block *body : bodies)
      restoreStackEachIteration(*body);
  }
};
} // namespace
