//===- ImportRNN.cpp - ONNX RNN, GRU and LSTM ------------------------------===//
//
// Recurrent layers over a static sequence length are unrolled at import:
// each step is a few matmuls and elementwise gates in kiln ops, so codegen
// fuses and tiles them like any other graph. Over a sequence length known
// only at run time, the same step is the body of an scf.for over the time
// steps, carrying h, c and the output sequence. Directions run
// independently and are stacked in the outputs as ONNX lays them out.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

enum class Cell { RNN, GRU, LSTM };

/// One direction's weights, transposed once: W^T [input, G*h], R^T [h, G*h];
/// the biases Wb, Rb [G*h] and peepholes P [3*h] when the node has them.
struct DirectionWeights {
  Value Wt, Rt, Wb, Rb, P;
};

struct Recurrence {
  ImportContext &ctx;
  Emitter e;
  Cell cell;
  Type et;
  int64_t seq, batch, hidden, gates;
  std::vector<std::string> activations;
  float clip;
  bool linearBeforeReset;

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
  /// Gate g of a [batch, G*h] value, or of a [G*h] vector.
  Value gate(Value v, int64_t g) { return slice(v, {0, g * hidden}, {batch, hidden}); }
  Value vecGate(Value v, int64_t g) { return slice(v, {g * hidden}, {hidden}); }

  /// v += bias, when the node has that bias.
  LogicalResult addBias(Value &v, Value bias) {
    if (!bias)
      return success();
    auto sum = add(v, bias);
    if (failed(sum))
      return failure();
    v = *sum;
    return success();
  }

  /// One time step of direction `w` on the input row xt2 [batch, input]:
  /// advances h (and c for LSTM).
  LogicalResult step(const DirectionWeights &w, Value xt2, Value &h, Value &c) {
    Value xw = matmul(xt2, w.Wt), hr = matmul(h, w.Rt);
    if (failed(addBias(xw, w.Wb)))
      return failure();
    if (cell == Cell::GRU) {
      // Gates z, r, h~; h~ uses (r * h) R_h^T or r * (h R_h^T + Rb_h).
      if (failed(addBias(hr, w.Rb)))
        return failure();
      auto zIn = add(gate(xw, 0), gate(hr, 0));
      auto rIn = add(gate(xw, 1), gate(hr, 1));
      if (failed(zIn) || failed(rIn))
        return failure();
      auto z = activate(0, *clipped(*zIn));
      auto rg = activate(0, *clipped(*rIn));
      if (failed(z) || failed(rg))
        return failure();
      FailureOr<Value> candidateIn;
      if (linearBeforeReset) {
        auto rh = mul(*rg, gate(hr, 2));
        if (failed(rh))
          return failure();
        candidateIn = add(gate(xw, 2), *rh);
      } else {
        auto rh = mul(*rg, h);
        if (failed(rh))
          return failure();
        Value Rh = slice(w.Rt, {0, 2 * hidden}, {hidden, hidden});
        Value hh = matmul(*rh, Rh);
        if (failed(addBias(hh, w.Rb ? vecGate(w.Rb, 2) : Value())))
          return failure();
        candidateIn = add(gate(xw, 2), hh);
      }
      if (failed(candidateIn))
        return failure();
      auto cand = activate(1, *clipped(*candidateIn));
      if (failed(cand))
        return failure();
      // h = (1 - z) * h~ + z * h
      auto oneMinusZ = e.binary<k::SubOp>(e.constant(*z, 1.0), *z);
      if (failed(oneMinusZ))
        return failure();
      auto a = mul(*oneMinusZ, *cand), b = mul(*z, h);
      if (failed(a) || failed(b))
        return failure();
      auto next = add(*a, *b);
      if (failed(next))
        return failure();
      h = *next;
    } else {
      auto pre = add(xw, hr);
      if (failed(pre))
        return failure();
      Value g = *pre;
      if (failed(addBias(g, w.Rb)))
        return failure();
      if (cell == Cell::RNN) {
        auto next = activate(0, *clipped(g));
        if (failed(next))
          return failure();
        h = *next;
      } else {
        // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
        auto peep = [&](Value in, int64_t pi, Value cellState) -> FailureOr<Value> {
          if (!w.P)
            return in;
          auto pc = mul(vecGate(w.P, pi), cellState);
          if (failed(pc))
            return failure();
          return add(in, *pc);
        };
        auto iIn = peep(gate(g, 0), 0, c);
        auto fIn = peep(gate(g, 2), 2, c);
        if (failed(iIn) || failed(fIn))
          return failure();
        auto i = activate(0, *clipped(*iIn));
        auto f = activate(0, *clipped(*fIn));
        auto cand = activate(1, *clipped(gate(g, 3)));
        if (failed(i) || failed(f) || failed(cand))
          return failure();
        auto fc = mul(*f, c), ic = mul(*i, *cand);
        if (failed(fc) || failed(ic))
          return failure();
        auto cNext = add(*fc, *ic);
        if (failed(cNext))
          return failure();
        c = *cNext;
        auto oIn = peep(gate(g, 1), 1, c);
        if (failed(oIn))
          return failure();
        auto o = activate(0, *clipped(*oIn));
        auto hc = activate(2, c);
        if (failed(o) || failed(hc))
          return failure();
        auto next = mul(*o, *hc);
        if (failed(next))
          return failure();
        h = *next;
      }
    }
    return success();
  }

  /// The steps over a sequence length known only at run time: an scf.for
  /// over X [seq, batch, input] carrying h, c and this direction's outputs
  /// [seq, batch, hidden], each step's h inserted at its time index.
  FailureOr<Value> loop(const DirectionWeights &w, Value X, bool reverse, Value &h, Value &c);
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

FailureOr<Value> Recurrence::loop(const DirectionWeights &w, Value X, bool reverse, Value &h,
                                  Value &c) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  int64_t input = cast<RankedTensorType>(X.getType()).getDimSize(2);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value steps = tensor::DimOp::create(b, loc, X, 0);
  SmallVector<Value> dynamicSizes = {steps};
  OpFoldResult rows = b.getIndexAttr(batch);
  if (ShapedType::isDynamic(batch)) {
    rows = tensor::DimOp::create(b, loc, X, 1).getResult();
    dynamicSizes.push_back(cast<Value>(rows));
  }
  auto outType = RankedTensorType::get({ShapedType::kDynamic, batch, hidden}, et);
  Value outputs = tensor::EmptyOp::create(b, loc, outType, dynamicSizes);
  auto forOp = scf::ForOp::create(b, loc, zero, steps, one, ValueRange{h, c, outputs});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    Value i = forOp.getInductionVar();
    Value t = reverse ? arith::SubIOp::create(
                            b, loc, arith::SubIOp::create(b, loc, steps, one), i)
                            .getResult()
                      : i;
    auto args = forOp.getRegionIterArgs();
    Value hNext = args[0], cNext = args[1];
    Value xt = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({batch, input}, et), X,
        ArrayRef<OpFoldResult>{t, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), rows, b.getIndexAttr(input)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
    if (failed(step(w, xt, hNext, cNext))) {
      b.setInsertionPoint(forOp);
      forOp.erase();
      return failure();
    }
    // The carried types stay those of the initial state.
    auto carried = [&](Value v, Value init) -> Value {
      return v.getType() == init.getType()
                 ? v
                 : tensor::CastOp::create(b, loc, init.getType(), v).getResult();
    };
    hNext = carried(hNext, h);
    cNext = carried(cNext, c);
    Value filled = tensor::InsertSliceOp::create(
        b, loc, hNext, args[2], ArrayRef<OpFoldResult>{t, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), rows, b.getIndexAttr(hidden)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
    scf::YieldOp::create(b, loc, ValueRange{hNext, cNext, filled});
  }
  h = forOp.getResult(0);
  c = forOp.getResult(1);
  return forOp.getResult(2);
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
  if (xType.isDynamicDim(2))
    return ctx.fail("X " + shapeText(xType.getShape()) + " needs a static input size");
  if (ctx.hasInput(4) && xType.isDynamicDim(seqDim))
    return ctx.fail("sequence_lens with a sequence length known only at run time is not "
                    "supported");
  bool batchFirst = ctx.attrInt("layout", 0) != 0;
  Emitter e{ctx};
  // sequence_lens as [batch, 1] i64: step t updates the batch rows with
  // t < length; the others keep their state and output zeros.
  Value lengths;
  if (ctx.hasInput(4)) {
    auto l = ctx.input(4);
    if (failed(l))
      return failure();
    auto lt = cast<RankedTensorType>(l->getType());
    if (lt.getRank() != 1 || !lt.getElementType().isSignlessInteger())
      return ctx.fail("sequence_lens must be a 1-D integer tensor");
    lengths = e.reshape(e.castTo(*l, ctx.b.getI64Type()), {lt.getDimSize(0), 1});
  }
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
  if (seq == 0) // a dynamic one runs no step when it is empty
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
  Recurrence rc{ctx,    e,  cell, et, seq, batch, hidden, gates, {}, ctx.attrFloat("clip", 0.0f),
                ctx.attrInt("linear_before_reset", 0) != 0};
  bool dynamicSeq = ShapedType::isDynamic(seq);
  // Y's parts: per (step, direction) when unrolled, per direction in a loop.
  SmallVector<Value> allY(dynamicSeq ? dirs : seq * dirs), lastH(dirs), lastC(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    rc.activations.assign(acts.begin() + d * perDir, acts.begin() + (d + 1) * perDir);
    bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    // Per-direction weights, transposed once: W^T [input, G*h], R^T [h, G*h].
    DirectionWeights weights;
    weights.Wt = rc.transpose2d(e.reshape(rc.slice(*w, {d, 0, 0}, {1, gates * hidden, input}),
                                          {gates * hidden, input}));
    weights.Rt = rc.transpose2d(e.reshape(rc.slice(*r, {d, 0, 0}, {1, gates * hidden, hidden}),
                                          {gates * hidden, hidden}));
    if (ctx.hasInput(3)) {
      auto bias = ctx.input(3);
      if (failed(bias))
        return failure();
      weights.Wb = e.reshape(rc.slice(*bias, {d, 0}, {1, gates * hidden}), {gates * hidden});
      weights.Rb =
          e.reshape(rc.slice(*bias, {d, gates * hidden}, {1, gates * hidden}), {gates * hidden});
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
    if (cell == Cell::LSTM && ctx.hasInput(7)) {
      auto p = ctx.input(7);
      if (failed(p))
        return failure();
      weights.P = e.reshape(rc.slice(*p, {d, 0}, {1, 3 * hidden}), {3 * hidden});
    }
    if (dynamicSeq) {
      auto ys = rc.loop(weights, X, reverse, h, c);
      if (failed(ys))
        return failure();
      allY[d] = e.reshape(*ys, {seq, 1, batch, hidden});
    }
    for (int64_t step = 0; step < seq && !dynamicSeq; ++step) {
      int64_t t = reverse ? seq - 1 - step : step;
      Value xt2 = e.reshape(rc.slice(X, {t, 0, 0}, {1, batch, input}), {batch, input});
      Value before = h, cellBefore = c;
      if (failed(rc.step(weights, xt2, h, c)))
        return failure();
      Value y = h;
      if (lengths) {
        auto running = e.binary<k::LessOp>(ctx.scalar(ctx.b.getI64Type(), t), lengths,
                                           ctx.b.getI1Type());
        if (failed(running))
          return failure();
        auto pick = [&](Value a, Value b) -> Value {
          return k::WhereOp::create(ctx.b, ctx.loc, a.getType(), *running, a, b);
        };
        y = pick(h, ctx.scalar(et, 0.0));
        h = pick(h, before);
        if (cell == Cell::LSTM)
          c = pick(c, cellBefore);
      }
      allY[t * dirs + d] = e.reshape(y, {1, 1, batch, hidden});
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
  for (int64_t t = 0; t < seq && !dynamicSeq; ++t)
    steps.push_back(concat(ArrayRef(allY).slice(t * dirs, dirs), 1));
  Value Y = dynamicSeq ? concat(allY, 1) : concat(steps, 0);
  Value Yh = concat(lastH, 0), Yc = concat(lastC, 0);
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
