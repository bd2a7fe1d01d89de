//===- ShapeOperands.h - shape operands known only at run time --*- C++ -*-===//
//
// kiln compiles static shapes. When an operand that decides a node's output
// shape (Reshape's `shape`, Squeeze's `axes`, ...) is a graph input rather
// than a constant, the importer takes the output shape the model declares
// (graph outputs, value_info), derives the operand value that produces it,
// compiles the node for that value, and emits a kiln.assert that checks the
// actual operand at run time. A run with any other value fails with a
// message instead of computing with the wrong shape.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_ONNX_SHAPEOPERANDS_H
#define KILN_FRONTEND_ONNX_SHAPEOPERANDS_H

#include "frontend/onnx/ImportContext.h"

namespace kiln::onnx_frontend {

/// What the importer knows about one element of a small integer tensor
/// computed from shapes (ONNX Shape, Gather, Concat, ...): a constant, the
/// size of dimension `dim` of the tensor `of`, or nothing.
struct ShapeElement {
  std::optional<int64_t> constant;
  mlir::Value of;
  int64_t dim = -1;
};

/// The elements of a static 0-D or 1-D integer value, followed through the
/// kiln ops that compute shapes; nullopt for other values.
std::optional<llvm::SmallVector<ShapeElement>> shapeElements(mlir::Value v);

/// Integer input `input` as a 1-D i64 value (cast if needed); `what` names
/// it in the error for a boolean.
mlir::FailureOr<mlir::Value> int64Operand(ImportContext &ctx, size_t input, llvm::StringRef what);

/// An i64 constant of `shape` holding `values`.
mlir::Value int64Constant(ImportContext &ctx, llvm::ArrayRef<int64_t> values,
                          llvm::ArrayRef<int64_t> shape);

/// The static shape the model declares for output `i` of the current node.
std::optional<std::vector<int64_t>> declaredShape(const ImportContext &ctx, size_t output);

/// The error for a run-time operand the importer cannot specialise; `why`
/// says what is missing.
mlir::LogicalResult failRuntimeOperand(ImportContext &ctx, llvm::StringRef what,
                                       const llvm::Twine &why);

/// The declared shape of the node's first output, to specialise run-time
/// operand `what` on; without one, the error says so.
mlir::FailureOr<std::vector<int64_t>> declaredFor(ImportContext &ctx, llvm::StringRef what);

/// The number of elements of input `input`.
mlir::FailureOr<int64_t> operandLength(ImportContext &ctx, size_t input);

/// The declared output shape, for a run-time operand `what` that spells out
/// one entry per output dimension (its length is checked).
mlir::FailureOr<std::vector<int64_t>> declaredPerDimension(ImportContext &ctx, size_t input,
                                                           llvm::StringRef what);

/// A run-time operand that is the output shape itself (ConstantOfShape's
/// input, Resize's sizes, MaxUnpool's output_shape): the declared shape,
/// checked at run time.
mlir::FailureOr<std::vector<int64_t>> runtimeShapeOperand(ImportContext &ctx, size_t input,
                                                          llvm::StringRef what);

/// A rank-0 i1 value: whether dimension `dim` of `x` has size `size` at run
/// time.
mlir::Value dimEquals(ImportContext &ctx, mlir::Value x, int64_t dim, int64_t size);
/// Emits a kiln.assert of `condition` with the message
/// "node '<name>' (<op>): <message>".
void assertAtRunTime(ImportContext &ctx, mlir::Value condition, const llvm::Twine &message);

/// Emits a kiln.assert of `condition` whose message names the node, the
/// operand `what` and the `requirement` it breaks.
void guard(ImportContext &ctx, mlir::Value condition, llvm::StringRef what,
           const llvm::Twine &requirement);

/// Checks at run time that element j of integer input `input` equals
/// accepted[k][j] for some row k. accepted[0] is the value compiled for.
mlir::LogicalResult guardElements(ImportContext &ctx, size_t input, llvm::StringRef what,
                                  llvm::ArrayRef<std::vector<int64_t>> accepted);

/// Checks at run time that the axes in integer input `input` (negative ones
/// count from the end of `rank`) are distinct, all in `allowed`, and name
/// every axis in `required`.
mlir::LogicalResult guardAxes(ImportContext &ctx, size_t input, llvm::StringRef what,
                              int64_t rank, llvm::ArrayRef<int64_t> required,
                              llvm::ArrayRef<int64_t> allowed);

/// Slice whose starts, ends, axes or steps arrive at run time: a kiln.window
/// of the declared output shape whose origin and steps are computed at run
/// time, with a check that the operands select a window of that shape.
mlir::LogicalResult importRuntimeSlice(ImportContext &ctx);

/// Pad (any mode but wrap) whose pads or constant_value arrive at run time: a
/// kiln.window starting at -pads_begin, with a check that the pads add up to
/// the declared growth of each dimension.
mlir::LogicalResult importRuntimePad(ImportContext &ctx);

/// Compress and NonZero, whose output size is the number of true (nonzero)
/// elements: compiled for the declared output length, with a run-time check
/// of the count; the positions themselves are found at run time.

/// A rank-0 i1 value: whether every axis in integer input `input` (negative
/// ones counting from the end of `rank`) is in `set`. With distinct axes (see
/// guardAxes) as many as `set` holds, this tests that they are exactly `set`.
mlir::Value axesWithin(ImportContext &ctx, size_t input, int64_t rank,
                       llvm::ArrayRef<int64_t> set);

/// The positions of `longer` that are not matched when `shorter` is matched
/// into it as a subsequence, leftmost first; each such position must hold 1.
/// nullopt when `shorter` is not `longer` with size-1 dimensions removed.
std::optional<std::vector<int64_t>> unitDimsBetween(llvm::ArrayRef<int64_t> longer,
                                                    llvm::ArrayRef<int64_t> shorter);

} // namespace kiln::onnx_frontend

#endif
