//===- ImportTensor.cpp - ONNX shape and data-movement ops ----------------===//
//
// Shape-manipulating ops on compile-time tensors (Shape, Cast, Slice, Concat,
// Gather, Unsqueeze... on small integer tensors) are evaluated here, so
// dynamic-looking shape arithmetic folds into static kiln shapes.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

LogicalResult importTensorProto(ImportContext &ctx, const onnx::TensorProto &tp);

static HostTensor intTensor(std::vector<int64_t> values, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = onnx::TensorProto::INT64;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
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
    if (a.name() == "value") {
      return importTensorProto(ctx, a.t());
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

/// The target shape of Reshape with ONNX's 0 (copy) and -1 (infer) entries.
static FailureOr<SmallVector<int64_t>> resolveReshape(ImportContext &ctx,
                                                      ArrayRef<int64_t> in,
                                                      ArrayRef<int64_t> spec, bool allowZero) {
  SmallVector<int64_t> shape;
  int64_t known = 1, inferAt = -1, total = 1;
  for (int64_t d : in)
    total *= d;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return ctx.fail("Reshape copies dimension " + llvm::Twine(i) +
                        " which the input does not have");
      d = in[i];
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
    known *= d;
    shape.push_back(d);
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

/// Reshape of a device value or a host constant to `shape`.
static LogicalResult reshapeTo(ImportContext &ctx, ArrayRef<int64_t> shape) {
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
  ctx.setOutput(0, k::ReshapeOp::create(ctx.b, ctx.loc, type, *x));
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

static LogicalResult importReshape(ImportContext &ctx) {
  auto spec = ctx.hostInts(1, "shape");
  if (failed(spec))
    return failure();
  auto shape = resolveReshape(ctx, shapeOfInput(ctx), *spec, ctx.attrInt("allowzero", 0));
  if (failed(shape))
    return failure();
  return reshapeTo(ctx, *shape);
}

static LogicalResult importFlatten(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  int64_t rank = in.size();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.fail("Flatten axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= in[i];
  return reshapeTo(ctx, {outer, inner});
}

static FailureOr<std::vector<int64_t>> unsqueezeAxes(ImportContext &ctx) {
  if (ctx.opset >= 13)
    return ctx.hostInts(1, "axes");
  return ctx.attrInts("axes");
}

static LogicalResult importUnsqueeze(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  auto axes = unsqueezeAxes(ctx);
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
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : in[next++]);
  return reshapeTo(ctx, shape);
}

static LogicalResult importSqueeze(ImportContext &ctx) {
  std::vector<int64_t> in = shapeOfInput(ctx);
  std::vector<int64_t> axes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    auto a = ctx.hostInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else if (ctx.opset < 13) {
    axes = ctx.attrInts("axes");
  }
  std::vector<bool> drop(in.size(), axes.empty());
  if (axes.empty())
    for (size_t i = 0; i < in.size(); ++i)
      drop[i] = in[i] == 1;
  for (int64_t a : axes) {
    auto n = ctx.axis(a, in.size());
    if (failed(n))
      return failure();
    if (in[*n] != 1)
      return ctx.fail("Squeeze of dimension " + llvm::Twine(*n) + " which is not 1");
    drop[*n] = true;
  }
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i])
      shape.push_back(in[i]);
  return reshapeTo(ctx, shape);
}

static LogicalResult importTranspose(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t i = xt.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  if ((int64_t)perm.size() != xt.getRank())
    return ctx.fail("Transpose perm has the wrong length");
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= xt.getRank())
      return ctx.fail("Transpose perm entry out of range");
    shape.push_back(xt.getDimSize(p));
  }
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
  auto first = cast<RankedTensorType>(inputs[0].getType());
  auto axis = ctx.axis(ctx.attrInt("axis", 0), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs)
    shape[*axis] += cast<RankedTensorType>(v.getType()).getDimSize(*axis);
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
  ctx.setHostOutput(0, intTensor(std::move(dims), {n}));
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
static LogicalResult importSlice(ImportContext &ctx) {
  const HostTensor *t = ctx.hostInput(0);
  if (!t)
    return ctx.fail("Slice of a run-time tensor is not supported yet (only compile-time "
                    "shape arithmetic)");
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
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
  int64_t rank = t->shape.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  std::vector<int64_t> begin(rank, 0), step(rank, 1), size(t->shape);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = ctx.axis(axes[i], rank);
    if (failed(a))
      return failure();
    int64_t dim = t->shape[*a], s = steps[i];
    if (s == 0)
      return ctx.fail("Slice step must not be 0");
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      size[*a] = std::max<int64_t>(0, (e - b + s - 1) / s);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      size[*a] = std::max<int64_t>(0, (b - e - s - 1) / -s);
    }
    begin[*a] = b;
    step[*a] = s;
  }
  HostTensor r;
  r.dtype = t->dtype;
  r.shape = size;
  std::vector<int64_t> inStrides = stridesOf(t->shape);
  int64_t n = r.numElements();
  std::vector<int64_t> outStrides = stridesOf(size);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t idx = (flat / outStrides[d]) % size[d];
      src += (begin[d] + idx * step[d]) * inStrides[d];
    }
    if (t->isFloat())
      r.floats.push_back(t->floats[src]);
    else
      r.ints.push_back(t->ints[src]);
  }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

/// Gather on host tensors (e.g. picking one dimension out of Shape).
static LogicalResult importGather(ImportContext &ctx) {
  const HostTensor *data = ctx.hostInput(0), *indices = ctx.hostInput(1);
  if (!data || !indices)
    return ctx.fail("Gather of run-time tensors is not supported yet (only compile-time "
                    "shape arithmetic)");
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

void registerTensorOps(ImportTable &t) {
  t["Constant"] = importConstant;
  t["Reshape"] = importReshape;
  t["Flatten"] = importFlatten;
  t["Unsqueeze"] = importUnsqueeze;
  t["Squeeze"] = importSqueeze;
  t["Transpose"] = importTranspose;
  t["Concat"] = importConcat;
  t["Shape"] = importShape;
  t["Cast"] = importCast;
  t["CastLike"] = importCastLike;
  t["Slice"] = importSlice;
  t["Gather"] = importGather;
}

} // namespace kiln::onnx_frontend
