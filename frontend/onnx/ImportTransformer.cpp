//===- ImportTransformer.cpp - ONNX Attention and RotaryEmbedding (23) ----===//
//
// Attention is composed as MatMul(Q, K^T) -> Mul(scale) -> Add(mask) ->
// Softmax -> MatMul(V), the chain kiln-fuse-attention turns into one
// kiln.attention (online softmax, never the whole score matrix) wherever
// the shapes allow; elsewhere the chain runs as written. Grouped-query
// attention repeats each key/value head for its group of query heads.
//
// RotaryEmbedding rotates pairs of features by angles whose cosines and
// sines come from caches indexed by position.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Value transpose(ImportContext &ctx, Value x, ArrayRef<int64_t> perm) {
  RankedTensorType t = typeOf(x);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, t.getElementType()),
                                x, perm);
}

/// [B, L, H*D] -> [B, H, L, D].
Value splitHeads(ImportContext &ctx, Value x, int64_t heads) {
  ArrayRef<int64_t> s = typeOf(x).getShape();
  Value r = Emitter{ctx}.reshape(x, {s[0], s[1], heads, s[2] / heads});
  return transpose(ctx, r, {0, 2, 1, 3});
}

/// [B, H, L, D] -> [B, L, H*D].
Value mergeHeads(ImportContext &ctx, Value x) {
  ArrayRef<int64_t> s = typeOf(x).getShape();
  return Emitter{ctx}.reshape(transpose(ctx, x, {0, 2, 1, 3}), {s[0], s[2], s[1] * s[3]});
}

/// [B, Hkv, S, D] with each head repeated `group` times: [B, Hkv*group, S, D].
Value repeatHeads(ImportContext &ctx, Value x, int64_t group) {
  if (group == 1)
    return x;
  ArrayRef<int64_t> s = typeOf(x).getShape();
  Emitter e{ctx};
  Value spread = e.reshape(x, {s[0], s[1], 1, s[2], s[3]});
  auto wide = RankedTensorType::get({s[0], s[1], group, s[2], s[3]}, typeOf(x).getElementType());
  Value repeated = k::ExpandOp::create(ctx.b, ctx.loc, wide, spread);
  return e.reshape(repeated, {s[0], s[1] * group, s[2], s[3]});
}

Value matmul(ImportContext &ctx, Value a, Value b) {
  ArrayRef<int64_t> sa = typeOf(a).getShape(), sb = typeOf(b).getShape();
  SmallVector<int64_t> shape(sa.drop_back());
  shape.push_back(sb.back());
  return k::MatMulOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, typeOf(a).getElementType()),
                             a, b);
}

/// The additive mask of Attention: attn_mask (bool: 0 where true, -inf
/// where false; float: as given), the padding nonpad_kv_seqlen implies and
/// the causal mask.
FailureOr<Value> additiveMask(ImportContext &ctx, Type et, int64_t lq, int64_t lk) {
  Emitter e{ctx};
  double minusInf = -std::numeric_limits<double>::infinity();
  Value mask;
  if (ctx.hasInput(3)) {
    auto m = ctx.input(3);
    if (failed(m))
      return failure();
    mask = *m;
    if (typeOf(mask).getElementType().isInteger(1)) {
      auto r = RankedTensorType::get(typeOf(mask).getShape(), et);
      mask = k::WhereOp::create(ctx.b, ctx.loc, r, mask, ctx.scalar(et, 0.0),
                                ctx.scalar(et, minusInf));
    } else if (typeOf(mask).getElementType() != et) {
      return ctx.fail("attn_mask must be bool or the query's element type");
    }
  }
  // nonpad_kv_seqlen (opset 24): keys at or past each batch's length are
  // padding, as a [B, 1, 1, Lk] mask.
  if (ctx.numInputs() > 6 && ctx.hasInput(6)) {
    auto lengths = ctx.input(6);
    if (failed(lengths))
      return failure();
    int64_t batch = typeOf(*lengths).getNumElements();
    Type i64 = ctx.b.getI64Type();
    HostTensor positions;
    positions.dtype = onnx::TensorProto::INT64;
    positions.shape = {1, lk};
    for (int64_t j = 0; j < lk; ++j)
      positions.ints.push_back(j);
    auto keys = ctx.materialize(positions, "key_positions");
    if (failed(keys))
      return failure();
    auto valid = e.binary<k::LessOp>(*keys, e.reshape(e.castTo(*lengths, i64), {batch, 1}),
                                     ctx.b.getI1Type());
    if (failed(valid))
      return failure();
    Value padding = k::WhereOp::create(ctx.b, ctx.loc, RankedTensorType::get({batch, lk}, et),
                                       *valid, ctx.scalar(et, 0.0), ctx.scalar(et, minusInf));
    padding = e.reshape(padding, {batch, 1, 1, lk});
    if (!mask) {
      mask = padding;
    } else {
      auto sum = e.binary<k::AddOp>(mask, padding);
      if (failed(sum))
        return failure();
      mask = *sum;
    }
  }
  if (!ctx.attrInt("is_causal", 0))
    return mask;
  // Query i sees keys 0..i (the upper-left alignment of torch's is_causal).
  HostTensor causal;
  causal.dtype = dtypeCodeOf(et);
  causal.shape = {lq, lk};
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j)
      causal.floats.push_back(j <= i ? 0.0 : minusInf);
  auto c = ctx.materialize(causal, "causal_mask");
  if (failed(c))
    return failure();
  if (!mask)
    return *c;
  return e.binary<k::AddOp>(mask, *c);
}

/// ONNX Attention (opset 23/24): inputs Q, K, V [, attn_mask, past_key,
/// past_value]; outputs Y [, present_key, present_value].
LogicalResult importAttention(ImportContext &ctx) {
  auto q = ctx.input(0), key = ctx.input(1), value = ctx.input(2);
  if (failed(q) || failed(key) || failed(value))
    return failure();
  int64_t qkMode = ctx.attrInt("qk_matmul_output_mode", 0);
  if (qkMode < 0 || qkMode > 3)
    return ctx.fail("qk_matmul_output_mode must be 0 to 3, got " + llvm::Twine(qkMode));
  for (Value v : {*q, *key, *value})
    if (!typeOf(v).hasStaticShape() || (typeOf(v).getRank() != 3 && typeOf(v).getRank() != 4))
      return ctx.fail("Attention needs 3-D or 4-D inputs of static shape, got " +
                      shapeText(typeOf(v).getShape()));
  bool packed = typeOf(*q).getRank() == 3;
  if (packed) {
    int64_t qHeads = ctx.attrInt("q_num_heads", 0), kvHeads = ctx.attrInt("kv_num_heads", 0);
    if (qHeads <= 0 || kvHeads <= 0 || typeOf(*q).getDimSize(2) % qHeads ||
        typeOf(*key).getDimSize(2) % kvHeads || typeOf(*value).getDimSize(2) % kvHeads)
      return ctx.fail("3-D Attention needs q_num_heads and kv_num_heads that divide the hidden "
                      "sizes");
    *q = splitHeads(ctx, *q, qHeads);
    *key = splitHeads(ctx, *key, kvHeads);
    *value = splitHeads(ctx, *value, kvHeads);
  }
  // Past keys and values come first along the sequence.
  Emitter e{ctx};
  for (auto [past, current] : {std::pair{4u, &*key}, std::pair{5u, &*value}}) {
    if (!ctx.hasInput(past))
      continue;
    auto p = ctx.input(past);
    if (failed(p))
      return failure();
    SmallVector<int64_t> shape(typeOf(*current).getShape());
    shape[2] += typeOf(*p).getDimSize(2);
    *current = k::ConcatOp::create(ctx.b, ctx.loc,
                                   RankedTensorType::get(shape, typeOf(*p).getElementType()),
                                   ValueRange{*p, *current}, 2);
  }
  ctx.setOutput(1, *key);
  ctx.setOutput(2, *value);
  int64_t qHeads = typeOf(*q).getDimSize(1), kvHeads = typeOf(*key).getDimSize(1);
  if (kvHeads == 0 || qHeads % kvHeads)
    return ctx.fail("query heads (" + llvm::Twine(qHeads) + ") must be a multiple of key/value "
                    "heads (" + llvm::Twine(kvHeads) + ")");
  Value keys = repeatHeads(ctx, *key, qHeads / kvHeads);
  Value values = repeatHeads(ctx, *value, qHeads / kvHeads);
  int64_t headSize = typeOf(*q).getDimSize(3);
  double scale = ctx.hasAttr("scale") ? ctx.attrFloat("scale", 1.0f) : 1.0 / std::sqrt(headSize);
  Value scores = matmul(ctx, *q, transpose(ctx, keys, {0, 1, 3, 2}));
  auto scaled = e.binary<k::MulOp>(scores, e.constant(scores, scale));
  if (failed(scaled))
    return failure();
  Type et = typeOf(scores).getElementType();
  // The scores at each stage, for qk_matmul_output (its mode picks one):
  // scaled, capped, masked, softmaxed. onnxruntime caps before it masks.
  SmallVector<Value, 4> stages = {*scaled};
  if (double cap = ctx.attrFloat("softcap", 0.0f); cap > 0) { // cap * tanh(scores / cap)
    Value t = e.unary<k::TanhOp>(*e.binary<k::MulOp>(*scaled, e.constant(*scaled, 1 / cap)));
    scaled = e.binary<k::MulOp>(t, e.constant(t, cap));
  }
  stages.push_back(*scaled);
  auto mask = additiveMask(ctx, et, typeOf(scores).getDimSize(2), typeOf(scores).getDimSize(3));
  if (failed(mask))
    return failure();
  if (*mask) {
    scaled = e.binary<k::AddOp>(*scaled, *mask);
    if (failed(scaled))
      return failure();
  }
  stages.push_back(*scaled);
  Value probs = k::SoftmaxOp::create(ctx.b, ctx.loc, typeOf(*scaled), *scaled, 3);
  stages.push_back(probs);
  Value y = matmul(ctx, probs, values);
  ctx.setOutput(0, packed ? mergeHeads(ctx, y) : y);
  if (ctx.node->output_size() > 3 && !ctx.node->output(3).empty())
    ctx.setOutput(3, stages[qkMode]);
  return success();
}

/// x[..., start::step] along the last dimension, `count` elements.
Value lastDimSlice(ImportContext &ctx, Value x, int64_t start, int64_t step, int64_t count) {
  RankedTensorType t = typeOf(x);
  SmallVector<int64_t> shape(t.getShape()), starts(t.getRank(), 0), steps(t.getRank(), 1);
  shape.back() = count;
  starts.back() = start;
  steps.back() = step;
  return k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                            starts, steps);
}

Value concatLast(ImportContext &ctx, ValueRange parts) {
  SmallVector<int64_t> shape(typeOf(parts[0]).getShape());
  shape.back() = 0;
  for (Value p : parts)
    shape.back() += typeOf(p).getShape().back();
  return k::ConcatOp::create(ctx.b, ctx.loc,
                             RankedTensorType::get(shape, typeOf(parts[0]).getElementType()),
                             parts, shape.size() - 1);
}

/// ONNX RotaryEmbedding (opset 23): X [B, H, S, D] or [B, S, H*D] (with
/// num_heads); the first rotary_embedding_dim features of each head turn
/// as pairs (x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos), pairs being the
/// two halves or, with `interleaved`, neighbours.
LogicalResult importRotaryEmbedding(ImportContext &ctx) {
  auto x = ctx.input(0), cosCache = ctx.input(1), sinCache = ctx.input(2);
  if (failed(x) || failed(cosCache) || failed(sinCache))
    return failure();
  RankedTensorType xt = typeOf(*x);
  if (!xt.hasStaticShape() || (xt.getRank() != 3 && xt.getRank() != 4))
    return ctx.fail("RotaryEmbedding needs a 3-D or 4-D input of static shape, got " +
                    shapeText(xt.getShape()));
  if (!isa<FloatType>(xt.getElementType()))
    return ctx.fail("RotaryEmbedding needs a floating-point input");
  Emitter e{ctx};
  bool packed = xt.getRank() == 3;
  Value heads = *x; // [B, H, S, D]
  if (packed) {
    int64_t n = ctx.attrInt("num_heads", 0);
    if (n <= 0 || xt.getDimSize(2) % n)
      return ctx.fail("3-D RotaryEmbedding needs num_heads dividing the hidden size");
    heads = splitHeads(ctx, *x, n);
  }
  ArrayRef<int64_t> s = typeOf(heads).getShape();
  int64_t batch = s[0], seq = s[2], headSize = s[3];
  int64_t rotary = ctx.attrInt("rotary_embedding_dim", 0);
  if (rotary == 0)
    rotary = headSize;
  if (rotary % 2 || rotary > headSize)
    return ctx.fail("rotary_embedding_dim " + llvm::Twine(rotary) + " must be even and at most "
                    "the head size " + llvm::Twine(headSize));
  int64_t half = rotary / 2;
  // cos and sin per (batch, position): the caches indexed by position_ids,
  // or already [B, S, rotary/2]; then [B, 1, S, rotary/2] against the heads.
  SmallVector<Value, 2> angles;
  for (Value cache : {*cosCache, *sinCache}) {
    Value c = cache;
    if (ctx.hasInput(3)) {
      auto ids = ctx.input(3);
      if (failed(ids))
        return failure();
      SmallVector<int64_t> shape(typeOf(*ids).getShape());
      shape.push_back(typeOf(cache).getShape().back());
      c = k::GatherOp::create(ctx.b, ctx.loc,
                              RankedTensorType::get(shape, typeOf(cache).getElementType()), cache,
                              *ids, 0);
    }
    if (typeOf(c).getNumElements() != batch * seq * half &&
        typeOf(c).getNumElements() != seq * half)
      return ctx.fail("the cos/sin caches give " + shapeText(typeOf(c).getShape()) +
                      ", not [batch, sequence, rotary_embedding_dim / 2]");
    angles.push_back(e.reshape(c, {typeOf(c).getNumElements() / (seq * half), 1, seq, half}));
  }
  bool interleaved = ctx.attrInt("interleaved", 0);
  Value rot = rotary == headSize ? heads : lastDimSlice(ctx, heads, 0, 1, rotary);
  Value x1 = interleaved ? lastDimSlice(ctx, rot, 0, 2, half) : lastDimSlice(ctx, rot, 0, 1, half);
  Value x2 = interleaved ? lastDimSlice(ctx, rot, 1, 2, half) : lastDimSlice(ctx, rot, half, 1, half);
  // a * ca -+ b * cb; failure where the caches do not combine with X.
  auto rotate = [&](Value ca, Value cb, bool add) -> FailureOr<Value> {
    auto p = e.binary<k::MulOp>(x1, ca), q = e.binary<k::MulOp>(x2, cb);
    if (failed(p) || failed(q))
      return failure();
    return add ? e.binary<k::AddOp>(*p, *q) : e.binary<k::SubOp>(*p, *q);
  };
  auto real = rotate(angles[0], angles[1], false);
  auto imag = rotate(angles[1], angles[0], true);
  if (failed(real) || failed(imag))
    return failure();
  Value turned;
  if (interleaved) {
    // (real, imag) pairs side by side: [..., half, 2] flattened.
    SmallVector<int64_t> pair(s.begin(), s.end() - 1);
    pair.append({half, 1});
    Value both = concatLast(ctx, {e.reshape(*real, pair), e.reshape(*imag, pair)});
    SmallVector<int64_t> flat(s.begin(), s.end() - 1);
    flat.push_back(rotary);
    turned = e.reshape(both, flat);
  } else {
    turned = concatLast(ctx, {*real, *imag});
  }
  if (rotary < headSize)
    turned = concatLast(ctx, {turned, lastDimSlice(ctx, heads, rotary, 1, headSize - rotary)});
  ctx.setOutput(0, packed ? mergeHeads(ctx, turned) : turned);
  return success();
}

} // namespace

void registerTransformerOps(ImportTable &t) {
  t["Attention"] = importAttention;
  t["RotaryEmbedding"] = importRotaryEmbedding;
}

} // namespace kiln::onnx_frontend
