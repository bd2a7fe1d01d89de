//===- ShapeOperands.cpp - shape operands known only at run time ----------===//
#include "frontend/onnx/ShapeOperands.h"

#include "mlir/IR/Matchers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

std::optional<std::vector<int64_t>> declaredShape(const ImportContext &ctx, size_t output) {
  if (output >= (size_t)ctx.node->output_size())
    return std::nullopt;
  auto it = ctx.declaredShapes.find(ctx.node->output(output));
  if (it == ctx.declaredShapes.end())
    return std::nullopt;
  return it->second;
}

LogicalResult failRuntimeOperand(ImportContext &ctx, StringRef what, const llvm::Twine &why) {
  return ctx.fail("input '" + what + "' is only known at run time and " + why +
                  " (run-time shapes need dynamic shapes, which are not supported yet)");
}

FailureOr<std::vector<int64_t>> declaredFor(ImportContext &ctx, StringRef what) {
  auto declared = declaredShape(ctx, 0);
  if (!declared)
    return failRuntimeOperand(ctx, what, "the node's output has no declared static shape");
  return *declared;
}

FailureOr<int64_t> operandLength(ImportContext &ctx, size_t input) {
  auto type = ctx.inputType(input);
  if (failed(type))
    return failure();
  return type->getNumElements();
}

FailureOr<std::vector<int64_t>> declaredPerDimension(ImportContext &ctx, size_t input,
                                                     StringRef what) {
  auto declared = declaredFor(ctx, what);
  auto length = operandLength(ctx, input);
  if (failed(declared) || failed(length))
    return failure();
  if (*length != (int64_t)declared->size())
    return failRuntimeOperand(ctx, what, "its length differs from the declared output rank");
  return *declared;
}

FailureOr<std::vector<int64_t>> runtimeShapeOperand(ImportContext &ctx, size_t input,
                                                    StringRef what) {
  auto declared = declaredPerDimension(ctx, input, what);
  if (failed(declared) || failed(guardElements(ctx, input, what, {*declared})))
    return failure();
  return *declared;
}

std::optional<SmallVector<ShapeElement>> shapeElements(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() > 1 || !type.hasStaticShape() ||
      !isa<IntegerType>(type.getElementType()) || type.getNumElements() > 64)
    return std::nullopt;
  SmallVector<ShapeElement> unknown(type.getNumElements());
  Operation *op = v.getDefiningOp();
  if (!op)
    return unknown;
  DenseIntElementsAttr ints;
  if (matchPattern(v, m_Constant(&ints))) {
    SmallVector<ShapeElement> known;
    for (const APInt &i : ints.getValues<APInt>())
      known.push_back({i.getSExtValue(), {}, -1});
    return known;
  }
  if (auto shape = dyn_cast<k::ShapeOp>(op)) {
    auto in = cast<RankedTensorType>(shape.getInput().getType());
    SmallVector<ShapeElement> known;
    for (int64_t d = 0; d < in.getRank(); ++d)
      known.push_back(in.isDynamicDim(d) ? ShapeElement{std::nullopt, shape.getInput(), d}
                                         : ShapeElement{in.getDimSize(d), {}, -1});
    return known;
  }
  // Reshapes between 0-D and 1-D and integer casts keep the elements.
  auto reshape = dyn_cast<k::ReshapeOp>(op);
  if ((reshape && !reshape.getShape()) || isa<k::CastOp>(op)) {
    auto in = shapeElements(op->getOperand(0));
    return in && in->size() == unknown.size() ? *in : unknown;
  }
  if (auto concat = dyn_cast<k::ConcatOp>(op)) {
    SmallVector<ShapeElement> known;
    for (Value in : concat.getInputs()) {
      auto part = shapeElements(in);
      if (!part)
        return unknown;
      known.append(*part);
    }
    return known;
  }
  if (auto gather = dyn_cast<k::GatherOp>(op)) {
    auto data = shapeElements(gather.getData()), indices = shapeElements(gather.getIndices());
    if (!data || !indices || gather.getAxis() != 0)
      return unknown;
    SmallVector<ShapeElement> known;
    for (const ShapeElement &i : *indices) {
      int64_t n = data->size(), at = i.constant.value_or(n);
      at = at < 0 ? at + n : at;
      known.push_back(at >= 0 && at < n ? (*data)[at] : ShapeElement{});
    }
    return known;
  }
  if (auto slice = dyn_cast<k::SliceOp>(op)) {
    auto data = shapeElements(slice.getInput());
    if (!data || slice.getStarts().size() != 1)
      return unknown;
    SmallVector<ShapeElement> known;
    for (int64_t i = 0; i < (int64_t)unknown.size(); ++i)
      known.push_back((*data)[slice.getStarts()[0] + i * slice.getSteps()[0]]);
    return known;
  }
  return unknown;
}

/// "input 'what' <requirement>, as the declared output shape [..] implies".
static std::string guardMessage(const ImportContext &ctx, StringRef what,
                                const llvm::Twine &requirement) {
  std::string declared = "?";
  if (auto shape = declaredShape(ctx, 0))
    declared = shapeText(*shape);
  return ("input '" + what + "' " + requirement + ", as the declared output shape " + declared +
          " implies")
      .str();
}

/// Input `input` as a 1-D i64 tensor (floats are truncated, as OneHot's
/// depth is).
FailureOr<Value> int64Operand(ImportContext &ctx, size_t input, StringRef what) {
  auto v = ctx.input(input);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (type.getElementType().isInteger(1))
    return ctx.fail("input '" + what + "' must be a number tensor");
  if (!type.hasStaticShape())
    return ctx.fail("input '" + what + "' must have a static shape, got " +
                    shapeText(type.getShape()));
  Emitter e{ctx};
  Value x = type.getElementType().isSignlessInteger(64)
                ? *v
                : e.castTo(*v, ctx.b.getI64Type());
  return e.reshape(x, {type.getNumElements()});
}

Value int64Constant(ImportContext &ctx, ArrayRef<int64_t> values, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.dtype = onnx::TensorProto::INT64;
  t.shape.assign(shape.begin(), shape.end());
  t.ints.assign(values.begin(), values.end());
  return *ctx.materialize(t, "guard");
}

template <typename Op>
static Value compare(ImportContext &ctx, Value a, Value b) {
  Emitter e{ctx};
  return *e.binary<Op>(a, b, ctx.b.getI1Type());
}

Value dimEquals(ImportContext &ctx, Value x, int64_t dim, int64_t size) {
  auto i64 = ctx.b.getI64Type();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  Value shape = k::ShapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({rank}, i64), x);
  Value d = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({1}, i64), shape,
                               ArrayRef<int64_t>{dim}, ArrayRef<int64_t>{1});
  return compare<k::EqualOp>(ctx, Emitter{ctx}.reshape(d, {}), int64Constant(ctx, {size}, {}));
}

namespace {
/// Elementwise i64 arithmetic on small run-time tensors, as kiln ops. Every
/// operand is i64, so the broadcasting builders cannot fail.
struct IntMath {
  ImportContext &ctx;
  Emitter e{ctx};

  Value constant(ArrayRef<int64_t> values, ArrayRef<int64_t> shape) {
    return int64Constant(ctx, values, shape);
  }
  Value scalar(int64_t v) { return constant({v}, {}); }
  template <typename Op> Value apply(Value a, Value b) { return *e.binary<Op>(a, b); }
  template <typename Op> Value test(Value a, Value b) { return compare<Op>(ctx, a, b); }
  Value add(Value a, Value b) { return apply<k::AddOp>(a, b); }
  Value sub(Value a, Value b) { return apply<k::SubOp>(a, b); }
  Value mul(Value a, Value b) { return apply<k::MulOp>(a, b); }
  Value clamp(Value v, Value lo, Value hi) {
    return apply<k::MinOp>(apply<k::MaxOp>(v, lo), hi);
  }
  /// cond ? a : b, all of one shape.
  Value select(Value cond, Value a, Value b) {
    return k::WhereOp::create(ctx.b, ctx.loc, a.getType(), cond, a, b);
  }
  /// Python-style index: negative values count from `size`.
  Value wrap(Value v, Value size) {
    return select(test<k::LessOp>(v, scalar(0)), add(v, size), v);
  }
  Value sumAlong(Value v, int64_t axis) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + axis);
    return k::ReduceOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, type.getElementType()),
                               v, "sum", ArrayRef<int64_t>{axis}, false);
  }
  Value toInt(Value i1) { return e.castTo(i1, ctx.b.getI64Type()); }
  /// Elementwise: whether v equals one of `set` (null for an empty set).
  Value isAnyOf(Value v, ArrayRef<int64_t> set) {
    Value any;
    for (int64_t x : set) {
      Value eq = test<k::EqualOp>(v, scalar(x));
      any = any ? test<k::OrOp>(any, eq) : eq;
    }
    return any;
  }
};

std::vector<int64_t> iotaValues(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i;
  return v;
}
} // namespace

void assertAtRunTime(ImportContext &ctx, Value condition, const llvm::Twine &message) {
  std::string text =
      ("node '" + ctx.node->name() + "' (" + ctx.node->op_type() + "): " + message).str();
  k::AssertOp::create(ctx.b, ctx.loc, condition, ctx.b.getStringAttr(text));
}

void guard(ImportContext &ctx, Value condition, StringRef what, const llvm::Twine &requirement) {
  assertAtRunTime(ctx, condition, guardMessage(ctx, what, requirement));
}

LogicalResult guardElements(ImportContext &ctx, size_t input, StringRef what,
                            ArrayRef<std::vector<int64_t>> accepted) {
  auto v = int64Operand(ctx, input, what);
  if (failed(v))
    return failure();
  int64_t n = cast<RankedTensorType>(v->getType()).getDimSize(0);
  Value ok;
  for (const auto &row : accepted) {
    assert((int64_t)row.size() == n && "one accepted value per element");
    Value eq = compare<k::EqualOp>(ctx, *v, int64Constant(ctx, row, {n}));
    ok = ok ? compare<k::OrOp>(ctx, ok, eq) : eq;
  }
  guard(ctx, ok, what, "must be " + shapeText(accepted[0]));
  return success();
}

LogicalResult guardAxes(ImportContext &ctx, size_t input, StringRef what, int64_t rank,
                        ArrayRef<int64_t> required, ArrayRef<int64_t> allowed) {
  auto v = int64Operand(ctx, input, what);
  if (failed(v))
    return failure();
  int64_t n = cast<RankedTensorType>(v->getType()).getDimSize(0);
  std::string requirement = required.empty() ? "must name distinct axes among " +
                                                   shapeText(allowed)
                                             : "must name the axes " + shapeText(required);
  if (!required.empty() && allowed.size() > required.size())
    requirement += " (and may name others of " + shapeText(allowed) + ")";
  std::string message = guardMessage(ctx, what, requirement);
  IntMath m{ctx};
  Value axes = m.wrap(*v, m.scalar(rank));
  if (n == 0) {
    if (!required.empty())
      return ctx.fail("input '" + what + "' is empty but must name the axes " +
                      shapeText(required));
    return success();
  }
  // Every axis is allowed ...
  Value inAllowed = m.isAnyOf(axes, allowed);
  if (!inAllowed)
    return ctx.fail("input '" + what + "' names axes but none may be reduced");
  assertAtRunTime(ctx, inAllowed, message);
  // ... named once (each row of axes == axes^T has exactly one match) ...
  if (n > 1) {
    Value pairs = m.test<k::EqualOp>(m.e.reshape(axes, {n, 1}), m.e.reshape(axes, {1, n}));
    assertAtRunTime(ctx, m.test<k::EqualOp>(m.sumAlong(m.toInt(pairs), 1), m.scalar(1)), message);
  }
  // ... and every required axis is present.
  for (int64_t r : required)
    assertAtRunTime(
        ctx, m.test<k::EqualOp>(m.e.sumAll(m.toInt(m.isAnyOf(axes, {r}))), m.scalar(1)), message);
  return success();
}

namespace {
Value window(ImportContext &ctx, Value x, ArrayRef<int64_t> shape, Value starts, Value steps,
             Value padding, StringRef mode = "constant") {
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(x.getType()));
  return k::WindowOp::create(ctx.b, ctx.loc, type, x, starts, steps, padding, mode);
}
} // namespace

LogicalResult importRuntimeSlice(ImportContext &ctx) {
  auto declared = declaredFor(ctx, "starts");
  auto x = ctx.input(0);
  auto starts = int64Operand(ctx, 1, "starts"), ends = int64Operand(ctx, 2, "ends");
  if (failed(declared) || failed(x) || failed(starts) || failed(ends))
    return failure();
  ArrayRef<int64_t> in = cast<RankedTensorType>(x->getType()).getShape();
  int64_t rank = in.size(), n = cast<RankedTensorType>(starts->getType()).getNumElements();
  if ((int64_t)declared->size() != rank)
    return ctx.fail("the declared output rank differs from the input rank");
  IntMath m{ctx};
  FailureOr<Value> axes = ctx.hasInput(3) ? int64Operand(ctx, 3, "axes")
                                          : FailureOr<Value>(m.constant(iotaValues(n), {n}));
  FailureOr<Value> steps = ctx.hasInput(4) ? int64Operand(ctx, 4, "steps")
                                           : FailureOr<Value>(m.constant(std::vector<int64_t>(n, 1), {n}));
  if (failed(axes) || failed(steps))
    return failure();
  for (Value v : {*ends, *axes, *steps})
    if (cast<RankedTensorType>(v.getType()).getNumElements() != n)
      return ctx.fail("starts, ends, axes and steps must have the same length");

  // onehot[j][d]: entry j slices dimension d.
  Value axis = m.wrap(*axes, m.scalar(rank));
  Value onehot = m.toInt(m.test<k::EqualOp>(m.e.reshape(axis, {n, 1}),
                                            m.constant(iotaValues(rank), {1, rank})));
  Value dim = m.sumAlong(m.mul(onehot, m.constant(in, {1, rank})), 1);
  Value forward = m.test<k::GreaterOp>(*steps, m.scalar(0));
  Value zero = m.scalar(0), last = m.sub(dim, m.scalar(1));
  // Bounds are clamped to [0, dim] going forward; going backward, starts to
  // [0, dim-1] and ends to [-1, dim-1], as onnxruntime does.
  Value begin = m.wrap(*starts, dim);
  begin = m.select(forward, m.clamp(begin, zero, dim), m.clamp(begin, zero, last));
  Value end = m.wrap(*ends, dim);
  end = m.select(forward, m.clamp(end, zero, dim), m.clamp(end, m.scalar(-1), last));
  Type f64 = ctx.b.getF64Type();
  Value count = *m.e.binary<k::DivOp>(m.e.castTo(m.sub(end, begin), f64), m.e.castTo(*steps, f64));
  count = *m.e.binary<k::MaxOp>(m.e.unary<k::CeilOp>(count), ctx.scalar(f64, 0));
  Value wanted = m.sumAlong(m.mul(onehot, m.constant(*declared, {1, rank})), 1);
  std::string requirement = "(with 'ends', 'axes' and 'steps') must select a window of that shape";
  guard(ctx, m.test<k::EqualOp>(m.e.castTo(count, ctx.b.getI64Type()), wanted), "starts",
        requirement);
  guard(ctx, m.e.unary<k::NotOp>(m.test<k::EqualOp>(*steps, zero)), "steps",
        "must not hold 0");
  // Each dimension is sliced at most once; the others keep their size.
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d)
    kept.push_back((*declared)[d] == in[d]);
  Value named = m.sumAlong(onehot, 0);
  Value once = m.test<k::EqualOp>(named, m.scalar(1));
  Value untouched = m.test<k::AndOp>(m.test<k::EqualOp>(named, zero),
                                     m.test<k::EqualOp>(m.constant(kept, {rank}), m.scalar(1)));
  guard(ctx, m.test<k::OrOp>(once, untouched), "axes", "must name each sliced dimension once");

  Value origin = m.sumAlong(m.mul(onehot, m.e.reshape(begin, {n, 1})), 0);
  Value stride =
      m.add(m.sumAlong(m.mul(onehot, m.e.reshape(m.sub(*steps, m.scalar(1)), {n, 1})), 0),
            m.scalar(1));
  Value padding = ctx.scalar(getElementTypeOrSelf(x->getType()), 0);
  ctx.setOutput(0, window(ctx, *x, *declared, origin, stride, padding));
  return success();
}

LogicalResult importRuntimePad(ImportContext &ctx) {
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return ctx.fail("Pad mode '" + mode + "' is not supported");
  if (ctx.hasInput(3))
    return failRuntimeOperand(ctx, "pads", "run-time pads with an 'axes' input are not "
                                           "supported");
  auto declared = declaredFor(ctx, "pads");
  auto x = ctx.input(0);
  auto pads = int64Operand(ctx, 1, "pads");
  if (failed(declared) || failed(x) || failed(pads))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!xt.hasStaticShape())
    return failRuntimeOperand(ctx, "pads", "the input has a dynamic dimension (shape " +
                                               shapeText(xt.getShape()) +
                                               "); pin it with --input-shape");
  int64_t rank = xt.getRank();
  if (cast<RankedTensorType>(pads->getType()).getNumElements() != 2 * rank ||
      (int64_t)declared->size() != rank)
    return ctx.fail("pads needs 2 entries per dimension");
  IntMath m{ctx};
  auto half = RankedTensorType::get({rank}, ctx.b.getI64Type());
  Value begin = k::SliceOp::create(ctx.b, ctx.loc, half, *pads, ArrayRef<int64_t>{0},
                                   ArrayRef<int64_t>{1});
  Value end = k::SliceOp::create(ctx.b, ctx.loc, half, *pads, ArrayRef<int64_t>{rank},
                                 ArrayRef<int64_t>{1});
  std::vector<int64_t> growth;
  for (int64_t d = 0; d < rank; ++d)
    growth.push_back((*declared)[d] - xt.getDimSize(d));
  guard(ctx, m.test<k::EqualOp>(m.add(begin, end), m.constant(growth, {rank})), "pads",
        "must grow each dimension by " + shapeText(growth));
  Value padding = ctx.scalar(xt.getElementType(), 0);
  if (ctx.hasInput(2)) {
    auto value = ctx.input(2);
    if (failed(value))
      return failure();
    auto vt = cast<RankedTensorType>(value->getType());
    if (vt.getNumElements() != 1 || vt.getElementType() != xt.getElementType())
      return ctx.fail("constant_value must be one value of the input's element type");
    padding = m.e.reshape(*value, {});
  }
  Value origin = m.sub(m.scalar(0), begin);
  Value stride = m.constant(std::vector<int64_t>(rank, 1), {rank});
  ctx.setOutput(0, window(ctx, *x, *declared, origin, stride, padding, mode));
  return success();
}

Value axesWithin(ImportContext &ctx, size_t input, int64_t rank, ArrayRef<int64_t> set) {
  IntMath m{ctx};
  Value axes = m.wrap(*int64Operand(ctx, input, "axes"), m.scalar(rank));
  int64_t n = cast<RankedTensorType>(axes.getType()).getDimSize(0);
  return m.test<k::EqualOp>(m.e.sumAll(m.toInt(m.isAnyOf(axes, set))), m.scalar(n));
}

std::optional<std::vector<int64_t>> unitDimsBetween(ArrayRef<int64_t> longer,
                                                    ArrayRef<int64_t> shorter) {
  std::vector<int64_t> unmatched;
  size_t j = 0;
  for (size_t i = 0; i < longer.size(); ++i) {
    // Match greedily, but leave enough of `longer` for the rest of `shorter`.
    bool mustMatch = longer.size() - i == shorter.size() - j;
    if (j < shorter.size() && (longer[i] == shorter[j] || mustMatch)) {
      if (longer[i] != shorter[j])
        return std::nullopt;
      ++j;
      continue;
    }
    if (longer[i] != 1)
      return std::nullopt;
    unmatched.push_back(i);
  }
  if (j != shorter.size())
    return std::nullopt;
  return unmatched;
}

} // namespace kiln::onnx_frontend
