//===- PackMatmul.cpp - matmul operands in register-panel layout ----------===//
//
// A register tile of C (mr rows x nr columns) accumulates A[rows, k] * B[k,
// cols] over k. Read from row-major B, each k step touches a new row of B, a
// cache line per row at a large stride, which caches and TLBs serve badly
// (power-of-two strides even map every row to the same cache set). Packing B
// into panels [N/nr][K][nr] makes the K loop read one contiguous stream, and
// packing a constant A into [M/mr][K][mr] does the same for its broadcasts.
// Constant operands (weights) are packed at compile time; a non-constant B is
// packed by a copy per run, which costs K*N moves against 2*M*N*K flops.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConstantData.h"
#include "codegen/Passes.h"
#include "codegen/cpu/CpuPipeline.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPACKMATMUL
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::constantBehindReshapes;
using mlir::kiln::relayoutConstant;

namespace {
/// The dimensions of the packed contraction, outermost first: column panel,
/// row panel, reduction, row in panel, column in panel. Column panels go
/// outermost so that one packed panel of B stays in cache across all rows.
enum PackedDim { ColumnPanel, RowPanel, Reduction, Row, Column, PackedDims };

AffineMap packedMap(MLIRContext *ctx, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(PackedDims, 0, exprs, ctx);
}

struct Packer {
  OpBuilder &b;
  Location loc;
  Type elementType;
  int64_t m, n, k, mr, nr;

  RankedTensorType type(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, elementType);
  }

  Value expand(Value v, ArrayRef<int64_t> shape, ArrayRef<ReassociationIndices> groups) const {
    return tensor::ExpandShapeOp::create(b, loc, type(shape), v, groups);
  }

  /// A as [M/mr][K][mr] (constant) or its row-major view [M/mr][mr][K];
  /// `map` receives the operand's indexing map.
  Value lhs(Value a, AffineMap &map) const {
    MLIRContext *ctx = b.getContext();
    if (ElementsAttr data = constantBehindReshapes(a)) {
      Value packed = relayoutConstant(b, loc, data, type({m / mr, k, mr}), [&](int64_t i) {
        int64_t row = (i / (k * mr)) * mr + i % mr, col = (i / mr) % k;
        return row * k + col;
      });
      if (packed) {
        map = packedMap(ctx, {RowPanel, Reduction, Row});
        return packed;
      }
    }
    map = packedMap(ctx, {RowPanel, Row, Reduction});
    return expand(a, {m / mr, mr, k}, {{0, 1}, {2}});
  }

  /// B as [N/nr][K][nr]: at compile time for a constant, as a view when there
  /// is one panel, else by a copy.
  Value rhs(Value bv, AffineMap &map) const {
    MLIRContext *ctx = b.getContext();
    map = packedMap(ctx, {ColumnPanel, Reduction, Column});
    auto packedType = type({n / nr, k, nr});
    if (ElementsAttr data = constantBehindReshapes(bv))
      if (Value packed = relayoutConstant(b, loc, data, packedType, [&](int64_t i) {
            int64_t col = (i / (k * nr)) * nr + i % nr, row = (i / nr) % k;
            return row * n + col;
          }))
        return packed;
    if (n == nr)
      return expand(bv, {1, k, n}, {{0, 1}, {2}});
    AffineExpr panel, row, col;
    bindDims(ctx, panel, row, col);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {row, panel * nr + col}, ctx),
                                   AffineMap::getMultiDimIdentityMap(3, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    Value init = tensor::EmptyOp::create(b, loc, packedType.getShape(), elementType);
    return linalg::GenericOp::create(b, loc, packedType, bv, init, maps, iterators,
                                     [](OpBuilder &nb, Location l, ValueRange args) {
                                       linalg::YieldOp::create(nb, l, args[0]);
                                     })
        .getResult(0);
  }
};

/// Replaces `matmul` by a linalg.contract on packed operands, tagged
/// `kiln.packed` and `kiln.tile = [mr, nr]` for kiln-cpu-schedule.
void packMatmul(linalg::MatmulOp matmul, int64_t vectorWidth) {
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  OpBuilder b(matmul);
  Value c = matmul.getDpsInits()[0];
  auto cType = cast<RankedTensorType>(c.getType());
  mlir::kiln::MatmulTile tile =
      mlir::kiln::chooseRegisterTile(/*batched=*/false, ranges[0], ranges[1], vectorWidth);
  Packer packer{b, matmul.getLoc(), cType.getElementType(), ranges[0], ranges[1], ranges[2],
                tile.m, tile.n};
  AffineMap aMap, bMap;
  Value a = packer.lhs(matmul.getDpsInputs()[0], aMap);
  Value bp = packer.rhs(matmul.getDpsInputs()[1], bMap);
  int64_t m = packer.m, n = packer.n, mr = packer.mr, nr = packer.nr;
  Value cp = packer.expand(c, {m / mr, mr, n / nr, nr}, {{0, 1}, {2, 3}});
  AffineMap cMap = packedMap(b.getContext(), {RowPanel, Row, ColumnPanel, Column});
  auto contract = linalg::ContractOp::create(b, matmul.getLoc(), TypeRange{cp.getType()},
                                             ValueRange{a, bp}, ValueRange{cp},
                                             b.getAffineMapArrayAttr({aMap, bMap, cMap}));
  contract->setAttr("kiln.packed", b.getUnitAttr());
  contract->setAttr("kiln.tile", b.getDenseI64ArrayAttr({mr, nr}));
  Value result = tensor::CollapseShapeOp::create(b, matmul.getLoc(), cType, contract.getResult(0),
                                                 ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
  matmul.getResult(0).replaceAllUsesWith(result);
  matmul.erase();
}

struct KilnPackMatmulPass : mlir::kiln::impl::KilnPackMatmulBase<KilnPackMatmulPass> {
  using KilnPackMatmulBase::KilnPackMatmulBase;

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) {
      bool staticShapes = llvm::none_of(op.getStaticLoopRanges(), ShapedType::isDynamic);
      if (staticShapes && op.hasPureTensorSemantics() && !op.hasUserDefinedMaps())
        matmuls.push_back(op);
    });
    for (linalg::MatmulOp op : matmuls)
      packMatmul(op, vectorWidth);
  }
};
} // namespace
