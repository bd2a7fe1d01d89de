//===- Prune.cpp - magnitude pruning of MatMul/Gemm/Conv weights -----------===//
//
// Sets the smallest-magnitude weights of each layer to zero, unstructured,
// N of every M inputs, or in R x C blocks (see Passes.td). The zeros are the
// model's new weights; kiln-sparsify decides where they buy speed.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/WeightMatrix.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPRUNE
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

std::optional<PrunePattern> mlir::kiln::parsePrunePattern(StringRef text) {
  PrunePattern p;
  if (text == "unstructured")
    return p;
  StringRef sep = ":";
  if (text.consume_front("block:")) {
    p.kind = PrunePattern::Block;
    sep = "x";
  } else {
    p.kind = PrunePattern::NofM;
  }
  auto [first, second] = text.split(sep);
  if (first.getAsInteger(10, p.a) || second.getAsInteger(10, p.b) || p.a < 1 || p.b < 1 ||
      (p.kind == PrunePattern::NofM && p.a >= p.b))
    return std::nullopt;
  return p;
}

namespace {
/// The indices of the `count` smallest scores, ties broken by index.
std::vector<int64_t> smallest(const std::vector<double> &scores, int64_t count) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  auto less = [&](int64_t x, int64_t y) {
    return scores[x] != scores[y] ? scores[x] < scores[y] : x < y;
  };
  std::nth_element(order.begin(), order.begin() + count, order.end(), less);
  order.resize(count);
  return order;
}

/// Zeros `w` by `p`; failure (with `why`) when the shape does not fit it.
LogicalResult prune(WeightMatrix &w, const PrunePattern &p, double fraction, std::string &why) {
  int64_t K = w.inputs, N = w.outputs;
  switch (p.kind) {
  case PrunePattern::Unstructured: {
    std::vector<double> scores(w.values.size());
    for (size_t i = 0; i < scores.size(); ++i)
      scores[i] = std::fabs(w.values[i]);
    for (int64_t i : smallest(scores, static_cast<int64_t>(fraction * scores.size())))
      w.values[i] = 0.0f;
    return success();
  }
  case PrunePattern::NofM: {
    if (K % p.b != 0) {
      why = llvm::formatv("its {0} inputs are not a multiple of {1}", K, p.b).str();
      return failure();
    }
    std::vector<double> group(p.b);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k0 = 0; k0 < K; k0 += p.b) {
        for (int64_t j = 0; j < p.b; ++j)
          group[j] = std::fabs(w.at(k0 + j, n));
        for (int64_t j : smallest(group, p.b - p.a))
          w.values[w.index(k0 + j, n)] = 0.0f;
      }
    return success();
  }
  case PrunePattern::Block: {
    int64_t R = p.a, C = p.b;
    if (N % R != 0 || K % C != 0) {
      why = llvm::formatv("its {0} outputs x {1} inputs do not divide into {2}x{3} blocks", N, K,
                          R, C)
                .str();
      return failure();
    }
    int64_t blockRows = K / C, blockCols = N / R;
    auto forBlock = [&](int64_t b, auto fn) {
      int64_t k0 = (b / blockCols) * C, n0 = (b % blockCols) * R;
      for (int64_t k = k0; k < k0 + C; ++k)
        for (int64_t n = n0; n < n0 + R; ++n)
          fn(w.index(k, n));
    };
    std::vector<double> scores(blockRows * blockCols, 0.0);
    for (size_t b = 0; b < scores.size(); ++b)
      forBlock(b, [&](int64_t i) { scores[b] += std::fabs(w.values[i]); });
    for (int64_t b : smallest(scores, static_cast<int64_t>(fraction * scores.size())))
      forBlock(b, [&](int64_t i) { w.values[i] = 0.0f; });
    return success();
  }
  }
  llvm_unreachable("unknown pattern");
}

/// Replaces the layer's weight operand with `w.values`.
void setWeights(const WeightMatrix &w) {
  Value old = w.layer->getOperand(w.operand);
  OpBuilder b(w.layer);
  auto type = cast<RankedTensorType>(old.getType());
  Value pruned = blobConstant(b, old.getLoc(), type, ArrayRef(w.values), "pruned_weight");
  w.layer->setOperand(w.operand, pruned);
  if (Operation *def = old.getDefiningOp(); def && def->use_empty())
    def->erase();
}

struct KilnPrunePass : mlir::kiln::impl::KilnPruneBase<KilnPrunePass> {
  using KilnPruneBase::KilnPruneBase;

  void runOnOperation() override {
    std::optional<PrunePattern> p = parsePrunePattern(pattern);
    if (!p) {
      getOperation().emitError("kiln-prune: unknown pattern '")
          << pattern << "' (expected unstructured, N:M with N < M, or block:RxC)";
      return signalPassFailure();
    }
    if (!(fraction >= 0.0 && fraction < 1.0)) {
      getOperation().emitError("kiln-prune: fraction ") << fraction << " is not in [0, 1)";
      return signalPassFailure();
    }
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp, ConvOp>(op))
        layers.push_back(op);
    });
    for (auto [i, layer] : llvm::enumerate(layers)) {
      std::string why;
      if (!pruneFirstLast && (i == 0 || i + 1 == layers.size()))
        why = std::string(i == 0 ? "the first" : "the last") +
              " layer (--prune-first-last prunes it too)";
      else if (auto node = onnxNodeOf(layer->getLoc());
               node && llvm::is_contained(skip, node->name.str()))
        why = "named in --prune-skip";
      std::optional<WeightMatrix> w;
      if (why.empty())
        w = weightMatrixOf(layer, why);
      if (w && succeeded(prune(*w, *p, fraction, why))) {
        setWeights(*w);
        int64_t zeros = llvm::count(w->values, 0.0f);
        if (report)
          emitRemark(layer->getLoc())
              << llvm::formatv("sparsity: pruned to {0:F1}% zeros ({1}, magnitude)",
                               100.0 * zeros / w->values.size(), pattern.getValue());
      } else if (report) {
        emitRemark(layer->getLoc()) << "sparsity: not pruned: " << why;
      }
    }
  }
};
} // namespace
