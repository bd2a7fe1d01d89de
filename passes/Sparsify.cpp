//===- Sparsify.cpp - mostly-zero constant weights as kiln.sparse_matmul ---===//
//
// Chooses, per matmul (or 1x1 convolution) with constant weights, between
// the dense kernel and the sparse ones (compressed columns, 16x1 blocks,
// bitmaps) by a roofline cost model, and compresses the weights for the one
// chosen (see Passes.td).
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
// B = 1 over at least kRowVectorRows rows: the lowering transposes tiles of
// rows in cache and multiplies whole vectors of them, no gathers.
constexpr double kRowVectorMacs = 7.0;
constexpr int64_t kRowVectorRows = 16;
// Bitmaps: per row and 16 outputs, the nonzeros expanded into 16 lanes
// (AVX-512's vexpandps), then one broadcast multiply-add per row.
constexpr double kBitmapMacs = 4.5;
// Segments of rows per column block with a cursor each (see
// kiln.bitmap_matmul): their popcount-and-add chains run side by side.
constexpr int64_t kBitmapSegments = 4;
// int8 products (vpdpbusd, 64 multiply-adds per instruction), fitted the
// same way with --quantize=int8-dynamic: the dense kernel streams a byte per
// weight; int8 bitmaps expand each mask's 64 weights anew for every row
// (vpexpandb: their loop runs 1.4x faster without it; binds at batch 1);
// int8 16x4 blocks broadcast x's 4 bytes and do one vpdpbusd per row and
// nonzero block of 4 rows by 16 outputs.
constexpr double kDenseInt8Macs = 44.0;
constexpr double kInt8BitmapMacs = 18.0;
constexpr double kInt8BlockMacs = 28.0;
constexpr double kRequiredSpeedup = 1.25;

enum class Kernel { Dense, Columns, Blocks, Bitmap, Int8Bitmap, Int8Blocks };

const char *kernelName(Kernel k) {
  switch (k) {
  case Kernel::Dense:
    return "dense";
  case Kernel::Columns:
    return "compressed columns";
  case Kernel::Blocks:
    return "16x1 blocks";
  case Kernel::Bitmap:
    return "bitmaps";
  case Kernel::Int8Bitmap:
    return "int8 bitmaps";
  case Kernel::Int8Blocks:
    return "int8 16x4 blocks";
  }
  llvm_unreachable("unknown kernel");
}

struct Choice {
  Kernel kernel;     // Dense when no sparse kernel is fast enough
  Kernel bestSparse; // the fastest sparse kernel
  double speedup;    // its predicted speedup over dense
};

/// Predicted cycles of a kernel streaming `bytes` of weights and doing
/// `macs` multiply-adds at `rate` per cycle.
double cycles(double bytes, double macs, double rate) {
  return std::max(bytes / kBytesPerCycle, macs / rate);
}

/// Whether the piece of `rows` inputs from k0 by `cols` outputs from n0
/// (cut at the matrix's edges) holds a nonzero weight.
bool anyNonzero(const WeightMatrix &w, int64_t k0, int64_t rows, int64_t n0, int64_t cols) {
  for (int64_t k = k0; k < std::min(k0 + rows, w.inputs); ++k)
    for (int64_t n = n0; n < std::min(n0 + cols, w.outputs); ++n)
      if (w.at(k, n) != 0.0f)
        return true;
  return false;
}

/// Nonzero pieces of `rows` inputs by 16 outputs: what the 16x1 (f32) and
/// 16x4 (int8) block kernels store.
int64_t countPieces(const WeightMatrix &w, int64_t rows) {
  int64_t pieces = 0;
  for (int64_t k0 = 0; k0 < w.inputs; k0 += rows)
    for (int64_t n0 = 0; n0 < w.outputs; n0 += 16)
      pieces += anyNonzero(w, k0, rows, n0, 16);
  return pieces;
}

int64_t countNonzeros(const WeightMatrix &w) {
  return w.values.size() - llvm::count(w.values, 0.0f);
}

/// The fastest of the sparse `candidates` (kernel, predicted cycles), and
/// whether it beats `dense` cycles by kRequiredSpeedup.
Choice pick(double dense, ArrayRef<std::pair<Kernel, double>> candidates) {
  auto best = llvm::min_element(candidates, [](auto &a, auto &b) { return a.second < b.second; });
  double speedup = dense / best->second;
  return {speedup >= kRequiredSpeedup ? best->first : Kernel::Dense, best->first, speedup};
}

/// The kernel for `rows` rows of `w`.
Choice choose(const WeightMatrix &w, int64_t rows, bool expandLoad, bool columnsOnly = false) {
  double K = w.inputs, N = w.outputs, M = rows;
  double indexBytes = w.inputs <= 65536 ? 2 : 4;
  double nonzeros = countNonzeros(w), pieces = countPieces(w, 1);
  double dense = cycles(4 * K * N, M * K * N, kDenseMacs);
  double columnRate = rows >= kRowVectorRows ? kRowVectorMacs : kGatherMacs;
  SmallVector<std::pair<Kernel, double>> candidates = {
      {Kernel::Columns, cycles((4 + indexBytes) * nonzeros + 4 * N, M * nonzeros, columnRate)}};
  if (w.outputs % 16 == 0 && !columnsOnly) {
    candidates.push_back({Kernel::Blocks, cycles((64 + indexBytes) * pieces + N / 4,
                                                 M * pieces * 16, kBlockedMacs)});
    if (expandLoad)
      candidates.push_back(
          {Kernel::Bitmap, cycles(4 * nonzeros + K * N / 8 + N / 4, M * K * N, kBitmapMacs)});
  }
  return pick(dense, candidates);
}

/// The kernel for `rows` rows of the int8 weights `w` (K a multiple of 4,
/// N of 16).
Choice chooseInt8(const WeightMatrix &w, int64_t rows) {
  double K = w.inputs, N = w.outputs, M = rows;
  double nonzeros = countNonzeros(w), pieces = countPieces(w, 4);
  double dense = cycles(K * N, M * K * N, kDenseInt8Macs);
  double bitmap = cycles(K * N / 8 + nonzeros + N / 4, M * K * N, kInt8BitmapMacs);
  double blocks = cycles(66 * pieces + N / 4, M * 64 * pieces, kInt8BlockMacs);
  return pick(dense, {{Kernel::Int8Bitmap, bitmap}, {Kernel::Int8Blocks, blocks}});
}

/// The weights of the int8 product that kiln-quantize-dynamic and
/// kiln-quantize-static leave: a kiln.matmul of ui8 activations [..., K]
/// by a constant i8 [K, N], summed in i32. nullopt for another matmul, or
/// with `why` set for an int8 product that bitmaps cannot hold.
std::optional<WeightMatrix> int8WeightsOf(MatMulOp matmul, std::string &why) {
  auto x = cast<RankedTensorType>(matmul.getLhs().getType());
  auto type = cast<RankedTensorType>(matmul.getRhs().getType());
  if (!x.getElementType().isUnsignedInteger(8) || !type.getElementType().isSignlessInteger(8))
    return std::nullopt;
  auto constant = matmul.getRhs().getDefiningOp<ConstantOp>();
  std::optional<ArrayRef<char>> data =
      constant ? rawElementsData(constant.getValue()) : std::nullopt;
  if (!data || type.getRank() != 2 || !type.hasStaticShape()) {
    why = "its int8 weights are not a constant matrix";
    return std::nullopt;
  }
  if (ShapedType::isDynamic(x.getShape().back())) {
    why = "the activations' last dimension is dynamic";
    return std::nullopt;
  }
  int64_t k = type.getDimSize(0), n = type.getDimSize(1);
  if (k % 4 || n % 16) {
    why = "int8 sparse kernels need K divisible by 4 and N by 16";
    return std::nullopt;
  }
  std::vector<float> values;
  values.reserve(data->size());
  for (char c : *data)
    values.push_back(static_cast<int8_t>(c));
  return WeightMatrix{matmul, 1, k, n, /*outputMajor=*/false, std::move(values)};
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

/// kiln.sparse_matmul over column blocks of `block` outputs: f32 entries
/// of one row, or int8 entries of 4 rows (in a vpdpbusd operand's byte
/// order: output-major, then row).
Value compressedMatMul(OpBuilder &b, Location loc, Type resultType, Value x,
                       const WeightMatrix &w, int64_t block, bool int8 = false) {
  int64_t group = int8 ? 4 : 1;
  std::vector<int32_t> offsets = {0};
  std::vector<int32_t> rows;
  std::vector<float> values;
  for (int64_t n0 = 0; n0 < w.outputs; n0 += block) {
    for (int64_t k = 0; k < w.inputs; k += group) {
      if (!anyNonzero(w, k, group, n0, block))
        continue;
      rows.push_back(k);
      for (int64_t n = n0; n < n0 + block; ++n)
        for (int64_t t = 0; t < group; ++t)
          values.push_back(w.at(k + t, n));
    }
    offsets.push_back(rows.size());
  }
  int64_t entries = rows.size();
  Value offsetArray = arrayConstant(b, loc, {(int64_t)offsets.size()}, b.getI32Type(),
                                    ArrayRef(offsets), "sparse_offsets");
  Value indices;
  if (w.inputs <= 65536) {
    std::vector<uint16_t> narrow(rows.begin(), rows.end());
    indices = arrayConstant(b, loc, {entries}, b.getI16Type(), ArrayRef(narrow), "sparse_indices");
  } else {
    indices = arrayConstant(b, loc, {entries}, b.getI32Type(), ArrayRef(rows), "sparse_indices");
  }
  Value valueArray;
  if (int8) {
    std::vector<int8_t> bytes(values.begin(), values.end());
    valueArray = arrayConstant(b, loc, {entries, block * group}, b.getI8Type(),
                               ArrayRef(bytes), "sparse_values");
  } else {
    valueArray = arrayConstant(b, loc, {entries, block}, b.getF32Type(), ArrayRef(values),
                               "sparse_values");
  }
  return SparseMatMulOp::create(b, loc, resultType, x, offsetArray, indices, valueArray);
}

/// kiln.bitmap_matmul: a mask per group of rows and 16 outputs, the
/// nonzeros, and where each of a column block's kBitmapSegments segments of
/// groups starts in them. f32 has groups of one row (16-bit masks); int8
/// has groups of 4 rows (64-bit masks, bit 4 l + t for row t and output l:
/// a vpdpbusd operand's byte order).
Value bitmapMatMul(OpBuilder &b, Location loc, Type resultType, Value x, const WeightMatrix &w,
                   bool int8) {
  int64_t group = int8 ? 4 : 1, groups = w.inputs / group;
  int64_t blocks = w.outputs / 16, length = groups / kBitmapSegments;
  std::vector<int32_t> starts;
  std::vector<uint64_t> masks;
  std::vector<float> values;
  for (int64_t j = 0; j < blocks; ++j) {
    for (int64_t g = 0; g < groups; ++g) {
      // Segment s starts at group s * length (all at 0 when there are
      // fewer groups than segments).
      for (int64_t s = 0; s < kBitmapSegments; ++s)
        if (s * length == g && (length > 0 || g == 0))
          starts.push_back(values.size());
      uint64_t mask = 0;
      for (int64_t l = 0; l < 16; ++l)
        for (int64_t t = 0; t < group; ++t)
          if (float v = w.at(group * g + t, 16 * j + l); v != 0.0f) {
            mask |= uint64_t(1) << (group * l + t);
            values.push_back(v);
          }
      masks.push_back(mask);
    }
  }
  starts.push_back(values.size());
  Value startArray = arrayConstant(b, loc, {(int64_t)starts.size()}, b.getI32Type(),
                                   ArrayRef(starts), "bitmap_starts");
  Value maskArray, valueArray;
  int64_t count = values.size();
  if (int8) {
    maskArray = arrayConstant(b, loc, {blocks, groups}, b.getI64Type(), ArrayRef(masks),
                              "bitmap_masks");
    std::vector<int8_t> bytes(values.begin(), values.end());
    valueArray =
        arrayConstant(b, loc, {count}, b.getI8Type(), ArrayRef(bytes), "bitmap_values");
  } else {
    std::vector<uint16_t> narrow(masks.begin(), masks.end());
    maskArray = arrayConstant(b, loc, {blocks, groups}, b.getI16Type(), ArrayRef(narrow),
                              "bitmap_masks");
    valueArray =
        arrayConstant(b, loc, {count}, b.getF32Type(), ArrayRef(values), "bitmap_values");
  }
  return BitmapMatMulOp::create(b, loc, resultType, x, startArray, maskArray, valueArray);
}

/// Rewrites the candidate into `kernel` (alpha folded into the weights),
/// then beta * C for a gemm.
void rewrite(const ConstantWeightMatmul &candidate, WeightMatrix &w, Kernel kernel) {
  Operation *layer = candidate.op;
  OpBuilder b(layer);
  Location loc = layer->getLoc();
  if (candidate.alpha != 1.0f)
    for (float &v : w.values)
      v *= candidate.alpha;
  Type type = layer->getResult(0).getType();
  Value x = candidate.activation;
  Value y = kernel == Kernel::Bitmap
                ? bitmapMatMul(b, loc, type, x, w, /*int8=*/false)
                : compressedMatMul(b, loc, type, x, w, kernel == Kernel::Blocks ? 16 : 1);
  layer->getResult(0).replaceAllUsesWith(gemmEpilogue(b, loc, candidate, y, /*alphaApplied=*/true));
  layer->erase();
}

/// The pixels of a 1x1 convolution that can run as a sparse matmul of its
/// pixels (one NCHW image, f32, no stride, padding, dilation or groups),
/// or 0 with the reason in `why`.
int64_t pointwisePixels(ConvOp conv, std::string &why) {
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto filter = cast<RankedTensorType>(conv.getFilter().getType());
  bool unit = llvm::all_of(conv.getStrides(), [](int64_t v) { return v == 1; }) &&
              llvm::all_of(conv.getDilations(), [](int64_t v) { return v == 1; }) &&
              llvm::all_of(conv.getPads(), [](int64_t v) { return v == 0; });
  if (!in.getElementType().isF32() || !in.hasStaticShape() || in.getRank() != 4 ||
      in.getDimSize(0) != 1 || conv.getChannelsLast())
    why = "its input is not one static f32 NCHW image";
  else if (!filter.hasStaticShape() || filter.getDimSize(2) != 1 || filter.getDimSize(3) != 1 ||
           !unit || conv.getGroup() != 1)
    why = "it is not a 1x1 convolution without stride, padding, dilation or groups";
  else if (in.getDimSize(2) * in.getDimSize(3) < kRowVectorRows)
    why = "its image has fewer than 16 pixels";
  else
    return in.getDimSize(2) * in.getDimSize(3);
  return 0;
}

/// The 1x1 convolution as the product of its pixels [H*W, C] (channels
/// last, which kiln-channels-last folds into the layout of the dense
/// convolutions around it) and W, then the bias.
void rewriteConv(ConvOp conv, const WeightMatrix &w) {
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  int64_t channels = in.getDimSize(1), height = in.getDimSize(2), width = in.getDimSize(3);
  Type f32 = b.getF32Type();
  Value nhwc = createTranspose(b, loc, conv.getInput(), {0, 2, 3, 1});
  Value pixels = ReshapeOp::create(
      b, loc, RankedTensorType::get({height * width, channels}, f32), nhwc);
  Value product = compressedMatMul(
      b, loc, RankedTensorType::get({height * width, w.outputs}, f32), pixels, w, 1);
  Value y = createTranspose(
      b, loc,
      ReshapeOp::create(b, loc, RankedTensorType::get({1, height, width, w.outputs}, f32),
                        product),
      {0, 3, 1, 2});
  if (Value bias = conv.getBias()) {
    auto perChannel = RankedTensorType::get({w.outputs, 1, 1}, f32);
    y = AddOp::create(b, loc, conv.getType(), y, ReshapeOp::create(b, loc, perChannel, bias));
  }
  conv.getResult().replaceAllUsesWith(y);
  conv.erase();
}

struct KilnSparsifyPass : mlir::kiln::impl::KilnSparsifyBase<KilnSparsifyPass> {
  using KilnSparsifyBase::KilnSparsifyBase;

  void sparsifyConv(ConvOp conv) {
    std::string why;
    int64_t pixels = pointwisePixels(conv, why);
    if (!pixels && !report)
      return; // not 1x1: no need to read the filter
    std::optional<WeightMatrix> w = weightMatrixOf(conv, why);
    if (!w)
      return; // no constant filter: nothing to decide
    if (!pixels) {
      if (report && llvm::count(w->values, 0.0f) > 0)
        emitRemark(conv.getLoc()) << "sparsity: dense: " << why;
      return;
    }
    Choice choice = choose(*w, pixels, /*expandLoad=*/false, /*columnsOnly=*/true);
    reportChoice(conv, *w, choice);
    if (choice.kernel != Kernel::Dense)
      rewriteConv(conv, *w);
  }

  /// Whether `matmul` is an int8 product (then decided here).
  bool sparsifyInt8(MatMulOp matmul) {
    std::string why;
    std::optional<WeightMatrix> w = int8WeightsOf(matmul, why);
    if (!w && why.empty())
      return false;
    if (w && !int8Bitmaps)
      why = "int8 sparse kernels need AVX512-VNNI and AVX512-VBMI2";
    if (!w || !int8Bitmaps) {
      if (report)
        emitRemark(matmul.getLoc()) << "sparsity: dense: " << why;
      return true;
    }
    Choice choice = chooseInt8(*w, rowsOf(matmul.getLhs()));
    reportChoice(matmul, *w, choice);
    if (choice.kernel == Kernel::Dense)
      return true;
    OpBuilder b(matmul);
    Location loc = matmul.getLoc();
    Type type = matmul.getType();
    Value x = matmul.getLhs();
    matmul.getResult().replaceAllUsesWith(
        choice.kernel == Kernel::Int8Bitmap
            ? bitmapMatMul(b, loc, type, x, *w, /*int8=*/true)
            : compressedMatMul(b, loc, type, x, *w, /*block=*/16, /*int8=*/true));
    matmul.erase();
    return true;
  }

  void reportChoice(Operation *layer, const WeightMatrix &w, const Choice &choice) {
    if (!report)
      return;
    int64_t zeros = llvm::count(w.values, 0.0f);
    emitRemark(layer->getLoc()) << llvm::formatv(
        choice.kernel != Kernel::Dense
            ? "sparsity: {0:F1}% zeros: sparse, {1}, predicted {2:F2}x as fast as dense"
            : "sparsity: {0:F1}% zeros: dense (the best sparse kernel, {1}, is predicted "
              "{2:F2}x as fast)",
        100.0 * zeros / w.values.size(), kernelName(choice.bestSparse), choice.speedup);
  }

  void runOnOperation() override {
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp, ConvOp>(op))
        layers.push_back(op);
    });
    for (Operation *layer : layers) {
      std::string why;
      if (auto conv = dyn_cast<ConvOp>(layer)) {
        sparsifyConv(conv);
        continue;
      }
      if (auto matmul = dyn_cast<MatMulOp>(layer); matmul && sparsifyInt8(matmul))
        continue;
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
      WeightMatrix w = weightMatrixOf(*candidate);
      Choice choice = choose(w, rowsOf(x), expandLoad);
      reportChoice(layer, w, choice);
      if (choice.kernel != Kernel::Dense)
        rewrite(*candidate, w, choice.kernel);
    }
  }
};
} // namespace
