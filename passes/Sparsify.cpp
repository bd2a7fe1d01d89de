//===- Sparsify.cpp - mostly-zero constant weights as kiln.sparse_matmul ---===//
//
// Chooses, per matmul with constant weights, between the dense kernel and
// the two sparse ones of kiln.sparse_matmul by a roofline cost model, and
// compresses the weights for the one chosen (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Quantization.h"
#include "passes/WeightMatrix.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSPARSIFY
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
// The cost model's rates, per core and cycle, fitted to scripts/bench/sparse.py
// on a 4096 x 4096 layer (docs/BENCHMARKS.md, "Sparse weights"): weight bytes
// streamed from memory, and multiply-adds of each kernel.
constexpr double kBytesPerCycle = 9.0;
constexpr double kDenseMacs = 18.0;
constexpr double kBlockedMacs = 10.0; // B = 16: broadcast x[k] times 16 weights
constexpr double kGatherMacs = 1.25;  // B = 1, few rows: gathers of x at the row indices
// B = 1 over at least kRowVectorRows rows: the lowering multiplies whole
// vectors of rows of x transposed, no gathers.
constexpr double kRowVectorMacs = 7.0;
constexpr int64_t kRowVectorRows = 16;
constexpr double kRequiredSpeedup = 1.25;

/// The weights compressed by column blocks of `block` outputs.
struct Compressed {
  int64_t block;
  std::vector<int32_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
  int64_t entries() const { return indices.size(); }
};

Compressed compress(const WeightMatrix &w, int64_t block) {
  Compressed c{block, {0}, {}, {}};
  for (int64_t n0 = 0; n0 < w.outputs; n0 += block) {
    for (int64_t k = 0; k < w.inputs; ++k) {
      bool nonzero = false;
      for (int64_t n = n0; n < n0 + block; ++n)
        nonzero |= w.at(k, n) != 0.0f;
      if (!nonzero)
        continue;
      c.indices.push_back(k);
      for (int64_t n = n0; n < n0 + block; ++n)
        c.values.push_back(w.at(k, n));
    }
    c.offsets.push_back(c.indices.size());
  }
  return c;
}

/// Predicted cycles of a kernel streaming `bytes` of weights and doing
/// `macs` multiply-adds at `rate` per cycle.
double cycles(double bytes, double macs, double rate) {
  return std::max(bytes / kBytesPerCycle, macs / rate);
}

struct Choice {
  std::optional<Compressed> sparse; // none: stay dense
  double speedup;                    // of the best sparse kernel over dense
  std::string kernel;
};

Choice choose(const WeightMatrix &w, int64_t rows) {
  double K = w.inputs, N = w.outputs, M = rows;
  double indexBytes = w.inputs <= 65536 ? 2 : 4;
  double dense = cycles(4 * K * N, M * K * N, kDenseMacs);
  Compressed columns = compress(w, 1);
  double e1 = columns.entries();
  double columnRate = rows >= kRowVectorRows ? kRowVectorMacs : kGatherMacs;
  double t1 = cycles((4 + indexBytes) * e1 + 4 * N, M * e1, columnRate);
  Choice best{std::move(columns), dense / t1, "compressed columns"};
  if (w.outputs % 16 == 0) {
    Compressed blocks = compress(w, 16);
    double e16 = blocks.entries();
    double t16 = cycles((64 + indexBytes) * e16 + 4 * N / 16, M * e16 * 16, kBlockedMacs);
    if (dense / t16 > best.speedup)
      best = {std::move(blocks), dense / t16, "16x1 blocks"};
  }
  if (best.speedup < kRequiredSpeedup)
    best.sparse.reset();
  return best;
}

/// Rows of the product: the static leading dimensions of `x` (1 if dynamic).
int64_t rowsOf(Value x) {
  int64_t rows = 1;
  for (int64_t d : cast<RankedTensorType>(x.getType()).getShape().drop_back())
    if (!ShapedType::isDynamic(d))
      rows *= d;
  return rows;
}

template <typename T>
Value arrayConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                    ArrayRef<T> data, StringRef name) {
  return blobConstant(b, loc, RankedTensorType::get(shape, element), data, name);
}

Value sparseMatMul(OpBuilder &b, Location loc, Type resultType, Value x, const WeightMatrix &w,
                   const Compressed &c) {
  int64_t entries = c.entries();
  Value offsets = arrayConstant(b, loc, {(int64_t)c.offsets.size()}, b.getI32Type(),
                                ArrayRef(c.offsets), "sparse_offsets");
  Value indices;
  if (w.inputs <= 65536) {
    std::vector<uint16_t> narrow(c.indices.begin(), c.indices.end());
    indices = arrayConstant(b, loc, {entries}, b.getI16Type(), ArrayRef(narrow), "sparse_indices");
  } else {
    indices = arrayConstant(b, loc, {entries}, b.getI32Type(), ArrayRef(c.indices),
                            "sparse_indices");
  }
  Value values = arrayConstant(b, loc, {entries, c.block}, b.getF32Type(), ArrayRef(c.values),
                               "sparse_values");
  return SparseMatMulOp::create(b, loc, resultType, x, offsets, indices, values);
}

/// Rewrites the candidate into a sparse matmul (alpha folded into the
/// weights), then beta * C for a gemm.
void rewrite(const ConstantWeightMatmul &candidate, WeightMatrix &w, Compressed c) {
  Operation *layer = candidate.op;
  OpBuilder b(layer);
  Location loc = layer->getLoc();
  if (candidate.alpha != 1.0f) {
    for (float &v : w.values)
      v *= candidate.alpha;
    c = compress(w, c.block);
  }
  Value y = sparseMatMul(b, loc, layer->getResult(0).getType(), candidate.activation, w, c);
  layer->getResult(0).replaceAllUsesWith(gemmEpilogue(b, loc, candidate, y, /*alphaApplied=*/true));
  layer->erase();
}

struct KilnSparsifyPass : mlir::kiln::impl::KilnSparsifyBase<KilnSparsifyPass> {
  using KilnSparsifyBase::KilnSparsifyBase;

  void runOnOperation() override {
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp>(op))
        layers.push_back(op);
    });
    for (Operation *layer : layers) {
      std::string why;
      FailureOr<ConstantWeightMatmul> candidate = constantWeightMatmul(layer, why);
      Value x = succeeded(candidate) ? candidate->activation : Value();
      if (x && ShapedType::isDynamic(cast<RankedTensorType>(x.getType()).getShape().back())) {
        why = "the activations' last dimension is dynamic";
        x = {};
      }
      if (!x) {
        if (report)
          emitRemark(layer->getLoc()) << "sparsity: dense: " << why;
        continue;
      }
      std::optional<WeightMatrix> w = weightMatrixOf(layer, why);
      int64_t zeros = llvm::count(w->values, 0.0f);
      Choice choice = choose(*w, rowsOf(x));
      if (report)
        emitRemark(layer->getLoc()) << llvm::formatv(
            choice.sparse ? "sparsity: {0:F1}% zeros: sparse, {1}, predicted {2:F2}x as fast "
                            "as dense"
                          : "sparsity: {0:F1}% zeros: dense (the best sparse kernel, {1}, is "
                            "predicted {2:F2}x as fast)",
            100.0 * zeros / w->values.size(), choice.kernel, choice.speedup);
      if (choice.sparse)
        rewrite(*candidate, *w, std::move(*choice.sparse));
    }
  }
};
} // namespace
