//===- BufferUses.h - where a bufferized allocation is used -----*- C++ -*-===//
#ifndef KILN_CODEGEN_COMMON_BUFFERUSES_H
#define KILN_CODEGEN_COMMON_BUFFERUSES_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mlir::kiln {

/// Calls `onUser` with every op that uses `buffer` or a view of it (views
/// included). Fails where the buffer could escape this analysis: returned,
/// yielded, freed, turned into a pointer, or taken by an op that makes a
/// memref which is not a view of it.
LogicalResult forEachBufferUser(Value buffer, function_ref<void(Operation *)> onUser);

} // namespace mlir::kiln

#endif
