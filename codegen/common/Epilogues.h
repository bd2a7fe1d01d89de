//===- Epilogues.h - elementwise ops a reduction's tiles can apply -*- C++ -*-===//
#ifndef KILN_CODEGEN_COMMON_EPILOGUES_H
#define KILN_CODEGEN_COMMON_EPILOGUES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"
#include <optional>

namespace mlir::kiln {

/// Why `op` cannot be applied to the tiles of `input` (a result of `tiled`)
/// where `tiled` writes them, or nothing: it must map each element of
/// `input` to one element of the same type with scalar arith and math ops,
/// reading other tensors that exist before `tiled` runs, at the same
/// element (a residual) or, with `broadcasts`, at the element of some of
/// its loops (a bias).
std::optional<StringRef> whyNotAnEpilogue(linalg::GenericOp op, Value input, Operation *tiled,
                                          DominanceInfo &dominance, bool broadcasts);

} // namespace mlir::kiln

#endif
