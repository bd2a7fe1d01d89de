//===- ShapeOperands.cpp - shape operands known only at run time ----------===//
#include "frontend/onnx/ShapeOperands.h"

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

static std::string listText(ArrayRef<int64_t> values) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(values, os, ",");
  os << "]";
  return s;
}

/// "node 'n' (Op): input 'what' <requirement>, as the declared output shape [..] implies".
static std::string guardMessage(const ImportContext &ctx, StringRef what,
                                const llvm::Twine &requirement) {
  std::string declared = "?";
  if (auto shape = declaredShape(ctx, 0))
    declared = listText(*shape);
  return ("node '" + ctx.node->name() + "' (" + ctx.node->op_type() + "): input '" + what +
          "' " + requirement + ", as the declared output shape " + declared + " implies")
      .str();
}

/// Input `input` as a 1-D i64 tensor (floats are truncated, as OneHot's
/// depth is).
static FailureOr<Value> int64Operand(ImportContext &ctx, size_t input, StringRef what) {
  auto v = ctx.input(input);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (type.getElementType().isInteger(1))
    return ctx.fail("input '" + what + "' must be a number tensor");
  Emitter e{ctx};
  Value x = type.getElementType().isSignlessInteger(64)
                ? *v
                : e.castTo(*v, ctx.b.getI64Type());
  return e.reshape(x, {type.getNumElements()});
}

static Value int64Constant(ImportContext &ctx, ArrayRef<int64_t> values,
                           ArrayRef<int64_t> shape) {
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

static void assertAll(ImportContext &ctx, Value condition, const std::string &message) {
  k::AssertOp::create(ctx.b, ctx.loc, condition, ctx.b.getStringAttr(message));
}

void guard(ImportContext &ctx, Value condition, StringRef what, const llvm::Twine &requirement) {
  assertAll(ctx, condition, guardMessage(ctx, what, requirement));
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
  assertAll(ctx, ok, guardMessage(ctx, what, "must be " + listText(accepted[0])));
  return success();
}

LogicalResult guardAxes(ImportContext &ctx, size_t input, StringRef what, int64_t rank,
                        ArrayRef<int64_t> required, ArrayRef<int64_t> allowed) {
  auto v = int64Operand(ctx, input, what);
  if (failed(v))
    return failure();
  int64_t n = cast<RankedTensorType>(v->getType()).getDimSize(0);
  std::string requirement = "must name the axes " + listText(required);
  if (allowed.size() > required.size())
    requirement += " (and may name others of " + listText(allowed) + ")";
  std::string message = guardMessage(ctx, what, requirement);
  Emitter e{ctx};
  Value zero = int64Constant(ctx, {0}, {});
  Value axes = k::WhereOp::create(ctx.b, ctx.loc, v->getType(),
                                  compare<k::LessOp>(ctx, *v, zero),
                                  *e.binary<k::AddOp>(*v, int64Constant(ctx, {rank}, {})), *v);
  if (n == 0) {
    if (!required.empty())
      return ctx.fail("input '" + what + "' is empty but must name the axes " +
                      listText(required));
    return success();
  }
  // Every axis is allowed ...
  Value inAllowed;
  for (int64_t a : allowed) {
    Value eq = compare<k::EqualOp>(ctx, axes, int64Constant(ctx, {a}, {}));
    inAllowed = inAllowed ? compare<k::OrOp>(ctx, inAllowed, eq) : eq;
  }
  if (!inAllowed)
    return ctx.fail("input '" + what + "' names axes but none may be reduced");
  assertAll(ctx, inAllowed, message);
  // ... named once (each row of axes == axes^T has exactly one match) ...
  if (n > 1) {
    Value pairs = compare<k::EqualOp>(ctx, e.reshape(axes, {n, 1}), e.reshape(axes, {1, n}));
    Value counts = k::ReduceOp::create(
        ctx.b, ctx.loc, RankedTensorType::get({n}, ctx.b.getI64Type()),
        e.castTo(pairs, ctx.b.getI64Type()), "sum", ArrayRef<int64_t>{1}, false);
    assertAll(ctx, compare<k::EqualOp>(ctx, counts, int64Constant(ctx, {1}, {})), message);
  }
  // ... and every required axis is present.
  for (int64_t r : required) {
    Value hits = e.castTo(compare<k::EqualOp>(ctx, axes, int64Constant(ctx, {r}, {})),
                          ctx.b.getI64Type());
    assertAll(ctx, compare<k::EqualOp>(ctx, e.sumAll(hits), int64Constant(ctx, {1}, {})),
              message);
  }
  return success();
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
