//===- DirectConv.cpp - channels-last convolutions in register tiles ------===//
//
// A channels-last convolution with a constant filter, computed straight from
// its input: each task owns a register tile of `rows` neighbouring output
// pixels of one output row by `cols` output channels (whole vectors), starts
// it from the bias and accumulates, per filter row and for each value of the
// window's run of input values, the panel row of the filter times a broadcast
// of each pixel's input value. The filter is packed at compile time into
// panels [F/cols][KH*KW*C][cols] in the runs' order, so the K loop reads one
// contiguous stream of it; along a window row (dilation 1) the KW*C input
// values of a pixel are one contiguous run of the NHWC input.
//
// The im2col path (kiln-convert-to-linalg) first copies every pixel's window
// into a matrix of receptive fields (9x the input for a 3x3 convolution),
// which the matmul then reads back from a cache level further out; here
// nothing is copied. The tile's single write is where kiln-cpu-fuse-epilogues
// applies a ReLU or a residual Add.
//
// A filter count that is not a multiple of the vector width (24, 42 or 360
// channels) is padded with zero filters to whole vectors: the padded lanes
// are computed and masked off when the tile is written.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConstantData.h"
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/CpuBackend.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUDIRECTCONV
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The shape of a direct convolution and its register tile.
struct ConvShape {
  int64_t n, h, w, c;      // padded NHWC input
  int64_t f, kh, kw;       // filter count and window
  int64_t paddedF;         // f rounded up to whole vectors
  int64_t oh, ow;          // output rows and columns
  int64_t sy, sx, dy, dx;  // strides and dilations
  int64_t rows, cols;      // register tile: output pixels x output channels
  int64_t runs, runLength; // per filter row: runs of contiguous input values

  int64_t reduction() const { return kh * kw * c; }
  int64_t panels() const { return paddedF / cols; }
  bool ragged() const { return paddedF != f; }
};

/// The shape and register tile of `op`, if it has a tile worth running.
FailureOr<ConvShape> directShape(ConvOp op, int64_t vectorWidth) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto filter = cast<RankedTensorType>(op.getFilter().getType());
  auto out = cast<RankedTensorType>(op.getType());
  ArrayRef<int64_t> pads = op.getPads();
  ConvShape s;
  s.n = in.getDimSize(0), s.c = in.getDimSize(3);
  s.h = in.getDimSize(1) + pads[0] + pads[2], s.w = in.getDimSize(2) + pads[1] + pads[3];
  s.f = filter.getDimSize(0), s.kh = filter.getDimSize(2), s.kw = filter.getDimSize(3);
  s.oh = out.getDimSize(1), s.ow = out.getDimSize(2);
  s.sy = op.getStrides()[0], s.sx = op.getStrides()[1];
  s.dy = op.getDilations()[0], s.dx = op.getDilations()[1];
  // Padding that would waste more than a quarter of the lanes (6 or 18
  // filters) loses to the im2col path's narrower vectors.
  s.paddedF = llvm::alignTo(s.f, vectorWidth);
  if (3 * s.paddedF > 4 * s.f)
    return failure();
  MatmulTile tile = chooseRegisterTile(false, s.ow, s.paddedF, vectorWidth);
  s.rows = tile.m, s.cols = tile.n;
  // Tiles stay within an output row; one with fewer than half the register
  // rows would leave most FMA slots idle.
  if (2 * s.rows < maxRegisterRows(vectorWidth))
    return failure();
  // Along a window row of dilation 1, the taps' channels are one run.
  s.runs = s.dx == 1 ? 1 : s.kw;
  s.runLength = s.dx == 1 ? s.kw * s.c : s.c;
  return s;
}

/// The FCHW filter as panels [paddedF/cols][KH*KW*C][cols], reduction index
/// (ky, kx, c) in the order the runs read the input; zeros past F.
Value packFilter(OpBuilder &b, Location loc, ElementsAttr filter, const ConvShape &s) {
  int64_t k = s.reduction();
  auto type = RankedTensorType::get({s.panels(), k, s.cols}, filter.getElementType());
  return relayoutConstant(b, loc, filter, type, [&](int64_t i) -> int64_t {
    int64_t f = (i / (k * s.cols)) * s.cols + i % s.cols, r = (i / s.cols) % k;
    if (f >= s.f)
      return -1;
    int64_t ch = r % s.c, tap = r / s.c;
    return ((f * s.c + ch) * s.kh + tap / s.kw) * s.kw + tap % s.kw;
  });
}

/// Builds the task loop and each task's tile.
struct DirectConvBuilder {
  OpBuilder &b;
  Location loc;
  const ConvShape &s;
  Value rowsOfInput; // [N*H, W*C]: one padded input row per image row
  Value panels;      // packed filter
  Value bias;        // [F] or null
  VectorType vector; // one tile row: cols lanes

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value mul(Value x, int64_t v) { return arith::MulIOp::create(b, loc, x, index(v)); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }

  /// The accumulators' start: the bias of the tile's channels, else zeros.
  Value initialRow(Value f0) {
    if (!bias)
      return arith::ConstantOp::create(b, loc, vector, b.getZeroAttr(vector));
    Value pad = ub::PoisonOp::create(b, loc, vector.getElementType());
    return vector::TransferReadOp::create(b, loc, vector, bias, ValueRange{f0}, pad,
                                          ArrayRef<bool>{!s.ragged()});
  }

  /// An scf.for over [0, count) carrying `init`; `body(iv, carried)`
  /// returns the values the iteration yields.
  SmallVector<Value> loop(int64_t count, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(b, loc, index(0), index(count), index(1), init,
                                    [&](OpBuilder &lb, Location, Value iv, ValueRange carried) {
                                      OpBuilder::InsertionGuard guard(b);
                                      b.setInsertionPointToEnd(lb.getInsertionBlock());
                                      scf::YieldOp::create(b, loc, body(iv, carried));
                                    });
    return SmallVector<Value>(forOp.getResults());
  }

  /// Accumulates one run of the window into `acc` (a row per pixel): value j
  /// of the run at input column offset `first + i * sx * C` for pixel i,
  /// times row `k0 + j` of the filter panel.
  SmallVector<Value> accumulateRun(ValueRange acc, Value inputRow, Value first, Value panel,
                                   Value k0) {
    return loop(s.runLength, acc, [&](Value j, ValueRange sums) {
      Value pad = ub::PoisonOp::create(b, loc, vector.getElementType());
      Value weights = vector::TransferReadOp::create(b, loc, vector, panels,
                                                     ValueRange{panel, add(k0, j), index(0)}, pad,
                                                     ArrayRef<bool>{true});
      Value at = add(first, j);
      SmallVector<Value> next;
      for (auto [i, sum] : llvm::enumerate(sums)) {
        Value column = add(at, index(static_cast<int64_t>(i) * s.sx * s.c));
        Value x = tensor::ExtractOp::create(b, loc, rowsOfInput, ValueRange{inputRow, column});
        Value splat = vector::BroadcastOp::create(b, loc, vector, x);
        next.push_back(vector::FMAOp::create(b, loc, splat, weights, sum));
      }
      return next;
    });
  }

  /// Accumulates filter row `ky` into `acc`: its runs of the window of the
  /// pixels starting at input column offset `firstColumn` of image row
  /// (image, oy).
  SmallVector<Value> accumulateFilterRow(ValueRange acc, Value image, Value oy, Value firstColumn,
                                         Value panel, Value ky) {
    Value inputRow = add(mul(image, s.h), add(mul(oy, s.sy), mul(ky, s.dy)));
    Value k0 = mul(ky, s.kw * s.c);
    SmallVector<Value> sums(acc);
    for (int64_t r = 0; r < s.runs; ++r)
      sums = accumulateRun(sums, inputRow, add(firstColumn, index(r * s.dx * s.c)), panel,
                           add(k0, index(r * s.runLength)));
    return sums;
  }

  /// The tile of output pixels [p0, p0 + rows) of image row (image, oy),
  /// first output column ox0, by channels [f0, f0 + cols) of panel `panel`:
  /// the vector [rows, cols] of its sums.
  Value tile(Value image, Value oy, Value ox0, Value panel, Value f0) {
    SmallVector<Value> acc(s.rows, initialRow(f0));
    Value firstColumn = mul(mul(ox0, s.sx), s.c);
    SmallVector<Value> rows = loop(s.kh, acc, [&](Value ky, ValueRange sums) {
      return accumulateFilterRow(sums, image, oy, firstColumn, panel, ky);
    });
    auto tileType = VectorType::get({s.rows, s.cols}, vector.getElementType());
    Value result = ub::PoisonOp::create(b, loc, tileType);
    for (auto [i, row] : llvm::enumerate(rows))
      result = vector::InsertOp::create(b, loc, row, result, static_cast<int64_t>(i));
    return result;
  }

  /// How many of the panel's channels from `f0` on exist: `cols`, except in
  /// the last panel of a padded filter.
  OpFoldResult channelsFrom(Value f0) {
    if (!s.ragged())
      return b.getIndexAttr(s.cols);
    if (s.panels() == 1)
      return b.getIndexAttr(s.f);
    return arith::MinSIOp::create(b, loc, index(s.cols), sub(index(s.f), f0)).getResult();
  }

  /// The convolution as [N*OH*OW, F]: a forall over (channel panel, image
  /// row, pixel tile), or (image row, pixel tile, channel panel) when the
  /// whole packed filter stays in cache: consecutive tasks then share their
  /// input instead of a filter panel.
  Value build(bool panelsInner) {
    Type et = vector.getElementType();
    Value init = emptyTensor(b, loc, ArrayRef<int64_t>{s.n * s.oh * s.ow, s.f}, et);
    SmallVector<int64_t> counts = {s.panels(), s.n * s.oh, s.ow / s.rows};
    if (panelsInner)
      std::rotate(counts.begin(), counts.begin() + 1, counts.end());
    SmallVector<OpFoldResult> lbs(3, b.getIndexAttr(0)), ubs, steps(3, b.getIndexAttr(1));
    for (int64_t count : counts)
      ubs.push_back(b.getIndexAttr(count));
    return buildTileLoop(
        b, loc, lbs, ubs, steps, init,
        [&](OpBuilder &, Location, ValueRange ivs, Value out) -> TileResult {
          Value panel = panelsInner ? ivs[2] : ivs[0];
          Value outputRow = panelsInner ? ivs[0] : ivs[1];
          Value pixelTile = panelsInner ? ivs[1] : ivs[2];
          Value image = arith::DivUIOp::create(b, loc, outputRow, index(s.oh));
          Value oy = arith::RemUIOp::create(b, loc, outputRow, index(s.oh));
          Value ox0 = mul(pixelTile, s.rows);
          Value f0 = mul(panel, s.cols);
          Value sums = tile(image, oy, ox0, panel, f0);
          SmallVector<OpFoldResult> offsets = {add(mul(outputRow, s.ow), ox0), f0};
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(s.rows), channelsFrom(f0)};
          SmallVector<OpFoldResult> unit(2, b.getIndexAttr(1));
          Value slot = tensor::ExtractSliceOp::create(b, loc, out, offsets, sizes, unit);
          Value written =
              vector::TransferWriteOp::create(b, loc, sums, slot, ValueRange{index(0), index(0)},
                                              ArrayRef<bool>{true, !s.ragged()})
                  .getResult();
          return {written, offsets, sizes};
        });
  }
};

LogicalResult convolveDirectly(ConvOp op, int64_t vectorWidth, int64_t residentFilterBytes) {
  auto type = cast<RankedTensorType>(op.getType());
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  auto constant = op.getFilter().getDefiningOp<ConstantOp>();
  if (!op.getChannelsLast() || op.getGroup() != 1 || !constant || !type.hasStaticShape() ||
      !inType.hasStaticShape() || !type.getElementType().isF32() ||
      !inType.getElementType().isF32())
    return failure();
  FailureOr<ConvShape> shape = directShape(op, vectorWidth);
  if (failed(shape))
    return failure();
  const ConvShape &s = *shape;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value panels = packFilter(b, loc, constant.getValue(), s);
  if (!panels)
    return failure();
  Value input = padSpatial(b, loc, op.getInput(), op.getPads(), 0.0, /*channelsLast=*/true);
  SmallVector<ReassociationIndices> pairs = {{0, 1}, {2, 3}};
  Value rowsOfInput = tensor::CollapseShapeOp::create(b, loc, input, pairs);
  DirectConvBuilder builder{
      b, loc, s, rowsOfInput, panels, op.getBias(), VectorType::get({s.cols}, b.getF32Type())};
  bool panelsInner = s.reduction() * s.f * 4 <= residentFilterBytes;
  Value product = builder.build(panelsInner);
  SmallVector<ReassociationIndices> pixels = {{0, 1, 2}, {3}};
  op.getResult().replaceAllUsesWith(tensor::ExpandShapeOp::create(b, loc, type, product, pixels));
  op.erase();
  return success();
}

struct KilnDirectConvPass : mlir::kiln::impl::KilnCpuDirectConvBase<KilnDirectConvPass> {
  using KilnCpuDirectConvBase::KilnCpuDirectConvBase;

  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp op) { convs.push_back(op); });
    for (ConvOp op : convs)
      (void)convolveDirectly(op, vectorWidth, residentFilterBytes);
  }
};
} // namespace
