//===- Epilogues.h - elementwise ops a reduction's tiles can apply -*- C++ -*-===//
#ifndef KILN_CODEGEN_COMMON_EPILOGUES_H
#define KILN_CODEGEN_COMMON_EPILOGUES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"
#include <optional>

namespace mlir::kiln {

/// What an epilogue may do beyond mapping each element of the result to
/// one element of the same type, reading other tensors at the same element.
struct EpilogueLatitude {
  bool broadcasts = false;       ///< read other tensors along some of its loops (a bias)
  bool otherElementType = false; ///< produce another element type (a rounding to 16 bits)
};

/// Why `op` cannot be applied to the tiles of `input` (a result of `tiled`)
/// where `tiled` computes them, or nothing: it must map each element of
/// `input` to one element with scalar arith and math ops, reading other
/// tensors that exist before `tiled` runs, within `latitude`.
std::optional<StringRef> whyNotAnEpilogue(linalg::GenericOp op, Value input, Operation *tiled,
                                          DominanceInfo &dominance, EpilogueLatitude latitude);

} // namespace mlir::kiln

#endif
