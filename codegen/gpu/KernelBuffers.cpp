//===- KernelBuffers.cpp - buffers inside gpu.launch bodies ---------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUKERNELBUFFERS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

MemRefType inSpace(MemRefType type, Attribute space) {
  return MemRefType::get(type.getShape(), type.getElementType(), type.getLayout(), space);
}

/// Moves `value` and the views of it, transitively, into memory `space`.
void moveToSpace(Value value, Attribute space) {
  value.setType(inSpace(cast<MemRefType>(value.getType()), space));
  for (Operation *user : value.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (!view || view.getViewSource() != value)
      continue;
    for (Value result : user->getResults())
      if (isa<MemRefType>(result.getType()))
        moveToSpace(result, space);
  }
}

LogicalResult privatize(RewriterBase &rewriter, memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape())
    return alloc.emitError("kiln-gpu-kernel-buffers: a kernel cannot allocate a buffer of "
                           "dynamic size ")
           << type;
  auto space = gpu::AddressSpaceAttr::get(alloc.getContext(), gpu::AddressSpace::Private);
  rewriter.setInsertionPoint(alloc);
  auto alloca = memref::AllocaOp::create(rewriter, alloc.getLoc(), inSpace(type, space),
                                         alloc.getAlignmentAttr());
  rewriter.replaceAllUsesWith(alloc.getResult(), alloca.getResult());
  rewriter.eraseOp(alloc);
  // The users now see the new type through their operand; views of it
  // take the space in their own results.
  for (Operation *user : alloca->getUsers())
    if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == alloca)
      for (Value result : user->getResults())
        if (isa<MemRefType>(result.getType()))
          moveToSpace(result, space);
  return success();
}

struct KilnGpuKernelBuffersPass
    : mlir::kiln::impl::KilnGpuKernelBuffersBase<KilnGpuKernelBuffersPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](gpu::LaunchOp launch) {
      launch.getBody().walk([&](memref::AllocOp alloc) {
        // (A workgroup buffer is the threads' to share.)
        if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(alloc.getType()))
          allocs.push_back(alloc);
      });
      launch.getBody().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    });
    IRRewriter rewriter(&getContext());
    for (memref::AllocOp alloc : allocs)
      if (failed(privatize(rewriter, alloc)))
        return signalPassFailure();
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
  }
};

} // namespace
