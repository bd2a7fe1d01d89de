//===- ImportNN.cpp - ONNX linear algebra, conv, pooling, normalization ---===//
#include "frontend/onnx/ImportContext.h"
#include "frontend/onnx/ShapeOperands.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

static RankedTensorType withShape(RankedTensorType t, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, t.getElementType());
}

/// Spatial window attributes shared by Conv and the pools, resolved to
/// explicit [top, left, bottom, right] pads.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::vector<int64_t> outSize;
};

/// A window attribute of a 1-D op read as the 2-D one over [1, W]: sizes gain
/// a leading `neutral`, pads [b, e] become [0, b, 0, e].
static std::vector<int64_t> liftedAttr(ImportContext &ctx, llvm::StringRef name,
                                       std::vector<int64_t> fallback2d, int64_t neutral,
                                       bool lifted) {
  if (!lifted || !ctx.hasAttr(name))
    return ctx.attrInts(name, fallback2d);
  std::vector<int64_t> v = ctx.attrInts(name);
  if (name == "pads")
    return v.size() == 2 ? std::vector<int64_t>{0, v[0], 0, v[1]} : v;
  return v.size() == 1 ? std::vector<int64_t>{neutral, v[0]} : v;
}

/// 1-D convolutions and pools run as 2-D ones over a [N, C, 1, W] view.
static bool isLifted1d(RankedTensorType input) { return input.getRank() == 3; }

static Value liftTo2d(ImportContext &ctx, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + 2, 1);
  return k::ReshapeOp::create(ctx.b, ctx.loc, withShape(t, shape), v,
                              ctx.b.getDenseI64ArrayAttr({0, 1, -1, 2}));
}

static Value dropLift(ImportContext &ctx, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + 2);
  return k::ReshapeOp::create(ctx.b, ctx.loc, withShape(t, shape), v,
                              ctx.b.getDenseI64ArrayAttr({0, 1, 3}));
}

/// Resolves auto_pad and ceil_mode into explicit pads and output sizes for
/// any number of spatial dimensions (pads: all begins, then all ends).
static FailureOr<Window> windowFrom(ImportContext &ctx, ArrayRef<int64_t> inSpatial,
                                    std::vector<int64_t> kernel, std::vector<int64_t> strides,
                                    std::vector<int64_t> dilations, std::vector<int64_t> pads,
                                    bool ceilMode) {
  size_t n = inSpatial.size();
  Window w{std::move(kernel), std::move(strides), std::move(dilations), std::move(pads), {}};
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n ||
      w.pads.size() != 2 * n)
    return ctx.fail("kernel_shape, strides, dilations and pads do not match the " + llvm::Twine(n) +
                    " spatial dimensions");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  for (size_t i = 0; i < n; ++i) {
    int64_t in = inSpatial[i], s = w.strides[i];
    int64_t eff = w.dilations[i] * (w.kernel[i] - 1) + 1;
    if (ShapedType::isDynamic(in)) {
      // Explicit pads only: SAME padding and ceil_mode depend on the size.
      if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || ceilMode)
        return ctx.fail("spatial dimension " + llvm::Twine(i) + " is dynamic, which " +
                        (ceilMode ? "ceil_mode" : "auto_pad " + autoPad) +
                        " does not support yet; pin it with --input-shape");
      if (autoPad == "VALID")
        w.pads[i] = w.pads[i + n] = 0;
      w.outSize.push_back(ShapedType::kDynamic);
      continue;
    }
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
    } else if (autoPad == "VALID") {
      w.pads[i] = w.pads[i + n] = 0;
    } else if (autoPad != "NOTSET") {
      return ctx.fail("unknown auto_pad '" + autoPad + "'");
    }
    int64_t span = in + w.pads[i] + w.pads[i + n] - eff;
    if (span < 0)
      return ctx.fail("the window is larger than the padded input");
    int64_t out = span / s + 1;
    if (ceilMode && span % s != 0) {
      // ceil_mode: one more output; make it explicit as end padding, but
      // never start a window entirely in the padding.
      if (out * s < in + w.pads[i]) {
        ++out;
        w.pads[i + n] += (out - 1) * s + eff - (in + w.pads[i] + w.pads[i + n]);
      }
    }
    w.outSize.push_back(out);
  }
  return w;
}

static FailureOr<Window> resolveWindow(ImportContext &ctx, ArrayRef<int64_t> inSpatial,
                                       std::vector<int64_t> kernel, bool ceilMode,
                                       bool lifted = false) {
  if (inSpatial.size() != 2)
    return ctx.fail("only 1-D and 2-D windows (rank-3 and rank-4 inputs) are supported");
  return windowFrom(ctx, inSpatial, std::move(kernel),
                    liftedAttr(ctx, "strides", {1, 1}, 1, lifted),
                    liftedAttr(ctx, "dilations", {1, 1}, 1, lifted),
                    liftedAttr(ctx, "pads", {0, 0, 0, 0}, 0, lifted), ceilMode);
}

/// A convolution of the current node's attributes on x, w (and bias), for
/// Conv and the integer/quantized convolutions.
static LogicalResult checkWeights(ImportContext &ctx, Value x, Value w);

static FailureOr<Value> emitConv(ImportContext &ctx, Value x, Value w, Value bias) {
  if (failed(checkWeights(ctx, x, w)))
    return failure();
  bool lifted = isLifted1d(cast<RankedTensorType>(x.getType()));
  if (lifted) {
    x = liftTo2d(ctx, x);
    w = liftTo2d(ctx, w);
  }
  auto xt = cast<RankedTensorType>(x.getType()), ft = cast<RankedTensorType>(w.getType());
  if (xt.getRank() != 4 || ft.getRank() != 4)
    return ctx.fail(llvm::Twine(xt.getRank() - 2) + "-D convolution (input of rank " +
                    llvm::Twine(xt.getRank()) + ") is not supported (only 1-D and 2-D)");
  auto window = resolveWindow(
      ctx, xt.getShape().drop_front(2),
      liftedAttr(ctx, "kernel_shape", {ft.getDimSize(2), ft.getDimSize(3)}, 1, lifted), false,
      lifted);
  if (failed(window))
    return failure();
  auto type =
      withShape(xt, {xt.getDimSize(0), ft.getDimSize(0), window->outSize[0], window->outSize[1]});
  Value r = k::ConvOp::create(ctx.b, ctx.loc, type, x, w, bias, window->strides, window->dilations,
                              window->pads, ctx.attrInt("group", 1));
  return lifted ? dropLift(ctx, r) : r;
}

/// 3-D convolution as a sum of 2-D ones: output depth plane od is the sum
/// over kd of conv2d(input plane od*stride + kd*dilation, kernel plane kd).
/// The number of 2-D convolutions is D_out * KD: fine for small depths.
static FailureOr<Value> conv3dFromPlanes(ImportContext &ctx, Value x, Value w, Value bias,
                                         ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                                         ArrayRef<int64_t> pads, int64_t group) {
  auto xt = cast<RankedTensorType>(x.getType()), ft = cast<RankedTensorType>(w.getType());
  Emitter e{ctx};
  Type et = xt.getElementType();
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), d = xt.getDimSize(2), h = xt.getDimSize(3),
          wd = xt.getDimSize(4);
  int64_t f = ft.getDimSize(0), cg = ft.getDimSize(1), kd = ft.getDimSize(2), kh = ft.getDimSize(3),
          kw = ft.getDimSize(4);
  int64_t dPad = d + pads[0] + pads[3];
  int64_t dOut = (dPad - dilations[0] * (kd - 1) - 1) / strides[0] + 1;
  if (dOut < 1)
    return ctx.fail("the kernel is deeper than the padded input");
  Value padded = x;
  if (pads[0] || pads[3]) {
    SmallVector<int64_t> p(10, 0);
    p[2] = pads[0];
    p[7] = pads[3];
    padded = k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, c, dPad, h, wd}, et), x,
                              ctx.b.getDenseI64ArrayAttr(p), ctx.b.getStringAttr("constant"),
                              ctx.b.getF64FloatAttr(0.0));
  }
  auto plane = [&](Value v, int64_t at, int64_t dim1, int64_t dimH, int64_t dimW,
                   int64_t dim0) -> Value {
    Value s =
        k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({dim0, dim1, 1, dimH, dimW}, et),
                           v, ArrayRef<int64_t>{0, 0, at, 0, 0}, ArrayRef<int64_t>{1, 1, 1, 1, 1});
    return e.reshape(s, {dim0, dim1, dimH, dimW});
  };
  SmallVector<int64_t> s2 = {strides[1], strides[2]}, d2 = {dilations[1], dilations[2]},
                       p2 = {pads[1], pads[2], pads[4], pads[5]};
  int64_t oh = (h + p2[0] + p2[2] - d2[0] * (kh - 1) - 1) / s2[0] + 1;
  int64_t ow = (wd + p2[1] + p2[3] - d2[1] * (kw - 1) - 1) / s2[1] + 1;
  auto planeType = RankedTensorType::get({n, f, oh, ow}, et);
  SmallVector<Value> planes;
  for (int64_t od = 0; od < dOut; ++od) {
    Value acc;
    for (int64_t z = 0; z < kd; ++z) {
      Value conv = k::ConvOp::create(ctx.b, ctx.loc, planeType,
                                     plane(padded, od * strides[0] + z * dilations[0], c, h, wd, n),
                                     plane(w, z, cg, kh, kw, f), (z == 0 ? bias : Value()), s2, d2,
                                     p2, group);
      if (acc) {
        auto sum = e.binary<k::AddOp>(acc, conv);
        if (failed(sum))
          return failure();
        acc = *sum;
      } else {
        acc = conv;
      }
    }
    planes.push_back(e.reshape(acc, {n, f, 1, oh, ow}));
  }
  if (planes.size() == 1)
    return planes[0];
  return k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, f, dOut, oh, ow}, et),
                             planes, 2)
      .getResult();
}

/// The node's 3-D Conv (explicit or VALID padding).
static FailureOr<Value> emitConv3d(ImportContext &ctx, Value x, Value w, Value bias) {
  std::vector<int64_t> strides = ctx.attrInts("strides", {1, 1, 1});
  std::vector<int64_t> dilations = ctx.attrInts("dilations", {1, 1, 1});
  std::vector<int64_t> pads = ctx.attrInts("pads", {0, 0, 0, 0, 0, 0});
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return ctx.fail("3-D convolution with auto_pad '" + autoPad + "' is not supported");
  if (strides.size() != 3 || dilations.size() != 3 || pads.size() != 6)
    return ctx.fail("3-D convolution needs 3 strides, 3 dilations and 6 pads");
  return conv3dFromPlanes(ctx, x, w, bias, strides, dilations, pads, ctx.attrInt("group", 1));
}

static LogicalResult importConv(ImportContext &ctx) {
  auto x = ctx.input(0), wt = ctx.input(1);
  if (failed(x) || failed(wt))
    return failure();
  auto r = cast<RankedTensorType>(x->getType()).getRank() == 5
               ? emitConv3d(ctx, *x, *wt, ctx.optionalInput(2))
               : emitConv(ctx, *x, *wt, ctx.optionalInput(2));
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

static FailureOr<Value> emitMatMul(ImportContext &ctx, Value a, Value b);

/// x - zero_point in i32 (zero_point may be absent, scalar or per channel
/// along `axis`).
static FailureOr<Value> centeredI32(ImportContext &ctx, Value x, Value zeroPoint, int64_t axis) {
  Emitter e{ctx};
  Type i32 = ctx.b.getI32Type();
  Value v = e.castTo(x, i32);
  if (!zeroPoint)
    return v;
  Value zp = e.castTo(zeroPoint, i32);
  auto zt = cast<RankedTensorType>(zp.getType());
  if (zt.getRank() == 1 && zt.getDimSize(0) > 1) {
    SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getRank(), 1);
    shape[axis] = zt.getDimSize(0);
    zp = e.reshape(zp, shape);
  }
  return e.binary<k::SubOp>(v, zp);
}

/// Whether input `i` (a zero point) is omitted or a constant zero.
static bool zeroPointIsZero(ImportContext &ctx, size_t i) {
  if (!ctx.hasInput(i))
    return true;
  const HostTensor *t = ctx.hostInput(i);
  return t && llvm::all_of(t->ints, [](int64_t v) { return v == 0; });
}

/// sum_k (A - za) * B in i32 for 8-bit A [..., M, K] and signed 8-bit B
/// [K, N] whose zero point is zero, with A's zero point per tensor: the
/// widening kiln.matmul of the raw bytes (which kiln-cpu-vnni-matmul compiles to
/// vpdpbusd) minus za * colsum(B). A null value when the operands do not
/// have that form; `bIndex` and the zero points' indices are input indices.
static FailureOr<Value> widenedProduct(ImportContext &ctx, Value a, Value b, size_t aZero,
                                       size_t bIndex, size_t bZero) {
  auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
  if (!at.getElementType().isInteger(8) || !bt.getElementType().isSignlessInteger(8) ||
      at.getRank() < 2 || bt.getRank() != 2 || !zeroPointIsZero(ctx, bZero))
    return Value();
  Value za = ctx.optionalInput(aZero);
  if (za && cast<RankedTensorType>(za.getType()).getNumElements() != 1)
    return Value();
  Type i32 = ctx.b.getI32Type();
  SmallVector<int64_t> shape(at.getShape());
  shape.back() = bt.getDimSize(1);
  Value product =
      k::MatMulOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, i32), a, b).getResult();
  if (zeroPointIsZero(ctx, aZero))
    return product;
  Emitter e{ctx};
  Value sums;
  if (const HostTensor *weights = ctx.hostInput(bIndex)) {
    int64_t k = bt.getDimSize(0), n = bt.getDimSize(1);
    HostTensor t{onnx::TensorProto::INT32, {n}, {}, std::vector<int64_t>(n, 0)};
    for (int64_t row = 0; row < k; ++row)
      for (int64_t col = 0; col < n; ++col)
        t.ints[col] += weights->ints[row * n + col];
    auto materialized = ctx.materialize(t, "column_sums");
    if (failed(materialized))
      return failure();
    sums = *materialized;
  } else {
    sums = k::ReduceOp::create(ctx.b, ctx.loc, RankedTensorType::get({bt.getDimSize(1)}, i32),
                               e.castTo(b, i32), "sum", ArrayRef<int64_t>{0}, false);
  }
  auto offset = e.binary<k::MulOp>(e.reshape(e.castTo(za, i32), {}), sums);
  if (failed(offset))
    return failure();
  return e.binary<k::SubOp>(product, *offset);
}

/// sum (X - xz) * W in i32 for 8-bit X [N, C, H, W] and a constant signed
/// 8-bit filter whose zero point is zero, with X's zero point per tensor
/// (constant or computed): the widening kiln.conv of the raw bytes, zero
/// padded (kiln-cpu-vnni-matmul's kernels), minus xz * V, where V[f][oy][ox]
/// sums the filter taps that fall inside the image at that output (ONNX
/// pads X with its zero point, so padded taps contribute nothing): a
/// compile-time constant. A null value when the operands do not have that
/// form; the indices are input indices.
static FailureOr<Value> widenedConv(ImportContext &ctx, Value x, Value w, size_t xZero,
                                    size_t wIndex, size_t wZero) {
  auto xt = cast<RankedTensorType>(x.getType()), wt = cast<RankedTensorType>(w.getType());
  const HostTensor *filter = ctx.hostInput(wIndex);
  if (!xt.getElementType().isInteger(8) || !wt.getElementType().isSignlessInteger(8) ||
      xt.getRank() != 4 || wt.getRank() != 4 || !xt.hasStaticShape() || !filter ||
      ctx.attrInt("group", 1) != 1 || !zeroPointIsZero(ctx, wZero))
    return Value();
  Value xz = ctx.optionalInput(xZero);
  if (xz && cast<RankedTensorType>(xz.getType()).getNumElements() != 1)
    return Value();
  int64_t f = wt.getDimSize(0), c = wt.getDimSize(1), kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  auto window = resolveWindow(ctx, xt.getShape().drop_front(2),
                              ctx.attrInts("kernel_shape", {kh, kw}), false);
  if (failed(window))
    return failure();
  int64_t oh = window->outSize[0], ow = window->outSize[1];
  Type i32 = ctx.b.getI32Type();
  Value sums =
      k::ConvOp::create(ctx.b, ctx.loc, RankedTensorType::get({xt.getDimSize(0), f, oh, ow}, i32),
                        x, w, Value(), window->strides, window->dilations, window->pads, 1);
  if (zeroPointIsZero(ctx, xZero))
    return sums;
  // Per filter and tap, the sum over channels; then per output, over the
  // taps inside the image.
  std::vector<int64_t> tapSums(f * kh * kw, 0);
  for (int64_t i = 0; i < f * c * kh * kw; ++i)
    tapSums[(i / (c * kh * kw)) * kh * kw + i % (kh * kw)] += filter->ints[i];
  HostTensor inside{
      onnx::TensorProto::INT32, {1, f, oh, ow}, {}, std::vector<int64_t>(f * oh * ow, 0)};
  const std::vector<int64_t> &s = window->strides, &d = window->dilations, &p = window->pads;
  for (int64_t fi = 0; fi < f; ++fi)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t iy = oy * s[0] + ky * d[0] - p[0], ix = ox * s[1] + kx * d[1] - p[1];
            if (iy >= 0 && iy < xt.getDimSize(2) && ix >= 0 && ix < xt.getDimSize(3))
              inside.ints[(fi * oh + oy) * ow + ox] += tapSums[(fi * kh + ky) * kw + kx];
          }
  auto insideSums = ctx.materialize(inside, "filter_inside_sums");
  if (failed(insideSums))
    return failure();
  Emitter e{ctx};
  auto offset = e.binary<k::MulOp>(e.reshape(e.castTo(xz, i32), {}), *insideSums);
  if (failed(offset))
    return failure();
  return e.binary<k::SubOp>(sums, *offset);
}

/// ConvInteger / MatMulInteger: int32 results of zero-point-centered inputs.
template <bool conv> static LogicalResult importInteger(ImportContext &ctx) {
  auto a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  auto widened = conv ? widenedConv(ctx, *a, *b, 2, 1, 3) : widenedProduct(ctx, *a, *b, 2, 1, 3);
  if (failed(widened))
    return failure();
  if (*widened) {
    ctx.setOutput(0, *widened);
    return success();
  }
  auto ac = centeredI32(ctx, *a, ctx.optionalInput(2), conv ? 1 : 0);
  auto bc = centeredI32(ctx, *b, ctx.optionalInput(3), conv ? 0 : 1);
  if (failed(ac) || failed(bc))
    return failure();
  FailureOr<Value> r;
  if constexpr (conv) {
    r = emitConv(ctx, *ac, *bc, nullptr);
  } else {
    r = emitMatMul(ctx, *ac, *bc);
  }
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// QLinearConv / QLinearMatMul: the integer product, rescaled by
/// a_scale * b_scale / y_scale and requantized around y_zero_point.
template <bool conv> static LogicalResult importQLinear(ImportContext &ctx) {
  auto a = ctx.input(0), aScale = ctx.input(1), b = ctx.input(3), bScale = ctx.input(4),
       yScale = ctx.input(6);
  if (failed(a) || failed(aScale) || failed(b) || failed(bScale) || failed(yScale))
    return failure();
  FailureOr<Value> acc =
      conv ? widenedConv(ctx, *a, *b, 2, 3, 5) : widenedProduct(ctx, *a, *b, 2, 3, 5);
  if (failed(acc))
    return failure();
  if (*acc && conv && ctx.hasInput(8)) {
    // The int32 bias, per output channel.
    Emitter e{ctx};
    Value bias = ctx.optionalInput(8);
    auto biased = e.binary<k::AddOp>(
        *acc, e.reshape(bias, {1, cast<RankedTensorType>(bias.getType()).getDimSize(0), 1, 1}));
    if (failed(biased))
      return failure();
    acc = *biased;
  }
  if (!*acc) {
    auto ac = centeredI32(ctx, *a, ctx.optionalInput(2), 1);
    auto bc = centeredI32(ctx, *b, ctx.optionalInput(5), conv ? 0 : 1);
    if (failed(ac) || failed(bc))
      return failure();
    Value bias = conv ? ctx.optionalInput(8) : nullptr;
    acc = conv ? emitConv(ctx, *ac, *bc, bias) : emitMatMul(ctx, *ac, *bc);
    if (failed(acc))
      return failure();
  }
  Emitter e{ctx};
  Type f32 = ctx.b.getF32Type();
  Value sum = e.castTo(*acc, f32);
  // Per-channel b scales multiply along the output channel / column axis.
  Value bs = *bScale;
  auto bst = cast<RankedTensorType>(bs.getType());
  if (bst.getRank() == 1 && bst.getDimSize(0) > 1 && conv) {
    SmallVector<int64_t> shape(cast<RankedTensorType>(sum.getType()).getRank(), 1);
    shape[1] = bst.getDimSize(0);
    bs = e.reshape(bs, shape);
  }
  auto scale = e.binary<k::MulOp>(*aScale, bs);
  if (failed(scale))
    return failure();
  auto ratio = e.binary<k::DivOp>(*scale, *yScale);
  if (failed(ratio))
    return failure();
  auto scaled = e.binary<k::MulOp>(sum, *ratio);
  if (failed(scaled))
    return failure();
  Value yzp = ctx.optionalInput(7);
  Type qt = yzp ? getElementTypeOrSelf(yzp.getType()) : ctx.b.getIntegerType(8, false);
  auto q = requantize(e, *scaled, yzp, qt);
  if (failed(q))
    return failure();
  ctx.setOutput(0, *q);
  return success();
}

/// ConvTranspose as a stride-1 convolution: zero-insert the input by the
/// stride, pad it by dilation*(k-1) minus the pads (cropping if negative),
/// and convolve with the kernel flipped spatially and transposed per group.
/// ConvTranspose's input with zeros inserted and its border added, for an
/// input with dynamic dimensions: [N,C,H,W] -> [N,C,H,1,W,1] -> pad to
/// [N,C,H,s,W,s] -> [N,C,H*s,W*s] (sizes computed at run time) -> pad by
/// dilation*(k-1) - pad on each side, less the s-1 trailing zeros at the end,
/// plus output_padding. Borders that would crop are not supported.
static FailureOr<Value> dynamicZeroInsertion(ImportContext &ctx, Value x, int64_t sh, int64_t sw,
                                             ArrayRef<int64_t> pads, ArrayRef<int64_t> outPad,
                                             ArrayRef<int64_t> kernel,
                                             ArrayRef<int64_t> dilations) {
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  ArrayRef<int64_t> s = xt.getShape();
  auto mul = [](int64_t a, int64_t b) { return ShapedType::isDynamic(a) ? a : a * b; };
  SmallVector<int64_t> border(4);
  int64_t stride[2] = {sh, sw};
  for (int i = 0; i < 2; ++i) {
    int64_t full = dilations[i] * (kernel[i] - 1);
    border[i] = full - pads[i];
    border[i + 2] = full - pads[i + 2] + outPad[i] - (stride[i] - 1);
    if (border[i] < 0 || border[i + 2] < 0)
      return ctx.fail("ConvTranspose of dynamic sizes whose padding crops the output is not "
                      "supported; pin the model's input shapes with --input-shape");
  }
  Value up = x;
  if (sh > 1 || sw > 1) {
    auto lifted = RankedTensorType::get({s[0], s[1], s[2], 1, s[3], 1}, et);
    up = k::ReshapeOp::create(ctx.b, ctx.loc, lifted, up,
                              ctx.b.getDenseI64ArrayAttr({0, 1, 2, -1, 3, -1}));
    SmallVector<int64_t> p6(12, 0);
    p6[6 + 3] = sh - 1;
    p6[6 + 5] = sw - 1;
    auto spaced = RankedTensorType::get({s[0], s[1], s[2], sh, s[3], sw}, et);
    up = k::PadOp::create(ctx.b, ctx.loc, spaced, up, ctx.b.getDenseI64ArrayAttr(p6),
                          ctx.b.getStringAttr("constant"), ctx.b.getF64FloatAttr(0.0));
    // [N, C, H*sh, W*sw] from the run-time shape of the padded view.
    Emitter e{ctx};
    auto i64 = ctx.b.getI64Type();
    Value shape6 = k::ShapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({6}, i64), up);
    Value picks = int64Constant(ctx, {0, 1, 2, 4}, {4});
    Value shape4 =
        k::GatherOp::create(ctx.b, ctx.loc, RankedTensorType::get({4}, i64), shape6, picks, 0);
    Value factors = int64Constant(ctx, {1, 1, sh, sw}, {4});
    shape4 = *e.binary<k::MulOp>(shape4, factors);
    SmallVector<int64_t> kept = {0, 1, -2, -2};
    SmallVector<int64_t> flat = {s[0], s[1], mul(s[2], sh), mul(s[3], sw)};
    for (int i = 2; i < 4; ++i)
      if (!ShapedType::isDynamic(flat[i]))
        kept[i] = -1;
    up = k::ReshapeOp::create(ctx.b, ctx.loc, RankedTensorType::get(flat, et), up, shape4,
                              ctx.b.getDenseI64ArrayAttr(kept));
  }
  if (llvm::any_of(border, [](int64_t p) { return p > 0; })) {
    auto ut = cast<RankedTensorType>(up.getType());
    SmallVector<int64_t> amounts = {0, 0, border[0], border[1], 0, 0, border[2], border[3]};
    SmallVector<int64_t> padded(ut.getShape());
    for (int i = 2; i < 4; ++i)
      if (!ShapedType::isDynamic(padded[i]))
        padded[i] += amounts[i] + amounts[i + 4];
    up = k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(padded, et), up,
                          ctx.b.getDenseI64ArrayAttr(amounts), ctx.b.getStringAttr("constant"),
                          ctx.b.getF64FloatAttr(0.0));
  }
  return up;
}

/// A ConvTranspose whose stride equals its kernel, without padding, dilation
/// or groups: each output pixel takes one tap of one input pixel, so it is a
/// 1x1 convolution to Cout*kh*kw channels (one per tap) and a depth-to-space.
/// The general lowering's zero-inserted input would be 3/4 zeros for a 2x2
/// stride-2 kernel, and its convolution 4x the work.
static Value convTransposeOfDisjointTaps(ImportContext &ctx, Value x, Value wt, Value bias) {
  Emitter e{ctx};
  auto xt = cast<RankedTensorType>(x.getType()), ft = cast<RankedTensorType>(wt.getType());
  Type et = xt.getElementType();
  int64_t n = xt.getDimSize(0), cin = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
  int64_t cout = ft.getDimSize(1), kh = ft.getDimSize(2), kw = ft.getDimSize(3);
  int64_t taps = cout * kh * kw;
  // Filter [Cin, Cout, kh, kw] -> [Cout*kh*kw, Cin, 1, 1]; bias per tap.
  Value filter = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get({taps, cin}, et),
                                        e.reshape(wt, {cin, taps}), ArrayRef<int64_t>{1, 0});
  filter = e.reshape(filter, {taps, cin, 1, 1});
  if (bias) {
    bias = k::ExpandOp::create(ctx.b, ctx.loc, RankedTensorType::get({cout, kh * kw}, et),
                               e.reshape(bias, {cout, 1}));
    bias = e.reshape(bias, {taps});
  }
  Value perTap = k::ConvOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, taps, h, w}, et), x,
                                   filter, bias, ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{1, 1},
                                   ArrayRef<int64_t>{0, 0, 0, 0}, 1);
  // [N, Cout, kh, kw, H, W] -> [N, Cout, H, kh, W, kw] -> [N, Cout, H*kh, W*kw].
  Value spread = k::TransposeOp::create(
      ctx.b, ctx.loc, RankedTensorType::get({n, cout, h, kh, w, kw}, et),
      e.reshape(perTap, {n, cout, kh, kw, h, w}), ArrayRef<int64_t>{0, 1, 4, 2, 5, 3});
  return e.reshape(spread, {n, cout, h * kh, w * kw});
}

/// Entries [begin, begin + count) of dimension `dim` of x.
static Value sliceDim(ImportContext &ctx, Value x, int64_t dim, int64_t begin, int64_t count) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape()), starts(t.getRank(), 0), steps(t.getRank(), 1);
  shape[dim] = count;
  starts[dim] = begin;
  if (begin == 0 && count == t.getDimSize(dim))
    return x;
  return k::SliceOp::create(ctx.b, ctx.loc, withShape(t, shape), x, starts, steps);
}

/// DeformConv (opset 19), 2-D: each kernel tap reads the input at its
/// regular position plus a learned (dy, dx) offset per output pixel, with
/// bilinear interpolation and zeros outside, optionally scaled by a mask.
/// Each (offset group, tap) is a kiln.grid_sample of the group's channels;
/// the gathered columns [N, C*taps, pixels] meet the weights in a matmul
/// per convolution group.
static LogicalResult importDeformConv(ImportContext &ctx) {
  auto x = ctx.input(0), w = ctx.input(1), offset = ctx.input(2);
  if (failed(x) || failed(w) || failed(offset))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType()), wt = cast<RankedTensorType>(w->getType());
  if (xt.getRank() != 4 || wt.getRank() != 4 || !xt.hasStaticShape() || !wt.hasStaticShape())
    return ctx.fail("DeformConv is supported in 2-D with static shapes, got " +
                    shapeText(xt.getShape()));
  auto window = resolveWindow(ctx, xt.getShape().drop_front(2),
                              ctx.attrInts("kernel_shape", {wt.getDimSize(2), wt.getDimSize(3)}),
                              false);
  if (failed(window))
    return failure();
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2), wd = xt.getDimSize(3);
  int64_t oc = wt.getDimSize(0), kh = window->kernel[0], kw = window->kernel[1], taps = kh * kw;
  int64_t oh = window->outSize[0], ow = window->outSize[1];
  auto pixelCount = constantElementCount({oh, ow}, ctx.loc, "the tap positions");
  if (failed(pixelCount))
    return failure();
  int64_t pixels = *pixelCount;
  int64_t groups = ctx.attrInt("group", 1), offsetGroups = ctx.attrInt("offset_group", 1);
  if (groups <= 0 || offsetGroups <= 0 || c % groups || oc % groups || c % offsetGroups ||
      wt.getDimSize(1) * groups != c)
    return ctx.fail("group " + llvm::Twine(groups) + " and offset_group " +
                    llvm::Twine(offsetGroups) + " must divide the channels");
  SmallVector<int64_t> offsetShape = {n, offsetGroups * taps * 2, oh, ow};
  if (cast<RankedTensorType>(offset->getType()).getShape() != ArrayRef<int64_t>(offsetShape))
    return ctx.fail("offset must have shape " + shapeText(offsetShape));
  Value mask = ctx.optionalInput(4);
  Emitter e{ctx};
  Type et = xt.getElementType();
  // Grid coordinates in GridSample's align_corners=0 convention: pixel p of
  // a size-s axis is (2p + 1) / s - 1.
  auto normalized = [&](Value pos, int64_t size) -> Value {
    Value twice = *e.binary<k::MulOp>(pos, e.constant(pos, 2.0 / double(size)));
    return *e.binary<k::AddOp>(twice, e.constant(pos, 1.0 / double(size) - 1.0));
  };
  auto plane = [&](Value v, int64_t channel) { // [N, 1, oh, ow] -> [N, oh, ow, 1]
    return e.reshape(sliceDim(ctx, v, 1, channel, 1), {n, oh, ow, 1});
  };
  int64_t perOffsetGroup = c / offsetGroups;
  SmallVector<Value> columns; // [N, C/offset_group, taps, pixels] per offset group
  for (int64_t g = 0; g < offsetGroups; ++g) {
    Value channels = sliceDim(ctx, *x, 1, g * perOffsetGroup, perOffsetGroup);
    SmallVector<Value> sampled;
    for (int64_t tap = 0; tap < taps; ++tap) {
      // The tap's regular position at every output pixel, as constants.
      HostTensor rows, cols;
      rows.dtype = cols.dtype = dtypeCodeOf(et);
      rows.shape = cols.shape = {1, oh, ow, 1};
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          rows.floats.push_back(y * window->strides[0] - window->pads[0] +
                                (tap / kw) * window->dilations[0]);
          cols.floats.push_back(xo * window->strides[1] - window->pads[1] +
                                (tap % kw) * window->dilations[1]);
        }
      auto baseY = ctx.materialize(rows, "deform_rows"), baseX = ctx.materialize(cols, "deform_cols");
      if (failed(baseY) || failed(baseX))
        return failure();
      int64_t channel = (g * taps + tap) * 2;
      auto y = e.binary<k::AddOp>(*baseY, plane(*offset, channel));
      auto xPos = e.binary<k::AddOp>(*baseX, plane(*offset, channel + 1));
      if (failed(y) || failed(xPos))
        return failure();
      Value grid = k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, oh, ow, 2}, et),
                                       ValueRange{normalized(*xPos, wd), normalized(*y, h)}, 3);
      Value s = k::GridSampleOp::create(
          ctx.b, ctx.loc, RankedTensorType::get({n, perOffsetGroup, oh, ow}, et), channels, grid,
          ctx.b.getStringAttr("bilinear"), ctx.b.getStringAttr("zeros"), ctx.b.getBoolAttr(false));
      if (mask) {
        auto masked = e.binary<k::MulOp>(s, sliceDim(ctx, mask, 1, g * taps + tap, 1));
        if (failed(masked))
          return failure();
        s = *masked;
      }
      sampled.push_back(e.reshape(s, {n, perOffsetGroup, 1, pixels}));
    }
    columns.push_back(k::ConcatOp::create(
        ctx.b, ctx.loc, RankedTensorType::get({n, perOffsetGroup, taps, pixels}, et), sampled, 2));
  }
  Value all = columns.size() == 1
                  ? columns[0]
                  : k::ConcatOp::create(ctx.b, ctx.loc,
                                        RankedTensorType::get({n, c, taps, pixels}, et), columns, 1)
                        .getResult();
  // Per convolution group: weights [OC/g, C/g * taps] x columns [N, C/g * taps, pixels].
  int64_t cg = c / groups, ocg = oc / groups;
  SmallVector<Value> outputs;
  for (int64_t g = 0; g < groups; ++g) {
    Value cols = e.reshape(sliceDim(ctx, all, 1, g * cg, cg), {n, cg * taps, pixels});
    Value weights = e.reshape(sliceDim(ctx, *w, 0, g * ocg, ocg), {ocg, cg * taps});
    outputs.push_back(k::MatMulOp::create(ctx.b, ctx.loc,
                                          RankedTensorType::get({n, ocg, pixels}, et), weights,
                                          cols));
  }
  Value y = outputs.size() == 1
                ? outputs[0]
                : k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, oc, pixels}, et),
                                      outputs, 1)
                      .getResult();
  if (Value bias = ctx.optionalInput(3)) {
    auto biased = e.binary<k::AddOp>(y, e.reshape(bias, {oc, 1}));
    if (failed(biased))
      return failure();
    y = *biased;
  }
  ctx.setOutput(0, e.reshape(y, {n, oc, oh, ow}));
  return success();
}

/// The weights of a convolution have the input's rank.
/// A convolution's input and weights: one rank of at least 3, and weights of
/// a static shape.
static LogicalResult checkWeights(ImportContext &ctx, Value x, Value w) {
  int64_t xr = cast<RankedTensorType>(x.getType()).getRank();
  auto wt = cast<RankedTensorType>(w.getType());
  if (xr != wt.getRank() || xr < 3)
    return ctx.fail("the input (rank " + llvm::Twine(xr) + ") and the weights (rank " +
                    llvm::Twine(wt.getRank()) + ") must have one rank of at least 3");
  if (!wt.hasStaticShape())
    return ctx.fail("the weights must have a static shape, got " + shapeText(wt.getShape()));
  return success();
}

/// ConvTranspose with static sizes and any number of spatial dimensions
/// (2-D disjoint taps and dynamic sizes are handled before): zero-insert
/// the input by the stride, add the border dilation*(k-1) - pad (cropping
/// where negative, output_padding at the end), and convolve with stride 1
/// and the kernel flipped and its channel axes swapped.
static FailureOr<Value> zeroInsertedConvTranspose(ImportContext &ctx, Value up, Value wt,
                                                  Value bias,
                                       int64_t g, ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations, ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> pads, ArrayRef<int64_t> outPad,
                                       ArrayRef<int64_t> out, bool bordered) {
  Emitter e{ctx};
  auto xt = cast<RankedTensorType>(up.getType()), ft = cast<RankedTensorType>(wt.getType());
  Type et = xt.getElementType();
  int64_t rank = xt.getRank(), spatial = rank - 2;
  int64_t n = xt.getDimSize(0), cin = xt.getDimSize(1);
  int64_t coutPerGroup = ft.getDimSize(1), cinPerGroup = cin / g;
  // 1. Zero insertion: [N, C, d...] -> [N, C, d, 1, ...] -> pad each 1 to s -> view.
  if (xt.hasStaticShape() && llvm::any_of(strides, [](int64_t s) { return s > 1; })) {
    SmallVector<int64_t> lifted = {n, cin}, spaced = {n, cin}, merged = {n, cin},
                         inserted = {n, cin};
    SmallVector<int64_t> amounts(4 + 4 * spatial, 0);
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t d = xt.getDimSize(2 + i), s = strides[i];
      lifted.append({d, 1});
      spaced.append({d, s});
      merged.push_back(d * s);
      inserted.push_back((d - 1) * s + 1);
      amounts[(2 + 2 * spatial) + 3 + 2 * i] = s - 1;
    }
    up = e.reshape(up, lifted);
    up = k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(spaced, et), up,
                          ctx.b.getDenseI64ArrayAttr(amounts), ctx.b.getStringAttr("constant"),
                          ctx.b.getF64FloatAttr(0.0));
    up = e.reshape(up, merged);
    up = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(inserted, et), up,
                            SmallVector<int64_t>(rank, 0), SmallVector<int64_t>(rank, 1));
  }
  // 2. Border: dilation*(k-1) - pad on each side (+ output_padding at the end);
  //    negative amounts crop. (Dynamic inputs got theirs with the zeros.)
  auto ut = cast<RankedTensorType>(up.getType());
  SmallVector<int64_t> before(spatial), after(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t border = bordered ? dilations[i] * (kernel[i] - 1) : 0;
    before[i] = bordered ? border - pads[i] : 0;
    after[i] = bordered ? border - pads[i + spatial] + outPad[i] : 0;
  }
  SmallVector<int64_t> padAmounts(2 * rank, 0), cropStart(rank, 0), paddedShape(ut.getShape());
  for (int64_t i = 0; i < spatial; ++i) {
    padAmounts[2 + i] = std::max<int64_t>(before[i], 0);
    padAmounts[rank + 2 + i] = std::max<int64_t>(after[i], 0);
    paddedShape[2 + i] += padAmounts[2 + i] + padAmounts[rank + 2 + i];
  }
  if (llvm::any_of(padAmounts, [](int64_t p) { return p > 0; }))
    up = k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(paddedShape, et), up,
                          ctx.b.getDenseI64ArrayAttr(padAmounts), ctx.b.getStringAttr("constant"),
                          ctx.b.getF64FloatAttr(0.0));
  SmallVector<int64_t> cropShape(paddedShape);
  bool crop = false;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t lo = std::max<int64_t>(-before[i], 0), hi = std::max<int64_t>(-after[i], 0);
    cropStart[2 + i] = lo;
    cropShape[2 + i] -= lo + hi;
    crop |= lo || hi;
  }
  if (crop)
    up = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(cropShape, et), up, cropStart,
                            SmallVector<int64_t>(rank, 1));

  // 3. Kernel [g*cin_g, cout_g, k...] -> [g*cout_g, cin_g, k...], flipped.
  ArrayRef<int64_t> taps = ft.getShape().drop_front(2);
  SmallVector<int64_t> grouped = {g, cinPerGroup, coutPerGroup}, swapped = {g, coutPerGroup,
                                                                           cinPerGroup};
  SmallVector<int64_t> perm = {0, 2, 1}, flat = {g * coutPerGroup, cinPerGroup};
  SmallVector<int64_t> flipStart = {0, 0}, flipStep = {1, 1};
  for (int64_t i = 0; i < spatial; ++i) {
    grouped.push_back(taps[i]);
    swapped.push_back(taps[i]);
    perm.push_back(3 + i);
    flat.push_back(taps[i]);
    flipStart.push_back(taps[i] - 1);
    flipStep.push_back(-1);
  }
  Value wk = e.reshape(wt, grouped);
  wk = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get(swapped, et), wk, perm);
  wk = e.reshape(wk, flat);
  wk = k::SliceOp::create(ctx.b, ctx.loc, cast<RankedTensorType>(wk.getType()), wk, flipStart,
                          flipStep);
  SmallVector<int64_t> unit(spatial, 1), none(2 * spatial, 0);
  if (spatial == 3)
    return conv3dFromPlanes(ctx, up, wk, bias, unit, dilations, none, g);
  SmallVector<int64_t> shape = {n, g * coutPerGroup};
  shape.append(out.begin(), out.end());
  return k::ConvOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et), up, wk, bias, unit,
                           dilations, none, g)
      .getResult();
}

static LogicalResult importConvTranspose(ImportContext &ctx) {
  auto x = ctx.input(0), wt = ctx.input(1);
  if (failed(x) || failed(wt) || failed(checkWeights(ctx, *x, *wt)))
    return failure();
  bool lifted = isLifted1d(cast<RankedTensorType>(x->getType()));
  if (lifted) {
    *x = liftTo2d(ctx, *x);
    *wt = liftTo2d(ctx, *wt);
  }
  auto xt = cast<RankedTensorType>(x->getType()), ft = cast<RankedTensorType>(wt->getType());
  int64_t rank = xt.getRank(), spatial = rank - 2;
  if ((rank != 4 && rank != 5) || ft.getRank() != rank)
    return ctx.fail(llvm::Twine(rank - 2) +
                    "-D ConvTranspose is not supported (only 1-D, 2-D and 3-D)");
  if (rank == 5 && !xt.hasStaticShape())
    return ctx.fail("3-D ConvTranspose needs static sizes, got " + shapeText(xt.getShape()));
  int64_t g = ctx.attrInt("group", 1);
  auto ones = [&](int64_t v) { return std::vector<int64_t>(spatial, v); };
  std::vector<int64_t> taps(ft.getShape().begin() + 2, ft.getShape().end());
  std::vector<int64_t> kernel = liftedAttr(ctx, "kernel_shape", taps, 1, lifted);
  std::vector<int64_t> strides = liftedAttr(ctx, "strides", ones(1), 1, lifted);
  std::vector<int64_t> dilations = liftedAttr(ctx, "dilations", ones(1), 1, lifted);
  std::vector<int64_t> pads = liftedAttr(ctx, "pads", ones(0), 0, lifted);
  pads.resize(2 * spatial, 0);
  std::vector<int64_t> outPad = liftedAttr(ctx, "output_padding", ones(0), 0, lifted);
  std::vector<int64_t> outShape = liftedAttr(ctx, "output_shape", {}, 1, lifted);
  if ((int64_t)kernel.size() != spatial || (int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial || (int64_t)outPad.size() != spatial ||
      (!outShape.empty() && (int64_t)outShape.size() < spatial))
    return ctx.fail("kernel_shape, strides, dilations, pads and output_padding need one entry "
                    "per spatial dimension");
  constexpr int64_t kLimit = int64_t(1) << 20; // keeps the size arithmetic far from overflow
  auto within = [&](int64_t v, int64_t lo) { return v >= lo && v < kLimit; };
  for (int64_t i = 0; i < spatial; ++i)
    if (!within(kernel[i], 1) || !within(strides[i], 1) || !within(dilations[i], 1) ||
        !within(outPad[i], 0) || !within(std::abs(pads[i]), 0) ||
        !within(std::abs(pads[i + spatial]), 0) ||
        (!outShape.empty() && !within(outShape[outShape.size() - spatial + i], 0)))
      return ctx.fail("ConvTranspose's kernel_shape, strides and dilations must be in "
                      "[1, 2^20), its pads, output_padding and output_shape under 2^20");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  SmallVector<int64_t> out(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = xt.getDimSize(2 + i), eff = dilations[i] * (kernel[i] - 1) + 1;
    bool dynamic = ShapedType::isDynamic(in);
    // The unpadded output length, s * (in - 1) + output_padding + eff.
    int64_t full = dynamic ? 0 : strides[i] * (in - 1) + outPad[i] + eff;
    bool same = autoPad.rfind("SAME", 0) == 0;
    if (!outShape.empty() && dynamic)
      return ctx.fail("ConvTranspose output_shape with a dynamic input size is not supported");
    if (!outShape.empty() || same) {
      // SAME targets in * s, so its padding does not depend on `in`.
      int64_t total = !outShape.empty() ? full - outShape[outShape.size() - spatial + i]
                                        : outPad[i] + eff - strides[i];
      // The ONNX spec's split, in floor division: an odd total pads more at
      // the end with SAME_UPPER, else at the start (a negative total, an
      // output_shape past the full length, extends the end).
      int64_t half = llvm::divideFloorSigned(total, 2);
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[i + spatial] = total - pads[i];
    }
    out[i] = dynamic ? ShapedType::kDynamic : full - pads[i] - pads[i + spatial];
  }
  Value bias;
  if (ctx.hasInput(2)) {
    auto bv = ctx.input(2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  bool disjointTaps = xt.hasStaticShape() && g == 1 && spatial == 2;
  for (int64_t i = 0; i < spatial; ++i)
    disjointTaps &= strides[i] == kernel[i] && ft.getDimSize(2 + i) == kernel[i] &&
                    dilations[i] == 1 && pads[i] == 0 && pads[i + spatial] == 0 &&
                    outPad[i] == 0;
  if (disjointTaps) {
    Value r = convTransposeOfDisjointTaps(ctx, *x, *wt, bias);
    ctx.setOutput(0, lifted ? dropLift(ctx, r) : r);
    return success();
  }
  Value up = *x;
  if (!xt.hasStaticShape()) { // 2-D: zeros and border from the run-time sizes
    auto dynamic = dynamicZeroInsertion(ctx, up, strides[0], strides[1], pads, outPad, kernel,
                                        dilations);
    if (failed(dynamic))
      return failure();
    up = *dynamic;
    out.assign(spatial, ShapedType::kDynamic);
  }
  auto r = zeroInsertedConvTranspose(ctx, up, *wt, bias, g, strides, dilations, kernel, pads,
                                     outPad, out, xt.hasStaticShape());
  if (failed(r))
    return failure();
  ctx.setOutput(0, lifted ? dropLift(ctx, *r) : *r);
  return success();
}

/// x normalized over `axes`: the statistics are kept with size-1 axes so
/// they broadcast back (shared by the normalization ops).
struct Normalized {
  Value mean;     // E[x]
  Value variance; // E[(x - E[x])^2]
  Value invStd;   // 1 / sqrt(variance + epsilon)
  Value value;    // (x - mean) * invStd
};

static FailureOr<Normalized> normalize(ImportContext &ctx, Value x, ArrayRef<int64_t> axes,
                                       double epsilon) {
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> statShape(xt.getShape());
  for (int64_t a : axes)
    statShape[a] = 1;
  auto statType = RankedTensorType::get(statShape, xt.getElementType());
  Emitter e{ctx};
  Normalized n;
  n.mean = k::ReduceMeanOp::create(ctx.b, ctx.loc, statType, x, axes, true);
  auto centered = e.binary<k::SubOp>(x, n.mean);
  if (failed(centered))
    return failure();
  auto squared = e.binary<k::MulOp>(*centered, *centered);
  if (failed(squared))
    return failure();
  n.variance = k::ReduceMeanOp::create(ctx.b, ctx.loc, statType, *squared, axes, true);
  auto varEps = e.binary<k::AddOp>(n.variance, e.constant(n.variance, epsilon));
  if (failed(varEps))
    return failure();
  n.invStd = e.unary<k::ReciprocalOp>(e.unary<k::SqrtOp>(*varEps));
  auto value = e.binary<k::MulOp>(*centered, n.invStd);
  if (failed(value))
    return failure();
  n.value = *value;
  return n;
}

/// BatchNormalization with training_mode=1: normalize with the batch
/// statistics and also return the updated running mean and variance.
static LogicalResult importBatchNormTraining(ImportContext &ctx, ArrayRef<Value> in) {
  auto xt = cast<RankedTensorType>(in[0].getType());
  Emitter e{ctx};
  SmallVector<int64_t> axes, channelShape(xt.getRank() - 1, 1);
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (i != 1)
      axes.push_back(i);
  channelShape[0] = xt.getDimSize(1);
  auto norm = normalize(ctx, in[0], axes, ctx.attrFloat("epsilon", 1e-5f));
  if (failed(norm))
    return failure();
  auto y = e.binary<k::MulOp>(norm->value, e.reshape(in[1], channelShape));
  if (failed(y))
    return failure();
  y = e.binary<k::AddOp>(*y, e.reshape(in[2], channelShape));
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  // running = input * momentum + batch * (1 - momentum)
  float momentum = ctx.attrFloat("momentum", 0.9f);
  for (auto [output, running, batch] :
       {std::tuple{1, in[3], norm->mean}, std::tuple{2, in[4], norm->variance}}) {
    auto kept = e.binary<k::MulOp>(running, e.constant(running, momentum));
    auto fresh = e.binary<k::MulOp>(e.reshape(batch, {xt.getDimSize(1)}),
                                    e.constant(running, 1.0 - momentum));
    if (failed(kept) || failed(fresh))
      return failure();
    auto updated = e.binary<k::AddOp>(*kept, *fresh);
    if (failed(updated))
      return failure();
    ctx.setOutput(output, *updated);
  }
  return success();
}

static LogicalResult importBatchNorm(ImportContext &ctx) {
  SmallVector<Value> in;
  for (size_t i = 0; i < 5; ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  if (ctx.attrInt("training_mode", 0))
    return importBatchNormTraining(ctx, in);
  ctx.setOutput(0, k::BatchNormOp::create(ctx.b, ctx.loc, in[0].getType(), in[0], in[1], in[2],
                                          in[3], in[4],
                                          ctx.b.getF32FloatAttr(ctx.attrFloat("epsilon", 1e-5f))));
  return success();
}

/// 3-D pooling from 2-D pools of the input depth planes: an output plane
/// combines (max, or mean) the 2-D pools of the planes its depth window
/// covers inside the input; padding planes are skipped, which matches
/// max pooling and count_include_pad=0 averaging.
template <bool isMax> static FailureOr<Value> emitPool3d(ImportContext &ctx, Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  Emitter e{ctx};
  Type et = xt.getElementType();
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  auto w = windowFrom(ctx, xt.getShape().drop_front(2), kernel, ctx.attrInts("strides", {1, 1, 1}),
                      ctx.attrInts("dilations", {1, 1, 1}),
                      ctx.attrInts("pads", {0, 0, 0, 0, 0, 0}), ctx.attrInt("ceil_mode", 0));
  if (failed(w))
    return failure();
  if (!isMax && ctx.attrInt("count_include_pad", 0) &&
      llvm::any_of(w->pads, [](int64_t p) { return p != 0; }))
    return ctx.fail("3-D AveragePool with count_include_pad and padding is not supported");
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), d = xt.getDimSize(2), h = xt.getDimSize(3),
          wd = xt.getDimSize(4);
  SmallVector<int64_t> k2 = {w->kernel[1], w->kernel[2]}, s2 = {w->strides[1], w->strides[2]},
                       p2 = {w->pads[1], w->pads[2], w->pads[4], w->pads[5]},
                       d2 = {w->dilations[1], w->dilations[2]};
  auto planeType = RankedTensorType::get({n, c, w->outSize[1], w->outSize[2]}, et);
  SmallVector<Value> planes;
  for (int64_t od = 0; od < w->outSize[0]; ++od) {
    SmallVector<Value> pooled;
    for (int64_t z = 0; z < w->kernel[0]; ++z) {
      int64_t at = od * w->strides[0] + z * w->dilations[0] - w->pads[0];
      if (at < 0 || at >= d)
        continue;
      Value s =
          k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, c, 1, h, wd}, et), x,
                             ArrayRef<int64_t>{0, 0, at, 0, 0}, ArrayRef<int64_t>{1, 1, 1, 1, 1});
      Value plane = e.reshape(s, {n, c, h, wd});
      if constexpr (isMax)
        pooled.push_back(k::MaxPoolOp::create(ctx.b, ctx.loc, planeType, plane, k2, s2, p2, d2));
      else
        pooled.push_back(
            k::AveragePoolOp::create(ctx.b, ctx.loc, planeType, plane, k2, s2, p2, d2, false));
    }
    if (pooled.empty())
      return ctx.fail("a pooling window lies entirely in the padding");
    Value acc = pooled[0];
    for (Value p : ArrayRef(pooled).drop_front()) {
      auto next = isMax ? e.binary<k::MaxOp>(acc, p) : e.binary<k::AddOp>(acc, p);
      if (failed(next))
        return failure();
      acc = *next;
    }
    if (!isMax && pooled.size() > 1) {
      auto mean = e.binary<k::DivOp>(acc, e.constant(acc, (double)pooled.size()));
      if (failed(mean))
        return failure();
      acc = *mean;
    }
    planes.push_back(e.reshape(acc, {n, c, 1, w->outSize[1], w->outSize[2]}));
  }
  if (planes.size() == 1)
    return planes[0];
  return k::ConcatOp::create(
             ctx.b, ctx.loc,
             RankedTensorType::get({n, c, w->outSize[0], w->outSize[1], w->outSize[2]}, et), planes,
             2)
      .getResult();
}

/// MaxPool or AveragePool of `x` (1-D to 3-D) with the node's window
/// attributes; MaxPool also sets the Indices output when it is used.
template <bool isMax>
static FailureOr<Value> emitPool(ImportContext &ctx, Value x, bool countIncludePad) {
  if (cast<RankedTensorType>(x.getType()).getRank() == 5)
    return emitPool3d<isMax>(ctx, x);
  bool lifted = isLifted1d(cast<RankedTensorType>(x.getType()));
  if (lifted)
    x = liftTo2d(ctx, x);
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return ctx.fail(llvm::Twine(xt.getRank() - 2) +
                    "-D pooling is not supported (only 1-D to 3-D)");
  auto window = resolveWindow(ctx, xt.getShape().drop_front(2),
                              liftedAttr(ctx, "kernel_shape", {}, 1, lifted),
                              ctx.attrInt("ceil_mode", 0), lifted);
  if (failed(window))
    return failure();
  auto type =
      withShape(xt, {xt.getDimSize(0), xt.getDimSize(1), window->outSize[0], window->outSize[1]});
  Value r;
  bool wantIndices = ctx.node->output_size() > 1 && !ctx.node->output(1).empty();
  if (wantIndices && (lifted || xt.getRank() != 4))
    return ctx.fail("the MaxPool Indices output is supported for 2-D pooling only");
  if constexpr (isMax) {
    r = k::MaxPoolOp::create(ctx.b, ctx.loc, type, x, window->kernel, window->strides,
                             window->pads, window->dilations);
    if (wantIndices)
      ctx.setOutput(
          1, k::MaxPoolIndicesOp::create(ctx.b, ctx.loc,
                                         RankedTensorType::get(type.getShape(), ctx.b.getI64Type()),
                                         x, window->kernel, window->strides, window->pads,
                                         window->dilations, ctx.attrInt("storage_order", 0) != 0));
  }
  if constexpr (!isMax)
    r = k::AveragePoolOp::create(ctx.b, ctx.loc, type, x, window->kernel, window->strides,
                                 window->pads, window->dilations, countIncludePad);
  return lifted ? dropLift(ctx, r) : r;
}

template <bool isMax> static LogicalResult importPool(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto r = emitPool<isMax>(ctx, *x, ctx.attrInt("count_include_pad", 0) != 0);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// LpPool: (sum of |x|^p over the window)^(1/p), padding counting as 0: the
/// padding-inclusive average times the window size.
static LogicalResult importLpPool(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 3 && xt.getRank() != 4)
    return ctx.fail("LpPool is supported in 1-D and 2-D only, got rank " +
                    llvm::Twine(xt.getRank()));
  if (!isa<FloatType>(xt.getElementType()))
    return ctx.fail("LpPool needs a floating-point input");
  int64_t p = ctx.attrInt("p", 2);
  if (p <= 0)
    return ctx.fail("p must be positive, got " + llvm::Twine(p));
  Emitter e{ctx};
  Value magnitude = e.unary<k::AbsOp>(*x);
  auto powered = p == 1 ? magnitude : e.binary<k::PowOp>(magnitude, e.constant(*x, (double)p));
  if (failed(powered))
    return failure();
  auto mean = emitPool<false>(ctx, *powered, /*countIncludePad=*/true);
  if (failed(mean))
    return failure();
  int64_t volume = 1;
  for (int64_t k : ctx.attrInts("kernel_shape"))
    volume *= k;
  auto sum = e.binary<k::MulOp>(*mean, e.constant(*mean, (double)volume));
  if (failed(sum))
    return failure();
  auto y = p == 1 ? sum : e.binary<k::PowOp>(*sum, e.constant(*sum, 1.0 / (double)p));
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

static LogicalResult importGlobalAveragePool(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() < 3)
    return ctx.fail("GlobalAveragePool needs an input of rank >= 3");
  SmallVector<int64_t> shape(xt.getShape());
  std::fill(shape.begin() + 2, shape.end(), 1);
  ctx.setOutput(0, k::GlobalAveragePoolOp::create(ctx.b, ctx.loc, withShape(xt, shape), *x));
  return success();
}

static LogicalResult importGemm(ImportContext &ctx) {
  auto a = ctx.input(0), bm = ctx.input(1);
  if (failed(a) || failed(bm))
    return failure();
  auto at = cast<RankedTensorType>(a->getType()), bt = cast<RankedTensorType>(bm->getType());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return ctx.fail("Gemm operands must be 2-D");
  bool ta = ctx.attrInt("transA", 0), tb = ctx.attrInt("transB", 0);
  int64_t m = at.getDimSize(ta ? 1 : 0), n = bt.getDimSize(tb ? 0 : 1);
  Value c;
  if (ctx.hasInput(2)) {
    auto cv = ctx.input(2);
    if (failed(cv))
      return failure();
    c = *cv;
  }
  ctx.setOutput(0, k::GemmOp::create(ctx.b, ctx.loc, withShape(at, {m, n}), *a, *bm, c,
                                     ctx.b.getF32FloatAttr(ctx.attrFloat("alpha", 1.0f)),
                                     ctx.b.getF32FloatAttr(ctx.attrFloat("beta", 1.0f)),
                                     ctx.b.getBoolAttr(ta), ctx.b.getBoolAttr(tb)));
  return success();
}

static FailureOr<Value> emitMatMul(ImportContext &ctx, Value a, Value b) {
  SmallVector<int64_t> as(cast<RankedTensorType>(a.getType()).getShape());
  SmallVector<int64_t> bs(cast<RankedTensorType>(b.getType()).getShape());
  if (as.empty() || bs.empty())
    return ctx.fail("MatMul operands must have rank >= 1");
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA)
    as.insert(as.begin(), 1);
  if (vecB)
    bs.push_back(1);
  if (as.back() != bs[bs.size() - 2] && !ShapedType::isDynamic(as.back()) &&
      !ShapedType::isDynamic(bs[bs.size() - 2]))
    return ctx.fail("MatMul contraction dimensions differ (" + llvm::Twine(as.back()) + " vs " +
                    llvm::Twine(bs[bs.size() - 2]) + ")");
  auto batch = k::broadcastShapes(ArrayRef(as).drop_back(2), ArrayRef(bs).drop_back(2));
  if (failed(batch))
    return ctx.fail("MatMul batch dimensions are not broadcast-compatible");
  SmallVector<int64_t> shape(*batch);
  if (!vecA)
    shape.push_back(as[as.size() - 2]);
  if (!vecB)
    shape.push_back(bs.back());
  auto type = withShape(cast<RankedTensorType>(a.getType()), shape);
  return k::MatMulOp::create(ctx.b, ctx.loc, type, a, b).getResult();
}

static LogicalResult importMatMul(ImportContext &ctx) {
  auto a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  auto r = emitMatMul(ctx, *a, *b);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// Before opset 13, (Log)Softmax flattens the input to 2-D at `axis` (default 1).
template <typename SoftmaxOp> static LogicalResult importSoftmax(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  auto axis = ctx.axis(ctx.attrInt("axis", ctx.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (ctx.opset >= 13 || *axis == rank - 1) {
    ctx.setOutput(0, SoftmaxOp::create(ctx.b, ctx.loc, xt, *x, *axis));
    return success();
  }
  auto flat = flattenedType(ctx, xt, *axis);
  if (failed(flat))
    return failure();
  Value r = k::ReshapeOp::create(ctx.b, ctx.loc, flat->first, *x, flat->second);
  r = SoftmaxOp::create(ctx.b, ctx.loc, flat->first, r, 1);
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, xt, r, unflattenedKept(xt, *flat)));
  return success();
}

/// LayerNormalization. When the Mean or InvStdDev outputs are used, the
/// normalization is composed from kiln ops so those values exist.
static LogicalResult importLayerNorm(ImportContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", -1), xt.getRank());
  if (failed(axis))
    return failure();
  Value bias;
  if (ctx.hasInput(2)) {
    auto bv = ctx.input(2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  float epsilon = ctx.attrFloat("epsilon", 1e-5f);
  bool statsUsed = false;
  for (int i = 1; i < ctx.node->output_size(); ++i)
    statsUsed |= !ctx.node->output(i).empty();
  if (!statsUsed) {
    ctx.setOutput(0, k::LayerNormOp::create(ctx.b, ctx.loc, xt, *x, *scale, bias,
                                            ctx.b.getI64IntegerAttr(*axis),
                                            ctx.b.getF32FloatAttr(epsilon)));
    return success();
  }
  Emitter e{ctx};
  SmallVector<int64_t> axes;
  for (int64_t i = *axis; i < xt.getRank(); ++i)
    axes.push_back(i);
  auto norm = normalize(ctx, *x, axes, epsilon);
  if (failed(norm))
    return failure();
  auto y = e.binary<k::MulOp>(norm->value, *scale);
  if (failed(y))
    return failure();
  if (bias) {
    y = e.binary<k::AddOp>(*y, bias);
    if (failed(y))
      return failure();
  }
  ctx.setOutput(0, *y);
  ctx.setOutput(1, norm->mean);
  ctx.setOutput(2, norm->invStd);
  return success();
}

/// InstanceNormalization: normalize each (n, c) over the spatial dimensions,
/// then apply the per-channel scale and bias.
static LogicalResult importInstanceNorm(ImportContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() < 3)
    return ctx.fail("InstanceNormalization needs an input of rank >= 3");
  Emitter e{ctx};
  SmallVector<int64_t> axes, channelShape(xt.getRank() - 1, 1);
  for (int64_t i = 2; i < xt.getRank(); ++i)
    axes.push_back(i);
  channelShape[0] = xt.getDimSize(1);
  auto norm = normalize(ctx, *x, axes, ctx.attrFloat("epsilon", 1e-5f));
  if (failed(norm))
    return failure();
  auto y = e.binary<k::MulOp>(norm->value, e.reshape(*scale, channelShape));
  if (failed(y))
    return failure();
  y = e.binary<k::AddOp>(*y, e.reshape(*bias, channelShape));
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// GroupNormalization: x [N, C, ...] viewed as [N, G, C/G * ...] is
/// normalized over its last dimension. Opset 18 scales and shifts per group
/// (scale and bias [G]), opset 21 per channel ([C]).
static LogicalResult importGroupNorm(ImportContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t groups = ctx.attrInt("num_groups", 0);
  if (xt.getRank() < 2 || !xt.hasStaticShape())
    return ctx.fail("GroupNormalization needs a static input shape of rank >= 2, got " +
                    shapeText(xt.getShape()));
  int64_t channels = xt.getDimSize(1);
  if (groups <= 0 || channels % groups)
    return ctx.fail("num_groups " + llvm::Twine(groups) + " does not divide the " +
                    llvm::Twine(channels) + " channels");
  bool perChannel = ctx.opset >= 21;
  int64_t affine = perChannel ? channels : groups;
  for (Value v : {*scale, *bias}) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    if (shape != ArrayRef<int64_t>{affine})
      return ctx.fail(llvm::Twine("scale and bias must have shape [") + llvm::Twine(affine) +
                      "] (per " + (perChannel ? "channel" : "group") + " at opset " +
                      llvm::Twine(ctx.opset) + "), got " + shapeText(shape));
  }
  Emitter e{ctx};
  int64_t batch = xt.getDimSize(0), perGroup = xt.getNumElements() / (batch * groups);
  auto norm = normalize(ctx, e.reshape(*x, {batch, groups, perGroup}), {2},
                        ctx.attrFloat("epsilon", 1e-5f));
  if (failed(norm))
    return failure();
  // The affine step on the grouped view ([G, 1]) or on x's ([C, 1, ...]).
  Value y = perChannel ? e.reshape(norm->value, xt.getShape()) : norm->value;
  SmallVector<int64_t> affineShape(perChannel ? xt.getRank() - 1 : 2, 1);
  affineShape[0] = affine;
  auto scaled = e.binary<k::MulOp>(y, e.reshape(*scale, affineShape));
  if (failed(scaled))
    return failure();
  auto shifted = e.binary<k::AddOp>(*scaled, e.reshape(*bias, affineShape));
  if (failed(shifted))
    return failure();
  ctx.setOutput(0, perChannel ? *shifted : e.reshape(*shifted, xt.getShape()));
  return success();
}

/// RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale, the mean over
/// the dimensions from `axis` on.
static LogicalResult importRMSNorm(ImportContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", -1), xt.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> axes, statShape(xt.getShape());
  for (int64_t i = *axis; i < xt.getRank(); ++i) {
    axes.push_back(i);
    statShape[i] = 1;
  }
  Emitter e{ctx};
  auto squared = e.binary<k::MulOp>(*x, *x);
  if (failed(squared))
    return failure();
  Value meanSquare = k::ReduceMeanOp::create(ctx.b, ctx.loc, withShape(xt, statShape), *squared,
                                             axes, true);
  auto shifted = e.binary<k::AddOp>(meanSquare, e.constant(meanSquare, ctx.attrFloat("epsilon",
                                                                                     1e-5f)));
  if (failed(shifted))
    return failure();
  auto normalized = e.binary<k::MulOp>(*x, e.unary<k::ReciprocalOp>(e.unary<k::SqrtOp>(*shifted)));
  if (failed(normalized))
    return failure();
  auto y = e.binary<k::MulOp>(*normalized, *scale);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// MeanVarianceNormalization: (x - mean) / sqrt(var + 1e-9) over `axes`.
static LogicalResult importMVN(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  std::vector<int64_t> axes = ctx.attrInts("axes", {0, 2, 3});
  SmallVector<int64_t> normalized;
  for (int64_t a : axes) {
    auto n = ctx.axis(a, xt.getRank());
    if (failed(n))
      return failure();
    normalized.push_back(*n);
  }
  llvm::sort(normalized);
  auto norm = normalize(ctx, *x, normalized, 1e-9);
  if (failed(norm))
    return failure();
  ctx.setOutput(0, norm->value);
  return success();
}

/// LRN: x / (bias + alpha / size * sum of x^2 over `size` neighbouring
/// channels)^beta, the window sum built from shifted channel slices.
static LogicalResult importLRN(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t size = ctx.attrInt("size", 0), rank = xt.getRank();
  if (size < 1 || rank < 3)
    return ctx.fail("LRN needs size >= 1 and an input of rank >= 3");
  Emitter e{ctx};
  auto squared = e.binary<k::MulOp>(*x, *x);
  if (failed(squared))
    return failure();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  SmallVector<int64_t> pads(2 * rank, 0), paddedShape(xt.getShape());
  pads[1] = before;
  pads[rank + 1] = after;
  paddedShape[1] += size - 1;
  Value padded =
      k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(paddedShape, xt.getElementType()),
                       *squared, ctx.b.getDenseI64ArrayAttr(pads), ctx.b.getStringAttr("constant"),
                       ctx.b.getF64FloatAttr(0.0));
  Value sum;
  SmallVector<int64_t> steps(rank, 1);
  for (int64_t i = 0; i < size; ++i) {
    SmallVector<int64_t> starts(rank, 0);
    starts[1] = i;
    Value shifted = k::SliceOp::create(ctx.b, ctx.loc, xt, padded, starts, steps);
    if (sum) {
      auto added = e.binary<k::AddOp>(sum, shifted);
      if (failed(added))
        return failure();
      sum = *added;
    } else {
      sum = shifted;
    }
  }
  auto scaled = e.binary<k::MulOp>(sum, e.constant(sum, ctx.attrFloat("alpha", 1e-4f) / size));
  if (failed(scaled))
    return failure();
  auto base = e.binary<k::AddOp>(*scaled, e.constant(sum, ctx.attrFloat("bias", 1.0f)));
  if (failed(base))
    return failure();
  auto denom = e.binary<k::PowOp>(*base, e.constant(sum, ctx.attrFloat("beta", 0.75f)));
  if (failed(denom))
    return failure();
  auto y = e.binary<k::DivOp>(*x, *denom);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// GlobalMaxPool: max over all spatial dimensions, kept as size 1.
static LogicalResult importGlobalMaxPool(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  SmallVector<int64_t> axes, shape(xt.getShape());
  for (int64_t i = 2; i < xt.getRank(); ++i) {
    axes.push_back(i);
    shape[i] = 1;
  }
  ctx.setOutput(0,
                k::ReduceOp::create(ctx.b, ctx.loc, withShape(xt, shape), *x, "max", axes, true));
  return success();
}

/// Every set of `n` axes whose removal turns `in` into `out`, in
/// lexicographic order.
static std::vector<std::vector<int64_t>> removalsGiving(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                                        int64_t n) {
  std::vector<std::vector<int64_t>> sets;
  int64_t rank = in.size();
  if (n < 0 || n > rank || (int64_t)out.size() != rank - n)
    return sets;
  std::vector<bool> pick(rank, false);
  std::fill(pick.begin(), pick.begin() + n, true);
  do {
    std::vector<int64_t> removed, kept;
    for (int64_t d = 0; d < rank; ++d)
      (pick[d] ? removed : kept).push_back(pick[d] ? d : in[d]);
    if (kept == std::vector<int64_t>(out.begin(), out.end()))
      sets.push_back(removed);
  } while (std::prev_permutation(pick.begin(), pick.end()));
  return sets;
}

/// One way a Reduce* node reduces: over `axes` (sorted), taken when `when`
/// holds at run time (null: always).
struct ReduceChoice {
  std::vector<int64_t> axes;
  Value when;
};

/// A Reduce* node's `axes` at run time, from its declared output shape: with
/// keepdims, the axes where it has 1 and the input does not (size-1 input
/// axes may be named too, reducing them changes nothing); without, the axes
/// it drops. When several sets of axes would drop to the declared shape
/// (2x3x3 to 2x3), each is a choice taken when the run-time axes name it.
static FailureOr<SmallVector<ReduceChoice>> runtimeReduceAxes(ImportContext &ctx,
                                                              ArrayRef<int64_t> in) {
  auto length = operandLength(ctx, 1);
  if (failed(length))
    return failure();
  int64_t n = *length, rank = in.size();
  if (n == 0)
    return SmallVector<ReduceChoice>{{}};
  auto declared = declaredFor(ctx, "axes");
  if (failed(declared))
    return failure();
  std::vector<int64_t> required, allowed;
  if (ctx.attrInt("keepdims", 1)) {
    bool fits = (int64_t)declared->size() == rank;
    for (int64_t d = 0; fits && d < rank; ++d) {
      fits = (*declared)[d] == in[d] || (*declared)[d] == 1;
      if ((*declared)[d] == 1)
        allowed.push_back(d);
      if ((*declared)[d] == 1 && in[d] != 1)
        required.push_back(d);
    }
    if (!fits || (int64_t)required.size() > n || (int64_t)allowed.size() < n)
      return failRuntimeOperand(ctx, "axes",
                                "the declared output shape does not follow from "
                                "the input shape by reducing " +
                                    llvm::Twine(n) + " axes");
    if (failed(guardAxes(ctx, 1, "axes", rank, required, allowed)))
      return failure();
    return SmallVector<ReduceChoice>{{required.empty() ? allowed : required, nullptr}};
  }
  std::vector<std::vector<int64_t>> sets = removalsGiving(in, *declared, n);
  if (sets.empty())
    return failRuntimeOperand(
        ctx, "axes", "no " + llvm::Twine(n) + " axes reduce the input to the declared shape");
  if (sets.size() == 1) {
    if (failed(guardAxes(ctx, 1, "axes", rank, sets[0], sets[0])))
      return failure();
    return SmallVector<ReduceChoice>{{sets[0], nullptr}};
  }
  std::vector<int64_t> any;
  for (const auto &set : sets)
    any.insert(any.end(), set.begin(), set.end());
  llvm::sort(any);
  any.erase(std::unique(any.begin(), any.end()), any.end());
  if (failed(guardAxes(ctx, 1, "axes", rank, {}, any)))
    return failure();
  SmallVector<ReduceChoice> choices;
  Value named;
  for (const auto &set : sets) {
    Value when = axesWithin(ctx, 1, rank, set);
    named = named ? k::OrOp::create(ctx.b, ctx.loc, when.getType(), named, when) : when;
    choices.push_back({set, when});
  }
  guard(ctx, named, "axes", "must name axes that reduce the input to that shape");
  return choices;
}
/// The ways a Reduce* node reduces (each over sorted, non-negative axes):
/// from the `axes` input (ReduceSum from opset 13, the others from 18) or
/// attribute; none with noop_with_empty_axes and no axes (the input passes
/// through).
static FailureOr<SmallVector<ReduceChoice>> reduceAxes(ImportContext &ctx, ArrayRef<int64_t> in) {
  int64_t rank = in.size();
  bool axesInput = ctx.opset >= (ctx.node->op_type() == "ReduceSum" ? 13 : 18);
  SmallVector<ReduceChoice> choices = {{}};
  if (axesInput && ctx.hasInput(1)) {
    if (ctx.hostInput(1)) {
      auto a = ctx.hostInts(1, "axes");
      if (failed(a))
        return failure();
      choices[0].axes = *a;
    } else if (llvm::any_of(in, ShapedType::isDynamic)) {
      return ctx.fail("input 'axes' is only known at run time and the input has dynamic "
                      "dimensions; pin the model's input shapes with --input-shape");
    } else {
      auto c = runtimeReduceAxes(ctx, in);
      if (failed(c))
        return failure();
      choices = *c;
    }
  } else if (!axesInput) {
    choices[0].axes = ctx.attrInts("axes");
  }
  for (ReduceChoice &choice : choices) {
    std::vector<int64_t> &axes = choice.axes;
    if (axes.empty()) {
      if (ctx.attrInt("noop_with_empty_axes", 0))
        return SmallVector<ReduceChoice>{};
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    }
    for (int64_t &a : axes) {
      auto n = ctx.axis(a, rank);
      if (failed(n))
        return failure();
      a = *n;
    }
    std::sort(axes.begin(), axes.end());
  }
  return choices;
}
/// Reduce* ops. `pre` transforms the input (abs, square, exp), `kind` is the
/// kiln reduction ("mean" or a kiln.reduce kind), `post` the result (sqrt, log).
template <typename Pre, typename Post>
static LogicalResult importReduce(ImportContext &ctx, StringRef kind) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto choices = reduceAxes(ctx, xt.getShape());
  if (failed(choices))
    return failure();
  Value in = *x;
  if constexpr (!std::is_void_v<Pre>)
    in = Pre::create(ctx.b, ctx.loc, in.getType(), in);
  if (choices->empty()) {
    ctx.setOutput(0, in);
    return success();
  }
  bool keep = ctx.attrInt("keepdims", 1);
  auto reduceOver = [&](ArrayRef<int64_t> axes) -> Value {
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < xt.getRank(); ++i) {
      bool reduced = std::binary_search(axes.begin(), axes.end(), i);
      if (!reduced)
        shape.push_back(xt.getDimSize(i));
      else if (keep)
        shape.push_back(1);
    }
    auto type = withShape(xt, shape);
    Value r = kind == "mean"
                  ? (Value)k::ReduceMeanOp::create(ctx.b, ctx.loc, type, in, axes, keep)
                  : (Value)k::ReduceOp::create(ctx.b, ctx.loc, type, in, kind, axes, keep);
    if constexpr (!std::is_void_v<Post>)
      r = Post::create(ctx.b, ctx.loc, r.getType(), r);
    return r;
  };
  // Axes chosen at run time: every candidate is computed, the named one kept.
  Value result;
  for (const ReduceChoice &choice : llvm::reverse(*choices)) {
    Value r = reduceOver(choice.axes);
    result =
        result ? (Value)k::WhereOp::create(ctx.b, ctx.loc, r.getType(), choice.when, r, result) : r;
  }
  ctx.setOutput(0, result);
  return success();
}

/// x * x as a unary op class for importReduce.
struct Square {
  static Value create(OpBuilder &b, Location loc, Type type, Value x) {
    return k::MulOp::create(b, loc, type, x, x);
  }
};

template <typename ArgOp> static LogicalResult importArg(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", 0), xt.getRank());
  if (failed(axis))
    return failure();
  bool keep = ctx.attrInt("keepdims", 1);
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (i != *axis)
      shape.push_back(xt.getDimSize(i));
    else if (keep)
      shape.push_back(1);
  auto type = RankedTensorType::get(shape, ctx.b.getI64Type());
  ctx.setOutput(0, ArgOp::create(ctx.b, ctx.loc, type, *x, *axis, keep,
                                 ctx.attrInt("select_last_index", 0) != 0));
  return success();
}

static LogicalResult importEinsum(ImportContext &ctx) {
  SmallVector<Value> inputs;
  SmallVector<int64_t> ranks;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  for (Value v : inputs) {
    shapes.push_back(cast<RankedTensorType>(v.getType()).getShape());
    ranks.push_back(shapes.back().size());
  }
  std::string equation = ctx.attrString("equation"), message;
  auto spec = k::parseEinsum(equation, ranks, message);
  if (failed(spec))
    return ctx.fail("invalid equation '" + equation + "': " + message);
  auto shape = k::einsumShape(*spec, shapes, message);
  if (failed(shape))
    return ctx.fail(message);
  auto et = getElementTypeOrSelf(inputs[0].getType());
  ctx.setOutput(
      0, k::EinsumOp::create(ctx.b, ctx.loc, RankedTensorType::get(*shape, et), inputs, equation));
  return success();
}

/// TopK: k from the attribute (opset 1), a constant K input, or a run-time
/// K checked against the declared output shape.
static LogicalResult importTopK(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", -1), xt.getRank());
  if (failed(axis))
    return failure();
  if (xt.isDynamicDim(*axis))
    return ctx.fail("TopK needs a static size along its axis; pin it with --input-shape");
  // k: the attribute (opset < 10), a constant, or a value known only at run
  // time, whose results have a dynamic axis.
  int64_t k = ShapedType::kDynamic;
  Value runtimeK;
  if (ctx.opset < 10) {
    k = ctx.attrInt("k", -1);
  } else if (const HostTensor *t = ctx.hostInput(1)) {
    if (t->numElements() != 1 || t->isFloat())
      return ctx.fail("K must be one integer");
    k = t->ints[0];
  } else {
    auto kt = ctx.inputType(1);
    if (failed(kt))
      return failure();
    if (!kt->hasStaticShape() || kt->getNumElements() != 1 || !kt->getElementType().isInteger(64))
      return ctx.fail("K must be one int64");
    runtimeK = Emitter{ctx}.reshape(*ctx.input(1), {});
  }
  if (!runtimeK && (k < 0 || k > xt.getDimSize(*axis)))
    return ctx.fail("k = " + llvm::Twine(k) + " is outside 0.." +
                    llvm::Twine(xt.getDimSize(*axis)));
  SmallVector<int64_t> shape(xt.getShape());
  shape[*axis] = k;
  auto op = k::TopKOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, xt.getElementType()),
                              RankedTensorType::get(shape, ctx.b.getI64Type()), *x, runtimeK,
                              *axis, ctx.attrInt("largest", 1) != 0);
  ctx.setOutput(0, op.getValues());
  ctx.setOutput(1, op.getIndices());
  return success();
}

/// MaxUnpool: X scattered into zeros at the flat indices I (as MaxPool's
/// Indices output computes them, over the inferred shape (in - 1) * stride -
/// pads + kernel). An output_shape (constant, or at run time checked against
/// the declared shape) may be larger; coordinates keep their place in it.
static LogicalResult importMaxUnpool(ImportContext &ctx) {
  auto x = ctx.input(0), indices = ctx.input(1);
  if (failed(x) || failed(indices))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() < 3 || !xt.hasStaticShape())
    return ctx.fail("MaxUnpool needs a static input of rank 3 or more");
  int64_t rank = xt.getRank(), spatial = rank - 2;
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if ((int64_t)kernel.size() != spatial || (int64_t)strides.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return ctx.fail("kernel_shape, strides and pads need one entry per spatial dimension");
  std::vector<int64_t> shape(xt.getShape().begin(), xt.getShape().end());
  for (int64_t d = 0; d < spatial; ++d)
    shape[2 + d] = (shape[2 + d] - 1) * strides[d] - pads[d] - pads[spatial + d] + kernel[d];
  std::vector<int64_t> inferred = shape;
  if (ctx.hasInput(2)) {
    auto given = ctx.hostInput(2) ? ctx.hostInts(2, "output_shape")
                                  : runtimeShapeOperand(ctx, 2, "output_shape");
    if (failed(given))
      return failure();
    shape = *given;
    if ((int64_t)shape.size() != rank)
      return ctx.fail("output_shape needs one entry per dimension");
  }
  auto count = checkedElementCount(shape, dtypeCodeOf(xt.getElementType()), ctx.loc, "the output");
  if (failed(count))
    return failure();
  int64_t total = *count;
  Emitter e{ctx};
  Value zeros = k::ConstantOp::create(
      ctx.b, ctx.loc, RankedTensorType::get({total}, xt.getElementType()),
      DenseElementsAttr::get(RankedTensorType::get({total}, xt.getElementType()),
                             ctx.b.getZeroAttr(xt.getElementType())));
  Value flatIndices = e.reshape(e.castTo(*indices, ctx.b.getI64Type()), {xt.getNumElements()});
  if (shape != inferred) {
    // The indices address the inferred shape: move each coordinate into the
    // larger output shape.
    Value moved;
    int64_t inStride = 1, outStride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value coord = *e.binary<k::DivOp>(flatIndices, e.constant(flatIndices, (double)inStride));
      coord = *e.binary<k::ModOp>(coord, e.constant(flatIndices, (double)inferred[d]));
      Value term = *e.binary<k::MulOp>(coord, e.constant(flatIndices, (double)outStride));
      moved = moved ? *e.binary<k::AddOp>(moved, term) : term;
      inStride *= inferred[d];
      outStride *= shape[d];
    }
    flatIndices = moved;
  }
  Value scattered =
      k::ScatterElementsOp::create(ctx.b, ctx.loc, zeros.getType(), zeros, flatIndices,
                                   e.reshape(*x, {xt.getNumElements()}), 0, "none");
  ctx.setOutput(0, e.reshape(scattered, shape));
  return success();
}

/// Det of the trailing n x n matrices by the permutation (Leibniz) expansion:
/// exact in structure, and cheap for the small matrices models carry; larger
/// ones are refused.
static LogicalResult importDet(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  if (rank < 2 || xt.getDimSize(rank - 1) != xt.getDimSize(rank - 2))
    return ctx.fail("Det needs square matrices in the last two dimensions");
  int64_t n = xt.getDimSize(rank - 1);
  if (n > 5)
    return ctx.fail("Det of " + llvm::Twine(n) + "x" + llvm::Twine(n) +
                    " matrices is not supported (up to 5x5)");
  Emitter e{ctx};
  SmallVector<int64_t> batch(xt.getShape().drop_back(2));
  auto element = [&](int64_t i, int64_t j) -> Value {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1), size(xt.getShape());
    starts[rank - 2] = i;
    starts[rank - 1] = j;
    size[rank - 2] = size[rank - 1] = 1;
    Value slice = k::SliceOp::create(
        ctx.b, ctx.loc, RankedTensorType::get(size, xt.getElementType()), *x, starts, steps);
    return e.reshape(slice, batch);
  };
  SmallVector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  Value sum;
  do {
    int64_t inversions = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = a + 1; b < n; ++b)
        inversions += perm[a] > perm[b];
    Value term = element(0, perm[0]);
    for (int64_t r = 1; r < n; ++r)
      term = *e.binary<k::MulOp>(term, element(r, perm[r]));
    if (!sum)
      sum = inversions % 2 ? e.unary<k::NegOp>(term) : term;
    else
      sum = inversions % 2 ? *e.binary<k::SubOp>(sum, term) : *e.binary<k::AddOp>(sum, term);
  } while (std::next_permutation(perm.begin(), perm.end()));
  ctx.setOutput(0, sum);
  return success();
}

void registerNNOps(ImportTable &t) {
  t["ConvInteger"] = importInteger<true>;
  t["MatMulInteger"] = importInteger<false>;
  t["QLinearConv"] = importQLinear<true>;
  t["QLinearMatMul"] = importQLinear<false>;
  t["Einsum"] = importEinsum;
  t["Conv"] = importConv;
  t["ConvTranspose"] = importConvTranspose;
  t["DeformConv"] = importDeformConv;
  t["BatchNormalization"] = importBatchNorm;
  t["MaxPool"] = importPool<true>;
  t["AveragePool"] = importPool<false>;
  t["LpPool"] = importLpPool;
  t["GlobalAveragePool"] = importGlobalAveragePool;
  t["Gemm"] = importGemm;
  t["MatMul"] = importMatMul;
  t["Softmax"] = importSoftmax<k::SoftmaxOp>;
  t["LayerNormalization"] = importLayerNorm;
  t["InstanceNormalization"] = importInstanceNorm;
  t["GroupNormalization"] = importGroupNorm;
  t["RMSNormalization"] = importRMSNorm;
  t["GlobalMaxPool"] = importGlobalMaxPool;
  t["MeanVarianceNormalization"] = importMVN;
  t["LRN"] = importLRN;
  t["ReduceMean"] = [](ImportContext &c) { return importReduce<void, void>(c, "mean"); };
  t["ReduceSum"] = [](ImportContext &c) { return importReduce<void, void>(c, "sum"); };
  t["ReduceMax"] = [](ImportContext &c) { return importReduce<void, void>(c, "max"); };
  t["ReduceMin"] = [](ImportContext &c) { return importReduce<void, void>(c, "min"); };
  t["ReduceProd"] = [](ImportContext &c) { return importReduce<void, void>(c, "prod"); };
  t["ReduceL1"] = [](ImportContext &c) { return importReduce<k::AbsOp, void>(c, "sum"); };
  t["ReduceL2"] = [](ImportContext &c) { return importReduce<Square, k::SqrtOp>(c, "sum"); };
  t["ReduceSumSquare"] = [](ImportContext &c) { return importReduce<Square, void>(c, "sum"); };
  t["ReduceLogSum"] = [](ImportContext &c) { return importReduce<void, k::LogOp>(c, "sum"); };
  t["ReduceLogSumExp"] = [](ImportContext &c) {
    return importReduce<k::ExpOp, k::LogOp>(c, "sum");
  };
  t["ArgMax"] = importArg<k::ArgMaxOp>;
  t["TopK"] = importTopK;
  t["MaxUnpool"] = importMaxUnpool;
  t["Det"] = importDet;
  t["ArgMin"] = importArg<k::ArgMinOp>;
  t["LogSoftmax"] = importSoftmax<k::LogSoftmaxOp>;
}

} // namespace kiln::onnx_frontend
