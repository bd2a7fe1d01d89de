//===- KilnDialect.h - The kiln graph dialect -------------------*- C++ -*-===//
#ifndef KILN_DIALECTS_KILN_KILNDIALECT_H
#define KILN_DIALECTS_KILN_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kiln/KilnDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.h.inc"

namespace mlir::kiln {
/// The parameters of a quantized element type (`!quant.uniform`), per tensor
/// (one scale and zero point) or per axis (one per index along `axis`).
struct QuantParams {
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  std::optional<int64_t> axis; // the quantized dimension, when per axis
  int64_t storageMin, storageMax;
  bool isSigned;
  unsigned width;
  /// The integer type the values are stored in: i8 or ui8 (i16, ui16).
  Type storageType(MLIRContext *ctx) const;
};
/// The parameters of `type` if it is a uniform quantized type (per tensor or
/// per axis), else nullopt.
std::optional<QuantParams> quantParams(Type type);

/// The elements ONNX Slice takes from a dimension of static size `dim`:
/// the first index and the count, after resolving negative bounds and
/// clamping them (kiln.slice with `ends` resolves them the same way at run
/// time).
struct SliceBounds {
  int64_t begin, size;
};
SliceBounds onnxSliceBounds(int64_t start, int64_t end, int64_t step, int64_t dim);

/// numpy broadcasting of two static shapes; failure if incompatible.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);
/// An einsum equation with `...` expanded and the output made explicit: one
/// letter string per operand and one for the result.
struct EinsumSpec {
  SmallVector<std::string> inputs;
  std::string output;
};
/// Parses `equation` for operands of the given ranks; the message says why not.
FailureOr<EinsumSpec> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                                  std::string &message);
/// The result shape of an einsum over operands of these shapes.
FailureOr<SmallVector<int64_t>> einsumShape(const EinsumSpec &spec,
                                            ArrayRef<ArrayRef<int64_t>> shapes,
                                            std::string &message);

/// The raw row-major bytes of a non-splat dense or dense-resource attribute.
std::optional<ArrayRef<char>> rawElementsData(ElementsAttr attr);
/// A dense_resource attribute of `type` holding a copy of the row-major
/// `bytes`. Weights live in such blobs: printed once at the end of a module
/// and never uniqued as attributes.
DenseResourceElementsAttr blobElements(ShapedType type, StringRef name, ArrayRef<char> bytes);
/// Elements of the static `type` whose element i is element `sourceIndex(i)`
/// of `source` (row-major linear indices), or zero where that is negative
/// (padding). A splat stays a splat when nothing is padding; raw data stays
/// a blob (named `name`) or a dense attribute, as the source was. Null when
/// `source` has no raw data of `type`'s element width (sub-byte types).
ElementsAttr relaidElements(ElementsAttr source, ShapedType type, StringRef name,
                            function_ref<int64_t(int64_t)> sourceIndex);
/// The elements of an f32 attribute, splats expanded; nullopt for another
/// element type or when the data is not available.
std::optional<std::vector<float>> f32Elements(ElementsAttr attr);
/// Whether f32Elements(attr) has a value (without copying the elements).
bool hasF32Elements(ElementsAttr attr);
/// The shape of `v`, a ranked tensor.
ArrayRef<int64_t> shapeOf(Value v);
/// Whether `t` (or its elements) is a 16-bit float: f16 or bf16.
bool isHalfFloat(Type t);
/// The value of `v` when it is a one-element f32 kiln.constant (an
/// epsilon, a scale), of any rank.
std::optional<float> f32Scalar(Value v);

/// The ONNX node an op came from: its name and op type, from the
/// NameLoc(node, NameLoc(op type)) the importer gives each op; nullopt for
/// other locations (op type empty where the location lacks it).
struct OnnxNode {
  StringRef name, opType;
  /// "conv1 (Conv)", or the name alone.
  std::string describe() const {
    return opType.empty() ? name.str() : (name + " (" + opType + ")").str();
  }
};
std::optional<OnnxNode> onnxNodeOf(Location loc);
/// The ONNX nodes of a location: onnxNodeOf's, or those of each part of a
/// fused location, in order, without repeats.
std::vector<OnnxNode> onnxNodesOf(Location loc);
/// "relu1 (Relu)" for an op imported from an ONNX node, else the op's name
/// ("linalg.generic"): how reports name the ops they speak of.
std::string describeNode(Operation *op);

/// kiln.transpose of `v` by `perm` (result dimension i is dimension
/// perm[i] of `v`).
Value createTranspose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm);

/// A kiln.constant of `type` holding the row-major `values` in a blob named
/// after `name` (weights made at compile time).
template <typename T>
Value blobConstant(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<T> values,
                   StringRef name) {
  ArrayRef<char> bytes(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(T));
  return ConstantOp::create(b, loc, type, blobElements(type, name, bytes));
}

} // namespace mlir::kiln

#endif
