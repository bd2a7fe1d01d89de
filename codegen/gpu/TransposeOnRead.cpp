//===- TransposeOnRead.cpp - transposes read in place by matmuls ----------===//
//
// A transformer's heads are transposes of its projections ([B, S, H, D] to
// [B, H, S, D]) that its attention matmuls read, and the attention's result
// is transposed back for the next projection.
// Each would be a kernel that copies the tensor once, for a matmul that
// stages it chunk by chunk anyway: the matmul loads it in place instead, at
// permuted indices (kiln-gpu-compute-on-read), and the copy goes. Where
// the transpose moves the innermost dimension (the keys' [B, S, H, D] to
// [B, H, D, S]), the matmul's copy of a chunk walks it along the source's
// rows (kiln-gpu-promote-operands), so that adjacent threads still load
// adjacent values.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUTRANSPOSEONREAD
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether `value` is read, through tensor reshapes, only as an operand of
/// contractions (matmuls, batch matmuls), and read at all.
bool onlyContractionsRead(Value value) {
  if (value.use_empty())
    return false;
  return llvm::all_of(value.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
      return onlyContractionsRead(user->getResult(0));
    auto reader = dyn_cast<linalg::LinalgOp>(user);
    return reader && reader.isDpsInput(&use) && linalg::isaContractionOpInterface(reader);
  });
}

/// Whether `op` moves floats (f32, or 16-bit ones, whose matmuls copy the
/// other operand by cp.async and this one through registers).
bool movesFloats(linalg::TransposeOp op) {
  return isa<FloatType>(op.getInit().getType().getElementType());
}

struct KilnGpuTransposeOnReadPass
    : mlir::kiln::impl::KilnGpuTransposeOnReadBase<KilnGpuTransposeOnReadPass> {
  using KilnGpuTransposeOnReadBase::KilnGpuTransposeOnReadBase;

  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp op) {
      if (op.hasPureTensorSemantics() && op.getInit().getType().hasStaticShape() &&
          movesFloats(op) && onlyContractionsRead(op->getResult(0)))
        transposes.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::TransposeOp op : transposes) {
      // kiln-gpu-compute-on-read takes a linalg.generic: the same copy,
      // its input read through the permutation.
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> copy = linalg::generalizeNamedOp(rewriter, op);
      if (failed(copy))
        continue;
      (*copy)->setAttr(kComputedOnRead, rewriter.getUnitAttr());
      if (report)
        emitRemark(copy->getLoc())
            << "placement: transpose read in place by the matmuls that read it, not copied";
    }
  }
};

} // namespace
