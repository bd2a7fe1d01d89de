//===- AttentionRows.cpp - attention as one kernel, a thread per query row -===//
//
// GPU targets lower kiln.attention unfused: its scores, N x Lq x Lk floats,
// are written out between two batch matmuls (on the tensor cores where the
// matmuls are). Where the scores would take more than `max-scores-bytes`,
// this pass makes the attention one kernel instead, before the lowering: a
// workgroup per batch entry and block of 64 query rows, a thread per row,
// which walks the keys with flash attention's online softmax:
//   s = scale * q.k_j + mask,  m' = max(m, s),  alpha = exp(m - m'),
//   p = exp(s - m'),  l' = l alpha + p,  acc' = acc alpha + p v_j,
// then out = acc / l. The query row and the sums are scalars the loop
// carries (registers), D + Dv of them, which bounds the head sizes. Only
// the inputs and the output are in memory; the threads of a workgroup
// read the same key and value at the same time.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/common/Passes.h"
#include "codegen/gpu/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUATTENTIONROWS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Query rows (threads) per workgroup.
constexpr int64_t kRows = 64;
/// Values of a thread's query row and sums (D + Dv) at most: registers.
constexpr int64_t kMaxRowValues = 256;

/// One attention, its batch dimensions collapsed into one: query [N, Lq, D],
/// keyT [N, D, Lk], value [N, Lk, Dv], mask [1 or N, 1 or Lq, Lk].
struct RowAttention {
  Value query, keyT, value, mask;
  float scale;
  int64_t n, lq, d, lk, dv;

  /// The scalars a thread carries from key j to j + 1 (m, l, acc) after
  /// key `j` of row `i` of batch entry `batch`, whose query row is `q`.
  SmallVector<Value> keyStep(OpBuilder &b, Location loc, Value batch, Value i, Value j,
                             ArrayRef<Value> q, ValueRange carried) const {
    auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    Type f32 = b.getF32Type();
    Value s = scalarConst(b, loc, f32, 0.0);
    for (int64_t k = 0; k < d; ++k) {
      Value key = tensor::ExtractOp::create(b, loc, keyT, ValueRange{batch, index(k), j});
      s = math::FmaOp::create(b, loc, q[k], key, s);
    }
    if (scale != 1.0f)
      s = arith::MulFOp::create(b, loc, s, scalarConst(b, loc, f32, scale));
    if (mask) {
      ArrayRef<int64_t> shape = tensorType(mask).getShape();
      Value at[] = {shape[0] == 1 ? index(0) : batch, shape[1] == 1 ? index(0) : i, j};
      s = arith::AddFOp::create(b, loc, s, tensor::ExtractOp::create(b, loc, mask, at));
    }
    Value m = carried[0], l = carried[1];
    Value next = arith::MaximumFOp::create(b, loc, m, s);
    Value base = finiteMax(b, loc, next);
    Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, base));
    Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, base));
    SmallVector<Value> result = {next, math::FmaOp::create(b, loc, l, alpha, p)};
    for (int64_t e = 0; e < dv; ++e) {
      Value v = tensor::ExtractOp::create(b, loc, value, ValueRange{batch, j, index(e)});
      Value scaled = arith::MulFOp::create(b, loc, carried[2 + e], alpha);
      result.push_back(math::FmaOp::create(b, loc, p, v, scaled));
    }
    return result;
  }

  /// Row `i` of batch entry `batch` written into `row` ([1, 1, Dv]).
  Value queryRow(OpBuilder &b, Location loc, Value batch, Value i, Value row) const {
    auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    Type f32 = b.getF32Type();
    SmallVector<Value> q;
    for (int64_t k = 0; k < d; ++k)
      q.push_back(tensor::ExtractOp::create(b, loc, query, ValueRange{batch, i, index(k)}));
    SmallVector<Value> init = {extremeConst(b, loc, f32, /*lowest=*/true),
                               scalarConst(b, loc, f32, 0.0)};
    init.append(dv, scalarConst(b, loc, f32, 0.0));
    auto keys = scf::ForOp::create(
        b, loc, index(0), index(lk), index(1), init,
        [&](OpBuilder &nb, Location l, Value j, ValueRange carried) {
          scf::YieldOp::create(nb, l, keyStep(nb, l, batch, i, j, q, carried));
        });
    Value sum = keys.getResult(1);
    for (int64_t e = 0; e < dv; ++e) {
      Value out = arith::DivFOp::create(b, loc, keys.getResult(2 + e), sum);
      row = tensor::InsertOp::create(b, loc, out, row, ValueRange{index(0), index(0), index(e)});
    }
    return row;
  }

  /// The kernel: workgroups over (batch entry, block of kRows rows), a
  /// thread per row of the block; returns [N, Lq, Dv].
  Value build(OpBuilder &b, Location loc) const {
    MLIRContext *ctx = b.getContext();
    int64_t rows = std::min(kRows, lq);
    Value init = emptyTensor(b, loc, ArrayRef<int64_t>{n, lq, dv}, b.getF32Type());
    auto block = [&](gpu::MappingId id) -> Attribute { return gpu::GPUBlockMappingAttr::get(ctx, id); };
    auto workgroups = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n), b.getIndexAttr(lq)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows)}, ValueRange{init},
        b.getArrayAttr({block(gpu::MappingId::LinearDim1), block(gpu::MappingId::LinearDim0)}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(workgroups.getTerminator());
    Value batch = workgroups.getInductionVar(0), first = workgroups.getInductionVar(1);
    // The last block may be partial: min(rows, Lq - first) threads.
    AffineExpr f = getAffineDimExpr(0, ctx);
    OpFoldResult count = affine::makeComposedFoldedAffineMin(
        b, loc, AffineMap::get(1, 0, {getAffineConstantExpr(rows, ctx), lq - f}, ctx), {first});
    SmallVector<OpFoldResult> offsets = {batch, first, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), count, b.getIndexAttr(dv)};
    SmallVector<OpFoldResult> unit(3, b.getIndexAttr(1));
    Value tile = tensor::ExtractSliceOp::create(b, loc, workgroups.getRegionIterArgs()[0], offsets,
                                                sizes, unit);
    auto threads = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{count}, ValueRange{tile},
        b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(threads.getTerminator());
      Value t = threads.getInductionVar(0);
      Value i = affine::AffineApplyOp::create(b, loc, AffineMap::get(1, 1, f + getAffineSymbolExpr(0, ctx)),
                                              ValueRange{t, first});
      SmallVector<OpFoldResult> rowAt = {b.getIndexAttr(0), t, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                            b.getIndexAttr(dv)};
      Value row = tensor::ExtractSliceOp::create(b, loc, threads.getRegionIterArgs()[0], rowAt,
                                                 rowSizes, unit);
      row = queryRow(b, loc, batch, i, row);
      b.setInsertionPointToStart(threads.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, row, threads.getRegionIterArgs()[0], rowAt,
                                            rowSizes, unit);
    }
    b.setInsertionPointToStart(workgroups.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, threads.getResult(0),
                                          workgroups.getRegionIterArgs()[0], offsets, sizes, unit);
    return workgroups.getResult(0);
  }
};

/// `t` ([B..., R, C]) as [product of B..., R, C].
Value collapseBatch(OpBuilder &b, Location loc, Value t) {
  ArrayRef<int64_t> shape = tensorType(t).getShape();
  int64_t batch = 1;
  for (int64_t s : shape.drop_back(2))
    batch *= s;
  int64_t rank = shape.size();
  return reshapeTo(b, loc, t,
                   RankedTensorType::get({batch, shape[rank - 2], shape[rank - 1]},
                                         tensorType(t).getElementType()));
}

/// `op` as a RowAttention, or why a thread cannot hold its row.
FailureOr<RowAttention> analyze(OpBuilder &b, AttentionOp op, std::string &whyNot) {
  ArrayRef<int64_t> q = tensorType(op.getQuery()).getShape();
  ArrayRef<int64_t> kt = tensorType(op.getKeyT()).getShape();
  ArrayRef<int64_t> v = tensorType(op.getValue()).getShape();
  int64_t rank = q.size();
  RowAttention a{};
  a.n = 1;
  for (int64_t s : q.drop_back(2))
    a.n *= s;
  a.lq = q[rank - 2], a.d = q[rank - 1], a.lk = kt[rank - 1], a.dv = v[rank - 1];
  a.scale = op.getScale().convertToFloat();
  if (a.d + a.dv > kMaxRowValues) {
    whyNot = llvm::formatv("heads of {0} + {1} values, more than a thread holds ({2})", a.d,
                           a.dv, kMaxRowValues);
    return failure();
  }
  Location loc = op.getLoc();
  a.query = collapseBatch(b, loc, op.getQuery());
  a.keyT = collapseBatch(b, loc, op.getKeyT());
  a.value = collapseBatch(b, loc, op.getValue());
  if (Value mask = op.getMask())
    a.mask = collapseBatch(b, loc, mask);
  return a;
}

struct KilnGpuAttentionRowsPass
    : mlir::kiln::impl::KilnGpuAttentionRowsBase<KilnGpuAttentionRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops)
      rewrite(op);
  }

  void rewrite(AttentionOp op) {
    // N x Lq x Lk floats: the query's rows times the keys.
    int64_t scores = 4 * tensorType(op.getQuery()).getNumElements() /
                     tensorType(op.getQuery()).getShape().back() *
                     tensorType(op.getKeyT()).getShape().back();
    if (scores <= maxScoresBytes)
      return;
    OpBuilder b(op);
    std::string whyNot;
    FailureOr<RowAttention> a = analyze(b, op, whyNot);
    if (failed(a)) {
      if (reportPlacement)
        op.emitRemark() << "placement: attention unfused, its scores written out ("
                        << formatBytes(scores) << "): " << whyNot;
      return;
    }
    if (reportPlacement)
      op.emitRemark() << "placement: attention as one kernel, a thread per query row over "
                      << a->lk << " keys, its scores never written out (they would take "
                      << formatBytes(scores) << ")";
    Value result = a->build(b, op.getLoc());
    op.replaceAllUsesWith(reshapeTo(b, op.getLoc(), result, tensorType(op.getResult())));
    op.erase();
  }
};

} // namespace
