//===- ImportDetection.cpp - ONNX RoiAlign ---------------------------------===//
//
// RoiAlign samples every region of interest on a fixed grid per output bin
// with bilinear interpolation, in kiln ops: the sample coordinates come from
// the (run-time) boxes, the four neighbours of every sample are gathered
// from the feature map laid out as [C, N*H*W] (one gather per corner, no
// per-region copy of the map), and the weighted samples are averaged or
// maxed per bin, as onnxruntime computes them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Elementwise helpers on broadcasting kiln values of one float type.
struct Sampler {
  ImportContext &ctx;
  Emitter e;
  Type et;

  Value c(double v) { return ctx.scalar(et, v); }
  Value add(Value a, Value b) { return *e.binary<k::AddOp>(a, b); }
  Value sub(Value a, Value b) { return *e.binary<k::SubOp>(a, b); }
  Value mul(Value a, Value b) { return *e.binary<k::MulOp>(a, b); }
  Value div(Value a, Value b) { return *e.binary<k::DivOp>(a, b); }
  Value max(Value a, Value b) { return *e.binary<k::MaxOp>(a, b); }
  Value min(Value a, Value b) { return *e.binary<k::MinOp>(a, b); }
  Value less(Value a, Value b) { return *e.binary<k::LessOp>(a, b, ctx.b.getI1Type()); }
  Value both(Value a, Value b) { return *e.binary<k::AndOp>(a, b); }
  Value where(Value cond, Value a, Value b) {
    auto shape = *k::broadcastShapes(typeOf(cond).getShape(), typeOf(a).getShape());
    shape = *k::broadcastShapes(shape, typeOf(b).getShape());
    return k::WhereOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et), cond, a, b);
  }
  /// Column `i` of the boxes [R, 4], as [R, 1].
  Value column(Value boxes, int64_t i) {
    int64_t r = typeOf(boxes).getDimSize(0);
    return k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({r, 1}, et), boxes,
                              ArrayRef<int64_t>{0, i}, ArrayRef<int64_t>{1, 1});
  }
  /// The sample offsets within a region, in bins: p + (i + 0.5) / grid for
  /// bin p and grid point i, as [1, bins * grid].
  FailureOr<Value> offsets(int64_t bins, int64_t grid) {
    HostTensor t;
    t.dtype = dtypeCodeOf(et);
    t.shape = {1, bins * grid};
    for (int64_t p = 0; p < bins; ++p)
      for (int64_t i = 0; i < grid; ++i)
        t.floats.push_back(p + (i + 0.5) / grid);
    return ctx.materialize(t, "roi_offsets");
  }
};

/// Where a sample along one axis of `size` reads: the lower and upper
/// neighbours (as i64), the weight of the upper one, and whether the sample
/// lies within one pixel of the map (outside it contributes 0).
struct Neighbours {
  Value low, high, weight, inside;
};

Neighbours neighbours(Sampler &s, Value at, int64_t size) {
  Type i64 = s.ctx.b.getI64Type();
  Value inside = s.both(s.e.unary<k::NotOp>(s.less(at, s.c(-1))),
                        s.e.unary<k::NotOp>(s.less(s.c(size), at)));
  Value clamped = s.max(at, s.c(0));
  Value floor = s.e.unary<k::FloorOp>(clamped);
  Value last = s.c(size - 1);
  Value low = s.min(floor, last);
  Value high = s.min(s.add(low, s.c(1)), last);
  // At or past the last row the sample is the last row itself.
  Value weight = s.where(s.less(floor, last), s.sub(clamped, low), s.c(0));
  return {s.e.castTo(low, i64), s.e.castTo(high, i64), weight, inside};
}

LogicalResult importRoiAlign(ImportContext &ctx) {
  auto x = ctx.input(0), rois = ctx.input(1), batchIndices = ctx.input(2);
  if (failed(x) || failed(rois) || failed(batchIndices))
    return failure();
  RankedTensorType xt = typeOf(*x), rt = typeOf(*rois), bt = typeOf(*batchIndices);
  Type et = xt.getElementType();
  if (!isa<FloatType>(et) || xt.getRank() != 4 || !xt.hasStaticShape())
    return ctx.fail("RoiAlign needs a static float input [N, C, H, W], got " +
                    shapeText(xt.getShape()));
  if (rt.getElementType() != et || rt.getRank() != 2 || !rt.hasStaticShape() ||
      rt.getDimSize(1) != 4)
    return ctx.fail("rois must be a static [num_rois, 4] tensor of the input's type, got " +
                    shapeText(rt.getShape()));
  int64_t regions = rt.getDimSize(0);
  if (!bt.getElementType().isSignlessInteger() || bt.getShape() != ArrayRef<int64_t>{regions})
    return ctx.fail("batch_indices must be [" + llvm::Twine(regions) + "] integers");
  std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return ctx.fail("RoiAlign mode must be avg or max, got '" + mode + "'");
  std::string coordinates = ctx.opset >= 16 ? ctx.attrString("coordinate_transformation_mode",
                                                             "half_pixel")
                                            : "output_half_pixel";
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel")
    return ctx.fail("unknown coordinate_transformation_mode '" + coordinates + "'");
  int64_t outH = ctx.attrInt("output_height", 1), outW = ctx.attrInt("output_width", 1);
  int64_t grid = ctx.attrInt("sampling_ratio", 0);
  if (outH <= 0 || outW <= 0 || outH > 4096 || outW > 4096)
    return ctx.fail("output_height and output_width must be in [1, 4096]");
  if (grid <= 0 || grid > 64)
    return ctx.fail("sampling_ratio " + llvm::Twine(grid) +
                    " is not supported: the adaptive grid (0) depends on each box; give a "
                    "fixed ratio in [1, 64]");
  int64_t n = xt.getDimSize(0), channels = xt.getDimSize(1), h = xt.getDimSize(2),
          w = xt.getDimSize(3);
  Sampler s{ctx, Emitter{ctx}, et};
  double scale = ctx.attrFloat("spatial_scale", 1.0f);
  double shift = coordinates == "half_pixel" ? 0.5 : 0.0;

  // Per region: the start and the bin size along each axis; the samples.
  auto start = [&](int64_t col) {
    return s.sub(s.mul(s.column(*rois, col), s.c(scale)), s.c(shift));
  };
  auto samples = [&](int64_t first, int64_t bins) -> FailureOr<Value> {
    Value from = start(first), extent = s.sub(start(first + 2), from);
    if (shift == 0) // the legacy mode makes every region at least a pixel
      extent = s.max(extent, s.c(1));
    auto at = s.offsets(bins, grid);
    if (failed(at))
      return failure();
    return s.add(from, s.mul(*at, s.div(extent, s.c(double(bins))))); // [R, bins * grid]
  };
  auto ys = samples(1, outH), xs = samples(0, outW);
  if (failed(ys) || failed(xs))
    return failure();
  int64_t sy = outH * grid, sx = outW * grid;
  Neighbours row = neighbours(s, *ys, h), col = neighbours(s, *xs, w);
  auto asRows = [&](Value v) { return s.e.reshape(v, {regions, sy, 1}); };
  auto asCols = [&](Value v) { return s.e.reshape(v, {regions, 1, sx}); };

  // The map as [C, N*H*W]; each corner gathers one element per sample.
  Value flat = s.e.reshape(*x, {n, channels, h * w});
  flat = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get({channels, n, h * w}, et),
                                flat, ArrayRef<int64_t>{1, 0, 2});
  flat = s.e.reshape(flat, {channels, n * h * w});
  Value base = s.e.reshape(
      *s.e.binary<k::MulOp>(s.e.castTo(*batchIndices, ctx.b.getI64Type()),
                            ctx.scalar(ctx.b.getI64Type(), double(h * w))),
      {regions, 1, 1});
  auto corner = [&](Value yIndex, Value xIndex) -> Value {
    Value rowStart = *s.e.binary<k::MulOp>(asRows(yIndex), ctx.scalar(ctx.b.getI64Type(), w));
    Value index = *s.e.binary<k::AddOp>(*s.e.binary<k::AddOp>(base, rowStart), asCols(xIndex));
    index = s.e.reshape(index, {regions * sy * sx});
    Value v = k::GatherOp::create(ctx.b, ctx.loc,
                                  RankedTensorType::get({channels, regions * sy * sx}, et), flat,
                                  index, 1);
    v = s.e.reshape(v, {channels, regions, sy, sx});
    return k::TransposeOp::create(ctx.b, ctx.loc,
                                  RankedTensorType::get({regions, channels, sy, sx}, et), v,
                                  ArrayRef<int64_t>{1, 0, 2, 3});
  };
  auto weight = [&](Value wy, Value wx) {
    return s.e.reshape(s.mul(asRows(wy), asCols(wx)), {regions, 1, sy, sx});
  };
  Value ly = row.weight, lx = col.weight, hy = s.sub(s.c(1), ly), hx = s.sub(s.c(1), lx);
  Value terms[4] = {s.mul(weight(hy, hx), corner(row.low, col.low)),
                    s.mul(weight(hy, lx), corner(row.low, col.high)),
                    s.mul(weight(ly, hx), corner(row.high, col.low)),
                    s.mul(weight(ly, lx), corner(row.high, col.high))};
  bool average = mode == "avg";
  Value sample = terms[0];
  for (Value t : ArrayRef(terms).drop_front())
    sample = average ? s.add(sample, t) : s.max(sample, t);
  Value inside = s.e.reshape(*s.e.binary<k::AndOp>(asRows(row.inside), asCols(col.inside)),
                             {regions, 1, sy, sx});
  sample = s.where(inside, sample, s.c(0));

  // Each bin reduces its grid x grid samples.
  Value bins = s.e.reshape(sample, {regions, channels, outH, grid, outW, grid});
  Value y = k::ReduceOp::create(ctx.b, ctx.loc,
                                RankedTensorType::get({regions, channels, outH, outW}, et), bins,
                                average ? "sum" : "max", ArrayRef<int64_t>{3, 5}, false);
  if (average)
    y = s.div(y, s.c(double(grid * grid)));
  ctx.setOutput(0, y);
  return success();
}

} // namespace

void registerDetectionOps(ImportTable &t) { t["RoiAlign"] = importRoiAlign; }

} // namespace kiln::onnx_frontend
