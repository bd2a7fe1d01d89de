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
// Registers hold whole vectors along N. When N has no whole-vector divisor
// but M has (late convolutions: 512 channels x 7x7 pixels), C^T = B^T A^T is
// computed instead, vectorized along M: B is read in place, A packed
// transposed, and C^T transposed back once.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConstantData.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/CpuBackend.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUPACKMATMUL
#include "codegen/cpu/Passes.h.inc"
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

  /// The transposed problem's A, which is B^T for B [K][M/mr*mr]: B itself,
  /// viewed as [K][M/mr][mr]; a K step reads mr neighbours of one row.
  Value lhsOfColumns(Value bv, AffineMap &map) const {
    map = packedMap(b.getContext(), {Reduction, RowPanel, Row});
    return expand(bv, {k, m / mr, mr}, {{0}, {1, 2}});
  }

  /// B as [N/nr][K][nr]: at compile time for a constant, as a view when there
  /// is one panel, else by a copy. With `transposed`, the source holds B^T
  /// ([N][K], the rows of the original problem's A).
  Value rhs(Value bv, AffineMap &map, bool transposed = false) const {
    MLIRContext *ctx = b.getContext();
    map = packedMap(ctx, {ColumnPanel, Reduction, Column});
    auto packedType = type({n / nr, k, nr});
    if (ElementsAttr data = constantBehindReshapes(bv))
      if (Value packed = relayoutConstant(b, loc, data, packedType, [&](int64_t i) {
            int64_t col = (i / (k * nr)) * nr + i % nr, row = (i / nr) % k;
            return transposed ? col * k + row : row * n + col;
          }))
        return packed;
    if (n == nr && !transposed)
      return expand(bv, {1, k, n}, {{0, 1}, {2}});
    // The copy reads a view of the source split into panels, so that its
    // input map is a permutation (which tiles and vectorizes).
    AffineExpr panel, row, col;
    bindDims(ctx, panel, row, col);
    Value panels = transposed ? expand(bv, {n / nr, nr, k}, {{0, 1}, {2}})
                              : expand(bv, {k, n / nr, nr}, {{0}, {1, 2}});
    AffineMap read = transposed ? AffineMap::get(3, 0, {panel, col, row}, ctx)
                                : AffineMap::get(3, 0, {row, panel, col}, ctx);
    SmallVector<AffineMap> maps = {read, AffineMap::getMultiDimIdentityMap(3, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    Value init = tensor::EmptyOp::create(b, loc, packedType.getShape(), elementType);
    auto copy = linalg::GenericOp::create(b, loc, packedType, panels, init, maps, iterators,
                                          [](OpBuilder &nb, Location l, ValueRange args) {
                                            linalg::YieldOp::create(nb, l, args[0]);
                                          });
    // Rows of B copy to panel rows in whole vectors (kiln-cpu-schedule).
    if (!transposed)
      copy->setAttr("kiln.pack", b.getUnitAttr());
    return copy.getResult(0);
  }
};

/// The packed contraction C[M][N] += A' B' on packed operands, tagged
/// `kiln.packed` and `kiln.tile = [mr, nr]` for kiln-cpu-schedule; returns C.
Value packedContract(const Packer &packer, Value a, AffineMap aMap, Value bp, AffineMap bMap,
                     Value c) {
  OpBuilder &b = packer.b;
  int64_t m = packer.m, n = packer.n, mr = packer.mr, nr = packer.nr;
  Value cp = packer.expand(c, {m / mr, mr, n / nr, nr}, {{0, 1}, {2, 3}});
  AffineMap cMap = packedMap(b.getContext(), {RowPanel, Row, ColumnPanel, Column});
  auto contract = linalg::ContractOp::create(b, packer.loc, TypeRange{cp.getType()},
                                             ValueRange{a, bp}, ValueRange{cp},
                                             b.getAffineMapArrayAttr({aMap, bMap, cMap}));
  contract->setAttr("kiln.packed", b.getUnitAttr());
  contract->setAttr("kiln.tile", b.getDenseI64ArrayAttr({mr, nr}));
  return tensor::CollapseShapeOp::create(b, packer.loc, c.getType(), contract.getResult(0),
                                         ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
}

/// Whether to compute C^T = B^T A^T instead: when N has no whole-vector
/// divisor but M does (a late convolution: 512 channels x 49 pixels), the
/// transposed problem vectorizes along M with full registers.
bool vectorizeAlongRows(int64_t m, int64_t n, int64_t vectorWidth) {
  return n % vectorWidth != 0 && m % vectorWidth == 0;
}

/// `c` transposed, as the init of C^T: a fill is refilled, anything else
/// transposed.
Value transposedInit(OpBuilder &b, Location loc, Value c) {
  auto type = cast<RankedTensorType>(c.getType());
  SmallVector<int64_t> shape = {type.getDimSize(1), type.getDimSize(0)};
  Value empty = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  if (auto fill = c.getDefiningOp<linalg::FillOp>())
    return linalg::FillOp::create(b, loc, fill.getInputs()[0], empty).getResult(0);
  return linalg::TransposeOp::create(b, loc, c, empty, ArrayRef<int64_t>{1, 0}).getResult()[0];
}

/// Replaces `matmul` by a packed linalg.contract (of C^T where that
/// vectorizes better, transposed back once at the end).
void packMatmul(linalg::MatmulOp matmul, int64_t vectorWidth) {
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  int64_t m = ranges[0], n = ranges[1], k = ranges[2];
  OpBuilder b(matmul);
  Location loc = matmul.getLoc();
  Value a = matmul.getDpsInputs()[0], bv = matmul.getDpsInputs()[1];
  Value c = matmul.getDpsInits()[0];
  auto cType = cast<RankedTensorType>(c.getType());
  Type et = cType.getElementType();
  AffineMap aMap, bMap;
  Value result;
  if (vectorizeAlongRows(m, n, vectorWidth)) {
    mlir::kiln::MatmulTile tile = mlir::kiln::chooseRegisterTile(false, n, m, vectorWidth);
    Packer packer{b, loc, et, n, m, k, tile.m, tile.n};
    Value lhs = packer.lhsOfColumns(bv, aMap);
    Value rhs = packer.rhs(a, bMap, /*transposed=*/true);
    Value ct = packedContract(packer, lhs, aMap, rhs, bMap, transposedInit(b, loc, c));
    Value empty = tensor::EmptyOp::create(b, loc, cType.getShape(), et);
    result = linalg::TransposeOp::create(b, loc, ct, empty, ArrayRef<int64_t>{1, 0}).getResult()[0];
  } else {
    mlir::kiln::MatmulTile tile = mlir::kiln::chooseRegisterTile(false, m, n, vectorWidth);
    Packer packer{b, loc, et, m, n, k, tile.m, tile.n};
    Value lhs = packer.lhs(a, aMap);
    Value rhs = packer.rhs(bv, bMap);
    result = packedContract(packer, lhs, aMap, rhs, bMap, c);
  }
  matmul.getResult(0).replaceAllUsesWith(result);
  matmul.erase();
}

struct KilnPackMatmulPass : mlir::kiln::impl::KilnCpuPackMatmulBase<KilnPackMatmulPass> {
  using KilnCpuPackMatmulBase::KilnCpuPackMatmulBase;

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
