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

/// kiln tensors may hold unsigned integers (ui8...) and quantized types
/// (!quant.uniform, stored as 8- or 16-bit integers); linalg/arith work on
/// signless integers, with the signedness picked per op. This is the
/// signless form of a kiln tensor type.
RankedTensorType signlessType(Type t);
/// Whether a kiln value holds unsigned integers or booleans (false < true,
/// extended with zeros).
inline bool isUnsigned(Value v) {
  Type t = getElementTypeOrSelf(v.getType());
  return t.isUnsignedInteger() || t.isInteger(1);
}

/// The largest divisor of `extent` that is at most `limit` (at least 1):
/// tiles of that size cover an extent exactly, without a remainder.
int64_t largestDivisorUpTo(int64_t extent, int64_t limit);

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType);
/// tensor.empty with sizes that may be known only at run time.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elementType);

/// Size of dimension `d` of a tensor: a constant, or tensor.dim when dynamic.
OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor, int64_t d);
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value tensor);
/// a + b, folded when both are constants.
OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y);
/// The product of sizes, folded where they are constants.
OpFoldResult mulSizes(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes);
/// An index constant.
Value indexConst(OpBuilder &b, Location loc, int64_t v);
/// The index value of a size.
Value indexValue(OpBuilder &b, Location loc, OpFoldResult size);

/// Ends the inference with `message` (prefixed by the node that `loc` names)
/// unless the i1 `ok` holds at run time (Assert.cpp).
void checkAtRunTime(OpBuilder &b, Location loc, Value ok, const Twine &message);
/// Checks at run time that `actual` equals `expected` unless both are the
/// same constant.
void checkSizesEqual(OpBuilder &b, Location loc, OpFoldResult actual, OpFoldResult expected,
                     const Twine &message);

/// A scalar constant of a float or integer type (i1: value != 0).
Value scalarConst(OpBuilder &b, Location loc, Type type, double value);
/// The most negative (lowest = true) or most positive value of `type`:
/// -inf/+inf for floats, the minimum/maximum integer (signed or unsigned).
Value extremeConst(OpBuilder &b, Location loc, Type type, bool lowest, bool isUnsigned = false);

/// tensor.empty + linalg.fill with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value value);
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Value value);
Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType);
Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elementType);

/// The map from an iteration space of `resultShape` to an operand of
/// `operandShape` under numpy broadcasting.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape);

/// The sizes of a result of `resultType` that `operands` broadcast to: each
/// dynamic size is read from an operand that has that dimension. Dynamic
/// operand dimensions never broadcast; that they match is checked at run time.
SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType resultType, ValueRange operands,
                                         ArrayRef<OpFoldResult> given = {});

/// linalg.generic over `resultType` whose scalar body is `body(operands...)`;
/// operands broadcast to the result shape. `sizes` gives the result's sizes
/// when no operand has its dynamic dimensions.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, BodyFn body, ArrayRef<OpFoldResult> sizes = {});

/// Reduces `input` over `axes` with `combine(element, accumulator)`, starting
/// from `init`. Reduced dimensions are kept as size 1.
Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                     Value init, BodyFn combine);
Value buildSum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes);
Value buildMax(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
               bool isUnsigned = false);
Value buildMean(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes);

/// Reinterprets a tensor with a new shape (row-major), as views. A dynamic
/// target needs its `sizes`, unless only one target dimension is dynamic:
/// that one gets what the element count leaves.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target,
                ArrayRef<OpFoldResult> sizes = {});

/// A softmax's running maximum `m` with -inf replaced by 0, so that a row
/// whose scores so far are all -inf (masked) gives exp(-inf - 0) = 0, not
/// NaN.
Value finiteMax(OpBuilder &b, Location loc, Value m);

/// The element of `v` that numpy broadcasting puts at `indices` of the
/// broadcast shape: its dimensions aligned with the trailing indices, those
/// of size 1 read at 0.
Value broadcastElement(OpBuilder &b, Location loc, Value v, ValueRange indices);

/// The one op that `op` applies to each element of its one input alone
/// (an arith.truncf, an arith.extf), where `op` is elementwise: one input,
/// one output, identity maps, parallel loops. Null otherwise.
Operation *elementwiseOpOf(linalg::GenericOp op);

/// Materializes `v` broadcast to `shape` (numpy rules); no-op if equal.
/// `sizes` gives dynamic target sizes that `v` does not have.
Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape,
                  ArrayRef<OpFoldResult> sizes = {});

/// `input` padded by `low` and `high` elements of `value` per dimension,
/// into `type`.
Value padWithConstant(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> low,
                      ArrayRef<int64_t> high, Value value, RankedTensorType type);

/// Pads the two spatial dimensions of an NCHW (or, with `channelsLast`,
/// NHWC) tensor ([top, left, bottom, right]).
Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> pads,
                 double value, bool channelsLast = false);

/// One iteration's result in buildTileLoop: `value` goes into the shared
/// output at `offsets` with `sizes` (unit strides).
struct TileResult {
  Value value;
  SmallVector<OpFoldResult> offsets, sizes;
};

/// An scf.forall over [lbs, ubs) by `steps` whose iterations each compute
/// one tile of `init` independently: `tile(b, loc, ivs, out)` builds it from
/// the shared output `out`. Returns the filled tensor. (A forall, not an
/// scf.for: its iterations may run on several threads, and subset hoisting
/// does not analyse it, which is costly on slices of dynamic sizes.)
Value buildTileLoop(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> lbs,
                    ArrayRef<OpFoldResult> ubs, ArrayRef<OpFoldResult> steps, Value init,
                    function_ref<TileResult(OpBuilder &, Location, ValueRange, Value)> tile);

/// The value of the kiln.constant that defines `v`, or null.
ElementsAttr constantValue(Value v);

/// How the operands of a widening integer matmul (8-bit operands, i32
/// result) extend; both false otherwise.
struct Extension {
  bool lhsUnsigned = false, rhsUnsigned = false;
};

/// acc + x * y with x and y extended to acc's type (floats with extf,
/// integers by `ext`'s signedness).
Value wideningMultiplyAdd(OpBuilder &b, Location loc, Value acc, Value x, Value y,
                          Extension ext);

/// A widening matmul as a linalg.generic over (batch..., m, n, k): each
/// operand is extended (integers by their own signedness, which
/// linalg.matmul's single `cast` cannot express for mixed u8 x s8 operands;
/// bf16 to f32) and the products summed in the result's type. Tagged
/// `kiln.widening_matmul`.
Value wideningMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                     Extension ext);

/// A depthwise filter [C, 1, KH, KW] as taps [KH*KW, C]: relaid out at
/// compile time when `constant` (the filter's value) is given, else
/// transposed.
Value depthwiseTaps(OpBuilder &b, Location loc, Value filter, ElementsAttr constant);

/// [N, channels, OH, OW] of a window of `kernel` sliding over the spatial
/// dimensions of the padded NCHW `input`; a dynamic input must be at least
/// as large as the window (checked at run time).
SmallVector<OpFoldResult> windowOutputSizes(OpBuilder &b, Location loc, Value input,
                                            int64_t channels, ArrayRef<int64_t> kernel,
                                            ArrayRef<int64_t> strides,
                                            ArrayRef<int64_t> dilations);

/// The accumulator of an NCHW convolution of `sizes`: the bias [F]
/// broadcast over the pixels, or zeros.
Value convolutionInit(OpBuilder &b, Location loc, Value bias, RankedTensorType type,
                      ArrayRef<OpFoldResult> sizes);

/// Patterns for elementwise kiln ops (Elementwise.cpp).
void populateElementwiseLowerings(RewritePatternSet &patterns);
/// Patterns for slice, gather, pad, expand and tile (DataMovement.cpp).
void populateDataMovementLowerings(RewritePatternSet &patterns);
/// The pattern for kiln.assert (Assert.cpp).
void populateAssertLowering(RewritePatternSet &patterns);
/// The pattern for kiln.attention (Attention.cpp).
/// Attention as an online softmax over blocks of at most `queryBlock`
/// query rows by `keyBlock` keys; with a `keyBlock` of 0, on whole score
/// matrices (matmuls and row reductions, for GPUs to distribute), a half
/// model's matmuls of its 16-bit values with `halfMatmuls`.
void populateAttentionLowering(RewritePatternSet &patterns, int64_t queryBlock, int64_t keyBlock,
                               bool halfMatmuls);
/// kiln.conv as linalg named convolutions (widening ones as a
/// linalg.generic that extends each operand).
void populateConvLowering(RewritePatternSet &patterns);
/// Patterns for iota, nonzero, unique and non_max_suppression (DataDependent.cpp).
void populateDataDependentLowerings(RewritePatternSet &patterns);
/// Patterns for the quantization ops (Quant.cpp).
void populateQuantLowerings(RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif
