//===- InputStatistics.cpp - calibration for activation-aware pruning -----===//
//
// Wanda weighs a weight by the L2 norm of the input channel it multiplies;
// SparseGPT needs the Gram matrix X^T X of the rows the layer multiplies
// its [K, N] weights with: a matmul's or gemm's rows of activations, a
// convolution's unfolded windows (im2col: K = C * kh * kw per output pixel).
// Both are summed over every calibration sample in double precision.
//
//===----------------------------------------------------------------------===//
#include "tools/kiln-compile/InputStatistics.h"

#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"
#include "passes/WeightMatrix.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <numeric>

using namespace mlir;
namespace kd = mlir::kiln;

namespace kiln {
namespace {

/// Gram matrices beyond this many inputs (512 MiB of doubles) are not
/// collected; those layers fall back to Wanda.
constexpr int64_t kMaxGramInputs = 8192;

/// A prunable layer's input and the statistics summed over it.
class LayerInput {
public:
  LayerInput(Operation *op, const kd::WeightMatrix &w, bool gram)
      : op(op), inputs(w.inputs), norms(w.inputChannels(), 0.0) {
    auto conv = dyn_cast<kd::ConvOp>(op);
    // A grouped convolution has a Gram matrix per group: not collected.
    if (gram && inputs <= kMaxGramInputs && (!conv || conv.getGroup() == 1))
      this->gram.assign(inputs * inputs, 0.0);
  }

  void observe(const ObservedTensor &x) {
    addNorms(x);
    if (!gram.empty())
      forEachRow(x, [&](const float *row) { addToGram(row); });
  }

  /// Attaches the sums to the layer as kiln-prune reads them.
  void attach() const {
    MLIRContext *ctx = op->getContext();
    std::vector<float> n(norms.size());
    for (size_t c = 0; c < n.size(); ++c)
      n[c] = static_cast<float>(std::sqrt(norms[c]));
    op->setAttr(kd::kInputNormsAttr, DenseF32ArrayAttr::get(ctx, n));
    if (gram.empty())
      return;
    std::vector<float> full(inputs * inputs);
    for (int64_t i = 0; i < inputs; ++i)
      for (int64_t j = 0; j <= i; ++j)
        full[i * inputs + j] = full[j * inputs + i] = static_cast<float>(gram[i * inputs + j]);
    auto type = RankedTensorType::get({inputs, inputs}, Float32Type::get(ctx));
    ArrayRef<char> bytes(reinterpret_cast<const char *>(full.data()), full.size() * sizeof(float));
    op->setAttr(kd::kInputGramAttr, kd::blobElements(type, "input_gram", bytes));
  }

private:
  /// The axis of the layer's input that holds its channels.
  int64_t channelAxis(int64_t rank) const {
    if (auto gemm = dyn_cast<kd::GemmOp>(op))
      return gemm.getTransA() ? 0 : 1;
    if (isa<kd::ConvOp>(op))
      return 1;
    return rank - 1;
  }

  void addNorms(const ObservedTensor &x) {
    int64_t axis = channelAxis(x.shape.size());
    int64_t channels = x.shape[axis];
    int64_t inner = std::accumulate(x.shape.begin() + axis + 1, x.shape.end(), int64_t{1},
                                    std::multiplies<int64_t>());
    for (size_t i = 0; i < x.values.size(); ++i) {
      double v = x.values[i];
      norms[(i / inner) % channels] += v * v;
    }
  }

  /// Calls `fn` with each row of K inputs that the layer's [K, N] weights
  /// multiply.
  void forEachRow(const ObservedTensor &x, llvm::function_ref<void(const float *)> fn) {
    if (auto conv = dyn_cast<kd::ConvOp>(op))
      return forEachWindow(conv, x, fn);
    int64_t K = inputs, rows = x.values.size() / K;
    auto gemm = dyn_cast<kd::GemmOp>(op);
    if (!gemm || !gemm.getTransA()) {
      for (int64_t r = 0; r < rows; ++r)
        fn(&x.values[r * K]);
      return;
    }
    std::vector<float> row(K); // A is [K, M]: a row is a column
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < K; ++k)
        row[k] = x.values[k * rows + r];
      fn(row.data());
    }
  }

  /// The unfolded windows of an NCHW input (zeros in the padding), in the
  /// filter's [C, kh, kw] order.
  void forEachWindow(kd::ConvOp conv, const ObservedTensor &x,
                     llvm::function_ref<void(const float *)> fn) {
    auto filter = cast<RankedTensorType>(conv.getFilter().getType());
    int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
    int64_t kh = filter.getDimSize(2), kw = filter.getDimSize(3);
    ArrayRef<int64_t> s = conv.getStrides(), d = conv.getDilations(), p = conv.getPads();
    int64_t OH = (H + p[0] + p[2] - d[0] * (kh - 1) - 1) / s[0] + 1;
    int64_t OW = (W + p[1] + p[3] - d[1] * (kw - 1) - 1) / s[1] + 1;
    std::vector<float> row(inputs);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t y = oy * s[0] - p[0] + ky * d[0], xx = ox * s[1] - p[1] + kx * d[1];
                bool inside = y >= 0 && y < H && xx >= 0 && xx < W;
                row[(c * kh + ky) * kw + kx] =
                    inside ? x.values[((n * C + c) * H + y) * W + xx] : 0.0f;
              }
          fn(row.data());
        }
  }

  /// Adds row * row^T to the lower triangle.
  void addToGram(const float *row) {
    for (int64_t i = 0; i < inputs; ++i) {
      double ri = row[i];
      if (ri == 0)
        continue;
      double *g = &gram[i * inputs];
      for (int64_t j = 0; j <= i; ++j)
        g[j] += ri * row[j];
    }
  }

  Operation *op;
  int64_t inputs; // K
  std::vector<double> norms; // sums of squares per channel
  std::vector<double> gram;  // lower triangle of X^T X, [K, K]; empty: not collected
};

} // namespace

FailureOr<CalibrationResult> calibrateForPruning(ModuleOp module, llvm::StringRef dir,
                                                 PruneStatistics which,
                                                 const ExecutableBuilder &build,
                                                 std::string &error) {
  std::vector<ObservedLayer> layers;
  std::vector<LayerInput> inputs;
  module.walk([&](Operation *op) {
    if (!isa<kd::MatMulOp, kd::GemmOp, kd::ConvOp>(op))
      return;
    std::string why;
    std::optional<kd::WeightMatrix> w = kd::weightMatrixOf(op, why);
    if (!w)
      return;
    // Magnitude pruning reads no inputs: the layers are only tagged, so
    // that --report=sparsity can compare their results.
    layers.push_back({op, which == PruneStatistics::None ? Value() : op->getOperand(0)});
    inputs.emplace_back(op, *w, which == PruneStatistics::NormsAndGram);
  });
  auto observe = [&](size_t i, const ObservedTensor &x) { inputs[i].observe(x); };
  auto result = runCalibration(module, dir, layers, build, observe, error);
  if (failed(result))
    return failure();
  if (which != PruneStatistics::None)
    for (const LayerInput &input : inputs)
      input.attach();
  return result;
}

} // namespace kiln
