//===- FuseAttention.cpp - scaled dot-product attention as one op ---------===//
//
// Attention written out in ONNX materializes the [Lq, Lk] scores of every
// head: 64 MiB per head at 4096 tokens. Recognised as kiln.attention, it is
// lowered to an online softmax over blocks of keys that never holds more
// than a block of scores (see codegen/KilnToLinalg/Attention.cpp).
//
// A half model's attention (f16 or bf16 tensors) reaches this pass as
// kiln-compute-half-in-f32 leaves it: each op computed in f32, its result
// rounded to 16 bits and widened again for the next (a matmul of 16-bit
// operands may give f32 itself). The chain is matched through those
// roundings, and the fused op computes in f32 from Q, K and V widened,
// rounding only its output: the scores and the softmax are not rounded to
// 16 bits in between (as onnxruntime's and FlashAttention's fused kernels
// do not round them).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The pieces of softmax(scale * (q @ kt) + mask) @ v, and the ops they
/// replace (last first).
struct AttentionChain {
  Value query, keyT, value, mask;
  float scale = 1.0f;
  SmallVector<Operation *> ops;
};

/// `op`'s result feeds only the next op of the chain.
bool feedsOnlyChain(Operation *op) { return op && op->hasOneUse(); }

/// `cast`, if it is a kiln.cast from f32 to 16 bits (`toHalf`) or from 16
/// bits to f32, that only the chain reads.
CastOp chainCast(Operation *op, bool toHalf) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  if (!cast || !feedsOnlyChain(cast))
    return {};
  Type from = cast.getInput().getType(), to = cast.getType();
  bool rounds = getElementTypeOrSelf(from).isF32() && isHalfFloat(to);
  bool widens = isHalfFloat(from) && getElementTypeOrSelf(to).isF32();
  return (toHalf ? rounds : widens) ? cast : CastOp();
}

/// The f32 value that `v` is the 16-bit rounding of, widened back (a half
/// model's op computed in f32, read by the next), its two casts added to
/// `ops` (last first); else `v`.
Value beforeRounding(Value v, SmallVectorImpl<Operation *> &ops) {
  CastOp widen = chainCast(v.getDefiningOp(), /*toHalf=*/false);
  CastOp round = widen ? chainCast(widen.getInput().getDefiningOp(), /*toHalf=*/true) : CastOp();
  if (!round)
    return v;
  ops.append({widen, round});
  return round.getInput();
}

/// Matches the scores `s` = [scale *] (q @ kt), dividing or multiplying by
/// a constant; fills the chain's query, key and scale.
LogicalResult matchScores(Value s, AttentionChain &chain, std::string &why) {
  Operation *op = s.getDefiningOp();
  if (isa_and_nonnull<MulOp, DivOp>(op) && feedsOnlyChain(op)) {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    std::optional<float> c = f32Scalar(rhs);
    if (!c && isa<MulOp>(op) && (c = f32Scalar(lhs)))
      std::swap(lhs, rhs);
    if (c && shapeOf(lhs) == shapeOf(s)) {
      chain.scale = isa<DivOp>(op) ? 1.0f / *c : *c;
      chain.ops.push_back(op);
      op = beforeRounding(lhs, chain.ops).getDefiningOp();
    }
  }
  auto matmul = dyn_cast_or_null<MatMulOp>(op);
  if (!matmul) {
    // (A rounding that reached here is one that other ops read too.)
    why = isa_and_nonnull<CastOp>(op)
              ? "the scores' 16-bit rounding has other users"
              : "its input is not a matmul, scaled by a constant and masked at most";
    return failure();
  }
  if (!feedsOnlyChain(matmul)) {
    why = "the scores have other users";
    return failure();
  }
  chain.ops.push_back(matmul);
  chain.query = matmul.getLhs();
  chain.keyT = matmul.getRhs();
  return success();
}

/// Matches what feeds the softmax: scores, plus a mask when it is an Add of
/// a tensor that does not broadcast the scores.
LogicalResult matchMaskedScores(Value x, AttentionChain &chain, std::string &why) {
  auto add = x.getDefiningOp<AddOp>();
  if (!add || !feedsOnlyChain(add))
    return matchScores(x, chain, why);
  for (auto [scores, mask] : {std::pair(add.getLhs(), add.getRhs()),
                              std::pair(add.getRhs(), add.getLhs())}) {
    if (shapeOf(scores) != shapeOf(x))
      continue;
    AttentionChain attempt = chain;
    attempt.ops.push_back(add);
    std::string ignored;
    if (succeeded(matchScores(beforeRounding(scores, attempt.ops), attempt, ignored))) {
      attempt.mask = mask;
      chain = attempt;
      return success();
    }
  }
  why = "its input adds two tensors, neither of them scores of a matmul";
  return failure();
}

/// The mask's shape with leading 1s up to `rank` (numpy broadcasting).
SmallVector<int64_t> maskShapeAtRank(RankedTensorType mask, int64_t rank) {
  SmallVector<int64_t> shape(rank - mask.getRank(), 1);
  llvm::append_range(shape, mask.getShape());
  return shape;
}

/// Whether the shapes fit kiln.attention (see its verifier).
LogicalResult checkShapes(const AttentionChain &chain, std::string &why) {
  for (Value v : {chain.query, chain.keyT, chain.value}) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!(type.getElementType().isF32() || isHalfFloat(type)) || !type.hasStaticShape()) {
      why = "the matmul operands are not f32, f16 or bf16 tensors of static shape";
      return failure();
    }
    if (type.getRank() < 2 || shapeOf(v).size() != shapeOf(chain.query).size() ||
        shapeOf(v).drop_back(2) != shapeOf(chain.query).drop_back(2)) {
      why = "the matmuls broadcast their batch dimensions";
      return failure();
    }
  }
  if (!chain.mask)
    return success();
  auto maskType = cast<RankedTensorType>(chain.mask.getType());
  size_t rank = shapeOf(chain.query).size();
  if (!(maskType.getElementType().isF32() || isHalfFloat(maskType)) || !maskType.hasStaticShape() ||
      maskType.getRank() > (int64_t)rank) {
    why = "the mask is not a float tensor of static shape and at most the scores' rank";
    return failure();
  }
  SmallVector<int64_t> mask = maskShapeAtRank(maskType, rank);
  ArrayRef<int64_t> batch = shapeOf(chain.query).drop_back(2);
  ArrayRef<int64_t> maskBatch = ArrayRef(mask).drop_back(2);
  if (!llvm::all_of(maskBatch, [](int64_t s) { return s == 1; }) && maskBatch != batch) {
    why = "the mask broadcasts over some batch dimensions but not all";
    return failure();
  }
  return success();
}

/// Matches the attention that ends in the matmul using `softmax`.
FailureOr<AttentionChain> matchAttention(SoftmaxOp softmax, std::string &why) {
  int64_t rank = cast<RankedTensorType>(softmax.getType()).getRank();
  if ((int64_t)softmax.getAxis() != rank - 1) {
    why = "it does not run along the last axis";
    return failure();
  }
  // P, or in a half model its rounding (widened again, unless the matmul
  // takes 16-bit operands).
  SmallVector<Operation *> weights = {softmax};
  Value p = softmax.getResult();
  for (bool toHalf : {true, false})
    if (CastOp cast = p.hasOneUse() ? chainCast(*p.user_begin(), toHalf) : CastOp()) {
      weights.insert(weights.begin(), cast);
      p = cast.getResult();
    }
  auto output = p.hasOneUse() ? dyn_cast<MatMulOp>(*p.user_begin()) : MatMulOp();
  if (!output || output.getLhs() != p || !getElementTypeOrSelf(output.getType()).isF32()) {
    why = "its result is not used only as the left operand of a matmul";
    return failure();
  }
  AttentionChain chain;
  chain.ops = {output};
  llvm::append_range(chain.ops, weights);
  chain.value = output.getRhs();
  if (failed(matchMaskedScores(beforeRounding(softmax.getInput(), chain.ops), chain, why)) ||
      failed(checkShapes(chain, why)))
    return failure();
  return chain;
}

/// `v` as f32: widened where it is a 16-bit tensor.
Value asF32(OpBuilder &b, Location loc, Value v) {
  if (!v || !isHalfFloat(v.getType()))
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  return CastOp::create(b, loc, type.clone(b.getF32Type()), v);
}

/// Replaces the chain by one kiln.attention of f32 operands (16-bit ones
/// widened); a mask of lower rank is reshaped to the scores' rank.
void fuse(AttentionChain &chain) {
  auto output = cast<MatMulOp>(chain.ops.front());
  OpBuilder b(output);
  Location loc = output.getLoc();
  Value mask = asF32(b, loc, chain.mask);
  int64_t rank = cast<RankedTensorType>(chain.query.getType()).getRank();
  if (mask && cast<RankedTensorType>(mask.getType()).getRank() < rank) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    mask = ReshapeOp::create(b, loc, maskType.clone(maskShapeAtRank(maskType, rank)), mask);
  }
  auto attention = AttentionOp::create(
      b, loc, output.getType(), asF32(b, loc, chain.query), asF32(b, loc, chain.keyT),
      asF32(b, loc, chain.value), mask, b.getF32FloatAttr(chain.scale));
  output.replaceAllUsesWith(attention.getResult());
  for (Operation *op : chain.ops)
    op->erase();
}

/// "qk (MatMul), scale (Mul), softmax (Softmax), pv (MatMul)", first to
/// last (not a half model's roundings, which carry their node's name).
std::string fusedNodes(const AttentionChain &chain) {
  std::string names;
  for (Operation *op : llvm::reverse(chain.ops))
    if (!isa<CastOp>(op))
      names += (names.empty() ? "" : ", ") + describeNode(op);
  return names;
}

struct KilnFuseAttentionPass : mlir::kiln::impl::KilnFuseAttentionBase<KilnFuseAttentionPass> {
  using KilnFuseAttentionBase::KilnFuseAttentionBase;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      Location loc = softmax.getLoc();
      std::string why;
      FailureOr<AttentionChain> chain = matchAttention(softmax, why);
      if (failed(chain)) {
        if (report)
          emitRemark(loc) << "fusion: not fused into an attention kernel: " << why;
        continue;
      }
      if (report)
        emitRemark(loc) << "fusion: attention kernel over blocks of keys: " << fusedNodes(*chain);
      fuse(*chain);
    }
  }
};
} // namespace
