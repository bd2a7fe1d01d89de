//===- AttentionMma.cpp - attention as one kernel on the tensor cores -----===//
//
// Where kiln-gpu-attention-rows would make a kiln.attention one kernel of a
// thread per query row on FMA units (scores too large to write out, or
// --gpu-attention=fused) and the model's matmuls run in 16 bits
// (--precision=f16|bf16), this pass makes it one kernel on the tensor cores
// instead: flash attention's loop in mma.sync m16n8k16, before the lowering.
//
//   - A workgroup per batch entry and block of 16W query rows, W warps (4,
//     or 2 or 1 where the queries are a multiple of 32 or 16 only, else the
//     fewest that cover them, at most 4). Warp w
//     owns rows 16w .. 16w + 15 of the block, every thread of it runs every
//     mma: sizes that are not whole blocks, steps of keys, k steps of 16 or
//     tiles of 8 values are padded (a padding query row or value column is
//     read at the operand's last and never written out, a padding key's
//     score is -inf, a padding step of D is 0).
//   - The warp's query rows are A fragments, rounded to 16 bits once.
//   - Per step of K keys (32, or 16), the workgroup's threads first copy
//     the step's keys and values into workgroup memory, rounded to 16 bits
//     (K [K][D], V [K][Dv], rows 8 values longer so that ldmatrix's row
//     addresses fall in distinct banks): the keys and values are read
//     from global memory once per workgroup, not once per warp, adjacent
//     threads reading adjacent values. After a barrier, the B fragments
//     come from them by ldmatrix (.trans for V), and a second barrier
//     ends the step before the next copy.
//   - Per step, the warp computes its 16 x K scores
//     S = Q K^T by mma, whose C fragments give lane l (group g = l / 4,
//     t = l % 4) rows g and g + 8, keys 2t and 2t + 1 of each 8; scales and
//     masks them in f32; takes each row's maximum over the lane's scores,
//     then over its quad (two xor shuffles), and rescales:
//       m' = max(m, s), alpha = exp(m - m'), p = exp(s - m'),
//       l' = l alpha + p,  O' = O alpha + P V.
//   - P stays in registers: the C fragments of two 16x8 tiles are, value
//     for value, the A fragment of one 16x16 tile (FlashAttention-2's
//     observation); rounded to 16 bits, it multiplies V by mma.
//   - A lane's l is its share of its rows' sums, added over the quad after
//     the loop; the lane writes its O / l, which on its own is no
//     rectangle of the output: the block's [16W, Dv] is seen as
//     [W, 2, 8, Dv / 8, 4, 2] (warp, row half, g; column tile, t, pair),
//     where lane (w, g, t) writes [w, :, g, :, t, :].
//
// Fragment layouts are PTX ISA 8.0's (see MmaSync.cpp). The keys are
// copied from K where K^T is its transpose (as exporters write attention),
// else from K^T, adjacent threads reading adjacent keys. The copy is
// synchronous (global loads, then shared stores; no cp.async, which cannot
// round f32 to 16 bits), not double-buffered.
//
//===----------------------------------------------------------------------===//
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/cuda/Fragments.h"
#include "codegen/cuda/Passes.h"
#include "codegen/gpu/AttentionRows.h"
#include "codegen/gpu/Tiles.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDAATTENTIONMMA
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// A head's values a lane's fragments hold at most (D of the query, Dv of
/// the sums): registers.
constexpr int64_t kMaxHead = 128;

/// One attention on the tensor cores.
struct MmaAttention : AttentionOperands {
  Type half = {};                               ///< f16 or bf16: the mma's operands
  NVVM::MMATypes ptxType = NVVM::MMATypes::f16; ///< the same, as PTX names it
  int64_t warps = 0;                            ///< per workgroup, 16 query rows each
  int64_t keysPerStep = 0;                      ///< 32 or 16
  /// Lq, D, Lk and Dv padded to whole blocks, whole k steps of the mma and
  /// whole tiles: a padding query row or value column is read at the
  /// operand's last and never written out, a padding key's score is -inf,
  /// a padding step of D is 0.
  int64_t lqPadded = 0, dPadded = 0, lkPadded = 0, dvPadded = 0;

  int64_t rows() const { return 16 * warps; }
  bool padded() const {
    return lqPadded != lq || dPadded != d || lkPadded != lk || dvPadded != dv;
  }
  /// Whether the kernel's result is larger than the op's (a slice of it).
  bool resultPadded() const { return lqPadded != lq || dvPadded != dv; }
  std::string instruction() const {
    return "mma.sync.m16n8k16, " + stringifyMMATypes(ptxType).str();
  }
  /// The kernel; returns [B..., Lq, Dv].
  Value build(OpBuilder &b, Location loc) const;

private:
  /// The kernel's forall over workgroups; returns [B..., Lq, Dv] padded.
  Value buildPadded(OpBuilder &b, Location loc) const;
  /// A workgroup buffer of a step's keys of `width` values each (K's or
  /// V's), rows padded by 8 values.
  Value stagingBuffer(OpBuilder &b, Location loc, int64_t width) const;
};

/// The workgroup's buffers of a step's keys and values, rounded to 16
/// bits: K [keys][D] and V [keys][Dv] (padded), each row 8 values longer
/// so that ldmatrix's 8 row addresses fall in distinct banks.
struct StagingBuffers {
  Value keys, values;
};

/// One thread's code: its lane's index arithmetic and fragments.
struct AttentionLane {
  const MmaAttention &a;
  Lane &l;
  ValueRange at;  ///< the batch entry
  Value thread;   ///< in the workgroup, 0 .. 32W - 1
  StagingBuffers staged;

  OpBuilder &b = l.b;
  Location loc = l.loc;

  Value index(int64_t v) { return indexConst(b, loc, v); }
  /// Row `row`, column `col` of `t` (at the batch entry), as f32.
  Value element(Value t, Value row, Value col) { return elementAsF32(b, loc, t, at, row, col); }
  /// `x` rounded to the mma's 16-bit type.
  Value round(Value x) { return arith::TruncFOp::create(b, loc, a.half, x); }
  /// Two values as a 32-bit register of the mma's 16-bit type.
  Value pack(Value x, Value y) { return packRegister(b, loc, {round(x), round(y)}); }
  /// `i`, or the last index where it is past `extent` (a padding row or
  /// column, read at the operand's last).
  Value clamped(Value i, int64_t extent, int64_t padded) {
    return padded == extent ? i : arith::MinUIOp::create(b, loc, i, index(extent - 1));
  }
  /// `v`, or 0 where `i` is past `extent` (a padding step of D).
  Value zeroPast(Value v, Value i, int64_t extent, int64_t padded) {
    if (padded == extent)
      return v;
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, index(extent));
    return arith::SelectOp::create(b, loc, inside, v, scalarConst(b, loc, v.getType(), 0.0));
  }
  /// Q[row][col], K^T[d][j] and V[j][col], their padding included.
  Value queryAt(Value row, Value col) {
    Value q = element(a.query, clamped(row, a.lq, a.lqPadded), clamped(col, a.d, a.dPadded));
    return zeroPast(q, col, a.d, a.dPadded);
  }
  Value keyAt(Value d, Value j) {
    Value k = a.keys.element(b, loc, at, clamped(d, a.d, a.dPadded),
                             clamped(j, a.lk, a.lkPadded));
    return zeroPast(k, d, a.d, a.dPadded);
  }
  Value valueAt(Value j, Value col) {
    return element(a.value, clamped(j, a.lk, a.lkPadded), clamped(col, a.dv, a.dvPadded));
  }

  /// Keys j0 .. j0 + K - 1 and their values into the staging buffers,
  /// rounded. The workgroup's T threads copy a buffer's K x `width`
  /// values in the order the operand holds them (a key's values, or K^T's
  /// keys, adjacent): thread t every T-th from its t-th on, adjacent
  /// threads reading adjacent values.
  void stage(Value j0) {
    stage(staged.keys, a.dPadded, !a.keys.isKeys, j0,
          [&](Value j, Value d) { return keyAt(d, j); });
    stage(staged.values, a.dvPadded, /*keysAdjacent=*/false, j0,
          [&](Value j, Value c) { return valueAt(j, c); });
  }
  void stage(Value buffer, int64_t width, bool keysAdjacent, Value j0,
             function_ref<Value(Value, Value)> read) {
    int64_t threads = kWarp * a.warps, values = a.keysPerStep * width;
    int64_t inner = keysAdjacent ? a.keysPerStep : width;
    AffineExpr t = getAffineSymbolExpr(0, b.getContext());
    auto apply = [&](AffineExpr e) {
      return affine::makeComposedAffineApply(b, loc, e, {OpFoldResult(thread)}).getResult();
    };
    // (The values are a multiple of 128 (16 keys x 8), T at most 128.)
    for (int64_t i = 0; i < values / threads; ++i) {
      Value outer = apply((t + threads * i).floorDiv(inner));
      Value adjacent = apply((t + threads * i) % inner);
      Value key = keysAdjacent ? adjacent : outer, col = keysAdjacent ? outer : adjacent;
      memref::StoreOp::create(b, loc, round(read(l.at(j0, key, 1, 0), col)), buffer,
                              ValueRange{key, col});
    }
  }

  /// The warp's query rows as A fragments, one per 16 of D: register r
  /// holds row g + 8 (r % 2), columns 2t + 8 (r / 2) and the next.
  SmallVector<SmallVector<Value>> queryFragments() {
    SmallVector<SmallVector<Value>> fragments;
    for (int64_t k = 0; k < a.dPadded; k += 16) {
      SmallVector<Value> regs;
      for (int64_t r = 0; r < 4; ++r) {
        Value row = l.at(l.rowOrigin, l.group, 1, 8 * (r % 2));
        Value col = l.at(index(k + 8 * (r / 2)), l.quad, 2, 0);
        regs.push_back(pack(queryAt(row, col), queryAt(row, l.plus(col, 1))));
      }
      fragments.push_back(regs);
    }
    return fragments;
  }

  /// D = A B + C for the warp's 16x8 tile; C's and D's 4 values as f32.
  SmallVector<Value> mma(ArrayRef<Value> regsA, ArrayRef<Value> regsB, ArrayRef<Value> c) {
    Type f32 = b.getF32Type();
    Type sums = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    Value d = NVVM::MmaOp::create(
        b, loc, sums, regsA, regsB, c, {16, 8, 16}, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{a.ptxType, a.ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
    SmallVector<Value> values;
    for (int64_t e = 0; e < 4; ++e)
      values.push_back(LLVM::ExtractValueOp::create(b, loc, d, e));
    return values;
  }

  /// `v` combined with its quad's other three values by `combine`.
  Value overQuad(Value v, function_ref<Value(Value, Value)> combine) {
    for (int32_t offset : {1, 2})
      v = combine(v, gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR)
                         .getShuffleResult());
    return v;
  }

  /// The scores of keys j0 .. j0 + K - 1 of the warp's rows: a 16x8 tile's
  /// 4 values per 8 keys, scaled and masked.
  SmallVector<SmallVector<Value>> scores(ArrayRef<SmallVector<Value>> q, Value j0) {
    Value zero = scalarConst(b, loc, b.getF32Type(), 0.0);
    int64_t tiles = a.keysPerStep / 8;
    SmallVector<SmallVector<Value>> s(tiles, SmallVector<Value>(4, zero));
    // B = K^T, read from the staged K [keys][D] by ldmatrix.x4: matrix j
    // holds tile n + j / 2's steps 8 (j % 2) on.
    for (int64_t k = 0; k < a.dPadded; k += 16)
      for (int64_t n = 0; n < tiles; n += 2) {
        SmallVector<Value> regs = ldmatrix(
            l, staged.keys, /*stepDim=*/1, /*atDim=*/0, 4, index(k), index(8 * n),
            [](AffineExpr j) { return j % 2; }, [](AffineExpr j) { return j.floorDiv(2); });
        s[n] = mma(q[k / 16], {regs[0], regs[1]}, s[n]);
        s[n + 1] = mma(q[k / 16], {regs[2], regs[3]}, s[n + 1]);
      }
    Value scale = scalarConst(b, loc, b.getF32Type(), a.scale);
    Value none = extremeConst(b, loc, b.getF32Type(), /*lowest=*/true);
    for (int64_t n = 0; n < tiles; ++n)
      for (int64_t e = 0; e < 4; ++e) {
        Value &v = s[n][e];
        Value key = l.at(j0, l.quad, 2, 8 * n + e % 2);
        if (a.scale != 1.0f)
          v = arith::MulFOp::create(b, loc, v, scale);
        if (a.mask) {
          SmallVector<Value> indices(at);
          indices.append({clamped(l.at(l.rowOrigin, l.group, 1, 8 * (e / 2)), a.lq, a.lqPadded),
                          clamped(key, a.lk, a.lkPadded)});
          v = arith::AddFOp::create(b, loc, v, a.maskAt(b, loc, indices));
        }
        if (a.lkPadded != a.lk) { // a padding key weighs nothing
          Value real = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, key, index(a.lk));
          v = arith::SelectOp::create(b, loc, real, v, none);
        }
      }
    return s;
  }

  /// One step of keys j0 on: the carried m and l of rows g and g + 8 (2
  /// each), then O's 4 values per 8 columns.
  SmallVector<Value> keyStep(ArrayRef<SmallVector<Value>> q, Value j0, ValueRange carried) {
    SmallVector<SmallVector<Value>> s = scores(q, j0);
    auto maximum = [&](Value x, Value y) -> Value {
      return arith::MaximumFOp::create(b, loc, x, y);
    };
    auto add = [&](Value x, Value y) -> Value { return arith::AddFOp::create(b, loc, x, y); };
    SmallVector<Value> next(carried.take_front(4)), alpha(2), base(2);
    for (int64_t h = 0; h < 2; ++h) {
      Value m = carried[h];
      for (ArrayRef<Value> tile : s)
        m = maximum(maximum(m, tile[2 * h]), tile[2 * h + 1]);
      next[h] = overQuad(m, maximum);
      base[h] = finiteMax(b, loc, next[h]);
      alpha[h] = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, carried[h], base[h]));
      next[2 + h] = arith::MulFOp::create(b, loc, carried[2 + h], alpha[h]);
    }
    // The sums take p in f32, P V its 16-bit rounding (as FlashAttention-2).
    for (SmallVector<Value> &tile : s)
      for (int64_t e = 0; e < 4; ++e) {
        Value &p = tile[e];
        p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, p, base[e / 2]));
        next[2 + e / 2] = add(next[2 + e / 2], p);
      }
    // P as A fragments, one per 16 keys: two 16x8 tiles' C fragments.
    SmallVector<SmallVector<Value>> fragmentsP;
    for (int64_t k = 0; k < a.keysPerStep; k += 16) {
      ArrayRef<Value> lo = s[k / 8], hi = s[k / 8 + 1];
      fragmentsP.push_back(
          {pack(lo[0], lo[1]), pack(lo[2], lo[3]), pack(hi[0], hi[1]), pack(hi[2], hi[3])});
    }
    // O alpha + P V, per 8 columns of the values: B = V, read from the
    // staged V [keys][Dv] by ldmatrix.trans, 2 tiles of columns at a time
    // (matrix j holds tile c / 8 + j / 2's keys 8 (j % 2) on).
    SmallVector<Value> o;
    for (int64_t e = 0; e < a.dvPadded / 2; ++e)
      o.push_back(arith::MulFOp::create(b, loc, carried[4 + e], alpha[e % 4 / 2]));
    for (int64_t c = 0; c < a.dvPadded; c += 16) {
      int64_t tiles = std::min<int64_t>(2, (a.dvPadded - c) / 8);
      for (int64_t k = 0; k < a.keysPerStep; k += 16) {
        SmallVector<Value> regs = ldmatrix(
            l, staged.values, /*stepDim=*/0, /*atDim=*/1, 2 * tiles, index(k), index(c),
            [](AffineExpr j) { return j % 2; }, [](AffineExpr j) { return j.floorDiv(2); });
        for (int64_t t = 0; t < tiles; ++t) {
          MutableArrayRef<Value> tile = MutableArrayRef(o).slice(c / 2 + 4 * t, 4);
          SmallVector<Value> sums = mma(fragmentsP[k / 16], {regs[2 * t], regs[2 * t + 1]}, tile);
          llvm::copy(sums, tile.begin());
        }
      }
    }
    llvm::append_range(next, o);
    return next;
  }

  /// The lane's results, [1, 2, 1, Dv / 8, 1, 2] of the block's view.
  Value results(ArrayRef<SmallVector<Value>> q) {
    Type f32 = b.getF32Type();
    SmallVector<Value> init = {extremeConst(b, loc, f32, /*lowest=*/true),
                               extremeConst(b, loc, f32, /*lowest=*/true)};
    init.append(2 + a.dvPadded / 2, scalarConst(b, loc, f32, 0.0));
    // (The body is built in place: the affine helpers look for the loop
    // that owns the induction variable.)
    auto keys = scf::ForOp::create(b, loc, index(0), index(a.lkPadded), index(a.keysPerStep), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(keys.getBody());
      Value j0 = keys.getInductionVar();
      stage(j0);
      gpu::BarrierOp::create(b, loc);
      SmallVector<Value> next = keyStep(q, j0, keys.getRegionIterArgs());
      gpu::BarrierOp::create(b, loc); // before the next step's keys replace these
      scf::YieldOp::create(b, loc, next);
    }
    auto add = [&](Value x, Value y) -> Value { return arith::AddFOp::create(b, loc, x, y); };
    Value sums[2] = {overQuad(keys.getResult(2), add), overQuad(keys.getResult(3), add)};
    SmallVector<Value> out;
    Type result = a.resultType();
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t c = 0; c < a.dvPadded; c += 8)
        for (int64_t e = 0; e < 2; ++e) {
          Value o = arith::DivFOp::create(b, loc, keys.getResult(4 + c / 2 + 2 * h + e), sums[h]);
          out.push_back(result == f32 ? o : arith::TruncFOp::create(b, loc, result, o));
        }
    auto type = RankedTensorType::get({1, 2, 1, a.dvPadded / 8, 1, 2}, result);
    return tensor::FromElementsOp::create(b, loc, type, out);
  }
};

Value MmaAttention::build(OpBuilder &b, Location loc) const {
  Value result = buildPadded(b, loc);
  if (!resultPadded())
    return result;
  SmallVector<int64_t> shape(batch);
  shape.append({lq, dv});
  int64_t rank = shape.size();
  return tensor::ExtractSliceOp::create(
      b, loc, result, SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
      getAsIndexOpFoldResult(b.getContext(), shape),
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
}

Value MmaAttention::stagingBuffer(OpBuilder &b, Location loc, int64_t width) const {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto buffer = memref::AllocOp::create(
      b, loc, MemRefType::get({keysPerStep, width + 8}, half, nullptr, workgroup));
  buffer.setAlignment(16);
  return buffer;
}

Value MmaAttention::buildPadded(OpBuilder &b, Location loc) const {
  MLIRContext *ctx = b.getContext();
  int64_t loops = batch.size() + 1, threads = 32 * warps;
  Type element = resultType();
  SmallVector<int64_t> shape(batch);
  shape.append({lqPadded, dvPadded});
  SmallVector<OpFoldResult> ones(loops, b.getIndexAttr(1));
  SmallVector<OpFoldResult> ends = getAsIndexOpFoldResult(ctx, ArrayRef(shape).drop_back());
  SmallVector<OpFoldResult> steps = ones;
  steps.back() = b.getIndexAttr(rows());
  scf::ForallOp workgroups =
      workgroupForall(b, loc, ends, steps, emptyTensor(b, loc, shape, element));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(workgroups.getTerminator());
  SmallVector<Value> ivs = workgroups.getInductionVars();
  // The block's [16W, Dv] of the output, seen as lanes write it.
  SmallVector<OpFoldResult> offsets(getAsOpFoldResult(ivs)), sizes = ones, strides = ones;
  offsets.push_back(b.getIndexAttr(0));
  sizes.back() = b.getIndexAttr(rows());
  sizes.push_back(b.getIndexAttr(dvPadded));
  strides.push_back(b.getIndexAttr(1));
  auto blockType = RankedTensorType::get({rows(), dvPadded}, element);
  Value block = tensor::ExtractSliceOp::create(
      b, loc, blockType, workgroups.getRegionIterArgs()[0], offsets, sizes, strides);
  SmallVector<ReassociationIndices> lanesOf = {{0, 1, 2}, {3, 4, 5}};
  auto lanesType = RankedTensorType::get({warps, 2, 8, dvPadded / 8, 4, 2}, element);
  block = tensor::ExpandShapeOp::create(b, loc, lanesType, block, lanesOf);
  StagingBuffers staged = {stagingBuffer(b, loc, dPadded), stagingBuffer(b, loc, dvPadded)};
  auto lanes = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(threads)}, ValueRange{block},
      b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(lanes.getTerminator());
    AffineExpr x, first;
    bindSymbols(ctx, x, first);
    Value thread = lanes.getInductionVar(0);
    auto apply = [&](AffineExpr e, ValueRange operands) {
      return affine::makeComposedAffineApply(b, loc, e, getAsOpFoldResult(operands)).getResult();
    };
    Value zero = indexConst(b, loc, 0);
    Lane l{b,
           loc,
           apply(x % 32, thread),
           apply((x % 32).floorDiv(4), thread),
           apply(x % 4, thread),
           apply(x.floorDiv(32), thread),
           apply(first + x.floorDiv(32) * 16, {thread, ivs.back()}),
           zero,
           zero};
    AttentionLane lane{*this, l, ValueRange(ivs).drop_back(), thread, staged};
    Value out = lane.results(lane.queryFragments());
    SmallVector<OpFoldResult> at = {l.warp, zero, l.group, zero, l.quad, zero};
    SmallVector<OpFoldResult> outSizes = getAsIndexOpFoldResult(ctx, {1, 2, 1, dvPadded / 8, 1, 2});
    SmallVector<OpFoldResult> unit(6, b.getIndexAttr(1));
    b.setInsertionPointToStart(lanes.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, out, lanes.getRegionIterArgs()[0], at,
                                          outSizes, unit);
  }
  Value result = tensor::CollapseShapeOp::create(b, loc, blockType, lanes.getResult(0), lanesOf);
  b.setInsertionPointToStart(workgroups.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, result, workgroups.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return workgroups.getResult(0);
}

/// `op` on the tensor cores in `half` (null: the 16-bit type its Q, K and
/// V are), or why not.
FailureOr<MmaAttention> analyze(AttentionOp op, Type half, std::string &whyNot) {
  MmaAttention a{AttentionOperands::of(op)};
  a.half = half ? half : a.halfType();
  if (!a.half) {
    whyNot = "its Q, K and V are not 16-bit values of one type (--precision=f16 or bf16 "
             "rounds them)";
    return failure();
  }
  a.ptxType = a.half.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  a.dPadded = llvm::alignTo(a.d, 16);
  a.dvPadded = llvm::alignTo(a.dv, 8);
  if (a.dPadded > kMaxHead || a.dvPadded > kMaxHead) {
    whyNot = llvm::formatv("heads of {0} + {1} values, more than {2} each (registers)", a.d,
                           a.dv, kMaxHead);
    return failure();
  }
  // Whole blocks of rows and steps of keys where the sizes allow; else the
  // larger blocks (up to 4 warps) and steps, fewer of them.
  a.warps = a.lq % 64 == 0   ? 4
            : a.lq % 32 == 0 ? 2
            : a.lq % 16 == 0 ? 1
                             : std::min<int64_t>(4, llvm::divideCeil(a.lq, 16));
  a.keysPerStep = a.lk % 32 == 0 || (a.lk % 16 != 0 && a.lk > 16) ? 32 : 16;
  a.lqPadded = llvm::alignTo(a.lq, a.rows());
  a.lkPadded = llvm::alignTo(a.lk, a.keysPerStep);
  return a;
}

struct KilnCudaAttentionMmaPass
    : mlir::kiln::impl::KilnCudaAttentionMmaBase<KilnCudaAttentionMmaPass> {
  using Base::Base;

  void runOnOperation() override {
    Type half; // null: each attention's own
    if (type == "f16")
      half = Float16Type::get(&getContext());
    else if (type == "bf16")
      half = BFloat16Type::get(&getContext());
    else if (!type.empty()) {
      emitError(getOperation().getLoc())
          << "kiln-cuda-attention-mma: type '" << type
          << "' is not f16 or bf16 (or empty: the 16-bit type of Q, K and V)";
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops)
      if (attentionScoresBytes(op) > maxScoresBytes)
        rewrite(op, half);
  }

  void rewrite(AttentionOp op, Type half) {
    std::string whyNot;
    FailureOr<MmaAttention> a = analyze(op, half, whyNot);
    if (failed(a)) {
      if (reportPlacement)
        op.emitRemark() << "placement: attention not on the tensor cores: " << whyNot;
      return;
    }
    if (reportPlacement) {
      InFlightDiagnostic remark = op.emitRemark();
      remark << "placement: attention as one kernel on the tensor cores (" << a->instruction()
             << "), a warp per 16 query rows over " << a->lk << " keys, " << a->keysPerStep
             << " a step, its scores never written out";
      if (a->padded())
        remark << "; padded to " << a->lqPadded << " queries, " << a->lkPadded
               << " keys, heads of " << a->dPadded << " + " << a->dvPadded;
    }
    replaceAttention(op, *a, [&](OpBuilder &b, Location loc) { return a->build(b, loc); });
  }
};

} // namespace
