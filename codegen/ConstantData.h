//===- ConstantData.h - compile-time re-layout of weights -------*- C++ -*-===//
//
// Weights are row-major blobs on constants. A codegen step that wants them in
// another layout (transposed, packed into register panels) rewrites the blob
// at compile time, so the new layout costs nothing per inference.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CONSTANTDATA_H
#define KILN_CODEGEN_CONSTANTDATA_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::kiln {

/// The constant `v` holds, looking through reshapes (which keep row-major
/// data as it is); null when `v` is not a constant with raw data.
ElementsAttr constantBehindReshapes(Value v);

/// An arith.constant of `type` whose element i is element `sourceIndex(i)`
/// of `source` (row-major linear indices), or zero where `sourceIndex(i)` is
/// negative (padding). Null if `source` has no raw data of `type`'s element
/// width.
Value relayoutConstant(OpBuilder &b, Location loc, ElementsAttr source, RankedTensorType type,
                       function_ref<int64_t(int64_t)> sourceIndex);

} // namespace mlir::kiln

#endif
