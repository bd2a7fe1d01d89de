//===- Builders.h - helpers for the kiln -> linalg lowering -----*- C++ -*-===//
#ifndef KILN_CODEGEN_KILNTOLINALG_BUILDERS_H
#define KILN_CODEGEN_KILNTOLINALG_BUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

inline RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// kiln tensors may hold unsigned integers (ui8...); linalg/arith work on
/// signless integers, with the signedness picked per op. This is the
/// signless form of a kiln tensor type.
RankedTensorType signlessType(Type t);
/// Whether a kiln value holds unsigned integers.
inline bool isUnsigned(Value v) { return getElementTypeOrSelf(v.getType()).isUnsignedInteger(); }

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType);

/// A scalar constant of a float or integer type (i1: value != 0).
Value scalarConst(OpBuilder &b, Location loc, Type type, double value);
/// The most negative (lowest = true) or most positive value of `type`:
/// -inf/+inf for floats, the minimum/maximum integer (signed or unsigned).
Value extremeConst(OpBuilder &b, Location loc, Type type, bool lowest, bool isUnsigned = false);

/// tensor.empty + linalg.fill with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value value);
Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType);

/// The map from an iteration space of `resultShape` to an operand of
/// `operandShape` under numpy broadcasting.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape);

/// linalg.generic over `resultType` whose scalar body is `body(operands...)`;
/// operands broadcast to the result shape.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, BodyFn body);

/// Reduces `input` over `axes` with `combine(element, accumulator)`, starting
/// from `init`. Reduced dimensions are kept as size 1.
Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                     Value init, BodyFn combine);
Value buildSum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes);
Value buildMax(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
               bool isUnsigned = false);
Value buildMean(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes);

/// Reinterprets a static tensor with a new shape (row-major), as views.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target);

/// Materializes `v` broadcast to `shape` (numpy rules); no-op if equal.
Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Pads the two spatial dimensions of an NCHW tensor ([top, left, bottom, right]).
Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> pads,
                 double value);

/// Patterns for elementwise kiln ops (Elementwise.cpp).
void populateElementwiseLowerings(RewritePatternSet &patterns);
/// Patterns for slice, gather, pad, expand and tile (DataMovement.cpp).
void populateDataMovementLowerings(RewritePatternSet &patterns);
/// The pattern for kiln.assert (Assert.cpp).
void populateAssertLowering(RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif
