//===- Prune.cpp - pruning of MatMul/Gemm/Conv weights ---------------------===//
//
// Sets the least important weights of each layer to zero, unstructured, N
// of every M inputs, or in R x C blocks (see Passes.td). Importance is the
// weight's magnitude, or with calibration statistics on the layer its
// magnitude times its input's norm (Wanda), or SparseGPT's error-weighted
// magnitude with the remaining weights updated. The zeros are the model's
// new weights; kiln-sparsify decides where they buy speed.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/SparseGPT.h"
#include "passes/WeightMatrix.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
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
/// What calibration measured of a layer's input (see kInputNormsAttr): empty
/// without calibration data.
struct InputStatistics {
  std::vector<float> norms; // per input channel
  std::vector<float> gram;  // [K, K]
};

/// Removes the layer's statistics and returns them; failure (with an error
/// on the layer) when they do not fit its weights `w` (null: not prunable).
FailureOr<InputStatistics> takeStatistics(Operation *layer, const WeightMatrix *w) {
  InputStatistics s;
  if (auto norms = layer->getAttrOfType<DenseF32ArrayAttr>(kInputNormsAttr))
    s.norms.assign(norms.asArrayRef().begin(), norms.asArrayRef().end());
  Attribute gramAttr = layer->getAttr(kInputGramAttr);
  layer->removeAttr(kInputNormsAttr);
  layer->removeAttr(kInputGramAttr);
  if (gramAttr) {
    auto elements = dyn_cast<ElementsAttr>(gramAttr);
    std::optional<std::vector<float>> values = elements ? f32Elements(elements) : std::nullopt;
    if (!values)
      return layer->emitError("kiln-prune: ") << kInputGramAttr << " is not f32 elements";
    s.gram = std::move(*values);
  }
  if (!w)
    return s;
  if (!s.norms.empty() && static_cast<int64_t>(s.norms.size()) != w->inputChannels())
    return layer->emitError("kiln-prune: ")
           << kInputNormsAttr << " has " << s.norms.size() << " norms for "
           << w->inputChannels() << " input channels";
  if (!s.gram.empty() && static_cast<int64_t>(s.gram.size()) != w->inputs * w->inputs)
    return layer->emitError("kiln-prune: ")
           << kInputGramAttr << " has " << s.gram.size() << " elements, not " << w->inputs
           << "x" << w->inputs;
  return s;
}

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

/// Zeros `w` by `p` with the smallest scores first: |w| (magnitude), or
/// |w| times its input channel's norm (Wanda, with `norms`). Wanda compares
/// the weights of one output with each other, as its paper does;
/// magnitude pruning compares the whole layer. Failure (with `why`) when
/// the shape does not fit the pattern.
LogicalResult prune(WeightMatrix &w, const PrunePattern &p, double fraction,
                    const std::vector<float> &norms, std::string &why) {
  int64_t K = w.inputs, N = w.outputs;
  auto score = [&](int64_t k, int64_t n) {
    double s = std::fabs(w.at(k, n));
    return norms.empty() ? s : s * norms[w.inputChannel(k, n)];
  };
  switch (p.kind) {
  case PrunePattern::Unstructured: {
    if (norms.empty()) {
      std::vector<double> scores(w.values.size());
      for (size_t i = 0; i < scores.size(); ++i)
        scores[i] = std::fabs(w.values[i]);
      for (int64_t i : smallest(scores, static_cast<int64_t>(fraction * scores.size())))
        w.values[i] = 0.0f;
      return success();
    }
    std::vector<double> scores(K);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k)
        scores[k] = score(k, n);
      for (int64_t k : smallest(scores, static_cast<int64_t>(fraction * K)))
        w.values[w.index(k, n)] = 0.0f;
    }
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
          group[j] = score(k0 + j, n);
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
          fn(k, n);
    };
    std::vector<double> scores(blockRows * blockCols, 0.0);
    for (size_t b = 0; b < scores.size(); ++b)
      forBlock(b, [&](int64_t k, int64_t n) { scores[b] += score(k, n); });
    for (int64_t b : smallest(scores, static_cast<int64_t>(fraction * scores.size())))
      forBlock(b, [&](int64_t k, int64_t n) { w.values[w.index(k, n)] = 0.0f; });
    return success();
  }
  }
  llvm_unreachable("unknown pattern");
}

/// The layer's output SQNR after pruning `dense` to `w`, predicted from the
/// weights and what calibration measured: with a Gram matrix H it is exact
/// for the calibration inputs (sum over outputs of d^T H d for the dense
/// column d against e^T H e for the error e); with norms only it weighs
/// each weight's square by its channel's squared norm (inputs taken as
/// uncorrelated); without either, by one.
double predictedSqnrDb(const std::vector<float> &dense, const WeightMatrix &w,
                       const InputStatistics &s) {
  int64_t K = w.inputs, N = w.outputs;
  double signal = 0, noise = 0;
  std::vector<double> d(K), e(K);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      d[k] = dense[w.index(k, n)];
      e[k] = d[k] - w.at(k, n);
    }
    if (!s.gram.empty()) {
      for (int64_t i = 0; i < K; ++i) {
        const float *row = &s.gram[i * K];
        double hd = 0, he = 0;
        for (int64_t j = 0; j < K; ++j) {
          hd += row[j] * d[j];
          he += row[j] * e[j];
        }
        signal += d[i] * hd;
        noise += e[i] * he;
      }
      continue;
    }
    for (int64_t k = 0; k < K; ++k) {
      double scale = s.norms.empty() ? 1.0 : s.norms[w.inputChannel(k, n)];
      signal += d[k] * d[k] * scale * scale;
      noise += e[k] * e[k] * scale * scale;
    }
  }
  return noise > 0 ? 10 * std::log10(signal / noise) : INFINITY;
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
    if (failed(parseLayerFractions()))
      return signalPassFailure();
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp, ConvOp>(op))
        layers.push_back(op);
    });
    for (auto [i, layer] : llvm::enumerate(layers))
      if (failed(pruneOne(layer, *p, whyDense(layer, i, layers.size()))))
        return signalPassFailure();
  }

  /// Reads `layer-fractions` ("NODE=FRACTION") into `ownFraction`.
  LogicalResult parseLayerFractions() {
    for (StringRef entry : layerFractions) {
      auto [name, value] = entry.rsplit('=');
      double f;
      if (name.empty() || value.getAsDouble(f) || !(f >= 0.0 && f < 1.0))
        return getOperation().emitError("kiln-prune: layer-fractions entry '")
               << entry << "' is not NODE=FRACTION with a fraction in [0, 1)";
      ownFraction[name] = f;
    }
    return success();
  }

  /// The fraction of `layer`'s weights to zero: its own, or `fraction`.
  double fractionOf(Operation *layer) {
    if (auto node = onnxNodeOf(layer->getLoc()))
      if (auto it = ownFraction.find(node->name); it != ownFraction.end())
        return it->second;
    return fraction;
  }

  /// Why layer `i` of `count` stays dense whatever its weights, or "". A
  /// layer with its own fraction is pruned by it, first or last.
  std::string whyDense(Operation *layer, size_t i, size_t count) {
    auto node = onnxNodeOf(layer->getLoc());
    if (node && ownFraction.count(node->name))
      return ownFraction.lookup(node->name) == 0 ? "its own fraction is 0" : "";
    if (!pruneFirstLast && (i == 0 || i + 1 == count))
      return std::string(i == 0 ? "the first" : "the last") +
             " layer (--prune-first-last prunes it too)";
    if (node && llvm::is_contained(skip, node->name.str()))
      return "named in --prune-skip";
    return "";
  }

  /// Prunes `layer` unless `why` says why not or its weights do not allow
  /// it, and removes its calibration statistics; failure when those do not
  /// fit it.
  LogicalResult pruneOne(Operation *layer, const PrunePattern &p, std::string why) {
    std::optional<WeightMatrix> w;
    if (why.empty())
      w = weightMatrixOf(layer, why);
    if (w && w->groups > 1 && w->inputs == w->window) {
      why = "a depthwise convolution (its few weights per output all count, and it costs little)";
      w.reset();
    }
    FailureOr<InputStatistics> statistics = takeStatistics(layer, w ? &*w : nullptr);
    if (failed(statistics))
      return failure();
    std::vector<float> dense = w ? w->values : std::vector<float>();
    double f = fractionOf(layer);
    FailureOr<std::string> method =
        w ? pruneLayer(*w, p, f, *statistics, why) : FailureOr<std::string>(failure());
    if (failed(method)) {
      if (report)
        emitRemark(layer->getLoc()) << "sparsity: not pruned: " << why;
      return success();
    }
    setWeights(*w);
    if (report)
      emitRemark(layer->getLoc()) << llvm::formatv(
          "sparsity: pruned to {0:F1}% zeros ({1}, {2}), predicted SQNR {3:F1} dB",
          100.0 * llvm::count(w->values, 0.0f) / w->values.size(), pattern.getValue(), *method,
          predictedSqnrDb(dense, *w, *statistics));
    return success();
  }

  /// Prunes the `share` of `w` with the best method its statistics allow:
  /// SparseGPT with a Gram matrix, Wanda with norms, magnitude without
  /// either. Returns
  /// the method's name (and why a better one was not used), or failure
  /// with `why`.
  FailureOr<std::string> pruneLayer(WeightMatrix &w, const PrunePattern &p, double share,
                                    const InputStatistics &s, std::string &why) {
    std::string fallback;
    if (!s.gram.empty()) {
      if (succeeded(sparseGptPrune(w, p, share, s.gram, fallback)))
        return std::string("sparsegpt");
      fallback = ": " + fallback;
    }
    if (failed(prune(w, p, share, s.norms, why)))
      return failure();
    return (s.norms.empty() ? "magnitude" : "wanda") + fallback;
  }

  llvm::StringMap<double> ownFraction; // by ONNX node name
};
} // namespace
