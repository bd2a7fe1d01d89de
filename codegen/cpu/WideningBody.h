//===- WideningBody.h - reading a widening matmul's body -------*- C++ -*-===//
//
// A widening matmul (`kiln.widening_matmul`, and the `kiln.amx_tile` blocks
// kiln-cpu-vnni-matmul makes of it) says how its 8-bit operands extend in its
// body: arith.extui for unsigned, arith.extsi for signed.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_WIDENINGBODY_H
#define KILN_CODEGEN_CPU_WIDENINGBODY_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Block.h"

namespace mlir::kiln {

/// Whether `arg` (a block argument of the body) is zero-extended.
inline bool isZeroExtended(BlockArgument arg) {
  return llvm::any_of(arg.getUsers(), [](Operation *u) { return isa<arith::ExtUIOp>(u); });
}

} // namespace mlir::kiln

#endif
