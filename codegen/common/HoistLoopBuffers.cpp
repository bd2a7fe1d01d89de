//===- HoistLoopBuffers.cpp - per-iteration buffers out of loops ----------===//
//
// Bufferization allocates a tensor created inside a loop body inside that
// body: once per iteration, through the runtime, and kept until the run
// ends. A buffer whose address stays inside its iteration needs no fresh
// memory per iteration: sequential iterations can share one buffer, and
// parallel iterations need one per running thread, which the stack gives
// (scf.forall is an automatic allocation scope: its iterations' allocas are
// freed when they end; kiln-cpu-loop-alloca-scopes keeps that true in LLVM).
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"
#include "codegen/common/BufferUses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHOISTLOOPBUFFERS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
bool isParallelLoop(Operation *op) { return isa<scf::ForallOp, scf::ParallelOp>(op); }
bool isSequentialLoop(Operation *op) { return isa<scf::ForOp, scf::WhileOp>(op); }

/// The enclosing ops of `op`, innermost first, up to the function.
SmallVector<Operation *> enclosingOps(Operation *op) {
  SmallVector<Operation *> parents;
  for (Operation *p = op->getParentOp(); p && !isa<func::FuncOp>(p); p = p->getParentOp())
    parents.push_back(p);
  return parents;
}

/// The outermost sequential loop around `op` inside its innermost parallel
/// loop (or function), if any.
Operation *outermostSequentialLoop(Operation *op) {
  Operation *outermost = nullptr;
  for (Operation *p : enclosingOps(op)) {
    if (isParallelLoop(p))
      break;
    if (isSequentialLoop(p))
      outermost = p;
  }
  return outermost;
}

/// The innermost parallel loop around `op`, if any.
Operation *innermostParallelLoop(Operation *op) {
  for (Operation *p : enclosingOps(op))
    if (isParallelLoop(p))
      return p;
  return nullptr;
}

/// Whether `alloc` is a static buffer inside some loop, used only within an
/// iteration.
bool isIterationLocal(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getMemorySpace())
    return false;
  bool inLoop = llvm::any_of(enclosingOps(alloc), [](Operation *p) {
    return isParallelLoop(p) || isSequentialLoop(p);
  });
  return inLoop && succeeded(mlir::kiln::forEachBufferUser(alloc, [](Operation *) {}));
}

struct KilnHoistLoopBuffersPass
    : mlir::kiln::impl::KilnHoistLoopBuffersBase<KilnHoistLoopBuffersPass> {
  using KilnHoistLoopBuffersBase::KilnHoistLoopBuffersBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    DataLayout layout = DataLayout::closest(func);
    SmallVector<memref::AllocOp> allocs;
    func.walk([&](memref::AllocOp alloc) {
      if (isIterationLocal(alloc))
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs) {
      if (Operation *loop = outermostSequentialLoop(alloc))
        alloc->moveBefore(loop);
      Operation *parallel = innermostParallelLoop(alloc);
      MemRefType type = alloc.getType();
      int64_t bytes = type.getNumElements() * layout.getTypeSize(type.getElementType());
      if (!parallel || bytes > maxStackBytes)
        continue;
      OpBuilder b = OpBuilder::atBlockBegin(&parallel->getRegion(0).front());
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), type, alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
  }
};
} // namespace
