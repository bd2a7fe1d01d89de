//===- CopiesToLoops.cpp - strided memref.copy becomes a loop nest --------===//
//
// A memref.copy between buffers that are not both contiguous (padding writes
// into the interior of a larger buffer) lowers to a call of the runtime's
// generic memrefCopy, which walks element by element through descriptors.
// As a linalg.copy it becomes a parallel loop nest instead: outlined onto the
// thread pool when large, and vectorized by LLVM along the contiguous rows.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCOPIESTOLOOPS
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
bool isContiguous(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getLayout().isIdentity();
}

struct KilnCopiesToLoopsPass : mlir::kiln::impl::KilnCopiesToLoopsBase<KilnCopiesToLoopsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      bool ranked = isa<MemRefType>(copy.getSource().getType()) &&
                    isa<MemRefType>(copy.getTarget().getType());
      if (ranked && !(isContiguous(copy.getSource()) && isContiguous(copy.getTarget())))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
