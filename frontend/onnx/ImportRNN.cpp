//===- ImportRNN.cpp - ONNX RNN, GRU and LSTM ------------------------------===//
//
// Recurrent layers are unrolled over the (static) sequence length at import:
// each step is a few matmuls and elementwise gates in kiln ops, so codegen
// fuses and tiles them like any other graph. Directions run independently
// and are stacked in the outputs as ONNX lays them out.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

enum class Cell { RNN, GRU, LSTM };

struct Recurrence {
  ImportContext &ctx;
  Emitter e;
  Cell cell;
  Type et;
  int64_t seq, batch, hidden, gates;
  std::vector<std::string> activations;
  float clip;

  Value slice(Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> steps(starts.size(), 1);
    return k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(sizes, et), v, starts,
                              steps);
  }
  Value transpose2d(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return k::TransposeOp::create(ctx.b, ctx.loc,
                                  RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, et),
                                  v, ArrayRef<int64_t>{1, 0});
  }
  FailureOr<Value> add(Value a, Value b) { return e.binary<k::AddOp>(a, b); }
  FailureOr<Value> mul(Value a, Value b) { return e.binary<k::MulOp>(a, b); }
  Value matmul(Value a, Value b) {
    auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
    return k::MatMulOp::create(ctx.b, ctx.loc,
                               RankedTensorType::get({at.getDimSize(0), bt.getDimSize(1)}, et), a,
                               b);
  }
  /// The i-th activation of this direction (f, g, h for LSTM; f, g for GRU).
  FailureOr<Value> activate(size_t i, Value x) {
    const std::string &name = activations[i];
    if (name == "Sigmoid")
      return e.unary<k::SigmoidOp>(x);
    if (name == "Tanh")
      return e.unary<k::TanhOp>(x);
    if (name == "Relu")
      return e.unary<k::ReluOp>(x);
    return ctx.fail("activation '" + name + "' is not supported");
  }
  FailureOr<Value> clipped(Value x) {
    if (clip <= 0)
      return x;
    return k::ClipOp::create(ctx.b, ctx.loc, x.getType(), x, ctx.b.getF32FloatAttr(-clip),
                             ctx.b.getF32FloatAttr(clip))
        .getResult();
  }
};

std::vector<std::string> stringsAttr(ImportContext &ctx, llvm::StringRef name) {
  for (const auto &a : ctx.node->attribute())
    if (a.name() == name)
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
  return {};
}

/// Whether `v` is absent or a tensor of `shape`, where a dynamic dimension
/// (the batch) matches a dynamic one.
bool hasShape(ImportContext &ctx, size_t input, ArrayRef<int64_t> shape) {
  if (!ctx.hasInput(input))
    return true;
  auto t = ctx.inputType(input);
  return succeeded(t) && t->getShape() == shape;
}

LogicalResult importRecurrence(ImportContext &ctx, Cell cell) {
  auto x = ctx.input(0), w = ctx.input(1), r = ctx.input(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  int64_t seqDim = ctx.attrInt("layout", 0) ? 1 : 0;
  if (xType.getRank() != 3 || cast<RankedTensorType>(w->getType()).getRank() != 3 ||
      !cast<RankedTensorType>(w->getType()).hasStaticShape())
    return ctx.fail("X and W must be 3-D tensors, W a static one");
  if (xType.isDynamicDim(seqDim) || xType.isDynamicDim(2))
    return ctx.fail("X " + shapeText(xType.getShape()) +
                    " needs a static sequence length and input size (only the batch may be "
                    "dynamic)");
  if (ctx.hasInput(4)) {
    const HostTensor *lens = ctx.hostInput(4);
    if (!lens ||
        llvm::any_of(lens->ints, [&](int64_t l) { return l != xType.getDimSize(seqDim); }))
      return ctx.fail("sequence_lens shorter than the sequence are not supported");
  }
  bool batchFirst = ctx.attrInt("layout", 0) != 0;
  Emitter e{ctx};
  Value X = *x;
  auto xt = cast<RankedTensorType>(X.getType());
  Type et = xt.getElementType();
  if (batchFirst) // [batch, seq, input] -> [seq, batch, input]
    X = k::TransposeOp::create(
        ctx.b, ctx.loc,
        RankedTensorType::get({xt.getDimSize(1), xt.getDimSize(0), xt.getDimSize(2)}, et), X,
        ArrayRef<int64_t>{1, 0, 2});
  xt = cast<RankedTensorType>(X.getType());
  int64_t seq = xt.getDimSize(0), batch = xt.getDimSize(1), input = xt.getDimSize(2);
  int64_t hidden = ctx.attrInt("hidden_size", 0);
  int64_t gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  auto wt = cast<RankedTensorType>(w->getType());
  if (!hidden)
    hidden = wt.getDimSize(1) / gates;
  int64_t dirs = wt.getDimSize(0);
  if (seq == 0)
    return ctx.fail("an empty sequence is not supported");
  if (hidden <= 0 || dirs <= 0 || dirs > 2 || wt.getDimSize(1) != gates * hidden ||
      wt.getDimSize(2) != input)
    return ctx.fail("W " + shapeText(wt.getShape()) + " does not match hidden_size " +
                    llvm::Twine(hidden) + " and input size " + llvm::Twine(input));
  // R, B, initial_h, initial_c, P: [dirs, G*h, h], [dirs, 2*G*h], [dirs, batch, h] x 2, [dirs, 3*h].
  if (!hasShape(ctx, 2, {dirs, gates * hidden, hidden}) ||
      !hasShape(ctx, 3, {dirs, 2 * gates * hidden}) || !hasShape(ctx, 5, {dirs, batch, hidden}) ||
      (cell == Cell::LSTM && (!hasShape(ctx, 6, {dirs, batch, hidden}) ||
                              !hasShape(ctx, 7, {dirs, 3 * hidden}))))
    return ctx.fail("R, B, initial_h, initial_c or P does not have the shape W, X and "
                    "hidden_size imply");
  std::string direction = ctx.attrString("direction", "forward");
  if ((direction == "bidirectional") != (dirs == 2))
    return ctx.fail("direction does not match the number of weight sets");
  if (ctx.attrInt("input_forget", 0))
    return ctx.fail("input_forget is not supported");
  std::vector<std::string> acts = stringsAttr(ctx, "activations");
  size_t perDir = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
  if (acts.empty())
    for (int64_t d = 0; d < dirs; ++d)
      for (const char *a : cell == Cell::LSTM  ? std::vector<const char *>{"Sigmoid", "Tanh", "Tanh"}
                           : cell == Cell::GRU ? std::vector<const char *>{"Sigmoid", "Tanh"}
                                               : std::vector<const char *>{"Tanh"})
        acts.push_back(a);
  if (acts.size() != perDir * dirs)
    return ctx.fail("wrong number of activations");
  Recurrence rc{ctx, e, cell, et, seq, batch, hidden, gates, {}, ctx.attrFloat("clip", 0.0f)};
  bool linearBeforeReset = ctx.attrInt("linear_before_reset", 0);

  SmallVector<Value> allY(seq * dirs), lastH(dirs), lastC(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    rc.activations.assign(acts.begin() + d * perDir, acts.begin() + (d + 1) * perDir);
    bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    // Per-direction weights, transposed once: W^T [input, G*h], R^T [h, G*h].
    Value Wt = rc.transpose2d(e.reshape(rc.slice(*w, {d, 0, 0}, {1, gates * hidden, input}),
                                        {gates * hidden, input}));
    Value Rt = rc.transpose2d(e.reshape(rc.slice(*r, {d, 0, 0}, {1, gates * hidden, hidden}),
                                        {gates * hidden, hidden}));
    Value Wb, Rb;
    if (ctx.hasInput(3)) {
      auto bias = ctx.input(3);
      if (failed(bias))
        return failure();
      Wb = e.reshape(rc.slice(*bias, {d, 0}, {1, gates * hidden}), {gates * hidden});
      Rb = e.reshape(rc.slice(*bias, {d, gates * hidden}, {1, gates * hidden}), {gates * hidden});
    }
    auto initial = [&](size_t i) -> FailureOr<Value> {
      if (!ctx.hasInput(i))
        return ctx.scalar(et, 0.0);
      auto v = ctx.input(i);
      if (failed(v))
        return failure();
      return e.reshape(rc.slice(*v, {d, 0, 0}, {1, batch, hidden}), {batch, hidden});
    };
    auto H = initial(5);
    auto C = initial(6);
    if (failed(H) || failed(C))
      return failure();
    Value h = *H, c = *C;
    if (cast<RankedTensorType>(h.getType()).getRank() == 0) {
      if (ShapedType::isDynamic(batch))
        return ctx.fail("a dynamic batch needs initial_h (and for LSTM initial_c)");
      h = k::ExpandOp::create(ctx.b, ctx.loc, RankedTensorType::get({batch, hidden}, et), h);
      c = k::ExpandOp::create(ctx.b, ctx.loc, RankedTensorType::get({batch, hidden}, et), c);
    }
    Value P;
    if (cell == Cell::LSTM && ctx.hasInput(7)) {
      auto p = ctx.input(7);
      if (failed(p))
        return failure();
      P = e.reshape(rc.slice(*p, {d, 0}, {1, 3 * hidden}), {3 * hidden});
    }
    auto gate = [&](Value v, int64_t g) { return rc.slice(v, {0, g * hidden}, {batch, hidden}); };
    auto vecGate = [&](Value v, int64_t g) {
      return rc.slice(v, {g * hidden}, {hidden});
    };
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = reverse ? seq - 1 - step : step;
      Value xt2 = e.reshape(rc.slice(X, {t, 0, 0}, {1, batch, input}), {batch, input});
      Value xw = rc.matmul(xt2, Wt), hr = rc.matmul(h, Rt);
      if (Wb) {
        auto a = rc.add(xw, Wb);
        if (failed(a))
          return failure();
        xw = *a;
      }
      if (cell == Cell::GRU) {
        // Gates z, r, h~; h~ uses (r * h) R_h^T or r * (h R_h^T + Rb_h).
        if (Rb) {
          auto a = rc.add(hr, Rb);
          if (failed(a))
            return failure();
          hr = *a;
        }
        auto zIn = rc.add(gate(xw, 0), gate(hr, 0));
        auto rIn = rc.add(gate(xw, 1), gate(hr, 1));
        if (failed(zIn) || failed(rIn))
          return failure();
        auto z = rc.activate(0, *rc.clipped(*zIn));
        auto rg = rc.activate(0, *rc.clipped(*rIn));
        if (failed(z) || failed(rg))
          return failure();
        FailureOr<Value> candidateIn;
        if (linearBeforeReset) {
          auto rh = rc.mul(*rg, gate(hr, 2));
          if (failed(rh))
            return failure();
          candidateIn = rc.add(gate(xw, 2), *rh);
        } else {
          auto rh = rc.mul(*rg, h);
          if (failed(rh))
            return failure();
          Value Rh = rc.slice(Rt, {0, 2 * hidden}, {hidden, hidden});
          Value hh = rc.matmul(*rh, Rh);
          if (Rb) {
            auto a = rc.add(hh, vecGate(Rb, 2));
            if (failed(a))
              return failure();
            hh = *a;
          }
          candidateIn = rc.add(gate(xw, 2), hh);
        }
        if (failed(candidateIn))
          return failure();
        auto cand = rc.activate(1, *rc.clipped(*candidateIn));
        if (failed(cand))
          return failure();
        // h = (1 - z) * h~ + z * h
        auto oneMinusZ = e.binary<k::SubOp>(e.constant(*z, 1.0), *z);
        if (failed(oneMinusZ))
          return failure();
        auto a = rc.mul(*oneMinusZ, *cand), b = rc.mul(*z, h);
        if (failed(a) || failed(b))
          return failure();
        auto next = rc.add(*a, *b);
        if (failed(next))
          return failure();
        h = *next;
      } else {
        auto pre = rc.add(xw, hr);
        if (failed(pre))
          return failure();
        Value g = *pre;
        if (Rb) {
          auto a = rc.add(g, Rb);
          if (failed(a))
            return failure();
          g = *a;
        }
        if (cell == Cell::RNN) {
          auto next = rc.activate(0, *rc.clipped(g));
          if (failed(next))
            return failure();
          h = *next;
        } else {
          // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
          auto peep = [&](Value in, int64_t pi, Value cellState) -> FailureOr<Value> {
            if (!P)
              return in;
            auto pc = rc.mul(vecGate(P, pi), cellState);
            if (failed(pc))
              return failure();
            return rc.add(in, *pc);
          };
          auto iIn = peep(gate(g, 0), 0, c);
          auto fIn = peep(gate(g, 2), 2, c);
          if (failed(iIn) || failed(fIn))
            return failure();
          auto i = rc.activate(0, *rc.clipped(*iIn));
          auto f = rc.activate(0, *rc.clipped(*fIn));
          auto cand = rc.activate(1, *rc.clipped(gate(g, 3)));
          if (failed(i) || failed(f) || failed(cand))
            return failure();
          auto fc = rc.mul(*f, c), ic = rc.mul(*i, *cand);
          if (failed(fc) || failed(ic))
            return failure();
          auto cNext = rc.add(*fc, *ic);
          if (failed(cNext))
            return failure();
          c = *cNext;
          auto oIn = peep(gate(g, 1), 1, c);
          if (failed(oIn))
            return failure();
          auto o = rc.activate(0, *rc.clipped(*oIn));
          auto hc = rc.activate(2, c);
          if (failed(o) || failed(hc))
            return failure();
          auto next = rc.mul(*o, *hc);
          if (failed(next))
            return failure();
          h = *next;
        }
      }
      allY[t * dirs + d] = e.reshape(h, {1, 1, batch, hidden});
    }
    lastH[d] = e.reshape(h, {1, batch, hidden});
    lastC[d] = e.reshape(c, {1, batch, hidden});
  }
  auto concat = [&](ArrayRef<Value> parts, int64_t axis) -> Value {
    if (parts.size() == 1)
      return parts[0];
    SmallVector<int64_t> shape(cast<RankedTensorType>(parts[0].getType()).getShape());
    shape[axis] *= parts.size();
    return k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et),
                               SmallVector<Value>(parts), axis);
  };
  // Y [seq, dirs, batch, hidden]: concatenate directions, then steps.
  SmallVector<Value> steps;
  for (int64_t t = 0; t < seq; ++t)
    steps.push_back(concat(ArrayRef(allY).slice(t * dirs, dirs), 1));
  Value Y = concat(steps, 0), Yh = concat(lastH, 0), Yc = concat(lastC, 0);
  if (batchFirst) {
    Y = k::TransposeOp::create(ctx.b, ctx.loc,
                               RankedTensorType::get({batch, seq, dirs, hidden}, et), Y,
                               ArrayRef<int64_t>{2, 0, 1, 3});
    auto swap = [&](Value v) -> Value {
      return k::TransposeOp::create(ctx.b, ctx.loc,
                                    RankedTensorType::get({batch, dirs, hidden}, et), v,
                                    ArrayRef<int64_t>{1, 0, 2});
    };
    Yh = swap(Yh);
    Yc = swap(Yc);
  }
  ctx.setOutput(0, Y);
  ctx.setOutput(1, Yh);
  if (cell == Cell::LSTM)
    ctx.setOutput(2, Yc);
  return success();
}

} // namespace

void registerRNNOps(ImportTable &t) {
  t["RNN"] = [](ImportContext &c) { return importRecurrence(c, Cell::RNN); };
  t["GRU"] = [](ImportContext &c) { return importRecurrence(c, Cell::GRU); };
  t["LSTM"] = [](ImportContext &c) { return importRecurrence(c, Cell::LSTM); };
}

} // namespace kiln::onnx_frontend
