//===- NormalizeRows.cpp - softmax and layer norm, a workgroup per row ----===//
//
// Lowered to linalg, a softmax or a layer norm is two row reductions and
// an elementwise op, and the GPU pipeline makes each a kernel of a thread
// per row; where the rows are few and long, kiln-gpu-split-reductions
// splits each reduction in two more: bert's layer norm was five kernels,
// one of them a single workgroup, and its input read three times from
// memory. This pass makes such an op one kernel instead, before the
// lowering: a workgroup per row, whose threads share the row's work. Each
// row statistic (the maximum, then the sum of exponentials; the mean, then
// the variance) is computed in two steps: every thread combines the terms
// of its elements (columns t, t + T, ...: adjacent threads read adjacent
// values) into one partial, written to a workgroup buffer; after a barrier,
// every thread combines the T partials itself. The last step writes the
// row's outputs the same way, each thread its own columns.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/gpu/Passes.h"
#include "codegen/gpu/Tiles.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUNORMALIZEROWS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

using Builder = OpBuilder;
/// Element `col` of the row at `at` (its position in the leading dims).
using ReadFn = std::function<Value(Builder &, Location, ValueRange at, Value col)>;
/// A value computed from element x (at `col`) and the statistics before.
using TermFn = std::function<Value(Builder &, Location, Value x, Value col, ArrayRef<Value>)>;

/// A statistic of a row: the maximum, sum or mean of a term of its
/// elements.
struct Statistic {
  enum Kind { Max, Sum, Mean } kind;
  TermFn term;
  bool isMax() const { return kind == Max; }

  Value identity(Builder &b, Location loc) const {
    Type f32 = b.getF32Type();
    return isMax() ? extremeConst(b, loc, f32, /*lowest=*/true) : scalarConst(b, loc, f32, 0.0);
  }
  Value combine(Builder &b, Location loc, Value x, Value y) const {
    if (isMax())
      return arith::MaximumFOp::create(b, loc, x, y);
    return arith::AddFOp::create(b, loc, x, y);
  }
};

/// An op over rows of n values as one kernel: a workgroup of `threads`
/// threads per row computes its statistics in turn, then `output` for each
/// element.
struct RowKernel {
  SmallVector<OpFoldResult> rows; ///< the leading dimensions
  int64_t n, threads;
  ReadFn read;
  SmallVector<Statistic, 2> statistics;
  TermFn output;

  /// The statistic whose threads' partials are in `partials`: each thread
  /// combines them all.
  Value fold(Builder &b, Location loc, const Statistic &s, Value partials) const {
    auto loop = scf::ForOp::create(
        b, loc, indexConst(b, loc, 0), indexConst(b, loc, threads), indexConst(b, loc, 1),
        ValueRange{s.identity(b, loc)},
        [&](Builder &nb, Location l, Value j, ValueRange acc) {
          Value partial = tensor::ExtractOp::create(nb, l, partials, j);
          scf::YieldOp::create(nb, l, s.combine(nb, l, acc[0], partial));
        });
    if (s.kind != Statistic::Mean)
      return loop.getResult(0);
    Value inverse = scalarConst(b, loc, b.getF32Type(), 1.0 / static_cast<double>(n));
    return arith::MulFOp::create(b, loc, loop.getResult(0), inverse);
  }

  /// A loop over the workgroup's threads whose shared output is `into`:
  /// `body` gets the thread's id and the output's block argument, and
  /// inserts its part with a parallel_insert_slice.
  scf::ForallOp threadLoop(Builder &b, Location loc, Value into,
                           function_ref<void(Builder &, Value t, Value slot)> body) const {
    MLIRContext *ctx = b.getContext();
    auto loop = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(threads)}, ValueRange{into},
        b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getTerminator());
    body(b, loop.getInductionVar(0), loop.getRegionIterArgs()[0]);
    return loop;
  }

  /// The threads' partials of statistic `k`, in a workgroup buffer of
  /// `threads` values, given the buffers of the statistics before it.
  Value partials(Builder &b, Location loc, ValueRange at, unsigned k,
                 ArrayRef<Value> before) const {
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value buffer = bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get({threads}, f32), ValueRange{}, Value(), Value(), workgroup);
    const Statistic &s = statistics[k];
    scf::ForallOp loop = threadLoop(b, loc, buffer, [&](Builder &b, Value t, Value slots) {
      SmallVector<Value> known = statisticsFrom(b, loc, before);
      auto terms = scf::ForOp::create(
          b, loc, t, indexConst(b, loc, n), indexConst(b, loc, threads),
          ValueRange{s.identity(b, loc)}, [&](Builder &nb, Location l, Value c, ValueRange acc) {
            Value term = s.term(nb, l, read(nb, l, at, c), c, known);
            scf::YieldOp::create(nb, l, s.combine(nb, l, acc[0], term));
          });
      OpFoldResult one = b.getIndexAttr(1);
      Value slot = tensor::ExtractSliceOp::create(b, loc, slots, ArrayRef<OpFoldResult>{t},
                                                  ArrayRef<OpFoldResult>{one},
                                                  ArrayRef<OpFoldResult>{one});
      slot = tensor::InsertOp::create(b, loc, terms.getResult(0), slot,
                                      ValueRange{indexConst(b, loc, 0)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(cast<scf::InParallelOp>(b.getBlock()->getTerminator()).getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, slot, slots, ArrayRef<OpFoldResult>{t},
                                            ArrayRef<OpFoldResult>{one},
                                            ArrayRef<OpFoldResult>{one});
    });
    return loop.getResult(0);
  }

  /// Statistics 0, 1, ... from their partials' buffers.
  SmallVector<Value> statisticsFrom(Builder &b, Location loc, ArrayRef<Value> buffers) const {
    SmallVector<Value> values;
    for (auto [s, buffer] : llvm::zip(statistics, buffers))
      values.push_back(fold(b, loc, s, buffer));
    return values;
  }

  /// The kernel; returns the result, [rows..., n].
  Value build(Builder &b, Location loc) const {
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    int64_t loops = rows.size();
    SmallVector<OpFoldResult> shape(rows);
    shape.push_back(b.getIndexAttr(n));
    Value init = emptyTensor(b, loc, shape, f32);
    SmallVector<OpFoldResult> ones(loops, b.getIndexAttr(1));
    scf::ForallOp workgroups = workgroupForall(b, loc, rows, ones, init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(workgroups.getTerminator());
    SmallVector<Value> at = workgroups.getInductionVars();

    SmallVector<Value> buffers;
    for (unsigned k = 0; k < statistics.size(); ++k)
      buffers.push_back(partials(b, loc, at, k, buffers));

    // The row [1..., n] of the result, each thread writing columns t,
    // t + T, ... (a strided slice of ceil((n - t) / T) of them).
    SmallVector<OpFoldResult> rowAt(at.begin(), at.end()), rowSizes(ones), unit(ones);
    rowAt.push_back(b.getIndexAttr(0));
    rowSizes.push_back(b.getIndexAttr(n));
    unit.push_back(b.getIndexAttr(1));
    Value row = tensor::ExtractSliceOp::create(b, loc, workgroups.getRegionIterArgs()[0], rowAt,
                                               rowSizes, unit);
    scf::ForallOp writes = threadLoop(b, loc, row, [&](Builder &b, Value t, Value out) {
      SmallVector<Value> known = statisticsFrom(b, loc, buffers);
      AffineExpr d = getAffineDimExpr(0, ctx);
      OpFoldResult count =
          n % threads == 0
              ? OpFoldResult(b.getIndexAttr(n / threads))
              : affine::makeComposedFoldedAffineApply(
                    b, loc, AffineMap::get(1, 0, (n - d).ceilDiv(threads)), {t});
      SmallVector<OpFoldResult> mineAt(loops + 1, b.getIndexAttr(0)), mineSizes(ones),
          mineStrides(ones);
      mineAt.back() = t;
      mineSizes.push_back(count);
      mineStrides.push_back(b.getIndexAttr(threads));
      Value mine =
          tensor::ExtractSliceOp::create(b, loc, out, mineAt, mineSizes, mineStrides);
      auto elements = scf::ForOp::create(
          b, loc, indexConst(b, loc, 0), indexValue(b, loc, count), indexConst(b, loc, 1),
          ValueRange{mine}, [&](Builder &nb, Location l, Value i, ValueRange acc) {
            Value c = affine::AffineApplyOp::create(
                nb, l, AffineMap::get(2, 0, d + getAffineDimExpr(1, ctx) * threads),
                ValueRange{t, i});
            Value y = output(nb, l, read(nb, l, at, c), c, known);
            SmallVector<Value> indices(loops, indexConst(nb, l, 0));
            indices.push_back(i);
            scf::YieldOp::create(nb, l,
                                 tensor::InsertOp::create(nb, l, y, acc[0], indices).getResult());
          });
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(cast<scf::InParallelOp>(b.getBlock()->getTerminator()).getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, elements.getResult(0), out, mineAt,
                                            mineSizes, mineStrides);
    });
    b.setInsertionPointToStart(workgroups.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, writes.getResult(0),
                                          workgroups.getRegionIterArgs()[0], rowAt, rowSizes,
                                          unit);
    return workgroups.getResult(0);
  }
};

/// Values of a row at most: 256 a thread.
constexpr int64_t kMaxRow = 128 * 256;

/// Threads per row: a quarter of its values, a power of two from 32 to 128.
int64_t threadsFor(int64_t n) {
  return std::clamp<int64_t>(llvm::bit_floor(static_cast<uint64_t>(n / 4)), 32, 128);
}

/// Why `op` (a softmax, log-softmax or layer norm) stays reductions and
/// elementwise kernels, or none if its rows make one kernel: f32 rows
/// along its last dimension, of a static length from `minRow` up to
/// kMaxRow (longer rows get the GPU's worth of threads from split
/// reductions), a layer norm's scale and bias of static shapes.
std::optional<std::string> whyNotRows(Operation *op, int64_t minRow) {
  RankedTensorType type = tensorType(op->getOperand(0));
  int64_t rank = type.getRank(), n = type.getShape().back();
  auto f32 = [](Value v) { return tensorType(v).getElementType().isF32(); };
  if (rank < 2)
    return "one row";
  if (cast<IntegerAttr>(op->getAttr("axis")).getInt() != rank - 1)
    return "along other dimensions than the last";
  if (!llvm::all_of(op->getOperands(), f32))
    return "not f32";
  if (ShapedType::isDynamic(n))
    return "rows of a run-time length";
  if (n < minRow)
    return "rows shorter than " + std::to_string(minRow);
  if (n > kMaxRow)
    return "rows longer than " + std::to_string(kMaxRow);
  if (llvm::any_of(op->getOperands().drop_front(),
                   [](Value v) { return !tensorType(v).hasStaticShape(); }))
    return "a scale or bias of run-time shape";
  return std::nullopt;
}

/// The kernel over the rows of `input` [rows..., n] (n static), reading
/// its elements.
RowKernel rowKernel(OpBuilder &b, Location loc, Value input) {
  RowKernel kernel;
  kernel.rows = sizesOf(b, loc, input);
  kernel.rows.pop_back();
  kernel.n = tensorType(input).getShape().back();
  kernel.threads = threadsFor(kernel.n);
  kernel.read = [input](Builder &b, Location loc, ValueRange at, Value col) -> Value {
    SmallVector<Value> indices(at);
    indices.push_back(col);
    return tensor::ExtractOp::create(b, loc, input, indices);
  };
  return kernel;
}

/// softmax = exp(x - max) / sum, log_softmax = (x - max) - log(sum), with
/// sum = sum(exp(x - max)); max and sum the row statistics.
void addSoftmax(RowKernel &k, bool isLog) {
  k.statistics.push_back({Statistic::Max, [](Builder &, Location, Value x, Value,
                                             ArrayRef<Value>) { return x; }});
  k.statistics.push_back(
      {Statistic::Sum, [](Builder &b, Location loc, Value x, Value, ArrayRef<Value> s) -> Value {
         return math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, s[0]));
       }});
  k.output = [isLog](Builder &b, Location loc, Value x, Value, ArrayRef<Value> s) -> Value {
    Value shifted = arith::SubFOp::create(b, loc, x, s[0]);
    if (isLog)
      return arith::SubFOp::create(b, loc, shifted, math::LogOp::create(b, loc, s[1]));
    return arith::DivFOp::create(b, loc, math::ExpOp::create(b, loc, shifted), s[1]);
  };
}

/// (x - mean) * rsqrt(var + eps) * scale + bias, with the mean and the
/// variance (the mean of (x - mean)^2) the row statistics.
void addLayerNorm(RowKernel &k, LayerNormOp op) {
  float eps = op.getEpsilon().convertToFloat();
  k.statistics.push_back({Statistic::Mean, [](Builder &, Location, Value x, Value,
                                              ArrayRef<Value>) { return x; }});
  k.statistics.push_back(
      {Statistic::Mean, [](Builder &b, Location loc, Value x, Value, ArrayRef<Value> s) -> Value {
         Value centered = arith::SubFOp::create(b, loc, x, s[0]);
         return arith::MulFOp::create(b, loc, centered, centered);
       }});
  Value scale = op.getScale(), bias = op.getBias();
  k.output = [=](Builder &b, Location loc, Value x, Value col, ArrayRef<Value> s) -> Value {
    Value centered = arith::SubFOp::create(b, loc, x, s[0]);
    Value inverse = math::RsqrtOp::create(
        b, loc, arith::AddFOp::create(b, loc, s[1], scalarConst(b, loc, b.getF32Type(), eps)));
    Value y = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, centered, inverse),
                                    broadcastElement(b, loc, scale, col));
    if (!bias)
      return y;
    return arith::AddFOp::create(b, loc, y, broadcastElement(b, loc, bias, col));
  };
}

/// `k` reading scale * s + mask for the scores s of an attention (the
/// mask broadcast).
void readScores(RowKernel &k, Value scores, float scale, Value mask) {
  k.read = [=](Builder &b, Location loc, ValueRange at, Value col) -> Value {
    SmallVector<Value> indices(at);
    indices.push_back(col);
    Value s = tensor::ExtractOp::create(b, loc, scores, indices);
    if (scale != 1.0f)
      s = arith::MulFOp::create(b, loc, s, scalarConst(b, loc, b.getF32Type(), scale));
    if (!mask)
      return s;
    return arith::AddFOp::create(b, loc, s, broadcastElement(b, loc, mask, indices));
  };
}

struct KilnGpuNormalizeRowsPass
    : mlir::kiln::impl::KilnGpuNormalizeRowsBase<KilnGpuNormalizeRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, AttentionOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto attention = dyn_cast<AttentionOp>(op))
        rewriteAttention(attention);
      else
        rewrite(op);
    }
  }

  /// An attention kiln-gpu-attention-rows left unfused, over rows of at
  /// least minRowLength keys: its scores q kt (a batch matmul), their
  /// softmax as one kernel (scale and mask applied as it reads them), then
  /// the probabilities times v (a batch matmul); else its lowering's
  /// reductions.
  void rewriteAttention(AttentionOp op) {
    // (Its verifier asks for f32 operands of static shapes.)
    Value query = op.getQuery(), keyT = op.getKeyT();
    int64_t lk = tensorType(keyT).getShape().back();
    if (lk < minRowLength || lk > kMaxRow)
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> shape(tensorType(query).getShape().drop_back());
    shape.push_back(lk);
    Value scores = MatMulOp::create(b, loc, RankedTensorType::get(shape, b.getF32Type()), query,
                                    keyT);
    RowKernel k = rowKernel(b, loc, scores);
    readScores(k, scores, op.getScale().convertToFloat(), op.getMask());
    addSoftmax(k, /*isLog=*/false);
    if (reportPlacement)
      op.emitRemark() << "placement: attention's softmax as one kernel, a workgroup of "
                      << k.threads << " threads per row of " << lk << " scores";
    Value probabilities = k.build(b, loc);
    op.replaceAllUsesWith(
        MatMulOp::create(b, loc, op.getType(), probabilities, op.getValue()).getResult());
    op.erase();
  }

  void rewrite(Operation *op) {
    if (std::optional<std::string> whyNot = whyNotRows(op, minRowLength)) {
      if (reportPlacement)
        op->emitRemark() << "placement: " << op->getName().stripDialect()
                         << " as reductions and elementwise kernels: " << *whyNot;
      return;
    }
    OpBuilder b(op);
    Location loc = op->getLoc();
    RowKernel k = rowKernel(b, loc, op->getOperand(0));
    if (auto norm = dyn_cast<LayerNormOp>(op))
      addLayerNorm(k, norm);
    else
      addSoftmax(k, isa<LogSoftmaxOp>(op));
    if (reportPlacement)
      op->emitRemark() << "placement: " << op->getName().stripDialect()
                       << " as one kernel, a workgroup of " << k.threads
                       << " threads per row of " << k.n << " values";
    Value result = k.build(b, loc);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }
};

} // namespace
