//===- ConvAsMatmul.cpp - the CPU's convolutions as matmuls ---------------===//
//
// Convolutions that kiln-cpu-direct-conv leaves become matmuls, which the
// CPU's register-tile schedules and packed (VNNI/AMX) kernels then run:
//
// - NCHW, one group, batch 1: filter [F, C*KH*KW] x im2col [C*KH*KW, OH*OW];
//   sizes known at run time: the same per image, in a loop over the batch.
// - channels-last (NHWC), one group: the receptive fields as rows
//   [N*OH*OW, KH*KW*C] x the filter relaid out as [KH*KW*C, F], the fields
//   copied in 64-byte vectors per run of contiguous channels.
// - channels-last depthwise: per output pixel, vectors of channels with an
//   FMA per tap.
// - widening (8-bit or bf16 operands): one widening matmul of the fields,
//   which kiln-cpu-vnni-matmul compiles to VNNI/AMX/SDOT kernels.
//
// What stays (NCHW batches of static shape, grouped convolutions) is left
// to kiln-convert-to-linalg's named linalg convolutions.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConstantData.h"
#include "codegen/KilnToLinalg/Builders.h"
#include "codegen/cpu/Passes.h"

#include "dialects/kiln/KilnDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUCONVASMATMUL
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Unfolds a padded [1, C, H, W] input into the [C*KH*KW, OH*OW] matrix whose
/// columns are the receptive fields (im2col), so a convolution becomes one
/// matmul. The unfold is a copy over (c, ky, kx, oy, ox) whose input map
/// carries the strides and dilations, so it needs no index arithmetic per
/// element and its inner loop reads a row of the input. 1x1 stride-1
/// convolutions need no copy: the input is the matrix.
Value buildIm2Col(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                  ArrayRef<OpFoldResult> outSize) {
  RankedTensorType type = tensorType(input);
  Type et = type.getElementType();
  int64_t c = type.getDimSize(1), kh = kernel[0], kw = kernel[1];
  auto dim = [](OpFoldResult size) {
    return getConstantIntValue(size).value_or(ShapedType::kDynamic);
  };
  int64_t oh = dim(outSize[0]), ow = dim(outSize[1]);
  int64_t pixels = ShapedType::isDynamic(oh) || ShapedType::isDynamic(ow) ? ShapedType::kDynamic
                                                                          : oh * ow;
  OpFoldResult pixelSize = mulSizes(b, loc, outSize);
  if (kh == 1 && kw == 1 && strides[0] == 1 && strides[1] == 1)
    return reshapeTo(b, loc, input, RankedTensorType::get({c, pixels}, et),
                     {b.getIndexAttr(c), pixelSize});
  MLIRContext *ctx = b.getContext();
  AffineExpr ch, ky, kx, oy, ox;
  bindDims(ctx, ch, ky, kx, oy, ox);
  AffineMap inputMap = AffineMap::get(
      5, 0,
      {getAffineConstantExpr(0, ctx), ch, oy * strides[0] + ky * dilations[0],
       ox * strides[1] + kx * dilations[1]},
      ctx);
  SmallVector<AffineMap> maps = {inputMap, AffineMap::getMultiDimIdentityMap(5, ctx)};
  auto unfoldedType = RankedTensorType::get({c, kh, kw, oh, ow}, et);
  SmallVector<OpFoldResult> unfoldedSizes = {b.getIndexAttr(c), b.getIndexAttr(kh),
                                             b.getIndexAttr(kw), outSize[0], outSize[1]};
  SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
  auto unfold = linalg::GenericOp::create(
      b, loc, unfoldedType, input, emptyTensor(b, loc, unfoldedSizes, et), maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
  return reshapeTo(b, loc, unfold.getResult(0),
                   RankedTensorType::get({c * kh * kw, pixels}, et),
                   {b.getIndexAttr(c * kh * kw), pixelSize});
}

/// One image [1, C, H, W] (padded) convolved as filter [F, C*KH*KW] x
/// im2col [C*KH*KW, OH*OW], accumulating into `init` [1, F, OH, OW] of
/// `sizes`.
Value convolveAsMatmul(OpBuilder &b, Location loc, ConvOp op, Value image, Value filter,
                       Value init, ArrayRef<OpFoldResult> sizes) {
  auto type = tensorType(init);
  Type et = type.getElementType();
  ArrayRef<int64_t> fs = tensorType(filter).getShape(), out = type.getShape();
  Value col = buildIm2Col(b, loc, image, {fs[2], fs[3]}, op.getStrides(), op.getDilations(),
                          sizes.drop_front(2));
  Value w2d = reshapeTo(b, loc, filter, RankedTensorType::get({fs[0], fs[1] * fs[2] * fs[3]}, et));
  int64_t pixels = ShapedType::isDynamic(out[2]) || ShapedType::isDynamic(out[3])
                       ? ShapedType::kDynamic
                       : out[2] * out[3];
  auto flat = RankedTensorType::get({out[1], pixels}, et);
  SmallVector<OpFoldResult> flatSizes = {b.getIndexAttr(out[1]),
                                         mulSizes(b, loc, sizes.drop_front(2))};
  Value mm = linalg::MatmulOp::create(b, loc, TypeRange{flat}, ValueRange{w2d, col},
                                      reshapeTo(b, loc, init, flat, flatSizes))
                 .getResult(0);
  return reshapeTo(b, loc, mm, type, sizes);
}

/// convolveAsMatmul over each image of a batch of any size.
Value convolveImages(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                     Value init, ArrayRef<OpFoldResult> sizes) {
  auto inType = tensorType(input), outType = tensorType(init);
  auto imageType = RankedTensorType::get(
      {1, inType.getDimSize(1), inType.getDimSize(2), inType.getDimSize(3)},
      inType.getElementType());
  auto tileType = RankedTensorType::get(
      {1, outType.getDimSize(1), outType.getDimSize(2), outType.getDimSize(3)},
      outType.getElementType());
  return buildTileLoop(
      b, loc, {b.getIndexAttr(0)}, {sizes[0]}, {b.getIndexAttr(1)}, init,
      [&](OpBuilder &nb, Location l, ValueRange ivs, Value out) -> TileResult {
        Value n = ivs[0];
        auto unit = [&](ArrayRef<OpFoldResult> full) {
          SmallVector<OpFoldResult> s(full);
          s[0] = nb.getIndexAttr(1);
          return s;
        };
        SmallVector<OpFoldResult> at(4, nb.getIndexAttr(0)), step(4, nb.getIndexAttr(1));
        at[0] = n;
        SmallVector<OpFoldResult> imageSizes = unit(sizesOf(nb, l, input)),
                                  tileSizes = unit(sizes);
        Value image = tensor::ExtractSliceOp::create(nb, l, imageType, input, at, imageSizes, step);
        Value tile = tensor::ExtractSliceOp::create(nb, l, tileType, out, at, tileSizes, step);
        return {convolveAsMatmul(nb, l, op, image, filter, tile, tileSizes), at, tileSizes};
      });
}

/// Where one output pixel of a window over an NHWC image reads: its image
/// and, per tap, the input row and column.
struct PixelWindow {
  Value image, oy, ox;
  ArrayRef<int64_t> strides, dilations;

  Value inputCoordinate(OpBuilder &b, Location loc, int64_t dim, int64_t tap) const {
    Value out = dim == 0 ? oy : ox;
    Value scaled = arith::MulIOp::create(b, loc, out,
                                         arith::ConstantIndexOp::create(b, loc, strides[dim]));
    return arith::AddIOp::create(b, loc, scaled,
                                 arith::ConstantIndexOp::create(b, loc, tap * dilations[dim]));
  }
};

/// A [N*OH*OW, cols] tensor of `et` built one row per output pixel in an
/// scf.forall: `fillRow(row, window)` returns the pixel's row ([1, cols])
/// written.
Value buildPixelRows(OpBuilder &b, Location loc, int64_t n, int64_t oh, int64_t ow,
                     int64_t cols, Type et, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> dilations,
                     function_ref<Value(Value, const PixelWindow &)> fillRow) {
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value rows = emptyTensor(b, loc, ArrayRef<int64_t>{n * oh * ow, cols}, et);
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(n * oh * ow)},
                                      ValueRange{rows}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value pixel = forall.getInductionVar(0);
  Value within = arith::RemUIOp::create(b, loc, pixel, index(oh * ow));
  PixelWindow window{arith::DivUIOp::create(b, loc, pixel, index(oh * ow)),
                     arith::DivUIOp::create(b, loc, within, index(ow)),
                     arith::RemUIOp::create(b, loc, within, index(ow)), strides, dilations};
  SmallVector<OpFoldResult> offsets = {pixel, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(cols)};
  SmallVector<OpFoldResult> unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value row = tensor::ExtractSliceOp::create(b, loc, forall.getRegionIterArgs()[0], offsets, sizes,
                                             unit);
  row = fillRow(row, window);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, row, forall.getRegionIterArgs()[0], offsets, sizes,
                                        unit);
  return forall.getResult(0);
}

/// Calls `step(row, c0, width)` over `channels` in vectors of `chunk` (then
/// one of the remainder), threading `row` through. More than two whole
/// chunks are an scf.for: unrolled, bufferization's analysis grows
/// quadratically with the chain of writes.
Value forEachChannelChunk(OpBuilder &b, Location loc, int64_t channels, int64_t chunk,
                          Value row, function_ref<Value(OpBuilder &, Value, Value, int64_t)> step) {
  auto index = [&](OpBuilder &ib, int64_t v) { return arith::ConstantIndexOp::create(ib, loc, v); };
  int64_t whole = channels / chunk, rest = channels % chunk;
  if (whole > 2) {
    row = scf::ForOp::create(b, loc, index(b, 0), index(b, whole * chunk), index(b, chunk),
                             ValueRange{row},
                             [&](OpBuilder &cb, Location, Value c0, ValueRange iter) {
                               scf::YieldOp::create(cb, loc, step(cb, iter[0], c0, chunk));
                             })
              .getResult(0);
  } else {
    for (int64_t i = 0; i < whole; ++i)
      row = step(b, row, index(b, i * chunk), chunk);
  }
  if (rest > 0)
    row = step(b, row, index(b, whole * chunk), rest);
  return row;
}

/// Elements of `et` in one 64-byte vector.
int64_t vectorChunk(Type et) {
  return std::max<int64_t>(1, 64 / (et.getIntOrFloatBitWidth() / 8));
}

/// The receptive fields of the padded NHWC `input` as rows [N*OH*OW,
/// KH*KW*C]: per output pixel, each tap's C channels are one contiguous run
/// in both the input and the row, copied as vectors of at most 64 bytes. (As
/// a linalg.generic, LLVM unrolls the channel loop fully and then cannot
/// vectorize the byte copies, not knowing that input and rows do not
/// overlap.) Without dilation along x, an f32 window row's KW taps are one
/// run of KW*C values (read from the input viewed as [N, H, W*C]): a 1-D
/// convolution over one channel copies its window in vectors, not tap by
/// tap. A 1x1 window of stride 1 needs no copy: the input is the rows.
Value unfoldChannelsLast(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                         int64_t oh, int64_t ow) {
  RankedTensorType inType = tensorType(input);
  Type et = inType.getElementType();
  int64_t n = inType.getDimSize(0), c = inType.getDimSize(3);
  int64_t cols = kernel[0] * kernel[1] * c;
  if (kernel[0] == 1 && kernel[1] == 1 && strides[0] == 1 && strides[1] == 1)
    return reshapeTo(b, loc, input, RankedTensorType::get({n * oh * ow, cols}, et));
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));
  // One run per tap, or per window row when its taps are contiguous (f32
  // only: LLVM fails to legalize bf16 vectors of some odd run lengths).
  bool rowRuns = dilations[1] == 1 && et.isF32();
  int64_t runLength = rowRuns ? kernel[1] * c : c, runsPerRow = rowRuns ? 1 : kernel[1];
  Value source = input;
  if (rowRuns)
    source = tensor::CollapseShapeOp::create(
        b, loc, input, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  auto fill = [&](Value row, const PixelWindow &window) {
    for (int64_t ky = 0; ky < kernel[0]; ++ky)
      for (int64_t kx = 0; kx < runsPerRow; ++kx) {
        Value iy = window.inputCoordinate(b, loc, 0, ky);
        Value ix = window.inputCoordinate(b, loc, 1, kx);
        Value base = arith::ConstantIndexOp::create(b, loc, (ky * kernel[1] + kx) * c);
        SmallVector<Value> at = {window.image, iy};
        if (rowRuns)
          at.push_back(
              arith::MulIOp::create(b, loc, ix, arith::ConstantIndexOp::create(b, loc, c)));
        else
          at.push_back(ix);
        row = forEachChannelChunk(
            b, loc, runLength, vectorChunk(et), row,
            [&](OpBuilder &nb, Value into, Value c0, int64_t width) -> Value {
              SmallVector<Value> from = at;
              if (rowRuns)
                from.back() = arith::AddIOp::create(nb, loc, from.back(), c0);
              else
                from.push_back(c0);
              Value v = vector::TransferReadOp::create(nb, loc, VectorType::get({width}, et),
                                                       source, from, zero, ArrayRef<bool>{true});
              Value at = arith::AddIOp::create(nb, loc, base, c0);
              return vector::TransferWriteOp::create(
                         nb, loc, v, into,
                         ValueRange{arith::ConstantIndexOp::create(nb, loc, 0), at},
                         ArrayRef<bool>{true})
                  .getResult();
            });
      }
    return row;
  };
  return buildPixelRows(b, loc, n, oh, ow, cols, et, strides, dilations, fill);
}

/// A depthwise convolution of the padded NHWC `input` (f32, one filter per
/// channel) as [N, OH, OW, C]: per output pixel and vector of channels, the
/// bias (or zero) plus an FMA per tap of the input's channels by the
/// filter's, the filter as `taps` [KH*KW, C].
Value depthwiseChannelsLast(OpBuilder &b, Location loc, Value input, Value taps, Value bias,
                            RankedTensorType type, ArrayRef<int64_t> kernel,
                            ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  Type et = type.getElementType();
  ArrayRef<int64_t> out = type.getShape();
  int64_t c = out[3];
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));
  auto fill = [&](Value row, const PixelWindow &window) {
    return forEachChannelChunk(
        b, loc, c, vectorChunk(et), row,
        [&](OpBuilder &nb, Value into, Value c0, int64_t width) -> Value {
          auto vt = VectorType::get({width}, et);
          auto read = [&](Value from, ValueRange at) -> Value {
            return vector::TransferReadOp::create(nb, loc, vt, from, at, zero,
                                                  ArrayRef<bool>{true});
          };
          Value acc = bias ? read(bias, ValueRange{c0})
                           : (Value)arith::ConstantOp::create(nb, loc, vt, nb.getZeroAttr(vt));
          for (int64_t ky = 0; ky < kernel[0]; ++ky)
            for (int64_t kx = 0; kx < kernel[1]; ++kx) {
              Value iy = window.inputCoordinate(nb, loc, 0, ky);
              Value ix = window.inputCoordinate(nb, loc, 1, kx);
              Value tap = arith::ConstantIndexOp::create(nb, loc, ky * kernel[1] + kx);
              acc = vector::FMAOp::create(nb, loc, read(input, ValueRange{window.image, iy, ix, c0}),
                                          read(taps, ValueRange{tap, c0}), acc);
            }
          return vector::TransferWriteOp::create(
                     nb, loc, acc, into, ValueRange{arith::ConstantIndexOp::create(nb, loc, 0), c0},
                     ArrayRef<bool>{true})
              .getResult();
        });
  };
  Value rows = buildPixelRows(b, loc, out[0], out[1], out[2], c, et, strides, dilations, fill);
  return reshapeTo(b, loc, rows, type);
}

/// A convolution of static shape as a matmul with the receptive fields as
/// rows: fields = im2col^T [N*OH*OW, K] and filterT = filter^T [K, F]. A
/// constant filter is relaid out at compile time and is then the matmul's
/// right operand, which the matmul kernels pack at compile time. On NCHW
/// input, K runs over (c, ky, kx); with `channels_last` (NHWC input) over
/// (ky, kx, c), so that each field is a few runs of C contiguous values.
struct FieldsTimesFilter {
  Value fields, filterT;
  int64_t n, oh, ow, f;
};

FieldsTimesFilter fieldsTimesFilter(OpBuilder &b, Location loc, ConvOp op, Value input,
                                    Value filter, RankedTensorType type) {
  MLIRContext *ctx = b.getContext();
  bool channelsLast = op.getChannelsLast();
  ArrayRef<int64_t> fs = tensorType(filter).getShape(), out = type.getShape();
  Type inType = tensorType(input).getElementType(), filterType = tensorType(filter).getElementType();
  int64_t n = out[0], f = channelsLast ? out[3] : out[1], oh = channelsLast ? out[1] : out[2],
          ow = channelsLast ? out[2] : out[3];
  int64_t c = fs[1], kh = fs[2], kw = fs[3];
  int64_t rows = n * oh * ow, cols = c * kh * kw;
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  Value fields;
  if (channelsLast) {
    fields = unfoldChannelsLast(b, loc, input, {kh, kw}, strides, dilations, oh, ow);
  } else {
    // Unfolded as [N, OH, OW, C, KH, KW].
    AffineExpr in, oy, ox, ch, ky, kx;
    bindDims(ctx, in, oy, ox, ch, ky, kx);
    AffineMap inputMap = AffineMap::get(
        6, 0, {in, ch, oy * strides[0] + ky * dilations[0], ox * strides[1] + kx * dilations[1]},
        ctx);
    SmallVector<int64_t> unfoldedShape = {n, oh, ow, c, kh, kw};
    auto unfold = linalg::GenericOp::create(
        b, loc, RankedTensorType::get(unfoldedShape, inType), input,
        emptyTensor(b, loc, unfoldedShape, inType),
        ArrayRef<AffineMap>{inputMap, AffineMap::getMultiDimIdentityMap(6, ctx)},
        SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
        [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
    fields = reshapeTo(b, loc, unfold.getResult(0), RankedTensorType::get({rows, cols}, inType));
  }
  // filter^T [K, F]: row k of the FCHW filter's column f.
  auto filterIndex = [&](int64_t k) {
    if (!channelsLast)
      return k;
    int64_t ch = k % c, tap = k / c;
    return (ch * kh + tap / kw) * kw + tap % kw;
  };
  auto filterTType = RankedTensorType::get({cols, f}, filterType);
  Value filterT;
  if (ElementsAttr constant = constantValue(op.getFilter()))
    filterT = relayoutConstant(b, loc, constant, filterTType,
                               [&](int64_t i) { return (i % f) * cols + filterIndex(i / f); });
  if (!filterT) {
    // [F, C, KH, KW] -> [C, KH, KW, F] or [KH, KW, C, F], then [K, F].
    SmallVector<int64_t> perm = channelsLast ? SmallVector<int64_t>{2, 3, 1, 0}
                                             : SmallVector<int64_t>{1, 2, 3, 0};
    SmallVector<int64_t> permuted = {fs[perm[0]], fs[perm[1]], fs[perm[2]], fs[perm[3]]};
    Value t = linalg::TransposeOp::create(b, loc, filter, emptyTensor(b, loc, permuted, filterType),
                                          perm)
                  .getResult()[0];
    filterT = reshapeTo(b, loc, t, filterTType);
  }
  return {fields, filterT, n, oh, ow, f};
}

/// A widening convolution (8-bit input and filter with an i32 result, or
/// bf16 with f32) of static shape as one widening matmul of
/// fieldsTimesFilter; kiln-cpu-vnni-matmul packs the constant filter at compile
/// time. The product is [N, OH, OW, F].
///
/// On NCHW input the product is permuted back to NCHW by a copy that reads
/// it in order and writes each pixel's channels to their planes. That copy
/// stays unfused (`kiln.layout_copy`): fused into its consumer it would read
/// the product with a gather per element, at a stride of F. With
/// `channels_last` the product is the result as it is.
Value wideningAsMatmul(OpBuilder &b, Location loc, ConvOp op, Value input, Value filter,
                       RankedTensorType type, Extension ext) {
  MLIRContext *ctx = b.getContext();
  FieldsTimesFilter m = fieldsTimesFilter(b, loc, op, input, filter, type);
  Type sumType = type.getElementType();
  Value product =
      wideningMatmul(b, loc, m.fields, m.filterT,
                     zeroFilled(b, loc, ArrayRef<int64_t>{m.n * m.oh * m.ow, m.f}, sumType), ext);
  Value nhwf = reshapeTo(b, loc, product, RankedTensorType::get({m.n, m.oh, m.ow, m.f}, sumType));
  if (op.getChannelsLast())
    return nhwf;
  AffineExpr e0, e1, e2, e3;
  bindDims(ctx, e0, e1, e2, e3);
  auto toNchw = linalg::GenericOp::create(
      b, loc, type, nhwf, emptyTensor(b, loc, type.getShape(), sumType),
      ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(4, ctx),
                          AffineMap::get(4, 0, {e0, e3, e1, e2}, ctx)},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) { linalg::YieldOp::create(nb, l, args[0]); });
  toNchw->setAttr("kiln.layout_copy", b.getUnitAttr());
  return toNchw.getResult(0);
}

/// A channels-last convolution of static shape (f32, no group) as the
/// matmul of fieldsTimesFilter, accumulating into the bias broadcast over
/// the pixels (or zeros): [N*OH*OW, F], which is the NHWC result.
Value channelsLastAsMatmul(OpBuilder &b, Location loc, ConvOp op, Value input,
                           Value filter, Value bias, RankedTensorType type) {
  FieldsTimesFilter m = fieldsTimesFilter(b, loc, op, input, filter, type);
  Type et = type.getElementType();
  SmallVector<int64_t> flat = {m.n * m.oh * m.ow, m.f};
  Value init = bias ? broadcastTo(b, loc, reshapeTo(b, loc, bias, RankedTensorType::get({1, m.f}, et)),
                                  flat)
                    : zeroFilled(b, loc, flat, et);
  Value product = linalg::MatmulOp::create(b, loc, TypeRange{init.getType()},
                                           ValueRange{m.fields, m.filterT}, init)
                      .getResult(0);
  return reshapeTo(b, loc, product, type);
}

/// `v` with signless elements (a ui8 input as i8), as the linalg ops take it.
Value signless(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = signlessType(v.getType());
  return v.getType() == type ? v : (Value)BitcastOp::create(b, loc, type, v);
}

/// Rewrites `op` as a matmul where this file has a strategy for it.
LogicalResult rewriteAsMatmul(ConvOp op) {
  auto type = signlessType(op.getType());
  auto inType = tensorType(op.getInput());
  bool staticShapes = type.hasStaticShape() && inType.hasStaticShape();
  bool widening = signlessType(inType).getElementType() != type.getElementType();
  // Widening: one group and no bias, as kiln-fuse-qdq and kiln-convert-to-half make them.
  if (widening && (op.getGroup() != 1 || op.getBias()))
    return failure();
  bool nchwMatmul =
      op.getGroup() == 1 && (!type.hasStaticShape() || type.getDimSize(0) == 1);
  if ((widening || op.getChannelsLast()) ? !staticShapes : !nchwMatmul)
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value input = padSpatial(b, loc, signless(b, loc, op.getInput()), op.getPads(), 0.0,
                           op.getChannelsLast());
  Value filter = signless(b, loc, op.getFilter());
  Value bias = op.getBias();
  ArrayRef<int64_t> fs = tensorType(filter).getShape();
  Value result;
  if (widening) {
    Extension ext{isUnsigned(op.getInput()), isUnsigned(op.getFilter())};
    result = wideningAsMatmul(b, loc, op, input, filter, type, ext);
  } else if (op.getChannelsLast() && op.getGroup() == 1) {
    result = channelsLastAsMatmul(b, loc, op, input, filter, bias, type);
  } else if (op.getChannelsLast()) {
    result = depthwiseChannelsLast(b, loc, input,
                                   depthwiseTaps(b, loc, filter, constantValue(op.getFilter())),
                                   bias,
                                   type, {fs[2], fs[3]}, op.getStrides(), op.getDilations());
  } else {
    SmallVector<OpFoldResult> outSizes = windowOutputSizes(
        b, loc, input, fs[0], {fs[2], fs[3]}, op.getStrides(), op.getDilations());
    Value init = convolutionInit(b, loc, bias, type, outSizes);
    result = type.hasStaticShape()
                 ? convolveAsMatmul(b, loc, op, input, filter, init, outSizes)
                 : convolveImages(b, loc, op, input, filter, init, outSizes);
  }
  if (result.getType() != op.getType())
    result = BitcastOp::create(b, loc, op.getType(), result);
  op.getResult().replaceAllUsesWith(result);
  op.erase();
  return success();
}

struct KilnCpuConvAsMatmulPass
    : mlir::kiln::impl::KilnCpuConvAsMatmulBase<KilnCpuConvAsMatmulPass> {
  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp op) { convs.push_back(op); });
    for (ConvOp op : convs)
      (void)rewriteAsMatmul(op);
  }
};

} // namespace
