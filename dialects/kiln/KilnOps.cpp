//===- KilnOps.cpp - kiln op verifiers and folders ------------------------===//
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::kiln;

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.cpp.inc"

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) { ShapedType::isDynamic(d) ? os << "?" : os << d; }, "x");
  return s;
}

FailureOr<SmallVector<int64_t>> mlir::kiln::broadcastShapes(ArrayRef<int64_t> a,
                                                            ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    // A dynamic dimension is taken to match the other operand's (the
    // lowering checks it at run time); it never broadcasts.
    if (ShapedType::isDynamic(da) || ShapedType::isDynamic(db)) {
      out[i] = da == 1 ? db : db == 1 ? da : ShapedType::isDynamic(da) ? db : da;
      continue;
    }
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Checks that `result` has the element type of `operand` and, if `expected`
/// is given, exactly that shape.
static LogicalResult verifyResult(Operation *op, Type resultType, Type elementType,
                                  ArrayRef<int64_t> expected) {
  auto result = cast<RankedTensorType>(resultType);
  if (result.getElementType() != elementType)
    return op->emitOpError("result element type ")
           << result.getElementType() << " does not match operand element type "
           << elementType;
  if (result.getShape() != expected)
    return op->emitOpError("result shape ")
           << shapeStr(result.getShape()) << " does not match expected shape "
           << shapeStr(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getType())
    return emitOpError("value type ") << getValue().getType()
                                      << " does not match result type " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Operands of one element type, broadcast-compatible shapes; the result has
/// the broadcast shape and `resultElement` (the operands' if null).
static LogicalResult verifyBinary(Operation *op, Type resultElement = nullptr) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  if (lt.getElementType() != rt.getElementType())
    return op->emitOpError("operand element types differ: ")
           << lt.getElementType() << " vs " << rt.getElementType();
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (failed(shape))
    return op->emitOpError("operand shapes ")
           << shapeStr(lt.getShape()) << " and " << shapeStr(rt.getShape())
           << " are not broadcast-compatible";
  return verifyResult(op, op->getResult(0).getType(),
                      resultElement ? resultElement : lt.getElementType(), *shape);
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }
LogicalResult PowOp::verify() { return verifyBinary(*this); }
LogicalResult MaxOp::verify() { return verifyBinary(*this); }
LogicalResult MinOp::verify() { return verifyBinary(*this); }
LogicalResult ModOp::verify() { return verifyBinary(*this); }
LogicalResult AndOp::verify() { return verifyBinary(*this); }
LogicalResult OrOp::verify() { return verifyBinary(*this); }
LogicalResult XorOp::verify() { return verifyBinary(*this); }
LogicalResult ShiftLeftOp::verify() { return verifyBinary(*this); }
LogicalResult ShiftRightOp::verify() { return verifyBinary(*this); }

static LogicalResult verifyCompare(Operation *op) {
  return verifyBinary(op, IntegerType::get(op->getContext(), 1));
}
LogicalResult EqualOp::verify() { return verifyCompare(*this); }
LogicalResult LessOp::verify() { return verifyCompare(*this); }
LogicalResult LessEqualOp::verify() { return verifyCompare(*this); }
LogicalResult GreaterOp::verify() { return verifyCompare(*this); }
LogicalResult GreaterEqualOp::verify() { return verifyCompare(*this); }

LogicalResult WhereOp::verify() {
  if (!getElementTypeOrSelf(getCondition().getType()).isInteger(1))
    return emitOpError("condition must be an i1 tensor");
  Type et = getElementTypeOrSelf(getLhs().getType());
  if (getElementTypeOrSelf(getRhs().getType()) != et)
    return emitOpError("lhs and rhs element types differ");
  auto shape = broadcastShapes(shapeOf(getCondition()), shapeOf(getLhs()));
  if (succeeded(shape))
    shape = broadcastShapes(*shape, shapeOf(getRhs()));
  if (failed(shape))
    return emitOpError("operand shapes are not broadcast-compatible");
  return verifyResult(*this, getType(), et, *shape);
}

LogicalResult BitcastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getShape() != out.getShape())
    return emitOpError("changes the shape");
  Type from = in.getElementType(), to = out.getElementType();
  if (!from.isIntOrFloat() || !to.isIntOrFloat() ||
      from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth() ||
      from.getIntOrFloatBitWidth() < 8)
    return emitOpError("needs element types of one width of at least 8 bits, got ")
           << from << " and " << to;
  return success();
}

LogicalResult CastOp::verify() {
  if (shapeOf(getInput()) != cast<RankedTensorType>(getType()).getShape())
    return emitOpError("changes the shape");
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : Value();
}

/// x op splat(identity) folds to x when no broadcasting changes x's shape.
static OpFoldResult foldIdentityOperand(Operation *op, Attribute rhsAttr,
                                        double identity) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(rhsAttr);
  Value lhs = op->getOperand(0);
  if (!splat || lhs.getType() != op->getResult(0).getType() ||
      !isa<FloatType>(splat.getElementType()))
    return {};
  if (splat.getSplatValue<APFloat>().convertToDouble() != identity)
    return {};
  return lhs;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldIdentityOperand(*this, adaptor.getRhs(), 0.0);
}
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldIdentityOperand(*this, adaptor.getRhs(), 1.0);
}

LogicalResult ClipOp::verify() {
  if (getMin().convertToDouble() > getMax().convertToDouble())
    return emitOpError("min ") << getMin().convertToDouble() << " is greater than max "
                               << getMax().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// MatMul / Gemm
//===----------------------------------------------------------------------===//

/// The widening forms of matmul and conv: 8-bit integer operands (each
/// signed or unsigned) with an i32 result, or bf16 or f16 operands (one
/// type) with f32.
static bool isWidening(Type lhs, Type rhs, Type result) {
  if ((lhs.isBF16() && rhs.isBF16()) || (lhs.isF16() && rhs.isF16()))
    return result.isF32();
  return lhs.isInteger(8) && rhs.isInteger(8) && result.isSignlessInteger(32);
}

LogicalResult AttentionOp::verify() {
  ArrayRef<int64_t> q = shapeOf(getQuery()), kt = shapeOf(getKeyT()), v = shapeOf(getValue());
  for (Value operand : getOperands()) {
    auto type = cast<RankedTensorType>(operand.getType());
    if (!type.getElementType().isF32() || !type.hasStaticShape())
      return emitOpError("operands must be f32 tensors of static shape");
    if (type.getRank() != (int64_t)q.size() || q.size() < 2)
      return emitOpError("operands must have one rank, at least 2");
  }
  size_t rank = q.size();
  ArrayRef<int64_t> batch = q.drop_back(2);
  if (kt.drop_back(2) != batch || v.drop_back(2) != batch)
    return emitOpError("batch dimensions differ: ")
           << shapeStr(q) << ", " << shapeStr(kt) << ", " << shapeStr(v);
  int64_t lq = q[rank - 2], d = q[rank - 1], lk = kt[rank - 1];
  if (kt[rank - 2] != d || v[rank - 2] != lk)
    return emitOpError("query ") << shapeStr(q) << ", key_t " << shapeStr(kt) << " and value "
                                 << shapeStr(v) << " do not chain as [Lq, D] x [D, Lk] x [Lk, Dv]";
  if (Value mask = getMask()) {
    ArrayRef<int64_t> m = shapeOf(mask);
    ArrayRef<int64_t> mb = m.drop_back(2);
    bool batchOk = llvm::all_of(mb, [](int64_t s) { return s == 1; }) || mb == batch;
    if (!batchOk || (m[rank - 2] != 1 && m[rank - 2] != lq) || m[rank - 1] != lk)
      return emitOpError("mask of shape ") << shapeStr(m) << " is not [1 or B..., 1 or " << lq
                                           << ", " << lk << "]";
  }
  SmallVector<int64_t> expected(batch);
  expected.append({lq, v[rank - 1]});
  return verifyResult(*this, getType(), getElementTypeOrSelf(getQuery().getType()), expected);
}

LogicalResult MatMulOp::verify() {
  SmallVector<int64_t> a(shapeOf(getLhs())), b(shapeOf(getRhs()));
  if (a.empty() || b.empty())
    return emitOpError("operands must have rank >= 1");
  // numpy promotes 1-D operands to matrices and drops the added dimension.
  bool vecLhs = a.size() == 1, vecRhs = b.size() == 1;
  if (vecLhs)
    a.insert(a.begin(), 1);
  if (vecRhs)
    b.push_back(1);
  int64_t k = a.back(), k2 = b[b.size() - 2];
  if (k != k2 && !ShapedType::isDynamic(k) && !ShapedType::isDynamic(k2))
    return emitOpError("contraction dimensions differ: lhs has ")
           << k << ", rhs has " << k2;
  auto batch = broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (failed(batch))
    return emitOpError("batch dimensions are not broadcast-compatible");
  SmallVector<int64_t> expected(*batch);
  if (!vecLhs)
    expected.push_back(a[a.size() - 2]);
  if (!vecRhs)
    expected.push_back(b.back());
  Type lhsElement = getElementTypeOrSelf(getLhs().getType());
  Type rhsElement = getElementTypeOrSelf(getRhs().getType());
  Type resultElement = getElementTypeOrSelf(getType());
  bool widening = isWidening(lhsElement, rhsElement, resultElement);
  if (!widening && lhsElement != rhsElement)
    return emitOpError("operand element types differ: ") << lhsElement << " and " << rhsElement;
  return verifyResult(*this, getType(), widening ? resultElement : lhsElement, expected);
}

/// The elements of a kiln.constant operand as int64, when `v` is one with
/// raw integer data.
static std::optional<std::vector<int64_t>> constantIndices(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = cast<RankedTensorType>(v.getType());
  unsigned width = type.getElementTypeBitWidth();
  if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()); dense && dense.isSplat()) {
    APInt splat = dense.getSplatValue<APInt>();
    return std::vector<int64_t>(type.getNumElements(), width == 16 ? int64_t(splat.getZExtValue())
                                                                   : splat.getSExtValue());
  }
  std::optional<ArrayRef<char>> data = rawElementsData(constant.getValue());
  if (!data || data->size() != static_cast<size_t>(type.getNumElements() * (width / 8)))
    return std::nullopt;
  std::vector<int64_t> values(type.getNumElements());
  for (size_t i = 0; i < values.size(); ++i) {
    if (width == 16) {
      uint16_t u;
      std::memcpy(&u, data->data() + 2 * i, 2);
      values[i] = u;
    } else if (width == 32) {
      int32_t s;
      std::memcpy(&s, data->data() + 4 * i, 4);
      values[i] = s;
    } else {
      std::memcpy(&values[i], data->data() + 8 * i, 8);
    }
  }
  return values;
}

LogicalResult SparseMatMulOp::verify() {
  auto offsets = cast<RankedTensorType>(getOffsets().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto values = cast<RankedTensorType>(getValues().getType());
  ArrayRef<int64_t> x = shapeOf(getInput());
  // The f32 form, or the widening int8 one (entries of 4 rows by 16 outputs).
  bool int8 = getElementTypeOrSelf(getInput().getType()).isUnsignedInteger(8);
  if (int8 ? !values.getElementType().isSignlessInteger(8)
           : !getElementTypeOrSelf(getInput().getType()).isF32() ||
                 !values.getElementType().isF32())
    return emitOpError("input and values must be f32, or input ui8 and values i8");
  if (!offsets.getElementType().isInteger(32) || offsets.getRank() != 1)
    return emitOpError("offsets must be a 1-D i32 tensor");
  if (!indices.getElementType().isInteger(16) && !indices.getElementType().isInteger(32))
    return emitOpError("indices must be i16 or i32");
  if (indices.getRank() != 1 || values.getRank() != 2)
    return emitOpError("indices must be 1-D and values 2-D [entries, block]");
  if (!offsets.hasStaticShape() || !indices.hasStaticShape() || !values.hasStaticShape())
    return emitOpError("the weight arrays must have static shapes");
  if (x.empty() || ShapedType::isDynamic(x.back()))
    return emitOpError("input must have a static last dimension");
  int64_t entries = indices.getDimSize(0), block = values.getDimSize(1);
  int64_t k = x.back(), group = int8 ? 4 : 1;
  if (values.getDimSize(0) != entries)
    return emitOpError("values has ") << values.getDimSize(0) << " entries, indices " << entries;
  if (block < 1 || offsets.getDimSize(0) < 1)
    return emitOpError("the block and the column block count must be positive");
  if (int8 && (block != 64 || k % 4))
    return emitOpError("int8 entries are 4 rows by 16 outputs (values [entries, 64]) of an "
                       "input with a last dimension divisible by 4");
  if (indices.getElementType().isInteger(16) && k > 65536)
    return emitOpError("i16 indices address at most 65536 rows, the input has ") << k;
  SmallVector<int64_t> expected(x);
  expected.back() = (offsets.getDimSize(0) - 1) * block / group;
  Builder b(getContext());
  Type resultElement = int8 ? Type(b.getI32Type()) : values.getElementType();
  if (failed(verifyResult(*this, getType(), resultElement, expected)))
    return failure();
  // The lowering reads the input at these indices: they must be in bounds.
  if (auto starts = constantIndices(getOffsets())) {
    if (starts->front() != 0 || starts->back() != entries)
      return emitOpError("offsets must run from 0 to the entry count ") << entries;
    if (!std::is_sorted(starts->begin(), starts->end()))
      return emitOpError("offsets must not decrease");
  }
  if (auto rows = constantIndices(getIndices()))
    for (int64_t row : *rows) {
      if (row < 0 || row >= k)
        return emitOpError("row index ") << row << " is out of range for " << k << " rows";
      if (row % group)
        return emitOpError("int8 row index ") << row << " is not a multiple of 4";
    }
  return success();
}

LogicalResult BitmapMatMulOp::verify() {
  auto starts = cast<RankedTensorType>(getStarts().getType());
  auto masks = cast<RankedTensorType>(getMasks().getType());
  auto values = cast<RankedTensorType>(getValues().getType());
  ArrayRef<int64_t> x = shapeOf(getInput());
  // The f32 form, or the widening int8 one (a mask per 4 rows).
  bool int8 = getElementTypeOrSelf(getInput().getType()).isUnsignedInteger(8);
  int64_t group = int8 ? 4 : 1;
  if (int8 ? !values.getElementType().isSignlessInteger(8) || values.getRank() != 1
           : !getElementTypeOrSelf(getInput().getType()).isF32() ||
                 !values.getElementType().isF32() || values.getRank() != 1)
    return emitOpError("input must be f32 and values 1-D f32, or input ui8 and values 1-D i8");
  if (!starts.getElementType().isInteger(32) || starts.getRank() != 1)
    return emitOpError("starts must be a 1-D i32 tensor");
  if (!masks.getElementType().isInteger(16 * group) || masks.getRank() != 2)
    return emitOpError("masks must be a 2-D ") << (int8 ? "i64" : "i16") << " tensor";
  if (!starts.hasStaticShape() || !masks.hasStaticShape() || !values.hasStaticShape())
    return emitOpError("the weight arrays must have static shapes");
  if (x.empty() || ShapedType::isDynamic(x.back()))
    return emitOpError("input must have a static last dimension");
  int64_t blocks = masks.getDimSize(0), k = x.back(), rows = k / group;
  if (k % group)
    return emitOpError("a ui8 input needs a last dimension divisible by 4, got ") << k;
  if (masks.getDimSize(1) != rows)
    return int8 ? emitOpError("masks have ") << masks.getDimSize(1)
                                             << " groups of 4 rows, the input " << k << " rows"
                : emitOpError("masks have ") << masks.getDimSize(1) << " rows, the input " << k;
  int64_t parts = blocks > 0 ? (starts.getDimSize(0) - 1) / blocks : 1;
  if (parts < 1 || starts.getDimSize(0) != blocks * parts + 1)
    return emitOpError("starts needs a whole number of entries per column block, and one");
  SmallVector<int64_t> expected(x);
  expected.back() = blocks * 16;
  Builder b(getContext());
  Type resultElement = int8 ? Type(b.getI32Type()) : Type(b.getF32Type());
  if (failed(verifyResult(*this, getType(), resultElement, expected)))
    return failure();
  // The lowering reads as many values as the masks have bits from each
  // start: the starts must count them, and end at the values' end.
  auto first = constantIndices(getStarts());
  auto bits = constantIndices(getMasks());
  if (!first || !bits)
    return success();
  if (first->front() != 0 || first->back() != values.getDimSize(0))
    return emitOpError("starts must run from 0 to the value count ") << values.getDimSize(0);
  int64_t length = rows / parts;
  for (int64_t j = 0; j < blocks; ++j)
    for (int64_t s = 0; s < parts; ++s) {
      int64_t from = s * length, to = s + 1 == parts ? rows : from + length, count = 0;
      for (int64_t row = from; row < to; ++row) {
        uint64_t word = static_cast<uint64_t>((*bits)[j * rows + row]);
        count += llvm::popcount(int8 ? word : word & 0xffff);
      }
      int64_t at = j * parts + s;
      if ((*first)[at + 1] - (*first)[at] != count)
        return emitOpError("segment ") << s << " of column block " << j << " has " << count
                                       << " mask bits but " << (*first)[at + 1] - (*first)[at]
                                       << " values";
    }
  return success();
}

Type QuantParams::storageType(MLIRContext *ctx) const {
  return IntegerType::get(ctx, width, isSigned ? IntegerType::Signless : IntegerType::Unsigned);
}

std::optional<QuantParams> mlir::kiln::quantParams(Type type) {
  auto quantized = dyn_cast<quant::QuantizedType>(type);
  if (!quantized)
    return std::nullopt;
  QuantParams p;
  p.storageMin = quantized.getStorageTypeMin();
  p.storageMax = quantized.getStorageTypeMax();
  p.isSigned = quantized.isSigned();
  p.width = quantized.getStorageTypeIntegralWidth();
  if (auto perTensor = dyn_cast<quant::UniformQuantizedType>(type)) {
    p.scales = {perTensor.getScale()};
    p.zeroPoints = {perTensor.getZeroPoint()};
    return p;
  }
  if (auto perAxis = dyn_cast<quant::UniformQuantizedPerAxisType>(type)) {
    p.scales.assign(perAxis.getScales().begin(), perAxis.getScales().end());
    p.zeroPoints.assign(perAxis.getZeroPoints().begin(), perAxis.getZeroPoints().end());
    p.axis = perAxis.getQuantizedDimension();
    return p;
  }
  return std::nullopt;
}

namespace {

/// Checks the two sides of a quantize or dequantize: `real` holds f32,
/// `quantized` a uniform quantized type expressed in f32 whose axis (when
/// per axis) exists and has one scale per index.
LogicalResult verifyQuantPair(Operation *op, Value real, Value quantized) {
  auto realType = cast<RankedTensorType>(real.getType());
  auto quantType = cast<RankedTensorType>(quantized.getType());
  if (!realType.getElementType().isF32())
    return op->emitOpError("float side must hold f32, not ") << realType.getElementType();
  std::optional<QuantParams> p = quantParams(quantType.getElementType());
  if (!p || !cast<quant::QuantizedType>(quantType.getElementType()).getExpressedType().isF32())
    return op->emitOpError("quantized side must hold a !quant.uniform type expressed in f32, not ")
           << quantType.getElementType();
  if (realType.getShape() != quantType.getShape())
    return op->emitOpError("shapes differ: ") << realType << " and " << quantType;
  if (p->axis) {
    if (*p->axis >= quantType.getRank())
      return op->emitOpError("quantized dimension ") << *p->axis << " is out of range for rank "
                                                     << quantType.getRank();
    int64_t size = quantType.getDimSize(*p->axis);
    if (!ShapedType::isDynamic(size) && size != static_cast<int64_t>(p->scales.size()))
      return op->emitOpError("quantized dimension ")
             << *p->axis << " has size " << size << " but " << p->scales.size() << " scales";
  }
  return success();
}

} // namespace

LogicalResult QuantizeOp::verify() { return verifyQuantPair(*this, getInput(), getResult()); }

LogicalResult DequantizeOp::verify() { return verifyQuantPair(*this, getResult(), getInput()); }

LogicalResult StorageCastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (input.getShape() != result.getShape())
    return emitOpError("shapes differ: ") << input << " and " << result;
  std::optional<QuantParams> in = quantParams(input.getElementType());
  std::optional<QuantParams> out = quantParams(result.getElementType());
  if (in.has_value() == out.has_value())
    return emitOpError("exactly one side must be a quantized type, not ")
           << input.getElementType() << " and " << result.getElementType();
  const QuantParams &p = in ? *in : *out;
  Type storage = in ? result.getElementType() : input.getElementType();
  if (storage != p.storageType(getContext()))
    return emitOpError("storage type must be ") << p.storageType(getContext()) << ", not "
                                                << storage;
  return success();
}

OpFoldResult StorageCastOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<StorageCastOp>())
    if (inner.getInput().getType() == getType())
      return inner.getInput();
  return {};
}

LogicalResult DynamicQuantizeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (!input.getElementType().isF32())
    return emitOpError("input must hold f32, not ") << input.getElementType();
  auto result = cast<RankedTensorType>(getResult().getType());
  if (!result.getElementType().isUnsignedInteger(8) || result.getShape() != input.getShape())
    return emitOpError("result must be ui8 of the input's shape, not ") << result;
  auto scale = cast<RankedTensorType>(getScale().getType());
  auto zeroPoint = cast<RankedTensorType>(getZeroPoint().getType());
  if (scale.getRank() != 0 || !scale.getElementType().isF32())
    return emitOpError("scale must be tensor<f32>, not ") << scale;
  if (zeroPoint.getRank() != 0 || !zeroPoint.getElementType().isUnsignedInteger(8))
    return emitOpError("zero point must be tensor<ui8>, not ") << zeroPoint;
  return success();
}

FailureOr<EinsumSpec> mlir::kiln::parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                                              std::string &message) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq += c;
  auto [lhs, rhs] = StringRef(eq).split("->");
  bool explicitOutput = StringRef(eq).contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size()) {
    message = "equation has " + std::to_string(terms.size()) + " operands, got " +
              std::to_string(ranks.size());
    return failure();
  }
  // `...` becomes letters that cannot clash with the user's (digits).
  int64_t ellipsisRank = 0;
  for (auto [term, rank] : llvm::zip(terms, ranks))
    if (term.contains("..."))
      ellipsisRank = std::max<int64_t>(ellipsisRank, rank - ((int64_t)term.size() - 3));
  auto expand = [&](StringRef term, int64_t rank) -> std::string {
    size_t at = term.find("...");
    if (at == StringRef::npos)
      return term.str();
    int64_t n = rank - ((int64_t)term.size() - 3);
    std::string dots;
    for (int64_t i = ellipsisRank - n; i < ellipsisRank; ++i)
      dots += char('0' + i);
    return (term.take_front(at) + dots + term.drop_front(at + 3)).str();
  };
  EinsumSpec spec;
  std::map<char, int> counts;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    spec.inputs.push_back(expand(term, rank));
    if ((int64_t)spec.inputs.back().size() != rank) {
      message = "operand '" + term.str() + "' does not match rank " + std::to_string(rank);
      return failure();
    }
    for (char c : spec.inputs.back())
      ++counts[c];
  }
  if (explicitOutput) {
    spec.output = expand(rhs, ellipsisRank + (int64_t)rhs.size() - 3);
  } else {
    for (int64_t i = 0; i < ellipsisRank; ++i)
      spec.output += char('0' + i);
    for (auto [c, n] : counts)
      if (n == 1 && !isdigit(c))
        spec.output += c;
  }
  for (char c : spec.output)
    if (!counts.count(c)) {
      message = std::string("output letter '") + c + "' is not an operand letter";
      return failure();
    }
  return spec;
}

FailureOr<SmallVector<int64_t>> mlir::kiln::einsumShape(const EinsumSpec &spec,
                                                        ArrayRef<ArrayRef<int64_t>> shapes,
                                                        std::string &message) {
  std::map<char, int64_t> sizes;
  for (auto [letters, shape] : llvm::zip(spec.inputs, shapes))
    for (auto [c, d] : llvm::zip(letters, shape)) {
      auto [it, inserted] = sizes.insert({c, d});
      if (!inserted && it->second != d) {
        if (it->second == 1)
          it->second = d;
        else if (d != 1) {
          message = std::string("letter '") + c + "' has sizes " + std::to_string(it->second) +
                    " and " + std::to_string(d);
          return failure();
        }
      }
    }
  SmallVector<int64_t> out;
  for (char c : spec.output)
    out.push_back(sizes[c]);
  return out;
}

LogicalResult EinsumOp::verify() {
  SmallVector<int64_t> ranks;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : getInputs()) {
    shapes.push_back(shapeOf(v));
    ranks.push_back(shapes.back().size());
  }
  std::string message;
  auto spec = parseEinsum(getEquation(), ranks, message);
  if (failed(spec))
    return emitOpError("invalid equation: ") << message;
  auto shape = einsumShape(*spec, shapes, message);
  if (failed(shape))
    return emitOpError(message);
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInputs()[0].getType()), *shape);
}

LogicalResult GemmOp::verify() {
  ArrayRef<int64_t> a = shapeOf(getA()), b = shapeOf(getB());
  if (a.size() != 2 || b.size() != 2)
    return emitOpError("A and B must be 2-D");
  int64_t m = getTransA() ? a[1] : a[0], ka = getTransA() ? a[0] : a[1];
  int64_t kb = getTransB() ? b[1] : b[0], n = getTransB() ? b[0] : b[1];
  if (ka != kb && !ShapedType::isDynamic(ka) && !ShapedType::isDynamic(kb))
    return emitOpError("contraction dimensions differ: A has ") << ka << ", B has " << kb;
  if (getC()) {
    auto bc = broadcastShapes({m, n}, shapeOf(getC()));
    if (failed(bc) || (*bc)[0] != m || (*bc)[1] != n)
      return emitOpError("C of shape ") << shapeStr(shapeOf(getC()))
                                        << " does not broadcast to " << m << "x" << n;
  }
  return verifyResult(*this, getType(), getElementTypeOrSelf(getA().getType()), {m, n});
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// The number of window positions along one dimension; dynamic for a
/// dynamic input, -1 (a size no result has) when the sizes overflow or the
/// kernel is dynamic.
static int64_t slidingOutput(int64_t in, int64_t padBefore, int64_t padAfter,
                             int64_t kernel, int64_t stride, int64_t dilation) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  int64_t span, effective, padded, room;
  if (ShapedType::isDynamic(kernel) || llvm::MulOverflow(dilation, kernel - 1, span) ||
      llvm::AddOverflow(span, int64_t(1), effective) ||
      llvm::AddOverflow(in, padBefore, padded) || llvm::AddOverflow(padded, padAfter, padded) ||
      llvm::SubOverflow(padded, effective, room) || stride < 1)
    return -1;
  return room / stride + 1;
}

static LogicalResult verifyWindow(Operation *op, ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return op->emitOpError("expects 2 strides, 2 dilations and 4 pads");
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
    return op->emitOpError("strides and dilations must be >= 1");
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return op->emitOpError("pads must be >= 0");
  return success();
}

/// An NHWC shape as NCHW, and back.
static SmallVector<int64_t> nhwcToNchw(ArrayRef<int64_t> s) { return {s[0], s[3], s[1], s[2]}; }
static SmallVector<int64_t> nchwToNhwc(ArrayRef<int64_t> s) { return {s[0], s[2], s[3], s[1]}; }

LogicalResult ConvOp::verify() {
  SmallVector<int64_t> x(shapeOf(getInput()));
  ArrayRef<int64_t> w = shapeOf(getFilter());
  if (x.size() != 4 || w.size() != 4)
    return emitOpError("only 2-D convolution (rank-4 NCHW input and FCHW filter) is supported");
  if (getChannelsLast())
    x = nhwcToNchw(x);
  if (failed(verifyWindow(*this, getStrides(), getDilations(), getPads())))
    return failure();
  int64_t g = getGroup();
  if (g < 1 || x[1] % g != 0 || w[0] % g != 0)
    return emitOpError("group ") << g << " does not divide input channels " << x[1]
                                 << " and filter count " << w[0];
  if (x[1] / g != w[1])
    return emitOpError("filter expects ") << w[1] << " channels per group, input has "
                                          << x[1] / g;
  if (getBias() && shapeOf(getBias()) != ArrayRef<int64_t>{w[0]})
    return emitOpError("bias must have shape ") << w[0];
  auto s = getStrides(), d = getDilations(), p = getPads();
  SmallVector<int64_t> expected = {x[0], w[0],
                                   slidingOutput(x[2], p[0], p[2], w[2], s[0], d[0]),
                                   slidingOutput(x[3], p[1], p[3], w[3], s[1], d[1])};
  Type inputElement = getElementTypeOrSelf(getInput().getType());
  Type resultElement = getElementTypeOrSelf(getType());
  if (isWidening(inputElement, getElementTypeOrSelf(getFilter().getType()), resultElement)) {
    if (g != 1 || getBias())
      return emitOpError("the widening integer form takes no group and no bias");
    if (getChannelsLast())
      expected = nchwToNhwc(expected);
    return verifyResult(*this, getType(), resultElement, expected);
  }
  if (getChannelsLast()) {
    if (g != 1 && !(g == x[1] && w[0] == g))
      return emitOpError("channels_last takes no group, or one per channel (depthwise)");
    expected = nchwToNhwc(expected);
  }
  return verifyResult(*this, getType(), inputElement, expected);
}

LogicalResult BatchNormOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (x.size() < 2)
    return emitOpError("input must have rank >= 2");
  for (Value v : {getScale(), getBias(), getMean(), getVariance()})
    if (shapeOf(v) != ArrayRef<int64_t>{x[1]})
      return emitOpError("scale, bias, mean and variance must have shape ") << x[1];
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()), x);
}

template <typename PoolOp>
static LogicalResult verifyPool(PoolOp op, ArrayRef<int64_t> dilations,
                                Type resultElement = nullptr, bool channelsLast = false) {
  SmallVector<int64_t> x(shapeOf(op.getInput()));
  if (x.size() != 4)
    return op.emitOpError("only 2-D pooling (rank-4 NCHW input) is supported");
  if (channelsLast)
    x = nhwcToNchw(x);
  ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(), p = op.getPads();
  if (k.size() != 2)
    return op.emitOpError("expects 2 kernel sizes");
  if (failed(verifyWindow(op, s, dilations, p)))
    return failure();
  // ceil_mode is resolved by the importer into extra bottom/right padding, so
  // the output size is always the floor formula here.
  SmallVector<int64_t> expected = {x[0], x[1],
                                   slidingOutput(x[2], p[0], p[2], k[0], s[0], dilations[0]),
                                   slidingOutput(x[3], p[1], p[3], k[1], s[1], dilations[1])};
  if (channelsLast)
    expected = nchwToNhwc(expected);
  return verifyResult(op, op.getType(),
                      resultElement ? resultElement
                                    : getElementTypeOrSelf(op.getInput().getType()),
                      expected);
}

LogicalResult MaxPoolOp::verify() {
  return verifyPool(*this, getDilations(), nullptr, getChannelsLast());
}
LogicalResult MaxPoolIndicesOp::verify() {
  return verifyPool(*this, getDilations(), IntegerType::get(getContext(), 64));
}
LogicalResult AveragePoolOp::verify() { return verifyPool(*this, getDilations()); }

LogicalResult GlobalAveragePoolOp::verify() {
  SmallVector<int64_t> x(shapeOf(getInput()));
  if (x.size() < 3)
    return emitOpError("input must have rank >= 3");
  std::fill(x.begin() + 2, x.end(), 1);
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()), x);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changed");
  if (in.hasStaticShape() && out.hasStaticShape()) {
    if (in.getNumElements() != out.getNumElements())
      return emitOpError("cannot reshape ") << in.getNumElements() << " elements ("
                                            << shapeStr(in.getShape()) << ") into "
                                            << shapeStr(out.getShape());
    return success();
  }
  SmallVector<int64_t> kept(getKept().value_or(ArrayRef<int64_t>{}));
  if (kept.empty())
    kept.assign(out.getRank(), -1);
  if ((int64_t)kept.size() != out.getRank())
    return emitOpError("kept has ") << kept.size() << " entries, result has rank "
                                    << out.getRank();
  if (getShape()) {
    auto shape = cast<RankedTensorType>(getShape().getType());
    if (shape.getRank() != 1 || shape.getDimSize(0) != out.getRank() ||
        !shape.getElementType().isInteger(64))
      return emitOpError("shape must be a tensor<") << out.getRank() << "xi64>";
  }
  int64_t inferred = 0;
  for (auto [i, source] : llvm::enumerate(kept)) {
    if (source == -2 && !getShape())
      return emitOpError("result dimension ") << i << " takes its size from a missing shape";
    if (source == -2)
      continue;
    if (source < -1 || source >= in.getRank())
      return emitOpError("kept names input dimension ") << source << " of rank " << in.getRank();
    if (source >= 0 && in.getDimSize(source) != out.getDimSize(i))
      return emitOpError("result dimension ") << i << " keeps input dimension " << source
                                              << " but their sizes differ";
    inferred += source < 0 && out.isDynamicDim(i);
  }
  if (inferred > 1)
    return emitOpError("at most one dynamic result dimension may keep no input dimension");
  return success();
}

//===----------------------------------------------------------------------===//
// Constant folding of data movement: weights that the importer slices,
// concatenates, reshapes or transposes (an LSTM's gate weights, a
// ConvTranspose's filter) are re-laid out once at compile time instead of
// on every inference.
//===----------------------------------------------------------------------===//

namespace {
/// The row-major elements of a constant operand as bytes (a splat
/// repeated), with their width; nothing for non-constants, elements narrower
/// than a byte (i1) or dynamic shapes.
struct ConstantBytes {
  std::vector<char> bytes;
  size_t width;
  bool blob; // came from a dense_resource blob (weights stay out of the text)
};

std::optional<ConstantBytes> constantBytes(Attribute attr) {
  auto elements = dyn_cast_or_null<ElementsAttr>(attr);
  if (!elements || !elements.getShapedType().hasStaticShape())
    return std::nullopt;
  Type et = elements.getElementType();
  if (!et.isIntOrFloat() || et.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  size_t width = et.getIntOrFloatBitWidth() / 8, count = elements.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(elements); dense && dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    if (one.size() != width)
      return std::nullopt;
    std::vector<char> bytes(count * width);
    for (size_t i = 0; i < count; ++i)
      std::memcpy(&bytes[i * width], one.data(), width);
    return ConstantBytes{std::move(bytes), width, false};
  }
  std::optional<ArrayRef<char>> data = rawElementsData(elements);
  if (!data || data->size() != count * width)
    return std::nullopt;
  return ConstantBytes{std::vector<char>(data->begin(), data->end()), width,
                       isa<DenseResourceElementsAttr>(elements)};
}

/// Row-major strides of `shape`, in elements; 0 from a dynamic dimension
/// on (only constants, always static, are relaid with them).
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = ShapedType::isDynamic(shape[d + 1]) ? 0 : strides[d + 1] * shape[d + 1];
  return strides;
}

/// The constant `input` re-laid out as the static `type`: its element at
/// each index is the input element `sourceIndex(index)`; null when `input`
/// is not a constant with data.
Attribute relaidConstant(Attribute input, RankedTensorType type,
                         function_ref<int64_t(ArrayRef<int64_t>)> sourceIndex) {
  auto elements = dyn_cast_or_null<ElementsAttr>(input);
  if (!elements || !type.hasStaticShape())
    return {};
  SmallVector<int64_t> strides = stridesOf(type.getShape());
  SmallVector<int64_t> index(strides.size());
  return relaidElements(elements, type, "folded", [&](int64_t i) {
    for (auto [d, stride] : llvm::enumerate(strides))
      index[d] = (i / stride) % type.getDimSize(d);
    return sourceIndex(index);
  });
}
} // namespace

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  // The same row-major elements in another shape.
  auto elements = dyn_cast_or_null<ElementsAttr>(adaptor.getInput());
  if (elements && !getShape() && getType().hasStaticShape())
    if (ElementsAttr same =
            relaidElements(elements, getType(), "folded", [](int64_t i) { return i; }))
      return same;
  auto keepsInPlace = [&] {
    ArrayRef<int64_t> kept = getKept().value_or(ArrayRef<int64_t>{});
    for (auto [i, source] : llvm::enumerate(kept))
      if (source >= 0 && source != (int64_t)i)
        return false;
    return true;
  };
  if (getInput().getType() == getType() && !getShape() && keepsInPlace())
    return getInput();
  // `kept` refers to the producer's result, so only static chains merge.
  auto producer = getInput().getDefiningOp<ReshapeOp>();
  if (producer && getType().hasStaticShape() && producer.getInput().getType().hasStaticShape()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

LogicalResult ShapeOp::verify() {
  auto result = cast<RankedTensorType>(getType());
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  if (result.getShape() != ArrayRef<int64_t>{rank} || !result.getElementType().isInteger(64))
    return emitOpError("result must be a tensor<") << rank << "xi64>";
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (!input.hasStaticShape())
    return {};
  return DenseElementsAttr::get(cast<ShapedType>(getType()), input.getShape());
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput());
  ArrayRef<int64_t> perm = getPerm();
  if (perm.size() != x.size())
    return emitOpError("perm has ") << perm.size() << " entries, input has rank " << x.size();
  SmallVector<bool> seen(x.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)x.size() || seen[p])
      return emitOpError("perm is not a permutation of 0..") << x.size() - 1;
    seen[p] = true;
    expected.push_back(x[p]);
  }
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()),
                      expected);
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  if (Attribute transposed = relaidConstant(adaptor.getInput(), cast<RankedTensorType>(getType()),
                                            [&](ArrayRef<int64_t> index) {
                                              int64_t at = 0;
                                              for (auto [d, p] : llvm::enumerate(perm))
                                                at += index[d] * strides[p];
                                              return at;
                                            }))
    return transposed;
  auto isIdentity = [](auto &&indices) {
    for (auto [i, p] : llvm::enumerate(indices))
      if ((int64_t)i != p)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  // A transpose of a transpose that undoes it.
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    if (isIdentity(llvm::map_range(perm, [&](int64_t p) { return innerPerm[p]; })))
      return inner.getInput();
  }
  return {};
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  SmallVector<int64_t> expected(shapeOf(getInputs().front()));
  int64_t axis = getAxis();
  if (axis < 0 || axis >= (int64_t)expected.size())
    return emitOpError("axis ") << axis << " out of range for rank " << expected.size();
  Type elementType = getElementTypeOrSelf(getInputs().front().getType());
  for (Value v : getInputs().drop_front()) {
    ArrayRef<int64_t> s = shapeOf(v);
    if (s.size() != expected.size() || getElementTypeOrSelf(v.getType()) != elementType)
      return emitOpError("inputs must have the same rank and element type");
    for (size_t i = 0; i < s.size(); ++i)
      if ((int64_t)i != axis && s[i] != expected[i] && !ShapedType::isDynamic(s[i]) &&
          !ShapedType::isDynamic(expected[i]))
        return emitOpError("input shapes ") << shapeStr(shapeOf(getInputs().front()))
                                            << " and " << shapeStr(s)
                                            << " differ outside axis " << axis;
    for (size_t i = 0; i < s.size(); ++i)
      if ((int64_t)i != axis && ShapedType::isDynamic(expected[i]))
        expected[i] = s[i];
    expected[axis] = ShapedType::isDynamic(expected[axis]) || ShapedType::isDynamic(s[axis])
                         ? ShapedType::kDynamic
                         : expected[axis] + s[axis];
  }
  return verifyResult(*this, getType(), elementType, expected);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return {};
  // Each input contributes, per index of the dimensions before the axis, one
  // contiguous chunk of its rows.
  SmallVector<ConstantBytes> parts;
  for (Attribute input : adaptor.getInputs()) {
    std::optional<ConstantBytes> data = constantBytes(input);
    if (!data)
      return {};
    parts.push_back(std::move(*data));
  }
  int64_t axis = getAxis();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  std::vector<char> bytes;
  bytes.reserve(type.getNumElements() * parts.front().width);
  for (int64_t o = 0; o < outer; ++o)
    for (const ConstantBytes &part : parts) {
      size_t chunk = part.bytes.size() / outer;
      bytes.insert(bytes.end(), part.bytes.begin() + o * chunk,
                   part.bytes.begin() + (o + 1) * chunk);
    }
  if (llvm::any_of(parts, [](const ConstantBytes &p) { return p.blob; }))
    return blobElements(type, "folded", bytes);
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

static LogicalResult verifyAxis(Operation *op, Value input, int64_t axis);

SliceBounds mlir::kiln::onnxSliceBounds(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim == 0)
    return {0, 0};
  int64_t b = start < 0 ? start + dim : start, e = end < 0 ? end + dim : end;
  if (step > 0) {
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return {b, e > b ? (e - b - 1) / step + 1 : 0};
  }
  b = std::clamp<int64_t>(b, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  int64_t stride = -std::max(step, -std::numeric_limits<int64_t>::max());
  return b > e ? SliceBounds{b, (b - e - 1) / stride + 1} : SliceBounds{0, 0};
}

/// The ONNX form (with `ends`): a static dimension must have the size its
/// bounds select, a dynamic one stays dynamic.
static LogicalResult verifyOnnxBounds(SliceOp op, ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  ArrayRef<int64_t> ends = *op.getEnds();
  if (ends.size() != in.size())
    return op.emitOpError("ends needs one entry per input dimension");
  for (size_t i = 0; i < in.size(); ++i) {
    if (ShapedType::isDynamic(in[i])) {
      if (!ShapedType::isDynamic(out[i]))
        return op.emitOpError("dimension ") << i << " is dynamic and so is its slice";
      continue;
    }
    int64_t want = onnxSliceBounds(op.getStarts()[i], ends[i], op.getSteps()[i], in[i]).size;
    if (out[i] != want)
      return op.emitOpError("dimension ") << i << " takes " << want << " elements, not " << out[i];
  }
  return success();
}

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = cast<RankedTensorType>(getType()).getShape();
  if (getStarts().size() != in.size() || getSteps().size() != in.size() || out.size() != in.size())
    return emitOpError("starts, steps and result need one entry per input dimension");
  if (llvm::is_contained(getSteps(), 0))
    return emitOpError("step must not be 0");
  if (getEnds())
    return verifyOnnxBounds(*this, in, out);
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t start = getStarts()[i], step = getSteps()[i];
    if (out[i] == 0)
      continue;
    if (ShapedType::isDynamic(out[i]) || ShapedType::isDynamic(in[i])) {
      // Without `ends` a dynamic dimension is only ever taken whole.
      if (out[i] != in[i] || start != 0 || step != 1)
        return emitOpError("dimension ") << i << " is dynamic and must be taken whole";
      continue;
    }
    int64_t last = start + (out[i] - 1) * step;
    if (start < 0 || start >= in[i] || last < 0 || last >= in[i])
      return emitOpError("dimension ") << i << " reads outside the input";
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getEnds()) // its input has dynamic dimensions: no constant to fold
    return {};
  auto type = cast<RankedTensorType>(getType());
  bool whole = getInput().getType() == type &&
               llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
               llvm::all_of(getSteps(), [](int64_t s) { return s == 1; });
  if (whole)
    return getInput();
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  return relaidConstant(adaptor.getInput(), type, [&](ArrayRef<int64_t> index) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d)
      at += (starts[d] + index[d] * steps[d]) * strides[d];
    return at;
  });
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, getData(), axis)))
    return failure();
  if (!isa<IntegerType>(getElementTypeOrSelf(getIndices().getType())))
    return emitOpError("indices must be integers");
  SmallVector<int64_t> expected(data.begin(), data.begin() + axis);
  expected.append(indices.begin(), indices.end());
  expected.append(data.begin() + axis + 1, data.end());
  return verifyResult(*this, getType(), getElementTypeOrSelf(getData().getType()), expected);
}

LogicalResult GatherElementsOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (failed(verifyAxis(*this, getData(), getAxis())))
    return failure();
  if (data.size() != indices.size())
    return emitOpError("data and indices must have the same rank");
  if (!isa<IntegerType>(getElementTypeOrSelf(getIndices().getType())))
    return emitOpError("indices must be integers");
  return verifyResult(*this, getType(), getElementTypeOrSelf(getData().getType()), indices);
}

LogicalResult TriluOp::verify() {
  if (shapeOf(getInput()).size() < 2)
    return emitOpError("input must have rank >= 2");
  auto kt = cast<RankedTensorType>(getK().getType());
  if (kt.getRank() != 0 || !kt.getElementType().isInteger(64))
    return emitOpError("k must be a rank-0 i64 tensor");
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()),
                      shapeOf(getInput()));
}

LogicalResult ResizeOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  if (getScales().size() != in.size() ||
      cast<RankedTensorType>(getType()).getRank() != (int64_t)in.size())
    return emitOpError("needs one scale per dimension and the input's rank");
  if (getMode() != "nearest" && getMode() != "linear" && getMode() != "cubic")
    return emitOpError("mode must be nearest, linear or cubic");
  StringRef c = getCoordinateMode();
  if (c != "half_pixel" && c != "half_pixel_symmetric" && c != "pytorch_half_pixel" &&
      c != "align_corners" && c != "asymmetric" && c != "tf_half_pixel_for_nn" &&
      c != "tf_crop_and_resize")
    return emitOpError("unknown coordinate_mode '") << c << "'";
  if ((c == "tf_crop_and_resize") != (getRoi() != nullptr))
    return emitOpError("takes a roi exactly when coordinate_mode is tf_crop_and_resize");
  if (Value roi = getRoi()) {
    auto t = cast<RankedTensorType>(roi.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != 2 * (int64_t)in.size() ||
        !t.getElementType().isF32())
      return emitOpError("roi must be tensor<") << 2 * in.size() << "xf32>, got " << t;
  }
  StringRef n = getNearestMode();
  if (n != "round_prefer_floor" && n != "round_prefer_ceil" && n != "floor" && n != "ceil")
    return emitOpError("unknown nearest_mode '") << n << "'";
  if (!isa<FloatType>(getElementTypeOrSelf(getInput().getType())) && getMode() != "nearest")
    return emitOpError(getMode()) << " mode needs a floating-point input";
  if (Value runtime = getRuntimeScales()) {
    auto t = cast<RankedTensorType>(runtime.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != (int64_t)in.size() || !t.getElementType().isF32())
      return emitOpError("runtime scales must be tensor<") << in.size() << "xf32>, got " << t;
  }
  if (Value sizes = getRuntimeSizes()) {
    auto t = cast<RankedTensorType>(sizes.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != (int64_t)in.size() ||
        !t.getElementType().isSignlessInteger(64))
      return emitOpError("runtime sizes must be tensor<") << in.size() << "xi64>, got " << t;
    if (getRuntimeScales())
      return emitOpError("takes run-time scales or run-time sizes, not both");
  }
  return success();
}

LogicalResult CumulativeOp::verify() {
  if (getKind() != "sum" && getKind() != "prod")
    return emitOpError("kind must be \"sum\" or \"prod\", got \"") << getKind() << "\"";
  return verifyAxis(*this, getInput(), getAxis());
}

LogicalResult GatherNDOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), idx = shapeOf(getIndices());
  int64_t b = getBatchDims();
  if (idx.empty() || b < 0 || b >= (int64_t)idx.size() || b > (int64_t)data.size())
    return emitOpError("batch_dims out of range");
  int64_t k = idx.back();
  if (k < 1 || b + k > (int64_t)data.size())
    return emitOpError("index tuples of length ") << k << " do not fit data of rank "
                                                  << data.size();
  SmallVector<int64_t> expected(idx.begin(), idx.end() - 1);
  expected.append(data.begin() + b + k, data.end());
  return verifyResult(*this, getType(), getElementTypeOrSelf(getData().getType()), expected);
}

static LogicalResult verifyScatter(Operation *op, Value data, Value updates, StringRef reduction) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return op->emitOpError("reduction must be none, add, mul, max or min");
  if (getElementTypeOrSelf(updates.getType()) != getElementTypeOrSelf(data.getType()))
    return op->emitOpError("updates and data element types differ");
  return verifyResult(op, op->getResult(0).getType(), getElementTypeOrSelf(data.getType()),
                      shapeOf(data));
}

LogicalResult ScatterElementsOp::verify() {
  if (shapeOf(getIndices()) != shapeOf(getUpdates()))
    return emitOpError("indices and updates must have the same shape");
  if (failed(verifyAxis(*this, getData(), getAxis())))
    return failure();
  return verifyScatter(*this, getData(), getUpdates(), getReduction());
}

LogicalResult ScatterNDOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), idx = shapeOf(getIndices());
  if (idx.empty() || idx.back() > (int64_t)data.size())
    return emitOpError("index tuples are longer than the data rank");
  SmallVector<int64_t> expected(idx.begin(), idx.end() - 1);
  expected.append(data.begin() + idx.back(), data.end());
  if (shapeOf(getUpdates()) != ArrayRef<int64_t>(expected))
    return emitOpError("updates shape does not match indices and data");
  return verifyScatter(*this, getData(), getUpdates(), getReduction());
}

LogicalResult GridSampleOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), g = shapeOf(getGrid());
  if (x.size() != 4 || g.size() != 4 || g[3] != 2 || g[0] != x[0])
    return emitOpError("expects an NCHW input and an [N, Ho, Wo, 2] grid");
  if (getMode() != "bilinear" && getMode() != "nearest" && getMode() != "bicubic")
    return emitOpError("mode must be bilinear, nearest or bicubic");
  StringRef p = getPaddingMode();
  if (p != "zeros" && p != "border" && p != "reflection")
    return emitOpError("padding_mode must be zeros, border or reflection");
  if (getMode() == "bicubic" && p != "zeros")
    return emitOpError("bicubic mode needs zeros padding");
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()),
                      {x[0], x[1], g[1], g[2]});
}

LogicalResult PadOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> pads = getPads();
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return emitOpError("mode must be constant, reflect, edge or wrap");
  if (pads.size() != 2 * in.size())
    return emitOpError("needs 2 pads per dimension");
  SmallVector<int64_t> expected;
  for (size_t i = 0; i < in.size(); ++i) {
    if (pads[i] < 0 || pads[i + in.size()] < 0)
      return emitOpError("pads must be >= 0 (negative pads are slices)");
    if (ShapedType::isDynamic(in[i])) { // reflect's bound is checked at run time
      expected.push_back(ShapedType::kDynamic);
      continue;
    }
    if (mode == "reflect" && (pads[i] >= in[i] || pads[i + in.size()] >= in[i]))
      return emitOpError("reflect pads must be smaller than the dimension");
    expected.push_back(in[i] + pads[i] + pads[i + in.size()]);
  }
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()), expected);
}

LogicalResult ExpandOp::verify() {
  auto out = cast<RankedTensorType>(getType()).getShape();
  auto bc = broadcastShapes(shapeOf(getInput()), out);
  if (failed(bc) || ArrayRef<int64_t>(*bc) != out)
    return emitOpError("input does not broadcast to the result shape");
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : Value();
}

LogicalResult TileOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = cast<RankedTensorType>(getType()).getShape();
  if (in.size() != out.size())
    return emitOpError("changes the rank");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] == 0 ? out[i] != 0 : out[i] % in[i] != 0)
      return emitOpError("result dimension ") << i << " is not a multiple of the input's";
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and reductions
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, Value input, int64_t axis) {
  int64_t rank = shapeOf(input).size();
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ") << axis << " out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifyAxis(*this, getInput(), getAxis()); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxis(*this, getInput(), getAxis()); }

LogicalResult LayerNormOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= (int64_t)x.size())
    return emitOpError("axis ") << axis << " out of range for rank " << x.size();
  ArrayRef<int64_t> normalized = x.drop_front(axis);
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    auto bc = broadcastShapes(normalized, shapeOf(v));
    if (failed(bc) || ArrayRef<int64_t>(*bc) != normalized)
      return emitOpError("scale/bias of shape ") << shapeStr(shapeOf(v))
                                                 << " does not broadcast to "
                                                 << shapeStr(normalized);
  }
  return verifyResult(*this, getType(), getElementTypeOrSelf(getInput().getType()), x);
}

/// The result of reducing `input` over `axes` has the input's shape with
/// the axes removed (or kept as 1) and element type `resultElement`.
static LogicalResult verifyReduction(Operation *op, Value input, ArrayRef<int64_t> axes,
                                     bool keepdims, Type resultElement) {
  ArrayRef<int64_t> x = shapeOf(input);
  SmallVector<bool> reduced(x.size(), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= (int64_t)x.size() || reduced[a])
      return op->emitOpError("axes must be distinct and in [0, ") << x.size() << ")";
    reduced[a] = true;
  }
  SmallVector<int64_t> expected;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i])
      expected.push_back(x[i]);
    else if (keepdims)
      expected.push_back(1);
  }
  return verifyResult(op, op->getResult(0).getType(), resultElement, expected);
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, getInput(), getAxes(), getKeepdims(),
                         getElementTypeOrSelf(getInput().getType()));
}

LogicalResult ReduceOp::verify() {
  StringRef kind = getKind();
  if (kind != "sum" && kind != "prod" && kind != "max" && kind != "min")
    return emitOpError("kind must be sum, prod, max or min, got '") << getKind() << "'";
  return verifyReduction(*this, getInput(), getAxes(), getKeepdims(),
                         getElementTypeOrSelf(getInput().getType()));
}

template <typename ArgOp>
static LogicalResult verifyArg(ArgOp op) {
  int64_t axis = op.getAxis();
  if (failed(verifyAxis(op, op.getInput(), axis)))
    return failure();
  return verifyReduction(op, op.getInput(), {axis}, op.getKeepdims(),
                         IntegerType::get(op.getContext(), 64));
}

LogicalResult ArgMaxOp::verify() { return verifyArg(*this); }
LogicalResult ArgMinOp::verify() { return verifyArg(*this); }

LogicalResult AssertOp::verify() {
  if (!getElementTypeOrSelf(getCondition().getType()).isInteger(1))
    return emitOpError("condition must be an i1 tensor, got ") << getCondition().getType();
  if (getMessage().empty())
    return emitOpError("needs a message saying what failed");
  return success();
}

LogicalResult WindowOp::verify() {
  if (getMode() != "constant" && getMode() != "edge" && getMode() != "reflect" &&
      getMode() != "wrap")
    return emitOpError("mode must be constant, edge, reflect or wrap, got '") << getMode() << "'";
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t rank = input.getRank();
  for (Value v : {getStarts(), getSteps()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != rank || !t.getElementType().isInteger(64))
      return emitOpError("starts and steps must be tensor<") << rank << "xi64>, got " << t;
  }
  auto padding = cast<RankedTensorType>(getPadding().getType());
  if (padding.getRank() != 0 || padding.getElementType() != input.getElementType())
    return emitOpError("padding must be a rank-0 tensor of the input's element type, got ")
           << padding;
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getRank() != rank || result.getElementType() != input.getElementType())
    return emitOpError("result must have the input's rank and element type");
  return success();
}

/// A check that cannot fail is dropped: a constant all-true condition, or a
/// condition an earlier check in the same block already tested.
LogicalResult AssertOp::canonicalize(AssertOp op, PatternRewriter &rewriter) {
  DenseElementsAttr constant;
  if (matchPattern(op.getCondition(), m_Constant(&constant)) &&
      llvm::all_of(constant.getValues<bool>(), [](bool v) { return v; })) {
    rewriter.eraseOp(op);
    return success();
  }
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (auto earlier = dyn_cast<AssertOp>(prev);
        earlier && earlier.getCondition() == op.getCondition()) {
      rewriter.eraseOp(op);
      return success();
    }
  return failure();
}

LogicalResult TopKOp::verify() {
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, getInput(), axis)))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto values = cast<RankedTensorType>(getValues().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  if (values.getElementType() != in.getElementType() ||
      !indices.getElementType().isInteger(64) || values.getShape() != indices.getShape())
    return emitOpError("values must have the input's element type and indices i64, both of one "
                       "shape");
  if (values.getRank() != in.getRank())
    return emitOpError("results must have the input's rank");
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != axis && values.getDimSize(d) != in.getDimSize(d))
      return emitOpError("result dimension ") << d << " differs from the input's";
  if (Value k = getK()) {
    auto kt = cast<RankedTensorType>(k.getType());
    if (kt.getRank() != 0 || !kt.getElementType().isInteger(64) || !values.isDynamicDim(axis))
      return emitOpError("a run-time k must be an i64 scalar, with a dynamic result axis");
  } else if (values.isDynamicDim(axis) || values.getDimSize(axis) > in.getDimSize(axis)) {
    return emitOpError("k must not exceed the input's size along the axis");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Ops whose result sizes depend on the data
//===----------------------------------------------------------------------===//

/// Whether `v` is a rank-0 tensor of `elementType`.
static bool isScalarOf(Value v, Type elementType) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getRank() == 0 && t.getElementType() == elementType;
}

static bool isI64(Type t) { return cast<RankedTensorType>(t).getElementType().isInteger(64); }

LogicalResult IotaOp::verify() {
  auto result = cast<RankedTensorType>(getType());
  if (!isScalarOf(getCount(), IntegerType::get(getContext(), 64)) || !isI64(result) ||
      result.getRank() != 1 || !result.isDynamicDim(0))
    return emitOpError("takes an i64 scalar count and gives i64 of shape [?]");
  return success();
}

LogicalResult NonZeroOp::verify() {
  auto result = cast<RankedTensorType>(getType());
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  if (!isI64(result) || result.getRank() != 2 || result.getDimSize(0) != rank ||
      !result.isDynamicDim(1))
    return emitOpError("result must be i64 of shape [") << rank << ", ?]";
  return success();
}

LogicalResult UniqueOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto unique = cast<RankedTensorType>(getUnique().getType());
  if (in.getRank() != 2)
    return emitOpError("input must be 2-D (rows)");
  if (unique.getElementType() != in.getElementType() || unique.getRank() != 2 ||
      !unique.isDynamicDim(0) || unique.getDimSize(1) != in.getDimSize(1))
    return emitOpError("unique must hold rows of the input: ?x") << in.getDimSize(1);
  auto rows = [](Value v, int64_t n) {
    auto t = cast<RankedTensorType>(v.getType());
    return isI64(t) && t.getRank() == 1 && t.getDimSize(0) == n;
  };
  if (!rows(getFirst(), ShapedType::kDynamic) || !rows(getCounts(), ShapedType::kDynamic) ||
      !rows(getInverse(), in.getDimSize(0)))
    return emitOpError("first and counts must be i64 of shape [?], inverse i64 of shape [")
           << in.getDimSize(0) << "]";
  return success();
}

LogicalResult NonMaxSuppressionOp::verify() {
  auto boxes = cast<RankedTensorType>(getBoxes().getType());
  auto scores = cast<RankedTensorType>(getScores().getType());
  auto f32 = Float32Type::get(getContext());
  if (boxes.getRank() != 3 || boxes.getDimSize(2) != 4 || boxes.getElementType() != f32)
    return emitOpError("boxes must be f32 of shape [B, N, 4]");
  auto agree = [](int64_t a, int64_t b) {
    return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
  };
  if (scores.getRank() != 3 || scores.getElementType() != f32 ||
      !agree(scores.getDimSize(0), boxes.getDimSize(0)) ||
      !agree(scores.getDimSize(2), boxes.getDimSize(1)))
    return emitOpError("scores must be f32 of shape [B, C, N] for boxes [B, N, 4]");
  if (!isScalarOf(getMaxPerClass(), IntegerType::get(getContext(), 64)) ||
      !isScalarOf(getIouThreshold(), f32) ||
      (getScoreThreshold() && !isScalarOf(getScoreThreshold(), f32)))
    return emitOpError("max_per_class must be an i64 scalar and the thresholds f32 scalars");
  auto selected = cast<RankedTensorType>(getType());
  if (!isI64(selected) || selected.getRank() != 2 || !selected.isDynamicDim(0) ||
      selected.getDimSize(1) != 3)
    return emitOpError("result must be i64 of shape [?, 3]");
  return success();
}
