//===- CopiesToLoops.cpp - strided memref.copy becomes a loop nest --------===//
//
// A memref.copy between buffers that are not both contiguous (padding writes
// into the interior of a larger buffer) lowers to a call of the runtime's
// generic memrefCopy, which walks element by element through descriptors.
// Instead it becomes a parallel loop nest over all but the innermost
// dimension, outlined onto the thread pool when large. When that dimension
// is static and contiguous in both buffers (a padded NHWC tensor's rows of
// channels, say), each row is copied with vector loads and stores of up to
// 64 bytes: as a plain loop, LLVM unrolls short rows fully and then cannot
// vectorize them, not knowing that the buffers do not overlap. Other copies
// become a linalg.copy, lowered to loops like any other.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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

/// Whether `type` is static with a unit-stride innermost dimension.
bool hasStaticUnitStrideRows(MemRefType type) {
  if (!type.hasStaticShape() || type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

/// The copy as an scf.parallel over the outer dimensions copying each
/// innermost row with vector transfers of at most 64 bytes.
void copyRowsAsVectors(OpBuilder &b, memref::CopyOp copy) {
  Location loc = copy.getLoc();
  auto type = cast<MemRefType>(copy.getSource().getType());
  ArrayRef<int64_t> shape = type.getShape();
  Type et = type.getElementType();
  int64_t row = shape.back();
  int64_t chunk = std::max<int64_t>(1, 64 / std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8));
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto copyChunk = [&](OpBuilder &nb, SmallVector<Value> at, Value c0, int64_t width) {
    at.push_back(c0);
    auto vectorType = VectorType::get({width}, et);
    Value pad = arith::ConstantOp::create(nb, loc, et, nb.getZeroAttr(et));
    Value v = vector::TransferReadOp::create(nb, loc, vectorType, copy.getSource(), at, pad,
                                             ArrayRef<bool>{true});
    vector::TransferWriteOp::create(nb, loc, v, copy.getTarget(), at, ArrayRef<bool>{true});
  };
  auto copyRow = [&](OpBuilder &nb, SmallVector<Value> at) {
    int64_t whole = row / chunk;
    if (whole > 4) {
      scf::ForOp::create(nb, loc, index(0), index(whole * chunk), index(chunk), ValueRange{},
                         [&](OpBuilder &lb, Location, Value c0, ValueRange) {
                           copyChunk(lb, at, c0, chunk);
                           scf::YieldOp::create(lb, loc);
                         });
    } else {
      for (int64_t i = 0; i < whole; ++i)
        copyChunk(nb, at, index(i * chunk), chunk);
    }
    if (row % chunk != 0)
      copyChunk(nb, at, index(whole * chunk), row % chunk);
  };
  if (shape.size() == 1) {
    copyRow(b, {});
    return;
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t extent : shape.drop_back()) {
    lbs.push_back(index(0));
    ubs.push_back(index(extent));
    steps.push_back(index(1));
  }
  scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                          [&](OpBuilder &nb, Location, ValueRange ivs) {
                            copyRow(nb, SmallVector<Value>(ivs));
                          });
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
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (hasStaticUnitStrideRows(source) && hasStaticUnitStrideRows(target))
        copyRowsAsVectors(b, copy);
      else
        linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
