//===- ImportSignal.cpp - ONNX signal ops: DFT, STFT and cosine windows ---===//
//
// DFT is two matmuls with constant cosine and sine matrices along the signal
// axis (O(n^2) per signal, which is what small audio frames need). The
// windows are computed at compile time.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"
#include "frontend/onnx/ShapeOperands.h"

#include <cmath>
#include <numeric>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

/// A [rows x cols] host matrix of the element type `dtype` with entries f(r, c).
HostTensor matrix(int32_t dtype, int64_t rows, int64_t cols,
                  llvm::function_ref<double(int64_t, int64_t)> f) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = {rows, cols};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t.floats.push_back(f(r, c));
  return t;
}

/// The DFT along `axis` of a real ([..., 1]) or complex ([..., 2]) float
/// signal: X[k] = sum_j x[j] e^(-+2 pi i jk / n), the inverse scaled by 1/n,
/// the first n/2 + 1 bins when onesided.
FailureOr<Value> dft(ImportContext &ctx, Value x, int64_t axisIn, bool inverse, bool onesided) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank(), parts = rank ? xt.getDimSize(rank - 1) : 0;
  int32_t dtype = dtypeCodeOf(xt.getElementType());
  if (!isa<FloatType>(xt.getElementType()) || (parts != 1 && parts != 2) || rank < 3)
    return ctx.fail("the signal must be float [batch, ..., length, 1 or 2]");
  auto axis = ctx.axis(axisIn, rank - 1);
  if (failed(axis))
    return failure();
  int64_t n = xt.getDimSize(*axis);
  if (!xt.hasStaticShape() || n == 0)
    return ctx.fail("DFT needs a static signal of at least one sample, got " +
                    shapeText(xt.getShape()));
  int64_t bins = onesided ? n / 2 + 1 : n;
  double scale = inverse ? 1.0 / n : 1.0, sign = inverse ? 1.0 : -1.0;
  auto angle = [&](int64_t j, int64_t kk) { return 2 * M_PI * double((j * kk) % n) / n; };
  auto cosM = ctx.materialize(
      matrix(dtype, n, bins, [&](int64_t j, int64_t kk) { return scale * std::cos(angle(j, kk)); }),
      "dft_cos");
  auto sinM = ctx.materialize(matrix(dtype, n, bins,
                                     [&](int64_t j, int64_t kk) {
                                       return sign * scale * std::sin(angle(j, kk));
                                     }),
                              "dft_sin");
  if (failed(cosM) || failed(sinM))
    return failure();

  // Each part as rows of signals: the signal axis last, the rest flattened.
  Emitter e{ctx};
  SmallVector<int64_t> perm, moved;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != *axis)
      perm.push_back(d);
  perm.push_back(*axis);
  for (int64_t d : perm)
    moved.push_back(xt.getDimSize(d));
  int64_t rows = xt.getNumElements() / parts / n;
  auto part = [&](int64_t p) -> Value {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1), size(xt.getShape());
    starts[rank - 1] = p;
    size[rank - 1] = 1;
    Value s = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(size, xt.getElementType()),
                                 x, starts, steps);
    s = e.reshape(s, xt.getShape().drop_back());
    s = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get(moved, xt.getElementType()),
                               s, perm);
    return e.reshape(s, {rows, n});
  };
  auto matmul = [&](Value a, Value m) -> Value {
    return k::MatMulOp::create(ctx.b, ctx.loc,
                               RankedTensorType::get({rows, bins}, xt.getElementType()), a, m);
  };
  // (a + bi)(cos + i sin) = (a cos - b sin) + i (a sin + b cos)
  Value re = part(0);
  Value realPart = matmul(re, *cosM), imagPart = matmul(re, *sinM);
  if (parts == 2) {
    Value im = part(1);
    realPart = *e.binary<k::SubOp>(realPart, matmul(im, *sinM));
    imagPart = *e.binary<k::AddOp>(imagPart, matmul(im, *cosM));
  }
  // Back to the input's dimension order, with the complex pair last.
  SmallVector<int64_t> movedOut(moved);
  movedOut.back() = bins;
  SmallVector<int64_t> inverseOrder(rank - 1), outShape(xt.getShape());
  for (int64_t i = 0; i < rank - 1; ++i)
    inverseOrder[perm[i]] = i;
  outShape[*axis] = bins;
  SmallVector<int64_t> single(outShape);
  single.back() = 1;
  auto restore = [&](Value v) -> Value {
    v = e.reshape(v, movedOut);
    SmallVector<int64_t> unmoved(outShape.begin(), outShape.end() - 1);
    v = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get(unmoved, xt.getElementType()),
                               v, inverseOrder);
    return e.reshape(v, single);
  };
  outShape.back() = 2;
  return k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get(outShape, xt.getElementType()),
                             ValueRange{restore(realPart), restore(imagPart)}, rank - 1)
      .getResult();
}

/// DFT (opset 17): axis and inverse/onesided attributes; a dft_length must
/// equal the signal length.
LogicalResult importDFT(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (ctx.opset >= 20)
    return ctx.fail("DFT from opset 20 (axis as an input) is not supported");
  auto r = dft(ctx, *x, ctx.attrInt("axis", 1), ctx.attrInt("inverse", 0),
               ctx.attrInt("onesided", 0));
  if (failed(r))
    return failure();
  if (ctx.hasInput(1)) { // the signal length, which dft() has validated
    const HostTensor *length = ctx.hostInput(1);
    auto xt = cast<RankedTensorType>(x->getType());
    int64_t axis = *ctx.axis(ctx.attrInt("axis", 1), xt.getRank() - 1);
    if (!length || length->ints.size() != 1 || length->ints[0] != xt.getDimSize(axis))
      return ctx.fail("dft_length other than the signal length is not supported");
  }
  ctx.setOutput(0, *r);
  return success();
}

/// A scalar integer input: its constant value, or nullopt at run time.
std::optional<int64_t> hostScalar(ImportContext &ctx, size_t i) {
  const HostTensor *t = ctx.hostInput(i);
  if (!t || t->numElements() != 1 || t->isFloat())
    return std::nullopt;
  return t->ints[0];
}

/// STFT (opset 17): frames of frame_length samples every frame_step samples,
/// times the window, each transformed by a DFT (onesided by default). A
/// run-time frame_step or frame_length is the one value the declared output
/// shape allows, checked at run time.
/// The longest signal whose frame length and step STFT infers by search.
constexpr int64_t kMaxSearchedLength = 1 << 20;

LogicalResult importSTFT(ImportContext &ctx) {
  auto signal = ctx.input(0);
  if (failed(signal))
    return failure();
  auto st = cast<RankedTensorType>(signal->getType());
  if (st.getRank() != 3)
    return ctx.fail("STFT needs a signal [batch, length, 1 or 2]");
  int64_t length = st.getDimSize(1);
  bool onesided = ctx.attrInt("onesided", 1);
  Value window = ctx.optionalInput(2);
  std::optional<int64_t> step = hostScalar(ctx, 1), frameLength = hostScalar(ctx, 3);
  if (window) {
    if (cast<RankedTensorType>(window.getType()).getRank() != 1)
      return ctx.fail("STFT's window must be 1-D");
    frameLength = cast<RankedTensorType>(window.getType()).getDimSize(0);
  }
  if (!step || !frameLength) {
    auto declared = declaredFor(ctx, step ? "frame_length" : "frame_step");
    if (failed(declared))
      return failure();
    if (declared->size() != 4)
      return ctx.fail("the declared output shape of STFT must be 4-D");
    // The search below tries every frame length and step.
    if (ShapedType::isDynamic(length) || length > kMaxSearchedLength)
      return ctx.fail("STFT infers frame_length or frame_step only for static signals of at "
                      "most " + llvm::Twine(kMaxSearchedLength) + " samples");
    int64_t frames = (*declared)[1], bins = (*declared)[2];
    // Every (frame_length, frame_step) the declared frames and bins allow.
    std::vector<std::pair<int64_t, int64_t>> fits;
    for (int64_t fl = 1; fl <= length; ++fl) {
      if ((frameLength && fl != *frameLength) || (onesided ? fl / 2 + 1 : fl) != bins)
        continue;
      for (int64_t s = 1; s <= length; ++s)
        if ((!step || s == *step) && (length - fl) / s + 1 == frames)
          fits.emplace_back(fl, s);
    }
    if (fits.size() != 1)
      return failRuntimeOperand(ctx, step ? "frame_length" : "frame_step",
                                "the declared output shape does not fix the frames");
    Emitter e{ctx};
    auto check = [&](size_t input, StringRef what, int64_t value) -> LogicalResult {
      if (hostScalar(ctx, input) || !ctx.hasInput(input))
        return success();
      auto v = ctx.input(input);
      if (failed(v))
        return failure();
      auto eq = e.binary<k::EqualOp>(e.reshape(*v, {}), ctx.scalar(getElementTypeOrSelf(v->getType()),
                                                                   (double)value),
                                     ctx.b.getI1Type());
      if (failed(eq))
        return failure();
      guard(ctx, *eq, what, "must be " + llvm::Twine(value));
      return success();
    };
    frameLength = fits[0].first;
    step = fits[0].second;
    if (failed(check(1, "frame_step", *step)) || failed(check(3, "frame_length", *frameLength)))
      return failure();
  }
  int64_t frames = (length - *frameLength) / *step + 1;
  if (*frameLength < 1 || *step < 1 || frames < 1)
    return ctx.fail("frame_length and frame_step must be positive and fit the signal");
  // Frames by one gather along the signal axis: [batch, frames, frame_length, parts].
  std::vector<int64_t> starts;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < *frameLength; ++j)
      starts.push_back(f * *step + j);
  HostTensor index;
  index.dtype = onnx::TensorProto::INT64;
  index.shape = {frames, *frameLength};
  index.ints = starts;
  auto indices = ctx.materialize(index, "stft_frames");
  if (failed(indices))
    return failure();
  auto framedType = RankedTensorType::get({st.getDimSize(0), frames, *frameLength, st.getDimSize(2)},
                                          st.getElementType());
  Value framed = k::GatherOp::create(ctx.b, ctx.loc, framedType, *signal, *indices, 1);
  if (window) {
    Emitter e{ctx};
    auto weighted = e.binary<k::MulOp>(framed, e.reshape(window, {*frameLength, 1}));
    if (failed(weighted))
      return failure();
    framed = *weighted;
  }
  auto r = dft(ctx, framed, 2, /*inverse=*/false, onesided);
  if (failed(r))
    return failure();
  ctx.setOutput(0, *r);
  return success();
}

/// HannWindow, HammingWindow and BlackmanWindow: the generalized cosine
/// window a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with N = size
/// (periodic) or size - 1 (symmetric), computed at compile time. A run-time
/// size is the declared output length, checked at run time.
LogicalResult importCosineWindow(ImportContext &ctx, double a0, double a1, double a2) {
  int64_t size;
  if (const HostTensor *t = ctx.hostInput(0)) {
    if (t->numElements() != 1 || t->isFloat())
      return ctx.fail("size must be one integer");
    size = t->ints[0];
  } else {
    auto declared = declaredFor(ctx, "size");
    if (failed(declared))
      return failure();
    if (declared->size() != 1)
      return ctx.fail("the declared output shape of a window must be 1-D");
    size = (*declared)[0];
    if (failed(guardElements(ctx, 0, "size", {{size}})))
      return failure();
  }
  if (size < 0)
    return ctx.fail("size must not be negative");
  HostTensor r;
  r.dtype = ctx.attrInt("output_datatype", onnx::TensorProto::FLOAT);
  r.shape = {size};
  double n = ctx.attrInt("periodic", 1) ? size : size - 1;
  for (int64_t i = 0; i < size; ++i) {
    double phase = n > 0 ? 2 * M_PI * i / n : 0;
    double v = a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase);
    if (r.isFloat())
      r.floats.push_back(v);
    else
      r.ints.push_back((int64_t)v);
  }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

/// A static size an integer scalar input gives: its value when it is a
/// compile-time constant, else `declared` (the declared output dimension),
/// checked at run time to be one of `accepted(declared)`.
FailureOr<int64_t> sizeInput(ImportContext &ctx, size_t input, StringRef what,
                             std::optional<int64_t> declared,
                             function_ref<std::vector<int64_t>(int64_t)> accepted) {
  if (const HostTensor *t = ctx.hostInput(input)) {
    if (t->numElements() != 1 || t->isFloat())
      return ctx.fail(what + " must be one integer");
    return t->ints[0];
  }
  if (!declared || ShapedType::isDynamic(*declared))
    return ctx.fail("input '" + what + "' is only known at run time and the output's " +
                    "declared shape does not fix it");
  std::vector<std::vector<int64_t>> rows;
  for (int64_t v : accepted(*declared))
    rows.push_back({v});
  if (failed(guardElements(ctx, input, what, rows)))
    return failure();
  return rows[0][0];
}

/// MelWeightMatrix: triangular filters [dft_length / 2 + 1, num_mel_bins]
/// between mel-spaced frequencies, as ONNX's reference computes them (in
/// f64, the bin edges floored to spectrogram bins). The sizes come from
/// constants or the declared output shape; the edges and rates may be
/// run-time values.
LogicalResult importMelWeightMatrix(ImportContext &ctx) {
  auto declared = declaredShape(ctx, 0);
  if (declared && declared->size() != 2)
    return ctx.fail("the declared output of MelWeightMatrix must be 2-D");
  auto dim = [&](int i) -> std::optional<int64_t> {
    return declared ? std::optional<int64_t>((*declared)[i]) : std::nullopt;
  };
  auto mels = sizeInput(ctx, 0, "num_mel_bins", dim(1),
                        [](int64_t m) { return std::vector<int64_t>{m}; });
  if (failed(mels))
    return failure();
  // dft_length 2(b - 1) and 2(b - 1) + 1 both give b spectrogram bins.
  std::optional<int64_t> evenLength;
  if (dim(0))
    evenLength = 2 * *dim(0) - 2;
  auto dftLength = sizeInput(ctx, 1, "dft_length", evenLength,
                             [](int64_t n) { return std::vector<int64_t>{n, n + 1}; });
  if (failed(dftLength))
    return failure();
  int64_t m = *mels, bins = *dftLength / 2 + 1;
  if (m <= 0 || *dftLength <= 0 || m > (1 << 20) || *dftLength > (1 << 24))
    return ctx.fail("num_mel_bins and dft_length must be positive (and at most 2^20 and 2^24)");
  Emitter e{ctx};
  Type f64 = ctx.b.getF64Type();
  SmallVector<Value, 5> in;
  for (size_t i = 0; i < 5; ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    if (cast<RankedTensorType>(v->getType()).getNumElements() != 1)
      return ctx.fail("MelWeightMatrix's inputs must be scalars");
    in.push_back(e.reshape(e.castTo(*v, f64), {}));
  }
  auto c = [&](double v) { return ctx.scalar(f64, v); };
  // The operands are f64 and broadcast ([m + 2], [bins, 1], [1, m], scalars).
  auto add = [&](Value a, Value b) { return *e.binary<k::AddOp>(a, b); };
  auto sub = [&](Value a, Value b) { return *e.binary<k::SubOp>(a, b); };
  auto mul = [&](Value a, Value b) { return *e.binary<k::MulOp>(a, b); };
  auto div = [&](Value a, Value b) { return *e.binary<k::DivOp>(a, b); };
  // mel(f) = 2595 log10(1 + f / 700), and back.
  auto toMel = [&](Value hz) {
    Value l = e.unary<k::LogOp>(add(c(1), div(hz, c(700))));
    return mul(l, c(2595 / std::log(10.0)));
  };
  Value low = toMel(in[3]), high = toMel(in[4]);
  Value step = div(sub(high, low), c(double(m + 2)));
  HostTensor iota;
  iota.dtype = onnx::TensorProto::DOUBLE;
  iota.shape = {m + 2};
  for (int64_t i = 0; i < m + 2; ++i)
    iota.floats.push_back(i);
  auto points = ctx.materialize(iota, "mel_points");
  if (failed(points))
    return failure();
  Value mel = add(mul(*points, step), low);
  Value hz = mul(sub(e.unary<k::ExpOp>(mul(mel, c(std::log(10.0) / 2595))),
                            c(1)),
                 c(700));
  Value edges = e.unary<k::FloorOp>(
      div(mul(add(in[1], c(1)), hz), in[2]));
  auto edge = [&](int64_t first) { // edges[first : first + m] as [1, m]
    Value s = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({m}, f64), edges,
                                 ArrayRef<int64_t>{first}, ArrayRef<int64_t>{1});
    return e.reshape(s, {1, m});
  };
  Value left = edge(0), center = edge(1), right = edge(2);
  // As onnxruntime checks: both edge frequencies fall in a spectrogram bin.
  for (auto [input, name] : {std::pair{3, "lower_edge_hertz"}, {4, "upper_edge_hertz"}}) {
    Value index = e.unary<k::FloorOp>(div(mul(add(in[1], c(1)), in[input]), in[2]));
    Value inside = *e.binary<k::AndOp>(
        e.unary<k::NotOp>(*e.binary<k::LessOp>(index, c(0), ctx.b.getI1Type())),
        *e.binary<k::LessOp>(index, c(double(bins)), ctx.b.getI1Type()));
    assertAtRunTime(ctx, inside,
                    llvm::Twine(name) + " must lie in one of the " + llvm::Twine(bins) +
                        " spectrogram bins of dft_length at sample_rate");
  }
  HostTensor rows;
  rows.dtype = onnx::TensorProto::DOUBLE;
  rows.shape = {bins, 1};
  for (int64_t j = 0; j < bins; ++j)
    rows.floats.push_back(j);
  auto j = ctx.materialize(rows, "mel_rows");
  if (failed(j))
    return failure();
  auto shape = RankedTensorType::get({bins, m}, f64);
  auto less = [&](Value a, Value b) { return *e.binary<k::LessOp>(a, b, ctx.b.getI1Type()); };
  auto where = [&](Value cond, Value a, Value b) -> Value {
    return k::WhereOp::create(ctx.b, ctx.loc, shape, cond, a, b);
  };
  // 0 left of the filter, rising to 1 at its center, falling to 0 at its right edge.
  Value rising = div(sub(*j, left), sub(center, left));
  Value falling = div(sub(right, *j), sub(right, center));
  Value atCenter = *e.binary<k::EqualOp>(*j, center, ctx.b.getI1Type());
  Value w = where(less(*j, right), falling, c(0));
  w = where(atCenter, c(1), w);
  w = where(less(*j, center), rising, w);
  w = where(less(*j, left), c(0), w);
  Type out = elementTypeOf(ctx.b, ctx.attrInt("output_datatype", onnx::TensorProto::FLOAT));
  if (!out || !isa<FloatType>(out))
    return ctx.fail("output_datatype must be a floating-point type");
  ctx.setOutput(0, e.castTo(w, out));
  return success();
}

} // namespace

void registerSignalOps(ImportTable &t) {
  t["MelWeightMatrix"] = importMelWeightMatrix;
  t["DFT"] = importDFT;
  t["STFT"] = importSTFT;
  t["HannWindow"] = [](ImportContext &ctx) { return importCosineWindow(ctx, 0.5, 0.5, 0); };
  // ONNX's Hamming coefficients: alpha = 25/46, beta = 1 - alpha.
  t["HammingWindow"] = [](ImportContext &ctx) {
    return importCosineWindow(ctx, 25.0 / 46, 21.0 / 46, 0);
  };
  t["BlackmanWindow"] = [](ImportContext &ctx) {
    return importCosineWindow(ctx, 0.42, 0.5, 0.08);
  };
}

} // namespace kiln::onnx_frontend
