//===- ImportDataDependent.cpp - ops whose output sizes depend on the data ===//
//
// NonZero, Compress, Unique and NonMaxSuppression: each output's length is
// known only after the run, so it is a dynamic dimension (kiln.nonzero,
// kiln.unique, kiln.non_max_suppression), whatever the model declares.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include "dialects/kiln/KilnDialect.h"

namespace kiln::onnx_frontend {

using namespace mlir;
namespace k = mlir::kiln;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// The flat positions (i64, [?]) of the true elements of a 1-D bool `mask`.
Value truePositions(ImportContext &ctx, Value mask) {
  Emitter e{ctx};
  Type i64 = ctx.b.getI64Type();
  Value columns = k::NonZeroOp::create(ctx.b, ctx.loc, tensorOf({1, kDyn}, i64), mask);
  return e.reshape(columns, {kDyn});
}

LogicalResult importNonZero(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  ctx.setOutput(0, k::NonZeroOp::create(ctx.b, ctx.loc,
                                        tensorOf({rank, kDyn}, ctx.b.getI64Type()), *x));
  return success();
}

/// The slices of X along `axis` (of X flattened without one) whose
/// condition element is true; a condition shorter than the axis leaves the
/// rest out.
LogicalResult importCompress(ImportContext &ctx) {
  auto x = ctx.input(0), cond = ctx.input(1);
  if (failed(x) || failed(cond))
    return failure();
  Emitter e{ctx};
  Value data = *x;
  auto xt = cast<RankedTensorType>(data.getType());
  auto ct = cast<RankedTensorType>(cond->getType());
  if (ct.getRank() != 1 || !ct.getElementType().isInteger(1))
    return ctx.fail("condition must be a 1-D bool tensor");
  int64_t axis = 0;
  if (ctx.hasAttr("axis")) {
    auto a = ctx.axis(ctx.attrInt("axis", 0), xt.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    if (!xt.hasStaticShape())
      return ctx.fail("Compress without an axis needs a static input shape; pin it with "
                      "--input-shape");
    data = e.reshape(data, {xt.getNumElements()});
  }
  auto dt = cast<RankedTensorType>(data.getType());
  if (!ct.isDynamicDim(0) && !dt.isDynamicDim(axis) && ct.getDimSize(0) > dt.getDimSize(axis))
    return ctx.fail("condition has " + Twine(ct.getDimSize(0)) + " elements, more than the " +
                    Twine(dt.getDimSize(axis)) + " of the input along the axis");
  SmallVector<int64_t> shape(dt.getShape());
  shape[axis] = kDyn;
  ctx.setOutput(0, k::GatherOp::create(ctx.b, ctx.loc, tensorOf(shape, dt.getElementType()),
                                       data, truePositions(ctx, *cond), axis));
  return success();
}

/// Unique over rows: X flattened to [N, 1], or with an axis, moved first and
/// flattened to [N, M]; the unique rows go back to X's layout.
LogicalResult importUnique(ImportContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  Emitter e{ctx};
  auto xt = cast<RankedTensorType>(x->getType());
  Type et = xt.getElementType(), i64 = ctx.b.getI64Type();
  int64_t rank = xt.getRank();
  std::optional<int64_t> axis;
  if (ctx.hasAttr("axis")) {
    auto a = ctx.axis(ctx.attrInt("axis", 0), rank);
    if (failed(a))
      return failure();
    axis = *a;
  }
  // perm moves the axis first; `rest` are the other dimensions after it.
  SmallVector<int64_t> perm, rest;
  Value rows = *x;
  int64_t n, width = 1;
  if (axis) {
    perm.push_back(*axis);
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis) {
        perm.push_back(d);
        rest.push_back(xt.getDimSize(d));
      }
    if (llvm::is_contained(rest, kDyn))
      return ctx.fail("Unique along an axis needs static sizes in the other dimensions; pin "
                      "them with --input-shape");
    for (int64_t d : rest)
      width *= d;
    n = xt.getDimSize(*axis);
    SmallVector<int64_t> moved{n};
    moved.append(rest);
    if (*axis != 0)
      rows = k::TransposeOp::create(ctx.b, ctx.loc, tensorOf(moved, et), rows, perm);
  } else {
    n = xt.hasStaticShape() ? xt.getNumElements() : kDyn;
  }
  if (!axis || rank != 2 || *axis != 0)
    rows = e.reshape(rows, {n, width});
  auto op = k::UniqueOp::create(ctx.b, ctx.loc, tensorOf({kDyn, width}, et),
                                tensorOf({kDyn}, i64), tensorOf({n}, i64), tensorOf({kDyn}, i64),
                                rows, ctx.attrInt("sorted", 1) != 0);
  Value y = op.getUnique();
  if (!axis) {
    y = e.reshape(y, {kDyn});
  } else {
    SmallVector<int64_t> moved{kDyn};
    moved.append(rest);
    if (rank != 2)
      y = e.reshape(y, moved);
    if (*axis != 0) {
      SmallVector<int64_t> back(rank), shape(xt.getShape());
      for (int64_t d = 0; d < rank; ++d)
        back[perm[d]] = d;
      shape[*axis] = kDyn;
      y = k::TransposeOp::create(ctx.b, ctx.loc, tensorOf(shape, et), y, back);
    }
  }
  ctx.setOutput(0, y);
  ctx.setOutput(1, op.getFirst());
  ctx.setOutput(2, op.getInverse());
  ctx.setOutput(3, op.getCounts());
  return success();
}

/// Input `i` as a rank-0 tensor of `elementType` (one element, any rank),
/// or the constant `fallback` when the input is omitted.
FailureOr<Value> scalarInput(ImportContext &ctx, size_t i, Type elementType, double fallback,
                             StringRef what) {
  if (!ctx.hasInput(i))
    return ctx.scalar(elementType, fallback);
  auto v = ctx.input(i);
  if (failed(v))
    return failure();
  auto t = cast<RankedTensorType>(v->getType());
  if (!t.hasStaticShape() || t.getNumElements() != 1)
    return ctx.fail(what + " must hold one element");
  Emitter e{ctx};
  return e.castTo(e.reshape(*v, {}), elementType);
}

LogicalResult importNonMaxSuppression(ImportContext &ctx) {
  auto boxes = ctx.input(0), scores = ctx.input(1);
  if (failed(boxes) || failed(scores))
    return failure();
  Emitter e{ctx};
  Type f32 = ctx.b.getF32Type(), i64 = ctx.b.getI64Type();
  auto bt = cast<RankedTensorType>(boxes->getType());
  auto st = cast<RankedTensorType>(scores->getType());
  auto agree = [](int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; };
  if (bt.getRank() != 3 || bt.getDimSize(2) != 4)
    return ctx.fail("boxes must have shape [batches, boxes, 4]");
  if (st.getRank() != 3 || !agree(st.getDimSize(0), bt.getDimSize(0)) ||
      !agree(st.getDimSize(2), bt.getDimSize(1)))
    return ctx.fail("scores must have shape [batches, classes, boxes] for boxes " +
                    Twine(bt.getDimSize(0)) + "x" + Twine(bt.getDimSize(1)) + "x4");
  auto maxPerClass = scalarInput(ctx, 2, i64, 0, "max_output_boxes_per_class");
  auto iou = scalarInput(ctx, 3, f32, 0, "iou_threshold");
  if (failed(maxPerClass) || failed(iou))
    return failure();
  Value scoreThreshold;
  if (ctx.hasInput(4)) {
    auto s = scalarInput(ctx, 4, f32, 0, "score_threshold");
    if (failed(s))
      return failure();
    scoreThreshold = *s;
  }
  ctx.setOutput(0, k::NonMaxSuppressionOp::create(
                       ctx.b, ctx.loc, tensorOf({kDyn, 3}, i64), e.castTo(*boxes, f32),
                       e.castTo(*scores, f32), *maxPerClass, *iou, scoreThreshold,
                       ctx.attrInt("center_point_box", 0) != 0));
  return success();
}

} // namespace

void registerDataDependentOps(ImportTable &t) {
  t["NonZero"] = importNonZero;
  t["Compress"] = importCompress;
  t["Unique"] = importUnique;
  t["NonMaxSuppression"] = importNonMaxSuppression;
}

} // namespace kiln::onnx_frontend
