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
// then out = acc / l, 4 keys a step where registers allow (independent dot
// products in flight, one rescaling per step). The query row and the sums
// are scalars the loop carries (registers), D + Dv of them, which bounds
// the head sizes. Only the inputs and the output are in memory; the
// threads of a workgroup read the same keys and values at the same time.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/common/Passes.h"
#include "codegen/gpu/AttentionRows.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

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

/// One attention, a thread per query row.
struct RowAttention : AttentionOperands {
  /// Keys a step of a thread's loop takes: 4 (or 2) independent dot
  /// products in flight instead of one chain of D multiply-adds, and one
  /// rescaling of the sums per step; fewer where the row's D + Dv values
  /// leave no registers for them (CUDA's 255 a thread).
  int64_t keysPerStep() const {
    int64_t most = d + dv <= 128 ? 4 : d + dv <= 192 ? 2 : 1;
    while (lk % most != 0)
      most /= 2;
    return most;
  }

  /// The scalars a thread carries from step to step (m, l, acc) after keys
  /// j0 .. j0 + keysPerStep() - 1 of row `i` of batch entry `at`, whose
  /// query row is `q`.
  SmallVector<Value> keyStep(OpBuilder &b, Location loc, ValueRange at, Value i, Value j0,
                             ArrayRef<Value> q, ValueRange carried) const {
    auto index = [&](int64_t v) { return indexConst(b, loc, v); };
    Type f32 = b.getF32Type();
    SmallVector<Value> step, scores; // the step's keys
    for (int64_t k = 0; k < keysPerStep(); ++k) {
      step.push_back(k ? arith::AddIOp::create(b, loc, j0, index(k)).getResult() : j0);
      scores.push_back(scalarConst(b, loc, f32, 0.0));
    }
    for (int64_t c = 0; c < d; ++c)
      for (auto [j, s] : llvm::zip(step, scores))
        s = math::FmaOp::create(b, loc, q[c], keys.element(b, loc, at, index(c), j), s);
    Value m = carried[0], l = carried[1];
    Value next = m;
    for (auto [j, s] : llvm::zip(step, scores)) {
      if (scale != 1.0f)
        s = arith::MulFOp::create(b, loc, s, scalarConst(b, loc, f32, scale));
      if (mask) {
        SmallVector<Value> indices(at);
        indices.append({i, j});
        s = arith::AddFOp::create(b, loc, s, maskAt(b, loc, indices));
      }
      next = arith::MaximumFOp::create(b, loc, next, s);
    }
    Value base = finiteMax(b, loc, next);
    Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, base));
    SmallVector<Value> p;
    Value sum = arith::MulFOp::create(b, loc, l, alpha);
    for (Value s : scores) {
      p.push_back(math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, base)));
      sum = arith::AddFOp::create(b, loc, sum, p.back());
    }
    SmallVector<Value> result = {next, sum};
    for (int64_t e = 0; e < dv; ++e) {
      Value acc = arith::MulFOp::create(b, loc, carried[2 + e], alpha);
      for (auto [j, pj] : llvm::zip(step, p))
        acc = math::FmaOp::create(b, loc, pj, elementAsF32(b, loc, value, at, j, index(e)), acc);
      result.push_back(acc);
    }
    return result;
  }

  /// Row `i` of batch entry `at` written into `row` ([1..., 1, Dv]).
  Value queryRow(OpBuilder &b, Location loc, ValueRange at, Value i, Value row) const {
    auto index = [&](int64_t v) { return indexConst(b, loc, v); };
    Type f32 = b.getF32Type();
    SmallVector<Value> q;
    for (int64_t k = 0; k < d; ++k)
      q.push_back(elementAsF32(b, loc, query, at, i, index(k)));
    SmallVector<Value> init = {extremeConst(b, loc, f32, /*lowest=*/true),
                               scalarConst(b, loc, f32, 0.0)};
    init.append(dv, scalarConst(b, loc, f32, 0.0));
    auto keys = scf::ForOp::create(
        b, loc, index(0), index(lk), index(keysPerStep()), init,
        [&](OpBuilder &nb, Location l, Value j, ValueRange carried) {
          scf::YieldOp::create(nb, l, keyStep(nb, l, at, i, j, q, carried));
        });
    Value sum = keys.getResult(1);
    SmallVector<Value> indices(batch.size() + 1, index(0));
    for (int64_t e = 0; e < dv; ++e) {
      Value out = arith::DivFOp::create(b, loc, keys.getResult(2 + e), sum);
      if (rounding)
        out = arith::TruncFOp::create(b, loc, resultType(), out);
      indices.push_back(index(e));
      row = tensor::InsertOp::create(b, loc, out, row, indices);
      indices.pop_back();
    }
    return row;
  }

  /// The kernel: workgroups over (batch entry, block of kRows rows), a
  /// thread per row of the block; returns [B..., Lq, Dv].
  Value build(OpBuilder &b, Location loc) const {
    MLIRContext *ctx = b.getContext();
    int64_t rows = std::min(kRows, lq), loops = batch.size() + 1;
    SmallVector<int64_t> shape(batch);
    shape.append({lq, dv});
    Value init = emptyTensor(b, loc, shape, resultType());
    SmallVector<OpFoldResult> ones(loops, b.getIndexAttr(1));
    SmallVector<OpFoldResult> ends = getAsIndexOpFoldResult(ctx, shape);
    ends.pop_back();
    SmallVector<OpFoldResult> steps = ones;
    steps.back() = b.getIndexAttr(rows);
    scf::ForallOp workgroups = workgroupForall(b, loc, ends, steps, init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(workgroups.getTerminator());
    SmallVector<Value> ivs = workgroups.getInductionVars();
    ValueRange at = ValueRange(ivs).drop_back();
    Value first = ivs.back();
    // The last block may be partial: min(rows, Lq - first) threads.
    AffineExpr f = getAffineDimExpr(0, ctx);
    OpFoldResult count = affine::makeComposedFoldedAffineMin(
        b, loc, AffineMap::get(1, 0, {getAffineConstantExpr(rows, ctx), lq - f}, ctx), {first});
    SmallVector<OpFoldResult> offsets(getAsOpFoldResult(ivs)), sizes = ones;
    offsets.push_back(b.getIndexAttr(0));
    sizes.back() = count;
    sizes.push_back(b.getIndexAttr(dv));
    ones.push_back(b.getIndexAttr(1));
    Value tile = tensor::ExtractSliceOp::create(b, loc, workgroups.getRegionIterArgs()[0], offsets,
                                                sizes, ones);
    auto threads = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{count}, ValueRange{tile},
        b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(threads.getTerminator());
      Value t = threads.getInductionVar(0);
      Value i = affine::AffineApplyOp::create(
          b, loc, AffineMap::get(1, 1, f + getAffineSymbolExpr(0, ctx)), ValueRange{t, first});
      SmallVector<OpFoldResult> rowAt(loops + 1, b.getIndexAttr(0));
      rowAt[loops - 1] = t;
      SmallVector<OpFoldResult> rowSizes(ones);
      rowSizes.back() = b.getIndexAttr(dv);
      Value row = tensor::ExtractSliceOp::create(b, loc, threads.getRegionIterArgs()[0], rowAt,
                                                 rowSizes, ones);
      row = queryRow(b, loc, at, i, row);
      b.setInsertionPointToStart(threads.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, row, threads.getRegionIterArgs()[0], rowAt,
                                            rowSizes, ones);
    }
    b.setInsertionPointToStart(workgroups.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, threads.getResult(0),
                                          workgroups.getRegionIterArgs()[0], offsets, sizes, ones);
    return workgroups.getResult(0);
  }
};

/// `op` as a RowAttention, or why a thread cannot hold its row.
FailureOr<RowAttention> analyze(AttentionOp op, std::string &whyNot) {
  RowAttention a{AttentionOperands::of(op)};
  if (a.d + a.dv > kMaxRowValues) {
    whyNot = llvm::formatv("heads of {0} + {1} values, more than a thread holds ({2})", a.d,
                           a.dv, kMaxRowValues);
    return failure();
  }
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
    int64_t scores = attentionScoresBytes(op);
    std::string whyNot;
    FailureOr<RowAttention> a = failure();
    if (scores <= maxScoresBytes)
      whyNot = maxScoresBytes == std::numeric_limits<int64_t>::max()
                   ? "--gpu-attention=unfused"
                   : "one kernel takes attention whose scores exceed " +
                         formatBytes(maxScoresBytes);
    else
      a = analyze(op, whyNot);
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
    replaceAttention(op, *a, [&](OpBuilder &b, Location loc) { return a->build(b, loc); });
  }
};

} // namespace

/// `x` as f32.
static Value asF32(OpBuilder &b, Location loc, Value x) {
  return x.getType().isF32() ? x : arith::ExtFOp::create(b, loc, b.getF32Type(), x);
}

Value mlir::kiln::elementAsF32(OpBuilder &b, Location loc, Value t, ValueRange at, Value row,
                               Value col) {
  SmallVector<Value> indices(at);
  indices.append({row, col});
  return asF32(b, loc, tensor::ExtractOp::create(b, loc, t, indices));
}

/// `v`, or the 16-bit tensor it widens to f32 (a kiln.cast).
static Value beforeWidening(Value v) {
  auto cast = v ? v.getDefiningOp<CastOp>() : nullptr;
  if (!cast || !getElementTypeOrSelf(cast.getType()).isF32() ||
      !isHalfFloat(cast.getInput().getType()))
    return v;
  return cast.getInput();
}

KeysOperand KeysOperand::of(AttentionOp op) {
  Value keyT = beforeWidening(op.getKeyT());
  auto transpose = keyT.getDefiningOp<TransposeOp>();
  if (!transpose)
    return {keyT, false};
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = perm.size();
  for (int64_t i = 0; i < rank; ++i)
    if (perm[i] != (i < rank - 2 ? i : 2 * rank - 3 - i))
      return {keyT, false};
  return {beforeWidening(transpose.getInput()), true};
}

Value KeysOperand::element(OpBuilder &b, Location loc, ValueRange at, Value d, Value j) const {
  SmallVector<Value> indices(at);
  if (isKeys)
    indices.append({j, d});
  else
    indices.append({d, j});
  return asF32(b, loc, tensor::ExtractOp::create(b, loc, source, indices));
}

AttentionOperands AttentionOperands::of(AttentionOp op) {
  ArrayRef<int64_t> q = tensorType(op.getQuery()).getShape();
  int64_t rank = q.size();
  AttentionOperands a{beforeWidening(op.getQuery()), KeysOperand::of(op),
                      beforeWidening(op.getValue()), beforeWidening(op.getMask()),
                      op.getScale().convertToFloat()};
  a.batch.assign(q.begin(), q.end() - 2);
  a.lq = q[rank - 2], a.d = q[rank - 1];
  a.lk = tensorType(op.getKeyT()).getShape().back();
  a.dv = tensorType(op.getValue()).getShape().back();
  if (op->hasOneUse())
    if (auto cast = dyn_cast<CastOp>(*op->user_begin());
        cast && isHalfFloat(cast.getType()))
      a.rounding = cast;
  return a;
}

Type AttentionOperands::resultType() const {
  return rounding ? getElementTypeOrSelf(rounding.getType())
                  : Type(Float32Type::get(query.getContext()));
}

Value AttentionOperands::maskAt(OpBuilder &b, Location loc, ValueRange indices) const {
  return asF32(b, loc, broadcastElement(b, loc, mask, indices));
}

Type AttentionOperands::halfType() const {
  Type type = getElementTypeOrSelf(query.getType());
  if (!isHalfFloat(type) ||
      getElementTypeOrSelf(keys.source.getType()) != type ||
      getElementTypeOrSelf(value.getType()) != type)
    return {};
  return type;
}

/// Erases `v`'s producer where it is a widening or a transpose that
/// nothing reads any more, then its input's.
static void eraseUnread(Value v) {
  Operation *op = v ? v.getDefiningOp() : nullptr;
  if (!isa_and_nonnull<CastOp, TransposeOp>(op) || !op->use_empty())
    return;
  Value input = op->getOperand(0);
  op->erase();
  eraseUnread(input);
}

void mlir::kiln::replaceAttention(AttentionOp op, const AttentionOperands &a,
                                  function_ref<Value(OpBuilder &, Location)> build) {
  OpBuilder b(op);
  SmallVector<Value> operands(op->getOperands());
  Value kernel = build(b, op.getLoc());
  if (a.rounding) {
    a.rounding.replaceAllUsesWith(kernel);
    a.rounding.erase();
  } else {
    op.replaceAllUsesWith(kernel);
  }
  op.erase();
  for (Value v : operands)
    eraseUnread(v);
}

int64_t mlir::kiln::attentionScoresBytes(AttentionOp op) {
  ArrayRef<int64_t> q = tensorType(op.getQuery()).getShape();
  int64_t scores = 4 * tensorType(op.getKeyT()).getShape().back();
  for (int64_t size : q.drop_back())
    scores *= size;
  return scores;
}
