//===- CopiesToLoops.cpp - strided copies and fills become loop nests -----===//
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
// A linalg.fill of a buffer with static unit-stride rows (the -inf border of
// a max pool's padded input) is stored the same way, row by row: as a plain
// loop LLVM unrolls its rows and vectorizes across them with scatters.
// Booleans stay scalar: LLVM packs a vector of i1 into bits in memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCOPIESTOLOOPS
#include "codegen/common/Passes.h.inc"
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

/// Calls `chunk(b, indices, width)` for pieces of at most 64 bytes covering
/// each innermost row of `type` (static, unit-stride rows), inside an
/// scf.parallel over the outer dimensions; `indices` ends with the piece's
/// offset in its row.
void forEachRowChunk(OpBuilder &b, Location loc, MemRefType type,
                     function_ref<void(OpBuilder &, ValueRange, int64_t)> chunk) {
  ArrayRef<int64_t> shape = type.getShape();
  int64_t row = shape.back();
  int64_t bytes = std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
  int64_t lanes = std::max<int64_t>(1, 64 / bytes);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto atOffset = [](ValueRange outer, Value offset) {
    SmallVector<Value> at(outer);
    at.push_back(offset);
    return at;
  };
  auto visitRow = [&](OpBuilder &nb, ValueRange outer) {
    int64_t whole = row / lanes;
    if (whole > 4) {
      scf::ForOp::create(nb, loc, index(0), index(whole * lanes), index(lanes), ValueRange{},
                         [&](OpBuilder &lb, Location, Value offset, ValueRange) {
                           chunk(lb, atOffset(outer, offset), lanes);
                           scf::YieldOp::create(lb, loc);
                         });
    } else {
      for (int64_t i = 0; i < whole; ++i)
        chunk(nb, atOffset(outer, index(i * lanes)), lanes);
    }
    if (row % lanes != 0)
      chunk(nb, atOffset(outer, index(whole * lanes)), row % lanes);
  };
  if (shape.size() == 1) {
    visitRow(b, {});
    return;
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t extent : shape.drop_back()) {
    lbs.push_back(index(0));
    ubs.push_back(index(extent));
    steps.push_back(index(1));
  }
  scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                          [&](OpBuilder &nb, Location, ValueRange ivs) { visitRow(nb, ivs); });
}

/// The copy, row by row with vector transfers.
void copyRowsAsVectors(OpBuilder &b, memref::CopyOp copy) {
  Location loc = copy.getLoc();
  auto type = cast<MemRefType>(copy.getSource().getType());
  Type et = type.getElementType();
  forEachRowChunk(b, loc, type, [&](OpBuilder &nb, ValueRange at, int64_t width) {
    Value pad = arith::ConstantOp::create(nb, loc, et, nb.getZeroAttr(et));
    Value v = vector::TransferReadOp::create(nb, loc, VectorType::get({width}, et),
                                             copy.getSource(), at, pad, ArrayRef<bool>{true});
    vector::TransferWriteOp::create(nb, loc, v, copy.getTarget(), at, ArrayRef<bool>{true});
  });
}

/// Whether vector loads and stores of `et` match its memref layout: memrefs
/// of i1 hold a byte per element, but LLVM stores a vector of i1 as packed
/// bits.
bool hasByteElements(Type et) {
  return et.isIntOrFloat() && et.getIntOrFloatBitWidth() % 8 == 0;
}

/// The fill, row by row with vector stores of the value.
void fillRowsAsVectors(OpBuilder &b, linalg::FillOp fill) {
  Location loc = fill.getLoc();
  Value target = fill.getOutputs()[0];
  auto type = cast<MemRefType>(target.getType());
  forEachRowChunk(b, loc, type, [&](OpBuilder &nb, ValueRange at, int64_t width) {
    Value v = vector::BroadcastOp::create(nb, loc, VectorType::get({width}, type.getElementType()),
                                          fill.getInputs()[0]);
    vector::TransferWriteOp::create(nb, loc, v, target, at, ArrayRef<bool>{true});
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
    // Fills of any layout, contiguous ones included: as loops, their short
    // rows meet the same full unrolling (LLVM then vectorizes across rows,
    // with scatters).
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      auto type = dyn_cast<MemRefType>(fill.getOutputs()[0].getType());
      if (type && hasStaticUnitStrideRows(type) && hasByteElements(type.getElementType()))
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      OpBuilder b(fill);
      fillRowsAsVectors(b, fill);
      fill.erase();
    }
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (hasStaticUnitStrideRows(source) && hasStaticUnitStrideRows(target) &&
          hasByteElements(source.getElementType()))
        copyRowsAsVectors(b, copy);
      else
        linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
