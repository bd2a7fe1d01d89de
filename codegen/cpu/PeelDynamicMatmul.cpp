//===- PeelDynamicMatmul.cpp - static tiles of matmuls with dynamic sizes -===//
//
// Packing and the register-tile schedule need static shapes. A matmul whose
// rows (or columns) are counted only at run time is the common case of a
// dynamic batch or sequence length: K and the other side are weights. It
// becomes a loop of static full tiles and a loop over what is left, one row
// (or column) at a time, so that almost all the work runs in the static
// kernels.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/KilnToLinalg/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUPEELDYNAMICMATMUL
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
/// The static matmuls over `dim` (0: rows, 1: columns) of `mm`, from `lb`
/// to `ub` in steps of `tile`, accumulating into `acc`.
Value tileLoop(OpBuilder &b, Location loc, linalg::MatmulOp mm, unsigned dim, OpFoldResult lb,
               OpFoldResult ub, int64_t tile, Value acc) {
  Value a = mm.getInputs()[0], bm = mm.getInputs()[1];
  auto at = cast<RankedTensorType>(a.getType());
  auto ct = cast<RankedTensorType>(acc.getType());
  Type et = ct.getElementType();
  int64_t m = dim == 0 ? tile : ct.getDimSize(0), n = dim == 1 ? tile : ct.getDimSize(1);
  int64_t k = at.getDimSize(1);
  return mlir::kiln::buildTileLoop(
      b, loc, {lb}, {ub}, {b.getIndexAttr(tile)}, acc,
      [&](OpBuilder &nb, Location l, ValueRange ivs, Value out) -> mlir::kiln::TileResult {
        SmallVector<OpFoldResult> offsets = {nb.getIndexAttr(0), nb.getIndexAttr(0)};
        offsets[dim] = ivs[0];
        SmallVector<OpFoldResult> unit(2, nb.getIndexAttr(1));
        auto slice = [&](Value v, ArrayRef<int64_t> shape) -> Value {
          SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(shape[0]), nb.getIndexAttr(shape[1])};
          return tensor::ExtractSliceOp::create(nb, l, RankedTensorType::get(shape, et), v,
                                                offsets, sizes, unit);
        };
        Value lhs = dim == 0 ? slice(a, {m, k}) : a;
        Value rhs = dim == 1 ? slice(bm, {k, n}) : bm;
        Value tileOut = slice(out, {m, n});
        Value r = linalg::MatmulOp::create(nb, l, TypeRange{tileOut.getType()},
                                           ValueRange{lhs, rhs}, tileOut)
                      .getResult(0);
        return {r, offsets, {nb.getIndexAttr(m), nb.getIndexAttr(n)}};
      });
}

/// Which dimension of `mm` to peel (0: rows, 1: columns), when exactly that
/// one is dynamic.
std::optional<unsigned> peelableDim(linalg::MatmulOp mm) {
  if (!mm.hasPureTensorSemantics() || mm.hasUserDefinedMaps())
    return std::nullopt;
  auto at = cast<RankedTensorType>(mm.getInputs()[0].getType());
  auto bt = cast<RankedTensorType>(mm.getInputs()[1].getType());
  if (at.isDynamicDim(1) || bt.isDynamicDim(0))
    return std::nullopt;
  if (at.isDynamicDim(0) && !bt.isDynamicDim(1))
    return 0;
  if (bt.isDynamicDim(1) && !at.isDynamicDim(0))
    return 1;
  return std::nullopt;
}

struct KilnPeelDynamicMatmulPass
    : mlir::kiln::impl::KilnCpuPeelDynamicMatmulBase<KilnPeelDynamicMatmulPass> {
  using KilnCpuPeelDynamicMatmulBase::KilnCpuPeelDynamicMatmulBase;

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp mm) { matmuls.push_back(mm); });
    for (linalg::MatmulOp mm : matmuls) {
      std::optional<unsigned> dim = peelableDim(mm);
      if (!dim)
        continue;
      OpBuilder b(mm);
      Location loc = mm.getLoc();
      int64_t tile = *dim == 0 ? rows : columns;
      Value operand = mm.getInputs()[*dim];
      Value extent = tensor::DimOp::create(b, loc, operand, *dim);
      Value tileValue = arith::ConstantIndexOp::create(b, loc, tile);
      Value full = arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, extent, tileValue), tileValue);
      Value acc = tileLoop(b, loc, mm, *dim, b.getIndexAttr(0), full, tile, mm.getOutputs()[0]);
      acc = tileLoop(b, loc, mm, *dim, full, extent, 1, acc);
      mm.getResult(0).replaceAllUsesWith(acc);
      mm.erase();
    }
  }
};
} // namespace
