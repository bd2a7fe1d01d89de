//===- ImportText.cpp - ONNX text ops: TfIdfVectorizer --------------------===//
//
// TfIdfVectorizer counts the pool's n-grams of integer tokens, as
// onnxruntime does: 1-grams once per position; longer n-grams once per
// start position and per skip distance d = 1..max_skip_count + 1 (tokens
// i, i + d, ..., i + (n - 1) d). Each (n, d) is one broadcast comparison of
// n shifted slices of the row against the pool's n-grams, summed over
// positions; a constant 0/1 matrix then places each n-gram's count at its
// output index. Everything is static: the output size is max(ngram_indexes)
// + 1.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include "dialects/kiln/KilnDialect.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

/// A host constant of `dtype` (ONNX code) with `values`.
HostTensor hostTensor(int32_t dtype, std::vector<int64_t> shape, ArrayRef<double> values) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.isFloat())
    t.floats.assign(values.begin(), values.end());
  else
    for (double v : values)
      t.ints.push_back((int64_t)v);
  return t;
}

/// The pool's n-grams of one length: their tokens and output indexes.
struct Grams {
  int64_t n = 0;
  std::vector<std::vector<int64_t>> tokens; // [gram][k]
  std::vector<int64_t> outputs;             // output index per gram
};

/// How often each of `grams` occurs in rows [B, C] with distance d between
/// its tokens: [B, grams] f32.
FailureOr<Value> countGrams(ImportContext &ctx, Value rows, const Grams &grams, int64_t d,
                            int32_t tokenType) {
  Emitter e{ctx};
  auto rt = cast<RankedTensorType>(rows.getType());
  int64_t b = rt.getDimSize(0), c = rt.getDimSize(1), p = grams.tokens.size();
  int64_t positions = c - (grams.n - 1) * d;
  Type i1 = ctx.b.getI1Type(), f32 = ctx.b.getF32Type();
  Value match;
  for (int64_t k = 0; k < grams.n; ++k) {
    auto sliceType = RankedTensorType::get({b, positions}, rt.getElementType());
    Value shifted = k::SliceOp::create(ctx.b, ctx.loc, sliceType, rows,
                                       ArrayRef<int64_t>{0, k * d}, ArrayRef<int64_t>{1, 1});
    std::vector<double> kth;
    for (const auto &gram : grams.tokens)
      kth.push_back((double)gram[k]);
    auto pool = ctx.materialize(hostTensor(tokenType, {1, p, 1}, kth), "pool");
    if (failed(pool))
      return failure();
    auto eq = e.binary<k::EqualOp>(e.reshape(shifted, {b, 1, positions}), *pool, i1);
    if (failed(eq))
      return failure();
    match = match ? *e.binary<k::AndOp>(match, *eq) : *eq;
  }
  auto counted = RankedTensorType::get({b, p}, f32);
  return (Value)k::ReduceOp::create(ctx.b, ctx.loc, counted, e.castTo(match, f32), "sum",
                                    ArrayRef<int64_t>{2}, false);
}

LogicalResult importTfIdfVectorizer(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  Type et = xt.getElementType();
  if (!et.isInteger(32) && !et.isInteger(64))
    return ctx.fail("TfIdfVectorizer takes int32 or int64 tokens (strings are not supported)");
  if (xt.getRank() < 1 || xt.getRank() > 2 || !xt.hasStaticShape())
    return ctx.fail("TfIdfVectorizer needs a static input of shape [C] or [B, C]");
  int32_t tokenType = et.isInteger(32) ? 6 : 7;
  int64_t minN = ctx.attrInt("min_gram_length", 0), maxN = ctx.attrInt("max_gram_length", 0);
  int64_t maxSkip = ctx.attrInt("max_skip_count", 0);
  std::string mode = ctx.attrString("mode", "");
  std::vector<int64_t> counts = ctx.attrInts("ngram_counts"),
                       indexes = ctx.attrInts("ngram_indexes"), pool = ctx.attrInts("pool_int64s");
  std::vector<float> weights = ctx.attrFloats("weights");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.fail("mode must be TF, IDF or TFIDF");
  if (minN < 1 || maxN < minN || maxN > (int64_t)counts.size() || maxSkip < 0 || maxSkip > 1024)
    return ctx.fail("needs 1 <= min_gram_length <= max_gram_length <= the length of ngram_counts, "
                    "and a max_skip_count of 0..1024");
  if (pool.empty() || indexes.empty() ||
      llvm::any_of(indexes, [](int64_t i) { return i < 0 || i > (int64_t(1) << 24); }))
    return ctx.fail("needs pool_int64s and ngram_indexes of 0..2^24");
  int64_t outputs = *llvm::max_element(indexes) + 1;
  if (!weights.empty() && weights.size() != indexes.size())
    return ctx.fail("weights needs one entry per n-gram of the pool, as ngram_indexes has");

  // The pool's n-grams by length, each with its output index.
  std::vector<Grams> byLength;
  int64_t id = 0;
  for (int64_t n = 1; n <= (int64_t)counts.size(); ++n) {
    int64_t begin = counts[n - 1],
            end = n < (int64_t)counts.size() ? counts[n] : (int64_t)pool.size();
    if (begin < 0 || end < begin || end > (int64_t)pool.size() || (end - begin) % n)
      return ctx.fail("ngram_counts must split pool_int64s into whole n-grams");
    Grams grams{n, {}, {}};
    for (int64_t at = begin; at < end; at += n, ++id) {
      if (id >= (int64_t)indexes.size())
        return ctx.fail("ngram_indexes needs one entry per n-gram of the pool");
      grams.tokens.emplace_back(pool.begin() + at, pool.begin() + at + n);
      grams.outputs.push_back(indexes[id]);
    }
    if (n >= minN && n <= maxN && !grams.tokens.empty())
      byLength.push_back(std::move(grams));
  }

  Emitter e{ctx};
  int64_t b = xt.getRank() == 2 ? xt.getDimSize(0) : 1, c = xt.getShape().back();
  Value rows = e.reshape(*x, {b, c});
  Type f32 = ctx.b.getF32Type();
  Value total;
  for (const Grams &grams : byLength) {
    int64_t p = grams.tokens.size();
    // [p, outputs]: row g has a 1 at gram g's output index.
    std::vector<double> place(p * outputs, 0.0);
    for (int64_t g = 0; g < p; ++g)
      place[g * outputs + grams.outputs[g]] = 1.0;
    auto placement = ctx.materialize(hostTensor(1, {p, outputs}, place), "ngram_indexes");
    if (failed(placement))
      return failure();
    for (int64_t d = 1; d <= (grams.n == 1 ? 1 : maxSkip + 1); ++d) {
      if (c - (grams.n - 1) * d <= 0)
        break;
      auto counted = countGrams(ctx, rows, grams, d, tokenType);
      if (failed(counted))
        return failure();
      Value placed = k::MatMulOp::create(ctx.b, ctx.loc, RankedTensorType::get({b, outputs}, f32),
                                         *counted, *placement);
      total = total ? *e.binary<k::AddOp>(total, placed) : placed;
    }
  }
  if (!total) { // no n-gram fits: all zeros
    auto zeros = ctx.materialize(hostTensor(1, {b, outputs}, std::vector<double>(b * outputs)),
                                 "zeros");
    if (failed(zeros))
      return failure();
    total = *zeros;
  }
  // Weights belong to the pool's n-grams; each goes to its n-gram's output.
  std::vector<double> w(outputs, 1.0);
  for (size_t id = 0; id < weights.size(); ++id)
    w[indexes[id]] = weights[id];
  auto weightValue = ctx.materialize(hostTensor(1, {outputs}, w), "weights");
  if (failed(weightValue))
    return failure();
  Value y = total;
  if (mode == "IDF") {
    auto seen = e.binary<k::GreaterOp>(total, ctx.scalar(f32, 0), ctx.b.getI1Type());
    if (failed(seen))
      return failure();
    y = *e.binary<k::MulOp>(e.castTo(*seen, f32), *weightValue);
  } else if (mode == "TFIDF") {
    y = *e.binary<k::MulOp>(total, *weightValue);
  }
  ctx.setOutput(0, xt.getRank() == 1 ? e.reshape(y, {outputs}) : y);
  return success();
}

} // namespace

void registerTextOps(ImportTable &t) { t["TfIdfVectorizer"] = importTfIdfVectorizer; }

} // namespace kiln::onnx_frontend
