//===- ImportTensor.cpp - ONNX shape and data-movement ops ----------------===//
//
// Shape-manipulating ops on compile-time tensors (Shape, Cast, Slice, Concat,
// Gather, Unsqueeze... on small integer tensors) are evaluated here, so
// dynamic-looking shape arithmetic folds into static kiln shapes.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/HostEval.h"
#include "frontend/onnx/ImportContext.h"
#include "frontend/onnx/ShapeOperands.h"

#include <cmath>
#include <numeric>

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {


static HostTensor intTensor(std::vector<int64_t> values, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = onnx::TensorProto::INT64;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
}

/// Fails, naming the output, when the static dimensions of an output of
/// `shape` and element type `et` would take more than 2^47 bytes.
static LogicalResult checkOutputSize(ImportContext &ctx, ArrayRef<int64_t> shape, Type et) {
  SmallVector<int64_t> known;
  for (int64_t d : shape)
    known.push_back(ShapedType::isDynamic(d) ? 1 : d);
  return checkedElementCount(known, dtypeCodeOf(et), ctx.loc, "the output");
}

/// Row-major strides of `shape`.
static std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

static LogicalResult importConstant(ImportContext &ctx) {
  for (const auto &a : ctx.node->attribute()) {
    if (a.name() == "value" || a.name() == "sparse_value") {
      auto t = a.name() == "value" ? parseTensor(a.t(), ctx.loc)
                                   : parseSparseTensor(a.sparse_tensor(), ctx.loc);
      if (failed(t))
        return failure();
      ctx.setHostOutput(0, std::move(*t));
      return success();
    }
    HostTensor t;
    if (a.name() == "value_float" || a.name() == "value_floats") {
      t.dtype = onnx::TensorProto::FLOAT;
      if (a.name() == "value_float")
        t.floats = {a.f()};
      else
        t.floats.assign(a.floats().begin(), a.floats().end()), t.shape = {(int64_t)t.floats.size()};
      ctx.setHostOutput(0, std::move(t));
      return success();
    }
    if (a.name() == "value_int" || a.name() == "value_ints") {
      t.dtype = onnx::TensorProto::INT64;
      if (a.name() == "value_int")
        t.ints = {a.i()};
      else
        t.ints.assign(a.ints().begin(), a.ints().end()), t.shape = {(int64_t)t.ints.size()};
      ctx.setHostOutput(0, std::move(t));
      return success();
    }
  }
  return ctx.fail("Constant without a supported value attribute (value, value_float(s), "
                  "value_int(s))");
}

/// The target shape of Reshape with ONNX's 0 (copy) and -1 (infer) entries;
/// `kept` gets, per result dimension, the input dimension a 0 copies (-1
/// otherwise). With dynamic input dimensions, -1 stays dynamic: its size is
/// what the element count leaves at run time.
static FailureOr<SmallVector<int64_t>> resolveReshape(ImportContext &ctx,
                                                      ArrayRef<int64_t> in,
                                                      ArrayRef<int64_t> spec, bool allowZero,
                                                      SmallVector<int64_t> &kept) {
  SmallVector<int64_t> shape;
  int64_t known = 1, inferAt = -1, total = 1;
  bool dynamic = llvm::any_of(in, ShapedType::isDynamic);
  for (int64_t d : in)
    total *= dynamic ? 1 : d;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    kept.push_back(-1);
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return ctx.fail("Reshape copies dimension " + llvm::Twine(i) +
                        " which the input does not have");
      d = in[i];
      kept.back() = i;
      if (ShapedType::isDynamic(d)) {
        shape.push_back(d);
        continue;
      }
    }
    if (d == -1) {
      if (inferAt >= 0)
        return ctx.fail("Reshape shape has more than one -1");
      inferAt = (int64_t)i;
      shape.push_back(1);
      continue;
    }
    if (d < 0)
      return ctx.fail("Reshape shape has invalid dimension " + llvm::Twine(d));
    if (__builtin_mul_overflow(known, d, &known))
      return ctx.fail("Reshape shape has more elements than a 64-bit count holds");
    shape.push_back(d);
  }
  if (dynamic) {
    // -1 is static when every dynamic input dimension is copied by a 0:
    // it is then the ratio of the remaining static sizes.
    int64_t rest = 1;
    bool restStatic = true;
    for (auto [i, d] : llvm::enumerate(in)) {
      if (llvm::is_contained(kept, (int64_t)i))
        continue;
      restStatic &= !ShapedType::isDynamic(d);
      rest *= ShapedType::isDynamic(d) ? 1 : d;
    }
    int64_t copied = 1;
    for (auto [i, source] : llvm::enumerate(kept))
      if (source >= 0 && !ShapedType::isDynamic(shape[i]))
        copied *= shape[i];
    if (inferAt >= 0)
      shape[inferAt] = restStatic && known % copied == 0 && rest % (known / copied) == 0
                           ? rest / (known / copied)
                           : ShapedType::kDynamic;
    return shape; // the element count is checked at run time
  }
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      return ctx.fail("cannot infer the -1 dimension of Reshape");
    shape[inferAt] = total / known;
  } else if (known != total) {
    return ctx.fail("Reshape cannot turn " + llvm::Twine(total) + " elements into " +
                    llvm::Twine(known));
  }
  return shape;
}

/// Reshape of a device value or a host constant to `shape`; `kept` names,
/// per result dimension, the input dimension whose size it keeps (needed
/// for dynamic dimensions only).
static LogicalResult reshapeTo(ImportContext &ctx, ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> kept = {}) {
  if (const HostTensor *t = ctx.hostInput(0)) {
    HostTensor r = *t;
    r.shape.assign(shape.begin(), shape.end());
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(x->getType()));
  DenseI64ArrayAttr keptAttr;
  if (!cast<RankedTensorType>(x->getType()).hasStaticShape() || !type.hasStaticShape())
    keptAttr = ctx.b.getDenseI64ArrayAttr(kept);
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, type, *x, keptAttr));
  return success();
}

static std::vector<int64_t> shapeOfInput(ImportContext &ctx) {
  if (const HostTensor *t = ctx.hostInput(0))
    return t->shape;
  auto type = ctx.inputType(0);
  if (failed(type))
    return {};
  return std::vector<int64_t>(type->getShape().begin(), type->getShape().end());
}

/// Reshape's `shape` at run time: the declared output shape, where each
/// entry may also arrive as -1, or as 0 when that copies an equal input
/// dimension.
static FailureOr<std::vector<int64_t>> runtimeReshapeSpec(ImportContext &ctx,
                                                          ArrayRef<int64_t> in, bool allowZero) {
  auto declared = declaredPerDimension(ctx, 1, "shape");
  if (failed(declared))
    return failure();
  std::vector<int64_t> inferred(declared->size(), -1), copied(*declared);
  for (size_t i = 0; i < declared->size() && i < in.size(); ++i)
    if (!allowZero && in[i] == (*declared)[i])
      copied[i] = 0;
  if (failed(guardElements(ctx, 1, "shape", {*declared, inferred, copied})))
    return failure();
  return *declared;
}

/// Reshape of an input with dynamic dimensions by a `shape` known only at
/// run time. What shapeElements() knows decides each result dimension: a
/// constant (0 copies, -1 infers), the size of one of the input's own
/// dimensions, or else the run-time element itself.
static LogicalResult importRuntimeReshape(ImportContext &ctx, ArrayRef<int64_t> in,
                                          bool allowZero) {
  auto x = ctx.input(0), shape = ctx.input(1);
  if (failed(x) || failed(shape))
    return failure();
  auto elements = shapeElements(*shape);
  if (!elements)
    return ctx.fail("input 'shape' must be a 1-D integer tensor");
  Value spec = *shape;
  if (!getElementTypeOrSelf(spec.getType()).isInteger(64))
    spec = Emitter{ctx}.castTo(spec, ctx.b.getI64Type());
  SmallVector<int64_t> result, kept;
  bool usesSpec = false;
  for (auto [i, e] : llvm::enumerate(*elements)) {
    int64_t c = e.constant.value_or(-3);
    if (e.constant && c == 0 && !allowZero) {
      if (i >= in.size())
        return ctx.fail("Reshape copies dimension " + llvm::Twine(i) +
                        " which the input does not have");
      result.push_back(in[i]);
      kept.push_back(i);
    } else if (e.constant && c == -1) {
      result.push_back(ShapedType::kDynamic);
      kept.push_back(-1);
    } else if (e.constant && c >= 0) {
      result.push_back(c);
      kept.push_back(-1);
    } else if (e.constant) {
      return ctx.fail("Reshape shape has invalid dimension " + llvm::Twine(c));
    } else if (e.of == *x) {
      result.push_back(in[e.dim]);
      kept.push_back(e.dim);
    } else {
      result.push_back(ShapedType::kDynamic);
      kept.push_back(-2);
      usesSpec = true;
    }
  }
  if (llvm::count_if(*elements, [](const ShapeElement &e) { return e.constant == -1; }) > 1)
    return ctx.fail("Reshape shape has more than one -1");
  auto type = RankedTensorType::get(result, getElementTypeOrSelf(x->getType()));
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, type, *x, usesSpec ? spec : Value(),
                                        ctx.b.getDenseI64ArrayAttr(kept)));
  return success();
}

static LogicalResult importReshape(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  bool allowZero = ctx.attrInt("allowzero", 0);
  if (!ctx.hostInput(1) && llvm::any_of(in, ShapedType::isDynamic))
    return importRuntimeReshape(ctx, in, allowZero);
  auto spec = ctx.hostInput(1) ? ctx.hostInts(1, "shape") : runtimeReshapeSpec(ctx, in, allowZero);
  if (failed(spec))
    return failure();
  SmallVector<int64_t> kept;
  auto shape = resolveReshape(ctx, in, *spec, allowZero, kept);
  if (failed(shape))
    return failure();
  return reshapeTo(ctx, *shape, kept);
}

/// Flatten of a group with several dynamic dimensions: the sizes of both
/// groups are their products, computed from kiln.shape at run time (as the
/// Flatten/op/Reshape pattern that upgrades Softmax-12 to 13 needs).
static LogicalResult importRuntimeFlatten(ImportContext &ctx, ArrayRef<int64_t> in,
                                          int64_t axis) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  int64_t rank = in.size();
  auto i64 = ctx.b.getI64Type();
  Value shape = k::ShapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({rank}, i64), *x);
  SmallVector<Value> sizes;
  SmallVector<int64_t> flat, kept;
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, axis}, {axis, rank}}) {
    ArrayRef<int64_t> group = in.slice(begin, end - begin);
    int64_t dynamic = llvm::count_if(group, ShapedType::isDynamic);
    int64_t product = 1;
    for (int64_t d : group)
      product = dynamic ? ShapedType::kDynamic : product * d;
    flat.push_back(product);
    kept.push_back(!dynamic ? -1 : group.size() == 1 ? begin : -2);
    if (begin == end) {
      sizes.push_back(int64Constant(ctx, {1}, {1}));
      continue;
    }
    Value part = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({end - begin}, i64),
                                    shape, ArrayRef<int64_t>{begin}, ArrayRef<int64_t>{1});
    sizes.push_back(k::ReduceOp::create(ctx.b, ctx.loc, RankedTensorType::get({1}, i64), part,
                                        "prod", ArrayRef<int64_t>{0}, true));
  }
  Value spec = k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get({2}, i64), sizes, 0);
  auto type = RankedTensorType::get(flat, getElementTypeOrSelf(x->getType()));
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, type, *x, spec,
                                        ctx.b.getDenseI64ArrayAttr(kept)));
  return success();
}

static LogicalResult importFlatten(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  int64_t rank = in.size();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.fail("Flatten axis out of range");
  auto dynamicIn = [&](int64_t begin, int64_t end) {
    return std::count_if(in.begin() + begin, in.begin() + end, ShapedType::isDynamic);
  };
  if (dynamicIn(0, axis) > 1 || dynamicIn(axis, rank) > 1)
    return importRuntimeFlatten(ctx, in, axis);
  auto flat = flattenedType(ctx, RankedTensorType::get(in, ctx.b.getF32Type()), axis);
  if (failed(flat))
    return failure();
  return reshapeTo(ctx, flat->first.getShape(),
                   flat->second ? flat->second.asArrayRef() : ArrayRef<int64_t>{});
}

/// Squeeze's or Unsqueeze's `axes` at run time: the size-1 dimensions that
/// the declared output shape removes from (or adds to) the input's.
static FailureOr<std::vector<int64_t>> runtimeUnitAxes(ImportContext &ctx, ArrayRef<int64_t> in,
                                                       bool squeeze) {
  auto declared = declaredFor(ctx, "axes");
  auto length = operandLength(ctx, 1);
  if (failed(declared) || failed(length))
    return failure();
  ArrayRef<int64_t> longer = squeeze ? in : ArrayRef<int64_t>(*declared);
  ArrayRef<int64_t> shorter = squeeze ? ArrayRef<int64_t>(*declared) : in;
  auto axes = unitDimsBetween(longer, shorter);
  if (!axes || (int64_t)axes->size() != *length)
    return failRuntimeOperand(ctx, "axes", "the declared output shape does not follow from "
                                           "the input shape by " +
                                               llvm::Twine(*length) + " size-1 dimensions");
  if (failed(guardAxes(ctx, 1, "axes", longer.size(), *axes, *axes)))
    return failure();
  return *axes;
}

static FailureOr<std::vector<int64_t>> unsqueezeAxes(ImportContext &ctx, ArrayRef<int64_t> in) {
  if (ctx.opset < 13)
    return ctx.attrInts("axes");
  return ctx.hostInput(1) ? ctx.hostInts(1, "axes") : runtimeUnitAxes(ctx, in, false);
}

static LogicalResult importUnsqueeze(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  auto axes = unsqueezeAxes(ctx, in);
  if (failed(axes))
    return failure();
  int64_t rank = in.size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    auto n = ctx.axis(a, rank);
    if (failed(n))
      return failure();
    inserted[*n] = true;
  }
  SmallVector<int64_t> shape, kept;
  int64_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    kept.push_back(inserted[i] ? -1 : next);
    shape.push_back(inserted[i] ? 1 : in[next++]);
  }
  return reshapeTo(ctx, shape, kept);
}

static LogicalResult importSqueeze(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  std::vector<int64_t> axes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    auto a = ctx.hostInput(1) ? ctx.hostInts(1, "axes") : runtimeUnitAxes(ctx, in, true);
    if (failed(a))
      return failure();
    axes = *a;
  } else if (ctx.opset < 13) {
    axes = ctx.attrInts("axes");
  }
  std::vector<bool> drop(in.size(), axes.empty());
  if (axes.empty() && llvm::any_of(in, ShapedType::isDynamic))
    return ctx.fail("Squeeze without axes of a dynamic shape " + shapeText(in) +
                    " is not supported; give axes or pin the input shapes with --input-shape");
  if (axes.empty())
    for (size_t i = 0; i < in.size(); ++i)
      drop[i] = in[i] == 1;
  std::vector<int64_t> dynamicDropped; // checked to be 1 at run time
  for (int64_t a : axes) {
    auto n = ctx.axis(a, in.size());
    if (failed(n))
      return failure();
    if (ShapedType::isDynamic(in[*n]))
      dynamicDropped.push_back(*n);
    else if (in[*n] != 1)
      return ctx.fail("Squeeze of dimension " + llvm::Twine(*n) + " which is not 1");
    drop[*n] = true;
  }
  SmallVector<int64_t> shape, kept;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) {
      shape.push_back(in[i]);
      kept.push_back(i);
    }
  if (!dynamicDropped.empty()) {
    auto x = ctx.input(0);
    if (failed(x))
      return failure();
    for (int64_t d : dynamicDropped)
      assertAtRunTime(ctx, dimEquals(ctx, *x, d, 1),
                      "Squeeze of dimension " + llvm::Twine(d) + ", whose size is not 1");
  }
  return reshapeTo(ctx, shape, kept);
}

static LogicalResult importTranspose(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  int64_t rank = in.size();
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if ((int64_t)perm.size() != rank)
    return ctx.fail("Transpose perm has the wrong length");
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank)
      return ctx.fail("Transpose perm entry out of range");
    shape.push_back(in[p]);
  }
  if (const HostTensor *t = ctx.hostInput(0)) {
    // A transpose is a strided walk: output dim i steps by the input stride of perm[i].
    std::vector<int64_t> inStrides = stridesOf(in), outStrides = stridesOf(shape);
    HostTensor r;
    r.dtype = t->dtype;
    r.shape.assign(shape.begin(), shape.end());
    for (int64_t flat = 0, n = r.numElements(); flat < n; ++flat) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d)
        src += (flat / outStrides[d]) % shape[d] * inStrides[perm[d]];
      if (t->isFloat())
        r.floats.push_back(t->floats[src]);
      else
        r.ints.push_back(t->ints[src]);
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  ctx.setOutput(0, k::TransposeOp::create(ctx.b, ctx.loc,
                                          RankedTensorType::get(shape, xt.getElementType()),
                                          *x, perm));
  return success();
}

static LogicalResult importConcat(ImportContext &ctx) {
  bool allHost = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    allHost &= ctx.hostInput(i) && !ctx.hostInput(i)->isFloat() &&
               ctx.hostInput(i)->shape.size() == 1;
  if (allHost) { // shape arithmetic: 1-D integer concatenation
    std::vector<int64_t> out;
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      out.insert(out.end(), ctx.hostInput(i)->ints.begin(), ctx.hostInput(i)->ints.end());
    int64_t n = out.size();
    ctx.setHostOutput(0, intTensor(std::move(out), {n}));
    return success();
  }
  SmallVector<Value> inputs;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty())
    return ctx.fail("Concat needs at least one input");
  auto first = cast<RankedTensorType>(inputs[0].getType());
  if (first.getRank() == 0)
    return ctx.fail("Concat needs inputs of rank 1 or more");
  for (Value v : inputs)
    if (cast<RankedTensorType>(v.getType()).getRank() != first.getRank())
      return ctx.fail("Concat inputs must have the same rank, got " +
                      shapeText(first.getShape()) + " and " +
                      shapeText(cast<RankedTensorType>(v.getType()).getShape()));
  auto axis = ctx.axis(ctx.attrInt("axis", 0), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    auto t = cast<RankedTensorType>(v.getType());
    shape[*axis] = t.isDynamicDim(*axis) || ShapedType::isDynamic(shape[*axis])
                       ? ShapedType::kDynamic
                       : shape[*axis] + t.getDimSize(*axis);
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != *axis && ShapedType::isDynamic(shape[i]))
        shape[i] = t.getDimSize(i); // a static size pins the others
  }
  ctx.setOutput(0, k::ConcatOp::create(ctx.b, ctx.loc,
                                       RankedTensorType::get(shape, first.getElementType()),
                                       inputs, *axis));
  return success();
}

static LogicalResult importShape(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  int64_t rank = in.size();
  int64_t start = ctx.attrInt("start", 0), end = ctx.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  std::vector<int64_t> dims(in.begin() + start, in.begin() + std::max(start, end));
  int64_t n = dims.size();
  if (llvm::none_of(dims, ShapedType::isDynamic)) {
    ctx.setHostOutput(0, intTensor(std::move(dims), {n}));
    return success();
  }
  // Sizes known only at run time: kiln.shape, which shapeElements() follows.
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto i64 = ctx.b.getI64Type();
  Value shape = k::ShapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({rank}, i64), *x);
  if (n != rank)
    shape = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({n}, i64), shape,
                               ArrayRef<int64_t>{start}, ArrayRef<int64_t>{1});
  ctx.setOutput(0, shape);
  return success();
}

static LogicalResult importCast(ImportContext &ctx) {
  int64_t to = ctx.attrInt("to", 0);
  if (const HostTensor *t = ctx.hostInput(0)) {
    HostTensor r;
    r.dtype = to;
    r.shape = t->shape;
    if (r.isFloat()) {
      if (t->isFloat())
        r.floats = t->floats;
      else
        r.floats.assign(t->ints.begin(), t->ints.end());
    } else {
      if (t->isFloat())
        for (double f : t->floats)
          r.ints.push_back(static_cast<int64_t>(f));
      else
        r.ints = t->ints;
      if (to == onnx::TensorProto::BOOL)
        for (int64_t &v : r.ints)
          v = v != 0;
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Type et = elementTypeOf(ctx.b, to);
  if (!et)
    return ctx.fail("Cast to " + dtypeName(to) + " is not supported");
  auto shape = cast<RankedTensorType>(x->getType()).getShape();
  ctx.setOutput(0, k::CastOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et), *x));
  return success();
}

/// BitCast (opset 26): the same bits read as another element type.
static LogicalResult importBitCast(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  int64_t to = ctx.attrInt("to", 0);
  Type et = elementTypeOf(ctx.b, to);
  Type from = getElementTypeOrSelf(x->getType());
  if (!et || et.isInteger(1) || from.isInteger(1))
    return ctx.fail("BitCast to " + dtypeName(to) + " is not supported");
  if (et.getIntOrFloatBitWidth() != from.getIntOrFloatBitWidth())
    return ctx.fail("BitCast needs types of one width: " + dtypeName(dtypeCodeOf(from)) +
                    " has " + llvm::Twine(from.getIntOrFloatBitWidth()) + " bits, " +
                    dtypeName(to) + " " + llvm::Twine(et.getIntOrFloatBitWidth()));
  auto shape = cast<RankedTensorType>(x->getType()).getShape();
  ctx.setOutput(0, k::BitcastOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, et), *x));
  return success();
}

/// CenterCropPad (opset 18): each named axis cropped or zero-padded to its
/// target size, keeping the centre (the extra element goes at the end).
static LogicalResult importCenterCropPad(ImportContext &ctx) {
  auto x = ctx.input(0);
  auto target = ctx.hostInts(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  std::vector<int64_t> axes = ctx.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (axes.size() != target->size())
    return ctx.fail("shape has " + llvm::Twine(target->size()) + " entries for " +
                    llvm::Twine(axes.size()) + " axes");
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1), cropped(xt.getShape()),
      pads(2 * rank, 0), padded(xt.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = ctx.axis(axes[i], rank);
    if (failed(axis))
      return failure();
    int64_t dim = xt.getDimSize(*axis), want = (*target)[i];
    if (ShapedType::isDynamic(dim) || want < 0)
      return ctx.fail("CenterCropPad needs static sizes, got dimension " + llvm::Twine(*axis) +
                      " of " + shapeText(xt.getShape()));
    if (want < dim) {
      starts[*axis] = (dim - want) / 2;
      cropped[*axis] = want;
    } else {
      pads[*axis] = (want - dim) / 2;
      pads[*axis + rank] = want - dim - pads[*axis];
    }
    padded[*axis] = want;
  }
  Value r = *x;
  if (ArrayRef<int64_t>(cropped) != xt.getShape())
    r = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(cropped, xt.getElementType()), r,
                           starts, steps);
  if (llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    r = k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(padded, xt.getElementType()), r,
                         ctx.b.getDenseI64ArrayAttr(pads), ctx.b.getStringAttr("constant"),
                         ctx.b.getF64FloatAttr(0.0));
  ctx.setOutput(0, r);
  return success();
}

/// CastLike: Cast to the element type of the second input.
static LogicalResult importCastLike(ImportContext &ctx) {
  auto like = ctx.inputType(1);
  auto x = ctx.input(0);
  if (failed(like) || failed(x))
    return failure();
  auto shape = cast<RankedTensorType>(x->getType()).getShape();
  ctx.setOutput(0, k::CastOp::create(ctx.b, ctx.loc,
                                     RankedTensorType::get(shape, like->getElementType()), *x));
  return success();
}

/// Slice on host tensors (shape arithmetic); run-time slicing is future work.
/// Copies the strided box (begin + i * step, `size` elements per dimension)
/// out of a host tensor.
static HostTensor sliceHost(const HostTensor &t, ArrayRef<int64_t> begin, ArrayRef<int64_t> step,
                            ArrayRef<int64_t> size) {
  HostTensor r;
  r.dtype = t.dtype;
  r.shape.assign(size.begin(), size.end());
  int64_t rank = t.shape.size(), n = r.numElements();
  std::vector<int64_t> inStrides = stridesOf(t.shape), outStrides = stridesOf(size);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (begin[d] + (flat / outStrides[d]) % size[d] * step[d]) * inStrides[d];
    if (t.isFloat())
      r.floats.push_back(t.floats[src]);
    else
      r.ints.push_back(t.ints[src]);
  }
  return r;
}

/// A strided slice of input 0, on the host when it is a compile-time
/// tensor, else as kiln.slice.
static LogicalResult emitSlice(ImportContext &ctx, size_t output, ArrayRef<int64_t> begin,
                               ArrayRef<int64_t> step, ArrayRef<int64_t> size) {
  if (const HostTensor *t = ctx.hostInput(0)) {
    ctx.setHostOutput(output, sliceHost(*t, begin, step, size));
    return success();
  }
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = RankedTensorType::get(size, getElementTypeOrSelf(x->getType()));
  ctx.setOutput(output, k::SliceOp::create(ctx.b, ctx.loc, type, *x, begin, step));
  return success();
}

static LogicalResult importSlice(ImportContext &ctx) {
  std::vector<int64_t> shape = shapeOfInput(ctx);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    for (size_t i = 1; i <= 4; ++i)
      if (ctx.hasInput(i) && !ctx.hostInput(i))
        return importRuntimeSlice(ctx);
    auto s = ctx.hostInts(1, "starts"), e = ctx.hostInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (ctx.hasInput(3)) {
      auto a = ctx.hostInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      auto st = ctx.hostInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  int64_t rank = shape.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return ctx.fail("starts, ends, axes and steps must have the same length");
  // Per dimension, ONNX bounds: unnamed dimensions are taken whole.
  std::vector<int64_t> first(rank, 0), last(rank, std::numeric_limits<int64_t>::max()),
      step(rank, 1);
  std::vector<bool> named(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = ctx.axis(axes[i], rank);
    if (failed(a))
      return failure();
    if (named[*a])
      return ctx.fail("axes names dimension " + llvm::Twine(*a) + " twice");
    if (steps[i] == 0)
      return ctx.fail("Slice step must not be 0");
    named[*a] = true;
    first[*a] = starts[i];
    last[*a] = ends[i];
    step[*a] = steps[i];
  }
  std::vector<int64_t> begin(rank), size(rank);
  bool runtimeBounds = false;
  for (int64_t d = 0; d < rank; ++d) {
    bool whole = first[d] == 0 && last[d] >= std::numeric_limits<int32_t>::max() && step[d] == 1;
    if (ShapedType::isDynamic(shape[d])) {
      runtimeBounds |= !whole;
      size[d] = ShapedType::kDynamic;
      continue;
    }
    k::SliceBounds bounds = k::onnxSliceBounds(first[d], last[d], step[d], shape[d]);
    begin[d] = bounds.begin;
    size[d] = bounds.size;
  }
  if (!runtimeBounds)
    return emitSlice(ctx, 0, begin, step, size);
  // A dynamic dimension with bounds: they are resolved at run time.
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = RankedTensorType::get(size, getElementTypeOrSelf(x->getType()));
  ctx.setOutput(0, k::SliceOp::create(ctx.b, ctx.loc, type, *x, first, step,
                                      ctx.b.getDenseI64ArrayAttr(last)));
  return success();
}

/// Split's `split` sizes at run time: the declared sizes of the outputs
/// along `axis`.
static FailureOr<std::vector<int64_t>> runtimeSplitSizes(ImportContext &ctx, int64_t axis) {
  std::vector<int64_t> sizes;
  for (int i = 0, e = ctx.node->output_size(); i < e; ++i) {
    auto declared = declaredShape(ctx, i);
    if (!declared || (int64_t)declared->size() <= axis)
      return failRuntimeOperand(ctx, "split", "output " + llvm::Twine(i) +
                                                  " has no declared static shape");
    sizes.push_back((*declared)[axis]);
  }
  auto length = operandLength(ctx, 1);
  if (failed(length))
    return failure();
  if (*length != (int64_t)sizes.size())
    return failRuntimeOperand(ctx, "split", "its length differs from the number of outputs");
  if (failed(guardElements(ctx, 1, "split", {sizes})))
    return failure();
  return sizes;
}

/// Split into equal parts, or by the `split` sizes (input from opset 13).
static LogicalResult importSplit(ImportContext &ctx) {
  std::vector<int64_t> shape = shapeOfInput(ctx);
  int64_t rank = shape.size();
  if (rank == 0)
    return ctx.fail("Split needs an input of rank 1 or more");
  auto axis = ctx.axis(ctx.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  std::vector<int64_t> sizes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    auto s = ctx.hostInput(1) ? ctx.hostInts(1, "split") : runtimeSplitSizes(ctx, *axis);
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (ctx.opset < 13) {
    sizes = ctx.attrInts("split");
  }
  int64_t outputs = ctx.node->output_size(), dim = shape[*axis];
  if (ShapedType::isDynamic(dim)) // the other dimensions are taken whole
    return ctx.fail("Split along dynamic dimension " + llvm::Twine(*axis) +
                    " is not supported yet; pin the model's input shapes with --input-shape");
  if (sizes.empty()) {
    int64_t parts = ctx.attrInt("num_outputs", outputs);
    if (parts <= 0)
      return ctx.fail("Split into equal parts needs a static dimension and at least one output");
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::min(chunk, dim - i * chunk));
  }
  if ((int64_t)sizes.size() != outputs)
    return ctx.fail("split has " + llvm::Twine(sizes.size()) + " parts for " +
                    llvm::Twine(outputs) + " outputs");
  std::vector<int64_t> begin(rank, 0), step(rank, 1), size(shape);
  for (int64_t i = 0; i < outputs; ++i) {
    size[*axis] = sizes[i];
    if (failed(emitSlice(ctx, i, begin, step, size)))
      return failure();
    begin[*axis] += sizes[i];
  }
  if (begin[*axis] != dim)
    return ctx.fail("split sizes do not add up to dimension " + llvm::Twine(dim));
  return success();
}

/// Gather on host tensors (e.g. picking one dimension out of Shape).
static LogicalResult importGather(ImportContext &ctx) {
  const HostTensor *data = ctx.hostInput(0), *indices = ctx.hostInput(1);
  if (data ? data->shape.empty() : succeeded(ctx.inputType(0)) && ctx.inputType(0)->getRank() == 0)
    return ctx.fail("Gather needs data of rank 1 or more");
  if (!data || !indices) {
    auto d = ctx.input(0), i = ctx.input(1);
    if (failed(d) || failed(i))
      return failure();
    auto dt = cast<RankedTensorType>(d->getType());
    auto it = cast<RankedTensorType>(i->getType());
    auto axis = ctx.axis(ctx.attrInt("axis", 0), dt.getRank());
    if (failed(axis))
      return failure();
    SmallVector<int64_t> shape(dt.getShape().begin(), dt.getShape().begin() + *axis);
    shape.append(it.getShape().begin(), it.getShape().end());
    shape.append(dt.getShape().begin() + *axis + 1, dt.getShape().end());
    ctx.setOutput(0, k::GatherOp::create(ctx.b, ctx.loc,
                                         RankedTensorType::get(shape, dt.getElementType()), *d,
                                         *i, *axis));
    return success();
  }
  int64_t rank = data->shape.size();
  auto axis = ctx.axis(ctx.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  int64_t outer = 1, inner = 1, dim = data->shape[*axis];
  for (int64_t i = 0; i < rank; ++i)
    if (i < *axis)
      outer *= data->shape[i];
    else if (i > *axis)
      inner *= data->shape[i];
  HostTensor r;
  r.dtype = data->dtype;
  r.shape.assign(data->shape.begin(), data->shape.begin() + *axis);
  r.shape.insert(r.shape.end(), indices->shape.begin(), indices->shape.end());
  r.shape.insert(r.shape.end(), data->shape.begin() + *axis + 1, data->shape.end());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t idx : indices->ints) {
      if (idx < -dim || idx >= dim)
        return ctx.fail("Gather index " + llvm::Twine(idx) + " out of range");
      int64_t base = (o * dim + (idx < 0 ? idx + dim : idx)) * inner;
      for (int64_t i = 0; i < inner; ++i)
        if (data->isFloat())
          r.floats.push_back(data->floats[base + i]);
        else
          r.ints.push_back(data->ints[base + i]);
    }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

/// Pad: pads (and the constant value) come from inputs from opset 11 on,
/// from attributes before; `axes` (opset 18) selects the padded dimensions.
static LogicalResult importPad(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  std::vector<int64_t> pads;
  double value = 0.0;
  if (ctx.opset < 11) {
    pads = ctx.attrInts("pads");
    value = ctx.attrFloat("value", 0.0f);
  } else {
    if (!ctx.hostInput(1) || (ctx.hasInput(2) && !ctx.hostInput(2)))
      return importRuntimePad(ctx);
    auto p = ctx.hostInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (ctx.hasInput(2)) {
      const HostTensor *v = ctx.hostInput(2);
      if (!v || v->numElements() != 1)
        return ctx.fail("constant_value must be a compile-time scalar");
      value = v->isFloat() ? v->floats[0] : (double)v->ints[0];
    }
  }
  if (ctx.hasInput(3)) { // axes: expand pads to every dimension
    auto a = ctx.hostInts(3, "axes");
    if (failed(a))
      return failure();
    if (pads.size() != 2 * a->size())
      return ctx.fail("pads needs 2 entries per axis");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < a->size(); ++i) {
      auto axis = ctx.axis((*a)[i], rank);
      if (failed(axis))
        return failure();
      full[*axis] = pads[i];
      full[*axis + rank] = pads[i + a->size()];
    }
    pads = full;
  }
  if ((int64_t)pads.size() != 2 * rank)
    return ctx.fail("pads needs 2 entries per dimension");
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return ctx.fail("Pad mode '" + mode + "' is not supported");
  if (llvm::any_of(pads, [](int64_t p) { return p <= -(int64_t(1) << 40) || p >= int64_t(1) << 40; }))
    return ctx.fail("pads must be under 2^40 in magnitude");
  // Negative pads crop: a slice of the input, then padding of what is left.
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1), kept(xt.getShape());
  bool crops = false;
  for (int64_t i = 0; i < rank; ++i)
    for (int64_t side : {i, i + rank})
      if (pads[side] < 0) {
        if (xt.isDynamicDim(i))
          return ctx.fail("negative pads of dynamic dimension " + llvm::Twine(i) +
                          " are not supported");
        kept[i] += pads[side];
        starts[i] += side == i ? -pads[side] : 0;
        pads[side] = 0;
        crops = true;
      }
  if (llvm::any_of(kept, [](int64_t d) { return d < 0 && !ShapedType::isDynamic(d); }))
    return ctx.fail("negative pads remove more than the input holds");
  Value in = *x;
  if (crops)
    in = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get(kept, xt.getElementType()), in,
                            starts, steps);
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(ShapedType::isDynamic(kept[i]) ? kept[i] : kept[i] + pads[i] + pads[i + rank]);
  if (failed(checkOutputSize(ctx, shape, xt.getElementType())))
    return failure();
  ctx.setOutput(0, k::PadOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, xt.getElementType()),
                                    in, ctx.b.getDenseI64ArrayAttr(pads), ctx.b.getStringAttr(mode),
                                    ctx.b.getF64FloatAttr(value)));
  return success();
}

/// Expand broadcasts both ways: the result is broadcast(input, shape).
/// Expand's `shape` at run time: the trailing dimensions of the declared
/// output shape; an entry may also be 1 where the input dimension it meets
/// already has the declared size.
static FailureOr<std::vector<int64_t>> runtimeExpandShape(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  auto declared = declaredFor(ctx, "shape");
  auto length = operandLength(ctx, 1);
  if (failed(declared) || failed(length))
    return failure();
  int64_t rank = declared->size(), n = *length, inRank = in.size();
  if (n > rank || std::max(n, inRank) != rank)
    return failRuntimeOperand(ctx, "shape", "its length does not fit the declared output rank");
  std::vector<int64_t> shape, ones;
  for (int64_t p = rank - n; p < rank; ++p) {
    int64_t q = p - (rank - inRank);
    int64_t met = q >= 0 ? in[q] : 1;
    shape.push_back((*declared)[p]);
    ones.push_back(met == (*declared)[p] ? 1 : (*declared)[p]);
  }
  if (failed(guardElements(ctx, 1, "shape", {shape, ones})))
    return failure();
  return shape;
}

static LogicalResult importExpand(ImportContext &ctx) {
  auto shape = ctx.hostInput(1) ? ctx.hostInts(1, "shape") : runtimeExpandShape(ctx);
  auto x = ctx.input(0);
  if (failed(shape) || failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto out = k::broadcastShapes(xt.getShape(), *shape);
  if (failed(out))
    return ctx.fail("the input does not broadcast to the requested shape");
  ctx.setOutput(0, k::ExpandOp::create(ctx.b, ctx.loc, RankedTensorType::get(*out, xt.getElementType()), *x));
  return success();
}

/// Tile's `repeats` at run time: declared output size / input size per
/// dimension.
static FailureOr<std::vector<int64_t>> runtimeRepeats(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  auto declared = declaredFor(ctx, "repeats");
  if (failed(declared))
    return failure();
  std::vector<int64_t> repeats;
  for (size_t i = 0; i < in.size() && declared->size() == in.size(); ++i)
    if (in[i] > 0 && (*declared)[i] % in[i] == 0)
      repeats.push_back((*declared)[i] / in[i]);
  auto length = operandLength(ctx, 1);
  if (failed(length))
    return failure();
  if (repeats.size() != in.size() || *length != (int64_t)in.size())
    return failRuntimeOperand(ctx, "repeats", "the declared output shape is not a whole "
                                              "multiple of the input shape");
  if (failed(guardElements(ctx, 1, "repeats", {repeats})))
    return failure();
  return repeats;
}

static LogicalResult importTile(ImportContext &ctx) {
  auto repeats = ctx.hostInput(1) ? ctx.hostInts(1, "repeats") : runtimeRepeats(ctx);
  auto x = ctx.input(0);
  if (failed(repeats) || failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if ((int64_t)repeats->size() != xt.getRank())
    return ctx.fail("repeats needs one entry per dimension");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    shape.push_back(xt.getDimSize(i) * (*repeats)[i]);
  ctx.setOutput(0, k::TileOp::create(ctx.b, ctx.loc, RankedTensorType::get(shape, xt.getElementType()), *x));
  return success();
}

static LogicalResult importConstantOfShape(ImportContext &ctx) {
  auto shape = ctx.hostInput(0) ? ctx.hostInts(0, "input") : runtimeShapeOperand(ctx, 0, "input");
  if (failed(shape))
    return failure();
  HostTensor r;
  r.dtype = onnx::TensorProto::FLOAT;
  r.shape = *shape;
  double value = 0.0;
  for (const auto &a : ctx.node->attribute())
    if (a.name() == "value") {
      r.dtype = a.t().data_type();
      auto v = parseTensor(a.t(), ctx.loc);
      if (failed(v))
        return failure();
      if (v->numElements() != 1)
        return ctx.fail("value must be a one-element tensor");
      value = v->isFloat() ? v->floats[0] : (double)v->ints[0];
    }
  auto n = checkedElementCount(r.shape, r.dtype, ctx.loc, "the output");
  if (failed(n))
    return failure();
  if (*n > kMaxHostElements) {
    // Too large to evaluate here: a splat constant, which holds one value.
    Type et = elementTypeOf(ctx.b, r.dtype);
    if (!et)
      return ctx.fail("value has element type " + dtypeName(r.dtype) + ", which kiln does not "
                      "support");
    auto type = RankedTensorType::get(r.shape, et);
    Attribute element = isa<FloatType>(et) ? (Attribute)ctx.b.getFloatAttr(et, value)
                                           : (Attribute)ctx.b.getIntegerAttr(et, (int64_t)value);
    ctx.setOutput(0, k::ConstantOp::create(ctx.b, ctx.loc, type,
                                           DenseElementsAttr::get(type, element)));
    return success();
  }
  if (r.isFloat())
    r.floats.assign(*n, value);
  else
    r.ints.assign(*n, (int64_t)value);
  ctx.setHostOutput(0, std::move(r));
  return success();
}

/// Range with an operand known only at run time: start + i * delta for i
/// below max(ceil((limit - start) / delta), 0), computed in f64. With a
/// declared static output length, that length is checked at run time;
/// without one, the output's length is a dynamic dimension.
static LogicalResult runtimeRange(ImportContext &ctx) {
  auto start = ctx.input(0), limit = ctx.input(1), delta = ctx.input(2);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  for (Value v : {*start, *limit, *delta})
    if (cast<RankedTensorType>(v.getType()).getRank() != 0)
      return ctx.fail("start, limit and delta must be scalars");
  Emitter e{ctx};
  Type et = getElementTypeOrSelf(start->getType()), f64 = ctx.b.getF64Type();
  auto span = e.binary<k::SubOp>(e.castTo(*limit, f64), e.castTo(*start, f64));
  if (failed(span))
    return failure();
  auto count = e.binary<k::DivOp>(*span, e.castTo(*delta, f64));
  if (failed(count))
    return failure();
  auto clamped = e.binary<k::MaxOp>(e.unary<k::CeilOp>(*count), ctx.scalar(f64, 0));
  if (failed(clamped))
    return failure();
  Value steps;
  if (std::optional<std::vector<int64_t>> declared = declaredShape(ctx, 0)) {
    if (declared->size() != 1)
      return ctx.fail("Range's declared output shape must be 1-D");
    int64_t n = (*declared)[0];
    std::vector<int64_t> iota(n);
    std::iota(iota.begin(), iota.end(), 0);
    auto iotaValue = ctx.materialize(intTensor(iota, {n}), "range");
    auto fits = e.binary<k::EqualOp>(*clamped, ctx.scalar(f64, (double)n), ctx.b.getI1Type());
    if (failed(iotaValue) || failed(fits))
      return failure();
    guard(ctx, *fits, "limit",
          "must give max(ceil((limit - start) / delta), 0) = " + llvm::Twine(n) + " elements");
    steps = *iotaValue;
  } else {
    auto i64 = ctx.b.getI64Type();
    steps = k::IotaOp::create(ctx.b, ctx.loc, RankedTensorType::get({ShapedType::kDynamic}, i64),
                              e.castTo(*clamped, i64));
  }
  auto offsets = e.binary<k::MulOp>(e.castTo(steps, et), *delta);
  if (failed(offsets))
    return failure();
  auto values = e.binary<k::AddOp>(*offsets, *start);
  if (failed(values))
    return failure();
  ctx.setOutput(0, *values);
  return success();
}

/// Range with compile-time start, limit and delta.
static LogicalResult importRange(ImportContext &ctx) {
  const HostTensor *s = ctx.hostInput(0), *l = ctx.hostInput(1), *d = ctx.hostInput(2);
  if (!s || !l || !d)
    return runtimeRange(ctx);
  for (const HostTensor *t : {s, l, d})
    if (t->numElements() != 1)
      return ctx.fail("start, limit and delta must be scalars");
  auto scalar = [](const HostTensor *t) { return t->isFloat() ? t->floats[0] : (double)t->ints[0]; };
  double start = scalar(s), limit = scalar(l), delta = scalar(d);
  if (delta == 0)
    return ctx.fail("Range delta must not be 0");
  double length = std::ceil((limit - start) / delta);
  if (!(length <= double(kMaxHostElements)))
    return ctx.fail("Range would have more than the " + llvm::Twine(kMaxHostElements) +
                    " elements kiln computes while compiling");
  int64_t n = std::max<int64_t>(0, (int64_t)length);
  HostTensor r;
  r.dtype = s->dtype;
  r.shape = {n};
  for (int64_t i = 0; i < n; ++i) {
    if (r.isFloat())
      r.floats.push_back(start + i * delta);
    else
      r.ints.push_back((int64_t)start + i * (int64_t)delta);
  }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

static LogicalResult importSize(ImportContext &ctx) {
  int64_t n = 1;
  for (int64_t d : shapeOfInput(ctx))
    n *= d;
  ctx.setHostOutput(0, intTensor({n}, {}));
  return success();
}

/// DepthToSpace / SpaceToDepth as reshape -> transpose -> reshape.
template <bool toSpace>
static LogicalResult importDepthSpace(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 4)
    return ctx.fail("only rank-4 NCHW inputs are supported");
  int64_t bs = ctx.attrInt("blocksize", 0), n = xt.getDimSize(0), c = xt.getDimSize(1),
          h = xt.getDimSize(2), w = xt.getDimSize(3);
  if (bs < 1 || (toSpace ? c % (bs * bs) : h % bs + w % bs) != 0)
    return ctx.fail("blocksize does not divide the input");
  bool crd = ctx.attrString("mode") == "CRD";
  Type et = xt.getElementType();
  SmallVector<int64_t> split, perm, out;
  if (toSpace) {
    int64_t oc = c / (bs * bs);
    split = crd ? SmallVector<int64_t>{n, oc, bs, bs, h, w} : SmallVector<int64_t>{n, bs, bs, oc, h, w};
    perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3} : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
    out = {n, oc, h * bs, w * bs};
  } else {
    split = {n, c, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * bs * bs, h / bs, w / bs};
  }
  Value r = k::ReshapeOp::create(ctx.b, ctx.loc, RankedTensorType::get(split, et), *x);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(split[p]);
  r = k::TransposeOp::create(ctx.b, ctx.loc, RankedTensorType::get(permuted, et), r, perm);
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, RankedTensorType::get(out, et), r));
  return success();
}

static LogicalResult importGatherElements(ImportContext &ctx) {
  auto d = ctx.input(0), i = ctx.input(1);
  if (failed(d) || failed(i))
    return failure();
  auto dt = cast<RankedTensorType>(d->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", 0), dt.getRank());
  if (failed(axis))
    return failure();
  auto shape = cast<RankedTensorType>(i->getType()).getShape();
  ctx.setOutput(0, k::GatherElementsOp::create(
                       ctx.b, ctx.loc, RankedTensorType::get(shape, dt.getElementType()), *d, *i,
                       *axis));
  return success();
}

static LogicalResult importTrilu(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Value kv;
  if (ctx.hasInput(1)) {
    auto kIn = ctx.input(1);
    if (failed(kIn))
      return failure();
    kv = *kIn;
    auto kt = cast<RankedTensorType>(kv.getType());
    if (kt.getNumElements() != 1 || !kt.getElementType().isInteger(64))
      return ctx.fail("k must be a single int64 value");
    if (kt.getRank() != 0)
      kv = k::ReshapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({}, kt.getElementType()),
                                kv);
  } else {
    kv = ctx.scalar(ctx.b.getI64Type(), 0);
  }
  ctx.setOutput(0, k::TriluOp::create(ctx.b, ctx.loc, x->getType(), *x, kv,
                                      ctx.b.getBoolAttr(ctx.attrInt("upper", 1) != 0)));
  return success();
}

/// Resize's `scales` at run time: the output has the declared shape, the
/// scales themselves are read at run time (they place the samples), and a
/// check confirms that floor(input size * scale) is the declared size.
/// `shape` and `scales` receive the declared shape and the ratios it implies.
static FailureOr<Value> runtimeResizeScales(ImportContext &ctx, size_t input,
                                            ArrayRef<int64_t> in, SmallVectorImpl<int64_t> &shape,
                                            std::vector<double> &scales) {
  auto declared = declaredPerDimension(ctx, input, "scales");
  auto given = ctx.input(input);
  if (failed(declared) || failed(given))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(given->getType())))
    return ctx.fail("scales must be a float tensor");
  int64_t rank = in.size();
  Emitter e{ctx};
  Value f = e.reshape(e.castTo(*given, ctx.b.getF32Type()), {rank});
  auto floats = [&](ArrayRef<int64_t> values) {
    HostTensor t;
    t.dtype = onnx::TensorProto::FLOAT;
    t.shape = {rank};
    t.floats.assign(values.begin(), values.end());
    return *ctx.materialize(t, "resize");
  };
  auto sizes = e.binary<k::MulOp>(f, floats(in));
  if (failed(sizes))
    return failure();
  auto fits = e.binary<k::EqualOp>(e.unary<k::FloorOp>(*sizes), floats(*declared),
                                   ctx.b.getI1Type());
  if (failed(fits))
    return failure();
  guard(ctx, *fits, "scales", "must give floor(input size * scale) = the declared size");
  for (int64_t d = 0; d < rank; ++d) {
    shape[d] = (*declared)[d];
    scales[d] = in[d] ? double(shape[d]) / double(in[d]) : 1.0;
  }
  return f;
}

/// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample.
/// The input coordinate of output index i along an axis resized from `in`
/// to `out` by `scale` (Resize's coordinate_transformation_mode).
static double resizeSource(StringRef coord, double i, double scale, int64_t in, int64_t out) {
  if (coord == "asymmetric")
    return i / scale;
  if (coord == "align_corners")
    return out == 1 ? 0.0 : i * double(in - 1) / double(out - 1);
  if (coord == "tf_half_pixel_for_nn")
    return (i + 0.5) / scale;
  if (coord == "pytorch_half_pixel" && out == 1)
    return -0.5;
  double halfPixel = (i + 0.5) / scale - 0.5;
  if (coord == "half_pixel_symmetric")
    return double(in) / 2 * (1 - double(out) / (double(in) * scale)) + halfPixel;
  return halfPixel;
}

/// The [out, in] interpolation weights of an antialiased Resize along one
/// axis, as onnxruntime computes them (PIL's resampling): the linear
/// (triangle) or cubic kernel stretched by 1/scale when downscaling,
/// normalized per output; taps past the edge read the edge value, or are
/// dropped with exclude_outside.
static HostTensor antialiasWeights(int32_t dtype, int64_t in, int64_t out, double scale,
                                   bool cubic, double a, bool excludeOutside, StringRef coord) {
  auto kernel = [&](double x) {
    x = std::fabs(x);
    if (!cubic)
      return std::max(0.0, 1.0 - x);
    if (x <= 1)
      return ((a + 2) * x - (a + 3)) * x * x + 1;
    return x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0.0;
  };
  double stretch = scale < 1 ? 1 / scale : 1.0;
  double support = (cubic ? 2.0 : 1.0) * stretch;
  HostTensor w;
  w.dtype = dtype;
  w.shape = {out, in};
  w.floats.assign(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double center = resizeSource(coord, double(o), scale, in, out) + 0.5, total = 0;
    auto first = (int64_t)std::floor(center - support + 0.5);
    auto last = (int64_t)std::floor(center + support + 0.5);
    for (int64_t x = first; x < last; ++x) {
      if (excludeOutside && (x < 0 || x >= in))
        continue;
      double weight = kernel((double(x) - center + 0.5) / stretch);
      w.floats[o * in + std::clamp<int64_t>(x, 0, in - 1)] += weight;
      total += weight;
    }
    for (int64_t x = 0; x < in && total != 0; ++x)
      w.floats[o * in + x] /= total;
  }
  return w;
}

/// Resize with antialias=1 (linear or cubic): a contraction of each resized
/// axis with its constant weight matrix.
static LogicalResult importAntialiasResize(ImportContext &ctx, Value x, ArrayRef<int64_t> shape,
                                           ArrayRef<double> scales, StringRef mode,
                                           StringRef coord) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (!xt.hasStaticShape())
    return ctx.fail("antialiased Resize needs a static input shape");
  if (coord == "tf_half_pixel_for_nn")
    return ctx.fail("antialiased Resize does not take coordinate_transformation_mode "
                    "'tf_half_pixel_for_nn'");
  Value r = x;
  SmallVector<int64_t> current(xt.getShape());
  std::string letters = std::string("abcdefgh").substr(0, xt.getRank());
  for (int64_t d = 0; d < xt.getRank(); ++d) {
    if (shape[d] == current[d] && scales[d] == 1.0)
      continue;
    if (shape[d] <= 0 || failed(constantElementCount({shape[d], current[d]}, ctx.loc,
                                                      "the interpolation weights")))
      return ctx.fail("antialiased Resize needs positive output sizes");
    auto weights = ctx.materialize(
        antialiasWeights(dtypeCodeOf(xt.getElementType()), current[d], shape[d], scales[d],
                         mode == "cubic", ctx.attrFloat("cubic_coeff_a", -0.75f),
                         ctx.attrInt("exclude_outside", 0) != 0, coord),
        "resize_weights");
    if (failed(weights))
      return failure();
    // "abcd,zc->abzd" contracts axis d (here c) into the new size z.
    std::string result = letters;
    result[d] = 'z';
    current[d] = shape[d];
    r = k::EinsumOp::create(ctx.b, ctx.loc, RankedTensorType::get(current, xt.getElementType()),
                            ValueRange{r, *weights},
                            letters + ",z" + letters[d] + "->" + result);
  }
  ctx.setOutput(0, r);
  return success();
}

/// Resize's `sizes` when only the run time knows them and the result's shape
/// is not declared static (dynamic inputs): one size per dimension for
/// kiln.resize's `runtime_sizes`, the input's own size where `axes` does
/// not name the dimension. The resized dimensions of `shape` become dynamic.
static FailureOr<Value> runtimeResizeSizes(ImportContext &ctx, size_t input, Value x,
                                           ArrayRef<int64_t> axes,
                                           SmallVectorImpl<int64_t> &shape) {
  auto sizes = int64Operand(ctx, input, "sizes");
  if (failed(sizes))
    return failure();
  if (cast<RankedTensorType>(sizes->getType()).getNumElements() != (int64_t)axes.size())
    return ctx.fail("sizes needs one entry per resized dimension");
  int64_t rank = shape.size();
  for (int64_t a : axes)
    shape[a] = ShapedType::kDynamic;
  if (llvm::equal(axes, llvm::seq<int64_t>(0, rank)))
    return *sizes;
  auto i64 = ctx.b.getI64Type();
  Value dims = k::ShapeOp::create(ctx.b, ctx.loc, RankedTensorType::get({rank}, i64), x);
  SmallVector<Value> pieces;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t *at = llvm::find(axes, d);
    bool resized = at != axes.end();
    int64_t index = resized ? at - axes.begin() : d;
    pieces.push_back(k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({1}, i64),
                                        resized ? *sizes : dims, ArrayRef<int64_t>{index},
                                        ArrayRef<int64_t>{1}));
  }
  return k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get({rank}, i64), pieces, 0)
      .getResult();
}

static LogicalResult importResize(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  bool v10 = ctx.node->op_type() == "Upsample" || ctx.opset < 11;
  std::string mode = ctx.attrString("mode", "nearest");
  std::string coord = v10 ? "asymmetric"
                          : ctx.attrString("coordinate_transformation_mode", "half_pixel");
  std::string nearest = v10 ? "floor" : ctx.attrString("nearest_mode", "round_prefer_floor");
  std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return ctx.fail("unknown keep_aspect_ratio_policy '" + policy + "'");
  // Opset 18 `axes`: scales and sizes name only these dimensions.
  std::vector<int64_t> axes;
  for (int64_t a : ctx.attrInts("axes")) {
    auto axis = ctx.axis(a, rank);
    if (failed(axis))
      return failure();
    axes.push_back(*axis);
  }
  bool allAxes = axes.empty();
  if (allAxes)
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  std::vector<double> scales(rank, 1.0);
  SmallVector<int64_t> shape(xt.getShape());
  size_t scalesInput = v10 ? 1 : 2, sizesInput = 3;
  Value runtimeScales, runtimeSizes;
  bool runtimeSized = !v10 && ctx.hasInput(sizesInput) && !ctx.hostInput(sizesInput) &&
                      (!xt.hasStaticShape() || !declaredShape(ctx, 0));
  if (ctx.node->op_type() == "Upsample" && ctx.opset < 9) {
    for (const auto &a : ctx.node->attribute())
      if (a.name() == "scales")
        scales.assign(a.floats().begin(), a.floats().end());
  } else if (runtimeSized) {
    if (policy != "stretch")
      return ctx.fail("keep_aspect_ratio_policy '" + policy + "' needs constant sizes");
    auto sizes = runtimeResizeSizes(ctx, sizesInput, *x, axes, shape);
    if (failed(sizes))
      return failure();
    runtimeSizes = *sizes;
  } else if (ctx.hasInput(sizesInput)) {
    if (!allAxes && !ctx.hostInput(sizesInput))
      return ctx.fail("Resize with axes needs constant sizes");
    auto sizes = ctx.hostInput(sizesInput) ? ctx.hostInts(sizesInput, "sizes")
                                           : runtimeShapeOperand(ctx, sizesInput, "sizes");
    if (failed(sizes))
      return failure();
    if (sizes->size() != axes.size())
      return ctx.fail("sizes needs one entry per resized dimension");
    if (llvm::any_of(*sizes, [](int64_t s) { return s < 1 || s >= (int64_t(1) << 40); }))
      return ctx.fail("sizes must be positive and under 2^40");
    if (policy != "stretch" && !xt.hasStaticShape())
      return ctx.fail("keep_aspect_ratio_policy needs a static input shape");
    // not_larger/not_smaller: one scale for every axis, the smallest
    // (largest) that the sizes allow; sizes are then rounded from it.
    double common = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double ratio = double((*sizes)[i]) / double(xt.getDimSize(axes[i]));
      common = policy == "not_larger" ? std::min(common, ratio) : std::max(common, ratio);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t d = axes[i];
      scales[d] = policy == "stretch" ? double((*sizes)[i]) / double(xt.getDimSize(d)) : common;
      double size = policy == "stretch" ? double((*sizes)[i])
                                        : std::round(common * double(xt.getDimSize(d)));
      if (!(size < 0x1p47))
        return ctx.fail("sizes make dimension " + llvm::Twine(d) + " larger than 2^47");
      shape[d] = static_cast<int64_t>(size);
    }
  } else if (ctx.hasInput(scalesInput) && !ctx.hostInput(scalesInput)) {
    if (!allAxes)
      return ctx.fail("Resize with axes needs constant scales");
    auto r = runtimeResizeScales(ctx, scalesInput, xt.getShape(), shape, scales);
    if (failed(r))
      return failure();
    runtimeScales = *r;
  } else if (ctx.hasInput(scalesInput)) {
    const HostTensor *s = ctx.hostInput(scalesInput);
    if (!s->isFloat())
      return ctx.fail("scales must be a float tensor");
    if (s->floats.size() != axes.size())
      return ctx.fail("scales needs one entry per resized dimension");
    for (size_t i = 0; i < axes.size(); ++i)
      scales[axes[i]] = s->floats[i];
  } else {
    return ctx.fail("Resize needs scales or sizes");
  }
  if (mode == "linear" && v10)
    coord = "asymmetric";
  Value roi;
  if (coord == "tf_crop_and_resize") {
    if (!allAxes || !ctx.hasInput(1) || !ctx.hasInput(sizesInput))
      return ctx.fail("tf_crop_and_resize needs a roi and sizes for every dimension");
    auto r = ctx.input(1);
    if (failed(r))
      return failure();
    if (cast<RankedTensorType>(r->getType()).getNumElements() != 2 * rank)
      return ctx.fail("roi needs " + llvm::Twine(2 * rank) + " values (starts, then ends)");
    Emitter e{ctx};
    roi = e.reshape(e.castTo(*r, ctx.b.getF32Type()), {2 * rank});
  }
  if (!runtimeScales && llvm::any_of(scales, [](double s) { return !(s > 0 && std::isfinite(s)); }))
    return ctx.fail("scales must be positive and finite");
  bool sized = ctx.hasInput(sizesInput) && !v10;
  if (!xt.hasStaticShape() && (runtimeScales || (sized && !runtimeSizes)))
    return ctx.fail("Resize of an input with dynamic dimensions needs constant scales; pin "
                    "the model's input shapes with --input-shape");
  for (int64_t d = 0; d < rank && !runtimeScales; ++d) {
    if (sized || xt.isDynamicDim(d)) {
      shape[d] = sized ? shape[d] : ShapedType::kDynamic;
      continue;
    }
    float size = std::floor(xt.getDimSize(d) * (float)scales[d]);
    if (!(size < 0x1p47f))
      return ctx.fail("scales make dimension " + llvm::Twine(d) + " larger than 2^47");
    shape[d] = static_cast<int64_t>(size);
  }
  if (failed(checkOutputSize(ctx, shape, xt.getElementType())))
    return failure();
  if (ctx.attrInt("antialias", 0) && mode != "nearest") {
    if (runtimeScales || runtimeSizes || roi)
      return ctx.fail("antialiased Resize needs constant scales or sizes and no roi");
    return importAntialiasResize(ctx, *x, shape, scales, mode, coord);
  }
  auto type = RankedTensorType::get(shape, xt.getElementType());
  ctx.setOutput(0, k::ResizeOp::create(
                       ctx.b, ctx.loc, type, *x, runtimeScales, runtimeSizes, roi, mode, coord,
                       nearest, scales, APFloat((double)ctx.attrFloat("cubic_coeff_a", -0.75f)),
                       APFloat((double)ctx.attrFloat("extrapolation_value", 0.0f)),
                       ctx.attrInt("exclude_outside", 0) != 0));
  return success();
}

/// CumSum and CumProd (`kind` "sum" or "prod"). The axis input may be a
/// run-time value: it does not change the result shape, so every possible
/// axis is computed and the one asked for is selected (a rank-1 input has
/// only one).
static LogicalResult importCumulative(ImportContext &ctx, StringRef kind) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  bool exclusive = ctx.attrInt("exclusive", 0), reverse = ctx.attrInt("reverse", 0);
  auto along = [&](int64_t axis) -> Value {
    return k::CumulativeOp::create(ctx.b, ctx.loc, xt, *x, kind, axis, exclusive, reverse);
  };
  if (const HostTensor *a = ctx.hostInput(1)) {
    if (a->numElements() != 1 || a->isFloat())
      return ctx.fail("axis must be an integer scalar");
    auto axis = ctx.axis(a->ints[0], rank);
    if (failed(axis))
      return failure();
    ctx.setOutput(0, along(*axis));
    return success();
  }
  auto axisValue = ctx.input(1);
  if (failed(axisValue))
    return failure();
  Emitter e{ctx};
  Value axisScalar = e.reshape(e.castTo(*axisValue, ctx.b.getI64Type()), {});
  Value r = along(rank - 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    auto isD = e.binary<k::EqualOp>(axisScalar, e.constant(axisScalar, (double)d),
                                    ctx.b.getI1Type());
    auto isNeg = e.binary<k::EqualOp>(axisScalar, e.constant(axisScalar, (double)(d - rank)),
                                      ctx.b.getI1Type());
    if (failed(isD) || failed(isNeg))
      return failure();
    auto pick = e.binary<k::OrOp>(*isD, *isNeg);
    if (failed(pick))
      return failure();
    r = k::WhereOp::create(ctx.b, ctx.loc, xt, *pick, along(d), r);
  }
  ctx.setOutput(0, r);
  return success();
}

/// 0..n-1 along `axis` of a rank-`rank` tensor (other dimensions 1).
static Value iota(ImportContext &ctx, int64_t n, int64_t axis, int64_t rank) {
  HostTensor t = intTensor({}, std::vector<int64_t>(rank, 1));
  t.shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    t.ints.push_back(i);
  return *ctx.materialize(t, "iota");
}

/// Hardmax: one-hot of the (first) argmax along the axis. Before opset 13
/// the axis splits a 2-D view, as for Softmax.
static LogicalResult importHardmax(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Emitter e{ctx};
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", ctx.opset < 13 ? 1 : -1), xt.getRank());
  if (failed(axis))
    return failure();
  Value in = *x;
  int64_t a = *axis;
  if (ctx.opset < 13 && a != xt.getRank() - 1) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < xt.getRank(); ++i)
      (i < a ? outer : inner) *= xt.getDimSize(i);
    in = e.reshape(in, {outer, inner});
    a = 1;
  }
  auto it = cast<RankedTensorType>(in.getType());
  SmallVector<int64_t> kept(it.getShape());
  kept[a] = 1;
  Value am = k::ArgMaxOp::create(ctx.b, ctx.loc, RankedTensorType::get(kept, ctx.b.getI64Type()),
                                 in, a, true, false);
  auto hot = e.binary<k::EqualOp>(am, iota(ctx, it.getDimSize(a), a, it.getRank()),
                                  ctx.b.getI1Type());
  if (failed(hot))
    return failure();
  Value r = e.castTo(*hot, it.getElementType());
  ctx.setOutput(0, r.getType() == xt ? r : e.reshape(r, xt.getShape()));
  return success();
}

static FailureOr<int64_t> oneHotDepth(ImportContext &ctx, const HostTensor &t) {
  if (t.numElements() != 1)
    return ctx.fail("depth must hold exactly one value");
  return t.isFloat() ? (int64_t)t.floats[0] : t.ints[0];
}

/// OneHot's `depth` at run time: the declared size of the output's `axis`.
static FailureOr<int64_t> runtimeOneHotDepth(ImportContext &ctx, int64_t axis) {
  auto declared = declaredFor(ctx, "depth");
  auto length = operandLength(ctx, 1);
  if (failed(declared) || failed(length))
    return failure();
  if (*length != 1 || (int64_t)declared->size() <= axis)
    return failRuntimeOperand(ctx, "depth", "it is not one value or the declared output rank "
                                            "is too small");
  int64_t depth = (*declared)[axis];
  if (failed(guardElements(ctx, 1, "depth", {{depth}})))
    return failure();
  return depth;
}

/// OneHot(indices, depth, values=[off, on]): the depth dimension is
/// inserted at `axis`; negative indices count from the end.
static LogicalResult importOneHot(ImportContext &ctx) {
  auto indices = ctx.input(0), values = ctx.input(2);
  const HostTensor *depthT = ctx.hostInput(1);
  if (failed(indices) || failed(values))
    return failure();
  auto itype = cast<RankedTensorType>(indices->getType());
  auto axis = ctx.axis(ctx.attrInt("axis", -1), itype.getRank() + 1);
  if (failed(axis))
    return failure();
  auto depth = depthT ? oneHotDepth(ctx, *depthT) : runtimeOneHotDepth(ctx, *axis);
  if (failed(depth))
    return failure();
  Emitter e{ctx};
  Value idx = e.castTo(*indices, ctx.b.getI64Type());
  auto neg = e.binary<k::LessOp>(idx, e.constant(idx, 0), ctx.b.getI1Type());
  auto wrapped = e.binary<k::AddOp>(idx, e.constant(idx, (double)*depth));
  if (failed(neg) || failed(wrapped))
    return failure();
  idx = k::WhereOp::create(ctx.b, ctx.loc, idx.getType(), *neg, *wrapped, idx);
  SmallVector<int64_t> shape(itype.getShape());
  shape.insert(shape.begin() + *axis, 1);
  auto hot = e.binary<k::EqualOp>(e.reshape(idx, shape),
                                  iota(ctx, *depth, *axis, shape.size()), ctx.b.getI1Type());
  if (failed(hot))
    return failure();
  auto vt = cast<RankedTensorType>(values->getType());
  auto scalarType = RankedTensorType::get({1}, vt.getElementType());
  Value off = e.reshape(k::SliceOp::create(ctx.b, ctx.loc, scalarType, *values,
                                           ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1}),
                        {});
  Value on = e.reshape(k::SliceOp::create(ctx.b, ctx.loc, scalarType, *values,
                                          ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1}),
                       {});
  auto outShape = cast<RankedTensorType>(hot->getType()).getShape();
  ctx.setOutput(0, k::WhereOp::create(ctx.b, ctx.loc,
                                      RankedTensorType::get(outShape, vt.getElementType()), *hot,
                                      on, off));
  return success();
}

/// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input.
static LogicalResult importEyeLike(ImportContext &ctx) {
  std::vector<int64_t> shape = shapeOfInput(ctx);
  if (shape.size() != 2)
    return ctx.fail("EyeLike needs a 2-D input");
  HostTensor r;
  r.dtype = ctx.attrInt("dtype", 0);
  if (!r.dtype) {
    if (const HostTensor *t = ctx.hostInput(0)) {
      r.dtype = t->dtype;
    } else {
      auto type = ctx.inputType(0);
      if (failed(type))
        return failure();
      r.dtype = dtypeCodeOf(type->getElementType());
    }
  }
  r.shape = shape;
  int64_t diag = ctx.attrInt("k", 0);
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j) {
      bool one = j - i == diag;
      if (r.isFloat())
        r.floats.push_back(one);
      else
        r.ints.push_back(one);
    }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

static LogicalResult importGatherND(ImportContext &ctx) {
  auto d = ctx.input(0), i = ctx.input(1);
  if (failed(d) || failed(i))
    return failure();
  auto dt = cast<RankedTensorType>(d->getType());
  auto it = cast<RankedTensorType>(i->getType());
  if (!dt.hasStaticShape() || it.isDynamicDim(it.getRank() - 1))
    return ctx.fail("GatherND needs static data and a static index tuple length (only the "
                    "number of index tuples may be dynamic)");
  int64_t b = ctx.attrInt("batch_dims", 0), k = it.getShape().back();
  if (b + k > dt.getRank())
    return ctx.fail("index tuples do not fit the data rank");
  SmallVector<int64_t> shape(it.getShape().drop_back());
  shape.append(dt.getShape().begin() + b + k, dt.getShape().end());
  ctx.setOutput(0, k::GatherNDOp::create(ctx.b, ctx.loc,
                                         RankedTensorType::get(shape, dt.getElementType()), *d,
                                         *i, b));
  return success();
}

template <bool nd>
static LogicalResult importScatter(ImportContext &ctx) {
  auto d = ctx.input(0), i = ctx.input(1), u = ctx.input(2);
  if (failed(d) || failed(i) || failed(u))
    return failure();
  std::string reduction = ctx.attrString("reduction", "none");
  if constexpr (nd) {
    ctx.setOutput(0, k::ScatterNDOp::create(ctx.b, ctx.loc, d->getType(), *d, *i, *u,
                                            reduction));
  } else {
    auto axis = ctx.axis(ctx.attrInt("axis", 0), cast<RankedTensorType>(d->getType()).getRank());
    if (failed(axis))
      return failure();
    ctx.setOutput(0, k::ScatterElementsOp::create(ctx.b, ctx.loc, d->getType(), *d, *i, *u,
                                                  *axis, reduction));
  }
  return success();
}

/// ReverseSequence: within each batch entry, the first sequence_lens[b] time
/// steps are reversed. Built as a GatherElements along the time axis with
/// index t < len ? len - 1 - t : t.
static LogicalResult importReverseSequence(ImportContext &ctx) {
  auto x = ctx.input(0), lens = ctx.input(1);
  if (failed(x) || failed(lens))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  auto timeAxis = ctx.axis(ctx.attrInt("time_axis", 0), rank);
  auto batchAxis = ctx.axis(ctx.attrInt("batch_axis", 1), rank);
  if (failed(timeAxis) || failed(batchAxis))
    return failure();
  Emitter e{ctx};
  Type i1 = ctx.b.getI1Type();
  SmallVector<int64_t> lenShape(rank, 1);
  lenShape[*batchAxis] = xt.getDimSize(*batchAxis);
  Value len = e.reshape(e.castTo(*lens, ctx.b.getI64Type()), lenShape);
  Value t = iota(ctx, xt.getDimSize(*timeAxis), *timeAxis, rank);
  auto inPrefix = e.binary<k::LessOp>(t, len, i1);
  auto reversed = e.binary<k::SubOp>(len, t);
  if (failed(inPrefix) || failed(reversed))
    return failure();
  auto reversedIdx = e.binary<k::SubOp>(*reversed, e.constant(*reversed, 1.0));
  if (failed(reversedIdx))
    return failure();
  auto idxType = cast<RankedTensorType>(reversedIdx->getType());
  auto tFull = k::ExpandOp::create(ctx.b, ctx.loc, idxType, t);
  Value idx = k::WhereOp::create(ctx.b, ctx.loc, idxType,
                                 k::ExpandOp::create(ctx.b, ctx.loc,
                                                     RankedTensorType::get(idxType.getShape(), i1),
                                                     *inPrefix),
                                 *reversedIdx, tFull);
  auto full = RankedTensorType::get(xt.getShape(), ctx.b.getI64Type());
  idx = k::ExpandOp::create(ctx.b, ctx.loc, full, idx);
  ctx.setOutput(0, k::GatherElementsOp::create(ctx.b, ctx.loc, xt, *x, idx, *timeAxis));
  return success();
}

/// AffineGrid (opset 20): grid[n, (d,) h, w] = theta[n] @ (x_w, y_h, (z_d,) 1),
/// the coordinates of each output point normalized to [-1, 1]: one batched
/// matmul of a constant base grid [points, k+1] by theta^T [N, k+1, k].
static LogicalResult importAffineGrid(ImportContext &ctx) {
  auto theta = ctx.input(0);
  auto size = ctx.hostInts(1, "size");
  if (failed(theta) || failed(size))
    return failure();
  auto tt = cast<RankedTensorType>(theta->getType());
  int64_t spatial = (int64_t)size->size() - 2;
  if ((spatial != 2 && spatial != 3) || tt.getRank() != 3 || !tt.hasStaticShape() ||
      tt.getDimSize(1) != spatial || tt.getDimSize(2) != spatial + 1)
    return ctx.fail("AffineGrid needs theta [N, 2, 3] with a 4-entry size or [N, 3, 4] with a "
                    "5-entry size, got theta " + shapeText(tt.getShape()) + " and size " +
                    shapeText(*size));
  bool alignCorners = ctx.attrInt("align_corners", 0);
  // Normalized coordinate of index i of n.
  auto coordinate = [&](int64_t i, int64_t n) -> double {
    if (alignCorners)
      return n == 1 ? 0.0 : -1.0 + 2.0 * i / double(n - 1);
    return (2.0 * i + 1.0) / double(n) - 1.0;
  };
  // Points in row-major order of (d,) h, w; columns x (along w), y, (z,) 1.
  std::vector<int64_t> dims(size->begin() + 2, size->end());
  auto points = constantElementCount(dims, ctx.loc, "the grid");
  if (failed(points) || failed(constantElementCount({*points, spatial + 1}, ctx.loc, "the grid")))
    return failure();
  // The base grid is built at compile time: bound its size (and the time).
  constexpr int64_t kMaxPoints = int64_t(1) << 20;
  if (*points > kMaxPoints)
    return ctx.fail("AffineGrid's size " + shapeText(*size) + " makes " + llvm::Twine(*points) +
                    " points; kiln builds the grid at compile time, up to 2^20 points");
  HostTensor base;
  base.dtype = dtypeCodeOf(tt.getElementType());
  base.shape = {1, *points, spatial + 1};
  for (int64_t p = 0; p < *points; ++p) {
    std::vector<int64_t> index(spatial);
    for (int64_t d = spatial - 1, rest = p; d >= 0; --d) {
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    for (int64_t d = spatial - 1; d >= 0; --d) // x first: the last dimension
      base.floats.push_back(coordinate(index[d], dims[d]));
    base.floats.push_back(1.0);
  }
  auto grid = ctx.materialize(base, "affine_grid_base");
  if (failed(grid))
    return failure();
  int64_t n = tt.getDimSize(0);
  Type et = tt.getElementType();
  Value thetaT = k::TransposeOp::create(
      ctx.b, ctx.loc, RankedTensorType::get({n, spatial + 1, spatial}, et), *theta,
      ArrayRef<int64_t>{0, 2, 1});
  Value flat = k::MatMulOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, *points, spatial}, et),
                                   *grid, thetaT);
  SmallVector<int64_t> shape = {n};
  shape.append(dims.begin(), dims.end());
  shape.push_back(spatial);
  ctx.setOutput(0, Emitter{ctx}.reshape(flat, shape));
  return success();
}

/// An i64 host tensor of `shape` holding f(flat index).
static HostTensor indexTensor(std::vector<int64_t> shape,
                              llvm::function_ref<int64_t(int64_t)> f) {
  std::vector<int64_t> values(std::accumulate(shape.begin(), shape.end(), int64_t(1),
                                              std::multiplies<int64_t>()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = f(i);
  return intTensor(std::move(values), std::move(shape));
}

/// TensorScatter (opset 24): a KV cache with `update` written along `axis`
/// at write_indices[b] + i (modulo the cache length when "circular"): a
/// ScatterElements whose indices are computed from write_indices.
static LogicalResult importTensorScatter(ImportContext &ctx) {
  auto cache = ctx.input(0), update = ctx.input(1);
  if (failed(cache) || failed(update))
    return failure();
  auto ct = cast<RankedTensorType>(cache->getType()), ut = cast<RankedTensorType>(update->getType());
  if (!ct.hasStaticShape() || !ut.hasStaticShape() || ct.getRank() != ut.getRank() ||
      ct.getRank() < 2)
    return ctx.fail("TensorScatter needs static cache and update shapes of one rank >= 2, got " +
                    shapeText(ct.getShape()) + " and " + shapeText(ut.getShape()));
  int64_t rank = ct.getRank();
  auto axis = ctx.axis(ctx.attrInt("axis", -2), rank);
  if (failed(axis))
    return failure();
  if (*axis == 0)
    return ctx.fail("TensorScatter's axis cannot be the batch axis 0");
  std::string mode = ctx.attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return ctx.fail("mode must be 'linear' or 'circular', got '" + mode + "'");
  Emitter e{ctx};
  std::vector<int64_t> along(rank, 1);
  along[*axis] = ut.getDimSize(*axis);
  auto offsets = ctx.materialize(indexTensor(along, [](int64_t i) { return i; }),
                                 "tensor_scatter_offsets");
  if (failed(offsets))
    return failure();
  Value positions = *offsets;
  if (ctx.hasInput(2)) {
    auto starts = ctx.input(2);
    if (failed(starts))
      return failure();
    std::vector<int64_t> perBatch(rank, 1);
    perBatch[0] = ct.getDimSize(0);
    auto sum = e.binary<k::AddOp>(e.reshape(e.castTo(*starts, ctx.b.getI64Type()), perBatch),
                                  positions);
    if (failed(sum))
      return failure();
    positions = *sum;
  }
  if (mode == "circular") {
    auto wrapped = e.binary<k::ModOp>(positions, e.constant(positions, ct.getDimSize(*axis)));
    if (failed(wrapped))
      return failure();
    positions = *wrapped;
  }
  Value indices = k::ExpandOp::create(
      ctx.b, ctx.loc, RankedTensorType::get(ut.getShape(), ctx.b.getI64Type()), positions);
  ctx.setOutput(0, k::ScatterElementsOp::create(ctx.b, ctx.loc, ct, *cache, indices, *update,
                                                *axis, "none"));
  return success();
}

/// Col2Im (opset 18): input [N, C * prod(block), L] holds, for each of the
/// L sliding blocks, its C x block values; they are summed into the image
/// [N, C, image...]. A ScatterElements with reduction add onto the flat
/// image plus one slot that collects the taps falling into the padding.
static LogicalResult importCol2Im(ImportContext &ctx) {
  auto x = ctx.input(0);
  auto image = ctx.hostInts(1, "image_shape"), block = ctx.hostInts(2, "block_shape");
  if (failed(x) || failed(image) || failed(block))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  size_t dims = image->size();
  std::vector<int64_t> dilations = ctx.attrInts("dilations", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * dims, 0));
  if (xt.getRank() != 3 || !xt.hasStaticShape() || block->size() != dims ||
      dilations.size() != dims || strides.size() != dims || pads.size() != 2 * dims)
    return ctx.fail("Col2Im needs a static [N, C*prod(block), L] input and one block size, "
                    "dilation, stride and two pads per image dimension");
  // Sizes in [1, 2^31) (pads in (-2^31, 2^31)) keep the arithmetic below exact.
  auto within = [](ArrayRef<int64_t> v, int64_t low) {
    return llvm::all_of(v, [&](int64_t x) { return x >= low && x < (int64_t(1) << 31); });
  };
  if (!within(*image, 1) || !within(*block, 1) || !within(strides, 1) || !within(dilations, 1) ||
      !within(pads, 1 - (int64_t(1) << 31)))
    return ctx.fail("Col2Im needs image and block sizes, strides and dilations from 1 to 2^31 "
                    "and pads under 2^31");
  std::vector<int64_t> perDim(dims);
  for (size_t d = 0; d < dims; ++d) {
    int64_t span = dilations[d] * ((*block)[d] - 1) + 1;
    perDim[d] = ((*image)[d] + pads[d] + pads[d + dims] - span) / strides[d] + 1;
    if (perDim[d] <= 0)
      return ctx.fail("no block fits the padded image along dimension " + llvm::Twine(d));
  }
  auto pixelCount = constantElementCount(*image, ctx.loc, "the image");
  auto tapCount = constantElementCount(*block, ctx.loc, "the block");
  auto blockCount = constantElementCount(perDim, ctx.loc, "the blocks");
  if (failed(pixelCount) || failed(tapCount) || failed(blockCount) ||
      failed(constantElementCount({*tapCount, *blockCount}, ctx.loc, "the block targets")))
    return failure();
  int64_t taps = *tapCount, pixels = *pixelCount, blocks = *blockCount;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1) / std::max<int64_t>(taps, 1);
  if (c * taps != xt.getDimSize(1) || blocks != xt.getDimSize(2))
    return ctx.fail("input " + shapeText(xt.getShape()) + " does not hold C x " +
                    llvm::Twine(taps) + " values for each of " + llvm::Twine(blocks) + " blocks");
  // Where tap k of block l lands: a flat pixel, or `pixels` in the padding.
  auto target = [&](int64_t i) {
    int64_t k = i / blocks, l = i % blocks, flat = 0, scale = 1;
    for (size_t d = dims; d-- > 0; scale *= (*image)[d]) {
      int64_t at = (l % perDim[d]) * strides[d] - pads[d] + (k % (*block)[d]) * dilations[d];
      if (at < 0 || at >= (*image)[d])
        return pixels;
      flat += at * scale;
      k /= (*block)[d];
      l /= perDim[d];
    }
    return flat;
  };
  auto where = ctx.materialize(indexTensor({1, 1, taps * blocks}, target), "col2im_targets");
  if (failed(where))
    return failure();
  Emitter e{ctx};
  Type et = xt.getElementType();
  Value updates = e.reshape(*x, {n, c, taps * blocks});
  Value indices = *where;
  if (n * c > 1)
    indices = k::ExpandOp::create(
        ctx.b, ctx.loc, RankedTensorType::get({n, c, taps * blocks}, ctx.b.getI64Type()), indices);
  HostTensor zeros;
  zeros.dtype = dtypeCodeOf(et);
  zeros.shape = {n, c, pixels + 1};
  zeros.floats.assign(n * c * (pixels + 1), 0.0);
  auto canvas = ctx.materialize(zeros, "col2im_canvas");
  if (failed(canvas))
    return failure();
  Value summed = k::ScatterElementsOp::create(ctx.b, ctx.loc, canvas->getType(), *canvas, indices,
                                              updates, 2, "add");
  Value inside = k::SliceOp::create(ctx.b, ctx.loc, RankedTensorType::get({n, c, pixels}, et),
                                    summed, ArrayRef<int64_t>{0, 0, 0},
                                    ArrayRef<int64_t>{1, 1, 1});
  SmallVector<int64_t> shape = {n, c};
  shape.append(image->begin(), image->end());
  ctx.setOutput(0, e.reshape(inside, shape));
  return success();
}

static LogicalResult importGridSample(ImportContext &ctx) {
  auto x = ctx.input(0), grid = ctx.input(1);
  if (failed(x) || failed(grid))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto gt = cast<RankedTensorType>(grid->getType());
  if (xt.getRank() != 4 || gt.getRank() != 4 || gt.getDimSize(3) != 2)
    return ctx.fail("only 2-D GridSample (NCHW input, [N, Ho, Wo, 2] grid) is supported");
  if (!isa<FloatType>(xt.getElementType()))
    return ctx.fail("GridSample needs a floating-point input");
  std::string mode = ctx.attrString("mode", "bilinear");
  if (mode == "linear")
    mode = "bilinear"; // opset 20 spellings
  if (mode == "cubic")
    mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return ctx.fail("GridSample mode '" + mode + "' is not supported");
  if (mode == "bicubic" && ctx.attrString("padding_mode", "zeros") != "zeros")
    return ctx.fail("bicubic GridSample with padding_mode '" +
                    ctx.attrString("padding_mode", "zeros") + "' is not supported (only zeros)");
  auto type = RankedTensorType::get(
      {xt.getDimSize(0), xt.getDimSize(1), gt.getDimSize(1), gt.getDimSize(2)},
      xt.getElementType());
  ctx.setOutput(0, k::GridSampleOp::create(ctx.b, ctx.loc, type, *x, *grid,
                                           ctx.b.getStringAttr(mode),
                                           ctx.b.getStringAttr(ctx.attrString("padding_mode", "zeros")),
                                           ctx.b.getBoolAttr(ctx.attrInt("align_corners", 0) != 0)));
  return success();
}

void registerTensorOps(ImportTable &t) {
  t["GridSample"] = importGridSample;
  t["ReverseSequence"] = importReverseSequence;
  t["GatherND"] = importGatherND;
  t["ScatterElements"] = importScatter<false>;
  t["Scatter"] = importScatter<false>;
  t["ScatterND"] = importScatter<true>;
  t["CumSum"] = [](ImportContext &c) { return importCumulative(c, "sum"); };
  t["CumProd"] = [](ImportContext &c) { return importCumulative(c, "prod"); };
  t["Hardmax"] = importHardmax;
  t["OneHot"] = importOneHot;
  t["EyeLike"] = importEyeLike;
  t["Trilu"] = importTrilu;
  t["Resize"] = importResize;
  t["Upsample"] = importResize;
  t["GatherElements"] = importGatherElements;
  t["Split"] = importSplit;
  t["Pad"] = importPad;
  t["Expand"] = importExpand;
  t["Tile"] = importTile;
  t["ConstantOfShape"] = importConstantOfShape;
  t["Range"] = importRange;
  t["Size"] = importSize;
  t["DepthToSpace"] = importDepthSpace<true>;
  t["SpaceToDepth"] = importDepthSpace<false>;
  t["Constant"] = importConstant;
  t["Reshape"] = importReshape;
  t["Flatten"] = importFlatten;
  t["Unsqueeze"] = importUnsqueeze;
  t["Squeeze"] = importSqueeze;
  t["Transpose"] = importTranspose;
  t["Concat"] = importConcat;
  t["Shape"] = importShape;
  t["Cast"] = importCast;
  t["BitCast"] = importBitCast;
  t["AffineGrid"] = importAffineGrid;
  t["TensorScatter"] = importTensorScatter;
  t["Col2Im"] = importCol2Im;
  t["CenterCropPad"] = importCenterCropPad;
  t["CastLike"] = importCastLike;
  t["Slice"] = importSlice;
  t["Gather"] = importGather;
}

} // namespace kiln::onnx_frontend
